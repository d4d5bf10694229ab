/* lexer.c — the .kir tokenizer (see lexer.h). */
#include "core/lexer.h"
#include "core/diag.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kl_lex_init(kl_lexer *lx, const char *buf, size_t len) {
  memset(lx, 0, sizeof *lx);
  lx->buf = buf ? buf : "";
  lx->len = buf ? len : 0;
  lx->line = lx->col = 1;
  if (lx->len >= 3 && !memcmp(lx->buf, "\xef\xbb\xbf", 3)) lx->pos = 3; /* a UTF-8 byte-order mark */
}

int kl_lex_peekc(const kl_lexer *lx) { return lx->pos < lx->len ? (unsigned char)lx->buf[lx->pos] : -1; }
static int peek_at(const kl_lexer *lx, size_t k) {
  return lx->pos + k < lx->len ? (unsigned char)lx->buf[lx->pos + k] : -1;
}
void kl_lex_advance(kl_lexer *lx, size_t n) {
  for (size_t i = 0; i < n && lx->pos < lx->len; i++) {
    if (lx->buf[lx->pos++] == '\n') {
      lx->line++;
      lx->col = 1;
    } else
      lx->col++;
  }
}

bool kl_lex_is_ident_start(int c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool kl_lex_is_ident_char(int c) {
  return kl_lex_is_ident_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '$' || c == '-';
}
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

size_t kl_utf8_len(const unsigned char *s, size_t n) {
  if (!n) return 0;
  unsigned c = s[0];
  if (c < 0x80) return 1;
  size_t len;
  unsigned cp, min;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
    cp = c & 0x1f;
    min = 0x80;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    cp = c & 0x0f;
    min = 0x800;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    cp = c & 0x07;
    min = 0x10000;
  } else
    return 0;
  if (n < len) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}

