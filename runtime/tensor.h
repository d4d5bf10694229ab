/* tensor.h — host tensors: dtype, logical shape, strides (layout), data, printing,
 * comparison. The element types (kl_dtype) are core/dtype.h's, the shapes, layouts and
 * stride helpers core/shape.h's.
 * Contract:
 *  - A kl_tensor has a logical shape and strides in elements within core/shape.h's
 *    limits (kl_shape_check: rank <= KL_MAX_RANK, sizes 0..2^40, at most 2^53 elements,
 *    strides and the largest offset at most 2^53), the same as IR types. Strides only decide where an element lives: every API here
 *    (get/set, printing, compare, ops) works in logical coordinates, so an NHWC tensor is
 *    still indexed (n, c, h, w). A stride of 0 (broadcast) is allowed in views only.
 *  - Memory: tensors are heap objects with a reference count (kl_tensor_retain /
 *    kl_tensor_release; created with count 1). The data is owned by the tensor that
 *    allocated it (or was handed it by kl_tensor_wrap with take_ownership); a view keeps
 *    a reference to its base. device/device_ptr are opaque slots for the device layer; if
 *    device_free is set it is called on the last release.
 *  - Errors: functions that can fail on user input return an int status (0 ok, nonzero
 *    error) or NULL, and write a message into the caller's buffer err[errlen] (err may be
 *    NULL). Only out-of-memory on small metadata aborts (kl_xmalloc); a data allocation
 *    that fails is an error.
 *  - Element values cross this API as double (or int64 for exact integers). Storing a
 *    double rounds through the dtype: f16/bf16/f32 round to nearest even (core/dtype.h); into
 *    an integer dtype it truncates toward zero and saturates to the dtype's range (NaN ->
 *    0; i1: nonzero, NaN included, -> 1). Storing an int64 into a narrower integer dtype
 *    wraps (two's complement, like a C cast / LLVM trunc; i1: nonzero -> 1); into a float
 *    dtype it rounds to nearest even. */
#ifndef KL_TENSOR_H
#define KL_TENSOR_H
#include "core/dtype.h"
#include "core/shape.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>


/* ---- tensors ---- */
typedef struct kl_tensor {
  int refcount;
  kl_dtype dtype;
  int rank;
  int64_t shape[KL_MAX_RANK];                          /* logical */
  int64_t strides[KL_MAX_RANK];                        /* elements */
  int64_t offset;                                      /* element offset of logical [0,..,0] from data */
  void *data;                                          /* host allocation (shared with base for views) */
  size_t nbytes;                                       /* size of the allocation at data */
  struct kl_tensor *base;                              /* view: the tensor owning data (retained); else NULL */
  bool owns_data;                                      /* free(data) on last release */
  void *device;                                        /* device layer: the device holding a copy (opaque) */
  void *device_ptr;                                    /* device layer: its allocation (opaque) */
  void (*device_free)(void *device, void *device_ptr); /* called on last release */
} kl_tensor;

typedef enum kl_dist { KL_DIST_UNIFORM = 0, KL_DIST_NORMAL = 1 } kl_dist;

/* Creation. strides == NULL means row-major; given strides must be >= 0 and must not
 * overlap (gaps, i.e. padded layouts, are fine). Data starts zeroed. */
kl_tensor *kl_tensor_zeros(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides, char *err,
                           size_t errlen);
kl_tensor *kl_tensor_ones(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides, char *err,
                          size_t errlen);
kl_tensor *kl_tensor_full(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides, double value, char *err,
                          size_t errlen);
/* values: numel entries in logical row-major order (NULL: zeros). */
kl_tensor *kl_tensor_from_f64(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides, const double *values,
                              char *err, size_t errlen);
kl_tensor *kl_tensor_from_i64(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides,
                              const int64_t *values, char *err, size_t errlen);
/* Random values drawn in logical row-major order from PCG32 seeded with seed (stream 0),
 * rounded to dt. Floats: uniform in [-1, 1) or normal N(0, 1). Integers: uniform draws
 * integers in [-8, 8) (i1: 0 or 1; u8: the full range 0..255); normal draws round(3 * N(0,1))
 * saturated (u8: round(|3 * N(0,1)|)). Row-major float tensors of more than 2^18 elements are
 * filled in slices on a kl_threadpool of the default size (KILN_THREADS), each slice from the
 * generator advanced to it: the same values. */
kl_tensor *kl_tensor_rand(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides, uint64_t seed,
                          kl_dist dist, char *err, size_t errlen);
/* Wrap existing memory (nbytes long); the strides/offset must stay inside it. With
 * take_ownership the tensor free()s data on its last release. */
kl_tensor *kl_tensor_wrap(void *data, size_t nbytes, bool take_ownership, kl_dtype dt, int rank, const int64_t *shape,
                          const int64_t *strides, int64_t offset, char *err, size_t errlen);
/* A view sharing base's data (the owner of the data is retained); strides may be 0
 * (broadcast); offset counts elements from the start of the allocation (base->data), so
 * a view relative to a view adds base->offset itself. */
