/* rock_wgmma.h — Hopper warpgroup GEMMs (sm_90a, `wgmma.mma_async`): the instruction
 * descriptors, the "v3:" perf config, the path selection and the blockwise lowering.
 * The path is the default on a target with `wgmma` (kl_target: sm_90a, which a compute
 * capability 9.0 device compiles for): rock-gemm-to-gridwise's option wgmma (true by
 * default; the heuristic below, falling back to mma.sync where it has no config: types
 * other than f16 / bf16 / f8e4m3fn / f8e5m2), or a "v3:" perf config; wgmma=false or
 * target sm_90: mma.sync (fp8 operands there: the FMA path).
 *
 * Instruction: wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16} (N = 8..256, a
 * multiple of 8), issued by a warpgroup (4 warps, 128 threads) with A and B read from
 * LDS through 64-bit matrix descriptors and D (f32) in registers; for fp8 operands (kiln's
 * f8e4m3fn / f8e5m2, kept by passes/fp8_compute.c with gemm-operands=fp8: opt-in, its
 * accumulation truncates each instruction's addends below 2^(emax - 13))
 * wgmma.mma_async.sync.aligned.m64nNk32.f32.{e4m3.e4m3,e5m2.e5m2}: K 32 = the same 16
 * bytes per core-matrix row, no transposed forms (both operands K-major, as here), no
 * imm-trans operands in the PTX; the same D layout. Its accumulator layout
 * (the C fragment, PTX ISA "wgmma .m64nNk16 register fragment layout for D"): thread
 * l = 32w + 4g + t of the warpgroup (warp w, g < 8, t < 4) holds N/2 floats, register
 * r = 4j + 2h + b (j < N/8, h, b < 2) = D[16w + 8h + g][8j + 2t + b] — mma.m16n8's C
 * fragment repeated N/8 times per warp, warp w owning rows 16w..16w+15. kl_accel_desc
 * expresses it as the C layout (lane digits [4, 8, 4], element digits [N/8, 2, 2]), so
 * kl_accel_c_view, rock-output-swizzle and the fused epilogue work unchanged. The A / B
 * layouts of the desc are unused (no register operands).
 *
 * Perf config (version 3, the v2 fields; passes/perf_config.h):
 *     v3:mPerBlock,nPerBlock,kPerBlock,mPerWave,nPerWave,kpack[,splitK]
 *   a "wave" is a warpgroup: mPerWave a multiple of 64 (mPerWave/64 instructions along
 *   M), nPerWave the instruction's N when <= 256 (a multiple of 8; larger: the largest
 *   multiple of 8 <= 256 dividing it, repeated); kpack * element bytes = 16 (8 for
 *   f16 / bf16: the LDS tiles [kPerBlock/8, rows, 8]; 16 for fp8: [kPerBlock/16, rows, 16];
 *   made of the 8-row x 16-byte "core matrices" the descriptors address); the other rules
 *   are v2's (kl_accel_config_validate; block size = warpgroups * 128). Errors: a v3 config
 *   on a target without wgmma or for inputs other than f16 / bf16 / f8e4m3fn / f8e5m2
 *   (equal types), bad fields.
 *   E.g. "v3:128,128,64,64,128,8": 2 warpgroups (256 threads), each a 64x128 tile,
 *   K tiles of 64 (4 instructions m64n128k16 per warpgroup and K tile).
 * Heuristic (wgmma=true, no config): large GEMMs (M, N, K multiples of 128, 256, 32, no
 * padding: odd sizes' bounds checks spilled; K >= 128; a tile per compute unit) take
 * "v3:128,256,64,64,256,8" (two warpgroups of m64n256k16) where K is a multiple of 64 and
 * at least 192, else "v3:128,256,32,64,256,8"; rock-gemm-to-gridwise takes kPerBlock 32
 * for operands staged wider than their type (kl_wgmma_wide_staging), 32 or 16 for an
 * operand with narrower loads than 16 bytes (kl_wgmma_narrow_loads); else mPerWave 64, nPerWave = 128 (N <= 64: N rounded up
 * to a multiple of 8 where that config validates, else 64), nPerBlock = nPerWave, mPerBlock 128 (64 when M <= 64 or when 128 leaves fewer tiles
 * than half the compute units), kPerBlock 64 (32 when K <= 32, 16 when K <= 16), kpack 8.
 * fp8: the same tiles with the K choices in bytes (kPerBlock 2x the elements: 128x256x64,
 * else 128 / 64 / 32; K thresholds doubled), kpack 16; with two-level accumulation
 * (rock-gemm-to-gridwise{fp8-promote=P}, default KL_FP8_PROMOTE_DEFAULT) then
 * kl_wgmma_promote_tiles (nPerWave <= 128, kPerBlock <= 64 dividing P).
 *
 * Two-level fp8 accumulation (the GEMM's fp8_promote = P K elements, a multiple of the K
 * tile): rock-gridwise-to-blockwise allocates a second private accumulator; the K step's
 * blockwise GEMM accumulates into it, and after each step that ends an interval (every
 * P / kPerBlock steps: an scf.if on the step index inside the loop) and after the loop,
 * kl_wgmma_emit_promote waits for every group (wait_group 0, the temporary passing through)
 * and adds it to the f32 accumulator (f32 adds), zeroing it; the epilogue reads the f32
 * accumulator. Register loop (wg_emit) and plain loop only (fp8 operands take no TMA).
 *
 * Blockwise lowering (kl_wgmma_lower_blockwise, from kl_accel_lower_blockwise): the LDS
 * tiles' composed views are checked to be core-matrix layouts, for every (k, d) of the
 * [kPerBlock, D] tile: addr(k, d) = O + E(d%8) + k%E + SBO*(d/8) + LBO*(k/E) elements
 * (E = 16 / element bytes: 8 for f16 / bf16, 16 for fp8; O, SBO, LBO multiples of E, i.e.
 * 16 bytes), or else K-major S-byte swizzled layouts (S = 128, 64, 32: what TMA writes
 * with CU_TENSOR_MAP_SWIZZLE_<S>B, passes/rock_tma.h), KS = S / element bytes:
 *   addr(k, d) = O + swz(((k / KS) * PBO + (d / 8) * SBO + (d % 8) * KS + k % KS) * eb) / eb
 * with swz = kl_swizzle_addr (the chunk XOR of the 8-row x S-byte atom) and O, PBO, SBO
 * multiples of 8S bytes (the atoms 8S-aligned: the hardware takes the XOR from the
 * absolute address; the LDS buffer is placed at kl_tma_lds_align); the descriptor then
 * carries the swizzle mode, SBO, LBO 16 (unused for K-major swizzled layouts) and, per
 * K16 step k0, the start address + (k0 / KS) * PBO + (k0 % KS) elements (32 bytes per
 * step inside an atom row, base offset 0); or else (16-bit types) the S-byte swizzled
 * MN-major layout (TMA's MN-major tiles), MS = S / eb:
 *   addr(k, d) = O + swz(((d / MS) * LBO + (k / 8) * SBO + (k % 8) * MS + d % MS) * eb) / eb
 * read with the instruction's imm-trans for that operand (rock.wgmma {trans_a, trans_b}),
 * the descriptor's LBO the panel stride, SBO the 8-row K group stride (PTX ISA's canonical
 * MN-major swizzled layout ((T,S/16,m),(8,k)) : ((1,T,LBO),(S/16 T,SBO))), per K16 step
 * the start + 2 SBO, per 64 rows of A / N columns of B the start + LBO per panel; a
 * failure of all is an error naming the operand,
 * then per block tile:
 *   rock.wgmma_sync {step = "fence"}
 *   per K step kk < kPerBlock/16, per instruction (mr, nr) of the warpgroup:
 *     %da = rock.wgmma_desc(%lds_a_raw, coords of (0, wm*mPerWave)) {lbo, sbo,
 *             offset = (SBO*8mr + LBO*2kk) bytes}
 *     %db = rock.wgmma_desc(%lds_b_raw, coords of (0, wn*nPerWave)) {lbo, sbo,
 *             offset = (SBO*(N/8)nr + LBO*2kk) bytes}
 *     %c = rock.load(%acc, i) : vector<N/2 x f32>; %d = rock.wgmma(%da, %db, %c) {instr}
 *     rock.store(%d, %acc, i)
 *   (one instruction per warpgroup and K step, mPerWave 64 and nPerWave <= 256 as in the
 *   heuristic's tiles, at most 16 K steps: the descriptors of every K step, then one
 *   %d = rock.wgmma(%da_0, %db_0, %da_1, %db_1, ..., %c) chaining the K steps on the
 *   accumulator: one inline asm of kPerBlock/16 wgmma.mma_async on the same registers
 *   instead of one each, so LLVM moves the 128-float accumulator through one asm call per
 *   K tile, not per K step; the same PTX instructions, SASS unchanged: seed conv cold compile
 *   0.30 -> 0.24 s CPU on a 2-core host)
 *   rock.wgmma_sync {step = "commit"}
 *   unless the op has wgmma_wait = "deferred": kl_wgmma_emit_acc_wait(pending 0)
 * with warpgroup wg = tid / 128, wm = wg / (nPerBlock/nPerWave), wn = wg % (...). (The
 * descriptors are one base per tile plus a constant: the lowering adds the offset where
 * the descriptor is used, so one base per tile stays live across the K loop; 178 -> 136
 * registers for 128x128x64 tiles. With the K loop's buffers joined into one 1-D LDS buffer
 * the tile origin joins the constant too: one base per operand for every buffer.)
 * The K loop (rock-gridwise-to-blockwise, more than one K step and W = 3 buffers fitting
 * the target's LDS, else W = 2; the tiles of one step in buffer s = step mod W; above
 * 48 KiB the kernel takes dynamic shared memory) defers the waits:
 *   read(0); write(buf 0); proxy_fence; barrier; read(1)
 *   step k: blockwise_gemm(buf k%W) [fence, MMAs, commit: group k]
 *           write(buf (k+1)%W)            (the copies hold step k+1; its last reader was
 *                                          group k+1-W, retired at step k-1's wait)
 *           proxy_fence                   (before the loads: its MEMBAR.ALL.CTA waits for
 *                                          the LDS stores only; option wgmma-fence=late
 *                                          puts it after the wait, as before)
 *           read((k+2) mod nk)            (global -> the private copies)
 *           wait_group(W-2); barrier
 *   after the loop: wait_group 0 with the accumulators through it; barrier
 * The loop runs nk - nk mod W steps (W per iteration); the nk mod W steps after it are
 * peeled with constant indices and skip the write past the last step and the reads past
 * it (LLVM merged those constant reloads of steps 0 / 1 with the prologue's loads, which
 * kept the copies live across the loop: 72 spilled bytes at 128x256x64, 8192^3).
 * So the MMAs of step k run while step k+1's tiles are stored and step k+2's are loaded;
 * with W = 3 one group stays in flight across the barrier (the tensor cores never wait
 * for the issue of the next step). The proxy fence (fence.proxy.async.shared::cta) makes
 * the generic-proxy LDS stores visible to the async proxy wgmma reads through; the barrier
 * after it orders every thread's stores before any warpgroup's next MMAs and every
 * warpgroup's retirement before any thread's next overwrite. spec/c/test_accel.c
 * interprets the protocol (in-flight groups' LDS reads against every store, proxy fences,
 * barriers) and refuses broken variants.
 *
 * Loop-level ops (core/dialect_rock.c; LLVM lowering passes/lower_wgmma.h):
 *   rock.wgmma_desc(%lds, %i...) {lbo, sbo, offset, swizzle} -> i64: the matrix descriptor
 *     of the LDS element at %i plus offset bytes (kl_wgmma_desc_encode of its shared-window
 *     byte address; offset a multiple of 16, default 0; swizzle 32 / 64 / 128 bytes or
 *     absent: kl_wgmma_desc_swizzle_bits);
 *   rock.wgmma(%da_0 : i64, %db_0 : i64, ..., %c : vector<N/2 x f32>) {instr, trans_a,
 *     trans_b} -> vector: k >= 1 wgmma.mma_async of the warpgroup chained on the
 *     accumulator, D = A_k-1 x B_k-1 + (... + (A_0 x B_0 + C)) (K-major A and B; trans_a /
 *     trans_b 1: that operand MN-major, imm-trans, 16-bit types only);
 *   rock.wgmma_sync(%v...) {step, pending} -> %v...: wgmma.fence / commit_group /
 *     wait_group pending / fence.proxy.async.shared::cta, passing its operands through.
 * Memory / errors: as rock_accel.h (caller's err buffer; pattern failures through the
 * rewriter). */
