/* rock_gemm_to_gridwise.c — the `rock-gemm-to-gridwise` pass.
 *
 * For every rock.gemm(a [G,K,M], b [G,K,N], c [G,M,N]) inside a kernel func:
 *  1. the target: option `target`, else the func's / module's "target" attribute,
 *     else "host" (perf_config.h, kl_perf_resolve_target);
 *  2. the perf config: option `perf-config`, else the gemm's "perf_config" string
 *     attribute, else the kernel func's, else the entry of option `tuned` ("KEY=CONFIG;
 *     KEY=CONFIG...", what the driver reads from a tuning database, driver/tuning_db.h)
 *     whose KEY is the kernel's problem key (passes/problem_key.h), else the heuristic of
 *     perf_config.h (a tuned config counts as given: no split-K heuristic); the kernel func
 *     gets problem_key, problem (the readable summary) and perf_config_source ("user",
 *     "tuned (db)" or "heuristic"); the choice is kl_gemm_config_pick's
 *     (passes/gemm_shape.h, shared with the passes that predict it); a given
 *     string is parsed and validated (errors name the field and stop the pass); a
 *     "v2:" config, or none on a target with a matrix instruction for the input type
 *     (option accel, default true), takes the accel path of passes/rock_accel.h: the
 *     gridwise op also gets m_per_wave, n_per_wave, accel_instr and accel;
 *  3. M, N, K are padded up to multiples of mPerBlock, nPerBlock, kPerBlock with one
 *     rock.transform (a Pad view, right padding) on each of a, b, c that needs it:
 *     padding reads 0, writes into it are dropped;
 *  4. the gemm becomes rock.gridwise_gemm(a', b', c') with the gemm's attributes plus
 *     perf_config (canonical string), m_per_block, n_per_block, k_per_block,
 *     m_per_thread, n_per_thread, kpack, block_size, grid_size (= G * ceil(M/mPerBlock)
 *     * ceil(N/nPerBlock)) and store (default "set");
 *  5. the kernel func gets block_size, grid_size, perf_config and target (the resolved
 *     target name); an MFMA GEMM also amdgpu_regs, the config's register estimate per lane
 *     (kl_accel_amd_regs: VGPRs + AGPRs), from which lower-to-llvm asks LLVM for a
 *     minimum occupancy (passes/lower_to_llvm.h).
 * Split-K (the config's splitK field S, perf_config.h; without a config the heuristic:
 * when the output tiles fill under half the target's compute_units, S doubles up to 64
 * while every slice keeps >= 4 kPerBlock iterations; never on the host, whose
 * compute_units is 0; on sm_90 the joint choice of kl_gemm_split_choose, after which the
 * heuristic's config for the G*S x M x N x ceil(K/S) GEMM replaces the whole GEMM's,
 * passes/gemm_split.h; the wgmma path keeps the tile-count rule): slices of Kc = ceil(ceil(K/S)/kPerBlock)*kPerBlock, S reduced to
 * ceil(K/Kc) (no slice of padding only) and printed in the config; a and b are viewed as
 * [G*S, Kc, X] (K padded to S*Kc, split into (s, kc), s merged into the batch), c as
 * [G*S, M, N] with s ignored (AddDim), so the grid is G*S*tiles and every split writes
 * the same C element: the gridwise op gets store = "atomic_add" and split_k = S, and the
 * kernel func split_k = S and prefill = {"<c's argument>" = 0.0} (driver/plan.c fills c
 * before the launch). Only when c is a kernel argument that nothing else in the kernel
 * touches (no fused epilogue reads the accumulator), of f32, on a target with native f32
 * atomic adds (kl_target.atomic_add), with store "set" or already "atomic_add" (a GEMM +
 * reduce of graph-to-rock: the split adds into the same sums); a given S > 1 otherwise, or
 * S > K, is an error naming the reason. The heuristic stays at 1 then. Other outputs
 * split before: split-k-workspace rewrites their graph (f32 partials through a workspace,
 * summed by an element-wise kernel that runs the epilogue); its partial GEMMs carry
 * `split_k_partials` and are not split again (the config's splitK is ignored there).
 * mma.sync (heuristic configs only): when C is contiguous along M rather than N (longer
 * vectors along M), the gemm is computed transposed, C^T = B^T A^T: the gridwise op gets
 * (b, a, c under a rock.transform viewing it as [G,N,M]) and the config is chosen for
 * that problem, so C's reads and writes use the pairs of columns of the mma.sync
 * accumulator layout as vectors.
 * One rock.gemm per kernel func (a second one is an error: block and grid sizes are per
 * kernel). Gemms outside kernel funcs are left alone. */
