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

/* Parses the IR text of helper `name` (a definition of `void @"<name>"(...)`) into the
 * module once and returns it (internal linkage); NULL with a reason on failure. */
static LLVMValueRef ir_helper(kl_llvm_lowering *L, const char *name, const char *def, char *why, size_t whylen) {
  LLVMModuleRef m = kl_llvm_module(L);
  LLVMValueRef f = LLVMGetNamedFunction(m, name);
  if (f) return f;
  char text[4096];
  snprintf(text, sizeof text, "target triple = \"%s\"\n%s!0 = !{}\n", LLVMGetTarget(m), def);
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

/* The AMDGPU helper void @kiln.atomic.<op>.<type>.p<as>(ptr addrspace(as), <type>), made once
 * per module; NULL on failure. */
static LLVMValueRef amdgpu_helper(kl_llvm_lowering *L, const char *op, LLVMTypeRef et, unsigned as, char *why,
                                  size_t whylen) {
  const char *tn = ir_type_name(et);
  snprintf(why, whylen, "no atomic of this element type");
  if (!tn) return NULL;
  char name[96], def[1024];
  snprintf(name, sizeof name, "kiln.atomic.%s.%s.p%u", op, tn, as);
  snprintf(def, sizeof def,
           "define void @\"%s\"(ptr addrspace(%u) %%p, %s %%v) alwaysinline {\n"
           "  %%r = atomicrmw %s ptr addrspace(%u) %%p, %s %%v syncscope(\"agent\") monotonic, "
           "!amdgpu.no.fine.grained.memory !0\n"
           "  ret void\n}\n",
           name, as, tn, op, as, tn);
  return ir_helper(L, name, def, why, whylen);
}

/* The float max / min helper void @kiln.atomic.<max|min>nan.<type>.p<as>(ptr, <type>): a
 * compare-and-swap loop whose stored value is llvm.maximum / minimum (NaN propagates, -0 <
 * +0: the graph ops' semantics); it stops when the element is already NaN or already the
 * result. f32 / f64 only (the CAS works on the same-sized integer). */
static LLVMValueRef cas_helper(kl_llvm_lowering *L, bool max, LLVMTypeRef et, unsigned as, char *why, size_t whylen) {
  const char *tn = ir_type_name(et);
  LLVMTypeKind k = LLVMGetTypeKind(et);
  snprintf(why, whylen, "no compare-and-swap max / min of this element type");
  if (!tn || (k != LLVMFloatTypeKind && k != LLVMDoubleTypeKind)) return NULL;
  const char *it = k == LLVMFloatTypeKind ? "i32" : "i64", *sfx = k == LLVMFloatTypeKind ? "f32" : "f64";
  bool amd = kl_llvm_target(L)->arch == KL_ARCH_AMDGPU;
  const char *scope = amd ? " syncscope(\"agent\")" : "";
  char name[96], def[3072];
  snprintf(name, sizeof name, "kiln.atomic.%snan.%s.p%u", max ? "max" : "min", tn, as);
  snprintf(def, sizeof def,
           "declare %s @llvm.%s.%s(%s, %s)\n"
           "define void @\"%s\"(ptr addrspace(%u) %%p, %s %%v) alwaysinline {\n"
           "entry:\n"
           "  %%o0 = load atomic %s, ptr addrspace(%u) %%p%s monotonic, align %d\n"
           "  br label %%loop\n"
           "loop:\n"
           "  %%o = phi %s [ %%o0, %%entry ], [ %%seen, %%retry ]\n"
           "  %%of = bitcast %s %%o to %s\n"
           "  %%isnan = fcmp uno %s %%of, %%of\n"
           "  br i1 %%isnan, label %%done, label %%cmp\n"
           "cmp:\n"
           "  %%nf = call %s @llvm.%s.%s(%s %%of, %s %%v)\n"
           "  %%n = bitcast %s %%nf to %s\n"
           "  %%same = icmp eq %s %%n, %%o\n"
           "  br i1 %%same, label %%done, label %%try\n"
           "try:\n"
           "  %%r = cmpxchg ptr addrspace(%u) %%p, %s %%o, %s %%n%s monotonic monotonic, align %d\n"
           "  %%seen = extractvalue { %s, i1 } %%r, 0\n"
           "  %%ok = extractvalue { %s, i1 } %%r, 1\n"
           "  br i1 %%ok, label %%done, label %%retry\n"
           "retry:\n"
           "  br label %%loop\n"
           "done:\n"
           "  ret void\n}\n",
           tn, max ? "maximum" : "minimum", sfx, tn, tn, name, as, tn, it, as, scope, k == LLVMFloatTypeKind ? 4 : 8,
           it, it, tn, tn, tn, max ? "maximum" : "minimum", sfx, tn, tn, tn, it, it, as, it, it, scope,
           k == LLVMFloatTypeKind ? 4 : 8, it, it);
  return ir_helper(L, name, def, why, whylen);
}

static bool one(kl_llvm_lowering *L, kl_op *op, const char *kind, LLVMValueRef p, LLVMValueRef x, LLVMTypeRef et) {
  LLVMBuilderRef b = kl_llvm_builder(L);
  bool fp = LLVMGetTypeKind(et) != LLVMIntegerTypeKind, add = !strcmp(kind, "add"), max = !strcmp(kind, "max");
  bool amd = kl_llvm_target(L)->arch == KL_ARCH_AMDGPU;
  unsigned as = LLVMGetPointerAddressSpace(LLVMTypeOf(p));
  if (amd || (fp && !add)) {
    char why[512], msg[600];
    LLVMValueRef f = fp && !add ? cas_helper(L, max, et, as, why, sizeof why)
                                : amdgpu_helper(L,
                                                fp ? "fadd"
                                                   : (add       ? "add"
                                                          : max ? "max"
                                                                : "min"),
                                                et, as, why, sizeof why);
    if (!f) {
      snprintf(msg, sizeof msg, "cannot build the atomic %s helper: %s", kind, why);
      return kl_llvm_fail(L, op, msg);
    }
    LLVMValueRef args[2] = { p, x };
    LLVMBuildCall2(b, LLVMGlobalGetValueType(f), f, args, 2, "");
    if (amd && add) {
      LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
      static const char k[] = "amdgpu-unsafe-fp-atomics", v[] = "true";
      LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                              LLVMCreateStringAttribute(kl_llvm_context(L), k, sizeof k - 1, v, sizeof v - 1));
    }
    return true;
  }
  LLVMAtomicRMWBinOp bop = fp ? LLVMAtomicRMWBinOpFAdd
                              : (add       ? LLVMAtomicRMWBinOpAdd
                                     : max ? LLVMAtomicRMWBinOpMax
                                           : LLVMAtomicRMWBinOpMin);
  LLVMBuildAtomicRMW(b, bop, p, x, LLVMAtomicOrderingMonotonic, 0);
  return true;
}

bool kl__lower_atomic_rmw(kl_llvm_lowering *L, kl_op *op) {
  const char *kind = kl_op_attr_string(op, "kind");
  if (!kind || (strcmp(kind, "add") && strcmp(kind, "max") && strcmp(kind, "min")))
    return kl_llvm_fail(L, op, "kind must be \"add\", \"max\" or \"min\"");
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
