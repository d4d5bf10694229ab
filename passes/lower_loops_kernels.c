/* lower_loops_kernels.c — rock-lower-loops for whole-op kernels: rock.elementwise on
 * global buffers (vectorized, lower_loops_elementwise.c), rock.reduce and rock.softmax
 * that reach the pass without a GEMM.
 *
 * Grid decomposition of the point-wise fallbacks below (per kernel func; target = the
 * func's "target" attribute, else the module's, else "host"). The iteration space is the
 * output's points (softmax: the rows, i.e. every coordinate but the axis), each point
 * costing w elements of work:
 *   host: block_size 1; the points are taken as rows of the last dim (L = its size);
 *         when a row costs at most 4096 (L * w), a workgroup handles R = 4096 / (L * w)
 *         consecutive rows:
 *           for row in [bid*R, min(bid*R + R, rows)): coords(row) ; for l in [0, L): point
 *         else every row is split into chunks of CH = max(1, 4096 / w) points, one
 *         chunk per workgroup (bid = row * chunks + chunk).
 *   GPUs: block_size 256, one point per thread:
 *           f = bid*256 + tid; if f < numel: point(coords(f))
 * block_size and grid_size are set on the kernel func.
 * rock.reduce and rock.softmax are blockwise kernels (lower_loops_reduce.c: a group of
 * threads per output row, vector loads, cross-lane and LDS combines, online softmax);
 * what that file does not take (rank 0, no reduced axis, empty tensors, host reductions
 * whose innermost dim is kept) is one point per iteration as above: reduce loops over
 * the reduced extent accumulating in f32 (f64 for f64 input, i64 for integers; on the
 * host with the innermost dim kept, a point is V consecutive outputs along it, V the
 * vector length both views allow there, accumulated lane-wise in vectors) and
 * stores sum / max / min / mean (= sum / count); softmax makes three passes over the
 * row: max, sum of exp(x - max), then exp(x - max) / sum (math.exp, in f32 or f64). */
#include "passes/lower_loops.h"
#include "passes/lower_loops_reduce.h"
#include "core/dialect_builtin.h"
#include "core/dialect_rock.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

kl_value *kl__ll_inline_body(kl_ll *L, kl_region *r, kl_value *const *args);
bool kl__ll_lower_ew_kernel(kl_ll *L, kl_op *op, kl_op *func, const kl_target *t); /* lower_loops_elementwise.c */

#define HOST_CHUNK 4096
#define GPU_BLOCK  256

bool kl__ll_is_whole_op(kl_op *op) {
  if (!strcmp(op->name, "rock.reduce") || !strcmp(op->name, "rock.softmax")) return true;
  if (!strcmp(op->name, "rock.elementwise") && op->nopnds >= 1)
    return kl_ll_space(op->opnds[op->nopnds - 1].value) == KL_SPACE_GLOBAL;
  return false;
}


/* ---- the parallel iteration ---- */
typedef void (*point_fn)(kl_ll *L, kl_value *const *coords, void *ud);
typedef struct {
  int r;
  const int64_t *S;
  point_fn fn;
  void *ud;
  kl_value *outer[KL_MAX_RANK];
} par_st;

