/* lower_fp8.c — fp8 <-> f32 conversions as LLVM IR (see lower_fp8.h). */
#include "passes/lower_fp8.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct {
  LLVMContextRef c;
  LLVMBuilderRef b;
  unsigned n; /* lanes; 0 = scalar */
} fb;

static LLVMTypeRef ty(fb *F, LLVMTypeRef s) { return F->n ? LLVMVectorType(s, F->n) : s; }
static LLVMValueRef splat(fb *F, LLVMValueRef s) {
  if (!F->n) return s;
  LLVMValueRef e[64];
  for (unsigned i = 0; i < F->n && i < 64; i++) e[i] = s;
  return LLVMConstVector(e, F->n);
}
static LLVMValueRef k32(fb *F, uint32_t v) { return splat(F, LLVMConstInt(LLVMInt32TypeInContext(F->c), v, 0)); }
static LLVMValueRef kf(fb *F, double v) { return splat(F, LLVMConstReal(LLVMFloatTypeInContext(F->c), v)); }
static LLVMTypeRef i32t(fb *F) { return ty(F, LLVMInt32TypeInContext(F->c)); }
static LLVMValueRef sel(fb *F, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(F->b, c, a, b, "");
}
static LLVMValueRef eq(fb *F, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildICmp(F->b, LLVMIntEQ, a, b, ""); }
static LLVMValueRef ugt(fb *F, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildICmp(F->b, LLVMIntUGT, a, b, ""); }
static LLVMValueRef ult(fb *F, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildICmp(F->b, LLVMIntULT, a, b, ""); }
static LLVMValueRef and_(fb *F, LLVMValueRef a, uint32_t m) { return LLVMBuildAnd(F->b, a, k32(F, m), ""); }
static LLVMValueRef or_(fb *F, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildOr(F->b, a, b, ""); }
static LLVMValueRef shl(fb *F, LLVMValueRef a, unsigned s) { return LLVMBuildShl(F->b, a, k32(F, s), ""); }
static LLVMValueRef shr(fb *F, LLVMValueRef a, unsigned s) { return LLVMBuildLShr(F->b, a, k32(F, s), ""); }
static LLVMValueRef add(fb *F, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildAdd(F->b, a, b, ""); }

typedef struct {
  unsigned mbits, bias;
  int kind;          /* 0 fn (NaN S.1111.111), 1 ieee (e5m2), 2 fnuz (NaN 0x80) */
  uint32_t max_code; /* magnitude code of the largest finite value */
} fmt;
static fmt fmt_of(kl_dtype dt) {
  switch (dt) {
    case KL_DT_F8E5M2: return (fmt){ 2, 15, 1, 0x7b };
    case KL_DT_F8E4M3FNUZ: return (fmt){ 3, 8, 2, 0x7f };
    case KL_DT_F8E5M2FNUZ: return (fmt){ 2, 16, 2, 0x7f };
    default: return (fmt){ 3, 7, 0, 0x7e };
  }
}
static unsigned lanes(LLVMValueRef v) {
  LLVMTypeRef t = LLVMTypeOf(v);
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetVectorSize(t) : 0;
}

