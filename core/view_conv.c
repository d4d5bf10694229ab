/* view_conv.c — implicit-GEMM views of a 2-D convolution (see view_conv.h). */
#include "core/view_conv.h"
#include <stdio.h>
#include <string.h>

static bool bad(kl_view_err *err, const char *msg) {
  if (err) {
    err->line = err->col = 0;
    snprintf(err->msg, sizeof err->msg, "conv: %s", msg);
  }
  return false;
}

bool kl_conv_out_size(const kl_conv2d *d, int64_t *ho, int64_t *wo, kl_view_err *err) {
  const int64_t lim = (int64_t)1 << 30;
  int64_t v[] = { d->n, d->c, d->hi, d->wi, d->k, d->y, d->x, d->groups, d->stride_h, d->stride_w, d->dil_h, d->dil_w };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    if (v[i] < 1 || v[i] > lim) return bad(err, "sizes, groups, strides and dilations must be in [1, 2^30]");
  if (d->pad_top < 0 || d->pad_bottom < 0 || d->pad_left < 0 || d->pad_right < 0 || d->pad_top > lim ||
      d->pad_bottom > lim || d->pad_left > lim || d->pad_right > lim)
    return bad(err, "padding must be in [0, 2^30]");
  if (d->c % d->groups || d->k % d->groups) return bad(err, "groups must divide the input and output channels");
  if ((unsigned)d->in_layout > KL_CONV_NHWC || (unsigned)d->filter_layout > KL_CONV_KYXC ||
      (unsigned)d->out_layout > KL_CONV_NHWK)
    return bad(err, "unknown layout");
  int64_t eh = d->hi + d->pad_top + d->pad_bottom - d->dil_h * (d->y - 1) - 1;
  int64_t ew = d->wi + d->pad_left + d->pad_right - d->dil_w * (d->x - 1) - 1;
  if (eh < 0 || ew < 0) return bad(err, "the dilated filter is larger than the padded input");
  *ho = eh / d->stride_h + 1;
  *wo = ew / d->stride_w + 1;
  return true;
}

void kl_conv_buffer_shapes(const kl_conv2d *d, int64_t in[4], int64_t filter[4], int64_t out[4]) {
  int64_t ho = 0, wo = 0, cpg = d->groups > 0 ? d->c / d->groups : d->c;
  kl_conv_out_size(d, &ho, &wo, NULL);
  if (d->in_layout == KL_CONV_NCHW) {
    in[0] = d->n;
    in[1] = d->c;
    in[2] = d->hi;
    in[3] = d->wi;
  } else {
    in[0] = d->n;
    in[1] = d->hi;
    in[2] = d->wi;
    in[3] = d->c;
  }
  if (d->filter_layout == KL_CONV_KCYX) {
    filter[0] = d->k;
    filter[1] = cpg;
    filter[2] = d->y;
    filter[3] = d->x;
  } else {
    filter[0] = d->k;
    filter[1] = d->y;
    filter[2] = d->x;
    filter[3] = cpg;
  }
  if (d->out_layout == KL_CONV_NKHW) {
    out[0] = d->n;
    out[1] = d->k;
    out[2] = ho;
    out[3] = wo;
  } else {
    out[0] = d->n;
    out[1] = ho;
    out[2] = wo;
    out[3] = d->k;
  }
}

/* Replaces *v by the builder result (freeing the old view); false on error. */
static bool step(kl_view **v, kl_view *next) {
  kl_view_free(*v);
  *v = next;
  return next != NULL;
}
static bool finish(kl_view **v) { return step(v, kl_view_simplify(*v)); }

static const char *const in_names[2][4] = { { "ni", "ci", "hi", "wi" }, { "ni", "hi", "wi", "ci" } };
static const char *const fil_names[2][4] = { { "k", "c", "y", "x" }, { "k", "y", "x", "c" } };
static const char *const out_names[2][4] = { { "no", "ko", "ho", "wo" }, { "no", "ho", "wo", "ko" } };

