/* test_align_tiling_run.c — numerics of rock-align-tiling's input and output fusion:
 * hand-written kernel-level modules (the regular form: a prologue rock.elementwise
 * writing a global rock.alloc that a rock.gemm reads; epilogue rock.elementwise ops
 * reading the GEMM result directly) go through the rest of the pipeline
 * (rock-gemm-to-gridwise ... dce), are lowered to LLVM, JIT-loaded on the host device
 * and run on fresh random inputs (never zero); every output is compared with a float64
 * reference computed here, with the default tolerances of the output's dtype
 * (runtime/tensor.h). Sizes are odd (K, M, N not multiples of the tiles), so the
 * padded reads and writes of the gridwise lowering are exercised. Each case also
 * checks the IR after rock-align-tiling: the intermediate buffer is gone. */
#include "core/parse.h"
#include "ctx_test_util.h"
#include "core/pass.h"
#include "core/print.h"
#include "core/verify.h"
#include "core/target.h"
#include "core/dtype.h"
#include "passes/lower_to_llvm.h"
#include "runtime/device.h"
#include "runtime/tensor.h"
#include "driver/load_llvm.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

#define PIPE_TILED "rock-gemm-to-gridwise,rock-gridwise-to-blockwise,rock-blockwise-to-threadwise,rock-align-tiling"
#define PIPE_REST  "rock-lower-loops,canonicalize,cse,dce"

static uint64_t rng;
/* uniform in [-1, -0.05] U [0.05, 1]: never zero */
static double rnd(void) {
  double u = (double)(xorshift64(&rng) >> 11) / 9007199254740992.0;
  double m = 0.05 + 0.95 * u;
  return (xorshift64(&rng) & 1) ? m : -m;
}

typedef struct {
  const char *name;
  bool f16, out;
  int64_t numel;
} arg_spec;
typedef void (*ref_fn)(double *const *a);
typedef struct {
  const char *what, *text;
  int nargs;
  arg_spec args[8];
  ref_fn ref;
  const char *gone; /* text that must not appear after rock-align-tiling (the intermediate) */
  const char *once; /* NULL, or text that must appear exactly once after it */
} run_case;

/* ---- references (row-major, batch G = 1): C[m,n] = sum_k A[k,m] * B[k,n] ---- */
static void gemm_ref(const double *A, const double *B, double *C, int K, int M, int N) {
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      double s = 0;
      for (int k = 0; k < K; k++) s += A[k * M + m] * B[k * N + n];
      C[m * N + n] = s;
    }
}
/* convert: A = f32(x) */
static void ref_convert(double *const *a) { gemm_ref(a[0], a[1], a[2], 5, 7, 6); }
/* dequant: A[k,m] = (x[k,m] - z[m]) * s[m] */
static void ref_dequant(double *const *a) {
  double A[9 * 7];
  for (int k = 0; k < 9; k++)
    for (int m = 0; m < 7; m++) A[k * 7 + m] = (a[0][k * 7 + m] - a[1][m]) * a[2][m];
  gemm_ref(A, a[3], a[4], 9, 7, 6);
}
/* two operands, neither maps 0 to 0: A = x + 1, B = 2y + 1 (K = 5 is padded to 6) */
static void ref_two(double *const *a) {
  double A[5 * 7], B[5 * 6];
  for (int i = 0; i < 35; i++) A[i] = a[0][i] + 1;
  for (int i = 0; i < 30; i++) B[i] = 2 * a[1][i] + 1;
  gemm_ref(A, B, a[2], 5, 7, 6);
}
/* f16: A = f16(x * s) (s a broadcast scalar), B: f16 argument, C: f16 */
static void ref_f16(double *const *a) {
  double A[7 * 9];
  for (int i = 0; i < 63; i++) A[i] = kl_f16_to_f64(kl_f64_to_f16(a[0][i] * a[1][0]));
  gemm_ref(A, a[2], a[3], 7, 9, 5);
}
/* two epilogues of one GEMM result sharing a per-column bias: o1 = relu(c + bias),
 * o2 = 2c + bias + 1 written through a Pad view of an [M-1, N] output (row M-1 is not
 * written: the guard elements after o2 keep their sentinel) */
