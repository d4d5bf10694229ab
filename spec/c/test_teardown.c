/* test_teardown.c — tearing down what a C embedder holds in any order.
 * The objects: the context (core/context.h, whose compile cache keeps the program), the
 * device (runtime/device.h), the program (driver/program.h, which keeps the modules it
 * loaded on the device) and a prepared run of it on the device. For every one of the 24
 * orders, on the host device (and on a CUDA / HIP device where one is present, skipped
 * otherwise), a fresh context compiles a small fused graph (cached), runs it and a
 * prepared run of it, both checked against kl_graph_eval on random inputs, then the four
 * are destroyed in that order. Between steps, whatever is still alive must keep working:
 * a program whose device is gone runs again (and is checked again) on a newly opened
 * device, and a prepared run whose device is gone reports that instead of touching it.
 * Meant for the ASan build (scripts/test runs it there): a use-after-free or leak of any
 * order is a report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attr.h"
#include "core/dialect_graph.h"
#include "passes/passes.h"
#include "driver/program.h"

#include "check.h"
#include "graph_test_util.h"

static uint64_t g_seed = 0x5EEDull;

/* relu(x[4,8] * y[8] + x) */
static kl_op *small_graph(kl_ctx *ctx) {
  kl_op *g = kl_graph_create(ctx, kl_module_create(ctx, KL_LOC_UNKNOWN), "td", KL_LOC_UNKNOWN);
  const kl_type *f32 = kl_type_f32(ctx);
  kl_op *x = param(g, "x", kl_type_tensor(ctx, f32, 2, (int64_t[]){ 4, 8 }, NULL));
  kl_op *y = param(g, "y", kl_type_tensor(ctx, f32, 1, (int64_t[]){ 8 }, NULL));
  kl_op *r = op1(g, "relu", op2(g, "add", op2(g, "mul", x, y), x));
  kl_value *out = kl_op_result(r, 0);
  kl_graph_set_outputs(g, 1, &out, KL_LOC_UNKNOWN);
  return g;
}

typedef struct inputs {
  int n;
  kl_named_tensor t[4];
} inputs;

static void make_inputs(kl_op *g, inputs *in) {
  kl_op *ps[4];
  in->n = kl_graph_params(g, ps, 4);
  for (int i = 0; i < in->n; i++) {
    const kl_type *t = ps[i]->results[0].type;
    char err[256];
    in->t[i].name = kl_op_attr_string(ps[i], "name");
    in->t[i].tensor = kl_tensor_rand(kl_dtype_of_type(t->elem), t->rank, t->shape, t->strides, g_seed++, KL_DIST_NORMAL,
                                     err, sizeof err);
    CHECK(in->t[i].tensor != NULL, "rand: %s", err);
  }
}
static void free_inputs(inputs *in) {
  for (int i = 0; i < in->n; i++) kl_tensor_release(in->t[i].tensor);
}

/* The outputs equal the references (f32 tolerances); frees outs. */
static void compare_ref(int nref, kl_tensor **ref, int nout, kl_tensor **out, const char *what) {
  char err[1024] = "";
  CHECK(nout == nref && nout == 1, "%s: %d outputs, eval %d", what, nout, nref);
  for (int i = 0; i < nout && i < nref; i++) {
    kl_compare_result r;
    CHECK(kl_tensor_compare(out[i], ref[i], -1, -1, &r, err, sizeof err) == 0 && r.mismatches == 0,
          "%s: %lld mismatches (max abs err %g) %s", what, (long long)r.mismatches, r.max_abs_err, err);
  }
  for (int i = 0; i < nout; i++) kl_tensor_release(out[i]);
  free(out);
}
static void eval_ref(kl_op *g, const inputs *in, int *nref, kl_tensor ***ref, const char *what) {
  char err[1024];
  *nref = 0;
  *ref = NULL;
  CHECK(kl_graph_eval(g, in->n, in->t, nref, ref, err, sizeof err) == KL_OK, "%s: eval: %s", what, err);
}
static void free_ref(int nref, kl_tensor **ref) {
  for (int i = 0; i < nref; i++) kl_tensor_release(ref[i]);
  free(ref);
}
/* The outputs equal kl_graph_eval's on the same inputs; frees outs. */
static void compare_eval(kl_op *g, const inputs *in, int nout, kl_tensor **out, const char *what) {
  int nref;
  kl_tensor **ref;
  eval_ref(g, in, &nref, &ref, what);
  compare_ref(nref, ref, nout, out, what);
  free_ref(nref, ref);
}

static void run_and_check(kl_program *p, kl_device *dev, kl_op *g, const char *what) {
  inputs in;
  make_inputs(g, &in);
  char err[4096];
  int nout = 0;
  kl_tensor **out = NULL;
  kl_status st = kl_program_run(p, dev, in.n, in.t, &nout, &out, err, sizeof err);
  CHECK(st == KL_OK, "%s: run: %s", what, err);
  if (st == KL_OK) compare_eval(g, &in, nout, out, what);
  free_inputs(&in);
}

enum { O_CTX, O_DEV, O_PROG, O_PREP, NOBJ };
static const char *const obj_name[NOBJ] = { "context", "device", "program", "prepared" };

