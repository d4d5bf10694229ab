/* kiln_lua_op.c — "kiln.op" handles: printing, verifying, operands/results/attributes/
 * regions, walking, moving, erasing and replacing ops, and kl_lua__build_op (the
 * kiln.op{...} table). Mutations made while a Lua pattern runs on the context are routed
 * through that pattern's rewriter (kl_lua__active_rw), so the greedy driver sees them;
 * kl_lua__place keeps the pattern's insertion point (kl_rewriter_save_insertion). */
#include "lua/kiln_lua.h"
#include "core/print.h"
#include "core/verify.h"
#include <stdlib.h>
#include <string.h>

#define OP(i) ((kl_op *)kl_lua__check(L, (i), KL_LH_OP))

static int op_tostring(lua_State *L) {
  char *s = kl_print_op(OP(1), 0);
  size_t n = strlen(s);
  while (n && s[n - 1] == '\n') n--;
  lua_pushlstring(L, s, n);
  free(s);
  return 1;
}
static unsigned print_flags(lua_State *L, int idx) {
  unsigned f = 0;
  if (lua_istable(L, idx)) {
    static const char *const PRINT_OPTS[] = { "generic", "locs", NULL };
    kl_lua__check_opts(L, idx, "print", PRINT_OPTS);
    lua_getfield(L, idx, "generic");
    if (lua_toboolean(L, -1)) f |= KL_PRINT_GENERIC;
    lua_getfield(L, idx, "locs");
    if (lua_toboolean(L, -1)) f |= KL_PRINT_LOCS;
    lua_pop(L, 2);
  } else if (!lua_isnoneornil(L, idx))
    luaL_typeerror(L, idx, "table {generic=, locs=}");
  return f;
}
static int op_print(lua_State *L) {
  kl_op *op = OP(1);
  lua_settop(L, 2);
  kl_lua__busy_guard(L, kl_lua__push_handle_ctxud(L, 1), "op:print"); /* options: metamethods */
  char *s = kl_print_op(op, print_flags(L, 2));
  lua_pushstring(L, s);
  free(s);
  return 1;
}
static int op_verify(lua_State *L) {
  kl_op *op = OP(1);
  kl_lua__flush_diags(op->ctx);
  if (kl_verify(op) != KL_OK) return kl_lua__diag_error(L, op->ctx, "op:verify", "verification failed");
  kl_lua__flush_diags(op->ctx);
  lua_pushboolean(L, 1);
  return 1;
}

static kl_value *get_operand(void *o, int i) { return ((kl_op *)o)->opnds[i].value; }
static kl_value *get_result(void *o, int i) { return &((kl_op *)o)->results[i]; }

static int op_operands(lua_State *L) {
  kl_op *op = OP(1);
  return kl_lua__push_values(L, 1, op->nopnds, get_operand, op);
}
static int op_results(lua_State *L) {
  kl_op *op = OP(1);
  return kl_lua__push_values(L, 1, op->nresults, get_result, op);
}
static int op_operand(lua_State *L) {
  kl_op *op = OP(1);
  int i = kl_lua__opt_index(L, 2, op->nopnds);
  kl_lua__push_like(L, 1, KL_LH_VALUE, i < 0 ? NULL : op->opnds[i].value);
  return 1;
}
static int op_result(lua_State *L) {
  kl_op *op = OP(1);
  int i = lua_isnoneornil(L, 2) ? (op->nresults ? 0 : -1) : kl_lua__opt_index(L, 2, op->nresults);
  kl_lua__push_like(L, 1, KL_LH_VALUE, i < 0 ? NULL : &op->results[i]);
  return 1;
}
static int push_types(lua_State *L, int from, int n, const kl_type *(*get)(kl_op *, int), kl_op *op) {
  int c = kl_lua__push_handle_ctxud(L, from);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    kl_lua__push(L, c, KL_LH_TYPE, get(op, i));
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}
static const kl_type *operand_type(kl_op *op, int i) { return op->opnds[i].value ? op->opnds[i].value->type : NULL; }
static const kl_type *result_type(kl_op *op, int i) { return op->results[i].type; }
static int op_operand_types(lua_State *L) {
  kl_op *op = OP(1);
  return push_types(L, 1, op->nopnds, operand_type, op);
}
static int op_result_types(lua_State *L) {
  kl_op *op = OP(1);
  return push_types(L, 1, op->nresults, result_type, op);
}

