/* kiln_lua.c — the kiln Lua module: opening, contexts, handle plumbing, conversions
 * between Lua values and types/attributes/locations (errors: kiln_lua_error.c).
 * The IR handle methods live in kiln_lua_ir.c, patterns in kiln_lua_rewrite.c,
 * pipelines and Lua passes in kiln_lua_pass.c. */
#include "lua/kiln_lua.h"
#include "core/parse.h"
#include "core/pass.h"
#include "passes/passes.h"
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>

const char *const kl_lua__mt_names[KL_LH_NKINDS] = {
  "kiln.op", "kiln.value", "kiln.block", "kiln.region", "kiln.type", "kiln.attr"
};

#define REG_CTXMAP   "kiln.ctxmap"      /* lightuserdata(kl_ctx) -> context userdata (weak) */
#define REG_WEAKV    "kiln.weakv"       /* {__mode = "v"} */
#define REG_DEFAULT  "kiln.default_ctx"

typedef struct lh { const void *p; } lh;

static const char *type_name(lua_State *L, int idx) {
  if (luaL_getmetafield(L, idx, "__name") == LUA_TSTRING) {
    const char *n = lua_tostring(L, -1);
    lua_pop(L, 1);   /* the name stays alive in the metatable */
    return n;
  }
  return luaL_typename(L, idx);
}

void *kl_lua__tmp(lua_State *L, size_t n) { return lua_newuserdatauv(L, n ? n : 1, 0); }

/* -------------------------------------------------------------- contexts ---- */
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

/* ---------------------------------------------------------- busy contexts ---- */
#define MT_BUSYGUARD "kiln.busyguard"

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

typedef struct busy_guard { kl_ctx *ctx; kl_lua_busy prev; bool active; } busy_guard;
static int busy_guard_close(lua_State *L) {
  busy_guard *g = luaL_checkudata(L, 1, MT_BUSYGUARD);
  if (g->active) { g->active = false; kl_lua__busy_leave(g->ctx, g->prev); }
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
  busy_guard *g = push_guard(L, sizeof *g, MT_BUSYGUARD, busy_guard_close, ctxidx);   /* anchors the context userdata */
  /* checked after the allocations above: a finalizer they ran may have destroyed it */
  kl_ctx *ctx = g->ctx = kl_lua__check_ctx(L, ctxidx);
  g->prev = kl_lua__busy_enter(ctx, what, NULL);
  g->active = true;
}

