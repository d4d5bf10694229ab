/* llvm_math.h — portable f32 and f64 math for kernels, emitted as plain LLVM instructions
 * so every target (host, NVPTX, AMDGPU) lowers it without a math library: f32 exp, log, tanh
 * (about 2 ulp on the whole range; inf/nan/zero and exp's subnormal results handled), the
 * f64 ones below,
 * NaN-propagating max/min and float compares that LLVM's optimizer cannot turn into a
 * compare of an abs's operand.
 * Each function takes a scalar or vector value of its type and builds at the builder's point. */
#ifndef KL_LLVM_MATH_H
#define KL_LLVM_MATH_H
#include <llvm-c/Core.h>
LLVMValueRef kl_llvm_exp_f32(LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef kl_llvm_log_f32(LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef kl_llvm_tanh_f32(LLVMBuilderRef b, LLVMValueRef x);
/* x^y with C pow semantics for finite inputs (x < 0 needs an integral y). */
LLVMValueRef kl_llvm_pow_f32(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y);
/* The same four in f64 (scalar or vector), for every target alike (no libm, no fma: plain
 * fmul/fadd that no fast-math flag lets LLVM fuse, so the host computes bit for bit what a
 * GPU computes): exp, log, tanh within ~2 ulp on the whole range (subnormal inputs and
 * results, inf/nan/+-0 handled); pow with C pow semantics (x < 0 needs an integral y; +-0
 * and +-inf by sign; x^0 = 1^y = 1), y*log|x| carried in double-double (Dekker's exact
 * products), so ~1 ulp up to results near the overflow and underflow thresholds. */
LLVMValueRef kl_llvm_exp_f64(LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef kl_llvm_log_f64(LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef kl_llvm_tanh_f64(LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef kl_llvm_pow_f64(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y);
/* erf in f64 (~2 ulp): its series below 1.5, 1 - erfc by a continued fraction above. */
LLVMValueRef kl_llvm_erf_f64(LLVMBuilderRef b, LLVMValueRef x);
/* The reference's max/min, IEEE 754-2019 maximum/minimum: NaN if either operand is NaN,
 * else the larger (smaller) with -0 < +0, so symmetric in x and y (max/min are commutative).
 * Like kl_llvm_fcmp, it orders by integer keys (total-order ones), never by an ordered fcmp. */
LLVMValueRef kl_llvm_max_nan(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y, int is_min);
/* fcmp x, y; the ordered predicates OLT OLE OGT OGE are built as `ord x, y` and a signed
 * integer compare of sign-magnitude keys (-0 == +0), because LLVM 19.1's InstCombine
 * rewrites an ordered compare of fabs(a) with 0 into one of a (upstream PR 152913): kiln's
 * element-wise code must stay correct under that optimizer. Other predicates: plain fcmp. */
LLVMValueRef kl_llvm_fcmp(LLVMBuilderRef b, LLVMRealPredicate p, LLVMValueRef x, LLVMValueRef y);
#endif
