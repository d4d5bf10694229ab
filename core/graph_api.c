/* graph_api.c — graph building from names, dtypes, shapes and attribute text (see
 * graph_api.h): checks the caller's arguments, then kl_graph_build. */
#include "core/graph_api.h"
#include "core/attr.h"
#include "core/dialect_graph.h"
#include "core/parse.h"
#include "core/shape.h"
#include "core/type.h"
#include <stdio.h>
#include <string.h>

#define MAX_OPERANDS 64
#define MAX_CONSTANT (1 << 22)

static const char *short_name(const char *name) {
  const char *d = strchr(name, '.');
  return d ? d + 1 : name;
}


/* graph is a graph func; else an error (on its context) and false. */
static bool check_graph(kl_op *graph, const char *what, kl_loc loc) {
  if (!graph) return false;
  if (!kl_is_graph(graph)) {
    kl_emit_error(graph->ctx, loc, "%s: '%s' is not a graph (a func.func with the 'graph' attribute)", what,
                  graph->name);
    return false;
  }
  return true;
}
/* v is a value of graph; pos counts from 1 (the message's "operand N"). */
static bool check_value(kl_op *graph, kl_value *v, const char *what, const char *role, int pos, kl_loc loc) {
  if (!v)
    return kl_emit_error(graph->ctx, loc, "%s: %s %d is NULL (did an earlier builder fail?)", what, role, pos), false;
  kl_op *vg = kl_graph_of_value(v);
  if (vg != graph) {
    kl_emit_error(graph->ctx, loc, "%s: %s %d is a value of %s%s, not of graph @%s", what, role, pos,
                  vg ? "graph @" : "no graph", vg ? kl_graph_name(vg) : "", kl_graph_name(graph));
    return false;
  }
  return true;
}
static const kl_type *elem_of(kl_ctx *ctx, kl_dtype dt, const char *what, kl_loc loc) {
  if (dt == KL_DT_NONE || !kl_dtype_valid(dt)) {
    kl_emit_error(ctx, loc, "%s: invalid dtype %d", what, (int)dt);
    return NULL;
  }
  return kl_type_scalar(ctx, (kl_type_kind)dt);
}
static bool check_shape(kl_ctx *ctx, int rank, const int64_t *shape, const int64_t *strides, const char *what,
                        kl_loc loc) {
  char err[256];
  if (rank < 0 || rank > KL_MAX_RANK)
    return kl_emit_error(ctx, loc, "%s: rank %d is out of range (0..%d)", what, rank, KL_MAX_RANK), false;
  if (rank > 0 && !shape) return kl_emit_error(ctx, loc, "%s: shape is NULL for rank %d", what, rank), false;
  if (!kl_shape_check(rank, shape, strides, err, sizeof err))
    return kl_emit_error(ctx, loc, "%s: %s", what, err), false;
  return true;
}

kl_value *kl_graph_add_param(kl_op *graph, const char *name, kl_dtype dt, int rank, const int64_t *shape,
                             const char *layout, kl_loc loc) {
  if (!check_graph(graph, "param", loc)) return NULL;
  kl_ctx *ctx = graph->ctx;
  if (!name || !*name) {
    kl_emit_error(ctx, loc, "param: the name must be a non-empty string");
    return NULL;
  }
  const kl_type *elem = elem_of(ctx, dt, "param", loc);
  if (!elem || !check_shape(ctx, rank, shape, NULL, "param", loc)) return NULL;
  int64_t strides[KL_MAX_RANK];
  bool has = layout && *layout;
  char err[256];
  if (has && kl_layout_strides(layout, rank, shape, strides, err, sizeof err)) {
    kl_emit_error(ctx, loc, "param '%s': %s", name, err);
    return NULL;
  }
  const kl_type *ty = kl_type_tensor(ctx, elem, rank, shape, has ? strides : NULL);
  if (!ty) {
    kl_emit_error(ctx, loc, "param '%s': invalid tensor type", name);
    return NULL;
  }
  kl_named_attr a = { "name", kl_attr_str(ctx, name) };
  kl_op *op = kl_graph_build(graph, "param", loc, 0, NULL, 1, &a, ty);
  if (!op) return NULL;
  op->results[0].name_hint = kl_intern(ctx, name);
  return &op->results[0];
}

