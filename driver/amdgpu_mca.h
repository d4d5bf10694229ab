/* amdgpu_mca.h — a cycle estimate of an AMDGPU kernel's main loop by llvm-mca.
 * Contract: kl_amdgpu_mca_loop(asm_text, target, &cycles, why, n) takes a disassembly (as
 * kl_disasm_hsaco prints it), the instructions of the loop kl_amdgpu_loop_mix_of picks
 * (labels and "; ..." comments dropped), and runs the LLVM 19 machine-code analyzer on
 * them (`llvm-mca-19`, else `llvm-mca`, found on PATH; -mcpu = the kiln target's gfx name,
 * 100 iterations): *cycles = its Total Cycles / Iterations, the steady-state cycles of one
 * loop iteration of one wave under LLVM's scheduling model (no memory latency, no other
 * waves). Returns 1 with *cycles set, 0 with why = the reason it was skipped (no tool on
 * PATH, no loop, the tool failed or printed no cycles); never aborts. Used by
 * `kiln opt --stats --target T` only (it starts a process and writes a temporary file). */
#ifndef KL_AMDGPU_MCA_H
#define KL_AMDGPU_MCA_H
#include <stddef.h>
int kl_amdgpu_mca_loop(const char *asm_text, const char *target, double *cycles, char *why, size_t whylen);
#endif
