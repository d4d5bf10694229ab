/* test_lower_llvm.c — loop-level kernels lowered to LLVM IR: host JIT numerics, and
 * PTX / HSACO emission of the same kernels. */
#include "core/parse.h"
#include "ctx_test_util.h"
#include "core/verify.h"
#include "core/target.h"
#include "passes/lower_to_llvm.h"
#include "passes/lower_barrier.h"
#include "codegen/codegen_target.h"
#include "runtime/device.h"
#include "driver/load_llvm.h"
#include "core/dtype.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* c[i] = tanh(a[i]) + b[i] * 2 for 1000 elements in workgroups of 100, with a loop-carried
 * sum written to d[bid] (exercises scf.for iter args and scf.if). */
static const char *kernel_text =
    "\"func.func\"() ({\n"
    "^bb0(%a: buffer<1000xf32>, %b: buffer<1000xf16>, %c: buffer<1000xf32>, %d: buffer<10xf32>):\n"
    "  %bid = \"rock.workgroup_id\"() : () -> index\n"
    "  %c0 = \"arith.constant\"() {value = 0 : index} : () -> index\n"
    "  %c1 = \"arith.constant\"() {value = 1 : index} : () -> index\n"
    "  %c100 = \"arith.constant\"() {value = 100 : index} : () -> index\n"
    "  %two = \"arith.constant\"() {value = 2.0 : f16} : () -> f16\n"
    "  %z = \"arith.constant\"() {value = 0.0 : f32} : () -> f32\n"
    "  %base = \"arith.muli\"(%bid, %c100) : (index, index) -> index\n"
    "  %sum = \"scf.for\"(%c0, %c100, %c1, %z) ({\n"
    "  ^bb0(%i: index, %acc: f32):\n"
    "    %idx = \"arith.addi\"(%base, %i) : (index, index) -> index\n"
    "    %x = \"rock.load\"(%a, %idx) : (buffer<1000xf32>, index) -> f32\n"
    "    %y = \"rock.load\"(%b, %idx) : (buffer<1000xf16>, index) -> f16\n"
    "    %y2 = \"arith.mulf\"(%y, %two) : (f16, f16) -> f16\n"
    "    %y3 = \"arith.extf\"(%y2) : (f16) -> f32\n"
    "    %t = \"math.tanh\"(%x) : (f32) -> f32\n"
    "    %r = \"arith.addf\"(%t, %y3) : (f32, f32) -> f32\n"
    "    \"rock.store\"(%r, %c, %idx) : (f32, buffer<1000xf32>, index) -> ()\n"
    "    %pos = \"arith.cmpf\"(%r, %z) {predicate = \"gt\"} : (f32, f32) -> i1\n"
    "    %add = \"scf.if\"(%pos) ({\n"
    "      %s = \"arith.addf\"(%acc, %r) : (f32, f32) -> f32\n"
    "      \"scf.yield\"(%s) : (f32) -> ()\n"
    "    }, {\n"
    "      \"scf.yield\"(%acc) : (f32) -> ()\n"
    "    }) : (i1) -> f32\n"
    "    \"scf.yield\"(%add) : (f32) -> ()\n"
    "  }) : (index, index, index, f32) -> f32\n"
    "  \"rock.store\"(%sum, %d, %bid) : (f32, buffer<10xf32>, index) -> ()\n"
    "  \"func.return\"() : () -> ()\n"
    "}) {block_size = 1, grid_size = 10, kernel, sym_name = \"vk\"} : () -> ()\n";


