/* view_vec.c — max vectorization of a view along one upper dim (see view.h).
 *
 * For a candidate length L (a power of two) the analysis follows one aligned block of
 * L consecutive coordinates along the iterated dim through the stack, top-down. Every
 * dim value inside a block is  base + c*k  (k = 0..L-1 the offset in the block), plus
 * possibly symbolic slices (below). The base of a block is a linear form
 * K + sum e_j*X_j over independent *atoms* X_j, each known only by a residue class
 * {r + a*t} and a range (the iterated dim's atom is {0, L, 2L, ...}; other upper dims
 * are arbitrary in their range; results that cannot be kept exact become new atoms).
 * Per transform kind:
 *   PassThrough, AddDim, ConstDim copy (ConstDim: a constant);
 *   Slice / Pad shift the constant (alignment = gcd with begin/left, as in rocMLIR);
 *   Pad / Embed: the block must lie entirely inside or entirely outside the valid range
 *     for every possible base (checked exactly on the residue class); bases of
 *     all-invalid blocks are dropped afterwards (they need no contiguity);
 *   Embed / Unmerge / final address: exact linear combination;
 *   Xor (an LDS swizzle): the identity where the row term is 0 for every row of the
 *     block's class; else both inputs constant in the block, the column a new atom
 *     (exact when both are constants);
 *   Merge (and Broadcast, one digit of size m): the block is split over the digits from
 *     the fastest one. b mod s and b / s stay exact linear forms when the terms whose
 *     coefficient is not a multiple of s stay inside [0, s) (e.g. an Unmerge read back
 *     by a Merge); otherwise the residue class (gcd rules) gives new atoms. A digit is
 *     constant in the block if c is a multiple of its size, affine if the block cannot
 *     wrap it, and otherwise consecutive digits are joined into a *group* whose combined
 *     value is affine. Each digit of a group is a symbolic *slice*; Unmerge / Embed /
 *     the address add slices, adjacent slices of one group with contiguous coefficients
 *     join, and a slice covering the whole group is the affine group value again. This
 *     is the rocMLIR rule "merge outputs that are later recombined unchanged count as
 *     one dim", through any stack. A Broadcast may read the top digit of a group mod m.
 * The final address (sum lower[i]*strides[i]) must be base + 1*k with every possible
 * base a multiple of L. The result is the largest passing L (the property is monotone
 * in L), over the view as given and over kl_view_simplify(view) (same evaluation). */
#include "core/view.h"
#include <stdlib.h>
#include <string.h>

#define MAXD     KL_VIEW_MAX_DIMS
#define MAXG     (4 * MAXD)
#define MAXS     MAXD
#define MAXTERMS 32
#define MAXATOMS 512
#define NOLIM    INT64_MAX

typedef struct vatom {
  int64_t a, r, lo, hi;
} vatom; /* a = 0: exactly r */
typedef struct vterm {
  int x;
  int64_t e;
} vterm;
typedef struct vslice {
  int g, i, j;
  int64_t e;
} vslice; /* e * (digits i..j of group g) */
typedef struct vinfo {
  bool bad;  /* unknown (an earlier transform failed) */
  int64_t c; /* coefficient of the offset k in the block */
  int64_t K; /* base = K + sum t[].e * atom */
  int nt;
  vterm t[MAXTERMS];
  int64_t clo, chi; /* extra bounds on the base (-NOLIM..NOLIM: none) */
  int ns;
  vslice s[MAXS];
} vinfo;
typedef struct vgroup {
  int nd;
  int64_t size[MAXD];
  vinfo val;
} vgroup;
typedef struct vsplit {
  int x;
  int64_t d;
  int hi, lo;
} vsplit; /* atom x = d*hi + lo */
typedef struct vstate {
  int64_t L;
  int na;
  vatom at[MAXATOMS];
  int ng;
  vgroup g[MAXG];
  int nsp;
  vsplit sp[MAXATOMS];
  bool dead;   /* every block is invalid: any length is fine */
  bool failed; /* some transform could not be proved; only `dead` can still succeed */
} vstate;

enum { V_FAIL = 0, V_OK = 1 };

