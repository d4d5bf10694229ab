/* rock_accel_config.c — the accel ("v2:") perf config: parsing, printing, validation,
 * the heuristic and the path selection of rock-gemm-to-gridwise (see rock_accel.h). */
#include "passes/rock_accel.h"
#include "passes/perf_config.h"
#include "passes/rock_wgmma.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *const kl_accel_config_fields[6] = {
  "mPerBlock", "nPerBlock", "kPerBlock", "mPerWave", "nPerWave", "kpack"
};
#define FMT "v2:mPerBlock,nPerBlock,kPerBlock,mPerWave,nPerWave,kpack"


static int64_t *field(kl_accel_config *c, int i) {
  int64_t *f[6] = { &c->m_per_block, &c->n_per_block, &c->k_per_block, &c->m_per_wave, &c->n_per_wave, &c->kpack };
  return f[i];
}

bool kl_accel_config_parse(const char *s, kl_accel_config *out, char *err, size_t errlen) {
  if (!s) return kl_perf_errf(err, errlen, "accel perf config: missing string (expected " FMT ")");
  if (strncmp(s, "v2:", 3))
    return kl_perf_errf(err, errlen, "accel perf config \"%s\": expected the version prefix \"v2:\" (" FMT ")", s);
  int64_t v[7];
  if (!kl_perf_fields_parse(s, s + 3, kl_accel_config_fields, FMT, v, err, errlen)) return false;
  kl_accel_config c;
  memset(&c, 0, sizeof c);
  for (int i = 0; i < 6; i++) *field(&c, i) = v[i];
  c.split_k = v[6];
  *out = c;
  return true;
}

char *kl_accel_config_print(const kl_accel_config *c, char *buf, size_t n) {
  int len = snprintf(buf, n, "v2:%lld,%lld,%lld,%lld,%lld,%lld", (long long)c->m_per_block, (long long)c->n_per_block,
                     (long long)c->k_per_block, (long long)c->m_per_wave, (long long)c->n_per_wave,
                     (long long)c->kpack);
  if (c->split_k > 1 && len > 0 && (size_t)len < n) snprintf(buf + len, n - len, ",%lld", (long long)c->split_k);
  return buf;
}

int64_t kl_accel_block_size(const kl_accel_config *c, const kl_accel_desc *d) {
  if (c->m_per_wave < 1 || c->n_per_wave < 1 || c->m_per_block % c->m_per_wave || c->n_per_block % c->n_per_wave)
    return 0;
  return (c->m_per_block / c->m_per_wave) * (c->n_per_block / c->n_per_wave) * d->wave;
}

int64_t kl_accel_acc_per_lane(const kl_accel_config *c, const kl_accel_desc *d) {
  return (c->m_per_wave / d->m) * (c->n_per_wave / d->n) * kl_accel_frag_len(&d->c);
}

