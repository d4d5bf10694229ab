/* test_parse.c — the .kir parser: round trips of many inputs (all types and attribute
 * kinds, nested regions, multi-result ops, block arguments, name hints, custom syntax,
 * unregistered ops, locations), the IR it builds, the hook API, and located errors
 * with exact line:col. */
#include "parse_test_util.h"
#include "core/dialect_builtin.h"

static kl_op *parse_str(kl_ctx *ctx, const char *s) { return kl_parse_module(ctx, s, strlen(s), "t.kir"); }

static void roundtrip(const char *what, const char *text) {
  kl_ctx *ctx = test_ctx();
  kl_op *m = parse_str(ctx, text);
  if (!m) {
    char *d = kl_diag_take(ctx);
    CHECK(m, "%s: parse failed: %s", what, d);
    free(d);
  } else {
    roundtrip_module(ctx, m, what);
  }
  kl_ctx_destroy(ctx);
}

/* The first diagnostic of parsing text must be "t.kir:LINE:COL: error: ..." and
 * contain msg. */
static void expect_error(const char *text, int line, int col, const char *msg) {
  kl_ctx *ctx = test_ctx();
  kl_op *m = parse_str(ctx, text);
  char *d = kl_diag_take(ctx);
  int l = 0, c = 0;
  CHECK(!m, "expected an error for: %s", text);
  CHECK(diag_located(d, "t.kir", &l, &c) && l == line && c == col && strstr(d, msg),
        "for input\n%s\nwanted t.kir:%d:%d: error: ...%s...\ngot: %s", text, line, col, msg, d);
  free(d);
  kl_ctx_destroy(ctx);
}