static int op_attr(lua_State *L) {
  kl_op *op = OP(1);
  const kl_attr *a = kl_op_attr(op, luaL_checkstring(L, 2));
  int c = kl_lua__push_handle_ctxud(L, 1);
  kl_lua__push_attr_value(L, c, a);
  return 1;
}
static int op_attribute(lua_State *L) {
  kl_op *op = OP(1);
  kl_lua__push_like(L, 1, KL_LH_ATTR, kl_op_attr(op, luaL_checkstring(L, 2)));
  return 1;
}
static int op_attrs_impl(lua_State *L, bool handles) {
  kl_op *op = OP(1);
  int c = kl_lua__push_handle_ctxud(L, 1);
  lua_createtable(L, 0, op->nattrs);
  for (int i = 0; i < op->nattrs; i++) {
    if (handles)
      kl_lua__push(L, c, KL_LH_ATTR, op->attrs[i].value);
    else
      kl_lua__push_attr_value(L, c, op->attrs[i].value);
    lua_setfield(L, -2, op->attrs[i].name);
  }
  return 1;
}
static int op_attrs(lua_State *L) { return op_attrs_impl(L, false); }
static int op_attributes(lua_State *L) { return op_attrs_impl(L, true); }

void kl_lua__set_attr(lua_State *L, kl_op *op, const char *name, int vidx) {
  const kl_attr *a = kl_lua__toattr(L, vidx, op->ctx);
  kl_rewriter *rw = kl_lua__active_rw(op->ctx);
  name = kl_intern(op->ctx, name);
  if (rw)
    kl_rewriter_set_attr(rw, op, name, a);
  else
    kl_op_set_attr(op, name, a);
}
static int op_set_attr(lua_State *L) {
  kl_lua__set_attr(L, OP(1), luaL_checkstring(L, 2), 3);
  lua_settop(L, 1);
  return 1;
}
static int op_remove_attr(lua_State *L) {
  lua_settop(L, 2);
  lua_pushnil(L);
  return op_set_attr(L);
}