#ifndef KL_ROCK_WGMMA_H
#define KL_ROCK_WGMMA_H
#include "passes/rock_accel.h"

/* rock-gemm-to-gridwise's fp8-promote default: K elements per promotion interval of the fp8
 * wgmma; 0 = one level. Off by default: measured on an H100 (bench/RESULTS.md, session 34),
 * 8192^3 e4m3fn with fp8-promote=128 ran 385 / 435 TFLOP/s (B [K,N] / [N,K]) against 617 / 758
 * one level and 390 / 474 for the exact f16 path (gemm-operands=auto): promotion as built
 * (wait_group 0 every interval, 128x128 tiles) costs what fp8 gains, so a graph that asks for
 * the fp8 wgmma gets its speed; fp8-promote=128 (as cuBLASLt without its fast-accumulation
 * flag) trades it for the two-level error bound. */
#define KL_FP8_PROMOTE_DEFAULT     0
#define KL_FP8_PROMOTE_DEFAULT_STR "0"
/* The sub-wave tile model of the wgmma heuristic (sm_90a, f16 / bf16): a grid of the rule's
 * tiles (below) of fewer than KL_WG_FEW_WAVES waves of the compute units loses most to wave
 * quantization (100 tiles of 128x128 on 132 SMs: a quarter idle; 196: 1.48 waves run as 2),
 * so such GEMMs (not those the rule gives 128x256 tiles: a wave or more of them, measured)
 * take the cheapest of a few candidate tiles (128 x 64 / 96 / 128 / 192, 64 x
 * 128; a wider N tile only where it cuts the N tiles; none wider than 192: 128x224 / 128x256
 * spilled with a register-staged operand) where it costs less than
 * KL_WG_SUBWAVE_GAIN of the rule's. kl_wgmma_tile_cost, cycles of the busiest SM (one block
 * per SM: the TMA loop's 3-4 stages fill the shared memory):
 *   rounds = ceil(tiles / SMs), steps = ceil(K / KB),
 *   cost = rounds x (steps x (max(mma, load) + KL_WG_STEP_CLK) + KL_WG_TILE_CLK),
 *   mma = 2 MB NB KB / KL_WG_FLOP_PER_CLK (the H100's dense f16 rate per SM),
 *   load = (MB + NB) KB eb / KL_WG_L2_BYTES_PER_CLK (the operand bytes per step at the L2 ->
 *   SM rate the 4096^3 f16 TMA loop sustained: 48 KiB per 64-step at 654 TFLOP/s, >= 32 B/clk).
 * The split-K choice (passes/gemm_split.h) costs each split with it. E.g. the 3x3 conv on
 * 7x7x512 at batch 64 (M 512, N 3136, K 4608): 128x96 tiles, 132 = one wave, no split
 * (modelled 71K cycles; 128x128 80K; split in two: 128x96, 264 tiles in 2 rounds, 73K + 15K
 * for the reduction); on 14x14x256 (M 256, N 12544, K 2304):
 * 128x192, 132 tiles (50K; 128x128: 196 tiles in 2 rounds, 82K). Measured on an H100
 * (bench/RESULTS.md, session 36, batch 64 with add + relu): the 7x7 layer 270.4 TFLOP/s (the
 * old 128x128 split-2 pick 206.8; cuDNN in a CUDA graph 387.6: 0.70x), the 14x14 layer 313.3
 * (128x128 246.8; cuDNN 354.9: 0.88x), as the model predicted (0.73x, >= 0.85x). */
