/* wide_private.c — wide vector loads and stores of private memory go lane by lane (see
 * wide_private.h). */
#include "codegen/wide_private.h"
#include "core/arena.h"

#include <stdbool.h>
#include <stdlib.h>

/* The constant lane index of extract- / insertelement x (index operand ix), or -1. */
static long long lane_at(LLVMValueRef x, unsigned ix) {
  LLVMValueRef i = LLVMGetOperand(x, ix);
  return LLVMIsAConstantInt(i) ? LLVMConstIntGetSExtValue(i) : -1;
}

/* Is p an alloca, or a GEP of one with constant indices? */
static bool private_address(LLVMValueRef p) {
  if (LLVMIsAAllocaInst(p)) return true;
  if (!LLVMIsAGetElementPtrInst(p) || !LLVMIsAAllocaInst(LLVMGetOperand(p, 0))) return false;
  for (int i = 1; i < LLVMGetNumOperands(p); i++)
    if (!LLVMIsAConstantInt(LLVMGetOperand(p, i))) return false;
  return true;
}

/* The fixed vector type of v with at least min lanes, or NULL. */
static LLVMTypeRef wide(LLVMValueRef v, unsigned min) {
  LLVMTypeRef t = LLVMTypeOf(v);
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind && LLVMGetVectorSize(t) >= min ? t : NULL;
}

static LLVMValueRef lane_address(LLVMBuilderRef b, LLVMTypeRef et, LLVMValueRef p, long long lane) {
  LLVMTypeRef i64 = LLVMInt64TypeInContext(LLVMGetTypeContext(et));
  LLVMValueRef ix = LLVMConstInt(i64, (unsigned long long)lane, 0);
  return LLVMBuildInBoundsGEP2(b, et, p, &ix, 1, "");
}

/* A load read by constant-lane extracts only: one scalar load per extract. */
static bool split_load(LLVMBuilderRef b, LLVMValueRef ld, unsigned min) {
  LLVMTypeRef vt = wide(ld, min);
  LLVMValueRef p = LLVMGetOperand(ld, 0);
  if (!vt || LLVMGetVolatile(ld) || !private_address(p) || !LLVMGetFirstUse(ld)) return false;
  long long n = LLVMGetVectorSize(vt);
  for (LLVMUseRef u = LLVMGetFirstUse(ld); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef x = LLVMGetUser(u);
    long long lane = LLVMIsAExtractElementInst(x) ? lane_at(x, 1) : -1;
    if (lane < 0 || lane >= n) return false;
  }
  LLVMTypeRef et = LLVMGetElementType(vt);
  LLVMUseRef u;
  while ((u = LLVMGetFirstUse(ld))) {
    LLVMValueRef x = LLVMGetUser(u);
    LLVMPositionBuilderBefore(b, ld); /* where the vector was read */
    long long lane = lane_at(x, 1);
    LLVMValueRef s = LLVMBuildLoad2(b, et, lane_address(b, et, p, lane), "");
    LLVMReplaceAllUsesWith(x, s);
    LLVMInstructionEraseFromParent(x);
  }
  LLVMInstructionEraseFromParent(ld);
  return true;
}

/* A store of a full insert chain used by nothing else: one scalar store per lane. */
static bool split_store(LLVMBuilderRef b, LLVMValueRef st, unsigned min) {
  LLVMValueRef v = LLVMGetOperand(st, 0), p = LLVMGetOperand(st, 1);
  LLVMTypeRef vt = wide(v, min);
  if (!vt || LLVMGetVolatile(st) || !private_address(p)) return false;
  unsigned n = LLVMGetVectorSize(vt);
  LLVMValueRef *lanes = kl_xcalloc(n, sizeof *lanes);
  unsigned set = 0;
  LLVMValueRef x = v;
  for (; LLVMIsAInsertElementInst(x); x = LLVMGetOperand(x, 0)) {
    LLVMUseRef u = LLVMGetFirstUse(x);
    long long lane = lane_at(x, 2);
    if (!u || LLVMGetNextUse(u) || lane < 0 || lane >= n) break; /* one use: the next link or the store */
    if (!lanes[lane]) set++, lanes[lane] = LLVMGetOperand(x, 1); /* the last insert of a lane wins */
  }
  bool ok = set == n && (LLVMIsUndef(x) || LLVMIsPoison(x));
  if (ok) {
    LLVMTypeRef et = LLVMGetElementType(vt);
    LLVMPositionBuilderBefore(b, st);
    for (unsigned i = 0; i < n; i++) LLVMBuildStore(b, lanes[i], lane_address(b, et, p, i));
    LLVMInstructionEraseFromParent(st);
    while (LLVMIsAInsertElementInst(v)) {
      LLVMValueRef prev = LLVMGetOperand(v, 0);
      LLVMInstructionEraseFromParent(v);
      v = prev;
    }
  }
  free(lanes);
  return ok;
}

int kl_llvm_scalarize_wide_private(LLVMModuleRef m, unsigned min_lanes) {
  int n = 0;
  LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(m));
  for (LLVMValueRef fn = LLVMGetFirstFunction(m); fn; fn = LLVMGetNextFunction(fn))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
      for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in;) {
        /* a load's rewrite erases it and its extracts, which may follow it: go on after the
         * instruction before it (the scalar loads it put there); a store's erases it and
         * the insert chain before it: go on after it */
        LLVMValueRef prev = LLVMGetPreviousInstruction(in), next = LLVMGetNextInstruction(in);
        if (LLVMIsALoadInst(in) && split_load(b, in, min_lanes)) {
          n++;
          in = prev ? LLVMGetNextInstruction(prev) : LLVMGetFirstInstruction(bb);
        } else {
          n += LLVMIsAStoreInst(in) && split_store(b, in, min_lanes);
          in = next;
        }
      }
    }
  LLVMDisposeBuilder(b);
  return n;
}
