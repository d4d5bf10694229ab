/* test_public_api.c — include/kiln.h, the public C API.
 *  - Drift: this file includes the internal headers and then kiln.h, so a function
 *    kiln.h declares with another prototype than the library's fails the build; the
 *    value types' layouts seen through kiln.h alone (public_api_only.c) must equal the
 *    internal ones entry by entry; every function kiln.h declares is linked
 *    (public_api_only.c takes its address).
 *  - Through kiln.h alone: relu(x * w + b) built, compiled for the host, run on the host
 *    device and checked against values computed here.
 *  - The graph builders kiln.h adds (core/graph_api.h): params with layouts, ops with
 *    attribute text (conv, dot, reductions, clip, transpose), converts, constants,
 *    outputs, each compared with kl_graph_build's IR or run against kl_graph_eval; every
 *    kind of bad argument is a located diagnostic that adds no op and leaves the graph
 *    compilable; kl_module_graph on parsed text.
 *  - The tensor accessors (runtime/tensor_query.h) on row-major, NHWC and offset views. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attr.h"
#include "core/context.h"
#include "core/dialect_graph.h"
#include "core/dtype.h"
#include "core/graph_api.h"
#include "core/parse.h"
#include "core/pass.h"
#include "core/print.h"
#include "core/verify.h"
#include "driver/bundle.h"
#include "frontend/migraphx_parse.h"
#include "driver/program.h"
#include "runtime/device.h"
#include "runtime/graph_eval.h"
#include "runtime/tensor.h"
#include "runtime/tensor_query.h"
#include "kiln.h" /* after the internal headers: its declarations are checked against theirs */

#include "check.h"
#include "public_api_layout.h"

extern const kl_layout_entry kl_layout_public[];
extern const int kl_layout_public_n;
extern void (*const kl_public_fns[])(void);
extern const int kl_public_nfns;
int public_mul_add_relu(kl_device *dev, const double x[6], const double w[3], double b, double out[6], char *err,
                        size_t errlen);

static const kl_layout_entry layout_internal[] = { KL_PUBLIC_LAYOUT(KL_LAYOUT_ENTRY) };

static void test_layout(void) {
  group_begin();
  int n = (int)(sizeof layout_internal / sizeof layout_internal[0]);
  CHECK(kl_layout_public_n == n, "%d public entries, %d internal", kl_layout_public_n, n);
  for (int i = 0; i < n && i < kl_layout_public_n; i++)
    CHECK(kl_layout_public[i].value == layout_internal[i].value, "%s: %lld through kiln.h, %lld internally",
          layout_internal[i].what, kl_layout_public[i].value, layout_internal[i].value);
  CHECK(kl_public_nfns > 60, "%d functions", kl_public_nfns);
  for (int i = 0; i < kl_public_nfns; i++) CHECK(kl_public_fns[i] != NULL, "function %d", i);
  group_end("kiln.h value types match the internal headers; every declared function links");
}

static void test_public_only(kl_device *dev) {
  group_begin();
  double x[6] = { 1, -2, 3, -4, 5, -6 }, w[3] = { 0.5, 2, -1 }, b = 0.25, out[6] = { 0 };
  char err[1024] = "";
  CHECK(public_mul_add_relu(dev, x, w, b, out, err, sizeof err) == 0, "%s", err);
  for (int i = 0; i < 6; i++) {
    double want = x[i] * w[i % 3] + b;
    want = want > 0 ? want : 0;
    CHECK(out[i] == want, "y[%d] = %g, want %g", i, out[i], want);
  }
  group_end("a graph built, compiled and run through kiln.h alone");
}

/* ---- helpers for the builder tests ---- */
static int body_ops(kl_op *g) {
  int n = 0;
  for (kl_op *o = kl_graph_body(g)->first; o; o = o->next) n++;
  return n;
}
/* The diagnostics since the last take contain every one of want (NULL-terminated). */
static void check_diag(kl_ctx *ctx, const char *what, const char *const *want) {
  char *d = kl_diag_take(ctx);
  for (int i = 0; want[i]; i++) CHECK(strstr(d, want[i]) != NULL, "%s: '%s' not in: %s", what, want[i], d);
  free(d);
}
#define DIAG(ctx, what, ...) check_diag((ctx), (what), (const char *const[]){ __VA_ARGS__, NULL })
#define HERE(ctx)            kl_loc_make((ctx), "api.c", __LINE__, 0)