static void ref_multi(double *const *a) {
  double C[7 * 6];
  gemm_ref(a[0], a[1], C, 5, 7, 6);
  for (int i = 0; i < 42; i++) a[3][i] = C[i] + a[2][i % 6] > 0 ? C[i] + a[2][i % 6] : 0;
  for (int i = 0; i < 36; i++) a[4][i] = 2 * C[i] + a[2][i % 6] + 1;
}

// clang-format off
static const run_case cases[] = {
  { "input fusion: convert f16 -> f32",
    "func.func @k(%x: buffer<1x5x7xf16>, %b: buffer<1x5x6xf32>, %c: buffer<1x7x6xf32>) attributes {kernel} {\n"
    "  %p = \"rock.alloc\"() : () -> buffer<1x5x7xf32>\n"
    "  \"rock.elementwise\"(%x, %p) ({\n"
    "  ^bb0(%v: f16):\n"
    "    %e = \"arith.extf\"(%v) : (f16) -> f32\n"
    "    \"rock.yield\"(%e) : (f32) -> ()\n"
    "  }) : (buffer<1x5x7xf16>, buffer<1x5x7xf32>) -> ()\n"
    "  \"rock.gemm\"(%p, %b, %c) {store = \"set\", perf_config = \"v1:4,4,2,4,4,1\"} : (buffer<1x5x7xf32>, buffer<1x5x6xf32>, buffer<1x7x6xf32>) -> ()\n"
    "  func.return\n}\n",
    3, { { "x", true, false, 35 }, { "b", false, false, 30 }, { "c", false, true, 42 } }, ref_convert, "%p =", NULL },
  { "input fusion: dequant (x - z) * s with broadcast z, s",
    "func.func @k(%x: buffer<1x9x7xf16>, %z: buffer<7xf32>, %s: buffer<7xf32>, %b: buffer<1x9x6xf32>, %c: buffer<1x7x6xf32>) attributes {kernel} {\n"
    "  %p = \"rock.alloc\"() : () -> buffer<1x9x7xf32>\n"
    "  %zv = \"rock.transform\"(%z) {view = #view<[AddDim{1} [\"g\"] at [0] -> [] at [], AddDim{9} [\"k\"] at [1] -> [] at [], PassThrough [\"m\"] at [2] -> [\"m\"] at [0]] bounds=[1,9,7] -> [7]>} : (buffer<7xf32>) -> buffer<1x9x7xf32>\n"
    "  %sv = \"rock.transform\"(%s) {view = #view<[AddDim{1} [\"g\"] at [0] -> [] at [], AddDim{9} [\"k\"] at [1] -> [] at [], PassThrough [\"m\"] at [2] -> [\"m\"] at [0]] bounds=[1,9,7] -> [7]>} : (buffer<7xf32>) -> buffer<1x9x7xf32>\n"
    "  \"rock.elementwise\"(%x, %zv, %sv, %p) ({\n"
    "  ^bb0(%v: f16, %zz: f32, %ss: f32):\n"
    "    %e = \"arith.extf\"(%v) : (f16) -> f32\n"
    "    %d = arith.subf %e, %zz : f32\n"
    "    %r = arith.mulf %d, %ss : f32\n"
    "    \"rock.yield\"(%r) : (f32) -> ()\n"
    "  }) : (buffer<1x9x7xf16>, buffer<1x9x7xf32>, buffer<1x9x7xf32>, buffer<1x9x7xf32>) -> ()\n"
    "  \"rock.gemm\"(%p, %b, %c) {store = \"set\", perf_config = \"v1:4,4,2,4,4,1\"} : (buffer<1x9x7xf32>, buffer<1x9x6xf32>, buffer<1x7x6xf32>) -> ()\n"
    "  func.return\n}\n",
    5, { { "x", true, false, 63 }, { "z", false, false, 7 }, { "s", false, false, 7 }, { "b", false, false, 54 }, { "c", false, true, 42 } },
    ref_dequant, "%p =", NULL },
  { "input fusion: both operands, bodies that do not keep 0 (padding re-masked)",
    "func.func @k(%x: buffer<1x5x7xf32>, %y: buffer<1x5x6xf32>, %c: buffer<1x7x6xf32>) attributes {kernel} {\n"
    "  %pa = \"rock.alloc\"() : () -> buffer<1x5x7xf32>\n"
    "  %pb = \"rock.alloc\"() : () -> buffer<1x5x6xf32>\n"
    "  \"rock.elementwise\"(%x, %pa) ({\n"
    "  ^bb0(%v: f32):\n"
    "    %one = arith.constant 1.0 : f32\n"
    "    %r = arith.addf %v, %one : f32\n"
    "    \"rock.yield\"(%r) : (f32) -> ()\n"
    "  }) : (buffer<1x5x7xf32>, buffer<1x5x7xf32>) -> ()\n"
    "  \"rock.elementwise\"(%y, %pb) ({\n"
    "  ^bb0(%v: f32):\n"
    "    %one = arith.constant 1.0 : f32\n"
    "    %two = arith.constant 2.0 : f32\n"
    "    %d = arith.mulf %v, %two : f32\n"
    "    %r = arith.addf %d, %one : f32\n"
    "    \"rock.yield\"(%r) : (f32) -> ()\n"
    "  }) : (buffer<1x5x6xf32>, buffer<1x5x6xf32>) -> ()\n"
    "  \"rock.gemm\"(%pa, %pb, %c) {store = \"set\", perf_config = \"v1:4,4,2,4,4,1\"} : (buffer<1x5x7xf32>, buffer<1x5x6xf32>, buffer<1x7x6xf32>) -> ()\n"
    "  func.return\n}\n",
    3, { { "x", false, false, 35 }, { "y", false, false, 30 }, { "c", false, true, 42 } }, ref_two, "%pa =", NULL },
  { "input fusion: f16 GEMM, scale by a broadcast scalar",
    "func.func @k(%x: buffer<1x7x9xf16>, %s: buffer<1xf16>, %b: buffer<1x7x5xf16>, %c: buffer<1x9x5xf16>) attributes {kernel} {\n"
    "  %p = \"rock.alloc\"() : () -> buffer<1x7x9xf16>\n"
    "  %sv = \"rock.transform\"(%s) {view = #view<[AddDim{1} [\"g\"] at [0] -> [] at [], AddDim{7} [\"k\"] at [1] -> [] at [], Broadcast{1} [\"m\"] at [2] -> [\"m\"] at [0]] bounds=[1,7,9] -> [1]>} : (buffer<1xf16>) -> buffer<1x7x9xf16>\n"
    "  \"rock.elementwise\"(%x, %sv, %p) ({\n"
    "  ^bb0(%v: f16, %w: f16):\n"
    "    %r = arith.mulf %v, %w : f16\n"
    "    \"rock.yield\"(%r) : (f16) -> ()\n"
    "  }) : (buffer<1x7x9xf16>, buffer<1x7x9xf16>, buffer<1x7x9xf16>) -> ()\n"
    "  \"rock.gemm\"(%p, %b, %c) {store = \"set\", perf_config = \"v1:4,4,2,4,4,1\"} : (buffer<1x7x9xf16>, buffer<1x7x5xf16>, buffer<1x9x5xf16>) -> ()\n"
    "  func.return\n}\n",
    4, { { "x", true, false, 63 }, { "s", true, false, 1 }, { "b", true, false, 35 }, { "c", true, true, 45 } }, ref_f16, "%p =", NULL },
  { "output fusion: two readers of the GEMM result sharing a bias, one through a Pad view",
    "func.func @k(%a: buffer<1x5x7xf32>, %b: buffer<1x5x6xf32>, %bias: buffer<6xf32>, %o1: buffer<1x7x6xf32>, %o2: buffer<1x6x6xf32>) attributes {kernel} {\n"
    "  %c = \"rock.alloc\"() : () -> buffer<1x7x6xf32>\n"
    "  \"rock.gemm\"(%a, %b, %c) {store = \"set\", perf_config = \"v1:4,4,2,4,4,1\"} : (buffer<1x5x7xf32>, buffer<1x5x6xf32>, buffer<1x7x6xf32>) -> ()\n"
    "  %bv = \"rock.transform\"(%bias) {view = #view<[AddDim{1} [\"g\"] at [0] -> [] at [], AddDim{7} [\"m\"] at [1] -> [] at [], PassThrough [\"n\"] at [2] -> [\"n\"] at [0]] bounds=[1,7,6] -> [6]>} : (buffer<6xf32>) -> buffer<1x7x6xf32>\n"
    "  \"rock.elementwise\"(%c, %bv, %o1) ({\n"
    "  ^bb0(%v: f32, %w: f32):\n"
    "    %s = arith.addf %v, %w : f32\n"
    "    %z = arith.constant 0.0 : f32\n"
    "    %r = arith.maxf %s, %z : f32\n"
    "    \"rock.yield\"(%r) : (f32) -> ()\n"
    "  }) : (buffer<1x7x6xf32>, buffer<1x7x6xf32>, buffer<1x7x6xf32>) -> ()\n"
    "  %ov = \"rock.transform\"(%o2) {view = #view<[PassThrough [\"g\"] at [0] -> [\"g\"] at [0], Pad{0,1} [\"m\"] at [1] -> [\"m\"] at [1], PassThrough [\"n\"] at [2] -> [\"n\"] at [2]] bounds=[1,7,6] -> [1,6,6]>} : (buffer<1x6x6xf32>) -> buffer<1x7x6xf32>\n"
    "  \"rock.elementwise\"(%c, %bv, %ov) ({\n"
    "  ^bb0(%v: f32, %w: f32):\n"
    "    %one = arith.constant 1.0 : f32\n"
    "    %two = arith.constant 2.0 : f32\n"
    "    %d = arith.mulf %v, %two : f32\n"
    "    %e = arith.addf %d, %w : f32\n"
    "    %r = arith.addf %e, %one : f32\n"
    "    \"rock.yield\"(%r) : (f32) -> ()\n"
    "  }) : (buffer<1x7x6xf32>, buffer<1x7x6xf32>, buffer<1x7x6xf32>) -> ()\n"
    "  func.return\n}\n",
    5, { { "a", false, false, 35 }, { "b", false, false, 30 }, { "bias", false, false, 6 }, { "o1", false, true, 42 }, { "o2", false, true, 36 } },
    ref_multi, "%c =", "\"rock.threadwise_read_into\"(%bv," },
};
// clang-format on

