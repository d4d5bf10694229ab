/* parse.c — the .kir parser: ops (generic form and custom-syntax dispatch), regions,
 * blocks, value names and scopes, locations, and the API for custom-syntax hooks.
 * Types and attributes are in parse_attr.c, tokens in lexer.c. */
#include "core/parse_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOWN(t) (int)((t)->n > 40 ? 40 : (t)->n), (t)->p

/* ---- parser state, tokens, errors ---- */

void kl__parser_init(kl_parser *p, kl_ctx *ctx, const char *text, size_t len, const char *filename) {
  memset(p, 0, sizeof *p);
  p->ctx = ctx;
  p->file = kl_intern(ctx, filename ? filename : "<input>");
  kl_lex_init(&p->lx, text, len);
  p->tok.kind = KL_TK_EOF;
  kl__next(p);
}
void kl__parser_fini(kl_parser *p) {
  free(p->ents);
  free(p->table);
  free(p->defs);
  free(p->pending);
  kl_sb_free(&p->sb);
}
void kl__next(kl_parser *p) {
  if (p->tok.kind == KL_TK_ERROR) return; /* stay on the error */
  p->tok = kl_lex_next(&p->lx);
  if (p->tok.kind == KL_TK_ERROR) kl__error_at(p, (kl_loc){ p->file, p->lx.err_line, p->lx.err_col }, "%s", p->lx.err);
}
bool kl__is(const kl_parser *p, kl_tok_kind kind, const char *text) {
  if (p->tok.kind != kind) return false;
  return !text || (p->tok.n == strlen(text) && memcmp(p->tok.p, text, p->tok.n) == 0);
}
kl_loc kl__tok_loc(const kl_parser *p, const kl_tok *t) { return (kl_loc){ p->file, t->line, t->col }; }
static kl_status verror(kl_parser *p, kl_loc loc, const char *fmt, va_list ap) {
  if (p->failed) return KL_ERR; /* only the first error is reported */
  p->failed = true;
  kl_emit_vdiag(p->ctx, KL_DIAG_ERROR, loc, fmt, ap);
  return KL_ERR;
}
kl_status kl__error_at(kl_parser *p, kl_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kl_status s = verror(p, loc, fmt, ap);
  va_end(ap);
  return s;
}
const char *kl__string_ident(kl_parser *p, const kl_tok *t, const char *what) {
  p->sb.len = 0;
  kl_lex_string(t, &p->sb);
  if (memchr(kl_sb_str(&p->sb), 0, p->sb.len)) {
    kl__error_at(p, kl__tok_loc(p, t), "%s cannot contain a NUL byte", what);
    return NULL;
  }
  return kl_intern_n(p->ctx, kl_sb_str(&p->sb), p->sb.len);
}
static bool is_punct(const kl_parser *p, const char *s) { return kl__is(p, KL_TK_PUNCT, s); }
static bool is_word(const kl_parser *p, const char *s) { return kl__is(p, KL_TK_IDENT, s); }
static kl_loc here(const kl_parser *p) { return kl__tok_loc(p, &p->tok); }

/* "expected X, got Y" */
static kl_status expected(kl_parser *p, const char *what) {
  const kl_tok *t = &p->tok;
  if (t->kind == KL_TK_ERROR) return KL_ERR;
  if (t->kind == KL_TK_EOF) return kl__error_at(p, here(p), "expected %s, got end of input", what);
  return kl__error_at(p, here(p), "expected %s, got '%.*s'", what, SHOWN(t));
}
static kl_status expect_punct(kl_parser *p, const char *s) {
  if (!is_punct(p, s)) {
    char what[16];
    snprintf(what, sizeof what, "'%s'", s);
    return expected(p, what);
  }
  kl__next(p);
  return KL_OK;
}

/* ---- kl_op_state arrays (arena-backed; capacity implied by the count) ---- */

