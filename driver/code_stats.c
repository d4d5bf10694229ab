/* code_stats.c — per-kernel code-object statistics for `kiln opt --stats --target T`. */
#include "driver/code_stats.h"
#include "core/target.h"
#include "passes/lower_to_llvm.h"
#include "codegen/codegen_target.h"
#include "codegen/hsaco.h"
#include "driver/amdgpu_stats.h"
#include "driver/amdgpu_mca.h"
#include "codegen/disasm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *kl_kernel_code_stats(kl_op *kernel, const char *target, char *err, size_t errlen) {
  const kl_target *t = kl_target_lookup(target);
  const char *name = kl_op_attr_string(kernel, "sym_name");
  if (!t) {
    snprintf(err, errlen, "unknown target '%s'", target);
    return NULL;
  }
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef m;
  if (kl_lower_kernel_to_llvm(kernel, t, c, &m) != KL_OK) {
    char *d = kl_diag_take(kernel->ctx);
    snprintf(err, errlen, "%s", d);
    free(d);
    LLVMContextDispose(c);
    return NULL;
  }
  kl_binary bin = { 0 };
  kl_status st = kl_codegen_emit(m, target, NULL, &bin, err, errlen);
  LLVMDisposeModule(m);
  LLVMContextDispose(c);
  if (st != KL_OK) return NULL;
  kl_sb sb = { 0 };
  kl_sb_printf(&sb, "%s (%s): ", name, target);
  if (t->arch == KL_ARCH_AMDGPU) {
    int64_t block = 0;
    kl_op_attr_i64(kernel, "block_size", &block);
    kl_amdgpu_stats s;
    if (kl_amdgpu_stats_read(bin.data, bin.size, name, target, block, &s, err, errlen) != KL_OK) {
      kl_binary_free(&bin);
      kl_sb_free(&sb);
      return NULL;
    }
    char *line = kl_amdgpu_stats_line(&s);
    kl_sb_printf(&sb, "%s hsaco=%zu bytes", line, bin.size);
    free(line);
    /* llvm-mca's steady-state cycles of one main-loop iteration (driver/amdgpu_mca.h) */
    char why[256], derr[256];
    double cyc = 0;
    char *text = s.loop.found ? kl_disasm_hsaco(bin.data, bin.size, target, derr, sizeof derr) : NULL;
    if (!s.loop.found)
      kl_sb_printf(&sb, " mca: skipped (no loop)");
    else if (!text)
      kl_sb_printf(&sb, " mca: skipped (%s)", derr);
    else if (kl_amdgpu_mca_loop(text, target, &cyc, why, sizeof why))
      kl_sb_printf(&sb, " mca_cycles=%.1f", cyc);
    else
      kl_sb_printf(&sb, " mca: skipped (%s)", why);
    free(text);
  } else if (t->arch == KL_ARCH_NVPTX) {
    kl_sb_printf(&sb, "ptx=%zu bytes mma.sync=%s", bin.size, strstr((const char *)bin.data, "mma.sync") ? "yes" : "no");
  } else {
    kl_sb_printf(&sb, "object=%zu bytes", bin.size);
  }
  kl_binary_free(&bin);
  return kl_sb_take(&sb);
}
