/* kiln_client.h — the bundle client API: a small, stable, plain-C reader (and writer) of
 * kiln bundle files, for programs that launch kiln's kernels themselves.
 * Contract:
 *  - Self-contained: this header and kiln_client.c need only the C standard library
 *    (no LLVM, no Lua, no other kiln file), so a client may copy the two files into its
 *    own build (kiln_client.c includes "client/kiln_client.h": keep that path on the
 *    include path or edit the one #include). C99 or later, GCC or Clang (it uses
 *    __builtin_mul_overflow). The file format is documented in driver/bundle.h.
 *  - kl_bundle_open_file / kl_bundle_open_memory read and fully validate a bundle
 *    (magic, format version, header / section-table / per-section checksums, every
 *    count, index, string and size); on any problem they return NULL and write a clear
 *    message into err[errlen] (err may be NULL) naming the section and what is wrong.
 *    They never crash or read out of bounds, whatever the input bytes. They also check
 *    the plan against the redundancy in the bundle, so a client never launches with
 *    sizes the IR does not carry: every kernel's grid, block and LDS bytes must be its
 *    grid_size / block_size attributes (default 1) and the sum of its rock.alloc LDS
 *    buffers in the IR text; every tensor's element type, shape and strides must be
 *    those its type text spells; and each launch argument's slot must have the layout of
 *    the kernel's argument. The steps must be a program that runs: tokens unique, every
 *    wait the token of an earlier step; every slot a step reads written before (params
 *    and constants count as written) by a step it waits on (directly or through other
 *    waits), and every write / free ordered after the earlier accesses of its slot the
 *    same way; a workspace allocated once, before its first use, freed after its last,
 *    never used after its free, and only for an intermediate; copies between slots of one
 *    layout; prefill values representable in the slot's element type (integers: exact and
 *    in range; floats: inf, nan or a finite value within the type's range, rounded to the
 *    nearest); at most 4096 steps. A format version 2 bundle still opens: its steps are
 *    launches in order, step i yielding token i and waiting on token i - 1. (Checksums
 *    are not signatures: a plan and IR edited alike are a different program, which no
 *    reader can tell from the original.)
 *  - Memory: kl_bundle_open_memory copies the bytes. Everything reachable from a
 *    kl_bundle (structs, strings, binaries, constant data, IR text) is owned by it and
 *    stays valid until kl_bundle_close. All pointers returned are const: do not modify.
 *  - The plan of one target: slots are the buffers of the computation (params, given by
 *    the caller by name; constants, whose bytes are in the bundle; results, of which the
 *    ones listed in `outputs` are returned to the caller and the others, output -1, are
 *    intermediates). A slot's buffer spans `bytes` bytes; element (i0, i1, ...) lives at
 *    element offset sum(i_k * strides[k]).
 *    Steps form a small host program connected by tokens: step i yields token `token`
 *    (unique in the plan; kiln writes token == i) and may start once the steps that
 *    yielded its waits[0..nwaits-1] have completed (every wait names the token of an
 *    EARLIER step, so the list order is one valid sequential order). Steps whose waits
 *    are satisfied may run concurrently: the waits already order every access to a slot
 *    (a step waits on the last writer of each slot it reads, and on the last writer and
 *    the readers since of each slot it writes, frees or allocates). Kinds:
 *      LAUNCH: launch kernel `kernel` with grid x block threads (grid[0..2], block[0..2])
 *        and lds_bytes of workgroup memory already declared inside the kernel (pass 0 as
 *        the dynamic shared memory size; except an NVIDIA kernel with lds_bytes above
 *        48 KiB, whose LDS is all dynamic: pass lds_bytes, raising the kernel's
 *        MAX_DYNAMIC_SHARED_SIZE_BYTES attribute first); its arguments are the device pointers of the
 *        slots args[0..nargs-1], each passed as one pointer-sized kernel argument, in
 *        that order (inputs first, then outputs). On GPUs every pointer must be aligned to
 *        16 bytes (the kernels use 16-byte vector accesses; cuMemAlloc / hipMalloc give
 *        256); host kernels need element alignment only.
 *      PREFILL: set every element of slot `slot` to `value` (converted to the slot's
 *        element type: 0, -inf, +inf, 1, any scalar the type holds) — a memset/fill the
 *        client may do itself; it comes before an accumulating launch or replaces a
 *        kernel whose whole body was the fill.
 *      COPY: copy the `bytes`-byte buffer of slot `src` into slot `dst` (same layout).
 *      ALLOC_WORKSPACE: allocate the buffer of intermediate slot `slot` (`bytes` bytes,
 *        the slot's t.bytes); FREE: release it. An intermediate with an ALLOC_WORKSPACE
 *        step lives from that step to its FREE step (after its last reader); one without
 *        (plans of format version 2) lives for the whole run.
 *    Fields a kind does not use are -1 (kernel, slot, src, dst), 0 / NULL (nargs, args,
 *    bytes, value). kl_bundle_open_* check all of this (see kl_bundle_open_memory).
 *  - Binaries per target: "host-object" (host: an ELF relocatable object, kiln's host ABI, see runtime/device.h),
 *    "ptx" (NVIDIA: PTX text for cuModuleLoadData; a NUL byte follows the data, not
 *    counted in binary_size) or "hsaco" (AMDGPU code object for hipModuleLoadData). The
 *    kernel symbol in the binary is the kernel's name. */
