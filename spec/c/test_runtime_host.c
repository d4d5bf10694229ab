/* test_runtime_host.c — the device layer on the host device, without a GPU:
 * opening devices ("host", "auto" -> host, "hip" / "cuda" -> clear errors), memory and
 * copies, the host kernel ABI (kernels built with the LLVM C API, JIT-compiled by ORC,
 * run on the thread pool and checked numerically on random inputs), 3-D grids, libm
 * calls, f16 / bf16 conversions, loading bitcode and IR text, same-named kernels in two
 * modules, two LLVM contexts and two JITs in one process, events, launch validation,
 * the thread pool and the backend registry. Where a GPU is present (tag: gpu), the
 * same device layer runs vadd, dynamic shared memory and (NVIDIA) mma.sync kernels
 * compiled through codegen_target on it; without one that group prints "skipped". */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen_target.h"
#include "core/dtype.h"
#include "runtime/device.h"
#include "runtime/device_host_loader.h"
#include "driver/load_llvm.h"
#include <llvm-c/BitWriter.h>
#include <llvm-c/IRReader.h>
#include "runtime/threadpool.h"

#include "check.h"
#include "llvm_kernels.h"

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd32(void) { return (uint32_t)(xorshift64(&g_rng) >> 11); }
static float rndf(void) { return (float)((double)rnd32() / 4294967296.0 * 4.0 - 2.0); }

/* ---- host kernels (llvm_kernels.h, LK_HOST): void name(ptr args, ptr block_id, ptr grid) ---- */

static LLVMValueRef c64(lk *k, long long v) { return LLVMConstInt(k->i64, (unsigned long long)v, 1); }

/* The value argument i points to: load (load args[i]) as type t. */
static LLVMValueRef hk_arg(lk *k, int i, LLVMTypeRef t) {
  LLVMValueRef idx = c64(k, i);
  LLVMValueRef slot = LLVMBuildInBoundsGEP2(k->b, k->ptr, LLVMGetParam(k->fn, 0), &idx, 1, "");
  LLVMValueRef p = LLVMBuildLoad2(k->b, k->ptr, slot, "");
  return LLVMBuildLoad2(k->b, t, p, "");
}

static LLVMValueRef hk_i64_at(lk *k, LLVMValueRef base, int i) {
  LLVMValueRef idx = c64(k, i);
  return LLVMBuildLoad2(k->b, k->i64, LLVMBuildInBoundsGEP2(k->b, k->i64, base, &idx, 1, ""), "");
}

/* for (t = 0; t < n; t++) body(t): returns t (i64) with the builder in the body; hk_loop_end closes. */
typedef struct hk_loop {
  LLVMBasicBlockRef head, body, exit;
  LLVMValueRef t, n;
} hk_loop;

static LLVMValueRef hk_loop_begin(lk *k, hk_loop *l, LLVMValueRef n) {
  LLVMBasicBlockRef pre = LLVMGetInsertBlock(k->b);
  l->head = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "head");
  l->body = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "body");
  l->exit = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "exit");
  l->n = n;
  LLVMBuildBr(k->b, l->head);
  LLVMPositionBuilderAtEnd(k->b, l->head);
  l->t = LLVMBuildPhi(k->b, k->i64, "t");
  LLVMValueRef zero = c64(k, 0);
  LLVMAddIncoming(l->t, &zero, &pre, 1);
  LLVMBuildCondBr(k->b, LLVMBuildICmp(k->b, LLVMIntSLT, l->t, n, ""), l->body, l->exit);
  LLVMPositionBuilderAtEnd(k->b, l->body);
  return l->t;
}

static void hk_loop_end(lk *k, hk_loop *l) {
  LLVMValueRef next = LLVMBuildAdd(k->b, l->t, c64(k, 1), "");
  LLVMBasicBlockRef cur = LLVMGetInsertBlock(k->b);
  LLVMAddIncoming(l->t, &next, &cur, 1);
  LLVMBuildBr(k->b, l->head);
  LLVMPositionBuilderAtEnd(k->b, l->exit);
}

/* vadd(a, b, c, n): one workgroup = 256 elements; c[i] = a[i] + b[i] * scale for i < n. */
static void build_vadd(lk *k, const char *name, float scale) {
  lk_kernel(k, LK_HOST, name, NULL, 0, NULL);
  LLVMValueRef a = hk_arg(k, 0, k->ptr), bb = hk_arg(k, 1, k->ptr), c = hk_arg(k, 2, k->ptr);
  LLVMValueRef n = LLVMBuildSExt(k->b, hk_arg(k, 3, k->i32), k->i64, "");
  LLVMValueRef bx = hk_i64_at(k, LLVMGetParam(k->fn, 1), 0);
  LLVMValueRef base = LLVMBuildMul(k->b, bx, c64(k, 256), "");
  hk_loop l;
  LLVMValueRef t = hk_loop_begin(k, &l, c64(k, 256));
  LLVMValueRef i = LLVMBuildAdd(k->b, base, t, "");
  LLVMBasicBlockRef doit = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "in");
  LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "cont");
  LLVMBuildCondBr(k->b, LLVMBuildICmp(k->b, LLVMIntSLT, i, n, ""), doit, cont);
  LLVMPositionBuilderAtEnd(k->b, doit);
  LLVMValueRef va = LLVMBuildLoad2(k->b, k->f32, LLVMBuildInBoundsGEP2(k->b, k->f32, a, &i, 1, ""), "");
  LLVMValueRef vb = LLVMBuildLoad2(k->b, k->f32, LLVMBuildInBoundsGEP2(k->b, k->f32, bb, &i, 1, ""), "");
  LLVMValueRef s = LLVMBuildFAdd(k->b, va, LLVMBuildFMul(k->b, vb, LLVMConstReal(k->f32, scale), ""), "");
  LLVMBuildStore(k->b, s, LLVMBuildInBoundsGEP2(k->b, k->f32, c, &i, 1, ""));
  LLVMBuildBr(k->b, cont);
  LLVMPositionBuilderAtEnd(k->b, cont);
  hk_loop_end(k, &l);
  LLVMBuildRetVoid(k->b);
}

static void run_vadd(kl_device *dev, kl_dev_kernel *kern, int n, float scale, const char *what) {
  size_t bytes = (size_t)n * sizeof(float);
  float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
  for (int i = 0; i < n; i++) {
    a[i] = rndf();
    b[i] = rndf();
    c[i] = 12345.0f;
  }
  void *da, *db, *dc;
  CHECK(kl_device_alloc(dev, bytes, &da) == KL_OK, "%s", kl_device_error(dev));
  CHECK(kl_device_alloc(dev, bytes, &db) == KL_OK, "%s", kl_device_error(dev));
  CHECK(kl_device_alloc(dev, bytes + 64, &dc) == KL_OK, "%s", kl_device_error(dev));
  kl_device_copy_htod(dev, da, a, bytes);
  kl_device_copy_htod(dev, db, b, bytes);
  /* the guard after the end must stay untouched */
  CHECK(kl_device_fill(dev, dc, 0x7fc00000u, 4, (size_t)n + 16) == KL_OK, "%s", kl_device_error(dev));
  int32_t nn = n;
  void *args[4] = { &da, &db, &dc, &nn };
  size_t sizes[4] = { 8, 8, 8, 4 };
  uint32_t grid[3] = { (uint32_t)((n + 255) / 256), 1, 1 }, block[3] = { 256, 1, 1 };
  CHECK(kl_device_launch(kern, grid, block, 0, args, sizes, 4) == KL_OK, "%s", kl_device_error(dev));
  CHECK(kl_device_synchronize(dev) == KL_OK, "sync");
  float *out = malloc(bytes + 64);
  CHECK(kl_device_copy_dtoh(dev, out, dc, bytes + 64) == KL_OK, "dtoh");
  int bad = 0;
  for (int i = 0; i < n; i++)
    if (out[i] != a[i] + b[i] * scale) bad++;
  CHECK(bad == 0, "%s: %d of %d wrong (first: %g vs %g)", what, bad, n, out[0], a[0] + b[0] * scale);
  uint32_t guard;
  memcpy(&guard, &out[n], 4);
  CHECK(guard == 0x7fc00000u, "%s: wrote past n", what);
  kl_device_free(dev, da);
  kl_device_free(dev, db);
  kl_device_free(dev, dc);
  free(a);
  free(b);
  free(c);
  free(out);
}

