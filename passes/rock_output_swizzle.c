/* rock_output_swizzle.c — the `rock-output-swizzle` pass: the GEMM's accumulator tile
 * goes through LDS before output fusion, so that the final global write and the reads
 * of the fused extra inputs are wide, coalesced accesses.
 *
 * It runs after rock-blockwise-to-threadwise and before rock-align-tiling on every
 * kernel func. Its root is the GEMM's final write (rock-gridwise-to-blockwise's
 * contract):
 *   rock.threadwise_write_all(%acc, %dst, %bid, %tid) {view = W: (bid, tid, iter) ->
 *        (g, m, n) of C [G, Mp, Np], store}
 *   %acc a 1-D private tile written by the K loop's rock.threadwise_gemm / rock.store
 * W is the matrix instructions' (or the FMA thread tile's) layout. The block tile
 * MB x NB is read off W (block 0 covers [0, MB) x [0, NB) once; block b is tile
 * (g, mb, nb) with b = (g * Mp/MB + mb) * Np/NB + nb). The swizzled layout S gives thread
 * tid runs of V elements along the output's fastest dim (n, or m when the output is
 * contiguous along M): tile index f = (j * BS + tid) * V + v (iter = j * V + v) over the
 * tile taken row-major along that dim; V = 16 bytes of the narrowest output element,
 * halved until it divides the per-thread count and the tile's fast side. Applied:
 *   rock.barrier
 *   [%cv = rock.alloc private [n x Tc]; rock.elementwise(%acc, %cv) {convert}]  (Tc: C's type)
 *   rock.threadwise_write_all(%cv, %lds, %c0, %tid) {view = W, store = "set", swizzle
 *        [, stmatrix = 4]}     (%c0 = block 0: the LDS tile is block-local)
 *   rock.barrier
 *   rock.threadwise_read_into(%lds, %sw, %bid, %tid) {view = S, swizzle}
 *   rock.threadwise_write_all(%sw, %dst, %bid, %tid) {view = S, store, vector_len}
 * %lds is a rock.transform [G, Mp, Np] -> the block-local tile (m mod MB, n mod NB) of
 * an LDS buffer: a K-loop LDS tile of type Tc with room for MB*NB elements (GPU targets;
 * it is free after the loop's last barrier), else a new rock.alloc (the func's lds_bytes
 * grows by it); a persistent kernel (func attribute persistent = "on", passes/rock_tma.h)
 * always takes a new one, within the whole LDS: its K loop's stages receive the next
 * tile's loads during the epilogue. rock-align-tiling then fuses the epilogue at the new write: its extra
 * inputs are read in layout S too.
 *
 * The guard. The accesses that the layout decides: the final write of every output of
 * the fused epilogue (the element-wise ops reading C directly, chained through global
 * intermediates), each of their extra inputs, and C itself when it stays (an argument,
 * or other readers). For each, the vector length along iter (kl_view_max_vectorization
 * through its composed views, 16-byte cap) in layout W and in layout S. Applied when no
 * access narrows and one widens; refused when one narrows ("refused: input in2 is
 * contiguous along M ..."), when nothing widens, when an access gets less coalesced (the
 * 32-byte sectors the first warp of a middle block touches, kl_tile_warp_sectors, grow:
 * "refused: input in2 is read less coalesced swizzled ..." — an NCHW residual of an
 * NHWC output, where 7x7 rows allow no vector in either layout but the accumulator
 * layout's lanes read neighbouring pixels), when the store method is not "set"
 * (atomic split-K writes), when W is not a block tile, or when the LDS tile does not fit
 * the target's LDS (NVPTX: 48 KiB of static shared memory). The decision goes on the
 * kernel func as `output_swizzle` ("applied", "applied (forced)", "off (forced)",
 * "refused: <reason>"; p:kernels()[i].output_swizzle) and, with KILN_DEBUG set, as a
 * remark on stderr with the vector lengths. Option force=on|off|auto (default auto):
 * on applies whenever the layout allows it (a tile that does not fit the LDS is then
 * an error at the write); off never. Option target: as rock-blockwise-to-threadwise.
 * Option stmatrix (default true): on sm_90+ targets (kl_target_has_stmatrix) a 16-bit C
 * tile's LDS store carries stmatrix = 4, which rock-lower-loops turns into rock.stmatrix
 * where it proves the lane mapping (passes/lower_loops_ldmatrix.c; .trans for rows along
 * M); false keeps the scalar stores.
 * At the end the swizzle invariant (passes/rock_output_swizzle.h) is verified. */
#include "passes/rock_output_swizzle.h"
#include "core/context.h"
#include "core/env.h"
#include "core/dialect_builtin.h"
#include "core/dialect_rock.h"
#include "core/pass.h"
#include "core/rewrite.h"
#include "passes/lower_loops.h"
#include "passes/perf_config.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *force, *target;
  bool stmatrix;
} opts;

/* GPU targets: the swizzle's LDS rows (along the output's fast dim) are this many bytes
 * longer than the tile's side: the matrix instructions' accumulator layout stores 8 rows
 * at once (mma.sync: lane l holds row l/4, 4 bytes at column 2 * (l % 4)); with rows a
 * multiple of 128 bytes apart they hit the same banks (8-way conflicts), 16 bytes more
 * per row spreads them over all 32 banks, and 16 keeps every row 16-byte aligned. */
enum { LDS_PAD_BYTES = 16 };

