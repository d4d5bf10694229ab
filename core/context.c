/* context.c — context lifetime, identifier interning, diagnostics, op registry; the
 * interning tables and registries are core/hashmap.h string maps. */
#include "core/context.h"
#include "core/ir.h"
#include "core/hashmap.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef kl_hashmap kl_strmap; /* core/hashmap.h, string keys (arena copies) */
/* A registered op: its definition and the hooks attached to it (ir.h). */
typedef struct {
  const kl_opdef *def;
  kl_hook_fn hooks[KL_HOOK_COUNT];
} op_entry;

struct kl_ctx {
  kl_arena arena;
  kl_arena *ir_arena; /* NULL: arena */
  kl_strmap idents;   /* interned strings */
  kl_strmap types;    /* canonical text -> kl_type */
  kl_strmap attrs;    /* canonical text -> kl_attr */
  kl_strmap ops;      /* name -> op_entry */
  kl_strmap exts;     /* name -> kl_attr_ext */
  kl_strmap user;     /* user data */
  const kl_opdef **opdefs;
  int nopdefs, capopdefs;
  kl_sb diag;
  int nerrors;
  kl_diag_handler handler;
  void *handler_user;
  struct {
    void (*fn)(void *);
    void *user;
  } * hooks;
  int nhooks;
};

/* The entry for key (creating one, with its key copied into the arena and a NULL value,
 * if create). */
static kl_hm_entry *map_get(kl_ctx *ctx, kl_strmap *m, const char *k, size_t n, bool create) {
  kl_hm_entry *e = kl_strmap_find(m, k, n);
  if (e || !create) return e;
  return kl_strmap_put(m, kl_arena_strndup(&ctx->arena, k, n), n, NULL);
}

kl_ctx *kl_ctx_create(void) {
  kl_ctx *ctx = kl_xcalloc(1, sizeof(kl_ctx));
  kl_arena_init(&ctx->arena);
  kl_strmap *maps[] = { &ctx->idents, &ctx->types, &ctx->attrs, &ctx->ops, &ctx->exts, &ctx->user };
  for (size_t i = 0; i < sizeof maps / sizeof *maps; i++) *maps[i] = KL_STRMAP_INIT;
  kl_register_all_dialects(ctx);
  return ctx;
}
void kl_ctx_on_destroy(kl_ctx *ctx, void (*fn)(void *user), void *user) {
  ctx->hooks = kl_xrealloc(ctx->hooks, (ctx->nhooks + 1) * sizeof *ctx->hooks);
  ctx->hooks[ctx->nhooks].fn = fn;
  ctx->hooks[ctx->nhooks].user = user;
  ctx->nhooks++;
}
void kl_ctx_destroy(kl_ctx *ctx) {
  if (!ctx) return;
  for (int i = ctx->nhooks - 1; i >= 0; i--) ctx->hooks[i].fn(ctx->hooks[i].user);
  free(ctx->hooks);
  kl_strmap *maps[] = { &ctx->idents, &ctx->types, &ctx->attrs, &ctx->ops, &ctx->exts, &ctx->user };
  for (size_t i = 0; i < sizeof maps / sizeof *maps; i++) kl_hashmap_free(maps[i]);
  free(ctx->opdefs);
  kl_sb_free(&ctx->diag);
  kl_arena_destroy(&ctx->arena);
  free(ctx);
}
kl_arena *kl_ctx_arena(kl_ctx *ctx) { return &ctx->arena; }
kl_arena *kl_ctx_ir_arena(kl_ctx *ctx) { return ctx->ir_arena ? ctx->ir_arena : &ctx->arena; }
kl_arena *kl_ctx_set_ir_arena(kl_ctx *ctx, kl_arena *a) {
  kl_arena *prev = kl_ctx_ir_arena(ctx);
  ctx->ir_arena = a == &ctx->arena ? NULL : a;
  return prev;
}
const char *kl_intern_n(kl_ctx *ctx, const char *s, size_t n) { return map_get(ctx, &ctx->idents, s, n, true)->key; }
const char *kl_intern(kl_ctx *ctx, const char *s) { return s ? kl_intern_n(ctx, s, strlen(s)) : NULL; }

/* Internal interning tables used by type.c and attr.c (declared in their .c files). */
void *kl__ctx_lookup_type(kl_ctx *ctx, const char *text) {
  kl_hm_entry *s = map_get(ctx, &ctx->types, text, strlen(text), false);
  return s ? s->val : NULL;
}
void kl__ctx_store_type(kl_ctx *ctx, const char *text, void *t) {
  map_get(ctx, &ctx->types, text, strlen(text), true)->val = t;
}
void *kl__ctx_lookup_attr(kl_ctx *ctx, const char *text, size_t n) {
  kl_hm_entry *s = map_get(ctx, &ctx->attrs, text, n, false);
  return s ? s->val : NULL;
}
const char *kl__ctx_store_attr(kl_ctx *ctx, const char *text, size_t n, void *a) {
  kl_hm_entry *s = map_get(ctx, &ctx->attrs, text, n, true);
  s->val = a;
  return s->key;
}

