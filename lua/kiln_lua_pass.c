/* kiln_lua_pass.c — kiln.run_pipeline (named C/Lua passes and Lua functions on one
 * pass manager, IR snapshots through on_ir, timing report), kiln.register_pass (Lua
 * passes usable by name in pipeline strings) and kiln.passes(). Every Lua function the
 * pass manager calls runs under lua_pcall with a traceback handler; failures become
 * diagnostics and KL_ERR, never a longjmp through the pass manager. */
#include "lua/kiln_lua.h"
#include "core/pass.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MT_PM         "kiln.passmanager"
#define REG_LUAPASSES "kiln.luapasses" /* name -> {fn=, summary=, options={...}} */

/* ------------------------------------------------------------ Lua passes ---- */
typedef struct pass_call {
  kl_op *module;
  const kl_pass_options *opts;
  const kl_pass_info *info;
} pass_call;

static void push_pass_options(lua_State *L, const kl_pass_info *info, const kl_pass_options *opts) {
  lua_createtable(L, 0, info->noptions);
  for (int i = 0; i < info->noptions; i++) {
    const kl_pass_option *o = &info->options[i];
    switch (o->kind) {
      case KL_OPT_INT: lua_pushinteger(L, (lua_Integer)kl_pass_opt_int(opts, o->name)); break;
      case KL_OPT_FLOAT: lua_pushnumber(L, kl_pass_opt_float(opts, o->name)); break;
      case KL_OPT_BOOL: lua_pushboolean(L, kl_pass_opt_bool(opts, o->name)); break;
      default: lua_pushstring(L, kl_pass_opt_string(opts, o->name)); break;
    }
    lua_setfield(L, -2, o->name);
  }
}

static int pass_tramp(lua_State *L) {
  pass_call *c = lua_touserdata(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, REG_LUAPASSES);
  if (lua_getfield(L, -1, c->info->name) != LUA_TTABLE)
    return luaL_error(L, "Lua pass '%s' is not registered in this Lua state", c->info->name);
  int ctxud = kl_lua__push_ctxud_of(L, c->module->ctx);
  lua_getfield(L, -2, "fn");
  kl_lua__push(L, ctxud, KL_LH_OP, c->module);
  push_pass_options(L, c->info, c->opts);
  lua_call(L, 2, 2);
  return 2;
}

/* Runs the Lua function at the top of a prepared call and turns its outcome into a
 * status: an error or a `false, msg` return emits a diagnostic at loc. */
static kl_status finish_lua_call(lua_State *L, int rc, kl_ctx *ctx, kl_loc loc, const char *what, const char *name) {
  if (rc != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    return kl_emit_error(ctx, loc, "%s '%s' raised an error: %s", what, name,
                         msg ? msg : "(error object is not a string)");
  }
  if (lua_type(L, -2) == LUA_TBOOLEAN && !lua_toboolean(L, -2)) {
    const char *msg = lua_tostring(L, -1);
    return kl_emit_error(ctx, loc, "%s '%s' failed%s%s", what, name, msg ? ": " : "", msg ? msg : "");
  }
  return KL_OK;
}

static kl_status lua_pass_run(kl_op *module, const kl_pass_options *opts, void *user) {
  const kl_pass_info *info = user;
  kl_ctx *ctx = module->ctx;
  kl_lua_ctxstate *cst = kl_lua__state(ctx);
  if (!cst) return kl_emit_error(ctx, module->loc, "Lua pass '%s': this context has no Lua state", info->name);
  lua_State *L = cst->cur ? cst->cur : cst->main;
  if (!lua_checkstack(L, 16)) return kl_emit_error(ctx, module->loc, "Lua pass '%s': Lua stack overflow", info->name);
  int top = lua_gettop(L);
  pass_call c = { module, opts, info };
  lua_pushcfunction(L, kl_lua_traceback);
  lua_pushcfunction(L, pass_tramp);
  lua_pushlightuserdata(L, &c);
  kl_lua_busy prev = kl_lua__busy_enter(ctx, "Lua pass", info->name);
  int rc = lua_pcall(L, 1, 2, top + 1);
  kl_lua__busy_leave(ctx, prev);
  kl_status s = finish_lua_call(L, rc, ctx, module->loc, "Lua pass", info->name);
  lua_settop(L, top);
  return s;
}

