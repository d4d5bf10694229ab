/* kiln_lua_ir.c — Lua methods of op, value, block, region, type and attribute handles,
 * and the module functions that make IR (kiln.parse, kiln.type, kiln.attr, kiln.op,
 * kiln.block, kiln.module). Mutations made while a Lua pattern runs on the context
 * are routed through that pattern's rewriter, so the greedy driver sees them. */
#include "lua/kiln_lua.h"
#include "core/parse.h"
#include "core/print.h"
#include "core/verify.h"
#include <stdlib.h>
#include <string.h>

#define OP(i)     ((kl_op *)kl_lua__check(L, (i), KL_LH_OP))
#define VALUE(i)  ((kl_value *)kl_lua__check(L, (i), KL_LH_VALUE))
#define BLOCK(i)  ((kl_block *)kl_lua__check(L, (i), KL_LH_BLOCK))
#define REGION(i) ((kl_region *)kl_lua__check(L, (i), KL_LH_REGION))
#define TYPE(i)   ((const kl_type *)kl_lua__check(L, (i), KL_LH_TYPE))
#define ATTR(i)   ((const kl_attr *)kl_lua__check(L, (i), KL_LH_ATTR))

/* Pushes handle `p` of `kind` in the context of the handle at `from`. */
static void push_like(lua_State *L, int from, int kind, const void *p) {
  int c = kl_lua__push_handle_ctxud(L, from);
  kl_lua__push(L, c, kind, p);
  lua_remove(L, c);
}
static kl_rewriter *active_rw(kl_ctx *ctx) {
  kl_lua_ctxstate *st = kl_lua__state(ctx);
  return st ? st->rw : NULL;
}
static int opt_index(lua_State *L, int idx, int n) {   /* 1-based Lua index -> 0-based, -1 if out of range */
  lua_Integer i = luaL_checkinteger(L, idx);
  return (i >= 1 && i <= n) ? (int)(i - 1) : -1;
}

/* ================================================================== ops ==== */
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
    lua_getfield(L, idx, "generic"); if (lua_toboolean(L, -1)) f |= KL_PRINT_GENERIC;
    lua_getfield(L, idx, "locs"); if (lua_toboolean(L, -1)) f |= KL_PRINT_LOCS;
    lua_pop(L, 2);
  } else if (!lua_isnoneornil(L, idx)) luaL_typeerror(L, idx, "table {generic=, locs=}");
  return f;
}
static int op_print(lua_State *L) {
  kl_op *op = OP(1);
  lua_settop(L, 2); kl_lua__busy_guard(L, kl_lua__push_handle_ctxud(L, 1), "op:print");   /* options: metamethods */
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

static int push_values(lua_State *L, int from, int n, kl_value *(*get)(void *, int), void *obj) {
  int c = kl_lua__push_handle_ctxud(L, from);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) { kl_lua__push(L, c, KL_LH_VALUE, get(obj, i)); lua_rawseti(L, -2, i + 1); }
  return 1;
}
static kl_value *get_operand(void *o, int i) { return ((kl_op *)o)->opnds[i].value; }
static kl_value *get_result(void *o, int i) { return &((kl_op *)o)->results[i]; }
static kl_value *get_arg(void *b, int i) { return ((kl_block *)b)->args[i]; }

static int op_operands(lua_State *L) { kl_op *op = OP(1); return push_values(L, 1, op->nopnds, get_operand, op); }
static int op_results(lua_State *L) { kl_op *op = OP(1); return push_values(L, 1, op->nresults, get_result, op); }
static int op_operand(lua_State *L) {
  kl_op *op = OP(1); int i = opt_index(L, 2, op->nopnds);
  push_like(L, 1, KL_LH_VALUE, i < 0 ? NULL : op->opnds[i].value);
  return 1;
}
static int op_result(lua_State *L) {
  kl_op *op = OP(1); int i = lua_isnoneornil(L, 2) ? (op->nresults ? 0 : -1) : opt_index(L, 2, op->nresults);
  push_like(L, 1, KL_LH_VALUE, i < 0 ? NULL : &op->results[i]);
  return 1;
}
static int push_types(lua_State *L, int from, int n, const kl_type *(*get)(kl_op *, int), kl_op *op) {
  int c = kl_lua__push_handle_ctxud(L, from);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) { kl_lua__push(L, c, KL_LH_TYPE, get(op, i)); lua_rawseti(L, -2, i + 1); }
  return 1;
}
static const kl_type *operand_type(kl_op *op, int i) { return op->opnds[i].value ? op->opnds[i].value->type : NULL; }
static const kl_type *result_type(kl_op *op, int i) { return op->results[i].type; }
static int op_operand_types(lua_State *L) { kl_op *op = OP(1); return push_types(L, 1, op->nopnds, operand_type, op); }
static int op_result_types(lua_State *L) { kl_op *op = OP(1); return push_types(L, 1, op->nresults, result_type, op); }

static int op_attr(lua_State *L) {
  kl_op *op = OP(1);
  const kl_attr *a = kl_op_attr(op, luaL_checkstring(L, 2));
  int c = kl_lua__push_handle_ctxud(L, 1);
  kl_lua__push_attr_value(L, c, a);
  return 1;
}
static int op_attribute(lua_State *L) {
  kl_op *op = OP(1);
  push_like(L, 1, KL_LH_ATTR, kl_op_attr(op, luaL_checkstring(L, 2)));
  return 1;
}
static int op_attrs_impl(lua_State *L, bool handles) {
  kl_op *op = OP(1);
  int c = kl_lua__push_handle_ctxud(L, 1);
  lua_createtable(L, 0, op->nattrs);
  for (int i = 0; i < op->nattrs; i++) {
    if (handles) kl_lua__push(L, c, KL_LH_ATTR, op->attrs[i].value);
    else kl_lua__push_attr_value(L, c, op->attrs[i].value);
    lua_setfield(L, -2, op->attrs[i].name);
  }
  return 1;
}
static int op_attrs(lua_State *L) { return op_attrs_impl(L, false); }
static int op_attributes(lua_State *L) { return op_attrs_impl(L, true); }

