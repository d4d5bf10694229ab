/* view.c — transform maps: validation, packing, evaluation, compose, simplify, invert,
 * bounds, builders, text printer and parser. See view.h for the contract. */
#include "core/view.h"
#include "core/diag.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXD KL_VIEW_MAX_DIMS
#define MAXT KL_VIEW_MAX_TRANS
#define MAXP KL_VIEW_MAX_PARAMS

/* ------------------------------------------------------------------ helpers */

static void verr(kl_view_err *e, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void verr(kl_view_err *e, int line, int col, const char *fmt, ...) {
  if (!e) return;
  e->line = line;
  e->col = col;
  va_list ap;
  va_start(ap, fmt);
  kl_verrf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
}

/* Floor quotient and remainder of a by b >= 1 (fdiv / fmod64 for a positive divisor), one
 * division at most: a shift and a mask where b is a power of two (arithmetic shift and two's
 * complement mask round towards minus infinity, as fdiv does). */
static inline int64_t fdivmod_pos(int64_t a, int64_t b, int64_t *r) {
  if ((b & (b - 1)) == 0) {
    *r = a & (b - 1);
    return a >> __builtin_ctzll((unsigned long long)b);
  }
  int64_t q = a / b, m = a - q * b;
  if (m < 0) m += b, q--;
  *r = m;
  return q;
}
/* Wrapping arithmetic: garbage (invalid) coordinates may be combined without UB. */
static int64_t wadd(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static int64_t wmul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

static bool name_ok(const char *s) {
  if (!s || !*s) return false;
  size_t n = 0;
  for (const char *p = s; *p; p++, n++) {
    char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
          c == '$'))
      return false;
  }
  return n <= KL_VIEW_MAX_NAME;
}

static const char *const kind_names[KL_VT_COUNT] = { "PassThrough", "Pad",    "Slice",     "Embed",    "Unmerge",
                                                     "Merge",       "AddDim", "Broadcast", "ConstDim", "Xor" };
const char *kl_vkind_name(kl_vkind k) { return (unsigned)k < KL_VT_COUNT ? kind_names[k] : "?"; }
int kl_vkind_from_name(const char *s, size_t n) {
  for (int k = 0; k < KL_VT_COUNT; k++)
    if (strlen(kind_names[k]) == n && memcmp(kind_names[k], s, n) == 0) return k;
  return -1;
}

/* ------------------------------------------------------------------ validation */

#define FAIL(...)                 \
  do {                            \
    verr(err, 0, 0, __VA_ARGS__); \
    return false;                 \
  } while (0)

static bool check_trans(const kl_vmap *m, int ti, const kl_vtrans *t, kl_view_err *err) {
  const char *kn = kl_vkind_name(t->kind);
  int nu = t->nupper, nl = t->nlower, np = t->nparams;
  const int64_t *p = t->params;
  const int64_t *us = m->upper_sizes, *ls = m->lower_sizes;
  switch (t->kind) {
    case KL_VT_PASSTHROUGH:
    case KL_VT_PAD:
    case KL_VT_SLICE:
    case KL_VT_BROADCAST:
      if (nu < 1 || nu != nl)
        FAIL("transform %d: %s maps n upper dims to n lower dims (n >= 1), got %d -> %d", ti, kn, nu, nl);
      break;
    case KL_VT_EMBED:
    case KL_VT_UNMERGE:
      if (nu < 1 || nl != 1)
        FAIL("transform %d: %s maps N >= 1 upper dims to 1 lower dim, got %d -> %d", ti, kn, nu, nl);
      break;
    case KL_VT_MERGE:
      if (nu != 1 || nl < 1)
        FAIL("transform %d: Merge maps 1 upper dim to N >= 1 lower dims, got %d -> %d", ti, nu, nl);
      break;
    case KL_VT_ADDDIM:
      if (nu < 1 || nl != 0)
        FAIL("transform %d: AddDim has n >= 1 upper dims and no lower dims, got %d -> %d", ti, nu, nl);
      break;
    case KL_VT_CONSTDIM:
      if (nu != 0 || nl < 1)
        FAIL("transform %d: ConstDim has no upper dims and n >= 1 lower dims, got %d -> %d", ti, nu, nl);
      break;
    case KL_VT_XOR:
      if (nu != 2 || nl != 2)
        FAIL("transform %d: Xor maps 2 upper dims (row, column) to 2 lower dims, got %d -> %d", ti, nu, nl);
      break;
    default: FAIL("transform %d: unknown transform kind %d", ti, (int)t->kind);
  }
  int want = 0;
  switch (t->kind) {
    case KL_VT_PASSTHROUGH: want = 0; break;
    case KL_VT_PAD:
    case KL_VT_SLICE: want = 2 * nu; break;
    case KL_VT_EMBED:
    case KL_VT_UNMERGE:
    case KL_VT_ADDDIM:
    case KL_VT_BROADCAST: want = nu; break;
    case KL_VT_MERGE: want = nl; break;
    case KL_VT_CONSTDIM: want = 2 * nl; break;
    case KL_VT_XOR: want = 2; break;
  }
  if (np != want)
    FAIL("transform %d: %s over %d dim(s) takes %d parameter(s), got %d", ti, kn,
         t->kind == KL_VT_MERGE || t->kind == KL_VT_CONSTDIM ? nl : nu, want, np);
  if (np > 0 && !p) FAIL("transform %d: missing parameter array", ti);
  switch (t->kind) {
    case KL_VT_PASSTHROUGH:
      for (int i = 0; i < nu; i++)
        if (us[t->upper[i]] != ls[t->lower[i]])
          FAIL("transform %d: PassThrough upper dim %d has size %lld but lower dim %d has size %lld", ti, t->upper[i],
               (long long)us[t->upper[i]], t->lower[i], (long long)ls[t->lower[i]]);
      break;
    case KL_VT_PAD:
      for (int i = 0; i < nu; i++) {
        int64_t l = p[2 * i], r = p[2 * i + 1];
        if (l < 0 || r < 0 || l > KL_VIEW_MAX_SIZE || r > KL_VIEW_MAX_SIZE)
          FAIL("transform %d: Pad amounts must be in [0, 2^40], got %lld,%lld", ti, (long long)l, (long long)r);
        if (us[t->upper[i]] != ls[t->lower[i]] + l + r)
          FAIL("transform %d: Pad upper size %lld != lower size %lld + %lld + %lld", ti, (long long)us[t->upper[i]],
               (long long)ls[t->lower[i]], (long long)l, (long long)r);
      }
      break;
    case KL_VT_SLICE:
      for (int i = 0; i < nu; i++) {
        int64_t b = p[2 * i], e = p[2 * i + 1];
        if (b < 0 || b >= e || e > ls[t->lower[i]])
          FAIL("transform %d: Slice needs 0 <= begin < end <= lower size %lld, got %lld,%lld", ti,
               (long long)ls[t->lower[i]], (long long)b, (long long)e);
        if (us[t->upper[i]] != e - b)
          FAIL("transform %d: Slice upper size %lld != end - begin = %lld", ti, (long long)us[t->upper[i]],
               (long long)(e - b));
      }
      break;
    case KL_VT_EMBED: {
      int64_t span = 0;
      for (int i = 0; i < nu; i++) {
        if (p[i] < -KL_VIEW_MAX_SIZE || p[i] > KL_VIEW_MAX_SIZE)
          FAIL("transform %d: Embed coefficient %lld out of range", ti, (long long)p[i]);
        int64_t term;
        if (__builtin_mul_overflow(p[i] < 0 ? -p[i] : p[i], us[t->upper[i]] - 1, &term) ||
            __builtin_add_overflow(span, term, &span) || span > ((int64_t)1 << 61))
          FAIL("transform %d: Embed value range overflows", ti);
      }
      break;
    }
    case KL_VT_UNMERGE:
    case KL_VT_MERGE: {
      const int64_t *parts = t->kind == KL_VT_UNMERGE ? us : ls;
      const int *pd = t->kind == KL_VT_UNMERGE ? t->upper : t->lower;
      int n = t->kind == KL_VT_UNMERGE ? nu : nl;
      int64_t prod = 1;
      for (int i = 0; i < n; i++) {
        if (p[i] != parts[pd[i]])
          FAIL("transform %d: %s parameter %d is %lld but %s dim %d has size %lld", ti, kn, i, (long long)p[i],
               t->kind == KL_VT_UNMERGE ? "upper" : "lower", pd[i], (long long)parts[pd[i]]);
        if (__builtin_mul_overflow(prod, p[i], &prod) || prod > KL_VIEW_MAX_SIZE)
          FAIL("transform %d: %s size product overflows", ti, kn);
      }
      int64_t whole = t->kind == KL_VT_UNMERGE ? ls[t->lower[0]] : us[t->upper[0]];
      if (whole != prod)
        FAIL("transform %d: %s %s size %lld != product of parts %lld", ti, kn,
             t->kind == KL_VT_UNMERGE ? "lower" : "upper", (long long)whole, (long long)prod);
      break;
    }
    case KL_VT_ADDDIM:
      for (int i = 0; i < nu; i++)
        if (p[i] != us[t->upper[i]])
          FAIL("transform %d: AddDim parameter %lld != upper size %lld", ti, (long long)p[i],
               (long long)us[t->upper[i]]);
      break;
    case KL_VT_BROADCAST:
      for (int i = 0; i < nu; i++)
        if (p[i] < 1 || p[i] > ls[t->lower[i]])
          FAIL("transform %d: Broadcast modulus %lld must be in [1, lower size %lld]", ti, (long long)p[i],
               (long long)ls[t->lower[i]]);
      break;
    case KL_VT_CONSTDIM:
      for (int i = 0; i < nl; i++) {
        int64_t v = p[2 * i], s = p[2 * i + 1];
        if (s != ls[t->lower[i]])
          FAIL("transform %d: ConstDim size %lld != lower size %lld", ti, (long long)s, (long long)ls[t->lower[i]]);
        if (v < 0 || v >= s)
          FAIL("transform %d: ConstDim value %lld outside [0, %lld)", ti, (long long)v, (long long)s);
      }
      break;
    case KL_VT_XOR:
      for (int i = 0; i < 2; i++)
        if (us[t->upper[i]] != ls[t->lower[i]])
          FAIL("transform %d: Xor upper dim %d has size %lld but lower dim %d has size %lld", ti, t->upper[i],
               (long long)us[t->upper[i]], t->lower[i], (long long)ls[t->lower[i]]);
      if (p[0] < 1 || p[0] > KL_VIEW_MAX_SIZE || p[1] < 1 || (p[1] & (p[1] - 1)) || us[t->upper[1]] % p[1])
        FAIL("transform %d: Xor{d,m} needs d >= 1 and m a power of two dividing the column size %lld, got %lld,%lld",
             ti, (long long)us[t->upper[1]], (long long)p[0], (long long)p[1]);
      break;
  }
  return true;
}

