/* kiln_lua_program.c — targets and compiled programs in Lua: kiln.targets(),
 * kiln.compile(g, opts) -> "kiln.program" with p:run (opts: device, timing), p:kernels,
 * p:ir, p:plan, p:plan_text, p:binary,
 * p:prepare -> "kiln.prepared" (kiln_lua_prepared.c: device-resident inputs for
 * benchmarks). Devices ("kiln.device") are in kiln_lua_device.c.
 * Lifetimes: a program that ran on a device holds loaded modules of that device, and the
 * context's compile cache may hold the program after every Lua handle is gone. So a
 * device (refcounted kl_lua_devref) is kept open by its Lua handle, by every program holder
 * (one per kl_program, shared by the Lua handles of cache hits) that ran on it and by
 * the context (a destroy hook registered before the context's compile cache exists, so
 * it runs after the cache is released). Programs keep their context alive; using a
 * program whose context was destroyed explicitly is a Lua error. */
#include "lua/kiln_lua_rt.h"
#include "codegen/hsaco.h"
#include "codegen/disasm.h"
#include "core/dialect_graph.h"
#include "core/target.h"
#include "driver/program.h"
#include "driver/amdgpu_stats.h"
#include "driver/llvm_stage.h"
#include "driver/disk_cache.h"
#include "driver/tuning_db.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MT_HOLDER   "kiln.program.holder"
#define REG_HOLDERS "kiln.progholders" /* lightuserdata(kl_program) -> holder (weak values) */


/* ---------------------------------------------------------------- targets ---- */
static const char *accel_name(kl_accel a) {
  switch (a) {
    case KL_ACCEL_MFMA: return "mfma";
    case KL_ACCEL_WMMA: return "wmma";
    case KL_ACCEL_MMA_SYNC: return "mma.sync";
    case KL_ACCEL_WGMMA: return "wgmma";
    default: return "none";
  }
}
static void push_target(lua_State *L, const kl_target *t) {
  lua_createtable(L, 0, 12);
  kl_lua__set_str(L, "name", t->name);
  kl_lua__set_str(L, "arch", kl_arch_name(t->arch));
  kl_lua__set_str(L, "triple", t->triple);
  kl_lua__set_str(L, "cpu", t->cpu);
  kl_lua__set_str(L, "features", t->features);
  kl_lua__set_int(L, "wave_size", t->wave_size);
  kl_lua__set_int(L, "lds_bytes", (lua_Integer)t->lds_bytes);
  kl_lua__set_int(L, "max_workgroup_size", t->max_workgroup_size);
  kl_lua__set_int(L, "max_vgprs", t->max_vgprs);
  kl_lua__set_int(L, "compute_units", t->compute_units);
  kl_lua__set_str(L, "accel", accel_name(t->accel));
  kl_lua__set_bool(L, "wgmma", t->wgmma);
  lua_createtable(L, t->ninstrs, 0);
  for (int i = 0; i < t->ninstrs; i++) {
    const kl_accel_instr *in = &t->instrs[i];
    lua_createtable(L, 0, 6);
    kl_lua__set_str(L, "in_type", in->in_type);
    kl_lua__set_str(L, "acc_type", in->acc_type);
    kl_lua__set_int(L, "m", in->m);
    kl_lua__set_int(L, "n", in->n);
    kl_lua__set_int(L, "k", in->k);
    kl_lua__set_str(L, "intrinsic", in->intrinsic);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "instrs");
}
/* kiln.targets() -> list; kiln.target(name) -> one or nil */
static int l_targets(lua_State *L) {
  int n = kl_target_count();
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    push_target(L, kl_target_at(i));
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}
static int l_target(lua_State *L) {
  const kl_target *t = kl_target_lookup(luaL_checkstring(L, 1));
  if (t)
    push_target(L, t);
  else
    lua_pushnil(L);
  return 1;
}
static int l_default_pipeline(lua_State *L) {
  lua_pushstring(L, kl_default_pipeline());
  return 1;
}

/* --------------------------------------------------------------- programs ---- */
typedef struct holder {
  kl_program *p;
  kl_lua_devref **devs;
  int n;
} holder;
typedef struct prog_ud {
  holder *h;
  bool from_cache;
} prog_ud; /* uv 1: ctx ud, uv 2: holder ud */
static void push_program(lua_State *L, int ctxidx, kl_program *p, bool from_cache);

static int holder_gc(lua_State *L) {
  holder *h = luaL_checkudata(L, 1, MT_HOLDER);
  if (h->p) {
    kl_program_release(h->p);
    h->p = NULL;
  }
  for (int i = 0; i < h->n; i++) kl_lua__devref_release(h->devs[i]);
  free(h->devs);
  h->devs = NULL;
  h->n = 0;
  return 0;
}
/* Pushes the holder of p (taking over the caller's reference to p). */
static holder *push_holder(lua_State *L, kl_program *p) {
  lua_getfield(L, LUA_REGISTRYINDEX, REG_HOLDERS);
  if (lua_rawgetp(L, -1, p) != LUA_TNIL) {
    lua_remove(L, -2);
    kl_program_release(p); /* the holder has its own */
    return lua_touserdata(L, -1);
  }
  lua_pop(L, 1);
  holder *h = lua_newuserdatauv(L, sizeof *h, 0);
  memset(h, 0, sizeof *h);
  h->p = p;
  luaL_setmetatable(L, MT_HOLDER);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, -3, p);
  lua_remove(L, -2);
  /* the collector sees a small userdata: tell it what the program holds, so dropped
   * programs are collected at the pace of the memory they hold */
  lua_gc(L, LUA_GCSTEP, (int)(kl_program_memory(p) >> 10));
  return h;
}

static prog_ud *check_prog(lua_State *L, int idx, kl_program **pp) {
  prog_ud *u = luaL_checkudata(L, idx, KL_MT_PROGRAM);
  lua_getiuservalue(L, idx, 1);
  kl_lua_ctxud *c = luaL_testudata(L, -1, KL_MT_CONTEXT);
  lua_pop(L, 1);
  if (!c || !c->ctx) kl_lua__rt_error(L, "kiln.program", "the context of this program has been destroyed");
  if (!u->h || !u->h->p) kl_lua__rt_error(L, "kiln.program", "this program has been released");
  if (pp) *pp = u->h->p;
  return u;
}
/* Keeps the context of the program at arg 1 busy until the method returns: reading its
 * option tables may run metamethods (pushes the context userdata and a guard). */
static void busy_program(lua_State *L, const char *what) {
  lua_getiuservalue(L, 1, 1);
  kl_lua__busy_guard(L, -1, what);
}
static kl_ctx *prog_ctx(lua_State *L, int idx) {
  lua_getiuservalue(L, idx, 1);
  kl_ctx *ctx = ((kl_lua_ctxud *)lua_touserdata(L, -1))->ctx;
  lua_pop(L, 1);
  return ctx;
}

/* The graph function of arg idx: a graph object (table with .func), a graph func op,
 * or a module holding one. Returns the op; its handle is at the top of the stack. */
