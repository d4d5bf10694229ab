/* codegen_target.h — turn an LLVM module into a loadable binary for one target.
 * Contract: targets are named by strings and looked up in core's target table
 * (core/target.h, kl_target_lookup_emit: the compile targets plus the chips code can be
 * emitted for): "host", an AMDGPU chip ("gfx908", "gfx90a", "gfx942", "gfx1030",
 * "gfx1100", …, optionally with HIP-style feature suffixes such as
 * "gfx90a:sramecc+:xnack-") or an NVIDIA arch ("sm_80", "sm_90", "sm_90a", …). The
 * row's arch, triple, cpu and LLVM features are used as they are (an AMDGPU suffix's
 * features replace the row's; kl_codegen_opts.features replace both); the host row's
 * are "": the host's triple, CPU and features are detected at run time. This file
 * keeps only what is about LLVM (target machines, emission, linking).
 *   host   -> an ELF relocatable object for the host triple and CPU (its name and
 *             features), optimised at O3, PIC, the JIT code model: what the host device
 *             links into the process (runtime/device_host_loader.h)
 *   AMDGPU -> an HSACO: amdgcn-amd-amdhsa object, optimised at O3, linked in process
 *             with lld (-shared --no-undefined) into a loadable code object
 *   NVPTX  -> PTX text (nvptx64-nvidia-cuda), optimised at O3, for cuModuleLoadData
 * The input module is not modified: emission works on a clone (same LLVMContext, so
 * the caller must not use that context from another thread meanwhile), unless
 * kl_codegen_opts.in_place says to optimise and emit the module itself. If the module's
 * triple / data layout are empty they are set for the target; if they are set they must
 * match the target or an error is returned (build GPU modules with the target's data
 * layout from the start: AMDGPU allocas live in address space 5).
 * Errors: KL_ERR plus a message in the caller's buffer (err, errlen; err may be NULL).
 * Binaries are malloc'd and owned by the caller (kl_binary_free).
 * kl_llvm_init_targets initialises the AMDGPU, NVPTX and native LLVM targets once per
 * process (pthread_once); every function here calls it, so callers need not. */
#ifndef KL_CODEGEN_TARGET_H
#define KL_CODEGEN_TARGET_H
#include <stdbool.h>
#include <stddef.h>
#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#include "core/context.h" /* kl_status */
#include "core/target.h"  /* kl_arch, kl_target */

/* Options for emission; pass NULL for the defaults (O3, default features). */
/* Where an emission's time went (wall ms): the LLVM middle end (verify, clone, the
 * optimisation pipeline) and the code generator (instruction selection to the binary). */
typedef struct kl_codegen_times {
  double opt_ms, codegen_ms;
} kl_codegen_times;

typedef struct kl_codegen_opts {
  int opt_level;           /* 0..3 for the middle end and the code generator; default 3 */
  const char *features;    /* replaces the default LLVM feature string when non-NULL */
  kl_codegen_times *times; /* when non-NULL, the emission adds its times here */
  bool in_place;           /* work on the module itself, no clone (it is modified; the caller disposes it) */
} kl_codegen_opts;

typedef struct kl_binary {
  kl_arch arch;
  void *data; /* malloc'd; for PTX text a NUL follows the data (not counted in size) */
  size_t size;
} kl_binary;

void kl_llvm_init_targets(void);
void kl_binary_free(kl_binary *b);

/* The binary format codegen emits for an arch: "host-object", "hsaco", "ptx". */
const char *kl_binary_format_name(kl_arch a);
/* The row of core's table a target name (with any feature suffix) names, or NULL plus
 * the "unknown target" message. */
const kl_target *kl_codegen_target_lookup(const char *target, char *err, size_t errlen);
/* The LLVM triple and data layout string for a target (what the compiler should set on
 * the modules it builds). dl is malloc'd (caller frees); triple_out has >= 64 bytes. */
kl_status kl_codegen_target_layout(const char *target, char *triple_out, char **dl, char *err, size_t errlen);

/* Runs the "default<On>" pipeline (loop and SLP vectorisation on) on m, in place. */
kl_status kl_codegen_optimize(LLVMModuleRef m, LLVMTargetMachineRef tm, int opt_level, char *err, size_t errlen);

/* The binary for the target (see the contract above). */
kl_status kl_codegen_emit(LLVMModuleRef m, const char *target, const kl_codegen_opts *opts, kl_binary *out, char *err,
                          size_t errlen);
/* Optimised target assembly text (AMDGPU ISA, PTX, host assembly), for inspection. */
kl_status kl_codegen_emit_asm(LLVMModuleRef m, const char *target, const kl_codegen_opts *opts, kl_binary *out,
                              char *err, size_t errlen);
/* The LLVM IR emission would generate code from (the clone after preparation and the
 * optimisation pipeline), as text (NUL after the data), for inspection. */
kl_status kl_codegen_optimized_ir(LLVMModuleRef m, const char *target, const kl_codegen_opts *opts, kl_binary *out,
                                  char *err, size_t errlen);
/* AMDGPU only: the relocatable object before linking, and the link step on its own. */
kl_status kl_codegen_amdgpu_object(LLVMModuleRef m, const char *target, const kl_codegen_opts *opts, kl_binary *out,
                                   char *err, size_t errlen);
kl_status kl_codegen_link_hsaco(const void *obj, size_t size, kl_binary *out, char *err, size_t errlen);

/* Routes a context's diagnostics into d (error count + first error text) instead of
 * LLVM's default handler, which prints and calls exit(1) on errors. The caller keeps d
 * alive while the handler is installed (restore the old one with
 * LLVMContextSetDiagnosticHandler). Emission does this by itself. */
typedef struct kl_llvm_diag {
  int errors;
  char msg[1024];
} kl_llvm_diag;
void kl_llvm_diag_install(LLVMContextRef ctx, kl_llvm_diag *d);

/* From codegen/lld_shim.cpp: runs ld.lld in process (argv[0] = "ld.lld"). 0 = success. */
int kl_lld_link_elf(const char **argv, int argc, char *err, size_t errlen);
#endif
