/* tuning_db.c — the tuning database file (tuning_db.h): parse, find, locked rewrite by
 * rename, merge of shards. */
#include "driver/tuning_db.h"
#include "core/arena.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NFIELDS 9

char *kl_tuning_db_default_path(void) {
  const char *e = getenv("KILN_TUNING_DB");
  if (e && *e) return kl_xstrdup(e);
  kl_sb sb = { 0 };
  const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
  if (x && *x)
    kl_sb_printf(&sb, "%s/kiln/tuning.db", x);
  else if (h && *h)
    kl_sb_printf(&sb, "%s/.cache/kiln/tuning.db", h);
  else
    return NULL;
  return kl_sb_take(&sb);
}

void kl_tuning_record_clear(kl_tuning_record *r) {
  free(r->target), free(r->device), free(r->key), free(r->problem), free(r->config), free(r->runners), free(r->date);
  memset(r, 0, sizeof *r);
}

void kl_tuning_db_free(kl_tuning_db *db) {
  for (int i = 0; i < db->n; i++) kl_tuning_record_clear(&db->r[i]);
  free(db->r);
  free(db->warnings);
  memset(db, 0, sizeof *db);
}

static bool parse_ms(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !isfinite(v) || v < 0) return false;
  *out = v;
  return true;
}

bool kl_tuning_record_parse(const char *line, kl_tuning_record *r, bool *comment, char *why, size_t whylen) {
  memset(r, 0, sizeof *r);
  *comment = false;
  const char *s = line;
  while (*s == ' ') s++;
  if (!*s || *s == '#' || *s == '\r') {
    *comment = true;
    return false;
  }
  const char *f[NFIELDS];
  size_t len[NFIELDS];
  int n = 0;
  for (const char *p = line;; n++) {
    const char *t = strchr(p, '\t');
    size_t l = t ? (size_t)(t - p) : strlen(p);
    if (!t && l && p[l - 1] == '\r') l--;
    if (n < NFIELDS) f[n] = p, len[n] = l;
    if (!t) {
      n++;
      break;
    }
    p = t + 1;
  }
  if (n != NFIELDS) {
    snprintf(why, whylen,
             "expected %d tab-separated fields (format target device key problem config ms runner_up_ms date), got %d",
             NFIELDS, n);
    return false;
  }
  char *v[NFIELDS];
  for (int i = 0; i < NFIELDS; i++) {
    v[i] = kl_xmalloc(len[i] + 1);
    memcpy(v[i], f[i], len[i]);
    v[i][len[i]] = 0;
  }
  bool ok = false;
  char *end;
  long fmt = strtol(v[0], &end, 10);
  if (end == v[0] || *end || fmt < 1 || fmt > 1000000)
    snprintf(why, whylen, "format version '%s' is not a positive integer", v[0]);
  else if (!*v[1])
    snprintf(why, whylen, "empty target");
  else if (strlen(v[3]) != 16 || strspn(v[3], "0123456789abcdef") != 16)
    snprintf(why, whylen, "key '%s' is not 16 hex digits", v[3]);
  else if (strncmp(v[5], "v1:", 3) && strncmp(v[5], "v2:", 3))
    snprintf(why, whylen, "config '%s' is not a perf config (v1:... or v2:...)", v[5]);
  else if (!parse_ms(v[6], &r->ms))
    snprintf(why, whylen, "time '%s' is not a non-negative number of milliseconds", v[6]);
  else {
    ok = true;
    if (strcmp(v[7], "-")) /* runner-ups: numbers separated by commas */
      for (char *p = v[7]; ok && *p;) {
        char *c = strchr(p, ',');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        char num[64];
        double d;
        if (l == 0 || l >= sizeof num) {
          ok = false;
        } else {
          memcpy(num, p, l), num[l] = 0;
          ok = parse_ms(num, &d);
        }
        if (!ok) snprintf(why, whylen, "runner-up times '%s' are not comma-separated numbers", v[7]);
        p += l + (c ? 1 : 0);
      }
  }
  if (!ok) {
    for (int i = 0; i < NFIELDS; i++) free(v[i]);
    return false;
  }
  r->format = (int)fmt;
  r->target = v[1];
  r->device = v[2];
  r->key = v[3];
  r->problem = v[4];
  r->config = v[5];
  free(v[6]);
  r->runners = strcmp(v[7], "-") ? v[7] : (free(v[7]), kl_xstrdup(""));
  r->date = v[8];
  return true;
}

static void put_field(kl_sb *sb, const char *s) {
  if (!s || !*s) s = "-";
  for (; *s; s++) kl_sb_putc(sb, *s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s);
}

char *kl_tuning_record_format(const kl_tuning_record *r) {
  kl_sb sb = { 0 };
  kl_sb_printf(&sb, "%d\t", r->format ? r->format : KL_TUNING_DB_FORMAT);
  const char *fs[] = { r->target, r->device, r->key, r->problem, r->config };
  for (int i = 0; i < 5; i++) {
    put_field(&sb, fs[i]);
    kl_sb_putc(&sb, '\t');
  }
  kl_sb_printf(&sb, "%.6g\t", r->ms);
  put_field(&sb, r->runners);
  kl_sb_putc(&sb, '\t');
  put_field(&sb, r->date);
  kl_sb_putc(&sb, '\n');
  return kl_sb_take(&sb);
}

