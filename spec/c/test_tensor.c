/* test_tensor.c — host tensors: f16/bf16 conversions, dtypes, layouts, creation, rand,
 * element access, views, printing and comparison (runtime/tensor.h, core/dtype.h, rng.h). */
#include "core/dtype.h"
#include "core/type.h"
#include "runtime/rng.h"
#include "runtime/tensor.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static uint16_t u16(double x) { return kl_f64_to_f16(x); }
static uint16_t b16(double x) { return kl_f64_to_bf16(x); }
static float f32_of_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint32_t bits_of_f32(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static double f64_of_bits(uint64_t u) {
  double d;
  memcpy(&d, &u, 8);
  return d;
}

/* Reference f32 -> bf16 (the usual bit trick, RNE; NaN handled separately). */
static uint16_t ref_bf16(float f) {
  uint32_t u = bits_of_f32(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static void test_half(void) {
  /* f16 exact values and limits */
  CHECK(u16(1.0) == 0x3C00, "%04x", u16(1.0));
  CHECK(u16(-2.0) == 0xC000, "%04x", u16(-2.0));
  CHECK(u16(65504.0) == 0x7BFF, "max");
  CHECK(u16(65519.99) == 0x7BFF, "just below the overflow tie");
  CHECK(u16(65520.0) == 0x7C00, "tie at the top rounds to even = inf: %04x", u16(65520.0));
  CHECK(u16(1e10) == 0x7C00 && u16(-1e10) == 0xFC00, "overflow -> inf");
  CHECK(u16(INFINITY) == 0x7C00 && u16(-INFINITY) == 0xFC00, "inf");
  CHECK(u16(0.0) == 0x0000 && u16(-0.0) == 0x8000, "signed zero");
  uint16_t hn = u16(NAN);
  CHECK((hn & 0x7C00) == 0x7C00 && (hn & 0x3FF) != 0, "nan %04x", hn);
  CHECK(isnan(kl_f16_to_f64(0x7E00)) && isnan(kl_f16_to_f32(0xFE01)), "nan back");
  CHECK(kl_f16_to_f64(0x7C00) == INFINITY && kl_f16_to_f64(0xFC00) == -INFINITY, "inf back");
  CHECK(signbit(kl_f16_to_f64(0x8000)) && kl_f16_to_f64(0x8000) == 0, "-0 back");
  /* round to nearest even at ties */
  CHECK(u16(1.0 + ldexp(1, -11)) == 0x3C00, "tie to even (down) %04x", u16(1.0 + ldexp(1, -11)));
  CHECK(u16(1.0 + 3 * ldexp(1, -11)) == 0x3C02, "tie to even (up) %04x", u16(1.0 + 3 * ldexp(1, -11)));
  CHECK(u16(1.0 + ldexp(1, -11) + ldexp(1, -30)) == 0x3C01, "above tie rounds up");
  CHECK(u16(1.0 + ldexp(1, -11) - ldexp(1, -30)) == 0x3C00, "below tie rounds down");
  /* no double rounding: f64 just above a tie that f32 would round onto the tie */
  CHECK(u16(1.0 + ldexp(1, -11) + ldexp(1, -40)) == 0x3C01, "f64 direct, no double rounding");
  CHECK(kl_f32_to_f16((float)(1.0 + ldexp(1, -11) + ldexp(1, -40))) == 0x3C00, "via f32 the tie goes to even");
  /* subnormals */
  CHECK(u16(ldexp(1, -24)) == 0x0001, "min subnormal");
  CHECK(u16(ldexp(1, -25)) == 0x0000, "half of min subnormal ties to 0");
  CHECK(u16(-ldexp(1, -25)) == 0x8000, "-tiny -> -0");
  CHECK(u16(1.5 * ldexp(1, -25)) == 0x0001, "0.75 ulp -> 1");
  CHECK(u16(3 * ldexp(1, -25)) == 0x0002, "1.5 ulp ties to even 2");
  CHECK(u16(5 * ldexp(1, -25)) == 0x0002, "2.5 ulp ties to even 2");
  CHECK(u16(1023 * ldexp(1, -24)) == 0x03FF, "max subnormal");
  CHECK(u16(1023.5 * ldexp(1, -24)) == 0x0400, "rounds up into the min normal");
  CHECK(u16(ldexp(1, -14)) == 0x0400, "min normal");
  CHECK(kl_f16_to_f64(0x0001) == ldexp(1, -24) && kl_f16_to_f64(0x03FF) == 1023 * ldexp(1, -24), "subnormals back");
  CHECK(u16(ldexp(1, -40)) == 0 && u16(f64_of_bits(1)) == 0, "far below -> 0");
  /* round trips of every f16 pattern */
  int bad = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    double d = kl_f16_to_f64((uint16_t)h);
    float f = kl_f16_to_f32((uint16_t)h);
    if (isnan(d)) {
      if (!isnan(f) || !isnan(kl_f16_to_f64(u16(d)))) bad++;
      continue;
    }
    if (u16(d) != h || kl_f32_to_f16(f) != h || (double)f != d) bad++;
  }
  CHECK(bad == 0, "%d f16 patterns do not round-trip", bad);
  /* every tie between neighbouring finite f16 values rounds to the even one */
  bad = 0;
  for (uint32_t h = 0; h < 0x7BFF; h++) {
    double lo = kl_f16_to_f64((uint16_t)h), hi = kl_f16_to_f64((uint16_t)(h + 1));
    double mid = (lo + hi) / 2;
    uint16_t want = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
    if (u16(mid) != want || u16(-mid) != (want | 0x8000)) bad++;
    if (u16(nextafter(mid, 0)) != h || u16(nextafter(mid, 1e9)) != h + 1) bad++;
  }
  CHECK(bad == 0, "%d f16 ties/near-ties wrong", bad);
#ifdef __FLT16_MAX__
  /* against the compiler's _Float16 conversions on random f32 / f64 inputs */
  kl_rng r;
  kl_rng_seed(&r, 42, 7);
  bad = 0;
  for (int i = 0; i < 300000; i++) {
    float f = f32_of_bits(kl_rng_u32(&r));
    if (isnan(f)) continue;
    _Float16 hf = (_Float16)f;
    uint16_t want;
    memcpy(&want, &hf, 2);
    if (kl_f32_to_f16(f) != want) bad++;
    double d = ldexp(kl_rng_uniform(&r) - 0.5, (int)kl_rng_below(&r, 60) - 35);
    hf = (_Float16)d;
    memcpy(&want, &hf, 2);
    if (kl_f64_to_f16(d) != want) bad++;
  }
  CHECK(bad == 0, "%d conversions differ from _Float16", bad);
#endif
  /* bf16 */
  CHECK(b16(1.0) == 0x3F80 && b16(-1.0) == 0xBF80, "bf16 1");
  CHECK(b16(1.0 + ldexp(1, -8)) == 0x3F80, "bf16 tie down to even");
  CHECK(b16(1.0 + 3 * ldexp(1, -8)) == 0x3F82, "bf16 tie up to even");
  CHECK(b16(1.0 + ldexp(1, -8) + ldexp(1, -40)) == 0x3F81, "bf16 from f64 without double rounding");
  CHECK(kl_f32_to_bf16(f32_of_bits(0x7F7FFFFF)) == 0x7F80, "FLT_MAX rounds to inf");
  CHECK(kl_f32_to_bf16(f32_of_bits(0x7F7F7FFF)) == 0x7F7F, "just below -> max bf16");
  CHECK(b16(ldexp(1, -133)) == 0x0001 && b16(ldexp(1, -134)) == 0x0000 && b16(3 * ldexp(1, -134)) == 0x0002,
        "bf16 subnormals");
  CHECK(kl_bf16_to_f64(0x0001) == ldexp(1, -133), "bf16 subnormal back");
  CHECK(b16(INFINITY) == 0x7F80 && b16(-INFINITY) == 0xFF80 && b16(-0.0) == 0x8000, "bf16 inf / -0");
  uint16_t bn = b16(NAN);
  CHECK((bn & 0x7F80) == 0x7F80 && (bn & 0x7F), "bf16 nan %04x", bn);
  CHECK(isnan(kl_bf16_to_f32(0x7FC0)) && isnan(kl_bf16_to_f64(0xFFC1)), "bf16 nan back");
  bad = 0;
  kl_rng r2;
  kl_rng_seed(&r2, 1, 1);
  for (int i = 0; i < 300000; i++) {
    float f = f32_of_bits(kl_rng_u32(&r2));
    uint16_t got = kl_f32_to_bf16(f);
    if (isnan(f)) {
      if ((got & 0x7F80) != 0x7F80 || !(got & 0x7F)) bad++;
      continue;
    }
    if (got != ref_bf16(f)) bad++;
  }
  for (uint32_t h = 0; h < 65536; h++) {
    float f = kl_bf16_to_f32((uint16_t)h);
    if (!isnan(f) && (kl_f32_to_bf16(f) != h || b16(kl_bf16_to_f64((uint16_t)h)) != h)) bad++;
  }
  CHECK(bad == 0, "%d bf16 conversions wrong", bad);
  CHECK(kl_round_f16(0.1) == kl_f16_to_f64(u16(0.1)) && kl_round_bf16(0.1) != 0.1 && kl_round_f32(0.1) == (double)0.1f,
        "round helpers");
  GROUP("f16/bf16 conversions");
}

/* fp8: every code decodes and re-encodes to itself (NaNs to the format's NaN), the
 * limits, ties to even, saturation / inf, subnormals and the fnuz zero. */
static void test_fp8(void) {
  const kl_dtype f8[4] = { KL_DT_F8E4M3FN, KL_DT_F8E5M2, KL_DT_F8E4M3FNUZ, KL_DT_F8E5M2FNUZ };
  const double max[4] = { 448, 57344, 240, 57344 }, minsub[4] = { 0x1p-9, 0x1p-16, 0x1p-10, 0x1p-17 };
  for (int f = 0; f < 4; f++) {
    kl_dtype dt = f8[f];
    CHECK(kl_dtype_size(dt) == 1 && kl_dtype_is_float(dt) && kl_dtype_is_fp8(dt), "%s", kl_dtype_name(dt));
    CHECK(kl_fp8_max(dt) == max[f], "%s max %g", kl_dtype_name(dt), kl_fp8_max(dt));
    int nans = 0, infs = 0;
    double prev = -INFINITY;
    for (int c = 0; c < 256; c++) {
      double v = kl_fp8_to_f64(dt, (uint8_t)c);
      if (isnan(v)) {
        nans++;
        CHECK(isnan(kl_fp8_to_f64(dt, kl_f64_to_fp8(dt, v))), "%s nan %02x", kl_dtype_name(dt), c);
        continue;
      }
      if (isinf(v)) infs++;
      uint8_t back = kl_f64_to_fp8(dt, v);
      CHECK(back == c || (v == 0 && kl_fp8_to_f64(dt, back) == 0), "%s code %02x -> %g -> %02x", kl_dtype_name(dt), c,
            v, back);
      /* the midpoint to the next code up rounds to the even one of the two */
      if (c < 0x7f && !isinf(v)) {
        double w = kl_fp8_to_f64(dt, (uint8_t)(c + 1));
        if (!isnan(w) && !isinf(w) && v >= 0) {
          uint8_t t = kl_f64_to_fp8(dt, (v + w) / 2);
          uint8_t even = (c & 1) ? (uint8_t)(c + 1) : (uint8_t)c;
          CHECK(t == even, "%s tie %g..%g -> %02x", kl_dtype_name(dt), v, w, t);
          CHECK(kl_f64_to_fp8(dt, (v + w) / 2 * (1 - 1e-9)) == c || v == 0, "%s below the tie", kl_dtype_name(dt));
        }
      }
      if (c < 0x80 && !isinf(v)) {
        CHECK(v > prev, "%s increasing at %02x", kl_dtype_name(dt), c);
        prev = v;
      }
    }
    CHECK(nans ==
                  (f == 0       ? 2
                       : f == 1 ? 6
                                : 1) &&
              infs == (f == 1 ? 2 : 0),
          "%s: %d NaNs %d infs", kl_dtype_name(dt), nans, infs);
    CHECK(kl_dtype_round(dt, minsub[f]) == minsub[f] && kl_dtype_round(dt, minsub[f] * 0.5) == 0 &&
              kl_dtype_round(dt, minsub[f] * 0.51) == minsub[f] && kl_dtype_round(dt, minsub[f] * 1.5) == 2 * minsub[f],
          "%s subnormals", kl_dtype_name(dt));
    double over = kl_dtype_round(dt, max[f] * 1.2), inf = kl_dtype_round(dt, INFINITY);
    if (dt == KL_DT_F8E5M2)
      CHECK(isinf(over) && over > 0 && isinf(inf) && kl_dtype_round(dt, -1e9) == -INFINITY, "e5m2 overflow -> inf");
    else
      CHECK(over == max[f] && inf == max[f] && kl_dtype_round(dt, -1e30) == -max[f], "%s saturates", kl_dtype_name(dt));
    CHECK(isnan(kl_dtype_round(dt, NAN)) && kl_dtype_round(dt, 1.0) == 1.0 && kl_dtype_round(dt, -3.5) == -3.5,
          "%s nan / exact", kl_dtype_name(dt));
  }
  CHECK(kl_f64_to_fp8(KL_DT_F8E4M3FN, 1.0) == 0x38 && kl_f64_to_fp8(KL_DT_F8E4M3FN, 448) == 0x7e &&
            kl_f64_to_fp8(KL_DT_F8E4M3FN, NAN) == 0x7f && kl_f64_to_fp8(KL_DT_F8E4M3FN, -0.0) == 0x80,
        "e4m3fn codes");
  CHECK(kl_f64_to_fp8(KL_DT_F8E5M2, 1.0) == 0x3c && kl_f64_to_fp8(KL_DT_F8E5M2, -INFINITY) == 0xfc, "e5m2 codes");
  CHECK(kl_f64_to_fp8(KL_DT_F8E4M3FNUZ, 1.0) == 0x40 && kl_f64_to_fp8(KL_DT_F8E4M3FNUZ, NAN) == 0x80 &&
            kl_f64_to_fp8(KL_DT_F8E4M3FNUZ, -0.0) == 0 && kl_f64_to_fp8(KL_DT_F8E4M3FNUZ, -1e-9) == 0,
        "e4m3fnuz codes (no -0)");
  CHECK(kl_f64_to_fp8(KL_DT_F8E5M2FNUZ, 1.0) == 0x40 && kl_f64_to_fp8(KL_DT_F8E5M2FNUZ, 57344) == 0x7f,
        "e5m2fnuz codes");
  CHECK(kl_f64_to_fp8(KL_DT_F8E4M3FN, 464) == 0x7e && kl_f64_to_fp8(KL_DT_F8E4M3FN, 1.0625) == 0x38 &&
            kl_f64_to_fp8(KL_DT_F8E4M3FN, 1.1875) == 0x3a,
        "e4m3fn ties to even");
  GROUP("fp8 conversions");
}

static void test_dtypes(void) {
  const char *names[] = { "f32", "f16",      "bf16",   "i8",         "i32",        "f64", "i64",
                          "i1",  "f8e4m3fn", "f8e5m2", "f8e4m3fnuz", "f8e5m2fnuz", "u8" };
  for (int i = 0; i < 13; i++) {
    kl_dtype d = kl_dtype_from_name(names[i]);
    CHECK(kl_dtype_valid(d) && strcmp(kl_dtype_name(d), names[i]) == 0, "%s", names[i]);
  }
  CHECK(kl_dtype_from_name("f8") == KL_DT_NONE && kl_dtype_from_name(NULL) == KL_DT_NONE, "unknown dtype");
  CHECK(strcmp(kl_dtype_name((kl_dtype)99), "?") == 0, "bad dtype name");
  CHECK(kl_dtype_size(KL_DT_BF16) == 2 && kl_dtype_size(KL_DT_I8) == 1 && kl_dtype_size(KL_DT_F64) == 8, "sizes");
  CHECK(kl_dtype_is_float(KL_DT_BF16) && !kl_dtype_is_float(KL_DT_I32) && kl_dtype_is_int(KL_DT_I1), "kinds");
  /* one element-type enum: every dtype is the scalar type kind of the same name */
  kl_ctx *ctx = kl_ctx_create();
  for (int i = 0; i < KL_DT_COUNT; i++) {
    const kl_type *ty = kl_type_scalar(ctx, (kl_type_kind)i);
    CHECK(ty && strcmp(kl_scalar_name((kl_type_kind)i), kl_dtype_name((kl_dtype)i)) == 0 &&
              strcmp(ty->text, kl_dtype_name((kl_dtype)i)) == 0 && kl_type_dtype(ty) == (kl_dtype)i &&
              kl_type_is_float(ty) == kl_dtype_is_float((kl_dtype)i) &&
              kl_type_is_int(ty) == kl_dtype_is_int((kl_dtype)i) &&
              kl_type_bits(ty) == (i == KL_DT_I1 ? 1 : 8 * (int)kl_dtype_size((kl_dtype)i)),
          "dtype %d is the type kind %s", i, kl_dtype_name((kl_dtype)i));
  }
  CHECK(kl_type_dtype(kl_type_index(ctx)) == KL_DT_NONE && kl_type_is_int(kl_type_index(ctx)) &&
            kl_type_is_scalar(kl_type_index(ctx)) && kl_type_dtype(kl_type_token(ctx)) == KL_DT_NONE &&
            !kl_type_is_scalar(kl_type_token(ctx)) && kl_type_dtype(NULL) == KL_DT_NONE &&
            kl_scalar_kind_from_name("index", 5) == KL_TY_INDEX && kl_scalar_kind_from_name("bf16", 4) == KL_TY_BF16 &&
            kl_scalar_name(KL_TY_TENSOR) == NULL && kl_type_scalar(ctx, KL_TY_VECTOR) == NULL,
        "index and token are not dtypes");
  kl_ctx_destroy(ctx);
  /* store rules */
  CHECK(kl_dtype_round(KL_DT_I8, 300.7) == 127 && kl_dtype_round(KL_DT_I8, -300) == -128, "i8 saturates");
  CHECK(kl_dtype_round(KL_DT_I8, 3.9) == 3 && kl_dtype_round(KL_DT_I8, -3.9) == -3, "truncates toward zero");
  CHECK(kl_dtype_round(KL_DT_I32, NAN) == 0 && kl_dtype_round(KL_DT_I32, 1e20) == 2147483647.0, "i32 nan / sat");
  CHECK(kl_dtype_round(KL_DT_I1, 0.2) == 1 && kl_dtype_round(KL_DT_I1, 0) == 0, "i1");
  CHECK(kl_dtype_round(KL_DT_F32, 0.1) == (double)0.1f, "f32 rounding");
  unsigned char buf[8];
  kl_dtype_store_i64(KL_DT_I8, buf, 300);
  CHECK(kl_dtype_load_i64(KL_DT_I8, buf) == 44, "i8 wraps from int64");
  kl_dtype_store_i64(KL_DT_I32, buf, (int64_t)1 << 32 | 5);
  CHECK(kl_dtype_load_i64(KL_DT_I32, buf) == 5, "i32 wraps");
  kl_dtype_store_i64(KL_DT_I64, buf, ((int64_t)1 << 60) + 1);
  CHECK(kl_dtype_load_i64(KL_DT_I64, buf) == ((int64_t)1 << 60) + 1, "i64 exact");
  kl_dtype_store_f64(KL_DT_F16, buf, 65520);
  CHECK(isinf(kl_dtype_load_f64(KL_DT_F16, buf)), "f16 store overflow");
  CHECK(kl_f64_to_i64_sat(1e30) == INT64_MAX && kl_f64_to_i64_sat(-1e30) == INT64_MIN && kl_f64_to_i64_sat(-2.5) == -2,
        "sat");
  /* u8: unsigned loads, float stores truncate and saturate to 0..255, int64 stores wrap */
  CHECK(kl_dtype_from_name("ui8") == KL_DT_U8 && kl_dtype_is_int(KL_DT_U8) && kl_dtype_is_unsigned(KL_DT_U8) &&
            !kl_dtype_is_unsigned(KL_DT_I8) && kl_dtype_int_min(KL_DT_U8) == 0 && kl_dtype_int_max(KL_DT_U8) == 255,
        "u8 kind and range");
  for (int c = 0; c < 256; c++) {
    unsigned char b = (unsigned char)c;
    CHECK(kl_dtype_load_f64(KL_DT_U8, &b) == c && kl_dtype_load_i64(KL_DT_U8, &b) == c, "u8 code %d loads", c);
  }
  CHECK(kl_dtype_round(KL_DT_U8, 300.7) == 255 && kl_dtype_round(KL_DT_U8, -3.9) == 0 &&
            kl_dtype_round(KL_DT_U8, 200.9) == 200 && kl_dtype_round(KL_DT_U8, NAN) == 0,
        "u8 float stores saturate");
  kl_dtype_store_i64(KL_DT_U8, buf, -1);
  CHECK(kl_dtype_load_i64(KL_DT_U8, buf) == 255, "u8 wraps from int64");
  kl_dtype_store_i64(KL_DT_U8, buf, 300);
  CHECK(kl_dtype_load_i64(KL_DT_U8, buf) == 44, "u8 wraps from int64 (300)");
  GROUP("dtypes and scalar store rules");
}

static void test_layouts(void) {
  char err[256];
  int perm[8];
  int64_t shape[4] = { 2, 3, 4, 5 }, st[4];
  CHECK(kl_layout_perm("NHWC", 4, perm, err, sizeof err) == 0 && perm[0] == 0 && perm[1] == 2 && perm[2] == 3 &&
            perm[3] == 1,
        "NHWC perm");
  CHECK(kl_layout_strides("NHWC", 4, shape, st, err, sizeof err) == 0 && st[0] == 60 && st[1] == 1 && st[2] == 15 &&
            st[3] == 3,
        "NHWC strides %lld %lld %lld %lld", (long long)st[0], (long long)st[1], (long long)st[2], (long long)st[3]);
  CHECK(kl_layout_strides("NCHW", 4, shape, st, err, sizeof err) == 0 && st[0] == 60 && st[1] == 20 && st[2] == 5 &&
            st[3] == 1,
        "NCHW");
  CHECK(kl_layout_strides("KYXC", 4, shape, st, err, sizeof err) == 0 && st[1] == 1 && st[3] == 3, "KYXC");
  CHECK(kl_layout_strides("KCYX", 4, shape, st, err, sizeof err) == 0 && st[3] == 1 && st[0] == 60, "KCYX");
  CHECK(kl_layout_strides("NHWK", 4, shape, st, err, sizeof err) == 0 && st[1] == 1, "NHWK");
  CHECK(kl_layout_strides("NKHW", 4, shape, st, err, sizeof err) == 0 && st[3] == 1, "NKHW");
  CHECK(kl_layout_strides("CHWN", 4, shape, st, err, sizeof err) == 0 && st[0] == 1 && st[1] == 40 && st[2] == 10 &&
            st[3] == 2,
        "CHWN");
  CHECK(kl_layout_strides("row_major", 4, shape, st, err, sizeof err) == 0 && st[3] == 1 && st[0] == 60, "row_major");
  CHECK(kl_layout_strides("col_major", 4, shape, st, err, sizeof err) == 0 && st[0] == 1 && st[3] == 24, "col_major");
  CHECK(kl_layout_strides("0,2,3,1", 4, shape, st, err, sizeof err) == 0 && st[1] == 1 && st[3] == 3, "numeric perm");
  CHECK(kl_layout_strides("[0, 2, 3, 1]", 4, shape, st, err, sizeof err) == 0 && st[1] == 1 && st[3] == 3,
        "bracketed perm");
  CHECK(kl_layout_strides("NWC", 3, shape, st, err, sizeof err) == 0 && st[1] == 1 && st[2] == 3, "NWC");
  CHECK(kl_layout_perm("NHWX", 4, perm, err, sizeof err) != 0 && strstr(err, "NHWX"), "unknown letters: %s", err);
  CHECK(kl_layout_perm("NHW", 4, perm, err, sizeof err) != 0 && strstr(err, "rank-4"), "wrong rank: %s", err);
  CHECK(kl_layout_perm("NNHW", 4, perm, err, sizeof err) != 0, "repeated letter");
  CHECK(kl_layout_perm("0,1,1,2", 4, perm, err, sizeof err) != 0 && strstr(err, "permutation"), "not a perm: %s", err);
  CHECK(kl_layout_perm("0,1,2", 4, perm, err, sizeof err) != 0, "short perm");
  CHECK(kl_layout_perm("0,1,2,3,4", 4, perm, err, sizeof err) != 0, "long perm");
  CHECK(kl_layout_perm("0,a", 2, perm, err, sizeof err) != 0, "garbage perm");
  CHECK(kl_layout_perm("0,1,2,99999999999", 4, perm, err, sizeof err) != 0 && strstr(err, "not a permutation"), "%s",
        err);
  /* strides -> perm / description */
  kl_layout_strides("NHWC", 4, shape, st, err, sizeof err);
  CHECK(kl_strides_to_perm(4, shape, st, perm) && perm[0] == 0 && perm[1] == 2 && perm[2] == 3 && perm[3] == 1,
        "to_perm");
  int64_t padded[4] = { 100, 25, 5, 1 };
  CHECK(!kl_strides_to_perm(4, shape, padded, NULL), "padded is not dense");
  CHECK(kl_strides_nonoverlapping(4, shape, padded), "padded does not overlap");
  int64_t ovl[4] = { 60, 20, 5, 2 };
  CHECK(!kl_strides_nonoverlapping(4, shape, ovl), "overlap detected");
  int64_t s1[4] = { 1, 4, 4, 1 }, s1b[4] = { 1, 99, 4, 1 };
  int64_t shp1[4] = { 1, 1, 3, 4 };
  CHECK(kl_strides_equivalent(4, shp1, s1, s1b), "size-1 dims ignored");
  /* as_layout round trip */
  kl_tensor *t = kl_tensor_rand(KL_DT_F32, 4, shape, NULL, 5, KL_DIST_UNIFORM, err, sizeof err);
  kl_tensor *nhwc = kl_tensor_as_layout(t, "NHWC", err, sizeof err);
  CHECK(nhwc && nhwc->strides[1] == 1 && !kl_tensor_same_layout(t, nhwc) && !kl_tensor_is_row_major(nhwc),
        "as_layout NHWC");
  bool phys_ok = true;
  const float *raw = nhwc->data;
  for (int64_t n = 0; n < 2; n++)
    for (int64_t c = 0; c < 3; c++)
      for (int64_t h = 0; h < 4; h++)
        for (int64_t w = 0; w < 5; w++) {
          int64_t idx[4] = { n, c, h, w };
          if ((double)raw[((n * 4 + h) * 5 + w) * 3 + c] != kl_tensor_get(t, idx)) phys_ok = false;
        }
  CHECK(phys_ok, "NHWC memory order");
  char lb[128];
  CHECK(strcmp(kl_tensor_layout_str(nhwc, lb, sizeof lb), "perm=[0,2,3,1]") == 0, "%s", lb);
  CHECK(strcmp(kl_tensor_layout_str(t, lb, sizeof lb), "row_major") == 0, "%s", lb);
  kl_tensor *back = kl_tensor_as_layout(nhwc, "row_major", err, sizeof err);
  CHECK(back && kl_tensor_same_layout(back, t) && memcmp(back->data, t->data, t->nbytes) == 0, "round trip bitwise");
  kl_tensor *pt = kl_tensor_with_strides(t, padded, err, sizeof err);
  CHECK(pt && pt->nbytes == (size_t)(1 * 100 + 2 * 25 + 3 * 5 + 4 + 1) * 4, "padded alloc %zu", pt ? pt->nbytes : 0);
  CHECK(pt && strncmp(kl_tensor_layout_str(pt, lb, sizeof lb), "strides=[100,25,5,1]", 20) == 0, "%s", lb);
  kl_compare_result cr;
  CHECK(kl_tensor_compare(pt, t, 0, 0, &cr, err, sizeof err) == 0 && cr.mismatches == 0, "padded copy equal");
  kl_tensor *bad = kl_tensor_as_layout(t, "NHWX", err, sizeof err);
  CHECK(!bad && strstr(err, "NHWX"), "as_layout error: %s", err);
  int64_t zs[2] = { 0, 1 }, s23[2] = { 2, 3 };
  bad = kl_tensor_zeros(KL_DT_F32, 2, s23, zs, err, sizeof err);
  CHECK(!bad && strstr(err, "overlap"), "broadcast strides rejected for allocation: %s", err);
  kl_tensor_release(t);
  kl_tensor_release(nhwc);
  kl_tensor_release(back);
  kl_tensor_release(pt);
  GROUP("layouts, as_layout round trip");
}

static int device_freed;
static void fake_device_free(void *device, void *device_ptr) {
  if (device == &device_freed && device_ptr == (void *)0x1234) device_freed++;
}

static void test_create_access(void) {
  char err[256];
  int64_t s23[2] = { 2, 3 };
  double v[6] = { 1, 2, 3, 4, 5, 6 };
  kl_tensor *t = kl_tensor_from_f64(KL_DT_F32, 2, s23, NULL, v, err, sizeof err);
  int64_t i12[2] = { 1, 2 }, i01[2] = { 0, 1 };
  CHECK(kl_tensor_get(t, i12) == 6 && kl_tensor_get(t, i01) == 2 && kl_tensor_numel(t) == 6, "from_f64");
  kl_tensor_set(t, i01, 0.1);
  CHECK(kl_tensor_get(t, i01) == (double)0.1f && kl_tensor_get_flat(t, 1) == (double)0.1f, "set rounds to f32");
  kl_tensor_set_flat(t, 5, -7);
  CHECK(kl_tensor_get(t, i12) == -7, "set_flat");
  int64_t bad_idx[2] = { 2, 0 };
  CHECK(kl_tensor_check_index(t, 2, bad_idx, err, sizeof err) != 0 && strstr(err, "[2,0]") && strstr(err, "[2,3]"),
        "%s", err);
  CHECK(kl_tensor_check_index(t, 1, bad_idx, err, sizeof err) != 0 && strstr(err, "1 indices"), "%s", err);
  CHECK(kl_tensor_check_index(t, 2, i12, err, sizeof err) == 0, "in bounds");
  /* NHWC-strided creation keeps logical order */
  int64_t shp[4] = { 1, 2, 2, 3 }, st[4];
  kl_layout_strides("NHWC", 4, shp, st, err, sizeof err);
  double vals[12];
  for (int i = 0; i < 12; i++) vals[i] = i;
  kl_tensor *n = kl_tensor_from_f64(KL_DT_F16, 4, shp, st, vals, err, sizeof err);
  double out[12];
  kl_tensor_to_f64(n, out);
  bool ok = true;
  for (int i = 0; i < 12; i++) ok = ok && out[i] == i;
  CHECK(ok, "to_f64 in logical order from NHWC");
  int64_t un[4];
  kl_tensor_unravel(n, 7, un);
  CHECK(un[0] == 0 && un[1] == 1 && un[2] == 0 && un[3] == 1, "unravel");
  int64_t big[2] = { ((int64_t)1 << 60) + 1, -5 };
  int64_t s2[1] = { 2 };
  kl_tensor *ti = kl_tensor_from_i64(KL_DT_I64, 1, s2, NULL, big, err, sizeof err);
  int64_t i0[1] = { 0 }, got[2];
  kl_tensor_to_i64(ti, got);
  CHECK(kl_tensor_get_i64(ti, i0) == big[0] && got[1] == -5, "i64 exact");
  kl_tensor *f = kl_tensor_full(KL_DT_BF16, 2, s23, NULL, 0.1, err, sizeof err);
  CHECK(kl_tensor_get(f, i12) == kl_round_bf16(0.1), "full bf16");
  kl_tensor *o = kl_tensor_ones(KL_DT_I8, 2, s23, NULL, err, sizeof err);
  CHECK(kl_tensor_get_i64(o, i12) == 1, "ones");
  kl_tensor *mz = kl_tensor_full(KL_DT_F32, 2, s23, NULL, -0.0, err, sizeof err);
  CHECK(signbit(kl_tensor_get(mz, i01)), "full -0");
  /* bad creation never crashes */
  int64_t neg[2] = { 2, -1 };
  CHECK(!kl_tensor_zeros(KL_DT_F32, 2, neg, NULL, err, sizeof err) && strstr(err, "negative"), "%s", err);
  CHECK(!kl_tensor_zeros((kl_dtype)42, 2, s23, NULL, err, sizeof err) && strstr(err, "dtype"), "%s", err);
  CHECK(!kl_tensor_zeros(KL_DT_F32, 9, s23, NULL, err, sizeof err) && strstr(err, "rank"), "%s", err);
  int64_t huge[3] = { 1 << 30, 1 << 30, 1 << 30 };
  CHECK(!kl_tensor_zeros(KL_DT_F32, 3, huge, NULL, err, sizeof err), "huge: %s", err);
  /* host tensors have the IR's shape limits (core/shape.h's kl_shape_check), also for
   * shapes without elements, so every tensor has a tensor type */
  int64_t ones9[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
  kl_tensor *r8 = kl_tensor_zeros(KL_DT_F32, KL_MAX_RANK, ones9, NULL, err, sizeof err);
  CHECK(r8 && r8->rank == 8, "rank 8: %s", err);
  kl_tensor_release(r8);
  CHECK(!kl_tensor_zeros(KL_DT_F32, 9, ones9, NULL, err, sizeof err) &&
            !strcmp(err, "tensor: rank 9 out of range (0 to 8)"),
        "%s", err);
  int64_t wide0[2] = { 0, ((int64_t)1 << 40) + 1 };
  CHECK(!kl_tensor_zeros(KL_DT_F32, 2, wide0, NULL, err, sizeof err) &&
            strstr(err, "tensor: dimension out of range: size 1099511627777 of dim 1"),
        "zero elements, size past 2^40: %s", err);
  int64_t sq[2] = { 2, 2 }, st2[2] = { ((int64_t)1 << 53) + 1, 1 };
  CHECK(!kl_tensor_wrap(NULL, 0, false, KL_DT_F32, 2, sq, st2, 0, err, sizeof err) &&
            strstr(err, "tensor: stride 9007199254740993 of dim 0"),
        "strides past 2^53: %s", err);
  int64_t s0[2] = { 0, 3 };
  kl_tensor *e = kl_tensor_zeros(KL_DT_F32, 2, s0, NULL, err, sizeof err);
  CHECK(e && kl_tensor_numel(e) == 0 && e->nbytes == 0, "empty tensor");
  kl_tensor *sc = kl_tensor_full(KL_DT_I32, 0, NULL, NULL, 7, err, sizeof err);
  CHECK(sc && kl_tensor_numel(sc) == 1 && kl_tensor_get(sc, NULL) == 7, "rank 0");
  /* views, wrap and ownership */
  int64_t s3[1] = { 3 }, z1[1] = { 0 }, bs[2] = { 4, 3 }, bst[2] = { 0, 1 };
  kl_tensor *row = kl_tensor_view(t, 1, s3, NULL, 3, err, sizeof err);
  kl_tensor *bc = kl_tensor_view(row, 2, bs, bst, 3, err, sizeof err);
  CHECK(row && bc && bc->base == t && t->refcount == 3, "views retain the owner (%d)", t->refcount);
  kl_tensor_release(t); /* the views keep the data alive (ASan would catch a use after free) */
  int64_t i32_[2] = { 3, 2 };
  CHECK(kl_tensor_get(bc, i32_) == -7 && kl_tensor_get(row, z1) == 4, "broadcast view reads");
  CHECK(!kl_tensor_view(row, 1, s3, NULL, 4, err, sizeof err) && strstr(err, "bytes"), "view out of bounds: %s", err);
  float *mem = malloc(8 * sizeof(float));
  for (int i = 0; i < 8; i++) mem[i] = (float)i;
  int64_t s22[2] = { 2, 2 }, st22[2] = { 4, 2 };
  kl_tensor *w = kl_tensor_wrap(mem, 8 * sizeof(float), true, KL_DT_F32, 2, s22, st22, 1, err, sizeof err);
  int64_t i11[2] = { 1, 1 };
  CHECK(w && kl_tensor_get(w, i11) == 7, "wrap with strides and offset");
  CHECK(!kl_tensor_wrap(mem, 7 * sizeof(float), false, KL_DT_F32, 2, s22, st22, 1, err, sizeof err),
        "wrap too small: %s", err);
  device_freed = 0;
  w->device = &device_freed;
  w->device_ptr = (void *)0x1234;
  w->device_free = fake_device_free;
  kl_tensor_retain(w);
  kl_tensor_release(w);
  CHECK(device_freed == 0, "not freed while referenced");
  kl_tensor_release(w); /* frees mem (take_ownership) and calls device_free */
  CHECK(device_freed == 1, "device_free called once on last release");
  kl_tensor_release(row);
  kl_tensor_release(bc);
  kl_tensor_release(n);
  kl_tensor_release(ti);
  kl_tensor_release(f);
  kl_tensor_release(o);
  kl_tensor_release(mz);
  kl_tensor_release(e);
  kl_tensor_release(sc);
  kl_tensor_release(NULL);
  GROUP("creation, element access, views, ownership");
}

static void test_rand(void) {
  char err[256];
  int64_t shp[2] = { 64, 50 };
  kl_tensor *a = kl_tensor_rand(KL_DT_F32, 2, shp, NULL, 123, KL_DIST_UNIFORM, err, sizeof err);
  kl_tensor *b = kl_tensor_rand(KL_DT_F32, 2, shp, NULL, 123, KL_DIST_UNIFORM, err, sizeof err);
  kl_tensor *c = kl_tensor_rand(KL_DT_F32, 2, shp, NULL, 124, KL_DIST_UNIFORM, err, sizeof err);
  CHECK(memcmp(a->data, b->data, a->nbytes) == 0, "same seed, same values");
  int same = 0;
  for (int64_t i = 0; i < 3200; i++) same += kl_tensor_get_flat(a, i) == kl_tensor_get_flat(c, i);
  CHECK(same < 10, "different seeds differ (%d equal)", same);
  double mn = 1e9, mx = -1e9, sum = 0;
  for (int64_t i = 0; i < 3200; i++) {
    double v = kl_tensor_get_flat(a, i);
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
    sum += v;
  }
  CHECK(mn >= -1 && mx < 1 && mn < -0.99 && mx > 0.99 && fabs(sum / 3200) < 0.05, "uniform [-1,1): %g %g %g", mn, mx,
        sum / 3200);
  int64_t big[1] = { 20000 };
  kl_tensor *nrm = kl_tensor_rand(KL_DT_F64, 1, big, NULL, 9, KL_DIST_NORMAL, err, sizeof err);
  double s1 = 0, s2 = 0;
  for (int64_t i = 0; i < 20000; i++) {
    double v = kl_tensor_get_flat(nrm, i);
    s1 += v;
    s2 += v * v;
  }
  double mean = s1 / 20000, sd = sqrt(s2 / 20000 - mean * mean);
  CHECK(fabs(mean) < 0.03 && fabs(sd - 1) < 0.03, "normal mean %g sd %g", mean, sd);
  kl_tensor *h = kl_tensor_rand(KL_DT_F16, 2, shp, NULL, 3, KL_DIST_NORMAL, err, sizeof err);
  bool repr = true;
  for (int64_t i = 0; i < 3200; i++) {
    double v = kl_tensor_get_flat(h, i);
    repr = repr && kl_round_f16(v) == v && v != 0;
  }
  CHECK(repr, "f16 rand values are f16 (and nonzero)");
  kl_tensor *ii = kl_tensor_rand(KL_DT_I8, 2, shp, NULL, 3, KL_DIST_UNIFORM, err, sizeof err);
  int64_t imn = 100, imx = -100;
  for (int64_t i = 0; i < 3200; i++) {
    int64_t v = (int64_t)kl_tensor_get_flat(ii, i);
    imn = v < imn ? v : imn;
    imx = v > imx ? v : imx;
  }
  CHECK(imn == -8 && imx == 7, "i8 uniform in [-8,8): %lld %lld", (long long)imn, (long long)imx);
  /* values follow logical order, whatever the layout */
  int64_t s4[4] = { 2, 3, 4, 5 }, st[4];
  kl_layout_strides("NHWC", 4, s4, st, err, sizeof err);
  kl_tensor *r1 = kl_tensor_rand(KL_DT_BF16, 4, s4, NULL, 77, KL_DIST_NORMAL, err, sizeof err);
  kl_tensor *r2 = kl_tensor_rand(KL_DT_BF16, 4, s4, st, 77, KL_DIST_NORMAL, err, sizeof err);
  kl_compare_result cr;
  CHECK(kl_tensor_compare(r1, r2, 0, 0, &cr, err, sizeof err) == 0 && cr.mismatches == 0 &&
            !kl_tensor_same_layout(r1, r2),
        "rand NHWC = rand NCHW logically");
  CHECK(!kl_tensor_rand(KL_DT_F32, 2, shp, NULL, 1, (kl_dist)5, err, sizeof err) && strstr(err, "distribution"), "%s",
        err);
  /* large row-major float tensors are filled in slices on threads (the generator advanced
   * to each slice): the same values as the serial walk of a padded layout */
  for (int k = 0; k < 3; k++) {
    kl_dtype dts[3] = { KL_DT_F16, KL_DT_F32, KL_DT_BF16 };
    kl_dist ds[3] = { KL_DIST_UNIFORM, KL_DIST_NORMAL, KL_DIST_UNIFORM };
    int64_t sb[2] = { 3 * 1024 + 1, 257 }, pst[2] = { 260, 1 }; /* 3 slices of 2^18 and a bit */
    kl_tensor *fa = kl_tensor_rand(dts[k], 2, sb, NULL, 99 + k, ds[k], err, sizeof err);
    kl_tensor *fb = kl_tensor_rand(dts[k], 2, sb, pst, 99 + k, ds[k], err, sizeof err);
    CHECK(fa && fb && kl_tensor_compare(fa, fb, 0, 0, &cr, err, sizeof err) == 0 && cr.mismatches == 0,
          "sliced rand = serial rand (%s): %lld differ", kl_dtype_name(dts[k]),
          fa && fb ? (long long)cr.mismatches : -1);
    kl_tensor_release(fa);
    kl_tensor_release(fb);
  }
  /* rng basics */
  kl_rng r;
  kl_rng_seed(&r, 42, 54);
  uint32_t first = kl_rng_u32(&r);
  kl_rng_seed(&r, 42, 54);
  CHECK(kl_rng_u32(&r) == first, "rng reseed");
  uint64_t skips[4] = { 0, 1, 1000, 123457 };
  for (int k = 0; k < 4; k++) {
    kl_rng a, b;
    kl_rng_seed(&a, 7, 3);
    kl_rng_seed(&b, 7, 3);
    for (uint64_t i = 0; i < skips[k]; i++) kl_rng_u32(&a);
    kl_rng_advance(&b, skips[k]);
    CHECK(a.state == b.state && kl_rng_u32(&a) == kl_rng_u32(&b), "rng advance by %llu", (unsigned long long)skips[k]);
  }
  int hist[5] = { 0 };
  for (int i = 0; i < 5000; i++) hist[kl_rng_below(&r, 5)]++;
  CHECK(hist[0] > 900 && hist[4] > 900 && kl_rng_below(&r, 0) == 0, "below");
  kl_tensor_release(a);
  kl_tensor_release(b);
  kl_tensor_release(c);
  kl_tensor_release(nrm);
  kl_tensor_release(h);
  kl_tensor_release(ii);
  kl_tensor_release(r1);
  kl_tensor_release(r2);
  GROUP("rand determinism and distributions");
}

static int count_char(const char *s, char c) {
  int n = 0;
  for (; *s; s++) n += *s == c;
  return n;
}

static void test_tostring(void) {
  char err[256];
  int64_t s22[2] = { 2, 2 };
  double v[4] = { 1, 2, 3, 4 };
  kl_tensor *t = kl_tensor_from_f64(KL_DT_F32, 2, s22, NULL, v, err, sizeof err);
  char *s = kl_tensor_tostring(t);
  CHECK(strcmp(s, "tensor([[1, 2],\n        [3, 4]], dtype=f32)") == 0, "got <%s>", s);
  free(s);
  double v2[4] = { 1, -2.5, 10, 4 };
  kl_tensor *t2 = kl_tensor_from_f64(KL_DT_F16, 2, s22, NULL, v2, err, sizeof err);
  s = kl_tensor_tostring(t2);
  CHECK(strcmp(s, "tensor([[   1, -2.5],\n        [  10,    4]], dtype=f16)") == 0, "aligned: <%s>", s);
  free(s);
  int64_t n2000[1] = { 2000 };
  double *big = malloc(sizeof(double) * 2000);
  for (int i = 0; i < 2000; i++) big[i] = i;
  kl_tensor *b = kl_tensor_from_f64(KL_DT_I32, 1, n2000, NULL, big, err, sizeof err);
  s = kl_tensor_tostring(b);
  CHECK(strcmp(s, "tensor([   0,    1,    2, ..., 1997, 1998, 1999], dtype=i32)") == 0, "truncated 1-D: <%s>", s);
  free(s);
  int64_t s3[3] = { 4, 25, 20 };
  kl_tensor *b3 = kl_tensor_from_f64(KL_DT_F32, 3, s3, NULL, big, err, sizeof err);
  s = kl_tensor_tostring(b3);
  /* 4 blocks of 7 lines (3 rows, "...", 3 rows): 6 newlines each, 2 between blocks */
  CHECK(count_char(s, '\n') == 30 && count_char(s, ',') == 4 * (6 * 6 + 6) + 3 + 1, "3-D shape of the text: %d lines",
        count_char(s, '\n'));
  CHECK(
      strstr(
          s,
          "tensor([[[   0,    1,    2, ...,   17,   18,   19],\n         [  20,   21,   22, ...,   37,   38,   39],") ==
          s,
      "3-D head: <%.200s>", s);
  CHECK(strstr(s, "        ...,\n") != NULL, "row ellipsis line");
  CHECK(strstr(s, "]],\n\n        [[") != NULL, "blank line between 2-D blocks");
  CHECK(strstr(s, "1999]]], dtype=f32)") != NULL, "tail");
  free(s);
  kl_tensor *small = kl_tensor_from_f64(KL_DT_F32, 3, (int64_t[]){ 2, 2, 2 }, NULL, big, err, sizeof err);
  s = kl_tensor_tostring(small);
  CHECK(strcmp(s, "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]], dtype=f32)") == 0,
        "<%s>", s);
  free(s);
  kl_tensor *sc = kl_tensor_full(KL_DT_F32, 0, NULL, NULL, 3.5, err, sizeof err);
  s = kl_tensor_tostring(sc);
  CHECK(strcmp(s, "tensor(3.5, dtype=f32)") == 0, "<%s>", s);
  free(s);
  kl_tensor *e = kl_tensor_zeros(KL_DT_BF16, 2, (int64_t[]){ 0, 3 }, NULL, err, sizeof err);
  s = kl_tensor_tostring(e);
  CHECK(strcmp(s, "tensor([], shape=[0,3], dtype=bf16)") == 0, "<%s>", s);
  free(s);
  kl_tensor *bo = kl_tensor_from_f64(KL_DT_I1, 1, (int64_t[]){ 2 }, NULL, (double[]){ 1, 0 }, err, sizeof err);
  s = kl_tensor_tostring(bo);
  CHECK(strcmp(s, "tensor([ true, false], dtype=i1)") == 0, "<%s>", s);
  free(s);
  kl_tensor *sp = kl_tensor_from_f64(KL_DT_F32, 1, (int64_t[]){ 3 }, NULL, (double[]){ NAN, INFINITY, -INFINITY }, err,
                                     sizeof err);
  s = kl_tensor_tostring(sp);
  CHECK(strcmp(s, "tensor([ nan,  inf, -inf], dtype=f32)") == 0, "<%s>", s);
  free(s);
  kl_tensor *tr = kl_tensor_as_layout(t, "col_major", err, sizeof err);
  s = kl_tensor_tostring(tr);
  CHECK(strcmp(s, "tensor([[1, 2],\n        [3, 4]], dtype=f32, strides=[1,2])") == 0,
        "layout shown, values logical: <%s>", s);
  free(s);
  s = kl_tensor_tostring_ex(b, 10000, 3, 6);
  CHECK(strlen(s) > 2000 * 5 && !strstr(s, "..."), "threshold raised: no truncation");
  free(s);
  free(big);
  kl_tensor_release(t);
  kl_tensor_release(t2);
  kl_tensor_release(b);
  kl_tensor_release(b3);
  kl_tensor_release(small);
  kl_tensor_release(sc);
  kl_tensor_release(e);
  kl_tensor_release(bo);
  kl_tensor_release(sp);
  kl_tensor_release(tr);
  GROUP("tostring");
}

static void test_compare(void) {
  char err[256];
  int64_t s23[2] = { 2, 3 };
  double v[6] = { 1, 2, 3, 4, 5, 6 };
  kl_tensor *a = kl_tensor_from_f64(KL_DT_F64, 2, s23, NULL, v, err, sizeof err);
  kl_tensor *b = kl_tensor_from_f64(KL_DT_F64, 2, s23, NULL, v, err, sizeof err);
  kl_compare_result r;
  CHECK(kl_tensor_compare(a, b, -1, -1, &r, err, sizeof err) == 0 && r.mismatches == 0 && r.first_flat == -1 &&
            r.max_abs_err == 0,
        "equal");
  kl_tensor_set_flat(b, 4, 5.5); /* index [1,1] */
  kl_tensor_set_flat(b, 5, 6.1);
  CHECK(kl_tensor_compare(a, b, 1e-5, 1e-6, &r, err, sizeof err) == 0 && r.mismatches == 2 && r.first_flat == 4 &&
            r.first_index[0] == 1 && r.first_index[1] == 1 && r.first_a == 5 && r.first_b == 5.5,
        "first mismatch");
  CHECK(fabs(r.max_abs_err - 0.5) < 1e-12 && fabs(r.max_rel_err - 0.5 / 5.5) < 1e-12, "errors %g %g", r.max_abs_err,
        r.max_rel_err);
  CHECK(kl_tensor_compare(a, b, 0.1, 0, &r, err, sizeof err) == 0 && r.mismatches == 0, "within rtol 0.1");
  CHECK(kl_tensor_compare(a, b, 0, 0.5, &r, err, sizeof err) == 0 && r.mismatches == 0, "within atol 0.5");
  CHECK(kl_tensor_compare(a, b, 0, 0.4, &r, err, sizeof err) == 0 && r.mismatches == 1, "atol 0.4");
  /* shapes */
  kl_tensor *c = kl_tensor_zeros(KL_DT_F64, 2, (int64_t[]){ 3, 2 }, NULL, err, sizeof err);
  CHECK(kl_tensor_compare(a, c, -1, -1, &r, err, sizeof err) != 0 &&
            strcmp(err, "compare: shapes differ: [2,3] vs [3,2]") == 0,
        "%s", err);
  bool close = true;
  CHECK(kl_tensor_allclose(a, c, -1, -1, &close, err, sizeof err) != 0 && !close, "allclose shape error");
  /* nan / inf */
  kl_tensor *x = kl_tensor_from_f64(KL_DT_F32, 1, (int64_t[]){ 4 }, NULL, (double[]){ NAN, INFINITY, 1, -INFINITY },
                                    err, sizeof err);
  kl_tensor *y = kl_tensor_from_f64(KL_DT_F32, 1, (int64_t[]){ 4 }, NULL, (double[]){ NAN, INFINITY, 1, INFINITY }, err,
                                    sizeof err);
  CHECK(kl_tensor_compare(x, y, -1, -1, &r, err, sizeof err) == 0 && r.mismatches == 1 && r.first_flat == 3 &&
            isinf(r.max_abs_err),
        "nan==nan, inf==inf, -inf!=inf");
  kl_tensor_set_flat(y, 0, 1);
  CHECK(kl_tensor_compare(x, y, -1, -1, &r, err, sizeof err) == 0 && r.mismatches == 2 && r.first_flat == 0,
        "nan vs 1");
  /* defaults by dtype */
  double rt, at;
  kl_default_tolerance(KL_DT_F32, &rt, &at);
  CHECK(rt == 1e-5 && at == 1e-6, "f32 defaults");
  kl_default_tolerance(KL_DT_F16, &rt, &at);
  CHECK(rt == 1e-2 && at == 1e-3, "f16 defaults");
  kl_default_tolerance(KL_DT_BF16, &rt, &at);
  CHECK(rt == 2e-2 && at == 1e-2, "bf16 defaults");
  kl_default_tolerance(KL_DT_I8, &rt, &at);
  CHECK(rt == 0 && at == 0, "ints exact");
  kl_tensor *p = kl_tensor_from_f64(KL_DT_F32, 1, (int64_t[]){ 2 }, NULL, (double[]){ 100, 1 }, err, sizeof err);
  kl_tensor *q = kl_tensor_from_f64(KL_DT_F32, 1, (int64_t[]){ 2 }, NULL, (double[]){ 100.0005, 1 }, err, sizeof err);
  kl_tensor *q2 = kl_tensor_from_f64(KL_DT_F32, 1, (int64_t[]){ 2 }, NULL, (double[]){ 100.01, 1 }, err, sizeof err);
  CHECK(kl_tensor_allclose(p, q, -1, -1, &close, err, sizeof err) == 0 && close, "f32 within defaults");
  CHECK(kl_tensor_allclose(p, q2, -1, -1, &close, err, sizeof err) == 0 && !close, "f32 outside defaults");
  kl_tensor *h = kl_tensor_from_f64(KL_DT_F16, 1, (int64_t[]){ 2 }, NULL, (double[]){ 100.01, 1 }, err, sizeof err);
  CHECK(kl_tensor_allclose(h, q2, -1, -1, &close, err, sizeof err) == 0 && close,
        "f16 vs f32 uses the looser f16 default");
  CHECK(kl_tensor_compare(h, q2, -1, -1, &r, err, sizeof err) == 0 && r.rtol == 1e-2 && r.atol == 1e-3,
        "tolerances reported");
  kl_tensor *i1 = kl_tensor_from_i64(KL_DT_I32, 1, (int64_t[]){ 3 }, NULL, (int64_t[]){ 3, 4, 5 }, err, sizeof err);
  kl_tensor *i2 = kl_tensor_from_i64(KL_DT_I8, 1, (int64_t[]){ 3 }, NULL, (int64_t[]){ 3, 5, 5 }, err, sizeof err);
  CHECK(kl_tensor_compare(i1, i2, -1, -1, &r, err, sizeof err) == 0 && r.mismatches == 1 && r.first_flat == 1 &&
            r.max_abs_err == 1,
        "ints exact");
  /* compare in logical coordinates across layouts */
  kl_tensor *rr = kl_tensor_rand(KL_DT_F32, 4, (int64_t[]){ 2, 3, 4, 5 }, NULL, 1, KL_DIST_NORMAL, err, sizeof err);
  kl_tensor *rn = kl_tensor_as_layout(rr, "NHWC", err, sizeof err);
  CHECK(kl_tensor_allclose(rr, rn, 0, 0, &close, err, sizeof err) == 0 && close, "layouts compare logically");
  kl_tensor_set_flat(rn, 7, 9.0);
  CHECK(kl_tensor_compare(rr, rn, 0, 0, &r, err, sizeof err) == 0 && r.mismatches == 1 && r.first_flat == 7 &&
            r.first_index[3] == 2 && r.first_index[2] == 1,
        "first index logical");
  kl_tensor_release(a);
  kl_tensor_release(b);
  kl_tensor_release(c);
  kl_tensor_release(x);
  kl_tensor_release(y);
  kl_tensor_release(p);
  kl_tensor_release(q);
  kl_tensor_release(q2);
  kl_tensor_release(h);
  kl_tensor_release(i1);
  kl_tensor_release(i2);
  kl_tensor_release(rr);
  kl_tensor_release(rn);
  GROUP("compare / allclose");
}

int main(void) {
  printf("test_tensor:\n");
  test_half();
  test_fp8();
  test_dtypes();
  test_layouts();
  test_create_access();
  test_rand();
  test_tostring();
  test_compare();
  return check_summary("test_tensor");
}
