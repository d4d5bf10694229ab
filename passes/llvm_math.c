/* llvm_math.c — f32 exp/log/tanh/pow and f64 exp/log/tanh/pow/erf by range reduction +
 * polynomials, as LLVM IR; max/min and ordered compares by integer keys. */
#include "passes/llvm_math.h"
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static LLVMTypeRef ty_of(LLVMValueRef v) { return LLVMTypeOf(v); }
static LLVMValueRef splat(LLVMTypeRef t, LLVMValueRef s) {
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return s;
  unsigned n = LLVMGetVectorSize(t);
  LLVMValueRef e[64];
  if (n > 64) n = 64;
  for (unsigned i = 0; i < n; i++) e[i] = s;
  return LLVMConstVector(e, n);
}
static LLVMTypeRef scalar(LLVMTypeRef t) {
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
}
static LLVMValueRef fc(LLVMTypeRef t, double v) { return splat(t, LLVMConstReal(scalar(t), v)); }
/* The integer type of t's bit width and shape: i32 for f32, i64 for f64, vectors alike. */
static LLVMTypeRef int_like(LLVMTypeRef t) {
  unsigned w = LLVMGetTypeKind(scalar(t)) == LLVMDoubleTypeKind ? 64 : 32;
  LLVMTypeRef is = LLVMIntTypeInContext(LLVMGetTypeContext(t), w);
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMVectorType(is, LLVMGetVectorSize(t)) : is;
}
static LLVMValueRef ic(LLVMTypeRef t, long long v) {
  return splat(t, LLVMConstInt(scalar(t), (unsigned long long)v, 1));
}
static LLVMValueRef fma_(LLVMBuilderRef b, LLVMValueRef a, LLVMValueRef x, LLVMValueRef c) {
  return LLVMBuildFAdd(b, LLVMBuildFMul(b, a, x, ""), c, "");
}
/* Horner: c[0] + x*(c[1] + x*(...)) */
static LLVMValueRef poly(LLVMBuilderRef b, LLVMValueRef x, const double *c, int n) {
  LLVMTypeRef t = ty_of(x);
  LLVMValueRef r = fc(t, c[n - 1]);
  for (int i = n - 2; i >= 0; i--) r = fma_(b, r, x, fc(t, c[i]));
  return r;
}

LLVMValueRef kl_llvm_exp_f32(LLVMBuilderRef b, LLVMValueRef x) {
  LLVMTypeRef t = ty_of(x), it = int_like(t);
  /* clamp to the range with a finite, non-zero result; results outside are inf / 0 below */
  LLVMValueRef xc = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, x, fc(t, 88.0), ""), fc(t, 88.0), x, "");
  xc = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, xc, fc(t, -104.0), ""), fc(t, -104.0), xc, "");
  LLVMValueRef nf = LLVMBuildFMul(b, xc, fc(t, 1.4426950408889634), "");
  /* round to nearest: floor(v + 0.5) via conversion of a biased value */
  LLVMValueRef ni = LLVMBuildFPToSI(b, LLVMBuildFAdd(b, nf, fc(t, 0.5), ""), it, "");
  LLVMValueRef neg = LLVMBuildFCmp(b, LLVMRealOLT, LLVMBuildFAdd(b, nf, fc(t, 0.5), ""), fc(t, 0.0), "");
  ni = LLVMBuildSelect(b, neg, LLVMBuildSub(b, ni, ic(it, 1), ""), ni, ""); /* fptosi truncates */
  LLVMValueRef n = LLVMBuildSIToFP(b, ni, t, "");
  LLVMValueRef r = LLVMBuildFSub(b, xc, LLVMBuildFMul(b, n, fc(t, 0.693145751953125), ""), "");
  r = LLVMBuildFSub(b, r, LLVMBuildFMul(b, n, fc(t, 1.428606765330187e-06), ""), "");
  static const double c[] = { 1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040 };
  LLVMValueRef p = poly(b, r, c, 8);
  /* p * 2^n; a subnormal result (n < -126) as (p * 2^(n+64)) * 2^-64: one rounding */
  LLVMValueRef tiny = LLVMBuildICmp(b, LLVMIntSLT, ni, ic(it, -126), "");
  LLVMValueRef ns = LLVMBuildSelect(b, tiny, LLVMBuildAdd(b, ni, ic(it, 64), ""), ni, "");
  LLVMValueRef bits = LLVMBuildShl(b, LLVMBuildAdd(b, ns, ic(it, 127), ""), ic(it, 23), "");
  LLVMValueRef res = LLVMBuildFMul(b, p, LLVMBuildBitCast(b, bits, t, ""), "");
  res = LLVMBuildSelect(b, tiny, LLVMBuildFMul(b, res, fc(t, 0x1p-64), ""), res, "");
  res = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOGT, x, fc(t, 88.72283935546875), ""), fc(t, INFINITY), res, "");
  res = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, x, fc(t, -104.0), ""), fc(t, 0.0), res, "");
  /* NaN in, NaN out */
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, res, "");
}

