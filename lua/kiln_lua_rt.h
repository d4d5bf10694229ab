/* kiln_lua_rt.h — internal header shared by the front-end binding files
 * (kiln_lua_tensor.c, kiln_lua_graph.c, kiln_lua_view.c, kiln_lua_device.c,
 * kiln_lua_program.c, kiln_lua_prepared.c, kiln_lua_bundle.c).
 * Contract: tensors are full userdata "kiln.tensor" holding one reference to a
 * kl_tensor (released by __gc / __close); kl_lua__push_tensor takes over the caller's
 * reference. Errors raised by these helpers are Lua errors of the form
 * "file:line: error: what: message", where file:line is the user's Lua line (the first
 * stack level outside the kiln library, see kl_lua__caller_loc). Coordinates, axes and
 * permutations are 0-based throughout the Lua API (like numpy and the IR); positions
 * in Lua lists the API returns are 1-based. */
#ifndef KL_KILN_LUA_RT_H
#define KL_KILN_LUA_RT_H
#include "lua/kiln_lua.h"
#include "runtime/tensor.h"
#include "runtime/graph_eval.h"

#define KL_MT_TENSOR  "kiln.tensor"
#define KL_MT_DEVICE  "kiln.device"
#define KL_MT_PROGRAM "kiln.program"
#define KL_MT_VIEW    "kiln.view"

/* Errors: kl_lua__rt_error, kl_lua__err_error (kiln_lua.h). */
/* Option tables: kl_lua__check_opts (kiln_lua.h). Inputs by name ({x = tensor}): each
 * name of in must be one of params (nparams entries), else kl_lua__unknown_name. */
void kl_lua__check_input_names(lua_State *L, const char *what, const kl_named_tensor *in, int n,
                               const char *const *params, int nparams);

/* Tensors. */
kl_tensor *kl_lua__check_tensor(lua_State *L, int idx);
kl_tensor *kl_lua__test_tensor(lua_State *L, int idx); /* NULL if not a tensor */
void kl_lua__push_tensor(lua_State *L, kl_tensor *t);  /* takes the reference */
/* Pushes the n result tensors of a run (taking their references and freeing the array),
 * each tagged with the device id it came from unless that is "host"; returns n. Raises
 * (after releasing them) when the Lua stack cannot hold them. */
int kl_lua__push_outputs(lua_State *L, int n, kl_tensor **outs, const char *device_id);
/* check_tensor, and pins the tensor (kl_lua__pin_guard) until the caller returns: for a
 * C function that keeps the pointer while Lua code may run (metamethods, finalizers). */
kl_tensor *kl_lua__pin_tensor(lua_State *L, int idx, const char *what);

/* Programs ("kiln.program", kiln_lua_program.c). check: the program of the handle at idx
 * (error if released or its context was destroyed). push: a new handle for p in the
 * context of the context userdata at ctxidx, taking over the caller's reference to p. */
typedef struct kl_program kl_program;
kl_program *kl_lua__check_program(lua_State *L, int idx);
void kl_lua__push_program(lua_State *L, int ctxidx, kl_program *p);

/* Devices ("kiln.device", kiln_lua_device.c): pushes the device of this Lua state named
 * name (opened on first use, as kiln.device(name)); an unknown or unavailable device raises
 * an error naming `what`. Returns 1. */
int kl_lua__push_device(lua_State *L, const char *name, const char *what);
/* An open device, shared (refs) by its Lua handle and everything that keeps it open:
 * the programs that ran on it, prepared runs and the context (kl_lua__ctx_devhold).
 * release drops one reference (the last closes the device). */
typedef struct kl_device kl_device;
typedef struct kl_lua_devref {
  kl_device *dev;
  int refs;
  char id[64];
} kl_lua_devref;
void kl_lua__devref_release(kl_lua_devref *d);
kl_lua_devref *kl_lua__check_device(lua_State *L, int idx); /* error if closed */
int kl_lua__l_device(lua_State *L);                         /* kiln.device([name = "auto"]) */
/* Adds d to the list (*devs, *n) with a new reference unless it is there; true if added. */
bool kl_lua__devs_add(kl_lua_devref ***devs, int *n, kl_lua_devref *d);
/* The devices the context keeps open until it is destroyed (a destroy hook registered
 * before the context's compile cache exists, so it runs after the cache is released).
 * Must run before the context's first kl_compile; NULL if the compile cache already
 * exists (then devices used with this context are never closed). */
typedef struct kl_lua_devhold {
  kl_lua_devref **devs;
  int n;
} kl_lua_devhold;
kl_lua_devhold *kl_lua__ctx_devhold(kl_ctx *ctx);

/* Prepared runs ("kiln.prepared", kiln_lua_prepared.c; made by p:prepare): the run and
 * the device it keeps open (one reference). */
#define KL_MT_PREPARED "kiln.prepared"
typedef struct kl_prepared kl_prepared;
typedef struct kl_lua_prepared_ud {
  kl_prepared *r;
  kl_lua_devref *d;
} kl_lua_prepared_ud;

/* The inputs table at idx ({name = tensor, ...}) as named tensors, in a temporary buffer
 * of the Lua state (kl_lua__tmp); the names are the table's keys (the table must stay
 * alive while they are used). The count goes to *n. A non-string key or a value that is
 * not a tensor raises an error naming `what` (the caller checks that idx is a table). */
typedef struct kl_named_tensor kl_named_tensor;
kl_named_tensor *kl_lua__check_named_tensors(lua_State *L, int idx, const char *what, int *n);

/* A dtype name at idx (nil/none -> dflt). Unknown names raise an error naming `what`. */
kl_dtype kl_lua__opt_dtype(lua_State *L, int idx, kl_dtype dflt, const char *what);
/* A shape (a list of sizes >= 0, or one integer for rank 1) at idx into dims; returns
 * the rank. The shape must also be within the IR's shape limits (kl_shape_check in
 * core/shape.h: rank, each size and the element count bounded), so every checked shape
 * can become a tensor type. Errors name `what`. */
int kl_lua__check_shape(lua_State *L, int idx, int64_t *dims, const char *what);
/* A list of at most max integers at idx into out; returns the count. */
int kl_lua__check_ints(lua_State *L, int idx, int64_t *out, int max, const char *what, const char *field);
/* Memory layout options of the table at idx (nil allowed): {layout = "NHWC"} or
 * {strides = {...}}. Fills strides (rank entries) and returns true if one was given;
 * both at once, a bad layout or bad strides raise an error naming `what`. */
bool kl_lua__opt_layout(lua_State *L, int idx, int rank, const int64_t *shape, int64_t *strides, const char *what);
#endif
