/* kiln_lua_type.c — "kiln.type" handles: kind, element type, shape, strides, memory
 * space, bits, element count, text and the type predicates; equal when their text is. */
#include "lua/kiln_lua.h"

#define TYPE(i) ((const kl_type *)kl_lua__check(L, (i), KL_LH_TYPE))

static int type_tostring(lua_State *L) {
  lua_pushstring(L, kl_type_str(TYPE(1)));
  return 1;
}
static int type_eq(lua_State *L) { return kl_lua__text_eq(L, KL_LH_TYPE); }
static const char *kind_name(const kl_type *t) {
  switch (t->kind) {
    case KL_TY_TENSOR: return "tensor";
    case KL_TY_BUFFER: return "buffer";
    case KL_TY_VECTOR: return "vector";
    case KL_TY_TOKEN: return "token";
    default: return kl_scalar_name(t->kind);
  }
}
static int type_p_kind(lua_State *L) {
  lua_pushstring(L, kind_name(TYPE(1)));
  return 1;
}
static int type_p_elem(lua_State *L) {
  kl_lua__push_like(L, 1, KL_LH_TYPE, TYPE(1)->elem);
  return 1;
}
static int type_p_rank(lua_State *L) {
  const kl_type *t = TYPE(1);
  if (t->kind == KL_TY_TENSOR || t->kind == KL_TY_BUFFER || t->kind == KL_TY_VECTOR)
    lua_pushinteger(L, t->rank);
  else
    lua_pushnil(L);
  return 1;
}
static int push_i64s(lua_State *L, int n, const int64_t *v) {
  if (!v) {
    lua_pushnil(L);
    return 1;
  }
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, v[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}
static int type_p_shape(lua_State *L) {
  const kl_type *t = TYPE(1);
  return push_i64s(L, t->rank, t->shape);
}
static int type_p_strides(lua_State *L) {
  const kl_type *t = TYPE(1);
  return push_i64s(L, t->rank, t->strides);
}
static int type_p_space(lua_State *L) {
  const kl_type *t = TYPE(1);
  if (t->kind != KL_TY_BUFFER)
    lua_pushnil(L);
  else
    lua_pushstring(L, t->space == KL_SPACE_LDS ? "lds" : t->space == KL_SPACE_PRIVATE ? "private" : "global");
  return 1;
}
static int type_p_bits(lua_State *L) {
  const kl_type *t = TYPE(1);
  if (kl_type_is_scalar(t) || t->kind == KL_TY_VECTOR)
    lua_pushinteger(L, kl_type_bits(t));
  else
    lua_pushnil(L);
  return 1;
}
static int type_p_numel(lua_State *L) {
  const kl_type *t = TYPE(1);
  if (kl_type_is_shaped(t) || t->kind == KL_TY_VECTOR)
    lua_pushinteger(L, kl_type_numel(t));
  else
    lua_pushnil(L);
  return 1;
}
static int type_p_text(lua_State *L) { return type_tostring(L); }
static int type_is_int(lua_State *L) {
  lua_pushboolean(L, kl_type_is_int(TYPE(1)));
  return 1;
}
static int type_is_float(lua_State *L) {
  lua_pushboolean(L, kl_type_is_float(TYPE(1)));
  return 1;
}
static int type_is_scalar(lua_State *L) {
  lua_pushboolean(L, kl_type_is_scalar(TYPE(1)));
  return 1;
}
static int type_is_shaped(lua_State *L) {
  lua_pushboolean(L, kl_type_is_shaped(TYPE(1)));
  return 1;
}
static int type_is_row_major(lua_State *L) {
  const kl_type *t = TYPE(1);
  lua_pushboolean(L, kl_type_is_shaped(t) && kl_type_is_row_major(t));
  return 1;
}

void kl_lua__open_type(lua_State *L) {
  int mod = lua_gettop(L);
  static const luaL_Reg type_meta[] = { { "__tostring", type_tostring }, { "__eq", type_eq }, { NULL, NULL } };
  static const luaL_Reg type_methods[] = {
    { "is_int", type_is_int },       { "is_float", type_is_float },         { "is_scalar", type_is_scalar },
    { "is_shaped", type_is_shaped }, { "is_row_major", type_is_row_major }, { NULL, NULL }
  };
  static const luaL_Reg type_props[] = { { "kind", type_p_kind },       { "elem", type_p_elem },
                                         { "rank", type_p_rank },       { "shape", type_p_shape },
                                         { "strides", type_p_strides }, { "space", type_p_space },
                                         { "bits", type_p_bits },       { "numel", type_p_numel },
                                         { "text", type_p_text },       { NULL, NULL } };
  kl_lua__class(L, mod, kl_lua__mt_names[KL_LH_TYPE], "type", type_methods, type_props, type_meta);
}
