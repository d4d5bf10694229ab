/* type.h — interned IR types.
 * Contract: types are immutable and interned per context, so two types are equal iff
 * their pointers are equal. Tensor and buffer types carry a shape and strides (in
 * elements; 0 = broadcast; permuted = NHWC-like layout); row-major strides are the
 * default and are not printed. Text syntax:
 *   i1 i8 i32 i64 index f16 bf16 f32 f64 f8e4m3fn f8e5m2 f8e4m3fnuz f8e5m2fnuz token
 *   tensor<2x3xf32>  tensor<1x4x7x7xf16, strides=[196,1,28,4]>
 *   buffer<64x64xf32, lds>  buffer<8xf32, private>  buffer<4x4xf32, strides=[1,4]>
 *   vector<4xf16>   (fn types appear only in op signatures) */
#ifndef KL_TYPE_H
#define KL_TYPE_H
#include "core/context.h"
#include "core/dtype.h"
#include "core/shape.h"

/* One element-type enum: the element kinds ARE the kl_dtype values (core/dtype.h), so a
 * dtype is a kind ((kl_type_kind)dt) and an element kind below KL_DT_COUNT is a dtype
 * ((kl_dtype)kind); index and the non-scalar kinds follow. Scalar kinds are
 * 0..KL_TY_INDEX. Nothing stores these numbers (bundles and the text IR spell types
 * out), so the values may change with kl_dtype. */
typedef enum {
  KL_TY_F32 = KL_DT_F32,
  KL_TY_F16 = KL_DT_F16,
  KL_TY_BF16 = KL_DT_BF16,
  KL_TY_I8 = KL_DT_I8,
  KL_TY_I32 = KL_DT_I32,
  KL_TY_F64 = KL_DT_F64,
  KL_TY_I64 = KL_DT_I64,
  KL_TY_I1 = KL_DT_I1,
  KL_TY_F8E4M3FN = KL_DT_F8E4M3FN, /* fp8: storage types, computed on in f32 */
  KL_TY_F8E5M2 = KL_DT_F8E5M2,
  KL_TY_F8E4M3FNUZ = KL_DT_F8E4M3FNUZ,
  KL_TY_F8E5M2FNUZ = KL_DT_F8E5M2FNUZ,
  KL_TY_U8 = KL_DT_U8,
  KL_TY_INDEX = KL_DT_COUNT,
  KL_TY_TENSOR,
  KL_TY_BUFFER,
  KL_TY_VECTOR,
  KL_TY_TOKEN
} kl_type_kind;

typedef enum { KL_SPACE_GLOBAL = 0, KL_SPACE_LDS = 3, KL_SPACE_PRIVATE = 5 } kl_space;

/* The shape limits (KL_MAX_RANK, KL_MAX_DIM, KL_MAX_NUMEL) and their one check,
 * kl_shape_check, are core/shape.h's: IR types, kl_shape and host tensors share them. */

struct kl_type {
  kl_type_kind kind;
  const kl_type *elem; /* tensor/buffer/vector */
  int rank;
  const int64_t *shape;   /* rank entries */
  const int64_t *strides; /* rank entries (tensor/buffer) */
  kl_space space;         /* buffer */
  const char *text;       /* canonical printed form (interned) */
};

const kl_type *kl_type_scalar(kl_ctx *ctx, kl_type_kind kind);
const kl_type *kl_type_i1(kl_ctx *ctx);
const kl_type *kl_type_i32(kl_ctx *ctx);
const kl_type *kl_type_i64(kl_ctx *ctx);
const kl_type *kl_type_index(kl_ctx *ctx);
const kl_type *kl_type_f32(kl_ctx *ctx);
const kl_type *kl_type_f64(kl_ctx *ctx);
const kl_type *kl_type_token(kl_ctx *ctx);
/* strides may be NULL for row-major. Returns NULL (no diagnostic: callers that take user
 * input call kl_shape_check first) for a shape outside kl_shape_check's limits or a
 * non-scalar element type. */
const kl_type *kl_type_tensor(kl_ctx *ctx, const kl_type *elem, int rank, const int64_t *shape, const int64_t *strides);
const kl_type *kl_type_buffer(kl_ctx *ctx, const kl_type *elem, int rank, const int64_t *shape, const int64_t *strides,
                              kl_space space);
const kl_type *kl_type_vector(kl_ctx *ctx, const kl_type *elem, int n);

bool kl_type_is_int(const kl_type *t);      /* i1 i8 u8 i32 i64 index */
bool kl_type_is_unsigned(const kl_type *t); /* u8 / i1, scalar or vector: zero-extended, unsigned order */
bool kl_type_is_float(const kl_type *t);    /* f16 bf16 f32 f64, fp8 */
bool kl_type_is_fp8(const kl_type *t);      /* scalar or vector of an fp8 type */
bool kl_type_is_scalar(const kl_type *t);
/* The dtype of a scalar type ((kl_dtype)t->kind); KL_DT_NONE for index, non-scalar
 * types and NULL. */
kl_dtype kl_type_dtype(const kl_type *t);
bool kl_type_is_shaped(const kl_type *t); /* tensor or buffer */
int kl_type_bits(const kl_type *t);       /* scalar bit width (index = 64), vector: total */
int64_t kl_type_numel(const kl_type *t);
bool kl_type_is_row_major(const kl_type *t);
void kl_row_major_strides(int rank, const int64_t *shape, int64_t *strides);
const char *kl_type_str(const kl_type *t); /* canonical text */
/* Name of a scalar kind ("f32"); NULL if not scalar. */
const char *kl_scalar_name(kl_type_kind k);
/* Parse a scalar type name; returns -1 if unknown. */
int kl_scalar_kind_from_name(const char *s, size_t n);
#endif