#define KL_WG_FLOP_PER_CLK         4096.0
#define KL_WG_L2_BYTES_PER_CLK     32.0
#define KL_WG_STEP_CLK             64.0
#define KL_WG_TILE_CLK             2000.0
#define KL_WG_FEW_WAVES            2
#define KL_WG_SUBWAVE_GAIN         0.9
double kl_wgmma_tile_cost(const kl_target *t, int eb, int64_t g, int64_t m, int64_t n, int64_t k, int64_t MB,
                          int64_t NB, int64_t KB);
/* The wgmma descriptor for f16 / bf16 inputs and N (8..256, a multiple of 8), or NULL. */
const kl_accel_desc *kl_wgmma_desc(const char *in_type, int n);
/* By instruction name ("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"), or NULL. */
const kl_accel_desc *kl_wgmma_desc_by_name(const char *name);
/* "v3:..." -> config (fields as v2). */
bool kl_wgmma_config_parse(const char *s, kl_accel_config *out, char *err, size_t errlen);
char *kl_wgmma_config_print(const kl_accel_config *c, char *buf, size_t n);
/* Path selection for rock-gemm-to-gridwise: given = a "v3:" string or NULL (the
 * heuristic, only when the caller asked for wgmma). Returns 1 (*c, *d set), 0 (given is
 * NULL and the target / types have no wgmma: keep the other paths), -1 (error in err). */
