/* graph_eval.c — evaluates graph ops in order, each through its definition's eval hook
 * (graph_eval_ops.c attaches the builtin ones). */
#include "runtime/graph_eval.h"
#include "core/dialect_graph.h"
#include "core/shape.h"
#include "runtime/refops.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

kl_dtype kl_dtype_of_type(const kl_type *t) { return kl_type_dtype(t); }

static kl_status fail_at(kl_op *op, char *err, size_t errlen, const char *msg) {
  char where[256];
  kl_loc_format(op->loc, where, sizeof where);
  snprintf(err, errlen, "%s: error: %s: %s", where, op->name, msg);
  return KL_ERR;
}

kl_status kl_graph_check_input(kl_op *param, const kl_tensor *t, char *err, size_t errlen) {
  const kl_type *pt = param->results[0].type;
  const char *name = kl_op_attr_string(param, "name");
  char b1[128], b2[128], msg[512];
  kl_shape ps = kl_shape_make(pt->rank, pt->shape), ts = kl_tensor_shape(t);
  if (!kl_shape_equal(&ps, &ts)) {
    snprintf(msg, sizeof msg, "input '%s' has shape %s, the param expects %s", name, kl_shape_format(&ts, b1, 128),
             kl_shape_format(&ps, b2, 128));
    return fail_at(param, err, errlen, msg);
  }
  if (t->dtype != kl_dtype_of_type(pt->elem)) {
    snprintf(msg, sizeof msg, "input '%s' has dtype %s, the param expects %s", name, kl_dtype_name(t->dtype),
             pt->elem->text);
    return fail_at(param, err, errlen, msg);
  }
  if (!kl_strides_equivalent(pt->rank, pt->shape, pt->strides, t->strides)) {
    char pl[128];
    kl_dims_format(pt->rank, pt->strides, pl, sizeof pl);
    snprintf(msg, sizeof msg,
             "input '%s' has layout %s but the param's layout is strides=%s (convert it with t:as_layout first)", name,
             kl_tensor_layout_str(t, b1, sizeof b1), pl);
    return fail_at(param, err, errlen, msg);
  }
  return KL_OK;
}

kl_status kl_graph_eval(kl_op *graph, int ninputs, const kl_named_tensor *inputs, int *noutputs, kl_tensor ***outputs,
                        char *err, size_t errlen) {
  *noutputs = 0;
  *outputs = NULL;
  if (!kl_is_graph(graph)) {
    snprintf(err, errlen, "eval: not a graph function");
    return KL_ERR;
  }
  kl_graph_eval_register(graph->ctx);
  kl_block *body = kl_graph_body(graph);
  kl_op *ret = kl_graph_return(graph);
  if (!ret || ret->nopnds == 0) {
    snprintf(err, errlen, "eval: the graph has no outputs (call g:output first)");
    return KL_ERR;
  }
  for (int i = 0; i < ninputs; i++) {
    if (!kl_graph_param(graph, inputs[i].name)) {
      snprintf(err, errlen, "eval: the graph has no param named '%s'", inputs[i].name);
      return KL_ERR;
    }
    for (int j = 0; j < i; j++)
      if (!strcmp(inputs[i].name, inputs[j].name)) {
        snprintf(err, errlen, "eval: input '%s' given twice", inputs[i].name);
        return KL_ERR;
      }
  }
  int nops = 0;
  for (kl_op *o = body->first; o; o = o->next) o->scratch = nops++;
  kl_tensor **vals = kl_xcalloc(nops, sizeof *vals);
  kl_status st = KL_OK;
  for (kl_op *o = body->first; o && st == KL_OK; o = o->next) {
    if (o == ret) break;
    if (kl_graph_is_param(o)) {
      const char *pn = kl_op_attr_string(o, "name");
      const kl_tensor *t = NULL;
      for (int i = 0; i < ninputs; i++)
        if (!strcmp(inputs[i].name, pn)) t = inputs[i].tensor;
      if (!t) {
        char msg[256];
        snprintf(msg, sizeof msg, "missing input '%s' (%s)", pn, kl_type_str(o->results[0].type));
        st = fail_at(o, err, errlen, msg);
        break;
      }
      if ((st = kl_graph_check_input(o, t, err, errlen)) != KL_OK) break;
      vals[o->scratch] = kl_tensor_retain((kl_tensor *)t);
      continue;
    }
    kl_eval_fn eval = kl_eval_hook(o);
    if (!eval) {
      char msg[512];
      if (o->def && (o->def->levels & KL_LEVEL_GRAPH))
        snprintf(msg, sizeof msg, "no reference kernel for '%s'", o->name);
      else
        snprintf(msg, sizeof msg, "the evaluator only runs graph ops");
      st = fail_at(o, err, errlen, msg);
      break;
    }
    if (o->nresults != 1) {
      st = fail_at(o, err, errlen, "an evaluated op must have one result");
      break;
    }
    kl_tensor *in[64];
    for (int i = 0; i < o->nopnds && i < 64; i++) in[i] = vals[o->opnds[i].value->def->scratch];
    /* Results are materialized in the layout of their type (plan inputs make their own). */
    const kl_type *rt = o->results[0].type;
    char msg[512];
    bool makes_own = kl_op_has_trait(o, KL_TRAIT_PLAN_INPUT);
    kl_tensor *out = makes_own
        ? NULL
        : kl_tensor_zeros(kl_dtype_of_type(rt->elem), rt->rank, rt->shape, rt->strides, msg, sizeof msg);
    if (!makes_own && !out) {
      st = fail_at(o, err, errlen, msg);
      break;
    }
    if (eval(o, in, &out, msg, sizeof msg)) {
      kl_tensor_release(out);
      st = fail_at(o, err, errlen, msg);
      break;
    }
    vals[o->scratch] = out;
  }
  if (st == KL_OK) {
    *outputs = kl_xcalloc(ret->nopnds, sizeof **outputs);
    for (int i = 0; i < ret->nopnds && st == KL_OK; i++) {
      kl_value *v = ret->opnds[i].value;
      kl_tensor *t = vals[v->def->scratch];
      int64_t s[KL_MAX_RANK];
      if (!kl_graph_output_strides(graph, i, s) || kl_strides_equivalent(t->rank, t->shape, t->strides, s)) {
        (*outputs)[i] = kl_tensor_retain(t);
        continue;
      }
      /* the layout the output declares (kl_graph_output_layout) */
      kl_tensor *o = kl_tensor_zeros(t->dtype, t->rank, t->shape, s, err, errlen);
      if (!o || kl_tensor_copy_into(o, t, err, errlen)) {
        kl_tensor_release(o);
        st = KL_ERR;
        break;
      }
      (*outputs)[i] = o;
    }
    if (st == KL_OK) {
      *noutputs = ret->nopnds;
    } else {
      for (int i = 0; i < ret->nopnds; i++) kl_tensor_release((*outputs)[i]);
      free(*outputs);
      *outputs = NULL;
    }
  }
  for (int i = 0; i < nops; i++) kl_tensor_release(vals[i]);
  free(vals);
  return st;
}
