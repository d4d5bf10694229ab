/* graph_partition.c — the `graph-partition` pass: groups the ops of every graph
 * function into kernels and replaces each group by a graph.launch of a new function.
 *
 * Grouping rules (deterministic; every graph-dialect op is handled). Anchors (graph.conv,
 * graph.dot) are taken first, in block order; each starts a "gemm" group of:
 *  - its epilogue: one sweep in block order over the ops after the anchor takes every
 *    element-wise op U that reads a value of the group and can run at the anchor's
 *    output coordinates: each operand of U that depends on the group is read through
 *    views the regularization can move (transpose, reshape, slice — no broadcast, and no
 *    implicit numpy broadcast: the operand has U's result shape), all such operands see
 *    the anchor result through the same view path (compared view by view), and every
 *    other operand depends on nothing of the group (else the group would wait on
 *    itself). Values of the group may be used any number of times (fan-out: swish
 *    `v * sigmoid(v)`, `where(c, -v, v)`), and any of them may be a result.
 *  - side inputs: element-wise ops whose uses are all inside the group and that do not
 *    depend on it (a bias computed from params).
 *  - its prologues (option input-fusion, default true): element-wise producers of the
 *    anchor's operands (looking through views) whose uses are all inside the group —
 *    converts, scales, dequantization, a broadcast bias, chains of them; graph-to-rock
 *    gives each the form that rock-align-tiling fuses into the anchor's global loads.
 *    A producer that something else reads too gets a copy of its own for the anchor
 *    (attribute `recomputed`: the kernel computes it from the producer's inputs) when
 *    its distinct operands have no more bytes than its result; otherwise the anchor
 *    reads it. The same holds for a reduction's input. The cost rule of
 *    passes/input_fusion_cost.h (option input-fusion-cost, default true) decides per
 *    conv/dot operand whose chain reads wider inputs than the operand (an f32 -> f16
 *    convert): the chain's bytes re-read by every block along the other output dim,
 *    against a convert kernel of its own plus a launch (targets with measured rates,
 *    sm_90 / sm_90a; elsewhere, and for chains that read no more than the operand, it
 *    fuses; KILN_DEBUG prints each decision). A declined chain joins no gemm group: it
 *    becomes an element-wise kernel writing the narrow operand, which the GEMM reads.
 *  - the views that its members read through (each group that reads through a view
 *    gets a copy of it).
 *  - GEMM + reduce: a dot whose only reader is a graph.reduce_sum / mean / max / min of
 *    f32 (no views between), on a target with the f32 atomic it needs (the module's
 *    "target", default host; kl_target.atomic_add for sum and mean, atomic_minmax for
 *    max and min), takes that reduce as its whole epilogue (gemm_reduce_of; graph-to-rock
 *    reduces in the GEMM's output write with atomics after a prefill); elsewhere (a sum
 *    on gfx1030) and for f16 / bf16 results the reduce stays a kernel of its own.
 * The group's results are every member value used outside the group (by another group
 * or the graph's return, looking through views), and the views of member values that
 * the return reads directly when they are views the regularization can move; a group
 * has as many results as that (one write each). Epilogue ops that could join two
 * anchors join the first. If such choices would make two groups wait on each other,
 * the graph is grouped again with epilogue side inputs restricted to values that no
 * anchor result reaches.
 * Remaining ops:
 *  - element-wise ops form "elementwise" groups: a root (an element-wise op whose result
 *    is needed outside) plus every element-wise producer whose uses are all inside the
 *    group (looking through views).
 *  - Reductions (graph.reduce_* -> "reduce", graph.softmax -> "softmax"), after the
 *    anchors, in block order (build_reduction_group): its consumers (one sweep in block
 *    order over element-wise ops: of the result's shape reading group values directly,
 *    or, for a reduce, of the input's shape reading the result through reshapes below at
 *    most one broadcast that grow only the reduced axes — the normalization, e.g. x *
 *    rsqrt(mean(x * x) + eps) — and other values that depend on nothing of the group),
 *    trimmed (last taken first) until the group has one result that, when of the input's
 *    shape, feeds no other reduction; then the views its members read through, the
 *    consumers' side inputs and the reduction's producers (grow; not with input-fusion
 *    false). An empty input, rank 0
 *    or no reduced axis keeps the reduction alone, and so does the strict regrouping.
 *    graph-to-rock makes the group ONE fused rock.reduce / rock.softmax.
 *  - graph.concat -> "elementwise" (one group each).
 *  - a graph output that is a view of no group's member becomes an "elementwise" group
 *    rooted at the view (absorbing element-wise producers as above); an output that is a
 *    param or constant itself becomes a copy group.
 *  - graph.param, graph.constant and existing graph.launch ops stay in the graph.
 * Scalar constants (one element) read by a group's element-wise ops are copied into the
 * group (graph-to-rock makes them immediates), not passed as kernel arguments. A value
 * marked with the unit attribute `primary` on its defining op (g:hint(x, {primary =
 * true})) that a group reads as an input is listed in the group function's `primary`
 * attribute (argument indices): the input that drives the vectorization of a fused load.
 * Launches are placed in a topological order of the groups (ties: the group's position
 * in the graph). First, identical conv / dot / reduce / softmax / concat, view and
 * constant ops are merged (graph-level CSE: two g:dot(a, b) are one GEMM; element-wise
 * ops are not merged, each kernel recomputes its own copy) and unused computations are
 * removed.
 * Output per group: func.func @<graph>_k<i> {kernel_group, kind = "..."} whose entry
 * block arguments are the group's inputs (order of first use) and whose func.return
 * returns the group's results; in the graph the group becomes
 * %r0, %r1, ... = "graph.launch"(inputs...) {callee = @<graph>_k<i>}. */
#include "core/dialect_graph.h"
#include "core/diag.h"
#include "core/env.h"
#include "core/pass.h"
#include "passes/pass_util.h"
#include "passes/fusion_util.h"
#include "passes/input_fusion_cost.h"
#include "core/target.h"
#include "core/scalar_ops.h"
#include "core/shape.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_GEMM, K_EW, K_REDUCE, K_SOFTMAX };
static const char *const kind_names[] = { "gemm", "elementwise", "reduce", "softmax" };

typedef struct group {
  int kind;
  int anchor; /* position of the anchor, -1 */
  int pos;    /* ordering key: the position of its root / anchor */
  unsigned char *member;
  int nres, capres;
  kl_value **res;
  bool *return_only; /* replace only the func.return uses of res[i] (view / copy roots) */
  int order;         /* topological rank */
} group;

typedef struct part {
  kl_ctx *ctx;
  bool input_fusion;
  bool fusion_cost; /* option input-fusion-cost: the cost rule may decline a prologue */
  const kl_target *tgt;
  unsigned char *declined; /* per position: a prologue the cost rule keeps out of gemm groups */
  bool strict_side;        /* epilogue side inputs must not depend on any anchor result */
  int nops;
  kl_op **ops;           /* block order; op->scratch = index */
  int *assigned;         /* group index of non-view ops, -1 */
  unsigned char *dep;    /* per position: depends on the group being built */
  unsigned char *anydep; /* per position: depends on some anchor result */
  int *tag_n;            /* per position: view path length to the anchor result, -1 = none */
  kl_op ***tag;          /* per position: that path (view ops, top first; an implicit numpy
                          * broadcast is the operand's type with the low bit set) */
  int64_t *bfac;         /* per position: copies the broadcasts on that path make */
  unsigned char *cand;
  int ngroups, capgroups;
  group *groups;
  kl_op *ret;
  bool atomic_f32; /* the module's target adds f32 atomically (GEMM + reduce fusion) */
  bool minmax_f32; /* ... and maxes / mins f32 atomically */
} part;

static bool is_ew(const kl_op *op) { return kl_op_has_trait(op, KL_TRAIT_ELEMENTWISE); }
static bool is_view(const kl_op *op) { return kl_pu_is_graph_view(op); }
static bool is_plan(const kl_op *op) { return kl_op_has_trait(op, KL_TRAIT_HOST_PLAN); }
static bool is_anchor(const kl_op *op) { return kl_op_has_trait(op, KL_TRAIT_GEMM_ANCHOR); }
/* The kernel kind of an op that gets a kernel of its own (kl_opdef.kernel), else -1. A
 * concat is an element-wise kernel (graph-to-rock sees the concat at its root). */
