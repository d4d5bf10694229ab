/* test_plan_steps.c — host plans as token-connected steps (driver/plan.h, client/kiln_client.h):
 *  - a hand-written module with a diamond of launches (a -> b, c -> d) and a `prefill`
 *    kernel attribute on d: the steps (workspace allocations before the first use, frees
 *    after the last reader, the prefill before its launch), their exact waits, that b
 *    and c are independent, and the invariants every plan keeps (tokens form a DAG, each
 *    slot is written before it is read by a step that waits on the writer);
 *  - plan_step = "prefill" / "copy" kernels become host steps; malformed attributes are
 *    errors at the kernel's location;
 *  - the plan encodes into a bundle and reads back with the same steps; hand-edited
 *    plans (a missing wait, a wait on a later token, a duplicate token, an unfreed
 *    workspace, a read of a slot nothing wrote, an unrepresentable prefill value) are
 *    refused by the reader with a clear message. */
#include "check.h"
#include "driver/plan.h"
#include "core/parse.h"
#include "core/print.h"
#include "core/target.h"
#include "passes/passes.h"
#include <stdlib.h>
#include <string.h>

static const char DIAMOND[] =
    "func.func @g() attributes {graph} {\n"
    "  %x = \"graph.param\"() {name = \"x\"} : () -> tensor<4xf32>\n"
    "  %a = \"graph.launch\"(%x) {callee = @ka} : (tensor<4xf32>) -> tensor<4xf32>\n"
    "  %b = \"graph.launch\"(%a) {callee = @kb} : (tensor<4xf32>) -> tensor<4xf32>\n"
    "  %c = \"graph.launch\"(%a) {callee = @kc} : (tensor<4xf32>) -> tensor<4xf32>\n"
    "  %d = \"graph.launch\"(%b, %c) {callee = @kd} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n"
    "  func.return %d : tensor<4xf32>\n"
    "}\n"
    "func.func @ka(%i: buffer<4xf32>, %o: buffer<4xf32>) attributes {kernel} {\n  func.return\n}\n"
    "func.func @kb(%i: buffer<4xf32>, %o: buffer<4xf32>) attributes {kernel} {\n  func.return\n}\n"
    "func.func @kc(%i: buffer<4xf32>, %o: buffer<4xf32>) attributes {kernel} {\n  func.return\n}\n"
    "func.func @kd(%i: buffer<4xf32>, %j: buffer<4xf32>, %o: buffer<4xf32>) attributes {kernel, prefill = {\"2\" = "
    "-inf : f32}} {\n  func.return\n}\n";

/* slots of DIAMOND: 0 x, 1 a, 2 b, 3 c, 4 d (the output) */

static bool waits_are(const kl_bundle_step *s, int n, const int *w) {
  if (s->nwaits != n) return false;
  for (int i = 0; i < n; i++)
    if (s->waits[i] != w[i]) return false;
  return true;
}

/* ancestor[i][j]: step j must finish before step i starts (through the waits). */
static bool depends(const kl_bundle_target *T, int i, int j) {
  const kl_bundle_step *s = &T->steps[i];
  for (int w = 0; w < s->nwaits; w++) {
    int k = 0;
    while (k < i && T->steps[k].token != s->waits[w]) k++;
    if (k == j || (k < i && depends(T, k, j))) return true;
  }
  return false;
}

