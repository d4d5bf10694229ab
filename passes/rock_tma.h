/* rock_tma.h — TMA (cp.async.bulk.tensor) loads of wgmma GEMM operand tiles completing on
 * mbarriers (sm_90a), on by default: rock-gridwise-to-blockwise{tma=1} (or 3..6: that many LDS
 * stages; tma=0: the register loop); the tiles'
 * layout: option tma-swizzle (below).
 *
 * Which operands: an operand of a wgmma rock.gridwise_gemm (a [G, K, D] view, D = M or N)
 * takes TMA when it is a plain tiled box of a kernel argument (kl_tma_operand): no
 * prologue, no intermediate, f16 / bf16 (any 16-bit type), and the view composed down to
 * the argument's memory is affine on its valid region, addr(g, k, d) = offset + g*sg + k +
 * d*sd elements (K contiguous: "K-major"), the valid region a box [0, G) x [0, Ek) x [0, Ed)
 * (padding past the end along K and D is TMA's out-of-bounds zero fill), with sd * 2 and
 * sg * 2 multiples of 16 bytes, offset * 2 too, D-tile <= 256. Checked on the view: every
 * point along each dim with the others at 0, and 512 pseudo-random points of the box
 * (a view that is affine there is taken as affine; the interpreter and the GPU suite check
 * the numbers). An MN-major operand (D contiguous: addr = offset + g*sg + k*sk + d, e.g. B
 * as [K, N] row-major; sk * 2 a multiple of 16) takes TMA in the swizzled MN-major layout
 * (below) where a swizzle's panel (S / 2 elements of D, S = 128 / 64 / 32 up to the
 * option) divides the D tile, the warpgroup's part and the instruction's (64 for A, N for
 * B) and KB <= 256; else (tma-swizzle=none among them) it keeps the register path. With
 * option tma-im2col=1 an operand that is no box but a conv's im2col view of an NHWC argument
 * loads through TMA im2col mode (passes/rock_tma_im2col.h: kl_tma_map.im2col, the same tiles).
 * The choice is recorded on the kernel func as tma = "A,B" | "A" | "B" | "none (why)", an
 * im2col operand as "B(im2col)" (p:kernels()).
 *
 * The tensor map (kl_tma_map): rank 3 {K, D, G} (rank 2 when G = 1), dims Ek, Ed, G
 * elements, strides sd*eb, sg*eb bytes (K in runs, kdims > 1: {P0, P1(, P2), D(, G)}, rank
 * up to 5, see kl_tma_operand), and
 *  - swizzled (tma-swizzle=128, the default: S = the widest of 128 / 64 / 32 bytes up to
 *    the option that divides KB * eb; 64 / 32 cap it): box {S/eb, DB(, 1)} with
 *    CU_TENSOR_MAP_SWIZZLE_<S>B, one box per panel of S/eb K elements of the LDS tile
 *    [KB/(S/eb), DB, S/16, 16/eb] (rock-gridwise-to-blockwise: lds_tile_swz), whose chunk
 *    c of row d sits at chunk c ^ (d % 8) (128), c ^ (d/2 % 4) (64), c ^ (d/4 % 2) (32):
 *    the hardware's XOR of address bits 4.. with bits 7.. (kl_swizzle_addr) when each
 *    panel starts at a multiple of 8S bytes (the K loop's tiles at 8S in its joined LDS
 *    buffer, the buffer at kl_tma_lds_align); the wgmma descriptors read it with the
 *    swizzle mode (passes/rock_wgmma.h). KB*eb/S boxes per operand and K step (one at
 *    KB 64 f16).
 *  - tma-swizzle=none (or a K tile of 8 f16): box {8, DB(, 1)}: one box is one [DB, 8] K
 *    slab of the LDS tile [KB/8, DB, 8] (no row skew: TMA writes the box dense, 16 bytes
 *    per row), exactly the no-swizzle core-matrix layout the descriptors read; KB/8 boxes
 *    per operand and K step.
 *  - MN-major (kl_tma_map.mn): rank 3 {D, K, G}, strides sk*eb, sg*eb, box {S/eb, KB(, 1)}
 *    with CU_TENSOR_MAP_SWIZZLE_<S>B, one box per panel of S/eb D elements of the LDS tile
 *    [DB/(S/eb), KB, S/16, 16/eb] (lds_tile_swz_mn: row k of a panel holds its D elements
 *    at K index k, chunk c at c ^ (k % 8) for 128), read by the wgmma with imm-trans
 *    (LBO the panel stride, SBO the 8-row K group stride: passes/rock_wgmma.h).
 * The choice is the kernel func's tma_swizzle (bytes, the widest of the two operands', 0
 * none; p:kernels()).
 *
 * The K loop (rock-gridwise-to-blockwise, tma_emit; W = 3..6 LDS stages, each stage's
 * tiles completing on mbarrier s of an LDS buffer<W x i64>; thread 0 issues):
 *   tid 0: mbarrier.init(s, count 1) for s < W; barrier
 *   tid 0: issue(j) for j < min(W-1, nk)   issue(j) = arrive.expect_tx(bar j%W, bytes of
 *                                           the TMA tiles) + the boxes of step j into stage j%W
 *   [register operands: read(0); write(stage 0); proxy fence; barrier; read(1)]
 *   step k (stage s = k mod W, parity (k / W) mod 2):
 *     mbarrier wait(s, parity)            (the stage's TMA bytes have landed)
 *     blockwise_gemm(stage s)             [fence, MMAs, commit: group k]
 *     [register operands: write(stage (k+1) mod W); read(k+2 mod nk)]
 *     wgmma wait_group 1                  (group k-1 retired: stage (k-1) mod W is free)
 *     [register operands: proxy fence]
 *     barrier                             (... in every warpgroup)
 *     tid 0, if k+W-1 < nk: issue(k+W-1)  (into stage (k+W-1) mod W = (k-1) mod W)
 *   after the loop: wait_group 0 (accumulators through), barrier, tid 0: mbarrier.inval
 * So no registers stage the TMA operands and their loads run W-1 steps ahead; a stage is
 * overwritten only after the wait that retired its readers and a barrier after it (the
 * rule of the register loop).
 *
 * Warp specialization (ws_emit; option ws=1; ws=auto and the default: KL_WS_AUTO / KL_WS_DEFAULT_STR, off;
 * both operands through TMA only, else the loop above and ws = "off (why)" on the kernel
 * func; "on" when taken). NC = the tiles' block size (the consumer threads); the block
 * becomes NC + 128: one producer warpgroup placed last, so threads 0..NC-1 keep the
 * accumulator and epilogue layouts. LDS buffer<2W x i64>: full[s] = s, empty[s] = W + s.
 *   tid 0: init full[s] (count 1), empty[s] (count NC) for s < W; barrier
 *   scf.if (tid < NC) {ws_consumers = NC}:
 *     consumers: setmaxnreg.inc kl_ws_consumer_regs(NC)
 *       step k (s = k mod W): wait(full[s], (k / W) mod 2); blockwise_gemm(stage s)
 *         [fence, MMAs, commit: group k]; wgmma wait_group 1 (group k-1 retired);
 *         k > 0: arrive(empty[(k-1) mod W]) (every consumer thread, after its own wait)
 *       after the loop: wait_group 0; arrive(empty[(nk-1) mod W]); the epilogue (its
 *       barriers: bar.sync 1, NC, kl_ws_consumer_threads)
 *   else (the producer warpgroup): setmaxnreg.dec KL_WS_PRODUCER_REGS
 *     tid NC only, step j (s = j mod W): wait(empty[s], (j / W + 1) mod 2) (the first lap
 *       passes: phase 0 is open, parity 1 "completed"); arrive.expect_tx(full[s], bytes);
 *       the boxes of step j into stage s
 *   barrier (the join: every load landed, every MMA retired); tid 0: inval all 2W
 * No block barrier inside the region: a stage is overwritten only after every consumer
 * thread's wait_group retired its readers and arrived, and the producer saw that phase.
 *
 * Persistent tiles (option persistent=1; persistent=auto and the default: KL_PERSIST_AUTO /
 * KL_PERSIST_DEFAULT_STR, off until measured; the TMA loop only, with or without ws, on NVIDIA,
 * more than one tile; else persistent = "off (why)" on the kernel func, "on" when taken, with
 * grid_persistent = 1 and persistent_tiles = T = G x nM x nN = grid_size). Each workgroup
 * loops over tiles t = h0, h0 + ng, ... < T (h0 = rock.workgroup_id, ng = rock.workgroup_count:
 * correct for any grid >= 1), tile t's block id the raster order's (kl_gemm_raster_bid of t:
 * the workgroup order of today's one-tile kernels), i = (t - h0) / ng its count of tiles
 * before. Stages restart at 0 per tile (the LDS stages are static tiles), the mbarrier phases
 * run on: stage s completes u_s = nk / W + (s < nk mod W) phases per tile, so step k of the
 * i-th tile waits for parity (i u_s + k / W) mod 2 (the producer's empty waits one more).
 *   TMA loop: init; barrier; tid 0: issue(j) of tile h0 for j < W-1 (where h0 < T)
 *     for t: fill acc 0; [register operands' prologue]; the K steps above; wait_group 0;
 *       barrier (every stage free); tid 0: issue(j) of tile t + ng for j < W-1 (where t + ng < T);
 *       the epilogue (tile t): its loads overlap the next tile's boxes
 *     tid 0: inval (after the loop: every wait passed the last tile's barrier)
 *   ws: both roles loop over the tiles; the producer fills tile i+1's stages as the consumers
 *     release tile i's (so during tile i's epilogue); the consumers: fill, K steps, wait_group
 *     0, release the last stage, the tile's block id (computed there: not live across the K
 *     loop), the epilogue behind the named barriers; the join barrier and inval after the loops.
 * The epilogue's LDS must not alias the stages (the next tile's boxes land during it):
 * rock-output-swizzle gives a persistent kernel a buffer of its own (never a K-loop tile) within
 * the whole LDS, and the stages leave room for it: W = the most of 3..4 (tma=N: N) stages that
 * fit the LDS less kl_persist_reserve (C's MB x NB tile, padded rows, alignment), else as without
 * (the swizzle is then refused for room and the epilogue writes from the accumulators). sm_90a,
 * 128x256x64 f16 tiles: 3 stages of 48 KiB + the 64 KiB f16 swizzle tile, 215 KiB of the 227.
 * The tile loop carries no_hoist (lower-to-llvm: llvm.licm.disable; the epilogue's invariant
 * addresses hoisted out of it stayed live across the K loop). The launch: min(T, SMs x resident
 * workgroups per SM) workgroups (driver/plan_exec.h: kl_plan_launch_grid, the driver's
 * occupancy of the kernel). spec/c/test_accel.c (test_persist) interprets them on fewer
 * workgroups than tiles.
 *
 * Thread-block clusters (option cluster = 1 | 2 | 4 | 2x1 | 4x1 | 1x2 | 1x4 | auto; cluster=auto
 * and the default: KL_CLUSTER_AUTO / KL_CLUSTER_DEFAULT_STR, 1 = none, until measured; the TMA
 * loop, with or without ws=1, on NVIDIA, not with persistent=1 (the tile loop would have to keep
 * a cluster's CTAs on paired tiles), more than one tile; else cluster = "off (why)" on the kernel
 * func, else the shape, "2x1" etc., with cluster_size = C). C
 * consecutive workgroups h form a cluster (rank r = h % C, .reqnctapercluster C, 1, 1: the
 * plain launch, codegen/ptx_cluster.h) whose tiles share one operand tile: C x 1 = C
 * consecutive m-tiles of one n-tile share B's, 1 x C = C n-tiles of one m-tile share A's
 * (kl_gemm_cluster_bid, passes/gemm_raster.h: the raster order walks cluster tiles; the grid
 * is padded to a multiple of C, the padding CTAs computing the row's last tile (in-range
 * boxes) and skipping the epilogue: an scf.if on the tile's validity holds it). cluster=2 / 4
 * pick the shape whose grid needs no padding, else the one sharing the larger tile (B where
 * NB >= MB: 128x256 tiles share their 64 KiB B tile). The shared operand's tile splits into C
 * multicast slices: K-major, its box {S/eb, DB/C} (DB/C a multiple of 8 rows: each slice starts
 * at a multiple of the 8S swizzle span), slice r at D rows r DB/C; MN-major, C consecutive
 * panels per op. rock.tma_load {multicast = C, multicast_dim}: rank r issues slice r with
 * cp.async.bulk.tensor ... .multicast::cluster (ctaMask (1 << C) - 1) into every CTA's stage at
 * the same offset, completing its bytes on each CTA's own full mbarrier; each CTA loads its
 * other operand as before, and the issuing thread still expects all of the stage's bytes on its
 * own mbarrier (its own boxes + the peers' slices; a peer's complete_tx may come before the local
 * expect_tx: the phase cannot complete before that arrival).
 * Slot reuse (both operands through TMA; tpipe.cmb): a CTA overwrites stage s in its peers, so
 * it may refill s only after every CTA of the cluster retired its readers of s. Per stage an
 * "empty" mbarrier in every CTA (the LDS buffer<2W x i64>: full[s] = s, empty[s] = W + s), its
 * count the consumer warpgroups x C; after the wait_group that retired its reads of stage s,
 * lanes 0 .. C-1 of each consumer warpgroup arrive on empty[s] of the CTA of rank lane
 * (rock.mbarrier arrive_remote: mapa.shared::cluster + mbarrier.arrive.shared::cluster, its own
 * CTA's included), and the issuing thread waits on its own empty[s] (parity (j / W + 1) mod 2
 * for fill j: the first lap passes) before the expect_tx and boxes of fill j:
 *   TMA loop, step k: wait(full[s]); MMAs (group k); wait_group 1; k > 0: release((k-1) mod W)
 *     to every CTA; tid 0, if k+W-1 < nk: wait(empty[(k-1) mod W], ((k+W-1)/W + 1) mod 2),
 *     issue(k+W-1). No barrier in the K loop (the block's barrier goes too: the empty wait
 *     covers this CTA's warpgroups). Unclustered loops keep the block barrier (unchanged: its
 *     SASS is one BAR.SYNC per step, no fence, and the form was measured at 613 - 655 TFLOP/s).
 *   ws: the producer's empty waits as without clusters, the consumers' release the remote
 *     arrive of one lane per warpgroup and CTA in place of every consumer thread's local arrive;
 *     a padding CTA's consumers skip the epilogue (scf.if on the tile's validity).
 * The init's barrier is a cluster barrier (fence.mbarrier_init.release.cluster after each init:
 * no peer's TMA or arrive reaches an mbarrier before it is initialized), and so is the one after
 * the loop / the ws join (no CTA leaves, reuses its stages for the epilogue or invalidates its
 * mbarriers while a peer may still multicast into it or arrive on them). The loop with a
 * register operand keeps the cluster barrier per K step (its register writes need the block's
 * barrier anyway): rock.barrier {scope = "cluster"}. Elsewhere (the interpreter without
 * clusters, any target without them) the multicast load takes all C slices itself, the remote
 * arrives all land on the CTA's own empty[s] (C per warpgroup: the same count) and the cluster
 * barrier is the block's: the same IR computes the same tiles. The TMA loop is built
 * for sm_90a only, so host and AMD kernels never take it (cluster = "off (the TMA loop is not
 * taken)"). spec/c/test_accel.c (test_cluster) runs the C CTAs of each cluster together (ws:
 * each CTA's two roles as coroutines inside its turn): multicast writes land in every CTA's LDS
 * and complete bytes on each one's mbarriers, remote arrives on the peer's; a TMA write into a
 * stage some CTA has not released (a cluster barrier after its wait_group, or its remote arrive
 * on the issuing CTA's empty mbarrier whose phase the issuing thread waited for), or into a CTA
 * before its mbarrier init, fails.
 * Why the per-K-step cluster barrier lost 26 - 49% (H100, session 36: 4096^3 f16 635.6 plain,
 * @c2 472.5, @c4 426.2, @c1x2 388.1 TFLOP/s; 8192^3 729.1 vs 438.0; seed conv 570.5 vs 413.1 /
 * 344.1; 1500x3840x1280 438.4 vs 224.5). ptxas sm_90a's SASS of that loop (barrier.cluster
 * .arrive.release + wait.acquire) per K step: MEMBAR.ALL.CTA, MEMBAR.ALL.GPU, ERRBAR,
 * CGAERRBAR, UCGABAR_ARV, UCGABAR_WAIT, CCTL.IVALL, in every thread, between group k's HGMMAs
 * and thread 0's refill (and so group k+1's issue): a GPU-scope memory fence (its latency an L2
 * round trip and the drain of the thread's outstanding memory operations) plus the cluster-wide
 * rendezvous plus an L1 invalidate each step, while only one wgmma group is in flight (wait_group
 * 1): about the K step's MMA time (~0.5 us at 128x256x64), so the tensor cores idle for part of
 * each step. The rest does not explain it: the grid needs no padding at 4096^3 / 8192^3 (32 x 16
 * and 64 x 32 tiles of 128x256, C | 32), the raster order over cluster tiles keeps the plain
 * order's locality (a cluster tile is C adjacent tiles), occupancy is one CTA per SM either way
 * (192 KiB of stages), and cluster scheduling loses at most the SMs of a GPC that do not fill a
 * cluster (C = 2: none; C = 4: a few of 132). The empty-mbarrier form has none of those fences
 * in the loop: a remote arrive is one SYNCS.ARRIVE.TRANS64.RED (CUTLASS's form; the
 * .release.cluster qualifier on it compiled to the same MEMBAR.ALL.GPU sequence, so it is left
 * out: the released reads are wgmma's async-proxy reads retired by wait_group, no generic writes
 * to publish), and only the issuing thread's warp waits, on a phase its peers complete a step
 * before it needs them.
 * Prediction (H100, against the TMA loop / ws=1 of the same run; bench rows @c2 / @c4 / @c1x2 /
 * @c2ws / @c1x2ws): a 2 x 1 cluster halves the L2 -> SM traffic of B (48 -> 32 KiB per CTA and
 * K step at 128x256x64 f16, 4 x 1: 24 KiB); the loop is tensor-core bound, so 4096^3 / 8192^3
 * f16 / bf16 @c2 0.97 - 1.05x, @c4 / @c1x2 0.95 - 1.03x, 1500x3840x1280 and the seed conv 0.95 -
 * 1.03x, @c2ws 0.98 - 1.06x of ws=1 (cuBLAS's 4096^3 kernel: ws, cluster 1x2, 768 TFLOP/s).
 *
 * Lowering: PTX (passes/lower_tma.c): mbarrier.init / arrive.expect_tx / try_wait.parity
 * loop / arrive / inval, cp.async.bulk.tensor.{2,3}d.shared::cluster.global.mbarrier::complete_tx::bytes
 * (2..5d: K in runs) on a tensor-map kernel parameter; elsewhere (host, AMDGPU: the same IR) plain copies and
 * no-ops. spec/c/test_accel.c interprets the ops (mbarrier phases and transaction bytes;
 * an MMA reading TMA-written LDS before its warpgroup waited for that phase fails; the
 * warp-specialized roles as coroutines, a TMA overwrite before the readers' release fails).
 * setmaxnreg: rock.setmaxnreg, lowered in passes/lower_tma.c. */
