/* canonicalize.c — the `canonicalize` pass: the greedy driver with folds, dead pure-op
 * removal and every pattern of the context's registry whose name starts with
 * "canonical." (dialects register their canonical patterns that way). This file also
 * registers the canonical patterns of arith:
 *   canonical.commutative-constant-rhs   op(c, x) -> op(x, c) for commutative binary ops
 *   canonical.arith.reassociate-constants op(op(x, c1), c2) -> op(x, op(c1, c2)) for the
 *                                        associative integer ops (addi muli andi ori xori
 *                                        maxsi minsi); the inner op(c1, c2) then folds
 *   canonical.arith.subi-constant        x - c -> x + (-c)   (so chains reassociate)
 *   canonical.arith.add-sub-cancel       (x - y) + y -> x, (x + y) - y -> x, (x + y) - x -> y
 *   canonical.arith.xori-self            x ^ x -> 0
 *   canonical.arith.cmpi-self            cmpi(x, x) -> true (eq le ge) / false (ne lt gt)
 * Integer rewrites are exact in wrap-around arithmetic; floats are left alone (not
 * associative, x - x is not 0 for inf/nan). */
#include "passes/passes.h"
#include "core/rewrite.h"
#include "core/dialect_builtin.h"
#include <stdlib.h>
#include <string.h>

static bool is_const(kl_value *v) { return kl_value_constant(v) != NULL; }
static bool is_scalar_int(const kl_type *t) { return kl_type_is_int(t); }
static bool name_is(const kl_op *op, const char *name) { return !strcmp(op->name, name); }
static kl_value *opnd(const kl_op *op, int i) { return op->opnds[i].value; }

static kl_value *make_int_constant(kl_rewriter *rw, kl_loc loc, const kl_type *t, int64_t v) {
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_op *c = kl_rewriter_insert(rw, kl_build_constant(ctx, loc, kl_attr_int_typed(ctx, kl_wrap_int(t, v), t), t));
  return kl_op_result(c, 0);
}
static void replace_with_value(kl_rewriter *rw, kl_op *op, kl_value *v) { kl_rewriter_replace_op(rw, op, &v); }

static bool constant_to_rhs(const kl_pattern *p, kl_op *op, kl_rewriter *rw) {
  if (!kl_op_has_trait(op, KL_TRAIT_COMMUTATIVE) || op->nopnds != 2)
    return kl_rewriter_notify_no_match(rw, "not a commutative binary op");
  kl_value *a = opnd(op, 0), *b = opnd(op, 1);
  if (!is_const(a) || is_const(b)) return kl_rewriter_notify_no_match(rw, "the lhs is not the only constant operand");
  kl_rewriter_modify_start(rw, op);
  kl_op_set_operand(op, 0, b);
  kl_op_set_operand(op, 1, a);
  kl_rewriter_modify_end(rw, op);
  return true;
}

static const char *const assoc_ops[] = { "arith.addi", "arith.muli",  "arith.andi",  "arith.ori",
                                         "arith.xori", "arith.maxsi", "arith.minsi", NULL };
static bool reassociate(const kl_pattern *p, kl_op *op, kl_rewriter *rw) {
  bool assoc = false;
  for (int i = 0; assoc_ops[i]; i++)
    if (name_is(op, assoc_ops[i])) assoc = true;
  if (!assoc || op->nopnds != 2 || !is_scalar_int(op->results[0].type))
    return kl_rewriter_notify_no_match(rw, "not an associative integer op");
  kl_value *lhs = opnd(op, 0), *c2 = opnd(op, 1);
  kl_op *inner = lhs->def;
  if (!is_const(c2) || !inner || inner->name != op->name || inner->nopnds != 2)
    return kl_rewriter_notify_no_match(rw, "not of the form op(op(x, c1), c2)");
  kl_value *x = opnd(inner, 0), *c1 = opnd(inner, 1);
  if (!is_const(c1) || is_const(x)) return kl_rewriter_notify_no_match(rw, "inner op is not op(x, c1)");
  const kl_type *t = op->results[0].type;
  kl_value *cc[] = { c1, c2 };
  kl_op *folded = kl_rewriter_create(rw, op->name, op->loc, 2, cc, 1, &t, op->nattrs, op->attrs, 0);
  kl_value *nv[] = { x, kl_op_result(folded, 0) };
  kl_op *n = kl_rewriter_create(rw, op->name, op->loc, 2, nv, 1, &t, op->nattrs, op->attrs, 0);
  replace_with_value(rw, op, kl_op_result(n, 0));
  return true;
}

static bool subi_constant(const kl_pattern *p, kl_op *op, kl_rewriter *rw) {
  kl_value *x = opnd(op, 0), *c = opnd(op, 1);
  const kl_attr *ca = kl_value_constant(c);
  const kl_type *t = op->results[0].type;
  if (!ca || ca->kind != KL_AT_INT || is_const(x) || !is_scalar_int(t))
    return kl_rewriter_notify_no_match(rw, "not x - constant");
  kl_value *neg = make_int_constant(rw, op->loc, t, (int64_t)(0u - (uint64_t)ca->i));
  kl_value *ops[] = { x, neg };
  kl_op *add = kl_rewriter_create(rw, "arith.addi", op->loc, 2, ops, 1, &t, 0, NULL, 0);
  replace_with_value(rw, op, kl_op_result(add, 0));
  return true;
}

