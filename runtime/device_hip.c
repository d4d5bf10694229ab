/* device_hip.c — AMD GPUs through the HIP runtime, loaded with dlopen of
 * libamdhip64.so (or .so.6 / .so.5) at open time; no ROCm headers or libraries at build
 * time (the few types, enum values and prototypes are declared below; the attribute
 * enum values are the same from ROCm 5.0 to 6.x). The device's ordinal is made current
 * (hipSetDevice) before every call, so a device may be used from any thread (one at a
 * time). Binaries are HSACO code objects (hipModuleLoadData). Launch arguments are
 * passed as kernelParams (HIP lays them out from the code object's metadata). Every
 * hipError_t is checked and reported with hipGetErrorName / hipGetErrorString. The
 * library is never dlclose'd. */
#include <dlfcn.h>
/* libamdhip64 carries its own LLVM: bind it to its own symbols first (RTLD_DEEPBIND),
 * except under AddressSanitizer, which refuses DEEPBIND libraries (gcc says so with
 * __SANITIZE_ADDRESS__, clang 14 only through __has_feature). */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KL_HIP_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(KL_HIP_UNDER_ASAN)
#define KL_HIP_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL)
#else
#define KL_HIP_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND)
#endif
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "runtime/device.h"

typedef int hipError_t;
typedef int hipDevice_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct ihipEvent_t *hipEvent_t;
typedef struct ihipStream_t *hipStream_t;

enum { hipSuccess = 0, hipErrorNoDevice = 100 };
enum { hipMemcpyHostToDevice = 1, hipMemcpyDeviceToHost = 2, hipMemcpyDeviceToDevice = 3 };
enum { /* hipDeviceAttribute_t (ROCm >= 5.0) */
       hipDeviceAttributeMaxThreadsPerBlock = 56,
       hipDeviceAttributeMultiprocessorCount = 63,
       hipDeviceAttributeMaxSharedMemoryPerBlock = 74,
       hipDeviceAttributeWarpSize = 87,
};

typedef struct hip_api {
  hipError_t (*hipInit)(unsigned int);
  hipError_t (*hipGetDeviceCount)(int *);
  hipError_t (*hipSetDevice)(int);
  hipError_t (*hipDeviceGet)(hipDevice_t *, int);
  hipError_t (*hipDeviceGetName)(char *, int, hipDevice_t);
  hipError_t (*hipDeviceGetAttribute)(int *, int, int);
  hipError_t (*hipDeviceTotalMem)(size_t *, hipDevice_t);
  hipError_t (*hipGetDeviceProperties)(void *, int); /* R0600 on ROCm 6; the layout is not used, see below */
  hipError_t (*hipRuntimeGetVersion)(int *);
  hipError_t (*hipDeviceSynchronize)(void);
  hipError_t (*hipMalloc)(void **, size_t);
  hipError_t (*hipFree)(void *);
  hipError_t (*hipMemcpy)(void *, const void *, size_t, int);
  hipError_t (*hipMemsetD8)(void *, unsigned char, size_t);
  hipError_t (*hipMemsetD16)(void *, unsigned short, size_t);
  hipError_t (*hipMemsetD32)(void *, int, size_t);
  hipError_t (*hipMemsetD8Async)(void *, unsigned char, size_t, hipStream_t);
  hipError_t (*hipMemsetD16Async)(void *, unsigned short, size_t, hipStream_t);
  hipError_t (*hipMemsetD32Async)(void *, int, size_t, hipStream_t);
  hipError_t (*hipMemcpyAsync)(void *, const void *, size_t, int, hipStream_t);
  hipError_t (*hipStreamCreate)(hipStream_t *);
  hipError_t (*hipStreamDestroy)(hipStream_t);
  hipError_t (*hipStreamSynchronize)(hipStream_t);
  hipError_t (*hipStreamWaitEvent)(hipStream_t, hipEvent_t, unsigned int);
  hipError_t (*hipModuleLoadData)(hipModule_t *, const void *);
  hipError_t (*hipModuleUnload)(hipModule_t);
  hipError_t (*hipModuleGetFunction)(hipFunction_t *, hipModule_t, const char *);
  hipError_t (*hipModuleLaunchKernel)(hipFunction_t, unsigned int, unsigned int, unsigned int, unsigned int,
                                      unsigned int, unsigned int, unsigned int, hipStream_t, void **, void **);
  hipError_t (*hipEventCreate)(hipEvent_t *);
  hipError_t (*hipEventRecord)(hipEvent_t, hipStream_t);
  hipError_t (*hipEventSynchronize)(hipEvent_t);
  hipError_t (*hipEventElapsedTime)(float *, hipEvent_t, hipEvent_t);
  hipError_t (*hipEventDestroy)(hipEvent_t);
  const char *(*hipGetErrorName)(hipError_t);
  const char *(*hipGetErrorString)(hipError_t);
} hip_api;