/* The block tile read off W. */
typedef struct {
  int64_t G, Mp, Np, MB, NB, BS, nblk, n;
} tile;

/* One access the layout decides, relative to C's coordinates. */
typedef struct {
  kl_value *v; /* a value of C's shape (a buffer or a transform chain) */
  bool write;
  const char *name;
  int64_t vo, vs, vother; /* vector lengths: W, S, S along the other dim */
  int64_t so, ss;         /* 32-byte sectors one warp touches: W, S (-1: unknown) */
} access;
enum { MAX_ACC = 64 };

static int64_t elem_bytes(const kl_type *t) { return (kl_type_bits(t) + 7) / 8; }

/* Whether op may write its operand `index` (unknown ops: yes). */
static bool writes_operand(const kl_op *op, int index) {
  const char *n = op->name;
  if (!strcmp(n, "rock.transform") || !strcmp(n, "rock.load")) return false;
  if (!strcmp(n, "rock.elementwise")) return index == op->nopnds - 1;
  if (!strcmp(n, "rock.threadwise_write_all") || !strcmp(n, "rock.threadwise_read_into") ||
      !strcmp(n, "rock.threadwise_copy_async"))
    return index == 1;
  if (!strcmp(n, "rock.threadwise_gemm") || !strcmp(n, "rock.blockwise_gemm")) return index == 2;
  if (!strcmp(n, "rock.store")) return index == 1;
  return true;
}

static kl_value *underlying(kl_value *v) { return kl_rock_underlying(v, NULL, &(int){ 0 }, 0); }

/* The name of the buffer under v: its kernel argument name, else "an intermediate". */
static const char *buffer_name(kl_op *func, kl_value *v) {
  kl_value *u = underlying(v);
  const kl_attr *names = kl_op_attr(func, "arg_names");
  if (!u->def && names && names->kind == KL_AT_ARRAY && u->index < names->n &&
      names->elems[u->index]->kind == KL_AT_STR)
    return names->elems[u->index]->s;
  if (!u->def && u->name_hint) return u->name_hint;
  return u->def ? "an intermediate" : "an argument";
}

/* ---- the block tile ---- */
static const char *tile_of(const kl_view *W, tile *t) {
  static char why[200];
  if (kl_view_rank(W) != 3 || kl_view_lower_rank(W) != 3)
    return "the write's view is not (bid, tid, iter) -> (g, m, n)";
  *t = (tile){ .G = kl_view_lower_size(W, 0),
               .Mp = kl_view_lower_size(W, 1),
               .Np = kl_view_lower_size(W, 2),
               .nblk = kl_view_size(W, 0),
               .BS = kl_view_size(W, 1),
               .n = kl_view_size(W, 2) };
  int64_t cnt = t->BS * t->n;
  if (cnt <= 0 || cnt > (1 << 22)) return "the block tile is too large to analyse";
  int64_t mx[3] = { -1, -1, -1 };
  int64_t *pts = kl_xmalloc((size_t)cnt * 2 * sizeof *pts); /* block 0's (m, n), evaluated once */
  for (int64_t tid = 0, i = 0; tid < t->BS; tid++)
    for (int64_t it = 0; it < t->n; it++, i++) {
      int64_t up[3] = { 0, tid, it }, lo[3];
      if (!kl_view_eval(W, up, lo)) {
        free(pts);
        return "the accumulator layout has invalid points";
      }
      for (int d = 0; d < 3; d++) mx[d] = lo[d] > mx[d] ? lo[d] : mx[d];
      pts[2 * i] = lo[1], pts[2 * i + 1] = lo[2];
    }
  t->MB = mx[1] + 1;
  t->NB = mx[2] + 1;
  if (mx[0] != 0 || t->MB * t->NB != cnt || t->Mp % t->MB || t->Np % t->NB ||
      t->G * (t->Mp / t->MB) * (t->Np / t->NB) != t->nblk) {
    free(pts);
    snprintf(why, sizeof why, "the accumulator layout is not a block tile (block 0 spans %lldx%lld)", (long long)t->MB,
             (long long)t->NB);
    return why;
  }
  unsigned char *seen = kl_xcalloc((size_t)cnt, 1);
  bool ok = true;
  for (int64_t i = 0; i < cnt && ok; i++) {
    int64_t f = pts[2 * i] * t->NB + pts[2 * i + 1];
    ok = !seen[f];
    seen[f] = 1;
  }
  free(seen);
  free(pts);
  if (!ok) return "the accumulator layout covers a tile element twice";
  /* the block order: bid = (g * Mp/MB + mb) * Np/NB + nb, checked on the tile origin of
   * (up to 4096 evenly spread) blocks */
  int64_t o[3], up0[3] = { 0, 0, 0 };
  kl_view_eval(W, up0, o);
  int64_t Mb = t->Mp / t->MB, Nb = t->Np / t->NB, step = t->nblk > 4096 ? t->nblk / 4096 : 1;
  for (int64_t b = 0; b < t->nblk; b += step) {
    int64_t up[3] = { b, 0, 0 }, lo[3];
    kl_view_eval(W, up, lo);
    if (lo[0] != b / (Mb * Nb) || lo[1] != (b / Nb) % Mb * t->MB + o[1] || lo[2] != b % Nb * t->NB + o[2])
      return "the blocks of the accumulator layout are not in (g, m block, n block) order";
  }
  return NULL;
}