#include "core/pass.h"
#include "core/rewrite.h"
#include "core/dialect_rock.h"
#include "passes/fusion_util.h"
#include "passes/gemm_shape.h"
#include "passes/gemm_split.h"
#include "passes/lower_loops.h"
#include "passes/problem_key.h"
#include "passes/perf_config.h"
#include "passes/rock_accel.h"
#include "passes/rock_wgmma.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *target, *perf;
  bool accel, wgmma;
  const char *tuned;
  int64_t fp8_promote; /* option fp8-promote: K elements per promotion interval of the fp8 wgmma, 0 off */
} opts;

/* the accel config string: "v3:" for wgmma (passes/rock_wgmma.h), else "v2:" */
static void accel_print(const kl_accel_config *c, const kl_accel_desc *d, char *buf, size_t n) {
  if (d && d->kind == KL_ACCEL_WGMMA)
    kl_wgmma_config_print(c, buf, n);
  else
    kl_accel_config_print(c, buf, n);
}

static kl_value *pad_operand(kl_rewriter *rw, kl_op *op, kl_value *v, const char *const *names, const int64_t *padded,
                             bool *ok) {
  const kl_type *t = v->type;
  int64_t lr[6] = { 0 };
  bool any = false;
  for (int i = 0; i < 3; i++) {
    lr[2 * i + 1] = padded[i] - t->shape[i];
    any |= lr[2 * i + 1] > 0;
  }
  if (!any) return v;
  kl_vb b;
  kl_vb_identity(&b, 3, t->shape, names);
  kl_vb_pad(&b, 3, names, lr);
  char err[300];
  kl_view *view = kl_vb_finish(&b, err, sizeof err);
  if (!view) {
    kl_rewriter_fail(rw, op->loc, "rock-gemm-to-gridwise: %s", err);
    *ok = false;
    return v;
  }
  kl_value *r = kl_tile_transform(rw, op->loc, v, view);
  kl_view_free(view);
  return r;
}

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/* ---- split-K ---- */
/* Why a split-K GEMM cannot write c (NULL: it can): the partial products are added
 * atomically into c after the plan prefills it with 0, so c must be a kernel output
 * argument that only this gemm touches (through views; no fused epilogue reads the
 * accumulator), of an element type the target adds atomically (f32 here), with store
 * "set" or "atomic_add" (GEMM + reduce). *arg = the argument index. */
static const char *split_blocker(kl_op *gemm, kl_op *fn, const kl_target *t, int *arg) {
  kl_op *chain[16];
  int nc = 0;
  kl_value *c = gemm->opnds[2].value, *u = kl_rock_underlying(c, chain, &nc, 16);
  kl_block *entry = fn->nregions ? fn->regions[0].first : NULL;
  if (!u || u->def || u->block != entry) return "the GEMM writes an intermediate (a fused epilogue reads it)";
  if (u->type->elem->kind != KL_TY_F32) return "the output is not f32 (only f32 partial products are added atomically)";
  if (!(t->atomic_add & KL_ATOMIC_ADD_F32)) return "the target has no native f32 atomic add";
  const char *store = kl_op_attr_string(gemm, "store");
  if (store && strcmp(store, "set") && strcmp(store, "atomic_add")) /* atomic_add: GEMM + reduce, splits too */
    return "the GEMM's store is neither \"set\" nor \"atomic_add\"";
  /* every use of the argument leads to this gemm through transforms */
  kl_value *stack[64];
  int ns = 0;
  stack[ns++] = u;
  while (ns) {
    kl_value *v = stack[--ns];
    for (kl_use *us = v->first_use; us; us = us->next) {
      kl_op *x = us->user;
      if (x == gemm) continue;
      if (strcmp(x->name, "rock.transform") || x->nresults != 1 || ns >= 64)
        return "the output is read or written by another op of the kernel";
      stack[ns++] = &x->results[0];
    }
  }
  *arg = u->index;
  return NULL;
}

/* v [G, K, X] (names g, k, x) viewed as [G*S, Kc, X]: K padded to S*Kc, split (s, kc)
 * with s merged into the batch; c [G, M, N] as [G*S, M, N] with s ignored (every split
 * writes the same element: the adds are atomic). */
