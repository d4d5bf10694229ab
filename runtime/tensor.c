/* tensor.c — host tensors (see tensor.h); dtypes: core/dtype.c, shapes: core/shape.c. */
#include "runtime/tensor.h"
#include "runtime/threadpool.h"
#include "runtime/rng.h"
#include "core/arena.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ---------------------------------------------------------------- creation */

/* Validates shape/strides, and computes numel and the element span (max offset + 1). */
static int check_geometry(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides, int64_t *numel_out,
                          int64_t *span_out, char *err, size_t errlen) {
  if (!kl_dtype_valid(dt)) return kl_errf(err, errlen, "tensor: invalid dtype %d", (int)dt);
  char why[512]; /* the shape limits (core/shape.h): numel, offsets and bytes fit int64 */
  if (!kl_shape_check(rank, shape, strides, why, sizeof why)) return kl_errf(err, errlen, "tensor: %s", why);
  int64_t numel = 1;
  for (int i = 0; i < rank; i++) numel *= shape[i];
  int64_t span = 0;
  if (numel > 0) {
    int64_t maxoff = 0, rm[KL_MAX_RANK];
    if (!strides) {
      kl_strides_row_major(rank, shape, rm);
      strides = rm;
    }
    for (int i = 0; i < rank; i++) maxoff += (shape[i] - 1) * strides[i];
    span = maxoff + 1;
  }
  *numel_out = numel;
  *span_out = span;
  return 0;
}

static kl_tensor *new_header(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides) {
  kl_tensor *t = kl_xcalloc(1, sizeof *t);
  t->refcount = 1;
  t->dtype = dt;
  t->rank = rank;
  for (int i = 0; i < rank; i++) t->shape[i] = shape[i];
  if (strides)
    for (int i = 0; i < rank; i++) t->strides[i] = strides[i];
  else
    kl_strides_row_major(rank, shape, t->strides);
  return t;
}

kl_tensor *kl_tensor_zeros(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides, char *err,
                           size_t errlen) {
  int64_t numel, span;
  if (check_geometry(dt, rank, shape, strides, &numel, &span, err, errlen)) return NULL;
  if (strides && !kl_strides_nonoverlapping(rank, shape, strides)) {
    char b1[256], b2[256];
    kl_errf(err, errlen, "tensor: strides %s overlap for shape %s (broadcast strides are for views only)",
            kl_dims_format(rank, strides, b1, sizeof b1), kl_dims_format(rank, shape, b2, sizeof b2));
    return NULL;
  }
  size_t nbytes = (size_t)span * kl_dtype_size(dt);
  void *data = calloc(nbytes ? nbytes : 1, 1);
  if (!data) {
    kl_errf(err, errlen, "tensor: cannot allocate %zu bytes", nbytes);
    return NULL;
  }
  kl_tensor *t = new_header(dt, rank, shape, strides);
  t->data = data;
  t->nbytes = nbytes;
  t->owns_data = true;
  return t;
}

/* Walks a tensor's elements in logical row-major order; off is the element offset. */
typedef struct {
  int rank;
  const int64_t *shape, *strides;
  int64_t idx[KL_MAX_RANK], off;
} walk;
static void walk_init(walk *w, const kl_tensor *t) {
  w->rank = t->rank;
  w->shape = t->shape;
  w->strides = t->strides;
  memset(w->idx, 0, sizeof w->idx);
  w->off = t->offset;
}
static void walk_next(walk *w) {
  for (int d = w->rank - 1; d >= 0; d--) {
    w->off += w->strides[d];
    if (++w->idx[d] < w->shape[d]) return;
    w->off -= w->strides[d] * w->shape[d];
    w->idx[d] = 0;
  }
}
/* Strides are those of the row-major layout (dimensions of extent 1 may have any stride). */
static bool is_row_major(const kl_tensor *t) {
  int64_t s = 1;
  for (int d = t->rank - 1; d >= 0; d--) {
    if (t->shape[d] != 1 && t->strides[d] != s) return false;
    s *= t->shape[d];
  }
  return true;
}
static inline void *at(const kl_tensor *t, int64_t off) {
  return (char *)t->data + off * (int64_t)kl_dtype_size(t->dtype);
}

