/* dialect_builtin.c — registration, verifiers, folds and custom syntax of the shared ops. */
#include "core/dialect_builtin.h"
#include "core/dtype.h"
#include "core/scalar_ops.h"
#include "core/parse.h"
#include "core/print.h"
#include <math.h>
#include <string.h>

double kl_round_to_type(const kl_type *t, double v) {
  switch (t->kind) {
    case KL_TY_F64: return v;
    case KL_TY_F32: return kl_round_f32(v);
    case KL_TY_BF16: return kl_round_bf16(v);
    case KL_TY_F16: return kl_round_f16(v);
    case KL_TY_F8E4M3FN:
    case KL_TY_F8E5M2:
    case KL_TY_F8E4M3FNUZ:
    case KL_TY_F8E5M2FNUZ: return kl_dtype_round((kl_dtype)t->kind, v);
    default: return (double)kl_wrap_int(t, (int64_t)v);
  }
}
int64_t kl_wrap_int(const kl_type *t, int64_t v) {
  switch (t->kind) {
    case KL_TY_I1: return v & 1;
    case KL_TY_I8: return (int8_t)v;
    case KL_TY_U8: return (uint8_t)v;
    case KL_TY_I32: return (int32_t)v;
    default: return v;
  }
}
const kl_attr *kl_const_attr_for(kl_ctx *ctx, const kl_type *t, double v) {
  if (kl_type_is_float(t)) return kl_attr_float_typed(ctx, kl_round_to_type(t, v), t);
  /* out of int64's range (and NaN): INT64_MIN, what the x86 conversion gives, without the
   * undefined behaviour of the C cast */
  int64_t i = v >= -9223372036854775808.0 && v < 9223372036854775808.0 ? (int64_t)v : INT64_MIN;
  return kl_attr_int_typed(ctx, kl_wrap_int(t, i), t);
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
  return kl_emit_error(op->ctx, op->loc, "'arith.constant': value %s does not match result type %s", v->text,
                       kl_type_str(t));
}
static const kl_type *elem_of(const kl_type *t) { return t->kind == KL_TY_VECTOR ? t->elem : t; }
static kl_status verify_int_op(kl_op *op) {
  if (!kl_type_is_int(elem_of(op->results[0].type)))
    return kl_emit_error(op->ctx, op->loc, "'%s' expects integer operands, got %s", op->name,
                         kl_type_str(op->results[0].type));
  return KL_OK;
}
static kl_status verify_float_op(kl_op *op) {
  if (!kl_type_is_float(elem_of(op->results[0].type)))
    return kl_emit_error(op->ctx, op->loc, "'%s' expects float operands, got %s", op->name,
                         kl_type_str(op->results[0].type));
  return KL_OK;
}
static kl_status verify_cmp(kl_op *op) {
  if (op->nopnds == 2 && op->opnds[0].value->type != op->opnds[1].value->type)
    return kl_emit_error(op->ctx, op->loc, "'%s' operands differ in type: %s vs %s", op->name,
                         kl_type_str(op->opnds[0].value->type), kl_type_str(op->opnds[1].value->type));
  const char *p = kl_op_attr_string(op, "predicate");
  static const char *preds[] = { "eq", "ne", "lt", "le", "gt", "ge", NULL };
  for (int i = 0; preds[i]; i++)
    if (p && !strcmp(p, preds[i])) return KL_OK;
  return kl_emit_error(op->ctx, op->loc, "'%s': predicate must be one of eq, ne, lt, le, gt, ge", op->name);
}
static kl_status verify_select(kl_op *op) {
  if (elem_of(op->opnds[0].value->type)->kind != KL_TY_I1)
    return kl_emit_error(op->ctx, op->loc, "'arith.select': condition must be i1, got %s",
                         kl_type_str(op->opnds[0].value->type));
  if (op->opnds[1].value->type != op->results[0].type || op->opnds[2].value->type != op->results[0].type)
    return kl_emit_error(op->ctx, op->loc, "'arith.select': branches must have the result type %s",
                         kl_type_str(op->results[0].type));
  return KL_OK;
}
static kl_status verify_func(kl_op *op) {
  if (!kl_op_attr_string(op, "sym_name"))
    return kl_emit_error(op->ctx, op->loc, "'func.func' needs a string attribute 'sym_name'");
  if (!op->regions[0].first) return kl_emit_error(op->ctx, op->loc, "'func.func' needs a body block");
  return KL_OK;
}
static kl_status verify_for(kl_op *op) {
  /* scf.for(lb, ub, step, inits...) region: ^bb(iv: index, iters...) */
  kl_block *b = op->regions[0].first;
  int niter = op->nopnds - 3;
  if (niter != op->nresults)
    return kl_emit_error(op->ctx, op->loc, "'scf.for': %d loop-carried values but %d results", niter, op->nresults);
  if (!b || b->nargs != 1 + niter)
    return kl_emit_error(op->ctx, op->loc, "'scf.for': body must take the induction variable and %d iteration values",
                         niter);
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
    return kl_emit_error(op->ctx, op->loc, "'%s' yields %d values but '%s' has %d results", op->name, op->nopnds,
                         parent->name, parent->nresults);
  for (int i = 0; i < op->nopnds; i++)
    if (op->opnds[i].value->type != parent->results[i].type)
      return kl_emit_error(op->ctx, op->loc, "'%s' value %d has type %s, expected %s", op->name, i,
                           kl_type_str(op->opnds[i].value->type), kl_type_str(parent->results[i].type));
  return KL_OK;
}

