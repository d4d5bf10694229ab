/* kiln_lua_prepared.c — "kiln.prepared" userdata, a prepared run:
 * r = p:prepare({name = tensor, ...} [, {device=, sets=, rotate_bytes=, max_sets=, poison=}])
 * -> "kiln.prepared": device buffers allocated and the inputs uploaded once (see
 * kl_program_prepare). Methods: r:launch([set]) enqueues one run of the plan on buffer set
 * `set` (1-based, default 1; no copies); r:sync(); r:time{warmup=, reps=} -> list of
 * milliseconds per run (device events; the sets rotate); r:outputs([set]) -> tensors;
 * r:poison(); r:free() (also __gc / __close). Properties: r.sets, r.set_bytes, r.launches.
 * The prepared run keeps its program (uservalue 1) and its device (a kl_lua_devref) alive;
 * p:prepare (kiln_lua_program.c) makes it. */
#include "lua/kiln_lua_rt.h"
#include "driver/program.h"
#include <stdlib.h>
#include <string.h>

static kl_lua_prepared_ud *check_prep(lua_State *L, int idx) {
  kl_lua_prepared_ud *u = luaL_checkudata(L, idx, KL_MT_PREPARED);
  if (!u->r) kl_lua__rt_error(L, "kiln.prepared", "this prepared run has been freed");
  return u;
}
static int prep_free(lua_State *L) {
  kl_lua_prepared_ud *u = luaL_checkudata(L, 1, KL_MT_PREPARED);
  if (u->r) {
    kl_prepared_free(u->r);
    u->r = NULL;
  }
  if (u->d) {
    kl_lua__devref_release(u->d);
    u->d = NULL;
  }
  return 0;
}
static int prep_tostring(lua_State *L) {
  kl_lua_prepared_ud *u = luaL_checkudata(L, 1, KL_MT_PREPARED);
  if (!u->r) {
    lua_pushstring(L, "kiln.prepared (freed)");
    return 1;
  }
  lua_pushfstring(L, "kiln.prepared (%s, %d buffer set%s of %I bytes, %d launch%s)", u->d->id, kl_prepared_nsets(u->r),
                  kl_prepared_nsets(u->r) == 1 ? "" : "s", (lua_Integer)kl_prepared_set_bytes(u->r),
                  kl_prepared_nlaunches(u->r), kl_prepared_nlaunches(u->r) == 1 ? "" : "es");
  return 1;
}
static int opt_set(lua_State *L, int idx, kl_lua_prepared_ud *u, const char *what) {
  if (lua_isnoneornil(L, idx)) return 0;
  lua_Integer s = luaL_checkinteger(L, idx);
  if (s < 1 || s > kl_prepared_nsets(u->r))
    return kl_lua__rt_error(L, what, "buffer set %lld out of range (1..%d)", (long long)s, kl_prepared_nsets(u->r));
  return (int)s - 1;
}
static int prep_err(lua_State *L, const char *what, const char *err) {
  return kl_lua__rt_error(L, what, "%s", *err ? err : "failed");
}
static int prep_launch(lua_State *L) {
  kl_lua_prepared_ud *u = check_prep(L, 1);
  int set = opt_set(L, 2, u, "launch");
  char err[2048] = "";
  if (kl_prepared_launch(u->r, set, err, sizeof err) != KL_OK) return prep_err(L, "launch", err);
  return 0;
}
static int prep_sync(lua_State *L) {
  kl_lua_prepared_ud *u = check_prep(L, 1);
  char err[2048] = "";
  if (kl_prepared_sync(u->r, err, sizeof err) != KL_OK) return prep_err(L, "sync", err);
  return 0;
}
static int prep_poison(lua_State *L) {
  kl_lua_prepared_ud *u = check_prep(L, 1);
  char err[2048] = "";
  if (kl_prepared_poison(u->r, err, sizeof err) != KL_OK || kl_prepared_sync(u->r, err, sizeof err) != KL_OK)
    return prep_err(L, "poison", err);
  return 0;
}
static int prep_time(lua_State *L) {
  kl_lua_prepared_ud *u = check_prep(L, 1);
  lua_Integer warmup = 3, reps = 10;
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    static const char *const opts[] = { "reps", "warmup", NULL };
    kl_lua__check_opts(L, 2, "time", opts);
    if (lua_getfield(L, 2, "warmup") != LUA_TNIL) {
      if (!lua_isinteger(L, -1)) return kl_lua__rt_error(L, "time", "warmup must be an integer");
      warmup = lua_tointeger(L, -1);
    }
    if (lua_getfield(L, 2, "reps") != LUA_TNIL) {
      if (!lua_isinteger(L, -1)) return kl_lua__rt_error(L, "time", "reps must be an integer");
      reps = lua_tointeger(L, -1);
    }
  }
  if (warmup < 0 || warmup > 1000000 || reps < 1 || reps > 1000000)
    return kl_lua__rt_error(L, "time", "need 0 <= warmup <= 1e6 and 1 <= reps <= 1e6 (got %lld, %lld)",
                            (long long)warmup, (long long)reps);
  float *ms = kl_lua__tmp(L, (size_t)reps * sizeof *ms);
  char err[2048] = "";
  if (kl_prepared_time(u->r, (int)warmup, (int)reps, ms, err, sizeof err) != KL_OK) return prep_err(L, "time", err);
  lua_createtable(L, (int)reps, 0);
  for (lua_Integer i = 0; i < reps; i++) {
    lua_pushnumber(L, ms[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}
static int prep_outputs(lua_State *L) {
  kl_lua_prepared_ud *u = check_prep(L, 1);
  int set = opt_set(L, 2, u, "outputs");
  int nout = 0;
  kl_tensor **outs = NULL;
  char err[2048] = "";
  if (kl_prepared_outputs(u->r, set, &nout, &outs, err, sizeof err) != KL_OK) return prep_err(L, "outputs", err);
  return kl_lua__push_outputs(L, nout, outs, u->d->id);
}
static int rp_sets(lua_State *L) {
  lua_pushinteger(L, kl_prepared_nsets(check_prep(L, 1)->r));
  return 1;
}
static int rp_set_bytes(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)kl_prepared_set_bytes(check_prep(L, 1)->r));
  return 1;
}
static int rp_launches(lua_State *L) {
  lua_pushinteger(L, kl_prepared_nlaunches(check_prep(L, 1)->r));
  return 1;
}

void kl_lua__open_prepared(lua_State *L) {
  int mod = lua_gettop(L);
  static const luaL_Reg rmeta[] = {
    { "__gc", prep_free }, { "__close", prep_free }, { "__tostring", prep_tostring }, { NULL, NULL }
  };
  static const luaL_Reg rmethods[] = {
    { "launch", prep_launch }, { "sync", prep_sync }, { "time", prep_time }, { "outputs", prep_outputs },
    { "poison", prep_poison }, { "free", prep_free }, { NULL, NULL }
  };
  static const luaL_Reg rprops[] = {
    { "sets", rp_sets }, { "set_bytes", rp_set_bytes }, { "launches", rp_launches }, { NULL, NULL }
  };
  kl_lua__class(L, mod, KL_MT_PREPARED, "prepared", rmethods, rprops, rmeta);
}
