/* shape.c — logical shapes, layouts and strides (see shape.h). */
#include "core/shape.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- limits */

/* Writes the message into err (if any) and returns false from kl_shape_check. */
#define FAIL(...) return !kl_errf(err, errlen, __VA_ARGS__)

/* The part of kl_shape_check that a kl_shape needs to hold a shape: the rank and the
 * signs of the sizes (kl_shape_init; kl_shape_check runs it first). */
static bool check_rank_signs(int rank, const int64_t *shape, char *err, size_t errlen) {
  char b1[256];
  if (rank < 0 || rank > KL_MAX_RANK) FAIL("rank %d out of range (0 to %d)", rank, KL_MAX_RANK);
  for (int i = 0; i < rank; i++)
    if (shape[i] < 0)
      FAIL("dimension out of range: negative size %lld of dim %d in shape %s (sizes are 0 to 2^40)",
           (long long)shape[i], i, kl_dims_format(rank, shape, b1, sizeof b1));
  return true;
}

bool kl_shape_check(int rank, const int64_t *shape, const int64_t *strides, char *err, size_t errlen) {
  char b1[256], b2[256];
  if (!check_rank_signs(rank, shape, err, errlen)) return false;
  int64_t numel = 1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] > KL_MAX_DIM)
      FAIL("dimension out of range: size %lld of dim %d in shape %s (sizes are 0 to 2^40)", (long long)shape[i], i,
           kl_dims_format(rank, shape, b1, sizeof b1));
    int64_t d = shape[i] > 0 ? shape[i] : 1; /* both <= 2^53: no overflow before the test */
    if (numel > KL_MAX_NUMEL / d)
      FAIL("shape too large: %s has more than 2^53 elements", kl_dims_format(rank, shape, b1, sizeof b1));
    numel *= d;
  }
  if (!strides) return true;
  int64_t maxoff = 0;
  for (int i = 0; i < rank; i++) {
    if (strides[i] < 0)
      FAIL("negative stride %lld of dim %d in strides %s (strides are 0 to 2^53)", (long long)strides[i], i,
           kl_dims_format(rank, strides, b1, sizeof b1));
    if (strides[i] > KL_MAX_NUMEL)
      FAIL("stride %lld of dim %d in strides %s out of range (strides are 0 to 2^53)", (long long)strides[i], i,
           kl_dims_format(rank, strides, b1, sizeof b1));
    int64_t t;
    if (shape[i] > 0 &&
        (__builtin_mul_overflow(shape[i] - 1, strides[i], &t) || __builtin_add_overflow(maxoff, t, &maxoff) ||
         maxoff > KL_MAX_NUMEL))
      FAIL("strides %s for shape %s reach past 2^53 elements", kl_dims_format(rank, strides, b1, sizeof b1),
           kl_dims_format(rank, shape, b2, sizeof b2));
  }
  return true;
}

/* ---------------------------------------------------------------- shapes */

int kl_shape_init(kl_shape *s, int rank, const int64_t *dims, const char *opname, char *err, size_t errlen) {
  char why[512];
  if (!check_rank_signs(rank, dims, why, sizeof why))
    return kl_errf(err, errlen, "%s: %s", opname ? opname : "tensor", why);
  memset(s, 0, sizeof *s);
  s->rank = rank;
  for (int i = 0; i < rank; i++) s->dim[i] = dims[i];
  return 0;
}
#undef FAIL

kl_shape kl_shape_make(int rank, const int64_t *dims) {
  kl_shape s;
  memset(&s, 0, sizeof s);
  if (rank < 0) rank = 0;
  if (rank > KL_MAX_RANK) rank = KL_MAX_RANK;
  s.rank = rank;
  for (int i = 0; i < rank; i++) s.dim[i] = dims[i];
  return s;
}

int64_t kl_shape_numel(const kl_shape *s) {
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) n *= s->dim[i];
  return n;
}

