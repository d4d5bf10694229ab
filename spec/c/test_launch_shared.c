/* test_launch_shared.c — every launch of an NVIDIA kernel whose LDS lives in dynamic
 * shared memory passes that memory (driver/plan_exec.h kl_plan_launch_shared_bytes), on
 * every launch path: kl_program_run (the plan executor), kl_prepared_launch and
 * kl_prepared_time (the prepared runs of benchmarks and tuning). The device is a fake
 * CUDA device (host memory, no GPU): it loads the PTX, and a launch of a kernel whose PTX
 * declares `extern .shared` with less dynamic shared memory than the kernel's lds_bytes
 * fails the way the GPU does (CUDA_ERROR_ILLEGAL_ADDRESS at the next synchronize; here
 * at the launch). The kernel: the 128x128x256 f16 GEMM with B stored [N, K] at
 * rock-gridwise-to-blockwise{cp-async=3} for sm_90 (3 stages of 128x128x32 tiles: 56000
 * bytes, above the 48 KiB of static shared memory), the shape class of the 4096^3
 * `kiln.cpa3.bt` case of bench/gpu_kiln.lua --cpa that faulted on an H200 when
 * kl_prepared_launch passed 0 bytes; at cp-async=2 (37312 bytes, static) every launch
 * passes 0. And a persistent kernel (grid_persistent, passes/rock_tma.h) launches min(tiles,
 * SMs x resident workgroups) workgroups on every path (kl_plan_launch_grid: the fake device
 * answers the resident count and takes the TMA tensor maps). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dialect_graph.h"
#include "driver/program.h"
#include "passes/passes.h"
#include "runtime/device.h"

#include "check.h"
#include "graph_test_util.h"

/* ---- the fake CUDA device ---- */
typedef struct {
  bool dynamic; /* the PTX declares `extern .shared` */
} fake_kernel;
static int64_t want_lds; /* the kernel's lds_bytes (set by the test before running) */
static int nlaunch, nbad;
static size_t last_shared;
static uint32_t last_grid; /* grid x of the last launch */
static int fake_resident;  /* the fake device's resident workgroups per SM (f_resident) */

