/* lower_loops_ldmatrix.c — rock-lower-loops: an LDS fragment read that asks for NVIDIA's
 * warp-level matrix load (rock.threadwise_read_into(%lds, %regs, %tid, e...) {view,
 * ldmatrix = N}: N = 1, 2 or 4 matrices per load, set by the mma.sync blockwise lowering,
 * passes/rock_accel_lower.c) becomes rock.ldmatrix ops (core/dialect_rock.c) where that
 * is proven to read the same elements, else the plain loads of the generic pattern; the
 * mirror for stores: an LDS write of a register tile that asks for the warp-level matrix
 * store (rock.threadwise_write_all(%regs, %lds, %tid, e...) {view, stmatrix = N}, set by
 * rock-output-swizzle on sm_90+ for its accumulator -> LDS store) becomes rock.stmatrix
 * ops where the same proof holds (the lane mapping of stmatrix is ldmatrix's).
 *
 * Contract (kl__ll_lower_ldmatrix_read / kl__ll_lower_stmatrix_write, called by
 * rock_lower_loops.c's lower_copy):
 *  - Applies when the LDS side is a 16-bit LDS buffer (through its transforms), the
 *    registers a private buffer of the same element type, extra index 0 or 1 the
 *    workitem id (rock.workitem_id; every other extra index is enumerated, or taken at
 *    its one value where it is a constant), the view's tid extent a multiple of 32 (whole warps) and its
 *    iter extent a multiple of 2N; a store also needs store = "set" (or none) and no
 *    store_scale.
 *  - The proof (lock-step, over every tid, every value of the other extra indices (the
 *    one value of a constant index) and every iter of the view, evaluated with
 *    kl_view_eval_addr): for each group of 2N
 *    consecutive iters g0.., matrix j < N, row r < 8, the row address of the warp is
 *    R(j, r) = addr(tid = warp + 4r, iter = g0 + 2j) (plain) or
 *    addr(tid = warp + r/2, iter = g0 + 2j + r%2) (trans), a multiple of 8 elements (16
 *    bytes) with its 8 elements in the buffer; and every element of every lane l is where
 *    ldmatrix takes it from (stmatrix puts it): addr(warp + l, g0 + e) = R(e/2, l/4) +
 *    2(l%4) + e%2 (plain) or R(e/2, 2(l%4) + e%2) + l/4 (trans), every coordinate valid.
 *    Plain is tried first.
 *  - Emission: per group (kl_ll_for, unrolled like the other copies) lane l computes the
 *    coordinates of R(l/8 mod N, l%8) from its own tid (tid - l%32 + 4(l%8), resp.
 *    + (l%8)/2) with the view's index arithmetic, issues rock.ldmatrix {num = N, trans}
 *    and stores the vector<2N x T> at regs[g0..] (a store: loads regs[g0..] as one
 *    vector<2N x T> and issues rock.stmatrix {num = N, trans} with it).
 *  - The kernel func records the outcome in `fragment_loads` ("ldmatrix", "lds": plain
 *    loads, "mixed"), shown by p:kernels(), and for stores in `lds_stores` ("stmatrix",
 *    "sts", "mixed").
 * Returns 1 when it lowered (and erased) the op, 0 when it does not apply or the proof
 * fails (the caller lowers the copy element-wise), -1 after reporting an error. */
#include "passes/lower_loops.h"
#include "core/dialect_rock.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int64_t T, E, n, N;              /* tid extent, product of the other extra extents, iter extent, matrices */
  int nextra, ti;                  /* ti: the extra index that is the workitem id */
  int64_t fixed[KL_VIEW_MAX_DIMS]; /* an extra index that is a constant: its value, else -1 */
  const kl_view *v;
  const int64_t *strides;
  int64_t span;
  int64_t *addr; /* [T][E][n], -1 where invalid */
} proof;

/* upper coordinate (tid, extras from flat e, iter) */
static void upper_of(const proof *p, int64_t tid, int64_t e, int64_t it, int64_t *up) {
  up[p->ti] = tid;
  for (int i = p->nextra - 1; i >= 0; i--) {
    if (i == p->ti) continue;
    if (p->fixed[i] >= 0) {
      up[i] = p->fixed[i];
      continue;
    }
    int64_t s = kl_view_size(p->v, i);
    up[i] = e % s;
    e /= s;
  }
  up[p->nextra] = it;
}

static int64_t at(const proof *p, int64_t tid, int64_t e, int64_t it) { return p->addr[(tid * p->E + e) * p->n + it]; }

/* Row address R(j, r) of warp w0 (see the contract); -1 if not a valid aligned row. */
static int64_t row(const proof *p, bool trans, int64_t w0, int64_t e, int64_t g0, int64_t j, int64_t r) {
  int64_t a = trans ? at(p, w0 + r / 2, e, g0 + 2 * j + r % 2) : at(p, w0 + 4 * r, e, g0 + 2 * j);
  return a >= 0 && a % 8 == 0 && a + 8 <= p->span ? a : -1;
}