bool kl_vmap_check(const kl_vmap *m, int *bad, kl_view_err *err) {
  if (bad) *bad = -1;
  if (m->nupper < 0 || m->nupper > MAXD || m->nlower < 0 || m->nlower > MAXD)
    FAIL("map has %d upper and %d lower dims (at most %d each)", m->nupper, m->nlower, MAXD);
  if (m->ntrans < 0 || m->ntrans > MAXT) FAIL("map has %d transforms (at most %d)", m->ntrans, MAXT);
  if ((m->nupper && (!m->upper_names || !m->upper_sizes)) || (m->nlower && (!m->lower_names || !m->lower_sizes)) ||
      (m->ntrans && !m->trans))
    FAIL("map has missing arrays");
  for (int side = 0; side < 2; side++) {
    int n = side ? m->nlower : m->nupper;
    const char *const *nm = side ? m->lower_names : m->upper_names;
    const int64_t *sz = side ? m->lower_sizes : m->upper_sizes;
    const char *sn = side ? "lower" : "upper";
    for (int i = 0; i < n; i++) {
      if (!name_ok(nm[i]))
        FAIL("%s dim %d: bad name \"%s\" (1..%d chars of [A-Za-z0-9_.$])", sn, i, nm[i] ? nm[i] : "", KL_VIEW_MAX_NAME);
      if (sz[i] < 1 || sz[i] > KL_VIEW_MAX_SIZE)
        FAIL("%s dim %d (\"%s\"): size %lld outside [1, 2^40]", sn, i, nm[i], (long long)sz[i]);
      for (int j = 0; j < i; j++)
        if (strcmp(nm[i], nm[j]) == 0) FAIL("%s dims %d and %d have the same name \"%s\"", sn, j, i, nm[i]);
    }
  }
  int ucov[MAXD] = { 0 }, lcov[MAXD] = { 0 };
  for (int ti = 0; ti < m->ntrans; ti++) {
    const kl_vtrans *t = &m->trans[ti];
    if (bad) *bad = ti;
    if (t->nupper < 0 || t->nupper > MAXD || t->nlower < 0 || t->nlower > MAXD || t->nparams < 0 || t->nparams > MAXP)
      FAIL("transform %d: bad dim or parameter count", ti);
    if ((t->nupper && !t->upper) || (t->nlower && !t->lower)) FAIL("transform %d: missing dim arrays", ti);
    for (int i = 0; i < t->nupper; i++) {
      int d = t->upper[i];
      if (d < 0 || d >= m->nupper)
        FAIL("transform %d: upper dim %d out of range (map has %d upper dims)", ti, d, m->nupper);
      if (ucov[d]++) FAIL("transform %d: upper dim %d (\"%s\") is covered twice", ti, d, m->upper_names[d]);
    }
    for (int i = 0; i < t->nlower; i++) {
      int d = t->lower[i];
      if (d < 0 || d >= m->nlower)
        FAIL("transform %d: lower dim %d out of range (map has %d lower dims)", ti, d, m->nlower);
      if (lcov[d]++) FAIL("transform %d: lower dim %d (\"%s\") is covered twice", ti, d, m->lower_names[d]);
    }
    if (!check_trans(m, ti, t, err)) return false;
  }
  if (bad) *bad = -1;
  for (int d = 0; d < m->nupper; d++)
    if (!ucov[d]) FAIL("upper dim %d (\"%s\") is not covered by any transform", d, m->upper_names[d]);
  for (int d = 0; d < m->nlower; d++)
    if (!lcov[d]) FAIL("lower dim %d (\"%s\") is not covered by any transform", d, m->lower_names[d]);
  return true;
}

static bool check_adjacent(const kl_vmap *a, const kl_vmap *b, int i, kl_view_err *err) {
  bool same = a->nlower == b->nupper;
  for (int d = 0; same && d < a->nlower; d++) same = a->lower_sizes[d] == b->upper_sizes[d];
  if (same) return true;
  kl_sb sb = { 0 };
  kl_sb_puts(&sb, "[");
  for (int d = 0; d < b->nupper; d++) kl_sb_printf(&sb, "%s%lld", d ? "," : "", (long long)b->upper_sizes[d]);
  kl_sb_puts(&sb, "] != [");
  for (int d = 0; d < a->nlower; d++) kl_sb_printf(&sb, "%s%lld", d ? "," : "", (long long)a->lower_sizes[d]);
  kl_sb_puts(&sb, "]");
  verr(err, 0, 0, "map %d upper bounds do not match map %d lower bounds: %s", i + 1, i, kl_sb_str(&sb));
  kl_sb_free(&sb);
  return false;
}

/* ------------------------------------------------------------------ packing */

static size_t al16(size_t n) { return (n + 15) & ~(size_t)15; }

static kl_view *pack(int n, const kl_vmap *maps, void *(*alloc)(void *, size_t), void *ud) {
  size_t T = 0, D = 0, P = 0, I = 0, C = 0;
  for (int i = 0; i < n; i++) {
    const kl_vmap *m = &maps[i];
    T += m->ntrans;
    D += m->nupper + m->nlower;
    for (int d = 0; d < m->nupper; d++) C += strlen(m->upper_names[d]) + 1;
    for (int d = 0; d < m->nlower; d++) C += strlen(m->lower_names[d]) + 1;
    for (int t = 0; t < m->ntrans; t++) {
      P += m->trans[t].nparams;
      I += m->trans[t].nupper + m->trans[t].nlower;
    }
  }
  size_t o_maps = al16(sizeof(kl_view)), o_tr = o_maps + al16(n * sizeof(kl_vmap));
  size_t o_nm = o_tr + al16(T * sizeof(kl_vtrans)), o_i64 = o_nm + al16(D * sizeof(char *));
  size_t o_int = o_i64 + al16((D + P) * sizeof(int64_t)), o_ch = o_int + al16(I * sizeof(int));
  size_t total = o_ch + al16(C);
  char *base = alloc(ud, total);
  memset(base, 0, total);
  kl_view *v = (kl_view *)base;
  kl_vmap *om = (kl_vmap *)(base + o_maps);
  kl_vtrans *ot = (kl_vtrans *)(base + o_tr);
  const char **onm = (const char **)(base + o_nm);
  int64_t *oi64 = (int64_t *)(base + o_i64);
  int *oint = (int *)(base + o_int);
  char *och = base + o_ch;
  v->nmaps = n;
  v->maps = om;
  v->nbytes = total;
  for (int i = 0; i < n; i++) {
    const kl_vmap *m = &maps[i];
    kl_vmap *d = &om[i];
    d->nupper = m->nupper;
    d->nlower = m->nlower;
    d->ntrans = m->ntrans;
    for (int side = 0; side < 2; side++) {
      int k = side ? m->nlower : m->nupper;
      const char *const *src = side ? m->lower_names : m->upper_names;
      const int64_t *ss = side ? m->lower_sizes : m->upper_sizes;
      if (side) {
        d->lower_names = onm;
        d->lower_sizes = oi64;
      } else {
        d->upper_names = onm;
        d->upper_sizes = oi64;
      }
      for (int j = 0; j < k; j++) {
        size_t len = strlen(src[j]) + 1;
        memcpy(och, src[j], len);
        onm[j] = och;
        och += len;
        oi64[j] = ss[j];
      }
      onm += k;
      oi64 += k;
    }
    d->trans = ot;
    for (int t = 0; t < m->ntrans; t++) {
      const kl_vtrans *s = &m->trans[t];
      kl_vtrans *o = ot++;
      o->kind = s->kind;
      o->nparams = s->nparams;
      o->nupper = s->nupper;
      o->nlower = s->nlower;
      if (s->nparams) memcpy(oi64, s->params, s->nparams * sizeof(int64_t));
      o->params = oi64;
      oi64 += s->nparams;
      if (s->nupper) memcpy(oint, s->upper, s->nupper * sizeof(int));
      o->upper = oint;
      oint += s->nupper;
      if (s->nlower) memcpy(oint, s->lower, s->nlower * sizeof(int));
      o->lower = oint;
      oint += s->nlower;
    }
  }
  return v;
}

static void *heap_alloc(void *ud, size_t n) {
  (void)ud;
  return kl_xmalloc(n);
}
static void *arena_alloc(void *ud, size_t n) { return kl_arena_alloc((kl_arena *)ud, n); }

kl_view *kl_view_make(int nmaps, const kl_vmap *maps, kl_view_err *err) {
  if (nmaps < 1 || !maps) {
    verr(err, 0, 0, "a view needs at least one map");
    return NULL;
  }
  if (nmaps > KL_VIEW_MAX_MAPS) {
    verr(err, 0, 0, "a view has at most %d maps, got %d", KL_VIEW_MAX_MAPS, nmaps);
    return NULL;
  }
  for (int i = 0; i < nmaps; i++) {
    kl_view_err e;
    if (!kl_vmap_check(&maps[i], NULL, &e)) {
      verr(err, 0, 0, "map %d: %s", i, e.msg);
      return NULL;
    }
    if (i > 0 && !check_adjacent(&maps[i - 1], &maps[i], i - 1, err)) return NULL;
  }
  return pack(nmaps, maps, heap_alloc, NULL);
}
kl_view *kl_view_clone(const kl_view *v) { return v ? pack(v->nmaps, v->maps, heap_alloc, NULL) : NULL; }
kl_view *kl_view_copy_with(const kl_view *v, void *(*alloc)(void *, size_t), void *ud) {
  return v ? pack(v->nmaps, v->maps, alloc, ud) : NULL;
}
kl_view *kl_view_copy_to_arena(const kl_view *v, kl_arena *a) { return kl_view_copy_with(v, arena_alloc, a); }
void kl_view_free(kl_view *v) { free(v); }

bool kl_view_equal(const kl_view *a, const kl_view *b) {
  if (a == b) return true;
  if (!a || !b || a->nmaps != b->nmaps) return false;
  for (int i = 0; i < a->nmaps; i++) {
    const kl_vmap *x = &a->maps[i], *y = &b->maps[i];
    if (x->nupper != y->nupper || x->nlower != y->nlower || x->ntrans != y->ntrans) return false;
    for (int d = 0; d < x->nupper; d++)
      if (x->upper_sizes[d] != y->upper_sizes[d] || strcmp(x->upper_names[d], y->upper_names[d])) return false;
    for (int d = 0; d < x->nlower; d++)
      if (x->lower_sizes[d] != y->lower_sizes[d] || strcmp(x->lower_names[d], y->lower_names[d])) return false;
    for (int t = 0; t < x->ntrans; t++) {
      const kl_vtrans *p = &x->trans[t], *q = &y->trans[t];
      if (p->kind != q->kind || p->nparams != q->nparams || p->nupper != q->nupper || p->nlower != q->nlower)
        return false;
      if ((p->nparams && memcmp(p->params, q->params, p->nparams * sizeof(int64_t))) ||
          (p->nupper && memcmp(p->upper, q->upper, p->nupper * sizeof(int))) ||
          (p->nlower && memcmp(p->lower, q->lower, p->nlower * sizeof(int))))
        return false;
    }
  }
  return true;
}

/* ------------------------------------------------------------------ accessors */

int kl_view_rank(const kl_view *v) { return v->maps[0].nupper; }
int64_t kl_view_size(const kl_view *v, int d) {
  return d >= 0 && d < v->maps[0].nupper ? v->maps[0].upper_sizes[d] : -1;
}
const char *kl_view_name(const kl_view *v, int d) {
  return d >= 0 && d < v->maps[0].nupper ? v->maps[0].upper_names[d] : NULL;
}
int kl_view_dim(const kl_view *v, const char *name) {
  for (int d = 0; d < v->maps[0].nupper; d++)
    if (strcmp(v->maps[0].upper_names[d], name) == 0) return d;
  return -1;
}
static const kl_vmap *bottom(const kl_view *v) { return &v->maps[v->nmaps - 1]; }
int kl_view_lower_rank(const kl_view *v) { return bottom(v)->nlower; }
int64_t kl_view_lower_size(const kl_view *v, int d) {
  return d >= 0 && d < bottom(v)->nlower ? bottom(v)->lower_sizes[d] : -1;
}
const char *kl_view_lower_name(const kl_view *v, int d) {
  return d >= 0 && d < bottom(v)->nlower ? bottom(v)->lower_names[d] : NULL;
}
int64_t kl_view_numel(const kl_view *v) {
  int64_t n = 1; /* saturates at INT64_MAX: 16 sizes of up to 2^40 overflow int64 */
  for (int d = 0; d < v->maps[0].nupper; d++)
    if (__builtin_mul_overflow(n, v->maps[0].upper_sizes[d], &n)) return INT64_MAX;
  return n;
}

/* ------------------------------------------------------------------ evaluation */

