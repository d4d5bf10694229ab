/* kiln_lua_bundle.c — bundles in Lua: p:save(path) writes a compiled program to one
 * bundle file (driver/bundle.h); kiln.load([ctx,] path) reads one back into a
 * "kiln.program" (of ctx, default: the default context) that p:run runs on the device
 * present, with p:kernels, p:plan, p:binary, p:targets as for compiled programs (a loaded
 * program has no IR snapshots: its kernels' `ir` lists are empty and p:ir returns nil).
 * Errors are Lua errors "file:line: error: save|load: <message>" naming the bundle file
 * and, for damaged bundles, the section and what is wrong.
 * The "kiln.program" userdata belongs to kiln_lua_program.c; this file uses its
 * kl_lua__check_program / kl_lua__push_program. kl_lua__open_bundle runs after
 * kl_lua__open_program (it adds "save" to kiln.methods.program). */
#include "lua/kiln_lua_rt.h"
#include "driver/bundle.h"
#include <string.h>

/* Registration (called by kl_lua_open after kl_lua__open_program; kiln_lua.h). */
void kl_lua__open_bundle(lua_State *L);

/* Drops trailing newlines and the "load: " / "save: " prefix that rt_error adds again. */
static const char *trim(char *s, const char *prefix) {
  size_t n = strlen(s);
  while (n && s[n - 1] == '\n') s[--n] = 0;
  size_t k = strlen(prefix);
  return strncmp(s, prefix, k) ? s : s + k;
}

/* p:save(path) */
static int prog_save(lua_State *L) {
  kl_program *p = kl_lua__check_program(L, 1);
  const char *path = luaL_checkstring(L, 2);
  char err[4096] = "";
  if (kl_program_save(p, path, err, sizeof err) != KL_OK) {
    const char *m = trim(err, "save: ");
    return kl_lua__rt_error(L, "save", "%s", *m ? m : "cannot write the bundle");
  }
  return 0;
}

/* kiln.load([ctx,] path) -> program */
static int l_load(lua_State *L) {
  int first;
  int c = kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, c);
  const char *path = luaL_checkstring(L, first);
  char err[4096] = "";
  kl_lua__flush_diags(ctx);
  kl_program *p = kl_program_load(ctx, path, err, sizeof err);
  if (!p) {
    const char *m = trim(err, "load: ");
    return kl_lua__rt_error(L, "load", "%s", *m ? m : "cannot read the bundle");
  }
  kl_lua__push_program(L, c, p);
  return 1;
}

void kl_lua__open_bundle(lua_State *L) {
  int mod = lua_gettop(L);
  lua_getfield(L, mod, "methods");
  if (lua_getfield(L, -1, "program") != LUA_TTABLE)
    luaL_error(L, "kiln: kl_lua__open_bundle must run after kl_lua__open_program");
  lua_pushcfunction(L, prog_save);
  lua_setfield(L, -2, "save");
  lua_pop(L, 2);
  lua_pushcfunction(L, l_load);
  lua_setfield(L, mod, "load");
}