static kl_value *split_view(kl_rewriter *rw, kl_op *op, kl_value *v, bool is_c, int64_t S, int64_t Kc, bool *ok) {
  const kl_type *t = v->type;
  kl_vb b;
  static const char *const in[] = { "g", "k", "x" }, *const cn[] = { "g", "m", "n" };
  kl_vb_identity(&b, 3, t->shape, is_c ? cn : in);
  if (is_c) {
    static const char *const ord[] = { "g", "s", "m", "n" }, *const gs[] = { "g", "s" };
    kl_vb_add_dim(&b, "s", S);
    kl_vb_order(&b, 4, ord);
    kl_vb_merge(&b, "gs", 2, gs);
  } else {
    static const char *const kn[] = { "k" }, *const parts[] = { "s", "kc" }, *const ord[] = { "g", "s", "kc", "x" },
                             *const gs[] = { "g", "s" };
    int64_t lr[2] = { 0, S * Kc - t->shape[1] }, sizes[2] = { S, Kc };
    if (lr[1] > 0) kl_vb_pad(&b, 1, kn, lr);
    kl_vb_unmerge(&b, "k", 2, parts, sizes);
    kl_vb_order(&b, 4, ord);
    kl_vb_merge(&b, "gs", 2, gs);
  }
  char err[300];
  kl_view *view = kl_vb_finish(&b, err, sizeof err);
  if (!view) {
    kl_rewriter_fail(rw, op->loc, "rock-gemm-to-gridwise: split-K: %s", err);
    *ok = false;
    return v;
  }
  kl_value *r = kl_tile_transform(rw, op->loc, v, view);
  kl_view_free(view);
  return r;
}

/* The config of key in tuned ("KEY=CONFIG;KEY=CONFIG..."; the last entry of a key wins)
 * into buf; false if none. */
static bool tuned_lookup(const char *tuned, const char *key, char *buf, size_t n) {
  size_t kl = strlen(key);
  bool found = false;
  for (const char *p = tuned; *p;) {
    const char *end = strchr(p, ';');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > kl + 1 && !strncmp(p, key, kl) && p[kl] == '=' && len - kl - 1 < n) {
      memcpy(buf, p + kl + 1, len - kl - 1);
      buf[len - kl - 1] = 0;
      found = true;
    }
    p += len + (end ? 1 : 0);
  }
  return found;
}

/* Whether an operand of the GEMM is read through an input-fusion prologue (the rock.alloc
 * it reads is written by one fusing op, fusion_util.h) with an input of a wider type than
 * the operand: its copies stage the wide loads in registers until the LDS stores. */
static bool wide_staged(kl_op *op) {
  for (int i = 0; i < 2; i++) {
    kl_op *w = NULL;
    kl_value *al = NULL;
    kl_fu_input *in = NULL;
    int n = kl_fu_operand_inputs(op->opnds[i].value, &w, &al, &in, NULL, 0);
    bool wide = false;
    for (int j = 0; j < n; j++)
      if (kl_type_bits(in[j].base->type->elem) > kl_type_bits(op->opnds[i].value->type->elem)) wide = true;
    if (n > 0) kl_fu_inputs_free(in, n);
    if (wide) return true;
  }
  return false;
}