/* The host device, or NULL (test_open reports why). */
static kl_device *open_host(void) {
  char err[256];
  return kl_device_open("host", err, sizeof err);
}

/* JIT-loads k's module into d (one check), ends k; returns its kernel `name` or NULL. */
static kl_dev_kernel *load_kernel(kl_device *d, lk *k, const char *name) {
  kl_dev_module *m = NULL;
  kl_dev_kernel *kern = NULL;
  CHECK(kl_device_load_llvm(d, k->mod, &m) == KL_OK, "%s", kl_device_error(d));
  lk_end(k);
  if (m && kl_device_get_kernel(m, name, &kern) != KL_OK) kern = NULL;
  return kern;
}

/* ---- tests ---- */

static void test_open(void) {
  group_begin();
  char err[1024];
  kl_device *d = kl_device_open("host", err, sizeof err);
  CHECK(d != NULL, "host: %s", err);
  if (d) {
    const kl_device_info *in = kl_device_get_info(d);
    CHECK(in->kind == KL_DEVICE_HOST && strcmp(in->backend, "host") == 0 && strcmp(in->arch, "host") == 0, "info %s %s",
          in->backend, in->arch);
    CHECK(in->compute_units >= 1 && in->total_mem > 0 && strstr(in->name, "host"), "info %s", in->name);
    kl_device_destroy(d);
  }
  /* What GPUs are there? (none in CI; the GPU group below runs where there are) */
  char hip_err[512] = "", cuda_err[512] = "";
  kl_device *hip = kl_device_open("hip", hip_err, sizeof hip_err);
  kl_device *cuda = kl_device_open("cuda", cuda_err, sizeof cuda_err);
  kl_device_kind want = hip ? KL_DEVICE_HIP : cuda ? KL_DEVICE_CUDA : KL_DEVICE_HOST;
  if (!hip)
    CHECK(strncmp(hip_err, "hip: ", 5) == 0 &&
              (strstr(hip_err, "libamdhip64.so not found") || strstr(hip_err, "no AMD GPU")),
          "hip error: %s", hip_err);
  if (!cuda)
    CHECK(strncmp(cuda_err, "cuda: ", 6) == 0 && (strstr(cuda_err, "not found") || strstr(cuda_err, "no NVIDIA GPU")),
          "cuda error: %s", cuda_err);
  kl_device_destroy(hip);
  kl_device_destroy(cuda);
  d = kl_device_open("auto", err, sizeof err);
  CHECK(d != NULL, "auto: %s", err);
  if (d) {
    const kl_device_info *in = kl_device_get_info(d);
    CHECK(in->kind == want, "auto picked %s", in->backend);
    if (want == KL_DEVICE_HOST) /* and says why the GPUs were skipped */
      CHECK(strstr(in->note, "hip:") && strstr(in->note, "cuda:"), "note: %s", in->note);
    kl_device_destroy(d);
  }
  d = kl_device_open("cuda:3", err, sizeof err);
  CHECK(d == NULL && strncmp(err, "cuda: ", 6) == 0, "cuda:3: %s", err);
  d = kl_device_open("tpu", err, sizeof err);
  CHECK(d == NULL && strstr(err, "unknown device 'tpu'") && strstr(err, "host"), "tpu: %s", err);
  d = kl_device_open("host:1", err, sizeof err);
  CHECK(d == NULL && strstr(err, "host:1"), "host:1: %s", err);
  d = kl_device_open("cuda:x", err, sizeof err);
  CHECK(d == NULL && strstr(err, "ordinal"), "cuda:x: %s", err);
  d = kl_device_open("host:0", err, sizeof err);
  CHECK(d != NULL, "host:0: %s", err);
  kl_device_destroy(d);
  group_end("open: host, auto (-> host without GPUs), hip/cuda errors, bad names");
}

static void test_memory(void) {
  group_begin();
  kl_device *d = open_host();
  if (!d) return;
  void *p = NULL, *q = NULL, *z = NULL;
  CHECK(kl_device_alloc(d, 1000, &p) == KL_OK && p, "alloc");
  CHECK(kl_device_alloc(d, 1000, &q) == KL_OK && q, "alloc");
  CHECK(kl_device_alloc(d, 0, &z) == KL_OK && z && z != p && z != q, "zero alloc");
  CHECK(kl_device_bytes_in_use(d) == 2000, "in use %zu", kl_device_bytes_in_use(d));
  unsigned char src[1000], dst[1000];
  for (int i = 0; i < 1000; i++) src[i] = (unsigned char)rnd32();
  CHECK(kl_device_copy_htod(d, p, src, 1000) == KL_OK, "htod");
  CHECK(kl_device_copy_dtod(d, q, p, 1000) == KL_OK, "dtod");
  CHECK(kl_device_copy_dtoh(d, dst, q, 1000) == KL_OK && memcmp(src, dst, 1000) == 0, "round trip");
  CHECK(kl_device_fill(d, (char *)q + 2, 0xbeef, 2, 10) == KL_OK, "fill16");
  kl_device_copy_dtoh(d, dst, q, 1000);
  uint16_t h;
  memcpy(&h, dst + 2 + 18, 2);
  CHECK(h == 0xbeef && dst[22] == src[22] && dst[1] == src[1], "fill16 content");
  CHECK(kl_device_fill(d, (char *)q + 1, 0, 4, 4) == KL_ERR && strstr(kl_device_error(d), "aligned"), "misaligned: %s",
        kl_device_error(d));
  CHECK(kl_device_fill(d, q, 0, 3, 4) == KL_ERR, "pattern 3 accepted");
  CHECK(kl_device_copy_htod(d, NULL, src, 4) == KL_ERR, "NULL copy");
  CHECK(kl_device_free(d, (char *)p + 8) == KL_ERR && strstr(kl_device_error(d), "not a live allocation"),
        "interior free: %s", kl_device_error(d));
  CHECK(kl_device_free(d, p) == KL_OK, "free");
  CHECK(kl_device_free(d, p) == KL_ERR, "double free accepted");
  CHECK(kl_device_bytes_in_use(d) == 1000, "in use %zu", kl_device_bytes_in_use(d));
  /* many allocations: table growth and removal */
  void *ps[300];
  for (int i = 0; i < 300; i++) kl_device_alloc(d, (size_t)i + 1, &ps[i]);
  int ok = 1;
  for (int i = 0; i < 300; i += 2) ok &= kl_device_free(d, ps[i]) == KL_OK;
  for (int i = 1; i < 300; i += 2) ok &= kl_device_free(d, ps[i]) == KL_OK;
  CHECK(ok && kl_device_bytes_in_use(d) == 1000, "bulk free, in use %zu", kl_device_bytes_in_use(d));
  kl_device_destroy(d); /* q and z still allocated: destroy frees them (ASan would see a leak) */
  group_end("memory: alloc/copy/fill/free, bad frees, tracking");
}

