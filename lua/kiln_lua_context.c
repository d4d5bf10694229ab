/* kiln_lua_context.c — "kiln.context" userdata: creating contexts (kiln.context,
 * kiln.default_context), the per-context binding state (kl_lua_ctxstate), busy
 * contexts (kl_lua__busy_enter/leave; the guard is in kiln_lua_guard.c), destroying
 * (ctx:destroy, __close, __gc: refused while busy) and finding the context userdata of
 * a kl_ctx. */
#include "lua/kiln_lua.h"
#include "passes/passes.h"
#include "driver/program.h"
#include <string.h>

#define REG_CTXMAP  "kiln.ctxmap" /* lightuserdata(kl_ctx) -> context userdata (weak) */
#define REG_WEAKV   "kiln.weakv"  /* {__mode = "v"} */
#define REG_DEFAULT "kiln.default_ctx"

kl_lua_ctxstate *kl_lua__state(kl_ctx *ctx) { return kl_ctx_get_user(ctx, "kiln.lua"); }
kl_lua_ctxstate *kl_lua__check_not_rewriting(lua_State *L, kl_ctx *ctx, const char *what) {
  kl_lua_ctxstate *st = kl_lua__state(ctx);
  if (!st) kl_lua__rt_error(L, what, "this IR belongs to a context without a Lua handle");
  if (st->rw) kl_lua__rt_error(L, what, "cannot run inside a pattern of the same context");
  return st;
}
lua_State *kl_lua__set_current(kl_ctx *ctx, lua_State *L) {
  kl_lua_ctxstate *st = kl_lua__state(ctx);
  if (!st) return NULL;
  lua_State *prev = st->cur;
  st->cur = L;
  return prev;
}
kl_rewriter *kl_lua__active_rw(kl_ctx *ctx) {
  kl_lua_ctxstate *st = kl_lua__state(ctx);
  return st ? st->rw : NULL;
}

kl_lua_busy kl_lua__busy_enter(kl_ctx *ctx, const char *what, const char *name) {
  kl_lua_ctxstate *st = kl_lua__state(ctx);
  if (!st) return (kl_lua_busy){ NULL, NULL };
  kl_lua_busy prev = st->why;
  st->busy++;
  st->why = (kl_lua_busy){ what, name };
  return prev;
}
void kl_lua__busy_leave(kl_ctx *ctx, kl_lua_busy prev) {
  kl_lua_ctxstate *st = kl_lua__state(ctx);
  if (!st || st->busy <= 0) return;
  st->busy--;
  st->why = prev;
}

int kl_lua__ctx_destroy(lua_State *L, int idx) {
  kl_lua_ctxud *u = luaL_checkudata(L, idx, KL_MT_CONTEXT);
  if (!u->ctx) return 0;
  kl_lua_ctxstate *st = kl_lua__state(u->ctx);
  if (st && st->busy > 0)
    return kl_lua__rt_error(L, "kiln",
                            "ctx:destroy() inside a callback that runs on this context (%s%s%s%s); "
                            "destroy it after that call returns",
                            st->why.what ? st->why.what : "a kiln call", st->why.name ? " '" : "",
                            st->why.name ? st->why.name : "", st->why.name ? "'" : "");
  kl_ctx *c = u->ctx;
  u->ctx = NULL;
  kl_ctx_destroy(c);
  return 0;
}
static int ctx_gc(lua_State *L) { return kl_lua__ctx_destroy(L, 1); }
static int ctx_tostring(lua_State *L) {
  kl_lua_ctxud *u = luaL_checkudata(L, 1, KL_MT_CONTEXT);
  if (u->ctx)
    lua_pushfstring(L, "kiln.context: %p", (void *)u->ctx);
  else
    lua_pushstring(L, "kiln.context (destroyed)");
  return 1;
}
int kl_lua__new_ctx(lua_State *L) {
  kl_lua_ctxud *u = lua_newuserdatauv(L, sizeof *u, KL_LH_NKINDS);
  u->ctx = NULL;
  luaL_setmetatable(L, KL_MT_CONTEXT);
  for (int k = 0; k < KL_LH_NKINDS; k++) {
    lua_newtable(L);
    luaL_getmetatable(L, REG_WEAKV);
    lua_setmetatable(L, -2);
    lua_setiuservalue(L, -2, k + 1);
  }
  u->ctx = kl_ctx_create();
  kl_register_builtin_passes(u->ctx); /* kl_ctx_create registers the dialects only */
  kl_lua_ctxstate *st = kl_arena_alloc(kl_ctx_arena(u->ctx), sizeof *st);
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  st->main = lua_tothread(L, -1);
  lua_pop(L, 1);
  kl_ctx_set_user(u->ctx, "kiln.lua", st);
  lua_getfield(L, LUA_REGISTRYINDEX, REG_CTXMAP);
  lua_pushvalue(L, -2);
  lua_rawsetp(L, -2, u->ctx);
  lua_pop(L, 1);
  kl_lua__register_lua_passes(L, u->ctx);
  return 1;
}
static int l_context(lua_State *L) { return kl_lua__new_ctx(L); }
int kl_lua__default_ctxud(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, REG_DEFAULT) == LUA_TNIL) {
    lua_pop(L, 1);
    kl_lua__new_ctx(L);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_DEFAULT);
  }
  kl_lua__check_ctx(L, -1);
  return lua_gettop(L);
}
static int l_default_context(lua_State *L) {
  kl_lua__default_ctxud(L);
  return 1;
}
kl_ctx *kl_lua_default_ctx(lua_State *L) {
  kl_lua__default_ctxud(L);
  kl_ctx *c = ((kl_lua_ctxud *)lua_touserdata(L, -1))->ctx;
  lua_pop(L, 1);
  return c;
}
kl_ctx *kl_lua__check_ctx(lua_State *L, int idx) {
  kl_lua_ctxud *u = luaL_checkudata(L, idx, KL_MT_CONTEXT);
  if (!u->ctx) kl_lua__rt_error(L, "kiln", "this context has been destroyed");
  return u->ctx;
}
int kl_lua__ctx_arg(lua_State *L, int *first) {
  *first = 2;
  if (luaL_testudata(L, 1, KL_MT_CONTEXT)) {
    kl_lua__check_ctx(L, 1);
    return 1;
  }
  kl_lua__default_ctxud(L);
  lua_insert(L, 1);
  return 1;
}
int kl_lua__push_ctxud_of(lua_State *L, kl_ctx *ctx) {
  lua_getfield(L, LUA_REGISTRYINDEX, REG_CTXMAP);
  lua_rawgetp(L, -1, ctx);
  lua_remove(L, -2);
  if (lua_isnil(L, -1)) kl_lua__rt_error(L, "kiln", "this IR belongs to a context without a Lua handle");
  return lua_gettop(L);
}
static int ctx_destroy(lua_State *L) { return kl_lua__ctx_destroy(L, 1); } /* refused while busy */

