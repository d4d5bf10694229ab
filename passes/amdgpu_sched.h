/* amdgpu_sched.h — keeps the K loop's next-tile global loads ahead of the matrix
 * instructions on AMDGPU.
 * Contract: kl_amdgpu_pin_prefetch(fn) looks at a lowered kernel function whose body calls
 * a matrix instruction (llvm.amdgcn.mfma.* / llvm.amdgcn.wmma.*); in every basic block
 * where global loads (addrspace 1) follow a call of the LDS barrier helper
 * (kiln.amdgpu.lds_barrier, passes/lower_barrier.c) — the software-pipelined K loop of
 * rock-gridwise-to-blockwise reads the next step's tiles right after its first barrier —
 * it inserts `call void @llvm.amdgcn.sched.barrier(i32 0)` after the last of those loads:
 * LLVM's machine scheduler then cannot sink the loads behind the step's MFMAs / WMMAs (it
 * did in LLVM 19, leaving the global latency exposed), and the loads stay in flight while
 * the matrix instructions run. Returns the number of barriers inserted; nothing else
 * changes (no value, no other instruction). */
#ifndef KL_AMDGPU_SCHED_H
#define KL_AMDGPU_SCHED_H
#include <llvm-c/Core.h>
int kl_amdgpu_pin_prefetch(LLVMValueRef fn);
#endif