LLVMValueRef kl_llvm_log_f32(LLVMBuilderRef b, LLVMValueRef x) {
  LLVMTypeRef t = ty_of(x), it = int_like(t);
  /* scale subnormals into the normal range */
  LLVMValueRef sub = LLVMBuildFCmp(b, LLVMRealOLT, x, fc(t, 1.1754943508222875e-38), "");
  LLVMValueRef xs = LLVMBuildSelect(b, sub, LLVMBuildFMul(b, x, fc(t, 8388608.0), ""), x, "");
  LLVMValueRef eadj = LLVMBuildSelect(b, sub, fc(t, -23.0), fc(t, 0.0), "");
  LLVMValueRef bits = LLVMBuildBitCast(b, xs, it, "");
  LLVMValueRef e = LLVMBuildSub(b, LLVMBuildLShr(b, bits, ic(it, 23), ""), ic(it, 127), "");
  LLVMValueRef mbits = LLVMBuildOr(b, LLVMBuildAnd(b, bits, ic(it, 0x7fffff), ""), ic(it, 0x3f800000), "");
  LLVMValueRef m = LLVMBuildBitCast(b, mbits, t, ""); /* [1, 2) */
  LLVMValueRef big = LLVMBuildFCmp(b, LLVMRealOGT, m, fc(t, 1.4142135623730951), "");
  m = LLVMBuildSelect(b, big, LLVMBuildFMul(b, m, fc(t, 0.5), ""), m, "");
  LLVMValueRef ef = LLVMBuildFAdd(b, LLVMBuildSIToFP(b, e, t, ""), eadj, "");
  ef = LLVMBuildSelect(b, big, LLVMBuildFAdd(b, ef, fc(t, 1.0), ""), ef, "");
  LLVMValueRef s = LLVMBuildFDiv(b, LLVMBuildFSub(b, m, fc(t, 1.0), ""), LLVMBuildFAdd(b, m, fc(t, 1.0), ""), "");
  LLVMValueRef s2 = LLVMBuildFMul(b, s, s, "");
  static const double c[] = { 2.0, 2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11 };
  LLVMValueRef lm = LLVMBuildFMul(b, s, poly(b, s2, c, 6), "");
  LLVMValueRef res = LLVMBuildFAdd(b, LLVMBuildFMul(b, ef, fc(t, 0.6931471805599453), ""), lm, "");
  res = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, fc(t, 0.0), ""), fc(t, -INFINITY), res, "");
  res = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, fc(t, INFINITY), ""), x, res, "");
  res = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, x, fc(t, 0.0), ""), fc(t, NAN), res, "");
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, res, "");
}

LLVMValueRef kl_llvm_tanh_f32(LLVMBuilderRef b, LLVMValueRef x) {
  LLVMTypeRef t = ty_of(x);
  LLVMValueRef neg = LLVMBuildFCmp(b, LLVMRealOLT, x, fc(t, 0.0), "");
  LLVMValueRef ax = LLVMBuildSelect(b, neg, LLVMBuildFNeg(b, x, ""), x, "");
  /* large: 1 - 2/(exp(2|x|)+1) (saturates to 1) */
  LLVMValueRef e = kl_llvm_exp_f32(b, LLVMBuildFMul(b, ax, fc(t, 2.0), ""));
  LLVMValueRef large = LLVMBuildFSub(b, fc(t, 1.0),
                                     LLVMBuildFDiv(b, fc(t, 2.0), LLVMBuildFAdd(b, e, fc(t, 1.0), ""), ""), "");
  /* small: odd Taylor series */
  static const double c[] = { 1.0, -1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835, -1382.0 / 155925, 21844.0 / 6081075 };
  LLVMValueRef small = LLVMBuildFMul(b, ax, poly(b, LLVMBuildFMul(b, ax, ax, ""), c, 7), "");
  LLVMValueRef r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, ax, fc(t, 0.4), ""), small, large, "");
  r = LLVMBuildSelect(b, neg, LLVMBuildFNeg(b, r, ""), r, "");
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, r, "");
}

/* A signed integer with the order of the float v (not NaN): the magnitude bits, negated
 * for a set sign bit, so -0 and +0 share key 0 (the ordered compares); with `total` (max/min,
 * IEEE 754-2019 maximum/minimum) bits ^ (sign ? INT_MAX : 0), i.e. -mag - 1 for a set sign
 * bit, which puts -0 (key -1) below +0. Integer compares of these keys give max/min
 * without an ordered fcmp against a constant: LLVM 19.1's InstCombine rewrites
 * `fcmp ogt (fabs x), 0` into `fcmp ugt x, 0` (fcmpImpliesClass drops the fabs; upstream
 * PR 152913), which made relu(abs(x)) return relu(x). */
