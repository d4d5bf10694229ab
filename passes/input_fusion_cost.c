/* input_fusion_cost.c — the input-fusion cost rule (contract in input_fusion_cost.h). */
#include "passes/input_fusion_cost.h"
#include "passes/gemm_split.h"
#include "passes/perf_config.h"
#include "passes/rock_accel.h"
#include <stdlib.h>
#include <string.h>

/* The block tile rock-gemm-to-gridwise would pick (the accel heuristic where the target
 * has a matrix instruction for the inputs, else the FMA heuristic; a given config string);
 * false where none fits or the string is bad (reported where the GEMM is tiled). */
static bool block_tile(const kl_target *t, const kl_type *ea, const kl_type *eb, const char *given, int64_t G,
                       int64_t M, int64_t N, int64_t K, int64_t *mpb, int64_t *npb) {
  if (given && !*given) given = NULL;
  int bytes = (kl_type_bits(ea) + 7) / 8;
  if ((kl_type_bits(eb) + 7) / 8 > bytes) bytes = (kl_type_bits(eb) + 7) / 8;
  kl_accel_config ac;
  memset(&ac, 0, sizeof ac);
  const kl_accel_desc *ad = NULL;
  char err[128];
  int accel = kl_accel_select(t, ea, eb, given, G, M, N, K, &ac, &ad, err, sizeof err);
  if (accel < 0) return false;
  kl_perf_config pc = { 0 };
  if (accel) {
    pc.m_per_block = ac.m_per_block;
    pc.n_per_block = ac.n_per_block;
  } else if (given) {
    if (!kl_perf_config_parse(given, &pc, err, sizeof err) || !kl_perf_config_validate(&pc, t, bytes, err, sizeof err))
      return false;
  } else if (!kl_perf_config_heuristic(t, G, M, N, K, bytes, &pc)) {
    return false;
  }
  *mpb = pc.m_per_block;
  *npb = pc.n_per_block;
  return *mpb > 0 && *npb > 0;
}

static int64_t numel(const kl_type *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}
static double elem_bytes(const kl_type *t) { return (double)((kl_type_bits(t->elem) + 7) / 8); }

/* The dim an element-wise kernel walks innermost: it walks its output in memory order
 * (passes/lower_loops_elementwise.c), i.e. the output's dim of smallest |stride| of
 * extent > 1 (the last such dim of a row-major value); -1 for a single element. */
static int walk_dim(const kl_type *t) {
  int d = -1;
  int64_t best = 0;
  for (int i = t->rank - 1; i >= 0; i--) {
    if (t->shape[i] <= 1) continue;
    if (!t->strides) return i;
    int64_t s = llabs(t->strides[i]);
    if (d < 0 || s < best) d = i, best = s;
  }
  return d;
}

/* Bytes a walk along dim d moves per element of t: its element where d is contiguous in
 * t, else min(32, |stride| x elem) (a 32-byte sector each). */
static double walk_bytes(const kl_type *t, int d) {
  double e = elem_bytes(t);
  if (d < 0 || d >= t->rank) return e;
  int64_t s = t->strides ? llabs(t->strides[d]) : 1;
  if (!t->strides) /* row-major: the stride of d is the product of the extents after it */
    for (int i = d + 1; i < t->rank; i++) s *= t->shape[i];
  double b = (double)(s < 1 ? 1 : s) * e;
  return b < e ? e : b > 32.0 ? (e > 32.0 ? e : 32.0) : b;
}

static bool has_flag(const kl_op *op, const char *name) {
  const kl_attr *a = kl_op_attr(op, name);
  return a && (a->kind == KL_AT_UNIT || (a->kind == KL_AT_BOOL && a->i));
}

/* Whether the anchor's GEMM takes wgmma on t (kl_wgmma_select's type rule: f16 or bf16
 * operands of one type, no v1 / v2 perf config given). */
static bool takes_wgmma(const kl_target *t, const kl_op *anchor) {
  if (!t->wgmma) return false;
  const kl_type *a = anchor->opnds[0].value->type->elem, *b = anchor->opnds[1].value->type->elem;
  const char *in = a == b && a ? kl_scalar_name(a->kind) : NULL;
  const char *pc = kl_op_attr_string(anchor, "perf_config");
  return in && (!strcmp(in, "f16") || !strcmp(in, "bf16")) &&
      !(pc && (!strncmp(pc, "v1:", 3) || !strncmp(pc, "v2:", 3)));
}