bool kl_accel_config_validate(const kl_accel_config *c, const kl_target *t, const kl_accel_desc *d, int elem_bytes,
                              char *err, size_t errlen) {
  char s[160];
  kl_accel_config_print(c, s, sizeof s);
  for (int i = 0; i < 6; i++) {
    int64_t v = *field((kl_accel_config *)c, i);
    if (v <= 0)
      return kl_perf_errf(err, errlen, "perf config %s: %s must be positive, got %lld", s, kl_accel_config_fields[i],
                          (long long)v);
    if (v > ((int64_t)1 << 20))
      return kl_perf_errf(err, errlen, "perf config %s: %s = %lld is too large", s, kl_accel_config_fields[i],
                          (long long)v);
  }
  if (c->m_per_wave % d->m)
    return kl_perf_errf(err, errlen,
                        "perf config %s: mPerWave (%lld) is not a multiple of the instruction's M (%d, %s)", s,
                        (long long)c->m_per_wave, d->m, d->intrinsic);
  if (c->n_per_wave % d->n)
    return kl_perf_errf(err, errlen,
                        "perf config %s: nPerWave (%lld) is not a multiple of the instruction's N (%d, %s)", s,
                        (long long)c->n_per_wave, d->n, d->intrinsic);
  if (c->m_per_block % c->m_per_wave)
    return kl_perf_errf(err, errlen, "perf config %s: mPerBlock (%lld) is not a multiple of mPerWave (%lld)", s,
                        (long long)c->m_per_block, (long long)c->m_per_wave);
  if (c->n_per_block % c->n_per_wave)
    return kl_perf_errf(err, errlen, "perf config %s: nPerBlock (%lld) is not a multiple of nPerWave (%lld)", s,
                        (long long)c->n_per_block, (long long)c->n_per_wave);
  if (c->k_per_block % d->k)
    return kl_perf_errf(err, errlen,
                        "perf config %s: kPerBlock (%lld) is not a multiple of the instruction's K (%d, %s)", s,
                        (long long)c->k_per_block, d->k, d->intrinsic);
  if (c->k_per_block % c->kpack)
    return kl_perf_errf(err, errlen, "perf config %s: kPerBlock (%lld) is not a multiple of kpack (%lld)", s,
                        (long long)c->k_per_block, (long long)c->kpack);
  int64_t bs = kl_accel_block_size(c, d);
  if (t && bs > t->max_workgroup_size)
    return kl_perf_errf(
        err, errlen,
        "perf config %s: block size (mPerBlock/mPerWave)*(nPerBlock/nPerWave)*%d = %lld exceeds the max "
        "workgroup size %d of target %s (raise mPerWave/nPerWave)",
        s, d->wave, (long long)bs, t->max_workgroup_size, t->name);
  if ((c->k_per_block * c->m_per_block) % bs)
    return kl_perf_errf(err, errlen,
                        "perf config %s: kPerBlock*mPerBlock (%lld) is not a multiple of the block size %lld "
                        "(threads copy equal shares of the A tile)",
                        s, (long long)(c->k_per_block * c->m_per_block), (long long)bs);
  if ((c->k_per_block * c->n_per_block) % bs)
    return kl_perf_errf(err, errlen,
                        "perf config %s: kPerBlock*nPerBlock (%lld) is not a multiple of the block size %lld "
                        "(threads copy equal shares of the B tile)",
                        s, (long long)(c->k_per_block * c->n_per_block), (long long)bs);
  int64_t lds = c->k_per_block * (c->m_per_block + c->n_per_block) * (int64_t)elem_bytes;
  if (t && lds > t->lds_bytes)
    return kl_perf_errf(err, errlen,
                        "perf config %s: tile larger than LDS: kPerBlock*(mPerBlock+nPerBlock)*%d bytes = %lld > %lld "
                        "bytes of target %s (reduce kPerBlock, mPerBlock or nPerBlock)",
                        s, elem_bytes, (long long)lds, (long long)t->lds_bytes, t->name);
  if (t && t->arch == KL_ARCH_NVPTX && lds > 48 * 1024)
    return kl_perf_errf(
        err, errlen,
        "perf config %s: tile larger than static shared memory: kPerBlock*(mPerBlock+nPerBlock)*%d bytes = "
        "%lld > 49152 bytes (NVIDIA's limit without an opt-in; reduce kPerBlock, mPerBlock or nPerBlock)",
        s, elem_bytes, (long long)lds);
  int64_t accs = kl_accel_acc_per_lane(c, d),
          limit = t && t->max_vgprs > 0 ? (t->max_vgprs + 1) / 2 : 128; /* 255 (NVPTX) -> 128 */
  if (accs > limit)
    return kl_perf_errf(err, errlen,
                        "perf config %s: %lld accumulators per lane (mPerWave/%d * nPerWave/%d * %lld) exceed %lld "
                        "registers (reduce mPerWave or nPerWave)",
                        s, (long long)accs, d->m, d->n, (long long)kl_accel_frag_len(&d->c), (long long)limit);
  int64_t mt, nt;
  if (!kl_accel_thread_tile(c, d, &mt, &nt))
    return kl_perf_errf(err, errlen,
                        "perf config %s: the %lld accumulators per thread do not factor into the block tile", s,
                        (long long)accs);
  return true;
}

