/* verify.c — structural, dominance and per-op verification. */
#include "core/verify.h"
#include <string.h>

typedef struct {
  int errors;
} vstate;

static void number_block(kl_block *b) {
  int64_t i = 0;
  for (kl_op *o = b->first; o; o = o->next) o->scratch = i++;
}

static kl_status check_contract(kl_op *op) {
  const kl_opdef *d = op->def;
  kl_ctx *ctx = op->ctx;
  if (!d) return KL_OK;
  if (op->nopnds < d->min_operands || (d->max_operands >= 0 && op->nopnds > d->max_operands)) {
    if (d->max_operands == d->min_operands)
      return kl_emit_error(ctx, op->loc, "'%s' expects %d operand%s, got %d", op->name, d->min_operands,
                           d->min_operands == 1 ? "" : "s", op->nopnds);
    if (d->max_operands < 0)
      return kl_emit_error(ctx, op->loc, "'%s' expects at least %d operands, got %d", op->name, d->min_operands,
                           op->nopnds);
    return kl_emit_error(ctx, op->loc, "'%s' expects %d to %d operands, got %d", op->name, d->min_operands,
                         d->max_operands, op->nopnds);
  }
  if (op->nresults < d->min_results || (d->max_results >= 0 && op->nresults > d->max_results))
    return kl_emit_error(ctx, op->loc, "'%s' expects %d%s result%s, got %d", op->name, d->min_results,
                         d->max_results == d->min_results ? "" : " or more", d->min_results == 1 ? "" : "s",
                         op->nresults);
  if (d->num_regions >= 0 && op->nregions != d->num_regions)
    return kl_emit_error(ctx, op->loc, "'%s' expects %d region%s, got %d", op->name, d->num_regions,
                         d->num_regions == 1 ? "" : "s", op->nregions);
  for (const char *const *a = d->required_attrs; a && *a; a++)
    if (!kl_op_attr(op, *a)) return kl_emit_error(ctx, op->loc, "'%s' requires attribute '%s'", op->name, *a);
  if (d->traits & KL_TRAIT_SAME_TYPES) {
    const kl_type *t = op->nresults ? op->results[0].type : (op->nopnds ? op->opnds[0].value->type : NULL);
    for (int i = 0; i < op->nopnds; i++)
      if (op->opnds[i].value->type != t)
        return kl_emit_error(ctx, op->loc,
                             "'%s' requires all operands and results to have one type; operand %d is %s, expected %s",
                             op->name, i, kl_type_str(op->opnds[i].value->type), kl_type_str(t));
    for (int i = 0; i < op->nresults; i++)
      if (op->results[i].type != t)
        return kl_emit_error(ctx, op->loc, "'%s' requires all operands and results to have one type; result %d is %s",
                             op->name, i, kl_type_str(op->results[i].type));
  }
  if ((d->traits & KL_TRAIT_SYMBOL) && !kl_op_attr_string(op, "sym_name"))
    return kl_emit_error(ctx, op->loc, "'%s' requires a string attribute 'sym_name'", op->name);
  return KL_OK;
}

/* Is value v visible at op user? */
static kl_status check_dominance(kl_op *user, int idx) {
  kl_value *v = user->opnds[idx].value;
  kl_ctx *ctx = user->ctx;
  if (!v) return kl_emit_error(ctx, user->loc, "'%s' operand %d is null", user->name, idx);
  kl_block *b = v->def ? v->def->block : v->block;
  kl_op *x = user;
  while (x && x->block != b) {
    kl_op *parent = kl_op_parent_op(x);
    if (parent && kl_op_has_trait(parent, KL_TRAIT_ISOLATED))
      return kl_emit_error(ctx, user->loc, "'%s' operand %d uses a value defined outside the isolated '%s'", user->name,
                           idx, parent->name);
    x = parent;
  }
  if (!x || !b)
    return kl_emit_error(ctx, user->loc, "'%s' operand %d does not dominate its use (defined in another region)",
                         user->name, idx);
  if (!v->def) return KL_OK;
  if (v->def == x || v->def->scratch >= x->scratch)
    return kl_emit_error(ctx, user->loc, "'%s' operand %d is used before its definition by '%s'", user->name, idx,
                         v->def->name);
  return KL_OK;
}

