/* lower_loops_reduce.c — rock.reduce and rock.softmax as blockwise kernels (rock-lower-loops,
 * called from lower_loops_kernels.c; contract in lower_loops_reduce.h).
 *
 * Mapping, picked by which axis is contiguous (the innermost logical dim, r-1):
 *  ROW (the innermost dim is reduced; softmax over the last axis): a group of G
 *   consecutive threads owns one output row (every kept coordinate). The reduced extent K
 *   is cut into C = K / V chunks of V consecutive elements (V: the vector length the views
 *   prove along the innermost dim, kl_ll_vector_len, 128-bit cap; softmax: for the input
 *   and the output); lane l of the group takes chunks j*G + l, j in [0, J = ceil(C / G)),
 *   as U-fold unrolled loads (U in {4, 2, 1} dividing J). Partial results are reduced
 *   within the wave by rock.lane_shuffle butterflies (xor G/2 .. 1); a group wider than a
 *   wave (W lanes) butterflies the wave, lane 0 of each wave writes its partial to LDS,
 *   rock.barrier, and each thread re-reads the G/W partials of its group and butterflies
 *   those: every lane ends with the row's result. A workgroup holds R = B / G rows.
 *  COL (the innermost dim is kept): TX consecutive threads own TX consecutive vectors of
 *   V output points (coalesced vector loads; V: the vector length the input's and the
 *   output's views prove along the innermost dim, at most 32 bytes of accumulators;
 *   softmax: V = 1), TY thread rows split the reduced extent (stride TY); partials go
 *   through LDS [TY x TX x V] and a barrier, and every thread folds its column (a loop
 *   over the TY thread rows, in order), lane-wise.
 *
 * Heuristic (GPU targets; W = wave size, CU = compute units, 1024 = max workgroup):
 *   ROW: G = pow2ceil(ceil(C / P)) with P = 8 chunks per thread for reductions and
 *        P = max(1, 32 / V) for softmax (so that J*V <= 32 values fit in registers), at
 *        most 1024; doubled while 2G <= C, G < 1024 and rows * G < CU * 1024 (few rows:
 *        more threads per row); B = max(G, min(256, pow2ceil(rows * G))), at least W when
 *        G > 1 (shuffles need whole waves); R = B / G; grid = ceil(rows / R).
 *        Short rows (K <= 8 V): one thread per row, 256 rows per workgroup; rows of 33:
 *        G = 8, 32 rows per workgroup; long rows: one workgroup of up to 1024 threads.
 *   COL: TX = min(W, pow2ceil(points / V)), halved (down to 8, or to TX * V elements of
 *        64 bytes when that is fewer threads) while there are fewer than CU
 *        groups of TX points; TY = pow2ceil(ceil(K / 8)) in [1, min(32, 1024 / TX)], capped at 256 / TX when there are >= 2 CU groups of TX points;
 *        B = TX * TY, grid = ceil(points / TX).
 *   host: ROW only, G = 1 (a workgroup is one thread): R = max(1, 4096 / K) rows per
 *        workgroup, looped; the same chunk loop, vector loads and combine (no shuffles).
 *        COL on the host returns false (the caller's one-point-per-iteration form).
 * Accumulation: reductions in d->acc (f32 for f16/bf16/f32, f64, i64 for integers), as
 * vectors of V while loading, then a horizontal fold (through a private [V] scratch);
 * sum/mean add, max/min arith.maxf/minf (NaN propagates, -0 < +0) or maxsi/minsi, the
 * same op across lanes; mean divides once at the end.
 * Softmax: online max m and sum s. Per chunk: cm = max of the chunk, m' = max(m, cm),
 *   s = s * exp(m - m') + sum exp(x - m') (exp(a - b) is 1 when a == b, so -inf rows do
 *   not make NaN from -inf - -inf; m' = -inf uses 0 as the subtrahend); pairs combine
 *   the same way across lanes. A row whose J*V <= 32 values fit (ROW): one read, values
 *   kept in registers as e = exp(x - m_thread), written as e * (exp(m_thread - m) / s);
 *   else two passes by the same workgroup: the online pass, then out = exp(x - m) * (1/s).
 *   COL softmax is the online pass per element, then the write pass. Computed in f32
 *   (f64 for f64), rounded once at the store; the exps are math.exp {approx} (the GPUs'
 *   hardware exp2, passes/lower_to_llvm.c; the host's f32 polynomial). */
#include "passes/lower_loops_reduce.h"
#include "core/dialect_rock.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

#define BLOCK             256
#define PER_THREAD        8
#define FITS_VALUES       32
#define HOST_CHUNK        4096
#define COL_MAX_TY        32
#define COL_MAX_ACC_BYTES 32

typedef struct rs rs;
typedef void (*chunk_fn)(kl_ll *L, rs *s, kl_value *c, kl_value *valid, kl_value **carry);
struct rs {
  const kl_red_desc *d;
  const kl_target *t;
  kl_red_kind k;
  int kept[KL_MAX_RANK], nkept, red[KL_MAX_RANK], nred;
  int64_t V, ext[KL_MAX_RANK]; /* chunk extents of the reduced dims (the innermost / V) */
  const kl_type *vt;           /* vector<V x acc> or acc */
  kl_value *priv;              /* private [V] of acc: horizontal folds */
  kl_value *coords[KL_MAX_RANK];
  /* the chunk loop: chunks j*stride + lane, j in [0, J), valid while < limit */
  int64_t stride, J, U;
  bool guard;
  kl_value *lane, *limit;
  chunk_fn fn;
  kl_value *m, *inv; /* softmax write pass */
};

