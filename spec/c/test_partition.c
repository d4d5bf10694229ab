/* test_partition.c — graph-partition, graph-to-rock and rock-conv-to-gemm.
 *  1. rock-conv-to-gemm numerics: >= 50 random convolutions (layouts of input, filter
 *     and output independent, stride, padding, dilation, groups, odd sizes) given as a
 *     kernel with one rock.conv; after the pass the rock.gemm is evaluated in C by
 *     looping over g, m, n, k and evaluating the composed views with
 *     kl_view_eval_addr on random host data; compared with kl_ref_conv2d; every output
 *     element must be written exactly once.
 *  2. Random graphs (seeded): conv / dot with random epilogues (bias broadcast,
 *     residual add, activations, clip, scale, casts, views on the chain, shared
 *     intermediates, non-invertible views that end the chain), element-wise-only
 *     graphs with views, reductions, softmax, concat, copies. The pipeline
 *     graph-partition,graph-to-rock + rock-regularize,rock-conv-to-gemm must verify after
 *     each step; the anchor must be alone in its kernel with exactly the expected
 *     epilogue; after rock-regularize the gemm kernel's rock.elementwise must read the
 *     GEMM's rock.alloc directly; and the whole
 *     host plan, run by a small interpreter of the kernel IR below, must match
 *     kl_graph_eval (f32: 1e-5 relative, f16: 1e-2).
 *  3. Hand-written cases: a shared intermediate stops the epilogue, view duplication,
 *     copy kernels, error on an unknown op. */
#include "core/dialect_builtin.h"
#include "ctx_test_util.h"
#include "core/dialect_graph.h"
#include "core/dialect_rock.h"
#include "core/pass.h"
#include "core/print.h"
#include "core/verify.h"
#include "core/view.h"
#include "runtime/graph_eval.h"
#include "runtime/refops.h"
#if __has_include("core/view_attr.h")
#include "core/view_attr.h"
#else
const kl_view *kl_attr_view(const kl_attr *a);
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ir_test_util.h"

static int stat_epilogue, stat_inverted, stat_f16; /* coverage of the random graphs */

/* ------------------------------------------------------------------ rng */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) { return (uint32_t)(xorshift64(&rng_state) >> 11); }
static int rint_(int lo, int hi) { return lo + (int)(rnd() % (uint32_t)(hi - lo + 1)); } /* [lo, hi] */
static bool coin(int percent) { return (int)(rnd() % 100) < percent; }

/* ------------------------------------------------------------------ views of operands */
/* The composed view of v's rock.transform chain (NULL if v is a buffer itself) and its
 * underlying buffer. */
static kl_view *composed_view(kl_value *v, kl_value **base) {
  kl_op *ops[64];
  int n;
  *base = kl_rock_underlying(v, ops, &n, 64);
  if (n == 0 || n > 64) return NULL;
  kl_view *r = kl_view_clone(kl_attr_view(kl_op_attr(ops[0], "view")));
  for (int i = 1; i < n && r; i++) {
    kl_view_err e;
    kl_view *t = kl_view_compose(r, kl_attr_view(kl_op_attr(ops[i], "view")), &e);
    if (!t) fprintf(stderr, "compose failed: %s\n", e.msg);
    kl_view_free(r);
    r = t;
  }
  return r;
}

/* ------------------------------------------------------------------ interpreter */
/* Host buffers of doubles addressed by sum(idx * stride) (strides of the buffer type). */
typedef struct ibuf {
  const kl_type *t;
  double *d;
  int64_t n;
} ibuf;
typedef struct interp {
  int n, cap;
  kl_value **keys;
  ibuf **bufs;
  bool failed;
  char msg[512];
} interp;

static int64_t span_of(const kl_type *t) {
  int64_t s = 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) return 1;
    s += (t->shape[i] - 1) * t->strides[i];
  }
  return s;
}
static ibuf *ibuf_new(const kl_type *t) {
  ibuf *b = kl_xcalloc(1, sizeof *b);
  b->t = t;
  b->n = span_of(t);
  b->d = kl_xcalloc((size_t)b->n, sizeof(double));
  return b;
}
static void ibuf_free(ibuf *b) {
  if (b) {
    free(b->d);
    free(b);
  }
}
static void bind(interp *I, kl_value *v, ibuf *b) {
  if (I->n == I->cap) {
    I->cap = I->cap ? 2 * I->cap : 32;
    I->keys = kl_xrealloc(I->keys, (size_t)I->cap * sizeof *I->keys);
    I->bufs = kl_xrealloc(I->bufs, (size_t)I->cap * sizeof *I->bufs);
  }
  I->keys[I->n] = v;
  I->bufs[I->n] = b;
  I->n++;
}
static ibuf *lookup(interp *I, kl_value *v) {
  for (int i = I->n - 1; i >= 0; i--)
    if (I->keys[i] == v) return I->bufs[i];
  return NULL;
}
static void ifail(interp *I, const char *fmt, const char *a) {
  if (!I->failed) snprintf(I->msg, sizeof I->msg, fmt, a);
  I->failed = true;
}

/* An operand: its buffer and the composed view (NULL = direct). */
typedef struct opnd {
  ibuf *b;
  kl_view *v;
  int rank;
  int64_t shape[16];
} opnd;
static bool opnd_get(interp *I, kl_value *v, opnd *o) {
  kl_value *base;
  o->v = composed_view(v, &base);
  o->b = lookup(I, base);
  o->rank = v->type->rank;
  for (int i = 0; i < o->rank; i++) o->shape[i] = v->type->shape[i];
  if (!o->b) {
    ifail(I, "operand buffer not found (%s)", base->def ? base->def->name : "arg");
    kl_view_free(o->v);
    return false;
  }
  return true;
}
static int64_t opnd_addr(const opnd *o, const int64_t *u, bool *valid) {
  if (!o->v) {
    int64_t a = 0;
    for (int i = 0; i < o->rank; i++) a += u[i] * o->b->t->strides[i];
    *valid = true;
    return a;
  }
  return kl_view_eval_addr(o->v, u, o->b->t->strides, valid);
}
static interp *cur_interp; /* for out-of-bounds reports */
static double opnd_read(const opnd *o, const int64_t *u) {
  bool valid;
  int64_t a = opnd_addr(o, u, &valid);
  if (valid && (a < 0 || a >= o->b->n)) {
    ifail(cur_interp, "out-of-bounds read of a %s", o->b->t->text);
    return 0;
  }
  return valid ? o->b->d[a] : 0.0;
}
static void opnd_write(const opnd *o, const int64_t *u, double x) {
  bool valid;
  int64_t a = opnd_addr(o, u, &valid);
  if (valid && (a < 0 || a >= o->b->n)) {
    ifail(cur_interp, "out-of-bounds write of a %s", o->b->t->text);
    return;
  }
  if (valid) o->b->d[a] = kl_round_to_type(o->b->t->elem, x);
}
static bool next_idx(int rank, const int64_t *shape, int64_t *idx) {
  for (int i = rank - 1; i >= 0; i--) {
    if (++idx[i] < shape[i]) return true;
    idx[i] = 0;
  }
  return false;
}
static int64_t numel(int rank, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= shape[i];
  return n;
}

static double sat_int(const kl_type *t, double x) {
  if (isnan(x)) return 0;
  x = trunc(x);
  double lo, hi;
  switch (t->kind) {
    case KL_TY_I1: return x != 0;
    case KL_TY_I8:
      lo = -128;
      hi = 127;
      break;
    case KL_TY_I32:
      lo = -2147483648.0;
      hi = 2147483647.0;
      break;
    default:
      lo = -9.2e18;
      hi = 9.2e18;
      break;
  }
  return x < lo ? lo : x > hi ? hi : x;
}
static int64_t ipow_(int64_t b, int64_t e) {
  if (e < 0) return (b == 1) ? 1 : (b == -1) ? ((e & 1) ? -1 : 1) : 0;
  int64_t r = 1;
  while (e) {
    if (e & 1) r = (int64_t)((uint64_t)r * (uint64_t)b);
    b = (int64_t)((uint64_t)b * (uint64_t)b);
    e >>= 1;
  }
  return r;
}

typedef struct smap {
  int n;
  kl_value *k[256];
  double v[256];
} smap;
static double sget(smap *m, kl_value *k) {
  for (int i = m->n - 1; i >= 0; i--)
    if (m->k[i] == k) return m->v[i];
  return NAN;
}
static void sset(smap *m, kl_value *k, double v) {
  if (m->n < 256) {
    m->k[m->n] = k;
    m->v[m->n] = v;
    m->n++;
  }
}

