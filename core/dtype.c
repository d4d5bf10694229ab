/* dtype.c — element types: f16 / bf16 conversions, dtype sizes, loads and stores
 * (see dtype.h). Both narrowing conversions (to f16, bf16) are one routine parameterised by
 * exponent and mantissa widths, working on the f64 bits; the widening ones and
 * kl_dtype_load_f64 are inline in dtype.h. */
#include "core/dtype.h"
#include <math.h>
#include <string.h>

static uint64_t f64_bits(double x) {
  uint64_t u;
  memcpy(&u, &x, 8);
  return u;
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

uint16_t kl_f64_to_f16(double x) { return narrow(x, 5, 10); }
uint16_t kl_f32_to_f16(float x) { return narrow((double)x, 5, 10); }
float kl_f16_to_f32(uint16_t h) { return (float)kl_f16_to_f64(h); }

uint16_t kl_f64_to_bf16(double x) { return narrow(x, 8, 7); }
uint16_t kl_f32_to_bf16(float x) { return narrow((double)x, 8, 7); }

/* ---------------------------------------------------------------- fp8
 * One description per format; encoding works on the value (frexp / ldexp are exact), not
 * on bits, so it is an independent check of the generated code's bit manipulation. */
typedef struct fp8_fmt {
  int mbits, bias;
  bool ieee;        /* inf and NaNs at the top exponent (e5m2) */
  bool fnuz;        /* 0x80 is the one NaN, no -0 */
  uint8_t max_code; /* magnitude code of the largest finite value */
} fp8_fmt;
static const fp8_fmt *fp8_of(kl_dtype dt) {
  static const fp8_fmt f[4] = {
    { 3, 7, false, false, 0x7e }, /* e4m3fn: S.1111.111 is NaN */
    { 2, 15, true, false, 0x7b }, /* e5m2: S.11110.11 */
    { 3, 8, false, true, 0x7f },  /* e4m3fnuz */
    { 2, 16, false, true, 0x7f }, /* e5m2fnuz */
  };
  return kl_dtype_is_fp8(dt) ? &f[dt - KL_DT_F8E4M3FN] : NULL;
}

double kl_fp8_to_f64(kl_dtype dt, uint8_t b) {
  const fp8_fmt *f = fp8_of(dt);
  if (!f) return 0;
  int ebits = 7 - f->mbits;
  int sign = b >> 7, e = (b >> f->mbits) & ((1 << ebits) - 1), m = b & ((1 << f->mbits) - 1);
  if (f->fnuz && b == 0x80) return NAN;
  if (!f->fnuz && !f->ieee && (b & 0x7f) == 0x7f) return sign ? -NAN : NAN;
  if (f->ieee && e == (1 << ebits) - 1) {
    double v = m ? NAN : INFINITY;
    return sign ? -v : v;
  }
  double v = e ? ldexp((double)((1 << f->mbits) | m), e - f->bias - f->mbits)
               : ldexp((double)m, 1 - f->bias - f->mbits);
  return sign ? -v : v;
}

double kl_fp8_max(kl_dtype dt) {
  const fp8_fmt *f = fp8_of(dt);
  return f ? kl_fp8_to_f64(dt, f->max_code) : 0;
}

uint8_t kl_f64_to_fp8(kl_dtype dt, double x) {
  const fp8_fmt *f = fp8_of(dt);
  if (!f) return 0;
  uint8_t sign = signbit(x) ? 0x80 : 0;
  if (isnan(x)) return f->fnuz ? 0x80 : f->ieee ? (uint8_t)(sign | 0x7e) : (uint8_t)(sign | 0x7f);
  uint8_t over = f->ieee ? 0x7c : f->max_code; /* inf, or saturate to max */
  double a = fabs(x), max = kl_fp8_to_f64(dt, f->max_code);
  uint8_t mag;
  if (a >= 2 * max) /* inf included */
    mag = over;
  else {
    int emin = 1 - f->bias, e;
    frexp(a, &e);                                       /* a = r * 2^e, r in [0.5, 1): the leading bit is 2^(e-1) */
    int q = (e - 1 < emin ? emin : e - 1) - f->mbits;   /* the quantum 2^q at a's exponent */
    double r = ldexp(a, -q), fl = floor(r), d = r - fl; /* exact: r < 2^(mbits+2) */
    if (d > 0.5 || (d == 0.5 && fmod(fl, 2.0) == 1.0)) fl += 1;
    double v = ldexp(fl, q);
    if (v > max)
      mag = over;
    else if (v < ldexp(1.0, emin)) /* subnormal (or zero): v / 2^(emin - mbits) */
      mag = (uint8_t)ldexp(v, f->mbits - emin);
    else {
      int ve;
      double vr = frexp(v, &ve); /* v = vr * 2^ve */
      int mant = (int)ldexp(vr, f->mbits + 1) - (1 << f->mbits);
      mag = (uint8_t)(((ve - 1 + f->bias) << f->mbits) | mant);
    }
  }
  if (f->fnuz && mag == 0) return 0;
  return (uint8_t)(sign | mag);
}

double kl_round_f16(double x) { return kl_f16_to_f64(kl_f64_to_f16(x)); }
double kl_round_bf16(double x) { return kl_bf16_to_f64(kl_f64_to_bf16(x)); }
double kl_round_f32(double x) { return (double)(float)x; }

/* ---------------------------------------------------------------- dtypes */

static const char *const dtype_names[KL_DT_COUNT] = {
  [KL_DT_F32] = "f32",
  [KL_DT_F16] = "f16",
  [KL_DT_BF16] = "bf16",
  [KL_DT_I8] = "i8",
  [KL_DT_I32] = "i32",
  [KL_DT_F64] = "f64",
  [KL_DT_I64] = "i64",
  [KL_DT_I1] = "i1",
  [KL_DT_F8E4M3FN] = "f8e4m3fn",
  [KL_DT_F8E5M2] = "f8e5m2",
  [KL_DT_F8E4M3FNUZ] = "f8e4m3fnuz",
  [KL_DT_F8E5M2FNUZ] = "f8e5m2fnuz",
  [KL_DT_U8] = "u8",
};
static const size_t dtype_sizes[KL_DT_COUNT] = {
  [KL_DT_F32] = 4,        [KL_DT_F16] = 2,        [KL_DT_BF16] = 2, [KL_DT_I8] = 1,       [KL_DT_I32] = 4,
  [KL_DT_F64] = 8,        [KL_DT_I64] = 8,        [KL_DT_I1] = 1,   [KL_DT_F8E4M3FN] = 1, [KL_DT_F8E5M2] = 1,
  [KL_DT_F8E4M3FNUZ] = 1, [KL_DT_F8E5M2FNUZ] = 1, [KL_DT_U8] = 1,
};

bool kl_dtype_valid(kl_dtype dt) { return dt >= 0 && dt < KL_DT_COUNT; }
const char *kl_dtype_name(kl_dtype dt) { return kl_dtype_valid(dt) ? dtype_names[dt] : "?"; }
size_t kl_dtype_size(kl_dtype dt) { return kl_dtype_valid(dt) ? dtype_sizes[dt] : 0; }

kl_dtype kl_dtype_from_name(const char *name) {
  if (!name) return KL_DT_NONE;
  for (int i = 0; i < KL_DT_COUNT; i++)
    if (strcmp(name, dtype_names[i]) == 0) return (kl_dtype)i;
  if (strcmp(name, "ui8") == 0) return KL_DT_U8; /* MLIR's spelling */
  return KL_DT_NONE;
}

bool kl_dtype_is_fp8(kl_dtype dt) { return dt >= KL_DT_F8E4M3FN && dt <= KL_DT_F8E5M2FNUZ; }
bool kl_dtype_is_float(kl_dtype dt) {
  return dt == KL_DT_F32 || dt == KL_DT_F16 || dt == KL_DT_BF16 || dt == KL_DT_F64 || kl_dtype_is_fp8(dt);
}
bool kl_dtype_is_int(kl_dtype dt) {
  return dt == KL_DT_I8 || dt == KL_DT_I32 || dt == KL_DT_I64 || dt == KL_DT_I1 || dt == KL_DT_U8;
}
bool kl_dtype_is_unsigned(kl_dtype dt) { return dt == KL_DT_U8 || dt == KL_DT_I1; }
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
    case KL_DT_U8: return UINT8_MAX;
    default: return 0;
  }
}

int64_t kl_f64_to_i64_sat(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775808.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)v;
}

int64_t kl_dtype_load_i64(kl_dtype dt, const void *p) {
  switch (dt) {
    case KL_DT_I8: return *(const int8_t *)p;
    case KL_DT_U8: return *(const uint8_t *)p;
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
    case KL_DT_I8:
    case KL_DT_U8: {
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
    case KL_DT_F8E4M3FN:
    case KL_DT_F8E5M2:
    case KL_DT_F8E4M3FNUZ:
    case KL_DT_F8E5M2FNUZ: *(uint8_t *)p = kl_f64_to_fp8(dt, v); return;
    case KL_DT_I8:
    case KL_DT_U8:
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