static void *grow(kl_parser *p, void *arr, int n, size_t elem) {
  if (n == 0) return kl_arena_alloc(kl_ctx_arena(p->ctx), 4 * elem);
  if (n < 4 || (n & (n - 1))) return arr;
  void *bigger = kl_arena_alloc(kl_ctx_arena(p->ctx), (size_t)n * 2 * elem);
  memcpy(bigger, arr, (size_t)n * elem);
  return bigger;
}
void kl_op_state_add_operand(kl_parser *p, kl_op_state *st, kl_value *v) {
  st->opnds = grow(p, st->opnds, st->nopnds, sizeof *st->opnds);
  st->opnds[st->nopnds++] = v;
}
void kl_op_state_add_result_type(kl_parser *p, kl_op_state *st, const kl_type *t) {
  st->result_types = grow(p, (void *)st->result_types, st->nresults, sizeof *st->result_types);
  st->result_types[st->nresults++] = t;
}
void kl_op_state_add_attr(kl_parser *p, kl_op_state *st, const char *name, const kl_attr *a) {
  st->attrs = grow(p, st->attrs, st->nattrs, sizeof *st->attrs);
  st->attrs[st->nattrs].name = kl_intern(p->ctx, name);
  st->attrs[st->nattrs++].value = a;
}
void kl_op_state_add_region(kl_parser *p, kl_op_state *st, kl_region *r) {
  st->regions = grow(p, st->regions, st->nregions, sizeof *st->regions);
  st->regions[st->nregions++] = r;
}

/* ---- names and scopes ---- */

static uint64_t hash_name(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  return h;
}
static int *name_slot(kl_parser *p, const char *key, size_t n, int region) {
  uint64_t h = hash_name(key, n) ^ ((uint64_t)region * 0x9e3779b97f4a7c15ull);
  for (uint64_t i = h & (uint64_t)(p->tcap - 1);; i = (i + 1) & (uint64_t)(p->tcap - 1)) {
    int e = p->table[i];
    if (!e) return &p->table[i];
    const kl_name_ent *x = &p->ents[e - 1];
    if (x->n == n && x->region == region && memcmp(x->key, key, n) == 0) return &p->table[i];
  }
}
static kl_name_ent *find_name(kl_parser *p, const kl_tok *t) {
  if (!p->tcap) return NULL;
  int e = *name_slot(p, t->p, t->n, 0);
  return e && p->ents[e - 1].live ? &p->ents[e - 1] : NULL;
}
static void table_grow(kl_parser *p) {
  free(p->table);
  p->tcap = p->tcap ? p->tcap * 2 : 256;
  p->table = kl_xcalloc((size_t)p->tcap, sizeof *p->table);
  for (int i = 0; i < p->nents; i++) *name_slot(p, p->ents[i].key, p->ents[i].n, p->ents[i].region) = i + 1;
}
/* Defines the name of token t in the innermost scope: a value (region 0) or a block
 * label of the region with id `region`. */
static kl_status define_name_in(kl_parser *p, const kl_tok *t, kl_value *first, int count, int region) {
  if ((p->nents + 1) * 2 > p->tcap) table_grow(p);
  int *slot = name_slot(p, t->p, t->n, region);
  if (*slot && p->ents[*slot - 1].live)
    return kl__error_at(p, kl__tok_loc(p, t), "redefinition of %s '%.*s'", t->kind == KL_TK_BLOCK ? "block" : "value",
                        SHOWN(t));
  if (!*slot) {
    if (p->nents == p->capents) {
      p->capents = p->capents ? p->capents * 2 : 64;
      p->ents = kl_xrealloc(p->ents, (size_t)p->capents * sizeof *p->ents);
    }
    p->ents[p->nents] = (kl_name_ent){ .key = t->p, .n = t->n, .region = region };
    *slot = ++p->nents;
  }
  kl_name_ent *e = &p->ents[*slot - 1];
  e->first = first;
  e->count = count;
  e->live = true;
  if (p->ndefs == p->capdefs) {
    p->capdefs = p->capdefs ? p->capdefs * 2 : 64;
    p->defs = kl_xrealloc(p->defs, (size_t)p->capdefs * sizeof *p->defs);
  }
  p->defs[p->ndefs++] = *slot - 1;
  return KL_OK;
}
static kl_status define_name(kl_parser *p, const kl_tok *t, kl_value *first, int count) {
  return define_name_in(p, t, first, count, 0);
}
static void pop_scope(kl_parser *p, int mark) {
  while (p->ndefs > mark) p->ents[p->defs[--p->ndefs]].live = false;
}
/* Names other than the printer's generated %N / %argN become name hints. */
static void set_hint(kl_parser *p, kl_value *v, const kl_tok *t) {
  const char *s = t->p + 1;
  size_t n = t->n - 1;
  if (!n || !kl_lex_is_ident_start((unsigned char)s[0])) return;
  for (size_t i = 0; i < n; i++)
    if (!(kl_lex_is_ident_start((unsigned char)s[i]) || (s[i] >= '0' && s[i] <= '9'))) return;
  if (n > 3 && !memcmp(s, "arg", 3)) {
    size_t i = 3;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    if (i == n) return;
  }
  v->name_hint = kl_intern_n(p->ctx, s, n);
}

