/* graph_composite.h — graph ops defined by other graph ops, expanded when they are built.
 * Contract: kl_graph_build hands an op to kl_graph_build_composite first; when the op is
 * a composite (below) it builds the defining ops in the graph at the op's location and
 * returns the last one (whose result is the op's value), or NULL after a located error;
 * otherwise it sets *handled = false and builds nothing. The graph keeps only the
 * defining ops, so the evaluator, the fusion passes and every lowering see ops they know.
 *   quantize(x, scale [, zero_point]) -> i8: convert_i8(clip(round(x / scale) + zp,
 *       -128, 127)); x and scale floats of one dtype, zero_point any dtype (converted);
 *       round is ties-to-even, NaN becomes 0; operands broadcast.
 *   dequantize(x, scale [, zero_point]) -> scale's dtype: (x - zp) * scale, x and
 *       zero_point converted to scale's dtype first; operands broadcast.
 *   quant_dot(a, b), quant_conv(x, w): dot / conv of i8 operands, accumulated and
 *       returned in i32 (the attributes of dot / conv).
 *   conv (and quant_conv) of rank-3 operands (1-D: input [N, C, W], filter [K, C/G, X])
 *       and rank-5 operands (3-D: input [N, C, D, H, W], filter [K, C/G, Z, Y, X]);
 *       attributes stride, dilation (an integer or one per spatial dim), padding (an
 *       integer, one per spatial dim, or [begin, end] per spatial dim in dim order: 1-D
 *       [w0, w1], 3-D [d0, d1, h0, h1, w0, w1], as 2-D's [top, bottom, left, right]),
 *       groups. 1-D is a 2-D conv of height 1 between reshapes; 3-D is the sum over the
 *       filter's Z depth taps of Z 2-D convs, tap z reading the input padded in depth
 *       (a concat with zeros) at depths od*stride_d + z*dil_d, the depths moved into the
 *       batch (transpose + reshape): Z conv kernels, each rounding its partial sum to the
 *       result dtype (f16 / bf16 sums round Z times; i8 -> i32 stays exact). */
#ifndef KL_GRAPH_COMPOSITE_H
#define KL_GRAPH_COMPOSITE_H
#include "core/ir.h"

kl_op *kl_graph_build_composite(kl_op *graph, const char *op, kl_loc loc, int n, kl_value *const *opnds, int nattrs,
                                const kl_named_attr *attrs, bool *handled);
#endif
