/* infer.c — output shape inference of the graph ops (see infer.h). */
#include "core/infer.h"
#include <stdio.h>
#include <string.h>

#define SHP(s, b) kl_shape_format((s), (b), sizeof(b))

/* ---------------------------------------------------------------- inference */

int kl_infer_broadcast(const char *op, const kl_shape *a, const kl_shape *b, kl_shape *out, char *err, size_t errlen) {
  char b1[256], b2[256];
  int r = a->rank > b->rank ? a->rank : b->rank;
  kl_shape o;
  memset(&o, 0, sizeof o);
  o.rank = r;
  for (int i = 0; i < r; i++) {
    int ia = i - (r - a->rank), ib = i - (r - b->rank);
    int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
    if (da == db || db == 1)
      o.dim[i] = da;
    else if (da == 1)
      o.dim[i] = db;
    else
      return kl_errf(err, errlen, "%s: shapes do not broadcast: %s vs %s", op, SHP(a, b1), SHP(b, b2));
  }
  *out = o;
  return 0;
}

int kl_infer_broadcast_to(const char *op, const kl_shape *in, const kl_shape *target, char *err, size_t errlen) {
  char b1[256], b2[256];
  int r = target->rank;
  if (in->rank > r)
    return kl_errf(err, errlen, "%s: cannot broadcast %s to the lower-rank shape %s", op, SHP(in, b1), SHP(target, b2));
  for (int i = 0; i < r; i++) {
    if (target->dim[i] < 0) return kl_errf(err, errlen, "%s: negative size in target shape %s", op, SHP(target, b2));
    int ii = i - (r - in->rank);
    if (ii < 0) continue;
    if (in->dim[ii] != target->dim[i] && in->dim[ii] != 1)
      return kl_errf(err, errlen, "%s: cannot broadcast %s to %s (dim %d: %lld vs %lld)", op, SHP(in, b1),
                     SHP(target, b2), i, (long long)in->dim[ii], (long long)target->dim[i]);
  }
  return 0;
}

int kl_infer_where(const kl_shape *cond, const kl_shape *a, const kl_shape *b, kl_shape *out, char *err,
                   size_t errlen) {
  kl_shape t;
  char b1[256], b2[256], b3[256];
  if (kl_infer_broadcast("where", a, b, &t, NULL, 0) || kl_infer_broadcast("where", cond, &t, out, NULL, 0))
    return kl_errf(err, errlen, "where: shapes do not broadcast: cond %s, a %s, b %s", SHP(cond, b1), SHP(a, b2),
                   SHP(b, b3));
  return 0;
}

int kl_infer_dot(const kl_shape *a, const kl_shape *b, bool ta, bool tb, kl_shape *out, char *err, size_t errlen) {
  char b1[256], b2[256];
  if (a->rank < 2 || b->rank < 2)
    return kl_errf(err, errlen, "dot: operands need rank >= 2: %s x %s", SHP(a, b1), SHP(b, b2));
  int ra = a->rank, rb = b->rank;
  int64_t m = ta ? a->dim[ra - 1] : a->dim[ra - 2];
  int64_t ka = ta ? a->dim[ra - 2] : a->dim[ra - 1];
  int64_t kb = tb ? b->dim[rb - 1] : b->dim[rb - 2];
  int64_t n = tb ? b->dim[rb - 2] : b->dim[rb - 1];
  if (ka != kb)
    return kl_errf(err, errlen, "dot: inner dimensions differ: %s%s x %s%s (K = %lld vs %lld)", SHP(a, b1),
                   ta ? "^T" : "", SHP(b, b2), tb ? "^T" : "", (long long)ka, (long long)kb);
  kl_shape ba = kl_shape_make(ra - 2, a->dim), bb = kl_shape_make(rb - 2, b->dim), bo;
  if (kl_infer_broadcast("dot", &ba, &bb, &bo, NULL, 0))
    return kl_errf(err, errlen, "dot: batch dimensions do not broadcast: %s x %s", SHP(a, b1), SHP(b, b2));
  if (bo.rank + 2 > KL_MAX_RANK)
    return kl_errf(err, errlen, "dot: result rank too large: %s x %s", SHP(a, b1), SHP(b, b2));
  bo.dim[bo.rank++] = m;
  bo.dim[bo.rank++] = n;
  *out = bo;
  return 0;
}

