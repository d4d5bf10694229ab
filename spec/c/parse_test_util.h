/* parse_test_util.h — shared helpers of test_parse.c and test_parse_corpus.c: the
 * checks (check.h), file reading, a structural-soundness checker for parsed IR, the round-trip
 * check (custom, generic and located printing) and a test extension attribute kind
 * "#testpair<a, b>". Header-only (static functions); include from one test file each. */
#ifndef KL_PARSE_TEST_UTIL_H
#define KL_PARSE_TEST_UTIL_H
#include "core/parse.h"
#include "core/print.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* Reads a whole file into a malloc'd buffer of exactly its size (not NUL-terminated,
 * so that ASan catches reads past the end); NULL if unreadable. */
static inline char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  for (size_t got; (got = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += got;
    if (n == cap) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  char *exact = malloc(n ? n : 1);
  memcpy(exact, buf, n);
  free(buf);
  *len = n;
  return exact;
}

/* ---- #testpair<a, b>: an extension attribute kind for the tests ---- */
static inline void testpair_print(kl_sb *sb, const void *payload) {
  const int64_t *v = payload;
  kl_sb_printf(sb, "%lld, %lld", (long long)v[0], (long long)v[1]);
}
static inline const void *testpair_parse(kl_ctx *ctx, const char *body, size_t len, kl_loc loc) {
  int64_t v[2];
  size_t i = 0;
  for (int k = 0; k < 2; k++) {
    while (i < len && body[i] == ' ') i++;
    if (k == 1) {
      if (i >= len || body[i] != ',') {
        kl_emit_error(ctx, (kl_loc){ loc.file, loc.line, loc.col + (int)i }, "testpair: expected ','");
        return NULL;
      }
      i++;
      while (i < len && body[i] == ' ') i++;
    }
    bool neg = i < len && body[i] == '-';
    if (neg) i++;
    if (i >= len || body[i] < '0' || body[i] > '9') {
      kl_emit_error(ctx, (kl_loc){ loc.file, loc.line, loc.col + (int)i }, "testpair: expected a number");
      return NULL;
    }
    int64_t x = 0;
    while (i < len && body[i] >= '0' && body[i] <= '9' && x < 100000000) x = x * 10 + (body[i++] - '0');
    v[k] = neg ? -x : x;
  }
  while (i < len && body[i] == ' ') i++;
  if (i != len) {
    kl_emit_error(ctx, (kl_loc){ loc.file, loc.line, loc.col + (int)i }, "testpair: unexpected text");
    return NULL;
  }
  return kl_arena_dup(kl_ctx_arena(ctx), v, sizeof v);
}
static const kl_attr_ext testpair_ext = { "testpair", testpair_print, testpair_parse };

static inline kl_ctx *test_ctx(void) {
  kl_ctx *ctx = kl_ctx_create();
  kl_register_attr_ext(ctx, &testpair_ext);
  return ctx;
}

/* ---- structural soundness ---- */
typedef struct {
  const void **v;
  size_t n, cap;
} ptrset;
static inline void ptrset_add(ptrset *s, const void *p) {
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 256;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
  }
  s->v[s->n++] = p;
}
static inline int ptr_cmp(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (const void *const *)a, y = (uintptr_t) * (const void *const *)b;
  return x < y ? -1 : x > y;
}
static inline bool ptrset_has(const ptrset *s, const void *p) {
  return s->n && bsearch(&p, s->v, s->n, sizeof *s->v, ptr_cmp) != NULL;
}

static inline void collect_values(kl_op *op, ptrset *vals) {
  for (int i = 0; i < op->nresults; i++) ptrset_add(vals, &op->results[i]);
  for (int r = 0; r < op->nregions; r++)
    for (kl_block *b = op->regions[r].first; b; b = b->next) {
      for (int i = 0; i < b->nargs; i++) ptrset_add(vals, b->args[i]);
      for (kl_op *o = b->first; o; o = o->next) collect_values(o, vals);
    }
}
static inline bool use_listed(const kl_use *u) {
  for (const kl_use *x = u->value->first_use; x; x = x->next)
    if (x == u) return true;
  return false;
}
/* Returns the number of broken invariants found under op (0 = sound). */
static inline int sound_op(kl_op *op, const ptrset *vals) {
  int bad = 0;
  for (int i = 0; i < op->nresults; i++) {
    kl_value *v = &op->results[i];
    if (v->def != op || v->index != i || !v->type) bad++;
    for (kl_use *u = v->first_use; u; u = u->next)
      if (u->value != v || u->index < 0 || u->index >= u->user->nopnds || &u->user->opnds[u->index] != u) bad++;
  }
  for (int i = 0; i < op->nopnds; i++) {
    kl_use *u = &op->opnds[i];
    if (!u->value || u->user != op || u->index != i || !ptrset_has(vals, u->value) || !use_listed(u)) bad++;
  }
  for (int i = 0; i + 1 < op->nattrs; i++)
    if (strcmp(op->attrs[i].name, op->attrs[i + 1].name) >= 0) bad++;
  for (int r = 0; r < op->nregions; r++) {
    kl_region *reg = &op->regions[r];
    if (reg->op != op) bad++;
    kl_block *prevb = NULL;
    for (kl_block *b = reg->first; b; prevb = b, b = b->next) {
      if (b->region != reg || b->prev != prevb) bad++;
      for (int i = 0; i < b->nargs; i++)
        if (b->args[i]->block != b || b->args[i]->index != i || b->args[i]->def) bad++;
      kl_op *prevo = NULL;
      for (kl_op *o = b->first; o; prevo = o, o = o->next) {
        if (o->block != b || o->prev != prevo || kl_op_parent_op(o) != op) bad++;
        bad += sound_op(o, vals);
      }
      if (b->last != prevo) bad++;
    }
    if (reg->last != prevb) bad++;
  }
  return bad;
}
static inline int sound(kl_op *root) {
  ptrset vals = { 0 };
  collect_values(root, &vals);
  if (vals.n) qsort(vals.v, vals.n, sizeof *vals.v, ptr_cmp);
  int bad = sound_op(root, &vals) + (root->block != NULL);
  free(vals.v);
  return bad;
}