/* ---- folds ---- */
static bool cst_num(const kl_attr *a, double *d) {
  if (!a) return false;
  if (a->kind == KL_AT_INT || a->kind == KL_AT_BOOL) {
    *d = (double)a->i;
    return true;
  }
  if (a->kind == KL_AT_FLOAT) {
    *d = a->f;
    return true;
  }
  return false;
}
static bool is_value(const kl_attr *a, double v) {
  double d;
  return cst_num(a, &d) && d == v && !(v == 0 && signbit(d));
}

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
      double r = k == B_ADD ? a + b
          : k == B_SUB      ? a - b
          : k == B_MUL      ? a * b
          : k == B_DIV      ? a / b
          : k == B_REM      ? fmod(a, b)
                            : kl_binop_f64(k == B_MAX ? KL_BIN_MAX : KL_BIN_MIN, a, b); /* the reference's max/min */
      out[0].attr = kl_const_attr_for(op->ctx, t, r);
      return true;
    }
    int64_t x = (int64_t)a, y = (int64_t)b, r;
    if ((k == B_DIV || k == B_REM) && y == 0) return false; /* UB: leave it */
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
  if ((k == B_ADD || k == B_SUB || k == B_OR || k == B_XOR) && !isf && is_value(cst[1], 0)) {
    out[0].value = op->opnds[0].value;
    return true;
  }
  if (k == B_ADD && !isf && is_value(cst[0], 0)) {
    out[0].value = op->opnds[1].value;
    return true;
  }
  if ((k == B_MUL || k == B_DIV) && is_value(cst[1], 1)) {
    out[0].value = op->opnds[0].value;
    return true;
  }
  if (k == B_MUL && is_value(cst[0], 1)) {
    out[0].value = op->opnds[1].value;
    return true;
  }
  if (k == B_MUL && !isf && (is_value(cst[0], 0) || is_value(cst[1], 0))) {
    out[0].attr = kl_attr_int_typed(op->ctx, 0, t);
    return true;
  }
  if (k == B_SUB && !isf && op->opnds[0].value == op->opnds[1].value) {
    out[0].attr = kl_attr_int_typed(op->ctx, 0, t);
    return true;
  }
  if ((k == B_MAX || k == B_MIN || k == B_AND || k == B_OR) && op->opnds[0].value == op->opnds[1].value) {
    out[0].value = op->opnds[0].value;
    return true;
  }
  return false;
}
/* Integer power with the graph's semantics: a negative exponent gives 1/x^-e truncated
 * (0 except for x = +-1; 0^-e = 0); wraps to the type's width. */