/* coords[0..r) of flat index f over shape S (row-major). */
static void delinearize(kl_ll *L, kl_value *f, int r, const int64_t *S, kl_value **c) {
  for (int i = r - 1; i > 0; i--) {
    c[i] = kl_emit_remi(&L->e, f, S[i]);
    f = kl_emit_divi(&L->e, f, S[i]);
  }
  if (r > 0) c[0] = f;
}
static void host_inner(kl_ll *L, kl_value *l, kl_value **carry, void *ud) {
  par_st *s = ud;
  s->outer[s->r - 1] = l;
  s->fn(L, s->outer, s->ud);
}
static void host_row(kl_ll *L, kl_value *row, kl_value **carry, void *ud) {
  par_st *s = ud;
  delinearize(L, row, s->r - 1, s->S, s->outer);
  kl_ll_for(L, kl_ll_idx(L, 0), kl_ll_idx(L, s->S[s->r - 1]), 1, 0, NULL, host_inner, s);
}
typedef struct {
  par_st *p;
  kl_value *bid, *tid;
  int64_t e, numel;
} gpu_st;
static void gpu_elem(kl_ll *L, kl_value *j, kl_value **carry, void *ud) {
  gpu_st *g = ud;
  kl_emitter *e = &L->e;
  kl_value *f = kl_emit_add(e, kl_emit_muli(e, kl_emit_add(e, kl_emit_muli(e, g->bid, g->e), j), GPU_BLOCK), g->tid);
  kl_op *ifop = kl_ll_if_begin(L, kl_emit_cmp(e, "lt", f, kl_ll_idx(L, g->numel)));
  kl_value *c[KL_MAX_RANK];
  delinearize(L, f, g->p->r, g->p->S, c);
  g->p->fn(L, c, g->p->ud);
  kl_ll_if_end(L, ifop);
}

/* Emits the iteration over the points of S for target t and sets block/grid sizes on the
 * kernel func. per_elem: work per point (elements touched). */
static void parallel_points(kl_ll *L, kl_op *func, const kl_target *t, int r, const int64_t *S, int64_t per_elem,
                            point_fn fn, void *ud) {
  int64_t numel = 1;
  for (int i = 0; i < r; i++) numel *= S[i];
  const kl_type *idx = kl_type_index(L->ctx);
  kl_value *bid = kl_op_result(kl_rewriter_create(L->e.rw, "rock.workgroup_id", L->e.loc, 0, NULL, 1, &idx, 0, NULL, 0),
                               0);
  par_st s = { .r = r, .S = S, .fn = fn, .ud = ud };
  int64_t grid = 1, block = 1;
  int64_t save = L->unroll;
  L->unroll = 1; /* whole-op loops are left to LLVM (trip-count-1 loops still vanish) */
  if (numel == 0) {
    /* nothing to do: one empty workgroup */
  } else if (r == 0) {
    fn(L, NULL, ud);
  } else if (t->arch == KL_ARCH_HOST) {
    int64_t inner = S[r - 1], rows = numel / inner, w = per_elem < 1 ? 1 : per_elem;
    if (inner * w <= HOST_CHUNK) {
      /* whole rows: R consecutive rows per workgroup */
      int64_t R = HOST_CHUNK / (inner * w);
      if (R > rows) R = rows;
      grid = (rows + R - 1) / R;
      kl_value *row0 = kl_emit_muli(&L->e, bid, R);
      kl_value *end = grid == 1 ? kl_ll_idx(L, rows)
                                : kl_ll_min_index(L, kl_emit_add(&L->e, row0, kl_ll_idx(L, R)), kl_ll_idx(L, rows));
      kl_ll_for(L, row0, end, 1, 0, NULL, host_row, &s);
    } else {
      /* long rows: each workgroup takes a chunk of CH points of one row */
      int64_t CH = HOST_CHUNK / w < 1 ? 1 : HOST_CHUNK / w, nch = (inner + CH - 1) / CH;
      grid = rows * nch;
      kl_value *row = kl_emit_divi(&L->e, bid, nch), *ch = kl_emit_remi(&L->e, bid, nch);
      delinearize(L, row, r - 1, S, s.outer);
      kl_value *l0 = kl_emit_muli(&L->e, ch, CH);
      kl_value *end = kl_ll_min_index(L, kl_emit_add(&L->e, l0, kl_ll_idx(L, CH)), kl_ll_idx(L, inner));
      kl_ll_for(L, l0, end, 1, 0, NULL, host_inner, &s);
    }
  } else {
    block = GPU_BLOCK;
    kl_value *tid = kl_op_result(
        kl_rewriter_create(L->e.rw, "rock.workitem_id", L->e.loc, 0, NULL, 1, &idx, 0, NULL, 0), 0);
    int64_t e = 1;
    grid = (numel + GPU_BLOCK * e - 1) / (GPU_BLOCK * e);
    gpu_st g = { &s, bid, tid, e, numel };
    L->unroll = e;
    kl_ll_for(L, kl_ll_idx(L, 0), kl_ll_idx(L, e), 1, 0, NULL, gpu_elem, &g);
  }
  L->unroll = save;
  kl_rewriter_set_attr(L->e.rw, func, "block_size", kl_attr_int(L->ctx, block));
  kl_rewriter_set_attr(L->e.rw, func, "grid_size", kl_attr_int(L->ctx, grid));
}

