/* test_migraphx.c — the MIGraphX front end from C: kl_mgx_plan_param (argument strides
 * -> the param the caller passes: layout, broadcast, slice of a larger buffer, and the
 * strides it rejects), and kl_migraphx_parse + kl_graph_eval on a sliced, broadcast and
 * permuted argument with values set by hand (the public API, as an embedder calls it). */
#include "core/context.h"
#include "frontend/migraphx_parse.h"
#include "include/kiln.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static kl_mgx_type ty(int rank, const int64_t *dims, const int64_t *strides) {
  kl_mgx_type t = { .rank = rank, .dt = KL_DT_F32 };
  for (int i = 0; i < rank; i++) t.dims[i] = dims[i], t.strides[i] = strides[i];
  return t;
}

static void test_plans(void) {
  group_begin();
  kl_mgx_param_plan pl;
  char err[256];
  kl_mgx_type t = ty(4, (int64_t[]){ 1, 8, 3, 3 }, (int64_t[]){ 72, 1, 24, 8 }); /* NHWC */
  CHECK(kl_mgx_plan_param(&t, &pl, err, sizeof err) && pl.permuted && !pl.sliced && !pl.broadcast);
  CHECK(pl.perm[1] == 2 && pl.perm[2] == 3 && pl.perm[3] == 1, "memory order N H W C: %d %d %d %d", pl.perm[0],
        pl.perm[1], pl.perm[2], pl.perm[3]);
  t = ty(3, (int64_t[]){ 2, 3, 5 }, (int64_t[]){ 0, 5, 1 }); /* batch broadcast */
  CHECK(kl_mgx_plan_param(&t, &pl, err, sizeof err) && pl.broadcast && !pl.sliced && !pl.permuted);
  CHECK(pl.shape[0] == 1 && pl.shape[1] == 3 && pl.shape[2] == 5);
  t = ty(2, (int64_t[]){ 4, 6 }, (int64_t[]){ 10, 1 }); /* 4x6 of a 4x10 buffer */
  CHECK(kl_mgx_plan_param(&t, &pl, err, sizeof err) && pl.sliced && pl.shape[0] == 4 && pl.shape[1] == 10);
  CHECK(pl.base[0] == 4 && pl.base[1] == 6);
  t = ty(3, (int64_t[]){ 2, 3, 4 }, (int64_t[]){ 40, 1, 8 }); /* permuted and sliced: 2 x [5x8 buffer] */
  CHECK(kl_mgx_plan_param(&t, &pl, err, sizeof err) && pl.sliced && pl.permuted, "%s", err);
  CHECK(pl.shape[0] == 2 && pl.shape[1] == 8 && pl.shape[2] == 5, "%lld %lld %lld", (long long)pl.shape[0],
        (long long)pl.shape[1], (long long)pl.shape[2]);
  t = ty(2, (int64_t[]){ 3, 4 }, (int64_t[]){ 1, 1 });
  CHECK(!kl_mgx_plan_param(&t, &pl, err, sizeof err) && strstr(err, "same stride"), "%s", err);
  t = ty(2, (int64_t[]){ 3, 4 }, (int64_t[]){ 8, 2 }); /* every other element: a trailing buffer dim of 2 */
  CHECK(kl_mgx_plan_param(&t, &pl, err, sizeof err) && pl.inner == 2 && pl.sliced && !pl.permuted && pl.shape[0] == 3 &&
            pl.shape[1] == 4 && pl.base[1] == 4,
        "%s", err);
  t = ty(2, (int64_t[]){ 3, 4 }, (int64_t[]){ 3, 1 });
  CHECK(!kl_mgx_plan_param(&t, &pl, err, sizeof err) && strstr(err, "does not fit"), "%s", err);
  t = ty(2, (int64_t[]){ 3, 4 }, (int64_t[]){ 6, 4 });
  CHECK(!kl_mgx_plan_param(&t, &pl, err, sizeof err) &&
            strstr(err, "stride 6 of dimension 0 is not a multiple of stride 4"),
        "%s", err);
  group_end("argument strides -> params");
}

