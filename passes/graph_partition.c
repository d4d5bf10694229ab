/* graph_partition.c — the `graph-partition` pass: groups the ops of every graph
 * function into kernels and replaces each group by a graph.launch of a new function.
 *
 * Grouping rules (deterministic; every graph-dialect op is handled):
 *  - An anchor (graph.conv, graph.dot) starts a "gemm" group. Its epilogue is the chain
 *    of element-wise ops that consume the anchor result: the chain goes on from value v
 *    while all uses of v (seen through view ops) are by ONE not yet grouped element-wise
 *    op U, reached either directly or through a single path of one-to-one views
 *    (transpose, reshape), and U does not broadcast v (v has U's result shape). A chain
 *    may also end in such views feeding the graph's return. The group's result is the
 *    chain's last value; an intermediate used anywhere else ends the chain there. An
 *    anchor with an empty operand (K = 0: its result is a fill) has no chain.
 *    Element-wise ops that only feed the group (side inputs, e.g. a sigmoid of a bias)
 *    join it as well, except those the anchor reads (its operands are kernel inputs).
 *  - Remaining element-wise ops form "elementwise" groups: a root (an element-wise op
 *    whose result is needed outside) plus every element-wise producer whose uses are all
 *    inside the group (looking through views).
 *  - graph.reduce_* -> "reduce", graph.softmax -> "softmax", graph.concat ->
 *    "elementwise" (one group each).
 *  - View ops (transpose, reshape, broadcast, slice) belong to no group of their own:
 *    each group that reads through one gets a copy. A graph output that is a view
 *    becomes an "elementwise" group rooted at the view (absorbing element-wise producers
 *    as above); an output that is a param or constant itself becomes a copy group.
 *  - graph.param, graph.constant and existing graph.launch ops stay in the graph.
 * Groups are numbered in the order of their result's definition, which is a topological
 * order of the launches. Unused computations are removed first.
 * Output per group: func.func @<graph>_k<i> {kernel_group, kind = "..."} whose entry
 * block arguments are the group's inputs (order of first use) and whose func.return
 * returns the group's result; in the graph the group becomes
 * %r = "graph.launch"(inputs...) {callee = @<graph>_k<i>}. */
#include "core/dialect_graph.h"
#include "core/pass.h"
#include "passes/pass_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_GEMM, K_EW, K_REDUCE, K_SOFTMAX };
static const char *const kind_names[] = { "gemm", "elementwise", "reduce", "softmax" };

typedef struct group {
  int kind;
  kl_value *root;   /* the group's result */
  bool return_only; /* replace only the func.return uses of root (view / copy roots) */
  int pos, seq;     /* ordering key */
  unsigned char *member;
} group;

typedef struct part {
  kl_ctx *ctx;
  int nops;
  kl_op **ops;           /* block order; op->scratch = index */
  int *assigned;         /* group index (creation order) of non-view ops, -1 */
  int *chain_root_of;    /* at the position of a chain root: the anchor's position, else -1 */
  kl_value **chain_root; /* per anchor position: its group's root value */
  bool *chain_view_root;
  int *chain_owner; /* per position: anchor position owning this chain op, -1 */
  unsigned char *cand;
  int ngroups, capgroups;
  group *groups;
} part;

static bool is_ew(const kl_op *op) { return kl_op_has_trait(op, KL_TRAIT_ELEMENTWISE); }
static bool is_view(const kl_op *op) { return kl_pu_is_graph_view(op); }
static bool is_plan(const kl_op *op) { return kl_op_has_trait(op, KL_TRAIT_HOST_PLAN); }
/* The kernel kind of an op that gets a kernel of its own (kl_opdef.kernel), else -1. A
 * concat is an element-wise kernel (graph-to-rock sees the concat at its root). */
