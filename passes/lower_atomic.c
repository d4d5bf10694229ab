/* lower_atomic.c — rock.atomic_rmw to LLVM atomicrmw (lower_atomic.h). */
#include "passes/lower_atomic.h"
#include <llvm-c/IRReader.h>
#include <llvm-c/Linker.h>
#include <stdio.h>
#include <string.h>

static const char *ir_type_name(LLVMTypeRef t) {
  switch (LLVMGetTypeKind(t)) {
    case LLVMHalfTypeKind: return "half";
    case LLVMBFloatTypeKind: return "bfloat";
    case LLVMFloatTypeKind: return "float";
    case LLVMDoubleTypeKind: return "double";
    case LLVMIntegerTypeKind: return LLVMGetIntTypeWidth(t) == 64 ? "i64" : "i32";
    default: return NULL;
  }
}

/* The AMDGPU helper void @kiln.atomic.<op>.<type>.p<as>(ptr addrspace(as), <type>), made once
 * per module; NULL on failure. */
static LLVMValueRef amdgpu_helper(kl_llvm_lowering *L, const char *op, LLVMTypeRef et, unsigned as, char *why,
                                  size_t whylen) {
  const char *tn = ir_type_name(et);
  snprintf(why, whylen, "no atomic of this element type");
  if (!tn) return NULL;
  char name[96], text[1024];
  snprintf(name, sizeof name, "kiln.atomic.%s.%s.p%u", op, tn, as);
  LLVMModuleRef m = kl_llvm_module(L);
  LLVMValueRef f = LLVMGetNamedFunction(m, name);
  if (f) return f;
  snprintf(text, sizeof text,
           "target triple = \"%s\"\n"
           "define void @\"%s\"(ptr addrspace(%u) %%p, %s %%v) alwaysinline {\n"
           "  %%r = atomicrmw %s ptr addrspace(%u) %%p, %s %%v syncscope(\"agent\") monotonic, "
           "!amdgpu.no.fine.grained.memory !0\n"
           "  ret void\n}\n!0 = !{}\n",
           LLVMGetTarget(m), name, as, tn, op, as, tn);
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(text, strlen(text), "kiln.atomic");
  LLVMModuleRef h = NULL;
  char *msg = NULL;
  if (LLVMParseIRInContext(kl_llvm_context(L), buf, &h, &msg)) { /* takes the buffer */
    snprintf(why, whylen, "parsing the helper: %s", msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return NULL;
  }
  LLVMSetDataLayout(h, LLVMGetDataLayoutStr(m));
  snprintf(why, whylen, "linking the helper failed");
  if (LLVMLinkModules2(m, h)) return NULL; /* destroys h */
  f = LLVMGetNamedFunction(m, name);       /* linked external (an unused internal one would be dropped) */
  if (f) LLVMSetLinkage(f, LLVMInternalLinkage);
  return f;
}

static bool one(kl_llvm_lowering *L, kl_op *op, const char *kind, LLVMValueRef p, LLVMValueRef x, LLVMTypeRef et) {
  LLVMBuilderRef b = kl_llvm_builder(L);
  bool fp = LLVMGetTypeKind(et) != LLVMIntegerTypeKind, add = !strcmp(kind, "add");
  if (kl_llvm_target(L)->arch == KL_ARCH_AMDGPU) {
    char why[512], msg[600];
    LLVMValueRef f = amdgpu_helper(L, fp ? (add ? "fadd" : "fmax") : (add ? "add" : "max"), et,
                                   LLVMGetPointerAddressSpace(LLVMTypeOf(p)), why, sizeof why);
    if (!f) {
      snprintf(msg, sizeof msg, "cannot build the AMDGPU atomic helper: %s", why);
      return kl_llvm_fail(L, op, msg);
    }
    LLVMValueRef args[2] = { p, x };
    LLVMBuildCall2(b, LLVMGlobalGetValueType(f), f, args, 2, "");
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
    static const char k[] = "amdgpu-unsafe-fp-atomics", v[] = "true";
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(kl_llvm_context(L), k, sizeof k - 1, v, sizeof v - 1));
    return true;
  }
  LLVMAtomicRMWBinOp bop = fp ? (add ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpFMax)
                              : (add ? LLVMAtomicRMWBinOpAdd : LLVMAtomicRMWBinOpMax);
  LLVMBuildAtomicRMW(b, bop, p, x, LLVMAtomicOrderingMonotonic, 0);
  return true;
}

bool kl__lower_atomic_rmw(kl_llvm_lowering *L, kl_op *op) {
  const char *kind = kl_op_attr_string(op, "kind");
  if (!kind || (strcmp(kind, "add") && strcmp(kind, "max")))
    return kl_llvm_fail(L, op, "kind must be \"add\" or \"max\"");
  LLVMTypeRef et;
  LLVMValueRef p = kl_llvm_address(L, op, 1, &et), x = kl_llvm_value(L, op->opnds[0].value);
  const kl_type *vt = op->opnds[0].value->type;
  if (vt->kind != KL_TY_VECTOR) return one(L, op, kind, p, x, et);
  LLVMBuilderRef b = kl_llvm_builder(L);
  LLVMTypeRef i64 = LLVMInt64TypeInContext(kl_llvm_context(L));
  for (int64_t i = 0; i < vt->shape[0]; i++) {
    LLVMValueRef idx = LLVMConstInt(i64, (unsigned long long)i, 0);
    LLVMValueRef pi = LLVMBuildGEP2(b, et, p, &idx, 1, "");
    if (!one(L, op, kind, pi, LLVMBuildExtractElement(b, x, idx, ""), et)) return false;
  }
  return true;
}