/* Compiles g for the host, runs it on rand inputs and compares with kl_graph_eval. */
static void run_vs_eval(kl_op *g, kl_device *dev, const char *what) {
  char err[2048] = "";
  kl_op *ps[8];
  int np = kl_graph_params(g, ps, 8);
  kl_named_tensor in[8];
  for (int i = 0; i < np; i++) {
    const kl_type *t = ps[i]->results[0].type;
    in[i].name = kl_op_attr_string(ps[i], "name");
    in[i].tensor = kl_tensor_rand(kl_dtype_of_type(t->elem), t->rank, t->shape, t->strides, 40 + (uint64_t)i,
                                  KL_DIST_UNIFORM, err, sizeof err);
  }
  kl_compile_opts o = { .no_cache = true };
  kl_program *p = kl_compile(g, &o, err, sizeof err);
  CHECK(p != NULL, "%s: compile: %s", what, err);
  int nout = 0, nref = 0;
  kl_tensor **out = NULL, **ref = NULL;
  if (p) CHECK(kl_program_run(p, dev, np, in, &nout, &out, err, sizeof err) == KL_OK, "%s: run: %s", what, err);
  CHECK(kl_graph_eval(g, np, in, &nref, &ref, err, sizeof err) == KL_OK, "%s: eval: %s", what, err);
  CHECK(nout == nref, "%s: %d outputs, eval %d", what, nout, nref);
  for (int i = 0; i < nout && i < nref; i++) {
    bool close = false;
    CHECK(kl_tensor_allclose(out[i], ref[i], -1, -1, &close, err, sizeof err) == 0 && close, "%s: output %d differs %s",
          what, i, err);
  }
  for (int i = 0; i < nout; i++) kl_tensor_release(out[i]);
  for (int i = 0; i < nref; i++) kl_tensor_release(ref[i]);
  free(out);
  free(ref);
  for (int i = 0; i < np; i++) kl_tensor_release(in[i].tensor);
  kl_program_release(p);
}

