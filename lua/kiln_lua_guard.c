/* kiln_lua_guard.c — the to-be-closed guard userdata of the busy and pin rules
 * (kiln_lua.h): "kiln.busyguard" keeps a context busy, "kiln.pinguard" keeps a tensor or
 * view pinned, each until the C function that pushed it returns or raises. */
#include "lua/kiln_lua.h"
#include <string.h>

#define MT_BUSYGUARD "kiln.busyguard"
typedef struct busy_guard {
  kl_ctx *ctx;
  kl_lua_busy prev;
  bool active;
} busy_guard;
static int busy_guard_close(lua_State *L) {
  busy_guard *g = luaL_checkudata(L, 1, MT_BUSYGUARD);
  if (g->active) {
    g->active = false;
    kl_lua__busy_leave(g->ctx, g->prev);
  }
  return 0;
}

/* Pushes a to-be-closed guard userdata of size n (zeroed: inactive) with metatable mt
 * (__close = close) that anchors the value at idx (absolute). May raise (allocation,
 * stack); the caller activates the guard afterwards. */
static void *push_guard(lua_State *L, size_t n, const char *mt, lua_CFunction close, int idx) {
  void *g = lua_newuserdatauv(L, n, 1);
  memset(g, 0, n);
  if (luaL_newmetatable(L, mt)) {
    lua_pushcfunction(L, close);
    lua_setfield(L, -2, "__close");
  }
  lua_setmetatable(L, -2);
  lua_pushvalue(L, idx);
  lua_setiuservalue(L, -2, 1);
  lua_toclose(L, -1);
  return g;
}
void kl_lua__busy_guard(lua_State *L, int ctxidx, const char *what) {
  ctxidx = lua_absindex(L, ctxidx);
  luaL_checkudata(L, ctxidx, KL_MT_CONTEXT);
  busy_guard *g = push_guard(L, sizeof *g, MT_BUSYGUARD, busy_guard_close, ctxidx); /* anchors the context userdata */
  /* checked after the allocations above: a finalizer they ran may have destroyed it */
  kl_ctx *ctx = g->ctx = kl_lua__check_ctx(L, ctxidx);
  g->prev = kl_lua__busy_enter(ctx, what, NULL);
  g->active = true;
}

/* A pin guard: like the busy guard, for one object (its userdata at idx holds *pin). */
#define MT_PINGUARD "kiln.pinguard"
typedef struct pin_guard {
  kl_lua_pin *pin;
  const char *prev;
  bool active;
} pin_guard;
static int pin_guard_close(lua_State *L) {
  pin_guard *g = luaL_checkudata(L, 1, MT_PINGUARD);
  if (g->active) {
    g->active = false;
    g->pin->n--;
    g->pin->what = g->prev;
  }
  return 0;
}

void kl_lua__pin_guard(lua_State *L, int idx, kl_lua_pin *pin, const char *what) {
  /* anchors the object (and so *pin); the caller re-checks the object after this call */
  pin_guard *g = push_guard(L, sizeof *g, MT_PINGUARD, pin_guard_close, lua_absindex(L, idx));
  g->pin = pin;
  g->prev = pin->what;
  pin->n++;
  pin->what = what;
  g->active = true;
}
