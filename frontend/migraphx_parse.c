/* migraphx_parse.c — the MIGraphX-dialect text reader (contract: migraphx_parse.h). A
 * character-level recursive-descent parser: every error is emitted at the position it is
 * found and unwinds through false returns; nothing is built past the first error. */
#include "frontend/migraphx_parse.h"
#include "core/arena.h"
#include "core/context.h"
#include "core/dialect_graph.h"
#include "core/graph_api.h"
#include "core/shape.h"
#include "core/type.h"
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *name;
  kl_value *v;
} mgx_sym;

typedef struct {
  kl_ctx *ctx;
  const char *s, *end, *file;
  const char *p;
  int line, col;
  kl_arena arena;
  kl_op *module;
  mgx_sym *syms;
  int nsyms, capsyms;
  bool failed;
  const char *only; /* build only the function of this name (NULL: all) */
  /* a test file (a host harness calling `mhal.launch @k` or `call @k`): those kernels only */
  const char *launched[16], *launched_at[16], *launch_op[16];
  int nlaunched;
} P;

static kl_loc here(P *p) { return kl_loc_make(p->ctx, p->file, p->line, p->col); }

static bool fail_at(P *p, kl_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail_at(P *p, kl_loc loc, const char *fmt, ...) {
  if (p->failed) return false;
  p->failed = true;
  va_list ap;
  va_start(ap, fmt);
  kl_emit_vdiag(p->ctx, KL_DIAG_ERROR, loc, fmt, ap);
  va_end(ap);
  return false;
}
#define FAIL(p, ...) fail_at(p, here(p), __VA_ARGS__)

static int cur(P *p) { return p->p < p->end ? (unsigned char)*p->p : 0; }
static int peekc(P *p, int k) { return p->p + k < p->end ? (unsigned char)p->p[k] : 0; }
static void adv(P *p) {
  if (p->p >= p->end) return;
  if (*p->p == '\n') {
    p->line++;
    p->col = 1;
  } else
    p->col++;
  p->p++;
}
static void ws(P *p) {
  for (;;) {
    int c = cur(p);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      adv(p);
    } else if (c == '/' && peekc(p, 1) == '/') {
      while (cur(p) && cur(p) != '\n') adv(p);
    } else
      return;
  }
}
static bool at(P *p, char c) {
  ws(p);
  return cur(p) == c;
}
static bool eat(P *p, char c) {
  if (!at(p, c)) return false;
  adv(p);
  return true;
}
static bool expect(P *p, char c, const char *what) {
  if (eat(p, c)) return true;
  if (!cur(p)) return FAIL(p, "expected '%c' %s, found the end of the input", c, what);
  return FAIL(p, "expected '%c' %s, found '%c'", c, what, cur(p));
}
static bool is_id(int c) { return isalnum(c) || c == '_' || c == '.' || c == '$' || c == '-'; }
/* An identifier (letters, digits, _ . $ -), into the arena; NULL if none here. */
static const char *ident(P *p) {
  ws(p);
  if (!(isalpha(cur(p)) || cur(p) == '_')) return NULL;
  const char *b = p->p;
  while (is_id(cur(p)) && !(cur(p) == '-' && peekc(p, 1) == '>')) adv(p);
  return kl_arena_strndup(&p->arena, b, (size_t)(p->p - b));
}
static bool keyword(P *p, const char *kw) {
  ws(p);
  size_t n = strlen(kw);
  if ((size_t)(p->end - p->p) < n || memcmp(p->p, kw, n) || is_id(peekc(p, (int)n))) return false;
  for (size_t i = 0; i < n; i++) adv(p);
  return true;
}
static bool lit(P *p, const char *s) { /* punctuation sequence such as "->" */
  ws(p);
  size_t n = strlen(s);
  if ((size_t)(p->end - p->p) < n || memcmp(p->p, s, n)) return false;
  for (size_t i = 0; i < n; i++) adv(p);
  return true;
}
/* %name or @name (the sigil included) */
static const char *sigil_name(P *p, char sigil) {
  ws(p);
  if (cur(p) != sigil) return NULL;
  const char *b = p->p;
  adv(p);
  if (cur(p) == '"') { /* @"quoted" */
    adv(p);
    while (cur(p) && cur(p) != '"') adv(p);
    if (!cur(p)) return NULL; /* unterminated: no name */
    adv(p);
  } else
    while (is_id(cur(p)) && cur(p) != '-') adv(p);
  if (p->p - b < 2) return NULL;
  return kl_arena_strndup(&p->arena, b, (size_t)(p->p - b));
}
static bool string_lit(P *p, const char **out) {
  ws(p);
  if (cur(p) != '"') return false;
  adv(p);
  kl_sb sb = { 0 };
  while (cur(p) && cur(p) != '"') {
    if (cur(p) == '\\' && peekc(p, 1)) adv(p);
    kl_sb_putc(&sb, (char)cur(p));
    adv(p);
  }
  if (!cur(p)) {
    kl_sb_free(&sb);
    return FAIL(p, "unterminated string");
  }
  adv(p);
  *out = kl_arena_strdup(&p->arena, kl_sb_str(&sb));
  kl_sb_free(&sb);
  return true;
}
/* Skips one balanced group (<...>, (...), [...], {...}) or token; for attributes and
 * locations kiln ignores. */
static bool skip_balanced(P *p) {
  ws(p);
  int depth = 0;
  do {
    int c = cur(p);
    if (!c) return FAIL(p, "unbalanced brackets");
    if (c == '"') {
      const char *s;
      if (!string_lit(p, &s)) return false;
      continue;
    }
    if (c == '<' || c == '(' || c == '[' || c == '{') depth++;
    if (c == '>' || c == ')' || c == ']' || c == '}') depth--;
    if (depth < 0) return FAIL(p, "unbalanced '%c'", c);
    adv(p);
    if (depth == 0 && !(c == '>' || c == ')' || c == ']' || c == '}')) {
      while (is_id(cur(p))) adv(p);
      if (!(cur(p) == '<' || cur(p) == '(')) return true;
    }
  } while (depth > 0);
  return true;
}

