/* lower_loops_util.c — view composition, memory access and loop emission helpers of
 * rock-align-tiling and rock-lower-loops (see lower_loops.h). */
#include "passes/lower_loops.h"
#include "core/dialect_builtin.h"
#include "core/dialect_rock.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ferr kl_errf /* core/diag.h */

/* ---- views ---- */
const kl_view *kl_ll_op_view(const kl_op *op) {
  const kl_attr *a = kl_op_attr(op, "view");
  if (!a || a->kind != KL_AT_EXT || strcmp(a->ext->name, "view")) return NULL;
  return kl_attr_view(a);
}
const kl_attr *kl_ll_view_attr(kl_ctx *ctx, const kl_view *v) { return kl_attr_from_view(ctx, v); }

kl_view *kl_ll_identity(const kl_type *t, char *err, size_t n) {
  static const char *const names[KL_VIEW_MAX_DIMS] = { "d0", "d1", "d2",  "d3",  "d4",  "d5",  "d6",  "d7",
                                                       "d8", "d9", "d10", "d11", "d12", "d13", "d14", "d15" };
  if (t->kind != KL_TY_BUFFER || t->rank > KL_VIEW_MAX_DIMS) {
    ferr(err, n, "not a buffer of rank <= 16: %s", kl_type_str(t));
    return NULL;
  }
  if (t->rank == 0) {
    /* a rank-0 buffer: a view over one dim of size 1 cannot address it; callers handle rank 0 themselves */
    ferr(err, n, "rank-0 buffers have no view");
    return NULL;
  }
  kl_view_err ve = { 0 };
  kl_view *v = kl_view_identity(t->rank, t->shape, names, &ve);
  if (!v) ferr(err, n, "%s", ve.msg);
  return v;
}

kl_view *kl_ll_access_view(const kl_view *top, kl_value *v, kl_value **under, char *err, size_t n) {
  kl_op *chain[64];
  int nc = 0;
  kl_value *u = kl_rock_underlying(v, chain, &nc, 64);
  if (nc > 64) {
    ferr(err, n, "transform chain too long (%d)", nc);
    return NULL;
  }
  kl_view *cur = NULL;
  int i = 0;
  if (top)
    cur = kl_view_clone(top);
  else if (nc > 0) {
    const kl_view *tv = kl_ll_op_view(chain[0]);
    if (!tv) {
      ferr(err, n, "rock.transform without a #view attribute");
      return NULL;
    }
    cur = kl_view_clone(tv);
    i = 1;
  } else {
    cur = kl_ll_identity(v->type, err, n);
    if (!cur) return NULL;
  }
  for (; i < nc; i++) {
    const kl_view *tv = kl_ll_op_view(chain[i]);
    if (!tv) {
      ferr(err, n, "rock.transform without a #view attribute");
      kl_view_free(cur);
      return NULL;
    }
    kl_view_err ve = { 0 };
    kl_view *nv = kl_view_compose(cur, tv, &ve);
    kl_view_free(cur);
    if (!nv) {
      ferr(err, n, "cannot compose the views of the transform chain: %s", ve.msg);
      return NULL;
    }
    cur = nv;
  }
  if (u->type->kind != KL_TY_BUFFER || kl_view_lower_rank(cur) != u->type->rank) {
    ferr(err, n, "the view's lower rank %d does not match the buffer %s", kl_view_lower_rank(cur),
         kl_type_str(u->type));
    kl_view_free(cur);
    return NULL;
  }
  for (int d = 0; d < u->type->rank; d++)
    if (kl_view_lower_size(cur, d) != u->type->shape[d]) {
      ferr(err, n, "the view's lower shape does not match the buffer %s (dim %d: %lld)", kl_type_str(u->type), d,
           (long long)kl_view_lower_size(cur, d));
      kl_view_free(cur);
      return NULL;
    }
  kl_view *s = kl_view_simplify(cur);
  kl_view_free(cur);
  if (under) *under = u;
  return s;
}

kl_view *kl_ll_flat_access(kl_value *v, kl_value **under, char *err, size_t n) {
  return kl_ll_flat_access_ordered(v, NULL, under, err, n);
}

