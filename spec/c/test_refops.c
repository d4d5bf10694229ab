/* test_refops.c — reference kernels (runtime/refops.h): hand-computed cases for every op,
 * identities (one-hot conv = strided slice, NHWC = NCHW, grouped = concatenated
 * per-group convs, softmax rows sum to 1), dot / conv against naive loops on random
 * shapes and layouts, integer semantics, and shape errors that name the op. */
#include "core/dtype.h"
#include "runtime/refops.h"
#include "runtime/refops_gemm.h"
#include "runtime/rng.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define S(...) ((int64_t[]){ __VA_ARGS__ })
#define V(...) ((double[]){ __VA_ARGS__ })

static char err[512];

static kl_tensor *T(kl_dtype dt, int rank, const int64_t *shape, const double *vals) {
  kl_tensor *t = kl_tensor_from_f64(dt, rank, shape, NULL, vals, err, sizeof err);
  if (!t) {
    fprintf(stderr, "cannot create: %s\n", err);
    exit(2);
  }
  return t;
}
static kl_tensor *R(kl_dtype dt, int rank, const int64_t *shape, uint64_t seed, const char *layout) {
  int64_t st[8];
  if (layout && kl_layout_strides(layout, rank, shape, st, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    exit(2);
  }
  kl_tensor *t = kl_tensor_rand(dt, rank, shape, layout ? st : NULL, seed, KL_DIST_UNIFORM, err, sizeof err);
  if (!t) {
    fprintf(stderr, "cannot create: %s\n", err);
    exit(2);
  }
  return t;
}
/* Shape and values (logical order) equal within tol. */
static bool is(const kl_tensor *t, int rank, const int64_t *shape, const double *vals, double tol) {
  if (!t || t->rank != rank) return false;
  for (int i = 0; i < rank; i++)
    if (t->shape[i] != shape[i]) return false;
  int64_t n = kl_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    double g = kl_tensor_get_flat(t, i);
    if (isnan(vals[i]) ? !isnan(g) : !(g == vals[i] || fabs(g - vals[i]) <= tol)) {
      fprintf(stderr, "    element %lld: got %.17g want %.17g\n", (long long)i, g, vals[i]);
      return false;
    }
  }
  return true;
}
static bool same(const kl_tensor *a, const kl_tensor *b, double rtol, double atol) {
  kl_compare_result r;
  if (kl_tensor_compare(a, b, rtol, atol, &r, err, sizeof err)) {
    fprintf(stderr, "    %s\n", err);
    return false;
  }
  if (r.mismatches)
    fprintf(stderr, "    %lld mismatches, first at %lld: %.17g vs %.17g\n", (long long)r.mismatches,
            (long long)r.first_flat, r.first_a, r.first_b);
  return r.mismatches == 0;
}
#define REL(t) (kl_tensor_release(t), (t) = NULL)

/* ---------------------------------------------------------------- element-wise */

static void test_binary(void) {
  kl_tensor *a = T(KL_DT_F32, 2, S(2, 2), V(1, 2, 3, 4)), *b = T(KL_DT_F32, 1, S(2), V(10, 20)), *o = NULL;
  CHECK(kl_ref_binary(KL_BIN_ADD, a, b, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 2, S(2, 2), V(11, 22, 13, 24), 0),
        "add bcast");
  REL(o);
  CHECK(kl_ref_binary(KL_BIN_SUB, a, b, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 2, S(2, 2), V(-9, -18, -7, -16), 0),
        "sub");
  REL(o);
  CHECK(kl_ref_binary(KL_BIN_MUL, b, a, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 2, S(2, 2), V(10, 40, 30, 80), 0),
        "mul");
  REL(o);
  CHECK(kl_ref_binary(KL_BIN_DIV, a, b, KL_DT_F64, &o, err, sizeof err) == 0 && o->dtype == KL_DT_F64 &&
            is(o, 2, S(2, 2), V(0.1, 0.1, 0.3, 0.2), 1e-15),
        "div, f64 out");
  REL(o);
  kl_tensor *c = T(KL_DT_F32, 2, S(2, 1), V(2.5, -1)), *r = T(KL_DT_F32, 1, S(3), V(0, 2, NAN));
  CHECK(kl_ref_binary(KL_BIN_MAX, c, r, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 2, S(2, 3), V(2.5, 2.5, NAN, 0, 2, NAN), 0),
        "max [2,1] x [3] with nan");
  REL(o);
  CHECK(kl_ref_binary(KL_BIN_MIN, c, r, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 2, S(2, 3), V(0, 2, NAN, -1, -1, NAN), 0),
        "min");
  REL(o);
  kl_tensor *e = T(KL_DT_F32, 1, S(3), V(2, 0.5, -1));
  kl_tensor *three = T(KL_DT_F32, 0, NULL, V(3));
  CHECK(kl_ref_binary(KL_BIN_POW, e, three, KL_DT_NONE, &o, err, sizeof err) == 0 && is(o, 1, S(3), V(8, 0.125, -1), 0),
        "pow with a scalar");
  REL(o);
  /* rounding on store: 1 + 2^-11 is a tie in f16 -> 1 */
  kl_tensor *one = T(KL_DT_F64, 1, S(1), V(1)), *eps = T(KL_DT_F64, 1, S(1), V(ldexp(1, -11)));
  CHECK(kl_ref_binary(KL_BIN_ADD, one, eps, KL_DT_F16, &o, err, sizeof err) == 0 && is(o, 1, S(1), V(1), 0),
        "f16 store rounds");
  REL(o);
  CHECK(kl_ref_binary(KL_BIN_ADD, one, eps, KL_DT_BF16, &o, err, sizeof err) == 0 && is(o, 1, S(1), V(1), 0),
        "bf16 store rounds");
  REL(o);
  /* integer semantics */
  kl_tensor *i8a = T(KL_DT_I8, 1, S(4), V(100, -7, 7, 5)), *i8b = T(KL_DT_I8, 1, S(4), V(100, 2, -2, 0));
  CHECK(kl_ref_binary(KL_BIN_ADD, i8a, i8b, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 1, S(4), V(-56, -5, 5, 5), 0),
        "i8 add wraps");
  REL(o);
  CHECK(kl_ref_binary(KL_BIN_ADD, i8a, i8b, KL_DT_I32, &o, err, sizeof err) == 0 && is(o, 1, S(4), V(200, -5, 5, 5), 0),
        "i8+i8 -> i32");
  REL(o);
  CHECK(kl_ref_binary(KL_BIN_DIV, i8a, i8b, KL_DT_NONE, &o, err, sizeof err) == 0 && is(o, 1, S(4), V(1, -3, -3, 0), 0),
        "int div truncates, x/0 = 0");
  REL(o);
  CHECK(kl_ref_binary(KL_BIN_DIV, i8a, i8b, KL_DT_F32, &o, err, sizeof err) == 0 &&
            is(o, 1, S(4), V(1, -3.5, -3.5, INFINITY), 0),
        "int div with a float output is true division");
  REL(o);
  kl_tensor *ib = T(KL_DT_I32, 1, S(4), V(2, 2, -1, 0)), *ie = T(KL_DT_I32, 1, S(4), V(10, -1, -3, -2));
  CHECK(kl_ref_binary(KL_BIN_POW, ib, ie, KL_DT_NONE, &o, err, sizeof err) == 0 && is(o, 1, S(4), V(1024, 0, -1, 0), 0),
        "int pow");
  REL(o);
  kl_tensor *big = T(KL_DT_I32, 1, S(1), V(65536));
  CHECK(kl_ref_binary(KL_BIN_MUL, big, big, KL_DT_NONE, &o, err, sizeof err) == 0 && is(o, 1, S(1), V(0), 0),
        "i32 mul wraps");
  REL(o);
  /* into a given destination with another layout */
  kl_tensor *dst = kl_tensor_zeros(KL_DT_F32, 2, S(2, 2), S(1, 2), err, sizeof err);
  o = dst;
  CHECK(kl_ref_binary(KL_BIN_ADD, a, b, KL_DT_NONE, &o, err, sizeof err) == 0 && o == dst &&
            is(dst, 2, S(2, 2), V(11, 22, 13, 24), 0) && ((float *)dst->data)[1] == 13,
        "column-major destination");
  kl_tensor *wrong = kl_tensor_zeros(KL_DT_F32, 2, S(2, 3), NULL, err, sizeof err);
  o = wrong;
  CHECK(kl_ref_binary(KL_BIN_ADD, a, b, KL_DT_NONE, &o, err, sizeof err) != 0 &&
            strstr(err, "add: output has shape [2,3], expected [2,2]"),
        "%s", err);
  o = dst;
  CHECK(kl_ref_binary(KL_BIN_ADD, a, b, KL_DT_F16, &o, err, sizeof err) != 0 && strstr(err, "dtype"), "%s", err);
  /* errors */
  kl_tensor *x3 = T(KL_DT_F32, 2, S(2, 3), V(1, 2, 3, 4, 5, 6)), *x4 = T(KL_DT_F32, 1, S(4), V(1, 2, 3, 4));
  o = NULL;
  CHECK(kl_ref_binary(KL_BIN_ADD, x3, x4, KL_DT_NONE, &o, err, sizeof err) != 0 && o == NULL &&
            strcmp(err, "add: shapes do not broadcast: [2,3] vs [4]") == 0,
        "%s", err);
  CHECK(kl_ref_binary(KL_BIN_POW, x4, x3, KL_DT_NONE, &o, err, sizeof err) != 0 && strncmp(err, "pow:", 4) == 0, "%s",
        err);
  CHECK(kl_ref_binary(KL_BIN_ADD, x3, x3, (kl_dtype)77, &o, err, sizeof err) != 0 && o == NULL && strstr(err, "dtype"),
        "%s", err);
  CHECK(kl_ref_binary((kl_binop)99, x3, x3, KL_DT_NONE, &o, err, sizeof err) != 0 && o == NULL, "bad op");
  CHECK(kl_binop_from_name("mul") == KL_BIN_MUL && kl_binop_from_name("mull") == -1 &&
            strcmp(kl_binop_name(KL_BIN_POW), "pow") == 0,
        "names");
  kl_tensor *ts[] = { a, b, c, r, e, three, one, eps, i8a, i8b, ib, ie, big, dst, wrong, x3, x4 };
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) kl_tensor_release(ts[i]);
  GROUP("binary ops, broadcasting, int semantics");
}

