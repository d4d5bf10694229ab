/* scalar_ops.h — the element-wise and reduce ops of the graph IR by name, and the
 * scalar semantics of the element-wise ones, shared by the constant folds (core) and the
 * reference kernels (runtime/refops.h), so both compute max/min, pow, ... one way.
 * Contract: pure functions, no state. Integer ops use exact int64 math (wrapping on
 * overflow; division truncates toward zero, x / 0 = 0; pow with a negative exponent is
 * 1/x^-e truncated). Float max/min are IEEE 754-2019 maximum/minimum (NaN propagates;
 * -0 < +0); relu(-0) = +0. Comparisons give 1 or 0 (any NaN operand: 0). */
#ifndef KL_SCALAR_OPS_H
#define KL_SCALAR_OPS_H
#include "core/dtype.h"

typedef enum kl_binop {
  KL_BIN_ADD,
  KL_BIN_SUB,
  KL_BIN_MUL,
  KL_BIN_DIV,
  KL_BIN_MAX,
  KL_BIN_MIN,
  KL_BIN_POW,
  KL_BIN_GREATER,       /* a > b ? 1 : 0 in the operands' dtype (NaN: 0) */
  KL_BIN_GREATER_EQUAL, /* a >= b ? 1 : 0 */
  KL_BIN_COUNT
} kl_binop;
typedef enum kl_unop {
  KL_UN_NEG,
  KL_UN_ABS,
  KL_UN_EXP,
  KL_UN_LOG,
  KL_UN_SQRT,
  KL_UN_RSQRT,
  KL_UN_TANH,
  KL_UN_SIGMOID,
  KL_UN_RELU,
  KL_UN_ERF,   /* the error function */
  KL_UN_RECIP, /* 1 / x */
  KL_UN_ROUND, /* to the nearest integer, ties to even */
  KL_UN_FLOOR, /* the largest integer <= x (integers: x) */
  KL_UN_CEIL,  /* the smallest integer >= x (integers: x) */
  KL_UN_COUNT
} kl_unop;
typedef enum kl_reduce_op { KL_RED_SUM, KL_RED_MAX, KL_RED_MEAN, KL_RED_MIN, KL_RED_COUNT } kl_reduce_op;

/* Names as in the graph IR ("add", "sigmoid", "sum"); from_name returns -1 if unknown. */
const char *kl_binop_name(kl_binop op);
int kl_binop_from_name(const char *name);
const char *kl_unop_name(kl_unop op);
int kl_unop_from_name(const char *name);
const char *kl_reduce_name(kl_reduce_op op);
const char *kl_reduce_kind_name(kl_reduce_op op); /* without the prefix: "sum" (rock.reduce's kind) */
int kl_reduce_from_name(const char *name);
/* Scalar semantics of the element-wise ops (double path and int64 path). */
double kl_binop_f64(kl_binop op, double a, double b);
int64_t kl_binop_i64(kl_binop op, int64_t a, int64_t b);
double kl_unop_f64(kl_unop op, double x);
int64_t kl_unop_i64(kl_unop op, int64_t x); /* NEG ABS RELU only; others go via double */
bool kl_unop_has_int(kl_unop op);

#endif
