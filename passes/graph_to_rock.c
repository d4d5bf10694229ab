/* graph_to_rock.c — the `graph-to-rock` pass: every kernel_group function made by
 * graph-partition becomes a kernel function over buffers (core/dialect_rock.h).
 *
 *  - Signature: one global buffer per input tensor (same shape, strides, element type),
 *    then one output buffer per result (written in place; its strides are the result's
 *    entry of the function's `result_strides` when graph-partition set one — a layout the
 *    graph's output declares — else the result type's); attributes `kernel`, `kind`,
 *    `arg_names` = ["in0", ..., "out0"]; the body ends with func.return (no operands).
 *  - Graph view ops become chains of rock.transform (#view): transpose = PassThrough
 *    permutation, reshape = Merge/Unmerge, broadcast (explicit, or the implicit numpy
 *    broadcast of an element-wise operand) = Broadcast/AddDim, slice = Slice (+ Embed
 *    for steps > 1). A chain is emitted once per (buffer, views) pair.
 *  - Element-wise ops: ONE rock.elementwise per group result. Its iteration
 *    space is the group result's shape; each distinct (input, view path) pair is one
 *    operand, read through a rock.transform chain so that it has the output's shape;
 *    the body holds the scalar ops (arith / math; relu = maxf x 0; sigmoid = x >= 0 ?
 *    1 / (1 + e) : e / (1 + e) with e = exp(-|x|); clip = x < lo ? lo : x, then > hi ?
 *    hi (cmpf + select: the reference's order, ties keep x); convert = extf / truncf /
 *    sitofp / fptosi / extsi / trunci; where = select). A composite op (sigmoid) on
 *    f16/bf16 is computed in f32 and rounded once at its end, as the reference rounds
 *    each op once. pow is emitted as the (unregistered) scalar op "math.powf" (floats) /
 *    "math.ipowi" (integers). The body is built by an explicit-stack walk (fused chains
 *    may be hundreds of thousands of ops long).
 *  - graph.conv -> rock.conv and graph.dot -> rock.gemm (views a [G,K,M], b [G,K,N],
 *    c [G,M,N]; batch dims merged into G, broadcast batch dims by Broadcast/AddDim).
 *  - A "gemm" kernel_group is emitted in the PLAIN form (the contract rock-regularize and
 *    the fusion passes build on; views are NOT inverted here):
 *      * The anchor (conv / dot) is emitted ONCE per group. It writes the output buffer of
 *        the first func.return operand that IS the anchor result (unless another result
 *        reads the anchor result through graph views: that read would stay a view on a
 *        kernel argument, which rock-regularize does not move), else a fresh global
 *        `rock.alloc` with the anchor result's shape and strides, directly (for a dot the
 *        only views on that write are the [G,M,N] GEMM view; an output returning the
 *        anchor result is then an identity-body copy).
 *      * Every other (non-empty) group result is ONE rock.elementwise writing its output
 *        buffer directly; its iteration space is that result's shape and its body
 *        computes the result from leaves: the anchor result, read from the anchor's
 *        buffer through the rock.transform chain of the graph views in between
 *        (transpose, reshape, slice, broadcast, numpy broadcasts), and kernel inputs
 *        through theirs. Values shared by several results are recomputed in each body;
 *        nothing is written twice. A result that is only views of the anchor result is an
 *        identity-body elementwise (a copy). A result that does not read the anchor
 *        result, or one body reading it through two different views, is an error.
 *      * Prologues: an anchor operand that (below its graph views) is produced in the
 *        group by element-wise ops becomes ONE rock.elementwise (per producer value)
 *        that writes a fresh global rock.alloc of the producer's shape and strides
 *        directly, computing the whole producer tree from its leaves (kernel inputs
 *        through their views); the anchor reads that alloc through the remaining graph
 *        views and its GEMM operand view. Prologues are emitted before the anchor.
 *      * Primary input: when the kernel_group function has `primary = [i, ...]` (entry
 *        block argument indices), a prologue whose leaves include one of them gets
 *        `primary_input = k : i64`, k = the index among its inputs of the first such
 *        leaf. Without the attribute nothing is set.
 *    rock-regularize then moves the views off the fusing ops' accesses of the allocs.
 *  - graph.reduce_* -> rock.reduce (a keepdims=false output is written through AddDim
 *    views), graph.softmax -> rock.softmax, graph.concat -> ONE rock.elementwise over
 *    the output that reads each input through a Pad view along the axis (0 outside its
 *    slice) and adds them (exact, except that -0.0 becomes +0.0).
 *  - A one-element graph.constant inside a group (graph-partition copies scalar constants
 *    into the kernels that read them) is an immediate (arith.constant) in the body.
 *  - A gemm group returning reduce_sum / mean / max / min(dot) (graph-partition's GEMM +
 *    reduce fusion): the dot writes the reduce's output through a view of the dot's shape
 *    that ignores the reduced dims, rock.gemm {store = "atomic_add" (mean: store_scale =
 *    1 / count) | "atomic_max" | "atomic_min"}, and the kernel gets prefill = {"<out
 *    argument>" = 0.0 | -inf | +inf} (lower_gemm_reduce).
 *  - Empty tensors: a kernel whose output is empty does nothing; a dot / conv / reduce
 *    with an empty input fills its output with the op's identity (rock.fill).
 * Errors (anything the views cannot express) are diagnostics at the op's location. */
#include "core/dialect_builtin.h"
#include "core/dialect_graph.h"
#include "core/infer.h"
#include "core/scalar_ops.h"
#include "core/dialect_rock.h"
#include "core/pass.h"
#include "core/verify.h"
#include "passes/pass_util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ state */

typedef struct tchain {
  kl_value *base;
  int n;
  const kl_view **steps;
  kl_value *result;
} tchain;

typedef struct prologue {
  kl_value *old; /* the anchor operand's producer (below its graph views) */
  kl_value *buf; /* the global rock.alloc its rock.elementwise writes */
} prologue;

typedef struct g2r {
  kl_ctx *ctx;
  kl_op *fn;         /* the kernel_group function being converted */
  kl_block *ob;      /* its (old) entry block */
  kl_block *nb;      /* the new entry block */
  kl_value_map args; /* old block args -> new buffer args */
  kl_arena ar;       /* views and step arrays of this kernel */
  int nchains, capchains;
  tchain *chains;
  int nprologues, capprologues;
  prologue *prologues;
} g2r;

/* Copies a heap view into the arena and frees it. */
static const kl_view *keep(g2r *g, kl_view *v) {
  if (!v) return NULL;
  const kl_view *c = kl_view_copy_to_arena(v, &g->ar);
  kl_view_free(v);
  return c;
}

static bool steps_equal(int n, const kl_view *const *a, int m, const kl_view *const *b) {
  if (n != m) return false;
  for (int i = 0; i < n; i++)
    if (a[i] != b[i] && !kl_view_equal(a[i], b[i])) return false;
  return true;
}
static const kl_view **steps_push(g2r *g, int n, const kl_view *const *steps, const kl_view *v) {
  const kl_view **s = kl_arena_alloc(&g->ar, (size_t)(n + 1) * sizeof *s);
  if (n) memcpy(s, steps, (size_t)n * sizeof *s);
  s[n] = v;
  return s;
}

/* The buffer read through steps (steps[0] is applied at the top: its upper side is the
 * shape the reader sees; the last step's lower side is the base's shape). */
static kl_value *chain(g2r *g, kl_value *base, int n, const kl_view *const *steps, kl_loc loc) {
  if (n == 0) return base;
  for (int i = 0; i < g->nchains; i++)
    if (g->chains[i].base == base && steps_equal(g->chains[i].n, g->chains[i].steps, n, steps))
      return g->chains[i].result;
  kl_value *below = chain(g, base, n - 1, steps + 1, loc);
  kl_value *r = kl_pu_transform(g->ctx, loc, below, steps[0], g->nb, NULL);
  if (g->nchains == g->capchains) {
    g->capchains = g->capchains ? 2 * g->capchains : 16;
    g->chains = kl_xrealloc(g->chains, (size_t)g->capchains * sizeof *g->chains);
  }
  g->chains[g->nchains++] = (tchain){ base, n, (const kl_view **)kl_arena_dup(&g->ar, steps, (size_t)n * sizeof *steps),
                                      r };
  return r;
}

/* A graph view op (rock.transform is a view too, but of buffers, not of graph tensors). */
static bool is_view_value(kl_value *v) { return v->def && kl_pu_is_graph_view(v->def); }

/* Follows graph view ops from v down to a non-view value, appending their views to
 * *steps. Returns the value below the views (NULL after an error). */
static kl_value *resolve(g2r *g, kl_value *v, int *n, const kl_view ***steps) {
  while (is_view_value(v)) {
    const kl_view *vw = keep(g, kl_pu_graph_view(v->def));
    if (!vw) return NULL;
    *steps = steps_push(g, *n, *steps, vw);
    (*n)++;
    v = v->def->opnds[0].value;
  }
  return v;
}
/* The new buffer of an old value through its views (inputs of conv, dot, reduce, ...). */
static kl_value *prologue_buffer(g2r *g, kl_value *v);
static kl_value *buffer_of(g2r *g, kl_value *v, kl_loc loc) {
  int n = 0;
  const kl_view **steps = NULL;
  kl_value *base = resolve(g, v, &n, &steps);
  if (!base) return NULL;
  kl_value *nbase = kl_value_map_get(&g->args, base);
  if (nbase == base && base->def && kl_op_has_trait(base->def, KL_TRAIT_ELEMENTWISE)) {
    nbase = prologue_buffer(g, base); /* produced in the group by element-wise ops: a prologue */
    if (!nbase) return NULL;
  }
  if (nbase == base) {
    kl_emit_error(g->ctx, loc, "graph-to-rock: value is not a kernel input");
    return NULL;
  }
  return chain(g, nbase, n, steps, loc);
}

