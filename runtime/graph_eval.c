/* graph_eval.c — evaluates graph ops in order with the reference kernels. */
#include "runtime/graph_eval.h"
#include "core/dialect_graph.h"
#include "runtime/refops.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

kl_dtype kl_dtype_of_type(const kl_type *t) { return kl_type_dtype(t); }

static kl_status fail_at(kl_op *op, char *err, size_t errlen, const char *msg) {
  char where[256]; kl_loc_format(op->loc, where, sizeof where);
  snprintf(err, errlen, "%s: error: %s: %s", where, op->name, msg);
  return KL_ERR;
}

kl_status kl_graph_check_input(kl_op *param, const kl_tensor *t, char *err, size_t errlen) {
  const kl_type *pt = param->results[0].type;
  const char *name = kl_op_attr_string(param, "name");
  char b1[128], b2[128], msg[512];
  kl_shape ps = kl_shape_make(pt->rank, pt->shape), ts = kl_tensor_shape(t);
  if (!kl_shape_equal(&ps, &ts)) {
    snprintf(msg, sizeof msg, "input '%s' has shape %s, the param expects %s", name, kl_shape_format(&ts, b1, 128), kl_shape_format(&ps, b2, 128));
    return fail_at(param, err, errlen, msg);
  }
  if (t->dtype != kl_dtype_of_type(pt->elem)) {
    snprintf(msg, sizeof msg, "input '%s' has dtype %s, the param expects %s", name, kl_dtype_name(t->dtype), pt->elem->text);
    return fail_at(param, err, errlen, msg);
  }
  if (!kl_strides_equivalent(pt->rank, pt->shape, pt->strides, t->strides)) {
    char pl[128];
    kl_dims_format(pt->rank, pt->strides, pl, sizeof pl);
    snprintf(msg, sizeof msg, "input '%s' has layout %s but the param's layout is strides=%s (convert it with t:as_layout first)",
             name, kl_tensor_layout_str(t, b1, sizeof b1), pl);
    return fail_at(param, err, errlen, msg);
  }
  return KL_OK;
}

static int64_t *attr_ints(kl_op *op, const char *name, int64_t *buf, int max, int *n, const int64_t *dflt, int ndflt) {
  int k = kl_op_attr_i64s(op, name, buf, max);
  if (k < 0) {
    int64_t one;
    if (kl_op_attr_i64(op, name, &one)) { buf[0] = one; *n = 1; return buf; }
    for (int i = 0; i < ndflt; i++) buf[i] = dflt[i];
    *n = ndflt; return buf;
  }
  *n = k; return buf;
}

static int eval_op(kl_op *op, kl_tensor **in, kl_tensor **out, char *err, size_t errlen) {
  const char *n = op->name + strlen("graph.");
  const kl_type *rt = op->results[0].type;
  kl_dtype dt = kl_dtype_of_type(rt->elem);
  int cnt, code;
  int64_t b[KL_TENSOR_MAX_RANK], c[KL_TENSOR_MAX_RANK], d[KL_TENSOR_MAX_RANK];
  int ax[KL_TENSOR_MAX_RANK];
  if ((code = kl_binop_from_name(n)) >= 0) return kl_ref_binary(code, in[0], in[1], dt, out, err, errlen);
  if ((code = kl_unop_from_name(n)) >= 0) return kl_ref_unary(code, in[0], dt, out, err, errlen);
  if (!strcmp(n, "clip")) {
    double lo = 0, hi = 0;
    kl_op_attr_f64(op, "min", &lo); kl_op_attr_f64(op, "max", &hi);
    return kl_ref_clip(in[0], lo, hi, dt, out, err, errlen);
  }
  if (!strcmp(n, "where")) return kl_ref_where(in[0], in[1], in[2], dt, out, err, errlen);
  if (!strcmp(n, "convert")) return kl_ref_convert(in[0], dt, out, err, errlen);
  if (!strcmp(n, "conv")) {
    kl_conv2d_params p = KL_CONV2D_DEFAULT;
    attr_ints(op, "stride", p.stride, 2, &cnt, p.stride, 2);
    attr_ints(op, "padding", p.pad, 4, &cnt, p.pad, 4);
    attr_ints(op, "dilation", p.dilation, 2, &cnt, p.dilation, 2);
    kl_op_attr_i64(op, "groups", &p.groups);
    return kl_ref_conv2d(in[0], in[1], &p, dt, out, err, errlen);
  }
  if (!strcmp(n, "dot")) {
    int64_t ta = 0, tb = 0;
    kl_op_attr_i64(op, "transpose_a", &ta); kl_op_attr_i64(op, "transpose_b", &tb);
    return kl_ref_dot(in[0], in[1], ta, tb, dt, out, err, errlen);
  }
  if (!strcmp(n, "broadcast")) { kl_shape s = kl_shape_make(rt->rank, rt->shape); return kl_ref_broadcast(in[0], &s, out, err, errlen); }
  if (!strcmp(n, "transpose")) {
    attr_ints(op, "perm", b, KL_TENSOR_MAX_RANK, &cnt, NULL, 0);
    for (int i = 0; i < cnt; i++) ax[i] = (int)b[i];
    return kl_ref_transpose(in[0], cnt, ax, out, err, errlen);
  }
  if (!strcmp(n, "reshape")) return kl_ref_reshape(in[0], rt->rank, rt->shape, out, err, errlen);
  if (!strcmp(n, "slice")) {
    int r = in[0]->rank, k;
    int64_t ones[KL_TENSOR_MAX_RANK];
    for (int i = 0; i < r; i++) ones[i] = 1;
    attr_ints(op, "begin", b, r, &k, NULL, 0); attr_ints(op, "end", c, r, &k, NULL, 0); attr_ints(op, "step", d, r, &k, ones, r);
    return kl_ref_slice(in[0], b, c, d, out, err, errlen);
  }
  if (!strcmp(n, "concat")) {
    int64_t axis = 0; kl_op_attr_i64(op, "axis", &axis);
    return kl_ref_concat(op->nopnds, (const kl_tensor *const *)in, (int)axis, out, err, errlen);
  }
  if (!strncmp(n, "reduce_", 7)) {
    attr_ints(op, "axes", b, KL_TENSOR_MAX_RANK, &cnt, NULL, 0);
    for (int i = 0; i < cnt; i++) ax[i] = (int)b[i];
    int64_t keep = 0; kl_op_attr_i64(op, "keepdims", &keep);
    return kl_ref_reduce(kl_reduce_from_name(n + 7), in[0], cnt, ax, keep, dt, out, err, errlen);
  }
  if (!strcmp(n, "softmax")) {
    int64_t axis = -1; kl_op_attr_i64(op, "axis", &axis);
    return kl_ref_softmax(in[0], (int)axis, dt, out, err, errlen);
  }
  if (!strcmp(n, "constant")) {
    const kl_attr *v = kl_op_attr(op, "value");
    int64_t numel = kl_type_numel(rt);
    double *vals = kl_xmalloc((numel ? numel : 1) * sizeof *vals);
    for (int64_t i = 0; i < numel; i++) vals[i] = v->elems[i]->kind == KL_AT_FLOAT ? v->elems[i]->f : (double)v->elems[i]->i;
    *out = kl_tensor_from_f64(dt, rt->rank, rt->shape, rt->strides, vals, err, errlen);
    free(vals);
    return *out ? 0 : 1;
  }
  snprintf(err, errlen, "no reference kernel for '%s'", op->name);
  return 1;
}

