/* migraphx_ops.c — the MIGraphX op table: one row per op (name, arity, the attributes it
 * accepts and requires, its builder onto graph-dialect ops through core/graph_api.h).
 * An op missing here is "migraphx.X is not supported (supported: ...)"; an attribute not in
 * its row is an error naming it; the attributes every op may carry and kiln ignores
 * (perf_config, xdlopsV2: tuning hints, kiln tunes by itself; out_dyn_dims: static shapes
 * only, checked empty) are in IGNORED. Older spellings read as today's: transpose's `dims`
 * (MIGraphX's first name for `permutation`). Rows map onto graph ops or the graph DSL's composites (quantize,
 * dequantize, quant_dot, quant_conv, 1-D / 3-D conv: core/graph_composite.h), whose
 * builders report bad operands at the op's location. */
#include "core/arena.h"
#include "core/context.h"
#include "core/graph_api.h"
#include "core/type.h"
#include "frontend/migraphx_parse.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mgx_row mgx_row;
typedef kl_value *(*mgx_builder)(kl_op *g, const kl_mgx_op *op, const mgx_row *row);
struct mgx_row {
  const char *name;
  int min_args, max_args;
  const char *attrs;    /* accepted, space separated */
  const char *required; /* required, space separated */
  mgx_builder build;
  const char *graph_op; /* the graph op it becomes (for the builders shared by many rows) */
};

static const char *IGNORED = "perf_config xdlopsV2 out_dyn_dims";

static bool word_in(const char *list, const char *w) {
  size_t n = strlen(w);
  for (const char *s = list; s && *s;) {
    while (*s == ' ') s++;
    const char *e = s;
    while (*e && *e != ' ') e++;
    if ((size_t)(e - s) == n && !strncmp(s, w, n)) return true;
    s = e;
  }
  return false;
}

const kl_mgx_attr *kl_mgx_attr_get(const kl_mgx_op *op, const char *name) {
  for (int i = 0; i < op->nattrs; i++)
    if (op->attrs[i].name && !strcmp(op->attrs[i].name, name)) return &op->attrs[i];
  return NULL;
}