/* ---------------------------------------------------------------- types ---- */
static bool elem_type(P *p, const char *name, kl_loc loc, kl_dtype *dt) {
  static const struct {
    const char *n;
    kl_dtype dt;
  } tab[] = { { "f32", KL_DT_F32 },
              { "f16", KL_DT_F16 },
              { "bf16", KL_DT_BF16 },
              { "i8", KL_DT_I8 },
              { "si8", KL_DT_I8 },
              { "ui8", KL_DT_U8 },
              { "u8", KL_DT_U8 },
              { "i32", KL_DT_I32 },
              { "si32", KL_DT_I32 },
              { "i64", KL_DT_I64 },
              { "si64", KL_DT_I64 },
              { "f64", KL_DT_F64 },
              { "i1", KL_DT_I1 },
              /* fp8, as MLIR spells them (and kiln's own names) */
              { "f8E4M3FN", KL_DT_F8E4M3FN },
              { "f8E5M2", KL_DT_F8E5M2 },
              { "f8E4M3FNUZ", KL_DT_F8E4M3FNUZ },
              { "f8E5M2FNUZ", KL_DT_F8E5M2FNUZ },
              { "f8e4m3fn", KL_DT_F8E4M3FN },
              { "f8e5m2", KL_DT_F8E5M2 },
              { "f8e4m3fnuz", KL_DT_F8E4M3FNUZ },
              { "f8e5m2fnuz", KL_DT_F8E5M2FNUZ } };
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (!strcmp(name, tab[i].n)) {
      *dt = tab[i].dt;
      return true;
    }
  if (!strncmp(name, "f4", 2) || !strncmp(name, "f6", 2))
    return fail_at(p, loc, "element type %s is not supported (kiln has no fp4 / fp6 types)", name);
  if (!strncmp(name, "f8", 2) || !strncmp(name, "fp8", 3))
    return fail_at(p, loc, "element type %s is not supported (fp8 types: f8E4M3FN f8E5M2 f8E4M3FNUZ f8E5M2FNUZ)", name);
  return fail_at(p, loc,
                 "unknown element type '%s' (supported: f32 f16 bf16 i8 si8 ui8 i32 si32 i64 f64 i1 f8E4M3FN f8E5M2 "
                 "f8E4M3FNUZ f8E5M2FNUZ)",
                 name);
}

static bool int64_tok(P *p, int64_t *out) {
  ws(p);
  const char *b = p->p;
  if (cur(p) == '-' || cur(p) == '+') adv(p);
  if (!isdigit(cur(p))) return false;
  while (isdigit(cur(p))) adv(p);
  char buf[32];
  size_t n = (size_t)(p->p - b);
  if (n >= sizeof buf) return FAIL(p, "integer too long");
  memcpy(buf, b, n);
  buf[n] = 0;
  errno = 0;
  long long v = strtoll(buf, NULL, 10);
  if (errno) return FAIL(p, "integer out of range: %s", buf);
  *out = v;
  return true;
}

/* The inside of <...>: DxDxE [, SxS] up to and including '>'. */
static bool type_body(P *p, kl_mgx_type *t, bool strides_ok) {
  t->rank = 0;
  ws(p);
  for (;;) {
    ws(p);
    if (isdigit(cur(p)) || cur(p) == '?') {
      if (cur(p) == '?') return FAIL(p, "dynamic dimensions are not supported");
      int64_t d;
      if (!int64_tok(p, &d)) return false;
      if (t->rank >= KL_MAX_RANK) return FAIL(p, "rank above %d is not supported", KL_MAX_RANK);
      t->dims[t->rank++] = d;
      if (cur(p) != 'x') return FAIL(p, "expected 'x' after a dimension");
      adv(p);
      continue;
    }
    break;
  }
  kl_loc eloc = here(p);
  const char *e = ident(p);
  if (!e) return FAIL(p, "expected an element type");
  if (!elem_type(p, e, eloc, &t->dt)) return false;
  kl_strides_row_major(t->rank, t->dims, t->strides);
  if (eat(p, ',')) {
    if (!strides_ok) return FAIL(p, "tensor<> types take no strides");
    int n = 0;
    for (;;) {
      int64_t s;
      if (!int64_tok(p, &s)) return FAIL(p, "expected a stride");
      if (n >= KL_MAX_RANK) return FAIL(p, "too many strides");
      t->strides[n++] = s;
      if (cur(p) != 'x') break;
      adv(p);
    }
    if (n != t->rank && !(t->rank == 0 && n == 1))
      return fail_at(p, t->loc, "the type has %d dimensions but %d strides", t->rank, n);
    for (int i = 0; i < t->rank; i++)
      if (t->strides[i] < 0) return fail_at(p, t->loc, "negative strides are not supported");
  }
  char err[256];
  if (!kl_shape_check(t->rank, t->dims, NULL, err, sizeof err)) return fail_at(p, t->loc, "%s", err);
  return expect(p, '>', "closing the type");
}
/* A type: !migraphx.shaped<...>, tensor<...>, or (short_ok) <...>. */
static bool mgx_type(P *p, kl_mgx_type *t, bool short_ok) {
  ws(p);
  t->loc = here(p);
  if (lit(p, "!migraphx.shaped<")) return type_body(p, t, true);
  if (keyword(p, "tensor")) {
    if (!expect(p, '<', "after tensor")) return false;
    return type_body(p, t, false);
  }
  if (short_ok && eat(p, '<')) return type_body(p, t, true);
  if (cur(p) == '!') return FAIL(p, "unsupported type (expected !migraphx.shaped<...> or tensor<...>)");
  return FAIL(p, "expected a type");
}

/* ------------------------------------------------------------ attributes ---- */
static bool attr_value(P *p, kl_mgx_attr *a);