bool kl_vmap_eval(const kl_vmap *m, const int64_t *in, int64_t *out) {
  bool ok = true;
  for (int ti = 0; ti < m->ntrans; ti++) {
    const kl_vtrans *t = &m->trans[ti];
    const int64_t *p = t->params;
    switch (t->kind) {
      case KL_VT_PASSTHROUGH:
        for (int i = 0; i < t->nupper; i++) out[t->lower[i]] = in[t->upper[i]];
        break;
      case KL_VT_PAD:
        for (int i = 0; i < t->nupper; i++) {
          int64_t v = wadd(in[t->upper[i]], -p[2 * i]);
          out[t->lower[i]] = v;
          if (v < 0 || v >= m->lower_sizes[t->lower[i]]) ok = false;
        }
        break;
      case KL_VT_SLICE:
        for (int i = 0; i < t->nupper; i++) out[t->lower[i]] = wadd(in[t->upper[i]], p[2 * i]);
        break;
      case KL_VT_EMBED: {
        int64_t s = 0;
        for (int i = 0; i < t->nupper; i++) s = wadd(s, wmul(p[i], in[t->upper[i]]));
        out[t->lower[0]] = s;
        if (s < 0 || s >= m->lower_sizes[t->lower[0]]) ok = false;
        break;
      }
      case KL_VT_UNMERGE: {
        int64_t s = 0;
        for (int i = 0; i < t->nupper; i++) s = wadd(wmul(s, p[i]), in[t->upper[i]]);
        out[t->lower[0]] = s;
        break;
      }
      case KL_VT_MERGE: {
        int64_t v = in[t->upper[0]];
        for (int i = t->nlower - 1; i > 0; i--) v = fdivmod_pos(v, p[i], &out[t->lower[i]]); /* sizes >= 1 */
        out[t->lower[0]] = v;
        break;
      }
      case KL_VT_ADDDIM: break;
      case KL_VT_BROADCAST:
        for (int i = 0; i < t->nupper; i++) fdivmod_pos(in[t->upper[i]], p[i], &out[t->lower[i]]); /* m >= 1 */
        break;
      case KL_VT_CONSTDIM:
        for (int i = 0; i < t->nlower; i++) out[t->lower[i]] = p[2 * i];
        break;
      case KL_VT_XOR: {
        int64_t r = in[t->upper[0]], c = in[t->upper[1]];
        out[t->lower[0]] = r;
        int64_t x = 0;
        if (r >= 0 && c >= 0) fdivmod_pos(fdivmod_pos(r, p[0], &(int64_t){ 0 }), p[1], &x); /* d, m >= 1 */
        out[t->lower[1]] = c ^ x; /* negative: invalid, kept */
        break;
      }
    }
  }
  return ok;
}

bool kl_view_eval(const kl_view *v, const int64_t *upper, int64_t *lower) {
  int64_t a[MAXD], b[MAXD];
  bool ok = true;
  const kl_vmap *top = &v->maps[0];
  for (int d = 0; d < top->nupper; d++)
    if (upper[d] < 0 || upper[d] >= top->upper_sizes[d]) ok = false;
  const int64_t *in = upper; /* the levels alternate between a and b; a map never writes its input */
  if (lower == upper) {      /* a caller evaluating in place: level 0 reads a copy (it writes a or lower) */
    memcpy(b, upper, (size_t)top->nupper * sizeof *b);
    in = b;
  }
  for (int i = 0; i < v->nmaps; i++) {
    int64_t *out = i == v->nmaps - 1 ? lower : (i & 1) ? b : a;
    if (!kl_vmap_eval(&v->maps[i], in, out)) ok = false;
    in = out;
  }
  return ok;
}

int64_t kl_view_eval_addr(const kl_view *v, const int64_t *upper, const int64_t *strides, bool *valid) {
  int64_t lo[MAXD];
  bool ok = kl_view_eval(v, upper, lo);
  if (valid) *valid = ok;
  const kl_vmap *b = bottom(v);
  int64_t addr = 0, st = 1;
  for (int d = b->nlower - 1; d >= 0; d--) {
    int64_t s = strides ? strides[d] : st;
    addr = wadd(addr, wmul(lo[d], s));
    st = wmul(st, b->lower_sizes[d]); /* wraps like addr (no signed overflow) */
  }
  return addr;
}

/* ------------------------------------------------------------------ work form */

/* A mutable map with fixed arrays, used while building, simplifying and inverting.
 * Names point into memory that outlives the operation (source views, caller arrays or
 * a local arena). */
typedef struct wtr {
  kl_vkind kind;
  int np, nu, nl;
  int64_t p[MAXP];
  int u[MAXD], l[MAXD];
} wtr;
typedef struct wmap {
  int nu, nl, nt;
  const char *un[MAXD], *ln[MAXD];
  int64_t us[MAXD], ls[MAXD];
  wtr t[MAXT];
} wmap;

static void wmap_from(wmap *w, const kl_vmap *m) {
  memset(w, 0, sizeof *w);
  w->nu = m->nupper;
  w->nl = m->nlower;
  w->nt = m->ntrans;
  for (int d = 0; d < m->nupper; d++) {
    w->un[d] = m->upper_names[d];
    w->us[d] = m->upper_sizes[d];
  }
  for (int d = 0; d < m->nlower; d++) {
    w->ln[d] = m->lower_names[d];
    w->ls[d] = m->lower_sizes[d];
  }
  for (int t = 0; t < m->ntrans; t++) {
    const kl_vtrans *s = &m->trans[t];
    wtr *o = &w->t[t];
    o->kind = s->kind;
    o->np = s->nparams;
    o->nu = s->nupper;
    o->nl = s->nlower;
    if (s->nparams) memcpy(o->p, s->params, s->nparams * sizeof(int64_t));
    if (s->nupper) memcpy(o->u, s->upper, s->nupper * sizeof(int));
    if (s->nlower) memcpy(o->l, s->lower, s->nlower * sizeof(int));
  }
}
/* tb must hold MAXT entries; the result points into w and tb. */
static void wmap_to(const wmap *w, kl_vmap *m, kl_vtrans *tb) {
  m->nupper = w->nu;
  m->nlower = w->nl;
  m->ntrans = w->nt;
  m->upper_names = w->un;
  m->upper_sizes = w->us;
  m->lower_names = w->ln;
  m->lower_sizes = w->ls;
  m->trans = tb;
  for (int t = 0; t < w->nt; t++) {
    const wtr *s = &w->t[t];
    tb[t] = (kl_vtrans){
      .kind = s->kind, .nparams = s->np, .nupper = s->nu, .nlower = s->nl, .params = s->p, .upper = s->u, .lower = s->l
    };
  }
}
static kl_view *wmaps_make(int n, const wmap *ws, kl_view_err *err) {
  kl_vmap *maps = kl_xmalloc(n * sizeof *maps);
  kl_vtrans *tb = kl_xmalloc((size_t)n * MAXT * sizeof *tb);
  for (int i = 0; i < n; i++) wmap_to(&ws[i], &maps[i], tb + (size_t)i * MAXT);
  kl_view *v = kl_view_make(n, maps, err);
  free(maps);
  free(tb);
  return v;
}
static wtr *wadd_tr(wmap *w, kl_vkind kind) {
  wtr *t = &w->t[w->nt++];
  memset(t, 0, sizeof *t);
  t->kind = kind;
  return t;
}

/* ------------------------------------------------------------------ compose */

kl_view *kl_view_compose(const kl_view *a, const kl_view *b, kl_view_err *err) {
  if (!a || !b) {
    verr(err, 0, 0, "compose: NULL view");
    return NULL;
  }
  const kl_vmap *al = bottom(a), *bu = &b->maps[0];
  kl_view_err e;
  if (!check_adjacent(al, bu, a->nmaps - 1, &e)) {
    char *sh = strchr(e.msg, '[');
    verr(err, 0, 0, "compose: upper shape of the second view != lower shape of the first: %.200s", sh ? sh : e.msg);
    return NULL;
  }
  int n = a->nmaps + b->nmaps;
  if (n > KL_VIEW_MAX_MAPS) {
    verr(err, 0, 0, "compose: a view has at most %d maps, got %d", KL_VIEW_MAX_MAPS, n);
    return NULL;
  }
  kl_vmap *maps = kl_xmalloc(n * sizeof *maps);
  memcpy(maps, a->maps, a->nmaps * sizeof *maps);
  memcpy(maps + a->nmaps, b->maps, b->nmaps * sizeof *maps);
  kl_view *v = pack(n, maps, heap_alloc, NULL);
  free(maps);
  return v;
}

/* ------------------------------------------------------------------ simplify */

/* Splits multi-dim element-wise transforms into single-dim ones and turns identity
 * transforms into PassThrough. */
static void normalize(wmap *w) {
  wtr old[MAXT];
  int n = w->nt;
  memcpy(old, w->t, n * sizeof(wtr));
  w->nt = 0;
  for (int i = 0; i < n; i++) {
    const wtr *t = &old[i];
    switch (t->kind) {
      case KL_VT_PASSTHROUGH:
      case KL_VT_PAD:
      case KL_VT_SLICE:
      case KL_VT_BROADCAST:
        for (int j = 0; j < t->nu; j++) {
          wtr *o = wadd_tr(w, t->kind);
          o->nu = o->nl = 1;
          o->u[0] = t->u[j];
          o->l[0] = t->l[j];
          int64_t us = w->us[o->u[0]], ls = w->ls[o->l[0]];
          bool ident = false;
          if (t->kind == KL_VT_PAD) {
            o->np = 2;
            o->p[0] = t->p[2 * j];
            o->p[1] = t->p[2 * j + 1];
            ident = !o->p[0] && !o->p[1];
          } else if (t->kind == KL_VT_SLICE) {
            o->np = 2;
            o->p[0] = t->p[2 * j];
            o->p[1] = t->p[2 * j + 1];
            ident = !o->p[0] && o->p[1] == ls;
          } else if (t->kind == KL_VT_BROADCAST) {
            o->np = 1;
            o->p[0] = t->p[j];
            ident = us == ls && o->p[0] >= us;
          }
          if (ident) {
            o->kind = KL_VT_PASSTHROUGH;
            o->np = 0;
          }
        }
        break;
      case KL_VT_ADDDIM:
        for (int j = 0; j < t->nu; j++) {
          wtr *o = wadd_tr(w, t->kind);
          o->nu = 1;
          o->u[0] = t->u[j];
          o->np = 1;
          o->p[0] = t->p[j];
        }
        break;
      case KL_VT_CONSTDIM:
        for (int j = 0; j < t->nl; j++) {
          wtr *o = wadd_tr(w, t->kind);
          o->nl = 1;
          o->l[0] = t->l[j];
          o->np = 2;
          o->p[0] = t->p[2 * j];
          o->p[1] = t->p[2 * j + 1];
        }
        break;
      default: {
        wtr *o = wadd_tr(w, t->kind);
        *o = *t;
        bool ident = (t->kind == KL_VT_UNMERGE && t->nu == 1) || (t->kind == KL_VT_MERGE && t->nl == 1) ||
            (t->kind == KL_VT_EMBED && t->nu == 1 && t->p[0] == 1 && w->us[t->u[0]] == w->ls[t->l[0]]);
        if (ident) {
          o->kind = KL_VT_PASSTHROUGH;
          o->np = 0;
          o->nu = o->nl = 1;
        }
        break;
      }
    }
  }
}

static bool is_identity(const wmap *w) {
  if (w->nu != w->nl) return false;
  for (int i = 0; i < w->nt; i++) {
    const wtr *t = &w->t[i];
    if (t->kind != KL_VT_PASSTHROUGH) return false;
    for (int j = 0; j < t->nu; j++)
      if (t->u[j] != t->l[j]) return false;
  }
  return true;
}

static int uf_find(int *par, int x) {
  while (par[x] != x) x = par[x] = par[par[x]];
  return x;
}

/* Unmerge (sizes s) followed by Merge (sizes m) of its single output is a reshape s -> m:
 * split into groups of equal prefix products; each group is a PassThrough, Merge,
 * Unmerge, AddDim{1} or ConstDim{0,1}. Fails (C unchanged) if a group needs both. */
