/* test_op_hooks.c — op behaviour lives on the op definitions (core/ir.h hooks and data):
 *  - completeness: every registered graph-level op has an infer rule and an eval hook,
 *    and every op legal at the loop level a lower_llvm hook, except the ones that by
 *    design have none (listed below with the reason); the checker reports a removed hook;
 *  - the graph-op data agrees with the op (scalar codes, view / kernel kinds, host-plan
 *    traits);
 *  - an op without a hook is a located error, not a crash; user-registered ops work
 *    once they have hooks; hooks attached by a user win over the builtin ones and
 *    survive re-registering the op; attaching to an unknown op is an error.
 * Links the whole library (passes, runtime) through kiln_lua. */
#include "core/ir.h"
#include "core/dialect_graph.h"
#include "core/parse.h"
#include "core/scalar_ops.h"
#include "passes/lower_to_llvm.h"
#include "runtime/graph_eval.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ctx_test_util.h"
#include "ir_test_util.h"

static bool in_list(const char *name, const char *const *list) {
  for (int i = 0; list[i]; i++)
    if (!strcmp(name, list[i])) return true;
  return false;
}
static bool graph_level(const kl_opdef *d) { return d->levels & KL_LEVEL_GRAPH; }
static bool loop_level(const kl_opdef *d) { return d->levels == 0 || (d->levels & KL_LEVEL_LOOP); }

/* By design without: an infer rule, the ops whose result type is given (a param's or
 * constant's type is part of the op; a launch's results are its callee's); an eval hook,
 * graph.param (the evaluator binds it to an input) and graph.launch (a host-plan step
 * after graph-partition: programs run kernels, the reference evaluator runs graphs); a
 * lower_llvm hook, the containers builtin.module and func.func (kl_lower_to_llvm lowers
 * kernels as functions) and func.call (kernels make no calls). */
static const char *const no_infer[] = { "graph.param", "graph.constant", "graph.launch", NULL };
static const char *const no_eval[] = { "graph.param", "graph.launch", NULL };
static const char *const no_lowering[] = { "builtin.module", "func.func", "func.call", NULL };

/* The ops of ctx missing a hook or rule they should have, or having one their exception
 * says they do not, appended to out ("what:op" lines). Returns their count. */
static int incomplete(kl_ctx *ctx, char *out, size_t n) {
  int bad = 0;
  out[0] = 0;
  for (int i = 0; i < kl_opdef_count(ctx); i++) {
    const kl_opdef *d = kl_opdef_at(ctx, i);
    char line[160] = "";
    if (graph_level(d) && !d->infer != in_list(d->name, no_infer))
      snprintf(line, sizeof line, "infer:%s ", d->name);
    else if (graph_level(d) && !kl_opdef_hook(ctx, d, KL_HOOK_EVAL) != in_list(d->name, no_eval))
      snprintf(line, sizeof line, "eval:%s ", d->name);
    else if (loop_level(d) && !kl_opdef_hook(ctx, d, KL_HOOK_LOWER_LLVM) != in_list(d->name, no_lowering))
      snprintf(line, sizeof line, "lower_llvm:%s ", d->name);
    if (line[0]) {
      bad++;
      strncat(out, line, n - strlen(out) - 1);
    }
  }
  return bad;
}