/* ---- operand access ---- */
typedef struct {
  kl_value *buf;
  kl_view *v;
} access;
static bool make_access(kl_rewriter *rw, kl_op *op, int i, access *a) {
  char err[512];
  kl_value *val = op->opnds[i].value;
  if (val->type->kind != KL_TY_BUFFER) return kl_ll_fail(rw, op, "operand %d is not a buffer", i);
  if (val->type->rank == 0) {
    /* views between rank-0 buffers have no coordinates: the value is the buffer's one
     * element; a rank-0 view of a larger buffer (a reshape of a 1x1) goes through it */
    kl_op *ch[1];
    int nc;
    a->buf = kl_rock_underlying(val, ch, &nc, 0);
    a->v = NULL;
    if (a->buf->type->kind == KL_TY_BUFFER && a->buf->type->rank == 0) return true;
  }
  a->v = kl_ll_access_view(NULL, val, &a->buf, err, sizeof err);
  if (!a->v) return kl_ll_fail(rw, op, "operand %d: %s", i, err);
  return true;
}
static kl_value *acc_load(kl_ll *L, const access *a, kl_value *const *c) {
  if (!a->v) return kl_ll_load(L, a->buf, NULL, NULL, 1);
  return kl_ll_load_view(L, a->buf, a->v, c, 1);
}
static void acc_store(kl_ll *L, kl_value *x, const access *a, kl_value *const *c) {
  x = kl_ll_convert(L, x, a->buf->type->elem);
  if (!a->v)
    kl_ll_store(L, x, a->buf, NULL, NULL);
  else
    kl_ll_store_view(L, x, a->buf, a->v, c);
}