static kl_op *graph_arg(lua_State *L, int idx, const char *what) {
  idx = lua_absindex(L, idx);
  if (lua_istable(L, idx))
    lua_getfield(L, idx, "func");
  else
    lua_pushvalue(L, idx);
  kl_op *op = kl_lua__test(L, -1, KL_LH_OP);
  if (!op)
    kl_lua__rt_error(L, what, "expected a graph (kiln.graph(...)) or a graph function op, got a %s",
                     luaL_typename(L, idx));
  kl_lua__check(L, -1, KL_LH_OP);
  if (kl_is_graph(op)) return op;
  if (!strcmp(op->name, "builtin.module") || !strcmp(op->name, "module")) {
    for (kl_op *o = kl_module_body(op)->first; o; o = o->next)
      if (kl_is_graph(o)) {
        int c = kl_lua__push_handle_ctxud(L, -1);
        kl_lua__push(L, c, KL_LH_OP, o);
        lua_remove(L, c);
        lua_remove(L, -2);
        return o;
      }
    kl_lua__rt_error(L, what, "the module holds no graph function");
  }
  kl_lua__rt_error(L, what, "'%s' is not a graph function (func.func with the 'graph' attribute)", op->name);
  return NULL;
}

/* Joins a string or a list of strings at idx with commas into a GC buffer string
 * pushed on the stack; returns it (NULL for nil). */
static const char *join_names(lua_State *L, int idx, const char *what, const char *field) {
  idx = lua_absindex(L, idx);
  if (lua_isnil(L, idx)) {
    lua_pushnil(L);
    return NULL;
  }
  if (lua_type(L, idx) == LUA_TSTRING) {
    lua_pushvalue(L, idx);
    return lua_tostring(L, -1);
  }
  if (!lua_istable(L, idx)) kl_lua__rt_error(L, what, "%s must be a string or a list of strings", field);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  lua_Integer n = luaL_len(L, idx);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, idx, i);
    if (lua_type(L, -1) != LUA_TSTRING) {
      if (lua_isfunction(L, -1))
        kl_lua__rt_error(L, what,
                         "%s entry %lld is a function; register it with kiln.register_pass(name, fn) and use its name",
                         field, (long long)i);
      kl_lua__rt_error(L, what, "%s entry %lld must be a string", field, (long long)i);
    }
    if (i > 1) luaL_addchar(&b, ',');
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  return lua_tostring(L, -1);
}

typedef struct on_ir_st {
  lua_State *L;
  int fn;
  bool failed;
  kl_ctx *ctx;
} on_ir_st;
static void on_ir_cb(const char *pass, const char *text, void *user) {
  on_ir_st *s = user;
  lua_State *L = s->L;
  if (s->failed) return;
  if (!s->fn) {
    fprintf(stderr, "// -----// IR Dump After %s //----- //\n%s\n", pass, text);
    return;
  }
  if (!lua_checkstack(L, 5)) {
    s->failed = true;
    return;
  }
  lua_pushcfunction(L, kl_lua_traceback);
  int tb = lua_gettop(L);
  lua_pushvalue(L, s->fn);
  lua_pushstring(L, pass);
  lua_pushstring(L, text);
  kl_lua_busy prev = kl_lua__busy_enter(s->ctx, "on_ir of compile, after pass", pass);
  int rc = lua_pcall(L, 2, 0, tb);
  kl_lua__busy_leave(s->ctx, prev);
  if (rc != LUA_OK) {
    s->failed = true;
    lua_remove(L, tb); /* leave the message on the stack at a known place: replace fn slot later */
    lua_setfield(L, LUA_REGISTRYINDEX, "kiln.on_ir_error");
    return;
  }
  lua_pop(L, 1);
}

static bool pipeline_has_lua_pass(kl_ctx *ctx, const char *pipeline) {
  const kl_pass_info *infos[64];
  int n = kl_pipeline_passes(ctx, pipeline ? pipeline : kl_default_pipeline(), infos, 64); /* -1: compile reports it */
  if (n > 64) return true; /* not worth a heap copy: just do not cache */
  for (int i = 0; i < n; i++)
    if (kl_lua__is_lua_pass(infos[i])) return true;
  return false;
}

/* The passes p kept IR snapshots after, each once, as a temporary array pushed on the
 * stack; *n gets the count. */
static const char **ir_pass_names(lua_State *L, const kl_program *p, int *n) {
  int total = 0;
  while (kl_program_ir_pass(p, total)) total++;
  const char **names = kl_lua__tmp(L, (size_t)(total + 1) * sizeof *names);
  int k = 0;
  for (int i = 0; i < total; i++) {
    const char *pi = kl_program_ir_pass(p, i);
    bool seen = false;
    for (int j = 0; j < k && !seen; j++) seen = !strcmp(names[j], pi);
    if (!seen) names[k++] = pi;
  }
  *n = k;
  return names;
}
/* A kernel name of p (target t) that is not one: kl_lua__unknown_name with the kernels. */
static int unknown_kernel(lua_State *L, const kl_program *p, const char *t, const char *what, const char *kernel) {
  int n = kl_program_nkernels(p, t);
  const char **names = kl_lua__tmp(L, (size_t)(n + 1) * sizeof *names);
  for (int i = 0; i < n; i++) names[i] = kl_program_kernel(p, t, i)->name;
  return kl_lua__unknown_name(L, what, "kernel", "kernels", kernel, names, n);
}

/* The first name of print_ir_after ("a,b", or "all") that p's pipeline did not run, or NULL. */
static const char *unknown_ir_after(lua_State *L, const kl_program *p, const char *which) {
  if (!which || !strcmp(which, "all")) return NULL;
  for (const char *s = which; *s;) {
    size_t n = strcspn(s, ",");
    bool found = false;
    for (int i = 0; kl_program_ir_pass(p, i) && !found; i++)
      found = strlen(kl_program_ir_pass(p, i)) == n && !strncmp(kl_program_ir_pass(p, i), s, n);
    if (!found) {
      lua_pushlstring(L, s, n);
      return lua_tostring(L, -1);
    }
    s += n + (s[n] == ',');
  }
  return NULL;
}

static const char *const COMPILE_OPTS[] = { "target",         "targets",   "perf_config",   "pipeline",
                                            "print_ir_after", "on_ir",     "cache",         "strict_fp",
                                            "cache_dir",      "tuning_db", "tuning_device", NULL };

/* kiln.compile(g, {target=, targets=, perf_config=, pipeline=, print_ir_after=, on_ir=, cache=, strict_fp=})
 * strict_fp: true = every float multiply and add rounded on its own (no FMA contraction:
 * passes/lower_to_llvm.c); default false.
 * cache: nil = use the context's compile cache unless the pipeline has a Lua pass (its
 * behaviour may depend on any Lua state); true = use it (keyed by each pass's
 * registration); false = never (neither this cache nor the disk cache).
 * cache_dir: the on-disk cache's directory (driver/disk_cache.h); nil = $KILN_CACHE_DIR
 * (unset or empty: none); false = none. Pipelines with a Lua pass never use it.
 * tuning_db: the tuning database (driver/tuning_db.h) whose records give GEMM kernels
 * their perf config when perf_config is not given; nil = $KILN_TUNING_DB, else the default
 * path (kl_tuning_db_default_path); false = none. tuning_device: only that device's records. */
