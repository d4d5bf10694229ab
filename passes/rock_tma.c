/* rock_tma.c — which wgmma operands load through TMA, and their tensor maps (rock_tma.h). */
#include "passes/rock_tma.h"
#include "core/dialect_rock.h"
#include "passes/perf_config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the flat element address of (g, k, d) through view v with the buffer's strides; -1 when
 * the point is invalid (padding) */
static int64_t at(const kl_view *v, const int64_t *strides, int64_t g, int64_t k, int64_t d) {
  int64_t up[3] = { g, k, d };
  bool valid = true;
  int64_t a = kl_view_eval_addr(v, up, strides, &valid);
  return valid ? a : -1;
}

/* K's flat address at g = d = 0 (relative) through the mixed radix of kd dims: runs P[i],
 * strides s[i] (the last dim unbounded) */
static int64_t kaddr(int kd, const int64_t *P, const int64_t *s, int64_t k) {
  int64_t a = 0;
  for (int i = 0; i < kd; i++) {
    bool last = i + 1 == kd;
    a += (last ? k : k % P[i]) * s[i];
    if (!last) k /= P[i];
  }
  return a;
}

/* (rock_tma.h) the first point that the radix so far misses opens a new dim there */
int kl_tma_fit_radix(const int64_t *a, int64_t e, int maxd, int64_t *P, int64_t *s) {
  int kd = 1;
  int64_t span = 1; /* K elements per unit of dim kd-1 */
  s[0] = e > 1 ? a[1] : 0;
  for (;;) {
    int64_t x = 0;
    while (x < e && a[x] == kaddr(kd, P, s, x)) x++;
    if (x == e) break;
    if (kd == maxd || x % span) return 0;
    P[kd - 1] = x / span;
    span = x;
    s[kd++] = a[x];
  }
  if (kd > 1 && e % span) return 0; /* whole runs only */
  P[kd - 1] = (e + span - 1) / span;
  return kd;
}

/* (rock_tma.h) */
kl_view *kl_tma_operand_view(kl_value *v, bool prologue, kl_value **arg, kl_value **raw, char *why, size_t n) {
  const kl_type *t = v->type;
  int nc = 0;
  kl_value *u = *arg = kl_rock_underlying(v, NULL, &nc, 0);
  if (prologue || u->def || u->type->kind != KL_TY_BUFFER || u->type->space != KL_SPACE_GLOBAL) {
    snprintf(why, n, "not a kernel argument read directly");
    return NULL;
  }
  if (t->kind != KL_TY_BUFFER || t->rank != 3 || kl_type_bits(t->elem) != 16 || t->shape[0] < 1) {
    snprintf(why, n, "not a [G, K, D] view of 16-bit elements");
    return NULL;
  }
  const char *names[3] = { "g", "k", "d" };
  kl_vb b;
  kl_vb_identity(&b, 3, t->shape, names);
  char err[256];
  kl_view *top = kl_vb_finish(&b, err, sizeof err);
  kl_view *cv = top ? kl_tile_compose_to_buffer(top, v, raw, err, sizeof err) : NULL;
  kl_view_free(top);
  if (!cv) snprintf(why, n, "view: %s", err);
  return cv;
}

