/* rock_tma_im2col.c — the im2col TMA operand: the conv geometry found on the view, checked
 * point for point, and the boxes' coordinates (rock_tma_im2col.h). */
#include "passes/rock_tma_im2col.h"
#include "core/dialect_rock.h"
#include "passes/perf_config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the NHWC memory order of the argument: C (stride 1), W, H, N, each stride nested in the next;
 * the view's G slices of Ck = C / G channels each (split-K: G > 1) */
typedef struct {
  int64_t C, W, H, N, sW, sH, sN, G, Ck;
} nhwc;
/* the conv geometry (rock_tma_im2col.h) */
typedef struct {
  int64_t T, S, dh, dw, ph, pw, sh, sw, Wo, HoWo, Ed;
} geom;

typedef struct {
  const kl_view *cv;
  const int64_t *st;
  nhwc x;
} probe;

/* the element (n, h, w, c) at (k, d) of the view's slice g = 0; false where it is padding */
static bool pt(const probe *p, int64_t k, int64_t d, int64_t *n, int64_t *h, int64_t *w, int64_t *c) {
  int64_t up[3] = { 0, k, d };
  bool valid = true;
  int64_t a = kl_view_eval_addr(p->cv, up, p->st, &valid);
  if (!valid || a < 0) return false;
  *n = a / p->x.sN, a %= p->x.sN;
  *h = a / p->x.sH, a %= p->x.sH;
  *w = a / p->x.sW, *c = a % p->x.sW;
  return true;
}
/* the model's address of (gi, k, d), -1 for padding */
static int64_t model(const nhwc *x, const geom *g, int64_t gi, int64_t k, int64_t d) {
  if (k >= g->T * x->Ck || d >= g->Ed) return -1;
  int64_t t = k / x->Ck, c = gi * x->Ck + k % x->Ck, r = t / g->S, s = t % g->S;
  int64_t n = d / g->HoWo, q = d % g->HoWo, ho = q / g->Wo, wo = q % g->Wo;
  int64_t h = ho * g->sh - g->ph + r * g->dh, w = wo * g->sw - g->pw + s * g->dw;
  if (h < 0 || h >= x->H || w < 0 || w >= x->W) return -1;
  return n * x->sN + h * x->sH + w * x->sW + c;
}
static bool same(const probe *p, const geom *g, int64_t gi, int64_t k, int64_t d) {
  int64_t up[3] = { gi, k, d };
  bool valid = true;
  int64_t a = kl_view_eval_addr(p->cv, up, p->st, &valid);
  return (valid ? a : -1) == model(&p->x, g, gi, k, d);
}

/* the window origin of pixel d (the position of tap 0): from its first valid tap; false when
 * no tap of d is valid */
static bool origin(const probe *p, const geom *g, const int64_t (*off)[2], int64_t d, int64_t *n, int64_t *h,
                   int64_t *w) {
  for (int64_t t = 0; t < g->T; t++) {
    int64_t c;
    if (pt(p, t * p->x.Ck, d, n, h, w, &c)) {
      *h -= off[t][0], *w -= off[t][1];
      return true;
    }
  }
  return false;
}

#define MAX_TAPS 1024
#define MAX_SCAN (1 << 16)

