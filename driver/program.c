/* program.c — compile driver (pipeline per target, lowering, binaries), the
 * in-memory compile cache and the executor of host plans (driver/plan.h). */
#include "driver/program.h"
#include "driver/plan_exec.h"
#include "driver/disk_cache.h"
#include "driver/tuning_db.h"
#include "core/dialect_graph.h"
#include "core/dialect_rock.h"
#include "core/print.h"
#include "core/verify.h"
#include "core/target.h"
#include "passes/lower_to_llvm.h"
#include "passes/rock_tma.h"
#include "codegen/codegen_target.h"
#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "core/env.h"
#include "core/hashmap.h"
#include <stdatomic.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

/* The kernels of one variant loaded on one device. It watches the device: when the
 * device is destroyed first, loaded_device_gone unloads the modules and drops the entry
 * (so a later device at the same address is never mistaken for it). */
typedef struct loaded {
  kl_device *dev;
  struct variant *v;
  kl_dev_watch *watch;
  kl_dev_module **mods;
  kl_dev_kernel **kernels;
  struct loaded *next;
} loaded;

typedef struct variant {
  const char *target;
  const kl_target *desc;
  kl_op *module; /* compiled module (context arena) */
  kl_op *graph;  /* the graph func after the pipeline (the plan's IR) */
  kl_plan plan;  /* the host plan (driver/plan.h); its kernels are those below, in order */
  int nkernels;
  kl_kernel_info *kernels;
  kl_binary *bins;
  kl_binary_info *bin_info;
  unsigned load_flags; /* KL_LOAD_TRUSTED for binaries compiled here; 0 from a bundle */
  /* The IR snapshots: taken during the compile where a callback or a pass may see the IR
   * (on_ir, ir_in_context) or KILN_DEBUG's remarks are on, else on the first read
   * (ensure_snapshots: pm re-run on a clone of source). */
  kl_pass_manager *pm; /* the pipeline as it ran (options set), until the lazy snapshots are taken */
  kl_op *source;       /* the graph as compiled (a clone of its own), until then; NULL: taken, or none kept */
  int nsnap;
  kl_snapshot *snaps; /* module text after each pass */
  int nfsnap;
  struct fsnap {
    const char *pass, *func;
    char *text;
  } * fsnaps; /* each function after each pass (until take_kernel_snaps) */
  struct ksnaps {
    int n;
    kl_snapshot *ir;
  } * kir; /* per kernel: its IR after each pass that had it */
  loaded *loads;
  const char *tuned; /* rock-gemm-to-gridwise's tuned option ("" none) */
  kl_plan_tmas *tma; /* per kernel, its tensor-map parameters (plan_exec.h); NULL when no kernel has any */
  bool *persistent;  /* per kernel, grid_persistent (plan_exec.h); NULL when no kernel is */
  double phase_ms[KL_COMPILE_NPHASES]; /* where its compile's wall time went (kl_program_compile_phase) */
} variant;

struct kl_program {
  int refcount;
  kl_ctx *ctx;
  int nvariants;
  variant *v;
  double compile_ms;
  bool from_cache;
  char *key;
  char *disk;   /* kl_program_disk_cache; NULL = "" */
  kl_arena *ir; /* the IR of its compile (modules, graphs), freed with it; NULL: in the context */
};

#define PIPELINE_HEAD                                                                                           \
  "fp8-compute,reduce-split,split-k-workspace,graph-partition,graph-to-rock,rock-regularize,rock-conv-to-gemm," \
  "rock-gemm-to-"                                                                                               \
  "gridwise,"
#define PIPELINE_TAIL                                                                                                 \
  "rock-blockwise-to-threadwise,rock-output-swizzle,rock-align-tiling,rock-plan-steps,rock-lower-loops,canonicalize," \
  "cse,dce"
/* KILN_CP_ASYNC (auto, off, 2..4) sets rock-gridwise-to-blockwise's cp-async option here, so
 * that it is part of the pipeline string (and the compile-cache key); an unknown value warns
 * once and is ignored. */