static bool gemm_to_gridwise(const kl_pattern *pat, kl_op *op, kl_rewriter *rw) {
  const opts *o = pat->user;
  kl_ctx *ctx = op->ctx;
  kl_op *fn = kl_tile_func_of(op);
  if (!fn || !kl_is_kernel(fn)) return kl_rewriter_notify_no_match(rw, "not inside a kernel func");
  if (op->nopnds != 3) {
    kl_rewriter_fail(rw, op->loc, "rock.gemm needs 3 operands");
    return false;
  }
  const kl_type *ta = op->opnds[0].value->type, *tb = op->opnds[1].value->type, *tc = op->opnds[2].value->type;
  if (ta->kind != KL_TY_BUFFER || tb->kind != KL_TY_BUFFER || tc->kind != KL_TY_BUFFER || ta->rank != 3 ||
      tb->rank != 3 || tc->rank != 3) {
    kl_rewriter_fail(rw, op->loc, "rock.gemm needs rank-3 buffers a [G,K,M], b [G,K,N], c [G,M,N]");
    return false;
  }
  int64_t G = ta->shape[0], K = ta->shape[1], M = ta->shape[2], N = tb->shape[2];
  if (tb->shape[0] != G || tc->shape[0] != G || tb->shape[1] != K || tc->shape[1] != M || tc->shape[2] != N) {
    kl_rewriter_fail(rw, op->loc, "rock.gemm shapes do not agree: a %s, b %s, c %s", ta->text, tb->text, tc->text);
    return false;
  }
  if (G < 1 || K < 1 || M < 1 || N < 1) {
    kl_rewriter_fail(rw, op->loc, "rock.gemm has an empty dimension (G=%lld K=%lld M=%lld N=%lld)", (long long)G,
                     (long long)K, (long long)M, (long long)N);
    return false;
  }
  char err[512];
  const kl_target *t = kl_perf_resolve_target(op, o->target, err, sizeof err);
  if (!t) {
    kl_rewriter_fail(rw, op->loc, "rock-gemm-to-gridwise: %s", err);
    return false;
  }
  const char *given = o->perf && *o->perf ? o->perf : kl_op_attr_string(op, "perf_config");
  if (!given) given = kl_op_attr_string(fn, "perf_config");
  const char *source = given ? "user" : "heuristic";
  char pkey[KL_PROBLEM_KEY_LEN], pdesc[256], tuned_buf[128];
  kl_gemm_problem_key(fn, op, pkey, pdesc, sizeof pdesc);
  if (!given && o->tuned && *o->tuned && tuned_lookup(o->tuned, pkey, tuned_buf, sizeof tuned_buf)) {
    given = tuned_buf;
    source = "tuned (db)";
  }
  /* the config (passes/gemm_shape.h): the wgmma heuristic (sm_90a's default,
   * passes/rock_wgmma.h), else matrix instructions (passes/rock_accel.h: a "v2:" / "v3:"
   * config, or none on a target with an instruction for the input type; the thread tile
   * then only fixes block size and accumulator count, the C layout is the instruction's),
   * else the FMA path */
  unsigned pick = (o->accel ? KL_GEMM_PICK_ACCEL : 0) | (o->wgmma ? KL_GEMM_PICK_WGMMA : 0);
  /* the cp.async pipeline on by default (KL_CP_ASYNC_DEFAULT auto) and both operands able to
   * take it, K- or M / N-contiguous (kl_gemm_async_major, passes/gemm_shape.h): mma.sync's
   * heuristic for async operands (larger block tiles); not for the partial-product GEMM of
   * split-k-workspace, whose tiles its split model chose with the plain pick (gemm_split.h) */
  unsigned async_pick = KL_CP_ASYNC_DEFAULT < 0 && t->arch == KL_ARCH_NVPTX && !kl_op_attr(op, "split_k_partials") &&
          kl_gemm_async_major(op->opnds[0].value) != KL_ASYNC_NONE &&
          kl_gemm_async_major(op->opnds[1].value) != KL_ASYNC_NONE
      ? KL_GEMM_PICK_ASYNC
      : 0;
  pick |= async_pick;
  kl_gemm_config gc;
  if (!kl_gemm_config_pick(t, ta->elem, tb->elem, given, pick, G, M, N, K, &gc, err, sizeof err)) {
    kl_rewriter_fail(rw, op->loc, "rock.gemm: %s", err);
    return false;
  }
  kl_perf_config pc = gc.pc;
  kl_accel_config ac = gc.ac;
  const kl_accel_desc *ad = gc.ad;
  /* an operand an input-fusion prologue stages from a wider type keeps the wgmma heuristic's
   * kPerBlock at 32 (kl_wgmma_wide_staging, passes/rock_wgmma.h) */
  if (gc.path == KL_GEMM_PATH_WGMMA && !given && wide_staged(op) && kl_wgmma_wide_staging(&ac))
    pc.k_per_block = ac.k_per_block;
  /* an operand with loads narrower than 16 bytes (odd strides) at 32 or 16 (kl_wgmma_narrow_loads) */
  if (gc.path == KL_GEMM_PATH_WGMMA && !given) {
    int64_t la = kl_gemm_load_bytes(op->opnds[0].value), lb = kl_gemm_load_bytes(op->opnds[1].value);
    if (kl_wgmma_narrow_loads(&ac, la < lb ? la : lb)) pc.k_per_block = ac.k_per_block;
  }
  /* the fp8 wgmma with promotion (option fp8-promote): two accumulators per thread, a K
   * tile dividing the interval (kl_wgmma_promote_tiles) */
  bool promote = gc.path == KL_GEMM_PATH_WGMMA && o->fp8_promote > 0 && kl_wgmma_instr_is_fp8(ad->intrinsic);
  if (promote && !given &&
      kl_wgmma_promote_tiles(&ac, &ad, kl_scalar_name(ta->elem->kind), o->fp8_promote,
                             kl_gemm_bounded_operand(op->opnds[0].value) ||
                                 kl_gemm_bounded_operand(op->opnds[1].value))) {
    pc = (kl_perf_config){ ac.m_per_block, ac.n_per_block, ac.k_per_block, 1, 1, ac.kpack, ac.split_k };
    kl_accel_thread_tile(&ac, ad, &pc.m_per_thread, &pc.n_per_thread);
  }
  if (promote && (pc.k_per_block > o->fp8_promote || o->fp8_promote % pc.k_per_block)) {
    kl_rewriter_fail(rw, op->loc,
                     "rock.gemm: fp8-promote %lld is not a multiple of the perf config's kPerBlock (%lld): the "
                     "promotion interval must be whole K tiles",
                     (long long)o->fp8_promote, (long long)pc.k_per_block);
    return false;
  }
  bool accel = gc.path != KL_GEMM_PATH_FMA;
  /* mma.sync keeps pairs of C columns (N) in a lane: when C is contiguous along M instead
   * (e.g. an NHWC convolution output), compute C^T = B^T A^T (operands swapped, C viewed
   * as [G,N,M]) so C's accesses are vectors. Only for the heuristic's configs (a given
   * config keeps its meaning). */
  bool swap = false;
  if (accel && !given && ad->kind == KL_ACCEL_MMA_SYNC) {
    kl_vb vb;
    static const char *const cnames[] = { "g", "m", "n" };
    kl_vb_identity(&vb, 3, tc->shape, cnames);
    kl_view *cid = kl_vb_finish(&vb, err, sizeof err);
    if (cid && kl_tile_vector_len(cid, op->opnds[2].value, 1) > kl_tile_vector_len(cid, op->opnds[2].value, 2)) {
      kl_gemm_config sc;
      if (kl_gemm_config_pick(t, tb->elem, ta->elem, NULL, KL_GEMM_PICK_ACCEL | async_pick, G, N, M, K, &sc, err,
                              sizeof err) &&
          sc.path == KL_GEMM_PATH_ACCEL) {
        swap = true;
        pc = sc.pc;
        ac = sc.ac;
        ad = sc.ad;
      }
    }
    kl_view_free(cid);
  }
  if (swap) {
    int64_t tmp = M;
    M = N;
    N = tmp;
  }
  char pcs[160];
  if (accel)
    accel_print(&ac, ad, pcs, sizeof pcs);
  else
    kl_perf_config_print(&pc, pcs, sizeof pcs);
  /* split-K: the given config's splitK, else the heuristic's where the output allows it */
  int64_t S = given ? pc.split_k : 1, KB = pc.k_per_block;
  if (S < 1) S = 1;
  /* the partial-product GEMM of split-k-workspace (or its remainder) already is a
   * split: the config's tiles apply, its splitK does not */
  bool partials = kl_op_attr(op, "split_k_partials") != NULL;
  if (partials) S = 1;
  int out_arg = -1;
  const char *blocker = split_blocker(op, fn, t, &out_arg);
  if (S > K) {
    kl_rewriter_fail(rw, op->loc, "rock.gemm: perf config %s: splitK (%lld) is larger than K (%lld)", pcs, (long long)S,
                     (long long)K);
    return false;
  }
  if (S > 1 && blocker) {
    kl_rewriter_fail(rw, op->loc, "rock.gemm: perf config %s: splitK %lld is not possible here: %s", pcs, (long long)S,
                     blocker);
    return false;
  }
  if (!given && !blocker && !partials) {
    kl_gemm_split_est est = { kl_perf_config_grid_size(&pc, G, M, N), KB, 1 };
    /* the wgmma path keeps the tile-count rule; swap: the operands' types swap too */
    const kl_type *ea = swap ? tb->elem : ta->elem, *eb2 = swap ? ta->elem : tb->elem;
    S = accel && ad->kind == KL_ACCEL_WGMMA ? kl_gemm_split_heuristic(t, est.tiles, K, KB)
                                            : kl_gemm_split_choose(t, ea, eb2, G, M, N, K, KL_SPLIT_MAX, &est);
    /* the joint choice: the split GEMM (G*S x M x N x slice) takes the config the heuristic
     * picks for it (other targets keep the config of the whole GEMM) */
    int64_t kc = (K + S - 1) / S;
    bool joint = S > 1 && kl_gemm_split_joint(t);
    kl_gemm_config sc;
    if (joint && (!accel || ad->kind != KL_ACCEL_WGMMA) &&
        kl_gemm_config_pick(t, ea, eb2, NULL, accel ? KL_GEMM_PICK_ACCEL : 0, G * S, M, N, kc, &sc, err, sizeof err) &&
        (sc.path != KL_GEMM_PATH_FMA) == accel) {
      pc = sc.pc;
      ac = sc.ac;
      ad = sc.ad;
    }
    KB = pc.k_per_block;
  }
  /* AMDGPU: the heuristic tile's K loop (kl_accel_amd_k_tile: the K-halved double-buffered
   * variant where its K-loop model says), not where an operand has bounds checks, and only
   * where the K loop's barrier is the LDS-only inline assembly (kl_amdgpu_barrier_drains:
   * gfx908, gfx11), across which LLVM schedules none of the loop's work: with LLVM's
   * s_barrier (gfx90a, gfx942) the scheduler moved the next step's register copies of
   * its loaded B tile (v_perm of the transposed copy) above the barrier into the matrix
   * instructions, behind an s_waitcnt vmcnt(0), in gfx90a's 4096^3 256x128x32 loop: the
   * loads would not stay in flight (spec/lua/amd_isa_spec.lua) */
  if (!given && accel && !swap && kl_gemm_amd_k_loop(op, t)) {
    int eb = (kl_type_bits(ta->elem) + 7) / 8;
    if ((kl_type_bits(tb->elem) + 7) / 8 > eb) eb = (kl_type_bits(tb->elem) + 7) / 8;
    if (kl_accel_amd_k_tile(t, ad, G * S, M, N, (K + S - 1) / S, eb, &ac)) {
      pc.k_per_block = KB = ac.k_per_block;
      accel_print(&ac, ad, pcs, sizeof pcs);
    }
  }
  int64_t Kc = round_up((K + S - 1) / S, KB);
  if (S > 1) S = (K + Kc - 1) / Kc; /* no split of only padding */
  if (S > 1 || given) {             /* the printed config carries the split that runs (1: none) */
    pc.split_k = ac.split_k = S;
    if (accel)
      accel_print(&ac, ad, pcs, sizeof pcs);
    else
      kl_perf_config_print(&pc, pcs, sizeof pcs);
  }
  int64_t GS = G * S, KS = S > 1 ? Kc : K;
  int64_t Mp = round_up(M, pc.m_per_block), Np = round_up(N, pc.n_per_block), Kp = round_up(KS, pc.k_per_block);
  int64_t bs = kl_perf_config_block_size(&pc), grid = kl_perf_config_grid_size(&pc, GS, M, N);

  kl_rewriter_set_insertion_before(rw, op);
  static const char *const an[] = { "g", "k", "m" }, *const bn[] = { "g", "k", "n" }, *const cn[] = { "g", "m", "n" };
  int64_t pa[3] = { GS, Kp, Mp }, pb[3] = { GS, Kp, Np }, pcc[3] = { GS, Mp, Np };
  bool ok = true;
  kl_value *opnds[3];
  kl_value *va = op->opnds[0].value, *vb = op->opnds[1].value, *vc = op->opnds[2].value;
  if (swap) { /* a <- b, b <- a, c <- c viewed as [G, N, M] */
    kl_value *tmp = va;
    va = vb;
    vb = tmp;
    kl_vb b;
    static const char *const tn[] = { "g", "n", "m" };
    kl_vb_identity(&b, 3, tc->shape, cn);
    kl_vb_order(&b, 3, tn);
    kl_view *tv = kl_vb_finish(&b, err, sizeof err);
    if (!tv) {
      kl_rewriter_fail(rw, op->loc, "rock-gemm-to-gridwise: %s", err);
      return false;
    }
    vc = kl_tile_transform(rw, op->loc, vc, tv);
    kl_view_free(tv);
  }
  if (S > 1) {
    va = split_view(rw, op, va, false, S, Kc, &ok);
    if (ok) vb = split_view(rw, op, vb, false, S, Kc, &ok);
    if (ok) vc = split_view(rw, op, vc, true, S, Kc, &ok);
    if (!ok) return false;
  }
  opnds[0] = pad_operand(rw, op, va, an, pa, &ok);
  if (ok) opnds[1] = pad_operand(rw, op, vb, bn, pb, &ok);
  if (ok) opnds[2] = pad_operand(rw, op, vc, cn, pcc, &ok);
  if (!ok) return false;

  const char *store = kl_op_attr_string(op, "store");
  kl_named_attr *attrs = kl_xmalloc((op->nattrs + 16) * sizeof *attrs);
  int na = 0;
  for (int i = 0; i < op->nattrs; i++) attrs[na++] = op->attrs[i];
  attrs[na++] = (kl_named_attr){ "perf_config", kl_attr_str(ctx, pcs) };
  attrs[na++] = (kl_named_attr){ "m_per_block", kl_attr_int(ctx, pc.m_per_block) };
  attrs[na++] = (kl_named_attr){ "n_per_block", kl_attr_int(ctx, pc.n_per_block) };
  attrs[na++] = (kl_named_attr){ "k_per_block", kl_attr_int(ctx, pc.k_per_block) };
  attrs[na++] = (kl_named_attr){ "m_per_thread", kl_attr_int(ctx, pc.m_per_thread) };
  attrs[na++] = (kl_named_attr){ "n_per_thread", kl_attr_int(ctx, pc.n_per_thread) };
  attrs[na++] = (kl_named_attr){ "kpack", kl_attr_int(ctx, pc.kpack) };
  attrs[na++] = (kl_named_attr){ "block_size", kl_attr_int(ctx, bs) };
  attrs[na++] = (kl_named_attr){ "grid_size", kl_attr_int(ctx, grid) };
  attrs[na++] = (kl_named_attr){ "store", kl_attr_str(ctx, S > 1 ? "atomic_add" : store ? store : "set") };
  if (S > 1) attrs[na++] = (kl_named_attr){ "split_k", kl_attr_int(ctx, S) };
  if (accel) na += kl_accel_gridwise_attrs(ctx, &ac, ad, attrs + na); /* m_per_wave, n_per_wave, accel_instr, accel */
  if (promote) attrs[na++] = (kl_named_attr){ "fp8_promote", kl_attr_int(ctx, o->fp8_promote) };
  /* kl_op_create sorts; later duplicates of a name replace the gemm's own entries */
  kl_named_attr *dedup = kl_xmalloc(na * sizeof *dedup);
  int nd = 0;
  for (int i = 0; i < na; i++) {
    bool later = false;
    for (int j = i + 1; j < na && !later; j++) later = !strcmp(attrs[i].name, attrs[j].name);
    if (!later) dedup[nd++] = attrs[i];
  }
  kl_op *gw = kl_op_create(ctx, "rock.gridwise_gemm", op->loc, 3, opnds, 0, NULL, nd, dedup, 0);
  free(attrs);
  free(dedup);
  kl_rewriter_replace_op_with(rw, op, gw);

  kl_rewriter_modify_start(rw, fn);
  kl_op_set_attr(fn, "block_size", kl_attr_int(ctx, bs));
  kl_op_set_attr(fn, "grid_size", kl_attr_int(ctx, grid));
  kl_op_set_attr(fn, "perf_config", kl_attr_str(ctx, pcs));
  kl_op_set_attr(fn, "target", kl_attr_str(ctx, t->name));
  kl_op_set_attr(fn, "problem_key", kl_attr_str(ctx, pkey));
  kl_op_set_attr(fn, "problem", kl_attr_str(ctx, pdesc));
  kl_op_set_attr(fn, "perf_config_source", kl_attr_str(ctx, source));
  if (promote) kl_op_set_attr(fn, "fp8_promote", kl_attr_int(ctx, o->fp8_promote));
  if (accel && t->arch == KL_ARCH_AMDGPU && ad->kind == KL_ACCEL_MFMA) {
    /* the register estimate of the config (rock_accel.h), for lower-to-llvm's waves-per-eu */
    int64_t arch = 0, acc = 0;
    kl_accel_amd_regs(&ac, ad, (kl_type_bits(ta->elem) + 7) / 8, &arch, &acc);
    kl_op_set_attr(fn, "amdgpu_regs", kl_attr_int(ctx, arch + acc));
  }
  if (S > 1) { /* the plan fills the output with 0 before the launch (driver/plan.c) */
    char key[16];
    snprintf(key, sizeof key, "%d", out_arg);
    kl_named_attr e = { kl_intern(ctx, key), kl_attr_float(ctx, 0.0) };
    kl_op_set_attr(fn, "prefill", kl_attr_dict(ctx, 1, &e));
    kl_op_set_attr(fn, "split_k", kl_attr_int(ctx, S));
  }
  kl_rewriter_modify_end(rw, fn);
  return true;
}

