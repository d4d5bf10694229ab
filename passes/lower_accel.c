/* lower_accel.c — rock.mma -> the matrix instruction intrinsic (see lower_accel.h). */
#include "passes/lower_accel.h"
#include "passes/rock_accel.h"
#include <stdio.h>
#include <string.h>

static LLVMValueRef call(LLVMModuleRef m, LLVMBuilderRef b, const char *name, LLVMTypeRef *over, int nover,
                         LLVMValueRef *args, int nargs, char *err, size_t errlen) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  if (!id) {
    snprintf(err, errlen, "LLVM has no intrinsic %s", name);
    return NULL;
  }
  if (!LLVMIntrinsicIsOverloaded(id)) nover = 0;
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(m, id, over, nover);
  LLVMTypeRef ft = LLVMIntrinsicGetType(c, id, over, nover);
  if ((int)LLVMCountParamTypes(ft) != nargs) {
    snprintf(err, errlen, "intrinsic %s takes %u arguments, kiln passes %d", name, LLVMCountParamTypes(ft), nargs);
    return NULL;
  }
  LLVMTypeRef ps[16];
  LLVMGetParamTypes(ft, ps);
  for (int i = 0; i < nargs; i++)
    if (LLVMTypeOf(args[i]) != ps[i]) {
      char *want = LLVMPrintTypeToString(ps[i]), *got = LLVMPrintTypeToString(LLVMTypeOf(args[i]));
      snprintf(err, errlen, "intrinsic %s argument %d: expected %s, got %s", name, i, want, got);
      LLVMDisposeMessage(want);
      LLVMDisposeMessage(got);
      return NULL;
    }
  return LLVMBuildCall2(b, ft, f, args, nargs, "");
}

static unsigned total_bits(LLVMTypeRef t) {
  if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) return LLVMGetVectorSize(t) * total_bits(LLVMGetElementType(t));
  switch (LLVMGetTypeKind(t)) {
    case LLVMHalfTypeKind:
    case LLVMBFloatTypeKind: return 16;
    case LLVMFloatTypeKind: return 32;
    case LLVMDoubleTypeKind: return 64;
    case LLVMIntegerTypeKind: return LLVMGetIntTypeWidth(t);
    default: return 0;
  }
}

/* v reinterpreted as `to` (same bit size). */
static LLVMValueRef cast(LLVMBuilderRef b, LLVMValueRef v, LLVMTypeRef to) {
  return LLVMTypeOf(v) == to ? v : LLVMBuildBitCast(b, v, to, "");
}

/* v split into n 32-bit pieces of type piece (bitcast through <n x i32>). */
static void split32(LLVMContextRef c, LLVMBuilderRef b, LLVMValueRef v, int n, LLVMTypeRef piece, LLVMValueRef *out) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c);
  LLVMValueRef w = n == 1 ? cast(b, v, i32) : cast(b, v, LLVMVectorType(i32, (unsigned)n));
  for (int i = 0; i < n; i++) {
    LLVMValueRef x = n == 1 ? w : LLVMBuildExtractElement(b, w, LLVMConstInt(i32, (unsigned)i, 0), "");
    out[i] = cast(b, x, piece);
  }
}