static const char *const roundtrip_inputs[][2] = {
  { "empty", "" },
  { "comment only", "// nothing here\n" },
  { "byte-order mark", "\xef\xbb\xbf\"t.a\"() : () -> ()\r\n\"t.b\"() : () -> ()\r\n" },
  { "empty module", "\"builtin.module\"() ({\n}) : () -> ()\n" },
  { "scalar types", "%0:10 = \"t.all\"() : () -> (i1, i8, i32, i64, index, f16, bf16, f32, f64, token)\n" },
  { "shaped types",
    "%0:9 = \"t.shapes\"() : () -> (tensor<2x3xf32>, tensor<f16>, tensor<1x4x7x7xf16, strides=[196,1,28,4]>,"
    " tensor<4x8xbf16, strides=[0,1]>, buffer<64x64xf32, lds>, buffer<8xf32, private>,"
    " buffer<4x4xf32, strides=[1,4]>, buffer<4x4xi8, strides=[1,4], lds>, vector<4xf16>)\n"
    "%1 = \"t.zero\"() : () -> tensor<0x5xi32>\n" },
  { "integer attrs",
    "\"t.a\"() {a = 0, b = -1, c = 9223372036854775807, d = -9223372036854775808, e = 1 : i1, f = 255 : i8,"
    " g = -128 : i8, h = 4294967295 : i32, i = -7 : index, j = 42 : i64} : () -> ()\n" },
  { "float attrs",
    "\"t.f\"() {a = 1.5, b = -0.0, c = 1e+20, d = 1.0000000000000001e-05, e = inf, f = -inf, g = nan,"
    " h = 0.1 : f32, i = 3 : f32, j = 2.5 : f16, k = -inf : bf16, l = nan : f64, m = 6.02214076e+23,"
    " n = 4.9406564584124654e-324, o = 1.7976931348623157e+308} : () -> ()\n" },
  { "string attrs",
    "\"t.s\"() {a = \"\", b = \"q\\\"uote\", c = \"back\\\\slash\", d = \"nl\\n tab\\t cr\\r\","
    " e = \"\\x00nul\\x01\\x7f\", f = \"caf\xc3\xa9 \xe2\x82\xac\", g = \"raw \xff bytes\"} : () -> ()\n" },
  { "other attrs",
    "\"t.o\"() {a = true, b = false, c, d = [], e = [1, [2, [3, \"x\"]], {k = 1}], f = {}, g = {z = 1, a = {b, c = "
    "[true]}},"
    " h = !f32, i = !tensor<2x3xf32, strides=[1,2]>, j = @sym, k = @\"quoted sym\", l = [unit, unit],"
    " \"quoted key\" = 1, \"0num\" = 2, m = #testpair<1, -2>, n = [#testpair<3, 4>]} : () -> ()\n" },
  { "multi-result",
    "%r:3 = \"t.three\"() : () -> (f32, i32, index)\n"
    "%s = \"t.use\"(%r#2, %r#0, %r#1, %r#0) : (index, f32, i32, f32) -> f32\n"
    "%u:2 = \"t.two\"(%s) : (f32) -> (f32, f32)\n" },
  { "name hints",
    "%x = \"t.a\"() : () -> f32\n%y_1 = \"t.b\"(%x) : (f32) -> f32\n%0 = \"t.c\"(%y_1) : (f32) -> f32\n"
    "%arg0 = \"t.d\"() : () -> f32\n%x.y = \"t.e\"(%arg0, %0) : (f32, f32) -> f32\n" },
  { "nested regions and blocks",
    "%c = \"t.c\"() : () -> index\n"
    "%0 = \"t.loop\"(%c) ({\n^bb0(%i: index, %acc: f32):\n  %1 = \"t.inner\"(%i) ({\n    \"t.leaf\"(%c, %acc) : "
    "(index, f32) -> ()\n"
    "  }, {\n  }, {\n  ^bb0:\n    \"t.x\"() : () -> ()\n  ^bb1(%z: i1):\n    \"t.y\"(%z) : (i1) -> ()\n  }) : (index) "
    "-> f32\n"
    "  \"t.yield\"(%1) : (f32) -> ()\n^bb1:\n  \"t.end\"() : () -> ()\n^bb2(%q: f32, %r: f32):\n  \"t.end\"(%q, %acc) "
    ": (f32, f32) -> ()\n"
    "}) : (index) -> f32\n" },
  { "unregistered ops",
    "%0 = \"my.op\"() {x = 1} : () -> f32\n%1 = my.bare(%0) : (f32) -> f32\n\"a b c!\"(%1) : (f32) -> ()\n" },
  { "custom syntax",
    "func.func @main(%a: f32, %b: f32, %x: tensor<4xf32>) {\n"
    "  %c = arith.constant 2.5 : f32\n  %i = arith.constant -3 : i32\n  %t = arith.constant true : i1\n"
    "  %v = arith.constant 1.0 : vector<4xf32>\n  %s = arith.constant {value = \"odd\"} : f32\n"
    "  %k = arith.constant 7 {tag} : index\n"
    "  %0 = arith.addf %a, %b : f32\n  %1 = arith.mulf %0, %c {fast} : f32\n  %2 = arith.subf %1, %a : f32\n"
    "  %3 = arith.divf %2, %b : f32\n  %4 = arith.maxf %3, %a : f32\n  %5 = arith.minf %4, %b : f32\n"
    "  %6 = arith.remf %5, %a : f32\n  %7 = arith.addi %i, %i : i32\n  %8 = arith.muli %7, %i : i32\n"
    "  %9 = arith.subi %8, %i : i32\n  %10 = arith.divsi %9, %i : i32\n  %11 = arith.remsi %10, %i : i32\n"
    "  %12 = arith.maxsi %11, %i : i32\n  %13 = arith.minsi %12, %i : i32\n  %14 = arith.andi %13, %i : i32\n"
    "  %15 = arith.ori %14, %i : i32\n  %16 = arith.xori %15, %i : i32\n"
    "  func.return %6, %16 : f32, i32\n}\n"
    "func.func @\"quoted name\"() attributes {kernel, n = 3} {\n  func.return\n}\n"
    "func.func @empty() {\n}\n" },
  { "custom syntax that does not fit (generic escape)",
    "func.func @f(%a: f32, %i: i32) {\n"
    "  func.return %a : f32\n  %0 = \"arith.addf\"(%a, %i) : (f32, i32) -> f32\n"
    "  %1:2 = \"arith.addf\"(%a, %a) : (f32, f32) -> (f32, f32)\n  %2 = \"arith.constant\"(%a) {value = 1} : (f32) -> "
    "f32\n"
    "  \"arith.constant\"() : () -> ()\n  %3 = \"func.return\"() : () -> f32\n"
    "  \"func.func\"() ({\n  }) {sym_name = 7} : () -> ()\n  \"func.func\"(%a) ({\n  ^bb0:\n  }) : (f32) -> ()\n"
    "  %4 = arith.constant generic() {value = 2 : i32} : () -> i32\n"
    "  func.return\n}\n"
    "func.func (%z: f32) attributes {sym_name = 3} {\n  func.return %z : f32\n}\n" },
  { "multi-block function",
    "func.func @mb(%a: f32) {\n^bb0(%a: f32):\n  \"t.br\"() : () -> ()\n^bb1(%b: i32):\n  func.return %a : f32\n}\n" },
  { "scf and mixed",
    "func.func @loop(%n: index, %init: f32) {\n  %c0 = \"t.c0\"() : () -> index\n  %c1 = \"t.c1\"() : () -> index\n"
    "  %r = \"scf.for\"(%c0, %n, %c1, %init) ({\n  ^bb0(%iv: index, %acc: f32):\n    %s = arith.addf %acc, %acc : f32\n"
    "    \"scf.yield\"(%s) : (f32) -> ()\n  }) : (index, index, index, f32) -> f32\n"
    "  %cond = arith.constant true : i1\n  %q = \"scf.if\"(%cond) ({\n    \"scf.yield\"(%r) : (f32) -> ()\n  }, {\n"
    "    \"scf.yield\"(%init) : (f32) -> ()\n  }) : (i1) -> f32\n  func.return %q : f32\n}\n" },
  { "locations",
    "\"t.a\"() : () -> () loc(\"other.lua\":12:0)\n%0 = \"t.b\"() : () -> f32 loc(\"x \\\"y\\\".kir\":3:4)\n"
    "%1 = arith.addf %0, %0 : f32 loc(\"z.kir\":1:1)\n" },
  { "explicit module with everything",
    "\"builtin.module\"() ({\n  func.func @k(%arg0: tensor<2x2xf32>) attributes {\"weird key\" = [@a, @b]} {\n"
    "    %0:2 = \"t.split\"(%arg0) : (tensor<2x2xf32>) -> (tensor<2xf32>, tensor<2xf32>)\n"
    "    func.return %0#1, %0#0 : tensor<2xf32>, tensor<2xf32>\n  }\n}) {mod_attr = 1} : () -> ()\n" },
  { "nested module",
    "\"builtin.module\"() ({\n  \"builtin.module\"() ({\n  }) : () -> ()\n}) : () -> ()\n\"t.x\"() : () -> ()\n" },
};

