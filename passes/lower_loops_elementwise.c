/* lower_loops_elementwise.c — rock-lower-loops for element-wise kernels (a rock.elementwise
 * writing a global buffer; called from lower_loops_kernels.c).
 *
 * Vectors. Every operand is addressed through its flat access view (kl_ll_flat_access: the
 * flat index of the output's points down to the coordinates of its underlying buffer). The
 * flat index runs over the output's dims in its memory order (outermost first) where the
 * output is a buffer with a dense permuted layout (an NHWC result of NCHW-ordered graph ops:
 * consecutive points are consecutive addresses, so its accesses and those of operands in the
 * same layout are vectors, coalesced), else in dim order.
 * Each operand's view gives the longest vector it allows along the flat index, vl
 * (kl_view_vector_len with the buffer's strides, capped at 16 bytes of that operand's
 * elements; a power of two dividing numel). The kernel's vector length V is the largest
 * vl: a point of the loop is V consecutive flat indices, the body applied lane-wise on
 * vector<V> values (its ops re-created on vector types; a body with an op that has no
 * vector form, integer pow, makes V = 1). An operand with vl < V is accessed as V / vl
 * vectors of vl elements (vector<1> for one element), joined (vector.shuffle) into, or
 * split out of, the vector<V>: every access is as wide as its own view allows, e.g. an
 * f16 input of an f32 output reads 16 bytes and the f32 side two 16-byte vectors, a
 * transposed input one element at a time next to 16-byte accesses of the others. Inputs
 * of one element (rank 0, or broadcast from a one-element buffer, valid at every point) are
 * loaded as one value and broadcast (one behind a pad, a concat's piece, is accessed like
 * any other operand). Vector accesses are aligned to their size: the analysis only accepts
 * blocks whose first address is a multiple of the length, and GPU buffers are device
 * allocations (256-byte aligned).
 *
 * Iteration over the nvec = numel / V vectors:
 *   GPUs: block_size 256, U vectors per thread (for nvec > 16384: 4 when V elements of the
 *         widest operand are at most 16 bytes, 2 up to 32, else 1; else 1), vector j of
 *         thread tid in workgroup bid is c = (bid*U + j)*256 + tid (coalesced). The first
 *         nfull = nvec / (256*U) workgroups are full: they load all U vectors of every
 *         input first (U loads in flight per input), then compute and store, without a
 *         bounds check. Only the last, partial workgroup checks c < nvec per vector.
 *   host: block_size 1; each workgroup takes CH = max(1, 4096 / V) consecutive vectors:
 *         for c in [bid*CH, min(bid*CH + CH, nvec)): vector c (the bound is the check).
 * block_size and grid_size are set on the kernel func. */
#include "passes/lower_loops.h"
#include "core/dialect_builtin.h"
#include "core/dialect_rock.h"
#include "core/shape.h"
#include <stdio.h>
#include <string.h>

kl_value *kl__ll_inline_body(kl_ll *L, kl_region *r, kl_value *const *args);

#define EW_MAX_OPERANDS 64
#define EW_GPU_BLOCK    256
#define EW_HOST_CHUNK   4096
#define EW_MAX_BYTES    16
#define EW_MAX_UNROLL   4
#define EW_MAX_LANES    16 /* 16 bytes of one-byte elements */

typedef struct {
  kl_value *buf;
  kl_view *v;   /* flat view; for a rank-0 operand its rank-0 view or NULL (the buffer itself) */
  bool scalar;  /* a rank-0 operand: one value */
  bool uniform; /* the underlying buffer has one element (a broadcast scalar): loaded once per vector */
  int64_t vl;   /* the width of one access: the longest vector this operand's view allows, <= V */
} ew_acc;
typedef struct {
  kl_op *op;
  int n; /* operands: inputs, then the output */
  ew_acc acc[EW_MAX_OPERANDS];
  int64_t V;
  int64_t vbytes; /* bytes of the widest operand's V elements */
} ew_st;