bool kl_lua__is_lua_pass(const kl_pass_info *info) { return info && info->run == lua_pass_run; }

static const char *opt_kind_name(kl_opt_kind k) {
  return k == KL_OPT_INT ? "int" : k == KL_OPT_FLOAT ? "float" : k == KL_OPT_BOOL ? "bool" : "string";
}

/* Registers the Lua pass described by the entry table at idx under `name` in ctx. */
static void register_in(lua_State *L, kl_ctx *ctx, const char *name, int idx) {
  idx = lua_absindex(L, idx);
  kl_arena *a = kl_ctx_arena(ctx);
  kl_pass_info *info = kl_arena_alloc(a, sizeof *info);
  info->name = kl_intern(ctx, name);
  lua_getfield(L, idx, "summary");
  info->summary = kl_arena_strdup(a, lua_isstring(L, -1) ? lua_tostring(L, -1) : "Lua pass");
  lua_pop(L, 1);
  lua_getfield(L, idx, "options");
  int n = (int)luaL_len(L, -1);
  kl_pass_option *o = kl_arena_alloc(a, (size_t)(n ? n : 1) * sizeof *o);
  for (int i = 0; i < n; i++) {
    lua_geti(L, -1, i + 1);
    lua_getfield(L, -1, "name");
    o[i].name = kl_arena_strdup(a, lua_tostring(L, -1));
    lua_getfield(L, -2, "kind");
    const char *k = lua_tostring(L, -1);
    o[i].kind = !strcmp(k, "int") ? KL_OPT_INT
        : !strcmp(k, "float")     ? KL_OPT_FLOAT
        : !strcmp(k, "bool")      ? KL_OPT_BOOL
                                  : KL_OPT_STRING;
    lua_getfield(L, -3, "default");
    o[i].default_value = kl_arena_strdup(a, lua_tostring(L, -1));
    lua_getfield(L, -4, "help");
    o[i].help = kl_arena_strdup(a, lua_isstring(L, -1) ? lua_tostring(L, -1) : "");
    lua_pop(L, 5);
  }
  lua_pop(L, 1);
  info->options = o;
  info->noptions = n;
  info->run = lua_pass_run;
  info->user = info;
  kl_register_pass(ctx, info);
}

void kl_lua__register_lua_passes(lua_State *L, kl_ctx *ctx) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, REG_LUAPASSES) != LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  for (lua_pushnil(L); lua_next(L, -2); lua_pop(L, 1)) register_in(L, ctx, lua_tostring(L, -2), -1);
  lua_pop(L, 1);
}

/* register_pass(name, fn [, summary | {summary=, options={{name=, kind=, default=, help=}...}}])
 * fn(module, options) may return false, "message" to fail. Registered with every
 * context of this Lua state, present and future. */
