/* kiln_lua_graph.c — the C half of the graph DSL (lua/kiln/graph.lua is the other half):
 * graph creation, typed op building through kl_graph_build (shape inference, errors that
 * name the op, the operands' shapes and the user's Lua line), params, constants,
 * outputs, hints (g:hint) and the reference evaluator (kl_graph_eval). The functions live in the
 * private table kiln._g; the value props shape/dtype/rank are added to kiln.props.value.
 * Ops get the location of the first Lua stack level outside the kiln library. */
#include "lua/kiln_lua_rt.h"
#include "core/dialect_graph.h"
#include "core/graph_api.h"
#include "core/shape.h"
#include "runtime/graph_eval.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPH(i) ((kl_op *)kl_lua__check(L, (i), KL_LH_OP))

static kl_op *check_graph(lua_State *L, int idx) {
  kl_op *g = OPH(idx);
  if (!kl_is_graph(g)) luaL_argerror(L, idx, "a graph function (func.func with the 'graph' attribute) expected");
  return g;
}

/* A value operand of graph g at idx; errors name the op. */
static kl_value *graph_value(lua_State *L, int idx, kl_op *g, const char *opname, int pos) {
  kl_value *v = kl_lua__test(L, idx, KL_LH_VALUE);
  if (!v) kl_lua__rt_error(L, opname, "operand %d must be a graph value, got a %s", pos, luaL_typename(L, idx));
  kl_lua__check(L, idx, KL_LH_VALUE);
  if (kl_lua__handle_ctx(L, idx) != g->ctx)
    kl_lua__rt_error(L, opname, "operand %d belongs to another kiln context", pos);
  kl_op *vg = kl_graph_of_value(v);
  if (vg != g)
    kl_lua__rt_error(L, opname, "operand %d is a value of %s, not of graph @%s", pos,
                     vg ? lua_pushfstring(L, "graph @%s", kl_graph_name(vg)) : "no graph", kl_graph_name(g));
  return v;
}

/* _g.new([ctx,] name) -> module, func */
static int g_new(lua_State *L) {
  int first;
  int c = kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, c);
  const char *name = luaL_optstring(L, first, "graph");
  if (!*name) return kl_lua__rt_error(L, "kiln.graph", "the graph name must not be empty");
  kl_loc loc = kl_lua__caller_loc(L, ctx);
  kl_op *m = kl_module_create(ctx, loc);
  kl_op *f = kl_graph_create(ctx, m, name, loc);
  kl_lua__push(L, c, KL_LH_OP, m);
  kl_lua__push(L, c, KL_LH_OP, f);
  return 2;
}

/* _g.build(func, "add", {operands}, attrs|nil, result_dtype|nil) -> value */
static int g_build(lua_State *L) {
  kl_op *g = check_graph(L, 1);
  kl_ctx *ctx = g->ctx;
  const char *opname = luaL_checkstring(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  lua_settop(L, 5);
  int ctxud = kl_lua__push_handle_ctxud(L, 1);
  kl_lua__busy_guard(L, ctxud, "a graph op builder"); /* metamethods of the tables, finalizers */
  lua_Integer n = luaL_len(L, 3);
  if (n > 64) return kl_lua__rt_error(L, opname, "too many operands (%lld)", (long long)n);
  kl_value *opnds[64];
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 3, i);
    opnds[i - 1] = graph_value(L, -1, g, opname, (int)i);
    lua_pop(L, 1);
  }
  int nattrs = 0;
  kl_named_attr attrs[32];
  if (lua_istable(L, 4)) {
    for (lua_pushnil(L); lua_next(L, 4); lua_pop(L, 1)) {
      if (lua_type(L, -2) != LUA_TSTRING) return kl_lua__rt_error(L, opname, "attribute names must be strings");
      if (nattrs >= 32) return kl_lua__rt_error(L, opname, "too many attributes");
      attrs[nattrs].name = kl_intern(ctx, lua_tostring(L, -2));
      attrs[nattrs].value = kl_lua__toattr(L, -1, ctx);
      if (attrs[nattrs].value) nattrs++;
    }
  }
  const kl_type *rt = NULL;
  if (!lua_isnoneornil(L, 5)) {
    kl_dtype dt = kl_lua__opt_dtype(L, 5, KL_DT_NONE, opname);
    rt = kl_type_scalar(ctx, (kl_type_kind)dt);
  }
  kl_loc loc = kl_lua__caller_loc(L, ctx);
  kl_lua__flush_diags(ctx);
  kl_op *op = kl_graph_build(g, opname, loc, (int)n, opnds, nattrs, attrs, rt);
  if (!op) return kl_lua__diag_error(L, ctx, opname, "building the graph op failed");
  kl_lua__push(L, ctxud, KL_LH_VALUE, &op->results[0]);
  return 1;
}

