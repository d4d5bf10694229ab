/* test_rewrite.c — the rewriter and its drivers: C patterns, benefit order,
 * non-convergence diagnostics (rewrite cap and iteration cap), erased ops never
 * revisited, folding of constant chains, dead pure-op removal, the walk driver,
 * pattern failures, KILN_DEBUG=rewrite logging, the named pattern registry, saved
 * insertion points (erasures in between) and the arith canonical patterns. */
#include "core/rewrite.h"
#include "ctx_test_util.h"
#include "core/pass.h"
#include "core/print.h"
#include "core/verify.h"
#include "core/dialect_builtin.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ir_test_util.h"

/* ---- IR building helpers ---- */
typedef struct {
  kl_ctx *ctx;
  kl_op *m;
  kl_block *b;
  const kl_type *i32;
} fixture;
static int line_no = 2;

static fixture setup(int nargs) {
  fixture f;
  line_no = 2;
  f.ctx = kl_test_ctx();
  f.m = kl_module_create(f.ctx, kl_loc_make(f.ctx, "t.kir", 1, 1));
  f.i32 = kl_type_i32(f.ctx);
  kl_named_attr a = { "sym_name", kl_attr_str(f.ctx, "f") };
  kl_op *fn = kl_op_create(f.ctx, "func.func", kl_loc_make(f.ctx, "t.kir", 1, 1), 0, NULL, 0, NULL, 1, &a, 1);
  f.b = kl_block_create(f.ctx);
  for (int i = 0; i < nargs; i++) kl_block_add_arg(f.ctx, f.b, f.i32);
  kl_region_push_block(&fn->regions[0], f.b);
  kl_block_push_op(kl_module_body(f.m), fn);
  return f;
}
static kl_op *add_op(fixture *f, kl_block *b, const char *name, int n, kl_value **opnds, int nres) {
  const kl_type *ts[4] = { f->i32, f->i32, f->i32, f->i32 };
  kl_op *op = kl_op_create(f->ctx, name, kl_loc_make(f->ctx, "t.kir", line_no++, 3), n, opnds, nres, ts, 0, NULL, 0);
  kl_block_push_op(b, op);
  return op;
}
static kl_value *cst(fixture *f, int64_t v) {
  kl_op *c = kl_build_constant(f->ctx, kl_loc_make(f->ctx, "t.kir", line_no++, 3), kl_attr_int_typed(f->ctx, v, f->i32),
                               f->i32);
  kl_block_push_op(f->b, c);
  return kl_op_result(c, 0);
}
static kl_value *bin(fixture *f, const char *name, kl_value *a, kl_value *b) {
  kl_value *o[] = { a, b };
  return kl_op_result(add_op(f, f->b, name, 2, o, 1), 0);
}
static kl_op *ret(fixture *f, int n, kl_value **vals) { return add_op(f, f->b, "func.return", n, vals, 0); }

/* Replaces op by a new op named pattern->user (a string), same operands/results. */
static bool rename_fn(const kl_pattern *p, kl_op *op, kl_rewriter *rw) {
  kl_value **o = kl_xmalloc((op->nopnds + 1) * sizeof *o);
  const kl_type **t = kl_xmalloc((op->nresults + 1) * sizeof *t);
  for (int i = 0; i < op->nopnds; i++) o[i] = op->opnds[i].value;
  for (int i = 0; i < op->nresults; i++) t[i] = op->results[i].type;
  kl_op *n = kl_op_create(kl_rewriter_ctx(rw), (const char *)p->user, op->loc, op->nopnds, o, op->nresults, t,
                          op->nattrs, op->attrs, 0);
  kl_rewriter_replace_op_with(rw, op, n);
  free(o);
  free(t);
  return true;
}

static void test_rename(void) {
  fixture f = setup(2);
  kl_value *x = bin(&f, "test.foo", f.b->args[0], f.b->args[1]);
  kl_value *y = bin(&f, "test.foo", x, f.b->args[1]);
  ret(&f, 1, &y);
  kl_pattern p = { "test.foo", 1, "foo-to-bar", rename_fn, (void *)"test.bar" };
  const kl_pattern *ps[] = { &p };
  CHECK(kl_apply_patterns_greedy(f.m, ps, 1, NULL) == KL_OK);
  CHECK(count_named(f.m, "test.foo") == 0);
  CHECK(count_named(f.m, "test.bar") == 2);
  kl_op *r = kl_block_terminator(f.b);
  CHECK(r && !strcmp(r->opnds[0].value->def->name, "test.bar"));
  CHECK(!strcmp(r->opnds[0].value->def->opnds[0].value->def->name, "test.bar"));
  CHECK(kl_verify(f.m) == KL_OK);
  kl_ctx_destroy(f.ctx);
  printf("C pattern test.foo -> test.bar ok\n");
}

/* Like rename_fn, for test.foo only (for root-NULL patterns). */
static bool rename_foo_fn(const kl_pattern *p, kl_op *op, kl_rewriter *rw) {
  if (strcmp(op->name, "test.foo")) return kl_rewriter_notify_no_match(rw, "not test.foo");
  return rename_fn(p, op, rw);
}

