/* kiln_lua_handle.c — what every IR handle userdata shares ("kiln.op", "kiln.value",
 * "kiln.block", "kiln.region", "kiln.type", "kiln.attr": a full userdata holding the
 * pointer, its context userdata as user value 1, one per object and context in the
 * context's weak caches): checking, pushing, context membership, __eq, and the small
 * helpers of the handle files (kl_lua__push_like, kl_lua__opt_index,
 * kl_lua__push_values, kl_lua__text_eq). */
#include "lua/kiln_lua.h"
#include <string.h>

const char *const kl_lua__mt_names[KL_LH_NKINDS] = { "kiln.op",     "kiln.value", "kiln.block",
                                                     "kiln.region", "kiln.type",  "kiln.attr" };

typedef struct lh {
  const void *p;
} lh;

const char *kl_lua__type_name(lua_State *L, int idx) {
  if (luaL_getmetafield(L, idx, "__name") == LUA_TSTRING) {
    const char *n = lua_tostring(L, -1);
    lua_pop(L, 1); /* the name stays alive in the metatable */
    return n;
  }
  return luaL_typename(L, idx);
}

void *kl_lua__test(lua_State *L, int idx, int kind) {
  lh *h = luaL_testudata(L, idx, kl_lua__mt_names[kind]);
  return h ? (void *)h->p : NULL;
}
static kl_lua_ctxud *handle_ctxud(lua_State *L, int idx) {
  lua_getiuservalue(L, idx, 1);
  kl_lua_ctxud *c = luaL_testudata(L, -1, KL_MT_CONTEXT);
  lua_pop(L, 1); /* still referenced by the handle */
  if (!c) kl_lua__rt_error(L, "kiln", "not a kiln handle");
  if (!c->ctx) kl_lua__rt_error(L, "kiln", "the context of this handle has been destroyed");
  return c;
}
void *kl_lua__check(lua_State *L, int idx, int kind) {
  lh *h = luaL_testudata(L, idx, kl_lua__mt_names[kind]);
  if (!h) kl_lua__rt_error(L, "kiln", "expected a %s, got a %s", kl_lua__mt_names[kind], kl_lua__type_name(L, idx));
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
  if (!p) {
    lua_pushnil(L);
    return;
  }
  ctxidx = lua_absindex(L, ctxidx);
  luaL_checkstack(L, 4, "kiln");
  lua_getiuservalue(L, ctxidx, kind + 1);
  if (lua_rawgetp(L, -1, p) != LUA_TNIL) {
    lua_remove(L, -2);
    return;
  }
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
  if (lua_type(L, 1) == LUA_TUSERDATA && lua_type(L, 2) == LUA_TUSERDATA && lua_getmetatable(L, 1) &&
      lua_getmetatable(L, 2)) {
    eq = lua_rawequal(L, -1, -2) && ((lh *)lua_touserdata(L, 1))->p == ((lh *)lua_touserdata(L, 2))->p;
  }
  lua_pushboolean(L, eq);
  return 1;
}

/* Pushes handle `p` of `kind` in the context of the handle at `from`. */
void kl_lua__push_like(lua_State *L, int from, int kind, const void *p) {
  int c = kl_lua__push_handle_ctxud(L, from);
  kl_lua__push(L, c, kind, p);
  lua_remove(L, c);
}
int kl_lua__opt_index(lua_State *L, int idx, int n) { /* 1-based Lua index -> 0-based, -1 if out of range */
  lua_Integer i = luaL_checkinteger(L, idx);
  return (i >= 1 && i <= n) ? (int)(i - 1) : -1;
}
int kl_lua__push_values(lua_State *L, int from, int n, kl_value *(*get)(void *, int), void *obj) {
  int c = kl_lua__push_handle_ctxud(L, from);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    kl_lua__push(L, c, KL_LH_VALUE, get(obj, i));
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}
/* Types and attributes are interned per context: equal text means equal value, also
 * across contexts. */
static const char *handle_text(lua_State *L, int idx, int kind) {
  void *p = kl_lua__test(L, idx, kind);
  if (!p) return NULL;
  return kind == KL_LH_TYPE ? ((const kl_type *)p)->text : ((const kl_attr *)p)->text;
}
int kl_lua__text_eq(lua_State *L, int kind) {
  const char *a = handle_text(L, 1, kind), *b = handle_text(L, 2, kind);
  lua_pushboolean(L, a && b && !strcmp(a, b));
  return 1;
}