/* Evaluates an element-wise body; returns the yielded value. */
static double eval_body(interp *I, kl_block *b, const double *args) {
  smap m = { 0 };
  for (int i = 0; i < b->nargs; i++) sset(&m, b->args[i], args[i]);
  for (kl_op *op = b->first; op; op = op->next) {
    const char *n = op->name;
    if (!strcmp(n, "rock.yield")) return sget(&m, op->opnds[0].value);
    const kl_type *t = op->nresults ? op->results[0].type : NULL;
    double a = op->nopnds > 0 ? sget(&m, op->opnds[0].value) : 0, c = op->nopnds > 1 ? sget(&m, op->opnds[1].value) : 0,
           r = 0;
    int64_t ia = (int64_t)a, ic = (int64_t)c;
    if (!strcmp(n, "arith.constant")) {
      const kl_attr *v = kl_op_attr(op, "value");
      r = v->kind == KL_AT_FLOAT ? v->f : (double)v->i;
    } else if (!strcmp(n, "arith.addf"))
      r = a + c;
    else if (!strcmp(n, "arith.subf"))
      r = a - c;
    else if (!strcmp(n, "arith.mulf"))
      r = a * c;
    else if (!strcmp(n, "arith.divf"))
      r = a / c;
    else if (!strcmp(n, "arith.maxf"))
      r = (isnan(a) || isnan(c)) ? NAN : a > c ? a : c;
    else if (!strcmp(n, "arith.minf"))
      r = (isnan(a) || isnan(c)) ? NAN : a < c ? a : c;
    else if (!strcmp(n, "arith.negf"))
      r = -a;
    else if (!strcmp(n, "math.exp"))
      r = exp(a);
    else if (!strcmp(n, "math.log"))
      r = log(a);
    else if (!strcmp(n, "math.sqrt"))
      r = sqrt(a);
    else if (!strcmp(n, "math.rsqrt"))
      r = 1.0 / sqrt(a);
    else if (!strcmp(n, "math.tanh"))
      r = tanh(a);
    else if (!strcmp(n, "math.absf"))
      r = fabs(a);
    else if (!strcmp(n, "math.powf"))
      r = pow(a, c);
    /* integer results wrap to the result type before they become doubles (exact) */
    else if (!strcmp(n, "math.ipowi"))
      r = (double)kl_wrap_int(t, ipow_(ia, ic));
    else if (!strcmp(n, "arith.addi"))
      r = (double)kl_wrap_int(t, (int64_t)((uint64_t)ia + (uint64_t)ic));
    else if (!strcmp(n, "arith.subi"))
      r = (double)kl_wrap_int(t, (int64_t)((uint64_t)ia - (uint64_t)ic));
    else if (!strcmp(n, "arith.muli"))
      r = (double)kl_wrap_int(t, (int64_t)((uint64_t)ia * (uint64_t)ic));
    else if (!strcmp(n, "arith.divsi")) { /* UB on hardware: the lowering must guard it */
      if (ic == 0) {
        ifail(I, "interpreter: %s by zero", n);
        return NAN;
      }
      r = (double)kl_wrap_int(t, ia / ic);
    } else if (!strcmp(n, "arith.maxsi"))
      r = (double)(ia > ic ? ia : ic);
    else if (!strcmp(n, "arith.minsi"))
      r = (double)(ia < ic ? ia : ic);
    else if (!strcmp(n, "arith.extf") || !strcmp(n, "arith.truncf") || !strcmp(n, "arith.sitofp") ||
             !strcmp(n, "arith.extsi") || !strcmp(n, "arith.trunci"))
      r = a;
    else if (!strcmp(n, "arith.fptosi"))
      r = sat_int(t, a);
    else if (!strcmp(n, "arith.cmpf") || !strcmp(n, "arith.cmpi")) {
      const char *p = kl_op_attr_string(op, "predicate");
      r = !strcmp(p, "eq")   ? a == c
          : !strcmp(p, "ne") ? a != c
          : !strcmp(p, "lt") ? a < c
          : !strcmp(p, "le") ? a <= c
          : !strcmp(p, "gt") ? a > c
                             : a >= c;
    } else if (!strcmp(n, "arith.select"))
      r = a != 0 ? c : sget(&m, op->opnds[2].value);
    else {
      ifail(I, "interpreter: unknown scalar op %s", n);
      return NAN;
    }
    sset(&m, kl_op_result(op, 0), t ? kl_round_to_type(t, r) : r);
  }
  ifail(I, "interpreter: body without %s", "rock.yield");
  return NAN;
}

/* A fused rock.reduce / rock.softmax (core/dialect_rock.h): the prologue body gives the
 * input at every point, the reduction (or softmax) runs in double, its value is rounded
 * to the epilogue's argument type, and the epilogue body gives what out stores (row_out:
 * at every input point, the value of its row). */
static void fused_reduction(interp *I, kl_op *op, opnd *o, int no) {
  int64_t np = 0, ra[16];
  kl_op_attr_i64(op, "n_prologue", &np);
  int nra = kl_op_attr_i64s(op, "result_args", ra, 16);
  kl_block *pb = op->regions[0].first, *eb = op->regions[1].first;
  const kl_type *rt = eb->args[ra[0]]->type;
  bool sm = !strcmp(op->name, "rock.softmax"), row_out = kl_op_attr(op, "row_out") != NULL;
  const char *kind = sm ? "softmax" : kl_op_attr_string(op, "kind");
  bool red[16] = { 0 };
  int r = o[0].rank;
  if (sm) {
    int64_t ax = 0;
    kl_op_attr_i64(op, "axis", &ax);
    red[ax] = true;
  } else {
    int64_t axes[16];
    int na = kl_op_attr_i64s(op, "axes", axes, 16);
    for (int i = 0; i < na; i++) red[axes[i]] = true;
  }
  int64_t kd[16], in_n = numel(r, o[0].shape), u[16] = { 0 };
  for (int d = 0; d < r; d++) kd[d] = red[d] ? 1 : o[0].shape[d];
  int64_t kn = numel(r, kd), cnt = in_n / (kn ? kn : 1);
  double *x = kl_xcalloc((size_t)in_n + 1, sizeof(double)), *acc = kl_xcalloc((size_t)kn + 1, sizeof(double));
  double *mx = kl_xcalloc((size_t)kn + 1, sizeof(double)), args[16];
  bool is_max = !strcmp(kind, "max"), is_min = !strcmp(kind, "min");
  for (int64_t i = 0; i < kn; i++) {
    acc[i] = is_max ? -INFINITY : is_min ? INFINITY : 0;
    mx[i] = -INFINITY;
  }
  /* kept flat index of input point u */
#define KFLAT(u, f)                                                        \
  do {                                                                     \
    f = 0;                                                                 \
    for (int d_ = 0; d_ < r; d_++) f = f * kd[d_] + (red[d_] ? 0 : u[d_]); \
  } while (0)
  int64_t i = 0, f;
  do {
    for (int k = 0; k < np; k++) args[k] = opnd_read(&o[k], u);
    x[i] = eval_body(I, pb, args);
    KFLAT(u, f);
    double v = x[i++];
    if (is_max)
      acc[f] = (isnan(acc[f]) || isnan(v)) ? NAN : (v > acc[f] ? v : acc[f]);
    else if (is_min)
      acc[f] = (isnan(acc[f]) || isnan(v)) ? NAN : (v < acc[f] ? v : acc[f]);
    else if (sm)
      mx[f] = v > mx[f] ? v : mx[f];
    else
      acc[f] += v;
  } while (next_idx(r, o[0].shape, u) && !I->failed);
  if (sm) {
    i = 0;
    do {
      KFLAT(u, f);
      acc[f] += exp(x[i++] - mx[f]);
    } while (next_idx(r, o[0].shape, u));
  } else if (!strcmp(kind, "mean")) {
    for (int64_t k = 0; k < kn; k++) acc[k] = kl_type_is_float(rt) ? acc[k] / (double)cnt : trunc(acc[k] / (double)cnt);
  }
  opnd *out = &o[no - 1];
  const int64_t *osh = sm || row_out ? o[0].shape : kd;
  i = 0;
  memset(u, 0, sizeof u);
  do {
    KFLAT(u, f);
    double v = sm ? exp(x[i] - mx[f]) / acc[f] : acc[f];
    v = kl_round_to_type(rt, v);
    for (int k = 0, e = (int)np; k < eb->nargs; k++) {
      bool res = false;
      for (int j = 0; j < nra; j++) res = res || ra[j] == k;
      args[k] = res ? v : opnd_read(&o[e++], u);
    }
    opnd_write(out, u, eval_body(I, eb, args));
    i++;
  } while (next_idx(r, osh, u) && !I->failed);
#undef KFLAT
  free(x);
  free(acc);
  free(mx);
}

