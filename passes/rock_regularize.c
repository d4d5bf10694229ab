/* rock_regularize.c — the `rock-regularize` pass (patterns R1, R2 and the broadcast split R3) and the regular-form
 * check kl_verify_regular; the contract is in passes/rock_regularize.h. */
#include "passes/rock_regularize.h"
#include "core/dialect_rock.h"
#include "core/pass.h"
#include "core/rewrite.h"
#include "passes/fusion_util.h"
#include "passes/lower_loops.h"
#include "passes/perf_config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool in_kernel(kl_op *op) { return kl_is_kernel(kl_ll_func_of(op)); }

/* ---- R1: a fusing op writes a global alloc through views ---- */

/* Whether R1 applies to alloc value a: NULL (and *writer, *inv: owned by the caller) if
 * it does, else the reason (in why). */
static const char *r1_why_not(kl_value *a, kl_op **writer, kl_view **inv, char *why, size_t n) {
  *writer = NULL;
  *inv = NULL;
  if (!kl_fu_is_global_alloc(a)) return "not a global rock.alloc";
  kl_fu_use *us;
  int nu = kl_fu_uses(a, &us);
  const char *r = NULL;
  int wi = -1;
  for (int i = 0; i < nu && !r; i++)
    if (kl_fu_fusing_write(us[i].user, us[i].index)) {
      if (wi >= 0) r = "several fusing ops write it";
      wi = i;
    }
  if (!r && wi < 0) r = "no fusing op writes it";
  if (!r && us[wi].depth == 0) r = "its fusing writer writes it directly";
  for (int i = 0; i < nu && !r; i++)
    if (i != wi && us[i].user == us[wi].user) r = "its fusing writer also reads it";
  kl_view *W = NULL, *I = NULL;
  if (!r) {
    kl_value *under;
    char e[512];
    kl_view_err ve = { 0 };
    W = kl_fu_chain_view(us[wi].top, &under, e, sizeof e);
    if (!W) {
      snprintf(why, n, "cannot compose the write's views: %s", e);
      r = why;
    } else if (!(I = kl_view_invert_partial(W, KL_VIEW_INVERT_SLICE | KL_VIEW_INVERT_PAD, &ve))) {
      snprintf(why, n, "the view of the write is not invertible (%s)", ve.msg);
      r = why;
    }
  }
  if (!r && kl_view_invalid_dims(I))
    for (int i = 0; i < nu && !r; i++)
      if (i != wi && !kl_fu_fusing_read(us[i].user, us[i].index)) {
        snprintf(why, n,
                 "the write covers only part of the buffer (its inverse view gives invalid points) and '%s' may "
                 "write or read the rest",
                 us[i].user->name);
        r = why;
      }
  if (!r) *writer = us[wi].user;
  free(us);
  kl_view_free(W);
  if (r) {
    kl_view_free(I);
    return r;
  }
  *inv = I;
  return NULL;
}

/* Erases the rock.transform chain above v's bottom that has no uses left, from v down
 * (stops at an op already erased: v->def unlinked). */
static void erase_dead_chain(kl_rewriter *rw, kl_value *v) {
  while (v && v->def && v->def->block && kl_op_has_trait(v->def, KL_TRAIT_VIEW) && !kl_value_has_uses(v)) {
    kl_op *t = v->def;
    v = t->opnds[0].value;
    kl_rewriter_erase_op(rw, t);
  }
}