typedef struct {
  kl_op *fn;
  kl_op *first;
  kl_op *dup;
} count_state;
static kl_walk_result find_gemms(kl_op *op, void *user) {
  count_state *s = user;
  if (!strcmp(op->name, "rock.gemm")) {
    if (!s->first)
      s->first = op;
    else if (!s->dup)
      s->dup = op;
  }
  return KL_WALK_ADVANCE;
}

static kl_status run(kl_op *module, const kl_pass_options *po, void *user) {
  kl_block *body = kl_module_body(module);
  for (kl_op *fn = body ? body->first : NULL; fn; fn = fn->next) {
    if (!kl_is_kernel(fn)) continue;
    count_state s = { fn, NULL, NULL };
    kl_walk_pre(fn, find_gemms, &s);
    if (s.dup)
      return kl_emit_error(
          module->ctx, s.dup->loc,
          "rock-gemm-to-gridwise: kernel '%s' has more than one rock.gemm (one per kernel: block and grid "
          "sizes are per kernel)",
          kl_op_attr_string(fn, "sym_name"));
  }
  opts o = {
    kl_pass_opt_string(po, "target"), kl_pass_opt_string(po, "perf-config"), kl_pass_opt_bool(po, "accel"),
    kl_pass_opt_bool(po, "wgmma"),    kl_pass_opt_string(po, "tuned"),       kl_pass_opt_int(po, "fp8-promote")
  };
  if (o.fp8_promote < 0 || o.fp8_promote % 32)
    return kl_emit_error(module->ctx, module->loc,
                         "rock-gemm-to-gridwise: fp8-promote must be 0 (off) or a positive multiple of 32 (K elements "
                         "per promotion interval), got %lld",
                         (long long)o.fp8_promote);
  kl_pattern p = { "rock.gemm", 1, "rock-gemm-to-gridwise", gemm_to_gridwise, &o };
  const kl_pattern *ps[] = { &p };
  return kl_apply_patterns_walk(module, ps, 1);
}

