/* reduce_split.c — the `reduce-split` pass: a float reduction whose outputs are too few
 * to keep the chip busy becomes two reductions, so that several workgroups share one row
 * (a multi-block reduction without atomics).
 *
 * Rewrite (graph level, before graph-partition). y = reduce_K(x, axes A, keepdims k),
 * K in {sum, mean, max, min}, x a float tensor; a = the outermost reduced axis, extent E;
 * S >= 2 a divisor of E (the split count):
 *   x1 = reshape(x): dim a becomes [S, E / S]
 *   p  = reduce_K(x1, axes {a + 1} and every other reduced axis (shifted by one), keepdims
 *        false, dtype f32 for sum / mean of f16 / bf16): the partials, kept dims with S at
 *        position a (every earlier dim is kept)
 *   y  = reduce_K(p, axes {a}, keepdims false, dtype of y)            (k false)
 *   y  = reduce_K(reshape(p) to y's shape with S at a, axes {a}, keepdims true, dtype of y)
 * Every partial covers the same number of elements, so mean = mean of the partial means
 * and sum / max / min compose with themselves. graph-partition makes each reduction a
 * kernel of its own and the partials an intermediate between them: the host plan gets
 * alloc_workspace, the partial kernel, the final kernel waiting on its token, free.
 *
 * The split count, per reduction: the op's integer attribute `split` (g:hint(y, {split =
 * N}): 1 never, N >= 2 exactly N, an error at the op when N does not divide E), else the
 * pass option `split` (the same; 0 = the heuristic), else the heuristic: on GPU targets
 * (option `target`, default the module's `target`; CU = its compute units), when P output points give fewer than
 * CU/4 workgroups and K = the reduced element count is at least 64Ki: the largest power
 * of two S dividing E with P * S <= 2 CU and K / S >= 16Ki (each partial still a long
 * row of one workgroup). Integer reductions (mean's truncation does not compose), empty
 * tensors and a rank at the limit are left alone.
 * A float softmax over few long rows (the same count rule, K = the axis extent, its own
 * `split` attribute or the option) becomes max, exp(x - max), sum and the division with
 * both reductions split (split_softmax): five kernels, every one spread over the chip. */
#include "core/dialect_graph.h"
#include "core/pass.h"
#include "core/rewrite.h"
#include "core/scalar_ops.h"
#include "core/target.h"
#include <stdint.h>
#include <string.h>

#define MIN_REDUCED   65536
#define MIN_PER_SPLIT 16384

typedef struct split_opts {
  int64_t split;      /* the pass option: 0 heuristic, 1 never, N */
  const kl_target *t; /* the module's target */
} split_opts;

static kl_op *make(kl_rewriter *rw, const char *name, kl_loc loc, kl_value *x, int na, const kl_named_attr *at) {
  const kl_type *rt = kl_graph_infer(kl_rewriter_ctx(rw), name, loc, 1, (const kl_type *const *)&x->type, na, at, NULL);
  return rt ? kl_rewriter_create(rw, name, loc, 1, &x, 1, &rt, na, at, 0) : NULL;
}
static kl_value *reshape(kl_rewriter *rw, kl_loc loc, kl_value *x, int r, const int64_t *shape) {
  kl_named_attr at = { "shape", kl_attr_i64_array(kl_rewriter_ctx(rw), r, shape) };
  kl_op *op = make(rw, "graph.reshape", loc, x, 1, &at);
  return op ? kl_op_result(op, 0) : NULL;
}
static kl_value *reduce(kl_rewriter *rw, kl_op *red, kl_value *x, int n, const int64_t *axes, bool keep,
                        const kl_type *dtype) {
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_named_attr at[3] = { { "axes", kl_attr_i64_array(ctx, n, axes) }, { "keepdims", kl_attr_bool(ctx, keep) } };
  int na = 2;
  if (dtype != x->type->elem) at[na++] = (kl_named_attr){ "dtype", kl_attr_type(ctx, dtype) };
  kl_op *op = make(rw, red->name, red->loc, x, na, at);
  return op ? kl_op_result(op, 0) : NULL;
}