/* _g.param(func, name, shape, dtype, opts) -> value */
static int g_param(lua_State *L) {
  kl_op *g = check_graph(L, 1);
  kl_ctx *ctx = g->ctx;
  const char *what = "param";
  lua_settop(L, 5);
  kl_lua__busy_guard(L, kl_lua__push_handle_ctxud(L, 1), "g:param"); /* shape/opts metamethods */
  if (lua_type(L, 2) != LUA_TSTRING || !lua_rawlen(L, 2))
    return kl_lua__rt_error(L, what, "the first argument must be the param's name (a non-empty string), got a %s",
                            luaL_typename(L, 2));
  const char *name = lua_tostring(L, 2);
  int64_t dims[KL_MAX_RANK], strides[KL_MAX_RANK];
  int rank = kl_lua__check_shape(L, 3, dims, what);
  kl_dtype dt = kl_lua__opt_dtype(L, 4, KL_DT_F32, what);
  static const char *const PARAM_OPTS[] = { "layout", "strides", NULL };
  kl_lua__check_opts(L, 5, what, PARAM_OPTS);
  bool has = kl_lua__opt_layout(L, 5, rank, dims, strides, what);
  char why[512];
  if (!kl_shape_check(rank, dims, has ? strides : NULL, why, sizeof why))
    return kl_lua__rt_error(L, what, "'%s': %s", name, why);
  const kl_type *elem = kl_type_scalar(ctx, (kl_type_kind)dt);
  kl_lua__flush_diags(ctx);
  const kl_type *ty = kl_type_tensor(ctx, elem, rank, dims, has ? strides : NULL);
  if (!ty) return kl_lua__diag_error(L, ctx, what, "invalid param type");
  kl_named_attr a = { "name", kl_attr_str(ctx, name) };
  int ctxud = kl_lua__push_handle_ctxud(L, 1);
  kl_op *op = kl_graph_build(g, "param", kl_lua__caller_loc(L, ctx), 0, NULL, 1, &a, ty);
  if (!op) return kl_lua__diag_error(L, ctx, what, "param failed");
  op->results[0].name_hint = kl_intern(ctx, name);
  kl_lua__push(L, ctxud, KL_LH_VALUE, &op->results[0]);
  return 1;
}

