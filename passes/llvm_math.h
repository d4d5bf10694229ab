/* llvm_math.h — portable f32 math for kernels, emitted as plain LLVM instructions so
 * every target (host, NVPTX, AMDGPU) lowers it without a math library: exp, log, tanh
 * (about 2 ulp on the whole range, inf/nan/zero handled), and NaN-propagating max/min.
 * Each function takes an f32 scalar or vector value and builds at the builder's point. */
#ifndef KL_LLVM_MATH_H
#define KL_LLVM_MATH_H
#include <llvm-c/Core.h>
LLVMValueRef kl_llvm_exp_f32(LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef kl_llvm_log_f32(LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef kl_llvm_tanh_f32(LLVMBuilderRef b, LLVMValueRef x);
/* x^y with C pow semantics for finite inputs (x < 0 needs an integral y). */
LLVMValueRef kl_llvm_pow_f32(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y);
/* max/min that return NaN if either operand is NaN (numpy.maximum semantics). */
LLVMValueRef kl_llvm_max_nan(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y, int is_min);
#endif