static int op_regions(lua_State *L) {
  kl_op *op = OP(1);
  int c = kl_lua__push_handle_ctxud(L, 1);
  lua_createtable(L, op->nregions, 0);
  for (int i = 0; i < op->nregions; i++) {
    kl_lua__push(L, c, KL_LH_REGION, &op->regions[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}
static int op_region(lua_State *L) {
  kl_op *op = OP(1);
  int i = lua_isnoneornil(L, 2) ? (op->nregions ? 0 : -1) : kl_lua__opt_index(L, 2, op->nregions);
  kl_lua__push_like(L, 1, KL_LH_REGION, i < 0 ? NULL : &op->regions[i]);
  return 1;
}
static int op_body(lua_State *L) { /* entry block of region 1 */
  kl_op *op = OP(1);
  kl_lua__push_like(L, 1, KL_LH_BLOCK, op->nregions ? op->regions[0].first : NULL);
  return 1;
}
static int op_parent(lua_State *L) {
  kl_lua__push_like(L, 1, KL_LH_OP, kl_op_parent_op(OP(1)));
  return 1;
}

/* Every result's uses must lie inside op itself. */
static bool results_used_outside(kl_op *op) {
  for (int i = 0; i < op->nresults; i++)
    for (kl_use *u = op->results[i].first_use; u; u = u->next)
      if (!kl_op_is_ancestor(op, u->user)) return true;
  return false;
}
int kl_lua__erase(lua_State *L, kl_op *op) {
  kl_rewriter *rw = kl_lua__active_rw(op->ctx);
  if (results_used_outside(op))
    return kl_lua__rt_error(L, "kiln", "cannot erase '%s': its results still have uses", op->name);
  if (rw) {
    if (!op->block)
      return kl_lua__rt_error(L, "kiln", "cannot erase '%s' inside a pattern: it is not in the IR", op->name);
    kl_rewriter_erase_op(rw, op);
  } else if (kl_op_erase(op) != KL_OK)
    return kl_lua__diag_error(L, op->ctx, "erase", "erase failed");
  return 0;
}
static int op_erase(lua_State *L) { return kl_lua__erase(L, OP(1)); }

static bool has_null_operand(kl_op *op) {
  int n;
  kl_op **ops = kl_collect_ops(op, &n);
  bool bad = false;
  for (int k = 0; k < n && !bad; k++)
    for (int i = 0; i < ops[k]->nopnds; i++)
      if (!ops[k]->opnds[i].value) {
        bad = true;
        break;
      }
  free(ops);
  return bad;
}

/* Moves (or inserts) op: where 0 = before anchor, 1 = after anchor, 2 = end of block,
 * 3 = start of block. Checks context membership and cycles. */
void kl_lua__place(lua_State *L, kl_op *op, int where, kl_op *anchor, kl_block *block) {
  if (anchor) {
    if (anchor == op) kl_lua__rt_error(L, "kiln", "cannot insert an op next to itself");
    if (!anchor->block) kl_lua__rt_error(L, "kiln", "the anchor op '%s' is not in a block", anchor->name);
    block = anchor->block;
  }
  kl_op *parent = (block->region) ? block->region->op : NULL;
  if (parent && kl_op_is_ancestor(op, parent))
    kl_lua__rt_error(L, "kiln", "cannot insert '%s' into its own region", op->name);
  if (has_null_operand(op))
    kl_lua__rt_error(L, "kiln", "cannot insert '%s': it (or an op nested in it) has been erased", op->name);
  kl_rewriter *rw = kl_lua__active_rw(op->ctx);
  if (op->block) kl_op_unlink(op);
  if (rw) { /* the pattern's insertion point is put back afterwards (rewrite.h) */
    kl_insertion_point saved = kl_rewriter_save_insertion(rw);
    if (where == KL_LUA_AT_BEFORE)
      kl_rewriter_set_insertion_before(rw, anchor);
    else if (where == KL_LUA_AT_AFTER)
      kl_rewriter_set_insertion_after(rw, anchor);
    else if (where == KL_LUA_AT_START && block->first)
      kl_rewriter_set_insertion_before(rw, block->first);
    else
      kl_rewriter_set_insertion_end(rw, block);
    kl_rewriter_insert(rw, op);
    kl_rewriter_restore_insertion(rw, saved);
    return;
  }
  if (where == KL_LUA_AT_BEFORE)
    kl_op_insert_before(anchor, op);
  else if (where == KL_LUA_AT_AFTER)
    kl_op_insert_after(anchor, op);
  else if (where == KL_LUA_AT_START && block->first)
    kl_op_insert_before(block->first, op);
  else
    kl_block_push_op(block, op);
}
static int op_insert_at(lua_State *L, int where) {
  kl_op *op = OP(1);
  kl_op *anchor = kl_lua__check_op_in(L, 2, op->ctx);
  kl_lua__place(L, op, where, anchor, NULL);
  lua_settop(L, 1);
  return 1;
}
static int op_insert_before(lua_State *L) { return op_insert_at(L, KL_LUA_AT_BEFORE); }
static int op_insert_after(lua_State *L) { return op_insert_at(L, KL_LUA_AT_AFTER); }
static int op_detach(lua_State *L) {
  kl_op *op = OP(1);
  if (kl_lua__active_rw(op->ctx))
    return kl_lua__rt_error(L, "kiln", "op:detach() is not allowed inside a pattern (use rw:erase or rw:replace)");
  kl_op_unlink(op);
  lua_settop(L, 1);
  return 1;
}
static int op_clone(lua_State *L) {
  kl_lua__push_like(L, 1, KL_LH_OP, kl_op_clone(OP(1), NULL));
  return 1;
}

static void set_operand(lua_State *L, kl_op *op, int i, kl_value *v) {
  kl_rewriter *rw = kl_lua__active_rw(op->ctx);
  if (rw)
    kl_rewriter_set_operand(rw, op, i, v);
  else
    kl_op_set_operand(op, i, v);
}
static int op_set_operand(lua_State *L) {
  kl_op *op = OP(1);
  int i = kl_lua__opt_index(L, 2, op->nopnds);
  if (i < 0) return luaL_argerror(L, 2, "operand index out of range");
  set_operand(L, op, i, kl_lua__check_value_in(L, 3, op->ctx));
  lua_settop(L, 1);
  return 1;
}
static int op_set_operands(lua_State *L) {
  kl_op *op = OP(1);
  lua_settop(L, 2);
  kl_lua__busy_guard(L, kl_lua__push_handle_ctxud(L, 1), "op:set_operands"); /* the list: metamethods */
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 2);
  if (n < 0 || n > (1 << 20)) return luaL_argerror(L, 2, "too many operands");
  kl_value **vals = kl_lua__tmp(L, (size_t)n * sizeof *vals);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 2, i);
    vals[i - 1] = kl_lua__check_value_in(L, -1, op->ctx);
    lua_pop(L, 1);
  }
  kl_rewriter *rw = kl_lua__active_rw(op->ctx);
  if (rw) kl_rewriter_modify_start(rw, op);
  kl_op_set_operands(op, (int)n, vals);
  if (rw) kl_rewriter_modify_end(rw, op);
  lua_settop(L, 1);
  return 1;
}

