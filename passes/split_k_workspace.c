/* split_k_workspace.c — the `split-k-workspace` pass: split-K through a workspace, for
 * the GEMMs whose output cannot take atomic adds.
 *
 * Which GEMMs (graph.dot, 2-D graph.conv, float operands, an f32 / f16 / bf16 result;
 * graph level, before graph-partition). The split count S: the splitK of the perf config
 * (option `perf-config`, which the driver sets from the compile's perf_config, else the
 * op's `perf_config` attribute), else the heuristic of passes/gemm_split.h on the tiles
 * and kPerBlock of the config rock-gemm-to-gridwise would pick for the target, or its
 * joint choice of split and tiles (kl_gemm_split_choose, sm_90; dots and convs) (option
 * `target`, else the module's): few output tiles for the compute units and a long K.
 * The rule (rocMLIR's, kept simple): an f32 result on a target with native f32 atomic
 * adds that no element-wise op reads (the GEMM writes it directly, or sums it into a
 * reduce_sum: GEMM + reduce) keeps the atomic form of rock-gemm-to-gridwise (this pass
 * leaves it alone). Every other split GEMM — an f16 / bf16 result, any epilogue (a
 * linear one too: kiln runs every epilogue after the reduction, which is always
 * correct), a target without the atomic (gfx1030) — takes the workspace form here, but
 * for a result that only reductions read (GEMM + reduce keeps its own form).
 *
 * Rewrite of y = dot(a, b) (batch dims broadcast, transpose_a / transpose_b kept), K the
 * contraction length, Kc = floor(K / S), R = K - S * Kc:
 *   a', b' = a, b with the batch ranks made equal (leading 1s), K sliced to [0, S*Kc),
 *            reshaped to (S, Kc) and S moved to the front (views: reshape, slice,
 *            transpose; the GEMM's loads read through them)
 *   p      = dot(a', b') {dtype = f32, split_k_partials = S}  [S, batch..., M, N]: the
 *            workspace (an intermediate of the plan: alloc_workspace ... free)
 *   s      = p[0] + p[1] + ... + p[S-1] (slices of p, a pairwise tree of f32 adds)
 *            (+ f32(a[..., :, k]) * f32(b[..., k, :]) for k in [S*Kc, K): outer products,
 *            element-wise, when 0 < R <= MAX_REST_OUTER, S + 2R <= MAX_SUM_READS and a, b
 *            are f32 / f16 / bf16;
 *            else + dot(a[..., S*Kc:], b[S*Kc:, ...]) {dtype = f32} when R > 0)
 *   y      = convert(s) to y's type (f16 / bf16), which replaces y: the epilogue reads it.
 * A conv x [N, C, H, W], w [Kout, C/g, Y, X] (g groups) splits its input channels per
 * group Cg into S slices of Cc = floor(Cg / S) as a grouped conv: groups g*S over the
 * same input (sliced to the first S*Cc channels when R = Cg - S*Cc > 0, only with g = 1),
 * the filter viewed as [g*S*Kg, Cc, Y, X] (reshape [g, Kg, S, Cc, Y, X], transpose of Kg
 * and S, reshape), p = [N, g*S*Kg, Ho, Wo] viewed as [N, g, S, Kg, Ho, Wo] for the slices;
 * the remainder is a conv of the last R channels.
 * graph-partition then makes p's GEMM one kernel and the sum, the convert and the
 * epilogue one element-wise kernel at the output's coordinates (a short reduction over S
 * is S reads per output point: no reduce kernel is needed, and the epilogue fuses by
 * the element-wise rules; the outer products of a short remainder fuse there too); a
 * remainder GEMM takes the sum as a side input of its own epilogue, so the whole op stays
 * two kernels (that epilogue reads all S partials of its register tile before adding). split_k_partials tells
 * rock-gemm-to-gridwise not to split p's GEMM again.
 * A given S above 32 (MAX_ADDS: the element-wise kernel's operands) sums the partials in a
 * reduce_sum kernel instead (three kernels; where the target adds f32 atomically GEMM +
 * reduce makes that the GEMM's atomic adds after a prefill: two kernels); the heuristic
 * stays at or below 32, but for dots on targets with the joint choice (sm_90,
 * kl_gemm_split_joint) and f32 atomics, which split up to KL_SPLIT_MAX.
 * The heuristic's S is the largest divisor of K (a conv: of Cg) in [S'/2, S'] for the
 * heuristic's S', else S' with a remainder (a grouped conv: no split). A given S larger
 * than K (a conv: than Cg), or a remainder of a grouped conv, is an error at the op. */
