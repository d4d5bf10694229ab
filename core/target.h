/* target.h — target descriptors: the one table of every target kiln knows.
 * Contract: kl_target_lookup("gfx942") returns a static, immutable descriptor (or
 * NULL) of a target kiln compiles for (the full descriptor: wave size, LDS, limits,
 * matrix instructions); passes read the fields (never the name) to make decisions.
 * "host" is the CPU target: workgroups of one thread (the thread tile is the whole
 * block tile), no matrix unit, LDS = a per-workgroup local array; its triple, cpu and
 * features are "" (codegen detects the host's at run time).
 * The same table also lists the chips code can only be emitted for (codegen, e.g. a
 * device's own arch "gfx906" or "sm_86"): kl_target_lookup_emit finds those too; their
 * rows carry only name, arch, triple, cpu and features (emit_only, the rest 0), and
 * kl_target_lookup / kl_target_count / kl_target_at never return them.
 * kl_arch is the one architecture enum of kiln (codegen, binaries, bundles, devices). */
#ifndef KL_TARGET_H
#define KL_TARGET_H
/* NVIDIA: a kernel whose shared memory (the sum of its LDS allocations, the plan's
 * lds_bytes) exceeds this takes all of it as dynamic shared memory: lower-to-llvm places
 * its LDS buffers in one `extern .shared` array and the launch passes lds_bytes (the
 * driver's opt-in, cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES); at most this much is
 * static shared memory. */
#define KL_NVPTX_STATIC_LDS_MAX (48 * 1024)
#include <stdbool.h>
#include <stdint.h>

typedef enum { KL_ARCH_HOST, KL_ARCH_AMDGPU, KL_ARCH_NVPTX } kl_arch;
/* KL_ACCEL_WGMMA: Hopper's warpgroup MMA (a target's `wgmma` flag, never its `accel`). */
typedef enum { KL_ACCEL_NONE, KL_ACCEL_MFMA, KL_ACCEL_WMMA, KL_ACCEL_MMA_SYNC, KL_ACCEL_WGMMA } kl_accel;

/* One matrix instruction: D[m x n] += A[m x k] * B[k x n] per wave/warp. */
typedef struct kl_accel_instr {
  const char *in_type;  /* "f32", "f16", "bf16", "i8" */
  const char *acc_type; /* "f32", "i32" */
  int m, n, k;
  const char *intrinsic; /* LLVM intrinsic name */
  int cu_flops_per_clk;  /* dense FLOP per clock per CU (AMDGPU, from the vendors' peak numbers: peak /
                            (CUs * clock)); 0 where not used (NVPTX) */
} kl_accel_instr;

typedef struct kl_target {
  const char *name; /* "gfx942", "sm_90", "host" */
  kl_arch arch;
  const char *triple;   /* LLVM triple */
  const char *cpu;      /* LLVM CPU name ("" = host CPU detected at run time) */
  const char *features; /* LLVM feature string */
  int wave_size;        /* 64 (gfx9), 32 (gfx10+/NVIDIA), 1 (host) */
  int64_t lds_bytes;    /* workgroup memory per workgroup */
  int max_workgroup_size;
  int max_vgprs;     /* per thread (AMDGPU) / registers per thread (NVPTX); 0 host */
  int compute_units; /* CU / SM count default */
  kl_accel accel;
  int ninstrs;
  const kl_accel_instr *instrs;
  bool emit_only;          /* a chip codegen emits for that kiln does not compile for */
  unsigned atomic_add;     /* KL_ATOMIC_ADD_* bits: float atomic adds to global memory that
                          the hardware does natively (host: f32 through LLVM's CAS loop) */
  unsigned atomic_minmax;  /* KL_ATOMIC_MINMAX_* bits: float max / min into global memory
                             with the graph ops' NaN semantics, in one kernel */
  int l2_bytes_per_cu_clk; /* AMDGPU: bytes per clock per CU that the memory beyond the CU (L2, and
                              MI300X's Infinity Cache) delivers to a GEMM streaming its operands; the
                              GEMM heuristic charges tile bytes against it (0: not used). MI100
                              (gfx908) and MI250X (gfx90a, per GCD): 16 L2 channels x 128 B per clock
                              over 120 / 110 CUs ~ 17 / 19; MI300X (gfx942): Infinity Cache 17.2 TB/s
                              over 304 CUs x 2.1 GHz ~ 27 (WGs are spread round-robin over the 8 XCDs'
                              L2s); RX 7900 XTX (gfx1100) ~ 24, RX 6900 XT (gfx1030) ~ 16.
                              NVIDIA (sm_90, sm_90a): ~ 17, what kiln's register-staged mma.sync
                              GEMMs reach (4096^3 f16, 128x128x32 tiles: 272 TFLOP/s on an H200 =
                              2.2 GB of L2 -> SM tile traffic in 0.5 ms ~ 4.3 TB/s over 132 SMs x
                              1.98 GHz); with it the NVIDIA GEMM costs also charge a per-K-step
                              latency (passes/rock_accel.h). sm_80: 0 (not measured; old costs) */
  bool wgmma;              /* Hopper warpgroup MMAs (wgmma.mma_async, sm_90a): the default
                             path of passes/rock_wgmma.h for f16 / bf16 GEMMs */
  int64_t l2_bytes;        /* NVIDIA: the L2 in bytes (A100 40 MiB, H100 / H200 50 MiB), for the
                              workgroup order (passes/gemm_raster.h: auto); 0 elsewhere (AMD deals
                              workgroups round-robin over its XCDs' L2s: no model, row order) */
} kl_target;