const char *kl_default_pipeline(void) {
  static const char *const with[] = {
    PIPELINE_HEAD "rock-gridwise-to-blockwise{cp-async=-1}," PIPELINE_TAIL,
    PIPELINE_HEAD "rock-gridwise-to-blockwise{cp-async=1}," PIPELINE_TAIL,
    PIPELINE_HEAD "rock-gridwise-to-blockwise{cp-async=2}," PIPELINE_TAIL,
    PIPELINE_HEAD "rock-gridwise-to-blockwise{cp-async=3}," PIPELINE_TAIL,
    PIPELINE_HEAD "rock-gridwise-to-blockwise{cp-async=4}," PIPELINE_TAIL,
  };
  static const char *const names[] = { "auto", "off", "2", "3", "4" };
  static atomic_flag warned = ATOMIC_FLAG_INIT;
  const char *env = getenv("KILN_CP_ASYNC");
  if (env && *env) {
    for (int i = 0; i < 5; i++)
      if (!strcmp(env, names[i])) return with[i];
    kl_env_warn_once(&warned, "KILN_CP_ASYNC", env, "not auto, off, 2, 3 or 4; using the default");
  }
  return PIPELINE_HEAD "rock-gridwise-to-blockwise," PIPELINE_TAIL;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *const phase_names[KL_COMPILE_NPHASES] = { "passes", "plan", "llvm_ir", "llvm_opt", "llvm_codegen" };

/* ---- cache ----
 * Most recently used last; at most max entries (KL_COMPILE_CACHE_DEFAULT unless
 * kl_compile_cache_max says otherwise): the least recently used one is dropped first. */
typedef struct cache {
  kl_program **progs;
  int n, max;
} cache;
static void cache_free(void *u) {
  cache *c = u;
  for (int i = 0; i < c->n; i++) kl_program_release(c->progs[i]);
  free(c->progs);
  free(c);
}
static cache *get_cache(kl_ctx *ctx) {
  cache *c = kl_ctx_get_user(ctx, "kiln.compile_cache");
  if (!c) {
    c = kl_xcalloc(1, sizeof *c);
    c->max = KL_COMPILE_CACHE_DEFAULT;
    kl_ctx_set_user(ctx, "kiln.compile_cache", c);
    kl_ctx_on_destroy(ctx, cache_free, c);
  }
  return c;
}
/* Drops the least recently used entries until at most keep are left; returns how many. */
static int cache_trim(cache *c, int keep) {
  int drop = c->n > keep ? c->n - (keep > 0 ? keep : 0) : 0;
  for (int i = 0; i < drop; i++) kl_program_release(c->progs[i]);
  if (drop) memmove(c->progs, c->progs + drop, (c->n - drop) * sizeof *c->progs);
  c->n -= drop;
  return drop;
}
static void cache_put(cache *c, kl_program *p) {
  if (c->max <= 0) return;
  cache_trim(c, c->max - 1);
  c->progs = kl_xrealloc(c->progs, (c->n + 1) * sizeof *c->progs);
  c->progs[c->n++] = kl_program_retain(p);
}
static kl_program *cache_get(cache *c, const char *key) {
  for (int i = c->n - 1; i >= 0; i--)
    if (!strcmp(c->progs[i]->key, key)) {
      kl_program *p = c->progs[i];
      memmove(c->progs + i, c->progs + i + 1, (c->n - i - 1) * sizeof *c->progs);
      c->progs[c->n - 1] = p; /* now the most recently used */
      return p;
    }
  return NULL;
}
int kl_compile_cache_max(kl_ctx *ctx, int max) {
  cache *c = get_cache(ctx);
  int prev = c->max;
  if (max >= 0) {
    c->max = max;
    cache_trim(c, max);
  }
  return prev;
}
int kl_compile_cache_count(kl_ctx *ctx) {
  cache *c = kl_ctx_get_user(ctx, "kiln.compile_cache");
  return c ? c->n : 0;
}
int kl_compile_cache_clear(kl_ctx *ctx) {
  cache *c = kl_ctx_get_user(ctx, "kiln.compile_cache");
  return c ? cache_trim(c, 0) : 0;
}

/* ---- program lifetime ---- */
static void loaded_free(loaded *l) {
  for (int i = 0; i < l->v->nkernels; i++)
    if (l->mods[i]) kl_device_unload(l->mods[i]);
  free(l->mods);
  free(l->kernels);
  free(l);
}
static void loaded_device_gone(kl_device *dev, void *user) {
  (void)dev;
  loaded *l = user;
  loaded **pp = &l->v->loads;
  while (*pp && *pp != l) pp = &(*pp)->next;
  if (*pp) *pp = l->next;
  loaded_free(l); /* the watch is already gone */
}
static void variant_free(variant *v) {
  for (loaded *l = v->loads, *n; l; l = n) {
    n = l->next;
    kl_device_unwatch(l->watch);
    loaded_free(l);
  }
  for (int i = 0; i < v->nkernels; i++) {
    kl_kernel_info *k = &v->kernels[i];
    struct ksnaps *ks = v->kir ? &v->kir[i] : NULL;
    for (int j = 0; ks && j < ks->n; j++) /* an unchanged snapshot shares the text before it */
      if (!j || ks->ir[j].text != ks->ir[j - 1].text) free(ks->ir[j].text);
    if (ks) free(ks->ir);
    free(k->llvm_ir);
    free(k->llvm_bc);
    free(k->accesses);
    free(k->arg_names);
    free(k->arg_types);
    kl_binary_free(&v->bins[i]);
  }
  kl_plan_free(&v->plan);
  for (int i = 0; i < v->nsnap; i++)
    if (!i || v->snaps[i].text != v->snaps[i - 1].text) free(v->snaps[i].text);
  for (int i = 0; i < v->nfsnap; i++) free(v->fsnaps[i].text);
  free(v->fsnaps);
  free(v->kir);
  kl_pass_manager_destroy(v->pm);
  free(v->kernels);
  free(v->tma);
  free(v->persistent);
  free(v->bins);
  free(v->bin_info);
  free(v->snaps);
}
kl_program *kl_program_retain(kl_program *p) {
  if (p) p->refcount++;
  return p;
}
void kl_program_release(kl_program *p) {
  if (!p || --p->refcount > 0) return;
  for (int i = 0; i < p->nvariants; i++) variant_free(&p->v[i]);
  free(p->v);
  free(p->key);
  free(p->disk);
  if (p->ir) kl_arena_destroy(p->ir);
  free(p->ir);
  free(p);
}

/* ---- the pipeline with snapshots ----
 * One pass manager per variant, parsed from the whole pipeline string (core/pass.c);
 * its after-pass observer keeps the module text (and every function's) after each
 * pass, once verified, and hands it to on_ir when print_ir_after names the pass.
 * Printing them costs about as much as the passes: where nothing can watch the IR as it
 * is made, the compile keeps the pass manager and a clone of the graph instead and the
 * snapshots come from running them again when first read (ensure_snapshots; C passes
 * are deterministic, the contract of program.h). */
typedef struct snap_ctx {
  variant *v;
  const kl_compile_opts *opts; /* NULL: the lazy re-run (no on_ir) */
} snap_ctx;

/* A printed text trimmed to its length (kl_sb_take leaves up to twice that allocated). */
static char *fit(char *text) {
  char *t = realloc(text, strlen(text) + 1);
  return t ? t : text;
}

static void snapshot(kl_op *module, const char *pass, void *user) {
  snap_ctx *s = user;
  variant *v = s->v;
  char *text = fit(kl_print_op(module, 0));
  if (s->opts && s->opts->on_ir && kl_pass_selected(s->opts->print_ir_after, pass))
    s->opts->on_ir(pass, text, s->opts->on_ir_user);
  if (v->nsnap && !strcmp(v->snaps[v->nsnap - 1].text, text)) { /* unchanged: share the text before */
    free(text);
    text = v->snaps[v->nsnap - 1].text;
  }
  v->snaps = kl_xrealloc(v->snaps, (v->nsnap + 1) * sizeof *v->snaps);
  v->snaps[v->nsnap].pass = kl_intern(module->ctx, pass);
  v->snaps[v->nsnap].text = text;
  v->nsnap++;
  /* every function on its own too, for the per-kernel IR of p:kernels() (build_kernels
   * moves a kernel's into its kl_kernel_info and frees the rest) */
  for (kl_op *f = kl_module_body(module)->first; f; f = f->next) {
    const char *name = kl_op_attr_string(f, "sym_name");
    if (!name) continue;
    v->fsnaps = kl_xrealloc(v->fsnaps, (v->nfsnap + 1) * sizeof *v->fsnaps);
    v->fsnaps[v->nfsnap++] = (struct fsnap){ v->snaps[v->nsnap - 1].pass, kl_intern(module->ctx, name),
                                             fit(kl_print_op(f, 0)) };
  }
}

/* Whether the compile takes its IR snapshots as it goes: where on_ir watches, where a pass
 * may keep the IR it sees (ir_in_context: the Lua binding's passes, which a re-run would
 * call again), and where KILN_DEBUG's remarks are on (a re-run would print them twice). */
static bool eager_snapshots(const kl_compile_opts *opts) {
  return opts->on_ir || opts->ir_in_context || kl_env_debug("fusion") || kl_env_debug("rewrite");
}

static kl_status run_pipeline(variant *v, const kl_compile_opts *opts, char *err, size_t errlen) {
  kl_ctx *ctx = v->module->ctx;
  kl_pass_manager *pm = kl_pass_manager_create(ctx);
  snap_ctx sc = { v, opts };
  kl_status st = kl_pass_manager_add_pipeline(pm, opts->pipeline ? opts->pipeline : kl_default_pipeline());
  /* the perf config is an option of the pass that consumes it (an entry that gives its
   * own perf-config keeps it) */
  if (st == KL_OK && opts->perf_config)
    st = kl_pass_manager_set_option(pm, "rock-gemm-to-gridwise", "perf-config", opts->perf_config);
  if (st == KL_OK && opts->perf_config) /* its splitK decides the workspace form too */
    st = kl_pass_manager_set_option(pm, "split-k-workspace", "perf-config", opts->perf_config);
  if (st == KL_OK && v->tuned && *v->tuned)
    st = kl_pass_manager_set_option(pm, "rock-gemm-to-gridwise", "tuned", v->tuned);
  if (!v->source) kl_pass_manager_observe(pm, snapshot, &sc);
  if (st == KL_OK) st = kl_pass_manager_run(pm, v->module);
  if (st != KL_OK) {
    char *d = kl_diag_take(ctx);
    snprintf(err, errlen, "%s", *d ? d : "compile: the pipeline failed");
    size_t len = strlen(err);
    if (len && err[len - 1] == '\n') err[len - 1] = 0;
    free(d);
  }
  if (st == KL_OK && v->source) { /* kept for ensure_snapshots, which must not dump again */
    kl_pass_manager_set_env_print(pm, false);
    v->pm = pm;
  } else
    kl_pass_manager_destroy(pm);
  return st;
}

/* Moves the function snapshots of each kernel into v->kir (an unchanged one shares the
 * text before it) and frees those of other functions. */
static void take_kernel_snaps(variant *v) {
  for (int ki = 0; ki < v->nkernels; ki++) {
    struct ksnaps *ks = &v->kir[ki];
    for (int s = 0; s < v->nfsnap; s++) {
      if (!v->fsnaps[s].text || strcmp(v->fsnaps[s].func, v->kernels[ki].name)) continue;
      char *text = v->fsnaps[s].text;
      v->fsnaps[s].text = NULL;
      if (ks->n && !strcmp(ks->ir[ks->n - 1].text, text)) {
        free(text);
        text = ks->ir[ks->n - 1].text;
      }
      ks->ir = kl_xrealloc(ks->ir, (ks->n + 1) * sizeof *ks->ir);
      ks->ir[ks->n].pass = v->fsnaps[s].pass;
      ks->ir[ks->n].text = text;
      ks->n++;
    }
  }
  for (int s = 0; s < v->nfsnap; s++) free(v->fsnaps[s].text); /* functions that are not kernels */
  free(v->fsnaps);
  v->fsnaps = NULL;
  v->nfsnap = 0;
}

/* The lazy snapshots of v, taken on the first read: the kept pass manager runs again on a
 * clone of the source graph, in an IR arena of its own that is dropped afterwards (the
 * snapshots are text). Needs the context, as the compile did; one reader at a time. */
static void ensure_snapshots(const variant *cv) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  variant *v = (variant *)cv;
  if (!v) return;
  pthread_mutex_lock(&mu);
  if (v->source && v->pm) {
    kl_op *src = v->source;
    v->source = NULL;
    kl_ctx *ctx = src->ctx;
    kl_arena ir;
    kl_arena_init(&ir);
    kl_arena *prev = kl_ctx_set_ir_arena(ctx, &ir);
    kl_op *module = kl_module_create(ctx, src->loc);
    kl_op_set_attr(module, "target", kl_attr_str(ctx, v->target));
    kl_block_push_op(kl_module_body(module), kl_op_clone(src, NULL));
    snap_ctx sc = { v, NULL };
    kl_pass_manager_observe(v->pm, snapshot, &sc);
    /* it ran once on the same input: a failure here leaves its diagnostics in the context
     * and the snapshots up to the failing pass */
    (void)kl_pass_manager_run(v->pm, module);
    kl_ctx_set_ir_arena(ctx, prev);
    kl_arena_destroy(&ir);
    take_kernel_snaps(v);
    kl_pass_manager_destroy(v->pm);
    v->pm = NULL;
  }
  pthread_mutex_unlock(&mu);
}

/* ---- kernels, binaries ---- */
/* The kernel func's primary_inputs (rock-gridwise-to-blockwise) as "in0,in2" (interned). */
static const char *primary_inputs_of(kl_op *module, const char *name) {
  kl_op *fn = module ? kl_module_lookup(module, name) : NULL;
  const kl_attr *a = fn ? kl_op_attr(fn, "primary_inputs") : NULL;
  if (!a || a->kind != KL_AT_ARRAY) return "";
  kl_sb sb = { 0 };
  for (int i = 0; i < a->n; i++)
    if (a->elems[i]->kind == KL_AT_STR) kl_sb_printf(&sb, "%s%s", sb.len ? "," : "", a->elems[i]->s);
  const char *r = kl_intern(module->ctx, sb.len ? kl_sb_str(&sb) : "");
  kl_sb_free(&sb);
  return r;
}

/* A string attribute of the kernel func (output_swizzle: rock-output-swizzle's decision;
 * fragment_loads: rock-lower-loops' fragment reads), "" if none. */
static const char *func_str_of(kl_op *module, const char *name, const char *attr) {
  kl_op *fn = module ? kl_module_lookup(module, name) : NULL;
  const char *s = fn ? kl_op_attr_string(fn, attr) : NULL;
  return s ? s : "";
}

/* An integer attribute of the kernel func (pipeline_stages), 0 if none. */
static int64_t func_int_of(kl_op *module, const char *name, const char *attr) {
  kl_op *fn = module ? kl_module_lookup(module, name) : NULL;
  int64_t v = 0;
  return fn && kl_op_attr_i64(fn, attr, &v) ? v : 0;
}

/* The introspection record of a plan kernel (arg names and types point into the plan). */
static void kernel_info_of(kl_kernel_info *k, const kl_bundle_kernel *K) {
  k->name = K->name;
  k->kind = K->kind;
  k->perf_config = K->perf_config;
  k->primary_inputs = "";
  k->output_swizzle = "";
  k->fragment_loads = "";
  k->perf_config_source = "";
  k->problem_key = "";
  k->problem = "";
  k->async_copy = "";
  k->tma = "";
  k->ws = "";
  k->tma_swizzle = 0;
  k->raster_group_m = 0;
  k->persistent = "";
  k->grid_persistent = 0;
  k->cluster = "";
  k->cluster_size = 0;
  k->async_lds_layout = "";
  k->amd_lds_layout = "";
  k->grid_size = K->grid[0];
  k->block_size = K->block[0];
  k->lds_bytes = K->lds_bytes;
  k->nargs = K->nargs;
  k->ninputs = K->ninputs;
  k->arg_names = kl_xcalloc(k->nargs + 1, sizeof *k->arg_names);
  k->arg_types = kl_xcalloc(k->nargs + 1, sizeof *k->arg_types);
  for (int a = 0; a < k->nargs; a++) {
    k->arg_names[a] = K->args[a].name;
    k->arg_types[a] = K->args[a].t.type;
  }
}