/* A pin guard: like the busy guard, for one object (its userdata at idx holds *pin). */
#define MT_PINGUARD "kiln.pinguard"
typedef struct pin_guard { kl_lua_pin *pin; const char *prev; bool active; } pin_guard;
static int pin_guard_close(lua_State *L) {
  pin_guard *g = luaL_checkudata(L, 1, MT_PINGUARD);
  if (g->active) { g->active = false; g->pin->n--; g->pin->what = g->prev; }
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

int kl_lua__ctx_destroy(lua_State *L, int idx) {
  kl_lua_ctxud *u = luaL_checkudata(L, idx, KL_MT_CONTEXT);
  if (!u->ctx) return 0;
  kl_lua_ctxstate *st = kl_lua__state(u->ctx);
  if (st && st->busy > 0)
    return kl_lua__rt_error(L, "kiln", "ctx:destroy() inside a callback that runs on this context (%s%s%s%s); "
                         "destroy it after that call returns", st->why.what ? st->why.what : "a kiln call",
                         st->why.name ? " '" : "", st->why.name ? st->why.name : "", st->why.name ? "'" : "");
  kl_ctx *c = u->ctx;
  u->ctx = NULL;
  kl_ctx_destroy(c);
  return 0;
}

static int ctx_gc(lua_State *L) { return kl_lua__ctx_destroy(L, 1); }
static int ctx_tostring(lua_State *L) {
  kl_lua_ctxud *u = luaL_checkudata(L, 1, KL_MT_CONTEXT);
  if (u->ctx) lua_pushfstring(L, "kiln.context: %p", (void *)u->ctx);
  else lua_pushstring(L, "kiln.context (destroyed)");
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
  kl_register_builtin_passes(u->ctx);   /* kl_ctx_create registers the dialects only */
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
static int l_default_context(lua_State *L) { kl_lua__default_ctxud(L); return 1; }

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
  if (luaL_testudata(L, 1, KL_MT_CONTEXT)) { kl_lua__check_ctx(L, 1); return 1; }
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

/* --------------------------------------------------------------- handles ---- */
void *kl_lua__test(lua_State *L, int idx, int kind) {
  lh *h = luaL_testudata(L, idx, kl_lua__mt_names[kind]);
  return h ? (void *)h->p : NULL;
}

static kl_lua_ctxud *handle_ctxud(lua_State *L, int idx) {
  lua_getiuservalue(L, idx, 1);
  kl_lua_ctxud *c = luaL_testudata(L, -1, KL_MT_CONTEXT);
  lua_pop(L, 1);   /* still referenced by the handle */
  if (!c) kl_lua__rt_error(L, "kiln", "not a kiln handle");
  if (!c->ctx) kl_lua__rt_error(L, "kiln", "the context of this handle has been destroyed");
  return c;
}

void *kl_lua__check(lua_State *L, int idx, int kind) {
  lh *h = luaL_testudata(L, idx, kl_lua__mt_names[kind]);
  if (!h) kl_lua__rt_error(L, "kiln", "expected a %s, got a %s", kl_lua__mt_names[kind], type_name(L, idx));
  handle_ctxud(L, idx);
  return (void *)h->p;
}

kl_ctx *kl_lua__handle_ctx(lua_State *L, int idx) { return handle_ctxud(L, idx)->ctx; }

int kl_lua__push_handle_ctxud(lua_State *L, int idx) {
  handle_ctxud(L, idx);
  lua_getiuservalue(L, idx, 1);
  return lua_gettop(L);
}

void kl_lua__push(lua_State *L, int ctxidx, int kind, const void *p) {
  if (!p) { lua_pushnil(L); return; }
  ctxidx = lua_absindex(L, ctxidx);
  luaL_checkstack(L, 4, "kiln");
  lua_getiuservalue(L, ctxidx, kind + 1);
  if (lua_rawgetp(L, -1, p) != LUA_TNIL) { lua_remove(L, -2); return; }
  lua_pop(L, 1);
  lh *h = lua_newuserdatauv(L, sizeof *h, 1);
  h->p = p;
  luaL_setmetatable(L, kl_lua__mt_names[kind]);
  lua_pushvalue(L, ctxidx);
  lua_setiuservalue(L, -2, 1);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, -3, p);
  lua_remove(L, -2);
}

void kl_lua_push_op(lua_State *L, kl_op *op) {
  int c = kl_lua__push_ctxud_of(L, op->ctx);
  kl_lua__push(L, c, KL_LH_OP, op);
  lua_remove(L, c);
}

kl_op *kl_lua__check_op_in(lua_State *L, int idx, kl_ctx *ctx) {
  kl_op *op = kl_lua__check(L, idx, KL_LH_OP);
  if (op->ctx != ctx) kl_lua__rt_error(L, "kiln", "op '%s' belongs to another kiln context", op->name);
  return op;
}
kl_value *kl_lua__check_value_in(lua_State *L, int idx, kl_ctx *ctx) {
  kl_value *v = kl_lua__check(L, idx, KL_LH_VALUE);
  if (kl_lua__handle_ctx(L, idx) != ctx) kl_lua__rt_error(L, "kiln", "value belongs to another kiln context");
  return v;
}

int kl_lua__handle_eq(lua_State *L) {
  bool eq = false;
  if (lua_type(L, 1) == LUA_TUSERDATA && lua_type(L, 2) == LUA_TUSERDATA &&
      lua_getmetatable(L, 1) && lua_getmetatable(L, 2)) {
    eq = lua_rawequal(L, -1, -2) &&
         ((lh *)lua_touserdata(L, 1))->p == ((lh *)lua_touserdata(L, 2))->p;
  }
  lua_pushboolean(L, eq);
  return 1;
}

static int class_index(lua_State *L) {
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(2)) == LUA_TNIL) return 1;
  lua_pushvalue(L, 1);
  lua_call(L, 1, 1);
  return 1;
}

void kl_lua__class(lua_State *L, int modidx, const char *name, const char *short_name,
                   const luaL_Reg *methods, const luaL_Reg *props, const luaL_Reg *meta) {
  modidx = lua_absindex(L, modidx);
  luaL_newmetatable(L, name);
  if (meta) luaL_setfuncs(L, meta, 0);
  lua_newtable(L);
  if (methods) luaL_setfuncs(L, methods, 0);
  lua_newtable(L);
  if (props) luaL_setfuncs(L, props, 0);
  /* kiln.methods[short] = methods; kiln.props[short] = props */
  lua_getfield(L, modidx, "methods");
  lua_pushvalue(L, -3);
  lua_setfield(L, -2, short_name);
  lua_pop(L, 1);
  lua_getfield(L, modidx, "props");
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, short_name);
  lua_pop(L, 1);
  lua_pushcclosure(L, class_index, 2);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}

