/* test_parse_corpus.c — the parser on files: every spec/corpus/bad/ (*.kir) must fail
 * with one located diagnostic "<path>:<line>:<col>: error: ..." containing the text of
 * its first line "// ERROR: <text>" (and at the place of an optional second line
 * "// AT: <line>:<col>"); every spec/corpus/good/ (*.kir) must round-trip (custom, generic
 * and located printing); generated 100000-deep nesting fails cleanly; and a seeded
 * fuzz loop (every truncation of every corpus file plus random byte edits) requires no
 * crash and either NULL with a located diagnostic or a sound module whose printing is
 * stable. Run under ASan+UBSan by scripts/test. */
#include "parse_test_util.h"
#include <dirent.h>

#ifndef KILN_SOURCE_DIR
#define KILN_SOURCE_DIR "."
#endif

static int str_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted paths of the .kir files in dir (malloc'd array of malloc'd strings). */
static char **list_kir(const char *dir, int *n) {
  char **v = NULL;
  int cap = 0;
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) return NULL;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".kir")) continue;
    if (*n == cap) v = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof *v);
    v[*n] = malloc(strlen(dir) + len + 2);
    sprintf(v[*n], "%s/%s", dir, e->d_name);
    (*n)++;
  }
  closedir(d);
  if (*n) qsort(v, *n, sizeof *v, str_cmp);
  return v;
}
static void free_list(char **v, int n) {
  for (int i = 0; i < n; i++) free(v[i]);
  free(v);
}

/* The text of header line `line` (1-based) after prefix, or NULL. malloc'd. */
static char *header(const char *buf, size_t len, int line, const char *prefix) {
  size_t i = 0;
  for (int l = 1; l < line; l++) {
    while (i < len && buf[i] != '\n') i++;
    if (i++ >= len) return NULL;
  }
  size_t pl = strlen(prefix);
  if (len - i < pl || memcmp(buf + i, prefix, pl)) return NULL;
  size_t e = i + pl;
  while (e < len && buf[e] != '\n') e++;
  char *s = malloc(e - i - pl + 1);
  memcpy(s, buf + i + pl, e - i - pl);
  s[e - i - pl] = 0;
  return s;
}

static void test_bad(void) {
  int n;
  char **files = list_kir(KILN_SOURCE_DIR "/spec/corpus/bad", &n);
  CHECK(n >= 30, "only %d bad corpus files", n);
  int with_at = 0;
  for (int i = 0; i < n; i++) {
    size_t len;
    char *buf = read_file(files[i], &len);
    CHECK(buf, "cannot read %s", files[i]);
    if (!buf) continue;
    char *want = header(buf, len, 1, "// ERROR: "), *at = header(buf, len, 2, "// AT: ");
    CHECK(want && *want, "%s: first line must be '// ERROR: <text>'", files[i]);
    kl_ctx *ctx = test_ctx();
    kl_op *m = kl_parse_module(ctx, buf, len, files[i]);
    int nerr = kl_diag_error_count(ctx);
    char *d = kl_diag_take(ctx);
    int l = 0, c = 0;
    CHECK(!m, "%s: parsed without error", files[i]);
    CHECK(nerr == 1, "%s: %d diagnostics:\n%s", files[i], nerr, d);
    CHECK(diag_located(d, files[i], &l, &c), "%s: diagnostic not located: %s", files[i], d);
    CHECK(want && strstr(d, want), "%s: wanted '%s', got: %s", files[i], want ? want : "", d);
    if (at) {
      int wl = 0, wc = 0;
      with_at++;
      CHECK(sscanf(at, "%d:%d", &wl, &wc) == 2 && wl == l && wc == c, "%s: wanted the error at %s, got: %s", files[i],
            at, d);
    }
    free(d);
    free(want);
    free(at);
    free(buf);
    kl_ctx_destroy(ctx);
  }
  free_list(files, n);
  printf("bad corpus ok (%d files, %d with exact positions)\n", n, with_at);
}

/* 100000-deep nesting of regions, arrays and dictionaries: a clean error at the 257th level. */
static void test_deep(void) {
  const int depth = 100000;
  static const char *const open[] = { "\"t.n\"() ({\n", "\"t.a\"() {x = [", "\"t.a\"() {x = {a = " };
  static const char *const msg[] = { "regions nested too deeply", "attributes nested too deeply",
                                     "attributes nested too deeply" };
  static const int line[] = { 257, 1, 1 }, col[] = { 10, 14 + 256, 14 + 5 * 256 };
  for (int k = 0; k < 3; k++) {
    kl_sb sb = { 0 };
    kl_sb_puts(&sb, open[k]);
    for (int i = 1; i < depth; i++) kl_sb_puts(&sb, k == 0 ? open[0] : k == 1 ? "[" : "{a = ");
    kl_ctx *ctx = test_ctx();
    kl_op *m = kl_parse_module(ctx, sb.buf, sb.len, "deep.kir");
    char *d = kl_diag_take(ctx);
    int l = 0, c = 0;
    CHECK(!m);
    CHECK(diag_located(d, "deep.kir", &l, &c) && l == line[k] && c == col[k] && strstr(d, msg[k]), "deep %d: %s", k, d);
    free(d);
    kl_ctx_destroy(ctx);
    kl_sb_free(&sb);
  }
  printf("deep nesting ok\n");
}

