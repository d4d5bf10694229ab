/* dialect_graph.c — graph ops: registration, inference, builders, verifiers. */
#include "core/dialect_graph.h"
#include "core/dtype.h"
#include "core/graph_composite.h"
#include "core/infer.h"
#include "core/scalar_ops.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const kl_attr *find_attr(int n, const kl_named_attr *attrs, const char *name) {
  for (int i = n - 1; i >= 0; i--)
    if (!strcmp(attrs[i].name, name)) return attrs[i].value;
  return NULL;
}
static kl_shape shape_of(const kl_type *t) { return kl_shape_make(t->rank, t->shape); }
static const char *short_name(const char *name) {
  const char *d = strchr(name, '.');
  return d ? d + 1 : name;
}

/* Reads an int array attribute of exactly `want` entries (want < 0: any up to max);
 * absent -> defaults. Returns the count or -1 after an error. */
static int int_list(kl_ctx *ctx, kl_loc loc, const char *op, int n, const kl_named_attr *attrs, const char *name,
                    int want, int max, const int64_t *dflt, int64_t *out) {
  const kl_attr *a = find_attr(n, attrs, name);
  if (!a) {
    if (!dflt) {
      kl_emit_error(ctx, loc, "%s: missing attribute '%s'", op, name);
      return -1;
    }
    for (int i = 0; i < want; i++) out[i] = dflt[i];
    return want;
  }
  int cnt;
  if (a->kind == KL_AT_INT && want == 1) {
    out[0] = a->i;
    return 1;
  }
  if (!kl_attr_get_i64_array(a, max, out, &cnt) || (want >= 0 && cnt != want)) {
    if (want >= 0)
      kl_emit_error(ctx, loc, "%s: attribute '%s' must be a list of %d integers, got %s", op, name, want, a->text);
    else
      kl_emit_error(ctx, loc, "%s: attribute '%s' must be a list of at most %d integers, got %s", op, name, max,
                    a->text);
    return -1;
  }
  return cnt;
}
/* Attribute values the IR's limits bound (core/type.h): axes and permutation entries
 * fit an operand's rank (checked before they are narrowed to int), conv strides,
 * dilations and groups are in [1, 2^40], paddings in [0, 2^40], slice steps in
 * [1, 2^40] and bounds in [-2^40, 2^40]; so the shape arithmetic cannot overflow. */
static bool ints_in(kl_ctx *ctx, kl_loc loc, const char *op, const char *name, int n, const int64_t *v, int64_t lo,
                    int64_t hi) {
  for (int i = 0; i < n; i++)
    if (v[i] < lo || v[i] > hi) {
      if (hi == KL_MAX_DIM)
        kl_emit_error(ctx, loc, "%s: %s %lld out of range (%s to 2^40)", op, name, (long long)v[i],
                      lo < 0   ? "-2^40"
                          : lo ? "1"
                               : "0");
      else
        kl_emit_error(ctx, loc, "%s: %s %lld out of range for a rank-%lld operand", op, name, (long long)v[i],
                      (long long)hi);
      return false;
    }
  return true;
}
static bool axes_in(kl_ctx *ctx, kl_loc loc, const char *op, const char *name, int n, const int64_t *v, int rank) {
  return ints_in(ctx, loc, op, name, n, v, -(int64_t)(rank > 0 ? rank : 1), rank > 0 ? rank : 1);
}
static bool bool_attr(int n, const kl_named_attr *attrs, const char *name) {
  const kl_attr *a = find_attr(n, attrs, name);
  return a && ((a->kind == KL_AT_BOOL && a->i) || a->kind == KL_AT_UNIT);
}
static bool num_attr(int n, const kl_named_attr *attrs, const char *name, double *out) {
  const kl_attr *a = find_attr(n, attrs, name);
  if (!a) return false;
  if (a->kind == KL_AT_FLOAT) {
    *out = a->f;
    return true;
  }
  if (a->kind == KL_AT_INT) {
    *out = (double)a->i;
    return true;
  }
  return false;
}

/* Result tensor type: shape `s`, element `elem`, strides following the dimension order
 * of `like` (a tensor type of the same rank with a dense permutation layout), else
 * row-major. */
static const kl_type *result_type(kl_ctx *ctx, const kl_shape *s, const kl_type *elem, const kl_type *like) {
  int perm[KL_MAX_RANK];
  int64_t strides[KL_MAX_RANK];
  if (like && like->rank == s->rank && !kl_type_is_row_major(like) &&
      kl_strides_to_perm(like->rank, like->shape, like->strides, perm)) {
    kl_strides_from_perm(s->rank, s->dim, perm, strides);
    return kl_type_tensor(ctx, elem, s->rank, s->dim, strides);
  }
  return kl_type_tensor(ctx, elem, s->rank, s->dim, NULL);
}

