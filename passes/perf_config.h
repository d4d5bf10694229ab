/* perf_config.h — GEMM perf configs: the tile sizes of the tiled GEMM passes
 * (rock-gemm-to-gridwise, rock-gridwise-to-blockwise, rock-blockwise-to-threadwise).
 *
 * String format (version 1; six positive decimal integers, no spaces):
 *     v1:mPerBlock,nPerBlock,kPerBlock,mPerThread,nPerThread,kpack
 *   mPerBlock, nPerBlock  the C tile one workgroup computes (M x N)
 *   kPerBlock             K per iteration of the K loop (the A/B tiles staged in LDS
 *                         are kPerBlock x mPerBlock and kPerBlock x nPerBlock)
 *   mPerThread, nPerThread the register tile of one thread; the workgroup has
 *                         block size = (mPerBlock/mPerThread) * (nPerBlock/nPerThread)
 *                         threads, thread t owns rows (t / (nPerBlock/nPerThread)) *
 *                         mPerThread + [0, mPerThread) and columns (t % (nPerBlock/
 *                         nPerThread)) * nPerThread + [0, nPerThread) of the C tile
 *   kpack                 K elements stored contiguously in LDS (LDS layout
 *                         [kPerBlock/kpack, mPerBlock, kpack]) and consumed per
 *                         threadwise GEMM step
 *   e.g. "v1:64,64,16,64,64,1" (host: one thread per workgroup computes the whole
 *   64x64 tile) or "v1:128,128,16,8,8,1" (GPU: 256 threads, 8x8 per thread).
 *   splitK                optional 7th field (v1 and v2 alike; a 6-field string is
 *                         splitK 1): K is split into splitK slices of
 *                         ceil(ceil(K/splitK)/kPerBlock)*kPerBlock (K padded with 0s), each
 *                         computed by its own workgroups (the grid gains a split
 *                         dimension) whose partial products are added atomically into the
 *                         output after a plan prefill of 0 (rock-gemm-to-gridwise has the
 *                         conditions), or written as f32 partials to a workspace and summed
 *                         by an element-wise kernel (split-k-workspace: f16/bf16 outputs,
 *                         epilogues, no f32 atomics). Printed only when > 1: "v1:64,64,16,8,8,1,4".
 *                         splitK > K is an error naming the field (rock-gemm-to-gridwise).
 * Validation (per target and element size): every field >= 1; mPerBlock % mPerThread,
 * nPerBlock % nPerThread and kPerBlock % kpack == 0; block size <= the target's
 * max_workgroup_size; the block size divides kPerBlock*mPerBlock and kPerBlock*nPerBlock
 * (every thread copies the same number of A and B elements into LDS); the LDS tiles
 * (kPerBlock * (mPerBlock + nPerBlock) * element bytes) fit in the target's lds_bytes.
 * M, N and K need not be tile multiples (the passes pad them with Pad views).
 * Pipeline stages (rock-gridwise-to-blockwise's option cp-async, not a perf-config field:
 * the same tiles run with any stage count). S = 2..KL_MAX_STAGES keeps S copies of the A
 * and B LDS tiles; the global -> LDS copies of K step k + S - 1 are issued (NVIDIA:
 * cp.async 16 bytes .cg, 4 / 8 bytes .ca, zero-filling padded and out-of-bounds vectors;
 * host and AMDGPU: plain copies) before the MMAs of step k, one commit_group per step,
 * wait_group S-2 and one barrier before each step. S is capped so that the S stages fit
 * the target's LDS (sm_80 163 KiB, sm_90 227 KiB) and by the K
 * steps; an operand with an input-fusion prologue, or whose global vectors do not land as
 * 4 / 8 / 16-byte LDS vectors (an N-major B into the K-contiguous mma.sync tiles), keeps
 * the register path (the kernel's async_copy: "A,B", "A", "B" or "none"; pipeline_stages:
 * S), and then S is at most 2 (its copy is live across the MMAs: spills at S = 3, 4).
 * NVIDIA kernels above 48 KiB of LDS take it as dynamic shared memory (core/target.h).
 * -1 = auto: mma.sync GEMMs on NVIDIA only, both operands async in the xor stages (K tiles of
 * 64 bytes; kgroup measured slower than the register loop), 3 stages, 4 where the grid
 * is narrow: M or N spans at most KL_CP_ASYNC_NARROW block tiles, so the other, long operand
 * is read at most that many times and streams from DRAM rather than L2, a longer latency the
 * fourth stage covers (H100, 128x128x32: 4096^3, 32 x 32 tiles, 353 / 347 TFLOP/s at S = 3 /
 * 4; the seed conv at batch 512, 196 x 4 tiles, 321 / 327), fewer where they do not fit twice
 * in the LDS, off when fewer than 3 fit (two stages, and A async with B through registers,
 * measured slower than the register-staged loop: docs/ARCHITECTURE.md); 0 / 1 = off (the
 * register-staged loop).
 * KL_CP_ASYNC_DEFAULT is the option's default, the one switch (-1, today's default, makes the
 * pipeline the default for mma.sync on sm_80 / sm_90, with KL_CP_ASYNC_LAYOUT_DEFAULT's stages, and
 * rock-gemm-to-gridwise then gives a GEMM whose operands can both go async the mma.sync
 * heuristic of kl_accel_config_heuristic_async (passes/rock_accel.h), which caps its K tile
 * at KL_CP_ASYNC_KB_MAX: sm_80's K 64 tiles spill 72 bytes
 * at S = 3 and fit only two stages twice in its 163 KiB; 128x128x32 at S = 4 takes 225
 * registers, 64 KiB, two blocks per SM, no spills); the environment variable
 * KILN_CP_ASYNC (auto, off, 2..4) puts rock-gridwise-to-blockwise{cp-async=N} into the
 * default pipeline instead (so it is part of the compile-cache key).
 * Version 2 ("v2:mPerBlock,nPerBlock,kPerBlock,mPerWave,nPerWave,kpack") selects the
 * matrix-instruction path (MFMA / WMMA / mma.sync); its format, validation and
 * heuristic are in passes/rock_accel.h.
 * Version 3 ("v3:mPerBlock,nPerBlock,kPerBlock,mPerWave,nPerWave,kpack[,splitK]", the v2
 * fields) selects Hopper's warpgroup MMAs (wgmma.mma_async, targets with wgmma: sm_90a;
 * f16 / bf16): a "wave" is a warpgroup of 128 threads, mPerWave a multiple of 64, nPerWave
 * the instruction's N (a multiple of 8, <= 256), kpack * element bytes = 16, e.g.
 * "v3:128,128,64,64,128,8" (2 warpgroups, 64x128 each). Without a config the path is off
 * unless rock-gemm-to-gridwise runs with wgmma=true (its heuristic); passes/rock_wgmma.h.
 *
 * Contract: the perf-config functions are pure functions over plain structs (no
 * allocation). Errors are a false / NULL return plus a message in a caller-supplied
 * buffer (always NUL-terminated when errlen > 0; err may be NULL) naming the offending
 * field; kl_perf_resolve_target and the view helpers at the end (shared by the three
 * passes) report the same way. Views returned by the helpers are heap kl_views owned by
 * the caller (kl_view_free); IR they create is arena-owned by the context. */