static bool r1_pattern(const kl_pattern *pat, kl_op *op, kl_rewriter *rw) {
  (void)pat;
  if (!in_kernel(op)) return kl_rewriter_notify_no_match(rw, "not inside a kernel func");
  kl_value *a = kl_op_result(op, 0);
  kl_op *w;
  kl_view *inv;
  char why[768];
  const char *r = r1_why_not(a, &w, &inv, why, sizeof why);
  if (r) return kl_rewriter_notify_no_match(rw, "%s", r);
  kl_ctx *ctx = op->ctx;
  int64_t shape[KL_VIEW_MAX_DIMS];
  int rank = kl_view_lower_rank(inv);
  for (int i = 0; i < rank; i++) shape[i] = kl_view_lower_size(inv, i);
  const kl_type *t = kl_type_buffer(ctx, a->type->elem, rank, shape, NULL, KL_SPACE_GLOBAL);
  kl_rewriter_set_insertion_before(rw, op);
  kl_value *a2 = kl_op_result(kl_rewriter_create(rw, "rock.alloc", op->loc, 0, NULL, 1, &t, 0, NULL, 0), 0);
  a2->name_hint = a->name_hint; /* the same intermediate, for messages and printing */
  int oi = w->nopnds - 1;
  kl_value *old = w->opnds[oi].value;
  kl_rewriter_set_operand(rw, w, oi, a2);
  erase_dead_chain(rw, old);
  if (kl_value_has_uses(a)) {
    kl_rewriter_set_insertion_before(rw, op);
    kl_value *tv = kl_tile_transform(rw, op->loc, a2, inv);
    kl_rewriter_replace_all_uses(rw, a, tv);
  }
  kl_view_free(inv);
  kl_rewriter_erase_op(rw, op);
  return true;
}

/* ---- R2: a fusing op reads a global alloc through views ---- */

/* Whether R2 applies to input i of fusing op e: NULL (and *alloc, *inv owned by the
 * caller) if it does, else the reason. */
static const char *r2_why_not(kl_op *e, int i, kl_value **alloc, kl_view **inv, char *why, size_t n) {
  *inv = NULL;
  kl_value *x = e->opnds[i].value;
  kl_op *ch[1];
  int nc;
  kl_value *a = kl_rock_underlying(x, ch, &nc, 0);
  *alloc = a;
  if (!nc) return "reads it directly";
  if (!kl_fu_is_global_alloc(a)) return "reads a kernel argument or a non-global buffer through the view";
  kl_op *oc[1];
  if (kl_rock_underlying(e->opnds[e->nopnds - 1].value, oc, &nc, 0) == a) return "it also writes that buffer";
  char nm[320];
  for (int j = 0; j + 1 < e->nopnds; j++) {
    kl_value *y = e->opnds[j].value;
    if (y != x && kl_fu_is_global_alloc(y)) {
      snprintf(why, n, "input %d reads %s directly (moving the view would put one on that read)", j,
               kl_fu_value_name(y, nm, sizeof nm));
      return why;
    }
  }
  char err[512];
  kl_value *under;
  kl_view *V = kl_fu_chain_view(x, &under, err, sizeof err);
  if (!V) {
    snprintf(why, n, "cannot compose the read's views: %s", err);
    return why;
  }
  kl_view_err ve = { 0 };
  *inv = kl_view_invert_partial(V, KL_VIEW_INVERT_SLICE, &ve);
  kl_view_free(V);
  if (!*inv) {
    snprintf(why, n, "the view of input %d is not invertible (%s)", i, ve.msg);
    return why;
  }
  return NULL;
}

/* rock.transform(y) {inv}, folded into y's own transform when e is its only user. */
static kl_value *prepend_view(kl_rewriter *rw, kl_loc loc, kl_value *y, const kl_view *inv) {
  kl_op *d = y->def;
  const kl_view *yv = d && kl_op_has_trait(d, KL_TRAIT_VIEW) ? kl_ll_op_view(d) : NULL;
  if (yv && y->first_use && !y->first_use->next) {
    kl_view_err ve = { 0 };
    kl_view *c = kl_view_compose(inv, yv, &ve);
    if (c) {
      kl_view *sv = kl_view_simplify(c);
      kl_view_free(c);
      kl_value *r = kl_tile_transform(rw, loc, d->opnds[0].value, sv);
      kl_view_free(sv);
      return r;
    }
  }
  return kl_tile_transform(rw, loc, y, inv);
}

