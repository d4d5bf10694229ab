/* kiln_lua.h — the kiln Lua bindings (lua/kiln_lua*.c) and what the executable needs.
 * Contract: kl_lua_open is luaopen_kiln: it builds the module table (context, IR
 * handles, patterns, pipelines) and then loads the Lua part of the library
 * ("kiln.lib", lua/kiln/lib.lua) through package.path; failing to find it is a Lua
 * error. Handles are full userdata (metatables "kiln.op", "kiln.value", "kiln.block",
 * "kiln.region", "kiln.type", "kiln.attr", "kiln.context"); every IR handle keeps its
 * context userdata alive through its user value, and the context userdata destroys
 * the kl_ctx when it is collected. IR memory is arena-owned, so IR handles own
 * nothing (no __gc); one handle per IR object per context is cached (weak table), so
 * handles are also usable as table keys.
 * Errors (one convention): a binding function raises a Lua string error
 *   "<file>:<line>: error: <what>: <message>"
 * where <file>:<line> is the user's Lua line (the first stack level outside the kiln
 * library, kl_lua__push_where; "?" if there is none), <what> names the call
 * ("kiln.zeros", "g:param", "compile", ...; "kiln" in the shared checks of handles,
 * contexts and conversions, which cannot know it) and <message> says what is wrong and
 * where in the arguments. Misuse (a bad argument, a destroyed context, a wrong handle)
 * and runtime failures (compiling, evaluating, a device) take the same shape, through
 * one helper family (kiln_lua_error.c): kl_lua__rt_error for a formatted message,
 * kl_lua__err_error for a failure a lower layer reported in a `char *err` buffer,
 * kl_lua__diag_error for the diagnostics a context collected. Diagnostics keep their
 * own location, the IR (or Lua) line that built the op, which is the point of them:
 * their text "file:line:col: error: ..." is the <message>; when it already begins at
 * the user's Lua line ("<file>:<line>: error: ..." or "<file>:<line>:<col>: error: ...",
 * an op built by that very line, e.g. a graph op's shape error) it is the error as it
 * stands instead of repeating the location. Standard argument checks (luaL_argerror,
 * luaL_checktype, ...) keep Lua's own "bad argument #n to 'f'" shape.
 * C callbacks that run Lua code (Lua
 * patterns, Lua passes, pipeline callbacks, on_ir) always use lua_pcall with a
 * traceback handler: a Lua error never unwinds through core C code.
 * Busy contexts (one rule): while C code works on a context and runs Lua code (a Lua
 * pass, pipeline function, pattern, on_ir, op:walk's function, or a metamethod or
 * finalizer triggered while a pipeline, pattern driver, compile or program run reads
 * its arguments), the context is busy. ctx:destroy(), closing it (<close>) and calling
 * its __gc then raise "ctx:destroy() inside a callback that runs on this context
 * (<what>)" at the user's Lua line, and leave the context usable; destroy it after the
 * call returns. The collector cannot collect a busy context (the running C function
 * anchors its userdata). Other contexts may be destroyed inside a callback.
 * Every binding function that keeps a C pointer into a context (an op, graph, type...)
 * while it reads a user's argument table (lua_getfield/lua_geti/luaL_len/lua_gettable:
 * __index, __len) or allocates (any allocation may run a finalizer) makes the context
 * busy first with kl_lua__busy_guard (one line at its top); tensors and views it keeps
 * are pinned the same way (Pins below: t:release(), v's <close>, __gc raise instead).
 * Tables are still read with metamethods, not lua_rawget*: option and shape tables with
 * __index/__len (proxies, defaults, class-like objects) are legitimate input, and the
 * guard makes them safe; lua_next is raw anyway (no __pairs).
 * Files, one per userdata type (the internal to-be-closed guards share one):
 * kiln_lua.c (kl_lua_open, the class machinery), kiln_lua_context.c ("kiln.context",
 * busy contexts), kiln_lua_guard.c ("kiln.busyguard", "kiln.pinguard"),
 * kiln_lua_handle.c (what the IR handles share), kiln_lua_op.c, kiln_lua_value.c,
 * kiln_lua_block.c, kiln_lua_region.c, kiln_lua_type.c, kiln_lua_attr.c (one IR handle
 * type each), kiln_lua_ir.c (the module functions that make IR), kiln_lua_convert.c
 * (Lua values <-> types, attributes, locations), kiln_lua_error.c (errors),
 * kiln_lua_pattern.c ("kiln.pattern", apply_patterns), kiln_lua_rewriter.c
 * ("kiln.rewriter", the object a Lua pattern gets), kiln_lua_pass.c
 * (pipelines, Lua passes), kiln_lua_util.c; the front end (kiln_lua_rt.h):
 * kiln_lua_tensor.c, kiln_lua_view.c, kiln_lua_graph.c, kiln_lua_device.c,
 * kiln_lua_program.c (targets, compiling, programs), kiln_lua_prepared.c,
 * kiln_lua_bundle.c.
 * The kl_lua__* names below are internal to the binding files. */
