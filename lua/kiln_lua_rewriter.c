/* kiln_lua_rewriter.c — "kiln.rewriter" userdata: the rewriter object a Lua pattern's
 * rewrite function gets (rw:create, insert, replace, erase, set_attr, set_operand,
 * replace_all_uses, modify, move_before, set_insertion_*, fail, no_match, rw.root). It
 * is valid only while its pattern runs (kl_lua_rwud.rw set by apply_patterns,
 * kiln_lua_pattern.c); every mutation goes through that kl_rewriter. */
#include "lua/kiln_lua.h"

#define MT_RW "kiln.rewriter"

static kl_lua_rwud *rw_check(lua_State *L) {
  kl_lua_rwud *r = luaL_checkudata(L, 1, MT_RW);
  if (!r->rw) kl_lua__rt_error(L, "kiln", "a rewriter is only valid inside its pattern's rewrite function");
  return r;
}
static kl_ctx *rw_ctx(kl_lua_rwud *r) { return r->root->ctx; }

static int rw_create(lua_State *L) {
  kl_lua_rwud *r = rw_check(L);
  kl_op *op = kl_lua__build_op(L, 2, rw_ctx(r));
  kl_rewriter_insert(r->rw, op);
  kl_lua_push_op(L, op);
  return 1;
}
static int rw_insert(lua_State *L) {
  kl_lua_rwud *r = rw_check(L);
  kl_op *op = kl_lua__check_op_in(L, 2, rw_ctx(r));
  if (op->block) return luaL_argerror(L, 2, "op is already in a block (use rw:move_before)");
  kl_rewriter_insert(r->rw, op);
  lua_settop(L, 2);
  return 1;
}
static int rw_replace(lua_State *L) {
  kl_lua_rwud *r = rw_check(L);
  kl_op *op = kl_lua__check_op_in(L, 2, rw_ctx(r));
  if (!op->block) return luaL_argerror(L, 2, "op is not in the IR");
  kl_value **vals = kl_lua__replacements(L, op, 3);
  kl_op *new_op = kl_lua__test(L, 3, KL_LH_OP);
  if (new_op && !new_op->block)
    kl_rewriter_replace_op_with(r->rw, op, new_op);
  else
    kl_rewriter_replace_op(r->rw, op, vals);
  return 0;
}
static int rw_erase(lua_State *L) {
  kl_lua_rwud *r = rw_check(L);
  return kl_lua__erase(L, kl_lua__check_op_in(L, 2, rw_ctx(r)));
}
static int rw_set_attr(lua_State *L) {
  kl_lua_rwud *r = rw_check(L);
  kl_lua__set_attr(L, kl_lua__check_op_in(L, 2, rw_ctx(r)), luaL_checkstring(L, 3), 4);
  return 0;
}
static int rw_set_operand(lua_State *L) {
  kl_lua_rwud *r = rw_check(L);
  kl_op *op = kl_lua__check_op_in(L, 2, rw_ctx(r));
  lua_Integer i = luaL_checkinteger(L, 3);
  if (i < 1 || i > op->nopnds) return luaL_argerror(L, 3, "operand index out of range");
  kl_rewriter_set_operand(r->rw, op, (int)i - 1, kl_lua__check_value_in(L, 4, rw_ctx(r)));
  return 0;
}
static int rw_replace_all_uses(lua_State *L) {
  kl_lua_rwud *r = rw_check(L);
  kl_value *from = kl_lua__check_value_in(L, 2, rw_ctx(r));
  kl_value *to = kl_lua__check_value_in(L, 3, rw_ctx(r));
  kl_rewriter_replace_all_uses(r->rw, from, to);
  return 0;
}
static int rw_modify(lua_State *L) { /* rw:modify(op, fn): in-place change of op */
  kl_lua_rwud *r = rw_check(L);
  kl_op *op = kl_lua__check_op_in(L, 2, rw_ctx(r));
  luaL_checktype(L, 3, LUA_TFUNCTION);
  kl_rewriter_modify_start(r->rw, op);
  lua_pushvalue(L, 3);
  lua_pushvalue(L, 2);
  int rc = lua_pcall(L, 1, 0, 0);
  kl_rewriter_modify_end(r->rw, op);
  if (rc != LUA_OK) return lua_error(L);
  return 0;
}
static int rw_move_before(lua_State *L) {
  kl_lua_rwud *r = rw_check(L);
  kl_op *op = kl_lua__check_op_in(L, 2, rw_ctx(r));
  kl_op *anchor = kl_lua__check_op_in(L, 3, rw_ctx(r));
  kl_lua__place(L, op, KL_LUA_AT_BEFORE, anchor, NULL);
  return 0;
}
static int rw_set_ip(lua_State *L, int kind) {
  kl_lua_rwud *r = rw_check(L);
  if (kind == KL_IP_END) {
    kl_block *b = kl_lua__check(L, 2, KL_LH_BLOCK);
    if (kl_lua__handle_ctx(L, 2) != rw_ctx(r))
      return kl_lua__rt_error(L, "kiln", "block belongs to another kiln context");
    kl_rewriter_set_insertion_end(r->rw, b);
    return 0;
  }
  kl_op *op = kl_lua__check_op_in(L, 2, rw_ctx(r));
  if (!op->block) return luaL_argerror(L, 2, "op is not in a block");
  if (kind == KL_IP_BEFORE)
    kl_rewriter_set_insertion_before(r->rw, op);
  else
    kl_rewriter_set_insertion_after(r->rw, op);
  return 0;
}
static int rw_set_insertion_before(lua_State *L) { return rw_set_ip(L, KL_IP_BEFORE); }
static int rw_set_insertion_after(lua_State *L) { return rw_set_ip(L, KL_IP_AFTER); }
static int rw_set_insertion_end(lua_State *L) { return rw_set_ip(L, KL_IP_END); }
static int rw_fail(lua_State *L) { /* return rw:fail("why"): stops the driver with an error */
  kl_lua_rwud *r = rw_check(L);
  kl_rewriter_fail(r->rw, r->root->loc, "%s", luaL_optstring(L, 2, "pattern failed"));
  lua_pushboolean(L, 0);
  return 1;
}
static int rw_no_match(lua_State *L) { /* return rw:no_match("why"): logged with KILN_DEBUG=rewrite */
  kl_lua_rwud *r = rw_check(L);
  lua_pushboolean(L, kl_rewriter_notify_no_match(r->rw, "%s", luaL_optstring(L, 2, "no match")));
  return 1;
}
static int rw_p_root(lua_State *L) {
  kl_lua_rwud *r = rw_check(L);
  kl_lua_push_op(L, r->root);
  return 1;
}
static int rw_tostring(lua_State *L) {
  kl_lua_rwud *r = luaL_checkudata(L, 1, MT_RW);
  if (r->rw)
    lua_pushfstring(L, "kiln.rewriter(at '%s')", r->root->name);
  else
    lua_pushstring(L, "kiln.rewriter (inactive)");
  return 1;
}

