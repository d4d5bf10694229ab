/* refops.h — reference ("oracle") kernels over host tensors, and the output-shape
 * inference they share with the graph layer.
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
 *    output dtype's conversion (tensor.h: RNE for f16/bf16/f32; truncate + saturate for
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
#include "runtime/tensor.h"

typedef enum kl_binop {
  KL_BIN_ADD, KL_BIN_SUB, KL_BIN_MUL, KL_BIN_DIV, KL_BIN_MAX, KL_BIN_MIN, KL_BIN_POW, KL_BIN_COUNT
} kl_binop;
typedef enum kl_unop {
  KL_UN_NEG, KL_UN_ABS, KL_UN_EXP, KL_UN_LOG, KL_UN_SQRT, KL_UN_RSQRT, KL_UN_TANH,
  KL_UN_SIGMOID, KL_UN_RELU, KL_UN_COUNT
} kl_unop;
typedef enum kl_reduce_op { KL_RED_SUM, KL_RED_MAX, KL_RED_MEAN, KL_RED_MIN, KL_RED_COUNT } kl_reduce_op;

/* Names as in the graph IR ("add", "sigmoid", "sum"); from_name returns -1 if unknown. */
const char *kl_binop_name(kl_binop op);
int         kl_binop_from_name(const char *name);
const char *kl_unop_name(kl_unop op);
int         kl_unop_from_name(const char *name);
const char *kl_reduce_name(kl_reduce_op op);
int         kl_reduce_from_name(const char *name);
/* Scalar semantics of the element-wise ops (double path and int64 path). */
double  kl_binop_f64(kl_binop op, double a, double b);
int64_t kl_binop_i64(kl_binop op, int64_t a, int64_t b);
double  kl_unop_f64(kl_unop op, double x);
int64_t kl_unop_i64(kl_unop op, int64_t x);   /* NEG ABS RELU only; others go via double */
bool    kl_unop_has_int(kl_unop op);

typedef struct kl_conv2d_params {
  int64_t stride[2];    /* h, w; >= 1 */
  int64_t pad[4];       /* top, bottom, left, right; >= 0 */
  int64_t dilation[2];  /* h, w; >= 1 */
  int64_t groups;       /* >= 1 */
} kl_conv2d_params;
#define KL_CONV2D_DEFAULT ((kl_conv2d_params){{1, 1}, {0, 0, 0, 0}, {1, 1}, 1})

/* ---- output shape inference (pure; op names the op in messages) ---- */
/* numpy broadcasting of two shapes. */
int kl_infer_broadcast(const char *op, const kl_shape *a, const kl_shape *b, kl_shape *out, char *err, size_t errlen);
/* in must broadcast to target (numpy rules, target rank >= in rank, result = target). */
int kl_infer_broadcast_to(const char *op, const kl_shape *in, const kl_shape *target, char *err, size_t errlen);
int kl_infer_where(const kl_shape *cond, const kl_shape *a, const kl_shape *b, kl_shape *out, char *err, size_t errlen);
/* Ho = (H + pt + pb - dil_h*(Y-1) - 1)/stride_h + 1 (likewise Wo); errors if the
 * (dilated) filter does not fit the padded input, on C != (C/G)*G, K % G != 0, bad
 * parameters or ranks other than 4. */
int kl_infer_conv2d(const kl_shape *in, const kl_shape *filter, const kl_conv2d_params *p, kl_shape *out, char *err, size_t errlen);
/* a: [..., M, K] ([..., K, M] if trans_a); b: [..., K, N] ([..., N, K] if trans_b);
 * ranks >= 2; batch dims broadcast numpy-style; out: [batch..., M, N]. */
int kl_infer_dot(const kl_shape *a, const kl_shape *b, bool trans_a, bool trans_b, kl_shape *out, char *err, size_t errlen);
/* out.dim[i] = in.dim[perm[i]]; nperm must equal the rank. */
int kl_infer_transpose(const kl_shape *in, int nperm, const int *perm, kl_shape *out, char *err, size_t errlen);
/* dims may hold one -1 (inferred); the element counts must match. */
int kl_infer_reshape(const kl_shape *in, int rank, const int64_t *dims, kl_shape *out, char *err, size_t errlen);
/* begin/end/step: rank entries each (step NULL = all 1). begin and end may be negative
 * (+ size), must then lie in [0, size]; end < begin gives an empty axis; step >= 1.
 * out_begin (may be NULL) receives the normalised begins. */
int kl_infer_slice(const kl_shape *in, const int64_t *begin, const int64_t *end, const int64_t *step,
                   kl_shape *out, int64_t *out_begin, char *err, size_t errlen);