static void test_vadd(void) {
  group_begin();
  kl_device *d = open_host();
  if (!d) return;
  lk k;
  lk_begin(&k, NULL, "vadd_mod");
  build_vadd(&k, "vadd", 1.0f);
  kl_dev_module *m = NULL;
  CHECK(kl_device_load_llvm(d, k.mod, &m) == KL_OK, "load: %s", kl_device_error(d));
  lk_end(&k); /* the JIT has its own copy */
  kl_dev_kernel *kern = NULL, *again = NULL;
  if (m) {
    CHECK(kl_device_get_kernel(m, "vadd", &kern) == KL_OK, "get: %s", kl_device_error(d));
    CHECK(kl_device_get_kernel(m, "vadd", &again) == KL_OK && again == kern, "same handle");
    CHECK(kl_device_get_kernel(m, "nope", &again) == KL_ERR && strstr(kl_device_error(d), "nope"), "missing: %s",
          kl_device_error(d));
  }
  if (kern) {
    static const int sizes[] = { 1, 255, 256, 257, 1000, 65536 + 77 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) run_vadd(d, kern, sizes[i], 1.0f, "vadd");
    /* launch validation */
    void *p = NULL;
    int32_t n = 1;
    void *args[4] = { &p, &p, &p, &n };
    uint32_t g0[3] = { 0, 1, 1 }, g1[3] = { 1, 1, 1 }, b1[3] = { 1, 1, 1 }, bbig[3] = { 2048, 1, 1 };
    CHECK(kl_device_launch(kern, g0, b1, 0, args, NULL, 4) == KL_ERR && strstr(kl_device_error(d), "grid"),
          "grid 0: %s", kl_device_error(d));
    CHECK(kl_device_launch(kern, g1, bbig, 0, args, NULL, 4) == KL_ERR && strstr(kl_device_error(d), "threads"),
          "block too big: %s", kl_device_error(d));
    CHECK(kl_device_launch(kern, g1, b1, (size_t)1 << 30, args, NULL, 4) == KL_ERR &&
              strstr(kl_device_error(d), "shared"),
          "shared too big: %s", kl_device_error(d));
    args[1] = NULL;
    CHECK(kl_device_launch(kern, g1, b1, 0, args, NULL, 4) == KL_ERR && strstr(kl_device_error(d), "argument 1"),
          "NULL arg: %s", kl_device_error(d));
    CHECK(kl_device_launch(kern, g1, b1, 0, NULL, NULL, 4) == KL_ERR, "no args");
    args[1] = &p;
    uint32_t ghuge[3] = { 0xffffffffu, 0xffffffffu, 0xffffffffu };
    CHECK(kl_device_launch(kern, ghuge, b1, 0, args, NULL, 4) == KL_ERR && strstr(kl_device_error(d), "too many"),
          "huge grid: %s", kl_device_error(d));
  }
  kl_device_unload(m);
  kl_device_destroy(d);
  group_end("vadd: LLVM C API kernel, JIT, thread pool, random inputs, launch checks");
}

/* ids(out_count, out_code): per workgroup, count[lin] += 1 and code[lin] = x + 1000 y + 1000000 z
 * with lin = (z * gy + y) * gx + x. */
static void test_grid3d(void) {
  group_begin();
  kl_device *d = open_host();
  if (!d) return;
  lk k;
  lk_begin(&k, NULL, "grid_mod");
  lk_kernel(&k, LK_HOST, "ids", NULL, 0, NULL);
  LLVMValueRef cnt = hk_arg(&k, 0, k.ptr), code = hk_arg(&k, 1, k.ptr);
  LLVMValueRef bid = LLVMGetParam(k.fn, 1), grid = LLVMGetParam(k.fn, 2);
  LLVMValueRef x = hk_i64_at(&k, bid, 0), y = hk_i64_at(&k, bid, 1), z = hk_i64_at(&k, bid, 2);
  LLVMValueRef gx = hk_i64_at(&k, grid, 0), gy = hk_i64_at(&k, grid, 1);
  LLVMValueRef lin = LLVMBuildAdd(
      k.b, LLVMBuildMul(k.b, LLVMBuildAdd(k.b, LLVMBuildMul(k.b, z, gy, ""), y, ""), gx, ""), x, "");
  LLVMValueRef pc = LLVMBuildInBoundsGEP2(k.b, k.i32, cnt, &lin, 1, "");
  LLVMBuildStore(k.b, LLVMBuildAdd(k.b, LLVMBuildLoad2(k.b, k.i32, pc, ""), LLVMConstInt(k.i32, 1, 0), ""), pc);
  LLVMValueRef cv = LLVMBuildAdd(k.b, LLVMBuildAdd(k.b, x, LLVMBuildMul(k.b, y, c64(&k, 1000), ""), ""),
                                 LLVMBuildMul(k.b, z, c64(&k, 1000000), ""), "");
  LLVMBuildStore(k.b, cv, LLVMBuildInBoundsGEP2(k.b, k.i64, code, &lin, 1, ""));
  LLVMBuildRetVoid(k.b);
  kl_dev_kernel *kern = load_kernel(d, &k, "ids");
  if (kern) {
    uint32_t grid3[3] = { 7, 5, 3 }, block[3] = { 1, 1, 1 };
    int total = 7 * 5 * 3;
    int32_t *hc = calloc((size_t)total, 4);
    int64_t *hcode = calloc((size_t)total, 8);
    void *dc, *dcode;
    kl_device_alloc(d, (size_t)total * 4, &dc);
    kl_device_alloc(d, (size_t)total * 8, &dcode);
    kl_device_fill(d, dc, 0, 4, (size_t)total);
    void *args[2] = { &dc, &dcode };
    for (int rep = 0; rep < 3; rep++)
      CHECK(kl_device_launch(kern, grid3, block, 0, args, NULL, 2) == KL_OK, "%s", kl_device_error(d));
    kl_device_copy_dtoh(d, hc, dc, (size_t)total * 4);
    kl_device_copy_dtoh(d, hcode, dcode, (size_t)total * 8);
    int bad = 0;
    for (int zz = 0; zz < 3; zz++)
      for (int yy = 0; yy < 5; yy++)
        for (int xx = 0; xx < 7; xx++) {
          int l = (zz * 5 + yy) * 7 + xx;
          if (hc[l] != 3 || hcode[l] != xx + 1000 * yy + 1000000 * zz) bad++;
        }
    CHECK(bad == 0, "%d of %d workgroups wrong", bad, total);
    free(hc);
    free(hcode);
  }
  kl_device_destroy(d);
  group_end("grid3d: every workgroup once per launch, ids and grid passed");
}

/* rsum(in, out): workgroup b: tile[t] = expf(in[256 b + t]) in a local array, then
 * out[b] = sum(tile) — local memory as workgroup memory, and a libm call. */
static void test_local_and_libm(void) {
  group_begin();
  kl_device *d = open_host();
  if (!d) return;
  lk k;
  lk_begin(&k, NULL, "rsum_mod");
  LLVMTypeRef f32 = k.f32;
  LLVMValueRef expf_fn = LLVMAddFunction(k.mod, "expf", LLVMFunctionType(f32, &f32, 1, 0));
  lk_kernel(&k, LK_HOST, "rsum", NULL, 0, NULL);
  LLVMValueRef in = hk_arg(&k, 0, k.ptr), out = hk_arg(&k, 1, k.ptr);
  LLVMValueRef b = hk_i64_at(&k, LLVMGetParam(k.fn, 1), 0);
  LLVMTypeRef arr = LLVMArrayType2(f32, 256);
  LLVMValueRef tile = LLVMBuildAlloca(k.b, arr, "tile");
  LLVMValueRef base = LLVMBuildMul(k.b, b, c64(&k, 256), "");
  hk_loop l1;
  LLVMValueRef t = hk_loop_begin(&k, &l1, c64(&k, 256));
  LLVMValueRef gi = LLVMBuildAdd(k.b, base, t, "");
  LLVMValueRef v = LLVMBuildLoad2(k.b, f32, LLVMBuildInBoundsGEP2(k.b, f32, in, &gi, 1, ""), "");
  LLVMValueRef e = LLVMBuildCall2(k.b, LLVMFunctionType(f32, &f32, 1, 0), expf_fn, &v, 1, "");
  LLVMValueRef idx[2] = { c64(&k, 0), t };
  LLVMBuildStore(k.b, e, LLVMBuildInBoundsGEP2(k.b, arr, tile, idx, 2, ""));
  hk_loop_end(&k, &l1);
  /* second phase ("after the barrier"): sequential sum */
  LLVMValueRef acc = LLVMBuildAlloca(k.b, f32, "acc");
  LLVMBuildStore(k.b, LLVMConstReal(f32, 0), acc);
  hk_loop l2;
  t = hk_loop_begin(&k, &l2, c64(&k, 256));
  idx[1] = t;
  LLVMValueRef s = LLVMBuildFAdd(k.b, LLVMBuildLoad2(k.b, f32, acc, ""),
                                 LLVMBuildLoad2(k.b, f32, LLVMBuildInBoundsGEP2(k.b, arr, tile, idx, 2, ""), ""), "");
  LLVMBuildStore(k.b, s, acc);
  hk_loop_end(&k, &l2);
  LLVMBuildStore(k.b, LLVMBuildLoad2(k.b, f32, acc, ""), LLVMBuildInBoundsGEP2(k.b, f32, out, &b, 1, ""));
  LLVMBuildRetVoid(k.b);
  kl_dev_kernel *kern = load_kernel(d, &k, "rsum");
  if (kern) {
    enum { NB = 97 };
    float *hin = malloc(NB * 256 * 4), hout[NB];
    for (int i = 0; i < NB * 256; i++) hin[i] = rndf();
    void *din, *dout;
    kl_device_alloc(d, NB * 256 * 4, &din);
    kl_device_alloc(d, NB * 4, &dout);
    kl_device_copy_htod(d, din, hin, NB * 256 * 4);
    void *args[2] = { &din, &dout };
    uint32_t grid[3] = { NB, 1, 1 }, block[3] = { 256, 1, 1 };
    CHECK(kl_device_launch(kern, grid, block, 1024, args, NULL, 2) == KL_OK, "%s", kl_device_error(d));
    kl_device_copy_dtoh(d, hout, dout, NB * 4);
    double maxrel = 0;
    for (int bb = 0; bb < NB; bb++) {
      double ref = 0;
      for (int i = 0; i < 256; i++) ref += exp((double)hin[bb * 256 + i]);
      double rel = fabs(hout[bb] - ref) / ref;
      if (rel > maxrel) maxrel = rel;
    }
    CHECK(maxrel < 1e-4, "max relative error %g", maxrel);
    free(hin);
  }
  kl_device_destroy(d);
  group_end("local memory + expf from the process: workgroup sums match");
}

