/* kiln_lua_tune.c — tuning spaces from Lua (driver/tuning_space.h):
 *   kiln.tuning_space(g_or_kernel [, {target = "host", level = "quick"|"full"|"exhaustive",
 *                                     rejected = false}])
 *     -> { "v1:...", ... }            the applicable perf configs, in order (quick: ranked,
 *                                     at most 30, the heuristic's first)
 *     -> list, { {config=, reason=}, ... }   with rejected = true: also what was rejected
 *                                     before any code generation, and why
 *   g_or_kernel: a kiln.graph, a graph func op, or a kernel func / module op holding
 *   rock.gemm ops (read as it is). A graph without a GEMM gives an empty list. */
#include "lua/kiln_lua_rt.h"
#include "driver/tuning_space.h"
#include <string.h>

void kl_lua__open_tune(lua_State *L);

static const char *const OPTS[] = { "target", "level", "rejected", NULL };

static int l_tuning_space(lua_State *L) {
  const char *what = "tuning_space";
  lua_settop(L, 2);
  if (lua_istable(L, 1))
    lua_getfield(L, 1, "func");
  else
    lua_pushvalue(L, 1);
  kl_op *op = kl_lua__test(L, -1, KL_LH_OP);
  if (!op)
    return kl_lua__rt_error(L, what, "expected a graph (kiln.graph(...)), a graph function or a kernel op, got a %s",
                            luaL_typename(L, 1));
  kl_lua__check(L, -1, KL_LH_OP);
  const char *target = "host", *level = "quick";
  bool rejected = false;
  if (!lua_isnil(L, 2)) {
    if (!lua_istable(L, 2)) return kl_lua__rt_error(L, what, "options must be a table, got a %s", luaL_typename(L, 2));
    kl_lua__check_opts(L, 2, what, OPTS);
    if (lua_getfield(L, 2, "target") != LUA_TNIL) {
      if (lua_type(L, -1) != LUA_TSTRING) return kl_lua__rt_error(L, what, "target must be a string such as \"host\"");
      target = lua_tostring(L, -1);
    }
    if (lua_getfield(L, 2, "level") != LUA_TNIL) {
      if (lua_type(L, -1) != LUA_TSTRING)
        return kl_lua__rt_error(L, what, "level must be \"quick\", \"full\" or \"exhaustive\"");
      level = lua_tostring(L, -1);
    }
    if (lua_getfield(L, 2, "rejected") != LUA_TNIL) rejected = lua_toboolean(L, -1);
  }
  kl_perf_space s;
  int ngemms = 0;
  char err[4096] = "";
  if (kl_tuning_space(op, target, level, &s, &ngemms, err, sizeof err) != KL_OK)
    return kl_lua__rt_error(L, what, "%s", strncmp(err, "tuning space: ", 14) ? err : err + 14);
  lua_createtable(L, s.n, 0);
  int list = lua_gettop(L), n = 0;
  lua_newtable(L);
  int rej = lua_gettop(L), r = 0;
  for (int i = 0; i < s.n; i++) {
    if (!s.c[i].reason) {
      lua_pushstring(L, s.c[i].config);
      lua_rawseti(L, list, ++n);
    } else {
      lua_createtable(L, 0, 2);
      lua_pushstring(L, s.c[i].config);
      lua_setfield(L, -2, "config");
      lua_pushstring(L, s.c[i].reason);
      lua_setfield(L, -2, "reason");
      lua_rawseti(L, rej, ++r);
    }
  }
  kl_perf_space_free(&s);
  return rejected ? 2 : (lua_pop(L, 1), 1);
}

void kl_lua__open_tune(lua_State *L) {
  static const luaL_Reg fns[] = { { "tuning_space", l_tuning_space }, { NULL, NULL } };
  luaL_setfuncs(L, fns, 0);
}
