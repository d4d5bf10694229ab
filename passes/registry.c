/* registry.c — kl_register_builtin_passes (passes/passes.h): calls the entry function of
 * every line of passes/passes.def, in order. */
#include "passes/passes.h"

void kl_register_builtin_passes(kl_ctx *ctx) {
#define KL_PASS(id, name, file, brings) kl__register_##id(ctx);
#include "passes/passes.def"
#undef KL_PASS
}