/* Reference conversions for the f16 / bf16 checks (independent of jit_host.c). */
static uint16_t ref_f32_to_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  if ((u & 0x7fffffff) > 0x7f800000) return 0x7fc0; /* any NaN */
  if ((u & 0x7fffffff) == 0x7f800000) return (uint16_t)(u >> 16);
  uint32_t lo = u & 0xffff0000u; /* truncated toward zero */
  float flo;
  memcpy(&flo, &lo, 4);
  int ex = (int)((lo >> 23) & 0xff);
  double ulp = ldexp(1.0, (ex ? ex : 1) - 127 - 7);
  double dl = fabs((double)x - (double)flo), dh = ulp - dl;
  uint16_t l = (uint16_t)(lo >> 16), h = (uint16_t)(l + 1); /* next magnitude (inf after the max) */
  if (dl < dh) return l;
  if (dh < dl) return h;
  return (l & 1) ? h : l;
}

static __attribute__((unused)) bool is_nan16(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
static bool is_nanbf(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f); }

static float special_f32(int i) {
  static const float v[] = { 0.0f,          -0.0f,          1.0f,           -1.0f,    65504.0f, 65519.99f,
                             65520.0f,      70000.0f,       5.96e-8f,       2.98e-8f, 2.99e-8f, 6.1e-5f,
                             6.0e-5f,       1e-10f,         3.0e38f,        1e30f,    0.1f,     0.333333f,
                             1.0009765625f, 1.00048828125f, 1.00146484375f, -2.5e-6f };
  return v[i % (int)(sizeof v / sizeof v[0])];
}

/* cvt(in_f32, in_f64, out_h, out_hh, out_bf, out_f, n): JIT'd fptrunc / fpext. */
static void test_half(void) {
  group_begin();
  /* core/dtype.h's conversions (the JIT's libcall helpers) against the compiler's own _Float16 ones */
  int bad = 0, badd = 0, badb = 0, bade = 0;
  for (int i = 0; i < 200000; i++) {
    float f;
    if (i < 22) {
      f = special_f32(i);
    } else if (i % 3 == 0) {
      uint32_t u = rnd32();
      memcpy(&f, &u, 4);
    } else {
      f = ldexpf(rndf(), (int)(rnd32() % 40) - 28);
    }
    double dd = (double)f * (1.0 + ldexp((double)(rnd32() % 1024), -40));
    (void)dd; /* only used where the compiler has _Float16 (not clang 14) */
#ifdef __FLT16_MAX__
    _Float16 hr = (_Float16)f, hd = (_Float16)dd;
    uint16_t br, bdr;
    memcpy(&br, &hr, 2);
    memcpy(&bdr, &hd, 2);
    uint16_t mine = kl_f32_to_f16(f), mined = kl_f64_to_f16(dd);
    if (mine != br && !(is_nan16(mine) && is_nan16(br))) bad++;
    if (!isnan(dd) && mined != bdr) badd++;
    float back = kl_f16_to_f32(br);
    if (!is_nan16(br) && back != (float)hr) bade++;
#endif
    uint16_t bm = kl_f32_to_bf16(f), bref = ref_f32_to_bf16(f);
    if (bm != bref && !(is_nanbf(bm) && is_nanbf(bref))) badb++;
    uint16_t bmd = kl_f64_to_bf16((double)f);
    if (bmd != bm && !(is_nanbf(bmd) && is_nanbf(bm))) badb++;
  }
  CHECK(bad == 0, "f32->f16: %d mismatches vs _Float16", bad);
  CHECK(badd == 0, "f64->f16: %d mismatches vs _Float16", badd);
  CHECK(bade == 0, "f16->f32: %d mismatches", bade);
  CHECK(badb == 0, "bf16: %d mismatches", badb);

  /* and JIT'd code doing the conversions gets the same bits */
  kl_device *d = open_host();
  if (!d) return;
  lk k;
  lk_begin(&k, NULL, "cvt_mod");
  lk_kernel(&k, LK_HOST, "cvt", NULL, 0, NULL);
  LLVMTypeRef f64 = LLVMDoubleTypeInContext(k.ctx), h = LLVMHalfTypeInContext(k.ctx),
              bf = LLVMBFloatTypeInContext(k.ctx);
  LLVMValueRef pin = hk_arg(&k, 0, k.ptr), pind = hk_arg(&k, 1, k.ptr), ph = hk_arg(&k, 2, k.ptr);
  LLVMValueRef phh = hk_arg(&k, 3, k.ptr), pbf = hk_arg(&k, 4, k.ptr), pf = hk_arg(&k, 5, k.ptr);
  LLVMValueRef pbd = hk_arg(&k, 6, k.ptr);
  LLVMValueRef n = LLVMBuildSExt(k.b, hk_arg(&k, 7, k.i32), k.i64, "");
  hk_loop l;
  LLVMValueRef i = hk_loop_begin(&k, &l, n);
  LLVMValueRef x = LLVMBuildLoad2(k.b, k.f32, LLVMBuildInBoundsGEP2(k.b, k.f32, pin, &i, 1, ""), "");
  LLVMValueRef xd = LLVMBuildLoad2(k.b, f64, LLVMBuildInBoundsGEP2(k.b, f64, pind, &i, 1, ""), "");
  LLVMValueRef hx = LLVMBuildFPTrunc(k.b, x, h, "");
  LLVMBuildStore(k.b, hx, LLVMBuildInBoundsGEP2(k.b, h, ph, &i, 1, ""));
  LLVMBuildStore(k.b, LLVMBuildFPTrunc(k.b, xd, h, ""), LLVMBuildInBoundsGEP2(k.b, h, phh, &i, 1, ""));
  LLVMBuildStore(k.b, LLVMBuildFPTrunc(k.b, x, bf, ""), LLVMBuildInBoundsGEP2(k.b, bf, pbf, &i, 1, ""));
  LLVMBuildStore(k.b, LLVMBuildFPExt(k.b, hx, k.f32, ""), LLVMBuildInBoundsGEP2(k.b, k.f32, pf, &i, 1, ""));
  LLVMBuildStore(k.b, LLVMBuildFPTrunc(k.b, xd, bf, ""), LLVMBuildInBoundsGEP2(k.b, bf, pbd, &i, 1, ""));
  hk_loop_end(&k, &l);
  LLVMBuildRetVoid(k.b);
  kl_dev_kernel *kern = load_kernel(d, &k, "cvt");
  if (kern) {
    enum { N = 4096 };
    static float fin[N], fout[N];
    static double din[N];
    static uint16_t oh[N], ohh[N], obf[N], obd[N];
    for (int j = 0; j < N; j++) {
      fin[j] = j < 22 ? special_f32(j) : ldexpf(rndf(), (int)(rnd32() % 40) - 28);
      din[j] = (double)fin[j] * (1.0 + ldexp((double)(rnd32() % 1024), -40));
    }
    /* the host device's memory is host memory: pass the arrays directly */
    void *a0 = fin, *a1 = din, *a2 = oh, *a3 = ohh, *a4 = obf, *a5 = fout, *a6 = obd;
    int32_t nn = N;
    void *args[8] = { &a0, &a1, &a2, &a3, &a4, &a5, &a6, &nn };
    uint32_t g[3] = { 1, 1, 1 };
    CHECK(kl_device_launch(kern, g, g, 0, args, NULL, 8) == KL_OK, "%s", kl_device_error(d));
    int e1 = 0, e2 = 0, e3 = 0, e4 = 0, e5 = 0;
    for (int j = 0; j < N; j++) {
      if (oh[j] != kl_f32_to_f16(fin[j])) e1++;
      if (ohh[j] != kl_f64_to_f16(din[j])) e2++;
      if (obf[j] != kl_f32_to_bf16(fin[j])) e3++;
      if (fout[j] != kl_f16_to_f32(oh[j])) e4++;
      if (obd[j] != kl_f64_to_bf16(din[j])) e5++;
    }
    CHECK(e1 == 0 && e2 == 0 && e3 == 0 && e4 == 0 && e5 == 0,
          "JIT conversions differ: f32->f16 %d, f64->f16 %d, f32->bf16 %d, f16->f32 %d, f64->bf16 %d", e1, e2, e3, e4,
          e5);
  }
  kl_device_destroy(d);
  group_end("half: f16/bf16 helpers vs _Float16 and a reference, JIT'd conversions");
}

