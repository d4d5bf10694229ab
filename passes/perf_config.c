/* perf_config.c — parsing, printing, validation and the heuristic of GEMM perf
 * configs (see perf_config.h). */
#include "passes/perf_config.h"
#include "core/dialect_rock.h"
#include "core/dialect_builtin.h"
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

const char *const kl_perf_config_fields[6] = { "mPerBlock",  "nPerBlock",  "kPerBlock",
                                               "mPerThread", "nPerThread", "kpack" };

bool kl_perf_errf(char *err, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kl_verrf(err, n, fmt, ap); /* core/diag.h's formatting helper */
  va_end(ap);
  return false;
}

static int64_t *field(kl_perf_config *pc, int i) {
  int64_t *f[6] = { &pc->m_per_block,  &pc->n_per_block,  &pc->k_per_block,
                    &pc->m_per_thread, &pc->n_per_thread, &pc->kpack };
  return f[i];
}
static int64_t cfield(const kl_perf_config *pc, int i) { return *field((kl_perf_config *)pc, i); }

/* The six comma-separated positive integer fields after a perf config's "vN:" prefix
 * (shared by the v1 and the v2 accel formats); errors quote s and name the field. */
bool kl_perf_fields_parse(const char *s, const char *fields, const char *const *names, const char *fmt, int64_t out[7],
                          char *err, size_t errlen) {
  const char *p = fields;
  int nfields = 0;
  for (;;) {
    const char *start = p;
    while (*p && *p != ',') p++;
    if (nfields < 7) {
      const char *name = nfields < 6 ? names[nfields] : "splitK";
      const char *q = start;
      bool neg = false;
      if (q < p && (*q == '-' || *q == '+')) {
        neg = *q == '-';
        q++;
      }
      if (q == p) return kl_perf_errf(err, errlen, "perf config \"%s\": field %s is empty", s, name);
      int64_t v = 0;
      for (; q < p; q++) {
        if (*q < '0' || *q > '9')
          return kl_perf_errf(err, errlen, "perf config \"%s\": field %s \"%.*s\" is not an integer", s, name,
                              (int)(p - start > 32 ? 32 : p - start), start);
        if (v > (int64_t)1 << 40)
          return kl_perf_errf(err, errlen, "perf config \"%s\": field %s is too large", s, name);
        v = v * 10 + (*q - '0');
      }
      if (neg) v = -v;
      if (v <= 0)
        return kl_perf_errf(err, errlen, "perf config \"%s\": field %s must be positive, got %lld", s, name,
                            (long long)v);
      out[nfields] = v;
    }
    nfields++;
    if (!*p) break;
    p++;
  }
  if (nfields < 6)
    return kl_perf_errf(err, errlen, "perf config \"%s\": too few fields (%d; expected 6: %s), missing %s", s, nfields,
                        fmt, names[nfields]);
  if (nfields > 7)
    return kl_perf_errf(err, errlen, "perf config \"%s\": too many fields (%d; expected 6 or 7: %s[,splitK])", s,
                        nfields, fmt);
  if (nfields == 6) out[6] = 1;
  return true;
}

#define FMT "v1:mPerBlock,nPerBlock,kPerBlock,mPerThread,nPerThread,kpack"
bool kl_perf_config_parse(const char *s, kl_perf_config *out, char *err, size_t errlen) {
  if (!s) return kl_perf_errf(err, errlen, "perf config: missing string (expected " FMT ")");
  const char *colon = strchr(s, ':');
  if (!colon) return kl_perf_errf(err, errlen, "perf config \"%s\": missing version prefix (expected " FMT ")", s);
  if (colon - s != 2 || strncmp(s, "v1", 2))
    return kl_perf_errf(err, errlen, "perf config \"%s\": bad version \"%.*s\" (only v1 is supported: " FMT ")", s,
                        (int)(colon - s > 16 ? 16 : colon - s), s);
  int64_t v[7];
  if (!kl_perf_fields_parse(s, colon + 1, kl_perf_config_fields, FMT, v, err, errlen)) return false;
  kl_perf_config pc;
  for (int i = 0; i < 6; i++) *field(&pc, i) = v[i];
  pc.split_k = v[6];
  *out = pc;
  return true;
}

