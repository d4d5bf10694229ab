/* type.c — construction and interning of types by their canonical text. */
#include "core/type.h"
#include <string.h>
#include <stdio.h>

void *kl__ctx_lookup_type(kl_ctx *ctx, const char *text);
void kl__ctx_store_type(kl_ctx *ctx, const char *text, void *t);

static const char *scalar_names[] = {
  [KL_TY_I1] = "i1",
  [KL_TY_I8] = "i8",
  [KL_TY_I32] = "i32",
  [KL_TY_I64] = "i64",
  [KL_TY_INDEX] = "index",
  [KL_TY_F16] = "f16",
  [KL_TY_BF16] = "bf16",
  [KL_TY_F32] = "f32",
  [KL_TY_F64] = "f64",
  [KL_TY_F8E4M3FN] = "f8e4m3fn",
  [KL_TY_F8E5M2] = "f8e5m2",
  [KL_TY_F8E4M3FNUZ] = "f8e4m3fnuz",
  [KL_TY_F8E5M2FNUZ] = "f8e5m2fnuz",
  [KL_TY_U8] = "u8",
};
const char *kl_scalar_name(kl_type_kind k) { return (unsigned)k <= KL_TY_INDEX ? scalar_names[k] : NULL; }
int kl_scalar_kind_from_name(const char *s, size_t n) {
  for (int k = 0; k <= KL_TY_INDEX; k++)
    if (strlen(scalar_names[k]) == n && memcmp(scalar_names[k], s, n) == 0) return k;
  return -1;
}

static const kl_type *intern(kl_ctx *ctx, kl_type *proto, const char *text) {
  kl_type *t = kl__ctx_lookup_type(ctx, text);
  if (t) return t;
  kl_arena *a = kl_ctx_arena(ctx);
  t = kl_arena_dup(a, proto, sizeof *t);
  if (proto->rank) {
    t->shape = kl_arena_dup(a, proto->shape, proto->rank * sizeof(int64_t));
    if (proto->strides) t->strides = kl_arena_dup(a, proto->strides, proto->rank * sizeof(int64_t));
  }
  t->text = kl_intern(ctx, text);
  kl__ctx_store_type(ctx, text, t);
  return t;
}

const kl_type *kl_type_scalar(kl_ctx *ctx, kl_type_kind kind) {
  if ((unsigned)kind > KL_TY_INDEX && kind != KL_TY_TOKEN) return NULL;
  kl_type proto = { .kind = kind };
  return intern(ctx, &proto, kind == KL_TY_TOKEN ? "token" : scalar_names[kind]);
}
const kl_type *kl_type_i1(kl_ctx *c) { return kl_type_scalar(c, KL_TY_I1); }
const kl_type *kl_type_i32(kl_ctx *c) { return kl_type_scalar(c, KL_TY_I32); }
const kl_type *kl_type_i64(kl_ctx *c) { return kl_type_scalar(c, KL_TY_I64); }
const kl_type *kl_type_index(kl_ctx *c) { return kl_type_scalar(c, KL_TY_INDEX); }
const kl_type *kl_type_f32(kl_ctx *c) { return kl_type_scalar(c, KL_TY_F32); }
const kl_type *kl_type_f64(kl_ctx *c) { return kl_type_scalar(c, KL_TY_F64); }
const kl_type *kl_type_token(kl_ctx *c) { return kl_type_scalar(c, KL_TY_TOKEN); }


/* core/shape's (saturating) row-major strides, for any rank up to KL_MAX_RANK. */
void kl_row_major_strides(int rank, const int64_t *shape, int64_t *strides) {
  kl_strides_row_major(rank, shape, strides);
}