/* ---- reduce ---- */
typedef enum { R_SUM, R_MAX, R_MIN, R_MEAN } rkind;
typedef struct {
  access in, out;
  int r;
  const int64_t *Si;
  bool reduced[KL_MAX_RANK];
  int raxes[KL_MAX_RANK], nred;
  rkind kind;
  const kl_type *acc;
  int64_t count;
  kl_value *coords[KL_MAX_RANK];
  int level;
  int64_t V; /* host, innermost dim kept: V consecutive output points per iteration (vectors) */
} red_st;
/* t, or vector<V x t> */
static const kl_type *red_vt(kl_ll *L, const red_st *s, const kl_type *t) {
  return s->V > 1 ? kl_type_vector(L->ctx, t, (int)s->V) : t;
}
static kl_value *red_load(kl_ll *L, red_st *s) {
  if (!s->in.v) return kl_ll_load(L, s->in.buf, NULL, NULL, 1);
  return kl_ll_load_view(L, s->in.buf, s->in.v, s->coords, s->V);
}
static kl_value *combine(kl_ll *L, rkind k, kl_value *a, kl_value *x) {
  bool f = kl_type_is_float(a->type->kind == KL_TY_VECTOR ? a->type->elem : a->type);
  const char *name = k == R_MAX ? (f ? "arith.maxf" : "arith.maxsi")
      : k == R_MIN              ? (f ? "arith.minf" : "arith.minsi")
                                : (f ? "arith.addf" : "arith.addi");
  return kl_ll_op2(L, name, a, x, a->type);
}
static void red_level(kl_ll *L, kl_value *iv, kl_value **carry, void *ud) {
  red_st *s = ud;
  s->coords[s->raxes[s->level]] = iv;
  if (s->level + 1 < s->nred) {
    s->level++;
    kl_ll_for(L, kl_ll_idx(L, 0), kl_ll_idx(L, s->Si[s->raxes[s->level]]), 1, 1, carry, red_level, s);
    s->level--;
    return;
  }
  kl_value *x = kl_ll_convert(L, red_load(L, s), s->acc);
  carry[0] = combine(L, s->kind, carry[0], x);
}
static void red_point(kl_ll *L, kl_value *const *c, void *ud) {
  red_st *s = ud;
  kl_value *oc[KL_MAX_RANK];
  for (int i = 0; i < s->r; i++) s->coords[i] = oc[i] = c[i];
  if (s->V > 1) s->coords[s->r - 1] = oc[s->r - 1] = kl_emit_muli(&L->e, c[s->r - 1], s->V);
  const kl_type *vacc = red_vt(L, s, s->acc);
  double init = 0;
  bool f = kl_type_is_float(s->acc);
  if (s->kind == R_MAX) init = f ? -INFINITY : -9.2233720368547758e18;
  if (s->kind == R_MIN) init = f ? INFINITY : 9.2233720368547758e18;
  kl_value *a = f ? kl_ll_const(L, vacc, init) : kl_ll_const(L, vacc, 0);
  if (!f && (s->kind == R_MAX || s->kind == R_MIN)) {
    kl_ctx *ctx = L->ctx;
    kl_named_attr na = { "value", kl_attr_int_typed(ctx, s->kind == R_MAX ? INT64_MIN : INT64_MAX, s->acc) };
    a = kl_op_result(kl_rewriter_create(L->e.rw, "arith.constant", L->e.loc, 0, NULL, 1, &vacc, 1, &na, 0), 0);
  }
  if (s->nred == 0) {
    kl_value *x = kl_ll_convert(L, red_load(L, s), s->acc);
    a = combine(L, s->kind, a, x);
  } else {
    s->level = 0;
    kl_ll_for(L, kl_ll_idx(L, 0), kl_ll_idx(L, s->Si[s->raxes[0]]), 1, 1, &a, red_level, s);
  }
  if (s->kind == R_MEAN) {
    const kl_type *ot = s->out.buf->type->elem;
    if (f)
      a = kl_ll_op2(L, "arith.divf", a, kl_ll_const(L, vacc, (double)s->count), vacc);
    else if (kl_type_is_float(ot)) {
      const kl_type *f64 = red_vt(L, s, kl_type_f64(L->ctx));
      a = kl_ll_op2(L, "arith.divf", kl_ll_convert(L, a, kl_type_f64(L->ctx)), kl_ll_const(L, f64, (double)s->count),
                    f64);
    } else
      a = kl_ll_op2(L, "arith.divsi", a, kl_ll_const(L, vacc, (double)s->count), vacc);
  }
  acc_store(L, a, &s->out, oc);
}

/* ---- softmax ---- */
typedef struct {
  access in, out;
  int axis, r;
  int64_t len;
  const kl_type *acc;
  kl_value *coords[KL_MAX_RANK];
  kl_value *mx, *sum;
  int phase;
} sm_st;
static void sm_iter(kl_ll *L, kl_value *iv, kl_value **carry, void *ud) {
  sm_st *s = ud;
  s->coords[s->axis] = iv;
  kl_value *x = kl_ll_convert(L, acc_load(L, &s->in, s->coords), s->acc);
  if (s->phase == 0) {
    carry[0] = kl_ll_op2(L, "arith.maxf", carry[0], x, s->acc);
    return;
  }
  kl_value *e = kl_ll_op1(L, "math.exp", kl_ll_op2(L, "arith.subf", x, s->mx, s->acc), s->acc);
  if (s->phase == 1) {
    carry[0] = kl_ll_op2(L, "arith.addf", carry[0], e, s->acc);
    return;
  }
  acc_store(L, kl_ll_op2(L, "arith.divf", e, s->sum, s->acc), &s->out, s->coords);
}
static void sm_point(kl_ll *L, kl_value *const *c, void *ud) {
  sm_st *s = ud;
  for (int i = 0; i < s->r; i++) s->coords[i] = c[i];
  kl_value *mx = kl_ll_const(L, s->acc, -INFINITY), *sum = kl_ll_const(L, s->acc, 0);
  s->phase = 0;
  kl_ll_for(L, kl_ll_idx(L, 0), kl_ll_idx(L, s->len), 1, 1, &mx, sm_iter, s);
  s->mx = mx;
  s->phase = 1;
  kl_ll_for(L, kl_ll_idx(L, 0), kl_ll_idx(L, s->len), 1, 1, &sum, sm_iter, s);
  s->sum = sum;
  s->phase = 2;
  kl_ll_for(L, kl_ll_idx(L, 0), kl_ll_idx(L, s->len), 1, 0, NULL, sm_iter, s);
}

