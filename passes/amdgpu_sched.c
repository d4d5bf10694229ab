/* amdgpu_sched.c — llvm.amdgcn.sched.barrier after the K loop's prefetch and after the LDS
 * barrier before gathered f32 pair stores (amdgpu_sched.h). */
#include "passes/amdgpu_sched.h"
#include <string.h>

#define LDS_BARRIER "kiln.amdgpu.lds_barrier"

static const char *callee_name(LLVMValueRef inst) {
  if (LLVMGetInstructionOpcode(inst) != LLVMCall) return NULL;
  LLVMValueRef f = LLVMGetCalledValue(inst);
  if (!f || !LLVMIsAFunction(f)) return NULL;
  size_t n;
  return LLVMGetValueName2(f, &n);
}

static int is_lds_barrier(LLVMValueRef inst) {
  const char *n = callee_name(inst);
  return n && !strcmp(n, LDS_BARRIER);
}

static int is_access(LLVMValueRef inst, LLVMOpcode op, unsigned ptr_operand, unsigned as) {
  if (LLVMGetInstructionOpcode(inst) != op) return 0;
  LLVMTypeRef pt = LLVMTypeOf(LLVMGetOperand(inst, ptr_operand));
  return LLVMGetTypeKind(pt) == LLVMPointerTypeKind && LLVMGetPointerAddressSpace(pt) == as;
}
static int is_global_load(LLVMValueRef inst) { return is_access(inst, LLVMLoad, 0, 1); }
static int is_lds_store(LLVMValueRef inst) { return is_access(inst, LLVMStore, 1, 3); }

/* a store of <2 x float> = shufflevector(<1 x float> a, <1 x float> b), a != b */
static int is_f32_pair_store(LLVMValueRef st) {
  LLVMValueRef v = LLVMGetOperand(st, 0);
  if (!LLVMIsAInstruction(v) || LLVMGetInstructionOpcode(v) != LLVMShuffleVector) return 0;
  LLVMTypeRef t = LLVMTypeOf(v);
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind || LLVMGetVectorSize(t) != 2 ||
      LLVMGetTypeKind(LLVMGetElementType(t)) != LLVMFloatTypeKind)
    return 0;
  LLVMValueRef a = LLVMGetOperand(v, 0), b = LLVMGetOperand(v, 1);
  return a != b && !LLVMIsPoison(b) && !LLVMIsUndef(b) && LLVMGetVectorSize(LLVMTypeOf(a)) == 1 &&
      LLVMGetVectorSize(LLVMTypeOf(b)) == 1;
}

static int has_mma(LLVMValueRef fn) {
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      const char *n = callee_name(i);
      if (n && (!strncmp(n, "llvm.amdgcn.mfma.", 17) || !strncmp(n, "llvm.amdgcn.wmma.", 17))) return 1;
    }
  return 0;
}

/* call void @llvm.amdgcn.sched.barrier(i32 0) before inst */
static void sched_barrier_before(LLVMValueRef inst) {
  LLVMModuleRef m = LLVMGetGlobalParent(LLVMGetBasicBlockParent(LLVMGetInstructionParent(inst)));
  LLVMContextRef c = LLVMGetModuleContext(m);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(c);
  LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(c), &i32, 1, 0);
  LLVMValueRef sb = LLVMGetNamedFunction(m, "llvm.amdgcn.sched.barrier");
  if (!sb) sb = LLVMAddFunction(m, "llvm.amdgcn.sched.barrier", ft);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
  LLVMPositionBuilderBefore(b, inst);
  LLVMValueRef zero = LLVMConstInt(i32, 0, 0);
  LLVMBuildCall2(b, ft, sb, &zero, 1, "");
  LLVMDisposeBuilder(b);
}

int kl_amdgpu_pin_prefetch(LLVMValueRef fn) {
  if (!has_mma(fn)) return 0;
  int n = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
    LLVMValueRef last = NULL;
    int after_barrier = 0;
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      if (is_lds_barrier(i))
        after_barrier = 1, last = NULL;
      else if (after_barrier && is_global_load(i))
        last = i;
    }
    if (!last) continue;
    sched_barrier_before(LLVMGetNextInstruction(last));
    n++;
  }
  return n;
}

int kl_amdgpu_pin_pair_stores(LLVMValueRef fn) {
  if (!has_mma(fn)) return 0;
  int n = 0;
  for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
      if (!is_lds_barrier(i)) continue;
      int pair = 0;
      for (LLVMValueRef j = LLVMGetNextInstruction(i); j && !pair && !is_lds_barrier(j) && !is_global_load(j);
           j = LLVMGetNextInstruction(j))
        pair = is_lds_store(j) && is_f32_pair_store(j);
      if (!pair) continue;
      sched_barrier_before(LLVMGetNextInstruction(i));
      n++;
    }
  return n;
}