static int own_kernel(const kl_op *op) {
  switch (kl_op_kernel_kind(op)) {
    case KL_KERNEL_REDUCE: return K_REDUCE;
    case KL_KERNEL_SOFTMAX: return K_SOFTMAX;
    case KL_KERNEL_CONCAT: return K_EW;
    default: return -1;
  }
}
/* Views the regularization can move off a fusing op (their inverse, or partial
 * inverse for a slice, exists). */
static bool movable_view(const kl_op *op) {
  return kl_op_has_trait(op, KL_TRAIT_INVERTIBLE_VIEW) || kl_op_view_kind(op) == KL_VIEWOP_SLICE;
}
static bool same_shape(const kl_type *a, const kl_type *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}
/* Position of v's defining op in the graph body, or -1 (block argument, other block). */
static int pos_of(part *p, const kl_value *v) {
  kl_op *d = v->def;
  if (!d || d->scratch < 0 || d->scratch >= p->nops || p->ops[d->scratch] != d) return -1;
  return (int)d->scratch;
}
static bool member_value(part *p, group *g, const kl_value *v) {
  int q = pos_of(p, v);
  return q >= 0 && g->member[q];
}

/* ---- groups ---- */
static group *new_group(part *p, int kind, int pos) {
  if (p->ngroups == p->capgroups) {
    p->capgroups = p->capgroups ? 2 * p->capgroups : 8;
    p->groups = kl_xrealloc(p->groups, (size_t)p->capgroups * sizeof *p->groups);
  }
  group *g = &p->groups[p->ngroups];
  *g = (group){ kind, -1, pos, kl_xcalloc((size_t)p->nops + 1, 1), 0, 0, NULL, NULL, 0 };
  p->ngroups++;
  return g;
}
static void add_result(group *g, kl_value *v, bool return_only) {
  for (int i = 0; i < g->nres; i++)
    if (g->res[i] == v) return;
  if (g->nres == g->capres) {
    g->capres = g->capres ? 2 * g->capres : 4;
    g->res = kl_xrealloc(g->res, (size_t)g->capres * sizeof *g->res);
    g->return_only = kl_xrealloc(g->return_only, (size_t)g->capres * sizeof *g->return_only);
  }
  g->res[g->nres] = v;
  g->return_only[g->nres++] = return_only;
}
static void take(part *p, group *g, int pos) {
  g->member[pos] = 1;
  if (!is_view(p->ops[pos])) p->assigned[pos] = (int)(g - p->groups);
}

/* Is every use of v (looking through views) by a member of g? */
static bool uses_inside(part *p, group *g, kl_value *v) {
  for (kl_use *u = v->first_use; u; u = u->next) {
    kl_op *U = u->user;
    if (U == p->ret) return false;
    if (is_view(U)) {
      if (!uses_inside(p, g, kl_op_result(U, 0))) return false;
      continue;
    }
    if (U->scratch < 0 || U->scratch >= p->nops || p->ops[U->scratch] != U || !g->member[U->scratch]) return false;
  }
  return true;
}

/* Absorbs the views above operand w into g; marks an element-wise producer below them
 * as a candidate when allow_ew. */
static void absorb_operand(part *p, group *g, kl_value *w, bool allow_ew) {
  while (w->def && is_view(w->def) && pos_of(p, w) >= 0) {
    g->member[w->def->scratch] = 1;
    w = w->def->opnds[0].value;
  }
  int q = pos_of(p, w);
  if (allow_ew && q >= 0 && is_ew(p->ops[q]) && p->assigned[q] < 0) p->cand[q] = 1;
}
static void absorb_operands(part *p, group *g, kl_op *op, bool allow_ew) {
  for (int i = 0; i < op->nopnds; i++) absorb_operand(p, g, op->opnds[i].value, allow_ew);
}

/* Does an anchor (conv, dot) read v (looking through views)? Without input fusion its
 * operands stay kernel inputs, so such a producer never joins a gemm group. */
static bool feeds_anchor(kl_value *v) {
  for (kl_use *u = v->first_use; u; u = u->next) {
    kl_op *U = u->user;
    if (is_view(U) ? feeds_anchor(kl_op_result(U, 0)) : is_anchor(U)) return true;
  }
  return false;
}

/* Grows g backwards from position `from` (exclusive) over element-wise candidates whose
 * uses are all inside the group (and, in a gemm group, that do not depend on it). */
static void grow(part *p, group *g, int from) {
  for (int pos = from - 1; pos >= 0; pos--) {
    if (!p->cand[pos]) continue;
    p->cand[pos] = 0;
    kl_op *op = p->ops[pos];
    kl_value *r = kl_op_result(op, 0);
    if (p->assigned[pos] >= 0 || !uses_inside(p, g, r)) continue;
    if (g->kind == K_GEMM && (p->dep[pos] || p->declined[pos] || (!p->input_fusion && feeds_anchor(r)))) continue;
    take(p, g, pos);
    absorb_operands(p, g, op, true);
  }
  memset(p->cand, 0, (size_t)p->nops);
}

/* ---- epilogue ---- */

static int64_t numel_of(const kl_type *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}
/* Operand w of an epilogue candidate: the views above it (top first, into vs[]) and the
 * value below them; *fac the copies its broadcast views make. Returns the count, or -1
 * when a view is not movable (a broadcast is: rock-regularize splits its reader). */
static int operand_views(part *p, kl_value *w, kl_op **vs, int cap, kl_value **base, int64_t *fac) {
  int n = 0;
  *fac = 1;
  while (w->def && is_view(w->def) && pos_of(p, w) >= 0) {
    bool bc = kl_op_view_kind(w->def) == KL_VIEWOP_BROADCAST;
    if ((!movable_view(w->def) && !bc) || n == cap) return -1;
    int64_t below = numel_of(w->def->opnds[0].value->type);
    if (bc) *fac *= numel_of(w->type) / (below ? below : 1);
    vs[n++] = w->def;
    w = w->def->opnds[0].value;
  }
  *base = w;
  return n;
}
static bool is_implicit(const kl_op *e) { return ((uintptr_t)e & 1) != 0; }
static bool view_ops_equal(kl_op *a, kl_op *b) {
  if (a == b) return true;
  if (is_implicit(a) || is_implicit(b)) return false;
  if (strcmp(a->name, b->name) || !same_shape(a->results[0].type, b->results[0].type) ||
      !same_shape(a->opnds[0].value->type, b->opnds[0].value->type))
    return false;
  kl_view *va = kl_pu_graph_view(a), *vb = va ? kl_pu_graph_view(b) : NULL;
  bool eq = va && vb && kl_view_equal(va, vb);
  kl_view_free(va);
  kl_view_free(vb);
  return eq;
}

/* Do two view paths read the anchor result at the same coordinates (op by op)? */
static bool paths_equal(kl_op *const *a, int na, kl_op *const *b, int nb) {
  bool same = na == nb;
  for (int k = 0; k < na && same; k++) same = view_ops_equal(a[k], b[k]);
  return same;
}

#define MAX_PATH 64
/* Can element-wise op U (position pos) join anchor group g's epilogue? On success its
 * view path is stored in p->tag[pos]. */
