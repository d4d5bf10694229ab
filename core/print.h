/* print.h — the .kir text printer.
 * Contract: prints ops in the generic form
 *   %r = "dialect.op"(%a, %b) ({regions}) {attr = value} : (operand types) -> result types
 * or, for ops whose definition has a print hook, in their custom syntax
 * ("%r = dialect.op ..."). Values are named %N (results) and %argN (block arguments),
 * or %hint / %hint_K when a value has a name hint; names are unique within the
 * printed op. The parser (parse.h) reads exactly what this writes. */
#ifndef KL_PRINT_H
#define KL_PRINT_H
#include "core/ir.h"

enum {
  KL_PRINT_GENERIC = 1u << 0, /* ignore custom syntax */
  KL_PRINT_LOCS = 1u << 1     /* append loc("file":line:col) */
};

typedef struct kl_printer kl_printer;
char *kl_print_op(kl_op *op, unsigned flags); /* malloc'd text, trailing newline */
void kl_print_op_to(kl_sb *sb, kl_op *op, unsigned flags);

/* For custom-syntax hooks. */
void kl_printer_puts(kl_printer *pr, const char *s);
void kl_printer_printf(kl_printer *pr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kl_printer_value(kl_printer *pr, kl_value *v);
void kl_printer_type(kl_printer *pr, const kl_type *t);
void kl_printer_attr(kl_printer *pr, const kl_attr *a);
/* " {a = 1, b}" for the op's attributes except the elided names (NULL-terminated list);
 * prints nothing if none remain. */
void kl_printer_attr_dict(kl_printer *pr, kl_op *op, const char *const *elided);
/* Prints "{\n ... }" with the region's blocks; entry block label printed only when it
 * has arguments and print_entry_args is true, or when the region has several blocks. */
void kl_printer_region(kl_printer *pr, kl_region *r, bool print_entry_args);
/* Registers names for block arguments printed by the hook itself (e.g. a custom
 * func signature) so that nested uses print the same names. Returns the name. */
const char *kl_printer_value_name(kl_printer *pr, kl_value *v);
#endif
