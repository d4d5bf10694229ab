/* lower_loops_host.c — host-target (CPU) specializations of rock-lower-loops, run on
 * kernels with block_size 1 before the generic patterns of rock_lower_loops.c.
 *
 * 1. Register-blocked GEMM micro-kernel. The blockwise K loop that
 *    rock-blockwise-to-threadwise leaves behind,
 *      scf.for %kk = 0 to KK step 1 {
 *        rock.threadwise_read_into(%srcA, %ra, e...)   ra, rb: private 1-D allocs used by
 *        rock.threadwise_read_into(%srcB, %rb, e...)   nothing but these ops (through
 *        rock.threadwise_gemm(%ra', %rb', %acc')       rock.transform views)
 *      }
 *    becomes one micro-kernel loop nest reading the operands straight from the read
 *    sources (the LDS tiles: BLIS's packed panels):
 *      for n0 (NR = NV*V columns) { for m0 (MR rows) {
 *        acc[i][j] = vector loads of the C tile           MR x NV vector<V x Tacc>
 *        scf.for %kk iter_args(acc) { for k' < K (unrolled) {
 *          b[j] = vector load of B(kk, k', n0 + j*V)      (converted to Tacc)
 *          a[i] = vector.broadcast(A(kk, k', m0 + i))     (scalar load, converted)
 *          acc[i][j] = math.fma(a[i], b[j], acc[i][j])    (ints: muli + addi) } }
 *        vector stores of acc } }
 *    with tails of fewer rows / narrower vectors (V/2, ..., 1) when the tile is not a
 *    multiple. Addressing: the element (kk, k', d) of each operand is mapped through the
 *    operand's transform chain, the read's view and the source's chain; the pass proves
 *    by evaluating every point that each source coordinate is affine in (kk, k', d) (and
 *    every C coordinate affine in (m, n) with unit stride along n), so the emitted index
 *    arithmetic is c0 + c1*kk + c2*k' + c3*d. The read's extra indices must be the loop
 *    variable, constants or rock.workitem_id (0: one thread per workgroup). When any
 *    condition fails (or B / C are not contiguous along n) the ops are left to the
 *    generic lowering.
 *    V, MR and NV come from the host SIMD model: the host CPU's vector width and register
 *    count (LLVMGetHostCPUFeatures: AVX-512 64 bytes x 32 registers -> MR 8, NV 2 of
 *    vector<16xf32>; AVX 32 x 16 -> 6 x 2 of vector<8xf32>; otherwise 16 x 16), or the
 *    pass options host-simd ("64x32": bytes x registers) and host-tile ("8x2": MR x NV).
 *
 * 2. Fused global -> LDS copies. rock.threadwise_read_into(%g, %p, e...) followed (in
 *    the same block) by rock.threadwise_write_all(%p, %lds, f...) of the same private
 *    1-D buffer %p that nothing else uses becomes one copy loop g -> lds (no private
 *    staging). The iteration index is split as iter = q * S + r along the factors of the
 *    copy views (so the views simplify to div/mod-free index arithmetic in q and r; the
 *    split is chosen by a small cost model: memory ops, shuffles and div/mods per
 *    element), and each side is accessed with the longest vectors its view allows (up to
 *    the SIMD width): when both sides are contiguous along r, vector loads and stores (a
 *    short r loop is unrolled with every load first, for memory-level parallelism); when
 *    the source is contiguous along r and the destination along q (a transposing copy,
 *    e.g. a row-major A tile into the [K, M] LDS layout), or the other way round, a
 *    block of t x t elements is loaded as t vectors and stored as t vectors after a
 *    register transpose (vector.shuffle, t log2 t shuffles). Each side whose view is
 *    free of div/mod and validity checks along q and r gets its base coordinate once per
 *    q iteration and constant offsets (only along r: one base per row). When the read's
 *    extra indices include the enclosing K loop's variable, every 64-byte line of the
 *    tile of the next K iteration is prefetched into L2 (rock.prefetch), so that it
 *    arrives during this iteration's micro-kernel. A 2-D LDS tile that only this copy
 *    writes and only scalar rock.loads read (the micro-kernel's broadcast operand; the
 *    micro-kernel runs first) may change its strides to the copy source's order when
 *    that saves the transpose: every access goes through coordinates and the strides.
 *
 * New loop-level ops (lowered by passes/lower_to_llvm.c):
 *   %v = "vector.broadcast"(%s) : (T) -> vector<N x T>
 *   %r = "math.fma"(%a, %b, %c) : (T, T, T) -> T       a*b + c (llvm.fmuladd: fused where
 *                                                        the target has FMA), T float or
 *                                                        vector of float
 *   %r = "vector.shuffle"(%x, %y) {mask = [i...]} : (vector<N x T>, vector<N x T>) ->
 *        vector<M x T>                                   LLVM shufflevector semantics
 *   "rock.prefetch"(%buf, %i...)                         a read hint for the element's line
 *                                                        (host: llvm.prefetch into L2; may
 *                                                        point past the buffer, never faults)
 * Contract: both entry points only rewrite what they fully match (every check is done
 * before anything is emitted) and leave the rest to the generic patterns; they never
 * fail. Views they build are freed before returning. */
#include "passes/lower_loops.h"
#include "core/dialect_builtin.h"
#include "core/dialect_rock.h"
#include "passes/perf_config.h"
#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the host SIMD model ---- */
static bool has_feat(const char *fs, const char *name) {
  size_t n = strlen(name);
  for (const char *p = fs; p && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n + 1 && p[0] == '+' && !strncmp(p + 1, name, n)) return true;
    p = e ? e + 1 : NULL;
  }
  return false;
}

void kl__ll_host_simd(int *bytes, int *regs) {
  static int cb, cr;
  if (!cb) {
    char *f = LLVMGetHostCPUFeatures();
    int b = 16, r = 16;
    if (f) {
      if (has_feat(f, "avx512f") && !strstr(f, "-evex512")) {
        b = 64;
        r = 32;
      } else if (has_feat(f, "avx")) {
        b = 32;
        r = 16;
      } else if (has_feat(f, "neon")) {
        b = 16;
        r = 32;
      }
      LLVMDisposeMessage(f);
    }
    cr = r;
    cb = b;
  }
  *bytes = cb;
  *regs = cr;
}

/* ---- affine fits by exhaustive evaluation ---- */
#define AF_VARS 3
typedef bool (*pt_eval)(void *ud, const int64_t *vars, int64_t *lower);
typedef struct {
  int rank, nv;
  int64_t c0[KL_VIEW_MAX_DIMS], c[AF_VARS][KL_VIEW_MAX_DIMS];
} affine;