static hip_api g_hip;
static bool g_hip_loaded;
static hipError_t g_hip_init_result;
static char g_hip_load_err[512];
static pthread_once_t g_hip_once = PTHREAD_ONCE_INIT;

static void hip_load_once(void) {
  static const char *const names[] = { "libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5" };
  void *lib = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++) lib = dlopen(names[i], KL_HIP_DLOPEN_FLAGS);
  if (!lib) {
    snprintf(g_hip_load_err, sizeof g_hip_load_err,
             "hip: libamdhip64.so not found (no ROCm runtime; tried libamdhip64.so, .so.6, .so.5)");
    return;
  }
  static const struct {
    const char *name, *alt;
    size_t off;
  } syms[] = {
#define S(field, sym, alt) { sym, alt, offsetof(hip_api, field) }
    S(hipInit, "hipInit", NULL),
    S(hipGetDeviceCount, "hipGetDeviceCount", NULL),
    S(hipSetDevice, "hipSetDevice", NULL),
    S(hipDeviceGet, "hipDeviceGet", NULL),
    S(hipDeviceGetName, "hipDeviceGetName", NULL),
    S(hipDeviceGetAttribute, "hipDeviceGetAttribute", NULL),
    S(hipDeviceTotalMem, "hipDeviceTotalMem", NULL),
    S(hipGetDeviceProperties, "hipGetDevicePropertiesR0600", "hipGetDeviceProperties"),
    S(hipRuntimeGetVersion, "hipRuntimeGetVersion", NULL),
    S(hipDeviceSynchronize, "hipDeviceSynchronize", NULL),
    S(hipMalloc, "hipMalloc", NULL),
    S(hipFree, "hipFree", NULL),
    S(hipMemcpy, "hipMemcpy", NULL),
    S(hipMemsetD8, "hipMemsetD8", NULL),
    S(hipMemsetD16, "hipMemsetD16", NULL),
    S(hipMemsetD32, "hipMemsetD32", NULL),
    S(hipMemsetD8Async, "hipMemsetD8Async", NULL),
    S(hipMemsetD16Async, "hipMemsetD16Async", NULL),
    S(hipMemsetD32Async, "hipMemsetD32Async", NULL),
    S(hipMemcpyAsync, "hipMemcpyAsync", NULL),
    S(hipStreamCreate, "hipStreamCreate", NULL),
    S(hipStreamDestroy, "hipStreamDestroy", NULL),
    S(hipStreamSynchronize, "hipStreamSynchronize", NULL),
    S(hipStreamWaitEvent, "hipStreamWaitEvent", NULL),
    S(hipModuleLoadData, "hipModuleLoadData", NULL),
    S(hipModuleUnload, "hipModuleUnload", NULL),
    S(hipModuleGetFunction, "hipModuleGetFunction", NULL),
    S(hipModuleLaunchKernel, "hipModuleLaunchKernel", NULL),
    S(hipEventCreate, "hipEventCreate", NULL),
    S(hipEventRecord, "hipEventRecord", NULL),
    S(hipEventSynchronize, "hipEventSynchronize", NULL),
    S(hipEventElapsedTime, "hipEventElapsedTime", NULL),
    S(hipEventDestroy, "hipEventDestroy", NULL),
    S(hipGetErrorName, "hipGetErrorName", NULL),
    S(hipGetErrorString, "hipGetErrorString", NULL),
#undef S
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    void *p = dlsym(lib, syms[i].name);
    if (!p && syms[i].alt) p = dlsym(lib, syms[i].alt);
    if (!p) {
      snprintf(g_hip_load_err, sizeof g_hip_load_err, "hip: libamdhip64 has no %s (ROCm too old? kiln needs ROCm 5+)",
               syms[i].name);
      dlclose(lib);
      return;
    }
    memcpy((char *)&g_hip + syms[i].off, &p, sizeof p);
  }
  g_hip_init_result = g_hip.hipInit(0);
  g_hip_loaded = true;
}