kl_tensor *kl_tensor_view(kl_tensor *base, int rank, const int64_t *shape, const int64_t *strides, int64_t offset,
                          char *err, size_t errlen);

kl_tensor *kl_tensor_retain(kl_tensor *t); /* returns t */
void kl_tensor_release(kl_tensor *t);      /* NULL ok */

/* Copies (always new allocations). contiguous = row-major; with_strides: the given
 * strides (NULL = row-major); as_layout: strides from a layout string. */
kl_tensor *kl_tensor_contiguous(const kl_tensor *t, char *err, size_t errlen);
kl_tensor *kl_tensor_with_strides(const kl_tensor *t, const int64_t *strides, char *err, size_t errlen);
kl_tensor *kl_tensor_as_layout(const kl_tensor *t, const char *layout, char *err, size_t errlen);
/* Element-wise copy src -> dst (same logical shape, any layouts; converts dtype: same
 * dtype copies bits exactly, otherwise ints go through int64 when both are integer, else
 * through double). */
int kl_tensor_copy_into(kl_tensor *dst, const kl_tensor *src, char *err, size_t errlen);

bool kl_tensor_same_layout(const kl_tensor *a, const kl_tensor *b); /* same shape + equivalent strides */
bool kl_tensor_is_row_major(const kl_tensor *t);
/* "row_major", "perm=[0,2,3,1]" (dense permutation) or "strides=[...]"; returns buf. */
char *kl_tensor_layout_str(const kl_tensor *t, char *buf, size_t n);
kl_shape kl_tensor_shape(const kl_tensor *t);
int64_t kl_tensor_numel(const kl_tensor *t);

/* Element access by logical index (idx has rank entries). The unchecked accessors
 * require an in-bounds index; check first with kl_tensor_check_index. */
int kl_tensor_check_index(const kl_tensor *t, int n, const int64_t *idx, char *err, size_t errlen);
int64_t kl_tensor_elem_offset(const kl_tensor *t, const int64_t *idx); /* elements from data */
void *kl_tensor_elem_ptr(const kl_tensor *t, const int64_t *idx);
double kl_tensor_get(const kl_tensor *t, const int64_t *idx);
void kl_tensor_set(kl_tensor *t, const int64_t *idx, double v);
int64_t kl_tensor_get_i64(const kl_tensor *t, const int64_t *idx);
void kl_tensor_set_i64(kl_tensor *t, const int64_t *idx, int64_t v);
/* Flat logical (row-major) order: flat in [0, numel). */
void kl_tensor_unravel(const kl_tensor *t, int64_t flat, int64_t *idx);
double kl_tensor_get_flat(const kl_tensor *t, int64_t flat);
void kl_tensor_set_flat(kl_tensor *t, int64_t flat, double v);
/* All elements in logical row-major order into out[numel]. */
void kl_tensor_to_f64(const kl_tensor *t, double *out);
void kl_tensor_to_i64(const kl_tensor *t, int64_t *out);

/* numpy-like text, malloc'd (caller frees):
 *   tensor([[1, 2],
 *           [3, 4]], dtype=f32)
 * Tensors with more than 1000 elements are summarised: 3 entries at each edge of every
 * dim longer than 6, "..." between. Non-row-major tensors add ", strides=[...]". */
char *kl_tensor_tostring(const kl_tensor *t);
/* threshold: summarise above this many elements; edge: entries kept per edge;
 * precision: significant digits for floats (%g). */
char *kl_tensor_tostring_ex(const kl_tensor *t, int64_t threshold, int edge, int precision);

/* ---- comparison ----
 * Element i matches when |a_i - b_i| <= atol + rtol * |b_i| (b is the reference), or both
 * are NaN, or both are the same infinity. Integer pairs compare exactly as int64.
 * max_rel_err is taken over elements with b_i != 0. A NaN/inf mismatch counts as an
 * infinite error. Default tolerances by dtype (kl_default_tolerance):
 *   f32 rtol 1e-5 atol 1e-6 | f16 1e-2 1e-3 | bf16 2e-2 1e-2 | f64 1e-12 1e-14 | ints 0 0
 *   f8e4m3fn/fnuz 0.125 2^-7 | f8e5m2/fnuz 0.25 2^-14 (one fp8 unit in the last place)
 * For two dtypes the looser (larger) of each is used. */
typedef struct kl_compare_result {
  double max_abs_err, max_rel_err;
  int64_t mismatches;               /* number of mismatching elements */
  int64_t first_flat;               /* -1 if all match */
  int64_t first_index[KL_MAX_RANK]; /* logical index of the first mismatch */
  int rank;
  double first_a, first_b; /* values at the first mismatch */
  double rtol, atol;       /* tolerances used */
} kl_compare_result;

void kl_default_tolerance(kl_dtype dt, double *rtol, double *atol);
/* rtol/atol < 0 select the defaults for (a, b). A shape mismatch is an error. */
int kl_tensor_compare(const kl_tensor *a, const kl_tensor *b, double rtol, double atol, kl_compare_result *res,
                      char *err, size_t errlen);
int kl_tensor_allclose(const kl_tensor *a, const kl_tensor *b, double rtol, double atol, bool *close, char *err,
                       size_t errlen);
#endif
