/* kiln_lua_util.c — small utilities of the kiln module: kiln.clock_ms() (monotonic wall
 * clock in milliseconds, for timing runs in scripts and benchmarks). */
#include "lua/kiln_lua.h"
#include <time.h>

static int clock_ms(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6);
  return 1;
}

void kl_lua__open_util(lua_State *L) {
  static const luaL_Reg fns[] = { { "clock_ms", clock_ms }, { NULL, NULL } };
  luaL_setfuncs(L, fns, 0);
}