#ifndef KL_PERF_CONFIG_H
#define KL_PERF_CONFIG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/ir.h"
#include "core/rewrite.h"
#include "core/view.h"
#include "core/target.h"

#define KL_MAX_STAGES              4
#define KL_NV_STEP_LATENCY         1000.0 /* cycles a K step waits at least: passes/rock_accel.h */
#define KL_CP_ASYNC_DEFAULT        -1     /* auto; 1: off */
#define KL_CP_ASYNC_STR_(x)        #x
#define KL_CP_ASYNC_STR(x)         KL_CP_ASYNC_STR_(x)
#define KL_CP_ASYNC_DEFAULT_STR    KL_CP_ASYNC_STR(KL_CP_ASYNC_DEFAULT)
#define KL_CP_ASYNC_LAYOUT_DEFAULT "auto" /* the async stages' LDS layout: auto, xor, krow or kgroup */
#define KL_CP_ASYNC_KB_MAX         32     /* mma.sync K tile cap of the heuristic while the pipeline is on */
#define KL_CP_ASYNC_NARROW         4      /* auto: 4 stages where M or N spans at most this many block tiles, else 3 */

typedef struct kl_perf_config {
  int64_t m_per_block, n_per_block, k_per_block, m_per_thread, n_per_thread, kpack;
  int64_t split_k; /* the optional 7th field; 0 (left out of an initializer) or 1: no split */
} kl_perf_config;