static bool try_epilogue(part *p, group *g, int pos) {
  kl_op *U = p->ops[pos];
  kl_op *path[MAX_PATH];
  int npath = -1;
  int64_t pfac = 1;
  bool any = false;
  for (int i = 0; i < U->nopnds; i++) {
    kl_value *w = U->opnds[i].value, *b = w;
    kl_op *vs[MAX_PATH];
    int wq = pos_of(p, w);
    if (wq < 0 || !p->dep[wq]) {
      if (wq >= 0 && p->strict_side && p->anydep[wq]) return false;
      continue; /* a side input */
    }
    int64_t fac;
    int nv = operand_views(p, w, vs, MAX_PATH - 1, &b, &fac);
    if (nv < 0) return false;
    /* a broadcast must be the last view of the path (rock-regularize splits a read whose
     * outermost view broadcasts; under a reshape its dims would be merged away) */
    for (int k = 1; k < nv; k++)
      if (kl_op_view_kind(vs[k]) == KL_VIEWOP_BROADCAST) return false;
    int bq = pos_of(p, b);
    if (bq < 0 || !g->member[bq] || p->tag_n[bq] < 0) return false; /* reaches the group outside it */
    kl_op *t[MAX_PATH];
    int k0 = 0;
    if (!same_shape(w->type, U->results[0].type)) { /* U broadcasts the group value */
      int64_t wn = numel_of(w->type);
      t[k0++] = (kl_op *)((uintptr_t)w->type | 1);
      fac *= numel_of(U->results[0].type) / (wn ? wn : 1);
    }
    if (p->bfac[bq] > 1 && (nv > 0 || k0 > 0)) return false; /* a view or broadcast over a broadcast */
    fac *= p->bfac[bq];
    if (fac > KL_FU_MAX_BROADCAST_COPIES) return false; /* too many copies: the broadcast splits the kernel */
    int n = k0 + nv + p->tag_n[bq];
    if (n > MAX_PATH) return false;
    memcpy(t + k0, vs, (size_t)nv * sizeof *t);
    if (p->tag_n[bq]) memcpy(t + k0 + nv, p->tag[bq], (size_t)p->tag_n[bq] * sizeof *t);
    if (any && fac != pfac) return false;
    pfac = fac;
    if (any) {
      if (!paths_equal(t, n, path, npath)) return false;
    } else {
      memcpy(path, t, (size_t)n * sizeof *t);
      npath = n;
      any = true;
    }
  }
  if (!any) return false;
  take(p, g, pos);
  for (int i = 0; i < U->nopnds; i++) {
    int wq = pos_of(p, U->opnds[i].value);
    if (wq >= 0 && p->dep[wq]) absorb_operand(p, g, U->opnds[i].value, false);
  }
  p->tag_n[pos] = npath;
  p->bfac[pos] = pfac;
  p->tag[pos] = kl_xmalloc((size_t)(npath ? npath : 1) * sizeof(kl_op *));
  if (npath) memcpy(p->tag[pos], path, (size_t)npath * sizeof *path);
  return true;
}

/* Adds v (a member value) to g's results when something outside reads it (looking
 * through views); a movable view chain that the return reads directly is a result of
 * its own. */
static void collect_results(part *p, group *g, kl_value *v, kl_value *base, bool movable) {
  for (kl_use *u = v->first_use; u; u = u->next) {
    kl_op *U = u->user;
    if (U == p->ret) {
      if (v == base)
        add_result(g, v, false);
      else if (movable) {
        for (kl_value *w = v; w != base; w = w->def->opnds[0].value) g->member[w->def->scratch] = 1;
        add_result(g, v, true);
      } else {
        add_result(g, base, false);
      }
      continue;
    }
    if (is_view(U) && pos_of(p, kl_op_result(U, 0)) >= 0) {
      collect_results(p, g, kl_op_result(U, 0), base, movable && movable_view(U));
      continue;
    }
    int q = (U->scratch >= 0 && U->scratch < p->nops && p->ops[U->scratch] == U) ? (int)U->scratch : -1;
    if (q < 0 || !g->member[q]) add_result(g, base, false);
  }
}

/* GEMM + reduce fusion: the position of a graph.reduce_sum / mean / max / min that is the
 * only reader of dot a's result (no views between), of f32, when the target has the f32
 * atomic it needs (sum, mean: kl_target.atomic_add; max, min: kl_target.atomic_minmax);
 * -1 else. f16 / bf16 results stay two kernels (the dot's rounded result, then the
 * reduction: the fused form would need an f32 workspace and a cast kernel). The group
 * then computes the reduction in the GEMM's output write: graph-to-rock writes the
 * reduce's output through a view that drops the reduced dims, with atomic adds (mean:
 * scaled by 1 / count) or max / min after a plan prefill of 0 / -inf / +inf
 * (graph_to_rock.c, lower_gemm_reduce). */
static int gemm_reduce_of(part *p, kl_op *a) {
  kl_value *r = kl_op_result(a, 0);
  if (kl_op_kernel_kind(a) != KL_KERNEL_DOT || !r->first_use || r->first_use->next) return -1;
  if (!kl_pu_nonempty(a->opnds[0].value->type) || !kl_pu_nonempty(a->opnds[1].value->type)) return -1;
  kl_op *u = r->first_use->user;
  if (kl_op_kernel_kind(u) != KL_KERNEL_REDUCE || u->nopnds != 1) return -1;
  int code = kl_op_scalar_code(u);
  bool linear = code == KL_RED_SUM || code == KL_RED_MEAN, minmax = code == KL_RED_MAX || code == KL_RED_MIN;
  if (!(linear && p->atomic_f32) && !(minmax && p->minmax_f32)) return -1;
  if (u->results[0].type->elem->kind != KL_TY_F32 || !kl_pu_nonempty(u->results[0].type)) return -1;
  int q = pos_of(p, kl_op_result(u, 0));
  return q >= 0 && p->assigned[q] < 0 ? q : -1;
}

/* Uses of v, looking through views. */
static int uses_through_views(kl_value *v) {
  int n = 0;
  for (kl_use *u = v->first_use; u; u = u->next)
    n += is_view(u->user) ? uses_through_views(kl_op_result(u->user, 0)) : 1;
  return n;
}
static kl_value *below_views(part *p, kl_value *w) {
  while (w->def && is_view(w->def) && pos_of(p, w) >= 0) w = w->def->opnds[0].value;
  return w;
}

#define MAX_CHAIN 64
/* The cost rule of input fusion (passes/input_fusion_cost.h) for operand i of anchor a:
 * false when the element-wise chain producing it stays a kernel of its own (its top
 * producer is then marked declined, so that no gemm group takes it). The chain: the
 * element-wise producer below the operand's views and, through views, every element-wise
 * producer of a chain member that nothing else reads and no group has taken; its inputs:
 * the other values the members read (as read, and below their views). */
static bool fuse_operand(part *p, kl_op *a, int i) {
  if (!p->fusion_cost || !p->tgt) return true;
  kl_value *w = below_views(p, a->opnds[i].value);
  int q = pos_of(p, w);
  if (q < 0 || !is_ew(p->ops[q]) || p->assigned[q] >= 0 || p->declined[q]) return !(q >= 0 && p->declined[q]);
  kl_op *stack[MAX_CHAIN];
  kl_value *seen[MAX_CHAIN];
  const kl_type *in[MAX_CHAIN], *base[MAX_CHAIN];
  int ns = 0, nseen = 0, nin = 0;
  stack[ns++] = p->ops[q];
  while (ns > 0) {
    kl_op *op = stack[--ns];
    for (int k = 0; k < op->nopnds; k++) {
      kl_value *top = op->opnds[k].value, *b = below_views(p, top);
      bool dup = false;
      for (int j = 0; j < nseen && !dup; j++) dup = seen[j] == top;
      if (dup) continue;
      if (nseen == MAX_CHAIN) return true; /* too large a chain to judge: fuse, as before */
      seen[nseen++] = top;
      int bq = pos_of(p, b);
      if (bq >= 0 && is_ew(p->ops[bq]) && p->assigned[bq] < 0 && uses_through_views(b) == 1) {
        if (ns == MAX_CHAIN) return true;
        stack[ns++] = p->ops[bq];
        continue;
      }
      in[nin] = top->type;
      base[nin++] = b->type;
    }
  }
  kl_fuse_cost c;
  bool fuse = kl_input_fusion_pays(p->tgt, a, i, w->type, nin, in, base, &c);
  if (c.blocks > 0 && kl_env_debug("fusion")) { /* KILN_DEBUG (core/env.h) */
    char where[256];
    kl_loc_format(a->loc, where, sizeof where);
    fprintf(stderr,
            "[remark] graph-partition at %s: operand %d's %s %s (input fusion cost: %.1f -> %.1f bytes an element, "
            "read by %lld blocks: fused %.0f cycles, a kernel of its own %.0f)\n",
            where, i, p->ops[q]->name, fuse ? "fused" : "left as a kernel of its own", c.wide, c.narrow,
            (long long)c.blocks, c.fused, c.unfused);
  }
  if (fuse) return true;
  p->declined[q] = 1;
  return false;
}

