/* fake_libcuda.c — a stand-in for the CUDA driver library (libcuda.so.1) for
 * test_cuda_lost: just the entry points runtime/device_cuda.c resolves, on host memory, with
 * one GPU of compute capability 9.0. A launch of a kernel whose name contains "fault"
 * succeeds (launches are asynchronous) and makes the context sticky-failed: from then on
 * every call that waits or touches memory returns CUDA_ERROR_ILLEGAL_ADDRESS (700), as the
 * real driver does. `fake_cuda_calls` counts the calls made after the fault (the test checks
 * that the runtime stops calling a lost context). Built as build/fake_cuda/libcuda.so.1 and
 * found through LD_LIBRARY_PATH by that test only. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
static int faulted;
int fake_cuda_calls; /* driver calls after the fault */

#define ENTRY                       \
  do {                              \
    if (faulted) fake_cuda_calls++; \
  } while (0)
#define STICKY               \
  do {                       \
    ENTRY;                   \
    if (faulted) return 700; \
  } while (0)

/* Every allocation stays reachable from here until freed (a lost context never frees its
 * modules and events: no leak reports in the sanitizer build). */
static void *live[4096];
static void *keep(void *p) {
  for (int i = 0; i < 4096; i++)
    if (!live[i]) {
      live[i] = p;
      break;
    }
  return p;
}
static void drop(void *p) {
  for (int i = 0; i < 4096; i++)
    if (live[i] == p) live[i] = NULL;
  free(p);
}

typedef struct fn {
  char name[128];
} fn;

CUresult cuInit(unsigned f) {
  (void)f;
  return 0;
}
CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return 0;
}
CUresult cuDeviceGetCount(int *n) {
  *n = 1;
  return 0;
}
CUresult cuDeviceGet(int *d, int i) {
  *d = i;
  return 0;
}
CUresult cuDeviceGetName(char *s, int n, int d) {
  (void)d;
  strncpy(s, "fake GPU", (size_t)n);
  return 0;
}
CUresult cuDeviceGetAttribute(int *v, int a, int d) {
  (void)d;
  switch (a) {
    case 75: *v = 9; break;          /* compute capability major */
    case 76: *v = 0; break;          /* minor */
    case 97: *v = 227 * 1024; break; /* shared memory opt-in */
    case 8: *v = 48 * 1024; break;
    case 10: *v = 32; break;
    case 16: *v = 132; break;
    case 1: *v = 1024; break;
    default: *v = 0;
  }
  return 0;
}
CUresult cuDeviceTotalMem_v2(size_t *b, int d) {
  (void)d;
  *b = (size_t)1 << 30;
  return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **c, int d) {
  (void)d;
  static int ctx;
  *c = &ctx;
  return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int d) {
  (void)d;
  return 0;
}
CUresult cuCtxSetCurrent(void *c) {
  (void)c;
  ENTRY;
  return 0;
}
CUresult cuCtxSynchronize(void) {
  STICKY;
  return 0;
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  STICKY;
  *p = (CUdeviceptr)(uintptr_t)keep(calloc(1, n ? n : 1));
  return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  STICKY;
  drop((void *)(uintptr_t)p);
  return 0;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
  STICKY;
  memcpy((void *)(uintptr_t)d, s, n);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
  STICKY;
  memcpy(d, (void *)(uintptr_t)s, n);
  return 0;
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
  STICKY;
  memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
  return 0;
}
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  STICKY;
  memset((void *)(uintptr_t)d, v, n);
  return 0;
}
CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) {
  STICKY;
  for (size_t i = 0; i < n; i++) ((unsigned short *)(uintptr_t)d)[i] = v;
  return 0;
}
CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) {
  STICKY;
  for (size_t i = 0; i < n; i++) ((unsigned *)(uintptr_t)d)[i] = v;
  return 0;
}
CUresult cuModuleLoadDataEx(void **m, const void *img, unsigned n, int *o, void **v) {
  (void)o, (void)v, (void)n;
  STICKY;
  *m = keep(strdup(img));
  return 0;
}
CUresult cuModuleUnload(void *m) {
  STICKY;
  drop(m);
  return 0;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  STICKY;
  if (!strstr(m, name)) return 500; /* CUDA_ERROR_NOT_FOUND */
  fn *x = keep(calloc(1, sizeof *x));
  strncpy(x->name, name, sizeof x->name - 1);
  *f = x;
  return 0;
}
CUresult cuFuncGetAttribute(int *v, int a, void *f) {
  (void)a, (void)f;
  STICKY;
  *v = 0;
  return 0;
}
CUresult cuFuncSetAttribute(void *f, int a, int v) {
  (void)f, (void)a, (void)v;
  STICKY;
  return 0;
}
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned sh, void *st, void **args, void **extra) {
  (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)sh, (void)st, (void)args, (void)extra;
  STICKY;
  if (strstr(((fn *)f)->name, "fault")) faulted = 1; /* reported later, as a real fault is */
  return 0;
}
CUresult cuEventCreate(void **e, unsigned fl) {
  (void)fl;
  STICKY;
  *e = keep(calloc(1, 8));
  return 0;
}
CUresult cuEventRecord(void *e, void *s) {
  (void)e, (void)s;
  STICKY;
  return 0;
}
CUresult cuEventSynchronize(void *e) {
  (void)e;
  STICKY;
  return 0;
}
CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
  (void)a, (void)b;
  STICKY;
  *ms = 1;
  return 0;
}
CUresult cuEventDestroy_v2(void *e) {
  STICKY;
  drop(e);
  return 0;
}
CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = r == 700 ? "an illegal memory access was encountered" : r == 0 ? "no error" : "fake error";
  return 0;
}
CUresult cuGetErrorName(CUresult r, const char **s) {
  *s = r == 700  ? "CUDA_ERROR_ILLEGAL_ADDRESS"
      : r == 0   ? "CUDA_SUCCESS"
      : r == 500 ? "CUDA_ERROR_NOT_FOUND"
                 : "CUDA_ERROR_FAKE";
  return 0;
}
CUresult cuStreamCreate(void **s, unsigned f) {
  (void)f;
  STICKY;
  *s = keep(calloc(1, 8));
  return 0;
}
CUresult cuStreamDestroy_v2(void *s) {
  STICKY;
  drop(s);
  return 0;
}
CUresult cuStreamSynchronize(void *s) {
  (void)s;
  STICKY;
  return 0;
}
CUresult cuStreamWaitEvent(void *s, void *e, unsigned f) {
  (void)s, (void)e, (void)f;
  STICKY;
  return 0;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void *st) {
  (void)st;
  return cuMemcpyDtoD_v2(d, s, n);
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, void *st) {
  (void)st;
  return cuMemsetD8_v2(d, v, n);
}
CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, void *st) {
  (void)st;
  return cuMemsetD16_v2(d, v, n);
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, void *st) {
  (void)st;
  return cuMemsetD32_v2(d, v, n);
}
/* TMA tensor maps: records the swizzle and the inner box of the last encode (the test checks
 * what runtime/device_cuda.c passes); the map itself stays zero. */
