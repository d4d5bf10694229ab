/* kiln_lua_value.c — "kiln.value" handles (results and block arguments): users and
 * uses, the defining op and owner block, replacing uses, type and name; and
 * kl_lua__push_users (the distinct users of values, also op:users). */
#include "lua/kiln_lua.h"

#define VALUE(i) ((kl_value *)kl_lua__check(L, (i), KL_LH_VALUE))

/* Pushes the list of distinct ops using any of the n contiguous values vals[0..n). */
int kl_lua__push_users(lua_State *L, int from, kl_value *vals, int n) {
  int c = kl_lua__push_handle_ctxud(L, from);
  lua_newtable(L);
  int seen = lua_gettop(L);
  lua_newtable(L);
  int k = 0;
  for (int i = 0; i < n; i++)
    for (kl_use *u = vals[i].first_use; u; u = u->next) {
      if (lua_rawgetp(L, seen, u->user) != LUA_TNIL) {
        lua_pop(L, 1);
        continue;
      }
      lua_pop(L, 1);
      lua_pushboolean(L, 1);
      lua_rawsetp(L, seen, u->user);
      kl_lua__push(L, c, KL_LH_OP, u->user);
      lua_rawseti(L, -2, ++k);
    }
  return 1;
}
static int value_tostring(lua_State *L) {
  kl_value *v = VALUE(1);
  char where[512] = "";
  if (v->def) {
    kl_loc_format(v->def->loc, where, sizeof where);
    lua_pushfstring(L, "kiln.value(%s%s%s: result %d of '%s' at %s)", kl_type_str(v->type), v->name_hint ? ", %" : "",
                    v->name_hint ? v->name_hint : "", v->index, v->def->name, where);
  } else {
    kl_op *p = kl_value_parent_op(v);
    lua_pushfstring(L, "kiln.value(%s%s%s: argument %d of a block%s%s)", kl_type_str(v->type),
                    v->name_hint ? ", %" : "", v->name_hint ? v->name_hint : "", v->index, p ? " in " : "",
                    p ? p->name : "");
  }
  return 1;
}
static int value_users(lua_State *L) { return kl_lua__push_users(L, 1, VALUE(1), 1); }
static int value_uses(lua_State *L) {
  kl_value *v = VALUE(1);
  int c = kl_lua__push_handle_ctxud(L, 1);
  lua_newtable(L);
  int n = 0;
  for (kl_use *u = v->first_use; u; u = u->next) {
    lua_createtable(L, 0, 2);
    kl_lua__push(L, c, KL_LH_OP, u->user);
    lua_setfield(L, -2, "op");
    kl_lua__set_int(L, "index", u->index + 1);
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}
static int value_defining_op(lua_State *L) {
  kl_lua__push_like(L, 1, KL_LH_OP, VALUE(1)->def);
  return 1;
}
static int value_owner_block(lua_State *L) {
  kl_value *v = VALUE(1);
  kl_lua__push_like(L, 1, KL_LH_BLOCK, v->def ? v->def->block : v->block);
  return 1;
}
static int value_parent_op(lua_State *L) {
  kl_lua__push_like(L, 1, KL_LH_OP, kl_value_parent_op(VALUE(1)));
  return 1;
}
static kl_ctx *value_ctx(lua_State *L, int idx) {
  VALUE(idx);
  return kl_lua__handle_ctx(L, idx);
}
static int value_replace_all_uses_with(lua_State *L) {
  kl_value *v = VALUE(1);
  kl_ctx *ctx = value_ctx(L, 1);
  kl_value *w = kl_lua__check_value_in(L, 2, ctx);
  kl_rewriter *rw = kl_lua__active_rw(ctx);
  if (rw)
    kl_rewriter_replace_all_uses(rw, v, w);
  else
    kl_value_replace_all_uses(v, w);
  return 0;
}
static int value_replace_uses_except(lua_State *L) {
  kl_value *v = VALUE(1);
  kl_ctx *ctx = value_ctx(L, 1);
  kl_value *w = kl_lua__check_value_in(L, 2, ctx);
  kl_op *except = kl_lua__check_op_in(L, 3, ctx);
  if (kl_lua__active_rw(ctx))
    return kl_lua__rt_error(L, "kiln", "replace_uses_except is not available inside a pattern");
  kl_value_replace_uses_except(v, w, except);
  return 0;
}
static int value_set_type(lua_State *L) {
  kl_value *v = VALUE(1);
  kl_ctx *ctx = value_ctx(L, 1);
  const kl_type *t = kl_lua__totype(L, 2, ctx);
  kl_rewriter *rw = kl_lua__active_rw(ctx);
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
static int value_p_type(lua_State *L) {
  kl_lua__push_like(L, 1, KL_LH_TYPE, VALUE(1)->type);
  return 1;
}
static int value_p_index(lua_State *L) {
  lua_pushinteger(L, VALUE(1)->index + 1);
  return 1;
}
static int value_p_name(lua_State *L) {
  lua_pushstring(L, VALUE(1)->name_hint);
  return 1;
}
static int value_p_is_arg(lua_State *L) {
  lua_pushboolean(L, VALUE(1)->def == NULL);
  return 1;
}
static int value_p_num_uses(lua_State *L) {
  lua_pushinteger(L, kl_value_use_count(VALUE(1)));
  return 1;
}

void kl_lua__open_value(lua_State *L) {
  int mod = lua_gettop(L);
  static const luaL_Reg value_meta[] = { { "__tostring", value_tostring },
                                         { "__eq", kl_lua__handle_eq },
                                         { NULL, NULL } };
  static const luaL_Reg value_methods[] = { { "users", value_users },
                                            { "uses", value_uses },
                                            { "defining_op", value_defining_op },
                                            { "owner_block", value_owner_block },
                                            { "parent_op", value_parent_op },
                                            { "replace_all_uses_with", value_replace_all_uses_with },
                                            { "replace_uses_except", value_replace_uses_except },
                                            { "set_type", value_set_type },
                                            { "set_name", value_set_name },
                                            { NULL, NULL } };
  static const luaL_Reg value_props[] = { { "type", value_p_type },         { "index", value_p_index },
                                          { "name", value_p_name },         { "is_arg", value_p_is_arg },
                                          { "num_uses", value_p_num_uses }, { NULL, NULL } };
  kl_lua__class(L, mod, kl_lua__mt_names[KL_LH_VALUE], "value", value_methods, value_props, value_meta);
}