/* The tensor-map parameters of the variant's kernels (passes/rock_tma.h: kl_tma_kernel_maps,
 * the order of the kernels' extra parameters): v->tma, NULL when no kernel has any. */
static kl_status build_tma(variant *v, char *err, size_t errlen) {
  v->tma = NULL;
  free(v->persistent);
  v->persistent = NULL;
  for (int k = 0; k < v->nkernels; k++) {
    kl_op *fn = kl_module_lookup(v->module, v->kernels[k].name);
    int64_t gp = 0;
    if (fn && kl_op_attr_i64(fn, "grid_persistent", &gp) && gp > 0) { /* the launch's grid: kl_plan_launch_grid */
      if (!v->persistent) v->persistent = kl_xcalloc((size_t)v->nkernels, sizeof *v->persistent);
      v->persistent[k] = true;
    }
    kl_op *ops[8];
    int n = fn ? kl_tma_kernel_maps(fn, ops, 8) : 0;
    if (!n) continue;
    if (n < 0 || n > 8) {
      snprintf(err, errlen, "kernel %s: more than 8 tensor maps, or one of a non-argument", v->kernels[k].name);
      return KL_ERR;
    }
    if (!v->tma) v->tma = kl_xcalloc((size_t)v->nkernels, sizeof *v->tma);
    kl_block *body = fn->regions[0].first;
    for (int j = 0; j < n; j++) {
      kl_plan_tma *m = &v->tma[k].m[j];
      int64_t dims[8], strides[8], box[8], off = 0, sw = 0;
      m->rank = kl_op_attr_i64s(ops[j], "dims", dims, 8);
      kl_op_attr_i64s(ops[j], "strides", strides, 8);
      kl_op_attr_i64s(ops[j], "box", box, 8);
      kl_op_attr_i64(ops[j], "offset", &off);
      kl_op_attr_i64(ops[j], "swizzle", &sw);
      m->swizzle = (int)sw;
      int64_t ic[6];
      m->im2col = kl_op_attr_i64s(ops[j], "im2col", ic, 6) == 6;
      for (int i = 0; m->im2col && i < 2; i++)
        m->lo[i] = (int32_t)ic[i], m->up[i] = (int32_t)ic[2 + i], m->es[i] = (uint32_t)ic[4 + i];
      const kl_type *st = ops[j]->opnds[0].value->type;
      m->arg = -1;
      for (int a = 0; a < body->nargs; a++)
        if (body->args[a] == ops[j]->opnds[0].value) m->arg = a;
      if (m->arg < 0 || m->rank < 1 || m->rank > 5) {
        snprintf(err, errlen, "kernel %s: a tensor map of rank %d or of no argument", v->kernels[k].name, m->rank);
        return KL_ERR;
      }
      m->bf16 = st->elem->kind == KL_TY_BF16;
      m->offset = off * ((kl_type_bits(st->elem) + 7) / 8);
      for (int i = 0; i < m->rank; i++) {
        m->dims[i] = (uint64_t)dims[i];
        m->box[i] = (uint32_t)box[i];
        if (i) m->strides[i - 1] = (uint64_t)strides[i - 1];
      }
    }
    v->tma[k].n = n;
  }
  return KL_OK;
}

/* Kernel infos, IR snapshots, LLVM IR and binaries of the plan's kernels (module order). */
static kl_status build_kernels(variant *v, char *err, size_t errlen) {
  kl_ctx *ctx = v->module->ctx;
  v->nkernels = v->plan.t.nkernels;
  v->kernels = kl_xcalloc(v->nkernels ? v->nkernels : 1, sizeof *v->kernels);
  v->bins = kl_xcalloc(v->nkernels ? v->nkernels : 1, sizeof *v->bins);
  v->bin_info = kl_xcalloc(v->nkernels ? v->nkernels : 1, sizeof *v->bin_info);
  v->kir = kl_xcalloc(v->nkernels ? v->nkernels : 1, sizeof *v->kir);
  int ki = 0;
  for (kl_op *o = kl_module_body(v->module)->first; o; o = o->next) {
    if (!kl_is_kernel(o)) continue;
    kl_kernel_info *k = &v->kernels[ki];
    kl_bundle_kernel *K = (kl_bundle_kernel *)&v->plan.t.kernels[ki];
    kernel_info_of(k, K);
    k->primary_inputs = primary_inputs_of(v->module, k->name);
    k->output_swizzle = func_str_of(v->module, k->name, "output_swizzle");
    k->fragment_loads = func_str_of(v->module, k->name, "fragment_loads");
    k->perf_config_source = func_str_of(v->module, k->name, "perf_config_source");
    k->problem_key = func_str_of(v->module, k->name, "problem_key");
    k->problem = func_str_of(v->module, k->name, "problem");
    k->async_copy = func_str_of(v->module, k->name, "async_copy");
    k->async_lds_layout = func_str_of(v->module, k->name, "async_lds_layout");
    k->amd_lds_layout = func_str_of(v->module, k->name, "amd_lds_layout");
    k->pipeline_stages = func_int_of(v->module, k->name, "pipeline_stages");
    k->tma = func_str_of(v->module, k->name, "tma");
    k->ws = func_str_of(v->module, k->name, "ws");
    k->tma_swizzle = func_int_of(v->module, k->name, "tma_swizzle");
    k->fp8_promote = func_int_of(v->module, k->name, "fp8_promote");
    k->raster_group_m = func_int_of(v->module, k->name, "raster_group_m");
    k->persistent = func_str_of(v->module, k->name, "persistent");
    k->grid_persistent = func_int_of(v->module, k->name, "grid_persistent");
    k->cluster = func_str_of(v->module, k->name, "cluster");
    k->cluster_size = func_int_of(v->module, k->name, "cluster_size");
    k->accesses = kl_kernel_accesses(o, k->arg_names, k->nargs, &k->naccesses);
    double t0 = now_ms();
    LLVMContextRef lc = LLVMContextCreate();
    LLVMModuleRef lm;
    if (kl_lower_kernel_to_llvm(o, v->desc, lc, &lm) != KL_OK) {
      char *d = kl_diag_take(ctx);
      snprintf(err, errlen, "%s", d);
      free(d);
      LLVMContextDispose(lc);
      return KL_ERR;
    }
    /* bitcode now, text when asked (kl_program_kernel_llvm_ir): printing it costs more */
    LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(lm);
    k->llvm_bc_size = LLVMGetBufferSize(bc);
    k->llvm_bc = kl_xmalloc(k->llvm_bc_size);
    memcpy(k->llvm_bc, LLVMGetBufferStart(bc), k->llvm_bc_size);
    LLVMDisposeMemoryBuffer(bc);
    kl_codegen_times times = { 0 };
    kl_codegen_opts copts = { .opt_level = -1, .times = &times, .in_place = true }; /* lm goes next */
    double t1 = now_ms();
    kl_status st = kl_codegen_emit(lm, v->target, &copts, &v->bins[ki], err, errlen);
    v->phase_ms[KL_PHASE_LLVM_IR] += t1 - t0;
    v->phase_ms[KL_PHASE_LLVM_OPT] += times.opt_ms;
    v->phase_ms[KL_PHASE_LLVM_CODEGEN] += times.codegen_ms;
    LLVMDisposeModule(lm);
    LLVMContextDispose(lc);
    if (st != KL_OK) return KL_ERR;
    v->bin_info[ki] = (kl_binary_info){ v->target, v->bins[ki].data, v->bins[ki].size };
    K->binary = v->bins[ki].data;
    K->binary_size = v->bins[ki].size;
    ki++;
  }
  take_kernel_snaps(v); /* the eager ones (none yet where they are lazy) */
  return build_tma(v, err, errlen);
}

static kl_status compile_variant(variant *v, kl_op *graph, const kl_compile_opts *opts, char *err, size_t errlen) {
  kl_ctx *ctx = graph->ctx;
  v->desc = kl_target_lookup(v->target);
  if (!v->desc) {
    kl_sb sb = { 0 };
    for (int i = 0; i < kl_target_count(); i++) kl_sb_printf(&sb, "%s%s", i ? ", " : "", kl_target_at(i)->name);
    snprintf(err, errlen, "compile: unknown target '%s' (known: %s)", v->target, kl_sb_str(&sb));
    kl_sb_free(&sb);
    return KL_ERR;
  }
  v->module = kl_module_create(ctx, graph->loc);
  v->load_flags = KL_LOAD_TRUSTED; /* the binaries are emitted below, by this process */
  kl_op_set_attr(v->module, "target", kl_attr_str(ctx, v->target));
  v->graph = kl_op_clone(graph, NULL);
  kl_block_push_op(kl_module_body(v->module), v->graph);
  if (!eager_snapshots(opts)) v->source = kl_op_clone(graph, NULL); /* in the program's IR arena */
  double t0 = now_ms();
  if (run_pipeline(v, opts, err, errlen) != KL_OK) return KL_ERR;
  double t1 = now_ms();
  v->phase_ms[KL_PHASE_PASSES] = t1 - t0;
  if (opts->strict_fp) /* read by the LLVM lowering; kept in the bundle's IR with the kernel */
    for (kl_op *o = kl_module_body(v->module)->first; o; o = o->next)
      if (kl_is_kernel(o)) kl_op_set_attr(o, "strict_fp", kl_attr_unit(ctx));
  if (kl_plan_build(&v->plan, v->module, v->target, v->desc, err, errlen) != KL_OK) return KL_ERR;
  v->phase_ms[KL_PHASE_PLAN] = now_ms() - t1;
  return build_kernels(v, err, errlen);
}

/* The key names the registration of every pass of the pipeline (the registry's copy of
 * its kl_pass_info: a new one, at a new address of the context arena, each time a name
 * is registered again), so re-registering a pass under the same name misses. */