static void test_benefit(void) {
  for (int order = 0; order < 2; order++) {
    fixture f = setup(1);
    kl_value *x = kl_op_result(add_op(&f, f.b, "test.foo", 1, f.b->args, 1), 0);
    ret(&f, 1, &x);
    kl_pattern lo = { "test.foo", 1, "low", rename_fn, (void *)"test.low" };
    kl_pattern hi = { "test.foo", 5, "high", rename_fn, (void *)"test.high" };
    kl_pattern any = { NULL, 3, "any", rename_foo_fn, (void *)"test.any" }; /* root NULL matches any op */
    const kl_pattern *ps0[] = { &lo, &any, &hi }, *ps1[] = { &hi, &lo, &any };
    CHECK(kl_apply_patterns_greedy(f.m, order ? ps1 : ps0, 3, NULL) == KL_OK);
    CHECK(count_named(f.m, "test.high") == 1);
    CHECK(count_named(f.m, "test.low") == 0 && count_named(f.m, "test.any") == 0);
    kl_ctx_destroy(f.ctx);
  }
  /* equal benefit: the earlier pattern in the list wins */
  fixture f = setup(1);
  kl_value *x = kl_op_result(add_op(&f, f.b, "test.foo", 1, f.b->args, 1), 0);
  ret(&f, 1, &x);
  kl_pattern a = { "test.foo", 2, "a", rename_fn, (void *)"test.a1" };
  kl_pattern b = { "test.foo", 2, "b", rename_fn, (void *)"test.b1" };
  const kl_pattern *ps[] = { &b, &a };
  CHECK(kl_apply_patterns_greedy(f.m, ps, 2, NULL) == KL_OK);
  CHECK(count_named(f.m, "test.b1") == 1 && count_named(f.m, "test.a1") == 0);
  kl_ctx_destroy(f.ctx);
  printf("benefit ordering ok\n");
}

/* Inserts a copy of op without telling the driver, then erases op through it. */
static bool sneaky_fn(const kl_pattern *p, kl_op *op, kl_rewriter *rw) {
  kl_op *c = kl_op_create(kl_rewriter_ctx(rw), op->name, op->loc, 0, NULL, 0, NULL, 0, NULL, 0);
  kl_op_insert_before(op, c);
  kl_rewriter_erase_op(rw, op);
  return true;
}
static bool lying_fn(const kl_pattern *p, kl_op *op, kl_rewriter *rw) { return true; }

static void test_non_convergence(void) {
  /* a -> b -> a -> ... : the rewrite cap names the last pattern */
  fixture f = setup(1);
  kl_value *x = kl_op_result(add_op(&f, f.b, "test.a", 1, f.b->args, 1), 0);
  ret(&f, 1, &x);
  kl_pattern ab = { "test.a", 1, "a-to-b", rename_fn, (void *)"test.b" };
  kl_pattern ba = { "test.b", 1, "b-to-a", rename_fn, (void *)"test.a" };
  const kl_pattern *ps[] = { &ab, &ba };
  kl_greedy_config cfg = kl_greedy_default();
  cfg.max_rewrites = 50;
  CHECK(kl_apply_patterns_greedy(f.m, ps, 2, &cfg) == KL_ERR);
  CHECK(diag_has(
      f.ctx,
      "error: pattern rewriting did not converge after 50 rewrites; last pattern applied: 'a-to-b' on 'test.a'"));
  CHECK(kl_verify(f.m) == KL_OK); /* the IR stays valid */
  /* default cap (100000) too */
  CHECK(kl_apply_patterns_greedy(f.m, ps, 2, NULL) == KL_ERR);
  CHECK(diag_has(f.ctx, "did not converge after 100000 rewrites; last pattern applied: 'b-to-a' on 'test.b'"));
  CHECK(kl_verify(f.m) == KL_OK);
  kl_ctx_destroy(f.ctx);

  /* a pattern claiming a change it did not make also never converges */
  f = setup(0);
  add_op(&f, f.b, "test.x", 0, NULL, 0);
  ret(&f, 0, NULL);
  kl_pattern liar = { "test.x", 1, "liar", lying_fn, NULL };
  const kl_pattern *pl[] = { &liar };
  cfg.max_rewrites = 7;
  CHECK(kl_apply_patterns_greedy(f.m, pl, 1, &cfg) == KL_ERR);
  CHECK(diag_has(f.ctx,
                 "t.kir:2:3: error: pattern rewriting did not converge after 7 rewrites; last pattern applied: 'liar' "
                 "on 'test.x'"));
  kl_ctx_destroy(f.ctx);

  /* changes the driver is not told about surface one round later: the round cap */
  f = setup(0);
  add_op(&f, f.b, "test.x", 0, NULL, 0);
  ret(&f, 0, NULL);
  kl_pattern sn = { "test.x", 1, "sneaky", sneaky_fn, NULL };
  const kl_pattern *pn[] = { &sn };
  cfg = kl_greedy_default();
  cfg.max_iterations = 3;
  CHECK(kl_apply_patterns_greedy(f.m, pn, 1, &cfg) == KL_ERR);
  CHECK(diag_has(
      f.ctx, "error: pattern rewriting did not converge in 3 iterations; last pattern applied: 'sneaky' on 'test.x'"));
  CHECK(count_named(f.m, "test.x") == 1);
  kl_ctx_destroy(f.ctx);
  printf("non-convergence diagnostics ok\n");
}

/* test.first erases the op after it (and sets an attribute on itself, once). */
static bool erase_next_fn(const kl_pattern *p, kl_op *op, kl_rewriter *rw) {
  if (kl_op_attr(op, "done")) return kl_rewriter_notify_no_match(rw, "already done");
  kl_rewriter_erase_op(rw, op->next);
  kl_rewriter_set_attr(rw, op, "done", kl_attr_unit(kl_rewriter_ctx(rw)));
  return true;
}
static bool count_visit_fn(const kl_pattern *p, kl_op *op, kl_rewriter *rw) {
  ((int *)p->user)[0]++;
  return false;
}