static void f_destroy(kl_device *dev) { (void)dev; }
static kl_status f_alloc(kl_device *dev, size_t bytes, void **out) {
  (void)dev;
  *out = calloc(1, bytes ? bytes : 1);
  return KL_OK;
}
static kl_status f_free(kl_device *dev, void *p) {
  (void)dev;
  free(p);
  return KL_OK;
}
static kl_status f_copy(kl_device *dev, void *dst, const void *src, size_t bytes, kl_copy_kind kind) {
  (void)dev, (void)kind;
  memmove(dst, src, bytes);
  return KL_OK;
}
static kl_status f_fill(kl_device *dev, void *dst, uint32_t pattern, int pb, size_t count) {
  (void)dev;
  for (size_t i = 0; i < count; i++) memcpy((char *)dst + i * (size_t)pb, &pattern, (size_t)pb);
  return KL_OK;
}
static kl_status f_load(kl_device *dev, const void *bin, size_t size, unsigned flags, void **module) {
  (void)flags;
  char *text = malloc(size + 1);
  memcpy(text, bin, size);
  text[size] = '\0';
  if (!strstr(text, ".entry")) {
    free(text);
    return kl_device_set_error(dev, "fake cuda: not PTX");
  }
  *module = text;
  return KL_OK;
}
static void f_unload(kl_device *dev, void *module) {
  (void)dev;
  free(module);
}
static kl_status f_get_kernel(kl_device *dev, void *module, const char *name, void **kernel) {
  (void)dev, (void)name;
  fake_kernel *k = calloc(1, sizeof *k);
  k->dynamic = strstr(module, ".extern .shared") != NULL;
  *kernel = k;
  return KL_OK;
}
static void f_release_kernel(kl_device *dev, void *kernel) {
  (void)dev;
  free(kernel);
}
static kl_status f_launch(kl_device *dev, void *kernel, const uint32_t grid[3], const uint32_t block[3], size_t shared,
                          void **args, const size_t *sizes, int nargs) {
  (void)block, (void)args, (void)sizes, (void)nargs;
  fake_kernel *k = kernel;
  nlaunch++;
  last_grid = grid[0];
  last_shared = shared;
  if (k->dynamic ? shared != (size_t)want_lds : shared != 0) {
    nbad++;
    return kl_device_set_error(dev, "fake cuda: launch with %zu bytes of dynamic shared memory, the kernel needs %lld",
                               shared, k->dynamic ? (long long)want_lds : 0LL);
  }
  return KL_OK;
}
static kl_status f_sync(kl_device *dev) {
  (void)dev;
  return KL_OK;
}
static kl_status f_event_create(kl_device *dev, void **ev) {
  (void)dev;
  *ev = calloc(1, 1);
  return KL_OK;
}
static kl_status f_event_record(kl_device *dev, void *ev) {
  (void)dev, (void)ev;
  return KL_OK;
}
static kl_status f_event_elapsed(kl_device *dev, void *a, void *b, float *ms) {
  (void)dev, (void)a, (void)b;
  *ms = 0.5f;
  return KL_OK;
}
static void f_event_destroy(kl_device *dev, void *ev) {
  (void)dev;
  free(ev);
}
static kl_status f_tensor_map(kl_device *dev, const kl_tensor_map_desc *d, void *out) {
  (void)dev, (void)d;
  memset(out, 0, 128);
  return KL_OK;
}
static int f_resident(kl_device *dev, void *kernel, uint32_t block, size_t shared) {
  (void)dev, (void)kernel, (void)block, (void)shared;
  return fake_resident;
}
static const kl_device_ops fake_ops = {
  .tensor_map = f_tensor_map,
  .resident = f_resident,
  .destroy = f_destroy,
  .alloc = f_alloc,
  .free = f_free,
  .copy = f_copy,
  .fill = f_fill,
  .load = f_load,
  .unload = f_unload,
  .get_kernel = f_get_kernel,
  .release_kernel = f_release_kernel,
  .launch = f_launch,
  .synchronize = f_sync,
  .event_create = f_event_create,
  .event_record = f_event_record,
  .event_elapsed = f_event_elapsed,
  .event_destroy = f_event_destroy,
};
static kl_device *fake_cuda_arch(const char *arch) {
  kl_device_info info = { .kind = KL_DEVICE_CUDA,
                          .backend = "cuda",
                          .name = "fake H200",
                          .arch = "sm_90",
                          .cc_major = 9,
                          .cc_minor = 0,
                          .compute_units = 132,
                          .wave_size = 32,
                          .max_threads_per_block = 1024,
                          .max_shared_per_block = 227 * 1024 };
  snprintf(info.arch, sizeof info.arch, "%s", arch);
  return kl_device_new(&fake_ops, NULL, &info);
}
static kl_device *fake_cuda(void) { return fake_cuda_arch("sm_90"); }

/* a[M, K] . transpose(b[N, K]) in f16 */
static kl_op *gemm_bt(kl_ctx *ctx, int64_t M, int64_t N, int64_t K) {
  kl_op *g = kl_graph_create(ctx, kl_module_create(ctx, KL_LOC_UNKNOWN), "gemm_bt", KL_LOC_UNKNOWN);
  const kl_type *f16 = kl_type_scalar(ctx, KL_TY_F16);
  kl_op *a = param(g, "a", kl_type_tensor(ctx, f16, 2, (int64_t[]){ M, K }, NULL));
  kl_op *b = param(g, "b", kl_type_tensor(ctx, f16, 2, (int64_t[]){ N, K }, NULL));
  kl_named_attr perm = { "perm", kl_attr_i64_array(ctx, 2, (int64_t[]){ 1, 0 }) };
  kl_value *bv = kl_op_result(b, 0);
  kl_op *bt = kl_graph_build(g, "transpose", KL_LOC_UNKNOWN, 1, &bv, 1, &perm, NULL);
  kl_value *out = kl_op_result(op2(g, "dot", a, bt), 0);
  kl_graph_set_outputs(g, 1, &out, KL_LOC_UNKNOWN);
  return g;
}