/* One order: build everything on device `devname`, check it, destroy in `order`. */
static void one_order(const char *devname, const int order[NOBJ]) {
  char what[128], err[4096];
  snprintf(what, sizeof what, "%s: %s, %s, %s, %s", devname, obj_name[order[0]], obj_name[order[1]], obj_name[order[2]],
           obj_name[order[3]]);
  check_note = what;
  kl_ctx *ctx = kl_ctx_create();
  if (kl_pass_count(ctx) == 0) kl_register_builtin_passes(ctx);
  kl_device *dev = kl_device_open(devname, err, sizeof err);
  CHECK(dev != NULL, "open: %s", err);
  if (!dev) {
    kl_ctx_destroy(ctx);
    return;
  }
  kl_op *g = small_graph(ctx);
  const char *target = kl_device_get_info(dev)->arch;
  kl_compile_opts o = { .targets = &target, .ntargets = 1 }; /* cached: the context holds it too */
  kl_program *p = kl_compile(g, &o, err, sizeof err);
  CHECK(p != NULL, "compile: %s", err);
  if (!p) {
    kl_device_destroy(dev);
    kl_ctx_destroy(ctx);
    return;
  }
  run_and_check(p, dev, g, what);

  inputs in;
  make_inputs(g, &in);
  int nref;
  kl_tensor **ref;
  eval_ref(g, &in, &nref, &ref, what);
  kl_prepare_opts po = { .sets = 2 };
  kl_prepared *r = kl_program_prepare(p, dev, in.n, in.t, &po, err, sizeof err);
  CHECK(r != NULL, "prepare: %s", err);
  if (r) {
    CHECK(kl_prepared_launch(r, 1, err, sizeof err) == KL_OK, "launch: %s", err);
    int nout = 0;
    kl_tensor **out = NULL;
    kl_status st = kl_prepared_outputs(r, 1, &nout, &out, err, sizeof err);
    CHECK(st == KL_OK, "outputs: %s", err);
    if (st == KL_OK) compare_ref(nref, ref, nout, out, what);
  }

  bool alive[NOBJ] = { true, true, true, r != NULL };
  for (int s = 0; s < NOBJ; s++) {
    switch (order[s]) {
      case O_CTX:
        kl_ctx_destroy(ctx);
        ctx = NULL;
        break;
      case O_DEV:
        kl_device_destroy(dev);
        dev = NULL;
        break;
      case O_PROG:
        kl_program_release(p);
        p = NULL;
        break;
      case O_PREP:
        kl_prepared_free(r);
        r = NULL;
        break;
    }
    alive[order[s]] = false;
    /* what is still alive still works (the graph and the program's plan live in ctx) */
    if (alive[O_PREP] && alive[O_DEV]) {
      int nout = 0;
      kl_tensor **out = NULL;
      kl_status st = kl_prepared_launch(r, 0, err, sizeof err);
      CHECK(st == KL_OK, "launch after a teardown step: %s", err);
      if (st == KL_OK) st = kl_prepared_outputs(r, 0, &nout, &out, err, sizeof err);
      CHECK(st == KL_OK, "outputs after a teardown step: %s", err);
      if (st == KL_OK) compare_ref(nref, ref, nout, out, what);
    }
    if (alive[O_PREP] && !alive[O_DEV]) {
      err[0] = '\0';
      CHECK(kl_prepared_launch(r, 0, err, sizeof err) == KL_ERR && strstr(err, "destroyed"),
            "a prepared run whose device is gone: launch says '%s'", err);
    }
    if (alive[O_PROG] && alive[O_CTX] && !alive[O_DEV] && order[s] == O_DEV) {
      kl_device *d2 = kl_device_open(devname, err, sizeof err); /* often at the old address */
      CHECK(d2 != NULL, "reopen: %s", err);
      if (d2) {
        run_and_check(p, d2, g, what);
        kl_device_destroy(d2);
      }
    }
  }
  free_ref(nref, ref);
  free_inputs(&in);
  check_note = NULL;
}

static int g_orders[24][NOBJ], g_norders;
static void permute(int *a, int k) {
  if (k == NOBJ) {
    memcpy(g_orders[g_norders++], a, sizeof g_orders[0]);
    return;
  }
  for (int i = k; i < NOBJ; i++) {
    int t = a[k];
    a[k] = a[i];
    a[i] = t;
    permute(a, k + 1);
    t = a[k];
    a[k] = a[i];
    a[i] = t;
  }
}

static void all_orders(const char *devname) {
  group_begin();
  for (int i = 0; i < g_norders; i++) one_order(devname, g_orders[i]);
  char what[64];
  snprintf(what, sizeof what, "%s: all %d teardown orders", devname, g_norders);
  group_end(what);
}

int main(void) {
  int a[NOBJ] = { O_CTX, O_DEV, O_PROG, O_PREP };
  permute(a, 0);
  CHECK(g_norders == 24);
  /* the reviewer's order first: program, device, context (then the prepared run) */
  group_begin();
  one_order("host", (const int[NOBJ]){ O_PREP, O_PROG, O_DEV, O_CTX });
  one_order("host", (const int[NOBJ]){ O_PROG, O_DEV, O_CTX, O_PREP });
  group_end("host: release program, destroy device, destroy context");
  all_orders("host");
  const char *gpus[] = { "cuda", "hip" };
  for (int i = 0; i < 2; i++) {
    char err[1024];
    kl_device *d = kl_device_open(gpus[i], err, sizeof err);
    if (!d) {
      printf("%s: skipped (%s)\n", gpus[i], err);
      continue;
    }
    kl_device_destroy(d);
    all_orders(gpus[i]);
  }
  return check_summary("test_teardown");
}