static bool fold_reshape(const wtr *ta, const wtr *tb, wmap *C) {
  wtr out[MAXT];
  int n = 0, i = 0, j = 0;
  while (i < ta->nu || j < tb->nl) {
    int64_t ps = 1, pt = 1;
    int i0 = i, j0 = j;
    if (i < ta->nu) ps *= ta->p[i++];
    if (j < tb->nl) pt *= tb->p[j++];
    while (ps != pt) {
      if (ps < pt) {
        if (i >= ta->nu) return false;
        ps *= ta->p[i++];
      } else {
        if (j >= tb->nl) return false;
        pt *= tb->p[j++];
      }
    }
    int ni = i - i0, nj = j - j0;
    if (ni > 1 && nj > 1) return false;
    wtr *o = &out[n++];
    memset(o, 0, sizeof *o);
    if (ni == 1 && nj == 1) {
      o->kind = KL_VT_PASSTHROUGH;
      o->nu = o->nl = 1;
      o->u[0] = ta->u[i0];
      o->l[0] = tb->l[j0];
    } else if (ni == 0) {
      o->kind = KL_VT_CONSTDIM;
      o->nl = 1;
      o->l[0] = tb->l[j0];
      o->np = 2;
      o->p[0] = 0;
      o->p[1] = 1;
    } else if (nj == 0) {
      o->kind = KL_VT_ADDDIM;
      o->nu = 1;
      o->u[0] = ta->u[i0];
      o->np = 1;
      o->p[0] = 1;
    } else if (ni == 1) {
      o->kind = KL_VT_MERGE;
      o->nu = 1;
      o->u[0] = ta->u[i0];
      o->nl = o->np = nj;
      for (int k = 0; k < nj; k++) {
        o->l[k] = tb->l[j0 + k];
        o->p[k] = tb->p[j0 + k];
      }
    } else {
      o->kind = KL_VT_UNMERGE;
      o->nl = 1;
      o->l[0] = tb->l[j0];
      o->nu = o->np = ni;
      for (int k = 0; k < ni; k++) {
        o->u[k] = ta->u[i0 + k];
        o->p[k] = ta->p[i0 + k];
      }
    }
  }
  if (C->nt + n > MAXT) return false;
  for (int k = 0; k < n; k++) *wadd_tr(C, out[k].kind) = out[k];
  return true;
}

/* Fuses A (above) and B (below) into one map C if every connected group of
 * transforms folds into transforms of A's upper and B's lower dims. */
static bool fuse(const wmap *A, const wmap *B, wmap *C) {
  int prodA[MAXD], consB[MAXD];
  for (int d = 0; d < A->nl; d++) prodA[d] = consB[d] = -1;
  for (int i = 0; i < A->nt; i++)
    for (int j = 0; j < A->t[i].nl; j++) prodA[A->t[i].l[j]] = i;
  for (int i = 0; i < B->nt; i++)
    for (int j = 0; j < B->t[i].nu; j++) consB[B->t[i].u[j]] = i;
  int par[2 * MAXT];
  int na = A->nt, nb = B->nt;
  for (int i = 0; i < na + nb; i++) par[i] = i;
  for (int d = 0; d < A->nl; d++) {
    if (prodA[d] < 0 || consB[d] < 0) return false;
    int x = uf_find(par, prodA[d]), y = uf_find(par, na + consB[d]);
    if (x != y) par[x] = y;
  }
  memset(C, 0, sizeof *C);
  C->nu = A->nu;
  C->nl = B->nl;
  memcpy(C->un, A->un, sizeof C->un);
  memcpy(C->us, A->us, sizeof C->us);
  memcpy(C->ln, B->ln, sizeof C->ln);
  memcpy(C->ls, B->ls, sizeof C->ls);
  bool done[2 * MAXT] = { false };
  for (int root0 = 0; root0 < na + nb; root0++) {
    int root = uf_find(par, root0);
    if (done[root]) continue;
    done[root] = true;
    int as[MAXT], bs[MAXT], nA = 0, nB = 0;
    bool allAPT = true, allBPT = true;
    for (int i = 0; i < na + nb; i++) {
      if (uf_find(par, i) != root) continue;
      if (i < na) {
        as[nA++] = i;
        allAPT &= A->t[i].kind == KL_VT_PASSTHROUGH;
      } else {
        bs[nB++] = i - na;
        allBPT &= B->t[i - na].kind == KL_VT_PASSTHROUGH;
      }
    }
    if (nB == 0) {
      *wadd_tr(C, A->t[as[0]].kind) = A->t[as[0]];
      continue;
    } /* AddDim */
    if (nA == 0) {
      *wadd_tr(C, B->t[bs[0]].kind) = B->t[bs[0]];
      continue;
    } /* ConstDim */
    if (nA == 1 && nB == 1 && A->t[as[0]].kind == KL_VT_CONSTDIM && B->t[bs[0]].kind == KL_VT_ADDDIM)
      continue; /* a constant that is ignored */
    if (nA == 1 && nB == 1 && A->t[as[0]].kind == KL_VT_CONSTDIM && A->t[as[0]].nl == 1 &&
        B->t[bs[0]].kind == KL_VT_BROADCAST && B->t[bs[0]].nu == 1) { /* a constant read mod m: a constant */
      const wtr *ta = &A->t[as[0]], *tb = &B->t[bs[0]];
      wtr *o = wadd_tr(C, KL_VT_CONSTDIM);
      o->nu = 0;
      o->nl = 1;
      o->l[0] = tb->l[0];
      o->np = 2;
      o->p[0] = ta->p[0] % tb->p[0];
      o->p[1] = B->ls[tb->l[0]];
      continue;
    }
    if (nA == 1 && allBPT) {
      wtr *o = wadd_tr(C, A->t[as[0]].kind);
      *o = A->t[as[0]];
      for (int j = 0; j < o->nl; j++) o->l[j] = B->t[consB[o->l[j]]].l[0];
      continue;
    }
    if (nB == 1 && allAPT) {
      wtr *o = wadd_tr(C, B->t[bs[0]].kind);
      *o = B->t[bs[0]];
      for (int j = 0; j < o->nu; j++) o->u[j] = A->t[prodA[o->u[j]]].u[0];
      continue;
    }
    if (nA == 1 && nB == 1) {
      const wtr *ta = &A->t[as[0]], *tb = &B->t[bs[0]];
      if (ta->kind == KL_VT_MERGE && tb->kind == KL_VT_UNMERGE && ta->nl == tb->nu &&
          memcmp(ta->l, tb->u, ta->nl * sizeof(int)) == 0) {
        wtr *o = wadd_tr(C, KL_VT_PASSTHROUGH);
        o->nu = o->nl = 1;
        o->u[0] = ta->u[0];
        o->l[0] = tb->l[0];
        continue;
      }
      if (ta->kind == KL_VT_UNMERGE && tb->kind == KL_VT_MERGE && fold_reshape(ta, tb, C)) continue;
      if (ta->kind == KL_VT_XOR && tb->kind == KL_VT_XOR && ta->p[0] == tb->p[0] && ta->p[1] == tb->p[1] &&
          ta->l[0] == tb->u[0] && ta->l[1] == tb->u[1]) { /* a swizzle undone: two PassThroughs */
        for (int j = 0; j < 2; j++) {
          wtr *o = wadd_tr(C, KL_VT_PASSTHROUGH);
          o->nu = o->nl = 1;
          o->u[0] = ta->u[j];
          o->l[0] = tb->l[j];
        }
        continue;
      }
      if (ta->kind == KL_VT_PAD && tb->kind == KL_VT_PAD) {
        wtr *o = wadd_tr(C, KL_VT_PAD);
        o->nu = o->nl = 1;
        o->u[0] = ta->u[0];
        o->l[0] = tb->l[0];
        o->np = 2;
        o->p[0] = ta->p[0] + tb->p[0];
        o->p[1] = ta->p[1] + tb->p[1];
        continue;
      }
      if (ta->kind == KL_VT_SLICE && tb->kind == KL_VT_SLICE) {
        wtr *o = wadd_tr(C, KL_VT_SLICE);
        o->nu = o->nl = 1;
        o->u[0] = ta->u[0];
        o->l[0] = tb->l[0];
        o->np = 2;
        o->p[0] = ta->p[0] + tb->p[0];
        o->p[1] = tb->p[0] + ta->p[1];
        continue;
      }
    }
    if (nA == 1 && A->t[as[0]].kind == KL_VT_MERGE) {
      /* Merge whose outputs feed PassThroughs and Merges: one flat Merge. */
      const wtr *ta = &A->t[as[0]];
      bool ok = true;
      for (int k = 0; k < nB; k++) ok &= B->t[bs[k]].kind == KL_VT_PASSTHROUGH || B->t[bs[k]].kind == KL_VT_MERGE;
      if (ok) {
        wtr *o = wadd_tr(C, KL_VT_MERGE);
        o->nu = 1;
        o->u[0] = ta->u[0];
        for (int j = 0; j < ta->nl; j++) {
          const wtr *tb = &B->t[consB[ta->l[j]]];
          if (tb->kind == KL_VT_PASSTHROUGH) {
            o->l[o->nl++] = tb->l[0];
            o->p[o->np++] = ta->p[j];
          } else
            for (int k = 0; k < tb->nl; k++) {
              o->l[o->nl++] = tb->l[k];
              o->p[o->np++] = tb->p[k];
            }
        }
        continue;
      }
    }
    if (nB == 1 && (B->t[bs[0]].kind == KL_VT_UNMERGE || B->t[bs[0]].kind == KL_VT_EMBED)) {
      /* Unmerge / Embed whose inputs come from PassThroughs and Unmerges: one flat
       * Unmerge / Embed (Unmerge outputs are always in range, so no check is lost). */
      const wtr *tb = &B->t[bs[0]];
      bool ok = true;
      for (int k = 0; k < nA; k++) ok &= A->t[as[k]].kind == KL_VT_PASSTHROUGH || A->t[as[k]].kind == KL_VT_UNMERGE;
      if (ok) {
        wtr o = { .kind = tb->kind, .nl = 1 };
        o.l[0] = tb->l[0];
        for (int j = 0; j < tb->nu && ok; j++) {
          const wtr *ta = &A->t[prodA[tb->u[j]]];
          if (ta->kind == KL_VT_PASSTHROUGH) {
            o.u[o.nu++] = ta->u[0];
            o.p[o.np++] = tb->p[j];
            continue;
          }
          int64_t stride = 1;
          int base = o.nu;
          o.nu += ta->nu;
          o.np += ta->nu;
          for (int k = ta->nu - 1; k >= 0; k--) {
            o.u[base + k] = ta->u[k];
            if (tb->kind == KL_VT_UNMERGE)
              o.p[base + k] = ta->p[k];
            else if (__builtin_mul_overflow(tb->p[j], stride, &o.p[base + k]) || o.p[base + k] > KL_VIEW_MAX_SIZE ||
                     o.p[base + k] < -KL_VIEW_MAX_SIZE)
              ok = false;
            stride *= ta->p[k];
          }
        }
        if (ok) {
          *wadd_tr(C, o.kind) = o;
          continue;
        }
      }
    }
    return false;
  }
  return true;
}

/* Removes mid dims drop[0..n) (sorted ascending) from A's lower and B's upper side. */
static void drop_mid_dims(wmap *A, wmap *B, const int *drop, int n) {
  int remap[MAXD], k = 0, nd = 0;
  for (int d = 0; d < A->nl; d++) {
    if (nd < n && drop[nd] == d) {
      remap[d] = -1;
      nd++;
      continue;
    }
    remap[d] = k;
    A->ln[k] = A->ln[d];
    A->ls[k] = A->ls[d];
    B->un[k] = B->un[d];
    B->us[k] = B->us[d];
    k++;
  }
  A->nl = B->nu = k;
  for (int i = 0; i < A->nt; i++) {
    wtr *t = &A->t[i];
    int m = 0;
    for (int j = 0; j < t->nl; j++)
      if (remap[t->l[j]] >= 0) t->l[m++] = remap[t->l[j]];
    t->nl = m;
  }
  for (int i = 0; i < B->nt; i++) {
    wtr *t = &B->t[i];
    int m = 0;
    for (int j = 0; j < t->nu; j++)
      if (remap[t->u[j]] >= 0) t->u[m++] = remap[t->u[j]];
    t->nu = m;
  }
}

