/* kiln_lua_attr.c — "kiln.attr" handles: kind, type, name, text and the Lua value
 * (kl_lua__push_attr_value); equal when their text is. */
#include "lua/kiln_lua.h"

#define ATTR(i) ((const kl_attr *)kl_lua__check(L, (i), KL_LH_ATTR))

static int attr_tostring(lua_State *L) {
  lua_pushstring(L, kl_attr_str_of(ATTR(1)));
  return 1;
}
static int attr_eq(lua_State *L) { return kl_lua__text_eq(L, KL_LH_ATTR); }
static int attr_p_kind(lua_State *L) {
  static const char *names[] = { "int", "float", "string", "bool", "unit", "array", "dict", "type", "symref", "ext" };
  lua_pushstring(L, names[ATTR(1)->kind]);
  return 1;
}
static int attr_p_type(lua_State *L) {
  const kl_attr *a = ATTR(1);
  kl_lua__push_like(L, 1, KL_LH_TYPE,
                    (a->kind == KL_AT_INT || a->kind == KL_AT_FLOAT || a->kind == KL_AT_TYPE) ? a->type : NULL);
  return 1;
}
static int attr_p_name(lua_State *L) { /* extension kind name or symbol name */
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

void kl_lua__open_attr(lua_State *L) {
  int mod = lua_gettop(L);
  static const luaL_Reg attr_meta[] = { { "__tostring", attr_tostring }, { "__eq", attr_eq }, { NULL, NULL } };
  static const luaL_Reg attr_methods[] = { { "value", attr_value }, { NULL, NULL } };
  static const luaL_Reg attr_props[] = {
    { "kind", attr_p_kind }, { "type", attr_p_type }, { "name", attr_p_name }, { "text", attr_p_text }, { NULL, NULL }
  };
  kl_lua__class(L, mod, kl_lua__mt_names[KL_LH_ATTR], "attr", attr_methods, attr_props, attr_meta);
}