#include "core/dialect_graph.h"
#include "core/pass.h"
#include "core/rewrite.h"
#include "core/target.h"
#include "passes/gemm_shape.h"
#include "passes/gemm_split.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Partials the element-wise sum reads at most (one operand each; an element-wise kernel
 * takes 64); a larger given split sums them in a reduce kernel (three kernels). */
#define MAX_ADDS 32

typedef struct sk_opts {
  const char *perf;   /* the perf-config option ("" none) */
  const kl_target *t; /* the module's target */
} sk_opts;

static kl_value *make(kl_rewriter *rw, const char *name, kl_loc loc, int n, kl_value **x, int na,
                      const kl_named_attr *at) {
  const kl_type *ts[2] = { x[0]->type, n > 1 ? x[1]->type : NULL };
  const kl_type *rt = kl_graph_infer(kl_rewriter_ctx(rw), name, loc, n, ts, na, at, NULL);
  kl_op *op = rt ? kl_rewriter_create(rw, name, loc, n, x, 1, &rt, na, at, 0) : NULL;
  return op ? kl_op_result(op, 0) : NULL;
}
static kl_value *convert(kl_rewriter *rw, kl_loc loc, kl_value *x, const kl_type *elem) {
  const kl_type *rt = kl_graph_infer(kl_rewriter_ctx(rw), "graph.convert", loc, 1, &x->type, 0, NULL, elem);
  kl_op *op = rt ? kl_rewriter_create(rw, "graph.convert", loc, 1, &x, 1, &rt, 0, NULL, 0) : NULL;
  return op ? kl_op_result(op, 0) : NULL;
}
static kl_value *reshape(kl_rewriter *rw, kl_loc loc, kl_value *x, int r, const int64_t *shape) {
  if (!x) return NULL;
  kl_named_attr at = { "shape", kl_attr_i64_array(kl_rewriter_ctx(rw), r, shape) };
  return make(rw, "graph.reshape", loc, 1, &x, 1, &at);
}
/* x[..., lo:hi, ...] along axis ax */
static kl_value *slice(kl_rewriter *rw, kl_loc loc, kl_value *x, int ax, int64_t lo, int64_t hi) {
  if (!x) return NULL;
  int r = x->type->rank;
  int64_t b[KL_MAX_RANK], e[KL_MAX_RANK];
  for (int d = 0; d < r; d++) b[d] = 0, e[d] = x->type->shape[d];
  b[ax] = lo;
  e[ax] = hi;
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_named_attr at[2] = { { "begin", kl_attr_i64_array(ctx, r, b) }, { "end", kl_attr_i64_array(ctx, r, e) } };
  return make(rw, "graph.slice", loc, 1, &x, 2, at);
}
static kl_value *transpose(kl_rewriter *rw, kl_loc loc, kl_value *x, int r, const int64_t *perm) {
  if (!x) return NULL;
  bool id = true;
  for (int d = 0; d < r; d++) id = id && perm[d] == d;
  if (id) return x;
  kl_named_attr at = { "perm", kl_attr_i64_array(kl_rewriter_ctx(rw), r, perm) };
  return make(rw, "graph.transpose", loc, 1, &x, 1, &at);
}
/* graph op name ("graph.add", "graph.mul") of x and y; NULL where either is */
static kl_value *binary(kl_rewriter *rw, const char *name, kl_loc loc, kl_value *x, kl_value *y) {
  if (!x || !y) return NULL;
  kl_value *xy[2] = { x, y };
  return make(rw, name, loc, 2, xy, 0, NULL);
}
static kl_value *add(kl_rewriter *rw, kl_loc loc, kl_value *x, kl_value *y) {
  return binary(rw, "graph.add", loc, x, y);
}
/* The anchor again over operands x, y with the attributes of op except groups / dtype,
 * plus dtype f32, groups (a conv; 0: none) and split_k_partials (0: none). */