static void test_builders(kl_device *dev) {
  group_begin();
  kl_ctx *ctx = kl_ctx_create();
  kl_register_builtin_passes(ctx);
  kl_op *m = kl_module_create(ctx, HERE(ctx));
  kl_op *g = kl_graph_create(ctx, m, "conv_relu", HERE(ctx));
  /* x: NCHW logical, NHWC in memory; the param's type carries the NHWC strides */
  kl_value *x = kl_graph_add_param(g, "x", KL_DT_F32, 4, (int64_t[]){ 1, 3, 8, 8 }, "NHWC", HERE(ctx));
  kl_value *w = kl_graph_add_param(g, "w", KL_DT_F32, 4, (int64_t[]){ 4, 3, 3, 3 }, NULL, HERE(ctx));
  CHECK(x && w);
  if (x) {
    int64_t st[4];
    kl_layout_strides("NHWC", 4, (int64_t[]){ 1, 3, 8, 8 }, st, NULL, 0);
    const kl_type *want = kl_type_tensor(ctx, kl_type_f32(ctx), 4, (int64_t[]){ 1, 3, 8, 8 }, st);
    CHECK(x->type == want, "x: %s, want %s", kl_type_str(x->type), kl_type_str(want));
    CHECK(kl_graph_param(g, "x") == kl_value_parent_op(x));
  }
  kl_value *c = kl_graph_add_op(g, "conv", 2, (kl_value *[]){ x, w }, "{stride = [2, 2], padding = [1, 1, 1, 1]}",
                                HERE(ctx));
  CHECK(c != NULL);
  if (c) {
    CHECK(c->type->rank == 4 && c->type->shape[0] == 1 && c->type->shape[1] == 4 && c->type->shape[2] == 4 &&
              c->type->shape[3] == 4,
          "conv: %s", kl_type_str(c->type));
    /* the same op as kl_graph_build with the attributes built in C */
    kl_op *co = kl_value_parent_op(c);
    CHECK(!strcmp(co->name, "graph.conv"));
    int64_t s[2], pd[4];
    CHECK(kl_op_attr_i64s(co, "stride", s, 2) == 2 && s[0] == 2 && s[1] == 2);
    CHECK(kl_op_attr_i64s(co, "padding", pd, 4) == 4 && pd[0] == 1 && pd[3] == 1);
  }
  kl_value *r = kl_graph_add_op(g, "graph.relu", 1, &c, NULL, HERE(ctx));
  kl_value *sum = kl_graph_add_op(g, "reduce_sum", 1, &r, "{axes = [1], keepdims = true}", HERE(ctx));
  CHECK(sum && sum->type->rank == 4 && sum->type->shape[1] == 1, "reduce_sum: %s",
        sum ? kl_type_str(sum->type) : "NULL");
  kl_value *cl = kl_graph_add_op(g, "clip", 1, &r, "{min = 0.0, max = 6.0}", HERE(ctx));
  CHECK(cl != NULL);
  CHECK(kl_graph_output(g, 2, (kl_value *[]){ cl, sum }, HERE(ctx)) == KL_OK);
  CHECK(kl_verify(m) == KL_OK);
  run_vs_eval(g, dev, "conv+relu+clip, reduce_sum");

  /* dot with attributes, convert, constant */
  kl_op *g2 = kl_graph_create(ctx, m, "dot_convert", HERE(ctx));
  kl_value *a = kl_graph_add_param(g2, "a", KL_DT_F32, 2, (int64_t[]){ 5, 7 }, NULL, HERE(ctx));
  kl_value *bt = kl_graph_add_param(g2, "bt", KL_DT_F32, 2, (int64_t[]){ 6, 7 }, NULL, HERE(ctx));
  kl_value *d = kl_graph_add_op(g2, "dot", 2, (kl_value *[]){ a, bt }, "{transpose_b = true}", HERE(ctx));
  CHECK(d && d->type->rank == 2 && d->type->shape[0] == 5 && d->type->shape[1] == 6, "dot: %s",
        d ? kl_type_str(d->type) : "NULL");
  double cv[6] = { 1, 2, 3, 4, 5, 6.0001 };
  kl_value *k = kl_graph_add_constant(g2, KL_DT_F16, 1, (int64_t[]){ 6 }, cv, HERE(ctx));
  CHECK(k != NULL);
  if (k) { /* values rounded through f16 */
    const kl_attr *va = kl_op_attr(kl_value_parent_op(k), "value");
    CHECK(va && va->n == 6 && va->elems[5]->f == kl_round_f16(6.0001) && va->elems[0]->f == 1.0);
  }
  kl_value *dh = kl_graph_add_convert(g2, d, KL_DT_F16, HERE(ctx));
  CHECK(dh && dh->type->elem->kind == KL_TY_F16);
  kl_value *y = kl_graph_add_op(g2, "add", 2, (kl_value *[]){ dh, k }, NULL, HERE(ctx));
  kl_value *tr = kl_graph_add_op(g2, "transpose", 1, &y, "{perm = [1, 0]}", HERE(ctx));
  CHECK(tr && tr->type->shape[0] == 6 && tr->type->shape[1] == 5);
  double iv[2] = { 3.7, -1000 };
  kl_value *ki = kl_graph_add_constant(g2, KL_DT_I8, 1, (int64_t[]){ 2 }, iv, HERE(ctx));
  CHECK(ki != NULL);
  if (ki) { /* ints: truncated and saturated as an i8 tensor stores them */
    const kl_attr *va = kl_op_attr(kl_value_parent_op(ki), "value");
    CHECK(va && va->n == 2 && va->elems[0]->kind == KL_AT_INT && va->elems[0]->i == 3 && va->elems[1]->i == -128);
  }
  CHECK(kl_graph_output(g2, 1, &tr, HERE(ctx)) == KL_OK);
  run_vs_eval(g2, dev, "dot^T, convert, constant, transpose");
  char *dg = kl_diag_take(ctx);
  CHECK(!*dg, "no diagnostics expected: %s", dg);
  free(dg);
  kl_ctx_destroy(ctx);
  group_end("builders: params with layouts, ops with attribute text, converts, constants, outputs");
}