int kl_infer_transpose(const kl_shape *in, int nperm, const int *perm, kl_shape *out, char *err, size_t errlen) {
  char b1[256], b2[256];
  int64_t p64[KL_MAX_RANK];
  bool seen[KL_MAX_RANK] = { 0 };
  if (nperm != in->rank)
    return kl_errf(err, errlen, "transpose: permutation has %d entries for shape %s", nperm, SHP(in, b1));
  for (int i = 0; i < nperm; i++) p64[i] = perm[i];
  for (int i = 0; i < nperm; i++) {
    if (perm[i] < 0 || perm[i] >= in->rank || seen[perm[i]])
      return kl_errf(err, errlen, "transpose: %s is not a permutation of the axes of %s",
                     kl_dims_format(nperm, p64, b2, sizeof b2), SHP(in, b1));
    seen[perm[i]] = true;
  }
  kl_shape o = *in;
  for (int i = 0; i < nperm; i++) o.dim[i] = in->dim[perm[i]];
  *out = o;
  return 0;
}

int kl_infer_reshape(const kl_shape *in, int rank, const int64_t *dims, kl_shape *out, char *err, size_t errlen) {
  char b1[256], b2[256];
  if (rank < 0 || rank > KL_MAX_RANK)
    return kl_errf(err, errlen, "reshape: rank %d out of range (0..%d)", rank, KL_MAX_RANK);
  kl_shape o;
  memset(&o, 0, sizeof o);
  o.rank = rank;
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < rank; i++) {
    if (dims[i] == -1 && infer < 0) {
      infer = i;
      continue;
    }
    if (dims[i] < 0)
      return kl_errf(err, errlen, "reshape: bad target shape %s (sizes >= 0, at most one -1)",
                     kl_dims_format(rank, dims, b1, sizeof b1));
    o.dim[i] = dims[i];
    if (__builtin_mul_overflow(known, dims[i], &known))
      return kl_errf(err, errlen, "reshape: target shape %s too large", kl_dims_format(rank, dims, b1, sizeof b1));
  }
  int64_t n = kl_shape_numel(in);
  if (infer >= 0) {
    if (known == 0 || n % known != 0)
      return kl_errf(err, errlen, "reshape: cannot reshape %s (%lld elements) to %s", SHP(in, b1), (long long)n,
                     kl_dims_format(rank, dims, b2, sizeof b2));
    o.dim[infer] = n / known;
    known = n;
  }
  if (known != n)
    return kl_errf(err, errlen, "reshape: cannot reshape %s (%lld elements) to %s (%lld elements)", SHP(in, b1),
                   (long long)n, kl_dims_format(rank, dims, b2, sizeof b2), (long long)known);
  *out = o;
  return 0;
}

int kl_infer_slice(const kl_shape *in, const int64_t *begin, const int64_t *end, const int64_t *step, kl_shape *out,
                   int64_t *out_begin, char *err, size_t errlen) {
  char b1[256];
  kl_shape o = *in;
  int64_t nb[KL_MAX_RANK];
  for (int d = 0; d < in->rank; d++) {
    int64_t n = in->dim[d], s = step ? step[d] : 1;
    int64_t b = begin[d] < 0 ? begin[d] + n : begin[d];
    int64_t e = end[d] < 0 ? end[d] + n : end[d];
    if (s < 1)
      return kl_errf(err, errlen, "slice: step %lld on axis %d of %s must be >= 1", (long long)s, d, SHP(in, b1));
    if (b < 0 || b > n || e < 0 || e > n)
      return kl_errf(err, errlen, "slice: range [%lld, %lld) out of bounds on axis %d of %s", (long long)begin[d],
                     (long long)end[d], d, SHP(in, b1));
    o.dim[d] = e > b ? (e - b + s - 1) / s : 0;
    nb[d] = b;
  }
  if (out_begin) memcpy(out_begin, nb, sizeof(int64_t) * (size_t)in->rank);
  *out = o;
  return 0;
}

