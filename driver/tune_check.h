/* tune_check.h — checking a tuning candidate's outputs against the reference candidate's
 * (driver/tune.c), fast enough to check every element of every candidate.
 * Contract:
 *  - kl_tune_tolerance: the tolerance of an output dtype (f32/f64: rtol = atol = 1e-3;
 *    f16: 1e-2; bf16 and 8-bit floats: 5e-2; integers: exact).
 *  - kl_tune_check compares outs[i] with ref[i] for i < min(n, nref), every element, by the
 *    rule of kl_tensor_compare (runtime/tensor.h) with that tolerance. Where the two have
 *    the same dtype, shape and strides and their elements fill their memory span (any
 *    dimension order), the span is cut into slices compared on the pool's threads (NULL
 *    pool: on the calling thread); a slice whose bytes equal the reference's passes
 *    without an element loop (equal bytes always pass the rule, NaNs included). Other
 *    pairs go through one kl_tensor_compare.
 *  - Returns 0 when every element matches; 1 with "output I: N elements differ from the
 *    reference candidate's (max abs err E, rtol R atol A)" in msg for the first output with
 *    mismatches (N counts all of that output's); -1 with "compare: ..." in msg when a pair
 *    cannot be compared (shapes differ). */
#ifndef KL_TUNE_CHECK_H
#define KL_TUNE_CHECK_H
#include "runtime/tensor.h"
#include "runtime/threadpool.h"

void kl_tune_tolerance(kl_dtype dt, double *rtol, double *atol);
int kl_tune_check(kl_threadpool *pool, int n, kl_tensor *const *outs, int nref, kl_tensor *const *ref, char *msg,
                  size_t msglen);
#endif
