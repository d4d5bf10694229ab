/* scalar_ops.c — element-wise op names and scalar semantics (see scalar_ops.h). */
#include "core/scalar_ops.h"
#include <math.h>
#include <string.h>

/* ---------------------------------------------------------------- names */

static const char *const binop_names[KL_BIN_COUNT] = { "add", "sub", "mul",     "div",          "max",
                                                       "min", "pow", "greater", "greater_equal" };
static const char *const unop_names[KL_UN_COUNT] = { "neg",     "abs",  "exp", "log",   "sqrt",  "rsqrt", "tanh",
                                                     "sigmoid", "relu", "erf", "recip", "round", "floor", "ceil" };
static const char *const reduce_names[KL_RED_COUNT] = { "reduce_sum", "reduce_max", "reduce_mean", "reduce_min" };

static int find_name(const char *const *names, int n, const char *name) {
  if (!name) return -1;
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0) return i;
  return -1;
}
const char *kl_binop_name(kl_binop op) { return op >= 0 && op < KL_BIN_COUNT ? binop_names[op] : "?"; }
int kl_binop_from_name(const char *name) { return find_name(binop_names, KL_BIN_COUNT, name); }
const char *kl_unop_name(kl_unop op) { return op >= 0 && op < KL_UN_COUNT ? unop_names[op] : "?"; }
int kl_unop_from_name(const char *name) { return find_name(unop_names, KL_UN_COUNT, name); }
const char *kl_reduce_name(kl_reduce_op op) { return op >= 0 && op < KL_RED_COUNT ? reduce_names[op] : "?"; }
static const char *const reduce_kinds[KL_RED_COUNT] = { "sum", "max", "mean", "min" };
const char *kl_reduce_kind_name(kl_reduce_op op) { return op >= 0 && op < KL_RED_COUNT ? reduce_kinds[op] : "?"; }
int kl_reduce_from_name(const char *name) {
  int i = find_name(reduce_names, KL_RED_COUNT, name);
  if (i >= 0 || !name) return i;
  return find_name(reduce_kinds, KL_RED_COUNT, name);
}

/* ---------------------------------------------------------------- scalar semantics */

double kl_binop_f64(kl_binop op, double a, double b) {
  switch (op) {
    case KL_BIN_ADD: return a + b;
    case KL_BIN_SUB: return a - b;
    case KL_BIN_MUL: return a * b;
    case KL_BIN_DIV: return a / b;
    /* IEEE 754-2019 maximum/minimum: NaN if either is NaN, -0 < +0; symmetric (commutative) */
    case KL_BIN_MAX: return (isnan(a) || isnan(b)) ? NAN : (a > b || (a == b && signbit(b))) ? a : b;
    case KL_BIN_MIN: return (isnan(a) || isnan(b)) ? NAN : (a < b || (a == b && signbit(a))) ? a : b;
    case KL_BIN_POW: return pow(a, b);
    case KL_BIN_GREATER: return a > b ? 1.0 : 0.0;
    case KL_BIN_GREATER_EQUAL: return a >= b ? 1.0 : 0.0;
    default: return NAN;
  }
}

static int64_t ipow(int64_t a, int64_t e) {
  if (e < 0) {
    if (a == 1) return 1;
    if (a == -1) return (e & 1) ? -1 : 1;
    return 0;
  }
  uint64_t r = 1, base = (uint64_t)a;
  while (e) {
    if (e & 1) r *= base;
    base *= base;
    e >>= 1;
  }
  return (int64_t)r;
}

int64_t kl_binop_i64(kl_binop op, int64_t a, int64_t b) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (op) {
    case KL_BIN_ADD: return (int64_t)(ua + ub);
    case KL_BIN_SUB: return (int64_t)(ua - ub);
    case KL_BIN_MUL: return (int64_t)(ua * ub);
    case KL_BIN_DIV:
      if (b == 0) return 0;
      if (a == INT64_MIN && b == -1) return INT64_MIN;
      return a / b;
    case KL_BIN_MAX: return a > b ? a : b;
    case KL_BIN_MIN: return a < b ? a : b;
    case KL_BIN_POW: return ipow(a, b);
    case KL_BIN_GREATER: return a > b;
    case KL_BIN_GREATER_EQUAL: return a >= b;
    default: return 0;
  }
}

double kl_unop_f64(kl_unop op, double x) {
  switch (op) {
    case KL_UN_NEG: return -x;
    case KL_UN_ABS: return fabs(x);
    case KL_UN_EXP: return exp(x);
    case KL_UN_LOG: return log(x);
    case KL_UN_SQRT: return sqrt(x);
    case KL_UN_RSQRT: return 1.0 / sqrt(x);
    case KL_UN_TANH: return tanh(x);
    case KL_UN_SIGMOID: return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
    case KL_UN_RELU: return isnan(x) ? x : (x > 0 ? x : 0.0);
    case KL_UN_ERF: return erf(x);
    case KL_UN_RECIP: return 1.0 / x;
    case KL_UN_ROUND: return nearbyint(x); /* the default rounding mode: ties to even */
    case KL_UN_FLOOR: return floor(x);
    case KL_UN_CEIL: return ceil(x);
    default: return NAN;
  }
}

bool kl_unop_has_int(kl_unop op) {
  return op == KL_UN_NEG || op == KL_UN_ABS || op == KL_UN_RELU || op == KL_UN_FLOOR || op == KL_UN_CEIL;
}

int64_t kl_unop_i64(kl_unop op, int64_t x) {
  switch (op) {
    case KL_UN_NEG: return (int64_t)(0 - (uint64_t)x);
    case KL_UN_ABS: return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
    case KL_UN_RELU: return x > 0 ? x : 0;
    case KL_UN_FLOOR:
    case KL_UN_CEIL: return x;
    default: return kl_f64_to_i64_sat(kl_unop_f64(op, (double)x));
  }
}