static LLVMValueRef order_key(LLVMBuilderRef b, LLVMValueRef v, bool total) {
  LLVMTypeRef it = int_like(ty_of(v)), is = scalar(it);
  unsigned w = LLVMGetIntTypeWidth(is);
  LLVMValueRef bits = LLVMBuildBitCast(b, v, it, "");
  LLVMValueRef maxmag = splat(it, LLVMConstInt(is, ~0ull >> (65 - w), 0));
  if (total)
    return LLVMBuildXor(
        b, bits, LLVMBuildAnd(b, LLVMBuildAShr(b, bits, splat(it, LLVMConstInt(is, w - 1, 0)), ""), maxmag, ""), "");
  LLVMValueRef mag = LLVMBuildAnd(b, bits, maxmag, "");
  LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, bits, LLVMConstNull(it), "");
  return LLVMBuildSelect(b, neg, LLVMBuildNeg(b, mag, ""), mag, "");
}

/* The order key of c if it is a constant (scalar, or a vector splat) that is not NaN. */
static bool const_key(LLVMValueRef c, bool total, int64_t *key) {
  LLVMValueRef e = c;
  if (!LLVMIsConstant(c)) return false;
  if (LLVMGetTypeKind(ty_of(c)) == LLVMVectorTypeKind) {
    unsigned n = LLVMGetVectorSize(ty_of(c));
    e = LLVMGetAggregateElement(c, 0);
    for (unsigned i = 1; i < n && e; i++)
      if (LLVMGetAggregateElement(c, i) != e) return false;
  }
  if (!e || !LLVMIsAConstantFP(e)) return false;
  LLVMBool loses;
  double d = LLVMConstRealGetDouble(e, &loses);
  if (isnan(d)) return false;
  uint64_t mag;
  if (LLVMGetTypeKind(ty_of(e)) == LLVMDoubleTypeKind) {
    memcpy(&mag, &d, 8);
    mag &= INT64_MAX;
  } else {
    float f = (float)d;
    uint32_t u;
    memcpy(&u, &f, 4);
    mag = u & 0x7fffffffu;
  }
  *key = signbit(d) ? -(int64_t)mag - total : (int64_t)mag;
  return true;
}

/* key(x) > key(y) (gt) or key(x) < key(y), for x and y not NaN. Against a constant key K
 * it is one compare of x's bits: with B = bits(x), MIN the sign bit and M the constant's
 * magnitude when negative (M = -K, total: M = -K - 1),
 *   key > K:  B >s K for K >= 0 (negatives and -0 have B <s 0), else B <u MIN + M;
 *   key < K:  B <s K for K > 0 (total: K >= 0, as -0 < +0), else B >u MIN + M. */
static LLVMValueRef key_cmp(LLVMBuilderRef b, int gt, bool total, LLVMValueRef x, LLVMValueRef y) {
  int64_t k;
  if (!const_key(y, total, &k))
    return LLVMBuildICmp(b, gt ? LLVMIntSGT : LLVMIntSLT, order_key(b, x, total), order_key(b, y, total), "");
  LLVMTypeRef it = int_like(ty_of(x)), is = scalar(it);
  unsigned w = LLVMGetIntTypeWidth(is);
  LLVMValueRef bits = LLVMBuildBitCast(b, x, it, "");
  uint64_t neg_bound = (1ull << (w - 1)) + (uint64_t)(k < 0 ? -k - total : 0); /* MIN + M */
  if (gt)
    return k >= 0 ? LLVMBuildICmp(b, LLVMIntSGT, bits, splat(it, LLVMConstInt(is, (uint64_t)k, 1)), "")
                  : LLVMBuildICmp(b, LLVMIntULT, bits, splat(it, LLVMConstInt(is, neg_bound, 0)), "");
  return k > 0 || (total && k == 0)
      ? LLVMBuildICmp(b, LLVMIntSLT, bits, splat(it, LLVMConstInt(is, (uint64_t)k, 1)), "")
      : LLVMBuildICmp(b, LLVMIntUGT, bits, splat(it, LLVMConstInt(is, neg_bound, 0)), "");
}

/* The reference's max/min: NaN if either operand is NaN, else x if x > y (x < y for min) in
 * the total order (-0 < +0), else y; x and y tie only when equal bits, so it is symmetric. */
LLVMValueRef kl_llvm_max_nan(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y, int is_min) {
  LLVMValueRef r = LLVMBuildSelect(b, key_cmp(b, !is_min, true, x, y), x, y, "");
  r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, y, y, ""), y, r, "");
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, r, "");
}

LLVMValueRef kl_llvm_fcmp(LLVMBuilderRef b, LLVMRealPredicate p, LLVMValueRef x, LLVMValueRef y) {
  LLVMValueRef c;
  switch (p) {
    case LLVMRealOLT: c = key_cmp(b, 0, false, x, y); break;
    case LLVMRealOGT: c = key_cmp(b, 1, false, x, y); break;
    case LLVMRealOLE: c = LLVMBuildNot(b, key_cmp(b, 1, false, x, y), ""); break;
    case LLVMRealOGE: c = LLVMBuildNot(b, key_cmp(b, 0, false, x, y), ""); break;
    default: return LLVMBuildFCmp(b, p, x, y, "");
  }
  return LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealORD, x, y, ""), c, "");
}

