/* test_ir_core.c — core IR data structures: interning, ops, uses, RAUW, erase, clone,
 * walks, printer, verifier. */
#include "core/ir.h"
#include "core/print.h"
#include "core/verify.h"
#include "core/dialect_builtin.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ir_test_util.h"

static kl_op *make_func(kl_ctx *ctx, kl_op *m, const char *name, int nargs, const kl_type *t, kl_block **body) {
  kl_named_attr a = { "sym_name", kl_attr_str(ctx, name) };
  kl_op *f = kl_op_create(ctx, "func.func", kl_loc_make(ctx, "t.kir", 1, 1), 0, NULL, 0, NULL, 1, &a, 1);
  kl_block *b = kl_block_create(ctx);
  for (int i = 0; i < nargs; i++) kl_block_add_arg(ctx, b, t);
  kl_region_push_block(&f->regions[0], b);
  kl_block_push_op(kl_module_body(m), f);
  *body = b;
  return f;
}

static void test_interning(void) {
  kl_ctx *ctx = kl_ctx_create();
  int64_t shape[] = { 2, 3 }, nhwc[] = { 1, 3 };
  const kl_type *f32 = kl_type_f32(ctx);
  CHECK(kl_type_tensor(ctx, f32, 2, shape, NULL) == kl_type_tensor(ctx, f32, 2, shape, (int64_t[]){ 3, 1 }));
  CHECK(kl_type_tensor(ctx, f32, 2, shape, nhwc) != kl_type_tensor(ctx, f32, 2, shape, NULL));
  CHECK(!strcmp(kl_type_str(kl_type_tensor(ctx, f32, 2, shape, nhwc)), "tensor<2x3xf32, strides=[1,3]>"));
  CHECK(!strcmp(kl_type_str(kl_type_buffer(ctx, f32, 2, shape, NULL, KL_SPACE_LDS)), "buffer<2x3xf32, lds>"));
  CHECK(kl_type_tensor(ctx, f32, 1, (int64_t[]){ -1 }, NULL) == NULL);
  CHECK(kl_attr_int(ctx, 3) == kl_attr_int(ctx, 3));
  CHECK(kl_attr_int(ctx, 3) != kl_attr_int_typed(ctx, 3, kl_type_i32(ctx)));
  CHECK(!strcmp(kl_attr_float(ctx, 1.0)->text, "1.0"));
  CHECK(!strcmp(kl_attr_float(ctx, 0.1)->text, "0.1"));
  CHECK(!strcmp(kl_attr_str(ctx, "a\"b\n")->text, "\"a\\\"b\\n\""));
  kl_named_attr e[] = { { "z", kl_attr_int(ctx, 1) }, { "a", kl_attr_bool(ctx, true) } };
  CHECK(!strcmp(kl_attr_dict(ctx, 2, e)->text, "{a = true, z = 1}"));
  CHECK(kl_intern(ctx, "abc") == kl_intern(ctx, "abc"));
  /* two contexts are independent */
  kl_ctx *ctx2 = kl_ctx_create();
  CHECK(kl_type_f32(ctx2) != f32);
  kl_ctx_destroy(ctx2);
  kl_ctx_destroy(ctx);
  printf("interning ok\n");
}

static void test_ops(void) {
  kl_ctx *ctx = kl_ctx_create();
  kl_op *m = kl_module_create(ctx, KL_LOC_UNKNOWN);
  const kl_type *f32 = kl_type_f32(ctx);
  kl_block *b;
  make_func(ctx, m, "f", 2, f32, &b);
  kl_value *ab[] = { b->args[0], b->args[1] };
  kl_op *add = kl_op_create(ctx, "arith.addf", kl_loc_make(ctx, "t.kir", 2, 3), 2, ab, 1, &f32, 0, NULL, 0);
  kl_block_push_op(b, add);
  kl_value *r = kl_op_result(add, 0);
  kl_value *rr[] = { r, r };
  kl_op *mul = kl_op_create(ctx, "arith.mulf", KL_LOC_UNKNOWN, 2, rr, 1, &f32, 0, NULL, 0);
  kl_block_push_op(b, mul);
  kl_value *ret_v = kl_op_result(mul, 0);
  kl_block_push_op(b, kl_op_create(ctx, "func.return", KL_LOC_UNKNOWN, 1, &ret_v, 0, NULL, 0, NULL, 0));
  CHECK(kl_value_use_count(r) == 2);
  CHECK(kl_verify(m) == KL_OK);
  char *txt = kl_print_op(m, KL_PRINT_GENERIC);
  CHECK(strstr(txt, "\"arith.addf\"(%arg0, %arg1) : (f32, f32) -> f32") != NULL);
  free(txt);
  /* erase with uses fails with a diagnostic, module stays intact */
  CHECK(kl_op_erase(add) == KL_ERR);
  CHECK(diag_has(ctx, "t.kir:2:3: error: cannot erase 'arith.addf'"));
  /* RAUW then erase */
  kl_value_replace_all_uses(r, b->args[0]);
  CHECK(kl_value_use_count(r) == 0 && kl_value_use_count(b->args[0]) == 3);
  CHECK(kl_op_erase(add) == KL_OK);
  CHECK(kl_verify(m) == KL_OK);
  /* clone keeps structure */
  kl_op *m2 = kl_op_clone(m, NULL);
  char *t1 = kl_print_op(m, 0), *t2 = kl_print_op(m2, 0);
  CHECK(!strcmp(t1, t2));
  free(t1);
  free(t2);
  /* use before def is caught */
  kl_op_unlink(mul);
  kl_block_push_op(b, mul); /* now after the return */
  CHECK(kl_verify(m) == KL_ERR);
  char *d = kl_diag_take(ctx);
  CHECK(strstr(d, "before its definition") != NULL || strstr(d, "terminator") != NULL);
  free(d);
  /* walk counts */
  int n;
  kl_op **all = kl_collect_ops(m2, &n);
  CHECK(n == 4); /* module, func, mul, return */
  free(all);
  kl_ctx_destroy(ctx);
  printf("ops ok\n");
}

static void test_verifier_errors(void) {
  kl_ctx *ctx = kl_ctx_create();
  kl_op *m = kl_module_create(ctx, KL_LOC_UNKNOWN);
  kl_block *b;
  const kl_type *f32 = kl_type_f32(ctx), *i32 = kl_type_i32(ctx);
  make_func(ctx, m, "g", 2, f32, &b);
  kl_value *ab[] = { b->args[0], b->args[1] };
  kl_block_push_op(b, kl_op_create(ctx, "arith.addi", kl_loc_make(ctx, "v.kir", 4, 7), 2, ab, 1, &i32, 0, NULL, 0));
  kl_block_push_op(b, kl_op_create(ctx, "func.return", KL_LOC_UNKNOWN, 0, NULL, 0, NULL, 0, NULL, 0));
  CHECK(kl_verify(m) == KL_ERR);
  CHECK(diag_has(ctx, "v.kir:4:7: error: 'arith.addi'"));
  kl_ctx_destroy(ctx);
  printf("verifier ok\n");
}

int main(void) {
  test_interning();
  test_ops();
  test_verifier_errors();
  return check_summary("test_ir_core");
}
