/* device_host.c — the host device: malloc'd memory, host objects linked into the process
 * by ORC's object layer (device_host_loader.c), workgroups run on a thread pool
 * (threadpool.c). The kernel ABI is in device.h (kl_host_kernel_fn). The loader and the
 * pool are created on first use. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#include <llvm/Config/llvm-config.h>

#include "core/arena.h"
#include "runtime/device.h"
#include "runtime/device_host_loader.h"
#include "runtime/threadpool.h"

#define HOST_MAX_SHARED ((size_t)64 << 10)
#define HOST_ALIGN      64

typedef struct host_dev {
  kl_jit *jit;
  kl_threadpool *pool;
  int nthreads;
} host_dev;

typedef struct host_event {
  double t;
} host_event;

static kl_status host_need_jit(kl_device *dev) {
  host_dev *h = kl_device_impl(dev);
  if (h->jit) return KL_OK;
  char err[1024];
  h->jit = kl_jit_create(err, sizeof err);
  if (!h->jit) return kl_device_set_error(dev, "host: %s", err);
  return KL_OK;
}

static void host_destroy(kl_device *dev) {
  host_dev *h = kl_device_impl(dev);
  kl_threadpool_destroy(h->pool);
  kl_jit_destroy(h->jit);
  free(h);
}

static kl_status host_alloc(kl_device *dev, size_t bytes, void **out) {
  size_t rounded = (bytes + HOST_ALIGN - 1) / HOST_ALIGN * HOST_ALIGN;
  if (rounded < bytes) return kl_device_set_error(dev, "host: allocation of %zu bytes is too large", bytes);
  void *p = aligned_alloc(HOST_ALIGN, rounded);
  if (!p) return kl_device_set_error(dev, "host: out of memory allocating %zu bytes", bytes);
  *out = p;
  return KL_OK;
}

static kl_status host_free(kl_device *dev, void *ptr) {
  (void)dev;
  free(ptr);
  return KL_OK;
}

static kl_status host_copy(kl_device *dev, void *dst, const void *src, size_t bytes, kl_copy_kind kind) {
  (void)dev;
  (void)kind;
  memmove(dst, src, bytes);
  return KL_OK;
}

static kl_status host_fill(kl_device *dev, void *dst, uint32_t pattern, int pattern_bytes, size_t count) {
  (void)dev;
  if (pattern_bytes == 1) {
    memset(dst, (int)(pattern & 0xff), count);
  } else if (pattern_bytes == 2) {
    uint16_t v = (uint16_t)pattern, *p = dst;
    for (size_t i = 0; i < count; i++) p[i] = v;
  } else {
    uint32_t *p = dst;
    for (size_t i = 0; i < count; i++) p[i] = pattern;
  }
  return KL_OK;
}

static kl_status host_load(kl_device *dev, const void *binary, size_t size, unsigned flags, void **module) {
  if (host_need_jit(dev) != KL_OK) return KL_ERR;
  host_dev *h = kl_device_impl(dev);
  char err[2048];
  kl_jit_module *m = kl_jit_add_object(h->jit, binary, size, (flags & KL_LOAD_TRUSTED) != 0, err, sizeof err);
  if (!m) return kl_device_set_error(dev, "host: %s", err);
  *module = m;
  return KL_OK;
}

static void host_unload(kl_device *dev, void *module) {
  host_dev *h = kl_device_impl(dev);
  char err[512];
  if (h->jit) kl_jit_remove_module(h->jit, module, err, sizeof err);
}

static kl_status host_get_kernel(kl_device *dev, void *module, const char *name, void **kernel) {
  host_dev *h = kl_device_impl(dev);
  char err[1024];
  void *fn = kl_jit_lookup(h->jit, module, name, err, sizeof err);
  if (!fn) return kl_device_set_error(dev, "host: kernel '%s' not found: %s", name, err);
  *kernel = fn;
  return KL_OK;
}

typedef struct host_launch {
  kl_host_kernel_fn fn;
  void **args;
  int64_t grid[3];
} host_launch;

static void run_block(void *user, int64_t i, int worker) {
  (void)worker;
  host_launch *l = user;
  int64_t id[3];
  id[0] = i % l->grid[0];
  id[1] = (i / l->grid[0]) % l->grid[1];
  id[2] = i / (l->grid[0] * l->grid[1]);
  l->fn(l->args, id, l->grid);
}

static kl_status host_launch_kernel(kl_device *dev, void *kernel, const uint32_t grid[3], const uint32_t block[3],
                                    size_t shared_bytes, void **args, const size_t *arg_sizes, int nargs) {
  (void)block;
  (void)shared_bytes;
  (void)arg_sizes;
  (void)nargs;
  host_dev *h = kl_device_impl(dev);
  if (!h->pool) {
    char err[256];
    h->pool = kl_threadpool_create(h->nthreads, err, sizeof err);
    if (!h->pool) return kl_device_set_error(dev, "host: %s", err);
  }
  uint64_t g01 = (uint64_t)grid[0] * grid[1];
  if (grid[2] > (uint64_t)INT64_MAX / g01)
    return kl_device_set_error(dev, "host: grid (%u,%u,%u) has too many workgroups", grid[0], grid[1], grid[2]);
  host_launch l;
  l.fn = (kl_host_kernel_fn)kernel;
  l.args = args;
  for (int i = 0; i < 3; i++) l.grid[i] = grid[i];
  kl_threadpool_parallel_for(h->pool, l.grid[0] * l.grid[1] * l.grid[2], run_block, &l);
  return KL_OK;
}

/* A launch group: the workgroups of all launches interleaved round-robin in one index
 * space (entry e of the table is workgroup blk[e] of launch which[e]), so the pool's
 * dynamic chunks take work of every launch at once. Timing: a launch's start is the
 * earliest clock reading taken before one of its workgroups ran, its end the latest one
 * taken after (so within one worker, a workgroup run before another's start is seen as
 * such). */