int kl_wgmma_select(const kl_target *t, const kl_type *in_a, const kl_type *in_b, const char *given, int64_t g,
                    int64_t m, int64_t n, int64_t k, kl_accel_config *c, const kl_accel_desc **d, char *err,
                    size_t errlen);
/* The heuristic's large tiles for a GEMM whose operand is staged wider than its type (an
 * input-fusion prologue reading a wider type, e.g. f32 -> f16: the wide loads stay in
 * registers until the LDS stores): 128x256x64 becomes 128x256x32 (ptxas sm_90a, the seed
 * conv with its input converted from f32: 412 spilled bytes at 64, none at 32). Returns
 * whether c changed. */
bool kl_wgmma_wide_staging(kl_accel_config *c);
/* The heuristic's tiles for a GEMM whose narrowest operand loads at most `bytes` per access
 * (kl_gemm_load_bytes, passes/gemm_shape.h; odd strides: each load its own address and
 * bounds check, staged in registers): f16 / bf16 kPerBlock 16 for 2-byte loads, 32 below
 * 16 bytes (ptxas sm_90a, 64x128 tiles: 16x129x129 with B [N, K] 1596 spilled bytes at 64,
 * 492 at 32, none at 16; 1000x1000x999 592 at 64; the conv 8x3x224x224 by 64x3x7x7, filter
 * K = 147: 2168 at 64, none at 16; 1000x1000x1002, 4-byte loads: 16 at 64, none at 32).
 * Returns whether c changed. */
