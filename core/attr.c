/* attr.c — construction and interning of attributes by their canonical text. */
#include "core/attr.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *kl__ctx_lookup_attr(kl_ctx *ctx, const char *text, size_t n);
const char *kl__ctx_store_attr(kl_ctx *ctx, const char *text, size_t n, void *a);

bool kl_is_bare_ident(const char *s) {
  if (!s || !(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) return false;
  for (const char *p = s + 1; *p; p++)
    if (!(*p == '_' || *p == '.' || *p == '$' || *p == '-' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (*p >= '0' && *p <= '9')))
      return false;
  return true;
}
void kl_print_string_literal(kl_sb *sb, const char *s, size_t n) {
  kl_sb_putc(sb, '"');
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    switch (c) {
      case '"': kl_sb_puts(sb, "\\\""); break;
      case '\\': kl_sb_puts(sb, "\\\\"); break;
      case '\n': kl_sb_puts(sb, "\\n"); break;
      case '\t': kl_sb_puts(sb, "\\t"); break;
      default:
        if (c < 0x20 || c == 0x7f)
          kl_sb_printf(sb, "\\x%02x", c);
        else
          kl_sb_putc(sb, (char)c);
    }
  }
  kl_sb_putc(sb, '"');
}
void kl_print_ident_or_string(kl_sb *sb, const char *s) {
  if (kl_is_bare_ident(s))
    kl_sb_puts(sb, s);
  else
    kl_print_string_literal(sb, s, strlen(s));
}
void kl_print_double(kl_sb *sb, double v) {
  if (isnan(v)) {
    kl_sb_puts(sb, "nan");
    return;
  }
  if (isinf(v)) {
    kl_sb_puts(sb, v < 0 ? "-inf" : "inf");
    return;
  }
  char buf[64];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  kl_sb_puts(sb, buf);
  if (!strpbrk(buf, ".e")) kl_sb_puts(sb, ".0");
}

static const kl_attr *intern(kl_ctx *ctx, kl_attr *proto, kl_sb *text) {
  const char *t = kl_sb_str(text);
  size_t n = text->len;
  kl_attr *a = kl__ctx_lookup_attr(ctx, t, n);
  if (!a) {
    a = kl_arena_dup(kl_ctx_arena(ctx), proto, sizeof *a);
    a->text = kl__ctx_store_attr(ctx, t, n, a);
  }
  kl_sb_free(text);
  return a;
}