kl_tensor *kl_tensor_full(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides, double value, char *err,
                          size_t errlen) {
  kl_tensor *t = kl_tensor_zeros(dt, rank, shape, strides, err, errlen);
  if (!t || (value == 0 && !signbit(value))) return t; /* already +0 */
  int64_t n = kl_tensor_numel(t);
  walk w;
  walk_init(&w, t);
  for (int64_t i = 0; i < n; i++, walk_next(&w)) kl_dtype_store_f64(dt, at(t, w.off), value);
  return t;
}

kl_tensor *kl_tensor_ones(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides, char *err,
                          size_t errlen) {
  return kl_tensor_full(dt, rank, shape, strides, 1.0, err, errlen);
}

kl_tensor *kl_tensor_from_f64(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides, const double *values,
                              char *err, size_t errlen) {
  kl_tensor *t = kl_tensor_zeros(dt, rank, shape, strides, err, errlen);
  if (!t || !values) return t;
  int64_t n = kl_tensor_numel(t);
  walk w;
  walk_init(&w, t);
  for (int64_t i = 0; i < n; i++, walk_next(&w)) kl_dtype_store_f64(dt, at(t, w.off), values[i]);
  return t;
}

kl_tensor *kl_tensor_from_i64(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides,
                              const int64_t *values, char *err, size_t errlen) {
  kl_tensor *t = kl_tensor_zeros(dt, rank, shape, strides, err, errlen);
  if (!t || !values) return t;
  int64_t n = kl_tensor_numel(t);
  walk w;
  walk_init(&w, t);
  for (int64_t i = 0; i < n; i++, walk_next(&w)) kl_dtype_store_i64(dt, at(t, w.off), values[i]);
  return t;
}

/* Row-major float tensors: every element takes the same number of generator draws (2 for a
 * uniform, 4 for a normal), so slices of the elements are filled on threads, each from the
 * generator advanced to its first element: the values of the serial loop, element for
 * element. */
typedef struct rand_slices {
  kl_tensor *t;
  kl_rng r;
  kl_dist dist;
  int64_t n, chunk;
} rand_slices;

static void rand_slice(void *user, int64_t c, int worker) {
  (void)worker;
  rand_slices *s = user;
  kl_rng r = s->r;
  int64_t start = c * s->chunk, end = start + s->chunk < s->n ? start + s->chunk : s->n;
  kl_rng_advance(&r, (uint64_t)start * (s->dist == KL_DIST_NORMAL ? 4 : 2));
  kl_dtype dt = s->t->dtype;
  size_t es = kl_dtype_size(dt);
  char *p = (char *)s->t->data + (size_t)s->t->offset * es;
  for (int64_t i = start; i < end; i++)
    kl_dtype_store_f64(dt, p + (size_t)i * es,
                       s->dist == KL_DIST_NORMAL ? kl_rng_normal(&r) : kl_rng_uniform_range(&r, -1.0, 1.0));
}

kl_tensor *kl_tensor_rand(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides, uint64_t seed,
                          kl_dist dist, char *err, size_t errlen) {
  if (dist != KL_DIST_UNIFORM && dist != KL_DIST_NORMAL) {
    kl_errf(err, errlen, "rand: unknown distribution %d", (int)dist);
    return NULL;
  }
  kl_tensor *t = kl_tensor_zeros(dt, rank, shape, strides, err, errlen);
  if (!t) return NULL;
  kl_rng r;
  kl_rng_seed(&r, seed, 0);
  int64_t n = kl_tensor_numel(t);
  bool isint = kl_dtype_is_int(dt);
  if (!isint && is_row_major(t)) {
    rand_slices s = { t, r, dist, n, (int64_t)1 << 18 };
    int64_t nchunks = (n + s.chunk - 1) / s.chunk;
    kl_threadpool *pool = nchunks > 1 ? kl_threadpool_create(0, NULL, 0) : NULL;
    if (pool) {
      kl_threadpool_parallel_for(pool, nchunks, rand_slice, &s);
      kl_threadpool_destroy(pool);
    } else {
      for (int64_t c = 0; c < nchunks; c++) rand_slice(&s, c, 0);
    }
    return t;
  }
  walk w;
  walk_init(&w, t);
  for (int64_t i = 0; i < n; i++, walk_next(&w)) {
    void *p = at(t, w.off);
    if (!isint) {
      kl_dtype_store_f64(dt, p, dist == KL_DIST_NORMAL ? kl_rng_normal(&r) : kl_rng_uniform_range(&r, -1.0, 1.0));
    } else if (dt == KL_DT_I1) {
      kl_dtype_store_i64(dt, p, dist == KL_DIST_NORMAL ? kl_rng_normal(&r) > 0 : (int64_t)kl_rng_below(&r, 2));
    } else if (dt == KL_DT_U8) {
      kl_dtype_store_i64(dt, p,
                         dist == KL_DIST_UNIFORM ? (int64_t)kl_rng_below(&r, 256)
                                                 : (int64_t)nearbyint(fabs(3.0 * kl_rng_normal(&r))));
    } else if (dist == KL_DIST_UNIFORM) {
      kl_dtype_store_i64(dt, p, (int64_t)kl_rng_below(&r, 16) - 8);
    } else {
      kl_dtype_store_f64(dt, p, nearbyint(3.0 * kl_rng_normal(&r)));
    }
  }
  return t;
}