static int64_t storage_bytes(const kl_type *t) {
  int64_t b = (kl_type_bits(t) + 7) / 8;
  return b < 1 ? 1 : b;
}

/* The longest vector the operand's view allows (16-byte cap). */
static int64_t acc_vlen(const ew_acc *a) {
  if (a->scalar || a->uniform) return INT64_MAX;
  const kl_type *bt = a->buf->type;
  int64_t cap = EW_MAX_BYTES / storage_bytes(bt->elem);
  int64_t r = kl_view_vector_len(a->v, 0, bt->strides, cap < 1 ? 1 : cap);
  return r < 1 ? 1 : r;
}

/* True if every op of the body has a lane-wise vector form. */
bool kl__ll_body_vectorizes(kl_region *r) {
  for (kl_op *x = r->first->first; x; x = x->next) {
    if (!strcmp(x->name, "rock.yield")) continue;
    if (x->nregions || !strcmp(x->name, "math.ipowi") || x->nresults > 4 || x->nopnds > 16) return false;
    for (int i = 0; i < x->nopnds; i++) { /* values of the body only (they all get vector forms) */
      kl_value *v = x->opnds[i].value;
      if (v->def ? v->def->block != r->first : v->block != r->first) return false;
    }
    for (int i = 0; i < x->nresults; i++) {
      const kl_type *t = x->results[i].type;
      if (t->kind == KL_TY_VECTOR || t->kind == KL_TY_INDEX || t->kind == KL_TY_BUFFER) return false;
    }
  }
  return true;
}

/* The body applied lane-wise to vector<V x T> arguments: each op re-created with the
 * vector form of its result types (constants become splats). */
kl_value *kl__ll_inline_vector_body(kl_ll *L, kl_region *r, kl_value *const *args, int64_t V) {
  kl_block *b = r->first;
  kl_value_map map = { 0 };
  for (int i = 0; i < b->nargs; i++) kl_value_map_set(&map, b->args[i], args[i]);
  kl_value *res = NULL;
  for (kl_op *x = b->first; x; x = x->next) {
    if (!strcmp(x->name, "rock.yield")) {
      res = kl_value_map_get(&map, x->opnds[0].value);
      break;
    }
    kl_value *o[16];
    const kl_type *rt[4];
    int no = x->nopnds < 16 ? x->nopnds : 16, nr = x->nresults < 4 ? x->nresults : 4;
    for (int i = 0; i < no; i++) {
      kl_value *m = kl_value_map_get(&map, x->opnds[i].value);
      o[i] = m ? m : x->opnds[i].value;
    }
    for (int i = 0; i < nr; i++) rt[i] = kl_type_vector(L->ctx, x->results[i].type, (int)V);
    kl_op *y = kl_rewriter_create(L->e.rw, x->name, x->loc, no, o, nr, rt, x->nattrs, x->attrs, 0);
    for (int i = 0; i < nr; i++) kl_value_map_set(&map, &x->results[i], &y->results[i]);
  }
  kl_value_map_free(&map);
  return res;
}