static int l_compile(lua_State *L) {
  const char *what = "compile";
  lua_settop(L, 2);
  kl_op *g = graph_arg(L, 1, what);
  int gh = lua_gettop(L);
  kl_ctx *ctx = kl_lua__handle_ctx(L, gh);
  kl_lua__busy_guard(L, kl_lua__push_handle_ctxud(L, gh), "compile"); /* metamethods, callbacks */
  kl_compile_opts o = { 0 };
  const char **targets = NULL;
  bool cache_given = false, dir_given = false, db_given = false;
  on_ir_st st = { L, 0, false, ctx };
  if (!lua_isnil(L, 2)) {
    if (!lua_istable(L, 2)) return kl_lua__rt_error(L, what, "options must be a table, got a %s", luaL_typename(L, 2));
    kl_lua__check_opts(L, 2, what, COMPILE_OPTS);
    int tt = lua_getfield(L, 2, "target"), ts = lua_getfield(L, 2, "targets");
    if (tt != LUA_TNIL && ts != LUA_TNIL) return kl_lua__rt_error(L, what, "give target= or targets=, not both");
    if (tt != LUA_TNIL) {
      if (tt != LUA_TSTRING) return kl_lua__rt_error(L, what, "target must be a string such as \"host\" or \"gfx942\"");
      targets = kl_lua__tmp(L, sizeof *targets);
      targets[0] = lua_tostring(L, -3);
      o.targets = targets;
      o.ntargets = 1;
    } else if (ts != LUA_TNIL) {
      if (ts == LUA_TSTRING) {
        targets = kl_lua__tmp(L, sizeof *targets);
        targets[0] = lua_tostring(L, -2);
        o.targets = targets;
        o.ntargets = 1;
      } else {
        if (ts != LUA_TTABLE) return kl_lua__rt_error(L, what, "targets must be a list of target names");
        lua_Integer n = luaL_len(L, -1);
        if (n < 1 || n > 64) return kl_lua__rt_error(L, what, "targets must list between 1 and 64 target names");
        int tix = lua_gettop(L);
        targets = kl_lua__tmp(L, (size_t)n * sizeof *targets);
        for (lua_Integer i = 1; i <= n; i++) {
          if (lua_geti(L, tix, i) != LUA_TSTRING)
            return kl_lua__rt_error(L, what, "targets entry %lld must be a string", (long long)i);
          targets[i - 1] = kl_intern(ctx, lua_tostring(L, -1)); /* callbacks may change the table */
          lua_pop(L, 1);
        }
        o.targets = targets;
        o.ntargets = (int)n;
      }
    }
    if (lua_getfield(L, 2, "perf_config") != LUA_TNIL) {
      if (lua_type(L, -1) != LUA_TSTRING)
        return kl_lua__rt_error(L, what, "perf_config must be a string such as \"v1:64,64,16,...\"");
      o.perf_config = lua_tostring(L, -1);
    }
    lua_getfield(L, 2, "pipeline");
    o.pipeline = join_names(L, -1, what, "pipeline");
    lua_getfield(L, 2, "print_ir_after");
    o.print_ir_after = join_names(L, -1, what, "print_ir_after");
    if (lua_getfield(L, 2, "on_ir") != LUA_TNIL) {
      if (!lua_isfunction(L, -1)) return kl_lua__rt_error(L, what, "on_ir must be a function(pass, text)");
      st.fn = lua_gettop(L);
      if (!o.print_ir_after) o.print_ir_after = "all";
    }
    if (lua_getfield(L, 2, "cache") != LUA_TNIL) {
      o.no_cache = !lua_toboolean(L, -1);
      cache_given = true;
    }
    if (lua_getfield(L, 2, "strict_fp") != LUA_TNIL) {
      if (!lua_isboolean(L, -1)) return kl_lua__rt_error(L, what, "strict_fp must be a boolean");
      o.strict_fp = lua_toboolean(L, -1);
    }
    lua_pop(L, 2);
    int cd = lua_getfield(L, 2, "cache_dir"); /* stays on the stack while o.cache_dir is used */
    if (cd == LUA_TSTRING && *lua_tostring(L, -1)) {
      o.cache_dir = lua_tostring(L, -1);
      dir_given = true;
    } else if (cd == LUA_TBOOLEAN && !lua_toboolean(L, -1))
      dir_given = true;
    else if (cd != LUA_TNIL)
      return kl_lua__rt_error(L, what, "cache_dir must be a directory name or false");
    int td = lua_getfield(L, 2, "tuning_db"); /* stays on the stack too */
    if (td == LUA_TSTRING && *lua_tostring(L, -1)) {
      o.tuning_db = lua_tostring(L, -1);
      db_given = true;
    } else if (td == LUA_TBOOLEAN && !lua_toboolean(L, -1))
      db_given = true;
    else if (td != LUA_TNIL)
      return kl_lua__rt_error(L, what, "tuning_db must be a file name or false");
    int tv = lua_getfield(L, 2, "tuning_device");
    if (tv == LUA_TSTRING)
      o.tuning_device = lua_tostring(L, -1);
    else if (tv != LUA_TNIL)
      return kl_lua__rt_error(L, what, "tuning_device must be a device name (kiln.device(...).name)");
  }
  if (!dir_given) o.cache_dir = kl_disk_cache_env_dir();
  if (!db_given) {
    char *path = kl_tuning_db_default_path();
    if (path) {
      lua_pushstring(L, path);
      free(path);
      o.tuning_db = lua_tostring(L, -1);
    }
  }
  /* A Lua pass may read any Lua state (upvalues, globals, other patterns): no key can
   * name what it does, so its pipelines bypass the cache unless cache = true (then the
   * key names each pass's registration: registering it again still misses). */
  if (!cache_given && pipeline_has_lua_pass(ctx, o.pipeline)) o.no_cache = true;
  if (pipeline_has_lua_pass(ctx, o.pipeline)) {
    o.cache_dir = NULL;     /* its key cannot name a Lua pass */
    o.ir_in_context = true; /* a Lua pass may keep handles to the IR it sees */
  }
  if (o.print_ir_after) {
    o.on_ir = on_ir_cb;
    o.on_ir_user = &st;
  }
  kl_lua__ctx_devhold(ctx); /* before the compile cache exists */
  char err[4096] = "";
  kl_lua__flush_diags(ctx);
  lua_State *saved = kl_lua__set_current(ctx, L); /* Lua passes run on this thread */
  kl_program *p = kl_compile(g, &o, err, sizeof err);
  kl_lua__set_current(ctx, saved);
  if (st.failed) {
    if (p) kl_program_release(p);
    lua_getfield(L, LUA_REGISTRYINDEX, "kiln.on_ir_error");
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "kiln.on_ir_error");
    return kl_lua__rt_error(L, what, "the on_ir callback failed: %s",
                            lua_isstring(L, -1) ? lua_tostring(L, -1) : "(no message)");
  }
  if (!p) {
    size_t n = strlen(err);
    while (n && err[n - 1] == '\n') err[--n] = 0;
    return kl_lua__err_error(L, what, "compile", err, "compilation failed");
  }
  const char *bad = unknown_ir_after(L, p, o.print_ir_after);
  if (bad) {
    int n = 0;
    const char **names = ir_pass_names(L, p, &n);
    kl_program_release(p);
    return kl_lua__unknown_name(L, what, "print_ir_after pass", "passes", bad, names, n);
  }
  int c = kl_lua__push_handle_ctxud(L, gh);
  push_program(L, c, p, kl_program_from_cache(p));
  return 1;
}

/* Every input must name a param of the program (of its first target: all share the params). */
static void check_inputs(lua_State *L, const kl_program *p, const char *what, const kl_named_tensor *in, int k) {
  int ns = kl_program_nslots(p, NULL), np = 0;
  const char **params = kl_lua__tmp(L, (size_t)(ns + 1) * sizeof *params);
  for (int i = 0; i < ns; i++) {
    const char *kind = NULL, *name = NULL;
    kl_program_slot(p, NULL, i, &kind, &name);
    if (kind && !strcmp(kind, "param") && name) params[np++] = name;
  }
  kl_lua__check_input_names(L, what, in, k, params, np);
  lua_pop(L, 1);
}