kl_loc kl_loc_make(kl_ctx *ctx, const char *file, int line, int col) {
  return (kl_loc){ kl_intern(ctx, file), line, col };
}
void kl_emit_vdiag(kl_ctx *ctx, kl_diag_kind kind, kl_loc loc, const char *fmt, va_list ap) {
  kl_sb msg = { 0 };
  kl_sb_vprintf(&msg, fmt, ap);
  char where[512];
  kl_loc_format(loc, where, sizeof where);
  kl_sb_printf(&ctx->diag, "%s: %s: %s\n", where, kl_diag_kind_name(kind), kl_sb_str(&msg)); /* kl_diag_format's form */
  if (kind == KL_DIAG_ERROR) ctx->nerrors++;
  if (ctx->handler) ctx->handler(ctx->handler_user, &(kl_diag){ kind, loc, kl_sb_str(&msg) });
  kl_sb_free(&msg);
}
void kl_emit_diag(kl_ctx *ctx, kl_diag_kind kind, kl_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kl_emit_vdiag(ctx, kind, loc, fmt, ap);
  va_end(ap);
}
kl_status kl_emit_error(kl_ctx *ctx, kl_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kl_emit_vdiag(ctx, KL_DIAG_ERROR, loc, fmt, ap);
  va_end(ap);
  return KL_ERR;
}
char *kl_diag_take(kl_ctx *ctx) {
  ctx->nerrors = 0;
  return kl_sb_take(&ctx->diag);
}
bool kl_diag_has_error(kl_ctx *ctx) { return ctx->nerrors > 0; }
int kl_diag_error_count(kl_ctx *ctx) { return ctx->nerrors; }
void kl_ctx_set_diag_handler(kl_ctx *ctx, kl_diag_handler fn, void *user) {
  ctx->handler = fn;
  ctx->handler_user = user;
}

void kl_ctx_set_user(kl_ctx *ctx, const char *key, void *value) {
  map_get(ctx, &ctx->user, key, strlen(key), true)->val = value;
}
void *kl_ctx_get_user(kl_ctx *ctx, const char *key) {
  kl_hm_entry *s = map_get(ctx, &ctx->user, key, strlen(key), false);
  return s ? s->val : NULL;
}

void kl_register_op(kl_ctx *ctx, const kl_opdef *def) {
  kl_hm_entry *s = map_get(ctx, &ctx->ops, def->name, strlen(def->name), true);
  op_entry *e = s->val;
  if (e) {
    for (int i = 0; i < ctx->nopdefs; i++)
      if (ctx->opdefs[i] == e->def) ctx->opdefs[i] = def;
  } else {
    if (ctx->nopdefs == ctx->capopdefs) {
      ctx->capopdefs = ctx->capopdefs ? ctx->capopdefs * 2 : 64;
      ctx->opdefs = kl_xrealloc(ctx->opdefs, ctx->capopdefs * sizeof *ctx->opdefs);
    }
    ctx->opdefs[ctx->nopdefs++] = def;
    e = kl_arena_alloc(&ctx->arena, sizeof *e);
    memset(e, 0, sizeof *e);
    s->val = e;
  }
  e->def = def; /* hooks stay: they belong to the op name */
}
static op_entry *op_entry_of(kl_ctx *ctx, const char *name) {
  kl_hm_entry *s = map_get(ctx, &ctx->ops, name, strlen(name), false);
  return s ? s->val : NULL;
}
const kl_opdef *kl_lookup_op(kl_ctx *ctx, const char *name) {
  op_entry *e = op_entry_of(ctx, name);
  return e ? e->def : NULL;
}
kl_status kl_opdef_attach(kl_ctx *ctx, kl_hook_kind kind, const char *name, kl_hook_fn fn) {
  if ((int)kind < 0 || kind >= KL_HOOK_COUNT)
    return kl_emit_error(ctx, KL_LOC_UNKNOWN, "cannot attach a hook of unknown kind %d to '%s'", (int)kind,
                         name ? name : "");
  op_entry *e = name ? op_entry_of(ctx, name) : NULL;
  if (!e)
    return kl_emit_error(ctx, KL_LOC_UNKNOWN, "cannot attach a hook to '%s': no op of that name is registered",
                         name ? name : "");
  e->hooks[kind] = fn;
  return KL_OK;
}
kl_hook_fn kl_opdef_hook(kl_ctx *ctx, const kl_opdef *def, kl_hook_kind kind) {
  if (!def || (int)kind < 0 || kind >= KL_HOOK_COUNT) return NULL;
  op_entry *e = op_entry_of(ctx, def->name);
  return e ? e->hooks[kind] : NULL;
}
int kl_opdef_count(kl_ctx *ctx) { return ctx->nopdefs; }
const kl_opdef *kl_opdef_at(kl_ctx *ctx, int i) { return (i >= 0 && i < ctx->nopdefs) ? ctx->opdefs[i] : NULL; }

void kl_register_attr_ext(kl_ctx *ctx, const kl_attr_ext *ext) {
  map_get(ctx, &ctx->exts, ext->name, strlen(ext->name), true)->val = (void *)ext;
}
const kl_attr_ext *kl_lookup_attr_ext(kl_ctx *ctx, const char *name, size_t n) {
  kl_hm_entry *s = map_get(ctx, &ctx->exts, name, n, false);
  return s ? s->val : NULL;
}
