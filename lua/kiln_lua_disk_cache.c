/* kiln_lua_disk_cache.c — the on-disk kernel cache (driver/disk_cache.h) from Lua:
 *   kiln.cache_clear([dir])  removes every entry of dir (default $KILN_CACHE_DIR); returns
 *                            the number removed; a Lua error naming dir if it cannot be read.
 *   kiln.cache_stats([dir])  {dir=, entries=, bytes=, hits=, misses=, stores=, rejected=,
 *                            evictions=, store_failures=}: the counters of this process
 *                            (every context), entries and bytes of dir now.
 * kiln.compile's cache_dir= option and p.disk_cache are kiln_lua_program.c's. */
#include "lua/kiln_lua_rt.h"
#include "driver/disk_cache.h"

void kl_lua__open_disk_cache(lua_State *L);

static const char *dir_arg(lua_State *L, int i, const char *what) {
  if (!lua_isnoneornil(L, i)) {
    if (lua_type(L, i) != LUA_TSTRING || !*lua_tostring(L, i))
      kl_lua__rt_error(L, what, "the cache directory must be a non-empty string");
    return lua_tostring(L, i);
  }
  const char *d = kl_disk_cache_env_dir();
  if (!d) kl_lua__rt_error(L, what, "no cache directory: give one or set KILN_CACHE_DIR");
  return d;
}

static int l_cache_clear(lua_State *L) {
  const char *dir = dir_arg(L, 1, "cache_clear");
  char err[4096] = "";
  long n = kl_disk_cache_clear(dir, err, sizeof err);
  if (n < 0) return kl_lua__rt_error(L, "cache_clear", "%s", err);
  lua_pushinteger(L, n);
  return 1;
}

static void setint(lua_State *L, const char *k, long long v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}

static int l_cache_stats(lua_State *L) {
  const char *dir = lua_isnoneornil(L, 1) ? kl_disk_cache_env_dir() : dir_arg(L, 1, "cache_stats");
  kl_disk_cache_stats s;
  kl_disk_cache_stats_get(&s);
  lua_createtable(L, 0, 9);
  if (dir) {
    long entries;
    long long bytes;
    kl_disk_cache_usage(dir, &entries, &bytes);
    lua_pushstring(L, dir);
    lua_setfield(L, -2, "dir");
    setint(L, "entries", entries);
    setint(L, "bytes", bytes);
  }
  setint(L, "hits", s.hits);
  setint(L, "misses", s.misses);
  setint(L, "stores", s.stores);
  setint(L, "rejected", s.rejected);
  setint(L, "evictions", s.evictions);
  setint(L, "store_failures", s.store_failures);
  return 1;
}

void kl_lua__open_disk_cache(lua_State *L) {
  static const luaL_Reg fns[] = { { "cache_clear", l_cache_clear }, { "cache_stats", l_cache_stats }, { NULL, NULL } };
  luaL_setfuncs(L, fns, 0);
}
