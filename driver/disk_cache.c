/* disk_cache.c — the on-disk program cache of disk_cache.h: keys, entry files published
 * by rename, validation on read, LRU eviction by mtime. */
#include "driver/disk_cache.h"
#include "core/env.h"
#include "driver/bundle.h"
#include "core/print.h"
#include "core/target.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAGIC     "KILNDCE1"
#define HEADER    32
#define PRODUCER  "kiln 0.1.0"
#define MAX_ENTRY ((uint64_t)1 << 31)

static atomic_long n_hits, n_misses, n_stores, n_rejected, n_evictions, n_store_failures, n_tmp;

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}
#define FNV0 0xcbf29ce484222325ull

static void put64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

const char *kl_disk_cache_env_dir(void) {
  const char *d = getenv("KILN_CACHE_DIR");
  return d && *d ? d : NULL;
}

static long long max_bytes(void) {
  const char *s = getenv("KILN_CACHE_MAX_MB");
  if (s && *s) {
    char *end;
    double mb = strtod(s, &end);
    if (*end == 0 && mb >= 0) return (long long)(mb * 1024 * 1024);
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    kl_env_warn_once(&warned, "KILN_CACHE_MAX_MB", s, "not a size in MiB (a number >= 0); using 1024");
  }
  return 1024LL * 1024 * 1024;
}

char *kl_disk_cache_key(kl_op *graph, const kl_compile_opts *o, const char *tuned) {
  kl_sb sb = { 0 };
  kl_sb_printf(&sb, "%s|", PRODUCER);
  unsigned maj = 0, min = 0, pat = 0;
  LLVMGetVersion(&maj, &min, &pat);
  kl_sb_printf(&sb, "llvm=%u.%u.%u", maj, min, pat);
  bool host = false;
  for (int i = 0; i < o->ntargets; i++) {
    kl_sb_printf(&sb, "|t=%s", o->targets[i]);
    const kl_target *d = kl_target_lookup(o->targets[i]);
    if (d && d->arch == KL_ARCH_HOST) host = true;
  }
  if (host) {
    char *cpu = LLVMGetHostCPUName(), *feat = LLVMGetHostCPUFeatures();
    kl_sb_printf(&sb, "|cpu=%s|feat=%s", cpu, feat);
    LLVMDisposeMessage(cpu);
    LLVMDisposeMessage(feat);
  }
  kl_sb_printf(&sb, "|p=%s|pl=%s|s=%d\n", o->perf_config ? o->perf_config : "",
               o->pipeline ? o->pipeline : kl_default_pipeline(), (int)o->strict_fp);
  if (tuned && *tuned) kl_sb_printf(&sb, "tuned=%s\n", tuned);
  kl_print_op_to(&sb, graph, KL_PRINT_GENERIC | KL_PRINT_LOCS);
  return kl_sb_take(&sb);
}

static void entry_path(char *out, size_t n, const char *dir, const char *key) {
  size_t k = strlen(key);
  snprintf(out, n, "%s/%016llx%016llx.kce", dir, (unsigned long long)fnv(FNV0, key, k),
           (unsigned long long)fnv(0x84222325cbf29ce4ull, key, k));
}

static bool is_entry(const char *name) {
  size_t n = strlen(name);
  return n == 36 && !strcmp(name + 32, ".kce");
}

/* Reads the whole file at path (fd open); NULL on error or if too large. */
static unsigned char *read_all(int fd, size_t *size) {
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < 0 || (uint64_t)st.st_size > MAX_ENTRY) return NULL;
  size_t n = (size_t)st.st_size, got = 0;
  unsigned char *buf = malloc(n ? n : 1);
  if (!buf) return NULL;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  *size = got;
  return buf;
}

/* Removes path if it is still the file fd refers to (not a newer entry renamed over it). */
static void remove_if_same(const char *path, int fd) {
  struct stat a, b;
  if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) unlink(path);
}

static const char *check_entry(const unsigned char *buf, size_t size, const char *key) {
  if (size < HEADER) return "truncated (shorter than its header)";
  if (memcmp(buf, MAGIC, 8)) return "not a kiln cache entry (bad magic)";
  uint64_t k = get64(buf + 8), b = get64(buf + 16);
  if (k > MAX_ENTRY || b > MAX_ENTRY || HEADER + k + b != size)
    return "truncated or padded (size disagrees with header)";
  if (fnv(FNV0, buf + HEADER, (size_t)(k + b)) != get64(buf + 24)) return "checksum mismatch";
  if (k != strlen(key) || memcmp(buf + HEADER, key, (size_t)k)) return "holds another key (hash collision)";
  return NULL;
}

kl_program *kl_disk_cache_lookup(kl_ctx *ctx, const char *dir, const char *key, char *note, size_t notelen) {
  if (notelen) note[0] = 0;
  char path[4096];
  entry_path(path, sizeof path, dir, key);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    atomic_fetch_add(&n_misses, 1);
    return NULL;
  }
  size_t size = 0;
  unsigned char *buf = read_all(fd, &size);
  const char *why = buf ? check_entry(buf, size, key) : "unreadable";
  kl_program *p = NULL;
  char msg[2048] = "";
  if (!why) {
    uint64_t k = get64(buf + 8);
    kl_bundle *b = kl_bundle_open_memory(buf + HEADER + k, size - HEADER - (size_t)k, msg, sizeof msg);
    if (b) {
      p = kl_program_from_bundle(ctx, b, path, msg, sizeof msg);
      kl_bundle_close(b);
    }
    if (!p) why = msg;
  }
  free(buf);
  if (p) {
    futimens(fd, NULL); /* least recently used = oldest mtime */
    close(fd);
    atomic_fetch_add(&n_hits, 1);
    return p;
  }
  remove_if_same(path, fd);
  close(fd);
  atomic_fetch_add(&n_rejected, 1);
  atomic_fetch_add(&n_misses, 1);
  snprintf(note, notelen, "entry %s rejected: %s", path, why);
  return NULL;
}

