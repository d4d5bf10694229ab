/* kiln_lua_pattern.c — "kiln.pattern" userdata (Lua patterns, kiln.pattern{...}),
 * kiln.patterns() and kiln.apply_patterns, which runs Lua patterns and registered C
 * patterns on the same C driver, handing each Lua rewrite function the rewriter object
 * (kiln_lua_rewriter.c). A Lua rewrite function runs under lua_pcall with a traceback
 * handler inside the kl_pattern callback; an error becomes kl_rewriter_fail (the driver
 * stops with the IR valid) and then a Lua error carrying the diagnostic and the
 * traceback. */
#include "lua/kiln_lua.h"
#include <string.h>

#define MT_PATTERN "kiln.pattern"

/* ------------------------------------------------------------- patterns ---- */
/* A pattern object is an empty userdata whose user value is the normalized spec
 * table {root=, benefit=, name=, rewrite=}. */
static int l_pattern(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  static const char *const PATTERN_FIELDS[] = { "root", "benefit", "name", "rewrite", NULL };
  kl_lua__check_opts(L, 1, "kiln.pattern", PATTERN_FIELDS);
  lua_newuserdatauv(L, 1, 1);
  luaL_setmetatable(L, MT_PATTERN);
  lua_createtable(L, 0, 4);
  if (lua_getfield(L, 1, "rewrite") != LUA_TFUNCTION)
    return kl_lua__rt_error(L, "kiln.pattern", "'rewrite' must be a function(op, rw)");
  lua_setfield(L, -2, "rewrite");
  int t = lua_getfield(L, 1, "root");
  if (t != LUA_TNIL && t != LUA_TSTRING)
    return kl_lua__rt_error(L, "kiln.pattern", "'root' must be an op name (or nil for any op)");
  lua_setfield(L, -2, "root");
  lua_getfield(L, 1, "benefit");
  lua_Integer benefit = luaL_optinteger(L, -1, 1);
  lua_pop(L, 1);
  kl_lua__set_int(L, "benefit", benefit);
  if (lua_getfield(L, 1, "name") != LUA_TSTRING) {
    lua_pop(L, 1);
    lua_Debug ar;
    lua_getfield(L, 1, "rewrite");
    lua_getinfo(L, ">S", &ar);
    lua_pushfstring(L, "lua@%s:%d", ar.short_src, ar.linedefined);
  }
  lua_setfield(L, -2, "name");
  lua_setiuservalue(L, -2, 1);
  return 1;
}
static int pattern_field(lua_State *L, const char *k) {
  luaL_checkudata(L, 1, MT_PATTERN);
  lua_getiuservalue(L, 1, 1);
  lua_getfield(L, -1, k);
  return 1;
}
static int pattern_p_name(lua_State *L) { return pattern_field(L, "name"); }
static int pattern_p_root(lua_State *L) { return pattern_field(L, "root"); }
static int pattern_p_benefit(lua_State *L) { return pattern_field(L, "benefit"); }
static int pattern_p_rewrite(lua_State *L) { return pattern_field(L, "rewrite"); }
static int pattern_tostring(lua_State *L) {
  pattern_field(L, "name");
  lua_getfield(L, -2, "root");
  lua_getfield(L, -3, "benefit");
  lua_pushfstring(L, "kiln.pattern(%s, root=%s, benefit=%d)", lua_tostring(L, -3),
                  lua_isnil(L, -2) ? "*" : lua_tostring(L, -2), (int)lua_tointeger(L, -1));
  return 1;
}

/* ------------------------------------------------------- apply_patterns ---- */
typedef struct apply_st {
  lua_State *L;
  int fns, ctxud, tb, rwud; /* stack slots of the apply call */
  kl_lua_ctxstate *cst;
  bool failed; /* a Lua rewrite function raised an error */
} apply_st;
typedef struct lua_pat {
  kl_pattern pat;
  apply_st *st;
  int fn;
} lua_pat;
typedef struct pat_call {
  lua_pat *lp;
  kl_op *op;
  bool changed;
} pat_call;

/* Runs in its own frame: args (call, rewrite fn, context ud, rewriter ud). */
static int pattern_tramp(lua_State *L) {
  pat_call *c = lua_touserdata(L, 1);
  lua_pushvalue(L, 2);
  kl_lua__push(L, 3, KL_LH_OP, c->op);
  lua_pushvalue(L, 4);
  lua_call(L, 2, 1);
  c->changed = lua_toboolean(L, -1);
  return 0;
}

