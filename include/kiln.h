/* kiln.h — the public C API of kiln: contexts, graphs (built from C or parsed from .kir
 * text), compiling (targets, perf config, pipeline), programs, devices, host tensors,
 * running and timing, bundles, diagnostics. One header, nothing but the C standard
 * library's headers; link with `pkg-config --cflags --libs --static kiln`.
 * Contract:
 *  - Types are opaque (pointers only), except the small value types below (kl_status,
 *    kl_loc, kl_dtype, kl_named_tensor, the option structs, kl_device_info). Every function
 *    declared here is the library's own (one implementation); spec/c/test_public_api.c
 *    compiles this header together with the internal headers, so a declaration that
 *    drifts fails the build, and compares the value types' layouts.
 *  - A program that also includes kiln's internal headers (installed under
 *    include/kiln/: "core/ir.h", "lua/kiln_lua.h", ...; not a stable API) includes them
 *    BEFORE kiln.h: kiln.h then takes the shared types from them.
 *
 * Ownership (who frees what):
 *  - kl_ctx owns all IR: modules, graphs, values, types, diagnostics, and a compile cache
 *    holding one reference to each program it cached. kl_ctx_destroy frees all of it and
 *    drops those references. kl_ctx_create registers the dialects only: call
 *    kl_register_builtin_passes(ctx) once before compiling.
 *  - kl_program is reference counted: kl_compile / kl_program_load return a reference
 *    (a cached program too), kl_program_retain adds one, kl_program_release drops one
 *    and frees the program (its binaries, the kernels it loaded on devices) with the last.
 *  - kl_device: kl_device_destroy unloads every module of the device and frees all its
 *    memory, including what programs and prepared runs of it still hold.
 *  - kl_tensor (host memory) is reference counted and belongs to no context or device:
 *    created with one reference, kl_tensor_release drops one. Output arrays
 *    (kl_program_run, kl_graph_eval, kl_prepared_outputs): the caller releases each
 *    tensor and free()s the array.
 *  - kl_prepared holds a reference to its program; kl_prepared_free frees it (and its
 *    device buffers, if the device is still open).
 *  - Returned char * (kl_diag_take, kl_print_op, kl_tensor_tostring) and
 *    kl_program_save_memory's bytes are malloc'd: the caller free()s them. Returned
 *    const char * belong to their object (context, program, device).
 * Teardown works in any order of context, device, program (and prepared run):
 *  - device first: programs drop what they loaded on it and stay usable (a later run on
 *    another device loads again); a prepared run on it then fails every call ("the device
 *    of this prepared run was destroyed") and may only be freed.
 *  - context first: the program lives on while references do, but its module and plan
 *    lived in the context, so it may only be released (its prepared runs still launch,
 *    time, read back and free); run, prepare, save and introspection need the context.
 *  - program first: its prepared runs keep it alive until they are freed.
 * Diagnostics (errors never abort or exit; everything stays usable after one):
 *  - Calls on IR (graph builders, kl_parse_module, kl_verify) return NULL / KL_ERR and
 *    leave diagnostics on the context, "file:line:col: error: message" one a line:
 *    kl_diag_take(ctx) returns (and clears) their text; kl_ctx_set_diag_handler gets each
 *    one as it is emitted, with its kind and location. A builder's loc is where its
 *    errors point: KL_HERE(ctx) names the calling C line.
 *  - Calls with an (err, errlen) pair (compile, run, tensors, bundles, kl_device_open)
 *    return NULL / KL_ERR / nonzero and write the message there (err may be NULL);
 *    compile errors carry the location of the op at fault. Other device calls leave
 *    theirs in kl_device_error(dev).
 * Threads: no globals; use a context (and what lives in it) or a device from one thread
 * at a time; different contexts and devices may be used from different threads. */
#ifndef KILN_H
#define KILN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- opaque types ---- */
typedef struct kl_ctx kl_ctx;           /* context: owns IR */
typedef struct kl_op kl_op;             /* an op: a module or a graph here */
typedef struct kl_value kl_value;       /* a graph value (an op's result) */
typedef struct kl_program kl_program;   /* compiled: host plan + binaries per target */
typedef struct kl_device kl_device;     /* host CPU, CUDA or HIP GPU */
typedef struct kl_tensor kl_tensor;     /* host tensor */
typedef struct kl_prepared kl_prepared; /* a program with device-resident buffers */

