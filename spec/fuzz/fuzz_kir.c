/* fuzz_kir.c — libFuzzer target: .kir text through the parser, the verifier and the
 * "canonicalize,cse" pipeline. Crashes and sanitizer reports are bugs; so is (fuzz_bug)
 * a verified module that canonicalize/cse fail on or leave unverifiable, or whose printed
 * result does not parse and verify again. Seeds: spec/corpus/{good,bad}, spec/ir. */
#include "core/parse.h"
#include "core/print.h"
#include "core/verify.h"
#include "spec/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kl_ctx *ctx = fuzz_ctx();
  kl_op *m = kl_parse_module(ctx, (const char *)data, size, "fuzz.kir");
  if (m && kl_verify(m) == KL_OK) {
    fuzz_drop_diags(ctx);
    kl_pass_manager *pm = kl_pass_manager_create(ctx);
    if (kl_pass_manager_add_pipeline(pm, "canonicalize,cse") != KL_OK) fuzz_bug(ctx, "pipeline rejected");
    if (kl_pass_manager_run(pm, m) != KL_OK) fuzz_bug(ctx, "canonicalize,cse failed on a verified module");
    kl_pass_manager_destroy(pm);
    char *text = kl_print_op(m, 0);
    kl_op *again = kl_parse_module(ctx, text, strlen(text), "printed.kir");
    if (!again) {
      fprintf(stderr, "%s", text);
      fuzz_bug(ctx, "the printed result does not parse");
    }
    if (kl_verify(again) != KL_OK) {
      fprintf(stderr, "%s", text);
      fuzz_bug(ctx, "the printed result does not verify");
    }
    free(text);
  }
  kl_ctx_destroy(ctx);
  return 0;
}