static const char *derive(const probe *p, int64_t Kd, int64_t Dd, geom *g) {
  const nhwc *x = &p->x;
  int64_t Tmax = Kd / x->Ck;
  if (Tmax < 1 || Tmax > MAX_TAPS) return "K is not whole channel runs of at most 1024 filter taps";
  /* T: the taps that are valid anywhere in the first pixels; d*: the first pixel seeing all */
  int64_t T = 0, ds = -1, lim = Dd < 4096 ? Dd : 4096, n, h, w, c;
  for (int64_t d = 0; d < lim; d++)
    for (int64_t t = Tmax - 1; t >= T; t--)
      if (pt(p, t * x->Ck, d, &n, &h, &w, &c)) {
        T = t + 1;
        break;
      }
  for (int64_t d = 0; d < lim && ds < 0 && T > 0; d++) {
    bool all = true;
    for (int64_t t = 0; t < T && all; t++) all = pt(p, t * x->Ck, d, &n, &h, &w, &c);
    if (all) ds = d;
  }
  if (ds < 0) return "no output pixel among the first 4096 sees every filter tap";
  if (T * x->Ck != Kd) return "K padded past the filter taps (they would load pixels, not zeros)";
  g->T = T;
  int64_t(*off)[2] = malloc(sizeof *off * (size_t)T), n0, h0, w0;
  pt(p, 0, ds, &n0, &h0, &w0, &c);
  for (int64_t t = 0; t < T; t++) {
    pt(p, t * x->Ck, ds, &n, &h, &w, &c);
    off[t][0] = h - h0, off[t][1] = w - w0;
  }
  g->S = T;
  for (int64_t t = 1; t < T; t++)
    if (off[t][0] != 0) {
      g->S = t;
      break;
    }
  g->dw = g->S > 1 ? off[1][1] : 1;
  g->dh = T > g->S ? off[g->S][0] : 1;
  const char *why = NULL;
  if (T % g->S || g->dw < 1 || g->dh < 1) why = "the filter taps are not an R x S window";
  /* the origins: padding from pixel 0, the row's and the image's length, the strides */
  int64_t on, oh, ow;
  if (!why && !origin(p, g, (const int64_t(*)[2])off, 0, &n0, &h0, &w0)) why = "output pixel 0 sees no input pixel";
  g->ph = -h0, g->pw = -w0, g->Wo = 0, g->HoWo = 0;
  int64_t end = Dd < MAX_SCAN ? Dd : MAX_SCAN, d = 1;
  for (; !why && d < end; d++) {
    if (!origin(p, g, (const int64_t(*)[2])off, d, &on, &oh, &ow)) break; /* past the images */
    if (!g->Wo && (oh != h0 || on != n0)) g->Wo = d;
    if (on != n0) break;
  }
  if (!why) {
    g->HoWo = d;
    if (!g->Wo) g->Wo = d;
    if (g->HoWo % g->Wo) why = "the output pixels are not whole rows";
  }
  if (!why) {
    g->sw = g->sh = 1;
    if (g->Wo > 1 && origin(p, g, (const int64_t(*)[2])off, 1, &on, &oh, &ow)) g->sw = ow - w0;
    if (g->HoWo > g->Wo && origin(p, g, (const int64_t(*)[2])off, g->Wo, &on, &oh, &ow)) g->sh = oh - h0;
    g->Ed = x->N * g->HoWo;
    if (g->sw < 1 || g->sh < 1) why = "the window strides are not positive";
    if (g->Ed > Dd) why = "fewer output pixels than images x pixels per image";
  }
  free(off);
  return why;
}

/* the model against the view (rock_tma_im2col.h), in slices 0 and G-1 (and random ones) */
static bool check(const probe *p, const geom *g, int64_t Kd, int64_t Dd) {
  int64_t ds[4] = { 0, g->Wo + 1 < Dd ? g->Wo + 1 : 0, g->Ed - 1, g->Ed < Dd ? g->Ed : 0 }, G = p->x.G;
  for (int64_t gi = 0; gi<G; gi += G> 1 ? G - 1 : 1)
    for (int i = 0; i < 4; i++)
      for (int64_t k = 0; k < Kd; k++)
        if (!same(p, g, gi, k, ds[i])) return false;
  int64_t dend = 2 * g->HoWo + 1 < Dd ? 2 * g->HoWo + 1 : Dd;
  if (dend > MAX_SCAN) dend = MAX_SCAN;
  int64_t ks[2] = { 0, (g->T / 2) * p->x.Ck + p->x.Ck - 1 };
  for (int i = 0; i < 2; i++)
    for (int64_t d = 0; d < dend; d++)
      if (!same(p, g, G - 1, ks[i], d)) return false;
  uint64_t s = 0x9e3779b97f4a7c15ull ^ (uint64_t)(Kd * 131 + Dd);
  for (int i = 0; i < 1024; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    int64_t k = (int64_t)((s >> 33) % (uint64_t)Kd), gi = (int64_t)((s >> 13) % (uint64_t)G);
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    int64_t d = (int64_t)((s >> 33) % (uint64_t)Dd);
    if (!same(p, g, gi, k, d)) return false;
  }
  return true;
}