/* Fits lower = c0 + sum_j c[j] * vars[j] over the box [0, ext) and checks every point
 * (and its validity). */
static bool affine_fit(pt_eval f, void *ud, int nv, const int64_t *ext, int rank, affine *a) {
  memset(a, 0, sizeof *a);
  a->rank = rank;
  a->nv = nv;
  int64_t v[AF_VARS] = { 0 }, lo[KL_VIEW_MAX_DIMS];
  if (!f(ud, v, a->c0)) return false;
  for (int j = 0; j < nv; j++) {
    if (ext[j] < 1) return false;
    if (ext[j] == 1) continue;
    memset(v, 0, sizeof v);
    v[j] = 1;
    if (!f(ud, v, lo)) return false;
    for (int r = 0; r < rank; r++) a->c[j][r] = lo[r] - a->c0[r];
  }
  memset(v, 0, sizeof v);
  for (;;) {
    if (!f(ud, v, lo)) return false;
    for (int r = 0; r < rank; r++) {
      int64_t want = a->c0[r];
      for (int j = 0; j < nv; j++) want += a->c[j][r] * v[j];
      if (lo[r] != want) return false;
    }
    int j = nv - 1;
    while (j >= 0 && ++v[j] == ext[j]) v[j--] = 0;
    if (j < 0) break;
  }
  return true;
}

/* Linear-address coefficient of var j (strides of buffer type t). */
static int64_t affine_lin(const affine *a, int j, const kl_type *t) {
  int64_t s = 0;
  for (int r = 0; r < a->rank; r++) s += a->c[j][r] * t->strides[r];
  return s;
}

/* Coordinates c0 + sum_j c[j] * (vals[j] + off[j]); vals[j] may be NULL (0). */
static void affine_emit(kl_ll *L, const affine *a, kl_value *const *vals, const int64_t *off, kl_value **out) {
  for (int r = 0; r < a->rank; r++) {
    int64_t k = a->c0[r];
    for (int j = 0; j < a->nv; j++) k += a->c[j][r] * off[j];
    kl_value *s = kl_ll_idx(L, k);
    for (int j = 0; j < a->nv; j++)
      if (vals[j] && a->c[j][r]) s = kl_emit_add(&L->e, kl_emit_muli(&L->e, vals[j], a->c[j][r]), s);
    out[r] = s;
  }
}

/* ---- small op builders ---- */
static kl_value *op_n(kl_ll *L, const char *name, int n, kl_value *const *o, const kl_type *rt, int na,
                      const kl_named_attr *a) {
  return kl_op_result(kl_rewriter_create(L->e.rw, name, L->e.loc, n, o, 1, &rt, na, a, 0), 0);
}
static kl_value *broadcast(kl_ll *L, kl_value *s, int64_t w) {
  if (w <= 1) return s;
  return op_n(L, "vector.broadcast", 1, &s, kl_type_vector(L->ctx, s->type, (int)w), 0, NULL);
}
/* acc + a * b (a, b, acc of one type) */
static kl_value *mul_add(kl_ll *L, kl_value *a, kl_value *b, kl_value *acc) {
  const kl_type *t = acc->type, *et = t->kind == KL_TY_VECTOR ? t->elem : t;
  if (kl_type_is_float(et)) {
    kl_value *o[3] = { a, b, acc };
    return op_n(L, "math.fma", 3, o, t, 0, NULL);
  }
  return kl_ll_op2(L, "arith.addi", acc, kl_ll_op2(L, "arith.muli", a, b, t), t);
}

/* ================= 1. the GEMM micro-kernel ================= */

typedef struct {
  const kl_view *regs; /* [K, D] -> private flat [n] */
  const kl_view *rd;   /* (extras..., iter) -> source coordinates */
  int nextra, kk_pos[16], nkk;
  int64_t extra[16];
} opnd_ev;
static bool opnd_f(void *ud, const int64_t *v, int64_t *lower) {
  opnd_ev *o = ud;
  int64_t up[2] = { v[1], v[2] }, p, u[17];
  if (!kl_view_eval(o->regs, up, &p)) return false;
  for (int i = 0; i < o->nextra; i++) u[i] = o->extra[i];
  for (int i = 0; i < o->nkk; i++) u[o->kk_pos[i]] = v[0];
  u[o->nextra] = p;
  return kl_view_eval(o->rd, u, lower);
}
typedef struct {
  const kl_view *v;
} view_ev;
static bool view_f(void *ud, const int64_t *v, int64_t *lower) { return kl_view_eval(((view_ev *)ud)->v, v, lower); }

typedef struct {
  kl_value *sa, *sb, *sc; /* underlying buffers of A, B, C */
  affine fa, fb, fc;      /* A, B: vars (kk, k', d); C: vars (m, n) */
  int64_t KK, K1, MT, NT;
  const kl_type *acc;
  int64_t V, MR, NV;
} mk;

typedef struct {
  mk *s;
  kl_value *m0, *n0;
  int rows, ncols;
  int64_t w[64], off[64];
} mk_inst;

static void mk_kbody(kl_ll *L, kl_value *kk, kl_value **carry, void *ud) {
  mk_inst *in = ud;
  mk *s = in->s;
  for (int64_t k1 = 0; k1 < s->K1; k1++) {
    kl_value *b[64], *co[KL_VIEW_MAX_DIMS];
    for (int j = 0; j < in->ncols; j++) {
      kl_value *vals[3] = { kk, NULL, in->n0 };
      int64_t off[3] = { 0, k1, in->off[j] };
      affine_emit(L, &s->fb, vals, off, co);
      b[j] = kl_ll_convert(L, kl_ll_load(L, s->sb, co, NULL, in->w[j]), s->acc);
    }
    for (int i = 0; i < in->rows; i++) {
      kl_value *vals[3] = { kk, NULL, in->m0 };
      int64_t off[3] = { 0, k1, i };
      affine_emit(L, &s->fa, vals, off, co);
      kl_value *a = kl_ll_convert(L, kl_ll_load(L, s->sa, co, NULL, 1), s->acc);
      kl_value *bc[8] = { 0 }; /* by log2 width */
      for (int j = 0; j < in->ncols; j++) {
        int lw = 0;
        while (((int64_t)1 << lw) < in->w[j]) lw++;
        if (!bc[lw]) bc[lw] = broadcast(L, a, in->w[j]);
        carry[i * in->ncols + j] = mul_add(L, bc[lw], b[j], carry[i * in->ncols + j]);
      }
    }
  }
}

