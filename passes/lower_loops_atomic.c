/* lower_loops_atomic.c — rock-lower-loops: an atomic register-tile write
 * (rock.threadwise_write_all {store = "atomic_add" | "atomic_max" | "atomic_min"}) whose
 * destination view ignores some coordinates of the tile (a GEMM + reduce: the reduced
 * dims of the output) becomes a pre-reduction and one atomic per output point per block.
 *
 * Contract (kl__ll_lower_atomic_write, called by rock_lower_loops.c's lower_copy):
 *  - The write's view W must start with one map of Merge / PassThrough transforms, one per
 *    upper dim (bid, tid, iter): its lower dims are the *digits* of the tile coordinates.
 *    The rest of W composed with the destination's transform chain gives the buffer
 *    coordinates from the digits; a digit that no buffer coordinate depends on (AddDim,
 *    Broadcast{1} on the way) is *reduced*. Only digits of iter and of tid (an extra index
 *    made by rock.workitem_id) reduce: blocks never share a pre-reduction.
 *  - Within the thread: for every combination of the kept iter digits, a loop over the
 *    reduced ones folds the tile's elements (an invalid element — a padded one — is the
 *    identity: 0, -inf, +inf) and a flag saying some element was valid.
 *  - Across lanes: a reduced tid digit whose stride and size are powers of two and that
 *    stays within the wave is folded by rock.lane_shuffle butterflies (xor stride ..
 *    stride * (size - 1)); the lanes whose such digits are 0 hold the results.
 *  - Across waves (reduced tid digits left): an LDS array of the block's output points
 *    (and one of flags), filled with the identity, barrier, LDS atomics from the lanes
 *    holding results, barrier, then each point (tid-strided) issues one global atomic.
 *    Skipped (each lane holding a result issues its own global atomic) when the arrays
 *    would not fit beside the kernel's LDS.
 *  - The value of every global atomic is multiplied by the write's `store_scale` (f64,
 *    default 1: reduce_mean's 1 / count; linear, so the partial sums may be scaled).
 *  - Max / min fold with arith.maxf / minf (NaN propagates) and the atomics are
 *    rock.atomic_rmw {kind = "max" | "min"} (NaN-propagating compare-and-swap loops,
 *    passes/lower_atomic.h), so a NaN anywhere reaches the output as in the reference.
 * Returns 1 when it lowered (and erased) the op, 0 when the pattern does not apply (the
 * caller then issues one atomic per element), -1 after reporting an error. */
#include "passes/lower_loops.h"
#include "core/dialect_rock.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { A_ADD, A_MAX, A_MIN };

typedef struct {
  int nd;                           /* digits (lower dims of W's first map) */
  int owner[KL_VIEW_MAX_DIMS];      /* the upper dim each digit comes from */
  int64_t size[KL_VIEW_MAX_DIMS];   /* digit extent */
  int64_t stride[KL_VIEW_MAX_DIMS]; /* its stride within its upper dim */
  bool reduced[KL_VIEW_MAX_DIMS];   /* no buffer coordinate depends on it */
  bool shuffled[KL_VIEW_MAX_DIMS];  /* a reduced tid digit folded by lane shuffles */
} digits;

typedef struct {
  kl_op *op;
  kl_value *src, *dst_under, *lds_v, *lds_f;
  kl_view *full, *pv;
  kl_value *extra[KL_VIEW_MAX_DIMS];
  int nextra, tid_dim, kind;
  digits d;
  int ki[KL_VIEW_MAX_DIMS], nki, ri[KL_VIEW_MAX_DIMS], nri; /* kept / reduced iter digits */
  int kt[KL_VIEW_MAX_DIMS], nkt;                            /* kept tid digits */
  int64_t nK, nR, P, block;
  double scale;
  const kl_type *et, *i32;
  kl_value *base; /* the kept iter digits' part of iter (outer -> inner) */
} aw;

/* Which upper dims of view v each buffer coordinate depends on: the OR of the lower
 * dims' masks (bit i = upper dim i). Conservative: a transform's lower dims depend on all
 * its upper dims except through AddDim, Broadcast{1} and ConstDim. */
