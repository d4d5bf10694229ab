/* test_pass.c — the pass registry, typed options, pipeline strings (good and bad, with
 * exact messages and columns), the pass manager (verify after each pass, IR snapshots to
 * a callback and KILN_PRINT_IR_AFTER, timing report, callbacks) and the built-in
 * canonicalize / cse / dce passes on hand-built IR. */
#include "core/pass.h"
#include "ctx_test_util.h"
#include "core/rewrite.h"
#include "core/print.h"
#include "core/verify.h"
#include "core/dialect_builtin.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ir_test_util.h"

/* ---- IR helpers ---- */
typedef struct {
  kl_ctx *ctx;
  kl_op *m;
  kl_block *b;
  const kl_type *i32;
} fixture;
static fixture setup(kl_ctx *ctx, int nargs) {
  fixture f = { ctx, kl_module_create(ctx, kl_loc_make(ctx, "t.kir", 1, 1)), NULL, kl_type_i32(ctx) };
  kl_named_attr a = { "sym_name", kl_attr_str(ctx, "f") };
  kl_op *fn = kl_op_create(ctx, "func.func", kl_loc_make(ctx, "t.kir", 2, 1), 0, NULL, 0, NULL, 1, &a, 1);
  f.b = kl_block_create(ctx);
  for (int i = 0; i < nargs; i++) kl_block_add_arg(ctx, f.b, f.i32);
  kl_region_push_block(&fn->regions[0], f.b);
  kl_block_push_op(kl_module_body(f.m), fn);
  return f;
}
static kl_op *push(fixture *f, kl_block *b, const char *name, int n, kl_value **o, int nres, int nregions) {
  const kl_type *ts[2] = { f->i32, f->i32 };
  kl_op *op = kl_op_create(f->ctx, name, kl_loc_make(f->ctx, "t.kir", 3, 3), n, o, nres, ts, 0, NULL, nregions);
  kl_block_push_op(b, op);
  return op;
}
static kl_value *cst_in(fixture *f, kl_block *b, int64_t v) {
  kl_op *c = kl_build_constant(f->ctx, KL_LOC_UNKNOWN, kl_attr_int_typed(f->ctx, v, f->i32), f->i32);
  kl_block_push_op(b, c);
  return kl_op_result(c, 0);
}
static kl_value *bin_in(fixture *f, kl_block *b, const char *name, kl_value *x, kl_value *y) {
  kl_value *o[] = { x, y };
  return kl_op_result(push(f, b, name, 2, o, 1, 0), 0);
}

/* ---- a test pass with typed options: records what it saw ---- */
typedef struct {
  int runs;
  int64_t n;
  double f;
  bool flag;
  char s[64];
  const char *order[16];
  int norder;
} seen_t;
static seen_t seen;
static kl_status my_pass(kl_op *m, const kl_pass_options *o, void *user) {
  seen.runs++;
  seen.n = kl_pass_opt_int(o, "n");
  seen.f = kl_pass_opt_float(o, "f");
  seen.flag = kl_pass_opt_bool(o, "flag");
  snprintf(seen.s, sizeof seen.s, "%s", kl_pass_opt_string(o, "s"));
  if (seen.norder < 16) seen.order[seen.norder++] = (const char *)user;
  return KL_OK;
}
static const kl_pass_option my_opts[] = {
  { "n", KL_OPT_INT, "7", "a count" },
  { "f", KL_OPT_FLOAT, "0.5", "a ratio" },
  { "flag", KL_OPT_BOOL, NULL, "a switch (default false)" },
  { "s", KL_OPT_STRING, "x", "a name" },
};
static void register_my_pass(kl_ctx *ctx) {
  kl_pass_info info = { "my-pass", "records its options", my_opts, 4, my_pass, (void *)"my-pass" };
  kl_register_pass(ctx, &info);
}
static kl_status run_pipeline(kl_ctx *ctx, const char *pipeline) {
  kl_pass_manager *pm = kl_pass_manager_create(ctx);
  fixture f = setup(ctx, 0);
  push(&f, f.b, "func.return", 0, NULL, 0, 0);
  kl_status st = kl_pass_manager_add_pipeline(pm, pipeline);
  if (st == KL_OK) st = kl_pass_manager_run(pm, f.m);
  kl_pass_manager_destroy(pm);
  return st;
}

