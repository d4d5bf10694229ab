/* kiln_lua_convert.c — conversions between Lua values and IR types, attributes and
 * locations (kl_lua__totype, kl_lua__toattr, kl_lua__push_attr_value, kl_lua__toloc,
 * kl_lua__push_loc). */
#include "lua/kiln_lua.h"
#include "core/parse.h"
#include <stdlib.h>
#include <string.h>

const kl_type *kl_lua__totype(lua_State *L, int idx, kl_ctx *ctx) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) == LUA_TSTRING) {
    size_t n;
    const char *s = lua_tolstring(L, idx, &n);
    const kl_type *t = kl_parse_type(ctx, s, n, "<type>");
    if (!t) kl_lua__diag_error(L, ctx, "kiln", "invalid type");
    return t;
  }
  const kl_type *t = kl_lua__test(L, idx, KL_LH_TYPE);
  if (!t)
    kl_lua__rt_error(L, "kiln", "expected a type (a kiln.type or a string such as \"f32\"), got a %s",
                     kl_lua__type_name(L, idx));
  if (kl_lua__handle_ctx(L, idx) == ctx) return t;
  const kl_type *r = kl_parse_type(ctx, t->text, strlen(t->text), "<type>");
  if (!r) kl_lua__diag_error(L, ctx, "kiln", "cannot convert a type between contexts");
  return r;
}
static const kl_attr *toattr(lua_State *L, int idx, kl_ctx *ctx, int depth) {
  idx = lua_absindex(L, idx);
  if (depth > 64) kl_lua__rt_error(L, "kiln", "attribute value nested too deeply");
  luaL_checkstack(L, 6, "kiln: attribute value nested too deeply");
  switch (lua_type(L, idx)) {
    case LUA_TNONE:
    case LUA_TNIL: return NULL;
    case LUA_TBOOLEAN: return kl_attr_bool(ctx, lua_toboolean(L, idx));
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) return kl_attr_int(ctx, (int64_t)lua_tointeger(L, idx));
      return kl_attr_float(ctx, (double)lua_tonumber(L, idx));
    case LUA_TSTRING: {
      size_t n;
      const char *s = lua_tolstring(L, idx, &n);
      return kl_attr_strn(ctx, s, n);
    }
    case LUA_TUSERDATA: {
      const kl_attr *a = kl_lua__test(L, idx, KL_LH_ATTR);
      if (a) {
        if (kl_lua__handle_ctx(L, idx) == ctx) return a;
        if (a->kind == KL_AT_UNIT) return kl_attr_unit(ctx);
        const kl_attr *r = kl_parse_attr(ctx, a->text, strlen(a->text), "<attribute>");
        if (!r) kl_lua__diag_error(L, ctx, "kiln", "cannot convert an attribute between contexts");
        return r;
      }
      if (kl_lua__test(L, idx, KL_LH_TYPE)) return kl_attr_type(ctx, kl_lua__totype(L, idx, ctx));
      break;
    }
    case LUA_TTABLE: {
      lua_Integer n = luaL_len(L, idx);
      lua_Integer count = 0;
      bool all_str = true;
      for (lua_pushnil(L); lua_next(L, idx); lua_pop(L, 1)) {
        count++;
        if (lua_type(L, -2) != LUA_TSTRING) all_str = false;
      }
      if (count > (1 << 24)) kl_lua__rt_error(L, "kiln", "attribute table too large");
      if (count == n) { /* a sequence (or empty): array */
        const kl_attr **el = kl_lua__tmp(L, (size_t)n * sizeof *el);
        for (lua_Integer i = 1; i <= n; i++) {
          lua_geti(L, idx, i);
          el[i - 1] = toattr(L, -1, ctx, depth + 1);
          if (!el[i - 1]) kl_lua__rt_error(L, "kiln", "nil inside an attribute array");
          lua_pop(L, 1);
        }
        const kl_attr *r = kl_attr_array(ctx, (int)n, el);
        lua_pop(L, 1);
        return r;
      }
      if (!all_str)
        kl_lua__rt_error(L, "kiln", "a table attribute must be an array (keys 1..n) or a dictionary (string keys)");
      kl_named_attr *e = kl_lua__tmp(L, (size_t)count * sizeof *e);
      int k = 0;
      for (lua_pushnil(L); lua_next(L, idx); lua_pop(L, 1)) {
        e[k].name = kl_intern(ctx, lua_tostring(L, -2));
        e[k].value = toattr(L, -1, ctx, depth + 1);
        k++;
      }
      const kl_attr *r = kl_attr_dict(ctx, k, e);
      lua_pop(L, 1);
      return r;
    }
    default: break;
  }
  kl_lua__rt_error(L, "kiln", "cannot convert a %s to an attribute", luaL_typename(L, idx));
  return NULL;
}
const kl_attr *kl_lua__toattr(lua_State *L, int idx, kl_ctx *ctx) { return toattr(L, idx, ctx, 0); }
static void push_attr_value(lua_State *L, int ctxidx, const kl_attr *a, int depth) {
  luaL_checkstack(L, 4, "kiln: attribute nested too deeply");
  if (!a) {
    lua_pushnil(L);
    return;
  }
  switch (a->kind) {
    case KL_AT_INT: lua_pushinteger(L, (lua_Integer)a->i); return;
    case KL_AT_FLOAT: lua_pushnumber(L, (lua_Number)a->f); return;
    case KL_AT_STR: lua_pushlstring(L, a->s, a->len); return;
    case KL_AT_BOOL: lua_pushboolean(L, a->i != 0); return;
    case KL_AT_TYPE: kl_lua__push(L, ctxidx, KL_LH_TYPE, a->type); return;
    case KL_AT_ARRAY:
      lua_createtable(L, a->n, 0);
      for (int i = 0; i < a->n; i++) {
        push_attr_value(L, ctxidx, a->elems[i], depth + 1);
        lua_rawseti(L, -2, i + 1);
      }
      return;
    case KL_AT_DICT:
      lua_createtable(L, 0, a->n);
      for (int i = 0; i < a->n; i++) {
        push_attr_value(L, ctxidx, a->entries[i].value, depth + 1);
        lua_setfield(L, -2, a->entries[i].name);
      }
      return;
    default: /* unit, symbol refs, extension attributes: the handle itself */
      kl_lua__push(L, ctxidx, KL_LH_ATTR, a);
      return;
  }
}
void kl_lua__push_attr_value(lua_State *L, int ctxidx, const kl_attr *a) {
  push_attr_value(L, lua_absindex(L, ctxidx), a, 0);
}

