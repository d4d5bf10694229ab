/* device.h — the device abstraction: memory, copies, binaries, kernel launches, timing.
 * Contract:
 *  - kl_device_open("host" | "cuda" | "hip" | "auto", …) opens a device; "cuda:N" /
 *    "hip:N" pick GPU N (default 0); NULL or "" means "auto". "auto" tries hip, then cuda, then host, and never
 *    fails unless the host device fails (the reasons the GPUs were skipped are kept in
 *    info.note). Backends are registered by name (host, cuda, hip built in; more with
 *    kl_device_register_backend). GPU drivers are loaded with dlopen at open time; kiln
 *    needs no GPU headers or libraries to build.
 *  - Errors: functions return KL_ERR (or NULL) and leave a message in the device's error
 *    buffer, read with kl_device_error(dev); kl_device_open writes into the caller's
 *    buffer. Messages name the backend and the failing driver call ("cuda: cuMemAlloc
 *    (1024 bytes): CUDA_ERROR_OUT_OF_MEMORY: out of memory"). Nothing aborts.
 *  - Ownership: the device owns its modules, kernels and events; kl_device_destroy
 *    releases everything still open, including device memory not yet freed. A kernel
 *    handle lives as long as its module. A device is not thread-safe: use it from one
 *    thread at a time (its error buffer is per device).
 *  - Teardown in any order: whoever keeps handles of a device (modules, kernels, memory,
 *    the device pointer itself) beyond the calls that use it watches the device
 *    (kl_device_watch) and unwatches it when it lets go. kl_device_destroy first calls
 *    every watcher (the device still fully usable: it may unload, free, synchronise),
 *    then releases whatever is left; after that no handle of the device is valid. So a
 *    program or prepared run (driver/program.h) outlives its device safely, and
 *    kl_device_destroy always frees everything of the device.
 *  - Device memory is addressed by `void *` (a CUdeviceptr or HIP pointer on GPUs, a
 *    malloc'd pointer on the host device); only kl_device_* copies may touch GPU memory.
 *    Pointers inside an allocation (base + offset) may be passed to copies and kernels;
 *    kl_device_free takes the base pointer and rejects pointers it did not allocate.
 *    Zero-byte allocations return a unique non-NULL pointer.
 *  - Launch arguments follow cuLaunchKernel: args[i] points to the value of argument i
 *    (for a buffer argument, args[i] points to a variable holding the device pointer),
 *    arg_sizes[i] is its size in bytes.
 *  - Code: a device loads binaries only (it never calls code generation): PTX text or a
 *    cubin (cuda), an HSACO (hip), an ELF relocatable object (host: made by codegen at
 *    compile time, O3 for the host CPU, linked into the process by ORC's object layer,
 *    device_host_loader.h). kl_device_load's flags: KL_LOAD_TRUSTED for binaries this
 *    process produced (loaded as they are); without it the binary is untrusted (a bundle
 *    from disk, bytes from a client) and a backend whose loader could crash on bad bytes
 *    checks it first (the host links it in a child process).
 *  - Host device ABI. A host kernel is a function
 *        void name(void **args, const int64_t *block_id, const int64_t *grid)
 *    (kl_host_kernel_fn): args is the launch's args array unchanged, block_id and grid
 *    point to 3 int64 each. A launch runs grid[0]*grid[1]*grid[2] workgroups on the
 *    device's thread pool (KILN_THREADS threads, default the core count), calling the
 *    kernel once per workgroup, in any order and concurrently. One call = one whole
 *    workgroup: the compiler turns the workgroup's threads into loops, so barriers and
 *    workgroup ("shared") memory are the kernel's own business (a local array); the
 *    block sizes and shared_bytes of a host launch are checked (> 0, resp. <=
 *    info.max_shared_per_block) but not otherwise used. Host launches, copies and fills
 *    complete before the call returns; synchronize is a no-op; events read a monotonic
 *    clock.
 *  - GPU launches and fills are asynchronous (the default stream); copies to / from the
 *    host are synchronous; kl_device_synchronize waits for everything and reports
 *    errors from earlier asynchronous work. */
#ifndef KL_DEVICE_H
#define KL_DEVICE_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "core/context.h" /* kl_status */

typedef enum { KL_DEVICE_HOST = 0, KL_DEVICE_CUDA = 1, KL_DEVICE_HIP = 2, KL_DEVICE_OTHER = 3 } kl_device_kind;