bool kl_tma_operand(kl_value *v, bool prologue, int64_t DB, kl_tma_map *m, char *why, size_t n) {
  const kl_type *t = v->type;
  kl_value *raw = NULL;
  kl_value *u = NULL;
  kl_view *cv = kl_tma_operand_view(v, prologue, &u, &raw, why, n);
  if (!cv) return false;
  if (DB > 256) {
    snprintf(why, n, "tile of %lld rows (a TMA box has at most 256)", (long long)DB);
    kl_view_free(cv);
    return false;
  }
  const int64_t *st = raw->type->strides;
  int64_t size[3] = { t->shape[0], t->shape[1], t->shape[2] }, ext[3], str[3] = { 0, 0, 0 };
  int64_t P[3] = { 0, 0, 0 }, ks[3] = { 0, 0, 0 };
  int kd = 1;
  int64_t o = at(cv, st, 0, 0, 0);
  bool ok = o >= 0, radix = false;
  int64_t *ka = size[1] > 0 ? malloc(sizeof *ka * (size_t)size[1]) : NULL;
  /* the valid extent along each dim (from 0, the others at 0), and the stride; K's addresses
   * kept for its mixed radix (rank: K's dims + D + G of more than 1) */
  for (int dim = 0; ok && dim < 3; dim++) {
    int64_t p[3] = { 0, 0, 0 }, e = 0;
    for (int64_t x = 0; x < size[dim]; x++) {
      p[dim] = x;
      int64_t a = at(cv, st, p[0], p[1], p[2]);
      if (a < 0) break;
      if (x == 1) str[dim] = a - o;
      if (dim == 1 && ka)
        ka[x] = a - o;
      else if (a != o + x * str[dim])
        ok = false;
      e = x + 1;
    }
    for (int64_t x = e; ok && x < size[dim]; x++) { /* past the extent: padding only */
      p[dim] = x;
      if (at(cv, st, p[0], p[1], p[2]) >= 0) ok = false;
    }
    ext[dim] = e;
    if (ok && dim == 1 && e > 0) {
      kd = kl_tma_fit_radix(ka, e, 3, P, ks); /* rank <= 5: 3 K dims, D, G */
      if (!kd) ok = false, kd = 1;
      radix = kd > 1;
    }
  }
  free(ka);
  if (!ok) {
    kl_view_free(cv);
    snprintf(why, n, "the view is not one affine box (merges, broadcasts or inner padding)");
    return false;
  }
  if (!radix) P[0] = ext[1], ks[0] = str[1];
  uint64_t s = 0x9e3779b97f4a7c15ull ^ (uint64_t)(size[0] * 131 + size[1] * 7 + size[2]);
  for (int i = 0; ok && i < 512; i++) { /* points of the box, corners first */
    int64_t p[3];
    for (int dim = 0; dim < 3; dim++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      p[dim] = i < 8 ? ((i >> dim) & 1 ? ext[dim] - 1 : 0) : (int64_t)((s >> 33) % (uint64_t)ext[dim]);
    }
    if (at(cv, st, p[0], p[1], p[2]) != o + p[0] * str[0] + kaddr(kd, P, ks, p[1]) + p[2] * str[2]) ok = false;
  }
  kl_view_free(cv);
  if (!ok) {
    snprintf(why, n, "the view is not affine on its box");
    return false;
  }
  if (ext[0] != size[0]) {
    snprintf(why, n, "the batch is padded");
    return false;
  }
  /* MN-major: M / N contiguous (B as [K, N]): the map's dims {D, K(, G)} */
  bool mn = ext[1] > 1 && str[1] != 1;
  if (mn && ext[2] > 1 && str[2] != 1) {
    snprintf(why, n, "neither K nor M/N contiguous (strides %lld, %lld)", (long long)str[1], (long long)str[2]);
    return false;
  }
  if (radix && (mn || ks[0] != 1)) {
    snprintf(why, n, "K in runs of %lld elements is not contiguous within them", (long long)P[0]);
    return false;
  }
  int64_t eb = 2, outer = mn ? str[1] : str[2], oext = mn ? ext[1] : ext[2], inner = mn ? ext[2] : ext[1];
  for (int i = 1; i < kd; i++)
    if (ks[i] <= 0 || (ks[i] * eb) % 16) {
      snprintf(why, n, "K runs of %lld elements at stride %lld elements (not a positive multiple of 16 bytes)",
               (long long)P[i - 1], (long long)ks[i]);
      return false;
    }
  if ((oext > 1 && (outer <= 0 || (outer * eb) % 16)) || (ext[0] > 1 && (str[0] <= 0 || (str[0] * eb) % 16)) ||
      (o * eb) % 16) {
    snprintf(why, n, "strides %lld, %lld or offset %lld elements not multiples of 16 bytes", (long long)outer,
             (long long)str[0], (long long)o);
    return false;
  }
  memset(m, 0, sizeof *m);
  m->buf = u;
  m->mn = mn;
  m->kdims = mn ? 1 : kd;
  int r = 0;
  if (mn) {
    m->dims[r++] = inner;
  } else {
    for (int i = 0; i < kd; i++) m->dims[r++] = P[i];
    for (int i = 1; i < kd; i++) m->strides[i - 1] = ks[i] * eb;
  }
  /* the D (MN-major: K) dim; a dim of extent 1 has no stride of its own: the packed one (a
   * multiple of 16 too) past the inner dims' span */
  int64_t span = mn ? inner : kaddr(kd, P, ks, ext[1] > 0 ? ext[1] - 1 : 0) + 1;
  m->dims[r] = oext;
  m->strides[r - 1] = (oext > 1 ? outer : (span + 7) / 8 * 8) * eb;
  r++;
  m->dims[r] = ext[0];
  m->strides[r - 1] = ext[0] > 1 ? str[0] * eb : m->strides[r - 2] * oext;
  m->rank = ext[0] > 1 ? r + 1 : r;
  /* K-major: {8, (1, 1,) DB} (the caller widens box[0] to a swizzled panel); MN-major: set by
   * the caller ({S / eb, KB}: MN-major tiles are swizzled always) */
  for (int i = 0; i < 5; i++) m->box[i] = 1;
  m->box[0] = 16 / eb;
  m->box[mn ? 1 : kd] = DB;
  m->offset = o;
  return true;
}

bool kl_tma_box_fits(const kl_tma_map *m) { return m->mn || m->kdims <= 1 || m->dims[0] % m->box[0] == 0; }

int kl_tma_coords(kl_emitter *e, const kl_tma_map *m, kl_value *g, kl_value *k, kl_value *d, kl_value **out) {
  int r = 0;
  if (m->mn) {
    out[r++] = d, out[r++] = k;
  } else {
    int kd = m->kdims > 1 ? m->kdims : 1;
    for (int i = 0; i < kd; i++) {
      bool last = i + 1 == kd;
      out[r++] = last ? k : kl_emit_remi(e, k, m->dims[i]);
      if (!last) k = kl_emit_divi(e, k, m->dims[i]);
    }
    out[r++] = d;
  }
  if (r < m->rank) out[r++] = g;
  return r;
}

