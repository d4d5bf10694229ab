/* problem_key.h — the tuning key of a GEMM kernel: what a tuning database record
 * (driver/tuning_db.h) is matched on.
 * Contract:
 *  - kl_gemm_problem_key(fn, gemm) reads a kernel func holding one rock.gemm as
 *    rock-gemm-to-gridwise sees it (after rock-conv-to-gemm): the key is the FNV-1a
 *    64-bit hash, as 16 lower-case hex digits, of the func's generic IR text without
 *    locations, with references to its symbol name replaced by "@k" and its sym_name, perf_config /
 *    perf_config_source / problem_key / problem attribute removed. So it covers the op kind,
 *    shapes, element types, the views (layouts, conv geometry) and the fused epilogue and
 *    prologues, and not the kernel's name or position in the graph. Deterministic.
 *  - desc gets a readable summary "gemm G=1 M=33 N=45 K=70 f16,f16->f32 +3 ops" (the
 *    ops other than the gemm, transforms and allocs counted as the epilogue/prologue size).
 *  - Pure over the IR (prints it; modifies nothing). */
#ifndef KL_PROBLEM_KEY_H
#define KL_PROBLEM_KEY_H
#include <stddef.h>
#include "core/ir.h"

#define KL_PROBLEM_KEY_LEN 17 /* 16 hex digits + NUL */

void kl_gemm_problem_key(kl_op *fn, kl_op *gemm, char key[KL_PROBLEM_KEY_LEN], char *desc, size_t desclen);
#endif
