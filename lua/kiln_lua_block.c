/* kiln_lua_block.c — "kiln.block" handles: ops, arguments (adding, erasing), appending
 * and prepending ops (kl_lua__place), the parent op and region; and
 * kl_lua__add_arg_types (block argument types from a table or varargs, also
 * region:add_block and kiln.block). */
#include "lua/kiln_lua.h"

#define BLOCK(i) ((kl_block *)kl_lua__check(L, (i), KL_LH_BLOCK))

static kl_value *get_arg(void *b, int i) { return ((kl_block *)b)->args[i]; }
/* Adds the block's argument types from the table (or varargs) starting at idx. */
void kl_lua__add_arg_types(lua_State *L, kl_ctx *ctx, kl_block *b, int idx, int top) {
  if (lua_istable(L, idx)) {
    lua_Integer n = luaL_len(L, idx);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_geti(L, idx, i);
      kl_block_add_arg(ctx, b, kl_lua__totype(L, -1, ctx));
      lua_pop(L, 1);
    }
    return;
  }
  for (int i = idx; i <= top; i++) kl_block_add_arg(ctx, b, kl_lua__totype(L, i, ctx));
}
static int block_tostring(lua_State *L) {
  kl_block *b = BLOCK(1);
  int nops = 0;
  for (kl_op *o = b->first; o; o = o->next) nops++;
  kl_op *p = b->region ? b->region->op : NULL;
  luaL_Buffer buf;
  luaL_buffinit(L, &buf);
  luaL_addstring(&buf, "kiln.block(");
  for (int i = 0; i < b->nargs; i++) {
    if (i) luaL_addstring(&buf, ", ");
    luaL_addstring(&buf, kl_type_str(b->args[i]->type));
  }
  lua_pushfstring(L, "%s%d op%s%s%s)", b->nargs ? "; " : "", nops, nops == 1 ? "" : "s", p ? " in " : "",
                  p ? p->name : "");
  luaL_addvalue(&buf);
  luaL_pushresult(&buf);
  return 1;
}
static int block_ops(lua_State *L) {
  kl_block *b = BLOCK(1);
  int c = kl_lua__push_handle_ctxud(L, 1);
  lua_newtable(L);
  int n = 0;
  for (kl_op *o = b->first; o; o = o->next) {
    kl_lua__push(L, c, KL_LH_OP, o);
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}
static int block_args(lua_State *L) {
  kl_block *b = BLOCK(1);
  return kl_lua__push_values(L, 1, b->nargs, get_arg, b);
}
static int block_arg(lua_State *L) {
  kl_block *b = BLOCK(1);
  int i = kl_lua__opt_index(L, 2, b->nargs);
  kl_lua__push_like(L, 1, KL_LH_VALUE, i < 0 ? NULL : b->args[i]);
  return 1;
}
static int block_add_arg(lua_State *L) {
  kl_block *b = BLOCK(1);
  kl_ctx *ctx = kl_lua__handle_ctx(L, 1);
  kl_value *v = kl_block_add_arg(ctx, b, kl_lua__totype(L, 2, ctx));
  if (lua_isstring(L, 3)) v->name_hint = kl_intern(ctx, lua_tostring(L, 3));
  kl_lua__push_like(L, 1, KL_LH_VALUE, v);
  return 1;
}
static int block_erase_arg(lua_State *L) {
  kl_block *b = BLOCK(1);
  int i = kl_lua__opt_index(L, 2, b->nargs);
  if (i < 0) return luaL_argerror(L, 2, "argument index out of range");
  if (kl_value_has_uses(b->args[i]))
    return kl_lua__rt_error(L, "kiln", "cannot erase block argument %d: it still has uses", i + 1);
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
static int block_parent(lua_State *L) {
  kl_block *b = BLOCK(1);
  kl_lua__push_like(L, 1, KL_LH_OP, b->region ? b->region->op : NULL);
  return 1;
}
static int block_region(lua_State *L) {
  kl_lua__push_like(L, 1, KL_LH_REGION, BLOCK(1)->region);
  return 1;
}
static int block_terminator(lua_State *L) {
  kl_lua__push_like(L, 1, KL_LH_OP, kl_block_terminator(BLOCK(1)));
  return 1;
}
static int block_first(lua_State *L) {
  kl_lua__push_like(L, 1, KL_LH_OP, BLOCK(1)->first);
  return 1;
}
static int block_last(lua_State *L) {
  kl_lua__push_like(L, 1, KL_LH_OP, BLOCK(1)->last);
  return 1;
}
static int block_p_num_args(lua_State *L) {
  lua_pushinteger(L, BLOCK(1)->nargs);
  return 1;
}

void kl_lua__open_block(lua_State *L) {
  int mod = lua_gettop(L);
  static const luaL_Reg block_meta[] = { { "__tostring", block_tostring },
                                         { "__eq", kl_lua__handle_eq },
                                         { NULL, NULL } };
  static const luaL_Reg block_methods[] = { { "ops", block_ops },
                                            { "args", block_args },
                                            { "arg", block_arg },
                                            { "add_arg", block_add_arg },
                                            { "erase_arg", block_erase_arg },
                                            { "append", block_append },
                                            { "prepend", block_prepend },
                                            { "parent", block_parent },
                                            { "region", block_region },
                                            { "terminator", block_terminator },
                                            { "first", block_first },
                                            { "last", block_last },
                                            { NULL, NULL } };
  static const luaL_Reg block_props[] = { { "num_args", block_p_num_args }, { NULL, NULL } };
  kl_lua__class(L, mod, kl_lua__mt_names[KL_LH_BLOCK], "block", block_methods, block_props, block_meta);
}