static int64_t pow2ceil(int64_t x) {
  int64_t p = 1;
  while (p < x) p *= 2;
  return p;
}
static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static const kl_type *elem(const kl_type *t) { return t->kind == KL_TY_VECTOR ? t->elem : t; }

/* ---- values ---- */
static kl_value *cint(kl_ll *L, const kl_type *t, int64_t v) {
  kl_named_attr na = { "value", kl_attr_int_typed(L->ctx, v, elem(t)) };
  return kl_op_result(kl_rewriter_create(L->e.rw, "arith.constant", L->e.loc, 0, NULL, 1, &t, 1, &na, 0), 0);
}
static kl_value *identity(kl_ll *L, kl_red_kind k, const kl_type *t) {
  bool f = kl_type_is_float(elem(t));
  if (k == KL_RED_MAX) return f ? kl_ll_const(L, t, -INFINITY) : cint(L, t, INT64_MIN);
  if (k == KL_RED_MIN) return f ? kl_ll_const(L, t, INFINITY) : cint(L, t, INT64_MAX);
  return kl_ll_const(L, t, 0);
}
static kl_value *combine(kl_ll *L, kl_red_kind k, kl_value *a, kl_value *x) {
  bool f = kl_type_is_float(elem(a->type));
  const char *name = k == KL_RED_MAX ? (f ? "arith.maxf" : "arith.maxsi")
      : k == KL_RED_MIN              ? (f ? "arith.minf" : "arith.minsi")
                                     : (f ? "arith.addf" : "arith.addi");
  return kl_ll_op2(L, name, a, x, a->type);
}
/* The fold of a vector's elements (in order) through the private scratch. */
static kl_value *hfold(kl_ll *L, rs *s, kl_red_kind k, kl_value *v) {
  if (v->type->kind != KL_TY_VECTOR) return v;
  kl_value *z = kl_ll_idx(L, 0), *a = NULL;
  kl_ll_store(L, v, s->priv, &z, NULL);
  for (int64_t i = 0; i < s->V; i++) {
    kl_value *ix = kl_ll_idx(L, i), *x = kl_ll_load(L, s->priv, &ix, NULL, 1);
    a = a ? combine(L, k, a, x) : x;
  }
  return a;
}
static kl_value *splat(kl_ll *L, rs *s, kl_value *x) {
  return s->V > 1 ? kl_ll_op1(L, "vector.broadcast", x, s->vt) : x;
}
static kl_value *shuffle(kl_ll *L, kl_value *v, int64_t x) {
  kl_named_attr na = { "xor", kl_attr_int(L->ctx, x) };
  return kl_op_result(kl_rewriter_create(L->e.rw, "rock.lane_shuffle", L->e.loc, 1, &v, 1, &v->type, 1, &na, 0), 0);
}

/* math.exp {approx}: the GPUs' hardware exp2 (passes/lower_to_llvm.c; the host ignores it) */
static kl_value *fexp(kl_ll *L, kl_value *x) {
  kl_named_attr na = { "approx", kl_attr_unit(L->ctx) };
  return kl_op_result(kl_rewriter_create(L->e.rw, "math.exp", L->e.loc, 1, &x, 1, &x->type, 1, &na, 0), 0);
}
/* softmax: exp(a - m) for a <= m, 1 when a == m (also -inf == -inf) */
static kl_value *rescale(kl_ll *L, kl_value *a, kl_value *m) {
  const kl_type *f = a->type;
  kl_value *e = fexp(L, kl_ll_op2(L, "arith.subf", a, m, f));
  return kl_ll_select(L, kl_ll_cmp(L, "arith.cmpf", "eq", a, m), kl_ll_const(L, f, 1), e);
}
/* the subtrahend for exp(x - m): m, or 0 while m is -inf (every x so far is -inf) */
static kl_value *safe_max(kl_ll *L, kl_value *m) {
  kl_value *ninf = kl_ll_cmp(L, "arith.cmpf", "eq", m, kl_ll_const(L, m->type, -INFINITY));
  return kl_ll_select(L, ninf, kl_ll_const(L, m->type, 0), m);
}
static void pair_combine(kl_ll *L, kl_value **a, kl_value *const *b) {
  const kl_type *f = a[0]->type;
  kl_value *m = kl_ll_op2(L, "arith.maxf", a[0], b[0], f);
  kl_value *x = kl_ll_op2(L, "arith.mulf", a[1], rescale(L, a[0], m), f);
  kl_value *y = kl_ll_op2(L, "arith.mulf", b[1], rescale(L, b[0], m), f);
  a[0] = m;
  a[1] = kl_ll_op2(L, "arith.addf", x, y, f);
}
static int nvals(const rs *s) { return s->k == KL_RED_SOFTMAX ? 2 : 1; }
static void combine_vals(kl_ll *L, rs *s, kl_value **a, kl_value *const *b) {
  if (s->k == KL_RED_SOFTMAX)
    pair_combine(L, a, b);
  else
    a[0] = combine(L, s->k, a[0], b[0]);
}