#ifndef KL_ROCK_TMA_H
#define KL_ROCK_TMA_H
#include "core/ir.h"
#include "core/rewrite.h"
#include "core/view_emit.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The option's default: 1 (on: measured on an H100, 2026-12-06, 4096^3 f16 613 TFLOP/s against
 * 455 for the register loop). "0" makes the register loop the default again. */
#define KL_TMA_DEFAULT_STR "1"

/* Warp specialization (rock-gridwise-to-blockwise{ws=0|1|auto}, see the header comment):
 * the option's default and what `auto` means: 0, off (measured on an H100, 2026-12-06, against
 * the TMA loop in one run: seed conv 512 vs 526 TFLOP/s, 8192^3 722 vs 716, 1500x3840x1280
 * 429 vs 437, bf16 4096^3 656 vs 699: no gain; bench/RESULTS.md session 33); the producer's
 * registers after setmaxnreg.dec. */
#define KL_WS_DEFAULT_STR      "0"
#define KL_WS_AUTO             0
#define KL_WS_PRODUCER_REGS    40
/* Persistent tiles (rock-gridwise-to-blockwise{persistent=0|1|auto}, see the header comment):
 * the option's default and what `auto` means: 0, off. Measured on an H100 against the TMA loop
 * (bench/RESULTS.md, session 34; medians of 4 trials, noise +-4%): seed conv 571 vs 565.5,
 * 4096^3 654.5 vs 634 (within noise), 8192^3 670 vs 710 (3 stages instead of 4: the swizzle's
 * own LDS), 1500x3840x1280 437 vs 431 (one trial): no gain worth the default. */
