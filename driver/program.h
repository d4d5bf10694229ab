/* program.h — compiling a graph into a program (host plan + one binary per kernel per
 * target) and running it on a device.
 * Contract:
 *  - kl_compile clones the graph into a module of its own (the user's graph is never
 *    modified), runs the pipeline once per target (module attribute `target`), lowers
 *    every kernel to LLVM IR and emits its binary (host: an ELF relocatable object,
 *    NVPTX: PTX text, AMDGPU: HSACO). It keeps the IR text of every kernel after every
 *    pass, and the whole module after every pass (kl_program_ir, kl_program_kernel_ir):
 *    taken as the passes run where on_ir is given, with ir_in_context, or with KILN_DEBUG
 *    remarks on; else on the first read of any of them, by running the same pass pipeline
 *    (the passes as registered at the compile, with its options) again on a copy of the
 *    graph kept for that, in an arena dropped afterwards: the compile does not pay for
 *    printing IR nobody reads.
 *  - A second compile of the same graph text with the same options in the same context
 *    returns the cached program (cache keyed by the graph's printed IR, targets, perf
 *    config, pipeline and the registration of each pass in it: registering a pass again
 *    under the same name makes a new key). The cache keeps the KL_COMPILE_CACHE_DEFAULT
 *    (kl_compile_cache_max) most recently used programs and releases the others.
 *  - The IR a compile makes (the cloned graph, every pass's rewrites, the final module)
 *    lives in an arena of the program (kl_ctx_set_ir_arena) and is freed with it, unless
 *    opts.ir_in_context or on_ir (then it lives as long as the context: for passes that
 *    keep handles to it, like the Lua binding's, and callbacks that may build IR). The IR snapshots are text owned by the
 *    program (an unchanged one shares the text before it).
 *    Compilation with C passes is deterministic; a pass whose result depends on other
 *    state (the Lua binding's passes) must be compiled with no_cache (kiln.compile does
 *    so unless told cache = true). on_ir compiles bypass the cache.
 *  - With opts.tuning_db and no perf_config, the records of the database for each target
 *    (format KL_TUNING_DB_FORMAT, the device tuning_device if given; the last record of
 *    a key wins) go to rock-gemm-to-gridwise's `tuned` option: a GEMM kernel whose
 *    problem key has a record gets its config (p:kernels()[i].perf_config_source "tuned
 *    (db)"); the applied records are part of both cache keys. A database that cannot be
 *    read is ignored; its warnings (corrupt lines, stale versions) are printed to stderr
 *    once per process each.
 *  - With opts.cache_dir (and neither no_cache nor on_ir), an in-memory miss looks in the
 *    disk cache (driver/disk_cache.h) and, on a hit, returns the program loaded from its
 *    entry (as kl_program_load: kernel infos and plan, no IR or LLVM IR snapshots); a
 *    miss compiles and stores the program there. Either way the program also enters the
 *    in-memory cache; kl_program_disk_cache says what happened.
 *  - The plan of one target (driver/plan.h, kl_program_plan): the graph's params (inputs
 *    by name), constants, steps (launches: kernel, grid, block, LDS bytes, argument slots,
 *    inputs then outputs; prefills, copies, workspace allocations and frees; each with
 *    its token and waits) in order, and the output slots. Intermediate results between
 *    kernels live from their alloc_workspace step to their free step.
 *  - kl_program_run picks the variant for the device (same target name, else the same
 *    architecture), loads its binaries on first use (kept per device until the program
 *    is released or the device destroyed, whichever comes first), checks every input against its param (shape, dtype, layout — no hidden
 *    copies), runs the steps (driver/plan_exec.h: in the plan's order, which honours
 *    its tokens) and returns new host tensors for the outputs.
 *  - Programs are reference counted (kl_program_retain/release). Errors: NULL / KL_ERR
 *    plus a message in err (diagnostics carry file:line:col or the Lua line).
 *  - Teardown works in any order of context, device, program and prepared run:
 *      * the device: the modules a program loaded on it, and a prepared run's buffers,
 *        belong to the device; program and prepared run watch it (device.h) and drop
 *        them when it is destroyed first. The program stays usable (a later run on
 *        another device loads again); a prepared run then fails every call with "the
 *        device of this prepared run was destroyed" and may only be freed.
 *      * the context: its compile cache holds one reference to each cached program and
 *        drops it in kl_ctx_destroy; the program lives on while other references do.
 *        A program's module uses the context's types and attributes, so once the context is gone
 *        the program may only be released (and its prepared runs used and freed); run,
 *        prepare and the introspection calls need the context.
 *      * a prepared run holds a reference to its program, so the program outlives it. */