bool kl_accel_thread_tile(const kl_accel_config *c, const kl_accel_desc *d, int64_t *mt, int64_t *nt) {
  int64_t bs = kl_accel_block_size(c, d);
  if (bs <= 0 || (c->m_per_block * c->n_per_block) % bs) return false;
  int64_t r = c->m_per_block * c->n_per_block / bs, best = 0;
  for (int64_t a = 1; a <= r; a++) {
    if (r % a || c->m_per_block % a || c->n_per_block % (r / a)) continue;
    int64_t da = a > r / a ? a - r / a : r / a - a;
    int64_t db = best ? (best > r / best ? best - r / best : r / best - best) : 0;
    if (!best || da < db || (da == db && a > best)) best = a;
  }
  if (!best) return false;
  *mt = best;
  *nt = r / best;
  return true;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static double amd_cost(const kl_accel_config *c, const kl_target *t, const kl_accel_desc *d, int64_t g, int64_t m,
                       int64_t n, int64_t k, int eb, bool loop);
double kl_accel_config_step(const kl_accel_config *c, const kl_target *t, const kl_accel_desc *d, int eb) {
  double waves = (double)((c->m_per_block / c->m_per_wave) * (c->n_per_block / c->n_per_wave));
  double rm = (double)(c->m_per_wave / d->m), rn = (double)(c->n_per_wave / d->n), ks = (double)(c->k_per_block / d->k);
  double per_cycle = strcmp(d->in_type, "f32") ? 128.0 : 32.0;
  double mma = rm * rn * ks * d->m * d->n * d->k / per_cycle * (waves > 4 ? waves / 4 : 1);
  /* a target with a measured L2 -> SM rate (sm_90: 17 bytes per SM clock) is charged at it */
  bool l2 = t->arch == KL_ARCH_NVPTX && t->l2_bytes_per_cu_clk > 0;
  double global = (double)(c->k_per_block * (c->m_per_block + c->n_per_block) * eb) /
      (l2 ? (double)t->l2_bytes_per_cu_clk : 64.0);
  double lds = (rm * (double)kl_accel_frag_len(&d->a) + rn * (double)kl_accel_frag_len(&d->b)) * ks * d->wave * eb *
      waves / 128.0;
  double step = mma > global ? mma : global;
  return lds > step ? lds : step;
}

static double cost(const kl_accel_config *c, const kl_target *t, const kl_accel_desc *d, int64_t g, int64_t m,
                   int64_t n, int64_t k, int eb) {
  double tiles = (double)(g * ceil_div(m, c->m_per_block) * ceil_div(n, c->n_per_block));
  double cus = t->compute_units > 0 ? t->compute_units : 1;
  double rounds = (double)(int64_t)((tiles + cus - 1) / cus);
  double iters = (double)ceil_div(k, c->k_per_block);
  double step = kl_accel_config_step(c, t, d, eb);
  /* and a K step takes at least the latency of its global loads (KL_NV_STEP_LATENCY) */
  if (t->arch == KL_ARCH_NVPTX && t->l2_bytes_per_cu_clk > 0 && step < KL_NV_STEP_LATENCY) step = KL_NV_STEP_LATENCY;
  return rounds * iters * (step + 64.0);
}

double kl_accel_config_cost(const kl_accel_config *c, const kl_target *t, const kl_accel_desc *d, int64_t g, int64_t m,
                            int64_t n, int64_t k, int elem_bytes) {
  if (t->arch == KL_ARCH_AMDGPU) {
    double a = amd_cost(c, t, d, g, m, n, k, elem_bytes, false);
    if (a >= 0) return a;
  }
  return cost(c, t, d, g, m, n, k, elem_bytes);
}

/* Whether rock-gridwise-to-blockwise double-buffers the config's LDS tiles (mma.sync, an
 * even number of K steps, two tile pairs with their pad rows within 48 KiB). */
static bool double_buffered(const kl_accel_config *c, const kl_accel_desc *d, int64_t k, int eb) {
  if (d->kind != KL_ACCEL_MMA_SYNC || c->kpack * eb != 16) return false;
  int64_t steps = ceil_div(k, c->k_per_block);
  if (steps < 2 || steps % 2) return false;
  int64_t rows = 0, db[2] = { c->m_per_block, c->n_per_block };
  for (int i = 0; i < 2; i++) rows += db[i] + (db[i] % 64 == 0 ? db[i] / 8 + 1 : db[i] % 8 == 0 ? 1 : 0);
  return 2 * c->k_per_block * rows * eb <= 48 * 1024;
}

void kl_accel_amd_regs(const kl_accel_config *c, const kl_accel_desc *d, int elem_bytes, int64_t *arch, int64_t *acc) {
  int64_t bs = kl_accel_block_size(c, d);
  int64_t rm = c->m_per_wave / d->m, rn = c->n_per_wave / d->n, ks = c->k_per_block / d->k;
  int64_t frag = ks * (rm * kl_accel_frag_len(&d->a) + rn * kl_accel_frag_len(&d->b)) * elem_bytes;
  int64_t stage = bs > 0 ? c->k_per_block * (c->m_per_block + c->n_per_block) * elem_bytes / bs : 0;
  *acc = kl_accel_acc_per_lane(c, d);
  *arch = (frag + 3) / 4 + (stage + 3) / 4 + 32;
}

bool kl_accel_amd_fits_registers(const kl_accel_config *c, const kl_target *t, const kl_accel_desc *d, int elem_bytes,
                                 char *why, size_t whylen) {
  if (!t || t->arch != KL_ARCH_AMDGPU) return true;
  int64_t arch, acc, bs = kl_accel_block_size(c, d);
  kl_accel_amd_regs(c, d, elem_bytes, &arch, &acc);
  char s[160];
  kl_accel_config_print(c, s, sizeof s);
  if (d->kind == KL_ACCEL_MFMA) {
    /* accumulators in AGPRs: LLVM 19 spilled a 256-AGPR tile (v2:256,256,32,128,128,8 on gfx942: 308 bytes) */
    int64_t wps = (bs / d->wave + 3) / 4; /* waves of one workgroup per SIMD */
    int64_t unified = t->max_vgprs >= 512 ? 512 / (wps > 0 ? wps : 1) : 0;
    if (acc > 128 || arch > 224 || (unified && arch + acc > unified))
      return kl_perf_errf(why, whylen,
                          "perf config %s: about %lld VGPRs and %lld AGPRs per lane (%lld waves of the workgroup per "
                          "SIMD) would spill on target %s (limits: 224 VGPRs, 128 AGPRs%s)",
                          s, (long long)arch, (long long)acc, (long long)wps, t->name,
                          unified ? ", their sum 512 / waves per SIMD" : "");
    return true;
  }
  int64_t limit = t->max_vgprs < 256 ? t->max_vgprs : 256;
  if (arch + acc > limit)
    return kl_perf_errf(why, whylen,
                        "perf config %s: about %lld VGPRs per lane (%lld accumulators) would spill on target %s "
                        "(limit %lld)",
                        s, (long long)(arch + acc), (long long)acc, t->name, (long long)limit);
  return true;
}

/* Whether the AMD K loop double-buffers a tile pair of pair_bytes by the rule of
 * rock-gridwise-to-blockwise (rock_accel.h, kl_accel_amd_dbuf). */
bool kl_accel_amd_dbuf(const kl_accel_config *c, const kl_target *t, const kl_accel_desc *d, int eb,
                       int64_t pair_bytes) {
  bool mfma = d && d->kind == KL_ACCEL_MFMA, wmma = d && d->kind == KL_ACCEL_WMMA;
  if (!t || !(mfma || wmma) || pair_bytes <= 0) return false;
  int64_t lds = t->lds_bytes > 0 ? t->lds_bytes : 65536;
  if (mfma && 4 * pair_bytes <= lds) return true;
  if (2 * pair_bytes > lds || c->kpack * eb != 16) return false;
  int64_t arch, acc, waves = kl_accel_block_size(c, d) / d->wave;
  kl_accel_amd_regs(c, d, eb, &arch, &acc);
  /* the doubled loop body needs headroom: gfx1100's 3x3 conv 128x64x64 (estimate 248 of 256
   * VGPRs) spilled 40 bytes double-buffered; the seed conv's 128x64x64 (estimate 156) did not */
  if (wmma ? arch + acc > 192 : arch > 168) return false;
  int64_t regs = (arch + acc + 7) / 8 * 8, simds = d->wave == 64 ? 4 : 2, wmax = d->wave == 64 ? 8 : 16;
  int64_t per_simd = (d->wave == 64 ? 512 : 1536) / (regs > 0 ? regs : 1);
  if (per_simd > wmax) per_simd = wmax;
  int64_t by_regs = waves > 0 ? per_simd * simds / waves : 0;
  return by_regs >= 1 && lds / (2 * pair_bytes) >= by_regs;
}

/* The LDS bytes one workgroup of config c allocates on AMDGPU t (rock_accel.h): the K loop's
 * tile pair as rock-gridwise-to-blockwise lays it out (kpack rows of 16 bytes: skewed rows,
 * index d at row d + d/8 plus a pad row for DB a multiple of 64 (WMMA: of 16), one pad row
 * for other multiples of 8; two pairs where kl_accel_amd_dbuf says, two unpadded xor pairs
 * where the skewed pair fits once but not twice), grown to rock-output-swizzle's tile (MB x
 * NB elements of the output, taken as eb bytes, rows padded by 16 bytes, else unpadded)
 * when that fits. *pairs (may be NULL): the K loop's tile pairs, 1 or 2. */
static int64_t amd_rows(int64_t db, bool wmma) {
  return db % 64 == 0 || (wmma && db % 16 == 0) ? db + db / 8 + 1 : db % 8 == 0 ? db + 1 : db;
}
static int64_t amd_lds(const kl_accel_config *c, const kl_target *t, const kl_accel_desc *d, int eb, int *pairs) {
  int64_t lds = t && t->lds_bytes > 0 ? t->lds_bytes : 65536;
  int64_t plain = c->k_per_block * (c->m_per_block + c->n_per_block) * eb, kloop = plain;
  int np = 1;
  if (c->kpack * eb == 16) {
    bool wmma = d->kind == KL_ACCEL_WMMA;
    int64_t padded = c->k_per_block * (amd_rows(c->m_per_block, wmma) + amd_rows(c->n_per_block, wmma)) * eb;
    if (padded > lds) padded = plain;
    kloop = padded;
    if (kl_accel_amd_dbuf(c, t, d, eb, padded))
      kloop = 2 * padded, np = 2;
    else if (2 * padded > lds && 2 * plain <= lds)
      kloop = 2 * plain, np = 2;
  }
  if (pairs) *pairs = np;
  int64_t big = c->m_per_block > c->n_per_block ? c->m_per_block : c->n_per_block;
  int64_t swz = c->m_per_block * c->n_per_block * eb + big * 16;
  if (swz > lds) swz = c->m_per_block * c->n_per_block * eb; /* the swizzle's unpadded rows */
  if (swz <= lds && swz > kloop) kloop = swz;
  return kloop;
}
int64_t kl_accel_amd_lds_bytes(const kl_accel_config *c, const kl_target *t, const kl_accel_desc *d, int eb) {
  return amd_lds(c, t, d, eb, NULL);
}

/* The AMDGPU cost of a config (cycles, see rock_accel.h); < 0 when the instruction has no
 * throughput in the target table. loop: the K-loop model of kl_accel_amd_k_tile (issue in proportion
 * to the K tile, the single-buffered loop's exposed LDS round trip), else the block-tile
 * ranking's (128 cycles of issue per K step). */
static double amd_cost(const kl_accel_config *c, const kl_target *t, const kl_accel_desc *d, int64_t g, int64_t m,
                       int64_t n, int64_t k, int eb, bool loop) {
  const kl_accel_instr *ins = kl_target_accel_for(t, d->in_type);
  if (!ins || ins->cu_flops_per_clk <= 0) return -1;
  double simds = d->wave == 64 ? 4 : 2, waves_per_simd_max = d->wave == 64 ? 8 : 16;
  double regs_per_simd = d->wave == 64 ? 512 : 1536;
  int64_t arch, acc;
  kl_accel_amd_regs(c, d, eb, &arch, &acc);
  double regs = (double)(arch + acc);
  double wg_waves = (double)(kl_accel_block_size(c, d) / d->wave);
  double lds_tile = (double)(c->k_per_block * (c->m_per_block + c->n_per_block) * eb);
  double by_regs = (double)(int64_t)(regs_per_simd / (double)(((int64_t)regs + 7) / 8 * 8));
  if (by_regs > waves_per_simd_max) by_regs = waves_per_simd_max;
  double conc = (double)(int64_t)(by_regs * simds / wg_waves);
  int pairs;
  double by_lds = (double)(int64_t)((double)(t->lds_bytes > 0 ? t->lds_bytes : 65536) /
                                    (double)amd_lds(c, t, d, eb, &pairs));
  if (by_lds < conc) conc = by_lds;
  double tiles = (double)(g * ceil_div(m, c->m_per_block) * ceil_div(n, c->n_per_block));
  double cus = t->compute_units > 0 ? t->compute_units : 1;
  double per_cu = (double)(int64_t)((tiles + cus - 1) / cus); /* no more than there are tiles */
  if (per_cu < conc) conc = per_cu;
  if (conc < 1) conc = 1;
  double busy = conc * wg_waves < simds ? conc * wg_waves / simds : 1.0;
  double flops = 2.0 * (double)(c->m_per_block * c->n_per_block * c->k_per_block);
  double mma = flops / ((double)ins->cu_flops_per_clk * busy);
  double l2 = lds_tile / (t->l2_bytes_per_cu_clk > 0 ? (double)t->l2_bytes_per_cu_clk : 32.0);
  double rm = (double)(c->m_per_wave / d->m), rn = (double)(c->n_per_wave / d->n), ks = (double)(c->k_per_block / d->k);
  double lds_rd = (rm * (double)kl_accel_frag_len(&d->a) + rn * (double)kl_accel_frag_len(&d->b)) * ks * d->wave * eb *
      wg_waves;
  double lds = (lds_rd + lds_tile) / 128.0; /* LDS: 128 bytes per clock */
  double step = mma > l2 ? mma : l2;
  if (lds > step) step = lds;
  double wps = conc * wg_waves / simds, exposed = 200.0 / (wps > 1 ? wps : 1), round_step;
  if (!loop) {
    step += 128.0; /* issue cost of one K step: addresses, waits, two barriers, the loop */
    /* conc workgroups share the CU; the LDS store -> barrier -> LDS load latency of a K step
     * (about 200 cycles; the next tile's global loads are in flight during the MFMAs) is
     * hidden by the other waves of a SIMD */
    round_step = conc * step > step + exposed ? conc * step : step + exposed;
  } else {
    /* issue of one K step (addresses, waits, the LDS reads and matrix instructions, the
     * loop) in proportion to the K tile: 128 cycles at 64 (f32 MFMA: 16); llvm-mca on one
     * block tile at K 64 and K 32: gfx90a 256x128 f16 636 / 319 cycles per K step, gfx1100
     * 256x64 384 / 211 */
    double kmax = 8.0 * d->k < 64.0 ? 8.0 * d->k : 64.0;
    step += 128.0 * (double)c->k_per_block / kmax;
    /* the barrier after a step's LDS stores waits for the slowest wave's stores (the store
     * -> barrier -> LDS load round trip, about 200 cycles): single-buffered (two barriers
     * per K step) the step's matrix instructions wait for it and no wave of the workgroup
     * can fill that time, only the other workgroups of the CU; double-buffered (one barrier
     * per K step: the next tile's stores go to the other pair while the matrix instructions
     * read this one) it overlaps the matrix instructions. The barrier's skew between the
     * waves (200 / waves per SIMD) stays either way. */
    if (!(pairs == 2 && ceil_div(k, c->k_per_block) >= 2)) exposed += 200.0;
    round_step = conc * step > step + exposed ? conc * step : step + exposed;
  }
  double rounds = (double)(int64_t)((tiles + cus * conc - 1) / (cus * conc));
  return rounds * (double)ceil_div(k, c->k_per_block) * round_step;
}

/* AMDGPU: wave tiles up to 128 per dim, up to 8 waves (512 threads), the target's full
 * LDS, kpack 16 bytes for 2-byte types on MFMA and WMMA (WMMA's 32-byte K run per lane
 * is two 16-byte rows: the skewed rows of rock-gridwise-to-blockwise), only configs whose register estimate
 * fits (kl_accel_amd_fits_registers), ranked by amd_cost; within 2% of the best cost the
 * least padded volume wins. */
int kl_accel_amd_candidates(const kl_target *t, const kl_accel_desc *d, int eb, kl_accel_config *out, int max) {
  static const int64_t reps[] = { 8, 4, 2, 1 }, waves[] = { 4, 2, 1 }, ksteps[] = { 8, 4, 2, 1 };
  int n = 0;
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++)
      for (int wa = 0; wa < 3; wa++)
        for (int wb = 0; wb < 3; wb++)
          for (int ki = 0; ki < 4; ki++) {
            kl_accel_config c;
            c.split_k = 1;
            c.m_per_wave = reps[a] * d->m;
            c.n_per_wave = reps[b] * d->n;
            c.m_per_block = waves[wa] * c.m_per_wave;
            c.n_per_block = waves[wb] * c.n_per_wave;
            c.k_per_block = ksteps[ki] * d->k;
            if (c.m_per_wave > 128 || c.n_per_wave > 128 || c.m_per_block > 256 || c.n_per_block > 256 ||
                c.k_per_block > 64)
              continue;
            if (kl_accel_block_size(&c, d) > 512) continue;
            c.kpack = (d->kind == KL_ACCEL_MFMA || d->kind == KL_ACCEL_WMMA) && eb == 2 ? 8 : d->kpack;
            while (c.kpack > 1 && c.k_per_block % c.kpack) c.kpack /= 2;
            if (!kl_accel_config_validate(&c, t, d, eb, NULL, 0)) continue;
            if (!kl_accel_amd_fits_registers(&c, t, d, eb, NULL, 0)) continue;
            if (n < max) out[n] = c;
            n++;
          }
  return n;
}