static void c_coords(kl_ll *L, mk_inst *in, int i, int j, kl_value **co) {
  kl_value *vals[2] = { in->m0, in->n0 };
  int64_t off[2] = { i, in->off[j] };
  affine_emit(L, &in->s->fc, vals, off, co);
}

static void mk_tile(kl_ll *L, mk_inst *in) {
  mk *s = in->s;
  kl_value *acc[64], *co[KL_VIEW_MAX_DIMS];
  int n = in->rows * in->ncols;
  for (int i = 0; i < in->rows; i++)
    for (int j = 0; j < in->ncols; j++) {
      c_coords(L, in, i, j, co);
      acc[i * in->ncols + j] = kl_ll_load(L, s->sc, co, NULL, in->w[j]);
    }
  int64_t save = L->unroll;
  L->unroll = 0;
  kl_ll_for(L, kl_ll_idx(L, 0), kl_ll_idx(L, s->KK), 1, n, acc, mk_kbody, in);
  L->unroll = save;
  for (int i = 0; i < in->rows; i++)
    for (int j = 0; j < in->ncols; j++) {
      c_coords(L, in, i, j, co);
      kl_ll_store(L, acc[i * in->ncols + j], s->sc, co, NULL);
    }
}

/* Column groups: [0, nmain) in steps of NV vectors of V; the tail in vectors of V, then
 * of the binary digits of the rest. */
typedef struct {
  mk *s;
  mk_inst cols;
  int64_t mmain, mtail;
} mk_rows;
static void mk_mbody(kl_ll *L, kl_value *m0, kl_value **carry, void *ud) {
  mk_rows *r = ud;
  r->cols.m0 = m0;
  mk_tile(L, &r->cols);
}
static void mk_columns(kl_ll *L, mk_rows *r) {
  mk *s = r->s;
  int64_t save = L->unroll;
  L->unroll = 0;
  if (r->mmain) {
    r->cols.rows = (int)s->MR;
    kl_ll_for(L, kl_ll_idx(L, 0), kl_ll_idx(L, r->mmain), s->MR, 0, NULL, mk_mbody, r);
  }
  if (r->mtail) {
    r->cols.rows = (int)r->mtail;
    r->cols.m0 = kl_ll_idx(L, r->mmain);
    mk_tile(L, &r->cols);
  }
  L->unroll = save;
}
static void mk_nbody(kl_ll *L, kl_value *n0, kl_value **carry, void *ud) {
  mk_rows *r = ud;
  r->cols.n0 = n0;
  mk_columns(L, r);
}

static void emit_micro(kl_ll *L, mk *s) {
  mk_rows r = { .s = s };
  r.cols.s = s;
  r.mmain = s->MT / s->MR * s->MR;
  r.mtail = s->MT - r.mmain;
  int64_t nr = s->NV * s->V, nmain = s->NT / nr * nr;
  if (nmain) {
    r.cols.ncols = (int)s->NV;
    for (int j = 0; j < s->NV; j++) {
      r.cols.w[j] = s->V;
      r.cols.off[j] = j * s->V;
    }
    kl_ll_for(L, kl_ll_idx(L, 0), kl_ll_idx(L, nmain), nr, 0, NULL, mk_nbody, &r);
  }
  int64_t rest = s->NT - nmain, off = 0;
  if (rest) {
    int nc = 0;
    while (rest - off >= s->V) {
      r.cols.w[nc] = s->V;
      r.cols.off[nc++] = off;
      off += s->V;
    }
    for (int64_t w = s->V / 2; w >= 1; w /= 2)
      if (rest - off >= w) {
        r.cols.w[nc] = w;
        r.cols.off[nc++] = off;
        off += w;
      }
    r.cols.ncols = nc;
    r.cols.n0 = kl_ll_idx(L, nmain);
    mk_columns(L, &r);
  }
}

/* Every use of v (through rock.transform chains) is `reader` at operand 1 or `gemm`. */
static bool only_used_by(kl_value *v, kl_op *reader, kl_op *gemm) {
  for (kl_use *u = v->first_use; u; u = u->next) {
    if (u->user == reader && u->index == 1) continue;
    if (u->user == gemm) continue;
    if (!strcmp(u->user->name, "rock.transform") && only_used_by(&u->user->results[0], reader, gemm)) continue;
    return false;
  }
  return true;
}

typedef struct {
  kl_op *rd;
  kl_value *priv;
  kl_view *regs, *rv;
  kl_value *src;
  opnd_ev ev;
} opnd_match;
static void opnd_free(opnd_match *o) {
  kl_view_free(o->regs);
  kl_view_free(o->rv);
  o->regs = o->rv = NULL;
}

/* Operand `x` of gemm g inside loop `loop`: its private buffer, the read that fills it
 * each iteration and the evaluators. */
static bool match_operand(kl_op *g, kl_op *loop, kl_value *x, opnd_match *o) {
  memset(o, 0, sizeof *o);
  kl_op *chain[64];
  int nc = 0;
  kl_value *p = kl_rock_underlying(x, chain, &nc, 64);
  if (nc > 64 || !p->def || strcmp(p->def->name, "rock.alloc") || p->type->kind != KL_TY_BUFFER ||
      p->type->space != KL_SPACE_PRIVATE || p->type->rank != 1)
    return false;
  kl_block *body = loop->regions[0].first;
  for (kl_op *y = body->first; y; y = y->next)
    if (!strcmp(y->name, "rock.threadwise_read_into") && y->opnds[1].value == p) {
      o->rd = y;
      break;
    }
  if (!o->rd || !kl_ll_before(o->rd, g) || !only_used_by(p, o->rd, g)) return false;
  kl_op *rd = o->rd;
  const kl_view *w = kl_ll_op_view(rd);
  int nextra = rd->nopnds - 2;
  if (!w || nextra > 16 || kl_view_rank(w) != nextra + 1 || kl_view_size(w, nextra) != p->type->shape[0]) return false;
  o->ev.nextra = nextra;
  kl_value *iv = body->args[0];
  for (int i = 0; i < nextra; i++) {
    kl_value *e = rd->opnds[2 + i].value;
    int64_t c;
    if (e == iv)
      o->ev.kk_pos[o->ev.nkk++] = i;
    else if (kl_emit_const_of(e, &c))
      o->ev.extra[i] = c;
    else if (e->def && !strcmp(e->def->name, "rock.workitem_id"))
      o->ev.extra[i] = 0; /* block_size 1 */
    else
      return false;
  }
  char err[256];
  o->priv = p;
  o->regs = kl_ll_access_view(NULL, x, NULL, err, sizeof err);
  o->rv = o->regs ? kl_ll_access_view(w, rd->opnds[0].value, &o->src, err, sizeof err) : NULL;
  if (!o->rv || kl_view_rank(o->regs) != 2 || kl_view_lower_rank(o->regs) != 1) {
    opnd_free(o);
    return false;
  }
  o->ev.regs = o->regs;
  o->ev.rd = o->rv;
  return true;
}

