/* fp8_compute.c — the `fp8-compute` pass: graph ops on fp8 values compute in f32.
 *
 * fp8 (f8e4m3fn, f8e5m2, f8e4m3fnuz, f8e5m2fnuz: core/dtype.h) is a storage format in
 * kiln: the generated code holds fp8 values as their codes and only converts them
 * (passes/lower_fp8.h). This pass (graph level, first in the pipeline) rewrites every
 * graph op that reads or produces fp8 values, except params, constants, views
 * (broadcast, transpose, reshape, slice: no arithmetic) and graph.convert itself:
 *   - element-wise ops, reductions, softmax, concat, where: the fp8 operands are
 *     converted to f32 (exact), the op runs in f32, and an fp8 result is converted back
 *     (one rounding, to nearest even, by the format's rules);
 *   - dot and conv whose operands are all fp8: the operands are converted to f16 (exact
 *     for all four formats: f16 holds every fp8 value, NaN and inf included) and the op
 *     gets {dtype = f32}: the f16 MMA / WMMA / mma.sync paths with f32 accumulation
 *     (every product of two fp8 values is exact in f32); the f32 result is converted to
 *     the op's result type (f32 for quant_dot, fp8 for a plain fp8 dot). Mixed fp8 / other
 *     operands convert the fp8 ones to f32.
 *     Option gemm-operands: "auto" (the default) and "f16" convert them as above on every
 *     target; "fp8" keeps the fp8 operands (still {dtype = f32}) on every target: on sm_90a
 *     a dot / conv of two f8e4m3fn or two f8e5m2 operands then runs the fp8 wgmma
 *     (wgmma.mma_async k32 e4m3 / e5m2, passes/rock_wgmma.h), elsewhere the GEMM reads fp8
 *     and converts after its LDS / register tiles (how the host runs the fp8 GEMM IR in the
 *     specs). The fp8 wgmma is opt-in because its accumulation is not f32: measured on an
 *     H100 and an H200, each k32 instruction aligns its addends (the 32 products and the
 *     f32 accumulator) to the largest one's exponent emax, drops their bits below
 *     2^(emax - 13) and truncates their sum to 14 significant bits (toward zero), so it is
 *     outside the f32 summation bound (docs/ARCHITECTURE.md, bench/fp8_accum_probe.lua,
 *     bench/fp8_promote_probe.lua); the f16 path is exact. Two-level accumulation
 *     (rock-gemm-to-gridwise's fp8-promote=N: an f32 add every N K elements; default 0, one
 *     level) narrows the error, but its bound is still not the f32 one: auto stays f16.
 * Every convert is a graph.convert, so graph-partition fuses them with their neighbours
 * as any element-wise op (the operand converts of a GEMM are separate element-wise
 * kernels that write the f16 copies). The reference evaluator computes on the fp8
 * values in f64 and rounds once at the op's result, so the two differ by at most one
 * fp8 rounding step (the fp8 tolerances of runtime/tensor.h). */
#include "core/dialect_graph.h"
#include "core/pass.h"
#include "core/rewrite.h"
#include <string.h>

static bool is_fp8(const kl_value *v) { return v->type->kind == KL_TY_TENSOR && kl_type_is_fp8(v->type->elem); }

static kl_value *convert(kl_rewriter *rw, kl_loc loc, kl_value *x, const kl_type *elem) {
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  const kl_type *rt = kl_graph_infer(ctx, "graph.convert", loc, 1, (const kl_type *const *)&x->type, 0, NULL, elem);
  return rt ? kl_op_result(kl_rewriter_create(rw, "graph.convert", loc, 1, &x, 1, &rt, 0, NULL, 0), 0) : NULL;
}

/* The GEMM operand rule of option gemm-operands (see the header): true = keep fp8. auto is
 * f16 everywhere (the exact path); fp8 is the explicit opt-in. */
typedef enum { OPND_AUTO, OPND_FP8, OPND_F16 } opnd_mode;
static bool keep_fp8_operands(kl_op *op, opnd_mode mode) { return mode == OPND_FP8 && op->nopnds == 2; }

