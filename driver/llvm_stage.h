/* llvm_stage.h — the late stages of one kernel, from its LLVM IR text, for inspection.
 * Contract: kl_llvm_stage parses llvm_ir (the text a compiled kernel carries:
 * kl_kernel_info.llvm_ir, the IR handed to code generation) into a fresh LLVM context and
 * returns, malloc'd with a NUL after the data (*len, when non-NULL, gets the byte count):
 *   KL_STAGE_LLVM_OPT  the LLVM IR after the optimisation pipeline code generation runs
 *                      for target (kl_codegen_optimize at O3), as text
 *   KL_STAGE_ASM       the target's assembly text (host: x86-64 / the host ISA assembly,
 *                      AMDGPU: the ISA, NVPTX: PTX)
 *   KL_STAGE_OBJ       a relocatable ELF object: the host object kiln links, or an AMDGPU
 *                      object before lld links it into the HSACO; NVIDIA targets have none
 *                      (PTX is what kiln emits for them): an error
 * Nothing is cached and the kernel is not modified. NULL with a message in err on failure. */
#ifndef KL_LLVM_STAGE_H
#define KL_LLVM_STAGE_H
#include <stddef.h>

typedef enum { KL_STAGE_LLVM_OPT, KL_STAGE_ASM, KL_STAGE_OBJ } kl_llvm_stage_kind;

char *kl_llvm_stage(const char *llvm_ir, const char *target, kl_llvm_stage_kind stage, size_t *len, char *err,
                    size_t errlen);
#endif