static void pick_tile(const kl_ll_host_opts *ho, int elem_bytes, int64_t *V, int64_t *MR, int64_t *NV) {
  int bytes = ho->simd_bytes, regs = ho->simd_regs;
  if (bytes <= 0 || regs <= 0) kl__ll_host_simd(&bytes, &regs);
  *V = bytes / elem_bytes >= 1 ? bytes / elem_bytes : 1;
  if (ho->mr > 0 && ho->nv > 0) {
    *MR = ho->mr;
    *NV = ho->nv;
    return;
  }
  if (regs >= 32) {
    *MR = 8;
    *NV = 2;
  } else {
    *MR = 6;
    *NV = 2;
  }
}

/* Tries the micro-kernel for gemm g; true if it replaced g's loop. */
static bool fuse_gemm(kl_op *g, const kl_ll_host_opts *ho) {
  kl_op *loop = kl_op_parent_op(g);
  if (!loop || strcmp(loop->name, "scf.for") || loop->nopnds != 3 || loop->nresults) return false;
  int64_t lb, ub, st;
  if (!kl_emit_const_of(loop->opnds[0].value, &lb) || !kl_emit_const_of(loop->opnds[1].value, &ub) ||
      !kl_emit_const_of(loop->opnds[2].value, &st) || lb != 0 || st != 1 || ub < 1)
    return false;
  kl_block *body = loop->regions[0].first;
  if (!body || body != loop->regions[0].last || body->nargs != 1) return false;
  int nops = 0;
  for (kl_op *y = body->first; y; y = y->next) nops++;
  if (nops != 4) return false;
  const kl_type *ta = g->opnds[0].value->type, *tb = g->opnds[1].value->type, *tc = g->opnds[2].value->type;
  if (ta->rank != 2 || tb->rank != 2 || ta->shape[0] != tb->shape[0] || tc->kind != KL_TY_BUFFER) return false;
  int64_t K1 = ta->shape[0], MT = ta->shape[1], NT = tb->shape[1];
  if (!((tc->rank == 2 && tc->shape[0] == MT && tc->shape[1] == NT) || (tc->rank == 1 && tc->shape[0] == MT * NT)))
    return false;
  if (kl_type_is_float(ta->elem) != kl_type_is_float(tc->elem) ||
      kl_type_is_float(tb->elem) != kl_type_is_float(tc->elem))
    return false;
  opnd_match oa, ob;
  if (!match_operand(g, loop, g->opnds[0].value, &oa)) return false;
  if (!match_operand(g, loop, g->opnds[1].value, &ob) || ob.priv == oa.priv || ob.rd == oa.rd) {
    opnd_free(&oa);
    opnd_free(&ob);
    return false;
  }
  bool ok = false;
  char err[256];
  mk s = { .KK = ub, .K1 = K1, .MT = MT, .NT = NT, .acc = tc->elem, .sa = oa.src, .sb = ob.src };
  kl_view *cv = kl_ll_access_view(NULL, g->opnds[2].value, &s.sc, err, sizeof err);
  kl_view *cv2 = NULL;
  if (cv && tc->rank == 1) { /* flat acc: view it as [MT, NT] */
    kl_vb b;
    int64_t flat = MT * NT, sh[2] = { MT, NT };
    const char *nm[1] = { "i" }, *mn[2] = { "m", "n" };
    kl_vb_identity(&b, 1, &flat, nm);
    kl_vb_unmerge(&b, "i", 2, mn, sh);
    kl_view *u = kl_vb_finish(&b, err, sizeof err);
    kl_view_err ve = { 0 };
    cv2 = u ? kl_view_compose(u, cv, &ve) : NULL;
    kl_view_free(u);
    kl_view_free(cv);
    cv = cv2;
  }
  if (!cv || s.sc == oa.priv || s.sc == ob.priv || s.sc == oa.src || s.sc == ob.src ||
      oa.src->type->kind != KL_TY_BUFFER || ob.src->type->kind != KL_TY_BUFFER)
    goto done;
  int64_t ext[3] = { ub, K1, MT };
  if (!affine_fit(opnd_f, &oa.ev, 3, ext, oa.src->type->rank, &s.fa)) goto done;
  ext[2] = NT;
  if (!affine_fit(opnd_f, &ob.ev, 3, ext, ob.src->type->rank, &s.fb)) goto done;
  view_ev cev = { cv };
  int64_t cext[2] = { MT, NT };
  if (!affine_fit(view_f, &cev, 2, cext, s.sc->type->rank, &s.fc)) goto done;
  if ((NT > 1 && (affine_lin(&s.fb, 2, ob.src->type) != 1 || affine_lin(&s.fc, 1, s.sc->type) != 1))) goto done;
  int eb = (kl_type_bits(s.acc) + 7) / 8;
  pick_tile(ho, eb, &s.V, &s.MR, &s.NV);
  { /* every micro-tile (the column tail too: vectors of V, then V/2, ..., 1) carries <= 64 values */
    int64_t rest = NT % (s.NV * s.V), tail = rest / s.V;
    for (int64_t w = s.V / 2; w >= 1; w /= 2) tail += (rest % s.V) & w ? 1 : 0;
    int64_t cols = tail > s.NV ? tail : s.NV, rows = s.MR < MT ? s.MR : MT;
    if (rows * cols > KL_LL_MAX_CARRY) goto done;
  }
  {
    kl_rewriter *rw = kl_rewriter_new(g->ctx);
    kl_ll L;
    kl_ll_init(&L, rw, g->loc, 0);
    kl_rewriter_set_insertion_before(rw, loop);
    emit_micro(&L, &s);
    kl_rewriter_erase_op(rw, loop);
    ok = !kl_rewriter_failed(rw);
    kl_rewriter_free(rw);
  }
done:
  kl_view_free(cv);
  opnd_free(&oa);
  opnd_free(&ob);
  return ok;
}