/* A Merge in A whose consecutive outputs are consecutive inputs of an Unmerge in B:
 * both use one combined dim instead. */
static bool collapse(wmap *A, wmap *B) {
  for (int i = 0; i < A->nt; i++) {
    wtr *ta = &A->t[i];
    if (ta->kind != KL_VT_MERGE || ta->nl < 2) continue;
    for (int j = 0; j < B->nt; j++) {
      wtr *tb = &B->t[j];
      if (tb->kind != KL_VT_UNMERGE || tb->nu < 2) continue;
      for (int p = 0; p + 1 < ta->nl; p++) {
        for (int q = 0; q + 1 < tb->nu; q++) {
          int r = 0;
          while (p + r < ta->nl && q + r < tb->nu && ta->l[p + r] == tb->u[q + r]) r++;
          if (r < 2) continue;
          int64_t prod = 1;
          for (int k = 0; k < r; k++) prod *= ta->p[p + k];
          int keep = ta->l[p], drop[MAXD];
          for (int k = 1; k < r; k++) drop[k - 1] = ta->l[p + k];
          /* parameters: replace the run by its product */
          ta->p[p] = prod;
          memmove(&ta->p[p + 1], &ta->p[p + r], (ta->np - p - r) * sizeof(int64_t));
          ta->np -= r - 1;
          tb->p[q] = prod;
          memmove(&tb->p[q + 1], &tb->p[q + r], (tb->np - q - r) * sizeof(int64_t));
          tb->np -= r - 1;
          A->ls[keep] = prod;
          B->us[keep] = prod;
          for (int x = 0; x < r - 1; x++) /* sort drop ascending */
            for (int y = x + 1; y < r - 1; y++)
              if (drop[y] < drop[x]) {
                int s = drop[x];
                drop[x] = drop[y];
                drop[y] = s;
              }
          drop_mid_dims(A, B, drop, r - 1);
          return true;
        }
      }
    }
  }
  return false;
}

static int tr_key(const wtr *t) { return t->nu ? t->u[0] : MAXD + (t->nl ? t->l[0] : 0); }
static void sort_trans(wmap *w) {
  for (int i = 1; i < w->nt; i++) {
    wtr x = w->t[i];
    int j = i - 1;
    while (j >= 0 && tr_key(&w->t[j]) > tr_key(&x)) {
      w->t[j + 1] = w->t[j];
      j--;
    }
    w->t[j + 1] = x;
  }
}

kl_view *kl_view_simplify(const kl_view *v) {
  int n = v->nmaps;
  wmap *w = kl_xmalloc(n * sizeof *w);
  wmap *tmp = kl_xmalloc(sizeof *tmp);
  for (int i = 0; i < n; i++) {
    wmap_from(&w[i], &v->maps[i]);
    normalize(&w[i]);
  }
  for (int iter = 0; iter < 1000; iter++) {
    bool changed = false;
    /* drop identity maps (linear pass; keep one map; keep top and bottom names) */
    const char *top_names[MAXD];
    bool pending = false;
    int k = 0;
    for (int i = 0; i < n; i++) {
      bool last = i == n - 1;
      if (is_identity(&w[i]) && !(last && k == 0)) {
        if (k == 0 && !pending) {
          memcpy(top_names, w[i].un, sizeof top_names);
          pending = true;
        }
        if (last) memcpy(w[k - 1].ln, w[i].ln, sizeof w[i].ln);
        changed = true;
        continue;
      }
      if (k != i) w[k] = w[i];
      if (pending) {
        memcpy(w[k].un, top_names, sizeof top_names);
        pending = false;
      }
      k++;
    }
    n = k;
    /* fuse adjacent maps (linear pass: w[k] accumulates) */
    k = 0;
    for (int i = 1; i < n; i++) {
      if (fuse(&w[k], &w[i], tmp)) {
        w[k] = *tmp;
        normalize(&w[k]);
        changed = true;
        continue;
      }
      if (++k != i) w[k] = w[i];
    }
    n = k + 1;
    for (int i = 0; i + 1 < n; i++)
      if (collapse(&w[i], &w[i + 1])) {
        normalize(&w[i]);
        normalize(&w[i + 1]);
        changed = true;
      }
    if (!changed) break;
  }
  for (int i = 0; i < n; i++) sort_trans(&w[i]);
  kl_view *r = wmaps_make(n, w, NULL);
  free(w);
  free(tmp);
  return r ? r : kl_view_clone(v); /* never expected; keeps the contract "never fails" */
}

/* ------------------------------------------------------------------ invert */

static kl_view *invert_with(const kl_view *v, unsigned flags, kl_view_err *err) {
  int n = v->nmaps;
  wmap *w = kl_xmalloc(n * sizeof *w);
  for (int i = 0; i < n; i++) {
    const kl_vmap *m = &v->maps[n - 1 - i];
    wmap *o = &w[i];
    memset(o, 0, sizeof *o);
    o->nu = m->nlower;
    o->nl = m->nupper;
    for (int d = 0; d < m->nlower; d++) {
      o->un[d] = m->lower_names[d];
      o->us[d] = m->lower_sizes[d];
    }
    for (int d = 0; d < m->nupper; d++) {
      o->ln[d] = m->upper_names[d];
      o->ls[d] = m->upper_sizes[d];
    }
    for (int ti = 0; ti < m->ntrans; ti++) {
      const kl_vtrans *t = &m->trans[ti];
      wtr *x = wadd_tr(o, t->kind);
      x->nu = t->nlower;
      x->nl = t->nupper;
      x->np = t->nparams;
      memcpy(x->u, t->lower, t->nlower * sizeof(int));
      memcpy(x->l, t->upper, t->nupper * sizeof(int));
      memcpy(x->p, t->params, t->nparams * sizeof(int64_t));
      bool ok = true;
      switch (t->kind) {
        case KL_VT_PASSTHROUGH: break;
        case KL_VT_MERGE: x->kind = KL_VT_UNMERGE; break;
        case KL_VT_UNMERGE: x->kind = KL_VT_MERGE; break;
        case KL_VT_ADDDIM:
          x->kind = KL_VT_CONSTDIM;
          x->np = 2 * t->nupper;
          for (int j = 0; j < t->nupper; j++) {
            ok &= t->params[j] == 1;
            x->p[2 * j] = 0;
            x->p[2 * j + 1] = 1;
          }
          break;
        case KL_VT_CONSTDIM:
          x->kind = KL_VT_ADDDIM;
          x->np = t->nlower;
          for (int j = 0; j < t->nlower; j++) {
            ok &= t->params[2 * j] == 0 && t->params[2 * j + 1] == 1;
            x->p[j] = 1;
          }
          break;
        case KL_VT_SLICE: /* l = u + b  ->  u = l - b: Pad{b, size - e}, outside [b, e) invalid */
          ok = (flags & KL_VIEW_INVERT_SLICE) != 0;
          x->kind = KL_VT_PAD;
          for (int j = 0; j < t->nupper; j++) {
            x->p[2 * j] = t->params[2 * j];
            x->p[2 * j + 1] = m->lower_sizes[t->lower[j]] - t->params[2 * j + 1];
          }
          break;
        case KL_VT_PAD: /* l = u - left  ->  u = l + left: Slice{left, left + size} */
          ok = (flags & KL_VIEW_INVERT_PAD) != 0;
          x->kind = KL_VT_SLICE;
          for (int j = 0; j < t->nupper; j++) {
            x->p[2 * j] = t->params[2 * j];
            x->p[2 * j + 1] = t->params[2 * j] + m->lower_sizes[t->lower[j]];
          }
          break;
        case KL_VT_XOR: break; /* its own inverse: (r, c') -> (r, c' XOR ((r / d) mod m)) */
        default: ok = false;
      }
      if (!ok) {
        kl_sb sb = { 0 };
        kl_vtrans_print_sb(&sb, m, t);
        verr(err, 0, 0, "cannot invert view: map %d transform %d %s is not invertible", n - 1 - i, ti, kl_sb_str(&sb));
        kl_sb_free(&sb);
        free(w);
        return NULL;
      }
    }
  }
  kl_view *r = wmaps_make(n, w, err);
  free(w);
  return r;
}
kl_view *kl_view_invert(const kl_view *v, kl_view_err *err) { return invert_with(v, 0, err); }
kl_view *kl_view_invert_partial(const kl_view *v, unsigned flags, kl_view_err *err) {
  return invert_with(v, flags & (KL_VIEW_INVERT_SLICE | KL_VIEW_INVERT_PAD), err);
}

/* ------------------------------------------------------------------ bounds */

typedef struct ivl {
  int64_t lo, hi;
  uint32_t mask;
} ivl;

/* Interval analysis over the stack. Fills *mask with the upper dims feeding a
 * transform that can go out of range; if qm >= 0, returns whether transform (qm, qt)
 * can. */
static bool bounds_run(const kl_view *v, uint32_t *mask, int qm, int qt) {
  ivl a[MAXD], b[MAXD];
  bool qres = false;
  uint32_t bad = 0;
  const kl_vmap *top = &v->maps[0];
  for (int d = 0; d < top->nupper; d++) a[d] = (ivl){ 0, top->upper_sizes[d] - 1, 1u << d };
  for (int mi = 0; mi < v->nmaps; mi++) {
    const kl_vmap *m = &v->maps[mi];
    for (int ti = 0; ti < m->ntrans; ti++) {
      const kl_vtrans *t = &m->trans[ti];
      const int64_t *p = t->params;
      bool risky = false;
      switch (t->kind) {
        case KL_VT_PASSTHROUGH:
          for (int i = 0; i < t->nupper; i++) b[t->lower[i]] = a[t->upper[i]];
          break;
        case KL_VT_SLICE:
          for (int i = 0; i < t->nupper; i++) {
            ivl x = a[t->upper[i]];
            x.lo += p[2 * i];
            x.hi += p[2 * i];
            b[t->lower[i]] = x;
          }
          break;
        case KL_VT_PAD:
          for (int i = 0; i < t->nupper; i++) {
            ivl x = a[t->upper[i]];
            int64_t L = m->lower_sizes[t->lower[i]];
            x.lo -= p[2 * i];
            x.hi -= p[2 * i];
            if (x.lo < 0 || x.hi >= L) {
              risky = true;
              bad |= x.mask;
            }
            if (x.lo < 0) x.lo = 0;
            if (x.hi > L - 1) x.hi = L - 1;
            if (x.lo > x.hi) x.lo = x.hi = 0;
            b[t->lower[i]] = x;
          }
          break;
        case KL_VT_EMBED:
        case KL_VT_UNMERGE: {
          ivl x = { 0, 0, 0 };
          int64_t stride = 1;
          for (int i = t->nupper - 1; i >= 0; i--) {
            ivl y = a[t->upper[i]];
            int64_t c = t->kind == KL_VT_EMBED ? p[i] : stride;
            if (t->kind == KL_VT_UNMERGE) stride *= p[i];
            x.lo += c >= 0 ? c * y.lo : c * y.hi;
            x.hi += c >= 0 ? c * y.hi : c * y.lo;
            if (c != 0) x.mask |= y.mask;
          }
          int64_t L = m->lower_sizes[t->lower[0]];
          if (t->kind == KL_VT_EMBED && (x.lo < 0 || x.hi >= L)) {
            risky = true;
            bad |= x.mask;
          }
          if (x.lo < 0) x.lo = 0;
          if (x.hi > L - 1) x.hi = L - 1;
          if (x.lo > x.hi) x.lo = x.hi = 0;
          b[t->lower[0]] = x;
          break;
        }
        case KL_VT_MERGE: {
          ivl x = a[t->upper[0]];
          int64_t stride = 1;
          for (int i = t->nlower - 1; i >= 0; i--) {
            int64_t s = p[i];
            int64_t qlo = x.lo / stride, qhi = x.hi / stride;
            ivl y = { 0, s - 1, x.mask };
            if (i == 0) {
              y.lo = qlo;
              y.hi = qhi < s - 1 ? qhi : s - 1;
            } else if (qlo / s == qhi / s) {
              y.lo = qlo % s;
              y.hi = qhi % s;
            }
            b[t->lower[i]] = y;
            stride *= s;
          }
          break;
        }
        case KL_VT_ADDDIM: break;
        case KL_VT_BROADCAST:
          for (int i = 0; i < t->nupper; i++) {
            ivl x = a[t->upper[i]];
            if (!(x.lo >= 0 && x.hi < p[i])) {
              x.lo = 0;
              x.hi = p[i] - 1;
            }
            b[t->lower[i]] = x;
          }
          break;
        case KL_VT_CONSTDIM:
          for (int i = 0; i < t->nlower; i++) b[t->lower[i]] = (ivl){ p[2 * i], p[2 * i], 0 };
          break;
        case KL_VT_XOR: { /* the column stays in its aligned block of m */
          ivl r = a[t->upper[0]], c = a[t->upper[1]];
          b[t->lower[0]] = r;
          c.mask |= r.mask;
          c.lo = c.lo / p[1] * p[1];
          c.hi = c.hi / p[1] * p[1] + p[1] - 1;
          b[t->lower[1]] = c;
          break;
        }
      }
      if (mi == qm && ti == qt) qres = risky;
    }
    memcpy(a, b, sizeof a);
  }
  if (mask) *mask = bad;
  return qres;
}

