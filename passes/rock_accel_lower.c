/* rock_accel_lower.c — the blockwise lowering of accel GEMMs (rock.blockwise_gemm with
 * accel_instr -> LDS->register reads in the instruction's operand layout + rock.mma),
 * the instruction check of the loop-level op rock.mma (the op is
 * registered by core/dialect_rock.c; kl_rock_set_mma_hook), and the pass `rock-blockwise-to-accel` (the same lowering
 * on its own; rock-blockwise-to-threadwise dispatches accel gemms here too). See
 * rock_accel.h for the contract. On NVPTX the K steps of the block tile are emitted
 * unrolled (constant kk), elsewhere as an scf.for over kk. */
#include "passes/rock_accel.h"
#include "passes/lower_loops.h"
#include "passes/perf_config.h"
#include "passes/rock_wgmma.h"
#include "core/dialect_rock.h"
#include "core/pass.h"
#include <stdio.h>
#include <string.h>

static bool attr_i64(kl_op *op, const char *name, int64_t *out) { return kl_op_attr_i64(op, name, out) && *out >= 1; }

static kl_value *alloc_private(kl_rewriter *rw, kl_loc loc, const kl_type *elem, int64_t n) {
  const kl_type *t = kl_type_buffer(kl_rewriter_ctx(rw), elem, 1, &n, NULL, KL_SPACE_PRIVATE);
  return kl_op_result(kl_rewriter_create(rw, "rock.alloc", loc, 0, NULL, 1, &t, 0, NULL, 0), 0);
}

/* ldmatrix: 0 (plain loads) or the matrices per ldmatrix of this fragment read (see
 * fragment_ldmatrix). */
static kl_op *read_into(kl_rewriter *rw, kl_loc loc, kl_value *lds, kl_value *regs, kl_value *tid, kl_value *kk,
                        const kl_view *v, int64_t ldmatrix) {
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_value *o[4] = { lds, regs, tid, kk };
  kl_named_attr a[3] = { { "view", kl_attr_from_view(ctx, v) },
                         { "vector_len", kl_attr_int(ctx, kl_tile_vector_len(v, lds, 2)) },
                         { "ldmatrix", kl_attr_int(ctx, ldmatrix) } };
  return kl_rewriter_create(rw, "rock.threadwise_read_into", loc, 4, o, 0, NULL, ldmatrix ? 3 : 2, a, 0);
}

/* mma.sync with 16-bit inputs (f16, bf16) on NVPTX: the fragment reads ask for
 * ldmatrix.x4 (x2, x1 when the lane's elements do not fill 8 per load): rock-lower-loops
 * proves on the lowered LDS layout that ldmatrix reads the fragment's elements
 * (passes/lower_loops_ldmatrix.c) and keeps the plain loads where it does not (an LDS
 * layout without 16-byte rows along K: kpack * element < 16 bytes). */
static int64_t fragment_ldmatrix(const kl_target *t, const kl_accel_desc *d, int64_t elems) {
  if (t->arch != KL_ARCH_NVPTX || d->kind != KL_ACCEL_MMA_SYNC ||
      (strcmp(d->in_type, "f16") && strcmp(d->in_type, "bf16")))
    return 0;
  return elems % 8 == 0 ? 4 : elems % 4 == 0 ? 2 : elems % 2 == 0 ? 1 : 0;
}