/* ---- cross-thread combines (every thread of a group ends with the group's values) ---- */
static void butterfly(kl_ll *L, rs *s, kl_value **a, int64_t from) {
  for (int64_t o = from; o >= 1; o /= 2) {
    kl_value *b[2];
    for (int i = 0; i < nvals(s); i++) b[i] = shuffle(L, a[i], o);
    combine_vals(L, s, a, b);
  }
}
static kl_value *lds_alloc(kl_ll *L, const kl_type *e, int64_t n) {
  const kl_type *t = kl_type_buffer(L->ctx, e, 1, &n, NULL, KL_SPACE_LDS);
  return kl_op_result(kl_rewriter_create(L->e.rw, "rock.alloc", L->e.loc, 0, NULL, 1, &t, 0, NULL, 0), 0);
}
static void barrier(kl_ll *L) { kl_rewriter_create(L->e.rw, "rock.barrier", L->e.loc, 0, NULL, 0, NULL, 0, NULL, 0); }
static void group_row(kl_ll *L, rs *s, kl_value **a, kl_value *tid, int64_t G, int64_t B) {
  int64_t W = s->t->wave_size;
  if (G <= 1) return;
  if (G <= W) {
    butterfly(L, s, a, G / 2);
    return;
  }
  butterfly(L, s, a, W / 2);
  kl_emitter *e = &L->e;
  int64_t NWG = G / W;
  kl_value *wl = kl_emit_remi(e, tid, W), *wid = kl_emit_divi(e, tid, W), *lds[2];
  for (int i = 0; i < nvals(s); i++) lds[i] = lds_alloc(L, a[i]->type, B / W);
  kl_op *ifop = kl_ll_if_begin(L, kl_emit_cmp(e, "eq", wl, kl_ll_idx(L, 0)));
  for (int i = 0; i < nvals(s); i++) kl_ll_store(L, a[i], lds[i], &wid, NULL);
  kl_ll_if_end(L, ifop);
  barrier(L);
  kl_value *ix = kl_emit_add(e, kl_emit_muli(e, kl_emit_divi(e, tid, G), NWG), kl_emit_remi(e, wl, NWG));
  for (int i = 0; i < nvals(s); i++) a[i] = kl_ll_load(L, lds[i], &ix, NULL, 1);
  butterfly(L, s, a, NWG / 2);
}
typedef struct {
  rs *s;
  kl_value **lds, *tx;
  int64_t TX;
} col_st;
/* one thread row j of the LDS partials folded into the carried values, in order */
static void col_fold(kl_ll *L, kl_value *j, kl_value **a, void *ud) {
  col_st *c = ud;
  int64_t V = c->s->V;
  kl_value *ix = kl_emit_muli(&L->e, kl_emit_add(&L->e, kl_emit_muli(&L->e, j, c->TX), c->tx), V), *b[2];
  for (int i = 0; i < nvals(c->s); i++) b[i] = kl_ll_load(L, c->lds[i], &ix, NULL, V);
  combine_vals(L, c->s, a, b);
}
static void group_col(kl_ll *L, rs *s, kl_value **a, kl_value *tx, kl_value *ty, int64_t TX, int64_t TY) {
  if (TY <= 1) return;
  kl_emitter *e = &L->e;
  kl_value *lds[2];
  int64_t V = s->V; /* V consecutive output points per thread (vectors) */
  for (int i = 0; i < nvals(s); i++) lds[i] = lds_alloc(L, elem(a[i]->type), TX * TY * V);
  kl_value *mine = kl_emit_muli(e, kl_emit_add(e, kl_emit_muli(e, ty, TX), tx), V), *txv = kl_emit_muli(e, tx, V);
  for (int i = 0; i < nvals(s); i++) kl_ll_store(L, a[i], lds[i], &mine, NULL);
  barrier(L);
  for (int i = 0; i < nvals(s); i++) a[i] = kl_ll_load(L, lds[i], &txv, NULL, V);
  col_st c = { s, lds, tx, TX };
  kl_ll_for(L, kl_ll_idx(L, 1), kl_ll_idx(L, TY), 1, nvals(s), a, col_fold, &c);
}

