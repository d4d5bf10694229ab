/* rewrite.c — the rewriter, the greedy worklist driver (patterns, folds, dead pure-op
 * removal), the walk driver and the per-context registry of named patterns. */
#include "core/rewrite.h"
#include "core/dialect_builtin.h"
#include "core/hashmap.h"
#include "core/env.h"
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pointer sets: core/hashmap.h pointer maps (values unused) ---- */
typedef kl_hashmap ptrset;
static bool ps_has(const ptrset *s, const void *p) { return kl_ptrmap_find(s, p) != NULL; }
static bool ps_add(ptrset *s, const void *p) { /* true if p was not present */
  if (ps_has(s, p)) return false;
  kl_ptrmap_put(s, p, NULL);
  return true;
}
static void ps_del(ptrset *s, const void *p) { kl_ptrmap_remove(s, p); }
static void ps_free(ptrset *s) { kl_hashmap_free(s); }

/* ---- op lists ---- */
typedef struct {
  kl_op **ops;
  int n, cap;
} oplist;
static void ol_push(oplist *l, kl_op *op) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 64;
    l->ops = kl_xrealloc(l->ops, l->cap * sizeof *l->ops);
  }
  l->ops[l->n++] = op;
}
static kl_walk_result collect_fn(kl_op *op, void *user) {
  ol_push(user, op);
  return KL_WALK_ADVANCE;
}
/* Every op under root in post-order, root excluded. */
static oplist collect_post(kl_op *root) {
  oplist l = { 0 };
  kl_walk_post(root, collect_fn, &l);
  if (l.n) l.n--; /* root comes last in post-order */
  return l;
}

/* ---- driver state shared with the rewriter ---- */
typedef struct driver {
  kl_op *root;
  bool walk_mode; /* no worklist: only track erased ops */
  bool debug;     /* KILN_DEBUG=rewrite */
  ptrset erased;  /* erased ops (arena memory stays valid, so pointers never recur) */
  oplist wl;
  ptrset in_wl; /* worklist (a stack) and its members */
} driver;

/* An erasure made through the rewriter, for restoring saved insertion points. */
typedef struct erase_rec {
  kl_op *op, *next;
  kl_block *block;
} erase_rec;

struct kl_rewriter {
  kl_ctx *ctx;
  driver *drv; /* NULL for a standalone rewriter */
  kl_block *ip_block;
  kl_op *ip_before;      /* where inserts go */
  kl_insertion_point ip; /* how the point was set (its erased field is unused) */
  bool logging;          /* a point was saved: erasures are logged */
  erase_rec *log;
  int nlog, caplog;
  bool failed;
  kl_sb reason; /* last no-match reason (debug only) */
};
static void rewriter_release(kl_rewriter *rw) {
  kl_sb_free(&rw->reason);
  free(rw->log);
}

static void wl_push(kl_rewriter *rw, kl_op *op) {
  driver *d = rw->drv;
  if (!d || d->walk_mode || !op || ps_has(&d->erased, op)) return;
  if (ps_add(&d->in_wl, op)) ol_push(&d->wl, op);
}
static kl_op *wl_pop(driver *d) {
  if (!d->wl.n) return NULL;
  kl_op *op = d->wl.ops[--d->wl.n];
  ps_del(&d->in_wl, op);
  return op;
}
static void wl_push_users(kl_rewriter *rw, kl_value *v) {
  for (kl_use *u = v->first_use; u; u = u->next) wl_push(rw, u->user);
}
static void wl_push_result_users(kl_rewriter *rw, kl_op *op) {
  for (int i = 0; i < op->nresults; i++) wl_push_users(rw, &op->results[i]);
}
static void wl_push_operand_defs(kl_rewriter *rw, kl_op *op) {
  for (int i = 0; i < op->nopnds; i++)
    if (op->opnds[i].value) wl_push(rw, op->opnds[i].value->def);
}
static kl_walk_result push_fn(kl_op *op, void *user) {
  wl_push(user, op);
  return KL_WALK_ADVANCE;
}