#ifndef KL_KILN_LUA_H
#define KL_KILN_LUA_H
#include <lua.h>
#include <lauxlib.h>
#include "core/ir.h"
#include "core/rewrite.h"

/* ---- public ---- */
int kl_lua_open(lua_State *L); /* pushes the kiln module table */
/* The default context of this Lua state (created on first use; kiln must be open). */
kl_ctx *kl_lua_default_ctx(lua_State *L);
/* Pushes a handle for op (op->ctx must be a context made by these bindings). */
void kl_lua_push_op(lua_State *L, kl_op *op);
/* Message handler for lua_pcall: appends a traceback to the error message. */
int kl_lua_traceback(lua_State *L);

/* ---- internal, shared by the binding files ---- */
enum { KL_LH_OP, KL_LH_VALUE, KL_LH_BLOCK, KL_LH_REGION, KL_LH_TYPE, KL_LH_ATTR, KL_LH_NKINDS };
extern const char *const kl_lua__mt_names[KL_LH_NKINDS];
#define KL_MT_CONTEXT "kiln.context"

typedef struct kl_lua_ctxud {
  kl_ctx *ctx;
} kl_lua_ctxud; /* context userdata */

/* What keeps a context busy: "Lua pass" + "'name'" (name may be NULL); both strings
 * live at least as long as the busy period. */
typedef struct kl_lua_busy {
  const char *what, *name;
} kl_lua_busy;

/* Per-context binding state (arena-allocated, kl_ctx user slot "kiln.lua"). */
typedef struct kl_lua_ctxstate {
  lua_State *main; /* main thread of the owning Lua state */
  lua_State *cur;  /* thread running the current pipeline, or NULL */
  kl_rewriter *rw; /* set while a Lua pattern runs on this context */
  int busy;        /* C frames running Lua code on this context (see above) */
  kl_lua_busy why; /* the innermost of them, for the error message */
} kl_lua_ctxstate;
kl_lua_ctxstate *kl_lua__state(kl_ctx *ctx);
/* Binding code that runs a pass manager or pattern driver on ctx from a Lua function
 * brackets the run with prev = kl_lua__set_current(ctx, L) ... kl_lua__set_current(ctx,
 * prev), so that Lua passes run on the calling thread (default: the main thread). */
lua_State *kl_lua__set_current(kl_ctx *ctx, lua_State *L);
/* The context's state; raises if a Lua pattern is running on ctx (drivers and pass
 * managers must not be nested inside a pattern of the same context). */
kl_lua_ctxstate *kl_lua__check_not_rewriting(lua_State *L, kl_ctx *ctx, const char *what);
/* Busy brackets (see the file comment). enter/leave bracket a lua_pcall made from a C
 * callback (enter returns what leave restores; no-ops for a context without Lua state).
 * busy_guard pushes a to-be-closed value that keeps the context of the context
 * userdata at ctxidx busy (and anchored) until the calling C function returns or
 * raises; nothing may be removed from the stack below it except by lua_settop/lua_pop. */