static kl_op *emit(g2r *g, const char *name, kl_loc loc, int n, kl_value *const *opnds, int nres, const kl_type *rt,
                   int na, const kl_named_attr *attrs) {
  kl_op *op = kl_op_create(g->ctx, name, loc, n, opnds, nres, &rt, na, attrs, 0);
  kl_block_push_op(g->nb, op);
  return op;
}
/* A global intermediate with t's shape and strides and element type elem. */
static kl_value *alloc_like(g2r *g, const kl_type *t, const kl_type *elem, kl_loc loc) {
  const kl_type *bt = kl_type_buffer(g->ctx, elem, t->rank, t->shape, t->strides, KL_SPACE_GLOBAL);
  return kl_op_result(emit(g, "rock.alloc", loc, 0, NULL, 1, bt, 0, NULL), 0);
}
static void fill(g2r *g, kl_value *buf, double value, kl_loc loc) {
  kl_named_attr a = { "value", kl_const_attr_for(g->ctx, buf->type->elem, value) };
  if (!kl_type_is_float(buf->type->elem) && isinf(value)) {
    int bits = kl_type_bits(buf->type->elem);
    int64_t lim = bits >= 64 ? INT64_MAX : bits <= 1 ? 1 : ((int64_t)1 << (bits - 1)) - 1;
    a.value = kl_attr_int_typed(g->ctx, value > 0 ? lim : (bits <= 1 ? 0 : -lim - 1), buf->type->elem);
  }
  emit(g, "rock.fill", loc, 1, &buf, 0, NULL, 1, &a);
}

/* ------------------------------------------------------------------ scalar bodies */

typedef struct leaf {
  kl_value *old;
  int n;
  const kl_view **steps;
  kl_value *arg;
} leaf;
typedef struct memo {
  kl_value *old;
  int n;
  const kl_view **steps;
  kl_value *scalar;
} memo;
typedef struct cluster {
  g2r *g;
  kl_block *rb;       /* body block (detached until the op is made) */
  kl_value *special;  /* old anchor result: read from the intermediate directly */
  bool multi_special; /* a fused reduction's result: one body argument per view path */
  int nleaves, capleaves;
  leaf *leaves;
  int nmemo, capmemo;
  memo *memos;
  int *mtab, mcap; /* open-addressing index into memos (1-based; 0 = empty) */
  bool failed;
} cluster;

static kl_value *sop(cluster *c, const char *name, kl_loc loc, int n, kl_value *const *opnds, const kl_type *t, int na,
                     const kl_named_attr *attrs) {
  kl_op *op = kl_op_create(c->g->ctx, name, loc, n, opnds, 1, &t, na, attrs, 0);
  kl_block_push_op(c->rb, op);
  return kl_op_result(op, 0);
}
static kl_value *scst(cluster *c, const kl_type *t, double v, kl_loc loc) {
  kl_op *op = kl_build_constant(c->g->ctx, loc, kl_const_attr_for(c->g->ctx, t, v), t);
  kl_block_push_op(c->rb, op);
  return kl_op_result(op, 0);
}
static kl_value *bin(cluster *c, const char *name, kl_loc loc, kl_value *a, kl_value *b) {
  kl_value *o[] = { a, b };
  return sop(c, name, loc, 2, o, a->type, 0, NULL);
}
static kl_value *un(cluster *c, const char *name, kl_loc loc, kl_value *a) {
  return sop(c, name, loc, 1, &a, a->type, 0, NULL);
}
static kl_value *cast(cluster *c, const char *name, kl_loc loc, kl_value *a, const kl_type *t) {
  return sop(c, name, loc, 1, &a, t, 0, NULL);
}
static kl_value *cmp_ne0(cluster *c, kl_loc loc, kl_value *a) {
  const kl_type *t = a->type;
  kl_value *o[] = { a, scst(c, t, 0, loc) };
  kl_named_attr p = { "predicate", kl_attr_str(c->g->ctx, "ne") };
  return sop(c, kl_type_is_float(t) ? "arith.cmpf" : "arith.cmpi", loc, 2, o, kl_type_scalar(c->g->ctx, KL_TY_I1), 1,
             &p);
}
static kl_value *cmp_eq0(cluster *c, kl_loc loc, kl_value *a) {
  kl_value *o[] = { a, scst(c, a->type, 0, loc) };
  kl_named_attr p = { "predicate", kl_attr_str(c->g->ctx, "eq") };
  return sop(c, kl_type_is_float(a->type) ? "arith.cmpf" : "arith.cmpi", loc, 2, o, kl_type_scalar(c->g->ctx, KL_TY_I1),
             1, &p);
}
static kl_value *cmpf(cluster *c, kl_loc loc, const char *pred, kl_value *a, kl_value *b) {
  kl_value *o[] = { a, b };
  kl_named_attr p = { "predicate", kl_attr_str(c->g->ctx, pred) };
  return sop(c, "arith.cmpf", loc, 2, o, kl_type_scalar(c->g->ctx, KL_TY_I1), 1, &p);
}
static kl_value *sel(cluster *c, kl_loc loc, kl_value *cond, kl_value *a, kl_value *b) {
  kl_value *o[] = { cond, a, b };
  return sop(c, "arith.select", loc, 3, o, a->type, 0, NULL);
}

/* x of scalar type S converted to T (kl_ref_convert semantics). */
static kl_value *convert(cluster *c, kl_loc loc, kl_value *x, const kl_type *t) {
  const kl_type *s = x->type;
  kl_ctx *ctx = c->g->ctx;
  if (s == t) return x;
  bool sf = kl_type_is_float(s), tf = kl_type_is_float(t);
  /* fp8 codes convert only to and from floats: integers go through f32 */
  if (kl_type_is_fp8(s) && !tf) return convert(c, loc, convert(c, loc, x, kl_type_f32(ctx)), t);
  if (kl_type_is_fp8(t) && !sf && s->kind != KL_TY_I1) return convert(c, loc, convert(c, loc, x, kl_type_f32(ctx)), t);
  if (t->kind == KL_TY_I1) return cmp_ne0(c, loc, x);
  if (sf && tf) {
    int sb = kl_type_bits(s), tb = kl_type_bits(t);
    if (sb < tb) return cast(c, "arith.extf", loc, x, t);
    if (sb > tb) return cast(c, "arith.truncf", loc, x, t);
    return cast(c, "arith.truncf", loc, cast(c, "arith.extf", loc, x, kl_type_f32(ctx)), t); /* f16 <-> bf16 */
  }
  if (s->kind == KL_TY_I1) return sel(c, loc, x, scst(c, t, 1, loc), scst(c, t, 0, loc));
  if (!sf && tf) return cast(c, "arith.sitofp", loc, x, t);
  if (sf && !tf) return cast(c, "arith.fptosi", loc, x, t); /* saturating, NaN -> 0 (lowering's contract) */
  int sb = kl_type_bits(s), tb = kl_type_bits(t);
  return cast(c, sb < tb ? "arith.extsi" : "arith.trunci", loc, x, t);
}

/* A composite op on f16/bf16 runs in f32 and rounds once at its end (the reference
 * evaluates every op in double and rounds its result once): x widened to f32. */
static kl_value *widen_half(cluster *c, kl_loc loc, kl_value *x) {
  kl_type_kind k = x->type->kind;
  return k == KL_TY_F16 || k == KL_TY_BF16 ? convert(c, loc, x, kl_type_f32(c->g->ctx)) : x;
}

static kl_value *int_div(cluster *c, kl_loc loc, kl_value *a, kl_value *b) {
  /* x / 0 = 0; computed in i64 so that INT_MIN / -1 of i8 / i32 wraps instead of trapping */
  const kl_type *t = a->type, *i64 = kl_type_i64(c->g->ctx);
  bool widen = t->kind != KL_TY_I64 && t->kind != KL_TY_INDEX;
  kl_value *wa = widen ? convert(c, loc, a, i64) : a, *wb = widen ? convert(c, loc, b, i64) : b;
  kl_value *z = cmp_eq0(c, loc, wb);
  kl_value *safe = sel(c, loc, z, scst(c, wb->type, 1, loc), wb);
  kl_value *q = bin(c, "arith.divsi", loc, wa, safe);
  q = sel(c, loc, z, scst(c, q->type, 0, loc), q);
  return widen ? cast(c, "arith.trunci", loc, q, t) : q;
}

static void int_range(const kl_type *t, double *lo, double *hi) {
  switch (t->kind) {
    case KL_TY_I1:
      *lo = 0;
      *hi = 1;
      break;
    case KL_TY_I8:
      *lo = -128;
      *hi = 127;
      break;
    case KL_TY_U8:
      *lo = 0;
      *hi = 255;
      break;
    case KL_TY_I32:
      *lo = -2147483648.0;
      *hi = 2147483647.0;
      break;
    default:
      *lo = -9.2e18;
      *hi = 9.2e18;
      break;
  }
}