typedef struct kl_device_info {
  kl_device_kind kind;
  char backend[16];       /* "host", "cuda", "hip" */
  int ordinal;            /* GPU index (0 on the host) */
  char name[256];         /* "NVIDIA H200", "AMD Instinct MI300X", "host (znver3, 16 threads)" */
  char arch[64];          /* the codegen target: "sm_90", "gfx942", "host" */
  int cc_major, cc_minor; /* CUDA compute capability (0 otherwise) */
  size_t total_mem;       /* bytes, 0 if unknown */
  int compute_units;      /* SMs, CUs, or host threads */
  int wave_size;          /* 32 / 64; 1 on the host */
  int max_threads_per_block;
  size_t max_shared_per_block; /* bytes, including opt-in (CUDA > 48 KiB) */
  char driver[64];             /* driver / runtime version text */
  char note[512];              /* "auto": why hip / cuda were skipped */
} kl_device_info;

typedef struct kl_device kl_device;
typedef struct kl_dev_module kl_dev_module;
typedef struct kl_dev_kernel kl_dev_kernel;
typedef struct kl_dev_event kl_dev_event;

typedef void (*kl_host_kernel_fn)(void **args, const int64_t *block_id, const int64_t *grid);

/* ---- opening and closing ---- */
kl_device *kl_device_open(const char *name, char *err, size_t errlen);
void kl_device_destroy(kl_device *dev);
const kl_device_info *kl_device_get_info(const kl_device *dev);
const char *kl_device_error(const kl_device *dev); /* last error ("" if none) */

/* Watching for destroy: fn(dev, user) runs once, from kl_device_destroy, before any of
 * the device's modules, events or memory are released. The watch is already gone when
 * fn runs (fn must not unwatch it); fn may unwatch other watches and release the
 * device's objects. Watchers run latest first. kl_device_unwatch(NULL) is a no-op. */
typedef struct kl_dev_watch kl_dev_watch;
kl_dev_watch *kl_device_watch(kl_device *dev, void (*fn)(kl_device *dev, void *user), void *user);
void kl_device_unwatch(kl_dev_watch *w);

/* ---- memory ---- */
kl_status kl_device_alloc(kl_device *dev, size_t bytes, void **out);
kl_status kl_device_free(kl_device *dev, void *ptr);
size_t kl_device_bytes_in_use(const kl_device *dev);
kl_status kl_device_copy_htod(kl_device *dev, void *dst, const void *src, size_t bytes);
kl_status kl_device_copy_dtoh(kl_device *dev, void *dst, const void *src, size_t bytes);
kl_status kl_device_copy_dtod(kl_device *dev, void *dst, const void *src, size_t bytes);
/* Writes `count` copies of the low `pattern_bytes` (1, 2 or 4) bytes of pattern at dst
 * (e.g. 0xff800000 with 4 for -inf in f32); dst must be aligned to pattern_bytes. */
kl_status kl_device_fill(kl_device *dev, void *dst, uint32_t pattern, int pattern_bytes, size_t count);

/* ---- code ---- */
/* A binary for this device: PTX text or a cubin (cuda), an HSACO (hip), an ELF
 * relocatable object (host). flags: 0 (untrusted) or KL_LOAD_TRUSTED (see above). */
enum { KL_LOAD_TRUSTED = 1u };
kl_status kl_device_load(kl_device *dev, const void *binary, size_t size, unsigned flags, kl_dev_module **out);
void kl_device_unload(kl_dev_module *mod);
/* The same name twice gives the same handle. */
kl_status kl_device_get_kernel(kl_dev_module *mod, const char *name, kl_dev_kernel **out);
kl_status kl_device_launch(kl_dev_kernel *k, const uint32_t grid[3], const uint32_t block[3], size_t shared_bytes,
                           void **args, const size_t *arg_sizes, int nargs);
kl_status kl_device_synchronize(kl_device *dev);

/* ---- TMA tensor maps (NVIDIA compute capability 9.0) ----
 * Encodes a CUtensorMap (128 bytes; the caller's out, 64-byte aligned) for tiled box loads
 * (cp.async.bulk.tensor) of a rank-dimensional (1..5) tensor of 16-bit elements (bf16 or
 * f16) at device address base (16-byte aligned): dims elements innermost first, strides
 * bytes of dims 1.. (multiples of 16), box elements per dim (<= 256, box[0] * 2 a multiple
 * of 16); no interleave, swizzle `swizzle` bytes (0 none, 32, 64, 128: box[0] * 2 at most
 * that; the LDS destination then aligned to 8 x swizzle bytes), L2 promotion 128 bytes,
 * zeros out of bounds. CUDA through the driver's cuTensorMapEncodeTiled; other devices, or
 * a driver without it: KL_ERR with a message (kl_device_error).
 * im2col (passes/rock_tma_im2col.h): a rank-4 NHWC map for im2col loads through
 * cuTensorMapEncodeIm2col instead: dims {C, W, H, N}, pixel-box corners lo / up {W, H}
 * (in [-128, 127]), elementStrides {1, es[0], es[1], 1} (1..8), channelsPerPixel box[0],
 * pixelsPerColumn box[1] (<= 256); the rest as above. */