kl_tensor *kl_tensor_wrap(void *data, size_t nbytes, bool take_ownership, kl_dtype dt, int rank, const int64_t *shape,
                          const int64_t *strides, int64_t offset, char *err, size_t errlen) {
  int64_t numel, span;
  if (check_geometry(dt, rank, shape, strides, &numel, &span, err, errlen)) return NULL;
  if (offset < 0 || offset > INT64_MAX / 16 - span) {
    kl_errf(err, errlen, "tensor: offset %lld out of range", (long long)offset);
    return NULL;
  }
  if (numel > 0 && (!data || (uint64_t)(offset + span) * kl_dtype_size(dt) > nbytes)) {
    char b1[256];
    kl_errf(err, errlen, "tensor: shape %s with these strides and offset %lld needs %llu bytes, the memory has %zu",
            kl_dims_format(rank, shape, b1, sizeof b1), (long long)offset,
            (unsigned long long)((uint64_t)(offset + span) * kl_dtype_size(dt)), nbytes);
    return NULL;
  }
  kl_tensor *t = new_header(dt, rank, shape, strides);
  t->data = data;
  t->nbytes = nbytes;
  t->offset = offset;
  t->owns_data = take_ownership;
  return t;
}

kl_tensor *kl_tensor_view(kl_tensor *base, int rank, const int64_t *shape, const int64_t *strides, int64_t offset,
                          char *err, size_t errlen) {
  if (!base) {
    kl_errf(err, errlen, "view: no base tensor");
    return NULL;
  }
  kl_tensor *t = kl_tensor_wrap(base->data, base->nbytes, false, base->dtype, rank, shape, strides, offset, err,
                                errlen);
  if (!t) return NULL;
  kl_tensor *owner = base->base ? base->base : base;
  t->base = kl_tensor_retain(owner);
  return t;
}

kl_tensor *kl_tensor_retain(kl_tensor *t) {
  if (t) t->refcount++;
  return t;
}

void kl_tensor_release(kl_tensor *t) {
  if (!t || --t->refcount > 0) return;
  if (t->device_free) t->device_free(t->device, t->device_ptr);
  if (t->owns_data) free(t->data);
  kl_tensor_release(t->base);
  free(t);
}

kl_shape kl_tensor_shape(const kl_tensor *t) { return kl_shape_make(t->rank, t->shape); }

int64_t kl_tensor_numel(const kl_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}

int kl_tensor_copy_into(kl_tensor *dst, const kl_tensor *src, char *err, size_t errlen) {
  kl_shape a = kl_tensor_shape(dst), b = kl_tensor_shape(src);
  if (!kl_shape_equal(&a, &b)) {
    char b1[256], b2[256];
    return kl_errf(err, errlen, "copy: shapes differ: %s <- %s", kl_shape_format(&a, b1, sizeof b1),
                   kl_shape_format(&b, b2, sizeof b2));
  }
  int64_t n = kl_tensor_numel(src);
  walk ws, wd;
  walk_init(&ws, src);
  walk_init(&wd, dst);
  size_t es = kl_dtype_size(src->dtype);
  bool ints = kl_dtype_is_int(src->dtype) && kl_dtype_is_int(dst->dtype);
  for (int64_t i = 0; i < n; i++, walk_next(&ws), walk_next(&wd)) {
    const void *ps = at(src, ws.off);
    void *pd = at(dst, wd.off);
    if (src->dtype == dst->dtype)
      memmove(pd, ps, es);
    else if (ints)
      kl_dtype_store_i64(dst->dtype, pd, kl_dtype_load_i64(src->dtype, ps));
    else
      kl_dtype_store_f64(dst->dtype, pd, kl_dtype_load_f64(src->dtype, ps));
  }
  return 0;
}