/* ---- the chunk loop ---- */
/* Sets s->coords of the reduced dims for chunk c (clamped to 0 when invalid). */
static void chunk_coords(kl_ll *L, rs *s, kl_value *c, kl_value *valid) {
  if (valid) c = kl_ll_select(L, valid, c, kl_ll_idx(L, 0));
  for (int i = s->nred - 1; i >= 0; i--) {
    int d = s->red[i];
    kl_value *x = i > 0 ? kl_emit_remi(&L->e, c, s->ext[d]) : c;
    if (i > 0) c = kl_emit_divi(&L->e, c, s->ext[d]);
    s->coords[d] = d == s->d->r - 1 && s->V > 1 ? kl_emit_muli(&L->e, x, s->V) : x;
  }
}
static void chunk_iter(kl_ll *L, kl_value *jo, kl_value **carry, void *ud) {
  rs *s = ud;
  kl_emitter *e = &L->e;
  for (int64_t u = 0; u < s->U; u++) {
    kl_value *j = kl_emit_add(e, kl_emit_muli(e, jo, s->U), kl_ll_idx(L, u));
    kl_value *c = kl_emit_add(e, kl_emit_muli(e, j, s->stride), s->lane);
    kl_value *valid = s->guard ? kl_emit_cmp(e, "lt", c, s->limit) : NULL;
    chunk_coords(L, s, c, valid);
    s->fn(L, s, c, valid, carry);
  }
}
static void chunks(kl_ll *L, rs *s, chunk_fn fn, int ncarry, kl_value **carry) {
  s->fn = fn;
  kl_ll_for(L, kl_ll_idx(L, 0), kl_ll_idx(L, s->J / s->U), 1, ncarry, carry, chunk_iter, s);
}
/* Does the address (and validity) of v's upper coordinate not depend on upper dim `dim`
 * (a broadcast along it: a per-row value, a column mask)? Follows the dims that dim
 * reaches down the maps; a Broadcast of modulus 1 and an AddDim drop it. */
static bool uniform_along(const kl_view *v, int dim) {
  if (!v || dim < 0 || dim >= KL_VIEW_MAX_DIMS) return false;
  bool dep[KL_VIEW_MAX_DIMS] = { 0 };
  dep[dim] = true;
  for (int m = 0; m < v->nmaps; m++) {
    const kl_vmap *mp = &v->maps[m];
    bool low[KL_VIEW_MAX_DIMS] = { 0 };
    for (int t = 0; t < mp->ntrans; t++) {
      const kl_vtrans *tr = &mp->trans[t];
      bool any = false;
      for (int i = 0; i < tr->nupper; i++) any = any || dep[tr->upper[i]];
      if (!any) continue;
      if (tr->kind == KL_VT_ADDDIM) continue;
      if (tr->kind == KL_VT_BROADCAST) { /* lower[i] = upper[i] mod params[i] */
        for (int i = 0; i < tr->nupper && i < tr->nparams; i++)
          if (dep[tr->upper[i]] && tr->params[i] != 1) low[tr->lower[i]] = true;
        continue;
      }
      for (int i = 0; i < tr->nlower; i++) low[tr->lower[i]] = true;
    }
    memcpy(dep, low, sizeof dep);
  }
  for (int i = 0; i < KL_VIEW_MAX_DIMS; i++)
    if (dep[i]) return false;
  return true;
}
/* a load of V values along the innermost dim at coords: one value splat when the view is
 * uniform along it */
static kl_value *load_vec(kl_ll *L, kl_value *buf, const kl_view *v, kl_value *const *coords, int64_t V, int last) {
  if (V > 1 && uniform_along(v, last)) {
    kl_value *x = kl_ll_load_view(L, buf, v, coords, 1);
    return kl_ll_op1(L, "vector.broadcast", x, kl_type_vector(L->ctx, x->type, (int)V));
  }
  return kl_ll_load_view(L, buf, v, coords, V);
}
/* a body applied to args (vectors of V when V > 1) */
static kl_value *apply_body(kl_ll *L, kl_region *r, kl_value *const *args, int64_t V) {
  return V > 1 ? kl__ll_inline_vector_body(L, r, args, V) : kl__ll_inline_body(L, r, args);
}
/* the reduction's input at s->coords: a load, or the prologue of the fused loads */
static kl_value *load_in(kl_ll *L, rs *s) {
  const kl_red_desc *d = s->d;
  if (!d->npro) return kl_ll_load_view(L, d->in_buf, d->in_v, s->coords, s->V);
  kl_value *args[64];
  for (int i = 0; i < d->npro; i++) args[i] = load_vec(L, d->pro_buf[i], d->pro_v[i], s->coords, s->V, d->r - 1);
  return apply_body(L, d->pro, args, s->V);
}
/* The value stored at coordinates c: v (the reduction's value, width w), through the
 * epilogue when fused (its inputs loaded at c, w wide). */
static kl_value *epilogue(kl_ll *L, rs *s, kl_value *v, kl_value *const *c) {
  const kl_red_desc *d = s->d;
  if (!d->epi) return v;
  int64_t w = v->type->kind == KL_TY_VECTOR ? v->type->shape[0] : 1;
  v = kl_ll_convert(L, v, d->res_t);
  kl_value *args[64];
  int nargs = d->epi->first->nargs;
  for (int i = 0, k = 0; i < nargs && i < 64; i++)
    args[i] = d->res_arg[i] ? v : load_vec(L, d->epi_buf[k], d->epi_v[k], c, w, d->r - 1), k += !d->res_arg[i];
  return apply_body(L, d->epi, args, w);
}

