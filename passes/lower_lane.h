/* lower_lane.h — the LLVM lowering of rock.lane_shuffle (core/dialect_rock.h), a
 * lower_llvm hook (passes/lower_to_llvm.h) attached by passes/lower_to_llvm.c's table.
 * Contract: NVPTX llvm.nvvm.shfl.sync.bfly.i32 over the full warp; AMDGPU
 * llvm.amdgcn.ds.bpermute at byte address (lane ^ xor) * 4, lane from mbcnt.lo/hi; 64-bit
 * values move as two 32-bit halves; xor >= the target's wave size, and the host, give the
 * operand itself. */
#ifndef KL_LOWER_LANE_H
#define KL_LOWER_LANE_H
#include "passes/lower_to_llvm.h"

bool kl__lower_lane_shuffle(kl_llvm_lowering *L, kl_op *op);
#endif
