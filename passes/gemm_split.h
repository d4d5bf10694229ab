/* gemm_split.h — the split-K decision of a GEMM, shared by the two places that split K:
 * rock-gemm-to-gridwise (the atomic form: partial products added atomically into the
 * output after a prefill of 0) and split-k-workspace (the workspace form, at the graph
 * level: f32 partials [S, ...] and an element-wise kernel that sums them and runs the
 * epilogue).
 *
 * Contract: pure functions over the target table and plain values (no IR, no
 * allocation). kl_gemm_split_estimate picks the perf config rock-gemm-to-gridwise would
 * pick for a G x M x N x K GEMM over inputs of element types ea, eb (kl_gemm_config_pick
 * with the pass's defaults, passes/gemm_shape.h: the given config string, else the wgmma
 * heuristic where the target takes it, else the accel heuristic where the target has a
 * matrix instruction for the inputs, else the FMA heuristic; the transposed mma.sync
 * variant is not modelled: its tile count is the same up to rounding) and reports its
 * output tile count, its kPerBlock and the splitK the string asks for (1 without one).
 * False + message in err for a config string that does not parse or validate. */
#ifndef KL_GEMM_SPLIT_H
#define KL_GEMM_SPLIT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/target.h"
#include "core/type.h"

typedef struct kl_gemm_split_est {
  int64_t tiles;       /* G * ceil(M / mPerBlock) * ceil(N / nPerBlock) */
  int64_t k_per_block; /* the K tile */
  int64_t split_k;     /* the given string's splitK (1: none or no string) */
} kl_gemm_split_est;

bool kl_gemm_split_estimate(const kl_target *t, const kl_type *ea, const kl_type *eb, const char *given, int64_t G,
                            int64_t M, int64_t N, int64_t K, kl_gemm_split_est *out, char *err, size_t errlen);

/* The heuristic's split: when the output tiles leave most compute units idle and K is
 * long, split K so that the tiles fill about the compute units, keeping at least 4 K
 * iterations per split (slices of >= 4 * kPerBlock); powers of two up to 64. 1 on the
 * host (compute_units 0): it never splits by itself. */
int64_t kl_gemm_split_heuristic(const kl_target *t, int64_t tiles, int64_t K, int64_t k_per_block);

/* The split of the heuristic (no config given): on NVIDIA targets with an L2 rate
 * (l2_bytes_per_cu_clk: sm_90, sm_90a) a joint choice of split and tiles: for S = 1, 2,
 * 4, ... up to min(max_split, KL_SPLIT_MAX), slices of ceil(K / S) >= KL_SPLIT_MIN_SLICE,
 * the occupancy cost of the config the heuristic picks for the G*S x M x N x ceil(K/S)
 * GEMM (the split's GEMM) plus, for S > 1, the reduction: KL_SPLIT_FIXED cycles (~2 us: a
 * prefill or a second kernel) and the f32 partials written and read once through L2
 * (2 * S*G*M*N * 4 bytes over compute_units x l2_bytes_per_cu_clk per cycle); a larger S
 * is taken only when it costs less than KL_SPLIT_GAIN of the best so far.
 * The occupancy cost (mma.sync configs: kl_gemm_config_pick without the wgmma heuristic,
 * the model has no wgmma rates; FMA configs: kl_perf_config_cost): the busiest SM
 * runs ceil(blocks / SMs) blocks in rounds of the blocks that fit on it at once (registers
 * ~ f32 accumulators + 64 per thread of KL_NV_SM_REGS, KL_NV_SM_THREADS, two tile pairs
 * of shared memory: 2 for 128x128x32 f16); a K step of a round of b blocks takes
 * max(b * step, step + KL_NV_STEP_LATENCY) + 64 cycles, step = kl_accel_config_step: one
 * resident block cannot hide its loads' latency behind its MMAs, two can. Against
 * H100/H200 timings of the register-staged loop: the 3x3 conv on 7x7x512 at batch 64
 * (128x128 tiles, 100 blocks, 144 K steps) 152 us modelled / 144 measured (the tile cost
 * alone, kl_accel_config_cost: 79), 8192x320x1280 f16 43 / 42, 3x3 on 14x14x256 (196
 * blocks) 77 / 88, 4096^3 f16 546 / 452.
 * E.g. sm_90 64x64x65536 f16: one 64x64 tile, S = 256 (256 blocks of 4 K steps) where the
 * tile count alone gave 16x8 tiles and S = 4 (256 K steps a block); the 3x3 conv on
 * 7x7x512 at batch 64: S = 2 (200 blocks of 128x128, 72 K steps), 85 us modelled against
 * 152 unsplit. Other targets: kl_gemm_split_heuristic on est's tiles and kPerBlock.
 * The caller re-picks the config for the split GEMM (G*S x M x N x slice). */
/* On sm_90a (a target with wgmma) with f16 / bf16 inputs of one type (kl_gemm_split_wgmma)
 * the GEMM of each split is costed as the wgmma heuristic's pick for it at the sub-wave
 * model's cost (passes/rock_wgmma.h, kl_wgmma_tile_cost) instead of the occupancy model, the
 * reduction as above: the 3x3 conv on 7x7x512 at batch 64 then stays unsplit (128x96 tiles,
 * one wave; split in two: 264 blocks of 128x96 in two rounds, plus the partials).
 * Whether t takes the joint choice (an NVIDIA target with l2_bytes_per_cu_clk). */
bool kl_gemm_split_joint(const kl_target *t);
bool kl_gemm_split_wgmma(const kl_target *t, const kl_type *ea, const kl_type *eb);
#define KL_NV_SM_REGS      65536
#define KL_NV_SM_THREADS   2048
#define KL_SPLIT_MAX       256
#define KL_SPLIT_MIN_SLICE 128
#define KL_SPLIT_FIXED     4000.0
#define KL_SPLIT_GAIN      0.8
/* The cost model's account of one split S (1: none) of a G x M x N x K GEMM, what
 * kl_gemm_split_choose compares: the heuristic's config for the G*S x M x N x ceil(K/S)
 * GEMM (block tile, blocks, K steps per block) and its cost in cycles of the busiest
 * compute unit plus, for S > 1, the reduction's (KL_SPLIT_FIXED + the partials at the L2
 * rate). False when no config fits or S < 1 or the target has no compute units. */
typedef struct kl_gemm_split_costs {
  double cycles;
  int64_t m_per_block, n_per_block, k_per_block, blocks, k_steps;
} kl_gemm_split_costs;
bool kl_gemm_split_cost(const kl_target *t, const kl_type *ea, const kl_type *eb, int64_t G, int64_t M, int64_t N,
                        int64_t K, int64_t S, kl_gemm_split_costs *out);
int64_t kl_gemm_split_choose(const kl_target *t, const kl_type *ea, const kl_type *eb, int64_t G, int64_t M, int64_t N,
                             int64_t K, int64_t max_split, const kl_gemm_split_est *est);
#endif
