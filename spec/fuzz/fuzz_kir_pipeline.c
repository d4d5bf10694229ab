/* fuzz_kir_pipeline.c — libFuzzer target: .kir text through the parser, the verifier,
 * the full default pipeline (kl_default_pipeline) and lower-to-llvm for the module's
 * "target" attribute (host if none or unknown). Any pass may reject its input with a
 * diagnostic; crashes, sanitizer reports and hangs are bugs. Seeds: spec/corpus/good,
 * spec/ir. */
#include "core/attr.h"
#include "core/ir.h"
#include "core/parse.h"
#include "core/target.h"
#include "core/verify.h"
#include "driver/program.h"
#include "spec/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kl_ctx *ctx = fuzz_ctx();
  kl_op *m = kl_parse_module(ctx, (const char *)data, size, "fuzz.kir");
  if (m && kl_verify(m) == KL_OK) {
    const char *t = kl_op_attr_string(m, "target");
    if (!t || !kl_target_lookup(t)) t = "host";
    char pipeline[1024];
    snprintf(pipeline, sizeof pipeline, "%s,lower-to-llvm{target=%s}", kl_default_pipeline(), t);
    kl_pass_manager *pm = kl_pass_manager_create(ctx);
    if (kl_pass_manager_add_pipeline(pm, pipeline) != KL_OK) fuzz_bug(ctx, "default pipeline rejected");
    kl_pass_manager_run(pm, m);
    kl_pass_manager_destroy(pm);
  }
  kl_ctx_destroy(ctx);
  return 0;
}