static void test_roundtrips(void) {
  for (size_t i = 0; i < sizeof roundtrip_inputs / sizeof *roundtrip_inputs; i++)
    roundtrip(roundtrip_inputs[i][0], roundtrip_inputs[i][1]);
  printf("round trips ok\n");
}

/* Same text printed twice must be byte-identical; a wrapped module prints as expected. */
static void test_exact_print(void) {
  kl_ctx *ctx = test_ctx();
  const char *in = "%x = \"t.a\"() {b = 2, a = 1.5 : f32} : () -> f32 // trailing comment\n"
                   "func.func @f(%arg0: f32) {\n  %0 = arith.addf %arg0, %arg0 : f32\n  func.return %0 : f32\n}\n";
  kl_op *m = parse_str(ctx, in);
  CHECK(m);
  if (m) {
    char *s = kl_print_op(m, 0);
    const char *want =
        "\"builtin.module\"() ({\n  %x = \"t.a\"() {a = 1.5 : f32, b = 2} : () -> f32\n"
        "  func.func @f(%arg0: f32) {\n    %0 = arith.addf %arg0, %arg0 : f32\n    func.return %0 : f32\n  }\n"
        "}) : () -> ()\n";
    CHECK(!strcmp(s, want), "got\n%s", s);
    free(s);
    s = kl_print_op(m, KL_PRINT_GENERIC);
    const char *gwant =
        "\"builtin.module\"() ({\n  %x = \"t.a\"() {a = 1.5 : f32, b = 2} : () -> f32\n"
        "  \"func.func\"() ({\n  ^bb0(%arg0: f32):\n    %0 = \"arith.addf\"(%arg0, %arg0) : (f32, f32) -> f32\n"
        "    \"func.return\"(%0) : (f32) -> ()\n  }) {sym_name = \"f\"} : () -> ()\n}) : () -> ()\n";
    CHECK(!strcmp(s, gwant), "got\n%s", s);
    free(s);
  }
  kl_ctx_destroy(ctx);
  printf("exact printing ok\n");
}

static kl_op *nth_op(kl_block *b, int n) {
  kl_op *o = b->first;
  while (o && n--) o = o->next;
  return o;
}

/* The IR the parser builds: ops, results, uses, block args, hints, locations, wrapping. */
static void test_structure(void) {
  kl_ctx *ctx = test_ctx();
  const char *in = "%a = \"t.a\"() : () -> f32\n"
                   "  %r:2 = \"t.two\"(%a, %a) : (f32, f32) -> (i32, f32)\n"
                   "%0 = \"t.reg\"(%r#1) ({\n"
                   "^bb0(%p: f32, %arg3: i32):\n"
                   "  \"t.use\"(%p, %r#0, %arg3) : (f32, i32, i32) -> ()\n"
                   "}) : (f32) -> index\n"
                   "\"t.loc\"() : () -> () loc(\"lua.lua\":7:0)\n";
  kl_op *m = parse_str(ctx, in);
  CHECK(m && !strcmp(m->name, "builtin.module") && m->nregions == 1);
  if (!m) {
    kl_ctx_destroy(ctx);
    return;
  }
  kl_block *body = kl_module_body(m);
  kl_op *a = nth_op(body, 0), *two = nth_op(body, 1), *reg = nth_op(body, 2), *lo = nth_op(body, 3);
  CHECK(a && two && reg && lo && !lo->next);
  CHECK(m->loc.line == 1 && m->loc.col == 1 && !strcmp(m->loc.file, "t.kir"));
  CHECK(a->loc.line == 1 && a->loc.col == 1 && !strcmp(a->loc.file, "t.kir"));
  CHECK(two->loc.line == 2 && two->loc.col == 3); /* column of the result name */
  CHECK(reg->loc.line == 3 && reg->loc.col == 1);
  CHECK(!strcmp(lo->loc.file, "lua.lua") && lo->loc.line == 7 && lo->loc.col == 0);
  CHECK(a->def == NULL && a->nresults == 1 && a->results[0].type == kl_type_f32(ctx));
  CHECK(!strcmp(a->results[0].name_hint, "a"));
  CHECK(two->nresults == 2 && two->results[0].type == kl_type_i32(ctx) && two->results[1].type == kl_type_f32(ctx));
  CHECK(two->nopnds == 2 && two->opnds[0].value == &a->results[0] && two->opnds[1].value == &a->results[0]);
  CHECK(kl_value_use_count(&a->results[0]) == 2);
  CHECK(!strcmp(two->results[0].name_hint, "r") && !two->results[1].name_hint);
  CHECK(reg->nopnds == 1 && reg->opnds[0].value == &two->results[1]);
  CHECK(reg->nresults == 1 && reg->results[0].type == kl_type_index(ctx) && !reg->results[0].name_hint);
  kl_block *rb = reg->regions[0].first;
  CHECK(rb && rb == reg->regions[0].last && rb->nargs == 2 && rb->args[0]->type == kl_type_f32(ctx));
  CHECK(!strcmp(rb->args[0]->name_hint, "p") && rb->args[1]->name_hint == NULL); /* %argN is generated */
  kl_op *use = rb ? rb->first : NULL;
  CHECK(use && use->nopnds == 3 && use->opnds[0].value == rb->args[0] && use->opnds[1].value == &two->results[0] &&
        use->opnds[2].value == rb->args[1]);
  CHECK(use && use->loc.line == 5 && use->loc.col == 3);
  CHECK(kl_op_parent_op(use) == reg && kl_op_parent_op(reg) == m);
  CHECK(sound(m) == 0);

  /* A lone builtin.module is returned as is; anything else is wrapped. */
  kl_op *m2 = parse_str(ctx, "// c\n  \"builtin.module\"() ({\n  \"t.x\"() : () -> ()\n}) {k} : () -> ()\n");
  CHECK(m2 && m2->loc.line == 2 && m2->loc.col == 3 && kl_op_attr(m2, "k") && !m2->block);
  CHECK(m2 && kl_module_body(m2)->first && !strcmp(kl_module_body(m2)->first->name, "t.x"));
  kl_op *m3 = parse_str(ctx, "\"builtin.module\"() ({\n}) : () -> ()\n\"builtin.module\"() ({\n}) : () -> ()\n");
  CHECK(m3 && m3->loc.line == 1 && nth_op(kl_module_body(m3), 1) && !nth_op(kl_module_body(m3), 2));
  kl_op *m4 = parse_str(ctx, "\"builtin.module\"() ({}) : () -> ()");
  CHECK(m4 && kl_module_body(m4) && !kl_module_body(m4)->first); /* body block added */
  kl_op *m5 = parse_str(ctx, "\"t.r\"() ({}) : () -> ()");
  CHECK(m5 && kl_module_body(m5)->first->regions[0].first == NULL); /* empty region: no blocks */
  kl_op *m9 = parse_str(ctx, "\"t.a\"() : () -> () loc(unknown)");
  CHECK(m9 && kl_module_body(m9)->first->loc.file == NULL && kl_module_body(m9)->first->loc.line == 0);
  kl_op *m10 = parse_str(ctx, "\xef\xbb\xbf  \"t.a\"() : () -> ()");
  CHECK(m10 && kl_module_body(m10)->first->loc.line == 1 && kl_module_body(m10)->first->loc.col == 3);
  kl_op *m6 = parse_str(ctx, "");
  CHECK(m6 && kl_module_body(m6) && !kl_module_body(m6)->first);

  /* Text need not be NUL-terminated: only len bytes are read. */
  const char full[] = "\"t.a\"() : () -> ()\"t.b\"() : () -> ()";
  kl_op *m7 = kl_parse_module(ctx, full, 18, "t.kir");
  CHECK(m7 && kl_module_body(m7)->first && !kl_module_body(m7)->first->next);

  /* Scoping: a name defined in a region is not visible after it and may be reused. */
  kl_op *m8 = parse_str(
      ctx,
      "\"t.a\"() ({\n  %x = \"t.v\"() : () -> f32\n}, {\n  %x = \"t.v\"() : () -> i32\n}) : () -> ()\n"
      "%x = \"t.v\"() : () -> index\n\"t.u\"(%x) : (index) -> ()\n");
  CHECK(m8 && sound(m8) == 0);
  free(kl_diag_take(ctx));
  kl_ctx_destroy(ctx);
  printf("structure ok\n");
}

