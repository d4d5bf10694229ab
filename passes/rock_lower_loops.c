/* rock_lower_loops.c — the `rock-lower-loops` pass: every higher-level rock op of a
 * kernel func becomes loops (scf.for / scf.if, arith index math) over rock.load /
 * rock.store on the underlying buffers (kernel arguments, rock.alloc lds / private).
 *
 *   rock.fill(%buf) {value}                  a loop over buf's elements
 *   rock.threadwise_read_into(%src, %dst, e...) {view[, vector_len]}
 *       for iter step V: dst[iter..] = valid ? src[view(e, iter)..] : 0
 *       (with ldmatrix = N: rock.ldmatrix where proven to read the same elements,
 *       lower_loops_ldmatrix.c)
 *   rock.threadwise_write_all(%src, %dst, e...) {view[, store = "set"]}
 *       for iter step V: if valid: dst[view(e, iter)..] = convert(src[iter..])
 *       (store "atomic_add" / "atomic_max" / "atomic_min": rock.atomic_rmw, scaled by
 *       store_scale; pre-reduced first where dst's view ignores tile digits:
 *       lower_loops_atomic.c; with stmatrix = N: rock.stmatrix where proven to write
 *       the same elements, lower_loops_ldmatrix.c)
 *   rock.threadwise_copy_async(%src, %lds, e...) {view, dst_view[, vector_len]}
 *       for iter step V: rock.async_copy(src[view(e, iter)..] -> lds[dst_view(e, iter)..],
 *       valid) where V elements are 4, 8 or 16 bytes, else a load and a store
 *   rock.threadwise_gemm(%a [K,M], %b [K,N], %c [M,N] or [M*N])
 *       for m, n: c[m,n] += sum_k ext(a[k,m]) * ext(b[k,n])   (ext to c's type)
 *   rock.elementwise with a private / lds output: a loop over the tile, the body cloned
 *       per point with its block arguments mapped to the loaded values; a point is a
 *       vector of V lanes (the longest every operand's view allows, at most 16, dividing
 *       the tile) when the body has a lane-wise vector form, so an input-fusion prologue
 *       converts whole vectors (fp8 pairs: passes/lower_fp8.h)
 *   whole-op kernels (rock.elementwise with a global output, rock.reduce, rock.softmax):
 *       see lower_loops_kernels.c (grid decomposition, block_size / grid_size).
 * Views: the op's own view is composed with the views of the operand's rock.transform
 * chain and emitted with kl_view_emit (constants fold); validity checks appear only
 * where a view can produce invalid coordinates: loads clamp the coordinates to 0 and
 * select 0 (branch-free), stores are wrapped in scf.if; on AMDGPU a read_into from a
 * global buffer stores 0 and then loads under scf.if instead (no select consumes the
 * load where it is issued, so the pipelined K loop's loads stay in flight across the
 * MFMAs and the back-edge; amd_suite_spec checks the s_waitcnt). V is the vector length: the
 * largest length kl_view_max_vectorization proves for both sides (capped by the op's
 * vector_len attribute when present). Loops with constant trip counts up to the
 * `unroll` option are emitted unrolled (default by target: 256 on GPUs, so per-thread
 * tiles stay in registers; 4 on the host, where LLVM vectorizes the real inner loops).
 * Afterwards dead rock.transform ops and unused rock.alloc ops are erased, and any
 * rock op that is not loop level (or a global rock.alloc still in use) is an error
 * naming the op and its location. Only kernel funcs (the `kernel` attribute) are
 * lowered.
 * Host kernels (target host, block_size 1) first go through lower_loops_host.c: the
 * blockwise K loop becomes a register-blocked micro-kernel and the global -> private ->
 * LDS copies become direct vectorized copies (with prefetches of the next K tile);
 * options host-gemm, host-copies, host-prefetch turn these off, host-simd / host-tile
 * pin the SIMD model and the micro-tile (tests; default: the host CPU). Whatever they
 * do not match is lowered by the generic patterns here. */
#include "passes/lower_loops.h"
#include "passes/rock_wgmma.h"
#include "passes/rock_tma.h"
#include "passes/lower_loops_reduce.h"
#include "passes/perf_config.h"
#include "core/dialect_builtin.h"
#include "core/dialect_rock.h"
#include "core/pass.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* lower_loops_kernels.c */
bool kl__ll_lower_whole_op(kl_op *op, kl_rewriter *rw, int64_t unroll);
bool kl__ll_is_whole_op(kl_op *op);
/* lower_loops_atomic.c */
int kl__ll_lower_atomic_write(kl_op *op, kl_rewriter *rw, int64_t unroll);
/* lower_loops_ldmatrix.c */
int kl__ll_lower_ldmatrix_read(kl_op *op, kl_rewriter *rw, int64_t unroll);
int kl__ll_lower_stmatrix_write(kl_op *op, kl_rewriter *rw, int64_t unroll);

typedef struct {
  int64_t unroll_opt, unroll;
  kl_ll_host_opts host;
  bool branch_loads; /* masked-load-branch: read_into's bounds-masked loads behind scf.if on every target */
} opts;


static bool in_kernel(kl_op *op) { return kl_is_kernel(kl_ll_func_of(op)); }