#ifndef KL_PROGRAM_H
#define KL_PROGRAM_H
#include "core/pass.h"
#include "runtime/device.h"
#include "runtime/graph_eval.h"
#include "driver/plan.h"
#include "driver/kernel_access.h"

typedef struct kl_compile_opts {
  const char *const *targets; /* NULL / 0: {"host"} */
  int ntargets;
  const char *perf_config;    /* applied to every GEMM; NULL = heuristic */
  const char *pipeline;       /* NULL = kl_default_pipeline() */
  const char *print_ir_after; /* NULL, "all" or "pass-a,pass-b" */
  kl_ir_callback on_ir;       /* receives (pass, module text) for print_ir_after */
  void *on_ir_user;
  bool no_cache;
  bool strict_fp;            /* no contraction of a multiply and an add into an FMA (lower_to_llvm.c's rule) */
  const char *cache_dir;     /* NULL: no disk cache; else the directory of driver/disk_cache.h (built-in passes only) */
  const char *tuning_db;     /* NULL: none; else a tuning database file (driver/tuning_db.h) whose records
                                give GEMM kernels without perf_config their config */
  const char *tuning_device; /* NULL: records of any device; else only this device's */
  bool
      ir_in_context; /* the compile's IR in the context's arena, not the program's (for passes that keep references to it) */
} kl_compile_opts;

typedef struct kl_program kl_program;

typedef struct kl_snapshot {
  const char *pass;
  char *text;
} kl_snapshot;

typedef struct kl_kernel_info {
  const char *name;
  const char *kind; /* "gemm", "elementwise", "reduce", "softmax" */
  int64_t grid_size, block_size, lds_bytes;
  const char *perf_config; /* "" if none */
  const char
      *primary_inputs; /* arg names of the inputs that drive fused loads' vectorization, comma-separated ("" if none) */
  int nargs, ninputs;  /* arguments: inputs first, then outputs */
  const char *output_swizzle;     /* rock-output-swizzle's decision ("applied", "refused: ..."; "" if none) */
  const char *fragment_loads;     /* mma.sync LDS fragment reads: "ldmatrix", "lds", "mixed"; "" if none */
  const char *perf_config_source; /* where perf_config came from: "user", "tuned (db)", "heuristic"; "" if none */
  const char *problem_key;        /* the GEMM's tuning key (passes/problem_key.h); "" if none */
  const char *problem;            /* its readable summary ("gemm G=1 M=.. N=.. K=.. f16,f16->f16"); "" if none */
  const char *async_copy;         /* operands copied global -> LDS asynchronously: "A,B", "A", "B", "none"; "" if off */
  const char *async_lds_layout;   /* LDS layout of the async stages: "xor:A,B", "krow:A", ... ("" if none) */
  const char *
      amd_lds_layout; /* "xor": the AMDGPU K loop's unpadded xor LDS tiles (amd-lds-layout); "xor1": the kpack-1 xor1 tiles; "" if not */
  int64_t pipeline_stages; /* K-loop stages of the async copy pipeline (rock-gridwise-to-blockwise); 0 if off */
  const char *
      tma; /* wgmma operands loaded through TMA (passes/rock_tma.h): "A,B", "A", "B", "none (why)"; "" if off; an im2col operand (passes/rock_tma_im2col.h): "B(im2col)" */
  const char *ws;         /* warp specialization of the TMA K loop (passes/rock_tma.h): "on", "off (why)"; "" if ws=0 */
  int64_t tma_swizzle;    /* the TMA tiles' LDS swizzle in bytes (128, 64, 32; 0: the unswizzled core-matrix boxes) */
  int64_t fp8_promote;    /* the fp8 wgmma's promotion interval in K elements (passes/rock_wgmma.h; 0: one level) */
  int64_t raster_group_m; /* the GEMM's workgroup order (passes/gemm_raster.h): m-tiles per group, 0 row order */
  const char *persistent; /* persistent tiles (passes/rock_tma.h): "on", "off (why)"; "" if persistent=0 */
  int64_t grid_persistent; /* 1: the launch takes min(grid_size (the tiles), SMs x resident workgroups), else 0 */
  const char *cluster;  /* thread-block clusters (passes/rock_tma.h): "2x1", "1x4", ..., "off (why)"; "" if cluster=1 */
  int64_t cluster_size; /* the CTAs per cluster (.reqnctapercluster; the grid a multiple of it), 0 none */
  const char **arg_names;
  const char **arg_types; /* buffer types as text */
  char *llvm_ir;          /* the LLVM IR handed to code generation: NULL until kl_program_kernel_llvm_ir prints it */
  void *llvm_bc;          /* that module as LLVM bitcode until it is printed (what the compile keeps: cheaper) */
  size_t llvm_bc_size;
  int naccesses; /* global loads and stores as emitted (driver/kernel_access.h) */
  kl_access_info *accesses;
} kl_kernel_info;