static int l_register_pass(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  for (const char *p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' ||
          *p == '.'))
      return luaL_argerror(L, 1, "pass names may use letters, digits, '-', '_' and '.'");
  if (!*name) return luaL_argerror(L, 1, "empty pass name");
  lua_settop(L, 3); /* the entry below is never taken for the options */
  lua_createtable(L, 0, 3);
  int e = lua_gettop(L);
  lua_pushvalue(L, 2);
  lua_setfield(L, e, "fn");
  if (lua_type(L, 3) == LUA_TSTRING) {
    lua_pushvalue(L, 3);
    lua_setfield(L, e, "summary");
  }
  lua_newtable(L);
  int opts = lua_gettop(L);
  if (lua_istable(L, 3)) {
    static const char *const REG_OPTS[] = { "summary", "options", NULL };
    kl_lua__check_opts(L, 3, "kiln.register_pass", REG_OPTS);
    lua_getfield(L, 3, "summary");
    lua_setfield(L, e, "summary");
    if (lua_getfield(L, 3, "options") == LUA_TTABLE) {
      lua_Integer n = luaL_len(L, -1);
      for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, -1, i);
        if (!lua_istable(L, -1))
          return kl_lua__rt_error(L, "kiln.register_pass",
                                  "options[%d] must be a table {name=, kind=, default=, help=}", (int)i);
        static const char *const OPT_FIELDS[] = { "name", "kind", "default", "help", NULL };
        kl_lua__check_opts(L, -1, "kiln.register_pass", OPT_FIELDS);
        lua_createtable(L, 0, 4);
        if (lua_getfield(L, -2, "name") != LUA_TSTRING)
          return kl_lua__rt_error(L, "kiln.register_pass", "options[%d].name must be a string", (int)i);
        lua_setfield(L, -2, "name");
        lua_getfield(L, -2, "kind");
        const char *k = luaL_optstring(L, -1, "string");
        if (strcmp(k, "int") && strcmp(k, "float") && strcmp(k, "bool") && strcmp(k, "string"))
          return kl_lua__rt_error(L, "kiln.register_pass", "options[%d].kind must be int, float, bool or string",
                                  (int)i);
        lua_pushstring(L, k);
        lua_setfield(L, -3, "kind");
        lua_pop(L, 1);
        lua_getfield(L, -2, "default");
        if (lua_isnil(L, -1)) {
          lua_pop(L, 1);
          lua_pushstring(L, !strcmp(k, "bool") ? "false" : !strcmp(k, "string") ? "" : "0");
        } else
          luaL_tolstring(L, -1, NULL), lua_remove(L, -2);
        lua_setfield(L, -2, "default");
        lua_getfield(L, -2, "help");
        lua_setfield(L, -2, "help");
        lua_rawseti(L, opts, (lua_Integer)luaL_len(L, opts) + 1);
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  lua_setfield(L, e, "options");
  lua_getfield(L, LUA_REGISTRYINDEX, REG_LUAPASSES);
  lua_pushvalue(L, e);
  lua_setfield(L, -2, name);
  lua_pop(L, 1);
  /* every live context (the default one is created if needed) */
  kl_lua__default_ctxud(L);
  lua_pop(L, 1);
  lua_getfield(L, LUA_REGISTRYINDEX, "kiln.ctxmap");
  for (lua_pushnil(L); lua_next(L, -2); lua_pop(L, 1)) {
    kl_lua_ctxud *u = luaL_testudata(L, -1, KL_MT_CONTEXT);
    if (u && u->ctx) register_in(L, u->ctx, name, e);
  }
  return 0;
}

static int cmp_info(const void *a, const void *b) {
  return strcmp((*(const kl_pass_info *const *)a)->name, (*(const kl_pass_info *const *)b)->name);
}
static int l_passes(lua_State *L) { /* {name=, summary=, lua=, options={...}} sorted by name */
  int first;
  int c = kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, c);
  int n = kl_pass_count(ctx);
  const kl_pass_info **v = kl_lua__tmp(L, (size_t)n * sizeof *v);
  for (int i = 0; i < n; i++) v[i] = kl_pass_at(ctx, i);
  qsort(v, (size_t)n, sizeof *v, cmp_info);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_createtable(L, 0, 4);
    kl_lua__set_str(L, "name", v[i]->name);
    kl_lua__set_str(L, "summary", v[i]->summary);
    kl_lua__set_bool(L, "lua", v[i]->run == lua_pass_run);
    lua_createtable(L, v[i]->noptions, 0);
    for (int k = 0; k < v[i]->noptions; k++) {
      const kl_pass_option *o = &v[i]->options[k];
      lua_createtable(L, 0, 4);
      kl_lua__set_str(L, "name", o->name);
      kl_lua__set_str(L, "kind", opt_kind_name(o->kind));
      kl_lua__set_str(L, "default", o->default_value);
      kl_lua__set_str(L, "help", o->help);
      lua_rawseti(L, -2, k + 1);
    }
    lua_setfield(L, -2, "options");
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* ---------------------------------------------------------- run_pipeline ---- */
typedef struct pm_box {
  kl_pass_manager *pm;
} pm_box;
static int pm_gc(lua_State *L) {
  pm_box *b = luaL_checkudata(L, 1, MT_PM);
  if (b->pm) {
    kl_pass_manager_destroy(b->pm);
    b->pm = NULL;
  }
  return 0;
}

