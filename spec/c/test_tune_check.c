/* test_tune_check.c — kl_tune_check (driver/tune_check.h), the check of every tuning
 * candidate's outputs against the reference candidate's, and the row-major fast path of
 * kl_tensor_compare it runs on (runtime/tensor.h).
 * On random f16/f32/i32 outputs of a few million elements (several slices), with and
 * without a thread pool: identical and within-tolerance outputs pass; one wrong element at
 * the first, a middle and the last position, a NaN, an inf and a wrong element in
 * permuted (same) strides or in different strides are each caught with the exact count;
 * NaN against NaN passes; integers are exact; shapes that differ are an error. The fast
 * path of kl_tensor_compare gives field for field the result of the general path (the
 * same values compared through transposed views); the inline f16 and bf16 widening both
 * use gives the value computed from the fields for all 65536 patterns. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "driver/tune_check.h"

#include "check.h"

static uint64_t g_seed = 0x7E57C4ECull;

static kl_tensor *rand_t(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides) {
  char err[256];
  kl_tensor *t = kl_tensor_rand(dt, rank, shape, strides, xorshift64(&g_seed), KL_DIST_NORMAL, err, sizeof err);
  CHECK(t != NULL, "%s", err);
  return t;
}
static kl_tensor *copy_t(const kl_tensor *t) {
  char err[256];
  int64_t st[KL_MAX_RANK];
  memcpy(st, t->strides, sizeof st);
  kl_tensor *c = kl_tensor_with_strides(t, st, err, sizeof err);
  CHECK(c != NULL, "%s", err);
  return c;
}

/* check(a vs ref) on the pool and serially: both give want; msg must hold has (if any) */
static void expect(kl_threadpool *pool, kl_tensor *a, kl_tensor *ref, int want, const char *has, const char *what) {
  for (int serial = 0; serial < 2; serial++) {
    char msg[1024] = "";
    int got = kl_tune_check(serial ? NULL : pool, 1, &a, 1, &ref, msg, sizeof msg);
    CHECK(got == want, "%s (%s): got %d, want %d: %s", what, serial ? "serial" : "pool", got, want, msg);
    if (has) CHECK(strstr(msg, has) != NULL, "%s: '%s' not in '%s'", what, has, msg);
  }
}

static void wrong_at(kl_threadpool *pool, kl_tensor *ref, int64_t flat, double v, const char *has, const char *what) {
  kl_tensor *a = copy_t(ref);
  kl_tensor_set_flat(a, flat, v);
  expect(pool, a, ref, 1, has, what);
  kl_tensor_release(a);
}

static void float_cases(kl_threadpool *pool, kl_dtype dt, const char *name) {
  group_begin();
  int64_t shape[2] = { 1537, 2049 }, n = shape[0] * shape[1]; /* 3.1M elements: 12 slices */
  kl_tensor *ref = rand_t(dt, 2, shape, NULL);
  kl_tensor *a = copy_t(ref);
  expect(pool, a, ref, 0, NULL, "identical");
  /* within tolerance: every element moved by a quarter of what it may */
  double rtol, atol;
  kl_tune_tolerance(dt, &rtol, &atol);
  for (int64_t i = 0; i < n; i++) {
    double y = kl_tensor_get_flat(ref, i);
    kl_tensor_set_flat(a, i, y + 0.25 * (atol + rtol * fabs(y)) * (i % 2 ? 1 : -1));
  }
  expect(pool, a, ref, 0, NULL, "within tolerance");
  kl_tensor_release(a);
  int64_t at[3] = { 0, n / 2 + 12345, n - 1 };
  for (int k = 0; k < 3; k++) {
    double y = kl_tensor_get_flat(ref, at[k]);
    wrong_at(pool, ref, at[k], y + 1 + 2 * (atol + rtol * fabs(y)), "output 0: 1 elements differ", "one wrong");
  }
  wrong_at(pool, ref, n / 3, NAN, "1 elements differ", "NaN");
  wrong_at(pool, ref, 2 * n / 3, INFINITY, "max abs err inf", "inf");
  /* NaN in both passes */
  kl_tensor *rn = copy_t(ref), *an = copy_t(ref);
  kl_tensor_set_flat(rn, 7, NAN);
  kl_tensor_set_flat(an, 7, NAN);
  expect(pool, an, rn, 0, NULL, "NaN in both");
  kl_tensor_release(rn);
  kl_tensor_release(an);
  /* permuted dense strides, the same in both (an NHWC-like layout of a logical NCHW) */
  int64_t s4[4] = { 4, 64, 96, 80 }, st4[4] = { 64 * 96 * 80, 1, 80 * 64, 64 };
  kl_tensor *r4 = rand_t(dt, 4, s4, st4), *a4 = copy_t(r4);
  CHECK(!memcmp(a4->strides, r4->strides, sizeof st4), "with_strides keeps the strides");
  expect(pool, a4, r4, 0, NULL, "permuted strides, identical");
  int64_t idx[4] = { 3, 63, 95, 79 };
  kl_tensor_set(a4, idx, kl_tensor_get(r4, idx) + 100);
  idx[0] = 1;
  kl_tensor_set(a4, idx, kl_tensor_get(r4, idx) - 100);
  expect(pool, a4, r4, 1, "2 elements differ", "permuted strides, two wrong");
  /* different strides: the general path, same verdicts */
  kl_tensor *c4 = kl_tensor_contiguous(a4, NULL, 0), *cr4 = kl_tensor_contiguous(r4, NULL, 0);
  expect(pool, c4, r4, 1, "2 elements differ", "row-major vs permuted, two wrong");
  expect(pool, cr4, r4, 0, NULL, "row-major vs permuted, equal");
  kl_tensor_release(c4);
  kl_tensor_release(cr4);
  kl_tensor_release(a4);
  kl_tensor_release(r4);
  kl_tensor_release(ref);
  group_end(name);
}

