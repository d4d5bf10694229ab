/* kiln_lua.c — placeholder module table until the bindings land. */
#include <lua.h>
#include <lauxlib.h>
int kl_lua_open(lua_State *L) { lua_newtable(L); return 1; }
