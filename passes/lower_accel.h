/* lower_accel.h — LLVM lowering of the loop-level op rock.mma (passes/rock_accel.h) for
 * lower-to-llvm: one call of the matrix instruction's intrinsic with the operands
 * packed the way the intrinsic takes them (MFMA: vector / packed-integer operands and
 * cbsz = abid = blgp = 0; WMMA: overloaded vector operands, i8 signed; mma.sync: the
 * fragments split into 32-bit registers and the result struct gathered into a vector).
 * Contract: a, b, c are the already lowered operands (LLVM types of the op's operand
 * types); the call is emitted at the builder's position. Returns the result value, or
 * NULL with a message in err when the op's instruction is unknown or does not belong
 * to the target's matrix unit. Nothing else is created or owned.
 * kl_lower_accel_ldmatrix lowers rock.ldmatrix (core/dialect_rock.c) on NVPTX: the
 * intrinsic llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{num}[.trans].b16 at LDS pointer p
 * (this lane's row), its 32-bit registers gathered into the op's vector<2*num x T>;
 * NULL + err on other targets.
 * kl_lower_accel_stmatrix lowers rock.stmatrix (sm_90+): inline PTX
 * stmatrix.sync.aligned.m8n8.x{num}[.trans].shared.b16 at the 32-bit shared-window address
 * of LDS pointer p (this lane's row) with v (vector<2*num x 16-bit>) as num 32-bit
 * registers; false + err on other targets. */
#ifndef KL_LOWER_ACCEL_H
#define KL_LOWER_ACCEL_H
#include <stddef.h>
#include <llvm-c/Core.h>
#include "core/ir.h"
#include "core/target.h"

LLVMValueRef kl_lower_accel_mma(LLVMModuleRef m, LLVMBuilderRef b, const kl_target *t, kl_op *op, LLVMValueRef a,
                                LLVMValueRef bv, LLVMValueRef c, char *err, size_t errlen);
LLVMValueRef kl_lower_accel_ldmatrix(LLVMModuleRef m, LLVMBuilderRef b, const kl_target *t, kl_op *op, LLVMValueRef p,
                                     LLVMTypeRef result, char *err, size_t errlen);
bool kl_lower_accel_stmatrix(LLVMModuleRef m, LLVMBuilderRef b, const kl_target *t, kl_op *op, LLVMValueRef p,
                             LLVMValueRef v, char *err, size_t errlen);
#endif