/* the workgroups per CU of config c by its register estimate and LDS (*pairs: its K loop's
 * tile pairs, amd_lds) */
static int64_t amd_conc(const kl_accel_config *c, const kl_target *t, const kl_accel_desc *d, int eb, int *pairs) {
  int64_t arch, acc, simds = d->wave == 64 ? 4 : 2, wmax = d->wave == 64 ? 8 : 16;
  kl_accel_amd_regs(c, d, eb, &arch, &acc);
  int64_t regs = (arch + acc + 7) / 8 * 8, per_simd = (d->wave == 64 ? 512 : 1536) / (regs > 0 ? regs : 1);
  if (per_simd > wmax) per_simd = wmax;
  int64_t waves = kl_accel_block_size(c, d) / d->wave, conc = waves > 0 ? per_simd * simds / waves : 0;
  int64_t by_lds = (t->lds_bytes > 0 ? t->lds_bytes : 65536) / amd_lds(c, t, d, eb, pairs);
  return by_lds < conc ? by_lds : conc;
}
bool kl_accel_amd_k_tile(const kl_target *t, const kl_accel_desc *d, int64_t g, int64_t m, int64_t n, int64_t k, int eb,
                         kl_accel_config *c) {
  if (!t || t->arch != KL_ARCH_AMDGPU || !d || !(d->kind == KL_ACCEL_MFMA || d->kind == KL_ACCEL_WMMA)) return false;
  kl_accel_config h = *c;
  h.k_per_block /= 2;
  if (h.k_per_block < 2 * d->k || h.k_per_block % h.kpack || ceil_div(k, h.k_per_block) < 2) return false;
  int pc, ph;
  int64_t cc = amd_conc(c, t, d, eb, &pc), ch = amd_conc(&h, t, d, eb, &ph);
  if (pc != 1 || ph != 2 || ch < cc || !kl_accel_config_validate(&h, t, d, eb, NULL, 0) ||
      !kl_accel_amd_fits_registers(&h, t, d, eb, NULL, 0))
    return false;
  double ch_cost = amd_cost(&h, t, d, g, m, n, k, eb, true), cc_cost = amd_cost(c, t, d, g, m, n, k, eb, true);
  if (ch_cost < 0 || cc_cost < 0 || ch_cost >= 0.98 * cc_cost) return false;
  *c = h;
  return true;
}