/* Custom syntax builds the same IR as the generic form. */
static void test_custom_syntax(void) {
  kl_ctx *ctx = test_ctx();
  const char *in = "func.func @f(%a: f32, %n: tensor<2xi32>) attributes {kernel} {\n"
                   "  %c = arith.constant 3 : f32\n  %i = arith.constant 300 : i32\n  %s = arith.addf %a, %c : f32\n"
                   "  func.return %s, %i : f32, i32\n}\n";
  kl_op *m = parse_str(ctx, in);
  CHECK(m);
  if (m) {
    kl_op *f = kl_module_body(m)->first;
    CHECK(f && !strcmp(f->name, "func.func") && f->def && f->loc.line == 1 && f->loc.col == 1);
    CHECK(!strcmp(kl_op_attr_string(f, "sym_name"), "f") && kl_op_attr(f, "kernel") && f->nattrs == 2);
    kl_block *e = f->regions[0].first;
    CHECK(e && e->nargs == 2 && e->args[1]->type == kl_type_tensor(ctx, kl_type_i32(ctx), 1, (int64_t[]){ 2 }, NULL));
    kl_op *c = e->first, *i = c->next, *s = i->next, *r = s->next;
    CHECK(kl_op_attr(c, "value") == kl_attr_float_typed(ctx, 3.0, kl_type_f32(ctx)) &&
          c->results[0].type == kl_type_f32(ctx));
    CHECK(kl_op_attr(i, "value") == kl_attr_int_typed(ctx, 300, kl_type_i32(ctx)));
    CHECK(s->nopnds == 2 && s->opnds[0].value == e->args[0] && s->opnds[1].value == &c->results[0] &&
          s->loc.line == 4 && s->loc.col == 3);
    CHECK(r && !r->next && r->nopnds == 2 && r->opnds[1].value == &i->results[0] && r->nresults == 0);
    char *g = kl_print_op(m, KL_PRINT_GENERIC);
    kl_op *m2 = parse_str(ctx, g);
    char *a = kl_print_op(m, 0), *b = m2 ? kl_print_op(m2, 0) : NULL;
    CHECK(b && !strcmp(a, b));
    free(g);
    free(a);
    free(b);
  }
  kl_ctx_destroy(ctx);
  printf("custom syntax ok\n");
}

