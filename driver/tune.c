/* tune.c — kl_tune_run (tune.h): a compile thread pool with one IR context per thread,
 * then serial timing with rotating buffers and an outlier-robust median. */
#include "driver/tune.h"
#include "driver/tune_check.h"
#include "core/arena.h"
#include "core/diag.h"
#include "core/dialect_graph.h"
#include "core/parse.h"
#include "core/print.h"
#include "passes/passes.h"
#include "runtime/tensor.h"
#include "runtime/threadpool.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

typedef struct pool {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  const char *text; /* the graph's printed IR */
  const char *target;
  const kl_tune_opts *o;
  kl_tune_result *res;
  kl_program **progs;
  int next, done;
  int *order;   /* finish order of the candidates */
  kl_ctx **ctx; /* one per thread, destroyed after the programs */
} pool;

typedef struct worker {
  pool *p;
  int id;
} worker;

static unsigned long long hash_binaries(kl_program *p, const char *target) {
  unsigned long long h = 14695981039346656037ull;
  int n = kl_program_nkernels(p, target);
  for (int i = 0; i < n; i++) {
    const kl_binary_info *b = kl_program_binary(p, target, kl_program_kernel(p, target, i)->name);
    for (size_t j = 0; b && j < b->size; j++) h = (h ^ ((const unsigned char *)b->data)[j]) * 1099511628211ull;
  }
  return h;
}