/* Result element type of a contraction (conv, dot): kl_contraction_dtype's rule. */
const kl_type *kl_graph_contraction_elem(kl_ctx *ctx, const kl_type *in) {
  kl_dtype dt = kl_type_dtype(in);
  if (dt == KL_DT_NONE || !kl_dtype_is_int(dt)) return in;
  return kl_type_scalar(ctx, (kl_type_kind)kl_contraction_dtype(dt));
}

/* ---- inference: one rule per op (kl_opdef.infer), around a shared prologue (operand
 * count, tensor operands) and epilogue (error text, result size, result layout) ---- */
typedef struct infer_st {
  kl_ctx *ctx;
  kl_loc loc;
  const char *op; /* op: the short name ("add") */
  int n;
  const kl_type *const *ts;
  int na;
  const kl_named_attr *attrs;
  const kl_type *result_elem;
  kl_shape s[3];
  /* set by the rule */
  kl_shape out;
  const kl_type *elem, *like;
  int rc;
  char err[512];
} infer_st;
typedef bool (*infer_rule)(infer_st *c); /* false: an error was emitted */

/* want: the operand count (-1: at least one). */
static const kl_type *infer_run(infer_rule rule, int want, kl_ctx *ctx, const char *name, kl_loc loc, int n,
                                const kl_type *const *ts, int na, const kl_named_attr *attrs,
                                const kl_type *result_elem) {
  infer_st c = { .ctx = ctx,
                 .loc = loc,
                 .op = short_name(name),
                 .n = n,
                 .ts = ts,
                 .na = na,
                 .attrs = attrs,
                 .result_elem = result_elem };
  const char *op = c.op;
  if (want >= 0 && n != want) {
    kl_emit_error(ctx, loc, "%s: expects %d operand%s, got %d", op, want, want == 1 ? "" : "s", n);
    return NULL;
  }
  if (want < 0 && n < 1) {
    kl_emit_error(ctx, loc, "%s: expects at least one operand", op);
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (!ts[i] || ts[i]->kind != KL_TY_TENSOR || ts[i]->rank > KL_MAX_RANK) {
      kl_emit_error(ctx, loc, "%s: operand %d must be a tensor of rank <= %d, got %s", op, i, KL_MAX_RANK,
                    kl_type_str(ts[i]));
      return NULL;
    }
  for (int i = 0; i < n && i < 3; i++) c.s[i] = shape_of(ts[i]);
  c.elem = n ? ts[0]->elem : NULL;
  if (!rule(&c)) return NULL;
  char err[512] = "";
  if (c.rc) {
    kl_emit_error(ctx, loc, "%s", c.err);
    return NULL;
  }
  if (!kl_shape_check(c.out.rank, c.out.dim, NULL, err, sizeof err)) {
    kl_emit_error(ctx, loc, "%s: result %s", op, err);
    return NULL;
  }
  return result_type(ctx, &c.out, c.elem, c.like);
}
#define RULE(r, want)                                                                                                 \
  static bool rule_##r(infer_st *c);                                                                                  \
  static const kl_type *infer_##r(kl_ctx *ctx, const char *name, kl_loc loc, int n, const kl_type *const *ts, int na, \
                                  const kl_named_attr *attrs, const kl_type *re) {                                    \
    return infer_run(rule_##r, want, ctx, name, loc, n, ts, na, attrs, re);                                           \
  }
// clang-format off
RULE(binary, 2) RULE(unary, 1) RULE(softmax, 1) RULE(clip, 1) RULE(where, 3) RULE(convert, 1) RULE(conv, 2) RULE(dot, 2)
RULE(broadcast, 1) RULE(transpose, 1) RULE(reshape, 1) RULE(slice, 1) RULE(concat, -1) RULE(reduce, 1)
// clang-format on
#undef RULE
#define ERRBUF c->err, sizeof c->err

        static bool rule_binary(infer_st *c) {
  const kl_type *const *ts = c->ts;
  char buf[2][128];
  if (ts[0]->elem != ts[1]->elem) {
    kl_emit_error(c->ctx, c->loc, "%s: element types differ: %s%s vs %s%s", c->op,
                  kl_dims_format(c->s[0].rank, c->s[0].dim, buf[0], 128), ts[0]->elem->text,
                  kl_dims_format(c->s[1].rank, c->s[1].dim, buf[1], 128), ts[1]->elem->text);
    return false;
  }
  c->rc = kl_infer_broadcast(c->op, &c->s[0], &c->s[1], &c->out, ERRBUF);
  c->like = kl_shape_equal(&c->s[0], &c->out) ? ts[0] : ts[1];
  return true;
}
/* neg, abs and relu also take integers (kl_unop_has_int); the others and softmax need floats */
static bool needs_float(infer_st *c, bool ints_ok) {
  if (!c->rc && !kl_type_is_float(c->elem) && !ints_ok) {
    kl_emit_error(c->ctx, c->loc, "%s: needs a float tensor, got %s", c->op, c->ts[0]->text);
    return false;
  }
  return true;
}
static bool rule_unary(infer_st *c) {
  c->out = c->s[0];
  c->like = c->ts[0];
  int u = kl_unop_from_name(c->op);
  return needs_float(c, u >= 0 && kl_unop_has_int((kl_unop)u));
}
static bool rule_softmax(infer_st *c) {
  c->out = c->s[0];
  c->like = c->ts[0];
  int64_t ax;
  int axis;
  if (int_list(c->ctx, c->loc, c->op, c->na, c->attrs, "axis", 1, 1, (int64_t[]){ -1 }, &ax) < 0 ||
      !axes_in(c->ctx, c->loc, c->op, "axis", 1, &ax, c->s[0].rank))
    return false;
  c->rc = kl_normalize_axis(c->op, &c->s[0], (int)ax, &axis, ERRBUF);
  return needs_float(c, false);
}
static bool rule_clip(infer_st *c) {
  double lo, hi;
  if (!num_attr(c->na, c->attrs, "min", &lo) || !num_attr(c->na, c->attrs, "max", &hi)) {
    kl_emit_error(c->ctx, c->loc, "clip: needs numeric attributes 'min' and 'max'");
    return false;
  }
  if (lo > hi) {
    kl_emit_error(c->ctx, c->loc, "clip: min %g is greater than max %g", lo, hi);
    return false;
  }
  c->out = c->s[0];
  c->like = c->ts[0];
  return true;
}
static bool rule_where(infer_st *c) {
  const kl_type *const *ts = c->ts;
  if (ts[1]->elem != ts[2]->elem) {
    kl_emit_error(c->ctx, c->loc, "where: branch element types differ: %s vs %s", ts[1]->elem->text, ts[2]->elem->text);
    return false;
  }
  c->rc = kl_infer_where(&c->s[0], &c->s[1], &c->s[2], &c->out, ERRBUF);
  c->elem = ts[1]->elem;
  c->like = kl_shape_equal(&c->s[1], &c->out) ? ts[1] : kl_shape_equal(&c->s[2], &c->out) ? ts[2] : ts[0];
  return true;
}
static bool rule_convert(infer_st *c) {
  if (!c->result_elem || !kl_type_is_scalar(c->result_elem)) {
    kl_emit_error(c->ctx, c->loc, "convert: needs a target dtype");
    return false;
  }
  c->out = c->s[0];
  c->like = c->ts[0];
  c->elem = c->result_elem;
  return true;
}
/* stride / dilation: an integer (every dim) or sp entries; padding: an integer, sp
 * entries (both sides) or 2*sp ([begin, end] per dim). */
static bool conv_list(kl_ctx *ctx, kl_loc loc, int na, const kl_named_attr *attrs, const char *name, int sp, bool pad,
                      int64_t *out) {
  const kl_attr *a = find_attr(na, attrs, name);
  int m = pad ? 2 * sp : sp, cnt = 0;
  int64_t v[2 * KL_CONV_MAX_SPATIAL];
  if (!a) return true;
  if (a->kind == KL_AT_INT) {
    for (int i = 0; i < m; i++) out[i] = a->i;
    return true;
  }
  if (kl_attr_get_i64_array(a, 2 * KL_CONV_MAX_SPATIAL, v, &cnt) && (cnt == sp || cnt == m)) {
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

bool kl_graph_conv_params(kl_ctx *ctx, kl_loc loc, int sp, int na, const kl_named_attr *attrs, kl_conv_params *p) {
  *p = kl_conv_params_default(sp);
  if (!conv_list(ctx, loc, na, attrs, "stride", sp, false, p->stride) ||
      !conv_list(ctx, loc, na, attrs, "dilation", sp, false, p->dilation) ||
      !conv_list(ctx, loc, na, attrs, "padding", sp, true, p->pad) ||
      int_list(ctx, loc, "conv", na, attrs, "groups", 1, 1, (int64_t[]){ 1 }, &p->groups) < 0)
    return false;
  return ints_in(ctx, loc, "conv", "stride", sp, p->stride, 1, KL_MAX_DIM) &&
      ints_in(ctx, loc, "conv", "padding", 2 * sp, p->pad, 0, KL_MAX_DIM) &&
      ints_in(ctx, loc, "conv", "dilation", sp, p->dilation, 1, KL_MAX_DIM) &&
      ints_in(ctx, loc, "conv", "groups", 1, &p->groups, 1, KL_MAX_DIM);
}

/* The optional `dtype` attribute of a float contraction (conv, dot): its result type, a
 * float type (split-k-workspace's f32 partial products of f16 / bf16 operands). */
static bool contraction_dtype(infer_st *c) {
  for (int i = 0; i < c->na; i++)
    if (!strcmp(c->attrs[i].name, "dtype")) {
      const kl_attr *a = c->attrs[i].value;
      if (!a || a->kind != KL_AT_TYPE || !kl_type_is_float(a->type) || !kl_type_is_float(c->ts[0]->elem)) {
        kl_emit_error(c->ctx, c->loc, "%s: dtype must be a float type for float operands", c->op);
        return false;
      }
      c->elem = a->type;
    }
  return true;
}
static bool rule_conv(infer_st *c) {
  kl_ctx *ctx = c->ctx;
  kl_loc loc = c->loc;
  const kl_type *in = c->ts[0], *f = c->ts[1];
  int sp = in->rank - 2;
  if (sp < 1 || sp > KL_CONV_MAX_SPATIAL) {
    kl_emit_error(ctx, loc, "conv: input %s must have rank 3, 4 or 5 ([N, C, spatial...]: 1-D, 2-D, 3-D)", in->text);
    return false;
  }
  if (f->rank != in->rank) {
    kl_emit_error(ctx, loc, "conv: a %d-D conv (input %s) needs a rank-%d filter [K, C/G, spatial...], got %s", sp,
                  in->text, in->rank, f->text);
    return false;
  }
  kl_conv_params p;
  if (!kl_graph_conv_params(ctx, loc, sp, c->na, c->attrs, &p)) return false;
  if (in->elem != f->elem) {
    kl_emit_error(ctx, loc, "conv: input %s and filter %s element types differ", in->text, f->text);
    return false;
  }
  c->rc = kl_infer_conv(&c->s[0], &c->s[1], &p, &c->out, ERRBUF);
  c->like = in;
  c->elem = kl_graph_contraction_elem(ctx, c->elem);
  return contraction_dtype(c);
}
static bool rule_dot(infer_st *c) {
  if (c->ts[0]->elem != c->ts[1]->elem) {
    kl_emit_error(c->ctx, c->loc, "dot: element types differ: %s vs %s", c->ts[0]->text, c->ts[1]->text);
    return false;
  }
  c->rc = kl_infer_dot(&c->s[0], &c->s[1], bool_attr(c->na, c->attrs, "transpose_a"),
                       bool_attr(c->na, c->attrs, "transpose_b"), &c->out, ERRBUF);
  c->elem = kl_graph_contraction_elem(c->ctx, c->elem);
  return contraction_dtype(c);
}
static bool rule_broadcast(infer_st *c) {
  int64_t dims[KL_MAX_RANK];
  int r = int_list(c->ctx, c->loc, c->op, c->na, c->attrs, "shape", -1, KL_MAX_RANK, NULL, dims);
  if (r < 0) return false;
  if (kl_shape_init(&c->out, r, dims, c->op, ERRBUF) == 0)
    c->rc = kl_infer_broadcast_to(c->op, &c->s[0], &c->out, ERRBUF);
  else
    c->rc = 1;
  return true;
}
static bool rule_transpose(infer_st *c) {
  int64_t p64[KL_MAX_RANK];
  int perm[KL_MAX_RANK];
  int r = int_list(c->ctx, c->loc, c->op, c->na, c->attrs, "perm", -1, KL_MAX_RANK, NULL, p64);
  if (r < 0 || !axes_in(c->ctx, c->loc, c->op, "perm entry", r, p64, c->s[0].rank)) return false;
  for (int i = 0; i < r; i++) perm[i] = (int)p64[i];
  c->rc = kl_infer_transpose(&c->s[0], r, perm, &c->out, ERRBUF);
  return true;
}
static bool rule_reshape(infer_st *c) {
  int64_t dims[KL_MAX_RANK];
  int r = int_list(c->ctx, c->loc, c->op, c->na, c->attrs, "shape", -1, KL_MAX_RANK, NULL, dims);
  if (r < 0) return false;
  c->rc = kl_infer_reshape(&c->s[0], r, dims, &c->out, ERRBUF);
  return true;
}
static bool rule_slice(infer_st *c) {
  kl_ctx *ctx = c->ctx;
  kl_loc loc = c->loc;
  const char *op = c->op;
  int na = c->na;
  const kl_named_attr *attrs = c->attrs;
  int64_t b[KL_MAX_RANK], e[KL_MAX_RANK], st[KL_MAX_RANK], ones[KL_MAX_RANK];
  int r = c->s[0].rank;
  for (int i = 0; i < r; i++) ones[i] = 1;
  if (int_list(ctx, loc, op, na, attrs, "begin", r, r, NULL, b) < 0 ||
      int_list(ctx, loc, op, na, attrs, "end", r, r, NULL, e) < 0 ||
      int_list(ctx, loc, op, na, attrs, "step", r, r, ones, st) < 0)
    return false;
  if (!ints_in(ctx, loc, op, "begin", r, b, -KL_MAX_DIM, KL_MAX_DIM) ||
      !ints_in(ctx, loc, op, "end", r, e, -KL_MAX_DIM, KL_MAX_DIM) ||
      !ints_in(ctx, loc, op, "step", r, st, 1, KL_MAX_DIM))
    return false;
  c->rc = kl_infer_slice(&c->s[0], b, e, st, &c->out, NULL, ERRBUF);
  return true;
}
static bool rule_concat(infer_st *c) {
  kl_shape ins[64];
  if (c->n > 64) {
    kl_emit_error(c->ctx, c->loc, "concat: at most 64 operands");
    return false;
  }
  for (int i = 0; i < c->n; i++) {
    ins[i] = shape_of(c->ts[i]);
    if (c->ts[i]->elem != c->elem) {
      kl_emit_error(c->ctx, c->loc, "concat: operand %d has element type %s, expected %s", i, c->ts[i]->elem->text,
                    c->elem->text);
      return false;
    }
  }
  int64_t ax;
  if (int_list(c->ctx, c->loc, c->op, c->na, c->attrs, "axis", 1, 1, NULL, &ax) < 0 ||
      !axes_in(c->ctx, c->loc, c->op, "axis", 1, &ax, c->s[0].rank))
    return false;
  c->rc = kl_infer_concat(c->n, ins, (int)ax, &c->out, ERRBUF);
  return true;
}
static bool rule_reduce(infer_st *c) {
  int64_t a64[KL_MAX_RANK];
  int axes[KL_MAX_RANK];
  int r = int_list(c->ctx, c->loc, c->op, c->na, c->attrs, "axes", -1, KL_MAX_RANK, NULL, a64);
  if (r < 0 || !axes_in(c->ctx, c->loc, c->op, "axis", r, a64, c->s[0].rank)) return false;
  for (int i = 0; i < r; i++) axes[i] = (int)a64[i];
  if (strncmp(c->op, "reduce_", 7) || kl_reduce_from_name(c->op + 7) < 0) {
    kl_emit_error(c->ctx, c->loc, "%s: unknown reduction", c->op);
    return false;
  }
  c->rc = kl_infer_reduce(c->op, &c->s[0], r, axes, bool_attr(c->na, c->attrs, "keepdims"), &c->out, NULL, ERRBUF);
  /* dtype: a float result type for a float input (reduce-split's f32 partials of f16 sums
   * and the final f16 result read from them) */
  for (int i = 0; i < c->na; i++)
    if (!strcmp(c->attrs[i].name, "dtype")) {
      const kl_attr *a = c->attrs[i].value;
      if (!a || a->kind != KL_AT_TYPE || !kl_type_is_float(a->type) || !kl_type_is_float(c->ts[0]->elem)) {
        kl_emit_error(c->ctx, c->loc, "%s: dtype must be a float type for a float input", c->op);
        return false;
      }
      c->elem = a->type;
    }
  return true;
}
#undef ERRBUF

const kl_type *kl_graph_infer(kl_ctx *ctx, const char *name, kl_loc loc, int n, const kl_type *const *ts, int na,
                              const kl_named_attr *attrs, const kl_type *result_elem) {
  const kl_opdef *d = name ? kl_lookup_op(ctx, name) : NULL;
  if (!d || !d->infer) {
    kl_emit_error(ctx, loc, "unknown graph op '%s'", name ? name : "");
    return NULL;
  }
  return d->infer(ctx, name, loc, n, ts, na, attrs, result_elem);
}

/* ---- graph containers ---- */
bool kl_is_graph(const kl_op *op) { return op && !strcmp(op->name, "func.func") && kl_op_attr(op, "graph"); }
kl_op *kl_graph_of_value(const kl_value *v) {
  kl_op *op = kl_value_parent_op(v);
  while (op && !kl_is_graph(op)) op = kl_op_parent_op(op);
  return op;
}
const char *kl_graph_name(kl_op *graph) {
  const char *n = kl_op_attr_string(graph, "sym_name");
  return n ? n : "?";
}
kl_block *kl_graph_body(kl_op *graph) { return graph->regions[0].first; }
kl_op *kl_graph_return(kl_op *graph) {
  kl_block *b = kl_graph_body(graph);
  return (b->last && !strcmp(b->last->name, "func.return")) ? b->last : NULL;
}
kl_op *kl_graph_create(kl_ctx *ctx, kl_op *module, const char *name, kl_loc loc) {
  kl_named_attr a[] = { { "graph", kl_attr_unit(ctx) }, { "sym_name", kl_attr_str(ctx, name) } };
  kl_op *f = kl_op_create(ctx, "func.func", loc, 0, NULL, 0, NULL, 2, a, 1);
  kl_region_push_block(&f->regions[0], kl_block_create(ctx));
  kl_block_push_op(kl_graph_body(f), kl_op_create(ctx, "func.return", loc, 0, NULL, 0, NULL, 0, NULL, 0));
  if (module) kl_block_push_op(kl_module_body(module), f);
  return f;
}
void kl_graph_set_outputs(kl_op *graph, int n, kl_value *const *outs, kl_loc loc) {
  kl_op *ret = kl_graph_return(graph);
  kl_op_set_attr(graph, "output_strides", NULL);
  if (ret) {
    kl_op_set_operands(ret, n, outs);
    ret->loc = loc;
    return;
  }
  kl_block_push_op(kl_graph_body(graph), kl_op_create(graph->ctx, "func.return", loc, n, outs, 0, NULL, 0, NULL, 0));
}
void kl_graph_set_output_strides(kl_op *graph, int i, const int64_t *strides) {
  kl_ctx *ctx = graph->ctx;
  kl_op *ret = kl_graph_return(graph);
  int n = ret ? ret->nopnds : 0;
  if (i < 0 || i >= n) return;
  const kl_attr *old = kl_op_attr(graph, "output_strides");
  const kl_attr **el = kl_xmalloc((size_t)n * sizeof *el);
  const kl_attr *none = kl_attr_i64_array(ctx, 0, NULL);
  for (int k = 0; k < n; k++) el[k] = old && old->kind == KL_AT_ARRAY && k < old->n ? old->elems[k] : none;
  const kl_type *t = ret->opnds[i].value->type;
  el[i] = strides && kl_type_is_shaped(t) ? kl_attr_i64_array(ctx, t->rank, strides) : none;
  kl_op_set_attr(graph, "output_strides", kl_attr_array(ctx, n, el));
  free(el);
}
bool kl_graph_output_strides(kl_op *graph, int i, int64_t *strides) {
  const kl_attr *a = kl_op_attr(graph, "output_strides");
  kl_op *ret = kl_graph_return(graph);
  if (!a || a->kind != KL_AT_ARRAY || !ret || i < 0 || i >= a->n || i >= ret->nopnds) return false;
  const kl_attr *e = a->elems[i];
  const kl_type *t = ret->opnds[i].value->type;
  if (!e || e->kind != KL_AT_ARRAY || !kl_type_is_shaped(t) || e->n != t->rank || e->n == 0) return false;
  for (int k = 0; k < e->n; k++) {
    if (e->elems[k]->kind != KL_AT_INT) return false;
    strides[k] = e->elems[k]->i;
  }
  return true;
}
bool kl_graph_is_param(const kl_op *op) { return op && !strcmp(op->name, "graph.param"); }
bool kl_graph_is_constant(const kl_op *op) { return op && !strcmp(op->name, "graph.constant"); }
bool kl_graph_is_launch(const kl_op *op) { return op && !strcmp(op->name, "graph.launch"); }
int kl_graph_params(kl_op *graph, kl_op **out, int max) {
  int n = 0;
  for (kl_op *o = kl_graph_body(graph)->first; o; o = o->next)
    if (kl_graph_is_param(o)) {
      if (n < max) out[n] = o;
      n++;
    }
  return n;
}
kl_op *kl_graph_param(kl_op *graph, const char *name) {
  for (kl_op *o = kl_graph_body(graph)->first; o; o = o->next) {
    const char *pn = kl_op_attr_string(o, "name");
    if (kl_graph_is_param(o) && pn && !strcmp(pn, name)) return o;
  }
  return NULL;
}

kl_op *kl_graph_build(kl_op *graph, const char *name, kl_loc loc, int n, kl_value *const *opnds, int nattrs,
                      const kl_named_attr *attrs, const kl_type *type) {
  kl_ctx *ctx = graph->ctx;
  const char *op = short_name(name);
  char full[64];
  snprintf(full, sizeof full, "graph.%s", op);
  const kl_type *rt;
  if (!strcmp(op, "param") || !strcmp(op, "constant")) {
    if (!type || type->kind != KL_TY_TENSOR) {
      kl_emit_error(ctx, loc, "%s: needs a tensor type", op);
      return NULL;
    }
    const kl_attr *pn = find_attr(nattrs, attrs, "name");
    if (!strcmp(op, "param")) {
      if (!pn || pn->kind != KL_AT_STR) {
        kl_emit_error(ctx, loc, "param: needs a name");
        return NULL;
      }
      if (kl_graph_param(graph, pn->s)) {
        kl_emit_error(ctx, loc, "param: a parameter named '%s' already exists", pn->s);
        return NULL;
      }
    }
    rt = type;
  } else {
    bool composite = false;
    kl_op *c = kl_graph_build_composite(graph, op, loc, n, opnds, nattrs, attrs, &composite);
    if (composite) return c;
    const kl_type *ts[64];
    if (n > 64) {
      kl_emit_error(ctx, loc, "%s: too many operands", op);
      return NULL;
    }
    for (int i = 0; i < n; i++) ts[i] = opnds[i] ? opnds[i]->type : NULL;
    rt = kl_graph_infer(ctx, full, loc, n, ts, nattrs, attrs, type);
    if (!rt) return NULL;
  }
  kl_op *o = kl_op_create(ctx, full, loc, n, opnds, 1, &rt, nattrs, attrs, 0);
  kl_op *ret = kl_graph_return(graph);
  if (ret)
    kl_op_insert_before(ret, o);
  else
    kl_block_push_op(kl_graph_body(graph), o);
  return o;
}

/* ---- verification ---- */
static kl_status verify_graph_op(kl_op *op) {
  const char *n = short_name(op->name);
  if (!strcmp(n, "param") || !strcmp(n, "constant")) {
    if (op->results[0].type->kind != KL_TY_TENSOR)
      return kl_emit_error(op->ctx, op->loc, "'%s' must produce a tensor", op->name);
    if (!strcmp(n, "constant")) {
      const kl_attr *v = kl_op_attr(op, "value");
      if (!v || v->kind != KL_AT_ARRAY || v->n != kl_type_numel(op->results[0].type))
        return kl_emit_error(op->ctx, op->loc, "'graph.constant' needs 'value' with %lld numbers",
                             (long long)kl_type_numel(op->results[0].type));
    }
    return KL_OK;
  }
  const kl_type *ts[64];
  if (op->nopnds > 64) return kl_emit_error(op->ctx, op->loc, "'%s': too many operands", op->name);
  for (int i = 0; i < op->nopnds; i++) ts[i] = op->opnds[i].value->type;
  const kl_type *rt = kl_graph_infer(op->ctx, op->name, op->loc, op->nopnds, ts, op->nattrs, op->attrs,
                                     op->results[0].type->elem);
  if (!rt) return KL_ERR;
  const kl_type *got = op->results[0].type;
  kl_shape a = shape_of(rt), b = shape_of(got);
  if (got->kind != KL_TY_TENSOR || got->elem != rt->elem || !kl_shape_equal(&a, &b))
    return kl_emit_error(op->ctx, op->loc, "'%s' result type %s does not match the inferred %s", op->name,
                         kl_type_str(got), kl_type_str(rt));
  return KL_OK;
}

static kl_status verify_launch(kl_op *op) {
  const kl_attr *c = kl_op_attr(op, "callee");
  if (!c || c->kind != KL_AT_SYMREF)
    return kl_emit_error(op->ctx, op->loc, "'graph.launch' needs a symbol attribute 'callee'");
  kl_op *m = op;
  while (kl_op_parent_op(m)) m = kl_op_parent_op(m);
  if (!kl_module_lookup(m, c->s)) return kl_emit_error(op->ctx, op->loc, "'graph.launch' callee @%s not found", c->s);
  return KL_OK;
}
static const char *const need_name[] = { "name", NULL };
static const char *const need_value[] = { "value", NULL };
#define GOP(nm, nin, tr, ...)                                                                           \
  {                                                                                                     \
    .name = "graph." nm, .traits = KL_TRAIT_PURE | (tr), .levels = KL_LEVEL_GRAPH, .min_operands = nin, \
    .max_operands = nin, .min_results = 1, .max_results = 1, .verify = verify_graph_op, __VA_ARGS__     \
  }
#define EW    KL_TRAIT_ELEMENTWISE
#define IVIEW (KL_TRAIT_VIEW | KL_TRAIT_INVERTIBLE_VIEW)
#define BINARY(nm, code, tr) \
  GOP(nm, 2, EW | (tr), .infer = infer_binary, .scalar = KL_SCALAR_BINARY, .scalar_code = code)
#define UNARY(nm, code) GOP(nm, 1, EW, .infer = infer_unary, .scalar = KL_SCALAR_UNARY, .scalar_code = code)
#define REDUCE(nm, code) \
  GOP(nm, 1, 0, .infer = infer_reduce, .kernel = KL_KERNEL_REDUCE, .scalar = KL_SCALAR_REDUCE, .scalar_code = code)
// clang-format off
static const kl_opdef graph_ops[] = {
  { .name = "graph.param", .traits = KL_TRAIT_HOST_PLAN | KL_TRAIT_PLAN_INPUT, .levels = KL_LEVEL_GRAPH, .max_results = 1,
    .min_results = 1, .required_attrs = need_name, .verify = verify_graph_op,
    .summary = "a graph input (kernel argument) named by 'name'" },
  { .name = "graph.constant", .traits = KL_TRAIT_PURE | KL_TRAIT_HOST_PLAN | KL_TRAIT_PLAN_INPUT, .levels = KL_LEVEL_GRAPH,
    .max_results = 1, .min_results = 1, .required_attrs = need_value, .verify = verify_graph_op,
    .summary = "a constant tensor (flat logical row-major values)" },
  GOP("conv", 2, KL_TRAIT_GEMM_ANCHOR, .infer = infer_conv, .kernel = KL_KERNEL_CONV),
  GOP("dot", 2, KL_TRAIT_GEMM_ANCHOR, .infer = infer_dot, .kernel = KL_KERNEL_DOT),
  BINARY("add", KL_BIN_ADD, KL_TRAIT_COMMUTATIVE), BINARY("sub", KL_BIN_SUB, 0), BINARY("mul", KL_BIN_MUL, KL_TRAIT_COMMUTATIVE),
  BINARY("div", KL_BIN_DIV, 0), BINARY("max", KL_BIN_MAX, KL_TRAIT_COMMUTATIVE), BINARY("min", KL_BIN_MIN, KL_TRAIT_COMMUTATIVE),
  BINARY("pow", KL_BIN_POW, 0), BINARY("greater", KL_BIN_GREATER, 0), BINARY("greater_equal", KL_BIN_GREATER_EQUAL, 0),
  UNARY("neg", KL_UN_NEG), UNARY("abs", KL_UN_ABS), UNARY("exp", KL_UN_EXP), UNARY("log", KL_UN_LOG), UNARY("sqrt", KL_UN_SQRT),
  UNARY("rsqrt", KL_UN_RSQRT), UNARY("tanh", KL_UN_TANH), UNARY("sigmoid", KL_UN_SIGMOID), UNARY("relu", KL_UN_RELU),
  UNARY("erf", KL_UN_ERF), UNARY("recip", KL_UN_RECIP), UNARY("round", KL_UN_ROUND),
  UNARY("floor", KL_UN_FLOOR), UNARY("ceil", KL_UN_CEIL),
  GOP("clip", 1, EW, .infer = infer_clip, .scalar = KL_SCALAR_CLIP),
  GOP("where", 3, EW, .infer = infer_where, .scalar = KL_SCALAR_WHERE),
  GOP("convert", 1, EW, .infer = infer_convert, .scalar = KL_SCALAR_CONVERT),
  GOP("broadcast", 1, KL_TRAIT_VIEW, .infer = infer_broadcast, .view = KL_VIEWOP_BROADCAST),
  GOP("transpose", 1, IVIEW, .infer = infer_transpose, .view = KL_VIEWOP_TRANSPOSE),
  GOP("reshape", 1, IVIEW, .infer = infer_reshape, .view = KL_VIEWOP_RESHAPE),
  GOP("slice", 1, KL_TRAIT_VIEW, .infer = infer_slice, .view = KL_VIEWOP_SLICE),
  { .name = "graph.concat", .traits = KL_TRAIT_PURE, .levels = KL_LEVEL_GRAPH, .min_operands = 1, .max_operands = -1,
    .min_results = 1, .max_results = 1, .verify = verify_graph_op, .infer = infer_concat, .kernel = KL_KERNEL_CONCAT },
  { .name = "graph.launch", .traits = KL_TRAIT_HOST_PLAN, .levels = KL_LEVEL_GRAPH, .min_operands = 0, .max_operands = -1,
    .min_results = 0, .max_results = -1, .verify = verify_launch,
    .summary = "host plan step: runs kernel function 'callee' on its operands, producing its results" },
  REDUCE("reduce_sum", KL_RED_SUM), REDUCE("reduce_max", KL_RED_MAX), REDUCE("reduce_mean", KL_RED_MEAN),
  GOP("softmax", 1, 0, .infer = infer_softmax, .kernel = KL_KERNEL_SOFTMAX),
};
// clang-format on
#undef EW
#undef IVIEW
#undef BINARY
#undef UNARY
#undef REDUCE
#undef GOP
void kl_register_graph_dialect(kl_ctx *ctx) {
  for (size_t i = 0; i < sizeof graph_ops / sizeof *graph_ops; i++) kl_register_op(ctx, &graph_ops[i]);
}
