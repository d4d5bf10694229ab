/* tune_check.c — kl_tune_check (tune_check.h): sliced, threaded, every-element output checks. */
#include "driver/tune_check.h"
#include "core/arena.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kl_tune_tolerance(kl_dtype dt, double *rtol, double *atol) {
  if (kl_dtype_is_int(dt))
    *rtol = *atol = 0;
  else if (dt == KL_DT_F16)
    *rtol = *atol = 1e-2;
  else if (dt == KL_DT_F32 || dt == KL_DT_F64)
    *rtol = *atol = 1e-3;
  else
    *rtol = *atol = 5e-2;
}

/* The elements of t fill [offset, offset + numel) exactly once: the strides, ordered, are the
 * dense strides of some order of the dimensions (extent-1 dimensions ignored). */
static bool fills_span(const kl_tensor *t) {
  int dims[KL_MAX_RANK], k = 0;
  for (int d = 0; d < t->rank; d++) {
    if (t->shape[d] == 0) return false;
    if (t->shape[d] != 1) dims[k++] = d;
  }
  for (int i = 1; i < k; i++) /* insertion sort by stride */
    for (int j = i; j > 0 && t->strides[dims[j]] < t->strides[dims[j - 1]]; j--) {
      int x = dims[j];
      dims[j] = dims[j - 1];
      dims[j - 1] = x;
    }
  int64_t s = 1;
  for (int i = 0; i < k; i++) {
    if (t->strides[dims[i]] != s) return false;
    s *= t->shape[dims[i]];
  }
  return true;
}

/* Elements pass as kl_tensor_compare would pass them when |x - y| <= atol + rtol |y| with
 * a finite right side (x, y exact in double: every float dtype here widens exactly, and
 * the difference of two f16/bf16/f32 values is exact in double). A NaN or an infinity on
 * either side fails here, so only a sure pass skips the exact comparison. A branch-free
 * count the compiler can vectorise. */
#define SURE_PASS(NAME, T, LOAD)                                                          \
  static bool NAME(const void *pa, const void *pb, int64_t n, double rtol, double atol) { \
    const T *a = pa, *b = pb;                                                             \
    int64_t bad = 0;                                                                      \
    for (int64_t i = 0; i < n; i++) {                                                     \
      double x = LOAD(a[i]), y = LOAD(b[i]), tol = atol + rtol * fabs(y);                 \
      bad += !(fabs(x - y) <= tol) | !(tol < INFINITY);                                   \
    }                                                                                     \
    return bad == 0;                                                                      \
  }
#define AS_F64(v) ((double)(v))
SURE_PASS(sure_f16, uint16_t, kl_f16_to_f64)
SURE_PASS(sure_bf16, uint16_t, kl_bf16_to_f64)
SURE_PASS(sure_f32, float, AS_F64)
#undef SURE_PASS
#undef AS_F64

static bool sure_pass(kl_dtype dt, const void *pa, const void *pb, int64_t n, double rtol, double atol) {
  switch (dt) {
    case KL_DT_F16: return sure_f16(pa, pb, n, rtol, atol);
    case KL_DT_BF16: return sure_bf16(pa, pb, n, rtol, atol);
    case KL_DT_F32: return sure_f32(pa, pb, n, rtol, atol);
    default: return false;
  }
}

typedef struct slices {
  const kl_tensor *a, *b;
  int64_t len, chunk;
  double rtol, atol;
  int64_t *mismatches;
  double *max_abs;
  int *failed;
} slices;

static void check_slice(void *user, int64_t i, int worker) {
  (void)worker;
  slices *s = user;
  size_t es = kl_dtype_size(s->a->dtype);
  int64_t start = i * s->chunk, len = s->len - start < s->chunk ? s->len - start : s->chunk;
  char *pa = (char *)s->a->data + (size_t)(s->a->offset + start) * es;
  char *pb = (char *)s->b->data + (size_t)(s->b->offset + start) * es;
  s->mismatches[i] = 0;
  s->max_abs[i] = 0;
  s->failed[i] = 0;
  if (!memcmp(pa, pb, (size_t)len * es) || sure_pass(s->a->dtype, pa, pb, len, s->rtol, s->atol)) return;
  char err[256];
  kl_tensor *x = kl_tensor_wrap(pa, (size_t)len * es, false, s->a->dtype, 1, &len, NULL, 0, err, sizeof err);
  kl_tensor *y = kl_tensor_wrap(pb, (size_t)len * es, false, s->b->dtype, 1, &len, NULL, 0, err, sizeof err);
  kl_compare_result c;
  if (!x || !y || kl_tensor_compare(x, y, s->rtol, s->atol, &c, err, sizeof err))
    s->failed[i] = 1;
  else {
    s->mismatches[i] = c.mismatches;
    s->max_abs[i] = c.max_abs_err;
  }
  kl_tensor_release(x);
  kl_tensor_release(y);
}

int kl_tune_check(kl_threadpool *pool, int n, kl_tensor *const *outs, int nref, kl_tensor *const *ref, char *msg,
                  size_t msglen) {
  for (int i = 0; i < n && i < nref; i++) {
    const kl_tensor *a = outs[i], *b = ref[i];
    double rtol, atol;
    kl_tune_tolerance(b->dtype, &rtol, &atol);
    int64_t mism = 0;
    double max_abs = 0;
    bool same = a->dtype == b->dtype && a->rank == b->rank &&
        !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->rank) &&
        !memcmp(a->strides, b->strides, sizeof(int64_t) * (size_t)a->rank) && fills_span(a);
    if (same) {
      int64_t len = kl_tensor_numel(a);
      int threads = pool ? kl_threadpool_size(pool) : 1;
      int64_t chunk = len / (4 * (int64_t)threads);
      if (chunk < (1 << 18)) chunk = 1 << 18;
      int64_t nchunks = (len + chunk - 1) / chunk;
      slices s = { a,
                   b,
                   len,
                   chunk,
                   rtol,
                   atol,
                   kl_xcalloc((size_t)nchunks, sizeof(int64_t)),
                   kl_xcalloc((size_t)nchunks, sizeof(double)),
                   kl_xcalloc((size_t)nchunks, sizeof(int)) };
      if (pool && nchunks > 1)
        kl_threadpool_parallel_for(pool, nchunks, check_slice, &s);
      else
        for (int64_t c = 0; c < nchunks; c++) check_slice(&s, c, 0);
      bool failed = false;
      for (int64_t c = 0; c < nchunks; c++) {
        failed |= s.failed[c] != 0;
        mism += s.mismatches[c];
        if (s.max_abs[c] > max_abs) max_abs = s.max_abs[c];
      }
      free(s.mismatches);
      free(s.max_abs);
      free(s.failed);
      if (failed) {
        snprintf(msg, msglen, "compare: output %d: a slice could not be compared", i);
        return -1;
      }
    } else {
      kl_compare_result c;
      char err[512];
      if (kl_tensor_compare(a, b, rtol, atol, &c, err, sizeof err)) {
        snprintf(msg, msglen, "compare: %s", err);
        return -1;
      }
      mism = c.mismatches;
      max_abs = c.max_abs_err;
    }
    if (mism) {
      snprintf(msg, msglen,
               "output %d: %lld elements differ from the reference candidate's (max abs err %g, rtol %g atol %g)", i,
               (long long)mism, max_abs, rtol, atol);
      return 1;
    }
  }
  return 0;
}
