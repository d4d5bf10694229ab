/* rock_align_tiling.c — the `rock-align-tiling` pass (output fusion).
 *
 * Pattern (greedy driver, root rock.elementwise, repeated to a fixed point so chained
 * epilogues fuse one after the other):
 *   %c = rock.alloc : buffer<S x Tc>                       (global: the GEMM result)
 *   rock.threadwise_write_all(%acc, %dst, %e...) {view = W, store = "set"}
 *        %acc: private [n]; %dst: %c or a rock.transform chain ending at %c
 *   rock.elementwise(%x0, ..., %c, ..., %out) ({body})      (%c read directly)
 * becomes, at the write (register tiles allocated at the top of the kernel func):
 *   T = W composed with the views of %dst's chain: (e..., iter) -> coordinates of %c
 *   [%cv = rock.alloc private [n x Tc]; rock.elementwise(%acc, %cv) {convert}]  if Tacc != Tc
 *   for every other input %x: %tx = rock.alloc private [n x Tx];
 *        rock.threadwise_read_into(%x, %tx, %e...) {view = T, vector_len}
 *   %r = rock.alloc private [n x Tout]; rock.elementwise(%tiles..., %r) ({body})
 *   rock.threadwise_write_all(%r, %out, %e...) {view = T, store = "set", vector_len}
 * and the old write, the elementwise and %c (with its now dead views) are erased. When
 * %c has other readers the old write and %c stay (the fused write is an extra output);
 * %c may also be a kernel argument (a GEMM output that an epilogue reads back: the
 * other workgroups' tiles would not be ready), which always stays.
 * The pattern does not apply (recorded for KILN_DEBUG=rewrite, IR unchanged) when: %c
 * is not a global rock.alloc, it has no or several writers, some other op writes it, the
 * elementwise reads it through a view, the store method is not "set", the accumulator
 * tile is not 1-D, the write does not precede the elementwise, an input or the output
 * is not available at the write (or its buffer is written / used between the write and
 * the elementwise), or the body uses values not available at the write. vector_len is
 * the longest vector kl_view_max_vectorization proves along iter for each access. */
#include "passes/lower_loops.h"
#include "core/dialect_builtin.h"
#include "core/dialect_rock.h"
#include "core/pass.h"
#include "passes/rock_regularize.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One use of a buffer, possibly through rock.transform ops. */
typedef struct {
  kl_op *user;
  int index;
  bool via_view;
} use_rec;
typedef struct {
  use_rec *r;
  int n, cap;
} use_list;

static void collect_uses(kl_value *v, bool via_view, use_list *l) {
  for (kl_use *u = v->first_use; u; u = u->next) {
    if (!strcmp(u->user->name, "rock.transform") && u->index == 0) {
      collect_uses(&u->user->results[0], true, l);
      continue;
    }
    if (l->n == l->cap) {
      l->cap = l->cap ? 2 * l->cap : 8;
      l->r = kl_xrealloc(l->r, l->cap * sizeof *l->r);
    }
    l->r[l->n++] = (use_rec){ u->user, u->index, via_view };
  }
}

/* Whether operand `index` of op may be written by op (unknown ops: yes). */
static bool writes_operand(const kl_op *op, int index) {
  const char *n = op->name;
  if (!strcmp(n, "rock.elementwise")) return index == op->nopnds - 1;
  if (!strcmp(n, "rock.threadwise_write_all") || !strcmp(n, "rock.threadwise_read_into")) return index == 1;
  if (!strcmp(n, "rock.gemm") || !strcmp(n, "rock.gridwise_gemm") || !strcmp(n, "rock.conv")) return index == 2;
  if (!strcmp(n, "rock.reduce") || !strcmp(n, "rock.softmax")) return index == 1;
  if (!strcmp(n, "rock.blockwise_gemm") || !strcmp(n, "rock.threadwise_gemm")) return index == 2;
  if (!strcmp(n, "rock.fill")) return true;
  if (!strcmp(n, "rock.store")) return index == 1;
  if (!strcmp(n, "rock.load")) return false;
  return true;
}

/* op runs strictly between a and b. */
static bool between(const kl_op *op, const kl_op *a, const kl_op *b) {
  return kl_ll_before(a, op) && kl_ll_before(op, b);
}

/* Makes v available before `at`: returns v if it is, else a clone of its transform
 * chain before `at` (an alloc is moved there). NULL if impossible. */