static bool number(P *p, kl_mgx_attr *a) {
  ws(p);
  const char *b = p->p;
  if (cur(p) == '-' || cur(p) == '+') adv(p);
  bool flt = false;
  if (cur(p) == '0' && (peekc(p, 1) == 'x' || peekc(p, 1) == 'X')) {
    adv(p);
    adv(p);
    while (isxdigit(cur(p)) || cur(p) == '.' || cur(p) == 'p' || cur(p) == 'P' ||
           ((cur(p) == '-' || cur(p) == '+') && (p->p[-1] == 'p' || p->p[-1] == 'P'))) {
      if (cur(p) == '.' || cur(p) == 'p' || cur(p) == 'P') flt = true;
      adv(p);
    }
  } else {
    if (keyword(p, "inf")) {
      a->kind = KL_MGX_FLOAT;
      a->f = *b == '-' ? -INFINITY : INFINITY;
      return true;
    }
    if (keyword(p, "nan")) {
      a->kind = KL_MGX_FLOAT;
      a->f = NAN;
      return true;
    }
    while (isdigit(cur(p)) || cur(p) == '.' || cur(p) == 'e' || cur(p) == 'E' ||
           ((cur(p) == '-' || cur(p) == '+') && (p->p[-1] == 'e' || p->p[-1] == 'E'))) {
      if (!isdigit(cur(p))) flt = true;
      adv(p);
    }
  }
  char buf[64];
  size_t n = (size_t)(p->p - b);
  if (n == 0 || n >= sizeof buf) return FAIL(p, "bad number");
  memcpy(buf, b, n);
  buf[n] = 0;
  char *endp;
  if (flt) {
    a->kind = KL_MGX_FLOAT;
    a->f = strtod(buf, &endp);
  } else {
    a->kind = KL_MGX_INT;
    errno = 0;
    a->i = strtoll(buf, &endp, 0);
    a->f = (double)a->i;
    if (errno) return FAIL(p, "integer out of range: %s", buf);
  }
  if (*endp) return fail_at(p, a->loc, "bad number '%s'", buf);
  return true;
}

/* Optional ": type" after a scalar (1 : i64, 0.5 : f32). */
static bool opt_scalar_type(P *p) {
  if (!at(p, ':')) return true;
  const char *save = p->p;
  int line = p->line, col = p->col;
  adv(p);
  ws(p);
  if (isalpha(cur(p))) {
    ident(p);
    return true;
  }
  p->p = save, p->line = line, p->col = col;
  return true;
}

/* A dense literal's elements while they are read: values, and which were written as hex
 * integers (for a float element type those are bit patterns, as in MLIR: 0xFC00 : f16 is
 * -inf). */
