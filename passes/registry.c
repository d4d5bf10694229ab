/* registry.c — kl_register_builtin_passes: the one list of built-in passes (and the
 * canonical patterns they bring), called once per context by whoever runs passes
 * (lua/kiln_lua.c, lua/main.c, the C tests and fuzz targets); kl_ctx_create registers
 * the dialects only.
 * Add a line here when a new pass file lands. */
#include "core/pass.h"

void kl__register_canonicalize(kl_ctx *ctx);   /* passes/canonicalize.c */
void kl__register_cse(kl_ctx *ctx);            /* passes/cse.c */
void kl__register_dce(kl_ctx *ctx);            /* passes/dce.c */
void kl__register_lower_to_llvm(kl_ctx *ctx);  /* passes/lower_to_llvm.c: the pass and the lowering hooks */

void kl_register_builtin_passes(kl_ctx *ctx) {
  kl__register_canonicalize(ctx);
  kl__register_cse(ctx);
  kl__register_dce(ctx);
  kl__register_lower_to_llvm(ctx);
  { void kl__register_graph_partition(kl_ctx *); kl__register_graph_partition(ctx); }      /* passes/graph_partition.c */
  { void kl__register_graph_to_rock(kl_ctx *); kl__register_graph_to_rock(ctx); }          /* passes/graph_to_rock.c */
  { void kl__register_rock_conv_to_gemm(kl_ctx *); kl__register_rock_conv_to_gemm(ctx); }  /* passes/rock_conv_to_gemm.c */
  { void kl__register_rock_gemm_to_gridwise(kl_ctx *); kl__register_rock_gemm_to_gridwise(ctx); }                /* passes/rock_gemm_to_gridwise.c */
  { void kl__register_rock_gridwise_to_blockwise(kl_ctx *); kl__register_rock_gridwise_to_blockwise(ctx); }        /* passes/rock_gridwise_to_blockwise.c */
  { void kl__register_rock_blockwise_to_threadwise(kl_ctx *); kl__register_rock_blockwise_to_threadwise(ctx); }    /* passes/rock_blockwise_to_threadwise.c */
  { void kl__register_rock_align_tiling(kl_ctx *); kl__register_rock_align_tiling(ctx); }  /* passes/rock_align_tiling.c */
  { void kl__register_rock_lower_loops(kl_ctx *); kl__register_rock_lower_loops(ctx); }    /* passes/rock_lower_loops.c */
  { void kl__register_rock_accel(kl_ctx *); kl__register_rock_accel(ctx); }              /* passes/rock_accel_lower.c: rock.mma instruction check, rock-blockwise-to-accel */
}
