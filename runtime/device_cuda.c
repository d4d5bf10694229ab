/* device_cuda.c — NVIDIA GPUs through the CUDA driver API, loaded with
 * dlopen("libcuda.so.1") at open time (no CUDA headers or libraries at build time: the
 * few types, constants and prototypes are declared below, with the versioned "_v2"
 * entry points the driver exports). Each device retains the primary context of its GPU
 * and makes it current before every driver call, so it may be used from any thread
 * (one at a time). Every CUresult is checked and reported with the call, its error name
 * and string. Binaries are PTX text (JIT-compiled by the driver, its log is included in
 * errors) or a cubin / fatbin. The library is never dlclose'd.
 * A sticky error (a kernel faulted: CUDA_ERROR_ILLEGAL_ADDRESS, _LAUNCH_FAILED,
 * _MISALIGNED_ADDRESS, ...; the driver reports it at the next call that waits, e.g.
 * cuCtxSynchronize) kills the device's CUDA context for the rest of the process (the driver
 * answers every later call with the same error; it cannot be reset in-process). The first
 * report says so and names the kernels launched since the last successful synchronize (the
 * one that faulted is among them); from then on every call on
 * the device fails at once with that message ("cuda: device lost: ..."), without calling the
 * driver. Compiling needs no device and keeps working. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "runtime/device.h"

/* ---- the driver API subset ---- */

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUevent_st *CUevent;
typedef struct CUstream_st *CUstream;
typedef int CUjit_option;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_NO_DEVICE = 100,
};
enum { /* CUdevice_attribute */
       CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
       CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
       CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
       CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
       CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};
enum { /* CUfunction_attribute */
       CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
       CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
       CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
       CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};
enum { /* CUjit_option */
       CU_JIT_INFO_LOG_BUFFER = 3,
       CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
       CU_JIT_ERROR_LOG_BUFFER = 5,
       CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};
#define CU_EVENT_DEFAULT            0u
#define CU_STREAM_DEFAULT           0u /* a blocking stream: ordered with the legacy default stream */
#define CUDA_DEFAULT_DYNAMIC_SHARED (48u * 1024u)

typedef struct cuda_api {
  CUresult (*cuInit)(unsigned int);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)(void);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuMemsetD16)(CUdeviceptr, unsigned short, size_t);
  CUresult (*cuMemsetD32)(CUdeviceptr, unsigned int, size_t);
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned int, CUjit_option *, void **);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuFuncGetAttribute)(int *, int, CUfunction);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, CUstream, void **, void **);
  CUresult (*cuEventCreate)(CUevent *, unsigned int);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuTensorMapEncodeTiled)(void *, int, unsigned, void *, const unsigned long long *,
                                     const unsigned long long *, const unsigned *, const unsigned *, int, int, int,
                                     int); /* optional: NULL on drivers before CUDA 12 */
  CUresult (*cuTensorMapEncodeIm2col)(void *, int, unsigned, void *, const unsigned long long *,
                                      const unsigned long long *, const int *, const int *, unsigned, unsigned,
                                      const unsigned *, int, int, int, int);               /* optional, as the above */
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction, int, size_t); /* optional */
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuStreamCreate)(CUstream *, unsigned int);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned int);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuMemsetD16Async)(CUdeviceptr, unsigned short, size_t, CUstream);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream);
} cuda_api;

static cuda_api g_cu;
static bool g_cu_loaded;
static CUresult g_cu_init_result;
static char g_cu_load_err[512];
static pthread_once_t g_cu_once = PTHREAD_ONCE_INIT;