static void test_unary(void) {
  kl_tensor *x = T(KL_DT_F64, 1, S(4), V(-2, 0, 1, 4)), *o = NULL;
  struct {
    kl_unop op;
    double v[4];
  } cases[] = {
    { KL_UN_NEG, { 2, 0, -1, -4 } },
    { KL_UN_ABS, { 2, 0, 1, 4 } },
    { KL_UN_EXP, { exp(-2), 1, M_E, exp(4) } },
    { KL_UN_LOG, { NAN, -INFINITY, 0, log(4) } },
    { KL_UN_SQRT, { NAN, 0, 1, 2 } },
    { KL_UN_RSQRT, { NAN, INFINITY, 1, 0.5 } },
    { KL_UN_TANH, { tanh(-2), 0, tanh(1), tanh(4) } },
    { KL_UN_SIGMOID, { 1 / (1 + exp(2)), 0.5, 1 / (1 + exp(-1)), 1 / (1 + exp(-4)) } },
    { KL_UN_RELU, { 0, 0, 1, 4 } },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int rc = kl_ref_unary(cases[i].op, x, KL_DT_NONE, &o, err, sizeof err);
    CHECK(rc == 0 && is(o, 1, S(4), cases[i].v, 1e-15), "%s", kl_unop_name(cases[i].op));
    REL(o);
    CHECK(kl_unop_from_name(kl_unop_name(cases[i].op)) == (int)cases[i].op, "name round trip");
  }
  kl_tensor *ext = T(KL_DT_F32, 1, S(3), V(-1000, 1000, NAN));
  CHECK(kl_ref_unary(KL_UN_SIGMOID, ext, KL_DT_NONE, &o, err, sizeof err) == 0 && is(o, 1, S(3), V(0, 1, NAN), 0),
        "sigmoid saturates");
  REL(o);
  CHECK(kl_ref_unary(KL_UN_RELU, ext, KL_DT_NONE, &o, err, sizeof err) == 0 && is(o, 1, S(3), V(0, 1000, NAN), 0),
        "relu keeps nan");
  REL(o);
  kl_tensor *i = T(KL_DT_I8, 1, S(3), V(-128, -5, 7));
  CHECK(kl_ref_unary(KL_UN_ABS, i, KL_DT_NONE, &o, err, sizeof err) == 0 && is(o, 1, S(3), V(-128, 5, 7), 0),
        "i8 abs(-128) wraps");
  REL(o);
  CHECK(kl_ref_unary(KL_UN_ABS, i, KL_DT_I32, &o, err, sizeof err) == 0 && is(o, 1, S(3), V(128, 5, 7), 0),
        "i8 abs into i32");
  REL(o);
  CHECK(kl_ref_unary(KL_UN_NEG, i, KL_DT_NONE, &o, err, sizeof err) == 0 && is(o, 1, S(3), V(-128, 5, -7), 0),
        "i8 neg wraps");
  REL(o);
  CHECK(kl_ref_unary(KL_UN_SQRT, i, KL_DT_F32, &o, err, sizeof err) == 0 &&
            is(o, 1, S(3), V(NAN, NAN, sqrt(7.0f)), 1e-6),
        "int sqrt to f32");
  REL(o);
  CHECK(kl_ref_unary(KL_UN_EXP, i, KL_DT_NONE, &o, err, sizeof err) == 0 && is(o, 1, S(3), V(0, 0, 127), 0),
        "exp into i8 saturates");
  REL(o);
  /* f16 output is the f16 rounding of the f64 result */
  kl_tensor *h = R(KL_DT_F16, 2, S(7, 9), 11, NULL);
  CHECK(kl_ref_unary(KL_UN_TANH, h, KL_DT_NONE, &o, err, sizeof err) == 0 && o->dtype == KL_DT_F16, "f16 tanh");
  bool ok = true;
  for (int64_t k = 0; k < 63; k++) ok = ok && kl_tensor_get_flat(o, k) == kl_round_f16(tanh(kl_tensor_get_flat(h, k)));
  CHECK(ok, "f16 results are round(f64 result)");
  REL(o);
  CHECK(kl_ref_unary((kl_unop)42, x, KL_DT_NONE, &o, err, sizeof err) != 0 && o == NULL, "bad op");
  kl_tensor_release(x);
  kl_tensor_release(ext);
  kl_tensor_release(i);
  kl_tensor_release(h);
  GROUP("unary ops");
}

