/* device.c — the generic device layer: backend registry, name parsing ("auto"),
 * argument validation, allocation tracking, module / kernel / event bookkeeping.
 * See device.h for the contract. */
#include "runtime/device.h"
#include "core/diag.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/arena.h"

#define KL_DEVICE_ERRLEN 1024

struct kl_dev_kernel {
  kl_dev_module *mod;
  void *handle;
  char *name;
  kl_dev_kernel *next;
};

struct kl_dev_module {
  kl_device *dev;
  void *handle;
  kl_dev_kernel *kernels;
  kl_dev_module *next;
};

struct kl_dev_event {
  kl_device *dev;
  void *handle;
  bool recorded;
  kl_dev_event *next;
};

struct kl_dev_stream {
  kl_device *dev;
  void *handle; /* NULL on devices without streams */
  kl_dev_stream *next;
};

struct kl_dev_watch {
  kl_device *dev;
  void (*fn)(kl_device *dev, void *user);
  void *user;
  kl_dev_watch *next;
};

/* Open-addressing set of live allocations: base pointer -> size. */
typedef struct alloc_slot {
  uintptr_t key;
  size_t size;
} alloc_slot; /* key 0 empty, 1 deleted */

struct kl_device {
  const kl_device_ops *ops;
  void *impl;
  kl_device_info info;
  char err[KL_DEVICE_ERRLEN];
  kl_dev_module *modules;
  kl_dev_event *events;
  kl_dev_stream *streams;
  kl_dev_watch *watches;
  alloc_slot *slots;
  size_t nslots, nlive, nused; /* nused counts live + deleted */
  size_t bytes_in_use;
};

/* ---- errors ---- */

kl_status kl_device_set_error(kl_device *dev, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kl_verrf(dev->err, sizeof dev->err, fmt, ap);
  va_end(ap);
  return KL_ERR;
}

const char *kl_device_error(const kl_device *dev) { return dev ? dev->err : "no device"; }

/* Appends s to the NUL-terminated dst (capacity cap), truncating. */
static void str_append(char *dst, size_t cap, const char *s) {
  size_t used = strlen(dst), n = strlen(s);
  if (used + 1 >= cap) return;
  if (n > cap - 1 - used) n = cap - 1 - used;
  memcpy(dst + used, s, n);
  dst[used + n] = '\0';
}

/* ---- allocation tracking ---- */

static size_t slot_hash(uintptr_t k, size_t n) {
  uint64_t h = (uint64_t)k * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 17) & (n - 1);
}

static void slots_insert_raw(alloc_slot *s, size_t n, uintptr_t key, size_t size) {
  size_t i = slot_hash(key, n);
  while (s[i].key > 1) i = (i + 1) & (n - 1);
  s[i].key = key;
  s[i].size = size;
}

static void track_alloc(kl_device *d, void *p, size_t size) {
  if ((d->nused + 1) * 4 >= d->nslots * 3) {
    size_t n = d->nslots ? d->nslots * 2 : 64;
    while (d->nlive * 2 >= n) n *= 2;
    alloc_slot *ns = kl_xcalloc(n, sizeof *ns);
    for (size_t i = 0; i < d->nslots; i++)
      if (d->slots[i].key > 1) slots_insert_raw(ns, n, d->slots[i].key, d->slots[i].size);
    free(d->slots);
    d->slots = ns;
    d->nslots = n;
    d->nused = d->nlive;
  }
  slots_insert_raw(d->slots, d->nslots, (uintptr_t)p, size);
  d->nlive++;
  d->nused++;
  d->bytes_in_use += size;
}

static alloc_slot *find_alloc(kl_device *d, void *p) {
  if (!d->nslots) return NULL;
  uintptr_t key = (uintptr_t)p;
  size_t i = slot_hash(key, d->nslots);
  for (size_t probes = 0; probes < d->nslots; probes++) {
    if (d->slots[i].key == 0) return NULL;
    if (d->slots[i].key == key) return &d->slots[i];
    i = (i + 1) & (d->nslots - 1);
  }
  return NULL;
}

/* ---- registry ---- */

static const kl_device_backend builtin_backends[] = {
  { "host", kl_device_open_host },
  { "cuda", kl_device_open_cuda },
  { "hip", kl_device_open_hip },
};
#define N_BUILTIN ((int)(sizeof builtin_backends / sizeof builtin_backends[0]))
#define MAX_EXTRA 16
static const kl_device_backend *extra_backends[MAX_EXTRA];
static int n_extra;
static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;