/* S: (bid, tid, iter) -> (g, m, n), runs of V along n (nfast) or m. */
static kl_view *swizzled_view(const tile *t, bool nfast, int64_t V, char *err, size_t n) {
  kl_vb b;
  int64_t shape[3] = { t->G, t->Mp, t->Np };
  const char *names[3] = { "g", "m", "n" };
  kl_vb_identity(&b, 3, shape, names);
  const char *mn[2] = { "mb", "mi" }, *nn[2] = { "nb", "ni" };
  int64_t ms[2] = { t->Mp / t->MB, t->MB }, ns[2] = { t->Np / t->NB, t->NB };
  kl_vb_unmerge(&b, "m", 2, mn, ms);
  kl_vb_unmerge(&b, "n", 2, nn, ns);
  const char *bn[3] = { "g", "mb", "nb" }, *fn_n[2] = { "mi", "ni" }, *fn_m[2] = { "ni", "mi" };
  kl_vb_merge(&b, "bid", 3, bn);
  kl_vb_merge(&b, "f", 2, nfast ? fn_n : fn_m);
  const char *jn[3] = { "j", "tid", "v" };
  int64_t js[3] = { t->n / V, t->BS, V };
  kl_vb_unmerge(&b, "f", 3, jn, js);
  const char *in[2] = { "j", "v" };
  kl_vb_merge(&b, "iter", 2, in);
  const char *ord[3] = { "bid", "tid", "iter" };
  kl_vb_order(&b, 3, ord);
  return kl_vb_finish(&b, err, n);
}

/* Slices dim `name` of b's view to [lo, hi). */
static void vb_slice(kl_vb *b, const char *name, int64_t lo, int64_t hi) {
  if (b->bad) return;
  int64_t be[2] = { lo, hi };
  kl_view *nv = kl_view_slice(b->v, 1, &name, be, &b->err);
  if (nv) {
    kl_view_free(b->v);
    b->v = nv;
  } else
    b->bad = true;
}

/* [G, Mp, Np] -> the LDS buffer of type `raw` (any shape: a K-loop buffer, or the
 * swizzle's own [slow, fast + pad]): (g, m, n) is tile element (m mod MB, n mod NB) at
 * flat index slow * (fast + pad) + fast, slow/fast = mi/ni (nfast) or ni/mi: rows along
 * the fast dim, `pad` elements apart (see LDS_PAD_BYTES). */
static kl_view *lds_view(const tile *t, bool nfast, int64_t pad, const kl_type *raw, char *err, size_t n) {
  kl_vb b;
  const char *tn_n[2] = { "mi", "ni" }, *tn_m[2] = { "ni", "mi" };
  const char *const *tn = nfast ? tn_n : tn_m;
  int64_t slow = nfast ? t->MB : t->NB, fast = nfast ? t->NB : t->MB, ts[2] = { slow, fast + pad };
  const char *rn[KL_VIEW_MAX_DIMS];
  char buf[KL_VIEW_MAX_DIMS][16];
  for (int i = 0; i < raw->rank; i++) {
    snprintf(buf[i], sizeof buf[i], "r%d", i);
    rn[i] = buf[i];
  }
  kl_vb_identity(&b, raw->rank, raw->shape, rn);
  if (raw->rank > 1) kl_vb_merge(&b, "f", raw->rank, rn);
  const char *fname = raw->rank > 1 ? "f" : rn[0];
  vb_slice(&b, fname, 0, slow * (fast + pad));
  kl_vb_unmerge(&b, fname, 2, tn, ts);
  if (pad) vb_slice(&b, tn[1], 0, fast);
  kl_vb_add_dim(&b, "g", t->G);
  kl_vb_add_dim(&b, "mb", t->Mp / t->MB);
  kl_vb_add_dim(&b, "nb", t->Np / t->NB);
  const char *mm[2] = { "mb", "mi" }, *nm[2] = { "nb", "ni" };
  kl_vb_merge(&b, "m", 2, mm);
  kl_vb_merge(&b, "n", 2, nm);
  const char *ord[3] = { "g", "m", "n" };
  kl_vb_order(&b, 3, ord);
  return kl_vb_finish(&b, err, n);
}

/* ---- the accesses the layout decides ---- */
static void add_access(access *a, int *na, kl_value *v, bool write, kl_op *func) {
  for (int i = 0; i < *na; i++)
    if (a[i].v == v) return;
  if (*na < MAX_ACC) a[(*na)++] = (access){ v, write, buffer_name(func, v), 1, 1, 1, -1, -1 };
}

/* Whether every use of v (through transforms) is op. */
static bool only_to(kl_value *v, kl_op *op) {
  for (kl_use *u = v->first_use; u; u = u->next) {
    if (u->user == op) continue;
    if (!strcmp(u->user->name, "rock.transform") && only_to(&u->user->results[0], op)) continue;
    return false;
  }
  return true;
}

/* Collects the accesses of the element-wise ops that read buffer c (C's shape, written
 * at C's coordinates) directly; recurses into global intermediates they write directly. */
