/* test_view_conv.c — implicit-GEMM conv views checked by brute force against direct
 * convolution indexing for random configurations (strides, padding, dilation, groups,
 * NCHW/NHWC inputs, KCYX/KYXC filters, NKHW/NHWK outputs): for every gemm coordinate the
 * buffer coordinate and validity of each view must match; the GEMM through the views
 * must equal a direct convolution on random integers; bounds and vectorization claims on
 * the views are checked too. */
#include "core/view_conv.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_REPORT_LIMIT 29
#include "check.h"

static char cfg_note[32] = "config 0"; /* the configuration being checked (check_note) */
static uint64_t rng_state = 0x243f6a8885a308d3ull;
static uint64_t rnd64(void) { return xorshift64(&rng_state); }
static int64_t rnd(int64_t lo, int64_t hi) { return lo + (int64_t)(rnd64() % (uint64_t)(hi - lo + 1)); }

static void in_coord(const kl_conv2d *d, int64_t n, int64_t c, int64_t h, int64_t w, int64_t *o) {
  if (d->in_layout == KL_CONV_NCHW) {
    o[0] = n;
    o[1] = c;
    o[2] = h;
    o[3] = w;
  } else {
    o[0] = n;
    o[1] = h;
    o[2] = w;
    o[3] = c;
  }
}
static void fil_coord(const kl_conv2d *d, int64_t k, int64_t c, int64_t y, int64_t x, int64_t *o) {
  if (d->filter_layout == KL_CONV_KCYX) {
    o[0] = k;
    o[1] = c;
    o[2] = y;
    o[3] = x;
  } else {
    o[0] = k;
    o[1] = y;
    o[2] = x;
    o[3] = c;
  }
}
static void out_coord(const kl_conv2d *d, int64_t n, int64_t k, int64_t h, int64_t w, int64_t *o) {
  if (d->out_layout == KL_CONV_NKHW) {
    o[0] = n;
    o[1] = k;
    o[2] = h;
    o[3] = w;
  } else {
    o[0] = n;
    o[1] = h;
    o[2] = w;
    o[3] = k;
  }
}
static int64_t lin(const int64_t *shape, const int64_t *c) {
  return ((c[0] * shape[1] + c[1]) * shape[2] + c[2]) * shape[3] + c[3];
}
/* gemmK index -> (c, y, x), following the filter layout (view_conv.h). */
static void split_k(const kl_conv2d *d, int64_t kk, int64_t *c, int64_t *y, int64_t *x) {
  int64_t cg = d->c / d->groups;
  if (d->filter_layout == KL_CONV_KCYX) {
    *c = kk / (d->y * d->x);
    *y = kk / d->x % d->y;
    *x = kk % d->x;
  } else {
    *y = kk / (d->x * cg);
    *x = kk / cg % d->x;
    *c = kk % cg;
  }
}

static bool brute_vec_ok(const kl_view *v, int dim, int64_t L) {
  int r = kl_view_rank(v);
  int64_t u[KL_VIEW_MAX_DIMS] = { 0 };
  for (;;) {
    if (u[dim] % L == 0) {
      bool v0;
      int64_t a0 = kl_view_eval_addr(v, u, NULL, &v0), save = u[dim];
      for (int64_t k = 1; k < L; k++) {
        bool vk;
        u[dim] = save + k;
        int64_t ak = kl_view_eval_addr(v, u, NULL, &vk);
        if (vk != v0 || (v0 && ak != a0 + k)) {
          u[dim] = save;
          return false;
        }
      }
      u[dim] = save;
      if (v0 && a0 % L) return false;
    }
    int d = r - 1;
    for (; d >= 0; d--) {
      if (++u[d] < kl_view_size(v, d)) break;
      u[d] = 0;
    }
    if (d < 0) return true;
  }
}

static long coords_checked, macs_checked, vec_claims, vec_claims_gt1;

