/* test_view.c — hand cases of the view library: evaluation per transform kind, text
 * round trip for every kind, located errors for malformed text, invert errors naming
 * the transform, bounds, simplify (identity maps, folds, contiguous merges), vector
 * lengths, builder errors, and the #view IR attribute round trip. */
#include "core/view.h"
#include "core/view_conv.h"
#include "core/attr.h"
#include "core/parse.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define I64(...)   ((const int64_t[]){ __VA_ARGS__ })
#define NAMES(...) ((const char *const[]){ __VA_ARGS__ })

static kl_view *P(const char *text) {
  kl_view_err e;
  kl_view *v = kl_view_parse(text, strlen(text), &e);
  if (!v) fprintf(stderr, "parse failed at %d:%d: %s\n  in: %s\n", e.line, e.col, e.msg, text);
  return v;
}
/* Evaluates v at u and compares with the expected lower coordinate and validity. */
static bool ev(const kl_view *v, const int64_t *u, const int64_t *want, bool want_valid) {
  int64_t lo[KL_VIEW_MAX_DIMS];
  bool valid = kl_view_eval(v, u, lo);
  if (valid != want_valid) return false;
  return !want_valid || memcmp(lo, want, kl_view_lower_rank(v) * sizeof(int64_t)) == 0;
}
static bool same_text(const kl_view *v, const char *want) {
  char *t = kl_view_print(v);
  bool ok = strcmp(t, want) == 0;
  if (!ok) fprintf(stderr, "  got:  %s\n  want: %s\n", t, want);
  free(t);
  return ok;
}

/* simplify(parse(text)) prints as want. */
static bool simplifies_to(const char *text, const char *want) {
  kl_view *v = P(text), *s = kl_view_simplify(v);
  bool ok = s && same_text(s, want);
  kl_view_free(v);
  kl_view_free(s);
  return ok;
}

/* ---------------------------------------------------------------- kinds */
static void test_kinds(void) {
  kl_view_err e;
  kl_view *base = kl_view_identity(2, I64(3, 4), NAMES("a", "b"), &e);
  CHECK(base && kl_view_rank(base) == 2 && kl_view_numel(base) == 12 && !strcmp(kl_view_name(base, 1), "b"));
  CHECK(kl_view_dim(base, "b") == 1 && kl_view_dim(base, "zz") == -1);
  CHECK(ev(base, I64(2, 3), I64(2, 3), true));
  CHECK(!kl_view_eval(base, I64(3, 0), (int64_t[2]){ 0 })); /* upper coordinate out of range */
  CHECK(!kl_view_eval(base, I64(0, -1), (int64_t[2]){ 0 }));

  /* PassThrough permutes */
  kl_view *t = kl_view_transpose(base, 2, (const int[]){ 1, 0 }, &e);
  CHECK(t && kl_view_size(t, 0) == 4 && !strcmp(kl_view_name(t, 0), "b"));
  CHECK(ev(t, I64(3, 1), I64(1, 3), true));
  kl_view *pt = kl_view_passthrough(base, 2, NAMES("x", "y"), NAMES("b", "a"), &e);
  CHECK(pt && ev(pt, I64(2, 1), I64(1, 2), true) && !strcmp(kl_view_name(pt, 1), "y"));

  /* Pad: l = u - left, invalid outside [0, 4) */
  kl_view *pad = kl_view_pad(base, 1, NAMES("b"), I64(1, 2), &e);
  CHECK(pad && kl_view_size(pad, 1) == 7);
  CHECK(ev(pad, I64(0, 0), NULL, false));
  CHECK(ev(pad, I64(1, 1), I64(1, 0), true));
  CHECK(ev(pad, I64(2, 4), I64(2, 3), true));
  CHECK(ev(pad, I64(2, 5), NULL, false) && ev(pad, I64(2, 6), NULL, false));

  /* Slice: l = u + begin */
  kl_view *sl = kl_view_slice(base, 1, NAMES("b"), I64(1, 3), &e);
  CHECK(sl && kl_view_size(sl, 1) == 2 && ev(sl, I64(0, 1), I64(0, 2), true));

  /* Embed: l = sum c*u, out of range is invalid; negative and zero coefficients */
  kl_view *emb = kl_view_embed(base, "b", 2, NAMES("y", "o"), I64(2, 3), I64(2, 1), &e);
  CHECK(emb && kl_view_rank(emb) == 3 && !strcmp(kl_view_name(emb, 1), "y"));
  CHECK(ev(emb, I64(1, 1, 1), I64(1, 3), true));
  CHECK(ev(emb, I64(1, 1, 2), NULL, false)); /* 2 + 2 = 4 >= 4 */
  kl_view *embn = kl_view_embed(base, "b", 2, NAMES("y", "o"), I64(2, 4), I64(-1, 1), &e);
  CHECK(embn && ev(embn, I64(0, 1, 3), I64(0, 2), true) && ev(embn, I64(0, 1, 0), NULL, false));
  kl_view *emb0 = kl_view_embed(base, "b", 2, NAMES("y", "o"), I64(5, 4), I64(0, 1), &e);
  CHECK(emb0 && ev(emb0, I64(0, 4, 3), I64(0, 3), true));

  /* Unmerge: row-major; Merge: delinearisation */
  kl_view *un = kl_view_unmerge(base, "b", 2, NAMES("hi", "lo"), I64(2, 2), &e);
  CHECK(un && ev(un, I64(2, 1, 1), I64(2, 3), true) && ev(un, I64(0, 1, 0), I64(0, 2), true));
  kl_view *bad_un = kl_view_unmerge(base, "b", 2, NAMES("hi", "lo"), I64(3, 2), &e);
  CHECK(!bad_un && strstr(e.msg, "product"));
  kl_view *mg = kl_view_merge(base, "ab", 2, NAMES("a", "b"), &e);
  CHECK(mg && kl_view_rank(mg) == 1 && kl_view_size(mg, 0) == 12);
  CHECK(ev(mg, I64(7), I64(1, 3), true) && ev(mg, I64(11), I64(2, 3), true));
  kl_view *mgr = kl_view_merge(base, "ba", 2, NAMES("b", "a"), &e); /* b most significant */
  CHECK(mgr && ev(mgr, I64(7), I64(1, 2), true));

  /* AddDim: an ignored upper dim */
  kl_view *ad = kl_view_add_dim(base, "z", 5, 1, &e);
  CHECK(ad && kl_view_rank(ad) == 3 && kl_view_size(ad, 1) == 5 && ev(ad, I64(2, 4, 3), I64(2, 3), true));
  CHECK(!kl_view_add_dim(base, "z", 5, 3, &e) && strstr(e.msg, "position"));

  /* Broadcast: l = u mod m */
  kl_view *one = kl_view_identity(2, I64(1, 4), NAMES("n", "c"), &e);
  kl_view *bc = kl_view_broadcast(one, 1, NAMES("n"), I64(6), &e);
  CHECK(bc && kl_view_size(bc, 0) == 6 && ev(bc, I64(5, 2), I64(0, 2), true));
  kl_view *bc3 = kl_view_broadcast(base, 1, NAMES("a"), I64(7), &e);
  CHECK(bc3 && ev(bc3, I64(5, 1), I64(2, 1), true));

  /* ConstDim: a lower dim fixed to a value */
  kl_view *cd = kl_view_const_dim(base, "a", 2, &e);
  CHECK(cd && kl_view_rank(cd) == 1 && ev(cd, I64(3), I64(2, 3), true));
  CHECK(!kl_view_const_dim(base, "a", 3, &e) && strstr(e.msg, "ConstDim value"));

  /* Reshape through Merge/Unmerge (one map, or two when a group needs both) */
  kl_view *r1 = kl_view_reshape(base, 1, I64(12), NULL, &e);
  CHECK(r1 && r1->nmaps == 2 && !strcmp(kl_view_name(r1, 0), "r0"));
  kl_view *r2 = kl_view_reshape(base, 3, I64(2, 2, 3), NAMES("p", "q", "r"), &e);
  CHECK(r2 && r2->nmaps == 3);
  kl_view *r3 = kl_view_reshape(base, 4, I64(3, 1, 2, 2), NULL, &e);
  CHECK(r3 && r3->nmaps == 2);
  bool ok1 = true, ok2 = true, ok3 = true;
  for (int64_t i = 0; i < 12; i++) {
    int64_t want[2] = { i / 4, i % 4 };
    ok1 &= ev(r1, I64(i), want, true);
    ok2 &= ev(r2, (int64_t[]){ i / 6, i / 3 % 2, i % 3 }, want, true);
    ok3 &= ev(r3, (int64_t[]){ i / 4, 0, i / 2 % 2, i % 2 }, want, true);
  }
  CHECK(ok1 && ok2 && ok3);
  CHECK(!kl_view_reshape(base, 1, I64(11), NULL, &e) && strstr(e.msg, "elements"));

  /* addresses with strides */
  bool valid;
  CHECK(kl_view_eval_addr(t, I64(3, 2), NULL, &valid) == 11 && valid);
  CHECK(kl_view_eval_addr(t, I64(3, 2), I64(1, 3), &valid) == 2 + 9 && valid);
  CHECK(kl_view_lower_rank(t) == 2 && kl_view_lower_size(t, 1) == 4 && !strcmp(kl_view_lower_name(t, 0), "a"));

  /* builder errors are values */
  CHECK(!kl_view_pad(base, 1, NAMES("nope"), I64(1, 1), &e) && strstr(e.msg, "nope"));
  CHECK(!kl_view_pad(base, 1, NAMES("a"), I64(-1, 1), &e) && strstr(e.msg, "Pad"));
  CHECK(!kl_view_slice(base, 1, NAMES("a"), I64(2, 5), &e) && strstr(e.msg, "Slice"));
  CHECK(!kl_view_transpose(base, 2, (const int[]){ 0, 0 }, &e) && strstr(e.msg, "permutation"));
  CHECK(!kl_view_merge(base, "m", 2, NAMES("a", "a"), &e) && strstr(e.msg, "twice"));
  CHECK(!kl_view_passthrough(base, 2, NAMES("x", "x"), NAMES("a", "b"), &e) && strstr(e.msg, "same name"));
  CHECK(!kl_view_passthrough(base, 2, NAMES("x y", "z"), NAMES("a", "b"), &e) && strstr(e.msg, "bad name"));
  CHECK(!kl_view_identity(1, I64(0), NULL, &e) && strstr(e.msg, "size"));
  CHECK(!kl_view_broadcast(base, 1, NAMES("a"), I64(0), &e) && strstr(e.msg, "broadcast"));

  /* compose: a then b; shapes must agree */
  kl_view *c = kl_view_compose(pad, base, &e);
  CHECK(c && c->nmaps == 3 && ev(c, I64(1, 2), I64(1, 1), true) && ev(c, I64(1, 0), NULL, false));
  CHECK(!kl_view_compose(base, t, &e) && strstr(e.msg, "compose") && strstr(e.msg, "[4,3] != [3,4]"));
  kl_view_free(c);

  /* kl_view_make rejects malformed maps with a message */
  kl_vtrans tr = { .kind = KL_VT_MERGE,
                   .nparams = 2,
                   .nupper = 1,
                   .nlower = 2,
                   .params = I64(3, 4),
                   .upper = (const int[]){ 0 },
                   .lower = (const int[]){ 0, 1 } };
  kl_vmap m = { .nupper = 1,
                .nlower = 2,
                .ntrans = 1,
                .upper_names = NAMES("m"),
                .upper_sizes = I64(11),
                .lower_names = NAMES("x", "y"),
                .lower_sizes = I64(3, 4),
                .trans = &tr };
  CHECK(!kl_view_make(1, &m, &e) && strstr(e.msg, "product"));
  m.upper_sizes = I64(12);
  kl_view *mk = kl_view_make(1, &m, &e);
  CHECK(mk && ev(mk, I64(5), I64(1, 1), true));
  kl_view *cl = kl_view_clone(mk);
  CHECK(kl_view_equal(cl, mk) && !kl_view_equal(cl, mg));
  kl_arena ar;
  kl_arena_init(&ar);
  kl_view *in_arena = kl_view_copy_to_arena(mk, &ar);
  CHECK(kl_view_equal(in_arena, mk));
  kl_arena_destroy(&ar);
  kl_view_free(cl);
  kl_view_free(mk);

  kl_view *all[] = { base, t, pt, pad, sl, emb, embn, emb0, un, mg, mgr, ad, one, bc, bc3, cd, r1, r2, r3 };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) kl_view_free(all[i]);
  printf("kinds: evaluation per transform kind, builders, compose, make\n");
}