LLVMValueRef kl_lower_fp8_to_f32(LLVMContextRef c, LLVMBuilderRef b, kl_dtype dt, LLVMValueRef v) {
  fb F = { c, b, lanes(v) };
  fmt f = fmt_of(dt);
  unsigned ebits = 7 - f.mbits;
  LLVMValueRef x = LLVMBuildZExt(b, v, i32t(&F), "");
  LLVMValueRef sign = shl(&F, and_(&F, x, 0x80), 24);
  LLVMValueRef e = and_(&F, shr(&F, x, f.mbits), (1u << ebits) - 1), m = and_(&F, x, (1u << f.mbits) - 1);
  LLVMValueRef normal = or_(&F, shl(&F, add(&F, e, k32(&F, 127 - f.bias)), 23), shl(&F, m, 23 - f.mbits));
  LLVMValueRef subf = LLVMBuildFMul(b, LLVMBuildUIToFP(b, m, ty(&F, LLVMFloatTypeInContext(c)), ""),
                                    kf(&F, ldexp(1.0, 1 - (int)f.bias - (int)f.mbits)), "");
  LLVMValueRef mag = sel(&F, eq(&F, e, k32(&F, 0)), LLVMBuildBitCast(b, subf, i32t(&F), ""), normal);
  if (f.kind == 0)
    mag = sel(&F, eq(&F, and_(&F, x, 0x7f), k32(&F, 0x7f)), k32(&F, 0x7fc00000), mag);
  else if (f.kind == 1)
    mag = sel(&F, eq(&F, e, k32(&F, 31)), sel(&F, eq(&F, m, k32(&F, 0)), k32(&F, 0x7f800000), k32(&F, 0x7fc00000)),
              mag);
  LLVMValueRef bits = or_(&F, sign, mag);
  if (f.kind == 2) bits = sel(&F, eq(&F, x, k32(&F, 0x80)), k32(&F, 0x7fc00000), bits);
  return LLVMBuildBitCast(b, bits, ty(&F, LLVMFloatTypeInContext(c)), "");
}

LLVMValueRef kl_lower_f32_to_fp8(LLVMContextRef c, LLVMBuilderRef b, kl_dtype dt, LLVMValueRef v) {
  fb F = { c, b, lanes(v) };
  fmt f = fmt_of(dt);
  int emin = 1 - (int)f.bias;
  unsigned shift = 23 - f.mbits;
  LLVMValueRef u = LLVMBuildBitCast(b, v, i32t(&F), "");
  LLVMValueRef sign = and_(&F, shr(&F, u, 24), 0x80), a = and_(&F, u, 0x7fffffff);
  /* normals: round the f32 bits at the fp8 mantissa, rebias */
  LLVMValueRef lsb = and_(&F, shr(&F, a, shift), 1);
  LLVMValueRef r = shr(&F, add(&F, add(&F, a, k32(&F, (1u << (shift - 1)) - 1)), lsb), shift);
  LLVMValueRef field = LLVMBuildSub(b, r, k32(&F, (uint32_t)(127 - (int)f.bias) << f.mbits), "");
  /* below 2^emin: |x| + C rounds at the fp8 subnormal quantum */
  double cv = ldexp(1.0, emin - (int)f.mbits + 23);
  LLVMValueRef y = LLVMBuildFAdd(b, LLVMBuildBitCast(b, a, ty(&F, LLVMFloatTypeInContext(c)), ""), kf(&F, cv), "");
  float cf = (float)cv;
  uint32_t cbits;
  memcpy(&cbits, &cf, 4);
  LLVMValueRef q = LLVMBuildSub(b, LLVMBuildBitCast(b, y, i32t(&F), ""), k32(&F, cbits), "");
  LLVMValueRef mag = sel(&F, ult(&F, a, k32(&F, (uint32_t)(emin + 127) << 23)), q, field);
  mag = sel(&F, ugt(&F, mag, k32(&F, f.max_code)), k32(&F, f.kind == 1 ? 0x7c : f.max_code), mag);
  LLVMValueRef out = or_(&F, sign, mag);
  LLVMValueRef isnan = ugt(&F, a, k32(&F, 0x7f800000));
  if (f.kind == 2) {
    out = sel(&F, eq(&F, mag, k32(&F, 0)), k32(&F, 0), out);
    out = sel(&F, isnan, k32(&F, 0x80), out);
  } else
    out = sel(&F, isnan, or_(&F, sign, k32(&F, f.kind == 1 ? 0x7e : 0x7f)), out);
  return LLVMBuildTrunc(b, out, ty(&F, LLVMInt8TypeInContext(c)), "");
}