/* kl_compile of g for one target with the default pipeline's rock-gridwise-to-blockwise
 * given the options gtb_opts, the perf config perf, no cache; NULL (checked) on failure. */
static kl_program *compile_gtb(kl_op *g, const char *gtb_opts, const char *target, const char *perf, char *err,
                               size_t errlen) {
  char pl[2048];
  const char *def = kl_default_pipeline();
  const char *at = strstr(def, "rock-gridwise-to-blockwise");
  const char *end = at ? strchr(at, ',') : NULL;
  CHECK(at && end);
  if (!at || !end) return NULL;
  snprintf(pl, sizeof pl, "%.*srock-gridwise-to-blockwise{%s}%s", (int)(at - def), def, gtb_opts, end);
  const char *targets[] = { target };
  kl_compile_opts o = { .targets = targets, .ntargets = 1, .pipeline = pl, .perf_config = perf, .no_cache = true };
  kl_program *p = kl_compile(g, &o, err, errlen);
  CHECK(p != NULL, "compile: %s", err);
  return p;
}

static void run_paths(kl_ctx *ctx, int stages, bool want_dynamic) {
  char err[4096] = "", opts[64];
  /* kgroup stages (the xor default fits 3 stages in 48 KiB) */
  snprintf(opts, sizeof opts, "cp-async=%d,cp-async-layout=kgroup", stages);
  kl_program *p = compile_gtb(gemm_bt(ctx, 128, 128, 256), opts, "sm_90", "v2:128,128,32,64,64,8", err, sizeof err);
  if (!p) return;
  const kl_kernel_info *k = kl_program_kernel(p, "sm_90", 0);
  CHECK(k && k->pipeline_stages == stages, "stages %lld", k ? (long long)k->pipeline_stages : -1LL);
  CHECK(k && (k->lds_bytes > 48 * 1024) == want_dynamic, "lds_bytes %lld", k ? (long long)k->lds_bytes : -1LL);
  want_lds = k ? k->lds_bytes : 0;
  kl_device *dev = fake_cuda();
  kl_named_tensor in[2];
  const char *names[] = { "a", "b" };
  int64_t shapes[2][2] = { { 128, 256 }, { 128, 256 } };
  for (int i = 0; i < 2; i++) {
    in[i].name = names[i];
    in[i].tensor = kl_tensor_rand(KL_DT_F16, 2, shapes[i], NULL, 11 + i, KL_DIST_NORMAL, err, sizeof err);
  }
  nlaunch = nbad = 0;
  /* the plan executor */
  int nout = 0;
  kl_tensor **out = NULL;
  CHECK(kl_program_run(p, dev, 2, in, &nout, &out, err, sizeof err) == KL_OK, "run: %s", err);
  for (int i = 0; i < nout; i++) kl_tensor_release(out[i]);
  free(out);
  CHECK(nlaunch == 1 && nbad == 0 && last_shared == (want_dynamic ? (size_t)want_lds : 0),
        "kl_program_run: %d launches, %d without their shared memory (last %zu)", nlaunch, nbad, last_shared);
  /* the prepared run: launch, time */
  kl_prepare_opts po = { .sets = 2 };
  kl_prepared *r = kl_program_prepare(p, dev, 2, in, &po, err, sizeof err);
  CHECK(r != NULL, "prepare: %s", err);
  if (r) {
    nlaunch = nbad = 0;
    CHECK(kl_prepared_launch(r, 1, err, sizeof err) == KL_OK, "launch: %s", err);
    CHECK(nlaunch == 1 && nbad == 0 && last_shared == (want_dynamic ? (size_t)want_lds : 0),
          "kl_prepared_launch: %d launches, %d without their shared memory (last %zu)", nlaunch, nbad, last_shared);
    float ms[3];
    nlaunch = nbad = 0;
    CHECK(kl_prepared_time(r, 1, 3, ms, err, sizeof err) == KL_OK, "time: %s", err);
    CHECK(nlaunch == 4 && nbad == 0, "kl_prepared_time: %d launches, %d without their shared memory", nlaunch, nbad);
    kl_prepared_free(r);
  }
  for (int i = 0; i < 2; i++) kl_tensor_release(in[i].tensor);
  kl_device_destroy(dev);
  kl_program_release(p);
}