/* Reads a replacement for op's results at idx: an op (its results), a value, or a
 * table of values. Returns a GC-managed array (pushed) of op->nresults values. */
kl_value **kl_lua__replacements(lua_State *L, kl_op *op, int idx) {
  idx = lua_absindex(L, idx);
  kl_value **vals = kl_lua__tmp(L, (size_t)(op->nresults + 1) * sizeof *vals);
  kl_op *other = kl_lua__test(L, idx, KL_LH_OP);
  if (other) {
    kl_lua__check_op_in(L, idx, op->ctx);
    if (other->nresults != op->nresults)
      kl_lua__rt_error(L, "kiln", "'%s' has %d results but its replacement '%s' has %d", op->name, op->nresults,
                       other->name, other->nresults);
    for (int i = 0; i < op->nresults; i++) vals[i] = &other->results[i];
  } else if (kl_lua__test(L, idx, KL_LH_VALUE)) {
    if (op->nresults != 1)
      kl_lua__rt_error(L, "kiln", "'%s' has %d results; pass a table of values", op->name, op->nresults);
    vals[0] = kl_lua__check_value_in(L, idx, op->ctx);
  } else {
    luaL_checktype(L, idx, LUA_TTABLE);
    if (luaL_len(L, idx) != op->nresults)
      kl_lua__rt_error(L, "kiln", "'%s' has %d results but %d replacement values were given", op->name, op->nresults,
                       (int)luaL_len(L, idx));
    for (int i = 0; i < op->nresults; i++) {
      lua_geti(L, idx, i + 1);
      vals[i] = kl_lua__check_value_in(L, -1, op->ctx);
      lua_pop(L, 1);
    }
  }
  for (int i = 0; i < op->nresults; i++)
    if (vals[i]->def && kl_op_is_ancestor(op, vals[i]->def))
      kl_lua__rt_error(L, "kiln", "cannot replace '%s' with a value it defines itself", op->name);
  return vals;
}
static int op_replace_all_uses_with(lua_State *L) {
  kl_op *op = OP(1);
  lua_settop(L, 2);
  kl_lua__busy_guard(L, kl_lua__push_handle_ctxud(L, 1), "op:replace_all_uses_with"); /* the list: metamethods */
  kl_value **vals = kl_lua__replacements(L, op, 2);
  kl_rewriter *rw = kl_lua__active_rw(op->ctx);
  for (int i = 0; i < op->nresults; i++) {
    if (rw)
      kl_rewriter_replace_all_uses(rw, &op->results[i], vals[i]);
    else
      kl_value_replace_all_uses(&op->results[i], vals[i]);
  }
  return 0;
}
static int op_replace_with(lua_State *L) { /* replace uses, then erase */
  kl_op *op = OP(1);
  lua_settop(L, 2);
  kl_lua__busy_guard(L, kl_lua__push_handle_ctxud(L, 1), "op:replace_with"); /* the list: metamethods */
  kl_value **vals = kl_lua__replacements(L, op, 2);
  kl_rewriter *rw = kl_lua__active_rw(op->ctx);
  if (rw) {
    if (!op->block)
      return kl_lua__rt_error(L, "kiln", "cannot replace '%s' inside a pattern: it is not in the IR", op->name);
    kl_rewriter_replace_op(rw, op, vals);
    return 0;
  }
  for (int i = 0; i < op->nresults; i++) kl_value_replace_all_uses(&op->results[i], vals[i]);
  return kl_lua__erase(L, op);
}
static int op_users(lua_State *L) {
  kl_op *op = OP(1);
  return kl_lua__push_users(L, 1, op->results, op->nresults);
}