static const kl_pass_option options[] = {
  { "target", KL_OPT_STRING, "", "target name (overrides the kernel's / module's \"target\" attribute; default host)" },
  { "perf-config", KL_OPT_STRING, "",
    "perf config v1:mPerBlock,nPerBlock,kPerBlock,mPerThread,nPerThread,kpack (or v2:..., matrix instructions, "
    "v3:..., Hopper wgmma) for "
    "every gemm "
    "(overrides perf_config attributes; default: the heuristic)" },
  { "accel", KL_OPT_BOOL, "true",
    "matrix instructions (MFMA/WMMA/mma.sync) when the target has one for the input type: "
    "a v2:... config (passes/rock_accel.h) or the accel heuristic; false: always the FMA path" },
  { "tuned", KL_OPT_STRING, "",
    "tuned configs \"KEY=CONFIG;...\" by problem key (passes/problem_key.h; the driver fills it from the tuning "
    "database): used for a kernel without a given perf config" },
  { "wgmma", KL_OPT_BOOL, "true",
    "Hopper warpgroup MMAs (wgmma.mma_async) for f16 / bf16 / fp8 (f8e4m3fn, f8e5m2) GEMMs without a given config on "
    "targets with wgmma "
    "(sm_90a, the target of compute capability 9.0 devices), chosen by the wgmma heuristic (passes/rock_wgmma.h; "
    "other GEMMs keep mma.sync); a v3:... config selects them too; false: mma.sync" },
  { "fp8-promote", KL_OPT_INT, KL_FP8_PROMOTE_DEFAULT_STR,
    "two-level accumulation of the fp8 wgmma (sm_90a, fp8-compute{gemm-operands=fp8}): the wgmma accumulates into a "
    "temporary for this many K elements (a multiple of 32 and of the K tile), which is then added to the f32 "
    "accumulator with f32 adds and restarted at zero; 0: off (one level: every k32 instruction truncates its "
    "addends below 2^(emax-13) of the running sum); the heuristic then takes nPerWave <= 128 (two accumulators); "
    "the choice is the kernel's fp8_promote (passes/rock_wgmma.h)" },
};

void kl__register_rock_gemm_to_gridwise(kl_ctx *ctx) {
  kl_pass_info info = {
    "rock-gemm-to-gridwise",
    "rock.gemm -> rock.gridwise_gemm: perf config (given or heuristic), Pad views to tile multiples, "
    "block/grid sizes on the kernel",
    options,
    (int)(sizeof options / sizeof *options),
    run,
    NULL
  };
  kl_register_pass(ctx, &info);
}