#ifndef KL_KILN_CLIENT_H
#define KL_KILN_CLIENT_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KL_BUNDLE_FORMAT_VERSION 3u /* 3: plan steps with tokens and kinds; 2 (launches only) still reads */

typedef struct kl_bundle kl_bundle;

/* The element type and memory layout of a buffer. */
typedef struct kl_bundle_tensor {
  const char *type;       /* kiln type text: "tensor<2x3xf32>", "buffer<4x4xf16, strides=[1,4]>" */
  const char *elem;       /* "i1", "i8", "u8", "i32", "i64", "index", "f16", "bf16", "f32", "f64" */
  int elem_bytes;         /* 1, 2, 4 or 8 (i1 takes one byte) */
  int rank;               /* 0..16 */
  const int64_t *shape;   /* rank entries (>= 0) */
  const int64_t *strides; /* rank entries, in elements (>= 0) */
  uint64_t bytes;         /* bytes the buffer spans: (1 + sum((shape-1)*strides)) * elem_bytes, 0 if empty */
} kl_bundle_tensor;

typedef struct kl_bundle_arg {
  const char *name; /* "" if the kernel did not name it */
  kl_bundle_tensor t;
  int is_output; /* 0: read by the kernel (input), 1: written (output) */
} kl_bundle_arg;

typedef struct kl_bundle_kernel {
  const char *name;        /* symbol in the binary */
  const char *kind;        /* "gemm", "elementwise", "reduce", "softmax", ... ("" if none) */
  const char *perf_config; /* "" if none */
  int64_t grid[3];         /* workgroups (x, y, z) */
  int64_t block[3];        /* threads per workgroup (x, y, z) */
  int64_t lds_bytes;       /* workgroup memory the kernel declares (static) */
  int nargs, ninputs;      /* arguments: ninputs inputs, then nargs - ninputs outputs */
  const kl_bundle_arg *args;
  const void *binary; /* this target's code for the kernel (see binary_format) */
  size_t binary_size;
} kl_bundle_kernel;

typedef enum { KL_BUNDLE_PARAM = 0, KL_BUNDLE_CONSTANT = 1, KL_BUNDLE_RESULT = 2 } kl_bundle_slot_kind;

