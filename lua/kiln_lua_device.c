/* kiln_lua_device.c — "kiln.device" userdata: kiln.device(name) (one per name and Lua
 * state, kl_lua__push_device), its properties, dev:synchronize, dev:info,
 * kiln.device_backends; and what keeps a device open (kiln_lua_rt.h): the refcounted
 * kl_lua_devref shared by the device's Lua handle, the programs that ran on it
 * (kiln_lua_program.c), prepared runs (kiln_lua_prepared.c) and the context
 * (kl_lua__ctx_devhold: a destroy hook registered before the context's compile cache
 * exists, so it runs after the cache is released). */
#include "lua/kiln_lua_rt.h"
#include "driver/program.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REG_DEVCACHE "kiln.devcache" /* device name -> device userdata */
#define CTX_DEVHOLD  "kiln.lua.devhold"

typedef struct dev_ud {
  kl_lua_devref *d;
} dev_ud;

void kl_lua__devref_release(kl_lua_devref *d) {
  if (d && --d->refs == 0) {
    kl_device_destroy(d->dev);
    free(d);
  }
}

kl_lua_devref *kl_lua__check_device(lua_State *L, int idx) {
  dev_ud *u = luaL_checkudata(L, idx, KL_MT_DEVICE);
  if (!u->d) kl_lua__rt_error(L, "kiln.device", "this device has been closed");
  return u->d;
}
static int dev_gc(lua_State *L) {
  dev_ud *u = luaL_checkudata(L, 1, KL_MT_DEVICE);
  kl_lua_devref *d = u->d;
  u->d = NULL;
  kl_lua__devref_release(d);
  return 0;
}
static const char *kind_name(kl_device_kind k) {
  switch (k) {
    case KL_DEVICE_HOST: return "host";
    case KL_DEVICE_CUDA: return "cuda";
    case KL_DEVICE_HIP: return "hip";
    default: return "other";
  }
}
static int dev_tostring(lua_State *L) {
  dev_ud *u = luaL_checkudata(L, 1, KL_MT_DEVICE);
  if (!u->d) {
    lua_pushstring(L, "kiln.device (closed)");
    return 1;
  }
  const kl_device_info *i = kl_device_get_info(u->d->dev);
  lua_pushfstring(L, "kiln.device %s: %s (arch %s)", u->d->id, i->name, i->arch);
  return 1;
}

/* kiln.device([name = "auto"]) — one device per name and Lua state. */
int kl_lua__l_device(lua_State *L) { return kl_lua__push_device(L, luaL_optstring(L, 1, "auto"), "kiln.device"); }