static kl_value *anchor(kl_rewriter *rw, kl_op *op, kl_value *x, kl_value *y, int64_t groups, int64_t parts) {
  if (!x || !y) return NULL;
  kl_ctx *ctx = op->ctx;
  kl_named_attr at[32];
  int na = 0;
  for (int i = 0; i < op->nattrs && na < 28; i++)
    if (strcmp(op->attrs[i].name, "groups") && strcmp(op->attrs[i].name, "dtype") &&
        strcmp(op->attrs[i].name, "split_k_partials"))
      at[na++] = op->attrs[i];
  at[na++] = (kl_named_attr){ "dtype", kl_attr_type(ctx, kl_type_f32(ctx)) };
  if (groups) at[na++] = (kl_named_attr){ "groups", kl_attr_int(ctx, groups) };
  if (parts) at[na++] = (kl_named_attr){ "split_k_partials", kl_attr_int(ctx, parts) };
  kl_value *xy[2] = { x, y };
  return make(rw, op->name, op->loc, 2, xy, na, at);
}
/* p[lo] + ... + p[hi - 1], pairwise; part(i) gives the i-th partial */
typedef struct parts {
  kl_rewriter *rw;
  kl_loc loc;
  kl_value *p;
  int ax; /* the S axis of p */
  int r;  /* the partials' rank and shape */
  const int64_t *shape;
} parts;
static kl_value *tree(parts *P, int64_t lo, int64_t hi) {
  if (lo == 0 && hi > MAX_ADDS) { /* a reduce kernel of its own, the sum read back */
    kl_ctx *ctx = kl_rewriter_ctx(P->rw);
    int64_t ax = P->ax;
    kl_named_attr at[2] = { { "axes", kl_attr_i64_array(ctx, 1, &ax) }, { "keepdims", kl_attr_bool(ctx, false) } };
    return reshape(P->rw, P->loc, make(P->rw, "graph.reduce_sum", P->loc, 1, &P->p, 2, at), P->r, P->shape);
  }
  if (hi - lo == 1) return reshape(P->rw, P->loc, slice(P->rw, P->loc, P->p, P->ax, lo, lo + 1), P->r, P->shape);
  int64_t mid = lo + (hi - lo) / 2;
  kl_value *l = tree(P, lo, mid), *r = l ? tree(P, mid, hi) : NULL;
  return add(P->rw, P->loc, l, r);
}

static bool flag(const kl_op *op, const char *name) {
  const kl_attr *a = kl_op_attr(op, name);
  return a && (a->kind == KL_AT_UNIT || (a->kind == KL_AT_BOOL && a->i));
}

static bool elementwise_reader(kl_value *v) {
  for (kl_use *u = v->first_use; u; u = u->next) {
    kl_op *U = u->user;
    if (kl_op_has_trait(U, KL_TRAIT_VIEW) ? elementwise_reader(kl_op_result(U, 0))
                                          : kl_op_has_trait(U, KL_TRAIT_ELEMENTWISE))
      return true;
  }
  return false;
}

/* Is v read only by reductions (GEMM + reduce: fused, or a reduce kernel after it)? */
static bool reductions_only(kl_value *v) {
  if (!v->first_use) return false;
  for (kl_use *u = v->first_use; u; u = u->next)
    if (kl_op_kernel_kind(u->user) != KL_KERNEL_REDUCE) return false;
  return true;
}

/* The heuristic's S adjusted to a divisor of E in [s/2, s], else s (remainder allowed)
 * or 1 (not). */
static int64_t fit(int64_t s, int64_t E, bool remainder_ok) {
  for (int64_t d = s; d >= 2 && 2 * d >= s; d--)
    if (E % d == 0) return d;
  return remainder_ok ? s : 1;
}

/* A remainder of at most MAX_REST_OUTER K columns is added as that many outer products
 * (element-wise, f32) in the sum kernel instead of a remainder GEMM: such a GEMM took the
 * sum as its epilogue, which reads all S partials of every accumulator before adding them
 * (rock-align-tiling reads whole register tiles): 16 partials of a 64x128 wgmma tile are
 * 1024 live f32 values per thread, which ptxas spilled (9 KB on sm_90a). The sum kernel
 * then reads S partials (1: a reduce kernel's sum) and 2R operand columns, at most
 * MAX_SUM_READS (an element-wise kernel takes 64 operands, the epilogue's inputs too). */