bool kl_conv_views_build(const kl_conv2d *d, kl_conv_views *out, kl_view_err *err) {
  memset(out, 0, sizeof *out);
  int64_t ho, wo;
  if (!kl_conv_out_size(d, &ho, &wo, err)) return false;
  int64_t G = d->groups, cpg = d->c / G, kpg = d->k / G;
  int64_t ish[4], fsh[4], osh[4];
  kl_conv_buffer_shapes(d, ish, fsh, osh);
  bool kyxc = d->filter_layout == KL_CONV_KYXC;
  const char *const kord_f[2][3] = { { "c", "y", "x" }, { "y", "x", "c" } };
  const char *const kord_i[2][3] = { { "cg", "y", "x" }, { "y", "x", "cg" } };
  const char *gkm[] = { "g", "gemmK", "gemmM" }, *gkn[] = { "g", "gemmK", "gemmN" }, *gmn[] = { "g", "gemmM", "gemmN" };

  /* A: filter [K, C/G, Y, X] -> [g, gemmK, gemmM] */
  kl_view *a = kl_view_identity(4, fsh, fil_names[d->filter_layout], err);
  bool ok = a != NULL;
  ok = ok && step(&a, kl_view_unmerge(a, "k", 2, (const char *[]){ "g", "m" }, (int64_t[]){ G, kpg }, err));
  ok = ok && step(&a, kl_view_merge(a, "gemmK", 3, kord_f[kyxc], err));
  ok = ok && step(&a, kl_view_merge(a, "gemmM", 1, (const char *[]){ "m" }, err));
  ok = ok && step(&a, kl_view_passthrough(a, 3, gkm, gkm, err));
  ok = ok && finish(&a);

  /* B: input -> pad -> window embed -> [g, gemmK, gemmN] */
  kl_view *b = ok ? kl_view_identity(4, ish, in_names[d->in_layout], err) : NULL;
  ok = ok && b != NULL;
  ok = ok && step(&b, kl_view_unmerge(b, "ci", 2, (const char *[]){ "g", "cg" }, (int64_t[]){ G, cpg }, err));
  ok = ok &&
      step(&b,
           kl_view_pad(b, 2, (const char *[]){ "hi", "wi" },
                       (int64_t[]){ d->pad_top, d->pad_bottom, d->pad_left, d->pad_right }, err));
  ok = ok &&
      step(&b,
           kl_view_embed(b, "hi", 2, (const char *[]){ "y", "ho" }, (int64_t[]){ d->y, ho },
                         (int64_t[]){ d->dil_h, d->stride_h }, err));
  ok = ok &&
      step(&b,
           kl_view_embed(b, "wi", 2, (const char *[]){ "x", "wo" }, (int64_t[]){ d->x, wo },
                         (int64_t[]){ d->dil_w, d->stride_w }, err));
  ok = ok && step(&b, kl_view_merge(b, "gemmK", 3, kord_i[kyxc], err));
  ok = ok && step(&b, kl_view_merge(b, "gemmN", 3, (const char *[]){ "ni", "ho", "wo" }, err));
  ok = ok && step(&b, kl_view_passthrough(b, 3, gkn, gkn, err));
  ok = ok && finish(&b);

  /* C: output -> [g, gemmM, gemmN] */
  kl_view *c = ok ? kl_view_identity(4, osh, out_names[d->out_layout], err) : NULL;
  ok = ok && c != NULL;
  ok = ok && step(&c, kl_view_unmerge(c, "ko", 2, (const char *[]){ "g", "gemmM" }, (int64_t[]){ G, kpg }, err));
  ok = ok && step(&c, kl_view_merge(c, "gemmN", 3, (const char *[]){ "no", "ho", "wo" }, err));
  ok = ok && step(&c, kl_view_passthrough(c, 3, gmn, gmn, err));
  ok = ok && finish(&c);

  if (!ok) {
    kl_view_free(a);
    kl_view_free(b);
    kl_view_free(c);
    return false;
  }
  *out = (kl_conv_views){ .filter = a,
                          .input = b,
                          .output = c,
                          .g = G,
                          .gemm_k = cpg * d->y * d->x,
                          .gemm_m = kpg,
                          .gemm_n = d->n * ho * wo,
                          .ho = ho,
                          .wo = wo };
  return true;
}

void kl_conv_views_free(kl_conv_views *cv) {
  if (!cv) return;
  kl_view_free(cv->filter);
  kl_view_free(cv->input);
  kl_view_free(cv->output);
  memset(cv, 0, sizeof *cv);
}