static int own_kernel(const kl_op *op) {
  switch (kl_op_kernel_kind(op)) {
    case KL_KERNEL_REDUCE: return K_REDUCE;
    case KL_KERNEL_SOFTMAX: return K_SOFTMAX;
    case KL_KERNEL_CONCAT: return K_EW;
    default: return -1;
  }
}
static bool is_anchor(const kl_op *op) { return kl_op_has_trait(op, KL_TRAIT_GEMM_ANCHOR); }
static bool same_shape(const kl_type *a, const kl_type *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

/* ---- effective uses (through views) ---- */
typedef struct eff_use {
  kl_op *user;
  int index;
  bool has_path, invertible;
  kl_value *top;
} eff_use;
#define MAX_EFF 32
/* Returns the number of effective uses (may exceed MAX_EFF: then only MAX_EFF stored). */
static int eff_uses(kl_value *v, bool has_path, bool inv, eff_use *out, int n) {
  for (kl_use *u = v->first_use; u; u = u->next) {
    kl_op *U = u->user;
    if (is_view(U)) {
      n = eff_uses(kl_op_result(U, 0), true, inv && kl_op_has_trait(U, KL_TRAIT_INVERTIBLE_VIEW), out, n);
      continue;
    }
    if (n < MAX_EFF) out[n] = (eff_use){ U, u->index, has_path, inv, v };
    n++;
  }
  return n;
}

/* Pass 1: the epilogue chain of anchor a. */
static void build_chain(part *p, kl_op *a) {
  int apos = (int)a->scratch;
  kl_value *v = kl_op_result(a, 0);
  bool view_root = false;
  /* an empty operand: the anchor fills its result (graph-to-rock), no epilogue to fuse */
  bool empty = !kl_pu_nonempty(a->opnds[0].value->type) || !kl_pu_nonempty(a->opnds[1].value->type);
  while (!empty) {
    eff_use e[MAX_EFF];
    int n = eff_uses(v, false, true, e, 0);
    if (n == 0 || n > MAX_EFF) break;
    kl_op *U = e[0].user;
    bool ok = true;
    for (int i = 1; i < n; i++) ok = ok && e[i].user == U && !e[i].has_path && !e[0].has_path;
    if (!ok) break;
    if (!strcmp(U->name, "func.return")) {
      if (n == 1 && e[0].has_path && e[0].invertible) {
        v = e[0].top;
        view_root = true;
      }
      break;
    }
    if (!is_ew(U) || p->chain_owner[U->scratch] >= 0) break;
    if (e[0].has_path && !e[0].invertible) break;
    for (int i = 0; i < n; i++) ok = ok && same_shape(U->opnds[e[i].index].value->type, U->results[0].type);
    if (!ok) break;
    p->chain_owner[U->scratch] = apos;
    v = kl_op_result(U, 0);
  }
  p->chain_root[apos] = v;
  p->chain_view_root[apos] = view_root;
  p->chain_root_of[v->def->scratch] = apos;
}

/* ---- groups ---- */
static group *new_group(part *p, int kind, kl_value *root, bool return_only, int pos) {
  if (p->ngroups == p->capgroups) {
    p->capgroups = p->capgroups ? 2 * p->capgroups : 8;
    p->groups = kl_xrealloc(p->groups, (size_t)p->capgroups * sizeof *p->groups);
  }
  group *g = &p->groups[p->ngroups];
  *g = (group){ kind, root, return_only, pos, p->ngroups, kl_xcalloc((size_t)p->nops + 1, 1) };
  p->ngroups++;
  return g;
}

/* Is every use of v (looking through views) by a member of g, or by the group's root
 * view when only the graph's return reads that view (other readers of a root view read
 * through it, so they need what is below it)? */
static bool uses_inside(group *g, kl_value *v) {
  for (kl_use *u = v->first_use; u; u = u->next) {
    kl_op *U = u->user;
    if (is_view(U)) {
      kl_value *r = kl_op_result(U, 0);
      if (r == g->root) {
        for (kl_use *ru = r->first_use; ru; ru = ru->next)
          if (strcmp(ru->user->name, "func.return")) return false;
        continue;
      }
      if (!uses_inside(g, r)) return false;
      continue;
    }
    if (!g->member[U->scratch]) return false;
  }
  return true;
}

/* Absorbs the views above operand w into g; marks an element-wise producer below them
 * as a candidate when allow_ew. */
static void absorb_operand(part *p, group *g, kl_value *w, bool allow_ew) {
  while (w->def && is_view(w->def)) {
    g->member[w->def->scratch] = 1;
    w = w->def->opnds[0].value;
  }
  if (allow_ew && w->def && is_ew(w->def) && p->assigned[w->def->scratch] < 0) p->cand[w->def->scratch] = 1;
}
static void absorb_operands(part *p, group *g, kl_op *op, bool allow_ew) {
  for (int i = 0; i < op->nopnds; i++) absorb_operand(p, g, op->opnds[i].value, allow_ew);
}

/* Does an anchor (conv, dot) read v (looking through views)? Its operands must stay
 * kernel inputs, so such a producer never joins the anchor's group as a side input. */
static bool feeds_anchor(kl_value *v) {
  for (kl_use *u = v->first_use; u; u = u->next) {
    kl_op *U = u->user;
    if (is_view(U) ? feeds_anchor(kl_op_result(U, 0)) : is_anchor(U)) return true;
  }
  return false;
}

/* Grows g backwards from position `from` (exclusive) over element-wise candidates. */
static void grow(part *p, group *g, int from) {
  int gi = (int)(g - p->groups);
  for (int pos = from - 1; pos >= 0; pos--) {
    if (!p->cand[pos]) continue;
    p->cand[pos] = 0;
    kl_op *op = p->ops[pos];
    if (p->assigned[pos] >= 0 || p->chain_owner[pos] >= 0 || !uses_inside(g, kl_op_result(op, 0)) ||
        (g->kind == K_GEMM && feeds_anchor(kl_op_result(op, 0))))
      continue;
    g->member[pos] = 1;
    p->assigned[pos] = gi;
    absorb_operands(p, g, op, true);
  }
  memset(p->cand, 0, (size_t)p->nops);
}

static void build_anchor_group(part *p, int apos) {
  kl_op *a = p->ops[apos];
  kl_value *root = p->chain_root[apos];
  group *g = new_group(p, K_GEMM, root, p->chain_view_root[apos], (int)root->def->scratch);
  int gi = (int)(g - p->groups);
  g->member[apos] = 1;
  p->assigned[apos] = gi;
  absorb_operands(p, g, a, false);
  for (int pos = apos + 1; pos < p->nops; pos++)
    if (p->chain_owner[pos] == apos) {
      g->member[pos] = 1;
      p->assigned[pos] = gi;
    }
  /* views on the chain (between chain ops, or the root views) */
  if (p->chain_view_root[apos]) absorb_operand(p, g, root, false);
  for (int pos = apos + 1; pos < p->nops; pos++)
    if (p->chain_owner[pos] == apos) absorb_operands(p, g, p->ops[pos], true);
  grow(p, g, (int)root->def->scratch);
}

static int cmp_group(const void *x, const void *y) {
  const group *a = *(group *const *)x, *b = *(group *const *)y;
  if (a->pos != b->pos) return a->pos < b->pos ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Erases unused computations (not params, constants, launches or the return). */
static void remove_dead(kl_block *body) {
  for (kl_op *op = body->last, *prev; op; op = prev) {
    prev = op->prev;
    if (is_plan(op) || kl_op_has_trait(op, KL_TRAIT_TERMINATOR) || !kl_op_results_unused(op)) continue;
    kl_op_erase(op);
  }
}

static const char *unique_name(kl_op *module, const char *base, int i, char *buf, size_t n) {
  snprintf(buf, n, "%s_k%d", base, i);
  for (int k = 1; kl_module_lookup(module, buf); k++) snprintf(buf, n, "%s_k%d_%d", base, i, k);
  return buf;
}

/* Extracts group g into a kernel function inserted after *after; replaces it in the
 * graph by a graph.launch. */
static void extract(part *p, kl_op *module, kl_op *graph, group *g, int index, kl_op **after, kl_op *ret) {
  kl_ctx *ctx = p->ctx;
  /* leaves, in order of first use */
  int nleaves = 0, capl = 8;
  kl_value **leaves = kl_xmalloc((size_t)capl * sizeof *leaves);
  bool any_member = false;
  for (int pos = 0; pos < p->nops; pos++) {
    if (!g->member[pos]) continue;
    any_member = true;
    kl_op *op = p->ops[pos];
    for (int i = 0; i < op->nopnds; i++) {
      kl_value *w = op->opnds[i].value;
      if (w->def && w->def->block == op->block && w->def->scratch >= 0 && w->def->scratch < p->nops &&
          p->ops[w->def->scratch] == w->def && g->member[w->def->scratch])
        continue;
      bool seen = false;
      for (int j = 0; j < nleaves && !seen; j++) seen = leaves[j] == w;
      if (seen) continue;
      if (nleaves == capl) leaves = kl_xrealloc(leaves, (size_t)(capl *= 2) * sizeof *leaves);
      leaves[nleaves++] = w;
    }
  }
  if (!any_member) leaves[nleaves++] = g->root; /* a copy of a param / constant */

  const char *gname = kl_op_attr_string(graph, "sym_name");
  char name[256];
  unique_name(module, gname ? gname : "graph", index, name, sizeof name);
  kl_named_attr fa[] = { { "kernel_group", kl_attr_unit(ctx) },
                         { "kind", kl_attr_str(ctx, kind_names[g->kind]) },
                         { "sym_name", kl_attr_str(ctx, name) } };
  kl_loc loc = g->root->def ? g->root->def->loc : graph->loc;
  kl_op *fn = kl_op_create(ctx, "func.func", loc, 0, NULL, 0, NULL, 3, fa, 1);
  kl_block *body = kl_block_create(ctx);
  kl_region_push_block(&fn->regions[0], body);
  kl_value_map map = { 0 };
  for (int j = 0; j < nleaves; j++) kl_value_map_set(&map, leaves[j], kl_block_add_arg(ctx, body, leaves[j]->type));
  for (int pos = 0; pos < p->nops; pos++)
    if (g->member[pos]) kl_block_push_op(body, kl_op_clone(p->ops[pos], &map));
  kl_value *r = kl_value_map_get(&map, g->root);
  kl_block_push_op(body, kl_op_create(ctx, "func.return", loc, 1, &r, 0, NULL, 0, NULL, 0));
  kl_value_map_free(&map);
  kl_op_insert_after(*after, fn);
  *after = fn;

  /* the launch */
  kl_named_attr la = { "callee", kl_attr_symref(ctx, name) };
  kl_op *launch = kl_op_create(ctx, "graph.launch", loc, nleaves, leaves, 1, &g->root->type, 1, &la, 0);
  kl_op_insert_before(any_member ? g->root->def : ret, launch);
  kl_value *lr = kl_op_result(launch, 0);
  lr->name_hint = g->root->name_hint;
  if (g->return_only) {
    for (int i = 0; i < ret->nopnds; i++)
      if (ret->opnds[i].value == g->root) kl_op_set_operand(ret, i, lr);
  } else {
    kl_value_replace_all_uses(g->root, lr);
  }
  free(leaves);
}

static kl_status partition_graph(kl_op *module, kl_op *graph) {
  kl_ctx *ctx = graph->ctx;
  kl_block *body = kl_graph_body(graph);
  kl_op *ret = kl_graph_return(graph);
  if (!ret) return kl_emit_error(ctx, graph->loc, "graph-partition: graph has no func.return");
  remove_dead(body);
  part P = { .ctx = ctx };
  part *p = &P;
  for (kl_op *op = body->first; op; op = op->next) p->nops++;
  p->ops = kl_xmalloc((size_t)p->nops * sizeof *p->ops);
  p->assigned = kl_xmalloc((size_t)p->nops * sizeof(int));
  p->chain_root_of = kl_xmalloc((size_t)p->nops * sizeof(int));
  p->chain_owner = kl_xmalloc((size_t)p->nops * sizeof(int));
  p->chain_root = kl_xcalloc((size_t)p->nops, sizeof *p->chain_root);
  p->chain_view_root = kl_xcalloc((size_t)p->nops, sizeof(bool));
  p->cand = kl_xcalloc((size_t)p->nops + 1, 1);
  int i = 0;
  for (kl_op *op = body->first; op; op = op->next, i++) {
    p->ops[i] = op;
    op->scratch = i;
    p->assigned[i] = p->chain_root_of[i] = p->chain_owner[i] = -1;
  }
  kl_status st = KL_OK;
  /* pass 1: epilogue chains */
  for (i = 0; i < p->nops; i++)
    if (is_anchor(p->ops[i])) build_chain(p, p->ops[i]);
  /* pass 2: groups, last op first */
  for (int pos = p->nops - 1; pos >= 0 && st == KL_OK; pos--) {
    kl_op *op = p->ops[pos];
    if (p->chain_root_of[pos] >= 0) {
      build_anchor_group(p, p->chain_root_of[pos]);
      continue;
    }
    if (is_plan(op) || op == ret) continue;
    if (p->assigned[pos] >= 0 || p->chain_owner[pos] >= 0) continue;
    if (is_ew(op)) {
      group *g = new_group(p, K_EW, kl_op_result(op, 0), false, pos);
      g->member[pos] = 1;
      p->assigned[pos] = (int)(g - p->groups);
      absorb_operands(p, g, op, true);
      grow(p, g, pos);
    } else if (is_view(op)) {
      bool returned = false;
      for (kl_use *u = op->results[0].first_use; u; u = u->next) returned = returned || u->user == ret;
      if (!returned) continue;
      group *g = new_group(p, K_EW, kl_op_result(op, 0), true, pos);
      g->member[pos] = 1;
      absorb_operands(p, g, op, true);
      grow(p, g, pos);
    } else if (own_kernel(op) >= 0) {
      int kind = own_kernel(op);
      group *g = new_group(p, kind, kl_op_result(op, 0), false, pos);
      g->member[pos] = 1;
      p->assigned[pos] = (int)(g - p->groups);
      absorb_operands(p, g, op, false);
    } else if (is_anchor(op)) {
      continue; /* grouped at its chain root */
    } else {
      st = kl_emit_error(ctx, op->loc, "graph-partition: cannot place op '%s' in a kernel", op->name);
    }
  }
  /* outputs that are params / constants (or block arguments) themselves: copies */
  for (i = 0; i < ret->nopnds && st == KL_OK; i++) {
    kl_value *v = ret->opnds[i].value;
    bool copy = !v->def || kl_op_has_trait(v->def, KL_TRAIT_PLAN_INPUT);
    for (int j = 0; j < i && copy; j++) copy = ret->opnds[j].value != v;
    if (copy) new_group(p, K_EW, v, true, p->nops);
  }
  if (st == KL_OK && p->ngroups) {
    group **order = kl_xmalloc((size_t)p->ngroups * sizeof *order);
    for (i = 0; i < p->ngroups; i++) order[i] = &p->groups[i];
    qsort(order, (size_t)p->ngroups, sizeof *order, cmp_group);
    kl_op *after = graph;
    for (i = 0; i < p->ngroups; i++) extract(p, module, graph, order[i], i, &after, ret);
    free(order);
    /* everything but params, constants, launches and the return goes */
    for (i = p->nops - 1; i >= 0; i--) {
      kl_op *op = p->ops[i];
      if (is_plan(op) || op == ret) continue;
      kl_op_drop_all_uses(op);
    }
    for (i = p->nops - 1; i >= 0; i--) {
      kl_op *op = p->ops[i];
      if (is_plan(op) || op == ret) continue;
      if (kl_op_erase(op) != KL_OK) st = KL_ERR;
    }
  }
  for (i = 0; i < p->ngroups; i++) free(p->groups[i].member);
  free(p->groups);
  free(p->ops);
  free(p->assigned);
  free(p->chain_root_of);
  free(p->chain_owner);
  free(p->chain_root);
  free(p->chain_view_root);
  free(p->cand);
  return st;
}

kl_status kl_graph_partition(kl_op *module) {
  kl_block *mb = kl_module_body(module);
  if (!mb) return KL_OK;
  int n = 0;
  for (kl_op *op = mb->first; op; op = op->next)
    if (kl_is_graph(op)) n++;
  kl_op **graphs = kl_xmalloc((size_t)(n ? n : 1) * sizeof *graphs);
  n = 0;
  for (kl_op *op = mb->first; op; op = op->next)
    if (kl_is_graph(op)) graphs[n++] = op;
  kl_status st = KL_OK;
  for (int i = 0; i < n && st == KL_OK; i++) st = partition_graph(module, graphs[i]);
  free(graphs);
  return st;
}

static kl_status run_partition(kl_op *module, const kl_pass_options *o, void *user) {
  return kl_graph_partition(module);
}

void kl__register_graph_partition(kl_ctx *ctx);
void kl__register_graph_partition(kl_ctx *ctx) {
  kl_pass_info info = {
    "graph-partition",
    "groups every graph's ops into kernels (conv/dot + element-wise epilogue, element-wise, reduce, "
    "softmax, concat, copies) and replaces each group by a graph.launch of a kernel_group function",
    NULL,
    0,
    run_partition,
    NULL
  };
  kl_register_pass(ctx, &info);
}