/* Pushes a program handle for p in the context of the context userdata at ctxidx,
 * taking over the caller's reference to p. */
static void push_program(lua_State *L, int ctxidx, kl_program *p, bool from_cache) {
  ctxidx = lua_absindex(L, ctxidx);
  kl_lua__check_ctx(L, ctxidx);
  kl_lua__ctx_devhold(kl_lua__check_ctx(L, ctxidx)); /* before a compile cache exists, if it does not yet */
  prog_ud *u = lua_newuserdatauv(L, sizeof *u, 2);
  u->h = NULL;
  u->from_cache = from_cache;
  luaL_setmetatable(L, KL_MT_PROGRAM);
  int pu = lua_gettop(L);
  lua_pushvalue(L, ctxidx);
  lua_setiuservalue(L, pu, 1);
  u->h = push_holder(L, p);
  lua_setiuservalue(L, pu, 2);
}
void kl_lua__push_program(lua_State *L, int ctxidx, kl_program *p) { push_program(L, ctxidx, p, false); }
kl_program *kl_lua__check_program(lua_State *L, int idx) {
  kl_program *p;
  check_prog(L, idx, &p);
  return p;
}

static int prog_tostring(lua_State *L) {
  prog_ud *u = luaL_checkudata(L, 1, KL_MT_PROGRAM);
  if (!u->h || !u->h->p) {
    lua_pushstring(L, "kiln.program (released)");
    return 1;
  }
  lua_getiuservalue(L, 1, 1);
  kl_lua_ctxud *c = luaL_testudata(L, -1, KL_MT_CONTEXT);
  if (!c || !c->ctx) {
    lua_pushstring(L, "kiln.program (context destroyed)");
    return 1;
  }
  kl_program *p = u->h->p;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "kiln.program (");
  for (int i = 0; i < kl_program_ntargets(p); i++) {
    const char *t = kl_program_target(p, i);
    int nk = kl_program_nkernels(p, t);
    lua_pushfstring(L, "%s%s: %d kernel%s", i ? ", " : "", t, nk, nk == 1 ? "" : "s");
    luaL_addvalue(&b);
  }
  luaL_addstring(&b, ")");
  luaL_pushresult(&b);
  return 1;
}

static const char *const DEVICE_OPTS[] = { "device", NULL }; /* p:run, p:load_kernels */
/* Pushes the device to run on: opts.device (device or name), else the default. */
static kl_lua_devref *run_device(lua_State *L, kl_program *p, int optidx) {
  if (lua_istable(L, optidx) && lua_getfield(L, optidx, "device") != LUA_TNIL) {
    if (lua_type(L, -1) == LUA_TSTRING) {
      lua_pushcfunction(L, kl_lua__l_device);
      lua_insert(L, -2);
      lua_call(L, 1, 1);
    }
    return kl_lua__check_device(L, lua_gettop(L));
  }
  if (lua_istable(L, optidx)) lua_pop(L, 1);
  bool all_host = true;
  for (int i = 0; i < kl_program_ntargets(p); i++) {
    const kl_target *t = kl_target_lookup(kl_program_target(p, i));
    if (!t || t->arch != KL_ARCH_HOST) all_host = false;
  }
  lua_pushcfunction(L, kl_lua__l_device);
  lua_pushstring(L, all_host ? "host" : "auto");
  lua_call(L, 1, 1);
  return kl_lua__check_device(L, lua_gettop(L));
}

/* p:run({name = tensor, ...} [, {device = dev | "name"}]) -> output tensors */
static int prog_run(lua_State *L) {
  const char *what = "run";
  kl_program *p;
  prog_ud *u = check_prog(L, 1, &p);
  lua_settop(L, 3);
  busy_program(L, "p:run");
  if (!lua_istable(L, 2))
    return kl_lua__rt_error(L, what, "inputs must be a table {name = tensor, ...}, got a %s", luaL_typename(L, 2));
  if (!lua_isnil(L, 3) && !lua_istable(L, 3))
    return kl_lua__rt_error(L, what, "options must be a table {device = ...}");
  static const char *const RUN_OPTS[] = { "device", "timing", NULL };
  kl_lua__check_opts(L, 3, what, RUN_OPTS);
  bool timing = lua_istable(L, 3) && lua_getfield(L, 3, "timing") != LUA_TNIL;
  if (timing && !lua_istable(L, -1))
    return kl_lua__rt_error(
        L, what,
        "timing must be a table (it receives one {kind=, token=, start_ms=, end_ms=, ms=, stream=} per step), got a %s",
        luaL_typename(L, -1));
  if (lua_istable(L, 3)) lua_pop(L, 1);
  kl_lua_devref *d = run_device(L, p, 3);
  int k = 0;
  kl_named_tensor *in = kl_lua__check_named_tensors(L, 2, what, &k);
  check_inputs(L, p, what, in, k);
  /* keep the device open as long as the program (and the context's cache) may hold its modules */
  bool first = kl_lua__devs_add(&u->h->devs, &u->h->n, d);
  kl_lua_devhold *dh = kl_lua__ctx_devhold(prog_ctx(L, 1));
  if (dh)
    kl_lua__devs_add(&dh->devs, &dh->n, d);
  else if (first)
    d->refs++; /* cannot tie it to the context: never close it */
  int nout = 0;
  kl_tensor **outs = NULL;
  char err[4096] = "";
  const kl_bundle_target *P = kl_program_plan(
      p, kl_program_target(p, kl_program_target_for_device(p, kl_device_get_info(d->dev))));
  double *ms = timing && P ? lua_newuserdatauv(L, (2 * P->nsteps + 2) * sizeof *ms, 0) : NULL;
  int *on = timing && P ? lua_newuserdatauv(L, (P->nsteps + 1) * sizeof *on, 0) : NULL;
  if (kl_program_run_timed(p, d->dev, k, in, &nout, &outs, ms, on, err, sizeof err) != KL_OK)
    return kl_lua__err_error(L, what, "run", err, "the program failed");
  if (ms) { /* opts.timing[i] = {kind=, token=, start_ms=, end_ms=, ms=, stream=} */
    lua_getfield(L, 3, "timing");
    for (int i = 0; i < P->nsteps; i++) {
      lua_createtable(L, 0, 6);
      kl_lua__set_str(L, "kind", kl_bundle_step_kind_name(P->steps[i].kind));
      kl_lua__set_int(L, "token", P->steps[i].token);
      kl_lua__set_int(L, "stream", on[i]);
      lua_pushnumber(L, ms[2 * i]);
      lua_setfield(L, -2, "start_ms");
      lua_pushnumber(L, ms[2 * i + 1]);
      lua_setfield(L, -2, "end_ms");
      lua_pushnumber(L, ms[2 * i + 1] - ms[2 * i]);
      lua_setfield(L, -2, "ms");
      lua_rawseti(L, -2, i + 1);
    }
    lua_pop(L, 1);
  }
  if (ms) lua_pop(L, 2);
  return kl_lua__push_outputs(L, nout, outs, d->id);
}

static const char *opt_target(lua_State *L, int idx, kl_program *p, const char *what) {
  if (lua_isnoneornil(L, idx)) return NULL;
  const char *t = luaL_checkstring(L, idx);
  for (int i = 0; i < kl_program_ntargets(p); i++)
    if (!strcmp(kl_program_target(p, i), t)) return t;
  int n = kl_program_ntargets(p);
  const char **names = kl_lua__tmp(L, (size_t)(n + 1) * sizeof *names);
  for (int i = 0; i < n; i++) names[i] = kl_program_target(p, i);
  kl_lua__unknown_name(L, what, "target", "the program's targets", t, names, n);
  return NULL;
}