LLVMValueRef kl_llvm_pow_f32(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y) {
  LLVMTypeRef t = ty_of(x);
  LLVMValueRef neg = LLVMBuildFCmp(b, LLVMRealOLT, x, fc(t, 0.0), "");
  LLVMValueRef ax = LLVMBuildSelect(b, neg, LLVMBuildFNeg(b, x, ""), x, "");
  LLVMValueRef r = kl_llvm_exp_f32(b, LLVMBuildFMul(b, y, kl_llvm_log_f32(b, ax), ""));
  /* x < 0: defined for integral y only, negative for odd y */
  LLVMValueRef half = LLVMBuildFMul(b, y, fc(t, 0.5), "");
  LLVMValueRef yi = LLVMBuildFCmp(b, LLVMRealOEQ, LLVMBuildFRem(b, y, fc(t, 1.0), ""), fc(t, 0.0), "");
  LLVMValueRef odd = LLVMBuildFCmp(b, LLVMRealONE, LLVMBuildFRem(b, half, fc(t, 1.0), ""), fc(t, 0.0), "");
  LLVMValueRef rn = LLVMBuildSelect(b, odd, LLVMBuildFNeg(b, r, ""), r, "");
  rn = LLVMBuildSelect(b, yi, rn, fc(t, NAN), "");
  r = LLVMBuildSelect(b, neg, rn, r, "");
  /* x^0 = 1 and 1^y = 1, even for NaN */
  LLVMValueRef one = LLVMBuildOr(b, LLVMBuildFCmp(b, LLVMRealOEQ, y, fc(t, 0.0), ""),
                                 LLVMBuildFCmp(b, LLVMRealOEQ, x, fc(t, 1.0), ""), "");
  return LLVMBuildSelect(b, one, fc(t, 1.0), r, "");
}

/* ---- f64: exp, expm1 (for tanh), log, tanh, pow, erf by range reduction + polynomials, in
 * plain fmul/fadd (no fast-math flags, so never contracted into FMAs): host, NVPTX and AMDGPU
 * compute bit-identical results. Measured against libm on the host over the whole range
 * (spec/lua/f64_math_cases.lua): exp, log <= 1 ulp, tanh ~2 ulp, erf ~1.6 ulp; pow computes
 * y*log|x| in double-double (Dekker's exact products, no fma), ~1 ulp up to results near
 * 2^+-1023. */
static LLVMTypeRef int_w(LLVMTypeRef t, unsigned w) {
  LLVMTypeRef is = LLVMIntTypeInContext(LLVMGetTypeContext(t), w);
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMVectorType(is, LLVMGetVectorSize(t)) : is;
}
static LLVMValueRef dmul(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y) { return LLVMBuildFMul(b, x, y, ""); }
static LLVMValueRef dadd(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y) { return LLVMBuildFAdd(b, x, y, ""); }
static LLVMValueRef dsub(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y) { return LLVMBuildFSub(b, x, y, ""); }
static LLVMValueRef sel(LLVMBuilderRef b, LLVMValueRef c, LLVMValueRef x, LLVMValueRef y) {
  return LLVMBuildSelect(b, c, x, y, "");
}
static LLVMValueRef flt(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y) {
  return LLVMBuildFCmp(b, LLVMRealOLT, x, y, "");
}
static LLVMValueRef fgt(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y) {
  return LLVMBuildFCmp(b, LLVMRealOGT, x, y, "");
}
static LLVMValueRef isnan_(LLVMBuilderRef b, LLVMValueRef x) { return LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""); }
static LLVMValueRef call_fabs(LLVMBuilderRef b, LLVMValueRef x) { /* |x| by clearing the sign bit */
  LLVMTypeRef t = ty_of(x), i64 = int_w(t, 64);
  return LLVMBuildBitCast(b, LLVMBuildAnd(b, LLVMBuildBitCast(b, x, i64, ""), ic(i64, INT64_MAX), ""), t, "");
}

static const double LN2_HI = 6.93147180369123816490e-01; /* 0x3fe62e42fee00000: n * LN2_HI exact, |n| < 2^20 */
static const double LN2_LO = 1.90821492927058770002e-10; /* 0x3dea39ef35793c76 */
static const double LOG2E = 1.4426950408889634;
/* 1/2!, 1/3!, ..., 1/13!: exp(r) - 1 - r = r^2 * poly(r) on |r| <= ln2/2 (truncation ~1e-18) */
static const double EXP_C[] = { 1.0 / 2,       1.0 / 6,        1.0 / 24,        1.0 / 120,
                                1.0 / 720,     1.0 / 5040,     1.0 / 40320,     1.0 / 362880,
                                1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0 };

/* x = n ln2 + r (|r| <= ln2/2 + lo), n the nearest integer to x log2 e (|x| < 2^40) as i32; lo
 * an extra low part of x (pow's double-double), folded into r. Returns expm1(r). */
