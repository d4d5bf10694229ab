/* amdgpu_sched.c — llvm.amdgcn.sched.barrier after the K loop's prefetch (amdgpu_sched.h). */
#include "passes/amdgpu_sched.h"
#include <string.h>

static const char *callee_name(LLVMValueRef inst) {
  if (LLVMGetInstructionOpcode(inst) != LLVMCall) return NULL;
  LLVMValueRef f = LLVMGetCalledValue(inst);
  if (!f || !LLVMIsAFunction(f)) return NULL;
  size_t n;
  return LLVMGetValueName2(f, &n);
}

static int is_global_load(LLVMValueRef inst) {
  if (LLVMGetInstructionOpcode(inst) != LLVMLoad) return 0;
  LLVMTypeRef pt = LLVMTypeOf(LLVMGetOperand(inst, 0));
  return LLVMGetTypeKind(pt) == LLVMPointerTypeKind && LLVMGetPointerAddressSpace(pt) == 1;
}

int kl_amdgpu_pin_prefetch(LLVMValueRef fn) {
  int has_mma = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb && !has_mma; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i && !has_mma; i = LLVMGetNextInstruction(i)) {
      const char *n = callee_name(i);
      if (n && (!strncmp(n, "llvm.amdgcn.mfma.", 17) || !strncmp(n, "llvm.amdgcn.wmma.", 17))) has_mma = 1;
    }
  if (!has_mma) return 0;
  LLVMModuleRef m = LLVMGetGlobalParent(fn);
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c), voidt = LLVMVoidTypeInContext(c);
  LLVMTypeRef ft = LLVMFunctionType(voidt, &i32, 1, 0);
  LLVMValueRef sb = NULL;
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  int n = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
    LLVMValueRef last = NULL;
    int after_barrier = 0;
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      const char *cn = callee_name(i);
      if (cn && !strcmp(cn, "kiln.amdgpu.lds_barrier"))
        after_barrier = 1, last = NULL;
      else if (after_barrier && is_global_load(i))
        last = i;
    }
    if (!last) continue;
    if (!sb) {
      sb = LLVMGetNamedFunction(m, "llvm.amdgcn.sched.barrier");
      if (!sb) sb = LLVMAddFunction(m, "llvm.amdgcn.sched.barrier", ft);
    }
    LLVMValueRef next = LLVMGetNextInstruction(last);
    LLVMPositionBuilderBefore(b, next);
    LLVMValueRef zero = LLVMConstInt(i32, 0, 0);
    LLVMBuildCall2(b, ft, sb, &zero, 1, "");
    n++;
  }
  LLVMDisposeBuilder(b);
  return n;
}