static const struct {
  const char *name;
  unsigned bit;
} trait_names[] = { { "pure", KL_TRAIT_PURE },
                    { "terminator", KL_TRAIT_TERMINATOR },
                    { "view", KL_TRAIT_VIEW },
                    { "fusing", KL_TRAIT_FUSING },
                    { "isolated", KL_TRAIT_ISOLATED },
                    { "commutative", KL_TRAIT_COMMUTATIVE },
                    { "constant", KL_TRAIT_CONSTANT },
                    { "symbol", KL_TRAIT_SYMBOL },
                    { "same_types", KL_TRAIT_SAME_TYPES },
                    { "no_terminator", KL_TRAIT_NO_TERMINATOR },
                    { "elementwise", KL_TRAIT_ELEMENTWISE },
                    { "invertible_view", KL_TRAIT_INVERTIBLE_VIEW },
                    { "gemm_anchor", KL_TRAIT_GEMM_ANCHOR },
                    { NULL, 0 } };
static int op_has_trait(lua_State *L) {
  kl_op *op = OP(1);
  const char *t = luaL_checkstring(L, 2);
  for (int i = 0; trait_names[i].name; i++)
    if (!strcmp(trait_names[i].name, t)) {
      lua_pushboolean(L, kl_op_has_trait(op, trait_names[i].bit));
      return 1;
    }
  return luaL_argerror(L, 2,
                       "unknown trait (pure, terminator, view, fusing, isolated, commutative, constant, symbol, "
                       "same_types, no_terminator, "
                       "elementwise, invertible_view, gemm_anchor)");
}
static int op_is_ancestor_of(lua_State *L) {
  kl_op *op = OP(1);
  kl_op *o = kl_lua__check_op_in(L, 2, op->ctx);
  lua_pushboolean(L, kl_op_is_ancestor(op, o));
  return 1;
}
static int op_is_before(lua_State *L) {
  kl_op *op = OP(1);
  kl_op *o = kl_lua__check_op_in(L, 2, op->ctx);
  lua_pushboolean(L, op->block && op->block == o->block && kl_op_is_before_in_block(op, o));
  return 1;
}
static int op_lookup(lua_State *L) { /* symbol lookup in a module */
  kl_op *op = OP(1);
  kl_lua__push_like(L, 1, KL_LH_OP, kl_module_lookup(op, luaL_checkstring(L, 2)));
  return 1;
}