/* Native float atomic adds to global memory, as LLVM 19 emits them (checked with llc on
 * `atomicrmw fadd ptr addrspace(1)` at agent scope, with the amdgpu-unsafe-fp-atomics
 * attribute and !amdgpu.no.fine.grained.memory): gfx908 global_atomic_add_f32 /
 * global_atomic_pk_add_f16 without a returned value only, gfx90a and gfx942 both (f32
 * flushes denormals on gfx90a), gfx1100 global_atomic_add_f32 only, gfx1030 none (a
 * cmpswap loop); NVPTX red/atom.global.add.f32, .noftz.f16x2 (sm_60+), .noftz.bf16x2
 * (sm_90). A target without the bit still gets correct code (LLVM's CAS loop), only
 * slower; passes choose atomic forms by these bits. */
enum {
  KL_ATOMIC_ADD_F32 = 1u << 0,
  KL_ATOMIC_ADD_F16X2 = 1u << 1,
  KL_ATOMIC_ADD_BF16X2 = 1u << 2,
  KL_ATOMIC_ADD_NORET = 1u << 3, /* only the form that returns nothing (gfx908) */
};

/* Float max / min into global memory that fused kernels may use (GEMM + reduce_max /
 * reduce_min): kiln emits them as 32-bit compare-and-swap loops storing llvm.maximum /
 * minimum (NaN propagates, passes/lower_atomic.h), which every compile target has
 * (global_atomic_cmpswap on AMDGPU, atom.global.cas.b32 on NVPTX, cmpxchg on the host).
 * The chips' own float max atomics (gfx1030 global_atomic_fmax, gfx90a / gfx942 f64 only)
 * follow IEEE maxNum or chip-specific NaN rules and are not used. A target without the bit
 * keeps such a reduction as a kernel of its own. */
enum { KL_ATOMIC_MINMAX_F32 = 1u << 0 };

/* Compile targets only (what kl_compile accepts, kiln.targets() lists). */
const kl_target *kl_target_lookup(const char *name);
int kl_target_count(void);
const kl_target *kl_target_at(int i);
/* Any row, compile target or emit-only chip, by exact name ("gfx90a", not
 * "gfx90a:xnack-"), or NULL. */
const kl_target *kl_target_lookup_emit(const char *name);
/* "host", "amdgpu", "nvptx" (the arch names of bundles and kiln.targets()). */
const char *kl_arch_name(kl_arch a);
/* Whether t is an NVIDIA chip of sm_90 or later (its cpu "sm_NN[a]", NN >= 90): Hopper's
 * warp-level matrix store stmatrix (rock.stmatrix) is there. */
bool kl_target_has_stmatrix(const kl_target *t);
/* The matrix instruction for an input element type name, or NULL. */
const kl_accel_instr *kl_target_accel_for(const kl_target *t, const char *in_type);
#endif
