/* graph_eval_ops.c — the reference semantics of the builtin graph ops: one eval hook
 * (graph_eval.h) per kind of op over the reference kernels (refops.h), attached by
 * kl_graph_eval_register to every op definition whose data (scalar form, view kind,
 * kernel kind, traits) names one: no list of op names. Element-wise and reduce hooks read their
 * scalar op from the definition (kl_opdef.scalar_code). */
#include "runtime/graph_eval.h"
#include "runtime/refops.h"
#include "core/dialect_graph.h"
#include <stdio.h>
#include <stdlib.h>

static kl_dtype result_dt(const kl_op *op) { return kl_dtype_of_type(op->results[0].type->elem); }

static int64_t *attr_ints(kl_op *op, const char *name, int64_t *buf, int max, int *n, const int64_t *dflt, int ndflt) {
  int k = kl_op_attr_i64s(op, name, buf, max);
  if (k < 0) {
    int64_t one;
    if (kl_op_attr_i64(op, name, &one)) {
      buf[0] = one;
      *n = 1;
      return buf;
    }
    for (int i = 0; i < ndflt; i++) buf[i] = dflt[i];
    *n = ndflt;
    return buf;
  }
  *n = k;
  return buf;
}

static int eval_binary(kl_op *op, kl_tensor *const *in, kl_tensor **out, char *err, size_t errlen) {
  return kl_ref_binary((kl_binop)kl_op_scalar_code(op), in[0], in[1], result_dt(op), out, err, errlen);
}
static int eval_unary(kl_op *op, kl_tensor *const *in, kl_tensor **out, char *err, size_t errlen) {
  return kl_ref_unary((kl_unop)kl_op_scalar_code(op), in[0], result_dt(op), out, err, errlen);
}
static int eval_clip(kl_op *op, kl_tensor *const *in, kl_tensor **out, char *err, size_t errlen) {
  double lo = 0, hi = 0;
  kl_op_attr_f64(op, "min", &lo);
  kl_op_attr_f64(op, "max", &hi);
  return kl_ref_clip(in[0], lo, hi, result_dt(op), out, err, errlen);
}
static int eval_where(kl_op *op, kl_tensor *const *in, kl_tensor **out, char *err, size_t errlen) {
  return kl_ref_where(in[0], in[1], in[2], result_dt(op), out, err, errlen);
}
static int eval_convert(kl_op *op, kl_tensor *const *in, kl_tensor **out, char *err, size_t errlen) {
  return kl_ref_convert(in[0], result_dt(op), out, err, errlen);
}
static int eval_conv(kl_op *op, kl_tensor *const *in, kl_tensor **out, char *err, size_t errlen) {
  kl_conv_params p;
  if (!kl_graph_conv_params(op->ctx, op->loc, in[0]->rank - 2, op->nattrs, op->attrs, &p)) {
    snprintf(err, errlen, "conv: bad attributes");
    return 1;
  }
  return kl_ref_conv(in[0], in[1], &p, result_dt(op), out, err, errlen);
}
static int eval_dot(kl_op *op, kl_tensor *const *in, kl_tensor **out, char *err, size_t errlen) {
  int64_t ta = 0, tb = 0;
  kl_op_attr_i64(op, "transpose_a", &ta);
  kl_op_attr_i64(op, "transpose_b", &tb);
  return kl_ref_dot(in[0], in[1], ta, tb, result_dt(op), out, err, errlen);
}
static int eval_broadcast(kl_op *op, kl_tensor *const *in, kl_tensor **out, char *err, size_t errlen) {
  const kl_type *rt = op->results[0].type;
  kl_shape s = kl_shape_make(rt->rank, rt->shape);
  return kl_ref_broadcast(in[0], &s, out, err, errlen);
}
static int eval_transpose(kl_op *op, kl_tensor *const *in, kl_tensor **out, char *err, size_t errlen) {
  int64_t b[KL_MAX_RANK];
  int ax[KL_MAX_RANK], cnt;
  attr_ints(op, "perm", b, KL_MAX_RANK, &cnt, NULL, 0);
  for (int i = 0; i < cnt; i++) ax[i] = (int)b[i];
  return kl_ref_transpose(in[0], cnt, ax, out, err, errlen);
}
static int eval_reshape(kl_op *op, kl_tensor *const *in, kl_tensor **out, char *err, size_t errlen) {
  const kl_type *rt = op->results[0].type;
  return kl_ref_reshape(in[0], rt->rank, rt->shape, out, err, errlen);
}
static int eval_slice(kl_op *op, kl_tensor *const *in, kl_tensor **out, char *err, size_t errlen) {
  int r = in[0]->rank, k;
  int64_t b[KL_MAX_RANK], c[KL_MAX_RANK], d[KL_MAX_RANK], ones[KL_MAX_RANK];
  for (int i = 0; i < r; i++) ones[i] = 1;
  attr_ints(op, "begin", b, r, &k, NULL, 0);
  attr_ints(op, "end", c, r, &k, NULL, 0);
  attr_ints(op, "step", d, r, &k, ones, r);
  return kl_ref_slice(in[0], b, c, d, out, err, errlen);
}
static int eval_concat(kl_op *op, kl_tensor *const *in, kl_tensor **out, char *err, size_t errlen) {
  int64_t axis = 0;
  kl_op_attr_i64(op, "axis", &axis);
  return kl_ref_concat(op->nopnds, (const kl_tensor *const *)in, (int)axis, out, err, errlen);
}
static int eval_reduce(kl_op *op, kl_tensor *const *in, kl_tensor **out, char *err, size_t errlen) {
  int64_t b[KL_MAX_RANK];
  int ax[KL_MAX_RANK], cnt;
  attr_ints(op, "axes", b, KL_MAX_RANK, &cnt, NULL, 0);
  for (int i = 0; i < cnt; i++) ax[i] = (int)b[i];
  int64_t keep = 0;
  kl_op_attr_i64(op, "keepdims", &keep);
  return kl_ref_reduce((kl_reduce_op)kl_op_scalar_code(op), in[0], cnt, ax, keep, result_dt(op), out, err, errlen);
}
static int eval_softmax(kl_op *op, kl_tensor *const *in, kl_tensor **out, char *err, size_t errlen) {
  int64_t axis = -1;
  kl_op_attr_i64(op, "axis", &axis);
  return kl_ref_softmax(in[0], (int)axis, result_dt(op), out, err, errlen);
}
/* A plan input: makes its tensor (*out is NULL on entry), flat logical values. */
static int eval_constant(kl_op *op, kl_tensor *const *in, kl_tensor **out, char *err, size_t errlen) {
  const kl_type *rt = op->results[0].type;
  const kl_attr *v = kl_op_attr(op, "value");
  int64_t numel = kl_type_numel(rt);
  double *vals = kl_xmalloc((numel ? numel : 1) * sizeof *vals);
  for (int64_t i = 0; i < numel; i++)
    vals[i] = v->elems[i]->kind == KL_AT_FLOAT ? v->elems[i]->f : (double)v->elems[i]->i;
  *out = kl_tensor_from_f64(result_dt(op), rt->rank, rt->shape, rt->strides, vals, err, errlen);
  free(vals);
  return *out ? 0 : 1;
}

