/* rock_blockwise_to_threadwise.c — the `rock-blockwise-to-threadwise` pass.
 *
 * rock.blockwise_gemm(%lds_a [KB,MB], %lds_b [KB,NB], %acc [MT*NT] (or [MT,NT]), %tid)
 * {m_per_block, n_per_block, k_per_block, m_per_thread, n_per_thread, kpack} — thread
 * tid owns rows (tid / (NB/NT))*MT + [0,MT) and columns (tid % (NB/NT))*NT + [0,NT) of
 * the block tile, acc[i*NT + j] = (row i, column j) — becomes, per thread:
 *   (at the top of the enclosing func) %ra = rock.alloc : buffer<MT*kpack x Ta, private>,
 *     %rb likewise [NT*kpack]; views %ra2 = rock.transform(%ra) [kpack, MT], %rb2 [kpack, NT]
 *   %acc2 = rock.transform(%acc) [MT, NT]              (unless acc is already [MT, NT])
 *   scf.for %kk = 0 to KB/kpack step 1 {
 *     rock.threadwise_read_into(%lds_a, %ra, %tid, %kk) {view: (tid, kk, iter) -> (k, m), vector_len}
 *     rock.threadwise_read_into(%lds_b, %rb, %tid, %kk) {view: (tid, kk, iter) -> (k, n), vector_len}
 *     rock.threadwise_gemm(%ra2, %rb2, %acc2) {accel = "none" | "mfma" | "wmma" | "mma_sync"}
 *   }
 * where register element iter = i*kpack + kk' holds lds[kk*kpack + kk', row i] (K runs
 * fastest: the kpack-contiguous LDS layout makes that a vector read). The threadwise
 * GEMM stays abstract; `accel` records the target's matrix unit (option `target`, else
 * the func's / module's "target" attribute, else host) for the target lowering. */
#include "core/pass.h"
#include "core/rewrite.h"
#include "core/dialect_rock.h"
#include "passes/perf_config.h"
#include "passes/rock_accel.h"
#include <stdio.h>
#include <string.h>

typedef struct {
  const char *target;
} opts;

/* (tid, kk, iter) -> (k, d) of the [KB, DB] LDS operand. */
static kl_view *lds_read_view(int64_t KB, int64_t DB, int64_t DT, int64_t other_threads, int64_t kpack, bool is_a,
                              char *err, size_t n) {
  const char *d = is_a ? "m" : "n";
  kl_vb b;
  int64_t shape[2] = { KB, DB };
  const char *names[2] = { "k", d };
  kl_vb_identity(&b, 2, shape, names);
  const char *kn[2] = { "kk", "ik" };
  int64_t ks[2] = { KB / kpack, kpack };
  kl_vb_unmerge(&b, "k", 2, kn, ks);
  const char *dn[2] = { is_a ? "tm" : "tn", "id" };
  int64_t ds[2] = { DB / DT, DT };
  kl_vb_unmerge(&b, d, 2, dn, ds);
  kl_vb_add_dim(&b, is_a ? "tn" : "tm", other_threads);
  const char *tn[2] = { "tm", "tn" }, *in[2] = { "id", "ik" };
  kl_vb_merge(&b, "tid", 2, tn);
  kl_vb_merge(&b, "iter", 2, in);
  const char *ord[3] = { "tid", "kk", "iter" };
  kl_vb_order(&b, 3, ord);
  return kl_vb_finish(&b, err, n);
}

/* Starts b as the row-major split of a flat register buffer [rows*cols] into dims
 * (rn: rows, cn: cols). */
static void flat_split(kl_vb *b, int64_t rows, int64_t cols, const char *rn, const char *cn) {
  int64_t flat = rows * cols;
  const char *names[1] = { "i" };
  kl_vb_identity(b, 1, &flat, names);
  const char *sn[2] = { rn, cn };
  int64_t ss[2] = { rows, cols };
  kl_vb_unmerge(b, "i", 2, sn, ss);
}

/* [kpack (k), DT (d)] -> flat [DT*kpack], element (k, i) at i*kpack + k. */
static kl_view *regs_view(int64_t DT, int64_t kpack, char *err, size_t n) {
  kl_vb b;
  flat_split(&b, DT, kpack, "d", "k");
  const char *ord[2] = { "k", "d" };
  kl_vb_order(&b, 2, ord);
  return kl_vb_finish(&b, err, n);
}

/* [MT, NT] -> flat [MT*NT]. */
static kl_view *acc_view(int64_t MT, int64_t NT, char *err, size_t n) {
  kl_vb b;
  flat_split(&b, MT, NT, "m", "n");
  return kl_vb_finish(&b, err, n);
}

