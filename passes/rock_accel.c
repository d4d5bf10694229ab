/* rock_accel.c — the matrix instructions kiln uses (lane layouts of their operands and
 * accumulators), the views of the wave decomposition, and the accel attributes of the
 * tiled GEMM ops (see rock_accel.h).
 *
 * Layouts (ISA documents; "lane" = lane index in the wave, "e" = element of the lane's
 * operand vector, "r" = accumulator register):
 *  MFMA 32x32xK (gfx9, wave64), P = K/2 elements per lane (K=2: f32, 4: bf16 on gfx908,
 *   8: f16/bf16_1k/i8, 16: i8 on gfx942): A[i][k] in lane i + 32*(k/P), element k%P;
 *   B[k][j] in lane j + 32*(k/P), element k%P; D[i][j] (16 registers) in lane
 *   j + 32*((i/4)%2), register 4*(i/8) + i%4.
 *  WMMA 16x16x16 (gfx11, wave32): A[i][k] in lanes i and i+16 (replicated), element k;
 *   B[k][j] in lanes j and j+16, element k; D[i][j] (8 registers) in lane j + 16*(i%2),
 *   register i/2.
 *  mma.sync m16n8kK (sm_80+, warp 32), g = lane/4, t = lane%4, P = 32/element bits
 *   (K = 8P): A element e (q = e/P, w = e%P): row g + 8*(q%2), k = P*t + w + 4P*(q/2);
 *   B element e: k = P*t + w + 4P*q, column g; D register r: row g + 8*(r/2), column
 *   2t + r%2. */
#include "passes/rock_accel.h"
#include "passes/perf_config.h"
#include "passes/rock_wgmma.h"
#include <stdio.h>
#include <string.h>

#define LD(i) \
  { 'l', i }
#define ED(i) \
  { 'e', i }
/* MFMA 32x32: lanes = [2, 32] (hi, lo) */
#define MFMA_AB(P)                                            \
  {                                                           \
    2, { 2, 32 }, 1, { P }, 1, { LD(1) }, 2, { LD(0), ED(0) } \
  }
#define MFMA_C                                                          \
  {                                                                     \
    2, { 2, 32 }, 2, { 4, 4 }, 3, { ED(0), LD(0), ED(1) }, 1, { LD(1) } \
  }
/* WMMA 16x16x16: lanes = [2, 16] */
#define WMMA_AB                                         \
  {                                                     \
    2, { 2, 16 }, 1, { 16 }, 1, { LD(1) }, 1, { ED(0) } \
  }
#define WMMA_C                                                \
  {                                                           \
    2, { 2, 16 }, 1, { 8 }, 2, { ED(0), LD(0) }, 1, { LD(1) } \
  }
/* mma.sync m16n8k(8P): lanes = [8 (g), 4 (t)] */
#define MMA_A(P)                                                                 \
  {                                                                              \
    2, { 8, 4 }, 3, { 2, 2, P }, 2, { ED(1), LD(0) }, 3, { ED(0), LD(1), ED(2) } \
  }
#define MMA_B(P)                                                       \
  {                                                                    \
    2, { 8, 4 }, 2, { 2, P }, 1, { LD(0) }, 3, { ED(0), LD(1), ED(1) } \
  }
#define MMA_C                                                          \
  {                                                                    \
    2, { 8, 4 }, 2, { 2, 2 }, 2, { ED(0), LD(0) }, 2, { LD(1), ED(1) } \
  }

