/* rock_wgmma.c — Hopper warpgroup GEMMs: descriptors, the "v3:" config, the path
 * selection and the blockwise lowering (see rock_wgmma.h). */
#include "passes/rock_wgmma.h"
#include "passes/lower_loops.h"
#include "passes/perf_config.h"
#include "core/view_emit.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LD(i) \
  { 'l', i }
#define ED(i) \
  { 'e', i }
/* A / B: not register operands (read from LDS through descriptors) */
#define WG_AB                                        \
  {                                                  \
    1, { 128 }, 1, { 1 }, 0, { LD(0) }, 0, { LD(0) } \
  }
/* D: lanes [4 (warp w), 8 (g), 4 (t)], registers [N/8 (j), 2 (h), 2 (b)]: m = 16w + 8h + g,
 * n = 8j + 2t + b */
#define WG_C(N)                                                                                  \
  {                                                                                              \
    3, { 4, 8, 4 }, 3, { (N) / 8, 2, 2 }, 3, { LD(0), ED(1), LD(1) }, 3, { ED(0), LD(2), ED(2) } \
  }
/* T: kiln's input type, P: the PTX type, K: the instruction's K (16 for 2-byte inputs, 32
 * for fp8: 16 bytes along K either way) */
#define WG(T, P, K, N)                                                                                               \
  {                                                                                                                  \
    KL_ACCEL_WGMMA, T, "f32", 64, N, K, 128, "wgmma.mma_async.sync.aligned.m64n" #N "k" #K ".f32." P "." P, (K) / 2, \
        WG_AB, WG_AB, WG_C(N)                                                                                        \
  }
#define WG_ALL(T, P, K)                                                                                           \
  WG(T, P, K, 8), WG(T, P, K, 16), WG(T, P, K, 24), WG(T, P, K, 32), WG(T, P, K, 40), WG(T, P, K, 48),            \
      WG(T, P, K, 56), WG(T, P, K, 64), WG(T, P, K, 72), WG(T, P, K, 80), WG(T, P, K, 88), WG(T, P, K, 96),       \
      WG(T, P, K, 104), WG(T, P, K, 112), WG(T, P, K, 120), WG(T, P, K, 128), WG(T, P, K, 136), WG(T, P, K, 144), \
      WG(T, P, K, 152), WG(T, P, K, 160), WG(T, P, K, 168), WG(T, P, K, 176), WG(T, P, K, 184), WG(T, P, K, 192), \
      WG(T, P, K, 200), WG(T, P, K, 208), WG(T, P, K, 216), WG(T, P, K, 224), WG(T, P, K, 232), WG(T, P, K, 240), \
      WG(T, P, K, 248), WG(T, P, K, 256)
/* f16 / bf16: m64nNk16; fp8 (OCP E4M3 / E5M2, kiln's f8e4m3fn / f8e5m2): m64nNk32 */
static const kl_accel_desc wg_descs[] = { WG_ALL("f16", "f16", 16), WG_ALL("bf16", "bf16", 16),
                                          WG_ALL("f8e4m3fn", "e4m3", 32), WG_ALL("f8e5m2", "e5m2", 32) };
#define NWG (int)(sizeof wg_descs / sizeof *wg_descs)

const kl_accel_desc *kl_wgmma_desc(const char *in_type, int n) {
  for (int i = 0; in_type && i < NWG; i++)
    if (!strcmp(wg_descs[i].in_type, in_type) && wg_descs[i].n == n) return &wg_descs[i];
  return NULL;
}
const kl_accel_desc *kl_wgmma_desc_by_name(const char *name) {
  for (int i = 0; name && i < NWG; i++)
    if (!strcmp(wg_descs[i].intrinsic, name)) return &wg_descs[i];
  return NULL;
}

uint64_t kl_wgmma_desc_encode(uint32_t byte_addr, int64_t lbo_bytes, int64_t sbo_bytes) {
  return (uint64_t)((byte_addr & 0x3ffffu) >> 4) | ((uint64_t)((lbo_bytes >> 4) & 0x3fff) << 16) |
      ((uint64_t)((sbo_bytes >> 4) & 0x3fff) << 32);
}

uint64_t kl_wgmma_desc_swizzle_bits(int64_t bytes) {
  uint64_t m = bytes == 128 ? 1 : bytes == 64 ? 2 : bytes == 32 ? 3 : 0;
  return m << 62;
}

/* ---- config ---- */
#define FMT3 "v3:mPerBlock,nPerBlock,kPerBlock,mPerWave,nPerWave,kpack"
bool kl_wgmma_config_parse(const char *s, kl_accel_config *out, char *err, size_t errlen) {
  if (!s || strncmp(s, "v3:", 3))
    return kl_perf_errf(err, errlen, "wgmma perf config \"%s\": expected the version prefix \"v3:\" (" FMT3 ")",
                        s ? s : "");
  int64_t v[7];
  if (!kl_perf_fields_parse(s, s + 3, kl_accel_config_fields, FMT3, v, err, errlen)) return false;
  *out = (kl_accel_config){ v[0], v[1], v[2], v[3], v[4], v[5], v[6] };
  return true;
}
char *kl_wgmma_config_print(const kl_accel_config *c, char *buf, size_t n) {
  kl_accel_config_print(c, buf, n);
  if (n > 1) buf[1] = '3'; /* "v2:..." -> "v3:..." */
  return buf;
}

