/* dialects.c — the one list of dialect registrations run by kl_ctx_create.
 * Add a line here when a new dialect (op set or attribute kind) lands. Dialects only:
 * passes are registered by whoever runs them (kl_register_builtin_passes, called by
 * lua/kiln_lua.c and lua/main.c), so core needs nothing outside core/. */
#include "core/context.h"

void kl_register_builtin_dialect(kl_ctx *ctx);
void kl_register_graph_dialect(kl_ctx *ctx);
void kl_register_rock_dialect(kl_ctx *ctx);
void kl_register_view_attr(kl_ctx *ctx);

void kl_register_all_dialects(kl_ctx *ctx) {
  kl_register_builtin_dialect(ctx);
  kl_register_graph_dialect(ctx);
  kl_register_rock_dialect(ctx);
  kl_register_view_attr(ctx);
}
