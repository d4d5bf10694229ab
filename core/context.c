/* context.c — context lifetime, identifier interning, diagnostics, op registry. */
#include "core/context.h"
#include "core/ir.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { const char *key; void *val; } kl_slot;
typedef struct { kl_slot *slots; size_t cap, n; } kl_strmap;

struct kl_ctx {
  kl_arena arena;
  kl_strmap idents;       /* interned strings */
  kl_strmap types;        /* canonical text -> kl_type */
  kl_strmap attrs;        /* canonical text -> kl_attr */
  kl_strmap ops;          /* name -> kl_opdef */
  kl_strmap exts;         /* name -> kl_attr_ext */
  kl_strmap user;         /* user data */
  const kl_opdef **opdefs; int nopdefs, capopdefs;
  kl_sb diag; int nerrors;
  kl_diag_handler handler; void *handler_user;
  struct { void (*fn)(void *); void *user; } *hooks; int nhooks;
};

static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) { h ^= (unsigned char)s[i]; h *= 1099511628211ull; }
  return h;
}
static kl_slot *map_find(kl_strmap *m, const char *k, size_t n) {
  if (!m->cap) return NULL;
  size_t i = hash_bytes(k, n) & (m->cap - 1);
  for (;;) {
    kl_slot *s = &m->slots[i];
    if (!s->key) return s;
    if (strlen(s->key) == n && memcmp(s->key, k, n) == 0) return s;
    i = (i + 1) & (m->cap - 1);
  }
}
static void map_grow(kl_strmap *m) {
  size_t ncap = m->cap ? m->cap * 2 : 64;
  kl_strmap nm = { kl_xcalloc(ncap, sizeof(kl_slot)), ncap, 0 };
  for (size_t i = 0; i < m->cap; i++) if (m->slots[i].key) {
    kl_slot *s = map_find(&nm, m->slots[i].key, strlen(m->slots[i].key));
    *s = m->slots[i]; nm.n++;
  }
  free(m->slots); *m = nm;
}
/* Returns the slot for key (creating an empty-valued one with key interned in arena). */
static kl_slot *map_get(kl_ctx *ctx, kl_strmap *m, const char *k, size_t n, bool create) {
  kl_slot *s = map_find(m, k, n);
  if (s && s->key) return s;
  if (!create) return NULL;
  if ((m->n + 1) * 2 > m->cap) { map_grow(m); s = map_find(m, k, n); }
  s->key = kl_arena_strndup(&ctx->arena, k, n); s->val = NULL; m->n++;
  return s;
}

kl_ctx *kl_ctx_create(void) {
  kl_ctx *ctx = kl_xcalloc(1, sizeof(kl_ctx));
  kl_arena_init(&ctx->arena);
  kl_register_all_dialects(ctx);
  return ctx;
}
void kl_ctx_on_destroy(kl_ctx *ctx, void (*fn)(void *user), void *user) {
  ctx->hooks = kl_xrealloc(ctx->hooks, (ctx->nhooks + 1) * sizeof *ctx->hooks);
  ctx->hooks[ctx->nhooks].fn = fn; ctx->hooks[ctx->nhooks].user = user; ctx->nhooks++;
}
void kl_ctx_destroy(kl_ctx *ctx) {
  if (!ctx) return;
  for (int i = ctx->nhooks - 1; i >= 0; i--) ctx->hooks[i].fn(ctx->hooks[i].user);
  free(ctx->hooks);
  kl_strmap *maps[] = { &ctx->idents, &ctx->types, &ctx->attrs, &ctx->ops, &ctx->exts, &ctx->user };
  for (size_t i = 0; i < sizeof maps / sizeof *maps; i++) free(maps[i]->slots);
  free(ctx->opdefs);
  kl_sb_free(&ctx->diag);
  kl_arena_destroy(&ctx->arena);
  free(ctx);
}
kl_arena *kl_ctx_arena(kl_ctx *ctx) { return &ctx->arena; }
const char *kl_intern_n(kl_ctx *ctx, const char *s, size_t n) { return map_get(ctx, &ctx->idents, s, n, true)->key; }
const char *kl_intern(kl_ctx *ctx, const char *s) { return s ? kl_intern_n(ctx, s, strlen(s)) : NULL; }

