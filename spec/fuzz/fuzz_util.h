/* fuzz_util.h — shared by the libFuzzer targets of spec/fuzz (header-only, static).
 * Contract: fuzz_ctx() is a fresh context with the built-in dialects and passes, whose
 * diagnostics are only collected (never printed: bad input is the normal case);
 * fuzz_text() copies the input into a malloc'd NUL-terminated buffer (the parser gets the
 * exact length; pipeline strings stop at the first NUL); fuzz_bug() reports a broken
 * contract (not a crash the sanitizers would see: e.g. a pass turning verified IR into IR
 * that no longer verifies) with the diagnostics so far, and aborts so libFuzzer saves the
 * input. Run under ASan + UBSan (KILN_FUZZ implies KILN_SANITIZE). */
#ifndef KL_FUZZ_UTIL_H
#define KL_FUZZ_UTIL_H
#include "core/context.h"
#include "core/pass.h"
#include "passes/passes.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline kl_ctx *fuzz_ctx(void) {
  kl_ctx *ctx = kl_ctx_create();
  if (kl_pass_count(ctx) == 0) kl_register_builtin_passes(ctx);
  return ctx;
}

static inline char *fuzz_text(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (size) memcpy(s, data, size);
  s[size] = 0;
  return s;
}

/* Frees the diagnostics collected so far (keeps a long run's memory flat). */
static inline void fuzz_drop_diags(kl_ctx *ctx) { free(kl_diag_take(ctx)); }

static inline void fuzz_bug(kl_ctx *ctx, const char *what) {
  char *d = kl_diag_take(ctx);
  fprintf(stderr, "kiln fuzz: %s\n%s", what, d ? d : "");
  free(d);
  abort();
}
#endif