static const char *ir_text = "define void @axpy(ptr %args, ptr %bid, ptr %grid) {\n"
                             "entry:\n"
                             "  %pa = load ptr, ptr %args\n"
                             "  %a = load float, ptr %pa\n"
                             "  %s1 = getelementptr ptr, ptr %args, i64 1\n"
                             "  %px = load ptr, ptr %s1\n"
                             "  %x = load ptr, ptr %px\n"
                             "  %s2 = getelementptr ptr, ptr %args, i64 2\n"
                             "  %py = load ptr, ptr %s2\n"
                             "  %y = load ptr, ptr %py\n"
                             "  %b = load i64, ptr %bid\n"
                             "  %xi = getelementptr float, ptr %x, i64 %b\n"
                             "  %yi = getelementptr float, ptr %y, i64 %b\n"
                             "  %xv = load float, ptr %xi\n"
                             "  %yv = load float, ptr %yi\n"
                             "  %m = fmul float %a, %xv\n"
                             "  %r = fadd float %m, %yv\n"
                             "  store float %r, ptr %yi\n"
                             "  ret void\n"
                             "}\n";

/* LLVM IR text -> a host object (what the driver does at compile time); NULL + err. */
static bool host_object_of(const char *text, kl_binary *bin, char *err, size_t errlen) {
  LLVMContextRef c = LLVMContextCreate();
  LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(text, strlen(text), "t.ll");
  LLVMModuleRef m = NULL;
  char *msg = NULL;
  bool ok = !LLVMParseIRInContext(c, buf, &m, &msg); /* takes buf */
  if (!ok) snprintf(err, errlen, "parse: %s", msg ? msg : "?");
  LLVMDisposeMessage(msg);
  if (ok) ok = kl_codegen_emit(m, "host", NULL, bin, err, errlen) == KL_OK;
  if (m) LLVMDisposeModule(m);
  LLVMContextDispose(c);
  return ok;
}

static void test_load_formats(void) {
  group_begin();
  char err[2048];
  kl_device *d = kl_device_open("host", err, sizeof err);
  if (!d) return;
  /* IR text compiled to a host object, loaded untrusted (linked in a child first) */
  kl_dev_module *m = NULL;
  kl_dev_kernel *kern = NULL;
  kl_binary obj = { 0 };
  CHECK(host_object_of(ir_text, &obj, err, sizeof err), "axpy: %s", err);
  CHECK(obj.data && kl_device_load(d, obj.data, obj.size, 0, &m) == KL_OK, "axpy object: %s", kl_device_error(d));
  if (m && kl_device_get_kernel(m, "axpy", &kern) == KL_OK) {
    float x[300], y[300], y0[300], a = 0.75f;
    for (int i = 0; i < 300; i++) {
      x[i] = rndf();
      y[i] = y0[i] = rndf();
    }
    float *px = x, *py = y;
    void *args[3] = { &a, &px, &py };
    size_t sizes[3] = { 4, 8, 8 };
    uint32_t g[3] = { 300, 1, 1 }, b[3] = { 1, 1, 1 };
    CHECK(kl_device_launch(kern, g, b, 0, args, sizes, 3) == KL_OK, "%s", kl_device_error(d));
    int bad = 0;
    for (int i = 0; i < 300; i++)
      if (y[i] != a * x[i] + y0[i]) bad++;
    CHECK(bad == 0, "axpy: %d wrong", bad);
  }
  /* IR text and bitcode are not host binaries any more: refused, saying what they are */
  kl_dev_module *mg = NULL;
  CHECK(kl_device_load(d, ir_text, strlen(ir_text), KL_LOAD_TRUSTED, &mg) == KL_ERR &&
            strstr(kl_device_error(d), "not an ELF relocatable object"),
        "IR text: %s", kl_device_error(d));
  /* an object from codegen_target (what a bundle stores), trusted and not */
  lk k;
  lk_begin(&k, NULL, "bc_mod");
  build_vadd(&k, "vadd", 2.0f);
  kl_binary bin;
  CHECK(kl_codegen_emit(k.mod, "host", NULL, &bin, err, sizeof err) == KL_OK, "host emit: %s", err);
  LLVMMemoryBufferRef bc = LLVMWriteBitcodeToMemoryBuffer(k.mod);
  CHECK(kl_device_load(d, LLVMGetBufferStart(bc), LLVMGetBufferSize(bc), 0, &mg) == KL_ERR &&
            strstr(kl_device_error(d), "is LLVM bitcode"),
        "bitcode: %s", kl_device_error(d));
  LLVMDisposeMemoryBuffer(bc);
  lk_end(&k);
  if (bin.data) {
    CHECK(bin.arch == KL_ARCH_HOST && bin.size > 18 &&
              memcmp(bin.data,
                     "\x7f"
                     "ELF",
                     4) == 0 &&
              ((unsigned char *)bin.data)[16] == 1,
          "not an ELF relocatable object");
    for (int trusted = 0; trusted < 2; trusted++) {
      kl_dev_module *mb = NULL;
      kl_dev_kernel *kb = NULL;
      CHECK(kl_device_load(d, bin.data, bin.size, trusted ? KL_LOAD_TRUSTED : 0, &mb) == KL_OK, "object: %s",
            kl_device_error(d));
      if (mb && kl_device_get_kernel(mb, "vadd", &kb) == KL_OK)
        run_vadd(d, kb, 3000, 2.0f, trusted ? "trusted object vadd" : "object vadd");
    }
    /* a truncated object fails cleanly */
    kl_dev_module *mt = NULL;
    CHECK(kl_device_load(d, bin.data, bin.size / 2, 0, &mt) == KL_ERR && strstr(kl_device_error(d), "host"),
          "truncated object: %s", kl_device_error(d));
    kl_binary_free(&bin);
  }
  /* garbage, empty, unknown flags, an object for another architecture */
  CHECK(kl_device_load(d, "this is not an object", 21, 0, &mg) == KL_ERR && strstr(kl_device_error(d), "not an ELF"),
        "garbage: %s", kl_device_error(d));
  CHECK(kl_device_load(d, "", 0, 0, &mg) == KL_ERR, "empty");
  CHECK(obj.data && kl_device_load(d, obj.data, obj.size, 0x80, &mg) == KL_ERR &&
            strstr(kl_device_error(d), "unknown flags"),
        "flags: %s", kl_device_error(d));
  lk ka;
  lk_begin(&ka, NULL, "amd");
  lk_gpu_vadd(&ka, LK_AMDGPU, "vadd", 256);
  kl_binary amd = { 0 };
  if (kl_codegen_amdgpu_object(ka.mod, "gfx942", NULL, &amd, err, sizeof err) == KL_OK) {
    CHECK(kl_device_load(d, amd.data, amd.size, 0, &mg) == KL_ERR && strstr(kl_device_error(d), "host"),
          "AMDGPU object: %s", kl_device_error(d));
    kl_binary_free(&amd);
  }
  lk_end(&ka);
  kl_binary_free(&obj);
  /* unresolved symbols load, and fail at lookup naming the symbol */
  const char *undef = "declare void @kiln_no_such_function()\n"
                      "define void @k(ptr %a, ptr %b, ptr %c) {\n  call void @kiln_no_such_function()\n  ret void\n}\n";
  kl_binary u = { 0 };
  CHECK(host_object_of(undef, &u, err, sizeof err), "undef: %s", err);
  mg = NULL;
  CHECK(u.data && kl_device_load(d, u.data, u.size, KL_LOAD_TRUSTED, &mg) == KL_OK, "undef load: %s",
        kl_device_error(d));
  kl_dev_kernel *ku = NULL;
  CHECK(mg && kl_device_get_kernel(mg, "k", &ku) == KL_ERR && strstr(kl_device_error(d), "kiln_no_such_function"),
        "unresolved symbol: %s", kl_device_error(d));
  kl_binary_free(&u);
  kl_device_destroy(d);
  group_end("load: host objects (trusted, untrusted), IR text and bitcode refused, bad inputs, unresolved symbols");
}