static char *cache_key(kl_op *graph, const kl_compile_opts *o, const char *tuned) {
  kl_sb sb = { 0 };
  if (tuned && *tuned) kl_sb_printf(&sb, "tuned=%s|", tuned);
  kl_print_op_to(&sb, graph, KL_PRINT_GENERIC);
  for (int i = 0; i < o->ntargets; i++) kl_sb_printf(&sb, "|t=%s", o->targets[i]);
  kl_sb_printf(&sb, "|p=%s|pl=%s|s=%d", o->perf_config ? o->perf_config : "", o->pipeline ? o->pipeline : "",
               (int)o->strict_fp);
  const char *pipeline = o->pipeline ? o->pipeline : kl_default_pipeline();
  int n = kl_pipeline_passes(graph->ctx, pipeline, NULL, 0); /* -1: it does not parse, the compile fails */
  const kl_pass_info **infos = kl_xcalloc(n > 0 ? n : 1, sizeof *infos);
  kl_pipeline_passes(graph->ctx, pipeline, infos, n);
  for (int i = 0; i < n; i++) kl_sb_printf(&sb, "|r=%p", (const void *)infos[i]);
  free(infos);
  return kl_sb_take(&sb);
}

/* ---- tuned configs from the tuning database ---- */
/* Prints each warning line of text to stderr the first time this process sees it. */
static void warn_once(const char *text) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static char **seen;
  static int nseen;
  pthread_mutex_lock(&mu);
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t l = nl ? (size_t)(nl - p) : strlen(p);
    bool dup = false;
    for (int i = 0; i < nseen && !dup; i++) dup = strlen(seen[i]) == l && !strncmp(seen[i], p, l);
    if (!dup && l) {
      seen = kl_xrealloc(seen, (nseen + 1) * sizeof *seen);
      seen[nseen] = kl_xmalloc(l + 1);
      memcpy(seen[nseen], p, l), seen[nseen][l] = 0;
      fprintf(stderr, "kiln: warning: %s\n", seen[nseen++]);
    }
    p += l + (nl ? 1 : 0);
  }
  pthread_mutex_unlock(&mu);
}

/* Per target, the tuned option "KEY=CONFIG;..." (malloc'd strings, "" for none). */
static char **tuned_configs(const kl_compile_opts *o) {
  char **out = kl_xcalloc(o->ntargets, sizeof *out);
  kl_tuning_db db = { 0 };
  char err[1024];
  bool have = o->tuning_db && *o->tuning_db && !o->perf_config;
  if (have && kl_tuning_db_read(o->tuning_db, &db, err, sizeof err) != KL_OK) {
    warn_once(err);
    have = false;
  }
  if (have && db.warnings) warn_once(db.warnings);
  for (int i = 0; i < o->ntargets; i++) {
    kl_sb sb = { 0 };
    kl_hashmap seen = KL_STRMAP_INIT; /* keys already taken: the last record of a key wins */
    for (int r = have ? db.n - 1 : -1; r >= 0; r--) {
      const kl_tuning_record *R = &db.r[r];
      if (R->format != KL_TUNING_DB_FORMAT || strcmp(R->target, o->targets[i])) continue;
      if (o->tuning_device && strcmp(R->device, o->tuning_device)) continue;
      if (kl_strmap_find(&seen, R->key, strlen(R->key))) continue;
      kl_strmap_put(&seen, R->key, strlen(R->key), NULL);
      kl_sb_printf(&sb, "%s%s=%s", sb.len ? ";" : "", R->key, R->config);
    }
    kl_hashmap_free(&seen);
    out[i] = kl_sb_take(&sb);
  }
  if (have) kl_tuning_db_free(&db);
  return out;
}

static void free_tuned(char **t, int n) {
  for (int i = 0; i < n; i++) free(t[i]);
  free(t);
}

/* Compiles every target's variant (kl_compile has checked the graph). */
static kl_program *compile_program(kl_op *graph, const kl_compile_opts *opts, char **tuned, char *err, size_t errlen) {
  kl_program *p = kl_xcalloc(1, sizeof *p);
  p->refcount = 1;
  p->ctx = graph->ctx;
  p->nvariants = opts->ntargets;
  p->v = kl_xcalloc(opts->ntargets, sizeof *p->v);
  for (int i = 0; i < opts->ntargets; i++) p->v[i].tuned = kl_intern(graph->ctx, tuned[i]);
  for (int i = 0; i < opts->ntargets; i++) {
    p->v[i].target = kl_intern(graph->ctx, opts->targets[i]);
    for (int j = 0; j < i; j++)
      if (!strcmp(opts->targets[j], opts->targets[i])) {
        snprintf(err, errlen, "compile: target '%s' given twice", opts->targets[i]);
        kl_program_release(p);
        return NULL;
      }
    if (compile_variant(&p->v[i], graph, opts, err, errlen) != KL_OK) {
      kl_program_release(p);
      return NULL;
    }
  }
  return p;
}

kl_program *kl_compile(kl_op *graph, const kl_compile_opts *opts_in, char *err, size_t errlen) {
  kl_compile_opts opts = opts_in ? *opts_in : (kl_compile_opts){ 0 };
  static const char *const host[] = { "host" };
  if (!opts.targets || opts.ntargets <= 0) {
    opts.targets = host;
    opts.ntargets = 1;
  }
  if (!kl_is_graph(graph)) {
    snprintf(err, errlen, "compile: not a graph function");
    return NULL;
  }
  kl_op *ret = kl_graph_return(graph);
  if (!ret || ret->nopnds == 0) {
    snprintf(err, errlen, "compile: the graph has no outputs (call g:output first)");
    return NULL;
  }
  if (kl_verify(graph) != KL_OK) {
    char *d = kl_diag_take(graph->ctx);
    snprintf(err, errlen, "%s", d);
    free(d);
    return NULL;
  }
  double t0 = now_ms();
  char **tuned = tuned_configs(&opts);
  kl_sb all = { 0 };
  for (int i = 0; i < opts.ntargets; i++)
    if (*tuned[i]) kl_sb_printf(&all, "%s:%s\n", opts.targets[i], tuned[i]);
  char *tuned_all = kl_sb_take(&all);
  char *key = cache_key(graph, &opts, tuned_all);
  cache *c = get_cache(graph->ctx);
  bool cached = !opts.no_cache && !opts.on_ir;
  kl_program *hit = cached ? cache_get(c, key) : NULL;
  if (hit) {
    free(key);
    free_tuned(tuned, opts.ntargets);
    free(tuned_all);
    hit->from_cache = true;
    return kl_program_retain(hit);
  }
  /* the IR this compile makes lives in an arena of the program (unless a pass may keep
   * references to it, or on_ir's callback may build IR of its own while the arena is
   * current), so releasing the program releases it */
  kl_arena *ir = NULL;
  if (!opts.ir_in_context && !opts.on_ir) {
    ir = kl_xcalloc(1, sizeof *ir);
    kl_arena_init(ir);
  }
  kl_arena *prev_ir = ir ? kl_ctx_set_ir_arena(graph->ctx, ir) : NULL;
  bool disk = opts.cache_dir && *opts.cache_dir && cached;
  char *dkey = disk ? kl_disk_cache_key(graph, &opts, tuned_all) : NULL;
  free(tuned_all);
  char note[4096] = "";
  kl_program *p = NULL;
  if (disk) {
    p = kl_disk_cache_lookup(graph->ctx, opts.cache_dir, dkey, note, sizeof note);
    if (p) {
      p->disk = kl_xstrdup("hit");
      p->compile_ms = now_ms() - t0;
    }
  }
  if (!p) {
    if (ir) { /* what a rejected disk entry parsed is garbage */
      kl_arena_destroy(ir);
      kl_arena_init(ir);
    }
    p = compile_program(graph, &opts, tuned, err, errlen);
    if (p) p->compile_ms = now_ms() - t0;
    if (p && disk) {
      char snote[4096];
      bool stored = kl_disk_cache_store(opts.cache_dir, dkey, p, snote, sizeof snote) == KL_OK;
      kl_sb sb = { 0 };
      kl_sb_printf(&sb, "%s%s%s", note, *note ? "; " : "", stored ? "stored" : snote);
      p->disk = kl_sb_take(&sb);
    }
  }
  if (ir) kl_ctx_set_ir_arena(graph->ctx, prev_ir);
  free_tuned(tuned, opts.ntargets);
  free(dkey);
  if (!p) {
    if (ir) kl_arena_destroy(ir);
    free(ir);
    free(key);
    return NULL;
  }
  p->ir = ir;
  p->key = key;
  if (cached) cache_put(c, p);
  return p;
}