static int64_t gcd64(int64_t a, int64_t b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}
static int64_t fdiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}
static int64_t fmod64(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Smallest / largest member of the class (a, r) in [lo, hi]; false if none. */
static bool class_bounds(int64_t a, int64_t r, int64_t lo, int64_t hi, int64_t *first, int64_t *last) {
  if (lo > hi) return false;
  if (a == 0) {
    if (r < lo || r > hi) return false;
    *first = *last = r;
    return true;
  }
  int64_t f = lo + fmod64(r - lo, a);
  if (f > hi) return false;
  *first = f;
  *last = hi - fmod64(hi - r, a);
  return true;
}

static vinfo vconst(int64_t k) { return (vinfo){ .K = k, .clo = -NOLIM, .chi = NOLIM }; }
static int new_atom(vstate *st, int64_t a, int64_t r, int64_t lo, int64_t hi) {
  if (a > 0) r = fmod64(r, a);
  int64_t f, l;
  if (!class_bounds(a, r, lo, hi, &f, &l)) {
    st->dead = true;
    f = l = 0;
  }
  if (f == l) {
    a = 0;
    r = f;
  }
  if (st->na >= MAXATOMS) return -1;
  st->at[st->na] = (vatom){ a, r, f, l };
  return st->na++;
}
static bool vatomv(vstate *st, vinfo *o, int64_t a, int64_t r, int64_t lo, int64_t hi, int64_t c) {
  int x = new_atom(st, a, r, lo, hi);
  if (x < 0) return false;
  *o = vconst(0);
  o->c = c;
  if (st->at[x].a == 0)
    o->K = st->at[x].r;
  else {
    o->nt = 1;
    o->t[0] = (vterm){ x, 1 };
  }
  return true;
}

/* Residue class and range of the base of x (slices not included). */
typedef struct vclass {
  int64_t a, r, lo, hi;
} vclass;
static bool base_class(const vstate *st, const vinfo *x, vclass *o) {
  int64_t a = 0, r = x->K, lo = x->K, hi = x->K;
  for (int j = 0; j < x->nt; j++) {
    const vatom *t = &st->at[x->t[j].x];
    int64_t e = x->t[j].e, ea, er, l, h;
    if (__builtin_mul_overflow(e < 0 ? -e : e, t->a, &ea) || __builtin_mul_overflow(e, t->r, &er) ||
        __builtin_mul_overflow(e, e >= 0 ? t->lo : t->hi, &l) ||
        __builtin_mul_overflow(e, e >= 0 ? t->hi : t->lo, &h) || __builtin_add_overflow(r, er, &r) ||
        __builtin_add_overflow(lo, l, &lo) || __builtin_add_overflow(hi, h, &hi))
      return false;
    a = gcd64(a, ea);
    if (a > 0) r = fmod64(r, a);
  }
  lo = max64(lo, x->clo);
  hi = min64(hi, x->chi);
  int64_t f, l;
  if (!class_bounds(a, r, lo, hi, &f, &l)) {
    *o = (vclass){ 0, 0, 1, 0 };
    return true;
  } /* empty */
  *o = (vclass){ f == l ? 0 : a, f == l ? f : (a > 0 ? fmod64(r, a) : r), f, l };
  return true;
}
static bool cls_empty(const vclass *c) { return c->lo > c->hi; }
/* Marks the analysis dead (every block invalid) if the base of x has no value. */
static int check_alive(vstate *st, const vinfo *x) {
  vclass c;
  if (!base_class(st, x, &c)) return V_FAIL;
  if (cls_empty(&c)) st->dead = true;
  return V_OK;
}
static bool exists_in(const vclass *c, int64_t lo, int64_t hi) {
  int64_t f, l;
  return class_bounds(c->a, c->r, max64(lo, c->lo), min64(hi, c->hi), &f, &l);
}

/* acc += e * x (linear part and slices). */
static bool add_scaled(vinfo *acc, int64_t e, const vinfo *x) {
  int64_t t;
  if (__builtin_mul_overflow(e, x->c, &t) || __builtin_add_overflow(acc->c, t, &acc->c)) return false;
  if (__builtin_mul_overflow(e, x->K, &t) || __builtin_add_overflow(acc->K, t, &acc->K)) return false;
  if (e == 0) return true;
  for (int j = 0; j < x->nt; j++) {
    int k;
    if (__builtin_mul_overflow(e, x->t[j].e, &t)) return false;
    for (k = 0; k < acc->nt && acc->t[k].x != x->t[j].x; k++) {}
    if (k == acc->nt) {
      if (acc->nt >= MAXTERMS) return false;
      acc->t[acc->nt++] = (vterm){ x->t[j].x, 0 };
    }
    if (__builtin_add_overflow(acc->t[k].e, t, &acc->t[k].e)) return false;
    if (acc->t[k].e == 0) acc->t[k] = acc->t[--acc->nt];
  }
  for (int k = 0; k < x->ns; k++) {
    if (acc->ns >= MAXS) return false;
    vslice sl = x->s[k];
    if (__builtin_mul_overflow(sl.e, e, &sl.e)) return false;
    acc->s[acc->ns++] = sl;
  }
  return true;
}

static int64_t slice_size(const vgroup *g, int i, int j) {
  int64_t p = 1;
  for (int k = i; k <= j; k++) p *= g->size[k];
  return p;
}

/* sum coef[i] * in[i], exact. Slices of one group join when adjacent with contiguous
 * coefficients; a slice covering its whole group becomes the group's affine value. */
static int lincomb(vstate *st, int n, const vinfo *const *in, const int64_t *coef, vinfo *out) {
  *out = vconst(0);
  int64_t lo = 0, hi = 0; /* bounds from the inputs' (clipped) ranges */
  bool bounded = true;
  for (int i = 0; i < n; i++) {
    vclass c;
    if (!base_class(st, in[i], &c)) return V_FAIL;
    if (cls_empty(&c)) {
      st->dead = true;
      return V_OK;
    }
    if (c.a == 0 && in[i]->nt) { /* clipped to one value: use the constant */
      vinfo k = *in[i];
      k.K = c.r;
      k.nt = 0;
      k.clo = -NOLIM;
      k.chi = NOLIM;
      if (!add_scaled(out, coef[i], &k)) return V_FAIL;
    } else if (!add_scaled(out, coef[i], in[i]))
      return V_FAIL;
    int64_t e = coef[i], l, h;
    if (__builtin_mul_overflow(e, e >= 0 ? c.lo : c.hi, &l) || __builtin_mul_overflow(e, e >= 0 ? c.hi : c.lo, &h) ||
        __builtin_add_overflow(lo, l, &lo) || __builtin_add_overflow(hi, h, &hi))
      bounded = false;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (int x = 0; x < out->ns && !changed; x++) {
      if (out->s[x].e == 0) {
        out->s[x] = out->s[--out->ns];
        changed = true;
        break;
      }
      for (int y = 0; y < out->ns && !changed; y++) {
        vslice *a = &out->s[x], *b = &out->s[y];
        if (x == y || a->g != b->g || a->j + 1 != b->i) continue;
        int64_t want;
        if (__builtin_mul_overflow(b->e, slice_size(&st->g[a->g], b->i, b->j), &want) || a->e != want) continue;
        a->j = b->j;
        a->e = b->e;
        out->s[y] = out->s[--out->ns];
        changed = true;
      }
    }
  }
  for (int x = 0; x < out->ns;) {
    const vslice *a = &out->s[x];
    const vgroup *g = &st->g[a->g];
    if (a->i == 0 && a->j == g->nd - 1) {
      vclass c;
      int64_t e = a->e, l, h;
      if (!add_scaled(out, e, &g->val) || !base_class(st, &g->val, &c)) return V_FAIL;
      if (cls_empty(&c)) {
        st->dead = true;
        return V_OK;
      }
      if (__builtin_mul_overflow(e, e >= 0 ? c.lo : c.hi, &l) || __builtin_mul_overflow(e, e >= 0 ? c.hi : c.lo, &h) ||
          __builtin_add_overflow(lo, l, &lo) || __builtin_add_overflow(hi, h, &hi))
        bounded = false;
      out->s[x] = out->s[--out->ns];
    } else
      x++;
  }
  if (bounded && out->ns == 0) {
    out->clo = lo;
    out->chi = hi;
  }
  return check_alive(st, out);
}

/* Atom x (>= 0) as d*hi + lo with 0 <= lo < d (cached, so every use agrees). The two
 * new atoms are treated as independent: a superset of the real pairs, hence sound. */
static bool atom_split(vstate *st, int x, int64_t d, int *hi, int *lo) {
  for (int i = 0; i < st->nsp; i++)
    if (st->sp[i].x == x && st->sp[i].d == d) {
      *hi = st->sp[i].hi;
      *lo = st->sp[i].lo;
      return true;
    }
  vatom t = st->at[x];
  if (st->nsp >= MAXATOMS || t.lo < 0) return false;
  int64_t la, lr, lmn, lmx, ha, hr;
  if (t.a == 0) {
    la = 0;
    lr = fmod64(t.r, d);
    lmn = lmx = lr;
    ha = 0;
    hr = fdiv(t.r, d);
  } else {
    la = gcd64(t.a, d);
    lr = fmod64(t.r, la);
    if (fdiv(t.lo, d) == fdiv(t.hi, d)) {
      lmn = fmod64(t.lo, d);
      lmx = fmod64(t.hi, d);
    } else {
      lmn = lr;
      lmx = d - la + lr;
    }
    if (t.a % d == 0) {
      ha = t.a / d;
      hr = fdiv(t.r, d);
    } else {
      ha = 1;
      hr = 0;
    }
  }
  int l = new_atom(st, la, lr, lmn, lmx), h = new_atom(st, ha, hr, fdiv(t.lo, d), fdiv(t.hi, d));
  if (l < 0 || h < 0) return false;
  st->sp[st->nsp++] = (vsplit){ x, d, h, l };
  *hi = h;
  *lo = l;
  return true;
}

/* b = base of x split by s: q = floor(b / s), m = b mod s (coefficients c of k not
 * included). Exact linear forms when the part not divisible by s stays in [0, s)
 * (terms e*X with e | s are first split as X = (s/e)*Xh + Xl); otherwise new atoms
 * from the residue class. *mmax gets an upper bound of m. */
static int split(vstate *st, const vinfo *x, int64_t s, vinfo *q, vinfo *m, int64_t *mmax) {
  vclass c;
  if (!base_class(st, x, &c)) return V_FAIL;
  if (cls_empty(&c)) {
    st->dead = true;
    *q = *m = vconst(0);
    *mmax = 0;
    return V_OK;
  }
  /* class-based facts */
  int64_t cmn, cmx;
  if (fdiv(c.lo, s) == fdiv(c.hi, s)) {
    cmn = fmod64(c.lo, s);
    cmx = fmod64(c.hi, s);
  } else {
    int64_t g = gcd64(c.a, s);
    cmn = fmod64(c.r, g);
    cmx = s - g + cmn;
  }
  /* exact split */
  vinfo R = vconst(fmod64(x->K, s)), Q = vconst(fdiv(x->K, s));
  int64_t rlo = R.K, rhi = R.K;
  bool exact = true;
  for (int j = 0; j < x->nt && exact; j++) {
    int xa = x->t[j].x;
    int64_t e = x->t[j].e;
    if (e % s == 0) {
      Q.t[Q.nt++] = (vterm){ xa, e / s };
      continue;
    }
    int h, lo;
    if (e > 0 && s % e == 0 && st->at[xa].lo >= 0 && st->at[xa].hi >= s / e && atom_split(st, xa, s / e, &h, &lo)) {
      Q.t[Q.nt++] = (vterm){ h, 1 }; /* e*X = s*Xh + e*Xl */
      xa = lo;
    }
    R.t[R.nt++] = (vterm){ xa, e };
    const vatom *t = &st->at[xa];
    int64_t l, h2;
    if (__builtin_mul_overflow(e, e >= 0 ? t->lo : t->hi, &l) ||
        __builtin_mul_overflow(e, e >= 0 ? t->hi : t->lo, &h2) || __builtin_add_overflow(rlo, l, &rlo) ||
        __builtin_add_overflow(rhi, h2, &rhi))
      exact = false;
  }
  if (exact && rlo >= 0 && rhi < s) {
    Q.clo = fdiv(c.lo, s);
    Q.chi = fdiv(c.hi, s);
    if (cmn <= cmx && fdiv(c.lo, s) == fdiv(c.hi, s)) {
      R.clo = cmn;
      R.chi = cmx;
    }
    *q = Q;
    *m = R;
    *mmax = min64(rhi, cmx);
    return V_OK;
  }
  /* residue classes: m in class (r mod gcd(a, s)), q = b / s */
  int64_t ma = c.a == 0 ? 0 : gcd64(c.a, s), mr = c.a == 0 ? fmod64(c.r, s) : fmod64(c.r, ma);
  int64_t qa, qr;
  if (c.a == 0) {
    qa = 0;
    qr = fdiv(c.r, s);
  } else if (c.a % s == 0) {
    qa = c.a / s;
    qr = fdiv(fmod64(c.r, c.a), s);
  } else {
    qa = 1;
    qr = 0;
  }
  if (!vatomv(st, m, ma, mr, cmn, cmx, 0) || !vatomv(st, q, qa, qr, fdiv(c.lo, s), fdiv(c.hi, s), 0)) return V_FAIL;
  *mmax = cmx;
  return V_OK;
}

/* Block values b + c*k must lie all inside or all outside [0, S) for every base b;
 * afterwards only bases of valid blocks are kept. */
static int range_check(vstate *st, vinfo *x, int64_t S) {
  int64_t D, o;
  vclass c;
  if (__builtin_mul_overflow(x->c < 0 ? -x->c : x->c, st->L - 1, &D) || !base_class(st, x, &c)) return V_FAIL;
  if (cls_empty(&c)) {
    st->dead = true;
    return V_OK;
  }
  o = x->c < 0 ? -D : 0;
  if (D > 0) {
    if (exists_in(&c, -o - D, -o - 1)) return V_FAIL;       /* straddles 0 */
    if (exists_in(&c, S - o - D, S - 1 - o)) return V_FAIL; /* straddles S */
  }
  x->clo = max64(c.lo, -o);
  x->chi = min64(c.hi, S - 1 - o - D);
  return check_alive(st, x);
}

/* Range of all values a (possibly symbolic) dim takes over all blocks. */
static bool sym_range(const vstate *st, const vinfo *x, int64_t *lo, int64_t *hi) {
  int64_t span;
  vclass c;
  if (__builtin_mul_overflow(x->c, st->L - 1, &span) || !base_class(st, x, &c) || cls_empty(&c)) return false;
  *lo = c.lo + (span < 0 ? span : 0);
  *hi = c.hi + (span > 0 ? span : 0);
  for (int k = 0; k < x->ns; k++) {
    int64_t w;
    if (__builtin_mul_overflow(x->s[k].e, slice_size(&st->g[x->s[k].g], x->s[k].i, x->s[k].j) - 1, &w)) return false;
    if (w < 0)
      *lo += w;
    else
      *hi += w;
  }
  return true;
}
/* A symbolic value against [0, S): fine if always inside, dead if always outside. */
static int sym_check(vstate *st, const vinfo *x, int64_t S) {
  int64_t lo, hi;
  if (!sym_range(st, x, &lo, &hi)) return V_FAIL;
  if (lo >= 0 && hi < S) return V_OK;
  if (hi < 0 || lo >= S) {
    st->dead = true;
    return V_OK;
  }
  return V_FAIL;
}
static bool is_pure_slice(const vinfo *x) { return x->ns == 1 && x->nt == 0 && x->K == 0 && x->c == 0; }

/* One digit of size s of x (Broadcast): constant or affine in the block, else fail. */
static int digit(vstate *st, const vinfo *x, int64_t s, vinfo *out) {
  vinfo q, m;
  int64_t mmax;
  if (x->c == 0 || x->c % s == 0) {
    if (split(st, x, s, &q, &m, &mmax) == V_FAIL) return V_FAIL;
    *out = m;
    return V_OK;
  }
  if (x->c < 0) return V_FAIL;
  if (split(st, x, s, &q, &m, &mmax) == V_FAIL) return V_FAIL;
  if (mmax + x->c * (st->L - 1) >= s) return V_FAIL;
  *out = m;
  out->c = x->c;
  return V_OK;
}

/* The values of the current level, for renumbering group digits. */
typedef struct vlevel {
  vinfo *in, *out;
  int nin, nout;
} vlevel;

/* Merge of one digit of a group: the digit is split into the Merge's parts (size-1 parts
 * are constant 0), later digits of the group are renumbered everywhere. */
static int merge_digit(vstate *st, const vinfo *x, int n, const int64_t *p, vinfo *out, const vlevel *lv) {
  if (!is_pure_slice(x) || x->s[0].i != x->s[0].j || x->s[0].e != 1) return V_FAIL;
  int gi = x->s[0].g, di = x->s[0].i, k = 0;
  vgroup *g = &st->g[gi];
  for (int j = 0; j < n; j++) k += p[j] != 1;
  if (k < 1 || g->nd + k - 1 > MAXD) return V_FAIL;
  int shift = k - 1;
  if (shift) {
    for (int side = 0; side < 2; side++) {
      vinfo *arr = side ? lv->out : lv->in;
      int na = side ? lv->nout : lv->nin;
      for (int a = 0; a < na; a++)
        for (int b = 0; b < arr[a].ns; b++)
          if (arr[a].s[b].g == gi && arr[a].s[b].i > di) {
            arr[a].s[b].i += shift;
            arr[a].s[b].j += shift;
          }
    }
    memmove(&g->size[di + k], &g->size[di + 1], (g->nd - di - 1) * sizeof g->size[0]);
  }
  g->nd += shift;
  for (int j = 0, d = di; j < n; j++) {
    if (p[j] == 1) {
      out[j] = vconst(0);
      continue;
    }
    g->size[d] = p[j];
    out[j] = vconst(0);
    out[j].ns = 1;
    out[j].s[0] = (vslice){ .g = gi, .i = d, .j = d, .e = 1 };
    d++;
  }
  return V_OK;
}

static int merge(vstate *st, const vinfo *x, int n, const int64_t *p, vinfo *out, const vlevel *lv) {
  if (x->ns) {
    if (n == 1) {
      out[0] = *x;
      return V_OK;
    }
    return merge_digit(st, x, n, p, out, lv);
  }
  vinfo cur = *x, q, m;
  int64_t mmax;
  int i = n - 1;
  while (i >= 1) {
    int64_t s = p[i];
    if (s == 1) {
      out[i] = vconst(0);
      i--;
      continue;
    }
    if (cur.c == 0 || cur.c % s == 0) { /* constant digit */
      if (split(st, &cur, s, &q, &m, &mmax) == V_FAIL) return V_FAIL;
      out[i] = m;
      q.c = cur.c / s;
      cur = q;
      i--;
      continue;
    }
    if (cur.c < 0) return V_FAIL;
    int64_t span = cur.c * (st->L - 1);
    if (split(st, &cur, s, &q, &m, &mmax) == V_FAIL) return V_FAIL;
    if (mmax + span < s) { /* the block stays inside the digit */
      out[i] = m;
      out[i].c = cur.c;
      cur = q;
      i--;
      continue;
    }
    int64_t T = s; /* join digits qd..i into a group */
    int qd = i - 1;
    for (; qd >= 0; qd--) {
      if (__builtin_mul_overflow(T, p[qd], &T)) return V_FAIL;
      if (split(st, &cur, T, &q, &m, &mmax) == V_FAIL) return V_FAIL;
      if (mmax + span < T) break;
    }
    if (qd < 0 || st->ng >= MAXG) return V_FAIL;
    vgroup *g = &st->g[st->ng];
    g->nd = 0;
    g->val = m;
    g->val.c = cur.c;
    for (int j = qd; j <= i; j++) {
      if (p[j] == 1) {
        out[j] = vconst(0);
        continue;
      } /* always 0: not a digit of the group */
      g->size[g->nd] = p[j];
      out[j] = vconst(0);
      out[j].ns = 1;
      out[j].s[0] = (vslice){ .g = st->ng, .i = g->nd, .j = g->nd, .e = 1 };
      g->nd++;
    }
    st->ng++;
    cur = q;
    i = qd - 1;
    if (i < 0) return V_OK;
  }
  out[0] = cur;
  return V_OK;
}

static int trans_step(vstate *st, const kl_vmap *m, const kl_vtrans *t, vinfo *in, vinfo *out) {
  const int64_t *p = t->params;
  {
    switch (t->kind) {
      case KL_VT_PASSTHROUGH:
        for (int i = 0; i < t->nupper; i++) out[t->lower[i]] = in[t->upper[i]];
        break;
      case KL_VT_SLICE:
        for (int i = 0; i < t->nupper; i++) {
          vinfo x = in[t->upper[i]];
          x.K += p[2 * i];
          if (x.clo != -NOLIM) x.clo += p[2 * i];
          if (x.chi != NOLIM) x.chi += p[2 * i];
          out[t->lower[i]] = x;
        }
        break;
      case KL_VT_PAD:
        for (int i = 0; i < t->nupper; i++) {
          vinfo x = in[t->upper[i]];
          int64_t l = p[2 * i], S = m->lower_sizes[t->lower[i]];
          if (is_pure_slice(&x) && x.s[0].i == 0 && x.s[0].j == 0 && x.s[0].e == 1) {
            /* the top digit y of a group padded: y - l in [0, S) iff V - l*rest in [0, S*rest) */
            vgroup *g = &st->g[x.s[0].g];
            int64_t rest = slice_size(g, 1, g->nd - 1), shift, S2;
            vinfo nv = g->val;
            if (__builtin_mul_overflow(l, rest, &shift) || __builtin_mul_overflow(S, rest, &S2)) return V_FAIL;
            nv.K -= shift;
            if (nv.clo != -NOLIM) nv.clo -= shift;
            if (nv.chi != NOLIM) nv.chi -= shift;
            if (range_check(st, &nv, S2) == V_FAIL) return V_FAIL;
            g->val = nv;
            g->size[0] = S;
            out[t->lower[i]] = x;
            continue;
          }
          x.K -= l;
          if (x.clo != -NOLIM) x.clo -= l;
          if (x.chi != NOLIM) x.chi -= l;
          if ((x.ns ? sym_check(st, &x, S) : range_check(st, &x, S)) == V_FAIL) return V_FAIL;
          out[t->lower[i]] = x;
        }
        break;
      case KL_VT_EMBED:
      case KL_VT_UNMERGE: {
        const vinfo *ins[MAXD];
        int64_t coef[MAXD], stride = 1;
        for (int i = t->nupper - 1; i >= 0; i--) {
          ins[i] = &in[t->upper[i]];
          coef[i] = t->kind == KL_VT_EMBED ? p[i] : stride;
          if (t->kind == KL_VT_UNMERGE) stride *= p[i];
        }
        int64_t S = m->lower_sizes[t->lower[0]];
        vinfo x;
        if (lincomb(st, t->nupper, ins, coef, &x) == V_FAIL) return V_FAIL;
        if (t->kind == KL_VT_EMBED && !st->dead && (x.ns ? sym_check(st, &x, S) : range_check(st, &x, S)) == V_FAIL)
          return V_FAIL;
        out[t->lower[0]] = x;
        break;
      }
      case KL_VT_MERGE: {
        vinfo o[MAXD];
        vlevel lv = { in, out, m->nupper, m->nlower };
        vinfo x = in[t->upper[0]];
        if (merge(st, &x, t->nlower, p, o, &lv) == V_FAIL) return V_FAIL;
        for (int i = 0; i < t->nlower; i++) out[t->lower[i]] = o[i];
        break;
      }
      case KL_VT_ADDDIM:
        for (int i = 0; i < t->nupper; i++)
          if (in[t->upper[i]].ns) return V_FAIL;
        break;
      case KL_VT_BROADCAST:
        for (int i = 0; i < t->nupper; i++) {
          const vinfo *x = &in[t->upper[i]];
          int64_t mod = p[i], lo, hi;
          if (!x->ns) {
            if (digit(st, x, mod, &out[t->lower[i]]) == V_FAIL) return V_FAIL;
            continue;
          }
          if (sym_range(st, x, &lo, &hi) && lo >= 0 && hi < mod) {
            out[t->lower[i]] = *x;
            continue;
          }
          /* the top digit of a group read mod m: the group value is read mod m*rest */
          if (!is_pure_slice(x) || x->s[0].i != 0 || x->s[0].j != 0 || x->s[0].e != 1) return V_FAIL;
          vgroup *g = &st->g[x->s[0].g];
          int64_t T, mmax;
          vinfo q, r;
          if (g->val.c < 0 || __builtin_mul_overflow(mod, slice_size(g, 1, g->nd - 1), &T)) return V_FAIL;
          if (split(st, &g->val, T, &q, &r, &mmax) == V_FAIL) return V_FAIL;
          if (mmax + g->val.c * (st->L - 1) >= T) return V_FAIL;
          r.c = g->val.c;
          g->val = r;
          g->size[0] = mod;
          out[t->lower[i]] = *x;
        }
        break;
      case KL_VT_CONSTDIM:
        for (int i = 0; i < t->nlower; i++) out[t->lower[i]] = vconst(p[2 * i]);
        break;
      case KL_VT_XOR: { /* exact on constants; else both inputs constant in the block */
        const vinfo *r = &in[t->upper[0]], *c = &in[t->upper[1]];
        vclass rc;
        if (!r->c && !r->ns && base_class(st, r, &rc) && !cls_empty(&rc) && rc.lo >= 0 &&
            rc.lo / p[0] == rc.hi / p[0] &&
            (rc.lo / p[0]) % p[1] == 0) { /* the row term is 0 for every row: the identity */
          out[t->lower[0]] = *r;
          out[t->lower[1]] = *c;
          break;
        }
        if (r->c || r->ns || c->c || c->ns) return V_FAIL;
        out[t->lower[0]] = *r;
        if (!r->nt && !c->nt && r->K >= 0 && c->K >= 0) {
          out[t->lower[1]] = vconst(c->K ^ ((r->K / p[0]) % p[1]));
          break;
        }
        if (!vatomv(st, &out[t->lower[1]], 1, 0, 0, m->lower_sizes[t->lower[1]] - 1, 0)) return V_FAIL;
        break;
      }
    }
  }
  return V_OK;
}

/* On a failure the outputs become unknown and the analysis goes on, since a later
 * transform may still show that every block is invalid. */
static void map_step(vstate *st, const kl_vmap *m, vinfo *in, vinfo *out) {
  for (int ti = 0; ti < m->ntrans && !st->dead; ti++) {
    const kl_vtrans *t = &m->trans[ti];
    bool bad = false;
    for (int i = 0; i < t->nupper; i++) bad |= in[t->upper[i]].bad;
    if (bad || trans_step(st, m, t, in, out) == V_FAIL) {
      st->failed = true;
      for (int i = 0; i < t->nlower; i++) {
        out[t->lower[i]] = vconst(0);
        out[t->lower[i]].bad = true;
      }
    }
  }
}

static bool vec_ok(const kl_view *v, int dim, const int64_t *strides, int64_t L) {
  if (L == 1) return true;
  vstate *st = kl_xcalloc(1, sizeof *st);
  vinfo *a = kl_xmalloc(2 * MAXD * sizeof *a), *b = a + MAXD;
  bool res = false;
  st->L = L;
  const kl_vmap *top = &v->maps[0];
  for (int d = 0; d < top->nupper; d++) {
    int64_t s = top->upper_sizes[d];
    bool it = d == dim;
    if (!vatomv(st, &a[d], it ? L : 1, 0, 0, it ? s - L : s - 1, it ? 1 : 0)) goto done;
  }
  for (int i = 0; i < v->nmaps; i++) {
    for (int d = 0; d < v->maps[i].nlower; d++) b[d] = vconst(0);
    map_step(st, &v->maps[i], a, b);
    if (st->dead) {
      res = true;
      goto done;
    }
    memcpy(a, b, MAXD * sizeof *a);
  }
  const kl_vmap *bot = &v->maps[v->nmaps - 1];
  const vinfo *ins[MAXD];
  int64_t coef[MAXD], rs = 1;
  bool rs_big = false; /* row-major strides past int64 (16 sizes of up to 2^40): claim nothing */
  for (int d = bot->nlower - 1; d >= 0; d--) {
    if (!strides && rs_big) goto done;
    ins[d] = &a[d];
    coef[d] = strides ? strides[d] : rs;
    if (__builtin_mul_overflow(rs, bot->lower_sizes[d], &rs)) rs_big = true;
  }
  vinfo addr;
  vclass c;
  if (st->failed) goto done;
  if (lincomb(st, bot->nlower, ins, coef, &addr) == V_FAIL) goto done;
  if (st->dead) {
    res = true;
    goto done;
  }
  if (addr.ns || addr.c != 1 || !base_class(st, &addr, &c)) goto done;
  if (cls_empty(&c)) {
    res = true;
    goto done;
  }
  res = c.a == 0 ? fmod64(c.r, L) == 0 : (c.a % L == 0 && fmod64(c.r, L) == 0);
done:
  free(a);
  free(st);
  return res;
}

int64_t kl_view_vector_len(const kl_view *v, int dim, const int64_t *strides, int64_t max_len) {
  if (!v || dim < 0 || dim >= kl_view_rank(v) || max_len < 1) return -1;
  int64_t size = kl_view_size(v, dim), L = 1;
  while (L * 2 <= max_len && size % (L * 2) == 0) L *= 2;
  kl_view *s = NULL;
  for (; L > 1; L /= 2) {
    if (vec_ok(v, dim, strides, L)) break;
    if (!s) s = kl_view_simplify(v);
    if (vec_ok(s, dim, strides, L)) break;
  }
  kl_view_free(s);
  return L;
}

int64_t kl_view_max_vectorization(const kl_view *v, int dim, const int64_t *strides, int elem_bits) {
  int64_t cap = elem_bits > 0 && elem_bits <= 128 ? 128 / elem_bits : 1;
  return kl_view_vector_len(v, dim, strides, cap < 1 ? 1 : cap);
}