static bool same_shape(const kl_type *a, const kl_type *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

/* The fused parts of a rock.reduce / rock.softmax with a prologue and an epilogue body
 * (core/dialect_rock.h): accesses of every operand but the output into f (freed by
 * fused_free). Returns false after a diagnostic. */
#define FUSED_MAX 64
typedef struct {
  access a[FUSED_MAX];
  kl_value *buf[FUSED_MAX];
  const kl_view *v[FUSED_MAX];
  bool res_arg[FUSED_MAX];
  int n;
} fused_acc;
static void fused_free(fused_acc *f) {
  for (int i = 0; i < f->n; i++) kl_view_free(f->a[i].v);
}
/* The element type of the reduction's input: operand 0's, or what the prologue yields. */
static const kl_type *fused_in_elem(kl_op *op) {
  if (op->nregions == 2 && op->regions[0].first && op->regions[0].first->last &&
      op->regions[0].first->last->nopnds == 1)
    return op->regions[0].first->last->opnds[0].value->type;
  return op->opnds[0].value->type->elem;
}
static bool fused_parts(kl_rewriter *rw, kl_op *op, fused_acc *f, kl_red_desc *d) {
  if (op->nregions == 0) return true;
  int64_t np = 0, ra[FUSED_MAX];
  int nr = kl_op_attr_i64s(op, "result_args", ra, FUSED_MAX);
  kl_op_attr_i64(op, "n_prologue", &np);
  if (op->nopnds - 1 > FUSED_MAX) return kl_ll_fail(rw, op, "too many fused inputs (at most %d)", FUSED_MAX);
  for (int i = 0; i + 1 < op->nopnds; i++) {
    if (!make_access(rw, op, i, &f->a[i])) return false;
    f->n = i + 1;
    if (!f->a[i].v) return kl_ll_fail(rw, op, "fused operand %d must be a buffer of rank >= 1", i);
    f->buf[i] = f->a[i].buf;
    f->v[i] = f->a[i].v;
  }
  kl_block *eb = op->regions[1].first;
  memset(f->res_arg, 0, sizeof f->res_arg);
  for (int i = 0; i < nr; i++) f->res_arg[ra[i]] = true;
  d->npro = (int)np;
  d->nepi = op->nopnds - 1 - (int)np;
  d->pro_buf = f->buf;
  d->pro_v = f->v;
  d->epi_buf = f->buf + np;
  d->epi_v = f->v + np;
  d->pro = &op->regions[0];
  d->epi = &op->regions[1];
  d->res_arg = f->res_arg;
  d->res_t = eb->args[ra[0]]->type;
  d->row_out = kl_op_attr(op, "row_out") != NULL;
  d->in_buf = f->buf[0];
  d->in_v = f->v[0];
  return true;
}

bool kl__ll_lower_whole_op(kl_op *op, kl_rewriter *rw, int64_t unroll) {
  kl_op *func = kl_ll_func_of(op);
  char err[512];
  const kl_target *t = kl_ll_target_of(func, err, sizeof err);
  if (!t) return kl_ll_fail(rw, op, "%s", err);
  kl_ll L;
  kl_ll_init(&L, rw, op->loc, unroll);
  bool ok = true;
  if (!strcmp(op->name, "rock.elementwise")) {
    ok = kl__ll_lower_ew_kernel(&L, op, func, t);
  } else if (!strcmp(op->name, "rock.reduce")) {
    if (op->nopnds != 2 && !op->nregions) return kl_ll_fail(rw, op, "needs operands (in, out)");
    int oi = op->nopnds - 1;
    bool row_out = kl_op_attr(op, "row_out") != NULL;
    const kl_type *ti = op->opnds[0].value->type, *to = op->opnds[oi].value->type;
    if (ti->kind != KL_TY_BUFFER || to->kind != KL_TY_BUFFER || ti->rank != to->rank) /* rank 0: one point, no axes */
      return kl_ll_fail(rw, op, "in and out must be buffers of one rank, got %s and %s", kl_type_str(ti),
                        kl_type_str(to));
    const char *k = kl_op_attr_string(op, "kind");
    red_st s = { .r = ti->rank, .Si = ti->shape, .count = 1 };
    if (!k) return kl_ll_fail(rw, op, "needs a string attribute 'kind' (sum, max, min or mean)");
    if (!strcmp(k, "sum"))
      s.kind = R_SUM;
    else if (!strcmp(k, "max"))
      s.kind = R_MAX;
    else if (!strcmp(k, "min"))
      s.kind = R_MIN;
    else if (!strcmp(k, "mean"))
      s.kind = R_MEAN;
    else
      return kl_ll_fail(rw, op, "unknown reduction kind '%s' (sum, max, min or mean)", k);
    int64_t axes[KL_MAX_RANK];
    int na = kl_op_attr_i64s(op, "axes", axes, KL_MAX_RANK);
    if (na < 0) return kl_ll_fail(rw, op, "needs an integer array attribute 'axes'");
    for (int i = 0; i < na; i++) {
      int64_t a = axes[i] < 0 ? axes[i] + s.r : axes[i];
      if (a < 0 || a >= s.r || s.reduced[a])
        return kl_ll_fail(rw, op, "bad or repeated axis %lld for rank %d", (long long)axes[i], s.r);
      s.reduced[a] = true;
    }
    for (int d = 0; d < s.r; d++) {
      if (s.reduced[d]) {
        s.raxes[s.nred++] = d;
        s.count *= ti->shape[d];
      }
      if (to->shape[d] != (s.reduced[d] && !row_out ? 1 : ti->shape[d]))
        return kl_ll_fail(rw, op, "out %s must have in's shape %s with the reduced axes of size 1", to->text, ti->text);
    }
    s.acc = kl_ll_float_acc(L.ctx, fused_in_elem(op));
    if (!make_access(rw, op, 0, &s.in)) return false;
    if (!make_access(rw, op, oi, &s.out)) {
      kl_view_free(s.in.v);
      return false;
    }
    kl_red_desc d = { .kind = s.kind == R_SUM ? KL_RED_SUM
                          : s.kind == R_MAX   ? KL_RED_MAX
                          : s.kind == R_MIN   ? KL_RED_MIN
                                              : KL_RED_MEAN,
                      .in_buf = s.in.buf,
                      .out_buf = s.out.buf,
                      .in_v = s.in.v,
                      .out_v = s.out.v,
                      .r = s.r,
                      .S = ti->shape,
                      .acc = s.acc,
                      .count = s.count };
    memcpy(d.reduced, s.reduced, sizeof d.reduced);
    fused_acc fa = { .n = 0 };
    if (!fused_parts(rw, op, &fa, &d) || (op->nregions && !kl__ll_blockwise_reduce(&L, func, t, &d))) {
      fused_free(&fa);
      kl_view_free(s.in.v);
      kl_view_free(s.out.v);
      return op->nregions && fa.n == op->nopnds - 1
          ? kl_ll_fail(rw, op, "a fused reduction needs a non-empty input of rank >= 1 with a reduced axis")
          : false;
    }
    fused_free(&fa);
    if (!op->nregions && !kl__ll_blockwise_reduce(&L, func, t, &d)) {
      /* host, innermost dim kept: vectors of consecutive output points (as wide as both
       * views allow along it), each lane its own reduction */
      int64_t S2[KL_MAX_RANK];
      s.V = 1;
      if (t->arch == KL_ARCH_HOST && s.r >= 1 && !s.reduced[s.r - 1] && s.in.v && s.out.v) {
        int64_t vi = kl_ll_vector_len(s.in.v, s.in.buf, s.r - 1), vo = kl_ll_vector_len(s.out.v, s.out.buf, s.r - 1);
        s.V = vi < vo ? vi : vo;
      }
      for (int i = 0; i < to->rank; i++) S2[i] = to->shape[i] / (i == to->rank - 1 ? s.V : 1);
      parallel_points(&L, func, t, to->rank, S2, s.count * s.V, red_point, &s);
    }
    kl_view_free(s.in.v);
    kl_view_free(s.out.v);
  } else if (!strcmp(op->name, "rock.softmax")) {
    if (op->nopnds != 2 && !op->nregions) return kl_ll_fail(rw, op, "needs operands (in, out)");
    int oi = op->nopnds - 1;
    const kl_type *ti = op->opnds[0].value->type, *to = op->opnds[oi].value->type;
    if (ti->kind != KL_TY_BUFFER || to->kind != KL_TY_BUFFER || !same_shape(ti, to) || ti->rank < 1)
      return kl_ll_fail(rw, op, "in and out must be buffers of one shape and rank >= 1, got %s and %s", kl_type_str(ti),
                        kl_type_str(to));
    if (!kl_type_is_float(to->elem)) return kl_ll_fail(rw, op, "the output must be a float buffer, got %s", to->text);
    int64_t axis;
    if (!kl_op_attr_i64(op, "axis", &axis)) return kl_ll_fail(rw, op, "needs an integer attribute 'axis'");
    if (axis < 0) axis += ti->rank;
    if (axis < 0 || axis >= ti->rank) return kl_ll_fail(rw, op, "axis out of range for rank %d", ti->rank);
    sm_st s = { .axis = (int)axis, .r = ti->rank, .len = ti->shape[axis] };
    s.acc = fused_in_elem(op)->kind == KL_TY_F64 || to->elem->kind == KL_TY_F64 ? kl_type_f64(L.ctx)
                                                                                : kl_type_f32(L.ctx);
    if (!make_access(rw, op, 0, &s.in)) return false;
    if (!make_access(rw, op, oi, &s.out)) {
      kl_view_free(s.in.v);
      return false;
    }
    int64_t rows[KL_MAX_RANK];
    for (int i = 0; i < ti->rank; i++) rows[i] = i == axis ? 1 : ti->shape[i];
    kl_red_desc d = { .kind = KL_RED_SOFTMAX,
                      .in_buf = s.in.buf,
                      .out_buf = s.out.buf,
                      .in_v = s.in.v,
                      .out_v = s.out.v,
                      .r = s.r,
                      .S = ti->shape,
                      .acc = s.acc,
                      .count = s.len };
    d.reduced[axis] = true;
    fused_acc fa = { .n = 0 };
    if (!fused_parts(rw, op, &fa, &d) || (op->nregions && !kl__ll_blockwise_reduce(&L, func, t, &d))) {
      fused_free(&fa);
      kl_view_free(s.in.v);
      kl_view_free(s.out.v);
      return op->nregions && fa.n == op->nopnds - 1 ? kl_ll_fail(rw, op, "a fused softmax needs a non-empty input")
                                                    : false;
    }
    fused_free(&fa);
    if (!op->nregions && !kl__ll_blockwise_reduce(&L, func, t, &d))
      parallel_points(&L, func, t, ti->rank, rows, 3 * s.len, sm_point, &s);
    kl_view_free(s.in.v);
    kl_view_free(s.out.v);
  } else {
    return kl_ll_fail(rw, op, "not a whole-op kernel op");
  }
  if (!ok) return false;
  kl_rewriter_erase_op(rw, op);
  return true;
}