typedef struct host_group {
  host_launch *l;
  int32_t *which;
  int64_t *blk;
  _Atomic int64_t *t0, *t1; /* ns: min start, max end per launch */
  bool timed;
} host_group;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void run_group_block(void *user, int64_t e, int worker) {
  (void)worker;
  host_group *g = user;
  int w = g->which[e];
  host_launch *l = &g->l[w];
  int64_t i = g->blk[e], id[3];
  if (g->timed) {
    int64_t t = now_ns(), old = atomic_load(&g->t0[w]);
    while (t < old && !atomic_compare_exchange_weak(&g->t0[w], &old, t)) {}
  }
  id[0] = i % l->grid[0];
  id[1] = (i / l->grid[0]) % l->grid[1];
  id[2] = i / (l->grid[0] * l->grid[1]);
  l->fn(l->args, id, l->grid);
  if (g->timed) {
    int64_t t = now_ns(), old = atomic_load(&g->t1[w]);
    while (t > old && !atomic_compare_exchange_weak(&g->t1[w], &old, t)) {}
  }
}

static kl_status host_launch_group(kl_device *dev, int n, void *const *kernels, const kl_dev_launch *ls,
                                   double *times) {
  host_dev *h = kl_device_impl(dev);
  if (!h->pool) {
    char err[256];
    h->pool = kl_threadpool_create(h->nthreads, err, sizeof err);
    if (!h->pool) return kl_device_set_error(dev, "host: %s", err);
  }
  host_group g = { 0 };
  g.l = kl_xcalloc((size_t)n, sizeof *g.l);
  int64_t *count = kl_xcalloc((size_t)n, sizeof *count);
  g.t0 = kl_xcalloc((size_t)n, sizeof *g.t0);
  g.t1 = kl_xcalloc((size_t)n, sizeof *g.t1);
  g.timed = times != NULL;
  for (int i = 0; i < n; i++) {
    atomic_init(&g.t0[i], INT64_MAX);
    atomic_init(&g.t1[i], 0);
  }
  int64_t total = 0;
  kl_status st = KL_OK;
  for (int i = 0; i < n && st == KL_OK; i++) {
    uint64_t g01 = (uint64_t)ls[i].grid[0] * ls[i].grid[1];
    g.l[i].fn = (kl_host_kernel_fn)kernels[i];
    g.l[i].args = ls[i].args;
    for (int d = 0; d < 3; d++) g.l[i].grid[d] = ls[i].grid[d];
    count[i] = (int64_t)(g01 * ls[i].grid[2]);
    if (ls[i].grid[2] > (uint64_t)INT64_MAX / g01 || count[i] > (INT64_MAX >> 8) - total || count[i] > (1 << 26))
      st = kl_device_set_error(dev, "host: grid (%u,%u,%u) has too many workgroups for a launch group", ls[i].grid[0],
                               ls[i].grid[1], ls[i].grid[2]);
    total += count[i];
  }
  if (st == KL_OK) {
    g.which = kl_xmalloc(((size_t)total + 1) * sizeof *g.which);
    g.blk = kl_xmalloc(((size_t)total + 1) * sizeof *g.blk);
    int64_t e = 0;
    for (int64_t r = 0; e < total; r++) /* round r: workgroup r of every launch that has one */
      for (int i = 0; i < n; i++)
        if (r < count[i]) {
          g.which[e] = i;
          g.blk[e++] = r;
        }
    kl_threadpool_parallel_for(h->pool, total, run_group_block, &g);
    for (int i = 0; times && i < n; i++) {
      times[2 * i] = (double)atomic_load(&g.t0[i]) * 1e-6;
      times[2 * i + 1] = (double)atomic_load(&g.t1[i]) * 1e-6;
    }
  }
  free(g.which);
  free(g.blk);
  free(g.l);
  free(count);
  free((void *)g.t0);
  free((void *)g.t1);
  return st;
}

