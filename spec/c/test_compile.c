/* test_compile.c — the compile driver (driver/program.c) through the pass manager:
 *  - the pipeline string is parsed once, as a whole, by core/pass.c: an error is located
 *    at its column in the whole string, not in the entry it is in;
 *  - the perf config is the perf-config option of rock-gemm-to-gridwise: it reaches the
 *    kernel, and a pipeline entry that gives its own perf-config keeps it;
 *  - snapshots come from the pass manager's after-pass observer: one per pass of the
 *    pipeline, in order, and on_ir gets exactly the passes print_ir_after names;
 *  - without on_ir they are taken when first read, by running the pipeline again: the
 *    same texts as those taken during the compile, with the perf config and the passes
 *    as registered when it compiled (a pass registered again later does not run);
 *  - binaries are emitted at compile time and the host binary runs on the host device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dialect_graph.h"
#include "driver/program.h"
#include "passes/passes.h"

#include "check.h"
#include "graph_test_util.h"

/* a[16,32] . b[32,16] */
static kl_op *gemm_graph(kl_ctx *ctx) {
  kl_op *g = kl_graph_create(ctx, kl_module_create(ctx, KL_LOC_UNKNOWN), "gemm", KL_LOC_UNKNOWN);
  const kl_type *f32 = kl_type_f32(ctx);
  kl_op *a = param(g, "a", kl_type_tensor(ctx, f32, 2, (int64_t[]){ 16, 32 }, NULL));
  kl_op *b = param(g, "b", kl_type_tensor(ctx, f32, 2, (int64_t[]){ 32, 16 }, NULL));
  kl_value *out = kl_op_result(op2(g, "dot", a, b), 0);
  kl_graph_set_outputs(g, 1, &out, KL_LOC_UNKNOWN);
  return g;
}

static void test_pipeline_errors(kl_ctx *ctx, kl_op *g) {
  char err[2048] = "";
  kl_compile_opts o = { .pipeline = "graph-partition,graph-to-rock,no-such-pass", .no_cache = true };
  kl_program *p = kl_compile(g, &o, err, sizeof err);
  CHECK(!p && strstr(err, "<pipeline>:1:31: error: unknown pass 'no-such-pass'"), "%s", err);
  o.pipeline = "graph-partition, rock-gemm-to-gridwise{perf-config=\"v1:a,b\" accel=maybe}";
  p = kl_compile(g, &o, err, sizeof err);
  CHECK(!p && strstr(err, "<pipeline>:1:67: error: invalid value 'maybe' for bool option 'accel'"), "%s", err);
  kl_program_release(p);
  free(kl_diag_take(ctx));
}

static const char *perf_of(kl_op *g, const char *pipeline, const char *perf) {
  char err[2048] = "";
  kl_compile_opts o = { .pipeline = pipeline, .perf_config = perf, .no_cache = true };
  kl_program *p = kl_compile(g, &o, err, sizeof err);
  CHECK(p != NULL, "compile: %s", err);
  if (!p) return "";
  CHECK(kl_program_nkernels(p, NULL) == 1);
  const char *pc = kl_program_nkernels(p, NULL) ? kl_program_kernel(p, NULL, 0)->perf_config : ""; /* interned */
  kl_program_release(p);
  return pc;
}

static void test_perf_config_option(kl_op *g) {
  CHECK(!strcmp(perf_of(g, NULL, "v1:16,16,8,16,16,4"), "v1:16,16,8,16,16,4"));
  char pl[1024];
  snprintf(pl, sizeof pl, "%s", kl_default_pipeline());
  char *at = strstr(pl, "rock-gemm-to-gridwise");
  const char *rest = at + strlen("rock-gemm-to-gridwise");
  char tail[1024];
  snprintf(tail, sizeof tail, "%s", rest);
  snprintf(at, sizeof pl - (size_t)(at - pl), "rock-gemm-to-gridwise{perf-config=\"v1:8,8,8,8,8,4\"}%s", tail);
  CHECK(!strcmp(perf_of(g, pl, "v1:16,16,8,16,16,4"), "v1:8,8,8,8,8,4"), "%s", pl);
  CHECK(!strcmp(perf_of(g, pl, NULL), "v1:8,8,8,8,8,4"));
  /* a bad perf config is the pass's error, as before */
  char err[2048] = "";
  kl_compile_opts o = { .perf_config = "v1:0,0,0,0,0,0", .no_cache = true };
  kl_program *p = kl_compile(g, &o, err, sizeof err);
  CHECK(!p && strstr(err, "perf"), "%s", err);
}