/* _g.constant(func, tensor | number, dtype|nil) -> value */
static int g_constant(lua_State *L) {
  kl_op *g = check_graph(L, 1);
  kl_ctx *ctx = g->ctx;
  const char *what = "constant";
  lua_settop(L, 3);
  kl_lua__busy_guard(L, kl_lua__push_handle_ctxud(L, 1), "g:constant"); /* finalizers */
  kl_tensor *t = kl_lua__test_tensor(L, 2);
  if (t) kl_lua__pin_tensor(L, 2, "g:constant"); /* read after allocations: finalizers */
  kl_tensor *own = NULL;
  char err[512];
  if (t) {
    kl_lua__check_tensor(L, 2);
    if (!lua_isnoneornil(L, 3)) {
      kl_dtype dt = kl_lua__opt_dtype(L, 3, t->dtype, what);
      if (dt != t->dtype) {
        own = kl_tensor_zeros(dt, t->rank, t->shape, NULL, err, sizeof err);
        if (!own || kl_tensor_copy_into(own, t, err, sizeof err)) {
          kl_tensor_release(own);
          return kl_lua__rt_error(L, what, "%s", err);
        }
        t = own;
      }
    }
  } else if (lua_type(L, 2) == LUA_TNUMBER) {
    kl_dtype dt = kl_lua__opt_dtype(L, 3, KL_DT_F32, what);
    int isint;
    lua_Integer iv = lua_tointegerx(L, 2, &isint);
    own = (kl_dtype_is_int(dt) && isint)
        ? kl_tensor_from_i64(dt, 0, NULL, NULL, (int64_t[]){ (int64_t)iv }, err, sizeof err)
        : kl_tensor_from_f64(dt, 0, NULL, NULL, (double[]){ (double)lua_tonumber(L, 2) }, err, sizeof err);
    if (!own) return kl_lua__rt_error(L, what, "%s", err);
    t = own;
  } else if (luaL_testudata(L, 2, KL_MT_TENSOR)) {
    return kl_lua__rt_error(L, what, "the tensor has been released");
  } else {
    return kl_lua__rt_error(L, what, "expected a tensor or a number, got a %s", luaL_typename(L, 2));
  }
  int64_t n = kl_tensor_numel(t);
  if (n > (1 << 22)) {
    kl_tensor_release(own);
    return kl_lua__rt_error(L, what, "constant with %lld elements is too large (at most %d)", (long long)n, 1 << 22);
  }
  const kl_attr **el = kl_lua__tmp(L, (size_t)(n ? n : 1) * sizeof *el);
  int64_t idx[KL_MAX_RANK];
  bool ints = kl_dtype_is_int(t->dtype);
  for (int64_t i = 0; i < n; i++) {
    kl_tensor_unravel(t, i, idx);
    el[i] = ints ? kl_attr_int(ctx, kl_tensor_get_i64(t, idx)) : kl_attr_float(ctx, kl_tensor_get(t, idx));
  }
  const kl_type *elem = kl_type_scalar(ctx, (kl_type_kind)t->dtype);
  bool dense = kl_strides_to_perm(t->rank, t->shape, t->strides, NULL);
  if (!kl_shape_check(t->rank, t->shape, NULL, err, sizeof err)) {
    kl_tensor_release(own);
    return kl_lua__rt_error(L, what, "%s", err);
  }
  kl_lua__flush_diags(ctx);
  const kl_type *ty = kl_type_tensor(ctx, elem, t->rank, t->shape,
                                     dense && !kl_tensor_is_row_major(t) ? t->strides : NULL);
  kl_tensor_release(own);
  if (!ty) return kl_lua__diag_error(L, ctx, what, "invalid constant type");
  kl_named_attr a = { "value", kl_attr_array(ctx, (int)n, el) };
  int ctxud = kl_lua__push_handle_ctxud(L, 1);
  kl_op *op = kl_graph_build(g, "constant", kl_lua__caller_loc(L, ctx), 0, NULL, 1, &a, ty);
  if (!op) return kl_lua__diag_error(L, ctx, what, "constant failed");
  kl_lua__push(L, ctxud, KL_LH_VALUE, &op->results[0]);
  return 1;
}

/* _g.output(func, v1, v2, ...) */
static int g_output(lua_State *L) {
  kl_op *g = check_graph(L, 1);
  int n = lua_gettop(L) - 1;
  if (n < 1) return kl_lua__rt_error(L, "output", "give at least one value");
  if (n > 256) return kl_lua__rt_error(L, "output", "too many outputs");
  kl_value *vals[256];
  for (int i = 0; i < n; i++) vals[i] = graph_value(L, i + 2, g, "output", i + 1);
  kl_graph_set_outputs(g, n, vals, kl_lua__caller_loc(L, g->ctx));
  return 0;
}

/* _g.output_strides(v, i, opts) -> the strides of opts ({layout =} or {strides =}) for
 * value v as output i, checked as _g.output_layout checks them (errors name output i). */
static int g_output_strides(lua_State *L) {
  kl_value *v = kl_lua__check(L, 1, KL_LH_VALUE);
  int i = (int)luaL_checkinteger(L, 2);
  const kl_type *t = v->type;
  char what[32];
  snprintf(what, sizeof what, "output %d", i);
  if (!kl_type_is_shaped(t)) return kl_lua__rt_error(L, what, "not a tensor");
  int64_t strides[KL_MAX_RANK];
  static const char *const OUTPUT_OPTS[] = { "layout", "strides", NULL };
  kl_lua__check_opts(L, 3, "output", OUTPUT_OPTS);
  if (!kl_lua__opt_layout(L, 3, t->rank, t->shape, strides, what)) return 0;
  lua_createtable(L, t->rank, 0);
  for (int k = 0; k < t->rank; k++) lua_pushinteger(L, (lua_Integer)strides[k]), lua_rawseti(L, -2, k + 1);
  return 1;
}