static void run_op(interp *I, kl_op *op) {
  const char *n = op->name;
  if (!strcmp(n, "rock.transform") || !strcmp(n, "func.return")) return;
  if (!strcmp(n, "rock.alloc")) {
    bind(I, kl_op_result(op, 0), ibuf_new(op->results[0].type));
    return;
  }
  int no = op->nopnds;
  opnd o[16];
  if (no > 16) {
    ifail(I, "too many operands for %s", n);
    return;
  }
  for (int i = 0; i < no; i++)
    if (!opnd_get(I, op->opnds[i].value, &o[i])) {
      for (int j = 0; j < i; j++) kl_view_free(o[j].v);
      return;
    }
  int64_t u[16] = { 0 };
  if (!strcmp(n, "rock.fill")) {
    double v = 0;
    kl_op_attr_f64(op, "value", &v);
    if (numel(o[0].rank, o[0].shape)) do
        opnd_write(&o[0], u, v);
      while (next_idx(o[0].rank, o[0].shape, u));
  } else if (!strcmp(n, "rock.gemm")) {
    int64_t G = o[0].shape[0], K = o[0].shape[1], M = o[0].shape[2], N = o[1].shape[2];
    for (int64_t g = 0; g < G; g++)
      for (int64_t mm = 0; mm < M; mm++)
        for (int64_t nn = 0; nn < N; nn++) {
          double acc = 0;
          for (int64_t k = 0; k < K; k++)
            acc += opnd_read(&o[0], (int64_t[]){ g, k, mm }) * opnd_read(&o[1], (int64_t[]){ g, k, nn });
          opnd_write(&o[2], (int64_t[]){ g, mm, nn }, acc);
        }
  } else if (!strcmp(n, "rock.elementwise")) {
    opnd *out = &o[no - 1];
    double args[16];
    if (numel(out->rank, out->shape)) do {
        for (int i = 0; i + 1 < no; i++) args[i] = opnd_read(&o[i], u);
        opnd_write(out, u, eval_body(I, op->regions[0].first, args));
      } while (next_idx(out->rank, out->shape, u) && !I->failed);
  } else if (!strcmp(n, "rock.reduce") && op->nregions == 2) {
    fused_reduction(I, op, o, no);
  } else if (!strcmp(n, "rock.softmax") && op->nregions == 2) {
    fused_reduction(I, op, o, no);
  } else if (!strcmp(n, "rock.reduce")) {
    const char *kind = kl_op_attr_string(op, "kind");
    int64_t axes[16];
    int na = kl_op_attr_i64s(op, "axes", axes, 16);
    bool red[16] = { 0 };
    for (int i = 0; i < na; i++) red[axes[i]] = true;
    if (o[1].rank != o[0].rank) {
      ifail(I, "rock.reduce: output rank differs from the input's (%s)", o[1].b->t->text);
      goto done;
    }
    int64_t on = numel(o[1].rank, o[1].shape);
    double *acc = kl_xcalloc((size_t)on, sizeof(double));
    int64_t cnt = 0;
    bool is_max = !strcmp(kind, "max"), is_min = !strcmp(kind, "min");
    for (int64_t i = 0; i < on; i++) acc[i] = is_max ? -INFINITY : is_min ? INFINITY : 0;
    do {
      int64_t fo = 0;
      for (int d = 0; d < o[0].rank; d++) fo = fo * o[1].shape[d] + (red[d] ? 0 : u[d]);
      double x = opnd_read(&o[0], u);
      if (fo == 0) cnt++;
      if (is_max)
        acc[fo] = (isnan(acc[fo]) || isnan(x)) ? NAN : (x > acc[fo] ? x : acc[fo]);
      else if (is_min)
        acc[fo] = (isnan(acc[fo]) || isnan(x)) ? NAN : (x < acc[fo] ? x : acc[fo]);
      else
        acc[fo] += x;
    } while (next_idx(o[0].rank, o[0].shape, u));
    int64_t w[16] = { 0 };
    for (int64_t i = 0; i < on; i++) {
      double r = acc[i];
      if (!strcmp(kind, "mean")) {
        r = r / (double)cnt;
        if (!kl_type_is_float(o[1].b->t->elem)) r = trunc(r);
      }
      opnd_write(&o[1], w, r);
      next_idx(o[1].rank, o[1].shape, w);
    }
    free(acc);
  } else if (!strcmp(n, "rock.softmax")) {
    int64_t ax = 0;
    kl_op_attr_i64(op, "axis", &ax);
    int64_t L = o[0].shape[ax];
    int64_t sh[16];
    memcpy(sh, o[0].shape, sizeof sh);
    sh[ax] = 1;
    do {
      double mx = -INFINITY, s = 0;
      for (int64_t j = 0; j < L; j++) {
        u[ax] = j;
        double x = opnd_read(&o[0], u);
        if (x > mx) mx = x;
      }
      for (int64_t j = 0; j < L; j++) {
        u[ax] = j;
        s += exp(opnd_read(&o[0], u) - mx);
      }
      for (int64_t j = 0; j < L; j++) {
        u[ax] = j;
        opnd_write(&o[1], u, exp(opnd_read(&o[0], u) - mx) / s);
      }
      u[ax] = 0;
    } while (next_idx(o[0].rank, sh, u));
  } else {
    ifail(I, "interpreter: unknown op %s", n);
  }
done:
  for (int i = 0; i < no; i++) kl_view_free(o[i].v);
}

static void run_kernel(interp *I, kl_op *fn, int nargs, ibuf *const *args) {
  kl_block *b = kl_region_entry(&fn->regions[0]);
  if (b->nargs != nargs) {
    ifail(I, "kernel argument count mismatch in %s", kl_op_attr_string(fn, "sym_name"));
    return;
  }
  for (int i = 0; i < nargs; i++) bind(I, b->args[i], args[i]);
  for (kl_op *op = b->first; op && !I->failed; op = op->next) run_op(I, op);
}

static ibuf *ibuf_from_tensor(const kl_type *t, const kl_tensor *x) {
  ibuf *b = ibuf_new(t);
  int64_t u[16] = { 0 };
  if (numel(t->rank, t->shape)) do {
      int64_t a = 0;
      for (int i = 0; i < t->rank; i++) a += u[i] * t->strides[i];
      b->d[a] = kl_tensor_get(x, u);
    } while (next_idx(t->rank, t->shape, u));
  return b;
}
static ibuf *ibuf_from_constant(kl_op *c) {
  const kl_type *t = c->results[0].type;
  const kl_attr *v = kl_op_attr(c, "value");
  ibuf *b = ibuf_new(t);
  int64_t u[16] = { 0 }, flat = 0;
  if (numel(t->rank, t->shape)) do {
      int64_t a = 0;
      for (int i = 0; i < t->rank; i++) a += u[i] * t->strides[i];
      const kl_attr *e = v->elems[flat++];
      b->d[a] = kl_round_to_type(t->elem, e->kind == KL_AT_FLOAT ? e->f : (double)e->i);
    } while (next_idx(t->rank, t->shape, u));
  return b;
}

/* Runs the partitioned + lowered graph; returns the output buffers (caller frees). */
static ibuf **run_plan(interp *I, kl_op *module, kl_op *graph, int nin, const kl_named_tensor *ins, int *nout) {
  cur_interp = I;
  ibuf **owned = NULL;
  int nowned = 0;
  ibuf **outs = NULL;
  *nout = 0;
  for (kl_op *op = kl_graph_body(graph)->first; op && !I->failed; op = op->next) {
    ibuf *nb = NULL;
    if (!strcmp(op->name, "graph.param")) {
      const char *pn = kl_op_attr_string(op, "name");
      for (int i = 0; i < nin; i++)
        if (!strcmp(ins[i].name, pn)) nb = ibuf_from_tensor(op->results[0].type, ins[i].tensor);
      if (!nb) {
        ifail(I, "no input for %s", pn);
        break;
      }
      bind(I, kl_op_result(op, 0), nb);
    } else if (!strcmp(op->name, "graph.constant")) {
      nb = ibuf_from_constant(op);
      bind(I, kl_op_result(op, 0), nb);
    } else if (!strcmp(op->name, "graph.launch")) {
      kl_op *fn = kl_module_lookup(module, kl_op_attr(op, "callee")->s);
      if (!fn) {
        ifail(I, "no kernel %s", kl_op_attr(op, "callee")->s);
        break;
      }
      ibuf *args[64];
      int na = 0;
      for (int i = 0; i < op->nopnds && na < 64; i++) args[na++] = lookup(I, op->opnds[i].value);
      for (int r = 0; r < op->nresults && na < 64; r++) { /* one output buffer per result */
        ibuf *rb = ibuf_new(op->results[r].type);
        args[na++] = rb;
        bind(I, kl_op_result(op, r), rb);
        owned = kl_xrealloc(owned, (size_t)(nowned + 1) * sizeof *owned);
        owned[nowned++] = rb;
      }
      run_kernel(I, fn, na, args);
    } else if (!strcmp(op->name, "func.return")) {
      *nout = op->nopnds;
      outs = kl_xmalloc((size_t)(op->nopnds + 1) * sizeof *outs);
      for (int i = 0; i < op->nopnds; i++) {
        ibuf *s = lookup(I, op->opnds[i].value);
        outs[i] = ibuf_new(s->t);
        memcpy(outs[i]->d, s->d, (size_t)s->n * sizeof(double));
      }
    } else {
      ifail(I, "unexpected op %s in the plan", op->name);
    }
    if (nb) {
      owned = kl_xrealloc(owned, (size_t)(nowned + 1) * sizeof *owned);
      owned[nowned++] = nb;
    }
  }
  for (int i = 0; i < nowned; i++) ibuf_free(owned[i]);
  free(owned);
  return outs;
}

