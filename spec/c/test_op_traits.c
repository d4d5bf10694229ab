/* test_op_traits.c — op properties live on the op definitions: the graph ops' traits
 * (element-wise, view, invertible view, GEMM anchor), every graph / rock op's IR levels,
 * rock.mma registered with the rock dialect on a bare context, and kl_verify_level's
 * located errors. Links kiln_core only (no passes registered). */
#include "core/ir.h"
#include "core/verify.h"
#include "core/dialect_rock.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ir_test_util.h"

static bool in_list(const char *name, const char *const *list) {
  for (int i = 0; list[i]; i++)
    if (!strcmp(name, list[i])) return true;
  return false;
}

/* Every registered graph op: its traits are exactly the expected ones, and it is legal at
 * the graph level only. */
static void test_graph_traits(void) {
  group_begin();
  static const char *const ew[] = {
    "graph.add",           "graph.sub",  "graph.mul",   "graph.div",     "graph.max",
    "graph.min",           "graph.pow",  "graph.neg",   "graph.abs",     "graph.exp",
    "graph.log",           "graph.sqrt", "graph.rsqrt", "graph.tanh",    "graph.sigmoid",
    "graph.relu",          "graph.clip", "graph.where", "graph.convert", "graph.greater",
    "graph.greater_equal", "graph.erf",  "graph.recip", "graph.round",   "graph.floor",
    "graph.ceil",          NULL
  };
  static const char *const view[] = { "graph.transpose", "graph.reshape", "graph.broadcast", "graph.slice", NULL };
  static const char *const inv[] = { "graph.transpose", "graph.reshape", NULL };
  static const char *const anchor[] = { "graph.conv", "graph.dot", NULL };
  kl_ctx *ctx = kl_ctx_create();
  int ngraph = 0;
  for (int i = 0; i < kl_opdef_count(ctx); i++) {
    const kl_opdef *d = kl_opdef_at(ctx, i);
    if (strncmp(d->name, "graph.", 6)) continue;
    ngraph++;
    check_note = d->name;
    CHECK(!!(d->traits & KL_TRAIT_ELEMENTWISE) == in_list(d->name, ew));
    CHECK(!!(d->traits & KL_TRAIT_VIEW) == in_list(d->name, view));
    CHECK(!!(d->traits & KL_TRAIT_INVERTIBLE_VIEW) == in_list(d->name, inv));
    CHECK(!!(d->traits & KL_TRAIT_GEMM_ANCHOR) == in_list(d->name, anchor));
    CHECK(d->levels == KL_LEVEL_GRAPH);
  }
  check_note = NULL;
  CHECK(ngraph == 40, "%d graph ops", ngraph);
  /* no other dialect claims the graph-op traits */
  for (int i = 0; i < kl_opdef_count(ctx); i++) {
    const kl_opdef *d = kl_opdef_at(ctx, i);
    if (!strncmp(d->name, "graph.", 6)) continue;
    CHECK(!(d->traits & (KL_TRAIT_ELEMENTWISE | KL_TRAIT_INVERTIBLE_VIEW | KL_TRAIT_GEMM_ANCHOR)), "%s", d->name);
  }
  kl_ctx_destroy(ctx);
  group_end("graph op traits");
}

/* rock ops: all kernel level; what lower-to-llvm takes also loop level. rock.mma is
 * registered by the rock dialect itself (a bare context has no passes). */
