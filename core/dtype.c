/* dtype.c — element types: f16 / bf16 conversions, dtype sizes, loads and stores
 * (see dtype.h). Both narrow formats are handled by one routine parameterised by
 * exponent and mantissa widths, working on the f64 bits. */
#include "core/dtype.h"
#include <string.h>

static uint64_t f64_bits(double x) {
  uint64_t u;
  memcpy(&u, &x, 8);
  return u;
}
static double bits_f64(uint64_t u) {
  double x;
  memcpy(&x, &u, 8);
  return x;
}

/* Narrow a double to a binary format with ebits exponent bits and mbits mantissa bits
 * (f16: 5,10; bf16: 8,7), round to nearest even. Returns the bit pattern. */
static uint16_t narrow(double x, int ebits, int mbits) {
  uint64_t u = f64_bits(x);
  uint16_t sign = (uint16_t)((u >> 63) << (ebits + mbits));
  int exp = (int)((u >> 52) & 0x7ff);
  uint64_t mant = u & ((1ull << 52) - 1);
  uint16_t expmask = (uint16_t)(((1u << ebits) - 1) << mbits);
  if (exp == 0x7ff) {
    if (mant == 0) return sign | expmask; /* inf */
    uint16_t payload = (uint16_t)(mant >> (52 - mbits));
    payload |= (uint16_t)(1u << (mbits - 1)); /* quiet */
    return sign | expmask | payload;
  }
  if (exp == 0) return sign; /* f64 zero or subnormal: far below any f16/bf16 subnormal */
  int bias = (1 << (ebits - 1)) - 1;
  int e = exp - 1023; /* value = m * 2^(e-52), m = 1.mant (53 bits) */
  int emin = 1 - bias;
  uint64_t m = (1ull << 52) | mant;
  int shift = 52 - mbits;
  if (e < emin) shift += emin - e; /* subnormal result */
  if (shift >= 54) return sign;    /* m < 2^53 <= half ulp: rounds to zero */
  uint64_t q = m >> shift;
  uint64_t rem = m & ((1ull << shift) - 1);
  uint64_t half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) q++;
  /* q carries the hidden bit, so adding it to the (biased exponent - 1) field gives the
   * right pattern for normals, for subnormals (field 0) and for carries. */
  uint64_t bits;
  if (e < emin)
    bits = q;
  else
    bits = ((uint64_t)(e + bias - 1) << mbits) + q;
  if (bits >= expmask) return sign | expmask; /* overflow -> inf */
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
    while (!(mant & (1u << mbits))) {
      mant <<= 1;
      e--;
    }
    mant &= (1u << mbits) - 1;
    return bits_f64(sign | ((uint64_t)(e + 1023) << 52) | (mant << (52 - mbits)));
  }
  return bits_f64(sign | ((uint64_t)(exp - bias + 1023) << 52) | (mant << (52 - mbits)));
}

uint16_t kl_f64_to_f16(double x) { return narrow(x, 5, 10); }
uint16_t kl_f32_to_f16(float x) { return narrow((double)x, 5, 10); }
double kl_f16_to_f64(uint16_t h) { return widen(h, 5, 10); }
float kl_f16_to_f32(uint16_t h) { return (float)widen(h, 5, 10); }

uint16_t kl_f64_to_bf16(double x) { return narrow(x, 8, 7); }
uint16_t kl_f32_to_bf16(float x) { return narrow((double)x, 8, 7); }
double kl_bf16_to_f64(uint16_t b) { return widen(b, 8, 7); }
float kl_bf16_to_f32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

double kl_round_f16(double x) { return kl_f16_to_f64(kl_f64_to_f16(x)); }
double kl_round_bf16(double x) { return kl_bf16_to_f64(kl_f64_to_bf16(x)); }
double kl_round_f32(double x) { return (double)(float)x; }

/* ---------------------------------------------------------------- dtypes */

static const char *const dtype_names[KL_DT_COUNT] = {
  [KL_DT_F32] = "f32", [KL_DT_F16] = "f16", [KL_DT_BF16] = "bf16", [KL_DT_I8] = "i8",
  [KL_DT_I32] = "i32", [KL_DT_F64] = "f64", [KL_DT_I64] = "i64",   [KL_DT_I1] = "i1",
};
static const size_t dtype_sizes[KL_DT_COUNT] = {
  [KL_DT_F32] = 4, [KL_DT_F16] = 2, [KL_DT_BF16] = 2, [KL_DT_I8] = 1,
  [KL_DT_I32] = 4, [KL_DT_F64] = 8, [KL_DT_I64] = 8,  [KL_DT_I1] = 1,
};

bool kl_dtype_valid(kl_dtype dt) { return dt >= 0 && dt < KL_DT_COUNT; }
const char *kl_dtype_name(kl_dtype dt) { return kl_dtype_valid(dt) ? dtype_names[dt] : "?"; }
size_t kl_dtype_size(kl_dtype dt) { return kl_dtype_valid(dt) ? dtype_sizes[dt] : 0; }