static const kl_accel_desc descs[] = {
  { KL_ACCEL_MFMA, "f32", "f32", 32, 32, 2, 64, "llvm.amdgcn.mfma.f32.32x32x2f32", 1, MFMA_AB(1), MFMA_AB(1), MFMA_C },
  { KL_ACCEL_MFMA, "f16", "f32", 32, 32, 8, 64, "llvm.amdgcn.mfma.f32.32x32x8f16", 4, MFMA_AB(4), MFMA_AB(4), MFMA_C },
  { KL_ACCEL_MFMA, "bf16", "f32", 32, 32, 4, 64, "llvm.amdgcn.mfma.f32.32x32x4bf16", 2, MFMA_AB(2), MFMA_AB(2),
    MFMA_C },
  { KL_ACCEL_MFMA, "bf16", "f32", 32, 32, 8, 64, "llvm.amdgcn.mfma.f32.32x32x8bf16.1k", 4, MFMA_AB(4), MFMA_AB(4),
    MFMA_C },
  { KL_ACCEL_MFMA, "i8", "i32", 32, 32, 8, 64, "llvm.amdgcn.mfma.i32.32x32x8i8", 4, MFMA_AB(4), MFMA_AB(4), MFMA_C },
  { KL_ACCEL_MFMA, "i8", "i32", 32, 32, 16, 64, "llvm.amdgcn.mfma.i32.32x32x16.i8", 8, MFMA_AB(8), MFMA_AB(8), MFMA_C },
  { KL_ACCEL_WMMA, "f16", "f32", 16, 16, 16, 32, "llvm.amdgcn.wmma.f32.16x16x16.f16", 16, WMMA_AB, WMMA_AB, WMMA_C },
  { KL_ACCEL_WMMA, "bf16", "f32", 16, 16, 16, 32, "llvm.amdgcn.wmma.f32.16x16x16.bf16", 16, WMMA_AB, WMMA_AB, WMMA_C },
  { KL_ACCEL_WMMA, "i8", "i32", 16, 16, 16, 32, "llvm.amdgcn.wmma.i32.16x16x16.iu8", 16, WMMA_AB, WMMA_AB, WMMA_C },
  /* the target table names the f16 instruction llvm.nvvm.mma.m16n8k16.row.col.f32.f16,
   * which in LLVM has an f16 accumulator; kiln accumulates in f32: .f32.f32 */
  { KL_ACCEL_MMA_SYNC, "f16", "f32", 16, 8, 16, 32, "llvm.nvvm.mma.m16n8k16.row.col.f32.f32", 2, MMA_A(2), MMA_B(2),
    MMA_C },
  { KL_ACCEL_MMA_SYNC, "bf16", "f32", 16, 8, 16, 32, "llvm.nvvm.mma.m16n8k16.row.col.bf16", 2, MMA_A(2), MMA_B(2),
    MMA_C },
  { KL_ACCEL_MMA_SYNC, "i8", "i32", 16, 8, 32, 32, "llvm.nvvm.mma.m16n8k32.row.col.s8", 4, MMA_A(4), MMA_B(4), MMA_C },
};

int kl_accel_desc_count(void) { return (int)(sizeof descs / sizeof *descs); }
const kl_accel_desc *kl_accel_desc_at(int i) { return i >= 0 && i < kl_accel_desc_count() ? &descs[i] : NULL; }

const kl_accel_desc *kl_accel_desc_by_intrinsic(const char *intrinsic) {
  for (int i = 0; intrinsic && i < kl_accel_desc_count(); i++)
    if (!strcmp(descs[i].intrinsic, intrinsic)) return &descs[i];
  return kl_wgmma_desc_by_name(intrinsic); /* passes/rock_wgmma.h */
}

const kl_accel_desc *kl_accel_desc_for(const kl_target *t, const kl_type *in) {
  if (!t || !in || t->accel == KL_ACCEL_NONE) return NULL;
  const char *name = kl_scalar_name(in->kind);
  const kl_accel_instr *ti = name ? kl_target_accel_for(t, name) : NULL;
  if (!ti) return NULL;
  const kl_accel_desc *shape_match = NULL;
  for (int i = 0; i < kl_accel_desc_count(); i++) {
    const kl_accel_desc *d = &descs[i];
    if (d->kind != t->accel || strcmp(d->in_type, ti->in_type) || strcmp(d->acc_type, ti->acc_type) || d->m != ti->m ||
        d->n != ti->n || d->k != ti->k || d->wave != t->wave_size)
      continue;
    if (!strcmp(d->intrinsic, ti->intrinsic)) return d;
    if (!shape_match) shape_match = d;
  }
  return shape_match;
}

int64_t kl_accel_frag_len(const kl_accel_frag *f) {
  int64_t n = 1;
  for (int i = 0; i < f->nelem; i++) n *= f->elem[i];
  return n;
}

/* digit values of a mixed-radix number (most significant first) */
static void digits(int64_t v, int n, const int64_t *sizes, int64_t *out) {
  for (int i = n - 1; i >= 0; i--) {
    out[i] = v % sizes[i];
    v /= sizes[i];
  }
}
static int64_t compose_digits(int n, const kl_accel_digit *ds, const kl_accel_frag *f, const int64_t *lv,
                              const int64_t *ev) {
  int64_t r = 0;
  for (int i = 0; i < n; i++) {
    int64_t size = ds[i].who == 'l' ? f->lane[ds[i].idx] : f->elem[ds[i].idx];
    int64_t val = ds[i].who == 'l' ? lv[ds[i].idx] : ev[ds[i].idx];
    r = r * size + val;
  }
  return r;
}
void kl_accel_frag_eval(const kl_accel_frag *f, int64_t lane, int64_t e, int64_t *x, int64_t *y) {
  int64_t lv[4], ev[4];
  digits(lane, f->nlane, f->lane, lv);
  digits(e, f->nelem, f->elem, ev);
  *x = compose_digits(f->nx, f->x, f, lv, ev);
  *y = compose_digits(f->ny, f->y, f, lv, ev);
}

