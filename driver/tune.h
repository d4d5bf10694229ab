/* tune.h — measuring perf-config candidates of a graph: compiled in parallel, timed one
 * after the other on one device.
 * Contract:
 *  - kl_tune_run compiles the graph once per candidate (configs[i]; "" = no perf config,
 *    the heuristic) for opts->target, then times each program that compiled on opts->dev
 *    and compares its outputs with those of the first candidate that ran (the reference).
 *  - Compiles run on a pool of `jobs` threads (0: the online CPUs; at most the number of
 *    candidates). kiln's IR lives in a context that only one thread may use, so each
 *    worker thread owns a context of its own: it parses the graph's printed IR (with
 *    locations) into it and compiles its candidates there (no tuning database, no caches);
 *    LLVM code generation is per compile (its own LLVM context). The calling thread only
 *    waits and reports progress. Threads rather than processes: programs and binaries
 *    then need no serialization, and a failing compile is an error string, not a crash.
 *  - Measurement starts after every compile finished (no compile competes with a
 *    timing): per candidate, kl_program_load_kernels (timed: load_ms), kl_program_prepare with rotating buffer sets (at least
 *    opts->rotate_bytes per rotation, at most 8 sets: inputs are read from memory, not a
 *    warm cache), `warmup` launches, then `runs` timed launches (fewer, at least 5, when
 *    one launch takes so long that `runs` would pass opts->budget_ms). Statistic: the
 *    quartiles Q1, Q3 of the times; launches outside [Q1 - 1.5 IQR, Q3 + 1.5 IQR] are
 *    dropped as outliers; median_ms is the median of the rest; runs and dropped say
 *    how many were timed and dropped.
 *  - A candidate whose outputs differ from the reference's beyond the tolerance of the
 *    output dtype (f32/f64: rtol = atol = 1e-3; f16: 1e-2; bf16 and 8-bit floats: 5e-2;
 *    integers: exact) gets an error "wrong results: ..." and no time. Every element of
 *    every output is checked (kl_tune_check, driver/tune_check.h: slices of the outputs on
 *    a pool of `jobs` threads, a slice with the reference's bytes passing at memcmp speed).
 *  - Each result says where its measurement time went: load_ms, prepare_ms (device
 *    buffers, uploading the inputs, poisoning the results), run_ms (the probe, warm-up and
 *    timed launches), check_ms (downloading the outputs and checking them).
 *  - corrupt_output (tests only; NULL otherwise) is called with each candidate's outputs
 *    but the reference's before they are checked, and may change them: a wrong candidate.
 *  - progress (optional) is called on the calling thread: after each compile finishes
 *    (phase "compile") and after each measurement (phase "measure").
 *  - out[i] corresponds to configs[i]; error is NULL or malloc'd (free with
 *    kl_tune_results_free). binary_hash: FNV-1a of the program's kernel binaries (the
 *    same compile, serial or parallel, gives the same hash).
 *  - Errors (no candidates, a graph that does not print/parse): KL_ERR + err. Candidate
 *    failures are per result, never the whole run. */
#ifndef KL_TUNE_H
#define KL_TUNE_H
#include "driver/program.h"

typedef struct kl_tune_progress {
  const char *phase; /* "compile" or "measure" */
  int done, total;
  const char *config; /* the candidate just finished */
  double ms;          /* its median (measure phase, < 0 if it failed) */
  const char *best_config;
  double best_ms; /* < 0: none yet */
  double elapsed_ms;
} kl_tune_progress;

typedef struct kl_tune_opts {
  kl_device *dev;
  const char *target; /* compile target (NULL: the device's arch) */
  int nconfigs;
  const char *const *configs;
  int jobs;            /* compile threads; 0: online CPUs */
  int runs, warmup;    /* 0: 20 and 3 */
  double budget_ms;    /* per candidate's timed launches; 0: 2000 */
  size_t rotate_bytes; /* 0: 64 MiB */
  int ninputs;
  const kl_named_tensor *inputs;
  void (*progress)(const kl_tune_progress *p, void *user);
  void *user; /* for progress and corrupt_output */
  void (*corrupt_output)(const char *config, int noutputs, kl_tensor **outputs, void *user);
} kl_tune_opts;

typedef struct kl_tune_result {
  const char *config; /* = configs[i] */
  char *error;        /* NULL: compiled, ran and matched */
  double compile_ms;  /* this candidate's compile (its thread's time) */
  double load_ms;     /* loading its binaries on the device (measure phase; a GPU driver's JIT) */
  double prepare_ms;  /* device buffers, inputs uploaded, results poisoned */
  double run_ms;      /* probe, warm-up and timed launches */
  double check_ms;    /* outputs downloaded and checked against the reference */
  double median_ms, q1_ms, q3_ms, min_ms;
  int runs, dropped;
  unsigned long long binary_hash;
} kl_tune_result;

typedef struct kl_tune_report {
  int n;
  kl_tune_result *r;
  double compile_wall_ms, measure_wall_ms;
  int jobs; /* threads used */
} kl_tune_report;

kl_status kl_tune_run(kl_op *graph, const kl_tune_opts *opts, kl_tune_report *out, char *err, size_t errlen);
void kl_tune_report_free(kl_tune_report *r);
#endif
