/* lower_fp8.h — fp8 <-> f32 conversions emitted as LLVM IR (passes/lower_to_llvm.c).
 * Contract: fp8 values live in LLVM as i8 (vectors: <N x i8>); these build the
 * conversions in plain integer / float IR that every target compiles (no intrinsics),
 * bit-exact with core/dtype.h's kl_f64_to_fp8 / kl_fp8_to_f64 for every f32 input and
 * every code (round to nearest even; per-format NaN, inf and saturation rules;
 * spec/lua/fp8_spec.lua checks it on the host over all 256 codes and f32 values with
 * ties, subnormals, overflow, inf and NaN).
 *  - to f32: sign | (exponent + 127 - bias) | mantissa for normals; a subnormal is
 *    mantissa * 2^(1 - bias - mbits) (an exact f32 product); NaN / inf codes by format.
 *  - from f32: normals round on the f32 bits ((a + half - 1 + lsb) >> (23 - mbits), the
 *    carry into the exponent is the right code); below the smallest normal 2^emin the
 *    f32 sum |x| + 2^(emin - mbits + 23) rounds (to nearest even, in hardware) at the
 *    fp8 subnormal quantum, and its bits minus the constant's are the code (flushed f32
 *    denormals give 0, which is their fp8 value too); then overflow -> inf (e5m2) or
 *    +-max, NaN -> the format's NaN, fnuz -> no -0.
 * v and the result may be scalars or vectors (the same lane count). */
#ifndef KL_LOWER_FP8_H
#define KL_LOWER_FP8_H
#include "core/dtype.h"
#include <llvm-c/Core.h>
#include <stdbool.h>

LLVMValueRef kl_lower_fp8_to_f32(LLVMContextRef c, LLVMBuilderRef b, kl_dtype dt, LLVMValueRef v);
/* fp8 -> f16 directly (exact: f16 holds every value of the four formats), the convert
 * that feeds the f16 MMAs of fp8 GEMMs (passes/fp8_compute.c): f8e5m2 is the top byte of
 * an f16 (code << 8); f8e4m3fn / f8e4m3fnuz place sign and magnitude bits into an f16
 * (sign << 8 | magnitude << 7) and scale by 2^8 / 2^7 (one f16 multiply, exact for
 * subnormals too), NaN codes selected; an even number of lanes works on lane pairs in
 * 32-bit words (f16x2 multiplies, NaN by masks); f8e5m2fnuz goes through f32. nv_cvt (NVIDIA sm_89
 * and later, PTX 7.8): f8e4m3fn lane pairs take the hardware conversion
 * cvt.rn.f16x2.e4m3x2 (lane 2i in the low half, as in the f16x2 register) through inline
 * assembly, one instruction for two values. */
LLVMValueRef kl_lower_fp8_to_f16(LLVMContextRef c, LLVMBuilderRef b, kl_dtype dt, LLVMValueRef v, bool nv_cvt);
LLVMValueRef kl_lower_f32_to_fp8(LLVMContextRef c, LLVMBuilderRef b, kl_dtype dt, LLVMValueRef v);
#endif
