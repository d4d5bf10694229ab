/* lower_barrier.c — rock.barrier to LLVM (lower_barrier.h). */
#include "passes/lower_barrier.h"
#include "passes/lower_tma.h"
#include "passes/rock_tma.h"
#include <llvm-c/IRReader.h>
#include <llvm-c/Linker.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define HELPER "kiln.amdgpu.lds_barrier"

/* Whether LLVM 19 drains every counter before an s_barrier on this chip (no
 * FeatureBackOffBarrier: the gfx8 and gfx9 chips before gfx90a, and gfx11), so that the
 * helper issues s_barrier from inline assembly instead (lower_barrier.h); cpu is the LLVM
 * CPU name. */
bool kl_amdgpu_barrier_drains(const char *cpu) {
  if (!cpu || strncmp(cpu, "gfx", 3)) return false;
  const char *v = cpu + 3;
  if (v[0] == '8' && v[1] && v[2] && !v[3]) return true; /* gfx8xx */
  if (v[0] == '9' && v[1] && v[2] && !v[3])              /* gfx9xx */
    return strcmp(v, "90a") != 0 && strncmp(v, "94", 2) != 0 && strncmp(v, "95", 2) != 0;
  return !strncmp(v, "11", 2) && v[2] && v[3] && !v[4]; /* gfx11xx */
}

/* void @kiln.amdgpu.lds_barrier(), made once per module; NULL (and why) on failure. */
static LLVMValueRef amdgpu_helper(kl_llvm_lowering *L, char *why, size_t whylen) {
  LLVMModuleRef m = kl_llvm_module(L);
  LLVMValueRef f = LLVMGetNamedFunction(m, HELPER);
  if (f) return f;
  const kl_target *t = kl_llvm_target(L);
  bool drains = kl_amdgpu_barrier_drains(t ? t->cpu : NULL);
  char text[1024];
  snprintf(text, sizeof text,
           "target triple = \"%s\"\n"
           "define void @\"" HELPER "\"() alwaysinline convergent nounwind {\n"
           "  fence syncscope(\"workgroup\") release, !mmra !0\n"
           "  %s\n"
           "  fence syncscope(\"workgroup\") acquire, !mmra !0\n"
           "  ret void\n}\n"
           "declare void @llvm.amdgcn.s.barrier() convergent nounwind\n"
           "attributes #0 = { convergent nounwind }\n"
           "!0 = !{!\"amdgpu-as\", !\"local\"}\n",
           LLVMGetTarget(m),
           drains ? "call void asm sideeffect \"s_waitcnt lgkmcnt(0)\\0A\\09s_barrier\", \"\"() #0"
                  : "call void @llvm.amdgcn.s.barrier()");
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(text, strlen(text), HELPER);
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
  f = LLVMGetNamedFunction(m, HELPER);     /* linked external (an unused internal one would be dropped) */
  if (f) LLVMSetLinkage(f, LLVMInternalLinkage);
  return f;
}

bool kl__lower_barrier(kl_llvm_lowering *L, kl_op *op) {
  LLVMBuilderRef b = kl_llvm_builder(L);
  switch (kl_llvm_target(L)->arch) {
    case KL_ARCH_NVPTX: {
      const char *scope = kl_op_attr_string(op, "scope");
      if (scope && !strcmp(scope, "cluster")) return kl__lower_cluster_barrier(L, op); /* passes/lower_tma.c */
      int64_t nc = kl_ws_consumer_threads(op);
      if (nc > 0) { /* the consumers of a warp-specialized kernel: bar.sync 1, nc (passes/rock_tma.h) */
        static const char cnt[] = "llvm.nvvm.barrier.sync.cnt";
        unsigned id = LLVMLookupIntrinsicID(cnt, sizeof cnt - 1);
        if (!id) return kl_llvm_fail(L, op, "no llvm.nvvm.barrier.sync.cnt intrinsic for the named barrier");
        LLVMTypeRef i32 = LLVMInt32TypeInContext(kl_llvm_context(L));
        LLVMValueRef f = LLVMGetIntrinsicDeclaration(kl_llvm_module(L), id, NULL, 0);
        LLVMValueRef args[2] = { LLVMConstInt(i32, 1, 0), LLVMConstInt(i32, (unsigned long long)nc, 0) };
        LLVMBuildCall2(b, LLVMIntrinsicGetType(kl_llvm_context(L), id, NULL, 0), f, args, 2, "");
        return true;
      }
      static const char name[] = "llvm.nvvm.barrier0";
      unsigned id = LLVMLookupIntrinsicID(name, sizeof name - 1);
      LLVMValueRef f = LLVMGetIntrinsicDeclaration(kl_llvm_module(L), id, NULL, 0);
      LLVMBuildCall2(b, LLVMIntrinsicGetType(kl_llvm_context(L), id, NULL, 0), f, NULL, 0, "");
      return true;
    }
    case KL_ARCH_AMDGPU: {
      char why[512], msg[600];
      LLVMValueRef f = amdgpu_helper(L, why, sizeof why);
      if (!f) {
        snprintf(msg, sizeof msg, "cannot build the AMDGPU barrier helper: %s", why);
        return kl_llvm_fail(L, op, msg);
      }
      LLVMBuildCall2(b, LLVMGlobalGetValueType(f), f, NULL, 0, "");
      return true;
    }
    case KL_ARCH_HOST: return true;
  }
  return true;
}