static kl_value *shuffle(kl_ll *L, kl_value *x, kl_value *y, int64_t first, int64_t n) {
  int64_t mask[EW_MAX_LANES];
  for (int64_t i = 0; i < n; i++) mask[i] = first + i;
  kl_value *o[2] = { x, y };
  kl_named_attr a = { "mask", kl_attr_i64_array(L->ctx, (int)n, mask) };
  const kl_type *rt = kl_type_vector(L->ctx, x->type->elem, (int)n);
  return kl_op_result(kl_rewriter_create(L->e.rw, "vector.shuffle", L->e.loc, 2, o, 1, &rt, 1, &a, 0), 0);
}
/* One access of a->vl elements at flat index f, as vector<vl> (vector<1> for one element). */
static kl_value *load_piece(kl_ll *L, const ew_acc *a, kl_value *f) {
  kl_value *x = kl_ll_load_view(L, a->buf, a->v, &f, a->vl);
  return a->vl > 1 ? x : kl_ll_op1(L, "vector.broadcast", x, kl_type_vector(L->ctx, x->type, 1));
}
static kl_value *ew_load(kl_ll *L, ew_st *s, int i, kl_value *f) {
  const ew_acc *a = &s->acc[i];
  if (a->scalar || (a->uniform && s->V > 1)) {
    kl_value *x = !a->v ? kl_ll_load(L, a->buf, NULL, NULL, 1)
        : a->scalar     ? kl_ll_load_view(L, a->buf, a->v, NULL, 1)
                        : kl_ll_load_view(L, a->buf, a->v, &f, 1);
    return s->V > 1 ? kl_ll_op1(L, "vector.broadcast", x, kl_type_vector(L->ctx, x->type, (int)s->V)) : x;
  }
  if (a->vl == s->V) return kl_ll_load_view(L, a->buf, a->v, &f, s->V);
  /* V / vl accesses of vl elements, joined pairwise into vector<V> */
  kl_value *p[EW_MAX_LANES];
  int64_t m = s->V / a->vl;
  for (int64_t k = 0; k < m; k++) p[k] = load_piece(L, a, kl_emit_add(&L->e, f, kl_ll_idx(L, k * a->vl)));
  for (int64_t w = a->vl; m > 1; w *= 2, m /= 2)
    for (int64_t k = 0; k < m / 2; k++) p[k] = shuffle(L, p[2 * k], p[2 * k + 1], 0, 2 * w);
  return p[0];
}
static void ew_compute_store(kl_ll *L, ew_st *s, kl_value *const *args, kl_value *f) {
  kl_region *r = &s->op->regions[0];
  kl_value *x = s->V > 1 ? kl__ll_inline_vector_body(L, r, args, s->V) : kl__ll_inline_body(L, r, args);
  const ew_acc *a = &s->acc[s->n - 1];
  x = kl_ll_convert(L, x, a->buf->type->elem);
  if (!a->v)
    kl_ll_store(L, x, a->buf, NULL, NULL);
  else if (a->scalar || a->vl == s->V)
    kl_ll_store_view(L, x, a->buf, a->v, a->scalar ? NULL : &f);
  else /* V / vl accesses of vl elements */
    for (int64_t k = 0; k < s->V / a->vl; k++) {
      kl_value *fk = kl_emit_add(&L->e, f, kl_ll_idx(L, k * a->vl));
      kl_ll_store_view(L, shuffle(L, x, x, k * a->vl, a->vl), a->buf, a->v, &fk);
    }
}
/* Vector c: load, compute, store. */
static void ew_vector(kl_ll *L, ew_st *s, kl_value *c) {
  kl_value *f = kl_emit_muli(&L->e, c, s->V), *args[EW_MAX_OPERANDS];
  for (int i = 0; i + 1 < s->n; i++) args[i] = ew_load(L, s, i, f);
  ew_compute_store(L, s, args, f);
}
static void host_vector(kl_ll *L, kl_value *c, kl_value **carry, void *ud) {
  (void)carry;
  ew_vector(L, ud, c);
}

/* The U vectors of one thread; checked: each behind c < nvec, else all loads first. */
static void gpu_block(kl_ll *L, ew_st *s, kl_value *bid, kl_value *tid, int64_t U, int64_t nvec, bool checked) {
  kl_emitter *e = &L->e;
  kl_value *c[EW_MAX_UNROLL];
  for (int64_t j = 0; j < U; j++)
    c[j] = kl_emit_add(e, kl_emit_muli(e, kl_emit_add(e, kl_emit_muli(e, bid, U), kl_ll_idx(L, j)), EW_GPU_BLOCK), tid);
  if (checked) {
    for (int64_t j = 0; j < U; j++) {
      kl_op *ifop = kl_ll_if_begin(L, kl_emit_cmp(e, "lt", c[j], kl_ll_idx(L, nvec)));
      ew_vector(L, s, c[j]);
      kl_ll_if_end(L, ifop);
    }
    return;
  }
  kl_value *args[EW_MAX_UNROLL][EW_MAX_OPERANDS];
  kl_value *f[EW_MAX_UNROLL];
  for (int64_t j = 0; j < U; j++) f[j] = kl_emit_muli(e, c[j], s->V);
  for (int i = 0; i + 1 < s->n; i++)
    for (int64_t j = 0; j < U; j++) args[j][i] = ew_load(L, s, i, f[j]);
  for (int64_t j = 0; j < U; j++) ew_compute_store(L, s, args[j], f[j]);
}