void kl_tuning_db_now(char buf[21]) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, 21, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The whole file (NULL + *missing when it does not exist; NULL + err otherwise). */
static char *slurp(const char *path, bool *missing, char *err, size_t errlen) {
  *missing = false;
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (errno == ENOENT) {
      *missing = true;
      return NULL;
    }
    snprintf(err, errlen, "tuning db: cannot read %s: %s", path, strerror(errno));
    return NULL;
  }
  kl_sb sb = { 0 };
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) kl_sb_putn(&sb, buf, n);
  bool bad = ferror(f);
  fclose(f);
  if (bad) {
    kl_sb_free(&sb);
    snprintf(err, errlen, "tuning db: cannot read %s", path);
    return NULL;
  }
  return kl_sb_take(&sb);
}

/* Parses text into db (records of every format; warnings for corrupt lines and one notice
 * for records of another format version). */
static void parse_text(const char *path, const char *text, kl_tuning_db *db) {
  kl_sb warn = { 0 };
  int stale = 0, stale_version = 0, lineno = 0;
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t l = nl ? (size_t)(nl - p) : strlen(p);
    char *line = kl_xmalloc(l + 1);
    memcpy(line, p, l), line[l] = 0;
    lineno++;
    kl_tuning_record r;
    bool comment;
    char why[512];
    if (kl_tuning_record_parse(line, &r, &comment, why, sizeof why)) {
      if (r.format != KL_TUNING_DB_FORMAT) {
        if (!stale++) stale_version = r.format;
      }
      db->r = kl_xrealloc(db->r, (db->n + 1) * sizeof *db->r);
      db->r[db->n++] = r;
    } else if (!comment) {
      kl_sb_printf(&warn, "%s:%d: corrupt tuning record skipped: %s\n", path, lineno, why);
    }
    free(line);
    p += l + (nl ? 1 : 0);
  }
  if (stale)
    kl_sb_printf(&warn, "%s: %d record%s of tuning-db format version %d ignored (this kiln reads version %d)\n", path,
                 stale, stale == 1 ? "" : "s", stale_version, KL_TUNING_DB_FORMAT);
  db->warnings = kl_sb_take(&warn);
}

kl_status kl_tuning_db_read(const char *path, kl_tuning_db *db, char *err, size_t errlen) {
  memset(db, 0, sizeof *db);
  bool missing;
  char *text = slurp(path, &missing, err, errlen);
  if (!text) {
    if (!missing) return KL_ERR;
    db->warnings = kl_xstrdup("");
    return KL_OK;
  }
  parse_text(path, text, db);
  free(text);
  return KL_OK;
}

const kl_tuning_record *kl_tuning_db_find(const kl_tuning_db *db, const char *target, const char *device,
                                          const char *key) {
  for (int i = db->n - 1; i >= 0; i--) {
    const kl_tuning_record *r = &db->r[i];
    if (r->format == KL_TUNING_DB_FORMAT && !strcmp(r->target, target) && !strcmp(r->key, key) &&
        (!device || !strcmp(r->device, device)))
      return r;
  }
  return NULL;
}

static bool same_identity(const kl_tuning_record *a, const kl_tuning_record *b) {
  int fa = a->format ? a->format : KL_TUNING_DB_FORMAT, fb = b->format ? b->format : KL_TUNING_DB_FORMAT;
  const char *da = a->device && *a->device ? a->device : "-", *dbv = b->device && *b->device ? b->device : "-";
  return fa == fb && !strcmp(a->target, b->target) && !strcmp(da, dbv) && !strcmp(a->key, b->key);
}

static kl_status mkdirs(const char *path, char *err, size_t errlen) {
  char *d = kl_xstrdup(path);
  for (char *p = d + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(d, 0777) && errno != EEXIST) {
      snprintf(err, errlen, "tuning db: cannot create directory %s: %s", d, strerror(errno));
      free(d);
      return KL_ERR;
    }
    *p = '/';
  }
  free(d);
  return KL_OK;
}

