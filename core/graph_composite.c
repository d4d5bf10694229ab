/* graph_composite.c — graph ops expanded into other graph ops (see graph_composite.h). */
#include "core/graph_composite.h"
#include "core/dialect_graph.h"
#include <string.h>

static const kl_attr *find_attr(int n, const kl_named_attr *attrs, const char *name) {
  for (int i = n - 1; i >= 0; i--)
    if (!strcmp(attrs[i].name, name)) return attrs[i].value;
  return NULL;
}
static kl_value *res(kl_op *o) { return o ? &o->results[0] : NULL; }
static kl_value *build(kl_op *g, const char *name, kl_loc loc, int n, kl_value *const *x, int na,
                       const kl_named_attr *a) {
  return res(kl_graph_build(g, name, loc, n, x, na, a, NULL));
}
static kl_value *convert(kl_op *g, kl_loc loc, kl_value *x, const kl_type *elem) {
  if (x->type->elem == elem) return x;
  return res(kl_graph_build(g, "convert", loc, 1, &x, 0, NULL, elem));
}
static kl_value *bin(kl_op *g, const char *name, kl_loc loc, kl_value *a, kl_value *b) {
  return a && b ? build(g, name, loc, 2, (kl_value *[]){ a, b }, 0, NULL) : NULL;
}
static bool tensors(kl_ctx *ctx, kl_loc loc, const char *op, int n, kl_value *const *x, int lo, int hi) {
  if (n < lo || n > hi) {
    if (lo == hi)
      kl_emit_error(ctx, loc, "%s: expects %d operands, got %d", op, lo, n);
    else
      kl_emit_error(ctx, loc, "%s: expects %d to %d operands, got %d", op, lo, hi, n);
    return false;
  }
  for (int i = 0; i < n; i++)
    if (!x[i] || x[i]->type->kind != KL_TY_TENSOR) {
      kl_emit_error(ctx, loc, "%s: operand %d must be a tensor", op, i);
      return false;
    }
  return true;
}

static kl_op *quantize(kl_op *g, kl_loc loc, int n, kl_value *const *x) {
  kl_ctx *ctx = g->ctx;
  if (!tensors(ctx, loc, "quantize", n, x, 2, 3)) return NULL;
  const kl_type *ft = x[0]->type->elem;
  if (!kl_type_is_float(ft) || x[1]->type->elem != ft) {
    kl_emit_error(ctx, loc, "quantize: x and scale must be floats of one dtype, got %s and %s", x[0]->type->text,
                  x[1]->type->text);
    return NULL;
  }
  kl_value *q = bin(g, "div", loc, x[0], x[1]);
  q = q ? build(g, "round", loc, 1, &q, 0, NULL) : NULL;
  if (q && n == 3) q = bin(g, "add", loc, q, convert(g, loc, x[2], ft));
  kl_named_attr lim[] = { { "min", kl_attr_float(ctx, -128.0) }, { "max", kl_attr_float(ctx, 127.0) } };
  q = q ? build(g, "clip", loc, 1, &q, 2, lim) : NULL;
  return q ? kl_graph_build(g, "convert", loc, 1, &q, 0, NULL, kl_type_scalar(ctx, KL_TY_I8)) : NULL;
}

static kl_op *dequantize(kl_op *g, kl_loc loc, int n, kl_value *const *x) {
  kl_ctx *ctx = g->ctx;
  if (!tensors(ctx, loc, "dequantize", n, x, 2, 3)) return NULL;
  const kl_type *ft = x[1]->type->elem;
  if (!kl_type_is_float(ft) || !kl_type_is_int(x[0]->type->elem)) {
    kl_emit_error(ctx, loc, "dequantize: needs an integer x and a float scale, got %s and %s", x[0]->type->text,
                  x[1]->type->text);
    return NULL;
  }
  kl_value *v = convert(g, loc, x[0], ft);
  if (v && n == 3) v = bin(g, "sub", loc, v, convert(g, loc, x[2], ft));
  return v ? kl_graph_build(g, "mul", loc, 2, (kl_value *[]){ v, x[1] }, 0, NULL, NULL) : NULL;
}

/* A spatial attribute of a conv with `sp` spatial dims: an integer (every dim), a list of
 * sp (per dim; padding: both sides) or, for padding, of 2*sp ([begin, end] per dim, in
 * dim order); absent: dflt. out: sp entries, padding 2*sp. */