static void hip_describe(hipError_t r, char *buf, size_t n) {
  const char *name = g_hip.hipGetErrorName(r), *str = g_hip.hipGetErrorString(r);
  snprintf(buf, n, "%s (%d): %s", name ? name : "hipErrorUnknown", r, str ? str : "unrecognised error code");
}

static kl_status hip_fail(kl_device *dev, hipError_t r, const char *what) {
  char d[256];
  hip_describe(r, d, sizeof d);
  return kl_device_set_error(dev, "hip: %s: %s", what, d);
}

#define HIP_CHECK(dev, call, what)                        \
  do {                                                    \
    hipError_t r_ = (call);                               \
    if (r_ != hipSuccess) return hip_fail(dev, r_, what); \
  } while (0)

typedef struct hip_dev {
  int ordinal;
  hipStream_t stream; /* where launches, fills, device-to-device copies and event records go (NULL: default) */
} hip_dev;

static kl_status hip_enter(kl_device *dev) {
  hip_dev *h = kl_device_impl(dev);
  HIP_CHECK(dev, g_hip.hipSetDevice(h->ordinal), "hipSetDevice");
  return KL_OK;
}

static void hip_destroy(kl_device *dev) {
  if (hip_enter(dev) == KL_OK) g_hip.hipDeviceSynchronize();
  free(kl_device_impl(dev));
}

static kl_status hip_alloc(kl_device *dev, size_t bytes, void **out) {
  if (hip_enter(dev) != KL_OK) return KL_ERR;
  hipError_t r = g_hip.hipMalloc(out, bytes);
  if (r != hipSuccess) {
    char what[64];
    snprintf(what, sizeof what, "hipMalloc(%zu bytes)", bytes);
    return hip_fail(dev, r, what);
  }
  return KL_OK;
}

static kl_status hip_free(kl_device *dev, void *ptr) {
  if (hip_enter(dev) != KL_OK) return KL_ERR;
  HIP_CHECK(dev, g_hip.hipFree(ptr), "hipFree");
  return KL_OK;
}

static kl_status hip_copy(kl_device *dev, void *dst, const void *src, size_t bytes, kl_copy_kind kind) {
  if (hip_enter(dev) != KL_OK) return KL_ERR;
  int k = kind == KL_COPY_HTOD ? hipMemcpyHostToDevice
      : kind == KL_COPY_DTOH   ? hipMemcpyDeviceToHost
                               : hipMemcpyDeviceToDevice;
  hipStream_t st = ((hip_dev *)kl_device_impl(dev))->stream;
  hipError_t r = st && kind == KL_COPY_DTOD ? g_hip.hipMemcpyAsync(dst, src, bytes, k, st)
                                            : g_hip.hipMemcpy(dst, src, bytes, k);
  if (r != hipSuccess) {
    char what[64];
    snprintf(what, sizeof what, "hipMemcpy(%zu bytes, %s)", bytes,
             kind == KL_COPY_HTOD       ? "host to device"
                 : kind == KL_COPY_DTOH ? "device to host"
                                        : "device to device");
    return hip_fail(dev, r, what);
  }
  return KL_OK;
}

