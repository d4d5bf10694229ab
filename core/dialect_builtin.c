/* dialect_builtin.c — registration, verifiers and folds of the shared ops. */
#include "core/dialect_builtin.h"
#include <math.h>
#include <string.h>

static float round_bf16(float f) {
  uint32_t u; memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return f;          /* inf/nan unchanged */
  u += 0x7fffu + ((u >> 16) & 1u); u &= 0xffff0000u;
  memcpy(&f, &u, 4); return f;
}
static double round_f16(double d) {
  if (isnan(d) || isinf(d)) return d;
  double a = fabs(d);
  if (a >= 65520.0) return d < 0 ? -INFINITY : INFINITY;
  int e; frexp(a, &e);                    /* a = m * 2^e, m in [0.5,1) */
  int exp = e - 1; if (exp < -14) exp = -14; /* subnormals share the min exponent */
  double q = ldexp(1.0, exp - 10);        /* spacing of representable values */
  double r = nearbyint(a / q) * q;        /* default rounding mode: nearest even */
  return d < 0 ? -r : r;
}
double kl_round_to_type(const kl_type *t, double v) {
  switch (t->kind) {
  case KL_TY_F64: return v;
  case KL_TY_F32: return (float)v;
  case KL_TY_BF16: return round_bf16((float)v);
  case KL_TY_F16: return round_f16(v);
  default: return (double)kl_wrap_int(t, (int64_t)v);
  }
}
int64_t kl_wrap_int(const kl_type *t, int64_t v) {
  switch (t->kind) {
  case KL_TY_I1: return v & 1;
  case KL_TY_I8: return (int8_t)v;
  case KL_TY_I32: return (int32_t)v;
  default: return v;
  }
}
const kl_attr *kl_const_attr_for(kl_ctx *ctx, const kl_type *t, double v) {
  if (kl_type_is_float(t)) return kl_attr_float_typed(ctx, kl_round_to_type(t, v), t);
  return kl_attr_int_typed(ctx, kl_wrap_int(t, (int64_t)v), t);
}
kl_op *kl_build_constant(kl_ctx *ctx, kl_loc loc, const kl_attr *value, const kl_type *t) {
  kl_named_attr a = { "value", value };
  return kl_op_create(ctx, "arith.constant", loc, 0, NULL, 1, &t, 1, &a, 0);
}