typedef struct kl_binary_info {
  const char *target;
  const void *data;
  size_t size;
} kl_binary_info;

const char *kl_default_pipeline(void);

kl_program *kl_compile(kl_op *graph, const kl_compile_opts *opts, char *err, size_t errlen);
/* The context's in-memory compile cache: kl_compile_cache_max sets how many programs it
 * keeps (least recently used dropped first; 0: none) when max >= 0, dropping the
 * excess, and returns the previous bound; kl_compile_cache_clear drops every entry and
 * returns how many (a program lives on while other references hold it). */
#define KL_COMPILE_CACHE_DEFAULT 32
int kl_compile_cache_max(kl_ctx *ctx, int max);
int kl_compile_cache_count(kl_ctx *ctx);
int kl_compile_cache_clear(kl_ctx *ctx);
kl_program *kl_program_retain(kl_program *p);
void kl_program_release(kl_program *p);

/* Introspection (of the first target's variant unless a target is named). */
int kl_program_ntargets(const kl_program *p);
const char *kl_program_target(const kl_program *p, int i);
int kl_program_nkernels(const kl_program *p, const char *target);
const kl_kernel_info *kl_program_kernel(const kl_program *p, const char *target, int i);
/* The kernel's LLVM IR text (kl_kernel_info.llvm_ir), printed from its bitcode on the
 * first call (thread-safe); NULL for a program loaded from a bundle or past the end. */
const char *kl_program_kernel_llvm_ir(const kl_program *p, const char *target, int i);
const kl_binary_info *kl_program_binary(const kl_program *p, const char *target, const char *kernel);
/* Kernel i's IR text after each pass that had it (*n of them, in pipeline order; an
 * unchanged one shares the text before it); NULL and 0 for a program loaded from a bundle
 * or past the end. Taken on the first read where the compile kept them lazily (the
 * contract above); needs the context, like the compile. */
const kl_snapshot *kl_program_kernel_ir(const kl_program *p, const char *target, int i, int *n);
/* The host plan of a target (driver/plan.h: the structs of client/kiln_client.h, what
 * bundles carry; binary pointers are the program's, ir is NULL); the calls below read it. */
const kl_bundle_target *kl_program_plan(const kl_program *p, const char *target);
int kl_program_nsteps(const kl_program *p, const char *target);
/* Step i of the plan (client/kiln_client.h: kind, token, waits; a launch's kernel index,
 * nargs and args (slot numbers: inputs, then outputs); a prefill's slot and value; ...). */
