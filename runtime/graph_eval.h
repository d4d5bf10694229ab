/* graph_eval.h — the reference evaluator: runs a graph (dialect_graph.h) on host
 * tensors with the float64 reference kernels (refops.h). It is the oracle for every
 * compiled kernel.
 * Contract: inputs are given by param name; every param needs exactly one input of the
 * param's shape and dtype and of the same memory layout (no hidden copies: a layout
 * difference is an error naming both). Unknown names are errors too. Outputs are new
 * row-major-or-result-layout tensors (caller releases each and frees the array).
 * Errors: KL_ERR with a message in err naming the op and its location. */
#ifndef KL_GRAPH_EVAL_H
#define KL_GRAPH_EVAL_H
#include "core/ir.h"
#include "runtime/tensor.h"

typedef struct kl_named_tensor { const char *name; kl_tensor *tensor; } kl_named_tensor;

kl_status kl_graph_eval(kl_op *graph, int ninputs, const kl_named_tensor *inputs,
                        int *noutputs, kl_tensor ***outputs, char *err, size_t errlen);
/* Checks one input tensor against a param op (shape, dtype, layout). */
kl_status kl_graph_check_input(kl_op *param, const kl_tensor *t, char *err, size_t errlen);
/* dtype of a scalar kl_type, KL_DT_NONE if it has none. */
kl_dtype kl_dtype_of_type(const kl_type *t);
#endif