typedef struct {
  double *vals;
  unsigned char *hex;
  int64_t n, cap;
  /* the nested list shape as read: dims[d] = the length of the lists at depth d (the
   * first one seen; ragged = a later one differed), leaf = the depth of the scalars (-1
   * before the first) */
  int64_t dims[KL_MAX_RANK + 1];
  int ndims, leaf;
  bool ragged;
} dense_buf;
static void push_val(dense_buf *d, double v, bool hex) {
  if (d->n == d->cap) {
    d->cap = d->cap ? d->cap * 2 : 64;
    d->vals = kl_xrealloc(d->vals, (size_t)d->cap * sizeof(double));
    d->hex = kl_xrealloc(d->hex, (size_t)d->cap);
  }
  d->hex[d->n] = hex;
  d->vals[d->n++] = v;
}
static void dense_list_len(dense_buf *d, int depth, int64_t len) {
  if (depth < 0 || depth > KL_MAX_RANK) return; /* dense_elems stops deeper lists first */
  if (depth >= d->ndims) {                      /* the first list closed at this depth (inner lists close first) */
    for (int i = d->ndims > 0 ? d->ndims : 0; i < depth; i++) d->dims[i] = -1;
    d->dims[depth] = len;
    d->ndims = depth + 1;
  } else if (d->dims[depth] == -1)
    d->dims[depth] = len;
  else if (d->dims[depth] != len)
    d->ragged = true;
}
static bool dense_elems(P *p, dense_buf *d, int depth) {
  if (depth > KL_MAX_RANK) return FAIL(p, "dense literal nested deeper than %d", KL_MAX_RANK);
  if (eat(p, '[')) {
    int64_t len = 0;
    if (!eat(p, ']')) {
      do {
        if (!dense_elems(p, d, depth + 1)) return false;
        len++;
      } while (eat(p, ','));
      if (!expect(p, ']', "closing a dense list")) return false;
    }
    dense_list_len(d, depth, len);
    return true;
  }
  if (d->leaf < 0)
    d->leaf = depth;
  else if (d->leaf != depth)
    d->ragged = true;
  ws(p);
  kl_mgx_attr x = { .loc = here(p) };
  bool hex = cur(p) == '0' && (peekc(p, 1) == 'x' || peekc(p, 1) == 'X');
  if (keyword(p, "true"))
    x.f = 1;
  else if (keyword(p, "false"))
    x.f = 0;
  else if (!number(p, &x))
    return false;
  if (d->n >= ((int64_t)1 << 24)) return FAIL(p, "dense literal too large");
  push_val(d, x.f, hex && x.kind == KL_MGX_INT);
  return true;
}
/* dense<...> : tensor<...> (the keyword already read) */
static bool dense(P *p, kl_mgx_attr *a) {
  a->kind = KL_MGX_DENSE;
  if (!expect(p, '<', "after dense")) return false;
  dense_buf d = { .leaf = -1 };
  const char *blob = NULL;
  ws(p);
  kl_loc bloc = here(p);
  if (at(p, '"')) {
    if (!string_lit(p, &blob)) return false;
  } else if (!at(p, '>') && !dense_elems(p, &d, 0)) {
    free(d.vals), free(d.hex);
    return false;
  }
  if (!expect(p, '>', "closing dense<...>") || !expect(p, ':', "before a dense literal's type") ||
      !mgx_type(p, &a->type, false)) {
    free(d.vals), free(d.hex);
    return false;
  }
  /* a list literal's nesting must be the type's shape (a bare scalar is a splat), as in MLIR */
  bool list = d.ndims > 0;
  for (int i = 0; i < d.ndims; i++)
    if (d.dims[i] < 0) d.ragged = true;
  bool shape_ok = !d.ragged && (d.leaf < 0 || d.leaf == d.ndims) && d.ndims == a->type.rank;
  for (int i = 0; shape_ok && i < d.ndims; i++) shape_ok = d.dims[i] == a->type.dims[i];
  if (list && !shape_ok) {
    kl_sb sg = { 0 }, sw = { 0 };
    if (d.ragged || (d.leaf >= 0 && d.leaf != d.ndims))
      kl_sb_puts(&sg, "(ragged)");
    else
      for (int i = 0; i < d.ndims; i++) kl_sb_printf(&sg, "%s%lld", i ? "x" : "[", (long long)d.dims[i]);
    if (!d.ragged && (d.leaf < 0 || d.leaf == d.ndims)) kl_sb_puts(&sg, "]");
    kl_sb_puts(&sw, "[");
    for (int i = 0; i < a->type.rank; i++) kl_sb_printf(&sw, "%s%lld", i ? "x" : "", (long long)a->type.dims[i]);
    kl_sb_puts(&sw, "]");
    char *got = kl_sb_take(&sg), *want = kl_sb_take(&sw);
    free(d.vals), free(d.hex);
    bool r = fail_at(p, bloc, "dense literal of shape %s does not match its type's shape %s", got, want);
    free(got), free(want);
    return r;
  }
  double *vals = d.vals;
  int64_t n = d.n;
  if (kl_dtype_is_float(a->type.dt)) /* hex integers are the elements' bit patterns */
    for (int64_t i = 0; i < n; i++) {
      if (!d.hex[i]) continue;
      uint64_t bits = (uint64_t)(int64_t)vals[i];
      unsigned char b[8];
      for (int k = 0; k < 8; k++) b[k] = (unsigned char)(bits >> (8 * k));
      vals[i] = kl_dtype_load_f64(a->type.dt, b);
    }
  free(d.hex);
  /* integer elements must be integers of the element type's range (MLIR's rule: signless
   * i8 / i32 take -2^(n-1) .. 2^n - 1, ui8 0 .. 255) */
  kl_dtype edt = a->type.dt;
  if (edt == KL_DT_I8 || edt == KL_DT_U8 || edt == KL_DT_I32)
    for (int64_t i = 0; i < n; i++) {
      double lo = edt == KL_DT_U8 ? 0 : (double)kl_dtype_int_min(edt), hi = edt == KL_DT_I32 ? 4294967295.0 : 255.0;
      double v = vals[i];
      if (v != floor(v) || v < lo || v > hi) {
        free(vals);
        return fail_at(p, bloc, "dense literal element %lld (%g) is not a%s %s value", (long long)i, v,
                       edt == KL_DT_U8 ? "" : "n", edt == KL_DT_U8 ? "ui8" : kl_dtype_name(edt));
      }
    }
  kl_shape shp = kl_shape_make(a->type.rank, a->type.dims);
  int64_t numel = kl_shape_numel(&shp);
  if (blob) {
    free(vals);
    vals = NULL;
    size_t len = strlen(blob), esz = kl_dtype_size(a->type.dt);
    if (len < 2 || blob[0] != '0' || (blob[1] != 'x' && blob[1] != 'X') || (len - 2) % 2)
      return fail_at(p, bloc, "a dense string must be a hex blob \"0x...\"");
    size_t nb = (len - 2) / 2;
    unsigned char *bytes = kl_xmalloc(nb + 8);
    for (size_t i = 0; i < nb; i++) {
      char hx[3] = { blob[2 + 2 * i], blob[3 + 2 * i], 0 };
      if (!isxdigit((unsigned char)hx[0]) || !isxdigit((unsigned char)hx[1])) {
        free(bytes);
        return fail_at(p, bloc, "bad hex digit in a dense blob");
      }
      bytes[i] = (unsigned char)strtol(hx, NULL, 16);
    }
    if (nb != (size_t)numel * esz && nb != esz) {
      free(bytes);
      return fail_at(p, bloc, "dense blob has %zu bytes; %s needs %lld", nb, "the type", (long long)(numel * esz));
    }
    n = (int64_t)(nb / esz);
    vals = kl_xmalloc((size_t)(n ? n : 1) * sizeof(double));
    for (int64_t i = 0; i < n; i++) vals[i] = kl_dtype_load_f64(a->type.dt, bytes + i * esz);
    free(bytes);
  }
  if (n != numel && n != 1) {
    free(vals);
    return fail_at(p, bloc, "dense literal has %lld elements; its type has %lld", (long long)n, (long long)numel);
  }
  a->splat = n == 1;
  a->nvals = n;
  a->vals = kl_arena_dup(&p->arena, vals, (size_t)n * sizeof(double));
  free(vals);
  return true;
}

static bool attr_value(P *p, kl_mgx_attr *a) {
  ws(p);
  a->loc = here(p);
  int c = cur(p);
  if (c == '[') {
    adv(p);
    a->kind = KL_MGX_LIST;
    int cap = 0;
    if (eat(p, ']')) return true;
    do {
      if (a->n == cap) {
        cap = cap ? cap * 2 : 8;
        kl_mgx_attr *ni = kl_arena_alloc(&p->arena, (size_t)cap * sizeof *ni);
        if (a->n) memcpy(ni, a->items, (size_t)a->n * sizeof *ni);
        a->items = ni;
      }
      kl_mgx_attr *it = &a->items[a->n++];
      memset(it, 0, sizeof *it);
      if (!attr_value(p, it)) return false;
    } while (eat(p, ','));
    return expect(p, ']', "closing a list");
  }
  if (c == '"') {
    a->kind = KL_MGX_STR;
    return string_lit(p, &a->s);
  }
  if (isdigit(c) || c == '-' || c == '+') return number(p, a) && opt_scalar_type(p);
  if (keyword(p, "true") || keyword(p, "false")) {
    a->kind = KL_MGX_BOOL;
    a->i = p->p[-1] == 'e' && p->p[-2] == 'u';
    return true;
  }
  if (keyword(p, "dense")) return dense(p, a);
  if (c == '!' || !strncmp(p->p, "tensor<", (size_t)(p->end - p->p) < 7 ? 0 : 7)) {
    a->kind = KL_MGX_TYPE;
    return mgx_type(p, &a->type, false);
  }
  if (isalpha(c)) {
    const char *save = p->p;
    int line = p->line, col = p->col;
    const char *id = ident(p);
    kl_dtype dt;
    if (id && kl_dtype_from_name(id) != KL_DT_NONE && (dt = kl_dtype_from_name(id), true)) {
      a->kind = KL_MGX_TYPE;
      a->type.dt = dt;
      return true;
    }
    p->p = save, p->line = line, p->col = col;
  }
  a->kind = KL_MGX_OTHER;
  return skip_balanced(p);
}