/* ---- value types (the same definitions as the internal headers named) ---- */
#define KL_MAX_RANK 8
#ifndef KL_CONTEXT_H /* core/context.h */
typedef enum { KL_OK = 0, KL_ERR = 1 } kl_status;
#endif
#ifndef KL_DIAG_H /* core/diag.h */
/* A source location: file:line:col (file NULL = unknown). */
typedef struct kl_loc {
  const char *file;
  int line, col;
} kl_loc;
typedef enum { KL_DIAG_ERROR, KL_DIAG_WARNING, KL_DIAG_NOTE } kl_diag_kind;
/* One diagnostic; message is owned by whoever made the value (valid during a callback). */
typedef struct kl_diag {
  kl_diag_kind severity;
  kl_loc loc;
  const char *message;
} kl_diag;
/* Receives every diagnostic as it is emitted. */
typedef void (*kl_diag_handler)(void *user, const kl_diag *d);
#endif
#define KL_LOC_UNKNOWN ((kl_loc){ 0, 0, 0 })
#ifndef KL_DTYPE_H /* core/dtype.h */
typedef enum kl_dtype {
  KL_DT_NONE = -1, /* "unspecified": ops use their input's dtype */
  KL_DT_F32 = 0,
  KL_DT_F16,
  KL_DT_BF16,
  KL_DT_I8,
  KL_DT_I32,
  KL_DT_F64,
  KL_DT_I64,
  KL_DT_I1,         /* internal / extra */
  KL_DT_F8E4M3FN,   /* OCP FP8 E4M3 (storage only; ops compute in f32) */
  KL_DT_F8E5M2,     /* OCP FP8 E5M2 */
  KL_DT_F8E4M3FNUZ, /* AMD gfx942 FP8 E4M3 "fnuz" */
  KL_DT_F8E5M2FNUZ, /* AMD gfx942 FP8 E5M2 "fnuz" */
  KL_DT_U8,         /* unsigned 8-bit integer ("u8"; "ui8" accepted) */
  KL_DT_COUNT
} kl_dtype;
#endif
#ifndef KL_PRINT_H /* core/print.h */
enum {
  KL_PRINT_GENERIC = 1u << 0, /* ignore custom syntax */
  KL_PRINT_LOCS = 1u << 1     /* append loc("file":line:col) */
};
#endif
#ifndef KL_TENSOR_H /* runtime/tensor.h */
typedef enum kl_dist { KL_DIST_UNIFORM = 0, KL_DIST_NORMAL = 1 } kl_dist;
#endif
#ifndef KL_GRAPH_EVAL_H /* runtime/graph_eval.h */
/* An input of a run: the param's name and a tensor of its shape, dtype and layout. */
typedef struct kl_named_tensor {
  const char *name;
  kl_tensor *tensor;
} kl_named_tensor;
#endif
#ifndef KL_DEVICE_H /* runtime/device.h */
typedef enum { KL_DEVICE_HOST = 0, KL_DEVICE_CUDA = 1, KL_DEVICE_HIP = 2, KL_DEVICE_OTHER = 3 } kl_device_kind;
typedef struct kl_device_info {
  kl_device_kind kind;
  char backend[16];       /* "host", "cuda", "hip" */
  int ordinal;            /* GPU index (0 on the host) */
  char name[256];         /* "NVIDIA H200", "AMD Instinct MI300X", "host (znver3, 16 threads)" */
  char arch[64];          /* the codegen target: "sm_90", "gfx942", "host" */
  int cc_major, cc_minor; /* CUDA compute capability (0 otherwise) */
  size_t total_mem;       /* bytes, 0 if unknown */
  int compute_units;      /* SMs, CUs, or host threads */
  int wave_size;          /* 32 / 64; 1 on the host */
  int max_threads_per_block;
  size_t max_shared_per_block; /* bytes, including opt-in (CUDA > 48 KiB) */
  char driver[64];             /* driver / runtime version text */
  char note[512];              /* "auto": why hip / cuda were skipped */
} kl_device_info;
#endif
/* print_ir_after's receiver: (pass, module text after it, user). */
typedef void (*kl_ir_callback)(const char *pass_name, const char *ir_text, void *user);
#ifndef KL_PROGRAM_H /* driver/program.h */
typedef struct kl_compile_opts {
  const char *const *targets; /* NULL / 0: {"host"}; "sm_90", "gfx942", ... (one variant each) */
  int ntargets;
  const char *
      perf_config; /* "v1:mPerBlock,nPerBlock,kPerBlock,mPerThread,nPerThread,kpack" for every GEMM; NULL = heuristic */
  const char *pipeline;       /* NULL = kl_default_pipeline() */
  const char *print_ir_after; /* NULL, "all" or "pass-a,pass-b" */
  kl_ir_callback on_ir;       /* receives (pass, module text) for print_ir_after */
  void *on_ir_user;
  bool no_cache;
  bool strict_fp;            /* no contraction of a multiply and an add into an FMA (lower_to_llvm.c's rule) */
  const char *cache_dir;     /* NULL: no disk cache; else a directory of compiled kernels shared across processes */
  const char *tuning_db;     /* NULL: none; else a tuning database file: its records give GEMMs their perf config */
  const char *tuning_device; /* NULL: records of any device; else only this device's */
  bool
      ir_in_context; /* the compile's IR in the context's arena, not the program's (for passes that keep references to it) */
} kl_compile_opts;
typedef struct kl_prepare_opts {
  int sets;            /* buffer sets to rotate among; 0: derive from rotate_bytes (else 1) */
  size_t rotate_bytes; /* with sets == 0: the fewest sets spanning at least this many bytes */
  int max_sets;        /* cap for derived sets (0: 64) */
  bool no_poison;
} kl_prepare_opts;
#endif