kl_status kl_tuning_db_write(const char *path, int n, const kl_tuning_record *recs, char *err, size_t errlen) {
  if (mkdirs(path, err, errlen) != KL_OK) return KL_ERR;
  kl_sb lp = { 0 };
  kl_sb_printf(&lp, "%s.lock", path);
  int lock = open(kl_sb_str(&lp), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (lock < 0 || flock(lock, LOCK_EX)) {
    snprintf(err, errlen, "tuning db: cannot lock %s: %s", kl_sb_str(&lp), strerror(errno));
    if (lock >= 0) close(lock);
    kl_sb_free(&lp);
    return KL_ERR;
  }
  kl_sb_free(&lp);
  kl_status st = KL_ERR;
  bool missing;
  char *old = slurp(path, &missing, err, errlen);
  kl_sb out = { 0 };
  if (!old && !missing) goto done;
  if (!old || !*old)
    kl_sb_puts(&out,
               "# kiln tuning database: format target device key problem config ms runner_up_ms date "
               "(tab-separated; the last record of a format/target/device/key wins)\n");
  for (const char *p = old ? old : ""; *p;) { /* keep every line but the replaced records */
    const char *nl = strchr(p, '\n');
    size_t l = nl ? (size_t)(nl - p) : strlen(p);
    char *line = kl_xmalloc(l + 1);
    memcpy(line, p, l), line[l] = 0;
    kl_tuning_record r;
    bool comment, drop = false;
    char why[256];
    if (kl_tuning_record_parse(line, &r, &comment, why, sizeof why)) {
      for (int i = 0; i < n && !drop; i++) drop = same_identity(&r, &recs[i]);
      kl_tuning_record_clear(&r);
    }
    if (!drop) {
      kl_sb_putn(&out, line, l);
      kl_sb_putc(&out, '\n');
    }
    free(line);
    p += l + (nl ? 1 : 0);
  }
  for (int i = 0; i < n; i++) {
    char *t = kl_tuning_record_format(&recs[i]);
    kl_sb_puts(&out, t);
    free(t);
  }
  kl_sb tp = { 0 };
  kl_sb_printf(&tp, "%s.tmp.%ld", path, (long)getpid());
  const char *tmp = kl_sb_str(&tp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  bool ok = fd >= 0;
  const char *data = kl_sb_str(&out);
  for (size_t off = 0, len = out.len; ok && off < len;) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      ok = false;
    else
      off += (size_t)w;
  }
  if (ok) ok = fsync(fd) == 0;
  if (fd >= 0 && close(fd)) ok = false;
  if (ok) ok = rename(tmp, path) == 0;
  if (!ok) {
    snprintf(err, errlen, "tuning db: cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
  } else {
    st = KL_OK;
  }
  kl_sb_free(&tp);
done:
  free(old);
  kl_sb_free(&out);
  flock(lock, LOCK_UN);
  close(lock);
  return st;
}

kl_status kl_tuning_db_merge(const char *path, int nshards, const char *const *shards, int *nrecords, char **warnings,
                             char *err, size_t errlen) {
  kl_tuning_record *best = NULL;
  int nb = 0;
  kl_sb warn = { 0 };
  kl_status st = KL_OK;
  for (int s = 0; s < nshards && st == KL_OK; s++) {
    kl_tuning_db db;
    bool missing;
    char *text = slurp(shards[s], &missing, err, errlen);
    if (!text) {
      if (missing) snprintf(err, errlen, "tuning db: shard %s does not exist", shards[s]);
      st = KL_ERR;
      break;
    }
    memset(&db, 0, sizeof db);
    parse_text(shards[s], text, &db);
    free(text);
    kl_sb_puts(&warn, db.warnings);
    for (int i = 0; i < db.n; i++) {
      kl_tuning_record *r = &db.r[i];
      if (r->format != KL_TUNING_DB_FORMAT) continue;
      int j = 0;
      while (j < nb && !same_identity(&best[j], r)) j++;
      if (j == nb) {
        best = kl_xrealloc(best, (nb + 1) * sizeof *best);
        best[nb++] = *r;
        memset(r, 0, sizeof *r);
        continue;
      }
      kl_tuning_record *lo = r->ms < best[j].ms ? r : &best[j], *hi = lo == r ? &best[j] : r;
      kl_sb ru = { 0 }; /* the loser's time and both runner-up lists, sorted */
      double t[256];
      int nt = 0;
      t[nt++] = hi->ms;
      const char *lists[2] = { lo->runners, hi->runners };
      for (int k = 0; k < 2; k++)
        for (const char *p = lists[k]; p && *p && nt < 256;) {
          t[nt++] = strtod(p, NULL);
          const char *c = strchr(p, ',');
          p = c ? c + 1 : p + strlen(p);
        }
      for (int a = 1; a < nt; a++)
        for (int b = a; b > 0 && t[b] < t[b - 1]; b--) {
          double x = t[b];
          t[b] = t[b - 1], t[b - 1] = x;
        }
      for (int a = 0; a < nt && a < 4; a++) kl_sb_printf(&ru, "%s%.6g", a ? "," : "", t[a]);
      free(lo->runners);
      lo->runners = kl_sb_take(&ru);
      if (lo == r) {
        kl_tuning_record_clear(&best[j]);
        best[j] = *r;
        memset(r, 0, sizeof *r);
      }
    }
    kl_tuning_db_free(&db);
  }
  if (st == KL_OK) st = kl_tuning_db_write(path, nb, best, err, errlen);
  if (nrecords) *nrecords = nb;
  for (int i = 0; i < nb; i++) kl_tuning_record_clear(&best[i]);
  free(best);
  if (warnings)
    *warnings = kl_sb_take(&warn);
  else
    kl_sb_free(&warn);
  return st;
}