uint32_t kl_view_invalid_dims(const kl_view *v) {
  uint32_t m;
  bounds_run(v, &m, -1, -1);
  return m;
}
bool kl_view_trans_may_be_invalid(const kl_view *v, int m, int t) { return bounds_run(v, NULL, m, t); }

/* ------------------------------------------------------------------ builders */

/* A new top map whose lower side is v's upper side. */
static void mb_init(wmap *w, const kl_view *v) {
  memset(w, 0, sizeof *w);
  const kl_vmap *top = &v->maps[0];
  w->nl = top->nupper;
  for (int d = 0; d < w->nl; d++) {
    w->ln[d] = top->upper_names[d];
    w->ls[d] = top->upper_sizes[d];
  }
}
static int mb_up(wmap *w, const char *name, int64_t size) {
  int i = w->nu++;
  w->un[i] = name;
  w->us[i] = size;
  return i;
}
static void mb_pt(wmap *w, int lower) {
  int u = mb_up(w, w->ln[lower], w->ls[lower]);
  wtr *t = wadd_tr(w, KL_VT_PASSTHROUGH);
  t->nu = t->nl = 1;
  t->u[0] = u;
  t->l[0] = lower;
}
static kl_view *push_map(const kl_view *v, const wmap *top, kl_view_err *err) {
  int n = v->nmaps + 1;
  kl_vmap *maps = kl_xmalloc(n * sizeof *maps);
  kl_vtrans tb[MAXT];
  wmap_to(top, &maps[0], tb);
  memcpy(maps + 1, v->maps, v->nmaps * sizeof *maps);
  kl_view *r = kl_view_make(n, maps, err);
  free(maps);
  return r;
}
static bool find_dims(const kl_view *v, int n, const char *const *names, int *idx, kl_view_err *err) {
  if (n < 0 || n > MAXD) {
    verr(err, 0, 0, "bad dim count %d", n);
    return false;
  }
  for (int i = 0; i < n; i++) {
    idx[i] = names && names[i] ? kl_view_dim(v, names[i]) : -1;
    if (idx[i] < 0) {
      verr(err, 0, 0, "the view has no upper dim named \"%s\"", names && names[i] ? names[i] : "(null)");
      return false;
    }
    for (int j = 0; j < i; j++)
      if (idx[j] == idx[i]) {
        verr(err, 0, 0, "dim \"%s\" is named twice", names[i]);
        return false;
      }
  }
  return true;
}
static int pos_in(const int *idx, int n, int d) {
  for (int i = 0; i < n; i++)
    if (idx[i] == d) return i;
  return -1;
}

kl_view *kl_view_identity(int rank, const int64_t *shape, const char *const *names, kl_view_err *err) {
  if (rank < 0 || rank > MAXD) {
    verr(err, 0, 0, "rank %d outside [0, %d]", rank, MAXD);
    return NULL;
  }
  char auto_names[MAXD][16];
  wmap *w = kl_xcalloc(1, sizeof *w);
  w->nu = w->nl = rank;
  for (int d = 0; d < rank; d++) {
    snprintf(auto_names[d], sizeof auto_names[d], "d%d", d);
    w->un[d] = w->ln[d] = names ? names[d] : auto_names[d];
    w->us[d] = w->ls[d] = shape[d];
    wtr *t = wadd_tr(w, KL_VT_PASSTHROUGH);
    t->nu = t->nl = 1;
    t->u[0] = t->l[0] = d;
  }
  kl_view *v = wmaps_make(1, w, err);
  free(w);
  return v;
}

kl_view *kl_view_passthrough(const kl_view *v, int n, const char *const *names, const char *const *from,
                             kl_view_err *err) {
  int idx[MAXD];
  if (n != kl_view_rank(v)) {
    verr(err, 0, 0, "passthrough: %d names for a view of rank %d", n, kl_view_rank(v));
    return NULL;
  }
  if (!find_dims(v, n, from, idx, err)) return NULL;
  wmap *w = kl_xmalloc(sizeof *w);
  mb_init(w, v);
  for (int i = 0; i < n; i++) {
    int u = mb_up(w, names[i], w->ls[idx[i]]);
    wtr *t = wadd_tr(w, KL_VT_PASSTHROUGH);
    t->nu = t->nl = 1;
    t->u[0] = u;
    t->l[0] = idx[i];
  }
  kl_view *r = push_map(v, w, err);
  free(w);
  return r;
}

kl_view *kl_view_transpose(const kl_view *v, int n, const int *perm, kl_view_err *err) {
  int r = kl_view_rank(v);
  if (n != r) {
    verr(err, 0, 0, "transpose: permutation of %d entries for a view of rank %d", n, r);
    return NULL;
  }
  const char *from[MAXD];
  bool seen[MAXD] = { false };
  for (int i = 0; i < n; i++) {
    if (perm[i] < 0 || perm[i] >= r || seen[perm[i]]) {
      verr(err, 0, 0, "transpose: not a permutation (entry %d = %d)", i, perm[i]);
      return NULL;
    }
    seen[perm[i]] = true;
    from[i] = kl_view_name(v, perm[i]);
  }
  return kl_view_passthrough(v, n, from, from, err);
}

static kl_view *elementwise(const kl_view *v, kl_vkind kind, int n, const char *const *names, const int64_t *p,
                            kl_view_err *err) {
  int idx[MAXD];
  if (!find_dims(v, n, names, idx, err)) return NULL;
  wmap *w = kl_xmalloc(sizeof *w);
  mb_init(w, v);
  for (int d = 0; d < w->nl; d++) {
    int k = pos_in(idx, n, d);
    if (k < 0) {
      mb_pt(w, d);
      continue;
    }
    int64_t size = w->ls[d];
    wtr *t = wadd_tr(w, kind);
    t->nu = t->nl = 1;
    t->l[0] = d;
    /* wrapping sums: any int64 parameters are user input; validation reports the bad ones */
    if (kind == KL_VT_PAD) {
      t->np = 2;
      t->p[0] = p[2 * k];
      t->p[1] = p[2 * k + 1];
      size = wadd(wadd(w->ls[d], p[2 * k]), p[2 * k + 1]);
    } else if (kind == KL_VT_SLICE) {
      t->np = 2;
      t->p[0] = p[2 * k];
      t->p[1] = p[2 * k + 1];
      size = (int64_t)((uint64_t)p[2 * k + 1] - (uint64_t)p[2 * k]);
    } else { /* broadcast: modulus = lower size */
      t->np = 1;
      t->p[0] = w->ls[d];
      size = p[k];
      if (size < 1 || size > KL_VIEW_MAX_SIZE) {
        verr(err, 0, 0, "broadcast: size %lld of dim \"%s\" outside [1, 2^40]", (long long)size, w->ln[d]);
        free(w);
        return NULL;
      }
    }
    if (size < 1) size = 1; /* validation reports the bad pad/slice parameters */
    t->u[0] = mb_up(w, w->ln[d], size);
  }
  kl_view *r = push_map(v, w, err);
  free(w);
  return r;
}
kl_view *kl_view_xor(const kl_view *v, const char *row, const char *col, int64_t d, int64_t m, kl_view_err *err) {
  const char *names[2] = { row, col };
  int idx[2];
  if (!find_dims(v, 2, names, idx, err)) return NULL;
  if (idx[0] == idx[1]) {
    verr(err, 0, 0, "xor: the row and the column are the same dim \"%s\"", row);
    return NULL;
  }
  wmap *w = kl_xmalloc(sizeof *w);
  mb_init(w, v);
  wtr *t = wadd_tr(w, KL_VT_XOR);
  t->nu = t->nl = 2;
  t->np = 2;
  t->p[0] = d;
  t->p[1] = m;
  t->l[0] = idx[0];
  t->l[1] = idx[1];
  for (int x = 0; x < w->nl; x++) {
    if (x == idx[0] || x == idx[1]) {
      t = &w->t[0];
      t->u[x == idx[0] ? 0 : 1] = mb_up(w, w->ln[x], w->ls[x]);
    } else
      mb_pt(w, x);
  }
  kl_view *r = push_map(v, w, err);
  free(w);
  return r;
}
kl_view *kl_view_pad(const kl_view *v, int n, const char *const *names, const int64_t *lr, kl_view_err *err) {
  return elementwise(v, KL_VT_PAD, n, names, lr, err);
}
kl_view *kl_view_slice(const kl_view *v, int n, const char *const *names, const int64_t *be, kl_view_err *err) {
  return elementwise(v, KL_VT_SLICE, n, names, be, err);
}
kl_view *kl_view_broadcast(const kl_view *v, int n, const char *const *names, const int64_t *sizes, kl_view_err *err) {
  return elementwise(v, KL_VT_BROADCAST, n, names, sizes, err);
}

static kl_view *split(const kl_view *v, kl_vkind kind, const char *dim, int n, const char *const *names,
                      const int64_t *sizes, const int64_t *coeffs, kl_view_err *err) {
  int j;
  if (!find_dims(v, 1, &dim, &j, err)) return NULL;
  if (n < 1 || n > MAXD || kl_view_rank(v) - 1 + n > MAXD) {
    verr(err, 0, 0, "%s: bad dim count %d", kl_vkind_name(kind), n);
    return NULL;
  }
  wmap *w = kl_xmalloc(sizeof *w);
  mb_init(w, v);
  for (int d = 0; d < w->nl; d++) {
    if (d != j) {
      mb_pt(w, d);
      continue;
    }
    wtr *t = wadd_tr(w, kind);
    t->nl = 1;
    t->l[0] = d;
    t->nu = n;
    t->np = n;
    for (int i = 0; i < n; i++) {
      t->u[i] = mb_up(w, names[i], sizes[i]);
      t->p[i] = kind == KL_VT_EMBED ? coeffs[i] : sizes[i];
    }
  }
  kl_view *r = push_map(v, w, err);
  free(w);
  return r;
}
kl_view *kl_view_embed(const kl_view *v, const char *dim, int n, const char *const *names, const int64_t *sizes,
                       const int64_t *coeffs, kl_view_err *err) {
  return split(v, KL_VT_EMBED, dim, n, names, sizes, coeffs, err);
}
kl_view *kl_view_unmerge(const kl_view *v, const char *dim, int n, const char *const *names, const int64_t *sizes,
                         kl_view_err *err) {
  return split(v, KL_VT_UNMERGE, dim, n, names, sizes, NULL, err);
}