/* f8e4m3fn lane pairs through cvt.rn.f16x2.e4m3x2 (see lower_fp8.h); v has an even
 * number of lanes (NULL otherwise) */
static LLVMValueRef nv_e4m3_pairs(fb *F, LLVMValueRef v) {
  unsigned n = F->n;
  if (n < 2 || n % 2 || n > 64) return NULL;
  LLVMContextRef c = F->c;
  LLVMTypeRef i16 = LLVMInt16TypeInContext(c), i32 = LLVMInt32TypeInContext(c), h = LLVMHalfTypeInContext(c);
  LLVMTypeRef fty = LLVMFunctionType(i32, &i16, 1, 0);
  static const char text[] = "cvt.rn.f16x2.e4m3x2 $0, $1;", cons[] = "=r,h";
  LLVMValueRef asmv = LLVMGetInlineAsm(fty, (char *)text, strlen(text), (char *)cons, strlen(cons), 0, 0,
                                       LLVMInlineAsmDialectATT, 0);
  LLVMValueRef pairs = LLVMBuildBitCast(F->b, v, LLVMVectorType(i16, n / 2), "");
  LLVMValueRef parts[32];
  for (unsigned i = 0; i < n / 2; i++) {
    LLVMValueRef p = LLVMBuildExtractElement(F->b, pairs, LLVMConstInt(i32, i, 0), "");
    LLVMValueRef r = LLVMBuildCall2(F->b, fty, asmv, &p, 1, "");
    parts[i] = LLVMBuildBitCast(F->b, r, LLVMVectorType(h, 2), "");
  }
  /* concatenate the <2 x half> parts */
  LLVMValueRef out = LLVMGetUndef(LLVMVectorType(h, n));
  for (unsigned i = 0; i < n; i++) {
    LLVMValueRef e = LLVMBuildExtractElement(F->b, parts[i / 2], LLVMConstInt(i32, i % 2, 0), "");
    out = LLVMBuildInsertElement(F->b, out, e, LLVMConstInt(i32, i, 0), "");
  }
  return out;
}

/* e5m2 / e4m3fn / e4m3fnuz lane pairs in 32-bit words (lane 2i in the low half; see
 * lower_fp8.h): one word holds two f16 results, so every integer op and the f16x2 multiply
 * work on two values; NaN lanes by a mask, no selects. v has an even number of lanes (NULL
 * otherwise). */
static LLVMValueRef packed_pairs(fb *F, kl_dtype dt, LLVMValueRef v) {
  unsigned n = F->n;
  if (n < 2 || n % 2 || n > 64) return NULL;
  LLVMContextRef c = F->c;
  LLVMBuilderRef b = F->b;
  fb P = { c, b, n / 2 };
  LLVMTypeRef hv = LLVMVectorType(LLVMHalfTypeInContext(c), n);
  LLVMValueRef x = LLVMBuildZExt(b, LLVMBuildBitCast(b, v, LLVMVectorType(LLVMInt16TypeInContext(c), n / 2), ""),
                                 i32t(&P), "");
  LLVMValueRef y = or_(&P, and_(&P, x, 0xff), shl(&P, and_(&P, x, 0xff00), 8)); /* codes at bits 0 and 16 */
  if (dt == KL_DT_F8E5M2) return LLVMBuildBitCast(b, shl(&P, y, 8), hv, "");
  LLVMValueRef sign = shl(&P, and_(&P, y, 0x00800080), 8), mag = and_(&P, y, 0x007f007f);
  LLVMValueRef bits = or_(&P, sign, shl(&P, mag, 7));
  LLVMValueRef sc = splat(F, LLVMConstReal(LLVMHalfTypeInContext(c), dt == KL_DT_F8E4M3FNUZ ? 128.0 : 256.0));
  LLVMValueRef val = LLVMBuildBitCast(b, LLVMBuildFMul(b, LLVMBuildBitCast(b, bits, hv, ""), sc, ""), i32t(&P), "");
  /* bit 7 of a half set for a NaN code: fn magnitude 0x7f (+1 carries into bit 7), fnuz
   * 0x80 (sign set, magnitude 0: + 0x7f leaves bit 7 clear) */
  LLVMValueRef t = dt == KL_DT_F8E4M3FNUZ
      ? LLVMBuildAnd(b, and_(&P, y, 0x00800080), LLVMBuildNot(b, add(&P, mag, k32(&P, 0x007f007f)), ""), "")
      : and_(&P, add(&P, mag, k32(&P, 0x00010001)), 0x00800080);
  LLVMValueRef mask = LLVMBuildMul(b, shr(&P, t, 7), k32(&P, 0xffff), "");
  LLVMValueRef nanv = LLVMBuildAnd(b, or_(&P, sign, k32(&P, 0x7e007e00)), mask, "");
  LLVMValueRef out = or_(&P, LLVMBuildAnd(b, val, LLVMBuildNot(b, mask, ""), ""), nanv);
  return LLVMBuildBitCast(b, out, hv, "");
}