kl_value *kl_graph_add_op(kl_op *graph, const char *op, int n, kl_value *const *operands, const char *attrs,
                          kl_loc loc) {
  if (!check_graph(graph, op ? op : "graph op", loc)) return NULL;
  kl_ctx *ctx = graph->ctx;
  if (!op || !*op) {
    kl_emit_error(ctx, loc, "graph op: the op name must be a non-empty string");
    return NULL;
  }
  const char *s = short_name(op);
  if (!strcmp(s, "param") || !strcmp(s, "constant") || !strcmp(s, "convert") || !strcmp(s, "launch")) {
    kl_emit_error(ctx, loc,
                  "%s: not built by kl_graph_add_op (params, constants and converts have their own builders; launches "
                  "are made by graph-partition)",
                  s);
    return NULL;
  }
  if (n < 0 || n > MAX_OPERANDS || (n > 0 && !operands)) {
    kl_emit_error(ctx, loc, "%s: %d operands (0..%d, operands non-NULL)", s, n, MAX_OPERANDS);
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (!check_value(graph, operands[i], s, "operand", i + 1, loc)) return NULL;
  int nattrs = 0;
  const kl_named_attr *named = NULL;
  if (attrs && *attrs) {
    char file[96];
    snprintf(file, sizeof file, "attributes of graph.%s", s);
    const kl_attr *d = kl_parse_attr(ctx, attrs, strlen(attrs), file);
    if (!d) {
      kl_emit_error(ctx, loc, "%s: cannot read the attributes \"%s\"", s, attrs);
      return NULL;
    }
    if (d->kind != KL_AT_DICT) {
      kl_emit_error(ctx, loc, "%s: the attributes must be a dictionary {name = value, ...}, got %s", s, d->text);
      return NULL;
    }
    nattrs = d->n;
    named = d->entries;
  }
  kl_op *o = kl_graph_build(graph, s, loc, n, operands, nattrs, named, NULL);
  return o ? &o->results[0] : NULL;
}

kl_value *kl_graph_add_convert(kl_op *graph, kl_value *x, kl_dtype dt, kl_loc loc) {
  if (!check_graph(graph, "convert", loc) || !check_value(graph, x, "convert", "operand", 1, loc)) return NULL;
  const kl_type *elem = elem_of(graph->ctx, dt, "convert", loc);
  if (!elem) return NULL;
  kl_op *o = kl_graph_build(graph, "convert", loc, 1, &x, 0, NULL, elem);
  return o ? &o->results[0] : NULL;
}

kl_value *kl_graph_add_constant(kl_op *graph, kl_dtype dt, int rank, const int64_t *shape, const double *values,
                                kl_loc loc) {
  if (!check_graph(graph, "constant", loc)) return NULL;
  kl_ctx *ctx = graph->ctx;
  const kl_type *elem = elem_of(ctx, dt, "constant", loc);
  if (!elem || !check_shape(ctx, rank, shape, NULL, "constant", loc)) return NULL;
  kl_shape sh = kl_shape_make(rank, shape);
  int64_t n = kl_shape_numel(&sh);
  if (n > MAX_CONSTANT) {
    kl_emit_error(ctx, loc, "constant with %lld elements is too large (at most %d)", (long long)n, MAX_CONSTANT);
    return NULL;
  }
  if (n > 0 && !values) {
    kl_emit_error(ctx, loc, "constant: values is NULL for %lld elements", (long long)n);
    return NULL;
  }
  const kl_attr **el = kl_arena_alloc(kl_ctx_arena(ctx), (size_t)(n ? n : 1) * sizeof *el);
  for (int64_t i = 0; i < n; i++) {
    double v = kl_dtype_round(dt, values[i]);
    el[i] = kl_dtype_is_int(dt) ? kl_attr_int(ctx, (int64_t)v) : kl_attr_float(ctx, v);
  }
  const kl_type *ty = kl_type_tensor(ctx, elem, rank, shape, NULL);
  if (!ty) {
    kl_emit_error(ctx, loc, "constant: invalid tensor type");
    return NULL;
  }
  kl_named_attr a = { "value", kl_attr_array(ctx, (int)n, el) };
  kl_op *o = kl_graph_build(graph, "constant", loc, 0, NULL, 1, &a, ty);
  return o ? &o->results[0] : NULL;
}

kl_status kl_graph_output(kl_op *graph, int n, kl_value *const *outs, kl_loc loc) {
  if (!check_graph(graph, "output", loc)) return KL_ERR;
  if (n < 1 || !outs) return kl_emit_error(graph->ctx, loc, "output: give at least one value (got %d)", n);
  for (int i = 0; i < n; i++)
    if (!check_value(graph, outs[i], "output", "output", i + 1, loc)) return KL_ERR;
  kl_graph_set_outputs(graph, n, outs, loc);
  return KL_OK;
}

kl_status kl_graph_output_layout(kl_op *graph, int index, const char *layout, const int64_t *strides, kl_loc loc) {
  if (!check_graph(graph, "output", loc)) return KL_ERR;
  kl_ctx *ctx = graph->ctx;
  kl_op *ret = kl_graph_return(graph);
  int n = ret ? ret->nopnds : 0;
  if (index < 0 || index >= n)
    return kl_emit_error(ctx, loc, "output %d: the graph has %d outputs (set them with kl_graph_output first)",
                         index + 1, n);
  bool has_layout = layout && *layout;
  if (has_layout && strides) return kl_emit_error(ctx, loc, "output %d: give a layout or strides, not both", index + 1);
  if (!has_layout && !strides) {
    kl_graph_set_output_strides(graph, index, NULL);
    return KL_OK;
  }
  const kl_type *t = ret->opnds[index].value->type;
  if (!kl_type_is_shaped(t)) return kl_emit_error(ctx, loc, "output %d: not a tensor", index + 1);
  int64_t s[KL_MAX_RANK];
  char err[256], b1[256], b2[256];
  if (has_layout) {
    if (kl_layout_strides(layout, t->rank, t->shape, s, err, sizeof err))
      return kl_emit_error(ctx, loc, "output %d: %s", index + 1, err);
  } else {
    for (int i = 0; i < t->rank; i++) s[i] = strides[i];
    if (!kl_shape_check(t->rank, t->shape, s, err, sizeof err))
      return kl_emit_error(ctx, loc, "output %d: %s", index + 1, err);
    if (!kl_strides_nonoverlapping(t->rank, t->shape, s))
      return kl_emit_error(ctx, loc, "output %d: strides %s overlap for shape %s (two elements at one address)",
                           index + 1, kl_dims_format(t->rank, s, b1, sizeof b1),
                           kl_dims_format(t->rank, t->shape, b2, sizeof b2));
  }
  kl_graph_set_output_strides(graph, index, s);
  return KL_OK;
}

kl_op *kl_module_graph(kl_op *module, const char *name) {
  if (!module || strcmp(module->name, "builtin.module")) return NULL;
  kl_block *body = kl_module_body(module);
  for (kl_op *o = body ? body->first : NULL; o; o = o->next)
    if (kl_is_graph(o) && (!name || !strcmp(kl_graph_name(o), name))) return o;
  return NULL;
}