static uint32_t address_deps(const kl_view *v) {
  uint32_t cur[KL_VIEW_MAX_DIMS], next[KL_VIEW_MAX_DIMS];
  for (int i = 0; i < v->maps[0].nupper; i++) cur[i] = 1u << i;
  for (int m = 0; m < v->nmaps; m++) {
    const kl_vmap *mp = &v->maps[m];
    for (int j = 0; j < mp->nlower; j++) next[j] = 0;
    for (int t = 0; t < mp->ntrans; t++) {
      const kl_vtrans *tr = &mp->trans[t];
      switch (tr->kind) {
        case KL_VT_ADDDIM:
        case KL_VT_CONSTDIM: break;
        case KL_VT_PASSTHROUGH:
        case KL_VT_PAD:
        case KL_VT_SLICE:
        case KL_VT_BROADCAST:
          for (int k = 0; k < tr->nupper && k < tr->nlower; k++)
            if (tr->kind != KL_VT_BROADCAST || tr->params[k] != 1) next[tr->lower[k]] |= cur[tr->upper[k]];
          break;
        default: {
          uint32_t u = 0;
          for (int k = 0; k < tr->nupper; k++) u |= cur[tr->upper[k]];
          for (int k = 0; k < tr->nlower; k++) next[tr->lower[k]] |= u;
        }
      }
    }
    memcpy(cur, next, sizeof cur);
  }
  uint32_t all = 0;
  for (int j = 0; j < v->maps[v->nmaps - 1].nlower; j++) all |= cur[j];
  return all;
}

/* The digits of W's first map; false when it is not one Merge / PassThrough per dim. */
static bool read_digits(const kl_view *w, digits *d) {
  const kl_vmap *m = &w->maps[0];
  if (m->ntrans != m->nupper || m->nlower > KL_VIEW_MAX_DIMS) return false;
  d->nd = m->nlower;
  for (int t = 0; t < m->ntrans; t++) {
    const kl_vtrans *tr = &m->trans[t];
    if (tr->nupper != 1 || !(tr->kind == KL_VT_MERGE || tr->kind == KL_VT_PASSTHROUGH)) return false;
    int64_t s = 1;
    for (int k = tr->nlower - 1; k >= 0; k--) {
      int j = tr->lower[k];
      d->owner[j] = tr->upper[0];
      d->size[j] = m->lower_sizes[j];
      d->stride[j] = s;
      s *= d->size[j];
    }
  }
  return true;
}

static bool is_pow2(int64_t x) { return x > 0 && !(x & (x - 1)); }

/* LDS bytes the kernel's rock.alloc ops take (as the plan counts them). */
static int64_t lds_in_use(kl_op *fn) {
  int n;
  kl_op **ops = kl_collect_ops(fn, &n);
  int64_t bytes = 0;
  for (int i = 0; i < n; i++) {
    const kl_type *t = ops[i]->nresults ? ops[i]->results[0].type : NULL;
    if (!strcmp(ops[i]->name, "rock.alloc") && t && t->kind == KL_TY_BUFFER && t->space == KL_SPACE_LDS)
      bytes += kl_type_numel(t) * ((kl_type_bits(t->elem) + 7) / 8);
  }
  free(ops);
  return bytes;
}

/* ---- emission helpers ---- */
static kl_value *cint(kl_ll *L, const kl_type *t, int64_t v) {
  kl_named_attr na = { "value", kl_attr_int_typed(L->ctx, v, t) };
  return kl_op_result(kl_rewriter_create(L->e.rw, "arith.constant", L->e.loc, 0, NULL, 1, &t, 1, &na, 0), 0);
}
static kl_value *ident(kl_ll *L, aw *s) {
  return kl_ll_const(L, s->et, s->kind == A_MAX ? -INFINITY : s->kind == A_MIN ? INFINITY : 0.0);
}
static kl_value *fold(kl_ll *L, aw *s, kl_value *a, kl_value *x) {
  const char *n = s->kind == A_MAX ? "arith.maxf" : s->kind == A_MIN ? "arith.minf" : "arith.addf";
  return kl_ll_op2(L, n, a, x, s->et);
}
static const char *rmw_kind(aw *s) { return s->kind == A_MAX ? "max" : s->kind == A_MIN ? "min" : "add"; }
static void atomic(kl_ll *L, aw *s, kl_value *x, kl_value *buf, kl_value *const *coords, kl_value *valid) {
  const char *save = L->rmw;
  L->rmw = rmw_kind(s);
  kl_ll_store(L, x, buf, coords, valid);
  L->rmw = save;
}
static kl_value *shuffle(kl_ll *L, kl_value *v, int64_t x) {
  kl_named_attr na = { "xor", kl_attr_int(L->ctx, x) };
  return kl_op_result(kl_rewriter_create(L->e.rw, "rock.lane_shuffle", L->e.loc, 1, &v, 1, &v->type, 1, &na, 0), 0);
}
static void barrier(kl_ll *L) { kl_rewriter_create(L->e.rw, "rock.barrier", L->e.loc, 0, NULL, 0, NULL, 0, NULL, 0); }
static kl_value *lds(kl_ll *L, const kl_type *e, int64_t n) {
  const kl_type *t = kl_type_buffer(L->ctx, e, 1, &n, NULL, KL_SPACE_LDS);
  return kl_op_result(kl_rewriter_create(L->e.rw, "rock.alloc", L->e.loc, 0, NULL, 1, &t, 0, NULL, 0), 0);
}