kl_tensor *kl_tensor_with_strides(const kl_tensor *t, const int64_t *strides, char *err, size_t errlen) {
  kl_tensor *c = kl_tensor_zeros(t->dtype, t->rank, t->shape, strides, err, errlen);
  if (!c) return NULL;
  kl_tensor_copy_into(c, t, NULL, 0);
  return c;
}

kl_tensor *kl_tensor_contiguous(const kl_tensor *t, char *err, size_t errlen) {
  return kl_tensor_with_strides(t, NULL, err, errlen);
}

kl_tensor *kl_tensor_as_layout(const kl_tensor *t, const char *layout, char *err, size_t errlen) {
  int64_t strides[KL_MAX_RANK];
  if (kl_layout_strides(layout, t->rank, t->shape, strides, err, errlen)) return NULL;
  return kl_tensor_with_strides(t, strides, err, errlen);
}

bool kl_tensor_same_layout(const kl_tensor *a, const kl_tensor *b) {
  kl_shape sa = kl_tensor_shape(a), sb = kl_tensor_shape(b);
  return kl_shape_equal(&sa, &sb) && kl_strides_equivalent(a->rank, a->shape, a->strides, b->strides);
}

bool kl_tensor_is_row_major(const kl_tensor *t) { return kl_strides_is_row_major(t->rank, t->shape, t->strides); }

char *kl_tensor_layout_str(const kl_tensor *t, char *buf, size_t n) {
  int perm[KL_MAX_RANK];
  if (!n) return buf;
  if (kl_tensor_is_row_major(t)) {
    snprintf(buf, n, "row_major");
    return buf;
  }
  if (kl_strides_to_perm(t->rank, t->shape, t->strides, perm)) {
    int64_t p64[KL_MAX_RANK];
    for (int i = 0; i < t->rank; i++) p64[i] = perm[i];
    char b[128];
    snprintf(buf, n, "perm=%s", kl_dims_format(t->rank, p64, b, sizeof b));
    return buf;
  }
  char b[256];
  snprintf(buf, n, "strides=%s", kl_dims_format(t->rank, t->strides, b, sizeof b));
  return buf;
}

/* ---------------------------------------------------------------- element access */

int kl_tensor_check_index(const kl_tensor *t, int n, const int64_t *idx, char *err, size_t errlen) {
  char b1[256], b2[256];
  if (n != t->rank)
    return kl_errf(err, errlen, "index: %d indices for a rank-%d tensor of shape %s", n, t->rank,
                   kl_dims_format(t->rank, t->shape, b1, sizeof b1));
  for (int i = 0; i < n; i++)
    if (idx[i] < 0 || idx[i] >= t->shape[i])
      return kl_errf(err, errlen, "index: %s out of bounds for shape %s", kl_dims_format(n, idx, b1, sizeof b1),
                     kl_dims_format(t->rank, t->shape, b2, sizeof b2));
  return 0;
}

int64_t kl_tensor_elem_offset(const kl_tensor *t, const int64_t *idx) {
  int64_t off = t->offset;
  for (int i = 0; i < t->rank; i++) off += idx[i] * t->strides[i];
  return off;
}
void *kl_tensor_elem_ptr(const kl_tensor *t, const int64_t *idx) { return at(t, kl_tensor_elem_offset(t, idx)); }
double kl_tensor_get(const kl_tensor *t, const int64_t *idx) {
  return kl_dtype_load_f64(t->dtype, kl_tensor_elem_ptr(t, idx));
}
void kl_tensor_set(kl_tensor *t, const int64_t *idx, double v) {
  kl_dtype_store_f64(t->dtype, kl_tensor_elem_ptr(t, idx), v);
}
int64_t kl_tensor_get_i64(const kl_tensor *t, const int64_t *idx) {
  return kl_dtype_load_i64(t->dtype, kl_tensor_elem_ptr(t, idx));
}
void kl_tensor_set_i64(kl_tensor *t, const int64_t *idx, int64_t v) {
  kl_dtype_store_i64(t->dtype, kl_tensor_elem_ptr(t, idx), v);
}

