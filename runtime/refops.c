/* refops.c — reference kernels except conv2d (refops_conv.c); the shape inference is
 * core/infer.c, the scalar semantics core/scalar_ops.c. See refops.h for the contract. */
#include "runtime/refops.h"
#include "runtime/refops_gemm.h"
#include "core/arena.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHP(s, b) kl_shape_format((s), (b), sizeof(b))

/* ---------------------------------------------------------------- output */

static int prep_out(const char *op, const kl_shape *shape, kl_dtype dt, kl_dtype dflt, kl_tensor **out, char *err,
                    size_t errlen) {
  char b1[256], b2[256];
  if (dt != KL_DT_NONE && !kl_dtype_valid(dt)) return kl_errf(err, errlen, "%s: invalid output dtype %d", op, (int)dt);
  if (*out) {
    kl_tensor *o = *out;
    kl_shape os = kl_tensor_shape(o);
    if (!kl_shape_equal(&os, shape))
      return kl_errf(err, errlen, "%s: output has shape %s, expected %s", op, SHP(&os, b1), SHP(shape, b2));
    if (dt != KL_DT_NONE && dt != o->dtype)
      return kl_errf(err, errlen, "%s: output has dtype %s, expected %s", op, kl_dtype_name(o->dtype),
                     kl_dtype_name(dt));
    if (!kl_strides_nonoverlapping(o->rank, o->shape, o->strides))
      return kl_errf(err, errlen, "%s: output strides %s overlap", op,
                     kl_dims_format(o->rank, o->strides, b1, sizeof b1));
    return 0;
  }
  if (dt == KL_DT_NONE) dt = dflt;
  char e2[200];
  kl_tensor *t = kl_tensor_zeros(dt, shape->rank, shape->dim, NULL, e2, sizeof e2);
  if (!t) return kl_errf(err, errlen, "%s: %s", op, e2);
  *out = t;
  return 0;
}

int kl_ref_prepare_out(const char *op, const kl_shape *shape, kl_dtype dt, kl_tensor **out, char *err, size_t errlen) {
  if (!*out && !kl_dtype_valid(dt)) return kl_errf(err, errlen, "%s: no output dtype", op);
  return prep_out(op, shape, dt, dt, out, err, errlen);
}

/* ---------------------------------------------------------------- iteration */

/* Walks an iteration shape in row-major order, keeping one element offset per operand. */
#define MW_MAX 4
typedef struct {
  int rank, n;
  int64_t shape[KL_MAX_RANK], idx[KL_MAX_RANK];
  int64_t off[MW_MAX], st[MW_MAX][KL_MAX_RANK];
} mwalk;

static void mw_init(mwalk *w, const kl_shape *s) {
  memset(w, 0, sizeof *w);
  w->rank = s->rank;
  for (int d = 0; d < s->rank; d++) w->shape[d] = s->dim[d];
}
/* Adds an operand with base offset and strides over the iteration shape; returns its slot. */
static int mw_add(mwalk *w, int64_t off, const int64_t *st) {
  int k = w->n++;
  w->off[k] = off;
  for (int d = 0; d < w->rank; d++) w->st[k][d] = st[d];
  return k;
}
/* An operand broadcast (numpy, right-aligned) to the iteration shape. */
static int mw_add_bcast(mwalk *w, const kl_tensor *t) {
  int64_t st[KL_MAX_RANK];
  int off = w->rank - t->rank;
  for (int d = 0; d < w->rank; d++) {
    int sd = d - off;
    st[d] = (sd < 0 || t->shape[sd] == 1) ? 0 : t->strides[sd];
  }
  return mw_add(w, t->offset, st);
}
static void mw_next(mwalk *w) {
  for (int d = w->rank - 1; d >= 0; d--) {
    for (int k = 0; k < w->n; k++) w->off[k] += w->st[k][d];
    if (++w->idx[d] < w->shape[d]) return;
    for (int k = 0; k < w->n; k++) w->off[k] -= w->st[k][d] * w->shape[d];
    w->idx[d] = 0;
  }
}
static int64_t shape_numel(const int64_t *shape, int rank) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= shape[i];
  return n;
}