static bool r2_pattern(const kl_pattern *pat, kl_op *e, kl_rewriter *rw) {
  (void)pat;
  if (!kl_op_has_trait(e, KL_TRAIT_FUSING)) return kl_rewriter_notify_no_match(rw, "not a fusing op");
  if (!in_kernel(e)) return kl_rewriter_notify_no_match(rw, "not inside a kernel func");
  char why[768], first[768] = "no input reads a global rock.alloc through a view";
  bool have_reason = false;
  for (int i = 0; i + 1 < e->nopnds; i++) {
    kl_value *a;
    kl_view *inv;
    const char *r = r2_why_not(e, i, &a, &inv, why, sizeof why);
    if (r) {
      if (!have_reason && e->opnds[i].value != a && kl_fu_is_global_alloc(a)) {
        snprintf(first, sizeof first, "%s", r);
        have_reason = true;
      }
      continue;
    }
    kl_value *x = e->opnds[i].value;
    int no = e->nopnds;
    kl_value **nv = kl_xmalloc((size_t)no * sizeof *nv), **old = kl_xmalloc((size_t)(no + 1) * sizeof *old);
    int nold = 0;
    kl_rewriter_set_insertion_before(rw, e);
    for (int j = 0; j < no; j++) {
      kl_value *y = e->opnds[j].value;
      nv[j] = NULL;
      if (y == x && j + 1 < no) {
        nv[j] = a;
        continue;
      }
      for (int k = 0; k < j && !nv[j]; k++)
        if (e->opnds[k].value == y) nv[j] = nv[k];
      if (nv[j]) continue;
      nv[j] = prepend_view(rw, e->loc, y, inv);
      old[nold++] = y;
    }
    old[nold++] = x;
    kl_rewriter_modify_start(rw, e);
    for (int j = 0; j < no; j++) kl_op_set_operand(e, j, nv[j]);
    kl_rewriter_modify_end(rw, e);
    for (int k = 0; k < nold; k++) erase_dead_chain(rw, old[k]); /* distinct values, each a separate chain top */
    free(nv);
    free(old);
    kl_view_free(inv);
    return true;
  }
  return kl_rewriter_notify_no_match(rw, "%s", first);
}

/* ---- R3: a fusing op reads a global alloc through a broadcast ---- */

/* The upper dims of v's top map that the view ignores (AddDim, Broadcast of a size-1
 * dim), into dims[] (ascending); their count. */
static int ignored_dims(const kl_view *v, int *dims) {
  const kl_vmap *m = &v->maps[0];
  bool ign[KL_VIEW_MAX_DIMS] = { false };
  for (int t = 0; t < m->ntrans; t++) {
    const kl_vtrans *x = &m->trans[t];
    for (int k = 0; k < x->nupper; k++)
      if (x->kind == KL_VT_ADDDIM || (x->kind == KL_VT_BROADCAST && x->params[k] == 1)) ign[x->upper[k]] = true;
  }
  int n = 0;
  for (int d = 0; d < m->nupper; d++)
    if (ign[d]) dims[n++] = d;
  return n;
}

/* The view fixing dims[0..nd) of shape (rank) at coordinate j (mixed radix, last dim
 * fastest): upper = the other dims, lower = shape. */
static kl_view *fix_dims(int rank, const int64_t *shape, const int *dims, int nd, int64_t j, kl_view_err *err) {
  kl_view *v = kl_view_identity(rank, shape, NULL, err), *t;
  for (int k = nd - 1; k >= 0 && v; k--) {
    int64_t c = j % shape[dims[k]];
    j /= shape[dims[k]];
    char nm[16];
    snprintf(nm, sizeof nm, "d%d", dims[k]);
    t = kl_view_const_dim(v, nm, c, err);
    kl_view_free(v);
    v = t;
  }
  return v;
}