/* Field names in string order ("mPerBlock", ..., "kpack"). */
extern const char *const kl_perf_config_fields[6];

/* Parses "v1:..." into out. False + message (naming the field, or the version or the
 * field count) on error. */
bool kl_perf_config_parse(const char *s, kl_perf_config *out, char *err, size_t errlen);
/* Writes the canonical string "v1:a,b,c,d,e,f" into buf (returns buf). */
char *kl_perf_config_print(const kl_perf_config *pc, char *buf, size_t n);
/* (mPerBlock/mPerThread) * (nPerBlock/nPerThread); 0 if the division is not exact. */
int64_t kl_perf_config_block_size(const kl_perf_config *pc);
/* Checks the rules above for target t and input element size elem_bytes (A and B). */
bool kl_perf_config_validate(const kl_perf_config *pc, const kl_target *t, int elem_bytes, char *err, size_t errlen);
/* Number of workgroups: G * ceil(M/mPerBlock) * ceil(N/nPerBlock). */
int64_t kl_perf_config_grid_size(const kl_perf_config *pc, int64_t g, int64_t m, int64_t n);
/* LDS bytes of the A and B tiles. */
int64_t kl_perf_config_lds_bytes(const kl_perf_config *pc, int elem_bytes);

/* Formats a message into err[n] (if err) and returns false: the error helper of the
 * perf-config modules. */