static kl_value *parse_use(kl_parser *p) {
  kl_tok t = p->tok;
  if (t.kind != KL_TK_VALUE) {
    expected(p, "a value (%name)");
    return NULL;
  }
  kl_name_ent *e = find_name(p, &t); /* t.p/t.n hold "%name" without the #N */
  if (!e) {
    kl__error_at(p, kl__tok_loc(p, &t), "use of undefined value '%.*s'", SHOWN(&t));
    return NULL;
  }
  if (t.result_no < 0 && e->count > 1) {
    kl__error_at(p, kl__tok_loc(p, &t), "'%.*s' names %d results; use '%.*s#N'", SHOWN(&t), e->count, SHOWN(&t));
    return NULL;
  }
  int64_t idx = t.result_no < 0 ? 0 : t.result_no;
  if (idx >= e->count) {
    kl__error_at(p, kl__tok_loc(p, &t), "result #%lld of '%.*s' does not exist (it has %d result%s)", (long long)idx,
                 SHOWN(&t), e->count, e->count == 1 ? "" : "s");
    return NULL;
  }
  kl__next(p);
  return &e->first[idx];
}

/* ---- regions and blocks ---- */

static kl_status parse_op(kl_parser *p, kl_block *b);

/* Defines the block arguments recorded by kl_parser_block_arg for entry. */
static kl_status define_pending(kl_parser *p, kl_block *entry) {
  int keep = 0;
  kl_status st = KL_OK;
  for (int i = 0; i < p->npending; i++) {
    if (p->pending[i].block != entry) {
      p->pending[keep++] = p->pending[i];
      continue;
    }
    if (st == KL_OK) st = define_name(p, &p->pending[i].name, p->pending[i].v, 1);
  }
  p->npending = keep;
  return st;
}

/* "^name(%a: t, ...):" — a new block, or (redeclare) the entry block given by a
 * custom signature, whose arguments must then be repeated exactly. */
static kl_status parse_label(kl_parser *p, kl_region *r, int region_id, kl_block *entry, kl_block **cur) {
  kl_tok lab = p->tok;
  kl__next(p);
  kl_block *b = entry;
  if (!b) {
    b = kl_block_create(p->ctx);
    kl_region_push_block(r, b);
  }
  if (define_name_in(p, &lab, NULL, 0, region_id) != KL_OK) return KL_ERR;
  int nargs = 0;
  if (is_punct(p, "(")) {
    kl__next(p);
    while (!is_punct(p, ")")) {
      kl_tok at = p->tok;
      if (at.kind != KL_TK_VALUE || at.result_no >= 0) return expected(p, "a block argument name (%name)");
      kl__next(p);
      if (expect_punct(p, ":") != KL_OK) return KL_ERR;
      kl_tok tt = p->tok;
      const kl_type *t = kl__parse_type(p);
      if (!t) return KL_ERR;
      if (entry) {
        kl_name_ent *e = find_name(p, &at);
        if (nargs >= entry->nargs || !e || e->first != entry->args[nargs])
          return kl__error_at(p, kl__tok_loc(p, &at),
                              "block argument '%.*s' does not match the entry block's signature", SHOWN(&at));
        if (t != entry->args[nargs]->type)
          return kl__error_at(p, kl__tok_loc(p, &tt), "type %s of '%.*s' does not match the signature type %s",
                              kl_type_str(t), SHOWN(&at), kl_type_str(entry->args[nargs]->type));
      } else {
        kl_value *v = kl_block_add_arg(p->ctx, b, t);
        if (define_name(p, &at, v, 1) != KL_OK) return KL_ERR;
        set_hint(p, v, &at);
      }
      nargs++;
      if (is_punct(p, ",")) {
        kl__next(p);
        if (is_punct(p, ")")) return expected(p, "a block argument");
      } else if (!is_punct(p, ")"))
        return expected(p, "',' or ')'");
    }
    kl__next(p);
  }
  if (entry && nargs != entry->nargs)
    return kl__error_at(p, kl__tok_loc(p, &lab), "entry block label declares %d argument%s but the signature has %d",
                        nargs, nargs == 1 ? "" : "s", entry->nargs);
  if (expect_punct(p, ":") != KL_OK) return KL_ERR;
  *cur = b;
  return KL_OK;
}