/* a `pred` b (floats ordered: NaN gives 0; integers signed, u8 unsigned), as 1 / 0 of type rt */
static kl_value *compare(cluster *c, kl_loc loc, const char *pred, kl_value *a, kl_value *b, const kl_type *rt) {
  kl_value *o[] = { a, b };
  kl_named_attr p = { "predicate", kl_attr_str(c->g->ctx, pred) };
  kl_value *t = sop(c, kl_type_is_float(a->type) ? "arith.cmpf" : "arith.cmpi", loc, 2, o,
                    kl_type_scalar(c->g->ctx, KL_TY_I1), 1, &p);
  kl_value *one = scst(c, rt, 1, loc);
  return sel(c, loc, t, one, scst(c, rt, 0, loc));
}

/* erf(x) in f32 (f16/bf16 widened; f64 is math.erf, passes/llvm_math.c): x clamped to [-4, 4] (erf is +-1 in
 * f32 beyond), then x * P(x^2) / Q(x^2), the odd/even rational minimax form of Eigen's
 * and XLA's f32 erf; relative error <= 4.2e-7 over the f32 range (measured against
 * libm's erf in double), erf(+-0) = +-0, NaN propagates. */
static kl_value *erf_f32(cluster *c, kl_loc loc, kl_value *x) {
  static const double alpha[] = { -1.60960333262415e-02, -2.95459980854025e-03, -7.34990630326855e-04,
                                  -5.69250639462346e-05, -2.10102402082508e-06, 2.77068142495902e-08,
                                  -2.72614225801306e-10 };
  static const double beta[] = { -1.42647390514189e-02, -7.37332916720468e-03, -1.68282697438203e-03,
                                 -2.13374055278905e-04, -1.45660718464996e-05 };
  const kl_type *t = x->type;
  kl_value *xl = bin(c, "arith.maxf", loc, x, scst(c, t, -4, loc));
  kl_value *xc = bin(c, "arith.minf", loc, xl, scst(c, t, 4, loc));
  kl_value *x2 = bin(c, "arith.mulf", loc, xc, xc);
  kl_value *p = scst(c, t, alpha[6], loc), *q = scst(c, t, beta[4], loc);
  for (int i = 5; i >= 0; i--)
    p = bin(c, "arith.addf", loc, bin(c, "arith.mulf", loc, p, x2), scst(c, t, alpha[i], loc));
  for (int i = 3; i >= 0; i--)
    q = bin(c, "arith.addf", loc, bin(c, "arith.mulf", loc, q, x2), scst(c, t, beta[i], loc));
  return bin(c, "arith.divf", loc, bin(c, "arith.mulf", loc, xc, p), q);
}

/* The scalar computation of graph element-wise op `op` on operands x[] (by its
 * definition's scalar form and code). */
static kl_value *scalar_op(cluster *c, kl_op *op, kl_value *const *x) {
  kl_loc loc = op->loc;
  const kl_type *rt = op->results[0].type->elem;
  bool f = kl_type_is_float(rt);
  kl_scalar_form form = kl_op_scalar_form(op);
  if (form == KL_SCALAR_BINARY) {
    switch ((kl_binop)kl_op_scalar_code(op)) {
      case KL_BIN_ADD: return bin(c, f ? "arith.addf" : "arith.addi", loc, x[0], x[1]);
      case KL_BIN_SUB: return bin(c, f ? "arith.subf" : "arith.subi", loc, x[0], x[1]);
      case KL_BIN_MUL: return bin(c, f ? "arith.mulf" : "arith.muli", loc, x[0], x[1]);
      case KL_BIN_DIV: return f ? bin(c, "arith.divf", loc, x[0], x[1]) : int_div(c, loc, x[0], x[1]);
      case KL_BIN_MAX: return bin(c, f ? "arith.maxf" : "arith.maxsi", loc, x[0], x[1]);
      case KL_BIN_MIN: return bin(c, f ? "arith.minf" : "arith.minsi", loc, x[0], x[1]);
      case KL_BIN_POW: return bin(c, f ? "math.powf" : "math.ipowi", loc, x[0], x[1]);
      case KL_BIN_GREATER: return compare(c, loc, "gt", x[0], x[1], rt);
      case KL_BIN_GREATER_EQUAL: return compare(c, loc, "ge", x[0], x[1], rt);
      default: break;
    }
  }
  if (form == KL_SCALAR_UNARY) {
    kl_value *a = x[0];
    switch ((kl_unop)kl_op_scalar_code(op)) {
      case KL_UN_NEG: return f ? un(c, "arith.negf", loc, a) : bin(c, "arith.subi", loc, scst(c, rt, 0, loc), a);
      case KL_UN_ABS:
        if (kl_type_is_unsigned(rt)) return a; /* |x| of u8 is x */
        return f ? un(c, "math.absf", loc, a)
                 : bin(c, "arith.maxsi", loc, a, bin(c, "arith.subi", loc, scst(c, rt, 0, loc), a));
      case KL_UN_EXP: return un(c, "math.exp", loc, a);
      case KL_UN_LOG: return un(c, "math.log", loc, a);
      case KL_UN_SQRT: return un(c, "math.sqrt", loc, a);
      case KL_UN_RSQRT: return un(c, "math.rsqrt", loc, a);
      case KL_UN_TANH: return un(c, "math.tanh", loc, a);
      case KL_UN_SIGMOID: {
        /* the reference's form, x >= 0 ? 1 / (1 + e) : e / (1 + e) with e = exp(-|x|) (no
       * overflow for x << 0); composite: in f32 for f16/bf16, rounded once */
        kl_value *w = widen_half(c, loc, a), *one = scst(c, w->type, 1, loc);
        kl_value *e = un(c, "math.exp", loc, un(c, "arith.negf", loc, un(c, "math.absf", loc, w)));
        kl_value *d = bin(c, "arith.addf", loc, one, e);
        kl_value *pos = cmpf(c, loc, "ge", w, scst(c, w->type, 0, loc));
        return convert(c, loc, sel(c, loc, pos, bin(c, "arith.divf", loc, one, d), bin(c, "arith.divf", loc, e, d)),
                       rt);
      }
      case KL_UN_RELU: return bin(c, f ? "arith.maxf" : "arith.maxsi", loc, a, scst(c, rt, 0, loc));
      case KL_UN_ERF:
        if (rt->kind == KL_TY_F64) return un(c, "math.erf", loc, a); /* passes/llvm_math.c's f64 erf */
        return convert(c, loc, erf_f32(c, loc, widen_half(c, loc, a)), rt);
      case KL_UN_RECIP: return bin(c, "arith.divf", loc, scst(c, rt, 1, loc), a);
      case KL_UN_ROUND: return un(c, "math.roundeven", loc, a);
      case KL_UN_FLOOR: return f ? un(c, "math.floor", loc, a) : a; /* an integer is its own floor */
      case KL_UN_CEIL: return f ? un(c, "math.ceil", loc, a) : a;
      default: break;
    }
  }
  if (form == KL_SCALAR_CLIP) {
    double lo = 0, hi = 0;
    kl_op_attr_f64(op, "min", &lo);
    kl_op_attr_f64(op, "max", &hi);
    if (f) { /* the reference's order: x < lo ? lo : x, then > hi ? hi : (ties and NaN keep x) */
      kl_value *clo = scst(c, rt, lo, loc), *chi = scst(c, rt, hi, loc);
      kl_value *v = sel(c, loc, cmpf(c, loc, "lt", x[0], clo), clo, x[0]);
      return sel(c, loc, cmpf(c, loc, "gt", v, chi), chi, v);
    }
    double tlo, thi;
    int_range(rt, &tlo, &thi);
    lo = ceil(lo);
    hi = floor(hi);
    lo = lo < tlo ? tlo : lo > thi ? thi : lo;
    hi = hi < tlo ? tlo : hi > thi ? thi : hi;
    return bin(c, "arith.minsi", loc, bin(c, "arith.maxsi", loc, x[0], scst(c, rt, lo, loc)), scst(c, rt, hi, loc));
  }
  if (form == KL_SCALAR_WHERE) {
    kl_value *cond = x[0]->type->kind == KL_TY_I1 ? x[0] : cmp_ne0(c, loc, x[0]);
    return sel(c, loc, cond, x[1], x[2]);
  }
  if (form == KL_SCALAR_CONVERT) return convert(c, loc, x[0], rt);
  kl_emit_error(c->g->ctx, loc, "graph-to-rock: no scalar form for '%s'", op->name);
  c->failed = true;
  return NULL;
}