typedef struct pipe_st {
  lua_State *L;
  int tb, fns, ctxud, on_ir; /* stack slots; on_ir 0 = print to stderr */
  kl_ctx *ctx;
  bool ir_failed;
} pipe_st;
typedef struct pipe_cb {
  pipe_st *st;
  int fn;
  const char *name;
  kl_loc loc;
} pipe_cb;
typedef struct cb_call {
  pipe_cb *cb;
  kl_op *module;
  const char *pass;
  const char *text;
} cb_call;

/* Runs in its own frame: args (call, fn, context ud). */
static int cb_tramp(lua_State *L) {
  cb_call *c = lua_touserdata(L, 1);
  lua_pushvalue(L, 2);
  kl_lua__push(L, 3, KL_LH_OP, c->module);
  lua_call(L, 1, 2);
  return 2;
}
static kl_status pipe_callback(kl_op *module, void *user) {
  pipe_cb *cb = user;
  lua_State *L = cb->st->L; /* the frame of l_run_pipeline: its slots are valid */
  if (!lua_checkstack(L, 16)) return kl_emit_error(module->ctx, cb->loc, "Lua pass '%s': Lua stack overflow", cb->name);
  int top = lua_gettop(L);
  cb_call c = { cb, module, NULL, NULL };
  lua_pushcfunction(L, cb_tramp);
  lua_pushlightuserdata(L, &c);
  lua_rawgeti(L, cb->st->fns, cb->fn);
  lua_pushvalue(L, cb->st->ctxud);
  kl_lua_busy prev = kl_lua__busy_enter(module->ctx, "Lua pass", cb->name);
  int rc = lua_pcall(L, 3, 2, cb->st->tb);
  kl_lua__busy_leave(module->ctx, prev);
  kl_status s = finish_lua_call(L, rc, module->ctx, cb->loc, "Lua pass", cb->name);
  lua_settop(L, top);
  return s;
}

/* Runs in its own frame: args (call, on_ir fn). */
static int ir_tramp(lua_State *L) {
  cb_call *c = lua_touserdata(L, 1);
  lua_pushvalue(L, 2);
  lua_pushstring(L, c->pass);
  lua_pushstring(L, c->text);
  lua_call(L, 2, 0);
  return 0;
}
static void ir_callback(const char *pass, const char *text, void *user) {
  pipe_st *st = user;
  if (!st->on_ir) {
    fprintf(stderr, "// -----// IR Dump After %s //----- //\n%s\n", pass, text);
    return;
  }
  lua_State *L = st->L;
  if (st->ir_failed || !lua_checkstack(L, 16)) return;
  int top = lua_gettop(L);
  cb_call c = { NULL, NULL, pass, text };
  lua_pushcfunction(L, ir_tramp);
  lua_pushlightuserdata(L, &c);
  lua_pushvalue(L, st->on_ir);
  kl_lua_busy prev = kl_lua__busy_enter(st->ctx, "on_ir of run_pipeline, after pass", pass);
  int rc = lua_pcall(L, 2, 0, st->tb);
  kl_lua__busy_leave(st->ctx, prev);
  if (rc != LUA_OK) {
    st->ir_failed = true;
    lua_pushfstring(L, "kiln: on_ir callback raised an error: %s", lua_tostring(L, -1));
    lua_setfield(L, st->fns, "ir_error");
  }
  lua_settop(L, top);
}

/* Adds one Lua function (at the top of the stack, popped) as a pipeline callback. */
static void add_lua_fn(lua_State *L, kl_pass_manager *pm, pipe_st *st, int *nfn, const char *name) {
  lua_Debug ar;
  lua_pushvalue(L, -1);
  lua_getinfo(L, ">S", &ar);
  pipe_cb *cb = kl_lua__tmp(L, sizeof *cb);
  lua_rawsetp(L, st->fns, cb); /* anchor the callback record */
  lua_rawseti(L, st->fns, ++*nfn);
  char buf[256];
  if (!name) {
    snprintf(buf, sizeof buf, "lua@%s:%d", ar.short_src, ar.linedefined);
    name = buf;
  }
  const char *file = (ar.source[0] == '@' || ar.source[0] == '=') ? ar.source + 1 : ar.short_src;
  *cb = (pipe_cb){ st, *nfn, kl_intern(st->ctx, name), kl_loc_make(st->ctx, file, ar.linedefined, 0) };
  kl_pass_manager_add_callback(pm, cb->name, pipe_callback, cb);
}