/* ---- views ---- */
static const char *const lane_names[4] = { "l0", "l1", "l2", "l3" };
static const char *const elem_names[4] = { "e0", "e1", "e2", "e3" };
static const char *digit_name(kl_accel_digit d) { return d.who == 'l' ? lane_names[d.idx] : elem_names[d.idx]; }
static int64_t digit_size(const kl_accel_frag *f, kl_accel_digit d) {
  return d.who == 'l' ? f->lane[d.idx] : f->elem[d.idx];
}
static bool lane_used(const kl_accel_frag *f, int i) {
  for (int j = 0; j < f->nx; j++)
    if (f->x[j].who == 'l' && f->x[j].idx == i) return true;
  for (int j = 0; j < f->ny; j++)
    if (f->y[j].who == 'l' && f->y[j].idx == i) return true;
  return false;
}

/* Splits dim `dim` into [pre... , the digits of ds] (sizes of pre given). */
static void split_dim(kl_vb *b, const char *dim, int npre, const char *const *pre, const int64_t *pre_sizes,
                      const kl_accel_frag *f, int nd, const kl_accel_digit *ds) {
  const char *names[12];
  int64_t sizes[12];
  int n = 0;
  for (int i = 0; i < npre; i++) {
    names[n] = pre[i];
    sizes[n++] = pre_sizes[i];
  }
  for (int i = 0; i < nd; i++) {
    names[n] = digit_name(ds[i]);
    sizes[n++] = digit_size(f, ds[i]);
  }
  kl_vb_unmerge(b, dim, n, names, sizes);
}

/* Merges [pre..., all lane digits] into "tid" and [pre2..., all element digits] into "iter";
 * lane digits no coordinate uses become ignored dims first. */
static void merge_lanes_elems(kl_vb *b, const kl_accel_frag *f, int npre, const char *const *pre, int npre2,
                              const char *const *pre2) {
  for (int i = 0; i < f->nlane; i++)
    if (!lane_used(f, i)) kl_vb_add_dim(b, lane_names[i], f->lane[i]);
  const char *t[12], *it[12];
  int nt = 0, ni = 0;
  for (int i = 0; i < npre; i++) t[nt++] = pre[i];
  for (int i = 0; i < f->nlane; i++) t[nt++] = lane_names[i];
  for (int i = 0; i < npre2; i++) it[ni++] = pre2[i];
  for (int i = 0; i < f->nelem; i++) it[ni++] = elem_names[i];
  kl_vb_merge(b, "tid", nt, t);
  kl_vb_merge(b, "iter", ni, it);
}

kl_view *kl_accel_lds_view(const kl_accel_desc *d, const kl_accel_config *c, bool is_a, char *err, size_t errlen) {
  const kl_accel_frag *f = is_a ? &d->a : &d->b;
  int64_t DB = is_a ? c->m_per_block : c->n_per_block, DW = is_a ? c->m_per_wave : c->n_per_wave;
  int64_t ID = is_a ? d->m : d->n, OB = is_a ? c->n_per_block : c->m_per_block,
          OW = is_a ? c->n_per_wave : c->m_per_wave;
  if (DW % ID || DB % DW || OB % OW || c->k_per_block % d->k) {
    snprintf(err, errlen,
             "accel tiles %lldx%lld per block, %lldx%lld per wave, kPerBlock %lld do not fit the %dx%dx%d "
             "instruction",
             (long long)c->m_per_block, (long long)c->n_per_block, (long long)c->m_per_wave, (long long)c->n_per_wave,
             (long long)c->k_per_block, d->m, d->n, d->k);
    return NULL;
  }
  const char *dn = is_a ? "m" : "n";
  kl_vb b;
  int64_t shape[2] = { c->k_per_block, DB };
  const char *names[2] = { "k", dn };
  kl_vb_identity(&b, 2, shape, names);
  const char *kpre[1] = { "kk" };
  int64_t ksz[1] = { c->k_per_block / d->k };
  split_dim(&b, "k", 1, kpre, ksz, f, f->ny, f->y);
  const char *dpre[2] = { is_a ? "wm" : "wn", "rep" };
  int64_t dsz[2] = { DB / DW, DW / ID };
  split_dim(&b, dn, 2, dpre, dsz, f, f->nx, f->x);
  kl_vb_add_dim(&b, is_a ? "wn" : "wm", OB / OW);
  const char *tpre[2] = { "wm", "wn" }, *ipre[1] = { "rep" };
  merge_lanes_elems(&b, f, 2, tpre, 1, ipre);
  const char *ord[3] = { "tid", "kk", "iter" };
  kl_vb_order(&b, 3, ord);
  return kl_vb_finish(&b, err, errlen);
}