static void test_types_attrs(void) {
  kl_ctx *ctx = test_ctx();
  const kl_type *f32 = kl_type_f32(ctx), *f16 = kl_type_scalar(ctx, KL_TY_F16);
  struct {
    const char *text;
    const kl_type *want;
  } ts[] = {
    { "i1", kl_type_i1(ctx) },
    { "i8", kl_type_scalar(ctx, KL_TY_I8) },
    { "i32", kl_type_i32(ctx) },
    { "i64", kl_type_i64(ctx) },
    { "index", kl_type_index(ctx) },
    { "f16", f16 },
    { "bf16", kl_type_scalar(ctx, KL_TY_BF16) },
    { "f32", f32 },
    { "f64", kl_type_f64(ctx) },
    { "token", kl_type_token(ctx) },
    { "tensor<2x3xf32>", kl_type_tensor(ctx, f32, 2, (int64_t[]){ 2, 3 }, NULL) },
    { "tensor<2x3xf32, strides=[3,1]>", kl_type_tensor(ctx, f32, 2, (int64_t[]){ 2, 3 }, NULL) },
    { "tensor< 1x4x7x7xf16 , strides = [196, 1, 28, 4] >",
      kl_type_tensor(ctx, f16, 4, (int64_t[]){ 1, 4, 7, 7 }, (int64_t[]){ 196, 1, 28, 4 }) },
    { "buffer<64x64xf32, lds>", kl_type_buffer(ctx, f32, 2, (int64_t[]){ 64, 64 }, NULL, KL_SPACE_LDS) },
    { "buffer<8xf32, private>", kl_type_buffer(ctx, f32, 1, (int64_t[]){ 8 }, NULL, KL_SPACE_PRIVATE) },
    { "buffer<8xf32, global>", kl_type_buffer(ctx, f32, 1, (int64_t[]){ 8 }, NULL, KL_SPACE_GLOBAL) },
    { "buffer<2x2xf32, lds, strides=[1,2]>",
      kl_type_buffer(ctx, f32, 2, (int64_t[]){ 2, 2 }, (int64_t[]){ 1, 2 }, KL_SPACE_LDS) },
    { "vector<4xf16>", kl_type_vector(ctx, f16, 4) },
    { "tensor<f32>", kl_type_tensor(ctx, f32, 0, NULL, NULL) },
  };
  for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) {
    const kl_type *t = kl_parse_type(ctx, ts[i].text, strlen(ts[i].text), "ty");
    CHECK(t && t == ts[i].want, "type %s", ts[i].text);
  }
  struct {
    const char *text;
    const kl_attr *want;
  } as[] = {
    { "3", kl_attr_int(ctx, 3) },
    { "3 : i32", kl_attr_int_typed(ctx, 3, kl_type_i32(ctx)) },
    { "-2 : f16", kl_attr_float_typed(ctx, -2.0, f16) },
    { "1.25", kl_attr_float(ctx, 1.25) },
    { "1e3 : f32", kl_attr_float_typed(ctx, 1000.0, f32) },
    { "-inf", kl_attr_float(ctx, -1.0 / 0.0) },
    { "true", kl_attr_bool(ctx, true) },
    { "unit", kl_attr_unit(ctx) },
    { "\"a\\x00b\"", kl_attr_strn(ctx, "a\0b", 3) },
    { "@f", kl_attr_symref(ctx, "f") },
    { "@\"a b\"", kl_attr_symref(ctx, "a b") },
    { "!i8", kl_attr_type(ctx, kl_type_scalar(ctx, KL_TY_I8)) },
    { "[1, 2]", kl_attr_i64_array(ctx, 2, (int64_t[]){ 1, 2 }) },
    { "{b = 2, a}",
      kl_attr_dict(ctx, 2, (kl_named_attr[]){ { "a", kl_attr_unit(ctx) }, { "b", kl_attr_int(ctx, 2) } }) },
  };
  for (size_t i = 0; i < sizeof as / sizeof *as; i++) {
    const kl_attr *a = kl_parse_attr(ctx, as[i].text, strlen(as[i].text), "at");
    CHECK(a && a == as[i].want, "attr %s", as[i].text);
  }
  const kl_attr *ext = kl_parse_attr(ctx, "#testpair< 5 ,6>", 16, "at");
  CHECK(ext && ext->kind == KL_AT_EXT && ext->ext == &testpair_ext && ((const int64_t *)ext->payload)[1] == 6 &&
        !strcmp(ext->text, "#testpair<5, 6>"));
  const char *stext = "\"x\\ty\\\\\\\"\"";
  const kl_attr *s = kl_parse_attr(ctx, stext, strlen(stext), "at");
  CHECK(s && s->len == 5 && !memcmp(s->s, "x\ty\\\"", 5));
  /* errors of the standalone entry points are located too */
  CHECK(!kl_parse_type(ctx, "tensor<2xf32> x", 15, "ty"));
  char *d = kl_diag_take(ctx);
  CHECK(strstr(d, "ty:1:15: error: expected end of input after the type"), "%s", d);
  free(d);
  CHECK(!kl_parse_attr(ctx, "#testpair<1 2>", 14, "at"));
  d = kl_diag_take(ctx);
  CHECK(strstr(d, "at:1:13: error: testpair: expected ','"), "%s", d); /* located inside the body */
  free(d);
  CHECK(!kl_parse_attr(ctx, "[[[1]]", 6, "at"));
  d = kl_diag_take(ctx);
  CHECK(strstr(d, "at:1:7: error: expected ',' or ']'"), "%s", d);
  free(d);
  kl_ctx_destroy(ctx);
  printf("types and attributes ok\n");
}