static void build_anchor_group(part *p, int apos) {
  kl_op *a = p->ops[apos];
  group *g = new_group(p, K_GEMM, apos);
  g->anchor = apos;
  take(p, g, apos);
  memset(p->dep, 0, (size_t)p->nops);
  p->dep[apos] = 1;
  p->tag_n[apos] = 0;
  p->bfac[apos] = 1;
  p->tag[apos] = NULL;
  /* an empty operand: the anchor fills its result (graph-to-rock), no epilogue to fuse */
  bool empty = !kl_pu_nonempty(a->opnds[0].value->type) || !kl_pu_nonempty(a->opnds[1].value->type);
  int red = gemm_reduce_of(p, a); /* the reduce is the whole epilogue then */
  if (red >= 0) take(p, g, red);
  for (int pos = apos + 1; pos < p->nops; pos++) {
    kl_op *op = p->ops[pos];
    if (!empty && red < 0 && is_ew(op) && p->assigned[pos] < 0) try_epilogue(p, g, pos);
    if (g->member[pos] && !is_view(op)) {
      p->dep[pos] = 1;
      continue;
    }
    for (int i = 0; i < op->nopnds && !p->dep[pos]; i++) {
      int q = pos_of(p, op->opnds[i].value);
      p->dep[pos] = q >= 0 && p->dep[q];
    }
  }
  /* results: member values read outside */
  for (int pos = apos; pos < p->nops; pos++)
    if (g->member[pos] && !is_view(p->ops[pos]))
      collect_results(p, g, kl_op_result(p->ops[pos], 0), kl_op_result(p->ops[pos], 0), true);
  /* side inputs of the epilogue, then the prologues */
  for (int pos = apos + 1; pos < p->nops; pos++)
    if (g->member[pos] && !is_view(p->ops[pos])) absorb_operands(p, g, p->ops[pos], true);
  grow(p, g, p->nops);
  for (int i = 0; i < a->nopnds; i++) absorb_operand(p, g, a->opnds[i].value, p->input_fusion && fuse_operand(p, a, i));
  grow(p, g, apos);
}

/* ---- reduction groups (graph.reduce_* / graph.softmax with their element-wise
 * producers and consumers) ---- */
static bool is_reduction(const kl_op *op) {
  int k = own_kernel(op);
  return k == K_REDUCE || k == K_SOFTMAX;
}
/* Can the reduction fuse at all: a non-empty input of rank >= 1 with a reduced axis. */
static bool reduction_fusable(kl_op *red, bool *reduced) {
  const kl_type *it = red->opnds[0].value->type;
  if (it->rank < 1 || !kl_pu_nonempty(it)) return false;
  memset(reduced, 0, KL_MAX_RANK * sizeof *reduced);
  int64_t ax[KL_MAX_RANK];
  int na = kl_op_kernel_kind(red) == KL_KERNEL_SOFTMAX ? kl_op_attr_i64s(red, "axis", ax, 1)
                                                       : kl_op_attr_i64s(red, "axes", ax, KL_MAX_RANK);
  if (na < 1 && kl_op_kernel_kind(red) == KL_KERNEL_SOFTMAX && kl_op_attr_i64(red, "axis", ax)) na = 1;
  int n = 0;
  for (int i = 0; i < na; i++) {
    int64_t a = ax[i] < 0 ? ax[i] + it->rank : ax[i];
    if (a >= 0 && a < it->rank && !reduced[a]) {
      reduced[a] = true;
      n++;
    }
  }
  return n > 0;
}
/* Does operand w (of an element-wise op of the reduction input's shape it) read member
 * value base (of the reduction output's shape) broadcast back over the reduced axes, so
 * that the op's point x reads base at x's kept coordinates? Only reshapes below at most
 * one broadcast (the view closest to the reader) and numpy broadcasts: the value below
 * the broadcast, right-aligned to it's rank, has it's shape with the reduced axes 1
 * (reshapes keep the row-major order of base, which is that of the kept coordinates). */
static bool row_broadcast(part *p, kl_value *w, kl_value **base, const kl_type *it, const bool *reduced) {
  kl_value *w0 = w;
  if (w->def && is_view(w->def) && pos_of(p, w) >= 0 && kl_op_view_kind(w->def) == KL_VIEWOP_BROADCAST)
    w0 = w->def->opnds[0].value;
  const kl_type *t = w0->type;
  while (w0->def && is_view(w0->def) && pos_of(p, w0) >= 0) {
    if (kl_op_view_kind(w0->def) != KL_VIEWOP_RESHAPE) return false;
    w0 = w0->def->opnds[0].value;
  }
  *base = w0;
  int r = it->rank, off = r - t->rank;
  if (off < 0) return false;
  for (int d = 0; d < r; d++) {
    int64_t e = d < off ? 1 : t->shape[d - off];
    if (e != (reduced[d] ? 1 : it->shape[d])) return false;
  }
  return true;
}

/* Can element-wise op U (position pos) be a consumer of reduction group g (reduction
 * red)? It has the reduction result's shape (space 0: computed at the output points) or,
 * for a reduce, the input's (space 1: at every input point, a row-shaped result); each
 * operand that depends on the group is a member value of U's space read directly, or (space
 * 1) a member of space 0 read through a row broadcast (row_broadcast); every other
 * operand depends on nothing of the group (a side input, read through any views). */
static bool try_consumer(part *p, group *g, int pos, kl_op *red, const bool *reduced, unsigned char *space) {
  kl_op *U = p->ops[pos];
  const kl_type *ut = U->results[0].type, *it = red->opnds[0].value->type, *rt = red->results[0].type;
  bool sm = own_kernel(red) == K_SOFTMAX;
  int sp = same_shape(ut, rt) ? 0 : (!sm && same_shape(ut, it)) ? 1 : -1;
  if (sp < 0) return false;
  for (int i = 0; i < U->nopnds; i++) {
    kl_value *w = U->opnds[i].value, *b = w;
    int wq = pos_of(p, w);
    if (wq < 0 || !p->dep[wq]) continue; /* a side input */
    if (g->member[wq] && !is_view(p->ops[wq]) && same_shape(w->type, ut) && (space[wq] == sp || same_shape(rt, it)))
      continue;
    if (sp != 1 || !row_broadcast(p, w, &b, it, reduced)) return false;
    int bq = pos_of(p, b);
    if (bq < 0 || !g->member[bq] || is_view(p->ops[bq]) || space[bq] != 0) return false;
  }
  space[pos] = (unsigned char)sp;
  return true;
}
/* Does v (looking through views) feed a reduction? */
static bool feeds_reduction(kl_value *v) {
  for (kl_use *u = v->first_use; u; u = u->next) {
    kl_op *U = u->user;
    if (is_view(U) ? feeds_reduction(kl_op_result(U, 0)) : is_reduction(U)) return true;
  }
  return false;
}

/* A reduction group: the reduce / softmax at rpos, its consumers (one sweep in block
 * order, try_consumer), trimmed (last taken first) until the group has one result and
 * that result, when row-shaped, feeds no other reduction (such a chain, e.g. exp(x -
 * max(x)) before a sum, fuses better as the next reduction's producer); then the views
 * its members read through, the consumers' side inputs and the reduction's producers
 * (element-wise ops whose uses are all inside the group, grow). An unfusable reduction
 * (empty, rank 0, no reduced axis) or the strict regrouping keeps the reduction alone. */