/* sum over the digits idx[0..n) of digit(c) * stride, where c is a mixed-radix number
 * over those digits' sizes (first most significant). */
static kl_value *spread(kl_ll *L, aw *s, kl_value *c, const int *idx, int n) {
  kl_value *r = kl_ll_idx(L, 0);
  int64_t below = 1;
  for (int k = n - 1; k >= 0; k--) {
    int j = idx[k];
    kl_value *dg = kl_emit_remi(&L->e, kl_emit_divi(&L->e, c, below), s->d.size[j]);
    r = kl_emit_add(&L->e, r, kl_emit_muli(&L->e, dg, s->d.stride[j]));
    below *= s->d.size[j];
  }
  return r;
}
/* The digit j of upper coordinate x. */
static kl_value *digit(kl_ll *L, aw *s, kl_value *x, int j) {
  return kl_emit_remi(&L->e, kl_emit_divi(&L->e, x, s->d.stride[j]), s->d.size[j]);
}
/* The kept-tid-digit combination of tid (mixed radix over s->kt). */
static kl_value *kept_tid(kl_ll *L, aw *s, kl_value *tid) {
  kl_value *r = kl_ll_idx(L, 0);
  for (int k = 0; k < s->nkt; k++)
    r = kl_emit_add(&L->e, kl_emit_muli(&L->e, r, s->d.size[s->kt[k]]), digit(L, s, tid, s->kt[k]));
  return r;
}
/* Buffer coordinates (and validity) of tile element (extras with tid replaced, iter). */
static kl_value *coords_at(kl_ll *L, aw *s, kl_value *tid, kl_value *iter, kl_value **lower) {
  kl_value *up[KL_VIEW_MAX_DIMS], *valid = NULL;
  for (int i = 0; i < s->nextra; i++) up[i] = i == s->tid_dim && tid ? tid : s->extra[i];
  up[s->nextra] = iter;
  kl_view_emit(&L->e, s->full, up, lower, &valid);
  return valid;
}

/* ---- the loops ---- */
static void inner(kl_ll *L, kl_value *ri, kl_value **carry, void *ud) {
  aw *s = ud;
  kl_value *iter = kl_emit_add(&L->e, s->base, spread(L, s, ri, s->ri, s->nri));
  kl_value *x = kl_ll_convert(L, kl_ll_load_view(L, s->src, s->pv, &iter, 1), s->et);
  kl_value *lower[KL_VIEW_MAX_DIMS], *valid = coords_at(L, s, NULL, iter, lower);
  if (valid) {
    x = kl_ll_select(L, valid, x, ident(L, s));
    carry[1] = kl_ll_select(L, valid, cint(L, s->i32, 1), carry[1]);
  } else
    carry[1] = cint(L, s->i32, 1);
  carry[0] = fold(L, s, carry[0], x);
}