/* The split count the heuristic picks (1: none). */
static int64_t heuristic(const kl_target *t, int64_t P, int64_t K, int64_t E) {
  if (!t || t->arch == KL_ARCH_HOST || t->compute_units < 1) return 1;
  int64_t cu2 = 2 * (int64_t)t->compute_units, best = 1;
  /* one workgroup per output streams close to the memory bandwidth once the outputs cover
   * a quarter of the CUs (measured on the H200: 64 rows of 262144 f32 on 132 SMs ran at
   * 3.5 TB/s in one kernel and slower split), so only fewer outputs split */
  if (4 * P > (int64_t)t->compute_units || K < MIN_REDUCED) return 1;
  for (int64_t s = 2; P * s <= cu2 && K / s >= MIN_PER_SPLIT; s *= 2)
    if (E % s == 0) best = s;
  return best;
}

static kl_status split_one(kl_rewriter *rw, kl_op *red, const split_opts *o) {
  kl_ctx *ctx = red->ctx;
  kl_value *x = red->opnds[0].value;
  const kl_type *it = x->type, *ot = red->results[0].type;
  int r = it->rank;
  if (!kl_type_is_float(it->elem) || r < 1) return KL_OK;
  int64_t a64[KL_MAX_RANK];
  int na = kl_op_attr_i64s(red, "axes", a64, KL_MAX_RANK);
  bool red_ax[KL_MAX_RANK] = { 0 };
  for (int i = 0; i < na; i++) red_ax[a64[i] < 0 ? a64[i] + r : a64[i]] = true;
  const kl_attr *ka = kl_op_attr(red, "keepdims");
  bool keep = ka && (ka->kind == KL_AT_UNIT || ka->i);
  int a = -1;
  int64_t P = 1, K = 1;
  for (int d = 0; d < r; d++) {
    if (red_ax[d] && a < 0) a = d;
    if (red_ax[d])
      K *= it->shape[d];
    else
      P *= it->shape[d];
  }
  if (a < 0 || K == 0 || P == 0) return KL_OK;
  int64_t E = it->shape[a], S = 0;
  const kl_attr *sa = kl_op_attr(red, "split");
  if (sa) {
    if (sa->kind != KL_AT_INT || sa->i < 1)
      return kl_emit_error(ctx, red->loc, "%s: split must be an integer >= 1, got %s", red->name, kl_attr_str_of(sa));
    S = sa->i;
  } else if (o->split > 0)
    S = o->split;
  bool forced = S > 0;
  if (!forced) S = heuristic(o->t, P, K, E);
  if (S <= 1) return KL_OK;
  if (E % S != 0) {
    if (!forced) return KL_OK;
    return kl_emit_error(ctx, red->loc, "%s: split %lld does not divide the extent %lld of axis %d", red->name,
                         (long long)S, (long long)E, a);
  }
  if (r + 1 > KL_MAX_RANK) {
    if (!forced) return KL_OK;
    return kl_emit_error(ctx, red->loc, "%s: split needs rank %d + 1, above the limit %d", red->name, r, KL_MAX_RANK);
  }
  kl_rewriter_set_insertion_before(rw, red);
  int64_t s1[KL_MAX_RANK], ax1[KL_MAX_RANK], pshape[KL_MAX_RANK];
  int n1 = 0, n2 = 0;
  for (int d = 0; d < r; d++) {
    if (d == a) {
      s1[n1++] = S;
      s1[n1++] = E / S;
      ax1[n2++] = a + 1;
    } else {
      if (red_ax[d]) ax1[n2++] = d + 1;
      s1[n1++] = it->shape[d];
    }
  }
  kl_value *x1 = reshape(rw, red->loc, x, n1, s1);
  const kl_type *pe = ot->elem;
  kl_reduce_op rop = (kl_reduce_op)kl_op_scalar_code(red);
  if ((rop == KL_RED_SUM || rop == KL_RED_MEAN) && pe->kind != KL_TY_F64) pe = kl_type_f32(ctx);
  kl_value *p = x1 ? reduce(rw, red, x1, n2, ax1, false, pe) : NULL;
  if (!p) return KL_ERR;
  int64_t one = a, *fa = &one;
  kl_value *y;
  if (keep) {
    for (int d = 0; d < r; d++) pshape[d] = d == a ? S : red_ax[d] ? 1 : it->shape[d];
    kl_value *pr = reshape(rw, red->loc, p, r, pshape);
    y = pr ? reduce(rw, red, pr, 1, fa, true, ot->elem) : NULL;
  } else
    y = reduce(rw, red, p, 1, fa, false, ot->elem);
  if (!y) return KL_ERR;
  kl_rewriter_replace_op(rw, red, &y);
  return KL_OK;
}