kl_status kl__ll_host_gemms(kl_op *fn, const kl_ll_host_opts *ho) {
  int n;
  kl_op **ops = kl_collect_ops(fn, &n);
  int ng = 0;
  for (int i = 0; i < n; i++)
    if (!strcmp(ops[i]->name, "rock.threadwise_gemm")) ops[ng++] = ops[i];
  for (int i = 0; i < ng; i++) fuse_gemm(ops[i], ho);
  free(ops);
  return KL_OK;
}

/* ================= 2. fused global -> LDS copies ================= */

/* Div/mod operations (Merge, Broadcast) and XORs (Xor) fed by the upper dims in `mask`
 * (taint analysis through the maps). */
static int divmods(const kl_view *v, uint32_t mask) {
  int n = 0;
  for (int mi = 0; mi < v->nmaps; mi++) {
    const kl_vmap *m = &v->maps[mi];
    uint32_t next = 0;
    for (int ti = 0; ti < m->ntrans; ti++) {
      const kl_vtrans *t = &m->trans[ti];
      bool hit = false;
      for (int i = 0; i < t->nupper; i++) hit |= (mask >> t->upper[i]) & 1;
      if (!hit) continue;
      if (t->kind == KL_VT_MERGE) /* a factor of 1 costs nothing (the emitter folds it) */
        for (int i = 1; i < t->nlower; i++) n += t->params[i] > 1;
      if (t->kind == KL_VT_BROADCAST)
        for (int i = 0; i < t->nupper; i++) n += t->params[i] > 1;
      if (t->kind == KL_VT_XOR) n++; /* not linear either (the xor LDS tiles) */
      for (int i = 0; i < t->nlower; i++) next |= 1u << t->lower[i];
    }
    mask = next;
  }
  return n;
}

/* v (upper: extras..., iter) with iter split into (q, r), r of size S, simplified. */
static kl_view *split_iter(const kl_view *v, int64_t S) {
  int rank = kl_view_rank(v);
  int64_t shape[KL_VIEW_MAX_DIMS];
  const char *names[KL_VIEW_MAX_DIMS];
  for (int i = 0; i < rank; i++) {
    shape[i] = kl_view_size(v, i);
    names[i] = kl_view_name(v, i);
  }
  kl_view_err e = { 0 };
  kl_view *id = kl_view_identity(rank, shape, names, &e);
  const char *qr[2] = { "kiln.q", "kiln.r" };
  int64_t sz[2] = { shape[rank - 1] / S, S };
  kl_view *u = id ? kl_view_unmerge(id, names[rank - 1], 2, qr, sz, &e) : NULL;
  kl_view *c = u ? kl_view_compose(u, v, &e) : NULL;
  kl_view *r = c ? kl_view_simplify(c) : NULL;
  kl_view_free(id);
  kl_view_free(u);
  kl_view_free(c);
  return r;
}

/* Split sizes worth trying: the suffix products of the Merge that delinearizes the last
 * upper dim (iter) in the top map (its factors are the copy's tile dims). */
static void iter_factors(const kl_view *v, int64_t *cand, int *n) {
  const kl_vmap *m = &v->maps[0];
  int it = kl_view_rank(v) - 1;
  for (int ti = 0; ti < m->ntrans; ti++) {
    const kl_vtrans *t = &m->trans[ti];
    if (t->kind != KL_VT_MERGE || t->nupper != 1 || t->upper[0] != it) continue;
    int64_t s = 1;
    for (int i = t->nparams - 1; i > 0; i--) {
      s *= t->params[i];
      bool dup = false;
      for (int j = 0; j < *n; j++) dup |= cand[j] == s;
      if (!dup) cand[(*n)++] = s;
    }
  }
}

static int64_t vec_len(const kl_view *v, kl_value *buf, const int64_t *strides, int dim, int64_t max) {
  const kl_type *t = buf->type;
  if (t->kind != KL_TY_BUFFER || kl_view_lower_rank(v) != t->rank || max < 2) return 1;
  int64_t l = kl_view_vector_len(v, dim, strides ? strides : t->strides, max);
  return l < 1 ? 1 : l;
}

/* LDS layout choice: a 2-D LDS tile written only by copy w and otherwise read only by
 * scalar rock.loads (the micro-kernel's broadcast operand) may be stored in either
 * order (every access goes through coordinates and the buffer's strides), so the copy
 * may pick the one that needs no transpose. */
static bool can_relayout(kl_value *lds, kl_op *w) {
  const kl_type *t = lds->type;
  if (!lds->def || strcmp(lds->def->name, "rock.alloc") || t->kind != KL_TY_BUFFER || t->space != KL_SPACE_LDS ||
      t->rank != 2 || w->opnds[1].value != lds)
    return false;
  for (kl_use *u = lds->first_use; u; u = u->next) {
    kl_op *x = u->user;
    if (x == w) continue;
    if (!strcmp(x->name, "rock.load") && u->index == 0 && x->results[0].type->kind != KL_TY_VECTOR) continue;
    if (!strcmp(x->name, "rock.transform") && !kl_value_has_uses(&x->results[0])) continue;
    return false;
  }
  return true;
}

/* One side of a copy: when no div/mod and no validity check depends on (q, r), the
 * coordinates are base(extras, q, 0) + r * cr + constant offsets (the transforms on the
 * q/r paths are all linear); base is emitted once per q iteration. When only r is free
 * of div/mod and validity checks (rlin), the rows q + di each get their base (and
 * validity) once per q iteration and every r is an offset from it. */
#define CP_ROWS 64
typedef struct {
  kl_value *buf;
  kl_view *v; /* (extras..., q, r) */
  kl_value *e[KL_VIEW_MAX_DIMS];
  int ne;
  bool lin, rlin;
  int nrows; /* rlin: rows with a base (q + 0 .. q + nrows - 1) */
  int64_t cq[KL_VIEW_MAX_DIMS], cr[KL_VIEW_MAX_DIMS];
  kl_value *base[KL_VIEW_MAX_DIMS], *valid;
  kl_value *rbase[CP_ROWS][KL_VIEW_MAX_DIMS], *rvalid[CP_ROWS];
  int kpos;                         /* extra that is the enclosing K loop's variable (-1: none) */
  kl_value *next[KL_VIEW_MAX_DIMS]; /* base of the next K iteration (prefetch), or next[0] NULL */
} cp_side;