static void build_reduction_group(part *p, int rpos) {
  kl_op *red = p->ops[rpos];
  group *g = new_group(p, own_kernel(red), rpos);
  take(p, g, rpos);
  bool reduced[KL_MAX_RANK];
  bool fuse = reduction_fusable(red, reduced);
  int *added = kl_xmalloc((size_t)p->nops * sizeof *added), nadded = 0;
  unsigned char *space = kl_xcalloc((size_t)p->nops + 1, 1);
  if (fuse && !p->strict_side) {
    memset(p->dep, 0, (size_t)p->nops);
    p->dep[rpos] = 1;
    for (int pos = rpos + 1; pos < p->nops; pos++) {
      kl_op *op = p->ops[pos];
      if (is_ew(op) && p->assigned[pos] < 0 && try_consumer(p, g, pos, red, reduced, space)) {
        take(p, g, pos);
        added[nadded++] = pos;
        p->dep[pos] = 1;
        continue;
      }
      for (int i = 0; i < op->nopnds && !p->dep[pos]; i++) {
        int q = pos_of(p, op->opnds[i].value);
        p->dep[pos] = q >= 0 && p->dep[q];
      }
    }
  }
  for (;;) {
    g->nres = 0;
    for (int pos = rpos; pos < p->nops; pos++)
      if (g->member[pos] && !is_view(p->ops[pos]))
        collect_results(p, g, kl_op_result(p->ops[pos], 0), kl_op_result(p->ops[pos], 0), false);
    bool bad = g->nres > 1 || (g->nres == 1 && g->res[0] != kl_op_result(red, 0) && feeds_reduction(g->res[0]));
    if (!bad || !nadded) break;
    int q = added[--nadded];
    g->member[q] = 0;
    p->assigned[q] = -1;
  }
  if (!g->nres) add_result(g, kl_op_result(red, 0), false);
  for (int k = 0; k < nadded; k++) absorb_operands(p, g, p->ops[added[k]], true);
  absorb_operands(p, g, red, fuse && p->input_fusion);
  grow(p, g, p->nops);
  free(added);
  free(space);
}

static void build_ew_group(part *p, int pos, bool view_root) {
  kl_op *op = p->ops[pos];
  group *g = new_group(p, K_EW, pos);
  add_result(g, kl_op_result(op, 0), view_root);
  take(p, g, pos);
  absorb_operands(p, g, op, true);
  grow(p, g, pos);
}

/* Erases unused computations (not params, constants, launches or the return). */
static void remove_dead(kl_block *body) {
  for (kl_op *op = body->last, *prev; op; op = prev) {
    prev = op->prev;
    if (is_plan(op) || kl_op_has_trait(op, KL_TRAIT_TERMINATOR) || !kl_op_results_unused(op)) continue;
    kl_op_erase(op);
  }
}

static const char *unique_name(kl_op *module, const char *base, int i, char *buf, size_t n) {
  snprintf(buf, n, "%s_k%d", base, i);
  for (int k = 1; kl_module_lookup(module, buf); k++) snprintf(buf, n, "%s_k%d_%d", base, i, k);
  return buf;
}

/* A one-element constant that the group's element-wise ops (directly or through views)
 * read: it is copied into the kernel. */
static bool immediate(kl_value *w) {
  if (!w->def || !kl_graph_is_constant(w->def) || !kl_op_attr(w->def, "value")) return false;
  int64_t n = 1;
  for (int i = 0; i < w->type->rank; i++) n *= w->type->shape[i];
  return n == 1;
}
static bool ew_reader(part *p, group *g, kl_value *w) {
  for (kl_use *u = w->first_use; u; u = u->next) {
    kl_op *U = u->user;
    int q = (U->scratch >= 0 && U->scratch < p->nops && p->ops[U->scratch] == U) ? (int)U->scratch : -1;
    if (q < 0 || !g->member[q]) continue;
    if (is_view(U) ? !ew_reader(p, g, kl_op_result(U, 0)) : !is_ew(U)) return false;
  }
  return true;
}

/* Index of the group that computes v for other groups, or -1 (results only the
 * return reads — copies, returned views — feed no group). */
static int producer_group(part *p, kl_value *v) {
  for (int i = 0; i < p->ngroups; i++)
    for (int r = 0; r < p->groups[i].nres; r++)
      if (p->groups[i].res[r] == v && !p->groups[i].return_only[r]) return i;
  return -1;
}

/* The group's inputs in order of first use (values defined outside it). */
static int group_leaves(part *p, group *g, kl_value ***out, kl_op ***imm, int *nimm) {
  int n = 0, cap = 8, ni = 0, capi = 4;
  kl_value **leaves = kl_xmalloc((size_t)cap * sizeof *leaves);
  kl_op **im = kl_xmalloc((size_t)capi * sizeof *im);
  for (int pos = 0; pos < p->nops; pos++) {
    if (!g->member[pos]) continue;
    kl_op *op = p->ops[pos];
    for (int i = 0; i < op->nopnds; i++) {
      kl_value *w = op->opnds[i].value;
      if (member_value(p, g, w)) continue;
      if (immediate(w) && ew_reader(p, g, w)) {
        bool seen = false;
        for (int j = 0; j < ni && !seen; j++) seen = im[j] == w->def;
        if (!seen) {
          if (ni == capi) im = kl_xrealloc(im, (size_t)(capi *= 2) * sizeof *im);
          im[ni++] = w->def;
        }
        continue;
      }
      bool seen = false;
      for (int j = 0; j < n && !seen; j++) seen = leaves[j] == w;
      if (seen) continue;
      if (n == cap) leaves = kl_xrealloc(leaves, (size_t)(cap *= 2) * sizeof *leaves);
      leaves[n++] = w;
    }
  }
  *out = leaves;
  *imm = im;
  *nimm = ni;
  return n;
}

/* Topological ranks of the groups (Kahn, ties by position). Returns false on a cycle. */
static bool order_groups(part *p) {
  int n = p->ngroups;
  if (!n) return true;
  unsigned char *edge = kl_xcalloc((size_t)n * (size_t)n, 1); /* edge[a*n+b]: a before b */
  int *indeg = kl_xcalloc((size_t)n, sizeof(int));
  for (int b = 0; b < n; b++) {
    kl_value **leaves;
    kl_op **imm;
    int ni;
    int nl = group_leaves(p, &p->groups[b], &leaves, &imm, &ni);
    for (int j = 0; j < nl; j++) {
      int a = producer_group(p, leaves[j]);
      if (a >= 0 && a != b && !edge[(size_t)a * n + b]) {
        edge[(size_t)a * n + b] = 1;
        indeg[b]++;
      }
    }
    free(leaves);
    free(imm);
  }
  bool *done = kl_xcalloc((size_t)n, sizeof(bool));
  bool ok = true;
  for (int rank = 0; rank < n && ok; rank++) {
    int best = -1;
    for (int i = 0; i < n; i++)
      if (!done[i] && !indeg[i] && (best < 0 || p->groups[i].pos < p->groups[best].pos)) best = i;
    if (best < 0) {
      ok = false;
      break;
    }
    done[best] = true;
    p->groups[best].order = rank;
    for (int j = 0; j < n; j++)
      if (edge[(size_t)best * n + j]) indeg[j]--;
  }
  free(edge);
  free(indeg);
  free(done);
  return ok;
}

static int cmp_group(const void *x, const void *y) {
  const group *a = *(group *const *)x, *b = *(group *const *)y;
  return a->order < b->order ? -1 : a->order > b->order;
}

/* The results of group g in the layouts the graph's outputs declare
 * (kl_graph_output_strides): result r of the group keeps its value and takes the layout
 * of the first output returning it (none declared: the value's own); every other layout
 * asked of the same value is one more entry (the value written once per layout, read only
 * by the outputs): a further result of a GEMM kernel, a copy kernel after the others. ret_res[i]: the result output i reads, -1 when
 * output i is not one of g's values. */
typedef struct result_layouts {
  int n, cap, nret;
  kl_value **val;
  bool *has;                       /* a declared layout differing from the value's own */
  int64_t (*strides)[KL_MAX_RANK]; /* the layout (has) */
  int *ret_res;
} result_layouts;

