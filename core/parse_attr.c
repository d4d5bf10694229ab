/* parse_attr.c — .kir types and attributes (the syntax of type.h and attr.h). */
#include "core/parse_internal.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SHOWN(t) (int)((t)->n > 40 ? 40 : (t)->n), (t)->p

bool kl_int_literal_fits(const kl_type *t, int64_t v) {
  switch (t->kind) {
    case KL_TY_I1: return v == 0 || v == 1;
    case KL_TY_I8:
    case KL_TY_U8: return v >= -128 && v <= 255;
    case KL_TY_I32: return v >= INT32_MIN && v <= (int64_t)UINT32_MAX;
    default: return true;
  }
}

static bool tok_is_word(const kl_tok *t, const char *w) {
  return t->kind == KL_TK_IDENT && t->n == strlen(w) && memcmp(t->p, w, t->n) == 0;
}

static kl_status lexer_error(kl_parser *p) {
  return kl__error_at(p, (kl_loc){ p->file, p->lx.err_line, p->lx.err_col }, "%s", p->lx.err);
}

/* ---- types ---- */

/* Scans "2x3x" dims character by character from just after '<'. */
static kl_status scan_dims(kl_parser *p, int64_t *shape, int *rank) {
  kl_lexer *lx = &p->lx;
  *rank = 0;
  if (!kl_lex_skip_space(lx)) return lexer_error(p);
  while (kl_lex_peekc(lx) >= '0' && kl_lex_peekc(lx) <= '9') {
    kl_loc at = { p->file, lx->line, lx->col };
    int64_t v = 0;
    bool big = false;
    while (kl_lex_peekc(lx) >= '0' && kl_lex_peekc(lx) <= '9') {
      if (v <= KL_PARSE_MAX_DIM) v = v * 10 + (kl_lex_peekc(lx) - '0');
      if (v > KL_PARSE_MAX_DIM) big = true;
      kl_lex_advance(lx, 1);
    }
    if (big) return kl__error_at(p, at, "dimension out of range (the limit is 2^40)");
    if (*rank == KL_MAX_RANK) return kl__error_at(p, at, "too many dimensions (the limit is %d)", KL_MAX_RANK);
    shape[(*rank)++] = v;
    if (kl_lex_peekc(lx) != 'x')
      return kl__error_at(p, (kl_loc){ p->file, lx->line, lx->col }, "expected 'x' after a dimension");
    kl_lex_advance(lx, 1);
  }
  return KL_OK;
}

static kl_status parse_int_list(kl_parser *p, int64_t *out, int max, int *n) {
  *n = 0;
  if (!kl__is(p, KL_TK_PUNCT, "[")) return kl__error_at(p, kl__tok_loc(p, &p->tok), "expected '['");
  kl__next(p);
  if (kl__is(p, KL_TK_PUNCT, "]")) {
    kl__next(p);
    return KL_OK;
  }
  for (;;) {
    if (p->tok.kind != KL_TK_INT) return kl__error_at(p, kl__tok_loc(p, &p->tok), "expected an integer");
    if (*n == max) return kl__error_at(p, kl__tok_loc(p, &p->tok), "too many entries (the limit is %d)", max);
    out[(*n)++] = p->tok.i;
    kl__next(p);
    if (kl__is(p, KL_TK_PUNCT, ",")) {
      kl__next(p);
      continue;
    }
    if (kl__is(p, KL_TK_PUNCT, "]")) {
      kl__next(p);
      return KL_OK;
    }
    return kl__error_at(p, kl__tok_loc(p, &p->tok), "expected ',' or ']'");
  }
}

