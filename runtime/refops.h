/* refops.h — reference ("oracle") kernels over host tensors. The output-shape inference
 * they share with the graph layer is core/infer.h, the op enums, names and scalar
 * semantics core/scalar_ops.h, kl_contraction_dtype core/dtype.h (all included here).
 * Contract:
 *  - Every op reads its inputs in logical coordinates (any strides, broadcast views
 *    included) and never modifies them. Shapes are logical: conv input N,C,H,W, filter
 *    K,C/G,Y,X, output N,K,Ho,Wo, whatever the memory layouts.
 *  - Output: `kl_tensor **out`. If *out is NULL on entry the op allocates a row-major
 *    result of dtype out_dt (KL_DT_NONE = the op's default, named per op below) and
 *    stores it in *out (the caller releases it). If *out is non-NULL it is the
 *    destination: its shape must equal the inferred shape, its strides must not overlap,
 *    its dtype is the result dtype (out_dt must be KL_DT_NONE or equal to it). The
 *    destination must not alias an input. On error *out is left as it was: nothing is
 *    allocated and a destination is not written (all checks come before any write).
 *  - Arithmetic: floats accumulate in double; the result is rounded once on store by the
 *    output dtype's conversion (core/dtype.h: RNE for f16/bf16/f32; truncate + saturate for
 *    float -> int). Integer semantics:
 *      * element-wise ops (binary, neg abs relu clip where max min) use exact int64 math
 *        when every input AND the output are integer dtypes; int64 results wrap (two's
 *        complement) on overflow and wrap again when stored into i8/i32. Division
 *        truncates toward zero; x / 0 = 0; pow with a negative exponent is 1/x^-e
 *        truncated (so 0 except for x = +-1; 0^-e = 0). Otherwise (some float involved)
 *        the op runs in double, and exp/log/sqrt/rsqrt/tanh/sigmoid always do;
 *      * conv2d and dot accumulate in int64 when both inputs are integers (any output);
 *        their default dtype for integer inputs is i32 (i64 inputs: i64), see
 *        kl_contraction_dtype;
 *      * reduce sum/max/min accumulate in int64 for integer inputs; mean divides in
 *        double for a float output and truncates toward zero for an integer output;
 *      * convert: see kl_ref_convert.
 *    NaN propagates through max/min/clip (as numpy.maximum). Float max/min (and reduce
 *    max/min) are IEEE 754-2019 maximum/minimum, so commutative: -0 < +0 (max(-0, +0) = +0,
 *    min = -0, either order); relu(-0) = +0. Float x / 0 follows IEEE.
 *  - Errors: int status (0 ok) and a message in err[errlen] that names the op and the
 *    shapes, e.g. "dot: inner dimensions differ: [2,3] x [4,5]". Bad shapes never crash.
 *  - Axes may be negative (counted from the end, as in numpy). */
#ifndef KL_REFOPS_H
#define KL_REFOPS_H
#include "core/infer.h"
#include "core/scalar_ops.h"
#include "runtime/tensor.h"

/* Allocates (*out NULL) or checks (*out given) the destination, per the contract. */
int kl_ref_prepare_out(const char *op, const kl_shape *shape, kl_dtype dt, kl_tensor **out, char *err, size_t errlen);

/* ---- kernels ---- */
/* N-D conv (1-D to 3-D, p->spatial); default dtype = kl_contraction_dtype(input's). */
int kl_ref_conv(const kl_tensor *input, const kl_tensor *filter, const kl_conv_params *p, kl_dtype out_dt,
                kl_tensor **out, char *err, size_t errlen);
/* conv2d: kl_ref_conv of rank-4 operands. */
int kl_ref_conv2d(const kl_tensor *input, const kl_tensor *filter, const kl_conv2d_params *p, kl_dtype out_dt,
                  kl_tensor **out, char *err, size_t errlen);
/* Batched matmul; default dtype = kl_contraction_dtype(a's). */
int kl_ref_dot(const kl_tensor *a, const kl_tensor *b, bool trans_a, bool trans_b, kl_dtype out_dt, kl_tensor **out,
               char *err, size_t errlen);
/* Element-wise with numpy broadcasting; default dtype = a's (unary: x's). */
int kl_ref_binary(kl_binop op, const kl_tensor *a, const kl_tensor *b, kl_dtype out_dt, kl_tensor **out, char *err,
                  size_t errlen);
int kl_ref_unary(kl_unop op, const kl_tensor *x, kl_dtype out_dt, kl_tensor **out, char *err, size_t errlen);
/* min(max(x, lo), hi); lo <= hi required; default dtype = x's. For integer x and output
 * the bounds are ceil(lo) / floor(hi). */
int kl_ref_clip(const kl_tensor *x, double lo, double hi, kl_dtype out_dt, kl_tensor **out, char *err, size_t errlen);
/* cond != 0 ? a : b, all three broadcast together; default dtype = a's. */
int kl_ref_where(const kl_tensor *cond, const kl_tensor *a, const kl_tensor *b, kl_dtype out_dt, kl_tensor **out,
                 char *err, size_t errlen);
/* dtype cast: float -> float rounds to nearest even; float -> int truncates toward zero
 * and saturates to the target range (NaN -> 0); int -> int wraps (two's complement);
 * int -> float rounds to nearest even; anything -> i1 is (x != 0). */
int kl_ref_convert(const kl_tensor *x, kl_dtype dt, kl_tensor **out, char *err, size_t errlen);
/* Data movement (result dtype = input's; copies in logical row-major order). */
int kl_ref_broadcast(const kl_tensor *x, const kl_shape *shape, kl_tensor **out, char *err, size_t errlen);
int kl_ref_transpose(const kl_tensor *x, int nperm, const int *perm, kl_tensor **out, char *err, size_t errlen);
int kl_ref_reshape(const kl_tensor *x, int rank, const int64_t *dims, kl_tensor **out, char *err, size_t errlen);
int kl_ref_slice(const kl_tensor *x, const int64_t *begin, const int64_t *end, const int64_t *step, kl_tensor **out,
                 char *err, size_t errlen);
/* All inputs must have the same dtype. */
int kl_ref_concat(int n, const kl_tensor *const *xs, int axis, kl_tensor **out, char *err, size_t errlen);
/* Reduce over axes (see kl_infer_reduce); default dtype = x's. max/min of an empty
 * extent give -inf/+inf (integer input: the input dtype's min/max), mean of none is NaN (ints: 0). */
int kl_ref_reduce(kl_reduce_op op, const kl_tensor *x, int naxes, const int *axes, bool keepdims, kl_dtype out_dt,
                  kl_tensor **out, char *err, size_t errlen);
/* exp(x - max) / sum(exp(x - max)) along axis, in double; default dtype = x's. */
int kl_ref_softmax(const kl_tensor *x, int axis, kl_dtype out_dt, kl_tensor **out, char *err, size_t errlen);
#endif
