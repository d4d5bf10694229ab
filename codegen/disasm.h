/* disasm.h — disassembly through the LLVM disassembler C API (llvm-c/Disassembler.h).
 * Contract: returns malloc'd text (caller frees), one instruction per line, each line a
 * tab followed by the instruction as LLVM prints it; symbol labels ("name:") precede the
 * instructions at their addresses. Bytes that do not decode are printed as
 * "\t.long 0x........ ; invalid" and skipped (4 bytes). AMDGPU direct branches
 * (s_branch, s_cbranch_*) end in " ; .L<hex target address>", and a ".L<hex address>:"
 * line precedes every instruction such a branch targets (a loop's head: a branch back). On error returns NULL and writes a
 * message into err (err may be NULL). Initialises the LLVM targets on first use. */
#ifndef KL_DISASM_H
#define KL_DISASM_H
#include <stddef.h>
#include <stdint.h>

/* Raw code bytes for a triple / cpu / features (features may be NULL or ""). */
char *kl_disasm_bytes(const char *triple, const char *cpu, const char *features, const void *code, size_t size,
                      uint64_t pc, char *err, size_t errlen);
/* The .text of an HSACO (see hsaco.h); cpu NULL means the chip recorded in e_flags. */
char *kl_disasm_hsaco(const void *hsaco, size_t size, const char *cpu, char *err, size_t errlen);
#endif
