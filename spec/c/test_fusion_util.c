/* test_fusion_util.c — passes/fusion_util.h and kl_verify_regular (passes/rock_regularize.h)
 * on hand-written kernels: uses through views with their depth, the GEMM-operand-to-
 * prologue-inputs walk of regular form (the composed views checked point by point
 * against the coordinates the kernel text implies), its refusals (kernel argument, no
 * fusing writer, a writer through a view), and the regular-form check, strict and not,
 * with its located messages. */
#include "core/parse.h"
#include "ctx_test_util.h"
#include "core/view.h"
#include "passes/fusion_util.h"
#include "passes/rock_regularize.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static kl_ctx *new_ctx(void) {
  kl_ctx *ctx = kl_test_ctx();
  if (!kl_lookup_attr_ext(ctx, "view", 4)) kl_register_view_attr(ctx);
  return ctx;
}
static kl_op *parse(kl_ctx *ctx, const char *text) {
  kl_op *m = kl_parse_module(ctx, text, strlen(text), "fu.kir");
  if (!m) {
    char *d = kl_diag_take(ctx);
    fprintf(stderr, "%s", d);
    free(d);
  }
  return m;
}
static kl_op *find(kl_op *m, const char *name, int nth) {
  int n;
  kl_op **ops = kl_collect_ops(m, &n);
  kl_op *r = NULL;
  for (int i = 0; i < n && !r; i++)
    if (!strcmp(ops[i]->name, name) && nth-- == 0) r = ops[i];
  free(ops);
  return r;
}

/* A prologue in regular form: %p [4,5] = relu(transpose(x) + s), written directly; the
 * GEMM reads it as a [G=1, K=5, M=4] operand (p[m][k]). */
static const char *PROLOGUE =
    "func.func @k(%x: buffer<5x4xf32>, %s: buffer<4x5xf32>, %b: buffer<1x5x6xf32>, %c: buffer<1x4x6xf32>) "
    "attributes {kernel} {\n"
    "  %p = \"rock.alloc\"() : () -> buffer<4x5xf32>\n"
    "  %xt = \"rock.transform\"(%x) {view = #view<[PassThrough [\"m\",\"k\"] at [0,1] -> [\"m\",\"k\"] at [1,0]] "
    "bounds=[4,5] -> [5,4]>} : (buffer<5x4xf32>) -> buffer<4x5xf32>\n"
    "  \"rock.elementwise\"(%xt, %s, %p) ({\n  ^bb0(%u: f32, %v: f32):\n    %w = arith.addf %u, %v : f32\n"
    "    \"rock.yield\"(%w) : (f32) -> ()\n  }) : (buffer<4x5xf32>, buffer<4x5xf32>, buffer<4x5xf32>) -> ()\n"
    "  %pg = \"rock.transform\"(%p) {view = #view<[AddDim{1} [\"g\"] at [0] -> [] at [], PassThrough [\"k\",\"m\"] at "
    "[1,2] -> [\"k\",\"m\"] at [1,0]] bounds=[1,5,4] -> [4,5]>} : (buffer<4x5xf32>) -> buffer<1x5x4xf32>\n"
    "  \"rock.gemm\"(%pg, %b, %c) {store = \"set\"} : (buffer<1x5x4xf32>, buffer<1x5x6xf32>, buffer<1x4x6xf32>) -> "
    "()\n"
    "  func.return\n}\n";