bool kl_shape_equal(const kl_shape *a, const kl_shape *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->dim[i] != b->dim[i]) return false;
  return true;
}

char *kl_dims_format(int rank, const int64_t *dims, char *buf, size_t n) {
  if (!n) return buf;
  size_t len = 0;
  len += (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < rank && len < n; i++)
    len += (size_t)snprintf(buf + len, n - len, i ? ",%lld" : "%lld", (long long)dims[i]);
  if (len < n) snprintf(buf + len, n - len, "]");
  return buf;
}

char *kl_shape_format(const kl_shape *s, char *buf, size_t n) { return kl_dims_format(s->rank, s->dim, buf, n); }

/* ---------------------------------------------------------------- layouts */

static const char *const layout_families[] = {
  "NCHW", "NKHW", "KCYX", "NCW", "NKW", "KCX", "NCDHW", "NKDHW", "KCZYX",
};

void kl_strides_row_major(int rank, const int64_t *shape, int64_t *strides) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    strides[i] = s; /* saturates instead of overflowing (zero-element shapes are not size-checked) */
    if (__builtin_mul_overflow(s, shape[i] > 0 ? shape[i] : 1, &s)) s = INT64_MAX;
  }
}

void kl_strides_from_perm(int rank, const int64_t *shape, const int *perm, int64_t *strides) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    strides[perm[i]] = s; /* saturates, as kl_strides_row_major */
    if (__builtin_mul_overflow(s, shape[perm[i]] > 0 ? shape[perm[i]] : 1, &s)) s = INT64_MAX;
  }
}

static int check_perm(const int *perm, int rank) {
  bool seen[KL_MAX_RANK] = { 0 };
  for (int i = 0; i < rank; i++) {
    if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]]) return 1;
    seen[perm[i]] = true;
  }
  return 0;
}

int kl_layout_perm(const char *layout, int rank, int *perm, char *err, size_t errlen) {
  if (!layout) return kl_errf(err, errlen, "layout: missing layout string");
  if (rank < 0 || rank > KL_MAX_RANK) return kl_errf(err, errlen, "layout: rank %d out of range", rank);
  if (strcmp(layout, "row_major") == 0) {
    for (int i = 0; i < rank; i++) perm[i] = i;
    return 0;
  }
  if (strcmp(layout, "col_major") == 0) {
    for (int i = 0; i < rank; i++) perm[i] = rank - 1 - i;
    return 0;
  }
  const char *p = layout;
  while (*p == ' ') p++;
  if (*p == '[' || (*p >= '0' && *p <= '9')) {
    int n = 0;
    if (*p == '[') p++;
    for (;;) {
      while (*p == ' ') p++;
      if (*p == ']' || *p == 0) break;
      if (!(*p >= '0' && *p <= '9')) return kl_errf(err, errlen, "layout: bad permutation \"%s\"", layout);
      long v = strtol(p, (char **)&p, 10);
      if (n >= rank) return kl_errf(err, errlen, "layout: permutation \"%s\" does not have %d entries", layout, rank);
      if (v >= rank) return kl_errf(err, errlen, "layout: \"%s\" is not a permutation of 0..%d", layout, rank - 1);
      perm[n++] = (int)v;
      while (*p == ' ') p++;
      if (*p == ',') p++;
    }
    if (*p == ']') p++;
    while (*p == ' ') p++;
    if (*p != 0) return kl_errf(err, errlen, "layout: bad permutation \"%s\"", layout);
    if (n != rank) return kl_errf(err, errlen, "layout: permutation \"%s\" does not have %d entries", layout, rank);
    if (check_perm(perm, rank))
      return kl_errf(err, errlen, "layout: \"%s\" is not a permutation of 0..%d", layout, rank - 1);
    return 0;
  }
  size_t len = strlen(layout);
  if ((int)len != rank) return kl_errf(err, errlen, "layout: \"%s\" does not fit a rank-%d tensor", layout, rank);
  for (size_t f = 0; f < sizeof layout_families / sizeof layout_families[0]; f++) {
    const char *fam = layout_families[f];
    if (strlen(fam) != len) continue;
    int tmp[KL_MAX_RANK];
    bool ok = true;
    for (int i = 0; i < rank && ok; i++) {
      const char *q = strchr(fam, layout[i]);
      if (!q || layout[i] == 0)
        ok = false;
      else
        tmp[i] = (int)(q - fam);
    }
    if (ok && check_perm(tmp, rank) == 0) {
      memcpy(perm, tmp, sizeof(int) * (size_t)rank);
      return 0;
    }
  }
  return kl_errf(err, errlen,
                 "layout: unknown layout \"%s\" (expected a permutation of NCHW, NKHW, KCYX, NCW, "
                 "KCX, NCDHW, KCZYX, \"row_major\", \"col_major\" or \"0,2,3,1\")",
                 layout);
}