/* walk(fn [, opts]): pre-order (or opts.order == "post") over op and everything nested
 * in it; fn(op) may return "skip" (pre-order: do not visit its regions) or "stop". The
 * next op is read before fn runs, so fn may erase the op it is given. */
typedef struct {
  int fn, ctxud;
  bool post;
  const char *name;
} walk_st;
static int walk_call(lua_State *L, walk_st *w, kl_op *op) {
  if (w->name && strcmp(op->name, w->name) != 0) return 0;
  lua_pushvalue(L, w->fn);
  kl_lua__push(L, w->ctxud, KL_LH_OP, op);
  lua_call(L, 1, 1);
  const char *r = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  int res = !r ? 0 : !strcmp(r, "stop") ? 2 : !strcmp(r, "skip") ? 1 : 0;
  lua_pop(L, 1);
  return res;
}
static bool walk_rec(lua_State *L, walk_st *w, kl_op *op, int depth) { /* true = stop */
  luaL_checkstack(L, 8, "kiln: walk nested too deeply");
  if (depth > 10000) kl_lua__rt_error(L, "kiln", "walk nested too deeply");
  if (!w->post) {
    int r = walk_call(L, w, op);
    if (r == 2) return true;
    if (r == 1) return false;
  }
  for (int i = 0; i < op->nregions; i++)
    for (kl_block *b = op->regions[i].first; b; b = b->next)
      for (kl_op *o = b->first, *next; o; o = next) {
        next = o->next;
        if (walk_rec(L, w, o, depth + 1)) return true;
      }
  return w->post && walk_call(L, w, op) == 2;
}
static int op_walk(lua_State *L) {
  kl_op *op = OP(1);
  walk_st w = { 0 };
  int fn = 2, o = 3;
  if (lua_type(L, 2) == LUA_TSTRING) {
    w.name = lua_tostring(L, 2);
    fn = 3;
    o = 4;
  } /* walk("name", fn) */
  luaL_checktype(L, fn, LUA_TFUNCTION);
  w.fn = fn;
  if (lua_istable(L, o)) {
    static const char *const WALK_OPTS[] = { "order", "name", NULL };
    kl_lua__check_opts(L, o, "walk", WALK_OPTS);
    lua_getfield(L, o, "order");
    w.post = lua_type(L, -1) == LUA_TSTRING && !strcmp(lua_tostring(L, -1), "post");
    lua_getfield(L, o, "name");
    if (lua_type(L, -1) == LUA_TSTRING) w.name = lua_tostring(L, -1); /* anchored by opts */
    lua_pop(L, 2);
  } else if (lua_type(L, o) == LUA_TSTRING)
    w.post = !strcmp(lua_tostring(L, o), "post");
  w.ctxud = kl_lua__push_handle_ctxud(L, 1);
  kl_lua__busy_guard(L, w.ctxud, "op:walk");
  lua_pushboolean(L, !walk_rec(L, &w, op, 0));
  return 1;
}