static void test_erased_not_revisited(void) {
  for (int walk = 0; walk < 2; walk++) {
    fixture f = setup(0);
    add_op(&f, f.b, "test.first", 0, NULL, 0);
    kl_op *victim = kl_op_create(f.ctx, "test.victim", KL_LOC_UNKNOWN, 0, NULL, 1, &f.i32, 0, NULL, 1);
    kl_block *inner = kl_block_create(f.ctx);
    kl_region_push_block(&victim->regions[0], inner);
    add_op(&f, inner, "test.inner", 0, NULL, 0);
    kl_block_push_op(f.b, victim);
    add_op(&f, f.b, "test.after", 0, NULL, 0);
    ret(&f, 0, NULL);
    int victim_visits = 0, inner_visits = 0, after_visits = 0;
    kl_pattern pf = { "test.first", 1, "erase-next", erase_next_fn, NULL };
    kl_pattern pv = { "test.victim", 1, "count-victim", count_visit_fn, &victim_visits };
    kl_pattern pi = { "test.inner", 1, "count-inner", count_visit_fn, &inner_visits };
    kl_pattern pa = { "test.after", 1, "count-after", count_visit_fn, &after_visits };
    const kl_pattern *ps[] = { &pv, &pi, &pa, &pf };
    kl_status st = walk ? kl_apply_patterns_walk(f.m, ps, 4) : kl_apply_patterns_greedy(f.m, ps, 4, NULL);
    CHECK(st == KL_OK);
    CHECK(victim_visits == 0);
    CHECK(inner_visits == 0); /* post-order: test.first comes before the victim's region */
    CHECK(after_visits >= 1);
    CHECK(count_named(f.m, "test.victim") == 0 && count_named(f.m, "test.inner") == 0);
    CHECK(kl_verify(f.m) == KL_OK);
    kl_ctx_destroy(f.ctx);
  }
  printf("erased ops never revisited ok\n");
}

static void test_fold_chain(void) {
  fixture f = setup(1);
  kl_value *c1 = cst(&f, 1), *c2 = cst(&f, 2), *c4 = cst(&f, 4);
  kl_value *a = bin(&f, "arith.addi", c1, c2);                                      /* 3 */
  kl_value *m = bin(&f, "arith.muli", a, c4);                                       /* 12 */
  kl_value *s = bin(&f, "arith.subi", m, c1);                                       /* 11 */
  kl_value *z = bin(&f, "arith.addi", f.b->args[0], bin(&f, "arith.subi", c2, c2)); /* x + 0 -> x */
  bin(&f, "arith.muli", c4, c4);                                                    /* dead */
  kl_value *rv[] = { s, z };
  ret(&f, 2, rv);
  CHECK(kl_apply_patterns_greedy(f.m, NULL, 0, NULL) == KL_OK);
  kl_op *r = kl_block_terminator(f.b);
  CHECK(r != NULL);
  const kl_attr *v = kl_value_constant(r->opnds[0].value);
  CHECK(v && v->kind == KL_AT_INT && v->i == 11 && v->type == f.i32);
  CHECK(r->opnds[1].value == f.b->args[0]);
  CHECK(count_named(f.m, "arith.constant") == 1);
  CHECK(count_named(f.m, "arith.addi") == 0 && count_named(f.m, "arith.muli") == 0 &&
        count_named(f.m, "arith.subi") == 0);
  CHECK(kl_verify(f.m) == KL_OK);
  kl_ctx_destroy(f.ctx);

  /* float chain, and fold off / dead removal off keep the IR as is */
  f = setup(0);
  const kl_type *f32 = kl_type_f32(f.ctx);
  kl_op *fa = kl_build_constant(f.ctx, KL_LOC_UNKNOWN, kl_attr_float_typed(f.ctx, 1.5, f32), f32);
  kl_op *fb = kl_build_constant(f.ctx, KL_LOC_UNKNOWN, kl_attr_float_typed(f.ctx, 2.25, f32), f32);
  kl_block_push_op(f.b, fa);
  kl_block_push_op(f.b, fb);
  kl_value *ab[] = { kl_op_result(fa, 0), kl_op_result(fb, 0) };
  kl_op *sum = kl_op_create(f.ctx, "arith.addf", KL_LOC_UNKNOWN, 2, ab, 1, &f32, 0, NULL, 0);
  kl_block_push_op(f.b, sum);
  kl_value *sv = kl_op_result(sum, 0);
  ret(&f, 1, &sv);
  kl_greedy_config off = kl_greedy_default();
  off.fold = false;
  off.remove_dead = false;
  CHECK(kl_apply_patterns_greedy(f.m, NULL, 0, &off) == KL_OK);
  CHECK(count_named(f.m, "arith.addf") == 1 && count_named(f.m, "arith.constant") == 2);
  CHECK(kl_apply_patterns_greedy(f.m, NULL, 0, NULL) == KL_OK);
  const kl_attr *fv = kl_value_constant(kl_block_terminator(f.b)->opnds[0].value);
  CHECK(fv && fv->kind == KL_AT_FLOAT && fv->f == 3.75 && fv->type == f32);
  CHECK(count_named(f.m, "arith.constant") == 1 && count_named(f.m, "arith.addf") == 0);
  CHECK(kl_verify(f.m) == KL_OK);
  kl_ctx_destroy(f.ctx);
  printf("folding of constant chains ok\n");
}

static void test_dead_removal(void) {
  fixture f = setup(2);
  kl_value *a = bin(&f, "arith.addi", f.b->args[0], f.b->args[1]);
  kl_value *b = bin(&f, "arith.muli", a, a);
  bin(&f, "arith.subi", b, a);              /* dead chain: subi -> muli -> addi */
  add_op(&f, f.b, "test.effect", 1, &a, 0); /* unregistered: has effects, keeps addi */
  ret(&f, 0, NULL);
  kl_greedy_config cfg = kl_greedy_default();
  cfg.fold = false;
  CHECK(kl_apply_patterns_greedy(f.m, NULL, 0, &cfg) == KL_OK);
  CHECK(count_named(f.m, "arith.subi") == 0 && count_named(f.m, "arith.muli") == 0);
  CHECK(count_named(f.m, "arith.addi") == 1 && count_named(f.m, "test.effect") == 1);
  CHECK(kl_verify(f.m) == KL_OK);
  kl_ctx_destroy(f.ctx);
  printf("dead pure-op removal ok\n");
}

