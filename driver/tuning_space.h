/* tuning_space.h — the tuning space of a graph: the GEMM perf configs worth trying when
 * compiling it for one target, each checked against every GEMM of the graph before any
 * code generation.
 * Contract:
 *  - kl_tuning_space clones graph into a module of its own (the graph is not modified)
 *    with the module attribute target, runs graph-partition, graph-to-rock,
 *    rock-regularize and rock-conv-to-gemm on it and reads every rock.gemm (G x M x N x K
 *    from a [G,K,M], b [G,K,N]; element size the larger input's; the matrix instruction
 *    the target has for a's type, rock_accel.h). For each GEMM it builds the space of
 *    passes/perf_space.h at the level; a config of the first GEMM's space is applicable to
 *    the graph when it also passes kl_perf_check for every other GEMM (kiln.compile's
 *    perf_config applies to all of them), else rejected with the first failing reason, prefixed by that GEMM's shape when the graph
 *    has more than one. The order is the first GEMM's (quick: its ranking).
 *  - Any other op (a kernel func or module of .kir text holding rock.gemm ops) is read as
 *    it is, without passes.
 *  - A graph without a GEMM (element-wise, reductions, softmax kernels: they take no
 *    perf config) has an empty space and *ngemms = 0.
 *  - Errors (an unknown target, a level other than quick/full/exhaustive, a graph the
 *    front passes reject): KL_ERR plus a message in err. */
#ifndef KL_TUNING_SPACE_H
#define KL_TUNING_SPACE_H
#include "passes/perf_space.h"

kl_status kl_tuning_space(kl_op *graph, const char *target, const char *level, kl_perf_space *out, int *ngemms,
                          char *err, size_t errlen);
#endif
