/* lane_casts.h — vector casts read lane by lane become scalar casts (LLVM IR, NVPTX).
 * Contract: kl_llvm_scalarize_lane_casts(m) rewrites, in every function of m, each cast
 * instruction of a fixed vector type (fptrunc, fpext, sitofp, trunc, …) whose users are
 * all extractelements with a constant index: each such extract of lane i becomes
 * `cast (extractelement src, i)`, and the vector cast goes. The module means the same
 * after it; returns how many casts it rewrote.
 * Why: the epilogue converts the accumulator to the output type four lanes at a time
 * (fptrunc <4 x float> to <4 x half>) and then stores single lanes (the output swizzle
 * through LDS). NVPTX's instruction selector spends most of a large kernel's compile
 * time combining those extracts of vector casts with their stores' addresses (0.39 of
 * 0.53 s of llc for the seed conv at sm_90a), and the PTX packs the halves into 32-bit
 * registers only to unpack them again (mov.b32 / shr.u32 / cvt.u64.u32). Scalar casts
 * select to the same cvt instructions without that. Run it after the optimisation
 * pipeline, before code generation. */
#ifndef KL_LANE_CASTS_H
#define KL_LANE_CASTS_H
#include <llvm-c/Core.h>

int kl_llvm_scalarize_lane_casts(LLVMModuleRef m);

#endif