static const char *TEXT = "func.func @f(%a: !migraphx.shaped<2x3xf32, 4x1>, %b: !migraphx.shaped<2x3xf32, 0x1>,\n"
                          "             %c: !migraphx.shaped<2x3xf32, 1x2>) -> !migraphx.shaped<2x3xf32, 3x1> {\n"
                          "  %0 = migraphx.add %a, %b : <2x3xf32, 4x1>, <2x3xf32, 0x1> -> <2x3xf32, 3x1>\n"
                          "  %1 = migraphx.mul %0, %c : <2x3xf32, 3x1>, <2x3xf32, 1x2> -> <2x3xf32, 3x1>\n"
                          "  return %1 : !migraphx.shaped<2x3xf32, 3x1>\n"
                          "}\n";

static void test_parse_eval(void) {
  group_begin();
  kl_ctx *ctx = kl_ctx_create();
  kl_op *m = kl_migraphx_parse(ctx, TEXT, strlen(TEXT), "t.mlir");
  CHECK(m && kl_verify(m) == KL_OK);
  kl_op *g = m ? kl_module_graph(m, "f") : NULL;
  CHECK(g != NULL);
  if (g) {
    char err[256];
    /* a: the whole 2x4 buffer; b: the 3 values broadcast over rows; c: 2x3 column-major */
    double av[8] = { 1, 2, 3, 99, 4, 5, 6, 99 }, bv[3] = { 10, 20, 30 };
    kl_tensor *a = kl_tensor_from_f64(KL_DT_F32, 2, (int64_t[]){ 2, 4 }, NULL, av, err, sizeof err);
    kl_tensor *b = kl_tensor_from_f64(KL_DT_F32, 2, (int64_t[]){ 1, 3 }, NULL, bv, err, sizeof err);
    /* c = [[1, 3, 5], [2, 4, 6]] (values in logical order), stored column-major */
    double cl[6] = { 1, 3, 5, 2, 4, 6 };
    kl_tensor *c = kl_tensor_from_f64(KL_DT_F32, 2, (int64_t[]){ 2, 3 }, (int64_t[]){ 1, 2 }, cl, err, sizeof err);
    CHECK(a && b && c, "%s", err);
    kl_named_tensor in[3] = { { "a", a }, { "b", b }, { "c", c } };
    int nout = 0;
    kl_tensor **outs = NULL;
    CHECK(kl_graph_eval(g, 3, in, &nout, &outs, err, sizeof err) == KL_OK && nout == 1, "%s", err);
    if (nout == 1) {
      double got[6], want[6] = { 11 * 1, 22 * 3, 33 * 5, 14 * 2, 25 * 4, 36 * 6 };
      kl_tensor_to_f64(outs[0], got);
      for (int i = 0; i < 6; i++) CHECK(got[i] == want[i], "element %d: %g, want %g", i, got[i], want[i]);
      kl_tensor_release(outs[0]);
    }
    free(outs);
    kl_tensor_release(a), kl_tensor_release(b), kl_tensor_release(c);
  }
  /* an error leaves a located diagnostic and no module */
  const char *bad =
      "func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = migraphx.erf_like(%a) : (tensor<2xf32>) -> "
      "tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n";
  CHECK(kl_migraphx_parse(ctx, bad, strlen(bad), "bad.mlir") == NULL);
  char *d = kl_diag_take(ctx);
  CHECK(strstr(d, "bad.mlir:2:8: error: migraphx.erf_like is not supported (supported: add"), "%s", d);
  free(d);
  kl_ctx_destroy(ctx);
  group_end("kl_migraphx_parse + kl_graph_eval");
}

int main(void) {
  test_plans();
  test_parse_eval();
  return check_summary("test_migraphx");
}
