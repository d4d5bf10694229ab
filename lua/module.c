/* module.c — luaopen_kiln for stock lua5.4 (build/kiln.so). */
#include <lua.h>
int kl_lua_open(lua_State *L);
int luaopen_kiln(lua_State *L) { return kl_lua_open(L); }