/* _g.output_layout(func, i, opts): output i (1-based) in the layout of opts ({layout =
 * "NHWC"} or {strides = {...}}: non-overlapping, gaps allowed), kl_graph_output_layout. */
static int g_output_layout(lua_State *L) {
  kl_op *g = check_graph(L, 1);
  int i = (int)luaL_checkinteger(L, 2);
  kl_op *ret = kl_graph_return(g);
  if (!ret || i < 1 || i > ret->nopnds)
    return kl_lua__rt_error(L, "output", "output %d: the graph has %d outputs", i, ret ? ret->nopnds : 0);
  const kl_type *t = ret->opnds[i - 1].value->type;
  char what[32];
  snprintf(what, sizeof what, "output %d", i);
  int64_t strides[KL_MAX_RANK];
  bool has = kl_lua__opt_layout(L, 3, t->rank, t->shape, strides, what);
  kl_lua__flush_diags(g->ctx);
  if (kl_graph_output_layout(g, i - 1, NULL, has ? strides : NULL, kl_lua__caller_loc(L, g->ctx)) != KL_OK)
    return kl_lua__diag_error(L, g->ctx, "output", "bad output layout");
  return 0;
}

/* _g.hint(func, value, {primary = bool, split = n}) -> value: compiler hints on a value,
 * stored on its defining op as attributes. primary: where a kernel reads the value as an
 * input of a fused producer, it drives the vectorization of the fused loads
 * (graph-partition lists it in the kernel's `primary` attribute). split (a reduction's
 * or a softmax's result): its split count for reduce-split (1 never, n >= 2 n partials per
 * output). */
static int g_hint(lua_State *L) {
  kl_op *g = check_graph(L, 1);
  kl_value *v = graph_value(L, 2, g, "hint", 1);
  if (!lua_istable(L, 3))
    return kl_lua__rt_error(L, "hint", "options must be a table {primary = true}, got a %s", luaL_typename(L, 3));
  for (lua_pushnil(L); lua_next(L, 3); lua_pop(L, 1)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    if (k && !strcmp(k, "split")) {
      if (kl_op_kernel_kind(v->def) != KL_KERNEL_REDUCE && kl_op_kernel_kind(v->def) != KL_KERNEL_SOFTMAX)
        return kl_lua__rt_error(L, "hint",
                                "split applies to a reduction (reduce_sum, reduce_mean, reduce_max) or a softmax");
      if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1)
        return kl_lua__rt_error(L, "hint", "split must be an integer >= 1, got %s", luaL_tolstring(L, -1, NULL));
      kl_op_set_attr(v->def, "split", kl_attr_int(g->ctx, lua_tointeger(L, -1)));
      continue;
    }
    if (!k || strcmp(k, "primary")) {
      static const char *const HINT_OPTS[] = { "primary", "split", NULL };
      return kl_lua__unknown_name(L, "hint", "option", "options", k ? k : luaL_typename(L, -2), HINT_OPTS, -1);
    }
    if (!lua_isboolean(L, -1))
      return kl_lua__rt_error(L, "hint", "primary must be a boolean, got a %s", luaL_typename(L, -1));
    kl_op_set_attr(v->def, "primary", lua_toboolean(L, -1) ? kl_attr_unit(g->ctx) : NULL);
  }
  lua_settop(L, 2);
  return 1;
}