static const kl_device_backend *find_backend(const char *name, size_t n) {
  for (int i = 0; i < N_BUILTIN; i++)
    if (strlen(builtin_backends[i].name) == n && strncmp(builtin_backends[i].name, name, n) == 0)
      return &builtin_backends[i];
  const kl_device_backend *found = NULL;
  pthread_mutex_lock(&registry_mu);
  for (int i = 0; i < n_extra && !found; i++)
    if (strlen(extra_backends[i]->name) == n && strncmp(extra_backends[i]->name, name, n) == 0)
      found = extra_backends[i];
  pthread_mutex_unlock(&registry_mu);
  return found;
}

kl_status kl_device_register_backend(const kl_device_backend *b, char *err, size_t errlen) {
  if (!b || !b->name || !b->name[0] || !b->open || strchr(b->name, ':') || strcmp(b->name, "auto") == 0) {
    kl_errf(err, errlen, "device backend: a backend needs a name (no ':', not 'auto') and an open function");
    return KL_ERR;
  }
  if (find_backend(b->name, strlen(b->name))) {
    kl_errf(err, errlen, "device backend '%s' is already registered", b->name);
    return KL_ERR;
  }
  pthread_mutex_lock(&registry_mu);
  kl_status st = KL_OK;
  if (n_extra == MAX_EXTRA) {
    kl_errf(err, errlen, "device backend table is full (%d extra backends)", MAX_EXTRA);
    st = KL_ERR;
  } else {
    extra_backends[n_extra++] = b;
  }
  pthread_mutex_unlock(&registry_mu);
  return st;
}

int kl_device_backend_count(void) {
  pthread_mutex_lock(&registry_mu);
  int n = N_BUILTIN + n_extra;
  pthread_mutex_unlock(&registry_mu);
  return n;
}

const char *kl_device_backend_name(int i) {
  if (i < 0) return NULL;
  if (i < N_BUILTIN) return builtin_backends[i].name;
  pthread_mutex_lock(&registry_mu);
  const char *n = i - N_BUILTIN < n_extra ? extra_backends[i - N_BUILTIN]->name : NULL;
  pthread_mutex_unlock(&registry_mu);
  return n;
}

/* ---- open / destroy ---- */

kl_device *kl_device_new(const kl_device_ops *ops, void *impl, const kl_device_info *info) {
  kl_device *d = kl_xcalloc(1, sizeof *d);
  d->ops = ops;
  d->impl = impl;
  if (info) d->info = *info;
  return d;
}

void *kl_device_impl(const kl_device *dev) { return dev->impl; }
kl_device_info *kl_device_info_mut(kl_device *dev) { return &dev->info; }
const kl_device_info *kl_device_get_info(const kl_device *dev) { return &dev->info; }

kl_device *kl_device_open(const char *name, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!name || !name[0]) name = "auto";
  if (strcmp(name, "auto") == 0) {
    char note[512] = "", e[512];
    static const char *const order[] = { "hip", "cuda" };
    for (int i = 0; i < 2; i++) {
      e[0] = '\0';
      kl_device *d = kl_device_open(order[i], e, sizeof e);
      if (d) return d;
      if (note[0]) str_append(note, sizeof note, "; ");
      str_append(note, sizeof note, e);
    }
    kl_device *d = kl_device_open("host", err, errlen);
    if (d) {
      snprintf(d->info.note, sizeof d->info.note, "auto: ");
      str_append(d->info.note, sizeof d->info.note, note);
    }
    return d;
  }
  const char *colon = strchr(name, ':');
  size_t n = colon ? (size_t)(colon - name) : strlen(name);
  int ordinal = 0;
  if (colon) {
    char *end;
    long v = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || v < 0 || v > 1024) {
      kl_errf(err, errlen, "device '%s': the ordinal after ':' must be a number >= 0", name);
      return NULL;
    }
    ordinal = (int)v;
  }
  const kl_device_backend *b = find_backend(name, n);
  if (!b) {
    char list[256] = "";
    for (int i = 0, cnt = kl_device_backend_count(); i < cnt; i++) {
      str_append(list, sizeof list, kl_device_backend_name(i));
      str_append(list, sizeof list, ", ");
    }
    kl_errf(err, errlen, "unknown device '%s' (known: %sauto)", name, list);
    return NULL;
  }
  kl_device *d = b->open(ordinal, err, errlen);
  if (d && !d->info.backend[0]) snprintf(d->info.backend, sizeof d->info.backend, "%s", b->name);
  return d;
}