static void check_config(const kl_conv2d *d) {
  kl_conv_views cv;
  kl_view_err err;
  bool ok = kl_conv_views_build(d, &cv, &err);
  CHECK(ok);
  if (!ok) {
    fprintf(stderr, "  %s\n", err.msg);
    return;
  }
  int64_t G = d->groups, cg = d->c / G, mg = d->k / G, ho = cv.ho, wo = cv.wo;
  int64_t ish[4], fsh[4], osh[4];
  kl_conv_buffer_shapes(d, ish, fsh, osh);
  CHECK(cv.g == G && cv.gemm_k == cg * d->y * d->x && cv.gemm_m == mg && cv.gemm_n == d->n * ho * wo);
  const kl_view *views[3] = { cv.filter, cv.input, cv.output };
  const int64_t *shapes[3] = { fsh, ish, osh };
  const int64_t tops[3][3] = { { G, cv.gemm_k, mg }, { G, cv.gemm_k, cv.gemm_n }, { G, mg, cv.gemm_n } };
  const char *names[3][3] = { { "g", "gemmK", "gemmM" }, { "g", "gemmK", "gemmN" }, { "g", "gemmM", "gemmN" } };
  for (int i = 0; i < 3; i++) {
    CHECK(kl_view_rank(views[i]) == 3 && kl_view_lower_rank(views[i]) == 4);
    for (int j = 0; j < 3; j++)
      CHECK(kl_view_size(views[i], j) == tops[i][j] && !strcmp(kl_view_name(views[i], j), names[i][j]));
    for (int j = 0; j < 4; j++) CHECK(kl_view_lower_size(views[i], j) == shapes[i][j]);
  }
  int64_t u[3], lo[4], want[4];
  bool mism = false, any_invalid = false;
  /* A: filter */
  for (u[0] = 0; u[0] < G; u[0]++)
    for (u[1] = 0; u[1] < cv.gemm_k; u[1]++)
      for (u[2] = 0; u[2] < mg; u[2]++) {
        int64_t c, y, x;
        split_k(d, u[1], &c, &y, &x);
        fil_coord(d, u[0] * mg + u[2], c, y, x, want);
        bool valid = kl_view_eval(cv.filter, u, lo);
        if (!valid || memcmp(lo, want, sizeof want)) mism = true;
        coords_checked++;
      }
  CHECK(!mism);
  /* B: input, with padding validity */
  mism = false;
  for (u[0] = 0; u[0] < G; u[0]++)
    for (u[1] = 0; u[1] < cv.gemm_k; u[1]++)
      for (u[2] = 0; u[2] < cv.gemm_n; u[2]++) {
        int64_t c, y, x, n = u[2] / (ho * wo), oh = u[2] / wo % ho, ow = u[2] % wo;
        split_k(d, u[1], &c, &y, &x);
        int64_t h = oh * d->stride_h + y * d->dil_h - d->pad_top, w = ow * d->stride_w + x * d->dil_w - d->pad_left;
        bool want_valid = h >= 0 && h < d->hi && w >= 0 && w < d->wi;
        in_coord(d, n, u[0] * cg + c, h, w, want);
        bool valid = kl_view_eval(cv.input, u, lo);
        if (valid != want_valid || (valid && memcmp(lo, want, sizeof want))) mism = true;
        any_invalid |= !want_valid;
        coords_checked++;
      }
  CHECK(!mism);
  /* C: output */
  mism = false;
  for (u[0] = 0; u[0] < G; u[0]++)
    for (u[1] = 0; u[1] < mg; u[1]++)
      for (u[2] = 0; u[2] < cv.gemm_n; u[2]++) {
        int64_t n = u[2] / (ho * wo), oh = u[2] / wo % ho, ow = u[2] % wo;
        out_coord(d, n, u[0] * mg + u[1], oh, ow, want);
        bool valid = kl_view_eval(cv.output, u, lo);
        if (!valid || memcmp(lo, want, sizeof want)) mism = true;
        coords_checked++;
      }
  CHECK(!mism);
  /* bounds: the input view may be invalid exactly when padding is reachable; the
   * others never */
  uint32_t inv = kl_view_invalid_dims(cv.input);
  CHECK(kl_view_invalid_dims(cv.filter) == 0 && kl_view_invalid_dims(cv.output) == 0);
  CHECK(any_invalid ? (inv & 6u) != 0 : true);
  CHECK(d->pad_top + d->pad_bottom + d->pad_left + d->pad_right == 0 ? inv == 0 : true);
  CHECK((inv & 1u) == 0); /* the group dim never decides validity */

  /* GEMM through the views == direct convolution (random small integers) */
  int64_t nin = ish[0] * ish[1] * ish[2] * ish[3], nfil = fsh[0] * fsh[1] * fsh[2] * fsh[3],
          nout = osh[0] * osh[1] * osh[2] * osh[3];
  int64_t *in = malloc(nin * sizeof *in), *fil = malloc(nfil * sizeof *fil), *ref = calloc(nout, sizeof *ref),
          *got = calloc(nout, sizeof *got);
  for (int64_t i = 0; i < nin; i++) in[i] = rnd(-9, 9);
  for (int64_t i = 0; i < nfil; i++) fil[i] = rnd(-9, 9);
  int64_t ci[4], cf[4], co[4];
  for (int64_t n = 0; n < d->n; n++)
    for (int64_t k = 0; k < d->k; k++)
      for (int64_t oh = 0; oh < ho; oh++)
        for (int64_t ow = 0; ow < wo; ow++) {
          int64_t g = k / mg, acc = 0;
          for (int64_t c = 0; c < cg; c++)
            for (int64_t y = 0; y < d->y; y++)
              for (int64_t x = 0; x < d->x; x++) {
                int64_t h = oh * d->stride_h + y * d->dil_h - d->pad_top,
                        w = ow * d->stride_w + x * d->dil_w - d->pad_left;
                if (h < 0 || h >= d->hi || w < 0 || w >= d->wi) continue;
                in_coord(d, n, g * cg + c, h, w, ci);
                fil_coord(d, k, c, y, x, cf);
                acc += in[lin(ish, ci)] * fil[lin(fsh, cf)];
              }
          out_coord(d, n, k, oh, ow, co);
          ref[lin(osh, co)] = acc;
        }
  int64_t ua[3], ub[3], uc[3];
  for (int64_t g = 0; g < G; g++)
    for (int64_t m = 0; m < mg; m++)
      for (int64_t nn = 0; nn < cv.gemm_n; nn++) {
        int64_t acc = 0;
        for (int64_t kk = 0; kk < cv.gemm_k; kk++) {
          ua[0] = g;
          ua[1] = kk;
          ua[2] = m;
          ub[0] = g;
          ub[1] = kk;
          ub[2] = nn;
          bool va = kl_view_eval(cv.filter, ua, cf), vb = kl_view_eval(cv.input, ub, ci);
          if (va && vb) acc += fil[lin(fsh, cf)] * in[lin(ish, ci)]; /* invalid reads give 0 */
          macs_checked++;
        }
        uc[0] = g;
        uc[1] = m;
        uc[2] = nn;
        if (kl_view_eval(cv.output, uc, co)) got[lin(osh, co)] = acc;
      }
  CHECK(memcmp(ref, got, nout * sizeof *ref) == 0);
  free(in);
  free(fil);
  free(ref);
  free(got);

  /* vectorization claims on the three views: sound by brute force; and the expected
   * contiguity: NHWC input + KYXC filter along gemmK when C/G is a multiple of 4 */
  for (int i = 0; i < 3; i++)
    for (int dim = 0; dim < 3; dim++) {
      int64_t claim = kl_view_max_vectorization(views[i], dim, NULL, 32);
      vec_claims++;
      if (claim > 1) vec_claims_gt1++;
      CHECK(claim >= 1 && claim <= 4 && brute_vec_ok(views[i], dim, claim));
    }
  if (d->filter_layout == KL_CONV_KYXC && cg % 4 == 0) CHECK(kl_view_max_vectorization(cv.filter, 1, NULL, 32) == 4);
  if (d->filter_layout == KL_CONV_KYXC && d->in_layout == KL_CONV_NHWC && cg % 4 == 0)
    CHECK(kl_view_max_vectorization(cv.input, 1, NULL, 32) == 4);
  if (d->out_layout == KL_CONV_NHWK && mg % 4 == 0) CHECK(kl_view_max_vectorization(cv.output, 1, NULL, 32) == 4);
  if (d->out_layout == KL_CONV_NKHW && (ho * wo) % 4 == 0)
    CHECK(kl_view_max_vectorization(cv.output, 2, NULL, 32) == 4);
  kl_conv_views_free(&cv);
}

