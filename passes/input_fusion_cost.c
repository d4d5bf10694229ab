/* input_fusion_cost.c — the input-fusion cost rule (contract in input_fusion_cost.h). */
#include "passes/input_fusion_cost.h"
#include "passes/gemm_shape.h"
#include "passes/gemm_split.h"
#include <stdlib.h>

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

bool kl_input_fusion_pays(const kl_target *t, const kl_op *anchor, int operand, const kl_type *produced, int ninputs,
                          const kl_type *const *inputs, const kl_type *const *bases, kl_fuse_cost *out) {
  kl_fuse_cost c = { 0 };
  if (out) *out = c;
  if (!t || !kl_gemm_split_joint(t) || anchor->nopnds < 2 || operand < 0 || operand > 1) return true;
  /* a wgmma GEMM (sm_90a's f16 / bf16 path): fused measured faster (H100: gemm_cvt 4096^3
   * 0.360 ms fused vs 0.397 unfused, conv_cvt N = 512 0.266 vs 0.300): the rule's factor
   * is mma.sync's, so it does not apply */
  const kl_type *at = anchor->opnds[0].value->type, *bt = anchor->opnds[1].value->type;
  kl_gemm_shape gs;
  kl_gemm_config gc;
  char err[128];
  bool known = kl_gemm_shape_of(anchor, &gs) &&
      kl_gemm_config_pick(t, at->elem, bt->elem, kl_op_attr_string(anchor, "perf_config"), KL_GEMM_PICK_DEFAULT, gs.G,
                          gs.M, gs.N, gs.K, &gc, err, sizeof err);
  if (known && gc.path == KL_GEMM_PATH_WGMMA) return true;
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
  /* the GEMM (passes/gemm_shape.h) and the block tile it gets; a config that does not
   * parse or fit is reported where the GEMM is tiled */
  if (!known) return true;
  int64_t M = gs.M, N = gs.N, mpb = gc.pc.m_per_block, npb = gc.pc.n_per_block;
  if (mpb <= 0 || npb <= 0) return true;
  bool is_a = operand == gs.a_operand; /* the GEMM's A (re-read by the blocks along N) */
  c.blocks = is_a ? (N + npb - 1) / npb : (M + mpb - 1) / mpb;
  double E = (double)gs.G * (double)gs.K * (double)(is_a ? M : N);
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