/* Turns the pass manager's "name  12.3 ms" lines into {passes = {{name=, ms=}...},
 * verify_ms=, total_ms=, text=}; "(verifier)" and "(total)" lines fill the totals. */
static void push_timing(lua_State *L, const char *text) {
  lua_createtable(L, 0, 4);
  kl_lua__set_str(L, "text", text);
  lua_newtable(L);
  int n = 0;
  double total = 0, verify = 0;
  bool have_total = false;
  for (const char *line = text; *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char buf[512];
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, line, len);
    buf[len] = 0;
    char name[256];
    double ms;
    if (sscanf(buf, " %255s %lf", name, &ms) == 2) {
      if (!strcmp(name, "(total)")) {
        total = ms;
        have_total = true;
      } else if (!strcmp(name, "(verifier)"))
        verify = ms;
      else {
        lua_createtable(L, 0, 2);
        kl_lua__set_str(L, "name", name);
        kl_lua__set_num(L, "ms", ms);
        lua_rawseti(L, -2, ++n);
        if (!have_total) total += ms;
      }
    }
    if (!end) break;
    line = end + 1;
  }
  lua_setfield(L, -2, "passes");
  kl_lua__set_num(L, "verify_ms", verify);
  kl_lua__set_num(L, "total_ms", have_total ? total : total + verify);
}

/* run_pipeline(module, "a,b{k=v}" | {entries...} [, {print_ir_after="all"|"a,b"|{names},
 * on_ir=function(pass, text), verify=true}]) -> true, timing report.
 * Entries: pipeline strings, Lua functions fn(module) -> [false, msg], or
 * {name=, run=fn}. */