static void set_ints(lua_State *L, const char *const *names, const int64_t *v, int n) {
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)v[i]);
    lua_setfield(L, -2, names[i]);
  }
}
/* {vgpr, agpr, sgpr, lds_bytes, scratch_bytes, vgpr_spills, sgpr_spills, wave_size,
 * occupancy, occupancy_limit, occupancy_by = {vgpr, sgpr, lds, max}, loop = {found, instrs,
 * mfma, wmma, global_load, global_store, ds_read, ds_write, ds_write_narrow, s_waitcnt,
 * s_barrier, valu_fma}} */
static void push_amdgpu_stats(lua_State *L, const kl_amdgpu_stats *s) {
  static const char *const n1[] = { "vgpr",        "agpr",        "sgpr",      "lds_bytes", "scratch_bytes",
                                    "vgpr_spills", "sgpr_spills", "wave_size", "occupancy" };
  const int64_t v1[] = { s->vgpr,        s->agpr,        s->sgpr,      s->lds,      s->scratch,
                         s->vgpr_spills, s->sgpr_spills, s->wave_size, s->occupancy };
  lua_createtable(L, 0, 12);
  set_ints(L, n1, v1, 9);
  kl_lua__set_str(L, "occupancy_limit", s->limited);
  static const char *const n2[] = { "vgpr", "sgpr", "lds", "max" };
  const int64_t v2[] = { s->occ_vgpr, s->occ_sgpr, s->occ_lds, s->occ_max };
  lua_createtable(L, 0, 4);
  set_ints(L, n2, v2, 4);
  lua_setfield(L, -2, "occupancy_by");
  const kl_amdgpu_loop_mix *x = &s->loop;
  static const char *const n3[] = { "instrs",       "mfma",      "wmma",     "global_load",
                                    "global_store", "ds_read",   "ds_write", "ds_write_narrow",
                                    "s_waitcnt",    "s_barrier", "valu_fma" };
  const int64_t v3[] = { x->instrs,   x->mfma,      x->wmma,    x->gload,   x->gstore,  x->ds_read,
                         x->ds_write, x->ds_narrow, x->waitcnt, x->barrier, x->valu_fma };
  lua_createtable(L, 0, 12);
  kl_lua__set_bool(L, "found", x->found);
  set_ints(L, n3, v3, 11);
  lua_setfield(L, -2, "loop");
}

/* The kernel table's __index: llvm_ir printed on first use (kl_program_kernel_llvm_ir) and
 * ir, the IR snapshots (kl_program_kernel_ir), then kept in the table; upvalues: the
 * program, the target (or nil), the kernel index. */
static int kernel_lazy_index(lua_State *L) {
  if (lua_type(L, 2) != LUA_TSTRING) return 0;
  const char *key = lua_tostring(L, 2);
  bool llvm = !strcmp(key, "llvm_ir");
  if (!llvm && strcmp(key, "ir") != 0) return 0;
  lua_pushvalue(L, lua_upvalueindex(1));
  kl_program *p;
  check_prog(L, lua_gettop(L), &p);
  const char *t = lua_tostring(L, lua_upvalueindex(2));
  int i = (int)lua_tointeger(L, lua_upvalueindex(3));
  if (llvm) {
    const char *text = kl_program_kernel_llvm_ir(p, t, i);
    if (!text) return 0;
    lua_pushstring(L, text);
  } else { /* ir: {{pass=, text=}...}, the snapshots (taken on the first read where lazy) */
    int n = 0;
    const kl_snapshot *ir = kl_program_kernel_ir(p, t, i, &n);
    lua_createtable(L, n, 0);
    for (int s = 0; s < n; s++) {
      lua_createtable(L, 0, 2);
      kl_lua__set_str(L, "pass", ir[s].pass);
      kl_lua__set_str(L, "text", ir[s].text);
      lua_rawseti(L, -2, s + 1);
    }
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, 1, key);
  return 1;
}

/* p:kernels([target]) -> list of kernel tables (AMDGPU targets: also code_object, as
 * p:code_object, and amdgpu, push_amdgpu_stats) */