static void test_builder_errors(kl_device *dev) {
  group_begin();
  kl_ctx *ctx = kl_ctx_create(), *other = kl_ctx_create();
  kl_register_builtin_passes(ctx);
  kl_op *m = kl_module_create(ctx, KL_LOC_UNKNOWN);
  kl_op *g = kl_graph_create(ctx, m, "g", KL_LOC_UNKNOWN);
  kl_op *h = kl_graph_create(ctx, m, "h", KL_LOC_UNKNOWN);
  kl_op *og = kl_graph_create(other, kl_module_create(other, KL_LOC_UNKNOWN), "o", KL_LOC_UNKNOWN);
  kl_value *x = kl_graph_add_param(g, "x", KL_DT_F32, 2, (int64_t[]){ 4, 8 }, NULL, HERE(ctx));
  kl_value *hx = kl_graph_add_param(h, "x", KL_DT_F32, 2, (int64_t[]){ 4, 8 }, NULL, HERE(ctx));
  kl_value *ox = kl_graph_add_param(og, "x", KL_DT_F32, 2, (int64_t[]){ 4, 8 }, NULL, HERE(other));
  CHECK(x && hx && ox);
  int n0 = body_ops(g);
  int line;
  kl_value *r;

  line = __LINE__ + 1;
  r = kl_graph_add_op(g, "add", 2, (kl_value *[]){ x, NULL }, NULL, HERE(ctx));
  char at[64];
  snprintf(at, sizeof at, "api.c:%d", line);
  CHECK(r == NULL);
  DIAG(ctx, "NULL operand", at, "error: add: operand 2 is NULL");
  r = kl_graph_add_op(g, "add", 2, (kl_value *[]){ x, hx }, NULL, HERE(ctx));
  CHECK(r == NULL);
  DIAG(ctx, "operand of another graph", "add: operand 2 is a value of graph @h, not of graph @g");
  r = kl_graph_add_op(g, "mul", 2, (kl_value *[]){ ox, x }, NULL, HERE(ctx));
  CHECK(r == NULL);
  DIAG(ctx, "operand of another context", "mul: operand 1 is a value of graph @o, not of graph @g");
  line = __LINE__ + 1;
  r = kl_graph_add_op(g, "reduce_sum", 1, &x, "{axes = [1, }", HERE(ctx));
  snprintf(at, sizeof at, "api.c:%d", line);
  CHECK(r == NULL);
  DIAG(ctx, "bad attribute text", "attributes of graph.reduce_sum:1:", at, "reduce_sum: cannot read the attributes");
  r = kl_graph_add_op(g, "reduce_sum", 1, &x, "[1]", HERE(ctx));
  CHECK(r == NULL);
  DIAG(ctx, "attributes not a dict", "reduce_sum: the attributes must be a dictionary");
  r = kl_graph_add_op(g, "reduce_sum", 1, &x, "{axes = [5]}", HERE(ctx));
  CHECK(r == NULL);
  DIAG(ctx, "bad axis", "reduce_sum");
  r = kl_graph_add_op(g, "frobnicate", 1, &x, NULL, HERE(ctx));
  CHECK(r == NULL);
  DIAG(ctx, "unknown op", "unknown graph op");
  r = kl_graph_add_op(g, "relu", 2, (kl_value *[]){ x, x }, NULL, HERE(ctx));
  CHECK(r == NULL);
  DIAG(ctx, "operand count", "relu: expects 1 operand, got 2");
  r = kl_graph_add_op(g, "param", 0, NULL, NULL, HERE(ctx));
  CHECK(r == NULL);
  DIAG(ctx, "param through add_op", "param: not built by kl_graph_add_op");
  r = kl_graph_add_op(g, "relu", -1, NULL, NULL, HERE(ctx));
  CHECK(r == NULL);
  DIAG(ctx, "negative count", "relu: -1 operands");
  r = kl_graph_add_op(g, NULL, 1, &x, NULL, HERE(ctx));
  CHECK(r == NULL);
  DIAG(ctx, "NULL op name", "the op name must be a non-empty string");
  r = kl_graph_add_op(m, "relu", 1, &x, NULL, HERE(ctx));
  CHECK(r == NULL);
  DIAG(ctx, "module instead of graph", "relu: 'builtin.module' is not a graph");
  CHECK(kl_graph_add_op(NULL, "relu", 1, &x, NULL, KL_LOC_UNKNOWN) == NULL);

  CHECK(kl_graph_add_param(g, "x", KL_DT_F32, 1, (int64_t[]){ 3 }, NULL, HERE(ctx)) == NULL);
  DIAG(ctx, "duplicate param", "a parameter named 'x' already exists");
  CHECK(kl_graph_add_param(g, "", KL_DT_F32, 1, (int64_t[]){ 3 }, NULL, HERE(ctx)) == NULL);
  DIAG(ctx, "empty name", "param: the name must be a non-empty string");
  CHECK(kl_graph_add_param(g, "p", (kl_dtype)42, 1, (int64_t[]){ 3 }, NULL, HERE(ctx)) == NULL);
  DIAG(ctx, "bad dtype", "param: invalid dtype 42");
  CHECK(kl_graph_add_param(g, "p", KL_DT_F32, 9, (int64_t[]){ 1, 1, 1, 1, 1, 1, 1, 1, 1 }, NULL, HERE(ctx)) == NULL);
  DIAG(ctx, "rank 9", "param: rank 9 is out of range");
  CHECK(kl_graph_add_param(g, "p", KL_DT_F32, 2, NULL, NULL, HERE(ctx)) == NULL);
  DIAG(ctx, "NULL shape", "param: shape is NULL for rank 2");
  CHECK(kl_graph_add_param(g, "p", KL_DT_F32, 1, (int64_t[]){ -3 }, NULL, HERE(ctx)) == NULL);
  DIAG(ctx, "negative size", "param: ");
  CHECK(kl_graph_add_param(g, "p", KL_DT_F32, 2, (int64_t[]){ 2, 2 }, "NHWC", HERE(ctx)) == NULL);
  DIAG(ctx, "layout of another rank", "param 'p': ");
  CHECK(kl_graph_add_convert(g, x, KL_DT_NONE, HERE(ctx)) == NULL);
  DIAG(ctx, "convert to none", "convert: invalid dtype -1");
  CHECK(kl_graph_add_convert(g, hx, KL_DT_F16, HERE(ctx)) == NULL);
  DIAG(ctx, "convert of another graph", "convert: operand 1 is a value of graph @h");
  CHECK(kl_graph_add_constant(g, KL_DT_F32, 1, (int64_t[]){ 3 }, NULL, HERE(ctx)) == NULL);
  DIAG(ctx, "constant without values", "constant: values is NULL for 3 elements");
  CHECK(kl_graph_add_constant(g, KL_DT_F32, 1, (int64_t[]){ (1 << 22) + 1 }, (double[]){ 0 }, HERE(ctx)) == NULL);
  DIAG(ctx, "constant too large", "is too large");
  CHECK(kl_graph_output(g, 0, NULL, HERE(ctx)) == KL_ERR);
  DIAG(ctx, "no outputs", "output: give at least one value");
  CHECK(kl_graph_output(g, 2, (kl_value *[]){ x, hx }, HERE(ctx)) == KL_ERR);
  DIAG(ctx, "output of another graph", "output: output 2 is a value of graph @h");
  CHECK(body_ops(g) == n0, "failed builders added ops: %d, was %d", body_ops(g), n0);

  /* still usable: finish the graph and run it */
  kl_value *y = kl_graph_add_op(g, "sigmoid", 1, &x, NULL, HERE(ctx));
  CHECK(y && kl_graph_output(g, 1, &y, HERE(ctx)) == KL_OK);
  run_vs_eval(g, dev, "after the errors");
  kl_ctx_destroy(other);
  kl_ctx_destroy(ctx);
  group_end("builders: bad arguments are located diagnostics, add nothing, leave the graph usable");
}