#define KL_PERSIST_DEFAULT_STR "0"
#define KL_PERSIST_AUTO        0
/* Thread-block clusters (rock-gridwise-to-blockwise{cluster=1|2|4|2x1|4x1|1x2|1x4|auto}, see
 * the header comment): the option's default and what `auto` means: 1, no cluster, until
 * measured on the GPU (the prediction is in the header comment). */
#define KL_CLUSTER_DEFAULT_STR "1"
#define KL_CLUSTER_AUTO        1
/* The LDS bytes a persistent TMA kernel keeps free of its K loop's stages for the output
 * swizzle's own buffer (rock-output-swizzle: the MB x NB tile of C's elem_bytes, each of its
 * up to max(MB, NB) rows padded by 16 bytes) and the alignment of the kernel's LDS buffers
 * (up to 1024 bytes each, kl_tma_lds_align). */
int64_t kl_persist_reserve(int64_t MB, int64_t NB, int64_t elem_bytes);
/* The registers per thread at launch of a warp-specialized kernel with nc consumer threads
 * (a multiple of 128) and one producer warpgroup: the most its .maxntid allows, 64K /
 * (nc + 128), a multiple of 8, at most 248; the kernel func's max_regs, which lower-to-llvm
 * emits as .maxnreg: ptxas then allocates exactly that many (without it a kernel needing
 * fewer got fewer, ptxas sm_90a: 59 for 64x64 tiles, and the consumers' setmaxnreg.inc
 * would wait for registers the block never had). */