int64_t kl_ipow(int64_t x, int64_t e) {
  if (e < 0) return x == 1 ? 1 : x == -1 ? ((-e) & 1 ? -1 : 1) : 0;
  uint64_t r = 1, b = (uint64_t)x;
  while (e > 0) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return (int64_t)r;
}
static bool fold_pow(kl_op *op, const kl_attr *const *cst, kl_fold_result *out) {
  double a, b;
  const kl_type *t = op->results[0].type;
  if (t->kind == KL_TY_VECTOR || !cst_num(cst[0], &a) || !cst_num(cst[1], &b)) return false;
  if (kl_type_is_float(t))
    out[0].attr = kl_const_attr_for(op->ctx, t, pow(a, b));
  else
    out[0].attr = kl_attr_int_typed(op->ctx, kl_wrap_int(t, kl_ipow((int64_t)a, (int64_t)b)), t);
  return true;
}
static bool fold_unary_math(kl_op *op, const kl_attr *const *cst, kl_fold_result *out) {
  double a;
  const kl_type *t = op->results[0].type;
  if (t->kind == KL_TY_VECTOR || !cst_num(cst[0], &a)) return false;
  const char *n = strchr(op->name, '.') + 1;
  double r;
  if (!strcmp(n, "negf"))
    r = -a;
  else if (!strcmp(n, "exp"))
    r = exp(a);
  else if (!strcmp(n, "log"))
    r = log(a);
  else if (!strcmp(n, "sqrt"))
    r = sqrt(a);
  else if (!strcmp(n, "rsqrt"))
    r = 1.0 / sqrt(a);
  else if (!strcmp(n, "tanh"))
    r = tanh(a);
  else if (!strcmp(n, "erf"))
    r = erf(a);
  else if (!strcmp(n, "absf"))
    r = fabs(a);
  else if (!strcmp(n, "roundeven"))
    r = nearbyint(a); /* the default rounding mode: ties to even */
  else if (!strcmp(n, "floor"))
    r = floor(a);
  else if (!strcmp(n, "ceil"))
    r = ceil(a);
  else
    return false;
  out[0].attr = kl_const_attr_for(op->ctx, t, r);
  return true;
}
static bool fold_cast(kl_op *op, const kl_attr *const *cst, kl_fold_result *out) {
  const kl_type *t = op->results[0].type;
  if (op->opnds[0].value->type == t) {
    out[0].value = op->opnds[0].value;
    return true;
  }
  double a;
  if (t->kind == KL_TY_VECTOR || !cst_num(cst[0], &a)) return false;
  if (kl_type_is_int(t) && kl_type_is_float(op->opnds[0].value->type)) {
    if (!(fabs(a) < 9.2e18)) return false; /* out of range: leave it to run time */
    a = trunc(a);
  }
  out[0].attr = kl_const_attr_for(op->ctx, t, a);
  return true;
}
static bool fold_cmp(kl_op *op, const kl_attr *const *cst, kl_fold_result *out) {
  double a, b;
  if (op->results[0].type->kind == KL_TY_VECTOR || !cst_num(cst[0], &a) || !cst_num(cst[1], &b)) return false;
  const char *p = kl_op_attr_string(op, "predicate");
  bool r = !strcmp(p, "eq") ? a == b
      : !strcmp(p, "ne")    ? a != b
      : !strcmp(p, "lt")    ? a < b
      : !strcmp(p, "le")    ? a <= b
      : !strcmp(p, "gt")    ? a > b
                            : a >= b;
  out[0].attr = kl_attr_int_typed(op->ctx, r, op->results[0].type);
  return true;
}
static bool fold_select(kl_op *op, const kl_attr *const *cst, kl_fold_result *out) {
  double c;
  if (op->opnds[1].value == op->opnds[2].value) {
    out[0].value = op->opnds[1].value;
    return true;
  }
  if (!cst_num(cst[0], &c)) return false;
  out[0].value = op->opnds[c != 0 ? 1 : 2].value;
  return true;
}

/* ---- custom syntax ----
 *   func.func @name(%arg0: f32, %x: tensor<4xf32>) attributes {k = v} { body }
 *   func.return %a, %b : f32, f32          func.return
 *   arith.constant 3 : i32                 arith.constant {value = "odd"} : f32
 *   arith.addf %a, %b : f32                (every binary arith op)
 * An op that does not fit its syntax prints " generic(...) ... : (...) -> ..." instead,
 * which the parser reads back after any bare op name (parse.h). */

static void print_types(kl_printer *pr, int n, const kl_type *const *ts, size_t stride_bytes, bool parens) {
  if (parens) kl_printer_puts(pr, "(");
  for (int i = 0; i < n; i++) {
    const kl_type *t = *(const kl_type *const *)((const char *)ts + (size_t)i * stride_bytes);
    if (i) kl_printer_puts(pr, ", ");
    kl_printer_type(pr, t);
  }
  if (parens) kl_printer_puts(pr, ")");
}