static bool attr_nd(kl_ctx *ctx, kl_loc loc, int na, const kl_named_attr *attrs, const char *name, int sp, bool pad,
                    int64_t dflt, int64_t *out) {
  const kl_attr *a = find_attr(na, attrs, name);
  int m = pad ? 2 * sp : sp, cnt = 0;
  int64_t v[6];
  for (int i = 0; i < m; i++) out[i] = dflt;
  if (!a) return true;
  if (a->kind == KL_AT_INT) {
    for (int i = 0; i < m; i++) out[i] = a->i;
    return true;
  }
  if (kl_attr_get_i64_array(a, 6, v, &cnt) && (cnt == sp || cnt == m)) {
    for (int i = 0; i < m; i++) out[i] = cnt == m ? v[i] : v[pad ? i / 2 : i];
    return true;
  }
  if (pad)
    kl_emit_error(ctx, loc,
                  "conv: a %d-D conv's 'padding' must be an integer, a list of %d (per dim) or of %d ([begin, end] per "
                  "dim), got %s",
                  sp, sp, 2 * sp, a->text);
  else
    kl_emit_error(ctx, loc, "conv: a %d-D conv's '%s' must be an integer or a list of %d integers, got %s", sp, name,
                  sp, a->text);
  return false;
}

static kl_value *reshape(kl_op *g, kl_loc loc, kl_value *x, int r, const int64_t *dims) {
  kl_named_attr a = { "shape", kl_attr_i64_array(g->ctx, r, dims) };
  return x ? build(g, "reshape", loc, 1, &x, 1, &a) : NULL;
}
static kl_value *transpose(kl_op *g, kl_loc loc, kl_value *x, int r, const int64_t *perm) {
  kl_named_attr a = { "perm", kl_attr_i64_array(g->ctx, r, perm) };
  return x ? build(g, "transpose", loc, 1, &x, 1, &a) : NULL;
}
/* x[..., b : e : step, ...] along axis ax */
static kl_value *slice_axis(kl_op *g, kl_loc loc, kl_value *x, int ax, int64_t b, int64_t e, int64_t step) {
  if (!x) return NULL;
  int r = x->type->rank;
  int64_t lo[KL_MAX_RANK], hi[KL_MAX_RANK], st[KL_MAX_RANK];
  for (int i = 0; i < r; i++) lo[i] = 0, hi[i] = x->type->shape[i], st[i] = 1;
  lo[ax] = b, hi[ax] = e, st[ax] = step;
  kl_named_attr a[] = { { "begin", kl_attr_i64_array(g->ctx, r, lo) },
                        { "end", kl_attr_i64_array(g->ctx, r, hi) },
                        { "step", kl_attr_i64_array(g->ctx, r, st) } };
  return build(g, "slice", loc, 1, &x, 3, a);
}
/* zeros of x's dtype, shape x's with axis ax of size cnt (a broadcast one-element constant) */
static kl_value *zeros_like(kl_op *g, kl_loc loc, kl_value *x, int ax, int64_t cnt) {
  kl_ctx *ctx = g->ctx;
  const kl_type *t = x->type;
  const kl_attr *z = kl_type_is_int(t->elem) ? kl_attr_int(ctx, 0) : kl_attr_float(ctx, 0.0);
  kl_named_attr v = { "value", kl_attr_array(ctx, 1, &z) };
  const kl_type *ct = kl_type_tensor(ctx, t->elem, 1, (int64_t[]){ 1 }, NULL);
  kl_op *c = kl_graph_build(g, "constant", loc, 0, NULL, 1, &v, ct);
  if (!c) return NULL;
  int64_t dims[KL_MAX_RANK];
  for (int i = 0; i < t->rank; i++) dims[i] = t->shape[i];
  dims[ax] = cnt;
  kl_named_attr s = { "shape", kl_attr_i64_array(ctx, t->rank, dims) };
  return build(g, "broadcast", loc, 1, (kl_value *[]){ &c->results[0] }, 1, &s);
}