static kl_status host_sync(kl_device *dev) {
  (void)dev;
  return KL_OK;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static kl_status host_event_create(kl_device *dev, void **event) {
  (void)dev;
  *event = kl_xcalloc(1, sizeof(host_event));
  return KL_OK;
}

static kl_status host_event_record(kl_device *dev, void *event) {
  (void)dev;
  ((host_event *)event)->t = now_ms();
  return KL_OK;
}

static kl_status host_event_elapsed(kl_device *dev, void *start, void *end, float *ms) {
  (void)dev;
  *ms = (float)(((host_event *)end)->t - ((host_event *)start)->t);
  return KL_OK;
}

static void host_event_destroy(kl_device *dev, void *event) {
  (void)dev;
  free(event);
}

static const kl_device_ops host_ops = {
  .destroy = host_destroy,
  .alloc = host_alloc,
  .free = host_free,
  .copy = host_copy,
  .fill = host_fill,
  .load = host_load,
  .unload = host_unload,
  .get_kernel = host_get_kernel,
  .release_kernel = NULL,
  .launch = host_launch_kernel,
  .launch_group = host_launch_group,
  .synchronize = host_sync,
  .event_create = host_event_create,
  .event_record = host_event_record,
  .event_elapsed = host_event_elapsed,
  .event_destroy = host_event_destroy,
};

kl_device *kl_device_open_host(int ordinal, char *err, size_t errlen) {
  if (ordinal != 0) {
    if (err && errlen) snprintf(err, errlen, "host: there is only one host device (host:0), not host:%d", ordinal);
    return NULL;
  }
  host_dev *h = kl_xcalloc(1, sizeof *h);
  h->nthreads = kl_threadpool_default_threads();
  kl_device_info info;
  memset(&info, 0, sizeof info);
  info.kind = KL_DEVICE_HOST;
  snprintf(info.backend, sizeof info.backend, "host");
  char *cpu = LLVMGetHostCPUName();
  snprintf(info.name, sizeof info.name, "host (%s, %d threads)", cpu, h->nthreads);
  LLVMDisposeMessage(cpu);
  snprintf(info.arch, sizeof info.arch, "host");
  long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
  info.total_mem = pages > 0 && psize > 0 ? (size_t)pages * (size_t)psize : 0;
  info.compute_units = h->nthreads;
  info.wave_size = 1;
  info.max_threads_per_block = 1024;
  info.max_shared_per_block = HOST_MAX_SHARED;
  snprintf(info.driver, sizeof info.driver, "LLVM %d ORC JIT", LLVM_VERSION_MAJOR);
  return kl_device_new(&host_ops, h, &info);
}