/* ---------------------------------------------------------------- text */
static void test_text(void) {
  /* one canonical text per kind (plus a stack), each must round-trip exactly */
  static const char *const texts[] = {
    "[PassThrough [\"a\",\"b\"] at [0,1] -> [\"b\",\"a\"] at [1,0]] bounds=[3,4] -> [4,3]",
    "[Pad{1,2} [\"h\"] at [0] -> [\"h\"] at [0], PassThrough [\"w\"] at [1] -> [\"w\"] at [1]] bounds=[8,5] -> [5,5]",
    "[Slice{2,5,0,1} [\"x\",\"y\"] at [0,1] -> [\"x\",\"y\"] at [0,1]] bounds=[3,1] -> [9,2]",
    "[Embed{2,-1,0} [\"y\",\"o\",\"z\"] at [0,1,2] -> [\"h\"] at [0]] bounds=[3,4,2] -> [7]",
    "[Unmerge{2,3} [\"g\",\"c\"] at [0,1] -> [\"gc\"] at [0]] bounds=[2,3] -> [6]",
    "[Merge{4,8} [\"gk\"] at [0] -> [\"g\",\"k\"] at [0,1], PassThrough [\"m\"] at [1] -> [\"m\"] at [2]] "
    "bounds=[32,5] -> [4,8,5]",
    "[AddDim{5} [\"z\"] at [0] -> [] at [], PassThrough [\"a\"] at [1] -> [\"a\"] at [0]] bounds=[5,2] -> [2]",
    "[Broadcast{1,3} [\"n\",\"c\"] at [0,1] -> [\"n\",\"c\"] at [0,1]] bounds=[6,9] -> [1,3]",
    "[ConstDim{0,1,2,4} [] at [] -> [\"u\",\"v\"] at [0,2], PassThrough [\"a\"] at [0] -> [\"a\"] at [1]] bounds=[7] "
    "-> [1,7,4]",
    "[Merge{2,3} [\"m\"] at [0] -> [\"x\",\"y\"] at [0,1]] bounds=[6] -> [2,3] | "
    "[Unmerge{2,3} [\"x\",\"y\"] at [0,1] -> [\"f\"] at [0]] bounds=[2,3] -> [6] | "
    "[Pad{0,2} [\"f\"] at [0] -> [\"f\"] at [0]] bounds=[6] -> [4]",
    "[] bounds=[] -> []",
    "[Merge{2,2,2} [\"a.b$c_1\"] at [0] -> [\"A\",\"B\",\"C\"] at [2,1,0]] bounds=[8] -> [2,2,2]",
    "[Xor{2,4} [\"q\",\"c\"] at [1,0] -> [\"q\",\"c\"] at [0,1]] bounds=[4,16] -> [16,4]",
  };
  bool seen[KL_VT_COUNT] = { false };
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    kl_view *v = P(texts[i]);
    CHECK(v != NULL);
    if (!v) continue;
    CHECK(same_text(v, texts[i]));
    char *t = kl_view_print(v);
    kl_view *w = P(t);
    CHECK(w && kl_view_equal(v, w));
    for (int m = 0; m < v->nmaps; m++)
      for (int k = 0; k < v->maps[m].ntrans; k++) seen[v->maps[m].trans[k].kind] = true;
    free(t);
    kl_view_free(w);
    kl_view_free(v);
  }
  for (int k = 0; k < KL_VT_COUNT; k++) CHECK(seen[k]);
  /* whitespace and newlines anywhere; text need not be NUL-terminated */
  const char *loose = "  [ Merge { 4 , 8 } [ \"gk\" ] at [ 0 ]->[\"g\" ,\"k\"] at [0, 1],\n"
                      "    PassThrough [\"m\"] at [1] -> [\"m\"] at [2] ]\n bounds = [32, 5] -> [4,8,5]\n";
  kl_view *lv = kl_view_parse(loose, strlen(loose), NULL);
  CHECK(lv && same_text(lv, texts[5]));
  kl_view_free(lv);
  char buf[200];
  snprintf(buf, sizeof buf, "%sGARBAGE", texts[4]);
  kl_view *nt = kl_view_parse(buf, strlen(texts[4]), NULL);
  CHECK(nt && same_text(nt, texts[4]));
  kl_view_free(nt);
  /* builder output round-trips too */
  kl_view *b = kl_view_identity(3, I64(2, 6, 5), NAMES("n", "c", "h"), NULL);
  kl_view *b2 = kl_view_pad(b, 1, NAMES("h"), I64(1, 1), NULL);
  kl_view *b3 = kl_view_embed(b2, "h", 2, NAMES("y", "ho"), I64(3, 5), I64(1, 1), NULL);
  kl_view *b4 = kl_view_merge(b3, "k", 2, NAMES("c", "y"), NULL);
  char *t4 = kl_view_print(b4);
  kl_view *p4 = P(t4);
  CHECK(p4 && kl_view_equal(p4, b4));
  free(t4);
  kl_view_free(p4);
  kl_view_free(b);
  kl_view_free(b2);
  kl_view_free(b3);
  kl_view_free(b4);
  printf("text: %zu canonical texts round-trip (every kind), loose whitespace, length-bounded input\n",
         sizeof texts / sizeof texts[0]);
}