kl_lua_busy kl_lua__busy_enter(kl_ctx *ctx, const char *what, const char *name);
void kl_lua__busy_leave(kl_ctx *ctx, kl_lua_busy prev);
void kl_lua__busy_guard(lua_State *L, int ctxidx, const char *what);
/* Pins (the same rule for the objects a binding function reads: tensors, views). A
 * userdata that owns memory embeds a kl_lua_pin; pin_guard pushes a to-be-closed value
 * that keeps it pinned (n > 0, what = the call) and anchored until the calling C
 * function returns or raises (same stack rule as busy_guard). Its release/__close/__gc
 * then raises a located error and frees nothing. */
typedef struct kl_lua_pin {
  int n;
  const char *what;
} kl_lua_pin;
void kl_lua__pin_guard(lua_State *L, int idx, kl_lua_pin *pin, const char *what);
/* Destroys the context of the context userdata at idx (a no-op if already destroyed);
 * raises the busy error if it is busy. Used by ctx:destroy(), __close and __gc. */
int kl_lua__ctx_destroy(lua_State *L, int idx);

/* Contexts. */
int kl_lua__new_ctx(lua_State *L);                /* pushes a new context userdata */
int kl_lua__default_ctxud(lua_State *L);          /* pushes it; returns its abs index */
kl_ctx *kl_lua__check_ctx(lua_State *L, int idx); /* context handle at idx (alive) */
/* Makes stack slot 1 a context: arg 1 if it is a context handle, else the default
 * context is inserted there (shifting the arguments). Returns 1; *first = 2, the
 * first argument after the context. */
int kl_lua__ctx_arg(lua_State *L, int *first);
/* Pushes the context userdata registered for ctx (error if none). */
int kl_lua__push_ctxud_of(lua_State *L, kl_ctx *ctx);

/* Handles. check returns the pointer (error if wrong kind or context destroyed). */
void *kl_lua__check(lua_State *L, int idx, int kind);
void *kl_lua__test(lua_State *L, int idx, int kind);                  /* NULL if not that kind */
kl_ctx *kl_lua__handle_ctx(lua_State *L, int idx);                    /* context of handle at idx */
int kl_lua__push_handle_ctxud(lua_State *L, int idx);                 /* pushes its context ud */
void kl_lua__push(lua_State *L, int ctxidx, int kind, const void *p); /* nil if p NULL */
/* op/value/block checks that also require membership of context ctx. */
kl_op *kl_lua__check_op_in(lua_State *L, int idx, kl_ctx *ctx);
kl_value *kl_lua__check_value_in(lua_State *L, int idx, kl_ctx *ctx);
/* Small helpers of the IR handle files (kiln_lua_handle.c unless noted). */
const char *kl_lua__type_name(lua_State *L, int idx);                    /* __name of its metatable, or the Lua type */
void kl_lua__push_like(lua_State *L, int from, int kind, const void *p); /* in the context of handle `from` */
int kl_lua__opt_index(lua_State *L, int idx, int n); /* 1-based Lua index -> 0-based, -1 if out of range */
/* Pushes the list of handles of values get(obj, 0..n) in the context of handle `from`. */
int kl_lua__push_values(lua_State *L, int from, int n, kl_value *(*get)(void *, int), void *obj);
int kl_lua__text_eq(lua_State *L, int kind); /* __eq of types/attributes: equal text (also across contexts) */
int kl_lua__push_users(lua_State *L, int from, kl_value *vals, int n); /* kiln_lua_value.c */
/* Adds block argument types from the table at idx, or the arguments idx..top (kiln_lua_block.c). */
void kl_lua__add_arg_types(lua_State *L, kl_ctx *ctx, kl_block *b, int idx, int top);
/* The rewriter of the Lua pattern running on ctx, or NULL (kiln_lua_context.c). */
kl_rewriter *kl_lua__active_rw(kl_ctx *ctx);