static bool amd_heuristic(const kl_target *t, const kl_accel_desc *d, int64_t g, int64_t m, int64_t n, int64_t k,
                          int eb, kl_accel_config *out) {
  kl_accel_config cs[KL_ACCEL_AMD_MAX_CANDIDATES];
  int nc = kl_accel_amd_candidates(t, d, eb, cs, KL_ACCEL_AMD_MAX_CANDIDATES);
  if (nc > KL_ACCEL_AMD_MAX_CANDIDATES) nc = KL_ACCEL_AMD_MAX_CANDIDATES;
  bool found = false;
  double best = 0, best_pad = 0;
  for (int i = 0; i < nc; i++) {
    kl_accel_config c = cs[i];
    double cst = amd_cost(&c, t, d, g, m, n, k, eb, false);
    if (cst < 0) return false;
    double pad = (double)(ceil_div(m, c.m_per_block) * c.m_per_block) *
        (double)(ceil_div(n, c.n_per_block) * c.n_per_block) * (double)(ceil_div(k, c.k_per_block) * c.k_per_block);
    /* within 2% of the best cost, less padding wins (tiny problems: latency dominates every tile) */
    if (!found || cst < best * 0.98 || (cst <= best * 1.02 && pad < best_pad)) {
      best = cst;
      best_pad = pad;
      *out = c;
      found = true;
    }
  }
  return found;
}