/* {name = value, name, ...} into *attrs (appending) */
static bool attr_dict(P *p, kl_mgx_attr **attrs, int *n) {
  if (!expect(p, '{', "opening attributes")) return false;
  if (eat(p, '}')) return true;
  int cap = *n;
  do {
    ws(p);
    kl_loc loc = here(p);
    const char *name = NULL;
    if (at(p, '"')) {
      if (!string_lit(p, &name)) return false;
    } else if (!(name = ident(p)))
      return FAIL(p, "expected an attribute name");
    if (*n == cap) {
      cap = cap ? cap * 2 : 8;
      kl_mgx_attr *na = kl_arena_alloc(&p->arena, (size_t)cap * sizeof *na);
      if (*n) memcpy(na, *attrs, (size_t)*n * sizeof *na);
      *attrs = na;
    }
    kl_mgx_attr *a = &(*attrs)[(*n)++];
    memset(a, 0, sizeof *a);
    if (eat(p, '=')) {
      if (!attr_value(p, a)) return false;
    } else
      a->kind = KL_MGX_UNIT;
    a->name = name;
    a->loc = loc;
  } while (eat(p, ','));
  return expect(p, '}', "closing attributes");
}

/* --------------------------------------------------------------- values ---- */
static kl_value *lookup(P *p, const char *name) {
  for (int i = p->nsyms - 1; i >= 0; i--)
    if (!strcmp(p->syms[i].name, name)) return p->syms[i].v;
  return NULL;
}
static void define(P *p, const char *name, kl_value *v) {
  if (p->nsyms == p->capsyms) {
    p->capsyms = p->capsyms ? p->capsyms * 2 : 64;
    p->syms = kl_xrealloc(p->syms, (size_t)p->capsyms * sizeof *p->syms);
  }
  p->syms[p->nsyms++] = (mgx_sym){ name, v };
}
static bool use(P *p, kl_value **out) {
  ws(p);
  kl_loc loc = here(p);
  const char *n = sigil_name(p, '%');
  if (!n) return FAIL(p, "expected an SSA value (%%name)");
  /* %r#1 names result 1 of a multi-result op */
  char full[256];
  snprintf(full, sizeof full, "%s", n);
  if (cur(p) == '#') {
    adv(p);
    int64_t k;
    if (!int64_tok(p, &k)) return FAIL(p, "expected a result number after '#'");
    snprintf(full, sizeof full, "%s#%lld", n, (long long)k);
  }
  *out = lookup(p, full);
  if (!*out) return fail_at(p, loc, "unknown value %s", full);
  return true;
}

/* The kiln type of v matches the MIGraphX type t (dims and element type). */
static bool check_type(P *p, kl_value *v, const kl_mgx_type *t, const char *what) {
  const kl_type *ty = v->type;
  bool ok = ty && ty->rank == t->rank && ty->elem && kl_type_dtype(ty->elem) == t->dt;
  for (int i = 0; ok && i < t->rank; i++) ok = ty->shape[i] == t->dims[i];
  if (ok) return true;
  char want[128], got[128];
  kl_dims_format(t->rank, t->dims, want, sizeof want);
  if (ty)
    kl_dims_format(ty->rank, ty->shape, got, sizeof got);
  else
    snprintf(got, sizeof got, "?");
  return fail_at(p, t->loc, "%s: the type says %s%s but the value is %s%s", what, want, kl_dtype_name(t->dt), got,
                 ty && ty->elem ? kl_dtype_name(kl_type_dtype(ty->elem)) : "?");
}

/* ------------------------------------------------------------- params ---- */
bool kl_mgx_plan_param(const kl_mgx_type *t, kl_mgx_param_plan *pl, char *err, size_t errlen) {
  memset(pl, 0, sizeof *pl);
  int r = pl->rank = t->rank;
  int order[KL_MAX_RANK], m = 0; /* non-unit, non-broadcast dims by stride, outermost first */
  for (int i = 0; i < r; i++) {
    pl->base[i] = t->dims[i];
    pl->shape[i] = t->dims[i];
    if (t->dims[i] > 1 && t->strides[i] == 0) {
      pl->broadcast = true;
      pl->base[i] = pl->shape[i] = 1;
    } else if (t->dims[i] > 1)
      order[m++] = i;
  }
  for (int i = 1; i < m; i++) /* insertion sort by stride, descending (stable) */
    for (int j = i; j > 0 && t->strides[order[j]] > t->strides[order[j - 1]]; j--) {
      int x = order[j];
      order[j] = order[j - 1];
      order[j - 1] = x;
    }
  for (int i = 1; i < m; i++)
    if (t->strides[order[i]] == t->strides[order[i - 1]])
      return kl_errf(err, errlen, "dimensions %d and %d have the same stride %lld (overlapping memory)", order[i - 1],
                     order[i], (long long)t->strides[order[i]]),
             false;
  /* an innermost stride s > 1 (every s-th element): a trailing buffer dim of s, read at 0 */
  pl->inner = m ? t->strides[order[m - 1]] : 1;
  if (pl->inner < 1) return kl_errf(err, errlen, "the innermost stride is %lld", (long long)pl->inner), false;
  if (pl->inner > 1) {
    if (r + 1 > KL_MAX_RANK)
      return kl_errf(err, errlen, "the innermost stride is %lld at rank %d (at most %d with the stride dim)",
                     (long long)pl->inner, r, KL_MAX_RANK - 1),
             false;
    pl->sliced = true;
  }
  /* the buffer: each dim's extent is the next outer stride over its own */
  for (int k = m - 1; k > 0; k--) {
    int in = order[k], out = order[k - 1];
    int64_t s_in = t->strides[in], s_out = t->strides[out];
    if (s_out % s_in)
      return kl_errf(err, errlen, "stride %lld of dimension %d is not a multiple of stride %lld of dimension %d",
                     (long long)s_out, out, (long long)s_in, in),
             false;
    int64_t ext = s_out / s_in;
    if (ext < t->dims[in])
      return kl_errf(err, errlen, "dimension %d of size %lld does not fit in stride %lld of dimension %d", in,
                     (long long)t->dims[in], (long long)s_out, out),
             false;
    if (ext != t->dims[in]) pl->sliced = true;
    pl->shape[in] = ext;
  }
  /* memory order: the slots of the non-unit dims take them by stride; unit dims stay */
  for (int i = 0, k = 0; i < r; i++) pl->perm[i] = (t->dims[i] > 1 && t->strides[i] != 0) ? order[k++] : i;
  for (int i = 0; i < r; i++)
    if (pl->perm[i] != i) pl->permuted = true;
  return true;
}