LLVMValueRef kl_lower_accel_mma(LLVMModuleRef m, LLVMBuilderRef b, const kl_target *t, kl_op *op, LLVMValueRef a,
                                LLVMValueRef bv, LLVMValueRef c, char *err, size_t errlen) {
  const char *instr = kl_op_attr_string(op, "instr");
  const kl_accel_desc *d = kl_accel_desc_by_intrinsic(instr);
  if (!d) {
    snprintf(err, errlen, "unknown matrix instruction \"%s\"", instr ? instr : "");
    return NULL;
  }
  if (!t || t->accel != d->kind || t->wave_size != d->wave) {
    snprintf(err, errlen, "%s is not available on target %s (matrix unit: %s)", d->intrinsic, t ? t->name : "?",
             t ? (t->accel == KL_ACCEL_MFMA           ? "mfma"
                      : t->accel == KL_ACCEL_WMMA     ? "wmma"
                      : t->accel == KL_ACCEL_MMA_SYNC ? "mma_sync"
                                                      : "none")
               : "none");
    return NULL;
  }
  LLVMContextRef ctx = LLVMGetModuleContext(m);
  LLVMTypeRef i1 = LLVMInt1TypeInContext(ctx), i16 = LLVMInt16TypeInContext(ctx), i32 = LLVMInt32TypeInContext(ctx);
  bool is_i8 = !strcmp(d->in_type, "i8"), is_bf16 = !strcmp(d->in_type, "bf16");
  unsigned abits = total_bits(LLVMTypeOf(a)), bbits = total_bits(LLVMTypeOf(bv));
  switch (d->kind) {
    case KL_ACCEL_MFMA: {
      LLVMValueRef ab[2] = { a, bv };
      for (int i = 0; i < 2; i++) {
        unsigned bits = i ? bbits : abits;
        if (is_i8)
          ab[i] = cast(b, ab[i], LLVMIntTypeInContext(ctx, bits));
        else if (is_bf16)
          ab[i] = cast(b, ab[i], LLVMVectorType(i16, bits / 16));
      }
      LLVMValueRef z = LLVMConstInt(i32, 0, 0);
      LLVMValueRef args[6] = { ab[0], ab[1], c, z, z, z };
      return call(m, b, d->intrinsic, NULL, 0, args, 6, err, errlen);
    }
    case KL_ACCEL_WMMA: {
      LLVMTypeRef abt = is_i8 ? LLVMVectorType(i32, abits / 32)
          : is_bf16           ? LLVMVectorType(i16, abits / 16)
                              : LLVMTypeOf(a);
      LLVMValueRef x = cast(b, a, abt), y = cast(b, bv, abt);
      LLVMTypeRef over[2] = { LLVMTypeOf(c), abt };
      if (is_i8) {
        LLVMValueRef one = LLVMConstInt(i1, 1, 0), zero = LLVMConstInt(i1, 0, 0);
        LLVMValueRef args[6] = { one, x, one, y, c, zero }; /* signed A, signed B, no clamp */
        return call(m, b, d->intrinsic, over, 2, args, 6, err, errlen);
      }
      LLVMValueRef args[3] = { x, y, c };
      return call(m, b, d->intrinsic, over, 2, args, 3, err, errlen);
    }
    case KL_ACCEL_MMA_SYNC: {
      int na = (int)(abits / 32), nb = (int)(bbits / 32), nc = (int)LLVMGetVectorSize(LLVMTypeOf(c));
      if (na > 4 || nb > 2 || nc > 4) {
        snprintf(err, errlen, "mma.sync operands too large (%d, %d, %d registers)", na, nb, nc);
        return NULL;
      }
      LLVMTypeRef piece = (is_i8 || is_bf16) ? i32 : LLVMVectorType(LLVMHalfTypeInContext(ctx), 2);
      LLVMValueRef args[10];
      split32(ctx, b, a, na, piece, args);
      split32(ctx, b, bv, nb, piece, args + na);
      for (int i = 0; i < nc; i++)
        args[na + nb + i] = LLVMBuildExtractElement(b, c, LLVMConstInt(i32, (unsigned)i, 0), "");
      LLVMValueRef r = call(m, b, d->intrinsic, NULL, 0, args, na + nb + nc, err, errlen);
      if (!r) return NULL;
      LLVMValueRef v = LLVMGetUndef(LLVMTypeOf(c));
      for (int i = 0; i < nc; i++)
        v = LLVMBuildInsertElement(b, v, LLVMBuildExtractValue(b, r, (unsigned)i, ""),
                                   LLVMConstInt(i32, (unsigned)i, 0), "");
      return v;
    }
    default: snprintf(err, errlen, "target %s has no matrix unit", t->name); return NULL;
  }
}

/* rock.ldmatrix / rock.stmatrix: their matrices per lane (num: 1, 2 or 4, else false and
 * the error) and .trans */