static void test_module_graph(void) {
  group_begin();
  kl_ctx *ctx = kl_ctx_create();
  static const char text[] = "func.func @first() attributes {graph} {\n"
                             "  %0 = \"graph.param\"() {name = \"x\"} : () -> tensor<2x3xf32>\n"
                             "  %1 = \"graph.relu\"(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>\n"
                             "  func.return %1 : tensor<2x3xf32>\n"
                             "}\n"
                             "func.func @plain() {\n"
                             "  func.return\n"
                             "}\n"
                             "func.func @second() attributes {graph} {\n"
                             "  %0 = \"graph.param\"() {name = \"y\"} : () -> tensor<4xf32>\n"
                             "  func.return %0 : tensor<4xf32>\n"
                             "}\n";
  kl_op *m = kl_parse_module(ctx, text, sizeof text - 1, "two.kir");
  char *d = kl_diag_take(ctx);
  CHECK(m != NULL, "parse: %s", d);
  free(d);
  if (m) {
    CHECK(kl_verify(m) == KL_OK);
    kl_op *g1 = kl_module_graph(m, NULL), *g2 = kl_module_graph(m, "second");
    CHECK(g1 && !strcmp(kl_op_attr_string(g1, "sym_name"), "first"));
    CHECK(g2 && kl_graph_param(g2, "y") != NULL);
    CHECK(kl_module_graph(m, "plain") == NULL); /* not a graph */
    CHECK(kl_module_graph(m, "missing") == NULL);
    CHECK(g1 && kl_module_graph(g1, NULL) == NULL); /* not a module */
  }
  CHECK(kl_module_graph(NULL, NULL) == NULL);
  kl_ctx_destroy(ctx);
  group_end("kl_module_graph: graph funcs of a parsed module by name");
}

