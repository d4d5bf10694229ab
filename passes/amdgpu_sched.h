/* amdgpu_sched.h — keeps the K loop's next-tile global loads ahead of the matrix
 * instructions on AMDGPU, and their waits behind the LDS barrier.
 * Contract: both functions look at a lowered kernel function whose body calls a matrix
 * instruction (llvm.amdgcn.mfma.* / llvm.amdgcn.wmma.*; else they return 0 and change
 * nothing), insert `call void @llvm.amdgcn.sched.barrier(i32 0)` (LLVM's machine
 * scheduler moves no instruction across it) and return the number inserted; nothing else
 * changes (no value, no other instruction).
 * kl_amdgpu_pin_prefetch(fn): in every basic block where global loads (addrspace 1)
 * follow a call of the LDS barrier helper (kiln.amdgpu.lds_barrier, passes/lower_barrier.c)
 * — the software-pipelined K loop of rock-gridwise-to-blockwise reads the next step's
 * tiles right after its first barrier — one after the last of those loads: LLVM's
 * machine scheduler then cannot sink the loads behind the step's MFMAs / WMMAs (it did in
 * LLVM 19, leaving the global latency exposed), and the loads stay in flight while the
 * matrix instructions run.
 * kl_amdgpu_pin_pair_stores(fn): one right after every LDS barrier call whose LDS stores
 * that follow it (up to the next barrier or global load) include a gathered f32 pair: a
 * <2 x float> store whose value is a shufflevector of two one-element vectors (the
 * kpack-1 tiles of f32 MFMA write two M rows of one K per 8 bytes, each from another
 * global load). Such a store is one ds_write_b64 of a register pair, so LLVM copies the
 * two loaded values into adjacent registers (v_mov), and LLVM 19's scheduler hoisted
 * those copies — with the s_waitcnt vmcnt(0) they need — above the barrier (gfx90a's
 * 256x128x16 f32 loop): the loads of the next K step were then waited for by every wave
 * before the barrier instead of by the LDS stores after it. Pinned, the copies stay below
 * the barrier. passes/lower_to_llvm.c calls it on the chips whose barrier is the
 * intrinsic (not kl_amdgpu_barrier_drains: gfx90a, gfx94x); gfx908's asm barrier loops
 * keep the copies below without it (bench/RESULTS.md, session 36: there it only adds a
 * wait). */
#ifndef KL_AMDGPU_SCHED_H
#define KL_AMDGPU_SCHED_H
#include <llvm-c/Core.h>
int kl_amdgpu_pin_prefetch(LLVMValueRef fn);
int kl_amdgpu_pin_pair_stores(LLVMValueRef fn);
#endif