static inline void *ptr(const kl_tensor *t, int64_t off) {
  return (char *)t->data + off * (int64_t)kl_dtype_size(t->dtype);
}
static inline double ldf(const kl_tensor *t, int64_t off) { return kl_dtype_load_f64(t->dtype, ptr(t, off)); }
static inline int64_t ldi(const kl_tensor *t, int64_t off) { return kl_dtype_load_i64(t->dtype, ptr(t, off)); }
static inline void stf(kl_tensor *t, int64_t off, double v) { kl_dtype_store_f64(t->dtype, ptr(t, off), v); }
static inline void sti(kl_tensor *t, int64_t off, int64_t v) { kl_dtype_store_i64(t->dtype, ptr(t, off), v); }
/* Copies one element between tensors, converting like kl_ref_convert. */
static inline void copy_elem(kl_tensor *d, int64_t doff, const kl_tensor *s, int64_t soff) {
  if (d->dtype == s->dtype)
    memcpy(ptr(d, doff), ptr(s, soff), kl_dtype_size(d->dtype));
  else if (kl_dtype_is_int(d->dtype) && kl_dtype_is_int(s->dtype))
    sti(d, doff, ldi(s, soff));
  else
    stf(d, doff, ldf(s, soff));
}

/* ---------------------------------------------------------------- element-wise */

int kl_ref_binary(kl_binop op, const kl_tensor *a, const kl_tensor *b, kl_dtype out_dt, kl_tensor **out, char *err,
                  size_t errlen) {
  if (op < 0 || op >= KL_BIN_COUNT) return kl_errf(err, errlen, "binary: unknown op %d", (int)op);
  const char *name = kl_binop_name(op);
  kl_shape sa = kl_tensor_shape(a), sb = kl_tensor_shape(b), so;
  if (kl_infer_broadcast(name, &sa, &sb, &so, err, errlen)) return 1;
  if (prep_out(name, &so, out_dt, a->dtype, out, err, errlen)) return 1;
  kl_tensor *o = *out;
  bool ints = kl_dtype_is_int(a->dtype) && kl_dtype_is_int(b->dtype) && kl_dtype_is_int(o->dtype);
  mwalk w;
  mw_init(&w, &so);
  mw_add(&w, o->offset, o->strides);
  mw_add_bcast(&w, a);
  mw_add_bcast(&w, b);
  int64_t n = kl_shape_numel(&so);
  for (int64_t i = 0; i < n; i++, mw_next(&w)) {
    if (ints)
      sti(o, w.off[0], kl_binop_i64(op, ldi(a, w.off[1]), ldi(b, w.off[2])));
    else
      stf(o, w.off[0], kl_binop_f64(op, ldf(a, w.off[1]), ldf(b, w.off[2])));
  }
  return 0;
}

int kl_ref_unary(kl_unop op, const kl_tensor *x, kl_dtype out_dt, kl_tensor **out, char *err, size_t errlen) {
  if (op < 0 || op >= KL_UN_COUNT) return kl_errf(err, errlen, "unary: unknown op %d", (int)op);
  kl_shape s = kl_tensor_shape(x);
  if (prep_out(kl_unop_name(op), &s, out_dt, x->dtype, out, err, errlen)) return 1;
  kl_tensor *o = *out;
  bool ints = kl_unop_has_int(op) && kl_dtype_is_int(x->dtype) && kl_dtype_is_int(o->dtype);
  mwalk w;
  mw_init(&w, &s);
  mw_add(&w, o->offset, o->strides);
  mw_add(&w, x->offset, x->strides);
  int64_t n = kl_shape_numel(&s);
  for (int64_t i = 0; i < n; i++, mw_next(&w)) {
    if (ints)
      sti(o, w.off[0], kl_unop_i64(op, ldi(x, w.off[1])));
    else
      stf(o, w.off[0], kl_unop_f64(op, ldf(x, w.off[1])));
  }
  return 0;
}