static void outer(kl_ll *L, kl_value *ko, kl_value **unused, void *ud) {
  aw *s = ud;
  kl_value *base = spread(L, s, ko, s->ki, s->nki);
  kl_value *carry[2] = { ident(L, s), cint(L, s->i32, 0) };
  s->base = base;
  kl_ll_for(L, kl_ll_idx(L, 0), kl_ll_idx(L, s->nR), 1, 2, carry, inner, s);
  kl_value *acc = carry[0], *flag = carry[1];
  kl_value *tid = s->tid_dim >= 0 ? s->extra[s->tid_dim] : NULL, *lead = NULL;
  for (int j = 0; j < s->d.nd; j++) {
    if (!s->d.shuffled[j]) continue;
    for (int64_t b = s->d.stride[j]; b < s->d.stride[j] * s->d.size[j]; b *= 2) {
      acc = fold(L, s, acc, shuffle(L, acc, b));
      flag = kl_ll_op2(L, "arith.maxsi", flag, shuffle(L, flag, b), s->i32);
    }
    lead = kl_emit_and(&L->e, lead, kl_emit_cmp(&L->e, "eq", digit(L, s, tid, j), kl_ll_idx(L, 0)));
  }
  kl_value *has = kl_ll_cmp(L, "arith.cmpi", "ne", flag, cint(L, s->i32, 0));
  kl_value *go = lead ? kl_emit_and(&L->e, lead, has) : has;
  if (s->lds_v) {
    kl_value *p = kl_emit_add(&L->e, ko, kl_emit_muli(&L->e, kept_tid(L, s, tid), s->nK));
    kl_op *ifop = kl_ll_if_begin(L, go);
    atomic(L, s, acc, s->lds_v, &p, NULL);
    kl_ll_store(L, cint(L, s->i32, 1), s->lds_f, &p, NULL);
    kl_ll_if_end(L, ifop);
    return;
  }
  kl_value *lower[KL_VIEW_MAX_DIMS];
  coords_at(L, s, NULL, base, lower); /* the address ignores the reduced digits */
  if (s->scale != 1.0) acc = kl_ll_op2(L, "arith.mulf", acc, kl_ll_const(L, s->et, s->scale), s->et);
  atomic(L, s, acc, s->dst_under, lower, go);
}

static void fill(kl_ll *L, kl_value *p, kl_value **unused, void *ud) {
  aw *s = ud;
  kl_ll_store(L, ident(L, s), s->lds_v, &p, NULL);
  kl_ll_store(L, cint(L, s->i32, 0), s->lds_f, &p, NULL);
}
static void flush(kl_ll *L, kl_value *p, kl_value **unused, void *ud) {
  aw *s = ud;
  kl_value *f = kl_ll_load(L, s->lds_f, &p, NULL, 1);
  kl_op *ifop = kl_ll_if_begin(L, kl_ll_cmp(L, "arith.cmpi", "ne", f, cint(L, s->i32, 0)));
  kl_value *x = kl_ll_load(L, s->lds_v, &p, NULL, 1);
  kl_value *ko = kl_emit_remi(&L->e, p, s->nK), *kt = kl_emit_divi(&L->e, p, s->nK);
  kl_value *tid = spread(L, s, kt, s->kt, s->nkt), *iter = spread(L, s, ko, s->ki, s->nki);
  kl_value *lower[KL_VIEW_MAX_DIMS];
  coords_at(L, s, tid, iter, lower);
  if (s->scale != 1.0) x = kl_ll_op2(L, "arith.mulf", x, kl_ll_const(L, s->et, s->scale), s->et);
  atomic(L, s, x, s->dst_under, lower, NULL);
  kl_ll_if_end(L, ifop);
}