bool kl_accel_lower_blockwise(kl_op *op, kl_rewriter *rw, const char *target) {
  kl_ctx *ctx = op->ctx;
  kl_loc loc = op->loc;
  char err[512];
  if (op->nopnds != 4) {
    kl_rewriter_fail(rw, loc, "rock.blockwise_gemm needs 4 operands (lds_a, lds_b, acc, tid)");
    return false;
  }
  kl_value *la = op->opnds[0].value, *lb = op->opnds[1].value, *acc = op->opnds[2].value, *tid = op->opnds[3].value;
  const char *instr = kl_op_attr_string(op, "accel_instr");
  const kl_accel_desc *d = kl_accel_desc_by_intrinsic(instr);
  if (d && d->kind == KL_ACCEL_WGMMA) return kl_wgmma_lower_blockwise(op, rw, target); /* passes/rock_wgmma.h */
  if (!d) {
    kl_rewriter_fail(rw, loc, "rock.blockwise_gemm: unknown accel_instr \"%s\"", instr ? instr : "");
    return false;
  }
  kl_accel_config c;
  c.split_k = 1;
  if (!attr_i64(op, "m_per_block", &c.m_per_block) || !attr_i64(op, "n_per_block", &c.n_per_block) ||
      !attr_i64(op, "k_per_block", &c.k_per_block) || !attr_i64(op, "m_per_wave", &c.m_per_wave) ||
      !attr_i64(op, "n_per_wave", &c.n_per_wave) || !attr_i64(op, "kpack", &c.kpack)) {
    kl_rewriter_fail(rw, loc,
                     "rock.blockwise_gemm (accel): needs positive integer attributes m_per_block, n_per_block, "
                     "k_per_block, m_per_wave, n_per_wave, kpack");
    return false;
  }
  const kl_target *t = kl_perf_resolve_target(op, target, err, sizeof err);
  if (!t) {
    kl_rewriter_fail(rw, loc, "rock.blockwise_gemm (accel): %s", err);
    return false;
  }
  const kl_type *ta = la->type, *tb = lb->type, *tacc = acc->type;
  if (ta->kind != KL_TY_BUFFER || tb->kind != KL_TY_BUFFER || tacc->kind != KL_TY_BUFFER) {
    kl_rewriter_fail(rw, loc, "rock.blockwise_gemm (accel): operands must be buffers");
    return false;
  }
  if (kl_accel_desc_for(t, ta->elem) != d || tb->elem != ta->elem) {
    kl_rewriter_fail(rw, loc,
                     "rock.blockwise_gemm: accel_instr %s does not apply to %s x %s inputs on target %s (its "
                     "matrix unit: %s, wave %d)",
                     d->intrinsic, kl_type_str(ta->elem), kl_type_str(tb->elem), t->name, kl_accel_kind_name(t->accel),
                     t->wave_size);
    return false;
  }
  int eb = (kl_type_bits(ta->elem) + 7) / 8;
  if (!kl_accel_config_validate(&c, t, d, eb, err, sizeof err)) {
    kl_rewriter_fail(rw, loc, "rock.blockwise_gemm: %s", err);
    return false;
  }
  int64_t bs = kl_accel_block_size(&c, d), bs_attr;
  if (kl_op_attr_i64(op, "block_size", &bs_attr) && bs_attr != bs) {
    kl_rewriter_fail(rw, loc, "rock.blockwise_gemm: block_size %lld does not match the wave tiles (%lld)",
                     (long long)bs_attr, (long long)bs);
    return false;
  }
  int64_t mrep = c.m_per_wave / d->m, nrep = c.n_per_wave / d->n;
  int64_t alen = kl_accel_frag_len(&d->a), blen = kl_accel_frag_len(&d->b), clen = kl_accel_frag_len(&d->c);
  int64_t nacc = mrep * nrep * clen;
  const char *acc_name = kl_scalar_name(tacc->elem->kind);
  if (ta->rank != 2 || tb->rank != 2 || ta->shape[0] != c.k_per_block || ta->shape[1] != c.m_per_block ||
      tb->shape[0] != c.k_per_block || tb->shape[1] != c.n_per_block || tacc->rank != 1 || tacc->shape[0] != nacc ||
      tacc->space != KL_SPACE_PRIVATE || !acc_name || strcmp(acc_name, d->acc_type) ||
      (acc->def && !strcmp(acc->def->name, "rock.transform")) || tid->type->kind != KL_TY_INDEX) {
    kl_rewriter_fail(rw, loc,
                     "rock.blockwise_gemm (accel %s): operands must be lds_a [%lld,%lld], lds_b [%lld,%lld], a "
                     "private acc buffer [%lld] of %s (no view) and the tid; got %s, %s, %s, %s",
                     d->intrinsic, (long long)c.k_per_block, (long long)c.m_per_block, (long long)c.k_per_block,
                     (long long)c.n_per_block, (long long)nacc, d->acc_type, ta->text, tb->text, tacc->text,
                     kl_type_str(tid->type));
    return false;
  }
  if (mrep > 64 || nrep > 64) {
    kl_rewriter_fail(rw, loc, "rock.blockwise_gemm (accel): too many instructions per wave (%lld x %lld)",
                     (long long)mrep, (long long)nrep);
    return false;
  }
  kl_op *fn = kl_tile_func_of(op);
  kl_block *entry = fn ? kl_region_entry(&fn->regions[0]) : NULL;
  if (!entry || !entry->first) {
    kl_rewriter_fail(rw, loc, "rock.blockwise_gemm must be inside a func.func");
    return false;
  }
  kl_view *va = kl_accel_lds_view(d, &c, true, err, sizeof err);
  kl_view *vb = va ? kl_accel_lds_view(d, &c, false, err, sizeof err) : NULL;
  if (!vb) {
    kl_view_free(va);
    kl_rewriter_fail(rw, loc, "rock-blockwise-to-accel: %s", err);
    return false;
  }
  /* operand registers at the top of the function */
  kl_rewriter_set_insertion_before(rw, entry->first);
  kl_value *ra = alloc_private(rw, loc, ta->elem, mrep * alen), *rb = alloc_private(rw, loc, tb->elem, nrep * blen);
  kl_rewriter_set_insertion_before(rw, op);
  /* The K steps of the block tile: unrolled on NVPTX (constant LDS offsets; the
   * fragment reads of step kk+1 can be scheduled over the mma of step kk), an scf.for
   * elsewhere. */
  const kl_type *idx = kl_type_index(ctx);
  int64_t nkk = c.k_per_block / d->k;
  bool unroll = t->arch == KL_ARCH_NVPTX && nkk <= 16;
  for (int64_t step = 0; step < (unroll ? nkk : 1); step++) {
    kl_value *kk;
    if (unroll) {
      kk = kl_tile_index(rw, loc, step);
    } else {
      kl_value *bnd[3] = { kl_tile_index(rw, loc, 0), kl_tile_index(rw, loc, nkk), kl_tile_index(rw, loc, 1) };
      kl_op *loop = kl_rewriter_create(rw, "scf.for", loc, 3, bnd, 0, NULL, 0, NULL, 1);
      kl_block *body = kl_block_create(ctx);
      kk = kl_block_add_arg(ctx, body, idx);
      kl_region_push_block(&loop->regions[0], body);
      kl_rewriter_set_insertion_end(rw, body);
    }
    read_into(rw, loc, la, ra, tid, kk, va, fragment_ldmatrix(t, d, mrep * alen));
    read_into(rw, loc, lb, rb, tid, kk, vb, fragment_ldmatrix(t, d, nrep * blen));
    kl_ll L;
    kl_ll_init(&L, rw, loc, 0);
    kl_value *av[64], *bv[64];
    for (int64_t i = 0; i < mrep; i++) {
      kl_value *ix = kl_ll_idx(&L, i * alen);
      av[i] = kl_ll_load(&L, ra, &ix, NULL, alen);
    }
    for (int64_t j = 0; j < nrep; j++) {
      kl_value *ix = kl_ll_idx(&L, j * blen);
      bv[j] = kl_ll_load(&L, rb, &ix, NULL, blen);
    }
    kl_named_attr ma[4] = { { "instr", kl_attr_str(ctx, d->intrinsic) },
                            { "m", kl_attr_int(ctx, d->m) },
                            { "n", kl_attr_int(ctx, d->n) },
                            { "k", kl_attr_int(ctx, d->k) } };
    for (int64_t i = 0; i < mrep; i++)
      for (int64_t j = 0; j < nrep; j++) {
        kl_value *ix = kl_ll_idx(&L, (i * nrep + j) * clen);
        kl_value *cv = kl_ll_load(&L, acc, &ix, NULL, clen);
        kl_value *o[3] = { av[i], bv[j], cv };
        kl_value *dv = kl_op_result(kl_rewriter_create(rw, "rock.mma", loc, 3, o, 1, &cv->type, 4, ma, 0), 0);
        kl_ll_store(&L, dv, acc, &ix, NULL);
      }
    if (!unroll) kl_rewriter_create(rw, "scf.yield", loc, 0, NULL, 0, NULL, 0, NULL, 0);
  }
  kl_rewriter_erase_op(rw, op);
  kl_view_free(va);
  kl_view_free(vb);
  return true;
}

