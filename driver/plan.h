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
 *    the caller sets it), one slot per param / constant / launch result in order, the
 *    steps (below) and the outputs. ir / ir_size are left NULL / 0.
 *  - Steps, per graph.launch in order, from its kernel func's attributes:
 *      prefill = {"<argument index>" = <value>, ...}   (keys: decimal indices of OUTPUT
 *        arguments; values: integer or float attributes, e.g. {"2" = 0.0 : f32},
 *        {"3" = -inf : f32}; each must fit the slot's element type, kl_bundle_value_fits)
 *        gives one PREFILL step of that argument's slot per entry, in key order, before
 *        the launch (the kernel may then accumulate into it);
 *      plan_step = "prefill": the kernel does nothing beyond its prefills (every output
 *        has one): the prefills replace the launch;
 *      plan_step = "copy": the kernel copies its one input into its one output of the
 *        same layout: one COPY step replaces the launch;
 *      otherwise one LAUNCH step. (passes/rock_plan_steps.c sets plan_step and prefill on
 *      kernels whose body is one fill of an output or one identity copy.) A malformed
 *      attribute is an error at the kernel func's location.
 *    Then every intermediate (a RESULT slot that is not an output) gets an
 *    ALLOC_WORKSPACE step right before the first step that uses it and a FREE step right
 *    after the last. Step i yields token i and waits (ascending, no duplicates) on the
 *    last writer of each slot it reads and on the last writer and the readers since of
 *    each slot it writes (a prefill, copy destination, allocation and free write).
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
 *    fields — bytes, output, is_output, elem_bytes — are not compared; every field of a
 *    step is, tokens and waits included).
 *  - kl_plan_text: the listing p:plan_text prints (malloc'd): a header line, one line a
 *    slot ("%s2 = param \"x\" : tensor<4xf32> (16 bytes)", "-> output 0" for outputs),
 *    one a step ("%t3 = launch k1(grid=[64,1,1], block=[256,1,1], lds=0) args(%s0, %s2 ->
 *    %s5) waits(%t1, %t2)", "%t0 = prefill %s3 value(-inf)", "%t1 = copy %s0 -> %s4 (64
 *    bytes)", "%t2 = alloc_workspace %s3 (1024 bytes)", "%t5 = free %s3 waits(%t4)"), and
 *    "return %s5, %s6"; slots and tokens numbered as in the structs (0-based). */
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

/* LDS bytes a kernel func declares: the sum over its rock.alloc ops in LDS space, each
 * placed at the alignment of the kernel's TMA destinations where it has TMA loads
 * (passes/rock_tma.h: kl_tma_lds_bytes; INT64_MAX when that overflows). The plan's lds_bytes of a kernel, and what a loaded
 * bundle's code objects are checked against (bundle.c). */
int64_t kl_kernel_lds_bytes(kl_op *kernel);

kl_status kl_plan_build(kl_plan *plan, kl_op *module, const char *target, const kl_target *desc, char *err,
                        size_t errlen);
void kl_plan_free(kl_plan *plan);
/* "slot 3" / "kernel k0 argument 1" and its type text when a tensor of the plan has an
 * element type a bundle cannot describe; KL_OK otherwise. */
kl_status kl_plan_describable(const kl_bundle_target *plan, char *what, size_t n, const char **type);
kl_status kl_plan_compare(const kl_bundle_target *ir, const kl_bundle_target *file, char *why, size_t n);
/* For a plan section of format version 2 (launches only, tokens a chain): as
 * kl_plan_compare, but the file's steps must be the IR plan's launch steps in order and
 * the IR plan may add nothing but workspace steps (a prefill or copy step cannot be in a
 * version 2 section). The program then runs the IR's plan. */
kl_status kl_plan_compare_v2(const kl_bundle_target *ir, const kl_bundle_target *file, char *why, size_t n);
char *kl_plan_text(const kl_bundle_target *plan);
#endif
