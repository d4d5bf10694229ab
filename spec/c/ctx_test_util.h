/* ctx_test_util.h — a context for C tests that run the built-in passes.
 * Contract: kl_ctx_create registers the dialects only (core/context.h); whoever runs
 * passes registers them once, as lua/kiln_lua.c and lua/main.c do. kl_test_ctx is
 * kl_ctx_create plus kl_register_builtin_passes (passes/passes.h), so a test using it
 * links kiln_lib, not kiln_core alone. The caller destroys the context. */
#ifndef KL_CTX_TEST_UTIL_H
#define KL_CTX_TEST_UTIL_H
#include "core/context.h"
#include "passes/passes.h"

static inline kl_ctx *kl_test_ctx(void) {
  kl_ctx *ctx = kl_ctx_create();
  kl_register_builtin_passes(ctx);
  return ctx;
}
#endif
