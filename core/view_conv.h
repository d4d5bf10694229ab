/* view_conv.h — implicit-GEMM views of a 2-D convolution (forward).
 * Contract: kl_conv_views_build turns a conv description into three views over the
 * conv's buffers (pure math, no IR); the caller owns the views (kl_conv_views_free).
 * Errors (bad sizes, groups not dividing C or K, empty output) return false with a
 * message in err (may be NULL). Nothing aborts.
 *
 * Buffers (logical dims, in this order):
 *   input  NCHW = [N, C, Hi, Wi]    NHWC = [N, Hi, Wi, C]        names ni ci hi wi
 *   filter KCYX = [K, C/G, Y, X]    KYXC = [K, Y, X, C/G]        names k c y x
 *   output NKHW = [N, K, Ho, Wo]    NHWK = [N, Ho, Wo, K]        names no ko ho wo
 *   Ho = (Hi + pad_top + pad_bottom - dil_h*(Y-1) - 1) / stride_h + 1 (same for Wo).
 * GEMM views (upper dims, in this order; G = groups, 1 when ungrouped):
 *   filter (A): [g, gemmK, gemmM]   gemmM = K/G,  filter channel k = g*(K/G) + gemmM
 *   input  (B): [g, gemmK, gemmN]   gemmN = N*Ho*Wo = (n*Ho + ho)*Wo + wo
 *   output (C): [g, gemmM, gemmN]
 *   gemmK = C/G*Y*X, linearised following the filter layout:
 *     KCYX: gemmK = (c*Y + y)*X + x        KYXC: gemmK = (y*X + x)*(C/G) + c
 *   input coordinate: channel g*(C/G) + c, hi = ho*stride_h + y*dil_h - pad_top,
 *   wi = wo*stride_w + x*dil_w - pad_left; outside the image it is INVALID (padding).
 *   So C[g][m][n] = sum_k A[g][k][m] * B[g][k][n] is the convolution. */
#ifndef KL_VIEW_CONV_H
#define KL_VIEW_CONV_H
#include "core/view.h"

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
  int64_t g, gemm_k, gemm_m, gemm_n, ho, wo;
} kl_conv_views;

/* Output spatial size; false (with a message) if the description is invalid. */
bool kl_conv_out_size(const kl_conv2d *d, int64_t *ho, int64_t *wo, kl_view_err *err);
/* Buffer shapes of the three operands in their layouts (4 entries each). */
void kl_conv_buffer_shapes(const kl_conv2d *d, int64_t in[4], int64_t filter[4], int64_t out[4]);
/* Builds the three views (simplified). On failure all pointers in out are NULL. */
bool kl_conv_views_build(const kl_conv2d *d, kl_conv_views *out, kl_view_err *err);
void kl_conv_views_free(kl_conv_views *cv);
#endif
