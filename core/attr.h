/* attr.h — interned IR attributes.
 * Contract: attributes are immutable and interned per context (pointer equality is
 * value equality). Kinds and text syntax:
 *   integer 3 (i64) or 3 : i32;  float 1.5 (f64) or 1.5 : f32 (also inf, -inf, nan);
 *   string "text" (C escapes);  bool true/false;  unit (a present flag, printed alone);
 *   array [a, b];  dict {k = v, ...} (keys sorted);  type  !f32 / !tensor<...>;
 *   symbol ref @name;  extension #name<...> (registered kinds, e.g. #view<...>).
 * Extension kinds (views) register print/parse hooks and a payload. */
#ifndef KL_ATTR_H
#define KL_ATTR_H
#include "core/type.h"

typedef enum {
  KL_AT_INT,
  KL_AT_FLOAT,
  KL_AT_STR,
  KL_AT_BOOL,
  KL_AT_UNIT,
  KL_AT_ARRAY,
  KL_AT_DICT,
  KL_AT_TYPE,
  KL_AT_SYMREF,
  KL_AT_EXT
} kl_attr_kind;

typedef struct kl_named_attr {
  const char *name;
  const kl_attr *value;
} kl_named_attr;

/* An extension attribute kind: `#name<body>`. print appends the body (without the
 * "#name<" and ">") to sb. parse gets the raw body text (between the '<' and its
 * matching '>', angle brackets balanced) and the location of its first character;
 * it returns the payload (allocated in the context arena) or NULL after emitting an
 * error with kl_emit_error at a location inside the body. */
typedef struct kl_attr_ext {
  const char *name;
  void (*print)(kl_sb *sb, const void *payload);
  const void *(*parse)(kl_ctx *ctx, const char *body, size_t len, kl_loc loc);
} kl_attr_ext;

struct kl_attr {
  kl_attr_kind kind;
  const kl_type *type;          /* int/float: element type; type attr: the type */
  int64_t i;                    /* int, bool */
  double f;                     /* float */
  const char *s;                /* str (may contain NUL: see len), symref name */
  size_t len;                   /* str length */
  int n;                        /* array/dict element count */
  const kl_attr *const *elems;  /* array */
  const kl_named_attr *entries; /* dict, sorted by name */
  const kl_attr_ext *ext;       /* ext kind */
  const void *payload;          /* ext payload */
  const char *text;             /* canonical printed form (interned) */
};

const kl_attr *kl_attr_int(kl_ctx *ctx, int64_t v); /* : i64 */
const kl_attr *kl_attr_int_typed(kl_ctx *ctx, int64_t v, const kl_type *t);
const kl_attr *kl_attr_float(kl_ctx *ctx, double v); /* : f64 */
const kl_attr *kl_attr_float_typed(kl_ctx *ctx, double v, const kl_type *t);
const kl_attr *kl_attr_str(kl_ctx *ctx, const char *s);
const kl_attr *kl_attr_strn(kl_ctx *ctx, const char *s, size_t n);
const kl_attr *kl_attr_bool(kl_ctx *ctx, bool v);
const kl_attr *kl_attr_unit(kl_ctx *ctx);
const kl_attr *kl_attr_array(kl_ctx *ctx, int n, const kl_attr *const *elems);
const kl_attr *kl_attr_i64_array(kl_ctx *ctx, int n, const int64_t *v);
const kl_attr *kl_attr_dict(kl_ctx *ctx, int n, const kl_named_attr *entries); /* sorts; last duplicate wins */
const kl_attr *kl_attr_type(kl_ctx *ctx, const kl_type *t);
const kl_attr *kl_attr_symref(kl_ctx *ctx, const char *name);
const kl_attr *kl_attr_ext_make(kl_ctx *ctx, const kl_attr_ext *ext, const void *payload);
/* The same for a payload the caller owns: copy(ctx, payload) makes the context's copy,
 * called only when no equal attribute exists yet (so a repeated one costs no memory). */
const kl_attr *kl_attr_ext_make_copy(kl_ctx *ctx, const kl_attr_ext *ext, const void *payload,
                                     const void *(*copy)(kl_ctx *ctx, const void *payload));

/* Extension registry. */
void kl_register_attr_ext(kl_ctx *ctx, const kl_attr_ext *ext);
const kl_attr_ext *kl_lookup_attr_ext(kl_ctx *ctx, const char *name, size_t n);

const char *kl_attr_str_of(const kl_attr *a); /* canonical text */
/* Accessors with defaults for absent/mistyped attributes. */
bool kl_attr_get_i64_array(const kl_attr *a, int max, int64_t *out, int *n);
const kl_attr *kl_attr_dict_get(const kl_attr *dict, const char *name);


/* Text helpers shared by printers: bare identifiers ([A-Za-z_][A-Za-z0-9_.$-]*) print
 * as is, anything else as a quoted string; doubles print in shortest round-trip form. */
bool kl_is_bare_ident(const char *s);
void kl_print_string_literal(kl_sb *sb, const char *s, size_t n);
void kl_print_ident_or_string(kl_sb *sb, const char *s);
void kl_print_double(kl_sb *sb, double v);
#endif