static void side_init(cp_side *sd) {
  int ne = sd->ne, rank = kl_view_lower_rank(sd->v);
  uint32_t qr = 3u << ne, rb = 2u << ne, inv = kl_view_invalid_dims(sd->v);
  sd->lin = !divmods(sd->v, qr) && !(inv & qr);
  sd->rlin = !divmods(sd->v, rb) && !(inv & rb);
  if (!sd->lin && !sd->rlin) return;
  int64_t up[KL_VIEW_MAX_DIMS] = { 0 }, l0[KL_VIEW_MAX_DIMS], l1[KL_VIEW_MAX_DIMS];
  kl_view_eval(sd->v, up, l0);
  for (int j = 0; j < 2; j++) { /* unit steps along q and r (0 for a dim of size 1: never stepped) */
    int64_t *c = j ? sd->cr : sd->cq;
    memset(up, 0, sizeof up);
    up[ne + j] = 1;
    bool step = kl_view_size(sd->v, ne + j) > 1;
    if (step) kl_view_eval(sd->v, up, l1);
    for (int d = 0; d < rank; d++) c[d] = step ? l1[d] - l0[d] : 0;
  }
}
static void side_base(kl_ll *L, cp_side *sd, kl_value *q) {
  kl_value *up[KL_VIEW_MAX_DIMS];
  if (!sd->lin) {
    if (!sd->rlin) return;
    for (int di = 0; di < sd->nrows; di++) {
      for (int i = 0; i < sd->ne; i++) up[i] = sd->e[i];
      up[sd->ne] = kl_emit_add(&L->e, q, kl_ll_idx(L, di));
      up[sd->ne + 1] = kl_ll_idx(L, 0);
      kl_view_emit(&L->e, sd->v, up, sd->rbase[di], &sd->rvalid[di]);
    }
    return;
  }
  for (int i = 0; i < sd->ne; i++) up[i] = sd->e[i];
  up[sd->ne] = q;
  up[sd->ne + 1] = kl_ll_idx(L, 0);
  kl_view_emit(&L->e, sd->v, up, sd->base, &sd->valid);
  sd->next[0] = NULL;
  if (sd->kpos >= 0) { /* the same tile one K iteration ahead (may be past the end: prefetches never fault) */
    kl_value *nv;
    up[sd->kpos] = kl_emit_add(&L->e, sd->e[sd->kpos], kl_ll_idx(L, 1));
    kl_view_emit(&L->e, sd->v, up, sd->next, &nv);
  }
}
/* Coordinates of element (q + di, r + dj) (q: the current q iteration). */
static void side_coords(kl_ll *L, cp_side *sd, kl_value *q, kl_value *r, int64_t di, int64_t dj, kl_value **co,
                        kl_value **valid) {
  if (sd->lin) {
    for (int d = 0; d < kl_view_lower_rank(sd->v); d++)
      co[d] = kl_emit_add(&L->e, kl_emit_add(&L->e, sd->base[d], kl_emit_muli(&L->e, r, sd->cr[d])),
                          kl_ll_idx(L, di * sd->cq[d] + dj * sd->cr[d]));
    *valid = sd->valid;
    return;
  }
  if (sd->rlin && di < sd->nrows) {
    for (int d = 0; d < kl_view_lower_rank(sd->v); d++)
      co[d] = kl_emit_add(&L->e, kl_emit_add(&L->e, sd->rbase[di][d], kl_emit_muli(&L->e, r, sd->cr[d])),
                          kl_ll_idx(L, dj * sd->cr[d]));
    *valid = sd->rvalid[di];
    return;
  }
  kl_value *up[KL_VIEW_MAX_DIMS];
  for (int i = 0; i < sd->ne; i++) up[i] = sd->e[i];
  up[sd->ne] = kl_emit_add(&L->e, q, kl_ll_idx(L, di));
  up[sd->ne + 1] = kl_emit_add(&L->e, r, kl_ll_idx(L, dj));
  kl_view_emit(&L->e, sd->v, up, co, valid);
}

typedef struct {
  cp_side g, w;      /* source (global) and destination (LDS) */
  const kl_type *tp; /* the private (staging) element type */
  int64_t nq, S, t;  /* q extent, r extent, vector / block length */
  int mode;          /* 0: vectors along r on both sides; 1: transposing (g along r, l along q);
                                         2: transposing (g along q, l along r) */
  kl_value *q;
} cp_st;

static kl_value *cp_load(kl_ll *L, cp_st *s, kl_value *r, int64_t di, int64_t dj, int64_t w) {
  kl_value *co[KL_VIEW_MAX_DIMS], *valid;
  side_coords(L, &s->g, s->q, r, di, dj, co, &valid);
  kl_value *x = kl_ll_load(L, s->g.buf, co, valid, w);
  if (s->g.lin && s->g.next[0]) { /* prefetch: one per 64-byte line */
    int64_t eb = (kl_type_bits(s->g.buf->type->elem) + 7) / 8, per = 64 / eb > 0 ? 64 / eb : 1;
    int64_t lin = 0;
    for (int d = 0; d < kl_view_lower_rank(s->g.v); d++)
      lin += (di * s->g.cq[d] + dj * s->g.cr[d]) * s->g.buf->type->strides[d];
    int64_t dr = 0;
    for (int d = 0; d < kl_view_lower_rank(s->g.v); d++) dr += s->g.cr[d] * s->g.buf->type->strides[d];
    if (w * eb >= 64 || (dr == 1 && lin % per == 0) || dr != 1) {
      kl_value *o[1 + KL_VIEW_MAX_DIMS];
      o[0] = s->g.buf;
      for (int d = 0; d < kl_view_lower_rank(s->g.v); d++)
        o[1 + d] = kl_emit_add(&L->e, kl_emit_add(&L->e, s->g.next[d], kl_emit_muli(&L->e, r, s->g.cr[d])),
                               kl_ll_idx(L, di * s->g.cq[d] + dj * s->g.cr[d]));
      kl_rewriter_create(L->e.rw, "rock.prefetch", L->e.loc, 1 + kl_view_lower_rank(s->g.v), o, 0, NULL, 0, NULL, 0);
    }
  }
  return kl_ll_convert(L, kl_ll_convert(L, x, s->tp), s->w.buf->type->elem);
}
static void cp_store(kl_ll *L, cp_st *s, kl_value *x, kl_value *r, int64_t di, int64_t dj) {
  kl_value *co[KL_VIEW_MAX_DIMS], *valid;
  side_coords(L, &s->w, s->q, r, di, dj, co, &valid);
  kl_ll_store(L, x, s->w.buf, co, valid);
}