static const kl_type *parse_shaped(kl_parser *p, kl_type_kind kind) {
  kl_tok kw = p->tok;
  kl__next(p);
  if (!kl__is(p, KL_TK_PUNCT, "<")) {
    kl__error_at(p, kl__tok_loc(p, &p->tok), "expected '<' after '%.*s'", SHOWN(&kw));
    return NULL;
  }
  int64_t shape[KL_MAX_RANK], strides[KL_MAX_RANK];
  int rank;
  if (scan_dims(p, shape, &rank) != KL_OK) return NULL;
  kl__next(p);
  kl_tok et = p->tok;
  int ek = et.kind == KL_TK_IDENT ? kl_scalar_kind_from_name(et.p, et.n) : -1;
  if (ek < 0) {
    kl__error_at(p, kl__tok_loc(p, &et), "expected an element type (i1, i8, i32, i64, index, f16, bf16, f32, f64)");
    return NULL;
  }
  kl__next(p);
  bool have_strides = false, have_space = false;
  kl_space space = KL_SPACE_GLOBAL;
  while (kl__is(p, KL_TK_PUNCT, ",")) {
    kl__next(p);
    kl_tok opt = p->tok;
    if (kind != KL_TY_VECTOR && tok_is_word(&opt, "strides") && !have_strides) {
      kl__next(p);
      if (!kl__is(p, KL_TK_PUNCT, "=")) {
        kl__error_at(p, kl__tok_loc(p, &p->tok), "expected '=' after 'strides'");
        return NULL;
      }
      kl__next(p);
      kl_tok lt = p->tok;
      int n;
      if (parse_int_list(p, strides, KL_MAX_RANK, &n) != KL_OK) return NULL;
      if (n != rank) {
        kl__error_at(p, kl__tok_loc(p, &lt), "%d strides given for a rank-%d type", n, rank);
        return NULL;
      }
      have_strides = true;
    } else if (kind == KL_TY_BUFFER && !have_space &&
               (tok_is_word(&opt, "lds") || tok_is_word(&opt, "private") || tok_is_word(&opt, "global"))) {
      space = tok_is_word(&opt, "lds")   ? KL_SPACE_LDS
          : tok_is_word(&opt, "private") ? KL_SPACE_PRIVATE
                                         : KL_SPACE_GLOBAL;
      have_space = true;
      kl__next(p);
    } else {
      kl__error_at(p, kl__tok_loc(p, &opt),
                   kind == KL_TY_BUFFER       ? "expected 'strides=[...]' or a memory space (lds, private, global)"
                       : kind == KL_TY_TENSOR ? "expected 'strides=[...]'"
                                              : "expected '>'");
      return NULL;
    }
  }
  if (!kl__is(p, KL_TK_PUNCT, ">")) {
    kl__error_at(p, kl__tok_loc(p, &p->tok), "expected '>' to close the type");
    return NULL;
  }
  kl__next(p);
  kl_loc at = kl__tok_loc(p, &kw);
  const kl_type *elem = kl_type_scalar(p->ctx, (kl_type_kind)ek);
  if (kind == KL_TY_VECTOR) {
    if (rank != 1 || shape[0] < 1 || shape[0] > KL_PARSE_MAX_VECTOR) {
      kl__error_at(p, at, "a vector type needs one dimension of 1 to %d elements", KL_PARSE_MAX_VECTOR);
      return NULL;
    }
    return kl_type_vector(p->ctx, elem, (int)shape[0]);
  }
  char why[512];
  if (!kl_shape_check(rank, shape, have_strides ? strides : NULL, why, sizeof why)) {
    kl__error_at(p, at, "%s", why);
    return NULL;
  }
  const kl_type *t = kind == KL_TY_TENSOR
      ? kl_type_tensor(p->ctx, elem, rank, shape, have_strides ? strides : NULL)
      : kl_type_buffer(p->ctx, elem, rank, shape, have_strides ? strides : NULL, space);
  if (!t) kl__error_at(p, at, "invalid type");
  return t;
}

const kl_type *kl__parse_type(kl_parser *p) {
  kl_tok t = p->tok;
  if (t.kind != KL_TK_IDENT) {
    kl__error_at(p, kl__tok_loc(p, &t), "expected a type");
    return NULL;
  }
  int k = kl_scalar_kind_from_name(t.p, t.n);
  if (k >= 0) {
    kl__next(p);
    return kl_type_scalar(p->ctx, (kl_type_kind)k);
  }
  if (tok_is_word(&t, "token")) {
    kl__next(p);
    return kl_type_token(p->ctx);
  }
  if (tok_is_word(&t, "tensor")) return parse_shaped(p, KL_TY_TENSOR);
  if (tok_is_word(&t, "buffer")) return parse_shaped(p, KL_TY_BUFFER);
  if (tok_is_word(&t, "vector")) return parse_shaped(p, KL_TY_VECTOR);
  kl__error_at(p, kl__tok_loc(p, &t), "unknown type '%.*s'", SHOWN(&t));
  return NULL;
}

