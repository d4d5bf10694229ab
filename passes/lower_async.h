/* lower_async.h — the LLVM lowering of the asynchronous global -> LDS copies
 * (rock.async_copy, rock.async_commit, rock.async_wait: core/dialect_rock.c), lower_llvm
 * hooks (passes/lower_to_llvm.h) attached by passes/lower_to_llvm.c's table.
 * Contract:
 *   NVPTX : rock.async_copy is llvm.nvvm.cp.async.{cg.shared.global.16 | ca.shared.global.
 *           4 / 8}[.s] (cp.async.cg / .ca; with a valid operand the src-size form, src
 *           size = valid ? bytes : 0, so an invalid vector writes zeros and reads
 *           nothing); rock.async_commit is llvm.nvvm.cp.async.commit.group, rock.async_wait
 *           {pending = N} llvm.nvvm.cp.async.wait.group(N). Needs sm_80+ (an error names
 *           the target otherwise).
 *   AMDGPU, host: rock.async_copy is a vector load (zeros where not valid) and a store,
 *           complete at once; commit and wait emit nothing. */
#ifndef KL_LOWER_ASYNC_H
#define KL_LOWER_ASYNC_H
#include "passes/lower_to_llvm.h"

bool kl__lower_async_copy(kl_llvm_lowering *L, kl_op *op);
bool kl__lower_async_commit(kl_llvm_lowering *L, kl_op *op);
bool kl__lower_async_wait(kl_llvm_lowering *L, kl_op *op);
#endif