static void collect(kl_value *c, kl_op *write, kl_op *func, access *a, int *na, int depth) {
  bool stays = !c->def; /* a kernel argument stays; its element-wise readers fuse too */
  if (depth > 8) {
    add_access(a, na, c, true, func);
    return;
  }
  for (kl_use *u = c->first_use; u; u = u->next) {
    kl_op *x = u->user;
    if (x == write) continue;
    if (!strcmp(x->name, "rock.transform")) {
      if (!only_to(&x->results[0], write)) stays = true; /* read through a view: not fused, C stays */
      continue;
    }
    if (strcmp(x->name, "rock.elementwise") || u->index == x->nopnds - 1) {
      stays = true;
      continue;
    }
    for (int i = 0; i + 1 < x->nopnds; i++)
      if (x->opnds[i].value != c) add_access(a, na, x->opnds[i].value, false, func);
    kl_value *o = x->opnds[x->nopnds - 1].value;
    if (o->def && !strcmp(o->def->name, "rock.alloc") && kl_ll_space(o) == KL_SPACE_GLOBAL && o != c)
      collect(o, NULL, func, a, na, depth + 1);
    else
      add_access(a, na, o, true, func);
  }
  if (stays) add_access(a, na, c, true, func);
}

/* Vector lengths of every access in layout L (relative to C's coordinates through dst). */
static bool measure(const kl_view *L, kl_value *dst, access *a, int na, int which) {
  kl_value *under;
  kl_view *T = kl_tile_compose_to_buffer(L, dst, &under, NULL, 0);
  if (!T) return false;
  for (int i = 0; i < na; i++) {
    int64_t v = kl_tile_vector_len(T, a[i].v, 2);
    if (which == 0) a[i].vo = v;
    if (which == 1) a[i].vs = v;
    if (which == 2) a[i].vother = v;
  }
  kl_view_free(T);
  return true;
}

/* The coalescing of every access in layout L: the 32-byte sectors that the first warp of
 * block bid touches, each lane taking its vector length per instruction. */
static void sectors(const kl_view *L, kl_value *dst, access *a, int na, bool swz, int warp, int64_t bid) {
  kl_value *under;
  kl_view *T = kl_tile_compose_to_buffer(L, dst, &under, NULL, 0);
  for (int i = 0; i < na; i++) {
    int64_t s = T ? kl_tile_warp_sectors(T, a[i].v, bid, warp, swz ? a[i].vs : a[i].vo, 32) : -1;
    if (swz)
      a[i].ss = s;
    else
      a[i].so = s;
  }
  kl_view_free(T);
}

/* ---- LDS ---- */
static int64_t func_lds_bytes(kl_op *func) {
  int n;
  kl_op **ops = kl_collect_ops(func, &n);
  int64_t bytes = 0;
  for (int i = 0; i < n; i++) {
    const kl_type *t = ops[i]->nresults ? ops[i]->results[0].type : NULL;
    if (!strcmp(ops[i]->name, "rock.alloc") && t && t->kind == KL_TY_BUFFER && t->space == KL_SPACE_LDS)
      bytes += kl_type_numel(t) * elem_bytes(t->elem);
  }
  free(ops);
  return bytes;
}

/* A K-loop LDS buffer of element type et with room for `need` elements, the smallest
 * (NULL: none); *largest = the largest 1-D one of any size (the K loop's one buffer,
 * rock-gridwise-to-blockwise's join_lds), which the swizzle may grow (NULL: none). */
static kl_value *reusable_lds(kl_op *func, const kl_type *et, int64_t need, kl_value **largest) {
  kl_block *entry = kl_region_entry(&func->regions[0]);
  kl_value *best = NULL;
  *largest = NULL;
  for (kl_op *o = entry ? entry->first : NULL; o; o = o->next) {
    if (strcmp(o->name, "rock.alloc") || o->nresults != 1) continue;
    const kl_type *t = o->results[0].type;
    if (t->kind != KL_TY_BUFFER || t->space != KL_SPACE_LDS || t->elem != et) continue;
    bool ours = false; /* another swizzle's buffer is not a K-loop tile */
    for (kl_use *u = o->results[0].first_use; u && !ours; u = u->next)
      ours = u->user->name && !strcmp(u->user->name, "rock.transform") && u->user->results[0].first_use &&
          kl_op_attr(u->user->results[0].first_use->user, "swizzle");
    if (ours) continue;
    if (t->rank == 1 && (!*largest || kl_type_numel(t) > kl_type_numel((*largest)->type))) *largest = &o->results[0];
    if (kl_type_numel(t) >= need && (!best || kl_type_numel(t) < kl_type_numel(best->type))) best = &o->results[0];
  }
  return best;
}

/* Replaces the 1-D LDS buffer `buf` by one of n elements (n larger) whose first elements
 * its users now read through a slice; returns the new buffer. NULL + message on failure. */
static kl_value *grow_lds(kl_rewriter *rw, kl_value *buf, int64_t n, char *err, size_t errlen) {
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_loc loc = buf->def->loc;
  int64_t old = buf->type->shape[0];
  const kl_type *nt = kl_type_buffer(ctx, buf->type->elem, 1, &n, NULL, KL_SPACE_LDS);
  kl_rewriter_set_insertion_before(rw, buf->def);
  kl_value *nb = kl_op_result(kl_rewriter_create(rw, "rock.alloc", loc, 0, NULL, 1, &nt, 0, NULL, 0), 0);
  kl_vb b;
  const char *f = "f";
  kl_vb_identity(&b, 1, &n, &f);
  vb_slice(&b, f, 0, old);
  kl_view *v = kl_vb_finish(&b, err, errlen);
  if (!v) return NULL;
  kl_value *sl = kl_tile_transform(rw, loc, nb, v);
  kl_view_free(v);
  kl_op *def = buf->def;
  kl_rewriter_replace_all_uses(rw, buf, sl);
  kl_rewriter_erase_op(rw, def);
  return nb;
}

