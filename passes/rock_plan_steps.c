/* rock_plan_steps.c — the `rock-plan-steps` pass: marks kernels that the host plan runs
 * as a host step instead of a launch (driver/plan.c reads the marks; plan.h has the
 * contract of the attributes).
 * Contract (kernel level, before rock-lower-loops; a kernel func not launched by the
 * module's graph func, or not matching, is left unchanged, with the reason under
 * KILN_DEBUG=rewrite):
 *  - A kernel whose whole body is one `rock.fill` of an output argument N (an argument at
 *    or after the launch's input count) with value V, then func.return, gets
 *      prefill = {"N" = V}, plan_step = "prefill"
 *    (the plan fills that slot instead of launching the kernel; the body stays, so a
 *    launch would do the same).
 *  - A kernel of two arguments of one buffer type (input 0, output 1) whose whole body is
 *    one `rock.elementwise(%arg0, %arg1)` yielding its block argument unchanged, then
 *    func.return, gets plan_step = "copy" (the plan copies slot to slot).
 * Runs once over the module (the walk driver); all changes go through the rewriter. */
#include "core/pass.h"
#include "core/rewrite.h"
#include "core/dialect_graph.h"
#include "core/dialect_rock.h"
#include "passes/passes.h"
#include <stdio.h>
#include <string.h>

/* The input count of the first launch of kernel `sym` in the module's graph func; -1 if
 * no launch names it. */
static int launch_inputs(kl_op *kernel, const char *sym) {
  kl_block *mb = kernel->block;
  for (kl_op *g = mb ? mb->first : NULL; g; g = g->next) {
    if (!kl_is_graph(g)) continue;
    for (kl_op *o = kl_graph_body(g)->first; o; o = o->next) {
      const kl_attr *c = kl_graph_is_launch(o) ? kl_op_attr(o, "callee") : NULL;
      if (c && c->s && !strcmp(c->s, sym)) return o->nopnds;
    }
  }
  return -1;
}

/* %arg of the kernel body `body` that v is, or -1. */
static int arg_index(kl_block *body, kl_value *v) { return v->def == NULL && v->block == body ? v->index : -1; }

static bool is_copy_body(kl_op *ew, kl_block *body) {
  if (ew->nopnds != 2 || ew->nregions != 1 || body->nargs != 2) return false;
  if (arg_index(body, ew->opnds[0].value) != 0 || arg_index(body, ew->opnds[1].value) != 1) return false;
  if (body->args[0]->type != body->args[1]->type) return false;
  kl_block *rb = ew->regions[0].first;
  if (!rb || rb->next || rb->nargs != 1 || !rb->first || rb->first != rb->last) return false;
  kl_op *y = rb->first;
  return !strcmp(y->name, "rock.yield") && y->nopnds == 1 && y->opnds[0].value == rb->args[0];
}

static bool mark_kernel(const kl_pattern *pat, kl_op *f, kl_rewriter *rw) {
  (void)pat;
  if (!kl_is_kernel(f) || kl_op_attr(f, "plan_step")) return false;
  const char *sym = kl_op_attr_string(f, "sym_name");
  kl_block *body = f->nregions ? f->regions[0].first : NULL;
  if (!sym || !body) return false;
  kl_op *first = body->first;
  if (!first || !first->next || first->next != body->last || strcmp(body->last->name, "func.return"))
    return kl_rewriter_notify_no_match(rw, "@%s: the body is not one op and func.return", sym);
  int nin = launch_inputs(f, sym);
  if (nin < 0) return kl_rewriter_notify_no_match(rw, "@%s: no launch of it in the graph func", sym);
  kl_ctx *ctx = kl_rewriter_ctx(rw);
  if (!strcmp(first->name, "rock.fill")) {
    const kl_attr *v = kl_op_attr(first, "value");
    int a = first->nopnds == 1 ? arg_index(body, first->opnds[0].value) : -1;
    if (!v || (v->kind != KL_AT_FLOAT && v->kind != KL_AT_INT))
      return kl_rewriter_notify_no_match(rw, "@%s: the fill has no scalar value", sym);
    if (a < nin) return kl_rewriter_notify_no_match(rw, "@%s: the fill is not of an output argument", sym);
    char key[16];
    snprintf(key, sizeof key, "%d", a);
    kl_named_attr e = { kl_intern(ctx, key), v };
    kl_rewriter_modify_start(rw, f);
    kl_rewriter_set_attr(rw, f, "prefill", kl_attr_dict(ctx, 1, &e));
    kl_rewriter_set_attr(rw, f, "plan_step", kl_attr_str(ctx, "prefill"));
    kl_rewriter_modify_end(rw, f);
    return true;
  }
  if (!strcmp(first->name, "rock.elementwise") && nin == 1 && is_copy_body(first, body)) {
    kl_rewriter_modify_start(rw, f);
    kl_rewriter_set_attr(rw, f, "plan_step", kl_attr_str(ctx, "copy"));
    kl_rewriter_modify_end(rw, f);
    return true;
  }
  return kl_rewriter_notify_no_match(rw, "@%s: the body is neither a fill of an output nor a copy", sym);
}

static kl_status run(kl_op *module, const kl_pass_options *o, void *user) {
  (void)o;
  (void)user;
  static const kl_pattern pat = { "func.func", 1, "rock-plan-steps", mark_kernel, NULL };
  const kl_pattern *ps[1] = { &pat };
  return kl_apply_patterns_walk(module, ps, 1);
}

void kl__register_rock_plan_steps(kl_ctx *ctx) {
  kl_pass_info info = { "rock-plan-steps",
                        "marks kernels whose whole body is a fill of an output (plan_step = \"prefill\", prefill = "
                        "{\"N\" = value}) or a copy (plan_step = \"copy\"): the host plan runs them as host steps",
                        NULL,
                        0,
                        run,
                        NULL };
  kl_register_pass(ctx, &info);
}