typedef struct {
  char names[16][32];
  int n;
} visit_log;
static bool log_fn(const kl_pattern *p, kl_op *op, kl_rewriter *rw) {
  visit_log *l = p->user;
  if (l->n < 16) snprintf(l->names[l->n++], 32, "%s", op->name);
  return false;
}
/* test.foo -> test.foo (a fresh op): the walk applies it once per original op. */
static bool refresh_fn(const kl_pattern *p, kl_op *op, kl_rewriter *rw) {
  ((int *)p->user)[0]++;
  kl_op *n = kl_rewriter_create(rw, op->name, op->loc, 0, NULL, op->nresults,
                                (const kl_type *[]){ op->nresults ? op->results[0].type : NULL }, 0, NULL, 0);
  kl_rewriter_replace_op_with(rw, op, n);
  return true;
}

static void test_walk(void) {
  fixture f = setup(0);
  kl_op *outer = kl_op_create(f.ctx, "test.outer", KL_LOC_UNKNOWN, 0, NULL, 0, NULL, 0, NULL, 1);
  kl_block *inner = kl_block_create(f.ctx);
  kl_region_push_block(&outer->regions[0], inner);
  add_op(&f, inner, "test.in1", 0, NULL, 0);
  add_op(&f, inner, "test.in2", 0, NULL, 0);
  add_op(&f, f.b, "test.before", 0, NULL, 0);
  kl_block_push_op(f.b, outer);
  ret(&f, 0, NULL);
  visit_log l = { 0 };
  kl_pattern any = { NULL, 1, "log", log_fn, &l };
  const kl_pattern *ps[] = { &any };
  CHECK(kl_apply_patterns_walk(f.m, ps, 1) == KL_OK);
  /* post-order, root (module) excluded, each op once */
  const char *want[] = { "test.before", "test.in1", "test.in2", "test.outer", "func.return", "func.func" };
  CHECK(l.n == 6);
  for (int i = 0; i < 6 && i < l.n; i++) CHECK(!strcmp(l.names[i], want[i]));
  kl_ctx_destroy(f.ctx);

  /* new ops are not visited: each original test.foo is refreshed exactly once */
  f = setup(0);
  for (int i = 0; i < 3; i++) add_op(&f, f.b, "test.foo", 0, NULL, 1);
  ret(&f, 0, NULL);
  int n = 0;
  kl_pattern rp = { "test.foo", 1, "refresh", refresh_fn, &n };
  const kl_pattern *pr[] = { &rp };
  CHECK(kl_apply_patterns_walk(f.m, pr, 1) == KL_OK);
  CHECK(n == 3);
  CHECK(count_named(f.m, "test.foo") == 3);
  /* the same pattern under the greedy driver never converges */
  kl_greedy_config cfg = kl_greedy_default();
  cfg.max_rewrites = 20;
  CHECK(kl_apply_patterns_greedy(f.m, pr, 1, &cfg) == KL_ERR);
  CHECK(diag_has(f.ctx, "last pattern applied: 'refresh' on 'test.foo'"));
  kl_ctx_destroy(f.ctx);
  printf("walk driver ok\n");
}

static bool failing_fn(const kl_pattern *p, kl_op *op, kl_rewriter *rw) {
  kl_rewriter_fail(rw, op->loc, "cannot lower '%s': unsupported", op->name);
  return false;
}
static void test_fail(void) {
  for (int walk = 0; walk < 2; walk++) {
    fixture f = setup(0);
    add_op(&f, f.b, "test.bad", 0, NULL, 0);
    ret(&f, 0, NULL);
    kl_pattern p = { "test.bad", 1, "lower-bad", failing_fn, NULL };
    const kl_pattern *ps[] = { &p };
    kl_status st = walk ? kl_apply_patterns_walk(f.m, ps, 1) : kl_apply_patterns_greedy(f.m, ps, 1, NULL);
    CHECK(st == KL_ERR);
    char *d = kl_diag_take(f.ctx);
    CHECK(strstr(d, "t.kir:2:3: error: cannot lower 'test.bad': unsupported\n") != NULL);
    CHECK(strstr(d, "t.kir:2:3: note: while applying pattern 'lower-bad' to 'test.bad'") != NULL);
    free(d);
    CHECK(kl_verify(f.m) == KL_OK);
    kl_ctx_destroy(f.ctx);
  }
  printf("pattern failure reporting ok\n");
}

static bool never_fn(const kl_pattern *p, kl_op *op, kl_rewriter *rw) {
  return kl_rewriter_notify_no_match(rw, "operand %d is not a constant", 0);
}
static void run_debug(void *arg) {
  fixture *f = arg;
  kl_pattern a = { "test.foo", 2, "never", never_fn, NULL };
  kl_pattern b = { "test.foo", 1, "foo-to-bar", rename_fn, (void *)"test.bar" };
  const kl_pattern *ps[] = { &a, &b };
  kl_apply_patterns_greedy(f->m, ps, 2, NULL);
}
static void test_debug_log(void) {
  fixture f = setup(2);
  kl_value *s = bin(&f, "arith.addi", f.b->args[0], f.b->args[1]);
  bin(&f, "test.foo", s, s);
  bin(&f, "arith.muli", s, s); /* dead */
  ret(&f, 0, NULL);
  setenv("KILN_DEBUG", "parse,rewrite", 1);
  char *log = capture_stderr(run_debug, &f);
  unsetenv("KILN_DEBUG");
  CHECK(strstr(log, "[rewrite] 'test.foo' at t.kir:3:3 -> never -> not applied (operand 0 is not a constant)\n") !=
        NULL);
  CHECK(strstr(log, "[rewrite] 'test.foo' at t.kir:3:3 -> foo-to-bar -> applied\n") != NULL);
  CHECK(strstr(log, "[rewrite] 'arith.muli' at t.kir:4:3 -> dead-op removal -> erased\n") != NULL);
  if (failures) fprintf(stderr, "log was:\n%s", log);
  free(log);
  /* without KILN_DEBUG nothing is logged */
  kl_op *bar = NULL;
  for (kl_op *o = f.b->first; o; o = o->next)
    if (!strcmp(o->name, "test.bar")) bar = o;
  CHECK(bar != NULL);
  log = capture_stderr(run_debug, &f);
  CHECK(!strcmp(log, ""));
  free(log);
  kl_ctx_destroy(f.ctx);
  printf("KILN_DEBUG=rewrite logging ok\n");
}