static void remark(kl_op *write, const char *decision, const access *a, int na, bool nfast, int64_t V) {
  if (!kl_env_debug("swizzle")) return; /* KILN_DEBUG (core/env.h) */
  char where[256];
  kl_loc_format(write->loc, where, sizeof where);
  fprintf(stderr, "[remark] rock-output-swizzle at %s: %s; runs of %lld along %s;", where, decision, (long long)V,
          nfast ? "N" : "M");
  for (int i = 0; i < na; i++)
    fprintf(stderr, " %s %s x%lld -> x%lld (%lld -> %lld sectors)%s", a[i].write ? "write" : "read", a[i].name,
            (long long)a[i].vo, (long long)a[i].vs, (long long)a[i].so, (long long)a[i].ss, i + 1 < na ? "," : "");
  fprintf(stderr, "\n");
}

/* ---- the rewrite ---- */
static kl_op *copy_op(kl_rewriter *rw, kl_loc loc, const char *name, kl_value *src, kl_value *dst, kl_value *bid,
                      kl_value *tid, const kl_view *v, int64_t vlen, const char *store, bool mark) {
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_value *o[4] = { src, dst, bid, tid };
  kl_named_attr a[4] = { { "view", kl_attr_from_view(ctx, v) }, { "vector_len", kl_attr_int(ctx, vlen) } };
  int na = 2;
  if (store) a[na++] = (kl_named_attr){ "store", kl_attr_str(ctx, store) };
  if (mark) a[na++] = (kl_named_attr){ "swizzle", kl_attr_unit(ctx) };
  return kl_rewriter_create(rw, name, loc, 4, o, 0, NULL, na, a, 0);
}

static kl_value *private_tile(kl_rewriter *rw, kl_loc loc, kl_block *entry, const kl_type *et, int64_t n) {
  const kl_type *t = kl_type_buffer(kl_rewriter_ctx(rw), et, 1, &n, NULL, KL_SPACE_PRIVATE);
  kl_rewriter_set_insertion_before(rw, entry->first);
  return kl_op_result(kl_rewriter_create(rw, "rock.alloc", loc, 0, NULL, 1, &t, 0, NULL, 0), 0);
}

static void barrier(kl_rewriter *rw, kl_loc loc) {
  kl_rewriter_create(rw, "rock.barrier", loc, 0, NULL, 0, NULL, 0, NULL, 0);
}

static kl_status rewrite(kl_rewriter *rw, kl_op *write, kl_op *func, const tile *t, bool nfast, int64_t V, int64_t pad,
                         kl_value *lds_raw, int64_t grow_to, bool stm, char *err, size_t errlen) {
  kl_ctx *ctx = write->ctx;
  kl_loc loc = write->loc;
  kl_value *acc = write->opnds[0].value, *dst = write->opnds[1].value;
  kl_value *bid = write->opnds[2].value, *tid = write->opnds[3].value;
  const kl_view *W = kl_ll_op_view(write);
  const kl_type *tc = dst->type->elem;
  kl_block *entry = kl_region_entry(&func->regions[0]);
  kl_view *S = swizzled_view(t, nfast, V, err, errlen);
  if (!S) return KL_ERR;
  bool fresh = lds_raw == NULL;
  int64_t grown = 0; /* elements the K loop's buffer grows by */
  if (!fresh && kl_type_numel(lds_raw->type) < grow_to) {
    grown = grow_to - kl_type_numel(lds_raw->type);
    lds_raw = grow_lds(rw, lds_raw, grow_to, err, errlen);
    if (!lds_raw) {
      kl_view_free(S);
      return KL_ERR;
    }
  }
  if (fresh) {
    int64_t s[2] = { nfast ? t->MB : t->NB, (nfast ? t->NB : t->MB) + pad };
    const kl_type *lt = kl_type_buffer(ctx, tc, 2, s, NULL, KL_SPACE_LDS);
    kl_rewriter_set_insertion_before(rw, entry->first);
    lds_raw = kl_op_result(kl_rewriter_create(rw, "rock.alloc", loc, 0, NULL, 1, &lt, 0, NULL, 0), 0);
  }
  kl_view *LV = lds_view(t, nfast, pad, lds_raw->type, err, errlen);
  if (!LV) {
    kl_view_free(S);
    return KL_ERR;
  }
  kl_value *ctile = acc;
  if (acc->type->elem != tc) ctile = private_tile(rw, loc, entry, tc, t->n);
  kl_value *sw = private_tile(rw, loc, entry, tc, t->n);
  kl_rewriter_set_insertion_before(rw, write);
  kl_value *lds = kl_tile_transform(rw, loc, lds_raw, LV);
  kl_view_free(LV);
  barrier(rw, loc);
  if (ctile != acc) /* the accumulator in C's type (the conversion the write would do) */
    kl_ll_convert_tile(rw, loc, acc, ctile);
  /* the LDS store is block-local (the LDS view takes m mod MB, n mod NB and W is block
   * 0's layout shifted to the block's origin, see tile_of): block 0's addresses, so its
   * index math has no block term and rock-lower-loops proves stmatrix on one block */
  kl_emitter em = { rw, loc };
  kl_op *sto = copy_op(rw, loc, "rock.threadwise_write_all", ctile, lds, kl_emit_index(&em, 0), tid, W,
                       kl_tile_vector_len(W, lds, 2), "set", true);
  if (stm) kl_rewriter_set_attr(rw, sto, "stmatrix", kl_attr_int(ctx, 4));
  barrier(rw, loc);
  copy_op(rw, loc, "rock.threadwise_read_into", lds, sw, bid, tid, S, kl_tile_vector_len(S, lds, 2), NULL, true);
  const char *store = kl_op_attr_string(write, "store");
  copy_op(rw, loc, "rock.threadwise_write_all", sw, dst, bid, tid, S, kl_tile_vector_len(S, dst, 2),
          store ? store : "set", false);
  kl_view_free(S);
  kl_rewriter_erase_op(rw, write);
  if (fresh || grown) {
    int64_t lb = 0;
    kl_op_attr_i64(func, "lds_bytes", &lb);
    lb += (fresh ? kl_type_numel(lds_raw->type) : grown) * elem_bytes(tc);
    kl_rewriter_set_attr(rw, func, "lds_bytes", kl_attr_int(ctx, lb));
  }
  return KL_OK;
}