static void test_clip_where_convert(void) {
  kl_tensor *x = T(KL_DT_F32, 1, S(4), V(-2, 0.5, 3, NAN)), *o = NULL;
  CHECK(kl_ref_clip(x, -1, 1, KL_DT_NONE, &o, err, sizeof err) == 0 && is(o, 1, S(4), V(-1, 0.5, 1, NAN), 0), "clip");
  REL(o);
  CHECK(kl_ref_clip(x, 1, -1, KL_DT_NONE, &o, err, sizeof err) != 0 && o == NULL && strncmp(err, "clip:", 5) == 0, "%s",
        err);
  kl_tensor *xi = T(KL_DT_I32, 1, S(4), V(-5, 0, 1, 9));
  CHECK(kl_ref_clip(xi, 0.5, 7.9, KL_DT_NONE, &o, err, sizeof err) == 0 && is(o, 1, S(4), V(1, 1, 1, 7), 0),
        "int clip ceil/floor");
  REL(o);
  kl_tensor *cond = T(KL_DT_I1, 2, S(2, 1), V(1, 0)), *a = T(KL_DT_F32, 1, S(3), V(1, 2, 3)),
            *b = T(KL_DT_F32, 0, NULL, V(-1));
  CHECK(kl_ref_where(cond, a, b, KL_DT_NONE, &o, err, sizeof err) == 0 && is(o, 2, S(2, 3), V(1, 2, 3, -1, -1, -1), 0),
        "where bcast");
  REL(o);
  kl_tensor *c3 = T(KL_DT_F32, 1, S(3), V(0, NAN, -0.5));
  CHECK(kl_ref_where(c3, a, b, KL_DT_NONE, &o, err, sizeof err) == 0 && is(o, 1, S(3), V(-1, 2, 3), 0),
        "where: nonzero (nan) is true");
  REL(o);
  kl_tensor *bad = T(KL_DT_F32, 1, S(2), V(0, 1));
  CHECK(kl_ref_where(bad, a, b, KL_DT_NONE, &o, err, sizeof err) != 0 && o == NULL &&
            strcmp(err, "where: shapes do not broadcast: cond [2], a [3], b []") == 0,
        "%s", err);
  /* convert */
  kl_tensor *f = T(KL_DT_F64, 1, S(6), V(300.7, -300, 3.9, -3.9, NAN, 0.1));
  CHECK(kl_ref_convert(f, KL_DT_I8, &o, err, sizeof err) == 0 && o->dtype == KL_DT_I8 &&
            is(o, 1, S(6), V(127, -128, 3, -3, 0, 0), 0),
        "f64 -> i8 truncates and saturates");
  REL(o);
  CHECK(kl_ref_convert(f, KL_DT_F16, &o, err, sizeof err) == 0 &&
            is(o, 1, S(6), V(kl_round_f16(300.7), -300, kl_round_f16(3.9), kl_round_f16(-3.9), NAN, kl_round_f16(0.1)),
               0),
        "f64 -> f16");
  REL(o);
  CHECK(kl_ref_convert(f, KL_DT_I1, &o, err, sizeof err) == 0 && is(o, 1, S(6), V(1, 1, 1, 1, 1, 1), 0), "-> i1");
  REL(o);
  kl_tensor *wide = T(KL_DT_I32, 1, S(3), V(300, -129, 100000));
  CHECK(kl_ref_convert(wide, KL_DT_I8, &o, err, sizeof err) == 0 && is(o, 1, S(3), V(44, 127, -96), 0),
        "i32 -> i8 wraps");
  REL(o);
  CHECK(kl_ref_convert(wide, KL_DT_BF16, &o, err, sizeof err) == 0 && is(o, 1, S(3), V(300, -129, 99840), 0),
        "i32 -> bf16 rounds");
  REL(o);
  CHECK(kl_ref_convert(wide, KL_DT_NONE, &o, err, sizeof err) != 0 && o == NULL && strncmp(err, "convert:", 8) == 0,
        "%s", err);
  kl_tensor_release(x);
  kl_tensor_release(xi);
  kl_tensor_release(cond);
  kl_tensor_release(a);
  kl_tensor_release(b);
  kl_tensor_release(c3);
  kl_tensor_release(bad);
  kl_tensor_release(f);
  kl_tensor_release(wide);
  GROUP("clip, where, convert");
}

/* ---------------------------------------------------------------- data movement */

static void test_movement(void) {
  kl_tensor *o = NULL;
  kl_tensor *v = T(KL_DT_F32, 1, S(3), V(1, 2, 3)), *col = T(KL_DT_F32, 2, S(2, 1), V(5, 6));
  kl_shape s23 = kl_shape_make(2, S(2, 3));
  CHECK(kl_ref_broadcast(v, &s23, &o, err, sizeof err) == 0 && is(o, 2, S(2, 3), V(1, 2, 3, 1, 2, 3), 0),
        "broadcast row");
  REL(o);
  CHECK(kl_ref_broadcast(col, &s23, &o, err, sizeof err) == 0 && is(o, 2, S(2, 3), V(5, 5, 5, 6, 6, 6), 0),
        "broadcast col");
  REL(o);
  kl_shape s4 = kl_shape_make(1, S(4));
  CHECK(kl_ref_broadcast(v, &s4, &o, err, sizeof err) != 0 && o == NULL &&
            strstr(err, "broadcast: cannot broadcast [3] to [4]"),
        "%s", err);
  kl_shape s3 = kl_shape_make(1, S(3));
  CHECK(kl_ref_broadcast(col, &s3, &o, err, sizeof err) != 0 && strstr(err, "lower-rank"), "%s", err);
  kl_shape sneg = kl_shape_make(2, S(-2, 3));
  CHECK(kl_ref_broadcast(v, &sneg, &o, err, sizeof err) != 0 && o == NULL && strstr(err, "broadcast: negative size"),
        "%s", err);
  /* transpose */
  kl_tensor *m = T(KL_DT_I32, 2, S(2, 3), V(1, 2, 3, 4, 5, 6));
  CHECK(kl_ref_transpose(m, 2, (int[]){ 1, 0 }, &o, err, sizeof err) == 0 && is(o, 2, S(3, 2), V(1, 4, 2, 5, 3, 6), 0),
        "transpose 2-D");
  REL(o);
  kl_tensor *t4 = R(KL_DT_F32, 4, S(2, 3, 4, 5), 3, NULL);
  CHECK(kl_ref_transpose(t4, 4, (int[]){ 0, 2, 3, 1 }, &o, err, sizeof err) == 0 && o->shape[1] == 4 &&
            o->shape[3] == 3,
        "transpose 4-D");
  bool ok = true;
  for (int64_t n = 0; n < 2; n++)
    for (int64_t c = 0; c < 3; c++)
      for (int64_t h = 0; h < 4; h++)
        for (int64_t w = 0; w < 5; w++) ok = ok && kl_tensor_get(o, S(n, h, w, c)) == kl_tensor_get(t4, S(n, c, h, w));
  CHECK(ok, "transpose values");
  /* transposing to NHWC logical equals the memory of as_layout("NHWC") */
  kl_tensor *nhwc = kl_tensor_as_layout(t4, "NHWC", err, sizeof err);
  CHECK(memcmp(o->data, nhwc->data, o->nbytes) == 0, "transpose(0,2,3,1) data = NHWC layout data");
  REL(o);
  CHECK(kl_ref_transpose(m, 2, (int[]){ 0, 0 }, &o, err, sizeof err) != 0 &&
            strstr(err, "transpose: [0,0] is not a permutation of the axes of [2,3]"),
        "%s", err);
  CHECK(kl_ref_transpose(m, 3, (int[]){ 0, 1, 2 }, &o, err, sizeof err) != 0 && strstr(err, "transpose:"), "%s", err);
  /* reshape (logical row-major, from any layout) */
  CHECK(kl_ref_reshape(m, 2, S(3, 2), &o, err, sizeof err) == 0 && is(o, 2, S(3, 2), V(1, 2, 3, 4, 5, 6), 0),
        "reshape");
  REL(o);
  CHECK(kl_ref_reshape(m, 3, S(-1, 1, 2), &o, err, sizeof err) == 0 && is(o, 3, S(3, 1, 2), V(1, 2, 3, 4, 5, 6), 0),
        "reshape -1");
  REL(o);
  kl_tensor *mt = kl_tensor_as_layout(m, "col_major", err, sizeof err);
  CHECK(kl_ref_reshape(mt, 1, S(6), &o, err, sizeof err) == 0 && is(o, 1, S(6), V(1, 2, 3, 4, 5, 6), 0),
        "reshape of col-major input is logical");
  REL(o);
  CHECK(kl_ref_reshape(m, 2, S(4, 2), &o, err, sizeof err) != 0 &&
            strstr(err, "reshape: cannot reshape [2,3] (6 elements) to [4,2]"),
        "%s", err);
  CHECK(kl_ref_reshape(m, 2, S(-1, 4), &o, err, sizeof err) != 0 && strstr(err, "reshape:"), "%s", err);
  CHECK(kl_ref_reshape(m, 2, S(-1, -1), &o, err, sizeof err) != 0 && strstr(err, "reshape:"), "%s", err);
  CHECK(kl_ref_reshape(m, 2, S(-2, -3), &o, err, sizeof err) != 0 && o == NULL &&
            strstr(err, "reshape: bad target shape [-2,-3]"),
        "%s", err);
  /* slice */
  double ten[10] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
  kl_tensor *r10 = T(KL_DT_F32, 1, S(10), ten);
  CHECK(kl_ref_slice(r10, S(1), S(8), S(3), &o, err, sizeof err) == 0 && is(o, 1, S(3), V(1, 4, 7), 0), "slice step 3");
  REL(o);
  CHECK(kl_ref_slice(r10, S(-3), S(10), NULL, &o, err, sizeof err) == 0 && is(o, 1, S(3), V(7, 8, 9), 0),
        "slice negative begin");
  REL(o);
  CHECK(kl_ref_slice(r10, S(5), S(2), NULL, &o, err, sizeof err) == 0 && o->shape[0] == 0, "empty slice");
  REL(o);
  CHECK(kl_ref_slice(m, S(1, 0), S(2, 3), S(1, 2), &o, err, sizeof err) == 0 && is(o, 2, S(1, 2), V(4, 6), 0),
        "2-D slice");
  REL(o);
  CHECK(kl_ref_slice(r10, S(0), S(11), NULL, &o, err, sizeof err) != 0 &&
            strstr(err, "slice: range [0, 11) out of bounds on axis 0 of [10]"),
        "%s", err);
  CHECK(kl_ref_slice(r10, S(0), S(5), S(0), &o, err, sizeof err) != 0 && strstr(err, "slice: step 0"), "%s", err);
  /* concat */
  kl_tensor *m2 = T(KL_DT_I32, 2, S(1, 3), V(7, 8, 9));
  const kl_tensor *pair0[] = { m, m2 };
  CHECK(kl_ref_concat(2, pair0, 0, &o, err, sizeof err) == 0 && is(o, 2, S(3, 3), V(1, 2, 3, 4, 5, 6, 7, 8, 9), 0),
        "concat axis 0");
  REL(o);
  kl_tensor *m3 = T(KL_DT_I32, 2, S(2, 1), V(-1, -2));
  const kl_tensor *pair1[] = { m3, mt, m3 };
  CHECK(kl_ref_concat(3, pair1, -1, &o, err, sizeof err) == 0 &&
            is(o, 2, S(2, 5), V(-1, 1, 2, 3, -1, -2, 4, 5, 6, -2), 0),
        "concat axis -1, mixed layouts");
  REL(o);
  const kl_tensor *badp[] = { m, m3 };
  CHECK(kl_ref_concat(2, badp, 0, &o, err, sizeof err) != 0 && o == NULL &&
            strstr(err, "concat: input 1 has shape [2,1], incompatible with [2,3] along axis 0"),
        "%s", err);
  CHECK(kl_ref_concat(2, pair0, 2, &o, err, sizeof err) != 0 && strstr(err, "concat: axis 2 out of range"), "%s", err);
  const kl_tensor *mixed[] = { m, v };
  CHECK(kl_ref_concat(2, mixed, 0, &o, err, sizeof err) != 0 && strstr(err, "concat:"), "%s", err);
  CHECK(kl_ref_concat(0, mixed, 0, &o, err, sizeof err) != 0 && strstr(err, "concat:"), "%s", err);
  kl_tensor *ts[] = { v, col, m, t4, nhwc, mt, r10, m2, m3 };
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) kl_tensor_release(ts[i]);
  GROUP("broadcast, transpose, reshape, slice, concat");
}