static int prog_code_object(lua_State *L);
static int prog_kernels(lua_State *L) {
  kl_program *p;
  check_prog(L, 1, &p);
  const char *t = opt_target(L, 2, p, "kernels");
  int n = kl_program_nkernels(p, t);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    const kl_kernel_info *k = kl_program_kernel(p, t, i);
    lua_createtable(L, 0, 12);
    kl_lua__set_str(L, "name", k->name);
    kl_lua__set_str(L, "kind", k->kind);
    kl_lua__set_int(L, "grid", (lua_Integer)k->grid_size);
    kl_lua__set_int(L, "block", (lua_Integer)k->block_size);
    kl_lua__set_int(L, "lds_bytes", (lua_Integer)k->lds_bytes);
    kl_lua__set_str(L, "perf_config", k->perf_config);
    /* perf_config_source: "user" (perf_config=), "tuned (db)" (a tuning database record),
     * "heuristic"; problem_key / problem: the tuning key and its readable summary */
    kl_lua__set_str(L, "perf_config_source", k->perf_config_source ? k->perf_config_source : "");
    kl_lua__set_str(L, "problem_key", k->problem_key ? k->problem_key : "");
    kl_lua__set_str(L, "problem", k->problem ? k->problem : "");
    /* primary_inputs: the argument names of the inputs whose views drive the
     * vectorization of fused loads (input fusion), in GEMM operand order */
    lua_newtable(L);
    for (const char *s = k->primary_inputs ? k->primary_inputs : "", *e; *s; s = *e ? e + 1 : e) {
      e = strchr(s, ',');
      if (!e) e = s + strlen(s);
      lua_pushlstring(L, s, (size_t)(e - s));
      lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    }
    lua_setfield(L, -2, "primary_inputs");
    /* output_swizzle: rock-output-swizzle's decision ("applied", "refused: <reason>", "" if none) */
    kl_lua__set_str(L, "output_swizzle", k->output_swizzle ? k->output_swizzle : "");
    /* fragment_loads: how an mma.sync GEMM reads its LDS fragments ("ldmatrix", "lds", "mixed"; "" if none) */
    kl_lua__set_str(L, "fragment_loads", k->fragment_loads ? k->fragment_loads : "");
    /* async_copy / pipeline_stages: the cp.async K-loop pipeline ("A,B", "A", "B", "none"; "" and 0 if off) */
    kl_lua__set_str(L, "async_copy", k->async_copy ? k->async_copy : "");
    kl_lua__set_int(L, "pipeline_stages", (lua_Integer)k->pipeline_stages);
    /* tma: the wgmma operands loaded through TMA (passes/rock_tma.h; "" when the option is off) */
    kl_lua__set_str(L, "tma", k->tma ? k->tma : "");
    /* ws: warp specialization of the TMA K loop ("on", "off (why)"; "" when the option is 0) */
    kl_lua__set_str(L, "ws", k->ws ? k->ws : "");
    /* tma_swizzle: the TMA tiles' LDS swizzle in bytes (128, 64, 32; 0 none or no TMA) */
    kl_lua__set_int(L, "tma_swizzle", (lua_Integer)k->tma_swizzle);
    /* fp8_promote: the fp8 wgmma's promotion interval in K elements (0: one level; passes/rock_wgmma.h) */
    kl_lua__set_int(L, "fp8_promote", (lua_Integer)k->fp8_promote);
    /* raster_group_m: the GEMM's workgroup order (m-tiles per group; 0 row order; passes/gemm_raster.h) */
    kl_lua__set_int(L, "raster_group_m", (lua_Integer)k->raster_group_m);
    /* persistent: persistent tiles ("on", "off (why)"; "" when the option is 0); grid_persistent: 1 where
     * the launch takes min(grid_size (the tiles), SMs x resident workgroups) workgroups */
    kl_lua__set_str(L, "persistent", k->persistent ? k->persistent : "");
    kl_lua__set_int(L, "grid_persistent", (lua_Integer)k->grid_persistent);
    /* cluster: thread-block clusters ("2x1" (C m-tiles share B), "1x2" (C n-tiles share A), ...,
     * "off (why)"; "" when the option is 1); cluster_size: the CTAs per cluster (0 none) */
    kl_lua__set_str(L, "cluster", k->cluster ? k->cluster : "");
    kl_lua__set_int(L, "cluster_size", (lua_Integer)k->cluster_size);
    /* async_lds_layout: the async stages' LDS layout and operands ("xor:A,B", "krow:A", "kgroup"; "" if none) */
    kl_lua__set_str(L, "async_lds_layout", k->async_lds_layout ? k->async_lds_layout : "");
    /* amd_lds_layout: "xor" where the AMDGPU K loop's LDS tiles are the unpadded xor ones, "xor1" the kpack-1 xor1 tiles ("" if not) */
    kl_lua__set_str(L, "amd_lds_layout", k->amd_lds_layout ? k->amd_lds_layout : "");
    kl_lua__set_int(L, "ninputs", k->ninputs);
    lua_createtable(L, k->nargs, 0);
    for (int a = 0; a < k->nargs; a++) {
      lua_createtable(L, 0, 3);
      kl_lua__set_str(L, "name", k->arg_names[a]);
      kl_lua__set_str(L, "type", k->arg_types[a]);
      kl_lua__set_bool(L, "input", a < k->ninputs);
      lua_rawseti(L, -2, a + 1);
    }
    lua_setfield(L, -2, "args");
    /* accesses: the kernel's global loads and stores as emitted, per argument and width */
    lua_createtable(L, k->naccesses, 0);
    for (int a = 0; a < k->naccesses; a++) {
      lua_createtable(L, 0, 4);
      kl_lua__set_str(L, "arg", k->accesses[a].arg);
      kl_lua__set_str(L, "kind", k->accesses[a].kind);
      kl_lua__set_int(L, "bytes", (lua_Integer)k->accesses[a].bytes);
      kl_lua__set_int(L, "count", k->accesses[a].count);
      lua_rawseti(L, -2, a + 1);
    }
    lua_setfield(L, -2, "accesses");
    /* ir (the IR snapshots) and llvm_ir: made when read (they are large; the compile may
     * have kept the snapshots lazily, driver/program.h) */
    lua_createtable(L, 0, 1);
    lua_pushvalue(L, 1);
    if (t)
      lua_pushstring(L, t);
    else
      lua_pushnil(L);
    lua_pushinteger(L, i);
    lua_pushcclosure(L, kernel_lazy_index, 3);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, -2);
    const kl_binary_info *b = kl_program_binary(p, t, k->name);
    if (b && !strncmp(b->target, "gfx", 3)) { /* the HSACO metadata, as p:code_object */
      lua_pushcfunction(L, prog_code_object);
      lua_pushvalue(L, 1);
      lua_pushstring(L, k->name);
      lua_pushstring(L, b->target);
      lua_call(L, 3, 1);
      lua_setfield(L, -2, "code_object");
      /* amdgpu: registers, occupancy and the main loop's instruction mix (driver/amdgpu_stats.h) */
      kl_amdgpu_stats st;
      char err[256];
      if (kl_amdgpu_stats_read(b->data, b->size, k->name, b->target, k->block_size, &st, err, sizeof err) != KL_OK)
        return kl_lua__rt_error(L, "kernels", "%s", err);
      push_amdgpu_stats(L, &st);
      lua_setfield(L, -2, "amdgpu");
    }
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* p:ir("after:rock-align-tiling" | "rock-align-tiling") -> module text; a pass that left
 * no snapshot is a located error listing those that did. */
static int prog_ir(lua_State *L) {
  kl_program *p;
  check_prog(L, 1, &p);
  const char *name = luaL_checkstring(L, 2);
  const char *s = kl_program_ir(p, name);
  if (!s) {
    if (!kl_program_ir_pass(p, 0))
      return kl_lua__rt_error(L, "program:ir", "no IR after '%s': this program keeps no IR snapshots (a loaded bundle)",
                              name);
    int n = 0;
    const char **names = ir_pass_names(L, p, &n);
    return kl_lua__unknown_name(L, "program:ir", "pass", "passes", strncmp(name, "after:", 6) ? name : name + 6, names,
                                n);
  }
  lua_pushstring(L, s);
  return 1;
}

/* p:plan([target]) -> {target=, slots={{kind=, name=, type=, bytes=, output=}},
 * steps={...}, outputs={slot numbers}}; every step has kind ("launch", "prefill", "copy",
 * "alloc_workspace", "free"), token (the token it yields) and waits (tokens, ascending),
 * plus: launch kernel=, grid=, block=, lds_bytes=, args={slot numbers}, ninputs=;
 * prefill slot=, value=; copy src=, dst=, bytes=; alloc_workspace slot=, bytes=; free slot=.
 * Slot numbers are 1-based positions in slots; tokens are the plan's own numbers. */
static int prog_plan(lua_State *L) {
  kl_program *p;
  check_prog(L, 1, &p);
  const char *t = opt_target(L, 2, p, "plan");
  const kl_bundle_target *P = kl_program_plan(p, t);
  lua_createtable(L, 0, 4);
  kl_lua__set_str(L, "target", P->name);
  lua_createtable(L, P->nslots, 0);
  for (int i = 0; i < P->nslots; i++) {
    const kl_bundle_slot *S = &P->slots[i];
    lua_createtable(L, 0, 5);
    kl_lua__set_str(L, "kind",
                    S->kind == KL_BUNDLE_PARAM          ? "param"
                        : S->kind == KL_BUNDLE_CONSTANT ? "constant"
                                                        : "result");
    if (S->name && *S->name) { kl_lua__set_str(L, "name", S->name); }
    kl_lua__set_str(L, "type", S->t.type);
    kl_lua__set_int(L, "bytes", (lua_Integer)S->t.bytes);
    if (S->output >= 0) { kl_lua__set_int(L, "output", S->output + 1); }
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "slots");
  lua_createtable(L, P->nsteps, 0);
  for (int i = 0; i < P->nsteps; i++) {
    const kl_bundle_step *s = &P->steps[i];
    lua_createtable(L, 0, 8);
    kl_lua__set_str(L, "kind", kl_bundle_step_kind_name(s->kind));
    kl_lua__set_int(L, "token", s->token);
    lua_createtable(L, s->nwaits, 0);
    for (int w = 0; w < s->nwaits; w++) {
      lua_pushinteger(L, s->waits[w]);
      lua_rawseti(L, -2, w + 1);
    }
    lua_setfield(L, -2, "waits");
    if (s->kind == KL_BUNDLE_LAUNCH) {
      const kl_bundle_kernel *k = &P->kernels[s->kernel];
      kl_lua__set_str(L, "kernel", k->name);
      kl_lua__set_int(L, "grid", (lua_Integer)k->grid[0]);
      kl_lua__set_int(L, "block", (lua_Integer)k->block[0]);
      kl_lua__set_int(L, "lds_bytes", (lua_Integer)k->lds_bytes);
      kl_lua__set_int(L, "ninputs", k->ninputs);
      lua_createtable(L, s->nargs, 0);
      for (int a = 0; a < s->nargs; a++) {
        lua_pushinteger(L, s->args[a] + 1);
        lua_rawseti(L, -2, a + 1);
      }
      lua_setfield(L, -2, "args");
    } else if (s->kind == KL_BUNDLE_COPY) {
      kl_lua__set_int(L, "src", s->src + 1);
      kl_lua__set_int(L, "dst", s->dst + 1);
      kl_lua__set_int(L, "bytes", (lua_Integer)s->bytes);
    } else {
      kl_lua__set_int(L, "slot", s->slot + 1);
      if (s->kind == KL_BUNDLE_PREFILL) {
        lua_pushnumber(L, s->value);
        lua_setfield(L, -2, "value");
      }
      if (s->kind == KL_BUNDLE_ALLOC_WORKSPACE) { kl_lua__set_int(L, "bytes", (lua_Integer)s->bytes); }
    }
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "steps");
  lua_createtable(L, P->noutputs, 0);
  for (int i = 0; i < P->noutputs; i++) {
    lua_pushinteger(L, P->outputs[i] + 1);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "outputs");
  return 1;
}