kl_view *kl_view_merge(const kl_view *v, const char *name, int n, const char *const *from, kl_view_err *err) {
  int idx[MAXD];
  if (n < 1) {
    verr(err, 0, 0, "merge: needs at least one dim");
    return NULL;
  }
  if (!find_dims(v, n, from, idx, err)) return NULL;
  int first = idx[0];
  for (int i = 1; i < n; i++)
    if (idx[i] < first) first = idx[i];
  wmap *w = kl_xmalloc(sizeof *w);
  mb_init(w, v);
  for (int d = 0; d < w->nl; d++) {
    if (d == first) {
      int64_t prod = 1;
      for (int i = 0; i < n; i++) {
        if (__builtin_mul_overflow(prod, w->ls[idx[i]], &prod) || prod > KL_VIEW_MAX_SIZE) {
          verr(err, 0, 0, "merge: size product overflows");
          free(w);
          return NULL;
        }
      }
      wtr *t = wadd_tr(w, KL_VT_MERGE);
      t->nu = 1;
      t->u[0] = mb_up(w, name, prod);
      t->nl = t->np = n;
      for (int i = 0; i < n; i++) {
        t->l[i] = idx[i];
        t->p[i] = w->ls[idx[i]];
      }
    } else if (pos_in(idx, n, d) < 0)
      mb_pt(w, d);
  }
  kl_view *r = push_map(v, w, err);
  free(w);
  return r;
}

kl_view *kl_view_add_dim(const kl_view *v, const char *name, int64_t size, int pos, kl_view_err *err) {
  int r = kl_view_rank(v);
  if (pos < 0 || pos > r || r + 1 > MAXD) {
    verr(err, 0, 0, "add_dim: position %d outside [0, %d]", pos, r);
    return NULL;
  }
  wmap *w = kl_xmalloc(sizeof *w);
  mb_init(w, v);
  for (int d = 0; d <= w->nl; d++) {
    if (d == pos) {
      wtr *t = wadd_tr(w, KL_VT_ADDDIM);
      t->nu = 1;
      t->np = 1;
      t->p[0] = size;
      t->u[0] = mb_up(w, name, size);
    }
    if (d < w->nl) mb_pt(w, d);
  }
  kl_view *res = push_map(v, w, err);
  free(w);
  return res;
}

kl_view *kl_view_const_dim(const kl_view *v, const char *name, int64_t value, kl_view_err *err) {
  int j;
  if (!find_dims(v, 1, &name, &j, err)) return NULL;
  wmap *w = kl_xmalloc(sizeof *w);
  mb_init(w, v);
  for (int d = 0; d < w->nl; d++) {
    if (d != j) {
      mb_pt(w, d);
      continue;
    }
    wtr *t = wadd_tr(w, KL_VT_CONSTDIM);
    t->nl = 1;
    t->l[0] = d;
    t->np = 2;
    t->p[0] = value;
    t->p[1] = w->ls[d];
  }
  kl_view *r = push_map(v, w, err);
  free(w);
  return r;
}

/* Unique name not among used[0..n): base, base_1, base_2, ... */
static const char *uniq_name(kl_arena *ar, const char *base, const char *const *used, int n) {
  char buf[KL_VIEW_MAX_NAME + 1];
  snprintf(buf, sizeof buf, "%.40s", base);
  for (int k = 1;; k++) {
    bool clash = false;
    for (int i = 0; i < n && !clash; i++) clash = used[i] && strcmp(used[i], buf) == 0;
    if (!clash) return kl_arena_strdup(ar, buf);
    snprintf(buf, sizeof buf, "%.40s_%d", base, k);
  }
}

kl_view *kl_view_reshape(const kl_view *v, int rank, const int64_t *shape, const char *const *names, kl_view_err *err) {
  int r = kl_view_rank(v);
  if (rank < 0 || rank > MAXD) {
    verr(err, 0, 0, "reshape: rank %d outside [0, %d]", rank, MAXD);
    return NULL;
  }
  int64_t total_in = kl_view_numel(v), total_out = 1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 1 || __builtin_mul_overflow(total_out, shape[i], &total_out) || total_out > KL_VIEW_MAX_SIZE) {
      verr(err, 0, 0, "reshape: bad size %lld at dim %d", (long long)shape[i], i);
      return NULL;
    }
  }
  if (total_in != total_out) {
    verr(err, 0, 0, "reshape: %lld elements cannot become %lld", (long long)total_in, (long long)total_out);
    return NULL;
  }
  kl_arena ar;
  kl_arena_init(&ar);
  const char *tn[MAXD];
  for (int i = 0; i < rank; i++) {
    if (names)
      tn[i] = names[i];
    else {
      char b[16];
      snprintf(b, sizeof b, "r%d", i);
      tn[i] = kl_arena_strdup(&ar, b);
    }
  }
  const kl_vmap *top = &v->maps[0];
  /* groups: S-side dims [s0,s1), T-side dims [t0,t1) with equal products */
  int gs0[2 * MAXD], gs1[2 * MAXD], gt0[2 * MAXD], gt1[2 * MAXD], ng = 0;
  int i = 0, j = 0;
  while (i < r || j < rank) {
    int64_t ps = 1, pt = 1;
    gs0[ng] = i;
    gt0[ng] = j;
    if (i < r) ps *= top->upper_sizes[i++];
    if (j < rank) pt *= shape[j++];
    while (ps != pt) {
      if (ps < pt)
        ps *= top->upper_sizes[i++];
      else
        pt *= shape[j++];
    }
    gs1[ng] = i;
    gt1[ng] = j;
    ng++;
  }
  /* top map: T -> mid (k:m groups with k,m > 1 become one temp dim); bottom map: mid -> S */
  wmap *w = kl_xcalloc(2, sizeof *w);
  wmap *A = &w[0], *B = &w[1];
  B->nl = r;
  for (int d = 0; d < r; d++) {
    B->ln[d] = top->upper_names[d];
    B->ls[d] = top->upper_sizes[d];
  }
  bool need_top = false;
  for (int g = 0; g < ng; g++) {
    int ns = gs1[g] - gs0[g], nt = gt1[g] - gt0[g];
    if (ns > 1 && nt > 1) {
      need_top = true;
      int64_t prod = 1;
      for (int k = gt0[g]; k < gt1[g]; k++) prod *= shape[k];
      const char *used[3 * MAXD];
      int nu = 0;
      for (int k = 0; k < rank; k++) used[nu++] = tn[k];
      for (int k = 0; k < B->nu; k++) used[nu++] = B->un[k];
      const char *tmpn = uniq_name(&ar, "tmp", used, nu);
      int mid = mb_up(B, tmpn, prod);
      wtr *t = wadd_tr(B, KL_VT_MERGE);
      t->nu = 1;
      t->u[0] = mid;
      t->nl = t->np = ns;
      for (int k = 0; k < ns; k++) {
        t->l[k] = gs0[g] + k;
        t->p[k] = B->ls[gs0[g] + k];
      }
      /* top map part */
      t = wadd_tr(A, KL_VT_UNMERGE);
      t->nl = 1;
      t->l[0] = mid;
      t->nu = t->np = nt;
      for (int k = 0; k < nt; k++) {
        t->u[k] = gt0[g] + k;
        t->p[k] = shape[gt0[g] + k];
      }
      continue;
    }
    int mids[MAXD];
    for (int k = 0; k < nt; k++) {
      mids[k] = mb_up(B, tn[gt0[g] + k], shape[gt0[g] + k]);
      wtr *t = wadd_tr(A, KL_VT_PASSTHROUGH);
      t->nu = t->nl = 1;
      t->u[0] = gt0[g] + k;
      t->l[0] = mids[k];
    }
    wtr *t;
    if (ns == 1 && nt == 1) {
      t = wadd_tr(B, KL_VT_PASSTHROUGH);
      t->nu = t->nl = 1;
      t->u[0] = mids[0];
      t->l[0] = gs0[g];
    } else if (ns == 0) {
      t = wadd_tr(B, KL_VT_ADDDIM);
      t->nu = t->np = nt;
      for (int k = 0; k < nt; k++) {
        t->u[k] = mids[k];
        t->p[k] = 1;
      }
    } else if (nt == 0) {
      t = wadd_tr(B, KL_VT_CONSTDIM);
      t->nl = ns;
      t->np = 2 * ns;
      for (int k = 0; k < ns; k++) {
        t->l[k] = gs0[g] + k;
        t->p[2 * k] = 0;
        t->p[2 * k + 1] = 1;
      }
    } else if (nt == 1) {
      t = wadd_tr(B, KL_VT_MERGE);
      t->nu = 1;
      t->u[0] = mids[0];
      t->nl = t->np = ns;
      for (int k = 0; k < ns; k++) {
        t->l[k] = gs0[g] + k;
        t->p[k] = B->ls[gs0[g] + k];
      }
    } else {
      t = wadd_tr(B, KL_VT_UNMERGE);
      t->nl = 1;
      t->l[0] = gs0[g];
      t->nu = t->np = nt;
      for (int k = 0; k < nt; k++) {
        t->u[k] = mids[k];
        t->p[k] = shape[gt0[g] + k];
      }
    }
  }
  A->nl = B->nu;
  memcpy(A->ln, B->un, sizeof A->ln);
  memcpy(A->ls, B->us, sizeof A->ls);
  A->nu = rank;
  for (int k = 0; k < rank; k++) {
    A->un[k] = tn[k];
    A->us[k] = shape[k];
  }
  kl_view *res = NULL;
  if (B->nt > MAXT || A->nt > MAXT)
    verr(err, 0, 0, "reshape: too many transforms");
  else {
    int n = v->nmaps + (need_top ? 2 : 1);
    kl_vmap *maps = kl_xmalloc(n * sizeof *maps);
    kl_vtrans tb[2][MAXT];
    int k = 0;
    if (need_top)
      wmap_to(A, &maps[k++], tb[0]);
    else
      memcpy(B->un, tn, rank * sizeof *tn); /* mids are the T dims in order */
    wmap_to(B, &maps[k++], tb[1]);
    memcpy(maps + k, v->maps, v->nmaps * sizeof *maps);
    res = kl_view_make(n, maps, err);
    free(maps);
  }
  free(w);
  kl_arena_destroy(&ar);
  return res;
}

/* ------------------------------------------------------------------ printer */

static void print_names(kl_sb *sb, int n, const int *idx, const char *const *names) {
  kl_sb_putc(sb, '[');
  for (int i = 0; i < n; i++) {
    if (i) kl_sb_putc(sb, ',');
    kl_sb_printf(sb, "\"%s\"", names[idx[i]]);
  }
  kl_sb_puts(sb, "] at [");
  for (int i = 0; i < n; i++) kl_sb_printf(sb, "%s%d", i ? "," : "", idx[i]);
  kl_sb_putc(sb, ']');
}
static void print_ints(kl_sb *sb, int n, const int64_t *v) {
  kl_sb_putc(sb, '[');
  for (int i = 0; i < n; i++) kl_sb_printf(sb, "%s%lld", i ? "," : "", (long long)v[i]);
  kl_sb_putc(sb, ']');
}
void kl_vtrans_print_sb(kl_sb *sb, const kl_vmap *m, const kl_vtrans *t) {
  kl_sb_puts(sb, kl_vkind_name(t->kind));
  if (t->nparams) {
    kl_sb_putc(sb, '{');
    for (int i = 0; i < t->nparams; i++) kl_sb_printf(sb, "%s%lld", i ? "," : "", (long long)t->params[i]);
    kl_sb_putc(sb, '}');
  }
  kl_sb_putc(sb, ' ');
  print_names(sb, t->nupper, t->upper, m->upper_names);
  kl_sb_puts(sb, " -> ");
  print_names(sb, t->nlower, t->lower, m->lower_names);
}
void kl_vmap_print_sb(kl_sb *sb, const kl_vmap *m) {
  kl_sb_putc(sb, '[');
  for (int t = 0; t < m->ntrans; t++) {
    if (t) kl_sb_puts(sb, ", ");
    kl_vtrans_print_sb(sb, m, &m->trans[t]);
  }
  kl_sb_puts(sb, "] bounds=");
  print_ints(sb, m->nupper, m->upper_sizes);
  kl_sb_puts(sb, " -> ");
  print_ints(sb, m->nlower, m->lower_sizes);
}
void kl_view_print_sb(kl_sb *sb, const kl_view *v) {
  for (int i = 0; i < v->nmaps; i++) {
    if (i) kl_sb_puts(sb, " | ");
    kl_vmap_print_sb(sb, &v->maps[i]);
  }
}
char *kl_view_print(const kl_view *v) {
  kl_sb sb = { 0 };
  kl_view_print_sb(&sb, v);
  return kl_sb_take(&sb);
}

