/* fuzz_migraphx.c — libFuzzer target: MIGraphX-dialect text through the front end
 * (frontend/migraphx_parse.h) and the verifier. Crashes and sanitizer reports are bugs;
 * so is (fuzz_bug) a module the front end returns that does not verify, or a NULL
 * without an error diagnostic. Seeds: spec/migraphx, spec/migraphx/bad. */
#include "core/verify.h"
#include "frontend/migraphx_parse.h"
#include "spec/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kl_ctx *ctx = fuzz_ctx();
  kl_op *m = kl_migraphx_parse(ctx, (const char *)data, size, "fuzz.mlir");
  if (!m && !kl_diag_has_error(ctx)) fuzz_bug(ctx, "the front end failed without an error");
  if (m && kl_verify(m) != KL_OK) fuzz_bug(ctx, "the front end made a module that does not verify");
  kl_ctx_destroy(ctx);
  return 0;
}
