/* dtype.c — f16 / bf16 conversions (see dtype.h). Both narrow formats are handled by one
 * routine parameterised by exponent and mantissa widths, working on the f64 bits. */
#include "core/dtype.h"
#include <string.h>

static uint64_t f64_bits(double x) { uint64_t u; memcpy(&u, &x, 8); return u; }
static double bits_f64(uint64_t u) { double x; memcpy(&x, &u, 8); return x; }

/* Narrow a double to a binary format with ebits exponent bits and mbits mantissa bits
 * (f16: 5,10; bf16: 8,7), round to nearest even. Returns the bit pattern. */
static uint16_t narrow(double x, int ebits, int mbits) {
  uint64_t u = f64_bits(x);
  uint16_t sign = (uint16_t)((u >> 63) << (ebits + mbits));
  int exp = (int)((u >> 52) & 0x7ff);
  uint64_t mant = u & ((1ull << 52) - 1);
  uint16_t expmask = (uint16_t)(((1u << ebits) - 1) << mbits);
  if (exp == 0x7ff) {
    if (mant == 0) return sign | expmask;                 /* inf */
    uint16_t payload = (uint16_t)(mant >> (52 - mbits));
    payload |= (uint16_t)(1u << (mbits - 1));             /* quiet */
    return sign | expmask | payload;
  }
  if (exp == 0) return sign;        /* f64 zero or subnormal: far below any f16/bf16 subnormal */
  int bias = (1 << (ebits - 1)) - 1;
  int e = exp - 1023;               /* value = m * 2^(e-52), m = 1.mant (53 bits) */
  int emin = 1 - bias;
  uint64_t m = (1ull << 52) | mant;
  int shift = 52 - mbits;
  if (e < emin) shift += emin - e;  /* subnormal result */
  if (shift >= 54) return sign;     /* m < 2^53 <= half ulp: rounds to zero */
  uint64_t q = m >> shift;
  uint64_t rem = m & ((1ull << shift) - 1);
  uint64_t half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) q++;
  /* q carries the hidden bit, so adding it to the (biased exponent - 1) field gives the
   * right pattern for normals, for subnormals (field 0) and for carries. */
  uint64_t bits;
  if (e < emin) bits = q;
  else bits = ((uint64_t)(e + bias - 1) << mbits) + q;
  if (bits >= expmask) return sign | expmask;            /* overflow -> inf */
  return (uint16_t)(sign | bits);
}

static double widen(uint16_t h, int ebits, int mbits) {
  uint64_t sign = (uint64_t)((h >> (ebits + mbits)) & 1) << 63;
  int exp = (h >> mbits) & ((1 << ebits) - 1);
  uint64_t mant = h & ((1u << mbits) - 1);
  int bias = (1 << (ebits - 1)) - 1;
  if (exp == (1 << ebits) - 1) {
    if (mant == 0) return bits_f64(sign | (0x7ffull << 52));
    return bits_f64(sign | (0x7ffull << 52) | (mant << (52 - mbits)) | (1ull << 51));
  }
  if (exp == 0) {
    if (mant == 0) return bits_f64(sign);
    /* subnormal: mant * 2^(1 - bias - mbits); normalise into an f64 normal */
    int e = 1 - bias;
    while (!(mant & (1u << mbits))) { mant <<= 1; e--; }
    mant &= (1u << mbits) - 1;
    return bits_f64(sign | ((uint64_t)(e + 1023) << 52) | (mant << (52 - mbits)));
  }
  return bits_f64(sign | ((uint64_t)(exp - bias + 1023) << 52) | (mant << (52 - mbits)));
}

uint16_t kl_f64_to_f16(double x) { return narrow(x, 5, 10); }
uint16_t kl_f32_to_f16(float x) { return narrow((double)x, 5, 10); }
double   kl_f16_to_f64(uint16_t h) { return widen(h, 5, 10); }
float    kl_f16_to_f32(uint16_t h) { return (float)widen(h, 5, 10); }

uint16_t kl_f64_to_bf16(double x) { return narrow(x, 8, 7); }
uint16_t kl_f32_to_bf16(float x) { return narrow((double)x, 8, 7); }
double   kl_bf16_to_f64(uint16_t b) { return widen(b, 8, 7); }
float    kl_bf16_to_f32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16; float f; memcpy(&f, &u, 4); return f;
}

double kl_round_f16(double x) { return kl_f16_to_f64(kl_f64_to_f16(x)); }
double kl_round_bf16(double x) { return kl_bf16_to_f64(kl_f64_to_bf16(x)); }
double kl_round_f32(double x) { return (double)(float)x; }