static void test_completeness(void) {
  group_begin();
  kl_ctx *ctx = kl_test_ctx(); /* the passes bring the lowering hooks */
  kl_graph_eval_register(ctx); /* the evaluator its eval hooks (kl_graph_eval does it too) */
  char miss[2048];
  int ngraph = 0, nloop = 0;
  for (int i = 0; i < kl_opdef_count(ctx); i++) {
    ngraph += graph_level(kl_opdef_at(ctx, i));
    nloop += loop_level(kl_opdef_at(ctx, i));
  }
  CHECK(ngraph == 40 && nloop > 50, "%d graph ops, %d loop-level ops", ngraph, nloop);
  CHECK(incomplete(ctx, miss, sizeof miss) == 0, "%s", miss);
  /* the checker sees a removed hook (and a rule that should not be there) */
  CHECK(kl_opdef_attach(ctx, KL_HOOK_EVAL, "graph.add", NULL) == KL_OK);
  CHECK(kl_opdef_attach(ctx, KL_HOOK_LOWER_LLVM, "math.exp", NULL) == KL_OK);
  CHECK(kl_opdef_attach(ctx, KL_HOOK_EVAL, "graph.launch", (kl_hook_fn)test_completeness) == KL_OK);
  CHECK(incomplete(ctx, miss, sizeof miss) == 3 &&
            !strcmp(miss, "lower_llvm:math.exp eval:graph.add eval:graph.launch "),
        "%s", miss);
  kl_ctx_destroy(ctx);
  group_end("every graph op has infer + eval, every loop-level op lower_llvm");
}

/* The data on the graph op definitions says what their names say. */
static void test_graph_data(void) {
  group_begin();
  kl_ctx *ctx = kl_ctx_create();
  static const char *const plan[] = { "graph.param", "graph.constant", "graph.launch", NULL };
  static const char *const plan_in[] = { "graph.param", "graph.constant", NULL };
  static const struct {
    const char *op;
    int kind;
  } kernels[] = { { "graph.conv", KL_KERNEL_CONV },         { "graph.dot", KL_KERNEL_DOT },
                  { "graph.softmax", KL_KERNEL_SOFTMAX },   { "graph.concat", KL_KERNEL_CONCAT },
                  { "graph.reduce_sum", KL_KERNEL_REDUCE }, { "graph.reduce_max", KL_KERNEL_REDUCE },
                  { "graph.reduce_mean", KL_KERNEL_REDUCE } };
  static const struct {
    const char *op;
    int kind;
  } views[] = { { "graph.broadcast", KL_VIEWOP_BROADCAST },
                { "graph.transpose", KL_VIEWOP_TRANSPOSE },
                { "graph.reshape", KL_VIEWOP_RESHAPE },
                { "graph.slice", KL_VIEWOP_SLICE } };
  for (int i = 0; i < kl_opdef_count(ctx); i++) {
    const kl_opdef *d = kl_opdef_at(ctx, i);
    const char *sn = strchr(d->name, '.') + 1;
    check_note = d->name;
    CHECK(!!(d->traits & KL_TRAIT_HOST_PLAN) == in_list(d->name, plan));
    CHECK(!!(d->traits & KL_TRAIT_PLAN_INPUT) == in_list(d->name, plan_in));
    int kind = KL_KERNEL_NONE, view = KL_VIEWOP_NONE;
    for (size_t k = 0; k < sizeof kernels / sizeof *kernels; k++)
      if (!strcmp(d->name, kernels[k].op)) kind = kernels[k].kind;
    for (size_t k = 0; k < sizeof views / sizeof *views; k++)
      if (!strcmp(d->name, views[k].op)) view = views[k].kind;
    CHECK(d->kernel == kind, "kernel %d", d->kernel);
    CHECK(d->view == view && (view != KL_VIEWOP_NONE) == (graph_level(d) && (d->traits & KL_TRAIT_VIEW)), "view %d",
          d->view);
    /* scalar forms: the codes name the op */
    bool ew = d->traits & KL_TRAIT_ELEMENTWISE;
    switch (d->scalar) {
      case KL_SCALAR_BINARY: CHECK(ew && !strcmp(kl_binop_name((kl_binop)d->scalar_code), sn)); break;
      case KL_SCALAR_UNARY: CHECK(ew && !strcmp(kl_unop_name((kl_unop)d->scalar_code), sn)); break;
      case KL_SCALAR_REDUCE:
        CHECK(!ew && d->kernel == KL_KERNEL_REDUCE && !strcmp(kl_reduce_name((kl_reduce_op)d->scalar_code), sn));
        break;
      case KL_SCALAR_CLIP: CHECK(ew && !strcmp(sn, "clip")); break;
      case KL_SCALAR_WHERE: CHECK(ew && !strcmp(sn, "where")); break;
      case KL_SCALAR_CONVERT: CHECK(ew && !strcmp(sn, "convert")); break;
      default:
        CHECK(d->scalar == KL_SCALAR_NONE && !ew && d->kernel != KL_KERNEL_REDUCE, "scalar %d", d->scalar);
        break;
    }
  }
  check_note = NULL;
  kl_ctx_destroy(ctx);
  group_end("graph op data (scalar codes, kernel / view kinds, host-plan traits)");
}

