/* code_stats.h — what a kernel costs on a target, read back from its code object.
 * Contract: kl_kernel_code_stats lowers one loop-level kernel func for `target`
 * (passes/lower_to_llvm.h), emits its binary (codegen/codegen_target.h) and returns a
 * one-line summary, malloc'd: for AMDGPU driver/amdgpu_stats.h's line (VGPR/AGPR/SGPR
 * counts, LDS and scratch bytes, spills, occupancy in waves per SIMD and its limit, the
 * main loop's instruction mix), for NVPTX the PTX size and whether it uses
 * mma.sync, for the host the bitcode size. NULL with a message in err on failure. */
#ifndef KL_CODE_STATS_H
#define KL_CODE_STATS_H
#include "core/ir.h"
char *kl_kernel_code_stats(kl_op *kernel, const char *target, char *err, size_t errlen);
#endif
