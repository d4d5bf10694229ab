/* shape.h — the shape limits (KL_MAX_RANK and kl_shape_check, the one check every
 * user-shape entry point calls), logical shapes, their formatting, memory layouts
 * (layout strings <-> permutations) and strides <-> permutations.
 * Contract: pure functions on caller-owned values; no allocation, no global state.
 * Functions that can fail on user input return an int status (0 ok, 1 error) and write
 * a message naming the op and the shapes into err[errlen] (err may be NULL); they never
 * abort. Strides are in elements. */
#ifndef KL_SHAPE_H
#define KL_SHAPE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/diag.h"

/* The shape limits of IR types (core/type.h), kl_shape and host tensors
 * (runtime/tensor.h), checked by kl_shape_check. Every entry point that takes a shape
 * from a user (the .kir parser, the type constructors, g:param and the other Lua shape
 * arguments, graph-op shape inference, host tensor creation) applies these, so element
 * counts, strides, offsets and byte sizes (at most 8 bytes an element) never overflow
 * int64. */
#define KL_MAX_RANK  8                  /* what kl_shape and kl_tensor hold inline */
#define KL_MAX_DIM   ((int64_t)1 << 40) /* a size: 0 .. 2^40 */
#define KL_MAX_NUMEL ((int64_t)1 << 53) /* product of the sizes (zeros counted as 1), a stride, an offset */


/* Checks rank in [0, KL_MAX_RANK], every size in [0, KL_MAX_DIM], the product of the
 * sizes (zeros counted as 1) <= KL_MAX_NUMEL and, when strides is not NULL, every stride
 * in [0, KL_MAX_NUMEL] and the largest offset sum((size-1)*stride) <= KL_MAX_NUMEL.
 * Overflow-safe for any int64 input. Returns true if the shape is within the limits;
 * otherwise false with a message naming the offending entry (dims 0-based) in err (err
 * may be NULL). */
bool kl_shape_check(int rank, const int64_t *shape, const int64_t *strides, char *err, size_t errlen);

/* ---- shapes ---- */
typedef struct kl_shape {
  int rank;
  int64_t dim[KL_MAX_RANK];
} kl_shape;

/* Fills s after kl_shape_check's rank and sign rules (the same messages, prefixed with
 * "opname: "); the size and element-count limits are left to whoever makes a type of
 * the shape (shape inference checks its results with kl_shape_check). */
int kl_shape_init(kl_shape *s, int rank, const int64_t *dims, const char *opname, char *err, size_t errlen);
kl_shape kl_shape_make(int rank, const int64_t *dims); /* unchecked: rank clamped to 0..KL_MAX_RANK */
int64_t kl_shape_numel(const kl_shape *s);
bool kl_shape_equal(const kl_shape *a, const kl_shape *b);
/* "[2,3]" ("[]" for rank 0); returns buf. */
char *kl_dims_format(int rank, const int64_t *dims, char *buf, size_t n);
char *kl_shape_format(const kl_shape *s, char *buf, size_t n);

/* ---- layouts ----
 * A layout string names the memory order of the logical dims, outermost first:
 *  - letters of a known family, whose canonical (logical) order is
 *      NCHW  (conv input / output: NHWC, CHWN, ...), NKHW (NHWK), KCYX (filters: KYXC,
 *      CYXK, ...), NCW/NWC, NCDHW/NDHWC, KCX/KXC, KCZYX/KZYXC; the layout must be a
 *      permutation of one family of the tensor's rank (so "NHWC" = perm [0,2,3,1]);
 *  - "row_major" (= the canonical order), "col_major" (reversed);
 *  - an explicit permutation "0,2,3,1" or "[0,2,3,1]" (perm[i] = the logical dim that is
 *    i-th outermost in memory).
 * Strides computed from a layout are dense (no gaps). */
int kl_layout_perm(const char *layout, int rank, int *perm, char *err, size_t errlen);
int kl_layout_strides(const char *layout, int rank, const int64_t *shape, int64_t *strides, char *err, size_t errlen);
void kl_strides_row_major(int rank, const int64_t *shape, int64_t *strides);
void kl_strides_from_perm(int rank, const int64_t *shape, const int *perm, int64_t *strides);
/* True if strides are a dense permutation layout of shape; fills perm (outermost first;
 * dims of size 1 are placed to keep the order stable). perm may be NULL. */
bool kl_strides_to_perm(int rank, const int64_t *shape, const int64_t *strides, int *perm);
bool kl_strides_is_row_major(int rank, const int64_t *shape, const int64_t *strides);
/* Same memory layout: strides equal in every dim of size > 1. */
bool kl_strides_equivalent(int rank, const int64_t *shape, const int64_t *s1, const int64_t *s2);
/* No two logical elements share memory (sufficient test: sorted-stride nesting). */
bool kl_strides_nonoverlapping(int rank, const int64_t *shape, const int64_t *strides);

#endif