int64_t kl_ws_launch_regs(int64_t nc);
/* The consumers' registers after setmaxnreg.inc: the block's launch registers less the
 * producer's KL_WS_PRODUCER_REGS, over nc, a multiple of 8, at most 256 (168 at launch and
 * 232 for nc = 256; 248 and 256 for nc = 128; 96 and 104 for nc = 512). */
int64_t kl_ws_consumer_regs(int64_t nc);
/* The consumer threads of the warp-specialized region op sits in (region 0 of an scf.if
 * with attribute ws_consumers; the barriers there are named barriers over those threads,
 * bar.sync 1, nc), else 0. */
int64_t kl_ws_consumer_threads(const kl_op *op);

typedef struct kl_tma_map {
  kl_value *buf;      /* the kernel argument */
  int rank;           /* 2 .. 5: kdims K dims (K-major; MN-major: 1), D, G when > 1 */
  int64_t dims[5];    /* elements, innermost (K) first */
  int64_t strides[4]; /* bytes of dims 1 .. rank-1 */
  int64_t box[5];     /* 8 (16 bytes) or the swizzled panel, the D tile, 1 ... */
  int64_t offset;     /* elements from the argument's base */
  int64_t swizzle;    /* bytes (128, 64, 32; box[0] * 2 of them) or 0 (box[0] 8) */
  bool mn;            /* MN-major: dims {D, K(, G)}, box {S / eb, KB(, 1)} */
  int kdims;          /* K-major: K's dims (1..3), dims[0 .. kdims-1]: K mixed radix (below); 0 = 1 */
  /* im2col mode (kl_tma_im2col_operand, passes/rock_tma_im2col.h): dims {C, W, H, N}, box
   * {channels per pixel, pixels per column, 1, 1}; the geometry of the coordinates */
  bool im2col;
  int64_t lo[2], up[2], es[2];            /* the map's bounding-box corners {W, H} and traversal strides {W, H} */
  int64_t C, S, Wo, HoWo, dil[2], pad[2]; /* channels per slice, taps per filter row, output width, pixels per image */
} kl_tma_map;

