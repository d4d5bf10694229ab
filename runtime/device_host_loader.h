/* device_host_loader.h — the host device's loader: ORC LLJIT's object layer (LLVM C
 * API) links host objects into the process. It loads; it never compiles: a host binary
 * is an ELF relocatable object that codegen made at compile time (kl_codegen_emit for
 * "host": optimised and compiled for this CPU).
 * Contract: one kl_jit per host device. Each added object gets its own JITDylib (so two
 * objects may define the same kernel name) that resolves process symbols (libc, libm)
 * and kiln's f16/bf16 conversion helpers. Anything but a relocatable ELF object (LLVM
 * bitcode, IR text, garbage) is refused with an error saying what it is. An object not
 * marked trusted is first linked by a forked child (device_host_loader.c), so bytes that
 * LLVM's object reader or JITLink would crash or abort on give an error instead of
 * ending the process; trusted objects (KL_LOAD_TRUSTED: made by this process) are added
 * directly. Errors: NULL / KL_ERR plus a message in err. All calls on one kl_jit are
 * serialised by an internal mutex; looked-up addresses stay valid until the module is
 * removed or the loader destroyed. */
#ifndef KL_DEVICE_HOST_LOADER_H
#define KL_DEVICE_HOST_LOADER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/context.h" /* kl_status */

typedef struct kl_jit kl_jit;
typedef struct kl_jit_module kl_jit_module;

kl_jit *kl_jit_create(char *err, size_t errlen);
void kl_jit_destroy(kl_jit *jit);
const char *kl_jit_triple(const kl_jit *jit);

kl_jit_module *kl_jit_add_object(kl_jit *jit, const void *data, size_t size, bool trusted, char *err, size_t errlen);
/* Address of a symbol defined by the module (links the object on first lookup). */
void *kl_jit_lookup(kl_jit *jit, kl_jit_module *mod, const char *name, char *err, size_t errlen);
/* Frees the module's code and memory; its addresses become invalid. */
kl_status kl_jit_remove_module(kl_jit *jit, kl_jit_module *mod, char *err, size_t errlen);

/* Every module's JITDylib gets __truncsfhf2, __truncdfhf2, __truncsfbf2, __truncdfbf2 and
 * __extendhfsf2 on x86-64 (a static kiln binary may lack libgcc's), computed by
 * core/dtype.h's conversions. */
#endif