int kl_ref_clip(const kl_tensor *x, double lo, double hi, kl_dtype out_dt, kl_tensor **out, char *err, size_t errlen) {
  if (isnan(lo) || isnan(hi) || lo > hi)
    return kl_errf(err, errlen, "clip: bounds must satisfy lo <= hi, got lo=%g hi=%g", lo, hi);
  kl_shape s = kl_tensor_shape(x);
  if (prep_out("clip", &s, out_dt, x->dtype, out, err, errlen)) return 1;
  kl_tensor *o = *out;
  bool ints = kl_dtype_is_int(x->dtype) && kl_dtype_is_int(o->dtype);
  int64_t ilo = kl_f64_to_i64_sat(ceil(lo)), ihi = kl_f64_to_i64_sat(floor(hi));
  mwalk w;
  mw_init(&w, &s);
  mw_add(&w, o->offset, o->strides);
  mw_add(&w, x->offset, x->strides);
  int64_t n = kl_shape_numel(&s);
  for (int64_t i = 0; i < n; i++, mw_next(&w)) {
    if (ints) {
      int64_t v = ldi(x, w.off[1]);
      v = v < ilo ? ilo : v;
      v = v > ihi ? ihi : v;
      sti(o, w.off[0], v);
    } else {
      double v = ldf(x, w.off[1]);
      v = v < lo ? lo : v; /* NaN passes through */
      v = v > hi ? hi : v;
      stf(o, w.off[0], v);
    }
  }
  return 0;
}

int kl_ref_where(const kl_tensor *cond, const kl_tensor *a, const kl_tensor *b, kl_dtype out_dt, kl_tensor **out,
                 char *err, size_t errlen) {
  kl_shape sc = kl_tensor_shape(cond), sa = kl_tensor_shape(a), sb = kl_tensor_shape(b), so;
  if (kl_infer_where(&sc, &sa, &sb, &so, err, errlen)) return 1;
  if (prep_out("where", &so, out_dt, a->dtype, out, err, errlen)) return 1;
  kl_tensor *o = *out;
  bool ints = kl_dtype_is_int(a->dtype) && kl_dtype_is_int(b->dtype) && kl_dtype_is_int(o->dtype);
  mwalk w;
  mw_init(&w, &so);
  mw_add(&w, o->offset, o->strides);
  mw_add_bcast(&w, cond);
  mw_add_bcast(&w, a);
  mw_add_bcast(&w, b);
  int64_t n = kl_shape_numel(&so);
  for (int64_t i = 0; i < n; i++, mw_next(&w)) {
    bool c = ldf(cond, w.off[1]) != 0;
    const kl_tensor *src = c ? a : b;
    int64_t off = c ? w.off[2] : w.off[3];
    if (ints)
      sti(o, w.off[0], ldi(src, off));
    else
      stf(o, w.off[0], ldf(src, off));
  }
  return 0;
}

int kl_ref_convert(const kl_tensor *x, kl_dtype dt, kl_tensor **out, char *err, size_t errlen) {
  kl_shape s = kl_tensor_shape(x);
  if (!*out && !kl_dtype_valid(dt)) return kl_errf(err, errlen, "convert: invalid target dtype %d", (int)dt);
  if (prep_out("convert", &s, dt, dt, out, err, errlen)) return 1;
  return kl_tensor_copy_into(*out, x, err, errlen);
}

/* ---------------------------------------------------------------- data movement */

/* Copies the iteration space of w (operand 0 = dst, 1 = src). */
static void run_copy(mwalk *w, kl_tensor *dst, const kl_tensor *src) {
  int64_t n = shape_numel(w->shape, w->rank);
  for (int64_t i = 0; i < n; i++, mw_next(w)) copy_elem(dst, w->off[0], src, w->off[1]);
}

