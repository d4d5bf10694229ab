/* lower_atomic.h — the LLVM lowering of rock.atomic_rmw (core/dialect_rock.c), a
 * lower_llvm hook (passes/lower_to_llvm.h) attached by passes/lower_to_llvm.c's table.
 * Contract: rock.atomic_rmw(%x, %buf, %i...) {kind = "add" | "max" | "min"} combines %x
 * into the element (a vector: each element, one atomic each), result unused, monotonic
 * ordering, into global or LDS memory.
 *  - add: `atomicrmw fadd` (integers: add). Host and NVPTX: system scope (x86 gets a
 *    cmpxchg loop, NVPTX red/atom.global.add, atom.shared.add). AMDGPU: agent scope with
 *    !amdgpu.no.fine.grained.memory (kiln's buffers are device allocations) and the kernel
 *    attribute "amdgpu-unsafe-fp-atomics", so that LLVM 19 emits global_atomic_add_f32 /
 *    global_atomic_pk_add_f16 / ds_add_f32 where the chip has them (core/target.h
 *    KL_ATOMIC_ADD_*; elsewhere a cmpswap loop).
 *  - max / min of floats (f32, f64): a compare-and-swap loop on the same-sized integer
 *    storing llvm.maximum / minimum of the element and %x: NaN propagates and -0 < +0, as
 *    graph max / min and the reductions define them, and it ends without a write once the
 *    element is NaN or already the result. The hardware float max atomics (where a chip
 *    has them) follow IEEE maxNum or chip-specific NaN rules instead, so they are not
 *    used. Integers: atomicrmw max / min (signed).
 * The C API has no sync scopes, so the AMDGPU atomics and every CAS loop sit in small
 * always-inline helpers parsed from IR text and linked into the module. */
#ifndef KL_LOWER_ATOMIC_H
#define KL_LOWER_ATOMIC_H
#include "passes/lower_to_llvm.h"

bool kl__lower_atomic_rmw(kl_llvm_lowering *L, kl_op *op);
#endif
