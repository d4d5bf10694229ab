/* input_fusion_cost.h — the cost rule of input fusion: whether the element-wise producer
 * chain of a conv / dot operand is fused into the GEMM's loads or left as a kernel of its
 * own (graph-partition asks it per operand; passes/graph_partition.c).
 *
 * Contract: a pure function over the target table, the anchor's types and attributes and
 * the types of the chain's values (no IR mutation, no allocation kept). It decides only
 * where fusing can cost more than it saves and the target's rates are known:
 *  - targets with the joint GEMM cost model (kl_gemm_split_joint: NVIDIA sm_90 / sm_90a,
 *    whose l2_bytes_per_cu_clk is measured); elsewhere it says "fuse" (not measured);
 *  - GEMMs on the mma.sync path: a GEMM that takes wgmma (kl_gemm_config_pick's path,
 *    passes/gemm_shape.h: sm_90a, f16 / bf16 operands, no v1 / v2 config) keeps its
 *    prologue fused, measured faster on an H100 (gemm_cvt 4096^3 0.360 ms fused
 *    against 0.397 unfused, conv_cvt N = 512 0.266 against 0.300; wider tiles: fewer
 *    re-reading blocks, and the loads overlap the MMAs);
 *  - chains whose inputs have more bytes per operand element than the operand (an f32 ->
 *    f16 convert; a scale, a broadcast bias or an fp8 -> f16 convert reads no more and is
 *    always fused: the GEMM's loads carry it for free).
 * The rule, in cycles of the busiest compute unit (the unit of the GEMM costs,
 * passes/rock_accel.h), with R = compute_units x l2_bytes_per_cu_clk bytes per cycle:
 *   fused   = KL_FUSE_WIDE_LOAD_FACTOR x (w - n) x E x B / R
 *             w: the chain's input bytes per operand element (an input smaller than the
 *             operand, a broadcast, counts its share), n: the operand's element bytes,
 *             E: the operand elements the GEMM reads (batches included), B: the blocks
 *             that each read them (the blocks along the other dimension of the output:
 *             ceil(N / nPerBlock) for the GEMM's A, ceil(M / mPerBlock) for its B, from
 *             the config rock-gemm-to-gridwise would pick: kl_gemm_config_pick of the
 *             op's GEMM, kl_gemm_shape_of; the op's perf_config when it has one). The wider bytes cross L2 once per block, and
 *             cost as much again in the main loop (wider register-staged loads per K step,
 *             more registers): measured on an H100, gemm_cvt 4096^3 ran 0.50 ms over the
 *             f16 GEMM against 0.24 ms of L2 time for its extra bytes, conv_cvt N = 512
 *             0.18 ms against 0.09 ms: factor 2.
 *   unfused = (the convert kernel's bytes) / R + KL_SPLIT_FIXED (one more launch,
 *             passes/gemm_split.h). The element-wise kernel walks its output in memory
 *             order (passes/lower_loops_elementwise.c), so the output and each full-size
 *             input move elem x numel bytes where the walk's innermost dim (the output's
 *             smallest stride) is contiguous in them, else min(32, |stride| x elem) bytes
 *             an element (a 32-byte sector each); an input smaller than the output (a
 *             broadcast) moves its own bytes once. A streaming kernel reaches about the
 *             GEMM's rate (H100: 4.21 TB/s copy = 16 B/clk/CU against 17), so R serves
 *             both. The narrow operand's reads by the GEMM are the same in both forms.
 *   fuse when fused <= unfused.
 * The two measured cases (sm_90, 128x128 tiles): gemm_cvt 4096^3 (A f32 [4096, 4096]):
 * fused = 2 x 2 B x 16.8M x 32 blocks / 2244 = 957k cycles, unfused = 100.7 MB / 2244 +
 * 4000 = 48.9k: a convert kernel. conv_cvt N = 512 (x f32 NHWC [512, 2048, 7, 7] read by
 * ceil(512 / 128) = 4 blocks): fused = 2 x 2 B x 51.4M x 4 / 2244 = 366k, unfused = 51.4M
 * x (4 + 2) B / 2244 + 4000 = 141k: a convert kernel (measured fused when the convert
 * walked NHWC as NCHW, 1.47M: 0.36 ms fused against 0.99 unfused; not yet measured since). */
#ifndef KL_INPUT_FUSION_COST_H
#define KL_INPUT_FUSION_COST_H
#include "core/ir.h"
#include "core/target.h"
#include <stdbool.h>
#include <stdint.h>

#define KL_FUSE_WIDE_LOAD_FACTOR 2.0

typedef struct kl_fuse_cost {
  int64_t blocks;        /* B: blocks that read each operand element */
  double wide, narrow;   /* w, n: bytes per operand element */
  double fused, unfused; /* the two costs (cycles); 0 where the rule does not apply */
} kl_fuse_cost;

/* Should the chain producing operand `operand` of anchor (graph.dot / graph.conv) be
 * fused? produced: the type of the chain's result (the value below the operand's
 * views); inputs / bases: per input of the chain, the type it is read as and the type of
 * the value below its views (the same where none). out (may be NULL) gets the numbers.
 * True (fuse) where the rule does not apply. */
bool kl_input_fusion_pays(const kl_target *t, const kl_op *anchor, int operand, const kl_type *produced, int ninputs,
                          const kl_type *const *inputs, const kl_type *const *bases, kl_fuse_cost *out);
#endif