/* Two modules defining the same kernel name, two contexts, two JITs (two host devices). */
static void test_two_jits(void) {
  group_begin();
  kl_device *d1 = open_host(), *d2 = open_host();
  if (!d1 || !d2) return;
  LLVMContextRef c1 = LLVMContextCreate(), c2 = LLVMContextCreate();
  lk k1, k2, k3;
  lk_begin(&k1, c1, "m1");
  build_vadd(&k1, "vadd", 1.0f);
  lk_begin(&k2, c2, "m2");
  build_vadd(&k2, "vadd", -3.0f);
  lk_begin(&k3, c2, "m3");
  build_vadd(&k3, "vadd", 0.5f);
  kl_dev_module *m1 = NULL, *m2 = NULL, *m3 = NULL, *m1b = NULL;
  CHECK(kl_device_load_llvm(d1, k1.mod, &m1) == KL_OK, "%s", kl_device_error(d1));
  CHECK(kl_device_load_llvm(d2, k2.mod, &m2) == KL_OK, "%s", kl_device_error(d2));
  CHECK(kl_device_load_llvm(d1, k3.mod, &m3) == KL_OK, "same name, same JIT: %s", kl_device_error(d1));
  CHECK(kl_device_load_llvm(d1, k1.mod, &m1b) == KL_OK, "same module twice: %s", kl_device_error(d1));
  lk_end(&k1);
  lk_end(&k2);
  lk_end(&k3);
  LLVMContextDispose(c1);
  kl_dev_kernel *v1 = NULL, *v2 = NULL, *v3 = NULL, *v1b = NULL;
  if (m1) kl_device_get_kernel(m1, "vadd", &v1);
  if (m2) kl_device_get_kernel(m2, "vadd", &v2);
  if (m3) kl_device_get_kernel(m3, "vadd", &v3);
  if (m1b) kl_device_get_kernel(m1b, "vadd", &v1b);
  CHECK(v1 && v2 && v3 && v1b, "kernels");
  if (v1 && v2 && v3 && v1b) {
    for (int rep = 0; rep < 2; rep++) { /* interleaved */
      run_vadd(d1, v1, 1000 + rep, 1.0f, "jit1/m1");
      run_vadd(d2, v2, 777, -3.0f, "jit2/m2");
      run_vadd(d1, v3, 513, 0.5f, "jit1/m3");
      run_vadd(d1, v1b, 64, 1.0f, "jit1/m1 again");
    }
    kl_device_unload(m3); /* the others keep working */
    run_vadd(d1, v1, 300, 1.0f, "after unload");
    kl_device_destroy(d1);
    run_vadd(d2, v2, 5000, -3.0f, "jit2 after jit1 destroyed");
    /* building a new module in the surviving context still works */
    lk k4;
    lk_begin(&k4, c2, "m4");
    build_vadd(&k4, "vadd", 4.0f);
    kl_dev_kernel *v4 = load_kernel(d2, &k4, "vadd");
    if (v4) run_vadd(d2, v4, 999, 4.0f, "jit2/m4");
  } else {
    kl_device_destroy(d1);
  }
  LLVMContextDispose(c2);
  kl_device_destroy(d2);
  group_end("two contexts, two JITs, same kernel name in several modules");
}

static void test_events(void) {
  group_begin();
  kl_device *d = open_host();
  if (!d) return;
  kl_dev_event *e0 = NULL, *e1 = NULL;
  CHECK(kl_device_event_create(d, &e0) == KL_OK && kl_device_event_create(d, &e1) == KL_OK, "create");
  float ms = -1;
  CHECK(kl_device_event_elapsed_ms(e0, e1, &ms) == KL_ERR && strstr(kl_device_error(d), "never recorded"),
        "unrecorded: %s", kl_device_error(d));
  kl_device_event_record(e0);
  volatile double x = 0;
  for (int i = 0; i < 2000000; i++) x += i * 0.5;
  (void)x;
  kl_device_event_record(e1);
  CHECK(kl_device_event_elapsed_ms(e0, e1, &ms) == KL_OK && ms > 0 && ms < 10000, "elapsed %g", ms);
  kl_device_event_destroy(e0);
  kl_device_destroy(d); /* e1 is destroyed with the device */
  group_end("events: elapsed time, unrecorded events refused");
}

/* Streams on the host: handles only, every call completes at once (device.h). */
static void test_streams(void) {
  group_begin();
  kl_device *d = open_host();
  if (!d) return;
  kl_dev_stream *s = NULL, *s2 = NULL;
  CHECK(kl_device_stream_create(d, &s) == KL_OK && s && kl_device_stream_create(d, &s2) == KL_OK, "create");
  uint32_t *a = NULL, *b = NULL;
  CHECK(kl_device_alloc(d, 64, (void **)&a) == KL_OK && kl_device_alloc(d, 64, (void **)&b) == KL_OK, "alloc");
  kl_dev_event *e = NULL;
  CHECK(kl_device_event_create(d, &e) == KL_OK, "event");
  CHECK(kl_device_stream_wait_event(s2, e) == KL_ERR && strstr(kl_device_error(d), "never recorded"), "unrecorded: %s",
        kl_device_error(d));
  CHECK(kl_device_fill_on(s, a, 0xff800000u, 4, 16) == KL_OK, "fill_on: %s", kl_device_error(d));
  CHECK(kl_device_event_record_on(e, s) == KL_OK && kl_device_stream_wait_event(s2, e) == KL_OK, "record / wait");
  CHECK(kl_device_copy_dtod_on(s2, b, a, 64) == KL_OK, "copy_on: %s", kl_device_error(d));
  bool same = true;
  for (int i = 0; i < 16; i++) same = same && b[i] == 0xff800000u;
  CHECK(same, "-inf copied");
  CHECK(kl_device_fill_on(s, a, 0, 3, 4) == KL_ERR, "the checks of kl_device_fill apply on a stream");
  kl_device_stream_destroy(s);
  kl_device_stream_destroy(NULL);
  kl_device_free(d, a);
  kl_device_free(d, b);
  kl_device_destroy(d); /* s2 and e go with the device */
  group_end("streams on the host: fill / copy / record / wait on a stream complete at once");
}

typedef struct tp_check {
  _Atomic int *hits;
  int nthreads;
  _Atomic int bad_worker;
  kl_threadpool *pool;
  _Atomic long nested;
} tp_check;

static void tp_body(void *user, int64_t i, int worker) {
  tp_check *c = user;
  atomic_fetch_add(&c->hits[i], 1);
  if (worker < 0 || worker >= c->nthreads) atomic_fetch_add(&c->bad_worker, 1);
}

static void tp_inner(void *user, int64_t i, int worker) {
  (void)i;
  (void)worker;
  atomic_fetch_add(&((tp_check *)user)->nested, 1);
}

static void tp_outer(void *user, int64_t i, int worker) {
  (void)i;
  (void)worker;
  tp_check *c = user;
  kl_threadpool_parallel_for(c->pool, 10, tp_inner, c); /* nested: runs serially */
}