static bool same_shape(const kl_type *a, const kl_type *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

/* ---- memo: (old value, view path) -> scalar, hashed on (value, path length) ---- */
static uint64_t memo_hash(kl_value *v, int n) {
  uint64_t x = (uint64_t)(uintptr_t)v ^ ((uint64_t)n << 48);
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ull;
  return x ^ (x >> 29);
}
static kl_value *memo_find(cluster *c, kl_value *v, int n, const kl_view **steps) {
  if (!c->mcap) return NULL;
  for (uint64_t i = memo_hash(v, n) & (uint64_t)(c->mcap - 1);; i = (i + 1) & (uint64_t)(c->mcap - 1)) {
    int k = c->mtab[i];
    if (!k) return NULL;
    memo *m = &c->memos[k - 1];
    if (m->old == v && steps_equal(m->n, m->steps, n, steps)) return m->scalar;
  }
}
static void memo_slot(cluster *c, int k) {
  memo *m = &c->memos[k - 1];
  uint64_t i = memo_hash(m->old, m->n) & (uint64_t)(c->mcap - 1);
  while (c->mtab[i]) i = (i + 1) & (uint64_t)(c->mcap - 1);
  c->mtab[i] = k;
}
static void memo_add(cluster *c, kl_value *v, int n, const kl_view **steps, kl_value *r) {
  if (c->nmemo == c->capmemo) {
    c->capmemo = c->capmemo ? 2 * c->capmemo : 16;
    c->memos = kl_xrealloc(c->memos, (size_t)c->capmemo * sizeof *c->memos);
  }
  c->memos[c->nmemo++] = (memo){ v, n, steps, r };
  if (2 * c->nmemo > c->mcap) {
    free(c->mtab);
    c->mcap = c->mcap ? 2 * c->mcap : 64;
    c->mtab = kl_xcalloc((size_t)c->mcap, sizeof *c->mtab);
    for (int k = 1; k <= c->nmemo; k++) memo_slot(c, k);
  } else {
    memo_slot(c, c->nmemo);
  }
}

/* The view path of operand i of element-wise op def seen through (n, steps): a numpy
 * broadcast view is pushed when the operand's shape differs from the result's. */
static bool operand_path(cluster *c, kl_op *def, int i, int n, const kl_view **steps, int *m, const kl_view ***s) {
  g2r *g = c->g;
  kl_value *w = def->opnds[i].value;
  *s = steps;
  *m = n;
  if (same_shape(w->type, def->results[0].type)) return true;
  kl_view_err err = { 0 };
  const kl_type *wt = w->type, *ot = def->results[0].type;
  if (!kl_pu_nonempty(wt) || !kl_pu_nonempty(ot)) {
    kl_emit_error(g->ctx, def->loc, "graph-to-rock: cannot broadcast the empty tensor %s", wt->text);
    return false;
  }
  const kl_view *bv = keep(g, kl_pu_broadcast_view(wt->rank, wt->shape, ot->rank, ot->shape, &err));
  if (!bv) {
    kl_emit_error(g->ctx, def->loc, "graph-to-rock: operand %d: %s", i, err.msg);
    return false;
  }
  *s = steps_push(g, n, steps, bv);
  *m = n + 1;
  return true;
}

/* A leaf: a new operand of the rock.elementwise (added as a body argument). */
static kl_value *leaf_scalar(cluster *c, kl_value *v, int n, const kl_view **steps) {
  g2r *g = c->g;
  kl_op *def = v->def;
  /* a leaf already seen with this path is found by emit_scalar's memo: every leaf is memoized */
  if (v == c->special && !c->multi_special)
    for (int i = 0; i < c->nleaves; i++)
      if (c->leaves[i].old == v) {
        kl_emit_error(g->ctx, def ? def->loc : KL_LOC_UNKNOWN,
                      "graph-to-rock: the GEMM result is read through two different views");
        return NULL;
      }
  if (v != c->special && kl_value_map_get(&g->args, v) == v) {
    kl_emit_error(g->ctx, def ? def->loc : KL_LOC_UNKNOWN, "graph-to-rock: %s is not a kernel input",
                  def ? def->name : "a block argument");
    return NULL;
  }
  if (c->nleaves == c->capleaves) {
    c->capleaves = c->capleaves ? 2 * c->capleaves : 8;
    c->leaves = kl_xrealloc(c->leaves, (size_t)c->capleaves * sizeof *c->leaves);
  }
  kl_value *r = kl_block_add_arg(g->ctx, c->rb, v->type->elem);
  c->leaves[c->nleaves++] = (leaf){ v, n, steps, r };
  return r;
}

static bool one_element(const kl_attr *v) { return v && v->kind == KL_AT_ARRAY && v->n == 1; }

/* One pending value of emit_scalar's walk. The walk keeps its own stack (a fused chain
 * may be hundreds of thousands of ops long; recursion overflowed the C stack). */
enum { SF_NEW, SF_VIEW, SF_OPNDS };
typedef struct sframe {
  kl_value *v;
  int n;
  const kl_view **steps;
  int stage; /* SF_*; SF_VIEW waits for the view's source, SF_OPNDS for operand next - 1 */
  int next;
  kl_value *x[3];
} sframe;

/* The scalar value of old value v at the coordinate that `steps` maps the output
 * coordinate to (memoized per (value, view path)). */
static kl_value *emit_scalar(cluster *c, kl_value *v, int n, const kl_view **steps) {
  g2r *g = c->g;
  if (c->failed) return NULL;
  int nf = 0, capf = 64;
  sframe *st = kl_xmalloc((size_t)capf * sizeof *st);
  st[nf++] = (sframe){ v, n, steps, SF_NEW, 0, { NULL } };
  kl_value *ret = NULL; /* the result of the frame popped last */
  while (nf) {
    sframe *f = &st[nf - 1];
    kl_op *def = f->v->def;
    kl_value *r = NULL;
    sframe child = { 0 };
    bool push = false;
    if (f->stage == SF_NEW) {
      r = memo_find(c, f->v, f->n, f->steps);
      if (r) {
        ret = r;
        nf--;
        continue;
      } /* already memoized */
      if (def && kl_pu_is_graph_view(def)) {
        const kl_view *vw = keep(g, kl_pu_graph_view(def));
        if (!vw) break;
        f->stage = SF_VIEW;
        child = (sframe){ def->opnds[0].value, f->n + 1, steps_push(g, f->n, f->steps, vw), SF_NEW, 0, { NULL } };
        push = true;
      } else if (def && kl_graph_is_constant(def) && one_element(kl_op_attr(def, "value"))) {
        /* a one-element constant that graph-partition copied into the kernel: an immediate */
        const kl_attr *e = kl_op_attr(def, "value")->elems[0];
        const kl_type *et = f->v->type->elem;
        if (e->kind == KL_AT_FLOAT || kl_type_is_float(et)) {
          r = scst(c, et, e->kind == KL_AT_FLOAT ? e->f : (double)e->i, def->loc);
        } else { /* integers keep all 64 bits */
          kl_op *k = kl_build_constant(g->ctx, def->loc, kl_attr_int_typed(g->ctx, e->i, et), et);
          kl_block_push_op(c->rb, k);
          r = kl_op_result(k, 0);
        }
      } else if (def && f->v != c->special && kl_op_has_trait(def, KL_TRAIT_ELEMENTWISE)) {
        if (def->nopnds > 3) {
          kl_emit_error(g->ctx, def->loc, "graph-to-rock: too many operands");
          break;
        }
        f->stage = SF_OPNDS;
        continue;
      } else {
        r = leaf_scalar(c, f->v, f->n, f->steps);
        if (!r) break;
      }
    } else if (f->stage == SF_VIEW) {
      r = ret;
    } else {
      if (f->next > 0) f->x[f->next - 1] = ret;
      if (f->next < def->nopnds) {
        int m;
        const kl_view **s;
        if (!operand_path(c, def, f->next, f->n, f->steps, &m, &s)) break;
        child = (sframe){ def->opnds[f->next].value, m, s, SF_NEW, 0, { NULL } };
        f->next++;
        push = true;
      } else {
        r = scalar_op(c, def, f->x);
        if (!r) break;
      }
    }
    if (push) {
      if (nf == capf) {
        capf *= 2;
        st = kl_xrealloc(st, (size_t)capf * sizeof *st);
      }
      st[nf++] = child;
      continue;
    }
    memo_add(c, f->v, f->n, f->steps, r);
    ret = r;
    nf--;
  }
  free(st);
  if (nf) {
    c->failed = true;
    return NULL;
  } /* an error was reported */
  return ret;
}

static void cluster_free(cluster *c) {
  free(c->leaves);
  free(c->memos);
  free(c->mtab);
}

/* Emits rock.elementwise(leaves..., out) from a built cluster whose body computes
 * `result`. special_buf: the buffer holding the special leaf (the anchor result), read
 * through the leaf's graph views like any input (the plain form). */
static kl_op *emit_elementwise(g2r *g, cluster *c, kl_value *result, kl_value *out, kl_value *special_buf, kl_loc loc) {
  kl_value *y = convert(c, loc, result, out->type->elem);
  kl_block_push_op(c->rb, kl_op_create(g->ctx, "rock.yield", loc, 1, &y, 0, NULL, 0, NULL, 0));
  int n = c->nleaves + 1;
  kl_value **opnds = kl_xmalloc((size_t)n * sizeof *opnds);
  for (int i = 0; i < c->nleaves; i++) {
    leaf *l = &c->leaves[i];
    kl_value *base = l->old == c->special ? special_buf : kl_value_map_get(&g->args, l->old);
    opnds[i] = chain(g, base, l->n, l->steps, loc);
  }
  opnds[n - 1] = out;
  kl_op *op = kl_op_create(g->ctx, "rock.elementwise", loc, n, opnds, 0, NULL, 0, NULL, 1);
  kl_region_push_block(&op->regions[0], c->rb);
  c->rb = NULL;
  kl_block_push_op(g->nb, op);
  free(opnds);
  return op;
}

/* The index (among the op's inputs) of the first leaf that is an entry block argument
 * the kernel_group function's `primary = [i, ...]` attribute names, else -1. */
static int primary_leaf(g2r *g, const cluster *c) {
  int64_t prim[64];
  int np = kl_op_attr_i64s(g->fn, "primary", prim, 64);
  for (int i = 0; i < c->nleaves; i++) {
    kl_value *v = c->leaves[i].old;
    if (v->def || v->block != g->ob) continue;
    for (int k = 0; k < np; k++)
      if (prim[k] == v->index) return i;
  }
  return -1;
}

/* A prologue: the element-wise producer tree of an anchor operand (value v, below its
 * graph views) becomes ONE rock.elementwise that writes a fresh global rock.alloc of v's
 * shape directly; the anchor reads that buffer. Emitted once per producer. */
static kl_value *prologue_buffer(g2r *g, kl_value *v) {
  for (int i = 0; i < g->nprologues; i++)
    if (g->prologues[i].old == v) return g->prologues[i].buf;
  if (!kl_pu_nonempty(v->type)) {
    kl_emit_error(g->ctx, v->def->loc, "graph-to-rock: an empty GEMM operand cannot have a prologue");
    return NULL;
  }
  cluster c = { .g = g, .rb = kl_block_create(g->ctx) };
  kl_value *r = emit_scalar(&c, v, 0, NULL);
  if (!r) {
    cluster_free(&c);
    return NULL;
  }
  kl_value *buf = alloc_like(g, v->type, v->type->elem, v->def->loc);
  kl_op *ew = emit_elementwise(g, &c, r, buf, NULL, v->def->loc);
  int pi = primary_leaf(g, &c);
  if (pi >= 0) kl_op_set_attr(ew, "primary_input", kl_attr_int(g->ctx, pi));
  cluster_free(&c);
  if (g->nprologues == g->capprologues) {
    g->capprologues = g->capprologues ? 2 * g->capprologues : 4;
    g->prologues = kl_xrealloc(g->prologues, (size_t)g->capprologues * sizeof *g->prologues);
  }
  g->prologues[g->nprologues++] = (prologue){ v, buf };
  return buf;
}

/* ------------------------------------------------------------------ anchors */

static kl_status emit_conv(g2r *g, kl_op *conv, kl_value *target) {
  kl_ctx *ctx = g->ctx;
  kl_value *in = conv->opnds[0].value, *w = conv->opnds[1].value;
  int sp = in->type->rank - 2;
  kl_conv_params p; /* the canonical form: sp strides / dilations, 2*sp paddings */
  if (!kl_graph_conv_params(ctx, conv->loc, sp, conv->nattrs, conv->attrs, &p)) return KL_ERR;
  if (!kl_pu_nonempty(in->type) || !kl_pu_nonempty(w->type)) {
    fill(g, target, 0, conv->loc);
    return KL_OK;
  }
  kl_value *o[3] = { buffer_of(g, in, conv->loc), buffer_of(g, w, conv->loc), target };
  if (!o[0] || !o[1]) return KL_ERR;
  kl_named_attr a[] = { { "dilation", kl_attr_i64_array(ctx, sp, p.dilation) },
                        { "groups", kl_attr_int(ctx, p.groups) },
                        { "padding", kl_attr_i64_array(ctx, 2 * sp, p.pad) },
                        { "stride", kl_attr_i64_array(ctx, sp, p.stride) },
                        { "split_k_partials", kl_op_attr(conv, "split_k_partials") } };
  emit(g, "rock.conv", conv->loc, 3, o, 0, NULL, a[4].value ? 5 : 4, a);
  return KL_OK;
}

/* View of a dot operand [batch..., r0, r1] (names n0, n1 of the last two dims) as
 * [g, first, second]; batch dims broadcast to out_batch. */
static kl_view *gemm_operand_view(int rank, const int64_t *shape, const char *n0, const char *n1, int nb,
                                  const int64_t *out_batch, const char *first, const char *second, kl_view_err *err) {
  static const char *const bnames[] = { "b0", "b1", "b2",  "b3",  "b4",  "b5",  "b6",  "b7",
                                        "b8", "b9", "b10", "b11", "b12", "b13", "b14", "b15" };
  const char *names[KL_VIEW_MAX_DIMS];
  int ob = rank - 2, lead = nb - ob;
  for (int i = 0; i < ob; i++) names[i] = bnames[lead + i];
  names[ob] = n0;
  names[ob + 1] = n1;
  kl_view *v = kl_view_identity(rank, shape, names, err), *t;
#define STEP(expr)       \
  do {                   \
    if (!v) return NULL; \
    t = (expr);          \
    kl_view_free(v);     \
    v = t;               \
  } while (0)
  const char *bn[KL_VIEW_MAX_DIMS];
  int64_t bs[KL_VIEW_MAX_DIMS];
  int nbc = 0;
  for (int i = 0; i < ob; i++)
    if (shape[i] != out_batch[lead + i]) {
      bn[nbc] = names[i];
      bs[nbc] = out_batch[lead + i];
      nbc++;
    }
  if (nbc) STEP(kl_view_broadcast(v, nbc, bn, bs, err));
  for (int i = 0; i < lead; i++) STEP(kl_view_add_dim(v, bnames[i], out_batch[i], i, err));
  if (nb)
    STEP(kl_view_merge(v, "g", nb, bnames, err));
  else
    STEP(kl_view_add_dim(v, "g", 1, 0, err));
  const char *ord[] = { "g", first, second };
  STEP(kl_view_passthrough(v, 3, ord, ord, err));
  STEP(kl_view_simplify(v));
#undef STEP
  return v;
}

static kl_status emit_dot(g2r *g, kl_op *dot, kl_value *target) {
  kl_ctx *ctx = g->ctx;
  const kl_type *at = dot->opnds[0].value->type, *bt = dot->opnds[1].value->type, *ct = dot->results[0].type;
  const kl_attr *ta_a = kl_op_attr(dot, "transpose_a"), *tb_a = kl_op_attr(dot, "transpose_b");
  bool ta = ta_a && (ta_a->kind == KL_AT_UNIT || (ta_a->kind == KL_AT_BOOL && ta_a->i));
  bool tb = tb_a && (tb_a->kind == KL_AT_UNIT || (tb_a->kind == KL_AT_BOOL && tb_a->i));
  if (!kl_pu_nonempty(ct)) return KL_OK;
  if (!kl_pu_nonempty(at) || !kl_pu_nonempty(bt)) {
    fill(g, target, 0, dot->loc);
    return KL_OK;
  }
  int nb = ct->rank - 2;
  kl_view_err err = { 0 };
  kl_view *va = gemm_operand_view(at->rank, at->shape, ta ? "k" : "m", ta ? "m" : "k", nb, ct->shape, "k", "m", &err);
  kl_view *vb = va
      ? gemm_operand_view(bt->rank, bt->shape, tb ? "n" : "k", tb ? "k" : "n", nb, ct->shape, "k", "n", &err)
      : NULL;
  kl_view *vc = vb ? gemm_operand_view(ct->rank, ct->shape, "m", "n", nb, ct->shape, "m", "n", &err) : NULL;
  if (!vc) {
    kl_view_free(va);
    kl_view_free(vb);
    return kl_emit_error(ctx, dot->loc, "graph-to-rock: cannot build the GEMM views of the dot: %s", err.msg);
  }
  kl_value *a = buffer_of(g, dot->opnds[0].value, dot->loc),
           *b = a ? buffer_of(g, dot->opnds[1].value, dot->loc) : NULL;
  if (!b) {
    kl_view_free(va);
    kl_view_free(vb);
    kl_view_free(vc);
    return KL_ERR;
  }
  kl_value *o[3] = { kl_pu_transform(ctx, dot->loc, a, va, g->nb, NULL),
                     kl_pu_transform(ctx, dot->loc, b, vb, g->nb, NULL),
                     kl_pu_transform(ctx, dot->loc, target, vc, g->nb, NULL) };
  kl_view_free(va);
  kl_view_free(vb);
  kl_view_free(vc);
  kl_named_attr st[2] = { { "store", kl_attr_str(ctx, "set") } };
  int na = 1;
  const kl_attr *part = kl_op_attr(dot, "split_k_partials"); /* split-k-workspace's partial GEMM */
  if (part) st[na++] = (kl_named_attr){ "split_k_partials", part };
  emit(g, "rock.gemm", dot->loc, 3, o, 0, NULL, na, st);
  return KL_OK;
}

/* ------------------------------------------------------------------ kinds */

static kl_op *find_op(kl_block *b, unsigned trait) {
  for (kl_op *op = b->first; op; op = op->next)
    if (kl_op_has_trait(op, trait)) return op;
  return NULL;
}

/* GEMM + reduce fusion (graph-partition's gemm_reduce_of): the group returns
 * reduce_<op>(dot) only. The dot writes the reduce's output through a view that takes the
 * dot result's shape (reduced dims ignored: AddDim, or Broadcast of a kept size-1 dim),
 * with store = "atomic_add" (sum; mean with store_scale = 1 / count), "atomic_max" or
 * "atomic_min": the tile is reduced and combined into the output atomically
 * (rock-lower-loops, lower_loops_atomic.c); the kernel asks the plan to prefill the
 * output with the identity 0 / -inf / +inf (attribute prefill). */
static kl_status lower_gemm_reduce(g2r *g, kl_op *dot, kl_op *red, kl_value *out) {
  kl_ctx *ctx = g->ctx;
  const kl_type *it = dot->results[0].type, *ot = red->results[0].type;
  int64_t a64[KL_VIEW_MAX_DIMS];
  int na = kl_op_attr_i64s(red, "axes", a64, KL_VIEW_MAX_DIMS);
  bool keep = kl_op_attr(red, "keepdims") &&
      (kl_op_attr(red, "keepdims")->kind == KL_AT_UNIT || kl_op_attr(red, "keepdims")->i);
  bool reduced[KL_VIEW_MAX_DIMS] = { 0 };
  for (int i = 0; i < na; i++) {
    int64_t ax = a64[i] < 0 ? a64[i] + it->rank : a64[i];
    if (ax >= 0 && ax < it->rank) reduced[ax] = true;
  }
  static const char *const nm[] = { "d0", "d1", "d2",  "d3",  "d4",  "d5",  "d6",  "d7",
                                    "d8", "d9", "d10", "d11", "d12", "d13", "d14", "d15" };
  if (it->rank > 16) return kl_emit_error(ctx, red->loc, "graph-to-rock: rank %d too large", it->rank);
  const char *on[KL_VIEW_MAX_DIMS];
  int ro = 0;
  for (int d = 0; d < it->rank; d++)
    if (keep || !reduced[d]) on[ro++] = nm[d];
  if (ro != ot->rank) return kl_emit_error(ctx, red->loc, "graph-to-rock: the reduce's result rank does not match");
  kl_view_err err = { 0 };
  kl_view *v = kl_view_identity(ot->rank, ot->shape, on, &err), *t;
  for (int d = 0; d < it->rank && v; d++) {
    if (!reduced[d]) continue;
    if (keep) {
      int64_t sz = it->shape[d];
      t = kl_view_broadcast(v, 1, &nm[d], &sz, &err);
    } else
      t = kl_view_add_dim(v, nm[d], it->shape[d], d, &err);
    kl_view_free(v);
    v = t;
  }
  if (!v) return kl_emit_error(ctx, red->loc, "graph-to-rock: cannot build the reduce's write view: %s", err.msg);
  kl_value *c = kl_pu_transform(ctx, red->loc, out, v, g->nb, NULL);
  kl_view_free(v);
  kl_status st = emit_dot(g, dot, c);
  kl_op *gemm = g->nb->last;
  if (st != KL_OK || !gemm || strcmp(gemm->name, "rock.gemm")) return st;
  int code = kl_op_scalar_code(red);
  const char *store = code == KL_RED_MAX ? "atomic_max" : code == KL_RED_MIN ? "atomic_min" : "atomic_add";
  double init = code == KL_RED_MAX ? -INFINITY : code == KL_RED_MIN ? INFINITY : 0.0;
  kl_op_set_attr(gemm, "store", kl_attr_str(ctx, store));
  if (code == KL_RED_MEAN) {
    int64_t count = 1;
    for (int d = 0; d < it->rank; d++)
      if (reduced[d]) count *= it->shape[d];
    kl_op_set_attr(gemm, "store_scale", kl_attr_float(ctx, 1.0 / (double)count));
  }
  char key[16];
  snprintf(key, sizeof key, "%d", out->index);
  kl_named_attr e = { kl_intern(ctx, key), kl_attr_float(ctx, init) };
  kl_op_set_attr(g->fn, "prefill", kl_attr_dict(ctx, 1, &e));
  return KL_OK;
}

/* A "gemm" kernel_group (the plain form, see the file comment): the anchor once, writing
 * the output buffer that returns its result (unless another result reads it through
 * views) or else a fresh global rock.alloc of its result's shape; then one
 * rock.elementwise per other result, reading the anchor's buffer through the graph
 * views in between. */
static kl_status lower_gemm(g2r *g, kl_block *ob, kl_op *ret, kl_value *const *outs) {
  kl_ctx *ctx = g->ctx;
  kl_op *anchor = find_op(ob, KL_TRAIT_GEMM_ANCHOR);
  if (!anchor) return kl_emit_error(ctx, ret->loc, "graph-to-rock: gemm group without conv or dot");
  kl_value *ares = kl_op_result(anchor, 0);
  kl_loc loc = anchor->loc;
  bool is_conv = kl_op_kernel_kind(anchor) == KL_KERNEL_CONV;
  int nout = ret->nopnds, direct = -1, live = 0;
  kl_op *red = nout == 1 ? ret->opnds[0].value->def : NULL;
  if (!is_conv && red && kl_op_kernel_kind(red) == KL_KERNEL_REDUCE && red->opnds[0].value == ares)
    return lower_gemm_reduce(g, anchor, red, outs[0]);
  for (int i = 0; i < nout; i++) {
    if (!kl_pu_nonempty(ret->opnds[i].value->type)) continue; /* nothing to write */
    live++;
    if (direct < 0 && ret->opnds[i].value == ares) direct = i;
  }
  if (!live) return KL_OK;
  /* the bodies of the other results first (they say how they read the anchor result) */
  cluster *cs = kl_xcalloc((size_t)nout, sizeof *cs);
  kl_value **rs = kl_xcalloc((size_t)nout, sizeof *rs);
  kl_status st = KL_OK;
  bool viewed = false;
  for (int i = 0; i < nout && st == KL_OK; i++) {
    kl_value *root = ret->opnds[i].value;
    if (!kl_pu_nonempty(root->type) || root == ares) continue;
    cs[i] = (cluster){ .g = g, .rb = kl_block_create(ctx), .special = ares };
    rs[i] = emit_scalar(&cs[i], root, 0, NULL);
    bool reads = false;
    for (int k = 0; rs[i] && k < cs[i].nleaves; k++)
      if (cs[i].leaves[k].old == ares) {
        reads = true;
        viewed |= cs[i].leaves[k].n > 0;
      }
    if (!rs[i])
      st = KL_ERR;
    else if (!reads)
      st = kl_emit_error(ctx, root->def ? root->def->loc : loc,
                         "graph-to-rock: group result %d does not read the GEMM result", i);
  }
  /* an output read back through views would stay a view on a kernel argument (only
   * rock.alloc intermediates are regularized): then the anchor writes an alloc and that
   * output is a copy like any other result */
  if (viewed) direct = -1;
  kl_value *abuf = NULL;
  if (st == KL_OK) {
    abuf = direct >= 0 ? outs[direct] : alloc_like(g, ares->type, ares->type->elem, loc);
    st = is_conv ? emit_conv(g, anchor, abuf) : emit_dot(g, anchor, abuf);
  }
  for (int i = 0; i < nout; i++) {
    kl_value *root = ret->opnds[i].value;
    if (st == KL_OK && i != direct && kl_pu_nonempty(root->type)) {
      if (root == ares) { /* the anchor result returned again (or read through views elsewhere): a copy */
        cs[i] = (cluster){ .g = g, .rb = kl_block_create(ctx), .special = ares };
        rs[i] = emit_scalar(&cs[i], root, 0, NULL);
      }
      if (rs[i]) emit_elementwise(g, &cs[i], rs[i], outs[i], abuf, root->def ? root->def->loc : loc);
    }
    if (cs[i].rb) { /* not used: drop the detached body */
      for (kl_op *op = cs[i].rb->last; op; op = cs[i].rb->last) {
        kl_op_drop_all_uses(op);
        kl_op_unlink(op);
      }
    }
    cluster_free(&cs[i]);
  }
  free(cs);
  free(rs);
  return st;
}

/* The view from a keepdims=false reduce result (type ot) to the input's rank (AddDim of
 * size 1 at each reduced axis). */
static kl_view *keepdims_view(const kl_type *ot, int nax, const int64_t *axes, kl_view_err *err) {
  kl_view *v = kl_pu_identity(ot->rank, ot->shape, err), *t;
  static const char *const rn[] = { "r0", "r1", "r2",  "r3",  "r4",  "r5",  "r6",  "r7",
                                    "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15" };
  for (int i = 0; i < nax && v; i++) {
    t = kl_view_add_dim(v, rn[i], 1, (int)axes[i], err);
    kl_view_free(v);
    v = t;
  }
  if (v) {
    t = kl_view_simplify(v);
    kl_view_free(v);
    v = t;
  }
  return v;
}
/* The reduced axes of a graph reduce (sorted) and keepdims. */
static int reduce_axes(kl_op *red, int64_t *axes, bool *keep_dims) {
  const kl_type *it = red->opnds[0].value->type;
  int64_t a64[KL_VIEW_MAX_DIMS];
  int na = kl_op_attr_i64s(red, "axes", a64, KL_VIEW_MAX_DIMS);
  *keep_dims = kl_op_attr(red, "keepdims") &&
      (kl_op_attr(red, "keepdims")->kind == KL_AT_UNIT || kl_op_attr(red, "keepdims")->i);
  bool reduced[KL_VIEW_MAX_DIMS] = { 0 };
  for (int i = 0; i < na; i++) {
    int64_t ax = a64[i] < 0 ? a64[i] + it->rank : a64[i];
    if (ax >= 0 && ax < it->rank) reduced[ax] = true;
  }
  int nax = 0;
  for (int i = 0; i < it->rank; i++)
    if (reduced[i]) axes[nax++] = i;
  return nax;
}

static kl_status lower_reduce(g2r *g, kl_op *red, kl_value *out) {
  kl_ctx *ctx = g->ctx;
  const kl_type *it = red->opnds[0].value->type, *ot = red->results[0].type;
  int64_t a64[KL_VIEW_MAX_DIMS];
  int na = kl_op_attr_i64s(red, "axes", a64, KL_VIEW_MAX_DIMS);
  bool keep_dims = kl_op_attr(red, "keepdims") &&
      (kl_op_attr(red, "keepdims")->kind == KL_AT_UNIT || kl_op_attr(red, "keepdims")->i);
  bool reduced[KL_VIEW_MAX_DIMS] = { 0 };
  for (int i = 0; i < na; i++) {
    int64_t ax = a64[i] < 0 ? a64[i] + it->rank : a64[i];
    if (ax >= 0 && ax < it->rank) reduced[ax] = true;
  }
  int64_t axes[KL_VIEW_MAX_DIMS];
  int nax = 0;
  for (int i = 0; i < it->rank; i++)
    if (reduced[i]) axes[nax++] = i;
  kl_reduce_op rop = (kl_reduce_op)kl_op_scalar_code(red);
  const char *kind = kl_reduce_kind_name(rop); /* rock.reduce's kind: "sum", "max", ... */
  if (!kl_pu_nonempty(ot)) return KL_OK;
  if (!kl_pu_nonempty(it)) {
    fill(g, out,
         rop == KL_RED_SUM       ? 0
             : rop == KL_RED_MAX ? -INFINITY
             : rop == KL_RED_MIN ? INFINITY
                                 : (kl_type_is_float(ot->elem) ? NAN : 0),
         red->loc);
    return KL_OK;
  }
  kl_value *in = buffer_of(g, red->opnds[0].value, red->loc);
  if (!in) return KL_ERR;
  kl_value *dst = out;
  if (!keep_dims && nax) {
    kl_view_err err = { 0 };
    kl_view *v = keepdims_view(ot, nax, axes, &err);
    if (!v) return kl_emit_error(ctx, red->loc, "graph-to-rock: reduce output view: %s", err.msg);
    dst = kl_pu_transform(ctx, red->loc, out, v, g->nb, NULL);
    kl_view_free(v);
  }
  kl_value *o[] = { in, dst };
  kl_named_attr at[] = { { "axes", kl_attr_i64_array(ctx, nax, axes) }, { "kind", kl_attr_str(ctx, kind) } };
  emit(g, "rock.reduce", red->loc, 2, o, 0, NULL, 2, at);
  return KL_OK;
}

static kl_status lower_softmax(g2r *g, kl_op *sm, kl_value *out) {
  const kl_type *it = sm->opnds[0].value->type;
  int64_t ax = -1;
  if (!kl_op_attr_i64(sm, "axis", &ax)) kl_op_attr_i64s(sm, "axis", &ax, 1);
  if (ax < 0) ax += it->rank;
  if (!kl_pu_nonempty(it)) return KL_OK;
  kl_value *in = buffer_of(g, sm->opnds[0].value, sm->loc);
  if (!in) return KL_ERR;
  kl_value *o[] = { in, out };
  kl_named_attr at = { "axis", kl_attr_int(g->ctx, ax) };
  emit(g, "rock.softmax", sm->loc, 2, o, 0, NULL, 1, &at);
  return KL_OK;
}

/* The one reduce / softmax of a reduction group. */
static kl_op *group_reduction(kl_block *ob) {
  for (kl_op *op = ob->first; op; op = op->next) {
    kl_kernel_kind k = kl_op_kernel_kind(op);
    if (k == KL_KERNEL_REDUCE || k == KL_KERNEL_SOFTMAX) return op;
  }
  return NULL;
}
/* Is the group the bare reduction of a kernel input (through views)? */
static bool bare_reduction(g2r *g, kl_value *root) {
  kl_op *rd = root->def;
  if (!rd || (kl_op_kernel_kind(rd) != KL_KERNEL_REDUCE && kl_op_kernel_kind(rd) != KL_KERNEL_SOFTMAX)) return false;
  kl_value *v = rd->opnds[0].value;
  while (is_view_value(v)) v = v->def->opnds[0].value;
  return kl_value_map_get(&g->args, v) != v;
}

/* A reduction group with element-wise producers and / or consumers (graph-partition's
 * reduction fusion): ONE fused rock.reduce / rock.softmax. The prologue body computes
 * the reduction's input from its leaves (kernel inputs through their views to the input's
 * shape), rounded to the input's element type; the epilogue body computes the group's
 * result from the reduction's result (the special leaf) and other leaves. The result
 * has the reduction output's shape (out: written through AddDim views when keepdims is
 * false, the epilogue inputs too) or, for a reduce, the input's shape (row_out: every
 * path to the reduction's result is a broadcast back over the reduced axes, which
 * graph-partition checked; the lowering takes the value from registers). */
static kl_status lower_fused_reduction(g2r *g, kl_value *root, kl_value *out) {
  kl_ctx *ctx = g->ctx;
  kl_op *red = group_reduction(g->ob);
  if (!red) return kl_emit_error(ctx, g->fn->loc, "graph-to-rock: a reduction group without its reduction");
  bool sm = kl_op_kernel_kind(red) == KL_KERNEL_SOFTMAX, keep = true;
  kl_value *rv = kl_op_result(red, 0);
  const kl_type *it = red->opnds[0].value->type, *rt = rv->type;
  int64_t axes[KL_VIEW_MAX_DIMS], ax = -1;
  int nax = 0;
  if (sm) {
    if (!kl_op_attr_i64(red, "axis", &ax)) kl_op_attr_i64s(red, "axis", &ax, 1);
    if (ax < 0) ax += it->rank;
  } else {
    nax = reduce_axes(red, axes, &keep);
  }
  if (!kl_pu_nonempty(it) || it->rank < 1 || (!sm && nax == 0))
    return kl_emit_error(ctx, red->loc, "graph-to-rock: a fused reduction needs a non-empty input with a reduced axis");
  bool row = !sm && !same_shape(root->type, rt);
  if (row && !same_shape(root->type, it))
    return kl_emit_error(ctx, red->loc,
                         "graph-to-rock: a fused reduction's result has neither its shape nor its input's");
  cluster cp = { .g = g, .rb = kl_block_create(ctx) }, ce = { .g = g, .rb = kl_block_create(ctx) };
  ce.special = rv;
  ce.multi_special = true;
  kl_status st = KL_ERR;
  kl_value **opnds = NULL;
  kl_view *kd = NULL;
  kl_value *x = emit_scalar(&cp, red->opnds[0].value, 0, NULL);
  kl_value *y = x ? emit_scalar(&ce, root, 0, NULL) : NULL;
  if (!y) goto out;
  x = convert(&cp, red->loc, x, it->elem);
  y = convert(&ce, red->loc, y, root->type->elem);
  kl_block_push_op(cp.rb, kl_op_create(ctx, "rock.yield", red->loc, 1, &x, 0, NULL, 0, NULL, 0));
  kl_block_push_op(ce.rb, kl_op_create(ctx, "rock.yield", red->loc, 1, &y, 0, NULL, 0, NULL, 0));
  if (!sm && !row && !keep) {
    kl_view_err err = { 0 };
    kd = keepdims_view(rt, nax, axes, &err);
    if (!kd) {
      kl_emit_error(ctx, red->loc, "graph-to-rock: reduce output view: %s", err.msg);
      goto out;
    }
  }
  int n = cp.nleaves + ce.nleaves + 1, k = 0, nra = 0;
  int64_t ra[64];
  opnds = kl_xmalloc((size_t)n * sizeof *opnds);
  for (int i = 0; i < cp.nleaves; i++)
    opnds[k++] = chain(g, kl_value_map_get(&g->args, cp.leaves[i].old), cp.leaves[i].n, cp.leaves[i].steps, red->loc);
  for (int i = 0; i < ce.nleaves; i++) {
    leaf *l = &ce.leaves[i];
    if (l->old == rv) {
      if ((l->n != 0) != row || nra == 64) {
        kl_emit_error(ctx, red->loc, "graph-to-rock: a fused reduction's result is read through views it cannot take");
        goto out;
      }
      ra[nra++] = i;
      continue;
    }
    kl_value *b = chain(g, kl_value_map_get(&g->args, l->old), l->n, l->steps, red->loc);
    opnds[k++] = kd ? kl_pu_transform(ctx, red->loc, b, kd, g->nb, NULL) : b;
  }
  if (!nra) {
    kl_emit_error(ctx, red->loc, "graph-to-rock: a fused reduction's result does not read the reduction");
    goto out;
  }
  opnds[k++] = kd ? kl_pu_transform(ctx, red->loc, out, kd, g->nb, NULL) : out;
  kl_named_attr at[6];
  int na = 0;
  if (sm) {
    at[na++] = (kl_named_attr){ "axis", kl_attr_int(ctx, ax) };
  } else {
    at[na++] = (kl_named_attr){ "axes", kl_attr_i64_array(ctx, nax, axes) };
    at[na++] = (kl_named_attr){ "kind", kl_attr_str(ctx, kl_reduce_kind_name((kl_reduce_op)kl_op_scalar_code(red))) };
  }
  at[na++] = (kl_named_attr){ "n_prologue", kl_attr_int(ctx, cp.nleaves) };
  at[na++] = (kl_named_attr){ "result_args", kl_attr_i64_array(ctx, nra, ra) };
  if (row) at[na++] = (kl_named_attr){ "row_out", kl_attr_unit(ctx) };
  kl_op *op = kl_op_create(ctx, sm ? "rock.softmax" : "rock.reduce", red->loc, k, opnds, 0, NULL, na, at, 2);
  kl_region_push_block(&op->regions[0], cp.rb);
  kl_region_push_block(&op->regions[1], ce.rb);
  cp.rb = ce.rb = NULL;
  kl_block_push_op(g->nb, op);
  st = KL_OK;
out:
  kl_view_free(kd);
  free(opnds);
  cluster_free(&cp);
  cluster_free(&ce);
  return st;
}

/* concat: ONE rock.elementwise over the output; input i is read through a Pad view
 * along the axis (left = its offset, right = what follows), so it reads 0 outside its
 * slice, and the body adds the inputs (exactly one is non-zero at each coordinate; the
 * only inexactness is that a -0.0 element comes out as +0.0). */
static kl_status lower_concat(g2r *g, kl_op *cat, kl_value *out) {
  kl_ctx *ctx = g->ctx;
  const kl_type *ot = cat->results[0].type;
  int64_t ax = 0;
  if (!kl_op_attr_i64(cat, "axis", &ax)) kl_op_attr_i64s(cat, "axis", &ax, 1);
  if (ax < 0) ax += ot->rank;
  cluster c = { .g = g, .rb = kl_block_create(ctx) };
  kl_value *sum = NULL;
  bool isf = kl_type_is_float(ot->elem);
  int64_t off = 0;
  for (int i = 0; i < cat->nopnds; i++) {
    kl_value *in = cat->opnds[i].value;
    const kl_type *it = in->type;
    int64_t len = it->shape[ax];
    if (!kl_pu_nonempty(it)) {
      off += len;
      continue;
    }
    const kl_view **steps = NULL;
    int n = 0;
    if (len != ot->shape[ax]) {
      kl_view_err err = { 0 };
      kl_view *v = kl_pu_identity(it->rank, it->shape, &err), *t;
      const char *nm = v ? kl_view_name(v, (int)ax) : NULL;
      int64_t lr[2] = { off, ot->shape[ax] - off - len };
      if (v) {
        t = kl_view_pad(v, 1, &nm, lr, &err);
        kl_view_free(v);
        v = t;
      }
      if (v) {
        t = kl_view_simplify(v);
        kl_view_free(v);
        v = t;
      }
      if (!v) {
        cluster_free(&c);
        return kl_emit_error(ctx, cat->loc, "graph-to-rock: concat input view: %s", err.msg);
      }
      steps = steps_push(g, 0, NULL, keep(g, v));
      n = 1;
    }
    kl_value *x = emit_scalar(&c, in, n, steps);
    if (!x) {
      cluster_free(&c);
      return KL_ERR;
    }
    sum = sum ? bin(&c, isf ? "arith.addf" : "arith.addi", cat->loc, sum, x) : x;
    off += len;
  }
  if (sum) emit_elementwise(g, &c, sum, out, NULL, cat->loc);
  cluster_free(&c);
  return KL_OK;
}

static kl_status lower_elementwise(g2r *g, kl_value *root, kl_value *out) {
  if (root->def && kl_op_kernel_kind(root->def) == KL_KERNEL_CONCAT) return lower_concat(g, root->def, out);
  cluster c = { .g = g, .rb = kl_block_create(g->ctx) };
  kl_value *r = emit_scalar(&c, root, 0, NULL);
  if (!r) {
    cluster_free(&c);
    return KL_ERR;
  }
  emit_elementwise(g, &c, r, out, NULL, root->def ? root->def->loc : KL_LOC_UNKNOWN);
  cluster_free(&c);
  return KL_OK;
}

/* ------------------------------------------------------------------ driver */

static kl_status convert_group(kl_op *fn) {
  kl_ctx *ctx = fn->ctx;
  kl_block *ob = kl_region_entry(&fn->regions[0]);
  kl_op *ret = ob ? kl_block_terminator(ob) : NULL;
  const char *kind = kl_op_attr_string(fn, "kind");
  if (!ret || strcmp(ret->name, "func.return") || !kind)
    return kl_emit_error(ctx, fn->loc, "graph-to-rock: a kernel_group function needs a 'kind' and a func.return");
  g2r G = { .ctx = ctx, .fn = fn, .ob = ob, .nb = kl_block_create(ctx) };
  g2r *g = &G;
  kl_arena_init(&g->ar);
  int nin = ob->nargs, nout = ret->nopnds;
  const kl_attr **names = kl_xmalloc((size_t)(nin + nout + 1) * sizeof *names);
  for (int i = 0; i < nin; i++) {
    const kl_type *t = ob->args[i]->type;
    if (t->kind != KL_TY_TENSOR) {
      free(names);
      kl_arena_destroy(&g->ar);
      return kl_emit_error(ctx, fn->loc, "graph-to-rock: argument %d is not a tensor", i);
    }
    kl_value_map_set(&g->args, ob->args[i], kl_block_add_arg(ctx, g->nb, kl_pu_buffer_like(ctx, t)));
    char nm[32];
    snprintf(nm, sizeof nm, "in%d", i);
    names[i] = kl_attr_str(ctx, nm);
  }
  kl_value **outs = kl_xmalloc((size_t)(nout + 1) * sizeof *outs);
  const kl_attr *rstr = kl_op_attr(fn, "result_strides"); /* graph-partition: the outputs' declared layouts */
  for (int i = 0; i < nout; i++) {
    const kl_type *t = ret->opnds[i].value->type;
    const kl_attr *si = rstr && rstr->kind == KL_AT_ARRAY && i < rstr->n ? rstr->elems[i] : NULL;
    if (si && si->kind == KL_AT_ARRAY && si->n == t->rank && si->n > 0) {
      int64_t s[KL_MAX_RANK];
      for (int k = 0; k < si->n; k++) s[k] = si->elems[k]->kind == KL_AT_INT ? si->elems[k]->i : 0;
      const kl_type *lt = kl_type_tensor(ctx, t->elem, t->rank, t->shape, s);
      if (!lt) {
        free(names);
        free(outs);
        kl_arena_destroy(&g->ar);
        kl_value_map_free(&g->args);
        return kl_emit_error(ctx, fn->loc, "graph-to-rock: result %d: invalid result_strides", i);
      }
      t = lt;
    }
    outs[i] = kl_block_add_arg(ctx, g->nb, kl_pu_buffer_like(ctx, t));
    char nm[32];
    snprintf(nm, sizeof nm, "out%d", i);
    names[nin + i] = kl_attr_str(ctx, nm);
  }
  kl_status st = !strcmp(kind, "gemm") ? lower_gemm(g, ob, ret, outs) : KL_OK;
  for (int i = 0; i < nout && st == KL_OK && strcmp(kind, "gemm"); i++) {
    kl_value *root = ret->opnds[i].value;
    kl_op *rd = root->def;
    if (!kl_pu_nonempty(root->type)) continue; /* nothing to write */
    bool red_kind = !strcmp(kind, "reduce") || !strcmp(kind, "softmax");
    if (red_kind && !bare_reduction(g, root))
      st = nout == 1 ? lower_fused_reduction(g, root, outs[i])
                     : kl_emit_error(ctx, fn->loc, "graph-to-rock: a fused reduction kernel has one result");
    else if (!strcmp(kind, "reduce") && rd && kl_op_kernel_kind(rd) == KL_KERNEL_REDUCE)
      st = lower_reduce(g, rd, outs[i]);
    else if (!strcmp(kind, "softmax") && rd && kl_op_kernel_kind(rd) == KL_KERNEL_SOFTMAX)
      st = lower_softmax(g, rd, outs[i]);
    else if (!strcmp(kind, "elementwise"))
      st = lower_elementwise(g, root, outs[i]);
    else
      st = kl_emit_error(ctx, fn->loc, "graph-to-rock: unknown or inconsistent kernel kind '%s'", kind);
  }
  if (st == KL_OK) {
    kl_block_push_op(g->nb, kl_op_create(ctx, "func.return", ret->loc, 0, NULL, 0, NULL, 0, NULL, 0));
    for (kl_op *op = ob->first; op; op = op->next) kl_op_drop_all_uses(op);
    while (ob->last) kl_op_erase(ob->last);
    kl_block_unlink(ob);
    kl_region_push_block(&fn->regions[0], g->nb);
    kl_op_set_attr(fn, "kernel_group", NULL);
    kl_op_set_attr(fn, "kernel", kl_attr_unit(ctx));
    kl_op_set_attr(fn, "arg_names", kl_attr_array(ctx, nin + nout, names));
  } else {
    for (kl_op *op = g->nb->first; op; op = op->next) kl_op_drop_all_uses(op);
    while (g->nb->last) kl_op_erase(g->nb->last);
  }
  free(names);
  free(outs);
  free(g->chains);
  free(g->prologues);
  kl_value_map_free(&g->args);
  kl_arena_destroy(&g->ar);
  return st;
}

kl_status kl_graph_to_rock(kl_op *module) {
  kl_block *mb = kl_module_body(module);
  if (!mb) return KL_OK;
  kl_status st = KL_OK;
  for (kl_op *op = mb->first; op && st == KL_OK; op = op->next)
    if (!strcmp(op->name, "func.func") && kl_op_attr(op, "kernel_group")) {
      st = convert_group(op);
      if (st == KL_OK) st = kl_verify_level(op, KL_LEVEL_KERNEL, "graph-to-rock"); /* no graph ops left in the kernel */
    }
  return st;
}

static kl_status run_g2r(kl_op *module, const kl_pass_options *o, void *user) { return kl_graph_to_rock(module); }

void kl__register_graph_to_rock(kl_ctx *ctx);
void kl__register_graph_to_rock(kl_ctx *ctx) {
  kl_pass_info info = {
    "graph-to-rock",
    "turns each kernel_group function into a kernel over buffers: views -> rock.transform, conv/dot -> "
    "rock.conv/rock.gemm (once per group; epilogues and prologues as plain rock.elementwise ops over rock.alloc "
    "intermediates), element-wise -> rock.elementwise, reduce/softmax -> rock ops",
    NULL,
    0,
    run_g2r,
    NULL
  };
  kl_register_pass(ctx, &info);
}