/* reduce: carry[0] (vt) combined with the chunk */
static void red_chunk(kl_ll *L, rs *s, kl_value *c, kl_value *valid, kl_value **carry) {
  kl_value *x = kl_ll_convert(L, load_in(L, s), elem(s->vt));
  if (valid) x = kl_ll_select(L, valid, x, identity(L, s->k, s->vt));
  carry[0] = combine(L, s->k, carry[0], x);
}
/* softmax online pass: carry (m, s) */
static void sm_chunk(kl_ll *L, rs *s, kl_value *c, kl_value *valid, kl_value **carry) {
  const kl_type *f = s->d->acc;
  kl_value *x = kl_ll_convert(L, load_in(L, s), f);
  kl_value *xm = valid ? kl_ll_select(L, valid, x, kl_ll_const(L, s->vt, -INFINITY)) : x;
  kl_value *mn = kl_ll_op2(L, "arith.maxf", carry[0], hfold(L, s, KL_RED_MAX, xm), f);
  kl_value *ex = fexp(L, kl_ll_op2(L, "arith.subf", x, splat(L, s, safe_max(L, mn)), s->vt));
  if (valid) ex = kl_ll_select(L, valid, ex, kl_ll_const(L, s->vt, 0));
  kl_value *sc = kl_ll_op2(L, "arith.mulf", carry[1], rescale(L, carry[0], mn), f);
  carry[1] = kl_ll_op2(L, "arith.addf", sc, hfold(L, s, KL_RED_SUM, ex), f);
  carry[0] = mn;
}
/* softmax write pass: out = exp(x - m) * (1 / s) */
static void sm_write(kl_ll *L, rs *s, kl_value *c, kl_value *valid, kl_value **carry) {
  kl_value *x = kl_ll_convert(L, load_in(L, s), s->d->acc);
  kl_value *ex = fexp(L, kl_ll_op2(L, "arith.subf", x, splat(L, s, s->m), s->vt));
  kl_value *o = kl_ll_op2(L, "arith.mulf", ex, splat(L, s, s->inv), s->vt);
  kl_op *ifop = valid ? kl_ll_if_begin(L, valid) : NULL;
  o = kl_ll_convert(L, epilogue(L, s, o, s->coords), s->d->out_buf->type->elem);
  kl_ll_store_view(L, o, s->d->out_buf, s->d->out_v, s->coords);
  if (ifop) kl_ll_if_end(L, ifop);
}
/* row_out write pass: out = epilogue(the reduction's value s->m, broadcast over the row) */
static void row_write(kl_ll *L, rs *s, kl_value *c, kl_value *valid, kl_value **carry) {
  kl_value *m = s->m;
  if (s->V > 1 && m->type->kind != KL_TY_VECTOR)
    m = kl_ll_op1(L, "vector.broadcast", m, kl_type_vector(L->ctx, m->type, (int)s->V));
  kl_op *ifop = valid ? kl_ll_if_begin(L, valid) : NULL;
  kl_value *o = kl_ll_convert(L, epilogue(L, s, m, s->coords), s->d->out_buf->type->elem);
  kl_ll_store_view(L, o, s->d->out_buf, s->d->out_v, s->coords);
  if (ifop) kl_ll_if_end(L, ifop);
}

/* mean's division and the store of a reduction result at the kept coordinates */
static kl_value *finish(kl_ll *L, rs *s, kl_value *a) {
  const kl_type *ot = s->d->epi ? s->d->res_t : s->d->out_buf->type->elem, *acc = a->type;
  if (s->k == KL_RED_MEAN) {
    double n = (double)s->d->count;
    if (kl_type_is_float(elem(acc)))
      a = kl_ll_op2(L, "arith.divf", a, kl_ll_const(L, acc, n), acc);
    else if (kl_type_is_float(ot)) {
      const kl_type *f64 = kl_type_f64(L->ctx),
                    *ft = acc->kind == KL_TY_VECTOR ? kl_type_vector(L->ctx, f64, (int)acc->shape[0]) : f64;
      a = kl_ll_op2(L, "arith.divf", kl_ll_convert(L, a, f64), kl_ll_const(L, ft, n), ft);
    } else
      a = kl_ll_op2(L, "arith.divsi", a, kl_ll_const(L, acc, n), acc);
  }
  return a;
}
static void store_result(kl_ll *L, rs *s, kl_value *a, kl_value *cond) {
  const kl_type *ot = s->d->out_buf->type->elem;
  a = finish(L, s, a);
  kl_value *oc[KL_MAX_RANK];
  for (int i = 0; i < s->d->r; i++) oc[i] = s->d->reduced[i] ? kl_ll_idx(L, 0) : s->coords[i];
  int64_t cv;
  if (cond && kl_emit_const_of(cond, &cv) && cv) cond = NULL;
  kl_op *ifop = cond ? kl_ll_if_begin(L, cond) : NULL;
  kl_ll_store_view(L, kl_ll_convert(L, epilogue(L, s, a, oc), ot), s->d->out_buf, s->d->out_v, oc);
  if (ifop) kl_ll_if_end(L, ifop);
}

/* the kept coordinates of output point p (row-major over the kept dims) */
static void kept_coords(kl_ll *L, rs *s, kl_value *p) {
  for (int i = s->nkept - 1; i >= 0; i--) {
    int d = s->kept[i];
    s->coords[d] = i > 0 ? kl_emit_remi(&L->e, p, s->d->S[d]) : p;
    if (i > 0) p = kl_emit_divi(&L->e, p, s->d->S[d]);
  }
}