/* The first checks of kl_tma_operand and kl_tma_im2col_operand (passes/rock_tma_im2col.h):
 * v, a [G, K, D] view of 16-bit elements (G >= 1) read directly from a kernel argument (no
 * prologue), composed down to that argument's memory: the composed view (kl_view_free it),
 * *arg the argument, *raw the buffer under the view; else NULL and why says which check
 * failed. */
kl_view *kl_tma_operand_view(kl_value *v, bool prologue, kl_value **arg, kl_value **raw, char *why, size_t n);
/* Whether operand v ([G, K, D], a view of a kernel argument; prologue: whether a fused
 * element-wise op writes it) loads through TMA with D tiles of DB: true + *m, else false +
 * the reason in why.
 * K piecewise affine (kdims > 1, K-major only): a view whose K is contiguous in runs of P0
 * elements, the runs at stride s1 in groups of P1 at stride s2 (a mixed radix: addr(k) =
 * k % P0 + (k / P0 % P1) * s1 + k / (P0 P1) * s2; e.g. split-k-workspace's channel slices of
 * a KYXC filter: runs of the slice's Cc channels, one per filter tap at stride C) takes the
 * map dims {P0, P1(, P2), D(, G)}: one box {panel, 1(, 1), DB(, 1)} per panel, whose K
 * coordinate k0 is split by kl_tma_coords; the caller takes it only where the panel (box[0])
 * divides P0 (a box never crosses a run: kl_tma_box_fits). K must be whole runs (Ek a
 * multiple of P0, P0 P1 with 3 dims) and the rank at most 5. The check: every K point at
 * g = d = 0, every point along G and D, and 512 pseudo-random points of the box. */