kl_named_tensor *kl_lua__check_named_tensors(lua_State *L, int idx, const char *what, int *n) {
  idx = lua_absindex(L, idx);
  int count = 0;
  for (lua_pushnil(L); lua_next(L, idx); lua_pop(L, 1)) count++;
  kl_named_tensor *in = kl_lua__tmp(L, (size_t)(count ? count : 1) * sizeof *in);
  int k = 0;
  for (lua_pushnil(L); lua_next(L, idx); lua_pop(L, 1)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      kl_lua__rt_error(L, what, "inputs are given by param name ({x = tensor}); got a %s key", luaL_typename(L, -2));
    kl_tensor *t = kl_lua__test_tensor(L, -1);
    if (!t && luaL_testudata(L, -1, KL_MT_TENSOR))
      kl_lua__rt_error(L, what, "input '%s' is a tensor that has been released", lua_tostring(L, -2));
    if (!t)
      kl_lua__rt_error(L, what, "input '%s' must be a kiln.tensor, got a %s", lua_tostring(L, -2),
                       luaL_typename(L, -1));
    kl_lua__check_tensor(L, -1);
    in[k].name = lua_tostring(L, -2); /* the key string stays alive in the table */
    in[k].tensor = t;
    k++;
  }
  *n = k;
  return in;
}

void kl_lua__check_input_names(lua_State *L, const char *what, const kl_named_tensor *in, int n,
                               const char *const *params, int nparams) {
  for (int i = 0; i < n; i++) {
    int j = 0;
    while (j < nparams && (!params[j] || strcmp(params[j], in[i].name))) j++;
    if (j == nparams) kl_lua__unknown_name(L, what, "input", "params", in[i].name, params, nparams);
  }
}

/* _g.eval(func, {name = tensor, ...}) -> tensors... */
static int g_eval(lua_State *L) {
  kl_op *g = check_graph(L, 1);
  const char *what = "eval";
  lua_settop(L, 2);
  kl_lua__busy_guard(L, kl_lua__push_handle_ctxud(L, 1), "g:eval"); /* finalizers */
  if (!lua_istable(L, 2))
    return kl_lua__rt_error(L, what, "inputs must be a table {name = tensor, ...}, got a %s", luaL_typename(L, 2));
  int k = 0;
  kl_named_tensor *in = kl_lua__check_named_tensors(L, 2, what, &k);
  int np = 0;
  for (kl_op *o = kl_graph_body(g)->first; o; o = o->next) np += kl_graph_is_param(o);
  const char **params = kl_lua__tmp(L, (size_t)(np + 1) * sizeof *params);
  np = 0;
  for (kl_op *o = kl_graph_body(g)->first; o; o = o->next)
    if (kl_graph_is_param(o)) params[np++] = kl_op_attr_string(o, "name");
  kl_lua__check_input_names(L, what, in, k, params, np);
  int nout = 0;
  kl_tensor **outs = NULL;
  char err[2048] = "";
  if (kl_graph_eval(g, k, in, &nout, &outs, err, sizeof err) != KL_OK)
    return kl_lua__err_error(L, what, "eval", err, "evaluation failed");
  if (!lua_checkstack(L, nout + 4)) {
    for (int i = 0; i < nout; i++) kl_tensor_release(outs[i]);
    free(outs);
    return luaL_error(L, "kiln: too many outputs");
  }
  for (int i = 0; i < nout; i++) kl_lua__push_tensor(L, outs[i]);
  free(outs);
  return nout;
}

/* _g.graph_of(value) -> graph func op or nil */
static int g_graph_of(lua_State *L) {
  kl_value *v = kl_lua__test(L, 1, KL_LH_VALUE);
  if (!v) {
    lua_pushnil(L);
    return 1;
  }
  kl_lua__check(L, 1, KL_LH_VALUE);
  kl_op *g = kl_graph_of_value(v);
  int c = kl_lua__push_handle_ctxud(L, 1);
  kl_lua__push(L, c, KL_LH_OP, g);
  return 1;
}

