/* rng.c — PCG32 (M. O'Neill, pcg-random.org), minimal variant. */
#include "runtime/rng.h"
#include <math.h>

#define PCG_MULT 6364136223846793005ull

void kl_rng_seed(kl_rng *r, uint64_t seed, uint64_t stream) {
  r->state = 0;
  r->inc = (stream << 1) | 1u;
  kl_rng_u32(r);
  r->state += seed;
  kl_rng_u32(r);
}

uint32_t kl_rng_u32(kl_rng *r) {
  uint64_t old = r->state;
  r->state = old * PCG_MULT + r->inc;
  uint32_t xorshifted = (uint32_t)(((old >> 18) ^ old) >> 27);
  uint32_t rot = (uint32_t)(old >> 59);
  return (xorshifted >> rot) | (xorshifted << ((-rot) & 31));
}

/* The LCG step x -> PCG_MULT x + inc applied delta times is x -> A x + C: square the step
 * (A, C) -> (A^2, (A + 1) C) for each bit of delta (Brown, "Random number generation with
 * arbitrary strides"). */
void kl_rng_advance(kl_rng *r, uint64_t delta) {
  uint64_t mult = PCG_MULT, plus = r->inc, acc_mult = 1, acc_plus = 0;
  while (delta) {
    if (delta & 1) {
      acc_mult *= mult;
      acc_plus = acc_plus * mult + plus;
    }
    plus = (mult + 1) * plus;
    mult *= mult;
    delta >>= 1;
  }
  r->state = acc_mult * r->state + acc_plus;
}

uint64_t kl_rng_u64(kl_rng *r) {
  uint64_t hi = kl_rng_u32(r);
  return (hi << 32) | kl_rng_u32(r);
}

uint32_t kl_rng_below(kl_rng *r, uint32_t bound) {
  if (bound == 0) return 0;
  uint32_t threshold = (uint32_t)(-bound) % bound;
  for (;;) {
    uint32_t x = kl_rng_u32(r);
    if (x >= threshold) return x % bound;
  }
}

double kl_rng_uniform(kl_rng *r) { return (double)(kl_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0); }

double kl_rng_uniform_range(kl_rng *r, double lo, double hi) {
  double v = lo + (hi - lo) * kl_rng_uniform(r);
  return v < hi ? v : lo; /* guard against rounding up to hi */
}

double kl_rng_normal(kl_rng *r) {
  double u1 = 1.0 - kl_rng_uniform(r); /* (0, 1] */
  double u2 = kl_rng_uniform(r);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