typedef struct {
  char names[32][40];
  int n;
} ir_log;
static void on_ir(const char *pass, const char *text, void *user) {
  ir_log *l = user;
  if (l->n < 32 && strstr(text, "builtin.module")) snprintf(l->names[l->n++], 40, "%s", pass);
}

static void test_snapshots(kl_op *g) {
  char err[2048] = "";
  ir_log l = { 0 };
  kl_compile_opts o = {
    .print_ir_after = "graph-to-rock, rock-lower-loops", .on_ir = on_ir, .on_ir_user = &l, .no_cache = true
  };
  kl_program *p = kl_compile(g, &o, err, sizeof err);
  CHECK(p != NULL, "%s", err);
  if (!p) return;
  CHECK(l.n == 2 && !strcmp(l.names[0], "graph-to-rock") && !strcmp(l.names[1], "rock-lower-loops"), "%d on_ir calls",
        l.n);
  const char *want[] = { "fp8-compute",
                         "reduce-split",
                         "split-k-workspace",
                         "graph-partition",
                         "graph-to-rock",
                         "rock-regularize",
                         "rock-conv-to-gemm",
                         "rock-gemm-to-gridwise",
                         "rock-gridwise-to-blockwise",
                         "rock-blockwise-to-threadwise",
                         "rock-output-swizzle",
                         "rock-align-tiling",
                         "rock-plan-steps",
                         "rock-lower-loops",
                         "canonicalize",
                         "cse",
                         "dce" };
  int n = 0;
  while (kl_program_ir_pass(p, n)) n++;
  int nwant = (int)(sizeof want / sizeof *want);
  CHECK(n == nwant, "%d snapshots", n);
  for (int i = 0; i < n && i < nwant; i++)
    CHECK(!strcmp(kl_program_ir_pass(p, i), want[i]), "snapshot %d: %s", i, kl_program_ir_pass(p, i));
  CHECK(kl_program_ir(p, "after:rock-align-tiling") && strstr(kl_program_ir(p, "rock-align-tiling"), "func.func"));
  int nk = 0;
  const kl_snapshot *ks = kl_program_kernel_ir(p, NULL, 0, &nk);
  /* graph-partition makes it: every snapshot but fp8-compute's, reduce-split's and split-k-workspace's, the ones
   * before it */
  CHECK(ks && nk == nwant - 3 && !strcmp(ks[0].pass, "graph-partition"), "%d kernel snapshots", nk);
  CHECK(kl_program_kernel_ir(p, NULL, 1, &nk) == NULL && nk == 0, "no kernel 1");
  kl_program_release(p);
}

/* A pass that fails: registered under a pipeline pass's name after a lazy compile, it must
 * not run when the snapshots are taken. */
static kl_status failing_pass(kl_op *module, const kl_pass_options *o, void *user) {
  (void)o, (void)user;
  return kl_emit_error(module->ctx, module->loc, "the re-registered pass ran");
}

