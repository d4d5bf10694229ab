/* lower_loops_reduce.h — blockwise rock.reduce / rock.softmax kernels for rock-lower-loops
 * (passes/lower_loops_reduce.c; called by lower_loops_kernels.c after it has checked the
 * op). Internal to the pass.
 *
 * Contract: kl__ll_blockwise_reduce emits, at L's insertion point, the whole kernel body
 * of one reduction or softmax described by d and sets block_size / grid_size on func; it
 * returns false without emitting anything when the description is outside what it
 * handles (rank 0, no reduced axis, an empty tensor, a host reduction whose innermost
 * dim is kept), and the caller then emits the one-thread-per-point form. in_v / out_v are
 * views from the logical in / out shapes to the underlying buffers in_buf / out_buf
 * (kl_ll_access_view), borrowed. */
#ifndef KL_LOWER_LOOPS_REDUCE_H
#define KL_LOWER_LOOPS_REDUCE_H
#include "passes/lower_loops.h"

typedef enum { KL_RED_SUM, KL_RED_MAX, KL_RED_MIN, KL_RED_MEAN, KL_RED_SOFTMAX } kl_red_kind;
typedef struct kl_red_desc {
  kl_red_kind kind;
  kl_value *in_buf, *out_buf;
  const kl_view *in_v, *out_v;
  int r;                     /* rank of in (and out) */
  const int64_t *S;          /* in's shape */
  bool reduced[KL_MAX_RANK]; /* softmax: the axis */
  const kl_type *acc;        /* accumulator: f32 (f16/bf16/f32), f64, i64 (integers) */
  int64_t count;             /* elements per output point (mean's divisor) */
} kl_red_desc;

bool kl__ll_blockwise_reduce(kl_ll *L, kl_op *func, const kl_target *t, const kl_red_desc *d);
#endif
