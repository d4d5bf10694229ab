/* lower_wgmma.h — the LLVM lowering of the Hopper warpgroup MMA ops (passes/rock_wgmma.h,
 * core/dialect_rock.c), lower_llvm hooks (passes/lower_to_llvm.h) attached by
 * passes/lower_to_llvm.c's table. NVPTX targets with wgmma (sm_90a) only; elsewhere an
 * error at the op. LLVM 19 has no wgmma intrinsics: inline PTX, as CUTLASS writes it.
 *   rock.wgmma_desc(%lds, %i...) {lbo, sbo}: the element's address in the shared window
 *     (ptrtoint of the addrspace(3) pointer) a, then
 *     ((a & 0x3ffff) >> 4) | (lbo >> 4) << 16 | (sbo >> 4) << 32 (kl_wgmma_desc_encode).
 *   rock.wgmma(%da, %db, %c) {instr}: asm volatile "{ .reg .pred p; setp.ne.b32 p, $X, 0;
 *     <instr> {$0..$N/2-1}, $da, $db, p, 1, 1, 0, 0; }" with the accumulators as "=f"
 *     outputs tied to "0".."N/2-1" inputs (CUTLASS's "+f"), scale-d 1, no negation, both
 *     operands K-major (transpose immediates 0).
 *   rock.wgmma_sync {step}: asm volatile with a memory clobber: wgmma.fence.sync.aligned,
 *     wgmma.commit_group.sync.aligned, wgmma.wait_group.sync.aligned <pending>, or
 *     fence.proxy.async.shared::cta; each vector operand then passes through an empty asm
 *     volatile with "+f" registers (CUTLASS's warpgroup_fence_operand), so no use of an
 *     accumulator is scheduled before the wait. */
#ifndef KL_LOWER_WGMMA_H
#define KL_LOWER_WGMMA_H
#include "passes/lower_to_llvm.h"

bool kl__lower_wgmma_desc(kl_llvm_lowering *L, kl_op *op);
bool kl__lower_wgmma(kl_llvm_lowering *L, kl_op *op);
bool kl__lower_wgmma_sync(kl_llvm_lowering *L, kl_op *op);
#endif