void kl_tensor_unravel(const kl_tensor *t, int64_t flat, int64_t *idx) {
  for (int i = t->rank - 1; i >= 0; i--) {
    int64_t s = t->shape[i] > 0 ? t->shape[i] : 1;
    idx[i] = flat % s;
    flat /= s;
  }
}
double kl_tensor_get_flat(const kl_tensor *t, int64_t flat) {
  int64_t idx[KL_MAX_RANK];
  kl_tensor_unravel(t, flat, idx);
  return kl_tensor_get(t, idx);
}
void kl_tensor_set_flat(kl_tensor *t, int64_t flat, double v) {
  int64_t idx[KL_MAX_RANK];
  kl_tensor_unravel(t, flat, idx);
  kl_tensor_set(t, idx, v);
}

void kl_tensor_to_f64(const kl_tensor *t, double *out) {
  int64_t n = kl_tensor_numel(t);
  walk w;
  walk_init(&w, t);
  for (int64_t i = 0; i < n; i++, walk_next(&w)) out[i] = kl_dtype_load_f64(t->dtype, at(t, w.off));
}
void kl_tensor_to_i64(const kl_tensor *t, int64_t *out) {
  int64_t n = kl_tensor_numel(t);
  walk w;
  walk_init(&w, t);
  for (int64_t i = 0; i < n; i++, walk_next(&w)) out[i] = kl_dtype_load_i64(t->dtype, at(t, w.off));
}

/* ---------------------------------------------------------------- printing */

typedef struct {
  const kl_tensor *t;
  bool summarize;
  int edge, precision, width, indent;
  kl_sb *sb;
} printer;

static void format_elem(const printer *p, const int64_t *idx, char *buf, size_t n) {
  const kl_tensor *t = p->t;
  if (t->dtype == KL_DT_I1)
    snprintf(buf, n, "%s", kl_tensor_get_i64(t, idx) ? "true" : "false");
  else if (kl_dtype_is_int(t->dtype))
    snprintf(buf, n, "%lld", (long long)kl_tensor_get_i64(t, idx));
  else
    snprintf(buf, n, "%.*g", p->precision, kl_tensor_get(t, idx));
}

/* Visits the displayed elements (fn may be NULL: printing mode). */
static void print_rec(printer *p, int d, int64_t *idx, bool measure) {
  const kl_tensor *t = p->t;
  if (d == t->rank) {
    char buf[64];
    format_elem(p, idx, buf, sizeof buf);
    int len = (int)strlen(buf);
    if (measure) {
      if (len > p->width) p->width = len;
      return;
    }
    for (int i = len; i < p->width; i++) kl_sb_putc(p->sb, ' ');
    kl_sb_puts(p->sb, buf);
    return;
  }
  int64_t n = t->shape[d];
  bool cut = p->summarize && n > 2 * (int64_t)p->edge;
  if (!measure) kl_sb_putc(p->sb, '[');
  bool first = true;
  for (int64_t i = 0; i < n; i++) {
    bool ell = false;
    if (cut && i == p->edge) { ell = true; }
    if (!measure && !first) {
      kl_sb_putc(p->sb, ',');
      if (d == t->rank - 1)
        kl_sb_putc(p->sb, ' ');
      else {
        for (int k = 0; k < t->rank - 1 - d; k++) kl_sb_putc(p->sb, '\n');
        for (int k = 0; k < p->indent + d + 1; k++) kl_sb_putc(p->sb, ' ');
      }
    }
    first = false;
    if (ell) {
      if (!measure) kl_sb_puts(p->sb, "...");
      i = n - p->edge - 1;
      continue;
    }
    idx[d] = i;
    print_rec(p, d + 1, idx, measure);
  }
  if (!measure) kl_sb_putc(p->sb, ']');
}