int kl_ref_broadcast(const kl_tensor *x, const kl_shape *shape, kl_tensor **out, char *err, size_t errlen) {
  kl_shape s = kl_tensor_shape(x);
  if (shape->rank < 0 || shape->rank > KL_MAX_RANK)
    return kl_errf(err, errlen, "broadcast: target rank %d out of range", shape->rank);
  if (kl_infer_broadcast_to("broadcast", &s, shape, err, errlen)) return 1;
  if (prep_out("broadcast", shape, KL_DT_NONE, x->dtype, out, err, errlen)) return 1;
  mwalk w;
  mw_init(&w, shape);
  mw_add(&w, (*out)->offset, (*out)->strides);
  mw_add_bcast(&w, x);
  run_copy(&w, *out, x);
  return 0;
}

int kl_ref_transpose(const kl_tensor *x, int nperm, const int *perm, kl_tensor **out, char *err, size_t errlen) {
  kl_shape s = kl_tensor_shape(x), so;
  if (kl_infer_transpose(&s, nperm, perm, &so, err, errlen)) return 1;
  if (prep_out("transpose", &so, KL_DT_NONE, x->dtype, out, err, errlen)) return 1;
  int64_t st[KL_MAX_RANK];
  for (int i = 0; i < nperm; i++) st[i] = x->strides[perm[i]];
  mwalk w;
  mw_init(&w, &so);
  mw_add(&w, (*out)->offset, (*out)->strides);
  mw_add(&w, x->offset, st);
  run_copy(&w, *out, x);
  return 0;
}

int kl_ref_reshape(const kl_tensor *x, int rank, const int64_t *dims, kl_tensor **out, char *err, size_t errlen) {
  kl_shape s = kl_tensor_shape(x), so;
  if (kl_infer_reshape(&s, rank, dims, &so, err, errlen)) return 1;
  if (prep_out("reshape", &so, KL_DT_NONE, x->dtype, out, err, errlen)) return 1;
  kl_tensor *o = *out;
  mwalk ws, wd;
  mw_init(&ws, &s);
  mw_add(&ws, x->offset, x->strides);
  mw_init(&wd, &so);
  mw_add(&wd, o->offset, o->strides);
  int64_t n = kl_shape_numel(&s);
  for (int64_t i = 0; i < n; i++, mw_next(&ws), mw_next(&wd)) copy_elem(o, wd.off[0], x, ws.off[0]);
  return 0;
}

int kl_ref_slice(const kl_tensor *x, const int64_t *begin, const int64_t *end, const int64_t *step, kl_tensor **out,
                 char *err, size_t errlen) {
  kl_shape s = kl_tensor_shape(x), so;
  int64_t nb[KL_MAX_RANK];
  if (kl_infer_slice(&s, begin, end, step, &so, nb, err, errlen)) return 1;
  if (prep_out("slice", &so, KL_DT_NONE, x->dtype, out, err, errlen)) return 1;
  int64_t st[KL_MAX_RANK], off = x->offset;
  for (int d = 0; d < s.rank; d++) {
    st[d] = x->strides[d] * (step ? step[d] : 1);
    if (so.dim[d] > 0) off += nb[d] * x->strides[d];
  }
  mwalk w;
  mw_init(&w, &so);
  mw_add(&w, (*out)->offset, (*out)->strides);
  mw_add(&w, off, st);
  run_copy(&w, *out, x);
  return 0;
}

int kl_ref_concat(int n, const kl_tensor *const *xs, int axis, kl_tensor **out, char *err, size_t errlen) {
  if (n < 1) return kl_errf(err, errlen, "concat: needs at least one input");
  kl_shape *shapes = kl_xmalloc(sizeof(kl_shape) * (size_t)n), so;
  for (int i = 0; i < n; i++) shapes[i] = kl_tensor_shape(xs[i]);
  int rc = kl_infer_concat(n, shapes, axis, &so, err, errlen);
  free(shapes);
  if (rc) return 1;
  for (int i = 1; i < n; i++)
    if (xs[i]->dtype != xs[0]->dtype)
      return kl_errf(err, errlen, "concat: input %d has dtype %s, input 0 has %s", i, kl_dtype_name(xs[i]->dtype),
                     kl_dtype_name(xs[0]->dtype));
  int a = axis < 0 ? axis + so.rank : axis;
  if (prep_out("concat", &so, KL_DT_NONE, xs[0]->dtype, out, err, errlen)) return 1;
  kl_tensor *o = *out;
  int64_t pos = 0;
  for (int i = 0; i < n; i++) {
    kl_shape si = kl_tensor_shape(xs[i]);
    mwalk w;
    mw_init(&w, &si);
    mw_add(&w, o->offset + pos * o->strides[a], o->strides);
    mw_add(&w, xs[i]->offset, xs[i]->strides);
    run_copy(&w, o, xs[i]);
    pos += si.dim[a];
  }
  return 0;
}

