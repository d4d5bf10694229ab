/* lexer.h — the .kir tokenizer used by the parser (parse.c, parse_attr.c).
 * Contract: kl_lex_next turns the bytes at the lexer's position into one token; the
 * text need not be NUL-terminated (buf/len). Tokens point into the caller's buffer
 * (no allocation). On bad input (control or invalid UTF-8 bytes outside strings,
 * unterminated strings, bad escapes, integers outside int64, out-of-range floats) it
 * returns a KL_TK_ERROR token and fills lx->err / err_line / err_col; it never reads
 * outside [buf, buf+len). Lines and columns are 1-based, columns count bytes. */
#ifndef KL_LEXER_H
#define KL_LEXER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/arena.h"

typedef enum {
  KL_TK_EOF,
  KL_TK_ERROR,
  KL_TK_IDENT,  /* [A-Za-z_][A-Za-z0-9_.$-]*                                   */
  KL_TK_VALUE,  /* %name, optional #N result number (result_no, else -1)        */
  KL_TK_BLOCK,  /* ^name                                                        */
  KL_TK_SYMBOL, /* @name or @"quoted" (quoted = true)                           */
  KL_TK_HASH,   /* #name (extension attribute kind)                             */
  KL_TK_INT,    /* -?[0-9]+ (value in i)                                        */
  KL_TK_FLOAT,  /* -?[0-9]+(.[0-9]+)?([eE][+-]?[0-9]+)? with . or e, or -inf (f) */
  KL_TK_STRING, /* "..." with escapes \" \\ \n \t \r \xHH (decode with kl_lex_string) */
  KL_TK_PUNCT   /* ( ) { } [ ] < > , : = ! ->                                   */
} kl_tok_kind;

typedef struct kl_tok {
  kl_tok_kind kind;
  const char *p;
  size_t n; /* the token's text */
  int line, col;
  int64_t i;
  double f;          /* INT / FLOAT */
  int64_t result_no; /* VALUE: #N suffix, or -1 */
  bool quoted;       /* SYMBOL written as @"..." */
} kl_tok;

typedef struct kl_lexer {
  const char *buf;
  size_t len, pos;
  int line, col;
  char err[160];
  int err_line, err_col;
} kl_lexer;

void kl_lex_init(kl_lexer *lx, const char *buf, size_t len);
kl_tok kl_lex_next(kl_lexer *lx);
/* Skips whitespace and comments at the current position (for character-level
 * scanning, e.g. tensor shapes); false (with lx->err) on a bad byte. */
bool kl_lex_skip_space(kl_lexer *lx);
/* Peeks / consumes one raw byte at the lexer position (-1 at the end). */
int kl_lex_peekc(const kl_lexer *lx);
void kl_lex_advance(kl_lexer *lx, size_t n);
/* Decodes the body of a string literal token (STRING, or quoted SYMBOL) into out
 * (appended; may contain NUL bytes). */
void kl_lex_string(const kl_tok *t, kl_sb *out);
/* Identifier characters. */
bool kl_lex_is_ident_start(int c);
bool kl_lex_is_ident_char(int c);
/* Length of the valid UTF-8 sequence at s (n bytes available), 0 if invalid. */
size_t kl_utf8_len(const unsigned char *s, size_t n);
/* Scans from just after an opening '<' to its matching '>' (nested <>, strings and
 * "->" skipped). On success *body_len is the body length and the lexer stands after
 * the '>'. */
bool kl_lex_angle_body(kl_lexer *lx, size_t *body_len);
#endif