static bool matrix_shape(kl_op *op, int64_t *num, bool *trans, char *err, size_t errlen) {
  *num = 0;
  kl_op_attr_i64(op, "num", num);
  const kl_attr *tr = kl_op_attr(op, "trans");
  *trans = tr && tr->kind == KL_AT_BOOL && tr->i;
  if (*num != 1 && *num != 2 && *num != 4) {
    snprintf(err, errlen, "%s: num must be 1, 2 or 4", op->name);
    return false;
  }
  return true;
}

LLVMValueRef kl_lower_accel_ldmatrix(LLVMModuleRef m, LLVMBuilderRef b, const kl_target *t, kl_op *op, LLVMValueRef p,
                                     LLVMTypeRef result, char *err, size_t errlen) {
  if (!t || t->arch != KL_ARCH_NVPTX || t->accel != KL_ACCEL_MMA_SYNC) {
    snprintf(err, errlen, "rock.ldmatrix needs an NVIDIA target with mma.sync (sm_80+), not %s", t ? t->name : "?");
    return NULL;
  }
  int64_t num;
  bool trans;
  if (!matrix_shape(op, &num, &trans, err, errlen)) return NULL;
  char name[96];
  snprintf(name, sizeof name, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x%d%s.b16", (int)num, trans ? ".trans" : "");
  LLVMContextRef ctx = LLVMGetModuleContext(m);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx), pt = LLVMTypeOf(p);
  LLVMValueRef r = call(m, b, name, &pt, 1, &p, 1, err, errlen);
  if (!r) return NULL;
  LLVMTypeRef vt = LLVMVectorType(i32, (unsigned)num);
  LLVMValueRef v = LLVMGetUndef(vt);
  for (int i = 0; i < num; i++) {
    LLVMValueRef x = num == 1 ? r : LLVMBuildExtractValue(b, r, (unsigned)i, "");
    v = LLVMBuildInsertElement(b, v, x, LLVMConstInt(i32, (unsigned)i, 0), "");
  }
  return LLVMBuildBitCast(b, v, result, "");
}

bool kl_lower_accel_stmatrix(LLVMModuleRef m, LLVMBuilderRef b, const kl_target *t, kl_op *op, LLVMValueRef p,
                             LLVMValueRef v, char *err, size_t errlen) {
  if (!kl_target_has_stmatrix(t)) {
    snprintf(err, errlen, "rock.stmatrix needs an NVIDIA target of sm_90 or later, not %s", t ? t->name : "?");
    return false;
  }
  int64_t num;
  bool trans;
  if (!matrix_shape(op, &num, &trans, err, errlen)) return false;
  /* no LLVM 19 intrinsic: inline PTX with the 32-bit shared-window address */
  LLVMContextRef ctx = LLVMGetModuleContext(m);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
  LLVMValueRef args[5];
  args[0] = LLVMBuildPtrToInt(b, p, i32, "");
  LLVMValueRef w = LLVMBuildBitCast(b, v, LLVMVectorType(i32, (unsigned)num), "");
  for (int i = 0; i < num; i++) args[1 + i] = LLVMBuildExtractElement(b, w, LLVMConstInt(i32, (unsigned)i, 0), "");
  char text[160], cons[64];
  int n = snprintf(text, sizeof text, "stmatrix.sync.aligned.m8n8.x%d%s.shared.b16 [$0], {", (int)num,
                   trans ? ".trans" : "");
  for (int i = 0; i < num; i++) n += snprintf(text + n, sizeof text - n, "%s$%d", i ? ", " : "", 1 + i);
  snprintf(text + n, sizeof text - n, "};");
  n = snprintf(cons, sizeof cons, "r");
  for (int i = 0; i < num; i++) n += snprintf(cons + n, sizeof cons - n, ",r");
  snprintf(cons + n, sizeof cons - n, ",~{memory}");
  LLVMTypeRef tys[5] = { i32, i32, i32, i32, i32 };
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), tys, (unsigned)(1 + num), 0);
  LLVMValueRef f = LLVMGetInlineAsm(fty, text, strlen(text), cons, strlen(cons), 1, 0, LLVMInlineAsmDialectATT, 0);
  LLVMBuildCall2(b, fty, f, args, (unsigned)(1 + num), "");
  return true;
}
