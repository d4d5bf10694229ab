/* dialect_graph.h — the graph-level ops (value semantics on tensors) and their shape
 * and type inference.
 * Contract: a graph is a func.func with the unit attribute `graph`; its body holds
 * graph.param ops (attribute name = "x"; result type = the param's tensor type with its
 * strides), the computation, and a func.return of the outputs. Shapes are logical
 * (conv input N,C,[D,]H,W, filter K,C/G,[Z,]Y,X); strides only describe memory layout.
 * Ops (operands) {attributes}:
 *   graph.param() {name}            graph.constant() {value = [flat floats/ints]}
 *   graph.conv(x, w) {stride, padding, dilation, groups}   1-D, 2-D, 3-D: x [N, C, spatial...],
 *       w [K, C/G, window...] of rank 3, 4 or 5; stride / dilation an integer or one per
 *       spatial dim, padding an integer, one per spatial dim or [begin, end] per spatial
 *       dim in dim order (2-D [top, bottom, left, right], 3-D [d0, d1, h0, h1, w0, w1])
 *   graph.dot(a, b) {transpose_a, transpose_b}
 *   graph.add|sub|mul|div|max|min|pow(a, b)  (numpy broadcasting)
 *   graph.neg|abs|exp|log|sqrt|rsqrt|tanh|sigmoid|relu(x)   graph.clip(x) {min, max}
 *   graph.where(c, a, b)   graph.convert(x) (result element type = target dtype)
 *   graph.broadcast(x) {shape}   graph.transpose(x) {perm}   graph.reshape(x) {shape}
 *   graph.slice(x) {begin, end, step}   graph.concat(xs...) {axis}
 *   graph.reduce_sum|reduce_max|reduce_mean(x) {axes, keepdims}   graph.softmax(x) {axis}
 *   graph.launch(args...) {callee = @kernel}   (host plan, after graph-partition)
 * Result layout: conv results keep the input's dimension order (NHWC in -> NHWC out);
 * element-wise results and softmax take the layout of the first operand of the result's
 * shape; everything else is row-major. Element types: conv and dot take two inputs of
 * one element type; integer inputs (i1, i8, i32) accumulate and give i32 (i64: i64), as
 * MIGraphX's quant_dot and rocMLIR do; float inputs give their own type (a convert of
 * the result is an epilogue like any other). kl_graph_build infers the result type (errors name
 * the op, the operands' shapes and the op's location); each op's verifier re-infers and
 * compares shape and element type.
 * Traits (ir.h): the element-wise ops (binary, unary, clip, where, convert) carry
 * KL_TRAIT_ELEMENTWISE; transpose / reshape / broadcast / slice KL_TRAIT_VIEW (transpose
 * and reshape also KL_TRAIT_INVERTIBLE_VIEW); conv and dot KL_TRAIT_GEMM_ANCHOR; param,
 * constant and launch KL_TRAIT_HOST_PLAN (param and constant also KL_TRAIT_PLAN_INPUT).
 * Every graph op is legal at KL_LEVEL_GRAPH only.
 * Data on the definitions (kl_opdef, ir.h), read through kl_op_kernel_kind / view_kind /
 * scalar_form / scalar_code: kernel = CONV / DOT (conv, dot), REDUCE (reduce_*),
 * SOFTMAX, CONCAT; view = BROADCAST / TRANSPOSE / RESHAPE / SLICE; scalar = BINARY with
 * the kl_binop (add ... pow), UNARY with the kl_unop (neg ... relu), CLIP, WHERE,
 * CONVERT, REDUCE with the kl_reduce_op (reduce_sum, _max, _mean). Each op but param,
 * constant and launch (whose result types are given) has its shape/type rule as
 * kl_opdef.infer. Behaviour of other layers hangs on the definitions as hooks (ir.h):
 * the reference semantics (KL_HOOK_EVAL, runtime/graph_eval.h). */
#ifndef KL_DIALECT_GRAPH_H
#define KL_DIALECT_GRAPH_H
#include "core/ir.h"

/* Infers the result type of graph op `name` ("graph.add") from operand types and
 * attributes, through the op definition's infer rule (an op without one: "unknown graph
 * op"). result_elem: the element type for graph.convert (ignored otherwise).
 * Returns NULL after emitting an error at loc. */
const kl_type *kl_graph_infer(kl_ctx *ctx, const char *name, kl_loc loc, int n, const kl_type *const *operand_types,
                              int nattrs, const kl_named_attr *attrs, const kl_type *result_elem);
/* Creates graph op `name` with its inferred result and inserts it into the graph body
 * (before the func.return if there is one). graph.param/graph.constant take their
 * result type from `type`. Returns NULL (with a diagnostic at loc) on error. */
kl_op *kl_graph_build(kl_op *graph, const char *name, kl_loc loc, int n, kl_value *const *opnds, int nattrs,
                      const kl_named_attr *attrs, const kl_type *type);
/* A new graph function @name in module (created if module is NULL: returned via *module). */
kl_op *kl_graph_create(kl_ctx *ctx, kl_op *module, const char *name, kl_loc loc);
/* Sets the graph's outputs (replacing an earlier func.return and the declared output
 * layouts). */
void kl_graph_set_outputs(kl_op *graph, int n, kl_value *const *outs, kl_loc loc);
/* Output layouts: output i of the graph may declare the memory layout its buffer has (the
 * plan's output slot, the tensor p:run returns, what the kernels write through), as
 * strides in elements of the output's rank, kept on the graph func as the attribute
 * `output_strides` (one i64 array per output, [] = the value's own layout). Callers check
 * the strides (kl_graph_output_layout in graph_api.h: non-overlapping, within the shape
 * limits). kl_graph_output_strides fills strides[rank of output i] and returns true when
 * output i declares a layout; false otherwise (also for an i out of range). */
void kl_graph_set_output_strides(kl_op *graph, int i, const int64_t *strides);
bool kl_graph_output_strides(kl_op *graph, int i, int64_t *strides);
kl_block *kl_graph_body(kl_op *graph);
/* The identity tests of the host-plan ops (unique ops, each handled on its own by the
 * driver: graph.param binds an input, graph.constant holds a value, graph.launch runs a
 * kernel); properties they share are traits (KL_TRAIT_HOST_PLAN, KL_TRAIT_PLAN_INPUT). */
bool kl_graph_is_param(const kl_op *op);
bool kl_graph_is_constant(const kl_op *op);
bool kl_graph_is_launch(const kl_op *op);
/* Params in order of creation; returns count, fills up to max. */
int kl_graph_params(kl_op *graph, kl_op **out, int max);
kl_op *kl_graph_param(kl_op *graph, const char *name);
kl_op *kl_graph_return(kl_op *graph);
bool kl_is_graph(const kl_op *op);
/* The graph v is defined in (its nearest enclosing graph function), NULL if none. */
kl_op *kl_graph_of_value(const kl_value *v);
/* A graph's symbol name ("?" if it has none). */
const char *kl_graph_name(kl_op *graph);
/* The result element type of conv / dot with inputs of element type `in` (see above). */
const kl_type *kl_graph_contraction_elem(kl_ctx *ctx, const kl_type *in);
/* A conv's parameters for `spatial` spatial dims from its attributes (the forms above;
 * absent: the defaults); false after a located error naming the attribute. */
struct kl_conv_params;
bool kl_graph_conv_params(kl_ctx *ctx, kl_loc loc, int spatial, int nattrs, const kl_named_attr *attrs,
                          struct kl_conv_params *p);
void kl_register_graph_dialect(kl_ctx *ctx);
#endif