static void test_rock_levels(void) {
  group_begin();
  static const char *const loop[] = { "rock.load",
                                      "rock.store",
                                      "rock.prefetch",
                                      "rock.mma",
                                      "rock.alloc",
                                      "rock.workgroup_id",
                                      "rock.workitem_id",
                                      "rock.barrier",
                                      "rock.lane_shuffle",
                                      "rock.atomic_rmw",
                                      "rock.ldmatrix",
                                      "rock.wgmma",
                                      "rock.wgmma_desc",
                                      "rock.wgmma_sync",
                                      "rock.async_copy",
                                      "rock.async_commit",
                                      "rock.async_wait",
                                      "rock.mbarrier",
                                      "rock.tma_load",
                                      "rock.setmaxnreg",
                                      "rock.workgroup_count",
                                      "rock.stmatrix",
                                      NULL };
  kl_ctx *ctx = kl_ctx_create();
  const kl_opdef *mma = kl_lookup_op(ctx, "rock.mma");
  CHECK(mma != NULL, "rock.mma is not registered on a bare context");
  int nrock = 0;
  for (int i = 0; i < kl_opdef_count(ctx); i++) {
    const kl_opdef *d = kl_opdef_at(ctx, i);
    if (strncmp(d->name, "rock.", 5)) continue;
    nrock++;
    CHECK(d->levels == (KL_LEVEL_KERNEL | (in_list(d->name, loop) ? KL_LEVEL_LOOP : 0)), "%s levels %u", d->name,
          d->levels);
  }
  CHECK(nrock == 36, "%d rock ops", nrock);
  /* builtin ops are legal everywhere */
  const kl_opdef *addf = kl_lookup_op(ctx, "arith.addf"), *fn = kl_lookup_op(ctx, "func.func");
  CHECK(addf && addf->levels == 0 && fn && fn->levels == 0);
  kl_ctx_destroy(ctx);
  group_end("rock op levels");
}

/* kl_verify_level: a graph op in a kernel and a kernel-level op at the loop level are
 * errors at their locations naming the op and both levels; legal IR passes. */
static void test_verify_level(void) {
  group_begin();
  kl_ctx *ctx = kl_ctx_create();
  const kl_type *f32 = kl_type_f32(ctx);
  int64_t shape[] = { 4 };
  const kl_type *tt = kl_type_tensor(ctx, f32, 1, shape, NULL);
  const kl_type *bt = kl_type_buffer(ctx, f32, 1, shape, NULL, KL_SPACE_GLOBAL);
  kl_op *m = kl_module_create(ctx, KL_LOC_UNKNOWN);
  kl_named_attr a = { "sym_name", kl_attr_str(ctx, "k") };
  kl_op *f = kl_op_create(ctx, "func.func", KL_LOC_UNKNOWN, 0, NULL, 0, NULL, 1, &a, 1);
  kl_block *b = kl_block_create(ctx);
  kl_value *x = kl_block_add_arg(ctx, b, tt), *buf = kl_block_add_arg(ctx, b, bt);
  kl_region_push_block(&f->regions[0], b);
  kl_block_push_op(kl_module_body(m), f);
  kl_value *xx[] = { x, x };
  kl_op *add = kl_op_create(ctx, "graph.add", kl_loc_make(ctx, "lvl.kir", 3, 5), 2, xx, 1, &tt, 0, NULL, 0);
  kl_block_push_op(b, add);
  kl_block_push_op(b, kl_op_create(ctx, "func.return", KL_LOC_UNKNOWN, 0, NULL, 0, NULL, 0, NULL, 0));
  CHECK(kl_verify_level(m, KL_LEVEL_GRAPH, "t") == KL_OK);
  CHECK(kl_verify_level(m, KL_LEVEL_KERNEL, "graph-to-rock") == KL_ERR);
  CHECK(diag_is(ctx,
                "lvl.kir:3:5: error: graph-to-rock: 'graph.add' is not legal at the kernel level (legal at: graph)\n"));
  kl_op_erase(add);
  kl_value *bufs[] = { buf, buf, buf };
  kl_op *gemm = kl_op_create(ctx, "rock.gemm", kl_loc_make(ctx, "lvl.kir", 4, 3), 3, bufs, 0, NULL, 0, NULL, 0);
  kl_op_insert_before(b->last, gemm);
  CHECK(kl_verify_level(m, KL_LEVEL_KERNEL, "t") == KL_OK);
  CHECK(kl_verify_level(m, KL_LEVEL_LOOP, "rock-lower-loops") == KL_ERR);
  CHECK(diag_is(
      ctx, "lvl.kir:4:3: error: rock-lower-loops: 'rock.gemm' is not legal at the loop level (legal at: kernel)\n"));
  CHECK(!kl_diag_has_error(ctx));
  kl_ctx_destroy(ctx);
  group_end("kl_verify_level");
}

int main(void) {
  test_graph_traits();
  test_rock_levels();
  test_verify_level();
  return check_summary("test_op_traits");
}
