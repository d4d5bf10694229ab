/* test_graph.c — graph dialect: inference, builders, layouts, verifier, evaluator. */
#include "core/dialect_graph.h"
#include "ctx_test_util.h"
#include "core/verify.h"
#include "core/print.h"
#include "runtime/graph_eval.h"
#include "runtime/refops.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ir_test_util.h"

static kl_op *param(kl_op *g, const char *name, const kl_type *t) {
  kl_named_attr a = { "name", kl_attr_str(g->ctx, name) };
  return kl_graph_build(g, "param", kl_loc_make(g->ctx, "g.lua", 1, 0), 0, NULL, 1, &a, t);
}

static void test_conv_add_relu(void) {
  kl_ctx *ctx = kl_test_ctx();
  kl_op *m = kl_module_create(ctx, KL_LOC_UNKNOWN);
  kl_op *g = kl_graph_create(ctx, m, "car", KL_LOC_UNKNOWN);
  const kl_type *f32 = kl_type_f32(ctx);
  int64_t xs[] = { 2, 8, 5, 5 }, ws[] = { 4, 8, 1, 1 }, rs[] = { 2, 4, 5, 5 }, st[4];
  char err[512];
  kl_layout_strides("NHWC", 4, xs, st, err, sizeof err);
  kl_op *x = param(g, "x", kl_type_tensor(ctx, f32, 4, xs, st));
  kl_op *w = param(g, "w", kl_type_tensor(ctx, f32, 4, ws, NULL));
  kl_layout_strides("NHWC", 4, rs, st, err, sizeof err);
  kl_op *r = param(g, "r", kl_type_tensor(ctx, f32, 4, rs, st));
  kl_value *cv[] = { kl_op_result(x, 0), kl_op_result(w, 0) };
  kl_op *conv = kl_graph_build(g, "conv", KL_LOC_UNKNOWN, 2, cv, 0, NULL, NULL);
  CHECK(conv && !kl_type_is_row_major(conv->results[0].type)); /* NHWC in -> NHWC out */
  kl_value *av[] = { kl_op_result(conv, 0), kl_op_result(r, 0) };
  kl_op *add = kl_graph_build(g, "add", KL_LOC_UNKNOWN, 2, av, 0, NULL, NULL);
  kl_value *relu_in = kl_op_result(add, 0);
  kl_op *relu = kl_graph_build(g, "relu", KL_LOC_UNKNOWN, 1, &relu_in, 0, NULL, NULL);
  kl_value *out = kl_op_result(relu, 0);
  kl_graph_set_outputs(g, 1, &out, KL_LOC_UNKNOWN);
  CHECK(kl_verify(m) == KL_OK);
  kl_tensor *tx = kl_tensor_rand(KL_DT_F32, 4, xs, NULL, 1, KL_DIST_NORMAL, err, sizeof err);
  kl_tensor *tw = kl_tensor_rand(KL_DT_F32, 4, ws, NULL, 2, KL_DIST_NORMAL, err, sizeof err);
  kl_tensor *tr = kl_tensor_rand(KL_DT_F32, 4, rs, NULL, 3, KL_DIST_NORMAL, err, sizeof err);
  kl_tensor *txn = kl_tensor_as_layout(tx, "NHWC", err, sizeof err),
            *trn = kl_tensor_as_layout(tr, "NHWC", err, sizeof err);
  /* layout mismatch is an error naming both */
  kl_named_tensor bad[] = { { "x", tx }, { "w", tw }, { "r", trn } };
  int nout;
  kl_tensor **outs;
  CHECK(kl_graph_eval(g, 3, bad, &nout, &outs, err, sizeof err) == KL_ERR);
  CHECK(strstr(err, "layout") && strstr(err, "'x'"));
  kl_named_tensor in[] = { { "x", txn }, { "w", tw }, { "r", trn } };
  CHECK(kl_graph_eval(g, 3, in, &nout, &outs, err, sizeof err) == KL_OK);
  CHECK(nout == 1);
  /* check against a direct loop */
  double maxerr = 0;
  for (int n = 0; n < 2; n++)
    for (int k = 0; k < 4; k++)
      for (int h = 0; h < 5; h++)
        for (int ww = 0; ww < 5; ww++) {
          double acc = 0;
          for (int c = 0; c < 8; c++)
            acc += kl_tensor_get(tx, (int64_t[]){ n, c, h, ww }) * kl_tensor_get(tw, (int64_t[]){ k, c, 0, 0 });
          acc += kl_tensor_get(tr, (int64_t[]){ n, k, h, ww });
          acc = acc > 0 ? acc : 0;
          double got = kl_tensor_get(outs[0], (int64_t[]){ n, k, h, ww });
          if (fabs(got - acc) > maxerr) maxerr = fabs(got - acc);
        }
  CHECK(maxerr < 1e-5);
  kl_tensor_release(outs[0]);
  free(outs);
  /* missing input */
  CHECK(kl_graph_eval(g, 2, in, &nout, &outs, err, sizeof err) == KL_ERR && strstr(err, "missing input 'r'"));
  kl_tensor_release(tx);
  kl_tensor_release(tw);
  kl_tensor_release(tr);
  kl_tensor_release(txn);
  kl_tensor_release(trn);
  kl_ctx_destroy(ctx);
  printf("conv+add+relu eval ok\n");
}

static void test_errors(void) {
  kl_ctx *ctx = kl_test_ctx();
  kl_op *g = kl_graph_create(ctx, kl_module_create(ctx, KL_LOC_UNKNOWN), "e", KL_LOC_UNKNOWN);
  const kl_type *f32 = kl_type_f32(ctx);
  kl_op *a = param(g, "a", kl_type_tensor(ctx, f32, 2, (int64_t[]){ 2, 3 }, NULL));
  kl_op *b = param(g, "b", kl_type_tensor(ctx, f32, 2, (int64_t[]){ 4, 5 }, NULL));
  kl_value *ab[] = { kl_op_result(a, 0), kl_op_result(b, 0) };
  CHECK(kl_graph_build(g, "dot", kl_loc_make(ctx, "script.lua", 12, 0), 2, ab, 0, NULL, NULL) == NULL);
  char *d = kl_diag_take(ctx);
  CHECK(strstr(d, "script.lua:12: error: dot:") && strstr(d, "[2,3]") && strstr(d, "[4,5]"));
  free(d);
  CHECK(kl_graph_build(g, "add", kl_loc_make(ctx, "script.lua", 13, 0), 2, ab, 0, NULL, NULL) == NULL);
  CHECK(diag_has(ctx, "script.lua:13: error: add"));
  CHECK(param(g, "a", kl_type_tensor(ctx, f32, 1, (int64_t[]){ 2 }, NULL)) == NULL);
  CHECK(diag_has(ctx, "already exists"));
  kl_ctx_destroy(ctx);
  printf("errors ok\n");
}

int main(void) {
  test_conv_add_relu();
  test_errors();
  return check_summary("test_graph");
}