int kl__ll_lower_atomic_write(kl_op *op, kl_rewriter *rw, int64_t unroll) {
  const char *store = kl_op_attr_string(op, "store");
  aw s = { .op = op, .tid_dim = -1, .scale = 1.0 };
  if (!store) return 0;
  if (!strcmp(store, "atomic_add"))
    s.kind = A_ADD;
  else if (!strcmp(store, "atomic_max"))
    s.kind = A_MAX;
  else if (!strcmp(store, "atomic_min"))
    s.kind = A_MIN;
  else
    return 0;
  const kl_attr *sc = kl_op_attr(op, "store_scale");
  if (sc && sc->kind == KL_AT_FLOAT) s.scale = sc->f;
  const kl_view *w = kl_ll_op_view(op);
  s.nextra = op->nopnds - 2;
  if (!w || s.nextra < 0 || s.nextra >= KL_VIEW_MAX_DIMS || !read_digits(w, &s.d)) return 0;
  for (int i = 0; i < s.nextra; i++) {
    s.extra[i] = op->opnds[2 + i].value;
    if (s.extra[i]->def && !strcmp(s.extra[i]->def->name, "rock.workitem_id")) s.tid_dim = i;
  }
  char err[512];
  kl_value *under, *pb;
  kl_view_err verr = { 0 };
  const kl_vmap *m0 = &w->maps[0];
  kl_view *rest = w->nmaps > 1 ? kl_view_make(w->nmaps - 1, w->maps + 1, &verr)
                               : kl_view_identity(m0->nlower, m0->lower_sizes, m0->lower_names, &verr);
  kl_view *rfull = rest ? kl_ll_access_view(rest, op->opnds[1].value, &under, err, sizeof err) : NULL;
  kl_view_free(rest);
  if (!rfull) return 0;
  bool ok = kl_view_rank(rfull) == s.d.nd && s.d.nd <= 32;
  uint32_t deps = ok ? address_deps(rfull) : ~0u;
  kl_view_free(rfull);
  const kl_type *et = under->type->elem;
  if (!ok || et->kind != KL_TY_F32 || op->opnds[0].value->type->kind != KL_TY_BUFFER) return 0;
  /* the reduced digits */
  bool any = false;
  for (int j = 0; j < s.d.nd; j++) {
    int o = s.d.owner[j];
    s.d.reduced[j] = s.d.size[j] > 1 && !(deps & (1u << j)) && (o == s.nextra || o == s.tid_dim);
    any |= s.d.reduced[j];
  }
  if (!any) return 0;
  kl_op *fn = kl_ll_func_of(op);
  const kl_target *tg = kl_ll_target_of(fn, err, sizeof err);
  int64_t wave = tg ? tg->wave_size : 1, lds_cap = tg ? tg->lds_bytes : 0;
  s.block = 1;
  if (s.tid_dim >= 0) s.block = kl_view_size(w, s.tid_dim);
  bool cross_wave = false;
  for (int j = 0; j < s.d.nd; j++) {
    if (s.d.owner[j] == s.nextra) {
      if (s.d.reduced[j])
        s.ri[s.nri++] = j;
      else
        s.ki[s.nki++] = j;
    } else if (s.d.owner[j] == s.tid_dim) {
      if (!s.d.reduced[j]) {
        s.kt[s.nkt++] = j;
        continue;
      }
      s.d.shuffled[j] = wave > 1 && wave <= 64 && is_pow2(s.d.size[j]) && is_pow2(s.d.stride[j]) &&
          s.d.stride[j] * s.d.size[j] <= wave;
      cross_wave |= !s.d.shuffled[j];
    }
  }
  s.nK = s.nR = 1;
  for (int k = 0; k < s.nki; k++) s.nK *= s.d.size[s.ki[k]];
  for (int k = 0; k < s.nri; k++) s.nR *= s.d.size[s.ri[k]];
  s.P = s.nK;
  for (int k = 0; k < s.nkt; k++) s.P *= s.d.size[s.kt[k]];
  /* the views */
  s.full = kl_ll_access_view(w, op->opnds[1].value, &s.dst_under, err, sizeof err);
  s.pv = s.full ? kl_ll_flat_access(op->opnds[0].value, &pb, err, sizeof err) : NULL;
  if (!s.pv) {
    kl_view_free(s.full);
    kl_ll_fail(rw, op, "%s", err);
    return -1;
  }
  s.src = pb;
  s.et = et;
  s.i32 = kl_type_i32(kl_rewriter_ctx(rw));
  kl_ll L;
  kl_ll_init(&L, rw, op->loc, unroll);
  kl_rewriter_set_insertion_before(rw, op);
  if (cross_wave && s.P * 8 + lds_in_use(fn) <= lds_cap) {
    s.lds_v = lds(&L, et, s.P);
    s.lds_f = lds(&L, s.i32, s.P);
    kl_ll_for(&L, s.extra[s.tid_dim], kl_ll_idx(&L, s.P), s.block, 0, NULL, fill, &s);
    barrier(&L);
  }
  kl_ll_for(&L, kl_ll_idx(&L, 0), kl_ll_idx(&L, s.nK), 1, 0, NULL, outer, &s);
  if (s.lds_v) {
    barrier(&L);
    kl_ll_for(&L, s.extra[s.tid_dim], kl_ll_idx(&L, s.P), s.block, 0, NULL, flush, &s);
  }
  kl_view_free(s.full);
  kl_view_free(s.pv);
  kl_rewriter_erase_op(rw, op);
  return 1;
}
