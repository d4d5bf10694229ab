/* dtype.h — the element types (kl_dtype: names, sizes, int ranges, loads and stores
 * through a dtype) and the IEEE binary16 (f16) / bfloat16 (bf16) conversions under them.
 * Contract: pure functions, no state, no allocation; f16/bf16 values are bit patterns
 * held in uint16_t. Storing a double rounds through the dtype: f16/bf16/f32 to nearest
 * even; into an integer dtype it truncates toward zero and saturates to the dtype's range
 * (NaN -> 0; i1: nonzero, NaN included, -> 1). Storing an int64 into a narrower integer
 * dtype wraps (two's complement; i1: nonzero -> 1); into a float dtype it rounds to
 * nearest even. u8 is unsigned (0..255: loads zero-extend, a double stores truncated and
 * saturated to [0, 255], an int64 stores wrapped mod 256). kl_dtype is the one element-type enum: core/type.h's scalar kinds
 * KL_TY_F32 ... KL_TY_I1 are these values (a dtype is a kl_type_kind as it is; the kind
 * enum adds index, tensor, buffer, vector and token after KL_DT_COUNT).
 * f16/bf16 rounding:
 * Narrowing conversions (f32/f64 -> f16/bf16) round to nearest, ties to even, in one
 * step from the source value (no double rounding through f32); overflow gives +-inf,
 * values below half the smallest subnormal give a signed zero, subnormal results are
 * produced exactly. NaN stays NaN (quiet, sign and the top payload bits kept; a payload
 * that would vanish becomes the canonical quiet NaN). Widening conversions are exact.
 * fp8 (one byte each; sign, exponent, mantissa; widening to f32/f64 is exact):
 *   f8e4m3fn   OCP E4M3: bias 7, no inf, NaN = S.1111.111 (0x7f/0xff), max 448, min
 *              subnormal 2^-9, signed zeros.
 *   f8e5m2     OCP E5M2: bias 15, IEEE-like: S.11111.00 = inf, S.11111.xx NaN, max 57344.
 *   f8e4m3fnuz AMD (gfx942) E4M3: bias 8, no inf, no -0, the one NaN is 0x80, max 240.
 *   f8e5m2fnuz AMD (gfx942) E5M2: bias 16, no inf, no -0, the one NaN is 0x80, max 57344.
 * Narrowing to fp8 rounds to nearest, ties to even, in one step from the source value;
 * subnormal results are exact; NaN -> NaN (fn: S.1111.111 with the sign kept; e5m2:
 * the quiet S.11111.10; fnuz: 0x80). Overflow (a rounded magnitude above max) and +-inf:
 * e5m2 gives +-inf (IEEE); the formats without inf saturate to +-max (MIGraphX's clipping
 * conversion, cvt.rn.satfinite on sm_90). fnuz: a result of zero is +0 (no -0). */
#ifndef KL_DTYPE_H
#define KL_DTYPE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum kl_dtype {
  KL_DT_NONE = -1, /* "unspecified": ops use their input's dtype */
  KL_DT_F32 = 0,
  KL_DT_F16,
  KL_DT_BF16,
  KL_DT_I8,
  KL_DT_I32,
  KL_DT_F64,
  KL_DT_I64,
  KL_DT_I1,         /* internal / extra */
  KL_DT_F8E4M3FN,   /* OCP FP8 E4M3 (storage only; ops compute in f32) */
  KL_DT_F8E5M2,     /* OCP FP8 E5M2 */
  KL_DT_F8E4M3FNUZ, /* AMD gfx942 FP8 E4M3 "fnuz" */
  KL_DT_F8E5M2FNUZ, /* AMD gfx942 FP8 E5M2 "fnuz" */
  KL_DT_U8,         /* unsigned 8-bit integer ("u8"; MLIR / MIGraphX spell it "ui8") */
  KL_DT_COUNT
} kl_dtype;

const char *kl_dtype_name(kl_dtype dt);        /* "f32" ...; "?" if invalid */
kl_dtype kl_dtype_from_name(const char *name); /* KL_DT_NONE if unknown; "ui8" = "u8" */
bool kl_dtype_valid(kl_dtype dt);
size_t kl_dtype_size(kl_dtype dt);   /* bytes per element (i1: 1) */
bool kl_dtype_is_float(kl_dtype dt); /* f16 bf16 f32 f64 and the fp8 formats */
bool kl_dtype_is_fp8(kl_dtype dt);
bool kl_dtype_is_int(kl_dtype dt);      /* i1 i8 u8 i32 i64 */
bool kl_dtype_is_unsigned(kl_dtype dt); /* u8 (and i1): zero-extended, unsigned order */
int64_t kl_dtype_int_min(kl_dtype dt);  /* integer dtypes only */
int64_t kl_dtype_int_max(kl_dtype dt);