static void cuda_load_once(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    snprintf(g_cu_load_err, sizeof g_cu_load_err, "cuda: libcuda.so.1 not found (no NVIDIA driver): %s",
             e ? e : "dlopen failed");
    lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
  }
  static const struct {
    const char *name;
    size_t off;
  } syms[] = {
#define S(field, sym) { sym, offsetof(cuda_api, field) }
    S(cuInit, "cuInit"),
    S(cuDriverGetVersion, "cuDriverGetVersion"),
    S(cuDeviceGetCount, "cuDeviceGetCount"),
    S(cuDeviceGet, "cuDeviceGet"),
    S(cuDeviceGetName, "cuDeviceGetName"),
    S(cuDeviceGetAttribute, "cuDeviceGetAttribute"),
    S(cuDeviceTotalMem, "cuDeviceTotalMem_v2"),
    S(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    S(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    S(cuCtxSetCurrent, "cuCtxSetCurrent"),
    S(cuCtxSynchronize, "cuCtxSynchronize"),
    S(cuMemAlloc, "cuMemAlloc_v2"),
    S(cuMemFree, "cuMemFree_v2"),
    S(cuMemcpyHtoD, "cuMemcpyHtoD_v2"),
    S(cuMemcpyDtoH, "cuMemcpyDtoH_v2"),
    S(cuMemcpyDtoD, "cuMemcpyDtoD_v2"),
    S(cuMemsetD8, "cuMemsetD8_v2"),
    S(cuMemsetD16, "cuMemsetD16_v2"),
    S(cuMemsetD32, "cuMemsetD32_v2"),
    S(cuModuleLoadDataEx, "cuModuleLoadDataEx"),
    S(cuModuleUnload, "cuModuleUnload"),
    S(cuModuleGetFunction, "cuModuleGetFunction"),
    S(cuFuncGetAttribute, "cuFuncGetAttribute"),
    S(cuFuncSetAttribute, "cuFuncSetAttribute"),
    S(cuLaunchKernel, "cuLaunchKernel"),
    S(cuEventCreate, "cuEventCreate"),
    S(cuEventRecord, "cuEventRecord"),
    S(cuEventSynchronize, "cuEventSynchronize"),
    S(cuEventElapsedTime, "cuEventElapsedTime"),
    S(cuEventDestroy, "cuEventDestroy_v2"),
    S(cuGetErrorString, "cuGetErrorString"),
    S(cuGetErrorName, "cuGetErrorName"),
    S(cuStreamCreate, "cuStreamCreate"),
    S(cuStreamDestroy, "cuStreamDestroy_v2"),
    S(cuStreamSynchronize, "cuStreamSynchronize"),
    S(cuStreamWaitEvent, "cuStreamWaitEvent"),
    S(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
    S(cuMemsetD8Async, "cuMemsetD8Async"),
    S(cuMemsetD16Async, "cuMemsetD16Async"),
    S(cuMemsetD32Async, "cuMemsetD32Async"),
#undef S
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void *p = dlsym(lib, syms[i].name);
    if (!p) {
      snprintf(g_cu_load_err, sizeof g_cu_load_err,
               "cuda: libcuda.so.1 has no %s (driver too old? kiln needs CUDA 11 or newer)", syms[i].name);
      dlclose(lib);
      return;
    }
    memcpy((char *)&g_cu + syms[i].off, &p, sizeof p);
  }
  /* optional (CUDA 12 drivers): TMA tensor maps (cuda_tensor_map says so when absent) */
  void *tm = dlsym(lib, "cuTensorMapEncodeTiled");
  memcpy(&g_cu.cuTensorMapEncodeTiled, &tm, sizeof tm);
  void *ti = dlsym(lib, "cuTensorMapEncodeIm2col");
  memcpy(&g_cu.cuTensorMapEncodeIm2col, &ti, sizeof ti);
  /* optional: the resident blocks of a kernel per SM (cuda_resident answers 0 when absent) */
  void *oc = dlsym(lib, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  memcpy(&g_cu.cuOccupancyMaxActiveBlocksPerMultiprocessor, &oc, sizeof oc);
  g_cu_init_result = g_cu.cuInit(0);
  g_cu_loaded = true;
}

/* Errors after which the context is unusable (the driver's "sticky" errors). */
static bool cu_sticky(CUresult r) {
  switch (r) {
    case 700: /* CUDA_ERROR_ILLEGAL_ADDRESS */
    case 702: /* CUDA_ERROR_LAUNCH_TIMEOUT */
    case 714: /* CUDA_ERROR_HARDWARE_STACK_ERROR */
    case 715: /* CUDA_ERROR_ILLEGAL_INSTRUCTION */
    case 716: /* CUDA_ERROR_MISALIGNED_ADDRESS */
    case 717: /* CUDA_ERROR_INVALID_ADDRESS_SPACE */
    case 718: /* CUDA_ERROR_INVALID_PC */
    case 719: /* CUDA_ERROR_LAUNCH_FAILED */
    case 214: /* CUDA_ERROR_ECC_UNCORRECTABLE */
    case 999: /* CUDA_ERROR_UNKNOWN */ return true;
    default: return false;
  }
}

static void cu_describe(CUresult r, char *buf, size_t n) {
  const char *name = NULL, *str = NULL;
  if (g_cu.cuGetErrorName(r, &name) != CUDA_SUCCESS || !name) name = "CUDA_ERROR_UNKNOWN";
  if (g_cu.cuGetErrorString(r, &str) != CUDA_SUCCESS || !str) str = "unrecognised error code";
  snprintf(buf, n, "%s (%d): %s", name, r, str);
}

static kl_status cu_fail(kl_device *dev, CUresult r, const char *what);

#define CU_CHECK(dev, call, what)                          \
  do {                                                     \
    CUresult r_ = (call);                                  \
    if (r_ != CUDA_SUCCESS) return cu_fail(dev, r_, what); \
  } while (0)

/* ---- device state ---- */

typedef struct cuda_dev {
  CUdevice dev;
  CUcontext ctx;
  size_t optin_shared;
  CUstream stream; /* where launches, fills, device-to-device copies and event records go (NULL: default) */
  bool lost;       /* a sticky error killed the context (see the header) */
  char lost_msg[1024];
  char launched[256]; /* the kernels launched since the last successful synchronize (names, in order) */
  int since_sync;
} cuda_dev;

typedef struct cuda_kernel {
  CUfunction fn;
  int static_shared;
  unsigned dyn_limit; /* the current CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
  char *name;
  /* cuda_resident's last answer, for block threads and shared bytes (0 threads: none yet) */
  uint32_t res_block;
  size_t res_shared;
  int resident;
} cuda_kernel;

/* Reports a failed call: "cuda: <what>: <NAME> (<code>): <string>"; a sticky error marks the
 * device lost (see the header) and says which launches may have faulted. */
static kl_status cu_fail(kl_device *dev, CUresult r, const char *what) {
  cuda_dev *c = kl_device_impl(dev);
  char d[256];
  cu_describe(r, d, sizeof d);
  if (!cu_sticky(r) || c->lost) return kl_device_set_error(dev, "cuda: %s: %s", what, d);
  c->lost = true;
  if (c->since_sync > 0)
    snprintf(c->lost_msg, sizeof c->lost_msg,
             "cuda: %s: %s; the device's CUDA context is lost (a sticky error: every later call on it fails; "
             "restart the process to use the GPU again); it faulted in %s of the %d launch%s since the last "
             "successful synchronize: %s",
             what, d, c->since_sync == 1 ? "the one" : "one", c->since_sync, c->since_sync == 1 ? "" : "es",
             c->launched);
  else
    snprintf(c->lost_msg, sizeof c->lost_msg,
             "cuda: %s: %s; the device's CUDA context is lost (a sticky error: every later call on it fails; "
             "restart the process to use the GPU again)",
             what, d);
  return kl_device_set_error(dev, "%s", c->lost_msg);
}

static kl_status cu_enter(kl_device *dev) {
  cuda_dev *c = kl_device_impl(dev);
  if (c->lost) return kl_device_set_error(dev, "cuda: device lost: %s", c->lost_msg);
  CU_CHECK(dev, g_cu.cuCtxSetCurrent(c->ctx), "cuCtxSetCurrent");
  return KL_OK;
}

static CUdeviceptr dptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

static void cuda_destroy(kl_device *dev) {
  cuda_dev *c = kl_device_impl(dev);
  if (!c->lost && g_cu.cuCtxSetCurrent(c->ctx) == CUDA_SUCCESS) g_cu.cuCtxSynchronize();
  g_cu.cuDevicePrimaryCtxRelease(c->dev);
  free(c);
}

static kl_status cuda_alloc(kl_device *dev, size_t bytes, void **out) {
  if (cu_enter(dev) != KL_OK) return KL_ERR;
  CUdeviceptr p = 0;
  CUresult r = g_cu.cuMemAlloc(&p, bytes);
  if (r != CUDA_SUCCESS) {
    char what[64];
    snprintf(what, sizeof what, "cuMemAlloc(%zu bytes)", bytes);
    return cu_fail(dev, r, what);
  }
  *out = (void *)(uintptr_t)p;
  return KL_OK;
}

static kl_status cuda_free(kl_device *dev, void *ptr) {
  if (cu_enter(dev) != KL_OK) return KL_ERR;
  CU_CHECK(dev, g_cu.cuMemFree(dptr(ptr)), "cuMemFree");
  return KL_OK;
}

static kl_status cuda_copy(kl_device *dev, void *dst, const void *src, size_t bytes, kl_copy_kind kind) {
  if (cu_enter(dev) != KL_OK) return KL_ERR;
  char what[64];
  CUresult r;
  switch (kind) {
    case KL_COPY_HTOD:
      r = g_cu.cuMemcpyHtoD(dptr(dst), src, bytes);
      snprintf(what, sizeof what, "cuMemcpyHtoD(%zu bytes)", bytes);
      break;
    case KL_COPY_DTOH:
      r = g_cu.cuMemcpyDtoH(dst, dptr(src), bytes);
      snprintf(what, sizeof what, "cuMemcpyDtoH(%zu bytes)", bytes);
      break;
    default: {
      CUstream st = ((cuda_dev *)kl_device_impl(dev))->stream;
      r = st ? g_cu.cuMemcpyDtoDAsync(dptr(dst), dptr(src), bytes, st) : g_cu.cuMemcpyDtoD(dptr(dst), dptr(src), bytes);
      snprintf(what, sizeof what, "cuMemcpyDtoD%s(%zu bytes)", st ? "Async" : "", bytes);
      break;
    }
  }
  if (r != CUDA_SUCCESS) return cu_fail(dev, r, what);
  return KL_OK;
}

static kl_status cuda_fill(kl_device *dev, void *dst, uint32_t pattern, int pattern_bytes, size_t count) {
  if (cu_enter(dev) != KL_OK) return KL_ERR;
  CUstream st = ((cuda_dev *)kl_device_impl(dev))->stream;
  if (st && pattern_bytes == 1)
    CU_CHECK(dev, g_cu.cuMemsetD8Async(dptr(dst), (unsigned char)pattern, count, st), "cuMemsetD8Async");
  else if (st && pattern_bytes == 2)
    CU_CHECK(dev, g_cu.cuMemsetD16Async(dptr(dst), (unsigned short)pattern, count, st), "cuMemsetD16Async");
  else if (st)
    CU_CHECK(dev, g_cu.cuMemsetD32Async(dptr(dst), pattern, count, st), "cuMemsetD32Async");
  else if (pattern_bytes == 1)
    CU_CHECK(dev, g_cu.cuMemsetD8(dptr(dst), (unsigned char)pattern, count), "cuMemsetD8");
  else if (pattern_bytes == 2)
    CU_CHECK(dev, g_cu.cuMemsetD16(dptr(dst), (unsigned short)pattern, count), "cuMemsetD16");
  else
    CU_CHECK(dev, g_cu.cuMemsetD32(dptr(dst), pattern, count), "cuMemsetD32");
  return KL_OK;
}

static bool is_text_ptx(const unsigned char *p, size_t n) {
  /* cubin: ELF magic; fatbin: 0xBA55ED50 (little endian 50 ED 55 BA). Anything else is
   * treated as PTX text. */
  if (n >= 4 && p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F') return false;
  if (n >= 4 && p[0] == 0x50 && p[1] == 0xED && p[2] == 0x55 && p[3] == 0xBA) return false;
  return true;
}

static kl_status cuda_load(kl_device *dev, const void *binary, size_t size, unsigned flags, void **module) {
  (void)flags; /* the driver checks what it loads */
  if (cu_enter(dev) != KL_OK) return KL_ERR;
  const unsigned char *b = binary;
  char *copy = NULL;
  const void *image = binary;
  if (is_text_ptx(b, size) && b[size - 1] != '\0') { /* the driver needs NUL-terminated PTX */
    copy = kl_xmalloc(size + 1);
    memcpy(copy, binary, size);
    copy[size] = '\0';
    image = copy;
  }
  enum { LOG = 8192 };
  char *err_log = kl_xcalloc(1, LOG), *info_log = kl_xcalloc(1, LOG);
  CUjit_option opts[4] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                           CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES };
  void *vals[4] = { err_log, (void *)(uintptr_t)LOG, info_log, (void *)(uintptr_t)LOG };
  CUmodule m = NULL;
  CUresult r = g_cu.cuModuleLoadDataEx(&m, image, 4, opts, vals);
  free(copy);
  kl_status st = KL_OK;
  if (r != CUDA_SUCCESS) {
    char d[256];
    cu_describe(r, d, sizeof d);
    err_log[LOG - 1] = '\0';
    st = kl_device_set_error(dev, "cuda: cuModuleLoadDataEx (%zu bytes): %s%s%s", size, d,
                             err_log[0] ? "\nPTX JIT log:\n" : "", err_log);
  } else {
    *module = m;
  }
  free(err_log);
  free(info_log);
  return st;
}

static void cuda_unload(kl_device *dev, void *module) {
  if (cu_enter(dev) != KL_OK) return;
  g_cu.cuModuleUnload((CUmodule)module);
}

static kl_status cuda_get_kernel(kl_device *dev, void *module, const char *name, void **kernel) {
  if (cu_enter(dev) != KL_OK) return KL_ERR;
  CUfunction f = NULL;
  CUresult r = g_cu.cuModuleGetFunction(&f, (CUmodule)module, name);
  if (r != CUDA_SUCCESS) {
    char what[300];
    snprintf(what, sizeof what, "cuModuleGetFunction('%s')", name);
    return cu_fail(dev, r, what);
  }
  int stat = 0;
  CU_CHECK(dev, g_cu.cuFuncGetAttribute(&stat, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f),
           "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
  cuda_kernel *k = kl_xcalloc(1, sizeof *k);
  k->fn = f;
  k->name = kl_xstrdup(name);
  k->static_shared = stat;
  k->dyn_limit = stat < (int)CUDA_DEFAULT_DYNAMIC_SHARED ? CUDA_DEFAULT_DYNAMIC_SHARED - (unsigned)stat : 0;
  *kernel = k;
  return KL_OK;
}

static void cuda_release_kernel(kl_device *dev, void *kernel) {
  (void)dev;
  if (kernel) free(((cuda_kernel *)kernel)->name);
  free(kernel);
}

static kl_status cuda_launch(kl_device *dev, void *kernel, const uint32_t grid[3], const uint32_t block[3],
                             size_t shared_bytes, void **args, const size_t *arg_sizes, int nargs) {
  (void)arg_sizes;
  (void)nargs;
  cuda_dev *c = kl_device_impl(dev);
  cuda_kernel *k = kernel;
  if (cu_enter(dev) != KL_OK) return KL_ERR;
  if (shared_bytes > k->dyn_limit) {
    if ((size_t)k->static_shared + shared_bytes > c->optin_shared)
      return kl_device_set_error(dev,
                                 "cuda: launch needs %zu bytes of dynamic + %d bytes of static shared memory; the "
                                 "device allows %zu per block",
                                 shared_bytes, k->static_shared, c->optin_shared);
    CUresult r = g_cu.cuFuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared_bytes);
    if (r != CUDA_SUCCESS) {
      char what[96];
      snprintf(what, sizeof what, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES=%zu)", shared_bytes);
      return cu_fail(dev, r, what);
    }
    k->dyn_limit = (unsigned)shared_bytes;
  }
  CUresult r = g_cu.cuLaunchKernel(k->fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                   (unsigned)shared_bytes, c->stream, args, NULL);
  if (r != CUDA_SUCCESS) {
    char what[160];
    snprintf(what, sizeof what, "cuLaunchKernel(grid %u,%u,%u block %u,%u,%u shared %zu)", grid[0], grid[1], grid[2],
             block[0], block[1], block[2], shared_bytes);
    return cu_fail(dev, r, what);
  }
  size_t used = strlen(c->launched);
  if (used + strlen(k->name) + 8 < sizeof c->launched)
    snprintf(c->launched + used, sizeof c->launched - used, "%s%s", used ? ", " : "", k->name);
  else if (!strstr(c->launched, ", ..."))
    snprintf(c->launched + used, sizeof c->launched - used, ", ...");
  c->since_sync++;
  return KL_OK;
}

static kl_status cuda_sync(kl_device *dev) {
  if (cu_enter(dev) != KL_OK) return KL_ERR;
  CU_CHECK(dev, g_cu.cuCtxSynchronize(), "cuCtxSynchronize");
  cuda_dev *c = kl_device_impl(dev);
  c->since_sync = 0;
  c->launched[0] = '\0';
  return KL_OK;
}

static kl_status cuda_event_create(kl_device *dev, void **event) {
  if (cu_enter(dev) != KL_OK) return KL_ERR;
  CUevent e = NULL;
  CU_CHECK(dev, g_cu.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  *event = e;
  return KL_OK;
}

static kl_status cuda_event_record(kl_device *dev, void *event) {
  if (cu_enter(dev) != KL_OK) return KL_ERR;
  CU_CHECK(dev, g_cu.cuEventRecord((CUevent)event, ((cuda_dev *)kl_device_impl(dev))->stream), "cuEventRecord");
  return KL_OK;
}

static kl_status cuda_event_elapsed(kl_device *dev, void *start, void *end, float *ms) {
  if (cu_enter(dev) != KL_OK) return KL_ERR;
  CU_CHECK(dev, g_cu.cuEventSynchronize((CUevent)end), "cuEventSynchronize");
  CU_CHECK(dev, g_cu.cuEventElapsedTime(ms, (CUevent)start, (CUevent)end), "cuEventElapsedTime");
  return KL_OK;
}

static void cuda_event_destroy(kl_device *dev, void *event) {
  if (cu_enter(dev) != KL_OK) return;
  g_cu.cuEventDestroy((CUevent)event);
}

static kl_status cuda_stream_create(kl_device *dev, void **stream) {
  if (cu_enter(dev) != KL_OK) return KL_ERR;
  CUstream st = NULL;
  CU_CHECK(dev, g_cu.cuStreamCreate(&st, CU_STREAM_DEFAULT), "cuStreamCreate");
  *stream = st;
  return KL_OK;
}

static void cuda_stream_destroy(kl_device *dev, void *stream) {
  if (cu_enter(dev) != KL_OK) return;
  g_cu.cuStreamSynchronize((CUstream)stream);
  g_cu.cuStreamDestroy((CUstream)stream);
}

static void cuda_set_stream(kl_device *dev, void *stream) { ((cuda_dev *)kl_device_impl(dev))->stream = stream; }

static kl_status cuda_stream_wait_event(kl_device *dev, void *stream, void *event) {
  if (cu_enter(dev) != KL_OK) return KL_ERR;
  CU_CHECK(dev, g_cu.cuStreamWaitEvent((CUstream)stream, (CUevent)event, 0), "cuStreamWaitEvent");
  return KL_OK;
}

/* kl_device_resident_per_cu: the driver's occupancy of the kernel (its dynamic shared memory
 * limit raised first, as cuda_launch does: the occupancy of a kernel whose limit is below the
 * bytes asked is 0); 0 where it cannot say. The last answer is kept per kernel. */
static int cuda_resident(kl_device *dev, void *kernel, uint32_t block, size_t shared) {
  cuda_dev *c = kl_device_impl(dev);
  cuda_kernel *k = kernel;
  if (!g_cu.cuOccupancyMaxActiveBlocksPerMultiprocessor) return 0;
  if (k->res_block == block && k->res_shared == shared) return k->resident;
  if (cu_enter(dev) != KL_OK) return 0;
  if (shared > k->dyn_limit) {
    if ((size_t)k->static_shared + shared > c->optin_shared ||
        g_cu.cuFuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared) != CUDA_SUCCESS)
      return 0;
    k->dyn_limit = (unsigned)shared;
  }
  int n = 0;
  if (g_cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, k->fn, (int)block, shared) != CUDA_SUCCESS) return 0;
  k->res_block = block, k->res_shared = shared, k->resident = n;
  return n;
}

/* CUtensorMap of a tiled 16-bit tensor (kl_device_tensor_map): data type FLOAT16 (6) or
 * BFLOAT16 (9), element strides 1, INTERLEAVE_NONE, SWIZZLE_NONE / 32B / 64B / 128B (0..3),
 * L2_PROMOTION_L2_128B (2), FLOAT_OOB_FILL_NONE (zeros). Host-side only: no context work.
 * The arguments are checked here first (a located error instead of the driver's bare
 * CUDA_ERROR_INVALID_VALUE): rank 1..5, base 16-byte aligned, dims in [1, 2^32], strides
 * multiples of 16 below 2^40, box in [1, 256] with box[0] * 2 a multiple of 16 and at most
 * the swizzle span. */
static kl_status cuda_tensor_map(kl_device *dev, const kl_tensor_map_desc *d, void *out) {
  if (!g_cu.cuTensorMapEncodeTiled)
    return kl_device_set_error(dev, "cuda: the driver has no cuTensorMapEncodeTiled (TMA needs a CUDA 12 driver)");
  unsigned long long dims[5], strides[4];
  unsigned box[5], es[5];
  int swz = d->swizzle == 0 ? 0 : d->swizzle == 32 ? 1 : d->swizzle == 64 ? 2 : d->swizzle == 128 ? 3 : -1;
  if (d->rank < 1 || d->rank > 5 || swz < 0 || ((uintptr_t)d->base % 16))
    return kl_device_set_error(dev,
                               "cuda: tensor map: rank %d (1..5), swizzle %d (0, 32, 64, 128) or base %p (16-byte "
                               "aligned) out of range",
                               d->rank, d->swizzle, d->base);
  for (int i = 0; i < d->rank; i++) {
    bool bad = d->dims[i] < 1 || d->dims[i] > (1ull << 32) || d->box[i] < 1 || d->box[i] > 256 ||
        (i && (d->strides[i - 1] % 16 || d->strides[i - 1] >= (1ull << 40))) ||
        (i == 0 && ((d->box[0] * 2) % 16 || (swz && d->box[0] * 2 > (unsigned)d->swizzle)));
    if (bad)
      return kl_device_set_error(dev,
                                 "cuda: tensor map dim %d: dims %llu (1..2^32), box %u (1..256; the inner box a "
                                 "multiple of 16 bytes and at most the %d-byte swizzle) or stride %llu (a multiple of "
                                 "16 below 2^40) out of range",
                                 i, (unsigned long long)d->dims[i], d->box[i], d->swizzle,
                                 (unsigned long long)(i ? d->strides[i - 1] : 0));
  }
  for (int i = 0; i < d->rank; i++) {
    dims[i] = d->dims[i];
    box[i] = d->box[i];
    es[i] = 1;
    if (i) strides[i - 1] = d->strides[i - 1];
  }
  CUresult r;
  if (d->im2col) { /* im2col mode: rank 4 {C, W, H, N} (runtime/device.h) */
    if (!g_cu.cuTensorMapEncodeIm2col)
      return kl_device_set_error(dev, "cuda: the driver has no cuTensorMapEncodeIm2col (TMA needs a CUDA 12 driver)");
    bool bad = d->rank != 4;
    for (int i = 0; i < 2; i++)
      bad = bad || d->lo[i] < -128 || d->lo[i] > 127 || d->up[i] < -128 || d->up[i] > 127 || d->es[i] < 1 ||
          d->es[i] > 8;
    if (bad)
      return kl_device_set_error(dev,
                                 "cuda: im2col tensor map: rank %d (4), corners %d %d / %d %d (in [-128, 127]) or "
                                 "traversal strides %u %u (1..8) out of range",
                                 d->rank, d->lo[0], d->lo[1], d->up[0], d->up[1], d->es[0], d->es[1]);
    int lo[2] = { d->lo[0], d->lo[1] }, up[2] = { d->up[0], d->up[1] };
    es[1] = d->es[0], es[2] = d->es[1];
    r = g_cu.cuTensorMapEncodeIm2col(out, d->bf16 ? 9 : 6, 4u, d->base, dims, strides, lo, up, box[0], box[1], es, 0,
                                     swz, 2, 0);
  } else
    r = g_cu.cuTensorMapEncodeTiled(out, d->bf16 ? 9 : 6, (unsigned)d->rank, d->base, dims, strides, box, es, 0, swz, 2,
                                    0);
  if (r != CUDA_SUCCESS) {
    char what[320];
    int n = snprintf(what, sizeof what, "cuTensorMapEncode%s(rank %d, base %p, dims", d->im2col ? "Im2col" : "Tiled",
                     d->rank, d->base);
    for (int i = 0; i < d->rank && n < (int)sizeof what; i++)
      n += snprintf(what + n, sizeof what - n, " %llu", dims[i]);
    n += snprintf(what + n, n < (int)sizeof what ? sizeof what - n : 0, ", strides");
    for (int i = 0; i + 1 < d->rank && n < (int)sizeof what; i++)
      n += snprintf(what + n, sizeof what - n, " %llu", strides[i]);
    n += snprintf(what + n, n < (int)sizeof what ? sizeof what - n : 0, ", box");
    for (int i = 0; i < d->rank && n < (int)sizeof what; i++) n += snprintf(what + n, sizeof what - n, " %u", box[i]);
    if (n < (int)sizeof what) snprintf(what + n, sizeof what - n, ")");
    char desc[200];
    cu_describe(r, desc, sizeof desc);
    return kl_device_set_error(dev, "cuda: %s: %s", what, desc);
  }
  return KL_OK;
}

static const kl_device_ops cuda_ops = {
  .destroy = cuda_destroy,
  .alloc = cuda_alloc,
  .free = cuda_free,
  .copy = cuda_copy,
  .fill = cuda_fill,
  .load = cuda_load,
  .unload = cuda_unload,
  .get_kernel = cuda_get_kernel,
  .release_kernel = cuda_release_kernel,
  .launch = cuda_launch,
  .synchronize = cuda_sync,
  .event_create = cuda_event_create,
  .event_record = cuda_event_record,
  .event_elapsed = cuda_event_elapsed,
  .event_destroy = cuda_event_destroy,
  .stream_create = cuda_stream_create,
  .stream_destroy = cuda_stream_destroy,
  .set_stream = cuda_set_stream,
  .stream_wait_event = cuda_stream_wait_event,
  .tensor_map = cuda_tensor_map,
  .resident = cuda_resident,
};

/* The newest NVPTX arch kiln compiles for that the GPU can run (PTX is forward
 * compatible: the driver JIT-compiles sm_90 PTX for newer GPUs); compute capability 9.0
 * exactly: sm_90a (arch-specific PTX, which newer GPUs cannot run). */
static void arch_for_cc(int major, int minor, char *out, size_t n) {
  static const int known[] = { 60, 61, 70, 72, 75, 80, 86, 87, 89, 90 };
  int cc = major * 10 + minor, best = 0;
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (known[i] <= cc) best = known[i];
  if (cc == 90)
    snprintf(out, n, "sm_90a"); /* H100 / H200: sm_90 plus wgmma (core/target.c); its code runs on 9.0 only */
  else if (best)
    snprintf(out, n, "sm_%d", best);
  else
    snprintf(out, n, "sm_%d%d", major, minor); /* older than kiln supports: codegen will say so */
}

#define OPEN_CHECK(call, what)                                            \
  do {                                                                    \
    CUresult r_ = (call);                                                 \
    if (r_ != CUDA_SUCCESS) {                                             \
      char d_[256];                                                       \
      cu_describe(r_, d_, sizeof d_);                                     \
      if (err && errlen) snprintf(err, errlen, "cuda: %s: %s", what, d_); \
      goto fail;                                                          \
    }                                                                     \
  } while (0)

kl_device *kl_device_open_cuda(int ordinal, char *err, size_t errlen) {
  pthread_once(&g_cu_once, cuda_load_once);
  if (!g_cu_loaded) {
    if (err && errlen) snprintf(err, errlen, "%s", g_cu_load_err);
    return NULL;
  }
  if (g_cu_init_result != CUDA_SUCCESS) {
    char d[256];
    cu_describe(g_cu_init_result, d, sizeof d);
    if (err && errlen)
      snprintf(err, errlen, "cuda: %s: %s",
               g_cu_init_result == CUDA_ERROR_NO_DEVICE ? "no NVIDIA GPU (cuInit)" : "cuInit", d);
    return NULL;
  }
  cuda_dev *c = kl_xcalloc(1, sizeof *c);
  bool retained = false;
  int count = 0;
  OPEN_CHECK(g_cu.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0) {
    if (err && errlen) snprintf(err, errlen, "cuda: no NVIDIA GPU (cuDeviceGetCount returned 0)");
    goto fail;
  }
  if (ordinal >= count) {
    if (err && errlen) snprintf(err, errlen, "cuda: no GPU %d (there are %d)", ordinal, count);
    goto fail;
  }
  OPEN_CHECK(g_cu.cuDeviceGet(&c->dev, ordinal), "cuDeviceGet");
  OPEN_CHECK(g_cu.cuDevicePrimaryCtxRetain(&c->ctx, c->dev), "cuDevicePrimaryCtxRetain");
  retained = true;
  OPEN_CHECK(g_cu.cuCtxSetCurrent(c->ctx), "cuCtxSetCurrent");

  kl_device_info info;
  memset(&info, 0, sizeof info);
  info.kind = KL_DEVICE_CUDA;
  info.ordinal = ordinal;
  snprintf(info.backend, sizeof info.backend, "cuda");
  OPEN_CHECK(g_cu.cuDeviceGetName(info.name, (int)sizeof info.name, c->dev), "cuDeviceGetName");
  int v = 0;
  OPEN_CHECK(g_cu.cuDeviceGetAttribute(&info.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->dev),
             "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)");
  OPEN_CHECK(g_cu.cuDeviceGetAttribute(&info.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->dev),
             "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)");
  arch_for_cc(info.cc_major, info.cc_minor, info.arch, sizeof info.arch);
  OPEN_CHECK(g_cu.cuDeviceTotalMem(&info.total_mem, c->dev), "cuDeviceTotalMem");
  OPEN_CHECK(g_cu.cuDeviceGetAttribute(&info.compute_units, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, c->dev),
             "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  OPEN_CHECK(g_cu.cuDeviceGetAttribute(&info.wave_size, CU_DEVICE_ATTRIBUTE_WARP_SIZE, c->dev),
             "cuDeviceGetAttribute(WARP_SIZE)");
  OPEN_CHECK(g_cu.cuDeviceGetAttribute(&info.max_threads_per_block, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, c->dev),
             "cuDeviceGetAttribute(MAX_THREADS_PER_BLOCK)");
  OPEN_CHECK(g_cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, c->dev),
             "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)");
  if (v <= 0)
    OPEN_CHECK(g_cu.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, c->dev),
               "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK)");
  info.max_shared_per_block = v > 0 ? (size_t)v : CUDA_DEFAULT_DYNAMIC_SHARED;
  c->optin_shared = info.max_shared_per_block;
  int drv = 0;
  OPEN_CHECK(g_cu.cuDriverGetVersion(&drv), "cuDriverGetVersion");
  snprintf(info.driver, sizeof info.driver, "CUDA driver %d.%d", drv / 1000, (drv % 1000) / 10);
  return kl_device_new(&cuda_ops, c, &info);
fail:
  if (retained) g_cu.cuDevicePrimaryCtxRelease(c->dev);
  free(c);
  return NULL;
}
