/* graph_composite.h — graph ops defined by other graph ops, expanded when they are built.
 * Contract: kl_graph_build hands an op to kl_graph_build_composite first; when the op is
 * a composite (below) it builds the defining ops in the graph at the op's location and
 * returns the last one (whose result is the op's value), or NULL after a located error;
 * otherwise it sets *handled = false and builds nothing. The graph keeps only the
 * defining ops, so the evaluator, the fusion passes and every lowering see ops they know.
 *   quantize(x, scale [, zero_point]) -> i8: convert_i8(clip(round(x / scale) + zp,
 *       -128, 127)); with a u8 zero_point -> u8: clip to 0, 255 (MIGraphX: the result has
 *       the zero point's type); with an fp8 zero_point -> that fp8: convert(clip(x / scale +
 *       zp, -max, max)), no rounding to an integer (rocMLIR's lowering; max the fp8's largest
 *       finite value); x and scale floats of one dtype, zero_point any dtype (converted);
 *       round is ties-to-even, NaN becomes 0; operands broadcast.
 *   dequantize(x, scale [, zero_point]) -> scale's dtype: (x - zp) * scale, x and
 *       zero_point converted to scale's dtype first; operands broadcast.
 *   quant_dot(a, b), quant_conv(x, w): dot / conv of i8 (or u8) operands, accumulated and
 *       returned in i32 (the attributes of dot / conv, 1-D to 3-D); of fp8 operands
 *       (both fp8): returned in f32 (dot / conv {dtype = f32}). */
#ifndef KL_GRAPH_COMPOSITE_H
#define KL_GRAPH_COMPOSITE_H
#include "core/ir.h"

kl_op *kl_graph_build_composite(kl_op *graph, const char *op, kl_loc loc, int n, kl_value *const *opnds, int nattrs,
                                const kl_named_attr *attrs, bool *handled);
#endif
