/* pass_util.h — small helpers shared by the graph-partition, graph-to-rock and
 * rock-conv-to-gemm passes: views of the graph view ops
 * (transpose / reshape / broadcast / slice) as kl_views, and rock.transform creation.
 * Contract: views returned here are heap kl_views owned by the caller (kl_view_free);
 * IR is created through the ir.h primitives and is arena-owned by the context. Failures
 * return NULL after emitting a diagnostic at the op's location (kl_emit_error). */
#ifndef KL_PASS_UTIL_H
#define KL_PASS_UTIL_H
#include "core/ir.h"
#include "core/view.h"

/* #view<...> attributes (core/view_attr.c). */
#if __has_include("core/view_attr.h")
#include "core/view_attr.h"
#else
const kl_attr *kl_attr_from_view(kl_ctx *ctx, const kl_view *v);
const kl_view *kl_attr_view(const kl_attr *a);
#endif

/* The passes' entry points (also registered by name in passes/registry.c):
 * graph-partition (every graph function of the module), graph-to-rock (every
 * kernel_group function), rock-conv-to-gemm (every rock.conv under root). Each returns
 * KL_ERR after emitting diagnostics; the IR stays valid on error. */
kl_status kl_graph_partition(kl_op *module);
/* graph-partition with its options input-fusion and input-fusion-cost (kl_graph_partition:
 * both true). */
kl_status kl_graph_partition_with(kl_op *module, bool input_fusion, bool fusion_cost);
kl_status kl_graph_to_rock(kl_op *module);
kl_status kl_rock_conv_to_gemm(kl_op *root);

/* Graph op classes are traits and data of the op definitions (core/dialect_graph.h):
 * kl_op_has_trait(op, KL_TRAIT_VIEW / KL_TRAIT_INVERTIBLE_VIEW / KL_TRAIT_GEMM_ANCHOR /
 * KL_TRAIT_ELEMENTWISE / KL_TRAIT_HOST_PLAN), kl_op_kernel_kind, kl_op_view_kind, ... */
/* A graph-level view op (KL_TRAIT_VIEW on an op legal at the graph level only; the
 * kernel-level view is rock.transform). */
bool kl_pu_is_graph_view(const kl_op *op);

/* The view of one graph view op (by its kl_opdef.view): upper = its result shape, lower = its operand shape.
 * NULL (+ diagnostic at op->loc) if the view cannot be built (e.g. an empty tensor). */
kl_view *kl_pu_graph_view(kl_op *op);
/* numpy broadcast of `from` (rank rf) to `to` (rank rt >= rf): leading new dims are
 * AddDim, size-1 dims that grow are Broadcast. upper = to, lower = from. */
kl_view *kl_pu_broadcast_view(int rf, const int64_t *from, int rt, const int64_t *to, kl_view_err *err);
/* The identity view over a shape with dims named d0, d1, ... */
kl_view *kl_pu_identity(int rank, const int64_t *shape, kl_view_err *err);

/* A global buffer type with the shape, strides and element type of tensor type t. */
const kl_type *kl_pu_buffer_like(kl_ctx *ctx, const kl_type *t);
/* Creates `%r = rock.transform(src) {view = v}` (result buffer<upper shape x elem>,
 * row-major) before `before` (or at the end of block when before is NULL). */
kl_value *kl_pu_transform(kl_ctx *ctx, kl_loc loc, kl_value *src, const kl_view *v, kl_block *block, kl_op *before);
/* True if every shape entry is > 0. */
bool kl_pu_nonempty(const kl_type *t);
#endif
