/* rng.h — seeded, deterministic pseudo-random numbers (PCG32, XSH-RR 64/32).
 * Contract: a kl_rng is a plain value owned by the caller (no allocation, no globals).
 * The same seed and stream give the same integer and uniform sequences everywhere
 * (integer arithmetic only); normals also go through libm's log/sqrt/cos, so they are
 * bit-identical for one libm. */
#ifndef KL_RNG_H
#define KL_RNG_H
#include <stdint.h>

typedef struct kl_rng {
  uint64_t state, inc;
} kl_rng;

/* Seed; different streams with the same seed give independent sequences. */
void kl_rng_seed(kl_rng *r, uint64_t seed, uint64_t stream);
uint32_t kl_rng_u32(kl_rng *r);
/* Skips delta kl_rng_u32 draws in O(log delta) steps (the state after them). */
void kl_rng_advance(kl_rng *r, uint64_t delta);
uint64_t kl_rng_u64(kl_rng *r);
/* Uniform integer in [0, bound) without modulo bias; bound 0 returns 0. */
uint32_t kl_rng_below(kl_rng *r, uint32_t bound);
/* Uniform double in [0, 1) with 53 random bits. */
double kl_rng_uniform(kl_rng *r);
/* Uniform double in [lo, hi). */
double kl_rng_uniform_range(kl_rng *r, double lo, double hi);
/* Standard normal N(0, 1) (Box-Muller; consumes two uniforms per call, no caching, so
 * each value depends only on the generator state). */
double kl_rng_normal(kl_rng *r);
#endif
