/* ir.c — op/value/block/region primitives: creation, linking, uses, attributes,
 * erase, clone and walks. */
#include "core/ir.h"
#include <stdlib.h>
#include <string.h>

/* ---- uses ---- */
static void use_link(kl_use *u, kl_value *v) {
  u->value = v;
  u->prev = NULL;
  u->next = v ? v->first_use : NULL;
  if (!v) return;
  if (v->first_use) v->first_use->prev = u;
  v->first_use = u;
}
static void use_unlink(kl_use *u) {
  if (!u->value) return;
  if (u->prev)
    u->prev->next = u->next;
  else
    u->value->first_use = u->next;
  if (u->next) u->next->prev = u->prev;
  u->value = NULL;
  u->prev = u->next = NULL;
}

static int cmp_named(const void *a, const void *b) {
  return strcmp(((const kl_named_attr *)a)->name, ((const kl_named_attr *)b)->name);
}

kl_op *kl_op_create(kl_ctx *ctx, const char *name, kl_loc loc, int nopnds, kl_value *const *opnds, int nresults,
                    const kl_type *const *result_types, int nattrs, const kl_named_attr *attrs, int nregions) {
  kl_arena *a = kl_ctx_ir_arena(ctx);
  kl_op *op = kl_arena_alloc(a, sizeof *op);
  op->ctx = ctx;
  op->arena = a;
  op->name = kl_intern(ctx, name);
  op->def = kl_lookup_op(ctx, op->name);
  op->loc = loc;
  op->nopnds = nopnds;
  op->opnds = kl_arena_alloc(a, (nopnds ? nopnds : 1) * sizeof(kl_use));
  for (int i = 0; i < nopnds; i++) {
    op->opnds[i].user = op;
    op->opnds[i].index = i;
    use_link(&op->opnds[i], opnds[i]);
  }
  op->nresults = nresults;
  op->results = kl_arena_alloc(a, (nresults ? nresults : 1) * sizeof(kl_value));
  for (int i = 0; i < nresults; i++) {
    op->results[i].type = result_types[i];
    op->results[i].def = op;
    op->results[i].index = i;
  }
  op->attrs = kl_arena_alloc(a, (nattrs ? nattrs : 1) * sizeof(kl_named_attr));
  for (int i = 0; i < nattrs; i++) { /* last duplicate wins */
    int j;
    for (j = 0; j < op->nattrs; j++)
      if (strcmp(op->attrs[j].name, attrs[i].name) == 0) break;
    op->attrs[j].name = kl_intern(ctx, attrs[i].name);
    op->attrs[j].value = attrs[i].value;
    if (j == op->nattrs) op->nattrs++;
  }
  qsort(op->attrs, op->nattrs, sizeof(kl_named_attr), cmp_named);
  op->nregions = nregions;
  op->regions = kl_arena_alloc(a, (nregions ? nregions : 1) * sizeof(kl_region));
  for (int i = 0; i < nregions; i++) op->regions[i].op = op;
  return op;
}

static void region_take(kl_region *dst, kl_region *src) {
  dst->first = src->first;
  dst->last = src->last;
  for (kl_block *b = dst->first; b; b = b->next) b->region = dst;
  src->first = src->last = NULL;
}

kl_op *kl_op_create_state(kl_ctx *ctx, const kl_op_state *st) {
  kl_op *op = kl_op_create(ctx, st->name, st->loc, st->nopnds, st->opnds, st->nresults, st->result_types, st->nattrs,
                           st->attrs, st->nregions);
  for (int i = 0; i < st->nregions; i++)
    if (st->regions[i]) region_take(&op->regions[i], st->regions[i]);
  return op;
}
kl_region *kl_region_create_detached(kl_ctx *ctx) { return kl_arena_alloc(kl_ctx_ir_arena(ctx), sizeof(kl_region)); }
kl_block *kl_block_create(kl_ctx *ctx) {
  kl_arena *a = kl_ctx_ir_arena(ctx);
  kl_block *b = kl_arena_alloc(a, sizeof(kl_block));
  b->arena = a;
  return b;
}
kl_value *kl_block_add_arg(kl_ctx *ctx, kl_block *b, const kl_type *t) {
  if (b->nargs == b->cap_args) {
    int cap = b->cap_args ? b->cap_args * 2 : 4;
    kl_value **args = kl_arena_alloc(b->arena ? b->arena : kl_ctx_ir_arena(ctx), cap * sizeof *args);
    if (b->nargs) memcpy(args, b->args, b->nargs * sizeof *args);
    b->args = args;
    b->cap_args = cap;
  }
  kl_value *v = kl_arena_alloc(b->arena ? b->arena : kl_ctx_ir_arena(ctx), sizeof *v);
  v->type = t;
  v->block = b;
  v->index = b->nargs;
  b->args[b->nargs++] = v;
  return v;
}
void kl_block_erase_arg(kl_block *b, int index) {
  for (int i = index; i + 1 < b->nargs; i++) {
    b->args[i] = b->args[i + 1];
    b->args[i]->index = i;
  }
  b->nargs--;
}
kl_op *kl_module_create(kl_ctx *ctx, kl_loc loc) {
  kl_op *m = kl_op_create(ctx, "builtin.module", loc, 0, NULL, 0, NULL, 0, NULL, 1);
  kl_region_push_block(&m->regions[0], kl_block_create(ctx));
  return m;
}
kl_block *kl_module_body(kl_op *module) { return module->nregions ? module->regions[0].first : NULL; }