/* ---- verifiers ---- */
static kl_status verify_constant(kl_op *op) {
  const kl_attr *v = kl_op_attr(op, "value");
  const kl_type *t = op->results[0].type;
  const kl_type *et = t->kind == KL_TY_VECTOR ? t->elem : t;
  if ((v->kind == KL_AT_INT && kl_type_is_int(et) && v->type == et) ||
      (v->kind == KL_AT_FLOAT && kl_type_is_float(et) && v->type == et) ||
      (v->kind == KL_AT_BOOL && et->kind == KL_TY_I1))
    return KL_OK;
  return kl_emit_error(op->ctx, op->loc, "'arith.constant': value %s does not match result type %s",
                       v->text, kl_type_str(t));
}
static const kl_type *elem_of(const kl_type *t) { return t->kind == KL_TY_VECTOR ? t->elem : t; }
static kl_status verify_int_op(kl_op *op) {
  if (!kl_type_is_int(elem_of(op->results[0].type)))
    return kl_emit_error(op->ctx, op->loc, "'%s' expects integer operands, got %s", op->name, kl_type_str(op->results[0].type));
  return KL_OK;
}
static kl_status verify_float_op(kl_op *op) {
  if (!kl_type_is_float(elem_of(op->results[0].type)))
    return kl_emit_error(op->ctx, op->loc, "'%s' expects float operands, got %s", op->name, kl_type_str(op->results[0].type));
  return KL_OK;
}
static kl_status verify_cmp(kl_op *op) {
  if (op->nopnds == 2 && op->opnds[0].value->type != op->opnds[1].value->type)
    return kl_emit_error(op->ctx, op->loc, "'%s' operands differ in type: %s vs %s", op->name,
                         kl_type_str(op->opnds[0].value->type), kl_type_str(op->opnds[1].value->type));
  const char *p = kl_op_attr_string(op, "predicate");
  static const char *preds[] = { "eq", "ne", "lt", "le", "gt", "ge", NULL };
  for (int i = 0; preds[i]; i++) if (p && !strcmp(p, preds[i])) return KL_OK;
  return kl_emit_error(op->ctx, op->loc, "'%s': predicate must be one of eq, ne, lt, le, gt, ge", op->name);
}
static kl_status verify_select(kl_op *op) {
  if (elem_of(op->opnds[0].value->type)->kind != KL_TY_I1)
    return kl_emit_error(op->ctx, op->loc, "'arith.select': condition must be i1, got %s", kl_type_str(op->opnds[0].value->type));
  if (op->opnds[1].value->type != op->results[0].type || op->opnds[2].value->type != op->results[0].type)
    return kl_emit_error(op->ctx, op->loc, "'arith.select': branches must have the result type %s", kl_type_str(op->results[0].type));
  return KL_OK;
}
static kl_status verify_func(kl_op *op) {
  if (!kl_op_attr_string(op, "sym_name"))
    return kl_emit_error(op->ctx, op->loc, "'func.func' needs a string attribute 'sym_name'");
  if (!op->regions[0].first)
    return kl_emit_error(op->ctx, op->loc, "'func.func' needs a body block");
  return KL_OK;
}
static kl_status verify_for(kl_op *op) {
  /* scf.for(lb, ub, step, inits...) region: ^bb(iv: index, iters...) */
  kl_block *b = op->regions[0].first;
  int niter = op->nopnds - 3;
  if (niter != op->nresults)
    return kl_emit_error(op->ctx, op->loc, "'scf.for': %d loop-carried values but %d results", niter, op->nresults);
  if (!b || b->nargs != 1 + niter)
    return kl_emit_error(op->ctx, op->loc, "'scf.for': body must take the induction variable and %d iteration values", niter);
  for (int i = 0; i < 3; i++)
    if (op->opnds[i].value->type->kind != KL_TY_INDEX)
      return kl_emit_error(op->ctx, op->loc, "'scf.for': bounds and step must be index");
  for (int i = 0; i < niter; i++)
    if (op->opnds[3 + i].value->type != op->results[i].type || b->args[1 + i]->type != op->results[i].type)
      return kl_emit_error(op->ctx, op->loc, "'scf.for': iteration value %d type mismatch", i);
  return KL_OK;
}
static kl_status verify_yield(kl_op *op) {
  kl_op *parent = kl_op_parent_op(op);
  if (!parent) return KL_OK;
  if (parent->nresults != op->nopnds)
    return kl_emit_error(op->ctx, op->loc, "'%s' yields %d values but '%s' has %d results", op->name, op->nopnds, parent->name, parent->nresults);
  for (int i = 0; i < op->nopnds; i++)
    if (op->opnds[i].value->type != parent->results[i].type)
      return kl_emit_error(op->ctx, op->loc, "'%s' value %d has type %s, expected %s", op->name, i,
                           kl_type_str(op->opnds[i].value->type), kl_type_str(parent->results[i].type));
  return KL_OK;
}

/* ---- folds ---- */
static bool cst_num(const kl_attr *a, double *d) {
  if (!a) return false;
  if (a->kind == KL_AT_INT || a->kind == KL_AT_BOOL) { *d = (double)a->i; return true; }
  if (a->kind == KL_AT_FLOAT) { *d = a->f; return true; }
  return false;
}
static bool is_value(const kl_attr *a, double v) { double d; return cst_num(a, &d) && d == v && !(v == 0 && signbit(d)); }