void kl_lua__set_attr(lua_State *L, kl_op *op, const char *name, int vidx) {
  const kl_attr *a = kl_lua__toattr(L, vidx, op->ctx);
  kl_rewriter *rw = active_rw(op->ctx);
  name = kl_intern(op->ctx, name);
  if (rw) kl_rewriter_set_attr(rw, op, name, a);
  else kl_op_set_attr(op, name, a);
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
  for (int i = 0; i < op->nregions; i++) { kl_lua__push(L, c, KL_LH_REGION, &op->regions[i]); lua_rawseti(L, -2, i + 1); }
  return 1;
}
static int op_region(lua_State *L) {
  kl_op *op = OP(1); int i = lua_isnoneornil(L, 2) ? (op->nregions ? 0 : -1) : opt_index(L, 2, op->nregions);
  push_like(L, 1, KL_LH_REGION, i < 0 ? NULL : &op->regions[i]);
  return 1;
}
static int op_body(lua_State *L) {   /* entry block of region 1 */
  kl_op *op = OP(1);
  push_like(L, 1, KL_LH_BLOCK, op->nregions ? op->regions[0].first : NULL);
  return 1;
}
static int op_parent(lua_State *L) { push_like(L, 1, KL_LH_OP, kl_op_parent_op(OP(1))); return 1; }

/* Every result's uses must lie inside op itself. */
static bool results_used_outside(kl_op *op) {
  for (int i = 0; i < op->nresults; i++)
    for (kl_use *u = op->results[i].first_use; u; u = u->next)
      if (!kl_op_is_ancestor(op, u->user)) return true;
  return false;
}
int kl_lua__erase(lua_State *L, kl_op *op) {
  kl_rewriter *rw = active_rw(op->ctx);
  if (results_used_outside(op))
    return kl_lua__rt_error(L, "kiln", "cannot erase '%s': its results still have uses", op->name);
  if (rw) {
    if (!op->block) return kl_lua__rt_error(L, "kiln", "cannot erase '%s' inside a pattern: it is not in the IR", op->name);
    kl_rewriter_erase_op(rw, op);
  } else if (kl_op_erase(op) != KL_OK) return kl_lua__diag_error(L, op->ctx, "erase", "erase failed");
  return 0;
}
static int op_erase(lua_State *L) { return kl_lua__erase(L, OP(1)); }

static bool has_null_operand(kl_op *op) {
  int n; kl_op **ops = kl_collect_ops(op, &n);
  bool bad = false;
  for (int k = 0; k < n && !bad; k++)
    for (int i = 0; i < ops[k]->nopnds; i++) if (!ops[k]->opnds[i].value) { bad = true; break; }
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
  kl_rewriter *rw = active_rw(op->ctx);
  if (op->block) kl_op_unlink(op);
  if (rw) {   /* the pattern's insertion point is put back afterwards (rewrite.h) */
    kl_insertion_point saved = kl_rewriter_save_insertion(rw);
    if (where == KL_LUA_AT_BEFORE) kl_rewriter_set_insertion_before(rw, anchor);
    else if (where == KL_LUA_AT_AFTER) kl_rewriter_set_insertion_after(rw, anchor);
    else if (where == KL_LUA_AT_START && block->first) kl_rewriter_set_insertion_before(rw, block->first);
    else kl_rewriter_set_insertion_end(rw, block);
    kl_rewriter_insert(rw, op);
    kl_rewriter_restore_insertion(rw, saved);
    return;
  }
  if (where == KL_LUA_AT_BEFORE) kl_op_insert_before(anchor, op);
  else if (where == KL_LUA_AT_AFTER) kl_op_insert_after(anchor, op);
  else if (where == KL_LUA_AT_START && block->first) kl_op_insert_before(block->first, op);
  else kl_block_push_op(block, op);
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
  if (active_rw(op->ctx)) return kl_lua__rt_error(L, "kiln", "op:detach() is not allowed inside a pattern (use rw:erase or rw:replace)");
  kl_op_unlink(op);
  lua_settop(L, 1);
  return 1;
}
static int op_clone(lua_State *L) { push_like(L, 1, KL_LH_OP, kl_op_clone(OP(1), NULL)); return 1; }

