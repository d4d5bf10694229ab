/* infer.h — output shape inference of the graph ops (broadcast, where, conv (1-D to 3-D), dot,
 * transpose, reshape, slice, concat, reduce), shared by the graph dialect
 * (core/dialect_graph.c) and the reference kernels (runtime/refops.h).
 * Contract: pure; `op` names the op in messages. Errors: int status (0 ok) and a message
 * in err[errlen] that names the op and the shapes, e.g. "dot: inner dimensions differ:
 * [2,3] x [4,5]"; bad shapes never crash; *out is only written on success. Axes may be
 * negative (counted from the end, as in numpy). */
#ifndef KL_INFER_H
#define KL_INFER_H
#include "core/shape.h"

typedef struct kl_conv2d_params {
  int64_t stride[2];   /* h, w; >= 1 */
  int64_t pad[4];      /* top, bottom, left, right; >= 0 */
  int64_t dilation[2]; /* h, w; >= 1 */
  int64_t groups;      /* >= 1 */
} kl_conv2d_params;
#define KL_CONV2D_DEFAULT ((kl_conv2d_params){ { 1, 1 }, { 0, 0, 0, 0 }, { 1, 1 }, 1 })

/* An N-D convolution's parameters: `spatial` spatial dims (1, 2 or 3: input [N, C,
 * spatial...], filter [K, C/G, window...], output [N, K, spatial...]); per spatial dim a
 * stride and a dilation (>= 1) and a [begin, end] padding (>= 0) in dim order. */
#define KL_CONV_MAX_SPATIAL 3
typedef struct kl_conv_params {
  int spatial;
  int64_t stride[KL_CONV_MAX_SPATIAL];
  int64_t pad[2 * KL_CONV_MAX_SPATIAL]; /* begin, end per spatial dim */
  int64_t dilation[KL_CONV_MAX_SPATIAL];
  int64_t groups; /* >= 1 */
} kl_conv_params;
/* The defaults (stride 1, padding 0, dilation 1, groups 1) of a conv with `spatial` dims. */
kl_conv_params kl_conv_params_default(int spatial);
/* The 2-D parameters as N-D ones. */
kl_conv_params kl_conv_params_from_2d(const kl_conv2d_params *p);

/* ---- output shape inference (pure; op names the op in messages) ---- */
/* numpy broadcasting of two shapes. */
int kl_infer_broadcast(const char *op, const kl_shape *a, const kl_shape *b, kl_shape *out, char *err, size_t errlen);
/* in must broadcast to target (numpy rules, target rank >= in rank, result = target). */
int kl_infer_broadcast_to(const char *op, const kl_shape *in, const kl_shape *target, char *err, size_t errlen);
int kl_infer_where(const kl_shape *cond, const kl_shape *a, const kl_shape *b, kl_shape *out, char *err, size_t errlen);
/* N-D conv (ranks p->spatial + 2): out[i] = (in[i] + pad_begin + pad_end - dil*(w-1) - 1)
 * / stride + 1 per spatial dim i; errors (named "conv1d:", "conv2d:", "conv3d:") if the
 * (dilated) filter does not fit the padded input, on C != (C/G)*G, K % G != 0, bad
 * parameters or ranks other than spatial + 2. */
int kl_infer_conv(const kl_shape *in, const kl_shape *filter, const kl_conv_params *p, kl_shape *out, char *err,
                  size_t errlen);
/* 2-D: kl_infer_conv of rank-4 operands (Ho = (H + pt + pb - dil_h*(Y-1) - 1)/stride_h + 1). */
int kl_infer_conv2d(const kl_shape *in, const kl_shape *filter, const kl_conv2d_params *p, kl_shape *out, char *err,
                    size_t errlen);
/* a: [..., M, K] ([..., K, M] if trans_a); b: [..., K, N] ([..., N, K] if trans_b);
 * ranks >= 2; batch dims broadcast numpy-style; out: [batch..., M, N]. */
int kl_infer_dot(const kl_shape *a, const kl_shape *b, bool trans_a, bool trans_b, kl_shape *out, char *err,
                 size_t errlen);
/* out.dim[i] = in.dim[perm[i]]; nperm must equal the rank. */
int kl_infer_transpose(const kl_shape *in, int nperm, const int *perm, kl_shape *out, char *err, size_t errlen);
/* dims may hold one -1 (inferred); the element counts must match. */
int kl_infer_reshape(const kl_shape *in, int rank, const int64_t *dims, kl_shape *out, char *err, size_t errlen);
/* begin/end/step: rank entries each (step NULL = all 1). begin and end may be negative
 * (+ size), must then lie in [0, size]; end < begin gives an empty axis; step >= 1.
 * out_begin (may be NULL) receives the normalised begins. */
int kl_infer_slice(const kl_shape *in, const int64_t *begin, const int64_t *end, const int64_t *step, kl_shape *out,
                   int64_t *out_begin, char *err, size_t errlen);
/* All ranks equal, sizes equal except along axis; n >= 1. */
int kl_infer_concat(int n, const kl_shape *ins, int axis, kl_shape *out, char *err, size_t errlen);
/* axes: naxes distinct axes (naxes 0: nothing reduced); keepdims keeps them as size 1.
 * reduced (may be NULL, KL_MAX_RANK entries) marks the reduced input axes. */
int kl_infer_reduce(const char *op, const kl_shape *in, int naxes, const int *axes, bool keepdims, kl_shape *out,
                    bool *reduced, char *err, size_t errlen);
/* Checks the axis and returns it normalised (>= 0) in *axis_out. */
int kl_normalize_axis(const char *op, const kl_shape *in, int axis, int *axis_out, char *err, size_t errlen);

#endif
