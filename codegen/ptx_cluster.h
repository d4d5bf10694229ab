/* ptx_cluster.h — the compile-time cluster dims of NVIDIA kernels (passes/rock_tma.h: cluster).
 *
 * Contract. LLVM 19's NVPTX back end writes no .reqnctapercluster (only .maxclusterrank), so
 * kiln adds it to the PTX text: a kernel function of the LLVM module with the string attribute
 * "kiln-cluster" = "C" (passes/lower_to_llvm.c, from the kernel func's cluster_size) gets the
 * directive `.reqnctapercluster C, 1, 1` after its `.maxntid` line (or, without one, before
 * the `{` that opens its body). A kernel with compile-time cluster dims launches with the plain
 * cuLaunchKernel (CUDA programming guide: cluster size fixed at compile time), its grid a
 * multiple of C (the pass pads it). kl_ptx_add_cluster_dims rewrites *ptx / *n in place
 * (a new malloc'd text when a directive is added, the old one freed); a PTX text where an
 * attributed kernel's .entry is not found is left as is and false returned. */
#ifndef KL_PTX_CLUSTER_H
#define KL_PTX_CLUSTER_H
#include <llvm-c/Core.h>
#include <stdbool.h>
#include <stddef.h>

bool kl_ptx_add_cluster_dims(LLVMModuleRef m, char **ptx, size_t *n);
#endif