static void set_operand(lua_State *L, kl_op *op, int i, kl_value *v) {
  kl_rewriter *rw = active_rw(op->ctx);
  if (rw) kl_rewriter_set_operand(rw, op, i, v);
  else kl_op_set_operand(op, i, v);
}
static int op_set_operand(lua_State *L) {
  kl_op *op = OP(1);
  int i = opt_index(L, 2, op->nopnds);
  if (i < 0) return luaL_argerror(L, 2, "operand index out of range");
  set_operand(L, op, i, kl_lua__check_value_in(L, 3, op->ctx));
  lua_settop(L, 1);
  return 1;
}
static int op_set_operands(lua_State *L) {
  kl_op *op = OP(1);
  lua_settop(L, 2); kl_lua__busy_guard(L, kl_lua__push_handle_ctxud(L, 1), "op:set_operands");   /* the list: metamethods */
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 2);
  if (n < 0 || n > (1 << 20)) return luaL_argerror(L, 2, "too many operands");
  kl_value **vals = kl_lua__tmp(L, (size_t)n * sizeof *vals);
  for (lua_Integer i = 1; i <= n; i++) { lua_geti(L, 2, i); vals[i - 1] = kl_lua__check_value_in(L, -1, op->ctx); lua_pop(L, 1); }
  kl_rewriter *rw = active_rw(op->ctx);
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
      kl_lua__rt_error(L, "kiln", "'%s' has %d results but its replacement '%s' has %d", op->name, op->nresults, other->name, other->nresults);
    for (int i = 0; i < op->nresults; i++) vals[i] = &other->results[i];
  } else if (kl_lua__test(L, idx, KL_LH_VALUE)) {
    if (op->nresults != 1) kl_lua__rt_error(L, "kiln", "'%s' has %d results; pass a table of values", op->name, op->nresults);
    vals[0] = kl_lua__check_value_in(L, idx, op->ctx);
  } else {
    luaL_checktype(L, idx, LUA_TTABLE);
    if (luaL_len(L, idx) != op->nresults)
      kl_lua__rt_error(L, "kiln", "'%s' has %d results but %d replacement values were given", op->name, op->nresults, (int)luaL_len(L, idx));
    for (int i = 0; i < op->nresults; i++) { lua_geti(L, idx, i + 1); vals[i] = kl_lua__check_value_in(L, -1, op->ctx); lua_pop(L, 1); }
  }
  for (int i = 0; i < op->nresults; i++)
    if (vals[i]->def && kl_op_is_ancestor(op, vals[i]->def))
      kl_lua__rt_error(L, "kiln", "cannot replace '%s' with a value it defines itself", op->name);
  return vals;
}
static int op_replace_all_uses_with(lua_State *L) {
  kl_op *op = OP(1);
  lua_settop(L, 2); kl_lua__busy_guard(L, kl_lua__push_handle_ctxud(L, 1), "op:replace_all_uses_with");   /* the list: metamethods */
  kl_value **vals = kl_lua__replacements(L, op, 2);
  kl_rewriter *rw = active_rw(op->ctx);
  for (int i = 0; i < op->nresults; i++) {
    if (rw) kl_rewriter_replace_all_uses(rw, &op->results[i], vals[i]);
    else kl_value_replace_all_uses(&op->results[i], vals[i]);
  }
  return 0;
}
static int op_replace_with(lua_State *L) {   /* replace uses, then erase */
  kl_op *op = OP(1);
  lua_settop(L, 2); kl_lua__busy_guard(L, kl_lua__push_handle_ctxud(L, 1), "op:replace_with");   /* the list: metamethods */
  kl_value **vals = kl_lua__replacements(L, op, 2);
  kl_rewriter *rw = active_rw(op->ctx);
  if (rw) {
    if (!op->block) return kl_lua__rt_error(L, "kiln", "cannot replace '%s' inside a pattern: it is not in the IR", op->name);
    kl_rewriter_replace_op(rw, op, vals);
    return 0;
  }
  for (int i = 0; i < op->nresults; i++) kl_value_replace_all_uses(&op->results[i], vals[i]);
  return kl_lua__erase(L, op);
}
/* Pushes the list of distinct ops using any of the n contiguous values vals[0..n). */
static int push_users(lua_State *L, int from, kl_value *vals, int n) {
  int c = kl_lua__push_handle_ctxud(L, from);
  lua_newtable(L); int seen = lua_gettop(L);
  lua_newtable(L); int k = 0;
  for (int i = 0; i < n; i++)
    for (kl_use *u = vals[i].first_use; u; u = u->next) {
      if (lua_rawgetp(L, seen, u->user) != LUA_TNIL) { lua_pop(L, 1); continue; }
      lua_pop(L, 1);
      lua_pushboolean(L, 1); lua_rawsetp(L, seen, u->user);
      kl_lua__push(L, c, KL_LH_OP, u->user); lua_rawseti(L, -2, ++k);
    }
  return 1;
}
static int op_users(lua_State *L) { kl_op *op = OP(1); return push_users(L, 1, op->results, op->nresults); }

static const struct { const char *name; unsigned bit; } trait_names[] = {
  { "pure", KL_TRAIT_PURE }, { "terminator", KL_TRAIT_TERMINATOR }, { "view", KL_TRAIT_VIEW },
  { "fusing", KL_TRAIT_FUSING }, { "isolated", KL_TRAIT_ISOLATED }, { "commutative", KL_TRAIT_COMMUTATIVE },
  { "constant", KL_TRAIT_CONSTANT }, { "symbol", KL_TRAIT_SYMBOL }, { "same_types", KL_TRAIT_SAME_TYPES },
  { "no_terminator", KL_TRAIT_NO_TERMINATOR }, { "elementwise", KL_TRAIT_ELEMENTWISE },
  { "invertible_view", KL_TRAIT_INVERTIBLE_VIEW }, { "gemm_anchor", KL_TRAIT_GEMM_ANCHOR }, { NULL, 0 }
};
static int op_has_trait(lua_State *L) {
  kl_op *op = OP(1);
  const char *t = luaL_checkstring(L, 2);
  for (int i = 0; trait_names[i].name; i++)
    if (!strcmp(trait_names[i].name, t)) { lua_pushboolean(L, kl_op_has_trait(op, trait_names[i].bit)); return 1; }
  return luaL_argerror(L, 2, "unknown trait (pure, terminator, view, fusing, isolated, commutative, constant, symbol, same_types, no_terminator, "
                           "elementwise, invertible_view, gemm_anchor)");
}
static int op_is_ancestor_of(lua_State *L) {
  kl_op *op = OP(1); kl_op *o = kl_lua__check_op_in(L, 2, op->ctx);
  lua_pushboolean(L, kl_op_is_ancestor(op, o));
  return 1;
}
static int op_is_before(lua_State *L) {
  kl_op *op = OP(1); kl_op *o = kl_lua__check_op_in(L, 2, op->ctx);
  lua_pushboolean(L, op->block && op->block == o->block && kl_op_is_before_in_block(op, o));
  return 1;
}
static int op_lookup(lua_State *L) {   /* symbol lookup in a module */
  kl_op *op = OP(1);
  push_like(L, 1, KL_LH_OP, kl_module_lookup(op, luaL_checkstring(L, 2)));
  return 1;
}

/* walk(fn [, opts]): pre-order (or opts.order == "post") over op and everything nested
 * in it; fn(op) may return "skip" (pre-order: do not visit its regions) or "stop". The
 * next op is read before fn runs, so fn may erase the op it is given. */
typedef struct { int fn, ctxud; bool post; const char *name; } walk_st;
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
static bool walk_rec(lua_State *L, walk_st *w, kl_op *op, int depth) {   /* true = stop */
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
  if (lua_type(L, 2) == LUA_TSTRING) { w.name = lua_tostring(L, 2); fn = 3; o = 4; }   /* walk("name", fn) */
  luaL_checktype(L, fn, LUA_TFUNCTION);
  w.fn = fn;
  if (lua_istable(L, o)) {
    lua_getfield(L, o, "order");
    w.post = lua_type(L, -1) == LUA_TSTRING && !strcmp(lua_tostring(L, -1), "post");
    lua_getfield(L, o, "name");
    if (lua_type(L, -1) == LUA_TSTRING) w.name = lua_tostring(L, -1);   /* anchored by opts */
    lua_pop(L, 2);
  } else if (lua_type(L, o) == LUA_TSTRING) w.post = !strcmp(lua_tostring(L, o), "post");
  w.ctxud = kl_lua__push_handle_ctxud(L, 1);
  kl_lua__busy_guard(L, w.ctxud, "op:walk");
  lua_pushboolean(L, !walk_rec(L, &w, op, 0));
  return 1;
}