int kl_normalize_axis(const char *op, const kl_shape *in, int axis, int *axis_out, char *err, size_t errlen) {
  char b1[256];
  int a = axis < 0 ? axis + in->rank : axis;
  if (a < 0 || a >= in->rank)
    return kl_errf(err, errlen, "%s: axis %d out of range for shape %s", op, axis, SHP(in, b1));
  *axis_out = a;
  return 0;
}

int kl_infer_concat(int n, const kl_shape *ins, int axis, kl_shape *out, char *err, size_t errlen) {
  char b1[256], b2[256];
  if (n < 1) return kl_errf(err, errlen, "concat: needs at least one input");
  int a = 0;
  if (kl_normalize_axis("concat", &ins[0], axis, &a, err, errlen)) return 1;
  kl_shape o = ins[0];
  for (int i = 1; i < n; i++) {
    bool ok = ins[i].rank == o.rank;
    for (int d = 0; ok && d < o.rank; d++)
      if (d != a && ins[i].dim[d] != ins[0].dim[d]) ok = false;
    if (!ok)
      return kl_errf(err, errlen, "concat: input %d has shape %s, incompatible with %s along axis %d", i,
                     SHP(&ins[i], b1), SHP(&ins[0], b2), a);
    o.dim[a] += ins[i].dim[a];
  }
  *out = o;
  return 0;
}

int kl_infer_reduce(const char *op, const kl_shape *in, int naxes, const int *axes, bool keepdims, kl_shape *out,
                    bool *reduced, char *err, size_t errlen) {
  char b1[256];
  bool red[KL_MAX_RANK] = { 0 };
  if (naxes < 0 || naxes > in->rank) return kl_errf(err, errlen, "%s: %d axes for shape %s", op, naxes, SHP(in, b1));
  for (int i = 0; i < naxes; i++) {
    int a = 0;
    if (kl_normalize_axis(op, in, axes[i], &a, err, errlen)) return 1;
    if (red[a]) return kl_errf(err, errlen, "%s: axis %d given twice for shape %s", op, axes[i], SHP(in, b1));
    red[a] = true;
  }
  kl_shape o;
  memset(&o, 0, sizeof o);
  for (int d = 0; d < in->rank; d++) {
    if (!red[d])
      o.dim[o.rank++] = in->dim[d];
    else if (keepdims)
      o.dim[o.rank++] = 1;
  }
  if (reduced) memcpy(reduced, red, sizeof red);
  *out = o;
  return 0;
}


/* ---------------------------------------------------------------- conv */

kl_conv_params kl_conv_params_default(int spatial) {
  kl_conv_params p;
  memset(&p, 0, sizeof p);
  p.spatial = spatial;
  for (int i = 0; i < KL_CONV_MAX_SPATIAL; i++) p.stride[i] = p.dilation[i] = 1;
  p.groups = 1;
  return p;
}

kl_conv_params kl_conv_params_from_2d(const kl_conv2d_params *p) {
  kl_conv_params q = kl_conv_params_default(2);
  for (int i = 0; i < 2; i++) q.stride[i] = p->stride[i], q.dilation[i] = p->dilation[i];
  for (int i = 0; i < 4; i++) q.pad[i] = p->pad[i];
  q.groups = p->groups;
  return q;
}

/* "[a,b,c]" of n entries */
static const char *list_str(int n, const int64_t *v, char *buf, size_t len) {
  size_t o = 0;
  buf[0] = 0;
  for (int i = 0; i < n && o < len; i++)
    o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? "," : "[", (long long)v[i]);
  if (o < len) snprintf(buf + o, len - o, "]");
  return buf;
}

