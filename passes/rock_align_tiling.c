/* rock_align_tiling.c — the `rock-align-tiling` pass (output fusion and input fusion).
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
 * each reader is fused in turn at the same write, the last one erases the old write and
 * %c, and an input that an earlier fused reader already read at the same coordinates
 * into a register tile (same view, same extra indices, its buffer not written since) is
 * not read again: several epilogues of one GEMM result read every input once;
 * %c may also be a kernel argument (a GEMM output that an epilogue reads back: the
 * other workgroups' tiles would not be ready), which always stays.
 * The pattern does not apply (recorded for KILN_DEBUG=rewrite, IR unchanged) when: %c
 * is not a global rock.alloc, it has no or several writers, some other op writes it, the
 * elementwise reads it through a view, the store method is not "set", the accumulator
 * tile is not 1-D, the write does not precede the elementwise, an input or the output
 * is not available at the write (or its buffer is written / used between the write and
 * the elementwise), or the body uses values not available at the write. vector_len is
 * the longest vector kl_view_max_vectorization proves along iter for each access.
 *
 * Input fusion (pattern rock-align-tiling-input, tried first; root rock.elementwise):
 *   %p = rock.alloc : buffer<S x T>                        (global: a GEMM operand)
 *   rock.elementwise(%x0, ..., %xk, %p) ({body}) [{primary_input = i}]
 *        %p written directly; the %xi (buffers of shape S, usually transform chains over
 *        kernel arguments) are not written anywhere after the elementwise
 *   rock.threadwise_read_into(%pv, %tile, %e...) {view = V, vector_len}   (one or more:
 *        the global -> private copies of the K loop; %pv a transform chain ending at %p;
 *        nothing else uses %p)
 * becomes, at every read (tiles at the top of the kernel func):
 *   F = V composed with the views of %pv: (e..., iter) -> coordinates of %p
 *   for every distinct input %xi: %ti = rock.alloc private [n x Txi];
 *        rock.threadwise_read_into(%xi, %ti, %e...) {view = F, vector_len[, primary]}
 *        (`primary` on the input named by primary_input; vector_len: what F and %xi's
 *        views allow)
 *   [mask, see below: rock.threadwise_read_into(%one, %m, %e...) {view = F o (S -> [1])}
 *        with %one = rock.alloc private [1 x i32] filled with 1, %m private [n x i32]]
 *   rock.elementwise(%t0, ..., %tk[, %m], %tile) ({body; convert to %tile's type;
 *        [select(%m != 0, result, 0)]})
 * and the read is erased; then the elementwise, %p's views and %p go. Where %tile's only
 * other users are the threadwise_write_all ops copying it to LDS (the K loop's form) and
 * its reads agree on the mask, the body is deferred: the reads load into tiles shared by
 * all reads of %tile, and the rock.elementwise runs right before each write of %tile, so
 * the next K tile's loads are in flight during the current tile's matrix instructions
 * (computing right after the loads stalled every iteration on their latency: 2x slower
 * on the H200). The padding
 * mask: where F can produce invalid (padded) coordinates (kl_view_invalid_dims: the
 * Pad views of rock-gemm-to-gridwise, or padding in the operand's own views) the
 * reads of the inputs give 0, and the body then gives body(0, ..., 0), which must be 0
 * for the GEMM; when the body, evaluated with zero inputs through the fold hooks, is not
 * provably 0, the result is re-masked with the validity of F (the 1 read through F is 0
 * exactly at the invalid points). The pattern does not apply (IR unchanged, reason
 * under KILN_DEBUG=rewrite) when: the elementwise has no inputs, its output is not a
 * global rock.alloc written directly, it reads its own output, %p has a user other than
 * rock.transform chains ending in threadwise_read_into sources, a read does not come
 * after the elementwise or does not fill a 1-D private tile, an input is written after
 * the elementwise, or an input / a value of the body is not available at a read. */