static kl_status hip_fill(kl_device *dev, void *dst, uint32_t pattern, int pattern_bytes, size_t count) {
  if (hip_enter(dev) != KL_OK) return KL_ERR;
  hipStream_t st = ((hip_dev *)kl_device_impl(dev))->stream;
  if (st && pattern_bytes == 1)
    HIP_CHECK(dev, g_hip.hipMemsetD8Async(dst, (unsigned char)pattern, count, st), "hipMemsetD8Async");
  else if (st && pattern_bytes == 2)
    HIP_CHECK(dev, g_hip.hipMemsetD16Async(dst, (unsigned short)pattern, count, st), "hipMemsetD16Async");
  else if (st)
    HIP_CHECK(dev, g_hip.hipMemsetD32Async(dst, (int)pattern, count, st), "hipMemsetD32Async");
  else if (pattern_bytes == 1)
    HIP_CHECK(dev, g_hip.hipMemsetD8(dst, (unsigned char)pattern, count), "hipMemsetD8");
  else if (pattern_bytes == 2)
    HIP_CHECK(dev, g_hip.hipMemsetD16(dst, (unsigned short)pattern, count), "hipMemsetD16");
  else
    HIP_CHECK(dev, g_hip.hipMemsetD32(dst, (int)pattern, count), "hipMemsetD32");
  return KL_OK;
}

static kl_status hip_load(kl_device *dev, const void *binary, size_t size, unsigned flags, void **module) {
  (void)flags; /* the driver checks what it loads */
  if (hip_enter(dev) != KL_OK) return KL_ERR;
  hipModule_t m = NULL;
  hipError_t r = g_hip.hipModuleLoadData(&m, binary);
  if (r != hipSuccess) {
    char what[96];
    snprintf(what, sizeof what, "hipModuleLoadData(%zu bytes, for %s)", size, kl_device_get_info(dev)->arch);
    return hip_fail(dev, r, what);
  }
  *module = m;
  return KL_OK;
}

static void hip_unload(kl_device *dev, void *module) {
  if (hip_enter(dev) != KL_OK) return;
  g_hip.hipModuleUnload((hipModule_t)module);
}

static kl_status hip_get_kernel(kl_device *dev, void *module, const char *name, void **kernel) {
  if (hip_enter(dev) != KL_OK) return KL_ERR;
  hipFunction_t f = NULL;
  hipError_t r = g_hip.hipModuleGetFunction(&f, (hipModule_t)module, name);
  if (r != hipSuccess) {
    char what[300];
    snprintf(what, sizeof what, "hipModuleGetFunction('%s')", name);
    return hip_fail(dev, r, what);
  }
  *kernel = f;
  return KL_OK;
}

static kl_status hip_launch(kl_device *dev, void *kernel, const uint32_t grid[3], const uint32_t block[3],
                            size_t shared_bytes, void **args, const size_t *arg_sizes, int nargs) {
  (void)arg_sizes;
  (void)nargs;
  if (hip_enter(dev) != KL_OK) return KL_ERR;
  hipError_t r = g_hip.hipModuleLaunchKernel((hipFunction_t)kernel, grid[0], grid[1], grid[2], block[0], block[1],
                                             block[2], (unsigned)shared_bytes, ((hip_dev *)kl_device_impl(dev))->stream,
                                             args, NULL);
  if (r != hipSuccess) {
    char what[160];
    snprintf(what, sizeof what, "hipModuleLaunchKernel(grid %u,%u,%u block %u,%u,%u shared %zu)", grid[0], grid[1],
             grid[2], block[0], block[1], block[2], shared_bytes);
    return hip_fail(dev, r, what);
  }
  return KL_OK;
}

static kl_status hip_sync(kl_device *dev) {
  if (hip_enter(dev) != KL_OK) return KL_ERR;
  HIP_CHECK(dev, g_hip.hipDeviceSynchronize(), "hipDeviceSynchronize");
  return KL_OK;
}

static kl_status hip_event_create(kl_device *dev, void **event) {
  if (hip_enter(dev) != KL_OK) return KL_ERR;
  hipEvent_t e = NULL;
  HIP_CHECK(dev, g_hip.hipEventCreate(&e), "hipEventCreate");
  *event = e;
  return KL_OK;
}

