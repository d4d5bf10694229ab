/* graph_composite.c — graph ops expanded into other graph ops (see graph_composite.h). */
#include "core/graph_composite.h"
#include "core/dialect_graph.h"
#include <string.h>

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
  /* the result has the zero point's dtype when that is u8 or fp8 (MIGraphX's rule), else i8 */
  const kl_type *zt = n == 3 ? x[2]->type->elem : NULL;
  bool fp8 = zt && kl_type_is_fp8(zt);
  kl_type_kind qk = zt && (zt->kind == KL_TY_U8 || fp8) ? zt->kind : KL_TY_I8;
  kl_value *q = bin(g, "div", loc, x[0], x[1]);
  if (q && !fp8) q = build(g, "round", loc, 1, &q, 0, NULL); /* fp8: no rounding to an integer */
  if (q && n == 3) q = bin(g, "add", loc, q, convert(g, loc, x[2], ft));
  double lo, hi;
  if (fp8)
    hi = kl_fp8_max((kl_dtype)qk), lo = -hi;
  else
    lo = (double)kl_dtype_int_min((kl_dtype)qk), hi = (double)kl_dtype_int_max((kl_dtype)qk);
  kl_named_attr lim[] = { { "min", kl_attr_float(ctx, lo) }, { "max", kl_attr_float(ctx, hi) } };
  q = q ? build(g, "clip", loc, 1, &q, 2, lim) : NULL;
  return q ? kl_graph_build(g, "convert", loc, 1, &q, 0, NULL, kl_type_scalar(ctx, qk)) : NULL;
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

static bool both_i8(kl_ctx *ctx, kl_loc loc, const char *op, kl_value *const *x) {
  kl_type_kind k0 = x[0]->type->elem->kind, k1 = x[1]->type->elem->kind;
  if (k0 == k1 && (k0 == KL_TY_I8 || k0 == KL_TY_U8)) return true;
  if (kl_type_is_fp8(x[0]->type->elem) && kl_type_is_fp8(x[1]->type->elem)) return true;
  kl_emit_error(ctx, loc, "%s: operands must be i8 or fp8 tensors (or both u8), got %s and %s", op, x[0]->type->text,
                x[1]->type->text);
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
    kl_named_attr fa[33];
    kl_value *xs[2] = { x[0], x[1] };
    bool f8 = kl_type_is_fp8(x[0]->type->elem);
    if (f8 && x[0]->type->elem != x[1]->type->elem) {
      /* two fp8 formats (e4m3 x e5m2): both as f16, which holds every fp8 value */
      const kl_type *f16 = kl_type_scalar(ctx, KL_TY_F16);
      if (!(xs[0] = convert(g, loc, x[0], f16)) || !(xs[1] = convert(g, loc, x[1], f16))) return NULL;
      x = xs;
    }
    if (f8) { /* fp8 x fp8 -> f32 (MIGraphX's quant_dot) */
      if (na > 32) na = 32;
      for (int i = 0; i < na; i++) fa[i] = attrs[i];
      fa[na++] = (kl_named_attr){ "dtype", kl_attr_type(ctx, kl_type_f32(ctx)) };
      attrs = fa;
    }
    return kl_graph_build(g, qdot ? "dot" : "conv", loc, n, x, na, attrs, NULL);
  }
  *handled = false;
  return NULL;
}
