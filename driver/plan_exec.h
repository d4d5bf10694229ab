/* plan_exec.h — running the steps of a host plan (client/kiln_client.h) on a device.
 * Contract:
 *  - kl_plan_exec_step runs step i of x->plan: a launch of x->kernels[kernel] with the
 *    slots' pointers, a prefill (every element of the slot's span set to the value in
 *    the slot's element type: kl_device_fill for 1/2/4-byte patterns, an upload of the
 *    pattern for 8-byte ones, plain stores on the host device), a device-to-device copy,
 *    or a workspace allocation / free (kl_device_alloc / kl_device_free, after a
 *    synchronize on GPUs) unless x->preallocated (then the buffers exist and these two
 *    are no-ops).
 *  - Order: kl_plan_exec_step runs the steps in the caller's order, the plan's order:
 *    that order honours every token (each wait names an earlier step) and the device
 *    queue (the default stream, or x->stream) runs work in submission order, so the result
 *    is the sequential result; kl_plan_exec_all (below) overlaps independent GPU steps on
 *    streams, ordered by events made from the tokens. The host
 *    device runs each launch's workgroups on its thread pool; steps themselves run one
 *    after the other (the pool runs a nested parallel_for serially and the device is not
 *    thread-safe, so running independent steps on it concurrently would not be faster).
 *  - x->ptr[slot] are the slots' device pointers (workspace entries are set and cleared
 *    by their steps); x->owned[slot] marks pointers allocated here (the caller frees
 *    the ones still set after an error). Errors: KL_ERR plus "what: ..." in err. */
#ifndef KL_PLAN_EXEC_H
#define KL_PLAN_EXEC_H
#include "client/kiln_client.h"
#include "runtime/device.h"
#include <stdbool.h>

typedef struct kl_plan_exec {
  kl_device *dev;
  bool host; /* the host device: pointers are host memory */
  bool preallocated;
  const kl_bundle_target *plan;
  kl_dev_kernel *const *kernels; /* per plan kernel (NULL for kernels no step launches) */
  void **ptr;                    /* per slot */
  bool *owned;                   /* per slot */
  kl_dev_stream *stream;         /* launches, fills and copies go here (NULL: the default stream) */
} kl_plan_exec;

kl_status kl_plan_exec_step(kl_plan_exec *x, int i, char *err, size_t errlen);
/* Every step of the plan. On a GPU: asynchronously on up to 4 streams (step i on stream
 * i % 4), each step first waiting (kl_device_stream_wait_event) on the events its waits
 * name and then recording its own event, so independent steps may overlap and dependent
 * ones run in order; a free synchronizes the device first. Returns once all is issued
 * (the caller synchronizes). On the host: kl_plan_exec_step in the plan's order. */
kl_status kl_plan_exec_all(kl_plan_exec *x, char *err, size_t errlen);
/* The element bit pattern of v in element type elem ("f32", ...): its size in bytes
 * (1, 2, 4, 8), 0 for an unknown type. */
int kl_plan_value_bits(const char *elem, double v, uint64_t *bits);
#endif