/* ---------------------------------------------------------------- malformed */
typedef struct bad_text {
  const char *text;
  int line, col;
  const char *msg;
} bad_text;
static void test_malformed(void) {
  static const bad_text bad[] = {
    { "", 1, 1, "expected '['" },
    { "[Foo{1} [\"a\"] at [0] -> [\"a\"] at [0]] bounds=[1] -> [1]", 1, 2, "unknown transform kind 'Foo'" },
    { "[Pad{1} [\"a\"] at [0] -> [\"a\"] at [0]] bounds=[3] -> [2]", 1, 2, "takes 2 parameter(s), got 1" },
    { "[PassThrough{1} [\"a\"] at [0] -> [\"a\"] at [0]] bounds=[1] -> [1]", 1, 2, "takes 0 parameter(s)" },
    { "[PassThrough [\"a\"] at [0] -> [\"a\"] at [0]] bounds=[2,3] -> [2]", 1, 44, "upper dim 1 is not covered" },
    { "[PassThrough [\"a\"] at [0] -> [\"a\"] at [0], PassThrough [\"b\"] at [0] -> [\"b\"] at [1]] bounds=[2] -> "
      "[2,2]",
      1, 56, "covered twice" },
    { "[PassThrough [\"a\"] at [0] -> [\"a\"] at [0]] bounds=[2] -> [3]", 1, 2,
      "has size 2 but lower dim 0 has size 3" },
    { "[Merge{2,3} [\"m\"] at [0] -> [\"x\",\"y\"] at [0,1]] bounds=[7] -> [2,3]", 1, 2,
      "upper size 7 != product of parts 6" },
    { "[PassThrough [\"a\"] at [0] -> [\"a\"] at [0]] [1] -> [1]", 1, 44, "expected 'bounds'" },
    { "[PassThrough [\"a\"] at [0] [\"a\"] at [0]] bounds=[1] -> [1]", 1, 27, "expected '->'" },
    { "[PassThrough [\"a", 1, 15, "unterminated dim name" },
    { "[PassThrough [\"a] at [0] -> [\"a\"] at [0]] bounds=[1] -> [1]", 1, 15, "bad dim name \"a] at [0] -> [\"" },
    { "[PassThrough [\"a\"] at [0] -> [\"a\"] at [0]] bounds=[1] -> [1] extra", 1, 62, "expected '|' or the end" },
    { "[PassThrough [\"a\"] at [0] -> [\"a\"] at [0]] bounds=[2] -> [2] |\n  [PassThrough [\"a\"] at [0] -> [\"a\"] at "
      "[0]] bounds=[3] -> [3]",
      2, 3, "map 1 upper bounds do not match map 0 lower bounds: [3] != [2]" },
    { "[PassThrough [\"a\",\"b\"] at [0] -> [\"a\"] at [0]] bounds=[1] -> [1]", 1, 24,
      "2 upper dim names but 1 upper dims" },
    { "[PassThrough [\"a\"] at [3] -> [\"a\"] at [0]] bounds=[1] -> [1]", 1, 14, "upper dim 3 out of range" },
    { "[PassThrough [\"a\"] at [0] -> [\"a\"] at [0]] bounds=[99999999999999999999] -> [1]", 1, 52,
      "integer too large" },
    { "[PassThrough [\"a b\"] at [0] -> [\"a\"] at [0]] bounds=[1] -> [1]", 1, 15, "bad dim name \"a b\"" },
    { "[Pad{-1,2} [\"a\"] at [0] -> [\"a\"] at [0]] bounds=[2] -> [1]", 1, 2, "Pad amounts" },
    { "[Slice{0,9} [\"a\"] at [0] -> [\"a\"] at [0]] bounds=[9] -> [4]", 1, 2, "end <= lower size 4" },
    { "[ConstDim{4,4} [] at [] -> [\"a\"] at [0]] bounds=[] -> [4]", 1, 2, "ConstDim value 4 outside [0, 4)" },
    { "[PassThrough [\"a\",\"a\"] at [0,1] -> [\"b\",\"c\"] at [0,1]] bounds=[1,1] -> [1,1]", 1, 56,
      "same name \"a\"" },
    { "[PassThrough [\"a\"] at [0] -> [\"a\"] at [0] bounds=[1] -> [1]", 1, 43,
      "expected ']' to close the transform list" },
    { "[Merge{2,3} [\"m\",\"n\"] at [0,1] -> [\"x\",\"y\"] at [0,1]] bounds=[6,1] -> [2,3]", 1, 2,
      "Merge maps 1 upper dim" },
    { "[Broadcast{5} [\"a\"] at [0] -> [\"a\"] at [0]] bounds=[8] -> [4]", 1, 2, "Broadcast modulus 5" },
    { "[Unmerge{2,x} [\"a\",\"b\"] at [0,1] -> [\"c\"] at [0]] bounds=[2,3] -> [6]", 1, 12, "expected an integer" },
    { "[AddDim{2} [\"z\"] at [0] -> [] at []] bounds=[0] -> []", 1, 38, "size 0 outside [1, 2^40]" },
  };
  int n = (int)(sizeof bad / sizeof bad[0]);
  for (int i = 0; i < n; i++) {
    kl_view_err e = { 0 };
    kl_view *v = kl_view_parse(bad[i].text, strlen(bad[i].text), &e);
    bool ok = !v && e.line == bad[i].line && e.col == bad[i].col && strstr(e.msg, bad[i].msg);
    if (!ok)
      fprintf(stderr, "  malformed %d: got %d:%d: %s\n  want %d:%d: ...%s...\n", i, e.line, e.col, e.msg, bad[i].line,
              bad[i].col, bad[i].msg);
    CHECK(ok);
    kl_view_free(v);
    CHECK(kl_view_parse(bad[i].text, strlen(bad[i].text), NULL) == NULL); /* no err struct: still fine */
  }
  /* truncations of a valid text never crash and always fail (except the full text) */
  const char *good = "[Merge{4,8} [\"gk\"] at [0] -> [\"g\",\"k\"] at [0,1], PassThrough [\"m\"] at [1] -> [\"m\"] at "
                     "[2]] bounds=[32,5] -> [4,8,5]";
  int fails = 0;
  for (size_t k = 0; k < strlen(good); k++) {
    kl_view_err e;
    kl_view *v = kl_view_parse(good, k, &e);
    if (!v && e.col >= 1 && (size_t)e.col <= k + 1) fails++;
    kl_view_free(v);
  }
  CHECK(fails == (int)strlen(good));
  /* too many maps is an error, not an allocation storm */
  kl_sb sb = { 0 };
  for (int i = 0; i <= KL_VIEW_MAX_MAPS; i++) kl_sb_puts(&sb, i ? " | [] bounds=[] -> []" : "[] bounds=[] -> []");
  kl_view_err e;
  CHECK(kl_view_parse(kl_sb_str(&sb), sb.len, &e) == NULL && strstr(e.msg, "too many maps") && e.col > 1);
  kl_view *many = kl_view_parse(kl_sb_str(&sb), sb.len - strlen(" | [] bounds=[] -> []"), &e);
  CHECK(many && many->nmaps == KL_VIEW_MAX_MAPS);
  kl_view *none = many ? kl_view_simplify(many) : NULL;
  CHECK(none && none->nmaps == 1);
  CHECK(many && !kl_view_compose(many, many, &e) && strstr(e.msg, "at most"));
  kl_view_free(many);
  kl_view_free(none);
  kl_sb_free(&sb);
  /* mutations: each either parses (and then round-trips) or fails with a position */
  static const char alphabet[] = "[]{}\",|->= 0123456789-azPadMergeSliceat\n";
  uint64_t x = 88172645463325252ull;
  int parsed = 0, rejected = 0;
  for (int it = 0; it < 3000; it++) {
    char buf[256];
    size_t len = strlen(good);
    memcpy(buf, good, len);
    for (int m = 0; m < 1 + it % 3; m++) {
      xorshift64(&x);
      size_t pos = (size_t)(x % len), op = (x >> 20) % 3;
      char c = alphabet[(x >> 32) % (sizeof alphabet - 1)];
      if (op == 0)
        buf[pos] = c;
      else if (op == 1 && len > 1) {
        memmove(buf + pos, buf + pos + 1, len - pos - 1);
        len--;
      } else if (len + 1 < sizeof buf) {
        memmove(buf + pos + 1, buf + pos, len - pos);
        buf[pos] = c;
        len++;
      }
    }
    kl_view_err e = { 0 };
    kl_view *v = kl_view_parse(buf, len, &e);
    if (v) {
      char *t = kl_view_print(v);
      kl_view *w = kl_view_parse(t, strlen(t), NULL);
      CHECK(w && kl_view_equal(v, w));
      free(t);
      kl_view_free(w);
      kl_view_free(v);
      parsed++;
    } else {
      CHECK(e.line >= 1 && e.col >= 1 && e.msg[0]);
      rejected++;
    }
  }
  printf("malformed: %d bad texts give located errors; %zu truncations and %d mutations (%d still valid) handled\n", n,
         strlen(good), parsed + rejected, parsed);
}