static void result_layouts_free(result_layouts *L) {
  free(L->val);
  free(L->has);
  free(L->strides);
  free(L->ret_res);
}
static int push_layout(result_layouts *L, kl_value *v, bool has, const int64_t *s) {
  if (L->n == L->cap) {
    L->cap = L->cap ? 2 * L->cap : 8;
    L->val = kl_xrealloc(L->val, (size_t)L->cap * sizeof *L->val);
    L->has = kl_xrealloc(L->has, (size_t)L->cap * sizeof *L->has);
    L->strides = kl_xrealloc(L->strides, (size_t)L->cap * sizeof *L->strides);
  }
  L->val[L->n] = v;
  L->has[L->n] = has;
  for (int k = 0; k < KL_MAX_RANK; k++) L->strides[L->n][k] = has && k < v->type->rank ? s[k] : 0;
  return L->n++;
}
/* Output i's layout for value v: false when it declares none or the value's own. */
static bool declared_layout(kl_op *graph, int i, kl_value *v, int64_t *s) {
  const kl_type *t = v->type;
  if (!kl_type_is_shaped(t) || !kl_graph_output_strides(graph, i, s)) return false;
  return !kl_strides_equivalent(t->rank, t->shape, t->strides, s);
}
static void layout_results(part *p, kl_op *graph, group *g, result_layouts *L) {
  memset(L, 0, sizeof *L);
  L->nret = p->ret->nopnds;
  L->ret_res = kl_xmalloc((size_t)(L->nret + 1) * sizeof *L->ret_res);
  for (int i = 0; i < L->nret; i++) L->ret_res[i] = -1;
  for (int r = 0; r < g->nres; r++) {
    kl_value *v = g->res[r];
    int64_t s[KL_MAX_RANK];
    bool has = false;
    for (int i = 0; i < L->nret; i++)
      if (p->ret->opnds[i].value == v) {
        has = declared_layout(graph, i, v, s);
        break;
      }
    push_layout(L, v, has, s);
  }
  for (int i = 0; i < L->nret; i++) {
    kl_value *v = p->ret->opnds[i].value;
    int64_t s[KL_MAX_RANK];
    bool has = false, mine = false;
    for (int r = 0; r < g->nres && !mine; r++) mine = g->res[r] == v;
    if (!mine) continue;
    has = declared_layout(graph, i, v, s);
    int e = -1;
    for (int k = 0; k < L->n && e < 0; k++)
      if (L->val[k] == v && L->has[k] == has &&
          (!has || kl_strides_equivalent(v->type->rank, v->type->shape, L->strides[k], s)))
        e = k;
    L->ret_res[i] = e >= 0 ? e : push_layout(L, v, has, s);
  }
}

/* Extracts group g into a kernel function inserted after *after; replaces it in the
 * graph by a graph.launch inserted before `at`. */
static void extract(part *p, kl_op *module, kl_op *graph, group *g, int index, kl_op **after, kl_op *at) {
  kl_ctx *ctx = p->ctx;
  kl_value **leaves;
  kl_op **imm;
  int nimm;
  int nleaves = group_leaves(p, g, &leaves, &imm, &nimm);
  bool any_member = false;
  for (int pos = 0; pos < p->nops && !any_member; pos++) any_member = g->member[pos];
  if (!any_member) leaves[nleaves++] = g->res[0]; /* a copy of a param / constant (leaves has room: cap 8) */

  const char *gname = kl_op_attr_string(graph, "sym_name");
  char name[256];
  unique_name(module, gname ? gname : "graph", index, name, sizeof name);
  int64_t prim[64];
  int nprim = 0;
  for (int j = 0; j < nleaves && nprim < 64; j++)
    if (leaves[j]->def && kl_op_attr(leaves[j]->def, "primary")) prim[nprim++] = j;
  kl_named_attr fa[] = { { "kernel_group", kl_attr_unit(ctx) },
                         { "kind", kl_attr_str(ctx, kind_names[g->kind]) },
                         { "sym_name", kl_attr_str(ctx, name) },
                         { "primary", kl_attr_i64_array(ctx, nprim, prim) } };
  kl_loc loc = g->res[0]->def ? g->res[0]->def->loc : graph->loc;
  if (g->anchor >= 0) loc = p->ops[g->anchor]->loc;
  kl_op *fn = kl_op_create(ctx, "func.func", loc, 0, NULL, 0, NULL, nprim ? 4 : 3, fa, 1);
  kl_block *body = kl_block_create(ctx);
  kl_region_push_block(&fn->regions[0], body);
  kl_value_map map = { 0 };
  for (int j = 0; j < nleaves; j++) kl_value_map_set(&map, leaves[j], kl_block_add_arg(ctx, body, leaves[j]->type));
  for (int j = 0; j < nimm; j++) kl_block_push_op(body, kl_op_clone(imm[j], &map));
  for (int pos = 0; pos < p->nops; pos++)
    if (g->member[pos]) kl_block_push_op(body, kl_op_clone(p->ops[pos], &map));
  /* the results in the layouts the graph's outputs declare: one per (value, layout) */
  result_layouts L;
  layout_results(p, graph, g, &L);
  /* a GEMM kernel writes every layout itself; the other kinds write one result each (one
   * whole-op kernel op), so a further layout of their result is a copy kernel after them */
  int nk = g->kind == K_GEMM ? L.n : g->nres;
  kl_value **rs = kl_xmalloc((size_t)L.n * sizeof *rs);
  const kl_type **rt = kl_xmalloc((size_t)L.n * sizeof *rt);
  const kl_attr **ra = kl_xmalloc((size_t)L.n * sizeof *ra);
  bool any_layout = false;
  for (int r = 0; r < L.n; r++) {
    const kl_type *t = L.val[r]->type;
    rs[r] = kl_value_map_get(&map, L.val[r]);
    rt[r] = L.has[r] ? kl_type_tensor(ctx, t->elem, t->rank, t->shape, L.strides[r]) : t;
    if (!rt[r]) rt[r] = t; /* kl_graph_output_layout checked the strides */
    ra[r] = kl_attr_i64_array(ctx, rt[r] != t ? t->rank : 0, L.strides[r]);
    any_layout = any_layout || (r < nk && rt[r] != t);
  }
  if (any_layout) kl_op_set_attr(fn, "result_strides", kl_attr_array(ctx, nk, ra));
  kl_block_push_op(body, kl_op_create(ctx, "func.return", loc, nk, rs, 0, NULL, 0, NULL, 0));
  kl_value_map_free(&map);
  kl_op_insert_after(*after, fn);
  *after = fn;

  /* the launch */
  kl_named_attr la = { "callee", kl_attr_symref(ctx, name) };
  kl_op *launch = kl_op_create(ctx, "graph.launch", loc, nleaves, leaves, nk, rt, 1, &la, 0);
  kl_op_insert_before(at, launch);
  for (int r = 0; r < g->nres; r++) {
    kl_value *lr = kl_op_result(launch, r);
    lr->name_hint = g->res[r]->name_hint;
    if (g->return_only[r]) {
      for (int i = 0; i < p->ret->nopnds; i++)
        if (p->ret->opnds[i].value == g->res[r]) kl_op_set_operand(p->ret, i, lr);
    } else {
      kl_value_replace_all_uses(g->res[r], lr);
    }
  }
  /* each output reads the result of its own layout */
  for (int i = 0; i < L.nret; i++)
    if (L.ret_res[i] >= 0 && L.ret_res[i] < nk) kl_op_set_operand(p->ret, i, kl_op_result(launch, L.ret_res[i]));
  kl_op *last = launch;
  for (int e = nk; e < L.n; e++) {
    int b = 0;
    while (L.val[b] != L.val[e]) b++; /* its entry among the kernel's results */
    kl_value *src = kl_op_result(launch, b);
    char cname[300];
    snprintf(cname, sizeof cname, "%s_layout%d", name, e - nk);
    for (int k = 1; kl_module_lookup(module, cname); k++)
      snprintf(cname, sizeof cname, "%s_layout%d_%d", name, e - nk, k);
    const kl_attr *one = kl_attr_i64_array(ctx, rt[e]->rank, rt[e]->strides); /* the source has another layout */
    kl_named_attr ca[] = { { "kernel_group", kl_attr_unit(ctx) },
                           { "kind", kl_attr_str(ctx, kind_names[K_EW]) },
                           { "sym_name", kl_attr_str(ctx, cname) },
                           { "result_strides", kl_attr_array(ctx, 1, &one) } };
    kl_op *cf = kl_op_create(ctx, "func.func", loc, 0, NULL, 0, NULL, 4, ca, 1);
    kl_block *cb = kl_block_create(ctx);
    kl_region_push_block(&cf->regions[0], cb);
    kl_value *arg = kl_block_add_arg(ctx, cb, src->type);
    kl_block_push_op(cb, kl_op_create(ctx, "func.return", loc, 1, &arg, 0, NULL, 0, NULL, 0));
    kl_op_insert_after(*after, cf);
    *after = cf;
    kl_named_attr cl = { "callee", kl_attr_symref(ctx, cname) };
    kl_op *copy = kl_op_create(ctx, "graph.launch", loc, 1, &src, 1, &rt[e], 1, &cl, 0);
    kl_op_insert_after(last, copy);
    last = copy;
    kl_op_result(copy, 0)->name_hint = src->name_hint;
    for (int i = 0; i < L.nret; i++)
      if (L.ret_res[i] == e) kl_op_set_operand(p->ret, i, kl_op_result(copy, 0));
  }
  free(rs);
  free(rt);
  free(ra);
  result_layouts_free(&L);
  free(leaves);
  free(imm);
}