const kl_bundle_step *kl_program_step(const kl_program *p, const char *target, int i);
/* Slots: 0..n; kind "param"/"constant"/"result"; name for params; type text. */
int kl_program_nslots(const kl_program *p, const char *target);
const char *kl_program_slot(const kl_program *p, const char *target, int i, const char **kind, const char **name);
int kl_program_noutputs(const kl_program *p, const char *target);
int kl_program_output_slot(const kl_program *p, const char *target, int i);
/* The module text after pass `pass` ("after:rock-align-tiling" or "rock-align-tiling"),
 * for the first target; NULL if that pass did not run (taken on the first read where the
 * compile kept them lazily, as kl_program_kernel_ir). */
const char *kl_program_ir(const kl_program *p, const char *pass);
/* The pass of the i-th IR snapshot of the first target (in pipeline order; NULL past the end). */
const char *kl_program_ir_pass(const kl_program *p, int i);
double kl_program_compile_ms(const kl_program *p);
/* Where compile_ms went, phase i of KL_COMPILE_NPHASES (wall ms summed over the targets;
 * 0 for a program read from the disk cache): "passes" (kiln's pass pipeline, with its IR
 * snapshots where they are taken as it runs),
 * "plan" (the host plan), "llvm_ir" (lowering the kernels to LLVM IR, kept as bitcode),
 * "llvm_opt" (LLVM's verifier and optimisation pipeline), "llvm_codegen" (LLVM's code
 * generator: instruction selection to PTX / the object). Returns the phase's name, NULL
 * past the end; *ms (may be NULL) gets its time. */
enum { KL_PHASE_PASSES, KL_PHASE_PLAN, KL_PHASE_LLVM_IR, KL_PHASE_LLVM_OPT, KL_PHASE_LLVM_CODEGEN, KL_COMPILE_NPHASES };
const char *kl_program_compile_phase(const kl_program *p, int i, double *ms);
/* Bytes the program holds on the heap: its IR arena, IR snapshots, LLVM IR and binaries
 * (not the modules loaded on devices). What the Lua binding tells Lua's collector. */
size_t kl_program_memory(const kl_program *p);
bool kl_program_from_cache(const kl_program *p);
/* What the disk cache did for this compile: "" (not used), "hit", "stored", or
 * "not stored: ..." / "entry ... rejected: ...; stored" (driver/disk_cache.h). */
const char *kl_program_disk_cache(const kl_program *p);

kl_status kl_program_run(kl_program *p, kl_device *dev, int ninputs, const kl_named_tensor *inputs, int *noutputs,
                         kl_tensor ***outputs, char *err, size_t errlen);
/* kl_program_run, also timing each step (the steps run as without timing, see
 * kl_plan_exec_all in plan_exec.h): step_times (2 * the plan's nsteps entries, or NULL)
 * gets the start and end of step i in milliseconds from the start of the run,
 * step_stream (nsteps entries, or NULL) the stream a step ran on (GPU) or its wave (host). */
kl_status kl_program_run_timed(kl_program *p, kl_device *dev, int ninputs, const kl_named_tensor *inputs, int *noutputs,
                               kl_tensor ***outputs, double *step_times, int *step_stream, char *err, size_t errlen);

/* ---- loading programs from bundles (driver/bundle.c) ----
 * kl_program_module: the compiled module of a target's variant (its graph func is the
 * plan, its kernel funcs the kernels); lives as long as the program. Slot types and
 * constants of the plan (NULL if out of range / not a constant). */
kl_op *kl_program_module(const kl_program *p, const char *target);
const kl_type *kl_program_slot_type(const kl_program *p, const char *target, int i);
const kl_tensor *kl_program_slot_constant(const kl_program *p, const char *target, int i);

/* One target's variant as read from a bundle: the compiled module (already parsed into
 * the loading context and verified), and per kernel its info (strings are copied into
 * the context; llvm_ir is ignored: a loaded program has no snapshots)
 * and its binary (bytes copied). */