bool kl_tma_operand(kl_value *v, bool prologue, int64_t DB, kl_tma_map *m, char *why, size_t n);
/* The mixed radix of K's relative addresses a[0 .. e-1] (a[0] = 0) in at most maxd dims:
 * kd with runs P[0 .. kd-1] (the last covering e) and strides s[0 .. kd-1] such that a[k] =
 * sum_i digit_i(k) s[i] for every k < e (digit_i = k / (P0 .. P(i-1)) % Pi, the last one
 * unbounded), more than one dim only where e is whole runs; 0 when no such radix exists. */
int kl_tma_fit_radix(const int64_t *a, int64_t e, int maxd, int64_t *P, int64_t *s);
/* Whether each box of m (box[0] elements of K from a multiple of box[0]) stays inside one run
 * of its K (always for one K dim). */
bool kl_tma_box_fits(const kl_tma_map *m);
/* The coordinates of the box at (g, k, d) of the operand ([G, K, D]; k a multiple of box[0]
 * for K-major maps, of KB for MN-major), innermost first, as map m's dims: K's mixed radix
 * split (remainder / quotient of the runs), D, G where rank has it. Returns their number. */
int kl_tma_coords(kl_emitter *e, const kl_tma_map *m, kl_value *g, kl_value *k, kl_value *d, kl_value **out);
/* The LDS stages of the TMA K loop: opt (1: auto, 3..6 asked), capped by the target's LDS
 * (lds_bytes) for stage_bytes per stage; 0 when fewer than 3 fit. */