/* ---- structure ---- */
void kl_region_push_block(kl_region *r, kl_block *b) {
  b->region = r;
  b->next = NULL;
  b->prev = r->last;
  if (r->last)
    r->last->next = b;
  else
    r->first = b;
  r->last = b;
}
void kl_region_insert_block_before(kl_region *r, kl_block *before, kl_block *b) {
  if (!before) {
    kl_region_push_block(r, b);
    return;
  }
  b->region = r;
  b->next = before;
  b->prev = before->prev;
  if (before->prev)
    before->prev->next = b;
  else
    r->first = b;
  before->prev = b;
}
void kl_block_unlink(kl_block *b) {
  kl_region *r = b->region;
  if (!r) return;
  if (b->prev)
    b->prev->next = b->next;
  else
    r->first = b->next;
  if (b->next)
    b->next->prev = b->prev;
  else
    r->last = b->prev;
  b->region = NULL;
  b->prev = b->next = NULL;
}
void kl_block_push_op(kl_block *b, kl_op *op) {
  op->block = b;
  op->next = NULL;
  op->prev = b->last;
  if (b->last)
    b->last->next = op;
  else
    b->first = op;
  b->last = op;
}
void kl_op_insert_before(kl_op *anchor, kl_op *op) {
  kl_block *b = anchor->block;
  op->block = b;
  op->next = anchor;
  op->prev = anchor->prev;
  if (anchor->prev)
    anchor->prev->next = op;
  else
    b->first = op;
  anchor->prev = op;
}
void kl_op_insert_after(kl_op *anchor, kl_op *op) {
  if (anchor->next) {
    kl_op_insert_before(anchor->next, op);
    return;
  }
  kl_block_push_op(anchor->block, op);
}
void kl_op_unlink(kl_op *op) {
  kl_block *b = op->block;
  if (!b) return;
  if (op->prev)
    op->prev->next = op->next;
  else
    b->first = op->next;
  if (op->next)
    op->next->prev = op->prev;
  else
    b->last = op->prev;
  op->block = NULL;
  op->prev = op->next = NULL;
}
kl_op *kl_op_parent_op(const kl_op *op) { return (op->block && op->block->region) ? op->block->region->op : NULL; }
kl_block *kl_region_entry(const kl_region *r) { return r->first; }
kl_op *kl_block_terminator(const kl_block *b) {
  return (b->last && kl_op_has_trait(b->last, KL_TRAIT_TERMINATOR)) ? b->last : NULL;
}
bool kl_op_is_ancestor(const kl_op *ancestor, const kl_op *op) {
  for (; op; op = kl_op_parent_op(op))
    if (op == ancestor) return true;
  return false;
}
bool kl_op_is_before_in_block(const kl_op *a, const kl_op *b) {
  for (const kl_op *o = a->next; o; o = o->next)
    if (o == b) return true;
  return false;
}

/* ---- operands and uses ---- */
void kl_op_set_operand(kl_op *op, int i, kl_value *v) {
  use_unlink(&op->opnds[i]);
  use_link(&op->opnds[i], v);
}
void kl_op_set_operands(kl_op *op, int n, kl_value *const *vals) {
  for (int i = 0; i < op->nopnds; i++) use_unlink(&op->opnds[i]);
  if (n > op->nopnds) op->opnds = kl_arena_alloc(op->arena, n * sizeof(kl_use));
  op->nopnds = n;
  for (int i = 0; i < n; i++) {
    op->opnds[i].user = op;
    op->opnds[i].index = i;
    use_link(&op->opnds[i], vals[i]);
  }
}
bool kl_value_has_uses(const kl_value *v) { return v->first_use != NULL; }
int kl_value_use_count(const kl_value *v) {
  int n = 0;
  for (kl_use *u = v->first_use; u; u = u->next) n++;
  return n;
}
bool kl_op_results_unused(const kl_op *op) {
  for (int i = 0; i < op->nresults; i++)
    if (op->results[i].first_use) return false;
  return true;
}
void kl_value_replace_uses_except(kl_value *from, kl_value *to, const kl_op *except) {
  if (from == to) return;
  kl_use *u = from->first_use;
  while (u) {
    kl_use *next = u->next;
    if (!except || !kl_op_is_ancestor(except, u->user)) {
      kl_op *user = u->user;
      int i = u->index;
      use_unlink(u);
      use_link(&user->opnds[i], to);
    }
    u = next;
  }
}
void kl_value_replace_all_uses(kl_value *from, kl_value *to) { kl_value_replace_uses_except(from, to, NULL); }
void kl_value_set_type(kl_value *v, const kl_type *t) { v->type = t; }
kl_op *kl_value_parent_op(const kl_value *v) {
  if (v->def) return v->def;
  return (v->block && v->block->region) ? v->block->region->op : NULL;
}

