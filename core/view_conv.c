/* view_conv.c — implicit-GEMM views of an N-D convolution (see view_conv.h). */
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

bool kl_conv_nd_out_size(const kl_conv_desc *d, int64_t *out, kl_view_err *err) {
  const int64_t lim = (int64_t)1 << 30;
  int sp = d->spatial;
  if (sp < 1 || sp > KL_CONV_MAX_SPATIAL) return bad(err, "the spatial rank must be 1, 2 or 3");
  int64_t v[4 + 4 * KL_CONV_MAX_SPATIAL] = { d->n, d->c, d->k, d->groups };
  int nv = 4;
  for (int i = 0; i < sp; i++) v[nv++] = d->in[i], v[nv++] = d->win[i], v[nv++] = d->stride[i], v[nv++] = d->dil[i];
  for (int i = 0; i < nv; i++)
    if (v[i] < 1 || v[i] > lim) return bad(err, "sizes, groups, strides and dilations must be in [1, 2^30]");
  for (int i = 0; i < 2 * sp; i++)
    if (d->pad[i] < 0 || d->pad[i] > lim) return bad(err, "padding must be in [0, 2^30]");
  if (d->c % d->groups || d->k % d->groups) return bad(err, "groups must divide the input and output channels");
  for (int i = 0; i < sp; i++) {
    int64_t e = d->in[i] + d->pad[2 * i] + d->pad[2 * i + 1] - d->dil[i] * (d->win[i] - 1) - 1;
    if (e < 0) return bad(err, "the dilated filter is larger than the padded input");
    out[i] = e / d->stride[i] + 1;
  }
  return true;
}

/* [a, b, s...] or, channels last, [a, s..., b] */
static void layout(int sp, bool last, int64_t a, int64_t b, const int64_t *s, int64_t *o) {
  o[0] = a;
  o[last ? sp + 1 : 1] = b;
  for (int i = 0; i < sp; i++) o[(last ? 1 : 2) + i] = s[i];
}

void kl_conv_nd_buffer_shapes(const kl_conv_desc *d, int64_t *in, int64_t *filter, int64_t *out) {
  int64_t os[KL_CONV_MAX_SPATIAL] = { 0, 0, 0 }, cpg = d->groups > 0 ? d->c / d->groups : d->c;
  int sp = d->spatial < 1 ? 1 : d->spatial > KL_CONV_MAX_SPATIAL ? KL_CONV_MAX_SPATIAL : d->spatial;
  kl_conv_desc e = *d;
  e.spatial = sp;
  kl_conv_nd_out_size(&e, os, NULL);
  layout(sp, d->in_last, d->n, d->c, d->in, in);
  layout(sp, d->filter_last, d->k, cpg, d->win, filter);
  layout(sp, d->out_last, d->n, d->k, os, out);
}

/* Replaces *v by the builder result (freeing the old view); false on error. */
static bool step(kl_view **v, kl_view *next) {
  kl_view_free(*v);
  *v = next;
  return next != NULL;
}
static bool finish(kl_view **v) { return step(v, kl_view_simplify(*v)); }

/* the names of one buffer's dims in its layout: batch-like a, channel-like b, spatial s[3 - sp ..] */
static void names(int sp, bool last, const char *a, const char *b, const char *const *s, const char **o) {
  o[0] = a;
  o[last ? sp + 1 : 1] = b;
  for (int i = 0; i < sp; i++) o[(last ? 1 : 2) + i] = s[KL_CONV_MAX_SPATIAL - sp + i];
}

