/* registry.c — kl_register_builtin_passes: the one list of built-in passes (and the
 * canonical patterns they bring), run for every context by kl_register_all_dialects.
 * Add a line here when a new pass file lands. */
#include "core/pass.h"

void kl__register_canonicalize(kl_ctx *ctx);   /* passes/canonicalize.c */
void kl__register_cse(kl_ctx *ctx);            /* passes/cse.c */
void kl__register_dce(kl_ctx *ctx);            /* passes/dce.c */
void kl__register_lower_to_llvm(kl_ctx *ctx);  /* passes/lower_to_llvm.c */

void kl_register_builtin_passes(kl_ctx *ctx) {
  kl__register_canonicalize(ctx);
  kl__register_cse(ctx);
  kl__register_dce(ctx);
  kl__register_lower_to_llvm(ctx);
  { void kl__register_graph_partition(kl_ctx *); kl__register_graph_partition(ctx); }      /* passes/graph_partition.c */
  { void kl__register_graph_to_rock(kl_ctx *); kl__register_graph_to_rock(ctx); }          /* passes/graph_to_rock.c */
  { void kl__register_rock_conv_to_gemm(kl_ctx *); kl__register_rock_conv_to_gemm(ctx); }  /* passes/rock_conv_to_gemm.c */
}
