/* view_emit.c — emitting view index arithmetic with constant folding. */
#include "core/view_emit.h"
#include <string.h>

bool kl_emit_const_of(kl_value *v, int64_t *out) {
  const kl_attr *a = v ? kl_value_constant(v) : NULL;
  if (!a || (a->kind != KL_AT_INT && a->kind != KL_AT_BOOL)) return false;
  *out = a->i;
  return true;
}
kl_value *kl_emit_index(kl_emitter *e, int64_t v) {
  kl_ctx *ctx = kl_rewriter_ctx(e->rw);
  const kl_type *it = kl_type_index(ctx);
  kl_named_attr a = { "value", kl_attr_int_typed(ctx, v, it) };
  return kl_op_result(kl_rewriter_create(e->rw, "arith.constant", e->loc, 0, NULL, 1, &it, 1, &a, 0), 0);
}
static kl_value *bin(kl_emitter *e, const char *name, kl_value *a, kl_value *b, const kl_type *t) {
  kl_value *ab[] = { a, b };
  return kl_op_result(kl_rewriter_create(e->rw, name, e->loc, 2, ab, 1, &t, 0, NULL, 0), 0);
}
kl_value *kl_emit_add(kl_emitter *e, kl_value *a, kl_value *b) {
  int64_t x, y;
  bool ca = kl_emit_const_of(a, &x), cb = kl_emit_const_of(b, &y);
  if (ca && cb) return kl_emit_index(e, x + y);
  if (ca && x == 0) return b;
  if (cb && y == 0) return a;
  return bin(e, "arith.addi", a, b, a->type);
}
kl_value *kl_emit_sub(kl_emitter *e, kl_value *a, kl_value *b) {
  int64_t x, y;
  bool ca = kl_emit_const_of(a, &x), cb = kl_emit_const_of(b, &y);
  if (ca && cb) return kl_emit_index(e, x - y);
  if (cb && y == 0) return a;
  return bin(e, "arith.subi", a, b, a->type);
}
kl_value *kl_emit_mul(kl_emitter *e, kl_value *a, kl_value *b) {
  int64_t x, y;
  bool ca = kl_emit_const_of(a, &x), cb = kl_emit_const_of(b, &y);
  if (ca && cb) return kl_emit_index(e, x * y);
  if ((ca && x == 0) || (cb && y == 0)) return kl_emit_index(e, 0);
  if (ca && x == 1) return b;
  if (cb && y == 1) return a;
  return bin(e, "arith.muli", a, b, a->type);
}
kl_value *kl_emit_muli(kl_emitter *e, kl_value *a, int64_t c) { return kl_emit_mul(e, a, kl_emit_index(e, c)); }
kl_value *kl_emit_divi(kl_emitter *e, kl_value *a, int64_t c) {
  int64_t x;
  if (c == 1) return a;
  if (kl_emit_const_of(a, &x)) return kl_emit_index(e, x >= 0 ? x / c : -((-x + c - 1) / c));
  return bin(e, "arith.divsi", a, kl_emit_index(e, c), a->type);
}
kl_value *kl_emit_remi(kl_emitter *e, kl_value *a, int64_t c) {
  int64_t x;
  if (c == 1) return kl_emit_index(e, 0);
  if (kl_emit_const_of(a, &x)) return kl_emit_index(e, ((x % c) + c) % c);
  return bin(e, "arith.remsi", a, kl_emit_index(e, c), a->type);
}
kl_value *kl_emit_xori(kl_emitter *e, kl_value *a, kl_value *b) {
  int64_t x, y;
  bool ca = kl_emit_const_of(a, &x), cb = kl_emit_const_of(b, &y);
  if (ca && cb) return kl_emit_index(e, x ^ y);
  if (ca && x == 0) return b;
  if (cb && y == 0) return a;
  return bin(e, "arith.xori", a, b, a->type);
}
kl_value *kl_emit_cmp(kl_emitter *e, const char *pred, kl_value *a, kl_value *b) {
  kl_ctx *ctx = kl_rewriter_ctx(e->rw);
  const kl_type *i1 = kl_type_i1(ctx);
  int64_t x, y;
  if (kl_emit_const_of(a, &x) && kl_emit_const_of(b, &y)) {
    bool r = !strcmp(pred, "eq") ? x == y
        : !strcmp(pred, "ne")    ? x != y
        : !strcmp(pred, "lt")    ? x < y
        : !strcmp(pred, "le")    ? x <= y
        : !strcmp(pred, "gt")    ? x > y
                                 : x >= y;
    kl_named_attr at = { "value", kl_attr_int_typed(ctx, r, i1) };
    return kl_op_result(kl_rewriter_create(e->rw, "arith.constant", e->loc, 0, NULL, 1, &i1, 1, &at, 0), 0);
  }
  kl_value *ab[] = { a, b };
  kl_named_attr p = { "predicate", kl_attr_str(ctx, pred) };
  return kl_op_result(kl_rewriter_create(e->rw, "arith.cmpi", e->loc, 2, ab, 1, &i1, 1, &p, 0), 0);
}
kl_value *kl_emit_and(kl_emitter *e, kl_value *a, kl_value *b) {
  int64_t x;
  if (!a) return b;
  if (!b) return a;
  if (kl_emit_const_of(a, &x)) return x ? b : a;
  if (kl_emit_const_of(b, &x)) return x ? a : b;
  return bin(e, "arith.andi", a, b, a->type);
}
static kl_value *in_range(kl_emitter *e, kl_value *v, int64_t size) {
  return kl_emit_and(e, kl_emit_cmp(e, "ge", v, kl_emit_index(e, 0)), kl_emit_cmp(e, "lt", v, kl_emit_index(e, size)));
}

