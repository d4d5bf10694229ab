/* plan.h — the host plan of one target, in the one shape kiln has for it: the structs of
 * client/kiln_client.h (kl_bundle_target: kernels with their launch sizes and argument
 * layouts, slots, steps, outputs). kl_compile builds it from the compiled module, the
 * bundle writer encodes it as it is (kl_bundle_encode), the bundle reader returns the
 * same structs, and loading rebuilds it from the bundle's IR and compares the two.
 * Contract:
 *  - kl_plan_build reads a compiled module (its graph func: params, constants, launches,
 *    return; its kernel funcs, in module order) and fills plan->t: name = target, arch
 *    and binary_format from desc, one kernel per kernel func (name, kind, perf config,
 *    grid = [grid_size,1,1], block = [block_size,1,1], lds_bytes = kl_kernel_lds_bytes,
 *    args named by arg_names with their layouts, ninputs from the launches; binary NULL:
 *    the caller sets it), one slot per param / constant / launch result in order, one
 *    launch step per launch, and the outputs. ir / ir_size are left NULL / 0.
 *    Per slot it keeps the IR type (slot_types) and, for a constant, the host tensor of
 *    its value (constants; the slot's data points into it).
 *  - A tensor whose element type a bundle cannot describe gets elem "" (the plan still
 *    runs; kl_plan_describable reports it, so saving fails with a message naming it).
 *  - Strings are interned in the module's context; everything else belongs to the plan
 *    until kl_plan_free (which releases the constants). Errors: KL_ERR plus a message
 *    ("compile: ..."), the plan then holds what was built and must still be freed.
 *  - kl_plan_compare(ir, file): the first difference between the plan rebuilt from the
 *    IR (authoritative) and a bundle's plan section, as "<what> ... in the IR, ... in the
 *    plan section" in why[n]; KL_OK when they are the same (binaries, ir and derived
 *    fields — bytes, output, is_output, elem_bytes — are not compared). */
#ifndef KL_PLAN_H
#define KL_PLAN_H
#include "client/kiln_client.h"
#include "core/ir.h"
#include "core/target.h"
#include "runtime/graph_eval.h" /* kl_dtype_of_type, kl_tensor */

typedef struct kl_plan {
  kl_bundle_target t;
  const kl_type **slot_types; /* t.nslots entries */
  kl_tensor **constants;      /* t.nslots entries, NULL but for constants */
  int nmem;
  void **mem; /* arrays the descriptions point to */
} kl_plan;

/* LDS bytes a kernel func declares: the sum over its rock.alloc ops in LDS space
 * (INT64_MAX when that overflows). The plan's lds_bytes of a kernel, and what a loaded
 * bundle's code objects are checked against (bundle.c). */
int64_t kl_kernel_lds_bytes(kl_op *kernel);

kl_status kl_plan_build(kl_plan *plan, kl_op *module, const char *target, const kl_target *desc, char *err,
                        size_t errlen);
void kl_plan_free(kl_plan *plan);
/* "slot 3" / "kernel k0 argument 1" and its type text when a tensor of the plan has an
 * element type a bundle cannot describe; KL_OK otherwise. */
kl_status kl_plan_describable(const kl_bundle_target *plan, char *what, size_t n, const char **type);
kl_status kl_plan_compare(const kl_bundle_target *ir, const kl_bundle_target *file, char *why, size_t n);
#endif
