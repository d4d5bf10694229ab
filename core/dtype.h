/* dtype.h — IEEE binary16 (f16) and bfloat16 (bf16) conversions.
 * Contract: pure functions on bit patterns held in uint16_t; no state, no allocation.
 * Narrowing conversions (f32/f64 -> f16/bf16) round to nearest, ties to even, in one
 * step from the source value (no double rounding through f32); overflow gives +-inf,
 * values below half the smallest subnormal give a signed zero, subnormal results are
 * produced exactly. NaN stays NaN (quiet, sign and the top payload bits kept; a payload
 * that would vanish becomes the canonical quiet NaN). Widening conversions are exact. */
#ifndef KL_HALF_H
#define KL_HALF_H
#include <stdint.h>

uint16_t kl_f64_to_f16(double x);
uint16_t kl_f32_to_f16(float x);
double   kl_f16_to_f64(uint16_t h);
float    kl_f16_to_f32(uint16_t h);

uint16_t kl_f64_to_bf16(double x);
uint16_t kl_f32_to_bf16(float x);
double   kl_bf16_to_f64(uint16_t b);
float    kl_bf16_to_f32(uint16_t b);

/* Round a double to the nearest representable f16 / bf16 / f32 value (as a double). */
double kl_round_f16(double x);
double kl_round_bf16(double x);
double kl_round_f32(double x);
#endif