/* kl_tensor_compare: row-major pairs (fast path) vs the same values through transposed
 * views (general path) */
static void compare_paths(kl_dtype dt, const char *name) {
  group_begin();
  char err[256];
  int64_t shape[2] = { 301, 257 }, tshape[2] = { 257, 301 };
  kl_tensor *b = rand_t(dt, 2, shape, NULL), *a = copy_t(b);
  for (int64_t i = 0; i < 301 * 257; i += 97) kl_tensor_set_flat(a, i, kl_tensor_get_flat(a, i) * (1 + (i % 5) * 0.01));
  kl_tensor_set_flat(a, 5000, NAN);
  /* transposed copies: t(x)[j][i] = x[i][j], memory of the row-major [257, 301] */
  kl_tensor *at_ = kl_tensor_zeros(dt, 2, tshape, NULL, err, sizeof err),
            *bt = kl_tensor_zeros(dt, 2, tshape, NULL, err, sizeof err);
  for (int64_t i = 0; i < 301; i++)
    for (int64_t j = 0; j < 257; j++) {
      kl_tensor_set_flat(at_, j * 301 + i, kl_tensor_get_flat(a, i * 257 + j));
      kl_tensor_set_flat(bt, j * 301 + i, kl_tensor_get_flat(b, i * 257 + j));
    }
  /* views of the transposes in the logical shape [301, 257]: strides {1, 301} */
  int64_t vst[2] = { 1, 301 };
  kl_tensor *av = kl_tensor_view(at_, 2, shape, vst, 0, err, sizeof err),
            *bv = kl_tensor_view(bt, 2, shape, vst, 0, err, sizeof err);
  CHECK(av && bv, "%s", err);
  kl_compare_result r1, r2;
  CHECK(kl_tensor_compare(a, b, 1e-3, 1e-3, &r1, err, sizeof err) == 0);
  CHECK(kl_tensor_compare(av, bv, 1e-3, 1e-3, &r2, err, sizeof err) == 0);
  CHECK(r1.mismatches > 0 && r1.mismatches == r2.mismatches, "%lld vs %lld", (long long)r1.mismatches,
        (long long)r2.mismatches);
  CHECK(r1.first_flat == r2.first_flat && r1.first_index[0] == r2.first_index[0] &&
            r1.first_index[1] == r2.first_index[1],
        "first %lld [%lld,%lld] vs %lld [%lld,%lld]", (long long)r1.first_flat, (long long)r1.first_index[0],
        (long long)r1.first_index[1], (long long)r2.first_flat, (long long)r2.first_index[0],
        (long long)r2.first_index[1]);
  CHECK(r1.max_abs_err == r2.max_abs_err && r1.max_rel_err == r2.max_rel_err, "max %g %g vs %g %g", r1.max_abs_err,
        r1.max_rel_err, r2.max_abs_err, r2.max_rel_err);
  CHECK(r1.first_a == r2.first_a && r1.first_b == r2.first_b);
  CHECK(r1.first_index[0] * 257 + r1.first_index[1] == r1.first_flat, "index of the first mismatch");
  kl_tensor_release(av);
  kl_tensor_release(bv);
  kl_tensor_release(at_);
  kl_tensor_release(bt);
  kl_tensor_release(a);
  kl_tensor_release(b);
  group_end(name);
}