static kl_status widen_one(kl_rewriter *rw, kl_op *op, opnd_mode mode) {
  kl_ctx *ctx = op->ctx;
  bool any = op->nresults == 1 && is_fp8(&op->results[0]), all = op->nopnds > 0;
  for (int i = 0; i < op->nopnds; i++) {
    any = any || is_fp8(op->opnds[i].value);
    all = all && is_fp8(op->opnds[i].value);
  }
  if (!any || op->nresults != 1) return KL_OK;
  bool gemm = kl_op_has_trait(op, KL_TRAIT_GEMM_ANCHOR);
  const kl_type *f32 = kl_type_f32(ctx), *in = gemm && all ? kl_type_scalar(ctx, KL_TY_F16) : f32;
  bool keep = gemm && all && keep_fp8_operands(op, mode);
  kl_rewriter_set_insertion_before(rw, op);
  kl_value *opnds[64];
  const kl_type *ts[64];
  if (op->nopnds > 64) return kl_emit_error(ctx, op->loc, "fp8-compute: '%s' has too many operands", op->name);
  for (int i = 0; i < op->nopnds; i++) {
    kl_value *x = op->opnds[i].value;
    opnds[i] = is_fp8(x) && !keep ? convert(rw, op->loc, x, in) : x;
    if (!opnds[i]) return KL_ERR;
    ts[i] = opnds[i]->type;
  }
  /* the attributes, a dtype of fp8 (or any dtype of a GEMM) becoming f32 */
  kl_named_attr at[64];
  int na = 0;
  bool has_dtype = false;
  for (int i = 0; i < op->nattrs && na < 63; i++) {
    at[na] = op->attrs[i];
    if (!strcmp(at[na].name, "dtype") && at[na].value->kind == KL_AT_TYPE &&
        (gemm || kl_type_is_fp8(at[na].value->type))) {
      at[na].value = kl_attr_type(ctx, f32);
      has_dtype = true;
    }
    na++;
  }
  if (gemm && !has_dtype) at[na++] = (kl_named_attr){ "dtype", kl_attr_type(ctx, f32) };
  const kl_type *rt = kl_graph_infer(ctx, op->name, op->loc, op->nopnds, ts, na, at, NULL);
  if (!rt) return KL_ERR;
  kl_op *n = kl_rewriter_create(rw, op->name, op->loc, op->nopnds, opnds, 1, &rt, na, at, 0);
  kl_value *y = kl_op_result(n, 0);
  const kl_type *want = op->results[0].type->elem;
  if (y->type->elem != want) y = convert(rw, op->loc, y, want);
  if (!y) return KL_ERR;
  kl_rewriter_replace_op(rw, op, &y);
  return KL_OK;
}

static kl_status run_fp8(kl_op *module, const kl_pass_options *po, void *user) {
  (void)user;
  kl_block *mb = kl_module_body(module);
  if (!mb) return KL_OK;
  const char *ms = kl_pass_opt_string(po, "gemm-operands");
  opnd_mode mode = !ms || !strcmp(ms, "auto") ? OPND_AUTO : !strcmp(ms, "fp8") ? OPND_FP8 : OPND_F16;
  if (ms && strcmp(ms, "auto") && strcmp(ms, "fp8") && strcmp(ms, "f16"))
    return kl_emit_error(module->ctx, module->loc, "fp8-compute: gemm-operands must be auto, fp8 or f16, got %s", ms);
  kl_rewriter *rw = kl_rewriter_new(module->ctx);
  kl_status st = KL_OK;
  for (kl_op *g = mb->first; g && st == KL_OK; g = g->next) {
    if (!kl_is_graph(g)) continue;
    kl_block *b = kl_graph_body(g);
    kl_op *next;
    for (kl_op *op = b ? b->first : NULL; op && st == KL_OK; op = next) {
      next = op->next;
      if (!op->def || kl_graph_is_param(op) || kl_graph_is_constant(op) || kl_graph_is_launch(op) ||
          kl_op_has_trait(op, KL_TRAIT_VIEW) || !strcmp(op->name, "graph.convert") || strncmp(op->name, "graph.", 6) ||
          kl_op_kernel_kind(op) == KL_KERNEL_REDUCE || kl_op_kernel_kind(op) == KL_KERNEL_SOFTMAX)
        continue;
      st = widen_one(rw, op, mode);
    }
  }
  kl_rewriter_free(rw);
  return st;
}

static const kl_pass_option options[] = {
  { "gemm-operands", KL_OPT_STRING, "auto",
    "operands of a dot / conv of fp8 values: auto (= f16) and f16 convert them to f16 (exact; f32 accumulation); "
    "fp8 keeps them on every target: the fp8 wgmma on sm_90a (opt-in: it truncates each k32 instruction's addends "
    "below 2^(emax-13), not an f32 sum), elsewhere the GEMM converts after its tiles" },
};

void kl__register_fp8_compute(kl_ctx *ctx);
void kl__register_fp8_compute(kl_ctx *ctx) {
  kl_pass_info info = { "fp8-compute",
                        "graph ops on fp8 values compute in f32 (dot / conv of fp8 operands: f16 operands and f32 "
                        "accumulation, or with gemm-operands=fp8 fp8 ones, the fp8 wgmma on sm_90a) between "
                        "converts; fp8 stays a storage format",
                        options,
                        (int)(sizeof options / sizeof *options),
                        run_fp8,
                        NULL };
  kl_register_pass(ctx, &info);
}
