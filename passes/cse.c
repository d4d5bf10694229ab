/* cse.c — the `cse` pass: common-subexpression elimination.
 * An op is a candidate when it is pure (KL_TRAIT_PURE), has results, and has no
 * regions (ops with regions are never merged, even when their regions are equal).
 * Two candidates are equal when they have the same name, the same operands (for
 * commutative binary ops in either order), the same attributes and the same result
 * types. The later one is replaced by the earlier one when the earlier one is visible:
 * defined before it in the same block, or in a block that encloses it (values of
 * enclosing blocks are visible in nested regions), but never across an op with the
 * ISOLATED trait, and never from another block of the same region (the verifier's
 * dominance rule). */
#include "passes/passes.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  kl_op *op;
  int next;
  size_t bucket;
} node;
typedef struct {
  int *buckets;
  size_t mask; /* bucket -> newest node index or -1 */
  node *nodes;
  int n, cap; /* nodes in insertion order; scopes pop from the end */
  int floor;  /* nodes below this index belong outside an isolated op */
  int merged;
} table;

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}
static uint64_t hp(const void *p) { return mix((uintptr_t)p); }

static bool candidate(const kl_op *op) {
  return kl_op_has_trait(op, KL_TRAIT_PURE) && !kl_op_has_trait(op, KL_TRAIT_TERMINATOR) && op->nregions == 0 &&
      op->nresults > 0;
}
static bool swappable(const kl_op *op) { return op->nopnds == 2 && kl_op_has_trait(op, KL_TRAIT_COMMUTATIVE); }

static uint64_t op_hash(const kl_op *op) {
  uint64_t h = hp(op->name) ^ mix((uint64_t)op->nopnds << 32 | (uint32_t)op->nresults);
  if (swappable(op))
    h ^= hp(op->opnds[0].value) + hp(op->opnds[1].value); /* order-independent */
  else
    for (int i = 0; i < op->nopnds; i++) h = mix(h ^ hp(op->opnds[i].value));
  for (int i = 0; i < op->nattrs; i++) h = mix(h ^ hp(op->attrs[i].name) ^ (hp(op->attrs[i].value) << 1));
  for (int i = 0; i < op->nresults; i++) h = mix(h ^ hp(op->results[i].type));
  return h;
}
static bool op_equal(const kl_op *a, const kl_op *b) {
  if (a->name != b->name || a->nopnds != b->nopnds || a->nresults != b->nresults || a->nattrs != b->nattrs)
    return false;
  bool same = true;
  for (int i = 0; i < a->nopnds && same; i++) same = a->opnds[i].value == b->opnds[i].value;
  if (!same && !(swappable(a) && a->opnds[0].value == b->opnds[1].value && a->opnds[1].value == b->opnds[0].value))
    return false;
  for (int i = 0; i < a->nattrs; i++) /* names are interned, attributes interned, both sorted */
    if (a->attrs[i].name != b->attrs[i].name || a->attrs[i].value != b->attrs[i].value) return false;
  for (int i = 0; i < a->nresults; i++)
    if (a->results[i].type != b->results[i].type) return false;
  return true;
}

static kl_op *lookup(table *t, kl_op *op, size_t *bucket) {
  *bucket = op_hash(op) & t->mask;
  for (int i = t->buckets[*bucket]; i >= 0 && i >= t->floor; i = t->nodes[i].next)
    if (op_equal(t->nodes[i].op, op)) return t->nodes[i].op;
  return NULL;
}
static void insert(table *t, kl_op *op, size_t bucket) {
  if (t->n == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 256;
    t->nodes = kl_xrealloc(t->nodes, t->cap * sizeof *t->nodes);
  }
  t->nodes[t->n] = (node){ op, t->buckets[bucket], bucket };
  t->buckets[bucket] = t->n++;
}
static void pop_to(table *t, int mark) { /* newest nodes are at their bucket heads */
  while (t->n > mark) {
    node *nd = &t->nodes[--t->n];
    t->buckets[nd->bucket] = nd->next;
  }
}

static void cse_region(table *t, kl_region *r);
static void cse_block(table *t, kl_block *b) {
  int mark = t->n;
  for (kl_op *op = b->first, *next; op; op = next) {
    next = op->next;
    if (candidate(op)) {
      size_t bucket;
      kl_op *prev = lookup(t, op, &bucket);
      if (prev) {
        for (int i = 0; i < op->nresults; i++) kl_value_replace_all_uses(&op->results[i], &prev->results[i]);
        kl_op_erase(op);
        t->merged++;
        continue;
      }
      insert(t, op, bucket);
    }
    if (!op->nregions) continue;
    int saved = t->floor;
    if (kl_op_has_trait(op, KL_TRAIT_ISOLATED)) t->floor = t->n;
    for (int i = 0; i < op->nregions; i++) cse_region(t, &op->regions[i]);
    t->floor = saved;
  }
  pop_to(t, mark);
}
static void cse_region(table *t, kl_region *r) {
  for (kl_block *b = r->first; b; b = b->next) cse_block(t, b);
}

kl_status kl_cse(kl_op *root) {
  int nops;
  free(kl_collect_ops(root, &nops));
  size_t nb = 64;
  while (nb < (size_t)nops * 2) nb *= 2;
  table t = { .buckets = kl_xmalloc(nb * sizeof(int)), .mask = nb - 1 };
  for (size_t i = 0; i < nb; i++) t.buckets[i] = -1;
  for (int i = 0; i < root->nregions; i++) cse_region(&t, &root->regions[i]);
  free(t.buckets);
  free(t.nodes);
  return KL_OK;
}

static kl_status run_cse(kl_op *root, const kl_pass_options *o, void *user) { return kl_cse(root); }

void kl__register_cse(kl_ctx *ctx) {
  kl_pass_info info = { "cse", "common-subexpression elimination of pure ops, scoped by dominance", NULL, 0, run_cse,
                        NULL };
  kl_register_pass(ctx, &info);
}
