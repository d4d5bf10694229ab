/* tuning_db.h — the tuning database: the best GEMM perf config found for a problem on a
 * target, kept in a text file that kiln.compile reads and kiln.tune writes.
 *
 * File format (format version KL_TUNING_DB_FORMAT = 1): UTF-8 text, one record a line,
 * nine tab-separated fields:
 *     format  target  device  key  problem  config  ms  runner_up_ms  date
 *   format        the record format version (a decimal integer; this kiln writes 1)
 *   target        the compile target ("host", "sm_90", "gfx942")
 *   device        the device it was measured on (kl_device_info name, e.g. "NVIDIA H200"
 *                 or the host CPU), "-" if unknown
 *   key           the problem key: 16 hex digits (passes/problem_key.h: a hash of the
 *                 GEMM kernel's IR without its perf config — shapes, dtypes, layouts,
 *                 fused prologues and epilogues)
 *   problem       its readable summary ("gemm G=1 M=384 N=2304 K=768 f16,f16->f16")
 *   config        the best perf config ("v1:..." or "v2:...")
 *   ms            its time (median, milliseconds)
 *   runner_up_ms  the next best times, comma-separated ("-" if none)
 *   date          when it was measured (UTC, "2026-12-06T02:10:00Z")
 * Lines that start with '#' and blank lines are comments. Tabs and newlines inside a
 * field are written as spaces.
 * Semantics:
 *  - A record is identified by (format, target, device, key); the last line of an
 *    identity wins, so files merge by concatenation (`cat a.db b.db > c.db`).
 *  - kl_tuning_db_read: a missing file is an empty database (KL_OK). A line that is not a
 *    record (wrong field count, a bad number, a config that is not "vN:...", a key that is
 *    not 16 hex digits) is skipped with a warning "PATH:LINE: ..."; records of another
 *    format version are skipped with one notice for the file (how many, which version).
 *    Warnings are collected in db->warnings (one per line, "" if none).
 *  - kl_tuning_db_find: the last record of format KL_TUNING_DB_FORMAT for target and key
 *    whose device is `device` (NULL: any device).
 *  - kl_tuning_db_write adds records to the file at path: under an exclusive flock of
 *    "PATH.lock" it reads the file, keeps every line (comments and skipped lines
 *    verbatim) except the records that the new ones replace (same identity), appends the
 *    new ones, writes the whole to "PATH.tmp.PID", fsyncs it and renames it over PATH
 *    (atomic: readers see the old file or the new one, several writers serialize).
 *    Missing directories of PATH are created.
 *  - kl_tuning_db_merge folds shard files (kiln tune --shard) into the database at path:
 *    the shards are parts of one search, so for each identity the record with the lowest
 *    time among the shards is written (the others' times join its runner-ups); it then
 *    replaces the database's record of that identity as kl_tuning_db_write does.
 *  - kl_tuning_db_default_path: $KILN_TUNING_DB if set and non-empty, else
 *    $XDG_CACHE_HOME/kiln/tuning.db, else $HOME/.cache/kiln/tuning.db (malloc'd; NULL if
 *    none of these is set).
 *  - Errors (a file that cannot be read, written or locked): KL_ERR plus a message in
 *    err naming the path. */
#ifndef KL_TUNING_DB_H
#define KL_TUNING_DB_H
#include <stdbool.h>
#include <stddef.h>
#include "core/context.h"

#define KL_TUNING_DB_FORMAT 1

typedef struct kl_tuning_record {
  int format;
  char *target, *device, *key, *problem, *config;
  double ms;
  char *runners; /* "0.51,0.53" or "" */
  char *date;
} kl_tuning_record;

typedef struct kl_tuning_db {
  int n;
  kl_tuning_record *r; /* valid records of every format, in file order */
  char *warnings;      /* "" or lines "PATH:LINE: ...\n" */
} kl_tuning_db;

char *kl_tuning_db_default_path(void);
kl_status kl_tuning_db_read(const char *path, kl_tuning_db *db, char *err, size_t errlen);
void kl_tuning_db_free(kl_tuning_db *db);
const kl_tuning_record *kl_tuning_db_find(const kl_tuning_db *db, const char *target, const char *device,
                                          const char *key);
/* Parses one line (no newline) into r (strings malloc'd; free with kl_tuning_record_clear);
 * false + reason in why (not for comments: *comment set, false returned). */
bool kl_tuning_record_parse(const char *line, kl_tuning_record *r, bool *comment, char *why, size_t whylen);
/* The record's line, newline-terminated (malloc'd). */
char *kl_tuning_record_format(const kl_tuning_record *r);
void kl_tuning_record_clear(kl_tuning_record *r);
/* "2026-12-06T02:10:00Z" of now into buf[21]. */
void kl_tuning_db_now(char buf[21]);
kl_status kl_tuning_db_write(const char *path, int n, const kl_tuning_record *recs, char *err, size_t errlen);
/* warnings: the shards' read warnings are appended there (malloc'd, "" if none; may be NULL). */
kl_status kl_tuning_db_merge(const char *path, int nshards, const char *const *shards, int *nrecords, char **warnings,
                             char *err, size_t errlen);
#endif
