/* rock_accel.h — GEMMs on matrix instructions (MFMA on gfx908/gfx90a/gfx942, WMMA on
 * gfx1100, mma.sync on sm_80/sm_90): the accel perf config, the wave-level
 * decomposition of the block tile, the per-lane operand / accumulator layouts of each
 * instruction as views, the blockwise lowering and the loop-level op rock.mma.
 *
 * Accel perf config (string version 2; six positive decimal integers, no spaces):
 *     v2:mPerBlock,nPerBlock,kPerBlock,mPerWave,nPerWave,kpack
 *   mPerBlock, nPerBlock  the C tile of one workgroup; kPerBlock: K per iteration of the
 *                         K loop (A/B tiles staged in LDS as in v1)
 *   mPerWave, nPerWave    the C tile of one wave (warp): multiples of the instruction's
 *                         M and N; a wave issues (mPerWave/M) x (nPerWave/N) instructions
 *                         per K step of the instruction (mRepeat x nRepeat)
 *   kpack                 K elements contiguous in LDS (layout [kPerBlock/kpack, D, kpack])
 *   block size = (mPerBlock/mPerWave) * (nPerBlock/nPerWave) * wave size; e.g.
 *   "v2:64,64,32,32,32,4" on gfx942 with f16: 4 waves (256 threads), 32x32x8 MFMAs.
 *   An optional 7th field splitK (">= 1", default 1) splits K as in v1 (perf_config.h):
 *   "v2:64,64,32,32,32,4,8".
 * Validation: fields >= 1; mPerWave % M, nPerWave % N, mPerBlock % mPerWave,
 * nPerBlock % nPerWave, kPerBlock % K (the instruction's) and kPerBlock % kpack == 0;
 * block size <= the target's max workgroup size and dividing kPerBlock*mPerBlock and
 * kPerBlock*nPerBlock; LDS tiles within the target's LDS (NVPTX: within the 48 KiB of
 * static shared memory); accumulators per lane
 * (mRepeat * nRepeat * accumulator registers of one instruction) <= max_vgprs / 2.
 * A "v2:" config on a target / input type without a matrix instruction is an error; a
 * "v1:" config always selects the per-thread FMA path; without a config the accel path
 * is taken whenever the target has an instruction for the input type (heuristic below)
 * unless rock-gemm-to-gridwise runs with accel=false.
 *
 * IR contract. An accel GEMM is a rock.gridwise_gemm / rock.blockwise_gemm carrying the
 * extra attributes m_per_wave, n_per_wave, accel_instr (the LLVM intrinsic that kiln
 * calls, see kl_accel_desc) and accel (the matrix unit: "mfma", "wmma", "mma_sync"). Their m_per_thread x n_per_thread (kl_accel_thread_tile)
 * keep the two meanings the tiled passes rely on: block size = (mPerBlock/mPerThread) *
 * (nPerBlock/nPerThread) and mPerThread*nPerThread accumulators per thread; which
 * (m, n) each accumulator holds is the instruction's layout (kl_accel_c_view), not the
 * FMA thread tile. Thread tid = (wave_m * (nPerBlock/nPerWave) + wave_n) * wave + lane.
 * Accumulator i = (mr * nRepeat + nr) * C + r (instruction (mr, nr), register r).
 * rock-blockwise-to-threadwise lowers an accel rock.blockwise_gemm (kl_accel_lower_blockwise):
 *   (top of func) %ra = rock.alloc private [mRepeat*A] (A's type), %rb [nRepeat*B]
 *   scf.for %kk = 0 to kPerBlock/K {
 *     rock.threadwise_read_into(%lds_a, %ra, %tid, %kk) {view = kl_accel_lds_view(A)}
 *     rock.threadwise_read_into(%lds_b, %rb, %tid, %kk) {view = kl_accel_lds_view(B)}
 *     (mma.sync with f16 / bf16 on NVPTX: both reads also carry ldmatrix = 4, or 2 / 1
 *     when the lane's elements are not a multiple of 8 / 4: rock-lower-loops reads them
 *     with rock.ldmatrix where it proves the lane mapping, passes/lower_loops_ldmatrix.c)
 *     per (mr, nr): %a = rock.load(%ra, mr*A) : vector<A x T>, %b likewise,
 *       %c = rock.load(%acc, i) : vector<C x Tacc>,
 *       %d = rock.mma(%a, %b, %c) {instr, m, n, k}, rock.store(%d, %acc, i)
 *   }
 * (A, B, C = elements per lane of one instruction's operands; a 1-element operand is a
 * scalar.) rock.mma(%a, %b, %c) -> d (loop level, pure): one matrix instruction of the
 * wave: D = A x B + C with the lane layouts of kl_accel_desc; lower-to-llvm maps it to
 * the intrinsic (passes/lower_accel.h).
 *
 * Memory: views are heap kl_views owned by the caller (kl_view_free). Errors: NULL /
 * false / -1 with a message in the caller's buffer (naming the offending field for
 * configs); pattern functions report through kl_rewriter_fail. */