static kl_value *materialize(kl_rewriter *rw, kl_value *v, kl_op *at) {
  if (kl_ll_dominates(v, at)) return v;
  kl_op *d = v->def;
  if (!d) return NULL;
  if (!strcmp(d->name, "rock.alloc") && d->nopnds == 0 && d->nregions == 0 && d->block) {
    kl_rewriter_move_before(rw, d, at);
    return v;
  }
  if (!strcmp(d->name, "rock.transform")) {
    kl_value *src = materialize(rw, d->opnds[0].value, at);
    if (!src) return NULL;
    kl_value_map map = { 0 };
    kl_value_map_set(&map, d->opnds[0].value, src);
    kl_op *c = kl_op_clone(d, &map);
    kl_value_map_free(&map);
    kl_rewriter_set_insertion_before(rw, at);
    kl_rewriter_insert(rw, c);
    return &c->results[0];
  }
  return NULL;
}

/* Checks that the buffer under v is not written (and, for the output, not used at all)
 * between write and ew by anything but ew; NULL if fine, else a reason. */
static const char *check_buffer(kl_value *v, kl_op *write, kl_op *ew, bool is_out) {
  kl_op *ch[1];
  int nc;
  kl_value *u = kl_rock_underlying(v, ch, &nc, 0);
  use_list l = { 0 };
  collect_uses(u, false, &l);
  const char *why = NULL;
  for (int i = 0; i < l.n && !why; i++) {
    kl_op *x = l.r[i].user;
    if (x == ew) continue;
    if (is_out ? between(x, write, ew) : (writes_operand(x, l.r[i].index) && !kl_ll_before(x, write)))
      why = is_out ? "the output buffer is used between the GEMM's write and the elementwise"
                   : "an input buffer is written after the GEMM's write";
  }
  free(l.r);
  return why;
}

/* The values used by the body of ew that are defined outside it must be available at `at`. */
static bool body_ok(kl_op *ew, kl_op *at) {
  int n;
  kl_op **ops = kl_collect_ops(ew, &n);
  bool ok = true;
  for (int i = 1; i < n && ok; i++)
    for (int j = 0; j < ops[i]->nopnds && ok; j++) {
      kl_value *v = ops[i]->opnds[j].value;
      kl_op *p = kl_value_parent_op(v);
      if (p && kl_op_is_ancestor(ew, p) && p != ew) continue;                              /* defined inside the body */
      if (!v->def && v->block && v->block->region && v->block->region->op == ew) continue; /* a body argument */
      if (!kl_ll_dominates(v, at)) ok = false;
    }
  free(ops);
  return ok;
}

static kl_value *alloc_tile(kl_rewriter *rw, kl_loc loc, kl_block *entry, const kl_type *elem, int64_t n) {
  const kl_type *t = kl_type_buffer(kl_rewriter_ctx(rw), elem, 1, &n, NULL, KL_SPACE_PRIVATE);
  if (entry->first)
    kl_rewriter_set_insertion_before(rw, entry->first);
  else
    kl_rewriter_set_insertion_end(rw, entry);
  return kl_op_result(kl_rewriter_create(rw, "rock.alloc", loc, 0, NULL, 1, &t, 0, NULL, 0), 0);
}

static kl_op *threadwise(kl_rewriter *rw, kl_loc loc, const char *name, kl_value *src, kl_value *dst, int nextra,
                         kl_value *const *extra, const kl_view *view, int64_t vlen, bool store) {
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  kl_value *o[2 + KL_VIEW_MAX_DIMS] = { src, dst };
  for (int i = 0; i < nextra; i++) o[2 + i] = extra[i];
  kl_named_attr a[3] = { { "view", kl_ll_view_attr(ctx, view) },
                         { "vector_len", kl_attr_int(ctx, vlen) },
                         { "store", kl_attr_str(ctx, "set") } };
  return kl_rewriter_create(rw, name, loc, 2 + nextra, o, 0, NULL, store ? 3 : 2, a, 0);
}

static int64_t access_vlen(const kl_view *T, kl_value *v, int dim) {
  kl_value *u;
  kl_view *full = kl_ll_access_view(T, v, &u, NULL, 0);
  if (!full) return 1;
  int64_t r = kl_ll_vector_len(full, u, dim);
  kl_view_free(full);
  return r;
}

/* Tries to fuse ew (reading %c = operand ci directly) into the write of %c. Returns
 * NULL on success, else the reason it does not apply (IR unchanged). */