/* ---- round trips ---- */
static inline kl_op *parse_text(kl_ctx *ctx, const char *text, size_t len, const char *file) {
  return kl_parse_module(ctx, text, len, file);
}
static inline bool same_locs(kl_op *a, kl_op *b) {
  int na, nb;
  kl_op **x = kl_collect_ops(a, &na), **y = kl_collect_ops(b, &nb);
  bool same = na == nb;
  for (int i = 0; same && i < na; i++)
    same = x[i]->loc.line == y[i]->loc.line && x[i]->loc.col == y[i]->loc.col &&
        (x[i]->loc.file == y[i]->loc.file ||
         (x[i]->loc.file && y[i]->loc.file && !strcmp(x[i]->loc.file, y[i]->loc.file)));
  free(x);
  free(y);
  return same;
}
/* m was parsed from some text. Checks: structure sound; print(parse(print(m))) ==
 * print(m); the generic print parses to the same module (both printings); the located
 * print round-trips with the same op locations. Returns true if all held. */
static inline bool roundtrip_module(kl_ctx *ctx, kl_op *m, const char *what) {
  int before = failures;
  CHECK(sound(m) == 0, "%s: parsed IR is not structurally sound", what);
  char *t1 = kl_print_op(m, 0);
  kl_op *m2 = parse_text(ctx, t1, strlen(t1), "rt.kir");
  char *t2 = m2 ? kl_print_op(m2, 0) : NULL;
  CHECK(t2 && !strcmp(t1, t2), "%s: print(parse(print(m))) != print(m)\n--- first\n%s--- second\n%s", what, t1,
        t2 ? t2 : "(parse failed)\n");
  char *g = kl_print_op(m, KL_PRINT_GENERIC);
  kl_op *m3 = parse_text(ctx, g, strlen(g), "gen.kir");
  char *t3 = m3 ? kl_print_op(m3, 0) : NULL, *g3 = m3 ? kl_print_op(m3, KL_PRINT_GENERIC) : NULL;
  CHECK(t3 && !strcmp(t1, t3), "%s: generic print does not parse back to the same module\n%s", what, g);
  CHECK(g3 && !strcmp(g, g3), "%s: generic print is not stable", what);
  char *l1 = kl_print_op(m, KL_PRINT_LOCS);
  kl_op *m4 = parse_text(ctx, l1, strlen(l1), "loc.kir");
  char *l2 = m4 ? kl_print_op(m4, KL_PRINT_LOCS) : NULL;
  CHECK(l2 && !strcmp(l1, l2), "%s: located print does not round-trip\n%s", what, l1);
  CHECK(m4 && same_locs(m, m4), "%s: loc(...) did not restore the op locations", what);
  if (failures != before) {
    char *d = kl_diag_take(ctx);
    fprintf(stderr, "%s", d);
    free(d);
  }
  free(t1);
  free(t2);
  free(g);
  free(t3);
  free(g3);
  free(l1);
  free(l2);
  return failures == before;
}

/* "file:LINE:COL: error: " prefix of a diagnostic; fills line/col. */
static inline bool diag_located(const char *diag, const char *file, int *line, int *col) {
  size_t n = strlen(file);
  if (strncmp(diag, file, n) || diag[n] != ':') return false;
  char *end;
  long l = strtol(diag + n + 1, &end, 10);
  if (*end != ':') return false;
  long c = strtol(end + 1, &end, 10);
  if (strncmp(end, ": error: ", 9)) return false;
  *line = (int)l;
  *col = (int)c;
  return l > 0 && c > 0;
}
#endif
