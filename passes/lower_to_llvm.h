/* lower_to_llvm.h — loop-level kernel IR -> LLVM IR through the LLVM C API.
 * Contract: every kernel func (kl_is_kernel) of the module must be at loop level
 * (dialect_rock.h): arith/math/scf ops, rock.load/store, rock.alloc (lds/private),
 * rock.workgroup_id/workitem_id/barrier/lane_shuffle (passes/lower_lane.h), func.return. Anything else is an error naming
 * the op and its location. The target decides the kernel ABI:
 *   host  : void name(void **args, const int64_t *block_id, const int64_t *grid)
 *           (runtime/device.h); workitem id 0 (host kernels have block size 1, else an
 *           error); LDS = a stack array; barriers vanish.
 *   nvptx : ptx_kernel with global pointers (addrspace 1), shared memory globals
 *           (addrspace 3), ctaid/tid special registers, bar.sync (lower_barrier.h).
 *   amdgpu: amdgpu_kernel with addrspace(1) pointers, LDS globals (addrspace 3),
 *           private allocas in addrspace 5, workgroup/workitem id intrinsics,
 *           rock.barrier as s_barrier between workgroup-scope LDS-only fences
 *           (passes/lower_barrier.h), amdgpu-flat-work-group-size = 1,B; on gfx90a /
 *           gfx942 "amdgpu-waves-per-eu" = 2 for a workgroup of under 8 waves whose
 *           register estimate (func attribute amdgpu_regs) and LDS allow 2 waves per SIMD.
 * f16/bf16 arithmetic is computed in f32 (extend, compute, truncate). The LLVM module
 * is created in ctx (caller disposes both). Errors: KL_ERR with diagnostics.
 * Each op is lowered by the lower_llvm hook of its definition (KL_HOOK_LOWER_LLVM,
 * core/ir.h): kl_lower_llvm_register attaches the builtin ones (every op legal at the
 * loop level but the containers builtin.module / func.func, which the driver lowers, and
 * func.call, which kernels do not use) once per context; kl_register_builtin_passes and
 * the entry points below call it. An op without a hook is an error at its location. */
#ifndef KL_LOWER_TO_LLVM_H
#define KL_LOWER_TO_LLVM_H
#include "core/ir.h"
#include "core/target.h"
#include <llvm-c/Core.h>

/* The lowering state of one kernel, for hooks (opaque). */
typedef struct kl_llvm_lowering kl_llvm_lowering;
/* A lower_llvm hook: emits op at the builder's position and records its results' values
 * (kl_llvm_set_value); returns false after reporting an error (kl_llvm_fail). */
typedef bool (*kl_lower_llvm_fn)(kl_llvm_lowering *L, kl_op *op);
kl_status kl_lower_llvm_attach(kl_ctx *ctx, const char *name, kl_lower_llvm_fn fn); /* kl_opdef_attach's errors */
kl_lower_llvm_fn kl_lower_llvm_hook(const kl_op *op);                               /* NULL if it has none */
/* Attaches the builtin hooks, once per context, leaving hooks attached before alone. */
void kl_lower_llvm_register(kl_ctx *ctx);
/* For hooks: the builder, context, module and target of the lowering, the lowered value
 * of v (NULL if none yet), recording one, the LLVM type of a kiln type, lowering a
 * nested block's ops in order, and a located error ("lower-to-llvm (target): 'op': msg"). */
LLVMBuilderRef kl_llvm_builder(kl_llvm_lowering *L);
LLVMContextRef kl_llvm_context(kl_llvm_lowering *L);
LLVMModuleRef kl_llvm_module(kl_llvm_lowering *L);
const kl_target *kl_llvm_target(kl_llvm_lowering *L);
LLVMValueRef kl_llvm_value(kl_llvm_lowering *L, kl_value *v);
void kl_llvm_set_value(kl_llvm_lowering *L, kl_value *v, LLVMValueRef r);
LLVMTypeRef kl_llvm_type(kl_llvm_lowering *L, const kl_type *t);
bool kl_llvm_lower_block(kl_llvm_lowering *L, kl_block *b);
bool kl_llvm_fail(kl_llvm_lowering *L, kl_op *op, const char *msg);
/* The address of the element that a load/store-like op addresses: operand bi is the
 * buffer, the next rank operands its indices; *elem_ty = the buffer's LLVM element type. */
LLVMValueRef kl_llvm_address(kl_llvm_lowering *L, kl_op *op, int bi, LLVMTypeRef *elem_ty);
/* NVPTX: the tensor-map kernel parameter (a byval grid_constant pointer) of a rock.tma_load
 * (passes/lower_tma.h), NULL if none. */
LLVMValueRef kl_llvm_tma_param(kl_llvm_lowering *L, kl_op *op);

kl_status kl_lower_to_llvm(kl_op *module, const kl_target *target, LLVMContextRef llctx, LLVMModuleRef *out);
/* Lowers one kernel func only (into a module of its own). */
kl_status kl_lower_kernel_to_llvm(kl_op *kernel, const kl_target *target, LLVMContextRef llctx, LLVMModuleRef *out);
#endif