/* ---- introspection ---- */
static const variant *find_variant(const kl_program *p, const char *target) {
  if (!target) return p->nvariants ? &p->v[0] : NULL;
  for (int i = 0; i < p->nvariants; i++)
    if (!strcmp(p->v[i].target, target)) return &p->v[i];
  return NULL;
}
int kl_program_ntargets(const kl_program *p) { return p->nvariants; }
const char *kl_program_target(const kl_program *p, int i) {
  return (i >= 0 && i < p->nvariants) ? p->v[i].target : NULL;
}
int kl_program_nkernels(const kl_program *p, const char *t) {
  const variant *v = find_variant(p, t);
  return v ? v->nkernels : 0;
}
const kl_kernel_info *kl_program_kernel(const kl_program *p, const char *t, int i) {
  const variant *v = find_variant(p, t);
  return (v && i >= 0 && i < v->nkernels) ? &v->kernels[i] : NULL;
}
const char *kl_program_kernel_llvm_ir(const kl_program *p, const char *t, int i) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  kl_kernel_info *k = (kl_kernel_info *)kl_program_kernel(p, t, i);
  if (!k) return NULL;
  pthread_mutex_lock(&mu);
  if (!k->llvm_ir && k->llvm_bc) {
    LLVMContextRef lc = LLVMContextCreate();
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRange(k->llvm_bc, k->llvm_bc_size, "kernel", 0);
    LLVMModuleRef m = NULL;
    if (!LLVMParseBitcodeInContext2(lc, mb, &m)) { /* written by this process: it parses */
      size_t n;
      const char *src = LLVMGetSourceFileName(m, &n); /* the module's name (bitcode keeps no ModuleID) */
      LLVMSetModuleIdentifier(m, src, n);
      char *text = LLVMPrintModuleToString(m);
      k->llvm_ir = kl_xstrdup(text);
      LLVMDisposeMessage(text);
      LLVMDisposeModule(m);
      free(k->llvm_bc);
      k->llvm_bc = NULL;
      k->llvm_bc_size = 0;
    }
    LLVMDisposeMemoryBuffer(mb);
    LLVMContextDispose(lc);
  }
  pthread_mutex_unlock(&mu);
  return k->llvm_ir;
}
const kl_binary_info *kl_program_binary(const kl_program *p, const char *t, const char *kernel) {
  const variant *v = find_variant(p, t);
  for (int i = 0; v && i < v->nkernels; i++)
    if (!strcmp(v->kernels[i].name, kernel)) return &v->bin_info[i];
  return NULL;
}
static const char *slot_kind_name(kl_bundle_slot_kind k) {
  return k == KL_BUNDLE_PARAM ? "param" : k == KL_BUNDLE_CONSTANT ? "constant" : "result";
}
const kl_bundle_target *kl_program_plan(const kl_program *p, const char *t) {
  const variant *v = find_variant(p, t);
  return v ? &v->plan.t : NULL;
}
int kl_program_nsteps(const kl_program *p, const char *t) {
  const variant *v = find_variant(p, t);
  return v ? v->plan.t.nsteps : 0;
}
const kl_bundle_step *kl_program_step(const kl_program *p, const char *t, int i) {
  const variant *v = find_variant(p, t);
  return (v && i >= 0 && i < v->plan.t.nsteps) ? &v->plan.t.steps[i] : NULL;
}
int kl_program_nslots(const kl_program *p, const char *t) {
  const variant *v = find_variant(p, t);
  return v ? v->plan.t.nslots : 0;
}
const char *kl_program_slot(const kl_program *p, const char *t, int i, const char **kind, const char **name) {
  const variant *v = find_variant(p, t);
  if (!v || i < 0 || i >= v->plan.t.nslots) return NULL;
  const kl_bundle_slot *S = &v->plan.t.slots[i];
  if (kind) *kind = slot_kind_name(S->kind);
  if (name) *name = S->name;
  return S->t.type;
}
int kl_program_noutputs(const kl_program *p, const char *t) {
  const variant *v = find_variant(p, t);
  return v ? v->plan.t.noutputs : 0;
}
int kl_program_output_slot(const kl_program *p, const char *t, int i) {
  const variant *v = find_variant(p, t);
  return (v && i >= 0 && i < v->plan.t.noutputs) ? v->plan.t.outputs[i] : -1;
}
const kl_snapshot *kl_program_kernel_ir(const kl_program *p, const char *t, int i, int *n) {
  const variant *v = find_variant(p, t);
  *n = 0;
  if (!v || i < 0 || i >= v->nkernels || !v->kir) return NULL;
  ensure_snapshots(v);
  *n = v->kir[i].n;
  return v->kir[i].ir;
}
const char *kl_program_ir(const kl_program *p, const char *pass) {
  const variant *v = find_variant(p, NULL);
  if (!v) return NULL;
  ensure_snapshots(v);
  if (!strncmp(pass, "after:", 6)) pass += 6;
  for (int i = v->nsnap - 1; i >= 0; i--)
    if (!strcmp(v->snaps[i].pass, pass)) return v->snaps[i].text;
  return NULL;
}
const char *kl_program_ir_pass(const kl_program *p, int i) {
  const variant *v = find_variant(p, NULL);
  ensure_snapshots(v);
  return (v && i >= 0 && i < v->nsnap) ? v->snaps[i].pass : NULL;
}
size_t kl_program_memory(const kl_program *p) {
  size_t n = sizeof *p + (p->ir ? p->ir->total : 0);
  for (int i = 0; i < p->nvariants; i++) {
    const variant *v = &p->v[i];
    for (int s = 0; s < v->nsnap; s++)
      if (!s || v->snaps[s].text != v->snaps[s - 1].text) n += strlen(v->snaps[s].text) + 1;
    for (int k = 0; k < v->nkernels; k++) {
      const kl_kernel_info *K = &v->kernels[k];
      const struct ksnaps *ks = v->kir ? &v->kir[k] : NULL;
      for (int s = 0; ks && s < ks->n; s++)
        if (!s || ks->ir[s].text != ks->ir[s - 1].text) n += strlen(ks->ir[s].text) + 1;
      n += (K->llvm_ir ? strlen(K->llvm_ir) + 1 : 0) + K->llvm_bc_size + v->bins[k].size;
    }
  }
  return n;
}
double kl_program_compile_ms(const kl_program *p) { return p->compile_ms; }
const char *kl_program_compile_phase(const kl_program *p, int i, double *ms) {
  if (i < 0 || i >= KL_COMPILE_NPHASES) return NULL;
  double t = 0;
  for (int v = 0; v < p->nvariants; v++) t += p->v[v].phase_ms[i];
  if (ms) *ms = t;
  return phase_names[i];
}
bool kl_program_from_cache(const kl_program *p) { return p->from_cache; }
const char *kl_program_disk_cache(const kl_program *p) { return p->disk ? p->disk : ""; }

/* ---- running ---- */
static variant *variant_for(kl_program *p, const kl_device_info *info) {
  for (int i = 0; i < p->nvariants; i++)
    if (!strcmp(p->v[i].target, info->arch)) return &p->v[i];
  kl_arch want = info->kind == KL_DEVICE_HOST ? KL_ARCH_HOST
      : info->kind == KL_DEVICE_CUDA          ? KL_ARCH_NVPTX
                                              : KL_ARCH_AMDGPU;
  for (int i = 0; i < p->nvariants; i++) {
    const kl_target *t = p->v[i].desc;
    if (t->arch != want) continue;
    /* PTX for an older sm runs on a newer GPU, except an arch-specific one ("sm_90a":
     * that compute capability only); AMDGPU code objects need the same chip */
    int sm = atoi(t->name + 3), cc = info->cc_major * 10 + info->cc_minor;
    bool specific = t->name[strlen(t->name) - 1] == 'a';
    if (want == KL_ARCH_NVPTX && (specific ? sm == cc : sm <= cc)) return &p->v[i];
  }
  return NULL;
}
static loaded *load_on(variant *v, kl_device *dev, char *err, size_t errlen) {
  for (loaded *l = v->loads; l; l = l->next)
    if (l->dev == dev) return l;
  loaded *l = kl_xcalloc(1, sizeof *l);
  l->dev = dev;
  l->v = v;
  l->mods = kl_xcalloc(v->nkernels + 1, sizeof *l->mods);
  l->kernels = kl_xcalloc(v->nkernels + 1, sizeof *l->kernels);
  for (int i = 0; i < v->nkernels; i++) {
    if (kl_device_load(dev, v->bins[i].data, v->bins[i].size, v->load_flags, &l->mods[i]) != KL_OK ||
        kl_device_get_kernel(l->mods[i], v->kernels[i].name, &l->kernels[i]) != KL_OK) {
      snprintf(err, errlen, "run: loading kernel %s: %s", v->kernels[i].name, kl_device_error(dev));
      for (int j = 0; j <= i; j++)
        if (l->mods[j]) kl_device_unload(l->mods[j]);
      free(l->mods);
      free(l->kernels);
      free(l);
      return NULL;
    }
  }
  l->watch = kl_device_watch(dev, loaded_device_gone, l);
  l->next = v->loads;
  v->loads = l;
  return l;
}

static size_t tensor_bytes_span(const kl_tensor *t) {
  int64_t span = 1;
  for (int i = 0; i < t->rank; i++)
    if (t->shape[i] > 0) span += (t->shape[i] - 1) * t->strides[i];
  for (int i = 0; i < t->rank; i++)
    if (t->shape[i] == 0) span = 0;
  return (size_t)span * kl_dtype_size(t->dtype);
}
static void *tensor_ptr(const kl_tensor *t) { return (char *)t->data + t->offset * (int64_t)kl_dtype_size(t->dtype); }

/* The input tensor for param op `param`, checked against it (shape, dtype, layout);
 * NULL with a located "<what>: missing input" or check error in err. */
static const kl_tensor *input_for(kl_op *param, int ninputs, const kl_named_tensor *inputs, const char *what, char *err,
                                  size_t errlen) {
  const char *pn = kl_op_attr_string(param, "name");
  const kl_tensor *t = NULL;
  for (int i = 0; i < ninputs; i++)
    if (!strcmp(inputs[i].name, pn)) t = inputs[i].tensor;
  if (!t) {
    char where[256];
    kl_loc_format(param->loc, where, sizeof where);
    snprintf(err, errlen, "%s: error: %s: missing input '%s' (%s)", where, what, pn,
             kl_type_str(param->results[0].type));
    return NULL;
  }
  return kl_graph_check_input(param, t, err, errlen) == KL_OK ? t : NULL;
}

/* The variant for the device, after checking that every input names a param once;
 * NULL with "<what>: ..." in err otherwise. */
static variant *variant_with_inputs(kl_program *p, const kl_device_info *info, int ninputs,
                                    const kl_named_tensor *inputs, const char *what, char *err, size_t errlen) {
  variant *v = variant_for(p, info);
  if (!v) {
    kl_sb sb = { 0 };
    for (int i = 0; i < p->nvariants; i++) kl_sb_printf(&sb, "%s%s", i ? ", " : "", p->v[i].target);
    snprintf(err, errlen, "%s: the program has no binary for device %s (%s); compiled for: %s", what, info->name,
             info->arch, kl_sb_str(&sb));
    kl_sb_free(&sb);
    return NULL;
  }
  for (int i = 0; i < ninputs; i++) {
    if (!kl_graph_param(v->graph, inputs[i].name)) {
      snprintf(err, errlen, "%s: the graph has no param named '%s'", what, inputs[i].name);
      return NULL;
    }
    for (int j = 0; j < i; j++)
      if (!strcmp(inputs[i].name, inputs[j].name)) {
        snprintf(err, errlen, "%s: input '%s' given twice", what, inputs[i].name);
        return NULL;
      }
  }
  return v;
}