static kl_status parse_region(kl_parser *p, kl_region **out, kl_block *entry) {
  kl_tok open = p->tok;
  *out = NULL;
  if (!is_punct(p, "{")) return expected(p, "'{' to begin a region");
  if (p->region_depth >= KL_PARSE_MAX_DEPTH)
    return kl__error_at(p, kl__tok_loc(p, &open), "regions nested too deeply (the limit is %d)", KL_PARSE_MAX_DEPTH);
  p->region_depth++;
  kl__next(p);
  int mark = p->ndefs, region_id = ++p->nregions_seen;
  kl_region *r = kl_region_create_detached(p->ctx);
  kl_status st = KL_OK;
  kl_block *cur = entry;
  if (entry) {
    kl_region_push_block(r, entry);
    st = define_pending(p, entry);
  }
  bool first = true;
  while (st == KL_OK && !is_punct(p, "}")) {
    if (p->tok.kind == KL_TK_EOF) {
      st = kl__error_at(p, here(p), "expected '}' to close the region opened at %d:%d", open.line, open.col);
      break;
    }
    if (p->tok.kind == KL_TK_BLOCK) {
      st = parse_label(p, r, region_id, first ? entry : NULL, &cur);
    } else {
      if (!cur) {
        cur = kl_block_create(p->ctx);
        kl_region_push_block(r, cur);
      }
      st = parse_op(p, cur);
    }
    first = false;
  }
  if (st == KL_OK) kl__next(p); /* '}' */
  pop_scope(p, mark);
  p->region_depth--;
  *out = r;
  return p->failed ? KL_ERR : st;
}

/* ---- ops ---- */

/* (%a, %b) ({...}, {...}) {attrs} : (t, t) -> t | (t, ...) */
static kl_status parse_generic_tail(kl_parser *p, kl_op_state *st) {
  if (expect_punct(p, "(") != KL_OK) return KL_ERR;
  if (!is_punct(p, ")")) {
    for (;;) {
      kl_value *v = parse_use(p);
      if (!v) return KL_ERR;
      kl_op_state_add_operand(p, st, v);
      if (!is_punct(p, ",")) break;
      kl__next(p);
    }
  }
  if (expect_punct(p, ")") != KL_OK) return KL_ERR;
  if (is_punct(p, "(")) {
    kl__next(p);
    for (;;) {
      kl_region *r;
      if (parse_region(p, &r, NULL) != KL_OK) return KL_ERR;
      kl_op_state_add_region(p, st, r);
      if (!is_punct(p, ",")) break;
      kl__next(p);
    }
    if (expect_punct(p, ")") != KL_OK) return KL_ERR;
  }
  if (is_punct(p, "{") && kl__parse_dict_body(p, st) != KL_OK) return KL_ERR;
  if (!is_punct(p, ":")) return expected(p, "':' and the op's type signature");
  kl__next(p);
  kl_tok list = p->tok;
  if (expect_punct(p, "(") != KL_OK) return KL_ERR;
  int n = 0;
  while (!is_punct(p, ")")) {
    kl_tok tt = p->tok;
    const kl_type *t = kl__parse_type(p);
    if (!t) return KL_ERR;
    if (n >= st->nopnds)
      return kl__error_at(p, kl__tok_loc(p, &tt), "too many operand types: the op has %d operand%s", st->nopnds,
                          st->nopnds == 1 ? "" : "s");
    if (st->opnds[n]->type != t)
      return kl__error_at(p, kl__tok_loc(p, &tt), "operand #%d has type %s, but the signature says %s", n,
                          kl_type_str(st->opnds[n]->type), kl_type_str(t));
    n++;
    if (is_punct(p, ",")) {
      kl__next(p);
      if (is_punct(p, ")")) return expected(p, "a type");
    } else if (!is_punct(p, ")"))
      return expected(p, "',' or ')'");
  }
  if (n != st->nopnds)
    return kl__error_at(p, kl__tok_loc(p, &list), "the signature lists %d operand type%s but the op has %d operand%s",
                        n, n == 1 ? "" : "s", st->nopnds, st->nopnds == 1 ? "" : "s");
  kl__next(p);
  if (expect_punct(p, "->") != KL_OK) return KL_ERR;
  if (is_punct(p, "(")) {
    kl__next(p);
    while (!is_punct(p, ")")) {
      const kl_type *t = kl__parse_type(p);
      if (!t) return KL_ERR;
      kl_op_state_add_result_type(p, st, t);
      if (is_punct(p, ",")) {
        kl__next(p);
        if (is_punct(p, ")")) return expected(p, "a type");
      } else if (!is_punct(p, ")"))
        return expected(p, "',' or ')'");
    }
    kl__next(p);
  } else {
    const kl_type *t = kl__parse_type(p);
    if (!t) return KL_ERR;
    kl_op_state_add_result_type(p, st, t);
  }
  return KL_OK;
}