/* ---------------------------------------------------------------- reduce, softmax */

static void test_reduce_softmax(void) {
  kl_tensor *o = NULL;
  kl_tensor *m = T(KL_DT_F32, 2, S(2, 3), V(1, 2, 3, 4, 5, 6));
  CHECK(kl_ref_reduce(KL_RED_SUM, m, 1, (int[]){ 1 }, false, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 1, S(2), V(6, 15), 0),
        "sum axis 1");
  REL(o);
  CHECK(kl_ref_reduce(KL_RED_SUM, m, 1, (int[]){ -1 }, true, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 2, S(2, 1), V(6, 15), 0),
        "sum keepdims");
  REL(o);
  CHECK(kl_ref_reduce(KL_RED_MAX, m, 1, (int[]){ 0 }, false, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 1, S(3), V(4, 5, 6), 0),
        "max axis 0");
  REL(o);
  CHECK(kl_ref_reduce(KL_RED_MIN, m, 1, (int[]){ 0 }, false, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 1, S(3), V(1, 2, 3), 0),
        "min axis 0");
  REL(o);
  CHECK(kl_ref_reduce(KL_RED_MEAN, m, 2, (int[]){ 1, 0 }, false, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 0, NULL, V(3.5), 0),
        "mean all");
  REL(o);
  CHECK(kl_ref_reduce(KL_RED_MEAN, m, 2, (int[]){ 0, 1 }, true, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 2, S(1, 1), V(3.5), 0),
        "mean all keepdims");
  REL(o);
  CHECK(kl_ref_reduce(KL_RED_SUM, m, 0, NULL, false, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 2, S(2, 3), V(1, 2, 3, 4, 5, 6), 0),
        "no axes: copy");
  REL(o);
  kl_tensor *x3 = R(KL_DT_F32, 3, S(3, 4, 5), 8, "col_major");
  CHECK(kl_ref_reduce(KL_RED_SUM, x3, 2, (int[]){ 0, 2 }, false, KL_DT_F64, &o, err, sizeof err) == 0 &&
            o->shape[0] == 4,
        "sum 0,2");
  bool ok = true;
  for (int64_t j = 0; j < 4; j++) {
    double s = 0;
    for (int64_t i = 0; i < 3; i++)
      for (int64_t k = 0; k < 5; k++) s += kl_tensor_get(x3, S(i, j, k));
    ok = ok && fabs(kl_tensor_get(o, S(j)) - s) < 1e-12;
  }
  CHECK(ok, "sum over 0,2 vs loops (col-major input)");
  REL(o);
  kl_tensor *mi = T(KL_DT_I8, 2, S(2, 3), V(100, 100, 100, -7, 0, 0));
  CHECK(kl_ref_reduce(KL_RED_SUM, mi, 1, (int[]){ 1 }, false, KL_DT_I32, &o, err, sizeof err) == 0 &&
            is(o, 1, S(2), V(300, -7), 0),
        "int sum in int64");
  REL(o);
  CHECK(kl_ref_reduce(KL_RED_SUM, mi, 1, (int[]){ 1 }, false, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 1, S(2), V(44, -7), 0),
        "int sum wraps on store into i8");
  REL(o);
  CHECK(kl_ref_reduce(KL_RED_MEAN, mi, 1, (int[]){ 1 }, false, KL_DT_I32, &o, err, sizeof err) == 0 &&
            is(o, 1, S(2), V(100, -2), 0),
        "int mean truncates");
  REL(o);
  CHECK(kl_ref_reduce(KL_RED_MEAN, mi, 1, (int[]){ 1 }, false, KL_DT_F32, &o, err, sizeof err) == 0 &&
            is(o, 1, S(2), V(100, -7.0 / 3), 1e-6),
        "int mean into f32");
  REL(o);
  CHECK(kl_ref_reduce(KL_RED_SUM, m, 2, (int[]){ 1, -1 }, false, KL_DT_NONE, &o, err, sizeof err) != 0 && o == NULL &&
            strstr(err, "reduce_sum: axis -1 given twice for shape [2,3]"),
        "%s", err);
  CHECK(kl_ref_reduce(KL_RED_MAX, m, 1, (int[]){ 2 }, false, KL_DT_NONE, &o, err, sizeof err) != 0 &&
            strstr(err, "reduce_max: axis 2 out of range for shape [2,3]"),
        "%s", err);
  CHECK(kl_reduce_from_name("sum") == KL_RED_SUM && kl_reduce_from_name("reduce_mean") == KL_RED_MEAN, "names");
  /* softmax */
  kl_tensor *s = T(KL_DT_F64, 2, S(2, 3), V(1, 2, 3, 1000, 1001, 1002));
  double e1 = exp(-2), e2 = exp(-1), z = e1 + e2 + 1;
  CHECK(kl_ref_softmax(s, 1, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 2, S(2, 3), V(e1 / z, e2 / z, 1 / z, e1 / z, e2 / z, 1 / z), 1e-15),
        "softmax hand (large values do not overflow)");
  REL(o);
  CHECK(kl_ref_softmax(s, 0, KL_DT_NONE, &o, err, sizeof err) == 0 && fabs(kl_tensor_get(o, S(0, 0))) < 1e-300 &&
            kl_tensor_get(o, S(1, 2)) == 1,
        "softmax axis 0");
  REL(o);
  kl_tensor *rs = R(KL_DT_F32, 3, S(4, 7, 33), 21, "0,2,1");
  CHECK(kl_ref_softmax(rs, -1, KL_DT_F64, &o, err, sizeof err) == 0, "softmax random");
  kl_tensor *sum = NULL;
  CHECK(kl_ref_reduce(KL_RED_SUM, o, 1, (int[]){ 2 }, false, KL_DT_NONE, &sum, err, sizeof err) == 0, "row sums");
  ok = true;
  for (int64_t i = 0; i < 28; i++) ok = ok && fabs(kl_tensor_get_flat(sum, i) - 1) < 1e-12;
  bool pos = true;
  for (int64_t i = 0; i < kl_tensor_numel(o); i++) pos = pos && kl_tensor_get_flat(o, i) > 0;
  CHECK(ok && pos, "rows sum to 1, entries positive");
  REL(o);
  REL(sum);
  CHECK(kl_ref_softmax(rs, 3, KL_DT_NONE, &o, err, sizeof err) != 0 &&
            strstr(err, "softmax: axis 3 out of range for shape [4,7,33]"),
        "%s", err);
  kl_tensor_release(m);
  kl_tensor_release(x3);
  kl_tensor_release(mi);
  kl_tensor_release(s);
  kl_tensor_release(rs);
  GROUP("reduce, softmax");
}