static kl_status hip_event_record(kl_device *dev, void *event) {
  if (hip_enter(dev) != KL_OK) return KL_ERR;
  HIP_CHECK(dev, g_hip.hipEventRecord((hipEvent_t)event, ((hip_dev *)kl_device_impl(dev))->stream), "hipEventRecord");
  return KL_OK;
}

static kl_status hip_event_elapsed(kl_device *dev, void *start, void *end, float *ms) {
  if (hip_enter(dev) != KL_OK) return KL_ERR;
  HIP_CHECK(dev, g_hip.hipEventSynchronize((hipEvent_t)end), "hipEventSynchronize");
  HIP_CHECK(dev, g_hip.hipEventElapsedTime(ms, (hipEvent_t)start, (hipEvent_t)end), "hipEventElapsedTime");
  return KL_OK;
}

static void hip_event_destroy(kl_device *dev, void *event) {
  if (hip_enter(dev) != KL_OK) return;
  g_hip.hipEventDestroy((hipEvent_t)event);
}

static kl_status hip_stream_create(kl_device *dev, void **stream) {
  if (hip_enter(dev) != KL_OK) return KL_ERR;
  hipStream_t st = NULL;
  HIP_CHECK(dev, g_hip.hipStreamCreate(&st), "hipStreamCreate");
  *stream = st;
  return KL_OK;
}

static void hip_stream_destroy(kl_device *dev, void *stream) {
  if (hip_enter(dev) != KL_OK) return;
  g_hip.hipStreamSynchronize((hipStream_t)stream);
  g_hip.hipStreamDestroy((hipStream_t)stream);
}

static void hip_set_stream(kl_device *dev, void *stream) { ((hip_dev *)kl_device_impl(dev))->stream = stream; }

static kl_status hip_stream_wait_event(kl_device *dev, void *stream, void *event) {
  if (hip_enter(dev) != KL_OK) return KL_ERR;
  HIP_CHECK(dev, g_hip.hipStreamWaitEvent((hipStream_t)stream, (hipEvent_t)event, 0), "hipStreamWaitEvent");
  return KL_OK;
}

static const kl_device_ops hip_ops = {
  .destroy = hip_destroy,
  .alloc = hip_alloc,
  .free = hip_free,
  .copy = hip_copy,
  .fill = hip_fill,
  .load = hip_load,
  .unload = hip_unload,
  .get_kernel = hip_get_kernel,
  .release_kernel = NULL,
  .launch = hip_launch,
  .synchronize = hip_sync,
  .event_create = hip_event_create,
  .event_record = hip_event_record,
  .event_elapsed = hip_event_elapsed,
  .event_destroy = hip_event_destroy,
  .stream_create = hip_stream_create,
  .stream_destroy = hip_stream_destroy,
  .set_stream = hip_set_stream,
  .stream_wait_event = hip_stream_wait_event,
};

/* The chip ("gfx942") from hipDeviceProp_t.gcnArchName ("gfx942:sramecc+:xnack-").
 * The struct's layout differs between ROCm 5 and 6, so the properties are read into a
 * buffer larger than either layout and searched for a string that starts with "gfx"
 * and a digit at the start of a field (preceded by a NUL). */
static bool find_gcn_arch(const char *buf, size_t n, char *out, size_t outn) {
  for (size_t i = 1; i + 4 < n; i++) {
    if (buf[i - 1] != '\0' || strncmp(buf + i, "gfx", 3) != 0 || buf[i + 3] < '0' || buf[i + 3] > '9') continue;
    size_t len = 0;
    while (i + len < n && buf[i + len] && buf[i + len] != ':' && len + 1 < outn) len++;
    memcpy(out, buf + i, len);
    out[len] = '\0';
    return true;
  }
  return false;
}

#define HOPEN_CHECK(call, what)                                          \
  do {                                                                   \
    hipError_t r_ = (call);                                              \
    if (r_ != hipSuccess) {                                              \
      char d_[256];                                                      \
      hip_describe(r_, d_, sizeof d_);                                   \
      if (err && errlen) snprintf(err, errlen, "hip: %s: %s", what, d_); \
      goto fail;                                                         \
    }                                                                    \
  } while (0)

