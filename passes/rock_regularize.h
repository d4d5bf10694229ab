/* rock_regularize.h — the regular form of kernel-level fusion and its check.
 *
 * Regular form: in every kernel function (func.func {kernel}), no rock.transform chain
 * lies between a global rock.alloc and a fusing op (KL_TRAIT_FUSING: rock.elementwise)
 * that reads or writes it — the fusing op uses the intermediate directly. Views between
 * an alloc and a non-fusing user (rock.gemm / rock.conv / rock.reduce / threadwise
 * copies ...) are allowed, and so are views on kernel arguments.
 *
 * The pass `rock-regularize` (passes/rock_regularize.c) establishes it with two patterns
 * on the greedy driver (to a fixed point, no folding, no dead-op removal):
 *   R1 (root rock.alloc): a fusing op E writes global %a through views W (the only fusing
 *      writer of %a; E does not read %a). %a is replaced by a fresh global row-major
 *      %a2 of W's upper shape (E's iteration shape); E writes %a2 directly and every other
 *      use of %a reads %t = rock.transform(%a2) {inv(W)} (of %a's shape) instead. inv(W)
 *      is kl_view_invert_partial with Slice -> Pad and Pad -> Slice. When inv(W) can give
 *      invalid points (W has a Slice: E writes only part of %a) every other use must be
 *      a fusing read (nothing else may have written the points that become 0).
 *   R2 (any fusing op): E reads global %a (input i) through views V (V: E's iteration
 *      space -> %a). E's iteration space becomes %a's shape: input i is %a itself and every
 *      other operand x (inputs and the output) becomes rock.transform(x) {inv(V)} (new
 *      iteration coordinate -> old one -> x). inv(V) is kl_view_invert_partial with
 *      Slice -> Pad only (a read through a Pad is not one-to-one onto %a). Not applied
 *      when another input of E reads a global rock.alloc directly (that read would get
 *      a view: the form is then as regular as it gets), when E also writes %a, or when V
 *      is not invertible (Broadcast, AddDim{n>1}, Embed, Pad): such a read stays and does
 *      not fuse. KILN_DEBUG=rewrite says why.
 * Both preserve the computed values: a point that inv(...) makes invalid is read as 0
 * and never written (the lowering skips invalid writes and zeroes invalid reads).
 * A no-op on IR already regular. Non-convergence within the driver's iteration bound is
 * an error at the last rewritten op. The pass ends with kl_verify_regular(module, strict)
 * (option `strict`, default false).
 *
 * kl_verify_regular(root, strict): walks the kernel functions under root (root itself
 * when it is one) and reports the FIRST violation as a located error at the fusing op:
 * "rock-regularize: %a is read by rock.elementwise through rock.transform %v; ...".
 * Non-strict, a view is a violation only when R1 / R2 would have removed it (what the
 * pass leaves, e.g. a broadcast read, is allowed); strict, every view between a global
 * alloc and a fusing op is one (the message says why the pass left it). Never changes
 * the IR. rock-align-tiling runs the non-strict check first. */
#ifndef KL_ROCK_REGULARIZE_H
#define KL_ROCK_REGULARIZE_H
#include "core/ir.h"
kl_status kl_verify_regular(kl_op *root, bool strict);
#endif