static bool debug_enabled(void) { return kl_env_debug("rewrite"); /* KILN_DEBUG=rewrite (core/env.h) */ }
static void debug_log(const driver *d, const kl_op *op, const char *what, const char *outcome) {
  if (!d || !d->debug) return;
  char where[256];
  kl_loc_format(op->loc, where, sizeof where);
  fprintf(stderr, "[rewrite] '%s' at %s -> %s -> %s\n", op->name, where, what, outcome);
}

/* ---- rewriter API ---- */
kl_rewriter *kl_rewriter_new(kl_ctx *ctx) {
  kl_rewriter *rw = kl_xcalloc(1, sizeof *rw);
  rw->ctx = ctx;
  return rw;
}
void kl_rewriter_free(kl_rewriter *rw) {
  if (!rw) return;
  rewriter_release(rw);
  free(rw);
}
bool kl_rewriter_failed(const kl_rewriter *rw) { return rw->failed; }
kl_ctx *kl_rewriter_ctx(kl_rewriter *rw) { return rw->ctx; }

void kl_rewriter_set_insertion_before(kl_rewriter *rw, kl_op *before) {
  rw->ip_before = before;
  rw->ip_block = before->block;
  rw->ip = (kl_insertion_point){ .kind = KL_IP_BEFORE, .anchor = before };
}
void kl_rewriter_set_insertion_after(kl_rewriter *rw, kl_op *after) {
  rw->ip_before = after->next;
  rw->ip_block = after->block;
  rw->ip = (kl_insertion_point){ .kind = KL_IP_AFTER, .anchor = after };
}
void kl_rewriter_set_insertion_end(kl_rewriter *rw, kl_block *block) {
  rw->ip_before = NULL;
  rw->ip_block = block;
  rw->ip = (kl_insertion_point){ .kind = KL_IP_END, .block = block };
}

/* The rule of rewrite.h for an anchor when op (next: the op that followed it, block:
 * its block) is erased. */
static void move_past_erased(kl_insertion_point *ip, const kl_op *op, kl_op *next, kl_block *block) {
  if ((ip->kind != KL_IP_BEFORE && ip->kind != KL_IP_AFTER) || !kl_op_is_ancestor(op, ip->anchor)) return;
  if (next)
    *ip = (kl_insertion_point){ .kind = KL_IP_BEFORE, .anchor = next, .erased = ip->erased };
  else
    *ip = (kl_insertion_point){ .kind = KL_IP_END, .block = block, .erased = ip->erased };
}
kl_insertion_point kl_rewriter_save_insertion(kl_rewriter *rw) {
  rw->logging = true;
  kl_insertion_point ip = rw->ip;
  ip.erased = rw->nlog;
  return ip;
}
void kl_rewriter_restore_insertion(kl_rewriter *rw, kl_insertion_point ip) {
  for (int i = ip.erased < 0 ? 0 : ip.erased; i < rw->nlog; i++)
    move_past_erased(&ip, rw->log[i].op, rw->log[i].next, rw->log[i].block);
  if (ip.kind == KL_IP_BEFORE)
    kl_rewriter_set_insertion_before(rw, ip.anchor);
  else if (ip.kind == KL_IP_AFTER)
    kl_rewriter_set_insertion_after(rw, ip.anchor);
  else if (ip.kind == KL_IP_END)
    kl_rewriter_set_insertion_end(rw, ip.block);
  else {
    rw->ip_before = NULL;
    rw->ip_block = NULL;
    rw->ip = (kl_insertion_point){ .kind = KL_IP_NONE };
  }
}

kl_op *kl_rewriter_insert(kl_rewriter *rw, kl_op *op) {
  if (rw->ip_before && rw->ip_before->block)
    kl_op_insert_before(rw->ip_before, op);
  else if (rw->ip_block)
    kl_block_push_op(rw->ip_block, op);
  else {
    kl_rewriter_fail(rw, op->loc, "rewriter: no insertion point set for '%s'", op->name);
    return op;
  }
  kl_walk_pre(op, push_fn, rw);
  return op;
}
kl_op *kl_rewriter_create(kl_rewriter *rw, const char *name, kl_loc loc, int nopnds, kl_value *const *opnds,
                          int nresults, const kl_type *const *types, int nattrs, const kl_named_attr *attrs,
                          int nregions) {
  return kl_rewriter_insert(rw,
                            kl_op_create(rw->ctx, name, loc, nopnds, opnds, nresults, types, nattrs, attrs, nregions));
}