kl_view *kl_ll_flat_access_ordered(kl_value *v, const int *order, kl_value **under, char *err, size_t n) {
  const kl_type *t = v->type;
  if (t->kind != KL_TY_BUFFER || t->rank < 1) {
    snprintf(err, n, "needs a buffer of rank >= 1, got %s", kl_type_str(t));
    return NULL;
  }
  kl_view *id = kl_ll_identity(t, err, n);
  if (!id) return NULL;
  if (t->rank > 1) {
    const char *names[KL_VIEW_MAX_DIMS];
    for (int i = 0; i < t->rank; i++) names[i] = kl_view_name(id, order ? order[i] : i);
    kl_view_err ve = { 0 };
    kl_view *m = kl_view_merge(id, "flat", t->rank, names, &ve);
    kl_view_free(id);
    if (!m) {
      snprintf(err, n, "%s", ve.msg);
      return NULL;
    }
    id = m;
  }
  kl_view *full = kl_ll_access_view(id, v, under, err, n);
  kl_view_free(id);
  return full;
}

int64_t kl_ll_vector_len(const kl_view *full, kl_value *under, int dim) {
  const kl_type *bt = under->type;
  if (bt->kind != KL_TY_BUFFER || kl_view_lower_rank(full) != bt->rank) return 1;
  int64_t r = kl_view_max_vectorization(full, dim, bt->strides, kl_type_bits(bt->elem));
  return r < 1 ? 1 : r;
}

/* ---- emission ---- */
void kl_ll_init(kl_ll *L, kl_rewriter *rw, kl_loc loc, int64_t unroll) {
  L->e.rw = rw;
  L->e.loc = loc;
  L->ctx = kl_rewriter_ctx(rw);
  L->unroll = unroll;
  L->rmw = NULL;
}
kl_value *kl_ll_idx(kl_ll *L, int64_t v) { return kl_emit_index(&L->e, v); }

kl_value *kl_ll_const(kl_ll *L, const kl_type *t, double v) {
  const kl_type *et = t->kind == KL_TY_VECTOR ? t->elem : t;
  const kl_attr *a = et->kind == KL_TY_I1 ? kl_attr_int_typed(L->ctx, v != 0, et) : kl_const_attr_for(L->ctx, et, v);
  kl_named_attr na = { "value", a };
  return kl_op_result(kl_rewriter_create(L->e.rw, "arith.constant", L->e.loc, 0, NULL, 1, &t, 1, &na, 0), 0);
}
kl_value *kl_ll_op1(kl_ll *L, const char *name, kl_value *a, const kl_type *rt) {
  return kl_op_result(kl_rewriter_create(L->e.rw, name, L->e.loc, 1, &a, 1, &rt, 0, NULL, 0), 0);
}
kl_value *kl_ll_op2(kl_ll *L, const char *name, kl_value *a, kl_value *b, const kl_type *rt) {
  kl_value *ab[2] = { a, b };
  return kl_op_result(kl_rewriter_create(L->e.rw, name, L->e.loc, 2, ab, 1, &rt, 0, NULL, 0), 0);
}
kl_value *kl_ll_cmp(kl_ll *L, const char *name, const char *pred, kl_value *a, kl_value *b) {
  kl_value *ab[2] = { a, b };
  const kl_type *i1 = kl_type_i1(L->ctx);
  kl_named_attr p = { "predicate", kl_attr_str(L->ctx, pred) };
  return kl_op_result(kl_rewriter_create(L->e.rw, name, L->e.loc, 2, ab, 1, &i1, 1, &p, 0), 0);
}
kl_value *kl_ll_select(kl_ll *L, kl_value *c, kl_value *a, kl_value *b) {
  int64_t cv;
  if (a == b) return a;
  if (kl_emit_const_of(c, &cv)) return cv ? a : b;
  kl_value *o[3] = { c, a, b };
  return kl_op_result(kl_rewriter_create(L->e.rw, "arith.select", L->e.loc, 3, o, 1, &a->type, 0, NULL, 0), 0);
}
kl_value *kl_ll_min_index(kl_ll *L, kl_value *a, kl_value *b) {
  int64_t x, y;
  if (kl_emit_const_of(a, &x) && kl_emit_const_of(b, &y)) return kl_ll_idx(L, x < y ? x : y);
  return kl_ll_op2(L, "arith.minsi", a, b, a->type);
}