static LLVMValueRef exp_reduce(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef lo, LLVMValueRef *ni) {
  LLVMTypeRef t = ty_of(x);
  /* round to nearest through the 1.5 * 2^52 shifter (no fast-math: LLVM keeps both adds) */
  LLVMValueRef n = dsub(b, dadd(b, dmul(b, x, fc(t, LOG2E)), fc(t, 0x1.8p52)), fc(t, 0x1.8p52));
  *ni = LLVMBuildFPToSI(b, n, int_w(t, 32), "");
  LLVMValueRef r = dsub(b, x, dmul(b, n, fc(t, LN2_HI))); /* exact */
  r = dadd(b, r, dsub(b, lo, dmul(b, n, fc(t, LN2_LO))));
  return dadd(b, r, dmul(b, dmul(b, r, r), poly(b, r, EXP_C, 12)));
}
/* 2^k for k in [-1022, 1023] (i32; exp_dd's halves of n lie in [-539, 513]) */
static LLVMValueRef pow2i(LLVMBuilderRef b, LLVMTypeRef t, LLVMValueRef k) {
  LLVMTypeRef i64 = int_w(t, 64);
  LLVMValueRef e = LLVMBuildZExt(b, LLVMBuildAdd(b, k, ic(int_w(t, 32), 1023), ""), i64, "");
  return LLVMBuildBitCast(b, LLVMBuildShl(b, e, ic(i64, 52), ""), t, "");
}
/* exp(x + lo) with lo tiny next to x (0 for plain exp) */
static LLVMValueRef exp_dd(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef lo) {
  LLVMTypeRef t = ty_of(x), i32 = int_w(t, 32);
  /* outside [-746, 710] the result is 0 / inf: clamp so the reduction stays in range */
  LLVMValueRef out = LLVMBuildOr(b, flt(b, x, fc(t, -746.0)), fgt(b, x, fc(t, 710.0)), "");
  LLVMValueRef xc = sel(b, flt(b, x, fc(t, -746.0)), fc(t, -746.0), x);
  xc = sel(b, fgt(b, xc, fc(t, 710.0)), fc(t, 710.0), xc);
  lo = sel(b, out, fc(t, 0.0), lo);
  LLVMValueRef n, p = dadd(b, exp_reduce(b, xc, lo, &n), fc(t, 1.0));
  /* p * 2^n as (p * 2^(n>>1)) * 2^(n - (n>>1)): both factors normal for n in [-1077, 1025],
   * the first product exact, so a subnormal result is rounded once; overflow gives inf */
  LLVMValueRef n1 = LLVMBuildAShr(b, n, ic(i32, 1), ""), n2 = LLVMBuildSub(b, n, n1, "");
  LLVMValueRef res = dmul(b, dmul(b, p, pow2i(b, t, n1)), pow2i(b, t, n2));
  return sel(b, isnan_(b, x), x, res);
}
LLVMValueRef kl_llvm_exp_f64(LLVMBuilderRef b, LLVMValueRef x) { return exp_dd(b, x, fc(ty_of(x), 0.0)); }

/* expm1(x) for x in [-80, 0] (tanh's argument): 2^n (1 + p) - 1 = 2^n p + (2^n - 1), both
 * terms exact for n >= -53 (below, 2^n - 1 rounds to -1 + ulp-level error of the result) */
static LLVMValueRef expm1_neg(LLVMBuilderRef b, LLVMValueRef x) {
  LLVMTypeRef t = ty_of(x);
  LLVMValueRef n, p = exp_reduce(b, x, fc(t, 0.0), &n);
  LLVMValueRef s = pow2i(b, t, n);
  return dadd(b, dmul(b, s, p), dsub(b, s, fc(t, 1.0)));
}

/* tanh(x) = sign(x) * -t / (t + 2), t = expm1(-2|x|) in (-1, 0]: one expm1 for the whole
 * range, no cancellation (|x| > 20: t = -1 to the last bit, the result +-1) */
LLVMValueRef kl_llvm_tanh_f64(LLVMBuilderRef b, LLVMValueRef x) {
  LLVMTypeRef t = ty_of(x);
  LLVMTypeRef i64 = int_w(t, 64);
  LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildBitCast(b, x, i64, ""), ic(i64, 0), ""); /* -0 too */
  LLVMValueRef ax = call_fabs(b, x);
  ax = sel(b, fgt(b, ax, fc(t, 40.0)), fc(t, 40.0), ax);
  LLVMValueRef e = expm1_neg(b, dmul(b, ax, fc(t, -2.0)));
  LLVMValueRef r = call_fabs(b, LLVMBuildFDiv(b, LLVMBuildFNeg(b, e, ""), dadd(b, e, fc(t, 2.0)), ""));
  r = sel(b, neg, LLVMBuildFNeg(b, r, ""), r);
  return sel(b, isnan_(b, x), x, r);
}

/* log x = k ln2 + log m, m = x 2^-k in [sqrt(1/2), sqrt 2), f = m - 1 (exact), s = f / (2 + f):
 * log m = 2 atanh s = 2s + s R(s^2), R = 2/3 s^2 + 2/5 s^4 + ... (|s| < 0.172: the series
 * to s^22 leaves < 2^-60 of the result). *k, *f, *s for log and pow. x > 0 finite. */