static bool all_digits(const char *s, size_t n) {
  if (!n) return false;
  for (size_t i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}
kl_loc kl_lua__toloc(lua_State *L, int idx, kl_ctx *ctx) {
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
    case LUA_TNONE:
    case LUA_TNIL: return kl_lua__caller_loc(L, ctx);
    case LUA_TSTRING: {
      /* "file:line:col", "file:line" or "file" (split at the last all-digit fields). */
      size_t n;
      const char *s = lua_tolstring(L, idx, &n);
      long nums[2];
      int nn = 0;
      size_t end = n;
      while (nn < 2) {
        const char *c = NULL;
        for (size_t i = end; i > 0; i--)
          if (s[i - 1] == ':') {
            c = s + i - 1;
            break;
          }
        if (!c || !all_digits(c + 1, (size_t)(s + end - c - 1)) || (size_t)(s + end - c - 1) > 9) break;
        nums[nn++] = strtol(c + 1, NULL, 10);
        end = (size_t)(c - s);
      }
      if (!strcmp(s, "<unknown>") || end == 0) return KL_LOC_UNKNOWN;
      char *file = kl_arena_strndup(kl_ctx_arena(ctx), s, end);
      int line = nn == 2 ? (int)nums[1] : nn == 1 ? (int)nums[0] : 0;
      int col = nn == 2 ? (int)nums[0] : 0;
      return kl_loc_make(ctx, file, line, col);
    }
    case LUA_TTABLE: {
      lua_getfield(L, idx, "file");
      lua_getfield(L, idx, "line");
      lua_getfield(L, idx, "col");
      const char *f = luaL_optstring(L, -3, NULL);
      kl_loc loc = f ? kl_loc_make(ctx, f, (int)luaL_optinteger(L, -2, 0), (int)luaL_optinteger(L, -1, 0))
                     : KL_LOC_UNKNOWN;
      lua_pop(L, 3);
      return loc;
    }
    default: {
      kl_op *op = kl_lua__test(L, idx, KL_LH_OP);
      if (op) {
        kl_lua__check(L, idx, KL_LH_OP);
        return op->ctx == ctx ? op->loc : kl_loc_make(ctx, op->loc.file, op->loc.line, op->loc.col);
      }
    }
  }
  kl_lua__rt_error(L, "kiln", "a location is a string \"file:line:col\", a table {file=, line=, col=} or an op");
  return KL_LOC_UNKNOWN;
}
void kl_lua__push_loc(lua_State *L, kl_loc loc) {
  if (!loc.file) {
    lua_pushnil(L);
    return;
  }
  char buf[1024];
  kl_loc_format(loc, buf, sizeof buf);
  lua_pushstring(L, buf);
}