static bool used_outside(const kl_op *op) {
  for (int i = 0; i < op->nresults; i++)
    for (kl_use *u = op->results[i].first_use; u; u = u->next)
      if (!kl_op_is_ancestor(op, u->user)) return true;
  return false;
}
typedef struct {
  kl_rewriter *rw;
  kl_op *top;
} erase_walk;
static kl_walk_result erase_fn(kl_op *o, void *user) {
  erase_walk *ew = user;
  ps_add(&ew->rw->drv->erased, o);
  for (int i = 0; i < o->nopnds; i++) { /* defs outside the erased subtree may become dead */
    kl_value *v = o->opnds[i].value;
    if (v && v->def && !kl_op_is_ancestor(ew->top, v->def)) wl_push(ew->rw, v->def);
  }
  return KL_WALK_ADVANCE;
}
void kl_rewriter_erase_op(kl_rewriter *rw, kl_op *op) {
  if (!op || (rw->drv && ps_has(&rw->drv->erased, op))) return;
  if (used_outside(op)) {
    kl_rewriter_fail(rw, op->loc, "cannot erase '%s': its results still have uses", op->name);
    return;
  }
  if (rw->ip_before && kl_op_is_ancestor(op, rw->ip_before)) {
    rw->ip_before = op->next;
    rw->ip_block = op->block;
  }
  move_past_erased(&rw->ip, op, op->next, op->block);
  if (rw->logging) {
    if (rw->nlog == rw->caplog) {
      rw->caplog = rw->caplog ? rw->caplog * 2 : 16;
      rw->log = kl_xrealloc(rw->log, rw->caplog * sizeof *rw->log);
    }
    rw->log[rw->nlog++] = (erase_rec){ op, op->next, op->block };
  }
  if (rw->drv) {
    erase_walk ew = { rw, op };
    kl_walk_pre(op, erase_fn, &ew);
  }
  kl_op_erase(op);
}
void kl_rewriter_replace_op(kl_rewriter *rw, kl_op *op, kl_value *const *vals) {
  for (int i = 0; i < op->nresults; i++) {
    wl_push_users(rw, &op->results[i]);
    kl_value_replace_all_uses(&op->results[i], vals[i]);
  }
  kl_rewriter_erase_op(rw, op);
}
void kl_rewriter_replace_op_with(kl_rewriter *rw, kl_op *op, kl_op *new_op) {
  if (new_op->nresults != op->nresults) {
    kl_rewriter_fail(rw, op->loc, "cannot replace '%s' (%d results) with '%s' (%d results)", op->name, op->nresults,
                     new_op->name, new_op->nresults);
    return;
  }
  if (!new_op->block) {
    kl_op_insert_before(op, new_op);
    kl_walk_pre(new_op, push_fn, rw);
  }
  kl_value **vals = kl_xmalloc((op->nresults + 1) * sizeof *vals);
  for (int i = 0; i < op->nresults; i++) vals[i] = &new_op->results[i];
  kl_rewriter_replace_op(rw, op, vals);
  free(vals);
}
void kl_rewriter_replace_all_uses(kl_rewriter *rw, kl_value *from, kl_value *to) {
  wl_push_users(rw, from);
  kl_value_replace_all_uses(from, to);
  wl_push(rw, from->def); /* may be dead now */
}
void kl_rewriter_modify_start(kl_rewriter *rw, kl_op *op) { wl_push_operand_defs(rw, op); }
void kl_rewriter_modify_end(kl_rewriter *rw, kl_op *op) {
  wl_push(rw, op);
  wl_push_result_users(rw, op);
}
void kl_rewriter_set_attr(kl_rewriter *rw, kl_op *op, const char *name, const kl_attr *a) {
  kl_rewriter_modify_start(rw, op);
  kl_op_set_attr(op, name, a);
  kl_rewriter_modify_end(rw, op);
}
void kl_rewriter_set_operand(kl_rewriter *rw, kl_op *op, int i, kl_value *v) {
  kl_rewriter_modify_start(rw, op);
  kl_op_set_operand(op, i, v);
  kl_rewriter_modify_end(rw, op);
}
void kl_rewriter_move_before(kl_rewriter *rw, kl_op *op, kl_op *anchor) {
  if (op == anchor) return;
  if (op->block) kl_op_unlink(op);
  kl_op_insert_before(anchor, op);
  wl_push(rw, op);
}
void kl_rewriter_fail(kl_rewriter *rw, kl_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kl_emit_vdiag(rw->ctx, KL_DIAG_ERROR, loc, fmt, ap);
  va_end(ap);
  rw->failed = true;
}
bool kl_rewriter_notify_no_match(kl_rewriter *rw, const char *fmt, ...) {
  if (!rw->drv || !rw->drv->debug) return false;
  rw->reason.len = 0;
  if (rw->reason.buf) rw->reason.buf[0] = 0;
  va_list ap;
  va_start(ap, fmt);
  kl_sb_vprintf(&rw->reason, fmt, ap);
  va_end(ap);
  return false;
}