#define MAX_REST_OUTER 16
#define MAX_SUM_READS  40

static bool outer_ok(const kl_value *x) {
  kl_type_kind k = x->type->elem->kind;
  return k == KL_TY_F32 || k == KL_TY_F16 || k == KL_TY_BF16;
}
/* The last two axes of x swapped (x of rank >= 2). */
static kl_value *swap2(kl_rewriter *rw, kl_loc loc, kl_value *x) {
  if (!x) return NULL;
  int r = x->type->rank;
  int64_t perm[KL_MAX_RANK];
  for (int d = 0; d < r; d++) perm[d] = d;
  perm[r - 2] = r - 1;
  perm[r - 1] = r - 2;
  return transpose(rw, loc, x, r, perm);
}
/* f32(a[..., :, k]) * f32(b[..., k, :]) (transposes per ta / tb; ka / kb the K axes): the
 * [..., M, N] outer product of column k, batch dims broadcast as the dot's. */
static kl_value *outer(kl_rewriter *rw, kl_loc loc, kl_value *a, int ka, bool ta, kl_value *b, int kb, bool tb,
                       int64_t k) {
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_value *ak = slice(rw, loc, a, ka, k, k + 1), *bk = slice(rw, loc, b, kb, k, k + 1);
  if (ta) ak = swap2(rw, loc, ak); /* [..., M, 1] */
  if (tb) bk = swap2(rw, loc, bk); /* [..., 1, N] */
  if (ak && ak->type->elem->kind != KL_TY_F32) ak = convert(rw, loc, ak, kl_type_f32(ctx));
  if (bk && bk->type->elem->kind != KL_TY_F32) bk = convert(rw, loc, bk, kl_type_f32(ctx));
  return binary(rw, "graph.mul", loc, ak, bk);
}

static kl_status split_dot(kl_rewriter *rw, kl_op *op, int64_t S, int64_t K) {
  kl_loc loc = op->loc;
  kl_value *a = op->opnds[0].value, *b = op->opnds[1].value;
  const kl_type *yt = op->results[0].type;
  bool ta = flag(op, "transpose_a");
  bool tb = flag(op, "transpose_b");
  int nb = yt->rank - 2, r = nb + 2;
  if (r + 1 > KL_MAX_RANK) return kl_emit_error(op->ctx, loc, "split-k-workspace: rank %d + 1 is above the limit", r);
  int64_t Kc = K / S, R = K - S * Kc;
  kl_value *ops[2] = { a, b }, *split[2];
  for (int i = 0; i < 2; i++) {
    kl_value *v = ops[i];
    const kl_type *t = v->type;
    int64_t sh[KL_MAX_RANK];
    int lead = r - t->rank;
    for (int d = 0; d < r; d++) sh[d] = d < lead ? 1 : t->shape[d - lead];
    if (lead) v = reshape(rw, loc, v, r, sh);
    int kax = i == 0 ? (ta ? r - 2 : r - 1) : (tb ? r - 1 : r - 2);
    if (R) v = slice(rw, loc, v, kax, 0, S * Kc);
    int64_t s2[KL_MAX_RANK], perm[KL_MAX_RANK];
    int n = 0;
    for (int d = 0; d < r; d++) {
      if (d == kax) {
        s2[n++] = S;
        s2[n++] = Kc;
      } else {
        s2[n++] = sh[d];
      }
    }
    v = reshape(rw, loc, v, r + 1, s2);
    perm[0] = kax;
    for (int d = 0, k = 1; d <= r; d++)
      if (d != kax) perm[k++] = d;
    split[i] = transpose(rw, loc, v, r + 1, perm);
  }
  kl_value *p = anchor(rw, op, split[0], split[1], 0, S);
  if (!p) return KL_ERR;
  parts P = { rw, loc, p, 0, yt->rank, yt->shape };
  kl_value *s = tree(&P, 0, S);
  if (R && s) {
    int ka = ta ? a->type->rank - 2 : a->type->rank - 1, kb = tb ? b->type->rank - 1 : b->type->rank - 2;
    int64_t reads = (S > MAX_ADDS ? 1 : S) + 2 * R; /* the sum kernel's operands before the epilogue's */
    if (R <= MAX_REST_OUTER && reads <= MAX_SUM_READS && outer_ok(a) && outer_ok(b)) {
      for (int64_t k = S * Kc; k < K && s; k++) s = add(rw, loc, s, outer(rw, loc, a, ka, ta, b, kb, tb, k));
    } else {
      kl_value *rest = anchor(rw, op, slice(rw, loc, a, ka, S * Kc, K), slice(rw, loc, b, kb, S * Kc, K), 0, 1);
      s = add(rw, loc, s, rest);
    }
  }
  if (s && yt->elem->kind != KL_TY_F32) s = convert(rw, loc, s, yt->elem);
  if (!s) return KL_ERR;
  kl_rewriter_replace_op(rw, op, &s);
  return KL_OK;
}