static const kl_type *shaped(kl_ctx *ctx, kl_type_kind kind, const kl_type *elem, int rank, const int64_t *shape,
                             const int64_t *strides, kl_space space) {
  if (!elem || !kl_type_is_scalar(elem) || !kl_shape_check(rank, shape, strides, NULL, 0)) return NULL;
  int64_t rm[KL_MAX_RANK];
  kl_row_major_strides(rank, shape, rm);
  bool row_major = true;
  if (strides)
    for (int i = 0; i < rank; i++)
      if (strides[i] != rm[i]) row_major = false;
  kl_sb sb = { 0 };
  kl_sb_puts(&sb, kind == KL_TY_TENSOR ? "tensor<" : "buffer<");
  for (int i = 0; i < rank; i++) kl_sb_printf(&sb, "%lldx", (long long)shape[i]);
  kl_sb_puts(&sb, elem->text);
  if (!row_major) {
    kl_sb_puts(&sb, ", strides=[");
    for (int i = 0; i < rank; i++) kl_sb_printf(&sb, "%s%lld", i ? "," : "", (long long)strides[i]);
    kl_sb_puts(&sb, "]");
  }
  if (kind == KL_TY_BUFFER && space == KL_SPACE_LDS) kl_sb_puts(&sb, ", lds");
  if (kind == KL_TY_BUFFER && space == KL_SPACE_PRIVATE) kl_sb_puts(&sb, ", private");
  kl_sb_puts(&sb, ">");
  kl_type proto = {
    .kind = kind, .elem = elem, .rank = rank, .shape = shape, .strides = row_major ? rm : strides, .space = space
  };
  const kl_type *t = intern(ctx, &proto, kl_sb_str(&sb));
  kl_sb_free(&sb);
  return t;
}
const kl_type *kl_type_tensor(kl_ctx *ctx, const kl_type *elem, int rank, const int64_t *shape,
                              const int64_t *strides) {
  return shaped(ctx, KL_TY_TENSOR, elem, rank, shape, strides, KL_SPACE_GLOBAL);
}
const kl_type *kl_type_buffer(kl_ctx *ctx, const kl_type *elem, int rank, const int64_t *shape, const int64_t *strides,
                              kl_space space) {
  if (space != KL_SPACE_GLOBAL && space != KL_SPACE_LDS && space != KL_SPACE_PRIVATE) return NULL;
  return shaped(ctx, KL_TY_BUFFER, elem, rank, shape, strides, space);
}
const kl_type *kl_type_vector(kl_ctx *ctx, const kl_type *elem, int n) {
  if (!elem || !kl_type_is_scalar(elem) || n <= 0) return NULL;
  char text[64];
  snprintf(text, sizeof text, "vector<%dx%s>", n, elem->text);
  int64_t shape = n;
  kl_type proto = { .kind = KL_TY_VECTOR, .elem = elem, .rank = 1, .shape = &shape };
  return intern(ctx, &proto, text);
}

bool kl_type_is_int(const kl_type *t) { return t && (t->kind == KL_TY_INDEX || kl_dtype_is_int((kl_dtype)t->kind)); }
bool kl_type_is_float(const kl_type *t) { return t && kl_dtype_is_float((kl_dtype)t->kind); }
bool kl_type_is_fp8(const kl_type *t) {
  if (t && t->kind == KL_TY_VECTOR) t = t->elem;
  return t && kl_dtype_is_fp8((kl_dtype)t->kind);
}
bool kl_type_is_unsigned(const kl_type *t) {
  if (t && t->kind == KL_TY_VECTOR) t = t->elem;
  return t && kl_dtype_is_unsigned((kl_dtype)t->kind);
}
bool kl_type_is_scalar(const kl_type *t) { return t && (unsigned)t->kind <= KL_TY_INDEX; }
kl_dtype kl_type_dtype(const kl_type *t) {
  return t && kl_dtype_valid((kl_dtype)t->kind) ? (kl_dtype)t->kind : KL_DT_NONE;
}
bool kl_type_is_shaped(const kl_type *t) { return t && (t->kind == KL_TY_TENSOR || t->kind == KL_TY_BUFFER); }
int kl_type_bits(const kl_type *t) {
  static const int bits[] = {
    [KL_TY_I1] = 1,     [KL_TY_I8] = 8,         [KL_TY_I32] = 32,       [KL_TY_I64] = 64, [KL_TY_INDEX] = 64,
    [KL_TY_F16] = 16,   [KL_TY_BF16] = 16,      [KL_TY_F32] = 32,       [KL_TY_F64] = 64, [KL_TY_F8E4M3FN] = 8,
    [KL_TY_F8E5M2] = 8, [KL_TY_F8E4M3FNUZ] = 8, [KL_TY_F8E5M2FNUZ] = 8, [KL_TY_U8] = 8,
  };
  if (kl_type_is_scalar(t)) return bits[t->kind];
  if (t && t->kind == KL_TY_VECTOR) return (int)t->shape[0] * kl_type_bits(t->elem);
  return 0;
}
int64_t kl_type_numel(const kl_type *t) {
  int64_t n = 1;
  for (int i = 0; t && i < t->rank; i++) n *= t->shape[i];
  return n;
}
bool kl_type_is_row_major(const kl_type *t) {
  int64_t rm[KL_MAX_RANK];
  kl_row_major_strides(t->rank, t->shape, rm);
  for (int i = 0; i < t->rank; i++)
    if (t->strides && t->strides[i] != rm[i]) return false;
  return true;
}
const char *kl_type_str(const kl_type *t) { return t ? t->text : "<null-type>"; }
