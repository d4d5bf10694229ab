/* rewrite.h — patterns, the rewriter and the drivers.
 * Contract: every IR mutation made by a pattern goes through a kl_rewriter, which
 * performs it with the ir.h primitives and tells the driver (so that new and changed
 * ops are revisited and erased ops are never visited again). A pattern has a root op
 * name (NULL = any op), a benefit (higher first), a debug name and a match-and-rewrite
 * function returning true iff it changed the IR; C patterns and Lua patterns are the
 * same kl_pattern to the drivers. The greedy driver runs to a fixed point with a
 * worklist; exceeding its iteration cap is an error (diagnostic) naming the last
 * pattern applied. It also folds ops through their opdef fold hooks and removes dead
 * pure ops. The walk driver applies patterns once to every op (for lowerings).
 * Folded constants are materialized with kl_build_constant right before the folded op
 * (not deduplicated: run cse). Patterns are tried in benefit order (ties: array order)
 * after dead-op removal and folding. KILN_DEBUG=rewrite (or a comma list holding it)
 * logs "[rewrite] 'op' at loc -> pattern -> applied / not applied (reason)" to stderr.
 * A pattern's function may report a failure to the driver with kl_rewriter_fail
 * (the driver then stops and returns KL_ERR; the IR stays valid). */
#ifndef KL_REWRITE_H
#define KL_REWRITE_H
#include "core/ir.h"

typedef struct kl_rewriter kl_rewriter;
typedef struct kl_pattern kl_pattern;
typedef bool (*kl_rewrite_fn)(const kl_pattern *pat, kl_op *op, kl_rewriter *rw);
struct kl_pattern {
  const char *root; /* op name or NULL for any */
  int benefit;
  const char *name; /* debug name */
  kl_rewrite_fn fn;
  void *user; /* pattern state (e.g. Lua registry reference) */
};

/* ---- rewriter API (for use inside patterns and lowerings) ---- */
/* A standalone rewriter (no driver: mutations are just performed) for code that
 * mutates IR outside the drivers; the drivers make their own. */
kl_rewriter *kl_rewriter_new(kl_ctx *ctx);
void kl_rewriter_free(kl_rewriter *rw);
bool kl_rewriter_failed(const kl_rewriter *rw); /* kl_rewriter_fail was called */
kl_ctx *kl_rewriter_ctx(kl_rewriter *rw);
/* Insertion point: new ops created with kl_rewriter_insert go before `before`
 * (set_insertion_after: before the op that follows `after` now; or at the end of
 * `block`). Inserting does not move it, so consecutive inserts keep their order. The
 * point also remembers how it was set (before op, after op, end of block: its anchor)
 * for kl_rewriter_save_insertion. The drivers set it before the op a pattern is tried on.
 * Erasing through the rewriter (kl_rewriter_erase_op, kl_rewriter_replace_op*) moves
 * the point past an erased op: an op the point inserts before, or its anchor op, that is
 * the erased op or nested in it becomes "before the op that followed the erased op" (or
 * "end of its block" if it was the last op). An end-of-block point is never moved, also
 * when the block is nested in an erased op. */
void kl_rewriter_set_insertion_before(kl_rewriter *rw, kl_op *before);
void kl_rewriter_set_insertion_after(kl_rewriter *rw, kl_op *after);
void kl_rewriter_set_insertion_end(kl_rewriter *rw, kl_block *block);
/* A saved insertion point: how the point was set (kind and anchor op or block).
 * Restoring it sets the point again the same way: before the anchor, after the anchor
 * where it is at restore time (so ops inserted right after it in between come after the
 * restored point), or at the end of the block. Saved points stay safe when ops are
 * erased in between: restoring one first applies, in order, the erasures made through
 * this rewriter since it was saved, with the rule above (an anchor erased, or nested in
 * an erased op, becomes "before the op that followed it" / "end of its block"), so it
 * never names an erased op. Erasures made without the rewriter (kl_op_erase) are not
 * seen. A point restores into the rewriter it was saved from, any number of times;
 * from the first save on the rewriter logs its erasures (hence non-const). One saved
 * before any point was set restores "no insertion point". */
