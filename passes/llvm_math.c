/* llvm_math.c — f32 exp/log/tanh by range reduction + polynomials, as LLVM IR; max/min and
 * ordered compares by integer keys. */
#include "passes/llvm_math.h"
#include <math.h>

static LLVMTypeRef ty_of(LLVMValueRef v) { return LLVMTypeOf(v); }
static LLVMValueRef splat(LLVMTypeRef t, LLVMValueRef s) {
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return s;
  unsigned n = LLVMGetVectorSize(t);
  LLVMValueRef e[64];
  if (n > 64) n = 64;
  for (unsigned i = 0; i < n; i++) e[i] = s;
  return LLVMConstVector(e, n);
}
static LLVMTypeRef scalar(LLVMTypeRef t) { return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t; }
static LLVMValueRef fc(LLVMTypeRef t, double v) { return splat(t, LLVMConstReal(scalar(t), v)); }
static LLVMTypeRef int_like(LLVMTypeRef t) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(t));
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMVectorType(i32, LLVMGetVectorSize(t)) : i32;
}
static LLVMValueRef ic(LLVMTypeRef t, long long v) { return splat(t, LLVMConstInt(scalar(t), (unsigned long long)v, 1)); }
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
  ni = LLVMBuildSelect(b, neg, LLVMBuildSub(b, ni, ic(it, 1), ""), ni, "");  /* fptosi truncates */
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
  LLVMValueRef m = LLVMBuildBitCast(b, mbits, t, "");          /* [1, 2) */
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
  LLVMValueRef large = LLVMBuildFSub(b, fc(t, 1.0), LLVMBuildFDiv(b, fc(t, 2.0), LLVMBuildFAdd(b, e, fc(t, 1.0), ""), ""), "");
  /* small: odd Taylor series */
  static const double c[] = { 1.0, -1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835, -1382.0 / 155925, 21844.0 / 6081075 };
  LLVMValueRef small = LLVMBuildFMul(b, ax, poly(b, LLVMBuildFMul(b, ax, ax, ""), c, 7), "");
  LLVMValueRef r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, ax, fc(t, 0.4), ""), small, large, "");
  r = LLVMBuildSelect(b, neg, LLVMBuildFNeg(b, r, ""), r, "");
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, r, "");
}

/* A signed integer with the order of the float v (not NaN): the magnitude bits, negated
 * for a set sign bit, so -0 and +0 share key 0. Integer compares of these keys give max/min
 * without an ordered fcmp against a constant: LLVM 19.1's InstCombine rewrites
 * `fcmp ogt (fabs x), 0` into `fcmp ugt x, 0` (fcmpImpliesClass drops the fabs; upstream
 * PR 152913), which made relu(abs(x)) return relu(x). */
static LLVMValueRef order_key(LLVMBuilderRef b, LLVMValueRef v) {
  LLVMTypeRef t = ty_of(v), st = scalar(t);
  LLVMTypeRef is = LLVMIntTypeInContext(LLVMGetTypeContext(t), LLVMGetTypeKind(st) == LLVMDoubleTypeKind ? 64 : 32);
  LLVMTypeRef it = LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMVectorType(is, LLVMGetVectorSize(t)) : is;
  unsigned w = LLVMGetIntTypeWidth(is);
  LLVMValueRef bits = LLVMBuildBitCast(b, v, it, "");
  LLVMValueRef mag = LLVMBuildAnd(b, bits, splat(it, LLVMConstInt(is, ~0ull >> (65 - w), 0)), "");
  LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLT, bits, LLVMConstNull(it), "");
  return LLVMBuildSelect(b, neg, LLVMBuildNeg(b, mag, ""), mag, "");
}

/* The reference's max/min: NaN if either operand is NaN, else x if x > y (x < y for min),
 * else y (so a tie of -0 and +0 gives y). */
LLVMValueRef kl_llvm_max_nan(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y, int is_min) {
  LLVMValueRef pick = LLVMBuildICmp(b, is_min ? LLVMIntSLT : LLVMIntSGT, order_key(b, x), order_key(b, y), "");
  LLVMValueRef r = LLVMBuildSelect(b, pick, x, y, "");
  r = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, y, y, ""), y, r, "");
  return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealUNO, x, x, ""), x, r, "");
}

LLVMValueRef kl_llvm_fcmp(LLVMBuilderRef b, LLVMRealPredicate p, LLVMValueRef x, LLVMValueRef y) {
  LLVMIntPredicate ip;
  switch (p) {
  case LLVMRealOLT: ip = LLVMIntSLT; break;
  case LLVMRealOLE: ip = LLVMIntSLE; break;
  case LLVMRealOGT: ip = LLVMIntSGT; break;
  case LLVMRealOGE: ip = LLVMIntSGE; break;
  default: return LLVMBuildFCmp(b, p, x, y, "");
  }
  LLVMValueRef ord = LLVMBuildFCmp(b, LLVMRealORD, x, y, "");
  return LLVMBuildAnd(b, ord, LLVMBuildICmp(b, ip, order_key(b, x), order_key(b, y), ""), "");
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
  LLVMValueRef one = LLVMBuildOr(b, LLVMBuildFCmp(b, LLVMRealOEQ, y, fc(t, 0.0), ""), LLVMBuildFCmp(b, LLVMRealOEQ, x, fc(t, 1.0), ""), "");
  return LLVMBuildSelect(b, one, fc(t, 1.0), r, "");
}