/* ---- rock.mma's instruction check (the op is registered by core/dialect_rock.c) ---- */
static bool operand_ok(const kl_type *t, const char *elem, int64_t len) {
  const kl_type *e = t->kind == KL_TY_VECTOR ? t->elem : t;
  int64_t n = t->kind == KL_TY_VECTOR ? t->shape[0] : 1;
  const char *name = kl_scalar_name(e->kind);
  return name && !strcmp(name, elem) && n == len && (len > 1) == (t->kind == KL_TY_VECTOR);
}
static kl_status verify_mma(kl_op *op) {
  const char *instr = kl_op_attr_string(op, "instr");
  const kl_accel_desc *d = kl_accel_desc_by_intrinsic(instr);
  if (!d)
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.mma' needs a string attribute 'instr' naming a known matrix instruction, got %s",
                         instr ? instr : "none");
  int64_t alen = kl_accel_frag_len(&d->a), blen = kl_accel_frag_len(&d->b), clen = kl_accel_frag_len(&d->c);
  const kl_type *a = op->opnds[0].value->type, *b = op->opnds[1].value->type, *c = op->opnds[2].value->type;
  if (!operand_ok(a, d->in_type, alen) || !operand_ok(b, d->in_type, blen) || !operand_ok(c, d->acc_type, clen) ||
      op->results[0].type != c)
    return kl_emit_error(op->ctx, op->loc,
                         "'rock.mma' %s takes (%lld x %s, %lld x %s, %lld x %s) -> the accumulator type; got "
                         "(%s, %s, %s) -> %s",
                         d->intrinsic, (long long)alen, d->in_type, (long long)blen, d->in_type, (long long)clen,
                         d->acc_type, kl_type_str(a), kl_type_str(b), kl_type_str(c), kl_type_str(op->results[0].type));
  return KL_OK;
}
static const kl_rock_mma_hook mma_hook = { verify_mma };