static int op_p_name(lua_State *L) {
  lua_pushstring(L, OP(1)->name);
  return 1;
}
static int op_p_loc(lua_State *L) {
  kl_lua__push_loc(L, OP(1)->loc);
  return 1;
}
static int op_p_ctx(lua_State *L) {
  OP(1);
  kl_lua__push_handle_ctxud(L, 1);
  return 1;
}
static int op_p_block(lua_State *L) {
  kl_lua__push_like(L, 1, KL_LH_BLOCK, OP(1)->block);
  return 1;
}
static int op_p_next(lua_State *L) {
  kl_lua__push_like(L, 1, KL_LH_OP, OP(1)->next);
  return 1;
}
static int op_p_prev(lua_State *L) {
  kl_lua__push_like(L, 1, KL_LH_OP, OP(1)->prev);
  return 1;
}
static int op_p_num_operands(lua_State *L) {
  lua_pushinteger(L, OP(1)->nopnds);
  return 1;
}
static int op_p_num_results(lua_State *L) {
  lua_pushinteger(L, OP(1)->nresults);
  return 1;
}
static int op_p_num_regions(lua_State *L) {
  lua_pushinteger(L, OP(1)->nregions);
  return 1;
}
static int op_p_registered(lua_State *L) {
  lua_pushboolean(L, OP(1)->def != NULL);
  return 1;
}
static int op_p_summary(lua_State *L) {
  kl_op *op = OP(1);
  lua_pushstring(L, op->def ? op->def->summary : NULL);
  return 1;
}
static int op_set_loc(lua_State *L) {
  kl_op *op = OP(1);
  op->loc = kl_lua__toloc(L, 2, op->ctx);
  lua_settop(L, 1);
  return 1;
}

static void conv_value(lua_State *L, int idx, kl_ctx *ctx, void *out) {
  *(kl_value **)out = kl_lua__check_value_in(L, idx, ctx);
}
static void conv_type(lua_State *L, int idx, kl_ctx *ctx, void *out) {
  *(const kl_type **)out = kl_lua__totype(L, idx, ctx);
}

/* Reads field `name` of the table at idx: nil (0 entries), a list, or a single item;
 * each item converted by conv into a GC-managed array left on the stack (*out). */
static int read_list(lua_State *L, int idx, const char *name, kl_ctx *ctx, size_t elem,
                     void (*conv)(lua_State *, int, kl_ctx *, void *), void **out) {
  int t = lua_getfield(L, idx, name);
  int list = lua_gettop(L);
  if (t == LUA_TNIL) return 0;
  lua_Integer n = t == LUA_TTABLE ? luaL_len(L, list) : 1;
  if (n < 0 || n > (1 << 20)) kl_lua__rt_error(L, "kiln", "too many %s", name);
  char *arr = kl_lua__tmp(L, (size_t)n * elem);
  if (t != LUA_TTABLE)
    conv(L, list, ctx, arr);
  else
    for (lua_Integer i = 1; i <= n; i++) {
      lua_geti(L, list, i);
      conv(L, -1, ctx, arr + (size_t)(i - 1) * elem);
      lua_pop(L, 1);
    }
  *out = arr;
  return (int)n;
}