void kl_print_generic_escape(kl_printer *pr, kl_op *op) {
  kl_printer_puts(pr, " generic(");
  for (int i = 0; i < op->nopnds; i++) {
    if (i) kl_printer_puts(pr, ", ");
    kl_printer_value(pr, op->opnds[i].value);
  }
  kl_printer_puts(pr, ")");
  if (op->nregions) {
    kl_printer_puts(pr, " (");
    for (int i = 0; i < op->nregions; i++) {
      if (i) kl_printer_puts(pr, ", ");
      kl_printer_region(pr, &op->regions[i], true);
    }
    kl_printer_puts(pr, ")");
  }
  kl_printer_attr_dict(pr, op, NULL);
  kl_printer_puts(pr, " : (");
  for (int i = 0; i < op->nopnds; i++) {
    if (i) kl_printer_puts(pr, ", ");
    kl_printer_type(pr, op->opnds[i].value ? op->opnds[i].value->type : NULL);
  }
  kl_printer_puts(pr, ") -> ");
  print_types(pr, op->nresults, &op->results[0].type, sizeof(kl_value), op->nresults != 1);
}

static bool operands_present(const kl_op *op) {
  for (int i = 0; i < op->nopnds; i++)
    if (!op->opnds[i].value) return false;
  return true;
}
static const kl_type *elem_or_self(const kl_type *t) { return t->elem ? t->elem : t; }

/* func.func */
static const char *func_symbol(const kl_op *op) {
  const kl_attr *a = kl_op_attr(op, "sym_name");
  return a && a->kind == KL_AT_STR && strlen(a->s) == a->len ? a->s : NULL;
}
static void print_func(kl_printer *pr, kl_op *op) {
  if (op->nopnds || op->nresults || op->nregions != 1) {
    kl_print_generic_escape(pr, op);
    return;
  }
  static const char *const elide_sym[] = { "sym_name", NULL };
  const char *sym = func_symbol(op);
  if (sym) {
    kl_sb sb = { 0 };
    kl_sb_puts(&sb, " @");
    kl_print_ident_or_string(&sb, sym);
    kl_printer_puts(pr, kl_sb_str(&sb));
    kl_sb_free(&sb);
  }
  kl_printer_puts(pr, sym ? "(" : " (");
  kl_block *entry = op->regions[0].first; /* NULL: a body without blocks prints "{}" */
  for (int i = 0; entry && i < entry->nargs; i++) {
    kl_printer_printf(pr, "%s%s: ", i ? ", " : "", kl_printer_value_name(pr, entry->args[i]));
    kl_printer_type(pr, entry->args[i]->type);
  }
  kl_printer_puts(pr, ")");
  if (op->nattrs > (sym ? 1 : 0)) {
    kl_printer_puts(pr, " attributes");
    kl_printer_attr_dict(pr, op, sym ? elide_sym : NULL);
  }
  kl_printer_puts(pr, " ");
  kl_printer_region(pr, &op->regions[0], false);
}
static kl_status parse_func(kl_parser *p, kl_op_state *st) {
  kl_ctx *ctx = kl_parser_ctx(p);
  if (kl_parser_peek_symbol(p)) {
    const char *sym;
    if (kl_parser_symbol(p, &sym) != KL_OK) return KL_ERR;
    kl_op_state_add_attr(p, st, "sym_name", kl_attr_str(ctx, sym));
  }
  if (kl_parser_expect(p, "(") != KL_OK) return KL_ERR;
  kl_block *entry = kl_block_create(ctx);
  if (!kl_parser_accept(p, ")")) {
    do {
      if (kl_parser_block_arg(p, entry) != KL_OK) return KL_ERR;
    } while (kl_parser_accept(p, ","));
    if (kl_parser_expect(p, ")") != KL_OK) return KL_ERR;
  }
  if (kl_parser_accept(p, "attributes")) {
    if (!kl_parser_peek(p, "{")) return kl_parser_error(p, "expected '{' after 'attributes'");
    if (kl_parser_attr_dict(p, st) != KL_OK) return KL_ERR;
  }
  kl_region *body;
  if (kl_parser_region(p, &body, entry) != KL_OK) return KL_ERR;
  kl_op_state_add_region(p, st, body);
  return KL_OK;
}