static kl_tok error_at(kl_lexer *lx, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static kl_tok error_at(kl_lexer *lx, int line, int col, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kl_verrf(lx->err, sizeof lx->err, fmt, ap);
  va_end(ap);
  lx->err_line = line;
  lx->err_col = col;
  kl_tok t = { .kind = KL_TK_ERROR, .p = lx->buf + lx->pos, .line = line, .col = col, .result_no = -1 };
  return t;
}

/* An error token for an error already described in lx->err. */
static kl_tok err_tok(kl_lexer *lx) {
  kl_tok t = { .kind = KL_TK_ERROR, .p = lx->buf + lx->pos, .line = lx->err_line, .col = lx->err_col, .result_no = -1 };
  return t;
}

/* Checks the byte at the position outside strings; false with lx->err if it is a
 * control byte or starts an invalid UTF-8 sequence. *n gets the sequence length. */
static bool check_byte(kl_lexer *lx, size_t *n) {
  int c = kl_lex_peekc(lx);
  *n = 1;
  if (c >= 0x80) {
    *n = kl_utf8_len((const unsigned char *)lx->buf + lx->pos, lx->len - lx->pos);
    if (!*n) {
      error_at(lx, lx->line, lx->col, "invalid UTF-8 byte 0x%02x", c);
      return false;
    }
  } else if ((c < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f) {
    error_at(lx, lx->line, lx->col, "invalid control character 0x%02x", c);
    return false;
  }
  return true;
}

bool kl_lex_skip_space(kl_lexer *lx) {
  for (;;) {
    int c = kl_lex_peekc(lx);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      kl_lex_advance(lx, 1);
      continue;
    }
    if (c == '/' && peek_at(lx, 1) == '/') {
      while (lx->pos < lx->len && lx->buf[lx->pos] != '\n') {
        size_t n;
        if (!check_byte(lx, &n)) return false;
        kl_lex_advance(lx, n);
      }
      continue;
    }
    return true;
  }
}

/* Scans a string literal starting at the opening quote; validates escapes. */
static bool scan_string(kl_lexer *lx) {
  int line = lx->line, col = lx->col;
  kl_lex_advance(lx, 1);
  for (;;) {
    int c = kl_lex_peekc(lx);
    if (c < 0 || c == '\n') {
      error_at(lx, line, col, "unterminated string");
      return false;
    }
    if (c == '"') {
      kl_lex_advance(lx, 1);
      return true;
    }
    if (c == '\\') {
      int e = peek_at(lx, 1);
      if (e == '"' || e == '\\' || e == 'n' || e == 't' || e == 'r') {
        kl_lex_advance(lx, 2);
        continue;
      }
      if (e == 'x' && hexval(peek_at(lx, 2)) >= 0 && hexval(peek_at(lx, 3)) >= 0) {
        kl_lex_advance(lx, 4);
        continue;
      }
      if (e < 0) {
        error_at(lx, line, col, "unterminated string");
        return false;
      }
      if (e >= 0x20 && e < 0x7f)
        error_at(lx, lx->line, lx->col, "invalid escape sequence '\\%c' in string", e);
      else
        error_at(lx, lx->line, lx->col, "invalid escape sequence in string");
      return false;
    }
    if (c < 0x20 || c == 0x7f) {
      error_at(lx, lx->line, lx->col, "invalid control character 0x%02x in string (use an escape)", c);
      return false;
    }
    kl_lex_advance(lx, 1); /* bytes >= 0x80 are kept as they are */
  }
}

void kl_lex_string(const kl_tok *t, kl_sb *out) {
  const char *s = t->p, *e = t->p + t->n;
  while (s < e && *s != '"') s++;
  s++;
  e--; /* inside the quotes */
  while (s < e) {
    if (*s != '\\') {
      kl_sb_putc(out, *s++);
      continue;
    }
    char c = s[1];
    switch (c) {
      case 'n':
        kl_sb_putc(out, '\n');
        s += 2;
        break;
      case 't':
        kl_sb_putc(out, '\t');
        s += 2;
        break;
      case 'r':
        kl_sb_putc(out, '\r');
        s += 2;
        break;
      case 'x':
        kl_sb_putc(out, (char)(hexval((unsigned char)s[2]) * 16 + hexval((unsigned char)s[3])));
        s += 4;
        break;
      default:
        kl_sb_putc(out, c);
        s += 2;
        break; /* \" and \\ */
    }
  }
}

static kl_tok scan_number(kl_lexer *lx, kl_tok t) {
  size_t start = lx->pos;
  bool neg = false;
  if (kl_lex_peekc(lx) == '-') {
    neg = true;
    kl_lex_advance(lx, 1);
  }
  uint64_t mag = 0;
  bool overflow = false;
  uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  while (is_digit(kl_lex_peekc(lx))) {
    unsigned d = (unsigned)(kl_lex_peekc(lx) - '0');
    if (mag > (limit - d) / 10)
      overflow = true;
    else
      mag = mag * 10 + d;
    kl_lex_advance(lx, 1);
  }
  bool isfloat = false;
  if (kl_lex_peekc(lx) == '.' && is_digit(peek_at(lx, 1))) {
    isfloat = true;
    kl_lex_advance(lx, 1);
    while (is_digit(kl_lex_peekc(lx))) kl_lex_advance(lx, 1);
  }
  if ((kl_lex_peekc(lx) == 'e' || kl_lex_peekc(lx) == 'E') &&
      (is_digit(peek_at(lx, 1)) || ((peek_at(lx, 1) == '+' || peek_at(lx, 1) == '-') && is_digit(peek_at(lx, 2))))) {
    isfloat = true;
    kl_lex_advance(lx, 2);
    while (is_digit(kl_lex_peekc(lx))) kl_lex_advance(lx, 1);
  }
  if (kl_lex_is_ident_char(kl_lex_peekc(lx)) && kl_lex_peekc(lx) != '-')
    return error_at(lx, t.line, t.col, "invalid character '%c' after number", kl_lex_peekc(lx));
  t.n = lx->pos - start;
  if (isfloat) {
    char buf[128], *tmp = t.n < sizeof buf ? buf : kl_xmalloc(t.n + 1);
    memcpy(tmp, t.p, t.n);
    tmp[t.n] = 0;
    errno = 0;
    double v = strtod(tmp, NULL);
    bool range = errno == ERANGE && isinf(v);
    if (tmp != buf) free(tmp);
    if (range) return error_at(lx, t.line, t.col, "floating-point literal out of range");
    t.kind = KL_TK_FLOAT;
    t.f = v;
    return t;
  }
  if (overflow) return error_at(lx, t.line, t.col, "integer too large (outside the 64-bit signed range)");
  t.kind = KL_TK_INT;
  t.i = neg ? (int64_t)(0 - mag) : (int64_t)mag; /* 0 - 2^63 wraps to INT64_MIN */
  return t;
}

static size_t scan_ident_chars(kl_lexer *lx) {
  size_t n = 0;
  while (kl_lex_is_ident_char(kl_lex_peekc(lx))) {
    kl_lex_advance(lx, 1);
    n++;
  }
  return n;
}

kl_tok kl_lex_next(kl_lexer *lx) {
  if (!kl_lex_skip_space(lx)) return err_tok(lx);
  kl_tok t = { .kind = KL_TK_EOF, .p = lx->buf + lx->pos, .line = lx->line, .col = lx->col, .result_no = -1 };
  int c = kl_lex_peekc(lx);
  if (c < 0) return t;
  size_t n;
  if (!check_byte(lx, &n)) return err_tok(lx);
  if (c >= 0x80) return error_at(lx, t.line, t.col, "unexpected character '%.*s'", (int)n, t.p);
  switch (c) {
    case '(':
    case ')':
    case '{':
    case '}':
    case '[':
    case ']':
    case '<':
    case '>':
    case ',':
    case ':':
    case '=':
    case '!':
      kl_lex_advance(lx, 1);
      t.kind = KL_TK_PUNCT;
      t.n = 1;
      return t;
    case '"':
      if (!scan_string(lx)) return err_tok(lx);
      t.kind = KL_TK_STRING;
      t.n = (size_t)(lx->buf + lx->pos - t.p);
      return t;
    case '%':
    case '^':
    case '#': {
      kl_lex_advance(lx, 1);
      if (!scan_ident_chars(lx)) {
        const char *what = c == '%' ? "value name" : c == '^' ? "block name" : "attribute kind name";
        return error_at(lx, t.line, t.col, "expected a %s after '%c'", what, c);
      }
      t.kind = c == '%' ? KL_TK_VALUE : c == '^' ? KL_TK_BLOCK : KL_TK_HASH;
      t.n = (size_t)(lx->buf + lx->pos - t.p);
      if (c == '%' && kl_lex_peekc(lx) == '#' && is_digit(peek_at(lx, 1))) {
        int line = lx->line, col = lx->col;
        kl_lex_advance(lx, 1);
        int64_t v = 0;
        while (is_digit(kl_lex_peekc(lx))) {
          if (v > 100000000) return error_at(lx, line, col, "result number too large");
          v = v * 10 + (kl_lex_peekc(lx) - '0');
          kl_lex_advance(lx, 1);
        }
        t.result_no = v;
      }
      if (c == '%' && kl_lex_peekc(lx) == '#')
        return error_at(lx, lx->line, lx->col, "expected a result number after '#'");
      return t;
    }
    case '@':
      kl_lex_advance(lx, 1);
      t.kind = KL_TK_SYMBOL;
      if (kl_lex_peekc(lx) == '"') {
        if (!scan_string(lx)) return err_tok(lx);
        t.quoted = true;
      } else if (!kl_lex_is_ident_start(kl_lex_peekc(lx)) || !scan_ident_chars(lx)) {
        return error_at(lx, t.line, t.col, "expected a symbol name after '@'");
      }
      t.n = (size_t)(lx->buf + lx->pos - t.p);
      return t;
    case '-':
      if (peek_at(lx, 1) == '>') {
        kl_lex_advance(lx, 2);
        t.kind = KL_TK_PUNCT;
        t.n = 2;
        return t;
      }
      if (peek_at(lx, 1) == 'i' && peek_at(lx, 2) == 'n' && peek_at(lx, 3) == 'f' &&
          !kl_lex_is_ident_char(peek_at(lx, 4))) {
        kl_lex_advance(lx, 4);
        t.kind = KL_TK_FLOAT;
        t.n = 4;
        t.f = -INFINITY;
        return t;
      }
      if (is_digit(peek_at(lx, 1))) return scan_number(lx, t);
      return error_at(lx, t.line, t.col, "unexpected character '-'");
    default:
      if (is_digit(c)) return scan_number(lx, t);
      if (kl_lex_is_ident_start(c)) {
        t.kind = KL_TK_IDENT;
        t.n = scan_ident_chars(lx);
        return t;
      }
      if (c >= 0x20 && c < 0x7f) return error_at(lx, t.line, t.col, "unexpected character '%c'", c);
      return error_at(lx, t.line, t.col, "invalid control character 0x%02x", c);
  }
}

bool kl_lex_angle_body(kl_lexer *lx, size_t *body_len) {
  size_t start = lx->pos;
  int depth = 1, open_line = lx->line, open_col = lx->col - 1; /* the '<' before the body */
  for (;;) {
    int c = kl_lex_peekc(lx);
    if (c < 0) {
      error_at(lx, open_line, open_col, "unterminated '<...>' (missing '>')");
      return false;
    }
    if (c == '"') {
      if (!scan_string(lx)) return false;
      continue;
    }
    if (c == '-' && peek_at(lx, 1) == '>') {
      kl_lex_advance(lx, 2);
      continue;
    }
    if (c == '<') depth++;
    if (c == '>' && --depth == 0) {
      *body_len = lx->pos - start;
      kl_lex_advance(lx, 1);
      return true;
    }
    size_t n;
    if (!check_byte(lx, &n)) return false;
    kl_lex_advance(lx, n);
  }
}