static void emit_loops(kl_ll *L, kl_op *func, const kl_target *t, ew_st *s, int64_t numel) {
  const kl_type *idx = kl_type_index(L->ctx);
  kl_rewriter *rw = L->e.rw;
  kl_value *bid = kl_op_result(kl_rewriter_create(rw, "rock.workgroup_id", L->e.loc, 0, NULL, 1, &idx, 0, NULL, 0), 0);
  int64_t nvec = numel / s->V, grid = 1, block = 1, save = L->unroll;
  L->unroll = 1; /* loops are left to LLVM (trip-count-1 loops still vanish) */
  if (nvec == 0) {
    /* nothing to do: one empty workgroup */
  } else if (t->arch == KL_ARCH_HOST) {
    int64_t CH = EW_HOST_CHUNK / s->V < 1 ? 1 : EW_HOST_CHUNK / s->V;
    if (CH > nvec) CH = nvec;
    grid = (nvec + CH - 1) / CH;
    kl_value *c0 = kl_emit_muli(&L->e, bid, CH);
    kl_value *end = grid == 1 ? kl_ll_idx(L, nvec)
                              : kl_ll_min_index(L, kl_emit_add(&L->e, c0, kl_ll_idx(L, CH)), kl_ll_idx(L, nvec));
    kl_ll_for(L, c0, end, 1, 0, NULL, host_vector, s);
  } else {
    block = EW_GPU_BLOCK;
    kl_value *tid = kl_op_result(kl_rewriter_create(rw, "rock.workitem_id", L->e.loc, 0, NULL, 1, &idx, 0, NULL, 0), 0);
    int64_t U = nvec <= 16384 ? 1
        : s->vbytes <= 16     ? EW_MAX_UNROLL
        : s->vbytes <= 32     ? 2
                              : 1,
            per = EW_GPU_BLOCK * U, nfull = nvec / per;
    grid = (nvec + per - 1) / per;
    if (nfull == grid)
      gpu_block(L, s, bid, tid, U, nvec, false);
    else if (nfull == 0)
      gpu_block(L, s, bid, tid, U, nvec, true);
    else {
      kl_op *full = kl_ll_if_begin(L, kl_emit_cmp(&L->e, "lt", bid, kl_ll_idx(L, nfull)));
      gpu_block(L, s, bid, tid, U, nvec, false);
      kl_ll_if_end(L, full);
      kl_op *tail = kl_ll_if_begin(L, kl_emit_cmp(&L->e, "ge", bid, kl_ll_idx(L, nfull)));
      gpu_block(L, s, bid, tid, U, nvec, true);
      kl_ll_if_end(L, tail);
    }
  }
  L->unroll = save;
  kl_rewriter_set_attr(rw, func, "block_size", kl_attr_int(L->ctx, block));
  kl_rewriter_set_attr(rw, func, "grid_size", kl_attr_int(L->ctx, grid));
}