static void free_module(kl_dev_module *m) {
  kl_device *d = m->dev;
  for (kl_dev_kernel *k = m->kernels, *nk; k; k = nk) {
    nk = k->next;
    if (d->ops->release_kernel) d->ops->release_kernel(d, k->handle);
    free(k->name);
    free(k);
  }
  d->ops->unload(d, m->handle);
  free(m);
}

kl_dev_watch *kl_device_watch(kl_device *dev, void (*fn)(kl_device *dev, void *user), void *user) {
  kl_dev_watch *w = kl_xcalloc(1, sizeof *w);
  w->dev = dev;
  w->fn = fn;
  w->user = user;
  w->next = dev->watches;
  dev->watches = w;
  return w;
}

void kl_device_unwatch(kl_dev_watch *w) {
  if (!w) return;
  kl_dev_watch **pp = &w->dev->watches;
  while (*pp && *pp != w) pp = &(*pp)->next;
  if (*pp) *pp = w->next;
  free(w);
}

void kl_device_destroy(kl_device *dev) {
  if (!dev) return;
  /* watchers first, with the device intact; each is unlinked before it runs, so it may
   * unwatch others (the list is re-read after every call) */
  while (dev->watches) {
    kl_dev_watch *w = dev->watches;
    dev->watches = w->next;
    w->fn(dev, w->user);
    free(w);
  }
  for (kl_dev_module *m = dev->modules, *n; m; m = n) {
    n = m->next;
    free_module(m);
  }
  for (kl_dev_event *e = dev->events, *n; e; e = n) {
    n = e->next;
    dev->ops->event_destroy(dev, e->handle);
    free(e);
  }
  for (kl_dev_stream *st = dev->streams, *n; st; st = n) {
    n = st->next;
    if (st->handle) dev->ops->stream_destroy(dev, st->handle);
    free(st);
  }
  for (size_t i = 0; i < dev->nslots; i++)
    if (dev->slots[i].key > 1) dev->ops->free(dev, (void *)dev->slots[i].key);
  free(dev->slots);
  dev->ops->destroy(dev);
  free(dev);
}

/* ---- memory ---- */

kl_status kl_device_alloc(kl_device *dev, size_t bytes, void **out) {
  *out = NULL;
  void *p = NULL;
  if (dev->ops->alloc(dev, bytes ? bytes : 1, &p) != KL_OK) return KL_ERR;
  if (!p) return kl_device_set_error(dev, "%s: allocation of %zu bytes returned NULL", dev->info.backend, bytes);
  track_alloc(dev, p, bytes);
  *out = p;
  return KL_OK;
}

kl_status kl_device_free(kl_device *dev, void *ptr) {
  if (!ptr) return KL_OK;
  alloc_slot *s = find_alloc(dev, ptr);
  if (!s)
    return kl_device_set_error(dev, "%s: free of %p, which is not a live allocation of this device", dev->info.backend,
                               ptr);
  size_t size = s->size;
  if (dev->ops->free(dev, ptr) != KL_OK) return KL_ERR;
  s->key = 1; /* deleted */
  dev->nlive--;
  dev->bytes_in_use -= size;
  return KL_OK;
}

size_t kl_device_bytes_in_use(const kl_device *dev) { return dev->bytes_in_use; }

static kl_status do_copy(kl_device *dev, void *dst, const void *src, size_t bytes, kl_copy_kind kind) {
  if (bytes == 0) return KL_OK;
  if (!dst || !src)
    return kl_device_set_error(dev, "%s: copy of %zu bytes with a NULL pointer", dev->info.backend, bytes);
  return dev->ops->copy(dev, dst, src, bytes, kind);
}

kl_status kl_device_copy_htod(kl_device *dev, void *dst, const void *src, size_t bytes) {
  return do_copy(dev, dst, src, bytes, KL_COPY_HTOD);
}
kl_status kl_device_copy_dtoh(kl_device *dev, void *dst, const void *src, size_t bytes) {
  return do_copy(dev, dst, src, bytes, KL_COPY_DTOH);
}
kl_status kl_device_copy_dtod(kl_device *dev, void *dst, const void *src, size_t bytes) {
  return do_copy(dev, dst, src, bytes, KL_COPY_DTOD);
}