/* 1-D: a 2-D conv of height 1 between reshapes. */
static kl_op *conv1d(kl_op *g, kl_loc loc, kl_value *const *x, const int64_t *st, const int64_t *dl, const int64_t *pd,
                     int64_t gr) {
  kl_ctx *ctx = g->ctx;
  const kl_type *in = x[0]->type, *f = x[1]->type;
  kl_value *xi = reshape(g, loc, x[0], 4, (int64_t[]){ in->shape[0], in->shape[1], 1, in->shape[2] });
  kl_value *xf = xi ? reshape(g, loc, x[1], 4, (int64_t[]){ f->shape[0], f->shape[1], 1, f->shape[2] }) : NULL;
  if (!xf) return NULL;
  kl_named_attr ca[] = { { "stride", kl_attr_i64_array(ctx, 2, (int64_t[]){ 1, st[0] }) },
                         { "dilation", kl_attr_i64_array(ctx, 2, (int64_t[]){ 1, dl[0] }) },
                         { "padding", kl_attr_i64_array(ctx, 4, (int64_t[]){ 0, 0, pd[0], pd[1] }) },
                         { "groups", kl_attr_int(ctx, gr) } };
  kl_value *c = build(g, "conv", loc, 2, (kl_value *[]){ xi, xf }, 4, ca);
  if (!c) return NULL;
  kl_named_attr ro = {
    "shape", kl_attr_i64_array(ctx, 3, (int64_t[]){ c->type->shape[0], c->type->shape[1], c->type->shape[3] })
  };
  return kl_graph_build(g, "reshape", loc, 1, &c, 1, &ro, NULL);
}

/* 3-D: sum over the filter's depth taps z of 2-D convs, tap z reading the (depth-padded)
 * input's depths od*sd + z*dd with the depths moved into the batch:
 *   out[n,k,od] = sum_z conv2d(xp[n, :, od*sd + z*dd], w[:, :, z]). */
static kl_op *conv3d(kl_op *g, kl_loc loc, kl_value *const *x, const int64_t *st, const int64_t *dl, const int64_t *pd,
                     int64_t gr) {
  kl_ctx *ctx = g->ctx;
  const kl_type *in = x[0]->type, *f = x[1]->type;
  const int64_t *is = in->shape, *fs = f->shape;
  for (int i = 0; i < 3; i++)
    if (st[i] < 1 || dl[i] < 1 || st[i] > KL_MAX_DIM || dl[i] > KL_MAX_DIM || pd[2 * i] < 0 || pd[2 * i + 1] < 0 ||
        pd[2 * i] > KL_MAX_DIM || pd[2 * i + 1] > KL_MAX_DIM) {
      kl_emit_error(ctx, loc, "conv: strides and dilations must be in [1, 2^40], paddings in [0, 2^40]");
      return NULL;
    }
  int64_t ed = is[2] + pd[0] + pd[1] - dl[0] * (fs[2] - 1) - 1;
  if (fs[2] < 1 || ed < 0) {
    kl_emit_error(ctx, loc, "conv: the dilated filter depth %lld of filter %s does not fit the padded input %s",
                  (long long)(dl[0] * (fs[2] - 1) + 1), f->text, in->text);
    return NULL;
  }
  int64_t od = ed / st[0] + 1;
  kl_value *xp = x[0];
  if (pd[0] || pd[1]) {
    kl_value *parts[3];
    int np = 0;
    if (pd[0]) parts[np++] = zeros_like(g, loc, xp, 2, pd[0]);
    parts[np++] = xp;
    if (pd[1]) parts[np++] = zeros_like(g, loc, xp, 2, pd[1]);
    for (int i = 0; i < np; i++)
      if (!parts[i]) return NULL;
    kl_named_attr ax = { "axis", kl_attr_int(ctx, 2) };
    xp = build(g, "concat", loc, np, parts, 1, &ax);
    if (!xp) return NULL;
  }
  kl_named_attr ca[] = { { "stride", kl_attr_i64_array(ctx, 2, st + 1) },
                         { "dilation", kl_attr_i64_array(ctx, 2, dl + 1) },
                         { "padding", kl_attr_i64_array(ctx, 4, pd + 2) },
                         { "groups", kl_attr_int(ctx, gr) } };
  const int64_t swap[] = { 0, 2, 1, 3, 4 };
  kl_value *acc = NULL;
  for (int64_t z = 0; z < fs[2]; z++) {
    int64_t b = z * dl[0];
    kl_value *xs = slice_axis(g, loc, xp, 2, b, b + (od - 1) * st[0] + 1, st[0]);
    xs = reshape(g, loc, transpose(g, loc, xs, 5, swap), 4, (int64_t[]){ is[0] * od, is[1], is[3], is[4] });
    kl_value *ws = reshape(g, loc, slice_axis(g, loc, x[1], 2, z, z + 1, 1), 4,
                           (int64_t[]){ fs[0], fs[1], fs[3], fs[4] });
    kl_value *c = xs && ws ? build(g, "conv", loc, 2, (kl_value *[]){ xs, ws }, 4, ca) : NULL;
    if (!c) return NULL;
    acc = acc ? bin(g, "add", loc, acc, c) : c;
    if (!acc) return NULL;
  }
  const int64_t *cs = acc->type->shape;
  acc = reshape(g, loc, acc, 5, (int64_t[]){ is[0], od, cs[1], cs[2], cs[3] });
  return acc ? kl_graph_build(g, "transpose", loc, 1, &acc, 1,
                              &(kl_named_attr){ "perm", kl_attr_i64_array(ctx, 5, swap) }, NULL)
             : NULL;
}

