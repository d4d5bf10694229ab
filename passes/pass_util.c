/* pass_util.c — helpers shared by the first compiler passes (see pass_util.h). */
#include "passes/pass_util.h"
#include "core/infer.h"
#include <stdio.h>
#include <string.h>

bool kl_pu_nonempty(const kl_type *t) {
  for (int i = 0; i < t->rank; i++)
    if (t->shape[i] <= 0) return false;
  return true;
}

static const char *dim_name(int i) {
  static const char *const names[KL_VIEW_MAX_DIMS] = { "d0", "d1", "d2",  "d3",  "d4",  "d5",  "d6",  "d7",
                                                       "d8", "d9", "d10", "d11", "d12", "d13", "d14", "d15" };
  return i >= 0 && i < KL_VIEW_MAX_DIMS ? names[i] : "d?";
}

kl_view *kl_pu_identity(int rank, const int64_t *shape, kl_view_err *err) {
  const char *names[KL_VIEW_MAX_DIMS] = { 0 };
  if (rank > KL_VIEW_MAX_DIMS) {
    if (err) snprintf(err->msg, sizeof err->msg, "rank %d is too large for a view", rank);
    return NULL;
  }
  for (int i = 0; i < rank; i++) names[i] = dim_name(i);
  return kl_view_identity(rank, shape, names, err);
}

/* Replaces *v by next (freeing the old one); false if next is NULL. */
static bool step(kl_view **v, kl_view *next) {
  kl_view_free(*v);
  *v = next;
  return next != NULL;
}

kl_view *kl_pu_broadcast_view(int rf, const int64_t *from, int rt, const int64_t *to, kl_view_err *err) {
  if (rt < rf || rt > KL_VIEW_MAX_DIMS) {
    if (err) snprintf(err->msg, sizeof err->msg, "cannot broadcast rank %d to rank %d", rf, rt);
    return NULL;
  }
  int lead = rt - rf;
  const char *names[KL_VIEW_MAX_DIMS] = { 0 };
  for (int i = 0; i < rf; i++) names[i] = dim_name(lead + i);
  kl_view *v = kl_view_identity(rf, from, names, err);
  bool ok = v != NULL;
  const char *bn[KL_VIEW_MAX_DIMS];
  int64_t bs[KL_VIEW_MAX_DIMS];
  int nb = 0;
  for (int i = 0; i < rf; i++)
    if (from[i] != to[lead + i]) {
      if (from[i] != 1) {
        if (err)
          snprintf(err->msg, sizeof err->msg, "cannot broadcast dim %d of size %lld to %lld", i, (long long)from[i],
                   (long long)to[lead + i]);
        kl_view_free(v);
        return NULL;
      }
      bn[nb] = names[i];
      bs[nb] = to[lead + i];
      nb++;
    }
  if (ok && nb) ok = step(&v, kl_view_broadcast(v, nb, bn, bs, err));
  for (int i = 0; ok && i < lead; i++) ok = step(&v, kl_view_add_dim(v, dim_name(i), to[i], i, err));
  if (ok && (nb || lead)) ok = step(&v, kl_view_simplify(v));
  return ok ? v : NULL;
}

bool kl_pu_is_graph_view(const kl_op *op) {
  return op->def && op->def->levels == KL_LEVEL_GRAPH && kl_op_has_trait(op, KL_TRAIT_VIEW);
}

