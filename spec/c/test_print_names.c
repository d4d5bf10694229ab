/* test_print_names.c — value names the printer makes from long name hints (found by
 * spec/fuzz/fuzz_kir: a hint of more than 126 characters was cut to a 128-byte buffer, so
 * a second value with that hint (or the same first 126 characters) could never get a
 * unique name and the printer looped forever; results of multi-result ops printed the cut
 * base without their "#i"). Checks: two block arguments with the same 300-character hint
 * print as "%<hint>" and "%<hint>_1"; hints that differ only after character 200 keep
 * their full text; a multi-result op with a 150-character hint prints "%<hint>#1"; each
 * module round-trips (print(parse(print(m))) == print(m)). SIGALRM after 20 s turns a hang
 * back into a failure. */
#include "parse_test_util.h"
#include <signal.h>
#include <unistd.h>

static char *hint(char c, int n, const char *tail) {
  char *s = malloc((size_t)n + strlen(tail) + 1);
  memset(s, c, (size_t)n);
  strcpy(s + n, tail);
  return s;
}

/* Parses text, prints it, checks every `want` name occurs in the print and the print
 * round-trips. */
static void check_names(const char *what, const char *text, const char *const *want, int nwant) {
  kl_ctx *ctx = test_ctx();
  kl_op *m = kl_parse_module(ctx, text, strlen(text), "names.kir");
  CHECK(m, "%s: does not parse", what);
  if (m) {
    char *p = kl_print_op(m, 0);
    for (int i = 0; i < nwant; i++)
      CHECK(strstr(p, want[i]) != NULL, "%s: '%.40s...' not printed in full", what, want[i]);
    roundtrip_module(ctx, m, what);
    free(p);
  }
  kl_ctx_destroy(ctx);
}

int main(void) {
  alarm(20);
  char *h = hint('a', 300, ""), *h2 = hint('b', 200, "x"), *h3 = hint('b', 200, "y"), *h4 = hint('m', 150, "");
  kl_sb sb = { 0 };
  /* the same long hint in two functions, and two hints sharing their first 200 characters */
  kl_sb_printf(&sb,
               "func.func @f(%%%s: i32, %%%s: i32) {\n  \"t.use\"(%%%s, %%%s) : (i32, i32) -> ()\n  func.return\n}\n",
               h, h2, h, h2);
  kl_sb_printf(&sb,
               "func.func @g(%%%s: i32, %%%s: i32) {\n  \"t.use\"(%%%s, %%%s) : (i32, i32) -> ()\n  func.return\n}\n",
               h, h3, h, h3);
  char *w1 = hint('a', 300, ":"), *w2 = hint('a', 300, "_1:"), *w3 = hint('b', 200, "x:"), *w4 = hint('b', 200, "y:");
  char *n1 = malloc(strlen(w1) + 2), *n2 = malloc(strlen(w2) + 2), *n3 = malloc(strlen(w3) + 2),
       *n4 = malloc(strlen(w4) + 2);
  sprintf(n1, "%%%s", w1);
  sprintf(n2, "%%%s", w2);
  sprintf(n3, "%%%s", w3);
  sprintf(n4, "%%%s", w4);
  const char *want1[] = { n1, n2, n3, n4 };
  check_names("long hints", sb.buf, want1, 4);
  kl_sb_free(&sb);

  /* a multi-result op with a long hint: its second result is %<hint>#1 */
  kl_sb sb2 = { 0 };
  kl_sb_printf(&sb2,
               "func.func @h() {\n  %%%s:2 = \"t.two\"() : () -> (i32, i32)\n  \"t.use\"(%%%s#1) : (i32) -> ()\n  "
               "func.return\n}\n",
               h4, h4);
  char *want2 = malloc(strlen(h4) + 8);
  sprintf(want2, "%%%s#1)", h4);
  const char *w[] = { want2 };
  check_names("multi-result long hint", sb2.buf, w, 1);
  kl_sb_free(&sb2);

  free(h);
  free(h2);
  free(h3);
  free(h4);
  free(w1);
  free(w2);
  free(w3);
  free(w4);
  free(n1);
  free(n2);
  free(n3);
  free(n4);
  free(want2);
  return check_summary("test_print_names");
}