/* whether op's kernel is compiled for AMDGPU (kl_perf_resolve_target) */
static bool amdgpu_op(kl_op *op) {
  const kl_target *t = kl_perf_resolve_target(op, NULL, NULL, 0);
  return t && t->arch == KL_ARCH_AMDGPU;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t attr_vlen(kl_op *op) {
  int64_t v;
  return kl_op_attr_i64(op, "vector_len", &v) && v >= 1 ? v : INT64_MAX;
}

/* ---- rock.fill ---- */
typedef struct {
  kl_value *buf;
  const kl_view *v;
  kl_value *val;
  int64_t vlen;
} fill_st;
static void fill_body(kl_ll *L, kl_value *iv, kl_value **carry, void *ud) {
  fill_st *s = ud;
  kl_ll_store_view(L, s->val, s->buf, s->v, &iv);
}
static bool lower_fill(const kl_pattern *pat, kl_op *op, kl_rewriter *rw) {
  const opts *o = pat->user;
  if (!in_kernel(op)) return kl_rewriter_notify_no_match(rw, "not in a kernel func");
  char err[512];
  const kl_attr *a = kl_op_attr(op, "value");
  double val = 0;
  if (a && (a->kind == KL_AT_FLOAT))
    val = a->f;
  else if (a && (a->kind == KL_AT_INT || a->kind == KL_AT_BOOL))
    val = (double)a->i;
  else if (a)
    return kl_ll_fail(rw, op, "'value' must be a number, got %s", a->text);
  kl_ll L;
  kl_op *ch[1];
  int nc;
  kl_value *under = kl_rock_underlying(op->opnds[0].value, ch, &nc, 0);
  if (op->opnds[0].value->type->kind == KL_TY_BUFFER && op->opnds[0].value->type->rank == 0 &&
      under->type->kind == KL_TY_BUFFER &&
      under->type->rank == 0) { /* a scalar (reduce of an empty tensor to rank 0) */
    kl_ll_init(&L, rw, op->loc, o->unroll);
    kl_ll_store(&L, kl_ll_const(&L, under->type->elem, val), under, NULL, NULL);
    kl_rewriter_erase_op(rw, op);
    return true;
  }
  kl_view *v = kl_ll_flat_access(op->opnds[0].value, &under, err, sizeof err);
  if (!v) return kl_ll_fail(rw, op, "%s", err);
  kl_ll_init(&L, rw, op->loc, o->unroll);
  int64_t n = kl_view_size(v, 0);
  int64_t vl = kl_ll_vector_len(v, under, 0);
  const kl_type *et = under->type->elem;
  fill_st s = { under, v, kl_ll_const(&L, vl > 1 ? kl_type_vector(L.ctx, et, (int)vl) : et, val), vl };
  kl_ll_for(&L, kl_ll_idx(&L, 0), kl_ll_idx(&L, n), vl, 0, NULL, fill_body, &s);
  kl_view_free(v);
  kl_rewriter_erase_op(rw, op);
  return true;
}

/* ---- threadwise_read_into / threadwise_write_all ---- */
typedef struct {
  kl_value *gbuf, *pbuf; /* the viewed ("global") side and the flat ("private") side */
  const kl_view *gv, *pv;
  kl_value *extra[KL_VIEW_MAX_DIMS];
  int nextra;
  int64_t vlen;
  bool read;    /* read_into: g -> p; write_all: p -> g */
  bool branch;  /* read_into on AMDGPU: bounds-masked loads behind a branch (see copy_body) */
  double scale; /* write_all: store_scale (the atomic forms of a GEMM + reduce_mean), 1 else */
  /* AMDGPU copies between registers and a flat LDS buffer indexed by the thread id and
   * iter, unrolled (lds_index): the iterations whose LDS index is an earlier one's plus a
   * constant for every thread reuse that index (LLVM folds the constant into the ds
   * instruction's offset and merges neighbours: the xor tiles' transposed 2-byte K pairs
   * into one 4-byte store, which it could not prove adjacent through the XOR) */
  bool lds_off;
  int64_t nthreads;
  struct {
    int64_t i;
    kl_value *idx;
  } base[32];
  int nbase;
} copy_st;
/* The flat LDS index of iteration i (see copy_st.lds_off): an earlier base's index plus
 * the constant their addresses differ by for every thread 0 .. nthreads - 1 (all valid),
 * else a new base (NULL where the view may be out of bounds: the caller's general path). */
static kl_value *lds_index(kl_ll *L, copy_st *s, kl_value *const *up, int64_t i) {
  const int64_t *st = s->gbuf->type->strides;
  for (int b = 0; b < s->nbase; b++) {
    int64_t c = 0;
    bool same = true;
    for (int64_t t = 0; t < s->nthreads && same; t++) {
      int64_t u1[2] = { t, i }, u0[2] = { t, s->base[b].i };
      bool v1, v0;
      int64_t a1 = kl_view_eval_addr(s->gv, u1, st, &v1), a0 = kl_view_eval_addr(s->gv, u0, st, &v0);
      if (!v1 || !v0) return NULL;
      if (t == 0) c = a1 - a0;
      same = a1 - a0 == c;
    }
    if (same) return kl_emit_add(&L->e, s->base[b].idx, kl_emit_index(&L->e, c));
  }
  kl_value *lower[KL_VIEW_MAX_DIMS], *valid = NULL;
  int64_t cv;
  kl_view_emit(&L->e, s->gv, up, lower, &valid);
  if (valid && !(kl_emit_const_of(valid, &cv) && cv)) return NULL;
  if (s->nbase < 32) s->base[s->nbase].i = i, s->base[s->nbase++].idx = lower[0];
  return lower[0];
}
static void copy_body(kl_ll *L, kl_value *iv, kl_value **carry, void *ud) {
  copy_st *s = ud;
  kl_value *up[KL_VIEW_MAX_DIMS];
  for (int i = 0; i < s->nextra; i++) up[i] = s->extra[i];
  up[s->nextra] = iv;
  int64_t ic;
  kl_value *li = s->lds_off && kl_emit_const_of(iv, &ic) ? lds_index(L, s, up, ic) : NULL;
  if (li && s->read) {
    kl_value *x = kl_ll_convert(L, kl_ll_load(L, s->gbuf, &li, NULL, s->vlen), s->pbuf->type->elem);
    kl_ll_store_view(L, x, s->pbuf, s->pv, &iv);
    return;
  }
  if (li) {
    kl_value *x = kl_ll_load_view(L, s->pbuf, s->pv, &iv, s->vlen);
    x = kl_ll_convert(L, x, s->gbuf->type->elem);
    if (s->scale != 1.0) x = kl_ll_op2(L, "arith.mulf", x, kl_ll_const(L, x->type, s->scale), x->type);
    kl_ll_store(L, x, s->gbuf, &li, NULL);
    return;
  }
  if (s->read && s->branch) {
    /* AMDGPU: the register copy gets 0, then the load only where the view is in bounds.
     * The select of kl_ll_load (select(valid, load, 0)) consumes the loaded value where it
     * is loaded: in the software-pipelined K loop LLVM then waits (s_waitcnt vmcnt(0))
     * for the next tile's loads in the middle of this step's MFMAs. With the branch the
     * loaded registers are read first by the LDS stores of the next step. */
    kl_value *lower[KL_VIEW_MAX_DIMS], *valid = NULL;
    int64_t cv;
    kl_view_emit(&L->e, s->gv, up, lower, &valid);
    if (valid && !kl_emit_const_of(valid, &cv)) {
      const kl_type *pe = s->pbuf->type->elem;
      const kl_type *zt = s->vlen > 1 ? kl_type_vector(L->ctx, pe, (int)s->vlen) : pe;
      kl_ll_store_view(L, kl_ll_const(L, zt, 0), s->pbuf, s->pv, &iv);
      kl_op *ifop = kl_ll_if_begin(L, valid);
      kl_value *x = kl_ll_convert(L, kl_ll_load(L, s->gbuf, lower, NULL, s->vlen), pe);
      kl_ll_store_view(L, x, s->pbuf, s->pv, &iv);
      kl_ll_if_end(L, ifop);
    } else {
      kl_value *x = kl_ll_convert(L, kl_ll_load(L, s->gbuf, lower, valid, s->vlen), s->pbuf->type->elem);
      kl_ll_store_view(L, x, s->pbuf, s->pv, &iv);
    }
  } else if (s->read) {
    kl_value *x = kl_ll_load_view(L, s->gbuf, s->gv, up, s->vlen);
    x = kl_ll_convert(L, x, s->pbuf->type->elem);
    kl_ll_store_view(L, x, s->pbuf, s->pv, &iv);
  } else {
    kl_value *x = kl_ll_load_view(L, s->pbuf, s->pv, &iv, s->vlen);
    x = kl_ll_convert(L, x, s->gbuf->type->elem);
    if (s->scale != 1.0) x = kl_ll_op2(L, "arith.mulf", x, kl_ll_const(L, x->type, s->scale), x->type);
    kl_ll_store_view(L, x, s->gbuf, s->gv, up);
  }
}
/* Whether the LDS addresses of iteration j are those of iteration i plus d for every
 * thread (all valid), and (al > 1) those of i a multiple of al. */
static bool lds_follows(const copy_st *s, int64_t i, int64_t j, int64_t d, int64_t al) {
  const int64_t *st = s->gbuf->type->strides;
  for (int64_t t = 0; t < s->nthreads; t++) {
    int64_t u1[2] = { t, j }, u0[2] = { t, i };
    bool v1, v0;
    int64_t a1 = kl_view_eval_addr(s->gv, u1, st, &v1), a0 = kl_view_eval_addr(s->gv, u0, st, &v0);
    if (!v1 || !v0 || a1 != a0 + d || (al > 1 && a0 % al)) return false;
  }
  return true;
}
/* The unrolled AMDGPU register -> LDS copy (copy_st.lds_off, writes): iterations whose LDS
 * vectors continue each other for every thread (a transposed operand's K pair: two
 * 2-byte elements of two iterations) are stored as one vector of up to 16 bytes, aligned
 * to its size (checked for every thread), joined with vector.shuffle; the others as
 * copy_body. */
static void lds_write_runs(kl_ll *L, copy_st *s, int64_t n) {
  int64_t cnt = n / s->vlen, eb = (kl_type_bits(s->gbuf->type->elem) + 7) / 8;
  bool *done = calloc((size_t)cnt, 1);
  for (int64_t a = 0; a < cnt; a++) {
    if (done[a]) continue;
    int64_t idx[8] = { a }, r = 1;
    /* grow the run to 2, 4, 8 pieces while the next piece exists and the bytes fit 16 */
    while (2 * r * s->vlen * eb <= 16 && 2 * r <= 8) {
      int64_t got = r;
      for (int64_t b = a + 1; b < cnt && got < 2 * r; b++)
        if (!done[b] && lds_follows(s, a * s->vlen, b * s->vlen, got * s->vlen, 2 * r * s->vlen)) {
          bool dup = false;
          for (int64_t q = 0; q < got; q++) dup |= idx[q] == b;
          if (!dup) idx[got++] = b, b = a; /* restart: the next piece may come earlier */
        }
      if (got < 2 * r) break;
      r *= 2;
    }
    if (r == 1) {
      done[a] = true;
      copy_body(L, kl_ll_idx(L, a * s->vlen), NULL, s);
      continue;
    }
    kl_value *up[2] = { s->extra[0], kl_ll_idx(L, a * s->vlen) };
    kl_value *li = lds_index(L, s, up, a * s->vlen);
    if (!li) {
      done[a] = true;
      copy_body(L, kl_ll_idx(L, a * s->vlen), NULL, s);
      continue;
    }
    kl_value *pc[8];
    for (int64_t q = 0; q < r; q++) {
      done[idx[q]] = true;
      kl_value *iv = kl_ll_idx(L, idx[q] * s->vlen);
      kl_value *x = kl_ll_convert(L, kl_ll_load_view(L, s->pbuf, s->pv, &iv, s->vlen), s->gbuf->type->elem);
      pc[q] = s->vlen > 1 ? x : kl_ll_op1(L, "vector.broadcast", x, kl_type_vector(L->ctx, x->type, 1));
    }
    for (int64_t w = r, len = s->vlen; w > 1; w /= 2, len *= 2)
      for (int64_t q = 0; q < w / 2; q++) {
        int64_t mask[16];
        for (int64_t e = 0; e < 2 * len; e++) mask[e] = e;
        kl_value *o[2] = { pc[2 * q], pc[2 * q + 1] };
        kl_named_attr at = { "mask", kl_attr_i64_array(L->ctx, (int)(2 * len), mask) };
        const kl_type *rt = kl_type_vector(L->ctx, s->gbuf->type->elem, (int)(2 * len));
        pc[q] = kl_op_result(kl_rewriter_create(L->e.rw, "vector.shuffle", L->e.loc, 2, o, 1, &rt, 1, &at, 0), 0);
      }
    kl_ll_store(L, pc[0], s->gbuf, &li, NULL);
  }
  free(done);
}
static bool lower_copy(const kl_pattern *pat, kl_op *op, kl_rewriter *rw) {
  const opts *o = pat->user;
  if (!in_kernel(op)) return kl_rewriter_notify_no_match(rw, "not in a kernel func");
  bool read = !strcmp(op->name, "rock.threadwise_read_into");
  if (!read) {
    const char *store = kl_op_attr_string(op, "store");
    if (store && strcmp(store, "set") && strcmp(store, "atomic_add") && strcmp(store, "atomic_max") &&
        strcmp(store, "atomic_min"))
      return kl_ll_fail(rw, op,
                        "store method '%s' is not supported (\"set\", \"atomic_add\", \"atomic_max\" or "
                        "\"atomic_min\")",
                        store);
    int pre = kl__ll_lower_atomic_write(op, rw, o->unroll); /* a tile pre-reduced before its atomics */
    if (pre) return pre > 0;
    int sm = kl__ll_lower_stmatrix_write(op, rw, o->unroll); /* the swizzle's LDS store: rock.stmatrix */
    if (sm) return sm > 0;
  } else {
    int lm = kl__ll_lower_ldmatrix_read(op, rw, o->unroll); /* NVIDIA fragment reads: rock.ldmatrix */
    if (lm) return lm > 0;
  }
  const kl_view *w = kl_ll_op_view(op);
  if (!w) return kl_ll_fail(rw, op, "needs a #view<...> attribute 'view'");
  int nextra = op->nopnds - 2;
  if (kl_view_rank(w) != nextra + 1)
    return kl_ll_fail(rw, op, "the view has %d upper dims, expected %d (the extra indices and iter)", kl_view_rank(w),
                      nextra + 1);
  for (int i = 0; i < nextra; i++)
    if (op->opnds[2 + i].value->type->kind != KL_TY_INDEX)
      return kl_ll_fail(rw, op, "extra index %d is not an index", i);
  kl_value *gval = op->opnds[read ? 0 : 1].value, *pval = op->opnds[read ? 1 : 0].value;
  char err[512];
  kl_value *gb, *pb;
  kl_view *gv = kl_ll_access_view(w, gval, &gb, err, sizeof err);
  if (!gv) return kl_ll_fail(rw, op, "%s operand: %s", read ? "source" : "destination", err);
  kl_view *pv = kl_ll_flat_access(pval, &pb, err, sizeof err);
  if (!pv) {
    kl_view_free(gv);
    return kl_ll_fail(rw, op, "%s operand: %s", read ? "destination" : "source", err);
  }
  int64_t n = kl_view_size(w, nextra);
  if (kl_view_size(pv, 0) != n) {
    kl_view_free(gv);
    kl_view_free(pv);
    return kl_ll_fail(rw, op, "the register tile has %lld elements but the view iterates over %lld",
                      (long long)kl_view_size(pv, 0), (long long)n);
  }
  int64_t vl = min64(kl_ll_vector_len(gv, gb, nextra), kl_ll_vector_len(pv, pb, 0));
  vl = min64(vl, attr_vlen(op));
  while (vl > 1 && n % vl) vl /= 2;
  const kl_attr *sc = read ? NULL : kl_op_attr(op, "store_scale");
  copy_st s = { .gbuf = gb,
                .pbuf = pb,
                .gv = gv,
                .pv = pv,
                .nextra = nextra,
                .vlen = vl,
                .read = read,
                .branch = read && gb->type->space == KL_SPACE_GLOBAL && (o->branch_loads || amdgpu_op(op)),
                .scale = sc && sc->kind == KL_AT_FLOAT && kl_type_is_float(gb->type->elem) ? sc->f : 1.0 };
  for (int i = 0; i < nextra; i++) s.extra[i] = op->opnds[2 + i].value;
  kl_ll L;
  kl_ll_init(&L, rw, op->loc, o->unroll);
  const char *store = read ? NULL : kl_op_attr_string(op, "store");
  /* lds_index: AMDGPU, a flat LDS buffer, (thread id, iter), unrolled, plain stores */
  int64_t trips = vl > 0 ? (n + vl - 1) / vl : 0;
  s.lds_off = gb->type->space == KL_SPACE_LDS && gb->type->rank == 1 && nextra == 1 &&
      (trips <= L.unroll || trips == 1) && (!store || !strcmp(store, "set")) && amdgpu_op(op);
  s.nthreads = s.lds_off ? kl_view_size(w, 0) : 0;
  if (s.lds_off && !read && s.scale == 1.0 && n % vl == 0) {
    lds_write_runs(&L, &s, n);
    kl_view_free(gv);
    kl_view_free(pv);
    kl_rewriter_erase_op(rw, op);
    return true;
  }
  if (store && !strncmp(store, "atomic_", 7)) L.rmw = store + 7; /* the global side's stores only: add, max, min */
  kl_ll_for(&L, kl_ll_idx(&L, 0), kl_ll_idx(&L, n), vl, 0, NULL, copy_body, &s);
  kl_view_free(gv);
  kl_view_free(pv);
  kl_rewriter_erase_op(rw, op);
  return true;
}

/* ---- threadwise_copy_async ---- */
typedef struct {
  kl_value *gbuf, *dbuf;
  const kl_view *gv, *dv;
  kl_value *extra[KL_VIEW_MAX_DIMS];
  int nextra;
  int64_t vlen;
  bool async; /* vlen * element bytes is 4, 8 or 16: rock.async_copy; else a plain copy */
} acopy_st;
static void acopy_body(kl_ll *L, kl_value *iv, kl_value **carry, void *ud) {
  acopy_st *s = ud;
  kl_value *up[KL_VIEW_MAX_DIMS];
  for (int i = 0; i < s->nextra; i++) up[i] = s->extra[i];
  up[s->nextra] = iv;
  if (!s->async) {
    kl_ll_store_view(L, kl_ll_load_view(L, s->gbuf, s->gv, up, s->vlen), s->dbuf, s->dv, up);
    return;
  }
  kl_value *g[KL_VIEW_MAX_DIMS], *d[KL_VIEW_MAX_DIMS], *gvalid = NULL, *dvalid = NULL;
  kl_view_emit(&L->e, s->gv, up, g, &gvalid);
  kl_view_emit(&L->e, s->dv, up, d, &dvalid);
  int64_t c;
  if (gvalid && kl_emit_const_of(gvalid, &c) && c) gvalid = NULL;
  kl_op *ifop = NULL;
  if (dvalid && !(kl_emit_const_of(dvalid, &c) && c)) ifop = kl_ll_if_begin(L, dvalid); /* not from the GEMM tiles */
  int gr = s->gbuf->type->rank, dr = s->dbuf->type->rank, n = 0;
  kl_value *o[2 + 2 * KL_MAX_RANK + 1];
  o[n++] = s->gbuf;
  kl_value *zi = gvalid ? kl_ll_idx(L, 0) : NULL;
  for (int i = 0; i < gr; i++) o[n++] = gvalid ? kl_ll_select(L, gvalid, g[i], zi) : g[i]; /* clamped: never read */
  o[n++] = s->dbuf;
  for (int i = 0; i < dr; i++) o[n++] = d[i];
  if (gvalid) o[n++] = gvalid;
  kl_named_attr a = { "len", kl_attr_int(L->ctx, s->vlen) };
  kl_rewriter_create(L->e.rw, "rock.async_copy", L->e.loc, n, o, 0, NULL, 1, &a, 0);
  if (ifop) kl_ll_if_end(L, ifop);
}
/* rock.threadwise_copy_async(%src, %lds, e...) {view, dst_view, vector_len}: for iter step
 * V: lds[dst_view(e, iter)..] = valid ? src[view(e, iter)..] : 0, as rock.async_copy when
 * V elements are 4, 8 or 16 bytes (V: the longest vector both views allow, capped by
 * vector_len), else as a load and a store. */
static bool lower_copy_async(const kl_pattern *pat, kl_op *op, kl_rewriter *rw) {
  const opts *o = pat->user;
  if (!in_kernel(op)) return kl_rewriter_notify_no_match(rw, "not in a kernel func");
  const kl_view *w = kl_ll_op_view(op);
  const kl_attr *da = kl_op_attr(op, "dst_view");
  const kl_view *wd = da ? kl_attr_view(da) : NULL;
  if (!w || !wd) return kl_ll_fail(rw, op, "needs #view<...> attributes 'view' and 'dst_view'");
  int nextra = op->nopnds - 2;
  if (kl_view_rank(w) != nextra + 1 || kl_view_rank(wd) != nextra + 1 ||
      kl_view_size(w, nextra) != kl_view_size(wd, nextra))
    return kl_ll_fail(rw, op, "the views need %d upper dims (the extra indices and iter) of the same iter size",
                      nextra + 1);
  for (int i = 0; i < nextra; i++)
    if (op->opnds[2 + i].value->type->kind != KL_TY_INDEX)
      return kl_ll_fail(rw, op, "extra index %d is not an index", i);
  char err[512];
  kl_value *gb, *db;
  kl_view *gv = kl_ll_access_view(w, op->opnds[0].value, &gb, err, sizeof err);
  if (!gv) return kl_ll_fail(rw, op, "source operand: %s", err);
  kl_view *dv = kl_ll_access_view(wd, op->opnds[1].value, &db, err, sizeof err);
  if (!dv) {
    kl_view_free(gv);
    return kl_ll_fail(rw, op, "destination operand: %s", err);
  }
  if (gb->type->elem != db->type->elem || kl_ll_space(db) != KL_SPACE_LDS) {
    kl_view_free(gv);
    kl_view_free(dv);
    return kl_ll_fail(rw, op, "copies into an LDS buffer of the source's element type, got %s -> %s", gb->type->text,
                      db->type->text);
  }
  int64_t n = kl_view_size(w, nextra);
  int64_t vl = min64(min64(kl_ll_vector_len(gv, gb, nextra), kl_ll_vector_len(dv, db, nextra)), attr_vlen(op));
  while (vl > 1 && n % vl) vl /= 2;
  int64_t bits = kl_type_bits(gb->type->elem), bytes = vl * bits / 8;
  acopy_st s = { .gbuf = gb,
                 .dbuf = db,
                 .gv = gv,
                 .dv = dv,
                 .nextra = nextra,
                 .vlen = vl,
                 .async = bits % 8 == 0 && (bytes == 4 || bytes == 8 || bytes == 16) };
  for (int i = 0; i < nextra; i++) s.extra[i] = op->opnds[2 + i].value;
  kl_ll L;
  kl_ll_init(&L, rw, op->loc, o->unroll);
  kl_ll_for(&L, kl_ll_idx(&L, 0), kl_ll_idx(&L, n), vl, 0, NULL, acopy_body, &s);
  kl_view_free(gv);
  kl_view_free(dv);
  kl_rewriter_erase_op(rw, op);
  return true;
}

/* ---- threadwise_gemm ---- */
typedef struct {
  kl_value *ab, *bb, *cb;
  kl_view *av, *bv, *cv;
  bool cflat;
  int64_t K, M, N;
  const kl_type *acc;
  kl_value *m, *n;
  bool unroll_k, unroll_n, unroll_m;
} gemm_st;
static void gemm_k(kl_ll *L, kl_value *k, kl_value **carry, void *ud) {
  gemm_st *s = ud;
  kl_value *ua[2] = { k, s->m }, *ub[2] = { k, s->n };
  kl_value *x = kl_ll_convert(L, kl_ll_load_view(L, s->ab, s->av, ua, 1), s->acc);
  kl_value *y = kl_ll_convert(L, kl_ll_load_view(L, s->bb, s->bv, ub, 1), s->acc);
  bool f = kl_type_is_float(s->acc);
  kl_value *p = kl_ll_op2(L, f ? "arith.mulf" : "arith.muli", x, y, s->acc);
  carry[0] = kl_ll_op2(L, f ? "arith.addf" : "arith.addi", carry[0], p, s->acc);
}
static void c_upper(kl_ll *L, gemm_st *s, kl_value **up) {
  if (s->cflat)
    up[0] = kl_emit_add(&L->e, kl_emit_muli(&L->e, s->m, s->N), s->n);
  else {
    up[0] = s->m;
    up[1] = s->n;
  }
}
static void gemm_n(kl_ll *L, kl_value *n, kl_value **carry, void *ud) {
  gemm_st *s = ud;
  s->n = n;
  kl_value *up[2];
  c_upper(L, s, up);
  kl_value *acc = kl_ll_load_view(L, s->cb, s->cv, up, 1);
  kl_value *sum = kl_ll_convert(L, acc, s->acc);
  int64_t save = L->unroll;
  L->unroll = s->unroll_k ? INT64_MAX : 0;
  kl_ll_for(L, kl_ll_idx(L, 0), kl_ll_idx(L, s->K), 1, 1, &sum, gemm_k, s);
  L->unroll = save;
  s->n = n;
  c_upper(L, s, up);
  kl_ll_store_view(L, kl_ll_convert(L, sum, s->cb->type->elem), s->cb, s->cv, up);
}
static void gemm_m(kl_ll *L, kl_value *m, kl_value **carry, void *ud) {
  gemm_st *s = ud;
  s->m = m;
  int64_t save = L->unroll;
  L->unroll = s->unroll_n ? INT64_MAX : 0;
  kl_ll_for(L, kl_ll_idx(L, 0), kl_ll_idx(L, s->N), 1, 0, NULL, gemm_n, s);
  L->unroll = save;
}
static bool lower_tgemm(const kl_pattern *pat, kl_op *op, kl_rewriter *rw) {
  const opts *o = pat->user;
  if (!in_kernel(op)) return kl_rewriter_notify_no_match(rw, "not in a kernel func");
  const kl_type *ta = op->opnds[0].value->type, *tb = op->opnds[1].value->type, *tc = op->opnds[2].value->type;
  if (ta->rank != 2 || tb->rank != 2 || ta->shape[0] != tb->shape[0] ||
      !((tc->rank == 2 && tc->shape[0] == ta->shape[1] && tc->shape[1] == tb->shape[1]) ||
        (tc->rank == 1 && tc->shape[0] == ta->shape[1] * tb->shape[1])))
    return kl_ll_fail(rw, op, "operands must be a [K,M], b [K,N], c [M,N] (or [M*N]); got %s, %s, %s", ta->text,
                      tb->text, tc->text);
  gemm_st s = { .K = ta->shape[0], .M = ta->shape[1], .N = tb->shape[1], .cflat = tc->rank == 1, .acc = tc->elem };
  if (kl_type_is_float(ta->elem) != kl_type_is_float(tc->elem) ||
      kl_type_is_float(tb->elem) != kl_type_is_float(tc->elem))
    return kl_ll_fail(rw, op, "mixed float / integer operands (%s, %s -> %s)", ta->elem->text, tb->elem->text,
                      tc->elem->text);
  char err[512];
  s.av = kl_ll_access_view(NULL, op->opnds[0].value, &s.ab, err, sizeof err);
  s.bv = s.av ? kl_ll_access_view(NULL, op->opnds[1].value, &s.bb, err, sizeof err) : NULL;
  s.cv = s.bv ? kl_ll_access_view(NULL, op->opnds[2].value, &s.cb, err, sizeof err) : NULL;
  if (!s.cv) {
    kl_view_free(s.av);
    kl_view_free(s.bv);
    return kl_ll_fail(rw, op, "%s", err);
  }
  int64_t U = o->unroll;
  s.unroll_k = s.K <= U;
  s.unroll_n = s.unroll_k && s.K * s.N <= U;
  s.unroll_m = s.unroll_n && s.K * s.N * s.M <= U;
  kl_ll L;
  kl_ll_init(&L, rw, op->loc, s.unroll_m ? INT64_MAX : 0);
  kl_ll_for(&L, kl_ll_idx(&L, 0), kl_ll_idx(&L, s.M), 1, 0, NULL, gemm_m, &s);
  kl_view_free(s.av);
  kl_view_free(s.bv);
  kl_view_free(s.cv);
  kl_rewriter_erase_op(rw, op);
  return true;
}

/* ---- rock.elementwise on private / lds tiles ---- */
/* Clones the body of a rock.elementwise-like region with its block arguments mapped to
 * args at the insertion point; returns the yielded value. */
kl_value *kl__ll_inline_body(kl_ll *L, kl_region *r, kl_value *const *args) {
  kl_block *b = r->first;
  kl_value_map map = { 0 };
  for (int i = 0; i < b->nargs; i++) kl_value_map_set(&map, b->args[i], args[i]);
  kl_value *res = NULL;
  for (kl_op *x = b->first; x; x = x->next) {
    if (!strcmp(x->name, "rock.yield")) {
      res = kl_value_map_get(&map, x->opnds[0].value);
      break;
    }
    kl_rewriter_insert(L->e.rw, kl_op_clone(x, &map));
  }
  kl_value_map_free(&map);
  return res;
}

typedef struct {
  kl_op *op;
  int n;
  int64_t V; /* lanes per point: the body runs on vector<V> values when V > 1 */
  kl_value *bufs[64];
  kl_view *views[64];
} ew_st;
static void ew_body(kl_ll *L, kl_value *iv, kl_value **carry, void *ud) {
  ew_st *s = ud;
  kl_value *args[64];
  for (int i = 0; i + 1 < s->n; i++) args[i] = kl_ll_load_view(L, s->bufs[i], s->views[i], &iv, s->V);
  kl_value *r = s->V > 1 ? kl__ll_inline_vector_body(L, &s->op->regions[0], args, s->V)
                         : kl__ll_inline_body(L, &s->op->regions[0], args);
  kl_ll_store_view(L, kl_ll_convert(L, r, s->bufs[s->n - 1]->type->elem), s->bufs[s->n - 1], s->views[s->n - 1], &iv);
}
/* Lanes of one point of a tile element-wise op: the longest vector (a power of two, at
 * most EW_TILE_LANES) that every operand's flat view allows and that divides the tile,
 * when the body has a lane-wise vector form; else 1. The conversions of input-fusion
 * prologues then see whole vectors (e.g. fp8 pairs for cvt.rn.f16x2.e4m3x2). */
#define EW_TILE_LANES 16
static int64_t ew_lanes(ew_st *s, int64_t n) {
  if (!kl__ll_body_vectorizes(&s->op->regions[0])) return 1;
  int64_t V = EW_TILE_LANES;
  for (int i = 0; i < s->n; i++) {
    int64_t v = kl_ll_vector_len(s->views[i], s->bufs[i], 0);
    if (v < V) V = v;
  }
  while (V > 1 && (n % V || (V & (V - 1)))) V /= 2;
  return V < 1 ? 1 : V;
}
static bool lower_ew(const kl_pattern *pat, kl_op *op, kl_rewriter *rw) {
  const opts *o = pat->user;
  if (!in_kernel(op)) return kl_rewriter_notify_no_match(rw, "not in a kernel func");
  if (kl__ll_is_whole_op(op)) return kl__ll_lower_whole_op(op, rw, o->unroll);
  if (op->nopnds > 64) return kl_ll_fail(rw, op, "too many operands (%d > 64)", op->nopnds);
  ew_st s = { .op = op, .n = op->nopnds };
  char err[512];
  for (int i = 0; i < s.n; i++) {
    s.views[i] = kl_ll_flat_access(op->opnds[i].value, &s.bufs[i], err, sizeof err);
    if (!s.views[i]) {
      for (int j = 0; j < i; j++) kl_view_free(s.views[j]);
      return kl_ll_fail(rw, op, "operand %d: %s", i, err);
    }
  }
  kl_block *b = op->regions[0].first;
  kl_op *y = b ? b->last : NULL;
  if (!y || strcmp(y->name, "rock.yield") || y->nopnds != 1) {
    for (int j = 0; j < s.n; j++) kl_view_free(s.views[j]);
    return kl_ll_fail(rw, op, "the body must end with rock.yield of one value");
  }
  kl_ll L;
  kl_ll_init(&L, rw, op->loc, o->unroll);
  int64_t n = kl_view_size(s.views[0], 0);
  s.V = ew_lanes(&s, n);
  kl_ll_for(&L, kl_ll_idx(&L, 0), kl_ll_idx(&L, n), s.V, 0, NULL, ew_body, &s);
  for (int j = 0; j < s.n; j++) kl_view_free(s.views[j]);
  kl_rewriter_erase_op(rw, op);
  return true;
}

static bool lower_whole(const kl_pattern *pat, kl_op *op, kl_rewriter *rw) {
  const opts *o = pat->user;
  if (!in_kernel(op)) return kl_rewriter_notify_no_match(rw, "not in a kernel func");
  return kl__ll_lower_whole_op(op, rw, o->unroll);
}

/* ---- the pass ---- */
/* what lower-to-llvm accepts: ops legal at the loop level (kl_opdef.levels) */
static bool loop_level(const kl_op *op) { return kl_op_legal_at(op, KL_LEVEL_LOOP); }

/* Pre-checks of one kernel: at most one whole-op kernel op, and none next to an
 * existing grid decomposition (workgroup / workitem ids of a tiled GEMM). */
static kl_status check_kernel(kl_op *fn) {
  int n;
  kl_op **ops = kl_collect_ops(fn, &n);
  kl_op *whole = NULL, *ids = NULL;
  int nwhole = 0;
  kl_status st = KL_OK;
  for (int i = 0; i < n; i++) {
    if (kl__ll_is_whole_op(ops[i])) {
      if (!whole) whole = ops[i];
      nwhole++;
    }
    if (!strcmp(ops[i]->name, "rock.workgroup_id") || !strcmp(ops[i]->name, "rock.workitem_id")) ids = ops[i];
  }
  if (nwhole > 1)
    st = kl_emit_error(fn->ctx, whole->loc,
                       "rock-lower-loops: kernel @%s has %d whole-op kernel ops (global rock.elementwise / "
                       "rock.reduce / rock.softmax); each needs a kernel of its own",
                       kl_op_attr_string(fn, "sym_name"), nwhole);
  else if (whole && ids)
    st = kl_emit_error(fn->ctx, whole->loc,
                       "rock-lower-loops: '%s' on global buffers in kernel @%s, which already has a grid "
                       "decomposition (it was not fused into the tiled kernel and needs a kernel of its own)",
                       whole->name, kl_op_attr_string(fn, "sym_name"));
  free(ops);
  return st;
}

static kl_status final_check(kl_op *fn) {
  int n;
  kl_op **ops = kl_collect_ops(fn, &n);
  kl_status st = KL_OK;
  for (int i = 0; i < n; i++) {
    kl_op *x = ops[i];
    if (!loop_level(x)) {
      st = kl_emit_error(fn->ctx, x->loc,
                         "rock-lower-loops: cannot lower '%s' (not handled by this pass; run the earlier "
                         "rock passes first)",
                         x->name);
      break;
    }
    if (!strcmp(x->name, "rock.alloc") && x->nresults == 1 && x->results[0].type->kind == KL_TY_BUFFER &&
        x->results[0].type->space == KL_SPACE_GLOBAL) {
      st = kl_emit_error(fn->ctx, x->loc,
                         "rock-lower-loops: 'rock.alloc' of global %s is still used: kernels cannot allocate "
                         "global intermediates (the host plan must provide them)",
                         x->results[0].type->text);
      break;
    }
  }
  free(ops);
  return st;
}

static kl_status run(kl_op *module, const kl_pass_options *po, void *user) {
  opts o = { kl_pass_opt_int(po, "unroll"), 0, { 0 }, false };
  o.host.gemm = kl_pass_opt_bool(po, "host-gemm");
  o.host.copies = kl_pass_opt_bool(po, "host-copies");
  o.host.prefetch = kl_pass_opt_bool(po, "host-prefetch");
  o.branch_loads = kl_pass_opt_bool(po, "masked-load-branch");
  const char *simd = kl_pass_opt_string(po, "host-simd"), *tile = kl_pass_opt_string(po, "host-tile");
  if (simd && strcmp(simd, "auto") &&
      (sscanf(simd, "%dx%d", &o.host.simd_bytes, &o.host.simd_regs) != 2 || o.host.simd_bytes < 4 ||
       o.host.simd_bytes > 256 || o.host.simd_regs < 8))
    return kl_emit_error(module->ctx, module->loc,
                         "rock-lower-loops: host-simd must be \"auto\" or BYTESxREGS "
                         "(e.g. 64x32, bytes 4..256, at least 8 registers), got \"%s\"",
                         simd);
  long long mr = 0, nv = 0;
  if (tile && strcmp(tile, "auto") && (sscanf(tile, "%lldx%lld", &mr, &nv) != 2 || mr < 1 || nv < 1 || mr * nv > 64))
    return kl_emit_error(module->ctx, module->loc,
                         "rock-lower-loops: host-tile must be \"auto\" or MRxNV (rows x "
                         "vectors, at most 64 accumulators), got \"%s\"",
                         tile);
  o.host.mr = mr;
  o.host.nv = nv;
  kl_pattern pats[] = {
    { "rock.fill", 1, "lower-fill", lower_fill, &o },
    { "rock.threadwise_read_into", 1, "lower-threadwise-read-into", lower_copy, &o },
    { "rock.threadwise_write_all", 1, "lower-threadwise-write-all", lower_copy, &o },
    { "rock.threadwise_copy_async", 1, "lower-threadwise-copy-async", lower_copy_async, &o },
    { "rock.threadwise_gemm", 1, "lower-threadwise-gemm", lower_tgemm, &o },
    { "rock.elementwise", 1, "lower-elementwise", lower_ew, &o },
    { "rock.reduce", 1, "lower-reduce", lower_whole, &o },
    { "rock.softmax", 1, "lower-softmax", lower_whole, &o },
    { "rock.wgmma_desc", 1, "lower-wgmma-desc", kl__ll_lower_wgmma_desc, &o }, /* passes/lower_loops_wgmma.c */
    { "rock.tma_load", 1, "lower-tma-dst", kl__ll_lower_tma_dst, &o },         /* passes/lower_loops_wgmma.c */
  };
  enum { NPATS = sizeof pats / sizeof *pats };
  const kl_pattern *ps[NPATS];
  for (int i = 0; i < NPATS; i++) ps[i] = &pats[i];
  kl_block *mb = kl_module_body(module);
  for (kl_op *fn = mb ? mb->first : NULL; fn; fn = fn->next) {
    if (!kl_is_kernel(fn)) continue;
    if (check_kernel(fn) != KL_OK) return KL_ERR;
    /* unroll budget: GPUs unroll per-thread tiles (registers); on the host LLVM's own
     * loop vectorizer does better on real inner loops */
    o.unroll = o.unroll_opt;
    if (o.unroll < 0) {
      char err[256];
      const kl_target *t = kl_ll_target_of(fn, err, sizeof err);
      if (!t) return kl_emit_error(fn->ctx, fn->loc, "rock-lower-loops: %s", err);
      o.unroll = t->arch == KL_ARCH_HOST ? 4 : 256;
    }
    /* host kernels (one thread per workgroup): micro-kernels and fused copies first */
    int64_t bs = 0;
    char terr[256];
    const kl_target *tt = kl_ll_target_of(fn, terr, sizeof terr);
    if (tt && tt->arch == KL_ARCH_HOST && kl_op_attr_i64(fn, "block_size", &bs) && bs == 1) {
      if (o.host.gemm && kl__ll_host_gemms(fn, &o.host) != KL_OK) return KL_ERR;
      if (o.host.copies && kl__ll_host_copies(fn, &o.host) != KL_OK) return KL_ERR;
    }
    if (kl_apply_patterns_walk(fn, ps, NPATS) != KL_OK) return KL_ERR;
    kl_ll_erase_dead(fn, true);
    if (final_check(fn) != KL_OK) return KL_ERR;
  }
  return KL_OK;
}

static const kl_pass_option options[] = {
  { "unroll", KL_OPT_INT, "-1",
    "loops with a constant trip count up to this are emitted unrolled (0: never; -1: by "
    "target, 256 on GPUs, 4 on the host)" },
  { "host-gemm", KL_OPT_BOOL, "true",
    "host (block size 1): register-blocked micro-kernels for the blockwise K loop "
    "(passes/lower_loops_host.c)" },
  { "host-copies", KL_OPT_BOOL, "true", "host (block size 1): fused, vectorized global -> LDS copies" },
  { "host-prefetch", KL_OPT_BOOL, "true", "host: fused copies prefetch the next K iteration's tile (rock.prefetch)" },
  { "masked-load-branch", KL_OPT_BOOL, "false",
    "read_into from global memory: bounds-masked loads behind scf.if (0 stored first) on every target, as on "
    "AMDGPU (tests run the AMDGPU form on the host)" },
  { "host-simd", KL_OPT_STRING, "auto", "host vector model BYTESxREGS (e.g. 64x32 for AVX-512; auto: the host CPU)" },
  { "host-tile", KL_OPT_STRING, "auto",
    "host micro-kernel MRxNV: rows x vectors of accumulators (auto: by the SIMD model)" },
};

void kl__register_rock_lower_loops(kl_ctx *ctx) {
  kl_pass_info info = {
    "rock-lower-loops",
    "threadwise ops, private element-wise tiles and whole-op kernels (element-wise, reduce, softmax) "
    "-> scf loops over rock.load / rock.store with view index arithmetic",
    options,
    sizeof options / sizeof options[0],
    run,
    NULL
  };
  kl_register_pass(ctx, &info);
}
