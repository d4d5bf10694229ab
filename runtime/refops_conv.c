/* refops_conv.c — reference 2-D convolution (direct loops, float64 / int64 accumulation;
 * its shape inference, kl_infer_conv2d, is core/infer.c). Layout-agnostic: operands are
 * packed into logical row-major copies first (input N,C,H,W; filter K,C/G,Y,X), the
 * result is stored through the output's strides. Padding is zero padding: a tap in it
 * adds 0 * weight (NaN for an inf or NaN weight, as numpy and the compiled kernels
 * compute). See refops.h. */
#include "runtime/refops.h"
#include "core/arena.h"
#include <stdlib.h>
#include <string.h>

#define SHP(s, b) kl_shape_format((s), (b), sizeof(b))

int kl_ref_conv2d(const kl_tensor *input, const kl_tensor *filter, const kl_conv2d_params *p, kl_dtype out_dt,
                  kl_tensor **out, char *err, size_t errlen) {
  kl_shape si = kl_tensor_shape(input), sf = kl_tensor_shape(filter), so;
  if (kl_infer_conv2d(&si, &sf, p, &so, err, errlen)) return 1;
  if (!*out && out_dt == KL_DT_NONE) out_dt = kl_contraction_dtype(input->dtype);
  if (kl_ref_prepare_out("conv2d", &so, out_dt, out, err, errlen)) return 1;
  kl_tensor *o = *out;
  int64_t N = si.dim[0], C = si.dim[1], H = si.dim[2], W = si.dim[3];
  int64_t K = sf.dim[0], CG = sf.dim[1], Y = sf.dim[2], X = sf.dim[3];
  int64_t HO = so.dim[2], WO = so.dim[3], KG = K / p->groups;
  int64_t sh = p->stride[0], sw = p->stride[1], dh = p->dilation[0], dw = p->dilation[1];
  int64_t pt = p->pad[0], pl = p->pad[2];
  bool ints = kl_dtype_is_int(input->dtype) && kl_dtype_is_int(filter->dtype);
  bool oint = kl_dtype_is_int(o->dtype);
  int64_t ni = kl_tensor_numel(input), nf = kl_tensor_numel(filter);
  double *fi = NULL, *ff = NULL;
  int64_t *ii = NULL, *iff = NULL;
  if (ints) {
    ii = kl_xmalloc(sizeof(int64_t) * (size_t)(ni ? ni : 1));
    iff = kl_xmalloc(sizeof(int64_t) * (size_t)(nf ? nf : 1));
    kl_tensor_to_i64(input, ii);
    kl_tensor_to_i64(filter, iff);
  } else {
    fi = kl_xmalloc(sizeof(double) * (size_t)(ni ? ni : 1));
    ff = kl_xmalloc(sizeof(double) * (size_t)(nf ? nf : 1));
    kl_tensor_to_f64(input, fi);
    kl_tensor_to_f64(filter, ff);
  }
  size_t esz = kl_dtype_size(o->dtype);
  for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k < K; k++) {
      int64_t c0 = (k / KG) * CG;
      for (int64_t ho = 0; ho < HO; ho++)
        for (int64_t wo = 0; wo < WO; wo++) {
          double facc = 0;
          uint64_t iacc = 0;
          for (int64_t c = 0; c < CG; c++) {
            int64_t ibase = (n * C + c0 + c) * H * W;
            int64_t fbase = ((k * CG) + c) * Y * X;
            for (int64_t y = 0; y < Y; y++) {
              int64_t h = ho * sh - pt + y * dh;
              for (int64_t x = 0; x < X; x++) {
                int64_t w = wo * sw - pl + x * dw, b = fbase + y * X + x;
                if (h < 0 || h >= H || w < 0 || w >= W) { /* zero padding: 0 * an inf / NaN weight is NaN */
                  if (!ints) facc += 0.0 * ff[b];
                  continue;
                }
                int64_t a = ibase + h * W + w;
                if (ints)
                  iacc += (uint64_t)ii[a] * (uint64_t)iff[b];
                else
                  facc += fi[a] * ff[b];
              }
            }
          }
          int64_t off = o->offset + n * o->strides[0] + k * o->strides[1] + ho * o->strides[2] + wo * o->strides[3];
          void *dst = (char *)o->data + off * (int64_t)esz;
          if (ints && oint)
            kl_dtype_store_i64(o->dtype, dst, (int64_t)iacc);
          else if (ints)
            kl_dtype_store_f64(o->dtype, dst, (double)(int64_t)iacc);
          else
            kl_dtype_store_f64(o->dtype, dst, facc);
        }
    }
  free(fi);
  free(ff);
  free(ii);
  free(iff);
  return 0;
}