/* ---- evaluation through hooks ---- */
static const kl_type *twice_infer(kl_ctx *ctx, const char *name, kl_loc loc, int n, const kl_type *const *ts, int na,
                                  const kl_named_attr *attrs, const kl_type *re) {
  return n == 1 ? ts[0] : NULL;
}
static const kl_opdef twice_def = { .name = "test.twice",
                                    .traits = KL_TRAIT_PURE,
                                    .levels = KL_LEVEL_GRAPH,
                                    .min_operands = 1,
                                    .max_operands = 1,
                                    .min_results = 1,
                                    .max_results = 1,
                                    .infer = twice_infer,
                                    .summary = "2x (a user op)" };
static int twice_eval(kl_op *op, kl_tensor *const *in, kl_tensor **out, char *err, size_t errlen) {
  for (int64_t i = 0; i < kl_tensor_numel(in[0]); i++) kl_tensor_set_flat(*out, i, 2 * kl_tensor_get_flat(in[0], i));
  return 0;
}
static int add_is_sub(kl_op *op, kl_tensor *const *in, kl_tensor **out, char *err, size_t errlen) {
  for (int64_t i = 0; i < kl_tensor_numel(in[0]); i++)
    kl_tensor_set_flat(*out, i, kl_tensor_get_flat(in[0], i) - kl_tensor_get_flat(in[1], i));
  return 0;
}

/* g(x) = op(x) (or op(x, x)) for x = [1, 2, 3, 4]; out[0] of the result, or NAN with the
 * evaluator's message in err. */
static double eval1(kl_ctx *ctx, const char *opname, int arity, char *err, size_t errlen) {
  const kl_type *f32 = kl_type_f32(ctx);
  int64_t shape[] = { 4 };
  const kl_type *tt = kl_type_tensor(ctx, f32, 1, shape, NULL);
  kl_op *g = kl_graph_create(ctx, NULL, "g", KL_LOC_UNKNOWN);
  kl_named_attr a = { "name", kl_attr_str(ctx, "x") };
  kl_op *x = kl_graph_build(g, "param", KL_LOC_UNKNOWN, 0, NULL, 1, &a, tt);
  kl_value *xs[] = { kl_op_result(x, 0), kl_op_result(x, 0) };
  kl_loc loc = kl_loc_make(ctx, "hooks.lua", 7, 0);
  kl_op *y;
  if (!strncmp(opname, "graph.", 6))
    y = kl_graph_build(g, opname, loc, arity, xs, 0, NULL, NULL);
  else {
    y = kl_op_create(ctx, opname, loc, arity, xs, 1, &tt, 0, NULL, 0);
    kl_op_insert_before(kl_graph_return(g), y);
  }
  kl_value *r = kl_op_result(y, 0);
  kl_graph_set_outputs(g, 1, &r, KL_LOC_UNKNOWN);
  double vals[] = { 1, 2, 3, 4 }, got = NAN;
  kl_tensor *t = kl_tensor_from_f64(kl_dtype_of_type(f32), 1, shape, NULL, vals, err, errlen);
  kl_named_tensor in = { "x", t };
  int nout;
  kl_tensor **outs;
  if (kl_graph_eval(g, 1, &in, &nout, &outs, err, errlen) == KL_OK) {
    got = kl_tensor_get_flat(outs[0], 3);
    for (int i = 0; i < nout; i++) kl_tensor_release(outs[i]);
    free(outs);
  }
  kl_tensor_release(t);
  return got;
}