bool kl_conv_nd_views_build(const kl_conv_desc *d, kl_conv_views *out, kl_view_err *err) {
  memset(out, 0, sizeof *out);
  int64_t os[KL_CONV_MAX_SPATIAL];
  if (!kl_conv_nd_out_size(d, os, err)) return false;
  int sp = d->spatial, r = sp + 2, base = KL_CONV_MAX_SPATIAL - sp;
  int64_t G = d->groups, cpg = d->c / G, kpg = d->k / G;
  int64_t ish[KL_CONV_MAX_SPATIAL + 2], fsh[KL_CONV_MAX_SPATIAL + 2], osh[KL_CONV_MAX_SPATIAL + 2];
  kl_conv_nd_buffer_shapes(d, ish, fsh, osh);
  static const char *const sin[] = { "di", "hi", "wi" }, *const swin[] = { "z", "y", "x" },
                           *const sout[] = { "do", "ho", "wo" };
  const char *in_n[KL_CONV_MAX_SPATIAL + 2], *fil_n[KL_CONV_MAX_SPATIAL + 2], *out_n[KL_CONV_MAX_SPATIAL + 2];
  names(sp, d->in_last, "ni", "ci", sin, in_n);
  names(sp, d->filter_last, "k", "c", swin, fil_n);
  names(sp, d->out_last, "no", "ko", sout, out_n);
  /* gemmK's order: the filter's memory order of (c, window...) */
  const char *kord_f[KL_CONV_MAX_SPATIAL + 1], *kord_i[KL_CONV_MAX_SPATIAL + 1];
  bool kl = d->filter_last || d->k_last;
  for (int i = 0; i < sp; i++) kord_f[(kl ? 0 : 1) + i] = kord_i[(kl ? 0 : 1) + i] = swin[base + i];
  kord_f[kl ? sp : 0] = "c";
  kord_i[kl ? sp : 0] = "cg";
  const char *nord_i[KL_CONV_MAX_SPATIAL + 1] = { "ni" }, *nord_o[KL_CONV_MAX_SPATIAL + 1] = { "no" };
  for (int i = 0; i < sp; i++) nord_i[1 + i] = nord_o[1 + i] = sout[base + i];
  const char *gkm[] = { "g", "gemmK", "gemmM" }, *gkn[] = { "g", "gemmK", "gemmN" }, *gmn[] = { "g", "gemmM", "gemmN" };

  /* A: filter [K, C/G, W...] -> [g, gemmK, gemmM] */
  kl_view *a = kl_view_identity(r, fsh, fil_n, err);
  bool ok = a != NULL;
  ok = ok && step(&a, kl_view_unmerge(a, "k", 2, (const char *[]){ "g", "m" }, (int64_t[]){ G, kpg }, err));
  ok = ok && step(&a, kl_view_merge(a, "gemmK", sp + 1, kord_f, err));
  ok = ok && step(&a, kl_view_merge(a, "gemmM", 1, (const char *[]){ "m" }, err));
  ok = ok && step(&a, kl_view_passthrough(a, 3, gkm, gkm, err));
  ok = ok && finish(&a);

  /* B: input -> pad -> window embed per spatial dim -> [g, gemmK, gemmN] */
  kl_view *b = ok ? kl_view_identity(r, ish, in_n, err) : NULL;
  ok = ok && b != NULL;
  ok = ok && step(&b, kl_view_unmerge(b, "ci", 2, (const char *[]){ "g", "cg" }, (int64_t[]){ G, cpg }, err));
  ok = ok && step(&b, kl_view_pad(b, sp, sin + base, d->pad, err));
  for (int i = 0; i < sp && ok; i++)
    ok = step(&b,
              kl_view_embed(b, sin[base + i], 2, (const char *[]){ swin[base + i], sout[base + i] },
                            (int64_t[]){ d->win[i], os[i] }, (int64_t[]){ d->dil[i], d->stride[i] }, err));
  ok = ok && step(&b, kl_view_merge(b, "gemmK", sp + 1, kord_i, err));
  ok = ok && step(&b, kl_view_merge(b, "gemmN", sp + 1, nord_i, err));
  ok = ok && step(&b, kl_view_passthrough(b, 3, gkn, gkn, err));
  ok = ok && finish(&b);

  /* C: output -> [g, gemmM, gemmN] */
  kl_view *c = ok ? kl_view_identity(r, osh, out_n, err) : NULL;
  ok = ok && c != NULL;
  ok = ok && step(&c, kl_view_unmerge(c, "ko", 2, (const char *[]){ "g", "gemmM" }, (int64_t[]){ G, kpg }, err));
  ok = ok && step(&c, kl_view_merge(c, "gemmN", sp + 1, nord_o, err));
  ok = ok && step(&c, kl_view_passthrough(c, 3, gmn, gmn, err));
  ok = ok && finish(&c);

  if (!ok) {
    kl_view_free(a);
    kl_view_free(b);
    kl_view_free(c);
    return false;
  }
  int64_t wprod = 1, oprod = 1;
  for (int i = 0; i < sp; i++) wprod *= d->win[i], oprod *= os[i];
  *out = (kl_conv_views){ .filter = a,
                          .input = b,
                          .output = c,
                          .g = G,
                          .gemm_k = cpg * wprod,
                          .gemm_m = kpg,
                          .gemm_n = d->n * oprod,
                          .ho = sp >= 2 ? os[sp - 2] : 1,
                          .wo = os[sp - 1] };
  for (int i = 0; i < sp; i++) out->out[i] = os[i];
  return true;
}

kl_conv_desc kl_conv2d_desc(const kl_conv2d *d) {
  return (kl_conv_desc){ .spatial = 2,
                         .n = d->n,
                         .c = d->c,
                         .k = d->k,
                         .groups = d->groups,
                         .in = { d->hi, d->wi },
                         .win = { d->y, d->x },
                         .stride = { d->stride_h, d->stride_w },
                         .dil = { d->dil_h, d->dil_w },
                         .pad = { d->pad_top, d->pad_bottom, d->pad_left, d->pad_right },
                         .in_last = d->in_layout == KL_CONV_NHWC,
                         .filter_last = d->filter_layout == KL_CONV_KYXC,
                         .out_last = d->out_layout == KL_CONV_NHWK };
}

static bool known_layouts(const kl_conv2d *d, kl_view_err *err) {
  if ((unsigned)d->in_layout > KL_CONV_NHWC || (unsigned)d->filter_layout > KL_CONV_KYXC ||
      (unsigned)d->out_layout > KL_CONV_NHWK)
    return bad(err, "unknown layout");
  return true;
}

bool kl_conv_out_size(const kl_conv2d *d, int64_t *ho, int64_t *wo, kl_view_err *err) {
  kl_conv_desc e = kl_conv2d_desc(d);
  int64_t o[KL_CONV_MAX_SPATIAL];
  if (!kl_conv_nd_out_size(&e, o, err) || !known_layouts(d, err)) return false;
  *ho = o[0];
  *wo = o[1];
  return true;
}

void kl_conv_buffer_shapes(const kl_conv2d *d, int64_t in[4], int64_t filter[4], int64_t out[4]) {
  kl_conv_desc e = kl_conv2d_desc(d);
  kl_conv_nd_buffer_shapes(&e, in, filter, out);
}

bool kl_conv_views_build(const kl_conv2d *d, kl_conv_views *out, kl_view_err *err) {
  memset(out, 0, sizeof *out);
  if (!known_layouts(d, err)) return false;
  kl_conv_desc e = kl_conv2d_desc(d);
  return kl_conv_nd_views_build(&e, out, err);
}

void kl_conv_views_free(kl_conv_views *cv) {
  if (!cv) return;
  kl_view_free(cv->filter);
  kl_view_free(cv->input);
  kl_view_free(cv->output);
  memset(cv, 0, sizeof *cv);
}
