/* kiln_lua_tuning_db.c — the tuning database from Lua (driver/tuning_db.h):
 *   kiln.tuning_db_path() -> the default database path ($KILN_TUNING_DB, else
 *       $XDG_CACHE_HOME/kiln/tuning.db, else ~/.cache/kiln/tuning.db; nil if none)
 *   kiln.tuning_db_read(path) -> { {format=, target=, device=, key=, problem=, config=,
 *       ms=, runners={ms, ...}, date=}, ... } (file order, every format), warnings
 *       (a list of "PATH:LINE: ..." strings: corrupt lines skipped, stale versions)
 *   kiln.tuning_db_write(path, records) adds records ({target=, device=, key=, problem=,
 *       config=, ms=, runners=, date=}; format and date default to this kiln's and now),
 *       replacing those of the same identity (locked rewrite + atomic rename)
 *   kiln.tuning_db_merge(path, {shard, ...}) -> records written, warnings: folds shard
 *       databases into path (per identity the fastest record of the shards).
 * Errors (unreadable/unwritable files, bad record fields) are raised with the Lua line. */
#include "lua/kiln_lua_rt.h"
#include "driver/tuning_db.h"
#include <stdlib.h>
#include <string.h>

void kl_lua__open_tuning_db(lua_State *L);

static void push_warnings(lua_State *L, const char *w) {
  lua_newtable(L);
  int n = 0;
  for (const char *p = w ? w : ""; *p;) {
    const char *nl = strchr(p, '\n');
    size_t l = nl ? (size_t)(nl - p) : strlen(p);
    if (l) {
      lua_pushlstring(L, p, l);
      lua_rawseti(L, -2, ++n);
    }
    p += l + (nl ? 1 : 0);
  }
}

static int l_path(lua_State *L) {
  char *p = kl_tuning_db_default_path();
  if (!p) return lua_pushnil(L), 1;
  lua_pushstring(L, p);
  free(p);
  return 1;
}

static int l_read(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  kl_tuning_db db;
  char err[1024];
  if (kl_tuning_db_read(path, &db, err, sizeof err) != KL_OK)
    return kl_lua__err_error(L, "tuning_db_read", "tuning db", err, "cannot read the tuning database");
  lua_createtable(L, db.n, 0);
  for (int i = 0; i < db.n; i++) {
    const kl_tuning_record *r = &db.r[i];
    lua_createtable(L, 0, 9);
    kl_lua__set_int(L, "format", r->format);
    kl_lua__set_str(L, "target", r->target);
    kl_lua__set_str(L, "device", r->device);
    kl_lua__set_str(L, "key", r->key);
    kl_lua__set_str(L, "problem", r->problem);
    kl_lua__set_str(L, "config", r->config);
    kl_lua__set_num(L, "ms", r->ms);
    lua_newtable(L);
    int n = 0;
    for (const char *p = r->runners; *p;) {
      char *end;
      double v = strtod(p, &end);
      lua_pushnumber(L, v);
      lua_rawseti(L, -2, ++n);
      p = *end == ',' ? end + 1 : end + strlen(end);
    }
    lua_setfield(L, -2, "runners");
    kl_lua__set_str(L, "date", r->date);
    lua_rawseti(L, -2, i + 1);
  }
  push_warnings(L, db.warnings);
  kl_tuning_db_free(&db);
  return 2;
}

static char *field(lua_State *L, int t, const char *k, const char *def, lua_Integer i) {
  int ty = lua_getfield(L, t, k);
  char *r = NULL;
  if (ty == LUA_TSTRING || ty == LUA_TNUMBER)
    r = strdup(lua_tostring(L, -1));
  else if (ty == LUA_TNIL && def)
    r = strdup(def);
  lua_pop(L, 1);
  if (!r) kl_lua__rt_error(L, "tuning_db_write", "record %lld: %s must be a string", (long long)i, k);
  return r;
}

