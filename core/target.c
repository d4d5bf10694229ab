/* target.c — the target table: compile targets first, then the chips codegen emits
 * for without a full descriptor (triple, cpu = the chip, default LLVM features). */
#include "core/target.h"
#include <stdlib.h>
#include <string.h>

/* cu_flops_per_clk: MI100 (gfx908, 120 CUs, 1.5 GHz), MI250X (gfx90a, 220 CUs, 1.7 GHz),
 * MI300X (gfx942, 304 CUs, 2.1 GHz), RX 7900 XTX (gfx1100, 96 CUs, 2.5 GHz): the dense matrix
 * peak of each type over CUs x clock. */
static const kl_accel_instr mfma_gfx908[] = {
  { "f32", "f32", 32, 32, 2, "llvm.amdgcn.mfma.f32.32x32x2f32", 256 },
  { "f16", "f32", 32, 32, 8, "llvm.amdgcn.mfma.f32.32x32x8f16", 1024 },
  { "bf16", "f32", 32, 32, 4, "llvm.amdgcn.mfma.f32.32x32x4bf16", 512 },
  { "i8", "i32", 32, 32, 8, "llvm.amdgcn.mfma.i32.32x32x8i8", 1024 },
};
static const kl_accel_instr mfma_gfx90a[] = {
  { "f32", "f32", 32, 32, 2, "llvm.amdgcn.mfma.f32.32x32x2f32", 256 },
  { "f16", "f32", 32, 32, 8, "llvm.amdgcn.mfma.f32.32x32x8f16", 1024 },
  { "bf16", "f32", 32, 32, 8, "llvm.amdgcn.mfma.f32.32x32x8bf16.1k", 1024 },
  { "i8", "i32", 32, 32, 8, "llvm.amdgcn.mfma.i32.32x32x8i8", 1024 },
};
static const kl_accel_instr mfma_gfx942[] = {
  { "f32", "f32", 32, 32, 2, "llvm.amdgcn.mfma.f32.32x32x2f32", 256 },
  { "f16", "f32", 32, 32, 8, "llvm.amdgcn.mfma.f32.32x32x8f16", 2048 },
  { "bf16", "f32", 32, 32, 8, "llvm.amdgcn.mfma.f32.32x32x8bf16.1k", 2048 },
  { "i8", "i32", 32, 32, 16, "llvm.amdgcn.mfma.i32.32x32x16.i8", 4096 },
};
static const kl_accel_instr wmma_gfx1100[] = {
  { "f16", "f32", 16, 16, 16, "llvm.amdgcn.wmma.f32.16x16x16.f16", 512 },
  { "bf16", "f32", 16, 16, 16, "llvm.amdgcn.wmma.f32.16x16x16.bf16", 512 },
  { "i8", "i32", 16, 16, 16, "llvm.amdgcn.wmma.i32.16x16x16.iu8", 1024 },
};
static const kl_accel_instr mma_sm80[] = {
  { "f16", "f32", 16, 8, 16, "llvm.nvvm.mma.m16n8k16.row.col.f32.f32", 0 },
  { "bf16", "f32", 16, 8, 16, "llvm.nvvm.mma.m16n8k16.row.col.bf16", 0 },
  { "i8", "i32", 16, 8, 32, "llvm.nvvm.mma.m16n8k32.row.col.s8", 0 },
};
#define N(a) (int)(sizeof a / sizeof *a), a
static const kl_target targets[] = {
  { "host", KL_ARCH_HOST, "", "", "", 1, 64 * 1024, 1, 0, 0, KL_ACCEL_NONE, 0, NULL, false, KL_ATOMIC_ADD_F32,
    KL_ATOMIC_MINMAX_F32, 0, false, 0 },
  { "gfx908", KL_ARCH_AMDGPU, "amdgcn-amd-amdhsa", "gfx908", "", 64, 65536, 1024, 256, 120, KL_ACCEL_MFMA,
    N(mfma_gfx908), false, KL_ATOMIC_ADD_F32 | KL_ATOMIC_ADD_F16X2 | KL_ATOMIC_ADD_NORET, KL_ATOMIC_MINMAX_F32, 17,
    false, 0 },
  { "gfx90a", KL_ARCH_AMDGPU, "amdgcn-amd-amdhsa", "gfx90a", "", 64, 65536, 1024, 512, 104, KL_ACCEL_MFMA,
    N(mfma_gfx90a), false, KL_ATOMIC_ADD_F32 | KL_ATOMIC_ADD_F16X2, KL_ATOMIC_MINMAX_F32, 19, false, 0 },
  { "gfx942", KL_ARCH_AMDGPU, "amdgcn-amd-amdhsa", "gfx942", "", 64, 65536, 1024, 512, 304, KL_ACCEL_MFMA,
    N(mfma_gfx942), false, KL_ATOMIC_ADD_F32 | KL_ATOMIC_ADD_F16X2, KL_ATOMIC_MINMAX_F32, 27, false, 0 },
  { "gfx1030", KL_ARCH_AMDGPU, "amdgcn-amd-amdhsa", "gfx1030", "+wavefrontsize32", 32, 65536, 1024, 256, 80,
    KL_ACCEL_NONE, 0, NULL, false, 0, KL_ATOMIC_MINMAX_F32, 16, false, 0 },
  { "gfx1100", KL_ARCH_AMDGPU, "amdgcn-amd-amdhsa", "gfx1100", "+wavefrontsize32", 32, 65536, 1024, 256, 96,
    KL_ACCEL_WMMA, N(wmma_gfx1100), false, KL_ATOMIC_ADD_F32, KL_ATOMIC_MINMAX_F32, 24, false, 0 },
  { "sm_80", KL_ARCH_NVPTX, "nvptx64-nvidia-cuda", "sm_80", "+ptx70", 32, 163 * 1024, 1024, 255, 108, KL_ACCEL_MMA_SYNC,
    N(mma_sm80), false, KL_ATOMIC_ADD_F32 | KL_ATOMIC_ADD_F16X2, KL_ATOMIC_MINMAX_F32, 0, false, 40 << 20 },
  { "sm_90", KL_ARCH_NVPTX, "nvptx64-nvidia-cuda", "sm_90", "+ptx80", 32, 227 * 1024, 1024, 255, 132, KL_ACCEL_MMA_SYNC,
    N(mma_sm80), false, KL_ATOMIC_ADD_F32 | KL_ATOMIC_ADD_F16X2 | KL_ATOMIC_ADD_BF16X2, KL_ATOMIC_MINMAX_F32, 17, false,
    50 << 20 },
  /* sm_90 plus the arch-specific Hopper instructions (wgmma); its code runs on compute
   * capability 9.0 only */
  { "sm_90a", KL_ARCH_NVPTX, "nvptx64-nvidia-cuda", "sm_90a", "+ptx80", 32, 227 * 1024, 1024, 255, 132,
    KL_ACCEL_MMA_SYNC, N(mma_sm80), false, KL_ATOMIC_ADD_F32 | KL_ATOMIC_ADD_F16X2 | KL_ATOMIC_ADD_BF16X2,
    KL_ATOMIC_MINMAX_F32, 17, true, 50 << 20 },
#define AMD(chip)                                                                                                     \
  {                                                                                                                   \
    chip, KL_ARCH_AMDGPU, "amdgcn-amd-amdhsa", chip, "", 0, 0, 0, 0, 0, KL_ACCEL_NONE, 0, NULL, true, 0, 0, 0, false, \
        0                                                                                                             \
  }
/* emit only; an NVIDIA arch's feature is the lowest PTX ISA that supports it, at least
   * 7.0 (sm_90 uses 8.0 so that sm_90 features are available) */
#define NV(sm, ptx) \
  { sm, KL_ARCH_NVPTX, "nvptx64-nvidia-cuda", sm, ptx, 0, 0, 0, 0, 0, KL_ACCEL_NONE, 0, NULL, true, 0, 0, 0, false, 0 }
  AMD("gfx900"),
  AMD("gfx902"),
  AMD("gfx904"),
  AMD("gfx906"),
  AMD("gfx909"),
  AMD("gfx90c"),
  AMD("gfx940"),
  AMD("gfx941"),
  AMD("gfx1010"),
  AMD("gfx1011"),
  AMD("gfx1012"),
  AMD("gfx1013"),
  AMD("gfx1031"),
  AMD("gfx1032"),
  AMD("gfx1033"),
  AMD("gfx1034"),
  AMD("gfx1035"),
  AMD("gfx1036"),
  AMD("gfx1101"),
  AMD("gfx1102"),
  AMD("gfx1103"),
  AMD("gfx1150"),
  AMD("gfx1151"),
  AMD("gfx1200"),
  AMD("gfx1201"),
  NV("sm_60", "+ptx60"),
  NV("sm_61", "+ptx60"),
  NV("sm_70", "+ptx60"),
  NV("sm_72", "+ptx61"),
  NV("sm_75", "+ptx63"),
  NV("sm_86", "+ptx71"),
  NV("sm_87", "+ptx74"),
  NV("sm_89", "+ptx78"),
#undef AMD
#undef NV
};
#undef N
#define NROWS (sizeof targets / sizeof *targets)
/* The compile targets are the rows before the first emit-only one. */
static size_t ncompile(void) {
  size_t n = 0;
  while (n < NROWS && !targets[n].emit_only) n++;
  return n;
}
const kl_target *kl_target_lookup(const char *name) {
  for (size_t i = 0, n = ncompile(); name && i < n; i++)
    if (!strcmp(targets[i].name, name)) return &targets[i];
  return NULL;
}
const kl_target *kl_target_lookup_emit(const char *name) {
  for (size_t i = 0; name && i < NROWS; i++)
    if (!strcmp(targets[i].name, name)) return &targets[i];
  return NULL;
}
int kl_target_count(void) { return (int)ncompile(); }
const kl_target *kl_target_at(int i) { return (i >= 0 && i < kl_target_count()) ? &targets[i] : NULL; }
const kl_accel_instr *kl_target_accel_for(const kl_target *t, const char *in_type) {
  for (int i = 0; t && i < t->ninstrs; i++)
    if (!strcmp(t->instrs[i].in_type, in_type)) return &t->instrs[i];
  return NULL;
}
bool kl_target_has_stmatrix(const kl_target *t) {
  if (!t || t->arch != KL_ARCH_NVPTX || !t->cpu || strncmp(t->cpu, "sm_", 3)) return false;
  return atoi(t->cpu + 3) >= 90;
}

const char *kl_arch_name(kl_arch a) { return a == KL_ARCH_AMDGPU ? "amdgpu" : a == KL_ARCH_NVPTX ? "nvptx" : "host"; }