/* ---------------------------------------------------------------- invert */
static void test_invert(void) {
  static const struct {
    const char *text, *named;
  } non[] = {
    { "[Pad{1,2} [\"h\"] at [0] -> [\"h\"] at [0]] bounds=[8] -> [5]",
      "Pad{1,2} [\"h\"] at [0] -> [\"h\"] at [0] is not invertible" },
    { "[Slice{1,3} [\"h\"] at [0] -> [\"h\"] at [0]] bounds=[2] -> [5]", "Slice{1,3}" },
    { "[Embed{1,1} [\"y\",\"o\"] at [0,1] -> [\"h\"] at [0]] bounds=[3,3] -> [5]", "Embed{1,1}" },
    { "[Broadcast{1} [\"n\"] at [0] -> [\"n\"] at [0]] bounds=[4] -> [1]", "Broadcast{1}" },
    { "[AddDim{2} [\"z\"] at [0] -> [] at []] bounds=[2] -> []", "AddDim{2}" },
    { "[ConstDim{1,2} [] at [] -> [\"c\"] at [0]] bounds=[] -> [2]", "ConstDim{1,2}" },
  };
  for (size_t i = 0; i < sizeof non / sizeof non[0]; i++) {
    kl_view *v = P(non[i].text);
    kl_view_err e = { 0 };
    kl_view *w = v ? kl_view_invert(v, &e) : NULL;
    CHECK(v && !w && strstr(e.msg, non[i].named) && strstr(e.msg, "not invertible"));
    kl_view_free(v);
  }
  /* the failing transform is named with its map index inside a stack */
  kl_view *st = P("[Merge{2,3} [\"m\"] at [0] -> [\"x\",\"y\"] at [0,1]] bounds=[6] -> [2,3] | "
                  "[PassThrough [\"x\"] at [0] -> [\"x\"] at [0], Pad{1,0} [\"y\"] at [1] -> [\"y\"] at [1]] "
                  "bounds=[2,3] -> [2,2]");
  kl_view_err e;
  CHECK(st && !kl_view_invert(st, &e) && strstr(e.msg, "map 1 transform 1 Pad{1,0}"));
  kl_view_free(st);
  /* invertible: PassThrough, Merge <-> Unmerge, AddDim{1} <-> ConstDim{0,1} */
  kl_view *v = P("[Merge{2,3} [\"m\"] at [0] -> [\"x\",\"y\"] at [0,1], AddDim{1} [\"one\"] at [1] -> [] at []] "
                 "bounds=[6,1] -> [2,3] | "
                 "[PassThrough [\"x\",\"y\"] at [0,1] -> [\"b\",\"a\"] at [1,0], ConstDim{0,1} [] at [] -> [\"c\"] at "
                 "[2]] bounds=[2,3] -> [3,2,1]");
  kl_view *w = v ? kl_view_invert(v, &e) : NULL;
  CHECK(w &&
        same_text(w,
                  "[PassThrough [\"b\",\"a\"] at [1,0] -> [\"x\",\"y\"] at [0,1], AddDim{1} [\"c\"] at [2] -> [] at "
                  "[]] bounds=[3,2,1] -> [2,3] | "
                  "[Unmerge{2,3} [\"x\",\"y\"] at [0,1] -> [\"m\"] at [0], ConstDim{0,1} [] at [] -> [\"one\"] at [1]] "
                  "bounds=[2,3] -> [6,1]"));
  bool ok = true;
  for (int64_t a = 0; a < 3; a++)
    for (int64_t b = 0; b < 2; b++) {
      int64_t u[2], x[3];
      ok &= kl_view_eval(w, (int64_t[]){ a, b, 0 }, u) && kl_view_eval(v, u, x) && x[0] == a && x[1] == b && x[2] == 0;
    }
  CHECK(ok);
  kl_view_free(v);
  kl_view_free(w);
  printf("invert: errors name the transform (Pad, Slice, Embed, Broadcast, AddDim{2}, ConstDim{1,2}); "
         "Merge/Unmerge/AddDim/ConstDim inverse\n");
}