/* graph op gop ("reshape", "broadcast") of v to shape[n] */
static kl_value *shaped(kl_op *g, const char *gop, kl_value *v, int n, const int64_t *shape, kl_loc loc) {
  kl_sb sb = { 0 };
  kl_sb_puts(&sb, "{shape = [");
  for (int i = 0; i < n; i++) kl_sb_printf(&sb, i ? ", %lld" : "%lld", (long long)shape[i]);
  kl_sb_puts(&sb, "]}");
  v = kl_graph_add_op(g, gop, 1, &v, kl_sb_str(&sb), loc);
  kl_sb_free(&sb);
  return v;
}
static bool make_param(P *p, kl_op *g, const char *name, const kl_mgx_type *t, kl_value **out) {
  kl_mgx_param_plan pl;
  char err[256];
  if (!kl_mgx_plan_param(t, &pl, err, sizeof err)) return fail_at(p, t->loc, "argument %s: %s", name, err);
  char layout[64] = "";
  if (pl.permuted) {
    size_t o = 0;
    for (int i = 0; i < pl.rank; i++)
      o += (size_t)snprintf(layout + o, sizeof layout - o, i ? ",%d" : "%d", pl.perm[i]);
  }
  /* an innermost stride > 1: the buffer's extra trailing dim (innermost in memory too) */
  int br = pl.rank + (pl.inner > 1);
  int64_t bshape[KL_MAX_RANK];
  for (int i = 0; i < pl.rank; i++) bshape[i] = pl.shape[i];
  if (pl.inner > 1) {
    bshape[pl.rank] = pl.inner;
    if (pl.permuted) snprintf(layout + strlen(layout), sizeof layout - strlen(layout), ",%d", pl.rank);
  }
  kl_value *v = kl_graph_add_param(g, name + 1, t->dt, br, bshape, layout, t->loc);
  if (v && pl.sliced) {
    kl_sb sb = { 0 };
    kl_sb_puts(&sb, "{begin = [");
    for (int i = 0; i < br; i++) kl_sb_printf(&sb, i ? ", 0" : "0");
    kl_sb_puts(&sb, "], end = [");
    for (int i = 0; i < br; i++) kl_sb_printf(&sb, i ? ", %lld" : "%lld", (long long)(i < pl.rank ? pl.base[i] : 1));
    kl_sb_puts(&sb, "]}");
    v = kl_graph_add_op(g, "slice", 1, &v, kl_sb_str(&sb), t->loc);
    kl_sb_free(&sb);
  }
  if (v && pl.inner > 1) v = shaped(g, "reshape", v, pl.rank, pl.base, t->loc); /* drop the stride dim */
  if (v && pl.broadcast) v = shaped(g, "broadcast", v, pl.rank, t->dims, t->loc);
  if (!v) {
    p->failed = true;
    return false;
  }
  *out = v;
  return true;
}

/* ------------------------------------------------------------------ ops ---- */
/* T, T or (T, T) */
static bool type_list(P *p, kl_mgx_type *ts, int *n, int max) {
  *n = 0;
  bool paren = eat(p, '(');
  if (paren && eat(p, ')')) return true;
  do {
    if (*n >= max) return FAIL(p, "too many types");
    if (!mgx_type(p, &ts[(*n)++], true)) return false;
    if (paren && at(p, '{') && !skip_balanced(p)) return false; /* result attributes */
  } while (eat(p, ','));
  return !paren || expect(p, ')', "closing the type list");
}