#include "passes/lower_loops.h"
#include "core/dialect_builtin.h"
#include "core/dialect_rock.h"
#include "core/pass.h"
#include "passes/rock_output_swizzle.h"
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
  if (!strcmp(n, "rock.threadwise_write_all") || !strcmp(n, "rock.threadwise_read_into") ||
      !strcmp(n, "rock.threadwise_copy_async"))
    return index == 1;
  if (!strcmp(n, "rock.gemm") || !strcmp(n, "rock.gridwise_gemm") || !strcmp(n, "rock.conv")) return index == 2;
  if (!strcmp(n, "rock.reduce") || !strcmp(n, "rock.softmax")) return index == op->nopnds - 1;
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

/* A register tile that already holds input v at the write's coordinates: an earlier
 * fused epilogue of the same write read it (rock.threadwise_read_into before `write`
 * in its block, same extra indices, same composed view down to the same buffer, a tile
 * of n elements of v's type written by nothing else), and nothing between that read and
 * the write writes v's buffer. NULL if there is none. */
static kl_value *same_read(kl_op *write, kl_value *v, const kl_view *T, kl_value *const *ex, int nextra, int64_t n) {
  kl_value *vu;
  kl_view *want = kl_ll_access_view(T, v, &vu, NULL, 0);
  if (!want) return NULL;
  kl_value *found = NULL;
  for (kl_op *o = write->prev; o && !found; o = o->prev) {
    if (strcmp(o->name, "rock.threadwise_read_into") || o->nopnds != nextra + 2) continue;
    kl_value *t = o->opnds[1].value;
    if (t->type->kind != KL_TY_BUFFER || t->type->rank != 1 || t->type->shape[0] != n ||
        t->type->elem != v->type->elem || kl_ll_space(t) != KL_SPACE_PRIVATE)
      continue;
    bool same = true;
    for (int i = 0; i < nextra && same; i++) same = o->opnds[2 + i].value == ex[i];
    const kl_view *ov = kl_ll_op_view(o);
    kl_value *ou;
    kl_view *have = same && ov ? kl_ll_access_view(ov, o->opnds[0].value, &ou, NULL, 0) : NULL;
    same = have && ou == vu && kl_view_equal(have, want);
    kl_view_free(have);
    for (kl_use *u = t->first_use; u && same; u = u->next) /* only o writes the tile */
      if (u->user != o && writes_operand(u->user, u->index)) same = false;
    for (kl_op *x = o->next; x && x != write && same; x = x->next) {
      if (x->nregions > 0 && !kl_op_has_trait(x, KL_TRAIT_FUSING)) same = false; /* what runs inside: unknown */
      for (int i = 0; i < x->nopnds && same; i++) {
        int nc;
        if (writes_operand(x, i) && kl_rock_underlying(x->opnds[i].value, NULL, &nc, 0) == vu) same = false;
      }
    }
    if (same) found = t;
  }
  kl_view_free(want);
  return found;
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
    kl_ll_convert_tile(rw, loc, acc, ctile);
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
    kl_value *t = same_read(write, v, T, ex, nextra, n);
    if (!t) {
      t = alloc_tile(rw, loc, entry, v->type->elem, n);
      kl_value *src = materialize(rw, v, write);
      kl_rewriter_set_insertion_before(rw, write);
      threadwise(rw, loc, "rock.threadwise_read_into", src, t, nextra, ex, T, access_vlen(T, src, nextra), false);
    }
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

/* ---- input fusion ---- */

/* Whether ew's body provably maps all-zero inputs to 0: the body is evaluated through
 * the ops' fold hooks (and constants) with every argument 0. Anything that does not
 * fold (nested regions, ops without folds) counts as "not provably 0". */
static bool body_maps_zero_to_zero(kl_op *ew) {
  kl_ctx *ctx = ew->ctx;
  kl_block *b = kl_region_entry(&ew->regions[0]);
  if (!b) return false;
  int cap = b->nargs + 8, n = 0;
  kl_value **keys = kl_xmalloc(cap * sizeof *keys);
  const kl_attr **vals = kl_xmalloc(cap * sizeof *vals);
#define ZPUT(k, a)                                  \
  do {                                              \
    if (n == cap) {                                 \
      cap *= 2;                                     \
      keys = kl_xrealloc(keys, cap * sizeof *keys); \
      vals = kl_xrealloc(vals, cap * sizeof *vals); \
    }                                               \
    keys[n] = (k);                                  \
    vals[n++] = (a);                                \
  } while (0)
  for (int i = 0; i < b->nargs; i++) ZPUT(b->args[i], kl_const_attr_for(ctx, b->args[i]->type, 0));
  bool zero = false;
  for (kl_op *op = b->first; op; op = op->next) {
    const kl_attr *cst[8] = { 0 };
    if (op->nopnds > 8 || op->nregions > 0) break;
    for (int i = 0; i < op->nopnds; i++)
      for (int j = n - 1; j >= 0 && !cst[i]; j--)
        if (keys[j] == op->opnds[i].value) cst[i] = vals[j];
    if (op == b->last) { /* rock.yield (the verifier checks it) */
      const kl_attr *a = op->nopnds == 1 ? cst[0] : NULL;
      zero = a && ((a->kind == KL_AT_INT && a->i == 0) || (a->kind == KL_AT_FLOAT && a->f == 0.0));
      break;
    }
    if (op->nresults != 1) break;
    const kl_attr *r = NULL;
    if (kl_op_has_trait(op, KL_TRAIT_CONSTANT))
      r = kl_op_attr(op, "value");
    else if (op->def && op->def->fold) {
      kl_fold_result fr = { 0 };
      if (op->def->fold(op, cst, &fr)) {
        r = fr.attr;
        for (int j = n - 1; j >= 0 && !r && fr.value; j--)
          if (keys[j] == fr.value) r = vals[j];
      }
    }
    if (!r) break;
    ZPUT(&op->results[0], r);
  }
#undef ZPUT
  free(keys);
  free(vals);
  return zero;
}

/* The view S -> [1] (every coordinate of a buffer of shape S reads element 0), composed
 * under full: (e..., iter) -> [1], valid exactly where full is. */
static kl_view *ones_view(const kl_view *full) {
  kl_view_err ve = { 0 };
  int64_t one = 1;
  const char *nm = "one_";
  kl_view *v = kl_view_identity(1, &one, &nm, &ve);
  int r = kl_view_lower_rank(full);
  for (int i = 0; v && i < r; i++) {
    kl_view *nv = kl_view_add_dim(v, kl_view_lower_name(full, i), kl_view_lower_size(full, i), i, &ve);
    kl_view_free(v);
    v = nv;
  }
  if (v) {
    kl_view *nv = kl_view_const_dim(v, nm, 0, &ve);
    kl_view_free(v);
    v = nv;
  }
  kl_view *c = v ? kl_view_compose(full, v, &ve) : NULL;
  kl_view_free(v);
  if (!c) return NULL;
  kl_view *s = kl_view_simplify(c);
  kl_view_free(c);
  return s;
}

/* The kernel func's entry block (tiles are allocated at its top). */
static kl_block *func_entry(kl_op *op) {
  kl_op *func = kl_ll_func_of(op);
  return func ? kl_region_entry(&func->regions[0]) : NULL;
}

/* One read of the intermediate buffer to fuse: its view composed down to %p. */
typedef struct {
  kl_op *read;
  kl_view *full, *mask; /* mask: F o (S -> [1]) when the fused copy must be re-masked */
} in_read;

/* Checks the input-fusion pattern rooted at ew (see the header comment); on success
 * fills reads[0..*nr) (caller frees the views) and returns NULL, else the reason. */
static const char *check_input(kl_op *ew, in_read **reads, int *nr) {
  static char why[600];
  bool mask_body = !body_maps_zero_to_zero(ew);
  int nin = ew->nopnds - 1;
  kl_value *p = ew->opnds[nin].value;
  *reads = NULL;
  *nr = 0;
  if (nin < 1) return "the elementwise has no inputs";
  if (!p->def || !strcmp(p->def->name, "rock.transform"))
    return "the elementwise's output is not a rock.alloc written directly";
  if (strcmp(p->def->name, "rock.alloc") || kl_ll_space(p) != KL_SPACE_GLOBAL)
    return "the elementwise's output is not a global rock.alloc";
  for (int i = 0; i < nin; i++)
    if (kl_rock_underlying(ew->opnds[i].value, NULL, &(int){ 0 }, 0) == p)
      return "the elementwise reads its own output";
  use_list l = { 0 };
  collect_uses(p, false, &l);
  const char *fail = NULL;
  in_read *rs = kl_xcalloc(l.n ? l.n : 1, sizeof *rs);
  int n = 0;
  for (int i = 0; i < l.n && !fail; i++) {
    use_rec *u = &l.r[i];
    if (u->user == ew) {
      if (u->via_view || u->index != nin) fail = "the elementwise also uses its output through a view";
      continue;
    }
    if (strcmp(u->user->name, "rock.threadwise_read_into") || u->index != 0) {
      snprintf(why, sizeof why, "the intermediate buffer is used by '%s' (only threadwise_read_into reads fuse)",
               u->user->name);
      fail = why;
      continue;
    }
    kl_op *r = u->user;
    const kl_view *V = kl_ll_op_view(r);
    kl_value *tile = r->opnds[1].value;
    int nextra = r->nopnds - 2;
    if (!V || kl_view_rank(V) != nextra + 1 || nextra > KL_VIEW_MAX_DIMS - 1)
      fail = "a read of the intermediate buffer has no matching #view";
    else if (tile->def == NULL || kl_ll_space(tile) != KL_SPACE_PRIVATE || tile->type->rank != 1 ||
             tile->type->shape[0] != kl_view_size(V, nextra))
      fail = "a read of the intermediate buffer does not fill a 1-D private tile";
    else if (!kl_ll_before(ew, r))
      fail = "a read of the intermediate buffer does not come after the elementwise";
    else if (!body_ok(ew, r))
      fail = "the elementwise body uses values that are not available at the read";
    if (fail) continue;
    char err[512];
    kl_value *under;
    kl_view *full = kl_ll_access_view(V, r->opnds[0].value, &under, err, sizeof err);
    if (!full) {
      snprintf(why, sizeof why, "cannot compose the read's views: %s", err);
      fail = why;
      continue;
    }
    if (under != p) {
      kl_view_free(full);
      fail = "a read's source chain does not end at the intermediate buffer";
      continue;
    }
    kl_view *mv = NULL;
    if (mask_body && kl_view_invalid_dims(full) != 0 && !(mv = ones_view(full))) {
      kl_view_free(full);
      fail = "cannot build the padding mask view";
      continue;
    }
    rs[n++] = (in_read){ r, full, mv };
  }
  free(l.r);
  if (!fail && n == 0) fail = "the intermediate buffer has no threadwise_read_into readers";
  /* the inputs must be available at every read and not be written after the elementwise */
  for (int i = 0; i < nin && !fail; i++) {
    kl_value *v = ew->opnds[i].value;
    if (v->type->kind != KL_TY_BUFFER) {
      fail = "an input of the elementwise is not a buffer";
      break;
    }
    kl_value *u = kl_rock_underlying(v, NULL, &(int){ 0 }, 0);
    use_list ul = { 0 };
    collect_uses(u, false, &ul);
    for (int j = 0; j < ul.n && !fail; j++)
      if (ul.r[j].user != ew && writes_operand(ul.r[j].user, ul.r[j].index) && !kl_ll_before(ul.r[j].user, ew))
        fail = "an input buffer of the elementwise is written after it";
    free(ul.r);
    for (int j = 0; j < n && !fail; j++) {
      kl_value *x = v;
      while (x->def && !strcmp(x->def->name, "rock.transform") && !kl_ll_dominates(x, rs[j].read))
        x = x->def->opnds[0].value;
      if (!kl_ll_dominates(x, rs[j].read)) fail = "an input of the elementwise is not available at a read";
    }
  }
  if (fail) {
    for (int i = 0; i < n; i++) {
      kl_view_free(rs[i].full);
      kl_view_free(rs[i].mask);
    }
    free(rs);
    return fail;
  }
  *reads = rs;
  *nr = n;
  return NULL;
}

/* Reads for one read R of %p: every distinct input of ew into its register tile
 * (tiles[i]; allocated when NULL) through R's composed view, the validity tile
 * (*mtile; allocated when NULL) when ir->mask is set, all before R. */
static void emit_input_reads(kl_rewriter *rw, kl_op *ew, const in_read *ir, int64_t primary, kl_value **tiles,
                             kl_value **mtile) {
  kl_ctx *ctx = ew->ctx;
  kl_op *R = ir->read;
  kl_loc loc = R->loc;
  int nin = ew->nopnds - 1, nextra = R->nopnds - 2;
  int64_t n = R->opnds[1].value->type->shape[0];
  kl_block *entry = func_entry(R);
  kl_value *ex[KL_VIEW_MAX_DIMS];
  for (int i = 0; i < nextra; i++) ex[i] = R->opnds[2 + i].value;
  for (int i = 0; i < nin; i++) {
    kl_value *v = ew->opnds[i].value;
    int same = -1;
    for (int j = 0; j < i && same < 0; j++)
      if (ew->opnds[j].value == v) same = j;
    if (same >= 0) {
      tiles[i] = tiles[same];
      continue;
    }
    if (!tiles[i]) tiles[i] = alloc_tile(rw, loc, entry, v->type->elem, n);
    kl_value *src = materialize(rw, v, R);
    kl_rewriter_set_insertion_before(rw, R);
    kl_op *rd = threadwise(rw, loc, "rock.threadwise_read_into", src, tiles[i], nextra, ex, ir->full,
                           access_vlen(ir->full, src, nextra), false);
    if (i == primary) kl_rewriter_set_attr(rw, rd, "primary", kl_attr_unit(ctx));
  }
  if (ir->mask) { /* a tile of 1 (valid) / 0 (padding): a 1-element register of 1 read through the view */
    const kl_type *i32 = kl_type_i32(ctx);
    kl_value *one = alloc_tile(rw, loc, entry, i32, 1);
    kl_rewriter_set_insertion_after(rw, one->def);
    kl_named_attr fv = { "value", kl_const_attr_for(ctx, i32, 1) };
    kl_rewriter_create(rw, "rock.fill", loc, 1, &one, 0, NULL, 1, &fv, 0);
    if (!*mtile) *mtile = alloc_tile(rw, loc, entry, i32, n);
    kl_rewriter_set_insertion_before(rw, R);
    threadwise(rw, loc, "rock.threadwise_read_into", one, *mtile, nextra, ex, ir->mask, 1, false);
  }
}

/* ew's body on the register tiles (inputs, then the validity tile when mtile) into
 * tile, converted to the tile's type and re-masked, inserted before `at`. */
static void emit_tile_body(kl_rewriter *rw, kl_op *ew, kl_value *const *in_tiles, kl_value *mtile, kl_value *tile,
                           kl_op *at) {
  kl_ctx *ctx = ew->ctx;
  kl_loc loc = at->loc;
  int nin = ew->nopnds - 1, nt = nin;
  kl_value **tiles = kl_xmalloc((nin + 2) * sizeof *tiles);
  for (int i = 0; i < nin; i++) tiles[i] = in_tiles[i];
  if (mtile) tiles[nt++] = mtile;
  tiles[nt] = tile;
  kl_rewriter_set_insertion_before(rw, at);
  int na = 0;
  kl_named_attr *attrs = kl_xmalloc((ew->nattrs + 1) * sizeof *attrs);
  for (int i = 0; i < ew->nattrs; i++)
    if (strcmp(ew->attrs[i].name, "primary_input")) attrs[na++] = ew->attrs[i];
  kl_op *ew2 = kl_rewriter_create(rw, "rock.elementwise", loc, nt + 1, tiles, 0, NULL, na, attrs, 1);
  free(attrs);
  kl_value_map map = { 0 };
  kl_region_clone_into(ctx, &ew->regions[0], &ew2->regions[0], &map);
  kl_value_map_free(&map);
  kl_block *b = kl_region_entry(&ew2->regions[0]);
  kl_value *marg = mtile ? kl_block_add_arg(ctx, b, mtile->type->elem) : NULL;
  kl_op *y = b->last;
  kl_value *r = y->opnds[0].value;
  const kl_type *te = tile->type->elem;
  if (r->type != te || mtile) {
    kl_ll L;
    kl_ll_init(&L, rw, loc, 0);
    kl_rewriter_set_insertion_before(rw, y);
    if (r->type != te) r = kl_ll_convert(&L, r, te);
    if (mtile) r = kl_ll_select(&L, kl_ll_convert(&L, marg, kl_type_i1(ctx)), r, kl_ll_const(&L, te, 0));
    kl_rewriter_set_operand(rw, y, 0, r);
  }
  free(tiles);
}

/* Replaces one read R of %p by reads of ew's inputs through R's composed view, the
 * body on the tiles (converted to the tile's type, re-masked when ir->mask is set) into
 * R's tile, and erases R. */
static void fuse_one_read(kl_rewriter *rw, kl_op *ew, const in_read *ir, int64_t primary) {
  int nin = ew->nopnds - 1;
  kl_value **tiles = kl_xcalloc(nin + 1, sizeof *tiles), *mtile = NULL;
  emit_input_reads(rw, ew, ir, primary, tiles, &mtile);
  emit_tile_body(rw, ew, tiles, mtile, ir->read->opnds[1].value, ir->read);
  free(tiles);
  kl_rewriter_erase_op(rw, ir->read);
}

/* The deferred form, for the reads rs[0..nr) of %p that fill register tile T when T's
 * only other users are threadwise_write_all ops reading it (the K loop's copies to LDS)
 * and the reads agree on the mask: the reads load the inputs into register tiles shared
 * by all of them, and the body runs right before each write of T. The loads of the next
 * K tile are then issued before the current tile's matrix instructions and the
 * conversion waits for them only at the LDS store, as an unfused copy does; computing
 * the body right after the loads would stall each iteration on the load latency.
 * Returns false (nothing changed) when the form does not apply. */
static bool fuse_reads_deferred(kl_rewriter *rw, kl_op *ew, in_read *rs, int nr, int64_t primary, kl_value *T) {
  int f = -1; /* the first read of T not fused yet (earlier groups set .read to NULL) */
  for (int i = 0; i < nr && f < 0; i++)
    if (rs[i].read && rs[i].read->opnds[1].value == T) f = i;
  if (f < 0) return false;
  for (int i = f + 1; i < nr; i++)
    if (rs[i].read && rs[i].read->opnds[1].value == T && (rs[i].mask != NULL) != (rs[f].mask != NULL)) return false;
  bool mask = rs[f].mask != NULL; /* the reads of T agree on it (checked above) */
  int nw = 0;
  for (kl_use *u = T->first_use; u; u = u->next) {
    kl_op *o = u->user;
    bool ours = false;
    for (int i = 0; i < nr && !ours; i++) ours = o == rs[i].read && u->index == 1;
    if (ours) continue;
    if (strcmp(o->name, "rock.threadwise_write_all") || u->index != 0) return false;
    nw++;
  }
  if (!nw) return false;
  int nin = ew->nopnds - 1;
  kl_value **tiles = kl_xcalloc(nin + 1, sizeof *tiles), *mtile = NULL;
  kl_op **writes = kl_xmalloc(nw * sizeof *writes);
  nw = 0;
  for (kl_use *u = T->first_use; u; u = u->next)
    if (!strcmp(u->user->name, "rock.threadwise_write_all") && u->index == 0) writes[nw++] = u->user;
  for (int i = 0; i < nr; i++)
    if (rs[i].read && rs[i].read->opnds[1].value == T) {
      emit_input_reads(rw, ew, &rs[i], primary, tiles, &mtile);
      kl_rewriter_erase_op(rw, rs[i].read);
      rs[i].read = NULL;
    }
  for (int k = 0; k < nw; k++) emit_tile_body(rw, ew, tiles, mask ? mtile : NULL, T, writes[k]);
  free(writes);
  free(tiles);
  return true;
}

/* The primary input index recorded on ew (rock-gridwise-to-blockwise sets it), or -1. */
static int64_t primary_of(kl_op *ew) {
  int64_t p;
  return kl_op_attr_i64(ew, "primary_input", &p) && p >= 0 && p < ew->nopnds - 1 ? p : -1;
}

/* Erases the rock.transform ops over v whose results end up unused (leaves first). */
static void erase_dead_views(kl_rewriter *rw, kl_value *v) {
  int n = 0;
  for (kl_use *u = v->first_use; u; u = u->next) n++;
  kl_op **users = kl_xmalloc((n ? n : 1) * sizeof *users);
  n = 0;
  for (kl_use *u = v->first_use; u; u = u->next)
    if (!strcmp(u->user->name, "rock.transform") && u->index == 0) users[n++] = u->user;
  for (int i = 0; i < n; i++) {
    erase_dead_views(rw, &users[i]->results[0]);
    if (!kl_value_has_uses(&users[i]->results[0])) kl_rewriter_erase_op(rw, users[i]);
  }
  free(users);
}

static bool fuse_input_pattern(const kl_pattern *pat, kl_op *ew, kl_rewriter *rw) {
  kl_op *func = kl_ll_func_of(ew);
  if (!func || !kl_is_kernel(func)) return kl_rewriter_notify_no_match(rw, "not inside a kernel func");
  in_read *rs;
  int nr;
  const char *why = check_input(ew, &rs, &nr);
  if (why) return kl_rewriter_notify_no_match(rw, "input fusion: %s", why);
  kl_value *p = ew->opnds[ew->nopnds - 1].value;
  int64_t primary = primary_of(ew);
  for (int i = 0; i < nr; i++) /* the deferred form per register tile where it applies */
    if (rs[i].read) fuse_reads_deferred(rw, ew, rs, nr, primary, rs[i].read->opnds[1].value);
  for (int i = 0; i < nr; i++) {
    if (rs[i].read) fuse_one_read(rw, ew, &rs[i], primary);
    kl_view_free(rs[i].full);
    kl_view_free(rs[i].mask);
  }
  free(rs);
  /* every reader is fused: the elementwise, %p's dead views and %p go */
  kl_rewriter_erase_op(rw, ew);
  erase_dead_views(rw, p);
  if (!kl_value_has_uses(p)) kl_rewriter_erase_op(rw, p->def);
  return true;
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
  kl_pattern q = { "rock.elementwise", 2, "rock-align-tiling-input", fuse_input_pattern, NULL };
  const kl_pattern *ps[] = { &q, &p };
  kl_greedy_config cfg = kl_greedy_default();
  cfg.fold = false;
  cfg.remove_dead = false;
  if (kl_apply_patterns_greedy(module, ps, 2, &cfg) != KL_OK) return KL_ERR;
  kl_ll_erase_dead(module, false);         /* views left behind by moved operands */
  return kl_output_swizzle_verify(module); /* fused ops never write into an output swizzle's LDS */
}

void kl__register_rock_align_tiling(kl_ctx *ctx) {
  kl_pass_info info = { "rock-align-tiling",
                        "output fusion: element-wise consumers of a GEMM result run on the register tile before the "
                        "single global write (rock.threadwise_write_all); input fusion: an element-wise producer of a "
                        "GEMM operand runs on the global -> private copies of the K loop; the intermediate buffers "
                        "disappear",
                        NULL,
                        0,
                        run,
                        NULL };
  kl_register_pass(ctx, &info);
}
