/* migraphx_parse.h — the MIGraphX-dialect front end: reads MLIR text in the dialect
 * MIGraphX hands its kernels in (func.func bodies of migraphx.* ops) and builds one graph
 * function (core/graph_api.h) per func.func.
 * Contract:
 *  - kl_migraphx_parse returns a new module holding one graph per func.func (the
 *    function's name; funcs of nested modules too), or NULL after emitting located
 *    diagnostics "file:line:col: error: ..." on ctx (kl_diag_take). It never aborts on any
 *    input; text need not be NUL-terminated.
 *  - Syntax: an optional `module [@name] [attributes {...}] { ... }` wrapper; `func.func
 *    [private] @name(%a: T {attrs}, ...) -> T | (T {attrs}, ...) [attributes {...}]`;
 *    types `!migraphx.shaped<DxDxE, SxS>`, the short `<DxDxE, SxS>` in op type lists and
 *    the older `tensor<DxDxE>` (dense row-major); op forms `migraphx.op %a, %b {attrs} :
 *    T, T -> T`, `migraphx.op(%a) {attrs} : (T) -> T`, the generic `"migraphx.op"(...)`,
 *    `migraphx.convert %x : T to T`, `migraphx.literal(dense<...> : tensor<...>) : T`;
 *    attr values: ints, floats (hex too), bools, strings, typed (`1 : i64`) and untyped
 *    lists, dense literals (a bare scalar is a splat; nested lists must have the type's
 *    shape and integer elements the element type's range, as MLIR checks; hex blobs),
 *    types; `return`. Older MIGraphX files' constants `"tosa.const"() {value = dense<...>}` and
 *    `"migraphx.constant"() {value = dense<...>}` are read as literals.
 *  - Function arguments become graph params named like the argument ("arg0"), their
 *    logical shape the type's dims. Strides (kl_mgx_param_plan below): a permutation of
 *    dense strides is the param's layout; stride-0 dims are a param of size 1 there plus a
 *    graph.broadcast; strides of a sub-box of a larger dense buffer make a param of that
 *    buffer's shape plus a graph.slice (the client passes the whole buffer); an innermost
 *    stride s > 1 (every s-th element, as MIGraphX's int4 scales) adds a trailing buffer dim
 *    of s that the slice reads at 0 and a reshape drops. Results must have dense (possibly
 *    permuted) strides, else a located error.
 *  - Test files (rocMLIR's end-to-end tests): when the text calls `mhal.launch @k` (a host
 *    harness) or `call @k` / `func.call @k` (older files' harness comparing two kernels
 *    with tosa ops), the whole-file parse builds only the called kernels, each once (the
 *    harness and the kernel module's copy are skipped unread); kl_migraphx_parse_func with
 *    a name builds that function only. An mhal op anywhere else is "not supported".
 *  - Element types f32 f16 bf16 i8 si8 ui8 (kiln's u8) i32 si32 (and i64, i1) and the fp8 types f8E4M3FN
 *    f8E5M2 f8E4M3FNUZ f8E5M2FNUZ (kiln's f8e4m3fn ...: core/dtype.h; quant_dot /
 *    quant_convolution of fp8 give f32, of ui8 i32; quantizelinear with a ui8 zero point or
 *    result gives ui8); fp4 / fp6 and other
 *    f8 variants (f8E4M3B11FNUZ ...) are reported as unsupported. Op mapping and attribute rules: migraphx_ops.c. */
#ifndef KL_MIGRAPHX_PARSE_H
#define KL_MIGRAPHX_PARSE_H
#include "core/dtype.h"
#include "core/ir.h"
#include <stddef.h>

/* A MIGraphX tensor type: logical dims, strides (dense row-major when not written). */
typedef struct kl_mgx_type {
  int rank;
  int64_t dims[KL_MAX_RANK], strides[KL_MAX_RANK];
  kl_dtype dt;
  kl_loc loc;
} kl_mgx_type;

typedef enum {
  KL_MGX_INT,
  KL_MGX_FLOAT,
  KL_MGX_BOOL,
  KL_MGX_STR,
  KL_MGX_LIST,
  KL_MGX_TYPE,
  KL_MGX_DENSE,
  KL_MGX_UNIT,
  KL_MGX_OTHER
} kl_mgx_attr_kind;

typedef struct kl_mgx_attr {
  const char *name; /* NULL for list items */
  kl_mgx_attr_kind kind;
  kl_loc loc;
  int64_t i;
  double f;
  const char *s;
  int n; /* LIST: items; */
  struct kl_mgx_attr *items;
  double *vals; /* DENSE: nvals values in row-major order (a splat: one value, splat set) */
  int64_t nvals;
  bool splat;
  kl_mgx_type type; /* DENSE: the tensor type; TYPE: the element type in type.dt */
} kl_mgx_attr;

#define KL_MGX_MAX_OPERANDS 16
/* One parsed op, handed to the op table (migraphx_ops.c). */
typedef struct kl_mgx_op {
  const char *name; /* "add" (without "migraphx.") */
  kl_loc loc;
  int n;
  kl_value *operands[KL_MGX_MAX_OPERANDS];
  int nattrs;
  kl_mgx_attr *attrs;
  int nresults;
  kl_mgx_type results[4]; /* declared result types */
} kl_mgx_op;

kl_op *kl_migraphx_parse(kl_ctx *ctx, const char *text, size_t len, const char *file);
/* The same, building only the first function named only (the others, and later copies of
 * it such as those of a nested kernel module, are skipped unread); only NULL or "": all. */
kl_op *kl_migraphx_parse_func(kl_ctx *ctx, const char *text, size_t len, const char *file, const char *only);

/* The op table (migraphx_ops.c): builds op into graph, returning its result values in
 * out[0..op->nresults); false after a located diagnostic. */
bool kl_mgx_build_op(kl_op *graph, const kl_mgx_op *op, kl_value **out);
/* The attribute named name, NULL if absent. */
const kl_mgx_attr *kl_mgx_attr_get(const kl_mgx_op *op, const char *name);

/* How a param of MIGraphX type t is made: a kiln param of shape[rank] with layout
 * (perm[], identity = row-major), then a slice to t's dims when sliced, then a broadcast
 * to t's dims when broadcast. false with err when t's strides are none of these. */
typedef struct kl_mgx_param_plan {
  int rank;
  int64_t shape[KL_MAX_RANK]; /* the buffer the client passes */
  int perm[KL_MAX_RANK];      /* memory order, outermost first */
  bool permuted, sliced, broadcast;
  int64_t base[KL_MAX_RANK]; /* t's dims with broadcast dims 1 (the slice's extent) */
  int64_t inner;             /* the innermost stride: > 1 adds a trailing buffer dim of inner
                                (innermost in memory), sliced to its element 0 and dropped */
} kl_mgx_param_plan;
bool kl_mgx_plan_param(const kl_mgx_type *t, kl_mgx_param_plan *plan, char *err, size_t errlen);
#endif