kl_status kl_program_run(kl_program *p, kl_device *dev, int ninputs, const kl_named_tensor *inputs, int *noutputs,
                         kl_tensor ***outputs, char *err, size_t errlen) {
  return kl_program_run_timed(p, dev, ninputs, inputs, noutputs, outputs, NULL, NULL, err, errlen);
}

kl_status kl_program_run_timed(kl_program *p, kl_device *dev, int ninputs, const kl_named_tensor *inputs, int *noutputs,
                               kl_tensor ***outputs, double *step_times, int *step_stream, char *err, size_t errlen) {
  *noutputs = 0;
  *outputs = NULL;
  const kl_device_info *info = kl_device_get_info(dev);
  variant *v = variant_with_inputs(p, info, ninputs, inputs, "run", err, errlen);
  if (!v) return KL_ERR;
  loaded *l = load_on(v, dev, err, errlen);
  if (!l) return KL_ERR;
  bool host = info->kind == KL_DEVICE_HOST;
  const kl_bundle_target *P = &v->plan.t;
  kl_tensor **tens = kl_xcalloc(P->nslots + 1, sizeof *tens); /* host tensors per slot */
  void **dptr = kl_xcalloc(P->nslots + 1, sizeof *dptr);      /* device pointers per slot */
  bool *owned = kl_xcalloc(P->nslots + 1, sizeof *owned);     /* device allocation to free */
  kl_status st = KL_OK;
  /* inputs and constants */
  kl_block *b = kl_graph_body(v->graph);
  for (kl_op *o = b->first; o && st == KL_OK; o = o->next) {
    int s = (int)o->scratch;
    if (kl_graph_is_param(o)) {
      const kl_tensor *t = input_for(o, ninputs, inputs, "run", err, errlen);
      if (!t) {
        st = KL_ERR;
        break;
      }
      tens[s] = kl_tensor_retain((kl_tensor *)t);
    } else if (kl_graph_is_constant(o)) {
      tens[s] = kl_tensor_retain(v->plan.constants[s]);
    }
  }
  /* results of launches: host tensors in the layout of their type; workspaces (slots
   * with an alloc_workspace step) are allocated and freed by their steps */
  bool *ws = kl_xcalloc(P->nslots + 1, sizeof *ws);
  for (int i = 0; i < P->nsteps; i++)
    if (P->steps[i].kind == KL_BUNDLE_ALLOC_WORKSPACE) ws[P->steps[i].slot] = true;
  for (int i = 0; i < P->nslots && st == KL_OK; i++) {
    if (P->slots[i].kind != KL_BUNDLE_RESULT || ws[i]) continue;
    const kl_type *t = v->plan.slot_types[i];
    tens[i] = kl_tensor_zeros(kl_dtype_of_type(t->elem), t->rank, t->shape, t->strides, err, errlen);
    if (!tens[i]) st = KL_ERR;
  }
  /* device memory */
  for (int i = 0; i < P->nslots && st == KL_OK; i++) {
    if (!tens[i]) continue;
    if (host) {
      dptr[i] = tensor_ptr(tens[i]);
      continue;
    }
    size_t bytes = tensor_bytes_span(tens[i]);
    if (kl_device_alloc(dev, bytes, &dptr[i]) != KL_OK) {
      snprintf(err, errlen, "run: %s", kl_device_error(dev));
      st = KL_ERR;
      break;
    }
    owned[i] = true;
    if (P->slots[i].kind != KL_BUNDLE_RESULT &&
        kl_device_copy_htod(dev, dptr[i], tensor_ptr(tens[i]), bytes) != KL_OK) {
      snprintf(err, errlen, "run: %s", kl_device_error(dev));
      st = KL_ERR;
    }
  }
  /* the steps (plan_exec.h), asynchronously, timed when asked */
  char msg0[2048];
  kl_plan_exec x = {
    dev, host, false, P, l->kernels, dptr, owned, NULL, step_times, step_stream, v->tma, v->persistent
  };
  if (st == KL_OK && kl_plan_exec_all(&x, msg0, sizeof msg0) != KL_OK) {
    snprintf(err, errlen, "run: %s", msg0);
    st = KL_ERR;
  }
  free(ws);
  if (st == KL_OK && kl_device_synchronize(dev) != KL_OK) {
    snprintf(err, errlen, "run: %s", kl_device_error(dev));
    st = KL_ERR;
  }
  /* outputs */
  if (st == KL_OK) {
    *outputs = kl_xcalloc(P->noutputs + 1, sizeof **outputs);
    for (int i = 0; i < P->noutputs && st == KL_OK; i++) {
      int s = P->outputs[i];
      if (!host && P->slots[s].kind == KL_BUNDLE_RESULT &&
          kl_device_copy_dtoh(dev, tensor_ptr(tens[s]), dptr[s], tensor_bytes_span(tens[s])) != KL_OK) {
        snprintf(err, errlen, "run: %s", kl_device_error(dev));
        st = KL_ERR;
        break;
      }
      (*outputs)[i] = kl_tensor_retain(tens[s]);
    }
    if (st == KL_OK)
      *noutputs = P->noutputs;
    else {
      for (int i = 0; i < P->noutputs; i++) kl_tensor_release((*outputs)[i]);
      free(*outputs);
      *outputs = NULL;
    }
  }
  for (int i = 0; i < P->nslots; i++) {
    if (owned[i]) kl_device_free(dev, dptr[i]);
    kl_tensor_release(tens[i]);
  }
  free(tens);
  free(dptr);
  free(owned);
  return st;
}

/* ---- loading programs from bundles (driver/bundle.c) ---- */
kl_op *kl_program_module(const kl_program *p, const char *t) {
  const variant *v = find_variant(p, t);
  return v ? v->module : NULL;
}
const kl_type *kl_program_slot_type(const kl_program *p, const char *t, int i) {
  const variant *v = find_variant(p, t);
  return (v && i >= 0 && i < v->plan.t.nslots) ? v->plan.slot_types[i] : NULL;
}
const kl_tensor *kl_program_slot_constant(const kl_program *p, const char *t, int i) {
  const variant *v = find_variant(p, t);
  return (v && i >= 0 && i < v->plan.t.nslots) ? v->plan.constants[i] : NULL;
}

static kl_status assemble_variant(variant *v, const kl_program_part *pt, char *err, size_t errlen) {
  v->desc = kl_target_lookup(v->target);
  if (!v->desc) {
    kl_sb sb = { 0 };
    for (int i = 0; i < kl_target_count(); i++) kl_sb_printf(&sb, "%s%s", i ? ", " : "", kl_target_at(i)->name);
    snprintf(err, errlen, "load: unknown target '%s' (this kiln knows: %s)", v->target, kl_sb_str(&sb));
    kl_sb_free(&sb);
    return KL_ERR;
  }
  if (!pt->module || !kl_module_body(pt->module)) {
    snprintf(err, errlen, "load: target %s: no module", v->target);
    return KL_ERR;
  }
  v->module = pt->module;
  for (kl_op *o = kl_module_body(v->module)->first; o && !v->graph; o = o->next)
    if (kl_is_graph(o)) v->graph = o;
  if (!v->graph) {
    snprintf(err, errlen, "load: target %s: the module has no graph function (the host plan)", v->target);
    return KL_ERR;
  }
  if (pt->nkernels < 0 || (pt->nkernels && (!pt->kernels || !pt->binaries))) {
    snprintf(err, errlen, "load: target %s: bad kernel list", v->target);
    return KL_ERR;
  }
  if (kl_plan_build(&v->plan, v->module, v->target, v->desc, err, errlen) != KL_OK) return KL_ERR;
  /* the list names every kernel func of the module once; kernels, infos and binaries
   * follow the plan's (module) order */
  const kl_bundle_target *P = &v->plan.t;
  int n = pt->nkernels;
  for (int i = 0; i < n; i++) {
    const kl_kernel_info *src = &pt->kernels[i];
    int k = -1;
    for (int j = 0; src->name && j < P->nkernels; j++)
      if (!strcmp(P->kernels[j].name, src->name)) k = j;
    if (k < 0) {
      snprintf(err, errlen, "load: target %s: kernel %s is not in the module", v->target,
               src->name ? src->name : "(null)");
      return KL_ERR;
    }
    if (P->nkernels != n) {
      snprintf(err, errlen, "load: target %s: the module has %d kernels, the kernel list %d", v->target, P->nkernels,
               n);
      return KL_ERR;
    }
    for (int j = 0; j < i; j++)
      if (!strcmp(pt->kernels[j].name, src->name)) {
        snprintf(err, errlen, "load: target %s: kernel %s listed twice", v->target, src->name);
        return KL_ERR;
      }
    if (P->kernels[k].nargs != src->nargs || src->nargs < 0 || src->ninputs < 0 || src->ninputs > src->nargs) {
      snprintf(err, errlen, "load: target %s: kernel %s takes %d arguments in the module, the kernel list says %d",
               v->target, src->name, P->kernels[k].nargs, src->nargs);
      return KL_ERR;
    }
    const kl_binary_info *b = &pt->binaries[i];
    if (!b->data || !b->size) {
      snprintf(err, errlen, "load: target %s: kernel %s has no binary", v->target, src->name);
      return KL_ERR;
    }
  }
  if (n == 0 && P->nkernels) {
    snprintf(err, errlen, "load: target %s: the module has %d kernels, the kernel list none", v->target, P->nkernels);
    return KL_ERR;
  }
  v->kernels = kl_xcalloc(n ? n : 1, sizeof *v->kernels);
  v->bins = kl_xcalloc(n ? n : 1, sizeof *v->bins);
  v->bin_info = kl_xcalloc(n ? n : 1, sizeof *v->bin_info);
  v->nkernels = n;
  for (int k = 0; k < n; k++) {
    kl_bundle_kernel *K = (kl_bundle_kernel *)&P->kernels[k];
    const kl_binary_info *b = NULL;
    for (int i = 0; i < n && !b; i++)
      if (!strcmp(pt->kernels[i].name, K->name)) b = &pt->binaries[i];
    kernel_info_of(&v->kernels[k], K);
    v->kernels[k].primary_inputs = primary_inputs_of(v->module, K->name);
    v->kernels[k].output_swizzle = func_str_of(v->module, K->name, "output_swizzle");
    v->kernels[k].fragment_loads = func_str_of(v->module, K->name, "fragment_loads");
    v->kernels[k].perf_config_source = func_str_of(v->module, K->name, "perf_config_source");
    v->kernels[k].problem_key = func_str_of(v->module, K->name, "problem_key");
    v->kernels[k].problem = func_str_of(v->module, K->name, "problem");
    v->kernels[k].async_copy = func_str_of(v->module, K->name, "async_copy");
    v->kernels[k].async_lds_layout = func_str_of(v->module, K->name, "async_lds_layout");
    v->kernels[k].amd_lds_layout = func_str_of(v->module, K->name, "amd_lds_layout");
    v->kernels[k].pipeline_stages = func_int_of(v->module, K->name, "pipeline_stages");
    v->kernels[k].tma = func_str_of(v->module, K->name, "tma");
    v->kernels[k].ws = func_str_of(v->module, K->name, "ws");
    v->kernels[k].tma_swizzle = func_int_of(v->module, K->name, "tma_swizzle");
    v->kernels[k].fp8_promote = func_int_of(v->module, K->name, "fp8_promote");
    v->kernels[k].raster_group_m = func_int_of(v->module, K->name, "raster_group_m");
    v->kernels[k].persistent = func_str_of(v->module, K->name, "persistent");
    v->kernels[k].grid_persistent = func_int_of(v->module, K->name, "grid_persistent");
    v->kernels[k].cluster = func_str_of(v->module, K->name, "cluster");
    v->kernels[k].cluster_size = func_int_of(v->module, K->name, "cluster_size");
    v->kernels[k].accesses = kl_kernel_accesses(kl_module_lookup(v->module, K->name), v->kernels[k].arg_names,
                                                v->kernels[k].nargs, &v->kernels[k].naccesses);
    v->bins[k].arch = v->desc->arch;
    v->bins[k].data = kl_xmalloc(b->size + 1);
    memcpy(v->bins[k].data, b->data, b->size);
    ((char *)v->bins[k].data)[b->size] = 0;
    v->bins[k].size = b->size;
    v->bin_info[k] = (kl_binary_info){ v->target, v->bins[k].data, v->bins[k].size };
    K->binary = v->bins[k].data;
    K->binary_size = v->bins[k].size;
  }
  return build_tma(v, err, errlen);
}