/* ---------------------------------------------------------------- dot */

/* Naive batched matmul through logical get() with numpy batch broadcasting. */
static void naive_dot(const kl_tensor *a, const kl_tensor *b, bool ta, bool tb, kl_tensor *o) {
  int ra = a->rank, rb = b->rank, ro = o->rank;
  int64_t M = o->shape[ro - 2], N = o->shape[ro - 1], K = ta ? a->shape[ra - 2] : a->shape[ra - 1];
  int64_t nb = 1;
  for (int d = 0; d < ro - 2; d++) nb *= o->shape[d];
  for (int64_t bi = 0; bi < nb; bi++) {
    int64_t oi[8], ai[8], bidx[8], rem = bi;
    for (int d = ro - 3; d >= 0; d--) {
      oi[d] = rem % o->shape[d];
      rem /= o->shape[d];
    }
    for (int d = 0; d < ra - 2; d++) {
      int od = d + (ro - ra);
      ai[d] = a->shape[d] == 1 ? 0 : oi[od];
    }
    for (int d = 0; d < rb - 2; d++) {
      int od = d + (ro - rb);
      bidx[d] = b->shape[d] == 1 ? 0 : oi[od];
    }
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double acc = 0;
        for (int64_t k = 0; k < K; k++) {
          ai[ra - 2] = ta ? k : i;
          ai[ra - 1] = ta ? i : k;
          bidx[rb - 2] = tb ? j : k;
          bidx[rb - 1] = tb ? k : j;
          acc += kl_tensor_get(a, ai) * kl_tensor_get(b, bidx);
        }
        oi[ro - 2] = i;
        oi[ro - 1] = j;
        kl_tensor_set(o, oi, acc);
      }
  }
}

static void test_dot(void) {
  kl_tensor *o = NULL;
  kl_tensor *a = T(KL_DT_F32, 2, S(2, 3), V(1, 2, 3, 4, 5, 6)), *b = T(KL_DT_F32, 2, S(3, 2), V(7, 8, 9, 10, 11, 12));
  CHECK(kl_ref_dot(a, b, false, false, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 2, S(2, 2), V(58, 64, 139, 154), 0),
        "2x3 @ 3x2");
  REL(o);
  CHECK(kl_ref_dot(a, a, false, true, KL_DT_NONE, &o, err, sizeof err) == 0 && is(o, 2, S(2, 2), V(14, 32, 32, 77), 0),
        "A A^T");
  REL(o);
  CHECK(kl_ref_dot(a, a, true, false, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 2, S(3, 3), V(17, 22, 27, 22, 29, 36, 27, 36, 45), 0),
        "A^T A");
  REL(o);
  CHECK(kl_ref_dot(b, a, true, true, KL_DT_NONE, &o, err, sizeof err) == 0 && is(o, 2, S(2, 2), V(58, 139, 64, 154), 0),
        "B^T A^T");
  REL(o);
  kl_tensor *i8a = T(KL_DT_I8, 2, S(1, 3), V(100, 100, 100)), *i8b = T(KL_DT_I8, 2, S(3, 1), V(100, 100, 100));
  CHECK(kl_ref_dot(i8a, i8b, false, false, KL_DT_I32, &o, err, sizeof err) == 0 && is(o, 2, S(1, 1), V(30000), 0),
        "i8 dot accumulates exactly");
  REL(o);
  CHECK(kl_ref_dot(i8a, i8b, false, false, KL_DT_NONE, &o, err, sizeof err) == 0 && o->dtype == KL_DT_I32 &&
            is(o, 2, S(1, 1), V(30000), 0),
        "i8 dot defaults to i32");
  CHECK(kl_contraction_dtype(KL_DT_I8) == KL_DT_I32 && kl_contraction_dtype(KL_DT_I1) == KL_DT_I32 &&
            kl_contraction_dtype(KL_DT_I32) == KL_DT_I32 && kl_contraction_dtype(KL_DT_I64) == KL_DT_I64 &&
            kl_contraction_dtype(KL_DT_F16) == KL_DT_F16 && kl_contraction_dtype(KL_DT_BF16) == KL_DT_BF16,
        "contraction dtypes");
  REL(o);
  /* errors */
  kl_tensor *c = kl_tensor_zeros(KL_DT_F32, 2, S(4, 5), NULL, err, sizeof err);
  CHECK(kl_ref_dot(a, c, false, false, KL_DT_NONE, &o, err, sizeof err) != 0 && o == NULL &&
            strstr(err, "dot: inner dimensions differ: [2,3] x [4,5]") == err,
        "%s", err);
  kl_tensor *v = T(KL_DT_F32, 1, S(3), V(1, 2, 3));
  CHECK(kl_ref_dot(v, b, false, false, KL_DT_NONE, &o, err, sizeof err) != 0 &&
            strstr(err, "dot: operands need rank >= 2: [3] x [3,2]"),
        "%s", err);
  kl_tensor *b3 = kl_tensor_zeros(KL_DT_F32, 3, S(2, 3, 4), NULL, err, sizeof err),
            *b4 = kl_tensor_zeros(KL_DT_F32, 3, S(3, 4, 2), NULL, err, sizeof err);
  CHECK(kl_ref_dot(b3, b4, false, false, KL_DT_NONE, &o, err, sizeof err) != 0 &&
            strstr(err, "dot: batch dimensions do not broadcast: [2,3,4] x [3,4,2]"),
        "%s", err);
  /* random shapes, transposes, batch broadcasting and layouts vs the naive loop */
  kl_rng r;
  kl_rng_seed(&r, 2024, 3);
  int bad = 0;
  const char *lay3[] = { NULL, "col_major", "0,2,1", "1,0,2" };
  for (int it = 0; it < 40; it++) {
    bool ta = kl_rng_below(&r, 2), tb = kl_rng_below(&r, 2);
    int64_t M = 1 + kl_rng_below(&r, 9), N = 1 + kl_rng_below(&r, 9), K = 1 + kl_rng_below(&r, 17);
    int64_t B1 = 1 + kl_rng_below(&r, 3);
    int64_t sa[3] = { B1, ta ? K : M, ta ? M : K };
    int64_t sbb[3] = { 1, tb ? N : K, tb ? K : N };
    int ra = kl_rng_below(&r, 2) ? 3 : 2, rb = kl_rng_below(&r, 2) ? 3 : 2;
    kl_tensor *x = R(it % 3 ? KL_DT_F32 : KL_DT_F16, ra, ra == 3 ? sa : sa + 1, 100 + it,
                     ra == 3 ? lay3[it % 4] : (it % 2 ? "col_major" : NULL));
    kl_tensor *y = R(KL_DT_F32, rb, rb == 3 ? sbb : sbb + 1, 200 + it, rb == 3 ? lay3[(it / 4) % 4] : NULL);
    kl_tensor *got = NULL;
    if (kl_ref_dot(x, y, ta, tb, KL_DT_F64, &got, err, sizeof err)) {
      bad++;
      fprintf(stderr, "    %s\n", err);
    } else {
      kl_tensor *want = kl_tensor_zeros(KL_DT_F64, got->rank, got->shape, NULL, err, sizeof err);
      naive_dot(x, y, ta, tb, want);
      if (!same(got, want, 1e-12, 1e-12)) bad++;
      if (got->rank != (ra > rb ? ra : rb) || got->shape[got->rank - 2] != M || got->shape[got->rank - 1] != N) bad++;
      kl_tensor_release(want);
    }
    kl_tensor_release(x);
    kl_tensor_release(y);
    kl_tensor_release(got);
  }
  CHECK(bad == 0, "%d random dots differ from the naive loop", bad);
  /* batch broadcast [2,1,2,3] x [3,3,4] -> [2,3,2,4] */
  kl_tensor *ba = R(KL_DT_F32, 4, S(2, 1, 2, 3), 5, NULL), *bb = R(KL_DT_F32, 3, S(3, 3, 4), 6, NULL);
  CHECK(kl_ref_dot(ba, bb, false, false, KL_DT_F64, &o, err, sizeof err) == 0 && o->rank == 4 && o->shape[0] == 2 &&
            o->shape[1] == 3 && o->shape[2] == 2 && o->shape[3] == 4,
        "batch broadcast shape");
  kl_tensor *want = kl_tensor_zeros(KL_DT_F64, 4, S(2, 3, 2, 4), NULL, err, sizeof err);
  naive_dot(ba, bb, false, false, want);
  CHECK(same(o, want, 1e-12, 1e-12), "batch broadcast values");
  REL(o);
  kl_tensor_release(want);
  kl_tensor *ts[] = { a, b, i8a, i8b, c, v, b3, b4, ba, bb };
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) kl_tensor_release(ts[i]);
  GROUP("dot");
}