/* The value of a binary16 (ebits 5, mbits 10) or bfloat16 (8, 7) pattern from its fields
 * with ldexp, independent of the bit tricks in core/dtype.h. */
static double widen_ref(uint32_t h, int ebits, int mbits) {
  int bias = (1 << (ebits - 1)) - 1, e = (int)(h >> mbits) & ((1 << ebits) - 1);
  uint32_t m = h & ((1u << mbits) - 1);
  double mag = e == (1 << ebits) - 1 ? (m ? NAN : INFINITY)
      : e == 0                       ? ldexp(m, 1 - bias - mbits)
                                     : ldexp((double)((1u << mbits) | m), e - bias - mbits);
  return (h >> (ebits + mbits)) & 1 ? -mag : mag;
}

/* a NaN widened: quiet, sign and payload kept (the f64 bits) */
static bool nan_bits_ok(double x, uint32_t h, int ebits, int mbits) {
  uint64_t u,
      want = (uint64_t)((h >> (ebits + mbits)) & 1) << 63 | 0x7ffull << 52 | 1ull << 51 |
      (uint64_t)(h & ((1u << mbits) - 1)) << (52 - mbits);
  memcpy(&u, &x, 8);
  return u == want;
}

/* kl_f16_to_f64 / kl_bf16_to_f64 (inline in core/dtype.h, what both checks widen with)
 * against widen_ref: every pattern, signs of zeros and NaN bits included */
static void f16_widening(void) {
  group_begin();
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    double x = kl_f16_to_f64((uint16_t)h), y = widen_ref(h, 5, 10);
    double xb = kl_bf16_to_f64((uint16_t)h), yb = widen_ref(h, 8, 7);
    bool same = isnan(y) ? nan_bits_ok(x, h, 5, 10) : (x == y && signbit(x) == signbit(y));
    bool same_b = isnan(yb) ? nan_bits_ok(xb, h, 8, 7) : (xb == yb && signbit(xb) == signbit(yb));
    if (!same && bad++ < 5) CHECK(same, "f16 0x%04x: %a vs %a", (unsigned)h, x, y);
    if (!same_b && bad++ < 5) CHECK(same_b, "bf16 0x%04x: %a vs %a", (unsigned)h, xb, yb);
  }
  CHECK(bad == 0, "%d patterns differ", bad);
  group_end("f16 and bf16 widening (all 65536 patterns each)");
}

int main(void) {
  char err[256];
  f16_widening();
  kl_threadpool *pool = kl_threadpool_create(3, err, sizeof err);
  CHECK(pool != NULL, "%s", err);
  float_cases(pool, KL_DT_F16, "f16 outputs");
  float_cases(pool, KL_DT_F32, "f32 outputs");
  float_cases(pool, KL_DT_BF16, "bf16 outputs");
  group_begin();
  int64_t shape[1] = { 1 << 20 };
  kl_tensor *ri = rand_t(KL_DT_I32, 1, shape, NULL);
  kl_tensor *ai = copy_t(ri);
  expect(pool, ai, ri, 0, NULL, "ints identical");
  kl_tensor_set_flat(ai, (1 << 20) - 3, kl_tensor_get_flat(ri, (1 << 20) - 3) + 1);
  expect(pool, ai, ri, 1, "rtol 0 atol 0", "ints off by one");
  int64_t other[1] = { 5 };
  kl_tensor *o = rand_t(KL_DT_I32, 1, other, NULL);
  expect(pool, o, ri, -1, "compare: shapes differ", "shapes differ");
  kl_tensor_release(o);
  kl_tensor_release(ai);
  kl_tensor_release(ri);
  group_end("i32 outputs and errors");
  compare_paths(KL_DT_F16, "kl_tensor_compare fast path = general path (f16)");
  compare_paths(KL_DT_F32, "kl_tensor_compare fast path = general path (f32)");
  kl_threadpool_destroy(pool);
  return check_summary("test_tune_check");
}