/* Round trip of a partial inverse w of v by evaluation: every valid upper point u of v
 * comes back (w(v(u)) = u, valid), and every lower point of v is either reached by v and
 * maps back to its preimage or gives an invalid point of w. */
static bool partial_round_trip(const kl_view *v, const kl_view *w) {
  int64_t nu = kl_view_numel(v), nl = kl_view_numel(w);
  int ru = kl_view_rank(v), rl = kl_view_lower_rank(v);
  if (kl_view_rank(w) != rl || kl_view_lower_rank(w) != ru) return false;
  bool *hit = calloc((size_t)nl, 1);
  bool ok = true;
  for (int64_t f = 0; f < nu && ok; f++) {
    int64_t u[KL_VIEW_MAX_DIMS], l[KL_VIEW_MAX_DIMS], b[KL_VIEW_MAX_DIMS];
    int64_t q = f;
    for (int d = ru - 1; d >= 0; d--) {
      u[d] = q % kl_view_size(v, d);
      q /= kl_view_size(v, d);
    }
    if (!kl_view_eval(v, u, l)) continue; /* an invalid point of v (Pad): never reached */
    ok &= kl_view_eval(w, l, b) && memcmp(b, u, (size_t)ru * sizeof *u) == 0;
    int64_t lin = 0;
    for (int d = 0; d < rl; d++) lin = lin * kl_view_size(w, d) + l[d];
    hit[lin] = true;
  }
  for (int64_t f = 0; f < nl && ok; f++) {
    int64_t l[KL_VIEW_MAX_DIMS], b[KL_VIEW_MAX_DIMS], q = f;
    for (int d = rl - 1; d >= 0; d--) {
      l[d] = q % kl_view_size(w, d);
      q /= kl_view_size(w, d);
    }
    if (!hit[f]) ok &= !kl_view_eval(w, l, b); /* not reached by v: invalid in the inverse */
  }
  free(hit);
  return ok;
}

static void test_invert_partial(void) {
  kl_view_err e = { 0 };
  /* Slice{1,3} of [5] -> Pad{1,2}: 0 and 3, 4 invalid */
  kl_view *s = P("[Slice{1,3} [\"h\"] at [0] -> [\"h\"] at [0]] bounds=[2] -> [5]");
  kl_view *si = s ? kl_view_invert_partial(s, KL_VIEW_INVERT_SLICE, &e) : NULL;
  CHECK(si && same_text(si, "[Pad{1,2} [\"h\"] at [0] -> [\"h\"] at [0]] bounds=[5] -> [2]"));
  CHECK(si && ev(si, I64(0), I64(0), false) && ev(si, I64(1), I64(0), true) && ev(si, I64(2), I64(1), true) &&
        ev(si, I64(3), I64(0), false) && ev(si, I64(4), I64(0), false));
  CHECK(si && kl_view_invalid_dims(si) == 1);
  CHECK(si && partial_round_trip(s, si));
  /* the exact inverse keeps its contract; the Pad flag alone does not invert a Slice */
  CHECK(s && !kl_view_invert(s, &e) && strstr(e.msg, "Slice{1,3}"));
  CHECK(s && !kl_view_invert_partial(s, KL_VIEW_INVERT_PAD, &e) && strstr(e.msg, "not invertible"));
  /* Pad{1,2} of [5] (a write view) -> Slice{1,6} of [8] */
  kl_view *p = P("[Pad{1,2} [\"h\"] at [0] -> [\"h\"] at [0]] bounds=[8] -> [5]");
  kl_view *pi = p ? kl_view_invert_partial(p, KL_VIEW_INVERT_PAD, &e) : NULL;
  CHECK(pi && same_text(pi, "[Slice{1,6} [\"h\"] at [0] -> [\"h\"] at [0]] bounds=[5] -> [8]"));
  CHECK(pi && kl_view_invalid_dims(pi) == 0 && partial_round_trip(p, pi));
  CHECK(p && !kl_view_invert_partial(p, KL_VIEW_INVERT_SLICE, &e) && strstr(e.msg, "Pad{1,2}"));
  /* inverse of the inverse is the view again */
  kl_view *sii = si ? kl_view_invert_partial(si, KL_VIEW_INVERT_PAD, &e) : NULL;
  CHECK(sii && s && kl_view_equal(sii, s));
  /* a stack: transpose + 2-D slice over a reshape */
  kl_view *st = P("[PassThrough [\"a\",\"b\"] at [0,1] -> [\"b\",\"a\"] at [1,0]] bounds=[2,3] -> [3,2] | "
                  "[Slice{1,4,0,2} [\"b\",\"a\"] at [0,1] -> [\"x\",\"y\"] at [0,1]] bounds=[3,2] -> [4,3] | "
                  "[Unmerge{4,3} [\"x\",\"y\"] at [0,1] -> [\"f\"] at [0]] bounds=[4,3] -> [12]");
  kl_view *sti = st ? kl_view_invert_partial(st, KL_VIEW_INVERT_SLICE | KL_VIEW_INVERT_PAD, &e) : NULL;
  CHECK(sti && kl_view_rank(sti) == 1 && kl_view_size(sti, 0) == 12 && kl_view_lower_rank(sti) == 2);
  CHECK(sti && partial_round_trip(st, sti));
  /* Broadcast, AddDim{n>1}, Embed stay non-invertible under every flag */
  static const char *const non[] = {
    "[Broadcast{1} [\"n\"] at [0] -> [\"n\"] at [0]] bounds=[4] -> [1]",
    "[AddDim{2} [\"z\"] at [0] -> [] at []] bounds=[2] -> []",
    "[Embed{1,1} [\"y\",\"o\"] at [0,1] -> [\"h\"] at [0]] bounds=[3,3] -> [5]",
  };
  for (size_t i = 0; i < sizeof non / sizeof non[0]; i++) {
    kl_view *v = P(non[i]);
    CHECK(v && !kl_view_invert_partial(v, KL_VIEW_INVERT_SLICE | KL_VIEW_INVERT_PAD, &e) &&
          strstr(e.msg, "not invertible"));
    kl_view_free(v);
  }
  kl_view_free(s);
  kl_view_free(si);
  kl_view_free(sii);
  kl_view_free(p);
  kl_view_free(pi);
  kl_view_free(st);
  kl_view_free(sti);
  printf("invert_partial: Slice <-> Pad (flags), points outside a slice invalid, round trips by evaluation, "
         "Broadcast/AddDim/Embed refused\n");
}