/* The invariants of every plan kiln builds. */
static void check_invariants(const kl_bundle_target *T, const char *what) {
  int ns = T->nslots;
  int *lastw = calloc(ns + 1, sizeof *lastw), *alloc = calloc(ns + 1, sizeof *alloc);
  int *freed = calloc(ns + 1, sizeof *freed), *lastuse = calloc(ns + 1, sizeof *lastuse);
  for (int s = 0; s < ns; s++) lastw[s] = alloc[s] = freed[s] = lastuse[s] = -1;
  for (int i = 0; i < T->nsteps; i++) {
    const kl_bundle_step *st = &T->steps[i];
    CHECK(st->token == i, "%s: step %d yields token %d", what, i, st->token);
    for (int w = 0; w < st->nwaits; w++) CHECK(st->waits[w] >= 0 && st->waits[w] < i, "%s: step %d waits", what, i);
    for (int a = 0; a < kl_bundle_step_naccess(st); a++) {
      int wr, s = kl_bundle_step_access(T, st, a, &wr);
      if (st->kind == KL_BUNDLE_ALLOC_WORKSPACE) alloc[s] = i;
      if (st->kind == KL_BUNDLE_FREE) freed[s] = i;
      if (!wr) {
        bool written = T->slots[s].kind != KL_BUNDLE_RESULT || lastw[s] >= 0;
        CHECK(written, "%s: step %d reads slot %d before a write", what, i, s);
        if (lastw[s] >= 0) CHECK(depends(T, i, lastw[s]), "%s: step %d does not wait on writer %d", what, i, lastw[s]);
      } else if (st->kind != KL_BUNDLE_ALLOC_WORKSPACE && st->kind != KL_BUNDLE_FREE)
        lastw[s] = i;
      if (st->kind != KL_BUNDLE_FREE && st->kind != KL_BUNDLE_ALLOC_WORKSPACE) lastuse[s] = i;
    }
  }
  for (int s = 0; s < ns; s++) {
    bool inter = T->slots[s].kind == KL_BUNDLE_RESULT && T->slots[s].output < 0;
    CHECK(inter == (alloc[s] >= 0) && inter == (freed[s] >= 0), "%s: slot %d workspace steps", what, s);
    if (inter) {
      CHECK(alloc[s] < lastuse[s] && freed[s] > lastuse[s], "%s: slot %d lives %d..%d, used up to %d", what, s,
            alloc[s], freed[s], lastuse[s]);
      CHECK(depends(T, freed[s], lastuse[s]), "%s: the free of slot %d waits on its last use", what, s);
      CHECK(T->steps[alloc[s]].bytes == T->slots[s].t.bytes, "%s: workspace bytes", what);
    }
  }
  free(lastw);
  free(alloc);
  free(freed);
  free(lastuse);
}

static kl_op *parse(kl_ctx *ctx, const char *text) {
  kl_op *m = kl_parse_module(ctx, text, strlen(text), "plan.kir");
  if (!m) {
    char *d = kl_diag_take(ctx);
    fprintf(stderr, "%s", d);
    free(d);
  }
  return m;
}

/* The plan encoded (fake binaries, the module as IR text) and opened again. */
static kl_bundle *roundtrip(const kl_bundle_target *T0, kl_op *module, char *err, size_t errlen) {
  char *ir = kl_print_op(module, KL_PRINT_GENERIC);
  kl_bundle_target T = *T0;
  kl_bundle_kernel *ks = calloc(T.nkernels + 1, sizeof *ks);
  for (int k = 0; k < T.nkernels; k++) {
    ks[k] = T.kernels[k];
    ks[k].binary = "BIN";
    ks[k].binary_size = 3;
  }
  T.kernels = ks;
  T.ir = ir;
  T.ir_size = strlen(ir);
  void *buf = NULL;
  size_t n = 0;
  kl_bundle *b = NULL;
  if (kl_bundle_encode(1, &T, "test", &buf, &n, err, errlen) == 0) b = kl_bundle_open_memory(buf, n, err, errlen);
  free(buf);
  free(ks);
  free(ir);
  return b;
}

/* A copy of the plan with its steps replaced (the caller edits them), opened as a bundle:
 * must fail with `want` in the message. */
static void refused(const kl_bundle_target *T0, kl_op *m, const kl_bundle_step *steps, int nsteps, const char *want,
                    const char *what) {
  kl_bundle_target T = *T0;
  T.steps = steps;
  T.nsteps = nsteps;
  char err[1024] = "";
  kl_bundle *b = roundtrip(&T, m, err, sizeof err);
  CHECK(!b && strstr(err, want), "%s: %s", what, b ? "(opened)" : err);
  kl_bundle_close(b);
}

