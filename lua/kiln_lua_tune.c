/* kiln_lua_tune.c — tuning spaces from Lua (driver/tuning_space.h):
 *   kiln.tuning_space(g_or_kernel [, {target = "host", level = "quick"|"full"|"exhaustive",
 *                                     rejected = false}])
 *     -> { "v1:...", ... }            the applicable perf configs, in order (quick: ranked,
 *                                     at most 30, the heuristic's first)
 *     -> list, { {config=, reason=}, ... }   with rejected = true: also what was rejected
 *                                     before any code generation, and why
 *   g_or_kernel: a kiln.graph, a graph func op, or a kernel func / module op holding
 *   rock.gemm ops (read as it is). A graph without a GEMM gives an empty list.
 *   kiln._tune_run(g, {device=, target=, configs={...}, inputs={name=tensor}, jobs=, runs=,
 *                     warmup=, budget_ms=, progress=fn(t)})
 *     -> { {config=, error=, compile_ms=, load_ms=, prepare_ms=, run_ms=, check_ms=, median_ms=,
 *           q1_ms=, q3_ms=, min_ms=, runs=, dropped=, binary_hash=}, ..., compile_wall_ms=,
 *           measure_wall_ms=, jobs= }
 *     corrupt = CONFIG (tests): that candidate's first output is made wrong before the check
 *     (one element, at flat index numel * 2/3), so the check must reject it.
 *     the measuring primitive of kiln.tune (lua/kiln/tune.lua; driver/tune.h); progress
 *     gets {phase=, done=, total=, config=, ms=, best_config=, best_ms=, elapsed_ms=}. */
#include "lua/kiln_lua_rt.h"
#include "driver/tune.h"
#include "driver/tuning_space.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void kl_lua__open_tune(lua_State *L);

static const char *const OPTS[] = { "target", "level", "rejected", NULL };

/* Argument 1 as an op: a kiln.graph table gives its func; pushes it and returns it (NULL, with
 * nothing checked, when it is no op handle). */
static kl_op *graph_arg(lua_State *L) {
  if (lua_istable(L, 1))
    lua_getfield(L, 1, "func");
  else
    lua_pushvalue(L, 1);
  return kl_lua__test(L, -1, KL_LH_OP);
}

static int l_tuning_space(lua_State *L) {
  const char *what = "tuning_space";
  lua_settop(L, 2);
  kl_op *op = graph_arg(L);
  if (!op)
    return kl_lua__rt_error(L, what, "expected a graph (kiln.graph(...)), a graph function or a kernel op, got a %s",
                            luaL_typename(L, 1));
  kl_lua__check(L, -1, KL_LH_OP);
  const char *target = "host", *level = "quick";
  bool rejected = false;
  if (!lua_isnil(L, 2)) {
    if (!lua_istable(L, 2)) return kl_lua__rt_error(L, what, "options must be a table, got a %s", luaL_typename(L, 2));
    kl_lua__check_opts(L, 2, what, OPTS);
    if (lua_getfield(L, 2, "target") != LUA_TNIL) {
      if (lua_type(L, -1) != LUA_TSTRING) return kl_lua__rt_error(L, what, "target must be a string such as \"host\"");
      target = lua_tostring(L, -1);
    }
    if (lua_getfield(L, 2, "level") != LUA_TNIL) {
      if (lua_type(L, -1) != LUA_TSTRING)
        return kl_lua__rt_error(L, what, "level must be \"quick\", \"full\" or \"exhaustive\"");
      level = lua_tostring(L, -1);
    }
    if (lua_getfield(L, 2, "rejected") != LUA_TNIL) rejected = lua_toboolean(L, -1);
  }
  kl_perf_space s;
  int ngemms = 0;
  char err[4096] = "";
  if (kl_tuning_space(op, target, level, &s, &ngemms, err, sizeof err) != KL_OK)
    return kl_lua__rt_error(L, what, "%s", strncmp(err, "tuning space: ", 14) ? err : err + 14);
  lua_createtable(L, s.n, 0);
  int list = lua_gettop(L), n = 0;
  lua_newtable(L);
  int rej = lua_gettop(L), r = 0;
  for (int i = 0; i < s.n; i++) {
    if (!s.c[i].reason) {
      lua_pushstring(L, s.c[i].config);
      lua_rawseti(L, list, ++n);
    } else {
      lua_createtable(L, 0, 2);
      lua_pushstring(L, s.c[i].config);
      lua_setfield(L, -2, "config");
      lua_pushstring(L, s.c[i].reason);
      lua_setfield(L, -2, "reason");
      lua_rawseti(L, rej, ++r);
    }
  }
  kl_perf_space_free(&s);
  return rejected ? 2 : (lua_pop(L, 1), 1);
}

