/* test_diag.c — core/diag.h: the diagnostic value, its text form, sinks that work without
 * an IR context (a fixed buffer, a callback), and the one formatting helper (which
 * perf_config's kl_perf_errf wraps);
 * a context's diagnostics text has the same form as kl_diag_format. */
#include "core/diag.h"
#include "core/context.h"
#include "passes/perf_config.h"
#include "runtime/tensor.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void test_errf(void) {
  group_begin();
  char err[16] = "x";
  CHECK(kl_errf(err, sizeof err, "%s %d", "value", 42) == 1 && !strcmp(err, "value 42"), "%s", err);
  CHECK(kl_errf(err, sizeof err, "%s", "a message longer than sixteen bytes") == 1 && strlen(err) == 15 &&
            !strncmp(err, "a message longe", 15),
        "truncated: %s", err);
  CHECK(kl_errf(NULL, 0, "%s", "dropped") == 1);
  strcpy(err, "keep");
  CHECK(kl_errf(err, 0, "%s", "dropped") == 1 && !strcmp(err, "keep"), "errlen 0 writes nothing");
  /* perf_config's helper (it returns false) formats through it */
  char a[64], c[64];
  CHECK(kl_errf(a, sizeof a, "dim %d", 3) == 1 && kl_perf_errf(c, sizeof c, "dim %d", 3) == false &&
        !strcmp(a, "dim 3") && !strcmp(c, a));
  group_end("formatting helper");
}

static void test_format(void) {
  group_begin();
  char buf[128];
  kl_diag d = { KL_DIAG_ERROR, { "a.kir", 3, 7 }, "bad thing" };
  CHECK(!strcmp(kl_diag_format(&d, buf, sizeof buf), "a.kir:3:7: error: bad thing"), "%s", buf);
  d = (kl_diag){ KL_DIAG_WARNING, { "s.lua", 12, 0 }, "hm" };
  CHECK(!strcmp(kl_diag_format(&d, buf, sizeof buf), "s.lua:12: warning: hm"), "%s", buf);
  d = (kl_diag){ KL_DIAG_NOTE, KL_LOC_UNKNOWN, "see" };
  CHECK(!strcmp(kl_diag_format(&d, buf, sizeof buf), "<unknown>: note: see"), "%s", buf);
  CHECK(!strcmp(kl_diag_format(&d, buf, 6), "<unkn"), "truncated: %s", buf);
  CHECK(!strcmp(kl_diag_kind_name((kl_diag_kind)7), "?"));
  /* a context writes the same form */
  kl_ctx *ctx = kl_ctx_create();
  kl_emit_error(ctx, kl_loc_make(ctx, "a.kir", 3, 7), "bad %s", "thing");
  char *text = kl_diag_take(ctx);
  CHECK(!strcmp(text, "a.kir:3:7: error: bad thing\n"), "%s", text);
  free(text);
  kl_ctx_destroy(ctx);
  group_end("text form");
}

typedef struct seen {
  int n;
  kl_diag_kind kind[4];
  char msg[4][64];
  int line[4];
} seen;
static void collect(void *user, const kl_diag *d) {
  seen *s = user;
  if (s->n < 4) {
    s->kind[s->n] = d->severity;
    snprintf(s->msg[s->n], 64, "%s", d->message);
    s->line[s->n] = d->loc.line;
  }
  s->n++;
}

/* A context hands its diagnostics to a handler as kl_diag values (the sink callback). */
static void test_ctx_handler(void) {
  group_begin();
  kl_ctx *ctx = kl_ctx_create();
  seen got = { 0 };
  kl_ctx_set_diag_handler(ctx, collect, &got);
  kl_emit_diag(ctx, KL_DIAG_WARNING, kl_loc_make(ctx, "w.kir", 2, 1), "careful %d", 7);
  kl_emit_error(ctx, kl_loc_make(ctx, "e.kir", 9, 4), "broken");
  CHECK(got.n == 2 && got.kind[0] == KL_DIAG_WARNING && !strcmp(got.msg[0], "careful 7") && got.line[0] == 2 &&
        got.kind[1] == KL_DIAG_ERROR && !strcmp(got.msg[1], "broken") && got.line[1] == 9 &&
        kl_diag_error_count(ctx) == 1);
  kl_ctx_destroy(ctx);
  group_end("context handler");
}

static void test_sinks(void) {
  group_begin();
  char err[64] = "stale";
  kl_diag_sink s = kl_diag_sink_buffer(err, sizeof err);
  CHECK(err[0] == 0, "the buffer starts empty");
  CHECK(kl_report(&s, KL_DIAG_WARNING, KL_LOC_UNKNOWN, "just a warning") == 0 && err[0] == 0 && s.nerrors == 0);
  CHECK(kl_report(&s, KL_DIAG_ERROR, (kl_loc){ "f", 1, 2 }, "first %d", 1) == 1 && !strcmp(err, "first 1"), "%s", err);
  CHECK(kl_report(&s, KL_DIAG_ERROR, KL_LOC_UNKNOWN, "second") == 1 && !strcmp(err, "first 1") && s.nerrors == 2, "%s",
        err);
  kl_diag_sink none = kl_diag_sink_buffer(NULL, 0);
  CHECK(kl_report(&none, KL_DIAG_ERROR, KL_LOC_UNKNOWN, "dropped") == 1 && none.nerrors == 1);
  CHECK(kl_report(NULL, KL_DIAG_ERROR, KL_LOC_UNKNOWN, "dropped") == 1 &&
        kl_report(NULL, KL_DIAG_NOTE, KL_LOC_UNKNOWN, "x") == 0);
  seen got = { 0 };
  kl_diag_sink cb = kl_diag_sink_callback(collect, &got);
  kl_report(&cb, KL_DIAG_NOTE, (kl_loc){ "f", 5, 0 }, "note %s", "a");
  kl_report(&cb, KL_DIAG_ERROR, (kl_loc){ "f", 6, 0 }, "error %lld", (long long)1 << 40);
  CHECK(got.n == 2 && got.kind[0] == KL_DIAG_NOTE && !strcmp(got.msg[0], "note a") && got.line[0] == 5 &&
        got.kind[1] == KL_DIAG_ERROR && !strcmp(got.msg[1], "error 1099511627776") && got.line[1] == 6 &&
        cb.nerrors == 1);
  group_end("sinks");
}

int main(void) {
  test_errf();
  test_format();
  test_sinks();
  test_ctx_handler();
  return check_summary("test_diag");
}