static void *work(void *arg) {
  worker *w = arg;
  pool *p = w->p;
  kl_ctx *ctx = kl_ctx_create();
  kl_register_builtin_passes(ctx);
  p->ctx[w->id] = ctx;
  kl_op *graph = NULL;
  char perr[2048] = "";
  kl_op *m = kl_parse_module(ctx, p->text, strlen(p->text), "<tune>");
  if (m)
    for (kl_op *o = kl_module_body(m)->first; o && !graph; o = o->next)
      if (kl_is_graph(o)) graph = o;
  if (!graph) {
    char *d = kl_diag_take(ctx);
    snprintf(perr, sizeof perr, "tune: the graph does not parse back: %s", d);
    free(d);
  }
  for (;;) {
    pthread_mutex_lock(&p->mu);
    int i = p->next < p->o->nconfigs ? p->next++ : -1;
    pthread_mutex_unlock(&p->mu);
    if (i < 0) break;
    kl_tune_result *r = &p->res[i];
    double t0 = now_ms();
    kl_program *prog = NULL;
    if (!graph) {
      r->error = kl_xstrdup(perr);
    } else {
      const char *cfg = p->o->configs[i];
      kl_compile_opts co = { .targets = &p->target, .ntargets = 1, .perf_config = cfg && *cfg ? cfg : NULL };
      char err[4096] = "";
      prog = kl_compile(graph, &co, err, sizeof err);
      if (!prog) {
        size_t l = strlen(err);
        while (l && err[l - 1] == '\n') err[--l] = 0;
        r->error = kl_xstrdup(*err ? err : "compile failed");
      } else {
        r->binary_hash = hash_binaries(prog, p->target);
      }
    }
    r->compile_ms = now_ms() - t0;
    pthread_mutex_lock(&p->mu);
    p->progs[i] = prog;
    p->order[p->done++] = i;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
  }
  return NULL;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Linear-interpolated quantile q of sorted v[n]. */
static double quantile(const double *v, int n, double q) {
  double pos = q * (n - 1);
  int lo = (int)floor(pos), hi = lo + 1 < n ? lo + 1 : lo;
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

static void robust_stats(const float *ms, int n, kl_tune_result *r) {
  double *v = kl_xmalloc((size_t)n * sizeof *v), *kept = kl_xmalloc((size_t)n * sizeof *kept);
  for (int i = 0; i < n; i++) v[i] = ms[i];
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  double q1 = quantile(v, n, 0.25), q3 = quantile(v, n, 0.75), iqr = q3 - q1;
  int k = 0;
  for (int i = 0; i < n; i++)
    if (v[i] >= q1 - 1.5 * iqr && v[i] <= q3 + 1.5 * iqr) kept[k++] = v[i];
  r->q1_ms = q1;
  r->q3_ms = q3;
  r->min_ms = v[0];
  r->median_ms = quantile(kept, k, 0.5);
  r->runs = n;
  r->dropped = n - k;
  free(v);
  free(kept);
}

static void set_error(kl_tune_result *r, const char *fmt, const char *msg) {
  char buf[4096];
  snprintf(buf, sizeof buf, fmt, msg);
  free(r->error);
  r->error = kl_xstrdup(buf);
}

/* Times candidate i; checks its outputs against ref (taking them as ref when *ref is NULL).
 * The phases' times go to r: load_ms, prepare_ms, run_ms, check_ms. */
static void measure(kl_program *prog, const kl_tune_opts *o, kl_threadpool *pool, kl_tune_result *r, kl_tensor ***ref,
                    int *nref) {
  char err[4096] = "";
  double tl = now_ms(); /* loading the binaries (a GPU driver's JIT of PTX) is compile time too */
  if (kl_program_load_kernels(prog, o->dev, err, sizeof err) != KL_OK) return set_error(r, "load: %s", err);
  double tp = now_ms();
  r->load_ms = tp - tl;
  kl_prepare_opts po = { .rotate_bytes = o->rotate_bytes ? o->rotate_bytes : ((size_t)64 << 20), .max_sets = 8 };
  kl_prepared *pr = kl_program_prepare(prog, o->dev, o->ninputs, o->inputs, &po, err, sizeof err);
  double tr = now_ms();
  r->prepare_ms = tr - tp;
  if (!pr) return set_error(r, "prepare: %s", err);
  int runs = o->runs > 0 ? o->runs : 20, warmup = o->warmup > 0 ? o->warmup : 3;
  double budget = o->budget_ms > 0 ? o->budget_ms : 2000;
  float probe;
  if (kl_prepared_time(pr, 1, 1, &probe, err, sizeof err) != KL_OK) {
    kl_prepared_free(pr);
    return set_error(r, "run: %s", err);
  }
  if (probe > 0 && probe * runs > budget) {
    runs = (int)(budget / probe);
    if (runs < 5) runs = 5;
  }
  float *ms = kl_xmalloc((size_t)runs * sizeof *ms);
  kl_status st = kl_prepared_time(pr, warmup > 1 ? warmup - 1 : 0, runs, ms, err, sizeof err);
  double tc = now_ms();
  r->run_ms = tc - tr;
  if (st != KL_OK) {
    free(ms);
    kl_prepared_free(pr);
    return set_error(r, "run: %s", err);
  }
  robust_stats(ms, runs, r);
  free(ms);
  int n = 0;
  kl_tensor **outs = NULL;
  st = kl_prepared_outputs(pr, 0, &n, &outs, err, sizeof err);
  kl_prepared_free(pr);
  if (st != KL_OK) {
    r->check_ms = now_ms() - tc;
    return set_error(r, "outputs: %s", err);
  }
  if (!*ref) {
    *ref = outs;
    *nref = n;
    r->check_ms = now_ms() - tc;
    return;
  }
  if (o->corrupt_output) o->corrupt_output(r->config, n, outs, o->user);
  char msg[1024];
  int c = kl_tune_check(pool, n, outs, *nref, *ref, msg, sizeof msg);
  if (c < 0)
    set_error(r, "%s", msg);
  else if (c > 0)
    set_error(r, "wrong results: %s", msg);
  for (int i = 0; i < n; i++) kl_tensor_release(outs[i]);
  free(outs);
  r->check_ms = now_ms() - tc;
}

kl_status kl_tune_run(kl_op *graph, const kl_tune_opts *o, kl_tune_report *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (o->nconfigs < 1) {
    snprintf(err, errlen, "tune: no candidates");
    return KL_ERR;
  }
  if (!o->dev) {
    snprintf(err, errlen, "tune: no device");
    return KL_ERR;
  }
  const char *target = o->target ? o->target : kl_device_get_info(o->dev)->arch;
  int jobs = o->jobs > 0 ? o->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (jobs < 1) jobs = 1;
  if (jobs > o->nconfigs) jobs = o->nconfigs;
  if (jobs > 256) jobs = 256;
  pool p = { .text = NULL, .target = target, .o = o };
  pthread_mutex_init(&p.mu, NULL);
  pthread_cond_init(&p.cv, NULL);
  char *text = kl_print_op(graph, KL_PRINT_GENERIC | KL_PRINT_LOCS);
  p.text = text;
  out->n = o->nconfigs;
  out->r = kl_xcalloc((size_t)o->nconfigs, sizeof *out->r);
  out->jobs = jobs;
  for (int i = 0; i < o->nconfigs; i++) out->r[i].config = o->configs[i];
  p.res = out->r;
  p.progs = kl_xcalloc((size_t)o->nconfigs, sizeof *p.progs);
  p.order = kl_xcalloc((size_t)o->nconfigs, sizeof *p.order);
  p.ctx = kl_xcalloc((size_t)jobs, sizeof *p.ctx);
  pthread_t *th = kl_xcalloc((size_t)jobs, sizeof *th);
  worker *ws = kl_xcalloc((size_t)jobs, sizeof *ws);
  double t0 = now_ms();
  int started = 0;
  for (int i = 0; i < jobs; i++) {
    ws[i] = (worker){ &p, i };
    if (pthread_create(&th[i], NULL, work, &ws[i]) == 0)
      started++;
    else
      break;
  }
  if (!started) work(&ws[0]), started = 0; /* no thread could start: compile here */
  kl_tune_progress pg = { .phase = "compile", .total = o->nconfigs, .best_ms = -1 };
  int reported = 0;
  pthread_mutex_lock(&p.mu);
  while (reported < o->nconfigs) {
    while (reported == p.done) pthread_cond_wait(&p.cv, &p.mu);
    while (reported < p.done) {
      int i = p.order[reported++];
      pthread_mutex_unlock(&p.mu);
      if (o->progress) {
        pg.done = reported;
        pg.config = o->configs[i];
        pg.ms = out->r[i].error ? -1 : 0;
        pg.elapsed_ms = now_ms() - t0;
        o->progress(&pg, o->user);
      }
      pthread_mutex_lock(&p.mu);
    }
  }
  pthread_mutex_unlock(&p.mu);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  out->compile_wall_ms = now_ms() - t0;

  double t1 = now_ms();
  char perr[256];
  kl_threadpool *cpool = jobs > 1 ? kl_threadpool_create(jobs, perr, sizeof perr) : NULL; /* for the checks */
  kl_tensor **ref = NULL;
  int nref = 0, best = -1;
  pg = (kl_tune_progress){ .phase = "measure", .total = o->nconfigs, .best_ms = -1 };
  for (int i = 0; i < o->nconfigs; i++) {
    kl_tune_result *r = &out->r[i];
    if (p.progs[i] && !r->error) measure(p.progs[i], o, cpool, r, &ref, &nref);
    if (!r->error && (best < 0 || r->median_ms < out->r[best].median_ms)) best = i;
    if (o->progress) {
      pg.done = i + 1;
      pg.config = o->configs[i];
      pg.ms = r->error ? -1 : r->median_ms;
      pg.best_config = best >= 0 ? o->configs[best] : NULL;
      pg.best_ms = best >= 0 ? out->r[best].median_ms : -1;
      pg.elapsed_ms = now_ms() - t0;
      o->progress(&pg, o->user);
    }
  }
  out->measure_wall_ms = now_ms() - t1;
  if (cpool) kl_threadpool_destroy(cpool);
  for (int i = 0; i < nref; i++) kl_tensor_release(ref[i]);
  free(ref);
  for (int i = 0; i < o->nconfigs; i++)
    if (p.progs[i]) kl_program_release(p.progs[i]);
  for (int i = 0; i < jobs; i++)
    if (p.ctx[i]) kl_ctx_destroy(p.ctx[i]);
  free(p.progs);
  free(p.order);
  free(p.ctx);
  free(th);
  free(ws);
  free(text);
  pthread_mutex_destroy(&p.mu);
  pthread_cond_destroy(&p.cv);
  return KL_OK;
}

void kl_tune_report_free(kl_tune_report *r) {
  for (int i = 0; i < r->n; i++) free(r->r[i].error);
  free(r->r);
  memset(r, 0, sizeof *r);
}