static int op_p_name(lua_State *L) { lua_pushstring(L, OP(1)->name); return 1; }
static int op_p_loc(lua_State *L) { kl_lua__push_loc(L, OP(1)->loc); return 1; }
static int op_p_ctx(lua_State *L) { OP(1); kl_lua__push_handle_ctxud(L, 1); return 1; }
static int op_p_block(lua_State *L) { push_like(L, 1, KL_LH_BLOCK, OP(1)->block); return 1; }
static int op_p_next(lua_State *L) { push_like(L, 1, KL_LH_OP, OP(1)->next); return 1; }
static int op_p_prev(lua_State *L) { push_like(L, 1, KL_LH_OP, OP(1)->prev); return 1; }
static int op_p_num_operands(lua_State *L) { lua_pushinteger(L, OP(1)->nopnds); return 1; }
static int op_p_num_results(lua_State *L) { lua_pushinteger(L, OP(1)->nresults); return 1; }
static int op_p_num_regions(lua_State *L) { lua_pushinteger(L, OP(1)->nregions); return 1; }
static int op_p_registered(lua_State *L) { lua_pushboolean(L, OP(1)->def != NULL); return 1; }
static int op_p_summary(lua_State *L) { kl_op *op = OP(1); lua_pushstring(L, op->def ? op->def->summary : NULL); return 1; }
static int op_set_loc(lua_State *L) {
  kl_op *op = OP(1);
  op->loc = kl_lua__toloc(L, 2, op->ctx);
  lua_settop(L, 1);
  return 1;
}