/* _g.params(func) -> {{name=, value=, type=, shape=, dtype=, strides=}} in order */
static int g_params(lua_State *L) {
  kl_op *g = check_graph(L, 1);
  int c = kl_lua__push_handle_ctxud(L, 1);
  kl_lua__busy_guard(L, c, "g:params"); /* allocations: finalizers */
  lua_newtable(L);
  int i = 0;
  for (kl_op *o = kl_graph_body(g)->first; o; o = o->next) {
    if (!kl_graph_is_param(o)) continue;
    lua_createtable(L, 0, 2);
    kl_lua__set_str(L, "name", kl_op_attr_string(o, "name"));
    kl_lua__push(L, c, KL_LH_VALUE, &o->results[0]);
    lua_setfield(L, -2, "value");
    const kl_type *t = o->results[0].type;
    kl_lua__set_str(L, "type", kl_type_str(t));
    if (t && kl_type_is_shaped(t)) { /* shape, dtype and strides: what a caller's input must have */
      lua_createtable(L, t->rank, 0);
      for (int k = 0; k < t->rank; k++) lua_pushinteger(L, (lua_Integer)t->shape[k]), lua_rawseti(L, -2, k + 1);
      lua_setfield(L, -2, "shape");
      lua_createtable(L, t->rank, 0);
      for (int k = 0; k < t->rank; k++) lua_pushinteger(L, (lua_Integer)t->strides[k]), lua_rawseti(L, -2, k + 1);
      lua_setfield(L, -2, "strides");
      const char *dn = t->elem ? kl_scalar_name(t->elem->kind) : NULL;
      if (dn) kl_lua__set_str(L, "dtype", dn);
    }
    lua_rawseti(L, -2, ++i);
  }
  return 1;
}

/* _g.metatable(name) -> the registry metatable */
static int g_metatable(lua_State *L) {
  luaL_getmetatable(L, luaL_checkstring(L, 1));
  return 1;
}
/* _g.raise(msg) — "file:line: error: msg" at the user's line */
static int g_raise(lua_State *L) { return kl_lua__rt_error(L, NULL, "%s", luaL_checkstring(L, 1)); }
/* _g.where() -> "file:line" of the user's line */
static int g_where(lua_State *L) {
  kl_lua__push_where(L);
  return 1;
}

/* ---- value props (tensor-typed values) ---- */
static const kl_type *value_tensor_type(lua_State *L) {
  kl_value *v = kl_lua__check(L, 1, KL_LH_VALUE);
  return (v->type && kl_type_is_shaped(v->type)) ? v->type : NULL;
}
static int vp_shape(lua_State *L) {
  const kl_type *t = value_tensor_type(L);
  if (!t) {
    lua_pushnil(L);
    return 1;
  }
  lua_createtable(L, t->rank, 0);
  for (int i = 0; i < t->rank; i++) {
    lua_pushinteger(L, (lua_Integer)t->shape[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}
static int vp_rank(lua_State *L) {
  const kl_type *t = value_tensor_type(L);
  if (t)
    lua_pushinteger(L, t->rank);
  else
    lua_pushnil(L);
  return 1;
}
static int vp_dtype(lua_State *L) {
  kl_value *v = kl_lua__check(L, 1, KL_LH_VALUE);
  const kl_type *t = v->type;
  if (t && (t->kind == KL_TY_TENSOR || t->kind == KL_TY_BUFFER || t->kind == KL_TY_VECTOR)) t = t->elem;
  const char *n = t ? kl_scalar_name(t->kind) : NULL;
  if (n)
    lua_pushstring(L, n);
  else
    lua_pushnil(L);
  return 1;
}

void kl_lua__open_graph(lua_State *L) {
  int mod = lua_gettop(L);
  static const luaL_Reg g_fns[] = { { "new", g_new },
                                    { "build", g_build },
                                    { "param", g_param },
                                    { "constant", g_constant },
                                    { "output", g_output },
                                    { "output_layout", g_output_layout },
                                    { "output_strides", g_output_strides },
                                    { "eval", g_eval },
                                    { "graph_of", g_graph_of },
                                    { "params", g_params },
                                    { "metatable", g_metatable },
                                    { "raise", g_raise },
                                    { "where", g_where },
                                    { "hint", g_hint },
                                    { NULL, NULL } };
  luaL_newlib(L, g_fns);
  lua_setfield(L, mod, "_g");
  static const luaL_Reg vprops[] = {
    { "shape", vp_shape }, { "rank", vp_rank }, { "dtype", vp_dtype }, { NULL, NULL }
  };
  lua_getfield(L, mod, "props");
  if (lua_getfield(L, -1, "value") == LUA_TTABLE) luaL_setfuncs(L, vprops, 0);
  lua_pop(L, 2);
}
