/* threadpool.c — persistent pthread workers + an atomic work counter. See threadpool.h. */
#include "core/env.h"
#include "runtime/threadpool.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/arena.h"

struct kl_threadpool {
  int nthreads;
  int nstarted;
  pthread_t *threads;
  pthread_mutex_t call_mu; /* serialises parallel_for callers */
  pthread_mutex_t mu;
  pthread_cond_t work_cv, done_cv;
  /* the current job (written under mu before the generation bump) */
  kl_parallel_fn fn;
  void *user;
  int64_t n, chunk;
  _Atomic int64_t next;
  uint64_t generation;
  int active; /* workers that have not finished the current generation */
  bool stop;
};

typedef struct worker_arg {
  kl_threadpool *pool;
  int index;
} worker_arg;

static __thread kl_threadpool *tl_pool; /* the pool whose job this thread is running */
static __thread int tl_worker;

int kl_threadpool_default_threads(void) {
  const char *env = getenv("KILN_THREADS");
  if (env && *env) {
    char *end;
    long v = strtol(env, &end, 10);
    if (*end == '\0' && v > 0 && v <= 4096) return (int)v;
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    kl_env_warn_once(&warned, "KILN_THREADS", env, "not a thread count between 1 and 4096; using the number of CPUs");
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

static void run_chunks(kl_threadpool *p, int worker) {
  kl_threadpool *saved_pool = tl_pool;
  int saved_worker = tl_worker;
  tl_pool = p;
  tl_worker = worker;
  for (;;) {
    int64_t start = atomic_fetch_add_explicit(&p->next, p->chunk, memory_order_relaxed);
    if (start >= p->n) break;
    int64_t end = start + p->chunk < p->n ? start + p->chunk : p->n;
    for (int64_t i = start; i < end; i++) p->fn(p->user, i, worker);
  }
  tl_pool = saved_pool;
  tl_worker = saved_worker;
}

static void *worker_main(void *arg) {
  worker_arg wa = *(worker_arg *)arg;
  free(arg);
  kl_threadpool *p = wa.pool;
  uint64_t seen = 0;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && p->generation == seen) pthread_cond_wait(&p->work_cv, &p->mu);
    if (p->stop) break;
    seen = p->generation;
    pthread_mutex_unlock(&p->mu);
    run_chunks(p, wa.index);
    pthread_mutex_lock(&p->mu);
    if (--p->active == 0) pthread_cond_signal(&p->done_cv);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

kl_threadpool *kl_threadpool_create(int nthreads, char *err, size_t errlen) {
  if (nthreads <= 0) nthreads = kl_threadpool_default_threads();
  kl_threadpool *p = kl_xcalloc(1, sizeof *p);
  p->nthreads = nthreads;
  pthread_mutex_init(&p->call_mu, NULL);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->work_cv, NULL);
  pthread_cond_init(&p->done_cv, NULL);
  atomic_init(&p->next, 0);
  p->threads = kl_xcalloc((size_t)nthreads, sizeof(pthread_t));
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  size_t stack = 0;
  pthread_attr_getstacksize(&attr, &stack);
  if (stack < (size_t)8 << 20) pthread_attr_setstacksize(&attr, (size_t)8 << 20);
  for (int i = 1; i < nthreads; i++) {
    worker_arg *wa = kl_xmalloc(sizeof *wa);
    wa->pool = p;
    wa->index = i;
    int rc = pthread_create(&p->threads[i], &attr, worker_main, wa);
    if (rc != 0) {
      free(wa);
      if (err && errlen)
        snprintf(err, errlen, "threadpool: cannot start thread %d of %d: %s", i, nthreads, strerror(rc));
      pthread_attr_destroy(&attr);
      kl_threadpool_destroy(p);
      return NULL;
    }
    p->nstarted = i;
  }
  pthread_attr_destroy(&attr);
  return p;
}

void kl_threadpool_destroy(kl_threadpool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  pthread_cond_broadcast(&p->work_cv);
  pthread_mutex_unlock(&p->mu);
  for (int i = 1; i <= p->nstarted; i++) pthread_join(p->threads[i], NULL);
  pthread_cond_destroy(&p->work_cv);
  pthread_cond_destroy(&p->done_cv);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->call_mu);
  free(p->threads);
  free(p);
}

int kl_threadpool_size(const kl_threadpool *p) { return p->nthreads; }

void kl_threadpool_parallel_for(kl_threadpool *p, int64_t n, kl_parallel_fn fn, void *user) {
  if (n <= 0) return;
  if (tl_pool == p || p->nthreads == 1 || n == 1) {
    int w = tl_pool == p ? tl_worker : 0;
    for (int64_t i = 0; i < n; i++) fn(user, i, w);
    return;
  }
  pthread_mutex_lock(&p->call_mu);
  pthread_mutex_lock(&p->mu);
  p->fn = fn;
  p->user = user;
  p->n = n;
  int64_t chunk = n / ((int64_t)p->nthreads * 8);
  p->chunk = chunk > 0 ? chunk : 1;
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  p->active = p->nthreads - 1;
  p->generation++;
  pthread_cond_broadcast(&p->work_cv);
  pthread_mutex_unlock(&p->mu);
  run_chunks(p, 0);
  pthread_mutex_lock(&p->mu);
  while (p->active > 0) pthread_cond_wait(&p->done_cv, &p->mu);
  pthread_mutex_unlock(&p->mu);
  pthread_mutex_unlock(&p->call_mu);
}