static kl_ctx *gctx(kl_op *g) { return g->ctx; }
static kl_value *err(kl_op *g, kl_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static kl_value *err(kl_op *g, kl_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kl_emit_vdiag(gctx(g), KL_DIAG_ERROR, loc, fmt, ap);
  va_end(ap);
  return NULL;
}

/* An int list attribute into v[0..max); returns the count or -1 after an error. */
static int int_list(kl_op *g, const kl_mgx_op *op, const char *name, int64_t *v, int max) {
  const kl_mgx_attr *a = kl_mgx_attr_get(op, name);
  if (!a) return 0;
  if (a->kind == KL_MGX_INT) {
    v[0] = a->i;
    return 1;
  }
  if (a->kind != KL_MGX_LIST) {
    err(g, a->loc, "migraphx.%s: %s must be a list of integers", op->name, name);
    return -1;
  }
  if (a->n > max) {
    err(g, a->loc, "migraphx.%s: %s has %d entries (at most %d)", op->name, name, a->n, max);
    return -1;
  }
  for (int i = 0; i < a->n; i++) {
    if (a->items[i].kind != KL_MGX_INT) {
      err(g, a->items[i].loc, "migraphx.%s: %s must be a list of integers", op->name, name);
      return -1;
    }
    v[i] = a->items[i].i;
  }
  return a->n;
}
static bool int_attr(kl_op *g, const kl_mgx_op *op, const char *name, int64_t *v) {
  const kl_mgx_attr *a = kl_mgx_attr_get(op, name);
  if (!a) return true;
  if (a->kind != KL_MGX_INT) return err(g, a->loc, "migraphx.%s: %s must be an integer", op->name, name), false;
  *v = a->i;
  return true;
}
static void list_text(kl_sb *sb, const char *name, int n, const int64_t *v) {
  kl_sb_printf(sb, "%s = [", name);
  for (int i = 0; i < n; i++) kl_sb_printf(sb, i ? ", %lld" : "%lld", (long long)v[i]);
  kl_sb_puts(sb, "]");
}
static kl_value *op_text(kl_op *g, const char *gop, int n, kl_value *const *x, kl_sb *sb, kl_loc loc) {
  kl_value *r = kl_graph_add_op(g, gop, n, x, kl_sb_str(sb), loc);
  kl_sb_free(sb);
  return r;
}
static int rank_of(const kl_value *v) { return v->type ? v->type->rank : 0; }
static kl_dtype dt_of(const kl_value *v) {
  return v->type && v->type->elem ? kl_type_dtype(v->type->elem) : KL_DT_NONE;
}

/* ---- builders ---- */
static kl_value *b_same(kl_op *g, const kl_mgx_op *op, const mgx_row *row) { /* n operands, same op */
  const char *gop = row->graph_op ? row->graph_op : op->name;
  return kl_graph_add_op(g, gop, op->n, op->operands, NULL, op->loc);
}
static kl_value *b_scalar_const(kl_op *g, kl_dtype dt, double v, kl_loc loc) {
  return kl_graph_add_constant(g, dt, 0, NULL, &v, loc);
}
/* quantizelinear: the result has the zero point's type; without a zero point, a ui8 or
 * fp8 result type means a zero point of 0 of that type (graph quantize gives i8
 * otherwise). An integer x (older files: the i32 of a convolution) is converted to the
 * scale's float type first. */
static kl_value *b_quantize(kl_op *g, const kl_mgx_op *op, const mgx_row *row) {
  kl_value *x[3] = { op->operands[0], op->operands[1], op->n == 3 ? op->operands[2] : NULL };
  kl_dtype xdt = dt_of(x[0]), sdt = dt_of(x[1]), rdt = op->results[0].dt;
  if (kl_dtype_is_int(xdt) && kl_dtype_is_float(sdt) && !(x[0] = kl_graph_add_convert(g, x[0], sdt, op->loc)))
    return NULL;
  if (op->n == 2 && (rdt == KL_DT_U8 || kl_dtype_is_fp8(rdt))) {
    if (!(x[2] = b_scalar_const(g, rdt, 0.0, op->loc))) return NULL;
    return kl_graph_add_op(g, "quantize", 3, x, NULL, op->loc);
  }
  return kl_graph_add_op(g, "quantize", op->n, x, NULL, op->loc);
}
/* unpack (MIGraphX's unpack_int4: two 4-bit values a byte, along axis): out[.., 2i, ..] is
 * the low nibble of in[.., i, ..], out[.., 2i + 1, ..] the high one; 0..15 when isUnsigned
 * (absent: when the result is ui8), else sign-extended (-8..7). Element-wise graph ops in
 * i32 on the input broadcast to [.., n, 2, ..] (the new dim after axis: which nibble, p):
 * u = the byte's unsigned value, hi = u / 16, lo = u - 16 hi, lo + p (hi - lo), then the
 * reshape into the doubled axis. */
static kl_value *i32c(kl_op *g, double v, kl_loc loc) { return b_scalar_const(g, KL_DT_I32, v, loc); }
static kl_value *bin2(kl_op *g, const char *name, kl_value *a, kl_value *b, kl_loc loc) {
  kl_value *x[2] = { a, b };
  return a && b ? kl_graph_add_op(g, name, 2, x, NULL, loc) : NULL;
}
/* graph op gop ("reshape", "broadcast") of x to shp[n]; NULL x: NULL */
static kl_value *shape_op(kl_op *g, const char *gop, kl_value *x, int n, const int64_t *shp, kl_loc loc) {
  kl_sb sb = { 0 };
  kl_sb_puts(&sb, "{");
  list_text(&sb, "shape", n, shp);
  kl_sb_puts(&sb, "}");
  return x ? op_text(g, gop, 1, &x, &sb, loc) : (kl_sb_free(&sb), NULL);
}
static kl_value *b_unpack(kl_op *g, const kl_mgx_op *op, const mgx_row *row) {
  kl_value *x = op->operands[0];
  kl_dtype in = dt_of(x), rdt = op->results[0].dt;
  int r = rank_of(x);
  int64_t axis = 0;
  if (!int_attr(g, op, "axis", &axis)) return NULL;
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) return err(g, op->loc, "migraphx.unpack: axis out of range for rank %d", r);
  if (r + 1 > KL_MAX_RANK) return err(g, op->loc, "migraphx.unpack: rank %d is too large", r);
  if (in != KL_DT_I8 && in != KL_DT_U8)
    return err(g, op->loc, "migraphx.unpack: the input must be i8 or ui8, got %s", kl_dtype_name(in));
  if (rdt != KL_DT_I8 && rdt != KL_DT_U8)
    return err(g, op->loc, "migraphx.unpack: the result must be i8 or ui8, got %s", kl_dtype_name(rdt));
  const kl_mgx_attr *ua = kl_mgx_attr_get(op, "isUnsigned");
  if (ua && ua->kind != KL_MGX_BOOL) return err(g, ua->loc, "migraphx.unpack: isUnsigned must be true or false");
  bool is_unsigned = ua ? ua->i != 0 : rdt == KL_DT_U8;
  kl_loc loc = op->loc;
  int64_t one[KL_MAX_RANK], two[KL_MAX_RANK], pshape[KL_MAX_RANK], out[KL_MAX_RANK];
  for (int i = 0, j = 0; i < r; i++) {
    pshape[j] = 1, one[j] = two[j] = x->type->shape[i], j++;
    if (i == axis) pshape[j] = 2, one[j] = 1, two[j] = 2, j++;
    out[i] = x->type->shape[i] * (i == axis ? 2 : 1);
  }
  kl_value *u = shape_op(g, "broadcast", shape_op(g, "reshape", x, r + 1, one, loc), r + 1, two, loc);
  u = u ? kl_graph_add_convert(g, u, KL_DT_I32, loc) : NULL;
  if (u && in == KL_DT_I8) /* v + 256 (v < 0) */
    u = bin2(g, "add", u, bin2(g, "mul", bin2(g, "greater", i32c(g, 0, loc), u, loc), i32c(g, 256, loc), loc), loc);
  kl_value *hi = bin2(g, "div", u, i32c(g, 16, loc), loc);
  kl_value *lo = bin2(g, "sub", u, bin2(g, "mul", hi, i32c(g, 16, loc), loc), loc);
  const double pv[2] = { 0, 1 };
  kl_value *p = kl_graph_add_constant(g, KL_DT_I32, r + 1, pshape, pv, loc);
  kl_value *n = bin2(g, "add", lo, bin2(g, "mul", p, bin2(g, "sub", hi, lo, loc), loc), loc);
  if (n && !is_unsigned) /* n - 16 (n >= 8) */
    n = bin2(g, "sub", n, bin2(g, "mul", bin2(g, "greater_equal", n, i32c(g, 8, loc), loc), i32c(g, 16, loc), loc),
             loc);
  n = shape_op(g, "reshape", n, r, out, loc);
  return n ? kl_graph_add_convert(g, n, rdt, loc) : NULL;
}
static kl_value *b_recip(kl_op *g, const kl_mgx_op *op, const mgx_row *row) { /* 1 / x */
  kl_value *x[2] = { b_scalar_const(g, dt_of(op->operands[0]), 1.0, op->loc), op->operands[0] };
  return x[0] ? kl_graph_add_op(g, "div", 2, x, NULL, op->loc) : NULL;
}
static kl_value *b_clip(kl_op *g, const kl_mgx_op *op, const mgx_row *row) { /* min(max(x, lo), hi) */
  kl_value *a[2] = { op->operands[0], op->operands[1] };
  kl_value *lo = kl_graph_add_op(g, "max", 2, a, NULL, op->loc);
  if (!lo) return NULL;
  kl_value *b[2] = { lo, op->operands[2] };
  return kl_graph_add_op(g, "min", 2, b, NULL, op->loc);
}
static kl_value *b_convert(kl_op *g, const kl_mgx_op *op, const mgx_row *row) {
  const kl_mgx_attr *t = kl_mgx_attr_get(op, "target_type");
  if (t && t->kind == KL_MGX_TYPE && t->type.dt != op->results[0].dt)
    return err(g, t->loc, "migraphx.convert: target_type %s differs from the result type %s", kl_dtype_name(t->type.dt),
               kl_dtype_name(op->results[0].dt));
  return kl_graph_add_convert(g, op->operands[0], op->results[0].dt, op->loc);
}
static kl_value *b_literal(kl_op *g, const kl_mgx_op *op, const mgx_row *row) {
  const kl_mgx_attr *v = kl_mgx_attr_get(op, "value");
  if (!v || v->kind != KL_MGX_DENSE) return err(g, op->loc, "migraphx.literal: needs a dense<...> value");
  if (op->nresults != 1) return err(g, op->loc, "migraphx.literal: needs one result type");
  const kl_mgx_type *rt = &op->results[0];
  kl_shape s = kl_shape_make(rt->rank, rt->dims);
  int64_t n = kl_shape_numel(&s);
  kl_shape vs = kl_shape_make(v->type.rank, v->type.dims);
  /* a splat fills the result type whatever its own shape (rocMLIR's lowering re-splats it) */
  if (!v->splat && kl_shape_numel(&vs) != n)
    return err(g, v->loc, "migraphx.literal: the value has %lld elements, the result type %lld",
               (long long)kl_shape_numel(&vs), (long long)n);
  if (n > ((int64_t)1 << 22)) return err(g, v->loc, "migraphx.literal: %lld elements (at most 2^22)", (long long)n);
  double *vals = kl_xmalloc((size_t)(n ? n : 1) * sizeof(double));
  for (int64_t i = 0; i < n; i++) vals[i] = v->splat ? v->vals[0] : v->vals[i];
  kl_value *r = kl_graph_add_constant(g, rt->dt, rt->rank, rt->dims, vals, op->loc);
  free(vals);
  return r;
}
static kl_value *b_multibroadcast(kl_op *g, const kl_mgx_op *op, const mgx_row *row) {
  int64_t lens[KL_MAX_RANK];
  int n = int_list(g, op, "out_lens", lens, KL_MAX_RANK);
  if (n < 0) return NULL;
  /* The declared result type is the shape, as in rocMLIR's lowering (MIGraphX has been seen
   * to write out_lens that disagree with it); out_lens must then have its rank. */
  const kl_mgx_type *rt = &op->results[0];
  if (rt->rank != n)
    return err(g, op->loc, "migraphx.multibroadcast: out_lens has %d dims, the result type %d", n, rt->rank);
  for (int i = 0; i < n; i++) lens[i] = rt->dims[i];
  /* A lower-rank input sits at the trailing dims (numpy); where that does not fit, at the
   * dims the result type's strides keep (non-zero), as rocMLIR reads it: <1x32xi32, 32x1>
   * to <1x32x1x1024xi32, 32x1x0x0> puts the input at dims 0 and 1. */
  kl_value *x = op->operands[0];
  int r = rank_of(x), at = -1;
  for (int a = n - r; a >= 0 && at < 0 && r < n; a--) {
    bool ok = true;
    for (int i = 0; i < r && ok; i++) {
      int64_t d = x->type->shape[i];
      ok = d == 1 || (d == lens[a + i] && (a == n - r || rt->strides[a + i] != 0));
    }
    if (ok) at = a;
  }
  if (at >= 0 && at != n - r) {
    int64_t shp[KL_MAX_RANK];
    for (int i = 0; i < n; i++) shp[i] = i >= at && i < at + r ? x->type->shape[i - at] : 1;
    x = shape_op(g, "reshape", x, n, shp, op->loc);
    if (!x) return NULL;
  }
  return shape_op(g, "broadcast", x, n, lens, op->loc);
}
static kl_value *b_broadcast(kl_op *g, const kl_mgx_op *op, const mgx_row *row) { /* x at dims axis.. of out_lens */
  int64_t lens[KL_MAX_RANK], axis = 0;
  int n = int_list(g, op, "out_lens", lens, KL_MAX_RANK);
  if (n < 0 || !int_attr(g, op, "axis", &axis)) return NULL;
  kl_value *x = op->operands[0];
  int r = rank_of(x);
  if (axis < 0 || axis + r > n)
    return err(g, op->loc, "migraphx.broadcast: axis %lld with an input of rank %d does not fit out_lens of rank %d",
               (long long)axis, r, n);
  int64_t shp[KL_MAX_RANK];
  for (int i = 0; i < n; i++) shp[i] = i >= axis && i < axis + r ? x->type->shape[i - axis] : 1;
  kl_sb sb = { 0 };
  kl_sb_puts(&sb, "{");
  list_text(&sb, "shape", n, shp);
  kl_sb_puts(&sb, "}");
  if (!(x = op_text(g, "reshape", 1, &x, &sb, op->loc))) return NULL;
  kl_sb_puts(&sb, "{");
  list_text(&sb, "shape", n, lens);
  kl_sb_puts(&sb, "}");
  return op_text(g, "broadcast", 1, &x, &sb, op->loc);
}
static kl_value *b_transpose(kl_op *g, const kl_mgx_op *op, const mgx_row *row) {
  int64_t perm[KL_MAX_RANK];
  bool has_p = kl_mgx_attr_get(op, "permutation"), has_d = kl_mgx_attr_get(op, "dims");
  if (has_p == has_d)
    return err(g, op->loc,
               has_p ? "migraphx.transpose: both 'permutation' and its older name 'dims'"
                     : "migraphx.transpose: missing attribute 'permutation'");
  int n = int_list(g, op, has_p ? "permutation" : "dims", perm, KL_MAX_RANK);
  if (n < 0) return NULL;
  kl_sb sb = { 0 };
  kl_sb_puts(&sb, "{");
  list_text(&sb, "perm", n, perm);
  kl_sb_puts(&sb, "}");
  return op_text(g, "transpose", 1, op->operands, &sb, op->loc);
}
static kl_value *b_reshape(kl_op *g, const kl_mgx_op *op, const mgx_row *row) {
  int64_t dims[KL_MAX_RANK];
  int n = int_list(g, op, "dims", dims, KL_MAX_RANK);
  if (n < 0) return NULL;
  /* 0 (copy the input's dim) and -1 (inferred) resolve through the declared result type */
  if (op->nresults == 1 && op->results[0].rank == n)
    for (int i = 0; i < n; i++) dims[i] = op->results[0].dims[i];
  kl_sb sb = { 0 };
  kl_sb_puts(&sb, "{");
  list_text(&sb, "shape", n, dims);
  kl_sb_puts(&sb, "}");
  return op_text(g, "reshape", 1, op->operands, &sb, op->loc);
}
static kl_value *b_slice(kl_op *g, const kl_mgx_op *op, const mgx_row *row) {
  int64_t axes[KL_MAX_RANK], starts[KL_MAX_RANK], ends[KL_MAX_RANK];
  int na = int_list(g, op, "axes", axes, KL_MAX_RANK), ns = int_list(g, op, "starts", starts, KL_MAX_RANK),
      ne = int_list(g, op, "ends", ends, KL_MAX_RANK);
  if (na < 0 || ns < 0 || ne < 0) return NULL;
  if (ns != na || ne != na)
    return err(g, op->loc, "migraphx.slice: axes, starts and ends have %d, %d and %d entries", na, ns, ne);
  kl_value *x = op->operands[0];
  int r = rank_of(x);
  int64_t b[KL_MAX_RANK], e[KL_MAX_RANK];
  for (int i = 0; i < r; i++) b[i] = 0, e[i] = x->type->shape[i];
  for (int k = 0; k < na; k++) {
    int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
    if (a < 0 || a >= r)
      return err(g, op->loc, "migraphx.slice: axis %lld out of range for rank %d", (long long)axes[k], r);
    int64_t d = x->type->shape[a], s = starts[k] < 0 ? starts[k] + d : starts[k],
            en = ends[k] < 0 ? ends[k] + d : ends[k];
    s = s < 0 ? 0 : s > d ? d : s;
    en = en < s ? s : en > d ? d : en;
    b[a] = s, e[a] = en;
  }
  kl_sb sb = { 0 };
  kl_sb_puts(&sb, "{");
  list_text(&sb, "begin", r, b);
  kl_sb_puts(&sb, ", ");
  list_text(&sb, "end", r, e);
  kl_sb_puts(&sb, "}");
  return op_text(g, "slice", 1, &x, &sb, op->loc);
}
static kl_value *b_axis(kl_op *g, const kl_mgx_op *op, const mgx_row *row) { /* softmax */
  int64_t axis = -1;
  if (!int_attr(g, op, "axis", &axis)) return NULL;
  kl_sb sb = { 0 };
  kl_sb_printf(&sb, "{axis = %lld}", (long long)axis);
  return op_text(g, row->graph_op, 1, op->operands, &sb, op->loc);
}
static kl_value *b_reduce(kl_op *g, const kl_mgx_op *op, const mgx_row *row) {
  int64_t axes[KL_MAX_RANK];
  int n = int_list(g, op, "axes", axes, KL_MAX_RANK);
  if (n < 0) return NULL;
  kl_sb sb = { 0 };
  kl_sb_puts(&sb, "{");
  list_text(&sb, "axes", n, axes);
  kl_sb_puts(&sb, ", keepdims = true}");
  return op_text(g, row->graph_op, 1, op->operands, &sb, op->loc);
}
static kl_value *b_dot(kl_op *g, const kl_mgx_op *op, const mgx_row *row) {
  kl_dtype a = dt_of(op->operands[0]);
  /* i8 x i8 (u8 x u8) accumulating in i32 is what graph.dot does with integer inputs */
  const char *gop = !strcmp(op->name, "quant_dot") && a != KL_DT_I8 && a != KL_DT_U8 ? "quant_dot" : "dot";
  return kl_graph_add_op(g, gop, 2, op->operands, NULL, op->loc);
}
static kl_value *b_conv(kl_op *g, const kl_mgx_op *op, const mgx_row *row) {
  kl_value *x = op->operands[0];
  int sp = rank_of(x) - 2; /* spatial dims */
  if (sp < 1 || sp > 3) return err(g, op->loc, "migraphx.%s: input of rank %d (expected 3 to 5)", op->name, sp + 2);
  int64_t pad[6] = { 0 }, stride[3] = { 1, 1, 1 }, dil[3] = { 1, 1, 1 }, group = 1, mode = 0;
  int np = int_list(g, op, "padding", pad, 6), ns = int_list(g, op, "stride", stride, 3),
      nd = int_list(g, op, "dilation", dil, 3);
  if (np < 0 || ns < 0 || nd < 0 || !int_attr(g, op, "group", &group) || !int_attr(g, op, "padding_mode", &mode))
    return NULL;
  if (mode != 0)
    return err(g, kl_mgx_attr_get(op, "padding_mode")->loc, "migraphx.%s: padding_mode %lld is not supported (only 0)",
               op->name, (long long)mode);
  if ((ns && ns != sp) || (nd && nd != sp))
    return err(g, op->loc, "migraphx.%s: stride and dilation need %d entries", op->name, sp);
  int64_t kp[6]; /* kiln's order: begin, end per spatial dim */
  if (np == 0 || np == sp) {
    for (int i = 0; i < sp; i++) kp[2 * i] = kp[2 * i + 1] = np ? pad[i] : 0;
  } else if (np == 2 * sp) { /* MIGraphX: [begins..., ends...] */
    for (int i = 0; i < sp; i++) kp[2 * i] = pad[i], kp[2 * i + 1] = pad[sp + i];
  } else
    return err(g, kl_mgx_attr_get(op, "padding")->loc, "migraphx.%s: padding has %d entries (expected %d or %d)",
               op->name, np, sp, 2 * sp);
  kl_dtype in = dt_of(x);
  const char *gop = !strcmp(op->name, "quant_convolution") && in != KL_DT_I8 && in != KL_DT_U8 ? "quant_conv" : "conv";
  kl_sb sb = { 0 };
  kl_sb_puts(&sb, "{");
  list_text(&sb, "stride", sp, stride);
  kl_sb_puts(&sb, ", ");
  list_text(&sb, "padding", 2 * sp, kp);
  kl_sb_puts(&sb, ", ");
  list_text(&sb, "dilation", sp, dil);
  kl_sb_printf(&sb, ", groups = %lld}", (long long)group);
  return op_text(g, gop, 2, op->operands, &sb, op->loc);
}