kl_status kl_device_fill(kl_device *dev, void *dst, uint32_t pattern, int pattern_bytes, size_t count) {
  if (pattern_bytes != 1 && pattern_bytes != 2 && pattern_bytes != 4)
    return kl_device_set_error(dev, "%s: fill pattern size must be 1, 2 or 4 bytes (got %d)", dev->info.backend,
                               pattern_bytes);
  if (count == 0) return KL_OK;
  if (!dst) return kl_device_set_error(dev, "%s: fill of a NULL pointer", dev->info.backend);
  if ((uintptr_t)dst % (uintptr_t)pattern_bytes != 0)
    return kl_device_set_error(dev, "%s: fill destination %p is not aligned to %d bytes", dev->info.backend, dst,
                               pattern_bytes);
  return dev->ops->fill(dev, dst, pattern, pattern_bytes, count);
}

/* ---- modules and kernels ---- */

static kl_dev_module *add_module(kl_device *dev, void *handle) {
  kl_dev_module *m = kl_xcalloc(1, sizeof *m);
  m->dev = dev;
  m->handle = handle;
  m->next = dev->modules;
  dev->modules = m;
  return m;
}

kl_status kl_device_load(kl_device *dev, const void *binary, size_t size, unsigned flags, kl_dev_module **out) {
  *out = NULL;
  if (!binary || size == 0) return kl_device_set_error(dev, "%s: load of an empty binary", dev->info.backend);
  if (flags & ~(unsigned)KL_LOAD_TRUSTED)
    return kl_device_set_error(dev, "%s: load: unknown flags 0x%x", dev->info.backend, flags);
  void *h = NULL;
  if (dev->ops->load(dev, binary, size, flags, &h) != KL_OK) return KL_ERR;
  *out = add_module(dev, h);
  return KL_OK;
}

void kl_device_unload(kl_dev_module *mod) {
  if (!mod) return;
  kl_device *d = mod->dev;
  kl_dev_module **pp = &d->modules;
  while (*pp && *pp != mod) pp = &(*pp)->next;
  if (*pp) *pp = mod->next;
  free_module(mod);
}

kl_status kl_device_get_kernel(kl_dev_module *mod, const char *name, kl_dev_kernel **out) {
  *out = NULL;
  kl_device *d = mod->dev;
  if (!name || !name[0]) return kl_device_set_error(d, "%s: kernel name is empty", d->info.backend);
  for (kl_dev_kernel *k = mod->kernels; k; k = k->next)
    if (strcmp(k->name, name) == 0) {
      *out = k;
      return KL_OK;
    }
  void *h = NULL;
  if (d->ops->get_kernel(d, mod->handle, name, &h) != KL_OK) return KL_ERR;
  kl_dev_kernel *k = kl_xcalloc(1, sizeof *k);
  k->mod = mod;
  k->handle = h;
  k->name = kl_xstrdup(name);
  k->next = mod->kernels;
  mod->kernels = k;
  *out = k;
  return KL_OK;
}

static kl_status check_launch(kl_dev_kernel *k, const uint32_t grid[3], const uint32_t block[3], size_t shared_bytes,
                              void **args, const size_t *arg_sizes, int nargs) {
  kl_device *d = k->mod->dev;
  if (!grid || !block)
    return kl_device_set_error(d, "%s: launch of %s without grid or block", d->info.backend, k->name);
  for (int i = 0; i < 3; i++)
    if (grid[i] == 0 || block[i] == 0)
      return kl_device_set_error(d, "%s: launch of %s: grid (%u,%u,%u) and block (%u,%u,%u) must be >= 1",
                                 d->info.backend, k->name, grid[0], grid[1], grid[2], block[0], block[1], block[2]);
  uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
  if (d->info.max_threads_per_block > 0 && threads > (uint64_t)d->info.max_threads_per_block)
    return kl_device_set_error(d, "%s: launch of %s: block (%u,%u,%u) has %llu threads, the device allows %d",
                               d->info.backend, k->name, block[0], block[1], block[2], (unsigned long long)threads,
                               d->info.max_threads_per_block);
  if (d->info.max_shared_per_block > 0 && shared_bytes > d->info.max_shared_per_block)
    return kl_device_set_error(d, "%s: launch of %s: %zu bytes of shared memory, the device allows %zu",
                               d->info.backend, k->name, shared_bytes, d->info.max_shared_per_block);
  if (nargs < 0 || (nargs > 0 && !args))
    return kl_device_set_error(d, "%s: launch of %s: %d arguments but no argument array", d->info.backend, k->name,
                               nargs);
  for (int i = 0; i < nargs; i++) {
    if (!args[i])
      return kl_device_set_error(d, "%s: launch of %s: argument %d is NULL (args[i] must point to the value)",
                                 d->info.backend, k->name, i);
    if (arg_sizes && arg_sizes[i] == 0)
      return kl_device_set_error(d, "%s: launch of %s: argument %d has size 0", d->info.backend, k->name, i);
  }
  return KL_OK;
}

