/* test_shape_limits.c — the IR's shape limits (kl_shape_check, core/type.h) at their
 * exact boundaries, for any int64 input (2^62, INT64_MIN/MAX, products and offsets that
 * overflow int64), and the type constructors and the .kir parser applying the same
 * limits: a shape the constructors accept prints and re-parses to the same type. */
#include "core/type.h"
#include "core/shape.h"
#include "core/parse.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define BIG ((int64_t)1 << 62)

static bool ok(int rank, const int64_t *shape, const int64_t *strides) {
  return kl_shape_check(rank, shape, strides, NULL, 0);
}
/* Fails with a message containing `want`. */
static bool fails_with(int rank, const int64_t *shape, const int64_t *strides, const char *want) {
  char err[512] = "";
  bool r = kl_shape_check(rank, shape, strides, err, sizeof err);
  if (!r && !strstr(err, want)) fprintf(stderr, "message \"%s\" lacks \"%s\"\n", err, want);
  return !r && strstr(err, want);
}

static void test_sizes(void) {
  group_begin();
  CHECK(ok(0, NULL, NULL));
  CHECK(ok(1, (int64_t[]){ 0 }, NULL));
  CHECK(ok(1, (int64_t[]){ KL_MAX_DIM }, NULL));
  CHECK(fails_with(1, (int64_t[]){ KL_MAX_DIM + 1 }, NULL, "size 1099511627777 of dim 0"));
  CHECK(fails_with(1, (int64_t[]){ -1 }, NULL, "dimension out of range"));
  CHECK(fails_with(2, (int64_t[]){ 4, BIG }, NULL, "of dim 1 in shape [4,4611686018427387904]"));
  CHECK(fails_with(2, (int64_t[]){ BIG, 4 }, NULL, "of dim 0"));
  CHECK(fails_with(1, (int64_t[]){ INT64_MIN }, NULL, "dimension out of range"));
  CHECK(fails_with(1, (int64_t[]){ INT64_MAX }, NULL, "dimension out of range"));
  CHECK(ok(KL_MAX_RANK, (int64_t[KL_MAX_RANK]){ 1 }, NULL));
  CHECK(fails_with(KL_MAX_RANK + 1, (int64_t[KL_MAX_RANK + 1]){ 1 }, NULL, "rank 9 out of range (0 to 8)"));
  CHECK(fails_with(-1, NULL, NULL, "rank -1"));
  /* kl_shape holds what kl_shape_check accepts: kl_shape_init applies the same check */
  kl_shape s;
  char err[512] = "";
  CHECK(kl_shape_init(&s, KL_MAX_RANK, (int64_t[KL_MAX_RANK]){ 2, 1, 1, 1, 1, 1, 1, 3 }, "op", err, sizeof err) == 0 &&
        s.rank == KL_MAX_RANK && s.dim[7] == 3);
  CHECK(kl_shape_init(&s, KL_MAX_RANK + 1, (int64_t[KL_MAX_RANK + 1]){ 1 }, "op", err, sizeof err) == 1 &&
            !strcmp(err, "op: rank 9 out of range (0 to 8)"),
        "%s", err);
  CHECK(kl_shape_init(&s, 2, (int64_t[]){ 2, -3 }, NULL, err, sizeof err) == 1 &&
            strstr(err, "tensor: dimension out of range: negative size -3 of dim 1 in shape [2,-3]"),
        "%s", err);
  group_end("sizes and ranks");
}

static void test_elements(void) {
  group_begin();
  CHECK(ok(2, (int64_t[]){ KL_MAX_DIM, (int64_t)1 << 13 }, NULL)); /* exactly 2^53 */
  CHECK(fails_with(2, (int64_t[]){ KL_MAX_DIM, ((int64_t)1 << 13) + 1 }, NULL, "more than 2^53 elements"));
  CHECK(fails_with(2, (int64_t[]){ KL_MAX_DIM, KL_MAX_DIM }, NULL, "shape too large"));
  CHECK(fails_with(KL_MAX_RANK,
                   (int64_t[KL_MAX_RANK]){ KL_MAX_DIM, KL_MAX_DIM, KL_MAX_DIM, KL_MAX_DIM, KL_MAX_DIM, KL_MAX_DIM,
                                           KL_MAX_DIM, KL_MAX_DIM },
                   NULL, "shape too large"));
  /* zeros count as 1: a zero-element shape is still bounded, so row-major strides fit */
  CHECK(fails_with(3, (int64_t[]){ 0, KL_MAX_DIM, KL_MAX_DIM }, NULL, "shape too large"));
  CHECK(ok(3, (int64_t[]){ 0, KL_MAX_DIM, 1 << 13 }, NULL));
  group_end("element counts");
}