/* ---- attributes ---- */

/* A number literal (int or float value) with an optional ": type" suffix. */
static const kl_attr *number_attr(kl_parser *p, const kl_tok *lit, bool isfloat, bool typed) {
  kl__next(p);
  if (!typed || !kl__is(p, KL_TK_PUNCT, ":"))
    return isfloat ? kl_attr_float(p->ctx, lit->f) : kl_attr_int(p->ctx, lit->i);
  kl__next(p);
  kl_tok tt = p->tok;
  const kl_type *t = kl__parse_type(p);
  if (!t) return NULL;
  if (kl_type_is_float(t)) return kl_attr_float_typed(p->ctx, isfloat ? lit->f : (double)lit->i, t);
  if (kl_type_is_int(t) && !isfloat) {
    if (!kl_int_literal_fits(t, lit->i)) {
      kl__error_at(p, kl__tok_loc(p, lit), "integer %lld out of range for type %s", (long long)lit->i, kl_type_str(t));
      return NULL;
    }
    return kl_attr_int_typed(p->ctx, lit->i, t);
  }
  kl__error_at(p, kl__tok_loc(p, &tt), "%s literal cannot have type %s", isfloat ? "a floating-point" : "an integer",
               kl_type_str(t));
  return NULL;
}

static const kl_attr *parse_array(kl_parser *p) {
  kl__next(p);
  const kl_attr **elems = NULL;
  int n = 0, cap = 0;
  const kl_attr *result = NULL;
  if (!kl__is(p, KL_TK_PUNCT, "]")) {
    for (;;) {
      const kl_attr *a = kl__parse_attr(p, true);
      if (!a) goto done;
      if (n == cap) {
        cap = cap ? cap * 2 : 8;
        elems = kl_xrealloc(elems, cap * sizeof *elems);
      }
      elems[n++] = a;
      if (kl__is(p, KL_TK_PUNCT, ",")) {
        kl__next(p);
        continue;
      }
      if (kl__is(p, KL_TK_PUNCT, "]")) break;
      kl__error_at(p, kl__tok_loc(p, &p->tok), "expected ',' or ']' in an array attribute");
      goto done;
    }
  }
  kl__next(p);
  result = kl_attr_array(p->ctx, n, elems);
done:
  free(elems);
  return result;
}

static const kl_attr *parse_ext(kl_parser *p) {
  kl_tok h = p->tok;
  kl__next(p);
  if (!kl__is(p, KL_TK_PUNCT, "<")) {
    kl__error_at(p, kl__tok_loc(p, &p->tok), "expected '<' after '%.*s'", SHOWN(&h));
    return NULL;
  }
  const kl_attr_ext *ext = kl_lookup_attr_ext(p->ctx, h.p + 1, h.n - 1);
  if (!ext) {
    kl__error_at(p, kl__tok_loc(p, &h), "unknown attribute kind '%.*s'", SHOWN(&h));
    return NULL;
  }
  const char *body = p->lx.buf + p->lx.pos;
  kl_loc body_loc = { p->file, p->lx.line, p->lx.col };
  size_t blen;
  if (!kl_lex_angle_body(&p->lx, &blen)) {
    lexer_error(p);
    return NULL;
  }
  int errors = kl_diag_error_count(p->ctx);
  const void *payload = ext->parse(p->ctx, body, blen, body_loc);
  if (!payload) {
    if (kl_diag_error_count(p->ctx) == errors) kl__error_at(p, body_loc, "invalid '%.*s' attribute", SHOWN(&h));
    p->failed = true;
    return NULL;
  }
  kl__next(p);
  return kl_attr_ext_make(p->ctx, ext, payload);
}