// clang-format off
static const mgx_row ROWS[] = {
  /* element-wise, numpy broadcasting */
  { "add", 2, 2, "", "", b_same, NULL },
  { "sub", 2, 2, "", "", b_same, NULL },
  { "mul", 2, 2, "", "", b_same, NULL },
  { "div", 2, 2, "", "", b_same, NULL },
  { "pow", 2, 2, "", "", b_same, NULL },
  { "max", 2, 2, "", "", b_same, NULL },
  { "min", 2, 2, "", "", b_same, NULL },
  { "greater", 2, 2, "", "", b_same, "greater" },
  { "greater_or_equal", 2, 2, "", "", b_same, "greater_equal" },
  { "neg", 1, 1, "", "", b_same, NULL },
  { "abs", 1, 1, "", "", b_same, NULL },
  { "exp", 1, 1, "", "", b_same, NULL },
  { "log", 1, 1, "", "", b_same, NULL },
  { "sqrt", 1, 1, "", "", b_same, NULL },
  { "rsqrt", 1, 1, "", "", b_same, NULL },
  { "tanh", 1, 1, "", "", b_same, NULL },
  { "sigmoid", 1, 1, "", "", b_same, NULL },
  { "relu", 1, 1, "", "", b_same, NULL },
  { "erf", 1, 1, "", "", b_same, "erf" },
  { "floor", 1, 1, "", "", b_same, NULL },
  { "ceil", 1, 1, "", "", b_same, NULL },
  { "recip", 1, 1, "", "", b_recip, NULL },
  { "clip", 3, 3, "", "", b_clip, NULL },
  { "where", 3, 3, "", "", b_same, NULL },
  { "convert", 1, 1, "target_type", "", b_convert, NULL },
  { "dequantizelinear", 2, 3, "", "", b_same, "dequantize" },
  { "quantizelinear", 2, 3, "", "", b_quantize, "quantize" },
  { "unpack", 1, 1, "axis isUnsigned", "axis", b_unpack, NULL },
  /* constants and views */
  { "literal", 0, 0, "value", "value", b_literal, NULL },
  { "multibroadcast", 1, 1, "out_lens", "out_lens", b_multibroadcast, NULL },
  { "broadcast", 1, 1, "axis out_lens", "out_lens", b_broadcast, NULL },
  { "transpose", 1, 1, "permutation dims", "", b_transpose, NULL },
  { "reshape", 1, 1, "dims", "dims", b_reshape, NULL },
  { "slice", 1, 1, "axes starts ends", "axes starts ends", b_slice, NULL },
  /* reductions */
  { "softmax", 1, 1, "axis", "", b_axis, "softmax" },
  { "reduce_sum", 1, 1, "axes", "axes", b_reduce, "reduce_sum" },
  { "reduce_max", 1, 1, "axes", "axes", b_reduce, "reduce_max" },
  { "reduce_mean", 1, 1, "axes", "axes", b_reduce, "reduce_mean" },
  /* contractions */
  { "dot", 2, 2, "", "", b_dot, NULL },
  { "quant_dot", 2, 2, "", "", b_dot, NULL },
  { "convolution", 2, 2, "padding stride dilation group padding_mode", "", b_conv, NULL },
  { "quant_convolution", 2, 2, "padding stride dilation group padding_mode", "", b_conv, NULL },
};
// clang-format on