const kl_type *kl_ll_float_acc(kl_ctx *ctx, const kl_type *t) {
  if (t->kind == KL_TY_F64) return t;
  if (kl_type_is_float(t)) return kl_type_f32(ctx);
  return kl_type_i64(ctx);
}

static const kl_type *like(kl_ll *L, const kl_type *shape_of, const kl_type *elem) {
  return shape_of->kind == KL_TY_VECTOR ? kl_type_vector(L->ctx, elem, (int)shape_of->shape[0]) : elem;
}
kl_value *kl_ll_convert(kl_ll *L, kl_value *v, const kl_type *to) {
  const kl_type *vt = v->type, *from = vt->kind == KL_TY_VECTOR ? vt->elem : vt;
  if (from == to) return v;
  const kl_type *rt = like(L, vt, to);
  bool ff = kl_type_is_float(from), tf = kl_type_is_float(to);
  /* fp8 codes convert only to and from floats: anything else goes through f32 */
  if ((kl_type_is_fp8(from) && !tf) || (kl_type_is_fp8(to) && !ff))
    return kl_ll_convert(L, kl_ll_convert(L, v, kl_type_f32(L->ctx)), to);
  if (to->kind == KL_TY_I1) {
    kl_value *z = kl_ll_const(L, vt, 0);
    return kl_ll_cmp(L, ff ? "arith.cmpf" : "arith.cmpi", "ne", v, z);
  }
  if (ff && tf) {
    bool half_pair = (from->kind == KL_TY_F16 && to->kind == KL_TY_BF16) ||
        (from->kind == KL_TY_BF16 && to->kind == KL_TY_F16) || (kl_type_bits(from) == 8 && kl_type_bits(to) == 8);
    if (half_pair)
      return kl_ll_op1(L, "arith.truncf", kl_ll_op1(L, "arith.extf", v, like(L, vt, kl_type_f32(L->ctx))), rt);
    return kl_ll_op1(L, kl_type_bits(to) > kl_type_bits(from) ? "arith.extf" : "arith.truncf", v, rt);
  }
  if (from->kind == KL_TY_INDEX || to->kind == KL_TY_INDEX) {
    if (tf)
      return kl_ll_op1(L, "arith.sitofp", kl_ll_op1(L, "arith.index_cast", v, like(L, vt, kl_type_i64(L->ctx))), rt);
    if (ff)
      return kl_ll_op1(L, "arith.index_cast", kl_ll_op1(L, "arith.fptosi", v, like(L, vt, kl_type_i64(L->ctx))), rt);
    return kl_ll_op1(L, "arith.index_cast", v, rt);
  }
  if (!ff && !tf) return kl_ll_op1(L, kl_type_bits(to) > kl_type_bits(from) ? "arith.extsi" : "arith.trunci", v, rt);
  if (ff) return kl_ll_op1(L, "arith.fptosi", v, rt);
  return kl_ll_op1(L, "arith.sitofp", v, rt);
}
void kl_ll_convert_tile(kl_rewriter *rw, kl_loc loc, kl_value *src, kl_value *dst) {
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_value *o[2] = { src, dst };
  kl_op *conv = kl_rewriter_create(rw, "rock.elementwise", loc, 2, o, 0, NULL, 0, NULL, 1);
  kl_block *b = kl_block_create(ctx);
  kl_value *x = kl_block_add_arg(ctx, b, src->type->elem);
  kl_region_push_block(&conv->regions[0], b);
  kl_ll L;
  kl_ll_init(&L, rw, loc, 0);
  kl_rewriter_set_insertion_end(rw, b);
  kl_value *y = kl_ll_convert(&L, x, dst->type->elem);
  kl_rewriter_create(rw, "rock.yield", loc, 1, &y, 0, NULL, 0, NULL, 0);
  kl_rewriter_set_insertion_after(rw, conv);
}