bool kl_tma_im2col_operand(kl_value *v, bool prologue, int64_t DB, int64_t panel, kl_tma_map *m, char *why, size_t n) {
  const kl_type *t = v->type;
  kl_value *raw = NULL;
  kl_value *u = NULL;
  kl_view *cv = kl_tma_operand_view(v, prologue, &u, &raw, why, n);
  if (!cv) return false;
  if (DB > 256 || panel < 8) {
    snprintf(why, n, "tile of %lld pixels (at most 256) or K panel of %lld", (long long)DB, (long long)panel);
    kl_view_free(cv);
    return false;
  }
  const kl_type *rt = raw->type;
  probe p = { cv, rt->strides, { 0 } };
  /* the argument's memory order: C (stride 1), W, H, N, nested */
  int ord[4] = { 0, 1, 2, 3 };
  bool ok = rt->rank == 4;
  for (int i = 0; ok && i < 4; i++)
    for (int j = i + 1; j < 4; j++)
      if (rt->strides[ord[j]] < rt->strides[ord[i]]) {
        int x = ord[i];
        ord[i] = ord[j], ord[j] = x;
      }
  if (ok) {
    nhwc *x = &p.x;
    x->C = rt->shape[ord[0]], x->W = rt->shape[ord[1]], x->H = rt->shape[ord[2]], x->N = rt->shape[ord[3]];
    x->sW = rt->strides[ord[1]], x->sH = rt->strides[ord[2]], x->sN = rt->strides[ord[3]];
    ok = rt->strides[ord[0]] == 1 && x->sW >= x->C && x->sH >= x->W * x->sW && x->sN >= x->H * x->sH &&
        (x->sW * 2) % 16 == 0 && (x->sH * 2) % 16 == 0 && (x->sN * 2) % 16 == 0;
  }
  if (!ok) {
    kl_view_free(cv);
    snprintf(why, n, "the argument is not 4-D channels-last (NHWC) with 16-byte strides");
    return false;
  }
  p.x.G = t->shape[0], p.x.Ck = p.x.C / p.x.G;
  if (p.x.C % p.x.G || p.x.Ck % panel) {
    kl_view_free(cv);
    snprintf(why, n, "%lld channels in %lld slices are not whole K panels of %lld", (long long)p.x.C, (long long)p.x.G,
             (long long)panel);
    return false;
  }
  geom g;
  memset(&g, 0, sizeof g);
  const char *fail = derive(&p, t->shape[1], t->shape[2], &g);
  if (!fail && !check(&p, &g, t->shape[1], t->shape[2])) fail = "the view is not an im2col window of the argument";
  kl_view_free(cv);
  if (fail) {
    snprintf(why, n, "im2col: %s", fail);
    return false;
  }
  int64_t R = g.T / g.S, Ho = g.HoWo / g.Wo;
  int64_t lo[2] = { -g.pw, -g.ph },
          up[2] = { (g.Wo - 1) * g.sw - g.pw - (p.x.W - 1), (Ho - 1) * g.sh - g.ph - (p.x.H - 1) };
  for (int i = 0; i < 2; i++)
    if (lo[i] < -128 || lo[i] > 127 || up[i] < -128 || up[i] > 127) {
      snprintf(why, n, "im2col: bounding-box corners %lld, %lld out of the rank-4 range [-128, 127]", (long long)lo[i],
               (long long)up[i]);
      return false;
    }
  if ((g.S - 1) * g.dw > 255 || (R - 1) * g.dh > 255 || g.sw > 8 || g.sh > 8) {
    snprintf(why, n, "im2col: offsets past 255 or traversal strides %lld, %lld past 8", (long long)g.sw,
             (long long)g.sh);
    return false;
  }
  memset(m, 0, sizeof *m);
  m->buf = u;
  m->im2col = true;
  m->rank = 4;
  m->dims[0] = p.x.C, m->dims[1] = p.x.W, m->dims[2] = p.x.H, m->dims[3] = p.x.N;
  m->strides[0] = p.x.sW * 2, m->strides[1] = p.x.sH * 2, m->strides[2] = p.x.sN * 2;
  m->box[0] = panel, m->box[1] = DB, m->box[2] = 1, m->box[3] = 1;
  m->lo[0] = lo[0], m->lo[1] = lo[1], m->up[0] = up[0], m->up[1] = up[1];
  m->es[0] = g.sw, m->es[1] = g.sh;
  m->C = p.x.Ck, m->S = g.S, m->Wo = g.Wo, m->HoWo = g.HoWo;
  m->dil[0] = g.dw, m->dil[1] = g.dh, m->pad[0] = g.pw, m->pad[1] = g.ph;
  return true;
}

int kl_tma_im2col_coords(kl_emitter *e, const kl_tma_map *m, kl_value *g, kl_value *k, kl_value *d, kl_value **out) {
  kl_value *t = kl_emit_divi(e, k, m->C), *q = kl_emit_remi(e, d, m->HoWo);
  out[0] = kl_emit_add(e, kl_emit_muli(e, g, m->C), kl_emit_remi(e, k, m->C));
  out[1] = kl_emit_sub(e, kl_emit_muli(e, kl_emit_remi(e, q, m->Wo), m->es[0]), kl_emit_index(e, m->pad[0]));
  out[2] = kl_emit_sub(e, kl_emit_muli(e, kl_emit_divi(e, q, m->Wo), m->es[1]), kl_emit_index(e, m->pad[1]));
  out[3] = kl_emit_divi(e, d, m->HoWo);
  out[4] = kl_emit_muli(e, kl_emit_remi(e, t, m->S), m->dil[0]);
  out[5] = kl_emit_muli(e, kl_emit_divi(e, t, m->S), m->dil[1]);
  return 6;
}
