/* gemm_shape.h — the GEMM a graph.conv / graph.dot becomes, and the perf config that GEMM
 * gets on a target: the one place that answers both, for rock-gemm-to-gridwise (which tiles
 * it) and for the passes that must predict its tiles before it runs (split-k-workspace and
 * the split-K cost model, passes/gemm_split.h; the input-fusion cost rule of graph-partition,
 * passes/input_fusion_cost.h).
 *
 * Contract: pure functions over the op's types and attributes, the target table and plain
 * values (no IR mutation, no allocation kept).
 *
 * kl_gemm_shape_of: the implicit GEMM of a graph-level anchor, as rock-conv-to-gemm and
 * graph-to-rock build it:
 *  - dot y = a x b (batch dims broadcast, transpose_a / transpose_b): G = the product of
 *    y's batch dims, M, N = y's last two dims, K = a's contraction dim; A is operand 0;
 *  - 2-D conv x [N, C, H, W], w [Kout, C/g, Y, X] (g = the groups attribute, 1 if absent):
 *    G = g, M = Kout / g, N = N x Ho x Wo, K = C/g x Y x X; A is the filter (operand 1),
 *    B the input;
 *  - k_extent: what split-K slices (a dot's K, a conv's input channels per group).
 * False (nothing set) for other ops, convs other than 2-D, fewer than two operands or an
 * empty dim.
 *
 * kl_gemm_config_pick: the config rock-gemm-to-gridwise gives a G x M x N x K GEMM over
 * inputs of element types ea, eb (before its split-K and transposed mma.sync variants),
 * in this order:
 *  1. wgmma (KL_GEMM_PICK_WGMMA and KL_GEMM_PICK_ACCEL, no config given): the Hopper
 *     heuristic where the target has wgmma and takes the inputs (kl_wgmma_select:
 *     sm_90a, f16 / bf16 of one type);
 *  2. matrix instructions (KL_GEMM_PICK_ACCEL): kl_accel_select (a "v2:" / "v3:" config,
 *     else the accel heuristic where the target has an instruction for the inputs; with
 *     KL_GEMM_PICK_ASYNC and no config, mma.sync's kl_accel_config_heuristic_async);
 *  3. the FMA path: the given "v1:" config (parsed and validated), else the heuristic of
 *     passes/perf_config.h.
 * out->pc is always the block-level config (an accel config's thread tile from
 * kl_accel_thread_tile; splitK the given one's, 1 without); out->ac / out->ad are set on
 * the accel paths. False + message in err (no "rock.gemm: " prefix) for a config string
 * that does not parse or validate, or when no config fits ("no perf config fits target T").
 * An empty given string counts as none.
 *
 * kl_gemm_async_major: whether the operand v ([G, K, X] buffer view) of a rock.gemm /
 * rock.gridwise_gemm can take the cp.async pipeline of rock-gridwise-to-blockwise, and in
 * which shared-memory layout: a kernel argument seen through views only (no intermediate,
 * no input-fusion prologue, not LDS) of 16-bit elements (mma.sync's 16-byte kpack rows)
 * whose views allow 16-byte vectors along K (KL_ASYNC_K: the K-major xor stages read with
 * ldmatrix) or, failing that, along X = M / N (KL_ASYNC_MN: the MN-major xor stages read
 * with ldmatrix.trans); KL_ASYNC_NONE otherwise. rock-gemm-to-gridwise asks it to pick the
 * async heuristic (KL_GEMM_PICK_ASYNC), rock-gridwise-to-blockwise to plan the pipeline. */
#ifndef KL_GEMM_SHAPE_H
#define KL_GEMM_SHAPE_H
#include "core/ir.h"
#include "core/target.h"
#include "passes/perf_config.h"
#include "passes/rock_accel.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kl_gemm_shape {
  int64_t G, M, N, K;
  int64_t k_extent; /* what split-K slices: a dot's K, a conv's input channels per group */
  int64_t groups;   /* a conv's groups (1 for a dot) */
  int a_operand;    /* the anchor operand that is the GEMM's A (a conv's filter: 1; a dot's a: 0) */
  bool conv;
} kl_gemm_shape;

bool kl_gemm_shape_of(const kl_op *anchor, kl_gemm_shape *out);

typedef enum kl_gemm_path {
  KL_GEMM_PATH_FMA,   /* v1: the FMA (thread-tile) path */
  KL_GEMM_PATH_ACCEL, /* v2: MFMA / WMMA / mma.sync */
  KL_GEMM_PATH_WGMMA, /* v3: Hopper's wgmma (its heuristic or a given v3 config) */
} kl_gemm_path;

enum {
  KL_GEMM_PICK_ACCEL = 1, /* matrix instructions (rock-gemm-to-gridwise's option accel) */
  KL_GEMM_PICK_WGMMA = 2, /* the Hopper heuristic first (its option wgmma; needs ACCEL) */
  KL_GEMM_PICK_DEFAULT = KL_GEMM_PICK_ACCEL | KL_GEMM_PICK_WGMMA, /* the pass's defaults */
  KL_GEMM_PICK_ASYNC = 4, /* both operands will take the cp.async pipeline: the mma.sync heuristic's
                             kl_accel_config_heuristic_async (no config given) */
};

typedef struct kl_gemm_config {
  kl_gemm_path path;
  kl_perf_config pc;       /* block tile, kPerBlock, kpack, splitK; thread tile */
  kl_accel_config ac;      /* the accel paths' config (zero on the FMA path) */
  const kl_accel_desc *ad; /* the accel paths' instruction (NULL on the FMA path) */
} kl_gemm_config;

typedef enum kl_async_major {
  KL_ASYNC_NONE = 0, /* the register path only */
  KL_ASYNC_K,        /* K-contiguous: 16-byte vectors along K */
  KL_ASYNC_MN,       /* M / N-contiguous: 16-byte vectors along M / N */
} kl_async_major;
kl_async_major kl_gemm_async_major(kl_value *v);

bool kl_gemm_config_pick(const kl_target *t, const kl_type *ea, const kl_type *eb, const char *given, unsigned flags,
                         int64_t G, int64_t M, int64_t N, int64_t K, kl_gemm_config *out, char *err, size_t errlen);

/* kl_gemm_bounded_operand: whether a GEMM operand's views have bounds checks (a padded conv
 * input: invalid points). kl_gemm_amd_k_loop: whether rock-gemm-to-gridwise lets the AMD
 * heuristic's K loop move (kl_accel_amd_k_tile, passes/rock_accel.h) for the rock.gemm
 * `gemm` on t: an AMDGPU target whose barrier is the LDS-only inline assembly
 * (kl_amdgpu_barrier_drains: gfx908, gfx11) and no operand with bounds checks. */
bool kl_gemm_bounded_operand(kl_value *v);
/* kl_gemm_load_bytes: the widest global load (bytes, at most 16) of the GEMM operand v
 * ([G, K, X]): what its views allow along K or along X, whichever is wider (for an
 * input-fusion prologue: the narrowest of its inputs'); below 16 for odd strides or a slice
 * at an odd offset. 16 for operands with bounds checks (kl_gemm_bounded_operand: a padded
 * conv input, whose loads are narrow anyway; a smaller K tile spilled more there: ptxas
 * sm_90a, NCHW 3x3 convs) and where the views cannot be composed. */
int64_t kl_gemm_load_bytes(kl_value *v);
bool kl_gemm_amd_k_loop(kl_op *gemm, const kl_target *t);
#endif
