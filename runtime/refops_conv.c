/* refops_conv.c — reference N-D convolution, 1-D to 3-D (float64 / int64 accumulation: patch
 * rows times filter rows through the blocked kernel of refops_gemm.h, each sum in the direct
 * loop's order; its shape inference, kl_infer_conv, is core/infer.c). Layout-agnostic:
 * operands are packed into logical row-major copies first (input N,C,spatial...; filter
 * K,C/G,window...), the result is stored through the output's strides. Padding is zero
 * padding: a tap in it adds 0 * weight (NaN for an inf or NaN weight, as numpy and the
 * compiled kernels compute). See refops.h. */
#include "runtime/refops.h"
#include "runtime/refops_gemm.h"
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
  /* Per image and group: the patch rows of a chunk of output pixels, P[pixel, (c, z, y, x)]
   * (0 where a tap falls in the padding), against the filter rows F[k, (c, z, y, x)], through
   * the blocked kernel of refops_gemm.h: each output is the sum over (c, z, y, x) in that order,
   * bit for bit the direct loop's (a padded tap adds 0 * weight: NaN for an inf / NaN weight). */
  int64_t L = CG * fsp, npix = O[0] * O[1] * O[2];
  int64_t chunk = L > 0 ? (int64_t)(1 << 22) / L : npix; /* P at most 32 MiB */
  if (chunk < 1) chunk = 1;
  if (chunk > npix) chunk = npix;
  size_t vsz = ints ? sizeof(int64_t) : sizeof(double);
  void *P = kl_xmalloc(vsz * (size_t)(chunk * L > 0 ? chunk * L : 1));
  void *Cb = kl_xmalloc(vsz * (size_t)(KG * chunk > 0 ? KG * chunk : 1));
  kl_threadpool *pool = kl_ref_gemm_pool((double)N * (double)K * (double)npix * (double)L);
  for (int64_t n = 0; n < N; n++)
    for (int64_t g = 0; g < p->groups; g++)
      for (int64_t p0 = 0; p0 < npix; p0 += chunk) {
        int64_t pc = npix - p0 < chunk ? npix - p0 : chunk;
        for (int64_t q = 0; q < pc; q++) {
          int64_t pix = p0 + q, ow = pix % O[2], oh = pix / O[2] % O[1], od = pix / (O[2] * O[1]);
          int64_t col = 0;
          for (int64_t c = 0; c < CG; c++) {
            int64_t ibase = (n * C + g * CG + c) * isp;
            for (int64_t z = 0; z < F[0]; z++) {
              int64_t d = od * S[0] - P0[0] + z * Dl[0];
              for (int64_t y = 0; y < F[1]; y++) {
                int64_t h = oh * S[1] - P0[1] + y * Dl[1];
                for (int64_t x = 0; x < F[2]; x++, col++) {
                  int64_t w = ow * S[2] - P0[2] + x * Dl[2];
                  bool in = d >= 0 && d < I[0] && h >= 0 && h < I[1] && w >= 0 && w < I[2];
                  int64_t a = ibase + (d * I[1] + h) * I[2] + w;
                  if (ints)
                    ((int64_t *)P)[q * L + col] = in ? ii[a] : 0;
                  else
                    ((double *)P)[q * L + col] = in ? fi[a] : 0.0;
                }
              }
            }
          }
        }
        if (ints)
          kl_ref_gemm_nt_i64(pool, iff + g * KG * L, L, P, L, KG, pc, L, Cb, pc);
        else
          kl_ref_gemm_nt_f64(pool, ff + g * KG * L, L, P, L, KG, pc, L, Cb, pc);
        for (int64_t kk = 0; kk < KG; kk++)
          for (int64_t q = 0; q < pc; q++) {
            int64_t pix = p0 + q, ow = pix % O[2], oh = pix / O[2] % O[1], od = pix / (O[2] * O[1]);
            int64_t k = g * KG + kk;
            int64_t off = o->offset + n * o->strides[0] + k * o->strides[1] + od * OS[0] + oh * OS[1] + ow * OS[2];
            void *dst = (char *)o->data + off * (int64_t)esz;
            if (ints && oint)
              kl_dtype_store_i64(o->dtype, dst, ((int64_t *)Cb)[kk * pc + q]);
            else if (ints)
              kl_dtype_store_f64(o->dtype, dst, (double)((int64_t *)Cb)[kk * pc + q]);
            else
              kl_dtype_store_f64(o->dtype, dst, ((double *)Cb)[kk * pc + q]);
          }
      }
  kl_threadpool_destroy(pool);
  free(P);
  free(Cb);
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