/* kiln.collect([ctx]) -> n: drops the compile cache of ctx (of every live context when
 * none is given; a program lives on while a handle holds it), then runs a full garbage
 * collection, so what no handle holds is freed now; n = cache entries dropped. */
static int l_collect(lua_State *L) {
  int n = 0;
  if (!lua_isnoneornil(L, 1))
    n = kl_compile_cache_clear(kl_lua__check_ctx(L, 1));
  else {
    lua_getfield(L, LUA_REGISTRYINDEX, REG_CTXMAP);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      kl_lua_ctxud *u = luaL_testudata(L, -1, KL_MT_CONTEXT);
      if (u && u->ctx) n += kl_compile_cache_clear(u->ctx);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  lua_gc(L, LUA_GCCOLLECT);
  lua_gc(L, LUA_GCCOLLECT); /* objects resurrected by finalizers */
  lua_pushinteger(L, n);
  return 1;
}
/* kiln.compile_cache([ctx] [, max]) -> {entries = n, max = m}: the in-memory compile
 * cache of ctx (the default context); max (>= 0) sets how many programs it keeps, least
 * recently used dropped first (0: no caching). */
static int l_compile_cache(lua_State *L) {
  int first;
  kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, 1);
  if (!lua_isnoneornil(L, first)) {
    lua_Integer max = luaL_checkinteger(L, first);
    if (max < 0 || max > 1000000)
      return kl_lua__rt_error(L, "kiln.compile_cache", "max must be 0 .. 1000000, got %lld", (long long)max);
    kl_compile_cache_max(ctx, (int)max);
  }
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, kl_compile_cache_count(ctx));
  lua_setfield(L, -2, "entries");
  lua_pushinteger(L, kl_compile_cache_max(ctx, -1));
  lua_setfield(L, -2, "max");
  return 1;
}

void kl_lua__open_context(lua_State *L) {
  int mod = lua_gettop(L);
  /* registry tables (idempotent if kiln is opened twice in one state) */
  if (luaL_newmetatable(L, REG_WEAKV)) { kl_lua__set_str(L, "__mode", "v"); }
  lua_pop(L, 1);
  if (lua_getfield(L, LUA_REGISTRYINDEX, REG_CTXMAP) == LUA_TNIL) {
    lua_newtable(L);
    luaL_getmetatable(L, REG_WEAKV);
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_CTXMAP);
  }
  lua_pop(L, 1);
  static const luaL_Reg fns[] = { { "context", l_context },
                                  { "default_context", l_default_context },
                                  { "collect", l_collect },
                                  { "compile_cache", l_compile_cache },
                                  { NULL, NULL } };
  luaL_setfuncs(L, fns, 0);
  static const luaL_Reg ctx_meta[] = {
    { "__gc", ctx_gc }, { "__close", ctx_gc }, { "__tostring", ctx_tostring }, { NULL, NULL }
  };
  static const luaL_Reg ctx_methods[] = { { "destroy", ctx_destroy }, { NULL, NULL } }; /* refused while busy */
  kl_lua__class(L, mod, KL_MT_CONTEXT, "context", ctx_methods, NULL, ctx_meta);
}