typedef enum { B_ADD, B_SUB, B_MUL, B_DIV, B_REM, B_MAX, B_MIN, B_AND, B_OR, B_XOR } binkind;
static binkind bin_kind(const char *name) {
  const char *n = strchr(name, '.') + 1;
  if (!strncmp(n, "add", 3)) return B_ADD;
  if (!strncmp(n, "sub", 3)) return B_SUB;
  if (!strncmp(n, "mul", 3)) return B_MUL;
  if (!strncmp(n, "div", 3)) return B_DIV;
  if (!strncmp(n, "rem", 3)) return B_REM;
  if (!strncmp(n, "max", 3)) return B_MAX;
  if (!strncmp(n, "min", 3)) return B_MIN;
  if (!strncmp(n, "and", 3)) return B_AND;
  if (!strncmp(n, "or", 2)) return B_OR;
  return B_XOR;
}
static bool fold_binary(kl_op *op, const kl_attr *const *cst, kl_fold_result *out) {
  const kl_type *t = op->results[0].type;
  if (t->kind == KL_TY_VECTOR) return false;
  binkind k = bin_kind(op->name);
  bool isf = kl_type_is_float(t);
  double a, b;
  if (cst_num(cst[0], &a) && cst_num(cst[1], &b)) {
    if (isf) {
      double r = k == B_ADD ? a + b : k == B_SUB ? a - b : k == B_MUL ? a * b : k == B_DIV ? a / b :
                 k == B_REM ? fmod(a, b) : k == B_MAX ? (a != a || b != b ? NAN : fmax(a, b)) : (a != a || b != b ? NAN : fmin(a, b));
      out[0].attr = kl_const_attr_for(op->ctx, t, r);
      return true;
    }
    int64_t x = (int64_t)a, y = (int64_t)b, r;
    if ((k == B_DIV || k == B_REM) && y == 0) return false;   /* UB: leave it */
    if ((k == B_DIV || k == B_REM) && y == -1 && x == INT64_MIN) return false;
    switch (k) {
    case B_ADD: r = (int64_t)((uint64_t)x + (uint64_t)y); break;
    case B_SUB: r = (int64_t)((uint64_t)x - (uint64_t)y); break;
    case B_MUL: r = (int64_t)((uint64_t)x * (uint64_t)y); break;
    case B_DIV: r = x / y; break;
    case B_REM: r = x % y; break;
    case B_MAX: r = x > y ? x : y; break;
    case B_MIN: r = x < y ? x : y; break;
    case B_AND: r = x & y; break;
    case B_OR: r = x | y; break;
    default: r = x ^ y; break;
    }
    out[0].attr = kl_attr_int_typed(op->ctx, kl_wrap_int(t, r), t);
    return true;
  }
  /* Algebraic identities (exact for ints; for floats only those IEEE allows). */
  if ((k == B_ADD || k == B_SUB || k == B_OR || k == B_XOR) && !isf && is_value(cst[1], 0)) { out[0].value = op->opnds[0].value; return true; }
  if (k == B_ADD && !isf && is_value(cst[0], 0)) { out[0].value = op->opnds[1].value; return true; }
  if ((k == B_MUL || k == B_DIV) && is_value(cst[1], 1)) { out[0].value = op->opnds[0].value; return true; }
  if (k == B_MUL && is_value(cst[0], 1)) { out[0].value = op->opnds[1].value; return true; }
  if (k == B_MUL && !isf && (is_value(cst[0], 0) || is_value(cst[1], 0))) { out[0].attr = kl_attr_int_typed(op->ctx, 0, t); return true; }
  if (k == B_SUB && !isf && op->opnds[0].value == op->opnds[1].value) { out[0].attr = kl_attr_int_typed(op->ctx, 0, t); return true; }
  if ((k == B_MAX || k == B_MIN || k == B_AND || k == B_OR) && op->opnds[0].value == op->opnds[1].value) { out[0].value = op->opnds[0].value; return true; }
  return false;
}
static bool fold_unary_math(kl_op *op, const kl_attr *const *cst, kl_fold_result *out) {
  double a;
  const kl_type *t = op->results[0].type;
  if (t->kind == KL_TY_VECTOR || !cst_num(cst[0], &a)) return false;
  const char *n = strchr(op->name, '.') + 1;
  double r;
  if (!strcmp(n, "negf")) r = -a;
  else if (!strcmp(n, "exp")) r = exp(a);
  else if (!strcmp(n, "log")) r = log(a);
  else if (!strcmp(n, "sqrt")) r = sqrt(a);
  else if (!strcmp(n, "rsqrt")) r = 1.0 / sqrt(a);
  else if (!strcmp(n, "tanh")) r = tanh(a);
  else if (!strcmp(n, "absf")) r = fabs(a);
  else return false;
  out[0].attr = kl_const_attr_for(op->ctx, t, r);
  return true;
}
static bool fold_cast(kl_op *op, const kl_attr *const *cst, kl_fold_result *out) {
  const kl_type *t = op->results[0].type;
  if (op->opnds[0].value->type == t) { out[0].value = op->opnds[0].value; return true; }
  double a;
  if (t->kind == KL_TY_VECTOR || !cst_num(cst[0], &a)) return false;
  if (kl_type_is_int(t) && kl_type_is_float(op->opnds[0].value->type)) {
    if (!(fabs(a) < 9.2e18)) return false;  /* out of range: leave it to run time */
    a = trunc(a);
  }
  out[0].attr = kl_const_attr_for(op->ctx, t, a);
  return true;
}
static bool fold_cmp(kl_op *op, const kl_attr *const *cst, kl_fold_result *out) {
  double a, b;
  if (op->results[0].type->kind == KL_TY_VECTOR || !cst_num(cst[0], &a) || !cst_num(cst[1], &b)) return false;
  const char *p = kl_op_attr_string(op, "predicate");
  bool r = !strcmp(p, "eq") ? a == b : !strcmp(p, "ne") ? a != b : !strcmp(p, "lt") ? a < b :
           !strcmp(p, "le") ? a <= b : !strcmp(p, "gt") ? a > b : a >= b;
  out[0].attr = kl_attr_int_typed(op->ctx, r, op->results[0].type);
  return true;
}
static bool fold_select(kl_op *op, const kl_attr *const *cst, kl_fold_result *out) {
  double c;
  if (op->opnds[1].value == op->opnds[2].value) { out[0].value = op->opnds[1].value; return true; }
  if (!cst_num(cst[0], &c)) return false;
  out[0].value = op->opnds[c != 0 ? 1 : 2].value;
  return true;
}

