/* perf_space.h — tuning spaces of GEMM perf configs: the candidates of one GEMM problem
 * on one target at a level, each applicable or rejected with its reason, decided from
 * the problem and the target alone (before any IR is lowered or LLVM runs).
 * Contract:
 *  - A problem is a G x M x N x K GEMM with input element size elem_bytes and, where the
 *    target has a matrix instruction for the input type, that instruction (accel).
 *  - Candidates are generated from the perf-config fields (perf_config.h, rock_accel.h):
 *      host (max_workgroup_size 1): v1 with mPerThread = mPerBlock, nPerThread =
 *        nPerBlock; full: M/N tiles {8,16,24,32,48,64,96,128,192,256}, K tiles
 *        {4,8,16,32,64,128,256}, kpack {1,4}; exhaustive: M/N tiles every multiple of 4
 *        up to 256, K tiles every power of two to 256, kpack {1,2,4,8}.
 *      GPU FMA path: v1 with M/N tiles {16,32,64,128,256}, per-thread tiles {1,2,4,8},
 *        K tiles {4,8,16,32}, kpack {1,2,4}; exhaustive adds 8-wide and 12-wide tiles
 *        ({8,...,256} by 8), K tile 64 and kpack 8.
 *      matrix instruction: v2 with wave tiles of 1, 2, 4 (exhaustive: 8) instructions per
 *        dim, M/N tiles = 1..4 (exhaustive: 8) wave tiles, K tiles of 1..8 instruction K
 *        steps, kpack = the instruction's; and the v1 FMA space as well.
 *    splitK is never varied (1: no split; where a split is possible depends on the
 *    graph around the GEMM, which a config cannot see).
 *  - Applicability (in this order; the first rule a candidate breaks is its reason):
 *    kl_perf_config_validate / kl_accel_config_validate (divisibility of the tiles, block
 *    size <= the target's maximum and a multiple of its wave on GPUs, LDS tiles <= the
 *    target's LDS); registers: on GPUs accumulators + one K step of A and B fragments per
 *    thread, mT*nT + kpack*(mT+nT) (v2: the accumulators per lane + fragments), must be
 *    <= 192 32-bit registers (f64: counted twice); on AMDGPU, v2 configs that would
 *    spill by the register estimate of kl_accel_amd_fits_registers (rock_accel.h); a
 *    tile more than twice the padded problem in M or N (the next smaller tile covers it with less padding) or a K tile
 *    more than twice K rounded up to kpack is rejected as wasted padding.
 *  - quick: the heuristic's config first, then the applicable full-space candidates in
 *    order of a padded-work cost (padded M*N*K times an occupancy penalty on GPUs,
 *    ceil(CUs / workgroups) when fewer workgroups than CUs), at most KL_PERF_QUICK_MAX in
 *    all, no duplicates.
 *  - kl_perf_space_build fills out (caller frees with kl_perf_space_free); deterministic. */
#ifndef KL_PERF_SPACE_H
#define KL_PERF_SPACE_H
#include "core/target.h"
#include "passes/perf_config.h"
#include "passes/rock_accel.h"

#define KL_PERF_QUICK_MAX 30

typedef enum { KL_PERF_QUICK, KL_PERF_FULL, KL_PERF_EXHAUSTIVE } kl_perf_level;

typedef struct kl_perf_problem {
  const kl_target *t;
  int64_t g, m, n, k;
  int elem_bytes;
  const kl_accel_desc *accel; /* NULL: FMA path only */
  bool amd_k_loop;            /* the heuristic's AMD K loop may move (kl_gemm_amd_k_loop, gemm_shape.h) */
} kl_perf_problem;

typedef struct kl_perf_candidate {
  char config[96];
  char *reason; /* NULL: applicable; else why not (malloc'd) */
  double cost;
} kl_perf_candidate;

typedef struct kl_perf_space {
  int n;
  kl_perf_candidate *c; /* applicable and rejected, in generation order (quick: ranked) */
} kl_perf_space;

/* "quick" / "full" / "exhaustive" -> level; false for anything else. */
bool kl_perf_level_parse(const char *s, kl_perf_level *out);
void kl_perf_space_build(const kl_perf_problem *p, kl_perf_level level, kl_perf_space *out);
void kl_perf_space_free(kl_perf_space *s);
/* The validation and register rules alone for one config string (no padding rule): NULL
 * if it passes, else the reason (malloc'd). */
char *kl_perf_check(const kl_perf_problem *p, const char *config);
#endif