static const double LOG_C[] = { 2.0 / 3,  2.0 / 5,  2.0 / 7,  2.0 / 9,  2.0 / 11, 2.0 / 13,
                                2.0 / 15, 2.0 / 17, 2.0 / 19, 2.0 / 21, 2.0 / 23 };
static void log_reduce(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef *k, LLVMValueRef *f, LLVMValueRef *s) {
  LLVMTypeRef t = ty_of(x), i64 = int_w(t, 64);
  LLVMValueRef sub = flt(b, x, fc(t, 0x1p-1022)); /* subnormals: scale by 2^54 */
  LLVMValueRef xs = sel(b, sub, dmul(b, x, fc(t, 0x1p54)), x);
  LLVMValueRef bits = LLVMBuildBitCast(b, xs, i64, "");
  LLVMValueRef e = LLVMBuildSub(b, LLVMBuildLShr(b, bits, ic(i64, 52), ""), ic(i64, 1023), "");
  LLVMValueRef m = LLVMBuildBitCast(
      b, LLVMBuildOr(b, LLVMBuildAnd(b, bits, ic(i64, 0x000fffffffffffffll), ""), ic(i64, 0x3ff0000000000000ll), ""), t,
      "");
  LLVMValueRef big = fgt(b, m, fc(t, 1.4142135623730951));
  m = sel(b, big, dmul(b, m, fc(t, 0.5)), m);
  LLVMValueRef ef = dadd(b, LLVMBuildSIToFP(b, LLVMBuildTrunc(b, e, int_w(t, 32), ""), t, ""),
                         sel(b, sub, fc(t, -54.0), fc(t, 0.0)));
  *k = sel(b, big, dadd(b, ef, fc(t, 1.0)), ef);
  *f = dsub(b, m, fc(t, 1.0));
  *s = LLVMBuildFDiv(b, *f, dadd(b, *f, fc(t, 2.0)), "");
}
/* specials of log: log(0) = -inf, log(inf) = inf, log(x < 0) = NaN, NaN propagates */
static LLVMValueRef log_specials(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef res) {
  LLVMTypeRef t = ty_of(x);
  res = sel(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, fc(t, 0.0), ""), fc(t, -INFINITY), res);
  res = sel(b, LLVMBuildFCmp(b, LLVMRealOEQ, x, fc(t, INFINITY), ""), x, res);
  res = sel(b, flt(b, x, fc(t, 0.0)), fc(t, NAN), res);
  return sel(b, isnan_(b, x), x, res);
}
LLVMValueRef kl_llvm_log_f64(LLVMBuilderRef b, LLVMValueRef x) {
  LLVMTypeRef t = ty_of(x);
  LLVMValueRef k, f, s;
  log_reduce(b, x, &k, &f, &s);
  LLVMValueRef z = dmul(b, s, s), sr = dmul(b, s, dmul(b, z, poly(b, z, LOG_C, 11)));
  /* fdlibm's arrangement: log(1+f) = f - hfsq + s (hfsq + R), hfsq = f^2/2 (2s = f - s f) */
  LLVMValueRef hfsq = dmul(b, dmul(b, f, f), fc(t, 0.5));
  LLVMValueRef r = dadd(b, dmul(b, s, hfsq), sr);
  LLVMValueRef res = dsub(b, dmul(b, k, fc(t, LN2_HI)),
                          dsub(b, dsub(b, hfsq, dadd(b, r, dmul(b, k, fc(t, LN2_LO)))), f));
  return log_specials(b, x, res);
}

/* Dekker's exact product without fma: a * b = *hi + *lo (Veltkamp splits; |a|, |b| < 2^996) */
static LLVMValueRef split_hi(LLVMBuilderRef b, LLVMValueRef a) {
  LLVMValueRef c = dmul(b, a, fc(ty_of(a), 134217729.0));
  return dsub(b, c, dsub(b, c, a));
}
static void two_prod(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y, LLVMValueRef *hi, LLVMValueRef *lo) {
  LLVMValueRef xh = split_hi(b, x), xl = dsub(b, x, xh), yh = split_hi(b, y), yl = dsub(b, y, yh);
  *hi = dmul(b, x, y);
  LLVMValueRef e = dsub(b, dmul(b, xh, yh), *hi);
  e = dadd(b, e, dmul(b, xh, yl));
  e = dadd(b, e, dmul(b, xl, yh));
  *lo = dadd(b, e, dmul(b, xl, yl));
}
/* Knuth's exact sum: x + y = *hi + *lo */
static void two_sum(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y, LLVMValueRef *hi, LLVMValueRef *lo) {
  *hi = dadd(b, x, y);
  LLVMValueRef bv = dsub(b, *hi, x);
  *lo = dadd(b, dsub(b, x, dsub(b, *hi, bv)), dsub(b, y, bv));
}
/* v (>= 0, or NaN: false) is an integer: v >= 2^52, or v + 2^52 - 2^52 gives v back */
static LLVMValueRef is_int(LLVMBuilderRef b, LLVMValueRef v) {
  LLVMTypeRef t = ty_of(v);
  LLVMValueRef r = dsub(b, dadd(b, v, fc(t, 0x1p52)), fc(t, 0x1p52));
  return LLVMBuildOr(b, LLVMBuildFCmp(b, LLVMRealOGE, v, fc(t, 0x1p52), ""), LLVMBuildFCmp(b, LLVMRealOEQ, r, v, ""),
                     "");
}