/* ----------------------------------------------------------- conversions ---- */
const kl_type *kl_lua__totype(lua_State *L, int idx, kl_ctx *ctx) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) == LUA_TSTRING) {
    size_t n; const char *s = lua_tolstring(L, idx, &n);
    const kl_type *t = kl_parse_type(ctx, s, n, "<type>");
    if (!t) kl_lua__diag_error(L, ctx, "kiln", "invalid type");
    return t;
  }
  const kl_type *t = kl_lua__test(L, idx, KL_LH_TYPE);
  if (!t) kl_lua__rt_error(L, "kiln", "expected a type (a kiln.type or a string such as \"f32\"), got a %s", type_name(L, idx));
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
  case LUA_TNONE: case LUA_TNIL: return NULL;
  case LUA_TBOOLEAN: return kl_attr_bool(ctx, lua_toboolean(L, idx));
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) return kl_attr_int(ctx, (int64_t)lua_tointeger(L, idx));
    return kl_attr_float(ctx, (double)lua_tonumber(L, idx));
  case LUA_TSTRING: { size_t n; const char *s = lua_tolstring(L, idx, &n); return kl_attr_strn(ctx, s, n); }
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
    if (count == n) {   /* a sequence (or empty): array */
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
    if (!all_str) kl_lua__rt_error(L, "kiln", "a table attribute must be an array (keys 1..n) or a dictionary (string keys)");
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
  if (!a) { lua_pushnil(L); return; }
  switch (a->kind) {
  case KL_AT_INT: lua_pushinteger(L, (lua_Integer)a->i); return;
  case KL_AT_FLOAT: lua_pushnumber(L, (lua_Number)a->f); return;
  case KL_AT_STR: lua_pushlstring(L, a->s, a->len); return;
  case KL_AT_BOOL: lua_pushboolean(L, a->i != 0); return;
  case KL_AT_TYPE: kl_lua__push(L, ctxidx, KL_LH_TYPE, a->type); return;
  case KL_AT_ARRAY:
    lua_createtable(L, a->n, 0);
    for (int i = 0; i < a->n; i++) { push_attr_value(L, ctxidx, a->elems[i], depth + 1); lua_rawseti(L, -2, i + 1); }
    return;
  case KL_AT_DICT:
    lua_createtable(L, 0, a->n);
    for (int i = 0; i < a->n; i++) { push_attr_value(L, ctxidx, a->entries[i].value, depth + 1); lua_setfield(L, -2, a->entries[i].name); }
    return;
  default:  /* unit, symbol refs, extension attributes: the handle itself */
    kl_lua__push(L, ctxidx, KL_LH_ATTR, a);
    return;
  }
}
void kl_lua__push_attr_value(lua_State *L, int ctxidx, const kl_attr *a) {
  push_attr_value(L, lua_absindex(L, ctxidx), a, 0);
}

/* ------------------------------------------------------------- locations ---- */