static void verify_op(kl_op *op, vstate *st);
static void verify_region(kl_op *op, kl_region *r, vstate *st) {
  for (kl_block *b = r->first; b; b = b->next) number_block(b);
  for (kl_block *b = r->first; b; b = b->next) {
    bool need_term = !kl_op_has_trait(op, KL_TRAIT_NO_TERMINATOR) && op->def;
    for (kl_op *o = b->first; o; o = o->next) {
      if (o->block != b) {
        kl_emit_error(op->ctx, o->loc, "'%s' has a broken parent link", o->name);
        st->errors++;
      }
      if (kl_op_has_trait(o, KL_TRAIT_TERMINATOR) && o->next) {
        kl_emit_error(op->ctx, o->loc, "terminator '%s' must be the last op of its block", o->name);
        st->errors++;
      }
      verify_op(o, st);
    }
    if (need_term && (!b->last || !kl_op_has_trait(b->last, KL_TRAIT_TERMINATOR))) {
      kl_emit_error(op->ctx, b->last ? b->last->loc : op->loc, "block in '%s' must end with a terminator", op->name);
      st->errors++;
    }
  }
}
static void verify_op(kl_op *op, vstate *st) {
  for (int i = 0; i < op->nopnds; i++)
    if (check_dominance(op, i) != KL_OK) {
      st->errors++;
      return;
    }
  if (check_contract(op) != KL_OK) {
    st->errors++;
    return;
  }
  for (int i = 0; i < op->nregions; i++) verify_region(op, &op->regions[i], st);
  if (op->def && op->def->verify && op->def->verify(op) != KL_OK) st->errors++;
}

kl_status kl_verify(kl_op *root) {
  vstate st = { 0 };
  if (root->block) number_block(root->block);
  for (int i = 0; i < root->nregions; i++) verify_region(root, &root->regions[i], &st);
  if (check_contract(root) != KL_OK)
    st.errors++;
  else if (root->def && root->def->verify && root->def->verify(root) != KL_OK)
    st.errors++;
  return st.errors ? KL_ERR : KL_OK;
}

const char *kl_level_name(unsigned level) {
  return level == KL_LEVEL_GRAPH ? "graph"
      : level == KL_LEVEL_KERNEL ? "kernel"
      : level == KL_LEVEL_LOOP   ? "loop"
                                 : "?";
}
typedef struct lstate {
  unsigned level;
  const char *who;
  int errors;
} lstate;
static kl_walk_result check_level(kl_op *op, void *user) {
  lstate *ls = user;
  if (kl_op_legal_at(op, ls->level)) return KL_WALK_ADVANCE;
  char legal[32] = "";
  unsigned mask = op->def ? op->def->levels : 0;
  for (unsigned b = KL_LEVEL_GRAPH; b <= KL_LEVEL_LOOP; b <<= 1)
    if (mask & b) {
      if (*legal) strcat(legal, ", ");
      strcat(legal, kl_level_name(b));
    }
  kl_emit_error(op->ctx, op->loc, "%s%s'%s' is not legal at the %s level (%s%s)", ls->who ? ls->who : "",
                ls->who ? ": " : "", op->name, kl_level_name(ls->level), *legal ? "legal at: " : "unregistered", legal);
  ls->errors++;
  return KL_WALK_SKIP;
}
kl_status kl_verify_level(kl_op *root, unsigned level, const char *who) {
  lstate ls = { level, who, 0 };
  kl_walk_pre(root, check_level, &ls);
  return ls.errors ? KL_ERR : KL_OK;
}