#ifndef KL_ROCK_ACCEL_H
#define KL_ROCK_ACCEL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/ir.h"
#include "core/rewrite.h"
#include "core/target.h"
#include "core/view.h"

/* ---- instruction layouts ----
 * The lane index and the element (register) index of an operand are split into digits
 * (mixed radix, most significant first); each coordinate of the operand's matrix is a
 * concatenation of digits (most significant first). Lane digits that no coordinate
 * uses mean the operand is replicated across them; every element digit is used. */
typedef struct kl_accel_digit {
  char who;
  int idx;
} kl_accel_digit; /* who: 'l' lane, 'e' element */
typedef struct kl_accel_frag {
  int nlane;
  int64_t lane[4]; /* lane digit sizes; product = wave size */
  int nelem;
  int64_t elem[4]; /* element digit sizes; product = elements per lane */
  int nx;
  kl_accel_digit x[4]; /* A, C: the m coordinate; B: n */
  int ny;
  kl_accel_digit y[4]; /* A, B: the k coordinate; C: n */
} kl_accel_frag;

typedef struct kl_accel_desc {
  kl_accel kind;
  const char *in_type, *acc_type; /* "f16" ... ; "f32" / "i32" */
  int m, n, k;                    /* D[m x n] += A[m x k] * B[k x n] per wave */
  int wave;                       /* lanes */
  const char *intrinsic;          /* the LLVM intrinsic lower-to-llvm calls */
  int kpack;                      /* K elements contiguous per lane (LDS kpack default) */
  kl_accel_frag a, b, c;
} kl_accel_desc;

int kl_accel_desc_count(void);
const kl_accel_desc *kl_accel_desc_at(int i);
const kl_accel_desc *kl_accel_desc_by_intrinsic(const char *intrinsic);
/* The instruction target t uses for input element type `in` (NULL: none, FMA path).
 * It must be in the target table (kl_target_accel_for) with the same shape. */
const kl_accel_desc *kl_accel_desc_for(const kl_target *t, const kl_type *in);
/* Elements per lane of an operand (product of the element digits). */
int64_t kl_accel_frag_len(const kl_accel_frag *f);
/* Evaluates a layout: the (x, y) coordinates of element e of lane l. */
void kl_accel_frag_eval(const kl_accel_frag *f, int64_t lane, int64_t e, int64_t *x, int64_t *y);

/* ---- perf config ---- */
typedef struct kl_accel_config {
  int64_t m_per_block, n_per_block, k_per_block, m_per_wave, n_per_wave, kpack;
  int64_t split_k; /* optional 7th field (0 or 1: no split); see perf_config.h */
} kl_accel_config;
extern const char *const kl_accel_config_fields[6]; /* "mPerBlock", ..., "kpack" */

bool kl_accel_config_parse(const char *s, kl_accel_config *out, char *err, size_t errlen);
char *kl_accel_config_print(const kl_accel_config *c, char *buf, size_t n);    /* "v2:..." */
int64_t kl_accel_block_size(const kl_accel_config *c, const kl_accel_desc *d); /* 0 if not exact */
int64_t kl_accel_acc_per_lane(const kl_accel_config *c, const kl_accel_desc *d);
/* The rules above for target t, instruction d and input element size elem_bytes. */
bool kl_accel_config_validate(const kl_accel_config *c, const kl_target *t, const kl_accel_desc *d, int elem_bytes,
                              char *err, size_t errlen);
/* A valid config for a G x M x N x K GEMM (deterministic): candidates over wave tiles
 * of 1, 2, 4 instructions per dim, 1..4 waves per dim (block size <= 256), K tiles of
 * 1..8 instruction K steps (<= 64 elements), LDS tiles <= 48 KiB (the static shared
 * memory limit of NVIDIA GPUs), kpack = d->kpack; cost =
 *   rounds * ceil(K / kPerBlock) * (max(mma, global, lds) + 64)
 * with rounds = ceil(workgroups / compute units), mma = instructions per wave *
 * M*N*K / 128 cycles (f32 inputs: / 32), global = tile bytes / 64 per cycle, lds =
 * register-operand bytes a wave reads / 128 per cycle; ties go to the least padded
 * volume (Mp*Np*Kp), then to the earlier candidate (larger tiles). False if none fits. */
