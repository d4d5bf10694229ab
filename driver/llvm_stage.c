/* llvm_stage.c — see llvm_stage.h. */
#include "driver/llvm_stage.h"
#include "codegen/codegen_target.h"
#include "core/diag.h"
#include <llvm-c/IRReader.h>
#include <stdlib.h>
#include <string.h>

static LLVMModuleRef parse(LLVMContextRef ctx, const char *text, char *err, size_t errlen) {
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(text, strlen(text), "kernel.ll");
  LLVMModuleRef m = NULL;
  char *msg = NULL;
  if (LLVMParseIRInContext(ctx, buf, &m, &msg)) { /* takes buf */
    kl_errf(err, errlen, "cannot parse the kernel's LLVM IR: %s", msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return NULL;
  }
  return m;
}

char *kl_llvm_stage(const char *llvm_ir, const char *target, kl_llvm_stage_kind stage, size_t *len, char *err,
                    size_t errlen) {
  if (!llvm_ir || !*llvm_ir) {
    kl_errf(err, errlen, "the kernel has no LLVM IR");
    return NULL;
  }
  const kl_target *t = kl_codegen_target_lookup(target, err, errlen);
  if (!t) return NULL;
  if (stage == KL_STAGE_OBJ && t->arch == KL_ARCH_NVPTX) {
    kl_errf(err, errlen, "target %s has no object file: kiln emits PTX for NVIDIA targets", target);
    return NULL;
  }
  kl_llvm_init_targets();
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef m = parse(ctx, llvm_ir, err, errlen);
  char *out = NULL;
  size_t n = 0;
  kl_binary b = { 0 };
  kl_status st = KL_ERR;
  if (m) {
    switch (stage) {
      case KL_STAGE_LLVM_OPT: st = kl_codegen_optimized_ir(m, target, NULL, &b, err, errlen); break;
      case KL_STAGE_ASM: st = kl_codegen_emit_asm(m, target, NULL, &b, err, errlen); break;
      case KL_STAGE_OBJ:
        st = t->arch == KL_ARCH_AMDGPU ? kl_codegen_amdgpu_object(m, target, NULL, &b, err, errlen)
                                       : kl_codegen_emit(m, target, NULL, &b, err, errlen);
        break;
    }
    if (st == KL_OK) {
      out = b.data; /* NUL-terminated by codegen */
      n = b.size;
      b.data = NULL;
    }
    kl_binary_free(&b);
    LLVMDisposeModule(m);
  }
  LLVMContextDispose(ctx);
  if (st != KL_OK) return NULL;
  if (len) *len = n;
  return out;
}
