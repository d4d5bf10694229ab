/* shape.h — logical shapes (rank <= KL_TENSOR_MAX_RANK), their formatting, memory
 * layouts (layout strings <-> permutations) and strides <-> permutations.
 * Contract: pure functions on caller-owned values; no allocation, no global state.
 * Functions that can fail on user input return an int status (0 ok, 1 error) and write
 * a message naming the op and the shapes into err[errlen] (err may be NULL); they never
 * abort. Strides are in elements. */
#ifndef KL_SHAPE_H
#define KL_SHAPE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KL_TENSOR_MAX_RANK 8

/* Writes the formatted message into err[errlen] (if err) and returns 1 (an error status). */
int kl_shape_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- shapes ---- */
typedef struct kl_shape { int rank; int64_t dim[KL_TENSOR_MAX_RANK]; } kl_shape;

/* Checks 0 <= rank <= KL_TENSOR_MAX_RANK and sizes >= 0 (opname prefixes the error). */
int     kl_shape_init(kl_shape *s, int rank, const int64_t *dims, const char *opname, char *err, size_t errlen);
kl_shape kl_shape_make(int rank, const int64_t *dims);  /* unchecked: rank clamped to 0..8 */
int64_t kl_shape_numel(const kl_shape *s);
bool    kl_shape_equal(const kl_shape *a, const kl_shape *b);
/* "[2,3]" ("[]" for rank 0); returns buf. */
char   *kl_dims_format(int rank, const int64_t *dims, char *buf, size_t n);
char   *kl_shape_format(const kl_shape *s, char *buf, size_t n);

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
int  kl_layout_perm(const char *layout, int rank, int *perm, char *err, size_t errlen);
int  kl_layout_strides(const char *layout, int rank, const int64_t *shape, int64_t *strides,
                       char *err, size_t errlen);
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