/* Conversions. */
const kl_type *kl_lua__totype(lua_State *L, int idx, kl_ctx *ctx);        /* string or type handle */
const kl_attr *kl_lua__toattr(lua_State *L, int idx, kl_ctx *ctx);        /* Lua value -> attr (nil -> NULL) */
void kl_lua__push_attr_value(lua_State *L, int ctxidx, const kl_attr *a); /* attr -> Lua value */
kl_loc kl_lua__caller_loc(lua_State *L, kl_ctx *ctx);                     /* first Lua level outside kiln */
void kl_lua__push_where(lua_State *L);                    /* its "file:line" (or "?"); needs no context */
kl_loc kl_lua__toloc(lua_State *L, int idx, kl_ctx *ctx); /* nil -> caller loc */
void kl_lua__push_loc(lua_State *L, kl_loc loc);          /* "file:line:col" or nil */

/* Errors (the file comment; kiln_lua_error.c). Each raises, never returns.
 * rt_error: "<file>:<line>: error: <what>: <message>", printf-style, never truncated.
 * err_error: a failure a lower layer (driver/, runtime/) reported in a `char *err`
 * buffer, as "<file>:<line>: error: <what>: <err>", where err's own "<stage>: " prefix
 * (the producer's name for the call: "compile", "run", "eval", ...) is dropped because
 * <what> already names it; fallback if err is empty. The one place that knows those
 * producers prefix their messages.
 * diag_error: the diagnostics ctx collected (taken), as the message (or as they stand,
 * see the file comment); fallback if there are none. */