typedef struct progress_st {
  lua_State *L;
  int fn;              /* stack index of the callback, 0 none */
  bool failed;         /* the callback raised: its message is at the top of the stack... kept in the registry */
  const char *corrupt; /* corrupt = CONFIG, or NULL */
} progress_st;

static void on_progress(const kl_tune_progress *p, void *user) {
  progress_st *st = user;
  if (!st->fn || st->failed) return;
  lua_State *L = st->L;
  lua_pushvalue(L, st->fn);
  lua_createtable(L, 0, 8);
  kl_lua__set_str(L, "phase", p->phase);
  kl_lua__set_int(L, "done", p->done);
  kl_lua__set_int(L, "total", p->total);
  if (p->config) kl_lua__set_str(L, "config", p->config);
  if (p->ms >= 0) kl_lua__set_num(L, "ms", p->ms);
  if (p->best_config) kl_lua__set_str(L, "best_config", p->best_config);
  if (p->best_ms >= 0) kl_lua__set_num(L, "best_ms", p->best_ms);
  kl_lua__set_num(L, "elapsed_ms", p->elapsed_ms);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
    st->failed = true;
    lua_setfield(L, LUA_REGISTRYINDEX, "kiln.tune_progress_error");
  }
}

static const char *const RUN_OPTS[] = { "device", "target",    "configs",  "inputs",  "jobs", "runs",
                                        "warmup", "budget_ms", "progress", "corrupt", NULL };

/* corrupt = CONFIG (tests): that candidate's first output gets its element at flat index
 * numel * 2/3 moved far out of any tolerance, as a wrong kernel would. */
static void corrupt_output(const char *config, int n, kl_tensor **outs, void *user) {
  progress_st *st = user;
  if (!st->corrupt || strcmp(config, st->corrupt) || n < 1) return;
  int64_t k = kl_tensor_numel(outs[0]);
  if (k < 1) return;
  int64_t at = k * 2 / 3;
  double v = kl_tensor_get_flat(outs[0], at);
  kl_tensor_set_flat(outs[0], at, v >= 0 ? v - 64 : v + 64);
}

