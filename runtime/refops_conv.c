/* refops_conv.c — reference N-D convolution, 1-D to 3-D (direct loops, float64 / int64
 * accumulation; its shape inference, kl_infer_conv, is core/infer.c). Layout-agnostic:
 * operands are packed into logical row-major copies first (input N,C,spatial...; filter
 * K,C/G,window...), the result is stored through the output's strides. Padding is zero
 * padding: a tap in it adds 0 * weight (NaN for an inf or NaN weight, as numpy and the
 * compiled kernels compute). See refops.h. */
#include "runtime/refops.h"
#include "core/arena.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kl_ref_conv(const kl_tensor *input, const kl_tensor *filter, const kl_conv_params *p, kl_dtype out_dt,
                kl_tensor **out, char *err, size_t errlen) {
  kl_shape si = kl_tensor_shape(input), sf = kl_tensor_shape(filter), so;
  if (kl_infer_conv(&si, &sf, p, &so, err, errlen)) return 1;
  if (!*out && out_dt == KL_DT_NONE) out_dt = kl_contraction_dtype(input->dtype);
  char nm[8] = "conv2d";
  nm[4] = (char)('0' + p->spatial);
  if (kl_ref_prepare_out(nm, &so, out_dt, out, err, errlen)) return 1;
  kl_tensor *o = *out;
  /* spatial dims padded to 3 with unit dims in front: input [N, C, D, H, W] */
  int sp = p->spatial, lead = 3 - sp;
  int64_t I[3] = { 1, 1, 1 }, F[3] = { 1, 1, 1 }, O[3] = { 1, 1, 1 }, S[3] = { 1, 1, 1 }, Dl[3] = { 1, 1, 1 },
          P0[3] = { 0, 0, 0 }, OS[3] = { 0, 0, 0 };
  for (int i = 0; i < sp; i++) {
    I[lead + i] = si.dim[2 + i], F[lead + i] = sf.dim[2 + i], O[lead + i] = so.dim[2 + i];
    S[lead + i] = p->stride[i], Dl[lead + i] = p->dilation[i], P0[lead + i] = p->pad[2 * i];
    OS[lead + i] = o->strides[2 + i];
  }
  int64_t N = si.dim[0], C = si.dim[1], K = sf.dim[0], CG = sf.dim[1], KG = K / p->groups;
  int64_t isp = I[0] * I[1] * I[2], fsp = F[0] * F[1] * F[2];
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
      for (int64_t od = 0; od < O[0]; od++)
        for (int64_t oh = 0; oh < O[1]; oh++)
          for (int64_t ow = 0; ow < O[2]; ow++) {
            double facc = 0;
            uint64_t iacc = 0;
            for (int64_t c = 0; c < CG; c++) {
              int64_t ibase = (n * C + c0 + c) * isp, fbase = (k * CG + c) * fsp;
              for (int64_t z = 0; z < F[0]; z++) {
                int64_t d = od * S[0] - P0[0] + z * Dl[0];
                for (int64_t y = 0; y < F[1]; y++) {
                  int64_t h = oh * S[1] - P0[1] + y * Dl[1];
                  for (int64_t x = 0; x < F[2]; x++) {
                    int64_t w = ow * S[2] - P0[2] + x * Dl[2], b = fbase + (z * F[1] + y) * F[2] + x;
                    if (d < 0 || d >= I[0] || h < 0 || h >= I[1] || w < 0 || w >= I[2]) {
                      if (!ints) facc += 0.0 * ff[b]; /* zero padding: 0 * an inf / NaN weight is NaN */
                      continue;
                    }
                    int64_t a = ibase + (d * I[1] + h) * I[2] + w;
                    if (ints)
                      iacc += (uint64_t)ii[a] * (uint64_t)iff[b];
                    else
                      facc += fi[a] * ff[b];
                  }
                }
              }
            }
            int64_t off = o->offset + n * o->strides[0] + k * o->strides[1] + od * OS[0] + oh * OS[1] + ow * OS[2];
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

int kl_ref_conv2d(const kl_tensor *input, const kl_tensor *filter, const kl_conv2d_params *p, kl_dtype out_dt,
                  kl_tensor **out, char *err, size_t errlen) {
  if (!p) {
    snprintf(err, errlen, "conv2d: missing parameters");
    return 1;
  }
  kl_conv_params q = kl_conv_params_from_2d(p);
  return kl_ref_conv(input, filter, &q, out_dt, out, err, errlen);
}