bool kl_accel_config_heuristic(const kl_target *t, const kl_accel_desc *d, int64_t g, int64_t m, int64_t n, int64_t k,
                               int elem_bytes, kl_accel_config *out);
/* The same for a GEMM whose A and B both take the cp.async pipeline (rock-gemm-to-gridwise
 * asks where both are K-contiguous kernel arguments and the pipeline is on by default,
 * KL_CP_ASYNC_DEFAULT): on mma.sync (NVIDIA), where even 128x128 tiles give more blocks
 * than SMs (else it is the plain heuristic), K tiles of at most KL_CP_ASYNC_KB_MAX (K 64
 * spilled at S = 3 on sm_80, and auto pipelines only the xor layout of K 32), and the
 * second pass drops the double-buffering
 * preference (the pipeline has its own stages) and ranks block-tile reuse before fewer
 * waves, so large GEMMs take 256x128x32 / 128x256x32 (8 warps; H100 4096^3 at S = 3: 391 /
 * 385 TFLOP/s against 353 for 128x128x32; ptxas: no spills on sm_80 / sm_90); elsewhere it
 * is kl_accel_config_heuristic. */
bool kl_accel_config_heuristic_async(const kl_target *t, const kl_accel_desc *d, int64_t g, int64_t m, int64_t n,
                                     int64_t k, int elem_bytes, kl_accel_config *out);
/* NVIDIA targets with l2_bytes_per_cu_clk (sm_90, sm_90a): global = tile bytes / that rate
 * (17: what 4096^3 reaches, core/target.h), and a K step costs at least
 * KL_NV_STEP_LATENCY cycles: the register-staged loop waits once per step for its global
 * loads (measured on an H200: a one-warp 16x8x64 block ran 256 K steps in 165 us, ~1270
 * cycles a step), so few-tile GEMMs prefer fewer, larger K steps per block over tiny tiles.
 * mma.sync's second pass (the configs within 5% of the best cost; rock_accel_config.c) skips
 * configs with over 25% more padded volume than the best, and there (sm_90) a grid of at most
 * one block per SM prefers blocks of 4 warps, then more blocks, before larger wave tiles.
 * kl_accel_config_cost: the cost (cycles of the busiest compute unit) the heuristic ranks
 * config c by for that GEMM (AMDGPU: amd_cost below), used by the split-K choice
 * (passes/gemm_split.h). */
double kl_accel_config_cost(const kl_accel_config *c, const kl_target *t, const kl_accel_desc *d, int64_t g, int64_t m,
                            int64_t n, int64_t k, int elem_bytes);
/* The NVIDIA cost's K step of one block of config c in cycles, before the latency floor:
 * the largest of its MMA cycles, its tile bytes at the L2 rate and its LDS fragment bytes
 * (the split-K choice's occupancy model, passes/gemm_split.h, builds on it). */
double kl_accel_config_step(const kl_accel_config *c, const kl_target *t, const kl_accel_desc *d, int elem_bytes);
/* AMDGPU targets take their own search and cost (the above stays NVIDIA's): wave tiles up
 * to 128 per dim, up to 8 waves (512 threads), block tiles up to 256x256, the target's
 * whole LDS, kpack 8 for 2-byte types on MFMA (16-byte LDS rows), only configs that fit
 * the register estimate below; cost = rounds * ceil(K / kPerBlock) * max(conc * step,
 * step + 200 / waves per SIMD) cycles, with step = 128 + max(MFMA cycles at the
 * instruction's cu_flops_per_clk (scaled down when the CU's workgroups have fewer waves
 * than SIMDs), tile bytes / the target's l2_bytes_per_cu_clk, LDS bytes read and written /
 * 128), conc = workgroups per CU (registers; LDS: the bytes the workgroup allocates,
 * kl_accel_amd_lds_bytes), rounds = ceil(workgroups / (CUs * conc)): L2 and LDS bytes per FLOP are charged, so large shapes take large tiles; within 2% of the best cost the least padding wins. rock-gemm-to-gridwise then may halve the pick's K tile (kl_accel_amd_k_tile, its K-loop model). Falls back to the search above when the instruction has no throughput.
 * Register estimate per lane (32-bit): acc = accumulators, arch = the fragments of all
 * kPerBlock/K instruction steps (LLVM hoists the unrolled LDS reads) + the next tile's
 * global loads held in registers (kPerBlock*(MB+NB)*bytes / block size / 4) + 32
 * (addresses, indices). MFMA (AGPR accumulators): acc <= 128, arch <= 224 and, where VGPRs
 * and AGPRs share 512 registers, arch + acc <= 512 / waves of the workgroup per SIMD;
 * others: arch + acc <= min(max_vgprs, 256). Checked against LLVM 19 on the benchmark
 * shapes (spec/lua/amd_isa_spec.lua: zero scratch at every heuristic choice); false with a
 * reason in why when a config would spill (true on other targets). */