int fake_tmap_swizzle = -1, fake_tmap_box0 = -1;
CUresult cuTensorMapEncodeTiled(void *map, int dtype, unsigned rank, void *base, const unsigned long long *dims,
                                const unsigned long long *strides, const unsigned *box, const unsigned *es,
                                int interleave, int swizzle, int l2, int oob) {
  (void)dtype, (void)rank, (void)base, (void)dims, (void)strides, (void)es, (void)interleave, (void)l2, (void)oob;
  STICKY;
  memset(map, 0, 128);
  fake_tmap_swizzle = swizzle;
  fake_tmap_box0 = (int)box[0];
  return 0;
}
/* im2col maps: records the pixels per column and the lower W corner of the last encode */
int fake_tmap_i2c_pixels = -1, fake_tmap_i2c_lo0 = 1000;
CUresult cuTensorMapEncodeIm2col(void *map, int dtype, unsigned rank, void *base, const unsigned long long *dims,
                                 const unsigned long long *strides, const int *lo, const int *up, unsigned cpp,
                                 unsigned ppc, const unsigned *es, int interleave, int swizzle, int l2, int oob) {
  (void)dtype, (void)rank, (void)base, (void)dims, (void)strides, (void)up, (void)es, (void)interleave, (void)l2,
      (void)oob;
  STICKY;
  memset(map, 0, 128);
  fake_tmap_swizzle = swizzle;
  fake_tmap_box0 = (int)cpp;
  fake_tmap_i2c_pixels = (int)ppc;
  fake_tmap_i2c_lo0 = lo[0];
  return 0;
}