/* The evaluator an op gets follows from its definition's data (ir.h): its scalar form,
 * else its view kind, else its kernel kind, else a plan input that is not a param (a
 * constant); NULL for ops that have none of these (param, launch, non-graph ops). */
static kl_eval_fn builtin_hook(const kl_opdef *d) {
  if (!(d->levels & KL_LEVEL_GRAPH)) return NULL;
  switch ((kl_scalar_form)d->scalar) {
    case KL_SCALAR_BINARY: return eval_binary;
    case KL_SCALAR_UNARY: return eval_unary;
    case KL_SCALAR_CLIP: return eval_clip;
    case KL_SCALAR_WHERE: return eval_where;
    case KL_SCALAR_CONVERT: return eval_convert;
    case KL_SCALAR_REDUCE: return eval_reduce;
    case KL_SCALAR_NONE: break;
  }
  switch ((kl_view_kind)d->view) {
    case KL_VIEWOP_BROADCAST: return eval_broadcast;
    case KL_VIEWOP_TRANSPOSE: return eval_transpose;
    case KL_VIEWOP_RESHAPE: return eval_reshape;
    case KL_VIEWOP_SLICE: return eval_slice;
    case KL_VIEWOP_NONE: break;
  }
  switch ((kl_kernel_kind)d->kernel) {
    case KL_KERNEL_CONV: return eval_conv;
    case KL_KERNEL_DOT: return eval_dot;
    case KL_KERNEL_SOFTMAX: return eval_softmax;
    case KL_KERNEL_CONCAT: return eval_concat;
    case KL_KERNEL_REDUCE:
    case KL_KERNEL_NONE: break;
  }
  /* a pure plan input is its own value (graph.constant); graph.param is bound to an input */
  if ((d->traits & KL_TRAIT_PLAN_INPUT) && (d->traits & KL_TRAIT_PURE)) return eval_constant;
  return NULL;
}

kl_status kl_eval_attach(kl_ctx *ctx, const char *name, kl_eval_fn fn) {
  return kl_opdef_attach(ctx, KL_HOOK_EVAL, name, (kl_hook_fn)fn);
}
kl_eval_fn kl_eval_hook(const kl_op *op) { return (kl_eval_fn)kl_op_hook(op, KL_HOOK_EVAL); }

void kl_graph_eval_register(kl_ctx *ctx) {
  static const char key[] = "graph_eval.hooks";
  if (kl_ctx_get_user(ctx, key)) return;
  kl_ctx_set_user(ctx, key, (void *)key);
  for (int i = 0; i < kl_opdef_count(ctx); i++) {
    const kl_opdef *d = kl_opdef_at(ctx, i);
    kl_eval_fn fn = builtin_hook(d);
    if (fn && !kl_opdef_hook(ctx, d, KL_HOOK_EVAL)) kl_eval_attach(ctx, d->name, fn);
  }
}