int kl_layout_strides(const char *layout, int rank, const int64_t *shape, int64_t *strides, char *err, size_t errlen) {
  int perm[KL_MAX_RANK];
  if (kl_layout_perm(layout, rank, perm, err, errlen)) return 1;
  kl_strides_from_perm(rank, shape, perm, strides);
  return 0;
}

bool kl_strides_to_perm(int rank, const int64_t *shape, const int64_t *strides, int *perm) {
  /* dense check: dims of size > 1 sorted by stride must nest exactly */
  int order[KL_MAX_RANK], n = 0;
  for (int i = 0; i < rank; i++)
    if (shape[i] > 1) order[n++] = i;
  for (int i = 1; i < n; i++) /* insertion sort by stride ascending */
    for (int j = i; j > 0 && strides[order[j]] < strides[order[j - 1]]; j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  int64_t expect = 1;
  for (int i = 0; i < n; i++) {
    if (strides[order[i]] != expect) return false;
    expect *= shape[order[i]];
  }
  if (perm) {
    int64_t key[KL_MAX_RANK];
    for (int i = 0; i < rank; i++) {
      if (shape[i] > 1) {
        key[i] = strides[i];
        continue;
      }
      key[i] = 0;
      for (int j = i + 1; j < rank; j++)
        if (shape[j] > 1) {
          key[i] = strides[j];
          break;
        }
    }
    for (int i = 0; i < rank; i++) perm[i] = i;
    for (int i = 1; i < rank; i++) /* stable: descending key */
      for (int j = i; j > 0 && key[perm[j]] > key[perm[j - 1]]; j--) {
        int t = perm[j];
        perm[j] = perm[j - 1];
        perm[j - 1] = t;
      }
  }
  return true;
}

bool kl_strides_is_row_major(int rank, const int64_t *shape, const int64_t *strides) {
  int64_t rm[KL_MAX_RANK];
  if (rank > KL_MAX_RANK) return false;
  kl_strides_row_major(rank, shape, rm);
  return kl_strides_equivalent(rank, shape, rm, strides);
}

bool kl_strides_equivalent(int rank, const int64_t *shape, const int64_t *s1, const int64_t *s2) {
  for (int i = 0; i < rank; i++)
    if (shape[i] > 1 && s1[i] != s2[i]) return false;
  return true;
}

bool kl_strides_nonoverlapping(int rank, const int64_t *shape, const int64_t *strides) {
  int order[KL_MAX_RANK], n = 0;
  for (int i = 0; i < rank; i++) {
    if (shape[i] == 0) return true; /* no elements at all */
    if (shape[i] > 1) order[n++] = i;
  }
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && strides[order[j]] < strides[order[j - 1]]; j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  int64_t extent = 0; /* largest offset reachable by the dims so far */
  for (int i = 0; i < n; i++) {
    int64_t s = strides[order[i]];
    if (s <= extent) return false;
    extent += (shape[order[i]] - 1) * s;
  }
  return true;
}
