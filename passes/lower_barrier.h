/* lower_barrier.h — the LLVM lowering of rock.barrier (core/dialect_rock.h), a lower_llvm
 * hook (passes/lower_to_llvm.h) attached by passes/lower_to_llvm.c's table.
 * Contract: rock.barrier orders the LDS accesses of a workgroup's threads (every kiln
 * kernel that has one uses it for an LDS tile or LDS partials; global memory is never
 * exchanged between the threads of a workgroup within a launch).
 *   NVPTX : llvm.nvvm.barrier0 (bar.sync 0: CTA-scope ordering of shared and global); in
 *           the consumer region of a warp-specialized kernel (kl_ws_consumer_threads,
 *           passes/rock_tma.h) llvm.nvvm.barrier.sync.cnt(1, nc): bar.sync 1, nc, the named
 *           barrier of the nc consumer threads (the producer warpgroup takes no part).
 *   AMDGPU: what HIP's __syncthreads is, narrowed to LDS:
 *             fence syncscope("workgroup") release, !mmra !{!"amdgpu-as", !"local"}
 *             call @llvm.amdgcn.s.barrier()
 *             fence syncscope("workgroup") acquire, !mmra !{!"amdgpu-as", !"local"}
 *           The workgroup scope keeps the memory legalizer from writing back or
 *           invalidating the caches (no buffer_wbl2 / buffer_inv / buffer_gl*_inv) and from
 *           waiting for outstanding global loads (the next tile's prefetch stays in
 *           flight); the "amdgpu-as" = "local" memory-model annotation (LLVM 19's
 *           SIMemoryLegalizer reads it) narrows the fences to LDS, so in gfx10/gfx11's
 *           WGP mode too the release fence is s_waitcnt lgkmcnt(0). At the IR level
 *           the fences still order every memory access, as fences do.
 *           The barrier itself: LLVM 19's SIInsertWaitcnts puts a wait for every counter
 *           (s_waitcnt vmcnt(0) lgkmcnt(0)) before each s_barrier on chips without
 *           FeatureBackOffBarrier (kl_amdgpu_barrier_drains: the gfx9 chips before gfx90a,
 *           e.g. gfx908, and gfx11: gfx1100), whatever the fences say: the next K step's
 *           global loads would be drained at the barrier. There the helper issues it as
 *           inline assembly, `s_waitcnt lgkmcnt(0); s_barrier` (a convergent asm with
 *           side effects: LLVM moves no memory access across it and does not see an
 *           s_barrier to drain before; the explicit lgkmcnt(0) makes the LDS accesses
 *           complete whatever the legalizer does), as AMD's Composable Kernel does for its
 *           LDS-only block_sync_lds; outstanding global loads then stay in flight across
 *           the barrier (what the back-off barrier exists for: a memory fault of such a
 *           load while its wave waits at the barrier; kiln's loads are in bounds). gfx90a,
 *           gfx94x and gfx10 keep the intrinsic (LLVM waits only lgkmcnt there).
 *           spec/lua/amd_isa_spec.lua compiles a K loop for every AMDGPU compile target and
 *           checks that no s_waitcnt vmcnt(0) sits between a global load and the next
 *           s_barrier.
 *           LLVM 19's C API builds fences only at system or single-thread scope, so the
 *           three instructions live in a small always-inline helper parsed from IR text
 *           and linked into the module once (void @kiln.amdgpu.lds_barrier()); O0-O3
 *           inline it (the always-inliner runs at every level).
 *   host  : nothing (a workgroup is one thread). */
#ifndef KL_LOWER_BARRIER_H
#define KL_LOWER_BARRIER_H
#include "passes/lower_to_llvm.h"

bool kl__lower_barrier(kl_llvm_lowering *L, kl_op *op);
/* Whether LLVM 19 waits for every counter before an s_barrier on the AMDGPU chip cpu
 * (no back-off barrier), so that the helper issues the barrier as inline assembly. */
bool kl_amdgpu_barrier_drains(const char *cpu);
#endif