void kl_accel_amd_regs(const kl_accel_config *c, const kl_accel_desc *d, int elem_bytes, int64_t *arch, int64_t *acc);
bool kl_accel_amd_fits_registers(const kl_accel_config *c, const kl_target *t, const kl_accel_desc *d, int elem_bytes,
                                 char *why, size_t whylen);
/* The LDS bytes one workgroup of config c allocates on AMDGPU t, as the passes lay it out:
 * rock-gridwise-to-blockwise's K-loop tiles (skewed 16-byte kpack rows, two pairs where
 * they double-buffer, the unpadded xor pairs) grown to rock-output-swizzle's tile of the
 * output (MB x NB elements of elem_bytes, rows padded by 16 bytes, else unpadded) when it
 * fits the LDS. Before session 35 the cost charged the plain tile pair only, so gfx942
 * took 2-wave tiles whose 34-36 KiB swizzle tile left one workgroup per CU. */
int64_t kl_accel_amd_lds_bytes(const kl_accel_config *c, const kl_target *t, const kl_accel_desc *d, int elem_bytes);
/* Whether rock-gridwise-to-blockwise's AMDGPU K loop takes two skewed tile pairs of
 * pair_bytes (one barrier per K step, amd_k_loop) by default for config c: MFMA tiles where
 * two workgroups with two pairs each still fit the LDS of a CU, and MFMA / WMMA tiles with
 * 16-byte kpack rows (f16 / bf16; the kpack-1 f32 tiles' doubled loop body was not unrolled
 * by LLVM and took 10-20% more llvm-mca cycles per K step) whose two pairs fit the whole
 * LDS where that costs no occupancy: the workgroups per CU that the LDS allows with two
 * pairs are at least those the register estimate allows (per SIMD 512 registers on wave64,
 * 1536 on wave32, 8 / 16 waves), and the estimate leaves a quarter of the registers free
 * (WMMA: at most 192 VGPRs, MFMA: 168 of the 224 VGPRs outside the AGPR accumulators). The
 * heuristic's cost and LDS count (above) and the pass share this rule. */
bool kl_accel_amd_dbuf(const kl_accel_config *c, const kl_target *t, const kl_accel_desc *d, int elem_bytes,
                       int64_t pair_bytes);
/* AMDGPU, the K loop of the heuristic's config c (MFMA / WMMA) for a G x M x N x K GEMM:
 * where c's K loop is single-buffered (two barriers per K step: barrier, LDS stores,
 * barrier, matrix instructions) and its K-halved variant (same block and wave tile, at least
 * two instruction K steps and two K steps) double-buffers (kl_accel_amd_dbuf, or the xor
 * pairs: one barrier per K step, the next tile's stores overlapping this tile's matrix
 * instructions) at the same or more workgroups per CU and fits the registers, c becomes that
 * variant (true) when the K-loop model charges it under 98% of c. The K-loop model is the
 * cost above with two changes, both about the loop of one block tile: the issue of a K step
 * in proportion to the K tile (128 cycles at K 64, f32 MFMA 16; llvm-mca of the same block
 * tile at K 64 and 32: gfx90a 256x128 f16 636 / 319 cycles per K step, gfx1100 256x64
 * 384 / 211), and the single-buffered loop's LDS store -> barrier -> LDS load round trip
 * (200 cycles) exposed in every K step, filled only by the CU's other workgroups
 * (round step = max(conc * step, step + 200 + 200 / waves per SIMD); double-buffered:
 * step + 200 / waves per SIMD). E.g. 4096^3 f16: gfx90a 256x128x64 -> 256x128x32, gfx1100
 * 256x64x64 -> 256x64x32 (both one workgroup per CU either way). rock-gemm-to-gridwise
 * (and the quick tuning space's lead, passes/perf_space.c) applies it where
 * kl_gemm_amd_k_loop says (passes/gemm_shape.h): heuristic configs whose operands have no
 * bounds checks (the padded 3x3 convs' masked loads: llvm-mca charged their K-32
 * double-buffered loops 22-95% more issue per K than the K-64 ones, more than the barrier
 * saves) on targets whose barrier is the LDS-only inline assembly (kl_amdgpu_barrier_drains: gfx908, gfx11; with LLVM's
 * s_barrier, gfx90a's 4096^3 256x128x32 loop waited for its loads mid-step). */