/* loc("file":line:col) or loc(unknown) */
static kl_status parse_loc(kl_parser *p, kl_loc *loc) {
  kl__next(p);
  if (expect_punct(p, "(") != KL_OK) return KL_ERR;
  if (is_word(p, "unknown")) {
    kl__next(p);
    *loc = KL_LOC_UNKNOWN;
    return expect_punct(p, ")");
  }
  if (p->tok.kind != KL_TK_STRING) return expected(p, "a file name string or 'unknown' in loc(...)");
  kl_tok ft = p->tok;
  const char *file = kl__string_ident(p, &ft, "a location file name");
  if (!file) return KL_ERR;
  kl__next(p);
  int64_t lc[2];
  for (int i = 0; i < 2; i++) {
    if (expect_punct(p, ":") != KL_OK) return KL_ERR;
    if (p->tok.kind != KL_TK_INT) return expected(p, i ? "a column number" : "a line number");
    if (p->tok.i < 0 || p->tok.i > 2147483647) return kl__error_at(p, here(p), "location number out of range");
    lc[i] = p->tok.i;
    kl__next(p);
  }
  if (expect_punct(p, ")") != KL_OK) return KL_ERR;
  *loc = (kl_loc){ file, (int)lc[0], (int)lc[1] };
  return KL_OK;
}

static bool state_complete(const kl_op_state *st) {
  for (int i = 0; i < st->nopnds; i++)
    if (!st->opnds[i]) return false;
  for (int i = 0; i < st->nresults; i++)
    if (!st->result_types[i]) return false;
  for (int i = 0; i < st->nattrs; i++)
    if (!st->attrs[i].name || !st->attrs[i].value) return false;
  for (int i = 0; i < st->nregions; i++)
    if (!st->regions[i]) return false;
  return true;
}