/* Whether w is the GEMM's final write (see the header comment). */
static bool is_gemm_write(kl_op *w) {
  if (strcmp(w->name, "rock.threadwise_write_all") || w->nopnds != 4 || kl_op_attr(w, "swizzle")) return false;
  kl_value *acc = w->opnds[0].value;
  if (acc->type->kind != KL_TY_BUFFER || acc->type->rank != 1 || kl_ll_space(acc) != KL_SPACE_PRIVATE || !acc->def ||
      strcmp(acc->def->name, "rock.alloc"))
    return false;
  if (kl_ll_space(w->opnds[1].value) != KL_SPACE_GLOBAL) return false;
  /* the accumulator is written by the K loop's GEMM (directly or through a view) */
  kl_value *stack[16] = { acc };
  int ns = 1;
  while (ns) {
    kl_value *v = stack[--ns];
    for (kl_use *u = v->first_use; u; u = u->next) {
      kl_op *x = u->user;
      if (!strcmp(x->name, "rock.transform") && u->index == 0 && ns < 16) stack[ns++] = &x->results[0];
      if ((!strcmp(x->name, "rock.threadwise_gemm") && u->index == 2) ||
          (!strcmp(x->name, "rock.store") && u->index == 1 && kl_ll_before(x, w)))
        return true;
    }
  }
  return false;
}