static void test_strides(void) {
  group_begin();
  CHECK(ok(2, (int64_t[]){ 2, 3 }, (int64_t[]){ 1, 2 }));
  CHECK(ok(2, (int64_t[]){ 2, 3 }, (int64_t[]){ 0, 0 }));      /* broadcast */
  CHECK(ok(1, (int64_t[]){ 2 }, (int64_t[]){ KL_MAX_NUMEL })); /* offset exactly 2^53 */
  CHECK(fails_with(1, (int64_t[]){ 2 }, (int64_t[]){ KL_MAX_NUMEL + 1 }, "stride 9007199254740993 of dim 0"));
  CHECK(fails_with(2, (int64_t[]){ 3, 2 }, (int64_t[]){ 1, -1 }, "stride -1 of dim 1"));
  CHECK(fails_with(2, (int64_t[]){ 3, 2 }, (int64_t[]){ INT64_MIN, 1 }, "stride -9223372036854775808"));
  CHECK(fails_with(2, (int64_t[]){ 3, 2 }, (int64_t[]){ KL_MAX_NUMEL, 1 }, "reach past 2^53 elements"));
  CHECK(fails_with(1, (int64_t[]){ KL_MAX_DIM }, (int64_t[]){ KL_MAX_NUMEL },
                   "reach past 2^53 elements"));                     /* (2^40-1)*2^53 overflows int64 */
  CHECK(ok(2, (int64_t[]){ 0, 4 }, (int64_t[]){ KL_MAX_NUMEL, 1 })); /* an empty dim adds no offset */
  group_end("strides and offsets");
}

static void test_types_and_parser(void) {
  group_begin();
  kl_ctx *ctx = kl_ctx_create();
  const kl_type *f32 = kl_type_f32(ctx);
  CHECK(!kl_type_tensor(ctx, f32, 2, (int64_t[]){ BIG, 4 }, NULL));
  CHECK(!kl_type_tensor(ctx, f32, 2, (int64_t[]){ 4, 4 }, (int64_t[]){ BIG, 1 }));
  CHECK(!kl_type_buffer(ctx, f32, 1, (int64_t[]){ KL_MAX_DIM + 1 }, NULL, KL_SPACE_GLOBAL));
  /* at the limits: the printed type re-parses to the same interned type */
  const kl_type *t = kl_type_tensor(ctx, f32, 2, (int64_t[]){ KL_MAX_DIM, 1 << 13 }, NULL);
  CHECK(t && kl_type_numel(t) == KL_MAX_NUMEL);
  CHECK(t && kl_parse_type(ctx, t->text, strlen(t->text), "<t>") == t);
  const kl_type *s = kl_type_tensor(ctx, f32, 2, (int64_t[]){ 2, 2 }, (int64_t[]){ KL_MAX_NUMEL - 1, 1 });
  CHECK(s && kl_parse_type(ctx, s->text, strlen(s->text), "<t>") == s);
  /* the parser rejects what the constructors reject, with the same messages */
  const char *bad[][2] = {
    { "tensor<1099511627776x8193xf32>", "more than 2^53 elements" },
    { "tensor<4x4xf32, strides=[-1,1]>", "stride -1 of dim 0" },
    { "buffer<4x4xf32, strides=[4611686018427387904,1]>", "stride 4611686018427387904 of dim 0" },
    { "tensor<1099511627776x2xf32, strides=[16384,1]>", "reach past 2^53 elements" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    free(kl_diag_take(ctx));
    CHECK(!kl_parse_type(ctx, bad[i][0], strlen(bad[i][0]), "<t>"), "%s parsed", bad[i][0]);
    char *d = kl_diag_take(ctx);
    CHECK(strstr(d, bad[i][1]) && strstr(d, "<t>:1:1"), "%s: %s", bad[i][0], d);
    free(d);
  }
  kl_ctx_destroy(ctx);
  group_end("type constructors and parser");
}

/* Row-major strides of a zero-element shape whose other sizes multiply past int64
 * (outside kl_shape_check's limits, but the stride helpers are total) saturate at INT64_MAX instead of
 * overflowing; core/shape's and core/type's helpers agree. */
static void test_row_major_saturates(void) {
  group_begin();
  int64_t sh[5] = { 0, KL_MAX_DIM, KL_MAX_DIM, KL_MAX_DIM, KL_MAX_DIM }, a[5], b[5], c[5];
  kl_strides_row_major(5, sh, a);
  kl_strides_from_perm(5, sh, (int[]){ 0, 1, 2, 3, 4 }, b);
  kl_row_major_strides(5, sh, c);
  for (int i = 0; i < 5; i++) {
    int64_t want = i == 4 ? 1 : i == 3 ? KL_MAX_DIM : INT64_MAX;
    CHECK(a[i] == want && b[i] == want && c[i] == want, "stride %d: %lld %lld %lld, want %lld", i, (long long)a[i],
          (long long)b[i], (long long)c[i], (long long)want);
  }
  group_end("row-major strides saturate");
}

int main(void) {
  test_sizes();
  test_elements();
  test_strides();
  test_types_and_parser();
  test_row_major_saturates();
  return check_summary("test_shape_limits");
}