#define P KL_TRAIT_PURE
#define ST KL_TRAIT_SAME_TYPES
static const char *const need_value[] = { "value", NULL };
static const char *const need_pred[] = { "predicate", NULL };
static const kl_opdef builtin_ops[] = {
  { .name = "builtin.module", .traits = KL_TRAIT_ISOLATED | KL_TRAIT_NO_TERMINATOR, .max_operands = 0, .max_results = 0, .num_regions = 1,
    .summary = "top-level container of functions" },
  { .name = "func.func", .traits = KL_TRAIT_ISOLATED | KL_TRAIT_SYMBOL, .max_operands = 0, .max_results = 0, .num_regions = 1,
    .verify = verify_func, .summary = "a function; entry block arguments are its parameters" },
  { .name = "func.return", .traits = KL_TRAIT_TERMINATOR, .max_operands = -1, .max_results = 0, .num_regions = 0,
    .summary = "returns from a func.func" },
  { .name = "func.call", .max_operands = -1, .max_results = -1, .num_regions = 0,
    .summary = "calls the function named by the symbol attribute 'callee'" },
  { .name = "arith.constant", .traits = P | KL_TRAIT_CONSTANT, .max_operands = 0, .min_results = 1, .max_results = 1,
    .required_attrs = need_value, .verify = verify_constant, .summary = "a scalar or splat constant" },
#define BIN(n, v, extra) { .name = n, .traits = P | ST | extra, .min_operands = 2, .max_operands = 2, .min_results = 1, .max_results = 1, .verify = v, .fold = fold_binary }
  BIN("arith.addi", verify_int_op, KL_TRAIT_COMMUTATIVE), BIN("arith.subi", verify_int_op, 0),
  BIN("arith.muli", verify_int_op, KL_TRAIT_COMMUTATIVE), BIN("arith.divsi", verify_int_op, 0),
  BIN("arith.remsi", verify_int_op, 0), BIN("arith.maxsi", verify_int_op, KL_TRAIT_COMMUTATIVE),
  BIN("arith.minsi", verify_int_op, KL_TRAIT_COMMUTATIVE), BIN("arith.andi", verify_int_op, KL_TRAIT_COMMUTATIVE),
  BIN("arith.ori", verify_int_op, KL_TRAIT_COMMUTATIVE), BIN("arith.xori", verify_int_op, KL_TRAIT_COMMUTATIVE),
  BIN("arith.addf", verify_float_op, KL_TRAIT_COMMUTATIVE), BIN("arith.subf", verify_float_op, 0),
  BIN("arith.mulf", verify_float_op, KL_TRAIT_COMMUTATIVE), BIN("arith.divf", verify_float_op, 0),
  BIN("arith.remf", verify_float_op, 0), BIN("arith.maxf", verify_float_op, KL_TRAIT_COMMUTATIVE),
  BIN("arith.minf", verify_float_op, KL_TRAIT_COMMUTATIVE),
#undef BIN
#define UN(n) { .name = n, .traits = P | ST, .min_operands = 1, .max_operands = 1, .min_results = 1, .max_results = 1, .verify = verify_float_op, .fold = fold_unary_math }
  UN("arith.negf"), UN("math.exp"), UN("math.log"), UN("math.sqrt"), UN("math.rsqrt"), UN("math.tanh"), UN("math.absf"),
#undef UN
#define CAST(n) { .name = n, .traits = P, .min_operands = 1, .max_operands = 1, .min_results = 1, .max_results = 1, .fold = fold_cast }
  CAST("arith.sitofp"), CAST("arith.fptosi"), CAST("arith.extf"), CAST("arith.truncf"), CAST("arith.extsi"),
  CAST("arith.trunci"), CAST("arith.index_cast"),
#undef CAST
  { .name = "arith.cmpi", .traits = P, .min_operands = 2, .max_operands = 2, .min_results = 1, .max_results = 1,
    .required_attrs = need_pred, .verify = verify_cmp, .fold = fold_cmp },
  { .name = "arith.cmpf", .traits = P, .min_operands = 2, .max_operands = 2, .min_results = 1, .max_results = 1,
    .required_attrs = need_pred, .verify = verify_cmp, .fold = fold_cmp },
  { .name = "arith.select", .traits = P, .min_operands = 3, .max_operands = 3, .min_results = 1, .max_results = 1,
    .verify = verify_select, .fold = fold_select },
  { .name = "scf.for", .min_operands = 3, .max_operands = -1, .max_results = -1, .num_regions = 1, .verify = verify_for,
    .summary = "for %iv = lb to ub step s, carrying iteration values; body ends in scf.yield" },
  { .name = "scf.if", .min_operands = 1, .max_operands = 1, .max_results = -1, .num_regions = 2,
    .summary = "if (i1) then-region else-region, each ending in scf.yield" },
  { .name = "scf.yield", .traits = KL_TRAIT_TERMINATOR, .max_operands = -1, .max_results = 0, .verify = verify_yield,
    .summary = "yields values to the enclosing scf op" },
};
#undef P
#undef ST

void kl_register_builtin_dialect(kl_ctx *ctx) {
  for (size_t i = 0; i < sizeof builtin_ops / sizeof *builtin_ops; i++) kl_register_op(ctx, &builtin_ops[i]);
}