static void test_host(kl_op *m) {
  const kl_target *host = kl_target_lookup("host");
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef lm;
  CHECK(kl_lower_to_llvm(m, host, c, &lm) == KL_OK);
  char err[512];
  kl_device *dev = kl_device_open("host", err, sizeof err);
  CHECK(dev != NULL);
  kl_dev_module *mod;
  kl_dev_kernel *k;
  CHECK(kl_device_load_llvm(dev, lm, &mod) == KL_OK);
  CHECK(kl_device_get_kernel(mod, "vk", &k) == KL_OK);
  float a[1000], c_out[1000], d[10];
  uint16_t b[1000];
  for (int i = 0; i < 1000; i++) {
    a[i] = (float)((i * 37 % 200) - 100) / 50.0f;
    b[i] = kl_f32_to_f16((float)((i % 7) - 3));
  }
  void *pa = a, *pb = b, *pc = c_out, *pd = d;
  void *args[] = { &pa, &pb, &pc, &pd };
  size_t sizes[] = { 8, 8, 8, 8 };
  uint32_t grid[3] = { 10, 1, 1 }, block[3] = { 1, 1, 1 };
  CHECK(kl_device_launch(k, grid, block, 0, args, sizes, 4) == KL_OK);
  double maxerr = 0, sumerr = 0;
  for (int blk = 0; blk < 10; blk++) {
    double s = 0;
    for (int i = blk * 100; i < blk * 100 + 100; i++) {
      double want = tanh((double)a[i]) + 2.0 * ((i % 7) - 3);
      maxerr = fmax(maxerr, fabs(c_out[i] - want));
      if ((float)want > 0) s += c_out[i];
    }
    sumerr = fmax(sumerr, fabs(d[blk] - s));
  }
  CHECK(maxerr < 1e-6);
  CHECK(sumerr < 1e-3);
  kl_device_destroy(dev);
  LLVMDisposeModule(lm);
  LLVMContextDispose(c);
  printf("host JIT: max error %.2g, sums %.2g\n", maxerr, sumerr);
}

static void test_gpu_emit(kl_op *m, const char *target, const char *needle) {
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef lm;
  CHECK(kl_lower_to_llvm(m, kl_target_lookup(target), c, &lm) == KL_OK);
  kl_binary bin = { 0 };
  char err[1024] = "";
  kl_status st = kl_codegen_emit_asm(lm, target, NULL, &bin, err, sizeof err);
  CHECK(st == KL_OK);
  if (st != KL_OK) fprintf(stderr, "%s: %s\n", target, err);
  CHECK(bin.data && strstr((char *)bin.data, needle));
  kl_binary_free(&bin);
  LLVMDisposeModule(lm);
  LLVMContextDispose(c);
  printf("%s: emitted, contains '%s'\n", target, needle);
}

/* pow: float (C semantics) and integer (graph semantics) against the scalar rules. */
static const char *pow_text = "\"func.func\"() ({\n"
                              "^bb0(%x: buffer<8xf32>, %y: buffer<8xf32>, %i: buffer<8xi32>, %e: buffer<8xi32>, %o: "
                              "buffer<8xf32>, %oi: buffer<8xi32>):\n"
                              "  %c0 = \"arith.constant\"() {value = 0 : index} : () -> index\n"
                              "  %c1 = \"arith.constant\"() {value = 1 : index} : () -> index\n"
                              "  %c8 = \"arith.constant\"() {value = 8 : index} : () -> index\n"
                              "  \"scf.for\"(%c0, %c8, %c1) ({\n"
                              "  ^bb0(%k: index):\n"
                              "    %a = \"rock.load\"(%x, %k) : (buffer<8xf32>, index) -> f32\n"
                              "    %b = \"rock.load\"(%y, %k) : (buffer<8xf32>, index) -> f32\n"
                              "    %p = \"math.powf\"(%a, %b) : (f32, f32) -> f32\n"
                              "    \"rock.store\"(%p, %o, %k) : (f32, buffer<8xf32>, index) -> ()\n"
                              "    %m = \"rock.load\"(%i, %k) : (buffer<8xi32>, index) -> i32\n"
                              "    %n = \"rock.load\"(%e, %k) : (buffer<8xi32>, index) -> i32\n"
                              "    %q = \"math.ipowi\"(%m, %n) : (i32, i32) -> i32\n"
                              "    \"rock.store\"(%q, %oi, %k) : (i32, buffer<8xi32>, index) -> ()\n"
                              "    %lt = \"arith.cmpi\"(%m, %n) {predicate = \"lt\"} : (i32, i32) -> i1\n"
                              "    \"scf.yield\"() : () -> ()\n"
                              "  }) : (index, index, index) -> ()\n"
                              "  \"func.return\"() : () -> ()\n"
                              "}) {block_size = 1, grid_size = 1, kernel, sym_name = \"powk\"} : () -> ()\n";