/* p:plan_text([target]) -> the plan as a listing, one slot or step a line (plan.h). */
static int prog_plan_text(lua_State *L) {
  kl_program *p;
  check_prog(L, 1, &p);
  const char *t = opt_target(L, 2, p, "plan_text");
  char *text = kl_plan_text(kl_program_plan(p, t));
  lua_pushstring(L, text);
  free(text);
  return 1;
}

/* p:binary(kernel [, target]) -> string (host object / PTX / HSACO) */
/* The binary of kernel (arg 2) for the target (arg 3, optional): the shared argument
 * handling of p:binary, p:code_object and p:disasm; what names the method in errors. */
static const kl_binary_info *binary_arg(lua_State *L, const char *what) {
  kl_program *p;
  check_prog(L, 1, &p);
  const char *kernel = luaL_checkstring(L, 2);
  const char *t = opt_target(L, 3, p, what);
  const kl_binary_info *b = kl_program_binary(p, t, kernel);
  if (!b) unknown_kernel(L, p, t, what, kernel);
  return b;
}
static int prog_binary(lua_State *L) {
  const kl_binary_info *b = binary_arg(L, "binary");
  lua_pushlstring(L, b->data, b->size);
  return 1;
}

/* p:code_object(kernel [, target]) -> what the AMDGPU code object (HSACO) says about the
 * kernel: {elf_type ("DYN"), machine (224), chip, has_symbol, has_descriptor, vgpr, sgpr,
 * agpr, lds_bytes, scratch_bytes, kernarg_size, wavefront_size, max_flat_workgroup_size,
 * vgpr_spills, sgpr_spills}; an error for non-AMDGPU targets or a malformed object. */
static int prog_code_object(lua_State *L) {
  const kl_binary_info *b = binary_arg(L, "code_object");
  const char *kernel = lua_tostring(L, 2);
  if (strncmp(b->target, "gfx", 3))
    return kl_lua__rt_error(L, "code_object", "target %s has no AMDGPU code object", b->target);
  kl_hsaco_info info;
  char err[256];
  if (kl_hsaco_parse(b->data, b->size, &info, err, sizeof err) != KL_OK)
    return kl_lua__rt_error(L, "code_object", "%s", err);
  const kl_hsaco_kernel *k = kl_hsaco_find_kernel(&info, kernel);
  lua_newtable(L);
  kl_lua__set_str(L, "elf_type", info.elf_type == 3 ? "DYN" : "other");
  kl_lua__set_int(L, "machine", info.machine);
  kl_lua__set_str(L, "chip", info.chip);
  kl_lua__set_bool(L, "has_symbol", k && k->has_function_symbol);
  kl_lua__set_bool(L, "has_descriptor", k && k->has_kd_symbol);
  if (k) {
    const struct {
      const char *name;
      int64_t v;
    } f[] = { { "vgpr", k->vgpr_count },
              { "sgpr", k->sgpr_count },
              { "agpr", k->agpr_count },
              { "lds_bytes", k->lds_bytes },
              { "scratch_bytes", k->scratch_bytes },
              { "kernarg_size", k->kernarg_size },
              { "wavefront_size", k->wavefront_size },
              { "max_flat_workgroup_size", k->max_flat_workgroup_size },
              { "vgpr_spills", k->vgpr_spill_count },
              { "sgpr_spills", k->sgpr_spill_count } };
    for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
      lua_pushinteger(L, f[i].v);
      lua_setfield(L, -2, f[i].name);
    }
  }
  kl_hsaco_info_free(&info);
  return 1;
}
/* p:disasm(kernel [, target]) -> the kernel's machine code as text: the disassembled
 * HSACO for AMDGPU targets, the PTX for NVIDIA targets. */
static int prog_disasm(lua_State *L) {
  const kl_binary_info *b = binary_arg(L, "disasm");
  if (!strncmp(b->target, "sm_", 3)) {
    lua_pushlstring(L, b->data, b->size);
    return 1;
  }
  if (strncmp(b->target, "gfx", 3)) return kl_lua__rt_error(L, "disasm", "no disassembler for target %s", b->target);
  char err[256];
  char *text = kl_disasm_hsaco(b->data, b->size, b->target, err, sizeof err);
  if (!text) return kl_lua__rt_error(L, "disasm", "%s", err);
  lua_pushstring(L, text);
  free(text);
  return 1;
}

/* p:asm(kernel [, target]) -> the kernel's assembly text (host: the host ISA, AMDGPU: the
 * ISA, NVIDIA: PTX); p:llvm_opt(kernel [, target]) -> its LLVM IR after LLVM's optimisation
 * pipeline (p:kernels()[i].llvm_ir is the IR before it); p:object(kernel [, target]) -> a
 * relocatable ELF object (host, AMDGPU before linking). Generated from the kernel's LLVM
 * IR on each call (driver/llvm_stage.h). */
static int llvm_stage(lua_State *L, kl_llvm_stage_kind stage, const char *what) {
  kl_program *p;
  check_prog(L, 1, &p);
  const char *kernel = luaL_checkstring(L, 2);
  const char *t = opt_target(L, 3, p, what);
  const kl_kernel_info *k = NULL;
  for (int i = 0; i < kl_program_nkernels(p, t) && !k; i++)
    if (!strcmp(kl_program_kernel(p, t, i)->name, kernel)) k = kl_program_kernel(p, t, i);
  if (!k) return unknown_kernel(L, p, t, what, kernel);
  char err[1024] = "";
  size_t n = 0;
  int ki = 0;
  while (kl_program_kernel(p, t, ki) != k) ki++;
  char *out = kl_llvm_stage(kl_program_kernel_llvm_ir(p, t, ki), t ? t : kl_program_target(p, 0), stage, &n, err,
                            sizeof err);
  if (!out) return kl_lua__rt_error(L, what, "%s", err);
  lua_pushlstring(L, out, n);
  free(out);
  return 1;
}
static int prog_asm(lua_State *L) { return llvm_stage(L, KL_STAGE_ASM, "asm"); }
static int prog_llvm_opt(lua_State *L) { return llvm_stage(L, KL_STAGE_LLVM_OPT, "llvm_opt"); }
static int prog_object(lua_State *L) { return llvm_stage(L, KL_STAGE_OBJ, "object"); }