typedef struct kl_program_part {
  const char *target;
  kl_op *module;
  int nkernels;
  const kl_kernel_info *kernels;
  const kl_binary_info *binaries; /* nkernels entries */
} kl_program_part;
/* Builds a program from parts: every kernel must be a kernel func of the module (same
 * name and argument count) and every kernel func of the module must be listed; the plan
 * is rebuilt from the module exactly as kl_compile builds it (kl_plan_build; kernels in
 * module order, binaries matched by name; the infos' other fields are not read). The program
 * is not put in the compile cache. NULL + message in err on error. */
kl_program *kl_program_assemble(kl_ctx *ctx, int nparts, const kl_program_part *parts, char *err, size_t errlen);
/* The index of the target variant kl_program_run would pick for a device, -1 if none. */
int kl_program_target_for_device(const kl_program *p, const kl_device_info *info);

/* ---- prepared runs (benchmarks) ----
 * kl_program_prepare picks the variant for dev (as kl_program_run does), checks the
 * inputs against the params, loads the kernels, allocates device buffers for every slot
 * of the plan (inputs, constants, intermediate and final results) and uploads the inputs
 * and constants once. It may allocate several complete sets of these buffers (inputs
 * copied device-to-device from the first set) so that repeated launches can rotate among
 * them: a benchmark whose data fits in the cache then still reads its inputs from memory.
 * Result buffers of every set are poisoned with 0xFF bytes (NaN in every float dtype, -1 in
 * ints) unless opts->no_poison, so an element the kernels never write shows up as NaN.
 *  - kl_prepared_launch enqueues the plan's launches on buffer set `set` (no copies, no
 *    synchronisation: GPU errors surface at kl_prepared_sync or a later call).
 *  - kl_prepared_time runs `warmup` launches of the plan, then `reps` launches back to back
 *    (set i % nsets for the i-th launch after warm-up, continuing the rotation), with a
 *    device event recorded before the first and after each: ms_out[i] is the device time
 *    of launch i (events between consecutive launches, so launch gaps the host causes are
 *    counted, as they would be in real use). It synchronises before returning.
 *  - kl_prepared_outputs synchronises and downloads the outputs of one set into new host
 *    tensors (the caller releases each and frees the array).
 *  - The prepared run holds a reference to the program. It frees its buffers on the
 *    device in kl_prepared_free, or when the device is destroyed first (see Teardown
 *    above). Errors: NULL / KL_ERR plus a message in err. */
/* Loads the kernels of the variant for dev now (kl_program_run and kl_program_prepare
 * load on first use otherwise; a second call is a no-op). For compile-latency benchmarks. */
kl_status kl_program_load_kernels(kl_program *p, kl_device *dev, char *err, size_t errlen);
typedef struct kl_prepared kl_prepared;
typedef struct kl_prepare_opts {
  int sets;            /* buffer sets to rotate among; 0: derive from rotate_bytes (else 1) */
  size_t rotate_bytes; /* with sets == 0: the fewest sets spanning at least this many bytes */
  int max_sets;        /* cap for derived sets (0: 64) */
  bool no_poison;
} kl_prepare_opts;
kl_prepared *kl_program_prepare(kl_program *p, kl_device *dev, int ninputs, const kl_named_tensor *inputs,
                                const kl_prepare_opts *opts, char *err, size_t errlen);
int kl_prepared_nsets(const kl_prepared *r);
size_t kl_prepared_set_bytes(const kl_prepared *r); /* device bytes of one buffer set */
int kl_prepared_nlaunches(const kl_prepared *r);    /* kernel launches per run of the plan */
kl_status kl_prepared_launch(kl_prepared *r, int set, char *err, size_t errlen);
kl_status kl_prepared_sync(kl_prepared *r, char *err, size_t errlen);
kl_status kl_prepared_poison(kl_prepared *r, char *err, size_t errlen); /* result buffers of every set */
kl_status kl_prepared_time(kl_prepared *r, int warmup, int reps, float *ms_out, char *err, size_t errlen);
kl_status kl_prepared_outputs(kl_prepared *r, int set, int *noutputs, kl_tensor ***outputs, char *err, size_t errlen);
void kl_prepared_free(kl_prepared *r);
#endif