kl_view *kl_pu_graph_view(kl_op *op) {
  kl_ctx *ctx = op->ctx;
  const kl_type *in = op->opnds[0].value->type, *out = op->results[0].type;
  kl_view_err err = { 0 };
  if (!kl_pu_nonempty(in) || !kl_pu_nonempty(out)) {
    kl_emit_error(ctx, op->loc, "'%s': a view of an empty tensor (%s -> %s) cannot be represented", op->name, in->text,
                  out->text);
    return NULL;
  }
  kl_view *v = NULL;
  kl_view_kind kind = kl_op_view_kind(op);
  if (kind == KL_VIEWOP_BROADCAST) {
    v = kl_pu_broadcast_view(in->rank, in->shape, out->rank, out->shape, &err);
  } else if (kind == KL_VIEWOP_TRANSPOSE) {
    int64_t p64[KL_VIEW_MAX_DIMS];
    int perm[KL_VIEW_MAX_DIMS];
    int n = kl_op_attr_i64s(op, "perm", p64, KL_VIEW_MAX_DIMS);
    if (n != in->rank) {
      kl_emit_error(ctx, op->loc, "'%s': bad 'perm'", op->name);
      return NULL;
    }
    for (int i = 0; i < n; i++) perm[i] = (int)p64[i];
    v = kl_pu_identity(in->rank, in->shape, &err);
    if (v) step(&v, kl_view_transpose(v, n, perm, &err));
    if (v) step(&v, kl_view_simplify(v));
  } else if (kind == KL_VIEWOP_RESHAPE) {
    v = kl_pu_identity(in->rank, in->shape, &err);
    if (v) step(&v, kl_view_reshape(v, out->rank, out->shape, NULL, &err));
    if (v) step(&v, kl_view_simplify(v));
  } else if (kind == KL_VIEWOP_SLICE) {
    int r = in->rank;
    int64_t b[KL_VIEW_MAX_DIMS], e[KL_VIEW_MAX_DIMS], s[KL_VIEW_MAX_DIMS], nb[KL_VIEW_MAX_DIMS];
    for (int i = 0; i < r; i++) s[i] = 1;
    if (kl_op_attr_i64s(op, "begin", b, KL_VIEW_MAX_DIMS) != r ||
        kl_op_attr_i64s(op, "end", e, KL_VIEW_MAX_DIMS) != r ||
        (kl_op_attr(op, "step") && kl_op_attr_i64s(op, "step", s, KL_VIEW_MAX_DIMS) != r)) {
      kl_emit_error(ctx, op->loc, "'%s': bad begin/end/step", op->name);
      return NULL;
    }
    kl_shape ish = kl_shape_make(r, in->shape), osh;
    char msg[256];
    if (kl_infer_slice(&ish, b, e, s, &osh, nb, msg, sizeof msg)) {
      kl_emit_error(ctx, op->loc, "%s", msg);
      return NULL;
    }
    v = kl_pu_identity(r, in->shape, &err);
    /* one Slice over all sliced dims, then an Embed per strided dim */
    const char *sn[KL_VIEW_MAX_DIMS];
    int64_t be[2 * KL_VIEW_MAX_DIMS];
    int ns = 0;
    for (int i = 0; i < r; i++) {
      int64_t len = (osh.dim[i] - 1) * s[i] + 1;
      if (nb[i] != 0 || len != in->shape[i]) {
        sn[ns] = dim_name(i);
        be[2 * ns] = nb[i];
        be[2 * ns + 1] = nb[i] + len;
        ns++;
      }
    }
    if (v && ns) step(&v, kl_view_slice(v, ns, sn, be, &err));
    for (int i = 0; v && i < r; i++)
      if (s[i] > 1 && osh.dim[i] > 1) {
        const char *nm = dim_name(i);
        step(&v, kl_view_embed(v, nm, 1, &nm, &osh.dim[i], &s[i], &err));
      }
    if (v) step(&v, kl_view_simplify(v));
  } else {
    kl_emit_error(ctx, op->loc, "'%s' is not a view op", op->name);
    return NULL;
  }
  if (!v) kl_emit_error(ctx, op->loc, "'%s': cannot build its view: %s", op->name, err.msg);
  return v;
}

const kl_type *kl_pu_buffer_like(kl_ctx *ctx, const kl_type *t) {
  return kl_type_buffer(ctx, t->elem, t->rank, t->shape, t->strides, KL_SPACE_GLOBAL);
}

kl_value *kl_pu_transform(kl_ctx *ctx, kl_loc loc, kl_value *src, const kl_view *v, kl_block *block, kl_op *before) {
  int r = kl_view_rank(v);
  int64_t shape[KL_VIEW_MAX_DIMS];
  for (int i = 0; i < r; i++) shape[i] = kl_view_size(v, i);
  const kl_type *rt = kl_type_buffer(ctx, src->type->elem, r, shape, NULL, KL_SPACE_GLOBAL);
  kl_named_attr a = { "view", kl_attr_from_view(ctx, v) };
  kl_op *op = kl_op_create(ctx, "rock.transform", loc, 1, &src, 1, &rt, 1, &a, 0);
  if (before)
    kl_op_insert_before(before, op);
  else
    kl_block_push_op(block, op);
  return kl_op_result(op, 0);
}