static void reset(part *p) {
  for (int i = 0; i < p->ngroups; i++) {
    free(p->groups[i].member);
    free(p->groups[i].res);
    free(p->groups[i].return_only);
  }
  p->ngroups = 0;
  for (int i = 0; i < p->nops; i++) {
    free(p->tag[i]);
    p->tag[i] = NULL;
    p->tag_n[i] = -1;
    p->assigned[i] = -1;
  }
}

/* Graph-level common subexpressions, before grouping: a conv / dot / reduce / softmax /
 * concat, view or constant equal to an earlier one (same op, operands in order,
 * attributes, result types) is replaced by it — two identical g:dot(a, b) are one GEMM.
 * Element-wise ops are not merged: a value that several kernels read would become a
 * kernel of its own, where each kernel now recomputes its copy in registers. Returns the
 * number of ops merged. */
static int merge_duplicates(kl_op *graph) {
  kl_block *body = kl_graph_body(graph);
  kl_hashmap seen = KL_STRMAP_INIT;
  int nkeys = 0, capkeys = 0, merged = 0;
  void **keys = NULL;
  for (kl_op *op = body->first, *next; op; op = next) {
    next = op->next;
    bool cand = op->nresults > 0 && op->nregions == 0 && kl_op_has_trait(op, KL_TRAIT_PURE) &&
        (kl_op_kernel_kind(op) != KL_KERNEL_NONE || is_view(op) || kl_graph_is_constant(op));
    if (!cand) continue;
    size_t n = (size_t)(1 + op->nopnds + 2 * op->nattrs + op->nresults);
    const void **key = kl_xmalloc(n * sizeof *key);
    size_t k = 0;
    key[k++] = op->name; /* names, attributes and types are interned in the context */
    for (int i = 0; i < op->nopnds; i++) key[k++] = op->opnds[i].value;
    for (int i = 0; i < op->nattrs; i++) {
      key[k++] = op->attrs[i].name;
      key[k++] = op->attrs[i].value;
    }
    for (int i = 0; i < op->nresults; i++) key[k++] = op->results[i].type;
    kl_hm_entry *e = kl_strmap_find(&seen, (const char *)key, n * sizeof *key);
    if (e) {
      kl_op *prev = e->val;
      for (int i = 0; i < op->nresults; i++) kl_value_replace_all_uses(&op->results[i], &prev->results[i]);
      kl_op_erase(op);
      merged++;
      free(key);
      continue;
    }
    kl_strmap_put(&seen, (const char *)key, n * sizeof *key, op);
    if (nkeys == capkeys) keys = kl_xrealloc(keys, (size_t)(capkeys = capkeys ? 2 * capkeys : 64) * sizeof *keys);
    keys[nkeys++] = key;
  }
  kl_hashmap_free(&seen);
  for (int i = 0; i < nkeys; i++) free(keys[i]);
  free(keys);
  return merged;
}

static bool immediate(kl_value *w);
/* Bytes of a tensor value (its elements; i1 counts a byte). */
static double tensor_bytes(const kl_type *t) {
  double n = 1;
  for (int i = 0; i < t->rank; i++) n *= (double)t->shape[i];
  int bits = kl_type_bits(t->elem);
  return n * (bits < 8 ? 1 : bits / 8);
}
/* Input fusion of a producer that something else reads too: the anchor gets its own
 * copy of the producer (and of the views between), marked `recomputed`, which joins the
 * anchor's kernel and is computed in its loads from the producer's inputs, while the
 * original stays for its other users (written once, by its own kernel). Done when that
 * is cheaper than reading the written result: the producer's distinct operands have no
 * more bytes than its result (a convert to a wider type, a scale by a broadcast vector,
 * x * x). Anchors' operands and reductions' inputs (reduction groups) are considered.
 * Otherwise the anchor reads the result. Returns the number of copies made. */
static int recompute_shared_producers(kl_op *graph) {
  kl_block *body = kl_graph_body(graph);
  int made = 0;
  for (kl_op *a = body->first; a; a = a->next) {
    if (!is_anchor(a) && !is_reduction(a)) continue;
    for (int i = 0; i < (is_anchor(a) ? a->nopnds : 1); i++) {
      kl_op *chain[64];
      int n = 0;
      kl_value *w = a->opnds[i].value;
      while (w->def && is_view(w->def) && n < 63) {
        chain[n++] = w->def;
        w = w->def->opnds[0].value;
      }
      kl_op *prod = w->def;
      if (!prod || !is_ew(prod) || kl_op_attr(prod, "recomputed")) continue;
      /* used only along this chain: it joins the kernel as it is */
      int uses = 0;
      for (kl_use *u = w->first_use; u; u = u->next) uses++;
      bool exclusive = uses == 1;
      for (int k = 0; k < n && exclusive; k++) {
        int vu = 0;
        for (kl_use *u = chain[k]->results[0].first_use; u; u = u->next) vu++;
        exclusive = vu == 1;
      }
      if (exclusive) continue;
      double in = 0;
      for (int k = 0; k < prod->nopnds; k++) {
        bool again = false; /* x * x reads x once */
        for (int j = 0; j < k && !again; j++) again = prod->opnds[j].value == prod->opnds[k].value;
        if (!again && !immediate(prod->opnds[k].value)) in += tensor_bytes(prod->opnds[k].value->type);
      }
      if (in > tensor_bytes(prod->results[0].type)) continue;
      kl_value_map map = { 0 };
      kl_op *c = kl_op_clone(prod, &map);
      kl_op_set_attr(c, "recomputed", kl_attr_unit(graph->ctx));
      kl_op_insert_before(a, c);
      kl_value *top = kl_op_result(c, 0);
      for (int k = n - 1; k >= 0; k--) {
        kl_op *v = kl_op_clone(chain[k], &map);
        kl_op_insert_before(a, v);
        top = kl_op_result(v, 0);
      }
      kl_value_map_free(&map);
      kl_op_set_operand(a, i, top);
      made++;
    }
  }
  return made;
}

static kl_status build_groups(part *p) {
  kl_ctx *ctx = p->ctx;
  kl_op *ret = p->ret;
  /* anchors first, in block order */
  for (int pos = 0; pos < p->nops; pos++)
    if (is_anchor(p->ops[pos])) build_anchor_group(p, pos);
  /* reductions (with their producers and consumers), in block order */
  for (int pos = 0; pos < p->nops; pos++)
    if (is_reduction(p->ops[pos]) && p->assigned[pos] < 0) build_reduction_group(p, pos);
  /* the rest, last op first */
  for (int pos = p->nops - 1; pos >= 0; pos--) {
    kl_op *op = p->ops[pos];
    if (is_plan(op) || op == ret || p->assigned[pos] >= 0 || is_anchor(op)) continue;
    if (is_ew(op)) {
      build_ew_group(p, pos, false);
    } else if (is_view(op)) {
      bool returned = false;
      for (kl_use *u = op->results[0].first_use; u; u = u->next) returned = returned || u->user == ret;
      bool covered = false; /* already a result of a group */
      for (int i = 0; i < p->ngroups && !covered; i++)
        for (int r = 0; r < p->groups[i].nres && !covered; r++) covered = p->groups[i].res[r] == kl_op_result(op, 0);
      if (!returned || covered) continue;
      group *g = new_group(p, K_EW, pos);
      add_result(g, kl_op_result(op, 0), true);
      g->member[pos] = 1;
      absorb_operands(p, g, op, true);
      grow(p, g, pos);
    } else if (own_kernel(op) >= 0) {
      group *g = new_group(p, own_kernel(op), pos);
      add_result(g, kl_op_result(op, 0), false);
      take(p, g, pos);
      absorb_operands(p, g, op, false);
    } else {
      return kl_emit_error(ctx, op->loc, "graph-partition: cannot place op '%s' in a kernel", op->name);
    }
  }
  /* outputs that are params / constants (or block arguments) themselves: copies */
  for (int i = 0; i < ret->nopnds; i++) {
    kl_value *v = ret->opnds[i].value;
    bool copy = !v->def || kl_op_has_trait(v->def, KL_TRAIT_PLAN_INPUT);
    for (int j = 0; j < i && copy; j++) copy = ret->opnds[j].value != v;
    if (copy) add_result(new_group(p, K_EW, p->nops), v, true);
  }
  return KL_OK;
}

