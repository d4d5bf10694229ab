/* lane_casts.c — vector casts read lane by lane become scalar casts (see lane_casts.h). */
#include "codegen/lane_casts.h"

#include <stdbool.h>

/* The constant lane index of extractelement x, or -1. */
static long long lane_of(LLVMValueRef x) {
  LLVMValueRef ix = LLVMGetOperand(x, 1);
  return LLVMIsAConstantInt(ix) ? LLVMConstIntGetSExtValue(ix) : -1;
}

static bool read_by_lane(LLVMValueRef cast) {
  if (!LLVMGetFirstUse(cast)) return false;
  for (LLVMUseRef u = LLVMGetFirstUse(cast); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef user = LLVMGetUser(u);
    if (!LLVMIsAExtractElementInst(user) || lane_of(user) < 0) return false;
  }
  return true;
}

static void scalarize(LLVMBuilderRef b, LLVMValueRef cast) {
  LLVMValueRef src = LLVMGetOperand(cast, 0);
  LLVMTypeRef et = LLVMGetElementType(LLVMTypeOf(cast));
  LLVMOpcode op = LLVMGetInstructionOpcode(cast);
  LLVMUseRef u;
  while ((u = LLVMGetFirstUse(cast))) {
    LLVMValueRef x = LLVMGetUser(u);
    LLVMPositionBuilderBefore(b, x);
    LLVMValueRef lane = LLVMBuildExtractElement(b, src, LLVMGetOperand(x, 1), "");
    LLVMValueRef s = LLVMBuildCast(b, op, lane, et, "");
    LLVMReplaceAllUsesWith(x, s);
    LLVMInstructionEraseFromParent(x);
  }
  LLVMInstructionEraseFromParent(cast);
}

int kl_llvm_scalarize_lane_casts(LLVMModuleRef m) {
  int n = 0;
  LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(m));
  for (LLVMValueRef fn = LLVMGetFirstFunction(m); fn; fn = LLVMGetNextFunction(fn))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
      LLVMValueRef next;
      for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = next) {
        next = LLVMGetNextInstruction(in);
        if (!LLVMIsACastInst(in) || LLVMGetTypeKind(LLVMTypeOf(in)) != LLVMVectorTypeKind) continue;
        LLVMTypeRef st = LLVMTypeOf(LLVMGetOperand(in, 0)); /* a bitcast may change the lanes */
        if (LLVMGetTypeKind(st) != LLVMVectorTypeKind || LLVMGetVectorSize(st) != LLVMGetVectorSize(LLVMTypeOf(in)))
          continue;
        if (!read_by_lane(in)) continue;
        scalarize(b, in);
        n++;
      }
    }
  LLVMDisposeBuilder(b);
  return n;
}