static const mgx_row *find_row(const char *name) {
  for (size_t i = 0; i < sizeof ROWS / sizeof ROWS[0]; i++)
    if (!strcmp(ROWS[i].name, name)) return &ROWS[i];
  return NULL;
}

bool kl_mgx_build_op(kl_op *g, const kl_mgx_op *op, kl_value **out) {
  const mgx_row *row = find_row(op->name);
  if (!row) {
    kl_sb sb = { 0 };
    for (size_t i = 0; i < sizeof ROWS / sizeof ROWS[0]; i++) kl_sb_printf(&sb, i ? " %s" : "%s", ROWS[i].name);
    kl_emit_error(gctx(g), op->loc, "migraphx.%s is not supported (supported: %s)", op->name, kl_sb_str(&sb));
    kl_sb_free(&sb);
    return false;
  }
  if (op->n < row->min_args || op->n > row->max_args) {
    if (row->min_args == row->max_args)
      kl_emit_error(gctx(g), op->loc, "migraphx.%s takes %d operands, got %d", op->name, row->min_args, op->n);
    else
      kl_emit_error(gctx(g), op->loc, "migraphx.%s takes %d to %d operands, got %d", op->name, row->min_args,
                    row->max_args, op->n);
    return false;
  }
  for (int i = 0; i < op->nattrs; i++) {
    const kl_mgx_attr *a = &op->attrs[i];
    if (word_in(row->attrs, a->name)) continue;
    if (word_in(IGNORED, a->name)) {
      if (!strcmp(a->name, "out_dyn_dims") && !(a->kind == KL_MGX_LIST && a->n == 0)) {
        kl_emit_error(gctx(g), a->loc, "migraphx.%s: dynamic shapes (out_dyn_dims) are not supported", op->name);
        return false;
      }
      continue;
    }
    kl_emit_error(gctx(g), a->loc, "migraphx.%s: attribute '%s' is not supported (supported: %s%s%s)", op->name,
                  a->name, row->attrs, *row->attrs ? " " : "", IGNORED);
    return false;
  }
  for (const char *s = row->required; *s;) {
    while (*s == ' ') s++;
    const char *e = s;
    while (*e && *e != ' ') e++;
    char nm[64];
    snprintf(nm, sizeof nm, "%.*s", (int)(e - s), s);
    if (*nm && !kl_mgx_attr_get(op, nm)) {
      kl_emit_error(gctx(g), op->loc, "migraphx.%s: missing attribute '%s'", op->name, nm);
      return false;
    }
    s = e;
  }
  if (op->nresults != 1) {
    kl_emit_error(gctx(g), op->loc, "migraphx.%s: expected one result type, got %d", op->name, op->nresults);
    return false;
  }
  kl_value *r = row->build(g, op, row);
  if (!r) return false;
  out[0] = r;
  return true;
}
