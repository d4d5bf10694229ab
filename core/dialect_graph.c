/* dialect_graph.c — graph ops: registration, inference, builders, verifiers. */
#include "core/dialect_graph.h"
#include "core/dtype.h"
#include "core/infer.h"
#include "core/scalar_ops.h"
#include <stdio.h>
#include <string.h>

static const kl_attr *find_attr(int n, const kl_named_attr *attrs, const char *name) {
  for (int i = n - 1; i >= 0; i--) if (!strcmp(attrs[i].name, name)) return attrs[i].value;
  return NULL;
}
static kl_shape shape_of(const kl_type *t) { return kl_shape_make(t->rank, t->shape); }
static const char *short_name(const char *name) { const char *d = strchr(name, '.'); return d ? d + 1 : name; }

/* Reads an int array attribute of exactly `want` entries (want < 0: any up to max);
 * absent -> defaults. Returns the count or -1 after an error. */
static int int_list(kl_ctx *ctx, kl_loc loc, const char *op, int n, const kl_named_attr *attrs, const char *name,
                    int want, int max, const int64_t *dflt, int64_t *out) {
  const kl_attr *a = find_attr(n, attrs, name);
  if (!a) {
    if (!dflt) { kl_emit_error(ctx, loc, "%s: missing attribute '%s'", op, name); return -1; }
    for (int i = 0; i < want; i++) out[i] = dflt[i];
    return want;
  }
  int cnt;
  if (a->kind == KL_AT_INT && want == 1) { out[0] = a->i; return 1; }
  if (!kl_attr_get_i64_array(a, max, out, &cnt) || (want >= 0 && cnt != want)) {
    if (want >= 0) kl_emit_error(ctx, loc, "%s: attribute '%s' must be a list of %d integers, got %s", op, name, want, a->text);
    else kl_emit_error(ctx, loc, "%s: attribute '%s' must be a list of at most %d integers, got %s", op, name, max, a->text);
    return -1;
  }
  return cnt;
}
/* Attribute values the IR's limits bound (core/type.h): axes and permutation entries
 * fit an operand's rank (checked before they are narrowed to int), conv strides,
 * dilations and groups are in [1, 2^40], paddings in [0, 2^40], slice steps in
 * [1, 2^40] and bounds in [-2^40, 2^40]; so the shape arithmetic cannot overflow. */