static void test_threadpool(void) {
  group_begin();
  setenv("KILN_THREADS", "3", 1);
  CHECK(kl_threadpool_default_threads() == 3, "KILN_THREADS ignored");
  setenv("KILN_THREADS", "zero", 1);
  CHECK(kl_threadpool_default_threads() >= 1, "bad KILN_THREADS");
  unsetenv("KILN_THREADS");
  int sizes[] = { 1, 2, 4, 7 };
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    char err[128];
    kl_threadpool *p = kl_threadpool_create(sizes[s], err, sizeof err);
    CHECK(p && kl_threadpool_size(p) == sizes[s], "create %d: %s", sizes[s], err);
    if (!p) continue;
    enum { N = 100003 };
    tp_check c;
    c.hits = calloc(N, sizeof(_Atomic int));
    c.nthreads = sizes[s];
    atomic_init(&c.bad_worker, 0);
    atomic_init(&c.nested, 0);
    c.pool = p;
    for (int rep = 0; rep < 20; rep++) kl_threadpool_parallel_for(p, rep % 2 ? N : 5, tp_body, &c);
    int bad = 0;
    for (int i = 0; i < N; i++) {
      int want = (i < 5 ? 20 : 10);
      if (atomic_load(&c.hits[i]) != want) bad++;
    }
    CHECK(bad == 0 && atomic_load(&c.bad_worker) == 0, "%d threads: %d indices wrong", sizes[s], bad);
    kl_threadpool_parallel_for(p, 50, tp_outer, &c);
    CHECK(atomic_load(&c.nested) == 500, "nested: %ld", atomic_load(&c.nested));
    kl_threadpool_parallel_for(p, 0, tp_body, &c);
    free(c.hits);
    kl_threadpool_destroy(p);
  }
  group_end("threadpool: every index once, worker ids, nesting, KILN_THREADS");
}


/* ---- GPUs (tag: gpu) — skipped with a message where none is present ---- */

/* gvadd(a, b, c, n): i = wg * 256 + tid; c[i] = a[i] + b[i] if i < n.
 * gshm(in, out, nper): out[idx] = in[total-1-idx] through dynamic shared memory. */
static void build_gpu_module(lk *k, bool amd) {
  lk_abi abi = amd ? LK_AMDGPU : LK_PTX;
  lk_gpu_vadd(k, abi, "gvadd", 256);

  LLVMTypeRef arr0 = LLVMArrayType2(k->f32, 0);
  LLVMValueRef dyn = LLVMAddGlobalInAddressSpace(k->mod, arr0, "dyn", 3);
  LLVMSetLinkage(dyn, LLVMExternalLinkage);
  LLVMSetAlignment(dyn, 16);
  LLVMTypeRef ps2[3] = { k->gptr, k->gptr, k->i32 };
  lk_kernel(k, abi, "gshm", ps2, 3, "1,256");
  LLVMValueRef t = LLVMBuildZExt(k->b, lk_tid(k, amd), k->i64, "");
  LLVMValueRef nper = LLVMBuildZExt(k->b, LLVMGetParam(k->fn, 2), k->i64, "");
  LLVMValueRef total = LLVMBuildMul(k->b, nper, c64(k, 256), "");
  hk_loop l1;
  LLVMValueRef j = hk_loop_begin(k, &l1, nper);
  LLVMValueRef idx = LLVMBuildAdd(k->b, LLVMBuildMul(k->b, j, c64(k, 256), ""), t, "");
  LLVMValueRef v = LLVMBuildLoad2(k->b, k->f32,
                                  LLVMBuildInBoundsGEP2(k->b, k->f32, LLVMGetParam(k->fn, 0), &idx, 1, ""), "");
  LLVMValueRef gi[2] = { c64(k, 0), idx };
  LLVMBuildStore(k->b, v, LLVMBuildInBoundsGEP2(k->b, arr0, dyn, gi, 2, ""));
  hk_loop_end(k, &l1);
  lk_barrier(k, amd);
  hk_loop l2;
  j = hk_loop_begin(k, &l2, nper);
  idx = LLVMBuildAdd(k->b, LLVMBuildMul(k->b, j, c64(k, 256), ""), t, "");
  gi[1] = LLVMBuildSub(k->b, LLVMBuildSub(k->b, total, c64(k, 1), ""), idx, "");
  v = LLVMBuildLoad2(k->b, k->f32, LLVMBuildInBoundsGEP2(k->b, arr0, dyn, gi, 2, ""), "");
  LLVMBuildStore(k->b, v, LLVMBuildInBoundsGEP2(k->b, k->f32, LLVMGetParam(k->fn, 1), &idx, 1, ""));
  hk_loop_end(k, &l2);
  LLVMBuildRetVoid(k->b);

  if (!amd) { /* gmma(A, B, D): one mma.sync m16n8k16 per warp, fragments in PTX ISA order */
    LLVMTypeRef ps3[3] = { k->gptr, k->gptr, k->gptr };
    lk_kernel(k, LK_PTX, "gmma", ps3, 3, NULL);
    LLVMTypeRef h2 = LLVMVectorType(LLVMHalfTypeInContext(k->ctx), 2);
    LLVMValueRef tt = LLVMBuildZExt(k->b, lk_tid(k, false), k->i64, "");
    LLVMValueRef args[10];
    for (int q = 0; q < 6; q++) {
      LLVMValueRef base = LLVMBuildMul(k->b, tt, c64(k, q < 4 ? 4 : 2), "");
      LLVMValueRef ix = LLVMBuildAdd(k->b, base, c64(k, q < 4 ? q : q - 4), "");
      args[q] = LLVMBuildLoad2(k->b, h2,
                               LLVMBuildInBoundsGEP2(k->b, h2, LLVMGetParam(k->fn, q < 4 ? 0 : 1), &ix, 1, ""), "");
    }
    for (int q = 6; q < 10; q++) args[q] = LLVMConstReal(k->f32, 0.0);
    LLVMValueRef r = lk_call(k, "llvm.nvvm.mma.m16n8k16.row.col.f32.f32", args, 10);
    for (unsigned q = 0; q < 4; q++) {
      LLVMValueRef ix = LLVMBuildAdd(k->b, LLVMBuildMul(k->b, tt, c64(k, 4), ""), c64(k, q), "");
      LLVMBuildStore(k->b, LLVMBuildExtractValue(k->b, r, q, ""),
                     LLVMBuildInBoundsGEP2(k->b, k->f32, LLVMGetParam(k->fn, 2), &ix, 1, ""));
    }
    LLVMBuildRetVoid(k->b);
  }
}

static void gpu_mma_check(kl_device *d, kl_dev_kernel *kern) {
  static const uint16_t hbits[9] = { 0x0000, 0x3800, 0x3C00, 0x3E00, 0x4000, 0xB800, 0xBC00, 0xBE00, 0xC000 };
  static const float hval[9] = { 0, 0.5f, 1, 1.5f, 2, -0.5f, -1, -1.5f, -2 };
  int A[16][16], B[16][8];
  for (int r = 0; r < 16; r++)
    for (int c = 0; c < 16; c++) A[r][c] = (int)(rnd32() % 9);
  for (int r = 0; r < 16; r++)
    for (int c = 0; c < 8; c++) B[r][c] = (int)(rnd32() % 9);
  uint16_t af[32 * 8], bf[32 * 4];
  for (int l = 0; l < 32; l++) {
    int g = l >> 2, q = l & 3;
    int ar[8] = { g, g, g + 8, g + 8, g, g, g + 8, g + 8 };
    int ac[8] = { 2 * q, 2 * q + 1, 2 * q, 2 * q + 1, 2 * q + 8, 2 * q + 9, 2 * q + 8, 2 * q + 9 };
    int bk[4] = { 2 * q, 2 * q + 1, 2 * q + 8, 2 * q + 9 };
    for (int e = 0; e < 8; e++) af[l * 8 + e] = hbits[A[ar[e]][ac[e]]];
    for (int e = 0; e < 4; e++) bf[l * 4 + e] = hbits[B[bk[e]][g]];
  }
  void *dA, *dB, *dD;
  kl_device_alloc(d, sizeof af, &dA);
  kl_device_alloc(d, sizeof bf, &dB);
  kl_device_alloc(d, 128 * 4, &dD);
  kl_device_copy_htod(d, dA, af, sizeof af);
  kl_device_copy_htod(d, dB, bf, sizeof bf);
  void *args[3] = { &dA, &dB, &dD };
  uint32_t g1[3] = { 1, 1, 1 }, w[3] = { 32, 1, 1 };
  CHECK(kl_device_launch(kern, g1, w, 0, args, NULL, 3) == KL_OK, "mma: %s", kl_device_error(d));
  float df[128];
  CHECK(kl_device_copy_dtoh(d, df, dD, sizeof df) == KL_OK, "%s", kl_device_error(d));
  int bad = 0;
  for (int l = 0; l < 32; l++) {
    int g = l >> 2, q = l & 3;
    int dr[4] = { g, g, g + 8, g + 8 }, dc[4] = { 2 * q, 2 * q + 1, 2 * q, 2 * q + 1 };
    for (int e = 0; e < 4; e++) {
      float ref = 0;
      for (int kk = 0; kk < 16; kk++) ref += hval[A[dr[e]][kk]] * hval[B[kk][dc[e]]];
      if (df[l * 4 + e] != ref) bad++;
    }
  }
  CHECK(bad == 0, "mma.sync m16n8k16: %d of 128 wrong", bad);
  kl_device_free(d, dA);
  kl_device_free(d, dB);
  kl_device_free(d, dD);
}