static kl_value *alloc(kl_rewriter *rw, kl_loc loc, const kl_type *elem, int64_t n) {
  const kl_type *t = kl_type_buffer(kl_rewriter_ctx(rw), elem, 1, &n, NULL, KL_SPACE_PRIVATE);
  return kl_op_result(kl_rewriter_create(rw, "rock.alloc", loc, 0, NULL, 1, &t, 0, NULL, 0), 0);
}

static kl_value *view_of(kl_rewriter *rw, kl_loc loc, kl_value *src, kl_view *v) {
  kl_value *r = kl_tile_transform(rw, loc, src, v);
  kl_view_free(v);
  return r;
}

static bool lower_blockwise(const kl_pattern *pat, kl_op *op, kl_rewriter *rw) {
  const opts *o = pat->user;
  kl_ctx *ctx = op->ctx;
  kl_loc loc = op->loc;
  char err[512];
  if (op->nopnds != 4) {
    kl_rewriter_fail(rw, loc, "rock.blockwise_gemm needs 4 operands (lds_a, lds_b, acc, tid)");
    return false;
  }
  if (kl_accel_is_accel(op))
    return kl_accel_lower_blockwise(op, rw, o->target); /* matrix instructions: passes/rock_accel_lower.c */
  kl_value *la = op->opnds[0].value, *lb = op->opnds[1].value, *acc = op->opnds[2].value, *tid = op->opnds[3].value;
  int64_t MB, NB, KB, MT, NT, kpack;
  if (!kl_op_attr_i64(op, "m_per_block", &MB) || !kl_op_attr_i64(op, "n_per_block", &NB) ||
      !kl_op_attr_i64(op, "k_per_block", &KB) || !kl_op_attr_i64(op, "m_per_thread", &MT) ||
      !kl_op_attr_i64(op, "n_per_thread", &NT) || !kl_op_attr_i64(op, "kpack", &kpack)) {
    kl_rewriter_fail(rw, loc,
                     "rock.blockwise_gemm needs integer attributes m_per_block, n_per_block, k_per_block, "
                     "m_per_thread, n_per_thread, kpack");
    return false;
  }
  kl_perf_config pc = { MB, NB, KB, MT, NT, kpack, 1 };
  if (!kl_perf_config_validate(&pc, NULL, 1, err, sizeof err)) {
    kl_rewriter_fail(rw, loc, "rock.blockwise_gemm: %s", err);
    return false;
  }
  const kl_type *ta = la->type, *tb = lb->type, *tacc = acc->type;
  bool acc_flat = tacc->kind == KL_TY_BUFFER && tacc->rank == 1 && tacc->shape[0] == MT * NT;
  bool acc_2d = tacc->kind == KL_TY_BUFFER && tacc->rank == 2 && tacc->shape[0] == MT && tacc->shape[1] == NT;
  if (ta->kind != KL_TY_BUFFER || tb->kind != KL_TY_BUFFER || ta->rank != 2 || tb->rank != 2 || ta->shape[0] != KB ||
      ta->shape[1] != MB || tb->shape[0] != KB || tb->shape[1] != NB || !(acc_flat || acc_2d) ||
      tid->type->kind != KL_TY_INDEX) {
    kl_rewriter_fail(rw, loc,
                     "rock.blockwise_gemm: operands must be lds_a [%lld,%lld], lds_b [%lld,%lld], acc [%lld] "
                     "or [%lld,%lld], tid index; got %s, %s, %s, %s",
                     (long long)KB, (long long)MB, (long long)KB, (long long)NB, (long long)(MT * NT), (long long)MT,
                     (long long)NT, ta->text, tb->text, tacc->text, kl_type_str(tid->type));
    return false;
  }
  const kl_target *t = kl_perf_resolve_target(op, o->target, err, sizeof err);
  if (!t) {
    kl_rewriter_fail(rw, loc, "rock-blockwise-to-threadwise: %s", err);
    return false;
  }
  kl_op *fn = kl_tile_func_of(op);
  kl_block *entry = fn ? kl_region_entry(&fn->regions[0]) : NULL;
  if (!entry || !entry->first) {
    kl_rewriter_fail(rw, loc, "rock.blockwise_gemm must be inside a func.func");
    return false;
  }

  kl_view *ra_v = lds_read_view(KB, MB, MT, NB / NT, kpack, true, err, sizeof err);
  kl_view *rb_v = ra_v ? lds_read_view(KB, NB, NT, MB / MT, kpack, false, err, sizeof err) : NULL;
  kl_view *a2 = rb_v ? regs_view(MT, kpack, err, sizeof err) : NULL;
  kl_view *b2 = a2 ? regs_view(NT, kpack, err, sizeof err) : NULL;
  kl_view *c2 = b2 && acc_flat ? acc_view(MT, NT, err, sizeof err) : NULL;
  if (!b2 || (acc_flat && !c2)) {
    kl_view_free(ra_v);
    kl_view_free(rb_v);
    kl_view_free(a2);
    kl_view_free(b2);
    kl_rewriter_fail(rw, loc, "rock-blockwise-to-threadwise: %s", err);
    return false;
  }
  /* registers at the top of the function (not re-allocated per loop iteration) */
  kl_rewriter_set_insertion_before(rw, entry->first);
  kl_value *ra = alloc(rw, loc, ta->elem, MT * kpack), *rb = alloc(rw, loc, tb->elem, NT * kpack);
  kl_value *ra2 = view_of(rw, loc, ra, a2), *rb2 = view_of(rw, loc, rb, b2);
  /* the accumulator view next to the accumulator (outside the K loop when it is there) */
  if (acc->def && acc->def->block == entry)
    kl_rewriter_set_insertion_after(rw, acc->def);
  else
    kl_rewriter_set_insertion_before(rw, op);
  kl_value *acc2 = acc_flat ? view_of(rw, loc, acc, c2) : acc;
  kl_rewriter_set_insertion_before(rw, op);
  const kl_type *idx = kl_type_index(ctx);
  kl_value *bnd[3] = { kl_tile_index(rw, loc, 0), kl_tile_index(rw, loc, KB / kpack), kl_tile_index(rw, loc, 1) };
  kl_op *loop = kl_rewriter_create(rw, "scf.for", loc, 3, bnd, 0, NULL, 0, NULL, 1);
  kl_block *body = kl_block_create(ctx);
  kl_value *kk = kl_block_add_arg(ctx, body, idx);
  kl_region_push_block(&loop->regions[0], body);
  kl_rewriter_set_insertion_end(rw, body);
  kl_value *oa[4] = { la, ra, tid, kk }, *ob[4] = { lb, rb, tid, kk };
  kl_named_attr aa[2] = { { "view", kl_attr_from_view(ctx, ra_v) },
                          { "vector_len", kl_attr_int(ctx, kl_tile_vector_len(ra_v, la, 2)) } };
  kl_named_attr ab[2] = { { "view", kl_attr_from_view(ctx, rb_v) },
                          { "vector_len", kl_attr_int(ctx, kl_tile_vector_len(rb_v, lb, 2)) } };
  kl_rewriter_create(rw, "rock.threadwise_read_into", loc, 4, oa, 0, NULL, 2, aa, 0);
  kl_rewriter_create(rw, "rock.threadwise_read_into", loc, 4, ob, 0, NULL, 2, ab, 0);
  kl_value *g[3] = { ra2, rb2, acc2 };
  kl_named_attr ga = { "accel", kl_attr_str(ctx, kl_accel_kind_name(t->accel)) };
  kl_rewriter_create(rw, "rock.threadwise_gemm", loc, 3, g, 0, NULL, 1, &ga, 0);
  kl_rewriter_create(rw, "scf.yield", loc, 0, NULL, 0, NULL, 0, NULL, 0);
  kl_rewriter_erase_op(rw, op);
  kl_view_free(ra_v);
  kl_view_free(rb_v);
  return true;
}

static kl_status run(kl_op *module, const kl_pass_options *po, void *user) {
  opts o = { kl_pass_opt_string(po, "target") };
  kl_pattern p = { "rock.blockwise_gemm", 1, "rock-blockwise-to-threadwise", lower_blockwise, &o };
  const kl_pattern *ps[] = { &p };
  return kl_apply_patterns_walk(module, ps, 1);
}

static const kl_pass_option options[] = {
  { "target", KL_OPT_STRING, "", "target name (overrides the func's / module's \"target\" attribute; default host)" },
};

void kl__register_rock_blockwise_to_threadwise(kl_ctx *ctx) {
  kl_pass_info info = { "rock-blockwise-to-threadwise",
                        "rock.blockwise_gemm -> per-thread LDS->register reads and rock.threadwise_gemm (abstract, "
                        "with the target's accel kind)",
                        options,
                        1,
                        run,
                        NULL };
  kl_register_pass(ctx, &info);
}