static void test_registry(void) {
  kl_ctx *ctx = kl_test_ctx(), *ctx2 = kl_test_ctx();
  int base = kl_pattern_count(ctx);
  CHECK(base >= 5); /* the arith canonical patterns */
  CHECK(kl_lookup_pattern(ctx, "canonical.arith.reassociate-constants") != NULL);
  CHECK(kl_lookup_pattern(ctx, "canonical.commutative-constant-rhs")->root == NULL);
  char name[32];
  strcpy(name, "test.rename");
  kl_pattern p = { "test.foo", 3, name, rename_fn, (void *)"test.bar" };
  kl_register_pattern(ctx, &p);
  strcpy(name, "clobbered"); /* the registry keeps its own copy of the name */
  const kl_pattern *q = kl_lookup_pattern(ctx, "test.rename");
  CHECK(q && q->benefit == 3 && !strcmp(q->root, "test.foo") && q->fn == rename_fn);
  CHECK(kl_pattern_count(ctx) == base + 1);
  CHECK(kl_pattern_at(ctx, base) == q && kl_pattern_at(ctx, base + 1) == NULL && kl_pattern_at(ctx, -1) == NULL);
  kl_pattern p2 = { "test.foo", 7, "test.rename", rename_fn, (void *)"test.baz" };
  kl_register_pattern(ctx, &p2); /* same name replaces */
  CHECK(kl_pattern_count(ctx) == base + 1 && kl_lookup_pattern(ctx, "test.rename")->benefit == 7);
  CHECK(q->benefit == 3); /* an old pointer stays valid */
  CHECK(kl_lookup_pattern(ctx2, "test.rename") == NULL && kl_pattern_count(ctx2) == base);
  CHECK(kl_lookup_pattern(ctx, "nope") == NULL && kl_lookup_pattern(ctx, NULL) == NULL);
  for (int i = 0; i < 100; i++) { /* growth */
    char n[32];
    snprintf(n, sizeof n, "test.p%d", i);
    kl_pattern pi = { NULL, i, n, rename_fn, NULL };
    kl_register_pattern(ctx, &pi);
  }
  CHECK(kl_pattern_count(ctx) == base + 101 && kl_lookup_pattern(ctx, "test.p57")->benefit == 57);
  kl_ctx_destroy(ctx2);
  kl_ctx_destroy(ctx);
  printf("pattern registry ok\n");
}

static void test_standalone_rewriter(void) {
  fixture f = setup(2);
  kl_value *s = bin(&f, "arith.addi", f.b->args[0], f.b->args[1]);
  kl_op *r = ret(&f, 1, &s);
  kl_rewriter *rw = kl_rewriter_new(f.ctx);
  CHECK(kl_rewriter_ctx(rw) == f.ctx);
  /* no insertion point: a failure, not a crash */
  kl_op *lost = kl_rewriter_create(rw, "test.x", KL_LOC_UNKNOWN, 0, NULL, 0, NULL, 0, NULL, 0);
  CHECK(kl_rewriter_failed(rw) && lost->block == NULL);
  CHECK(diag_has(f.ctx, "no insertion point"));
  kl_rewriter_free(rw);
  rw = kl_rewriter_new(f.ctx);
  kl_rewriter_set_insertion_before(rw, r);
  kl_value *o[] = { s, f.b->args[0] };
  kl_op *m = kl_rewriter_create(rw, "arith.muli", KL_LOC_UNKNOWN, 2, o, 1, &f.i32, 0, NULL, 0);
  kl_rewriter_set_operand(rw, r, 0, kl_op_result(m, 0));
  CHECK(r->prev == m && r->opnds[0].value == kl_op_result(m, 0));
  kl_rewriter_set_insertion_after(rw, s->def);
  kl_op *c = kl_rewriter_insert(rw,
                                kl_build_constant(f.ctx, KL_LOC_UNKNOWN, kl_attr_int_typed(f.ctx, 5, f.i32), f.i32));
  CHECK(c->prev == s->def && c->next == m);
  kl_rewriter_replace_all_uses(rw, f.b->args[0], kl_op_result(c, 0));
  CHECK(m->opnds[1].value == kl_op_result(c, 0));
  CHECK(kl_verify(f.m) != KL_OK); /* addi now uses c before it is defined */
  free(kl_diag_take(f.ctx));
  kl_rewriter_move_before(rw, c, s->def);
  CHECK(kl_verify(f.m) == KL_OK);
  kl_rewriter_erase_op(rw, s->def); /* still used: refused with a diagnostic */
  CHECK(kl_rewriter_failed(rw) && diag_has(f.ctx, "cannot erase 'arith.addi': its results still have uses"));
  CHECK(count_named(f.m, "arith.addi") == 1);
  kl_rewriter_set_insertion_end(rw, f.b);
  CHECK(kl_verify(f.m) == KL_OK);
  kl_rewriter_free(rw);
  kl_ctx_destroy(f.ctx);
  printf("standalone rewriter ok\n");
}