static kl_value *shuffle(kl_ll *L, kl_value *x, kl_value *y, const int64_t *mask, int n) {
  kl_value *o[2] = { x, y };
  kl_named_attr a = { "mask", kl_attr_i64_array(L->ctx, n, mask) };
  return op_n(L, "vector.shuffle", 2, o, x->type, 1, &a);
}
/* In-register transpose of t vectors of t elements (butterfly: swap the off-diagonal
 * b x b blocks of row pairs (i, i + b) for b = t/2, ..., 1). */
static void transpose(kl_ll *L, kl_value **rows, int64_t t) {
  int64_t lo[64], hi[64];
  for (int64_t b = t / 2; b >= 1; b /= 2) {
    for (int64_t k = 0; k < t; k++) {
      lo[k] = (k & b) ? t + k - b : k; /* row i: its low blocks, then row j's low blocks */
      hi[k] = (k & b) ? t + k : k + b; /* row j: row i's high blocks, then its own */
    }
    for (int64_t i = 0; i < t; i++) {
      if (i & b) continue;
      kl_value *x = rows[i], *y = rows[i + b];
      rows[i] = shuffle(L, x, y, lo, (int)t);
      rows[i + b] = shuffle(L, x, y, hi, (int)t);
    }
  }
}

static void cp_rbody(kl_ll *L, kl_value *r, kl_value **carry, void *ud) {
  cp_st *s = ud;
  if (s->mode == 0) {
    cp_store(L, s, cp_load(L, s, r, 0, 0, s->t), r, 0, 0);
    return;
  }
  kl_value *rows[64];
  for (int64_t i = 0; i < s->t; i++) rows[i] = cp_load(L, s, r, s->mode == 1 ? i : 0, s->mode == 1 ? 0 : i, s->t);
  transpose(L, rows, s->t);
  for (int64_t j = 0; j < s->t; j++) cp_store(L, s, rows[j], r, s->mode == 1 ? 0 : j, s->mode == 1 ? j : 0);
}
static void cp_qbody(kl_ll *L, kl_value *q, kl_value **carry, void *ud) {
  cp_st *s = ud;
  s->q = q;
  side_base(L, &s->g, q);
  side_base(L, &s->w, q);
  if (s->mode == 0 && s->S / s->t <= 16) { /* unrolled: every load first (memory-level parallelism) */
    kl_value *x[16];
    int64_t nr = s->S / s->t;
    kl_value *z = kl_ll_idx(L, 0);
    for (int64_t i = 0; i < nr; i++) x[i] = cp_load(L, s, z, 0, i * s->t, s->t);
    for (int64_t i = 0; i < nr; i++) cp_store(L, s, x[i], z, 0, i * s->t);
    return;
  }
  /* a transposing step is already ~t (2 + log2 t) ops: unroll only short loops of it */
  int64_t save = L->unroll;
  L->unroll = s->mode == 0 ? 8 : (s->t * s->t <= 64 ? 2 : 1);
  kl_ll_for(L, kl_ll_idx(L, 0), kl_ll_idx(L, s->S), s->t, 0, NULL, cp_rbody, s);
  L->unroll = save;
}

/* Buffers an op touches (underlying buffers of its buffer operands). */
static bool touches(kl_op *x, kl_value *buf) {
  for (int i = 0; i < x->nopnds; i++) {
    kl_value *v = x->opnds[i].value;
    if (v->type->kind != KL_TY_BUFFER) continue;
    kl_op *chain[1];
    int nc;
    if (kl_rock_underlying(v, chain, &nc, 0) == buf) return true;
  }
  return false;
}
static kl_value *underlying(kl_value *v) {
  kl_op *chain[1];
  int nc;
  return kl_rock_underlying(v, chain, &nc, 0);
}

