/* plan_sched.h — the order in which the executor (plan_exec.c) runs a host plan's steps.
 * Contract: kl_plan_schedule(P, max_streams, &s, err, errlen) reads only the steps' tokens
 * and waits and fills s (release with kl_plan_sched_free):
 *  - every wait of step i is resolved to the latest earlier step yielding that token:
 *    deps i are s.dep[s.dep_off[i] .. s.dep_off[i+1]) (step indices < i, one per wait);
 *    a wait on a token no earlier step yields is an error ("step i waits on token t,
 *    which no earlier step yields"), nothing is filled;
 *  - wave[i]: 0 for a step without waits, else 1 + the largest wave of its deps. Steps of
 *    one wave never depend on each other; the host runs a wave's launches as one launch
 *    group (runtime/device.h) after its other steps, waves in order; nwaves of them;
 *  - order: the issue order, wave by wave and in plan order within a wave (every step
 *    after its deps; independent branches interleave, so a free, which synchronizes a
 *    GPU, comes after the launches of the waves before it on every branch);
 *  - stream[i] in [0, nstreams), nstreams <= max_streams (>= 1), given in issue order: a
 *    step continues the stream of a dep that is the last step issued on that stream (a
 *    chain stays on one stream), else it opens a new stream while fewer than max_streams
 *    are open, else it takes the stream whose last step was issued longest ago; so
 *    independent steps get different streams up to max_streams;
 *  - cross[k] (parallel to dep): dep k is on another stream than its step, so the GPU
 *    executor waits on that dep's event; a dep on the same stream is ordered by the
 *    stream itself (no event wait). */
#ifndef KL_PLAN_SCHED_H
#define KL_PLAN_SCHED_H
#include "client/kiln_client.h"
#include "core/context.h" /* kl_status */
#include <stdbool.h>
#include <stddef.h>

typedef struct kl_plan_sched {
  int nsteps, nwaves, nstreams;
  int *dep_off; /* nsteps + 1 */
  int *dep;
  bool *cross;
  int *wave, *stream; /* per step */
  int *order;         /* nsteps: step indices in issue order */
} kl_plan_sched;

kl_status kl_plan_schedule(const kl_bundle_target *P, int max_streams, kl_plan_sched *s, char *err, size_t errlen);
void kl_plan_sched_free(kl_plan_sched *s);
#endif
