/* lower_lane.c — rock.lane_shuffle to NVPTX / AMDGPU cross-lane intrinsics (lower_lane.h). */
#include "passes/lower_lane.h"
#include <string.h>

static LLVMValueRef intr(kl_llvm_lowering *L, const char *name, LLVMValueRef *args, int n) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMModuleRef m = kl_llvm_module(L);
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(m, id, NULL, 0);
  LLVMTypeRef ft = LLVMIntrinsicGetType(kl_llvm_context(L), id, NULL, 0);
  return LLVMBuildCall2(kl_llvm_builder(L), ft, f, args, n, "");
}
/* one i32 from lane (lane ^ x) */
static LLVMValueRef shuffle32(kl_llvm_lowering *L, LLVMValueRef v, int64_t x) {
  LLVMContextRef c = kl_llvm_context(L);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c);
  LLVMBuilderRef b = kl_llvm_builder(L);
  if (kl_llvm_target(L)->arch == KL_ARCH_NVPTX) {
    LLVMValueRef a[4] = { LLVMConstInt(i32, 0xffffffffu, 0), v, LLVMConstInt(i32, (unsigned long long)x, 0),
                          LLVMConstInt(i32, 0x1f, 0) };
    return intr(L, "llvm.nvvm.shfl.sync.bfly.i32", a, 4);
  }
  LLVMValueRef lo[2] = { LLVMConstInt(i32, 0xffffffffu, 0), LLVMConstInt(i32, 0, 0) };
  LLVMValueRef lane = intr(L, "llvm.amdgcn.mbcnt.lo", lo, 2);
  if (kl_llvm_target(L)->wave_size > 32) {
    LLVMValueRef hi[2] = { LLVMConstInt(i32, 0xffffffffu, 0), lane };
    lane = intr(L, "llvm.amdgcn.mbcnt.hi", hi, 2);
  }
  LLVMValueRef src = LLVMBuildXor(b, lane, LLVMConstInt(i32, (unsigned long long)x, 0), "");
  LLVMValueRef a[2] = { LLVMBuildShl(b, src, LLVMConstInt(i32, 2, 0), ""), v };
  return intr(L, "llvm.amdgcn.ds.bpermute", a, 2);
}

bool kl__lower_lane_shuffle(kl_llvm_lowering *L, kl_op *op) {
  LLVMValueRef v = kl_llvm_value(L, op->opnds[0].value);
  if (!v) return kl_llvm_fail(L, op, "the operand has no lowered value");
  const kl_target *t = kl_llvm_target(L);
  int64_t x = 0;
  kl_op_attr_i64(op, "xor", &x);
  if (t->arch == KL_ARCH_HOST || x >= t->wave_size) {
    kl_llvm_set_value(L, &op->results[0], v);
    return true;
  }
  LLVMContextRef c = kl_llvm_context(L);
  LLVMBuilderRef b = kl_llvm_builder(L);
  LLVMTypeRef ty = LLVMTypeOf(v), i32 = LLVMInt32TypeInContext(c);
  LLVMValueRef r;
  if (LLVMGetTypeKind(ty) == LLVMDoubleTypeKind ||
      (LLVMGetTypeKind(ty) == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(ty) == 64)) {
    LLVMTypeRef v2 = LLVMVectorType(i32, 2);
    LLVMValueRef p = LLVMBuildBitCast(b, v, v2, ""), z = LLVMConstInt(i32, 0, 0), o = LLVMConstInt(i32, 1, 0);
    LLVMValueRef lo = shuffle32(L, LLVMBuildExtractElement(b, p, z, ""), x);
    LLVMValueRef hi = shuffle32(L, LLVMBuildExtractElement(b, p, o, ""), x);
    p = LLVMBuildInsertElement(b, LLVMBuildInsertElement(b, LLVMGetPoison(v2), lo, z, ""), hi, o, "");
    r = LLVMBuildBitCast(b, p, ty, "");
  } else {
    r = LLVMBuildBitCast(b, shuffle32(L, LLVMBuildBitCast(b, v, i32, ""), x), ty, "");
  }
  kl_llvm_set_value(L, &op->results[0], r);
  return true;
}