char *kl_tensor_tostring_ex(const kl_tensor *t, int64_t threshold, int edge, int precision) {
  kl_sb sb = { 0 };
  char b1[256];
  if (edge < 1) edge = 1;
  if (precision < 1) precision = 1;
  if (precision > 17) precision = 17;
  kl_sb_puts(&sb, "tensor(");
  int64_t numel = kl_tensor_numel(t);
  if (numel == 0) {
    kl_sb_printf(&sb, "[], shape=%s", kl_dims_format(t->rank, t->shape, b1, sizeof b1));
  } else {
    printer p = { t, numel > threshold, edge, precision, 0, 7, &sb };
    int64_t idx[KL_MAX_RANK] = { 0 };
    print_rec(&p, 0, idx, true);
    print_rec(&p, 0, idx, false);
  }
  kl_sb_printf(&sb, ", dtype=%s", kl_dtype_name(t->dtype));
  if (numel > 0 && !kl_tensor_is_row_major(t))
    kl_sb_printf(&sb, ", strides=%s", kl_dims_format(t->rank, t->strides, b1, sizeof b1));
  kl_sb_putc(&sb, ')');
  return kl_sb_take(&sb);
}

char *kl_tensor_tostring(const kl_tensor *t) { return kl_tensor_tostring_ex(t, 1000, 3, 6); }

/* ---------------------------------------------------------------- comparison */

void kl_default_tolerance(kl_dtype dt, double *rtol, double *atol) {
  double r = 0, a = 0;
  switch (dt) {
    case KL_DT_F32:
      r = 1e-5;
      a = 1e-6;
      break;
    case KL_DT_F16:
      r = 1e-2;
      a = 1e-3;
      break;
    case KL_DT_BF16:
      r = 2e-2;
      a = 1e-2;
      break;
    case KL_DT_F64:
      r = 1e-12;
      a = 1e-14;
      break;
    case KL_DT_F8E4M3FN: /* fp8: one unit in the last place (3 / 2 mantissa bits) */
    case KL_DT_F8E4M3FNUZ:
      r = 0.125;
      a = 1.0 / 128;
      break;
    case KL_DT_F8E5M2:
    case KL_DT_F8E5M2FNUZ:
      r = 0.25;
      a = 1.0 / 16384;
      break;
    default: break; /* integers: exact */
  }
  if (rtol) *rtol = r;
  if (atol) *atol = a;
}

/* The running result of a comparison. */
typedef struct {
  double max_abs, max_rel, first_a, first_b;
  int64_t mismatches, first;
} cmp_acc;

/* One pair (x from a, y from the reference b); false: a mismatch. */
static inline bool cmp_float(cmp_acc *c, double x, double y, double rtol, double atol) {
  double abs_err;
  bool ok;
  if (isnan(x) || isnan(y)) {
    ok = isnan(x) && isnan(y);
    abs_err = ok ? 0 : INFINITY;
  } else if (isinf(x) || isinf(y)) {
    ok = x == y;
    abs_err = ok ? 0 : INFINITY;
  } else {
    abs_err = fabs(x - y);
    ok = abs_err <= atol + rtol * fabs(y);
  }
  if (abs_err > c->max_abs) c->max_abs = abs_err;
  if (y != 0 && !isnan(y)) {
    double rel = isinf(y) ? (abs_err == 0 ? 0 : INFINITY) : abs_err / fabs(y);
    if (rel > c->max_rel) c->max_rel = rel;
  }
  return ok;
}
static inline bool cmp_int(cmp_acc *c, int64_t xi, int64_t yi, double rtol, double atol) {
  double y = (double)yi;
  uint64_t d = xi > yi ? (uint64_t)xi - (uint64_t)yi : (uint64_t)yi - (uint64_t)xi;
  double abs_err = (double)d;
  bool ok = xi == yi || abs_err <= atol + rtol * fabs(y);
  if (abs_err > c->max_abs) c->max_abs = abs_err;
  if (y != 0) {
    double rel = abs_err / fabs(y);
    if (rel > c->max_rel) c->max_rel = rel;
  }
  return ok;
}
static inline void cmp_miss(cmp_acc *c, int64_t i, double x, double y) {
  if (c->mismatches++ == 0) {
    c->first = i;
    c->first_a = x;
    c->first_b = y;
  }
}