static bool prove(const proof *p, bool trans) {
  for (int64_t w0 = 0; w0 < p->T; w0 += 32)
    for (int64_t e = 0; e < p->E; e++)
      for (int64_t g0 = 0; g0 < p->n; g0 += 2 * p->N) {
        int64_t R[4][8];
        for (int64_t j = 0; j < p->N; j++)
          for (int64_t r = 0; r < 8; r++)
            if ((R[j][r] = row(p, trans, w0, e, g0, j, r)) < 0) return false;
        for (int64_t l = 0; l < 32; l++)
          for (int64_t x = 0; x < 2 * p->N; x++) {
            int64_t want = trans ? R[x / 2][2 * (l % 4) + x % 2] + l / 4 : R[x / 2][l / 4] + 2 * (l % 4) + x % 2;
            if (at(p, w0 + l, e, g0 + x) != want) return false;
          }
      }
  return true;
}

typedef struct {
  kl_value *lds, *regs, *tid2, *itoff;
  kl_value *extra[KL_VIEW_MAX_DIMS];
  int nextra, ti;
  const kl_view *gv, *pv;
  int64_t N;
  bool trans;
  const kl_type *vt;
  bool store;
} emit_st;
static void group_body(kl_ll *L, kl_value *g0, kl_value **carry, void *ud) {
  emit_st *s = ud;
  kl_value *up[KL_VIEW_MAX_DIMS], *lower[KL_VIEW_MAX_DIMS], *valid = NULL;
  for (int i = 0; i < s->nextra; i++) up[i] = i == s->ti ? s->tid2 : s->extra[i];
  up[s->nextra] = kl_emit_add(&L->e, g0, s->itoff);
  kl_view_emit(&L->e, s->gv, up, lower, &valid); /* proven valid everywhere */
  kl_value *o[1 + KL_VIEW_MAX_DIMS];
  o[0] = s->lds;
  int rank = s->lds->type->rank;
  for (int i = 0; i < rank; i++) o[1 + i] = lower[i];
  kl_named_attr a[2] = { { "num", kl_attr_int(L->ctx, s->N) }, { "trans", kl_attr_bool(L->ctx, s->trans) } };
  if (s->store) {
    kl_value *so[2 + KL_VIEW_MAX_DIMS];
    so[0] = kl_ll_load_view(L, s->regs, s->pv, &g0, 2 * s->N);
    for (int i = 0; i < 1 + rank; i++) so[1 + i] = o[i];
    kl_rewriter_create(L->e.rw, "rock.stmatrix", L->e.loc, 2 + rank, so, 0, NULL, 2, a, 0);
    return;
  }
  kl_value *x = kl_op_result(kl_rewriter_create(L->e.rw, "rock.ldmatrix", L->e.loc, 1 + rank, o, 1, &s->vt, 2, a, 0),
                             0);
  kl_ll_store_view(L, x, s->regs, s->pv, &g0);
}

/* Records on the kernel func how a requested fragment read was done: fragment_loads =
 * "ldmatrix" / "lds" (plain loads), "mixed" once both occur (what p:kernels() shows);
 * stores: lds_stores = "stmatrix" / "sts" / "mixed". */
static void record(kl_rewriter *rw, kl_op *op, bool store, bool matrix) {
  kl_op *fn = kl_ll_func_of(op);
  if (!fn) return;
  const char *key = store ? "lds_stores" : "fragment_loads";
  const char *how = store ? (matrix ? "stmatrix" : "sts") : (matrix ? "ldmatrix" : "lds");
  const char *old = kl_op_attr_string(fn, key);
  const char *now = !old || !strcmp(old, how) ? how : "mixed";
  if (!old || strcmp(old, now)) kl_rewriter_set_attr(rw, fn, key, kl_attr_str(kl_rewriter_ctx(rw), now));
}