kl_program *kl_program_assemble(kl_ctx *ctx, int nparts, const kl_program_part *parts, char *err, size_t errlen) {
  if (nparts < 1 || !parts) {
    snprintf(err, errlen, "load: no targets");
    return NULL;
  }
  kl_program *p = kl_xcalloc(1, sizeof *p);
  p->refcount = 1;
  p->ctx = ctx;
  p->nvariants = nparts;
  p->v = kl_xcalloc(nparts, sizeof *p->v);
  for (int i = 0; i < nparts; i++) {
    if (!parts[i].target) {
      snprintf(err, errlen, "load: target %d has no name", i);
      kl_program_release(p);
      return NULL;
    }
    p->v[i].target = kl_intern(ctx, parts[i].target);
    for (int j = 0; j < i; j++)
      if (!strcmp(p->v[j].target, p->v[i].target)) {
        snprintf(err, errlen, "load: target '%s' given twice", p->v[i].target);
        kl_program_release(p);
        return NULL;
      }
    if (assemble_variant(&p->v[i], &parts[i], err, errlen) != KL_OK) {
      kl_program_release(p);
      return NULL;
    }
  }
  return p;
}

int kl_program_target_for_device(const kl_program *p, const kl_device_info *info) {
  variant *v = variant_for((kl_program *)p, info);
  return v ? (int)(v - p->v) : -1;
}

/* ---- prepared runs ---- */
typedef struct prep_out {
  int slot;
  kl_dtype dtype;
  int rank;
  int64_t shape[KL_MAX_RANK], strides[KL_MAX_RANK];
} prep_out;

struct kl_prepared {
  kl_program *p;
  variant *v;
  kl_device *dev; /* NULL once the device was destroyed (prep_device_gone) */
  loaded *l;
  kl_dev_watch *watch;
  int nsets, nslots, nsteps, noutputs;
  size_t set_bytes;
  size_t *bytes;     /* per slot */
  bool *is_result;   /* per slot */
  void **ptr;        /* [set * nslots + slot] device pointers */
  void ***args;      /* [set * nsteps + step] launch argument arrays (point into ptr) */
  size_t *arg_sizes; /* sizeof(void *) for the widest launch */
  prep_out *outs;
};

static size_t type_bytes_span(const kl_type *t) {
  int64_t rm[KL_MAX_RANK];
  const int64_t *st = t->strides;
  if (!st) {
    int64_t s = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
      rm[i] = s;
      s *= t->shape[i] > 0 ? t->shape[i] : 1;
    }
    st = rm;
  }
  int64_t span = 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) return 0;
    span += (t->shape[i] - 1) * st[i];
  }
  return (size_t)span * kl_dtype_size(kl_dtype_of_type(t->elem));
}

static void prep_free_buffers(kl_prepared *r) {
  if (r->ptr && r->dev)
    for (int i = 0; i < r->nsets * r->nslots; i++)
      if (r->ptr[i]) {
        kl_device_free(r->dev, r->ptr[i]);
        r->ptr[i] = NULL;
      }
}
/* The device is being destroyed: free the buffers while it still works, forget it. */
static void prep_device_gone(kl_device *dev, void *user) {
  (void)dev;
  kl_prepared *r = user;
  prep_free_buffers(r);
  r->dev = NULL;
  r->l = NULL;
  r->watch = NULL;
}
static kl_status prep_check_device(kl_prepared *r, const char *what, char *err, size_t errlen) {
  if (r->dev) return KL_OK;
  snprintf(err, errlen, "%s: the device of this prepared run was destroyed", what);
  return KL_ERR;
}

void kl_prepared_free(kl_prepared *r) {
  if (!r) return;
  prep_free_buffers(r);
  kl_device_unwatch(r->watch);
  if (r->args)
    for (int i = 0; i < r->nsets * r->nsteps; i++) free(r->args[i]);
  free(r->args);
  free(r->ptr);
  free(r->bytes);
  free(r->is_result);
  free(r->arg_sizes);
  free(r->outs);
  kl_program_release(r->p);
  free(r);
}

int kl_prepared_nsets(const kl_prepared *r) { return r->nsets; }
size_t kl_prepared_set_bytes(const kl_prepared *r) { return r->set_bytes; }
int kl_prepared_nlaunches(const kl_prepared *r) {
  int n = 0;
  for (int s = 0; s < r->nsteps; s++) n += r->v->plan.t.steps[s].kind == KL_BUNDLE_LAUNCH;
  return n;
}

static kl_status prep_fail(kl_prepared *r, char *err, size_t errlen, const char *what) {
  snprintf(err, errlen, "%s: %s", what, kl_device_error(r->dev));
  return KL_ERR;
}

kl_status kl_prepared_poison(kl_prepared *r, char *err, size_t errlen) {
  if (prep_check_device(r, "prepare: poisoning the results", err, errlen) != KL_OK) return KL_ERR;
  for (int s = 0; s < r->nsets; s++)
    for (int i = 0; i < r->nslots; i++)
      if (r->is_result[i] && r->bytes[i] &&
          kl_device_fill(r->dev, r->ptr[s * r->nslots + i], 0xff, 1, r->bytes[i]) != KL_OK)
        return prep_fail(r, err, errlen, "prepare: poisoning the results");
  return KL_OK;
}

kl_status kl_program_load_kernels(kl_program *p, kl_device *dev, char *err, size_t errlen) {
  const kl_device_info *info = kl_device_get_info(dev);
  variant *v = variant_for(p, info);
  if (!v) {
    snprintf(err, errlen, "load: the program has no binary for device %s (%s)", info->name, info->arch);
    return KL_ERR;
  }
  char lerr[1024];
  if (!load_on(v, dev, lerr, sizeof lerr)) {
    snprintf(err, errlen, "load: %s", strncmp(lerr, "run: ", 5) ? lerr : lerr + 5);
    return KL_ERR;
  }
  return KL_OK;
}