/* =============================================================== values ==== */
static int value_tostring(lua_State *L) {
  kl_value *v = VALUE(1);
  char where[512] = "";
  if (v->def) {
    kl_loc_format(v->def->loc, where, sizeof where);
    lua_pushfstring(L, "kiln.value(%s%s%s: result %d of '%s' at %s)", kl_type_str(v->type),
                    v->name_hint ? ", %" : "", v->name_hint ? v->name_hint : "", v->index, v->def->name, where);
  } else {
    kl_op *p = kl_value_parent_op(v);
    lua_pushfstring(L, "kiln.value(%s%s%s: argument %d of a block%s%s)", kl_type_str(v->type),
                    v->name_hint ? ", %" : "", v->name_hint ? v->name_hint : "", v->index,
                    p ? " in " : "", p ? p->name : "");
  }
  return 1;
}
static int value_users(lua_State *L) { return push_users(L, 1, VALUE(1), 1); }
static int value_uses(lua_State *L) {
  kl_value *v = VALUE(1);
  int c = kl_lua__push_handle_ctxud(L, 1);
  lua_newtable(L); int n = 0;
  for (kl_use *u = v->first_use; u; u = u->next) {
    lua_createtable(L, 0, 2);
    kl_lua__push(L, c, KL_LH_OP, u->user); lua_setfield(L, -2, "op");
    lua_pushinteger(L, u->index + 1); lua_setfield(L, -2, "index");
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}
static int value_defining_op(lua_State *L) { push_like(L, 1, KL_LH_OP, VALUE(1)->def); return 1; }
static int value_owner_block(lua_State *L) {
  kl_value *v = VALUE(1);
  push_like(L, 1, KL_LH_BLOCK, v->def ? v->def->block : v->block);
  return 1;
}
static int value_parent_op(lua_State *L) { push_like(L, 1, KL_LH_OP, kl_value_parent_op(VALUE(1))); return 1; }
static kl_ctx *value_ctx(lua_State *L, int idx) { VALUE(idx); return kl_lua__handle_ctx(L, idx); }
static int value_replace_all_uses_with(lua_State *L) {
  kl_value *v = VALUE(1);
  kl_ctx *ctx = value_ctx(L, 1);
  kl_value *w = kl_lua__check_value_in(L, 2, ctx);
  kl_rewriter *rw = active_rw(ctx);
  if (rw) kl_rewriter_replace_all_uses(rw, v, w);
  else kl_value_replace_all_uses(v, w);
  return 0;
}
static int value_replace_uses_except(lua_State *L) {
  kl_value *v = VALUE(1);
  kl_ctx *ctx = value_ctx(L, 1);
  kl_value *w = kl_lua__check_value_in(L, 2, ctx);
  kl_op *except = kl_lua__check_op_in(L, 3, ctx);
  if (active_rw(ctx)) return kl_lua__rt_error(L, "kiln", "replace_uses_except is not available inside a pattern");
  kl_value_replace_uses_except(v, w, except);
  return 0;
}
static int value_set_type(lua_State *L) {
  kl_value *v = VALUE(1);
  kl_ctx *ctx = value_ctx(L, 1);
  const kl_type *t = kl_lua__totype(L, 2, ctx);
  kl_rewriter *rw = active_rw(ctx);
  kl_op *owner = kl_value_parent_op(v);
  if (rw && owner) kl_rewriter_modify_start(rw, owner);
  kl_value_set_type(v, t);
  if (rw && owner) kl_rewriter_modify_end(rw, owner);
  lua_settop(L, 1);
  return 1;
}
static int value_set_name(lua_State *L) {
  kl_value *v = VALUE(1);
  v->name_hint = lua_isnoneornil(L, 2) ? NULL : kl_intern(value_ctx(L, 1), luaL_checkstring(L, 2));
  lua_settop(L, 1);
  return 1;
}
static int value_p_type(lua_State *L) { push_like(L, 1, KL_LH_TYPE, VALUE(1)->type); return 1; }
static int value_p_index(lua_State *L) { lua_pushinteger(L, VALUE(1)->index + 1); return 1; }
static int value_p_name(lua_State *L) { lua_pushstring(L, VALUE(1)->name_hint); return 1; }
static int value_p_is_arg(lua_State *L) { lua_pushboolean(L, VALUE(1)->def == NULL); return 1; }
static int value_p_num_uses(lua_State *L) { lua_pushinteger(L, kl_value_use_count(VALUE(1))); return 1; }

/* =============================================================== blocks ==== */
static int block_tostring(lua_State *L) {
  kl_block *b = BLOCK(1);
  int nops = 0;
  for (kl_op *o = b->first; o; o = o->next) nops++;
  kl_op *p = b->region ? b->region->op : NULL;
  luaL_Buffer buf; luaL_buffinit(L, &buf);
  luaL_addstring(&buf, "kiln.block(");
  for (int i = 0; i < b->nargs; i++) { if (i) luaL_addstring(&buf, ", "); luaL_addstring(&buf, kl_type_str(b->args[i]->type)); }
  lua_pushfstring(L, "%s%d op%s%s%s)", b->nargs ? "; " : "", nops, nops == 1 ? "" : "s", p ? " in " : "", p ? p->name : "");
  luaL_addvalue(&buf);
  luaL_pushresult(&buf);
  return 1;
}
static int block_ops(lua_State *L) {
  kl_block *b = BLOCK(1);
  int c = kl_lua__push_handle_ctxud(L, 1);
  lua_newtable(L); int n = 0;
  for (kl_op *o = b->first; o; o = o->next) { kl_lua__push(L, c, KL_LH_OP, o); lua_rawseti(L, -2, ++n); }
  return 1;
}
static int block_args(lua_State *L) { kl_block *b = BLOCK(1); return push_values(L, 1, b->nargs, get_arg, b); }
static int block_arg(lua_State *L) {
  kl_block *b = BLOCK(1); int i = opt_index(L, 2, b->nargs);
  push_like(L, 1, KL_LH_VALUE, i < 0 ? NULL : b->args[i]);
  return 1;
}
static int block_add_arg(lua_State *L) {
  kl_block *b = BLOCK(1);
  kl_ctx *ctx = kl_lua__handle_ctx(L, 1);
  kl_value *v = kl_block_add_arg(ctx, b, kl_lua__totype(L, 2, ctx));
  if (lua_isstring(L, 3)) v->name_hint = kl_intern(ctx, lua_tostring(L, 3));
  push_like(L, 1, KL_LH_VALUE, v);
  return 1;
}
static int block_erase_arg(lua_State *L) {
  kl_block *b = BLOCK(1);
  int i = opt_index(L, 2, b->nargs);
  if (i < 0) return luaL_argerror(L, 2, "argument index out of range");
  if (kl_value_has_uses(b->args[i])) return kl_lua__rt_error(L, "kiln", "cannot erase block argument %d: it still has uses", i + 1);
  kl_block_erase_arg(b, i);
  return 0;
}
static int block_place(lua_State *L, int where) {
  kl_block *b = BLOCK(1);
  kl_op *op = kl_lua__check_op_in(L, 2, kl_lua__handle_ctx(L, 1));
  kl_lua__place(L, op, where, NULL, b);
  lua_settop(L, 2);
  return 1;
}
static int block_append(lua_State *L) { return block_place(L, KL_LUA_AT_END); }
static int block_prepend(lua_State *L) { return block_place(L, KL_LUA_AT_START); }
static int block_parent(lua_State *L) { kl_block *b = BLOCK(1); push_like(L, 1, KL_LH_OP, b->region ? b->region->op : NULL); return 1; }
static int block_region(lua_State *L) { push_like(L, 1, KL_LH_REGION, BLOCK(1)->region); return 1; }
static int block_terminator(lua_State *L) { push_like(L, 1, KL_LH_OP, kl_block_terminator(BLOCK(1))); return 1; }
static int block_first(lua_State *L) { push_like(L, 1, KL_LH_OP, BLOCK(1)->first); return 1; }
static int block_last(lua_State *L) { push_like(L, 1, KL_LH_OP, BLOCK(1)->last); return 1; }
static int block_p_num_args(lua_State *L) { lua_pushinteger(L, BLOCK(1)->nargs); return 1; }

/* ============================================================== regions ==== */
static int region_tostring(lua_State *L) {
  kl_region *r = REGION(1);
  int n = 0;
  for (kl_block *b = r->first; b; b = b->next) n++;
  lua_pushfstring(L, "kiln.region(%d block%s%s%s)", n, n == 1 ? "" : "s", r->op ? " of " : "", r->op ? r->op->name : "");
  return 1;
}
static int region_blocks(lua_State *L) {
  kl_region *r = REGION(1);
  int c = kl_lua__push_handle_ctxud(L, 1);
  lua_newtable(L); int n = 0;
  for (kl_block *b = r->first; b; b = b->next) { kl_lua__push(L, c, KL_LH_BLOCK, b); lua_rawseti(L, -2, ++n); }
  return 1;
}
static int region_block(lua_State *L) {
  kl_region *r = REGION(1);
  lua_Integer i = luaL_optinteger(L, 2, 1);
  kl_block *b = r->first;
  for (lua_Integer k = 1; b && k < i; k++) b = b->next;
  push_like(L, 1, KL_LH_BLOCK, i >= 1 ? b : NULL);
  return 1;
}
static int region_entry(lua_State *L) { push_like(L, 1, KL_LH_BLOCK, REGION(1)->first); return 1; }
static int region_parent(lua_State *L) { push_like(L, 1, KL_LH_OP, REGION(1)->op); return 1; }
/* Adds the block's argument types from the table (or varargs) starting at idx. */
static void add_arg_types(lua_State *L, kl_ctx *ctx, kl_block *b, int idx, int top) {
  if (lua_istable(L, idx)) {
    lua_Integer n = luaL_len(L, idx);
    for (lua_Integer i = 1; i <= n; i++) { lua_geti(L, idx, i); kl_block_add_arg(ctx, b, kl_lua__totype(L, -1, ctx)); lua_pop(L, 1); }
    return;
  }
  for (int i = idx; i <= top; i++) kl_block_add_arg(ctx, b, kl_lua__totype(L, i, ctx));
}
static int region_add_block(lua_State *L) {   /* region:add_block([types]) -> new block */
  kl_region *r = REGION(1);
  kl_ctx *ctx = kl_lua__handle_ctx(L, 1);
  int top = lua_gettop(L);
  kl_lua__busy_guard(L, kl_lua__push_handle_ctxud(L, 1), "region:add_block");   /* the types table: metamethods */
  kl_block *b = kl_block_create(ctx);
  add_arg_types(L, ctx, b, 2, top);
  kl_region_push_block(r, b);
  push_like(L, 1, KL_LH_BLOCK, b);
  return 1;
}
static int region_append(lua_State *L) {   /* region:append(detached block) */
  kl_region *r = REGION(1);
  kl_block *b = BLOCK(2);
  if (kl_lua__handle_ctx(L, 2) != kl_lua__handle_ctx(L, 1)) return kl_lua__rt_error(L, "kiln", "block belongs to another kiln context");
  if (b->region) return luaL_argerror(L, 2, "block is already in a region");
  if (r->op) for (kl_op *o = b->first; o; o = o->next)
    if (kl_op_is_ancestor(o, r->op)) return kl_lua__rt_error(L, "kiln", "cannot put a block into a region of an op it contains");
  kl_region_push_block(r, b);
  lua_settop(L, 2);
  return 1;
}
static int region_p_num_blocks(lua_State *L) {
  int n = 0;
  for (kl_block *b = REGION(1)->first; b; b = b->next) n++;
  lua_pushinteger(L, n);
  return 1;
}

/* ================================================================ types ==== */
static int type_tostring(lua_State *L) { lua_pushstring(L, kl_type_str(TYPE(1))); return 1; }
/* Types and attributes are interned per context: equal text means equal value, also
 * across contexts. */
static const char *handle_text(lua_State *L, int idx, int kind) {
  void *p = kl_lua__test(L, idx, kind);
  if (!p) return NULL;
  return kind == KL_LH_TYPE ? ((const kl_type *)p)->text : ((const kl_attr *)p)->text;
}
static int text_eq(lua_State *L, int kind) {
  const char *a = handle_text(L, 1, kind), *b = handle_text(L, 2, kind);
  lua_pushboolean(L, a && b && !strcmp(a, b));
  return 1;
}
static int type_eq(lua_State *L) { return text_eq(L, KL_LH_TYPE); }
static const char *kind_name(const kl_type *t) {
  switch (t->kind) {
  case KL_TY_TENSOR: return "tensor";
  case KL_TY_BUFFER: return "buffer";
  case KL_TY_VECTOR: return "vector";
  case KL_TY_TOKEN: return "token";
  default: return kl_scalar_name(t->kind);
  }
}
static int type_p_kind(lua_State *L) { lua_pushstring(L, kind_name(TYPE(1))); return 1; }
static int type_p_elem(lua_State *L) { push_like(L, 1, KL_LH_TYPE, TYPE(1)->elem); return 1; }
static int type_p_rank(lua_State *L) {
  const kl_type *t = TYPE(1);
  if (t->kind == KL_TY_TENSOR || t->kind == KL_TY_BUFFER || t->kind == KL_TY_VECTOR) lua_pushinteger(L, t->rank);
  else lua_pushnil(L);
  return 1;
}
static int push_i64s(lua_State *L, int n, const int64_t *v) {
  if (!v) { lua_pushnil(L); return 1; }
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) { lua_pushinteger(L, v[i]); lua_rawseti(L, -2, i + 1); }
  return 1;
}
static int type_p_shape(lua_State *L) { const kl_type *t = TYPE(1); return push_i64s(L, t->rank, t->shape); }
static int type_p_strides(lua_State *L) { const kl_type *t = TYPE(1); return push_i64s(L, t->rank, t->strides); }
static int type_p_space(lua_State *L) {
  const kl_type *t = TYPE(1);
  if (t->kind != KL_TY_BUFFER) lua_pushnil(L);
  else lua_pushstring(L, t->space == KL_SPACE_LDS ? "lds" : t->space == KL_SPACE_PRIVATE ? "private" : "global");
  return 1;
}
static int type_p_bits(lua_State *L) {
  const kl_type *t = TYPE(1);
  if (kl_type_is_scalar(t) || t->kind == KL_TY_VECTOR) lua_pushinteger(L, kl_type_bits(t)); else lua_pushnil(L);
  return 1;
}
static int type_p_numel(lua_State *L) {
  const kl_type *t = TYPE(1);
  if (kl_type_is_shaped(t) || t->kind == KL_TY_VECTOR) lua_pushinteger(L, kl_type_numel(t)); else lua_pushnil(L);
  return 1;
}
static int type_p_text(lua_State *L) { return type_tostring(L); }
static int type_is_int(lua_State *L) { lua_pushboolean(L, kl_type_is_int(TYPE(1))); return 1; }
static int type_is_float(lua_State *L) { lua_pushboolean(L, kl_type_is_float(TYPE(1))); return 1; }
static int type_is_scalar(lua_State *L) { lua_pushboolean(L, kl_type_is_scalar(TYPE(1))); return 1; }
static int type_is_shaped(lua_State *L) { lua_pushboolean(L, kl_type_is_shaped(TYPE(1))); return 1; }
static int type_is_row_major(lua_State *L) { const kl_type *t = TYPE(1); lua_pushboolean(L, kl_type_is_shaped(t) && kl_type_is_row_major(t)); return 1; }