int64_t kl_persist_reserve(int64_t MB, int64_t NB, int64_t elem_bytes) {
  return MB * NB * elem_bytes + (MB > NB ? MB : NB) * 16 + 3 * 1024;
}

int kl_tma_stages(int64_t opt, int64_t lds_bytes, int64_t stage_bytes) {
  int64_t w = opt >= 3 ? opt : 4;
  while (w >= 3 && w * stage_bytes + 64 > lds_bytes) w--;
  return w >= 3 ? (int)w : 0;
}

bool kl_tma_same_map(const kl_op *a, const kl_op *b) {
  static const char *const keys[4] = { "dims", "strides", "box", "im2col" };
  if (a->opnds[0].value != b->opnds[0].value) return false;
  for (int i = 0; i < 4; i++) {
    int64_t x[8], y[8];
    int nx = kl_op_attr_i64s(a, keys[i], x, 8), ny = kl_op_attr_i64s(b, keys[i], y, 8);
    if (nx != ny || (nx > 0 && memcmp(x, y, sizeof *x * (size_t)nx))) return false;
  }
  int64_t oa = -1, ob = -2, sa = 0, sb = 0;
  kl_op_attr_i64(a, "offset", &oa);
  kl_op_attr_i64(b, "offset", &ob);
  kl_op_attr_i64(a, "swizzle", &sa);
  kl_op_attr_i64(b, "swizzle", &sb);
  return oa == ob && sa == sb;
}

int kl_tma_kernel_maps(kl_op *kernel, kl_op **out, int max) {
  int n, nm = 0;
  kl_op **ops = kl_collect_ops(kernel, &n);
  kl_op *seen[64];
  for (int i = 0; i < n; i++) {
    if (strcmp(ops[i]->name, "rock.tma_load")) continue;
    if (ops[i]->nopnds < 1 || ops[i]->opnds[0].value->def) {
      nm = -1;
      break;
    }
    bool dup = false;
    for (int j = 0; j < nm && j < 64 && !dup; j++) dup = kl_tma_same_map(seen[j], ops[i]);
    if (dup) continue;
    if (nm < 64) seen[nm] = ops[i];
    if (nm < max) out[nm] = ops[i];
    nm++;
  }
  free(ops);
  return nm;
}

int64_t kl_tma_lds_align(kl_op *kernel) {
  int n;
  kl_op **ops = kl_collect_ops(kernel, &n);
  int64_t al = 0;
  for (int i = 0; i < n; i++) {
    bool tma = !strcmp(ops[i]->name, "rock.tma_load");
    if (!tma && strcmp(ops[i]->name, "rock.wgmma_desc")) continue;
    int64_t sw = 0;
    kl_op_attr_i64(ops[i], "swizzle", &sw);
    int64_t a = sw > 0 ? 8 * sw : tma ? 128 : 0;
    if (a > al) al = a;
  }
  free(ops);
  return al;
}

int64_t kl_tma_lds_bytes(kl_op *kernel) {
  int64_t al = kl_tma_lds_align(kernel);
  int n;
  kl_op **ops = kl_collect_ops(kernel, &n);
  int64_t bytes = 0;
  for (int i = 0; i < n && bytes < INT64_MAX; i++) {
    const kl_type *t = ops[i]->nresults ? ops[i]->results[0].type : NULL;
    if (strcmp(ops[i]->name, "rock.alloc") || !t || t->kind != KL_TY_BUFFER || t->space != KL_SPACE_LDS) continue;
    int64_t b = kl_type_numel(t) * ((kl_type_bits(t->elem) + 7) / 8);
    if (al > 0) bytes = (bytes + al - 1) / al * al;
    bytes = (b < 0 || bytes > INT64_MAX - b) ? INT64_MAX : bytes + b;
  }
  free(ops);
  return bytes;
}

int64_t kl_ws_launch_regs(int64_t nc) {
  int64_t at = 65536 / (nc + 128) / 8 * 8;
  return at > 248 ? 248 : at; /* 255 registers at most, a multiple of 8 */
}
int64_t kl_ws_consumer_regs(int64_t nc) {
  int64_t at = kl_ws_launch_regs(nc), r = (at * (nc + 128) - 128 * KL_WS_PRODUCER_REGS) / nc / 8 * 8;
  return r > 256 ? 256 : r;
}
int64_t kl_ws_consumer_threads(const kl_op *op) {
  for (const kl_op *o = op; o && o->block; o = kl_op_parent_op(o)) {
    kl_op *p = kl_op_parent_op(o);
    int64_t n;
    if (p && !strcmp(p->name, "scf.if") && kl_op_attr_i64(p, "ws_consumers", &n) && o->block->region == &p->regions[0])
      return n;
  }
  return 0;
}
