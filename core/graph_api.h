/* graph_api.h — building graph-dialect graphs (dialect_graph.h) from C with names, dtypes,
 * shapes and attribute text only: what the public C API (include/kiln.h) offers an
 * embedder that does not see the IR's structs. One layer over kl_graph_build.
 * Contract:
 *  - graph is a graph func (kl_graph_create, kl_module_graph). Every builder returns the
 *    new op's result value, or NULL after emitting a diagnostic "file:line:col: error:
 *    <op>: ..." at loc on the graph's context (read it with kl_diag_take); a failed call
 *    adds no op, nothing aborts. A NULL graph returns NULL (no context to report on).
 *    loc is where the diagnostics point (kl_loc_make(ctx, __FILE__, __LINE__, 0) names
 *    the caller's line; KL_LOC_UNKNOWN is fine).
 *  - Operands must be non-NULL values of the same graph (a value of another graph or
 *    another context is an error naming the operand), so the NULL of a failed builder
 *    passed on gives an error, not a crash.
 *  - attrs is the text of an attribute dictionary in .kir syntax (core/attr.h), NULL or ""
 *    for none, e.g. "{stride = [2, 2], padding = [1, 1, 1, 1]}" for conv,
 *    "{transpose_b = true}" for dot, "{axes = [1], keepdims = true}" for reductions,
 *    "{min = 0.0, max = 6.0}" for clip, "{perm = [1, 0]}" for transpose. The names and
 *    defaults are the ops' (dialect_graph.h). Bad text is an error naming the op.
 *  - Shapes are logical, rank 0..KL_MAX_RANK, within kl_shape_check's limits;
 *    layout (NULL or "" = row-major) is a core/shape.h layout string ("NHWC", "KYXC",
 *    "1,0", ...) giving the memory order of a param. */
#ifndef KL_GRAPH_API_H
#define KL_GRAPH_API_H
#include "core/dtype.h"
#include "core/ir.h"

/* A graph.param named name (non-empty, unique in the graph) of dtype dt and logical
 * shape[rank], laid out in memory as layout. */
kl_value *kl_graph_add_param(kl_op *graph, const char *name, kl_dtype dt, int rank, const int64_t *shape,
                             const char *layout, kl_loc loc);
/* Graph op op ("add", or "graph.add") on operands[0..n) with attributes attrs; every
 * graph op except param, constant and convert (which have their own builders) and
 * launch (made by graph-partition). */
kl_value *kl_graph_add_op(kl_op *graph, const char *op, int n, kl_value *const *operands, const char *attrs,
                          kl_loc loc);
/* graph.convert of x to dtype dt. */
kl_value *kl_graph_add_convert(kl_op *graph, kl_value *x, kl_dtype dt, kl_loc loc);
/* A graph.constant of dtype dt and row-major shape[rank] holding values[numel] (logical
 * row-major order), each rounded through dt as a tensor stores it (tensor.h); at most
 * 2^22 elements. */
kl_value *kl_graph_add_constant(kl_op *graph, kl_dtype dt, int rank, const int64_t *shape, const double *values,
                                kl_loc loc);
/* Makes outs[0..n) (n >= 1, each a value of graph) the graph's outputs, replacing earlier
 * ones (kl_graph_set_outputs, checked). KL_ERR + diagnostic at loc otherwise. */
kl_status kl_graph_output(kl_op *graph, int n, kl_value *const *outs, kl_loc loc);
/* Declares the memory layout of output `index` (0-based, of the outputs kl_graph_output
 * set last): a layout string (as for params: "NHWC", "0,2,3,1", ...) or strides[rank of
 * the output] in elements, not both; both NULL/"" = the value's own layout (row-major).
 * Strides may leave gaps (padding: the buffer spans the largest offset + 1 elements and
 * the kernels write only the elements, never the gaps) but no two elements may share an
 * address (no stride 0 on a dim of size > 1, no overlap). The plan's output slot, the
 * tensors a run and the evaluator return, and the kernels' writes all take this layout.
 * KL_ERR + diagnostic at loc ("output N: ...") otherwise, the layout left unchanged. */
kl_status kl_graph_output_layout(kl_op *graph, int index, const char *layout, const int64_t *strides, kl_loc loc);
/* The graph func of module named name (its sym_name), or the first graph func when name
 * is NULL; NULL if there is none (no diagnostic). For modules read with kl_parse_module. */
kl_op *kl_module_graph(kl_op *module, const char *name);
#endif