/* ---- attributes ---- */
const kl_attr *kl_op_attr(const kl_op *op, const char *name) {
  int lo = 0, hi = op->nattrs - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2, c = strcmp(op->attrs[mid].name, name);
    if (!c) return op->attrs[mid].value;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return NULL;
}
void kl_op_set_attr(kl_op *op, const char *name, const kl_attr *a) {
  for (int i = 0; i < op->nattrs; i++)
    if (strcmp(op->attrs[i].name, name) == 0) {
      if (a) {
        op->attrs[i].value = a;
        return;
      }
      memmove(&op->attrs[i], &op->attrs[i + 1], (op->nattrs - i - 1) * sizeof(kl_named_attr));
      op->nattrs--;
      return;
    }
  if (!a) return;
  kl_named_attr *na = kl_arena_alloc(op->arena, (op->nattrs + 1) * sizeof *na);
  memcpy(na, op->attrs, op->nattrs * sizeof *na);
  na[op->nattrs].name = kl_intern(op->ctx, name);
  na[op->nattrs].value = a;
  op->attrs = na;
  op->nattrs++;
  qsort(op->attrs, op->nattrs, sizeof *na, cmp_named);
}
bool kl_op_attr_i64(const kl_op *op, const char *name, int64_t *out) {
  const kl_attr *a = kl_op_attr(op, name);
  if (!a || (a->kind != KL_AT_INT && a->kind != KL_AT_BOOL)) return false;
  *out = a->i;
  return true;
}
bool kl_op_attr_f64(const kl_op *op, const char *name, double *out) {
  const kl_attr *a = kl_op_attr(op, name);
  if (!a) return false;
  if (a->kind == KL_AT_FLOAT) {
    *out = a->f;
    return true;
  }
  if (a->kind == KL_AT_INT) {
    *out = (double)a->i;
    return true;
  }
  return false;
}
const char *kl_op_attr_string(const kl_op *op, const char *name) {
  const kl_attr *a = kl_op_attr(op, name);
  return (a && a->kind == KL_AT_STR) ? a->s : NULL;
}
int kl_op_attr_i64s(const kl_op *op, const char *name, int64_t *out, int max) {
  int n;
  return kl_attr_get_i64_array(kl_op_attr(op, name), max, out, &n) ? n : -1;
}

/* ---- walking ---- */
kl_walk_result kl_walk_pre(kl_op *op, kl_walk_fn fn, void *user) {
  kl_walk_result r = fn(op, user);
  if (r == KL_WALK_INTERRUPT) return r;
  if (r == KL_WALK_SKIP) return KL_WALK_ADVANCE;
  for (int i = 0; i < op->nregions; i++)
    for (kl_block *b = op->regions[i].first; b; b = b->next)
      for (kl_op *o = b->first, *next; o; o = next) {
        next = o->next;
        if (kl_walk_pre(o, fn, user) == KL_WALK_INTERRUPT) return KL_WALK_INTERRUPT;
      }
  return KL_WALK_ADVANCE;
}
kl_walk_result kl_walk_post(kl_op *op, kl_walk_fn fn, void *user) {
  for (int i = 0; i < op->nregions; i++)
    for (kl_block *b = op->regions[i].first; b; b = b->next)
      for (kl_op *o = b->first, *next; o; o = next) {
        next = o->next;
        if (kl_walk_post(o, fn, user) == KL_WALK_INTERRUPT) return KL_WALK_INTERRUPT;
      }
  return fn(op, user) == KL_WALK_INTERRUPT ? KL_WALK_INTERRUPT : KL_WALK_ADVANCE;
}
typedef struct {
  kl_op **ops;
  int n, cap;
} op_list;
static kl_walk_result collect_fn(kl_op *op, void *user) {
  op_list *l = user;
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 64;
    l->ops = kl_xrealloc(l->ops, l->cap * sizeof *l->ops);
  }
  l->ops[l->n++] = op;
  return KL_WALK_ADVANCE;
}
kl_op **kl_collect_ops(kl_op *root, int *n) {
  op_list l = { 0 };
  kl_walk_pre(root, collect_fn, &l);
  *n = l.n;
  if (!l.ops) l.ops = kl_xmalloc(sizeof *l.ops);
  return l.ops;
}