/* ---- patterns sorted for a driver run ---- */
typedef struct {
  const kl_pattern *p;
  const char *root;
  int idx;
} sorted_pat;
static int cmp_pat(const void *a, const void *b) {
  const sorted_pat *x = a, *y = b;
  if (x->p->benefit != y->p->benefit) return x->p->benefit > y->p->benefit ? -1 : 1;
  return x->idx - y->idx;
}
static sorted_pat *sort_patterns(kl_ctx *ctx, const kl_pattern *const *pats, int npats) {
  sorted_pat *s = kl_xmalloc((npats + 1) * sizeof *s);
  for (int i = 0; i < npats; i++) {
    s[i].p = pats[i];
    s[i].root = kl_intern(ctx, pats[i]->root);
    s[i].idx = i;
  }
  qsort(s, npats, sizeof *s, cmp_pat);
  return s;
}
static const char *pat_name(const kl_pattern *p) { return p->name ? p->name : "<unnamed pattern>"; }

/* Tries the patterns on op in benefit order. Returns 1 if one applied, 0 if none,
 * -1 if a pattern reported a failure. *applied gets the pattern's name. */
static int try_patterns(kl_rewriter *rw, kl_op *op, const sorted_pat *pats, int npats, const char **applied) {
  driver *d = rw->drv;
  for (int i = 0; i < npats; i++) {
    if ((pats[i].root && pats[i].root != op->name) || !pats[i].p->fn) continue;
    const kl_pattern *p = pats[i].p;
    kl_rewriter_set_insertion_before(rw, op);
    rw->reason.len = 0;
    if (rw->reason.buf) rw->reason.buf[0] = 0;
    const char *opname = op->name;
    kl_loc oploc = op->loc;
    bool ok = p->fn(p, op, rw);
    if (rw->failed) {
      kl_emit_diag(rw->ctx, KL_DIAG_NOTE, oploc, "while applying pattern '%s' to '%s'", pat_name(p), opname);
      debug_log(d, op, pat_name(p), "failed");
      return -1;
    }
    if (ok) {
      debug_log(d, op, pat_name(p), "applied");
      *applied = pat_name(p);
      return 1;
    }
    if (d && d->debug) {
      char buf[600];
      snprintf(buf, sizeof buf, "not applied (%s)", rw->reason.len ? kl_sb_str(&rw->reason) : "no match");
      debug_log(d, op, pat_name(p), buf);
    }
  }
  return 0;
}

static bool is_dead(const kl_op *op) {
  return kl_op_has_trait(op, KL_TRAIT_PURE) && !kl_op_has_trait(op, KL_TRAIT_TERMINATOR) && kl_op_results_unused(op);
}