/* softmax of a row held in registers (ROW, J*V <= FITS_VALUES) */
static void sm_registers(kl_ll *L, rs *s, kl_value *tid, int64_t G, int64_t B) {
  const kl_type *f = s->d->acc;
  kl_emitter *e = &L->e;
  kl_value *x[FITS_VALUES], *valid[FITS_VALUES], *cc[FITS_VALUES][KL_MAX_RANK];
  kl_value *tmv = kl_ll_const(L, s->vt, -INFINITY);
  for (int64_t j = 0; j < s->J; j++) {
    kl_value *c = kl_emit_add(e, kl_ll_idx(L, j * s->stride), s->lane);
    valid[j] = s->guard ? kl_emit_cmp(e, "lt", c, s->limit) : NULL;
    chunk_coords(L, s, c, valid[j]);
    memcpy(cc[j], s->coords, sizeof s->coords);
    x[j] = kl_ll_convert(L, load_in(L, s), f);
    kl_value *xm = valid[j] ? kl_ll_select(L, valid[j], x[j], kl_ll_const(L, s->vt, -INFINITY)) : x[j];
    tmv = kl_ll_op2(L, "arith.maxf", tmv, xm, s->vt);
  }
  kl_value *tm = hfold(L, s, KL_RED_MAX, tmv), *ms = splat(L, s, safe_max(L, tm));
  kl_value *ts = kl_ll_const(L, s->vt, 0);
  for (int64_t j = 0; j < s->J; j++) {
    x[j] = fexp(L, kl_ll_op2(L, "arith.subf", x[j], ms, s->vt));
    if (valid[j]) x[j] = kl_ll_select(L, valid[j], x[j], kl_ll_const(L, s->vt, 0));
    ts = kl_ll_op2(L, "arith.addf", ts, x[j], s->vt);
  }
  kl_value *a[2] = { tm, hfold(L, s, KL_RED_SUM, ts) };
  group_row(L, s, a, tid, G, B);
  kl_value *scale = splat(L, s, kl_ll_op2(L, "arith.divf", rescale(L, tm, a[0]), a[1], f));
  for (int64_t j = 0; j < s->J; j++) {
    kl_op *ifop = valid[j] ? kl_ll_if_begin(L, valid[j]) : NULL;
    kl_value *o = kl_ll_convert(L, epilogue(L, s, kl_ll_op2(L, "arith.mulf", x[j], scale, s->vt), cc[j]),
                                s->d->out_buf->type->elem);
    kl_ll_store_view(L, o, s->d->out_buf, s->d->out_v, cc[j]);
    if (ifop) kl_ll_if_end(L, ifop);
  }
}

/* one row (ROW mapping): accumulate, combine across the group, store */
static void row_body(kl_ll *L, rs *s, kl_value *row, kl_value *rv, kl_value *tid, int64_t G, int64_t B) {
  kept_coords(L, s, row);
  const kl_type *f = s->d->acc;
  if (s->k != KL_RED_SOFTMAX) {
    kl_value *acc = identity(L, s->k, s->vt);
    chunks(L, s, red_chunk, 1, &acc);
    kl_value *a = hfold(L, s, s->k == KL_RED_MEAN ? KL_RED_SUM : s->k, acc);
    group_row(L, s, &a, tid, G, B);
    if (s->d->row_out) {
      s->m = finish(L, s, a);
      chunks(L, s, row_write, 0, NULL);
      return;
    }
    kl_value *first = G > 1 ? kl_emit_cmp(&L->e, "eq", s->lane, kl_ll_idx(L, 0)) : NULL;
    store_result(L, s, a, kl_emit_and(&L->e, rv, first));
    return;
  }
  if (s->J * s->V <= FITS_VALUES) {
    sm_registers(L, s, tid, G, B);
    return;
  }
  kl_value *ms[2] = { kl_ll_const(L, f, -INFINITY), kl_ll_const(L, f, 0) };
  chunks(L, s, sm_chunk, 2, ms);
  group_row(L, s, ms, tid, G, B);
  s->m = ms[0];
  s->inv = kl_ll_op2(L, "arith.divf", kl_ll_const(L, f, 1), ms[1], f);
  chunks(L, s, sm_write, 0, NULL);
}

static void host_row(kl_ll *L, kl_value *row, kl_value **carry, void *ud) { row_body(L, ud, row, NULL, NULL, 1, 1); }

static void set_sizes(kl_ll *L, kl_op *func, int64_t block, int64_t grid) {
  kl_rewriter_set_attr(L->e.rw, func, "block_size", kl_attr_int(L->ctx, block));
  kl_rewriter_set_attr(L->e.rw, func, "grid_size", kl_attr_int(L->ctx, grid));
}

/* The vector length the input's views (fused: every prologue input's; 1 when the
 * prologue has an op without a vector form) allow along dim, and the output's (with the
 * epilogue's inputs). */