static void test_eval_hooks(void) {
  group_begin();
  char err[512];
  kl_ctx *ctx = kl_ctx_create();
  CHECK(eval1(ctx, "graph.relu", 1, err, sizeof err) == 4);
  CHECK(eval1(ctx, "graph.mul", 2, err, sizeof err) == 16);
  /* an op without an eval hook: an error naming it at its location */
  CHECK(kl_opdef_attach(ctx, KL_HOOK_EVAL, "graph.relu", NULL) == KL_OK);
  CHECK(isnan(eval1(ctx, "graph.relu", 1, err, sizeof err)));
  CHECK(!strcmp(err, "hooks.lua:7: error: graph.relu: no reference kernel for 'graph.relu'"), "%s", err);
  /* a user op: an error until it has a hook, then evaluated through it */
  kl_register_op(ctx, &twice_def);
  CHECK(isnan(eval1(ctx, "test.twice", 1, err, sizeof err)));
  CHECK(!strcmp(err, "hooks.lua:7: error: test.twice: no reference kernel for 'test.twice'"), "%s", err);
  CHECK(kl_eval_attach(ctx, "test.twice", twice_eval) == KL_OK);
  CHECK(eval1(ctx, "test.twice", 1, err, sizeof err) == 8, "%s", err);
  /* re-registering an op keeps its hooks */
  kl_register_op(ctx, &twice_def);
  CHECK(eval1(ctx, "test.twice", 1, err, sizeof err) == 8, "%s", err);
  /* attaching to an op nobody registered: a diagnostic, nothing attached */
  CHECK(kl_eval_attach(ctx, "test.nothing", twice_eval) == KL_ERR);
  CHECK(diag_is(ctx, "<unknown>: error: cannot attach a hook to 'test.nothing': no op of that name is registered\n"));
  kl_ctx_destroy(ctx);
  /* a hook attached before the evaluator's first use wins over the builtin one */
  ctx = kl_ctx_create();
  CHECK(kl_eval_attach(ctx, "graph.add", add_is_sub) == KL_OK);
  CHECK(eval1(ctx, "graph.add", 2, err, sizeof err) == 0);
  CHECK(eval1(ctx, "graph.sub", 2, err, sizeof err) == 0 && eval1(ctx, "graph.mul", 2, err, sizeof err) == 16);
  kl_ctx_destroy(ctx);
  group_end("evaluation through eval hooks");
}

/* ---- lowering through hooks ---- */
static bool lower_twice(kl_llvm_lowering *L, kl_op *op) {
  LLVMValueRef x = kl_llvm_value(L, op->opnds[0].value);
  if (!x) return kl_llvm_fail(L, op, "operand not lowered");
  kl_llvm_set_value(L, &op->results[0], LLVMBuildFAdd(kl_llvm_builder(L), x, x, "twice"));
  return true;
}
static const kl_opdef twice_loop_def = { .name = "test.twice_loop",
                                         .traits = KL_TRAIT_PURE,
                                         .levels = KL_LEVEL_LOOP,
                                         .min_operands = 1,
                                         .max_operands = 1,
                                         .min_results = 1,
                                         .max_results = 1 };
static const char kernel_fmt[] = "\"func.func\"() ({\n"
                                 "^bb0(%%x: buffer<4xf32>, %%o: buffer<4xf32>):\n"
                                 "  %%i = \"arith.constant\"() {value = 0 : index} : () -> index\n"
                                 "  %%v = \"rock.load\"(%%x, %%i) : (buffer<4xf32>, index) -> f32\n"
                                 "  %%e = \"%s\"(%%v) : (f32) -> f32\n"
                                 "  \"rock.store\"(%%e, %%o, %%i) : (f32, buffer<4xf32>, index) -> ()\n"
                                 "  \"func.return\"() : () -> ()\n"
                                 "}) {block_size = 1, grid_size = 1, kernel, sym_name = \"k\"} : () -> ()\n";

/* Lowers the kernel above with op `name` for the host; the LLVM IR text (malloc'd) or
 * NULL, leaving the diagnostics on ctx. */
