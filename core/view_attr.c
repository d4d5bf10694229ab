/* view_attr.c — the `#view<...>` IR attribute: an attribute extension (attr.h) whose
 * payload is a kl_view copied into the context arena, printed and parsed with the view
 * text syntax of view.h. Parse errors are reported at file:line:col inside the body. */
#include "core/view.h"
#include "core/attr.h"
#include <string.h>

static void view_attr_print(kl_sb *sb, const void *payload) { kl_view_print_sb(sb, (const kl_view *)payload); }

static const void *view_attr_parse(kl_ctx *ctx, const char *body, size_t len, kl_loc loc) {
  kl_view_err e;
  kl_view *v = kl_view_parse(body, len, &e);
  if (!v) {
    kl_loc at = loc;
    if (e.line <= 1)
      at.col = loc.col + (e.col > 0 ? e.col - 1 : 0);
    else {
      at.line = loc.line + e.line - 1;
      at.col = e.col;
    }
    kl_emit_error(ctx, at, "bad view: %s", e.msg);
    return NULL;
  }
  kl_view *c = kl_view_copy_to_arena(v, kl_ctx_arena(ctx));
  kl_view_free(v);
  return c;
}

static const kl_attr_ext view_ext = { "view", view_attr_print, view_attr_parse };

void kl_register_view_attr(kl_ctx *ctx) { kl_register_attr_ext(ctx, &view_ext); }

const kl_view *kl_attr_view(const kl_attr *a) {
  if (!a || a->kind != KL_AT_EXT || !a->ext || !a->ext->name || strcmp(a->ext->name, "view") != 0) return NULL;
  return (const kl_view *)a->payload;
}

static const void *view_copy(kl_ctx *ctx, const void *v) { return kl_view_copy_to_arena(v, kl_ctx_arena(ctx)); }
const kl_attr *kl_attr_from_view(kl_ctx *ctx, const kl_view *v) {
  if (!v) return NULL;
  const kl_attr_ext *ext = kl_lookup_attr_ext(ctx, "view", 4);
  if (!ext) {
    kl_register_view_attr(ctx);
    ext = &view_ext;
  }
  return kl_attr_ext_make_copy(ctx, ext, v, view_copy);
}
