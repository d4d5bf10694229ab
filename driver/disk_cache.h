/* disk_cache.h — compiled programs kept on disk across processes, keyed by what
 * determines them.
 * Contract:
 *  - An entry holds one compiled program as a bundle (driver/bundle.h) under the key
 *    kl_disk_cache_key builds: the graph's printed IR (generic form with locations, so a
 *    hit reports errors at the same source lines), the targets, perf config, pipeline
 *    string, strict_fp, kiln's producer string, the LLVM version and, for host targets,
 *    the host CPU name and features. Passes are named by name only, so a caller must not
 *    use the disk cache for a pipeline with passes other than the built-in ones (the Lua
 *    binding never does).
 *  - Entry file: DIR/<32 hex digits>.kce (two 64-bit hashes of the key), format
 *       0  8 magic "KILNDCE1"
 *       8  8 u64 key length K (little-endian)
 *      16  8 u64 bundle length B
 *      24  8 u64 FNV-1a 64 of bytes 32 .. 32+K+B
 *      32  K the key text, then B bundle bytes; the file ends there.
 *    A lookup reads the whole file and accepts it only if the size, magic, checksum and
 *    key text all agree and the bundle loads (it validates every byte again and, for
 *    host kernels, recompiles each from the IR and compares objects byte for byte:
 *    bundle.h). Anything else (truncated, corrupt, another key, a load error) counts as
 *    rejected, removes that file and is a miss; nothing of it is loaded.
 *  - Publishing: a store writes DIR/.tmp-<pid>-<n>-<name>, fsyncs it, renames it over
 *    the entry's name and fsyncs the directory, so readers in other processes see the
 *    old entry, the new one or none, never a part. Several processes may compile into
 *    one directory; the same key written twice leaves one of the (equal) entries.
 *  - Least recently used: a hit sets the entry's mtime to now; after each store, while
 *    the entries (*.kce) exceed the size bound (KILN_CACHE_MAX_MB, default 1024 MiB)
 *    the oldest by mtime are removed (not the one just stored); temp files older than
 *    ten minutes (a writer that died) are removed too.
 *  - Failures to read or write the directory never fail a compile: the program is
 *    compiled (and not stored), and the reason is in the note.
 *  - Statistics are per process, over all contexts and threads (kl_disk_cache_stats). */
#ifndef KL_DISK_CACHE_H
#define KL_DISK_CACHE_H
#include "driver/program.h"

typedef struct kl_disk_cache_stats {
  long hits, misses, stores, rejected, evictions, store_failures;
} kl_disk_cache_stats;

/* The key text for a compile of graph with opts (malloc'd). */
/* tuned: the tuned configs the compile applies ("" or NULL: none), part of the key. */
char *kl_disk_cache_key(kl_op *graph, const kl_compile_opts *opts, const char *tuned);
/* The program stored under key in dir, loaded into ctx, or NULL (a miss; if an entry was
 * rejected, why in note). */
kl_program *kl_disk_cache_lookup(kl_ctx *ctx, const char *dir, const char *key, char *note, size_t notelen);
/* Stores p under key (creating dir and its parents as needed). KL_ERR plus why in note. */
kl_status kl_disk_cache_store(const char *dir, const char *key, const kl_program *p, char *note, size_t notelen);
/* Removes every entry and temp file of dir; the number of entries removed, or -1 with err. */
long kl_disk_cache_clear(const char *dir, char *err, size_t errlen);
/* Entries and their total bytes in dir (0, 0 if it does not exist). */
void kl_disk_cache_usage(const char *dir, long *entries, long long *bytes);
void kl_disk_cache_stats_get(kl_disk_cache_stats *out);
/* $KILN_CACHE_DIR, or NULL if unset or empty. */
const char *kl_disk_cache_env_dir(void);
#endif