static int l_run_pipeline(lua_State *L) {
  kl_op *m = kl_lua__check(L, 1, KL_LH_OP);
  kl_ctx *ctx = m->ctx;
  kl_lua__check_not_rewriting(L, ctx, "run_pipeline");
  lua_settop(L, 3);
  if (!lua_isnoneornil(L, 3)) luaL_checktype(L, 3, LUA_TTABLE);
  int ctxud = kl_lua__push_handle_ctxud(L, 1);
  kl_lua__busy_guard(L, ctxud, "run_pipeline"); /* metamethods of the arguments, callbacks */
  lua_pushcfunction(L, kl_lua_traceback);
  int tb = lua_gettop(L);
  lua_newtable(L);
  int fns = lua_gettop(L);
  pm_box *box = lua_newuserdatauv(L, sizeof *box, 0);
  box->pm = NULL;
  luaL_setmetatable(L, MT_PM);
  int on_ir = 0;
  static const char *const RUN_OPTS[] = { "on_ir", "verify", "verify_each", "print_ir_after", NULL };
  kl_lua__check_opts(L, 3, "run_pipeline", RUN_OPTS);
  if (lua_istable(L, 3)) {
    if (lua_getfield(L, 3, "on_ir") != LUA_TNIL) {
      luaL_checktype(L, -1, LUA_TFUNCTION);
      on_ir = lua_gettop(L);
    } else
      lua_pop(L, 1);
  }
  pipe_st st = { L, tb, fns, ctxud, on_ir, ctx, false };
  box->pm = kl_pass_manager_create(ctx);
  kl_pass_manager *pm = box->pm;
  kl_lua__flush_diags(ctx);
  int nfn = 0;
  kl_status s = KL_OK;
  if (lua_type(L, 2) == LUA_TSTRING)
    s = kl_pass_manager_add_pipeline(pm, lua_tostring(L, 2));
  else if (lua_istable(L, 2)) {
    lua_Integer n = luaL_len(L, 2);
    for (lua_Integer i = 1; i <= n && s == KL_OK; i++) {
      int t = lua_geti(L, 2, i);
      if (t == LUA_TSTRING)
        s = kl_pass_manager_add_pipeline(pm, lua_tostring(L, -1));
      else if (t == LUA_TFUNCTION) {
        add_lua_fn(L, pm, &st, &nfn, NULL);
        continue;
      } else if (t == LUA_TTABLE) {
        lua_getfield(L, -1, "name");
        const char *name = lua_isstring(L, -1) ? kl_intern(ctx, lua_tostring(L, -1)) : NULL;
        lua_pop(L, 1);
        if (lua_getfield(L, -1, "run") != LUA_TFUNCTION)
          return kl_lua__rt_error(L, "kiln", "pipeline[%d].run must be a function", (int)i);
        add_lua_fn(L, pm, &st, &nfn, name);
      } else
        return kl_lua__rt_error(L, "kiln", "pipeline[%d] is a %s; expected a pass string, a function or {name=, run=}",
                                (int)i, luaL_typename(L, -1));
      lua_pop(L, 1);
    }
  } else
    return luaL_typeerror(L, 2, "pipeline string or table");
  if (s != KL_OK) return kl_lua__diag_error(L, ctx, "run_pipeline", "invalid pipeline");

  bool verify = true;
  const char *which = NULL;
  if (lua_istable(L, 3)) {
    lua_getfield(L, 3, "verify");
    if (!lua_isnil(L, -1)) verify = lua_toboolean(L, -1);
    lua_getfield(L, 3, "verify_each");
    if (!lua_isnil(L, -1)) verify = lua_toboolean(L, -1);
    int t = lua_getfield(L, 3, "print_ir_after");
    if (t == LUA_TSTRING)
      which = kl_intern(ctx, lua_tostring(L, -1));
    else if (t == LUA_TTABLE) {
      int tt = lua_gettop(L);
      lua_Integer n = luaL_len(L, tt);
      luaL_Buffer b;
      luaL_buffinit(L, &b); /* may push a placeholder: tt first */
      for (lua_Integer i = 1; i <= n; i++) {
        if (i > 1) luaL_addchar(&b, ',');
        lua_geti(L, tt, i);
        if (lua_type(L, -1) != LUA_TSTRING) return kl_lua__rt_error(L, "kiln", "print_ir_after must list pass names");
        luaL_addvalue(&b);
      }
      luaL_pushresult(&b);
      which = kl_intern(ctx, lua_tostring(L, -1));
      lua_pop(L, 1);
    } else if (t == LUA_TBOOLEAN && lua_toboolean(L, -1))
      which = "all";
    lua_pop(L, 3);
    if (!which && on_ir) which = "all";
  }
  if (which) kl_pass_manager_print_ir_after(pm, which, ir_callback, &st);
  kl_pass_manager_set_verify(pm, verify);

  lua_State *saved = kl_lua__set_current(ctx, L);
  s = kl_pass_manager_run(pm, m);
  kl_lua__set_current(ctx, saved);
  char *timing = kl_pass_manager_timing(pm);
  kl_pass_manager_destroy(pm);
  box->pm = NULL;
  lua_pushstring(L, timing ? timing : "");
  free(timing);
  if (s != KL_OK) return kl_lua__diag_error(L, ctx, "run_pipeline", "pipeline failed");
  if (st.ir_failed) {
    lua_getfield(L, fns, "ir_error");
    return kl_lua__rt_error(L, "run_pipeline", "%s", lua_tostring(L, -1));
  }
  kl_lua__flush_diags(ctx);
  const char *text = lua_tostring(L, -1);
  lua_pushboolean(L, 1);
  push_timing(L, text);
  return 2;
}

void kl_lua__open_pass(lua_State *L) {
  if (luaL_newmetatable(L, MT_PM)) {
    lua_pushcfunction(L, pm_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  if (lua_getfield(L, LUA_REGISTRYINDEX, REG_LUAPASSES) == LUA_TNIL) {
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_LUAPASSES);
  }
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {
    { "run_pipeline", l_run_pipeline }, { "register_pass", l_register_pass }, { "passes", l_passes }, { NULL, NULL }
  };
  luaL_setfuncs(L, fns, 0);
}
