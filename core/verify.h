/* verify.h — the IR verifier.
 * Contract: checks, for every op under root: the registered contract (operand, result
 * and region counts, required attributes), same-type trait, terminators (present and
 * last), SSA dominance within regions (a value is used only after its definition in
 * the same block or in a block of an enclosing region, never across an isolated op),
 * and each op's verify hook. Every problem is a diagnostic naming the op and its
 * location; returns KL_ERR if any was found. Never modifies the IR.
 * kl_verify_level: every op under root (root included) is legal at IR level `level`
 * (kl_op_legal_at, the opdefs' KL_LEVEL_* masks); each illegal op is an error at its
 * location "WHO: 'rock.gemm' is not legal at the loop level (legal at: kernel)". One
 * walk, no allocation. graph-to-rock calls it on the kernels it produces (kernel level);
 * rock-lower-loops checks the loop level with kl_op_legal_at and its own message. */
#ifndef KL_VERIFY_H
#define KL_VERIFY_H
#include "core/ir.h"
kl_status kl_verify(kl_op *root);
kl_status kl_verify_level(kl_op *root, unsigned level, const char *who);
const char *kl_level_name(unsigned level); /* "graph", "kernel", "loop" (one bit), else "?" */
#endif