kl_op *kl_lua__build_op(lua_State *L, int idx, kl_ctx *ctx) {
  idx = lua_absindex(L, idx);
  int top = lua_gettop(L);
  luaL_checktype(L, idx, LUA_TTABLE);
  static const char *const OP_FIELDS[] = { "name", "operands", "results", "attrs", "regions",
                                           "loc",  "names",    "ctx",     NULL };
  kl_lua__check_opts(L, idx, "kiln.op", OP_FIELDS);
  if (lua_getfield(L, idx, "name") != LUA_TSTRING || !lua_rawlen(L, -1))
    kl_lua__rt_error(L, "kiln", "op{...} needs a name (\"dialect.op\")");
  const char *name = kl_intern(ctx, lua_tostring(L, -1));
  /* operands: a list of values; results: a list of types, or one type */
  kl_value **opnds = NULL;
  int nop = read_list(L, idx, "operands", ctx, sizeof *opnds, conv_value, (void **)&opnds);
  const kl_type **types = NULL;
  int nres = read_list(L, idx, "results", ctx, sizeof *types, conv_type, (void **)&types);
  /* attributes */
  int nattr = 0;
  kl_named_attr *attrs = NULL;
  if (lua_getfield(L, idx, "attrs") != LUA_TNIL) {
    int t = lua_gettop(L);
    luaL_checktype(L, t, LUA_TTABLE);
    int count = 0;
    for (lua_pushnil(L); lua_next(L, t); lua_pop(L, 1)) count++;
    attrs = kl_lua__tmp(L, (size_t)count * sizeof *attrs);
    for (lua_pushnil(L); lua_next(L, t); lua_pop(L, 1)) {
      if (lua_type(L, -2) != LUA_TSTRING) kl_lua__rt_error(L, "kiln", "attribute names must be strings");
      attrs[nattr].name = kl_intern(ctx, lua_tostring(L, -2));
      attrs[nattr].value = kl_lua__toattr(L, -1, ctx);
      if (attrs[nattr].value) nattr++;
    }
  }
  lua_getfield(L, idx, "regions");
  lua_Integer nreg = luaL_optinteger(L, -1, 0);
  if (nreg < 0 || nreg > 64) kl_lua__rt_error(L, "kiln", "op{...}.regions must be a count between 0 and 64");
  lua_getfield(L, idx, "loc");
  kl_loc loc = kl_lua__toloc(L, -1, ctx);
  kl_op *op = kl_op_create(ctx, name, loc, nop, opnds, nres, types, nattr, attrs, (int)nreg);
  if (lua_getfield(L, idx, "names") == LUA_TTABLE)
    for (int i = 0; i < nres; i++) {
      if (lua_geti(L, -1, i + 1) == LUA_TSTRING) op->results[i].name_hint = kl_intern(ctx, lua_tostring(L, -1));
      lua_pop(L, 1);
    }
  lua_settop(L, top);
  return op;
}

void kl_lua__open_op(lua_State *L) {
  int mod = lua_gettop(L);
  static const luaL_Reg handle_meta_op[] = { { "__tostring", op_tostring },
                                             { "__eq", kl_lua__handle_eq },
                                             { NULL, NULL } };
  static const luaL_Reg op_methods[] = { { "print", op_print },
                                         { "verify", op_verify },
                                         { "walk", op_walk },
                                         { "operands", op_operands },
                                         { "operand", op_operand },
                                         { "results", op_results },
                                         { "result", op_result },
                                         { "operand_types", op_operand_types },
                                         { "result_types", op_result_types },
                                         { "attr", op_attr },
                                         { "attribute", op_attribute },
                                         { "attrs", op_attrs },
                                         { "attributes", op_attributes },
                                         { "set_attr", op_set_attr },
                                         { "remove_attr", op_remove_attr },
                                         { "regions", op_regions },
                                         { "region", op_region },
                                         { "body", op_body },
                                         { "parent", op_parent },
                                         { "erase", op_erase },
                                         { "insert_before", op_insert_before },
                                         { "insert_after", op_insert_after },
                                         { "detach", op_detach },
                                         { "clone", op_clone },
                                         { "set_operand", op_set_operand },
                                         { "set_operands", op_set_operands },
                                         { "replace_all_uses_with", op_replace_all_uses_with },
                                         { "replace_with", op_replace_with },
                                         { "users", op_users },
                                         { "has_trait", op_has_trait },
                                         { "is_ancestor_of", op_is_ancestor_of },
                                         { "is_before", op_is_before },
                                         { "lookup", op_lookup },
                                         { "set_loc", op_set_loc },
                                         { NULL, NULL } };
  static const luaL_Reg op_props[] = { { "name", op_p_name },
                                       { "loc", op_p_loc },
                                       { "ctx", op_p_ctx },
                                       { "block", op_p_block },
                                       { "next", op_p_next },
                                       { "prev", op_p_prev },
                                       { "num_operands", op_p_num_operands },
                                       { "num_results", op_p_num_results },
                                       { "num_regions", op_p_num_regions },
                                       { "registered", op_p_registered },
                                       { "summary", op_p_summary },
                                       { NULL, NULL } };
  kl_lua__class(L, mod, kl_lua__mt_names[KL_LH_OP], "op", op_methods, op_props, handle_meta_op);
}
