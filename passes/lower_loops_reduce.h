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
 * (kl_ll_access_view), borrowed.
 * Fused forms (rock.reduce / rock.softmax with a prologue and an epilogue body, see
 * core/dialect_rock.h): in_buf / in_v are prologue input 0; every load of the input is
 * the prologue body applied to the pro inputs at that point, and every store applies the
 * epilogue body to the reduction's value (converted to res_t) and the epi inputs at the
 * stored point; row_out (a reduce): the output has the input's shape, written after the
 * reduction by a second pass over the row (the host's COL mapping is taken then too). */
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
  /* fused producers and consumers (npro = 0: none) */
  int npro, nepi;
  kl_value *const *pro_buf, *const *epi_buf;
  const kl_view *const *pro_v, *const *epi_v;
  kl_region *pro, *epi;
  const bool *res_arg;  /* per epilogue body argument: the reduction's value (else the next epi input) */
  const kl_type *res_t; /* the element type of the reduction's value in the epilogue */
  bool row_out;
} kl_red_desc;

bool kl__ll_body_vectorizes(kl_region *r); /* lower_loops_elementwise.c */
kl_value *kl__ll_inline_vector_body(kl_ll *L, kl_region *r, kl_value *const *args,
                                    int64_t V);                              /* lower_loops_elementwise.c */
kl_value *kl__ll_inline_body(kl_ll *L, kl_region *r, kl_value *const *args); /* rock_lower_loops.c */

bool kl__ll_blockwise_reduce(kl_ll *L, kl_op *func, const kl_target *t, const kl_red_desc *d);
#endif