/* Internal interning tables used by type.c and attr.c (declared in their .c files). */
void *kl__ctx_lookup_type(kl_ctx *ctx, const char *text) { kl_slot *s = map_get(ctx, &ctx->types, text, strlen(text), false); return s ? s->val : NULL; }
void  kl__ctx_store_type(kl_ctx *ctx, const char *text, void *t) { map_get(ctx, &ctx->types, text, strlen(text), true)->val = t; }
void *kl__ctx_lookup_attr(kl_ctx *ctx, const char *text, size_t n) { kl_slot *s = map_get(ctx, &ctx->attrs, text, n, false); return s ? s->val : NULL; }
const char *kl__ctx_store_attr(kl_ctx *ctx, const char *text, size_t n, void *a) { kl_slot *s = map_get(ctx, &ctx->attrs, text, n, true); s->val = a; return s->key; }

kl_loc kl_loc_make(kl_ctx *ctx, const char *file, int line, int col) { return (kl_loc){ kl_intern(ctx, file), line, col }; }
void kl_emit_vdiag(kl_ctx *ctx, kl_diag_kind kind, kl_loc loc, const char *fmt, va_list ap) {
  kl_sb msg = {0};
  kl_sb_vprintf(&msg, fmt, ap);
  char where[512]; kl_loc_format(loc, where, sizeof where);
  kl_sb_printf(&ctx->diag, "%s: %s: %s\n", where, kl_diag_kind_name(kind), kl_sb_str(&msg));   /* kl_diag_format's form */
  if (kind == KL_DIAG_ERROR) ctx->nerrors++;
  if (ctx->handler) ctx->handler(ctx->handler_user, kind, loc, kl_sb_str(&msg));
  kl_sb_free(&msg);
}
void kl_emit_diag(kl_ctx *ctx, kl_diag_kind kind, kl_loc loc, const char *fmt, ...) {
  va_list ap; va_start(ap, fmt); kl_emit_vdiag(ctx, kind, loc, fmt, ap); va_end(ap);
}
kl_status kl_emit_error(kl_ctx *ctx, kl_loc loc, const char *fmt, ...) {
  va_list ap; va_start(ap, fmt); kl_emit_vdiag(ctx, KL_DIAG_ERROR, loc, fmt, ap); va_end(ap);
  return KL_ERR;
}
char *kl_diag_take(kl_ctx *ctx) { ctx->nerrors = 0; return kl_sb_take(&ctx->diag); }
bool kl_diag_has_error(kl_ctx *ctx) { return ctx->nerrors > 0; }
int kl_diag_error_count(kl_ctx *ctx) { return ctx->nerrors; }
void kl_ctx_set_diag_handler(kl_ctx *ctx, kl_diag_handler fn, void *user) { ctx->handler = fn; ctx->handler_user = user; }

void kl_ctx_set_user(kl_ctx *ctx, const char *key, void *value) { map_get(ctx, &ctx->user, key, strlen(key), true)->val = value; }
void *kl_ctx_get_user(kl_ctx *ctx, const char *key) { kl_slot *s = map_get(ctx, &ctx->user, key, strlen(key), false); return s ? s->val : NULL; }

void kl_register_op(kl_ctx *ctx, const kl_opdef *def) {
  kl_slot *s = map_get(ctx, &ctx->ops, def->name, strlen(def->name), true);
  if (s->val) {
    for (int i = 0; i < ctx->nopdefs; i++) if (ctx->opdefs[i] == s->val) ctx->opdefs[i] = def;
  } else {
    if (ctx->nopdefs == ctx->capopdefs) {
      ctx->capopdefs = ctx->capopdefs ? ctx->capopdefs * 2 : 64;
      ctx->opdefs = kl_xrealloc(ctx->opdefs, ctx->capopdefs * sizeof *ctx->opdefs);
    }
    ctx->opdefs[ctx->nopdefs++] = def;
  }
  s->val = (void *)def;
}
const kl_opdef *kl_lookup_op(kl_ctx *ctx, const char *name) {
  kl_slot *s = map_get(ctx, &ctx->ops, name, strlen(name), false);
  return s ? s->val : NULL;
}
int kl_opdef_count(kl_ctx *ctx) { return ctx->nopdefs; }
const kl_opdef *kl_opdef_at(kl_ctx *ctx, int i) { return (i >= 0 && i < ctx->nopdefs) ? ctx->opdefs[i] : NULL; }

void kl_register_attr_ext(kl_ctx *ctx, const kl_attr_ext *ext) { map_get(ctx, &ctx->exts, ext->name, strlen(ext->name), true)->val = (void *)ext; }
const kl_attr_ext *kl_lookup_attr_ext(kl_ctx *ctx, const char *name, size_t n) {
  kl_slot *s = map_get(ctx, &ctx->exts, name, n, false);
  return s ? s->val : NULL;
}