/* ---- contexts and diagnostics ---- */
kl_ctx *kl_ctx_create(void);
void kl_ctx_destroy(kl_ctx *ctx);
void kl_register_builtin_passes(kl_ctx *ctx); /* once per context, before compiling */
/* A location whose file name is copied into ctx. */
kl_loc kl_loc_make(kl_ctx *ctx, const char *file, int line, int col);
#define KL_HERE(ctx) kl_loc_make((ctx), __FILE__, __LINE__, 0)
void kl_loc_format(kl_loc loc, char *buf, size_t n); /* "file:line:col" */
char *kl_diag_take(kl_ctx *ctx);                     /* malloc'd; "" if none */
bool kl_diag_has_error(kl_ctx *ctx);
int kl_diag_error_count(kl_ctx *ctx);
void kl_ctx_set_diag_handler(kl_ctx *ctx, kl_diag_handler fn, void *user);

/* ---- element types ---- */
const char *kl_dtype_name(kl_dtype dt);        /* "f32" ...; "?" if invalid */
kl_dtype kl_dtype_from_name(const char *name); /* KL_DT_NONE if unknown */
size_t kl_dtype_size(kl_dtype dt);             /* bytes per element */

/* ---- graphs ----
 * A module holds graph funcs; shapes are logical (conv input N,C,H,W, filter K,C/G,Y,X;
 * layouts say the memory order). Ops: add sub mul div max min pow (numpy broadcasting),
 * neg abs exp log sqrt rsqrt tanh sigmoid relu, clip {min, max}, where(c, a, b), conv
 * {stride, padding = [t,b,l,r], dilation, groups}, dot {transpose_a, transpose_b},
 * broadcast {shape}, transpose {perm}, reshape {shape}, slice {begin, end, step}, concat
 * {axis}, reduce_sum / reduce_max / reduce_mean {axes, keepdims}, softmax {axis}. Results
 * are shape-inferred as they are built; errors name the op, the operands' shapes and loc. */
kl_op *kl_module_create(kl_ctx *ctx, kl_loc loc);
/* A new graph func @name (non-empty) in module. */
kl_op *kl_graph_create(kl_ctx *ctx, kl_op *module, const char *name, kl_loc loc);
/* A param of dtype dt and shape[rank], memory order layout ("NHWC", "KYXC", "1,0"; NULL = row-major). */
kl_value *kl_graph_add_param(kl_op *graph, const char *name, kl_dtype dt, int rank, const int64_t *shape,
                             const char *layout, kl_loc loc);
/* Op op on operands[0..n), attributes as .kir text ("{stride = [2, 2]}"; NULL = none). */
kl_value *kl_graph_add_op(kl_op *graph, const char *op, int n, kl_value *const *operands, const char *attrs,
                          kl_loc loc);
kl_value *kl_graph_add_convert(kl_op *graph, kl_value *x, kl_dtype dt, kl_loc loc);
/* A row-major constant holding values[numel] (rounded through dt). */
kl_value *kl_graph_add_constant(kl_op *graph, kl_dtype dt, int rank, const int64_t *shape, const double *values,
                                kl_loc loc);
