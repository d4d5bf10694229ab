/* kiln_lua_error.c — the binding's errors (one shape, kiln_lua.h): the user's Lua line
 * (the first stack level outside the kiln library), kl_lua__rt_error, kl_lua__err_error,
 * kl_lua__diag_error, pending diagnostics to stderr and the traceback message handler. */
#include "lua/kiln_lua.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kl_lua_traceback(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
      msg = lua_tostring(L, -1);
    else
      msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* The file of the first Lua level outside kiln into buf (false if none), its line into
 * *line. Needs no context. */
static bool caller_file_line(lua_State *L, char *buf, size_t n, int *line) {
  lua_Debug ar;
  luaL_checkstack(L, 2, "kiln");
  lua_getfield(L, LUA_REGISTRYINDEX, KL_LUA_REG_LIBPREFIX);
  size_t plen = 0;
  const char *prefix = lua_tolstring(L, -1, &plen);
  bool found = false;
  for (int level = 0; lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
    if (prefix && plen && strncmp(ar.source, prefix, plen) == 0) continue;
    snprintf(buf, n, "%s", (ar.source[0] == '@' || ar.source[0] == '=') ? ar.source + 1 : ar.short_src);
    *line = ar.currentline;
    found = true;
    break;
  }
  lua_pop(L, 1);
  return found;
}

/* Independent of every context: an error must keep its own message after the default
 * context is destroyed. */
void kl_lua__push_where(lua_State *L) {
  char file[1024];
  int line = 0;
  if (caller_file_line(L, file, sizeof file, &line))
    lua_pushfstring(L, "%s:%d", file, line);
  else
    lua_pushliteral(L, "?");
}

kl_loc kl_lua__caller_loc(lua_State *L, kl_ctx *ctx) {
  char file[1024];
  int line = 0;
  return caller_file_line(L, file, sizeof file, &line) ? kl_loc_make(ctx, file, line, 0) : KL_LOC_UNKNOWN;
}

/* Raises "<where>: error: <what>: <msg>" (msg: n bytes; no "<what>: " when what is empty). */
static int raise_at_user_line(lua_State *L, const char *what, const char *msg, size_t n) {
  luaL_checkstack(L, 4, "kiln");
  kl_lua__push_where(L);
  if (what && *what)
    lua_pushfstring(L, ": error: %s: ", what);
  else
    lua_pushliteral(L, ": error: ");
  lua_pushlstring(L, msg, n);
  lua_concat(L, 3);
  return lua_error(L);
}

int kl_lua__rt_error(lua_State *L, const char *what, const char *fmt, ...) {
  char buf[2048];
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  int n = vsnprintf(NULL, 0, fmt, ap); /* the whole message, however long (a traceback) */
  va_end(ap);
  char *msg = buf;
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof buf) msg = kl_lua__tmp(L, (size_t)n + 1);
  kl_verrf(msg, (size_t)n + 1, fmt, again);
  va_end(again);
  return raise_at_user_line(L, what, msg, strlen(msg));
}

int kl_lua__err_error(lua_State *L, const char *what, const char *stage, const char *err, const char *fallback) {
  size_t n = stage ? strlen(stage) : 0;
  if (!err || !*err) return kl_lua__rt_error(L, what, "%s", fallback);
  if (n && !strncmp(err, stage, n) && err[n] == ':' && err[n + 1] == ' ') err += n + 2;
  return kl_lua__rt_error(L, what, "%s", err);
}

/* Whether the diagnostics text d begins at the user's line where ("file:line"): with
 * "where: " or "where:<col>: ". */
static bool starts_at(const char *d, const char *where) {
  size_t w = strlen(where);
  if (strncmp(d, where, w) != 0 || d[w] != ':') return false;
  if (d[w + 1] == ' ') return true;
  const char *p = d + w + 1;
  if (*p < '0' || *p > '9') return false;
  while (*p >= '0' && *p <= '9') p++;
  return *p == ':';
}

int kl_lua__diag_error(lua_State *L, kl_ctx *ctx, const char *what, const char *fallback) {
  char *d = kl_diag_take(ctx);
  size_t n = strlen(d);
  while (n && d[n - 1] == '\n') n--;
  luaL_checkstack(L, 4, "kiln");
  kl_lua__push_where(L);
  bool as_is = n && starts_at(d, lua_tostring(L, -1));
  lua_pop(L, 1);
  if (as_is) { /* already "<file>:<line>: error: ..." at the user's line */
    lua_pushlstring(L, d, n);
    free(d);
    return lua_error(L);
  }
  if (!n) {
    free(d);
    return kl_lua__rt_error(L, what, "%s", fallback ? fallback : "operation failed");
  }
  luaL_Buffer b; /* the text outlives d: copy it into a Lua string first */
  luaL_buffinit(L, &b);
  luaL_addlstring(&b, d, n);
  free(d);
  luaL_pushresult(&b);
  size_t len;
  const char *msg = lua_tolstring(L, -1, &len);
  return raise_at_user_line(L, what, msg, len);
}

void kl_lua__flush_diags(kl_ctx *ctx) {
  char *d = kl_diag_take(ctx);
  if (*d) fputs(d, stderr);
  free(d);
}