typedef struct {
  kl_sb sb;
} ir_after;
static void keep_ir(const char *pass, const char *text, void *user) {
  kl_sb_printf(&((ir_after *)user)->sb, "%s", text);
}

#define GUARD    16 /* elements after each output that must stay untouched */
#define SENTINEL 12345.0

static void run(kl_ctx *ctx, kl_device *dev, const run_case *rc) {
  group_begin();
  check_note = rc->what;
  kl_op *m = kl_parse_module(ctx, rc->text, strlen(rc->text), "case.kir");
  CHECK(m != NULL);
  if (!m) {
    char *d = kl_diag_take(ctx);
    fprintf(stderr, "%s", d);
    free(d);
    group_end(rc->what);
    return;
  }
  kl_pass_manager *pm = kl_pass_manager_create(ctx);
  ir_after ir = { { 0 } };
  kl_pass_manager_print_ir_after(pm, "rock-align-tiling", keep_ir, &ir);
  bool ok = kl_pass_manager_add_pipeline(pm, PIPE_TILED "," PIPE_REST) == KL_OK && kl_pass_manager_run(pm, m) == KL_OK;
  kl_pass_manager_destroy(pm);
  CHECK(ok);
  if (!ok) {
    char *d = kl_diag_take(ctx);
    fprintf(stderr, "%s", d);
    free(d);
    kl_sb_free(&ir.sb);
    group_end(rc->what);
    return;
  }
  const char *after = kl_sb_str(&ir.sb);
  CHECK(strstr(after, rc->gone) == NULL, "the intermediate buffer survives rock-align-tiling:\n%s", after);
  CHECK(strstr(after, "rock.threadwise_read_into") != NULL);
  if (rc->once) {
    const char *f = strstr(after, rc->once);
    CHECK(f && !strstr(f + 1, rc->once), "'%s' does not appear exactly once:\n%s", rc->once, after);
  }
  kl_sb_free(&ir.sb);
  kl_op *fn = kl_module_lookup(m, "k");
  int64_t grid = 1, block = 1;
  CHECK(fn && kl_op_attr_i64(fn, "grid_size", &grid) && kl_op_attr_i64(fn, "block_size", &block));
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef lm;
  kl_dev_module *mod = NULL;
  kl_dev_kernel *k = NULL;
  ok = kl_lower_to_llvm(m, kl_target_lookup("host"), c, &lm) == KL_OK;
  CHECK(ok, "lower-to-llvm");
  if (ok) {
    ok = kl_device_load_llvm(dev, lm, &mod) == KL_OK && kl_device_get_kernel(mod, "k", &k) == KL_OK;
    CHECK(ok, "load: %s", kl_device_error(dev));
    LLVMDisposeModule(lm);
  }
  if (ok) {
    double *ref[8];
    void *buf[8], *argp[8];
    size_t sizes[8];
    for (int i = 0; i < rc->nargs; i++) {
      const arg_spec *s = &rc->args[i];
      int64_t n = s->numel + GUARD;
      ref[i] = calloc(n, sizeof(double));
      buf[i] = calloc(n, s->f16 ? 2 : 4);
      for (int64_t j = 0; j < n; j++) {
        double v = s->out || j >= s->numel ? SENTINEL : rnd();
        if (s->f16) {
          ((uint16_t *)buf[i])[j] = kl_f64_to_f16(v);
          v = kl_f16_to_f64(((uint16_t *)buf[i])[j]);
        } else {
          ((float *)buf[i])[j] = (float)v;
          v = (float)v;
        }
        ref[i][j] = v;
      }
      argp[i] = &buf[i];
      sizes[i] = sizeof(void *);
    }
    rc->ref(ref);
    uint32_t g3[3] = { (uint32_t)grid, 1, 1 }, b3[3] = { (uint32_t)block, 1, 1 };
    CHECK(kl_device_launch(k, g3, b3, 0, argp, sizes, rc->nargs) == KL_OK, "launch: %s", kl_device_error(dev));
    for (int i = 0; i < rc->nargs; i++) {
      const arg_spec *s = &rc->args[i];
      if (!s->out) continue;
      double rtol, atol, worst = 0;
      kl_default_tolerance(s->f16 ? KL_DT_F16 : KL_DT_F32, &rtol, &atol);
      int64_t bad = 0, first = -1;
      for (int64_t j = 0; j < s->numel + GUARD; j++) {
        double got = s->f16 ? kl_f16_to_f64(((uint16_t *)buf[i])[j]) : ((float *)buf[i])[j];
        double want = j < s->numel ? ref[i][j] : (s->f16 ? kl_f16_to_f64(kl_f64_to_f16(SENTINEL)) : SENTINEL);
        double e = fabs(got - want);
        if (!(e <= atol + rtol * fabs(want))) {
          if (first < 0) first = j;
          bad++;
        }
        if (e > worst) worst = e;
      }
      CHECK(bad == 0, "output %s: %lld mismatches, first at %lld (max abs err %g)", s->name, (long long)bad,
            (long long)first, worst);
    }
    for (int i = 0; i < rc->nargs; i++) {
      free(ref[i]);
      free(buf[i]);
    }
  }
  if (mod) kl_device_unload(mod);
  LLVMContextDispose(c);
  check_note = NULL;
  group_end(rc->what);
}

int main(void) {
  rng = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)clock();
  if (!rng) rng = 1;
  printf("seed %llu\n", (unsigned long long)rng);
  kl_ctx *ctx = kl_test_ctx();
  char err[512];
  kl_device *dev = kl_device_open("host", err, sizeof err);
  CHECK(dev != NULL, "%s", err);
  if (dev)
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run(ctx, dev, &cases[i]);
  if (dev) kl_device_destroy(dev);
  kl_ctx_destroy(ctx);
  return check_summary("test_align_tiling_run");
}
