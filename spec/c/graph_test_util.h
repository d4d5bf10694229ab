/* graph_test_util.h — building small graph-dialect graphs in the C tests (test_bundle.c,
 * test_teardown.c):
 *  - param(g, name, type): a param op named `name` of `type`, located at the calling
 *    line of the test (file basename:line), so an error about it names the test;
 *  - op1(g, name, a) / op2(g, name, a, b): an op `name` on the first result of a (and
 *    b), its result type inferred (kl_graph_build with no type), at no location.
 * Header-only (static functions); errors as kl_graph_build's (NULL, a diagnostic on the
 * context). */
#ifndef KL_SPEC_GRAPH_TEST_UTIL_H
#define KL_SPEC_GRAPH_TEST_UTIL_H
#include <string.h>

#include "core/attr.h"
#include "core/dialect_graph.h"

static inline kl_op *graph_test_param(kl_op *g, const char *name, const kl_type *t, const char *file, int line) {
  const char *base = strrchr(file, '/');
  kl_named_attr a = { "name", kl_attr_str(g->ctx, name) };
  return kl_graph_build(g, "param", kl_loc_make(g->ctx, base ? base + 1 : file, line, 0), 0, NULL, 1, &a, t);
}
#define param(g, name, t) graph_test_param((g), (name), (t), __FILE__, __LINE__)

static inline kl_op *op2(kl_op *g, const char *name, kl_op *a, kl_op *b) {
  kl_value *v[] = { kl_op_result(a, 0), kl_op_result(b, 0) };
  return kl_graph_build(g, name, KL_LOC_UNKNOWN, 2, v, 0, NULL, NULL);
}
static inline kl_op *op1(kl_op *g, const char *name, kl_op *a) {
  kl_value *v = kl_op_result(a, 0);
  return kl_graph_build(g, name, KL_LOC_UNKNOWN, 1, &v, 0, NULL, NULL);
}
#endif