static bool heuristic(const kl_target *t, const kl_accel_desc *d, int64_t g, int64_t m, int64_t n, int64_t k,
                      int elem_bytes, bool async_ab, kl_accel_config *out) {
  if (!t || !d || g < 1 || m < 1 || n < 1 || k < 1 || elem_bytes < 1) return false;
  if (t->arch == KL_ARCH_AMDGPU && amd_heuristic(t, d, g, m, n, k, elem_bytes, out)) return true;
  /* reps 8: only mma.sync's N = 8 gives a wave tile <= 64 (64x64 wave tiles) */
  static const int64_t reps[] = { 8, 4, 2, 1 }, waves[] = { 4, 2, 1 }, ksteps[] = { 8, 4, 2, 1 };
  bool mma_sync = d->kind == KL_ACCEL_MMA_SYNC;
  /* both operands through the cp.async pipeline (on by default, KL_CP_ASYNC_DEFAULT,
   * passes/perf_config.h): K tiles of at most KL_CP_ASYNC_KB_MAX, whose 3 / 4 stages fit
   * twice in the LDS without spills; register-staged GEMMs keep their K tiles */
  /* only where even 128x128 tiles give more blocks than SMs (large grids; few-block grids
   * keep the plain heuristic, which spreads them over the SMs): block-tile reuse first (below) */
  bool cpa_k = async_ab && mma_sync && t->arch == KL_ARCH_NVPTX &&
      g * ceil_div(m, 128) * ceil_div(n, 128) > t->compute_units;
  bool reuse_first = cpa_k;
  bool nv_l2 = t->arch == KL_ARCH_NVPTX && t->l2_bytes_per_cu_clk > 0;
  /* mma.sync: two passes; the second picks, among the configs within 5% of the best cost,
   * double-buffered ones first, then larger wave tiles (fewer LDS fragment bytes per
   * instruction), then fewer waves per block, then squarer block tiles (fewer global bytes
   * per FLOP), then the cost (measured on an H200: 4096^3
   * f16 128x128x32 with 64x64 wave tiles, double-buffered, 272 TFLOP/s against 236 for
   * the cost's pick 256x64x64 with 64x32 wave tiles) */
  bool found = false;
  double best = 0, best_pad = 0, first_best = 0, first_best_pad = 0;
  for (int pass = 0; pass < (mma_sync ? 2 : 1); pass++) {
    bool pfound = false;
    bool best_db = false;
    int64_t best_area = 0, best_waves = 0;
    bool one_per_sm_best = false;
    int64_t best_tiles = 0;
    double best_reuse = 0;
    for (int a = 0; a < 4; a++)
      for (int b = 0; b < 4; b++)
        for (int wa = 0; wa < 3; wa++)
          for (int wb = 0; wb < 3; wb++)
            for (int ki = 0; ki < 4; ki++) {
              kl_accel_config c;
              c.split_k = 1;
              c.m_per_wave = reps[a] * d->m;
              c.n_per_wave = reps[b] * d->n;
              c.m_per_block = waves[wa] * c.m_per_wave;
              c.n_per_block = waves[wb] * c.n_per_wave;
              c.k_per_block = ksteps[ki] * d->k;
              if (c.m_per_wave > 64 || c.n_per_wave > 64 || c.m_per_block > 256 || c.n_per_block > 256 ||
                  c.k_per_block > 64 || (cpa_k && c.k_per_block > KL_CP_ASYNC_KB_MAX))
                continue;
              if (kl_accel_block_size(&c, d) > 256) continue;
              /* static shared memory above 48 KiB needs an opt-in on NVIDIA GPUs: stay below */
              if (c.k_per_block * (c.m_per_block + c.n_per_block) * elem_bytes > 48 * 1024) continue;
              /* kpack: the LDS tile is [KB/kpack, MB|NB, kpack]. mma.sync: 16 bytes of K per row (8 f16), so
               * K-contiguous operands are written to LDS with 128-bit stores, and a warp's 32-bit fragment
               * reads (8 rows x 4 lanes along K) cover 128 contiguous bytes: no bank conflicts (kpack = 2
               * put the 4 lanes along K a row of the tile apart: 4-way conflicts). */
              c.kpack = mma_sync ? 16 / elem_bytes : d->kpack;
              if (c.kpack < 1) c.kpack = 1;
              while (c.kpack > 1 && c.k_per_block % c.kpack) c.kpack /= 2;
              if (!kl_accel_config_validate(&c, t, d, elem_bytes, NULL, 0)) continue;
              double cst = cost(&c, t, d, g, m, n, k, elem_bytes);
              double pad = (double)(ceil_div(m, c.m_per_block) * c.m_per_block) *
                  (double)(ceil_div(n, c.n_per_block) * c.n_per_block) *
                  (double)(ceil_div(k, c.k_per_block) * c.k_per_block);
              if (pass == 0) {
                if (!found || cst < best || (cst == best && pad < best_pad)) {
                  best = cst;
                  best_pad = pad;
                  *out = c;
                  found = true;
                }
                continue;
              }
              if (cst > first_best * 1.05) continue;
              /* no more than 25% more padded volume than the cheapest config: where a latency floor
               * makes many configs cost the same (sm_90 narrow GEMMs), larger wave tiles must not
               * win by computing padding (a 64x32 tile for a 16x16 output) */
              if (pad > first_best_pad * 1.25) continue;
              bool db = double_buffered(&c, d, k, elem_bytes);
              int64_t area = c.m_per_wave * c.n_per_wave, nw = kl_accel_block_size(&c, d) / d->wave;
              /* global bytes per block-tile FLOP ~ (MB + NB) / (MB * NB): squarer block tiles read less */
              double reuse = (double)(c.m_per_block * c.n_per_block) / (double)(c.m_per_block + c.n_per_block);
              /* the preference key, most significant first (see above) */
              /* a grid that leaves each SM one block (or none): blocks of fewer than 4 warps leave
               * SM sub-partitions idle, so (with a latency floor in the cost, where costs tie) up to
               * 4 warps come before larger wave tiles */
              /* and among those, more blocks (up to one per SM) come first: the same cost on more SMs.
               * Only where the cost has the latency floor (l2_bytes_per_cu_clk: sm_90) */
              int64_t tl = g * ceil_div(m, c.m_per_block) * ceil_div(n, c.n_per_block);
              bool one_per_sm = nv_l2 && tl <= t->compute_units;
              double fill = one_per_sm ? (double)(nw < 4 ? nw : 4) : 4.0;
              double bfill = one_per_sm_best ? (double)(best_waves < 4 ? best_waves : 4) : 4.0;
              double spread = one_per_sm ? (double)tl : (double)t->compute_units;
              double bspread = one_per_sm_best ? (double)best_tiles : (double)t->compute_units;
              double key[8] = { db, fill, spread, (double)area, (double)-nw, reuse, -cst, -pad };
              double bkey[8] = { best_db,    bfill, bspread,  (double)best_area, (double)-best_waves,
                                 best_reuse, -best, -best_pad };
              /* both operands through the cp.async pipeline (kl_accel_config_heuristic_async):
               * its stages replace double buffering, and block-tile reuse comes before fewer
               * waves (256x128x32 / 128x256x32, 8 warps, over 128x128x32) */
              if (reuse_first) {
                key[0] = bkey[0] = 0;
                key[4] = reuse, key[5] = (double)-nw;
                bkey[4] = best_reuse, bkey[5] = (double)-best_waves;
              }
              int cmp = 0;
              for (int i = 0; i < 8 && !cmp; i++) cmp = key[i] > bkey[i] ? 1 : key[i] < bkey[i] ? -1 : 0;
              bool better = !pfound || cmp > 0;
              if (better) {
                *out = c;
                pfound = true;
                best = cst;
                best_pad = pad;
                best_db = db;
                best_area = area;
                best_waves = nw;
                best_reuse = reuse;
                one_per_sm_best = one_per_sm;
                best_tiles = tl;
              }
            }
    if (pass == 0) {
      first_best = best;
      first_best_pad = best_pad;
    }
  }
  return found;
}

