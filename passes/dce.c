/* dce.c — the `dce` pass: erases pure ops (KL_TRAIT_PURE) whose results are unused,
 * to a fixed point (an erased op's operands may become dead in turn), at every depth
 * (inside regions too; a dead pure op with regions goes with everything in it). Ops
 * with side effects, terminators, functions and block arguments are kept. It is the
 * greedy driver with no patterns and no folding: the dead-op removal lives there. */
#include "passes/passes.h"
#include "core/rewrite.h"
#include <limits.h>

kl_status kl_dce(kl_op *root) {
  kl_greedy_config cfg = kl_greedy_default();
  cfg.fold = false;
  cfg.remove_dead = true;
  cfg.max_rewrites = INT_MAX; /* removal always terminates: no cap on the number of ops */
  return kl_apply_patterns_greedy(root, NULL, 0, &cfg);
}

static kl_status run_dce(kl_op *root, const kl_pass_options *o, void *user) { return kl_dce(root); }

void kl__register_dce(kl_ctx *ctx) {
  kl_pass_info info = { "dce", "erases unused pure ops to a fixed point, inside regions too", NULL, 0, run_dce, NULL };
  kl_register_pass(ctx, &info);
}