bool kl_wgmma_narrow_loads(kl_accel_config *c, int64_t bytes);
/* The 64-bit matrix descriptor (no swizzle): bits 0-13 (addr & 0x3ffff) >> 4, 16-29
 * lbo >> 4, 32-45 sbo >> 4, base offset 0, bits 62-63 swizzle mode 0. */
uint64_t kl_wgmma_desc_encode(uint32_t byte_addr, int64_t lbo_bytes, int64_t sbo_bytes);
/* The descriptor's swizzle-mode bits 62-63 for a swizzle of `bytes` (PTX ISA, matrix
 * descriptor: 0 none, 1 128-byte, 2 64-byte, 3 32-byte swizzle); 0 for any other value. */
uint64_t kl_wgmma_desc_swizzle_bits(int64_t bytes);
/* The S-byte swizzle (S = 32, 64, 128; the hardware's, on shared-window byte addresses):
 * the 16-byte chunk bits 4.. of `addr` XORed with its bits 7.. (log2(S / 16) bits each);
 * a tile laid out from an 8S-aligned address has chunk c of row r (rows S bytes apart) at
 * chunk c ^ (r % 8) (128), c ^ (r / 2 % 4) (64), c ^ (r / 4 % 2) (32). */
static inline int64_t kl_swizzle_addr(int64_t addr, int64_t S) { return addr ^ (((addr >> 7) & (S / 16 - 1)) << 4); }
/* rock-lower-loops' pattern for rock.wgmma_desc on a rock.transform chain (an LDS buffer
 * that a later pass turned into a view): re-addressed on the underlying buffer
 * (passes/lower_loops_wgmma.c). */