static void test_operand_inputs(void) {
  kl_ctx *ctx = new_ctx();
  kl_op *m = parse(ctx, PROLOGUE);
  CHECK(m != NULL);
  if (!m) {
    kl_ctx_destroy(ctx);
    return;
  }
  kl_op *gemm = find(m, "rock.gemm", 0), *ew = find(m, "rock.elementwise", 0), *al = find(m, "rock.alloc", 0);
  kl_value *p = kl_op_result(al, 0);
  /* uses through views: the elementwise's write (depth 0), the gemm's read (depth 1) */
  kl_fu_use *us;
  int nu = kl_fu_uses(p, &us);
  CHECK(nu == 2, "%d uses", nu);
  bool saw_w = false, saw_r = false;
  for (int i = 0; i < nu; i++) {
    if (us[i].user == ew) saw_w = us[i].depth == 0 && us[i].index == 2 && kl_fu_fusing_write(ew, 2);
    if (us[i].user == gemm) saw_r = us[i].depth == 1 && us[i].index == 0 && !kl_fu_fusing_read(gemm, 0);
  }
  free(us);
  CHECK(saw_w && saw_r && kl_fu_is_global_alloc(p) && kl_fu_fusing_read(ew, 0) && !kl_fu_fusing_read(ew, 2));
  /* the walk from the GEMM's A operand to the prologue's inputs */
  kl_op *w = NULL;
  kl_value *a = NULL;
  kl_fu_input *in = NULL;
  char err[512] = "";
  int n = kl_fu_operand_inputs(gemm->opnds[0].value, &w, &a, &in, err, sizeof err);
  CHECK(n == 2 && w == ew && a == p, "%d inputs: %s", n, err);
  if (n == 2) {
    CHECK(in[0].base == ew->block->region->op->regions[0].first->args[0] && in[0].writer_operand == 0);
    CHECK(in[1].base == ew->block->region->op->regions[0].first->args[1] && in[1].writer_operand == 1);
    /* operand (0, k, m): x[k][m] and s[m][k], every point valid */
    bool ok = kl_view_rank(in[0].view) == 3 && kl_view_lower_rank(in[0].view) == 2 && kl_view_rank(in[1].view) == 3 &&
        kl_view_lower_rank(in[1].view) == 2;
    for (int64_t k = 0; k < 5 && ok; k++)
      for (int64_t mm = 0; mm < 4 && ok; mm++) {
        int64_t u[3] = { 0, k, mm }, l0[2], l1[2];
        ok &= kl_view_eval(in[0].view, u, l0) && l0[0] == k && l0[1] == mm;
        ok &= kl_view_eval(in[1].view, u, l1) && l1[0] == mm && l1[1] == k;
      }
    CHECK(ok, "composed views of the prologue's inputs");
    /* the vector length along m follows from the views alone: x[k][m] is contiguous in m */
    CHECK(kl_view_vector_len(in[0].view, 2, NULL, 4) == 4 && kl_view_vector_len(in[1].view, 2, NULL, 4) == 1);
  }
  kl_fu_inputs_free(in, n);
  /* refusals: a kernel argument (B), ... */
  CHECK(kl_fu_operand_inputs(gemm->opnds[1].value, &w, &a, &in, err, sizeof err) == -1 &&
        strstr(err, "does not read a global rock.alloc"));
  /* ... an alloc without a fusing writer (the output of the GEMM, as an alloc) */
  kl_ctx_destroy(ctx);
  ctx = new_ctx();
  m = parse(ctx,
            "func.func @f(%o: buffer<4x4xf32>) attributes {kernel} {\n"
            "  %p = \"rock.alloc\"() : () -> buffer<4x4xf32>\n"
            "  \"rock.fill\"(%p) {value = 1.0 : f32} : (buffer<4x4xf32>) -> ()\n"
            "  %pt = \"rock.transform\"(%p) {view = #view<[PassThrough [\"a\",\"b\"] at [0,1] -> [\"a\",\"b\"] "
            "at [1,0]] bounds=[4,4] -> [4,4]>} : (buffer<4x4xf32>) -> buffer<4x4xf32>\n"
            "  \"rock.elementwise\"(%pt, %o) ({\n  ^bb0(%u: f32):\n    \"rock.yield\"(%u) : (f32) -> ()\n"
            "  }) : (buffer<4x4xf32>, buffer<4x4xf32>) -> ()\n  func.return\n}\n");
  CHECK(m != NULL);
  if (m) {
    kl_op *e = find(m, "rock.elementwise", 0);
    CHECK(kl_fu_operand_inputs(e->opnds[0].value, &w, &a, &in, err, sizeof err) == -1 &&
              strstr(err, "no fusing op writes the buffer"),
          "%s", err);
    /* the check: a removable view on a fusing read is a located error naming alloc and view */
    CHECK(kl_verify_regular(m, false) == KL_ERR);
    char *d = kl_diag_take(ctx);
    CHECK(strstr(d,
                 "fu.kir:5:3: error: rock-regularize: %p is read by rock.elementwise through rock.transform %pt; "
                 "the view can be moved off the read") != NULL,
          "%s", d);
    free(d);
  }
  kl_ctx_destroy(ctx);
  /* ... and a fusing writer through a view (not regular) */
  ctx = new_ctx();
  m = parse(ctx,
            "func.func @f(%x: buffer<4x4xf32>, %c: buffer<1x4x4xf32>) attributes {kernel} {\n"
            "  %p = \"rock.alloc\"() : () -> buffer<4x4xf32>\n"
            "  %pt = \"rock.transform\"(%p) {view = #view<[PassThrough [\"a\",\"b\"] at [0,1] -> [\"a\",\"b\"] "
            "at [1,0]] bounds=[4,4] -> [4,4]>} : (buffer<4x4xf32>) -> buffer<4x4xf32>\n"
            "  \"rock.elementwise\"(%x, %pt) ({\n  ^bb0(%u: f32):\n    \"rock.yield\"(%u) : (f32) -> ()\n"
            "  }) : (buffer<4x4xf32>, buffer<4x4xf32>) -> ()\n"
            "  %pg = \"rock.transform\"(%p) {view = #view<[AddDim{1} [\"g\"] at [0] -> [] at [], PassThrough "
            "[\"k\",\"m\"] at [1,2] -> [\"k\",\"m\"] at [0,1]] bounds=[1,4,4] -> [4,4]>} : (buffer<4x4xf32>) -> "
            "buffer<1x4x4xf32>\n"
            "  \"rock.gemm\"(%pg, %pg, %c) {store = \"set\"} : (buffer<1x4x4xf32>, buffer<1x4x4xf32>, "
            "buffer<1x4x4xf32>) -> ()\n  func.return\n}\n");
  CHECK(m != NULL);
  if (m) {
    kl_op *g = find(m, "rock.gemm", 0);
    CHECK(kl_fu_operand_inputs(g->opnds[0].value, &w, &a, &in, err, sizeof err) == -1 &&
              strstr(err, "writes it through a view"),
          "%s", err);
    CHECK(kl_verify_regular(m, false) == KL_ERR);
    char *d = kl_diag_take(ctx);
    CHECK(strstr(d,
                 "fu.kir:4:3: error: rock-regularize: %p is written by rock.elementwise through rock.transform "
                 "%pt; the view can be moved off the write") != NULL,
          "%s", d);
    free(d);
  }
  kl_ctx_destroy(ctx);
  printf("operand inputs: uses with depth, composed views per prologue input, refusals with reasons\n");
}