#define KL_LUA_REG_LIBPREFIX "kiln.libprefix" /* registry: chunk-name prefix of the Lua part of kiln */
int kl_lua__rt_error(lua_State *L, const char *what, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int kl_lua__err_error(lua_State *L, const char *what, const char *stage, const char *err, const char *fallback);
int kl_lua__diag_error(lua_State *L, kl_ctx *ctx, const char *what, const char *fallback);
/* Unknown names, the one helper for every option table and name-taking argument (the
 * Lua part of kiln reaches it as kiln._check_opts / kiln._unknown_name):
 * kl_lua__unknown_name raises "<what>: unknown <kind> 'name' (did you mean 'x'? <plural>:
 * a, b, ...)" at the user's line (the suggestion from core/suggest.h, when one is near;
 * known: n entries, or NULL-terminated when n < 0). kl_lua__check_opts: every key of the
 * table at idx (if it is a table) must be one of known (NULL-terminated), else that
 * error with kind "option". */
int kl_lua__unknown_name(lua_State *L, const char *what, const char *kind, const char *plural, const char *name,
                         const char *const *known, int n);
void kl_lua__check_opts(lua_State *L, int idx, const char *what, const char *const *known);
void kl_lua__open_error(lua_State *L);
void kl_lua__flush_diags(kl_ctx *ctx); /* pending warnings/notes -> stderr */
/* A temporary GC-managed buffer (a userdata pushed on the stack). */
void *kl_lua__tmp(lua_State *L, size_t n);

/* The rewriter object of a Lua pattern ("kiln.rewriter", kiln_lua_rewriter.c): valid
 * while rw is set (apply_patterns sets rw and root around each Lua rewrite function and
 * clears them after). push: a new inactive one in the context of the context userdata
 * at ctxidx. */
typedef struct kl_lua_rwud {
  kl_rewriter *rw;
  kl_op *root;
} kl_lua_rwud;
kl_lua_rwud *kl_lua__push_rewriter(lua_State *L, int ctxidx);
/* Builds a detached op from the table at idx (kiln.op{...} fields). */
kl_op *kl_lua__build_op(lua_State *L, int idx, kl_ctx *ctx);
/* Mutations shared by op methods and the Lua rewriter object; inside a Lua pattern
 * they go through the context's active rewriter. */
void kl_lua__set_attr(lua_State *L, kl_op *op, const char *name, int vidx);
int kl_lua__erase(lua_State *L, kl_op *op); /* error if results still used */
enum { KL_LUA_AT_BEFORE, KL_LUA_AT_AFTER, KL_LUA_AT_END, KL_LUA_AT_START };
/* Moves or inserts op relative to anchor (BEFORE/AFTER) or into block (END/START). */
void kl_lua__place(lua_State *L, kl_op *op, int where, kl_op *anchor, kl_block *block);
/* Replacement values for op's results from idx (op, value or table of values); the
 * returned array is a GC-managed buffer pushed on the stack. */
kl_value **kl_lua__replacements(lua_State *L, kl_op *op, int idx);

/* Registration of each binding file into the module table at the top of the stack,
 * called in this order by kl_lua_open (a new binding file adds its line there). */
void kl_lua__open_context(lua_State *L); /* first: registry tables, the context class */
void kl_lua__open_op(lua_State *L);
void kl_lua__open_value(lua_State *L);
void kl_lua__open_block(lua_State *L);
void kl_lua__open_region(lua_State *L);
void kl_lua__open_type(lua_State *L);
void kl_lua__open_attr(lua_State *L);
void kl_lua__open_ir(lua_State *L);       /* after the context class: also ctx methods */
void kl_lua__open_rewriter(lua_State *L); /* kiln_lua_rewriter.c */
void kl_lua__open_pattern(lua_State *L);  /* kiln_lua_pattern.c: kiln.pattern, apply_patterns */
void kl_lua__open_pass(lua_State *L);
void kl_lua__open_util(lua_State *L);       /* kiln_lua_util.c */
void kl_lua__open_tensor(lua_State *L);     /* kiln_lua_tensor.c */
void kl_lua__open_graph(lua_State *L);      /* kiln_lua_graph.c */
void kl_lua__open_view(lua_State *L);       /* kiln_lua_view.c */
void kl_lua__open_device(lua_State *L);     /* kiln_lua_device.c */
void kl_lua__open_program(lua_State *L);    /* kiln_lua_program.c */
void kl_lua__open_prepared(lua_State *L);   /* kiln_lua_prepared.c */
void kl_lua__open_bundle(lua_State *L);     /* kiln_lua_bundle.c: p:save, kiln.load */
void kl_lua__open_disk_cache(lua_State *L); /* kiln_lua_disk_cache.c: kiln.cache_clear, kiln.cache_stats */
void kl_lua__open_tune(lua_State *L);       /* kiln_lua_tune.c: kiln.tuning_space, kiln.tune */
void kl_lua__open_tuning_db(lua_State *L);  /* kiln_lua_tuning_db.c: kiln.tuning_db_* */
/* Whether a registered pass (kl_lookup_pass) is a Lua pass of kiln.register_pass. */
struct kl_pass_info;
bool kl_lua__is_lua_pass(const struct kl_pass_info *info);
/* Registers the Lua passes known to this Lua state with a new context. */
void kl_lua__register_lua_passes(lua_State *L, kl_ctx *ctx);
/* Creates metatable name with metamethods meta and an __index that looks up methods,
 * then property getters (called with the handle); leaves nothing on the stack. Both
 * tables are reachable as kiln.methods[short] and kiln.props[short], so the Lua part
 * of the library (and users) can add methods. methods/props/meta may be NULL. */
void kl_lua__class(lua_State *L, int modidx, const char *name, const char *short_name, const luaL_Reg *methods,
                   const luaL_Reg *props, const luaL_Reg *meta);
/* __eq for IR handles: same kind and same underlying pointer. */
int kl_lua__handle_eq(lua_State *L);
/* t[k] = v for the table at the top of the stack (the result tables of the binding). */
static inline void kl_lua__set_str(lua_State *L, const char *k, const char *v) {
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}
static inline void kl_lua__set_int(lua_State *L, const char *k, lua_Integer v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}
static inline void kl_lua__set_num(lua_State *L, const char *k, lua_Number v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, k);
}
static inline void kl_lua__set_bool(lua_State *L, const char *k, int v) {
  lua_pushboolean(L, v);
  lua_setfield(L, -2, k);
}
#endif