typedef struct kl_tensor_map_desc {
  int rank, swizzle;
  bool bf16, im2col;
  void *base;
  uint64_t dims[5], strides[4];
  uint32_t box[5];
  int32_t lo[2], up[2];
  uint32_t es[2];
} kl_tensor_map_desc;
kl_status kl_device_tensor_map(kl_device *dev, const kl_tensor_map_desc *d, void *out);

/* The workgroups of kernel k (block_threads threads, shared_bytes of dynamic shared memory)
 * resident at once on one compute unit (SM / CU): CUDA through the driver's
 * cuOccupancyMaxActiveBlocksPerMultiprocessor (optional; its dynamic shared memory limit raised
 * first as a launch does); 1 where the device or driver cannot say. At least 1. Persistent
 * kernels launch min(tiles, compute_units x this) workgroups (driver/plan_exec.h). */
int kl_device_resident_per_cu(kl_dev_kernel *k, uint32_t block_threads, size_t shared_bytes);

/* ---- streams ----
 * A stream is an ordered queue of device work; work on different streams may overlap.
 * The _on calls issue a launch, a fill or a device-to-device copy on stream s and
 * return without waiting (errors surface at a later synchronize); event_record_on
 * records ev when the work issued on s so far is done; stream_wait_event makes work
 * issued on s later wait until ev is recorded (the CUDA/HIP semantics: cuStreamWaitEvent,
 * hipStreamWaitEvent). kl_device_synchronize waits for every stream. The device owns its
 * streams (kl_device_destroy releases those left). On a device without streams (the
 * host: every call completes before it returns) a stream is a handle only, the _on calls
 * are the plain calls and stream_wait_event does nothing. */
typedef struct kl_dev_stream kl_dev_stream;
kl_status kl_device_stream_create(kl_device *dev, kl_dev_stream **out);
void kl_device_stream_destroy(kl_dev_stream *s); /* waits for its work first; NULL is fine */
kl_status kl_device_launch_on(kl_dev_stream *s, kl_dev_kernel *k, const uint32_t grid[3], const uint32_t block[3],
                              size_t shared_bytes, void **args, const size_t *arg_sizes, int nargs);
kl_status kl_device_fill_on(kl_dev_stream *s, void *dst, uint32_t pattern, int pattern_bytes, size_t count);
kl_status kl_device_copy_dtod_on(kl_dev_stream *s, void *dst, const void *src, size_t bytes);
kl_status kl_device_event_record_on(kl_dev_event *ev, kl_dev_stream *s);
kl_status kl_device_stream_wait_event(kl_dev_stream *s, kl_dev_event *ev);

/* ---- launch groups ----
 * kl_device_launch_group issues n launches that do not depend on each other (none reads
 * what another writes) as one unit; each is validated as by kl_device_launch, and all
 * must be kernels of dev. On the host device their workgroups are interleaved in one
 * parallel_for of the thread pool, so the launches run concurrently (every worker takes
 * workgroups of all of them). On GPUs they are issued one after the other on the
 * current queue (concurrency there comes from streams). times (NULL: none) gets 2
 * entries per launch, set on the host only: the monotonic-clock milliseconds
 * (kl_device_now_ms) at which the launch's first workgroup started and its last one
 * finished. */
typedef struct kl_dev_launch {
  kl_dev_kernel *k;
  uint32_t grid[3], block[3];
  size_t shared_bytes;
  void **args;
  const size_t *arg_sizes;
  int nargs;
} kl_dev_launch;
kl_status kl_device_launch_group(kl_device *dev, int n, const kl_dev_launch *launches, double *times);
/* The monotonic clock in milliseconds (the host device's event clock). */
double kl_device_now_ms(void);