kl_dtype kl_dtype_from_name(const char *name) {
  if (!name) return KL_DT_NONE;
  for (int i = 0; i < KL_DT_COUNT; i++)
    if (strcmp(name, dtype_names[i]) == 0) return (kl_dtype)i;
  return KL_DT_NONE;
}

bool kl_dtype_is_float(kl_dtype dt) {
  return dt == KL_DT_F32 || dt == KL_DT_F16 || dt == KL_DT_BF16 || dt == KL_DT_F64;
}
bool kl_dtype_is_int(kl_dtype dt) { return dt == KL_DT_I8 || dt == KL_DT_I32 || dt == KL_DT_I64 || dt == KL_DT_I1; }
int64_t kl_dtype_int_min(kl_dtype dt) {
  switch (dt) {
    case KL_DT_I8: return INT8_MIN;
    case KL_DT_I32: return INT32_MIN;
    case KL_DT_I64: return INT64_MIN;
    default: return 0;
  }
}
int64_t kl_dtype_int_max(kl_dtype dt) {
  switch (dt) {
    case KL_DT_I8: return INT8_MAX;
    case KL_DT_I32: return INT32_MAX;
    case KL_DT_I64: return INT64_MAX;
    case KL_DT_I1: return 1;
    default: return 0;
  }
}

int64_t kl_f64_to_i64_sat(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775808.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

double kl_dtype_load_f64(kl_dtype dt, const void *p) {
  switch (dt) {
    case KL_DT_F32: {
      float v;
      memcpy(&v, p, 4);
      return v;
    }
    case KL_DT_F16: {
      uint16_t v;
      memcpy(&v, p, 2);
      return kl_f16_to_f64(v);
    }
    case KL_DT_BF16: {
      uint16_t v;
      memcpy(&v, p, 2);
      return kl_bf16_to_f64(v);
    }
    case KL_DT_I8: return *(const int8_t *)p;
    case KL_DT_I32: {
      int32_t v;
      memcpy(&v, p, 4);
      return v;
    }
    case KL_DT_F64: {
      double v;
      memcpy(&v, p, 8);
      return v;
    }
    case KL_DT_I64: {
      int64_t v;
      memcpy(&v, p, 8);
      return (double)v;
    }
    case KL_DT_I1: return *(const uint8_t *)p ? 1.0 : 0.0;
    default: return 0;
  }
}

int64_t kl_dtype_load_i64(kl_dtype dt, const void *p) {
  switch (dt) {
    case KL_DT_I8: return *(const int8_t *)p;
    case KL_DT_I32: {
      int32_t v;
      memcpy(&v, p, 4);
      return v;
    }
    case KL_DT_I64: {
      int64_t v;
      memcpy(&v, p, 8);
      return v;
    }
    case KL_DT_I1: return *(const uint8_t *)p ? 1 : 0;
    default: return kl_f64_to_i64_sat(kl_dtype_load_f64(dt, p));
  }
}

void kl_dtype_store_i64(kl_dtype dt, void *p, int64_t v) {
  uint64_t u = (uint64_t)v;
  switch (dt) {
    case KL_DT_I8: {
      uint8_t b = (uint8_t)u;
      memcpy(p, &b, 1);
      return;
    }
    case KL_DT_I32: {
      uint32_t w = (uint32_t)u;
      memcpy(p, &w, 4);
      return;
    }
    case KL_DT_I64: memcpy(p, &v, 8); return;
    case KL_DT_I1: *(uint8_t *)p = v != 0; return;
    default: kl_dtype_store_f64(dt, p, (double)v); return;
  }
}

void kl_dtype_store_f64(kl_dtype dt, void *p, double v) {
  switch (dt) {
    case KL_DT_F32: {
      float f = (float)v;
      memcpy(p, &f, 4);
      return;
    }
    case KL_DT_F16: {
      uint16_t h = kl_f64_to_f16(v);
      memcpy(p, &h, 2);
      return;
    }
    case KL_DT_BF16: {
      uint16_t h = kl_f64_to_bf16(v);
      memcpy(p, &h, 2);
      return;
    }
    case KL_DT_F64: memcpy(p, &v, 8); return;
    case KL_DT_I1: *(uint8_t *)p = v != 0; return;
    case KL_DT_I8:
    case KL_DT_I32:
    case KL_DT_I64: {
      int64_t i = kl_f64_to_i64_sat(v);
      int64_t lo = kl_dtype_int_min(dt), hi = kl_dtype_int_max(dt);
      if (i < lo) i = lo;
      if (i > hi) i = hi;
      kl_dtype_store_i64(dt, p, i);
      return;
    }
    default: return;
  }
}

double kl_dtype_round(kl_dtype dt, double v) {
  unsigned char buf[8];
  kl_dtype_store_f64(dt, buf, v);
  return kl_dtype_load_f64(dt, buf);
}

kl_dtype kl_contraction_dtype(kl_dtype in) {
  if (!kl_dtype_is_int(in)) return in;
  return in == KL_DT_I64 ? KL_DT_I64 : KL_DT_I32;
}