/* =========================================================== attributes ==== */
static int attr_tostring(lua_State *L) { lua_pushstring(L, kl_attr_str_of(ATTR(1))); return 1; }
static int attr_eq(lua_State *L) { return text_eq(L, KL_LH_ATTR); }
static int attr_p_kind(lua_State *L) {
  static const char *names[] = { "int", "float", "string", "bool", "unit", "array", "dict", "type", "symref", "ext" };
  lua_pushstring(L, names[ATTR(1)->kind]);
  return 1;
}
static int attr_p_type(lua_State *L) {
  const kl_attr *a = ATTR(1);
  push_like(L, 1, KL_LH_TYPE, (a->kind == KL_AT_INT || a->kind == KL_AT_FLOAT || a->kind == KL_AT_TYPE) ? a->type : NULL);
  return 1;
}
static int attr_p_name(lua_State *L) {   /* extension kind name or symbol name */
  const kl_attr *a = ATTR(1);
  lua_pushstring(L, a->kind == KL_AT_EXT ? a->ext->name : a->kind == KL_AT_SYMREF ? a->s : NULL);
  return 1;
}
static int attr_p_text(lua_State *L) { return attr_tostring(L); }
static int attr_value(lua_State *L) {
  const kl_attr *a = ATTR(1);
  int c = kl_lua__push_handle_ctxud(L, 1);
  kl_lua__push_attr_value(L, c, a);
  return 1;
}