/* All ranks equal, sizes equal except along axis; n >= 1. */
int kl_infer_concat(int n, const kl_shape *ins, int axis, kl_shape *out, char *err, size_t errlen);
/* axes: naxes distinct axes (naxes 0: nothing reduced); keepdims keeps them as size 1.
 * reduced (may be NULL, KL_TENSOR_MAX_RANK entries) marks the reduced input axes. */
int kl_infer_reduce(const char *op, const kl_shape *in, int naxes, const int *axes, bool keepdims,
                    kl_shape *out, bool *reduced, char *err, size_t errlen);
/* Checks the axis and returns it normalised (>= 0) in *axis_out. */
int kl_normalize_axis(const char *op, const kl_shape *in, int axis, int *axis_out, char *err, size_t errlen);

/* Allocates (*out NULL) or checks (*out given) the destination, per the contract. */
int kl_ref_prepare_out(const char *op, const kl_shape *shape, kl_dtype dt, kl_tensor **out, char *err, size_t errlen);

/* ---- kernels ---- */
/* Result dtype of a contraction (conv2d, dot) of inputs of dtype `in`: i1 / i8 / i32 ->
 * i32, i64 -> i64 (integers accumulate exactly and return i32, as MIGraphX's quant_dot
 * and rocMLIR); floats -> `in`. The graph layer infers the same (dialect_graph.h). */
kl_dtype kl_contraction_dtype(kl_dtype in);
/* conv2d: default dtype = kl_contraction_dtype(input's). */
int kl_ref_conv2d(const kl_tensor *input, const kl_tensor *filter, const kl_conv2d_params *p,
                  kl_dtype out_dt, kl_tensor **out, char *err, size_t errlen);
/* Batched matmul; default dtype = kl_contraction_dtype(a's). */
int kl_ref_dot(const kl_tensor *a, const kl_tensor *b, bool trans_a, bool trans_b,
               kl_dtype out_dt, kl_tensor **out, char *err, size_t errlen);
/* Element-wise with numpy broadcasting; default dtype = a's (unary: x's). */
int kl_ref_binary(kl_binop op, const kl_tensor *a, const kl_tensor *b, kl_dtype out_dt, kl_tensor **out, char *err, size_t errlen);
int kl_ref_unary(kl_unop op, const kl_tensor *x, kl_dtype out_dt, kl_tensor **out, char *err, size_t errlen);
/* min(max(x, lo), hi); lo <= hi required; default dtype = x's. For integer x and output
 * the bounds are ceil(lo) / floor(hi). */
int kl_ref_clip(const kl_tensor *x, double lo, double hi, kl_dtype out_dt, kl_tensor **out, char *err, size_t errlen);
/* cond != 0 ? a : b, all three broadcast together; default dtype = a's. */
int kl_ref_where(const kl_tensor *cond, const kl_tensor *a, const kl_tensor *b, kl_dtype out_dt, kl_tensor **out, char *err, size_t errlen);
/* dtype cast: float -> float rounds to nearest even; float -> int truncates toward zero
 * and saturates to the target range (NaN -> 0); int -> int wraps (two's complement);
 * int -> float rounds to nearest even; anything -> i1 is (x != 0). */
int kl_ref_convert(const kl_tensor *x, kl_dtype dt, kl_tensor **out, char *err, size_t errlen);
/* Data movement (result dtype = input's; copies in logical row-major order). */
int kl_ref_broadcast(const kl_tensor *x, const kl_shape *shape, kl_tensor **out, char *err, size_t errlen);
int kl_ref_transpose(const kl_tensor *x, int nperm, const int *perm, kl_tensor **out, char *err, size_t errlen);
int kl_ref_reshape(const kl_tensor *x, int rank, const int64_t *dims, kl_tensor **out, char *err, size_t errlen);
int kl_ref_slice(const kl_tensor *x, const int64_t *begin, const int64_t *end, const int64_t *step,
                 kl_tensor **out, char *err, size_t errlen);
/* All inputs must have the same dtype. */
int kl_ref_concat(int n, const kl_tensor *const *xs, int axis, kl_tensor **out, char *err, size_t errlen);
/* Reduce over axes (see kl_infer_reduce); default dtype = x's. max/min of an empty
 * extent give -inf/+inf (integer input: the input dtype's min/max), mean of none is NaN (ints: 0). */
int kl_ref_reduce(kl_reduce_op op, const kl_tensor *x, int naxes, const int *axes, bool keepdims,
                  kl_dtype out_dt, kl_tensor **out, char *err, size_t errlen);
/* exp(x - max) / sum(exp(x - max)) along axis, in double; default dtype = x's. */
int kl_ref_softmax(const kl_tensor *x, int axis, kl_dtype out_dt, kl_tensor **out, char *err, size_t errlen);
#endif
