/* tuning_space.c — kl_tuning_space (tuning_space.h): the GEMMs of a graph after the
 * front passes, and the intersection of their perf-config spaces. */
#include "driver/tuning_space.h"
#include "core/attr.h"
#include "core/dialect_graph.h"
#include "core/diag.h"
#include "core/pass.h"
#include "core/target.h"
#include "core/type.h"
#include "passes/gemm_shape.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FRONT "graph-partition,graph-to-rock,rock-regularize,rock-conv-to-gemm"

typedef struct gemms {
  int n;
  kl_op *op[64];
} gemms;

static kl_walk_result find_gemm(kl_op *op, void *user) {
  gemms *g = user;
  if (!strcmp(op->name, "rock.gemm") && g->n < 64) g->op[g->n++] = op;
  return KL_WALK_ADVANCE;
}

static kl_status problem_of(kl_op *op, const kl_target *t, kl_perf_problem *p, char *err, size_t errlen) {
  const kl_type *ta = op->nopnds == 3 ? op->opnds[0].value->type : NULL;
  const kl_type *tb = op->nopnds == 3 ? op->opnds[1].value->type : NULL;
  if (!ta || ta->kind != KL_TY_BUFFER || tb->kind != KL_TY_BUFFER || ta->rank != 3 || tb->rank != 3) {
    snprintf(err, errlen, "tuning space: a rock.gemm without rank-3 buffer operands");
    return KL_ERR;
  }
  memset(p, 0, sizeof *p);
  p->t = t;
  p->g = ta->shape[0], p->k = ta->shape[1], p->m = ta->shape[2], p->n = tb->shape[2];
  int ea = (kl_type_bits(ta->elem) + 7) / 8, eb = (kl_type_bits(tb->elem) + 7) / 8;
  p->elem_bytes = ea > eb ? ea : eb;
  p->accel = ta->elem == tb->elem ? kl_accel_desc_for(t, ta->elem) : NULL;
  p->amd_k_loop = kl_gemm_amd_k_loop(op, t);
  return KL_OK;
}

kl_status kl_tuning_space(kl_op *graph, const char *target, const char *level, kl_perf_space *out, int *ngemms,
                          char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  *ngemms = 0;
  kl_perf_level lv;
  if (!kl_perf_level_parse(level ? level : "quick", &lv)) {
    snprintf(err, errlen, "tuning space: level must be \"quick\", \"full\" or \"exhaustive\", got \"%s\"", level);
    return KL_ERR;
  }
  const kl_target *t = kl_target_lookup(target ? target : "host");
  if (!t) {
    snprintf(err, errlen, "tuning space: unknown target '%s'", target);
    return KL_ERR;
  }
  kl_ctx *ctx = graph->ctx;
  kl_op *module = NULL, *root = graph;
  if (kl_is_graph(graph)) { /* a graph: its GEMMs after the front passes, on a copy */
    module = kl_module_create(ctx, graph->loc);
    kl_op_set_attr(module, "target", kl_attr_str(ctx, t->name));
    kl_block_push_op(kl_module_body(module), kl_op_clone(graph, NULL));
    kl_pass_manager *pm = kl_pass_manager_create(ctx);
    kl_status st = kl_pass_manager_add_pipeline(pm, FRONT);
    if (st == KL_OK) st = kl_pass_manager_run(pm, module);
    kl_pass_manager_destroy(pm);
    if (st != KL_OK) {
      char *d = kl_diag_take(ctx);
      snprintf(err, errlen, "tuning space: %s", *d ? d : "the front passes failed");
      free(d);
      kl_op_erase(module);
      return KL_ERR;
    }
    root = module;
  }
  gemms gs = { 0 };
  kl_walk_pre(root, find_gemm, &gs);
  kl_perf_problem pr[64];
  for (int i = 0; i < gs.n; i++)
    if (problem_of(gs.op[i], t, &pr[i], err, errlen) != KL_OK) {
      if (module) kl_op_erase(module);
      return KL_ERR;
    }
  if (module) kl_op_erase(module);
  *ngemms = gs.n;
  if (!gs.n) return KL_OK;
  kl_perf_space_build(&pr[0], lv, out);
  for (int i = 1; i < gs.n; i++)
    for (int j = 0; j < out->n; j++) {
      kl_perf_candidate *c = &out->c[j];
      char *why = c->reason ? NULL : kl_perf_check(&pr[i], c->config);
      if (!why) continue;
      char buf[1024];
      snprintf(buf, sizeof buf, "GEMM %d (G=%lld M=%lld N=%lld K=%lld): %s", i + 1, (long long)pr[i].g,
               (long long)pr[i].m, (long long)pr[i].n, (long long)pr[i].k, why);
      free(why);
      c->reason = strdup(buf);
    }
  if (gs.n > 1)
    for (int j = 0; j < out->n; j++)
      if (out->c[j].reason && strncmp(out->c[j].reason, "GEMM ", 5)) {
        char buf[1024];
        snprintf(buf, sizeof buf, "GEMM 1 (G=%lld M=%lld N=%lld K=%lld): %s", (long long)pr[0].g, (long long)pr[0].m,
                 (long long)pr[0].n, (long long)pr[0].k, out->c[j].reason);
        free(out->c[j].reason);
        out->c[j].reason = strdup(buf);
      }
  return KL_OK;
}