kl_prepared *kl_program_prepare(kl_program *p, kl_device *dev, int ninputs, const kl_named_tensor *inputs,
                                const kl_prepare_opts *opts_in, char *err, size_t errlen) {
  kl_prepare_opts opts = opts_in ? *opts_in : (kl_prepare_opts){ 0 };
  const kl_device_info *info = kl_device_get_info(dev);
  variant *v = variant_with_inputs(p, info, ninputs, inputs, "prepare", err, errlen);
  if (!v) return NULL;
  if (opts.sets < 0 || opts.max_sets < 0) {
    snprintf(err, errlen, "prepare: sets and max_sets must be >= 0");
    return NULL;
  }
  char lerr[1024];
  loaded *l = load_on(v, dev, lerr, sizeof lerr);
  if (!l) {
    snprintf(err, errlen, "prepare: %s", strncmp(lerr, "run: ", 5) ? lerr : lerr + 5);
    return NULL;
  }
  kl_prepared *r = kl_xcalloc(1, sizeof *r);
  r->p = kl_program_retain(p);
  r->v = v;
  r->dev = dev;
  r->l = l;
  r->watch = kl_device_watch(dev, prep_device_gone, r);
  const kl_bundle_target *P = &v->plan.t;
  r->nslots = P->nslots;
  r->nsteps = P->nsteps;
  r->noutputs = P->noutputs;
  r->bytes = kl_xcalloc(r->nslots + 1, sizeof *r->bytes);
  r->is_result = kl_xcalloc(r->nslots + 1, sizeof *r->is_result);
  const kl_tensor **src = kl_xcalloc(r->nslots + 1, sizeof *src); /* host data of params and constants */
  /* inputs and constants */
  for (kl_op *o = kl_graph_body(v->graph)->first; o; o = o->next) {
    int s = (int)o->scratch;
    if (kl_graph_is_param(o)) {
      const kl_tensor *t = input_for(o, ninputs, inputs, "prepare", err, errlen);
      if (!t) goto fail;
      src[s] = t;
      r->bytes[s] = tensor_bytes_span(t);
    } else if (kl_graph_is_constant(o)) {
      src[s] = v->plan.constants[s];
      r->bytes[s] = tensor_bytes_span(src[s]);
    }
  }
  for (int i = 0; i < r->nslots; i++) {
    if (P->slots[i].kind == KL_BUNDLE_RESULT) {
      r->is_result[i] = true;
      r->bytes[i] = type_bytes_span(v->plan.slot_types[i]);
    }
    r->set_bytes += r->bytes[i];
  }
  r->outs = kl_xcalloc(r->noutputs + 1, sizeof *r->outs);
  for (int i = 0; i < r->noutputs; i++) {
    prep_out *po = &r->outs[i];
    const kl_type *t = v->plan.slot_types[P->outputs[i]];
    po->slot = P->outputs[i];
    po->dtype = kl_dtype_of_type(t->elem);
    po->rank = t->rank;
    for (int d = 0; d < t->rank; d++) po->shape[d] = t->shape[d];
    if (t->strides)
      for (int d = 0; d < t->rank; d++) po->strides[d] = t->strides[d];
    else
      kl_strides_row_major(t->rank, po->shape, po->strides);
  }
  /* how many buffer sets */
  if (opts.sets > 0)
    r->nsets = opts.sets;
  else if (opts.rotate_bytes > 0 && r->set_bytes > 0) {
    size_t n = (opts.rotate_bytes + r->set_bytes - 1) / r->set_bytes;
    size_t cap = opts.max_sets > 0 ? (size_t)opts.max_sets : 64;
    r->nsets = (int)(n < 1 ? 1 : n > cap ? cap : n);
  } else
    r->nsets = 1;
  /* device memory: set 0 from the host, the others copied on the device */
  r->ptr = kl_xcalloc((size_t)r->nsets * r->nslots + 1, sizeof *r->ptr);
  for (int s = 0; s < r->nsets; s++)
    for (int i = 0; i < r->nslots; i++) {
      void **d = &r->ptr[s * r->nslots + i];
      if (kl_device_alloc(dev, r->bytes[i], d) != KL_OK) {
        prep_fail(r, err, errlen, "prepare");
        goto fail;
      }
      if (r->is_result[i] || !r->bytes[i]) continue;
      kl_status st = s == 0 ? kl_device_copy_htod(dev, *d, tensor_ptr(src[i]), r->bytes[i])
                            : kl_device_copy_dtod(dev, *d, r->ptr[i], r->bytes[i]);
      if (st != KL_OK) {
        prep_fail(r, err, errlen, "prepare: uploading the inputs");
        goto fail;
      }
    }
  if (!opts.no_poison && kl_prepared_poison(r, err, errlen) != KL_OK) goto fail;
  /* launch arguments per set and step */
  int maxargs = 1;
  for (int s = 0; s < r->nsteps; s++)
    if (P->steps[s].nargs > maxargs) maxargs = P->steps[s].nargs;
  r->arg_sizes = kl_xmalloc((size_t)maxargs * sizeof *r->arg_sizes);
  for (int a = 0; a < maxargs; a++) r->arg_sizes[a] = sizeof(void *);
  r->args = kl_xcalloc((size_t)r->nsets * r->nsteps + 1, sizeof *r->args);
  for (int set = 0; set < r->nsets; set++)
    for (int s = 0; s < r->nsteps; s++) {
      const kl_bundle_step *step = &P->steps[s];
      void **a = kl_xmalloc((size_t)(step->nargs + 1) * sizeof *a);
      for (int k = 0; k < step->nargs; k++) a[k] = &r->ptr[set * r->nslots + step->args[k]];
      r->args[set * r->nsteps + s] = a;
    }
  if (kl_device_synchronize(dev) != KL_OK) {
    prep_fail(r, err, errlen, "prepare");
    goto fail;
  }
  free(src);
  return r;
fail:
  free(src);
  kl_prepared_free(r);
  return NULL;
}

kl_status kl_prepared_launch(kl_prepared *r, int set, char *err, size_t errlen) {
  if (prep_check_device(r, "launch", err, errlen) != KL_OK) return KL_ERR;
  if (set < 0 || set >= r->nsets) {
    snprintf(err, errlen, "launch: buffer set %d out of range (0..%d)", set, r->nsets - 1);
    return KL_ERR;
  }
  const kl_bundle_target *P = &r->v->plan.t;
  bool host = kl_device_get_info(r->dev)->kind == KL_DEVICE_HOST;
  for (int s = 0; s < r->nsteps; s++) {
    const kl_bundle_step *step = &P->steps[s];
    /* every slot has its buffer: workspace steps are no-ops; a launch with tensor maps
     * (TMA) builds them from the set's pointers (kl_plan_exec_step) */
    if (step->kind != KL_BUNDLE_LAUNCH || (r->v->tma && r->v->tma[step->kernel].n)) {
      kl_plan_exec x = { r->dev, host, true, P,    r->l->kernels, &r->ptr[set * r->nslots],
                         NULL,   NULL, NULL, NULL, r->v->tma,     r->v->persistent };
      if (kl_plan_exec_step(&x, s, err, errlen) != KL_OK) return KL_ERR;
      continue;
    }
    const kl_bundle_kernel *k = &P->kernels[step->kernel];
    size_t shared = kl_plan_launch_shared_bytes(r->dev, k);
    uint32_t grid[3] = { kl_plan_launch_grid(r->dev, r->l->kernels[step->kernel], k,
                                             r->v->persistent && r->v->persistent[step->kernel], shared),
                         (uint32_t)k->grid[1], (uint32_t)k->grid[2] },
             block[3] = { (uint32_t)k->block[0], (uint32_t)k->block[1], (uint32_t)k->block[2] };
    /* the dynamic shared memory of an NVIDIA kernel above 48 KiB of LDS (without it the
     * kernel's LDS accesses fault) */
    if (kl_device_launch(r->l->kernels[step->kernel], grid, block, shared, r->args[set * r->nsteps + s], r->arg_sizes,
                         step->nargs) != KL_OK) {
      snprintf(err, errlen, "launch of %s: %s", k->name, kl_device_error(r->dev));
      return KL_ERR;
    }
  }
  return KL_OK;
}

kl_status kl_prepared_sync(kl_prepared *r, char *err, size_t errlen) {
  if (prep_check_device(r, "synchronize", err, errlen) != KL_OK) return KL_ERR;
  if (kl_device_synchronize(r->dev) != KL_OK) return prep_fail(r, err, errlen, "synchronize");
  return KL_OK;
}

kl_status kl_prepared_time(kl_prepared *r, int warmup, int reps, float *ms_out, char *err, size_t errlen) {
  if (prep_check_device(r, "time", err, errlen) != KL_OK) return KL_ERR;
  if (warmup < 0 || reps < 1) {
    snprintf(err, errlen, "time: warmup must be >= 0 and reps >= 1");
    return KL_ERR;
  }
  int set = 0;
  for (int i = 0; i < warmup; i++, set = (set + 1) % r->nsets)
    if (kl_prepared_launch(r, set, err, errlen) != KL_OK) return KL_ERR;
  if (kl_prepared_sync(r, err, errlen) != KL_OK) return KL_ERR;
  kl_dev_event **ev = kl_xcalloc((size_t)reps + 1, sizeof *ev);
  kl_status st = KL_OK;
  for (int i = 0; i <= reps && st == KL_OK; i++)
    if (kl_device_event_create(r->dev, &ev[i]) != KL_OK) st = prep_fail(r, err, errlen, "time");
  if (st == KL_OK && kl_device_event_record(ev[0]) != KL_OK) st = prep_fail(r, err, errlen, "time");
  for (int i = 0; i < reps && st == KL_OK; i++, set = (set + 1) % r->nsets) {
    st = kl_prepared_launch(r, set, err, errlen);
    if (st == KL_OK && kl_device_event_record(ev[i + 1]) != KL_OK) st = prep_fail(r, err, errlen, "time");
  }
  if (st == KL_OK) st = kl_prepared_sync(r, err, errlen);
  for (int i = 0; i < reps && st == KL_OK; i++)
    if (kl_device_event_elapsed_ms(ev[i], ev[i + 1], &ms_out[i]) != KL_OK) st = prep_fail(r, err, errlen, "time");
  for (int i = 0; i <= reps; i++)
    if (ev[i]) kl_device_event_destroy(ev[i]);
  free(ev);
  return st;
}

kl_status kl_prepared_outputs(kl_prepared *r, int set, int *noutputs, kl_tensor ***outputs, char *err, size_t errlen) {
  *noutputs = 0;
  *outputs = NULL;
  if (prep_check_device(r, "outputs", err, errlen) != KL_OK) return KL_ERR;
  if (set < 0 || set >= r->nsets) {
    snprintf(err, errlen, "outputs: buffer set %d out of range (0..%d)", set, r->nsets - 1);
    return KL_ERR;
  }
  if (kl_prepared_sync(r, err, errlen) != KL_OK) return KL_ERR;
  kl_tensor **outs = kl_xcalloc(r->noutputs + 1, sizeof *outs);
  for (int i = 0; i < r->noutputs; i++) {
    prep_out *po = &r->outs[i];
    outs[i] = kl_tensor_zeros(po->dtype, po->rank, po->shape, po->strides, err, errlen);
    size_t n = outs[i] ? tensor_bytes_span(outs[i]) : 0;
    if (n > r->bytes[po->slot]) n = r->bytes[po->slot];
    if (!outs[i] ||
        (n && kl_device_copy_dtoh(r->dev, tensor_ptr(outs[i]), r->ptr[set * r->nslots + po->slot], n) != KL_OK)) {
      if (outs[i]) prep_fail(r, err, errlen, "outputs");
      for (int j = 0; j <= i; j++) kl_tensor_release(outs[j]);
      free(outs);
      return KL_ERR;
    }
  }
  *noutputs = r->noutputs;
  *outputs = outs;
  return KL_OK;
}