int main(void) {
  check_note = cfg_note;
  int configs = 0, rejected = 0, counts[2][2][2] = { { { 0 } } };
  long padded = 0, grouped = 0, strided = 0, dilated = 0;
  while (configs < 240) {
    kl_conv2d d = {
      .n = rnd(1, 2),
      .groups = rnd(1, 3),
      .hi = rnd(1, 8),
      .wi = rnd(1, 8),
      .y = rnd(1, 3),
      .x = rnd(1, 3),
      .stride_h = rnd(1, 3),
      .stride_w = rnd(1, 3),
      .dil_h = rnd(1, 2),
      .dil_w = rnd(1, 2),
      .pad_top = rnd(0, 2),
      .pad_bottom = rnd(0, 2),
      .pad_left = rnd(0, 2),
      .pad_right = rnd(0, 2),
      .in_layout = (kl_conv_in_layout)rnd(0, 1),
      .filter_layout = (kl_conv_filter_layout)rnd(0, 1),
      .out_layout = (kl_conv_out_layout)rnd(0, 1),
    };
    static const int64_t cpg[] = { 1, 2, 3, 4, 8 };
    d.c = d.groups * cpg[rnd(0, 4)];
    d.k = d.groups * cpg[rnd(0, 4)];
    if (rnd(0, 3) == 0) d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 0;
    int64_t ho, wo;
    kl_view_err err;
    if (!kl_conv_out_size(&d, &ho, &wo, &err)) { /* filter larger than the padded input */
      CHECK(strstr(err.msg, "conv:") != NULL);
      kl_conv_views cv;
      CHECK(!kl_conv_views_build(&d, &cv, NULL) && cv.input == NULL);
      rejected++;
      continue;
    }
    snprintf(cfg_note, sizeof cfg_note, "config %d", configs);
    check_config(&d);
    counts[d.in_layout][d.filter_layout][d.out_layout]++;
    padded += d.pad_top + d.pad_bottom + d.pad_left + d.pad_right > 0;
    grouped += d.groups > 1;
    strided += d.stride_h > 1 || d.stride_w > 1;
    dilated += d.dil_h > 1 || d.dil_w > 1;
    configs++;
  }
  /* invalid descriptions are errors, not crashes */
  kl_conv2d bad = { .n = 1,
                    .c = 3,
                    .hi = 4,
                    .wi = 4,
                    .k = 4,
                    .y = 1,
                    .x = 1,
                    .groups = 2,
                    .stride_h = 1,
                    .stride_w = 1,
                    .dil_h = 1,
                    .dil_w = 1 };
  kl_conv_views cv;
  kl_view_err err;
  CHECK(!kl_conv_views_build(&bad, &cv, &err) && strstr(err.msg, "groups"));
  bad.groups = 1;
  bad.stride_h = 0;
  CHECK(!kl_conv_views_build(&bad, &cv, &err) && strstr(err.msg, "strides"));
  printf("conv views: %d configurations (%d rejected as empty), %ld padded, %ld grouped, %ld strided, %ld dilated\n",
         configs, rejected, padded, grouped, strided, dilated);
  printf("conv views: layouts in/filter/out:");
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++)
      for (int c = 0; c < 2; c++)
        printf(" %s/%s/%s=%d", a ? "NHWC" : "NCHW", b ? "KYXC" : "KCYX", c ? "NHWK" : "NKHW", counts[a][b][c]);
  printf("\nconv views: %ld gemm coordinates compared, %ld gemm MACs through the views, %ld vector claims (%ld > 1) "
         "brute-checked\n",
         coords_checked, macs_checked, vec_claims, vec_claims_gt1);
  return check_summary("test_view_conv");
}