/* The snapshots taken on the first read equal those taken as the compile ran. */
static void test_lazy_snapshots(kl_ctx *ctx, kl_op *g) {
  char err[2048] = "";
  ir_log l = { 0 };
  kl_compile_opts eo = {
    .perf_config = "v1:16,16,8,16,16,4", .print_ir_after = "all", .on_ir = on_ir, .on_ir_user = &l, .no_cache = true
  };
  kl_compile_opts lo = { .perf_config = "v1:16,16,8,16,16,4", .no_cache = true };
  kl_program *e = kl_compile(g, &eo, err, sizeof err);
  CHECK(e != NULL, "%s", err);
  kl_program *lz = kl_compile(g, &lo, err, sizeof err);
  CHECK(lz != NULL, "%s", err);
  kl_program *lz2 = kl_compile(g, &lo, err, sizeof err);
  CHECK(lz2 != NULL, "%s", err);
  if (!e || !lz || !lz2) return;
  /* the pipeline's rock-lower-loops replaced by a failing pass: lz's kept pipeline runs the old one */
  const kl_pass_info *old = kl_lookup_pass(ctx, "rock-lower-loops");
  kl_pass_info bad = *old;
  bad.run = failing_pass;
  kl_register_pass(ctx, &bad);
  /* kernel snapshots first on lz (they take the module's too), the module's first on lz2 */
  int ne = 0, nl = 0, nl2 = 0;
  const kl_snapshot *se = kl_program_kernel_ir(e, NULL, 0, &ne), *sl = kl_program_kernel_ir(lz, NULL, 0, &nl);
  CHECK(ne > 5 && nl == ne, "kernel snapshots: eager %d, lazy %d", ne, nl);
  for (int i = 0; i < ne && i < nl; i++)
    CHECK(!strcmp(se[i].pass, sl[i].pass) && !strcmp(se[i].text, sl[i].text), "kernel snapshot %d (%s) differs", i,
          se[i].pass);
  int n = 0;
  for (; kl_program_ir_pass(e, n); n++) {
    const char *pass = kl_program_ir_pass(e, n);
    CHECK(kl_program_ir_pass(lz2, n) && !strcmp(pass, kl_program_ir_pass(lz2, n)), "pass %d: %s", n, pass);
    CHECK(kl_program_ir(lz2, pass) && !strcmp(kl_program_ir(e, pass), kl_program_ir(lz2, pass)), "module after %s",
          pass);
    CHECK(kl_program_ir(lz, pass) && !strcmp(kl_program_ir(e, pass), kl_program_ir(lz, pass)), "module after %s", pass);
  }
  CHECK(n > 10 && !kl_program_ir_pass(lz2, n) && !kl_program_ir_pass(lz, n), "%d module snapshots", n);
  CHECK(kl_program_kernel_ir(lz2, NULL, 0, &nl2) && nl2 == ne, "lz2: %d kernel snapshots", nl2);
  char *d = kl_diag_take(ctx);
  CHECK(!*d, "diagnostics: %s", d);
  free(d);
  kl_register_pass(ctx, old);
  /* a compile released before its snapshots were read frees what it kept */
  kl_program_release(kl_compile(g, &lo, err, sizeof err));
  kl_program_release(e);
  kl_program_release(lz);
  kl_program_release(lz2);
}

/* the host binary made at compile time runs: a . b against the reference evaluator */
static void test_runs(kl_op *g) {
  char err[2048] = "";
  kl_program *p = kl_compile(g, NULL, err, sizeof err);
  CHECK(p != NULL, "%s", err);
  kl_device *dev = kl_device_open("host", err, sizeof err);
  CHECK(dev != NULL, "%s", err);
  if (!p || !dev) {
    kl_program_release(p);
    kl_device_destroy(dev);
    return;
  }
  kl_named_tensor in[2];
  const char *names[] = { "a", "b" };
  int64_t shapes[2][2] = { { 16, 32 }, { 32, 16 } };
  for (int i = 0; i < 2; i++) {
    in[i].name = names[i];
    in[i].tensor = kl_tensor_rand(KL_DT_F32, 2, shapes[i], NULL, 7 + i, KL_DIST_NORMAL, err, sizeof err);
  }
  int nout = 0, nref = 0;
  kl_tensor **out = NULL, **ref = NULL;
  CHECK(kl_program_run(p, dev, 2, in, &nout, &out, err, sizeof err) == KL_OK, "run: %s", err);
  CHECK(kl_graph_eval(g, 2, in, &nref, &ref, err, sizeof err) == KL_OK, "eval: %s", err);
  if (nout == 1 && nref == 1) {
    kl_compare_result cr;
    CHECK(kl_tensor_compare(out[0], ref[0], -1, -1, &cr, err, sizeof err) == 0 && cr.mismatches == 0,
          "%lld mismatches (max abs err %g) %s", (long long)cr.mismatches, cr.max_abs_err, err);
  }
  for (int i = 0; i < nout; i++) kl_tensor_release(out[i]);
  for (int i = 0; i < nref; i++) kl_tensor_release(ref[i]);
  free(out);
  free(ref);
  for (int i = 0; i < 2; i++) kl_tensor_release(in[i].tensor);
  kl_device_destroy(dev);
  kl_program_release(p);
}

int main(void) {
  kl_ctx *ctx = kl_ctx_create();
  kl_register_builtin_passes(ctx);
  kl_op *g = gemm_graph(ctx);
  CHECK(g != NULL);
  group_begin();
  test_pipeline_errors(ctx, g);
  group_end("pipeline errors located in the whole string");
  group_begin();
  test_perf_config_option(g);
  group_end("perf config as the option of rock-gemm-to-gridwise");
  group_begin();
  test_snapshots(g);
  group_end("snapshots from the after-pass observer");
  group_begin();
  test_lazy_snapshots(ctx, g);
  group_end("lazy snapshots equal the eager ones");
  group_begin();
  test_runs(g);
  group_end("the compiled host binary runs");
  kl_ctx_destroy(ctx);
  return check_summary("test_compile");
}