static kl_status swizzle_write(kl_op *write, const opts *o) {
  kl_ctx *ctx = write->ctx;
  kl_op *func = kl_ll_func_of(write);
  const char *force = o->force && *o->force ? o->force : "auto";
  bool on = !strcmp(force, "on"), off = !strcmp(force, "off");
  char decision[600], err[512];
  access a[MAX_ACC];
  int na = 0;
  bool nfast = true;
  int64_t V = 1;
  kl_value *lds_raw = NULL;
  const kl_view *W = kl_ll_op_view(write);
  const char *store = kl_op_attr_string(write, "store");
  tile t;
  const char *why = NULL;
  kl_value *dst = write->opnds[1].value, *c = underlying(dst);
  if (off) {
    snprintf(decision, sizeof decision, "off (forced)");
    goto record;
  }
  if (store && strcmp(store, "set")) {
    snprintf(decision, sizeof decision, "refused: the output is written with store method '%s' (atomic writes)", store);
    goto record;
  }
  if (!W || (why = tile_of(W, &t))) {
    snprintf(decision, sizeof decision, "refused: %s", W ? why : "the write has no #view");
    goto record;
  }
  collect(c, write, func, a, &na, 0);
  /* the direction: where the output writes are wider */
  int64_t mb = 16;
  for (int i = 0; i < na; i++)
    if (a[i].write && elem_bytes(a[i].v->type->elem) < mb) mb = elem_bytes(a[i].v->type->elem);
  if (mb < 1) mb = 1;
  int64_t Vd[2];
  kl_view *Sd[2];
  int64_t wbytes[2] = { 0, 0 };
  access tmp[2][MAX_ACC];
  for (int d = 0; d < 2; d++) { /* d 0: along N, 1: along M */
    int64_t fast = d == 0 ? t.NB : t.MB;
    Vd[d] = 16 / mb;
    while (Vd[d] > 1 && (t.n % Vd[d] || fast % Vd[d])) Vd[d] /= 2;
    Sd[d] = swizzled_view(&t, d == 0, Vd[d], err, sizeof err);
    memcpy(tmp[d], a, na * sizeof *a);
    if (Sd[d] && measure(Sd[d], dst, tmp[d], na, 1))
      for (int i = 0; i < na; i++)
        if (tmp[d][i].write) wbytes[d] += tmp[d][i].vs * elem_bytes(tmp[d][i].v->type->elem);
  }
  nfast = wbytes[0] >= wbytes[1];
  int dd = nfast ? 0 : 1;
  V = Vd[dd];
  bool measured = Sd[dd] && measure(W, dst, a, na, 0);
  for (int i = 0; i < na; i++) {
    a[i].vs = tmp[dd][i].vs;
    a[i].vother = tmp[1 - dd][i].vs;
    a[i].so = a[i].ss = -1;
  }
  const kl_target *tg = kl_perf_resolve_target(write, o->target, err, sizeof err);
  if (!tg) {
    kl_emit_error(ctx, write->loc, "rock-output-swizzle: %s", err);
    kl_view_free(Sd[0]);
    kl_view_free(Sd[1]);
    return KL_ERR;
  }
  if (measured) {
    int warp = tg->wave_size > 0 ? tg->wave_size : 1;
    sectors(W, dst, a, na, false, warp, t.nblk / 2);
    sectors(Sd[dd], dst, a, na, true, warp, t.nblk / 2);
  }
  kl_view_free(Sd[0]);
  kl_view_free(Sd[1]);
  if (!measured) {
    snprintf(decision, sizeof decision, "refused: cannot compose the output's views");
    goto record;
  }
  if (!on) {
    const access *worse = NULL;
    bool widens = false;
    for (int i = 0; i < na; i++) {
      if (a[i].vs < a[i].vo && !worse) worse = &a[i];
      if (a[i].vs > a[i].vo) widens = true;
    }
    if (worse) {
      char along[32];
      snprintf(along, sizeof along, worse->vother > worse->vs ? "is contiguous along %s" : "is narrower swizzled",
               nfast ? "M" : "N");
      snprintf(decision, sizeof decision,
               "refused: %s %s %s (x%lld in the accumulator layout, x%lld swizzled along %s)",
               worse->write ? "output" : "input", worse->name, along, (long long)worse->vo, (long long)worse->vs,
               nfast ? "N" : "M");
      goto record;
    }
    if (!widens) {
      snprintf(decision, sizeof decision, "refused: nothing widens (no access is wider swizzled)");
      goto record;
    }
    /* the layouts agree only when no access gets less coalesced: an input whose lanes
     * touched fewer sectors in the accumulator layout (an NCHW residual of an NHWC
     * output: contiguous along the other dim, though no vector is possible) */
    for (int i = 0; i < na; i++)
      if (a[i].so > 0 && a[i].ss > a[i].so) {
        snprintf(decision, sizeof decision,
                 "refused: %s %s is %s less coalesced swizzled (%lld 32-byte sectors per warp in the "
                 "accumulator layout, %lld swizzled along %s)",
                 a[i].write ? "output" : "input", a[i].name, a[i].write ? "written" : "read", (long long)a[i].so,
                 (long long)a[i].ss, nfast ? "N" : "M");
        goto record;
      }
  }
  /* LDS: a free K-loop buffer of C's type (GPU targets), else a new one within the budget;
   * on GPU targets rows padded by LDS_PAD_BYTES when that fits, else unpadded */
  const kl_type *tc = dst->type->elem;
  int64_t slow = nfast ? t.MB : t.NB, pad = 0;
  int64_t budget = tg->arch == KL_ARCH_NVPTX && tg->lds_bytes > 48 * 1024 ? 48 * 1024 : tg->lds_bytes;
  int64_t wgb = 0; /* a multi-buffered wgmma K loop (passes/rock_wgmma.h): LDS for two blocks per SM */
  if (kl_op_attr_i64(func, "wgmma_buffers", &wgb) && wgb > 1 && tg->lds_bytes / 2 > budget) budget = tg->lds_bytes / 2;
  /* a persistent kernel (passes/rock_tma.h): the next tile's TMA loads land in the K loop's
   * stages during this epilogue, so the swizzle takes a buffer of its own, anywhere in the LDS
   * of its one workgroup per SM (rock-gridwise-to-blockwise left room: kl_persist_reserve) */
  const char *ps = kl_op_attr_string(func, "persistent");
  bool persistent = ps && !strcmp(ps, "on");
  if (persistent) budget = tg->lds_bytes;
  int64_t have = func_lds_bytes(func), bytes = 0, grow_to = 0;
  bool fits = false;
  for (int try = tg->arch != KL_ARCH_HOST && LDS_PAD_BYTES % elem_bytes(tc) == 0 ? 0 : 1; try < 2 && !fits; try++) {
    pad = try == 0 ? LDS_PAD_BYTES / elem_bytes(tc) : 0;
    int64_t need = slow * ((nfast ? t.NB : t.MB) + pad);
    bytes = need * elem_bytes(tc);
    kl_value *big = NULL;
    lds_raw = tg->arch != KL_ARCH_HOST && !persistent ? reusable_lds(func, tc, need, &big) : NULL;
    fits = lds_raw != NULL;
    if (!fits && big && have + (need - kl_type_numel(big->type)) * elem_bytes(tc) <= budget) {
      lds_raw = big; /* the K loop's buffer, grown to the swizzle tile */
      grow_to = need;
      fits = true;
    }
    if (!fits) fits = have + bytes + (persistent ? 3 * 1024 : 0) <= budget; /* persistent: the buffers' alignment */
  }
  if (!fits) {
    snprintf(err, sizeof err,
             "the swizzle tile (%lldx%lld %s, %lld bytes) and the kernel's %lld bytes of LDS exceed the %lld "
             "bytes of target %s",
             (long long)t.MB, (long long)t.NB, kl_type_str(tc), (long long)bytes, (long long)have, (long long)budget,
             tg->name);
    if (on) {
      kl_emit_error(ctx, write->loc, "rock-output-swizzle{force=on}: %s", err);
      return KL_ERR;
    }
    snprintf(decision, sizeof decision, "refused: %s", err);
    goto record;
  }
  snprintf(decision, sizeof decision, on ? "applied (forced)" : "applied");
  kl_rewriter *rw = kl_rewriter_new(ctx);
  kl_op *keep = write;
  remark(keep, decision, a, na, nfast, V);
  kl_rewriter_set_attr(rw, func, "output_swizzle", kl_attr_str(ctx, decision));
  /* sm_90+: the 16-bit accumulator tile goes to LDS with stmatrix.x4 where rock-lower-loops
   * proves the lane mapping (passes/lower_loops_ldmatrix.c), .trans for M-contiguous rows */
  bool stm = o->stmatrix && kl_target_has_stmatrix(tg) && kl_type_bits(tc) == 16;
  kl_status st = rewrite(rw, write, func, &t, nfast, V, pad, lds_raw, grow_to, stm, err, sizeof err);
  kl_rewriter_free(rw);
  if (st != KL_OK) kl_emit_error(ctx, func->loc, "rock-output-swizzle: %s", err);
  return st;
record:
  remark(write, decision, a, na, nfast, V);
  kl_rewriter *rw2 = kl_rewriter_new(ctx);
  kl_rewriter_set_attr(rw2, func, "output_swizzle", kl_attr_str(ctx, decision));
  kl_rewriter_free(rw2);
  return KL_OK;
}