static bool ints_in(kl_ctx *ctx, kl_loc loc, const char *op, const char *name, int n, const int64_t *v, int64_t lo, int64_t hi) {
  for (int i = 0; i < n; i++)
    if (v[i] < lo || v[i] > hi) {
      if (hi == KL_MAX_DIM) kl_emit_error(ctx, loc, "%s: %s %lld out of range (%s to 2^40)", op, name, (long long)v[i], lo < 0 ? "-2^40" : lo ? "1" : "0");
      else kl_emit_error(ctx, loc, "%s: %s %lld out of range for a rank-%lld operand", op, name, (long long)v[i], (long long)hi);
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
  if (a->kind == KL_AT_FLOAT) { *out = a->f; return true; }
  if (a->kind == KL_AT_INT) { *out = (double)a->i; return true; }
  return false;
}

/* Result tensor type: shape `s`, element `elem`, strides following the dimension order
 * of `like` (a tensor type of the same rank with a dense permutation layout), else
 * row-major. */
static const kl_type *result_type(kl_ctx *ctx, const kl_shape *s, const kl_type *elem, const kl_type *like) {
  int perm[KL_TENSOR_MAX_RANK];
  int64_t strides[KL_TENSOR_MAX_RANK];
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

static int expected_operands(const char *n) {
  if (kl_binop_from_name(n) >= 0 || !strcmp(n, "conv") || !strcmp(n, "dot")) return 2;
  if (!strcmp(n, "where")) return 3;
  if (!strcmp(n, "param") || !strcmp(n, "constant")) return 0;
  if (!strcmp(n, "concat")) return -1;
  return 1;
}

const kl_type *kl_graph_infer(kl_ctx *ctx, const char *name, kl_loc loc, int n, const kl_type *const *ts,
                              int na, const kl_named_attr *attrs, const kl_type *result_elem) {
  const char *op = short_name(name);
  char err[512] = "";
  int want = expected_operands(op);
  if (want >= 0 && n != want)
    { kl_emit_error(ctx, loc, "%s: expects %d operand%s, got %d", op, want, want == 1 ? "" : "s", n); return NULL; }
  if (want < 0 && n < 1) { kl_emit_error(ctx, loc, "%s: expects at least one operand", op); return NULL; }
  for (int i = 0; i < n; i++)
    if (!ts[i] || ts[i]->kind != KL_TY_TENSOR || ts[i]->rank > KL_TENSOR_MAX_RANK)
      { kl_emit_error(ctx, loc, "%s: operand %d must be a tensor of rank <= %d, got %s", op, i, KL_TENSOR_MAX_RANK, kl_type_str(ts[i])); return NULL; }
  kl_shape s[3], out = {0};
  for (int i = 0; i < n && i < 3; i++) s[i] = shape_of(ts[i]);
  const kl_type *elem = n ? ts[0]->elem : NULL, *like = NULL;
  int rc = 0;
  char buf[2][128];
  if (kl_binop_from_name(op) >= 0) {
    if (ts[0]->elem != ts[1]->elem) {
      kl_emit_error(ctx, loc, "%s: element types differ: %s%s vs %s%s", op, kl_dims_format(s[0].rank, s[0].dim, buf[0], 128),
                    ts[0]->elem->text, kl_dims_format(s[1].rank, s[1].dim, buf[1], 128), ts[1]->elem->text);
      return NULL;
    }
    rc = kl_infer_broadcast(op, &s[0], &s[1], &out, err, sizeof err);
    like = kl_shape_equal(&s[0], &out) ? ts[0] : ts[1];
  } else if (kl_unop_from_name(op) >= 0 || !strcmp(op, "softmax")) {
    out = s[0]; like = ts[0];
    if (!strcmp(op, "softmax")) {
      int64_t ax; int axis;
      if (int_list(ctx, loc, op, na, attrs, "axis", 1, 1, (int64_t[]){-1}, &ax) < 0 ||
          !axes_in(ctx, loc, op, "axis", 1, &ax, s[0].rank)) return NULL;
      rc = kl_normalize_axis(op, &s[0], (int)ax, &axis, err, sizeof err);
    }
    if (!rc && !kl_type_is_float(elem) && (strcmp(op, "neg") && strcmp(op, "abs") && strcmp(op, "relu")))
      { kl_emit_error(ctx, loc, "%s: needs a float tensor, got %s", op, ts[0]->text); return NULL; }
  } else if (!strcmp(op, "clip")) {
    double lo, hi;
    if (!num_attr(na, attrs, "min", &lo) || !num_attr(na, attrs, "max", &hi))
      { kl_emit_error(ctx, loc, "clip: needs numeric attributes 'min' and 'max'"); return NULL; }
    if (lo > hi) { kl_emit_error(ctx, loc, "clip: min %g is greater than max %g", lo, hi); return NULL; }
    out = s[0]; like = ts[0];
  } else if (!strcmp(op, "where")) {
    if (ts[1]->elem != ts[2]->elem) { kl_emit_error(ctx, loc, "where: branch element types differ: %s vs %s", ts[1]->elem->text, ts[2]->elem->text); return NULL; }
    rc = kl_infer_where(&s[0], &s[1], &s[2], &out, err, sizeof err);
    elem = ts[1]->elem;
    like = kl_shape_equal(&s[1], &out) ? ts[1] : kl_shape_equal(&s[2], &out) ? ts[2] : ts[0];
  } else if (!strcmp(op, "convert")) {
    if (!result_elem || !kl_type_is_scalar(result_elem)) { kl_emit_error(ctx, loc, "convert: needs a target dtype"); return NULL; }
    out = s[0]; like = ts[0]; elem = result_elem;
  } else if (!strcmp(op, "conv")) {
    kl_conv2d_params p;
    if (int_list(ctx, loc, op, na, attrs, "stride", 2, 2, (int64_t[]){1, 1}, p.stride) < 0 ||
        int_list(ctx, loc, op, na, attrs, "padding", 4, 4, (int64_t[]){0, 0, 0, 0}, p.pad) < 0 ||
        int_list(ctx, loc, op, na, attrs, "dilation", 2, 2, (int64_t[]){1, 1}, p.dilation) < 0 ||
        int_list(ctx, loc, op, na, attrs, "groups", 1, 1, (int64_t[]){1}, &p.groups) < 0) return NULL;
    if (!ints_in(ctx, loc, op, "stride", 2, p.stride, 1, KL_MAX_DIM) || !ints_in(ctx, loc, op, "padding", 4, p.pad, 0, KL_MAX_DIM) ||
        !ints_in(ctx, loc, op, "dilation", 2, p.dilation, 1, KL_MAX_DIM) || !ints_in(ctx, loc, op, "groups", 1, &p.groups, 1, KL_MAX_DIM))
      return NULL;
    if (ts[0]->elem != ts[1]->elem) { kl_emit_error(ctx, loc, "conv: input %s and filter %s element types differ", ts[0]->text, ts[1]->text); return NULL; }
    rc = kl_infer_conv2d(&s[0], &s[1], &p, &out, err, sizeof err);
    like = ts[0]; elem = kl_graph_contraction_elem(ctx, elem);
  } else if (!strcmp(op, "dot")) {
    if (ts[0]->elem != ts[1]->elem) { kl_emit_error(ctx, loc, "dot: element types differ: %s vs %s", ts[0]->text, ts[1]->text); return NULL; }
    rc = kl_infer_dot(&s[0], &s[1], bool_attr(na, attrs, "transpose_a"), bool_attr(na, attrs, "transpose_b"), &out, err, sizeof err);
    elem = kl_graph_contraction_elem(ctx, elem);
  } else if (!strcmp(op, "broadcast")) {
    int64_t dims[KL_TENSOR_MAX_RANK];
    int r = int_list(ctx, loc, op, na, attrs, "shape", -1, KL_TENSOR_MAX_RANK, NULL, dims);
    if (r < 0) return NULL;
    if (kl_shape_init(&out, r, dims, op, err, sizeof err) == 0) rc = kl_infer_broadcast_to(op, &s[0], &out, err, sizeof err);
    else rc = 1;
  } else if (!strcmp(op, "transpose")) {
    int64_t p64[KL_TENSOR_MAX_RANK]; int perm[KL_TENSOR_MAX_RANK];
    int r = int_list(ctx, loc, op, na, attrs, "perm", -1, KL_TENSOR_MAX_RANK, NULL, p64);
    if (r < 0 || !axes_in(ctx, loc, op, "perm entry", r, p64, s[0].rank)) return NULL;
    for (int i = 0; i < r; i++) perm[i] = (int)p64[i];
    rc = kl_infer_transpose(&s[0], r, perm, &out, err, sizeof err);
  } else if (!strcmp(op, "reshape")) {
    int64_t dims[KL_TENSOR_MAX_RANK];
    int r = int_list(ctx, loc, op, na, attrs, "shape", -1, KL_TENSOR_MAX_RANK, NULL, dims);
    if (r < 0) return NULL;
    rc = kl_infer_reshape(&s[0], r, dims, &out, err, sizeof err);
  } else if (!strcmp(op, "slice")) {
    int64_t b[KL_TENSOR_MAX_RANK], e[KL_TENSOR_MAX_RANK], st[KL_TENSOR_MAX_RANK], ones[KL_TENSOR_MAX_RANK];
    int r = s[0].rank;
    for (int i = 0; i < r; i++) ones[i] = 1;
    if (int_list(ctx, loc, op, na, attrs, "begin", r, r, NULL, b) < 0 || int_list(ctx, loc, op, na, attrs, "end", r, r, NULL, e) < 0 ||
        int_list(ctx, loc, op, na, attrs, "step", r, r, ones, st) < 0) return NULL;
    if (!ints_in(ctx, loc, op, "begin", r, b, -KL_MAX_DIM, KL_MAX_DIM) || !ints_in(ctx, loc, op, "end", r, e, -KL_MAX_DIM, KL_MAX_DIM) ||
        !ints_in(ctx, loc, op, "step", r, st, 1, KL_MAX_DIM)) return NULL;
    rc = kl_infer_slice(&s[0], b, e, st, &out, NULL, err, sizeof err);
  } else if (!strcmp(op, "concat")) {
    kl_shape ins[64];
    if (n > 64) { kl_emit_error(ctx, loc, "concat: at most 64 operands"); return NULL; }
    for (int i = 0; i < n; i++) {
      ins[i] = shape_of(ts[i]);
      if (ts[i]->elem != elem) { kl_emit_error(ctx, loc, "concat: operand %d has element type %s, expected %s", i, ts[i]->elem->text, elem->text); return NULL; }
    }
    int64_t ax;
    if (int_list(ctx, loc, op, na, attrs, "axis", 1, 1, NULL, &ax) < 0 || !axes_in(ctx, loc, op, "axis", 1, &ax, s[0].rank)) return NULL;
    rc = kl_infer_concat(n, ins, (int)ax, &out, err, sizeof err);
  } else if (!strncmp(op, "reduce_", 7)) {
    int64_t a64[KL_TENSOR_MAX_RANK]; int axes[KL_TENSOR_MAX_RANK];
    int r = int_list(ctx, loc, op, na, attrs, "axes", -1, KL_TENSOR_MAX_RANK, NULL, a64);
    if (r < 0 || !axes_in(ctx, loc, op, "axis", r, a64, s[0].rank)) return NULL;
    for (int i = 0; i < r; i++) axes[i] = (int)a64[i];
    if (kl_reduce_from_name(op + 7) < 0) { kl_emit_error(ctx, loc, "%s: unknown reduction", op); return NULL; }
    rc = kl_infer_reduce(op, &s[0], r, axes, bool_attr(na, attrs, "keepdims"), &out, NULL, err, sizeof err);
  } else {
    kl_emit_error(ctx, loc, "unknown graph op '%s'", name);
    return NULL;
  }
  if (rc) { kl_emit_error(ctx, loc, "%s", err); return NULL; }
  if (!kl_shape_check(out.rank, out.dim, NULL, err, sizeof err)) { kl_emit_error(ctx, loc, "%s: result %s", op, err); return NULL; }
  return result_type(ctx, &out, elem, like);
}

/* ---- graph containers ---- */
bool kl_is_graph(const kl_op *op) { return op && !strcmp(op->name, "func.func") && kl_op_attr(op, "graph"); }
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
  if (ret) { kl_op_set_operands(ret, n, outs); ret->loc = loc; return; }
  kl_block_push_op(kl_graph_body(graph), kl_op_create(graph->ctx, "func.return", loc, n, outs, 0, NULL, 0, NULL, 0));
}
int kl_graph_params(kl_op *graph, kl_op **out, int max) {
  int n = 0;
  for (kl_op *o = kl_graph_body(graph)->first; o; o = o->next)
    if (!strcmp(o->name, "graph.param")) { if (n < max) out[n] = o; n++; }
  return n;
}
kl_op *kl_graph_param(kl_op *graph, const char *name) {
  for (kl_op *o = kl_graph_body(graph)->first; o; o = o->next) {
    const char *pn = kl_op_attr_string(o, "name");
    if (!strcmp(o->name, "graph.param") && pn && !strcmp(pn, name)) return o;
  }
  return NULL;
}

kl_op *kl_graph_build(kl_op *graph, const char *name, kl_loc loc, int n, kl_value *const *opnds,
                      int nattrs, const kl_named_attr *attrs, const kl_type *type) {
  kl_ctx *ctx = graph->ctx;
  const char *op = short_name(name);
  char full[64];
  snprintf(full, sizeof full, "graph.%s", op);
  const kl_type *rt;
  if (!strcmp(op, "param") || !strcmp(op, "constant")) {
    if (!type || type->kind != KL_TY_TENSOR) { kl_emit_error(ctx, loc, "%s: needs a tensor type", op); return NULL; }
    const kl_attr *pn = find_attr(nattrs, attrs, "name");
    if (!strcmp(op, "param")) {
      if (!pn || pn->kind != KL_AT_STR) { kl_emit_error(ctx, loc, "param: needs a name"); return NULL; }
      if (kl_graph_param(graph, pn->s)) { kl_emit_error(ctx, loc, "param: a parameter named '%s' already exists", pn->s); return NULL; }
    }
    rt = type;
  } else {
    const kl_type *ts[64];
    if (n > 64) { kl_emit_error(ctx, loc, "%s: too many operands", op); return NULL; }
    for (int i = 0; i < n; i++) ts[i] = opnds[i] ? opnds[i]->type : NULL;
    rt = kl_graph_infer(ctx, full, loc, n, ts, nattrs, attrs, type);
    if (!rt) return NULL;
  }
  kl_op *o = kl_op_create(ctx, full, loc, n, opnds, 1, &rt, nattrs, attrs, 0);
  kl_op *ret = kl_graph_return(graph);
  if (ret) kl_op_insert_before(ret, o); else kl_block_push_op(kl_graph_body(graph), o);
  return o;
}

/* ---- verification ---- */
static kl_status verify_graph_op(kl_op *op) {
  const char *n = short_name(op->name);
  if (!strcmp(n, "param") || !strcmp(n, "constant")) {
    if (op->results[0].type->kind != KL_TY_TENSOR) return kl_emit_error(op->ctx, op->loc, "'%s' must produce a tensor", op->name);
    if (!strcmp(n, "constant")) {
      const kl_attr *v = kl_op_attr(op, "value");
      if (!v || v->kind != KL_AT_ARRAY || v->n != kl_type_numel(op->results[0].type))
        return kl_emit_error(op->ctx, op->loc, "'graph.constant' needs 'value' with %lld numbers", (long long)kl_type_numel(op->results[0].type));
    }
    return KL_OK;
  }
  const kl_type *ts[64];
  if (op->nopnds > 64) return kl_emit_error(op->ctx, op->loc, "'%s': too many operands", op->name);
  for (int i = 0; i < op->nopnds; i++) ts[i] = op->opnds[i].value->type;
  const kl_type *rt = kl_graph_infer(op->ctx, op->name, op->loc, op->nopnds, ts, op->nattrs, op->attrs, op->results[0].type->elem);
  if (!rt) return KL_ERR;
  const kl_type *got = op->results[0].type;
  kl_shape a = shape_of(rt), b = shape_of(got);
  if (got->kind != KL_TY_TENSOR || got->elem != rt->elem || !kl_shape_equal(&a, &b))
    return kl_emit_error(op->ctx, op->loc, "'%s' result type %s does not match the inferred %s", op->name, kl_type_str(got), kl_type_str(rt));
  return KL_OK;
}

static kl_status verify_launch(kl_op *op) {
  const kl_attr *c = kl_op_attr(op, "callee");
  if (!c || c->kind != KL_AT_SYMREF) return kl_emit_error(op->ctx, op->loc, "'graph.launch' needs a symbol attribute 'callee'");
  kl_op *m = op;
  while (kl_op_parent_op(m)) m = kl_op_parent_op(m);
  if (!kl_module_lookup(m, c->s)) return kl_emit_error(op->ctx, op->loc, "'graph.launch' callee @%s not found", c->s);
  return KL_OK;
}
static const char *const need_name[] = { "name", NULL };
static const char *const need_value[] = { "value", NULL };
#define GOP(nm, nin, tr) { .name = "graph." nm, .traits = KL_TRAIT_PURE | (tr), .levels = KL_LEVEL_GRAPH, \
                           .min_operands = nin, .max_operands = nin, .min_results = 1, .max_results = 1, \
                           .verify = verify_graph_op }
