/* gemm_split.c — the split-K decision shared by rock-gemm-to-gridwise and
 * split-k-workspace (contract in gemm_split.h). */
#include "passes/gemm_split.h"
#include "passes/perf_config.h"
#include "passes/rock_accel.h"
#include <string.h>

bool kl_gemm_split_estimate(const kl_target *t, const kl_type *ea, const kl_type *eb, const char *given, int64_t G,
                            int64_t M, int64_t N, int64_t K, kl_gemm_split_est *out, char *err, size_t errlen) {
  if (given && !*given) given = NULL;
  int eb_bytes = (kl_type_bits(ea) + 7) / 8;
  if ((kl_type_bits(eb) + 7) / 8 > eb_bytes) eb_bytes = (kl_type_bits(eb) + 7) / 8;
  kl_accel_config ac;
  memset(&ac, 0, sizeof ac);
  const kl_accel_desc *ad = NULL;
  int accel = kl_accel_select(t, ea, eb, given, G, M, N, K, &ac, &ad, err, errlen);
  if (accel < 0) return false;
  kl_perf_config pc = { 0 };
  if (accel) {
    pc = (kl_perf_config){ ac.m_per_block, ac.n_per_block, ac.k_per_block, 1, 1, ac.kpack, ac.split_k };
  } else if (given) {
    if (!kl_perf_config_parse(given, &pc, err, errlen) || !kl_perf_config_validate(&pc, t, eb_bytes, err, errlen))
      return false;
  } else if (!kl_perf_config_heuristic(t, G, M, N, K, eb_bytes, &pc)) {
    return kl_perf_errf(err, errlen, "no perf config fits target %s", t->name);
  }
  out->tiles = kl_perf_config_grid_size(&pc, G, M, N);
  out->k_per_block = pc.k_per_block;
  out->split_k = given && pc.split_k > 1 ? pc.split_k : 1;
  return true;
}

int64_t kl_gemm_split_heuristic(const kl_target *t, int64_t tiles, int64_t K, int64_t k_per_block) {
  if (t->compute_units <= 0 || tiles <= 0) return 1;
  int64_t s = 1;
  while (s < 64 && tiles * s * 2 <= t->compute_units && K / (s * 2) >= 4 * k_per_block) s *= 2;
  return s;
}

bool kl_gemm_split_joint(const kl_target *t) {
  return t && t->arch == KL_ARCH_NVPTX && t->l2_bytes_per_cu_clk > 0 && t->compute_units > 0;
}

/* The heuristic config of a G x M x N x K GEMM and its cost (the unit of the config costs:
 * cycles of the busiest compute unit); false if none fits. */
static bool config_cost(const kl_target *t, const kl_type *ea, const kl_type *eb, int64_t G, int64_t M, int64_t N,
                        int64_t K, double *cst) {
  int bytes = (kl_type_bits(ea) + 7) / 8;
  if ((kl_type_bits(eb) + 7) / 8 > bytes) bytes = (kl_type_bits(eb) + 7) / 8;
  kl_accel_config ac;
  memset(&ac, 0, sizeof ac);
  const kl_accel_desc *ad = NULL;
  char err[64];
  int accel = kl_accel_select(t, ea, eb, NULL, G, M, N, K, &ac, &ad, err, sizeof err);
  if (accel < 0) return false;
  if (accel) {
    *cst = kl_accel_config_cost(&ac, t, ad, G, M, N, K, bytes);
    return true;
  }
  kl_perf_config pc;
  if (!kl_perf_config_heuristic(t, G, M, N, K, bytes, &pc)) return false;
  *cst = kl_perf_config_cost(&pc, t, G, M, N, K, bytes);
  return true;
}

int64_t kl_gemm_split_choose(const kl_target *t, const kl_type *ea, const kl_type *eb, int64_t G, int64_t M, int64_t N,
                             int64_t K, int64_t max_split, const kl_gemm_split_est *est) {
  if (!kl_gemm_split_joint(t)) return kl_gemm_split_heuristic(t, est->tiles, K, est->k_per_block);
  double best;
  if (!config_cost(t, ea, eb, G, M, N, K, &best)) return 1;
  int64_t S = 1;
  double per_cycle = (double)t->compute_units * (double)t->l2_bytes_per_cu_clk;
  for (int64_t s = 2; s <= max_split && s <= KL_SPLIT_MAX; s *= 2) {
    int64_t kc = (K + s - 1) / s;
    if (kc < KL_SPLIT_MIN_SLICE) break;
    double c;
    if (!config_cost(t, ea, eb, G * s, M, N, kc, &c)) continue;
    /* the partials: written (or added atomically) and read once more, f32, through L2 */
    c += KL_SPLIT_FIXED + 2.0 * (double)(s * G * M * N) * 4.0 / per_cycle;
    if (c < best * KL_SPLIT_GAIN) {
      best = c;
      S = s;
    }
  }
  return S;
}
