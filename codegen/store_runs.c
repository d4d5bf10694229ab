/* store_runs.c — compiler-only memory barriers in long runs of stores (see store_runs.h). */
#include "codegen/store_runs.h"

#include <stddef.h>

int kl_llvm_break_store_runs(LLVMModuleRef m, int run) {
  if (run < 2) return 0;
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(c), NULL, 0, 0);
  LLVMValueRef fence = LLVMGetInlineAsm(fty, "", 0, "~{memory}", 9, 1, 0, LLVMInlineAsmDialectATT, 0);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  int n = 0;
  for (LLVMValueRef fn = LLVMGetFirstFunction(m); fn; fn = LLVMGetNextFunction(fn))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
      int stores = 0;
      for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = LLVMGetNextInstruction(in)) {
        if (LLVMIsACallInst(in)) stores = 0;
        if (!LLVMIsAStoreInst(in) || ++stores < run) continue;
        stores = 0;
        LLVMValueRef next = LLVMGetNextInstruction(in);
        if (!next || LLVMIsACallInst(next)) continue;
        LLVMPositionBuilderBefore(b, next);
        LLVMBuildCall2(b, fty, fence, NULL, 0, "");
        n++;
      }
    }
  LLVMDisposeBuilder(b);
  return n;
}