static kl_status split_conv(kl_rewriter *rw, kl_op *op, int64_t S, int64_t g) {
  kl_loc loc = op->loc;
  kl_value *x = op->opnds[0].value, *w = op->opnds[1].value;
  const kl_type *yt = op->results[0].type, *wt = w->type;
  int64_t Kout = wt->shape[0], Cg = wt->shape[1], Kg = Kout / g, Cc = Cg / S, R = Cg - S * Cc;
  int64_t Y = wt->shape[2], X = wt->shape[3];
  kl_value *xs = R ? slice(rw, loc, x, 1, 0, S * Cc) : x, *ws = R ? slice(rw, loc, w, 1, 0, S * Cc) : w;
  int64_t s6[6] = { g, Kg, S, Cc, Y, X }, perm[6] = { 0, 2, 1, 3, 4, 5 }, s4[4] = { g * S * Kg, Cc, Y, X };
  kl_value *wv = reshape(rw, loc, transpose(rw, loc, reshape(rw, loc, ws, 6, s6), 6, perm), 4, s4);
  kl_value *p = anchor(rw, op, xs, wv, g * S, S);
  if (!p) return KL_ERR;
  const int64_t *ys = yt->shape;
  int64_t ps[6] = { ys[0], g, S, Kg, ys[2], ys[3] };
  parts P = { rw, loc, reshape(rw, loc, p, 6, ps), 2, 4, ys };
  kl_value *s = P.p ? tree(&P, 0, S) : NULL;
  if (R && s) {
    kl_value *rest = anchor(rw, op, slice(rw, loc, x, 1, S * Cc, Cg), slice(rw, loc, w, 1, S * Cc, Cg), 1, 1);
    s = add(rw, loc, s, rest);
  }
  if (s && yt->elem->kind != KL_TY_F32) s = convert(rw, loc, s, yt->elem);
  if (!s) return KL_ERR;
  kl_rewriter_replace_op(rw, op, &s);
  return KL_OK;
}

