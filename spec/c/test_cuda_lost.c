/* test_cuda_lost.c — the CUDA runtime after a sticky error (runtime/device_cuda.c), on a fake
 * driver (spec/c/fake_cuda/fake_libcuda.c, loaded as libcuda.so.1 through LD_LIBRARY_PATH,
 * which CMakeLists.txt sets for this test only): a kernel that faults (asynchronously, as on a
 * GPU) makes the next synchronize fail with CUDA_ERROR_ILLEGAL_ADDRESS, and the message says
 * that the device's CUDA context is lost and names the launches since the last successful
 * synchronize; from then on every call on the device (alloc, launch, load) fails at once with
 * "device lost" and that message, without calling the driver; destroying the device works.
 * Before the fault: TMA tensor maps (kl_device_tensor_map) pass the swizzle on and refuse
 * bad arguments with a message naming the field. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/device.h"

#include "check.h"

static const char PTX[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry good_k()\n{\n\tret;\n}\n"
                          ".visible .entry fault_k()\n{\n\tret;\n}\n";

int main(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  int *calls = lib ? dlsym(lib, "fake_cuda_calls") : NULL;
  CHECK(calls != NULL, "libcuda.so.1 is not the fake driver (LD_LIBRARY_PATH=build/fake_cuda): %s",
        lib ? "no fake_cuda_calls" : dlerror());
  if (!calls) return check_summary("test_cuda_lost");
  char err[1024] = "";
  kl_device *dev = kl_device_open("cuda", err, sizeof err);
  CHECK(dev != NULL, "open: %s", err);
  if (!dev) return check_summary("test_cuda_lost");
  /* the fake driver's compute capability 9.0: sm_90a (runtime/device_cuda.c arch_for_cc) */
  CHECK(!strcmp(kl_device_get_info(dev)->arch, "sm_90a"), "%s", kl_device_get_info(dev)->arch);
  group_begin();
  kl_dev_module *mod = NULL;
  kl_dev_kernel *good = NULL, *bad = NULL;
  CHECK(kl_device_load(dev, PTX, sizeof PTX - 1, 0, &mod) == KL_OK, "%s", kl_device_error(dev));
  CHECK(mod && kl_device_get_kernel(mod, "good_k", &good) == KL_OK, "%s", kl_device_error(dev));
  CHECK(mod && kl_device_get_kernel(mod, "fault_k", &bad) == KL_OK, "%s", kl_device_error(dev));
  uint32_t one[3] = { 1, 1, 1 };
  void *args[1] = { NULL };
  CHECK(kl_device_launch(good, one, one, 0, args, NULL, 0) == KL_OK, "%s", kl_device_error(dev));
  CHECK(kl_device_synchronize(dev) == KL_OK, "%s", kl_device_error(dev));
  group_end("launches and a synchronize before the fault");
  /* TMA tensor maps (kl_device_tensor_map): the swizzle reaches the driver as
   * CU_TENSOR_MAP_SWIZZLE_128B (3); bad arguments are errors naming the field before any
   * driver call (the driver's own answer is a bare CUDA_ERROR_INVALID_VALUE) */
  group_begin();
  {
    int *tsw = dlsym(lib, "fake_tmap_swizzle"), *tbox = dlsym(lib, "fake_tmap_box0");
    _Alignas(64) unsigned char map[128];
    void *base = NULL;
    CHECK(kl_device_alloc(dev, 1 << 16, &base) == KL_OK, "%s", kl_device_error(dev));
    kl_tensor_map_desc d = {
      .rank = 2, .swizzle = 128, .base = base, .dims = { 256, 256 }, .strides = { 512 }, .box = { 64, 256 }
    };
    CHECK(kl_device_tensor_map(dev, &d, map) == KL_OK && tsw && *tsw == 3 && tbox && *tbox == 64, "%s: swizzle %d",
          kl_device_error(dev), tsw ? *tsw : -9);
    d.swizzle = 0, d.box[0] = 8;
    CHECK(kl_device_tensor_map(dev, &d, map) == KL_OK && *tsw == 0 && *tbox == 8, "%s", kl_device_error(dev));
    kl_tensor_map_desc bad[4] = { d, d, d, d };
    bad[0].swizzle = 64, bad[0].box[0] = 64; /* 128 bytes of box row over a 64-byte swizzle */
    bad[1].box[1] = 300;                     /* a box dim above 256 */
    bad[2].base = (char *)base + 8;          /* not 16-byte aligned */
    bad[3].strides[0] = 520;                 /* not a multiple of 16 */
    const char *want[4] = { "dim 0", "dim 1", "base", "dim 1" };
    for (int i = 0; i < 4; i++) {
      *tsw = -1;
      CHECK(kl_device_tensor_map(dev, &bad[i], map) == KL_ERR && strstr(kl_device_error(dev), "tensor map") &&
                strstr(kl_device_error(dev), want[i]) && *tsw == -1,
            "bad map %d: %s", i, kl_device_error(dev));
    }
    /* im2col maps (cuTensorMapEncodeIm2col): NHWC {C 64, W 7, H 7, N 2}, pixels per column
     * box[1] and the lower corner passed on; corners or traversal strides out of the rank-4
     * range refused before the driver */
    int *tpix = dlsym(lib, "fake_tmap_i2c_pixels"), *tlo = dlsym(lib, "fake_tmap_i2c_lo0");
    kl_tensor_map_desc i2 = { .rank = 4,
                              .swizzle = 128,
                              .im2col = true,
                              .base = base,
                              .dims = { 64, 7, 7, 2 },
                              .strides = { 128, 896, 6272 },
                              .box = { 64, 96, 1, 1 },
                              .lo = { -1, -1 },
                              .up = { -1, -1 },
                              .es = { 1, 1 } };
    CHECK(kl_device_tensor_map(dev, &i2, map) == KL_OK && tpix && *tpix == 96 && tlo && *tlo == -1 && *tsw == 3 &&
              *tbox == 64,
          "im2col: %s", kl_device_error(dev));
    kl_tensor_map_desc ib[2] = { i2, i2 };
    ib[0].lo[1] = -129; /* below the rank-4 corner range */
    ib[1].es[0] = 9;    /* a traversal stride above 8 */
    for (int i = 0; i < 2; i++) {
      *tpix = -1;
      CHECK(kl_device_tensor_map(dev, &ib[i], map) == KL_ERR && strstr(kl_device_error(dev), "im2col tensor map") &&
                *tpix == -1,
            "bad im2col map %d: %s", i, kl_device_error(dev));
    }
    kl_device_free(dev, base);
  }
  group_end("tensor maps: the swizzle passed on, bad arguments refused with the field; im2col maps");
  group_begin();
  CHECK(kl_device_launch(good, one, one, 0, args, NULL, 0) == KL_OK, "%s", kl_device_error(dev));
  CHECK(kl_device_launch(bad, one, one, 0, args, NULL, 0) == KL_OK, "the fault is asynchronous");
  CHECK(kl_device_synchronize(dev) == KL_ERR);
  const char *e = kl_device_error(dev);
  CHECK(strstr(e, "cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (700)") != NULL, "%s", e);
  CHECK(strstr(e, "CUDA context is lost") && strstr(e, "restart the process"), "%s", e);
  CHECK(strstr(e, "one of the 2 launches since the last successful synchronize: good_k, fault_k") != NULL, "%s", e);
  group_end("the synchronize after the fault says the context is lost and names the launches");
  group_begin();
  int before = *calls;
  void *p = NULL;
  CHECK(kl_device_alloc(dev, 64, &p) == KL_ERR && p == NULL);
  e = kl_device_error(dev);
  CHECK(strstr(e, "device lost") && strstr(e, "fault_k") && strstr(e, "ILLEGAL_ADDRESS"), "%s", e);
  CHECK(kl_device_launch(good, one, one, 0, args, NULL, 0) == KL_ERR && strstr(kl_device_error(dev), "device lost"),
        "%s", kl_device_error(dev));
  kl_dev_module *m2 = NULL;
  CHECK(kl_device_load(dev, PTX, sizeof PTX - 1, 0, &m2) == KL_ERR && strstr(kl_device_error(dev), "device lost"), "%s",
        kl_device_error(dev));
  CHECK(kl_device_synchronize(dev) == KL_ERR && strstr(kl_device_error(dev), "device lost"));
  CHECK(*calls == before, "%d driver calls on the lost context", *calls - before);
  group_end("every later call fails at once with the message, without calling the driver");
  kl_device_destroy(dev);
  dlclose(lib);
  return check_summary("test_cuda_lost");
}
