/* test_gemm_raster.c — the grouped raster order of GEMM workgroups (passes/gemm_raster.h):
 * kl_gemm_raster_ref against a hand-written table, its bijection and grouping properties
 * over many tile grids, and the emitted index arithmetic (kl_gemm_raster_bid, folded on
 * constant workgroup ids) equal to it for every workgroup, and so the clusters' padded
 * order (kl_gemm_cluster_bid / kl_gemm_cluster_ref). The host numerics of the
 * lowered order: spec/lua/raster_spec.lua. */
#include "core/context.h"
#include "core/dialect_builtin.h"
#include "core/view_emit.h"
#include "passes/gemm_raster.h"
#include <stdlib.h>

#include "check.h"

static void test_table(void) {
  group_begin();
  /* 5 m-tiles x 3 n-tiles, groups of 2: (0,1) column by column, (2,3), then (4) alone */
  static const int64_t want[15] = { 0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11, 12, 13, 14 };
  for (int64_t h = 0; h < 15; h++)
    CHECK(kl_gemm_raster_ref(h, 1, 5, 3, 2) == want[h], "h %lld -> %lld, want %lld", (long long)h,
          (long long)kl_gemm_raster_ref(h, 1, 5, 3, 2), (long long)want[h]);
  /* batch 2: the second batch's workgroups map into its own tiles, in the same order */
  for (int64_t h = 0; h < 15; h++) CHECK(kl_gemm_raster_ref(15 + h, 2, 5, 3, 2) == 15 + want[h]);
  /* row order for GM <= 1 and one column or one row of tiles */
  for (int64_t h = 0; h < 24; h++) {
    CHECK(kl_gemm_raster_ref(h, 2, 4, 3, 0) == h && kl_gemm_raster_ref(h, 2, 4, 3, 1) == h);
    CHECK(kl_gemm_raster_ref(h, 2, 12, 1, 4) == h && kl_gemm_raster_ref(h, 2, 1, 12, 4) == h);
  }
  group_end("the order on a small grid");
}

static void test_properties(void) {
  group_begin();
  uint64_t st = 7;
  for (int it = 0; it < 300; it++) {
    int64_t G = 1 + (int64_t)(xorshift64(&st) % 3), nM = 1 + (int64_t)(xorshift64(&st) % 40),
            nN = 1 + (int64_t)(xorshift64(&st) % 40), GM = (int64_t)(xorshift64(&st) % 12);
    int64_t n = G * nM * nN, gm = GM > nM ? nM : GM;
    char *seen = calloc((size_t)n, 1);
    bool ok = true;
    for (int64_t h = 0; h < n && ok; h++) {
      int64_t b = kl_gemm_raster_ref(h, G, nM, nN, GM);
      ok = b >= 0 && b < n && !seen[b] && b / (nM * nN) == h / (nM * nN);
      if (ok) seen[b] = 1;
      /* within a full group, GM consecutive workgroups share an n-tile and walk the m-tiles */
      int64_t r = h % (nM * nN), m = b % (nM * nN) / nN, nn = b % nN;
      if (ok && gm > 1 && nN > 1 && r / (gm * nN) < nM / gm) {
        int64_t w = r % (gm * nN);
        ok = m == r / (gm * nN) * gm + w % gm && nn == w / gm;
      }
    }
    CHECK(ok, "G %lld nM %lld nN %lld GM %lld: not the grouped bijection", (long long)G, (long long)nM, (long long)nN,
          (long long)GM);
    free(seen);
  }
  group_end("a bijection in groups, over 300 grids");
}

static void test_emitted(void) {
  group_begin();
  kl_ctx *ctx = kl_ctx_create();
  kl_op *m = kl_module_create(ctx, KL_LOC_UNKNOWN);
  kl_named_attr fa[1] = { { "sym_name", kl_attr_str(ctx, "f") } };
  kl_op *fn = kl_op_create(ctx, "func.func", KL_LOC_UNKNOWN, 0, NULL, 0, NULL, 1, fa, 1);
  kl_block *b = kl_block_create(ctx);
  kl_region_push_block(&fn->regions[0], b);
  kl_block_push_op(kl_module_body(m), fn);
  kl_op *ret = kl_op_create(ctx, "func.return", KL_LOC_UNKNOWN, 0, NULL, 0, NULL, 0, NULL, 0);
  kl_block_push_op(b, ret);
  kl_rewriter *rw = kl_rewriter_new(ctx);
  kl_rewriter_set_insertion_before(rw, ret);
  kl_emitter e = { rw, KL_LOC_UNKNOWN };
  static const int64_t grids[][4] = {
    { 1, 5, 3, 2 }, { 2, 7, 4, 3 }, { 3, 8, 6, 8 }, { 1, 9, 9, 100 }, { 2, 6, 5, 1 }
  };
  int bad = 0;
  for (size_t gi = 0; gi < sizeof grids / sizeof *grids; gi++) {
    const int64_t *g = grids[gi];
    for (int64_t h = 0; h < g[0] * g[1] * g[2]; h++) {
      int64_t got = -1;
      kl_value *v = kl_gemm_raster_bid(rw, KL_LOC_UNKNOWN, kl_emit_index(&e, h), g[0], g[1], g[2], g[3]);
      if (!kl_emit_const_of(v, &got) || got != kl_gemm_raster_ref(h, g[0], g[1], g[2], g[3])) bad++;
    }
  }
  CHECK(bad == 0, "%d workgroups where the emitted arithmetic differs from kl_gemm_raster_ref", bad);
  /* clusters (kl_gemm_cluster_bid): the bid and validity of every workgroup of the padded grid
   * equal kl_gemm_cluster_ref's (a padding workgroup: invalid, the bid of its row's last tile) */
  int cbad = 0, nvalid = 0;
  for (size_t gi = 0; gi < sizeof grids / sizeof *grids; gi++) {
    const int64_t *g = grids[gi];
    for (int64_t C = 2; C <= 4; C += 2)
      for (int am = 0; am < 2; am++) {
        int64_t gmc = am && g[3] > 1 ? (g[3] + C - 1) / C : g[3];
        for (int64_t h = 0; h < kl_gemm_cluster_grid(g[0], g[1], g[2], C, am); h++) {
          int64_t got = -1, ok = 1;
          kl_value *valid = NULL;
          kl_value *v = kl_gemm_cluster_bid(rw, KL_LOC_UNKNOWN, kl_emit_index(&e, h), g[0], g[1], g[2], gmc, C, am,
                                            &valid);
          int64_t want = kl_gemm_cluster_ref(h, g[0], g[1], g[2], gmc, C, am);
          if (valid && !kl_emit_const_of(valid, &ok)) ok = -1;
          if (!kl_emit_const_of(v, &got) || (want >= 0 ? (got != want || ok != 1) : ok != 0)) cbad++;
          nvalid += want >= 0;
        }
      }
  }
  CHECK(cbad == 0 && nvalid > 0, "%d workgroups where the emitted cluster arithmetic differs from kl_gemm_cluster_ref",
        cbad);
  kl_rewriter_free(rw);
  kl_ctx_destroy(ctx);
  group_end("the emitted arithmetic");
}

