/* verify.h — the IR verifier.
 * Contract: checks, for every op under root: the registered contract (operand, result
 * and region counts, required attributes), same-type trait, terminators (present and
 * last), SSA dominance within regions (a value is used only after its definition in
 * the same block or in a block of an enclosing region, never across an isolated op),
 * and each op's verify hook. Every problem is a diagnostic naming the op and its
 * location; returns KL_ERR if any was found. Never modifies the IR. */
#ifndef KL_VERIFY_H
#define KL_VERIFY_H
#include "core/ir.h"
kl_status kl_verify(kl_op *root);
#endif