/* R3: an input read through a view whose top map ignores some dims of the op's
 * iteration space (a broadcast of the GEMM result over new or size-1 dims: R2 cannot
 * invert it) is split into one copy of the op per combination of those coordinates
 * (at most KL_FU_MAX_BROADCAST_COPIES), each iterating the remaining dims with every
 * operand read through the view that fixes them; the copies then read the alloc
 * through views R2 can move. */
static bool r3_pattern(const kl_pattern *pat, kl_op *e, kl_rewriter *rw) {
  (void)pat;
  if (!kl_op_has_trait(e, KL_TRAIT_FUSING)) return kl_rewriter_notify_no_match(rw, "not a fusing op");
  if (!in_kernel(e)) return kl_rewriter_notify_no_match(rw, "not inside a kernel func");
  for (int i = 0; i + 1 < e->nopnds; i++) {
    kl_value *x = e->opnds[i].value, *a;
    kl_view *inv;
    char why[768];
    if (!r2_why_not(e, i, &a, &inv, why, sizeof why)) { /* R2 applies */
      kl_view_free(inv);
      continue;
    }
    if (x == a || !kl_fu_is_global_alloc(a)) continue;
    kl_value *under;
    kl_view *V = kl_fu_chain_view(x, &under, why, sizeof why);
    if (!V) continue;
    kl_view *S = kl_view_simplify(V);
    kl_view_free(V);
    int dims[KL_VIEW_MAX_DIMS], nd = ignored_dims(S, dims);
    const kl_type *xt = x->type;
    int64_t copies = 1;
    for (int k = 0; k < nd; k++) copies *= xt->shape[dims[k]];
    kl_view_err ve = { 0 };
    kl_view *P0 = nd ? fix_dims(xt->rank, xt->shape, dims, nd, 0, &ve) : NULL;
    kl_view *C = P0 ? kl_view_compose(P0, S, &ve) : NULL;
    kl_view *Cs = C ? kl_view_simplify(C) : NULL;
    kl_view *I = Cs ? kl_view_invert_partial(Cs, KL_VIEW_INVERT_SLICE, &ve) : NULL;
    bool ok = nd && copies <= KL_FU_MAX_BROADCAST_COPIES && I;
    kl_view_free(P0);
    kl_view_free(C);
    kl_view_free(Cs);
    kl_view_free(I);
    kl_view_free(S);
    if (!ok) continue;
    kl_ctx *ctx = e->ctx;
    int no = e->nopnds;
    kl_value **nv = kl_xmalloc((size_t)no * sizeof *nv), **old = kl_xmalloc((size_t)no * sizeof *old);
    int nold = 0;
    for (int j = 0; j < no; j++) {
      bool seen = false;
      for (int k = 0; k < nold && !seen; k++) seen = old[k] == e->opnds[j].value;
      if (!seen) old[nold++] = e->opnds[j].value;
    }
    for (int64_t c = 0; c < copies; c++) {
      kl_view *P = fix_dims(xt->rank, xt->shape, dims, nd, c, &ve);
      kl_rewriter_set_insertion_before(rw, e);
      for (int j = 0; j < no; j++) {
        nv[j] = NULL;
        for (int k = 0; k < j && !nv[j]; k++)
          if (e->opnds[k].value == e->opnds[j].value) nv[j] = nv[k];
        if (!nv[j]) nv[j] = kl_tile_transform(rw, e->loc, e->opnds[j].value, P);
      }
      kl_view_free(P);
      kl_op *cp = kl_rewriter_create(rw, e->name, e->loc, no, nv, 0, NULL, e->nattrs, e->attrs, 1);
      kl_value_map map = { 0 };
      kl_region_clone_into(ctx, &e->regions[0], &cp->regions[0], &map);
      kl_value_map_free(&map);
    }
    kl_rewriter_erase_op(rw, e);
    for (int k = 0; k < nold; k++) erase_dead_chain(rw, old[k]);
    free(nv);
    free(old);
    return true;
  }
  return kl_rewriter_notify_no_match(rw, "no input reads a global rock.alloc through a broadcast it can split");
}