const kl_attr *kl__parse_attr(kl_parser *p, bool typed) {
  kl_tok t = p->tok;
  kl_loc at = kl__tok_loc(p, &t);
  switch (t.kind) {
    case KL_TK_INT: return number_attr(p, &t, false, typed);
    case KL_TK_FLOAT: return number_attr(p, &t, true, typed);
    case KL_TK_IDENT:
      if (tok_is_word(&t, "true") || tok_is_word(&t, "false")) {
        kl__next(p);
        return kl_attr_bool(p->ctx, t.p[0] == 't');
      }
      if (tok_is_word(&t, "unit")) {
        kl__next(p);
        return kl_attr_unit(p->ctx);
      }
      if (tok_is_word(&t, "inf")) {
        t.f = INFINITY;
        return number_attr(p, &t, true, typed);
      }
      if (tok_is_word(&t, "nan")) {
        t.f = NAN;
        return number_attr(p, &t, true, typed);
      }
      break;
    case KL_TK_STRING:
      p->sb.len = 0;
      kl_lex_string(&t, &p->sb);
      kl__next(p);
      return kl_attr_strn(p->ctx, kl_sb_str(&p->sb), p->sb.len);
    case KL_TK_SYMBOL: {
      const char *name = t.quoted ? kl__string_ident(p, &t, "a symbol name") : kl_intern_n(p->ctx, t.p + 1, t.n - 1);
      if (!name) return NULL;
      kl__next(p);
      return kl_attr_symref(p->ctx, name);
    }
    case KL_TK_HASH: return parse_ext(p);
    case KL_TK_PUNCT:
      if (kl__is(p, KL_TK_PUNCT, "!")) {
        kl__next(p);
        const kl_type *ty = kl__parse_type(p);
        return ty ? kl_attr_type(p->ctx, ty) : NULL;
      }
      if (kl__is(p, KL_TK_PUNCT, "[") || kl__is(p, KL_TK_PUNCT, "{")) {
        if (p->attr_depth >= KL_PARSE_MAX_DEPTH) {
          kl__error_at(p, at, "attributes nested too deeply (the limit is %d)", KL_PARSE_MAX_DEPTH);
          return NULL;
        }
        p->attr_depth++;
        const kl_attr *a = NULL;
        if (t.p[0] == '[')
          a = parse_array(p);
        else {
          kl_op_state st = { 0 };
          if (kl__parse_dict_body(p, &st) == KL_OK) a = kl_attr_dict(p->ctx, st.nattrs, st.attrs);
        }
        p->attr_depth--;
        return a;
      }
      break;
    default: break;
  }
  kl__error_at(p, at, "expected an attribute value");
  return NULL;
}

kl_status kl__parse_dict_body(kl_parser *p, kl_op_state *st) {
  kl__next(p); /* '{' */
  if (kl__is(p, KL_TK_PUNCT, "}")) {
    kl__next(p);
    return KL_OK;
  }
  for (;;) {
    kl_tok key = p->tok;
    const char *name;
    if (key.kind == KL_TK_IDENT)
      name = kl_intern_n(p->ctx, key.p, key.n);
    else if (key.kind == KL_TK_STRING)
      name = kl__string_ident(p, &key, "an attribute name");
    else
      return kl__error_at(p, kl__tok_loc(p, &key), "expected an attribute name");
    if (!name) return KL_ERR;
    kl__next(p);
    const kl_attr *value;
    if (kl__is(p, KL_TK_PUNCT, "=")) {
      kl__next(p);
      if (!(value = kl__parse_attr(p, true))) return KL_ERR;
    } else {
      value = kl_attr_unit(p->ctx);
    }
    for (int i = 0; i < st->nattrs; i++)
      if (st->attrs[i].name == name) return kl__error_at(p, kl__tok_loc(p, &key), "duplicate attribute '%s'", name);
    kl_op_state_add_attr(p, st, name, value);
    if (kl__is(p, KL_TK_PUNCT, ",")) {
      kl__next(p);
      continue;
    }
    if (kl__is(p, KL_TK_PUNCT, "}")) {
      kl__next(p);
      return KL_OK;
    }
    return kl__error_at(p, kl__tok_loc(p, &p->tok), "expected ',' or '}' in an attribute dictionary");
  }
}