char *kl_perf_config_print(const kl_perf_config *pc, char *buf, size_t n) {
  int len = snprintf(buf, n, "v1:%lld,%lld,%lld,%lld,%lld,%lld", (long long)pc->m_per_block, (long long)pc->n_per_block,
                     (long long)pc->k_per_block, (long long)pc->m_per_thread, (long long)pc->n_per_thread,
                     (long long)pc->kpack);
  if (pc->split_k > 1 && len > 0 && (size_t)len < n) snprintf(buf + len, n - len, ",%lld", (long long)pc->split_k);
  return buf;
}

int64_t kl_perf_config_block_size(const kl_perf_config *pc) {
  if (pc->m_per_thread <= 0 || pc->n_per_thread <= 0 || pc->m_per_block % pc->m_per_thread ||
      pc->n_per_block % pc->n_per_thread)
    return 0;
  return (pc->m_per_block / pc->m_per_thread) * (pc->n_per_block / pc->n_per_thread);
}

int64_t kl_perf_config_lds_bytes(const kl_perf_config *pc, int elem_bytes) {
  return pc->k_per_block * (pc->m_per_block + pc->n_per_block) * (int64_t)elem_bytes;
}

bool kl_perf_config_validate(const kl_perf_config *pc, const kl_target *t, int elem_bytes, char *err, size_t errlen) {
  char s[160];
  kl_perf_config_print(pc, s, sizeof s);
  for (int i = 0; i < 6; i++) {
    if (cfield(pc, i) <= 0)
      return kl_perf_errf(err, errlen, "perf config %s: %s must be positive, got %lld", s, kl_perf_config_fields[i],
                          (long long)cfield(pc, i));
    if (cfield(pc, i) > ((int64_t)1 << 20))
      return kl_perf_errf(err, errlen, "perf config %s: %s = %lld is too large", s, kl_perf_config_fields[i],
                          (long long)cfield(pc, i));
  }
  if (pc->m_per_block % pc->m_per_thread)
    return kl_perf_errf(err, errlen, "perf config %s: mPerBlock (%lld) is not a multiple of mPerThread (%lld)", s,
                        (long long)pc->m_per_block, (long long)pc->m_per_thread);
  if (pc->n_per_block % pc->n_per_thread)
    return kl_perf_errf(err, errlen, "perf config %s: nPerBlock (%lld) is not a multiple of nPerThread (%lld)", s,
                        (long long)pc->n_per_block, (long long)pc->n_per_thread);
  if (pc->k_per_block % pc->kpack)
    return kl_perf_errf(err, errlen, "perf config %s: kPerBlock (%lld) is not a multiple of kpack (%lld)", s,
                        (long long)pc->k_per_block, (long long)pc->kpack);
  int64_t bs = kl_perf_config_block_size(pc);
  if (t && bs > t->max_workgroup_size)
    return kl_perf_errf(
        err, errlen,
        "perf config %s: block size (mPerBlock/mPerThread)*(nPerBlock/nPerThread) = %lld exceeds the max workgroup "
        "size %d of target %s (raise mPerThread/nPerThread)",
        s, (long long)bs, t->max_workgroup_size, t->name);
  if ((pc->k_per_block * pc->m_per_block) % bs)
    return kl_perf_errf(err, errlen,
                        "perf config %s: kPerBlock*mPerBlock (%lld) is not a multiple of the block size %lld "
                        "(threads copy equal shares of the A tile)",
                        s, (long long)(pc->k_per_block * pc->m_per_block), (long long)bs);
  if ((pc->k_per_block * pc->n_per_block) % bs)
    return kl_perf_errf(err, errlen,
                        "perf config %s: kPerBlock*nPerBlock (%lld) is not a multiple of the block size %lld "
                        "(threads copy equal shares of the B tile)",
                        s, (long long)(pc->k_per_block * pc->n_per_block), (long long)bs);
  int64_t lds = kl_perf_config_lds_bytes(pc, elem_bytes);
  if (t && lds > t->lds_bytes)
    return kl_perf_errf(err, errlen,
                        "perf config %s: tile larger than LDS: kPerBlock*(mPerBlock+nPerBlock)*%d bytes = %lld > %lld "
                        "bytes of target %s (reduce kPerBlock, mPerBlock or nPerBlock)",
                        s, elem_bytes, (long long)lds, (long long)t->lds_bytes, t->name);
  return true;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t kl_perf_config_grid_size(const kl_perf_config *pc, int64_t g, int64_t m, int64_t n) {
  return g * ceil_div(m, pc->m_per_block) * ceil_div(n, pc->n_per_block);
}

static double cost(const kl_perf_config *pc, const kl_target *t, int64_t g, int64_t m, int64_t n, int64_t k, int eb) {
  double bs = (double)kl_perf_config_block_size(pc);
  double tiles = (double)kl_perf_config_grid_size(pc, g, m, n);
  double cus = t->compute_units > 0 ? t->compute_units : 1;
  double rounds = (double)(int64_t)((tiles + cus - 1) / cus);
  double kp = (double)(ceil_div(k, pc->k_per_block) * pc->k_per_block);
  double mt = (double)pc->m_per_thread, nt = (double)pc->n_per_thread;
  double per_thread = kp * (mt * nt + 2 * (mt + nt) + 4.0 * (double)(pc->m_per_block + pc->n_per_block) / bs);
  if (t->arch == KL_ARCH_NVPTX && t->l2_bytes_per_cu_clk > 0) {
    /* per K step: the thread's work, the tile bytes at the L2 rate, at least the loads'
     * latency (as the accel cost, passes/rock_accel.h) */
    double iters = kp / (double)pc->k_per_block, step = per_thread / iters;
    double global = (double)(pc->k_per_block * (pc->m_per_block + pc->n_per_block)) * (double)eb /
        (double)t->l2_bytes_per_cu_clk;
    if (global > step) step = global;
    if (step < KL_NV_STEP_LATENCY) step = KL_NV_STEP_LATENCY;
    return rounds * iters * (step + 32.0);
  }
  return rounds * (per_thread + (kp / (double)pc->k_per_block) * 32.0);
}

double kl_perf_config_cost(const kl_perf_config *pc, const kl_target *t, int64_t g, int64_t m, int64_t n, int64_t k,
                           int elem_bytes) {
  return cost(pc, t, g, m, n, k, elem_bytes);
}

/* ---- host (block size 1) ----
 * A time model of the host lowering (passes/lower_loops_host.c), in cycles of one core
 * doing one 16-lane vector FMA per cycle: per workgroup and K iteration, the micro-kernel
 * FMAs (MB rows x vector ops per row of NB columns x KB), the C-tile loads and stores of
 * its 8 x 32 micro-tiles (42 per tile), the global -> LDS copies (0.5 per element) and
 * a loop overhead (50); per workgroup the accumulator fill and the final write (MB*NB/8)
 * and the call (500). Workgroups run in rounds of 8 (an assumed worker count, so that the
 * choice does not depend on the machine); padding to tile multiples is paid for. */
static int64_t host_vec_ops(int64_t nb, int64_t lanes) {
  int64_t ops = nb / lanes;
  for (int64_t r = nb % lanes; r; r &= r - 1) ops++; /* the tail in vectors of lanes/2, ..., 1 */
  return ops;
}
static double host_cost(const kl_perf_config *pc, int64_t g, int64_t m, int64_t n, int64_t k, int elem_bytes) {
  int64_t MB = pc->m_per_block, NB = pc->n_per_block, KB = pc->k_per_block, lanes = elem_bytes > 4 ? 8 : 16;
  double wgs = (double)kl_perf_config_grid_size(pc, g, m, n), rounds = (double)(int64_t)((wgs + 7) / 8);
  double nkb = (double)ceil_div(k, KB);
  double tiles = (double)(ceil_div(MB, 8) * ceil_div(NB, 32));
  double per_k = (double)(MB * host_vec_ops(NB, lanes) * KB) + 42.0 * tiles + 0.5 * (double)(KB * (MB + NB)) + 50.0;
  return rounds * (nkb * per_k + (double)(MB * NB) / 8.0 + 500.0);
}
static bool host_heuristic(const kl_target *t, int64_t g, int64_t m, int64_t n, int64_t k, int elem_bytes,
                           kl_perf_config *out) {
  static const int64_t mn[] = { 256, 128, 64, 32, 16, 8, 4, 2, 1 };
  static const int64_t ks[] = { 256, 128, 64, 32, 16, 8, 4, 2, 1 };
  bool found = false;
  double best = 0;
  for (int a = 0; a < 9; a++)
    for (int b = 0; b < 9; b++)
      for (int c = 0; c < 9; c++) {
        kl_perf_config pc = { mn[a], mn[b], ks[c], mn[a], mn[b], 1, 1 };
        if (!kl_perf_config_validate(&pc, t, elem_bytes, NULL, 0)) continue;
        double cst = host_cost(&pc, g, m, n, k, elem_bytes);
        if (!found || cst < best) {
          best = cst;
          *out = pc;
          found = true;
        }
      }
  return found;
}

bool kl_perf_config_heuristic(const kl_target *t, int64_t g, int64_t m, int64_t n, int64_t k, int elem_bytes,
                              kl_perf_config *out) {
  if (!t || g < 1 || m < 1 || n < 1 || k < 1 || elem_bytes < 1) return false;
  if (t->max_workgroup_size <= 1 && t->arch == KL_ARCH_HOST && host_heuristic(t, g, m, n, k, elem_bytes, out))
    return true;
  static const int64_t host_mn[] = { 64, 32, 16, 8, 4, 2, 1 };
  static const int64_t host_k[] = { 64, 32, 16, 8, 4, 2, 1 };
  static const int64_t gpu_mn[] = { 128, 64, 32, 16, 8, 4, 2, 1 };
  static const int64_t gpu_k[] = { 32, 16, 8, 4, 2, 1 };
  static const int64_t gpu_t[] = { 8, 4, 2, 1 };
  bool host = t->max_workgroup_size <= 1;
  const int64_t *mn = host ? host_mn : gpu_mn, *ks = host ? host_k : gpu_k;
  int nmn = host ? 7 : 8, nks = host ? 7 : 6, nt = host ? 1 : 4;
  int64_t wave = t->wave_size < 1 ? 1 : t->wave_size;
  int64_t min_bs = t->max_workgroup_size < 64 ? 1 : 64;
  if (wave > t->max_workgroup_size) wave = 1;
  bool found = false;
  double best = 0, best_pad = 0;
  int64_t best_bs = 0;
  bool floor = t->arch == KL_ARCH_NVPTX && t->l2_bytes_per_cu_clk > 0;
  for (int a = 0; a < nmn; a++)
    for (int b = 0; b < nmn; b++)
      for (int c = 0; c < nks; c++)
        for (int d = 0; d < nt; d++)
          for (int e = 0; e < nt; e++) {
            kl_perf_config pc = { mn[a], mn[b], ks[c], host ? mn[a] : gpu_t[d], host ? mn[b] : gpu_t[e], 1, 1 };
            if (pc.m_per_thread > pc.m_per_block || pc.n_per_thread > pc.n_per_block) continue;
            int64_t bs = kl_perf_config_block_size(&pc);
            if (!host && (bs < min_bs || bs > 256 || bs % wave)) continue;
            if (!kl_perf_config_validate(&pc, t, elem_bytes, NULL, 0)) continue;
            double cst = cost(&pc, t, g, m, n, k, elem_bytes);
            /* the latency floor (NVIDIA with an L2 rate) makes small configs cost the same:
             * within 2%, the least padded volume wins, then more threads */
            double pad = (double)(ceil_div(m, pc.m_per_block) * pc.m_per_block) *
                (double)(ceil_div(n, pc.n_per_block) * pc.n_per_block);
            bool better = !found || cst < best;
            if (floor && found)
              better = cst < best * 0.98 ||
                  (cst <= best * 1.02 && (pad < best_pad || (pad == best_pad && bs > best_bs && cst <= best)));
            if (better) {
              best = cst;
              best_pad = pad;
              best_bs = bs;
              *out = pc;
              found = true;
            }
          }
  if (!found) { /* a target with tiny limits: the 1x1x1 single-thread config */
    kl_perf_config pc = { 1, 1, 1, 1, 1, 1, 1 };
    if (!kl_perf_config_validate(&pc, t, elem_bytes, NULL, 0)) return false;
    *out = pc;
  }
  return true;
}

static const char *func_target(kl_op *op) {
  for (kl_op *p = op; p; p = kl_op_parent_op(p)) {
    if (!strcmp(p->name, "func.func") || !strcmp(p->name, "builtin.module")) {
      const char *s = kl_op_attr_string(p, "target");
      if (s) return s;
    }
  }
  return NULL;
}

const kl_target *kl_perf_resolve_target(kl_op *op, const char *option, char *err, size_t errlen) {
  const char *name = option && *option ? option : func_target(op);
  if (!name) name = "host";
  const kl_target *t = kl_target_lookup(name);
  if (!t) {
    kl_sb sb = { 0 };
    for (int i = 0; i < kl_target_count(); i++) kl_sb_printf(&sb, "%s%s", i ? ", " : "", kl_target_at(i)->name);
    kl_perf_errf(err, errlen, "unknown target \"%s\" (known: %s)", name, kl_sb_str(&sb));
    kl_sb_free(&sb);
  }
  return t;
}

const char *kl_accel_kind_name(kl_accel a) {
  switch (a) {
    case KL_ACCEL_MFMA: return "mfma";
    case KL_ACCEL_WMMA: return "wmma";
    case KL_ACCEL_MMA_SYNC: return "mma_sync";
    case KL_ACCEL_WGMMA: return "wgmma";
    default: return "none";
  }
}

const kl_type *kl_gemm_acc_type(kl_ctx *ctx, const kl_type *in) {
  switch (in->kind) {
    case KL_TY_F64: return kl_type_f64(ctx);
    case KL_TY_F16:
    case KL_TY_BF16:
    case KL_TY_F8E4M3FN: /* fp8 GEMMs accumulate in f32 (passes/fp8_compute.c) */
    case KL_TY_F8E5M2:
    case KL_TY_F8E4M3FNUZ:
    case KL_TY_F8E5M2FNUZ:
    case KL_TY_F32: return kl_type_f32(ctx);
    case KL_TY_I64: return kl_type_i64(ctx);
    default: return kl_type_i32(ctx);
  }
}

/* ---- view builder chain ---- */
static void vb_step(kl_vb *b, kl_view *nv) {
  if (!nv) {
    b->bad = true;
    return;
  }
  kl_view_free(b->v);
  b->v = nv;
}
void kl_vb_identity(kl_vb *b, int rank, const int64_t *shape, const char *const *names) {
  memset(b, 0, sizeof *b);
  vb_step(b, kl_view_identity(rank, shape, names, &b->err));
}
void kl_vb_unmerge(kl_vb *b, const char *dim, int n, const char *const *names, const int64_t *sizes) {
  if (!b->bad) vb_step(b, kl_view_unmerge(b->v, dim, n, names, sizes, &b->err));
}
void kl_vb_merge(kl_vb *b, const char *name, int n, const char *const *from) {
  if (!b->bad) vb_step(b, kl_view_merge(b->v, name, n, from, &b->err));
}
void kl_vb_add_dim(kl_vb *b, const char *name, int64_t size) {
  if (!b->bad) vb_step(b, kl_view_add_dim(b->v, name, size, kl_view_rank(b->v), &b->err));
}
void kl_vb_pad(kl_vb *b, int n, const char *const *names, const int64_t *lr) {
  if (!b->bad) vb_step(b, kl_view_pad(b->v, n, names, lr, &b->err));
}
void kl_vb_order(kl_vb *b, int n, const char *const *names) {
  if (!b->bad) vb_step(b, kl_view_passthrough(b->v, n, names, names, &b->err));
}
kl_view *kl_vb_finish(kl_vb *b, char *err, size_t errlen) {
  if (b->bad || !b->v) {
    kl_perf_errf(err, errlen, "view construction failed: %s", b->err.msg[0] ? b->err.msg : "unknown error");
    kl_view_free(b->v);
    b->v = NULL;
    return NULL;
  }
  kl_view *s = kl_view_simplify(b->v);
  kl_view_free(b->v);
  b->v = NULL;
  return s;
}

kl_view *kl_tile_compose_to_buffer(const kl_view *top, kl_value *v, kl_value **under, char *err, size_t errlen) {
  kl_op *chain[64];
  int n = 0;
  kl_value *u = kl_rock_underlying(v, chain, &n, 64);
  if (n > 64) {
    kl_perf_errf(err, errlen, "transform chain too long (%d)", n);
    return NULL;
  }
  kl_view *cur = kl_view_clone(top);
  for (int i = 0; i < n && cur; i++) {
    const kl_view *tv = kl_attr_view(kl_op_attr(chain[i], "view"));
    if (!tv) {
      kl_perf_errf(err, errlen, "rock.transform without a #view attribute");
      kl_view_free(cur);
      return NULL;
    }
    kl_view_err verr = { 0 };
    kl_view *nv = kl_view_compose(cur, tv, &verr);
    kl_view_free(cur);
    cur = nv;
    if (!cur) kl_perf_errf(err, errlen, "cannot compose views: %s", verr.msg);
  }
  if (under) *under = u;
  return cur;
}

int64_t kl_tile_vector_len(const kl_view *top, kl_value *v, int dim) {
  kl_value *u = NULL;
  kl_view *full = kl_tile_compose_to_buffer(top, v, &u, NULL, 0);
  if (!full) return 1;
  const kl_type *bt = u->type;
  int64_t r = 1;
  if (bt->kind == KL_TY_BUFFER && kl_view_lower_rank(full) == bt->rank)
    r = kl_view_max_vectorization(full, dim, bt->strides, kl_type_bits(bt->elem));
  kl_view_free(full);
  return r < 1 ? 1 : r;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

int64_t kl_tile_warp_sectors(const kl_view *top, kl_value *v, int64_t bid, int warp, int64_t vec, int sector) {
  int db = kl_view_dim(top, "bid"), dt = kl_view_dim(top, "tid"), di = kl_view_dim(top, "iter");
  int rank = kl_view_rank(top);
  if (db < 0 || dt < 0 || di < 0 || warp < 1 || vec < 1 || sector < 1 || rank > KL_VIEW_MAX_DIMS) return -1;
  kl_value *u = NULL;
  kl_view *full = kl_tile_compose_to_buffer(top, v, &u, NULL, 0);
  if (!full) return -1;
  const kl_type *bt = u->type;
  if (bt->kind != KL_TY_BUFFER || kl_view_lower_rank(full) != bt->rank) {
    kl_view_free(full);
    return -1;
  }
  int64_t eb = (kl_type_bits(bt->elem) + 7) / 8, n = kl_view_size(top, di);
  int64_t lanes = warp < kl_view_size(top, dt) ? warp : kl_view_size(top, dt);
  if (bid >= kl_view_size(top, db)) bid = 0;
  if (vec > n) vec = n;
  int64_t *seg = malloc((size_t)(lanes * vec) * sizeof *seg), total = 0;
  if (!seg) {
    kl_view_free(full);
    return -1;
  }
  int64_t up[KL_VIEW_MAX_DIMS] = { 0 };
  up[db] = bid;
  for (int64_t j = 0; j < n; j += vec) {
    int ns = 0;
    for (int64_t l = 0; l < lanes; l++)
      for (int64_t e = j; e < j + vec && e < n; e++) {
        up[dt] = l;
        up[di] = e;
        bool ok = true;
        int64_t a = kl_view_eval_addr(full, up, bt->strides, &ok);
        if (ok) seg[ns++] = a * eb / sector;
      }
    qsort(seg, (size_t)ns, sizeof *seg, cmp_i64);
    for (int i = 0; i < ns; i++)
      if (i == 0 || seg[i] != seg[i - 1]) total++;
  }
  free(seg);
  kl_view_free(full);
  return total;
}

kl_value *kl_tile_transform(kl_rewriter *rw, kl_loc loc, kl_value *src, const kl_view *view) {
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  int64_t shape[KL_VIEW_MAX_DIMS];
  int rank = kl_view_rank(view);
  for (int i = 0; i < rank; i++) shape[i] = kl_view_size(view, i);
  const kl_type *t = kl_type_buffer(ctx, src->type->elem, rank, shape, NULL, src->type->space);
  kl_named_attr a = { "view", kl_attr_from_view(ctx, view) };
  kl_op *op = kl_rewriter_create(rw, "rock.transform", loc, 1, &src, 1, &t, 1, &a, 0);
  return kl_op_result(op, 0);
}

kl_value *kl_tile_index(kl_rewriter *rw, kl_loc loc, int64_t v) {
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  const kl_type *it = kl_type_index(ctx);
  kl_op *c = kl_rewriter_insert(rw, kl_build_constant(ctx, loc, kl_attr_int_typed(ctx, v, it), it));
  return kl_op_result(c, 0);
}

kl_op *kl_tile_func_of(kl_op *op) {
  for (kl_op *p = kl_op_parent_op(op); p; p = kl_op_parent_op(p))
    if (!strcmp(p->name, "func.func")) return p;
  return NULL;
}