/* Persistent kernels (passes/rock_tma.h, grid_persistent): every launch path takes min(tiles,
 * SMs x resident workgroups per SM) workgroups (kl_plan_launch_grid), the fake device's 132
 * SMs and its resident answer; the 4096x2048x256 f16 GEMM at 128x256x64 (256 tiles) for sm_90a
 * with persistent=1; a plain kernel keeps its grid. */
static void run_persistent(kl_ctx *ctx, bool persistent, int resident, uint32_t want_grid) {
  char err[4096] = "";
  kl_program *p = compile_gtb(gemm_bt(ctx, 4096, 2048, 256), persistent ? "persistent=1" : "persistent=0", "sm_90a",
                              "v3:128,256,64,64,256,8", err, sizeof err);
  if (!p) return;
  const kl_kernel_info *k = kl_program_kernel(p, "sm_90a", 0);
  CHECK(k && k->grid_size == 256 && k->grid_persistent == persistent, "grid %lld, grid_persistent %lld",
        k ? (long long)k->grid_size : -1LL, k ? (long long)k->grid_persistent : -1LL);
  want_lds = k ? k->lds_bytes : 0;
  fake_resident = resident;
  kl_device *dev = fake_cuda_arch("sm_90a");
  kl_named_tensor in[2];
  const char *names[] = { "a", "b" };
  int64_t shapes[2][2] = { { 4096, 256 }, { 2048, 256 } };
  for (int i = 0; i < 2; i++) {
    in[i].name = names[i];
    in[i].tensor = kl_tensor_rand(KL_DT_F16, 2, shapes[i], NULL, 11 + i, KL_DIST_NORMAL, err, sizeof err);
  }
  nlaunch = nbad = 0;
  last_grid = 0;
  int nout = 0;
  kl_tensor **out = NULL;
  CHECK(kl_program_run(p, dev, 2, in, &nout, &out, err, sizeof err) == KL_OK, "run: %s", err);
  for (int i = 0; i < nout; i++) kl_tensor_release(out[i]);
  free(out);
  CHECK(nlaunch == 1 && nbad == 0 && last_grid == want_grid, "kl_program_run: %d launches, grid %u, want %u", nlaunch,
        last_grid, want_grid);
  kl_prepare_opts po = { .sets = 1 };
  kl_prepared *r = kl_program_prepare(p, dev, 2, in, &po, err, sizeof err);
  CHECK(r != NULL, "prepare: %s", err);
  if (r) {
    last_grid = 0;
    CHECK(kl_prepared_launch(r, 0, err, sizeof err) == KL_OK, "launch: %s", err);
    CHECK(last_grid == want_grid, "kl_prepared_launch: grid %u, want %u", last_grid, want_grid);
    kl_prepared_free(r);
  }
  for (int i = 0; i < 2; i++) kl_tensor_release(in[i].tensor);
  kl_device_destroy(dev);
  kl_program_release(p);
}

int main(void) {
  kl_ctx *ctx = kl_ctx_create();
  kl_register_builtin_passes(ctx);
  group_begin();
  run_paths(ctx, 3, true);
  group_end("cp-async=3 (56000 bytes of LDS, dynamic): every launch path passes lds_bytes");
  group_begin();
  run_paths(ctx, 2, false);
  group_end("cp-async=2 (37312 bytes, static): every launch path passes 0");
  group_begin();
  run_persistent(ctx, true, 1, 132);
  run_persistent(ctx, true, 2, 256);
  run_persistent(ctx, false, 1, 256);
  group_end("persistent=1: launches of min(256 tiles, 132 SMs x resident) workgroups; persistent=0: 256");
  kl_ctx_destroy(ctx);
  return check_summary("test_launch_shared");
}