/* ------------------------------------------------------------------ parser */

typedef struct vparser {
  const char *s;
  size_t n, i;
  kl_view_err *err;
  bool failed;
  kl_arena *ar;
} vparser;

static void pos_of(const vparser *p, size_t off, int *line, int *col) {
  int l = 1, c = 1;
  for (size_t k = 0; k < off && k < p->n; k++) {
    if (p->s[k] == '\n') {
      l++;
      c = 1;
    } else
      c++;
  }
  *line = l;
  *col = c;
}
static bool perr(vparser *p, size_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool perr(vparser *p, size_t off, const char *fmt, ...) {
  if (p->failed) return false;
  p->failed = true;
  if (!p->err) return false;
  int line, col;
  pos_of(p, off, &line, &col);
  p->err->line = line;
  p->err->col = col;
  va_list ap;
  va_start(ap, fmt);
  kl_verrf(p->err->msg, sizeof p->err->msg, fmt, ap);
  va_end(ap);
  return false;
}
static void skip_ws(vparser *p) {
  while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')) p->i++;
}
static bool at_end(vparser *p) {
  skip_ws(p);
  return p->i >= p->n;
}
static bool peek(vparser *p, const char *tok) {
  skip_ws(p);
  size_t k = strlen(tok);
  return p->i + k <= p->n && memcmp(p->s + p->i, tok, k) == 0;
}
static bool accept(vparser *p, const char *tok) {
  if (!peek(p, tok)) return false;
  p->i += strlen(tok);
  return true;
}
static void describe(vparser *p, char *buf, size_t n) {
  skip_ws(p);
  if (p->i >= p->n) {
    snprintf(buf, n, "end of text");
    return;
  }
  size_t k = 0;
  while (p->i + k < p->n && k < 12 && p->s[p->i + k] != ' ' && p->s[p->i + k] != '\n') k++;
  if (k == 0) k = 1;
  snprintf(buf, n, "'%.*s'", (int)k, p->s + p->i);
}
static bool expect(vparser *p, const char *tok, const char *what) {
  if (accept(p, tok)) return true;
  char got[32];
  describe(p, got, sizeof got);
  return perr(p, p->i, "expected '%s'%s%s, got %s", tok, what ? " " : "", what ? what : "", got);
}
static bool parse_int(vparser *p, int64_t *out) {
  skip_ws(p);
  size_t start = p->i, k = p->i;
  bool neg = false;
  if (k < p->n && p->s[k] == '-') {
    neg = true;
    k++;
  }
  if (k >= p->n || p->s[k] < '0' || p->s[k] > '9') {
    char got[32];
    describe(p, got, sizeof got);
    return perr(p, start, "expected an integer, got %s", got);
  }
  int64_t v = 0;
  while (k < p->n && p->s[k] >= '0' && p->s[k] <= '9') {
    int dgt = p->s[k] - '0';
    if (v > ((((int64_t)1 << 62)) - dgt) / 10) return perr(p, start, "integer too large");
    v = v * 10 + dgt;
    k++;
  }
  p->i = k;
  *out = neg ? -v : v;
  return true;
}
/* '[' [int (',' int)*] ']' */
static bool parse_ints(vparser *p, int max, int64_t *out, int *n) {
  *n = 0;
  if (!expect(p, "[", "to open an integer list")) return false;
  if (accept(p, "]")) return true;
  do {
    if (*n >= max) return perr(p, p->i, "too many entries (at most %d)", max);
    if (!parse_int(p, &out[(*n)++])) return false;
  } while (accept(p, ","));
  return expect(p, "]", "to close the integer list");
}
static bool parse_names(vparser *p, const char **out, int *n) {
  *n = 0;
  if (!expect(p, "[", "to open a dim name list")) return false;
  if (accept(p, "]")) return true;
  do {
    skip_ws(p);
    if (*n >= MAXD) return perr(p, p->i, "too many dims (at most %d)", MAXD);
    size_t start = p->i;
    if (!accept(p, "\"")) {
      char got[32];
      describe(p, got, sizeof got);
      return perr(p, p->i, "expected a quoted dim name, got %s", got);
    }
    size_t b = p->i;
    while (p->i < p->n && p->s[p->i] != '"' && p->s[p->i] != '\n') p->i++;
    if (p->i >= p->n || p->s[p->i] != '"') return perr(p, start, "unterminated dim name");
    char *nm = kl_arena_strndup(p->ar, p->s + b, p->i - b);
    p->i++;
    if (!name_ok(nm))
      return perr(p, start, "bad dim name \"%s\" (1..%d chars of [A-Za-z0-9_.$])", nm, KL_VIEW_MAX_NAME);
    out[(*n)++] = nm;
  } while (accept(p, ","));
  return expect(p, "]", "to close the dim name list");
}

typedef struct ptrans {
  size_t off, dims_off;
} ptrans;

static bool parse_map(vparser *p, wmap *w, size_t *map_off) {
  memset(w, 0, sizeof *w);
  skip_ws(p);
  *map_off = p->i;
  ptrans pt[MAXT];
  const char *tun[MAXT][MAXD], *tln[MAXT][MAXD];
  if (!expect(p, "[", "to open a transform map")) return false;
  if (!peek(p, "]")) {
    do {
      skip_ws(p);
      if (w->nt >= MAXT) return perr(p, p->i, "too many transforms (at most %d)", MAXT);
      size_t off = p->i, k = p->i;
      while (k < p->n && ((p->s[k] >= 'a' && p->s[k] <= 'z') || (p->s[k] >= 'A' && p->s[k] <= 'Z'))) k++;
      if (k == off) {
        char got[32];
        describe(p, got, sizeof got);
        return perr(p, off, "expected a transform kind, got %s", got);
      }
      int kind = kl_vkind_from_name(p->s + off, k - off);
      if (kind < 0) return perr(p, off, "unknown transform kind '%.*s'", (int)(k - off), p->s + off);
      p->i = k;
      wtr *t = wadd_tr(w, (kl_vkind)kind);
      pt[w->nt - 1].off = off;
      if (accept(p, "{")) {
        if (!accept(p, "}")) {
          do {
            if (t->np >= MAXP) return perr(p, p->i, "too many parameters (at most %d)", MAXP);
            if (!parse_int(p, &t->p[t->np++])) return false;
          } while (accept(p, ","));
          if (!expect(p, "}", "to close the parameters")) return false;
        }
      }
      int nn;
      skip_ws(p);
      pt[w->nt - 1].dims_off = p->i;
      int64_t dims[MAXD];
      int nd;
      if (!parse_names(p, tun[w->nt - 1], &nn)) return false;
      size_t at_off = (skip_ws(p), p->i);
      if (!expect(p, "at", "after the upper dim names")) return false;
      if (!parse_ints(p, MAXD, dims, &nd)) return false;
      if (nd != nn) return perr(p, at_off, "%d upper dim names but %d upper dims", nn, nd);
      t->nu = nd;
      for (int i = 0; i < nd; i++) {
        if (dims[i] < 0 || dims[i] >= MAXD)
          return perr(p, at_off, "upper dim index %lld out of range", (long long)dims[i]);
        t->u[i] = (int)dims[i];
      }
      if (!expect(p, "->", "between the upper and lower dims")) return false;
      if (!parse_names(p, tln[w->nt - 1], &nn)) return false;
      at_off = (skip_ws(p), p->i);
      if (!expect(p, "at", "after the lower dim names")) return false;
      if (!parse_ints(p, MAXD, dims, &nd)) return false;
      if (nd != nn) return perr(p, at_off, "%d lower dim names but %d lower dims", nn, nd);
      t->nl = nd;
      for (int i = 0; i < nd; i++) {
        if (dims[i] < 0 || dims[i] >= MAXD)
          return perr(p, at_off, "lower dim index %lld out of range", (long long)dims[i]);
        t->l[i] = (int)dims[i];
      }
    } while (accept(p, ","));
  }
  if (!expect(p, "]", "to close the transform list")) return false;
  skip_ws(p);
  size_t bounds_off = p->i;
  if (!expect(p, "bounds", "after the transform list")) return false;
  if (!expect(p, "=", "after 'bounds'")) return false;
  int nu, nl;
  if (!parse_ints(p, MAXD, w->us, &nu)) return false;
  if (!expect(p, "->", "between the upper and lower bounds")) return false;
  if (!parse_ints(p, MAXD, w->ls, &nl)) return false;
  w->nu = nu;
  w->nl = nl;
  /* names from the transforms; coverage */
  for (int ti = 0; ti < w->nt; ti++) {
    wtr *t = &w->t[ti];
    for (int i = 0; i < t->nu; i++) {
      if (t->u[i] >= nu)
        return perr(p, pt[ti].dims_off, "upper dim %d out of range (bounds have %d upper dims)", t->u[i], nu);
      if (w->un[t->u[i]]) return perr(p, pt[ti].dims_off, "upper dim %d is covered twice", t->u[i]);
      w->un[t->u[i]] = tun[ti][i];
    }
    for (int i = 0; i < t->nl; i++) {
      if (t->l[i] >= nl)
        return perr(p, pt[ti].dims_off, "lower dim %d out of range (bounds have %d lower dims)", t->l[i], nl);
      if (w->ln[t->l[i]]) return perr(p, pt[ti].dims_off, "lower dim %d is covered twice", t->l[i]);
      w->ln[t->l[i]] = tln[ti][i];
    }
  }
  for (int d = 0; d < nu; d++)
    if (!w->un[d]) return perr(p, bounds_off, "upper dim %d is not covered by any transform", d);
  for (int d = 0; d < nl; d++)
    if (!w->ln[d]) return perr(p, bounds_off, "lower dim %d is not covered by any transform", d);
  kl_vmap m;
  kl_vtrans tb[MAXT];
  wmap_to(w, &m, tb);
  int bad;
  kl_view_err e;
  if (!kl_vmap_check(&m, &bad, &e)) return perr(p, bad >= 0 ? pt[bad].off : bounds_off, "%s", e.msg);
  return true;
}

kl_view *kl_view_parse(const char *text, size_t len, kl_view_err *err) {
  kl_arena ar;
  kl_arena_init(&ar);
  vparser p = { .s = text ? text : "", .n = text ? len : 0, .err = err, .ar = &ar };
  int cap = 4, n = 0;
  wmap *w = kl_xmalloc(cap * sizeof *w);
  kl_view *res = NULL;
  for (;;) {
    if (n == KL_VIEW_MAX_MAPS) {
      skip_ws(&p);
      perr(&p, p.i, "too many maps (at most %d)", KL_VIEW_MAX_MAPS);
      goto done;
    }
    if (n == cap) {
      cap *= 2;
      w = kl_xrealloc(w, cap * sizeof *w);
    }
    size_t off;
    if (!parse_map(&p, &w[n], &off)) goto done;
    if (n > 0) {
      kl_vmap a, b;
      kl_vtrans ta[MAXT], tb[MAXT];
      wmap_to(&w[n - 1], &a, ta);
      wmap_to(&w[n], &b, tb);
      kl_view_err e;
      if (!check_adjacent(&a, &b, n - 1, &e)) {
        perr(&p, off, "%s", e.msg);
        goto done;
      }
    }
    n++;
    if (!accept(&p, "|")) break;
  }
  if (!at_end(&p)) {
    char got[32];
    describe(&p, got, sizeof got);
    perr(&p, p.i, "expected '|' or the end of the view, got %s", got);
    goto done;
  }
  res = wmaps_make(n, w, err);
done:
  free(w);
  kl_arena_destroy(&ar);
  return res;
}