static void test_good(void) {
  int n;
  char **files = list_kir(KILN_SOURCE_DIR "/spec/corpus/good", &n);
  CHECK(n >= 10, "only %d good corpus files", n);
  for (int i = 0; i < n; i++) {
    size_t len;
    char *buf = read_file(files[i], &len);
    CHECK(buf, "cannot read %s", files[i]);
    if (!buf) continue;
    kl_ctx *ctx = test_ctx();
    kl_op *m = kl_parse_module(ctx, buf, len, files[i]);
    char *d = kl_diag_take(ctx);
    CHECK(m, "%s: %s", files[i], d);
    if (m) roundtrip_module(ctx, m, files[i]);
    free(d);
    free(buf);
    kl_ctx_destroy(ctx);
  }
  free_list(files, n);
  printf("good corpus ok (%d files)\n", n);
}

/* ---- fuzz ---- */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) { return xorshift64(&rng_state); }

static int fuzz_parsed, fuzz_failed;

/* Parses exactly len bytes (a malloc'd copy, so reads past the end are caught). */
static void fuzz_one(const char *text, size_t len, const char *what) {
  char *copy = malloc(len ? len : 1);
  memcpy(copy, text, len);
  kl_ctx *ctx = test_ctx();
  kl_op *m = kl_parse_module(ctx, copy, len, "fuzz.kir");
  char *d = kl_diag_take(ctx);
  if (!m) {
    int l, c;
    fuzz_failed++;
    CHECK(diag_located(d, "fuzz.kir", &l, &c), "%s: NULL without a located diagnostic: %s", what, d);
  } else {
    fuzz_parsed++;
    CHECK(sound(m) == 0, "%s: unsound IR", what);
    char *t1 = kl_print_op(m, 0);
    kl_op *m2 = kl_parse_module(ctx, t1, strlen(t1), "fuzz2.kir");
    char *t2 = m2 ? kl_print_op(m2, 0) : NULL;
    if (!m2) {
      free(d);
      d = kl_diag_take(ctx);
    }
    CHECK(t2 && !strcmp(t1, t2), "%s: printing is not stable\n--- input\n%.*s\n--- print\n%s--- reprint\n%s%s", what,
          (int)len, copy, t1, t2 ? t2 : "(failed)\n", d);
    free(t1);
    free(t2);
  }
  free(d);
  kl_ctx_destroy(ctx);
  free(copy);
}

static void test_fuzz(void) {
  static const char interesting[] = "{}()[]<>%^@#!\"\\:,=-x0123456789.e \n\t";
  const char *dirs[] = { KILN_SOURCE_DIR "/spec/corpus/good", KILN_SOURCE_DIR "/spec/corpus/bad" };
  int mutations = 0, truncations = 0, scale = 1;
  /* Longer campaigns by hand: KILN_PARSE_FUZZ_SCALE=100 KILN_PARSE_FUZZ_SEED=7 test_parse_corpus */
  if (getenv("KILN_PARSE_FUZZ_SCALE")) scale = atoi(getenv("KILN_PARSE_FUZZ_SCALE"));
  if (getenv("KILN_PARSE_FUZZ_SEED"))
    rng_state += strtoull(getenv("KILN_PARSE_FUZZ_SEED"), NULL, 10) * 0x2545f4914f6cdd1dull;
  if (scale < 1) scale = 1;
  for (int di = 0; di < 2; di++) {
    int n;
    char **files = list_kir(dirs[di], &n);
    for (int i = 0; i < n; i++) {
      size_t len;
      char *buf = read_file(files[i], &len);
      if (!buf) continue;
      if (di == 0)
        for (size_t k = 0; k <= len; k++, truncations++) fuzz_one(buf, k, files[i]);
      int per_file = (di == 0 ? 200 : 40) * scale;
      for (int j = 0; j < per_file; j++, mutations++) {
        char *mut = malloc(len + 8);
        memcpy(mut, buf, len);
        size_t mlen = len;
        int edits = 1 + (int)(rnd() % 4);
        for (int e = 0; e < edits && mlen; e++) {
          size_t pos = rnd() % mlen;
          switch (rnd() % 4) {
            case 0: mut[pos] = (char)(rnd() & 0xff); break;                          /* random byte */
            case 1: mut[pos] = interesting[rnd() % (sizeof interesting - 1)]; break; /* syntax byte */
            case 2:
              memmove(mut + pos, mut + pos + 1, mlen - pos - 1);
              mlen--;
              break; /* delete */
            default:
              memmove(mut + pos + 1, mut + pos, mlen - pos);
              mut[pos] = interesting[rnd() % (sizeof interesting - 1)];
              mlen++;
              break;
          }
        }
        fuzz_one(mut, mlen, files[i]);
        free(mut);
      }
      free(buf);
    }
    free_list(files, n);
  }
  printf("fuzz ok (%d truncations, %d mutations: %d parsed, %d rejected)\n", truncations, mutations, fuzz_parsed,
         fuzz_failed);
}

int main(void) {
  test_bad();
  test_deep();
  test_good();
  test_fuzz();
  return check_summary("test_parse_corpus");
}