static bool lua_pattern_fn(const kl_pattern *pat, kl_op *op, kl_rewriter *rw) {
  lua_pat *lp = pat->user;
  apply_st *st = lp->st;
  lua_State *L = st->L; /* runs in the frame of l_apply_patterns: its slots are valid */
  if (st->failed) return false;
  if (!lua_checkstack(L, 16)) {
    st->failed = true;
    kl_rewriter_fail(rw, op->loc, "Lua pattern '%s': Lua stack overflow", pat->name);
    return false;
  }
  kl_lua_rwud *r = lua_touserdata(L, st->rwud);
  r->rw = rw;
  r->root = op;
  st->cst->rw = rw;
  kl_rewriter_set_insertion_before(rw, op); /* the drivers already did; explicit for the pattern */
  pat_call c = { lp, op, false };
  int top = lua_gettop(L);
  /* none of these pushes allocates, so nothing can raise outside the pcall */
  lua_pushcfunction(L, pattern_tramp);
  lua_pushlightuserdata(L, &c);
  lua_rawgeti(L, st->fns, lp->fn);
  lua_pushvalue(L, st->ctxud);
  lua_pushvalue(L, st->rwud);
  kl_lua_busy prev = kl_lua__busy_enter(op->ctx, "Lua pattern", pat->name);
  int rc = lua_pcall(L, 4, 0, st->tb);
  kl_lua__busy_leave(op->ctx, prev);
  r->rw = NULL;
  r->root = NULL;
  st->cst->rw = NULL;
  if (rc != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    st->failed = true;
    kl_rewriter_fail(rw, op->loc, "Lua pattern '%s' raised an error: %s", pat->name,
                     msg ? msg : "(error object is not a string)");
  }
  lua_settop(L, top);
  return rc == LUA_OK && c.changed;
}

/* Adds a registered C pattern unless already present. */
static void add_c_pattern(const kl_pattern **arr, int *np, const kl_pattern *p) {
  for (int i = 0; i < *np; i++)
    if (arr[i] == p) return;
  arr[(*np)++] = p;
}

/* apply_patterns(root, {patterns...} [, {walk=, max_iterations=, max_rewrites=, fold=,
 * remove_dead=}]): entries are kiln.pattern objects, functions (patterns for any op)
 * or names of registered C patterns ("name", or "prefix*" for all that match). */