kl_device *kl_device_open_hip(int ordinal, char *err, size_t errlen) {
  pthread_once(&g_hip_once, hip_load_once);
  if (!g_hip_loaded) {
    if (err && errlen) snprintf(err, errlen, "%s", g_hip_load_err);
    return NULL;
  }
  if (g_hip_init_result != hipSuccess) {
    char d[256];
    hip_describe(g_hip_init_result, d, sizeof d);
    if (err && errlen) snprintf(err, errlen, "hip: no AMD GPU (hipInit: %s)", d);
    return NULL;
  }
  int count = 0;
  char *props = NULL;
  hipError_t rc = g_hip.hipGetDeviceCount(&count);
  if (rc != hipSuccess || count == 0) {
    char d[256] = "0 devices";
    if (rc != hipSuccess) hip_describe(rc, d, sizeof d);
    if (err && errlen) snprintf(err, errlen, "hip: no AMD GPU (hipGetDeviceCount: %s)", d);
    return NULL;
  }
  if (ordinal >= count) {
    if (err && errlen) snprintf(err, errlen, "hip: no GPU %d (there are %d)", ordinal, count);
    return NULL;
  }
  HOPEN_CHECK(g_hip.hipSetDevice(ordinal), "hipSetDevice");
  hipDevice_t hd = 0;
  HOPEN_CHECK(g_hip.hipDeviceGet(&hd, ordinal), "hipDeviceGet");
  kl_device_info info;
  memset(&info, 0, sizeof info);
  info.kind = KL_DEVICE_HIP;
  info.ordinal = ordinal;
  snprintf(info.backend, sizeof info.backend, "hip");
  HOPEN_CHECK(g_hip.hipDeviceGetName(info.name, (int)sizeof info.name, hd), "hipDeviceGetName");
  HOPEN_CHECK(g_hip.hipDeviceTotalMem(&info.total_mem, hd), "hipDeviceTotalMem");
  HOPEN_CHECK(g_hip.hipDeviceGetAttribute(&info.compute_units, hipDeviceAttributeMultiprocessorCount, ordinal),
              "hipDeviceGetAttribute(MultiprocessorCount)");
  HOPEN_CHECK(g_hip.hipDeviceGetAttribute(&info.wave_size, hipDeviceAttributeWarpSize, ordinal),
              "hipDeviceGetAttribute(WarpSize)");
  HOPEN_CHECK(g_hip.hipDeviceGetAttribute(&info.max_threads_per_block, hipDeviceAttributeMaxThreadsPerBlock, ordinal),
              "hipDeviceGetAttribute(MaxThreadsPerBlock)");
  int shm = 0;
  HOPEN_CHECK(g_hip.hipDeviceGetAttribute(&shm, hipDeviceAttributeMaxSharedMemoryPerBlock, ordinal),
              "hipDeviceGetAttribute(MaxSharedMemoryPerBlock)");
  info.max_shared_per_block = shm > 0 ? (size_t)shm : (size_t)64 << 10;
  enum { PROPS = 16384 };
  props = kl_xcalloc(1, PROPS);
  HOPEN_CHECK(g_hip.hipGetDeviceProperties(props, ordinal), "hipGetDeviceProperties");
  if (!find_gcn_arch(props, PROPS, info.arch, sizeof info.arch)) {
    if (err && errlen)
      snprintf(err, errlen, "hip: cannot find the gfx architecture of GPU %d (%s)", ordinal, info.name);
    goto fail;
  }
  free(props);
  props = NULL;
  int rt = 0;
  HOPEN_CHECK(g_hip.hipRuntimeGetVersion(&rt), "hipRuntimeGetVersion");
  snprintf(info.driver, sizeof info.driver, "HIP runtime %d.%d.%d", rt / 10000000, (rt / 100000) % 100, rt % 100000);
  hip_dev *h = kl_xcalloc(1, sizeof *h);
  h->ordinal = ordinal;
  return kl_device_new(&hip_ops, h, &info);
fail:
  free(props);
  return NULL;
}