/* ---- timing ---- */
kl_status kl_device_event_create(kl_device *dev, kl_dev_event **out);
kl_status kl_device_event_record(kl_dev_event *ev);
/* Milliseconds between two recorded events (waits for `end`). */
kl_status kl_device_event_elapsed_ms(kl_dev_event *start, kl_dev_event *end, float *ms);
void kl_device_event_destroy(kl_dev_event *ev);

/* ---- backends ----
 * A backend opens devices and fills in a kl_device_ops table. Handles (modules,
 * kernels, events) are the backend's own pointers; device.c wraps them, validates
 * arguments (non-NULL, grid/block > 0, …) and tracks allocations, so the operations
 * only do the work. Each operation reports failure with kl_device_set_error. */
typedef enum { KL_COPY_HTOD, KL_COPY_DTOH, KL_COPY_DTOD } kl_copy_kind;

typedef struct kl_device_ops {
  void (*destroy)(kl_device *dev);
  kl_status (*alloc)(kl_device *dev, size_t bytes, void **out);
  kl_status (*free)(kl_device *dev, void *ptr);
  kl_status (*copy)(kl_device *dev, void *dst, const void *src, size_t bytes, kl_copy_kind kind);
  kl_status (*fill)(kl_device *dev, void *dst, uint32_t pattern, int pattern_bytes, size_t count);
  kl_status (*load)(kl_device *dev, const void *binary, size_t size, unsigned flags, void **module);
  void (*unload)(kl_device *dev, void *module);
  kl_status (*get_kernel)(kl_device *dev, void *module, const char *name, void **kernel);
  /* optional: release a kernel handle (called before its module is unloaded) */
  void (*release_kernel)(kl_device *dev, void *kernel);
  kl_status (*launch)(kl_device *dev, void *kernel, const uint32_t grid[3], const uint32_t block[3],
                      size_t shared_bytes, void **args, const size_t *arg_sizes, int nargs);
  kl_status (*synchronize)(kl_device *dev);
  kl_status (*event_create)(kl_device *dev, void **event);
  kl_status (*event_record)(kl_device *dev, void *event);
  kl_status (*event_elapsed)(kl_device *dev, void *start, void *end, float *ms);
  void (*event_destroy)(kl_device *dev, void *event);
  /* optional (NULL: the device has no streams, see "streams" above): create / destroy a
   * stream; set_stream(dev, stream or NULL) makes launch, fill, device-to-device copy and
   * event_record work on that stream (asynchronously) until the next set_stream;
   * stream_wait_event as kl_device_stream_wait_event. */
  kl_status (*stream_create)(kl_device *dev, void **stream);
  void (*stream_destroy)(kl_device *dev, void *stream);
  void (*set_stream)(kl_device *dev, void *stream);
  kl_status (*stream_wait_event)(kl_device *dev, void *stream, void *event);
  /* optional (NULL: launch one after the other): kl_device_launch_group after
   * validation; kernels[i] is the backend handle of launches[i].k. */
  kl_status (*launch_group)(kl_device *dev, int n, void *const *kernels, const kl_dev_launch *launches, double *times);
  /* optional (NULL: no TMA): kl_device_tensor_map */
  kl_status (*tensor_map)(kl_device *dev, const kl_tensor_map_desc *d, void *out);
  /* optional (NULL: 1): kl_device_resident_per_cu; <= 0 where it cannot say */
  int (*resident)(kl_device *dev, void *kernel, uint32_t block_threads, size_t shared_bytes);
} kl_device_ops;

typedef struct kl_device_backend {
  const char *name; /* "cuda"; matched against the part of the device name before ':' */
  kl_device *(*open)(int ordinal, char *err, size_t errlen);
} kl_device_backend;

/* Adds a backend (the struct must outlive the process' use of it). Fails if the name
 * is taken or the table (16 entries) is full. */
kl_status kl_device_register_backend(const kl_device_backend *b, char *err, size_t errlen);
int kl_device_backend_count(void);
const char *kl_device_backend_name(int i);

/* For backends: create the generic device around an implementation (info is copied). */
kl_device *kl_device_new(const kl_device_ops *ops, void *impl, const kl_device_info *info);
void *kl_device_impl(const kl_device *dev);
kl_device_info *kl_device_info_mut(kl_device *dev);
kl_status kl_device_set_error(kl_device *dev, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The built-in backends' open functions (device_host.c, device_cuda.c, device_hip.c). */
kl_device *kl_device_open_host(int ordinal, char *err, size_t errlen);
kl_device *kl_device_open_cuda(int ordinal, char *err, size_t errlen);
kl_device *kl_device_open_hip(int ordinal, char *err, size_t errlen);
#endif