kl_status kl_graph_output(kl_op *graph, int n, kl_value *const *outs, kl_loc loc);
/* Memory layout of output index (0-based, after kl_graph_output): layout ("NHWC") or
 * strides[rank] (non-overlapping; gaps are never written), not both; both NULL = row-major. */
kl_status kl_graph_output_layout(kl_op *graph, int index, const char *layout, const int64_t *strides, kl_loc loc);
/* .kir text -> a module (NULL + diagnostics "file:line:col: error: ..." on error; the
 * text need not be NUL-terminated). Verify it (kl_verify) before use. */
kl_op *kl_parse_module(kl_ctx *ctx, const char *text, size_t len, const char *filename);
/* MIGraphX-dialect MLIR text -> a module of graph funcs, one per func.func (named like
 * it), or NULL + located diagnostics; frontend/migraphx_parse.h says what is read and how
 * argument strides become params (a permuted layout, a broadcast, a slice of a larger
 * buffer that the caller passes whole). */
kl_op *kl_migraphx_parse(kl_ctx *ctx, const char *text, size_t len, const char *filename);
/* The same, building only the first func.func named only (the others are skipped unread). */
kl_op *kl_migraphx_parse_func(kl_ctx *ctx, const char *text, size_t len, const char *filename, const char *only);
/* The graph func @name of module (name NULL: the first one); NULL if none. */
kl_op *kl_module_graph(kl_op *module, const char *name);
kl_status kl_verify(kl_op *root);
char *kl_print_op(kl_op *op, unsigned flags); /* .kir text, malloc'd; flags KL_PRINT_* */
/* The float64 reference evaluator: the graph's outputs for inputs (by param name). */
kl_status kl_graph_eval(kl_op *graph, int ninputs, const kl_named_tensor *inputs, int *noutputs, kl_tensor ***outputs,
                        char *err, size_t errlen);

/* ---- compiling and programs ----
 * kl_compile never modifies the graph; the same graph and options compile once per
 * context (the cache) unless opts->no_cache or on_ir. opts may be NULL (host, defaults). */
const char *kl_default_pipeline(void);
kl_program *kl_compile(kl_op *graph, const kl_compile_opts *opts, char *err, size_t errlen);
/* The compile cache keeps the 32 most recently used programs of a context (their IR is
 * the program's and goes with it): kl_compile_cache_max(ctx, n) sets the bound when n >= 0
 * (0: no caching) and returns the previous one; kl_compile_cache_clear drops every entry
 * (returns how many). */
int kl_compile_cache_max(kl_ctx *ctx, int max);
int kl_compile_cache_count(kl_ctx *ctx);
int kl_compile_cache_clear(kl_ctx *ctx);
kl_program *kl_program_retain(kl_program *p);
void kl_program_release(kl_program *p); /* NULL ok */
int kl_program_ntargets(const kl_program *p);
const char *kl_program_target(const kl_program *p, int i);
int kl_program_nkernels(const kl_program *p, const char *target); /* target NULL: the first */
int kl_program_noutputs(const kl_program *p, const char *target);
double kl_program_compile_ms(const kl_program *p);
bool kl_program_from_cache(const kl_program *p);
/* The module text after a pass ("rock-align-tiling"), for the first target; NULL if that
 * pass did not run (or the program was loaded from a bundle). */
const char *kl_program_ir(const kl_program *p, const char *pass);

/* ---- devices ---- */
/* "host", "cuda", "hip", "cuda:N", "auto" (NULL or ""): hip, then cuda, then host. */
kl_device *kl_device_open(const char *name, char *err, size_t errlen);
void kl_device_destroy(kl_device *dev); /* NULL ok */
const kl_device_info *kl_device_get_info(const kl_device *dev);
const char *kl_device_error(const kl_device *dev); /* last error ("" if none) */

/* ---- host tensors ----
 * A logical shape (rank <= KL_MAX_RANK) and strides in elements (NULL = row-major);
 * element values cross the API as double in logical row-major order ("flat"), rounded
 * through the dtype when stored. Creation returns NULL + message on bad input. */
kl_tensor *kl_tensor_zeros(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides, char *err,
                           size_t errlen);
kl_tensor *kl_tensor_from_f64(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides, const double *values,
                              char *err, size_t errlen);
kl_tensor *kl_tensor_from_i64(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides,
                              const int64_t *values, char *err, size_t errlen);