static int lower_matrix(kl_op *op, kl_rewriter *rw, int64_t unroll, bool store) {
  int64_t N = 0;
  const char *an = store ? "stmatrix" : "ldmatrix";
  if (!kl_op_attr_i64(op, an, &N)) return 0;
  if (N != 1 && N != 2 && N != 4) {
    kl_ll_fail(rw, op, "'%s' must be 1, 2 or 4 (matrices per %s), got %lld", an, store ? "store" : "load",
               (long long)N);
    return -1;
  }
  if (store) {
    const char *how = kl_op_attr_string(op, "store");
    if ((how && strcmp(how, "set")) || kl_op_attr(op, "store_scale")) {
      record(rw, op, true, false);
      return 0;
    }
  }
  const kl_view *w = kl_ll_op_view(op);
  int nextra = op->nopnds - 2;
  int ti = 0; /* the workitem id: extra index 0 (fragment reads) or 1 (the swizzle store's (bid, tid)) */
  while (ti < nextra && ti < 2 &&
         !(op->opnds[2 + ti].value->def && !strcmp(op->opnds[2 + ti].value->def->name, "rock.workitem_id")))
    ti++;
  kl_value *tid = ti < nextra && ti < 2 ? op->opnds[2 + ti].value : NULL;
  if (!w || !tid || kl_view_rank(w) != nextra + 1) {
    record(rw, op, store, false);
    return 0;
  }
  char err[512];
  kl_value *gb, *pb;
  kl_view *gv = kl_ll_access_view(w, op->opnds[store ? 1 : 0].value, &gb, err, sizeof err);
  kl_view *pv = gv ? kl_ll_flat_access(op->opnds[store ? 0 : 1].value, &pb, err, sizeof err) : NULL;
  int ret = 0;
  proof p = { 0 };
  if (!gv || !pv || gb->type->kind != KL_TY_BUFFER || gb->type->space != KL_SPACE_LDS ||
      kl_type_bits(gb->type->elem) != 16 || pb->type->elem != gb->type->elem || pb->type->space != KL_SPACE_PRIVATE)
    goto out;
  p = (proof){ .T = kl_view_size(gv, ti),
               .E = 1,
               .n = kl_view_size(gv, nextra),
               .N = N,
               .nextra = nextra,
               .ti = ti,
               .v = gv,
               .strides = gb->type->strides,
               .span = 1 };
  for (int i = 0; i < nextra; i++) { /* a constant extra index (the unrolled K step, the swizzle store's
                                      * block 0): only its value */
    if (i == ti) continue;
    if (!kl_emit_const_of(op->opnds[2 + i].value, &p.fixed[i]) || p.fixed[i] < 0 || p.fixed[i] >= kl_view_size(gv, i))
      p.fixed[i] = -1;
    if (p.fixed[i] < 0) p.E *= kl_view_size(gv, i);
  }
  for (int i = 0; i < gb->type->rank; i++) p.span += (gb->type->shape[i] - 1) * gb->type->strides[i];
  if (store) /* a store asks for at most N: fewer matrices where the tile's count needs it (each
              * matrix's condition is the same at any N) */
    while (N > 1 && p.n % (2 * N)) N /= 2;
  p.N = N;
  if (p.T % 32 || p.n % (2 * N) || kl_view_size(pv, 0) != p.n || p.T * p.E * p.n > (1 << 22)) goto out;
  p.addr = kl_xmalloc(sizeof *p.addr * p.T * p.E * p.n);
  for (int64_t t = 0; t < p.T; t++)
    for (int64_t e = 0; e < p.E; e++)
      for (int64_t it = 0; it < p.n; it++) {
        int64_t up[KL_VIEW_MAX_DIMS];
        bool valid = true;
        upper_of(&p, t, e, it, up);
        int64_t a = kl_view_eval_addr(gv, up, p.strides, &valid);
        p.addr[(t * p.E + e) * p.n + it] = valid ? a : -1;
      }
  bool trans = false;
  if (!prove(&p, false)) {
    if (!prove(&p, true)) goto out;
    trans = true;
  }
  kl_ll L;
  kl_ll_init(&L, rw, op->loc, unroll);
  kl_emitter *e = &L.e;
  kl_value *lane = kl_emit_remi(e, tid, 32), *r = kl_emit_remi(e, lane, 8);
  kl_value *j = kl_emit_remi(e, kl_emit_divi(e, lane, 8), N), *base = kl_emit_sub(e, tid, lane);
  emit_st s = {
    .lds = gb, .regs = pb, .nextra = nextra, .gv = gv, .pv = pv, .N = N, .trans = trans, .store = store, .ti = ti
  };
  s.tid2 = kl_emit_add(e, base, trans ? kl_emit_divi(e, r, 2) : kl_emit_muli(e, r, 4));
  s.itoff = kl_emit_muli(e, j, 2);
  if (trans) s.itoff = kl_emit_add(e, s.itoff, kl_emit_remi(e, r, 2));
  for (int i = 0; i < nextra; i++) s.extra[i] = op->opnds[2 + i].value;
  s.vt = kl_type_vector(L.ctx, gb->type->elem, (int)(2 * N));
  kl_ll_for(&L, kl_ll_idx(&L, 0), kl_ll_idx(&L, p.n), 2 * N, 0, NULL, group_body, &s);
  record(rw, op, store, true);
  kl_rewriter_erase_op(rw, op);
  ret = 1;
out:
  if (ret == 0) record(rw, op, store, false);
  free(p.addr);
  kl_view_free(gv);
  kl_view_free(pv);
  return ret;
}

int kl__ll_lower_ldmatrix_read(kl_op *op, kl_rewriter *rw, int64_t unroll) {
  return lower_matrix(op, rw, unroll, false);
}
int kl__ll_lower_stmatrix_write(kl_op *op, kl_rewriter *rw, int64_t unroll) {
  return lower_matrix(op, rw, unroll, true);
}