/* ---------------------------------------------------------------- dot */

/* dst[r, k] (R rows of K contiguous elements of esz bytes) = src[r * rs + k * ks]; returns dst */
static const char *pack_rows(void *dst, const char *src, size_t esz, int64_t R, int64_t K, int64_t rs, int64_t ks) {
  char *d = dst;
  for (int64_t r = 0; r < R; r++)
    for (int64_t k = 0; k < K; k++) memcpy(d + (r * K + k) * (int64_t)esz, src + (r * rs + k * ks) * (int64_t)esz, esz);
  return dst;
}


int kl_ref_dot(const kl_tensor *a, const kl_tensor *b, bool ta, bool tb, kl_dtype out_dt, kl_tensor **out, char *err,
               size_t errlen) {
  kl_shape sa = kl_tensor_shape(a), sb = kl_tensor_shape(b), so;
  if (kl_infer_dot(&sa, &sb, ta, tb, &so, err, errlen)) return 1;
  if (prep_out("dot", &so, out_dt, kl_contraction_dtype(a->dtype), out, err, errlen)) return 1;
  kl_tensor *o = *out;
  int ra = sa.rank, rb = sb.rank, ro = so.rank;
  int64_t M = so.dim[ro - 2], N = so.dim[ro - 1];
  int64_t K = ta ? sa.dim[ra - 2] : sa.dim[ra - 1];
  bool ints = kl_dtype_is_int(a->dtype) && kl_dtype_is_int(b->dtype);
  int64_t na = kl_tensor_numel(a), nbn = kl_tensor_numel(b);
  double *fa = NULL, *fb = NULL;
  int64_t *ia = NULL, *ib = NULL;
  if (ints) {
    ia = kl_xmalloc(sizeof(int64_t) * (size_t)(na ? na : 1));
    ib = kl_xmalloc(sizeof(int64_t) * (size_t)(nbn ? nbn : 1));
    kl_tensor_to_i64(a, ia);
    kl_tensor_to_i64(b, ib);
  } else {
    fa = kl_xmalloc(sizeof(double) * (size_t)(na ? na : 1));
    fb = kl_xmalloc(sizeof(double) * (size_t)(nbn ? nbn : 1));
    kl_tensor_to_f64(a, fa);
    kl_tensor_to_f64(b, fb);
  }
  /* Batch iteration: operand block offsets (in elements of the packed row-major copies),
   * broadcast over the output batch dims. */
  kl_shape bs = kl_shape_make(ro - 2, so.dim);
  int64_t sta[KL_MAX_RANK] = { 0 }, stb[KL_MAX_RANK] = { 0 }, blk;
  blk = sa.dim[ra - 2] * sa.dim[ra - 1];
  for (int d = ra - 3; d >= 0; d--) {
    int od = d + (ro - ra);
    sta[od] = sa.dim[d] == 1 ? 0 : blk;
    blk *= sa.dim[d];
  }
  blk = sb.dim[rb - 2] * sb.dim[rb - 1];
  for (int d = rb - 3; d >= 0; d--) {
    int od = d + (ro - rb);
    stb[od] = sb.dim[d] == 1 ? 0 : blk;
    blk *= sb.dim[d];
  }
  int64_t ost[KL_MAX_RANK];
  for (int d = 0; d < ro - 2; d++) ost[d] = o->strides[d];
  mwalk w;
  mw_init(&w, &bs);
  mw_add(&w, o->offset, ost);
  mw_add(&w, 0, sta);
  mw_add(&w, 0, stb);
  /* element (m,k) of A's block and (k,n) of B's block */
  int64_t am = ta ? 1 : K, ak = ta ? M : 1;
  int64_t bk = tb ? 1 : N, bn = tb ? K : 1;
  int64_t os_m = o->strides[ro - 2], os_n = o->strides[ro - 1];
  int64_t nbatch = kl_shape_numel(&bs);
  /* per batch entry: K-contiguous rows of A ([M, K]) and of B ([N, K]), transposed into
   * scratch where the operand is not, then C = A B^T by the blocked kernel (refops_gemm.h:
   * every sum in increasing k, bit for bit the naive loop's) and stored through o's strides */
  size_t esz = ints ? sizeof(int64_t) : sizeof(double);
  void *ta_buf = (ta && M > 0 && K > 0) ? kl_xmalloc(esz * (size_t)(M * K)) : NULL;
  void *tb_buf = (!tb && N > 0 && K > 0) ? kl_xmalloc(esz * (size_t)(N * K)) : NULL;
  void *cbuf = kl_xmalloc(esz * (size_t)(M * N > 0 ? M * N : 1));
  kl_threadpool *pool = kl_ref_gemm_pool((double)nbatch * (double)M * (double)N * (double)K);
  for (int64_t bi = 0; bi < nbatch; bi++, mw_next(&w)) {
    const char *pa = (const char *)(ints ? (void *)ia : (void *)fa) + w.off[1] * (int64_t)esz;
    const char *pb = (const char *)(ints ? (void *)ib : (void *)fb) + w.off[2] * (int64_t)esz;
    if (ta_buf) pa = pack_rows(ta_buf, pa, esz, M, K, am, ak);
    if (tb_buf) pb = pack_rows(tb_buf, pb, esz, N, K, bn, bk);
    if (ints)
      kl_ref_gemm_nt_i64(pool, (const int64_t *)pa, K, (const int64_t *)pb, K, M, N, K, cbuf, N);
    else
      kl_ref_gemm_nt_f64(pool, (const double *)pa, K, (const double *)pb, K, M, N, K, cbuf, N);
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) {
        int64_t dst = w.off[0] + m * os_m + n * os_n;
        if (!ints)
          stf(o, dst, ((double *)cbuf)[m * N + n]);
        else if (kl_dtype_is_int(o->dtype))
          sti(o, dst, ((int64_t *)cbuf)[m * N + n]);
        else
          stf(o, dst, (double)((int64_t *)cbuf)[m * N + n]);
      }
  }
  kl_threadpool_destroy(pool);
  free(ta_buf);
  free(tb_buf);
  free(cbuf);
  free(fa);
  free(fb);
  free(ia);
  free(ib);
  return 0;
}