/* Folds op through its opdef fold hook; constants are materialized before op. */
static bool try_fold(kl_rewriter *rw, kl_op *op) {
  const kl_opdef *def = op->def;
  if (!def || !def->fold || op->nresults == 0 || kl_op_is_constant(op)) return false;
  const kl_attr **cst = kl_xcalloc(op->nopnds + 1, sizeof *cst);
  kl_fold_result *out = kl_xcalloc(op->nresults, sizeof *out);
  for (int i = 0; i < op->nopnds; i++) cst[i] = op->opnds[i].value ? kl_value_constant(op->opnds[i].value) : NULL;
  bool ok = def->fold(op, cst, out);
  for (int i = 0; ok && i < op->nresults; i++)
    if ((!out[i].attr && !out[i].value) || out[i].value == &op->results[i]) ok = false;
  if (ok) {
    kl_value **vals = kl_xmalloc(op->nresults * sizeof *vals);
    kl_rewriter_set_insertion_before(rw, op);
    for (int i = 0; i < op->nresults; i++) {
      if (out[i].value) {
        vals[i] = out[i].value;
        continue;
      }
      kl_op *c = kl_rewriter_insert(rw, kl_build_constant(rw->ctx, op->loc, out[i].attr, op->results[i].type));
      vals[i] = &c->results[0];
    }
    kl_rewriter_replace_op(rw, op, vals);
    free(vals);
  }
  free(cst);
  free(out);
  return ok;
}

kl_greedy_config kl_greedy_default(void) {
  return (kl_greedy_config){ .max_iterations = 10, .max_rewrites = 0, .fold = true, .remove_dead = true };
}

static void driver_free(driver *d) {
  ps_free(&d->erased);
  ps_free(&d->in_wl);
  free(d->wl.ops);
}
static bool under_root(const driver *d, const kl_op *op) { return op != d->root && kl_op_is_ancestor(d->root, op); }

kl_status kl_apply_patterns_greedy(kl_op *root, const kl_pattern *const *pats, int npats,
                                   const kl_greedy_config *cfg_in) {
  kl_greedy_config cfg = cfg_in ? *cfg_in : kl_greedy_default();
  if (cfg.max_iterations <= 0) cfg.max_iterations = 10;
  bool per_op = cfg.max_rewrites <= 0; /* the default: the budget grows with the IR */
  if (per_op) cfg.max_rewrites = 100000;
  kl_ctx *ctx = root->ctx;
  driver d = { .root = root, .debug = debug_enabled() };
  kl_rewriter rw = { .ctx = ctx, .drv = &d };
  sorted_pat *sp = sort_patterns(ctx, pats, npats);
  kl_status st = KL_OK;
  int rewrites = 0;
  const char *last = NULL, *last_op = NULL;
  kl_loc last_loc = KL_LOC_UNKNOWN;
  for (int iter = 0;; iter++) {
    if (iter == cfg.max_iterations) {
      st = kl_emit_error(ctx, last_loc,
                         "pattern rewriting did not converge in %d iterations; last pattern applied: '%s' on '%s'",
                         cfg.max_iterations, last, last_op);
      break;
    }
    oplist all = collect_post(root);
    if (per_op && iter == 0 && all.n > cfg.max_rewrites / KL_GREEDY_REWRITES_PER_OP)
      cfg.max_rewrites = all.n > INT_MAX / KL_GREEDY_REWRITES_PER_OP ? INT_MAX : all.n * KL_GREEDY_REWRITES_PER_OP;
    for (int i = all.n - 1; i >= 0; i--) wl_push(&rw, all.ops[i]); /* popped in program order */
    free(all.ops);
    bool changed = false;
    for (kl_op *op; (op = wl_pop(&d));) {
      if (ps_has(&d.erased, op) || !under_root(&d, op)) continue;
      const char *applied = NULL;
      const char *opname = op->name;
      kl_loc oploc = op->loc;
      if (cfg.remove_dead && is_dead(op)) {
        debug_log(&d, op, "dead-op removal", "erased");
        kl_rewriter_set_insertion_before(&rw, op);
        kl_rewriter_erase_op(&rw, op);
        applied = "dead-op removal";
      } else if (cfg.fold && try_fold(&rw, op)) {
        debug_log(&d, op, "fold", "folded");
        applied = "fold";
      } else {
        int r = try_patterns(&rw, op, sp, npats, &applied);
        if (r < 0) {
          st = KL_ERR;
          goto done;
        }
        if (r > 0 && !ps_has(&d.erased, op)) wl_push(&rw, op);
      }
      if (rw.failed) {
        st = KL_ERR;
        goto done;
      }
      if (!applied) continue;
      changed = true;
      last = applied;
      last_op = opname;
      last_loc = oploc;
      if (++rewrites > cfg.max_rewrites) {
        st = kl_emit_error(ctx, last_loc,
                           "pattern rewriting did not converge after %d rewrites; last pattern applied: '%s' on '%s'",
                           cfg.max_rewrites, last, last_op);
        goto done;
      }
    }
    if (!changed) break;
  }
done:
  free(sp);
  rewriter_release(&rw);
  driver_free(&d);
  return st;
}