static kl_status split_one(kl_rewriter *rw, kl_op *op, const sk_opts *o) {
  kl_ctx *ctx = op->ctx;
  if (kl_op_attr(op, "split_k_partials") || op->nopnds != 2) return KL_OK;
  const kl_type *at = op->opnds[0].value->type, *bt = op->opnds[1].value->type, *yt = op->results[0].type;
  kl_type_kind yk = yt->elem->kind;
  if (!kl_type_is_float(at->elem) || (yk != KL_TY_F32 && yk != KL_TY_F16 && yk != KL_TY_BF16)) return KL_OK;
  for (int i = 0; i < yt->rank; i++)
    if (yt->shape[i] == 0) return KL_OK;
  kl_gemm_shape gs; /* the GEMM it becomes (passes/gemm_shape.h) */
  if (!kl_gemm_shape_of(op, &gs)) return KL_OK;
  bool conv = gs.conv;
  int64_t G = gs.G, M = gs.M, N = gs.N, K = gs.K, g = gs.groups, E = gs.k_extent;
  const char *given = o->perf && *o->perf ? o->perf : kl_op_attr_string(op, "perf_config");
  kl_gemm_split_est est;
  char err[512];
  if (!kl_gemm_split_estimate(o->t, at->elem, bt->elem, given, G, M, N, K, &est, err, sizeof err))
    return kl_emit_error(ctx, op->loc, "%s: %s", op->name, err);
  /* the atomic form (rock-gemm-to-gridwise) where it applies */
  bool atomic = yk == KL_TY_F32 && (o->t->atomic_add & KL_ATOMIC_ADD_F32) && !elementwise_reader(kl_op_result(op, 0));
  if (atomic || reductions_only(kl_op_result(op, 0))) return KL_OK;
  bool forced = given && *given;
  /* above MAX_ADDS the partials are summed by a reduce_sum, which GEMM + reduce turns into
   * atomic adds where the target has f32 atomics: with the joint choice a dot may split
   * that far (other targets stay at MAX_ADDS) */
  int64_t cap = !conv && (o->t->atomic_add & KL_ATOMIC_ADD_F32) && kl_gemm_split_joint(o->t) ? KL_SPLIT_MAX : MAX_ADDS;
  /* convs take the joint choice too: rock-conv-to-gemm reads the channel-sliced filter view
   * in the channels-last gemmK order where its views prove c contiguous, so the sliced GEMM
   * keeps the 16-byte (and cp.async) copies of the whole conv */
  int64_t S = forced ? est.split_k : kl_gemm_split_choose(o->t, at->elem, bt->elem, G, M, N, K, cap, &est);
  if (S <= 1) return KL_OK;
  if (forced && S > K)
    return kl_emit_error(ctx, op->loc, "%s: perf config %s: splitK (%lld) is larger than K (%lld)", op->name, given,
                         (long long)S, (long long)K);
  if (!forced) S = fit(S < cap ? S : cap, E, !conv || g == 1);
  if (S <= 1) return KL_OK;
  if (conv && S > E)
    return kl_emit_error(ctx, op->loc,
                         "%s: perf config %s: splitK (%lld) is larger than the input channels per group (%lld): the "
                         "workspace form splits the channels",
                         op->name, given, (long long)S, (long long)E);
  if (conv && g > 1 && E % S)
    return kl_emit_error(ctx, op->loc,
                         "%s: perf config %s: splitK (%lld) must divide the input channels per group (%lld) of a "
                         "grouped conv",
                         op->name, given, (long long)S, (long long)E);
  kl_rewriter_set_insertion_before(rw, op);
  return conv ? split_conv(rw, op, S, g) : split_dot(rw, op, S, K);
}

static kl_status run_sk(kl_op *module, const kl_pass_options *po, void *user) {
  (void)user;
  kl_block *mb = kl_module_body(module);
  if (!mb) return KL_OK;
  const char *tn = kl_pass_opt_string(po, "target");
  if (!tn || !*tn) tn = kl_op_attr_string(module, "target");
  sk_opts o = { kl_pass_opt_string(po, "perf-config"), kl_target_lookup(tn && *tn ? tn : "host") };
  if (!o.t) return kl_emit_error(module->ctx, module->loc, "split-k-workspace: unknown target '%s'", tn);
  kl_rewriter *rw = kl_rewriter_new(module->ctx);
  kl_status st = KL_OK;
  for (kl_op *gr = mb->first; gr && st == KL_OK; gr = gr->next) {
    if (!kl_is_graph(gr)) continue;
    kl_block *b = kl_graph_body(gr);
    kl_op *next;
    for (kl_op *op = b ? b->first : NULL; op && st == KL_OK; op = next) {
      next = op->next;
      if (kl_op_has_trait(op, KL_TRAIT_GEMM_ANCHOR)) st = split_one(rw, op, &o);
    }
  }
  kl_rewriter_free(rw);
  return st;
}

static const kl_pass_option options[] = {
  { "perf-config", KL_OPT_STRING, "",
    "the perf config of every conv/dot (its 7th field, splitK, is the split; default: the op's perf_config "
    "attribute, else the heuristic)" },
  { "target", KL_OPT_STRING, "", "the target whose compute units and atomics decide (default: the module's target)" },
};

void kl__register_split_k_workspace(kl_ctx *ctx);
void kl__register_split_k_workspace(kl_ctx *ctx) {
  kl_pass_info info = { "split-k-workspace",
                        "splits K of a narrow / K-heavy conv or dot whose output cannot take atomic adds (f16 / bf16, "
                        "an epilogue, no f32 atomics) into f32 partials over S slices (a workspace) and an "
                        "element-wise sum that runs the cast and the epilogue (two kernels)",
                        options,
                        (int)(sizeof options / sizeof options[0]),
                        run_sk,
                        NULL };
  kl_register_pass(ctx, &info);
}