typedef struct kl_bundle_slot {
  kl_bundle_slot_kind kind;
  const char *name; /* params: the input's name; "" otherwise */
  kl_bundle_tensor t;
  const void *data; /* constants: t.bytes bytes in the slot's layout; NULL otherwise */
  size_t data_size;
  int output; /* position in the target's outputs, or -1 (a RESULT slot with
                              output -1 is an intermediate: workspace for the run) */
} kl_bundle_slot;

typedef enum {
  KL_BUNDLE_LAUNCH = 0,
  KL_BUNDLE_PREFILL = 1,
  KL_BUNDLE_COPY = 2,
  KL_BUNDLE_ALLOC_WORKSPACE = 3,
  KL_BUNDLE_FREE = 4
} kl_bundle_step_kind;

typedef struct kl_bundle_step {
  kl_bundle_step_kind kind;
  int kernel;      /* LAUNCH: index into the target's kernels; -1 otherwise */
  int nargs;       /* LAUNCH: == kernels[kernel].nargs; 0 otherwise */
  const int *args; /* LAUNCH: slot indices, one per kernel argument */
  int token;       /* the token this step yields */
  int nwaits;      /* tokens this step waits on (of earlier steps) */
  const int *waits;
  int slot;       /* PREFILL, ALLOC_WORKSPACE, FREE: the slot; -1 otherwise */
  double value;   /* PREFILL: the value every element gets */
  int src, dst;   /* COPY: slots; -1 otherwise */
  uint64_t bytes; /* ALLOC_WORKSPACE, COPY: buffer bytes (the slot's t.bytes); 0 otherwise */
} kl_bundle_step;

/* Running a plan with HIP on nstreams streams (CUDA is the same with the cu* calls):
 * each step's token becomes an event, each wait a hipStreamWaitEvent. A sketch, error
 * checks left out (kiln's own executor: driver/plan_exec.c):
 *
 *   hipDeviceptr_t ptr[nslots]; hipEvent_t ev[nsteps]; hipFunction_t fn[nkernels]; ...
 *   // fn[k]: hipModuleLoadData(kernels[k].binary) + hipModuleGetFunction(kernels[k].name)
 *   // params: the caller's device buffers; constants: hipMalloc + hipMemcpyHtoD(slot.data);
 *   // outputs and intermediates without an ALLOC_WORKSPACE step: hipMalloc(slot.t.bytes)
 *   for (int i = 0; i < t->nsteps; i++) {
 *     const kl_bundle_step *s = &t->steps[i];
 *     hipStream_t st = streams[i % nstreams];
 *     for (int w = 0; w < s->nwaits; w++) hipStreamWaitEvent(st, ev[index_of_token(s->waits[w])], 0);
 *     switch (s->kind) {
 *     case KL_BUNDLE_LAUNCH: {
 *       void *args[64]; for (int a = 0; a < s->nargs; a++) args[a] = &ptr[s->args[a]];
 *       const kl_bundle_kernel *k = &t->kernels[s->kernel];
 *       hipModuleLaunchKernel(fn[s->kernel], k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1],
 *                             k->block[2], 0, st, args, NULL);
 *       break; }
 *     case KL_BUNDLE_PREFILL:  // the value's bit pattern in the slot's element type:
 *       // 1-byte: hipMemsetAsync(ptr, byte, bytes, st); 2 bytes: hipMemsetD16Async;
 *       // 4 bytes: hipMemsetD32Async(ptr, bits, bytes / 4, st); 8 bytes: a fill kernel of your own
 *       hipMemsetD32Async(ptr[s->slot], f32_bits(s->value), t->slots[s->slot].t.bytes / 4, st); break;
 *     case KL_BUNDLE_COPY: hipMemcpyAsync(ptr[s->dst], ptr[s->src], s->bytes, hipMemcpyDeviceToDevice, st); break;
 *     case KL_BUNDLE_ALLOC_WORKSPACE: hipMalloc(&ptr[s->slot], s->bytes); break;  // or a pool
 *     case KL_BUNDLE_FREE:  // st waited on every reader: once st is done, so are they
 *       hipStreamSynchronize(st); hipFree(ptr[s->slot]); break;  // or hipFreeAsync(ptr, st)
 *     }
 *     hipEventCreate(&ev[i]); hipEventRecord(ev[i], st);
 *   }
 *   hipDeviceSynchronize();  // then copy the outputs' slots back
 */