/* ============================================================ functions ==== */
static int l_parse(lua_State *L) {
  int first; int c = kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, c);
  size_t n; const char *text = luaL_checklstring(L, first, &n);
  const char *name = luaL_optstring(L, first + 1, "<string>");
  kl_lua__flush_diags(ctx);
  kl_op *m = kl_parse_module(ctx, text, n, name);
  if (!m) return kl_lua__diag_error(L, ctx, "kiln.parse", "parse failed");
  kl_lua__flush_diags(ctx);
  kl_lua__push(L, c, KL_LH_OP, m);
  return 1;
}
static int l_type(lua_State *L) {
  int first; int c = kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, c);
  kl_lua__push(L, c, KL_LH_TYPE, kl_lua__totype(L, first, ctx));
  return 1;
}
static int l_attr(lua_State *L) {   /* kiln.attr("text") parses; kiln.attr(3, "i32") is typed */
  int first; int c = kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, c);
  const kl_attr *a;
  if (lua_type(L, first) == LUA_TSTRING) {
    size_t n; const char *s = lua_tolstring(L, first, &n);
    kl_lua__flush_diags(ctx);
    a = kl_parse_attr(ctx, s, n, "<attribute>");
    if (!a) return kl_lua__diag_error(L, ctx, "kiln.attr", "invalid attribute");
  } else if (lua_type(L, first) == LUA_TNUMBER && !lua_isnoneornil(L, first + 1)) {
    const kl_type *t = kl_lua__totype(L, first + 1, ctx);
    if (kl_type_is_float(t)) a = kl_attr_float_typed(ctx, (double)lua_tonumber(L, first), t);
    else if (kl_type_is_int(t)) {
      if (!lua_isinteger(L, first)) return kl_lua__rt_error(L, "kiln.attr", "an integer attribute needs an integer value");
      a = kl_attr_int_typed(ctx, (int64_t)lua_tointeger(L, first), t);
    } else return kl_lua__rt_error(L, "kiln.attr", "a number attribute needs an integer or float type");
  } else {
    a = kl_lua__toattr(L, first, ctx);
    if (!a) return kl_lua__rt_error(L, "kiln.attr", "a value is required");
  }
  kl_lua__push(L, c, KL_LH_ATTR, a);
  return 1;
}

static void conv_value(lua_State *L, int idx, kl_ctx *ctx, void *out) { *(kl_value **)out = kl_lua__check_value_in(L, idx, ctx); }
static void conv_type(lua_State *L, int idx, kl_ctx *ctx, void *out) { *(const kl_type **)out = kl_lua__totype(L, idx, ctx); }

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
  if (t != LUA_TTABLE) conv(L, list, ctx, arr);
  else for (lua_Integer i = 1; i <= n; i++) {
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
  if (lua_getfield(L, idx, "name") != LUA_TSTRING || !lua_rawlen(L, -1))
    kl_lua__rt_error(L, "kiln", "op{...} needs a name (\"dialect.op\")");
  const char *name = kl_intern(ctx, lua_tostring(L, -1));
  /* operands: a list of values; results: a list of types, or one type */
  kl_value **opnds = NULL;
  int nop = read_list(L, idx, "operands", ctx, sizeof *opnds, conv_value, (void **)&opnds);
  const kl_type **types = NULL;
  int nres = read_list(L, idx, "results", ctx, sizeof *types, conv_type, (void **)&types);
  /* attributes */
  int nattr = 0; kl_named_attr *attrs = NULL;
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

/* The context for kiln.op{...}: explicit ctx argument, the table's ctx field, the
 * first operand's context, else the default context; it ends up in slot 1. */
static int op_ctx(lua_State *L, int *first) {
  if (luaL_testudata(L, 1, KL_MT_CONTEXT)) return kl_lua__ctx_arg(L, first);
  *first = 2;
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  if (lua_getfield(L, 1, "ctx") != LUA_TNIL) { kl_lua__check_ctx(L, 2); lua_insert(L, 1); return 1; }
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "operands") == LUA_TTABLE && lua_geti(L, -1, 1) == LUA_TUSERDATA &&
      kl_lua__test(L, -1, KL_LH_VALUE)) {   /* stack: tbl, operands, operand 1 */
    kl_lua__push_handle_ctxud(L, 3);
    lua_insert(L, 1);
    lua_settop(L, 2);
    return 1;
  }
  lua_settop(L, 1);
  return kl_lua__ctx_arg(L, first);
}
static int l_op(lua_State *L) {
  int first; int c = op_ctx(L, &first);
  kl_lua__busy_guard(L, c, "kiln.op");   /* metamethods of the table, finalizers */
  kl_op *op = kl_lua__build_op(L, first, kl_lua__check_ctx(L, c));
  kl_lua__push(L, c, KL_LH_OP, op);
  return 1;
}
static int l_block(lua_State *L) {   /* kiln.block([ctx,] {types} or types...) -> detached block */
  int first; int c = kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, c);
  int top = lua_gettop(L);
  kl_lua__busy_guard(L, c, "kiln.block");   /* the types table: metamethods */
  kl_block *b = kl_block_create(ctx);
  add_arg_types(L, ctx, b, first, top);
  kl_lua__push(L, c, KL_LH_BLOCK, b);
  return 1;
}
static int l_module(lua_State *L) {   /* kiln.module([ctx]) -> empty module */
  int first; int c = kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, c);
  kl_op *m = kl_module_create(ctx, kl_lua__caller_loc(L, ctx));
  kl_lua__push(L, c, KL_LH_OP, m);
  return 1;
}
static int l_ops(lua_State *L) {   /* registered op definitions: {name=, summary=} sorted */
  int first; int c = kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, c);
  int n = kl_opdef_count(ctx);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    const kl_opdef *d = kl_opdef_at(ctx, i);
    lua_createtable(L, 0, 2);
    lua_pushstring(L, d->name); lua_setfield(L, -2, "name");
    lua_pushstring(L, d->summary); lua_setfield(L, -2, "summary");
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}
static int l_diagnostics(lua_State *L) {   /* pending diagnostics text (cleared) */
  int first; int c = kl_lua__ctx_arg(L, &first);
  char *d = kl_diag_take(kl_lua__check_ctx(L, c));
  lua_pushstring(L, d);
  free(d);
  return 1;
}
static int ctx_destroy(lua_State *L) { return kl_lua__ctx_destroy(L, 1); }   /* refused while busy */

