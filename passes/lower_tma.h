/* lower_tma.h — the LLVM lowering of rock.mbarrier and rock.tma_load (passes/rock_tma.h,
 * core/dialect_rock.c), lower_llvm hooks attached by passes/lower_to_llvm.c's table. NVPTX
 * targets with wgmma (sm_90a) only (the TMA loop is built for wgmma GEMMs only); elsewhere
 * an error at the op. LLVM 19's TMA intrinsics take the tensor map as a pointer too, but
 * the PTX is written out as CUTLASS writes it (inline asm volatile, memory clobber),
 * shared addresses as 32-bit shared::cta window offsets:
 *   rock.mbarrier init: mbarrier.init.shared::cta.b64 [bar], count;
 *                         fence.mbarrier_init.release.cluster;
 *     arrive_expect_tx: mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], bytes;
 *     wait:             a try_wait.parity loop: { .reg .pred P; WAIT: mbarrier.try_wait.parity
 *                         .shared::cta.b64 P, [bar], parity; @P bra DONE; bra WAIT; DONE: }
 *     arrive:           mbarrier.arrive.shared::cta.b64 _, [bar];
 *     arrive_remote:    mapa.shared::cluster.u32 ra, bar, rank;
 *                         mbarrier.arrive.shared::cluster.b64 _, [ra]; (CUTLASS's form: .release.cluster
 *                         costs a MEMBAR.ALL.GPU per arrive in ptxas sm_90a's SASS)
 *     inval:            mbarrier.inval.shared::cta.b64 [bar];
 *   rock.setmaxnreg:    setmaxnreg.{inc,dec}.sync.aligned.u32 regs;
 *   rock.tma_load:      cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx
 *                         ::bytes [dst], [tensor map, {c0, ..}], [bar];
 *     {multicast = C}:  r = %cluster_ctarank; the same with .multicast::cluster [dst + r * box
 *                         bytes], [map, {.., c_md + r * box[md], ..}], [bar], ctaMask (1 << C) - 1
 *   rock.barrier {scope = "cluster"} (passes/lower_barrier.c hands it here):
 *                       barrier.cluster.arrive.release; barrier.cluster.wait.acquire; (not .aligned, a
 *                       convergent call: passes/lower_tma.c)
 * The tensor map is a kernel parameter after the buffers: `.param .align 64 .b8 [128]`, a
 * byval [128 x i8] marked grid_constant in nvvm.annotations (LLVM 19 NVPTX takes its
 * generic address with cvta.param); one per distinct map, in the order of
 * kl_tma_kernel_maps (passes/rock_tma.h), which the runtime follows to build them. */
#ifndef KL_LOWER_TMA_H
#define KL_LOWER_TMA_H
#include "passes/lower_to_llvm.h"

bool kl__lower_mbarrier(kl_llvm_lowering *L, kl_op *op);
bool kl__lower_tma_load(kl_llvm_lowering *L, kl_op *op);
bool kl__lower_setmaxnreg(kl_llvm_lowering *L, kl_op *op);
bool kl__lower_cluster_barrier(kl_llvm_lowering *L, kl_op *op);
#endif