enum { KL_IP_NONE, KL_IP_BEFORE, KL_IP_AFTER, KL_IP_END };
typedef struct kl_insertion_point {
  int kind;        /* KL_IP_* */
  kl_op *anchor;   /* KL_IP_BEFORE, KL_IP_AFTER */
  kl_block *block; /* KL_IP_END */
  int erased;      /* the rewriter's erase-log length when saved */
} kl_insertion_point;
kl_insertion_point kl_rewriter_save_insertion(kl_rewriter *rw);
void kl_rewriter_restore_insertion(kl_rewriter *rw, kl_insertion_point ip);
kl_op *kl_rewriter_insert(kl_rewriter *rw, kl_op *op); /* inserts a detached op, returns it */
/* Convenience: create + insert. */
kl_op *kl_rewriter_create(kl_rewriter *rw, const char *name, kl_loc loc, int nopnds, kl_value *const *opnds,
                          int nresults, const kl_type *const *types, int nattrs, const kl_named_attr *attrs,
                          int nregions);
/* Replace all results of op with vals (same count) and erase op. */
void kl_rewriter_replace_op(kl_rewriter *rw, kl_op *op, kl_value *const *vals);
void kl_rewriter_replace_op_with(kl_rewriter *rw, kl_op *op, kl_op *new_op); /* inserts new_op before op */
void kl_rewriter_erase_op(kl_rewriter *rw, kl_op *op);                       /* results must be unused */
void kl_rewriter_replace_all_uses(kl_rewriter *rw, kl_value *from, kl_value *to);
/* In-place modification: call start before and finalize after changing op's
 * operands/attributes/types (the driver revisits op and its users). */
void kl_rewriter_modify_start(kl_rewriter *rw, kl_op *op);
void kl_rewriter_modify_end(kl_rewriter *rw, kl_op *op);
void kl_rewriter_set_attr(kl_rewriter *rw, kl_op *op, const char *name, const kl_attr *a);
void kl_rewriter_set_operand(kl_rewriter *rw, kl_op *op, int i, kl_value *v);
/* Moves op (detached or not) before anchor. */
void kl_rewriter_move_before(kl_rewriter *rw, kl_op *op, kl_op *anchor);
/* Reports a failure with a diagnostic at loc; the driver stops with KL_ERR. */
void kl_rewriter_fail(kl_rewriter *rw, kl_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Records why a pattern did not apply (for KILN_DEBUG=rewrite); returns false. */
bool kl_rewriter_notify_no_match(kl_rewriter *rw, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- drivers ---- */
typedef struct kl_greedy_config {
  int max_iterations; /* whole-worklist rounds; default 10 when 0 */
  int max_rewrites;   /* total rewrites before "did not converge"; 0 (the default): 100000 or
                       * KL_GREEDY_REWRITES_PER_OP per op under root at the start, whichever
                       * is more (a large kernel's dead-op removal alone takes one per op) */
  bool fold;          /* use fold hooks (default true via kl_greedy_default) */
  bool remove_dead;   /* erase unused pure ops */
} kl_greedy_config;
#define KL_GREEDY_REWRITES_PER_OP 16
kl_greedy_config kl_greedy_default(void);
/* Applies patterns under root (root itself excluded) to a fixed point. */
kl_status kl_apply_patterns_greedy(kl_op *root, const kl_pattern *const *pats, int npats, const kl_greedy_config *cfg);
/* Visits each op under root once (post-order) and applies the first matching pattern. */
kl_status kl_apply_patterns_walk(kl_op *root, const kl_pattern *const *pats, int npats);

/* Registry of named C patterns (canonical patterns of dialects, exposed to Lua by name). */
void kl_register_pattern(kl_ctx *ctx, const kl_pattern *pat);
const kl_pattern *kl_lookup_pattern(kl_ctx *ctx, const char *name);
int kl_pattern_count(kl_ctx *ctx);
const kl_pattern *kl_pattern_at(kl_ctx *ctx, int i);
#endif