/* ---------------------------------------------------------------- conv2d */

/* Naive conv through logical get() (independent of the kernel's packing). */
static void naive_conv(const kl_tensor *in, const kl_tensor *f, const kl_conv2d_params *p, kl_tensor *o) {
  int64_t G = p->groups, KG = f->shape[0] / G, CG = f->shape[1];
  for (int64_t n = 0; n < o->shape[0]; n++)
    for (int64_t k = 0; k < o->shape[1]; k++)
      for (int64_t ho = 0; ho < o->shape[2]; ho++)
        for (int64_t wo = 0; wo < o->shape[3]; wo++) {
          double acc = 0;
          for (int64_t c = 0; c < CG; c++)
            for (int64_t y = 0; y < f->shape[2]; y++)
              for (int64_t x = 0; x < f->shape[3]; x++) {
                int64_t h = ho * p->stride[0] + y * p->dilation[0] - p->pad[0];
                int64_t w = wo * p->stride[1] + x * p->dilation[1] - p->pad[2];
                if (h < 0 || w < 0 || h >= in->shape[2] || w >= in->shape[3]) continue;
                acc += kl_tensor_get(in, S(n, (k / KG) * CG + c, h, w)) * kl_tensor_get(f, S(k, c, y, x));
              }
          kl_tensor_set(o, S(n, k, ho, wo), acc);
        }
}