/* Saved insertion points: restore sets the point again the way it was set (after an
 * op: after it where it is then); erasures through the rewriter in between move a saved
 * anchor past the erased op (before the op that followed it, or the end of its block),
 * applied in order; the rewriter's own point moves the same way. */
static kl_op *mk(kl_rewriter *rw, const char *name) {
  return kl_rewriter_create(rw, name, KL_LOC_UNKNOWN, 0, NULL, 0, NULL, 0, NULL, 0);
}
static void test_saved_insertion(void) {
  fixture f = setup(0);
  kl_op *a = add_op(&f, f.b, "test.a", 0, NULL, 0), *b = add_op(&f, f.b, "test.b", 0, NULL, 0);
  kl_op *c = add_op(&f, f.b, "test.c", 0, NULL, 0), *r = ret(&f, 0, NULL);
  kl_rewriter *rw = kl_rewriter_new(f.ctx);
  /* nothing set: restores "no insertion point" */
  kl_insertion_point none = kl_rewriter_save_insertion(rw);
  CHECK(none.kind == KL_IP_NONE);
  kl_rewriter_set_insertion_before(rw, b);
  kl_rewriter_restore_insertion(rw, none);
  kl_op *lost = mk(rw, "test.lost");
  CHECK(kl_rewriter_failed(rw) && lost->block == NULL);
  free(kl_diag_take(f.ctx));
  kl_rewriter_free(rw);
  rw = kl_rewriter_new(f.ctx);
  /* after an op: consecutive inserts keep their order ... */
  kl_rewriter_set_insertion_after(rw, a);
  kl_op *x1 = mk(rw, "test.x1"), *x2 = mk(rw, "test.x2");
  CHECK(a->next == x1 && x1->next == x2 && x2->next == b);
  /* ... and a restore re-applies "after a": the next insert goes right after a */
  kl_insertion_point after_a = kl_rewriter_save_insertion(rw);
  CHECK(after_a.kind == KL_IP_AFTER && after_a.anchor == a);
  kl_rewriter_set_insertion_end(rw, f.b);
  kl_op *e = mk(rw, "test.end");
  CHECK(r->next == e && f.b->last == e);
  kl_rewriter_restore_insertion(rw, after_a);
  kl_op *x0 = mk(rw, "test.x0");
  CHECK(a->next == x0 && x0->next == x1);
  /* before an op and end of a block restore as they were */
  kl_rewriter_set_insertion_before(rw, c);
  kl_insertion_point before_c = kl_rewriter_save_insertion(rw);
  kl_rewriter_set_insertion_end(rw, f.b);
  kl_insertion_point at_end = kl_rewriter_save_insertion(rw);
  kl_rewriter_restore_insertion(rw, before_c);
  kl_op *y = mk(rw, "test.y");
  CHECK(y->next == c);
  kl_rewriter_restore_insertion(rw, at_end);
  kl_op *z = mk(rw, "test.z");
  CHECK(f.b->last == z && z->prev == e);
  /* erase in between: the saved anchor c is erased -> before the op that followed it (r) */
  kl_rewriter_set_insertion_before(rw, c);
  before_c = kl_rewriter_save_insertion(rw);
  kl_rewriter_set_insertion_end(rw, f.b);
  kl_rewriter_erase_op(rw, c);
  CHECK(!kl_rewriter_failed(rw));
  kl_rewriter_restore_insertion(rw, before_c);
  kl_op *w = mk(rw, "test.w");
  CHECK(w->block == f.b && w->next == r && w->prev == y);
  /* two erasures in order: the anchor b, then the op that followed it (y) -> before w */
  kl_rewriter_set_insertion_after(rw, b);
  kl_insertion_point after_b = kl_rewriter_save_insertion(rw);
  kl_rewriter_erase_op(rw, b);
  kl_rewriter_erase_op(rw, y);
  kl_rewriter_set_insertion_end(rw, f.b);
  kl_rewriter_restore_insertion(rw, after_b);
  kl_op *v = mk(rw, "test.v");
  CHECK(v->next == w && v->prev == x2);
  /* restored again (any number of times): the same */
  kl_rewriter_restore_insertion(rw, after_b);
  kl_op *v2 = mk(rw, "test.v2");
  CHECK(v2->next == w && v2->prev == v);
  /* the anchor was the last op of its block: end of that block */
  kl_rewriter_set_insertion_before(rw, z);
  kl_insertion_point before_z = kl_rewriter_save_insertion(rw);
  kl_rewriter_erase_op(rw, z);
  /* the rewriter's own point moved past z too: at the end of the block */
  kl_op *u = mk(rw, "test.u");
  CHECK(f.b->last == u && u->prev == e);
  kl_rewriter_restore_insertion(rw, before_z);
  kl_op *t = mk(rw, "test.t");
  CHECK(f.b->last == t && t->prev == u);
  /* an anchor nested in an erased op: moved past that op */
  kl_op *outer = kl_op_create(f.ctx, "test.outer", KL_LOC_UNKNOWN, 0, NULL, 0, NULL, 0, NULL, 1);
  kl_block *ib = kl_block_create(f.ctx);
  kl_region_push_block(&outer->regions[0], ib);
  kl_op *inner = add_op(&f, ib, "test.inner", 0, NULL, 0);
  kl_op_insert_before(r, outer);
  kl_rewriter_set_insertion_end(rw, ib);
  kl_insertion_point end_ib = kl_rewriter_save_insertion(rw);
  kl_rewriter_set_insertion_after(rw, inner);
  kl_insertion_point in_outer = kl_rewriter_save_insertion(rw);
  kl_rewriter_erase_op(rw, outer);
  kl_rewriter_restore_insertion(rw, in_outer);
  kl_op *s = mk(rw, "test.s");
  CHECK(s->block == f.b && s->next == r);
  /* an end-of-block point is never moved, also when its block was in the erased op */
  kl_rewriter_restore_insertion(rw, end_ib);
  kl_op *q = mk(rw, "test.q");
  CHECK(q->block == ib && q->prev == inner);
  /* the rewriter's own "after" anchor re-anchors too: saved after the erase, it is
   * "before the op that followed": x0 follows a; erase a; save; restore */
  kl_rewriter_set_insertion_after(rw, a);
  kl_rewriter_erase_op(rw, a);
  kl_insertion_point cur = kl_rewriter_save_insertion(rw);
  CHECK(cur.kind == KL_IP_BEFORE && cur.anchor == x0);
  CHECK(!kl_rewriter_failed(rw));
  kl_rewriter_free(rw);
  kl_ctx_destroy(f.ctx);
  printf("saved insertion points ok\n");
}