static kl_status partition_graph(kl_op *module, kl_op *graph, bool input_fusion, bool fusion_cost) {
  kl_ctx *ctx = graph->ctx;
  kl_block *body = kl_graph_body(graph);
  kl_op *ret = kl_graph_return(graph);
  if (!ret) return kl_emit_error(ctx, graph->loc, "graph-partition: graph has no func.return");
  merge_duplicates(graph);
  remove_dead(body);
  if (input_fusion) recompute_shared_producers(graph);
  const char *tn = kl_op_attr_string(module, "target");
  const kl_target *tgt = kl_target_lookup(tn ? tn : "host");
  part P = { .ctx = ctx,
             .input_fusion = input_fusion,
             .fusion_cost = fusion_cost,
             .tgt = tgt,
             .ret = ret,
             .atomic_f32 = tgt && (tgt->atomic_add & KL_ATOMIC_ADD_F32),
             .minmax_f32 = tgt && (tgt->atomic_minmax & KL_ATOMIC_MINMAX_F32) };
  part *p = &P;
  for (kl_op *op = body->first; op; op = op->next) p->nops++;
  p->ops = kl_xmalloc((size_t)p->nops * sizeof *p->ops);
  p->assigned = kl_xmalloc((size_t)(p->nops + 1) * sizeof(int));
  p->dep = kl_xcalloc((size_t)p->nops + 1, 1);
  p->anydep = kl_xcalloc((size_t)p->nops + 1, 1);
  p->tag_n = kl_xmalloc((size_t)(p->nops + 1) * sizeof(int));
  p->tag = kl_xcalloc((size_t)p->nops + 1, sizeof *p->tag);
  p->bfac = kl_xcalloc((size_t)p->nops + 1, sizeof *p->bfac);
  p->cand = kl_xcalloc((size_t)p->nops + 1, 1);
  p->declined = kl_xcalloc((size_t)p->nops + 1, 1);
  int i = 0;
  for (kl_op *op = body->first; op; op = op->next, i++) {
    p->ops[i] = op;
    op->scratch = i;
    p->assigned[i] = p->tag_n[i] = -1;
    p->anydep[i] = is_anchor(op);
    for (int k = 0; k < op->nopnds && !p->anydep[i]; k++) {
      int q = pos_of(p, op->opnds[k].value);
      p->anydep[i] = q >= 0 && q < i && p->anydep[q];
    }
  }
  kl_status st = build_groups(p);
  if (st == KL_OK && !order_groups(p)) {
    /* two groups would wait on each other: group again without epilogue side inputs
     * that an anchor result reaches (acyclic by construction) */
    reset(p);
    p->strict_side = true;
    st = build_groups(p);
    if (st == KL_OK && !order_groups(p))
      st = kl_emit_error(ctx, graph->loc, "graph-partition: the kernels of this graph depend on each other");
  }
  if (st == KL_OK && p->ngroups) {
    group **order = kl_xmalloc((size_t)p->ngroups * sizeof *order);
    for (i = 0; i < p->ngroups; i++) order[i] = &p->groups[i];
    qsort(order, (size_t)p->ngroups, sizeof *order, cmp_group);
    /* params and constants (no operands) and the launches already there that read only
     * those go to the top, in their order; the new launches follow in group order; the
     * other existing launches (they read graph ops) go before the return */
    kl_op *top = NULL;
    for (i = 0; i < p->nops; i++) {
      kl_op *op = p->ops[i];
      if (!is_plan(op)) continue;
      bool early = true;
      for (int k = 0; k < op->nopnds && early; k++) {
        kl_op *d = op->opnds[k].value->def;
        early = !d || (d->block == body && is_plan(d) && d->scratch >= 0 && d->scratch < i && p->ops[d->scratch] == d);
      }
      kl_op_unlink(op);
      if (!early) {
        kl_op_insert_before(ret, op);
        op->scratch = -2;
      } else if (top) {
        kl_op_insert_after(top, op);
      } else if (body->first) {
        kl_op_insert_before(body->first, op);
      } else {
        kl_block_push_op(body, op);
      }
      if (early) top = op;
    }
    kl_op *at = top ? top->next : body->first;
    kl_op *after = graph;
    for (i = 0; i < p->ngroups; i++) extract(p, module, graph, order[i], i, &after, at);
    free(order);
    for (i = p->nops - 1; i >= 0; i--) {
      kl_op *op = p->ops[i];
      if (is_plan(op) || op == ret) continue;
      kl_op_drop_all_uses(op);
    }
    for (i = p->nops - 1; i >= 0; i--) {
      kl_op *op = p->ops[i];
      if (is_plan(op) || op == ret) continue;
      if (kl_op_erase(op) != KL_OK) st = KL_ERR;
    }
    /* constants the kernels took as immediates */
    for (kl_op *op = body->first, *next; op; op = next) {
      next = op->next;
      if (kl_graph_is_constant(op) && kl_op_results_unused(op)) kl_op_erase(op);
    }
  }
  reset(p);
  free(p->groups);
  free(p->ops);
  free(p->assigned);
  free(p->dep);
  free(p->anydep);
  free(p->tag_n);
  free(p->tag);
  free(p->bfac);
  free(p->cand);
  free(p->declined);
  return st;
}

kl_status kl_graph_partition_with(kl_op *module, bool input_fusion, bool fusion_cost) {
  kl_block *mb = kl_module_body(module);
  if (!mb) return KL_OK;
  int n = 0;
  for (kl_op *op = mb->first; op; op = op->next)
    if (kl_is_graph(op)) n++;
  kl_op **graphs = kl_xmalloc((size_t)(n ? n : 1) * sizeof *graphs);
  n = 0;
  for (kl_op *op = mb->first; op; op = op->next)
    if (kl_is_graph(op)) graphs[n++] = op;
  kl_status st = KL_OK;
  for (int i = 0; i < n && st == KL_OK; i++) st = partition_graph(module, graphs[i], input_fusion, fusion_cost);
  free(graphs);
  return st;
}
kl_status kl_graph_partition(kl_op *module) { return kl_graph_partition_with(module, true, true); }

static kl_status run_partition(kl_op *module, const kl_pass_options *o, void *user) {
  return kl_graph_partition_with(module, kl_pass_opt_bool(o, "input-fusion"), kl_pass_opt_bool(o, "input-fusion-cost"));
}

static const kl_pass_option options[] = {
  { "input-fusion", KL_OPT_BOOL, "true",
    "element-wise producers of a conv/dot operand or of a reduction's input join its kernel (fused into its "
    "loads); false: they become kernels of their own" },
  { "input-fusion-cost", KL_OPT_BOOL, "true",
    "a conv/dot operand's producer chain that reads wider inputs than the operand (a convert f32 -> f16) is fused "
    "only where passes/input_fusion_cost.h's rule says fusing costs less (targets with measured rates: sm_90, "
    "sm_90a); false: every such prologue is fused" },
};

void kl__register_graph_partition(kl_ctx *ctx);
void kl__register_graph_partition(kl_ctx *ctx) {
  kl_pass_info info = {
    "graph-partition",
    "groups every graph's ops into kernels (conv/dot with element-wise prologues and epilogues, fan-out and "
    "several outputs; element-wise; reduce; softmax; concat; copies) and replaces each group by a graph.launch "
    "of a kernel_group function",
    options,
    2,
    run_partition,
    NULL
  };
  kl_register_pass(ctx, &info);
}
