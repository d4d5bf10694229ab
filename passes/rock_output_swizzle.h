/* rock_output_swizzle.h — the invariant of the `rock-output-swizzle` pass
 * (passes/rock_output_swizzle.c), checked by the pass itself and by rock-align-tiling.
 *
 * The swizzle marks its two LDS accesses with the unit attribute `swizzle`: the store of
 * the accumulator tile into the swizzle's LDS buffer (a rock.threadwise_write_all) and
 * the read back (a rock.threadwise_read_into). Invariant: in each kernel func, between
 * the rock.barrier before a swizzle store and its swizzle read, nothing but that store
 * writes the LDS buffer under it, and the store is preceded and the read is preceded by
 * a rock.barrier; after the read, nothing writes that buffer (fused ops never write into
 * the swizzle's region). kl_output_swizzle_verify returns KL_ERR with one diagnostic per
 * violation at the offending op's location, naming the swizzle store's location. */
#ifndef KL_ROCK_OUTPUT_SWIZZLE_H
#define KL_ROCK_OUTPUT_SWIZZLE_H
#include "core/ir.h"

kl_status kl_output_swizzle_verify(kl_op *module);
#endif
