/* check.h — the check harness shared by the C unit tests (spec/c/test_*.c).
 *  - CHECK(cond) / CHECK(cond, fmt, ...): counts one check; when cond is false, counts a
 *    failure and prints "file:line: CHECK failed: cond[: message]" on stderr. (The
 *    message is optional: CHECK(cond) passes no variadic argument, which GCC and Clang
 *    accept and C23 allows; only -pedantic warns.)
 *  - CHECK_REPORT_LIMIT (define before including; default: no limit): at most that many
 *    failures are printed, the rest are only counted. check_note (optional, set by the
 *    test): printed as " (note)" behind each failure, e.g. the random case being checked.
 *  - group lines on stdout: group_begin() ... group_end("what") prints "what: ok" or
 *    "what: FAILED"; group_ok() says whether the current group has no failure yet;
 *    GROUP("what") prints a progress line with the running counts.
 *  - check_summary("test_x") prints the final line, "test_x: N checks passed" or
 *    "test_x: F of N checks FAILED", and returns main's exit status (0 / 1).
 *  - xorshift64(&state): the tests' seeded random step (each test keeps its own state).
 * Header-only (static functions and counters): include it from the one translation unit
 * of a test. Nothing is allocated; nothing here exits. */
#ifndef KL_SPEC_CHECK_H
#define KL_SPEC_CHECK_H
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef CHECK_REPORT_LIMIT
#define CHECK_REPORT_LIMIT 0 /* 0: print every failure */
#endif

static int checks, failures;
static const char *check_note;

/* Counts a failure and, within the report limit, prints its line; returns whether it
 * printed (the caller may add detail lines). fmt is ": " (no message) or ": message". */
__attribute__((format(printf, 4, 5))) static inline bool check_failed_(const char *file, int line, const char *cond,
                                                                       const char *fmt, ...) {
  failures++;
  if (CHECK_REPORT_LIMIT > 0 && failures > CHECK_REPORT_LIMIT) return false;
  fprintf(stderr, "%s:%d: CHECK failed: %s", file, line, cond);
  if (strcmp(fmt, ": ") != 0) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
  }
  if (check_note) fprintf(stderr, " (%s)", check_note);
  fputc('\n', stderr);
  return true;
}

#define CHECK(c, ...)                                                  \
  do {                                                                 \
    checks++;                                                          \
    if (!(c)) check_failed_(__FILE__, __LINE__, #c, ": " __VA_ARGS__); \
  } while (0)

/* ---- group lines ---- */
static int check_group_failures_;
static inline void group_begin(void) { check_group_failures_ = failures; }
static inline bool group_ok(void) { return failures == check_group_failures_; }
static inline void group_end(const char *what) { printf("%s: %s\n", what, group_ok() ? "ok" : "FAILED"); }
#define GROUP(name) printf("  %-44s (%d checks so far, %d failed)\n", name, checks, failures)

/* The final line; returns main's exit status. */
static inline int check_summary(const char *test) {
  if (failures) {
    printf("%s: %d of %d checks FAILED\n", test, failures, checks);
    return 1;
  }
  printf("%s: %d checks passed\n", test, checks);
  return 0;
}

/* One xorshift64 step of *state (never 0); returns the new state. */
static inline uint64_t xorshift64(uint64_t *state) {
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *state = x;
}
#endif