static void test_gpu(const char *backend) {
  group_begin();
  char err[1024], title[512];
  kl_device *d = kl_device_open(backend, err, sizeof err);
  if (!d) {
    /* No such GPU: at least the kernels of this group must compile for it. */
    bool amd = strcmp(backend, "hip") == 0;
    lk k;
    lk_begin(&k, NULL, "gpu_mod");
    build_gpu_module(&k, amd);
    kl_binary bin;
    char cerr[1024];
    CHECK(kl_codegen_emit(k.mod, amd ? "gfx942" : "sm_90", NULL, &bin, cerr, sizeof cerr) == KL_OK, "%s", cerr);
    kl_binary_free(&bin);
    lk_end(&k);
    printf("gpu %s: skipped (%s); its kernels compile for %s: %s\n", backend, err, amd ? "gfx942" : "sm_90",
           group_ok() ? "ok" : "FAILED");
    return;
  }
  bool amd = kl_device_get_info(d)->kind == KL_DEVICE_HIP;
  const kl_device_info *in = kl_device_get_info(d);
  snprintf(title, sizeof title, "gpu %s (%.200s, %.60s): vadd, dynamic shared memory%s, events", backend, in->name,
           in->arch, amd ? "" : ", mma.sync");
  lk k;
  lk_begin(&k, NULL, "gpu_mod");
  build_gpu_module(&k, amd);
  kl_dev_module *m = NULL;
  CHECK(kl_device_load_llvm(d, k.mod, &m) == KL_OK, "load: %s", kl_device_error(d));
  lk_end(&k);
  kl_dev_kernel *vadd = NULL, *shm = NULL, *mma = NULL;
  if (m) {
    CHECK(kl_device_get_kernel(m, "gvadd", &vadd) == KL_OK, "%s", kl_device_error(d));
    CHECK(kl_device_get_kernel(m, "gshm", &shm) == KL_OK, "%s", kl_device_error(d));
    if (!amd) CHECK(kl_device_get_kernel(m, "gmma", &mma) == KL_OK, "%s", kl_device_error(d));
  }
  size_t n = (1u << 20) + 77, bytes = n * 4;
  float *ha = malloc(bytes), *hb = malloc(bytes), *hc = malloc(bytes);
  for (size_t i = 0; i < n; i++) {
    ha[i] = rndf();
    hb[i] = rndf();
  }
  void *da = NULL, *db = NULL, *dc = NULL;
  CHECK(kl_device_alloc(d, bytes, &da) == KL_OK && kl_device_alloc(d, bytes, &db) == KL_OK &&
            kl_device_alloc(d, bytes, &dc) == KL_OK,
        "%s", kl_device_error(d));
  kl_device_copy_htod(d, da, ha, bytes);
  kl_device_copy_htod(d, db, hb, bytes);
  if (vadd) {
    int32_t nn = (int32_t)n;
    void *args[4] = { &da, &db, &dc, &nn };
    size_t sizes[4] = { 8, 8, 8, 4 };
    uint32_t grid[3] = { (uint32_t)((n + 255) / 256), 1, 1 }, block[3] = { 256, 1, 1 };
    kl_dev_event *e0 = NULL, *e1 = NULL;
    kl_device_event_create(d, &e0);
    kl_device_event_create(d, &e1);
    kl_device_event_record(e0);
    CHECK(kl_device_launch(vadd, grid, block, 0, args, sizes, 4) == KL_OK, "%s", kl_device_error(d));
    kl_device_event_record(e1);
    float ms = -1;
    CHECK(kl_device_event_elapsed_ms(e0, e1, &ms) == KL_OK && ms > 0, "elapsed %g: %s", ms, kl_device_error(d));
    CHECK(kl_device_synchronize(d) == KL_OK, "%s", kl_device_error(d));
    CHECK(kl_device_copy_dtoh(d, hc, dc, bytes) == KL_OK, "%s", kl_device_error(d));
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
      if (hc[i] != ha[i] + hb[i]) bad++;
    CHECK(bad == 0, "gvadd: %zu of %zu wrong", bad, n);
  }
  if (shm) { /* as much dynamic shared memory as the device allows (> 48 KiB on NVIDIA) */
    int32_t nper = (int32_t)((in->max_shared_per_block - 1024) / (256 * 4));
    if (nper > 200) nper = 200;
    void *args[3] = { &da, &dc, &nper };
    uint32_t g1[3] = { 1, 1, 1 }, block[3] = { 256, 1, 1 };
    CHECK(kl_device_launch(shm, g1, block, (size_t)nper * 256 * 4, args, NULL, 3) == KL_OK, "gshm %d KiB: %s", nper,
          kl_device_error(d));
    CHECK(kl_device_copy_dtoh(d, hc, dc, (size_t)nper * 256 * 4) == KL_OK, "%s", kl_device_error(d));
    int bad = 0;
    for (int i = 0; i < nper * 256; i++)
      if (hc[i] != ha[nper * 256 - 1 - i]) bad++;
    CHECK(bad == 0, "gshm (%d KiB): %d wrong", nper, bad);
    CHECK(kl_device_launch(shm, g1, block, in->max_shared_per_block + 4096, args, NULL, 3) == KL_ERR &&
              strstr(kl_device_error(d), "shared"),
          "too much shared memory accepted: %s", kl_device_error(d));
  }
  if (mma) gpu_mma_check(d, mma);
  /* bad binaries are errors, not crashes */
  kl_dev_module *bad = NULL;
  CHECK(kl_device_load(d, "not a code object", 17, 0, &bad) == KL_ERR, "garbage loaded");
  free(ha);
  free(hb);
  free(hc);
  kl_device_destroy(d);
  group_end(title);
}

static kl_device *open_fake(int ordinal, char *err, size_t errlen) {
  snprintf(err, errlen, "fake: refuses to open %d", ordinal);
  return NULL;
}

static void test_registry(void) {
  group_begin();
  char err[256];
  static const kl_device_backend fake = { "fake", open_fake }, dup = { "host", open_fake }, bad = { "a:b", open_fake };
  int before = kl_device_backend_count();
  CHECK(before >= 3 && strcmp(kl_device_backend_name(0), "host") == 0, "builtins");
  CHECK(kl_device_register_backend(&fake, err, sizeof err) == KL_OK, "%s", err);
  CHECK(kl_device_register_backend(&dup, err, sizeof err) == KL_ERR && strstr(err, "already"), "dup: %s", err);
  CHECK(kl_device_register_backend(&bad, err, sizeof err) == KL_ERR, "':' accepted");
  CHECK(kl_device_backend_count() == before + 1, "count");
  CHECK(kl_device_open("fake:2", err, sizeof err) == NULL && strstr(err, "refuses to open 2"), "fake: %s", err);
  group_end("registry: custom backend, duplicates refused, ordinals passed");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  test_open();
  test_memory();
  test_vadd();
  test_grid3d();
  test_local_and_libm();
  test_half();
  test_load_formats();
  test_two_jits();
  test_events();
  test_streams();
  test_threadpool();
  test_registry();
  test_gpu("hip");
  test_gpu("cuda");
  return check_summary("test_runtime_host");
}