/* ---- memory ---- */
kl_value *kl_ll_load(kl_ll *L, kl_value *buf, kl_value *const *coords, kl_value *valid, int64_t vlen) {
  const kl_type *bt = buf->type;
  int r = bt->rank;
  kl_value *o[1 + KL_MAX_RANK];
  o[0] = buf;
  kl_value *zi = valid ? kl_ll_idx(L, 0) : NULL;
  for (int i = 0; i < r; i++) o[1 + i] = valid ? kl_ll_select(L, valid, coords[i], zi) : coords[i];
  const kl_type *rt = vlen > 1 ? kl_type_vector(L->ctx, bt->elem, (int)vlen) : bt->elem;
  kl_value *v = kl_op_result(kl_rewriter_create(L->e.rw, "rock.load", L->e.loc, 1 + r, o, 1, &rt, 0, NULL, 0), 0);
  if (valid) v = kl_ll_select(L, valid, v, kl_ll_const(L, rt, 0));
  return v;
}

kl_op *kl_ll_if_begin(kl_ll *L, kl_value *cond) {
  kl_op *ifop = kl_rewriter_create(L->e.rw, "scf.if", L->e.loc, 1, &cond, 0, NULL, 0, NULL, 2);
  kl_block *tb = kl_block_create(L->ctx), *eb = kl_block_create(L->ctx);
  kl_region_push_block(&ifop->regions[0], tb);
  kl_region_push_block(&ifop->regions[1], eb);
  kl_rewriter_set_insertion_end(L->e.rw, eb);
  kl_rewriter_create(L->e.rw, "scf.yield", L->e.loc, 0, NULL, 0, NULL, 0, NULL, 0);
  kl_rewriter_set_insertion_end(L->e.rw, tb);
  kl_op *y = kl_rewriter_create(L->e.rw, "scf.yield", L->e.loc, 0, NULL, 0, NULL, 0, NULL, 0);
  kl_rewriter_set_insertion_before(L->e.rw, y);
  return ifop;
}
void kl_ll_if_end(kl_ll *L, kl_op *ifop) { kl_rewriter_set_insertion_after(L->e.rw, ifop); }

void kl_ll_store(kl_ll *L, kl_value *val, kl_value *buf, kl_value *const *coords, kl_value *valid) {
  int64_t cv;
  if (valid && kl_emit_const_of(valid, &cv)) {
    if (!cv) return;
    valid = NULL;
  }
  kl_op *ifop = valid ? kl_ll_if_begin(L, valid) : NULL;
  const kl_type *bt = buf->type;
  kl_value *o[2 + KL_MAX_RANK];
  o[0] = val;
  o[1] = buf;
  for (int i = 0; i < bt->rank; i++) o[2 + i] = coords[i];
  if (L->rmw) {
    kl_named_attr k = { "kind", kl_attr_str(L->ctx, L->rmw) };
    kl_rewriter_create(L->e.rw, "rock.atomic_rmw", L->e.loc, 2 + bt->rank, o, 0, NULL, 1, &k, 0);
  } else
    kl_rewriter_create(L->e.rw, "rock.store", L->e.loc, 2 + bt->rank, o, 0, NULL, 0, NULL, 0);
  if (ifop) kl_ll_if_end(L, ifop);
}

kl_value *kl_ll_load_view(kl_ll *L, kl_value *buf, const kl_view *v, kl_value *const *upper, int64_t vlen) {
  kl_value *lower[KL_VIEW_MAX_DIMS], *valid = NULL;
  kl_view_emit(&L->e, v, upper, lower, &valid);
  return kl_ll_load(L, buf, lower, valid, vlen);
}
void kl_ll_store_view(kl_ll *L, kl_value *val, kl_value *buf, const kl_view *v, kl_value *const *upper) {
  kl_value *lower[KL_VIEW_MAX_DIMS], *valid = NULL;
  kl_view_emit(&L->e, v, upper, lower, &valid);
  kl_ll_store(L, val, buf, lower, valid);
}

