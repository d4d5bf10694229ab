/* gemm_raster.c — the grouped raster order of GEMM workgroups (contract in gemm_raster.h). */
#include "passes/gemm_raster.h"
#include "core/view_emit.h"

int64_t kl_gemm_raster_ref(int64_t h, int64_t G, int64_t nM, int64_t nN, int64_t group_m) {
  (void)G;
  if (group_m > nM) group_m = nM;
  if (group_m <= 1 || nN <= 1) return h;
  int64_t per = nM * nN, g = h / per, r = h % per, span = group_m * nN;
  int64_t first = r / span * group_m, w = r % span, width = nM - first < group_m ? nM - first : group_m;
  int64_t m = first + w % width, n = w / width;
  return (g * nM + m) * nN + n;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

int64_t kl_gemm_raster_footprint(int64_t nM, int64_t nN, int64_t a_bytes, int64_t b_bytes, int64_t resident,
                                 int64_t group_m) {
  int64_t W = resident < 1 ? 1 : resident, rows, cols;
  if (group_m > nM) group_m = nM;
  if (group_m <= 1 || nN <= 1) { /* row order */
    rows = min64(nM, cdiv(W, nN));
    cols = min64(W, nN);
  } else {
    int64_t span = group_m * nN; /* the workgroups of one group */
    rows = W <= span ? min64(group_m, W) : min64(nM, group_m * cdiv(W, span));
    cols = min64(nN, cdiv(W, group_m));
  }
  return rows * a_bytes + cols * b_bytes;
}

int64_t kl_gemm_raster_auto(int64_t nM, int64_t nN, int64_t a_bytes, int64_t b_bytes, int64_t resident,
                            int64_t l2_bytes) {
  if (l2_bytes <= 0 || nM <= 1 || nN <= 1) return 0;
  int64_t row = kl_gemm_raster_footprint(nM, nN, a_bytes, b_bytes, resident, 0);
  if (row <= l2_bytes / 2) return 0; /* row order's wave stays in the L2 */
  int64_t best = 0, best_fp = row;
  for (int64_t gm = 2; gm <= nM; gm++) {
    int64_t fp = kl_gemm_raster_footprint(nM, nN, a_bytes, b_bytes, resident, gm);
    if (fp < best_fp) best = gm, best_fp = fp;
  }
  return best_fp * 4 <= row * 3 ? best : 0;
}

static kl_value *select(kl_emitter *e, kl_value *c, kl_value *a, kl_value *b) {
  int64_t x;
  if (kl_emit_const_of(c, &x)) return x ? a : b; /* folds like the other helpers */
  kl_value *o[3] = { c, a, b };
  return kl_op_result(kl_rewriter_create(e->rw, "arith.select", e->loc, 3, o, 1, &a->type, 0, NULL, 0), 0);
}

kl_value *kl_gemm_raster_bid(kl_rewriter *rw, kl_loc loc, kl_value *h, int64_t G, int64_t nM, int64_t nN,
                             int64_t group_m) {
  if (group_m > nM) group_m = nM;
  if (group_m <= 1 || nN <= 1) return h;
  kl_emitter e = { rw, loc };
  int64_t per = nM * nN, span = group_m * nN, full = nM / group_m, last = nM % group_m;
  kl_value *r = G > 1 ? kl_emit_remi(&e, h, per) : h;
  kl_value *grp = kl_emit_divi(&e, r, span), *w = kl_emit_remi(&e, r, span);
  kl_value *first = kl_emit_muli(&e, grp, group_m);
  kl_value *m = kl_emit_add(&e, first, kl_emit_remi(&e, w, group_m)), *n = kl_emit_divi(&e, w, group_m);
  if (last) { /* the partial last group: its own width */
    kl_value *in_last = kl_emit_cmp(&e, "ge", grp, kl_emit_index(&e, full));
    m = select(&e, in_last, kl_emit_add(&e, first, kl_emit_remi(&e, w, last)), m);
    n = select(&e, in_last, kl_emit_divi(&e, w, last), n);
  }
  kl_value *bid = kl_emit_add(&e, kl_emit_muli(&e, m, nN), n);
  if (G > 1) bid = kl_emit_add(&e, kl_emit_muli(&e, kl_emit_divi(&e, h, per), per), bid);
  return bid;
}

/* ---- clusters (gemm_raster.h: kl_gemm_cluster_bid) ---- */
int64_t kl_gemm_cluster_grid(int64_t G, int64_t nM, int64_t nN, int64_t C, bool along_m) {
  return along_m ? G * cdiv(nM, C) * nN * C : G * nM * cdiv(nN, C) * C;
}
int64_t kl_gemm_cluster_ref(int64_t h, int64_t G, int64_t nM, int64_t nN, int64_t group_m, int64_t C, bool along_m) {
  int64_t q = h / C, r = h % C, cm = along_m ? cdiv(nM, C) : nM, cn = along_m ? nN : cdiv(nN, C);
  int64_t sb = kl_gemm_raster_ref(q, G, cm, cn, group_m), g = sb / (cm * cn), m = sb % (cm * cn) / cn, n = sb % cn;
  if (along_m)
    m = m * C + r;
  else
    n = n * C + r;
  if (m >= nM || n >= nN) return -1;
  return (g * nM + m) * nN + n;
}
kl_value *kl_gemm_cluster_bid(kl_rewriter *rw, kl_loc loc, kl_value *h, int64_t G, int64_t nM, int64_t nN,
                              int64_t group_m, int64_t C, bool along_m, kl_value **valid) {
  kl_emitter e = { rw, loc };
  int64_t cm = along_m ? cdiv(nM, C) : nM, cn = along_m ? nN : cdiv(nN, C), per = cm * cn;
  kl_value *q = kl_emit_divi(&e, h, C), *r = kl_emit_remi(&e, h, C);
  kl_value *sb = kl_gemm_raster_bid(rw, loc, q, G, cm, cn, group_m);
  kl_value *in = G > 1 ? kl_emit_remi(&e, sb, per) : sb;
  kl_value *m = kl_emit_divi(&e, in, cn), *n = kl_emit_remi(&e, in, cn);
  int64_t lim = along_m ? nM : nN;
  kl_value **d = along_m ? &m : &n;
  *d = kl_emit_add(&e, kl_emit_muli(&e, *d, C), r);
  *valid = NULL;
  if ((along_m ? nM : nN) % C) { /* padding: clamp to the last tile */
    kl_value *lv = kl_emit_index(&e, lim - 1);
    *valid = kl_emit_cmp(&e, "le", *d, lv);
    *d = select(&e, *valid, *d, lv);
  }
  kl_value *bid = kl_emit_add(&e, kl_emit_muli(&e, m, nN), n);
  if (G > 1) bid = kl_emit_add(&e, kl_emit_muli(&e, kl_emit_divi(&e, sb, per), nM * nN), bid);
  return bid;
}
