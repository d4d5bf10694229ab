/* context.h — the owner of all IR: arena, interned identifiers/types/attributes, op
 * registry, attribute-extension registry, diagnostics sink.
 * Contract: no globals; any number of contexts may live in one process. Everything
 * allocated through a context dies with kl_ctx_destroy. Errors are reported as
 * diagnostics (location + message) and a KL_ERR status; nothing here aborts on user
 * input. */
#ifndef KL_CONTEXT_H
#define KL_CONTEXT_H
#include <stdint.h>
#include <stdbool.h>
#include "core/arena.h"
#include "core/diag.h"

typedef enum { KL_OK = 0, KL_ERR = 1 } kl_status;

typedef struct kl_ctx kl_ctx;
typedef struct kl_type kl_type;
typedef struct kl_attr kl_attr;
typedef struct kl_op kl_op;
typedef struct kl_value kl_value;
typedef struct kl_block kl_block;
typedef struct kl_region kl_region;
typedef struct kl_opdef kl_opdef;

/* Locations, severities and the diagnostic value are core/diag.h's. */
kl_loc kl_loc_make(kl_ctx *ctx, const char *file, int line, int col); /* file interned */

/* A context with the dialects registered (core/dialects.c) and no passes: whoever runs
 * passes calls kl_register_builtin_passes (passes/passes.h) once. */
kl_ctx *kl_ctx_create(void);
void kl_ctx_destroy(kl_ctx *ctx);
kl_arena *kl_ctx_arena(kl_ctx *ctx);
/* The arena new ops, regions, blocks and block arguments come from (core/ir.c): the
 * context's own unless a layer above has set another with kl_ctx_set_ir_arena (the
 * compile driver does, so a program's IR dies with the program, not with the context).
 * kl_ctx_set_ir_arena returns the one it replaces; NULL restores the context's own.
 * Interned identifiers, types and attributes always live in the context's arena, so IR
 * from another arena may use them for as long as the context lives. */
kl_arena *kl_ctx_ir_arena(kl_ctx *ctx);
kl_arena *kl_ctx_set_ir_arena(kl_ctx *ctx, kl_arena *a);
/* Interned identifier: equal strings give the same pointer. */
const char *kl_intern(kl_ctx *ctx, const char *s);
const char *kl_intern_n(kl_ctx *ctx, const char *s, size_t n);

/* Diagnostics. kl_emit_error formats "file:line:col: error: msg" (kl_diag_format's form)
 * into the context's buffer and, if a handler is set, passes it the kl_diag value
 * (core/diag.h: the same callback a kl_diag_sink takes). kl_diag_take returns (and clears) all
 * diagnostics text since the last take, malloc'd (caller frees); "" if none. */
kl_status kl_emit_error(kl_ctx *ctx, kl_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void kl_emit_diag(kl_ctx *ctx, kl_diag_kind kind, kl_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void kl_emit_vdiag(kl_ctx *ctx, kl_diag_kind kind, kl_loc loc, const char *fmt, va_list ap);
char *kl_diag_take(kl_ctx *ctx);
bool kl_diag_has_error(kl_ctx *ctx);
int kl_diag_error_count(kl_ctx *ctx);
void kl_ctx_set_diag_handler(kl_ctx *ctx, kl_diag_handler fn, void *user);

/* Per-context user data slots, for layers above the core (Lua bindings, runtime). */
void kl_ctx_set_user(kl_ctx *ctx, const char *key, void *value);
void *kl_ctx_get_user(kl_ctx *ctx, const char *key);

/* Runs fn(user) when the context is destroyed (last registered runs first); for
 * caches and other objects that layers above the core hang on a context. */
void kl_ctx_on_destroy(kl_ctx *ctx, void (*fn)(void *user), void *user);

/* Op registry (see ir.h for kl_opdef and the hooks attached to op definitions).
 * Registering a name twice replaces the earlier definition (its hooks stay). Lookup
 * returns NULL for unregistered ops (allowed in generic form). */
void kl_register_op(kl_ctx *ctx, const kl_opdef *def);
const kl_opdef *kl_lookup_op(kl_ctx *ctx, const char *name);
/* Iterate registered op definitions (order of registration). */
int kl_opdef_count(kl_ctx *ctx);
const kl_opdef *kl_opdef_at(kl_ctx *ctx, int i);

/* Dialect registration hooks run by kl_ctx_create (core/dialects.c lists them). */
void kl_register_all_dialects(kl_ctx *ctx);
#endif
