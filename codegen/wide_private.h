/* wide_private.h — wide vector loads and stores of private memory go lane by lane (LLVM IR).
 * Contract: kl_llvm_scalarize_wide_private(m, min_lanes) rewrites, in every function of m,
 *  - each load of a fixed vector of at least min_lanes lanes from an alloca (or a GEP of
 *    one with constant indices) whose users are all extractelements with a constant
 *    index: each extract of lane i becomes a scalar load of element i, and the vector
 *    load goes;
 *  - each store of such a vector to such an address whose value is a chain of
 *    insertelements (constant indices, from undef or poison) setting every lane, used by
 *    the store alone: one scalar store per lane of the value inserted last there, and the
 *    store and the chain go.
 * The module means the same after it; returns how many loads and stores it rewrote. Run
 * it before the optimisation pipeline.
 * Why: the lowering reads a wgmma accumulator (128 f32 lanes, one private buffer) as one
 * vector, takes it apart for the inline asm, and builds and stores it again, once per K
 * step. SROA then promotes the buffer to one <128 x float> value and InstCombine walks
 * the 128-element insert chains with 128-bit (heap) lane masks: a third of the seed conv's
 * O3 time. Lane by lane, SROA splits the buffer into the slices the other accesses use
 * (the 4-lane ones of the zero fill and the epilogue). */
#ifndef KL_WIDE_PRIVATE_H
#define KL_WIDE_PRIVATE_H
#include <llvm-c/Core.h>

int kl_llvm_scalarize_wide_private(LLVMModuleRef m, unsigned min_lanes);

#endif