static bool all_digits(const char *s, size_t n) {
  if (!n) return false;
  for (size_t i = 0; i < n; i++) if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

kl_loc kl_lua__toloc(lua_State *L, int idx, kl_ctx *ctx) {
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
  case LUA_TNONE: case LUA_TNIL: return kl_lua__caller_loc(L, ctx);
  case LUA_TSTRING: {
    /* "file:line:col", "file:line" or "file" (split at the last all-digit fields). */
    size_t n; const char *s = lua_tolstring(L, idx, &n);
    long nums[2]; int nn = 0; size_t end = n;
    while (nn < 2) {
      const char *c = NULL;
      for (size_t i = end; i > 0; i--) if (s[i - 1] == ':') { c = s + i - 1; break; }
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
    lua_getfield(L, idx, "file"); lua_getfield(L, idx, "line"); lua_getfield(L, idx, "col");
    const char *f = luaL_optstring(L, -3, NULL);
    kl_loc loc = f ? kl_loc_make(ctx, f, (int)luaL_optinteger(L, -2, 0), (int)luaL_optinteger(L, -1, 0)) : KL_LOC_UNKNOWN;
    lua_pop(L, 3);
    return loc;
  }
  default: {
    kl_op *op = kl_lua__test(L, idx, KL_LH_OP);
    if (op) { kl_lua__check(L, idx, KL_LH_OP); return op->ctx == ctx ? op->loc : kl_loc_make(ctx, op->loc.file, op->loc.line, op->loc.col); }
  }
  }
  kl_lua__rt_error(L, "kiln", "a location is a string \"file:line:col\", a table {file=, line=, col=} or an op");
  return KL_LOC_UNKNOWN;
}

void kl_lua__push_loc(lua_State *L, kl_loc loc) {
  if (!loc.file) { lua_pushnil(L); return; }
  char buf[1024];
  kl_loc_format(loc, buf, sizeof buf);
  lua_pushstring(L, buf);
}

/* ------------------------------------------------------------------ open ---- */
static int l_set_libprefix(lua_State *L) {
  /* Called by lua/kiln/lib.lua with its own chunk name ("@.../kiln/lib.lua"):
   * ops built from code in that directory get the location of their caller. */
  size_t n; const char *s = luaL_checklstring(L, 1, &n);
  while (n && s[n - 1] != '/' && s[n - 1] != '\\') n--;
  lua_pushlstring(L, s, n);
  lua_setfield(L, LUA_REGISTRYINDEX, KL_LUA_REG_LIBPREFIX);
  return 0;
}

static int l_caller_loc(lua_State *L) {
  int first; int c = kl_lua__ctx_arg(L, &first);
  kl_lua__push_loc(L, kl_lua__caller_loc(L, kl_lua__check_ctx(L, c)));
  return 1;
}

int kl_lua_open(lua_State *L) {
  luaL_checkversion(L);
  /* registry tables (idempotent if kiln is opened twice in one state) */
  if (luaL_newmetatable(L, REG_WEAKV)) { lua_pushstring(L, "v"); lua_setfield(L, -2, "__mode"); }
  lua_pop(L, 1);
  if (lua_getfield(L, LUA_REGISTRYINDEX, REG_CTXMAP) == LUA_TNIL) {
    lua_newtable(L);
    luaL_getmetatable(L, REG_WEAKV);
    lua_setmetatable(L, -2);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_CTXMAP);
  }
  lua_pop(L, 1);

  lua_newtable(L);
  int mod = lua_gettop(L);
  lua_newtable(L); lua_setfield(L, mod, "methods");
  lua_newtable(L); lua_setfield(L, mod, "props");
  lua_pushstring(L, "0.1.0"); lua_setfield(L, mod, "version");

  static const luaL_Reg fns[] = {
    { "context", l_context }, { "default_context", l_default_context },
    { "_set_libprefix", l_set_libprefix }, { "caller_loc", l_caller_loc },
    { "traceback", kl_lua_traceback }, { NULL, NULL }
  };
  luaL_setfuncs(L, fns, 0);
  static const luaL_Reg ctx_meta[] = { { "__gc", ctx_gc }, { "__close", ctx_gc }, { "__tostring", ctx_tostring }, { NULL, NULL } };
  kl_lua__class(L, mod, KL_MT_CONTEXT, "context", NULL, NULL, ctx_meta);

  kl_lua__open_ir(L);
  kl_lua__open_rewrite(L);
  kl_lua__open_pass(L);
  kl_lua__open_util(L);
  kl_lua__open_tensor(L);
  kl_lua__open_graph(L);
  kl_lua__open_view(L);
  kl_lua__open_program(L);
  kl_lua__open_bundle(L);

  /* The Lua part of the library: require("kiln.lib") returns function(kiln). While it
   * loads, package.loaded.kiln is the module table, so Lua files of the library may
   * `require "kiln"`; on failure it is cleared again. */
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  int loaded = lua_gettop(L);
  lua_pushvalue(L, mod);
  lua_setfield(L, loaded, "kiln");
  lua_getglobal(L, "require");
  if (lua_isnil(L, -1)) return kl_lua__rt_error(L, "kiln", "the package library is not open (require is missing)");
  lua_pushstring(L, "kiln.lib");
  int st = lua_pcall(L, 1, 1, 0);
  if (st == LUA_OK && !lua_isfunction(L, -1)) {
    lua_pushstring(L, "module 'kiln.lib' must return a function");
    st = LUA_ERRRUN;
  } else if (st == LUA_OK) {
    lua_pushvalue(L, mod);
    st = lua_pcall(L, 1, 0, 0);
  }
  if (st != LUA_OK) {
    lua_pushnil(L);
    lua_setfield(L, loaded, "kiln");
    return kl_lua__rt_error(L, "kiln", "cannot load the Lua part of kiln (module 'kiln.lib'; package.path must "
                         "include <kiln>/lua/?.lua):\n%s", lua_tostring(L, -1));
  }
  lua_settop(L, mod);
  return 1;
}
