/* gemm_split.c — the split-K decision shared by rock-gemm-to-gridwise and
 * split-k-workspace (contract in gemm_split.h). */
#include "passes/gemm_split.h"
#include "passes/gemm_shape.h"
#include "passes/perf_config.h"
#include "passes/rock_accel.h"
#include "passes/rock_wgmma.h"
#include <string.h>

bool kl_gemm_split_estimate(const kl_target *t, const kl_type *ea, const kl_type *eb, const char *given, int64_t G,
                            int64_t M, int64_t N, int64_t K, kl_gemm_split_est *out, char *err, size_t errlen) {
  kl_gemm_config gc;
  if (!kl_gemm_config_pick(t, ea, eb, given, KL_GEMM_PICK_DEFAULT, G, M, N, K, &gc, err, errlen)) return false;
  out->tiles = kl_perf_config_grid_size(&gc.pc, G, M, N);
  out->k_per_block = gc.pc.k_per_block;
  out->split_k = given && *given && gc.pc.split_k > 1 ? gc.pc.split_k : 1;
  return true;
}

int64_t kl_gemm_split_heuristic(const kl_target *t, int64_t tiles, int64_t K, int64_t k_per_block) {
  if (t->compute_units <= 0 || tiles <= 0) return 1;
  int64_t s = 1;
  while (s < 64 && tiles * s * 2 <= t->compute_units && K / (s * 2) >= 4 * k_per_block) s *= 2;
  return s;
}

bool kl_gemm_split_wgmma(const kl_target *t, const kl_type *ea, const kl_type *eb) {
  return t && t->wgmma && ea && eb && ea->kind == eb->kind && (ea->kind == KL_TY_F16 || ea->kind == KL_TY_BF16);
}

bool kl_gemm_split_joint(const kl_target *t) {
  return t && t->arch == KL_ARCH_NVPTX && t->l2_bytes_per_cu_clk > 0 && t->compute_units > 0;
}

/* Blocks of accel config c resident on one SM (NVIDIA: KL_NV_SM_REGS registers and
 * KL_NV_SM_THREADS threads per SM, the target's shared memory): registers per thread ~ the
 * f32 accumulators + 64, shared memory two tile pairs (double-buffered). 128x128x32 f16
 * tiles of 4 warps: 192 registers, 2 blocks. */
static int64_t occupancy(const kl_accel_config *c, const kl_accel_desc *d, const kl_target *t, int eb) {
  int64_t bs = kl_accel_block_size(c, d);
  if (bs <= 0) return 1;
  int64_t regs = c->m_per_block * c->n_per_block / bs + 64;
  int64_t lds = 2 * c->k_per_block * (c->m_per_block + c->n_per_block) * eb;
  int64_t occ = KL_NV_SM_REGS / (bs * regs);
  if (lds > 0 && t->lds_bytes / lds < occ) occ = t->lds_bytes / lds;
  if (KL_NV_SM_THREADS / bs < occ) occ = KL_NV_SM_THREADS / bs;
  return occ < 1 ? 1 : occ;
}

/* The occupancy cost of accel config c on a joint target (see gemm_split.h): the busiest
 * SM's blocks in rounds of `occupancy` resident blocks; a K step of a round of b blocks
 * takes max(b * step, step + KL_NV_STEP_LATENCY) + 64 cycles. */
static double occupancy_cost(const kl_accel_config *c, const kl_accel_desc *d, const kl_target *t, int64_t G, int64_t M,
                             int64_t N, int64_t K, int eb) {
  int64_t blocks = G * ((M + c->m_per_block - 1) / c->m_per_block) * ((N + c->n_per_block - 1) / c->n_per_block);
  int64_t per_sm = (blocks + t->compute_units - 1) / t->compute_units, occ = occupancy(c, d, t, eb);
  double step = kl_accel_config_step(c, t, d, eb), round = 0;
  for (int64_t left = per_sm; left > 0; left -= occ) {
    double b = (double)(left < occ ? left : occ), r = b * step;
    round += (r > step + KL_NV_STEP_LATENCY ? r : step + KL_NV_STEP_LATENCY) + 64.0;
  }
  return round * (double)((K + c->k_per_block - 1) / c->k_per_block);
}