static void test_conv(void) {
  kl_tensor *o = NULL;
  kl_conv2d_params p = KL_CONV2D_DEFAULT;
  kl_tensor *in = T(KL_DT_F32, 4, S(1, 1, 3, 3), V(1, 2, 3, 4, 5, 6, 7, 8, 9));
  kl_tensor *ones = T(KL_DT_F32, 4, S(1, 1, 2, 2), V(1, 1, 1, 1));
  CHECK(kl_ref_conv2d(in, ones, &p, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 4, S(1, 1, 2, 2), V(12, 16, 24, 28), 0),
        "2x2 ones");
  REL(o);
  kl_conv2d_params p2 = { { 2, 2 }, { 1, 1, 1, 1 }, { 1, 1 }, 1 };
  CHECK(kl_ref_conv2d(in, ones, &p2, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 4, S(1, 1, 2, 2), V(1, 5, 11, 28), 0),
        "pad 1 stride 2");
  REL(o);
  kl_conv2d_params p3 = { { 1, 1 }, { 0, 0, 0, 0 }, { 2, 2 }, 1 };
  CHECK(kl_ref_conv2d(in, ones, &p3, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 4, S(1, 1, 1, 1), V(1 + 3 + 7 + 9), 0),
        "dilation 2");
  REL(o);
  kl_conv2d_params pa = { { 1, 1 }, { 0, 1, 2, 0 }, { 1, 1 }, 1 }; /* bottom 1, left 2 */
  CHECK(kl_ref_conv2d(in, ones, &pa, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            is(o, 4, S(1, 1, 3, 4), V(0, 5, 12, 16, 0, 11, 24, 28, 0, 7, 15, 17), 0),
        "asymmetric padding (bottom 1, left 2)");
  REL(o);
  /* output size formula: H=7, pads (1,2), dil 2, Y=3, stride 2 -> (7+3-4-1)/2+1 = 3 */
  kl_shape si = kl_shape_make(4, S(2, 4, 7, 9)), sf = kl_shape_make(4, S(6, 2, 3, 2)), so;
  kl_conv2d_params pf = { { 2, 3 }, { 1, 2, 0, 1 }, { 2, 1 }, 2 };
  CHECK(kl_infer_conv2d(&si, &sf, &pf, &so, err, sizeof err) == 0 && so.dim[0] == 2 && so.dim[1] == 6 &&
            so.dim[2] == 3 && so.dim[3] == (9 + 0 + 1 - 1 * 1 - 1) / 3 + 1,
        "infer %s", err);
  /* one-hot filters reproduce strided slices of the input */
  kl_tensor *x = R(KL_DT_F32, 4, S(2, 3, 11, 10), 7, NULL);
  kl_conv2d_params ps = { { 2, 3 }, { 0, 0, 0, 0 }, { 2, 1 }, 1 };
  struct {
    int64_t c, y, xx;
  } hot[3] = { { 0, 0, 0 }, { 2, 1, 2 }, { 1, 2, 1 } };
  kl_tensor *f = kl_tensor_zeros(KL_DT_F32, 4, S(3, 3, 3, 3), NULL, err, sizeof err);
  for (int k = 0; k < 3; k++) kl_tensor_set(f, S(k, hot[k].c, hot[k].y, hot[k].xx), 1);
  CHECK(kl_ref_conv2d(x, f, &ps, KL_DT_NONE, &o, err, sizeof err) == 0 && o->shape[2] == 4 && o->shape[3] == 3,
        "one-hot conv %s", err);
  int64_t Ho = o->shape[2], Wo = o->shape[3];
  for (int k = 0; k < 3; k++) {
    kl_tensor *sl = NULL, *ok_ = NULL;
    int64_t b[4] = { 0, hot[k].c, hot[k].y * 2, hot[k].xx },
            e[4] = { 2, hot[k].c + 1, hot[k].y * 2 + 2 * (Ho - 1) + 1, hot[k].xx + 3 * (Wo - 1) + 1 };
    int64_t st[4] = { 1, 1, 2, 3 };
    kl_ref_slice(x, b, e, st, &sl, err, sizeof err);
    kl_ref_slice(o, S(0, k, 0, 0), S(2, k + 1, Ho, Wo), NULL, &ok_, err, sizeof err);
    CHECK(sl && ok_ && same(ok_, sl, 0, 0), "one-hot k=%d equals slice", k);
    kl_tensor_release(sl);
    kl_tensor_release(ok_);
  }
  REL(o);
  /* random convs vs the naive loop, including groups, asymmetric pads and f16 */
  kl_rng r;
  kl_rng_seed(&r, 99, 1);
  int bad = 0;
  for (int it = 0; it < 30; it++) {
    int64_t G = 1 + kl_rng_below(&r, 3), CG = 1 + kl_rng_below(&r, 3), KG = 1 + kl_rng_below(&r, 3);
    int64_t Y = 1 + kl_rng_below(&r, 3), X = 1 + kl_rng_below(&r, 3);
    kl_conv2d_params q = { { 1 + kl_rng_below(&r, 2), 1 + kl_rng_below(&r, 3) },
                           { kl_rng_below(&r, 2), kl_rng_below(&r, 3), kl_rng_below(&r, 2), kl_rng_below(&r, 2) },
                           { 1 + kl_rng_below(&r, 2), 1 + kl_rng_below(&r, 2) },
                           G };
    int64_t H = (Y - 1) * q.dilation[0] + 1 + kl_rng_below(&r, 6),
            W = (X - 1) * q.dilation[1] + 1 + kl_rng_below(&r, 6);
    int64_t N = 1 + kl_rng_below(&r, 2);
    kl_dtype dt = it % 4 == 3 ? KL_DT_F16 : KL_DT_F32;
    kl_tensor *xi = R(dt, 4, S(N, G * CG, H, W), 300 + it, it % 2 ? "NHWC" : "NCHW");
    kl_tensor *fi = R(dt, 4, S(G * KG, CG, Y, X), 400 + it, it % 3 ? "KCYX" : "KYXC");
    kl_tensor *got = NULL;
    if (kl_ref_conv2d(xi, fi, &q, KL_DT_F64, &got, err, sizeof err)) {
      bad++;
      fprintf(stderr, "    %s\n", err);
    } else {
      kl_tensor *want = kl_tensor_zeros(KL_DT_F64, 4, got->shape, NULL, err, sizeof err);
      naive_conv(xi, fi, &q, want);
      if (!same(got, want, 1e-12, 1e-12)) bad++;
      kl_tensor_release(want);
      /* the same conv stored as f16 is the f16 rounding of the f64 result */
      kl_tensor *h = NULL;
      kl_ref_conv2d(xi, fi, &q, KL_DT_F16, &h, err, sizeof err);
      for (int64_t i = 0; h && i < kl_tensor_numel(h); i++)
        if (kl_tensor_get_flat(h, i) != kl_round_f16(kl_tensor_get_flat(got, i))) {
          bad++;
          break;
        }
      kl_tensor_release(h);
    }
    kl_tensor_release(xi);
    kl_tensor_release(fi);
    kl_tensor_release(got);
  }
  CHECK(bad == 0, "%d random convs differ from the naive loop", bad);
  /* NHWC / KYXC operands and an NHWK destination give the same logical result as NCHW */
  kl_tensor *xn = R(KL_DT_F32, 4, S(2, 4, 9, 8), 17, NULL), *fn = R(KL_DT_F32, 4, S(6, 4, 3, 3), 18, NULL);
  kl_conv2d_params pq = { { 2, 1 }, { 1, 1, 0, 2 }, { 1, 2 }, 1 };
  kl_tensor *ref = NULL;
  CHECK(kl_ref_conv2d(xn, fn, &pq, KL_DT_NONE, &ref, err, sizeof err) == 0, "nchw conv");
  kl_tensor *x2 = kl_tensor_as_layout(xn, "NHWC", err, sizeof err),
            *f2 = kl_tensor_as_layout(fn, "KYXC", err, sizeof err);
  int64_t ost[4];
  kl_layout_strides("NHWK", 4, ref->shape, ost, err, sizeof err);
  kl_tensor *dst = kl_tensor_zeros(KL_DT_F32, 4, ref->shape, ost, err, sizeof err);
  o = dst;
  CHECK(kl_ref_conv2d(x2, f2, &pq, KL_DT_NONE, &o, err, sizeof err) == 0 && o == dst, "nhwc conv into NHWK");
  CHECK(same(dst, ref, 0, 0) && !kl_tensor_same_layout(dst, ref), "NHWC == NCHW logically (bitwise)");
  kl_tensor_release(dst);
  kl_tensor_release(x2);
  kl_tensor_release(f2);
  o = NULL;
  /* grouped conv == per-group convs concatenated along K */
  int64_t G = 3, CG = 2, KG = 2;
  kl_tensor *xg = R(KL_DT_F32, 4, S(2, G * CG, 6, 7), 31, "NHWC"), *fg = R(KL_DT_F32, 4, S(G * KG, CG, 3, 2), 32, NULL);
  kl_conv2d_params pg = { { 1, 2 }, { 1, 0, 1, 1 }, { 1, 1 }, G };
  kl_tensor *grouped = NULL;
  CHECK(kl_ref_conv2d(xg, fg, &pg, KL_DT_NONE, &grouped, err, sizeof err) == 0, "grouped conv %s", err);
  kl_tensor *parts[3] = { 0 };
  kl_conv2d_params p1 = pg;
  p1.groups = 1;
  for (int g = 0; g < G; g++) {
    kl_tensor *xs = NULL, *fs = NULL;
    kl_ref_slice(xg, S(0, g * CG, 0, 0), S(2, (g + 1) * CG, 6, 7), NULL, &xs, err, sizeof err);
    kl_ref_slice(fg, S(g * KG, 0, 0, 0), S((g + 1) * KG, CG, 3, 2), NULL, &fs, err, sizeof err);
    CHECK(kl_ref_conv2d(xs, fs, &p1, KL_DT_NONE, &parts[g], err, sizeof err) == 0, "group %d", g);
    kl_tensor_release(xs);
    kl_tensor_release(fs);
  }
  kl_tensor *cat = NULL;
  CHECK(kl_ref_concat(3, (const kl_tensor *const *)parts, 1, &cat, err, sizeof err) == 0 && same(grouped, cat, 0, 0),
        "grouped == concat of per-group convs");
  for (int g = 0; g < G; g++) kl_tensor_release(parts[g]);
  kl_tensor_release(cat);
  kl_tensor_release(grouped);
  kl_tensor_release(xg);
  kl_tensor_release(fg);
  /* integer conv: i8 x i8 -> i32 exact */
  kl_tensor *xi8 = T(KL_DT_I8, 4, S(1, 2, 1, 2), V(127, 127, 127, 127)),
            *fi8 = T(KL_DT_I8, 4, S(1, 2, 1, 2), V(127, 127, 127, 127));
  CHECK(kl_ref_conv2d(xi8, fi8, &p, KL_DT_I32, &o, err, sizeof err) == 0 &&
            is(o, 4, S(1, 1, 1, 1), V(4 * 127 * 127), 0),
        "i8 conv -> i32");
  REL(o);
  CHECK(kl_ref_conv2d(xi8, fi8, &p, KL_DT_NONE, &o, err, sizeof err) == 0 && o->dtype == KL_DT_I32 &&
            is(o, 4, S(1, 1, 1, 1), V(4 * 127 * 127), 0),
        "i8 conv defaults to i32 (kl_contraction_dtype)");
  REL(o);
  CHECK(kl_ref_conv2d(xi8, fi8, &p, KL_DT_I8, &o, err, sizeof err) == 0 &&
            is(o, 4, S(1, 1, 1, 1), V((int8_t)(uint8_t)(4 * 127 * 127)), 0),
        "i8 conv -> i8 wraps");
  REL(o);
  /* errors name conv2d and the shapes */
  kl_tensor *r3 = kl_tensor_zeros(KL_DT_F32, 3, S(1, 3, 3), NULL, err, sizeof err);
  CHECK(kl_ref_conv2d(r3, ones, &p, KL_DT_NONE, &o, err, sizeof err) != 0 && o == NULL &&
            strstr(err, "conv2d: input must have rank 4 (N,C,H,W), got [1,3,3]"),
        "%s", err);
  kl_tensor *f3 = kl_tensor_zeros(KL_DT_F32, 4, S(4, 2, 3, 3), NULL, err, sizeof err),
            *x3 = kl_tensor_zeros(KL_DT_F32, 4, S(1, 3, 8, 8), NULL, err, sizeof err);
  CHECK(kl_ref_conv2d(x3, f3, &p, KL_DT_NONE, &o, err, sizeof err) != 0 && strstr(err, "conv2d: channels differ") &&
            strstr(err, "[1,3,8,8]") && strstr(err, "[4,2,3,3]"),
        "%s", err);
  kl_conv2d_params pg2 = p;
  pg2.groups = 2;
  CHECK(kl_ref_conv2d(x3, f3, &pg2, KL_DT_NONE, &o, err, sizeof err) != 0 &&
            strstr(err, "conv2d: input [1,3,8,8] has C=3, not divisible by groups=2"),
        "%s", err);
  kl_tensor *fbig = kl_tensor_zeros(KL_DT_F32, 4, S(1, 1, 4, 2), NULL, err, sizeof err);
  CHECK(kl_ref_conv2d(in, fbig, &p, KL_DT_NONE, &o, err, sizeof err) != 0 &&
            strstr(err, "conv2d: dilated filter window 4x2") && strstr(err, "[1,1,3,3]"),
        "%s", err);
  kl_conv2d_params p0 = p;
  p0.stride[1] = 0;
  CHECK(kl_ref_conv2d(in, ones, &p0, KL_DT_NONE, &o, err, sizeof err) != 0 &&
            strstr(err, "conv2d: stride must be >= 1"),
        "%s", err);
  kl_conv2d_params pn = p;
  pn.pad[2] = -1;
  CHECK(kl_ref_conv2d(in, ones, &pn, KL_DT_NONE, &o, err, sizeof err) != 0 && strstr(err, "conv2d: padding"), "%s",
        err);
  CHECK(kl_ref_conv2d(in, ones, NULL, KL_DT_NONE, &o, err, sizeof err) != 0 && o == NULL, "no params");
  kl_tensor *ts[] = { in, ones, x, f, xn, fn, ref, xi8, fi8, r3, f3, x3, fbig };
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) kl_tensor_release(ts[i]);
  GROUP("conv2d");
}