static int pp_compile_ms(lua_State *L) {
  kl_program *p;
  check_prog(L, 1, &p);
  lua_pushnumber(L, kl_program_compile_ms(p));
  return 1;
}
static int pp_compile_phases(lua_State *L) {
  kl_program *p;
  check_prog(L, 1, &p);
  lua_newtable(L);
  double ms;
  const char *name;
  for (int i = 0; (name = kl_program_compile_phase(p, i, &ms)); i++) {
    lua_pushnumber(L, ms);
    lua_setfield(L, -2, name);
  }
  return 1;
}
static int pp_from_cache(lua_State *L) {
  prog_ud *u = check_prog(L, 1, NULL);
  lua_pushboolean(L, u->from_cache);
  return 1;
}
static int pp_disk_cache(lua_State *L) {
  kl_program *p;
  check_prog(L, 1, &p);
  const char *d = kl_program_disk_cache(p);
  if (*d)
    lua_pushstring(L, d);
  else
    lua_pushnil(L);
  return 1;
}
static int pp_targets(lua_State *L) {
  kl_program *p;
  check_prog(L, 1, &p);
  int n = kl_program_ntargets(p);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, kl_program_target(p, i));
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}
static int pp_nkernels(lua_State *L) {
  kl_program *p;
  check_prog(L, 1, &p);
  lua_pushinteger(L, kl_program_nkernels(p, NULL));
  return 1;
}


/* p:load_kernels([{device = dev | "name"}]) — loads the kernels on the device now (compile-latency
 * benchmarks: graph -> loaded kernel); returns the program. */
static int prog_load(lua_State *L) {
  kl_program *p;
  prog_ud *u = check_prog(L, 1, &p);
  lua_settop(L, 2);
  busy_program(L, "p:load_kernels");
  if (!lua_isnil(L, 2) && !lua_istable(L, 2))
    return kl_lua__rt_error(L, "load_kernels", "options must be a table {device = ...}");
  kl_lua__check_opts(L, 2, "load_kernels", DEVICE_OPTS);
  kl_lua_devref *d = run_device(L, p, 2);
  bool first = kl_lua__devs_add(&u->h->devs, &u->h->n, d);
  kl_lua_devhold *dh = kl_lua__ctx_devhold(prog_ctx(L, 1));
  if (dh)
    kl_lua__devs_add(&dh->devs, &dh->n, d);
  else if (first)
    d->refs++;
  char err[4096] = "";
  if (kl_program_load_kernels(p, d->dev, err, sizeof err) != KL_OK)
    return kl_lua__err_error(L, "load_kernels", "load", err, "failed");
  lua_settop(L, 1);
  return 1;
}

static const char *const PREPARE_OPTS[] = { "device", "max_sets", "poison", "rotate_bytes", "sets", NULL };
static int prog_prepare(lua_State *L) {
  const char *what = "prepare";
  kl_program *p;
  prog_ud *u = check_prog(L, 1, &p);
  lua_settop(L, 3);
  busy_program(L, "p:prepare");
  if (!lua_istable(L, 2))
    return kl_lua__rt_error(L, what, "inputs must be a table {name = tensor, ...}, got a %s", luaL_typename(L, 2));
  if (!lua_isnil(L, 3) && !lua_istable(L, 3))
    return kl_lua__rt_error(L, what, "options must be a table {device = ..., sets = ...}");
  kl_prepare_opts po = { 0 };
  if (lua_istable(L, 3)) {
    kl_lua__check_opts(L, 3, what, PREPARE_OPTS);
    static const char *const ints[] = { "sets", "rotate_bytes", "max_sets" };
    for (int i = 0; i < 3; i++) {
      if (lua_getfield(L, 3, ints[i]) != LUA_TNIL) {
        lua_Integer n;
        if (lua_isinteger(L, -1))
          n = lua_tointeger(L, -1);
        else if (lua_type(L, -1) == LUA_TNUMBER && lua_tonumber(L, -1) == (lua_Number)(lua_Integer)lua_tonumber(L, -1))
          n = (lua_Integer)lua_tonumber(L, -1);
        else
          return kl_lua__rt_error(L, what, "%s must be an integer", ints[i]);
        if (n < 0 || (i != 1 && n > 4096))
          return kl_lua__rt_error(L, what, "%s must be between 0 and %s", ints[i], i == 1 ? "2^63" : "4096");
        if (i == 0)
          po.sets = (int)n;
        else if (i == 1)
          po.rotate_bytes = (size_t)n;
        else
          po.max_sets = (int)n;
      }
      lua_pop(L, 1);
    }
    if (lua_getfield(L, 3, "poison") != LUA_TNIL) po.no_poison = !lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  kl_lua_devref *d = run_device(L, p, 3);
  int k = 0;
  kl_named_tensor *in = kl_lua__check_named_tensors(L, 2, what, &k);
  check_inputs(L, p, what, in, k);
  /* the program keeps modules loaded on the device: keep the device open as p:run does */
  bool first = kl_lua__devs_add(&u->h->devs, &u->h->n, d);
  kl_lua_devhold *dh = kl_lua__ctx_devhold(prog_ctx(L, 1));
  if (dh)
    kl_lua__devs_add(&dh->devs, &dh->n, d);
  else if (first)
    d->refs++;
  kl_lua_prepared_ud *r = lua_newuserdatauv(L, sizeof *r, 1);
  r->r = NULL;
  r->d = NULL;
  luaL_setmetatable(L, KL_MT_PREPARED);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  char err[4096] = "";
  r->r = kl_program_prepare(p, d->dev, k, in, &po, err, sizeof err);
  if (!r->r) return kl_lua__err_error(L, what, "prepare", err, "failed");
  r->d = d;
  d->refs++;
  return 1;
}

void kl_lua__open_program(lua_State *L) {
  int mod = lua_gettop(L);
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  kl_lua__set_str(L, "__mode", "v");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, REG_HOLDERS);
  if (luaL_newmetatable(L, MT_HOLDER)) {
    lua_pushcfunction(L, holder_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);

  static const luaL_Reg pmeta[] = { { "__tostring", prog_tostring }, { NULL, NULL } };
  static const luaL_Reg pmethods[] = { { "run", prog_run },
                                       { "kernels", prog_kernels },
                                       { "ir", prog_ir },
                                       { "plan", prog_plan },
                                       { "plan_text", prog_plan_text },
                                       { "binary", prog_binary },
                                       { "code_object", prog_code_object },
                                       { "disasm", prog_disasm },
                                       { "asm", prog_asm },
                                       { "llvm_opt", prog_llvm_opt },
                                       { "object", prog_object },
                                       { "prepare", prog_prepare },
                                       { "load_kernels", prog_load },
                                       { NULL, NULL } };
  static const luaL_Reg pprops[] = { { "compile_ms", pp_compile_ms },
                                     { "compile_phases", pp_compile_phases },
                                     { "from_cache", pp_from_cache },
                                     { "disk_cache", pp_disk_cache },
                                     { "targets", pp_targets },
                                     { "nkernels", pp_nkernels },
                                     { NULL, NULL } };
  kl_lua__class(L, mod, KL_MT_PROGRAM, "program", pmethods, pprops, pmeta);

  static const luaL_Reg fns[] = { { "targets", l_targets },
                                  { "target", l_target },
                                  { "compile", l_compile },
                                  { "default_pipeline", l_default_pipeline },
                                  { NULL, NULL } };
  luaL_setfuncs(L, fns, 0);
}