static bool make_acc(kl_rewriter *rw, kl_op *op, int i, int64_t numel, const int *order, ew_acc *a) {
  char err[512];
  kl_value *val = op->opnds[i].value;
  const kl_type *t = val->type;
  if (t->kind != KL_TY_BUFFER) return kl_ll_fail(rw, op, "operand %d is not a buffer", i);
  a->v = NULL;
  a->scalar = t->rank == 0;
  if (a->scalar) {
    /* views between rank-0 buffers have no coordinates: the value is the buffer's one
     * element; a rank-0 view of a larger buffer (a reshape of a 1x1) goes through it */
    kl_op *ch[1];
    int nc;
    a->buf = kl_rock_underlying(val, ch, &nc, 0);
    if (a->buf->type->kind == KL_TY_BUFFER && a->buf->type->rank == 0) return true;
    a->v = kl_ll_access_view(NULL, val, &a->buf, err, sizeof err);
    if (!a->v) return kl_ll_fail(rw, op, "operand %d: %s", i, err);
    return true;
  } else {
    a->v = kl_ll_flat_access_ordered(val, order, &a->buf, err, sizeof err);
    if (!a->v) return kl_ll_fail(rw, op, "operand %d: %s", i, err);
  }
  if (kl_view_size(a->v, 0) != numel) {
    kl_view_free(a->v);
    a->v = NULL;
    return kl_ll_fail(rw, op, "operand %d (%s) does not have the output's %lld elements", i, kl_type_str(t),
                      (long long)numel);
  }
  const kl_type *bt = a->buf->type;
  int64_t bn = 1;
  for (int d = 0; d < bt->rank; d++) bn *= bt->shape[d];
  /* an input of one element read at every point (a broadcast scalar); one behind a pad (a
   * concat's piece) is valid at some points only: its lanes differ, it is a plain access */
  a->uniform = i + 1 < op->nopnds && bn == 1 && kl_view_invalid_dims(a->v) == 0;
  return true;
}

bool kl__ll_lower_ew_kernel(kl_ll *L, kl_op *op, kl_op *func, const kl_target *t) {
  kl_rewriter *rw = L->e.rw;
  if (op->nopnds > EW_MAX_OPERANDS)
    return kl_ll_fail(rw, op, "too many operands (%d > %d)", op->nopnds, EW_MAX_OPERANDS);
  kl_block *b = op->regions[0].first;
  kl_op *y = b ? b->last : NULL;
  if (!y || strcmp(y->name, "rock.yield") || y->nopnds != 1)
    return kl_ll_fail(rw, op, "the body must end with rock.yield of one value");
  const kl_type *ot = op->opnds[op->nopnds - 1].value->type;
  if (ot->kind != KL_TY_BUFFER) return kl_ll_fail(rw, op, "the output is not a buffer");
  int64_t numel = 1;
  for (int i = 0; i < ot->rank; i++) numel *= ot->shape[i];
  ew_st s = { .op = op, .n = op->nopnds };
  bool ok = true;
  int i = 0;
  /* the output's memory order of its dims (operands all have the output's shape) */
  int perm[KL_MAX_RANK];
  const kl_value *ov = op->opnds[op->nopnds - 1].value;
  bool permuted = ot->rank > 1 && (!ov->def || !strcmp(ov->def->name, "rock.alloc")) && ot->strides &&
      kl_strides_to_perm(ot->rank, ot->shape, ot->strides, perm);
  if (numel > 0)
    for (; i < s.n && ok; i++) ok = make_acc(rw, op, i, numel, permuted ? perm : NULL, &s.acc[i]);
  if (ok) {
    /* V: the longest width any operand allows (every width is a power of two dividing
     * numel, so each access of vl elements is a V / vl-th of an aligned block of V) */
    bool vec = numel > 0 && kl__ll_body_vectorizes(&op->regions[0]);
    s.V = 1;
    for (int j = 0; j < s.n; j++) {
      s.acc[j].vl = vec ? acc_vlen(&s.acc[j]) : 1;
      if (s.acc[j].vl != INT64_MAX && s.acc[j].vl > s.V) s.V = s.acc[j].vl;
    }
    for (int j = 0; j < s.n; j++) {
      if (s.acc[j].vl > s.V) s.acc[j].vl = s.V; /* single values */
      int64_t b = s.V * storage_bytes(s.acc[j].buf->type->elem);
      if (b > s.vbytes) s.vbytes = b;
    }
    emit_loops(L, func, t, &s, numel);
  }
  for (int j = 0; j < i; j++) kl_view_free(s.acc[j].v);
  return ok;
}