/* Both row-major, one float dtype: a loop the compiler specialises per dtype. */
#define CMP_FLAT(DT, SIZE)                                                                           \
  case DT:                                                                                           \
    for (int64_t i = 0; i < n; i++) {                                                                \
      double x = kl_dtype_load_f64(DT, pa + i * (SIZE)), y = kl_dtype_load_f64(DT, pb + i * (SIZE)); \
      if (!cmp_float(&c, x, y, rtol, atol)) cmp_miss(&c, i, x, y);                                   \
    }                                                                                                \
    break;

int kl_tensor_compare(const kl_tensor *a, const kl_tensor *b, double rtol, double atol, kl_compare_result *res,
                      char *err, size_t errlen) {
  kl_shape sa = kl_tensor_shape(a), sb = kl_tensor_shape(b);
  memset(res, 0, sizeof *res);
  res->first_flat = -1;
  if (!kl_shape_equal(&sa, &sb)) {
    char b1[256], b2[256];
    return kl_errf(err, errlen, "compare: shapes differ: %s vs %s", kl_shape_format(&sa, b1, sizeof b1),
                   kl_shape_format(&sb, b2, sizeof b2));
  }
  double ra, aa, rb, ab;
  kl_default_tolerance(a->dtype, &ra, &aa);
  kl_default_tolerance(b->dtype, &rb, &ab);
  if (rtol < 0) rtol = ra > rb ? ra : rb;
  if (atol < 0) atol = aa > ab ? aa : ab;
  res->rtol = rtol;
  res->atol = atol;
  res->rank = a->rank;
  bool ints = kl_dtype_is_int(a->dtype) && kl_dtype_is_int(b->dtype);
  int64_t n = kl_tensor_numel(a);
  cmp_acc c = { 0, 0, 0, 0, 0, -1 };
  /* both row-major with one float dtype: flat offsets, no index walk (the index of the
   * first mismatch is unravelled from its flat position) */
  bool flat = !ints && a->dtype == b->dtype && is_row_major(a) && is_row_major(b) &&
      (a->dtype == KL_DT_F16 || a->dtype == KL_DT_BF16 || a->dtype == KL_DT_F32 || a->dtype == KL_DT_F64);
  if (flat) {
    const char *pa = at(a, a->offset), *pb = at(b, b->offset);
    switch (a->dtype) {
      CMP_FLAT(KL_DT_F16, 2)
      CMP_FLAT(KL_DT_BF16, 2)
      CMP_FLAT(KL_DT_F32, 4)
      CMP_FLAT(KL_DT_F64, 8)
      default: break;
    }
    if (c.mismatches)
      for (int64_t d = a->rank - 1, r = c.first; d >= 0; d--) {
        res->first_index[d] = r % a->shape[d];
        r /= a->shape[d];
      }
  } else {
    walk wa, wb;
    walk_init(&wa, a);
    walk_init(&wb, b);
    for (int64_t i = 0; i < n; i++, walk_next(&wa), walk_next(&wb)) {
      bool first = c.mismatches == 0;
      if (ints) {
        int64_t xi = kl_dtype_load_i64(a->dtype, at(a, wa.off)), yi = kl_dtype_load_i64(b->dtype, at(b, wb.off));
        if (!cmp_int(&c, xi, yi, rtol, atol)) cmp_miss(&c, i, (double)xi, (double)yi);
      } else {
        double x = kl_dtype_load_f64(a->dtype, at(a, wa.off)), y = kl_dtype_load_f64(b->dtype, at(b, wb.off));
        if (!cmp_float(&c, x, y, rtol, atol)) cmp_miss(&c, i, x, y);
      }
      if (first && c.mismatches) memcpy(res->first_index, wa.idx, sizeof(int64_t) * (size_t)a->rank);
    }
  }
  res->max_abs_err = c.max_abs;
  res->max_rel_err = c.max_rel;
  res->mismatches = c.mismatches;
  if (c.mismatches) {
    res->first_flat = c.first;
    res->first_a = c.first_a;
    res->first_b = c.first_b;
  }
  return 0;
}
#undef CMP_FLAT

int kl_tensor_allclose(const kl_tensor *a, const kl_tensor *b, double rtol, double atol, bool *close, char *err,
                       size_t errlen) {
  kl_compare_result r;
  *close = false;
  if (kl_tensor_compare(a, b, rtol, atol, &r, err, errlen)) return 1;
  *close = r.mismatches == 0;
  return 0;
}
