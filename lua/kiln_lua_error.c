/* kiln_lua_error.c — the binding's errors (one shape, kiln_lua.h): the user's Lua line
 * (the first stack level outside the kiln library), kl_lua__rt_error, kl_lua__err_error,
 * kl_lua__diag_error, pending diagnostics to stderr and the traceback message handler. */
#include "lua/kiln_lua.h"
#include "core/suggest.h"
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

/* ---- unknown names: the one helper for option tables and name-taking arguments ---- */
int kl_lua__unknown_name(lua_State *L, const char *what, const char *kind, const char *plural, const char *name,
                         const char *const *known, int n) {
  if (n < 0)
    for (n = 0; known[n];) n++;
  const char *near = kl_suggest_name(name, strlen(name), known, n);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int i = 0, first = 1; i < n; i++) {
    if (!known[i]) continue;
    if (!first) luaL_addstring(&b, ", ");
    luaL_addstring(&b, known[i]);
    first = 0;
  }
  if (!n) luaL_addstring(&b, "none");
  luaL_pushresult(&b);
  const char *list = lua_tostring(L, -1);
  if (near)
    return kl_lua__rt_error(L, what, "unknown %s '%s' (did you mean '%s'? %s: %s)", kind, name, near, plural, list);
  return kl_lua__rt_error(L, what, "unknown %s '%s' (%s: %s)", kind, name, plural, list);
}

void kl_lua__check_opts(lua_State *L, int idx, const char *what, const char *const *known) {
  if (!lua_istable(L, idx)) return;
  idx = lua_absindex(L, idx);
  luaL_checkstack(L, 4, what);
  for (lua_pushnil(L); lua_next(L, idx); lua_pop(L, 1)) {
    if (lua_type(L, -2) == LUA_TSTRING) {
      int i = 0;
      while (known[i] && strcmp(known[i], lua_tostring(L, -2))) i++;
      if (known[i]) continue;
    }
    lua_pushvalue(L, -2);
    const char *key = luaL_tolstring(L, -1, NULL); /* stays on the stack */
    kl_lua__unknown_name(L, what, "option", "options", key, known, -1);
  }
}

/* The strings of the list (or the keys of the set) at idx as a NULL-terminated array in
 * a temporary buffer pushed on the stack. */
static const char **names_of(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  luaL_checktype(L, idx, LUA_TTABLE);
  int n = 0;
  for (lua_pushnil(L); lua_next(L, idx); lua_pop(L, 1)) n++;
  const char **names = kl_lua__tmp(L, (size_t)(n + 1) * sizeof *names);
  int k = 0;
  for (lua_pushnil(L); lua_next(L, idx); lua_pop(L, 1)) {
    int s = lua_type(L, -2) == LUA_TNUMBER ? -1 : -2;                   /* a list's values, a set's keys */
    if (lua_type(L, s) == LUA_TSTRING) names[k++] = lua_tostring(L, s); /* anchored by the table */
  }
  names[k] = NULL;
  /* sorted, so the message reads the same every time (sets have no order) */
  for (int i = 1; i < k; i++)
    for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
      const char *t = names[j];
      names[j] = names[j - 1];
      names[j - 1] = t;
    }
  return names;
}
/* kiln._check_opts(opts, what, known): kl_lua__check_opts for the Lua part of kiln
 * (known: a list of names or a set); returns opts, or {} for nil. */
static int l_check_opts(lua_State *L) {
  const char *what = luaL_checkstring(L, 2);
  if (lua_isnil(L, 1)) {
    lua_newtable(L);
    return 1;
  }
  if (!lua_istable(L, 1)) return kl_lua__rt_error(L, what, "options must be a table, got a %s", luaL_typename(L, 1));
  const char **known = names_of(L, 3);
  kl_lua__check_opts(L, 1, what, known);
  lua_settop(L, 1);
  return 1;
}
/* kiln._unknown_name(what, kind, plural, name, known): raises kl_lua__unknown_name. */
static int l_unknown_name(lua_State *L) {
  const char *what = luaL_checkstring(L, 1), *kind = luaL_checkstring(L, 2), *plural = luaL_checkstring(L, 3);
  const char *name = luaL_tolstring(L, 4, NULL);
  const char **known = names_of(L, 5);
  return kl_lua__unknown_name(L, what, kind, plural, name, known, -1);
}
void kl_lua__open_error(lua_State *L) {
  static const luaL_Reg fns[] = { { "_check_opts", l_check_opts },
                                  { "_unknown_name", l_unknown_name },
                                  { NULL, NULL } };
  luaL_setfuncs(L, fns, 0);
}