static void test_registry(void) {
  kl_ctx *bare = kl_ctx_create(); /* dialects only: the caller registers the passes */
  CHECK(kl_pass_count(bare) == 0 && kl_lookup_pass(bare, "cse") == NULL);
  CHECK(kl_lookup_op(bare, "graph.add") != NULL);
  kl_register_builtin_passes(bare);
  CHECK(kl_lookup_pass(bare, "canonicalize") && kl_lookup_pass(bare, "cse") && kl_lookup_pass(bare, "dce"));
  int nbuiltin = kl_pass_count(bare), ndef = 0;
  /* passes/passes.def is the list: every line registers its pass, in order, and nothing else does */
#define KL_PASS(id, pname, pfile, brings)                                                                      \
  CHECK(kl_pass_at(bare, ndef) && !strcmp(kl_pass_at(bare, ndef)->name, pname), "passes.def line %d: %s (%s)", \
        ndef + 1, pname, pfile);                                                                               \
  ndef++;
#include "passes/passes.def"
#undef KL_PASS
  CHECK(ndef == nbuiltin && ndef >= 13, "%d lines, %d passes", ndef, nbuiltin);
  kl_ctx_destroy(bare);
  kl_ctx *ctx = kl_test_ctx();
  const char *builtin[] = { "canonicalize", "cse", "dce" };
  for (int i = 0; i < 3; i++) CHECK(kl_lookup_pass(ctx, builtin[i]) && kl_lookup_pass(ctx, builtin[i])->summary);
  int base = kl_pass_count(ctx);
  CHECK(base >= 3 && base == nbuiltin && kl_pass_at(ctx, base) == NULL && kl_pass_at(ctx, -1) == NULL);
  CHECK(kl_lookup_pass(ctx, "nope") == NULL && kl_lookup_pass(ctx, NULL) == NULL);
  char name[16];
  strcpy(name, "my-pass");
  kl_pass_option opts[4];
  memcpy(opts, my_opts, sizeof opts);
  kl_pass_info info = { name, "records its options", opts, 4, my_pass, NULL };
  kl_register_pass(ctx, &info);
  strcpy(name, "clobber");
  opts[0].name = "zzz"; /* the registry keeps copies */
  const kl_pass_info *p = kl_lookup_pass(ctx, "my-pass");
  CHECK(p && p->noptions == 4 && !strcmp(p->options[0].name, "n") && !strcmp(p->options[1].default_value, "0.5"));
  CHECK(kl_pass_count(ctx) == base + 1);
  info.name = "my-pass";
  info.summary = "v2";
  info.noptions = 0;
  kl_register_pass(ctx, &info); /* same name replaces */
  CHECK(kl_pass_count(ctx) == base + 1 && !strcmp(kl_lookup_pass(ctx, "my-pass")->summary, "v2"));
  CHECK(kl_lookup_pass(ctx, "my-pass")->noptions == 0);
  char *desc = kl_pass_describe(ctx);
  CHECK(strstr(desc, "canonicalize: ") && strstr(desc, "  max-iterations (int, default 10): ") &&
        strstr(desc, "my-pass: v2\n"));
  free(desc);
  kl_ctx *ctx2 = kl_test_ctx(); /* registrations are per context */
  CHECK(kl_lookup_pass(ctx2, "my-pass") == NULL && kl_pass_count(ctx2) == base);
  kl_ctx_destroy(ctx2);
  kl_ctx_destroy(ctx);
  printf("pass registry ok\n");
}

static void test_options(void) {
  kl_ctx *ctx = kl_test_ctx();
  register_my_pass(ctx);
  memset(&seen, 0, sizeof seen);
  CHECK(run_pipeline(ctx, "my-pass") == KL_OK);
  CHECK(seen.runs == 1 && seen.n == 7 && seen.f == 0.5 && !seen.flag && !strcmp(seen.s, "x")); /* defaults */
  CHECK(run_pipeline(ctx, "my-pass{n=3,f=2.5,flag,s=hello}") == KL_OK);
  CHECK(seen.runs == 2 && seen.n == 3 && seen.f == 2.5 && seen.flag && !strcmp(seen.s, "hello"));
  CHECK(run_pipeline(ctx, " my-pass { n = -4  flag=false s=\"a,b}\\\"c\" } ") == KL_OK); /* spaces separate too */
  CHECK(seen.n == -4 && !seen.flag && !strcmp(seen.s, "a,b}\"c") && seen.f == 0.5);
  CHECK(run_pipeline(ctx, "my-pass{n=0x10,f=1e-3,flag=1}") == KL_OK);
  CHECK(seen.n == 16 && seen.f == 1e-3 && seen.flag);
  CHECK(run_pipeline(ctx, "my-pass{}") == KL_OK && seen.n == 7);
  CHECK(run_pipeline(ctx, "") == KL_OK && run_pipeline(ctx, "   ") == KL_OK);
  CHECK(seen.runs == 5);
  /* typed getters convert between kinds; unknown names give zero values */
  kl_pass_manager *pm = kl_pass_manager_create(ctx);
  CHECK(kl_pass_manager_add_pass(pm, "my-pass", "n=5, f=2.75") == KL_OK);
  CHECK(kl_pass_manager_add_pass(pm, "my-pass", NULL) == KL_OK);
  fixture f = setup(ctx, 0);
  push(&f, f.b, "func.return", 0, NULL, 0, 0);
  seen.norder = 0;
  CHECK(kl_pass_manager_run(pm, f.m) == KL_OK);
  CHECK(seen.runs == 7 && seen.n == 7 && seen.norder == 2); /* the second instance has defaults */
  kl_pass_manager_destroy(pm);
  CHECK(kl_pass_opt_int(NULL, "n") == 0 && kl_pass_opt_string(NULL, "s") == NULL && !kl_pass_opt_bool(NULL, "flag"));

  /* an invalid default is reported when the pass is instantiated */
  kl_pass_option bad[] = { { "k", KL_OPT_INT, "seven", "" } };
  kl_pass_info bi = { "bad-default", "", bad, 1, my_pass, NULL };
  kl_register_pass(ctx, &bi);
  CHECK(run_pipeline(ctx, "bad-default") == KL_ERR);
  CHECK(diag_is(ctx,
                "<unknown>: error: pass 'bad-default': invalid default value 'seven' for int option 'k' (expected an "
                "integer)\n"));
  kl_ctx_destroy(ctx);
  printf("typed options and defaults ok\n");
}