typedef struct kl_bundle_target {
  const char *name;          /* "host", "gfx942", "sm_90", ... */
  const char *arch;          /* "host", "amdgpu", "nvptx" */
  const char *binary_format; /* "host-object", "hsaco", "ptx" */
  int nkernels;
  const kl_bundle_kernel *kernels;
  int nslots;
  const kl_bundle_slot *slots;
  int nsteps;
  const kl_bundle_step *steps;
  int noutputs;
  const int *outputs; /* slot indices, in the order of the graph's outputs */
  const char *ir;
  size_t ir_size; /* the compiled module's IR text (NUL-terminated) */
} kl_bundle_target;

/* ---- reading ---- */
kl_bundle *kl_bundle_open_file(const char *path, char *err, size_t errlen);
kl_bundle *kl_bundle_open_memory(const void *data, size_t size, char *err, size_t errlen);
void kl_bundle_close(kl_bundle *b); /* NULL is fine */

unsigned kl_bundle_format_version(const kl_bundle *b);
const char *kl_bundle_producer(const kl_bundle *b); /* "kiln 0.1.0" */
int kl_bundle_ntargets(const kl_bundle *b);
const kl_bundle_target *kl_bundle_target_at(const kl_bundle *b, int i);              /* NULL if out of range */
const kl_bundle_target *kl_bundle_find_target(const kl_bundle *b, const char *name); /* NULL if absent */
const kl_bundle_kernel *kl_bundle_find_kernel(const kl_bundle_target *t, const char *name);
int kl_bundle_find_param(const kl_bundle_target *t, const char *name); /* slot index or -1 */
/* The binary of kernel `kernel` for target `target` (NULL and *size = 0 if absent). */
const void *kl_bundle_binary(const kl_bundle *b, const char *target, const char *kernel, size_t *size);

/* ---- writing (kl_program_save uses this: kiln's host plan is these structs, so it encodes
 * a program's plan as it is; the input is described with the same structs:
 * per target name, arch, binary_format, kernels (with binary / binary_size and args),
 * slots (constants with data / data_size == t.bytes), steps, outputs, ir / ir_size).
 * Derived fields (t.bytes, is_output, output, elem_bytes) are recomputed, not read.
 * Returns 0 and a malloc'd buffer (*out, *size; caller frees), or -1 with a message. */
int kl_bundle_encode(int ntargets, const kl_bundle_target *targets, const char *producer, void **out, size_t *size,
                     char *err, size_t errlen);

/* ---- plan helpers ----
 * The slots step s accesses: kl_bundle_step_naccess of them; access i (0 <= i < that)
 * returns the slot and sets *writes (1: written, freed or allocated; 0: read). A launch
 * reads its input arguments and writes its outputs, a copy reads src and writes dst, a
 * prefill, workspace allocation or free writes its slot. */
int kl_bundle_step_naccess(const kl_bundle_step *s);
int kl_bundle_step_access(const kl_bundle_target *t, const kl_bundle_step *s, int i, int *writes);
/* 1 if every element of a slot of element type elem ("f32", "i8", ...) can be set to v
 * (the PREFILL rule above), else 0. */
int kl_bundle_value_fits(const char *elem, double v);
/* The step kind's name: "launch", "prefill", "copy", "alloc_workspace", "free" ("?" else). */
const char *kl_bundle_step_kind_name(kl_bundle_step_kind k);

/* FNV-1a 64-bit hash (offset basis 0xcbf29ce484222325, prime 0x100000001b3): the
 * checksum of the format. */
uint64_t kl_bundle_fnv1a64(const void *data, size_t n);

#ifdef __cplusplus
}
#endif
#endif