kl_lua_rwud *kl_lua__push_rewriter(lua_State *L, int ctxidx) {
  ctxidx = lua_absindex(L, ctxidx);
  kl_lua_rwud *r = lua_newuserdatauv(L, sizeof *r, 1);
  r->rw = NULL;
  r->root = NULL;
  luaL_setmetatable(L, MT_RW);
  lua_pushvalue(L, ctxidx);
  lua_setiuservalue(L, -2, 1);
  return r;
}

void kl_lua__open_rewriter(lua_State *L) {
  int mod = lua_gettop(L);
  static const luaL_Reg rw_meta[] = { { "__tostring", rw_tostring }, { NULL, NULL } };
  static const luaL_Reg rw_methods[] = { { "create", rw_create },
                                         { "insert", rw_insert },
                                         { "replace", rw_replace },
                                         { "erase", rw_erase },
                                         { "set_attr", rw_set_attr },
                                         { "set_operand", rw_set_operand },
                                         { "replace_all_uses", rw_replace_all_uses },
                                         { "modify", rw_modify },
                                         { "move_before", rw_move_before },
                                         { "set_insertion_before", rw_set_insertion_before },
                                         { "set_insertion_after", rw_set_insertion_after },
                                         { "set_insertion_end", rw_set_insertion_end },
                                         { "fail", rw_fail },
                                         { "no_match", rw_no_match },
                                         { NULL, NULL } };
  static const luaL_Reg rw_props[] = { { "root", rw_p_root }, { NULL, NULL } };
  kl_lua__class(L, mod, MT_RW, "rewriter", rw_methods, rw_props, rw_meta);
}