#define EW KL_TRAIT_ELEMENTWISE
#define IVIEW (KL_TRAIT_VIEW | KL_TRAIT_INVERTIBLE_VIEW)
static const kl_opdef graph_ops[] = {
  { .name = "graph.param", .levels = KL_LEVEL_GRAPH, .max_results = 1, .min_results = 1, .required_attrs = need_name,
    .verify = verify_graph_op, .summary = "a graph input (kernel argument) named by 'name'" },
  { .name = "graph.constant", .traits = KL_TRAIT_PURE, .levels = KL_LEVEL_GRAPH, .max_results = 1, .min_results = 1,
    .required_attrs = need_value, .verify = verify_graph_op, .summary = "a constant tensor (flat logical row-major values)" },
  GOP("conv", 2, KL_TRAIT_GEMM_ANCHOR), GOP("dot", 2, KL_TRAIT_GEMM_ANCHOR),
  GOP("add", 2, EW | KL_TRAIT_COMMUTATIVE), GOP("sub", 2, EW), GOP("mul", 2, EW | KL_TRAIT_COMMUTATIVE), GOP("div", 2, EW),
  GOP("max", 2, EW | KL_TRAIT_COMMUTATIVE), GOP("min", 2, EW | KL_TRAIT_COMMUTATIVE), GOP("pow", 2, EW),
  GOP("neg", 1, EW), GOP("abs", 1, EW), GOP("exp", 1, EW), GOP("log", 1, EW), GOP("sqrt", 1, EW), GOP("rsqrt", 1, EW),
  GOP("tanh", 1, EW), GOP("sigmoid", 1, EW), GOP("relu", 1, EW), GOP("clip", 1, EW), GOP("where", 3, EW),
  GOP("convert", 1, EW), GOP("broadcast", 1, KL_TRAIT_VIEW), GOP("transpose", 1, IVIEW), GOP("reshape", 1, IVIEW),
  GOP("slice", 1, KL_TRAIT_VIEW),
  { .name = "graph.concat", .traits = KL_TRAIT_PURE, .levels = KL_LEVEL_GRAPH, .min_operands = 1, .max_operands = -1,
    .min_results = 1, .max_results = 1, .verify = verify_graph_op },
  { .name = "graph.launch", .levels = KL_LEVEL_GRAPH, .min_operands = 0, .max_operands = -1, .min_results = 0,
    .max_results = -1, .verify = verify_launch,
    .summary = "host plan step: runs kernel function 'callee' on its operands, producing its results" },
  GOP("reduce_sum", 1, 0), GOP("reduce_max", 1, 0), GOP("reduce_mean", 1, 0), GOP("softmax", 1, 0),
};
#undef EW
#undef IVIEW
#undef GOP
void kl_register_graph_dialect(kl_ctx *ctx) {
  for (size_t i = 0; i < sizeof graph_ops / sizeof *graph_ops; i++) kl_register_op(ctx, &graph_ops[i]);
}