/* conv of rank-3 (1-D) or rank-5 (3-D) operands */
static kl_op *conv_nd(kl_op *g, kl_loc loc, kl_value *const *x, int na, const kl_named_attr *attrs) {
  kl_ctx *ctx = g->ctx;
  const kl_type *in = x[0]->type, *f = x[1]->type;
  int sp = in->rank - 2;
  if (f->rank != in->rank) {
    kl_emit_error(ctx, loc, "conv: a %d-D conv (input %s) needs a rank-%d filter [K, C/G, spatial...], got %s", sp,
                  in->text, in->rank, f->text);
    return NULL;
  }
  int64_t st[3], dl[3], pd[6], gr = 1;
  if (!attr_nd(ctx, loc, na, attrs, "stride", sp, false, 1, st) ||
      !attr_nd(ctx, loc, na, attrs, "dilation", sp, false, 1, dl) ||
      !attr_nd(ctx, loc, na, attrs, "padding", sp, true, 0, pd))
    return NULL;
  const kl_attr *ga = find_attr(na, attrs, "groups");
  if (ga) {
    if (ga->kind != KL_AT_INT) {
      kl_emit_error(ctx, loc, "conv: attribute 'groups' must be an integer, got %s", ga->text);
      return NULL;
    }
    gr = ga->i;
  }
  return sp == 1 ? conv1d(g, loc, x, st, dl, pd, gr) : conv3d(g, loc, x, st, dl, pd, gr);
}

static bool both_i8(kl_ctx *ctx, kl_loc loc, const char *op, kl_value *const *x) {
  if (x[0]->type->elem->kind == KL_TY_I8 && x[1]->type->elem->kind == KL_TY_I8) return true;
  kl_emit_error(ctx, loc, "%s: operands must be i8 tensors, got %s and %s", op, x[0]->type->text, x[1]->type->text);
  return false;
}

kl_op *kl_graph_build_composite(kl_op *g, const char *op, kl_loc loc, int n, kl_value *const *x, int na,
                                const kl_named_attr *attrs, bool *handled) {
  kl_ctx *ctx = g->ctx;
  *handled = true;
  if (!strcmp(op, "quantize")) return quantize(g, loc, n, x);
  if (!strcmp(op, "dequantize")) return dequantize(g, loc, n, x);
  bool qdot = !strcmp(op, "quant_dot"), qconv = !strcmp(op, "quant_conv");
  if (qdot || qconv) {
    if (!tensors(ctx, loc, op, n, x, 2, 2) || !both_i8(ctx, loc, op, x)) return NULL;
    if (qdot) return kl_graph_build(g, "dot", loc, n, x, na, attrs, NULL);
  }
  if (qconv || !strcmp(op, "conv")) {
    if (n == 2 && x[0] && x[1] && x[0]->type->kind == KL_TY_TENSOR && x[1]->type->kind == KL_TY_TENSOR &&
        (x[0]->type->rank == 3 || x[0]->type->rank == 5))
      return conv_nd(g, loc, x, na, attrs);
    if (qconv) return kl_graph_build(g, "conv", loc, n, x, na, attrs, NULL);
  }
  *handled = false;
  return NULL;
}
