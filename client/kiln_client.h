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
 *    the kernel's argument. (Checksums are not signatures: a plan and IR edited alike
 *    are a different program, which no reader can tell from the original.)
 *  - Memory: kl_bundle_open_memory copies the bytes. Everything reachable from a
 *    kl_bundle (structs, strings, binaries, constant data, IR text) is owned by it and
 *    stays valid until kl_bundle_close. All pointers returned are const: do not modify.
 *  - The plan of one target: slots are the buffers of the computation (params, given by
 *    the caller by name; constants, whose bytes are in the bundle; results of launches,
 *    of which the ones listed in `outputs` are returned to the caller and the others are
 *    intermediates the client allocates for the run). Steps run in order; a launch step
 *    launches kernel `kernel` with grid x block threads (grid[0..2], block[0..2]) and
 *    lds_bytes of workgroup memory already declared inside the kernel (pass 0 as the
 *    dynamic shared memory size); its arguments are the device pointers of the slots
 *    args[0..nargs-1], each passed as one pointer-sized kernel argument, in that order
 *    (inputs first, then outputs). A slot's buffer spans `bytes` bytes; element
 *    (i0, i1, ...) lives at element offset sum(i_k * strides[k]).
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

#define KL_BUNDLE_FORMAT_VERSION 2u /* 2: host binaries are objects ("host-object"), not bitcode */

typedef struct kl_bundle kl_bundle;

/* The element type and memory layout of a buffer. */
typedef struct kl_bundle_tensor {
  const char *type;       /* kiln type text: "tensor<2x3xf32>", "buffer<4x4xf16, strides=[1,4]>" */
  const char *elem;       /* "i1", "i8", "i32", "i64", "index", "f16", "bf16", "f32", "f64" */
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

typedef enum { KL_BUNDLE_LAUNCH = 0 } kl_bundle_step_kind;

typedef struct kl_bundle_step {
  kl_bundle_step_kind kind;
  int kernel;      /* index into the target's kernels */
  int nargs;       /* == kernels[kernel].nargs */
  const int *args; /* slot indices, one per kernel argument */
} kl_bundle_step;

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

/* FNV-1a 64-bit hash (offset basis 0xcbf29ce484222325, prime 0x100000001b3): the
 * checksum of the format. */
uint64_t kl_bundle_fnv1a64(const void *data, size_t n);

#ifdef __cplusplus
}
#endif
#endif