kl_status kl_graph_eval(kl_op *graph, int ninputs, const kl_named_tensor *inputs,
                        int *noutputs, kl_tensor ***outputs, char *err, size_t errlen) {
  *noutputs = 0; *outputs = NULL;
  if (!kl_is_graph(graph)) { snprintf(err, errlen, "eval: not a graph function"); return KL_ERR; }
  kl_block *body = kl_graph_body(graph);
  kl_op *ret = kl_graph_return(graph);
  if (!ret || ret->nopnds == 0) { snprintf(err, errlen, "eval: the graph has no outputs (call g:output first)"); return KL_ERR; }
  for (int i = 0; i < ninputs; i++) {
    if (!kl_graph_param(graph, inputs[i].name)) { snprintf(err, errlen, "eval: the graph has no param named '%s'", inputs[i].name); return KL_ERR; }
    for (int j = 0; j < i; j++)
      if (!strcmp(inputs[i].name, inputs[j].name)) { snprintf(err, errlen, "eval: input '%s' given twice", inputs[i].name); return KL_ERR; }
  }
  int nops = 0;
  for (kl_op *o = body->first; o; o = o->next) o->scratch = nops++;
  kl_tensor **vals = kl_xcalloc(nops, sizeof *vals);
  kl_status st = KL_OK;
  for (kl_op *o = body->first; o && st == KL_OK; o = o->next) {
    if (o == ret) break;
    if (!strcmp(o->name, "graph.param")) {
      const char *pn = kl_op_attr_string(o, "name");
      const kl_tensor *t = NULL;
      for (int i = 0; i < ninputs; i++) if (!strcmp(inputs[i].name, pn)) t = inputs[i].tensor;
      if (!t) {
        char msg[256]; snprintf(msg, sizeof msg, "missing input '%s' (%s)", pn, kl_type_str(o->results[0].type));
        st = fail_at(o, err, errlen, msg); break;
      }
      if ((st = kl_graph_check_input(o, t, err, errlen)) != KL_OK) break;
      vals[o->scratch] = kl_tensor_retain((kl_tensor *)t);
      continue;
    }
    if (strncmp(o->name, "graph.", 6) != 0) {
      st = fail_at(o, err, errlen, "the evaluator only runs graph ops"); break;
    }
    kl_tensor *in[64];
    for (int i = 0; i < o->nopnds && i < 64; i++) in[i] = vals[o->opnds[i].value->def->scratch];
    /* Results are materialized in the layout of their type. */
    const kl_type *rt = o->results[0].type;
    char msg[512];
    kl_tensor *out = strcmp(o->name, "graph.constant") ?
      kl_tensor_zeros(kl_dtype_of_type(rt->elem), rt->rank, rt->shape, rt->strides, msg, sizeof msg) : NULL;
    if (strcmp(o->name, "graph.constant") && !out) { st = fail_at(o, err, errlen, msg); break; }
    if (eval_op(o, in, &out, msg, sizeof msg)) { kl_tensor_release(out); st = fail_at(o, err, errlen, msg); break; }
    vals[o->scratch] = out;
  }
  if (st == KL_OK) {
    *outputs = kl_xcalloc(ret->nopnds, sizeof **outputs);
    for (int i = 0; i < ret->nopnds; i++) {
      kl_value *v = ret->opnds[i].value;
      (*outputs)[i] = kl_tensor_retain(vals[v->def->scratch]);
    }
    *noutputs = ret->nopnds;
  }
  for (int i = 0; i < nops; i++) kl_tensor_release(vals[i]);
  free(vals);
  return st;
}
