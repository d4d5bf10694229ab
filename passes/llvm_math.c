/* llvm_math.c — f32 exp/log/tanh by range reduction + polynomials, as LLVM IR; max/min and
 * ordered compares by integer keys. */
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