static void test_canonical_arith(void) {
  fixture f = setup(2);
  kl_value *x = f.b->args[0], *y = f.b->args[1];
  kl_value *a1 = bin(&f, "arith.addi", cst(&f, 1), x);                 /* 1 + x -> x + 1 */
  kl_value *a2 = bin(&f, "arith.addi", a1, cst(&f, 2));                /* (x + 1) + 2 -> x + 3 */
  kl_value *s1 = bin(&f, "arith.subi", a2, cst(&f, 10));               /* (x + 3) - 10 -> x + -7 */
  kl_value *d = bin(&f, "arith.subi", bin(&f, "arith.addi", x, y), y); /* (x + y) - y -> x */
  kl_value *z = bin(&f, "arith.xori", y, y);                           /* 0 */
  kl_value *rv[] = { s1, d, z };
  ret(&f, 3, rv);
  CHECK(kl_canonicalize(f.m) == KL_OK);
  kl_op *r = kl_block_terminator(f.b);
  kl_op *add = r->opnds[0].value->def;
  CHECK(add && !strcmp(add->name, "arith.addi") && add->opnds[0].value == x);
  const kl_attr *k = add ? kl_value_constant(add->opnds[1].value) : NULL;
  CHECK(k && k->i == -7);
  CHECK(r->opnds[1].value == x);
  CHECK(kl_value_constant(r->opnds[2].value) && kl_value_constant(r->opnds[2].value)->i == 0);
  CHECK(count_named(f.m, "arith.addi") == 1 && count_named(f.m, "arith.subi") == 0 &&
        count_named(f.m, "arith.xori") == 0);
  CHECK(kl_verify(f.m) == KL_OK);
  kl_ctx_destroy(f.ctx);
  printf("arith canonical patterns ok\n");
}

/* ---- random integer arithmetic keeps its value through canonicalize, cse, dce ---- */
typedef struct {
  kl_value *v[512];
  int64_t x[512];
  int n;
} env;
static int64_t env_get(env *e, kl_value *v) {
  for (int i = 0; i < e->n; i++)
    if (e->v[i] == v) return e->x[i];
  fprintf(stderr, "interp: unknown value\n");
  failures++;
  return 0;
}
static void env_set(env *e, kl_value *v, int64_t x) {
  if (e->n < 512) {
    e->v[e->n] = v;
    e->x[e->n++] = x;
  }
}
static int64_t w32(int64_t x) { return (int32_t)(uint32_t)(uint64_t)x; }
/* Interprets the function body (i32 arith only); returns the returned values. */
static int interp(kl_block *b, const int64_t *args, int64_t *out) {
  env e = { .n = 0 };
  for (int i = 0; i < b->nargs; i++) env_set(&e, b->args[i], args[i]);
  for (kl_op *op = b->first; op; op = op->next) {
    const char *n = op->name;
    int64_t a = op->nopnds > 0 ? env_get(&e, op->opnds[0].value) : 0,
            c = op->nopnds > 1 ? env_get(&e, op->opnds[1].value) : 0, r = 0;
    if (!strcmp(n, "func.return")) {
      for (int i = 0; i < op->nopnds; i++) out[i] = env_get(&e, op->opnds[i].value);
      return op->nopnds;
    }
    if (!strcmp(n, "arith.constant"))
      r = kl_op_attr(op, "value")->i;
    else if (!strcmp(n, "arith.addi"))
      r = (int64_t)((uint64_t)a + (uint64_t)c);
    else if (!strcmp(n, "arith.subi"))
      r = (int64_t)((uint64_t)a - (uint64_t)c);
    else if (!strcmp(n, "arith.muli"))
      r = (int64_t)((uint64_t)a * (uint64_t)c);
    else if (!strcmp(n, "arith.andi"))
      r = a & c;
    else if (!strcmp(n, "arith.ori"))
      r = a | c;
    else if (!strcmp(n, "arith.xori"))
      r = a ^ c;
    else if (!strcmp(n, "arith.maxsi"))
      r = a > c ? a : c;
    else if (!strcmp(n, "arith.minsi"))
      r = a < c ? a : c;
    else if (!strcmp(n, "arith.cmpi")) {
      const char *p = kl_op_attr_string(op, "predicate");
      r = !strcmp(p, "eq")   ? a == c
          : !strcmp(p, "ne") ? a != c
          : !strcmp(p, "lt") ? a < c
          : !strcmp(p, "le") ? a <= c
          : !strcmp(p, "gt") ? a > c
                             : a >= c;
    } else if (!strcmp(n, "arith.select"))
      r = a ? c : env_get(&e, op->opnds[2].value);
    else {
      fprintf(stderr, "interp: unexpected op %s\n", n);
      failures++;
    }
    if (op->nresults) env_set(&e, &op->results[0], op->results[0].type->kind == KL_TY_I1 ? r & 1 : w32(r));
  }
  return 0;
}
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) { return (uint32_t)xorshift64(&rng_state); }