static bool parse_op(P *p, kl_op *g) {
  ws(p);
  kl_mgx_op op = { .loc = here(p) };
  const char *res[4];
  int nres = 0, rescount = 0;
  if (at(p, '%')) {
    do {
      if (nres >= 4) return FAIL(p, "too many results");
      if (!(res[nres++] = sigil_name(p, '%'))) return FAIL(p, "expected a result name");
      if (cur(p) == ':') { /* %r:2 */
        adv(p);
        int64_t k;
        if (!int64_tok(p, &k) || k < 1 || k > 4) return FAIL(p, "bad result count");
        rescount = (int)k;
      }
    } while (eat(p, ','));
    if (!expect(p, '=', "after the results")) return false;
    ws(p);
    op.loc = here(p);
  }
  const char *full = NULL;
  bool generic = at(p, '"');
  if (generic) {
    if (!string_lit(p, &full)) return false;
  } else if (!(full = ident(p)))
    return FAIL(p, "expected an op");
  if (!strcmp(full, "tosa.const") || !strcmp(full, "migraphx.constant")) /* older files' constants: a literal */
    op.name = "literal";
  else if (strncmp(full, "migraphx.", 9))
    return fail_at(p, op.loc, "%s is not supported (only migraphx.* ops and tosa.const are read in a function body)",
                   full);
  else
    op.name = full + 9;
  kl_mgx_type in_types[KL_MGX_MAX_OPERANDS];
  int nin = 0;
  /* operands */
  ws(p);
  if (eat(p, '(')) {
    if (!at(p, ')')) {
      if (at(p, '%')) {
        do {
          if (op.n >= KL_MGX_MAX_OPERANDS) return FAIL(p, "too many operands");
          if (!use(p, &op.operands[op.n++])) return false;
        } while (eat(p, ','));
      } else { /* literal(dense<...>) */
        kl_mgx_attr *a = kl_arena_alloc(&p->arena, 8 * sizeof *a);
        a->name = "value";
        if (!attr_value(p, a)) return false;
        op.attrs = a;
        op.nattrs = 1;
      }
    }
    if (!expect(p, ')', "closing the operands")) return false;
  } else if (at(p, '%')) {
    do {
      if (op.n >= KL_MGX_MAX_OPERANDS) return FAIL(p, "too many operands");
      if (!use(p, &op.operands[op.n++])) return false;
    } while (eat(p, ','));
  }
  if (at(p, '{') && !attr_dict(p, &op.attrs, &op.nattrs)) return false;
  if (!expect(p, ':', "before the op's types")) return false;
  if (!type_list(p, in_types, &nin, KL_MGX_MAX_OPERANDS)) return false;
  if (lit(p, "->") || keyword(p, "to")) {
    if (!type_list(p, op.results, &op.nresults, 4)) return false;
  } else if (op.n == 0) { /* literal: the list is its result */
    op.nresults = nin;
    memcpy(op.results, in_types, sizeof(kl_mgx_type) * (size_t)(nin > 4 ? 4 : nin));
    nin = 0;
  } else
    return FAIL(p, "expected '->' and the result types");
  if (keyword(p, "loc") && !skip_balanced(p)) return false;
  if (nin != op.n) return fail_at(p, op.loc, "migraphx.%s: %d operands but %d operand types", op.name, op.n, nin);
  int want = rescount ? rescount : (nres ? nres : 0);
  if (nres && want != op.nresults)
    return fail_at(p, op.loc, "migraphx.%s: %d results named but %d result types", op.name, want, op.nresults);
  for (int i = 0; i < op.n; i++) {
    char what[64];
    snprintf(what, sizeof what, "migraphx.%s operand %d", op.name, i + 1);
    if (!check_type(p, op.operands[i], &in_types[i], what)) return false;
  }
  kl_value *outs[4] = { 0 };
  if (!kl_mgx_build_op(g, &op, outs)) {
    p->failed = true;
    return false;
  }
  for (int i = 0; i < op.nresults; i++) {
    char what[64];
    snprintf(what, sizeof what, "migraphx.%s result %d", op.name, i + 1);
    if (!check_type(p, outs[i], &op.results[i], what)) return false;
    if (rescount) {
      char nm[256];
      snprintf(nm, sizeof nm, "%s#%d", res[0], i);
      define(p, kl_arena_strdup(&p->arena, nm), outs[i]);
    } else if (i < nres)
      define(p, res[i], outs[i]);
  }
  if (rescount) define(p, res[0], outs[0]);
  return true;
}

static bool check_result_strides(P *p, const kl_mgx_type *t, int k) {
  int perm[KL_MAX_RANK];
  int64_t s[KL_MAX_RANK];
  for (int i = 0; i < t->rank; i++) s[i] = t->strides[i];
  if (kl_strides_to_perm(t->rank, t->dims, s, perm)) return true;
  char buf[128];
  size_t o = 0;
  for (int i = 0; i < t->rank; i++)
    o += (size_t)snprintf(buf + o, sizeof buf - o, i ? "x%lld" : "%lld", (long long)s[i]);
  return fail_at(p, t->loc, "result %d: strides %s are not a dense layout (kiln writes results densely)", k, buf);
}

/* Skips a group from open to its matching close, counting only those two characters
 * (strings and // comments skipped whole). */
static bool skip_group(P *p, char open, char close) {
  if (!expect(p, open, "opening a group")) return false;
  for (int depth = 1; depth > 0;) {
    int c = cur(p);
    if (!c) return FAIL(p, "missing '%c'", close);
    if (c == '"') {
      const char *str;
      if (!string_lit(p, &str)) return false;
      continue;
    }
    if (c == '/' && peekc(p, 1) == '/') {
      ws(p);
      continue;
    }
    if (c == open) depth++;
    if (c == close) depth--;
    adv(p);
  }
  return true;
}
/* A function not selected (P.only): its signature and body, unread. */
static bool skip_func(P *p) {
  if (!skip_group(p, '(', ')')) return false;
  for (;;) {
    ws(p);
    int c = cur(p);
    if (!c) return FAIL(p, "missing the function body");
    if (c == '{') return skip_group(p, '{', '}');
    if (c == '(') {
      if (!skip_group(p, '(', ')')) return false;
    } else if (c == '<') {
      if (!skip_group(p, '<', '>')) return false;
    } else if (keyword(p, "attributes")) {
      if (!skip_group(p, '{', '}')) return false;
    } else
      adv(p);
  }
}