/* ---- loops ---- */
void kl_ll_for(kl_ll *L, kl_value *lb, kl_value *ub, int64_t step, int ncarry, kl_value **carry, kl_ll_body fn,
               void *ud) {
  int64_t l, u;
  if (kl_emit_const_of(lb, &l) && kl_emit_const_of(ub, &u)) {
    int64_t trips = u > l ? (u - l + step - 1) / step : 0;
    if (trips == 0) return;
    if (trips <= L->unroll || trips == 1) {
      for (int64_t i = l; i < u; i += step) fn(L, kl_ll_idx(L, i), carry, ud);
      return;
    }
  }
  kl_ctx *ctx = L->ctx;
  kl_value *o[3 + KL_LL_MAX_CARRY];
  const kl_type *rt[KL_LL_MAX_CARRY];
  if (ncarry > KL_LL_MAX_CARRY) ncarry = KL_LL_MAX_CARRY; /* callers stay below (the host micro-kernel: <= 64) */
  o[0] = lb;
  o[1] = ub;
  o[2] = kl_ll_idx(L, step);
  for (int i = 0; i < ncarry; i++) {
    o[3 + i] = carry[i];
    rt[i] = carry[i]->type;
  }
  kl_op *loop = kl_rewriter_create(L->e.rw, "scf.for", L->e.loc, 3 + ncarry, o, ncarry, rt, 0, NULL, 1);
  kl_block *body = kl_block_create(ctx);
  kl_value *iv = kl_block_add_arg(ctx, body, kl_type_index(ctx));
  kl_value *cur[KL_LL_MAX_CARRY];
  for (int i = 0; i < ncarry; i++) cur[i] = kl_block_add_arg(ctx, body, rt[i]);
  kl_region_push_block(&loop->regions[0], body);
  kl_rewriter_set_insertion_end(L->e.rw, body);
  fn(L, iv, cur, ud);
  kl_rewriter_create(L->e.rw, "scf.yield", L->e.loc, ncarry, cur, 0, NULL, 0, NULL, 0);
  for (int i = 0; i < ncarry; i++) carry[i] = kl_op_result(loop, i);
  kl_rewriter_set_insertion_after(L->e.rw, loop);
}

/* ---- misc ---- */
void kl_ll_erase_dead(kl_op *root, bool allocs) {
  kl_rewriter *rw = kl_rewriter_new(root->ctx);
  for (bool again = true; again;) {
    again = false;
    int n;
    kl_op **ops = kl_collect_ops(root, &n);
    for (int i = n - 1; i >= 0; i--) { /* users before their definitions */
      kl_op *x = ops[i];
      if (x != root && (!strcmp(x->name, "rock.transform") || (allocs && !strcmp(x->name, "rock.alloc"))) &&
          kl_op_results_unused(x)) {
        kl_rewriter_erase_op(rw, x);
        again = true;
      }
    }
    free(ops);
  }
  kl_rewriter_free(rw);
}

kl_op *kl_ll_func_of(kl_op *op) {
  for (kl_op *p = op; p; p = kl_op_parent_op(p))
    if (!strcmp(p->name, "func.func")) return p;
  return NULL;
}

const kl_target *kl_ll_target_of(kl_op *func, char *err, size_t n) {
  const char *name = func ? kl_op_attr_string(func, "target") : NULL;
  if (!name && func) {
    kl_op *m = kl_op_parent_op(func);
    if (m) name = kl_op_attr_string(m, "target");
  }
  if (!name || !*name) name = "host";
  const kl_target *t = kl_target_lookup(name);
  if (!t) ferr(err, n, "unknown target '%s'", name);
  return t;
}

kl_space kl_ll_space(kl_value *v) {
  kl_op *chain[1];
  int nc;
  kl_value *u = kl_rock_underlying(v, chain, &nc, 0);
  return u->type->kind == KL_TY_BUFFER ? u->type->space : KL_SPACE_GLOBAL;
}

bool kl_ll_before(const kl_op *a, const kl_op *b) {
  /* climb b's ancestors until one shares a's (or a's ancestor's) block */
  for (const kl_op *x = a; x; x = kl_op_parent_op(x))
    for (const kl_op *y = b; y; y = kl_op_parent_op(y))
      if (x->block && x->block == y->block) return x != y && kl_op_is_before_in_block(x, y);
  return false;
}

bool kl_ll_dominates(kl_value *v, const kl_op *op) {
  if (v->def) {
    for (const kl_op *y = op; y; y = kl_op_parent_op(y))
      if (y->block && y->block == v->def->block) return v->def != y && kl_op_is_before_in_block(v->def, y);
    return false;
  }
  for (const kl_op *y = op; y; y = kl_op_parent_op(y))
    if (y->block == v->block) return true;
  return false;
}

bool kl_ll_fail(kl_rewriter *rw, kl_op *op, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  kl_verrf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kl_rewriter_fail(rw, op->loc, "rock-lower-loops: '%s': %s", op->name, msg);
  return false;
}
