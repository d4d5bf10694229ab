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

/* One spatial attribute of a 1-D conv: an integer or a list of 1 (padding: of 1 or 2,
 * [begin, end]); absent: dflt. */
static bool attr_1d(kl_ctx *ctx, kl_loc loc, int na, const kl_named_attr *attrs, const char *name, int max,
                    int64_t dflt, int64_t out[2]) {
  const kl_attr *a = find_attr(na, attrs, name);
  int cnt = 0;
  out[0] = out[1] = dflt;
  if (!a) return true;
  if (a->kind == KL_AT_INT) {
    out[0] = out[1] = a->i;
    return true;
  }
  if (!kl_attr_get_i64_array(a, max, out, &cnt) || cnt < 1) {
    kl_emit_error(ctx, loc, "conv: a 1-D conv's '%s' must be an integer or a list of %s integers, got %s", name,
                  max == 2 ? "1 or 2" : "1", a->text);
    return false;
  }
  if (cnt == 1) out[1] = out[0];
  return true;
}

static kl_op *conv1d(kl_op *g, kl_loc loc, kl_value *const *x, int na, const kl_named_attr *attrs) {
  kl_ctx *ctx = g->ctx;
  const kl_type *in = x[0]->type, *f = x[1]->type;
  if (f->rank != 3) {
    kl_emit_error(ctx, loc, "conv: a 1-D conv (input %s) needs a rank-3 filter [K, C/G, X], got %s", in->text,
                  f->text);
    return NULL;
  }
  int64_t st[2], dl[2], pd[2], gr = 1;
  if (!attr_1d(ctx, loc, na, attrs, "stride", 1, 1, st) || !attr_1d(ctx, loc, na, attrs, "dilation", 1, 1, dl) ||
      !attr_1d(ctx, loc, na, attrs, "padding", 2, 0, pd))
    return NULL;
  const kl_attr *ga = find_attr(na, attrs, "groups");
  if (ga) {
    if (ga->kind != KL_AT_INT) {
      kl_emit_error(ctx, loc, "conv: attribute 'groups' must be an integer, got %s", ga->text);
      return NULL;
    }
    gr = ga->i;
  }
  kl_named_attr ri = { "shape", kl_attr_i64_array(ctx, 4, (int64_t[]){ in->shape[0], in->shape[1], 1, in->shape[2] }) };
  kl_named_attr rf = { "shape", kl_attr_i64_array(ctx, 4, (int64_t[]){ f->shape[0], f->shape[1], 1, f->shape[2] }) };
  kl_value *xi = build(g, "reshape", loc, 1, &x[0], 1, &ri);
  kl_value *xf = xi ? build(g, "reshape", loc, 1, &x[1], 1, &rf) : NULL;
  if (!xf) return NULL;
  kl_named_attr ca[] = { { "stride", kl_attr_i64_array(ctx, 2, (int64_t[]){ 1, st[0] }) },
                         { "dilation", kl_attr_i64_array(ctx, 2, (int64_t[]){ 1, dl[0] }) },
                         { "padding", kl_attr_i64_array(ctx, 4, (int64_t[]){ 0, 0, pd[0], pd[1] }) },
                         { "groups", kl_attr_int(ctx, gr) } };
  kl_value *c = build(g, "conv", loc, 2, (kl_value *[]){ xi, xf }, 4, ca);
  if (!c) return NULL;
  kl_named_attr ro = { "shape",
                       kl_attr_i64_array(ctx, 3, (int64_t[]){ c->type->shape[0], c->type->shape[1], c->type->shape[3] }) };
  return kl_graph_build(g, "reshape", loc, 1, &c, 1, &ro, NULL);
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
        x[0]->type->rank == 3)
      return conv1d(g, loc, x, na, attrs);
    if (qconv) return kl_graph_build(g, "conv", loc, n, x, na, attrs, NULL);
  }
  *handled = false;
  return NULL;
}