int kl_infer_conv(const kl_shape *in, const kl_shape *f, const kl_conv_params *p, kl_shape *out, char *err,
                  size_t errlen) {
  char b1[256], b2[256];
  if (!p || p->spatial < 1 || p->spatial > KL_CONV_MAX_SPATIAL)
    return kl_errf(err, errlen, "conv: missing parameters or a spatial rank other than 1, 2, 3");
  int sp = p->spatial, r = sp + 2;
  char nm[8];
  snprintf(nm, sizeof nm, "conv%dd", sp);
  static const char *const in_dims[] = { "N,C,W", "N,C,H,W", "N,C,D,H,W" },
                           *const f_dims[] = { "K,C/G,X", "K,C/G,Y,X", "K,C/G,Z,Y,X" };
  if (in->rank != r)
    return kl_errf(err, errlen, "%s: input must have rank %d (%s), got %s", nm, r, in_dims[sp - 1], SHP(in, b1));
  if (f->rank != r)
    return kl_errf(err, errlen, "%s: filter must have rank %d (%s), got %s", nm, r, f_dims[sp - 1], SHP(f, b1));
  const int64_t lim = (int64_t)1 << 31;
  for (int i = 0; i < sp; i++) {
    if (p->stride[i] < 1 || p->stride[i] > lim)
      return kl_errf(err, errlen, "%s: stride must be >= 1, got %s", nm, list_str(sp, p->stride, b1, sizeof b1));
    if (p->dilation[i] < 1 || p->dilation[i] > lim)
      return kl_errf(err, errlen, "%s: dilation must be >= 1, got %s", nm, list_str(sp, p->dilation, b1, sizeof b1));
  }
  for (int i = 0; i < 2 * sp; i++)
    if (p->pad[i] < 0 || p->pad[i] > lim)
      return kl_errf(err, errlen, "%s: padding must be >= 0, got %s", nm, list_str(2 * sp, p->pad, b1, sizeof b1));
  int64_t G = p->groups;
  if (G < 1) return kl_errf(err, errlen, "%s: groups must be >= 1, got %lld", nm, (long long)G);
  int64_t N = in->dim[0], C = in->dim[1], K = f->dim[0], CG = f->dim[1];
  if (C % G != 0)
    return kl_errf(err, errlen, "%s: input %s has C=%lld, not divisible by groups=%lld", nm, SHP(in, b1), (long long)C,
                   (long long)G);
  if (K % G != 0)
    return kl_errf(err, errlen, "%s: filter %s has K=%lld, not divisible by groups=%lld", nm, SHP(f, b1), (long long)K,
                   (long long)G);
  if (CG * G != C)
    return kl_errf(err, errlen,
                   "%s: channels differ: input %s has C=%lld but filter %s has C/G=%lld (groups=%lld, expects %lld)",
                   nm, SHP(in, b1), (long long)C, SHP(f, b2), (long long)CG, (long long)G, (long long)(C / G));
  kl_shape o;
  memset(&o, 0, sizeof o);
  o.rank = r;
  o.dim[0] = N;
  o.dim[1] = K;
  int64_t win[KL_CONV_MAX_SPATIAL], padded[KL_CONV_MAX_SPATIAL];
  bool fits = true;
  for (int i = 0; i < sp; i++) {
    int64_t w = f->dim[2 + i], x = in->dim[2 + i];
    if (w < 1) return kl_errf(err, errlen, "%s: filter %s has an empty window", nm, SHP(f, b1));
    if (w > lim || x > ((int64_t)1 << 40))
      return kl_errf(err, errlen, "%s: sizes too large: input %s, filter %s", nm, SHP(in, b1), SHP(f, b2));
    padded[i] = x + p->pad[2 * i] + p->pad[2 * i + 1];
    win[i] = p->dilation[i] * (w - 1) + 1;
    if (win[i] > padded[i]) fits = false;
    o.dim[2 + i] = (padded[i] - win[i]) / p->stride[i] + 1;
  }
  if (!fits) {
    char wb[96] = "", pb[96] = "";
    size_t wo = 0, po = 0;
    for (int i = 0; i < sp; i++) {
      wo += (size_t)snprintf(wb + wo, sizeof wb - wo, "%s%lld", i ? "x" : "", (long long)win[i]);
      po += (size_t)snprintf(pb + po, sizeof pb - po, "%s%lld", i ? "x" : "", (long long)padded[i]);
    }
    return kl_errf(err, errlen,
                   "%s: dilated filter window %s of filter %s does not fit the padded input %s of input %s", nm, wb,
                   SHP(f, b2), pb, SHP(in, b1));
  }
  *out = o;
  return 0;
}

int kl_infer_conv2d(const kl_shape *in, const kl_shape *f, const kl_conv2d_params *p, kl_shape *out, char *err,
                    size_t errlen) {
  if (!p) return kl_errf(err, errlen, "conv2d: missing parameters");
  kl_conv_params q = kl_conv_params_from_2d(p);
  return kl_infer_conv(in, f, &q, out, err, errlen);
}