const kl_attr *kl_attr_int_typed(kl_ctx *ctx, int64_t v, const kl_type *t) {
  kl_sb sb = { 0 };
  kl_sb_printf(&sb, "%lld", (long long)v);
  if (t->kind != KL_TY_I64) kl_sb_printf(&sb, " : %s", t->text);
  kl_attr p = { .kind = KL_AT_INT, .type = t, .i = v };
  return intern(ctx, &p, &sb);
}
const kl_attr *kl_attr_int(kl_ctx *ctx, int64_t v) { return kl_attr_int_typed(ctx, v, kl_type_i64(ctx)); }
const kl_attr *kl_attr_float_typed(kl_ctx *ctx, double v, const kl_type *t) {
  kl_sb sb = { 0 };
  kl_print_double(&sb, v);
  if (t->kind != KL_TY_F64) kl_sb_printf(&sb, " : %s", t->text);
  kl_attr p = { .kind = KL_AT_FLOAT, .type = t, .f = v };
  return intern(ctx, &p, &sb);
}
const kl_attr *kl_attr_float(kl_ctx *ctx, double v) { return kl_attr_float_typed(ctx, v, kl_type_f64(ctx)); }
const kl_attr *kl_attr_strn(kl_ctx *ctx, const char *s, size_t n) {
  kl_sb sb = { 0 };
  kl_print_string_literal(&sb, s, n);
  kl_attr p = { .kind = KL_AT_STR, .s = NULL, .len = n };
  const kl_attr *a = kl__ctx_lookup_attr(ctx, kl_sb_str(&sb), sb.len);
  if (a) {
    kl_sb_free(&sb);
    return a;
  }
  p.s = kl_arena_strndup(kl_ctx_arena(ctx), s, n);
  return intern(ctx, &p, &sb);
}
const kl_attr *kl_attr_str(kl_ctx *ctx, const char *s) { return kl_attr_strn(ctx, s, strlen(s)); }
const kl_attr *kl_attr_bool(kl_ctx *ctx, bool v) {
  kl_sb sb = { 0 };
  kl_sb_puts(&sb, v ? "true" : "false");
  kl_attr p = { .kind = KL_AT_BOOL, .i = v };
  return intern(ctx, &p, &sb);
}
const kl_attr *kl_attr_unit(kl_ctx *ctx) {
  kl_sb sb = { 0 };
  kl_sb_puts(&sb, "unit");
  kl_attr p = { .kind = KL_AT_UNIT };
  return intern(ctx, &p, &sb);
}
const kl_attr *kl_attr_array(kl_ctx *ctx, int n, const kl_attr *const *elems) {
  kl_sb sb = { 0 };
  kl_sb_putc(&sb, '[');
  for (int i = 0; i < n; i++) {
    if (i) kl_sb_puts(&sb, ", ");
    kl_sb_puts(&sb, elems[i]->text);
  }
  kl_sb_putc(&sb, ']');
  const kl_attr *a = kl__ctx_lookup_attr(ctx, kl_sb_str(&sb), sb.len);
  if (a) {
    kl_sb_free(&sb);
    return a;
  }
  kl_attr p = { .kind = KL_AT_ARRAY, .n = n, .elems = kl_arena_dup(kl_ctx_arena(ctx), elems, n * sizeof *elems) };
  return intern(ctx, &p, &sb);
}
const kl_attr *kl_attr_i64_array(kl_ctx *ctx, int n, const int64_t *v) {
  const kl_attr **e = kl_xmalloc((n ? n : 1) * sizeof *e);
  for (int i = 0; i < n; i++) e[i] = kl_attr_int(ctx, v[i]);
  const kl_attr *a = kl_attr_array(ctx, n, e);
  free(e);
  return a;
}
static int cmp_named(const void *a, const void *b) {
  return strcmp(((const kl_named_attr *)a)->name, ((const kl_named_attr *)b)->name);
}
const kl_attr *kl_attr_dict(kl_ctx *ctx, int n, const kl_named_attr *entries) {
  kl_named_attr *e = kl_xmalloc((n ? n : 1) * sizeof *e);
  int m = 0;
  for (int i = 0; i < n; i++) { /* last duplicate wins */
    int j;
    for (j = 0; j < m; j++)
      if (strcmp(e[j].name, entries[i].name) == 0) break;
    e[j].name = kl_intern(ctx, entries[i].name);
    e[j].value = entries[i].value;
    if (j == m) m++;
  }
  qsort(e, m, sizeof *e, cmp_named);
  kl_sb sb = { 0 };
  kl_sb_putc(&sb, '{');
  for (int i = 0; i < m; i++) {
    if (i) kl_sb_puts(&sb, ", ");
    kl_print_ident_or_string(&sb, e[i].name);
    if (e[i].value->kind != KL_AT_UNIT) {
      kl_sb_puts(&sb, " = ");
      kl_sb_puts(&sb, e[i].value->text);
    }
  }
  kl_sb_putc(&sb, '}');
  const kl_attr *a = kl__ctx_lookup_attr(ctx, kl_sb_str(&sb), sb.len);
  if (a) { /* no copy of the entries for one that exists */
    free(e);
    kl_sb_free(&sb);
    return a;
  }
  kl_attr p = { .kind = KL_AT_DICT, .n = m, .entries = kl_arena_dup(kl_ctx_arena(ctx), e, m * sizeof *e) };
  free(e);
  return intern(ctx, &p, &sb);
}
const kl_attr *kl_attr_type(kl_ctx *ctx, const kl_type *t) {
  kl_sb sb = { 0 };
  kl_sb_printf(&sb, "!%s", t->text);
  kl_attr p = { .kind = KL_AT_TYPE, .type = t };
  return intern(ctx, &p, &sb);
}
const kl_attr *kl_attr_symref(kl_ctx *ctx, const char *name) {
  kl_sb sb = { 0 };
  kl_sb_putc(&sb, '@');
  kl_print_ident_or_string(&sb, name);
  kl_attr p = { .kind = KL_AT_SYMREF, .s = kl_intern(ctx, name), .len = strlen(name) };
  return intern(ctx, &p, &sb);
}
const kl_attr *kl_attr_ext_make(kl_ctx *ctx, const kl_attr_ext *ext, const void *payload) {
  kl_sb sb = { 0 };
  kl_sb_printf(&sb, "#%s<", ext->name);
  ext->print(&sb, payload);
  kl_sb_putc(&sb, '>');
  kl_attr p = { .kind = KL_AT_EXT, .ext = ext, .payload = payload };
  return intern(ctx, &p, &sb);
}
const kl_attr *kl_attr_ext_make_copy(kl_ctx *ctx, const kl_attr_ext *ext, const void *payload,
                                     const void *(*copy)(kl_ctx *ctx, const void *payload)) {
  kl_sb sb = { 0 };
  kl_sb_printf(&sb, "#%s<", ext->name);
  ext->print(&sb, payload);
  kl_sb_putc(&sb, '>');
  const kl_attr *a = kl__ctx_lookup_attr(ctx, kl_sb_str(&sb), sb.len);
  if (a) {
    kl_sb_free(&sb);
    return a;
  }
  kl_attr p = { .kind = KL_AT_EXT, .ext = ext, .payload = copy(ctx, payload) };
  return intern(ctx, &p, &sb);
}
const char *kl_attr_str_of(const kl_attr *a) { return a ? a->text : "<null-attr>"; }
bool kl_attr_get_i64_array(const kl_attr *a, int max, int64_t *out, int *n) {
  if (!a || a->kind != KL_AT_ARRAY || a->n > max) return false;
  for (int i = 0; i < a->n; i++) {
    if (a->elems[i]->kind != KL_AT_INT) return false;
    out[i] = a->elems[i]->i;
  }
  *n = a->n;
  return true;
}
const kl_attr *kl_attr_dict_get(const kl_attr *dict, const char *name) {
  if (!dict || dict->kind != KL_AT_DICT) return NULL;
  for (int i = 0; i < dict->n; i++)
    if (strcmp(dict->entries[i].name, name) == 0) return dict->entries[i].value;
  return NULL;
}