/* PCG32 values from seed: floats uniform in [-1, 1) or N(0, 1). */
kl_tensor *kl_tensor_rand(kl_dtype dt, int rank, const int64_t *shape, const int64_t *strides, uint64_t seed,
                          kl_dist dist, char *err, size_t errlen);
/* Wraps nbytes of the caller's memory (free()d on the last release with take_ownership). */
kl_tensor *kl_tensor_wrap(void *data, size_t nbytes, bool take_ownership, kl_dtype dt, int rank, const int64_t *shape,
                          const int64_t *strides, int64_t offset, char *err, size_t errlen);
kl_tensor *kl_tensor_as_layout(const kl_tensor *t, const char *layout, char *err, size_t errlen); /* a copy */
kl_tensor *kl_tensor_contiguous(const kl_tensor *t, char *err, size_t errlen);                    /* a row-major copy */
kl_tensor *kl_tensor_retain(kl_tensor *t);
void kl_tensor_release(kl_tensor *t); /* NULL ok */
kl_dtype kl_tensor_dtype(const kl_tensor *t);
int kl_tensor_rank(const kl_tensor *t);
int64_t kl_tensor_dim(const kl_tensor *t, int axis);    /* -1 outside [0, rank) */
int64_t kl_tensor_stride(const kl_tensor *t, int axis); /* elements; -1 outside [0, rank) */
int64_t kl_tensor_numel(const kl_tensor *t);
void *kl_tensor_data(const kl_tensor *t);                    /* element [0, ..., 0] */
double kl_tensor_get_flat(const kl_tensor *t, int64_t flat); /* flat in [0, numel) */
void kl_tensor_set_flat(kl_tensor *t, int64_t flat, double v);
void kl_tensor_to_f64(const kl_tensor *t, double *out); /* numel values */
char *kl_tensor_tostring(const kl_tensor *t);           /* numpy-like, malloc'd */
/* |a - b| <= atol + rtol * |b| everywhere (b the reference; rtol/atol < 0: the dtype's defaults). */
int kl_tensor_allclose(const kl_tensor *a, const kl_tensor *b, double rtol, double atol, bool *close, char *err,
                       size_t errlen);

/* ---- running and timing ----
 * kl_program_run picks the program's variant for dev (same target, else same arch),
 * loads its kernels on first use, checks every input against its param (shape, dtype,
 * layout: no hidden copies) and returns new host tensors for the outputs. */
kl_status kl_program_run(kl_program *p, kl_device *dev, int ninputs, const kl_named_tensor *inputs, int *noutputs,
                         kl_tensor ***outputs, char *err, size_t errlen);
kl_status kl_program_load_kernels(kl_program *p, kl_device *dev, char *err, size_t errlen);
/* Device-resident inputs (uploaded once; opts NULL: one buffer set) for launches without
 * copies: launch enqueues the plan on buffer set `set`, time runs warmup + reps launches
 * and writes each one's device milliseconds to ms_out[reps], outputs downloads a set. */
kl_prepared *kl_program_prepare(kl_program *p, kl_device *dev, int ninputs, const kl_named_tensor *inputs,
                                const kl_prepare_opts *opts, char *err, size_t errlen);
int kl_prepared_nsets(const kl_prepared *r);
kl_status kl_prepared_launch(kl_prepared *r, int set, char *err, size_t errlen);
kl_status kl_prepared_sync(kl_prepared *r, char *err, size_t errlen);
kl_status kl_prepared_time(kl_prepared *r, int warmup, int reps, float *ms_out, char *err, size_t errlen);
kl_status kl_prepared_outputs(kl_prepared *r, int set, int *noutputs, kl_tensor ***outputs, char *err, size_t errlen);
void kl_prepared_free(kl_prepared *r);

/* ---- bundles: a program in one file (host plan + one binary per kernel per target) ---- */
kl_status kl_program_save(const kl_program *p, const char *path, char *err, size_t errlen);
kl_status kl_program_save_memory(const kl_program *p, void **out, size_t *size, char *err, size_t errlen);
/* Into ctx; every byte is checked (a damaged bundle is an error naming the section). */
kl_program *kl_program_load(kl_ctx *ctx, const char *path, char *err, size_t errlen);
/* As kl_program_load, failing at once unless the bundle has a variant that runs on dev. */
kl_program *kl_program_load_for_device(kl_ctx *ctx, const char *path, kl_device *dev, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