/* The instruction N for nPerWave: itself up to 256, else the largest multiple of 8 <= 256
 * dividing it; 0 if none. */
static int instr_n(int64_t npw) {
  if (npw < 8 || npw % 8) return 0;
  for (int n = 256; n >= 8; n -= 8)
    if (npw % n == 0) return n;
  return 0;
}

static bool validate(const kl_accel_config *c, const kl_target *t, const kl_accel_desc *d, int eb, char *err,
                     size_t errlen) {
  char s[160];
  kl_wgmma_config_print(c, s, sizeof s);
  if (c->kpack * eb != 16)
    return kl_perf_errf(err, errlen,
                        "perf config %s: kpack (%lld) * %d bytes must be 16 (wgmma reads LDS in 8-row x 16-byte core "
                        "matrices)",
                        s, (long long)c->kpack, eb);
  if (!kl_accel_config_validate(c, t, d, eb, err, errlen)) {
    char *p = err ? strstr(err, "v2:") : NULL;
    if (p) p[1] = '3';
    return false;
  }
  return true;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

double kl_wgmma_tile_cost(const kl_target *t, int eb, int64_t g, int64_t m, int64_t n, int64_t k, int64_t MB,
                          int64_t NB, int64_t KB) {
  int64_t cus = t && t->compute_units > 0 ? t->compute_units : 1;
  int64_t rounds = cdiv(g * cdiv(m, MB) * cdiv(n, NB), cus), nk = cdiv(k, KB);
  double mma = 2.0 * (double)(MB * NB * KB) / KL_WG_FLOP_PER_CLK;
  double load = (double)((MB + NB) * KB * eb) / KL_WG_L2_BYTES_PER_CLK;
  return (double)rounds * ((double)nk * ((mma > load ? mma : load) + KL_WG_STEP_CLK) + KL_WG_TILE_CLK);
}

/* The sub-wave choice (rock_wgmma.h: kl_wgmma_tile_cost): the cheapest validating candidate
 * tile (ties: the earlier) for a few-wave grid; false when none validates. */
static bool subwave_pick(const kl_target *t, const char *in, int eb, int64_t g, int64_t m, int64_t n, int64_t k,
                         int64_t KB, kl_accel_config *c, const kl_accel_desc **d, double *best) {
  /* N tiles up to 192: 128x256 and 128x224 with a register-staged operand (a 3x3 conv's
   * im2col view) spilled 84 / 56 bytes (ptxas sm_90a, 255 registers); 128x192 took 244 */
  static const int64_t cand[][2] = { { 128, 128 }, { 128, 192 }, { 128, 96 }, { 128, 64 }, { 64, 128 } };
  bool found = false;
  for (size_t i = 0; i < sizeof cand / sizeof *cand; i++) {
    int64_t MB = cand[i][0], NB = cand[i][1];
    /* no wider than the GEMM needs: M tiles of 64 only where that is all of M or the grid gains */
    if (NB > 64 && cdiv(n, NB) == cdiv(n, NB / 2) && NB / 2 >= 64) continue;
    kl_accel_config cc = { MB, NB, KB, 64, NB, 16 / eb, 1 };
    const kl_accel_desc *cd = kl_wgmma_desc(in, (int)NB);
    if (!cd || !validate(&cc, t, cd, eb, NULL, 0)) continue;
    double cost = kl_wgmma_tile_cost(t, eb, g, m, n, k, MB, NB, KB);
    if (!found || cost < *best) *best = cost, *c = cc, *d = cd, found = true;
  }
  return found;
}

int kl_wgmma_select(const kl_target *t, const kl_type *in_a, const kl_type *in_b, const char *given, int64_t g,
                    int64_t m, int64_t n, int64_t k, kl_accel_config *c, const kl_accel_desc **d, char *err,
                    size_t errlen) {
  const char *in = in_a == in_b && in_a ? kl_scalar_name(in_a->kind) : NULL;
  bool ok_type = in && kl_wgmma_desc(in, 8); /* f16, bf16, f8e4m3fn, f8e5m2 */
  if (!t || !t->wgmma || !ok_type) {
    if (!given) return 0;
    if (!t || !t->wgmma)
      return kl_perf_errf(err, errlen,
                          "perf config \"%s\": a v3 (wgmma) config needs a target with wgmma (sm_90a), not %s", given,
                          t ? t->name : "?"),
             -1;
    return kl_perf_errf(err, errlen,
                        "perf config \"%s\": wgmma takes f16 or bf16 (or fp8: f8e4m3fn, f8e5m2) inputs of one type, "
                        "got %s x %s",
                        given, in_a ? kl_type_str(in_a) : "?", in_b ? kl_type_str(in_b) : "?"),
           -1;
  }
  int eb = (kl_type_bits(in_a) + 7) / 8;
  int64_t ks = 2 / eb; /* K tiles in elements: the f16 choices' bytes (fp8: twice the elements) */
  kl_accel_config cc;
  const kl_accel_desc *dd = NULL;
  if (given) {
    if (!kl_wgmma_config_parse(given, &cc, err, errlen)) return -1;
    int nn = instr_n(cc.n_per_wave);
    dd = nn ? kl_wgmma_desc(in, nn) : NULL;
    if (!dd) {
      char s[160];
      return kl_perf_errf(err, errlen, "perf config %s: nPerWave (%lld) must be a multiple of 8 (the wgmma N)",
                          kl_wgmma_config_print(&cc, s, sizeof s), (long long)cc.n_per_wave),
             -1;
    }
    if (!validate(&cc, t, dd, eb, err, errlen)) return -1;
  } else {
    /* N tiles: N rounded up to 8 when below 64 (no padding to 64 columns), else 64 / 128;
     * the first that validates (the block size must divide the LDS tiles' elements) */
    int64_t n8 = (n + 7) / 8 * 8, cand[3] = { n8 < 64 ? n8 : 0, 64, 128 };
    int64_t cus = t->compute_units > 0 ? t->compute_units : 1;
    /* large GEMMs: 128x256 block tiles, two warpgroups of m64n256k16 (half the LDS bytes
     * per MMA of two m64n128k16), where they need no padding (the bounds checks of odd
     * sizes took ptxas past 255 registers: 16 to 250 spilled bytes), leave a tile per
     * compute unit and the K loop has steps to pipeline; f16 / bf16 K tiles of 64 where K has
     * at least 3 of them (the 3-buffer loop; H100 4096^3 f16: 457 vs 377 TFLOP/s for 32),
     * else 32 (kl_wgmma_wide_staging takes 64 back to 32); fp8 64 elements (the bytes of 32) */
    if (m % 128 == 0 && n % 256 == 0 && k % (32 * ks) == 0 && k >= 128 * ks && g * (m / 128) * (n / 256) >= cus) {
      cc = (kl_accel_config){ 128, 256, ks == 1 && k % 64 == 0 && k >= 192 ? 64 : 32 * ks, 64, 256, 16 / eb, 1 };
      const kl_accel_desc *cd = kl_wgmma_desc(in, 256);
      if (cd && validate(&cc, t, cd, eb, NULL, 0)) dd = cd;
    }
    bool large = dd != NULL; /* the measured large-GEMM tiles stay (a wave or more of them) */
    for (int i = n <= 64 ? 0 : 2; i < 3 && !dd; i++) {
      if (!cand[i]) continue;
      cc.split_k = 1;
      cc.m_per_wave = 64;
      cc.n_per_wave = cand[i];
      cc.n_per_block = cc.n_per_wave;
      cc.m_per_block = 128;
      if (m <= 64 || 2 * g * cdiv(m, 128) * cdiv(n, cc.n_per_block) < cus) cc.m_per_block = 64;
      cc.k_per_block = ks * (k <= 16 * ks ? 16 : k <= 32 * ks ? 32 : 64);
      cc.kpack = 16 / eb;
      const kl_accel_desc *cd = kl_wgmma_desc(in, (int)cc.n_per_wave);
      if (cd && validate(&cc, t, cd, eb, NULL, 0)) dd = cd;
    }
    if (!dd) return 0;
    /* few waves of the rule's tiles (f16 / bf16): the model's cheapest tile where it gains
     * (kl_wgmma_tile_cost, rock_wgmma.h) */
    double rule = kl_wgmma_tile_cost(t, eb, g, m, n, k, cc.m_per_block, cc.n_per_block, cc.k_per_block), best = 0;
    kl_accel_config sc;
    const kl_accel_desc *sd = NULL;
    if (!large && ks == 1 && t->compute_units > 0 &&
        g * cdiv(m, cc.m_per_block) * cdiv(n, cc.n_per_block) < KL_WG_FEW_WAVES * cus &&
        subwave_pick(t, in, eb, g, m, n, k, cc.k_per_block, &sc, &sd, &best) && best < KL_WG_SUBWAVE_GAIN * rule)
      cc = sc, dd = sd;
  }
  *c = cc;
  *d = dd;
  return 1;
}

bool kl_wgmma_narrow_loads(kl_accel_config *c, int64_t bytes) {
  int64_t kpb = bytes <= 2 ? 16 : bytes < 16 ? 32 : c->k_per_block;
  if (c->kpack != 8 || c->k_per_block <= kpb) return false; /* f16 / bf16 (kpack 8) */
  c->k_per_block = kpb;
  return true;
}

bool kl_wgmma_wide_staging(kl_accel_config *c) {
  if (c->m_per_block != 128 || c->n_per_block != 256 || c->k_per_block != 64) return false;
  c->k_per_block = 32;
  return true;
}

/* ---- blockwise lowering ---- */
static bool attr_i64(kl_op *op, const char *name, int64_t *out) { return kl_op_attr_i64(op, name, out) && *out >= 1; }

/* An operand's LDS tile [KB, DB] as core matrices (see the header): 8 rows (M / N) of
 * 16 bytes (kpe = 16 / element bytes elements along K: 8 for f16 / bf16, 16 for fp8), or
 * (sw > 0) the K-major sw-byte swizzled layout: panels of KS = sw / element bytes K
 * elements, pbo elements apart, rows sw bytes apart, 8-row groups sbo apart. */
typedef struct {
  kl_value *raw;            /* the underlying LDS buffer */
  kl_view *view;            /* (k, d) -> raw's coordinates */
  int64_t o, lbo, sbo, pbo; /* elements */
  int64_t sw;               /* swizzle bytes (0: none) */
  bool mn;                  /* MN-major (swizzled): lbo the M / N panel stride, sbo the 8-row K group stride */
} core_layout;

/* The per-element check of a swizzled layout, once per layout: the pipeline stages' LDS
 * buffers of an operand are one layout at different offsets (the view's bottom map a Slice of
 * one flat buffer), and the check compares addresses relative to the tile origin, so its
 * outcome does not depend on that offset. Outcomes are kept per context (contexts are used by
 * one thread at a time), keyed by the view without that Slice (else the whole view), the raw
 * buffer's strides and the layout's parameters; PROOF_SLOTS of them, oldest replaced first. */
#define PROOF_SLOTS 8
typedef struct {
  char *key[PROOF_SLOTS];
  bool ok[PROOF_SLOTS];
  int next;
} proof_cache;
static void proof_cache_free(void *u) {
  proof_cache *c = u;
  for (int i = 0; i < PROOF_SLOTS; i++) free(c->key[i]);
  free(c);
}
static proof_cache *proofs(kl_ctx *ctx) {
  proof_cache *c = kl_ctx_get_user(ctx, "rock_wgmma.proofs");
  if (!c) {
    c = kl_xcalloc(1, sizeof *c);
    kl_ctx_set_user(ctx, "rock_wgmma.proofs", c);
    kl_ctx_on_destroy(ctx, proof_cache_free, c);
  }
  return c;
}
static char *proof_key(const core_layout *L, int64_t KB, int64_t DB, int64_t eb) {
  const kl_view *v = L->view;
  const kl_vmap *b = &v->maps[v->nmaps - 1];
  const kl_type *rt = L->raw->type;
  kl_view *top = NULL;
  if (v->nmaps > 1 && b->ntrans == 1 && b->trans[0].kind == KL_VT_SLICE && b->nupper == 1 && rt->rank == 1)
    top = kl_view_make(v->nmaps - 1, v->maps, NULL); /* address = (top's + begin) * stride */
  kl_sb sb = { 0 };
  kl_sb_printf(&sb, "%s %lld %lld %lld %lld %d %lld %lld %lld |", top ? "S" : "F", (long long)KB, (long long)DB,
               (long long)eb, (long long)L->sw, (int)L->mn, (long long)L->lbo, (long long)L->sbo, (long long)L->pbo);
  for (int i = 0; i < rt->rank; i++) kl_sb_printf(&sb, " %lld", (long long)rt->strides[i]);
  kl_sb_printf(&sb, " | ");
  kl_view_print_sb(&sb, top ? top : v);
  kl_view_free(top);
  return kl_sb_take(&sb);
}
/* at(L, k, d, eb) is the element offset layout L gives (k, d); whether the view agrees on
 * every element of the [KB, DB] tile (looked up in, then added to, the context's outcomes) */
static bool every_element(kl_ctx *ctx, const core_layout *L, int64_t KB, int64_t DB, int64_t eb,
                          int64_t (*at)(const core_layout *, int64_t, int64_t, int64_t)) {
  proof_cache *c = ctx ? proofs(ctx) : NULL;
  char *key = c ? proof_key(L, KB, DB, eb) : NULL;
  for (int i = 0; c && i < PROOF_SLOTS; i++)
    if (c->key[i] && !strcmp(c->key[i], key)) {
      free(key);
      return c->ok[i];
    }
  const int64_t *st = L->raw->type->strides;
  bool ok = true;
  for (int64_t k = 0; k < KB && ok; k++)
    for (int64_t d = 0; d < DB && ok; d++) {
      int64_t u[2] = { k, d };
      bool v = true;
      ok = kl_view_eval_addr(L->view, u, st, &v) == at(L, k, d, eb) && v;
    }
  if (c) {
    free(c->key[c->next]);
    c->key[c->next] = key;
    c->ok[c->next] = ok;
    c->next = (c->next + 1) % PROOF_SLOTS;
  }
  return ok;
}

/* the element offset of (k, d) in the sw-byte swizzled layout of L (eb-byte elements) */
static int64_t swz_at(const core_layout *L, int64_t k, int64_t d, int64_t eb) {
  int64_t ks = L->sw / eb;
  int64_t lin = ((k / ks) * L->pbo + (d / 8) * L->sbo + (d % 8) * ks + k % ks) * eb;
  return L->o + kl_swizzle_addr(lin, L->sw) / eb;
}
/* Whether the tile's view is the sw-byte swizzled K-major layout (sets L's offsets). */
static bool prove_swizzled(kl_ctx *ctx, core_layout *L, int64_t KB, int64_t DB, int64_t eb, int64_t sw) {
  const int64_t *st = L->raw->type->strides;
  int64_t ks = sw / eb, up[2] = { 0, 0 };
  if (KB % ks || DB % 8) return false;
  bool valid = true;
  int64_t o = kl_view_eval_addr(L->view, up, st, &valid);
  up[0] = KB > ks ? ks : 0;
  int64_t a1 = kl_view_eval_addr(L->view, up, st, &valid);
  up[0] = 0, up[1] = DB > 8 ? 8 : 0;
  int64_t a2 = kl_view_eval_addr(L->view, up, st, &valid);
  L->o = o, L->sw = sw, L->lbo = 16 / eb;
  L->pbo = KB > ks ? a1 - o : 8 * ks;
  L->sbo = DB > 8 ? a2 - o : 8 * ks;
  int64_t atom = 8 * sw / eb;
  if (!valid || o % atom || L->pbo % atom || L->sbo % atom || L->pbo <= 0 || L->sbo <= 0 || L->sbo * eb >= (1 << 18))
    return false;
  return every_element(ctx, L, KB, DB, eb, swz_at);
}

/* the element offset of (k, d) in the sw-byte swizzled MN-major layout of L: panels of MS =
 * sw / eb elements of M / N (lbo apart), row k of a panel (sw bytes) holding them, 8-row K
 * groups sbo apart */
static int64_t swz_mn_at(const core_layout *L, int64_t k, int64_t d, int64_t eb) {
  int64_t ms = L->sw / eb;
  int64_t lin = ((d / ms) * L->lbo + (k / 8) * L->sbo + (k % 8) * ms + d % ms) * eb;
  return L->o + kl_swizzle_addr(lin, L->sw) / eb;
}
static bool prove_swizzled_mn(kl_ctx *ctx, core_layout *L, int64_t KB, int64_t DB, int64_t eb, int64_t sw) {
  const int64_t *st = L->raw->type->strides;
  int64_t ms = sw / eb, up[2] = { 0, 0 };
  if (DB % ms || KB % 8) return false;
  bool valid = true;
  int64_t o = kl_view_eval_addr(L->view, up, st, &valid);
  up[1] = DB > ms ? ms : 0;
  int64_t a1 = kl_view_eval_addr(L->view, up, st, &valid);
  up[1] = 0, up[0] = KB > 8 ? 8 : 0;
  int64_t a2 = kl_view_eval_addr(L->view, up, st, &valid);
  int64_t atom = 8 * ms;
  L->o = o, L->sw = sw, L->mn = true, L->pbo = 0;
  L->lbo = DB > ms ? a1 - o : atom;
  L->sbo = KB > 8 ? a2 - o : atom;
  if (!valid || o % atom || L->lbo % atom || L->sbo % atom || L->lbo <= 0 || L->sbo <= 0 || L->sbo * eb >= (1 << 18) ||
      L->lbo * eb >= (1 << 18))
    return false;
  return every_element(ctx, L, KB, DB, eb, swz_mn_at);
}

static bool prove_layout(kl_ctx *ctx, kl_value *lds, int64_t KB, int64_t DB, int64_t kpe, core_layout *L, char *err,
                         size_t errlen) {
  kl_vb b;
  int64_t shape[2] = { KB, DB };
  const char *names[2] = { "k", "d" };
  kl_vb_identity(&b, 2, shape, names);
  kl_view *top = kl_vb_finish(&b, err, errlen);
  if (!top) return false;
  L->view = kl_tile_compose_to_buffer(top, lds, &L->raw, err, errlen);
  kl_view_free(top);
  if (!L->view) return false;
  const kl_type *rt = L->raw->type;
  if (rt->kind != KL_TY_BUFFER || rt->space != KL_SPACE_LDS) {
    snprintf(err, errlen, "the tile is not in LDS");
    return false;
  }
  int64_t eb = 16 / kpe;
  for (int64_t sw = 128; sw >= 32; sw /= 2) /* the swizzled layouts (TMA's) */
    if (prove_swizzled(ctx, L, KB, DB, eb, sw)) return true;
  if (eb == 2) /* MN-major (transposed) operands: 16-bit types only */
    for (int64_t sw = 128; sw >= 32; sw /= 2)
      if (prove_swizzled_mn(ctx, L, KB, DB, eb, sw)) return true;
  L->sw = 0, L->pbo = 0, L->mn = false;
  int64_t up[2] = { 0, 0 };
  bool valid = true;
  L->o = kl_view_eval_addr(L->view, up, rt->strides, &valid);
  up[1] = DB > 8 ? 8 : 0;
  int64_t a1 = kl_view_eval_addr(L->view, up, rt->strides, &valid);
  up[0] = kpe;
  up[1] = 0;
  int64_t a2 = kl_view_eval_addr(L->view, up, rt->strides, &valid);
  L->sbo = DB > 8 ? a1 - L->o : 8 * kpe;
  L->lbo = a2 - L->o;
  /* the descriptor's offsets are 14 bits of 16 bytes: below 2^18 bytes = 2^14 kpe elements */
  if (!valid || L->o % kpe || L->sbo % kpe || L->lbo % kpe || L->sbo <= 0 || L->lbo <= 0 || L->sbo >= kpe * 16384 ||
      L->lbo >= kpe * 16384 || DB % 8 || KB % (2 * kpe)) {
    snprintf(err, errlen,
             "the LDS tile [%lld, %lld] is neither made of 16-byte aligned 8-row x 16-byte core matrices nor a "
             "128 / 64 / 32-byte swizzled K-major layout",
             (long long)KB, (long long)DB);
    return false;
  }
  for (int64_t k = 0; k < KB; k++)
    for (int64_t d = 0; d < DB; d++) {
      int64_t u[2] = { k, d };
      bool v = true;
      int64_t a = kl_view_eval_addr(L->view, u, rt->strides, &v);
      if (!v || a != L->o + kpe * (d % 8) + k % kpe + L->sbo * (d / 8) + L->lbo * (k / kpe)) {
        snprintf(err, errlen,
                 "the LDS tile [%lld, %lld] is not a core-matrix layout (nor a swizzled one) at (k %lld, d %lld): "
                 "element %lld, expected %lld",
                 (long long)KB, (long long)DB, (long long)k, (long long)d, (long long)a,
                 (long long)(L->o + kpe * (d % 8) + k % kpe + L->sbo * (d / 8) + L->lbo * (k / kpe)));
        return false;
      }
    }
  return true;
}
/* The element offset along K of K step k0 (a multiple of the instruction's K) from the
 * tile origin: LBO per core matrix; swizzled: PBO per panel plus k0 % KS elements. */
static int64_t k_offset(const core_layout *L, int64_t k0, int64_t kpe) {
  if (L->mn) return L->sbo * (k0 / 8);
  if (!L->sw) return L->lbo * (k0 / kpe);
  int64_t ks = L->sw / (16 / kpe);
  return (k0 / ks) * L->pbo + k0 % ks;
}

/* The element offset along M / N of row d0 (a multiple of 8; MN-major: of the panel) */
static int64_t d_offset(const core_layout *L, int64_t d0, int64_t eb) {
  return L->mn ? L->lbo * (d0 / (L->sw / eb)) : L->sbo * (d0 / 8);
}
/* The descriptor of the tile element (0, d0) plus `offset` bytes (the lowering adds it
 * where the descriptor is used, so that one base per tile stays live across the K loop).
 * On a 1-D LDS buffer (the K loop's buffers joined into one), with d0 a multiple of 8, the
 * element is O + SBO * d0/8 of the proven layout: the constant O joins the offset, so the tiles of every buffer share one base (only d0 varies: the warpgroup's
 * origin) instead of one live descriptor per buffer. */
static kl_value *make_desc(kl_rewriter *rw, kl_loc loc, const core_layout *L, kl_value *d0, int eb, int64_t offset) {
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_emitter e = { rw, loc };
  kl_value *o[1 + KL_VIEW_MAX_DIMS];
  o[0] = L->raw;
  int rank = L->raw->type->rank;
  if (rank == 1) { /* MN-major: d0 a multiple of the panel (passes/rock_gridwise_to_blockwise.c) */
    o[1] = L->mn ? kl_emit_muli(&e, kl_emit_divi(&e, d0, L->sw / eb), L->lbo)
                 : kl_emit_muli(&e, kl_emit_divi(&e, d0, 8), L->sbo);
    offset += L->o * eb;
  } else {
    kl_value *up[2] = { kl_emit_index(&e, 0), d0 }, *lower[KL_VIEW_MAX_DIMS], *valid = NULL;
    kl_view_emit(&e, L->view, up, lower, &valid); /* proven valid on the whole tile */
    for (int i = 0; i < rank; i++) o[1 + i] = lower[i];
  }
  kl_named_attr a[4] = { { "lbo", kl_attr_int(ctx, L->lbo * eb) },
                         { "offset", kl_attr_int(ctx, offset) },
                         { "sbo", kl_attr_int(ctx, L->sbo * eb) },
                         { "swizzle", kl_attr_int(ctx, L->sw) } };
  const kl_type *i64 = kl_type_i64(ctx);
  return kl_op_result(kl_rewriter_create(rw, "rock.wgmma_desc", loc, 1 + rank, o, 1, &i64, L->sw ? 4 : 3, a, 0), 0);
}

static void sync_op(kl_rewriter *rw, kl_loc loc, const char *step) {
  kl_named_attr a = { "step", kl_attr_str(kl_rewriter_ctx(rw), step) };
  kl_rewriter_create(rw, "rock.wgmma_sync", loc, 0, NULL, 0, NULL, 1, &a, 0);
}

void kl_wgmma_emit_acc_wait(kl_rewriter *rw, kl_loc loc, kl_value *acc, const char *instr, int64_t pending) {
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  const kl_accel_desc *d = kl_wgmma_desc_by_name(instr);
  int64_t clen = d ? d->n / 2 : 0, nv = clen ? acc->type->shape[0] / clen : 0;
  if (nv > 64) nv = 0; /* not an accumulator of this instruction: a plain wait */
  kl_ll L;
  kl_ll_init(&L, rw, loc, 0);
  kl_value *vals[64];
  const kl_type *vts[64];
  const kl_type *vt = clen ? kl_type_vector(ctx, kl_type_f32(ctx), (int)clen) : NULL;
  for (int64_t i = 0; i < nv; i++) {
    kl_value *ix = kl_ll_idx(&L, i * clen);
    vals[i] = kl_ll_load(&L, acc, &ix, NULL, clen);
    vts[i] = vt;
  }
  kl_named_attr wa[2] = { { "step", kl_attr_str(ctx, "wait") }, { "pending", kl_attr_int(ctx, pending) } };
  kl_op *w = kl_rewriter_create(rw, "rock.wgmma_sync", loc, (int)nv, vals, (int)nv, vts, 2, wa, 0);
  for (int64_t i = 0; i < nv; i++) {
    kl_value *ix = kl_ll_idx(&L, i * clen);
    kl_ll_store(&L, kl_op_result(w, (int)i), acc, &ix, NULL);
  }
}

void kl_wgmma_emit_promote(kl_rewriter *rw, kl_loc loc, kl_value *main, kl_value *tmp, const char *instr) {
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_wgmma_emit_acc_wait(rw, loc, tmp, instr, 0);
  const kl_accel_desc *d = kl_wgmma_desc_by_name(instr);
  int64_t clen = d ? d->n / 2 : 1, n = tmp->type->shape[0], nv = n / clen;
  if (nv * clen != n) clen = 1, nv = n;
  const kl_type *vt = clen > 1 ? kl_type_vector(ctx, kl_type_f32(ctx), (int)clen) : kl_type_f32(ctx);
  kl_ll L;
  kl_ll_init(&L, rw, loc, 0);
  kl_value *zero = kl_ll_const(&L, vt, 0.0);
  for (int64_t i = 0; i < nv; i++) {
    kl_value *ix = kl_ll_idx(&L, i * clen);
    kl_value *m = kl_ll_load(&L, main, &ix, NULL, clen), *t = kl_ll_load(&L, tmp, &ix, NULL, clen);
    kl_ll_store(&L, kl_ll_op2(&L, "arith.addf", m, t, vt), main, &ix, NULL);
    kl_ll_store(&L, zero, tmp, &ix, NULL);
  }
}

bool kl_wgmma_instr_is_fp8(const char *instr) {
  return instr && strstr(instr, "wgmma.") && (strstr(instr, ".e4m3") || strstr(instr, ".e5m2"));
}

bool kl_wgmma_promote_tiles(kl_accel_config *c, const kl_accel_desc **d, const char *in, int64_t P, bool bounded) {
  bool ch = false;
  if (P <= 0) return false;
  if (c->n_per_wave > 128) {
    const kl_accel_desc *nd = kl_wgmma_desc(in, 128);
    if (!nd) return false;
    c->n_per_wave = c->n_per_block = 128;
    c->m_per_wave = 64;
    c->m_per_block = 128;
    *d = nd;
    ch = true;
  }
  /* K tiles of at most 64 (2 k32 instructions per step): the register loop's copies of a
   * 128x128x128 step took ptxas sm_90a past 255 registers (240 spilled bytes, 8192^3 e4m3fn);
   * 128x128x64: 186 registers, no spills */
  if (c->k_per_block > 64) c->k_per_block = 64, ch = true;
  /* operands with bounds checks (a padded conv's implicit GEMM): 32 (the 3x3 conv 64x256x14x14:
   * 128x128x64 spilled 128 bytes at 255 registers, 128x128x32 takes 167 and none) */
  if (bounded && c->k_per_block > 32) c->k_per_block = 32, ch = true;
  while (c->k_per_block > 32 && (c->k_per_block > P || P % c->k_per_block)) c->k_per_block /= 2, ch = true;
  return ch;
}

bool kl_wgmma_lower_blockwise(kl_op *op, kl_rewriter *rw, const char *target) {
  kl_ctx *ctx = op->ctx;
  kl_loc loc = op->loc;
  char err[512];
  kl_value *la = op->opnds[0].value, *lb = op->opnds[1].value, *acc = op->opnds[2].value, *tid = op->opnds[3].value;
  const char *instr = kl_op_attr_string(op, "accel_instr");
  const kl_accel_desc *d = kl_wgmma_desc_by_name(instr);
  kl_accel_config c;
  c.split_k = 1;
  if (!d || !attr_i64(op, "m_per_block", &c.m_per_block) || !attr_i64(op, "n_per_block", &c.n_per_block) ||
      !attr_i64(op, "k_per_block", &c.k_per_block) || !attr_i64(op, "m_per_wave", &c.m_per_wave) ||
      !attr_i64(op, "n_per_wave", &c.n_per_wave) || !attr_i64(op, "kpack", &c.kpack)) {
    kl_rewriter_fail(rw, loc,
                     "rock.blockwise_gemm (wgmma %s): needs positive integer attributes m_per_block, n_per_block, "
                     "k_per_block, m_per_wave, n_per_wave, kpack",
                     instr ? instr : "?");
    return false;
  }
  const kl_target *t = kl_perf_resolve_target(op, target, err, sizeof err);
  if (!t || !t->wgmma) {
    kl_rewriter_fail(rw, loc, "rock.blockwise_gemm: %s needs a target with wgmma (sm_90a), not %s", d->intrinsic,
                     t ? t->name : err);
    return false;
  }
  const kl_type *ta = la->type, *tb = lb->type, *tacc = acc->type;
  const char *in = ta->kind == KL_TY_BUFFER ? kl_scalar_name(ta->elem->kind) : NULL;
  int eb = ta->kind == KL_TY_BUFFER ? (kl_type_bits(ta->elem) + 7) / 8 : 0;
  int64_t mrep = c.m_per_wave / d->m, nrep = c.n_per_wave / d->n, clen = kl_accel_frag_len(&d->c);
  if (!in || strcmp(in, d->in_type) || tb->kind != KL_TY_BUFFER || tb->elem != ta->elem || tacc->kind != KL_TY_BUFFER ||
      tacc->rank != 1 || tacc->shape[0] != mrep * nrep * clen || tacc->space != KL_SPACE_PRIVATE || ta->rank != 2 ||
      tb->rank != 2 || ta->shape[0] != c.k_per_block || ta->shape[1] != c.m_per_block ||
      tb->shape[0] != c.k_per_block || tb->shape[1] != c.n_per_block || tid->type->kind != KL_TY_INDEX) {
    kl_rewriter_fail(rw, loc,
                     "rock.blockwise_gemm (%s): operands must be lds_a [%lld,%lld], lds_b [%lld,%lld] of %s, a private "
                     "f32 acc [%lld] and the tid; got %s, %s, %s",
                     d->intrinsic, (long long)c.k_per_block, (long long)c.m_per_block, (long long)c.k_per_block,
                     (long long)c.n_per_block, d->in_type, (long long)(mrep * nrep * clen), ta->text, tb->text,
                     tacc->text);
    return false;
  }
  if (!validate(&c, t, d, eb, err, sizeof err)) {
    kl_rewriter_fail(rw, loc, "rock.blockwise_gemm: %s", err);
    return false;
  }
  core_layout A = { 0 }, B = { 0 };
  int64_t kpe = 16 / eb; /* elements of a core matrix row */
  bool ok = prove_layout(ctx, la, c.k_per_block, c.m_per_block, kpe, &A, err, sizeof err);
  if (!ok) {
    kl_rewriter_fail(rw, loc, "rock.blockwise_gemm (wgmma): A: %s", err);
  } else if (!(ok = prove_layout(ctx, lb, c.k_per_block, c.n_per_block, kpe, &B, err, sizeof err))) {
    kl_rewriter_fail(rw, loc, "rock.blockwise_gemm (wgmma): B: %s", err);
  }
  if (ok) {
    kl_rewriter_set_insertion_before(rw, op);
    kl_emitter e = { rw, loc };
    kl_ll L;
    kl_ll_init(&L, rw, loc, 0);
    int64_t wn_count = c.n_per_block / c.n_per_wave;
    kl_value *wg = kl_emit_divi(&e, tid, d->wave);
    kl_value *wm = kl_emit_divi(&e, wg, wn_count), *wn = kl_emit_remi(&e, wg, wn_count);
    kl_value *dm0 = kl_emit_muli(&e, wm, c.m_per_wave), *dn0 = kl_emit_muli(&e, wn, c.n_per_wave);
    /* MN-major operands: the instruction's imm-trans-a / -b (16-bit types) */
    kl_named_attr ia[3] = { { "instr", kl_attr_str(ctx, d->intrinsic) },
                            { "trans_a", kl_attr_int(ctx, A.mn) },
                            { "trans_b", kl_attr_int(ctx, B.mn) } };
    int nia = A.mn || B.mn ? 3 : 1;
    const kl_type *vt = kl_type_vector(ctx, kl_type_f32(ctx), (int)clen);
    sync_op(rw, loc, "fence");
    /* one instruction per warpgroup and K step (mrep = nrep = 1, the heuristic's tiles): the
     * K steps chained on the accumulator in one rock.wgmma (one asm for LLVM, which is slow
     * on each 128-register asm); else per K step every (i, j), K steps outermost */
    int64_t nkk = c.k_per_block / d->k;
    bool chain = mrep * nrep == 1 && nkk <= 16;
    kl_value *cd[33];
    int ncd = 0;
    for (int64_t kk = 0; kk < nkk; kk++) {
      /* (K kk, dm0 + 64 i) is core matrix (2 kk, dm0/8 + 8 i) of the proven layout (K = 2 kpe;
       * dm0, dn0 multiples of 8): the warpgroup's tile origin plus a constant */
      kl_value *da[64], *db[64];
      for (int64_t i = 0; i < mrep; i++)
        da[i] = make_desc(rw, loc, &A, dm0, eb, (d_offset(&A, i * d->m, eb) + k_offset(&A, kk * d->k, kpe)) * eb);
      for (int64_t j = 0; j < nrep; j++)
        db[j] = make_desc(rw, loc, &B, dn0, eb, (d_offset(&B, j * d->n, eb) + k_offset(&B, kk * d->k, kpe)) * eb);
      if (chain) {
        cd[ncd++] = da[0];
        cd[ncd++] = db[0];
        continue;
      }
      for (int64_t i = 0; i < mrep; i++)
        for (int64_t j = 0; j < nrep; j++) {
          kl_value *ix = kl_ll_idx(&L, (i * nrep + j) * clen);
          kl_value *cv = kl_ll_load(&L, acc, &ix, NULL, clen);
          kl_value *o[3] = { da[i], db[j], cv };
          kl_value *dv = kl_op_result(kl_rewriter_create(rw, "rock.wgmma", loc, 3, o, 1, &vt, nia, ia, 0), 0);
          kl_ll_store(&L, dv, acc, &ix, NULL);
        }
    }
    if (chain) {
      kl_value *ix = kl_ll_idx(&L, 0);
      cd[ncd++] = kl_ll_load(&L, acc, &ix, NULL, clen);
      kl_value *dv = kl_op_result(kl_rewriter_create(rw, "rock.wgmma", loc, ncd, cd, 1, &vt, nia, ia, 0), 0);
      kl_ll_store(&L, dv, acc, &ix, NULL);
    }
    sync_op(rw, loc, "commit");
    /* wait 0 here, unless the K loop waits (wgmma_wait = "deferred": its MMAs stay in
     * flight across the next step's copies, rock-gridwise-to-blockwise) */
    const char *wmode = kl_op_attr_string(op, "wgmma_wait");
    if (!wmode || strcmp(wmode, "deferred")) kl_wgmma_emit_acc_wait(rw, loc, acc, d->intrinsic, 0);
    kl_rewriter_erase_op(rw, op);
  }
  kl_view_free(A.view);
  kl_view_free(B.view);
  return ok;
}