void kl_lua__open_ir(lua_State *L) {
  int mod = lua_gettop(L);
  static const luaL_Reg handle_meta_op[] = { { "__tostring", op_tostring }, { "__eq", kl_lua__handle_eq }, { NULL, NULL } };
  static const luaL_Reg op_methods[] = {
    { "print", op_print }, { "verify", op_verify }, { "walk", op_walk },
    { "operands", op_operands }, { "operand", op_operand }, { "results", op_results }, { "result", op_result },
    { "operand_types", op_operand_types }, { "result_types", op_result_types },
    { "attr", op_attr }, { "attribute", op_attribute }, { "attrs", op_attrs }, { "attributes", op_attributes },
    { "set_attr", op_set_attr }, { "remove_attr", op_remove_attr },
    { "regions", op_regions }, { "region", op_region }, { "body", op_body }, { "parent", op_parent },
    { "erase", op_erase }, { "insert_before", op_insert_before }, { "insert_after", op_insert_after },
    { "detach", op_detach }, { "clone", op_clone },
    { "set_operand", op_set_operand }, { "set_operands", op_set_operands },
    { "replace_all_uses_with", op_replace_all_uses_with }, { "replace_with", op_replace_with },
    { "users", op_users }, { "has_trait", op_has_trait }, { "is_ancestor_of", op_is_ancestor_of },
    { "is_before", op_is_before }, { "lookup", op_lookup }, { "set_loc", op_set_loc }, { NULL, NULL }
  };
  static const luaL_Reg op_props[] = {
    { "name", op_p_name }, { "loc", op_p_loc }, { "ctx", op_p_ctx }, { "block", op_p_block },
    { "next", op_p_next }, { "prev", op_p_prev }, { "num_operands", op_p_num_operands },
    { "num_results", op_p_num_results }, { "num_regions", op_p_num_regions },
    { "registered", op_p_registered }, { "summary", op_p_summary }, { NULL, NULL }
  };
  kl_lua__class(L, mod, kl_lua__mt_names[KL_LH_OP], "op", op_methods, op_props, handle_meta_op);

  static const luaL_Reg value_meta[] = { { "__tostring", value_tostring }, { "__eq", kl_lua__handle_eq }, { NULL, NULL } };
  static const luaL_Reg value_methods[] = {
    { "users", value_users }, { "uses", value_uses }, { "defining_op", value_defining_op },
    { "owner_block", value_owner_block }, { "parent_op", value_parent_op },
    { "replace_all_uses_with", value_replace_all_uses_with }, { "replace_uses_except", value_replace_uses_except },
    { "set_type", value_set_type }, { "set_name", value_set_name }, { NULL, NULL }
  };
  static const luaL_Reg value_props[] = {
    { "type", value_p_type }, { "index", value_p_index }, { "name", value_p_name },
    { "is_arg", value_p_is_arg }, { "num_uses", value_p_num_uses }, { NULL, NULL }
  };
  kl_lua__class(L, mod, kl_lua__mt_names[KL_LH_VALUE], "value", value_methods, value_props, value_meta);

  static const luaL_Reg block_meta[] = { { "__tostring", block_tostring }, { "__eq", kl_lua__handle_eq }, { NULL, NULL } };
  static const luaL_Reg block_methods[] = {
    { "ops", block_ops }, { "args", block_args }, { "arg", block_arg }, { "add_arg", block_add_arg },
    { "erase_arg", block_erase_arg }, { "append", block_append }, { "prepend", block_prepend },
    { "parent", block_parent }, { "region", block_region }, { "terminator", block_terminator },
    { "first", block_first }, { "last", block_last }, { NULL, NULL }
  };
  static const luaL_Reg block_props[] = { { "num_args", block_p_num_args }, { NULL, NULL } };
  kl_lua__class(L, mod, kl_lua__mt_names[KL_LH_BLOCK], "block", block_methods, block_props, block_meta);

  static const luaL_Reg region_meta[] = { { "__tostring", region_tostring }, { "__eq", kl_lua__handle_eq }, { NULL, NULL } };
  static const luaL_Reg region_methods[] = {
    { "blocks", region_blocks }, { "block", region_block }, { "entry", region_entry },
    { "parent", region_parent }, { "add_block", region_add_block }, { "append", region_append }, { NULL, NULL }
  };
  static const luaL_Reg region_props[] = { { "num_blocks", region_p_num_blocks }, { NULL, NULL } };
  kl_lua__class(L, mod, kl_lua__mt_names[KL_LH_REGION], "region", region_methods, region_props, region_meta);

  static const luaL_Reg type_meta[] = { { "__tostring", type_tostring }, { "__eq", type_eq }, { NULL, NULL } };
  static const luaL_Reg type_methods[] = {
    { "is_int", type_is_int }, { "is_float", type_is_float }, { "is_scalar", type_is_scalar },
    { "is_shaped", type_is_shaped }, { "is_row_major", type_is_row_major }, { NULL, NULL }
  };
  static const luaL_Reg type_props[] = {
    { "kind", type_p_kind }, { "elem", type_p_elem }, { "rank", type_p_rank }, { "shape", type_p_shape },
    { "strides", type_p_strides }, { "space", type_p_space }, { "bits", type_p_bits },
    { "numel", type_p_numel }, { "text", type_p_text }, { NULL, NULL }
  };
  kl_lua__class(L, mod, kl_lua__mt_names[KL_LH_TYPE], "type", type_methods, type_props, type_meta);

  static const luaL_Reg attr_meta[] = { { "__tostring", attr_tostring }, { "__eq", attr_eq }, { NULL, NULL } };
  static const luaL_Reg attr_methods[] = { { "value", attr_value }, { NULL, NULL } };
  static const luaL_Reg attr_props[] = {
    { "kind", attr_p_kind }, { "type", attr_p_type }, { "name", attr_p_name }, { "text", attr_p_text }, { NULL, NULL }
  };
  kl_lua__class(L, mod, kl_lua__mt_names[KL_LH_ATTR], "attr", attr_methods, attr_props, attr_meta);

  static const luaL_Reg fns[] = {
    { "parse", l_parse }, { "type", l_type }, { "attr", l_attr }, { "op", l_op }, { "block", l_block },
    { "module", l_module }, { "ops", l_ops }, { "diagnostics", l_diagnostics }, { NULL, NULL }
  };
  luaL_setfuncs(L, fns, 0);
  /* the same functions as context methods: ctx:parse(text), ctx:op{...}, ... */
  lua_getfield(L, mod, "methods");
  lua_getfield(L, -1, "context");
  luaL_setfuncs(L, fns, 0);
  lua_pushcfunction(L, ctx_destroy);
  lua_setfield(L, -2, "destroy");
  lua_pop(L, 2);
}