int kl_tma_stages(int64_t opt, int64_t lds_bytes, int64_t stage_bytes);
/* rock-lower-loops' pattern for rock.tma_load whose LDS destination became a rock.transform
 * chain (join_lds, rock-output-swizzle): re-addressed on the underlying buffer
 * (passes/lower_loops_wgmma.c). */
/* The distinct tensor maps of a kernel func (rock.tma_load ops with the same source
 * argument, dims, strides, box and offset share one), in op order: the order of the
 * kernel's tensor-map parameters (after its buffers). Returns their number (the first
 * `max` ops stored in out), or -1 when a source is not a kernel argument. */
int kl_tma_kernel_maps(kl_op *kernel, kl_op **out, int max);
bool kl_tma_same_map(const kl_op *a, const kl_op *b);
/* The alignment (bytes) of a kernel's LDS allocations in the shared window: 0 when the kernel
 * has no rock.tma_load and no swizzled rock.wgmma_desc, else the largest its TMA
 * destinations and descriptors need: 128 (TMA, no swizzle), 256 / 512 / 1024 (swizzle 32 /
 * 64 / 128: the span of the swizzle pattern, whose XOR is taken from the absolute shared
 * address). */
int64_t kl_tma_lds_align(kl_op *kernel);
/* The LDS bytes of a kernel's allocations (rock.alloc in LDS space) placed one after the
 * other in op order, each at a multiple of kl_tma_lds_align where that is > 0 (what
 * passes/lower_to_llvm.c does with them in dynamic shared memory), else their plain sum;
 * INT64_MAX on overflow. The launch's dynamic shared memory (driver/plan.c:
 * kl_kernel_lds_bytes): a TMA kernel whose alignment padding was left out of that faulted
 * on the H100 (its mbarriers past the end: CUDA_ERROR_ILLEGAL_ADDRESS). */
int64_t kl_tma_lds_bytes(kl_op *kernel);
bool kl__ll_lower_tma_dst(const kl_pattern *pat, kl_op *op, kl_rewriter *rw);
#endif
