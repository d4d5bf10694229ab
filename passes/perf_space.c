/* perf_space.c — candidate generation, applicability and the quick ranking of
 * perf_space.h. */
#include "passes/perf_space.h"
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REG_BUDGET 192

bool kl_perf_level_parse(const char *s, kl_perf_level *out) {
  static const char *const names[] = { "quick", "full", "exhaustive" };
  for (int i = 0; i < 3; i++)
    if (s && !strcmp(s, names[i])) {
      *out = (kl_perf_level)i;
      return true;
    }
  return false;
}

typedef struct gen {
  kl_perf_space *s;
  int cap;
  size_t hcap;
  int *slot; /* open addressing over config strings: index + 1, 0 = empty */
} gen;

static uint64_t hash(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

static void rehash(gen *g) {
  free(g->slot);
  g->hcap = g->hcap ? 2 * g->hcap : 1024;
  g->slot = calloc(g->hcap, sizeof *g->slot);
  for (int i = 0; i < g->s->n; i++) {
    size_t h = hash(g->s->c[i].config) & (g->hcap - 1);
    while (g->slot[h]) h = (h + 1) & (g->hcap - 1);
    g->slot[h] = i + 1;
  }
}

static void add(gen *g, const char *config) {
  if ((size_t)(g->s->n + 1) * 2 > g->hcap) rehash(g);
  size_t h = hash(config) & (g->hcap - 1);
  for (; g->slot[h]; h = (h + 1) & (g->hcap - 1))
    if (!strcmp(g->s->c[g->slot[h] - 1].config, config)) return;
  if (g->s->n == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 256;
    g->s->c = realloc(g->s->c, (size_t)g->cap * sizeof *g->s->c);
  }
  g->slot[h] = g->s->n + 1;
  kl_perf_candidate *c = &g->s->c[g->s->n++];
  memset(c, 0, sizeof *c);
  snprintf(c->config, sizeof c->config, "%s", config);
}

static void add_v1(gen *g, int64_t mb, int64_t nb, int64_t kb, int64_t mt, int64_t nt, int64_t kp) {
  kl_perf_config pc = { mb, nb, kb, mt, nt, kp, 1 };
  char buf[96];
  add(g, kl_perf_config_print(&pc, buf, sizeof buf));
}

static int tiles(int64_t *out, kl_perf_level lv, bool host) {
  int n = 0;
  if (lv == KL_PERF_EXHAUSTIVE) {
    for (int64_t t = host ? 4 : 8; t <= 256; t += host ? 4 : 8) out[n++] = t;
    return n;
  }
  static const int64_t h[] = { 8, 16, 24, 32, 48, 64, 96, 128, 192, 256 }, d[] = { 16, 32, 64, 128, 256 };
  const int64_t *src = host ? h : d;
  int m = host ? 10 : 5;
  for (int i = 0; i < m; i++) out[n++] = src[i];
  return n;
}

static void generate(gen *g, const kl_perf_problem *p, kl_perf_level lv) {
  const kl_target *t = p->t;
  bool host = t->max_workgroup_size <= 1;
  bool ex = lv == KL_PERF_EXHAUSTIVE;
  int64_t mn[128];
  int nmn = tiles(mn, lv, host);
  if (host) {
    static const int64_t kf[] = { 4, 8, 16, 32, 64, 128, 256 }, kpf[] = { 1, 4 }, kpe[] = { 1, 2, 4, 8 };
    const int64_t *kps = ex ? kpe : kpf;
    int nkp = ex ? 4 : 2;
    for (int a = 0; a < nmn; a++)
      for (int b = 0; b < nmn; b++)
        for (int c = 0; c < 7; c++)
          for (int d = 0; d < nkp; d++) add_v1(g, mn[a], mn[b], kf[c], mn[a], mn[b], kps[d]);
  } else {
    static const int64_t th[] = { 1, 2, 4, 8 }, kf[] = { 4, 8, 16, 32, 64 }, kp[] = { 1, 2, 4, 8 };
    int nk = ex ? 5 : 4, nkp = ex ? 4 : 3;
    for (int a = 0; a < nmn; a++)
      for (int b = 0; b < nmn; b++)
        for (int c = 0; c < nk; c++)
          for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
              for (int d = 0; d < nkp; d++) add_v1(g, mn[a], mn[b], kf[c], th[i], th[j], kp[d]);
  }
  if (p->accel) {
    const kl_accel_desc *d = p->accel;
    static const int64_t wt[] = { 1, 2, 4, 8 };
    int nwt = ex ? 4 : 3, nw = ex ? 8 : 4;
    for (int a = 0; a < nwt; a++)
      for (int b = 0; b < nwt; b++)
        for (int wm = 1; wm <= nw; wm *= 2)
          for (int wn = 1; wn <= nw; wn *= 2)
            for (int ks = 1; ks <= 8; ks *= 2) {
              int64_t mw = wt[a] * d->m, nwv = wt[b] * d->n;
              kl_accel_config c = { mw * wm, nwv * wn, (int64_t)ks * d->k, mw, nwv, d->kpack, 1 };
              if (c.k_per_block % c.kpack) c.k_per_block = c.kpack * ks;
              char buf[96];
              add(g, kl_accel_config_print(&c, buf, sizeof buf));
            }
  }
}

static char *dupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *dupf(const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return strdup(buf);
}

/* The tiles (M, N, K) of a candidate and, on GPUs, its register estimate. */
static char *check(const kl_perf_problem *p, const char *s, int64_t tile[3], double *regs) {
  char err[512];
  const kl_target *t = p->t;
  *regs = 0;
  char *spill = NULL; /* AMDGPU v2: the register estimate's reason, after the budget's */
  double wide = p->elem_bytes > 4 ? 2 : 1;
  if (!strncmp(s, "v2:", 3)) {
    kl_accel_config c;
    if (!kl_accel_config_parse(s, &c, err, sizeof err) ||
        !kl_accel_config_validate(&c, t, p->accel, p->elem_bytes, err, sizeof err))
      return strdup(err);
    if (!kl_accel_amd_fits_registers(&c, t, p->accel, p->elem_bytes, err, sizeof err)) spill = strdup(err);
    const kl_accel_desc *d = p->accel;
    tile[0] = c.m_per_block, tile[1] = c.n_per_block, tile[2] = c.k_per_block;
    double frag = (double)(c.m_per_wave / d->m) * kl_accel_frag_len(&d->a) +
        (double)(c.n_per_wave / d->n) * kl_accel_frag_len(&d->b);
    *regs = (double)kl_accel_acc_per_lane(&c, d) + frag * p->elem_bytes / 4.0;
  } else {
    kl_perf_config c;
    if (!kl_perf_config_parse(s, &c, err, sizeof err) ||
        !kl_perf_config_validate(&c, t, p->elem_bytes, err, sizeof err))
      return strdup(err);
    tile[0] = c.m_per_block, tile[1] = c.n_per_block, tile[2] = c.k_per_block;
    if (t->max_workgroup_size > 1)
      *regs = wide * (double)(c.m_per_thread * c.n_per_thread + c.kpack * (c.m_per_thread + c.n_per_thread));
  }
  if (*regs > REG_BUDGET) {
    free(spill);
    return dupf("perf config %s: about %.0f registers per thread (accumulators and one K step of A and B "
                "fragments) exceed the budget of %d on target %s",
                s, *regs, REG_BUDGET, t->name);
  }
  return spill;
}

char *kl_perf_check(const kl_perf_problem *p, const char *config) {
  int64_t tile[3];
  double regs;
  return check(p, config, tile, &regs);
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static double cost_of(const kl_perf_problem *p, const int64_t tile[3]) {
  double mp = (double)(cdiv(p->m, tile[0]) * tile[0]), np = (double)(cdiv(p->n, tile[1]) * tile[1]);
  double kp = (double)(cdiv(p->k, tile[2]) * tile[2]);
  double c = (double)p->g * mp * np * kp;
  double wg = (double)(p->g * cdiv(p->m, tile[0]) * cdiv(p->n, tile[1]));
  double cu = p->t->compute_units > 1 ? p->t->compute_units : 1;
  c *= wg < cu ? cu / wg : (double)cdiv((int64_t)wg, (int64_t)cu) * cu / wg;
  c *= 1.0 + 8.0 / (double)tile[0] + 8.0 / (double)tile[1] + 4.0 / (double)tile[2]; /* per-tile overheads */
  return c;
}

static int by_cost(const void *a, const void *b) {
  const kl_perf_candidate *x = a, *y = b;
  if (!x->reason != !y->reason) return x->reason ? 1 : -1;
  if (x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
  return strcmp(x->config, y->config);
}

void kl_perf_space_build(const kl_perf_problem *p, kl_perf_level level, kl_perf_space *out) {
  memset(out, 0, sizeof *out);
  gen g = { out, 0, 0, NULL };
  char heur[96] = "";
  if (level == KL_PERF_QUICK) {
    kl_perf_config pc;
    kl_accel_config ac;
    if (p->accel && kl_accel_config_heuristic(p->t, p->accel, p->g, p->m, p->n, p->k, p->elem_bytes, &ac)) {
      /* rock-gemm-to-gridwise's K loop of that tile (kl_accel_amd_k_tile) */
      if (p->amd_k_loop) kl_accel_amd_k_tile(p->t, p->accel, p->g, p->m, p->n, p->k, p->elem_bytes, &ac);
      kl_accel_config_print(&ac, heur, sizeof heur);
    } else if (kl_perf_config_heuristic(p->t, p->g, p->m, p->n, p->k, p->elem_bytes, &pc)) {
      pc.split_k = 1;
      kl_perf_config_print(&pc, heur, sizeof heur);
    }
    if (*heur) add(&g, heur);
  }
  generate(&g, p, level == KL_PERF_QUICK ? KL_PERF_FULL : level);
  free(g.slot);
  int64_t(*tl)[3] = calloc((size_t)out->n + 1, sizeof *tl);
  int64_t cover[3] = { INT64_MAX, INT64_MAX, INT64_MAX }, big[3] = { 0, 0, 0 };
  const int64_t want[3] = { p->m, p->n, p->k };
  double *regs = calloc((size_t)out->n + 1, sizeof *regs);
  for (int i = 0; i < out->n; i++) {
    out->c[i].reason = check(p, out->c[i].config, tl[i], &regs[i]);
    if (out->c[i].reason) continue;
    for (int d = 0; d < 3; d++) {
      if (tl[i][d] >= want[d] && tl[i][d] < cover[d]) cover[d] = tl[i][d];
      if (tl[i][d] > big[d]) big[d] = tl[i][d];
    }
  }
  static const char *const dn[3] = { "M", "N", "K" };
  for (int i = 0; i < out->n; i++) {
    kl_perf_candidate *c = &out->c[i];
    if (c->reason) continue;
    for (int d = 0; d < 3 && !c->reason; d++) {
      int64_t cv = cover[d] == INT64_MAX ? big[d] : cover[d];
      if (tl[i][d] > 2 * cv)
        c->reason = dupf("perf config %s: its %s tile (%lld) is more than twice the %lld that covers %s = %lld "
                         "(only padding)",
                         c->config, dn[d], (long long)tl[i][d], (long long)cv, dn[d], (long long)want[d]);
    }
    if (!c->reason) c->cost = cost_of(p, tl[i]);
  }
  free(tl);
  free(regs);
  if (level == KL_PERF_QUICK) {
    bool keep_first = *heur && out->n && !out->c[0].reason;
    qsort(out->c + (keep_first ? 1 : 0), (size_t)(out->n - (keep_first ? 1 : 0)), sizeof *out->c, by_cost);
    int kept = 0, n = 0; /* applicable ones beyond the first KL_PERF_QUICK_MAX leave the list */
    for (int i = 0; i < out->n; i++)
      if (out->c[i].reason || kept++ < KL_PERF_QUICK_MAX) out->c[n++] = out->c[i];
    out->n = n;
  }
}

void kl_perf_space_free(kl_perf_space *s) {
  for (int i = 0; i < s->n; i++) free(s->c[i].reason);
  free(s->c);
  s->n = 0;
  s->c = NULL;
}