/* ---------------------------------------------------------------- bounds */
static void test_bounds(void) {
  kl_view *v = P("[PassThrough [\"n\"] at [0] -> [\"n\"] at [0], Pad{1,1} [\"h\"] at [1] -> [\"h\"] at [1], "
                 "PassThrough [\"w\"] at [2] -> [\"w\"] at [2]] bounds=[2,6,4] -> [2,4,4]");
  CHECK(v && kl_view_invalid_dims(v) == 2u && kl_view_trans_may_be_invalid(v, 0, 1) &&
        !kl_view_trans_may_be_invalid(v, 0, 0));
  /* a slice that cuts the padding away makes the view always valid */
  kl_view *s = kl_view_slice(v, 1, NAMES("h"), I64(1, 5), NULL);
  CHECK(s && kl_view_invalid_dims(s) == 0 && !kl_view_trans_may_be_invalid(s, 1, 1));
  /* a window that always fits: no check; one that can leave the range: both window dims */
  kl_view *e1 = P("[Embed{1,1} [\"y\",\"o\"] at [0,1] -> [\"h\"] at [0], PassThrough [\"c\"] at [2] -> [\"c\"] at [1]] "
                  "bounds=[3,4,2] -> [6,2]");
  kl_view *e2 = P("[Embed{1,1} [\"y\",\"o\"] at [0,1] -> [\"h\"] at [0], PassThrough [\"c\"] at [2] -> [\"c\"] at [1]] "
                  "bounds=[3,5,2] -> [6,2]");
  CHECK(e1 && kl_view_invalid_dims(e1) == 0);
  CHECK(e2 && kl_view_invalid_dims(e2) == 3u && kl_view_trans_may_be_invalid(e2, 0, 0));
  /* the dims that feed a pad through a merge are all reported */
  kl_view *m = P("[Merge{2,6} [\"nh\"] at [0] -> [\"n\",\"h\"] at [0,1], PassThrough [\"w\"] at [1] -> [\"w\"] at [2]] "
                 "bounds=[12,4] -> [2,6,4] | "
                 "[PassThrough [\"n\"] at [0] -> [\"n\"] at [0], Pad{1,1} [\"h\"] at [1] -> [\"h\"] at [1], "
                 "PassThrough [\"w\"] at [2] -> [\"w\"] at [2]] bounds=[2,6,4] -> [2,4,4]");
  CHECK(m && kl_view_invalid_dims(m) == 1u && kl_view_trans_may_be_invalid(m, 1, 1));
  kl_view_free(v);
  kl_view_free(s);
  kl_view_free(e1);
  kl_view_free(e2);
  kl_view_free(m);
  printf("bounds: invalid dims through pad, slice, embed windows and merges\n");
}

/* ---------------------------------------------------------------- simplify */
static void test_simplify(void) {
  /* identity maps are dropped, top and bottom names are kept */
  CHECK(simplifies_to(
      "[PassThrough [\"a\",\"b\"] at [0,1] -> [\"x\",\"y\"] at [0,1]] bounds=[2,3] -> [2,3] | "
      "[Pad{0,0} [\"x\"] at [0] -> [\"p\"] at [0], Slice{0,3} [\"y\"] at [1] -> [\"q\"] at [1]] bounds=[2,3] -> [2,3]",
      "[PassThrough [\"a\"] at [0] -> [\"p\"] at [0], PassThrough [\"b\"] at [1] -> [\"q\"] at [1]] bounds=[2,3] -> "
      "[2,3]"));
  /* Merge then Unmerge of the same parts is a PassThrough; Pad + Pad, Slice + Slice fold */
  CHECK(simplifies_to("[Merge{2,3} [\"m\"] at [0] -> [\"x\",\"y\"] at [0,1], Pad{1,0} [\"h\"] at [1] -> [\"h\"] at "
                      "[2], Slice{1,4} [\"w\"] at [2] -> [\"w\"] at [3]] bounds=[6,5,3] -> [2,3,4,6] | "
                      "[Unmerge{2,3} [\"x\",\"y\"] at [0,1] -> [\"f\"] at [0], Pad{0,2} [\"h\"] at [2] -> [\"h\"] at "
                      "[1], Slice{2,8} [\"w\"] at [3] -> [\"w\"] at [2]] bounds=[2,3,4,6] -> [6,2,9]",
                      "[PassThrough [\"m\"] at [0] -> [\"f\"] at [0], Pad{1,2} [\"h\"] at [1] -> [\"h\"] at [1], "
                      "Slice{3,6} [\"w\"] at [2] -> [\"w\"] at [2]] bounds=[6,5,3] -> [6,2,9]"));
  /* collapse contiguous merges: Merge{2,3,4} whose (3,4) parts are recombined by an Unmerge */
  CHECK(simplifies_to("[Merge{2,3,4} [\"m\"] at [0] -> [\"x\",\"y\",\"z\"] at [0,1,2], PassThrough [\"k\"] at [1] -> "
                      "[\"k\"] at [3]] bounds=[24,5] -> [2,3,4,5] | "
                      "[PassThrough [\"x\"] at [0] -> [\"x\"] at [0], Unmerge{3,4,5} [\"y\",\"z\",\"k\"] at [1,2,3] -> "
                      "[\"f\"] at [1]] bounds=[2,3,4,5] -> [2,60]",
                      "[Merge{2,12} [\"m\"] at [0] -> [\"x\",\"y\"] at [0,1], PassThrough [\"k\"] at [1] -> [\"k\"] at "
                      "[2]] bounds=[24,5] -> [2,12,5] | "
                      "[PassThrough [\"x\"] at [0] -> [\"x\"] at [0], Unmerge{12,5} [\"y\",\"k\"] at [1,2] -> [\"f\"] "
                      "at [1]] bounds=[2,12,5] -> [2,60]"));
  /* Unmerge then Merge is a reshape: per group of equal prefix products */
  CHECK(simplifies_to("[Unmerge{32,3} [\"a\",\"b\"] at [0,1] -> [\"t\"] at [0]] bounds=[32,3] -> [96] | [Merge{8,4,3} "
                      "[\"t\"] at [0] -> [\"x\",\"y\",\"z\"] at [0,1,2]] bounds=[96] -> [8,4,3]",
                      "[Merge{8,4} [\"a\"] at [0] -> [\"x\",\"y\"] at [0,1], PassThrough [\"b\"] at [1] -> [\"z\"] at "
                      "[2]] bounds=[32,3] -> [8,4,3]"));
  /* merges flatten; a constant that is ignored disappears */
  CHECK(simplifies_to("[Merge{4,6} [\"m\"] at [0] -> [\"x\",\"y\"] at [0,1], ConstDim{0,1} [] at [] -> [\"c\"] at [2]] "
                      "bounds=[24] -> [4,6,1] | "
                      "[PassThrough [\"x\"] at [0] -> [\"x\"] at [0], Merge{2,3} [\"y\"] at [1] -> [\"p\",\"q\"] at "
                      "[1,2], AddDim{1} [\"c\"] at [2] -> [] at []] bounds=[4,6,1] -> [4,2,3]",
                      "[Merge{4,2,3} [\"m\"] at [0] -> [\"x\",\"p\",\"q\"] at [0,1,2]] bounds=[24] -> [4,2,3]"));
  /* things that must not fold stay: Pad then Merge */
  kl_view *v = P("[Pad{1,1} [\"h\"] at [0] -> [\"h\"] at [0]] bounds=[8] -> [6] | [Merge{2,3} [\"h\"] at [0] -> "
                 "[\"a\",\"b\"] at [0,1]] bounds=[6] -> [2,3]");
  kl_view *s = kl_view_simplify(v);
  CHECK(s && kl_view_equal(s, v));
  kl_view_free(v);
  kl_view_free(s);
  printf(
      "simplify: identity maps, PassThrough/Pad/Slice folds, Merge->Unmerge, reshapes, contiguous merges collapsed\n");
}