static kl_value *binary(kl_rewriter *rw, const char *name, kl_loc loc, kl_value *a, kl_value *b) {
  kl_value *o[2] = { a, b };
  const kl_type *t[2] = { a->type, b->type };
  const kl_type *rt = kl_graph_infer(kl_rewriter_ctx(rw), name, loc, 2, t, 0, NULL, NULL);
  return rt ? kl_op_result(kl_rewriter_create(rw, name, loc, 2, o, 1, &rt, 0, NULL, 0), 0) : NULL;
}
static kl_value *unary(kl_rewriter *rw, const char *name, kl_loc loc, kl_value *x, const kl_type *elem) {
  const kl_type *rt = kl_graph_infer(kl_rewriter_ctx(rw), name, loc, 1, (const kl_type *const *)&x->type, 0, NULL,
                                     elem);
  return rt ? kl_op_result(kl_rewriter_create(rw, name, loc, 1, &x, 1, &rt, 0, NULL, 0), 0) : NULL;
}

/* Multi-block softmax: y = softmax(x, a) over few long rows (the same split count rule as
 * a reduction's, K = the axis extent) becomes, in f32 (f64 for f64; f16 / bf16 converted
 * in the loads and rounded once at the end)
 *   m = reduce_max(x, {a}, keepdims) {split = S}   e = exp(x - m)
 *   s = reduce_sum(e, {a}, keepdims) {split = S}   y = e / s
 * and both reductions are split here: the max's partial and final kernels, the sum's
 * partial kernel (exp(x - m) fused in its loads) and final kernel, and the normalization
 * (an element-wise kernel recomputing exp(x - m)): five kernels reading x three times,
 * every one spread over the chip. */
static kl_status split_softmax(kl_rewriter *rw, kl_op *sm, const split_opts *o) {
  kl_ctx *ctx = sm->ctx;
  kl_value *x = sm->opnds[0].value;
  const kl_type *it = x->type, *ot = sm->results[0].type;
  int r = it->rank;
  if (!kl_type_is_float(it->elem) || r < 1) return KL_OK;
  int64_t a = -1;
  if (!kl_op_attr_i64(sm, "axis", &a)) kl_op_attr_i64s(sm, "axis", &a, 1);
  if (a < 0) a += r;
  if (a < 0 || a >= r) return KL_OK;
  int64_t E = it->shape[a], P = 1;
  for (int d = 0; d < r; d++)
    if (d != a) P *= it->shape[d];
  if (E == 0 || P == 0) return KL_OK;
  int64_t S = 0;
  const kl_attr *sa = kl_op_attr(sm, "split");
  if (sa) {
    if (sa->kind != KL_AT_INT || sa->i < 1)
      return kl_emit_error(ctx, sm->loc, "%s: split must be an integer >= 1, got %s", sm->name, kl_attr_str_of(sa));
    S = sa->i;
  } else if (o->split > 0)
    S = o->split;
  bool forced = S > 0;
  if (!forced) S = heuristic(o->t, P, E, E);
  if (S <= 1) return KL_OK;
  if (E % S != 0) {
    if (!forced) return KL_OK;
    return kl_emit_error(ctx, sm->loc, "%s: split %lld does not divide the extent %lld of axis %lld", sm->name,
                         (long long)S, (long long)E, (long long)a);
  }
  if (r + 1 > KL_MAX_RANK) {
    if (!forced) return KL_OK;
    return kl_emit_error(ctx, sm->loc, "%s: split needs rank %d + 1, above the limit %d", sm->name, r, KL_MAX_RANK);
  }
  kl_rewriter_set_insertion_before(rw, sm);
  /* every reader gets its own convert and exp (each chain used by one kernel only: fused
   * there, nothing shared is written) */
  const kl_type *f = it->elem->kind == KL_TY_F64 ? it->elem : kl_type_f32(ctx);
  kl_value *xf[3] = { x, x, x };
  for (int i = 0; i < 3 && it->elem != f; i++)
    if (!(xf[i] = unary(rw, "graph.convert", sm->loc, x, f))) return KL_ERR;
  kl_named_attr at[2] = { { "axes", kl_attr_i64_array(ctx, 1, &a) }, { "keepdims", kl_attr_bool(ctx, true) } };
  kl_op *mop = make(rw, "graph.reduce_max", sm->loc, xf[0], 2, at);
  if (!mop) return KL_ERR;
  kl_value *m = kl_op_result(mop, 0), *d1 = binary(rw, "graph.sub", sm->loc, xf[1], m);
  kl_value *e1 = d1 ? unary(rw, "graph.exp", sm->loc, d1, NULL) : NULL;
  kl_op *sop = e1 ? make(rw, "graph.reduce_sum", sm->loc, e1, 2, at) : NULL;
  kl_value *d2 = sop ? binary(rw, "graph.sub", sm->loc, xf[2], m) : NULL;
  kl_value *e2 = d2 ? unary(rw, "graph.exp", sm->loc, d2, NULL) : NULL;
  kl_value *y = e2 ? binary(rw, "graph.div", sm->loc, e2, kl_op_result(sop, 0)) : NULL;
  if (y && ot->elem != f) y = unary(rw, "graph.convert", sm->loc, y, ot->elem);
  if (!y) return KL_ERR;
  kl_rewriter_set_attr(rw, mop, "split", kl_attr_int(ctx, S));
  kl_rewriter_set_attr(rw, sop, "split", kl_attr_int(ctx, S));
  kl_rewriter_replace_op(rw, sm, &y);
  kl_status st = split_one(rw, mop, o);
  return st == KL_OK ? split_one(rw, sop, o) : st;
}