/* Parses ": t1, t2, ..." for the operands already in st; each type must match. */
static kl_status parse_operand_types(kl_parser *p, kl_op_state *st) {
  if (kl_parser_expect(p, ":") != KL_OK) return KL_ERR;
  for (int i = 0; i < st->nopnds; i++) {
    if (i && kl_parser_expect(p, ",") != KL_OK) return KL_ERR;
    kl_loc at = kl_parser_loc(p);
    const kl_type *t;
    if (kl_parser_type(p, &t) != KL_OK) return KL_ERR;
    if (t != st->opnds[i]->type)
      return kl_parser_error_at(p, at, "operand #%d of '%s' has type %s, not %s", i, st->name,
                                kl_type_str(st->opnds[i]->type), kl_type_str(t));
  }
  return KL_OK;
}

/* func.return */
static void print_return(kl_printer *pr, kl_op *op) {
  if (op->nresults || op->nregions || op->next || !operands_present(op)) {
    kl_print_generic_escape(pr, op);
    return;
  }
  for (int i = 0; i < op->nopnds; i++) {
    kl_printer_puts(pr, i ? ", " : " ");
    kl_printer_value(pr, op->opnds[i].value);
  }
  kl_printer_attr_dict(pr, op, NULL);
  if (!op->nopnds) return;
  kl_printer_puts(pr, " : ");
  for (int i = 0; i < op->nopnds; i++) {
    if (i) kl_printer_puts(pr, ", ");
    kl_printer_type(pr, op->opnds[i].value->type);
  }
}
static kl_status parse_return(kl_parser *p, kl_op_state *st) {
  if (kl_parser_peek_operand(p)) {
    do {
      kl_value *v;
      if (kl_parser_operand(p, &v) != KL_OK) return KL_ERR;
      kl_op_state_add_operand(p, st, v);
    } while (kl_parser_accept(p, ","));
  }
  if (kl_parser_attr_dict(p, st) != KL_OK) return KL_ERR;
  return st->nopnds ? parse_operand_types(p, st) : KL_OK;
}

/* arith.constant: a number (or bool) whose type is the result's (element) type prints
 * short; any other value goes into the attribute dictionary. */
static bool constant_short(const kl_op *op, const kl_attr *v) {
  if (v->kind == KL_AT_BOOL) return true;
  return (v->kind == KL_AT_INT || v->kind == KL_AT_FLOAT) && v->type == elem_or_self(op->results[0].type);
}
static void print_constant(kl_printer *pr, kl_op *op) {
  const kl_attr *v = kl_op_attr(op, "value");
  if (op->nopnds || op->nresults != 1 || op->nregions || !v) {
    kl_print_generic_escape(pr, op);
    return;
  }
  static const char *const elide_value[] = { "value", NULL };
  if (constant_short(op, v)) {
    kl_sb sb = { 0 };
    if (v->kind == KL_AT_INT)
      kl_sb_printf(&sb, " %lld", (long long)v->i);
    else if (v->kind == KL_AT_BOOL)
      kl_sb_puts(&sb, v->i ? " true" : " false");
    else {
      kl_sb_putc(&sb, ' ');
      kl_print_double(&sb, v->f);
    }
    kl_printer_puts(pr, kl_sb_str(&sb));
    kl_sb_free(&sb);
    kl_printer_attr_dict(pr, op, elide_value);
  } else {
    kl_printer_attr_dict(pr, op, NULL);
  }
  kl_printer_puts(pr, " : ");
  kl_printer_type(pr, op->results[0].type);
}
static kl_status parse_constant(kl_parser *p, kl_op_state *st) {
  kl_ctx *ctx = kl_parser_ctx(p);
  kl_loc vloc = kl_parser_loc(p);
  const kl_attr *v = NULL;
  if (!kl_parser_peek(p, "{") && kl_parser_attr_untyped(p, &v) != KL_OK) return KL_ERR;
  if (kl_parser_attr_dict(p, st) != KL_OK) return KL_ERR;
  if (kl_parser_expect(p, ":") != KL_OK) return KL_ERR;
  const kl_type *t;
  if (kl_parser_type(p, &t) != KL_OK) return KL_ERR;
  kl_op_state_add_result_type(p, st, t);
  bool in_dict = false;
  for (int i = 0; i < st->nattrs; i++)
    if (!strcmp(st->attrs[i].name, "value")) in_dict = true;
  if (!v) return in_dict ? KL_OK : kl_parser_error_at(p, vloc, "'arith.constant' needs a value");
  if (in_dict) return kl_parser_error_at(p, vloc, "'arith.constant' has a value and a 'value' attribute");
  const kl_type *et = elem_or_self(t);
  if (v->kind == KL_AT_FLOAT || v->kind == KL_AT_INT) {
    bool isf = v->kind == KL_AT_FLOAT;
    if (kl_type_is_float(et))
      v = kl_attr_float_typed(ctx, isf ? v->f : (double)v->i, et);
    else if (kl_type_is_int(et) && !isf) {
      if (!kl_int_literal_fits(et, v->i))
        return kl_parser_error_at(p, vloc, "integer %lld out of range for type %s", (long long)v->i, kl_type_str(et));
      v = kl_attr_int_typed(ctx, v->i, et);
    } else {
      return kl_parser_error_at(p, vloc, "%s constant cannot have type %s", isf ? "a floating-point" : "an integer",
                                kl_type_str(t));
    }
  }
  kl_op_state_add_attr(p, st, "value", v);
  return KL_OK;
}