/* kl_gemm_raster_footprint against the hand-counted waves, and kl_gemm_raster_auto's rule:
 * the footprint it picks is the smallest over every group, at most 3/4 of row order's, and
 * only where row order's overflows half the L2. */
static void test_auto(void) {
  group_begin();
  const int64_t Mi = 1 << 20, L2 = 50 * Mi;
  /* the seed conv on sm_90a: 4 x 98 tiles, row-blocks 0.5 MiB, column-blocks 1 MiB, 132 SMs */
  CHECK(kl_gemm_raster_footprint(4, 98, Mi / 2, Mi, 132, 0) == 2 * Mi / 2 + 98 * Mi);
  CHECK(kl_gemm_raster_footprint(4, 98, Mi / 2, Mi, 132, 4) == 4 * Mi / 2 + 33 * Mi);
  CHECK(kl_gemm_raster_auto(4, 98, Mi / 2, Mi, 132, L2) == 4);
  CHECK(kl_gemm_raster_auto(4, 98, Mi / 2, Mi, 132, 0) == 0);        /* no L2 figure: row order */
  CHECK(kl_gemm_raster_auto(4, 98, Mi / 2, Mi, 132, 400 * Mi) == 0); /* the wave fits: row order */
  /* a wave spanning two groups: 2 x 3 tiles per group of 2 -> rows 4 of 8 */
  CHECK(kl_gemm_raster_footprint(8, 3, 1, 100, 10, 2) == 4 * 1 + 3 * 100);
  /* 4096^3 f16 128x256 (32 x 16): row 9 x 1 + 16 x 2 = 41 MiB; group 16: 16 + 9 x 2 = 34: kept */
  CHECK(kl_gemm_raster_footprint(32, 16, Mi, 2 * Mi, 132, 0) == 41 * Mi);
  CHECK(kl_gemm_raster_auto(32, 16, Mi, 2 * Mi, 132, L2) == 0);
  uint64_t st = 11;
  for (int it = 0; it < 400; it++) {
    int64_t nM = 1 + (int64_t)(xorshift64(&st) % 80), nN = 1 + (int64_t)(xorshift64(&st) % 80);
    int64_t a = 1 + (int64_t)(xorshift64(&st) % (4 * Mi)), b = 1 + (int64_t)(xorshift64(&st) % (4 * Mi));
    int64_t W = 1 + (int64_t)(xorshift64(&st) % 300), l2 = (int64_t)(xorshift64(&st) % (100 * Mi));
    int64_t gm = kl_gemm_raster_auto(nM, nN, a, b, W, l2), row = kl_gemm_raster_footprint(nM, nN, a, b, W, 0);
    CHECK(gm == 0 || (gm >= 2 && gm <= nM), "auto %lld for nM %lld", (long long)gm, (long long)nM);
    if (gm) {
      int64_t fp = kl_gemm_raster_footprint(nM, nN, a, b, W, gm);
      CHECK(row > l2 / 2 && fp * 4 <= row * 3);
      for (int64_t g = 2; g <= nM; g++) CHECK(kl_gemm_raster_footprint(nM, nN, a, b, W, g) >= fp);
    } else if (l2 > 0 && row > l2 / 2 && nM > 1 && nN > 1) {
      for (int64_t g = 2; g <= nM; g++) CHECK(kl_gemm_raster_footprint(nM, nN, a, b, W, g) * 4 > row * 3);
    }
  }
  group_end("the auto order");
}

int main(void) {
  test_auto();
  test_table();
  test_properties();
  test_emitted();
  return check_summary("test_gemm_raster");
}