static void test_diamond(kl_ctx *ctx) {
  group_begin();
  char err[1024] = "";
  kl_op *m = parse(ctx, DIAMOND);
  CHECK(m != NULL);
  if (!m) return;
  kl_plan p;
  kl_status st = kl_plan_build(&p, m, "host", kl_target_lookup("host"), err, sizeof err);
  CHECK(st == KL_OK, "%s", err);
  const kl_bundle_target *T = &p.t;
  /* alloc a, a, alloc b, b, alloc c, c, free a, prefill d, d, free b, free c */
  static const kl_bundle_step_kind kinds[] = { KL_BUNDLE_ALLOC_WORKSPACE,
                                               KL_BUNDLE_LAUNCH,
                                               KL_BUNDLE_ALLOC_WORKSPACE,
                                               KL_BUNDLE_LAUNCH,
                                               KL_BUNDLE_ALLOC_WORKSPACE,
                                               KL_BUNDLE_LAUNCH,
                                               KL_BUNDLE_FREE,
                                               KL_BUNDLE_PREFILL,
                                               KL_BUNDLE_LAUNCH,
                                               KL_BUNDLE_FREE,
                                               KL_BUNDLE_FREE };
  int n = (int)(sizeof kinds / sizeof *kinds);
  CHECK(st == KL_OK && T->nsteps == n, "%d steps", T->nsteps);
  if (st != KL_OK || T->nsteps != n) {
    kl_plan_free(&p);
    return;
  }
  for (int i = 0; i < n; i++)
    CHECK(T->steps[i].kind == kinds[i], "step %d is a %s", i, kl_bundle_step_kind_name(T->steps[i].kind));
  CHECK(T->steps[0].slot == 1 && T->steps[0].bytes == 16 && T->steps[6].slot == 1, "workspace a");
  CHECK(T->steps[2].slot == 2 && T->steps[9].slot == 2 && T->steps[4].slot == 3 && T->steps[10].slot == 3,
        "workspaces b, c");
  CHECK(T->steps[7].slot == 4 && T->steps[7].value < 0 && T->steps[7].value * 0 != 0, "prefill d with -inf");
  CHECK(T->steps[8].kernel == 3 && T->steps[8].args[2] == 4, "launch d");
  CHECK(waits_are(&T->steps[1], 1, (int[]){ 0 }), "a waits on its workspace");
  CHECK(waits_are(&T->steps[3], 2, (int[]){ 1, 2 }), "b waits on a and its workspace");
  CHECK(waits_are(&T->steps[5], 2, (int[]){ 1, 4 }), "c waits on a and its workspace");
  CHECK(waits_are(&T->steps[6], 3, (int[]){ 1, 3, 5 }), "a is freed after its writer and both readers");
  CHECK(waits_are(&T->steps[7], 0, NULL), "the prefill of an output waits on nothing");
  CHECK(waits_are(&T->steps[8], 3, (int[]){ 3, 5, 7 }), "d waits on b, c and its prefill");
  CHECK(waits_are(&T->steps[9], 2, (int[]){ 3, 8 }), "b is freed after d");
  CHECK(waits_are(&T->steps[10], 2, (int[]){ 5, 8 }), "c is freed after d");
  CHECK(!depends(T, 5, 3) && !depends(T, 3, 5), "b and c are independent");
  CHECK(depends(T, 8, 1), "d depends on a through b and c");
  check_invariants(T, "diamond");
  char *text = kl_plan_text(T);
  CHECK(strstr(text, "%t8 = launch kd(grid=[1,1,1], block=[1,1,1], lds=0) args(%s2, %s3 -> %s4) waits(%t3, %t5, %t7)"),
        "%s", text);
  CHECK(strstr(text, "%t7 = prefill %s4 value(-inf)\n") && strstr(text, "%t0 = alloc_workspace %s1 (16 bytes)\n") &&
            strstr(text, "%t6 = free %s1 waits(%t1, %t3, %t5)\n") && strstr(text, "return %s4\n"),
        "%s", text);
  free(text);
  group_end("a diamond of launches with a prefill attribute: steps, tokens and waits");

  group_begin();
  kl_bundle *b = roundtrip(T, m, err, sizeof err);
  CHECK(b != NULL, "%s", err);
  if (b) {
    const kl_bundle_target *R = kl_bundle_target_at(b, 0);
    CHECK(kl_bundle_format_version(b) == KL_BUNDLE_FORMAT_VERSION, "version");
    CHECK(kl_plan_compare(T, R, err, sizeof err) == KL_OK, "%s", err);
    CHECK(R->nsteps == n && R->steps[7].kind == KL_BUNDLE_PREFILL && R->steps[7].value == T->steps[7].value &&
              R->steps[0].bytes == 16,
          "the steps read back");
    /* kl_plan_compare sees a changed wait */
    kl_bundle_step *cp = malloc(n * sizeof *cp);
    memcpy(cp, R->steps, n * sizeof *cp);
    kl_bundle_target R2 = *R;
    R2.steps = cp;
    cp[8].nwaits = 2;
    CHECK(kl_plan_compare(T, &R2, err, sizeof err) != KL_OK && strstr(err, "step 8"), "%s", err);
    free(cp);
    kl_bundle_close(b);
  }
  /* a format version 2 plan section holds the launches only */
  kl_bundle_step launches[4];
  int nl = 0;
  for (int i = 0; i < n; i++)
    if (T->steps[i].kind == KL_BUNDLE_LAUNCH) launches[nl++] = T->steps[i];
  kl_bundle_target V2 = *T;
  V2.steps = launches;
  V2.nsteps = nl;
  CHECK(nl == 4 && kl_plan_compare_v2(T, &V2, err, sizeof err) != KL_OK &&
            strstr(err, "step 7 is a prefill in the IR, which a format version 2 plan section cannot hold"),
        "%s", err);
  kl_bundle_target T3 = *T; /* the same plan without the prefill: launches and workspace steps */
  kl_bundle_step *np = malloc(n * sizeof *np);
  int k = 0;
  for (int i = 0; i < n; i++)
    if (T->steps[i].kind != KL_BUNDLE_PREFILL) np[k++] = T->steps[i];
  T3.steps = np;
  T3.nsteps = k;
  CHECK(kl_plan_compare_v2(&T3, &V2, err, sizeof err) == KL_OK, "%s", err);
  launches[1].args = (int[]){ 1, 3 };
  CHECK(kl_plan_compare_v2(&T3, &V2, err, sizeof err) != KL_OK &&
            strstr(err, "launch 1 of the IR (kb) is not step 1 of the format version 2 plan section"),
        "%s", err);
  free(np);
  group_end("the plan's steps survive a bundle round trip; kl_plan_compare compares them");

  group_begin();
  kl_bundle_step *e = malloc(n * sizeof *e);
#define RESET() memcpy(e, T->steps, n * sizeof *e)
  RESET();
  e[3].waits = (int[]){ 2 }; /* b does not wait on a */
  e[3].nwaits = 1;
  refused(T, m, e, n, "reads slot 1 but does not wait (directly or through its waits) on step 1", "missing wait");
  RESET();
  e[1].waits = (int[]){ 5 };
  refused(T, m, e, n, "waits on token 5, which no earlier step yields", "wait on a later token");
  RESET();
  e[2].token = 1;
  refused(T, m, e, n, "token 1 is also yielded by step 1", "duplicate token");
  RESET();
  refused(T, m, e, n - 1, "workspace slot 3 is never freed", "unfreed workspace");
  RESET();
  e[3].args = (int[]){ 4, 2 }; /* b reads d, which nothing has written yet */
  refused(T, m, e, n, "reads slot 4, which no earlier step writes", "read before write");
  RESET();
  e[7].value = 1e39;
  refused(T, m, e, n, "is not representable in slot 4's element type f32", "prefill value");
  RESET();
  e[6].waits = (int[]){ 1, 3 }; /* a freed while c may still read it */
  e[6].nwaits = 2;
  refused(T, m, e, n, "writes slot 1 but does not wait (directly or through its waits) on step 5, which reads it",
          "free before the last reader");
  RESET();
  e[9].slot = 1; /* a freed twice */
  refused(T, m, e, n, "frees slot 1, which is already freed", "double free");
#undef RESET
  free(e);
  group_end("hand-edited plans are refused by the reader with a clear message");
  kl_plan_free(&p);
}