/* ---- the check ---- */

static kl_status check_kernel(kl_op *fn, bool strict) {
  int n;
  kl_op **ops = kl_collect_ops(fn, &n);
  kl_status st = KL_OK;
  for (int k = 0; k < n && st == KL_OK; k++) {
    if (!ops[k]->nresults || !kl_fu_is_global_alloc(kl_op_result(ops[k], 0))) continue;
    kl_value *a = kl_op_result(ops[k], 0);
    kl_fu_use *us;
    int nu = kl_fu_uses(a, &us);
    for (int i = 0; i < nu && st == KL_OK; i++) {
      kl_op *u = us[i].user;
      bool wr = kl_fu_fusing_write(u, us[i].index);
      if (!us[i].depth || !(wr || kl_fu_fusing_read(u, us[i].index))) continue;
      char why[768], an[320], vn[320];
      const char *r;
      kl_view *inv;
      if (wr) {
        kl_op *w;
        r = r1_why_not(a, &w, &inv, why, sizeof why);
      } else {
        kl_value *under;
        r = r2_why_not(u, us[i].index, &under, &inv, why, sizeof why);
      }
      kl_view_free(inv);
      if (r && !strict) continue; /* the pass leaves this view: allowed */
      kl_fu_value_name(a, an, sizeof an);
      kl_fu_value_name(us[i].top, vn, sizeof vn);
      if (r)
        st = kl_emit_error(fn->ctx, u->loc,
                           "rock-regularize: %s is %s by %s through rock.transform %s; not regular (strict check): %s",
                           an, wr ? "written" : "read", u->name, vn, r);
      else
        st = kl_emit_error(fn->ctx, u->loc,
                           "rock-regularize: %s is %s by %s through rock.transform %s; the view can be moved off the "
                           "%s (run rock-regularize first)",
                           an, wr ? "written" : "read", u->name, vn, wr ? "write" : "read");
    }
    free(us);
  }
  free(ops);
  return st;
}

kl_status kl_verify_regular(kl_op *root, bool strict) {
  if (kl_is_kernel(root)) return check_kernel(root, strict);
  int n;
  kl_op **ops = kl_collect_ops(root, &n);
  kl_status st = KL_OK;
  for (int i = 0; i < n && st == KL_OK; i++)
    if (ops[i] != root && kl_is_kernel(ops[i])) st = check_kernel(ops[i], strict);
  free(ops);
  return st;
}

/* ---- the pass ---- */

static kl_status run(kl_op *module, const kl_pass_options *po, void *user) {
  (void)user;
  kl_pattern r1 = { "rock.alloc", 3, "rock-regularize-write", r1_pattern, NULL };
  kl_pattern r2 = { NULL, 2, "rock-regularize-read", r2_pattern, NULL };
  kl_pattern r3 = { NULL, 1, "rock-regularize-split-broadcast", r3_pattern, NULL };
  const kl_pattern *ps[] = { &r1, &r2, &r3 };
  kl_greedy_config cfg = kl_greedy_default();
  cfg.fold = false;
  cfg.remove_dead = false;
  if (kl_apply_patterns_greedy(module, ps, 3, &cfg) != KL_OK) return KL_ERR;
  return kl_verify_regular(module, kl_pass_opt_bool(po, "strict"));
}

static const kl_pass_option options[] = {
  { "strict", KL_OPT_BOOL, "false",
    "end with the strict check: any view left between a global alloc and a fusing op "
    "(e.g. a broadcast read) is an error" },
};

void kl__register_rock_regularize(kl_ctx *ctx);
void kl__register_rock_regularize(kl_ctx *ctx) {
  kl_pass_info info = { "rock-regularize",
                        "regular form for fusion: views between a global rock.alloc and the fusing ops that write "
                        "or read it move to the other operands (R1 on writes, R2 on reads)",
                        options,
                        1,
                        run,
                        NULL };
  kl_register_pass(ctx, &info);
}
