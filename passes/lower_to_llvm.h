/* lower_to_llvm.h — loop-level kernel IR -> LLVM IR through the LLVM C API.
 * Contract: every kernel func (kl_is_kernel) of the module must be at loop level
 * (dialect_rock.h): arith/math/scf ops, rock.load/store, rock.alloc (lds/private),
 * rock.workgroup_id/workitem_id/barrier, func.return. Anything else is an error naming
 * the op and its location. The target decides the kernel ABI:
 *   host  : void name(void **args, const int64_t *block_id, const int64_t *grid)
 *           (runtime/device.h); workitem id 0 (host kernels have block size 1, else an
 *           error); LDS = a stack array; barriers vanish.
 *   nvptx : ptx_kernel with global pointers (addrspace 1), shared memory globals
 *           (addrspace 3), ctaid/tid special registers, bar.sync.
 *   amdgpu: amdgpu_kernel with addrspace(1) pointers, LDS globals (addrspace 3),
 *           private allocas in addrspace 5, workgroup/workitem id intrinsics,
 *           s_barrier with workgroup fences, amdgpu-flat-work-group-size = 1,B.
 * f16/bf16 arithmetic is computed in f32 (extend, compute, truncate). The LLVM module
 * is created in ctx (caller disposes both). Errors: KL_ERR with diagnostics. */
#ifndef KL_LOWER_TO_LLVM_H
#define KL_LOWER_TO_LLVM_H
#include "core/ir.h"
#include "core/target.h"
#include <llvm-c/Core.h>

kl_status kl_lower_to_llvm(kl_op *module, const kl_target *target, LLVMContextRef llctx, LLVMModuleRef *out);
/* Lowers one kernel func only (into a module of its own). */
kl_status kl_lower_kernel_to_llvm(kl_op *kernel, const kl_target *target, LLVMContextRef llctx, LLVMModuleRef *out);
#endif
