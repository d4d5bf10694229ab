/* kiln_lua.c — the kiln Lua module: kl_lua_open (the module table, each binding file's
 * registration in order, then the Lua part of the library), the class machinery of
 * every userdata type (kl_lua__class) and kl_lua__tmp. One file per userdata type
 * (kiln_lua.h lists them). */
#include "lua/kiln_lua.h"
#include <string.h>

void *kl_lua__tmp(lua_State *L, size_t n) { return lua_newuserdatauv(L, n ? n : 1, 0); }

static int class_index(lua_State *L) {
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(2)) == LUA_TNIL) return 1;
  lua_pushvalue(L, 1);
  lua_call(L, 1, 1);
  return 1;
}
void kl_lua__class(lua_State *L, int modidx, const char *name, const char *short_name, const luaL_Reg *methods,
                   const luaL_Reg *props, const luaL_Reg *meta) {
  modidx = lua_absindex(L, modidx);
  luaL_newmetatable(L, name);
  if (meta) luaL_setfuncs(L, meta, 0);
  lua_newtable(L);
  if (methods) luaL_setfuncs(L, methods, 0);
  lua_newtable(L);
  if (props) luaL_setfuncs(L, props, 0);
  /* kiln.methods[short] = methods; kiln.props[short] = props */
  lua_getfield(L, modidx, "methods");
  lua_pushvalue(L, -3);
  lua_setfield(L, -2, short_name);
  lua_pop(L, 1);
  lua_getfield(L, modidx, "props");
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, short_name);
  lua_pop(L, 1);
  lua_pushcclosure(L, class_index, 2);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}

/* ------------------------------------------------------------------ open ---- */
static int l_set_libprefix(lua_State *L) {
  /* Called by lua/kiln/lib.lua with its own chunk name ("@.../kiln/lib.lua"):
   * ops built from code in that directory get the location of their caller. */
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  while (n && s[n - 1] != '/' && s[n - 1] != '\\') n--;
  lua_pushlstring(L, s, n);
  lua_setfield(L, LUA_REGISTRYINDEX, KL_LUA_REG_LIBPREFIX);
  return 0;
}
static int l_caller_loc(lua_State *L) {
  int first;
  int c = kl_lua__ctx_arg(L, &first);
  kl_lua__push_loc(L, kl_lua__caller_loc(L, kl_lua__check_ctx(L, c)));
  return 1;
}
int kl_lua_open(lua_State *L) {
  luaL_checkversion(L);
  lua_newtable(L);
  int mod = lua_gettop(L);
  lua_newtable(L);
  lua_setfield(L, mod, "methods");
  lua_newtable(L);
  lua_setfield(L, mod, "props");
  lua_pushstring(L, "0.1.0");
  lua_setfield(L, mod, "version");

  static const luaL_Reg fns[] = { { "_set_libprefix", l_set_libprefix },
                                  { "caller_loc", l_caller_loc },
                                  { "traceback", kl_lua_traceback },
                                  { NULL, NULL } };
  luaL_setfuncs(L, fns, 0);

  kl_lua__open_context(L); /* first: registry tables, the context class */
  kl_lua__open_op(L);
  kl_lua__open_value(L);
  kl_lua__open_block(L);
  kl_lua__open_region(L);
  kl_lua__open_type(L);
  kl_lua__open_attr(L);
  kl_lua__open_ir(L);
  kl_lua__open_rewriter(L);
  kl_lua__open_pattern(L);
  kl_lua__open_pass(L);
  kl_lua__open_util(L);
  kl_lua__open_tensor(L);
  kl_lua__open_graph(L);
  kl_lua__open_view(L);
  kl_lua__open_device(L);
  kl_lua__open_program(L);
  kl_lua__open_prepared(L);
  kl_lua__open_bundle(L);
  kl_lua__open_disk_cache(L);
  kl_lua__open_tune(L);
  kl_lua__open_tuning_db(L);
  kl_lua__open_error(L);

  /* The Lua part of the library: require("kiln.lib") returns function(kiln). While it
   * loads, package.loaded.kiln is the module table, so Lua files of the library may
   * `require "kiln"`; on failure it is cleared again. */
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  int loaded = lua_gettop(L);
  lua_pushvalue(L, mod);
  lua_setfield(L, loaded, "kiln");
  lua_getglobal(L, "require");
  if (lua_isnil(L, -1)) return kl_lua__rt_error(L, "kiln", "the package library is not open (require is missing)");
  lua_pushstring(L, "kiln.lib");
  int st = lua_pcall(L, 1, 1, 0);
  if (st == LUA_OK && !lua_isfunction(L, -1)) {
    lua_pushstring(L, "module 'kiln.lib' must return a function");
    st = LUA_ERRRUN;
  } else if (st == LUA_OK) {
    lua_pushvalue(L, mod);
    st = lua_pcall(L, 1, 0, 0);
  }
  if (st != LUA_OK) {
    lua_pushnil(L);
    lua_setfield(L, loaded, "kiln");
    return kl_lua__rt_error(L, "kiln",
                            "cannot load the Lua part of kiln (module 'kiln.lib'; package.path must "
                            "include <kiln>/lua/?.lua):\n%s",
                            lua_tostring(L, -1));
  }
  lua_settop(L, mod);
  return 1;
}
