/* store_runs.h — long runs of stores get compiler-only memory barriers (LLVM IR, NVPTX).
 * Contract: kl_llvm_break_store_runs(m, run) inserts, in every basic block of every
 * function of m, an empty `call void asm sideeffect "", "~{memory}"()` after every run-th
 * store of a run of stores that no call (an intrinsic or an inline asm too) interrupts,
 * unless a call follows right there anyway; run >= 2. Returns how many it inserted. The
 * asm emits no instruction (NVPTX prints it as two comment lines). Run it after the
 * optimisation pipeline and after load-store vectorization (the barrier ends the chains
 * that pass merges), before code generation.
 * Why: the SelectionDAG combiner rechains each store past the stores before it that it
 * proves it does not alias and then prunes the token factors it built: for the seed
 * conv's epilogue (128 scattered 16-bit LDS stores of the output swizzle, one basic
 * block) that was 58 of the instruction selector's 88 ms. With a barrier every 16
 * stores it is 4 ms, and the PTX and the SASS are the same: the NVPTX backend schedules
 * in source order, so the chains it no longer rewrites never reordered anything. */
#ifndef KL_STORE_RUNS_H
#define KL_STORE_RUNS_H
#include <llvm-c/Core.h>

int kl_llvm_break_store_runs(LLVMModuleRef m, int run);

#endif
