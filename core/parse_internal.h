/* parse_internal.h — the parser state shared by parse.c (ops, regions, names, the
 * hook API) and parse_attr.c (types and attributes). Not a public header.
 * Contract: one kl_parser lives for one kl_parse_* call; only its first error is
 * reported (later ones are consequences), and `failed` stays set once an error was
 * reported. Temporary tables are malloc'd and freed when the parse ends; everything
 * the IR keeps is allocated in the context arena. */
#ifndef KL_PARSE_INTERNAL_H
#define KL_PARSE_INTERNAL_H
#include "core/parse.h"
#include "core/lexer.h"

#define KL_PARSE_MAX_DEPTH   256        /* region nesting and attribute nesting limits */
#define KL_PARSE_MAX_RESULTS 65536      /* %r:N */
#define KL_PARSE_MAX_VECTOR  65536      /* vector<Nx..> */
#define KL_PARSE_MAX_DIM     KL_MAX_DIM /* the IR's limits (core/type.h, kl_shape_check) */

/* A name visible in some scope: "%x" (values; count results from first) or "^bb1"
 * (labels; `region` tells regions apart, as each region numbers its blocks anew). */
typedef struct kl_name_ent {
  const char *key;
  size_t n;
  int region;
  kl_value *first;
  kl_value *const *args;
  int count; /* results: first[i]; block arg: args[0] */
  bool live;
} kl_name_ent;

typedef struct kl_pending_arg {
  kl_block *block;
  kl_value *v;
  kl_tok name;
} kl_pending_arg;

struct kl_parser {
  kl_ctx *ctx;
  kl_lexer lx;
  kl_tok tok;       /* the current (not yet consumed) token */
  const char *file; /* interned */
  bool failed;
  int region_depth, attr_depth;
  int nregions_seen; /* label namespace ids */
  kl_name_ent *ents;
  int nents, capents;
  int *table;
  int tcap; /* open addressing: entity index + 1; 0 = empty */
  int *defs;
  int ndefs, capdefs; /* stack of defined entity indices (scopes) */
  kl_pending_arg *pending;
  int npending, cappending;
  kl_sb sb; /* scratch for decoded strings */
};

void kl__parser_init(kl_parser *p, kl_ctx *ctx, const char *text, size_t len, const char *filename);
void kl__parser_fini(kl_parser *p);
void kl__next(kl_parser *p);
bool kl__is(const kl_parser *p, kl_tok_kind kind, const char *text); /* text NULL: any */
kl_loc kl__tok_loc(const kl_parser *p, const kl_tok *t);
kl_status kl__error_at(kl_parser *p, kl_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Decodes a STRING / quoted SYMBOL token into an interned identifier; NULL (after an
 * error naming `what`) if it holds a NUL byte. */
const char *kl__string_ident(kl_parser *p, const kl_tok *t, const char *what);

const kl_type *kl__parse_type(kl_parser *p);
/* typed: a number may be followed by ": type" (false for custom-syntax values). */
const kl_attr *kl__parse_attr(kl_parser *p, bool typed);
/* "{k = v, flag}" (the current token is '{'): appends entries to st, rejecting
 * duplicates. */
kl_status kl__parse_dict_body(kl_parser *p, kl_op_state *st);
#endif