bool kl__ll_lower_wgmma_desc(const kl_pattern *pat, kl_op *op, kl_rewriter *rw);
/* At the insertion point: rock.wgmma_sync {step = "wait", pending} with the accumulators of
 * `acc` (a private f32 buffer of instr's C fragments, instr a wgmma name) passing through
 * it, stored back (nothing reads them before the MMAs completed; pending 0 at the end of
 * a K loop whose blockwise GEMMs defer their wait). */
void kl_wgmma_emit_acc_wait(kl_rewriter *rw, kl_loc loc, kl_value *acc, const char *instr, int64_t pending);
/* Two-level accumulation of the fp8 wgmma ("promotion"; rock-gemm-to-gridwise's option
 * fp8-promote, passes/rock_wgmma.h's header): the GEMM's K loop issues the wgmma into a
 * temporary accumulator `tmp` (a private f32 buffer of instr's C fragments) and, every
 * interval of fp8-promote K elements and after the loop, emits this at the insertion point:
 * wait_group 0 with `tmp` passing through (kl_wgmma_emit_acc_wait), then
 * main[i] = main[i] + tmp[i] (f32 adds, round to nearest) and tmp[i] = 0. */
void kl_wgmma_emit_promote(kl_rewriter *rw, kl_loc loc, kl_value *main, kl_value *tmp, const char *instr);
/* Whether instr (a wgmma name) is an fp8 one (k32 .e4m3 / .e5m2). */
bool kl_wgmma_instr_is_fp8(const char *instr);
/* The heuristic's tiles for the fp8 wgmma with promotion every P K elements (P > 0, a
 * multiple of 32): two accumulators per thread must fit, so nPerWave at most 128 (the
 * 128x256 tiles of two m64n256 warpgroups become 128x128 of two m64n128: 64 + 64
 * accumulator registers) and kPerBlock at most 64 (ptxas sm_90a, 8192^3: 128x128x128 spilled
 * 240 bytes at 255 registers, 128x128x64 takes 186 and none), 32 where an operand's views
 * have bounds checks (`bounded`: a padded conv's implicit GEMM, whose index arithmetic
 * spilled at 64), halved until it divides P. Returns whether
 * c / *d changed; in: the input type name (f8e4m3fn / f8e5m2). */
bool kl_wgmma_promote_tiles(kl_accel_config *c, const kl_accel_desc **d, const char *in, int64_t P, bool bounded);
/* The lowering above (op: an accel rock.blockwise_gemm whose accel_instr is a wgmma). */
bool kl_wgmma_lower_blockwise(kl_op *op, kl_rewriter *rw, const char *target);
#endif
