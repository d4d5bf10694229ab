/* jit_host.h — ORC LLJIT for host kernels, through the LLVM C API.
 * Contract: one kl_jit per host device. Modules are added from an LLVMModuleRef (not
 * consumed: it is serialised to bitcode and re-read into a fresh thread-safe context, so
 * the caller's context is untouched and may be disposed right away) or from bytes (LLVM
 * bitcode, or LLVM IR text). Each added module gets its own JITDylib (so two modules may
 * define the same kernel name) that can resolve process symbols (libc, libm). Before
 * JIT compilation the module is given the JIT's triple and data layout, verified, and
 * optimised with "default<O3>" (loop + SLP vectorisation) for the host CPU (its name and
 * features, the same target machine the JIT generates code with). Errors: NULL / KL_ERR
 * plus a message in err. All calls on one kl_jit are serialised by an internal mutex;
 * looked-up addresses stay valid until the module is removed or the JIT destroyed.
 * kl_jit_add_bytes reads bytes from outside in a child process first (jit_host.c): bytes
 * LLVM's reader aborts or crashes on give an error instead of ending the process.
 * kl_jit_trust_bytes marks bytes kiln generated itself (they are then read directly). */
#ifndef KL_JIT_HOST_H
#define KL_JIT_HOST_H
#include <stddef.h>
#include <stdint.h>
#include <llvm-c/Core.h>
#include "core/context.h" /* kl_status */

typedef struct kl_jit kl_jit;
typedef struct kl_jit_module kl_jit_module;

/* opt_level: 0..3 (negative = 3) for both the IR pipeline and the code generator. */
kl_jit *kl_jit_create(int opt_level, char *err, size_t errlen);
void kl_jit_destroy(kl_jit *jit);
const char *kl_jit_triple(const kl_jit *jit);
const char *kl_jit_data_layout(const kl_jit *jit);
const char *kl_jit_cpu(const kl_jit *jit);

kl_jit_module *kl_jit_add_module(kl_jit *jit, LLVMModuleRef m, char *err, size_t errlen);
kl_jit_module *kl_jit_add_bytes(kl_jit *jit, const void *data, size_t size, char *err, size_t errlen);
void kl_jit_trust_bytes(const void *data, size_t size);
/* Address of a symbol defined by the module (compiles it on first lookup). */
void *kl_jit_lookup(kl_jit *jit, kl_jit_module *mod, const char *name, char *err, size_t errlen);
/* Frees the module's code and memory; its addresses become invalid. */
kl_status kl_jit_remove_module(kl_jit *jit, kl_jit_module *mod, char *err, size_t errlen);

/* For tests: the f16 / bf16 conversions (round to nearest even) that every module's
 * JITDylib gets as __truncsfhf2, __truncdfhf2, __truncsfbf2, __truncdfbf2 and
 * __extendhfsf2 on x86-64 (a static kiln binary may lack libgcc's). Bits in / out. */
uint16_t kl_jit_test_f32_to_f16(float f);
uint16_t kl_jit_test_f64_to_f16(double d);
uint16_t kl_jit_test_f32_to_bf16(float f);
uint16_t kl_jit_test_f64_to_bf16(double d);
float kl_jit_test_f16_to_f32(uint16_t h);
#endif