/* ---------------------------------------------------------------- reduce, softmax */

int kl_ref_reduce(kl_reduce_op op, const kl_tensor *x, int naxes, const int *axes, bool keepdims, kl_dtype out_dt,
                  kl_tensor **out, char *err, size_t errlen) {
  if (op < 0 || op >= KL_RED_COUNT) return kl_errf(err, errlen, "reduce: unknown op %d", (int)op);
  const char *name = kl_reduce_name(op);
  kl_shape s = kl_tensor_shape(x), so;
  bool red[KL_MAX_RANK];
  if (kl_infer_reduce(name, &s, naxes, axes, keepdims, &so, red, err, errlen)) return 1;
  if (prep_out(name, &so, out_dt, x->dtype, out, err, errlen)) return 1;
  kl_tensor *o = *out;
  /* accumulators in row-major order of the kept dims (= the output's logical order) */
  int64_t nacc = kl_shape_numel(&so), count = 1, st[KL_MAX_RANK], acc_stride = 1;
  for (int d = s.rank - 1; d >= 0; d--) {
    if (red[d]) {
      st[d] = 0;
      count *= s.dim[d];
    } else {
      st[d] = acc_stride;
      acc_stride *= s.dim[d];
    }
  }
  bool ints = kl_dtype_is_int(x->dtype);
  double *fa = NULL;
  int64_t *ia = NULL;
  size_t na = (size_t)(nacc ? nacc : 1);
  if (ints) {
    ia = kl_xmalloc(sizeof(int64_t) * na);
    int64_t init = op == KL_RED_MAX ? kl_dtype_int_min(x->dtype) : op == KL_RED_MIN ? kl_dtype_int_max(x->dtype) : 0;
    for (size_t i = 0; i < na; i++) ia[i] = init;
  } else {
    fa = kl_xmalloc(sizeof(double) * na);
    double init = op == KL_RED_MAX ? -INFINITY : op == KL_RED_MIN ? INFINITY : 0.0;
    for (size_t i = 0; i < na; i++) fa[i] = init;
  }
  mwalk w;
  mw_init(&w, &s);
  mw_add(&w, x->offset, x->strides);
  mw_add(&w, 0, st);
  int64_t n = kl_shape_numel(&s);
  for (int64_t i = 0; i < n; i++, mw_next(&w)) {
    int64_t j = w.off[1];
    if (ints) {
      int64_t v = ldi(x, w.off[0]);
      switch (op) {
        case KL_RED_MAX:
          if (v > ia[j]) ia[j] = v;
          break;
        case KL_RED_MIN:
          if (v < ia[j]) ia[j] = v;
          break;
        default: ia[j] = (int64_t)((uint64_t)ia[j] + (uint64_t)v); break;
      }
    } else {
      double v = ldf(x, w.off[0]);
      switch (op) {
        case KL_RED_MAX: fa[j] = kl_binop_f64(KL_BIN_MAX, fa[j], v); break;
        case KL_RED_MIN: fa[j] = kl_binop_f64(KL_BIN_MIN, fa[j], v); break;
        default: fa[j] += v; break;
      }
    }
  }
  bool oint = kl_dtype_is_int(o->dtype);
  mwalk wo;
  mw_init(&wo, &so);
  mw_add(&wo, o->offset, o->strides);
  for (int64_t j = 0; j < nacc; j++, mw_next(&wo)) {
    int64_t dst = wo.off[0];
    if (op == KL_RED_MEAN) {
      if (ints && oint)
        sti(o, dst, count ? ia[j] / count : 0);
      else
        stf(o, dst, (ints ? (double)ia[j] : fa[j]) / (double)count);
    } else if (ints) {
      sti(o, dst, ia[j]);
    } else {
      stf(o, dst, fa[j]);
    }
  }
  free(fa);
  free(ia);
  return 0;
}