LLVMValueRef kl_lower_fp8_to_f16(LLVMContextRef c, LLVMBuilderRef b, kl_dtype dt, LLVMValueRef v, bool nv_cvt) {
  fb F = { c, b, lanes(v) };
  LLVMTypeRef i16 = ty(&F, LLVMInt16TypeInContext(c)), h = ty(&F, LLVMHalfTypeInContext(c));
  if (dt == KL_DT_F8E5M2FNUZ) return LLVMBuildFPTrunc(b, kl_lower_fp8_to_f32(c, b, dt, v), h, "");
  if (nv_cvt && dt == KL_DT_F8E4M3FN) {
    LLVMValueRef r = nv_e4m3_pairs(&F, v);
    if (r) return r;
  }
  LLVMValueRef pr = packed_pairs(&F, dt, v);
  if (pr) return pr;
  LLVMValueRef x = LLVMBuildZExt(b, v, i16, "");
  LLVMValueRef k16[4] = { NULL };
  uint16_t kv[4] = { 8, 0x80, 0x7f, 7 };
  for (int i = 0; i < 4; i++) k16[i] = splat(&F, LLVMConstInt(LLVMInt16TypeInContext(c), kv[i], 0));
  if (dt == KL_DT_F8E5M2) return LLVMBuildBitCast(b, LLVMBuildShl(b, x, k16[0], ""), h, "");
  /* e4m3fn (bias 7) / e4m3fnuz (bias 8): the magnitude bits as an f16 with bias 15 - 8 / 15 - 7 */
  LLVMValueRef sign = LLVMBuildShl(b, LLVMBuildAnd(b, x, k16[1], ""), k16[0], "");
  LLVMValueRef mag = LLVMBuildAnd(b, x, k16[2], "");
  LLVMValueRef bits = LLVMBuildOr(b, sign, LLVMBuildShl(b, mag, k16[3], ""), "");
  double scale = dt == KL_DT_F8E4M3FNUZ ? 128.0 : 256.0;
  LLVMValueRef val = LLVMBuildFMul(b, LLVMBuildBitCast(b, bits, h, ""),
                                   splat(&F, LLVMConstReal(LLVMHalfTypeInContext(c), scale)), "");
  LLVMValueRef nan_bits = LLVMBuildOr(b, sign, splat(&F, LLVMConstInt(LLVMInt16TypeInContext(c), 0x7e00, 0)), "");
  LLVMValueRef isnan = dt == KL_DT_F8E4M3FNUZ ? LLVMBuildICmp(b, LLVMIntEQ, x, k16[1], "")
                                              : LLVMBuildICmp(b, LLVMIntEQ, mag, k16[2], "");
  return LLVMBuildSelect(b, isnan, LLVMBuildBitCast(b, nan_bits, h, ""), val, "");
}
