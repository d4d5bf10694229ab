/* passes.h — the built-in passes: registering them with a context, and the ones that
 * may be called directly.
 * Contract: kl_ctx_create registers the dialects only; whoever builds a registry (the
 * driver's callers: the Lua module, the kiln executable, the C tests and fuzz targets)
 * calls kl_register_builtin_passes once per context. It registers every pass listed in
 * passes/passes.def, in that order (registering again under a name replaces, so a
 * second call re-registers the same passes). The direct entry points run a pass with its
 * default options on any op (module or function): KL_OK, or KL_ERR plus diagnostics on
 * the op's context. The pass manager itself is core/pass.h. */
#ifndef KL_PASSES_H
#define KL_PASSES_H
#include "core/pass.h"

void kl_register_builtin_passes(kl_ctx *ctx);

/* The entry function of each line of passes.def (for registry.c; callers use
 * kl_register_builtin_passes). */
#define KL_PASS(id, name, file, brings) void kl__register_##id(kl_ctx *ctx);
#include "passes/passes.def"
#undef KL_PASS

/* passes/{canonicalize,cse,dce}.c */
kl_status kl_canonicalize(kl_op *root);
kl_status kl_cse(kl_op *root);
kl_status kl_dce(kl_op *root);
#endif