int kl_ref_softmax(const kl_tensor *x, int axis, kl_dtype out_dt, kl_tensor **out, char *err, size_t errlen) {
  kl_shape s = kl_tensor_shape(x);
  int a = 0;
  if (kl_normalize_axis("softmax", &s, axis, &a, err, errlen)) return 1;
  if (prep_out("softmax", &s, out_dt, x->dtype, out, err, errlen)) return 1;
  kl_tensor *o = *out;
  int64_t len = s.dim[a], xs = x->strides[a], os = o->strides[a];
  kl_shape outer = s;
  outer.dim[a] = 1;
  double *row = kl_xmalloc(sizeof(double) * (size_t)(len ? len : 1));
  mwalk w;
  mw_init(&w, &outer);
  mw_add(&w, o->offset, o->strides);
  mw_add(&w, x->offset, x->strides);
  int64_t n = len ? kl_shape_numel(&outer) : 0;
  for (int64_t i = 0; i < n; i++, mw_next(&w)) {
    double mx = -INFINITY, sum = 0;
    for (int64_t k = 0; k < len; k++) {
      row[k] = ldf(x, w.off[1] + k * xs);
      if (isnan(row[k]) || row[k] > mx) mx = isnan(mx) ? mx : row[k];
    }
    for (int64_t k = 0; k < len; k++) {
      row[k] = exp(row[k] - mx);
      sum += row[k];
    }
    for (int64_t k = 0; k < len; k++) stf(o, w.off[0] + k * os, row[k] / sum);
  }
  free(row);
  return 0;
}
