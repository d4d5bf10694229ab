/* amdgpu_stats.h — what one AMDGPU kernel costs, read statically from its code object.
 * Contract: kl_amdgpu_stats_read parses an HSACO (codegen/hsaco.h), finds `kernel`, and
 * fills kl_amdgpu_stats: the registers, LDS and scratch of its metadata, the occupancy
 * (waves per SIMD) those allow on `target` (a kiln AMDGPU target name; the limits are
 * LLVM 19's, AMDGPUBaseInfo: unified 512-entry VGPR/AGPR file with granule 8 and at most
 * 8 waves on gfx90a/gfx942, 800 SGPRs per SIMD with granule 16 on gfx9; wave32 1536
 * VGPRs granule 24 on gfx1100, 1024 granule 8 on gfx1030, at most 16 waves, SGPRs not
 * limiting on gfx10+; LDS: 64 KiB per CU on gfx9, 128 KiB per WGP of 4 SIMDs on gfx10+),
 * the resource that limits it, and the instruction mix of the innermost loop of the
 * disassembly (codegen/disasm.h) that does the most matrix instructions (else the
 * longest one). `block` is the workgroup size in threads (0: one wave). Returns KL_ERR
 * with a message in err for a malformed object, a missing kernel or a target that is not
 * AMDGPU; never aborts. */
#ifndef KL_AMDGPU_STATS_H
#define KL_AMDGPU_STATS_H
#include <stddef.h>
#include <stdint.h>
#include "core/context.h"

typedef struct kl_amdgpu_loop_mix {
  int found;     /* 1 when the kernel has a loop (the other fields are 0 otherwise) */
  int instrs;    /* instructions from the loop head to its back-edge branch, inclusive */
  int mfma;      /* v_mfma* */
  int wmma;      /* v_wmma* */
  int gload;     /* global_load* / buffer_load* */
  int gstore;    /* global_store* / buffer_store* */
  int ds_read;   /* ds_read* / ds_load* (and ds_bpermute / ds_swizzle) */
  int ds_write;  /* ds_write* / ds_store* */
  int ds_narrow; /* ds_write_b8 / ds_write_b16 / ds_store_b8 / ds_store_b16 */
  int waitcnt;   /* s_waitcnt* */
  int barrier;   /* s_barrier */
  int valu_fma;  /* v_fma* / v_fmac* / v_dot2* / v_pk_fma* */
} kl_amdgpu_loop_mix;

typedef struct kl_amdgpu_stats {
  int64_t vgpr; /* metadata .vgpr_count (on gfx90a/gfx942 the arch + acc total) */
  int64_t agpr; /* .agpr_count (0 where the target has none) */
  int64_t sgpr; /* .sgpr_count */
  int64_t lds;  /* .group_segment_fixed_size */
  int64_t scratch;
  int64_t vgpr_spills, sgpr_spills;
  int wave_size;
  int occupancy;                            /* waves per SIMD */
  const char *limited;                      /* "vgpr", "sgpr", "lds", "waves" (the target's maximum) */
  int occ_vgpr, occ_sgpr, occ_lds, occ_max; /* each limit alone */
  kl_amdgpu_loop_mix loop;
} kl_amdgpu_stats;

kl_status kl_amdgpu_stats_read(const void *hsaco, size_t size, const char *kernel, const char *target, int64_t block,
                               kl_amdgpu_stats *out, char *err, size_t errlen);
/* The instruction mix of the chosen innermost loop of a disassembly text (as
 * kl_disasm_hsaco prints it). */
kl_amdgpu_loop_mix kl_amdgpu_loop_mix_of(const char *asm_text);
/* The instructions of that loop, one a line, labels and trailing "; ..." comments
 * dropped (llvm-mca's input, driver/amdgpu_mca.h); NULL without a loop. malloc'd. */
char *kl_amdgpu_main_loop_text(const char *asm_text);
/* "vgpr=… agpr=… sgpr=… lds=… scratch=… occupancy=N (limit) loop: mfma=… …", malloc'd. */
char *kl_amdgpu_stats_line(const kl_amdgpu_stats *s);
#endif