static kl_status run_split(kl_op *module, const kl_pass_options *po, void *user) {
  (void)user;
  kl_block *mb = kl_module_body(module);
  if (!mb) return KL_OK;
  const char *tn = kl_pass_opt_string(po, "target");
  if (!tn || !*tn) tn = kl_op_attr_string(module, "target");
  split_opts o = { kl_pass_opt_int(po, "split"), kl_target_lookup(tn && *tn ? tn : "host") };
  if (o.split < 0) return kl_emit_error(module->ctx, module->loc, "reduce-split: split must be >= 0");
  if (!o.t) return kl_emit_error(module->ctx, module->loc, "reduce-split: unknown target '%s'", tn);
  kl_rewriter *rw = kl_rewriter_new(module->ctx);
  kl_status st = KL_OK;
  for (kl_op *g = mb->first; g && st == KL_OK; g = g->next) {
    if (!kl_is_graph(g)) continue;
    kl_block *b = kl_graph_body(g);
    kl_op *next;
    for (kl_op *op = b ? b->first : NULL; op && st == KL_OK; op = next) {
      next = op->next;
      if (kl_op_kernel_kind(op) == KL_KERNEL_REDUCE)
        st = split_one(rw, op, &o);
      else if (kl_op_kernel_kind(op) == KL_KERNEL_SOFTMAX)
        st = split_softmax(rw, op, &o);
    }
  }
  kl_rewriter_free(rw);
  return st;
}

static const kl_pass_option options[] = {
  { "split", KL_OPT_INT, "0",
    "split count of every float reduction: 0 = the heuristic (GPU targets, few long rows), 1 = never, N = N "
    "partials per output point (must divide the outermost reduced extent); a reduction's own `split` attribute "
    "wins" },
  { "target", KL_OPT_STRING, "", "the target whose compute units the heuristic uses (default: the module's target)" },
};

void kl__register_reduce_split(kl_ctx *ctx);
void kl__register_reduce_split(kl_ctx *ctx) {
  kl_pass_info info = { "reduce-split",
                        "splits a float reduction with few long rows into a partial reduction over S slices of its "
                        "outermost reduced axis and a final reduction of the partials (two kernels, a workspace); a "
                        "softmax over few long rows into a split max, a split sum of exp(x - max) and the division",
                        options,
                        (int)(sizeof options / sizeof options[0]),
                        run_split,
                        NULL };
  kl_register_pass(ctx, &info);
}