int kl_lua__push_device(lua_State *L, const char *name, const char *what) {
  lua_getfield(L, LUA_REGISTRYINDEX, REG_DEVCACHE);
  if (lua_getfield(L, -1, name) != LUA_TNIL) {
    lua_remove(L, -2);
    return 1;
  }
  lua_pop(L, 1);
  char err[1024] = "";
  kl_device *dev = kl_device_open(name, err, sizeof err);
  if (!dev) return kl_lua__rt_error(L, what, "cannot open device '%s': %s", name, *err ? err : "unknown error");
  char id[64];
  const kl_device_info *i = kl_device_get_info(dev);
  if (i->kind == KL_DEVICE_HOST)
    snprintf(id, sizeof id, "host");
  else
    snprintf(id, sizeof id, "%s:%d", i->backend, i->ordinal);
  if (lua_getfield(L, -1, id) != LUA_TNIL) { /* the same device under another name ("auto") */
    kl_device_destroy(dev);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, name);
    lua_remove(L, -2);
    return 1;
  }
  lua_pop(L, 1);
  kl_lua_devref *d = kl_xcalloc(1, sizeof *d);
  d->dev = dev;
  d->refs = 1;
  memcpy(d->id, id, sizeof d->id);
  dev_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->d = d;
  luaL_setmetatable(L, KL_MT_DEVICE);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, name);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, id);
  lua_remove(L, -2);
  return 1;
}
static const kl_device_info *DI(lua_State *L) { return kl_device_get_info(kl_lua__check_device(L, 1)->dev); }
static int dp_id(lua_State *L) {
  lua_pushstring(L, kl_lua__check_device(L, 1)->id);
  return 1;
}
static int dp_name(lua_State *L) {
  lua_pushstring(L, DI(L)->name);
  return 1;
}
static int dp_kind(lua_State *L) {
  lua_pushstring(L, kind_name(DI(L)->kind));
  return 1;
}
static int dp_backend(lua_State *L) {
  lua_pushstring(L, DI(L)->backend);
  return 1;
}
static int dp_arch(lua_State *L) {
  lua_pushstring(L, DI(L)->arch);
  return 1;
}
static int dp_ordinal(lua_State *L) {
  lua_pushinteger(L, DI(L)->ordinal);
  return 1;
}
static int dp_total_mem(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)DI(L)->total_mem);
  return 1;
}
static int dp_compute_units(lua_State *L) {
  lua_pushinteger(L, DI(L)->compute_units);
  return 1;
}
static int dp_wave_size(lua_State *L) {
  lua_pushinteger(L, DI(L)->wave_size);
  return 1;
}
static int dp_max_threads(lua_State *L) {
  lua_pushinteger(L, DI(L)->max_threads_per_block);
  return 1;
}
static int dp_max_shared(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)DI(L)->max_shared_per_block);
  return 1;
}
static int dp_driver(lua_State *L) {
  lua_pushstring(L, DI(L)->driver);
  return 1;
}
static int dp_note(lua_State *L) {
  lua_pushstring(L, DI(L)->note);
  return 1;
}
static int dp_cc(lua_State *L) {
  const kl_device_info *i = DI(L);
  if (i->kind == KL_DEVICE_CUDA)
    lua_pushfstring(L, "%d.%d", i->cc_major, i->cc_minor);
  else
    lua_pushnil(L);
  return 1;
}
static int dp_bytes_in_use(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)kl_device_bytes_in_use(kl_lua__check_device(L, 1)->dev));
  return 1;
}
static int dev_synchronize(lua_State *L) {
  kl_lua_devref *d = kl_lua__check_device(L, 1);
  if (kl_device_synchronize(d->dev) != KL_OK)
    return kl_lua__rt_error(L, "device:synchronize", "%s", kl_device_error(d->dev));
  return 0;
}
/* dev:info() -> a plain table of every field */
static int dev_info(lua_State *L) {
  static const struct {
    const char *k;
    lua_CFunction f;
  } fields[] = {
    { "id", dp_id },
    { "name", dp_name },
    { "kind", dp_kind },
    { "backend", dp_backend },
    { "arch", dp_arch },
    { "ordinal", dp_ordinal },
    { "total_mem", dp_total_mem },
    { "compute_units", dp_compute_units },
    { "wave_size", dp_wave_size },
    { "max_threads_per_block", dp_max_threads },
    { "max_shared_per_block", dp_max_shared },
    { "driver", dp_driver },
    { "note", dp_note },
    { "cc", dp_cc },
  };
  kl_lua__check_device(L, 1);
  lua_settop(L, 1);
  lua_newtable(L);
  for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
    lua_pushcfunction(L, fields[i].f);
    lua_pushvalue(L, 1);
    lua_call(L, 1, 1);
    lua_setfield(L, 2, fields[i].k);
  }
  return 1;
}
/* kiln.device_backends() -> {"host", "cuda", "hip", ...} */
static int l_device_backends(lua_State *L) {
  int n = kl_device_backend_count();
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, kl_device_backend_name(i));
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* --------------------------------------------------------- device holding ---- */
bool kl_lua__devs_add(kl_lua_devref ***devs, int *n, kl_lua_devref *d) {
  for (int i = 0; i < *n; i++)
    if ((*devs)[i] == d) return false;
  *devs = kl_xrealloc(*devs, (size_t)(*n + 1) * sizeof **devs);
  (*devs)[(*n)++] = d;
  d->refs++;
  return true;
}
static void devhold_destroy(void *u) {
  kl_lua_devhold *h = u;
  for (int i = 0; i < h->n; i++) kl_lua__devref_release(h->devs[i]);
  free(h->devs);
  free(h);
}
/* Must run before the context's first kl_compile (see the file comment). NULL if the
 * compile cache already exists (then devices used with this context are never closed). */
kl_lua_devhold *kl_lua__ctx_devhold(kl_ctx *ctx) {
  kl_lua_devhold *h = kl_ctx_get_user(ctx, CTX_DEVHOLD);
  if (h) return h == (kl_lua_devhold *)ctx ? NULL : h;
  if (kl_ctx_get_user(ctx, "kiln.compile_cache")) {
    kl_ctx_set_user(ctx, CTX_DEVHOLD, ctx);
    return NULL;
  }
  h = kl_xcalloc(1, sizeof *h);
  kl_ctx_set_user(ctx, CTX_DEVHOLD, h);
  kl_ctx_on_destroy(ctx, devhold_destroy, h);
  return h;
}

void kl_lua__open_device(lua_State *L) {
  int mod = lua_gettop(L);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, REG_DEVCACHE);
  static const luaL_Reg dmeta[] = { { "__gc", dev_gc }, { "__tostring", dev_tostring }, { NULL, NULL } };
  static const luaL_Reg dmethods[] = { { "synchronize", dev_synchronize }, { "info", dev_info }, { NULL, NULL } };
  static const luaL_Reg dprops[] = { { "id", dp_id },
                                     { "name", dp_name },
                                     { "kind", dp_kind },
                                     { "backend", dp_backend },
                                     { "arch", dp_arch },
                                     { "ordinal", dp_ordinal },
                                     { "total_mem", dp_total_mem },
                                     { "compute_units", dp_compute_units },
                                     { "wave_size", dp_wave_size },
                                     { "max_threads_per_block", dp_max_threads },
                                     { "max_shared_per_block", dp_max_shared },
                                     { "driver", dp_driver },
                                     { "note", dp_note },
                                     { "cc", dp_cc },
                                     { "bytes_in_use", dp_bytes_in_use },
                                     { NULL, NULL } };
  kl_lua__class(L, mod, KL_MT_DEVICE, "device", dmethods, dprops, dmeta);
  static const luaL_Reg fns[] = { { "device", kl_lua__l_device },
                                  { "device_backends", l_device_backends },
                                  { NULL, NULL } };
  luaL_setfuncs(L, fns, 0);
}
