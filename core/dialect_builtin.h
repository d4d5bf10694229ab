/* dialect_builtin.h — builtin.module, func.{func,return,call}, arith.* scalar
 * arithmetic (with folds), scf.{for,if,yield}: the ops every level shares.
 * Contract: registered on every context by kl_register_all_dialects; arith ops work on
 * scalars and vectors of one element type; folds compute with int64/double and
 * round to the result type. Custom syntax: func.func, func.return, arith.constant and
 * the binary arith ops (see dialect_builtin.c); all also parse in generic form.
 * Helpers here build these ops detached (caller inserts). */
#ifndef KL_DIALECT_BUILTIN_H
#define KL_DIALECT_BUILTIN_H
#include "core/ir.h"

kl_op *kl_build_constant(kl_ctx *ctx, kl_loc loc, const kl_attr *value, const kl_type *t);
/* Rounds v to what type t can hold (ints wrap to width; f16/bf16/f32 round). */
double kl_round_to_type(const kl_type *t, double v);
int64_t kl_wrap_int(const kl_type *t, int64_t v);
int64_t kl_ipow(int64_t x, int64_t e);
/* The attribute of value v converted to type t (int or float attr). */
const kl_attr *kl_const_attr_for(kl_ctx *ctx, const kl_type *t, double v);
/* For custom-syntax print hooks: prints " generic(%a) ({...}) {attrs} : (t) -> t", the
 * generic form after a bare op name, for an op that does not fit the hook's syntax. */
void kl_print_generic_escape(struct kl_printer *pr, kl_op *op);
#endif