static void test_verify_regular(void) {
  kl_ctx *ctx = new_ctx();
  kl_op *m = parse(ctx, PROLOGUE);
  CHECK(m && kl_verify_regular(m, false) == KL_OK && kl_verify_regular(m, true) == KL_OK);
  kl_ctx_destroy(ctx);
  /* a broadcast read: allowed unless strict; strict names the reason */
  ctx = new_ctx();
  m = parse(ctx,
            "func.func @b(%o: buffer<4x6xf32>) attributes {kernel} {\n"
            "  %c = \"rock.alloc\"() : () -> buffer<4x1xf32>\n"
            "  \"rock.fill\"(%c) {value = 1.0 : f32} : (buffer<4x1xf32>) -> ()\n"
            "  %cb = \"rock.transform\"(%c) {view = #view<[PassThrough [\"m\"] at [0] -> [\"m\"] at [0], "
            "Broadcast{1} [\"n\"] at [1] -> [\"n\"] at [1]] bounds=[4,6] -> [4,1]>} : (buffer<4x1xf32>) -> "
            "buffer<4x6xf32>\n"
            "  \"rock.elementwise\"(%cb, %o) ({\n  ^bb0(%u: f32):\n    \"rock.yield\"(%u) : (f32) -> ()\n"
            "  }) : (buffer<4x6xf32>, buffer<4x6xf32>) -> ()\n  func.return\n}\n");
  CHECK(m && kl_verify_regular(m, false) == KL_OK);
  CHECK(m && kl_verify_regular(m, true) == KL_ERR);
  char *d = kl_diag_take(ctx);
  CHECK(strstr(d,
               "fu.kir:5:3: error: rock-regularize: %c is read by rock.elementwise through rock.transform %cb; "
               "not regular (strict check): the view of input 0 is not invertible") != NULL,
        "%s", d);
  free(d);
  kl_ctx_destroy(ctx);
  printf("verify_regular: regular kernels pass (strict too), broadcast reads only fail strict\n");
}

int main(void) {
  test_operand_inputs();
  test_verify_regular();
  return check_summary("test_fusion_util");
}
