/* target.h — target descriptors: one table for every target kiln compiles for.
 * Contract: kl_target_lookup("gfx942") returns a static, immutable descriptor (or
 * NULL); passes read the fields (never the name) to make decisions. "host" is the CPU
 * target: workgroups of one thread (the thread tile is the whole block tile), no
 * matrix unit, LDS = a per-workgroup local array. */
#ifndef KL_TARGET_H
#define KL_TARGET_H
#include <stdbool.h>
#include <stdint.h>

typedef enum { KL_ARCH_HOST, KL_ARCH_AMDGPU, KL_ARCH_NVPTX } kl_arch;
typedef enum { KL_ACCEL_NONE, KL_ACCEL_MFMA, KL_ACCEL_WMMA, KL_ACCEL_MMA_SYNC } kl_accel;

/* One matrix instruction: D[m x n] += A[m x k] * B[k x n] per wave/warp. */
typedef struct kl_accel_instr {
  const char *in_type;    /* "f32", "f16", "bf16", "i8" */
  const char *acc_type;   /* "f32", "i32" */
  int m, n, k;
  const char *intrinsic;  /* LLVM intrinsic name */
} kl_accel_instr;

typedef struct kl_target {
  const char *name;         /* "gfx942", "sm_90", "host" */
  kl_arch arch;
  const char *triple;       /* LLVM triple */
  const char *cpu;          /* LLVM CPU name ("" = host CPU detected at run time) */
  const char *features;     /* LLVM feature string */
  int wave_size;            /* 64 (gfx9), 32 (gfx10+/NVIDIA), 1 (host) */
  int64_t lds_bytes;        /* workgroup memory per workgroup */
  int max_workgroup_size;
  int max_vgprs;            /* per thread (AMDGPU) / registers per thread (NVPTX); 0 host */
  int compute_units;        /* CU / SM count default */
  kl_accel accel;
  int ninstrs;
  const kl_accel_instr *instrs;
} kl_target;

const kl_target *kl_target_lookup(const char *name);
int kl_target_count(void);
const kl_target *kl_target_at(int i);
/* The matrix instruction for an input element type name, or NULL. */
const kl_accel_instr *kl_target_accel_for(const kl_target *t, const char *in_type);
#endif