static bool parse_func(P *p) {
  kl_loc floc = here(p);
  if (!keyword(p, "private")) keyword(p, "public");
  const char *name = sigil_name(p, '@');
  if (!name) return FAIL(p, "expected the function's @name");
  const char *plain = name + 1;
  if (*plain == '"') plain = kl_arena_strndup(&p->arena, plain + 1, strlen(plain) - 2);
  /* with a selected name, later copies of it (a test file's kernel module) are skipped too */
  if (p->only && (strcmp(plain, p->only) || kl_module_graph(p->module, plain))) return skip_func(p);
  if (!p->only && p->nlaunched) { /* a test file: its kernels, each once; the harness skipped */
    bool kernel = false;
    for (int i = 0; i < p->nlaunched && !kernel; i++) kernel = !strcmp(plain, p->launched[i]);
    if (!kernel || kl_module_graph(p->module, plain)) return skip_func(p);
  }
  if (kl_module_graph(p->module, plain)) return fail_at(p, floc, "function @%s is defined twice", plain);
  kl_op *g = kl_graph_create(p->ctx, p->module, plain, floc);
  if (!g) return p->failed = true, false;
  int sym0 = p->nsyms;
  if (!expect(p, '(', "opening the arguments")) return false;
  if (!at(p, ')')) do {
      ws(p);
      const char *an = sigil_name(p, '%');
      if (!an) return FAIL(p, "expected an argument (%%name)");
      if (!expect(p, ':', "after the argument name")) return false;
      kl_mgx_type t;
      if (!mgx_type(p, &t, false)) return false;
      if (at(p, '{') && !skip_balanced(p)) return false; /* {mhal.read_access} */
      kl_value *v = NULL;
      if (!make_param(p, g, an, &t, &v)) return false;
      define(p, an, v);
    } while (eat(p, ','));
  if (!expect(p, ')', "closing the arguments")) return false;
  kl_mgx_type rts[16];
  int nrt = 0;
  if (lit(p, "->") && !type_list(p, rts, &nrt, 16)) return false;
  if (keyword(p, "attributes") && !skip_balanced(p)) return false;
  if (!expect(p, '{', "opening the function body")) return false;
  for (;;) {
    ws(p);
    kl_loc rloc = here(p);
    if (keyword(p, "return") || keyword(p, "func.return")) {
      kl_value *outs[16];
      int n = 0;
      if (at(p, '%')) do {
          if (n >= 16) return FAIL(p, "too many results");
          if (!use(p, &outs[n++])) return false;
        } while (eat(p, ','));
      kl_mgx_type ts[16];
      int nt = 0;
      if (eat(p, ':') && !type_list(p, ts, &nt, 16)) return false;
      if (nt != n) return fail_at(p, rloc, "return: %d values but %d types", n, nt);
      if (n == 0) return fail_at(p, rloc, "return: a function without results computes nothing");
      if (nrt && nrt != n) return fail_at(p, rloc, "return: %d values but the function has %d results", n, nrt);
      for (int i = 0; i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, "return value %d", i + 1);
        if (!check_type(p, outs[i], &ts[i], what) || !check_result_strides(p, &ts[i], i + 1)) return false;
        if (nrt && !check_result_strides(p, &rts[i], i + 1)) return false;
      }
      if (kl_graph_output(g, n, outs, rloc) != KL_OK) return p->failed = true, false;
      break;
    }
    if (!cur(p) || at(p, '}')) return fail_at(p, rloc, "function @%s has no return", plain);
    if (!parse_op(p, g)) return false;
  }
  p->nsyms = sym0;
  return expect(p, '}', "closing the function body");
}

static bool parse_items(P *p, bool nested) {
  for (;;) {
    ws(p);
    if (!cur(p)) return nested ? FAIL(p, "missing '}' closing the module") : true;
    if (nested && eat(p, '}')) return true;
    if (keyword(p, "module")) {
      sigil_name(p, '@');
      if (keyword(p, "attributes") && !skip_balanced(p)) return false;
      if (!expect(p, '{', "opening the module") || !parse_items(p, true)) return false;
    } else if (keyword(p, "func.func")) {
      if (!parse_func(p)) return false;
    } else {
      const char *id = ident(p);
      if (id) return FAIL(p, "unexpected '%s' (expected module or func.func)", id);
      return FAIL(p, "unexpected '%c' (expected module or func.func)", cur(p));
    }
  }
}

kl_op *kl_migraphx_parse(kl_ctx *ctx, const char *text, size_t len, const char *file) {
  return kl_migraphx_parse_func(ctx, text, len, file, NULL);
}

/* The callees of `mhal.launch @name` in the text (rocMLIR's test files wrap their kernel in
 * such a harness, plus a copy of it in a nested kernel module), and of `call @name` /
 * `func.call @name` (older test files' harness: two calls of kernels whose results tosa
 * ops compare), at most 16. */
static void find_launches(P *p) {
  static const char *const keys[] = { "mhal.launch", "func.call", "call" };
  for (const char *q = p->s; q < p->end && p->nlaunched < 16; q++) {
    if (q + 1 < p->end && q[0] == '/' && q[1] == '/') { /* a comment, to the end of its line */
      while (q + 1 < p->end && q[1] != '\n') q++;
      continue;
    }
    if (q > p->s && (isalnum((unsigned char)q[-1]) || q[-1] == '_' || q[-1] == '.' || q[-1] == '"')) continue;
    size_t kn = 0;
    const char *key = NULL;
    for (int k = 0; k < 3 && !key; k++) {
      size_t n = strlen(keys[k]);
      if ((size_t)(p->end - q) > n && !memcmp(q, keys[k], n)) key = keys[k], kn = n;
    }
    if (!key) continue;
    const char *n = q + kn;
    while (n < p->end && (*n == ' ' || *n == '\t')) n++;
    if (n >= p->end || *n != '@') continue;
    const char *b = ++n;
    while (n < p->end && (isalnum((unsigned char)*n) || *n == '_' || *n == '.' || *n == '$')) n++;
    if (n > b) {
      p->launch_op[p->nlaunched] = key;
      p->launched_at[p->nlaunched] = q;
      p->launched[p->nlaunched++] = kl_arena_strndup(&p->arena, b, (size_t)(n - b));
    }
    q = n - 1;
  }
}

kl_op *kl_migraphx_parse_func(kl_ctx *ctx, const char *text, size_t len, const char *file, const char *only) {
  P p = { .ctx = ctx,
          .s = text,
          .end = text + len,
          .p = text,
          .file = file ? file : "<string>",
          .line = 1,
          .col = 1,
          .only = only && *only ? only : NULL };
  kl_arena_init(&p.arena);
  p.module = kl_module_create(ctx, kl_loc_make(ctx, p.file, 1, 1));
  if (!p.only) find_launches(&p);
  bool ok = parse_items(&p, false);
  if (ok && !kl_module_graph(p.module, NULL) && !p.only && p.nlaunched) {
    int line = 1, col = 1; /* where the first launch is */
    for (const char *q = p.s; q < p.launched_at[0]; q++) line += *q == '\n', col = *q == '\n' ? 1 : col + 1;
    ok = fail_at(&p, kl_loc_make(ctx, p.file, line, col), "%s @%s: the input defines no function @%s", p.launch_op[0],
                 p.launched[0], p.launched[0]);
  }
  if (ok && !kl_module_graph(p.module, NULL))
    ok = p.only ? fail_at(&p, here(&p), "no function @%s in the input", p.only)
                : fail_at(&p, here(&p), "no func.func in the input");
  free(p.syms);
  kl_arena_destroy(&p.arena);
  if (!ok) {
    if (!p.failed) kl_emit_error(ctx, here(&p), "migraphx: parse failed");
    return NULL;
  }
  return p.module;
}