static const char *try_fuse(kl_op *ew, int ci, kl_rewriter *rw, bool *fused) {
  static char why[600];
  kl_ctx *ctx = ew->ctx;
  kl_value *c = ew->opnds[ci].value;
  kl_op *calloc = c->def; /* NULL: a kernel argument (written in the kernel and read back: kept) */
  int nin = ew->nopnds - 1;
  *fused = false;
  /* 1. the uses of %c */
  use_list l = { 0 };
  collect_uses(c, false, &l);
  kl_op *write = NULL;
  bool keep = calloc == NULL;
  const char *fail = NULL;
  for (int i = 0; i < l.n && !fail; i++) {
    use_rec *u = &l.r[i];
    if (u->user == ew) {
      if (u->via_view)
        fail = "the elementwise also reads the GEMM result through a view";
      else if (u->index == ew->nopnds - 1)
        fail = "the elementwise writes the GEMM result buffer";
    } else if (!strcmp(u->user->name, "rock.threadwise_write_all") && u->index == 1) {
      if (write) fail = "the GEMM result buffer has several writers";
      write = u->user;
    } else if (writes_operand(u->user, u->index)) {
      snprintf(why, sizeof why, "the GEMM result buffer is also written by '%s'", u->user->name);
      fail = why;
    } else
      keep = true; /* another reader: keep the old write */
  }
  free(l.r);
  if (fail) return fail;
  if (!write) return "no rock.threadwise_write_all writes the buffer";
  /* 2. the write */
  const char *store = kl_op_attr_string(write, "store");
  if (store && strcmp(store, "set")) {
    snprintf(why, sizeof why, "store method '%s' of the write is not \"set\"", store);
    return why;
  }
  const kl_view *W = kl_ll_op_view(write);
  if (!W) return "the write has no #view attribute";
  kl_value *acc = write->opnds[0].value;
  if (kl_ll_space(acc) != KL_SPACE_PRIVATE || acc->type->rank != 1)
    return "the written tile is not a 1-D private buffer";
  int nextra = write->nopnds - 2;
  if (kl_view_rank(W) != nextra + 1 || kl_view_size(W, nextra) != acc->type->shape[0])
    return "the write's view does not match its extra indices and tile";
  if (!kl_ll_before(write, ew)) return "the write does not come before the elementwise";
  kl_op *func = kl_ll_func_of(write);
  kl_block *entry = func ? kl_region_entry(&func->regions[0]) : NULL;
  if (!entry) return "the write is not inside a func";
  /* 3. T: (extra..., iter) -> coordinates of %c */
  char err[512];
  kl_value *under;
  kl_view *T = kl_ll_access_view(W, write->opnds[1].value, &under, err, sizeof err);
  if (!T) {
    snprintf(why, sizeof why, "cannot compose the write's views: %s", err);
    return why;
  }
  if (under != c) {
    kl_view_free(T);
    return "the write's destination chain does not end at the buffer";
  }
  /* 4. the other operands must be available at the write and not change in between */
  for (int i = 0; i <= nin && !fail; i++) {
    kl_value *v = ew->opnds[i].value;
    if (i < nin && v == c) continue;
    fail = check_buffer(v, write, ew, i == nin);
    if (!fail && !kl_ll_dominates(v, write)) {
      /* only chains of rock.transform over allocs / arguments can be moved */
      kl_value *x = v;
      while (x->def && !strcmp(x->def->name, "rock.transform") && !kl_ll_dominates(x, write))
        x = x->def->opnds[0].value;
      if (!kl_ll_dominates(x, write) && !(x->def && !strcmp(x->def->name, "rock.alloc")))
        fail = "an operand of the elementwise is not available at the GEMM's write";
    }
  }
  if (!fail && !body_ok(ew, write))
    fail = "the elementwise body uses values that are not available at the GEMM's write";
  if (fail) {
    kl_view_free(T);
    return fail;
  }

  /* ---- rewrite ---- */
  kl_loc loc = ew->loc;
  int64_t n = acc->type->shape[0];
  kl_value *ex[KL_VIEW_MAX_DIMS];
  if (nextra > KL_VIEW_MAX_DIMS - 1) {
    kl_view_free(T);
    return "too many extra indices";
  }
  for (int i = 0; i < nextra; i++) ex[i] = write->opnds[2 + i].value;
  kl_value *tiles[64];
  if (nin + 1 > 64) {
    kl_view_free(T);
    return "too many operands";
  }
  /* the accumulator converted to %c's element type */
  kl_value *ctile = acc;
  if (acc->type->elem != c->type->elem) {
    ctile = alloc_tile(rw, loc, entry, c->type->elem, n);
    kl_rewriter_set_insertion_before(rw, write);
    kl_value *o[2] = { acc, ctile };
    kl_op *conv = kl_rewriter_create(rw, "rock.elementwise", loc, 2, o, 0, NULL, 0, NULL, 1);
    kl_block *b = kl_block_create(ctx);
    kl_value *x = kl_block_add_arg(ctx, b, acc->type->elem);
    kl_region_push_block(&conv->regions[0], b);
    kl_ll L;
    kl_ll_init(&L, rw, loc, 0);
    kl_rewriter_set_insertion_end(rw, b);
    kl_value *y = kl_ll_convert(&L, x, c->type->elem);
    kl_rewriter_create(rw, "rock.yield", loc, 1, &y, 0, NULL, 0, NULL, 0);
  }
  for (int i = 0; i < nin; i++) {
    kl_value *v = ew->opnds[i].value;
    if (v == c) {
      tiles[i] = ctile;
      continue;
    }
    int same = -1;
    for (int j = 0; j < i; j++)
      if (ew->opnds[j].value == v) same = j;
    if (same >= 0) {
      tiles[i] = tiles[same];
      continue;
    }
    kl_value *t = alloc_tile(rw, loc, entry, v->type->elem, n);
    kl_value *src = materialize(rw, v, write);
    kl_rewriter_set_insertion_before(rw, write);
    threadwise(rw, loc, "rock.threadwise_read_into", src, t, nextra, ex, T, access_vlen(T, src, nextra), false);
    tiles[i] = t;
  }
  kl_value *out = ew->opnds[nin].value;
  tiles[nin] = alloc_tile(rw, loc, entry, out->type->elem, n);
  kl_value *dst = materialize(rw, out, write);
  kl_rewriter_set_insertion_before(rw, write);
  kl_op *ew2 = kl_rewriter_create(rw, "rock.elementwise", loc, nin + 1, tiles, 0, NULL, ew->nattrs, ew->attrs, 1);
  kl_value_map map = { 0 };
  kl_region_clone_into(ctx, &ew->regions[0], &ew2->regions[0], &map);
  kl_value_map_free(&map);
  threadwise(rw, loc, "rock.threadwise_write_all", tiles[nin], dst, nextra, ex, T, access_vlen(T, dst, nextra), true);
  kl_view_free(T);
  /* erase the elementwise, and (unless %c has other readers) the old write, its views and %c */
  kl_rewriter_erase_op(rw, ew);
  if (!keep) {
    kl_value *d = write->opnds[1].value;
    kl_rewriter_erase_op(rw, write);
    while (d != c && d->def && !kl_value_has_uses(d)) {
      kl_op *t = d->def;
      d = t->opnds[0].value;
      kl_rewriter_erase_op(rw, t);
    }
    if (!kl_value_has_uses(c)) kl_rewriter_erase_op(rw, calloc);
  }
  *fused = true;
  return NULL;
}