/* ---- the hook API, with a custom op "test.custom $mode $n @sym [%v] {attrs} : t" ---- */
static void print_custom(kl_printer *pr, kl_op *op) {
  if (op->nresults != 1 || op->nopnds > 1 || op->nregions) {
    kl_print_generic_escape(pr, op);
    return;
  }
  int64_t n = 0;
  kl_op_attr_i64(op, "n", &n);
  const kl_attr *sym = kl_op_attr(op, "sym");
  kl_printer_printf(pr, " %s %lld ", kl_op_attr_string(op, "mode"), (long long)n);
  kl_printer_attr(pr, sym);
  if (op->nopnds) {
    kl_printer_puts(pr, " [");
    kl_printer_value(pr, op->opnds[0].value);
    kl_printer_puts(pr, "]");
  }
  static const char *const elided[] = { "mode", "n", "sym", NULL };
  kl_printer_attr_dict(pr, op, elided);
  kl_printer_puts(pr, " : ");
  kl_printer_type(pr, op->results[0].type);
}
static kl_status parse_custom(kl_parser *p, kl_op_state *st) {
  kl_ctx *ctx = kl_parser_ctx(p);
  const char *mode, *sym;
  int64_t n;
  const kl_type *t;
  if (kl_parser_ident(p, &mode) || kl_parser_int(p, &n) || kl_parser_symbol(p, &sym)) return KL_ERR;
  kl_op_state_add_attr(p, st, "mode", kl_attr_str(ctx, mode));
  kl_op_state_add_attr(p, st, "n", kl_attr_int(ctx, n));
  kl_op_state_add_attr(p, st, "sym", kl_attr_symref(ctx, sym));
  if (kl_parser_accept(p, "[")) {
    kl_value *v;
    if (kl_parser_operand(p, &v) || kl_parser_expect(p, "]")) return KL_ERR;
    kl_op_state_add_operand(p, st, v);
  }
  if (kl_parser_attr_dict(p, st) || kl_parser_expect(p, ":") || kl_parser_type(p, &t)) return KL_ERR;
  if (t == kl_type_token(ctx)) return kl_parser_error(p, "test.custom cannot make a token");
  kl_op_state_add_result_type(p, st, t);
  return KL_OK;
}
static const kl_opdef custom_def = { .name = "test.custom",
                                     .max_operands = 1,
                                     .min_results = 1,
                                     .max_results = 1,
                                     .print = print_custom,
                                     .parse = parse_custom };

static void test_hooks(void) {
  kl_ctx *ctx = test_ctx();
  kl_register_op(ctx, &custom_def);
  const char *in = "%a = test.custom fast 12 @g : f32\n%b = test.custom slow -1 @\"h i\" [%a] {x = 2} : i32\n"
                   "%c = test.custom generic(%a, %b) : (f32, i32) -> f32\n";
  kl_op *m = parse_str(ctx, in);
  CHECK(m);
  if (m) {
    kl_op *a = kl_module_body(m)->first, *b = a->next;
    CHECK(!strcmp(kl_op_attr_string(a, "mode"), "fast") && kl_op_attr(a, "sym") == kl_attr_symref(ctx, "g"));
    CHECK(b->nopnds == 1 && b->opnds[0].value == &a->results[0] && kl_op_attr(b, "x") &&
          b->results[0].type == kl_type_i32(ctx));
    CHECK(b->next && b->next->nopnds == 2);
    roundtrip_module(ctx, m, "hook op");
  }
  kl_ctx_destroy(ctx);
  struct {
    const char *text;
    int line, col;
    const char *msg;
  } errs[] = {
    { "%a = test.custom 1 2 @g : f32", 1, 18, "expected an identifier, got '1'" },
    { "%a = test.custom m x @g : f32", 1, 20, "expected an integer, got 'x'" },
    { "%a = test.custom m 1 g : f32", 1, 22, "expected a symbol (@name), got 'g'" },
    { "%a = test.custom m 1 @g [%a : f32", 1, 26, "use of undefined value '%a'" },
    { "%z = \"t.z\"() : () -> f32\n%a = test.custom m 1 @g [%z : f32", 2, 29, "expected ']', got ':'" },
    { "%a = test.custom m 1 @g : token", 1, 32, "test.custom cannot make a token" },
    { "%a = test.custom m 1 @g : f32 : f32", 1, 31, "expected an operation, got ':'" },
  };
  for (size_t i = 0; i < sizeof errs / sizeof *errs; i++) {
    kl_ctx *c2 = test_ctx();
    kl_register_op(c2, &custom_def);
    kl_op *bad = kl_parse_module(c2, errs[i].text, strlen(errs[i].text), "t.kir");
    char *d = kl_diag_take(c2);
    int l = 0, col = 0;
    CHECK(!bad && diag_located(d, "t.kir", &l, &col) && l == errs[i].line && col == errs[i].col &&
              strstr(d, errs[i].msg),
          "hook error %zu: %s", i, d);
    CHECK(!strchr(d, '\n') || !strchr(strchr(d, '\n') + 1, '\n'), "one diagnostic only: %s", d);
    free(d);
    kl_ctx_destroy(c2);
  }
  printf("hook API ok\n");
}