int64_t kl_ipow(int64_t x, int64_t e);
static void test_pow(kl_ctx *ctx) {
  kl_op *m = kl_parse_module(ctx, pow_text, strlen(pow_text), "pow.kir");
  CHECK(m && kl_verify(m) == KL_OK);
  if (!m) return;
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef lm;
  CHECK(kl_lower_to_llvm(m, kl_target_lookup("host"), c, &lm) == KL_OK);
  char err[256];
  kl_device *dev = kl_device_open("host", err, sizeof err);
  kl_dev_module *mod = NULL;
  kl_dev_kernel *k = NULL;
  CHECK(kl_device_load_llvm(dev, lm, &mod) == KL_OK && kl_device_get_kernel(mod, "powk", &k) == KL_OK);
  float x[8] = { 2, 0.5f, -2, -2, 0, 3.7f, -1.5f, 10 }, y[8] = { 10, -3, 3, 2, 0, 1.3f, 0.5f, -2 }, o[8];
  int32_t xi[8] = { 2, -3, 1, -1, -1, 0, 5, 7 }, ei[8] = { 10, 3, -4, -3, -2, 0, -1, 0 }, oi[8];
  void *p[] = { x, y, xi, ei, o, oi };
  void *args[] = { &p[0], &p[1], &p[2], &p[3], &p[4], &p[5] };
  size_t sizes[] = { 8, 8, 8, 8, 8, 8 };
  uint32_t one[3] = { 1, 1, 1 };
  CHECK(kl_device_launch(k, one, one, 0, args, sizes, 6) == KL_OK);
  double worst = 0;
  for (int i = 0; i < 8; i++) {
    double want = pow((double)x[i], (double)y[i]);
    if (isnan(want)) {
      CHECK(isnan(o[i]));
      continue;
    }
    worst = fmax(worst, fabs(o[i] - want) / fmax(fabs(want), 1e-30));
    CHECK(oi[i] == (int32_t)kl_ipow(xi[i], ei[i]));
  }
  CHECK(worst < 2e-6);
  kl_device_destroy(dev);
  test_gpu_emit(m, "sm_90", ".entry powk");
  test_gpu_emit(m, "gfx942", "powk:");
  LLVMDisposeModule(lm);
  LLVMContextDispose(c);
  printf("pow: worst relative error %.2g\n", worst);
}

int main(void) {
  kl_ctx *ctx = kl_test_ctx();
  kl_op *m = kl_parse_module(ctx, kernel_text, strlen(kernel_text), "vk.kir");
  CHECK(m != NULL);
  if (!m) {
    char *d = kl_diag_take(ctx);
    fprintf(stderr, "%s", d);
    free(d);
    return 1;
  }
  CHECK(kl_verify(m) == KL_OK);
  test_host(m);
  test_gpu_emit(m, "sm_90", ".entry vk");
  test_gpu_emit(m, "gfx942", "vk:");
  test_pow(ctx);
  /* the AMDGPU barrier as inline assembly where LLVM 19 has no back-off barrier (lower_barrier.h;
   * spec/lua/amd_isa_spec.lua checks the code objects of the compile targets) */
  static const char *const drains[] = { "gfx803", "gfx900", "gfx906", "gfx908", "gfx90c", "gfx1100", "gfx1151" };
  static const char *const keeps[] = {
    "gfx90a", "gfx940", "gfx942", "gfx1030", "gfx1010", "gfx1200", "sm_90", "", NULL
  };
  for (size_t i = 0; i < sizeof drains / sizeof *drains; i++) CHECK(kl_amdgpu_barrier_drains(drains[i]));
  for (size_t i = 0; i < sizeof keeps / sizeof *keeps; i++) CHECK(!kl_amdgpu_barrier_drains(keeps[i]));
  /* an op that is not loop level is a located error */
  const char *bad =
      "\"func.func\"() ({\n^bb0(%a: buffer<4xf32>):\n  \"rock.fill\"(%a) {value = 0.0} : (buffer<4xf32>) -> ()\n"
      "  \"func.return\"() : () -> ()\n}) {kernel, sym_name = \"bad\"} : () -> ()\n";
  kl_op *mb = kl_parse_module(ctx, bad, strlen(bad), "bad.kir");
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef lm;
  CHECK(mb && kl_lower_to_llvm(mb, kl_target_lookup("host"), c, &lm) == KL_ERR);
  char *d = kl_diag_take(ctx);
  CHECK(strstr(d, "bad.kir:3:3: error: lower-to-llvm (host): 'rock.fill'") != NULL);
  free(d);
  LLVMContextDispose(c);
  kl_ctx_destroy(ctx);
  printf("test_lower_llvm: %d checks passed, %d failed\n", checks - failures, failures);
  return failures != 0;
}