kl_status kl_view_emit(kl_emitter *e, const kl_view *v, kl_value *const *upper, kl_value **lower, kl_value **valid) {
  kl_value *cur[KL_VIEW_MAX_DIMS], *next[KL_VIEW_MAX_DIMS];
  int rank = kl_view_rank(v);
  for (int i = 0; i < rank; i++) cur[i] = upper[i];
  kl_value *ok = NULL;
  for (int mi = 0; mi < v->nmaps; mi++) {
    const kl_vmap *m = &v->maps[mi];
    for (int ti = 0; ti < m->ntrans; ti++) {
      const kl_vtrans *t = &m->trans[ti];
      const int64_t *p = t->params;
      bool check = kl_view_trans_may_be_invalid(v, mi, ti);
      switch (t->kind) {
        case KL_VT_PASSTHROUGH:
          for (int i = 0; i < t->nupper; i++) next[t->lower[i]] = cur[t->upper[i]];
          break;
        case KL_VT_PAD:
          for (int i = 0; i < t->nupper; i++) {
            kl_value *l = kl_emit_sub(e, cur[t->upper[i]], kl_emit_index(e, p[2 * i]));
            next[t->lower[i]] = l;
            if (check && (p[2 * i] || p[2 * i + 1]))
              ok = kl_emit_and(e, ok, in_range(e, l, m->lower_sizes[t->lower[i]]));
          }
          break;
        case KL_VT_SLICE:
          for (int i = 0; i < t->nupper; i++)
            next[t->lower[i]] = kl_emit_add(e, cur[t->upper[i]], kl_emit_index(e, p[2 * i]));
          break;
        case KL_VT_EMBED: {
          kl_value *s = kl_emit_index(e, 0);
          for (int i = 0; i < t->nupper; i++) s = kl_emit_add(e, s, kl_emit_muli(e, cur[t->upper[i]], p[i]));
          next[t->lower[0]] = s;
          if (check) ok = kl_emit_and(e, ok, in_range(e, s, m->lower_sizes[t->lower[0]]));
          break;
        }
        case KL_VT_UNMERGE: {
          kl_value *s = kl_emit_index(e, 0);
          for (int i = 0; i < t->nupper; i++) s = kl_emit_add(e, kl_emit_muli(e, s, p[i]), cur[t->upper[i]]);
          next[t->lower[0]] = s;
          break;
        }
        case KL_VT_MERGE: {
          kl_value *u = cur[t->upper[0]];
          for (int i = t->nlower - 1; i > 0; i--) {
            next[t->lower[i]] = kl_emit_remi(e, u, p[i]);
            u = kl_emit_divi(e, u, p[i]);
          }
          next[t->lower[0]] = u;
          break;
        }
        case KL_VT_ADDDIM: break;
        case KL_VT_BROADCAST:
          for (int i = 0; i < t->nupper; i++) next[t->lower[i]] = kl_emit_remi(e, cur[t->upper[i]], p[i]);
          break;
        case KL_VT_CONSTDIM:
          for (int i = 0; i < t->nlower; i++) next[t->lower[i]] = kl_emit_index(e, p[2 * i]);
          break;
        case KL_VT_XOR: {
          kl_value *r = cur[t->upper[0]], *c = cur[t->upper[1]];
          next[t->lower[0]] = r;
          next[t->lower[1]] = p[1] == 1 ? c : kl_emit_xori(e, c, kl_emit_remi(e, kl_emit_divi(e, r, p[0]), p[1]));
          break;
        }
      }
    }
    for (int i = 0; i < m->nlower; i++) cur[i] = next[i];
  }
  for (int i = 0; i < kl_view_lower_rank(v); i++) lower[i] = cur[i];
  *valid = ok;
  return KL_OK;
}