/* Scalar conversions through a dtype (see the contract for the rounding rules).
 * p points at one element. */
/* double kl_dtype_load_f64(kl_dtype dt, const void *p): inline, at the end of this file */
int64_t kl_dtype_load_i64(kl_dtype dt, const void *p); /* floats: trunc + saturate */
void kl_dtype_store_f64(kl_dtype dt, void *p, double v);
void kl_dtype_store_i64(kl_dtype dt, void *p, int64_t v);
double kl_dtype_round(kl_dtype dt, double v); /* value after store + load */
int64_t kl_f64_to_i64_sat(double v);          /* trunc toward 0, saturate, NaN->0 */

/* Result dtype of a contraction (conv2d, dot) of inputs of dtype `in`: i1 / i8 / i32 ->
 * i32, i64 -> i64 (integers accumulate exactly and return i32, as MIGraphX's quant_dot
 * and rocMLIR); floats -> `in`. The graph layer infers the same (dialect_graph.h), the
 * reference kernels (runtime/refops.h) use it as their default result dtype. */
kl_dtype kl_contraction_dtype(kl_dtype in);


uint16_t kl_f64_to_f16(double x);
uint16_t kl_f32_to_f16(float x);
/* f16 -> f64, exact, inline and without branches on the sign (the tuning check widens
 * millions of elements with it): the magnitude bits moved into an f32 and scaled by 2^112
 * give every normal and subnormal exactly; inf stays inf, a NaN stays a NaN (made quiet,
 * sign and payload kept). */
static inline double kl_f16_to_f64(uint16_t h) {
  uint32_t em = h & 0x7fffu, u = em << 13, v;
  float f;
  __builtin_memcpy(&f, &u, 4);
  f *= 0x1p112f; /* the magnitude times 2^-112 as an f32 (normal or subnormal): exact */
  __builtin_memcpy(&v, &f, 4);
  if (em >= 0x7c00u) /* inf; NaN (made quiet) */
    v = 0x7f800000u | (em & 0x3ffu) << 13 | ((em & 0x3ffu) ? 0x400000u : 0u);
  v |= (uint32_t)(h & 0x8000u) << 16;
  __builtin_memcpy(&f, &v, 4);
  return f;
}
float kl_f16_to_f32(uint16_t h);

uint16_t kl_f64_to_bf16(double x);
uint16_t kl_f32_to_bf16(float x);
/* bf16 -> f32 / f64, exact: bf16 is the top half of an f32 (a NaN stays a NaN, made quiet
 * in f64, sign and payload kept). */
static inline float kl_bf16_to_f32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
static inline double kl_bf16_to_f64(uint16_t b) { return kl_bf16_to_f32(b); }

/* fp8 conversions (dt one of the four fp8 dtypes; see the contract). */
uint8_t kl_f64_to_fp8(kl_dtype dt, double x);
double kl_fp8_to_f64(kl_dtype dt, uint8_t b);
double kl_fp8_max(kl_dtype dt); /* the largest finite value */

/* Round a double to the nearest representable f16 / bf16 / f32 value (as a double). */
double kl_round_f16(double x);
double kl_round_bf16(double x);
double kl_round_f32(double x);

/* kl_dtype_load_f64 inline: on a constant dtype the switch folds to one load (the element
 * loops of the tuning check and kl_tensor_compare); integers load through
 * kl_dtype_load_i64. */
static inline double kl_dtype_load_f64(kl_dtype dt, const void *p) {
  float f;
  double d;
  uint16_t h;
  switch (dt) {
    case KL_DT_F32: return (void)__builtin_memcpy(&f, p, 4), f;
    case KL_DT_F64: return (void)__builtin_memcpy(&d, p, 8), d;
    case KL_DT_F16: return (void)__builtin_memcpy(&h, p, 2), kl_f16_to_f64(h);
    case KL_DT_BF16: return (void)__builtin_memcpy(&h, p, 2), kl_bf16_to_f64(h);
    case KL_DT_F8E4M3FN:
    case KL_DT_F8E5M2:
    case KL_DT_F8E4M3FNUZ:
    case KL_DT_F8E5M2FNUZ: return kl_fp8_to_f64(dt, *(const uint8_t *)p);
    case KL_DT_I8:
    case KL_DT_U8:
    case KL_DT_I32:
    case KL_DT_I64:
    case KL_DT_I1: return (double)kl_dtype_load_i64(dt, p);
    default: return 0;
  }
}
#endif
