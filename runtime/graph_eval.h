/* graph_eval.h — the reference evaluator: runs a graph (dialect_graph.h) on host
 * tensors with the float64 reference kernels (refops.h). It is the oracle for every
 * compiled kernel. Each op runs through the eval hook of its definition (KL_HOOK_EVAL,
 * core/ir.h; the builtin graph ops' hooks are in graph_eval_ops.c); graph.param binds
 * an input; an op without an eval hook is an error naming the op and its location.
 * Contract: inputs are given by param name; every param needs exactly one input of the
 * param's shape and dtype and of the same memory layout (no hidden copies: a layout
 * difference is an error naming both). Unknown names are errors too. Outputs are new
 * tensors in the layout the graph's output declares (kl_graph_output_strides), else in
 * their result type's (caller releases each and frees the array).
 * Errors: KL_ERR with a message in err naming the op and its location. */
#ifndef KL_GRAPH_EVAL_H
#define KL_GRAPH_EVAL_H
#include "core/ir.h"
#include "runtime/tensor.h"

typedef struct kl_named_tensor {
  const char *name;
  kl_tensor *tensor;
} kl_named_tensor;

/* The eval hook of an op: its result from its operands' values in[0..op->nopnds). *out
 * holds a zero tensor of the result type (in its layout) for the hook to fill, except
 * for ops with KL_TRAIT_PLAN_INPUT (graph.constant), whose hook makes the tensor (*out
 * is NULL). Returns 0, or nonzero with a message in err (*out is released by the
 * evaluator either way on failure). */
typedef int (*kl_eval_fn)(kl_op *op, kl_tensor *const *in, kl_tensor **out, char *err, size_t errlen);
/* Attaches fn as op `name`'s eval hook in ctx (kl_opdef_attach's errors). */
kl_status kl_eval_attach(kl_ctx *ctx, const char *name, kl_eval_fn fn);
kl_eval_fn kl_eval_hook(const kl_op *op); /* NULL if it has none */
/* Attaches the reference semantics of the builtin graph ops to ctx, once per context,
 * leaving hooks attached before alone (a user's hook wins). Every graph op but
 * graph.param (bound to an input by the evaluator) and graph.launch (a host-plan step:
 * programs run kernels, the reference runs graphs) gets one. kl_graph_eval calls it. */
void kl_graph_eval_register(kl_ctx *ctx);

kl_status kl_graph_eval(kl_op *graph, int ninputs, const kl_named_tensor *inputs, int *noutputs, kl_tensor ***outputs,
                        char *err, size_t errlen);
/* Checks one input tensor against a param op (shape, dtype, layout). */
kl_status kl_graph_check_input(kl_op *param, const kl_tensor *t, char *err, size_t errlen);
/* dtype of a scalar kl_type, KL_DT_NONE if it has none. */
kl_dtype kl_dtype_of_type(const kl_type *t);
#endif
