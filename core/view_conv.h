/* view_conv.h — implicit-GEMM views of an N-D convolution (forward; 1-D, 2-D, 3-D).
 * Contract: kl_conv_nd_views_build turns a conv description into three views over the
 * conv's buffers (pure math, no IR); the caller owns the views (kl_conv_views_free).
 * Errors (bad sizes, groups not dividing C or K, empty output) return false with a
 * message in err (may be NULL). Nothing aborts.
 *
 * Buffers (logical dims, in this order; S = the spatial dims, sp = 1, 2 or 3 of them:
 * 1-D w, 2-D h w, 3-D d h w; the filter window z y x likewise):
 *   input  [N, C, S...]    or channels-last [N, S..., C]      names ni ci (di hi) wi
 *   filter [K, C/G, W...]  or channels-last [K, W..., C/G]    names k c (z y) x
 *   output [N, K, O...]    or channels-last [N, O..., K]      names no ko (do ho) wo
 *   O_i = (S_i + pad_begin_i + pad_end_i - dil_i*(W_i-1) - 1) / stride_i + 1.
 * GEMM views (upper dims, in this order; G = groups, 1 when ungrouped):
 *   filter (A): [g, gemmK, gemmM]   gemmM = K/G,  filter channel k = g*(K/G) + gemmM
 *   input  (B): [g, gemmK, gemmN]   gemmN = N*prod(O) = (n*O_0 + o_0)*O_1 + o_1 ...
 *   output (C): [g, gemmM, gemmN]
 *   gemmK = C/G*prod(W), linearised following the filter layout:
 *     [K, C/G, W...]: gemmK = ((c*W_0 + w_0)*W_1 + w_1)...   channels-last or k_last: (w..., c)
 *   input coordinate: channel g*(C/G) + c, s_i = o_i*stride_i + w_i*dil_i - pad_begin_i;
 *   outside the image it is INVALID (padding).
 *   So C[g][m][n] = sum_k A[g][k][m] * B[g][k][n] is the convolution.
 * The 2-D description (kl_conv2d: NCHW / NHWC, KCYX / KYXC, NKHW / NHWK) is the same
 * views with sp = 2 (kl_conv_views_build). */
#ifndef KL_VIEW_CONV_H
#define KL_VIEW_CONV_H
#include "core/infer.h" /* KL_CONV_MAX_SPATIAL */
#include "core/view.h"

typedef struct kl_conv_desc {
  int spatial;                                                   /* 1, 2 or 3 */
  int64_t n, c, k, groups;                                       /* batch, channels and filters (all groups), groups */
  int64_t in[KL_CONV_MAX_SPATIAL], win[KL_CONV_MAX_SPATIAL];     /* input sizes, filter window, per spatial dim */
  int64_t stride[KL_CONV_MAX_SPATIAL], dil[KL_CONV_MAX_SPATIAL]; /* >= 1 */
  int64_t pad[2 * KL_CONV_MAX_SPATIAL];                          /* [begin, end] per spatial dim, >= 0 */
  bool in_last, filter_last, out_last;                           /* channels-last buffers */
  bool k_last; /* gemmK in the channels-last order (w..., c) even where the filter buffer is not channels
                * last (a view of a channels-last filter, e.g. split-k-workspace's channel slices) */
} kl_conv_desc;

typedef enum { KL_CONV_NCHW, KL_CONV_NHWC } kl_conv_in_layout;
typedef enum { KL_CONV_KCYX, KL_CONV_KYXC } kl_conv_filter_layout;
typedef enum { KL_CONV_NKHW, KL_CONV_NHWK } kl_conv_out_layout;

typedef struct kl_conv2d {
  int64_t n, c, hi, wi;                             /* input: batch, channels (all groups), height, width */
  int64_t k, y, x;                                  /* filter: output channels (all groups), height, width */
  int64_t groups;                                   /* >= 1, divides c and k */
  int64_t stride_h, stride_w;                       /* >= 1 */
  int64_t dil_h, dil_w;                             /* >= 1 */
  int64_t pad_top, pad_bottom, pad_left, pad_right; /* >= 0 */
  kl_conv_in_layout in_layout;
  kl_conv_filter_layout filter_layout;
  kl_conv_out_layout out_layout;
} kl_conv2d;

typedef struct kl_conv_views {
  kl_view *filter, *input, *output; /* A, B, C */
  int64_t g, gemm_k, gemm_m, gemm_n;
  int64_t out[KL_CONV_MAX_SPATIAL]; /* output spatial sizes */
  int64_t ho, wo;                   /* the last two of them (1-D: ho = 1) */
} kl_conv_views;

/* Output spatial sizes (out[0 .. spatial-1]); false (with a message) if the description is invalid. */
bool kl_conv_nd_out_size(const kl_conv_desc *d, int64_t *out, kl_view_err *err);
/* Buffer shapes of the three operands in their layouts (spatial + 2 entries each). */
void kl_conv_nd_buffer_shapes(const kl_conv_desc *d, int64_t *in, int64_t *filter, int64_t *out);
/* Builds the three views (simplified). On failure all pointers in out are NULL. */
bool kl_conv_nd_views_build(const kl_conv_desc *d, kl_conv_views *out, kl_view_err *err);

/* The 2-D description as an N-D one (unknown layouts count as the first of their enum). */
kl_conv_desc kl_conv2d_desc(const kl_conv2d *d);
bool kl_conv_out_size(const kl_conv2d *d, int64_t *ho, int64_t *wo, kl_view_err *err);
void kl_conv_buffer_shapes(const kl_conv2d *d, int64_t in[4], int64_t filter[4], int64_t out[4]);
bool kl_conv_views_build(const kl_conv2d *d, kl_conv_views *out, kl_view_err *err);
void kl_conv_views_free(kl_conv_views *cv);
#endif