bool kl_accel_config_heuristic(const kl_target *t, const kl_accel_desc *d, int64_t g, int64_t m, int64_t n, int64_t k,
                               int elem_bytes, kl_accel_config *out) {
  return heuristic(t, d, g, m, n, k, elem_bytes, false, out);
}

bool kl_accel_config_heuristic_async(const kl_target *t, const kl_accel_desc *d, int64_t g, int64_t m, int64_t n,
                                     int64_t k, int elem_bytes, kl_accel_config *out) {
  if (!d || d->kind != KL_ACCEL_MMA_SYNC || !t || t->arch != KL_ARCH_NVPTX)
    return kl_accel_config_heuristic(t, d, g, m, n, k, elem_bytes, out);
  return heuristic(t, d, g, m, n, k, elem_bytes, true, out);
}

int kl_accel_select(const kl_target *t, const kl_type *in_a, const kl_type *in_b, const char *given, int64_t g,
                    int64_t m, int64_t n, int64_t k, kl_accel_config *c, const kl_accel_desc **d, char *err,
                    size_t errlen) {
  if (given && !strncmp(given, "v3:", 3)) /* Hopper wgmma: passes/rock_wgmma.h */
    return kl_wgmma_select(t, in_a, in_b, given, g, m, n, k, c, d, err, errlen);
  bool v2 = given && !strncmp(given, "v2:", 3);
  if (given && !v2) return 0; /* "v1:" (or malformed: the v1 parser reports it) */
  const kl_accel_desc *dd = in_a == in_b ? kl_accel_desc_for(t, in_a) : NULL;
  if (!dd) {
    if (!v2) return 0;
    kl_perf_errf(err, errlen,
                 "perf config \"%s\": a v2 (matrix instruction) config needs a matrix instruction for %s inputs, and "
                 "target %s has none (matrix unit: %s); use a v1 config",
                 given, kl_type_str(in_a), t ? t->name : "?", t ? kl_accel_kind_name(t->accel) : "none");
    return -1;
  }
  int eb = (kl_type_bits(in_a) + 7) / 8;
  if (v2) {
    if (!kl_accel_config_parse(given, c, err, errlen) || !kl_accel_config_validate(c, t, dd, eb, err, errlen))
      return -1;
  } else if (!kl_accel_config_heuristic(t, dd, g, m, n, k, eb, c)) {
    return 0; /* nothing fits: the FMA path */
  }
  *d = dd;
  return 1;
}
