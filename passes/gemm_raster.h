/* gemm_raster.h — the order in which a tiled GEMM's workgroups walk its output tiles
 * (rock-gridwise-to-blockwise's option raster-group-m; issue: "raster order chosen for
 * L2 reuse").
 *
 * Contract. The copy and output views of rock-gridwise-to-blockwise decompose a block id
 * in row order, bid = (g * nM + m) * nN + n (g the batch including split-K slices, m < nM
 * the m-tile, n < nN the n-tile). kl_gemm_raster_bid maps the hardware workgroup id h to
 * that bid in the grouped order: the tiles of one batch are cut into groups of GM
 * consecutive m-tiles (the last group has the nM mod GM left over, when nonzero), and
 * consecutive h walk a group column by column: within a group of width w starting at m0,
 * m = m0 + r mod w and n = r / w for the group's r-th workgroup. So GM x nN consecutive
 * workgroups read GM row-blocks of A and every column-block of B, and a wave of W
 * resident workgroups reads about GM row-blocks and W / GM column-blocks instead of
 * W / nN row-blocks and all nN column-blocks. It is a bijection of [0, G nM nN) for any
 * GM >= 1; GM <= 1 (row order), nN == 1 or nM == 1 (the same order either way) return h
 * itself; GM > nM is taken as nM (one group: column order). The index arithmetic is
 * emitted through the rewriter at its insertion point with constant divisors only (the
 * last group's width selected with arith.select), a handful of integer operations per
 * workgroup. kl_gemm_raster_ref is the same mapping in plain C (tests).
 * KL_RASTER_GROUP_M_DEFAULT is the option's default: -1, auto (kl_gemm_raster_auto).
 *
 * Auto (kl_gemm_raster_auto): the order whose wave of resident workgroups touches the
 * fewest operand bytes. A wave is W consecutive workgroups (W = the target's CUs / SMs: the
 * big tiles run one workgroup per SM); it reads the row-blocks of A (MB x K elements each)
 * and the column-blocks of B (NB x K) of its tiles, and whatever one wave brings into L2 is
 * what the next waves miss once it is larger than the L2. Row order: ceil(W / nN) row-blocks
 * and min(W, nN) column-blocks; group GM: GM row-blocks (more where the wave spans several
 * groups) and ceil(W / GM) column-blocks (at most nN). Auto takes the GM in [2, nM] with the
 * smallest footprint where that is at most 3/4 of row order's and row order's is larger than
 * half the L2 (l2_bytes); else row order (0). Targets without an L2 figure (l2_bytes 0: AMD,
 * whose workgroups are dealt round-robin over the XCDs' L2s, and the host) keep row order.
 * Example (the seed conv at batch 512 on an H100: M 512, N 25088, K 2048 f16, 128x256 tiles,
 * nM 4, nN 98, W 132): row order reads 2 row-blocks (0.5 MiB each) and 98 column-blocks
 * (1 MiB each) per wave, 99 MiB, twice the 50 MiB L2, and every column-block again for each
 * of the 4 m-tiles; GM 4 (column order) 2 + 33 MiB, each column-block once. */
#ifndef KL_GEMM_RASTER_H
#define KL_GEMM_RASTER_H
#include "core/rewrite.h"
#include <stdbool.h>
#include <stdint.h>

#define KL_RASTER_GROUP_M_DEFAULT     (-1)
#define KL_RASTER_GROUP_M_DEFAULT_STR "-1"

kl_value *kl_gemm_raster_bid(kl_rewriter *rw, kl_loc loc, kl_value *h, int64_t G, int64_t nM, int64_t nN,
                             int64_t group_m);
/* The auto group (0: row order) for nM x nN tiles (per batch) whose row-block of A has a_bytes
 * and column-block of B b_bytes, `resident` workgroups at a time, an L2 of l2_bytes. */
int64_t kl_gemm_raster_auto(int64_t nM, int64_t nN, int64_t a_bytes, int64_t b_bytes, int64_t resident,
                            int64_t l2_bytes);
/* The operand bytes a wave of `resident` consecutive workgroups touches in order group_m. */
int64_t kl_gemm_raster_footprint(int64_t nM, int64_t nN, int64_t a_bytes, int64_t b_bytes, int64_t resident,
                                 int64_t group_m);
int64_t kl_gemm_raster_ref(int64_t h, int64_t G, int64_t nM, int64_t nN, int64_t group_m);

/* Thread-block clusters (passes/rock_tma.h: cluster): C consecutive workgroups h form a
 * cluster (q = h / C, its rank r = h % C) whose tiles share one operand tile. along_m: the C
 * tiles are C consecutive m-tiles of one n-tile (they share B's column-block; a C x 1
 * cluster), else C consecutive n-tiles of one m-tile (they share A's row-block; 1 x C). The
 * clusters walk the grid of cluster tiles G x ceil(nM / C) x nN (along_m; or G x nM x
 * ceil(nN / C)) in the raster order group_m (kl_gemm_raster_bid of q; group_m counts cluster
 * rows), and the tile of rank r is m = mc * C + r (n = nc * C + r). A tile past the grid's last
 * m-tile (n-tile) pads the last cluster: *valid (i1) is false there and the bid is that of the
 * last valid tile of its cluster's row (m = nM - 1: it loads in-range boxes and takes part in
 * the cluster's loads and barriers; its epilogue is skipped). kl_gemm_cluster_grid is the
 * launch's workgroups: G x ceil(nM / C) x nN x C (along_m) or G x nM x ceil(nN / C) x C,
 * a multiple of C; kl_gemm_cluster_ref the mapping in plain C (-1 for a padding tile). */
kl_value *kl_gemm_cluster_bid(kl_rewriter *rw, kl_loc loc, kl_value *h, int64_t G, int64_t nM, int64_t nN,
                              int64_t group_m, int64_t C, bool along_m, kl_value **valid);
int64_t kl_gemm_cluster_grid(int64_t G, int64_t nM, int64_t nN, int64_t C, bool along_m);
int64_t kl_gemm_cluster_ref(int64_t h, int64_t G, int64_t nM, int64_t nN, int64_t group_m, int64_t C, bool along_m);
#endif
