/* ir_test_util.h — small IR helpers shared by the C tests of the pass manager, the
 * rewriter and the graph passes (test_pass.c, test_rewrite.c, test_partition.c):
 * counting ops by name, matching a context's diagnostics, and capturing what a function
 * writes to stderr. Header-only (static functions); the diagnostics are taken from the
 * context (kl_diag_take), a mismatch is described on stderr; captured text is malloc'd
 * and owned by the caller. */
#ifndef KL_SPEC_IR_TEST_UTIL_H
#define KL_SPEC_IR_TEST_UTIL_H
#include "core/ir.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How many ops named `name` are nested in root (root included). */
static inline int count_named(kl_op *root, const char *name) {
  int n, k = 0;
  kl_op **ops = kl_collect_ops(root, &n);
  for (int i = 0; i < n; i++)
    if (!strcmp(ops[i]->name, name)) k++;
  free(ops);
  return k;
}

/* Takes the context's diagnostics: true if they are exactly `want`. */
static inline bool diag_is(kl_ctx *ctx, const char *want) {
  char *d = kl_diag_take(ctx);
  bool ok = !strcmp(d, want);
  if (!ok) fprintf(stderr, "  diagnostics were: [%s]\n  expected:         [%s]\n", d, want);
  free(d);
  return ok;
}

/* Takes the context's diagnostics: true if they contain `needle`. */
static inline bool diag_has(kl_ctx *ctx, const char *needle) {
  char *d = kl_diag_take(ctx);
  bool ok = strstr(d, needle) != NULL;
  if (!ok) fprintf(stderr, "  diagnostics were: [%s]\n  expected to contain: [%s]\n", d, needle);
  free(d);
  return ok;
}

/* Runs fn(arg) with stderr redirected to a temporary file; returns what was written
 * (malloc'd; "" if no temporary file could be made, and then fn is not run). */
static inline char *capture_stderr(void (*fn)(void *), void *arg) {
  char path[] = "/tmp/kiln_test_stderr_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return kl_xstrdup("");
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  fn(arg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  lseek(fd, 0, SEEK_SET);
  kl_sb sb = { 0 };
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) kl_sb_putn(&sb, buf, (size_t)n);
  close(fd);
  unlink(path);
  return kl_sb_take(&sb);
}
#endif