bool kl_accel_amd_k_tile(const kl_target *t, const kl_accel_desc *d, int64_t g, int64_t m, int64_t n, int64_t k,
                         int elem_bytes, kl_accel_config *c);
/* AMDGPU: the configs the heuristic ranks (every one it can pick) for instruction d with
 * elem_bytes-byte inputs on t: wave tiles up to 128 per dim, block tiles up to 256, up to
 * 512 threads, kPerBlock up to 64, kpack 8 for 2-byte types on MFMA and WMMA, valid and
 * fitting the registers (kl_accel_amd_fits_registers). Writes the first max of them to
 * out and returns their count (spec/c/test_accel.c proves the LDS layout of each). */
#define KL_ACCEL_AMD_MAX_CANDIDATES 576
int kl_accel_amd_candidates(const kl_target *t, const kl_accel_desc *d, int elem_bytes, kl_accel_config *out, int max);
/* m_per_thread x n_per_thread with the block size and accumulator count of the config
 * (see the IR contract); false if the sizes do not factor. */
bool kl_accel_thread_tile(const kl_accel_config *c, const kl_accel_desc *d, int64_t *mt, int64_t *nt);

/* ---- hooks of the tiled GEMM passes ----
 * rock-gemm-to-gridwise: decides the path for a gemm with inputs of type `in` on t,
 * given the perf config string `given` (NULL: none). Returns 1 (accel: *c, *d set),
 * 0 (FMA path), -1 (error in err: a bad "v2:" config, or "v2:" without an instruction). */
int kl_accel_select(const kl_target *t, const kl_type *in_a, const kl_type *in_b, const char *given, int64_t g,
                    int64_t m, int64_t n, int64_t k, kl_accel_config *c, const kl_accel_desc **d, char *err,
                    size_t errlen);
/* The extra attributes of an accel rock.gridwise_gemm (m_per_wave, n_per_wave,
 * accel_instr, accel): writes up to 4 entries into out, returns the count. */
int kl_accel_gridwise_attrs(kl_ctx *ctx, const kl_accel_config *c, const kl_accel_desc *d, kl_named_attr *out);
/* True if op (gridwise / blockwise gemm) carries accel_instr. */
bool kl_accel_is_accel(const kl_op *op);
/* Copies the accel attributes of `from` onto `to` (no-op for FMA gemms). */
void kl_accel_copy_attrs(const kl_op *from, kl_op *to);
/* rock-gridwise-to-blockwise: the C write view (bid, tid, iter) -> (g, m, n) of an
 * accel rock.gridwise_gemm over padded C [G, Mp, Np]. */
kl_view *kl_accel_c_view(const kl_op *gridwise, int64_t G, int64_t Mp, int64_t Np, char *err, size_t errlen);
/* rock-blockwise-to-threadwise: lowers an accel rock.blockwise_gemm (contract above) for
 * the target named `target` (NULL / "": the func's / module's "target" attribute). */
bool kl_accel_lower_blockwise(kl_op *op, kl_rewriter *rw, const char *target);

/* ---- views (also used by the tests' lane-level simulation) ----
 * (tid, kk, iter) -> (k, d) of the [kPerBlock, D] LDS tile, D = mPerBlock (is_a) or
 * nPerBlock: iter = rep * A + e (rep < mRepeat, resp. nRepeat). */
kl_view *kl_accel_lds_view(const kl_accel_desc *d, const kl_accel_config *c, bool is_a, char *err, size_t errlen);
/* (bid, tid, iter) -> (g, m, n) of C [G, Mp, Np]; bid = (g * Mp/mPerBlock + m_block) *
 * Np/nPerBlock + n_block; iter = the accumulator index. */
kl_view *kl_accel_out_view(const kl_accel_desc *d, const kl_accel_config *c, int64_t G, int64_t Mp, int64_t Np,
                           char *err, size_t errlen);
#endif
