/* fuzz_pipeline.c — libFuzzer target: pipeline strings (pass names, options, quoting;
 * core/pass.h syntax). The input, up to its first NUL, is parsed by
 * kl_pass_manager_add_pipeline and, when accepted, run on each of two fixed verified
 * modules (a small graph: dot + add + relu; a function of arith ops). A bad string must
 * give a located error and add no pass; a pass may reject its input with a diagnostic;
 * crashes and sanitizer reports are bugs. Seeds: spec/fuzz/pipelines. */
#include "core/parse.h"
#include "core/verify.h"
#include "spec/fuzz/fuzz_util.h"

static const char *const modules[] = {
  "func.func @g() attributes {graph} {\n"
  "  %a = \"graph.param\"() {name = \"a\"} : () -> tensor<4x8xf32>\n"
  "  %b = \"graph.param\"() {name = \"b\"} : () -> tensor<8x4xf32>\n"
  "  %c = \"graph.param\"() {name = \"c\"} : () -> tensor<4x4xf32>\n"
  "  %d = \"graph.dot\"(%a, %b) : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>\n"
  "  %e = \"graph.add\"(%d, %c) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>\n"
  "  %y = \"graph.relu\"(%e) : (tensor<4x4xf32>) -> tensor<4x4xf32>\n"
  "  func.return %y : tensor<4x4xf32>\n"
  "}\n",
  "func.func @f(%a: f32, %b: f32) {\n"
  "  %0 = arith.addf %a, %b : f32\n"
  "  %1 = arith.mulf %0, %0 : f32\n"
  "  %2 = arith.addf %a, %b : f32\n"
  "  %c2 = arith.constant 2 : i32\n"
  "  %c3 = arith.constant 3 : i32\n"
  "  %3 = arith.addi %c2, %c3 : i32\n"
  "  \"test.use\"(%1, %2, %3) : (f32, f32, i32) -> ()\n"
  "  func.return\n"
  "}\n",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *pipeline = fuzz_text(data, size);
  kl_ctx *ctx = fuzz_ctx();
  for (size_t i = 0; i < sizeof modules / sizeof *modules; i++) {
    kl_op *m = kl_parse_module(ctx, modules[i], strlen(modules[i]), "fixed.kir");
    if (!m || kl_verify(m) != KL_OK) fuzz_bug(ctx, "a fixed module does not parse and verify");
    kl_pass_manager *pm = kl_pass_manager_create(ctx);
    if (kl_pass_manager_add_pipeline(pm, pipeline) == KL_OK)
      kl_pass_manager_run(pm, m);
    else if (!kl_diag_has_error(ctx))
      fuzz_bug(ctx, "a rejected pipeline left no diagnostic");
    kl_pass_manager_destroy(pm);
    fuzz_drop_diags(ctx);
  }
  kl_ctx_destroy(ctx);
  free(pipeline);
  return 0;
}