kl_view *kl_accel_out_view(const kl_accel_desc *d, const kl_accel_config *c, int64_t G, int64_t Mp, int64_t Np,
                           char *err, size_t errlen) {
  const kl_accel_frag *f = &d->c;
  if (c->m_per_wave % d->m || c->n_per_wave % d->n || c->m_per_block % c->m_per_wave ||
      c->n_per_block % c->n_per_wave || Mp % c->m_per_block || Np % c->n_per_block) {
    snprintf(err, errlen,
             "accel tiles %lldx%lld per block, %lldx%lld per wave do not fit the %dx%d instruction or C "
             "[%lld, %lld, %lld]",
             (long long)c->m_per_block, (long long)c->n_per_block, (long long)c->m_per_wave, (long long)c->n_per_wave,
             d->m, d->n, (long long)G, (long long)Mp, (long long)Np);
    return NULL;
  }
  kl_vb b;
  int64_t shape[3] = { G, Mp, Np };
  const char *names[3] = { "g", "m", "n" };
  kl_vb_identity(&b, 3, shape, names);
  const char *mpre[3] = { "mb", "wm", "mr" }, *npre[3] = { "nb", "wn", "nr" };
  int64_t msz[3] = { Mp / c->m_per_block, c->m_per_block / c->m_per_wave, c->m_per_wave / d->m };
  int64_t nsz[3] = { Np / c->n_per_block, c->n_per_block / c->n_per_wave, c->n_per_wave / d->n };
  split_dim(&b, "m", 3, mpre, msz, f, f->nx, f->x);
  split_dim(&b, "n", 3, npre, nsz, f, f->ny, f->y);
  const char *bn[3] = { "g", "mb", "nb" };
  kl_vb_merge(&b, "bid", 3, bn);
  const char *tpre[2] = { "wm", "wn" }, *ipre[2] = { "mr", "nr" };
  merge_lanes_elems(&b, f, 2, tpre, 2, ipre);
  const char *ord[3] = { "bid", "tid", "iter" };
  kl_vb_order(&b, 3, ord);
  return kl_vb_finish(&b, err, errlen);
}

/* ---- attributes of accel GEMM ops ---- */
static const char *const accel_attr_names[4] = { "m_per_wave", "n_per_wave", "accel_instr", "accel" };

bool kl_accel_is_accel(const kl_op *op) { return kl_op_attr_string(op, "accel_instr") != NULL; }

void kl_accel_copy_attrs(const kl_op *from, kl_op *to) {
  if (!kl_accel_is_accel(from)) return;
  for (int i = 0; i < 4; i++) {
    const kl_attr *a = kl_op_attr(from, accel_attr_names[i]);
    if (a) kl_op_set_attr(to, accel_attr_names[i], a);
  }
}

int kl_accel_gridwise_attrs(kl_ctx *ctx, const kl_accel_config *c, const kl_accel_desc *d, kl_named_attr *out) {
  out[0] = (kl_named_attr){ accel_attr_names[0], kl_attr_int(ctx, c->m_per_wave) };
  out[1] = (kl_named_attr){ accel_attr_names[1], kl_attr_int(ctx, c->n_per_wave) };
  out[2] = (kl_named_attr){ accel_attr_names[2], kl_attr_str(ctx, d->intrinsic) };
  out[3] = (kl_named_attr){ accel_attr_names[3], kl_attr_str(ctx, kl_accel_kind_name(d->kind)) };
  return 4;
}

kl_view *kl_accel_c_view(const kl_op *op, int64_t G, int64_t Mp, int64_t Np, char *err, size_t errlen) {
  const char *instr = kl_op_attr_string(op, "accel_instr");
  const kl_accel_desc *d = kl_accel_desc_by_intrinsic(instr);
  if (!d) {
    snprintf(err, errlen, "unknown accel_instr \"%s\"", instr ? instr : "");
    return NULL;
  }
  kl_accel_config c;
  c.split_k = 1;
  if (!kl_op_attr_i64(op, "m_per_block", &c.m_per_block) || !kl_op_attr_i64(op, "n_per_block", &c.n_per_block) ||
      !kl_op_attr_i64(op, "k_per_block", &c.k_per_block) || !kl_op_attr_i64(op, "m_per_wave", &c.m_per_wave) ||
      !kl_op_attr_i64(op, "n_per_wave", &c.n_per_wave) || !kl_op_attr_i64(op, "kpack", &c.kpack) || c.m_per_wave < 1 ||
      c.n_per_wave < 1 || c.m_per_block < 1 || c.n_per_block < 1) {
    snprintf(err, errlen,
             "accel GEMM needs positive integer attributes m_per_block, n_per_block, k_per_block, "
             "m_per_wave, n_per_wave, kpack");
    return NULL;
  }
  return kl_accel_out_view(d, &c, G, Mp, Np, err, errlen);
}