static void test_tensor_query(void) {
  group_begin();
  char err[256] = "";
  kl_tensor *t = kl_tensor_rand(KL_DT_F16, 4, (int64_t[]){ 2, 3, 4, 5 }, NULL, 7, KL_DIST_UNIFORM, err, sizeof err);
  CHECK(t != NULL, "%s", err);
  kl_tensor *nhwc = t ? kl_tensor_as_layout(t, "NHWC", err, sizeof err) : NULL;
  CHECK(nhwc != NULL, "%s", err);
  if (t && nhwc) {
    CHECK(kl_tensor_dtype(nhwc) == KL_DT_F16 && kl_tensor_rank(nhwc) == 4);
    CHECK(kl_tensor_dim(nhwc, 0) == 2 && kl_tensor_dim(nhwc, 1) == 3 && kl_tensor_dim(nhwc, 3) == 5);
    /* NHWC memory of an NCHW logical shape: strides n = 60, c = 1, h = 15, w = 3 */
    CHECK(kl_tensor_stride(nhwc, 0) == 60 && kl_tensor_stride(nhwc, 1) == 1 && kl_tensor_stride(nhwc, 2) == 15 &&
          kl_tensor_stride(nhwc, 3) == 3);
    CHECK(kl_tensor_dim(nhwc, 4) == -1 && kl_tensor_dim(nhwc, -1) == -1 && kl_tensor_stride(nhwc, 4) == -1);
    /* element [1, 2, 3, 4] read through the data pointer and the strides */
    int64_t idx[4] = { 1, 2, 3, 4 }, off = 0;
    for (int i = 0; i < 4; i++) off += idx[i] * kl_tensor_stride(nhwc, i);
    const uint16_t *p = kl_tensor_data(nhwc);
    CHECK(kl_f16_to_f64(p[off]) == kl_tensor_get(t, idx));
  }
  /* a view with an offset: data points at its element [0] */
  kl_tensor *base = kl_tensor_from_f64(KL_DT_F32, 1, (int64_t[]){ 10 }, NULL,
                                       (double[]){ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 }, err, sizeof err);
  kl_tensor *v = base ? kl_tensor_view(base, 1, (int64_t[]){ 4 }, (int64_t[]){ 2 }, 3, err, sizeof err) : NULL;
  CHECK(v != NULL, "%s", err);
  if (v) {
    const float *p = kl_tensor_data(v);
    CHECK(p[0] == 3 && p[kl_tensor_stride(v, 0)] == 5 && kl_tensor_dim(v, 0) == 4 && kl_tensor_rank(v) == 1);
  }
  kl_tensor *s = kl_tensor_from_f64(KL_DT_I32, 0, NULL, NULL, (double[]){ 42 }, err, sizeof err);
  CHECK(s && kl_tensor_rank(s) == 0 && kl_tensor_dim(s, 0) == -1 && *(const int32_t *)kl_tensor_data(s) == 42);
  kl_tensor_release(s);
  kl_tensor_release(v);
  kl_tensor_release(base);
  kl_tensor_release(nhwc);
  kl_tensor_release(t);
  group_end("tensor accessors: dtype, rank, dims, strides, data");
}

int main(void) {
  char err[512];
  kl_device *dev = kl_device_open("host", err, sizeof err);
  CHECK(dev != NULL, "host device: %s", err);
  test_layout();
  test_tensor_query();
  test_module_graph();
  if (dev) {
    test_public_only(dev);
    test_builders(dev);
    test_builder_errors(dev);
  }
  kl_device_destroy(dev);
  return check_summary("test_public_api");
}