/* The heuristic config of a G x M x N x K GEMM and its cost (the unit of the config costs:
 * cycles of the busiest compute unit; accel configs on joint targets: occupancy_cost);
 * false if none fits. The model is mma.sync's: the config of kl_gemm_config_pick without
 * the wgmma heuristic (rock-gemm-to-gridwise's wgmma GEMMs keep the tile-count rule). */
static bool config_cost(const kl_target *t, const kl_type *ea, const kl_type *eb, int64_t G, int64_t M, int64_t N,
                        int64_t K, double *cst, kl_perf_config *pick) {
  int bytes = (kl_type_bits(ea) + 7) / 8;
  if ((kl_type_bits(eb) + 7) / 8 > bytes) bytes = (kl_type_bits(eb) + 7) / 8;
  kl_gemm_config gc;
  char err[64];
  /* a GEMM the wgmma heuristic takes (sm_90a, f16 / bf16): its pick at the sub-wave model's
   * cost (passes/rock_wgmma.h, kl_wgmma_tile_cost) */
  if (kl_gemm_split_wgmma(t, ea, eb) &&
      kl_gemm_config_pick(t, ea, eb, NULL, KL_GEMM_PICK_DEFAULT, G, M, N, K, &gc, err, sizeof err) &&
      gc.path == KL_GEMM_PATH_WGMMA) {
    *pick = gc.pc;
    *cst = kl_wgmma_tile_cost(t, bytes, G, M, N, K, gc.pc.m_per_block, gc.pc.n_per_block, gc.pc.k_per_block);
    return true;
  }
  if (!kl_gemm_config_pick(t, ea, eb, NULL, KL_GEMM_PICK_ACCEL, G, M, N, K, &gc, err, sizeof err)) return false;
  *pick = gc.pc;
  if (gc.path == KL_GEMM_PATH_FMA) {
    *cst = kl_perf_config_cost(pick, t, G, M, N, K, bytes);
  } else {
    *cst = kl_gemm_split_joint(t) ? occupancy_cost(&gc.ac, gc.ad, t, G, M, N, K, bytes)
                                  : kl_accel_config_cost(&gc.ac, t, gc.ad, G, M, N, K, bytes);
  }
  return true;
}

bool kl_gemm_split_cost(const kl_target *t, const kl_type *ea, const kl_type *eb, int64_t G, int64_t M, int64_t N,
                        int64_t K, int64_t S, kl_gemm_split_costs *out) {
  memset(out, 0, sizeof *out);
  if (S < 1 || K < 1 || t->compute_units <= 0) return false;
  int64_t kc = (K + S - 1) / S;
  kl_perf_config pc;
  if (!config_cost(t, ea, eb, G * S, M, N, kc, &out->cycles, &pc)) return false;
  out->m_per_block = pc.m_per_block;
  out->n_per_block = pc.n_per_block;
  out->k_per_block = pc.k_per_block;
  out->blocks = kl_perf_config_grid_size(&pc, G * S, M, N);
  out->k_steps = (kc + pc.k_per_block - 1) / pc.k_per_block;
  if (S > 1) {
    /* the partials: written (or added atomically) and read once more, f32, through L2 */
    double per_cycle = (double)t->compute_units * (double)(t->l2_bytes_per_cu_clk > 0 ? t->l2_bytes_per_cu_clk : 32);
    out->cycles += KL_SPLIT_FIXED + 2.0 * (double)(S * G * M * N) * 4.0 / per_cycle;
  }
  return true;
}

int64_t kl_gemm_split_choose(const kl_target *t, const kl_type *ea, const kl_type *eb, int64_t G, int64_t M, int64_t N,
                             int64_t K, int64_t max_split, const kl_gemm_split_est *est) {
  if (!kl_gemm_split_joint(t)) return kl_gemm_split_heuristic(t, est->tiles, K, est->k_per_block);
  kl_gemm_split_costs c;
  if (!kl_gemm_split_cost(t, ea, eb, G, M, N, K, 1, &c)) return 1;
  double best = c.cycles;
  int64_t S = 1;
  for (int64_t s = 2; s <= max_split && s <= KL_SPLIT_MAX; s *= 2) {
    if ((K + s - 1) / s < KL_SPLIT_MIN_SLICE) break;
    if (!kl_gemm_split_cost(t, ea, eb, G, M, N, K, s, &c)) continue;
    if (c.cycles < best * KL_SPLIT_GAIN) {
      best = c.cycles;
      S = s;
    }
  }
  return S;
}