static void test_errors(void) {
  /* located errors: exact line:col of the offending token */
  expect_error("%0 = \"t.a\"() : () -> f32\n%0 = \"t.b\"() : () -> f32\n", 2, 1, "redefinition of value '%0'");
  expect_error("\"t.a\"(%nope) : (f32) -> ()", 1, 7, "use of undefined value '%nope'");
  expect_error("%a = \"t.a\"(%b) : (f32) -> f32\n%b = \"t.b\"() : () -> f32", 1, 12, "use of undefined value '%b'");
  expect_error("\"t.r\"() ({\n  %in = \"t.v\"() : () -> f32\n}) : () -> ()\n\"t.u\"(%in) : (f32) -> ()", 4, 7,
               "use of undefined value '%in'");
  expect_error("%a = \"t.a\"(%a) : (f32) -> f32", 1, 12, "use of undefined value '%a'");
  expect_error("%r:2 = \"t.a\"() : () -> (f32, f32)\n\"t.u\"(%r#2) : (f32) -> ()", 2, 7,
               "result #2 of '%r' does not exist (it has 2 results)");
  expect_error("%r:2 = \"t.a\"() : () -> (f32, f32)\n\"t.u\"(%r) : (f32) -> ()", 2, 7, "'%r' names 2 results");
  expect_error("%r = \"t.a\"() : () -> f32\n\"t.u\"(%r#1) : (f32) -> ()", 2, 7,
               "result #1 of '%r' does not exist (it has 1 result)");
  expect_error("%a = \"t.a\"() : () -> f32\n\"t.u\"(%a, %a) : (f32) -> ()", 2, 17,
               "signature lists 1 operand type but the op has 2 operands");
  expect_error("%a = \"t.a\"() : () -> f32\n\"t.u\"(%a) : (f32, f32) -> ()", 2, 19, "too many operand types");
  expect_error("%a = \"t.a\"() : () -> f32\n\"t.u\"(%a) : (i32) -> ()", 2, 14,
               "operand #0 has type f32, but the signature says i32");
  expect_error("%r:2 = \"t.a\"() : () -> f32", 1, 1, "'t.a' has 1 result but 2 result names are given");
  expect_error("\"t.a\"() : () -> (f32, f32)", 1, 1, "'t.a' has 2 results but 0 result names are given");
  expect_error("%r = \"t.a\"() : () -> ()", 1, 1, "'t.a' has 0 results but 1 result name is given");
  expect_error("\"t.a\"() : () -> f33", 1, 17, "unknown type 'f33'");
  expect_error("\"t.a\"() : () -> tensor<2x3>", 1, 27, "expected 'x' after a dimension");
  expect_error("\"t.a\"() : () -> tensor<99999999999999999999xf32>", 1, 24, "dimension out of range");
  expect_error("\"t.a\"() {x = 99999999999999999999} : () -> ()", 1, 14, "integer too large");
  expect_error("\"t.a\"() {x = -9223372036854775809} : () -> ()", 1, 14, "integer too large");
  expect_error("\"t.a\"() {x = 256 : i8} : () -> ()", 1, 14, "integer 256 out of range for type i8");
  expect_error("\"t.a\"() {x = 2 : i1} : () -> ()", 1, 14, "integer 2 out of range for type i1");
  expect_error("\"t.a\"() {x = 1.5 : i32} : () -> ()", 1, 20, "a floating-point literal cannot have type i32");
  expect_error("\"t.a\"() {x = 1e400} : () -> ()", 1, 14, "floating-point literal out of range");
  expect_error("\"t.a\"() {x = \"abc} : () -> ()", 1, 14, "unterminated string");
  expect_error("\"t.a\"() {x = \"a\\qb\"} : () -> ()", 1, 16, "invalid escape sequence '\\q'");
  expect_error("\"t.a\"() {x = \"a\\x4g\"} : () -> ()", 1, 16, "invalid escape sequence '\\x'");
  expect_error("\"t.a\"() {x = 1, x = 2} : () -> ()", 1, 17, "duplicate attribute 'x'");
  expect_error("\"t.a\"() {x = #nosuch<1>} : () -> ()", 1, 14, "unknown attribute kind '#nosuch'");
  expect_error("\"t.a\"() {x = #testpair<1, 2} : () -> ()", 1, 23, "unterminated '<...>'");
  expect_error("\"t.a\"() {x = #testpair<1; 2>} : () -> ()", 1, 25, "testpair: expected ','");
  expect_error("\"t.a\"() : () -> ()\n  \xff", 2, 3, "invalid UTF-8 byte 0xff");
  expect_error("// caf\xc3\n\"t.a\"() : () -> ()", 1, 7, "invalid UTF-8 byte 0xc3");
  expect_error("\"t.a\"() :\x01 () -> ()", 1, 10, "invalid control character 0x01");
  expect_error("\"t.a\"() : () \xc3\xa9-> ()", 1, 14, "unexpected character '\xc3\xa9'");
  expect_error("\"t.a\"() ({\n^bb1:\n^bb1:\n}) : () -> ()", 3, 1, "redefinition of block '^bb1'");
  expect_error("\"t.a\"(^bb1) : () -> ()", 1, 7, "expected a value (%name), got '^bb1'");
  expect_error("\"t.a\"() ({\n  \"t.b\"() : () -> ()\n", 3, 1, "expected '}' to close the region opened at 1:10");
  expect_error("%0 = ", 1, 6, "expected an operation, got end of input");
  expect_error("}", 1, 1, "expected an operation, got '}'");
  expect_error("foo()", 1, 1, "expected an operation, got 'foo'");
  expect_error("\"\"() : () -> ()", 1, 1, "empty op name");
  expect_error("\"a\\x00b\"() : () -> ()", 1, 1, "an op name cannot contain a NUL byte");
  expect_error("\"t.a\"() : () -> () loc(\"f\":1)", 1, 29, "expected ':', got ')'");
  expect_error("%0:0 = \"t.a\"() : () -> ()", 1, 4, "result count must be between 1 and 65536");
  expect_error("%0#1 = \"t.a\"() : () -> f32", 1, 1, "a result name cannot have a '#N' suffix");
  expect_error("\"t.a\"() : () f32", 1, 14, "expected '->', got 'f32'");
  expect_error("\"t.a\"() {x = 12abc} : () -> ()", 1, 14, "invalid character 'a' after number");
  expect_error("\"t.a\"() : () -> (f32,)", 1, 22, "expected a type, got ')'");
  expect_error("%a = \"t.a\"() : () -> f32\n\"t.b\"(%a) : (f32,) -> ()", 2, 18, "expected a type, got ')'");
  expect_error("\"t.a\"(,) : () -> ()", 1, 7, "expected a value (%name), got ','");
  expect_error("\"t.a\"() {x = [1,]} : () -> ()", 1, 17, "expected an attribute value");
  /* custom syntax errors */
  expect_error("func.func @f(%a: f32) {\n  func.return %a : i32\n}", 2, 20,
               "operand #0 of 'func.return' has type f32, not i32");
  expect_error("func.func @f(%a: f32, %b: i32) {\n  %0 = arith.addf %a, %b : f32\n}", 2, 28,
               "operand #1 of 'arith.addf' has type i32, not f32");
  expect_error("%c = arith.constant 1.5 : i32", 1, 21, "a floating-point constant cannot have type i32");
  expect_error("%c = arith.constant 300 : i8", 1, 21, "integer 300 out of range for type i8");
  expect_error("%c = arith.constant : i8", 1, 21, "expected an attribute value");
  expect_error("%c = arith.constant 1 {value = 2} : i8", 1, 21, "has a value and a 'value' attribute");
  expect_error("func.func @f(%a f32) {\n}", 1, 17, "expected ':', got 'f32'");
  expect_error("func.func @f(%a: f32, %a: f32) {\n}", 1, 23, "redefinition of value '%a'");
  expect_error("func.func @f(%a: f32) {\n^bb0(%b: f32):\n}", 2, 6,
               "block argument '%b' does not match the entry block's signature");
  expect_error("func.func @f(%a: f32) {\n^bb0(%a: i32):\n}", 2, 10,
               "type i32 of '%a' does not match the signature type f32");
  expect_error("func.func @f(%a: f32) {\n^bb0:\n}", 2, 1,
               "entry block label declares 0 arguments but the signature has 1");
  expect_error("func.func @f(%a: f32) attributes {sym_name = \"g\"} {\n}", 1, 35, "duplicate attribute 'sym_name'");
  expect_error("func.func @f() {\n}\n\"t.u\"(%a) : (f32) -> ()", 3, 7, "use of undefined value '%a'");
  expect_error("func.func @f(%a: f32) {\n}\n\"t.u\"(%a) : (f32) -> ()", 3, 7, "use of undefined value '%a'");
  expect_error("func.return %x", 1, 13, "use of undefined value '%x'");
  expect_error("%a = \"t.a\"() : () -> f32\nfunc.return %a", 2, 15, "expected ':', got end of input");
  printf("located errors ok\n");
}