static kl_status get_opts(kl_op *m, const kl_pass_options *o, void *user) {
  double *out = user;
  out[0] = (double)kl_pass_opt_int(o, "f"); /* float read as int */
  out[1] = kl_pass_opt_float(o, "n");       /* int read as float */
  out[2] = kl_pass_opt_bool(o, "n");
  out[3] = kl_pass_opt_int(o, "missing");
  out[4] = !strcmp(kl_pass_opt_string(o, "n"), "12"); /* the text of any option */
  return KL_OK;
}
static void test_option_conversions(void) {
  kl_ctx *ctx = kl_test_ctx();
  double out[5] = { 0 };
  kl_pass_info info = { "conv", "", my_opts, 4, get_opts, out };
  kl_register_pass(ctx, &info);
  CHECK(run_pipeline(ctx, "conv{n=12,f=3.75}") == KL_OK);
  CHECK(out[0] == 3 && out[1] == 12 && out[2] == 1 && out[3] == 0 && out[4] == 1);
  kl_ctx_destroy(ctx);
  printf("option kind conversions ok\n");
}

static void test_bad_pipelines(void) {
  kl_ctx *ctx = kl_test_ctx();
  register_my_pass(ctx);
  struct {
    const char *pipeline, *diag;
  } cases[] = {
    { "canonicalize,nosuch", "<pipeline>:1:14: error: unknown pass 'nosuch'\n" },
    { "canonicalise", "<pipeline>:1:1: error: unknown pass 'canonicalise' (did you mean 'canonicalize'?)\n" },
    { "cse,,dce", "<pipeline>:1:5: error: expected a pass name, found ','\n" },
    { "cse dce", "<pipeline>:1:5: error: expected ',' between passes, found 'd'\n" },
    { "cse,", "<pipeline>:1:5: error: expected a pass name after ','\n" },
    { "cse(dce)", "<pipeline>:1:4: error: expected ',' between passes, found '('\n" },
    { "cse{x=1}", "<pipeline>:1:5: error: unknown option 'x' for pass 'cse' (it takes no options)\n" },
    { "my-pass{bogus=1}",
      "<pipeline>:1:9: error: unknown option 'bogus' for pass 'my-pass' (options: n, f, flag, s)\n" },
    { "my-pass{n=abc}",
      "<pipeline>:1:11: error: invalid value 'abc' for int option 'n' of pass 'my-pass' (expected an integer)\n" },
    { "my-pass{n=99999999999999999999}",
      "<pipeline>:1:11: error: invalid value '99999999999999999999' for int option 'n' of pass 'my-pass' (expected an "
      "integer)\n" },
    { "my-pass{f=1.5x}",
      "<pipeline>:1:11: error: invalid value '1.5x' for float option 'f' of pass 'my-pass' (expected a number)\n" },
    { "my-pass{flag=maybe}",
      "<pipeline>:1:14: error: invalid value 'maybe' for bool option 'flag' of pass 'my-pass' (expected true or "
      "false)\n" },
    { "my-pass{n}", "<pipeline>:1:9: error: option 'n' of pass 'my-pass' needs a value (an integer)\n" },
    { "my-pass{n=}", "<pipeline>:1:11: error: option 'n' of pass 'my-pass' needs a value (an integer)\n" },
    { "my-pass{n=\"\"}",
      "<pipeline>:1:11: error: invalid value '' for int option 'n' of pass 'my-pass' (expected an integer)\n" },
    { "my-pass{n=1,n=2}", "<pipeline>:1:13: error: option 'n' of pass 'my-pass' is given twice\n" },
    { "my-pass{n=3", "<pipeline>:1:12: error: missing '}' to close the options of pass 'my-pass'\n" },
    { "my-pass{n=3,", "<pipeline>:1:13: error: missing '}' to close the options of pass 'my-pass'\n" },
    { "my-pass{n=3,}", "<pipeline>:1:13: error: expected an option name after ','\n" },
    { "my-pass{s=\"abc}", "<pipeline>:1:11: error: unterminated string in the options of pass 'my-pass'\n" },
    { "my-pass{=3}", "<pipeline>:1:9: error: expected an option name for pass 'my-pass', found '='\n" },
    { "my-pass{s=\"a\"b}",
      "<pipeline>:1:14: error: expected ',' or '}' after option 's' of pass 'my-pass', found 'b'\n" },
    { "my-pass{n=3;f=2}",
      "<pipeline>:1:11: error: invalid value '3;f=2' for int option 'n' of pass 'my-pass' (expected an integer)\n" },
    { "my-pass{n=3}x", "<pipeline>:1:13: error: expected ',' between passes, found 'x'\n" },
    { "cse,\xff", "<pipeline>:1:5: error: expected a pass name, found byte 0xff\n" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    kl_pass_manager *pm = kl_pass_manager_create(ctx);
    CHECK(kl_pass_manager_add_pipeline(pm, cases[i].pipeline) == KL_ERR);
    CHECK(diag_is(ctx, cases[i].diag));
    kl_pass_manager_destroy(pm);
  }
  /* a bad string adds nothing: only the passes of good strings run */
  memset(&seen, 0, sizeof seen);
  kl_pass_manager *pm = kl_pass_manager_create(ctx);
  CHECK(kl_pass_manager_add_pipeline(pm, "my-pass{n=1}") == KL_OK);
  CHECK(kl_pass_manager_add_pipeline(pm, "my-pass{n=2},nosuch") == KL_ERR);
  free(kl_diag_take(ctx));
  fixture f = setup(ctx, 0);
  push(&f, f.b, "func.return", 0, NULL, 0, 0);
  CHECK(kl_pass_manager_run(pm, f.m) == KL_OK && seen.runs == 1 && seen.n == 1);
  /* add_pass: errors name the pass and the column in the option string */
  CHECK(kl_pass_manager_add_pass(pm, "nope", NULL) == KL_ERR);
  CHECK(diag_is(ctx, "<unknown>: error: unknown pass 'nope'\n"));
  CHECK(kl_pass_manager_add_pass(pm, "my-pas", NULL) == KL_ERR);
  CHECK(diag_is(ctx, "<unknown>: error: unknown pass 'my-pas' (did you mean 'my-pass'?)\n"));
  CHECK(kl_pass_manager_add_pass(pm, "my-pass", "n=1, zzz=2") == KL_ERR);
  CHECK(diag_is(ctx, "<options>:1:6: error: unknown option 'zzz' for pass 'my-pass' (options: n, f, flag, s)\n"));
  CHECK(kl_pass_manager_add_pass(pm, "my-pass", "n=1}") == KL_ERR);
  CHECK(diag_has(ctx, "<options>:1:4: error: expected ',' or '}' after option 'n'"));
  kl_pass_manager_destroy(pm);
  kl_ctx_destroy(ctx);
  printf("bad pipeline strings ok\n");
}

/* Breaks the IR: moves the function's first op after its last (use before def). */
static kl_status breaker(kl_op *m, void *user) {
  kl_block *b = kl_module_body(m)->first->regions[0].first;
  kl_op *first = b->first;
  kl_op_unlink(first);
  kl_block_push_op(b, first);
  return KL_OK;
}
static kl_status failing(kl_op *m, void *user) {
  return kl_emit_error(m->ctx, KL_LOC_UNKNOWN, "failing: cannot continue");
}
static kl_status record(kl_op *m, void *user) {
  if (seen.norder < 16) seen.order[seen.norder++] = user;
  return KL_OK;
}

static void test_verify_after_pass(void) {
  kl_ctx *ctx = kl_test_ctx();
  register_my_pass(ctx);
  fixture f = setup(ctx, 2);
  kl_value *s = bin_in(&f, f.b, "arith.addi", f.b->args[0], f.b->args[1]);
  push(&f, f.b, "func.return", 1, &s, 0, 0);
  memset(&seen, 0, sizeof seen);
  kl_pass_manager *pm = kl_pass_manager_create(ctx);
  CHECK(kl_pass_manager_add_pipeline(pm, "cse") == KL_OK);
  kl_pass_manager_add_callback(pm, "breaker", breaker, NULL);
  kl_pass_manager_add_callback(pm, "after", record, "after");
  CHECK(kl_pass_manager_run(pm, f.m) == KL_ERR);
  char *d = kl_diag_take(ctx);
  CHECK(strstr(d, "error: 'func.return' operand 0 is used before its definition by 'arith.addi'\n") != NULL);
  CHECK(strstr(d, "t.kir:1:1: error: after pass 'breaker': the IR does not verify (3 errors above)\n") != NULL);
  free(d);
  CHECK(seen.norder == 0); /* nothing runs after a failure */
  /* the input is verified first */
  CHECK(kl_pass_manager_run(pm, f.m) == KL_ERR);
  CHECK(diag_has(ctx, "t.kir:1:1: error: before the pipeline: the input IR does not verify (3 errors above)\n"));
  /* with verification off the pipeline runs through */
  breaker(f.m, NULL); /* two ops: rotating again restores the order */
  CHECK(kl_verify(f.m) == KL_OK);
  kl_pass_manager_set_verify(pm, false);
  CHECK(kl_pass_manager_run(pm, f.m) == KL_OK && seen.norder == 1);
  CHECK(kl_diag_error_count(ctx) == 0);
  breaker(f.m, NULL);
  kl_pass_manager_destroy(pm);
  /* a pass that fails is named */
  pm = kl_pass_manager_create(ctx);
  kl_pass_manager_add_callback(pm, "lua-step", failing, NULL);
  kl_pass_manager_add_callback(pm, "after", record, "after");
  CHECK(kl_pass_manager_run(pm, f.m) == KL_ERR);
  CHECK(diag_is(ctx, "<unknown>: error: failing: cannot continue\nt.kir:1:1: error: pass 'lua-step' failed\n"));
  CHECK(seen.norder == 1);
  kl_pass_manager_destroy(pm);
  kl_ctx_destroy(ctx);
  printf("verify after each pass ok\n");
}

typedef struct {
  char names[16][32];
  int n;
  bool texts_ok;
} ir_log;
static void on_ir(const char *pass, const char *text, void *user) {
  ir_log *l = user;
  if (l->n < 16) snprintf(l->names[l->n++], 32, "%s", pass);
  if (!strstr(text, "func.func") || !strstr(text, "builtin.module")) l->texts_ok = false;
}
/* Runs pm on m with stderr captured: returns what was written (malloc'd), the status through st. */
typedef struct {
  kl_pass_manager *pm;
  kl_op *m;
  kl_status st;
} pm_run;
static void run_pm(void *arg) {
  pm_run *r = arg;
  r->st = kl_pass_manager_run(r->pm, r->m);
}
static char *run_captured(kl_pass_manager *pm, kl_op *m, kl_status *st) {
  pm_run r = { pm, m, KL_ERR };
  char *text = capture_stderr(run_pm, &r);
  *st = r.st;
  return text;
}

static void test_print_ir_after(void) {
  kl_ctx *ctx = kl_test_ctx();
  fixture f = setup(ctx, 2);
  kl_value *s = bin_in(&f, f.b, "arith.addi", f.b->args[0], f.b->args[1]);
  bin_in(&f, f.b, "arith.addi", f.b->args[0], f.b->args[1]);
  push(&f, f.b, "func.return", 1, &s, 0, 0);
  kl_pass_manager *pm = kl_pass_manager_create(ctx);
  CHECK(kl_pass_manager_add_pipeline(pm, "canonicalize, cse,dce") == KL_OK);
  kl_pass_manager_add_callback(pm, "lua-fn", record, "lua-fn");
  ir_log l = { .texts_ok = true };
  kl_pass_manager_print_ir_after(pm, "cse,lua-fn", on_ir, &l);
  CHECK(kl_pass_manager_run(pm, f.m) == KL_OK);
  CHECK(l.n == 2 && !strcmp(l.names[0], "cse") && !strcmp(l.names[1], "lua-fn") && l.texts_ok);
  l.n = 0;
  kl_pass_manager_print_ir_after(pm, "all", on_ir, &l);
  CHECK(kl_pass_manager_run(pm, f.m) == KL_OK);
  const char *want[] = { "canonicalize", "cse", "dce", "lua-fn" };
  CHECK(l.n == 4);
  for (int i = 0; i < 4 && i < l.n; i++) CHECK(!strcmp(l.names[i], want[i]));
  l.n = 0;
  kl_pass_manager_print_ir_after(pm, NULL, NULL, NULL);
  kl_status st;
  char *err = run_captured(pm, f.m, &st);
  CHECK(st == KL_OK && l.n == 0 && !strcmp(err, ""));
  free(err);
  /* KILN_PRINT_IR_AFTER prints to stderr */
  setenv("KILN_PRINT_IR_AFTER", "dce", 1);
  err = run_captured(pm, f.m, &st);
  unsetenv("KILN_PRINT_IR_AFTER");
  CHECK(st == KL_OK);
  CHECK(strstr(err, "// -----// IR Dump After dce //----- //\n") == err && strstr(err, "func.func"));
  CHECK(!strstr(err, "After cse") && !strstr(err, "After canonicalize"));
  free(err);
  setenv("KILN_PRINT_IR_AFTER", "all", 1);
  err = run_captured(pm, f.m, &st);
  unsetenv("KILN_PRINT_IR_AFTER");
  CHECK(strstr(err, "After canonicalize //") && strstr(err, "After cse //") && strstr(err, "After dce //") &&
        strstr(err, "After lua-fn //"));
  free(err);
  /* a selection without a callback also goes to stderr */
  kl_pass_manager_print_ir_after(pm, "cse", NULL, NULL);
  err = run_captured(pm, f.m, &st);
  CHECK(strstr(err, "// -----// IR Dump After cse //----- //\n") == err && !strstr(err, "After dce"));
  free(err);
  kl_pass_manager_destroy(pm);
  kl_ctx_destroy(ctx);
  printf("print IR after passes ok\n");
}

/* ---- the after-pass observer, driver options, pipeline entries ---- */
typedef struct {
  char names[16][32];
  int n;
  int verify_errors;
} obs_log;
static void observe(kl_op *m, const char *pass, void *user) {
  obs_log *l = user;
  if (l->n < 16) snprintf(l->names[l->n++], 32, "%s", pass);
  if (kl_verify(m) != KL_OK) l->verify_errors++;
}
static void test_observer_and_options(void) {
  kl_ctx *ctx = kl_test_ctx();
  register_my_pass(ctx);
  fixture f = setup(ctx, 2);
  kl_value *s = bin_in(&f, f.b, "arith.addi", f.b->args[0], f.b->args[1]);
  push(&f, f.b, "func.return", 1, &s, 0, 0);
  /* once per entry, after the pass verified; not after a pass whose result does not verify */
  kl_pass_manager *pm = kl_pass_manager_create(ctx);
  CHECK(kl_pass_manager_add_pipeline(pm, "cse,my-pass") == KL_OK);
  kl_pass_manager_add_callback(pm, "lua-fn", record, "lua-fn");
  obs_log l = { 0 };
  kl_pass_manager_observe(pm, observe, &l);
  CHECK(kl_pass_manager_run(pm, f.m) == KL_OK);
  CHECK(l.n == 3 && !strcmp(l.names[0], "cse") && !strcmp(l.names[1], "my-pass") && !strcmp(l.names[2], "lua-fn") &&
        l.verify_errors == 0);
  kl_pass_manager_add_callback(pm, "breaker", breaker, NULL);
  l.n = 0;
  CHECK(kl_pass_manager_run(pm, f.m) == KL_ERR && l.n == 3);
  free(kl_diag_take(ctx));
  breaker(f.m, NULL);
  CHECK(kl_verify(f.m) == KL_OK);
  kl_pass_manager_destroy(pm);
  /* set_option: every entry of the pass that did not give the option itself */
  pm = kl_pass_manager_create(ctx);
  CHECK(kl_pass_manager_add_pipeline(pm, "my-pass,my-pass{n=3},cse") == KL_OK);
  CHECK(kl_pass_manager_set_option(pm, "my-pass", "n", "42") == KL_OK);
  CHECK(kl_pass_manager_set_option(pm, "my-pass", "s", "driver") == KL_OK);
  int64_t ns[2];
  char ss[2][64];
  int k = 0;
  memset(&seen, 0, sizeof seen);
  kl_pass_manager_observe(pm, NULL, NULL);
  for (int i = 0; i < 2; i++) {
    kl_pass_manager *one = kl_pass_manager_create(ctx);
    CHECK(kl_pass_manager_add_pipeline(one, i ? "my-pass{n=3}" : "my-pass") == KL_OK);
    CHECK(kl_pass_manager_set_option(one, "my-pass", "n", "42") == KL_OK &&
          kl_pass_manager_set_option(one, "my-pass", "s", "driver") == KL_OK);
    CHECK(kl_pass_manager_run(one, f.m) == KL_OK);
    ns[k] = seen.n;
    memcpy(ss[k], seen.s, sizeof ss[k]);
    k++;
    kl_pass_manager_destroy(one);
  }
  CHECK(ns[0] == 42 && ns[1] == 3 && !strcmp(ss[0], "driver") && !strcmp(ss[1], "driver"), "%lld %lld",
        (long long)ns[0], (long long)ns[1]);
  CHECK(kl_pass_manager_set_option(pm, "my-pass", "bogus", "1") == KL_ERR);
  CHECK(diag_is(ctx, "<unknown>: error: pass 'my-pass' has no option 'bogus'\n"));
  CHECK(kl_pass_manager_set_option(pm, "my-pass", "n", "many") == KL_ERR);
  CHECK(diag_is(ctx,
                "<unknown>: error: invalid value 'many' for int option 'n' of pass 'my-pass' (expected an integer)\n"));
  CHECK(kl_pass_manager_set_option(pm, "dce", "anything", "1") == KL_OK); /* no dce entry: nothing to set */
  kl_pass_manager_destroy(pm);
  /* pipeline entries through the one parser: quoted braces and commas, no diagnostics on errors */
  const kl_pass_info *infos[4];
  CHECK(kl_pipeline_passes(ctx, "cse, my-pass{s=\"a,}{b\"} ,dce", infos, 4) == 3);
  CHECK(infos[0] == kl_lookup_pass(ctx, "cse") && infos[1] == kl_lookup_pass(ctx, "my-pass") &&
        infos[2] == kl_lookup_pass(ctx, "dce"));
  CHECK(kl_pipeline_passes(ctx, "cse,dce", NULL, 0) == 2 && kl_pipeline_passes(ctx, "", NULL, 0) == 0);
  CHECK(kl_pipeline_passes(ctx, "cse,nosuch", infos, 4) == -1 &&
        kl_pipeline_passes(ctx, "my-pass{n=x}", infos, 4) == -1);
  CHECK(kl_diag_error_count(ctx) == 0);
  CHECK(kl_pass_selected("all", "cse") && kl_pass_selected("dce, cse", "cse") && kl_pass_selected("cse", "cse"));
  CHECK(!kl_pass_selected("csex,dce", "cse") && !kl_pass_selected(NULL, "cse") && !kl_pass_selected("", "cse"));
  kl_ctx_destroy(ctx);
  printf("after-pass observer, driver options, pipeline entries ok\n");
}

static void test_timing(void) {
  kl_ctx *ctx = kl_test_ctx();
  fixture f = setup(ctx, 0);
  push(&f, f.b, "func.return", 0, NULL, 0, 0);
  kl_pass_manager *pm = kl_pass_manager_create(ctx);
  char *t0 = kl_pass_manager_timing(pm);
  CHECK(!strcmp(t0, "(verifier)  0.000 ms\n(total)     0.000 ms\n")); /* nothing ran yet */
  free(t0);
  CHECK(kl_pass_manager_add_pipeline(pm, "canonicalize,cse,dce,cse") == KL_OK);
  kl_pass_manager_add_callback(pm, NULL, record, "cb");
  CHECK(kl_pass_manager_run(pm, f.m) == KL_OK);
  char *t = kl_pass_manager_timing(pm);
  const char *order[] = { "canonicalize ", "cse ", "dce ", "cse ", "callback ", "(verifier) ", "(total) " };
  const char *p = t;
  int lines = 0;
  for (int i = 0; i < 7; i++) {
    CHECK(!strncmp(p, order[i], strlen(order[i])));
    const char *nl = strchr(p, '\n');
    CHECK(nl && nl - p > 4 && !strncmp(nl - 3, " ms", 3));
    if (!nl) break;
    p = nl + 1;
    lines++;
  }
  CHECK(lines == 7 && *p == 0);
  free(t);
  kl_pass_manager_destroy(pm);
  kl_ctx_destroy(ctx);
  printf("timing report ok\n");
}

/* ---- the built-in passes ---- */
static const kl_opdef isolated_def = { .name = "test.isolated",
                                       .traits = KL_TRAIT_ISOLATED | KL_TRAIT_NO_TERMINATOR,
                                       .max_operands = 0,
                                       .max_results = 0,
                                       .num_regions = 1 };
static kl_block *region_block(kl_op *op) {
  kl_block *b = kl_block_create(op->ctx);
  kl_region_push_block(&op->regions[0], b);
  return b;
}

static void test_cse(void) {
  kl_ctx *ctx = kl_test_ctx();
  kl_register_op(ctx, &isolated_def);
  fixture f = setup(ctx, 2);
  kl_value *x = f.b->args[0], *y = f.b->args[1];
  kl_value *a1 = bin_in(&f, f.b, "arith.addi", x, y);
  kl_value *a2 = bin_in(&f, f.b, "arith.addi", y, x); /* commutative: same as a1 */
  kl_value *s1 = bin_in(&f, f.b, "arith.subi", x, y);
  kl_value *s2 = bin_in(&f, f.b, "arith.subi", y, x); /* not commutative: kept */
  kl_value *c1 = cst_in(&f, f.b, 1);
  kl_value *c1b = cst_in(&f, f.b, 1);
  kl_op *eff1 = push(&f, f.b, "test.effect", 0, NULL, 1, 0); /* not pure: never merged */
  kl_op *eff2 = push(&f, f.b, "test.effect", 0, NULL, 1, 0);
  /* a non-isolated region sees the enclosing block: its copy of a1 goes */
  kl_op *reg = push(&f, f.b, "test.region", 0, NULL, 0, 1);
  kl_block *rb = region_block(reg);
  kl_value *a3 = bin_in(&f, rb, "arith.addi", x, y);
  kl_value *in1 = bin_in(&f, rb, "arith.muli", a3, c1b);
  push(&f, rb, "test.use", 1, &in1, 0, 0);
  /* a second block of the same region does not see the first block */
  kl_block *rb2 = kl_block_create(ctx);
  kl_region_push_block(&reg->regions[0], rb2);
  kl_value *in2 = bin_in(&f, rb2, "arith.muli", x, x);
  push(&f, rb2, "test.use", 1, &in2, 0, 0);
  kl_block *rb3 = kl_block_create(ctx);
  kl_region_push_block(&reg->regions[0], rb3);
  kl_value *in3 = bin_in(&f, rb3, "arith.muli", x, x);
  push(&f, rb3, "test.use", 1, &in3, 0, 0);
  /* the region's ops are not visible after it */
  kl_value *after = bin_in(&f, f.b, "arith.muli", a1, c1);
  kl_value *uses[] = { a1, a2, s1, s2, c1, c1b, kl_op_result(eff1, 0), kl_op_result(eff2, 0), after };
  push(&f, f.b, "test.use", 9, uses, 0, 0);
  push(&f, f.b, "func.return", 0, NULL, 0, 0);
  /* an isolated op in the module body does not see the module's values */
  kl_block *mb = kl_module_body(f.m);
  fixture mf = f;
  mf.b = mb;
  kl_value *top = cst_in(&mf, mb, 5);
  kl_op *iso = push(&mf, mb, "test.isolated", 0, NULL, 0, 1);
  kl_block *ib = region_block(iso);
  kl_value *inner5 = cst_in(&mf, ib, 5);
  kl_value *inner5b = cst_in(&mf, ib, 5);
  kl_value *iv[] = { inner5, inner5b };
  push(&mf, ib, "test.use", 2, iv, 0, 0);
  push(&mf, mb, "test.use", 1, &top, 0, 0);
  CHECK(kl_verify(f.m) == KL_OK);
  kl_pass_manager *pm = kl_pass_manager_create(ctx);
  CHECK(kl_pass_manager_add_pipeline(pm, "cse") == KL_OK);
  CHECK(kl_pass_manager_run(pm, f.m) == KL_OK);
  kl_pass_manager_destroy(pm);
  kl_op *u = f.b->last->prev; /* the test.use before the return */
  CHECK(!strcmp(u->name, "test.use"));
  CHECK(u->opnds[1].value == a1); /* y + x merged into x + y */
  CHECK(u->opnds[2].value == s1 && u->opnds[3].value == s2);
  CHECK(u->opnds[5].value == c1);                /* equal constants merged */
  CHECK(u->opnds[6].value != u->opnds[7].value); /* effects kept */
  CHECK(count_named(reg, "arith.addi") == 0);    /* inner copy of x + y went */
  CHECK(rb->first->opnds[0].value == a1 && rb->first->opnds[1].value == c1);
  CHECK(count_named(reg, "arith.muli") == 3);     /* one per block: blocks do not see each other */
  CHECK(u->opnds[8].value == after);              /* not merged with the region's muli */
  CHECK(count_named(iso, "arith.constant") == 1); /* merged inside the isolated op ... */
  CHECK(ib->first->results[0].first_use != NULL && ib->first->results[0].first_use->user->block == ib);
  CHECK(kl_op_is_ancestor(iso, ib->last->opnds[0].value->def) && ib->last->opnds[0].value == ib->last->opnds[1].value);
  CHECK(kl_value_constant(top) && top->first_use); /* ... but not with the module's constant */
  CHECK(kl_verify(f.m) == KL_OK);
  kl_ctx_destroy(ctx);
  printf("cse ok\n");
}

static void test_dce(void) {
  kl_ctx *ctx = kl_test_ctx();
  fixture f = setup(ctx, 2);
  kl_value *x = f.b->args[0], *y = f.b->args[1];
  kl_value *a = bin_in(&f, f.b, "arith.addi", x, y);
  kl_value *b = bin_in(&f, f.b, "arith.muli", a, a);
  bin_in(&f, f.b, "arith.subi", b, x); /* dead chain: subi, muli, addi */
  kl_value *kept = bin_in(&f, f.b, "arith.addi", y, y);
  push(&f, f.b, "test.effect", 1, &kept, 0, 0);
  kl_op *reg = push(&f, f.b, "test.region", 0, NULL, 0, 1);
  kl_block *rb = region_block(reg);
  kl_value *c = cst_in(&f, rb, 3);
  bin_in(&f, rb, "arith.muli", c, x);         /* dead inside a region */
  push(&f, rb, "test.effect", 0, NULL, 1, 0); /* unused but not pure: kept */
  cst_in(&f, f.b, 4);
  push(&f, f.b, "func.return", 0, NULL, 0, 0);
  kl_pass_manager *pm = kl_pass_manager_create(ctx);
  CHECK(kl_pass_manager_add_pipeline(pm, "dce") == KL_OK);
  CHECK(kl_pass_manager_run(pm, f.m) == KL_OK);
  kl_pass_manager_destroy(pm);
  CHECK(count_named(f.m, "arith.subi") == 0 && count_named(f.m, "arith.muli") == 0);
  CHECK(count_named(f.m, "arith.addi") == 1 && count_named(f.m, "arith.constant") == 0);
  CHECK(count_named(f.m, "test.effect") == 2 && count_named(f.m, "test.region") == 1 &&
        count_named(f.m, "func.func") == 1);
  CHECK(kl_verify(f.m) == KL_OK);
  CHECK(kl_dce(f.m) == KL_OK && count_named(f.m, "test.effect") == 2); /* idempotent */
  kl_ctx_destroy(ctx);
  printf("dce ok\n");
}

static void test_canonicalize_pass(void) {
  kl_ctx *ctx = kl_test_ctx();
  fixture f = setup(ctx, 1);
  kl_value *x = f.b->args[0];
  kl_value *v = bin_in(&f, f.b, "arith.addi", cst_in(&f, f.b, 2), x); /* 2 + x */
  v = bin_in(&f, f.b, "arith.addi", v, cst_in(&f, f.b, 3));           /* + 3 */
  v = bin_in(&f, f.b, "arith.muli", v, cst_in(&f, f.b, 1));           /* * 1 */
  kl_value *w = bin_in(&f, f.b, "arith.muli", cst_in(&f, f.b, 6), cst_in(&f, f.b, 7));
  kl_value *rv[] = { v, w };
  push(&f, f.b, "func.return", 2, rv, 0, 0);
  kl_pass_manager *pm = kl_pass_manager_create(ctx);
  CHECK(kl_pass_manager_add_pipeline(pm, "canonicalize{max-iterations=4}") == KL_OK);
  CHECK(kl_pass_manager_run(pm, f.m) == KL_OK);
  kl_op *r = kl_block_terminator(f.b);
  kl_op *add = r->opnds[0].value->def;
  CHECK(add && !strcmp(add->name, "arith.addi") && add->opnds[0].value == x &&
        kl_value_constant(add->opnds[1].value)->i == 5);
  CHECK(kl_value_constant(r->opnds[1].value)->i == 42);
  CHECK(count_named(f.m, "arith.addi") == 1 && count_named(f.m, "arith.muli") == 0 &&
        count_named(f.m, "arith.constant") == 2);
  kl_pass_manager_destroy(pm);
  kl_ctx_destroy(ctx);
  printf("canonicalize pass ok\n");
}

/* A registered "canonical." pattern is used by canonicalize; other names are not. */
static bool tag_fn(const kl_pattern *p, kl_op *op, kl_rewriter *rw) {
  if (kl_op_attr(op, p->user)) return false;
  kl_rewriter_set_attr(rw, op, p->user, kl_attr_unit(kl_rewriter_ctx(rw)));
  return true;
}
static bool flip_fn(const kl_pattern *p, kl_op *op, kl_rewriter *rw) {
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_rewriter_set_attr(rw, op, "flip", kl_attr_bool(ctx, !kl_op_attr(op, "flip") || !kl_op_attr(op, "flip")->i));
  return true;
}
static void test_canonical_registry(void) {
  kl_ctx *ctx = kl_test_ctx();
  kl_pattern yes = { "test.op", 1, "canonical.test.tag", tag_fn, "tagged" };
  kl_pattern no = { "test.op", 1, "other.test.tag", tag_fn, "other" };
  kl_register_pattern(ctx, &yes);
  kl_register_pattern(ctx, &no);
  fixture f = setup(ctx, 0);
  kl_op *op = push(&f, f.b, "test.op", 0, NULL, 0, 0);
  push(&f, f.b, "func.return", 0, NULL, 0, 0);
  CHECK(kl_canonicalize(f.m) == KL_OK);
  CHECK(kl_op_attr(op, "tagged") && !kl_op_attr(op, "other"));
  /* non-convergence inside canonicalize fails the pipeline and names the pattern */
  kl_pattern loop = { "test.op", 5, "canonical.test.flip", flip_fn, NULL };
  kl_register_pattern(ctx, &loop);
  kl_pass_manager *pm = kl_pass_manager_create(ctx);
  CHECK(kl_pass_manager_add_pipeline(pm, "canonicalize{max-rewrites=30},dce") == KL_OK);
  CHECK(kl_pass_manager_run(pm, f.m) == KL_ERR);
  CHECK(diag_is(ctx,
                "t.kir:3:3: error: pattern rewriting did not converge after 30 rewrites; last pattern applied: "
                "'canonical.test.flip' on 'test.op'\nt.kir:1:1: error: pass 'canonicalize' failed\n"));
  kl_pass_manager_destroy(pm);
  kl_ctx_destroy(ctx);
  printf("canonical patterns from the registry ok\n");
}

int main(void) {
  test_registry();
  test_options();
  test_option_conversions();
  test_bad_pipelines();
  test_verify_after_pass();
  test_print_ir_after();
  test_observer_and_options();
  test_timing();
  test_cse();
  test_dce();
  test_canonicalize_pass();
  test_canonical_registry();
  return check_summary("test_pass");
}