/* ---- the invariant ---- */
static kl_status verify_func(kl_op *func) {
  int n;
  kl_op **ops = kl_collect_ops(func, &n);
  kl_status st = KL_OK;
  for (int i = 0; i < n; i++) {
    kl_op *w = ops[i];
    if (strcmp(w->name, "rock.threadwise_write_all") || !kl_op_attr(w, "swizzle") || w->nopnds < 2) continue;
    kl_value *lds = underlying(w->opnds[1].value);
    char at[256];
    kl_loc_format(w->loc, at, sizeof at);
    /* the swizzle read that follows it, and the barriers around the store */
    kl_op *rd = NULL;
    for (kl_op *x = w->next; x && !rd; x = x->next)
      if (!strcmp(x->name, "rock.threadwise_read_into") && kl_op_attr(x, "swizzle") && x->nopnds >= 2 &&
          underlying(x->opnds[0].value) == lds)
        rd = x;
    kl_op *b0 = w->prev;
    while (b0 &&
           (!strcmp(b0->name, "rock.elementwise") || !strcmp(b0->name, "rock.transform") ||
            kl_op_has_trait(b0, KL_TRAIT_CONSTANT)))
      b0 = b0->prev;
    if (!rd || !b0 || strcmp(b0->name, "rock.barrier") || !rd->prev || strcmp(rd->prev->name, "rock.barrier")) {
      kl_emit_error(func->ctx, w->loc,
                    "rock-output-swizzle: the swizzle's LDS store needs a barrier before it and a barrier-preceded "
                    "swizzle read after it in the same block");
      st = KL_ERR;
      continue;
    }
    /* nothing else writes the buffer from the barrier before the store on */
    for (int j = 0; j < n; j++) {
      kl_op *x = ops[j];
      if (x == w || !kl_ll_before(b0, x)) continue;
      for (int k = 0; k < x->nopnds; k++)
        if (writes_operand(x, k) && x->opnds[k].value->type->kind == KL_TY_BUFFER &&
            underlying(x->opnds[k].value) == lds) {
          kl_emit_error(func->ctx, x->loc,
                        "rock-output-swizzle: '%s' writes the LDS buffer of the output swizzle (store at %s); fused "
                        "ops must not write into the swizzle's region",
                        x->name, at);
          st = KL_ERR;
        }
    }
  }
  free(ops);
  return st;
}

kl_status kl_output_swizzle_verify(kl_op *module) {
  kl_status st = KL_OK;
  for (kl_op *f = kl_module_body(module)->first; f; f = f->next)
    if (kl_is_kernel(f) && verify_func(f) != KL_OK) st = KL_ERR;
  return st;
}

static kl_status run(kl_op *module, const kl_pass_options *po, void *user) {
  opts o = { kl_pass_opt_string(po, "force"), kl_pass_opt_string(po, "target"), kl_pass_opt_bool(po, "stmatrix") };
  if (o.force && *o.force && strcmp(o.force, "on") && strcmp(o.force, "off") && strcmp(o.force, "auto")) {
    kl_emit_error(module->ctx, module->loc, "rock-output-swizzle: option force must be on, off or auto, got '%s'",
                  o.force);
    return KL_ERR;
  }
  kl_status st = KL_OK;
  for (kl_op *f = kl_module_body(module)->first; f && st == KL_OK; f = f->next) {
    if (!kl_is_kernel(f)) continue;
    int n;
    kl_op **ops = kl_collect_ops(f, &n);
    for (int i = 0; i < n && st == KL_OK; i++)
      if (is_gemm_write(ops[i])) st = swizzle_write(ops[i], &o);
    free(ops);
  }
  if (st == KL_OK) st = kl_output_swizzle_verify(module);
  return st;
}

static const kl_pass_option options[] = {
  { "force", KL_OPT_STRING, "auto", "on: swizzle whenever the layout allows it; off: never; auto: the guard decides" },
  { "target", KL_OPT_STRING, "", "target name (overrides the func's / module's \"target\" attribute; default host)" },
  { "stmatrix", KL_OPT_BOOL, "true",
    "sm_90+: ask rock-lower-loops for stmatrix on the 16-bit accumulator -> LDS store (false: scalar stores)" },
};

void kl__register_rock_output_swizzle(kl_ctx *ctx) {
  kl_pass_info info = { "rock-output-swizzle",
                        "the GEMM's accumulator tile through LDS into runs along the output's fastest dim before "
                        "output fusion, when the vector lengths of the final write and the fused inputs agree",
                        options,
                        3,
                        run,
                        NULL };
  kl_register_pass(ctx, &info);
}