static bool add_sub_cancel(const kl_pattern *p, kl_op *op, kl_rewriter *rw) {
  if (op->nopnds != 2 || !is_scalar_int(op->results[0].type))
    return kl_rewriter_notify_no_match(rw, "not an integer binary op");
  kl_value *a = opnd(op, 0), *b = opnd(op, 1);
  kl_op *d = a->def;
  if (name_is(op, "arith.addi")) {
    /* (x - y) + y -> x, and y + (x - y) -> x */
    if (d && name_is(d, "arith.subi") && opnd(d, 1) == b) {
      replace_with_value(rw, op, opnd(d, 0));
      return true;
    }
    kl_op *e = b->def;
    if (e && name_is(e, "arith.subi") && opnd(e, 1) == a) {
      replace_with_value(rw, op, opnd(e, 0));
      return true;
    }
    return kl_rewriter_notify_no_match(rw, "no (x - y) + y");
  }
  if (d && name_is(d, "arith.addi")) {
    if (opnd(d, 1) == b) {
      replace_with_value(rw, op, opnd(d, 0));
      return true;
    } /* (x + y) - y */
    if (opnd(d, 0) == b) {
      replace_with_value(rw, op, opnd(d, 1));
      return true;
    } /* (x + y) - x */
  }
  return kl_rewriter_notify_no_match(rw, "no (x + y) - y");
}

static bool xori_self(const kl_pattern *p, kl_op *op, kl_rewriter *rw) {
  if (op->nopnds != 2 || opnd(op, 0) != opnd(op, 1) || !is_scalar_int(op->results[0].type))
    return kl_rewriter_notify_no_match(rw, "operands differ");
  replace_with_value(rw, op, make_int_constant(rw, op->loc, op->results[0].type, 0));
  return true;
}

static bool cmpi_self(const kl_pattern *p, kl_op *op, kl_rewriter *rw) {
  const char *pred = kl_op_attr_string(op, "predicate");
  if (op->nopnds != 2 || opnd(op, 0) != opnd(op, 1) || !pred || op->results[0].type->kind != KL_TY_I1)
    return kl_rewriter_notify_no_match(rw, "operands differ");
  bool r = !strcmp(pred, "eq") || !strcmp(pred, "le") || !strcmp(pred, "ge");
  replace_with_value(rw, op, make_int_constant(rw, op->loc, op->results[0].type, r));
  return true;
}

static const kl_pattern arith_patterns[] = {
  { NULL, 10, "canonical.commutative-constant-rhs", constant_to_rhs, NULL },
  { NULL, 5, "canonical.arith.reassociate-constants", reassociate, NULL },
  { "arith.subi", 5, "canonical.arith.subi-constant", subi_constant, NULL },
  { "arith.addi", 6, "canonical.arith.add-sub-cancel", add_sub_cancel, NULL },
  { "arith.subi", 6, "canonical.arith.sub-add-cancel", add_sub_cancel, NULL },
  { "arith.xori", 5, "canonical.arith.xori-self", xori_self, NULL },
  { "arith.cmpi", 5, "canonical.arith.cmpi-self", cmpi_self, NULL },
};

static kl_status run_canonicalize(kl_op *root, const kl_pass_options *o, void *user) {
  kl_ctx *ctx = root->ctx;
  int n = kl_pattern_count(ctx), np = 0;
  const kl_pattern **pats = kl_xmalloc((n + 1) * sizeof *pats);
  for (int i = 0; i < n; i++) {
    const kl_pattern *p = kl_pattern_at(ctx, i);
    if (p->name && !strncmp(p->name, "canonical.", 10)) pats[np++] = p;
  }
  kl_greedy_config cfg = kl_greedy_default();
  cfg.max_iterations = (int)kl_pass_opt_int(o, "max-iterations"); /* 0 (or no options): default */
  cfg.max_rewrites = (int)kl_pass_opt_int(o, "max-rewrites");
  kl_status st = kl_apply_patterns_greedy(root, pats, np, &cfg);
  free(pats);
  return st;
}

kl_status kl_canonicalize(kl_op *root) { return run_canonicalize(root, NULL, NULL); }

static const kl_pass_option canon_options[] = {
  { "max-iterations", KL_OPT_INT, "10", "whole-IR rounds before giving up (did not converge)" },
  { "max-rewrites", KL_OPT_INT, "0",
    "rewrites before giving up (did not converge); 0: 100000 or 16 per op, whichever is more" },
};

void kl__register_canonicalize(kl_ctx *ctx) {
  for (size_t i = 0; i < sizeof arith_patterns / sizeof *arith_patterns; i++)
    kl_register_pattern(ctx, &arith_patterns[i]);
  kl_pass_info info = {
    "canonicalize",   "folds, dead pure-op removal and every 'canonical.*' pattern, to a fixed point",
    canon_options,    2,
    run_canonicalize, NULL
  };
  kl_register_pass(ctx, &info);
}