static int64_t in_vlen(const kl_red_desc *d, int dim) {
  if (!d->npro) return kl_ll_vector_len(d->in_v, d->in_buf, dim);
  if (!kl__ll_body_vectorizes(d->pro)) return 1;
  int64_t v = INT64_MAX;
  for (int i = 0; i < d->npro; i++) {
    int64_t x = uniform_along(d->pro_v[i], dim) ? INT64_MAX : kl_ll_vector_len(d->pro_v[i], d->pro_buf[i], dim);
    if (x < v) v = x;
  }
  return v == INT64_MAX ? 1 : v; /* every input uniform along dim: scalars */
}
static int64_t out_vlen(const kl_red_desc *d, int dim) {
  int64_t v = kl_ll_vector_len(d->out_v, d->out_buf, dim);
  if (!d->epi) return v;
  if (!kl__ll_body_vectorizes(d->epi)) return 1;
  for (int i = 0; i < d->nepi; i++) {
    int64_t x = uniform_along(d->epi_v[i], dim) ? INT64_MAX : kl_ll_vector_len(d->epi_v[i], d->epi_buf[i], dim);
    if (x < v) v = x;
  }
  return v;
}

bool kl__ll_blockwise_reduce(kl_ll *L, kl_op *func, const kl_target *t, const kl_red_desc *d) {
  if (d->r < 1 || !d->in_v || !d->out_v) return false;
  rs s = { .d = d, .t = t, .k = d->kind, .V = 1 };
  int64_t K = 1, P = 1;
  for (int i = 0; i < d->r; i++) {
    if (d->S[i] == 0) return false;
    if (d->reduced[i]) {
      s.red[s.nred++] = i;
      K *= d->S[i];
    } else {
      s.kept[s.nkept++] = i;
      P *= d->S[i];
    }
    s.ext[i] = d->S[i];
  }
  if (s.nred == 0) return false;
  bool row = d->reduced[d->r - 1], host = t->arch == KL_ARCH_HOST;
  if (host && !row && !d->npro) return false; /* fused: the COL mapping with one thread */
  kl_emitter *e = &L->e;
  int64_t save = L->unroll;
  L->unroll = 1;
  const kl_type *idx = kl_type_index(L->ctx);
  kl_value *bid = kl_op_result(kl_rewriter_create(e->rw, "rock.workgroup_id", e->loc, 0, NULL, 1, &idx, 0, NULL, 0), 0);
  kl_value *tid = host
      ? NULL
      : kl_op_result(kl_rewriter_create(e->rw, "rock.workitem_id", e->loc, 0, NULL, 1, &idx, 0, NULL, 0), 0);
  int64_t W = t->wave_size < 1 ? 1 : t->wave_size, maxwg = t->max_workgroup_size < 1 ? 1 : t->max_workgroup_size;
  if (maxwg > 1024) maxwg = 1024;
  if (row) {
    int last = d->r - 1;
    s.V = in_vlen(d, last);
    if (s.k == KL_RED_SOFTMAX || d->row_out) {
      int64_t vo = out_vlen(d, last);
      if (vo < s.V) s.V = vo;
    }
    if (s.V > 16) s.V = 16;
    s.ext[last] = d->S[last] / s.V;
  } else if (s.k != KL_RED_SOFTMAX) {
    /* COL: V consecutive output points per thread along the kept innermost dim, as wide
     * as the input's and the output's views allow, at most 32 bytes of accumulators (the
     * LDS partials: TX * TY * V of them) */
    int last = d->r - 1;
    int64_t vi = in_vlen(d, last), vo = out_vlen(d, last);
    int64_t ab = (kl_type_bits(d->acc) + 7) / 8;
    s.V = vi < vo ? vi : vo;
    while (s.V > 1 && s.V * ab > COL_MAX_ACC_BYTES) s.V /= 2;
  }
  s.vt = s.V > 1 ? kl_type_vector(L->ctx, d->acc, (int)s.V) : d->acc;
  if (s.V > 1 && row) {
    const kl_type *pt = kl_type_buffer(L->ctx, d->acc, 1, &s.V, NULL, KL_SPACE_PRIVATE);
    s.priv = kl_op_result(kl_rewriter_create(e->rw, "rock.alloc", e->loc, 0, NULL, 1, &pt, 0, NULL, 0), 0);
  }
  if (row) {
    int64_t C = K / s.V, rows = P, G = 1, B = 1, R, grid;
    if (host) {
      R = HOST_CHUNK / K < 1 ? 1 : HOST_CHUNK / K;
      if (R > rows) R = rows;
      grid = cdiv(rows, R);
    } else {
      int64_t per = s.k == KL_RED_SOFTMAX || d->row_out ? (FITS_VALUES / s.V < 1 ? 1 : FITS_VALUES / s.V) : PER_THREAD;
      G = pow2ceil(cdiv(C, per));
      if (G > maxwg) G = maxwg;
      while (G < maxwg && 2 * G <= C && rows * G < (int64_t)t->compute_units * 1024) G *= 2;
      B = pow2ceil(rows * G);
      if (B > BLOCK) B = BLOCK;
      if (B < G) B = G;
      if (G > 1 && B < W) B = W;
      if (B > maxwg) B = maxwg;
      R = B / G;
      grid = cdiv(rows, R);
    }
    s.stride = G;
    s.J = cdiv(C, G);
    s.U = s.J % 4 == 0 ? 4 : s.J % 2 == 0 ? 2 : 1;
    /* row_out: a row slice of up to FITS_VALUES values stays in registers between the two
     * passes (the compiler reuses the first pass's loads); a longer one is read again, by
     * loops that are not unrolled (unrolled, their loads were merged and spilled) */
    if (d->row_out && !host && s.J * s.V > FITS_VALUES) s.U = 1;
    if (host) {
      s.lane = kl_ll_idx(L, 0);
      s.limit = kl_ll_idx(L, C);
      s.guard = false;
      kl_value *row0 = kl_emit_muli(e, bid, R);
      kl_value *end = grid == 1 ? kl_ll_idx(L, rows)
                                : kl_ll_min_index(L, kl_emit_add(e, row0, kl_ll_idx(L, R)), kl_ll_idx(L, rows));
      kl_ll_for(L, row0, end, 1, 0, NULL, host_row, &s);
    } else {
      s.lane = G > 1 ? kl_emit_remi(e, tid, G) : kl_ll_idx(L, 0);
      kl_value *gi = R > 1 ? kl_emit_divi(e, tid, G) : kl_ll_idx(L, 0);
      kl_value *rw = kl_emit_add(e, kl_emit_muli(e, bid, R), gi);
      kl_value *rv = grid * R == rows ? NULL : kl_emit_cmp(e, "lt", rw, kl_ll_idx(L, rows));
      if (rv) rw = kl_ll_select(L, rv, rw, kl_ll_idx(L, 0));
      s.limit = rv ? kl_ll_select(L, rv, kl_ll_idx(L, C), kl_ll_idx(L, 0)) : kl_ll_idx(L, C);
      s.guard = rv || C % G != 0;
      row_body(L, &s, rw, rv, tid, G, B);
    }
    set_sizes(L, func, B, grid);
  } else {
    P /= s.V; /* vectors of V output points */
    int64_t TX = pow2ceil(P), TY;
    if (TX > W) TX = W;
    /* few points: more workgroups, down to 8 threads or 64 contiguous bytes a row */
    int64_t eb = (kl_type_bits(d->in_buf->type->elem) + 7) / 8, txmin = 64 / (s.V * (eb < 1 ? 1 : eb));
    if (txmin > 8) txmin = 8;
    if (txmin < 1) txmin = 1;
    while (TX > txmin && cdiv(P, TX) < (int64_t)t->compute_units) TX /= 2;
    int64_t tymax = maxwg / TX < COL_MAX_TY ? maxwg / TX : COL_MAX_TY;
    TY = pow2ceil(cdiv(K, PER_THREAD));
    if (TY > tymax) TY = tymax;
    if (cdiv(P, TX) >= 2 * (int64_t)t->compute_units && TY > BLOCK / TX) TY = BLOCK / TX < 1 ? 1 : BLOCK / TX;
    int64_t grid = cdiv(P, TX);
    kl_value *tx = TX > 1 ? kl_emit_remi(e, tid, TX) : kl_ll_idx(L, 0);
    kl_value *ty = TY > 1 ? kl_emit_divi(e, tid, TX) : kl_ll_idx(L, 0);
    kl_value *p = kl_emit_add(e, kl_emit_muli(e, bid, TX), tx);
    kl_value *pv = grid * TX == P ? NULL : kl_emit_cmp(e, "lt", p, kl_ll_idx(L, P));
    if (pv) p = kl_ll_select(L, pv, p, kl_ll_idx(L, 0));
    kept_coords(L, &s, s.V > 1 ? kl_emit_muli(e, p, s.V) : p);
    s.stride = TY;
    s.lane = ty;
    s.J = cdiv(K, TY);
    s.U = s.J % 4 == 0 ? 4 : s.J % 2 == 0 ? 2 : 1;
    s.limit = pv ? kl_ll_select(L, pv, kl_ll_idx(L, K), kl_ll_idx(L, 0)) : kl_ll_idx(L, K);
    s.guard = pv || K % TY != 0;
    const kl_type *f = d->acc;
    if (s.k != KL_RED_SOFTMAX) {
      kl_value *acc = identity(L, s.k, s.vt);
      chunks(L, &s, red_chunk, 1, &acc);
      group_col(L, &s, &acc, tx, ty, TX, TY);
      if (d->row_out) {
        s.m = finish(L, &s, acc);
        chunks(L, &s, row_write, 0, NULL);
      } else {
        kl_value *first = TY > 1 ? kl_emit_cmp(e, "eq", ty, kl_ll_idx(L, 0)) : NULL;
        store_result(L, &s, acc, kl_emit_and(e, pv, first));
      }
    } else {
      kl_value *ms[2] = { kl_ll_const(L, f, -INFINITY), kl_ll_const(L, f, 0) };
      chunks(L, &s, sm_chunk, 2, ms);
      group_col(L, &s, ms, tx, ty, TX, TY);
      s.m = ms[0];
      s.inv = kl_ll_op2(L, "arith.divf", kl_ll_const(L, f, 1), ms[1], f);
      chunks(L, &s, sm_write, 0, NULL);
    }
    set_sizes(L, func, TX * TY, grid);
  }
  L->unroll = save;
  return true;
}