/* ---------------------------------------------------------------- vectorization */
static void test_vector(void) {
  kl_view *v = kl_view_identity(2, I64(4, 8), NAMES("m", "n"), NULL);
  CHECK(kl_view_max_vectorization(v, 1, NULL, 32) == 4); /* dwordx4 of f32 */
  CHECK(kl_view_max_vectorization(v, 1, NULL, 16) == 8);
  CHECK(kl_view_max_vectorization(v, 1, NULL, 8) == 8); /* the row is 8 long */
  CHECK(kl_view_max_vectorization(v, 0, NULL, 32) == 1);
  CHECK(kl_view_max_vectorization(v, 0, I64(1, 4), 32) == 4);  /* column-major buffer */
  CHECK(kl_view_max_vectorization(v, 1, I64(10, 1), 16) == 2); /* padded rows: gcd(10, 8) */
  CHECK(kl_view_vector_len(v, 2, NULL, 4) == -1 && kl_view_vector_len(v, 0, NULL, 0) == -1);
  kl_view *t = kl_view_transpose(v, 2, (const int[]){ 1, 0 }, NULL);
  CHECK(kl_view_max_vectorization(t, 1, NULL, 32) == 1 && kl_view_max_vectorization(t, 0, NULL, 32) == 4);
  /* a merge over a contiguous buffer: the whole run (merge outputs count as one dim) */
  kl_view *r = kl_view_reshape(v, 1, I64(32), NULL, NULL);
  CHECK(kl_view_max_vectorization(r, 0, NULL, 8) == 16);
  /* padding: vectors must be all data or all padding */
  kl_view *p1 = kl_view_pad(v, 1, NAMES("n"), I64(4, 4), NULL);
  kl_view *p2 = kl_view_pad(v, 1, NAMES("n"), I64(1, 3), NULL);
  CHECK(kl_view_max_vectorization(p1, 1, NULL, 32) == 4 && kl_view_max_vectorization(p2, 1, NULL, 32) == 1);
  /* slices: alignment = gcd with begin */
  kl_view *s2 = kl_view_slice(v, 1, NAMES("n"), I64(2, 6), NULL);
  CHECK(kl_view_max_vectorization(s2, 1, NULL, 32) == 2);
  /* broadcast of a size-1 dim: constant address along it, no vector */
  kl_view *one = kl_view_identity(2, I64(1, 8), NAMES("a", "b"), NULL);
  kl_view *bc = kl_view_broadcast(one, 1, NAMES("a"), I64(4), NULL);
  CHECK(kl_view_max_vectorization(bc, 0, NULL, 32) == 1 && kl_view_max_vectorization(bc, 1, NULL, 32) == 4);
  /* a conv input in NHWC: contiguous along gemmK when C is a multiple of 4 */
  kl_conv2d d = { .n = 1,
                  .c = 8,
                  .hi = 6,
                  .wi = 6,
                  .k = 4,
                  .y = 3,
                  .x = 3,
                  .groups = 1,
                  .stride_h = 1,
                  .stride_w = 1,
                  .dil_h = 1,
                  .dil_w = 1,
                  .pad_top = 1,
                  .pad_bottom = 1,
                  .pad_left = 1,
                  .pad_right = 1,
                  .in_layout = KL_CONV_NHWC,
                  .filter_layout = KL_CONV_KYXC,
                  .out_layout = KL_CONV_NHWK };
  kl_conv_views cv;
  CHECK(kl_conv_views_build(&d, &cv, NULL));
  CHECK(kl_view_max_vectorization(cv.input, 1, NULL, 16) == 8 && kl_view_max_vectorization(cv.input, 2, NULL, 16) == 1);
  CHECK(kl_view_max_vectorization(cv.output, 1, NULL, 32) == 4);
  kl_conv_views_free(&cv);
  kl_view *all[] = { v, t, r, p1, p2, s2, one, bc };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) kl_view_free(all[i]);
  printf("vectorization: row/column-major, padded strides, transposes, merges, pad, slice, broadcast, conv input\n");
}

/* ---------------------------------------------------------------- IR attribute */
static void test_attr(void) {
  kl_ctx *ctx = kl_ctx_create();
  kl_register_view_attr(ctx);
  kl_view *v = P("[Merge{4,8} [\"gk\"] at [0] -> [\"g\",\"k\"] at [0,1], PassThrough [\"m\"] at [1] -> [\"m\"] at [2]] "
                 "bounds=[32,5] -> [4,8,5] | "
                 "[Pad{1,1} [\"g\"] at [0] -> [\"g\"] at [0], PassThrough [\"k\",\"m\"] at [1,2] -> [\"k\",\"m\"] at "
                 "[1,2]] bounds=[4,8,5] -> [2,8,5]");
  const kl_attr *a = kl_attr_from_view(ctx, v);
  CHECK(a && a->kind == KL_AT_EXT && kl_attr_view(a) && kl_view_equal(kl_attr_view(a), v));
  CHECK(kl_attr_view(a) != v); /* a copy in the context arena */
  char *t = kl_view_print(v);
  char *want = malloc(strlen(t) + 16);
  sprintf(want, "#view<%s>", t);
  CHECK(!strcmp(kl_attr_str_of(a), want));
  CHECK(kl_attr_from_view(ctx, v) == a); /* interned */
  const kl_attr *b = kl_parse_attr(ctx, want, strlen(want), "t.kir");
  CHECK(b == a);
  CHECK(kl_attr_view(kl_attr_int(ctx, 3)) == NULL && kl_attr_view(NULL) == NULL);
  /* a malformed body gives a located diagnostic inside the body */
  const char *bad = "#view<[PassThrough [\"a\"] at [0] -> [\"a\"] at [0]] bounds=[2] -> [3]>";
  char *diag = kl_diag_take(ctx);
  free(diag);
  CHECK(kl_parse_attr(ctx, bad, strlen(bad), "t.kir") == NULL);
  diag = kl_diag_take(ctx);
  CHECK(strstr(diag, "t.kir:1:8:") && strstr(diag, "bad view") &&
        strstr(diag, "has size 2 but lower dim 0 has size 3"));
  if (!strstr(diag, "t.kir:1:8:")) fprintf(stderr, "  diag: %s\n", diag);
  free(diag);
  const char *bad2 = "#view<[PassThrough [\"a\"] at [0] -> [\"a\"] at [0]]\n  bounds=[1] => [1]>";
  CHECK(kl_parse_attr(ctx, bad2, strlen(bad2), "t.kir") == NULL);
  diag = kl_diag_take(ctx);
  CHECK(strstr(diag, "t.kir:2:14:") && strstr(diag, "expected '->'"));
  if (!strstr(diag, "t.kir:2:14:")) fprintf(stderr, "  diag: %s\n", diag);
  free(diag);
  /* a context where nothing was registered: kl_attr_from_view registers the kind */
  kl_ctx *ctx2 = kl_ctx_create();
  const kl_attr *c = kl_attr_from_view(ctx2, v);
  CHECK(c && kl_view_equal(kl_attr_view(c), v) && kl_parse_attr(ctx2, want, strlen(want), "u.kir") == c);
  kl_ctx_destroy(ctx2);
  free(t);
  free(want);
  kl_view_free(v);
  kl_ctx_destroy(ctx);
  printf("attr: #view<...> round trip through the IR attribute parser, interning, located body errors\n");
}