/* ------------------------------------------------------------------ graph building */
typedef struct gb {
  kl_ctx *ctx;
  kl_op *module, *graph;
  int nparams;
  bool failed;
} gb;
static kl_value *gparam(gb *b, const char *name, const kl_type *t) {
  kl_named_attr a = { "name", kl_attr_str(b->ctx, name) };
  kl_op *o = kl_graph_build(b->graph, "param", KL_LOC_UNKNOWN, 0, NULL, 1, &a, t);
  if (!o) {
    b->failed = true;
    return NULL;
  }
  b->nparams++;
  return kl_op_result(o, 0);
}
static kl_value *gop(gb *b, const char *name, int n, kl_value *const *x, int na, const kl_named_attr *attrs,
                     const kl_type *t) {
  if (b->failed) return NULL;
  for (int i = 0; i < n; i++)
    if (!x[i]) {
      b->failed = true;
      return NULL;
    }
  kl_op *o = kl_graph_build(b->graph, name, KL_LOC_UNKNOWN, n, x, na, attrs, t);
  if (!o) {
    char *d = kl_diag_take(b->ctx);
    fprintf(stderr, "graph build %s failed: %s", name, d);
    free(d);
    b->failed = true;
    return NULL;
  }
  return kl_op_result(o, 0);
}
static kl_value *g1(gb *b, const char *name, kl_value *x) { return gop(b, name, 1, &x, 0, NULL, NULL); }
static kl_value *g2(gb *b, const char *name, kl_value *x, kl_value *y) {
  kl_value *v[] = { x, y };
  return gop(b, name, 2, v, 0, NULL, NULL);
}
static kl_value *gperm(gb *b, kl_value *x, int r, const int64_t *perm) {
  kl_named_attr a = { "perm", kl_attr_i64_array(b->ctx, r, perm) };
  return gop(b, "transpose", 1, &x, 1, &a, NULL);
}
static kl_value *greshape(gb *b, kl_value *x, int r, const int64_t *shape) {
  kl_named_attr a = { "shape", kl_attr_i64_array(b->ctx, r, shape) };
  return gop(b, "reshape", 1, &x, 1, &a, NULL);
}
static kl_value *gconvert(gb *b, kl_value *x, kl_type_kind k) {
  return gop(b, "convert", 1, &x, 0, NULL, kl_type_scalar(b->ctx, k));
}
static kl_value *gconst_scalar(gb *b, double v, const kl_type *elem) {
  const kl_attr *e = kl_const_attr_for(b->ctx, elem, v);
  kl_named_attr a = { "value", kl_attr_array(b->ctx, 1, &e) };
  const kl_type *t = kl_type_tensor(b->ctx, elem, 1, (int64_t[]){ 1 }, NULL);
  kl_op *o = kl_graph_build(b->graph, "constant", KL_LOC_UNKNOWN, 0, NULL, 1, &a, t);
  return o ? kl_op_result(o, 0) : NULL;
}
static const kl_type *tensor_t(gb *b, const kl_type *elem, int r, const int64_t *shape, bool permuted) {
  if (!permuted || r < 2) return kl_type_tensor(b->ctx, elem, r, shape, NULL);
  /* a random dense permutation layout */
  int perm[16];
  for (int i = 0; i < r; i++) perm[i] = i;
  for (int i = r - 1; i > 0; i--) {
    int j = rint_(0, i);
    int t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  int64_t st[16];
  kl_strides_from_perm(r, shape, perm, st);
  return kl_type_tensor(b->ctx, elem, r, shape, st);
}
static kl_value *rparam(gb *b, const kl_type *elem, int r, const int64_t *shape) {
  char nm[16];
  snprintf(nm, sizeof nm, "p%d", b->nparams);
  return gparam(b, nm, tensor_t(b, elem, r, shape, coin(40)));
}

/* ------------------------------------------------------------------ pipeline + checks */
static kl_status run_pipeline(kl_op *module, const char *pipeline) {
  kl_pass_manager *pm = kl_pass_manager_create(module->ctx);
  kl_status st = kl_pass_manager_add_pipeline(pm, pipeline);
  if (st == KL_OK) st = kl_pass_manager_run(pm, module);
  kl_pass_manager_destroy(pm);
  return st;
}
static int count_ew(kl_op *fn) {
  int n, c = 0;
  kl_op **ops = kl_collect_ops(fn, &n);
  for (int i = 0; i < n; i++)
    if (kl_op_has_trait(ops[i], KL_TRAIT_ELEMENTWISE)) c++;
  free(ops);
  return c;
}
static kl_op *find_kind(kl_op *module, const char *kind, int *count) {
  kl_op *r = NULL;
  *count = 0;
  for (kl_op *op = kl_module_body(module)->first; op; op = op->next) {
    const char *k = kl_op_attr_string(op, "kind");
    if (k && !strcmp(k, kind)) {
      r = r ? r : op;
      (*count)++;
    }
  }
  return r;
}
static void dump(kl_op *m, const char *why) {
  char *t = kl_print_op(m, 0);
  fprintf(stderr, "---- %s\n%s", why, t);
  free(t);
  char *d = kl_diag_take(m->ctx);
  fprintf(stderr, "diagnostics: %s\n", d);
  free(d);
}

static double max_rel_err(const ibuf *got, const kl_tensor *want, int *bad_at) {
  const kl_type *t = got->t;
  int64_t u[16] = { 0 };
  double worst = 0;
  int64_t flat = 0;
  *bad_at = -1;
  if (!numel(t->rank, t->shape)) return 0;
  do {
    int64_t a = 0;
    for (int i = 0; i < t->rank; i++) a += u[i] * t->strides[i];
    double g = got->d[a], w = kl_tensor_get(want, u);
    double e;
    if (isnan(w) || isnan(g))
      e = (isnan(w) && isnan(g)) ? 0 : INFINITY;
    else if (isinf(w) || isinf(g))
      e = (g == w) ? 0 : INFINITY;
    else
      e = fabs(g - w) / (fabs(w) > 1 ? fabs(w) : 1);
    if (e > worst) {
      worst = e;
      *bad_at = (int)flat;
    }
    flat++;
  } while (next_idx(t->rank, t->shape, u));
  return worst;
}

/* Evaluates the graph, runs the pipeline (checking structure), interprets, compares.
 * expect_ew < 0: no gemm-kernel check. Returns false on a failure. */
static bool check_graph(gb *b, kl_value *const *outs, int nouts, int expect_ew, double tol, const char *what,
                        int seed) {
  if (b->failed) {
    CHECK(0, "%s #%d: graph construction failed", what, seed);
    return false;
  }
  kl_graph_set_outputs(b->graph, nouts, outs, KL_LOC_UNKNOWN);
  if (kl_verify(b->module) != KL_OK) {
    dump(b->module, "input does not verify");
    CHECK(0);
    return false;
  }
  /* inputs and reference outputs */
  kl_op *params[64];
  int np = kl_graph_params(b->graph, params, 64);
  kl_named_tensor ins[64];
  char err[512];
  for (int i = 0; i < np; i++) {
    const kl_type *t = params[i]->results[0].type;
    ins[i].name = kl_op_attr_string(params[i], "name");
    ins[i].tensor = kl_tensor_rand(kl_dtype_of_type(t->elem), t->rank, t->shape, t->strides,
                                   1000 + 17 * (uint64_t)seed + (uint64_t)i, KL_DIST_NORMAL, err, sizeof err);
  }
  int nref = 0, expect_rock_ew = 0;
  kl_tensor **ref = NULL;
  bool ok = kl_graph_eval(b->graph, np, ins, &nref, &ref, err, sizeof err) == KL_OK;
  CHECK(ok, "%s #%d: graph_eval: %s", what, seed, err);
  if (ok) {
    ok = run_pipeline(b->module, "graph-partition") == KL_OK;
    CHECK(ok, "%s #%d: graph-partition failed", what, seed);
    if (!ok) dump(b->module, "after graph-partition");
  }
  if (ok) {
    /* the graph holds only params, constants, launches and the return */
    bool only = true;
    for (kl_op *op = kl_graph_body(b->graph)->first; op; op = op->next)
      only = only &&
          (!strcmp(op->name, "graph.param") || !strcmp(op->name, "graph.constant") ||
           !strcmp(op->name, "graph.launch") || !strcmp(op->name, "func.return"));
    CHECK(only, "%s #%d: graph not fully partitioned", what, seed);
    if (expect_ew >= 0) {
      int ng;
      kl_op *gk = find_kind(b->module, "gemm", &ng);
      CHECK(ng == 1, "%s #%d: %d gemm kernels", what, seed, ng);
      if (gk) {
        int anchors = count_named(gk, "graph.conv") + count_named(gk, "graph.dot"), ew = count_ew(gk);
        CHECK(anchors == 1 && ew == expect_ew,
              "%s #%d: gemm kernel has %d anchors and %d element-wise ops, expected 1 and %d", what, seed, anchors, ew,
              expect_ew);
        if (anchors != 1 || ew != expect_ew) dump(b->module, "epilogue mismatch");
      }
    }
    /* results of the gemm kernel other than the anchor's own: one rock.elementwise each */
    if (expect_ew >= 0) {
      int ng;
      kl_op *gk = find_kind(b->module, "gemm", &ng);
      kl_op *gr = gk ? kl_block_terminator(kl_region_entry(&gk->regions[0])) : NULL;
      expect_rock_ew = 0;
      for (int i = 0; gr && i < gr->nopnds; i++) {
        kl_op *d = gr->opnds[i].value->def;
        expect_rock_ew += !(d && kl_op_has_trait(d, KL_TRAIT_GEMM_ANCHOR));
      }
    }
    ok = run_pipeline(b->module, "graph-to-rock,rock-regularize") == KL_OK;
    CHECK(ok, "%s #%d: graph-to-rock, rock-regularize failed", what, seed);
    if (!ok) dump(b->module, "after graph-to-rock, rock-regularize");
  }
  if (ok && expect_ew >= 0) {
    int ng;
    kl_op *gk = find_kind(b->module, "gemm", &ng);
    int anchors = gk ? count_named(gk, "rock.conv") + count_named(gk, "rock.gemm") + count_named(gk, "rock.fill") : 0;
    int ews = gk ? count_named(gk, "rock.elementwise") : -1;
    CHECK(anchors == 1, "%s #%d: gemm kernel has %d conv/gemm ops", what, seed, anchors);
    if (expect_ew > 0 && gk) {
      /* (one more when the anchor result is a result that another result reads through
       * views: the anchor then writes an intermediate and that output is a copy of it) */
      /* (more when a result reads the anchor through a broadcast: one copy per broadcast
       * coordinate, rock-regularize's R3) */
      CHECK(ews >= expect_rock_ew, "%s #%d: gemm kernel has %d rock.elementwise ops, expected at least %d", what, seed,
            ews, expect_rock_ew);
      /* after regularization every elementwise reads the anchor's result (an intermediate
       * or an output buffer) directly: no rock.transform between them */
      int n;
      kl_op **ops = kl_collect_ops(gk, &n);
      bool direct = true;
      for (int i = 0; i < n; i++)
        if (!strcmp(ops[i]->name, "rock.elementwise")) {
          bool any = false;
          for (int j = 0; j + 1 < ops[i]->nopnds; j++) {
            kl_op *d = ops[i]->opnds[j].value->def;
            any = any || !d || !strcmp(d->name, "rock.alloc");
          }
          direct = direct && any;
        }
      free(ops);
      CHECK(direct, "%s #%d: an epilogue does not read the GEMM result directly", what, seed);
      stat_epilogue++;
    }
    /* rock-regularize moved the views between the anchor and the epilogue (transpose /
     * reshape) onto the epilogue's other operands: its output is written through them */
    if (gk) {
      int n;
      kl_op **ops = kl_collect_ops(gk, &n);
      for (int i = 0; i < n; i++)
        if (!strcmp(ops[i]->name, "rock.elementwise")) {
          kl_op *d = ops[i]->opnds[ops[i]->nopnds - 1].value->def;
          if (d && !strcmp(d->name, "rock.transform")) stat_inverted++;
        }
      free(ops);
    }
  }
  if (ok) {
    ok = run_pipeline(b->module, "rock-conv-to-gemm") == KL_OK;
    CHECK(ok, "%s #%d: rock-conv-to-gemm failed", what, seed);
    CHECK(count_named(b->module, "rock.conv") == 0);
  }
  if (ok) {
    interp I = { 0 };
    int nout = 0;
    ibuf **got = run_plan(&I, b->module, b->graph, np, ins, &nout);
    CHECK(!I.failed, "%s #%d: interpreter: %s", what, seed, I.msg);
    if (!I.failed) {
      CHECK(nout == nref);
      for (int i = 0; i < nout && i < nref; i++) {
        int at;
        double e = max_rel_err(got[i], ref[i], &at);
        CHECK(e <= tol, "%s #%d: output %d differs: rel err %g at flat %d", what, seed, i, e, at);
        if (e > tol) {
          dump(b->module, "numeric mismatch");
          ok = false;
        }
      }
    }
    for (int i = 0; i < nout; i++) ibuf_free(got[i]);
    free(got);
    /* allocs made by the interpreter (rock.alloc) are the only buffers it owns */
    for (int i = 0; i < I.n; i++)
      if (I.keys[i]->def && !strcmp(I.keys[i]->def->name, "rock.alloc")) ibuf_free(I.bufs[i]);
    free(I.keys);
    free(I.bufs);
  }
  for (int i = 0; i < nref; i++) kl_tensor_release(ref[i]);
  free(ref);
  for (int i = 0; i < np; i++) kl_tensor_release(ins[i].tensor);
  return ok;
}

static gb gb_new(kl_ctx *ctx, const char *name) {
  gb b = { .ctx = ctx };
  b.module = kl_module_create(ctx, KL_LOC_UNKNOWN);
  b.graph = kl_graph_create(ctx, b.module, name, KL_LOC_UNKNOWN);
  return b;
}

/* ------------------------------------------------------------------ 1. conv -> gemm numerics */
static int conv_numeric_one(int seed) {
  kl_ctx *ctx = kl_test_ctx();
  int G = coin(70) ? 1 : rint_(2, 3);
  int64_t N = rint_(1, 3), Cg = rint_(1, 4), Kg = rint_(1, 4), C = Cg * G, K = Kg * G;
  int64_t Y = rint_(1, 3), X = rint_(1, 3), sh = rint_(1, 3), sw = rint_(1, 3), dh = rint_(1, 2), dw = rint_(1, 2);
  int64_t pt = rint_(0, 2), pb = rint_(0, 2), pl = rint_(0, 2), pr = rint_(0, 2);
  int64_t Hi = rint_(1, 9), Wi = rint_(1, 9);
  int64_t eh = Hi + pt + pb - dh * (Y - 1) - 1, ew = Wi + pl + pr - dw * (X - 1) - 1;
  if (eh < 0 || ew < 0) {
    kl_ctx_destroy(ctx);
    return 0;
  }
  int64_t Ho = eh / sh + 1, Wo = ew / sw + 1;
  bool nhwc = coin(50), kyxc = coin(50), nhwk = coin(50);
  int64_t ish[4] = { N, C, Hi, Wi }, fsh[4] = { K, Cg, Y, X }, osh[4] = { N, K, Ho, Wo };
  int64_t ist[4], fst[4], ost[4];
  const int cl[4] = { 0, 2, 3, 1 }, rm[4] = { 0, 1, 2, 3 };
  kl_strides_from_perm(4, ish, nhwc ? cl : rm, ist);
  kl_strides_from_perm(4, fsh, kyxc ? cl : rm, fst);
  kl_strides_from_perm(4, osh, nhwk ? cl : rm, ost);
  const kl_type *f32 = kl_type_f32(ctx);
  const kl_type *bt[3] = { kl_type_buffer(ctx, f32, 4, ish, ist, KL_SPACE_GLOBAL),
                           kl_type_buffer(ctx, f32, 4, fsh, fst, KL_SPACE_GLOBAL),
                           kl_type_buffer(ctx, f32, 4, osh, ost, KL_SPACE_GLOBAL) };
  kl_op *m = kl_module_create(ctx, KL_LOC_UNKNOWN);
  kl_named_attr fa[] = { { "kernel", kl_attr_unit(ctx) }, { "sym_name", kl_attr_str(ctx, "conv") } };
  kl_op *fn = kl_op_create(ctx, "func.func", KL_LOC_UNKNOWN, 0, NULL, 0, NULL, 2, fa, 1);
  kl_block *body = kl_block_create(ctx);
  kl_region_push_block(&fn->regions[0], body);
  kl_block_push_op(kl_module_body(m), fn);
  kl_value *args[3];
  for (int i = 0; i < 3; i++) args[i] = kl_block_add_arg(ctx, body, bt[i]);
  kl_named_attr ca[] = { { "stride", kl_attr_i64_array(ctx, 2, (int64_t[]){ sh, sw }) },
                         { "padding", kl_attr_i64_array(ctx, 4, (int64_t[]){ pt, pb, pl, pr }) },
                         { "dilation", kl_attr_i64_array(ctx, 2, (int64_t[]){ dh, dw }) },
                         { "groups", kl_attr_int(ctx, G) } };
  kl_block_push_op(body, kl_op_create(ctx, "rock.conv", KL_LOC_UNKNOWN, 3, args, 0, NULL, 4, ca, 0));
  kl_block_push_op(body, kl_op_create(ctx, "func.return", KL_LOC_UNKNOWN, 0, NULL, 0, NULL, 0, NULL, 0));
  int bad = 0;
  if (kl_verify(m) != KL_OK || run_pipeline(m, "rock-conv-to-gemm") != KL_OK) {
    dump(m, "conv-to-gemm failed");
    CHECK(0);
    kl_ctx_destroy(ctx);
    return 1;
  }
  CHECK(count_named(m, "rock.conv") == 0 && count_named(m, "rock.gemm") == 1);
  kl_op *gemm = NULL;
  for (kl_op *op = body->first; op; op = op->next)
    if (!strcmp(op->name, "rock.gemm")) gemm = op;
  /* data */
  char err[256];
  kl_tensor *tin = kl_tensor_rand(KL_DT_F32, 4, ish, ist, 7 + (uint64_t)seed, KL_DIST_NORMAL, err, sizeof err);
  kl_tensor *tf = kl_tensor_rand(KL_DT_F32, 4, fsh, fst, 9000 + (uint64_t)seed, KL_DIST_NORMAL, err, sizeof err);
  kl_tensor *ref = NULL;
  kl_conv2d_params p = { { sh, sw }, { pt, pb, pl, pr }, { dh, dw }, G };
  CHECK(kl_ref_conv2d(tin, tf, &p, KL_DT_F64, &ref, err, sizeof err) == 0);
  kl_value *base[3];
  kl_view *v[3];
  for (int i = 0; i < 3; i++) v[i] = composed_view(gemm->opnds[i].value, &base[i]);
  CHECK(v[0] && v[1] && v[2] && base[0] == args[1] && base[1] == args[0] && base[2] == args[2]);
  int64_t Gd = gemm->opnds[0].value->type->shape[0], Kd = gemm->opnds[0].value->type->shape[1];
  int64_t Md = gemm->opnds[0].value->type->shape[2], Nd = gemm->opnds[1].value->type->shape[2];
  CHECK(Gd == G && Kd == Cg * Y * X && Md == Kg && Nd == N * Ho * Wo);
  int64_t osz = span_of(bt[2]);
  double *out = kl_xcalloc((size_t)osz, sizeof(double));
  int *hits = kl_xcalloc((size_t)osz, sizeof(int));
  const float *di = (const float *)tin->data + tin->offset, *df = (const float *)tf->data + tf->offset;
  for (int64_t g = 0; g < Gd && v[2]; g++)
    for (int64_t mm = 0; mm < Md; mm++)
      for (int64_t nn = 0; nn < Nd; nn++) {
        double acc = 0;
        for (int64_t k = 0; k < Kd; k++) {
          bool va, vb;
          int64_t aa = kl_view_eval_addr(v[0], (int64_t[]){ g, k, mm }, fst, &va);
          int64_t ab = kl_view_eval_addr(v[1], (int64_t[]){ g, k, nn }, ist, &vb);
          if (va && vb) acc += (double)df[aa] * (double)di[ab];
          if (!va) bad++; /* the filter view is never padded */
        }
        bool vc;
        int64_t ac = kl_view_eval_addr(v[2], (int64_t[]){ g, mm, nn }, ost, &vc);
        if (!vc || ac < 0 || ac >= osz) {
          bad++;
          continue;
        }
        out[ac] = acc;
        hits[ac]++;
      }
  double worst = 0;
  int64_t u[4] = { 0 };
  do {
    int64_t a = u[0] * ost[0] + u[1] * ost[1] + u[2] * ost[2] + u[3] * ost[3];
    if (hits[a] != 1) bad++;
    double w = kl_tensor_get(ref, u), e = fabs(out[a] - w) / (fabs(w) > 1 ? fabs(w) : 1);
    if (e > worst) worst = e;
  } while (next_idx(4, osh, u));
  CHECK(bad == 0 && worst < 1e-9,
        "conv #%d N%lld C%lld K%lld G%d %lldx%lld Y%lld X%lld s%lld,%lld d%lld,%lld p%lld,%lld,%lld,%lld %s/%s/%s: "
        "%d bad coordinates, max rel err %g",
        seed, (long long)N, (long long)C, (long long)K, G, (long long)Hi, (long long)Wi, (long long)Y, (long long)X,
        (long long)sh, (long long)sw, (long long)dh, (long long)dw, (long long)pt, (long long)pb, (long long)pl,
        (long long)pr, nhwc ? "NHWC" : "NCHW", kyxc ? "KYXC" : "KCYX", nhwk ? "NHWK" : "NKHW", bad, worst);
  free(out);
  free(hits);
  for (int i = 0; i < 3; i++) kl_view_free(v[i]);
  kl_tensor_release(tin);
  kl_tensor_release(tf);
  kl_tensor_release(ref);
  kl_ctx_destroy(ctx);
  return 1;
}

static void test_conv_numerics(void) {
  int done = 0, fails0 = failures;
  for (int seed = 0; done < 120 && seed < 1000; seed++) done += conv_numeric_one(seed);
  CHECK(done >= 50);
  printf("rock-conv-to-gemm numerics: %d random convolutions (%s)\n", done, failures == fails0 ? "ok" : "FAILED");
}

/* ------------------------------------------------------------------ 2. random graphs */
typedef struct cur {
  kl_value *v;
  int rank;
  int64_t shape[8];
} cur;
static void cur_set(cur *c, kl_value *v) {
  c->v = v;
  if (!v) return;
  c->rank = v->type->rank;
  for (int i = 0; i < c->rank; i++) c->shape[i] = v->type->shape[i];
}

/* Random epilogue on the anchor result; returns the number of element-wise ops that
 * should join the anchor's group. extra[] receives additional outputs. */
static int random_epilogue(gb *b, cur *c, const kl_type *elem, kl_value **extra, int *nextra, bool *f16_used) {
  int steps = rint_(0, 5), expect = 0;
  bool alive = true, bcast = false; /* bcast: the chain went through a broadcast (no view or broadcast may follow) */
  for (int s = 0; s < steps && !b->failed; s++) {
    int kind = rint_(0, 12);
    kl_value *nv = NULL;
    bool is_ew = true, breaks = false;
    const kl_type *et = c->v->type->elem;
    if (!kl_type_is_float(et) && (kind == 3 || kind == 4)) kind = coin(50) ? 12 : 7; /* float-only activations */
    switch (kind) {
      case 0: { /* bias broadcast along dim 1 (conv) or the last dim (dot) */
        int64_t sh[8];
        int r = c->rank;
        for (int i = 0; i < r; i++) sh[i] = 1;
        int d = c->rank == 4 ? 1 : c->rank - 1;
        sh[d] = c->shape[d];
        int drop = coin(50) ? d : 0; /* sometimes with fewer leading dims */
        kl_value *bias = rparam(b, et, r - drop, sh + drop);
        nv = coin(50) ? g2(b, "add", c->v, bias) : g2(b, "add", bias, c->v);
        break;
      }
      case 1: nv = g2(b, coin(50) ? "add" : "max", c->v, rparam(b, et, c->rank, c->shape)); break;
      case 2: nv = g1(b, "relu", c->v); break;
      case 3: nv = g1(b, "sigmoid", c->v); break;
      case 4: nv = g1(b, "tanh", c->v); break;
      case 5: {
        kl_named_attr a[] = { { "min", kl_attr_float(b->ctx, -2.5) }, { "max", kl_attr_float(b->ctx, 3.75) } };
        nv = gop(b, "clip", 1, &c->v, 2, a, NULL);
        break;
      }
      case 6: nv = g2(b, "mul", c->v, gconst_scalar(b, kl_type_is_float(et) ? 0.5 : 3, et)); break;
      case 7: /* cast to f16 and back (or just to f16); integers to f32 */
        if (et->kind == KL_TY_F32) {
          nv = gconvert(b, c->v, KL_TY_F16);
          *f16_used = true;
        } else
          nv = gconvert(b, c->v, KL_TY_F32);
        break;
      case 8: { /* an invertible view in the chain: transpose or reshape */
        is_ew = false;
        if (coin(50) && c->rank >= 2) {
          int64_t perm[8];
          for (int i = 0; i < c->rank; i++) perm[i] = i;
          for (int i = c->rank - 1; i > 0; i--) {
            int j = rint_(0, i);
            int64_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
          }
          nv = gperm(b, c->v, c->rank, perm);
        } else {
          int64_t sh[8];
          int r = 0;
          if (c->rank >= 2 && coin(50)) { /* merge the last two dims */
            for (int i = 0; i + 2 < c->rank; i++) sh[r++] = c->shape[i];
            sh[r++] = c->shape[c->rank - 2] * c->shape[c->rank - 1];
          } else { /* add a leading unit dim */
            sh[r++] = 1;
            for (int i = 0; i < c->rank; i++) sh[r++] = c->shape[i];
          }
          nv = greshape(b, c->v, r, sh);
        }
        break;
      }
      case 9: { /* a shared intermediate: the current value is also a graph output (a
                 * second result of the kernel; the chain goes on) */
        if (*nextra < 4) extra[(*nextra)++] = c->v;
        nv = g1(b, "relu", c->v);
        break;
      }
      case 10: { /* a slice (its partial inverse is a pad): the chain goes on */
        int64_t be[8], en[8];
        bool any = false;
        for (int i = 0; i < c->rank; i++) {
          be[i] = 0;
          en[i] = c->shape[i];
          if (c->shape[i] > 1 && !any) {
            be[i] = 1;
            any = true;
          }
        }
        if (!any) {
          s--;
          continue;
        }
        kl_named_attr a[] = { { "begin", kl_attr_i64_array(b->ctx, c->rank, be) },
                              { "end", kl_attr_i64_array(b->ctx, c->rank, en) } };
        kl_value *sl = gop(b, "slice", 1, &c->v, 2, a, NULL);
        nv = g1(b, "abs", sl);
        break;
      }
      case 11: { /* the chain value gets broadcast by its user (2 copies: rock-regularize
                  * splits the reader, the chain goes on) */
        int64_t sh[8];
        sh[0] = 2;
        for (int i = 0; i < c->rank; i++) sh[i + 1] = c->shape[i];
        if (c->rank + 1 > 6) {
          s--;
          continue;
        }
        nv = g2(b, "sub", c->v, rparam(b, et, c->rank + 1, sh));
        break;
      }
      default: nv = g1(b, "neg", c->v); break;
    }
    if (!nv) return -1;
    if (bcast && (kind == 8 || kind == 10 || kind == 11)) breaks = true; /* a view over a broadcast ends the chain */
    if (kind == 11) bcast = true;
    if (breaks) alive = false;
    if (alive && is_ew) expect++;
    cur_set(c, nv);
  }
  return expect;
}

static void random_anchor_graph(int seed, int *ran) {
  kl_ctx *ctx = kl_test_ctx();
  gb b = gb_new(ctx, "g");
  bool f16 = coin(15), i32 = !f16 && coin(15);
  const kl_type *elem = kl_type_scalar(ctx, f16 ? KL_TY_F16 : i32 ? KL_TY_I32 : KL_TY_F32);
  cur c = { 0 };
  const char *what;
  if (coin(50)) {
    what = "conv";
    int G = coin(70) ? 1 : rint_(2, 3);
    int64_t N = rint_(1, 2), Cg = rint_(1, 3), Kg = rint_(1, 3), Hi = rint_(1, 7), Wi = rint_(1, 7), Y = rint_(1, 3),
            X = rint_(1, 3);
    int64_t st[2] = { rint_(1, 2), rint_(1, 2) }, dl[2] = { rint_(1, 2), rint_(1, 2) };
    int64_t pd[4] = { rint_(0, 1), rint_(0, 1), rint_(0, 1), rint_(0, 1) };
    if (Hi + pd[0] + pd[1] - dl[0] * (Y - 1) - 1 < 0 || Wi + pd[2] + pd[3] - dl[1] * (X - 1) - 1 < 0) {
      Y = 1;
      X = 1;
    }
    int64_t xs[4] = { N, Cg * G, Hi, Wi }, ws[4] = { Kg * G, Cg, Y, X };
    kl_value *x;
    if (coin(25)) { /* input given NHWC-shaped and transposed by a view */
      int64_t ps[4] = { N, Hi, Wi, Cg * G };
      x = gperm(&b, rparam(&b, elem, 4, ps), 4, (int64_t[]){ 0, 3, 1, 2 });
    } else {
      int64_t s4[4];
      kl_strides_from_perm(4, xs, coin(50) ? (const int[]){ 0, 2, 3, 1 } : (const int[]){ 0, 1, 2, 3 }, s4);
      x = gparam(&b, "x", kl_type_tensor(ctx, elem, 4, xs, s4));
    }
    int64_t s4[4];
    kl_strides_from_perm(4, ws, coin(50) ? (const int[]){ 0, 2, 3, 1 } : (const int[]){ 0, 1, 2, 3 }, s4);
    kl_value *w = gparam(&b, "w", kl_type_tensor(ctx, elem, 4, ws, s4));
    kl_named_attr ca[] = { { "stride", kl_attr_i64_array(ctx, 2, st) },
                           { "padding", kl_attr_i64_array(ctx, 4, pd) },
                           { "dilation", kl_attr_i64_array(ctx, 2, dl) },
                           { "groups", kl_attr_int(ctx, G) } };
    kl_value *xw[] = { x, w };
    cur_set(&c, gop(&b, "conv", 2, xw, 4, ca, NULL));
  } else {
    what = "dot";
    int64_t M = rint_(1, 9), N = rint_(1, 9), K = rint_(1, 9);
    int nb = rint_(0, 2);
    int64_t batch[2] = { rint_(1, 3), rint_(1, 3) };
    bool ta = coin(50), tb = coin(50);
    int ra = nb - (coin(30) ? rint_(0, nb) : 0), rb = nb - (coin(30) ? rint_(0, nb) : 0);
    int64_t as[4], bs[4];
    for (int i = 0; i < ra; i++) as[i] = coin(20) ? 1 : batch[nb - ra + i];
    for (int i = 0; i < rb; i++) bs[i] = coin(20) ? 1 : batch[nb - rb + i];
    as[ra] = ta ? K : M;
    as[ra + 1] = ta ? M : K;
    bs[rb] = tb ? N : K;
    bs[rb + 1] = tb ? K : N;
    kl_value *a;
    if (coin(30)) { /* a given transposed, the transpose absorbed as a view */
      int64_t ps[4], perm[4];
      for (int i = 0; i < ra; i++) {
        ps[i] = as[i];
        perm[i] = i;
      }
      ps[ra] = as[ra + 1];
      ps[ra + 1] = as[ra];
      perm[ra] = ra + 1;
      perm[ra + 1] = ra;
      a = gperm(&b, rparam(&b, elem, ra + 2, ps), ra + 2, perm);
    } else {
      a = rparam(&b, elem, ra + 2, as);
    }
    kl_value *bb = rparam(&b, elem, rb + 2, bs);
    kl_named_attr da[] = { { "transpose_a", kl_attr_bool(ctx, ta) }, { "transpose_b", kl_attr_bool(ctx, tb) } };
    kl_value *ab[] = { a, bb };
    cur_set(&c, gop(&b, "dot", 2, ab, 2, da, NULL));
  }
  kl_value *outs[8];
  int nextra = 0;
  bool f16_used = f16;
  int expect = c.v ? random_epilogue(&b, &c, elem, outs + 1, &nextra, &f16_used) : -1;
  if (expect < 0) b.failed = true;
  outs[0] = c.v;
  if (!b.failed) {
    stat_f16 += f16_used;
    check_graph(&b, outs, 1 + nextra, expect, f16_used ? 2e-2 : 1e-5, what, seed);
    (*ran)++;
  }
  kl_ctx_destroy(ctx);
}

/* element-wise-only graphs with views, reductions, softmax, concat, copies */
static void random_misc_graph(int seed, int *ran) {
  kl_ctx *ctx = kl_test_ctx();
  gb b = gb_new(ctx, "m");
  bool ints = coin(25);
  const kl_type *f32 = ints ? kl_type_i32(ctx) : kl_type_f32(ctx); /* the graph's element type */
  int r = rint_(1, 4);
  int64_t sh[4];
  for (int i = 0; i < r; i++) sh[i] = rint_(1, 5);
  kl_value *pool[16];
  int np = 0;
  pool[np++] = rparam(&b, f32, r, sh);
  pool[np++] = rparam(&b, f32, r, sh);
  int nops = rint_(1, 6);
  kl_value *outs[8];
  int nouts = 0;
  const char *what = "elementwise";
  for (int i = 0; i < nops && !b.failed; i++) {
    kl_value *x = pool[rint_(0, np - 1)], *y = pool[rint_(0, np - 1)], *nv = NULL;
    int k = rint_(0, 9);
    if (k <= 2) {
      static const char *const bins[] = { "add", "sub", "mul", "max", "min", "div", "pow" };
      nv = g2(&b, bins[rint_(0, 6)], x, y);
    } else if (k <= 4) {
      static const char *const uns[] = { "relu", "neg", "abs", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt" };
      nv = g1(&b, uns[rint_(0, ints ? 2 : 8)], x);
    } else if (k == 5 && r >= 2) { /* transpose of a transposed pair keeps the shape: x + transpose(transpose(y)) */
      int64_t perm[4];
      for (int d = 0; d < r; d++) perm[d] = r - 1 - d;
      nv = g2(&b, "add", x, gperm(&b, gperm(&b, y, r, perm), r, perm));
    } else if (k == 6) { /* a broadcast operand: a slice of y along dim 0 to size 1 */
      int64_t be[4], en[4];
      for (int d = 0; d < r; d++) {
        be[d] = 0;
        en[d] = sh[d];
      }
      be[0] = sh[0] - 1;
      kl_named_attr a[] = { { "begin", kl_attr_i64_array(ctx, r, be) }, { "end", kl_attr_i64_array(ctx, r, en) } };
      nv = g2(&b, "mul", x, gop(&b, "slice", 1, &y, 2, a, NULL));

    } else if (k == 7) { /* a stepped slice broadcast back */
      int64_t be[4], en[4], stp[4];
      for (int d = 0; d < r; d++) {
        be[d] = 0;
        en[d] = sh[d];
        stp[d] = 1;
      }
      stp[r - 1] = 2;
      en[r - 1] = sh[r - 1] == 1 ? 1 : 2; /* one element with step 2 */
      be[r - 1] = 0;
      if (sh[r - 1] >= 3) {
        be[r - 1] = 1;
        en[r - 1] = sh[r - 1];
      }
      kl_named_attr a[] = { { "begin", kl_attr_i64_array(ctx, r, be) },
                            { "end", kl_attr_i64_array(ctx, r, en) },
                            { "step", kl_attr_i64_array(ctx, r, stp) } };
      kl_value *s = gop(&b, "slice", 1, &y, 3, a, NULL);
      if (s && s->type->shape[r - 1] != 1) { /* reduce it to one column with a max so it broadcasts */
        kl_named_attr ra[] = { { "axes", kl_attr_i64_array(ctx, 1, (int64_t[]){ r - 1 }) },
                               { "keepdims", kl_attr_bool(ctx, true) } };
        s = gop(&b, "reduce_max", 1, &s, 2, ra, NULL);
      }
      nv = g2(&b, "add", x, s);
    } else if (k == 8) { /* where with a comparison-free condition: the sign of y */
      kl_value *v3[] = { y, x, g1(&b, "neg", x) };
      nv = gop(&b, "where", 3, v3, 0, NULL, NULL);
    } else if (coin(50)) {
      kl_named_attr a[] = { { "min", kl_attr_float(ctx, -1.25) }, { "max", kl_attr_float(ctx, 2.5) } };
      nv = gop(&b, "clip", 1, &x, 2, a, NULL);
    } else { /* a round trip through another element type */
      kl_type_kind other = ints ? (coin(50) ? KL_TY_F32 : KL_TY_I8) : (coin(50) ? KL_TY_I32 : KL_TY_F16);
      nv = gconvert(&b, gconvert(&b, x, other), f32->kind);
    }
    if (nv && np < 16) pool[np++] = nv;
  }
  kl_value *last = pool[np - 1];
  int tail = rint_(0, 6);
  if (tail == 1) { /* a reduction, then element-wise */
    what = "reduce";
    int64_t axes[4];
    int na = 0;
    for (int d = 0; d < r; d++)
      if (coin(50)) axes[na++] = coin(50) ? d : d - r;
    static const char *const reds[] = { "reduce_sum", "reduce_max", "reduce_mean" };
    kl_named_attr a[] = { { "axes", kl_attr_i64_array(ctx, na, axes) }, { "keepdims", kl_attr_bool(ctx, coin(50)) } };
    last = gop(&b, reds[rint_(0, 2)], 1, &last, 2, a, NULL);
    if (coin(50)) last = g1(&b, ints ? "neg" : "sigmoid", last);
  } else if (tail == 2) {
    what = "softmax";
    if (ints) last = gconvert(&b, last, KL_TY_F32);
    kl_named_attr a = { "axis", kl_attr_int(ctx, rint_(-r, r - 1)) };
    last = gop(&b, "softmax", 1, &last, 1, &a, NULL);
    if (coin(50)) last = g2(&b, "mul", last, ints ? gconvert(&b, pool[0], KL_TY_F32) : pool[0]);
  } else if (tail == 3) {
    what = "concat";
    int ax = rint_(0, r - 1);
    kl_value *xs[3] = { last, pool[0], pool[rint_(0, np - 1)] };
    kl_named_attr a = { "axis", kl_attr_int(ctx, ax) };
    last = gop(&b, "concat", 3, xs, 1, &a, NULL);
  } else if (tail == 4) { /* outputs that are a param and a view of one: copies */
    what = "copy";
    outs[nouts++] = pool[1];
    if (r >= 2) {
      int64_t perm[4];
      for (int d = 0; d < r; d++) perm[d] = (d + 1) % r;
      outs[nouts++] = gperm(&b, pool[0], r, perm);
    }
  } else if (tail == 6 && !ints) { /* normalization: the row read with its reduction broadcast back (row_out) */
    what = "normalize";
    int64_t axes[4];
    int na = 0, lead = rint_(1, r);
    bool keep = coin(70);
    for (int d = 0; d < r; d++)
      if (keep ? coin(50) : d < lead) axes[na++] = d;
    if (!na) axes[na++] = r - 1;
    static const char *const reds[] = { "reduce_sum", "reduce_max", "reduce_mean" };
    kl_named_attr a[] = { { "axes", kl_attr_i64_array(ctx, na, axes) }, { "keepdims", kl_attr_bool(ctx, keep) } };
    kl_value *m = gop(&b, reds[rint_(0, 2)], 1, &last, 2, a, NULL);
    if (coin(50)) m = g1(&b, "sigmoid", m);
    last = g2(&b, coin(50) ? "sub" : "mul", last, m);
  } else if (tail == 5 && r >= 2) { /* the output is a view of an element-wise result (sometimes also read) */
    what = "view-output";
    int64_t perm[4];
    for (int d = 0; d < r; d++) perm[d] = r - 1 - d;
    last = gperm(&b, g1(&b, ints ? "abs" : "tanh", last), r, perm);
    if (coin(50)) outs[nouts++] = g1(&b, "neg", last);
  }
  outs[nouts++] = last;
  if (!b.failed) {
    check_graph(&b, outs, nouts, -1, 1e-5, what, seed);
    (*ran)++;
  }
  kl_ctx_destroy(ctx);
}

static void test_random_graphs(void) {
  int fails0 = failures, na = 0, nm = 0;
  for (int seed = 0; seed < 300; seed++) random_anchor_graph(seed, &na);
  for (int seed = 0; seed < 250; seed++) random_misc_graph(seed, &nm);
  CHECK(na >= 290 && nm >= 240);
  printf("random graphs: %d conv/dot (%d with an epilogue, %d writing through moved views, %d with f16), "
         "%d element-wise/reduce/softmax/concat/copy (%s)\n",
         na, stat_epilogue, stat_inverted, stat_f16, nm, failures == fails0 ? "ok" : "FAILED");
}

/* ------------------------------------------------------------------ 3. hand-written cases */
static void test_shared_and_views(void) {
  kl_ctx *ctx = kl_test_ctx();
  gb b = gb_new(ctx, "s");
  const kl_type *f32 = kl_type_f32(ctx);
  kl_value *a = gparam(&b, "a", kl_type_tensor(ctx, f32, 2, (int64_t[]){ 4, 3 }, NULL));
  kl_value *w = gparam(&b, "w", kl_type_tensor(ctx, f32, 2, (int64_t[]){ 3, 5 }, NULL));
  kl_value *r = gparam(&b, "r", kl_type_tensor(ctx, f32, 2, (int64_t[]){ 4, 5 }, NULL));
  kl_value *t = gperm(&b, r, 2, (int64_t[]){ 1, 0 }); /* used by two groups: duplicated */
  kl_value *d = g2(&b, "dot", a, w);
  kl_value *e = g2(&b, "add", d, r); /* shared: output and used below */
  kl_value *f = g1(&b, "relu", e);
  kl_value *h = g2(&b, "mul", g1(&b, "exp", gperm(&b, f, 2, (int64_t[]){ 1, 0 })), t);
  kl_value *outs[] = { e, h, t };
  check_graph(&b, outs, 3, 4, 1e-5, "shared", 0);
  /* structure: 2 launches (gemm+add+relu+exp+mul with two results, copy of t) */
  CHECK(count_named(b.graph, "graph.launch") == 2);
  int n;
  CHECK(find_kind(b.module, "elementwise", &n) && n == 1);
  kl_ctx_destroy(ctx);

  /* a returned view that is also read by another kernel: what is below the view stays
   * available to that kernel (the relu is its own kernel) */
  ctx = kl_test_ctx();
  b = gb_new(ctx, "rv");
  f32 = kl_type_f32(ctx);
  kl_value *p = gparam(&b, "p", kl_type_tensor(ctx, f32, 2, (int64_t[]){ 2, 3 }, NULL));
  kl_value *rt = gperm(&b, g1(&b, "relu", p), 2, (int64_t[]){ 1, 0 });
  kl_value *outs2[] = { rt, g1(&b, "exp", rt) };
  check_graph(&b, outs2, 2, -1, 1e-5, "returned-view", 0);
  CHECK(count_named(b.graph, "graph.launch") == 3);
  kl_ctx_destroy(ctx);

  /* unknown ops are an error naming the op, not a crash */
  ctx = kl_test_ctx();
  b = gb_new(ctx, "u");
  f32 = kl_type_f32(ctx);
  kl_value *x = gparam(&b, "x", kl_type_tensor(ctx, f32, 1, (int64_t[]){ 4 }, NULL));
  const kl_type *tt = x->type;
  kl_op *bad = kl_op_create(ctx, "graph.frobnicate", KL_LOC_UNKNOWN, 1, &x, 1, &tt, 0, NULL, 0);
  kl_op_insert_before(kl_graph_return(b.graph), bad);
  kl_value *bo = kl_op_result(bad, 0);
  kl_graph_set_outputs(b.graph, 1, &bo, KL_LOC_UNKNOWN);
  CHECK(run_pipeline(b.module, "graph-partition") == KL_ERR);
  CHECK(diag_has(ctx, "graph.frobnicate"));
  kl_ctx_destroy(ctx);
  printf("shared intermediates, duplicated views, copies, errors ok\n");
}

int main(void) {
  test_conv_numerics();
  test_shared_and_views();
  test_random_graphs();
  return check_summary("test_partition");
}