/* x^y with C pow semantics (x < 0: integral y only, odd y negative; x^0 = 1^y = 1, even for
 * NaN; +-0 and +-inf by their signs). log|x| in double-double (log m = 2 s + s R with s's
 * rounding error recovered exactly), times y by an exact product, into exp of a double-double. */
LLVMValueRef kl_llvm_pow_f64(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y) {
  LLVMTypeRef t = ty_of(x), i64 = int_w(t, 64);
  LLVMValueRef sgn = LLVMBuildICmp(b, LLVMIntSLT, LLVMBuildBitCast(b, x, i64, ""), ic(i64, 0), "");
  LLVMValueRef ax = sel(b, sgn, LLVMBuildFNeg(b, x, ""), x);
  LLVMValueRef k, f, s;
  log_reduce(b, ax, &k, &f, &s);
  /* s = f / u exactly as s + sl: u = 2 + f (+ ul, exact), s u = p + pe (exact) */
  LLVMValueRef u = dadd(b, f, fc(t, 2.0)), ul = dadd(b, dsub(b, fc(t, 2.0), u), f), p, pe;
  two_prod(b, s, u, &p, &pe);
  LLVMValueRef sl = LLVMBuildFDiv(b, dsub(b, dsub(b, dsub(b, f, p), pe), dmul(b, s, ul)), u, "");
  /* log m = 2 (s + sl) + 2/3 s^3 + s^5 Q(s^2): the cube term (up to 1% of the result) in
   * double-double, the rest (< 2e-4 of it) in double; 2/3 = TH + TL */
  LLVMValueRef zh, zl, ch, cl, th, tl;
  two_prod(b, s, s, &zh, &zl);
  zl = dadd(b, zl, dmul(b, dmul(b, s, sl), fc(t, 2.0)));
  two_prod(b, zh, s, &ch, &cl);
  cl = dadd(b, cl, dadd(b, dmul(b, zl, s), dmul(b, zh, sl)));
  two_prod(b, ch, fc(t, 2.0 / 3), &th, &tl);
  tl = dadd(b, tl, dadd(b, dmul(b, cl, fc(t, 2.0 / 3)), dmul(b, ch, fc(t, 3.700743415417188e-17))));
  LLVMValueRef tail = dmul(b, dmul(b, s, dmul(b, zh, zh)), poly(b, zh, LOG_C + 1, 10));
  /* log ax = k LN2_HI + 2s + th (two two-sums) + (k LN2_LO + 2 sl + tl + tail) */
  LLVMValueRef e1, e2, h, h2;
  two_sum(b, dmul(b, k, fc(t, LN2_HI)), dmul(b, s, fc(t, 2.0)), &h, &e1);
  two_sum(b, h, th, &h2, &e2);
  LLVMValueRef lo = dadd(
      b, e1, dadd(b, e2, dadd(b, dmul(b, k, fc(t, LN2_LO)), dadd(b, dmul(b, sl, fc(t, 2.0)), dadd(b, tl, tail)))));
  LLVMValueRef hn = dadd(b, h2, lo);
  lo = dsub(b, lo, dsub(b, hn, h2));
  /* |y| > 2^64 gives |y log x| > 2^11 for every x != 1: clamp (keeps the result, bounds the splits) */
  LLVMValueRef big = LLVMBuildFCmp(b, LLVMRealOGT, call_fabs(b, y), fc(t, 0x1p64), "");
  LLVMValueRef yc = sel(b, big, sel(b, flt(b, y, fc(t, 0.0)), fc(t, -0x1p64), fc(t, 0x1p64)), y);
  two_prod(b, yc, hn, &zh, &zl);
  zl = dadd(b, zl, dmul(b, yc, lo));
  /* |x| = 0, inf or NaN: exp(y * log|x|) by its specials */
  LLVMValueRef odd_x = LLVMBuildOr(b, LLVMBuildFCmp(b, LLVMRealOEQ, ax, fc(t, 0.0), ""),
                                   LLVMBuildFCmp(b, LLVMRealUEQ, ax, fc(t, INFINITY), ""), "");
  zh = sel(b, odd_x, dmul(b, yc, log_specials(b, ax, hn)), zh);
  zl = sel(b, odd_x, fc(t, 0.0), zl);
  LLVMValueRef r = exp_dd(b, zh, zl);
  /* sign bit set: integral y gives +-r by y's parity; other y NaN (but +-0 and -inf: r) */
  LLVMValueRef ay = call_fabs(b, y);
  LLVMValueRef yi = is_int(b, ay), hy = dmul(b, ay, fc(t, 0.5));
  LLVMValueRef odd = LLVMBuildAnd(b, yi, LLVMBuildNot(b, is_int(b, hy), ""), "");
  LLVMValueRef rn = sel(b, odd, LLVMBuildFNeg(b, r, ""), r);
  LLVMValueRef zero_inf = LLVMBuildOr(b, LLVMBuildFCmp(b, LLVMRealOEQ, ax, fc(t, 0.0), ""),
                                      LLVMBuildFCmp(b, LLVMRealOEQ, ax, fc(t, INFINITY), ""), "");
  rn = sel(b, LLVMBuildOr(b, yi, zero_inf, ""), rn, fc(t, NAN));
  r = sel(b, LLVMBuildAnd(b, sgn, LLVMBuildNot(b, isnan_(b, x), ""), ""), rn, r);
  LLVMValueRef one = LLVMBuildOr(b, LLVMBuildFCmp(b, LLVMRealOEQ, y, fc(t, 0.0), ""),
                                 LLVMBuildFCmp(b, LLVMRealOEQ, x, fc(t, 1.0), ""), "");
  return sel(b, one, fc(t, 1.0), r);
}