static char *lower1(kl_ctx *ctx, const char *name) {
  char text[1024];
  snprintf(text, sizeof text, kernel_fmt, name);
  kl_op *m = kl_parse_module(ctx, text, strlen(text), "k.kir");
  if (!m) return NULL;
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef lm;
  char *ir = NULL;
  if (kl_lower_to_llvm(m, kl_target_lookup("host"), c, &lm) == KL_OK) {
    char *s = LLVMPrintModuleToString(lm);
    ir = strdup(s);
    LLVMDisposeMessage(s);
    LLVMDisposeModule(lm);
  }
  LLVMContextDispose(c);
  return ir;
}

static void test_lower_hooks(void) {
  group_begin();
  kl_ctx *ctx = kl_test_ctx();
  char *ir = lower1(ctx, "math.sqrt");
  CHECK(ir && strstr(ir, "call float @llvm.sqrt.f32"), "%s", ir ? ir : "(failed)");
  free(ir);
  /* an op without a lowering hook: a located error */
  CHECK(kl_lower_llvm_attach(ctx, "math.sqrt", NULL) == KL_OK);
  CHECK(lower1(ctx, "math.sqrt") == NULL);
  CHECK(diag_is(
      ctx, "k.kir:5:3: error: lower-to-llvm (host): 'math.sqrt': not a loop-level op (run rock-lower-loops first)\n"));
  /* a user's loop-level op: an error until it has a hook, then lowered through it */
  kl_register_op(ctx, &twice_loop_def);
  CHECK(lower1(ctx, "test.twice_loop") == NULL);
  CHECK(diag_is(
      ctx,
      "k.kir:5:3: error: lower-to-llvm (host): 'test.twice_loop': not a loop-level op (run rock-lower-loops first)\n"));
  CHECK(kl_lower_llvm_attach(ctx, "test.twice_loop", lower_twice) == KL_OK);
  ir = lower1(ctx, "test.twice_loop");
  CHECK(ir && strstr(ir, "%twice = fadd float"), "%s", ir ? ir : "(failed)");
  free(ir);
  CHECK(!kl_diag_has_error(ctx));
  kl_ctx_destroy(ctx);
  /* the entry points attach the builtin hooks themselves (a context without passes) */
  ctx = kl_ctx_create();
  ir = lower1(ctx, "math.sqrt");
  CHECK(ir != NULL);
  free(ir);
  kl_ctx_destroy(ctx);
  group_end("lowering through lower_llvm hooks");
}

/* kl_graph_infer goes through kl_opdef.infer: an op without one is "unknown". */
static void test_infer_rules(void) {
  group_begin();
  kl_ctx *ctx = kl_ctx_create();
  const kl_type *tt = kl_type_tensor(ctx, kl_type_f32(ctx), 1, (int64_t[]){ 4 }, NULL);
  kl_loc loc = kl_loc_make(ctx, "i.lua", 3, 0);
  CHECK(kl_graph_infer(ctx, "graph.exp", loc, 1, &tt, 0, NULL, NULL) == tt);
  CHECK(kl_graph_infer(ctx, "graph.launch", loc, 1, &tt, 0, NULL, NULL) == NULL);
  CHECK(diag_is(ctx, "i.lua:3: error: unknown graph op 'graph.launch'\n"));
  CHECK(kl_graph_infer(ctx, "graph.nope", loc, 1, &tt, 0, NULL, NULL) == NULL);
  CHECK(diag_is(ctx, "i.lua:3: error: unknown graph op 'graph.nope'\n"));
  kl_register_op(ctx, &twice_def);
  CHECK(kl_graph_infer(ctx, "test.twice", loc, 1, &tt, 0, NULL, NULL) == tt);
  kl_ctx_destroy(ctx);
  group_end("infer rules on the op definitions");
}

int main(void) {
  test_completeness();
  test_graph_data();
  test_eval_hooks();
  test_lower_hooks();
  test_infer_rules();
  return check_summary("test_op_hooks");
}