/* Binary arith ops: "%a, %b {attrs} : t" (operands and result of one type t). */
static void print_binary(kl_printer *pr, kl_op *op) {
  if (op->nopnds != 2 || op->nresults != 1 || op->nregions || !operands_present(op) ||
      op->opnds[0].value->type != op->results[0].type || op->opnds[1].value->type != op->results[0].type) {
    kl_print_generic_escape(pr, op);
    return;
  }
  kl_printer_puts(pr, " ");
  kl_printer_value(pr, op->opnds[0].value);
  kl_printer_puts(pr, ", ");
  kl_printer_value(pr, op->opnds[1].value);
  kl_printer_attr_dict(pr, op, NULL);
  kl_printer_puts(pr, " : ");
  kl_printer_type(pr, op->results[0].type);
}
static kl_status parse_binary(kl_parser *p, kl_op_state *st) {
  for (int i = 0; i < 2; i++) {
    kl_value *v;
    if (i && kl_parser_expect(p, ",") != KL_OK) return KL_ERR;
    if (kl_parser_operand(p, &v) != KL_OK) return KL_ERR;
    kl_op_state_add_operand(p, st, v);
  }
  if (kl_parser_attr_dict(p, st) != KL_OK) return KL_ERR;
  if (kl_parser_expect(p, ":") != KL_OK) return KL_ERR;
  kl_loc at = kl_parser_loc(p);
  const kl_type *t;
  if (kl_parser_type(p, &t) != KL_OK) return KL_ERR;
  for (int i = 0; i < 2; i++)
    if (st->opnds[i]->type != t)
      return kl_parser_error_at(p, at, "operand #%d of '%s' has type %s, not %s", i, st->name,
                                kl_type_str(st->opnds[i]->type), kl_type_str(t));
  kl_op_state_add_result_type(p, st, t);
  return KL_OK;
}

static kl_status verify_broadcast(kl_op *op) {
  const kl_type *t = op->results[0].type;
  if (t->kind != KL_TY_VECTOR || t->elem != op->opnds[0].value->type)
    return kl_emit_error(op->ctx, op->loc,
                         "'vector.broadcast' makes a vector of its scalar operand's type, got %s from %s",
                         kl_type_str(t), kl_type_str(op->opnds[0].value->type));
  return KL_OK;
}
static kl_status verify_shuffle(kl_op *op) {
  const kl_type *t = op->results[0].type;
  const kl_attr *m = kl_op_attr(op, "mask");
  if (op->opnds[0].value->type != op->opnds[1].value->type || op->opnds[0].value->type->kind != KL_TY_VECTOR ||
      t->elem != op->opnds[0].value->type->elem)
    return kl_emit_error(op->ctx, op->loc,
                         "'vector.shuffle' takes two vectors of one type and returns their element type");
  if (t->kind != KL_TY_VECTOR || !m || m->kind != KL_AT_ARRAY || m->n != t->shape[0])
    return kl_emit_error(op->ctx, op->loc,
                         "'vector.shuffle' needs a vector result and a 'mask' with one index per lane");
  int64_t lanes = 2 * op->opnds[0].value->type->shape[0];
  for (int i = 0; i < m->n; i++)
    if (m->elems[i]->kind != KL_AT_INT || m->elems[i]->i < 0 || m->elems[i]->i >= lanes)
      return kl_emit_error(op->ctx, op->loc, "'vector.shuffle' mask entry %d must be an index in [0, %lld)", i,
                           (long long)lanes);
  return KL_OK;
}
static kl_status verify_fma(kl_op *op) {
  return kl_type_is_float(elem_of(op->results[0].type))
      ? KL_OK
      : kl_emit_error(op->ctx, op->loc, "'math.fma' needs float operands, got %s", kl_type_str(op->results[0].type));
}