bool kl_input_fusion_pays(const kl_target *t, const kl_op *anchor, int operand, const kl_type *produced, int ninputs,
                          const kl_type *const *inputs, const kl_type *const *bases, kl_fuse_cost *out) {
  kl_fuse_cost c = { 0 };
  if (out) *out = c;
  if (!t || !kl_gemm_split_joint(t) || anchor->nopnds < 2 || operand < 0 || operand > 1) return true;
  /* a wgmma GEMM (sm_90a's f16 / bf16 path): fused measured faster (H100: gemm_cvt 4096^3
   * 0.360 ms fused vs 0.397 unfused, conv_cvt N = 512 0.266 vs 0.300): the rule's factor
   * is mma.sync's, so it does not apply */
  if (takes_wgmma(t, anchor)) return true;
  const kl_type *at = anchor->opnds[0].value->type, *bt = anchor->opnds[1].value->type;
  const kl_type *ot = anchor->opnds[operand].value->type, *yt = anchor->results[0].type;
  int64_t pn = numel(produced);
  if (pn <= 0 || numel(yt) <= 0) return true;
  /* w: the chain's input bytes per element of its result */
  double w = 0;
  for (int i = 0; i < ninputs; i++) {
    double share = (double)numel(bases[i]) / (double)pn;
    w += elem_bytes(inputs[i]) * (share < 1.0 ? share : 1.0);
  }
  c.wide = w;
  c.narrow = elem_bytes(ot);
  if (w <= c.narrow) {
    if (out) *out = c;
    return true; /* reads no more than the operand: free in the loads */
  }
  /* the GEMM: G x M x N x K, and which side the operand is */
  bool conv = kl_op_kernel_kind(anchor) == KL_KERNEL_CONV;
  int64_t G = 1, M, N, K;
  bool is_a; /* the GEMM's A (re-read by the blocks along N) */
  if (conv) {
    if (at->rank != 4 || bt->rank != 4 || yt->rank != 4) return true;
    int64_t g = 1;
    if (!kl_op_attr_i64(anchor, "groups", &g)) kl_op_attr_i64s(anchor, "groups", &g, 1);
    if (g < 1) g = 1;
    G = g;
    M = bt->shape[0] / g;
    N = yt->shape[0] * yt->shape[2] * yt->shape[3];
    K = bt->shape[1] * bt->shape[2] * bt->shape[3];
    is_a = operand == 1; /* the filter is A, the input B */
  } else {
    if (yt->rank < 2 || at->rank < 1) return true;
    bool ta = has_flag(anchor, "transpose_a");
    for (int i = 0; i < yt->rank - 2; i++) G *= yt->shape[i];
    M = yt->shape[yt->rank - 2];
    N = yt->shape[yt->rank - 1];
    K = at->shape[ta ? at->rank - 2 : at->rank - 1];
    is_a = operand == 0;
  }
  if (G < 1 || M < 1 || N < 1 || K < 1) return true;
  int64_t mpb, npb;
  if (!block_tile(t, at->elem, bt->elem, kl_op_attr_string(anchor, "perf_config"), G, M, N, K, &mpb, &npb)) return true;
  c.blocks = is_a ? (N + npb - 1) / npb : (M + mpb - 1) / mpb;
  double E = (double)G * (double)K * (double)(is_a ? M : N);
  double rate = (double)t->compute_units * (double)t->l2_bytes_per_cu_clk;
  c.fused = KL_FUSE_WIDE_LOAD_FACTOR * (w - c.narrow) * E * (double)c.blocks / rate;
  /* the convert kernel: its inputs and its output, walked in the output's memory order */
  int d = walk_dim(produced);
  double bytes = (double)pn * walk_bytes(produced, d);
  for (int i = 0; i < ninputs; i++) {
    int64_t bn = numel(bases[i]);
    bytes += bn < pn ? (double)bn * elem_bytes(bases[i]) : (double)pn * walk_bytes(inputs[i], d);
  }
  c.unfused = bytes / rate + KL_SPLIT_FIXED;
  if (out) *out = c;
  return c.fused <= c.unfused;
}