static int l_write(lua_State *L) {
  const char *what = "tuning_db_write";
  const char *path = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 2);
  kl_tuning_record *recs = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *recs, 0); /* freed by the GC */
  memset(recs, 0, (size_t)(n ? n : 1) * sizeof *recs);
  char date[21];
  kl_tuning_db_now(date);
  char err[1024] = "";
  kl_status st = KL_OK;
  for (lua_Integer i = 1; i <= n && st == KL_OK; i++) {
    if (lua_geti(L, 2, i) != LUA_TTABLE) {
      st = KL_ERR;
      snprintf(err, sizeof err, "record %lld is not a table", (long long)i);
      lua_pop(L, 1);
      break;
    }
    int t = lua_gettop(L);
    kl_tuning_record *r = &recs[i - 1];
    r->format = KL_TUNING_DB_FORMAT;
    if (lua_getfield(L, t, "format") == LUA_TNUMBER) r->format = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    r->target = field(L, t, "target", NULL, i);
    r->device = field(L, t, "device", "-", i);
    r->key = field(L, t, "key", NULL, i);
    r->problem = field(L, t, "problem", "-", i);
    r->config = field(L, t, "config", NULL, i);
    r->date = field(L, t, "date", date, i);
    if (lua_getfield(L, t, "ms") != LUA_TNUMBER) {
      st = KL_ERR;
      snprintf(err, sizeof err, "record %lld: ms must be a number", (long long)i);
    }
    r->ms = lua_tonumber(L, -1);
    lua_pop(L, 1);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    if (lua_getfield(L, t, "runners") == LUA_TTABLE) {
      int rt = lua_gettop(L);
      for (lua_Integer j = 1; j <= (lua_Integer)lua_rawlen(L, rt) && j <= 8; j++) {
        lua_geti(L, rt, j);
        char num[64];
        snprintf(num, sizeof num, "%s%.6g", j > 1 ? "," : "", lua_tonumber(L, -1));
        lua_pop(L, 1);
        luaL_addstring(&b, num);
      }
    }
    lua_pop(L, 1);
    luaL_pushresult(&b);
    r->runners = strdup(lua_tostring(L, -1));
    lua_pop(L, 2); /* runners string, record */
    bool comment;
    char why[512];
    char *line = kl_tuning_record_format(r);
    line[strlen(line) - 1] = 0;
    kl_tuning_record chk;
    if (st == KL_OK && !kl_tuning_record_parse(line, &chk, &comment, why, sizeof why)) {
      st = KL_ERR;
      snprintf(err, sizeof err, "record %lld: %s", (long long)i, why);
    } else if (st == KL_OK) {
      kl_tuning_record_clear(&chk);
    }
    free(line);
  }
  if (st == KL_OK) st = kl_tuning_db_write(path, (int)n, recs, err, sizeof err);
  for (lua_Integer i = 0; i < n; i++) kl_tuning_record_clear(&recs[i]);
  if (st != KL_OK) return kl_lua__rt_error(L, what, "%s", err);
  return 0;
}

static int l_merge(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 2);
  const char **shards = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *shards, 0);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 2, i);
    if (lua_type(L, -1) != LUA_TSTRING)
      return kl_lua__rt_error(L, "tuning_db_merge", "shard %lld must be a file name", (long long)i);
    shards[i - 1] = lua_tostring(L, -1); /* the table keeps the string alive */
    lua_pop(L, 1);
  }
  int nrec = 0;
  char *warn = NULL, err[1024] = "";
  kl_status st = kl_tuning_db_merge(path, (int)n, shards, &nrec, &warn, err, sizeof err);
  if (st != KL_OK) {
    free(warn);
    return kl_lua__rt_error(L, "tuning_db_merge", "%s", err);
  }
  lua_pushinteger(L, nrec);
  push_warnings(L, warn);
  free(warn);
  return 2;
}

void kl_lua__open_tuning_db(lua_State *L) {
  static const luaL_Reg fns[] = { { "tuning_db_path", l_path },
                                  { "tuning_db_read", l_read },
                                  { "tuning_db_write", l_write },
                                  { "tuning_db_merge", l_merge },
                                  { NULL, NULL } };
  luaL_setfuncs(L, fns, 0);
}