#define P  KL_TRAIT_PURE
#define ST KL_TRAIT_SAME_TYPES
static const char *const need_value[] = { "value", NULL };
static const char *const need_pred[] = { "predicate", NULL };
// clang-format off
static const kl_opdef builtin_ops[] = {
  { .name = "builtin.module", .traits = KL_TRAIT_ISOLATED | KL_TRAIT_NO_TERMINATOR, .max_operands = 0, .max_results = 0, .num_regions = 1,
    .summary = "top-level container of functions" },
  { .name = "func.func", .traits = KL_TRAIT_ISOLATED | KL_TRAIT_SYMBOL, .max_operands = 0, .max_results = 0, .num_regions = 1,
    .print = print_func, .parse = parse_func,
    .verify = verify_func, .summary = "a function; entry block arguments are its parameters" },
  { .name = "func.return", .traits = KL_TRAIT_TERMINATOR, .max_operands = -1, .max_results = 0, .num_regions = 0,
    .print = print_return, .parse = parse_return,
    .summary = "returns from a func.func" },
  { .name = "func.call", .max_operands = -1, .max_results = -1, .num_regions = 0,
    .summary = "calls the function named by the symbol attribute 'callee'" },
  { .name = "arith.constant", .traits = P | KL_TRAIT_CONSTANT, .max_operands = 0, .min_results = 1, .max_results = 1,
    .print = print_constant, .parse = parse_constant,
    .required_attrs = need_value, .verify = verify_constant, .summary = "a scalar or splat constant" },
#define BIN(n, v, extra) { .name = n, .traits = P | ST | extra, .min_operands = 2, .max_operands = 2, .min_results = 1, .max_results = 1, .verify = v, .fold = fold_binary, .print = print_binary, .parse = parse_binary }
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
  { .name = "vector.broadcast", .traits = P, .min_operands = 1, .max_operands = 1, .min_results = 1, .max_results = 1,
    .verify = verify_broadcast, .summary = "a vector with every lane = the scalar operand" },
  { .name = "vector.shuffle", .traits = P, .min_operands = 2, .max_operands = 2, .min_results = 1, .max_results = 1,
    .verify = verify_shuffle, .summary = "lanes picked from the concatenation of two vectors by 'mask'" },
  { .name = "math.fma", .traits = P | ST, .min_operands = 3, .max_operands = 3, .min_results = 1, .max_results = 1,
    .verify = verify_fma, .summary = "a*b + c (fused where the target has it)" },
  { .name = "math.powf", .traits = P | ST, .min_operands = 2, .max_operands = 2, .min_results = 1, .max_results = 1,
    .verify = verify_float_op, .fold = fold_pow, .summary = "x^y (C pow semantics)" },
  { .name = "math.ipowi", .traits = P | ST, .min_operands = 2, .max_operands = 2, .min_results = 1, .max_results = 1,
    .verify = verify_int_op, .fold = fold_pow, .summary = "x^e on integers; negative e: 1/x^-e truncated" },
  UN("arith.negf"), UN("math.exp"), UN("math.log"), UN("math.sqrt"), UN("math.rsqrt"), UN("math.tanh"), UN("math.erf"), UN("math.absf"),
  UN("math.roundeven"), UN("math.floor"), UN("math.ceil"),
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
// clang-format on
#undef P
#undef ST

void kl_register_builtin_dialect(kl_ctx *ctx) {
  for (size_t i = 0; i < sizeof builtin_ops / sizeof *builtin_ops; i++) kl_register_op(ctx, &builtin_ops[i]);
}