static void test_random_arith(void) {
  static const char *ops[] = { "arith.addi", "arith.subi", "arith.muli",  "arith.andi",
                               "arith.ori",  "arith.xori", "arith.maxsi", "arith.minsi" };
  static const char *preds[] = { "eq", "ne", "lt", "le", "gt", "ge" };
  int mismatches = 0, shrunk = 0;
  for (int trial = 0; trial < 300; trial++) {
    fixture f = setup(3);
    kl_value *pool[128];
    int np = 0;
    for (int i = 0; i < 3; i++) pool[np++] = f.b->args[i];
    static const int64_t consts[] = { 0, 1, -1, 2, 3, 7, 255, -8, 2147483647, -2147483647 - 1 };
    for (int i = 0; i < 4; i++) pool[np++] = cst(&f, consts[rnd() % 10]);
    int nops = 10 + rnd() % 30;
    for (int i = 0; i < nops && np < 120; i++) {
      kl_value *a = pool[rnd() % np], *b = rnd() % 4 == 0 ? a : pool[rnd() % np];
      if (rnd() % 3 == 0 && a->def && a->def->nopnds == 2) b = a->def->opnds[rnd() % 2].value; /* (x op y) op y */
      if (rnd() % 10 == 0)
        pool[np++] = cst(&f, consts[rnd() % 10]);
      else if (rnd() % 8 == 0) {
        kl_named_attr pa = { "predicate", kl_attr_str(f.ctx, preds[rnd() % 6]) };
        kl_value *o[] = { a, b };
        const kl_type *i1 = kl_type_scalar(f.ctx, KL_TY_I1);
        kl_op *c = kl_op_create(f.ctx, "arith.cmpi", KL_LOC_UNKNOWN, 2, o, 1, &i1, 1, &pa, 0);
        kl_block_push_op(f.b, c);
        kl_value *so[] = { kl_op_result(c, 0), a, pool[rnd() % np] };
        kl_op *s = kl_op_create(f.ctx, "arith.select", KL_LOC_UNKNOWN, 3, so, 1, &f.i32, 0, NULL, 0);
        kl_block_push_op(f.b, s);
        pool[np++] = kl_op_result(s, 0);
      } else
        pool[np++] = bin(&f, ops[rnd() % 8], a, b);
    }
    kl_value *rv[] = { pool[np - 1], pool[np - 2], pool[np - 3] };
    ret(&f, 3, rv);
    CHECK(kl_verify(f.m) == KL_OK);
    int64_t in[8][3], before[8][3], after[8][3];
    for (int k = 0; k < 8; k++) {
      for (int j = 0; j < 3; j++) in[k][j] = w32((int64_t)rnd() % (k < 4 ? 10 : 1000000) - (k < 4 ? 5 : 500000));
      interp(f.b, in[k], before[k]);
    }
    int n0, n1;
    free(kl_collect_ops(f.m, &n0));
    kl_pass_manager *pm = kl_pass_manager_create(f.ctx);
    CHECK(kl_pass_manager_add_pipeline(pm, "canonicalize,cse,canonicalize,dce") == KL_OK);
    CHECK(kl_pass_manager_run(pm, f.m) == KL_OK);
    kl_pass_manager_destroy(pm);
    free(kl_collect_ops(f.m, &n1));
    if (n1 < n0) shrunk++;
    for (int k = 0; k < 8; k++) {
      interp(f.b, in[k], after[k]);
      if (memcmp(before[k], after[k], sizeof before[k])) mismatches++;
    }
    if (mismatches && trial < 1000) {
      char *t = kl_print_op(f.m, 0);
      fprintf(stderr, "trial %d: value changed; IR after:\n%s", trial, t);
      free(t);
      trial = 1000;
    }
    char *d = kl_diag_take(f.ctx);
    CHECK(!strcmp(d, ""));
    free(d);
    kl_ctx_destroy(f.ctx);
  }
  CHECK(mismatches == 0);
  CHECK(shrunk > 200);
  printf("random arithmetic keeps its value through canonicalize/cse/dce ok\n");
}

/* A valid IR larger than the fixed cap: 110000 dead constants (a fully unrolled kernel's
 * dead ops; a split-K GEMM with a 16-partial epilogue and three outputs on sm_90a gave 280k
 * lines) converge under the default budget (16 rewrites per op); an explicit cap stays. */
static void test_budget_grows_with_ir(void) {
  fixture f = setup(0);
  for (int i = 0; i < 110000; i++) cst(&f, i);
  ret(&f, 0, NULL);
  CHECK(kl_apply_patterns_greedy(f.m, NULL, 0, NULL) == KL_OK);
  CHECK(count_named(f.m, "arith.constant") == 0);
  kl_ctx_destroy(f.ctx);
  f = setup(0);
  for (int i = 0; i < 100; i++) cst(&f, i);
  ret(&f, 0, NULL);
  kl_greedy_config cfg = kl_greedy_default();
  cfg.max_rewrites = 60;
  CHECK(kl_apply_patterns_greedy(f.m, NULL, 0, &cfg) == KL_ERR);
  CHECK(diag_has(f.ctx, "did not converge after 60 rewrites; last pattern applied: 'dead-op removal'"));
  kl_ctx_destroy(f.ctx);
  printf("rewrite budget grows with the IR ok\n");
}

int main(void) {
  test_budget_grows_with_ir();
  test_rename();
  test_benefit();
  test_non_convergence();
  test_erased_not_revisited();
  test_fold_chain();
  test_dead_removal();
  test_walk();
  test_fail();
  test_debug_log();
  test_registry();
  test_standalone_rewriter();
  test_saved_insertion();
  test_canonical_arith();
  test_random_arith();
  return check_summary("test_rewrite");
}