/* erf's Maclaurin series: 2/sqrt(pi) sum (-1)^n x^(2n+1) / (n! (2n+1)), n < 34 (each
 * coefficient correctly rounded); on |x| < 1.5 the terms fall below 2^-60 of the sum */
static const double ERF_C[] = {
  1.1283791670955126,     -0.37612638903183754,    0.11283791670955126,    -0.026866170645131252,
  0.005223977625442188,   -0.0008548327023450853,  0.00012055332981789664, -1.492565035840625e-05,
  1.6462114365889248e-06, -1.6365844691234924e-07, 1.4807192815879218e-08, -1.2290555301717928e-09,
  9.422759064650411e-11,  -6.7113668551641105e-12, 4.4632242632864775e-13, -2.7835162072109215e-14,
  1.6342614095367152e-15, -9.063970842808673e-17,  4.763348040515068e-18,  -2.3784598852774293e-19,
  1.131218725924631e-20,  -5.136209054585811e-22,  2.2308786802746453e-23, -9.28672901131906e-25,
  3.71153285316323e-26,   -1.4263930180784176e-27, 5.279103332510834e-29,  -1.8841244217042036e-30,
  6.492909974544561e-32,  -2.1630383901171243e-33, 6.973730328792914e-35,  -2.1781748594796097e-36,
  6.597356545539203e-38,  -1.9395213725013487e-39
};
/* erf x: |x| < 1.5 the series; 1.5 <= |x| < 5.95: 1 - erfc |x| (sign restored), erfc by its
 * continued fraction e^-x^2 / sqrt(pi) * 1 / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...))))
 * to 80 terms, as the ratio of its forward recurrences (no overflow: < 2^220), with x^2 as
 * an exact product into exp; beyond, +-1 (erfc 5.95 < 2^-54) */
LLVMValueRef kl_llvm_erf_f64(LLVMBuilderRef b, LLVMValueRef x) {
  LLVMTypeRef t = ty_of(x);
  LLVMValueRef ax = call_fabs(b, x);
  LLVMValueRef small = dmul(b, x, poly(b, dmul(b, x, x), ERF_C, 34));
  LLVMValueRef xc = sel(b, flt(b, ax, fc(t, 1.5)), fc(t, 1.5), ax);
  xc = sel(b, fgt(b, xc, fc(t, 5.95)), fc(t, 5.95), xc);
  /* A_n = x A_{n-1} + a_n A_{n-2}, B alike; a_1 = 1, a_n = (n-1)/2; A_-1 = 1, A_0 = 0, B_-1 = 0, B_0 = 1 */
  LLVMValueRef a2 = fc(t, 1.0), a1 = fc(t, 0.0), b2 = fc(t, 0.0), b1 = fc(t, 1.0);
  for (int n = 1; n <= 80; n++) {
    LLVMValueRef an = fc(t, n == 1 ? 1.0 : (n - 1) / 2.0);
    LLVMValueRef a = dadd(b, dmul(b, xc, a1), dmul(b, an, a2)), bb = dadd(b, dmul(b, xc, b1), dmul(b, an, b2));
    a2 = a1, a1 = a, b2 = b1, b1 = bb;
  }
  LLVMValueRef h, l;
  two_prod(b, xc, xc, &h, &l);
  LLVMValueRef e = exp_dd(b, LLVMBuildFNeg(b, h, ""), LLVMBuildFNeg(b, l, ""));
  LLVMValueRef erfc = dmul(b, dmul(b, e, LLVMBuildFDiv(b, a1, b1, "")), fc(t, 0.5641895835477563));
  LLVMValueRef big = dsub(b, fc(t, 1.0), erfc);
  big = sel(b, LLVMBuildFCmp(b, LLVMRealOGE, ax, fc(t, 5.95), ""), fc(t, 1.0), big);
  big = sel(b, flt(b, x, fc(t, 0.0)), LLVMBuildFNeg(b, big, ""), big);
  LLVMValueRef r = sel(b, flt(b, ax, fc(t, 1.5)), small, big);
  return sel(b, isnan_(b, x), x, r);
}