static bool fuse_pattern(const kl_pattern *pat, kl_op *ew, kl_rewriter *rw) {
  kl_op *func = kl_ll_func_of(ew);
  if (!func || !kl_is_kernel(func)) return kl_rewriter_notify_no_match(rw, "not inside a kernel func");
  if (ew->nopnds < 2) return kl_rewriter_notify_no_match(rw, "no inputs");
  const char *reason = "no input is a GEMM result buffer (a global rock.alloc or kernel argument)";
  for (int i = 0; i + 1 < ew->nopnds; i++) {
    kl_value *c = ew->opnds[i].value;
    if (c->def && !strcmp(c->def->name, "rock.transform")) {
      kl_op *ch[1];
      int nc;
      kl_value *u = kl_rock_underlying(c, ch, &nc, 0);
      if (u->def && !strcmp(u->def->name, "rock.alloc") && kl_ll_space(u) == KL_SPACE_GLOBAL)
        reason = "the elementwise reads an intermediate buffer through a view (not in regular form)";
      continue;
    }
    bool is_alloc = c->def && !strcmp(c->def->name, "rock.alloc");
    bool is_arg = !c->def && c->block && c->block->region && c->block->region->op == func;
    if (!(is_alloc || is_arg) || c->type->kind != KL_TY_BUFFER || c->type->space != KL_SPACE_GLOBAL) continue;
    bool fused;
    const char *why = try_fuse(ew, i, rw, &fused);
    if (fused) return true;
    reason = why;
  }
  return kl_rewriter_notify_no_match(rw, "%s", reason);
}

static kl_status run(kl_op *module, const kl_pass_options *po, void *user) {
  if (kl_verify_regular(module, false) != KL_OK) return KL_ERR; /* regular form in (passes/rock_regularize.h) */
  kl_pattern p = { "rock.elementwise", 1, "rock-align-tiling", fuse_pattern, NULL };
  const kl_pattern *ps[] = { &p };
  kl_greedy_config cfg = kl_greedy_default();
  cfg.fold = false;
  cfg.remove_dead = false;
  if (kl_apply_patterns_greedy(module, ps, 1, &cfg) != KL_OK) return KL_ERR;
  kl_ll_erase_dead(module, false); /* views left behind by moved operands */
  return KL_OK;
}

void kl__register_rock_align_tiling(kl_ctx *ctx) {
  kl_pass_info info = { "rock-align-tiling",
                        "output fusion: element-wise consumers of a GEMM result run on the register tile before the "
                        "single global write (rock.threadwise_write_all); the intermediate buffer disappears",
                        NULL,
                        0,
                        run,
                        NULL };
  kl_register_pass(ctx, &info);
}