static kl_status parse_op(kl_parser *p, kl_block *b) {
  kl_tok first = p->tok;
  kl_op_state st = { .loc = kl__tok_loc(p, &first) };
  kl_tok resname = first;
  int nnames = 0;
  if (first.kind == KL_TK_VALUE) {
    if (first.result_no >= 0) return kl__error_at(p, st.loc, "a result name cannot have a '#N' suffix");
    nnames = 1;
    kl__next(p);
    if (is_punct(p, ":")) {
      kl__next(p);
      if (p->tok.kind != KL_TK_INT) return expected(p, "a result count after ':'");
      if (p->tok.i < 1 || p->tok.i > KL_PARSE_MAX_RESULTS)
        return kl__error_at(p, here(p), "result count must be between 1 and %d", KL_PARSE_MAX_RESULTS);
      nnames = (int)p->tok.i;
      kl__next(p);
    }
    if (expect_punct(p, "=") != KL_OK) return KL_ERR;
  }
  kl_tok nt = p->tok;
  if (nt.kind == KL_TK_STRING) {
    if (!(st.name = kl__string_ident(p, &nt, "an op name"))) return KL_ERR;
    if (!*st.name) return kl__error_at(p, kl__tok_loc(p, &nt), "empty op name");
    kl__next(p);
    if (parse_generic_tail(p, &st) != KL_OK) return KL_ERR;
  } else if (nt.kind == KL_TK_IDENT && memchr(nt.p, '.', nt.n)) {
    st.name = kl_intern_n(p->ctx, nt.p, nt.n);
    kl__next(p);
    const kl_opdef *def = kl_lookup_op(p->ctx, st.name);
    if (is_word(p, "generic") || !def || !def->parse) {
      if (is_word(p, "generic")) kl__next(p);
      if (parse_generic_tail(p, &st) != KL_OK) return KL_ERR;
    } else {
      int npending = p->npending;
      kl_status s = def->parse(p, &st);
      p->npending = npending;
      if (s != KL_OK || p->failed)
        return kl__error_at(p, kl__tok_loc(p, &nt), "invalid custom syntax for '%s'", st.name);
      if (!state_complete(&st))
        return kl__error_at(p, kl__tok_loc(p, &nt), "the custom parser of '%s' left the op incomplete", st.name);
    }
  } else {
    return expected(p, "an operation");
  }
  if (is_word(p, "loc") && parse_loc(p, &st.loc) != KL_OK) return KL_ERR;
  if (st.nresults != nnames)
    return kl__error_at(p, kl__tok_loc(p, &first), "'%s' has %d result%s but %d result name%s given", st.name,
                        st.nresults, st.nresults == 1 ? "" : "s", nnames, nnames == 1 ? " is" : "s are");
  kl_op *op = kl_op_create_state(p->ctx, &st);
  if (!strcmp(op->name, "builtin.module")) /* a module always has a body block */
    for (int i = 0; i < op->nregions; i++)
      if (!op->regions[i].first) kl_region_push_block(&op->regions[i], kl_block_create(p->ctx));
  kl_block_push_op(b, op);
  if (nnames) {
    if (define_name(p, &resname, op->results, nnames) != KL_OK) return KL_ERR;
    set_hint(p, &op->results[0], &resname);
  }
  return KL_OK;
}

/* ---- entry points ---- */

kl_op *kl_parse_module(kl_ctx *ctx, const char *text, size_t len, const char *filename) {
  kl_parser p;
  kl__parser_init(&p, ctx, text, len, filename);
  kl_op *m = kl_module_create(ctx, (kl_loc){ p.file, 1, 1 });
  kl_block *body = kl_module_body(m);
  while (!p.failed && p.tok.kind != KL_TK_EOF)
    if (parse_op(&p, body) != KL_OK) break;
  bool failed = p.failed;
  kl__parser_fini(&p);
  if (failed) return NULL;
  kl_op *only = body->first;
  if (only && !only->next && !strcmp(only->name, "builtin.module") && only->nregions == 1 && only->regions[0].first) {
    kl_op_unlink(only);
    return only;
  }
  return m;
}

const kl_type *kl_parse_type(kl_ctx *ctx, const char *text, size_t len, const char *filename) {
  kl_parser p;
  kl__parser_init(&p, ctx, text, len, filename);
  const kl_type *t = kl__parse_type(&p);
  if (t && p.tok.kind != KL_TK_EOF) expected(&p, "end of input after the type");
  if (p.failed) t = NULL;
  kl__parser_fini(&p);
  return t;
}

const kl_attr *kl_parse_attr(kl_ctx *ctx, const char *text, size_t len, const char *filename) {
  kl_parser p;
  kl__parser_init(&p, ctx, text, len, filename);
  const kl_attr *a = kl__parse_attr(&p, true);
  if (a && p.tok.kind != KL_TK_EOF) expected(&p, "end of input after the attribute");
  if (p.failed) a = NULL;
  kl__parser_fini(&p);
  return a;
}