static const char HOST_STEPS[] =
    "func.func @g() attributes {graph} {\n"
    "  %x = \"graph.param\"() {name = \"x\"} : () -> tensor<4xi8>\n"
    "  %f = \"graph.launch\"(%x) {callee = @kf} : (tensor<4xi8>) -> tensor<4xi8>\n"
    "  %c = \"graph.launch\"(%x) {callee = @kc} : (tensor<4xi8>) -> tensor<4xi8>\n"
    "  func.return %f, %c : tensor<4xi8>, tensor<4xi8>\n"
    "}\n"
    "func.func @kf(%i: buffer<4xi8>, %o: buffer<4xi8>) attributes {kernel, plan_step = \"prefill\", prefill = {\"1\" = "
    "-7 : i8}} {\n  func.return\n}\n"
    "func.func @kc(%i: buffer<4xi8>, %o: buffer<4xi8>) attributes {kernel, plan_step = \"copy\"} {\n  func.return\n}\n";

static void test_host_steps(kl_ctx *ctx) {
  group_begin();
  char err[1024] = "";
  kl_op *m = parse(ctx, HOST_STEPS);
  kl_plan p;
  CHECK(m && kl_plan_build(&p, m, "host", kl_target_lookup("host"), err, sizeof err) == KL_OK, "%s", err);
  if (m) {
    const kl_bundle_target *T = &p.t;
    CHECK(T->nsteps == 2 && T->steps[0].kind == KL_BUNDLE_PREFILL && T->steps[0].slot == 1 && T->steps[0].value == -7 &&
              T->steps[1].kind == KL_BUNDLE_COPY && T->steps[1].src == 0 && T->steps[1].dst == 2 &&
              T->steps[1].bytes == 4,
          "a prefill and a copy instead of two launches");
    CHECK(T->nsteps == 2 && T->steps[1].nwaits == 0, "independent");
    check_invariants(T, "host steps");
    kl_bundle *b = roundtrip(T, m, err, sizeof err);
    CHECK(b != NULL, "%s", err);
    kl_bundle_close(b);
    kl_plan_free(&p);
  }
  group_end("plan_step = \"prefill\" / \"copy\" kernels become host steps");

  group_begin();
  static const struct {
    const char *from, *to, *want;
  } bad[] = {
    { "prefill = {\"1\" = -7 : i8}", "prefill = {\"0\" = -7 : i8}",
      "plan.kir:7:1: error: compile: kernel @kf: prefill names argument '0', which is not an output argument (outputs: "
      "1..1)" },
    { "prefill = {\"1\" = -7 : i8}", "prefill = {\"1\" = 300}",
      "prefill value 300 of argument 1 does not fit its element type i8" },
    { "prefill = {\"1\" = -7 : i8}", "prefill = {\"1\" = \"zero\"}", "is \"zero\", not a number" },
    { "plan_step = \"prefill\", prefill = {\"1\" = -7 : i8}", "plan_step = \"prefill\"",
      "plan_step = \"prefill\" needs a prefill value for every output argument" },
    { "plan_step = \"copy\"", "plan_step = \"move\"", "unknown plan_step 'move'" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char text[4096];
    const char *at = strstr(HOST_STEPS, bad[i].from);
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - HOST_STEPS), HOST_STEPS, bad[i].to, at + strlen(bad[i].from));
    kl_op *mm = parse(ctx, text);
    CHECK(mm != NULL, "parse %zu", i);
    if (!mm) continue;
    err[0] = 0;
    kl_status st = kl_plan_build(&p, mm, "host", kl_target_lookup("host"), err, sizeof err);
    CHECK(st != KL_OK && strstr(err, bad[i].want), "case %zu: %s", i, err);
    kl_plan_free(&p);
  }
  group_end("malformed prefill / plan_step attributes: errors at the kernel");
}

int main(void) {
  kl_ctx *ctx = kl_ctx_create();
  kl_register_builtin_passes(ctx);
  test_diamond(ctx);
  test_host_steps(ctx);
  kl_ctx_destroy(ctx);
  return check_summary("test_plan_steps");
}
