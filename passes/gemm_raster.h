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
 * KL_RASTER_GROUP_M_DEFAULT is the option's default: 0, row order, until a GPU
 * measurement says otherwise (bench/gpu_cases.txt: the @raster8 rows). */
#ifndef KL_GEMM_RASTER_H
#define KL_GEMM_RASTER_H
#include "core/rewrite.h"
#include <stdint.h>

#define KL_RASTER_GROUP_M_DEFAULT     0
#define KL_RASTER_GROUP_M_DEFAULT_STR "0"

kl_value *kl_gemm_raster_bid(kl_rewriter *rw, kl_loc loc, kl_value *h, int64_t G, int64_t nM, int64_t nN,
                             int64_t group_m);
int64_t kl_gemm_raster_ref(int64_t h, int64_t G, int64_t nM, int64_t nN, int64_t group_m);
#endif
