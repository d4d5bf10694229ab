/* parse.h — the .kir text parser.
 * Contract: reads what print.h writes (generic form, custom syntax of registered ops,
 * optional trailing loc(...)) into a module. Every op gets the location of its text
 * (file:line:col) unless an explicit loc(...) is given. On error returns NULL and
 * leaves one or more diagnostics "file:line:col: error: ..." in the context; nothing
 * is leaked into the context's IR that is still reachable and nothing crashes, for
 * any input bytes (invalid UTF-8, truncation, huge numbers, deep nesting). The text
 * need not be NUL-terminated. If the text holds ops that are not a builtin.module,
 * they are wrapped in a new module. The parser does not verify (callers do), but the
 * IR it returns is structurally sound (use lists, parents, block arguments).
 * Names: a value must be defined textually before its uses; names defined inside a
 * region are visible only there; redefining a visible name is an error. Names other
 * than the printer's generated %N / %argN become name hints. An empty region "{}" has
 * no blocks (except that a builtin.module always gets its body block).
 * Custom syntax: after a bare registered op name the op's parse hook runs, unless the
 * next word is `generic`: "dialect.op generic(%a) ... : (t) -> t" is the generic form
 * after a bare name (hooks print it when an op does not fit their syntax). Bare op
 * names must contain a '.'. Limits: 256 nested regions, 256 nested attributes,
 * integers in int64 (typed ones in their type's range), shapes and strides within
 * kl_shape_check's limits (core/type.h: dims <= 2^40, <= 2^53 elements, strides and
 * offsets in [0, 2^53]), vectors of 1..65536 elements. */
#ifndef KL_PARSE_H
#define KL_PARSE_H
#include "core/ir.h"

typedef struct kl_parser kl_parser;

kl_op *kl_parse_module(kl_ctx *ctx, const char *text, size_t len, const char *filename);
const kl_type *kl_parse_type(kl_ctx *ctx, const char *text, size_t len, const char *filename);
const kl_attr *kl_parse_attr(kl_ctx *ctx, const char *text, size_t len, const char *filename);

/* For custom-syntax parse hooks (kl_opdef.parse): the parser stands just after the op
 * name. All return KL_ERR after emitting a located error. */
bool kl_parser_accept(kl_parser *p, const char *punct_or_keyword); /* consumes if next */
bool kl_parser_peek(kl_parser *p, const char *punct_or_keyword);   /* is next, not consumed */
bool kl_parser_peek_operand(kl_parser *p);                         /* next is a %value */
bool kl_parser_peek_symbol(kl_parser *p);                          /* next is an @symbol */
kl_status kl_parser_expect(kl_parser *p, const char *punct_or_keyword);
kl_status kl_parser_int(kl_parser *p, int64_t *out);
kl_status kl_parser_ident(kl_parser *p, const char **out);  /* bare identifier, interned */
kl_status kl_parser_symbol(kl_parser *p, const char **out); /* @name, interned */
kl_status kl_parser_type(kl_parser *p, const kl_type **out);
kl_status kl_parser_attr(kl_parser *p, const kl_attr **out); /* a number may take ": type" */
/* An attribute whose number literals do not take a ": type" suffix (they come back as
 * i64 / f64 attributes; e.g. "arith.constant 3 : i32" retypes them itself). */
kl_status kl_parser_attr_untyped(kl_parser *p, const kl_attr **out);
kl_status kl_parser_operand(kl_parser *p, kl_value **out); /* %name use */
/* Parses "%name: type" as a new argument of block b; the name becomes visible inside
 * the region later parsed with b as its entry (kl_parser_region(p, &r, b)). */
kl_status kl_parser_block_arg(kl_parser *p, kl_block *b);
/* Parses a region "{...}". If entry is non-NULL, it is used as the entry block (its
 * arguments already defined, e.g. by a custom function signature); a leading entry
 * label in the text must then repeat those arguments exactly. */
kl_status kl_parser_region(kl_parser *p, kl_region **out, kl_block *entry);
/* Parses an optional "{a = 1, b}" attribute dictionary into st. */
kl_status kl_parser_attr_dict(kl_parser *p, kl_op_state *st);
kl_status kl_parser_error(kl_parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* As kl_parser_error, at a location saved earlier with kl_parser_loc. */
kl_status kl_parser_error_at(kl_parser *p, kl_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
kl_loc kl_parser_loc(kl_parser *p);
kl_ctx *kl_parser_ctx(kl_parser *p);
/* Does integer literal v fit integer type t? (signless ranges: i1 0..1, i8 -128..255,
 * i32 -2^31..2^32-1; i64 and index: all). */
bool kl_int_literal_fits(const kl_type *t, int64_t v);
/* Arena-backed growable arrays for hooks filling kl_op_state (grow a state's arrays
 * only through these). */
void kl_op_state_add_operand(kl_parser *p, kl_op_state *st, kl_value *v);
void kl_op_state_add_result_type(kl_parser *p, kl_op_state *st, const kl_type *t);
void kl_op_state_add_attr(kl_parser *p, kl_op_state *st, const char *name, const kl_attr *a);
void kl_op_state_add_region(kl_parser *p, kl_op_state *st, kl_region *r);
#endif