static int l_apply_patterns(lua_State *L) {
  kl_op *root = kl_lua__check(L, 1, KL_LH_OP);
  kl_ctx *ctx = root->ctx;
  kl_lua_ctxstate *cst = kl_lua__check_not_rewriting(L, ctx, "apply_patterns");
  lua_settop(L, 3);
  if (!lua_istable(L, 2) || luaL_testudata(L, 2, MT_PATTERN)) { /* a single pattern */
    lua_createtable(L, 1, 0);
    lua_pushvalue(L, 2);
    lua_rawseti(L, -2, 1);
    lua_replace(L, 2);
  }
  if (!lua_isnoneornil(L, 3)) luaL_checktype(L, 3, LUA_TTABLE);
  int ctxud = kl_lua__push_handle_ctxud(L, 1);    /* 4 */
  kl_lua__busy_guard(L, ctxud, "apply_patterns"); /* 5: metamethods, patterns */
  lua_pushcfunction(L, kl_lua_traceback);
  int tb = lua_gettop(L); /* 6 */
  lua_newtable(L);
  int fns = lua_gettop(L);         /* 7 */
  kl_lua__push_rewriter(L, ctxud); /* 8 */
  int rwud = lua_gettop(L);

  lua_Integer n = luaL_len(L, 2);
  if (n < 0 || n > 100000) return kl_lua__rt_error(L, "kiln", "too many patterns");
  int ncp = kl_pattern_count(ctx);
  const kl_pattern **arr = kl_lua__tmp(L, (size_t)(n + ncp) * sizeof *arr);
  lua_pat *lps = kl_lua__tmp(L, (size_t)n * sizeof *lps);
  apply_st st = { L, fns, ctxud, tb, rwud, cst, false };
  int np = 0, nl = 0;
  for (lua_Integer i = 1; i <= n; i++) {
    int t = lua_geti(L, 2, i);
    if (t == LUA_TSTRING) {
      size_t len;
      const char *name = lua_tolstring(L, -1, &len);
      if (len && name[len - 1] == '*') {
        for (int k = 0; k < ncp; k++) {
          const kl_pattern *p = kl_pattern_at(ctx, k);
          if (p->name && !strncmp(p->name, name, len - 1)) add_c_pattern(arr, &np, p);
        }
      } else {
        const kl_pattern *p = kl_lookup_pattern(ctx, name);
        if (!p)
          return kl_lua__rt_error(L, "kiln", "unknown pattern '%s' (kiln.patterns() lists the registered ones)", name);
        add_c_pattern(arr, &np, p);
      }
    } else {
      lua_pat *lp = &lps[nl];
      memset(lp, 0, sizeof *lp);
      if (t == LUA_TFUNCTION) {
        lua_Debug ar;
        lua_pushvalue(L, -1);
        lua_getinfo(L, ">S", &ar);
        char buf[256];
        snprintf(buf, sizeof buf, "lua@%s:%d", ar.short_src, ar.linedefined);
        lp->pat.name = kl_intern(ctx, buf);
        lp->pat.benefit = 1;
        lua_pushvalue(L, -1);
      } else if (luaL_testudata(L, -1, MT_PATTERN)) {
        lua_getiuservalue(L, -1, 1);
        lua_getfield(L, -1, "root");
        lp->pat.root = lua_isnil(L, -1) ? NULL : kl_intern(ctx, lua_tostring(L, -1));
        lua_getfield(L, -2, "name");
        lp->pat.name = kl_intern(ctx, lua_tostring(L, -1));
        lua_getfield(L, -3, "benefit");
        lp->pat.benefit = (int)lua_tointeger(L, -1);
        lua_getfield(L, -4, "rewrite");
        lua_replace(L, -5);
        lua_pop(L, 3);
      } else {
        return kl_lua__rt_error(L, "kiln",
                                "patterns[%d] is a %s; expected a kiln.pattern, a function or a pattern name", (int)i,
                                luaL_typename(L, -1));
      }
      lp->pat.fn = lua_pattern_fn;
      lp->pat.user = lp;
      lp->st = &st;
      lp->fn = ++nl;
      lua_rawseti(L, fns, nl); /* the rewrite function */
      arr[np++] = &lp->pat;
    }
    lua_pop(L, 1);
  }

  kl_greedy_config cfg = kl_greedy_default();
  bool walk = false;
  if (lua_istable(L, 3)) {
    static const char *const APPLY_OPTS[] = { "walk", "max_iterations", "max_rewrites", "fold", "remove_dead", NULL };
    kl_lua__check_opts(L, 3, "apply_patterns", APPLY_OPTS);
    lua_getfield(L, 3, "walk");
    walk = lua_toboolean(L, -1);
    lua_getfield(L, 3, "max_iterations");
    if (!lua_isnil(L, -1)) cfg.max_iterations = (int)luaL_checkinteger(L, -1);
    lua_getfield(L, 3, "max_rewrites");
    if (!lua_isnil(L, -1)) cfg.max_rewrites = (int)luaL_checkinteger(L, -1);
    lua_getfield(L, 3, "fold");
    if (!lua_isnil(L, -1)) cfg.fold = lua_toboolean(L, -1);
    lua_getfield(L, 3, "remove_dead");
    if (!lua_isnil(L, -1)) cfg.remove_dead = lua_toboolean(L, -1);
    lua_pop(L, 5);
  }
  kl_lua__flush_diags(ctx);
  kl_status s = walk ? kl_apply_patterns_walk(root, arr, np) : kl_apply_patterns_greedy(root, arr, np, &cfg);
  if (s != KL_OK || st.failed) return kl_lua__diag_error(L, ctx, "apply_patterns", "pattern application failed");
  kl_lua__flush_diags(ctx);
  lua_pushboolean(L, 1);
  return 1;
}

static int l_patterns(lua_State *L) { /* registered C patterns: {name=, root=, benefit=} */
  int first;
  int c = kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, c);
  int n = kl_pattern_count(ctx);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    const kl_pattern *p = kl_pattern_at(ctx, i);
    lua_createtable(L, 0, 3);
    kl_lua__set_str(L, "name", p->name);
    kl_lua__set_str(L, "root", p->root);
    kl_lua__set_int(L, "benefit", p->benefit);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

void kl_lua__open_pattern(lua_State *L) {
  int mod = lua_gettop(L);
  static const luaL_Reg pat_meta[] = { { "__tostring", pattern_tostring }, { NULL, NULL } };
  static const luaL_Reg pat_props[] = { { "name", pattern_p_name },
                                        { "root", pattern_p_root },
                                        { "benefit", pattern_p_benefit },
                                        { "rewrite", pattern_p_rewrite },
                                        { NULL, NULL } };
  kl_lua__class(L, mod, MT_PATTERN, "pattern", NULL, pat_props, pat_meta);
  static const luaL_Reg fns[] = {
    { "pattern", l_pattern }, { "apply_patterns", l_apply_patterns }, { "patterns", l_patterns }, { NULL, NULL }
  };
  luaL_setfuncs(L, fns, 0);
}