/* ---- the API for custom-syntax hooks ---- */

bool kl_parser_peek(kl_parser *p, const char *s) { return is_punct(p, s) || is_word(p, s); }
bool kl_parser_peek_operand(kl_parser *p) { return p->tok.kind == KL_TK_VALUE; }
bool kl_parser_peek_symbol(kl_parser *p) { return p->tok.kind == KL_TK_SYMBOL; }
bool kl_parser_accept(kl_parser *p, const char *s) {
  if (!kl_parser_peek(p, s)) return false;
  kl__next(p);
  return true;
}
kl_status kl_parser_expect(kl_parser *p, const char *s) {
  if (kl_parser_accept(p, s)) return KL_OK;
  kl_sb what = { 0 };
  kl_sb_printf(&what, "'%s'", s);
  expected(p, kl_sb_str(&what));
  kl_sb_free(&what);
  return KL_ERR;
}
kl_status kl_parser_int(kl_parser *p, int64_t *out) {
  if (p->tok.kind != KL_TK_INT) return expected(p, "an integer");
  *out = p->tok.i;
  kl__next(p);
  return KL_OK;
}
kl_status kl_parser_ident(kl_parser *p, const char **out) {
  if (p->tok.kind != KL_TK_IDENT) return expected(p, "an identifier");
  *out = kl_intern_n(p->ctx, p->tok.p, p->tok.n);
  kl__next(p);
  return KL_OK;
}
kl_status kl_parser_symbol(kl_parser *p, const char **out) {
  kl_tok t = p->tok;
  if (t.kind != KL_TK_SYMBOL) return expected(p, "a symbol (@name)");
  *out = t.quoted ? kl__string_ident(p, &t, "a symbol name") : kl_intern_n(p->ctx, t.p + 1, t.n - 1);
  if (!*out) return KL_ERR;
  kl__next(p);
  return KL_OK;
}
kl_status kl_parser_type(kl_parser *p, const kl_type **out) { return (*out = kl__parse_type(p)) ? KL_OK : KL_ERR; }
kl_status kl_parser_attr(kl_parser *p, const kl_attr **out) {
  return (*out = kl__parse_attr(p, true)) ? KL_OK : KL_ERR;
}
kl_status kl_parser_attr_untyped(kl_parser *p, const kl_attr **out) {
  return (*out = kl__parse_attr(p, false)) ? KL_OK : KL_ERR;
}
kl_status kl_parser_operand(kl_parser *p, kl_value **out) { return (*out = parse_use(p)) ? KL_OK : KL_ERR; }
kl_status kl_parser_block_arg(kl_parser *p, kl_block *b) {
  kl_tok at = p->tok;
  if (at.kind != KL_TK_VALUE || at.result_no >= 0) return expected(p, "an argument name (%name)");
  kl__next(p);
  if (expect_punct(p, ":") != KL_OK) return KL_ERR;
  const kl_type *t = kl__parse_type(p);
  if (!t) return KL_ERR;
  kl_value *v = kl_block_add_arg(p->ctx, b, t);
  set_hint(p, v, &at);
  if (p->npending == p->cappending) {
    p->cappending = p->cappending ? p->cappending * 2 : 16;
    p->pending = kl_xrealloc(p->pending, (size_t)p->cappending * sizeof *p->pending);
  }
  p->pending[p->npending++] = (kl_pending_arg){ b, v, at };
  return KL_OK;
}
kl_status kl_parser_region(kl_parser *p, kl_region **out, kl_block *entry) { return parse_region(p, out, entry); }
kl_status kl_parser_attr_dict(kl_parser *p, kl_op_state *st) {
  return is_punct(p, "{") ? kl__parse_dict_body(p, st) : KL_OK;
}
kl_status kl_parser_error(kl_parser *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kl_status s = verror(p, here(p), fmt, ap);
  va_end(ap);
  return s;
}
kl_status kl_parser_error_at(kl_parser *p, kl_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kl_status s = verror(p, loc, fmt, ap);
  va_end(ap);
  return s;
}
kl_loc kl_parser_loc(kl_parser *p) { return here(p); }
kl_ctx *kl_parser_ctx(kl_parser *p) { return p->ctx; }