/* Tries to fuse write_all w with the read_into that fills its private source. */
static bool fuse_copy(kl_op *w, const kl_ll_host_opts *ho) {
  kl_value *p = w->opnds[0].value;
  if (!p->def || strcmp(p->def->name, "rock.alloc") || p->type->kind != KL_TY_BUFFER ||
      p->type->space != KL_SPACE_PRIVATE || p->type->rank != 1 || kl_value_use_count(p) != 2)
    return false;
  const char *store = kl_op_attr_string(w, "store");
  if (store && strcmp(store, "set")) return false;
  kl_op *r = NULL;
  for (kl_use *u = p->first_use; u; u = u->next)
    if (u->user != w) r = u->user;
  if (!r || strcmp(r->name, "rock.threadwise_read_into") || r->opnds[1].value != p || r->block != w->block ||
      !kl_op_is_before_in_block(r, w))
    return false;
  kl_value *gsrc = underlying(r->opnds[0].value), *ldst = underlying(w->opnds[1].value);
  if (gsrc == ldst) return false;
  for (kl_op *x = r->next; x && x != w; x = x->next) {
    bool rd = !strcmp(x->name, "rock.threadwise_read_into"), wr = !strcmp(x->name, "rock.threadwise_write_all");
    if (x->nregions) return false;
    if (rd || wr) {
      kl_value *dst = underlying(x->opnds[1].value), *src = underlying(x->opnds[0].value);
      if (dst == gsrc || dst == ldst || src == ldst) return false;
    } else if (touches(x, gsrc) || touches(x, ldst))
      return false;
  }
  const kl_view *vr = kl_ll_op_view(r), *vw = kl_ll_op_view(w);
  int ner = r->nopnds - 2, new_ = w->nopnds - 2;
  int64_t n = p->type->shape[0];
  if (!vr || !vw || ner > KL_VIEW_MAX_DIMS - 2 || new_ > KL_VIEW_MAX_DIMS - 2 || kl_view_rank(vr) != ner + 1 ||
      kl_view_rank(vw) != new_ + 1 || kl_view_size(vr, ner) != n || kl_view_size(vw, new_) != n)
    return false;
  char err[256];
  kl_value *gb, *lb;
  kl_view *gfull = kl_ll_access_view(vr, r->opnds[0].value, &gb, err, sizeof err);
  kl_view *wfull = gfull ? kl_ll_access_view(vw, w->opnds[1].value, &lb, err, sizeof err) : NULL;
  if (!wfull) {
    kl_view_free(gfull);
    return false;
  }
  int bytes = ho->simd_bytes, regs = ho->simd_regs;
  if (bytes <= 0 || regs <= 0) kl__ll_host_simd(&bytes, &regs);
  int eb = 1;
  const kl_type *ets[3] = { gb->type->elem, p->type->elem, lb->type->elem };
  for (int i = 0; i < 3; i++) {
    int b = (kl_type_bits(ets[i]) + 7) / 8;
    if (b > eb) eb = b;
  }
  int64_t lanes = bytes / eb >= 1 ? bytes / eb : 1;
  /* candidate splits: every divisor S of n; cost per element of each access scheme */
  cp_st best = { 0 };
  double best_cost = 0;
  bool have = false;
  int64_t cand[2 * KL_VIEW_MAX_DIMS + 2];
  int ncand = 0;
  iter_factors(gfull, cand, &ncand);
  iter_factors(wfull, cand, &ncand);
  bool hasn = false;
  for (int i = 0; i < ncand; i++) hasn |= cand[i] == n;
  if (!hasn) cand[ncand++] = n;
  /* layouts of the destination: its own, and (when it may change) the transposed one */
  int64_t lay_strides[2][2] = { { 0, 0 }, { 1, 0 } };
  int nlay = 1, best_lay = 0;
  if (can_relayout(lb, w)) {
    lay_strides[0][0] = lb->type->strides[0];
    lay_strides[0][1] = lb->type->strides[1];
    lay_strides[1][1] = lb->type->shape[0];
    nlay = 2;
  }
  for (int li = 0; li < nlay * ncand; li++) {
    int lay = li / ncand, ci = li % ncand;
    const int64_t *ws = nlay > 1 ? lay_strides[lay] : NULL;
    int64_t S = cand[ci];
    if (n % S) continue;
    kl_view *gv = split_iter(gfull, S), *wv = gv ? split_iter(wfull, S) : NULL;
    if (!wv) {
      kl_view_free(gv);
      continue;
    }
    int gq = ner, gr = ner + 1, wq = new_, wr = new_ + 1;
    int64_t g_r = vec_len(gv, gb, NULL, gr, lanes), w_r = vec_len(wv, lb, ws, wr, lanes);
    int64_t g_q = vec_len(gv, gb, NULL, gq, lanes), w_q = vec_len(wv, lb, ws, wq, lanes);
    double dm = 2.0 * (divmods(gv, 3u << ner) + divmods(wv, 3u << new_)); /* a div/mod by a constant: a few ops */
    int mode = 0;
    int64_t t = g_r < w_r ? g_r : w_r;
    double cost = 2.0 / (double)t + dm / (double)t;
    /* transposes of at most 16 x 16 (wider ones, e.g. 32 x 32 halves, cost LLVM's
     * instruction selection far more than they save at run time) */
    int64_t t1 = g_r < w_q ? g_r : w_q, t2 = g_q < w_r ? g_q : w_r;
    if (t1 > 16) t1 = 16;
    if (t2 > 16) t2 = 16;
    if (t1 >= 4 && n / S % t1 == 0) { /* transposing blocks: 2t memory ops + t log t shuffles per t*t */
      double lg = 0;
      for (int64_t x = t1; x > 1; x /= 2) lg++;
      double c1 = (2.0 * t1 + t1 * lg + dm) / (double)(t1 * t1);
      if (c1 < cost) {
        cost = c1;
        mode = 1;
        t = t1;
      }
    }
    if (t2 >= 4 && S % t2 == 0) {
      double lg = 0;
      for (int64_t x = t2; x > 1; x /= 2) lg++;
      double c2 = (2.0 * t2 + t2 * lg + dm) / (double)(t2 * t2);
      if (c2 < cost) {
        cost = c2;
        mode = 2;
        t = t2;
      }
    }
    if (!have || cost < best_cost - 1e-9) {
      kl_view_free(best.g.v);
      kl_view_free(best.w.v);
      best = (cp_st){ .S = S, .nq = n / S, .t = t, .mode = mode };
      best.g.v = gv;
      best.w.v = wv;
      best_cost = cost;
      best_lay = lay;
      have = true;
    } else {
      kl_view_free(gv);
      kl_view_free(wv);
    }
  }
  kl_view_free(gfull);
  kl_view_free(wfull);
  if (!have) return false;
  if (best_lay == 1) /* the LDS tile in the source's order: no transpose */
    kl_value_set_type(lb, kl_type_buffer(w->ctx, lb->type->elem, 2, lb->type->shape, lay_strides[1], KL_SPACE_LDS));
  best.g.buf = gb;
  best.w.buf = lb;
  best.tp = p->type->elem;
  best.g.ne = ner;
  best.w.ne = new_;
  for (int i = 0; i < ner; i++) best.g.e[i] = r->opnds[2 + i].value;
  for (int i = 0; i < new_; i++) best.w.e[i] = w->opnds[2 + i].value;
  best.g.kpos = best.w.kpos = -1;
  kl_op *kloop = kl_op_parent_op(r);
  if (ho->prefetch && kloop && !strcmp(kloop->name, "scf.for") && kloop->regions[0].first &&
      kloop->regions[0].first->nargs)
    for (int i = 0; i < ner; i++)
      if (best.g.e[i] == kloop->regions[0].first->args[0]) best.g.kpos = i;
  best.g.nrows = best.mode == 1 ? (int)best.t : 1; /* rows q + di read (g) / written (w) per q iteration */
  best.w.nrows = best.mode == 2 ? (int)best.t : 1;
  side_init(&best.g);
  side_init(&best.w);
  kl_rewriter *rw = kl_rewriter_new(w->ctx);
  kl_ll L;
  kl_ll_init(&L, rw, w->loc, 0);
  kl_rewriter_set_insertion_before(rw, w);
  kl_ll_for(&L, kl_ll_idx(&L, 0), kl_ll_idx(&L, best.nq), best.mode ? best.t : 1, 0, NULL, cp_qbody, &best);
  kl_rewriter_erase_op(rw, w);
  kl_rewriter_erase_op(rw, r);
  bool ok = !kl_rewriter_failed(rw);
  kl_rewriter_free(rw);
  kl_view_free(best.g.v);
  kl_view_free(best.w.v);
  return ok;
}

kl_status kl__ll_host_copies(kl_op *fn, const kl_ll_host_opts *ho) {
  int n;
  kl_op **ops = kl_collect_ops(fn, &n);
  int nw = 0;
  for (int i = 0; i < n; i++)
    if (!strcmp(ops[i]->name, "rock.threadwise_write_all")) ops[nw++] = ops[i];
  for (int i = nw - 1; i >= 0; i--) fuse_copy(ops[i], ho); /* last first: earlier pairs then have nothing new between */
  free(ops);
  return KL_OK;
}
