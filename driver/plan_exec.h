/* plan_exec.h — running the steps of a host plan (client/kiln_client.h) on a device.
 * Contract:
 *  - kl_plan_exec_step runs step i of x->plan: a launch of x->kernels[kernel] with the
 *    slots' pointers, a prefill (every element of the slot's span set to the value in
 *    the slot's element type: kl_device_fill for 1/2/4-byte patterns, an upload of the
 *    pattern for 8-byte ones, plain stores on the host device), a device-to-device copy,
 *    or a workspace allocation / free (kl_device_alloc / kl_device_free, after a
 *    synchronize on GPUs) unless x->preallocated (then the buffers exist and these two
 *    are no-ops).
 *  - Order: kl_plan_exec_step runs one step on the device queue (the default stream, or
 *    x->stream); called in the plan's order it honours every token (each wait names an
 *    earlier step) and gives the sequential result. kl_plan_exec_all (below) runs the
 *    plan asynchronously in the order of kl_plan_schedule (plan_sched.h).
 *  - x->ptr[slot] are the slots' device pointers (workspace entries are set and cleared
 *    by their steps); x->owned[slot] marks pointers allocated here (the caller frees
 *    the ones still set after an error). Errors: KL_ERR plus "what: ..." in err. */
#ifndef KL_PLAN_EXEC_H
#define KL_PLAN_EXEC_H
#include "client/kiln_client.h"
#include "runtime/device.h"
#include <stdbool.h>

/* The tensor-map kernel parameters of a plan kernel (TMA loads, passes/rock_tma.h), after
 * its buffer arguments in this order: each built per launch (kl_device_tensor_map) from
 * the device pointer of the kernel's argument `arg` plus `offset` bytes. */
typedef struct kl_plan_tma {
  int arg, rank, swizzle; /* swizzle: bytes (128, 64, 32) or 0 */
  bool bf16;
  int64_t offset;
  uint64_t dims[5], strides[4]; /* rank 1..5 (passes/rock_tma.h: K in runs takes 4 or 5) */
  uint32_t box[5];
  /* im2col mode (passes/rock_tma_im2col.h): rank 4, box {channels per pixel, pixels per column} */
  bool im2col;
  int32_t lo[2], up[2];
  uint32_t es[2];
} kl_plan_tma;
typedef struct kl_plan_tmas {
  int n;
  kl_plan_tma m[8];
} kl_plan_tmas;

typedef struct kl_plan_exec {
  kl_device *dev;
  bool host; /* the host device: pointers are host memory */
  bool preallocated;
  const kl_bundle_target *plan;
  kl_dev_kernel *const *kernels; /* per plan kernel (NULL for kernels no step launches) */
  void **ptr;                    /* per slot */
  bool *owned;                   /* per slot */
  kl_dev_stream *stream;         /* launches, fills and copies go here (NULL: the default stream) */
  double *times;                 /* kl_plan_exec_all: 2 per step (start, end ms), or NULL */
  int *stream_of;                /* kl_plan_exec_all: per step, its stream (GPU) / wave (host), or NULL */
  const kl_plan_tmas *tma;       /* per plan kernel, its tensor maps (n = 0: none), or NULL (no kernel has any) */
  const bool *persistent;        /* per plan kernel, whether it is persistent (grid_persistent), or NULL (none is) */
} kl_plan_exec;

kl_status kl_plan_exec_step(kl_plan_exec *x, int i, char *err, size_t errlen);
/* The dynamic shared memory bytes a launch of plan kernel k on dev passes: an NVIDIA
 * kernel whose LDS exceeds KL_NVPTX_STATIC_LDS_MAX holds all of it in one `extern
 * .shared` array (core/target.h), so its launch passes lds_bytes (without them its LDS
 * accesses fault: CUDA_ERROR_ILLEGAL_ADDRESS); every other kernel 0. Every launch of a
 * plan kernel takes its size from here (kl_plan_exec_step, kl_prepared_launch). */
size_t kl_plan_launch_shared_bytes(const kl_device *dev, const kl_bundle_kernel *k);
/* The workgroups (grid x) of a launch of plan kernel k (kern its loaded kernel, shared the
 * launch's dynamic shared memory): its grid_size, and for a persistent kernel (its func's
 * grid_persistent: it loops over grid_size tiles with any grid, passes/rock_tma.h) at most the
 * device's compute units x the kernel's resident workgroups per unit
 * (kl_device_resident_per_cu), at least 1. Every launch of a plan kernel takes it from here. */
uint32_t kl_plan_launch_grid(kl_device *dev, kl_dev_kernel *kern, const kl_bundle_kernel *k, bool persistent,
                             size_t shared);
/* Every step of the plan, as kl_plan_schedule(P, 4) orders them.
 *  - GPU: asynchronously, in the schedule's issue order, on its streams (at most 4):
 *    each step first waits (kl_device_stream_wait_event) on the events of its deps on
 *    other streams, then runs, then records its own event, so independent steps may
 *    overlap and dependent ones run in order; a free synchronizes the device first (the
 *    issue order puts it after the launches of earlier waves on every branch). Returns once all is issued and the
 *    device synchronized.
 *  - Host: wave by wave; a wave's prefills, copies and workspace steps run first, one by
 *    one, then its launches as one launch group (runtime/device.h): their workgroups
 *    share the thread pool, so independent launches run concurrently.
 *  - Timing: x->times (NULL: none) gets 2 entries per step, the milliseconds from the
 *    start of the run to the step's start and end (GPU: events recorded on the step's
 *    stream around it, read after the synchronize; host: the monotonic clock, a launch's
 *    interval from its first workgroup's start to its last one's end), and x->stream_of
 *    (NULL: none) the stream of each step (GPU) or its wave (host). Timing does not
 *    change the order; overlapping intervals show steps that ran concurrently. */
kl_status kl_plan_exec_all(kl_plan_exec *x, char *err, size_t errlen);
/* The element bit pattern of v in element type elem ("f32", ...): its size in bytes
 * (1, 2, 4, 8), 0 for an unknown type. */
int kl_plan_value_bits(const char *elem, double v, uint64_t *bits);
#endif
