/* lower_atomic.h — the LLVM lowering of rock.atomic_rmw (core/dialect_rock.c), a
 * lower_llvm hook (passes/lower_to_llvm.h) attached by passes/lower_to_llvm.c's table.
 * Contract: rock.atomic_rmw(%x, %buf, %i...) {kind = "add" | "max"} adds (or maxes) %x
 * into the element (a vector: each element, one atomicrmw each) with `atomicrmw fadd` /
 * `fmax` (integers: add / max), monotonic ordering, result unused. Host and NVPTX: system
 * scope (x86 gets a cmpxchg loop, NVPTX red/atom.global.add). AMDGPU: agent scope with
 * !amdgpu.no.fine.grained.memory (kiln's buffers are device allocations) and the kernel
 * attribute "amdgpu-unsafe-fp-atomics", so that LLVM 19 emits global_atomic_add_f32 /
 * global_atomic_pk_add_f16 where the chip has them (core/target.h KL_ATOMIC_ADD_*;
 * elsewhere a cmpswap loop). The C API has no sync scopes, so on AMDGPU the atomicrmw
 * sits in a small always-inline helper parsed from IR text and linked into the module. */
#ifndef KL_LOWER_ATOMIC_H
#define KL_LOWER_ATOMIC_H
#include "passes/lower_to_llvm.h"

bool kl__lower_atomic_rmw(kl_llvm_lowering *L, kl_op *op);
#endif