bool kl_perf_errf(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The six comma-separated positive integer fields after a perf config's "vN:" prefix
 * (`fields` points just after it), plus the optional 7th, splitK (out[6], 1 when left
 * out), for the v1 and v2 formats alike: errors quote s, name the field (names[i],
 * "splitK") and show fmt, the expected format. */
bool kl_perf_fields_parse(const char *s, const char *fields, const char *const *names, const char *fmt, int64_t out[7],
                          char *err, size_t errlen);

/* Picks a valid config for a G x M x N x K GEMM on target t (deterministic).
 * Host (max_workgroup_size 1): block size 1, mPerThread = mPerBlock, nPerThread =
 * nPerBlock; the tiles are chosen by a cycle model of the register-blocked host kernel
 * (passes/lower_loops_host.c: vector FMAs per K step, C-tile traffic per K block, the
 * packed copies), within the LDS budget — e.g. 256x256 tiles with kPerBlock 32 for large
 * problems (see host_cost in perf_config.c). If that model finds nothing, the generic
 * candidates below are used with host tiles in {64,...,1}.
 * GPUs: M and N tiles in {128,64,...,1}, per-thread tiles in {8,4,2,1}, block sizes
 * 64..256 that are multiples of the wave size, K tiles in {32,...,1}; kpack 1. Each
 * candidate that validates gets a cost (a rough time model)
 *   rounds * (Kp * (mT*nT + 2*(mT+nT) + 4*(mPerBlock+nPerBlock)/blockSize) + 32*Kp/kPerBlock)
 * with rounds = ceil(workgroups / max(compute_units, 1)), Kp = K padded to kPerBlock,
 * mT/nT = mPerThread/nPerThread: padded multiply-adds per thread, LDS reads per
 * multiply-add, the global->LDS copy and a per-iteration (barrier) cost. The cheapest
 * wins; ties go to the earlier candidate (larger tiles first). Returns false only if
 * no candidate fits the target (never for the built-in targets). Targets with a matrix
 * unit use the v2 accel heuristic instead (passes/rock_accel.h). */
bool kl_perf_config_heuristic(const kl_target *t, int64_t g, int64_t m, int64_t n, int64_t k, int elem_bytes,
                              kl_perf_config *out);
/* The GPU cost above of config pc for that GEMM (the split-K choice compares it,
 * passes/gemm_split.h). NVIDIA targets with l2_bytes_per_cu_clk (sm_90): per K step
 * max(the thread's multiply-adds and LDS reads, tile bytes / that rate,
 * KL_NV_STEP_LATENCY) + 32, times the K steps and rounds (passes/rock_accel.h). */
double kl_perf_config_cost(const kl_perf_config *pc, const kl_target *t, int64_t g, int64_t m, int64_t n, int64_t k,
                           int elem_bytes);

/* The target of an op: the pass option `option` if non-empty, else the string attribute
 * "target" of the enclosing func, else of the module, else "host". NULL + message for
 * an unknown target name. */
const kl_target *kl_perf_resolve_target(kl_op *op, const char *option, char *err, size_t errlen);
/* "none", "mfma", "wmma", "mma_sync". */
const char *kl_accel_kind_name(kl_accel a);
/* Accumulator element type of a GEMM over `in`: f32 for f16/bf16/f32, f64 for f64,
 * i64 for i64, i32 for the other integer types. */
const kl_type *kl_gemm_acc_type(kl_ctx *ctx, const kl_type *in);

/* ---- helpers shared by the three tiled-GEMM passes ----
 * kl_vb chains view builders (core/view.h) without checking every step: the first
 * failing step keeps its message and later steps do nothing; kl_vb_finish returns the
 * simplified view (caller frees) or NULL + the first message. */
typedef struct kl_vb {
  kl_view *v;
  bool bad;
  kl_view_err err;
} kl_vb;
void kl_vb_identity(kl_vb *b, int rank, const int64_t *shape, const char *const *names);
void kl_vb_unmerge(kl_vb *b, const char *dim, int n, const char *const *names, const int64_t *sizes);
void kl_vb_merge(kl_vb *b, const char *name, int n, const char *const *from);
void kl_vb_add_dim(kl_vb *b, const char *name, int64_t size); /* appended last */
void kl_vb_pad(kl_vb *b, int n, const char *const *names, const int64_t *lr);
void kl_vb_order(kl_vb *b, int n, const char *const *names); /* permute to this order */
kl_view *kl_vb_finish(kl_vb *b, char *err, size_t errlen);
/* The view of value v (a buffer or a rock.transform chain over one) composed under
 * `top` (top's lower shape = v's shape): a view from top's upper space to the underlying
 * buffer's coordinates; *under = that buffer. NULL + message on failure. */
kl_view *kl_tile_compose_to_buffer(const kl_view *top, kl_value *v, kl_value **under, char *err, size_t errlen);
/* Max vectorization (core/view.h, 128-bit cap) along upper dim `dim` of top, through
 * v's transform chain and the underlying buffer's strides; 1 if it cannot be computed. */
int64_t kl_tile_vector_len(const kl_view *top, kl_value *v, int dim);
/* Memory transactions of one warp through `top` (upper dims "bid", "tid", "iter"):
 * block `bid`, lanes 0..warp-1, each lane's iter range taken `vec` elements per
 * access instruction; the sum over instructions of the distinct `sector`-byte segments
 * of v's underlying buffer the lanes touch (padding points excluded). A coalescing
 * measure: fewer is better for the same bytes. -1 if it cannot be computed. */
int64_t kl_tile_warp_sectors(const kl_view *top, kl_value *v, int64_t bid, int warp, int64_t vec, int sector);
/* Creates (at the rewriter's insertion point) %r = rock.transform(src) {view} with a
 * row-major result buffer over view's upper shape, src's element type and space. */
kl_value *kl_tile_transform(kl_rewriter *rw, kl_loc loc, kl_value *src, const kl_view *view);
/* arith.constant v : index at the insertion point. */
kl_value *kl_tile_index(kl_rewriter *rw, kl_loc loc, int64_t v);
/* The enclosing func.func of op (NULL if none). */
kl_op *kl_tile_func_of(kl_op *op);
#endif