/* ---- erase ---- */
static kl_walk_result drop_fn(kl_op *op, void *user) {
  for (int i = 0; i < op->nopnds; i++) use_unlink(&op->opnds[i]);
  return KL_WALK_ADVANCE;
}
void kl_op_drop_all_uses(kl_op *op) { kl_walk_pre(op, drop_fn, NULL); }
static bool uses_outside(kl_op *root, kl_op *op) {
  for (int i = 0; i < op->nresults; i++)
    for (kl_use *u = op->results[i].first_use; u; u = u->next)
      if (!kl_op_is_ancestor(root, u->user)) return true;
  return false;
}
kl_status kl_op_erase(kl_op *op) {
  if (uses_outside(op, op))
    return kl_emit_error(op->ctx, op->loc, "cannot erase '%s': its results still have uses", op->name);
  kl_op_drop_all_uses(op);
  kl_op_unlink(op);
  return KL_OK;
}

/* ---- clone ---- */
void kl_value_map_set(kl_value_map *m, kl_value *from, kl_value *to) { kl_ptrmap_put(&m->m, from, to); }
kl_value *kl_value_map_get(const kl_value_map *m, kl_value *v) {
  kl_hm_entry *e = m ? kl_ptrmap_find(&m->m, v) : NULL;
  return e ? e->val : v;
}
void kl_value_map_free(kl_value_map *m) { kl_hashmap_free(&m->m); }

void kl_region_clone_into(kl_ctx *ctx, kl_region *src, kl_region *dst, kl_value_map *map) {
  /* Blocks first (so that args are mapped), then ops. */
  kl_block *first_new = NULL;
  for (kl_block *b = src->first; b; b = b->next) {
    kl_block *nb = kl_block_create(ctx);
    for (int i = 0; i < b->nargs; i++) kl_value_map_set(map, b->args[i], kl_block_add_arg(ctx, nb, b->args[i]->type));
    kl_region_push_block(dst, nb);
    if (!first_new) first_new = nb;
  }
  kl_block *nb = first_new;
  for (kl_block *b = src->first; b; b = b->next, nb = nb->next)
    for (kl_op *o = b->first; o; o = o->next) kl_block_push_op(nb, kl_op_clone(o, map));
}
kl_op *kl_op_clone(kl_op *op, kl_value_map *map) {
  kl_value_map local = { 0 };
  if (!map) map = &local;
  kl_value **opnds = kl_xmalloc((op->nopnds + 1) * sizeof *opnds);
  const kl_type **types = kl_xmalloc((op->nresults + 1) * sizeof *types);
  for (int i = 0; i < op->nopnds; i++) opnds[i] = kl_value_map_get(map, op->opnds[i].value);
  for (int i = 0; i < op->nresults; i++) types[i] = op->results[i].type;
  kl_op *c = kl_op_create(op->ctx, op->name, op->loc, op->nopnds, opnds, op->nresults, types, op->nattrs, op->attrs,
                          op->nregions);
  free(opnds);
  free(types);
  for (int i = 0; i < op->nresults; i++) {
    c->results[i].name_hint = op->results[i].name_hint;
    kl_value_map_set(map, &op->results[i], &c->results[i]);
  }
  for (int i = 0; i < op->nregions; i++) kl_region_clone_into(op->ctx, &op->regions[i], &c->regions[i], map);
  if (map == &local) kl_value_map_free(&local);
  return c;
}

/* ---- traits, symbols ---- */
bool kl_op_legal_at(const kl_op *op, unsigned level) {
  if (op->def) return !op->def->levels || (op->def->levels & level);
  return strncmp(op->name, "rock.", 5) && strncmp(op->name, "graph.", 6);
}
bool kl_op_is_constant(const kl_op *op) { return kl_op_has_trait(op, KL_TRAIT_CONSTANT) && kl_op_attr(op, "value"); }
const kl_attr *kl_value_constant(const kl_value *v) {
  return (v->def && kl_op_is_constant(v->def)) ? kl_op_attr(v->def, "value") : NULL;
}
kl_op *kl_module_lookup(kl_op *module, const char *sym) {
  kl_block *b = kl_module_body(module);
  for (kl_op *o = b ? b->first : NULL; o; o = o->next) {
    const char *n = kl_op_attr_string(o, "sym_name");
    if (n && strcmp(n, sym) == 0) return o;
  }
  return NULL;
}