static int mkdirs(const char *dir) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s", dir);
  for (char *s = tmp + 1; *s; s++)
    if (*s == '/') {
      *s = 0;
      if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
      *s = '/';
    }
  if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
  return 0;
}

static int write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

typedef struct ent {
  char name[40];
  long long bytes;
  struct timespec mtime;
} ent;
static int by_mtime(const void *a, const void *b) {
  const ent *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Scans dir: entries into *out (malloc'd), stale temp files removed. */
static int scan(const char *dir, ent **out, long long *total) {
  *out = NULL;
  *total = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0, cap = 0;
  time_t now = time(NULL);
  char path[4096];
  for (struct dirent *e; (e = readdir(d));) {
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (!strncmp(e->d_name, ".tmp-", 5)) {
      if (stat(path, &st) == 0 && now - st.st_mtime > 600) unlink(path);
      continue;
    }
    if (!is_entry(e->d_name) || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      *out = kl_xrealloc(*out, (size_t)cap * sizeof **out);
    }
    ent *x = &(*out)[n++];
    memcpy(x->name, e->d_name, 37); /* is_entry: 36 characters and the terminator */
    x->bytes = st.st_size;
    x->mtime = st.st_mtim;
    *total += st.st_size;
  }
  closedir(d);
  return n;
}

static void evict(const char *dir, const char *keep) {
  ent *es;
  long long total, limit = max_bytes();
  int n = scan(dir, &es, &total);
  if (total > limit) {
    qsort(es, (size_t)n, sizeof *es, by_mtime);
    char path[4096];
    for (int i = 0; i < n && total > limit; i++) {
      if (!strcmp(es[i].name, keep)) continue;
      snprintf(path, sizeof path, "%s/%s", dir, es[i].name);
      if (unlink(path) == 0) atomic_fetch_add(&n_evictions, 1);
      total -= es[i].bytes; /* gone either way (another process may have removed it) */
    }
  }
  free(es);
}

kl_status kl_disk_cache_store(const char *dir, const char *key, const kl_program *p, char *note, size_t notelen) {
  if (notelen) note[0] = 0;
  void *bundle = NULL;
  size_t bsize = 0;
  char msg[2048];
  if (kl_program_save_memory(p, &bundle, &bsize, msg, sizeof msg) != KL_OK) {
    atomic_fetch_add(&n_store_failures, 1);
    snprintf(note, notelen, "not stored: %s", msg);
    return KL_ERR;
  }
  if (mkdirs(dir) != 0) {
    free(bundle);
    atomic_fetch_add(&n_store_failures, 1);
    snprintf(note, notelen, "not stored: cannot create %s: %s", dir, strerror(errno));
    return KL_ERR;
  }
  char path[4096], tmp[4200];
  entry_path(path, sizeof path, dir, key);
  const char *name = strrchr(path, '/') + 1;
  snprintf(tmp, sizeof tmp, "%s/.tmp-%ld-%ld-%s", dir, (long)getpid(), atomic_fetch_add(&n_tmp, 1), name);
  size_t klen = strlen(key);
  unsigned char head[HEADER];
  memcpy(head, MAGIC, 8);
  put64(head + 8, klen);
  put64(head + 16, bsize);
  put64(head + 24, fnv(fnv(FNV0, key, klen), bundle, bsize));
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  int ok = fd >= 0 && write_all(fd, head, HEADER) == 0 && write_all(fd, key, klen) == 0 &&
      write_all(fd, bundle, bsize) == 0 && fsync(fd) == 0;
  int saved = errno;
  if (fd >= 0 && close(fd) != 0) ok = 0;
  free(bundle);
  if (ok && rename(tmp, path) != 0) {
    saved = errno;
    ok = 0;
  }
  if (!ok) {
    unlink(tmp);
    atomic_fetch_add(&n_store_failures, 1);
    snprintf(note, notelen, "not stored: writing %s: %s", path, strerror(saved));
    return KL_ERR;
  }
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  atomic_fetch_add(&n_stores, 1);
  evict(dir, name);
  return KL_OK;
}

long kl_disk_cache_clear(const char *dir, char *err, size_t errlen) {
  DIR *d = opendir(dir);
  if (!d) {
    if (errno == ENOENT) return 0;
    snprintf(err, errlen, "cache clear: cannot open %s: %s", dir, strerror(errno));
    return -1;
  }
  long n = 0;
  char path[4096];
  for (struct dirent *e; (e = readdir(d));) {
    bool entry = is_entry(e->d_name);
    if (!entry && strncmp(e->d_name, ".tmp-", 5)) continue; /* not ours: left alone */
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (unlink(path) == 0 && entry) n++;
  }
  closedir(d);
  return n;
}

void kl_disk_cache_usage(const char *dir, long *entries, long long *bytes) {
  ent *es;
  *entries = scan(dir, &es, bytes);
  free(es);
}

void kl_disk_cache_stats_get(kl_disk_cache_stats *out) {
  out->hits = atomic_load(&n_hits);
  out->misses = atomic_load(&n_misses);
  out->stores = atomic_load(&n_stores);
  out->rejected = atomic_load(&n_rejected);
  out->evictions = atomic_load(&n_evictions);
  out->store_failures = atomic_load(&n_store_failures);
}