/* ---- the pass ---- */
static bool lower_pattern(const kl_pattern *pat, kl_op *op, kl_rewriter *rw) {
  if (!kl_accel_is_accel(op)) return kl_rewriter_notify_no_match(rw, "not an accel GEMM (no accel_instr)");
  return kl_accel_lower_blockwise(op, rw, pat->user);
}
static kl_status run(kl_op *module, const kl_pass_options *po, void *user) {
  kl_pattern p = { "rock.blockwise_gemm", 1, "rock-blockwise-to-accel", lower_pattern,
                   (void *)kl_pass_opt_string(po, "target") };
  const kl_pattern *ps[] = { &p };
  return kl_apply_patterns_walk(module, ps, 1);
}

static const kl_pass_option options[] = {
  { "target", KL_OPT_STRING, "", "target name (overrides the func's / module's \"target\" attribute; default host)" },
};

void kl__register_rock_accel(kl_ctx *ctx) {
  kl_rock_set_mma_hook(ctx, &mma_hook); /* rock.mma itself: core/dialect_rock.c */
  kl_pass_info info = {
    "rock-blockwise-to-accel",
    "accel rock.blockwise_gemm (accel_instr) -> LDS->register reads in the matrix instruction's operand "
    "layout and rock.mma per wave (rock-blockwise-to-threadwise does this too)",
    options,
    1,
    run,
    NULL
  };
  kl_register_pass(ctx, &info);
}