static int opt_int(lua_State *L, int t, const char *k, int def) {
  int v = def;
  if (lua_getfield(L, t, k) != LUA_TNIL) {
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0 || lua_tointeger(L, -1) > 1000000)
      return kl_lua__rt_error(L, "tune", "%s must be a non-negative integer", k);
    v = (int)lua_tointeger(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

static int l_tune_run(lua_State *L) {
  const char *what = "tune";
  lua_settop(L, 2);
  graph_arg(L);
  kl_op *g = kl_lua__check(L, -1, KL_LH_OP);
  luaL_checktype(L, 2, LUA_TTABLE);
  kl_lua__check_opts(L, 2, what, RUN_OPTS);
  kl_tune_opts o = { 0 };
  if (lua_getfield(L, 2, "device") == LUA_TSTRING) {
    lua_pushcfunction(L, kl_lua__l_device);
    lua_insert(L, -2);
    lua_call(L, 1, 1);
  }
  kl_lua_devref *d = kl_lua__check_device(L, lua_gettop(L));
  o.dev = d->dev;
  if (lua_getfield(L, 2, "target") == LUA_TSTRING) o.target = lua_tostring(L, -1);
  if (lua_getfield(L, 2, "configs") != LUA_TTABLE)
    return kl_lua__rt_error(L, what, "configs must be a list of strings");
  int ct = lua_gettop(L);
  int n = (int)luaL_len(L, ct);
  const char **cfgs = kl_lua__tmp(L, (size_t)(n ? n : 1) * sizeof *cfgs);
  for (int i = 1; i <= n; i++) {
    if (lua_geti(L, ct, i) != LUA_TSTRING) return kl_lua__rt_error(L, what, "configs[%d] must be a string", i);
    cfgs[i - 1] = lua_tostring(L, -1); /* the configs table keeps it */
    lua_pop(L, 1);
  }
  o.nconfigs = n;
  o.configs = cfgs;
  if (lua_getfield(L, 2, "inputs") != LUA_TTABLE) return kl_lua__rt_error(L, what, "inputs must be a table");
  o.inputs = kl_lua__check_named_tensors(L, lua_gettop(L), what, &o.ninputs);
  o.jobs = opt_int(L, 2, "jobs", 0);
  o.runs = opt_int(L, 2, "runs", 0);
  o.warmup = opt_int(L, 2, "warmup", 0);
  if (lua_getfield(L, 2, "budget_ms") == LUA_TNUMBER) o.budget_ms = lua_tonumber(L, -1);
  progress_st st = { L, 0, false, NULL };
  o.user = &st;
  if (lua_getfield(L, 2, "progress") != LUA_TNIL) {
    if (!lua_isfunction(L, -1)) return kl_lua__rt_error(L, what, "progress must be a function");
    st.fn = lua_gettop(L);
    o.progress = on_progress;
  }
  if (lua_getfield(L, 2, "corrupt") != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TSTRING) return kl_lua__rt_error(L, what, "corrupt must be a config string");
    st.corrupt = lua_tostring(L, -1); /* the options table keeps it */
    o.corrupt_output = corrupt_output;
  }
  kl_tune_report rep;
  char err[4096] = "";
  if (kl_tune_run(g, &o, &rep, err, sizeof err) != KL_OK) return kl_lua__rt_error(L, what, "%s", err);
  if (st.failed) {
    kl_tune_report_free(&rep);
    lua_getfield(L, LUA_REGISTRYINDEX, "kiln.tune_progress_error");
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "kiln.tune_progress_error");
    return kl_lua__rt_error(L, what, "the progress callback failed: %s",
                            lua_isstring(L, -1) ? lua_tostring(L, -1) : "(no message)");
  }
  lua_createtable(L, rep.n, 3);
  for (int i = 0; i < rep.n; i++) {
    const kl_tune_result *r = &rep.r[i];
    lua_createtable(L, 0, 10);
    kl_lua__set_str(L, "config", r->config);
    if (r->error) kl_lua__set_str(L, "error", r->error);
    kl_lua__set_num(L, "compile_ms", r->compile_ms);
    kl_lua__set_num(L, "load_ms", r->load_ms);
    kl_lua__set_num(L, "prepare_ms", r->prepare_ms);
    kl_lua__set_num(L, "run_ms", r->run_ms);
    kl_lua__set_num(L, "check_ms", r->check_ms);
    if (!r->error) {
      kl_lua__set_num(L, "median_ms", r->median_ms);
      kl_lua__set_num(L, "q1_ms", r->q1_ms);
      kl_lua__set_num(L, "q3_ms", r->q3_ms);
      kl_lua__set_num(L, "min_ms", r->min_ms);
      kl_lua__set_int(L, "runs", r->runs);
      kl_lua__set_int(L, "dropped", r->dropped);
    }
    char h[32];
    snprintf(h, sizeof h, "%016llx", r->binary_hash);
    kl_lua__set_str(L, "binary_hash", h);
    lua_rawseti(L, -2, i + 1);
  }
  kl_lua__set_num(L, "compile_wall_ms", rep.compile_wall_ms);
  kl_lua__set_num(L, "measure_wall_ms", rep.measure_wall_ms);
  kl_lua__set_int(L, "jobs", rep.jobs);
  kl_tune_report_free(&rep);
  return 1;
}

/* kiln._isatty(fd) -> bool; kiln._exe_path() -> the running executable's path or nil
 * (for kiln tune's progress bar and the Slurm batch script). */
static int l_isatty(lua_State *L) {
  lua_pushboolean(L, isatty((int)luaL_checkinteger(L, 1)));
  return 1;
}

static int l_exe_path(lua_State *L) {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return lua_pushnil(L), 1;
  buf[n] = 0;
  lua_pushstring(L, buf);
  return 1;
}

void kl_lua__open_tune(lua_State *L) {
  static const luaL_Reg fns[] = { { "tuning_space", l_tuning_space },
                                  { "_tune_run", l_tune_run },
                                  { "_isatty", l_isatty },
                                  { "_exe_path", l_exe_path },
                                  { NULL, NULL } };
  luaL_setfuncs(L, fns, 0);
}