kl_status kl_device_launch(kl_dev_kernel *k, const uint32_t grid[3], const uint32_t block[3], size_t shared_bytes,
                           void **args, const size_t *arg_sizes, int nargs) {
  if (!k) return KL_ERR;
  kl_device *d = k->mod->dev;
  if (check_launch(k, grid, block, shared_bytes, args, arg_sizes, nargs) != KL_OK) return KL_ERR;
  return d->ops->launch(d, k->handle, grid, block, shared_bytes, args, arg_sizes, nargs);
}

kl_status kl_device_tensor_map(kl_device *dev, const kl_tensor_map_desc *d, void *out) {
  if (!dev) return KL_ERR;
  if (!d || !out || d->rank < 1 || d->rank > 5)
    return kl_device_set_error(dev, "%s: tensor map of rank %d", dev->info.backend, d ? d->rank : 0);
  if (!dev->ops->tensor_map)
    return kl_device_set_error(dev, "%s: this device has no TMA tensor maps (NVIDIA compute capability 9.0 only)",
                               dev->info.backend);
  return dev->ops->tensor_map(dev, d, out);
}

int kl_device_resident_per_cu(kl_dev_kernel *k, uint32_t block_threads, size_t shared_bytes) {
  kl_device *dev = k && k->mod ? k->mod->dev : NULL;
  if (!dev || !dev->ops->resident) return 1;
  int n = dev->ops->resident(dev, k->handle, block_threads, shared_bytes);
  return n >= 1 ? n : 1;
}

kl_status kl_device_launch_group(kl_device *dev, int n, const kl_dev_launch *l, double *times) {
  if (!dev) return KL_ERR;
  if (n < 0 || (n > 0 && !l)) return kl_device_set_error(dev, "%s: launch group of %d launches", dev->info.backend, n);
  for (int i = 0; i < n; i++) {
    if (!l[i].k) return kl_device_set_error(dev, "%s: launch %d of a group has no kernel", dev->info.backend, i);
    if (l[i].k->mod->dev != dev)
      return kl_device_set_error(dev, "%s: launch %d of a group is a kernel of another device", dev->info.backend, i);
    if (check_launch(l[i].k, l[i].grid, l[i].block, l[i].shared_bytes, l[i].args, l[i].arg_sizes, l[i].nargs) != KL_OK)
      return KL_ERR;
  }
  if (dev->ops->launch_group && n > 1) {
    void **h = kl_xmalloc(((size_t)n + 1) * sizeof *h);
    for (int i = 0; i < n; i++) h[i] = l[i].k->handle;
    kl_status st = dev->ops->launch_group(dev, n, h, l, times);
    free(h);
    return st;
  }
  for (int i = 0; i < n; i++) {
    double t0 = kl_device_now_ms();
    if (dev->ops->launch(dev, l[i].k->handle, l[i].grid, l[i].block, l[i].shared_bytes, l[i].args, l[i].arg_sizes,
                         l[i].nargs) != KL_OK)
      return KL_ERR;
    if (times && dev->info.kind == KL_DEVICE_HOST) {
      times[2 * i] = t0;
      times[2 * i + 1] = kl_device_now_ms();
    }
  }
  return KL_OK;
}

double kl_device_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

kl_status kl_device_synchronize(kl_device *dev) { return dev->ops->synchronize(dev); }

/* ---- events ---- */

kl_status kl_device_event_create(kl_device *dev, kl_dev_event **out) {
  *out = NULL;
  void *h = NULL;
  if (dev->ops->event_create(dev, &h) != KL_OK) return KL_ERR;
  kl_dev_event *e = kl_xcalloc(1, sizeof *e);
  e->dev = dev;
  e->handle = h;
  e->next = dev->events;
  dev->events = e;
  *out = e;
  return KL_OK;
}

kl_status kl_device_event_record(kl_dev_event *ev) {
  if (!ev) return KL_ERR;
  if (ev->dev->ops->event_record(ev->dev, ev->handle) != KL_OK) return KL_ERR;
  ev->recorded = true;
  return KL_OK;
}