/* max/min are IEEE 754-2019 maximum/minimum, so commutative (CSE may swap operands): NaN
 * if either operand is NaN, else -0 < +0; relu(-0) = +0; reduce_max/min of ±0 ignore order. */
static bool bits_eq(double a, double b) { return isnan(a) ? isnan(b) : (a == b && signbit(a) == signbit(b)); }
static void test_maxmin_signed_zero(void) {
  const double v[] = { -0.0, 0.0, -1, 1, NAN, -INFINITY, INFINITY };
  int n = (int)(sizeof v / sizeof v[0]), bad = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      double a = v[i], b = v[j], mx, mn;
      if (isnan(a) || isnan(b))
        mx = mn = NAN;
      else if (a == b) {
        mx = signbit(a) ? b : a;
        mn = signbit(a) ? a : b;
      } else {
        mx = a > b ? a : b;
        mn = a < b ? a : b;
      }
      if (!bits_eq(kl_binop_f64(KL_BIN_MAX, a, b), mx) || !bits_eq(kl_binop_f64(KL_BIN_MIN, a, b), mn)) {
        fprintf(stderr, "    max/min(%g, %g) = %g / %g, want %g / %g\n", a, b, kl_binop_f64(KL_BIN_MAX, a, b),
                kl_binop_f64(KL_BIN_MIN, a, b), mx, mn);
        bad++;
      }
    }
  CHECK(bad == 0, "max/min over all ordered pairs of -0 +0 -1 1 nan -inf inf");
  CHECK(bits_eq(kl_unop_f64(KL_UN_RELU, -0.0), 0.0), "relu(-0) = +0");
  CHECK(kl_unop_f64(KL_UN_ROUND, 2.5) == 2 && kl_unop_f64(KL_UN_ROUND, 3.5) == 4 &&
            bits_eq(kl_unop_f64(KL_UN_ROUND, -0.5), -0.0) && kl_unop_f64(KL_UN_ROUND, -1.5) == -2,
        "round: ties to even");
  CHECK(kl_binop_f64(KL_BIN_GREATER, NAN, 1) == 0 && kl_binop_f64(KL_BIN_GREATER_EQUAL, 1, NAN) == 0 &&
            kl_binop_f64(KL_BIN_GREATER_EQUAL, 2, 2) == 1 && kl_binop_f64(KL_BIN_GREATER, 2, 2) == 0 &&
            kl_binop_i64(KL_BIN_GREATER, -1, -2) == 1 && kl_binop_i64(KL_BIN_GREATER_EQUAL, -3, -2) == 0,
        "greater / greater_equal: 1 / 0, NaN gives 0");
  CHECK(fabs(kl_unop_f64(KL_UN_ERF, 1.0) - 0.8427007929497149) < 1e-15 && kl_unop_f64(KL_UN_RECIP, 4) == 0.25 &&
            strcmp(kl_unop_name(KL_UN_ERF), "erf") == 0 && kl_binop_from_name("greater_equal") == KL_BIN_GREATER_EQUAL,
        "erf, recip, names");
  kl_tensor *x = T(KL_DT_F32, 2, S(2, 2), V(-0.0, 0.0, 0.0, -0.0)), *o = NULL;
  CHECK(kl_ref_reduce(KL_RED_MAX, x, 1, (int[]){ 1 }, false, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            bits_eq(kl_tensor_get_flat(o, 0), 0.0) && bits_eq(kl_tensor_get_flat(o, 1), 0.0),
        "reduce_max {-0,+0} {+0,-0} = +0");
  REL(o);
  CHECK(kl_ref_reduce(KL_RED_MIN, x, 1, (int[]){ 1 }, false, KL_DT_NONE, &o, err, sizeof err) == 0 &&
            bits_eq(kl_tensor_get_flat(o, 0), -0.0) && bits_eq(kl_tensor_get_flat(o, 1), -0.0),
        "reduce_min {-0,+0} {+0,-0} = -0");
  REL(o);
  kl_tensor_release(x);
  GROUP("max/min at signed zeros");
}

/* the blocked inner-product kernel (refops_gemm.h) equals the naive k-ordered loop bit for bit,
 * serially and on a pool (tails of 4-row and 2-column blocks, a product large enough to be split;
 * values of many magnitudes so that a different summation order would show) */
static void test_gemm_kernel(void) {
  uint64_t st = 0x9e3779b97f4a7c15ull;
  const int64_t cases[][3] = {
    { 1, 1, 1 }, { 3, 5, 7 }, { 9, 2, 0 }, { 7, 13, 33 }, { 130, 67, 301 }, { 5, 2001, 400 }
  };
  kl_threadpool *pool = kl_threadpool_create(3, NULL, 0);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int64_t M = cases[c][0], N = cases[c][1], K = cases[c][2], lda = K + 3, ldb = K + 1, ldc = N + 2;
    double *A = malloc(sizeof(double) * (size_t)(M * lda + 1)), *B = malloc(sizeof(double) * (size_t)(N * ldb + 1));
    int64_t *IA = malloc(sizeof(int64_t) * (size_t)(M * lda + 1)),
            *IB = malloc(sizeof(int64_t) * (size_t)(N * ldb + 1));
    double *C = calloc((size_t)(M * ldc), sizeof(double));
    int64_t *IC = calloc((size_t)(M * ldc), sizeof(int64_t));
    for (int64_t i = 0; i < M * lda; i++) {
      uint64_t r = xorshift64(&st);
      A[i] = ldexp((double)(int64_t)(r >> 11) / 9007199254740992.0, (int)(r % 41) - 20);
      IA[i] = (int64_t)r;
    }
    for (int64_t i = 0; i < N * ldb; i++) {
      uint64_t r = xorshift64(&st);
      B[i] = ldexp((double)(int64_t)(r >> 11) / 9007199254740992.0 - 0.5, (int)(r % 37) - 18);
      IB[i] = (int64_t)r;
    }
    bool same = true, isame = true;
    for (int pass = 0; pass < 2; pass++) {
      kl_ref_gemm_nt_f64(pass ? pool : NULL, A, lda, B, ldb, M, N, K, C, ldc);
      kl_ref_gemm_nt_i64(pass ? pool : NULL, IA, lda, IB, ldb, M, N, K, IC, ldc);
      for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
          double acc = 0;
          uint64_t iacc = 0;
          for (int64_t k = 0; k < K; k++) {
            acc += A[m * lda + k] * B[n * ldb + k];
            iacc += (uint64_t)IA[m * lda + k] * (uint64_t)IB[n * ldb + k];
          }
          same = same && memcmp(&acc, &C[m * ldc + n], sizeof acc) == 0;
          isame = isame && (int64_t)iacc == IC[m * ldc + n];
        }
    }
    /* the padding columns of C are not written */
    for (int64_t m = 0; m < M; m++) same = same && C[m * ldc + N] == 0 && C[m * ldc + N + 1] == 0;
    CHECK(same, "f64 %lldx%lldx%lld differs from the naive loop", (long long)M, (long long)N, (long long)K);
    CHECK(isame, "i64 %lldx%lldx%lld differs from the naive loop", (long long)M, (long long)N, (long long)K);
    free(A), free(B), free(IA), free(IB), free(C), free(IC);
  }
  kl_threadpool_destroy(pool);
  GROUP("gemm kernel = naive loop, bit for bit");
}

int main(void) {
  printf("test_refops:\n");
  test_binary();
  test_maxmin_signed_zero();
  test_unary();
  test_clip_where_convert();
  test_movement();
  test_reduce_softmax();
  test_dot();
  test_conv();
  test_gemm_kernel();
  return check_summary("test_refops");
}