kl_status kl_apply_patterns_walk(kl_op *root, const kl_pattern *const *pats, int npats) {
  kl_ctx *ctx = root->ctx;
  driver d = { .root = root, .walk_mode = true, .debug = debug_enabled() };
  kl_rewriter rw = { .ctx = ctx, .drv = &d };
  sorted_pat *sp = sort_patterns(ctx, pats, npats);
  oplist all = collect_post(root);
  kl_status st = KL_OK;
  for (int i = 0; i < all.n; i++) {
    kl_op *op = all.ops[i];
    if (ps_has(&d.erased, op) || !under_root(&d, op)) continue;
    const char *applied = NULL;
    if (try_patterns(&rw, op, sp, npats, &applied) < 0 || rw.failed) {
      st = KL_ERR;
      break;
    }
  }
  free(all.ops);
  free(sp);
  rewriter_release(&rw);
  driver_free(&d);
  return st;
}

/* ---- named pattern registry (per context) ---- */
#define REGISTRY_KEY "kiln.rewrite.patterns"
typedef struct {
  const kl_pattern **items;
  int n, cap;
} pat_registry;

static pat_registry *registry(kl_ctx *ctx, bool create) {
  pat_registry *r = kl_ctx_get_user(ctx, REGISTRY_KEY);
  if (!r && create) {
    r = kl_arena_alloc(kl_ctx_arena(ctx), sizeof *r);
    kl_ctx_set_user(ctx, REGISTRY_KEY, r);
  }
  return r;
}
void kl_register_pattern(kl_ctx *ctx, const kl_pattern *pat) {
  pat_registry *r = registry(ctx, true);
  kl_pattern *copy = kl_arena_dup(kl_ctx_arena(ctx), pat, sizeof *pat);
  copy->root = kl_intern(ctx, pat->root);
  copy->name = kl_intern(ctx, pat->name);
  if (copy->name)
    for (int i = 0; i < r->n; i++)
      if (r->items[i]->name == copy->name) {
        r->items[i] = copy;
        return;
      }
  if (r->n == r->cap) { /* arena arrays: the old one is simply abandoned */
    int cap = r->cap ? r->cap * 2 : 32;
    const kl_pattern **items = kl_arena_alloc(kl_ctx_arena(ctx), cap * sizeof *items);
    if (r->n) memcpy(items, r->items, r->n * sizeof *items);
    r->items = items;
    r->cap = cap;
  }
  r->items[r->n++] = copy;
}
const kl_pattern *kl_lookup_pattern(kl_ctx *ctx, const char *name) {
  pat_registry *r = registry(ctx, false);
  for (int i = 0; r && name && i < r->n; i++)
    if (r->items[i]->name && !strcmp(r->items[i]->name, name)) return r->items[i];
  return NULL;
}
int kl_pattern_count(kl_ctx *ctx) {
  pat_registry *r = registry(ctx, false);
  return r ? r->n : 0;
}
const kl_pattern *kl_pattern_at(kl_ctx *ctx, int i) {
  pat_registry *r = registry(ctx, false);
  return (r && i >= 0 && i < r->n) ? r->items[i] : NULL;
}