kl_status kl_device_event_elapsed_ms(kl_dev_event *start, kl_dev_event *end, float *ms) {
  if (!start || !end) return KL_ERR;
  kl_device *d = start->dev;
  *ms = 0;
  if (end->dev != d) return kl_device_set_error(d, "%s: events of different devices", d->info.backend);
  if (!start->recorded || !end->recorded)
    return kl_device_set_error(d, "%s: elapsed time of an event that was never recorded", d->info.backend);
  return d->ops->event_elapsed(d, start->handle, end->handle, ms);
}

void kl_device_event_destroy(kl_dev_event *ev) {
  if (!ev) return;
  kl_device *d = ev->dev;
  kl_dev_event **pp = &d->events;
  while (*pp && *pp != ev) pp = &(*pp)->next;
  if (*pp) *pp = ev->next;
  d->ops->event_destroy(d, ev->handle);
  free(ev);
}

/* ---- streams ---- */
kl_status kl_device_stream_create(kl_device *dev, kl_dev_stream **out) {
  *out = NULL;
  void *h = NULL;
  if (dev->ops->stream_create && dev->ops->stream_create(dev, &h) != KL_OK) return KL_ERR;
  kl_dev_stream *st = kl_xcalloc(1, sizeof *st);
  st->dev = dev;
  st->handle = h;
  st->next = dev->streams;
  dev->streams = st;
  *out = st;
  return KL_OK;
}

void kl_device_stream_destroy(kl_dev_stream *st) {
  if (!st) return;
  kl_device *d = st->dev;
  kl_dev_stream **pp = &d->streams;
  while (*pp && *pp != st) pp = &(*pp)->next;
  if (*pp) *pp = st->next;
  if (st->handle) d->ops->stream_destroy(d, st->handle);
  free(st);
}

/* Runs one call with the backend's current stream set to st (and back to the default). */
static void on_stream(kl_dev_stream *st, bool set) {
  if (st->handle && st->dev->ops->set_stream) st->dev->ops->set_stream(st->dev, set ? st->handle : NULL);
}

kl_status kl_device_launch_on(kl_dev_stream *st, kl_dev_kernel *k, const uint32_t grid[3], const uint32_t block[3],
                              size_t shared_bytes, void **args, const size_t *arg_sizes, int nargs) {
  if (!st || !k) return KL_ERR;
  if (k->mod->dev != st->dev)
    return kl_device_set_error(st->dev, "%s: launch of %s on a stream of another device", st->dev->info.backend,
                               k->name);
  on_stream(st, true);
  kl_status r = kl_device_launch(k, grid, block, shared_bytes, args, arg_sizes, nargs);
  on_stream(st, false);
  return r;
}

kl_status kl_device_fill_on(kl_dev_stream *st, void *dst, uint32_t pattern, int pattern_bytes, size_t count) {
  if (!st) return KL_ERR;
  on_stream(st, true);
  kl_status r = kl_device_fill(st->dev, dst, pattern, pattern_bytes, count);
  on_stream(st, false);
  return r;
}

kl_status kl_device_copy_dtod_on(kl_dev_stream *st, void *dst, const void *src, size_t bytes) {
  if (!st) return KL_ERR;
  on_stream(st, true);
  kl_status r = kl_device_copy_dtod(st->dev, dst, src, bytes);
  on_stream(st, false);
  return r;
}

kl_status kl_device_event_record_on(kl_dev_event *ev, kl_dev_stream *st) {
  if (!ev || !st) return KL_ERR;
  if (ev->dev != st->dev)
    return kl_device_set_error(st->dev, "%s: event and stream of different devices", st->dev->info.backend);
  on_stream(st, true);
  kl_status r = kl_device_event_record(ev);
  on_stream(st, false);
  return r;
}

kl_status kl_device_stream_wait_event(kl_dev_stream *st, kl_dev_event *ev) {
  if (!ev || !st) return KL_ERR;
  kl_device *d = st->dev;
  if (ev->dev != d) return kl_device_set_error(d, "%s: event and stream of different devices", d->info.backend);
  if (!ev->recorded) return kl_device_set_error(d, "%s: waiting on an event that was never recorded", d->info.backend);
  if (!st->handle || !d->ops->stream_wait_event) return KL_OK; /* no streams: the work is done already */
  return d->ops->stream_wait_event(d, st->handle, ev->handle);
}
