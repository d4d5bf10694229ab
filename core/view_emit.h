/* view_emit.h — a view's index arithmetic as IR (arith ops on index values), for the
 * code generator. Contract: kl_view_emit creates, through the rewriter at its current
 * insertion point, the ops computing the lower (buffer) coordinate of view v for the
 * given upper coordinate values, and the validity bit only where the view can produce
 * invalid coordinates (Pad/Embed that may leave range: kl_view_trans_may_be_invalid);
 * *valid is NULL when every coordinate is valid. Constants fold while emitting (an op is
 * only created when an operand is not a constant), so compiled code and kl_view_eval
 * agree on every valid coordinate (invalid ones may differ and must not be used to
 * address memory). The small index helpers fold the same way. */
#ifndef KL_VIEW_EMIT_H
#define KL_VIEW_EMIT_H
#include "core/rewrite.h"
#include "core/view.h"

typedef struct kl_emitter {
  kl_rewriter *rw;
  kl_loc loc;
} kl_emitter;

kl_value *kl_emit_index(kl_emitter *e, int64_t v);
kl_value *kl_emit_add(kl_emitter *e, kl_value *a, kl_value *b);
kl_value *kl_emit_sub(kl_emitter *e, kl_value *a, kl_value *b);
kl_value *kl_emit_mul(kl_emitter *e, kl_value *a, kl_value *b);
kl_value *kl_emit_muli(kl_emitter *e, kl_value *a, int64_t c);
kl_value *kl_emit_divi(kl_emitter *e, kl_value *a, int64_t c); /* a >= 0: floor division */
kl_value *kl_emit_remi(kl_emitter *e, kl_value *a, int64_t c); /* a >= 0 */
kl_value *kl_emit_xori(kl_emitter *e, kl_value *a, kl_value *b);
kl_value *kl_emit_cmp(kl_emitter *e, const char *pred, kl_value *a, kl_value *b); /* i1 */
kl_value *kl_emit_and(kl_emitter *e, kl_value *a, kl_value *b);                   /* i1; NULL = true */
bool kl_emit_const_of(kl_value *v, int64_t *out);

/* upper: kl_view_rank(v) values; lower: kl_view_lower_rank(v) slots. */
kl_status kl_view_emit(kl_emitter *e, const kl_view *v, kl_value *const *upper, kl_value **lower, kl_value **valid);
#endif