/* Deep but legal nesting parses; past the limit it is a clean error. */
static void test_limits(void) {
  kl_sb sb = { 0 };
  for (int i = 0; i < 200; i++) kl_sb_puts(&sb, "\"t.n\"() ({\n");
  for (int i = 0; i < 200; i++) kl_sb_puts(&sb, "}) : () -> ()\n");
  roundtrip("200 nested regions", kl_sb_str(&sb));
  kl_sb_free(&sb);
  for (int i = 0; i < 255; i++) kl_sb_puts(&sb, "[");
  for (int i = 0; i < 255; i++) kl_sb_puts(&sb, "]");
  kl_ctx *ctx = test_ctx();
  CHECK(kl_parse_attr(ctx, sb.buf, sb.len, "a"));
  kl_sb_free(&sb);
  for (int i = 0; i < 257; i++) kl_sb_puts(&sb, "[");
  CHECK(!kl_parse_attr(ctx, sb.buf, sb.len, "a"));
  char *d = kl_diag_take(ctx);
  CHECK(strstr(d, "a:1:257: error: attributes nested too deeply"), "%s", d);
  free(d);
  kl_sb_free(&sb);
  kl_ctx_destroy(ctx);
  expect_error("\"t.a\"() : () -> tensor<1099511627776x1099511627776xf32>", 1, 17, "shape too large");
  expect_error("\"t.a\"() : () -> tensor<1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1xf32>", 1, 40,
               "too many dimensions (the limit is 8)");
  expect_error("\"t.a\"() : () -> tensor<1x1x1x1x1x1x1x1x1xf32>", 1, 40,
               "too many dimensions (the limit is 8)"); /* rank 9 */
  expect_error("\"t.a\"() : () -> vector<65537xf32>", 1, 17,
               "a vector type needs one dimension of 1 to 65536 elements");
  expect_error("\"t.a\"() : () -> vector<0xf32>", 1, 17, "a vector type needs one dimension");
  expect_error("\"t.a\"() : () -> tensor<2x2xf32, strides=[1]>", 1, 41, "1 strides given for a rank-2 type");
  expect_error("\"t.a\"() : () -> tensor<2xf32, lds>", 1, 31, "expected 'strides=[...]'");
  expect_error("\"t.a\"() : () -> tensor<2xtoken>", 1, 26, "expected an element type");
  printf("limits ok\n");
}

int main(void) {
  test_roundtrips();
  test_exact_print();
  test_structure();
  test_custom_syntax();
  test_types_attrs();
  test_hooks();
  test_errors();
  test_limits();
  return check_summary("test_parse");
}