/* ---------------------------------------------------------------- Xor (LDS swizzle) */
static void test_xor(void) {
  /* (r, c) -> (r, c XOR ((r / 2) mod 4)) over [16, 4]: a bijection, its own inverse */
  const char *txt = "[Xor{2,4} [\"r\",\"c\"] at [0,1] -> [\"r\",\"c\"] at [0,1]] bounds=[16,4] -> [16,4]";
  kl_view *v = P(txt);
  CHECK(v && same_text(v, txt));
  CHECK(ev(v, I64(0, 3), I64(0, 3), true) && ev(v, I64(2, 0), I64(2, 1), true) && ev(v, I64(7, 1), I64(7, 2), true));
  bool seen[16][4] = { { false } };
  int dup = 0;
  for (int64_t r = 0; r < 16; r++)
    for (int64_t c = 0; c < 4; c++) {
      int64_t lo[2];
      CHECK(kl_view_eval(v, (int64_t[]){ r, c }, lo) && lo[0] == r && lo[1] >= 0 && lo[1] < 4);
      dup += seen[lo[0]][lo[1]];
      seen[lo[0]][lo[1]] = true;
    }
  CHECK(dup == 0);
  kl_view_err e;
  kl_view *inv = kl_view_invert(v, &e);
  CHECK(inv && ev(inv, I64(7, 2), I64(7, 1), true));
  /* the ldmatrix slots of [rows, 64 bytes] (4 chunks of 16 bytes per row): 8 consecutive
   * rows at one chunk on 8 distinct 16-byte slots (address / 16 mod 8) */
  for (int64_t c = 0; c < 4; c++) {
    int slots = 0;
    for (int64_t r = 0; r < 8; r++) {
      int64_t lo[2];
      kl_view_eval(v, (int64_t[]){ r, c }, lo);
      slots |= 1 << ((lo[0] * 4 + lo[1]) % 8);
    }
    CHECK(slots == 0xff);
  }
  /* vectors along an inner dim passed through stay whole; along the column they do not */
  kl_view *x3 = P("[Xor{2,4} [\"r\",\"c\"] at [0,1] -> [\"r\",\"c\"] at [0,1], PassThrough [\"e\"] at [2] -> [\"e\"] "
                  "at [2]] bounds=[16,4,8] -> [16,4,8]");
  CHECK(x3 && kl_view_max_vectorization(x3, 2, NULL, 16) == 8 && kl_view_max_vectorization(x3, 1, NULL, 16) == 1);
  /* malformed: m not a power of two, m not dividing the column size, sizes differ */
  const char *bad[] = { "[Xor{1,3} [\"r\",\"c\"] at [0,1] -> [\"r\",\"c\"] at [0,1]] bounds=[8,6] -> [8,6]",
                        "[Xor{1,8} [\"r\",\"c\"] at [0,1] -> [\"r\",\"c\"] at [0,1]] bounds=[8,4] -> [8,4]",
                        "[Xor{1,4} [\"r\",\"c\"] at [0,1] -> [\"r\",\"c\"] at [0,1]] bounds=[8,4] -> [8,8]" };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    kl_view *b = kl_view_parse(bad[i], strlen(bad[i]), &e);
    CHECK(!b && strstr(e.msg, "Xor"));
    kl_view_free(b);
  }
  kl_view_free(v);
  kl_view_free(inv);
  kl_view_free(x3);
  printf("xor: evaluation, bijection, inverse, ldmatrix slots, vectorization, malformed parameters\n");
}

/* Merge / Broadcast / Xor evaluate with floor division (powers of two through shifts, other
 * sizes through one division): checked against a plain reference on coordinates of either
 * sign (invalid ones included), and kl_view_eval in place (lower == upper) on 1 and 3 maps. */
static int64_t ref_fdiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
static int64_t ref_fmod(int64_t a, int64_t b) { return a - ref_fdiv(a, b) * b; }
static void test_eval_floor(void) {
  const int64_t sizes[][3] = { { 4, 8, 2 }, { 3, 5, 7 }, { 6, 4, 3 }, { 1, 16, 9 } };
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    const int64_t *z = sizes[s];
    char txt[512];
    snprintf(
        txt, sizeof txt,
        "[Merge{%lld,%lld,%lld} [\"x\"] at [0] -> [\"a\",\"b\",\"c\"] at [0,1,2]] bounds=[%lld] -> [%lld,%lld,%lld]",
        (long long)z[0], (long long)z[1], (long long)z[2], (long long)(z[0] * z[1] * z[2]), (long long)z[0],
        (long long)z[1], (long long)z[2]);
    kl_view *m = P(txt);
    snprintf(txt, sizeof txt,
             "[Broadcast{%lld,%lld} [\"a\",\"b\"] at [0,1] -> [\"a\",\"b\"] at [0,1]] bounds=[64,64] -> [%lld,%lld]",
             (long long)z[1], (long long)z[2], (long long)z[1], (long long)z[2]);
    kl_view *bc = P(txt);
    CHECK(m && bc);
    if (!m || !bc) continue;
    for (int64_t x = -200; x <= 400; x += 7) {
      int64_t lo[3], want[3], v = x;
      kl_vmap_eval(&m->maps[0], &x, lo);
      for (int i = 2; i > 0; i--) want[i] = ref_fmod(v, z[i]), v = ref_fdiv(v, z[i]);
      want[0] = v;
      CHECK(memcmp(lo, want, sizeof lo) == 0);
      int64_t in2[2] = { x, -x - 3 }, lo2[2];
      kl_vmap_eval(&bc->maps[0], in2, lo2);
      CHECK(lo2[0] == ref_fmod(in2[0], z[1]) && lo2[1] == ref_fmod(in2[1], z[2]));
    }
    kl_view_free(m);
    kl_view_free(bc);
  }
  /* Xor with a divisor that is not a power of two */
  kl_view *x = P("[Xor{3,4} [\"r\",\"c\"] at [0,1] -> [\"r\",\"c\"] at [0,1]] bounds=[24,8] -> [24,8]");
  CHECK(x != NULL);
  for (int64_t r = 0; x && r < 24; r++)
    for (int64_t c = 0; c < 8; c++) {
      int64_t lo[2];
      CHECK(kl_view_eval(x, (int64_t[]){ r, c }, lo) && lo[0] == r && lo[1] == (c ^ ((r / 3) % 4)));
    }
  kl_view_free(x);
  /* in place, one map and three maps (a transpose, a merge, a pad) */
  kl_view_err e;
  kl_view *base = kl_view_identity(2, I64(6, 4), NAMES("a", "b"), &e);
  kl_view *t = kl_view_transpose(base, 2, (const int[]){ 1, 0 }, &e);
  kl_view *pd = t ? kl_view_pad(t, 1, NAMES("a"), I64(1, 1), &e) : NULL;
  CHECK(base && t && pd && pd->nmaps >= 2);
  for (int64_t i = 0; pd && i < 4; i++)
    for (int64_t j = 0; j < 8; j++) {
      int64_t u[2] = { i, j }, want[2];
      bool ok = kl_view_eval(pd, (int64_t[]){ i, j }, want);
      CHECK(kl_view_eval(pd, u, u) == ok && (!ok || (u[0] == want[0] && u[1] == want[1])));
      int64_t w[2] = { j % 6, i };
      CHECK(kl_view_eval(base, w, w) && w[0] == j % 6 && w[1] == i);
    }
  kl_view_free(base);
  kl_view_free(t);
  kl_view_free(pd);
  printf("eval: floor division of Merge / Broadcast / Xor on coordinates of either sign, in-place evaluation\n");
}

int main(void) {
  test_kinds();
  test_text();
  test_malformed();
  test_invert();
  test_invert_partial();
  test_bounds();
  test_simplify();
  test_vector();
  test_xor();
  test_eval_floor();
  test_attr();
  return check_summary("test_view");
}
