/* test_accel.c — GEMMs on matrix instructions (passes/rock_accel.h) without a GPU:
 *  - layouts: every instruction descriptor against the ISA formulas written out here
 *    independently; which targets / input types get which instruction;
 *  - the "v2:" perf config: parse, print, validation errors naming the field, the
 *    heuristic (valid, deterministic) on many shapes;
 *  - numerics: kernels (rock.gemm [+ a fused bias/relu/cast epilogue], odd M/N/K,
 *    transposed operands, several configs, f16 / bf16 / i8 / f32) go through the tiled
 *    pipeline down to loop level and are run by a lockstep SIMT interpreter of the loop
 *    IR in this file: every thread of a workgroup executes each op before the next one
 *    (so barriers hold), LDS is per workgroup, registers per thread, and rock.mma is
 *    executed per wave by a hardware model of the instruction (which lane / element
 *    holds A[i][k], B[k][j], D[i][j], from the ISA documents, independent of the
 *    descriptors). Results must equal a direct matmul exactly (integer-valued data), no
 *    memory access may leave its buffer, no uninitialized (NaN-filled) value may be read
 *    into the result and every output element is written;
 *  - code: PTX for sm_80 / sm_90 contains mma.sync, HSACOs for gfx90a / gfx942 contain
 *    v_mfma and for gfx1100 v_wmma, with scratch 0, no spills, VGPRs and LDS within the
 *    target's limits; v1 configs, f32 on NVIDIA and gfx1030 keep the FMA path;
 *  - errors: a v2 config without a matrix instruction, bad v2 fields;
 *  - the random fused-graph suite (spec/lua/fused_gen.lua, through the Lua module)
 *    compiled for sm_90, gfx942 and gfx1100 and interpreted the same way, against g:eval;
 *  - lanes: the suite's reductions, softmax and element-wise kernels on the AMD targets,
 *    interpreted on a few workgroups: each wave's global loads are one contiguous run;
 *  - KILN_TEST_ONLY_AMD_BANKS / _AMD_XOR / _AMD_LANES / _AMD_OTHER / _TMA / _TMA_SPLIT / _TMA_IM2COL / _CP_ASYNC / KILN_TEST_ONLY_WGMMA run one group alone;
 *    KILN_TEST_SKIP_AMD_ALL leaves out the AMD all-configs proof (ctest runs it separately);
 *  - GPU (only with a CUDA device; skipped with a message otherwise): an f16 / bf16 dot
 *    graph with a fused epilogue compiled for the device and compared with g:eval. */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "ctx_test_util.h"
#include "core/dialect_rock.h"
#include "core/parse.h"
#include "core/pass.h"
#include "core/print.h"
#include "passes/lower_to_llvm.h"
#include "passes/rock_accel.h"
#include "passes/perf_config.h"
#include "passes/rock_wgmma.h"
#include "passes/gemm_split.h"
#include "passes/rock_tma.h"
#include "passes/gemm_raster.h"
#include "codegen/codegen_target.h"
#include "runtime/device.h"
#include "codegen/disasm.h"
#include "runtime/graph_eval.h"
#include "core/dtype.h"
#include "codegen/hsaco.h"
#include "driver/program.h"
#include "lua/kiln_lua_rt.h"
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

static int g_checks, g_fail, g_group_fail;
#define CHECK(c, ...)                                              \
  do {                                                             \
    g_checks++;                                                    \
    if (!(c)) {                                                    \
      g_fail++;                                                    \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #c); \
      fprintf(stderr, __VA_ARGS__);                                \
      fputc('\n', stderr);                                         \
    }                                                              \
  } while (0)
static void group_begin(void) { g_group_fail = g_fail; }
static void group_end(const char *what) { printf("%s: %s\n", what, g_fail == g_group_fail ? "ok" : "FAILED"); }

/* ---------------------------------------------------------------------------------
 * The hardware model: where each instruction keeps its operands (ISA documents).
 * --------------------------------------------------------------------------------- */
static int in_bits(const kl_accel_desc *d) {
  return !strcmp(d->in_type, "f32") ? 32 : !strcmp(d->in_type, "i8") ? 8 : 16;
}

/* A[i][k] held by (lane, e) */
static void hw_a(const kl_accel_desc *d, int lane, int e, int *i, int *k) {
  if (d->kind == KL_ACCEL_MFMA) { /* lane i + 32*(k/P), item k%P, P = K/2 */
    int P = d->k / 2;
    *i = lane % 32;
    *k = (lane / 32) * P + e;
  } else if (d->kind == KL_ACCEL_WMMA) { /* lanes i and i+16, item k */
    *i = lane % 16;
    *k = e;
  } else { /* mma.sync: g = lane/4, t = lane%4 */
    int P = 32 / in_bits(d), g = lane / 4, t = lane % 4, q = e / P, w = e % P;
    *i = g + 8 * (q % 2);
    *k = P * t + w + 4 * P * (q / 2);
  }
}
/* B[k][j] held by (lane, e) */
static void hw_b(const kl_accel_desc *d, int lane, int e, int *k, int *j) {
  if (d->kind == KL_ACCEL_MFMA) {
    int P = d->k / 2;
    *j = lane % 32;
    *k = (lane / 32) * P + e;
  } else if (d->kind == KL_ACCEL_WMMA) {
    *j = lane % 16;
    *k = e;
  } else {
    int P = 32 / in_bits(d), g = lane / 4, t = lane % 4, q = e / P, w = e % P;
    *k = P * t + w + 4 * P * q;
    *j = g;
  }
}
/* D[i][j] held by (lane, register r) */
static void hw_c(const kl_accel_desc *d, int lane, int r, int *i, int *j) {
  if (d->kind == KL_ACCEL_MFMA) { /* lane j + 32*((i/4)%2), register 4*(i/8) + i%4 */
    *j = lane % 32;
    *i = 8 * (r / 4) + 4 * (lane / 32) + r % 4;
  } else if (d->kind == KL_ACCEL_WMMA) { /* lane j + 16*(i%2), register i/2 */
    *j = lane % 16;
    *i = 2 * r + lane / 16;
  } else { /* row g + 8*(r/2), column 2t + r%2 */
    int g = lane / 4, t = lane % 4;
    *i = g + 8 * (r / 2);
    *j = 2 * t + r % 2;
  }
}

static void test_layouts(void) {
  group_begin();
  for (int di = 0; di < kl_accel_desc_count(); di++) {
    const kl_accel_desc *d = kl_accel_desc_at(di);
    int64_t al = kl_accel_frag_len(&d->a), bl = kl_accel_frag_len(&d->b), cl = kl_accel_frag_len(&d->c);
    CHECK(al * d->wave >= (int64_t)d->m * d->k && bl * d->wave >= (int64_t)d->n * d->k &&
              cl * d->wave == (int64_t)d->m * d->n,
          "%s: fragment sizes %lld %lld %lld", d->intrinsic, (long long)al, (long long)bl, (long long)cl);
    int bad = 0;
    for (int lane = 0; lane < d->wave; lane++) {
      for (int e = 0; e < al; e++) {
        int64_t x, y;
        int i, k;
        kl_accel_frag_eval(&d->a, lane, e, &x, &y);
        hw_a(d, lane, e, &i, &k);
        if (x != i || y != k || i >= d->m || k >= d->k) bad++;
      }
      for (int e = 0; e < bl; e++) {
        int64_t x, y;
        int k, j;
        kl_accel_frag_eval(&d->b, lane, e, &x, &y);
        hw_b(d, lane, e, &k, &j);
        if (x != j || y != k || j >= d->n || k >= d->k) bad++;
      }
      for (int r = 0; r < cl; r++) {
        int64_t x, y;
        int i, j;
        kl_accel_frag_eval(&d->c, lane, r, &x, &y);
        hw_c(d, lane, r, &i, &j);
        if (x != i || y != j) bad++;
      }
    }
    CHECK(bad == 0, "%s: %d layout entries differ from the ISA formulas", d->intrinsic, bad);
    CHECK(d->kpack >= 1 && d->k % d->kpack == 0, "%s kpack %d", d->intrinsic, d->kpack);
    unsigned id = LLVMLookupIntrinsicID(d->intrinsic, strlen(d->intrinsic));
    CHECK(id != 0, "LLVM has no %s", d->intrinsic);
  }
  /* which instruction each target uses */
  static const struct {
    const char *target, *type, *want;
  } sel[] = {
    { "gfx908", "f32", "llvm.amdgcn.mfma.f32.32x32x2f32" },
    { "gfx908", "f16", "llvm.amdgcn.mfma.f32.32x32x8f16" },
    { "gfx908", "bf16", "llvm.amdgcn.mfma.f32.32x32x4bf16" },
    { "gfx908", "i8", "llvm.amdgcn.mfma.i32.32x32x8i8" },
    { "gfx90a", "bf16", "llvm.amdgcn.mfma.f32.32x32x8bf16.1k" },
    { "gfx90a", "f16", "llvm.amdgcn.mfma.f32.32x32x8f16" },
    { "gfx942", "i8", "llvm.amdgcn.mfma.i32.32x32x16.i8" },
    { "gfx942", "f32", "llvm.amdgcn.mfma.f32.32x32x2f32" },
    { "gfx1100", "f16", "llvm.amdgcn.wmma.f32.16x16x16.f16" },
    { "gfx1100", "bf16", "llvm.amdgcn.wmma.f32.16x16x16.bf16" },
    { "gfx1100", "i8", "llvm.amdgcn.wmma.i32.16x16x16.iu8" },
    { "gfx1100", "f32", NULL },
    { "sm_80", "f16", "llvm.nvvm.mma.m16n8k16.row.col.f32.f32" },
    { "sm_90", "bf16", "llvm.nvvm.mma.m16n8k16.row.col.bf16" },
    { "sm_90", "i8", "llvm.nvvm.mma.m16n8k32.row.col.s8" },
    { "sm_90", "f32", NULL },
    { "gfx1030", "f16", NULL },
    { "host", "f16", NULL },
    { "gfx942", "f64", NULL },
  };
  kl_ctx *ctx = kl_test_ctx();
  for (size_t i = 0; i < sizeof sel / sizeof *sel; i++) {
    const kl_type *t = kl_type_scalar(ctx, kl_scalar_kind_from_name(sel[i].type, strlen(sel[i].type)));
    const kl_accel_desc *d = kl_accel_desc_for(kl_target_lookup(sel[i].target), t);
    CHECK((!d && !sel[i].want) || (d && sel[i].want && !strcmp(d->intrinsic, sel[i].want)), "%s %s: got %s, want %s",
          sel[i].target, sel[i].type, d ? d->intrinsic : "none", sel[i].want ? sel[i].want : "none");
  }
  kl_ctx_destroy(ctx);
  group_end("layouts: descriptors match the ISA lane formulas; instruction per target and type");
}

/* ---------------------------------------------------------------------------------
 * perf configs
 * --------------------------------------------------------------------------------- */
static void test_configs(void) {
  group_begin();
  char err[512], buf[160], buf2[160];
  kl_accel_config c;
  CHECK(kl_accel_config_parse("v2:64,64,32,32,32,4", &c, err, sizeof err), "%s", err);
  CHECK(c.m_per_block == 64 && c.n_per_block == 64 && c.k_per_block == 32 && c.m_per_wave == 32 && c.n_per_wave == 32 &&
            c.kpack == 4,
        "fields");
  CHECK(!strcmp(kl_accel_config_print(&c, buf, sizeof buf), "v2:64,64,32,32,32,4"), "print %s", buf);
  CHECK(c.split_k == 1, "no splitK field: 1");
  CHECK(kl_accel_config_parse("v2:64,64,32,32,32,4,16", &c, err, sizeof err) && c.split_k == 16, "%s", err);
  CHECK(!strcmp(kl_accel_config_print(&c, buf, sizeof buf), "v2:64,64,32,32,32,4,16"), "print %s", buf);
  static const struct {
    const char *s, *want;
  } bad[] = {
    { "v1:64,64,32,32,32,4", "v2:" },
    { "v2:64,64,32,32,32", "missing kpack" },
    { "v2:64,64,32,32,32,4,1,1", "too many" },
    { "v2:64,64,32,32,32,4,0", "splitK must be positive" },
    { "v2:64,x,32,32,32,4", "nPerBlock" },
    { "v2:64,64,0,32,32,4", "kPerBlock must be positive" },
    { "v2:64,64,,32,32,4", "kPerBlock is empty" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    err[0] = 0;
    CHECK(!kl_accel_config_parse(bad[i].s, &c, err, sizeof err) && strstr(err, bad[i].want), "%s: %s", bad[i].s, err);
  }
  const kl_target *g942 = kl_target_lookup("gfx942"), *s90 = kl_target_lookup("sm_90"),
                  *g11 = kl_target_lookup("gfx1100");
  kl_ctx *ctx = kl_test_ctx();
  const kl_type *f16 = kl_type_scalar(ctx, KL_TY_F16);
  const kl_accel_desc *mf = kl_accel_desc_for(g942, f16), *mm = kl_accel_desc_for(s90, f16),
                      *wm = kl_accel_desc_for(g11, f16);
  static const struct {
    const char *s, *want;
    int which;
  } inval[] = {
    { "v2:64,64,32,48,32,4", "mPerWave (48) is not a multiple of the instruction's M (32", 0 },
    { "v2:64,64,32,32,24,4", "nPerWave (24)", 0 },
    { "v2:96,64,32,64,32,4", "mPerBlock (96) is not a multiple of mPerWave (64)", 0 },
    { "v2:64,64,12,32,32,4", "kPerBlock (12) is not a multiple of the instruction's K (8", 0 },
    { "v2:64,64,16,32,32,32", "kPerBlock (16) is not a multiple of kpack (32)", 0 },
    { "v2:256,256,32,32,32,4", "exceeds the max workgroup size", 0 },
    { "v2:128,128,512,64,64,8", "tile larger than LDS", 0 },
    { "v2:256,128,16,256,128,4", "accumulators per lane", 0 },
    { "v2:16,128,16,16,8,2", "kPerBlock*mPerBlock (256) is not a multiple of the block size 512", 1 },
    { "v2:128,128,128,64,32,2", "larger than static shared memory", 1 },
    { "v2:32,16,8,16,16,8", "kPerBlock (8) is not a multiple of the instruction's K (16", 2 },
  };
  const kl_accel_desc *ds[3] = { mf, mm, wm };
  const kl_target *ts[3] = { g942, s90, g11 };
  for (size_t i = 0; i < sizeof inval / sizeof *inval; i++) {
    err[0] = 0;
    CHECK(kl_accel_config_parse(inval[i].s, &c, err, sizeof err), "%s", err);
    CHECK(!kl_accel_config_validate(&c, ts[inval[i].which], ds[inval[i].which], 2, err, sizeof err) &&
              strstr(err, inval[i].want),
          "%s: %s", inval[i].s, err);
  }
  CHECK(kl_accel_config_parse("v2:64,64,32,32,32,4", &c, err, sizeof err) &&
            kl_accel_config_validate(&c, g942, mf, 2, err, sizeof err),
        "%s", err);
  CHECK(kl_accel_block_size(&c, mf) == 256 && kl_accel_acc_per_lane(&c, mf) == 16, "bs %lld",
        (long long)kl_accel_block_size(&c, mf));
  int64_t mt, nt;
  CHECK(kl_accel_thread_tile(&c, mf, &mt, &nt) && mt * nt == 16 && (64 / mt) * (64 / nt) == 256, "tile %lldx%lld",
        (long long)mt, (long long)nt);
  /* the heuristic: valid and deterministic on every target / type / shape */
  static const int64_t shapes[][4] = { { 1, 1, 1, 1 },          { 1, 7, 3, 5 },          { 2, 17, 129, 33 },
                                       { 1, 1024, 1024, 1024 }, { 1, 4096, 4096, 4096 }, { 8, 64, 64, 4096 },
                                       { 1, 49, 512, 2048 },    { 3, 1000, 30, 8 } };
  static const char *const tnames[] = { "gfx908", "gfx90a", "gfx942", "gfx1100", "sm_80", "sm_90" };
  static const char *const types[] = { "f32", "f16", "bf16", "i8" };
  int nvalid = 0;
  for (size_t ti = 0; ti < 6; ti++)
    for (size_t ty = 0; ty < 4; ty++) {
      const kl_target *t = kl_target_lookup(tnames[ti]);
      const kl_type *et = kl_type_scalar(ctx, kl_scalar_kind_from_name(types[ty], strlen(types[ty])));
      const kl_accel_desc *d = kl_accel_desc_for(t, et);
      if (!d) continue;
      int eb = (kl_type_bits(et) + 7) / 8;
      for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        kl_accel_config a, b;
        bool ok = kl_accel_config_heuristic(t, d, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], eb, &a);
        CHECK(ok, "%s %s: no config", tnames[ti], types[ty]);
        if (!ok) continue;
        CHECK(kl_accel_config_validate(&a, t, d, eb, err, sizeof err), "%s %s: heuristic config invalid: %s",
              tnames[ti], types[ty], err);
        CHECK(kl_accel_config_heuristic(t, d, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], eb, &b) &&
                  !memcmp(&a, &b, sizeof a),
              "not deterministic");
        if (t->arch == KL_ARCH_AMDGPU) /* AMDGPU: the whole LDS, 512 threads, no spill by the estimate */
          CHECK(a.k_per_block * (a.m_per_block + a.n_per_block) * eb <= t->lds_bytes &&
                    kl_accel_block_size(&a, d) <= 512 && kl_accel_amd_fits_registers(&a, t, d, eb, err, sizeof err),
                "%s %s: heuristic tile %s beyond LDS / 512 threads / registers: %s", tnames[ti], types[ty],
                kl_accel_config_print(&a, buf, sizeof buf), err);
        else
          CHECK(a.k_per_block * (a.m_per_block + a.n_per_block) * eb <= 48 * 1024 && kl_accel_block_size(&a, d) <= 256,
                "%s %s: heuristic tile %s beyond 48 KiB LDS / 256 threads", tnames[ti], types[ty],
                kl_accel_config_print(&a, buf, sizeof buf));
        nvalid++;
      }
    }
  CHECK(nvalid == 21 * 8, "%d heuristic configs", nvalid);
  /* the heuristic for both operands async (cp.async): mma.sync on sm_80 / sm_90 takes 8-warp
   * 256x128 / 128x256 tiles of K 32 for 4096^3 (measured 391 / 385 TFLOP/s against 353 for
   * 128x128x32 on an H100), valid, K at most KL_CP_ASYNC_KB_MAX on large grids; few-block
   * grids and AMD get the plain heuristic's pick */
  for (size_t ti = 0; ti < 6; ti++)
    for (size_t ty = 0; ty < 4; ty++) {
      const kl_target *t = kl_target_lookup(tnames[ti]);
      const kl_type *et = kl_type_scalar(ctx, kl_scalar_kind_from_name(types[ty], strlen(types[ty])));
      const kl_accel_desc *d = kl_accel_desc_for(t, et);
      if (!d) continue;
      int eb = (kl_type_bits(et) + 7) / 8;
      bool nv = d->kind == KL_ACCEL_MMA_SYNC;
      for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        kl_accel_config a, b;
        bool ok = kl_accel_config_heuristic_async(t, d, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], eb,
                                                  &a) &&
            kl_accel_config_heuristic(t, d, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], eb, &b);
        /* large grids (more 128x128 tiles than SMs) on mma.sync: K <= KL_CP_ASYNC_KB_MAX; else the plain pick */
        bool large = nv &&
            shapes[s][0] * ((shapes[s][1] + 127) / 128) * ((shapes[s][2] + 127) / 128) > t->compute_units;
        CHECK(ok && kl_accel_config_validate(&a, t, d, eb, err, sizeof err) &&
                  (large ? a.k_per_block <= KL_CP_ASYNC_KB_MAX : !memcmp(&a, &b, sizeof a)),
              "%s %s: async heuristic %s (plain %s)", tnames[ti], types[ty], kl_accel_config_print(&a, buf, sizeof buf),
              kl_accel_config_print(&b, buf2, sizeof buf2));
      }
      if (nv && eb == 2) {
        kl_accel_config a;
        CHECK(kl_accel_config_heuristic_async(t, d, 1, 4096, 4096, 4096, eb, &a) && a.k_per_block == 32 &&
                  a.m_per_block * a.n_per_block == 256 * 128 && kl_accel_block_size(&a, d) == 256,
              "%s %s 4096^3: async heuristic %s, want 256x128 / 128x256 x32", tnames[ti], types[ty],
              kl_accel_config_print(&a, buf, sizeof buf));
      }
    }
  /* big problems get big tiles, tiny ones small tiles */
  kl_accel_config big, small;
  CHECK(kl_accel_config_heuristic(g942, mf, 1, 8192, 8192, 8192, 2, &big) &&
            big.m_per_block * big.n_per_block >= 64 * 128,
        "8192^3 tile %lldx%lld", (long long)big.m_per_block, (long long)big.n_per_block);
  /* gfx942, M, N, K >= 2048 with enough tiles to fill the chip: at least 256x128 (bytes per FLOP); 2048^3
   * takes 128x128 (256 workgroups for 304 CUs, where 256x128 would leave 176 idle); the register estimate
   * rejects 256 AGPRs */
  static const int64_t bigs[][3] = {
    { 4096, 4096, 4096 }, { 8192, 8192, 8192 }, { 2048, 8192, 4096 }, { 8192, 2048, 2048 }, { 4096, 4096, 2048 }
  };
  for (int eb = 2; eb <= 4; eb += 2)
    for (size_t i = 0; i < sizeof bigs / sizeof *bigs; i++) {
      const kl_accel_desc *dd = eb == 2 ? mf : kl_accel_desc_for(g942, kl_type_scalar(ctx, KL_TY_F32));
      CHECK(kl_accel_config_heuristic(g942, dd, 1, bigs[i][0], bigs[i][1], bigs[i][2], eb, &big) &&
                ((big.m_per_block >= 256 && big.n_per_block >= 128) ||
                 (big.m_per_block >= 128 && big.n_per_block >= 256)),
            "gfx942 %lldx%lldx%lld (%d-byte): tile %s", (long long)bigs[i][0], (long long)bigs[i][1],
            (long long)bigs[i][2], eb, kl_accel_config_print(&big, buf, sizeof buf));
    }
  CHECK(kl_accel_config_parse("v2:256,256,32,128,128,8", &c, err, sizeof err) &&
            kl_accel_config_validate(&c, g942, mf, 2, err, sizeof err) &&
            !kl_accel_amd_fits_registers(&c, g942, mf, 2, err, sizeof err) && strstr(err, "would spill"),
        "256 AGPRs spill (308 bytes of scratch with LLVM 19): %s", err);
  CHECK(kl_accel_config_parse("v2:256,64,64,64,64,16", &c, err, sizeof err) &&
            kl_accel_config_validate(&c, g11, wm, 2, err, sizeof err) &&
            !kl_accel_amd_fits_registers(&c, g11, wm, 2, err, sizeof err) && strstr(err, "would spill"),
        "gfx1100 256x64x64 with 64x64 wave tiles spills (36 bytes with LLVM 19): %s", err);
  CHECK(kl_accel_config_heuristic(g942, mf, 1, 32, 32, 32, 2, &small) && small.m_per_block == 32 &&
            small.n_per_block == 32,
        "32^3 tile %lldx%lld", (long long)small.m_per_block, (long long)small.n_per_block);
  /* path selection */
  kl_accel_config sc;
  const kl_accel_desc *sd = NULL;
  CHECK(kl_accel_select(g942, f16, f16, NULL, 1, 64, 64, 64, &sc, &sd, err, sizeof err) == 1 && sd == mf,
        "heuristic -> accel");
  CHECK(kl_accel_select(g942, f16, f16, "v1:64,64,16,4,4,1", 1, 64, 64, 64, &sc, &sd, err, sizeof err) == 0,
        "v1 -> FMA");
  CHECK(kl_accel_select(kl_target_lookup("gfx1030"), f16, f16, NULL, 1, 64, 64, 64, &sc, &sd, err, sizeof err) == 0,
        "gfx1030 -> FMA");
  CHECK(kl_accel_select(s90, kl_type_f32(ctx), kl_type_f32(ctx), NULL, 1, 64, 64, 64, &sc, &sd, err, sizeof err) == 0,
        "f32 sm_90 -> FMA");
  CHECK(kl_accel_select(s90, kl_type_f32(ctx), kl_type_f32(ctx), "v2:32,32,16,16,16,2", 1, 64, 64, 64, &sc, &sd, err,
                        sizeof err) == -1 &&
            strstr(err, "needs a matrix instruction for f32") && strstr(err, "sm_90"),
        "v2 on f32/sm_90: %s", err);
  CHECK(kl_accel_select(g942, f16, f16, "v2:64,64,32,48,32,4", 1, 64, 64, 64, &sc, &sd, err, sizeof err) == -1 &&
            strstr(err, "mPerWave"),
        "bad v2: %s", err);
  kl_ctx_destroy(ctx);
  group_end(
      "configs: v2 parse/print, validation errors name the field, heuristic valid and deterministic, path selection");
}

/* ---------------------------------------------------------------------------------
 * A lockstep SIMT interpreter of loop-level kernels
 * --------------------------------------------------------------------------------- */
typedef struct vslot {
  kl_value *k;
  double *v;
  int w;
} vslot;
typedef struct mem {
  kl_value *k;
  double *data;
  int64_t span;
  bool per_thread;
  /* LDS written by rock.async_copy: per element the writing thread (-1 none) and its group */
  int32_t *cp_writer, *cp_group;
  /* LDS races (rock.load / rock.store, lds_race): per element the last writing thread (-1
   * none) and the barrier count at its write; the reading thread since the last barrier
   * (-1 none, -2 several) and the barrier count at that read */
  int32_t *rc_w, *rc_r;
  int64_t *rc_wb, *rc_rb;
} mem;
#define CP_GROUPS 4096          /* rock.async_commit groups per thread and block (modelled) */
#define WG_Q      8             /* committed wgmma groups in flight per warpgroup (modelled) */
#define WG_NGRAN  (262144 / 16) /* 16-byte granules of the modelled shared window */
#define CLR_MAX   4             /* the CTA ranks of a cluster the empty-mbarrier model tracks */
typedef struct sim {
  int64_t grid; /* the launch's workgroups (rock.workgroup_count) */
  int nt;       /* threads per workgroup */
  int64_t bid;
  const kl_target *t;
  vslot *slots;
  int cap, n;
  mem mems[512];
  int nmems;
  bool bad;
  char err[600];
  int64_t nmma;
  /* LDS bank accounting (NVIDIA: 32 banks of 4 bytes, warps of 32 lanes): per LDS
   * rock.load ([0]) / rock.store ([1]) of a warp, the wavefronts it needs (per phase of
   * lanes that together move 128 bytes, the largest number of distinct 4-byte words in
   * one bank) against the fewest possible (the phases). At the IR's access widths: LLVM
   * may still merge narrow stores. */
  int64_t lds_wavefronts[2], lds_ideal[2];
  /* wgmma (Hopper, passes/rock_wgmma.h), per warpgroup: fenced since the last wait,
   * MMAs issued since the last commit, committed groups not yet waited for */
  bool wg_fenced[8];
  int wg_open[8], wg_groups[8];
  /* the in-flight protocol (PTX ISA, asynchronous warpgroup MMAs), on 16-byte granules of
   * the shared window (targets with wgmma): per warpgroup g, wg_rd[g][0] the granules its
   * uncommitted MMAs read, [1..wg_groups[g]] those of its committed groups in flight, oldest
   * first, [WG_Q + 1] those of groups a wait_group retired since the last barrier; per
   * granule, lds_dirty (a generic-proxy store since the last fence.proxy.async) and
   * lds_fenced (the barrier count at that fence, -1 never written). A store into a granule
   * that an in-flight group reads, or that another warpgroup's retired group read with no
   * barrier since, fails; so does an MMA reading a granule written without a proxy fence
   * and a barrier after it, and a global store while any group is in flight. */
  uint8_t (*wg_rd)[WG_Q + 2][WG_NGRAN];
  uint8_t *lds_dirty;
  int64_t *lds_fenced, barriers;
  int wg_cur;     /* the warpgroup whose MMA is being executed */
  int64_t rd_swz; /* the swizzle (bytes) of the descriptor it reads through */
  /* TMA + mbarrier (passes/rock_tma.h): the mbarriers (an LDS element each): expected
   * arrivals, arrivals missing in the current phase, pending transaction bytes, completed
   * phases; per thread the completed phases it observed through a wait; per 16-byte
   * granule the mbarrier (index + 1, 0 none) a TMA load wrote it under and the phase that
   * completes it. An MMA reading a granule before every thread of its warpgroup waited for
   * that phase fails; so does a TMA write into a granule an in-flight group reads, a wait
   * for a phase that cannot complete (a lockstep deadlock), an mbarrier used before init. */
  struct {
    mem *m;
    int64_t i, count, missing, tx, phase;
    bool live;
    int64_t *seen;
  } mb[16];
  int nmb;
  uint8_t *tma_bar;
  uint8_t *tma_swz; /* per granule: the swizzle (bytes / 16) of the TMA load that wrote it, 0 none */
  int64_t *tma_phase;
  int64_t ntma; /* TMA boxes executed */
  /* warp specialization (passes/rock_tma.h: ws_emit): the scf.if {ws_consumers} runs its
   * two roles as coroutines (exec_ws_split: one thread each, one running at a time),
   * the producer (region 1) first; an mbarrier wait whose phase has not completed yields
   * to the other role; both blocked with no mbarrier event since: a deadlock. Per granule
   * the mbarrier (index + 1, 0 none) and phase under which its wgmma readers released it
   * (an arrive after the wait_group that retired them); while a split runs, a TMA write
   * into a granule an earlier TMA load filled needs that release and a wait of the writing
   * thread for its phase. */
  bool ws_active;
  int ws_turn, ws_cur; /* the role running: 0 producer, 1 consumers, 2 the scheduler */
  bool ws_blocked[2], ws_done[2];
  int64_t ws_events, ws_ev_block[2];
  uint8_t *rel_bar;
  int64_t *rel_phase;
  /* rock.async_copy (cp.async) per thread: groups committed, groups retired by a wait
   * (every group below landed), and per group the barrier count at the wait that retired
   * it. The copy's data is written at issue; a read of an LDS element before the writer's
   * wait retired its group, or by another thread with no barrier after that wait, fails. */
  int32_t *cp_commits, *cp_retired;
  int64_t (*cp_bar)[CP_GROUPS];
  /* thread-block clusters (passes/rock_tma.h: cluster; the kernel's cluster_size C): the C
   * CTAs of a cluster run together as coroutines (cl_run: one at a time, each until it blocks
   * at a cluster barrier or an mbarrier wait whose phase has not completed; a round in which
   * none executes an op is a deadlock). A multicast rock.tma_load of rank r writes box r into
   * every CTA's LDS and completes its bytes on each CTA's own mbarrier (missing or not
   * initialised there: the init's cluster barrier is missing; the CTA exited: fails). Per
   * granule cl_rel: released for a TMA overwrite, set by a cluster barrier for the granules
   * whose wgmma readers a wait_group retired before it (in every CTA); a TMA write into a
   * granule an earlier TMA load filled needs that release, or (the empty-mbarrier form) one
   * through clr_bar / clr_ph: per granule and CTA rank r, the mbarrier of CTA r (index + 1, 0
   * none) and its phase on which a warpgroup of this CTA arrived (rock.mbarrier arrive_remote)
   * after the wait_group that retired its readers of the granule; a TMA write from CTA r then
   * needs its issuing thread to have waited for that phase (clr_on: the kernel arrives remotely:
   * without clusters too, every rank then this CTA). */
  struct clus *cl;
  int rank;
  uint8_t *cl_rel;
  uint8_t *clr_bar[CLR_MAX];
  int64_t *clr_ph[CLR_MAX];
  bool clr_on;
} sim;
typedef struct clus {
  sim *cta[16];
  int C, turn; /* turn: the CTA running, C the scheduler */
  bool done[16], abort;
  int64_t ops, gen;
  int arrived;
  int first_bad; /* the CTA that failed first (-1 none): its error is the cluster's */
} clus;
static pthread_mutex_t g_cl_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cl_cv = PTHREAD_COND_INITIALIZER;
/* a CTA of a cluster hands the turn to the scheduler and waits for its next turn */
static void cl_yield(sim *s) {
  clus *c = s->cl;
  c->turn = c->C;
  pthread_cond_broadcast(&g_cl_cv);
  while (c->turn != s->rank) pthread_cond_wait(&g_cl_cv, &g_cl_mu);
}

static void sfail(sim *s, kl_op *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void sfail(sim *s, kl_op *op, const char *fmt, ...) {
  if (s->bad) return;
  s->bad = true;
  if (s->cl && s->cl->first_bad < 0) s->cl->first_bad = s->rank;
  int n = snprintf(s->err, sizeof s->err, "'%s': ", op ? op->name : "?");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->err + n, sizeof s->err - n, fmt, ap);
  va_end(ap);
}

static uint64_t hp(const void *p) {
  uint64_t x = (uintptr_t)p;
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ull;
  return x ^ (x >> 29);
}
static vslot *find_slot(sim *s, kl_value *k) {
  for (uint64_t i = hp(k) & (s->cap - 1);; i = (i + 1) & (s->cap - 1))
    if (!s->slots[i].k || s->slots[i].k == k) return &s->slots[i];
}
static int width_of(const kl_type *t) { return t->kind == KL_TY_VECTOR ? (int)t->shape[0] : 1; }
/* storage of value k (created on first use) */
static double *val_w(sim *s, kl_value *k) {
  if ((s->n + 1) * 2 > s->cap) {
    vslot *old = s->slots;
    int oc = s->cap;
    s->cap = oc ? oc * 2 : 1024;
    s->slots = calloc(s->cap, sizeof *s->slots);
    for (int i = 0; i < oc; i++)
      if (old[i].k) *find_slot(s, old[i].k) = old[i];
    free(old);
  }
  vslot *sl = find_slot(s, k);
  if (!sl->k) {
    sl->k = k;
    sl->w = width_of(k->type);
    sl->v = malloc(sizeof(double) * s->nt * sl->w);
    for (int i = 0; i < s->nt * sl->w; i++) sl->v[i] = NAN;
    s->n++;
  }
  return sl->v;
}
static double *val_r(sim *s, kl_op *op, kl_value *k) {
  vslot *sl = s->cap ? find_slot(s, k) : NULL;
  if (!sl || !sl->k) {
    sfail(s, op, "operand used before its definition");
    return NULL;
  }
  return sl->v;
}
static void sim_reset_values(sim *s) {
  for (int i = 0; i < s->cap; i++) free(s->slots[i].v);
  free(s->slots);
  s->slots = NULL;
  s->cap = s->n = 0;
}
static mem *find_mem(sim *s, kl_value *k) {
  for (int i = 0; i < s->nmems; i++)
    if (s->mems[i].k == k) return &s->mems[i];
  return NULL;
}

static double round_to(const kl_type *t, double x) {
  switch (t->kind) {
    case KL_TY_F16: return kl_round_f16(x);
    case KL_TY_BF16: return kl_round_bf16(x);
    case KL_TY_F32: return kl_round_f32(x);
    case KL_TY_I1: return x != 0;
    case KL_TY_I8: return (double)(int8_t)(int64_t)x;
    case KL_TY_I32: return (double)(int32_t)(int64_t)x;
    default: return x;
  }
}
static const kl_type *elem_t(const kl_type *t) { return t->kind == KL_TY_VECTOR ? t->elem : t; }

/* fp8 in the interpreter: buffers of f8e4m3fn / f8e5m2 hold the byte codes (0..255), which
 * loads, stores and selects move unchanged; the formats (OCP 8-bit floats, as the PTX ISA's
 * e4m3 / e5m2) are decoded here, written out independently of core/dtype.c:
 *   e4m3: s eeee mmm, bias 7, no inf, S.1111.111 NaN; e5m2: s eeeee mm, bias 15, IEEE-like
 *   (exponent 31: inf / NaN); exponent 0: subnormal (m / 2^mbits * 2^(1 - bias)). */
static int fp8_ebits(const kl_type *t) { return t->kind == KL_TY_F8E4M3FN ? 4 : t->kind == KL_TY_F8E5M2 ? 5 : 0; }
static double fp8_decode(int ebits, int code) {
  int mbits = 7 - ebits, bias = (1 << (ebits - 1)) - 1;
  int sgn = (code >> 7) & 1, e = (code >> mbits) & ((1 << ebits) - 1), m = code & ((1 << mbits) - 1);
  double v;
  if (ebits == 4 && e == 15 && m == 7)
    v = NAN;
  else if (ebits == 5 && e == 31)
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = ldexp((double)m, 1 - bias - mbits);
  else
    v = ldexp((double)((1 << mbits) | m), e - bias - mbits);
  return sgn ? -v : v;
}
/* The code of an exactly representable value (the tests only store such), else -1. */
static int fp8_encode(int ebits, double x) {
  for (int c = 0; c < 256; c++) {
    double v = fp8_decode(ebits, c);
    if (v == x && (signbit(v) == signbit(x))) return c;
  }
  return -1;
}

/* The fp8 wgmma's accumulation (spec/lua/fp8_wgmma_rule.lua, measured on an H100 and an H200):
 * one k32 instruction truncates its addends, the f32 accumulator and the exact products,
 * toward zero to a multiple of 2^(emax - 13), emax the largest of the accumulator's exponent
 * and the products' alignment exponents, sums them exactly and truncates the sum toward zero
 * to 14 significant bits. A product's alignment exponent (fp8_align_exp) is e_a + e_b, each
 * operand m 2^e with e its stored exponent (a subnormal at the minimum normal exponent,
 * m < 1): floor(log2 |a b|) for normal operands, one less where m_a m_b >= 2; larger than the
 * product's own exponent for a subnormal operand (the e4m3fn probe rows kept two bits fewer). */
static int fp8_floor_log2(double x) {
  int e;
  frexp(fabs(x), &e);
  return e - 1;
}
static int fp8_align_exp(int ebits, int ca, int cb) {
  int mbits = 7 - ebits, bias = (1 << (ebits - 1)) - 1, e[2];
  int c[2] = { ca, cb };
  for (int i = 0; i < 2; i++) {
    int ef = (c[i] >> mbits) & ((1 << ebits) - 1);
    e[i] = ef ? ef - bias : 1 - bias;
  }
  return e[0] + e[1];
}
static double fp8_trunc(double x, double q) { return x < 0 ? -floor(-x / q) * q : floor(x / q) * q; }
/* acc plus the n products p[] (alignment exponents ex[]; zero products are no addends) */
static double fp8_rule_instr(double acc, const double *p, const int *ex, int n) {
  bool any = acc != 0;
  int emax = any ? fp8_floor_log2(acc) : 0;
  for (int i = 0; i < n; i++) {
    if (p[i] == 0) continue;
    if (!any || ex[i] > emax) emax = ex[i];
    any = true;
  }
  if (!any) return 0.0;
  double q = ldexp(1.0, emax - 13), r = fp8_trunc(acc, q);
  for (int i = 0; i < n; i++)
    if (p[i] != 0) r += fp8_trunc(p[i], q);
  return r == 0 ? 0.0 : fp8_trunc(r, ldexp(1.0, fp8_floor_log2(r) - 13)); /* the sum to 14 bits */
}

static double arith(sim *s, kl_op *op, const char *n, double x, double y, double z, const kl_type *rt,
                    const kl_type *at) {
  if (!strcmp(n, "arith.addf") || !strcmp(n, "arith.addi")) return round_to(rt, x + y);
  if (!strcmp(n, "arith.subf") || !strcmp(n, "arith.subi")) return round_to(rt, x - y);
  if (!strcmp(n, "arith.mulf") || !strcmp(n, "arith.muli")) return round_to(rt, x * y);
  if (!strcmp(n, "arith.divf")) return round_to(rt, x / y);
  if (!strcmp(n, "arith.negf")) return -x;
  if (!strcmp(n, "arith.maxf")) return isnan(x) || isnan(y) ? NAN : (x > y ? x : y);
  if (!strcmp(n, "arith.minf")) return isnan(x) || isnan(y) ? NAN : (x < y ? x : y);
  if (!strcmp(n, "arith.divsi") || !strcmp(n, "arith.remsi")) {
    int64_t a = (int64_t)x, b = (int64_t)y;
    if (b == 0) return 0;
    return round_to(rt, (double)(n[6] == 'd' ? a / b : a % b));
  }
  if (!strcmp(n, "arith.andi")) return (double)((int64_t)x & (int64_t)y);
  if (!strcmp(n, "arith.ori")) return (double)((int64_t)x | (int64_t)y);
  if (!strcmp(n, "arith.xori")) return round_to(rt, (double)((int64_t)x ^ (int64_t)y));
  if (!strcmp(n, "arith.maxsi")) return x > y ? x : y;
  if (!strcmp(n, "arith.minsi")) return x < y ? x : y;
  if (!strcmp(n, "arith.select")) return x != 0 ? y : z;
  if (!strcmp(n, "vector.broadcast")) return x;
  if (!strcmp(n, "arith.cmpi") || !strcmp(n, "arith.cmpf")) {
    const char *p = kl_op_attr_string(op, "predicate");
    if (!p) {
      sfail(s, op, "no predicate");
      return 0;
    }
    if (n[9] == 'f' && (isnan(x) || isnan(y))) return !strcmp(p, "ne");
    if (!strcmp(p, "eq")) return x == y;
    if (!strcmp(p, "ne")) return x != y;
    if (!strcmp(p, "lt")) return x < y;
    if (!strcmp(p, "le")) return x <= y;
    if (!strcmp(p, "gt")) return x > y;
    if (!strcmp(p, "ge")) return x >= y;
    sfail(s, op, "predicate %s", p);
    return 0;
  }
  if (!strcmp(n, "arith.extf") && fp8_ebits(at)) return fp8_decode(fp8_ebits(at), (int)x); /* exact */
  if (!strcmp(n, "arith.truncf") && fp8_ebits(rt)) {
    int c = fp8_encode(fp8_ebits(rt), x);
    if (c < 0) sfail(s, op, "truncf to %s of %g: not exact (not modelled)", kl_type_str(rt), x);
    return c;
  }
  if (!strcmp(n, "arith.extf") || !strcmp(n, "arith.truncf") || !strcmp(n, "arith.sitofp")) return round_to(rt, x);
  if (!strcmp(n, "arith.fptosi")) {
    if (isnan(x)) return 0;
    double lo = rt->kind == KL_TY_I8 ? -128 : rt->kind == KL_TY_I32 ? -2147483648.0 : -9.2e18;
    double hi = rt->kind == KL_TY_I8 ? 127 : rt->kind == KL_TY_I32 ? 2147483647.0 : 9.2e18;
    x = trunc(x);
    return x < lo ? lo : x > hi ? hi : x;
  }
  if (!strcmp(n, "arith.extsi")) return at->kind == KL_TY_I1 ? (x != 0) : x;
  if (!strcmp(n, "arith.trunci") || !strcmp(n, "arith.index_cast")) return round_to(rt, x);
  if (!strncmp(n, "math.", 5)) { /* transcendental: computed in f32 on the GPU; exact here */
    const char *f = n + 5;
    double r = !strcmp(f, "exp") ? exp(x)
        : !strcmp(f, "log")      ? log(x)
        : !strcmp(f, "tanh")     ? tanh(x)
        : !strcmp(f, "sqrt")     ? sqrt(x)
        : !strcmp(f, "rsqrt")    ? 1 / sqrt(x)
        : !strcmp(f, "absf")     ? fabs(x)
        : !strcmp(f, "powf")     ? pow(x, y)
                                 : NAN;
    if (isnan(r) && !isnan(x) && strcmp(f, "log") && strcmp(f, "sqrt") && strcmp(f, "rsqrt") && strcmp(f, "powf"))
      sfail(s, op, "unsupported by the test interpreter");
    return round_to(rt, r);
  }
  sfail(s, op, "unsupported by the test interpreter");
  return 0;
}

static void exec_block(sim *s, kl_block *b, const bool *mask);
static void exec_ws_split(sim *s, kl_op *op, const double *c, const bool *mask);

static bool uniform(sim *s, kl_op *op, kl_value *v, const bool *mask, int64_t *out) {
  double *x = val_r(s, op, v);
  if (!x) return false;
  bool first = true;
  for (int t = 0; t < s->nt; t++) {
    if (!mask[t]) continue;
    if (first) {
      *out = (int64_t)x[t];
      first = false;
    } else if ((int64_t)x[t] != *out) {
      sfail(s, op, "loop bound differs between threads");
      return false;
    }
  }
  if (first) *out = 0;
  return true;
}

/* element address of a rock.load / rock.store; false if out of the buffer */
static bool addr(sim *s, kl_op *op, int bi, int th, int w, mem **mo, int64_t *a) {
  kl_value *buf = op->opnds[bi].value;
  mem *m = find_mem(s, buf);
  if (!m) {
    sfail(s, op, "buffer operand is not an argument or an executed rock.alloc");
    return false;
  }
  const kl_type *bt = buf->type;
  int64_t x = 0;
  for (int i = 0; i < bt->rank; i++) {
    double *iv = val_r(s, op, op->opnds[bi + 1 + i].value);
    if (!iv) return false;
    x += (int64_t)iv[th] * bt->strides[i];
  }
  if (x < 0 || x + w > m->span) {
    sfail(s, op, "thread %d of workgroup %lld accesses element %lld..%lld of %s (span %lld)", th, (long long)s->bid,
          (long long)x, (long long)(x + w - 1), bt->text, (long long)m->span);
    return false;
  }
  *mo = m;
  *a = x + (m->per_thread ? th * m->span : 0);
  return true;
}

/* Adds one LDS access of the lanes of each warp (element addresses a[t], w elements of
 * eb bytes each per lane) to the bank accounting. */
static void count_banks(sim *s, int st, const int64_t *a, const bool *mask, int w, int eb) {
  int lane_bytes = w * eb, per_phase = lane_bytes >= 4 ? 32 / (lane_bytes / 4 > 0 ? lane_bytes / 4 : 1) : 32;
  if (per_phase < 1) per_phase = 1;
  for (int w0 = 0; w0 < s->nt; w0 += 32)
    for (int p0 = w0; p0 < w0 + 32 && p0 < s->nt; p0 += per_phase) {
      int64_t words[32 * 4];
      int nw = 0, any = 0;
      for (int t = p0; t < p0 + per_phase && t < s->nt; t++) {
        if (!mask[t]) continue;
        any = 1;
        for (int64_t b = a[t] * eb / 4; b <= (a[t] * eb + lane_bytes - 1) / 4; b++) {
          int j = 0;
          while (j < nw && words[j] != b) j++;
          if (j == nw && nw < 32 * 4) words[nw++] = b;
        }
      }
      if (!any) continue;
      int per_bank[32] = { 0 }, worst = 0;
      for (int j = 0; j < nw; j++) {
        int bk = (int)(words[j] % 32);
        if (++per_bank[bk] > worst) worst = per_bank[bk];
      }
      s->lds_wavefronts[st] += worst;
      s->lds_ideal[st] += 1;
    }
}

/* The LDS race check of rock.load / rock.store (every workgroup, every target): thread t
 * accesses elements a .. a + n - 1 of m. A read of an element another thread wrote, or a
 * write of one another thread read or wrote, with no barrier between the two accesses
 * fails (the lock-step order is one legal order; the barriers are what make every order
 * give the same result). */
static void lds_race(sim *s, kl_op *op, mem *m, int64_t a, int64_t n, int t, bool ld) {
  int64_t now = s->barriers;
  for (int64_t e = a; e < a + n && e < m->span && !s->bad; e++) {
    if (m->rc_w[e] >= 0 && m->rc_w[e] != t && m->rc_wb[e] == now)
      sfail(s, op, "thread %d %s LDS element %lld that thread %d wrote with no barrier since (a race)", t,
            ld ? "reads" : "writes", (long long)e, m->rc_w[e]);
    else if (!ld && m->rc_rb[e] == now && m->rc_r[e] != t && m->rc_r[e] != -1)
      sfail(s, op, "thread %d writes LDS element %lld that thread %d read with no barrier since (a race)", t,
            (long long)e, m->rc_r[e] == -2 ? -1 : m->rc_r[e]);
    if (ld) {
      if (m->rc_rb[e] != now)
        m->rc_rb[e] = now, m->rc_r[e] = t;
      else if (m->rc_r[e] != t)
        m->rc_r[e] = -2;
    } else
      m->rc_w[e] = t, m->rc_wb[e] = now;
  }
}
/* Whether thread r may read LDS element a of m (rock.async_copy protocol, see sim). */
static void cp_check_read(sim *s, kl_op *op, mem *m, int64_t a, int64_t n, int r) {
  for (int64_t e = a; m->cp_writer && e < a + n && !s->bad; e++) {
    int w = m->cp_writer[e];
    if (w < 0) continue;
    int g = m->cp_group[e];
    if (g >= s->cp_retired[w])
      sfail(s, op, "thread %d reads an LDS element whose cp.async (thread %d, group %d) no wait_group retired", r, w,
            g);
    else if (r != w && s->barriers <= s->cp_bar[w][g])
      sfail(s, op,
            "thread %d reads an LDS element thread %d copied asynchronously with no barrier after its wait_group", r,
            w);
  }
}
static void exec_async_copy(sim *s, kl_op *op, const bool *mask) {
  int64_t len = 0;
  kl_op_attr_i64(op, "len", &len);
  const kl_type *st = op->opnds[0].value->type;
  int di = 1 + st->rank;
  const kl_type *dt = op->opnds[di].value->type;
  bool has_valid = op->nopnds > di + 1 + dt->rank;
  double *valid = has_valid ? val_r(s, op, op->opnds[op->nopnds - 1].value) : NULL;
  if (has_valid && !valid) return;
  int64_t *as = malloc(sizeof *as * s->nt);
  mem *dm = NULL;
  for (int t = 0; t < s->nt && !s->bad; t++) {
    as[t] = 0;
    if (!mask[t]) continue;
    mem *sm2, *m;
    int64_t sa = 0, da;
    bool v = !valid || valid[t] != 0;
    if ((v && !addr(s, op, 0, t, (int)len, &sm2, &sa)) || !addr(s, op, di, t, (int)len, &m, &da)) break;
    if (m->per_thread || m->k->type->space != KL_SPACE_LDS) {
      sfail(s, op, "rock.async_copy into a buffer that is not LDS");
      break;
    }
    if (!m->cp_writer) {
      m->cp_writer = malloc(sizeof *m->cp_writer * m->span);
      m->cp_group = malloc(sizeof *m->cp_group * m->span);
      for (int64_t e = 0; e < m->span; e++) m->cp_writer[e] = -1;
    }
    if (s->cp_commits[t] >= CP_GROUPS) {
      sfail(s, op, "more than %d cp.async groups", CP_GROUPS);
      break;
    }
    for (int64_t i = 0; i < len; i++) {
      m->data[da + i] = v ? round_to(dt->elem, sm2->data[sa + i]) : 0;
      m->cp_writer[da + i] = t;
      m->cp_group[da + i] = s->cp_commits[t];
    }
    as[t] = da;
    dm = m;
  }
  if (!s->bad && dm && s->t && s->t->arch != KL_ARCH_HOST)
    count_banks(s, 1, as, mask, (int)len, (kl_type_bits(dt->elem) + 7) / 8);
  free(as);
}

/* ldmatrix / stmatrix (m8n8 b16): the element that lane l's register half x of warp w0's
 * fragment holds (its 8 x 4-byte rows at the row addresses as[w0 + 8 j ..], .trans: transposed) */
static int64_t mat_elem(const int64_t *as, int w0, int l, int x, bool trans) {
  int j = x / 2;
  return trans ? as[w0 + 8 * j + 2 * (l % 4) + x % 2] + l / 4 : as[w0 + 8 * j + l / 4] + 2 * (l % 4) + x % 2;
}
/* the LDS wavefronts of matrix j's phase (8 rows of 16 bytes: the most rows on one bank) */
static int mat_phase_wavefronts(const int64_t *as, int w0, int j) {
  int per_bank[32] = { 0 }, worst = 0;
  for (int r = 0; r < 8; r++)
    for (int q = 0; q < 4; q++) {
      int bk = (int)(((as[w0 + 8 * j + r] * 2) / 4 + q) % 32);
      if (++per_bank[bk] > worst) worst = per_bank[bk];
    }
  return worst;
}
/* rock.ldmatrix {num = N, trans}: the PTX ISA's ldmatrix.sync.aligned.m8n8.xN[.trans].b16
 * written out here: lane 8j + r gives the address of row r of matrix j (16 bytes, 16-byte
 * aligned); lane l receives per matrix j the elements (row l/4, columns 2(l%4), 2(l%4)+1),
 * with .trans (rows 2(l%4), 2(l%4)+1, column l/4). Banks: one phase per matrix (8 rows of
 * 16 bytes). */
static int64_t g_nldmatrix;
static void exec_ldmatrix(sim *s, kl_op *op, const bool *mask) {
  int64_t num = 0;
  kl_op_attr_i64(op, "num", &num);
  const kl_attr *tr = kl_op_attr(op, "trans");
  bool trans = tr && tr->i;
  int nt = s->nt, w = (int)(2 * num);
  if (nt % 32) {
    sfail(s, op, "workgroup of %d threads is not whole warps", nt);
    return;
  }
  int64_t *as = malloc(sizeof *as * nt);
  mem *m = NULL;
  for (int t = 0; t < nt && !s->bad; t++) {
    if (!mask[t]) sfail(s, op, "thread %d inactive: ldmatrix is warp-synchronous", t);
    if (!s->bad && addr(s, op, 0, t, 8, &m, &as[t]) && as[t] % 8)
      sfail(s, op, "row address %lld of thread %d is not 16-byte aligned", (long long)as[t], t);
    if (!s->bad) cp_check_read(s, op, m, as[t], 8, t);
  }
  double *o = s->bad ? NULL : val_w(s, &op->results[0]);
  for (int w0 = 0; o && w0 < nt; w0 += 32) {
    for (int l = 0; l < 32; l++)
      for (int x = 0; x < w; x++) { o[(w0 + l) * w + x] = m->data[mat_elem(as, w0, l, x, trans)]; }
    for (int j = 0; j < num; j++) {
      int worst = mat_phase_wavefronts(as, w0, j);
      s->lds_wavefronts[0] += worst;
      s->lds_ideal[0] += 1;
    }
  }
  g_nldmatrix++;
  free(as);
}

static void exec_mma(sim *s, kl_op *op, const bool *mask) {
  const kl_accel_desc *d = kl_accel_desc_by_intrinsic(kl_op_attr_string(op, "instr"));
  if (!d) {
    sfail(s, op, "unknown instr");
    return;
  }
  if (s->t->accel != d->kind || s->t->wave_size != d->wave) {
    sfail(s, op, "instruction not available on %s", s->t->name);
    return;
  }
  double *a = val_r(s, op, op->opnds[0].value), *b = val_r(s, op, op->opnds[1].value),
         *c = val_r(s, op, op->opnds[2].value);
  if (!a || !b || !c) return;
  int aw = width_of(op->opnds[0].value->type), bw = width_of(op->opnds[1].value->type),
      cw = width_of(op->opnds[2].value->type);
  double *out = val_w(s, &op->results[0]);
  if (s->nt % d->wave) {
    sfail(s, op, "workgroup of %d threads is not whole waves", s->nt);
    return;
  }
  int M = d->m, N = d->n, K = d->k;
  double *A = malloc(sizeof(double) * M * K), *B = malloc(sizeof(double) * K * N), *C = malloc(sizeof(double) * M * N);
  char *sa = malloc(M * K), *sb = malloc(K * N), *sc = malloc(M * N);
  for (int w0 = 0; w0 < s->nt && !s->bad; w0 += d->wave) {
    int active = 0;
    for (int l = 0; l < d->wave; l++) active += mask[w0 + l];
    if (active == 0) continue;
    if (active != d->wave) {
      sfail(s, op, "executed by %d of %d lanes of a wave", active, d->wave);
      break;
    }
    memset(sa, 0, M * K);
    memset(sb, 0, K * N);
    memset(sc, 0, M * N);
    for (int l = 0; l < d->wave; l++) {
      int th = w0 + l;
      for (int e = 0; e < aw; e++) {
        int i, k;
        hw_a(d, l, e, &i, &k);
        double v = a[th * aw + e];
        if (sa[i * K + k] && A[i * K + k] != v && !(isnan(v) && isnan(A[i * K + k])))
          sfail(s, op, "replicated A[%d][%d] differs between lanes", i, k);
        A[i * K + k] = v;
        sa[i * K + k] = 1;
      }
      for (int e = 0; e < bw; e++) {
        int k, j;
        hw_b(d, l, e, &k, &j);
        double v = b[th * bw + e];
        if (sb[k * N + j] && B[k * N + j] != v && !(isnan(v) && isnan(B[k * N + j])))
          sfail(s, op, "replicated B[%d][%d] differs between lanes", k, j);
        B[k * N + j] = v;
        sb[k * N + j] = 1;
      }
      for (int r = 0; r < cw; r++) {
        int i, j;
        hw_c(d, l, r, &i, &j);
        if (sc[i * N + j]) sfail(s, op, "C[%d][%d] held twice", i, j);
        C[i * N + j] = c[th * cw + r];
        sc[i * N + j] = 1;
      }
    }
    for (int i = 0; i < M * K; i++)
      if (!sa[i]) sfail(s, op, "A element %d not held by any lane", i);
    for (int i = 0; i < K * N; i++)
      if (!sb[i]) sfail(s, op, "B element %d not held by any lane", i);
    for (int i = 0; i < M * N; i++)
      if (!sc[i]) sfail(s, op, "C element %d not held by any lane", i);
    const kl_type *ct = elem_t(op->results[0].type);
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        double acc = C[i * N + j];
        for (int k = 0; k < K; k++) acc += A[i * K + k] * B[k * N + j];
        C[i * N + j] = round_to(ct, acc);
      }
    for (int l = 0; l < d->wave; l++)
      for (int r = 0; r < cw; r++) {
        int i, j;
        hw_c(d, l, r, &i, &j);
        out[(w0 + l) * cw + r] = C[i * N + j];
      }
    s->nmma++;
  }
  free(A);
  free(B);
  free(C);
  free(sa);
  free(sb);
  free(sc);
}

/* ---- wgmma (Hopper warpgroup MMA), modelled from the PTX ISA, independent of
 * passes/rock_wgmma.c except for the descriptor encoding it is checked against ----
 * The shared window: LDS buffers in allocation order from byte 1024, each at a multiple
 * of 1024 after the previous one, all below 256 KiB (the descriptor's 18 address bits). A matrix descriptor (ISA "matrix descriptor format"): bits 0-13 start
 * address >> 4, 16-29 leading dimension byte offset >> 4, 32-45 stride dimension byte
 * offset >> 4, 49-51 base offset, 62-63 swizzle mode (0 none, 1 / 2 / 3: S = 128 / 64 / 32
 * bytes). Swizzled (K-major): row r of the operand at start + SBO * (r / 8) + S * (r % 8),
 * K element k eb * k bytes after it (the instruction's 32 bytes of K inside one S-byte
 * row), the byte address then through the hardware's swizzle: its 16-byte chunk bits
 * XORed with bits 7.. of the absolute shared address (log2(S / 16) bits; LBO unused).
 * A TMA load with swizzle S (rock.tma_load {swizzle}) writes box element f (dense, box[0]
 * fastest) at the destination + eb * f through the same swizzle. An MMA reading a granule
 * that a TMA load wrote with another swizzle than its descriptor's fails (the two layouts
 * disagree). No swizzle, K-major: the
 * operand (64 x K A, N x K B: rows x K; K = 16 for f16 / bf16, 32 for e4m3 / e5m2, whose
 * operands are K-major always) is 8-row x 16-byte core matrices of E = 16 / element bytes
 * K elements, row r at byte 16 * (r % 8) of its core matrix, K element k at
 * (16 / E) * (k % E); core matrix (r / 8, k / E) at start + SBO * (r / 8) + LBO * (k / E);
 * fp8 bytes decoded by fp8_decode. D (f32, m64nN): thread l of the
 * warpgroup, register i: row 16 (l / 32) + (l % 32) / 4 + 8 ((i / 2) % 2), column
 * 8 (i / 4) + 2 (l % 4) + i % 2. */
static int64_t lds_window(sim *s, mem *m) {
  int64_t base = 1024;
  for (int i = 0; i < s->nmems && &s->mems[i] != m; i++)
    if (s->mems[i].k->type->space == KL_SPACE_LDS) {
      int64_t bytes = s->mems[i].span * ((kl_type_bits(s->mems[i].k->type->elem) + 7) / 8);
      base += (bytes + 1023) / 1024 * 1024;
    }
  return base;
}
static void exec_wgmma_desc(sim *s, kl_op *op, const bool *mask) {
  int64_t lbo = 0, sbo = 0;
  kl_op_attr_i64(op, "lbo", &lbo);
  kl_op_attr_i64(op, "sbo", &sbo);
  int64_t off = 0; /* bytes past the indexed element (rock_wgmma.h) */
  kl_op_attr_i64(op, "offset", &off);
  int eb = (kl_type_bits(op->opnds[0].value->type->elem) + 7) / 8;
  double *o = val_w(s, &op->results[0]);
  for (int t = 0; t < s->nt && !s->bad; t++) {
    if (!mask[t]) continue;
    mem *m;
    int64_t a;
    if (!addr(s, op, 0, t, 1, &m, &a)) return;
    if (m->k->type->space != KL_SPACE_LDS) sfail(s, op, "descriptor of a non-LDS buffer");
    int64_t byte = lds_window(s, m) + a * eb + off;
    if (byte >= 16 * WG_NGRAN) sfail(s, op, "shared address %lld beyond the model's window", (long long)byte);
    /* the interpreter's values are doubles: the descriptor's fields below bit 46 are exact,
     * its swizzle mode (bits 62-63) travels at bits 52-53 instead */
    int64_t sw = 0;
    kl_op_attr_i64(op, "swizzle", &sw);
    o[t] = (double)kl_wgmma_desc_encode((uint32_t)byte, lbo, sbo) +
        (double)(kl_wgmma_desc_swizzle_bits(sw) >> 62) * 0x1p52;
  }
}
/* The element of the byte address (LDS only), or -1 (message). */
static void tma_check_read(sim *s, kl_op *op, int64_t gr) {
  if (!s->tma_bar || !s->tma_bar[gr]) return;
  int b = s->tma_bar[gr] - 1;
  for (int t = 128 * s->wg_cur; t < 128 * (s->wg_cur + 1) && t < s->nt && !s->bad; t++)
    if (s->mb[b].seen[t] <= s->tma_phase[gr])
      sfail(s, op,
            "reads shared byte %lld that a TMA load wrote before thread %d waited for phase %lld of mbarrier %lld",
            (long long)gr * 16, t, (long long)s->tma_phase[gr], (long long)s->mb[b].i);
}
static double lds_at(sim *s, kl_op *op, int64_t byte, int eb) {
  for (int i = 0; i < s->nmems; i++) {
    mem *m = &s->mems[i];
    if (m->k->type->space != KL_SPACE_LDS) continue;
    int64_t base = lds_window(s, m);
    if (byte >= base && byte < base + m->span * eb) {
      if ((byte - base) % eb) sfail(s, op, "misaligned element address %lld", (long long)byte);
      if ((kl_type_bits(m->k->type->elem) + 7) / 8 != eb)
        sfail(s, op, "reads %d-byte elements from an LDS buffer of %s", eb, kl_type_str(m->k->type->elem));
      int64_t gr = byte / 16;
      if (s->lds_dirty && gr < WG_NGRAN) {
        if (s->lds_dirty[gr])
          sfail(s, op, "reads shared byte %lld stored with no fence.proxy.async since", (long long)byte);
        else if (s->lds_fenced[gr] == s->barriers)
          sfail(s, op, "reads shared byte %lld stored and fenced with no barrier since", (long long)byte);
        s->wg_rd[s->wg_cur][0][gr] = 1;
        tma_check_read(s, op, gr);
        if (s->tma_swz && s->tma_swz[gr] * 16 != s->rd_swz)
          sfail(s, op,
                "reads shared byte %lld through a descriptor of swizzle %lld that a TMA load wrote with swizzle %d",
                (long long)byte, (long long)s->rd_swz, s->tma_swz[gr] * 16);
      }
      return m->data[(byte - base) / eb];
    }
  }
  sfail(s, op, "shared address %lld is in no LDS buffer", (long long)byte);
  return NAN;
}
/* sw: the swizzle in bytes (0 none) */
static void decode_desc(sim *s, kl_op *op, double dv, int64_t *start, int64_t *lbo, int64_t *sbo, int64_t *sw) {
  uint64_t d = (uint64_t)dv, mode = (d >> 52) & 3;
  d = (d & ((1ull << 52) - 1)) | (mode << 62);
  *start = (int64_t)(d & 0x3fff) << 4;
  *lbo = (int64_t)((d >> 16) & 0x3fff) << 4;
  *sbo = (int64_t)((d >> 32) & 0x3fff) << 4;
  *sw = mode == 1 ? 128 : mode == 2 ? 64 : mode == 3 ? 32 : 0;
  if ((d >> 49) & 7) sfail(s, op, "descriptor base offset %d (only 0 modelled)", (int)((d >> 49) & 7));
}
/* the hardware's sw-byte swizzle of a shared byte address (modelled here, not taken from
 * passes/rock_wgmma.h): the 16-byte chunk bits XORed with bits 7.. */
static int64_t swz(int64_t a, int64_t sw) { return a ^ (((a >> 7) & (sw / 16 - 1)) << 4); }
/* the shared byte of operand row r (M / N), K element k (eb-byte elements) through a
 * descriptor; tr: the instruction's imm-trans for it (MN-major, 16-bit types; PTX ISA's
 * canonical MN-major layouts: no swizzle ((8,m),(8,k)) : ((eb, SBO), (16, LBO)) bytes;
 * S-byte swizzle: rows of S / eb M / N elements, panels LBO apart, K row k % 8 at S * (k %
 * 8), 8-row K groups SBO apart, through the swizzle) */
static int64_t desc_byte(int64_t start, int64_t lbo, int64_t sbo, int64_t sw, bool tr, int r, int k, int E, int eb) {
  if (tr && !sw) return start + sbo * (r / 8) + eb * (r % 8) + 16 * (k % 8) + lbo * (k / 8);
  if (tr) return swz(start + lbo * (r / (sw / eb)) + sbo * (k / 8) + sw * (k % 8) + eb * (r % (sw / eb)), sw);
  if (!sw) return start + sbo * (r / 8) + lbo * (k / E) + 16 * (r % 8) + eb * (k % E);
  return swz(start + sbo * (r / 8) + sw * (r % 8) + eb * k, sw);
}
static void exec_wgmma(sim *s, kl_op *op, const bool *mask) {
  const char *instr = kl_op_attr_string(op, "instr");
  int N = 0, KI = 0;
  char ta[8] = "", tb[8] = "";
  if (!instr ||
      sscanf(instr, "wgmma.mma_async.sync.aligned.m64n%dk%d.f32.%4[bfem0-9].%4[bfem0-9]", &N, &KI, ta, tb) != 4 ||
      N < 8 || N > 256 || N % 8) {
    sfail(s, op, "unknown wgmma instruction %s", instr ? instr : "?");
    return;
  }
  /* the element bytes and fp8 exponent bits (0: f16 / bf16, values as they are) per operand */
  int eba = strcmp(ta, "f16") && strcmp(ta, "bf16") ? 1 : 2, ebb = strcmp(tb, "f16") && strcmp(tb, "bf16") ? 1 : 2;
  int xa = !strcmp(ta, "e4m3") ? 4
      : !strcmp(ta, "e5m2")    ? 5
                               : 0,
      xb = !strcmp(tb, "e4m3") ? 4
      : !strcmp(tb, "e5m2")    ? 5
                               : 0;
  if ((eba == 1 && !xa) || (ebb == 1 && !xb) || eba != ebb || KI != 32 / eba) {
    sfail(s, op, "unknown wgmma instruction %s", instr);
    return;
  }
  int E = 16 / eba;         /* K elements of a core matrix row */
  int64_t tra = 0, trb = 0; /* imm-trans-a / -b: MN-major operands (16-bit types only) */
  kl_op_attr_i64(op, "trans_a", &tra);
  kl_op_attr_i64(op, "trans_b", &trb);
  if ((tra || trb) && eba != 2) {
    sfail(s, op, "transposed operands of %s (only 16-bit types have imm-trans)", instr);
    return;
  }
  if (!s->t->wgmma) {
    sfail(s, op, "wgmma on %s", s->t->name);
    return;
  }
  /* k >= 1 descriptor pairs, chained on the accumulator (the last operand) */
  int nk = (op->nopnds - 1) / 2;
  kl_value *cvv = op->opnds[op->nopnds - 1].value;
  double *c = val_r(s, op, cvv);
  if (!c || op->nopnds % 2 != 1) {
    if (c) sfail(s, op, "%d operands: not descriptor pairs and an accumulator", op->nopnds);
    return;
  }
  int cw = width_of(cvv->type);
  if (cw != N / 2 || s->nt % 128) {
    sfail(s, op, "accumulator of %d registers for N = %d, or %d threads (not whole warpgroups)", cw, N, s->nt);
    return;
  }
  double *out = val_w(s, &op->results[0]);
  double *cur = malloc(sizeof(double) * (size_t)s->nt * cw);
  memcpy(cur, c, sizeof(double) * (size_t)s->nt * cw);
  double *A = malloc(sizeof(double) * 64 * KI), *B = malloc(sizeof(double) * N * KI);
  int Ac[64 * 32], Bc[256 * 32]; /* fp8: the codes (the rule's alignment exponents) */
  for (int j = 0; j < nk && !s->bad; j++) {
    double *da = val_r(s, op, op->opnds[2 * j].value), *db = val_r(s, op, op->opnds[2 * j + 1].value);
    if (!da || !db) break;
    for (int w0 = 0; w0 < s->nt && !s->bad; w0 += 128) {
      int g = w0 / 128;
      bool any = false;
      for (int l = 0; l < 128; l++) any |= mask[w0 + l];
      if (!any) continue; /* a warpgroup outside the region (the producer of a warp-specialized split) */
      for (int l = 0; l < 128; l++)
        if (!mask[w0 + l] || da[w0 + l] != da[w0] || db[w0 + l] != db[w0])
          sfail(s, op, "lane %d of warpgroup %d inactive or with another descriptor", l, g);
      if (g >= 8 || !s->wg_fenced[g]) sfail(s, op, "warpgroup %d: wgmma.mma_async without a wgmma.fence before it", g);
      if (s->bad) break;
      s->wg_open[g]++;
      s->wg_cur = g;
      int64_t sa, la, ssa, swa, sb, lb, ssb, swb;
      decode_desc(s, op, da[w0], &sa, &la, &ssa, &swa);
      decode_desc(s, op, db[w0], &sb, &lb, &ssb, &swb);
      s->rd_swz = swa;
      for (int r = 0; r < 64; r++)
        for (int k = 0; k < KI; k++) {
          double v = lds_at(s, op, desc_byte(sa, la, ssa, swa, tra, r, k, E, eba), eba);
          A[r * KI + k] = xa ? fp8_decode(xa, (int)v) : v;
          if (xa) Ac[r * KI + k] = (int)v;
        }
      s->rd_swz = swb;
      for (int r = 0; r < N; r++)
        for (int k = 0; k < KI; k++) {
          double v = lds_at(s, op, desc_byte(sb, lb, ssb, swb, trb, r, k, E, ebb), ebb);
          B[r * KI + k] = xb ? fp8_decode(xb, (int)v) : v;
          if (xb) Bc[r * KI + k] = (int)v;
        }
      for (int l = 0; l < 128; l++)
        for (int i = 0; i < N / 2; i++) {
          int row = 16 * (l / 32) + (l % 32) / 4 + 8 * ((i / 2) % 2), col = 8 * (i / 4) + 2 * (l % 4) + i % 2;
          double acc = cur[(w0 + l) * cw + i];
          if (xa && xb) { /* the fp8 wgmma's rule (exact in f32: at most 20 significant bits) */
            double p[32];
            int ex[32];
            for (int k = 0; k < KI; k++) {
              p[k] = A[row * KI + k] * B[col * KI + k];
              ex[k] = fp8_align_exp(xa, Ac[row * KI + k], Bc[col * KI + k]);
            }
            cur[(w0 + l) * cw + i] = fp8_rule_instr(acc, p, ex, KI);
            continue;
          }
          for (int k = 0; k < KI; k++) acc += A[row * KI + k] * B[col * KI + k];
          cur[(w0 + l) * cw + i] = kl_round_f32(acc);
        }
      s->nmma++;
    }
  }
  memcpy(out, cur, sizeof(double) * (size_t)s->nt * cw);
  free(cur);
  free(A);
  free(B);
}
static void exec_wgmma_sync(sim *s, kl_op *op, const bool *mask) {
  const char *step = kl_op_attr_string(op, "step");
  int64_t pending = 0;
  kl_op_attr_i64(op, "pending", &pending);
  for (int t = 0; t < s->nt && !s->bad; t++) /* whole warpgroups (the consumers of a split: some) */
    if (!mask[t] && mask[t / 128 * 128]) sfail(s, op, "thread %d inactive: wgmma synchronization is warpgroup-wide", t);
  bool any = false;
  for (int t = 0; t < s->nt; t++) any |= mask[t];
  if (!any) sfail(s, op, "wgmma synchronization with no thread active");
  for (int g = 0; g < s->nt / 128 && g < 8 && !s->bad; g++) {
    if (!mask[128 * g]) continue;
    if (!strcmp(step, "fence")) s->wg_fenced[g] = true;
    if (!strcmp(step, "commit")) {
      if (s->wg_open[g]) {
        if (s->wg_groups[g] == WG_Q) {
          sfail(s, op, "more than %d wgmma groups in flight", WG_Q);
          return;
        }
        s->wg_groups[g]++;
        if (s->wg_rd) {
          memcpy(s->wg_rd[g][s->wg_groups[g]], s->wg_rd[g][0], WG_NGRAN);
          memset(s->wg_rd[g][0], 0, WG_NGRAN);
        }
      }
      s->wg_open[g] = 0;
    }
    if (!strcmp(step, "wait")) {
      if (s->wg_open[g]) sfail(s, op, "wait_group with uncommitted wgmma.mma_async");
      for (; s->wg_groups[g] > pending; s->wg_groups[g]--) /* the oldest group retires */
        if (s->wg_rd) {
          for (int i = 0; i < WG_NGRAN; i++) s->wg_rd[g][WG_Q + 1][i] |= s->wg_rd[g][1][i];
          memmove(s->wg_rd[g][1], s->wg_rd[g][2], (size_t)WG_NGRAN * (WG_Q - 1));
        }
      s->wg_fenced[g] = false; /* registers touched after the wait need a new fence */
    }
  }
  if (!strcmp(step, "proxy_fence") && s->lds_dirty)
    for (int i = 0; i < WG_NGRAN; i++)
      if (s->lds_dirty[i]) s->lds_dirty[i] = 0, s->lds_fenced[i] = s->barriers;
  for (int i = 0; i < op->nopnds && !s->bad; i++) { /* pass-through */
    double *x = val_r(s, op, op->opnds[i].value);
    int w = width_of(op->opnds[i].value->type);
    if (!x) return;
    double *o = val_w(s, &op->results[i]);
    memcpy(o, x, sizeof(double) * s->nt * w);
  }
}

/* the mbarrier at element a of LDS buffer m (created on init) */
static int mb_find(sim *s, kl_op *op, mem *m, int64_t a, bool create) {
  for (int i = 0; i < s->nmb; i++)
    if (s->mb[i].m == m && s->mb[i].i == a) return i;
  if (!create) {
    sfail(s, op, "mbarrier %lld used before its init", (long long)a);
    return -1;
  }
  if (s->nmb == 16) {
    sfail(s, op, "more than 16 mbarriers");
    return -1;
  }
  s->mb[s->nmb].m = m, s->mb[s->nmb].i = a;
  s->mb[s->nmb].seen = calloc((size_t)s->nt, sizeof(int64_t));
  return s->nmb++;
}
static void mb_complete(sim *s, int b) {
  s->ws_events++;
  if (s->mb[b].missing == 0 && s->mb[b].tx == 0) s->mb[b].phase++, s->mb[b].missing = s->mb[b].count;
}
static pthread_mutex_t g_ws_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_ws_cv = PTHREAD_COND_INITIALIZER;
/* hands the turn to role `to` and waits for it to come back to `me` (g_ws_mu held) */
static void ws_switch(sim *s, int me, int to) {
  s->ws_turn = to;
  pthread_cond_broadcast(&g_ws_cv);
  while (s->ws_turn != me) pthread_cond_wait(&g_ws_cv, &g_ws_mu);
  if (me < 2) s->ws_cur = me;
}
/* Whether the phase that the masked threads of an mbarrier wait (op) wait for has completed:
 * 1 yes, 0 no, -1 when the wait cannot be resolved (the wait itself reports it). */
static int mb_wait_ready(sim *s, kl_op *op, const bool *mask) {
  bool ready = true;
  for (int t = 0; t < s->nt && !s->bad && ready; t++) {
    if (!mask[t]) continue;
    mem *m;
    int64_t a;
    if (!addr(s, op, 0, t, 1, &m, &a)) return -1;
    int b = -1;
    for (int i = 0; i < s->nmb; i++)
      if (s->mb[i].m == m && s->mb[i].i == a) b = i;
    double *par = val_r(s, op, op->opnds[2].value);
    if (b < 0 || !par) return -1;
    ready = ((int64_t)par[t] & 1) != (s->mb[b].phase & 1);
  }
  return ready;
}
/* In a role of a warp-specialized split: until the phase that the masked threads wait for
 * completes, yield to the other role (exec_ws_split finds deadlocks). */
static void ws_wait_ready(sim *s, kl_op *op, const bool *mask) {
  if (!s->ws_active || s->ws_cur > 1) return;
  for (;;) {
    int r = mb_wait_ready(s, op, mask);
    if (r < 0) return;
    bool ready = r == 1;
    if (ready || s->bad) return;
    int me = s->ws_cur;
    s->ws_blocked[me] = true;
    s->ws_ev_block[me] = s->ws_events;
    ws_switch(s, me, 2);
    s->ws_blocked[me] = false;
  }
}
/* In a cluster: until the phase the masked threads wait for completes (a peer's multicast may
 * complete it), yield to the other CTAs (cl_run finds deadlocks). */
static void cl_wait_ready(sim *s, kl_op *op, const bool *mask) {
  for (;;) {
    int r = mb_wait_ready(s, op, mask);
    if (r < 0) return;
    bool ready = r == 1;
    if (ready || s->bad || s->cl->abort) return;
    cl_yield(s);
  }
}
/* rock.mbarrier arrive_remote: each masked thread t arrives on the mbarrier at the same offset
 * of the cluster's CTA of rank x[t] (no cluster: its own, rank x[t] < C recorded); the
 * granules its warpgroup's retired wgmma groups read are released to that rank (clr_bar). */
static void exec_arrive_remote(sim *s, kl_op *op, const bool *mask) {
  double *x = val_r(s, op, op->opnds[2].value);
  if (!x) return;
  s->clr_on = true;
  bool wg_on[8] = { false };
  for (int t = 0; t < s->nt && !s->bad; t++) {
    if (!mask[t]) continue;
    mem *m;
    int64_t a, r = (int64_t)x[t];
    if (!addr(s, op, 0, t, 1, &m, &a)) return;
    if (r < 0 || r >= CLR_MAX || (s->cl && r >= s->cl->C)) {
      sfail(s, op, "thread %d arrives on CTA rank %lld outside the cluster", t, (long long)r);
      return;
    }
    sim *d = s->cl ? s->cl->cta[r] : s;
    if (d != s && s->cl->done[r]) {
      sfail(s, op, "thread %d arrives on mbarrier %lld of CTA %lld after it exited", t, (long long)a, (long long)r);
      return;
    }
    mem *pm = d == s ? m : find_mem(d, m->k);
    int b = -1;
    for (int i = 0; pm && i < d->nmb; i++)
      if (d->mb[i].m == pm && d->mb[i].i == a && d->mb[i].live) b = i;
    if (b < 0) {
      sfail(s, op, "thread %d arrives on mbarrier %lld of CTA %lld, not initialised there", t, (long long)a,
            (long long)r);
      return;
    }
    if (d->mb[b].missing == 0) {
      sfail(s, op, "thread %d arrives on mbarrier %lld of CTA %lld with no arrival pending in its phase", t,
            (long long)a, (long long)r);
      return;
    }
    int g = t / 128;
    for (int i = 0; s->wg_rd && g < 8 && i < WG_NGRAN; i++)
      if (s->wg_rd[g][WG_Q + 1][i]) s->clr_bar[r][i] = (uint8_t)(b + 1), s->clr_ph[r][i] = d->mb[b].phase;
    if (g < 8) wg_on[g] = true;
    d->mb[b].missing--;
    mb_complete(d, b);
    if (d != s) d->ws_events++;
    if (s->cl) s->cl->ops++;
  }
  /* the warpgroups that arrived: their retired reads are released (to the ranks they named) */
  for (int g = 0; s->wg_rd && g < 8; g++)
    if (wg_on[g]) memset(s->wg_rd[g][WG_Q + 1], 0, WG_NGRAN);
}
static void exec_mbarrier(sim *s, kl_op *op, const bool *mask) {
  const char *step = kl_op_attr_string(op, "step");
  int64_t v = 0;
  if (!strcmp(step, "arrive_remote")) {
    exec_arrive_remote(s, op, mask);
    return;
  }
  if (!strcmp(step, "wait")) ws_wait_ready(s, op, mask);
  if (!strcmp(step, "wait") && s->cl && !s->ws_active) cl_wait_ready(s, op, mask);
  int rb = -1;
  int64_t rph = 0;
  for (int t = 0; t < s->nt && !s->bad; t++) {
    if (!mask[t]) continue;
    mem *m;
    int64_t a;
    if (!addr(s, op, 0, t, 1, &m, &a)) return;
    int b = mb_find(s, op, m, a, !strcmp(step, "init"));
    if (b < 0) return;
    if (!strcmp(step, "init")) {
      kl_op_attr_i64(op, "count", &v);
      s->mb[b].count = s->mb[b].missing = v, s->mb[b].tx = 0, s->mb[b].phase = 0, s->mb[b].live = true;
      memset(s->mb[b].seen, 0, sizeof(int64_t) * (size_t)s->nt);
      continue;
    }
    if (!s->mb[b].live) {
      sfail(s, op, "mbarrier %lld used after its inval or before its init", (long long)a);
      return;
    }
    if (!strcmp(step, "inval")) s->mb[b].live = false;
    if (!strcmp(step, "arrive_expect_tx")) {
      kl_op_attr_i64(op, "bytes", &v);
      s->mb[b].tx += v;
      s->mb[b].missing--;
      mb_complete(s, b);
    }
    if (!strcmp(step, "arrive")) {
      if (s->mb[b].missing == 0) {
        sfail(s, op, "thread %d arrives on mbarrier %lld with no arrival pending in its phase", t, (long long)a);
        return;
      }
      if (rb < 0) rb = b, rph = s->mb[b].phase;
      s->mb[b].missing--;
      mb_complete(s, b);
    }
    if (!strcmp(step, "wait")) {
      double *par = val_r(s, op, op->opnds[2].value);
      if (!par) return;
      int64_t p = (int64_t)par[t] & 1, ph = s->mb[b].phase;
      if (p == (ph & 1)) {
        sfail(s, op,
              "thread %d waits for parity %lld of mbarrier %lld whose current phase %lld never completes (%lld "
              "arrivals and %lld transaction bytes missing): deadlock",
              t, (long long)p, (long long)a, (long long)ph, (long long)s->mb[b].missing, (long long)s->mb[b].tx);
        return;
      }
      if (s->mb[b].seen[t] < ph) s->mb[b].seen[t] = ph;
    }
  }
  /* an arrive of whole warpgroups releases the granules their retired wgmma groups read */
  for (int g = 0; rb >= 0 && s->wg_rd && s->rel_bar && g < 8 && g < s->nt / 128 && !s->bad; g++) {
    int on = 0;
    for (int l = 0; l < 128; l++) on += mask[128 * g + l];
    if (on < 128) continue;
    for (int i = 0; i < WG_NGRAN; i++)
      if (s->wg_rd[g][WG_Q + 1][i]) s->rel_bar[i] = (uint8_t)(rb + 1), s->rel_phase[i] = rph;
    memset(s->wg_rd[g][WG_Q + 1], 0, WG_NGRAN);
  }
}
/* One TMA box into CTA d (the issuing CTA s, thread t; d == s without clusters): coordinates c,
 * destination element da of the buffer of dm->k, completing on mbarrier element ba of bm->k.
 * im2col mode (rock.tma_load {im2col = [loW, loH, upW, upH, esW, esH]}, i2o the im2col offsets
 * {w, h}; passes/rock_tma_im2col.h, the PTX ISA's tensor im2col mode): the map {C, W, H, N},
 * box {channels per pixel, pixels, 1, 1}; pixel 0 at the coordinates' (w, h, n), which must lie
 * in the bounding box [lo, dim - 1 + up] on the traversal grid from lo; each next pixel steps
 * esW along W, past the box's W end back to loW and esH along H, past its H end back to loH
 * and one image on; pixel p reads channels c .. c + box[0] - 1 at its position plus the
 * offsets, zeros outside the tensor, into row p of the box. */
static void tma_box(sim *s, sim *d, kl_op *op, int t, mem *src, mem *bm, int64_t ba, mem *dm, int64_t da,
                    const int64_t *c, const int64_t *i2o) {
  int64_t dims[8], strides[8], box[8], off = 0;
  int nd = kl_op_attr_i64s(op, "dims", dims, 8);
  kl_op_attr_i64s(op, "strides", strides, 8);
  kl_op_attr_i64s(op, "box", box, 8);
  kl_op_attr_i64(op, "offset", &off);
  const kl_type *st = op->opnds[0].value->type, *dt = op->opnds[3].value->type;
  int eb = (int)(kl_type_bits(st->elem) / 8);
  if (d != s) { /* a peer's LDS and mbarrier at the same offsets */
    if (s->cl->done[d->rank]) {
      sfail(s, op, "TMA multicast from CTA %d into CTA %d after it exited", s->rank, d->rank);
      return;
    }
    dm = find_mem(d, dm->k);
    mem *pb = find_mem(d, bm->k);
    int b = -1;
    for (int i = 0; pb && i < d->nmb; i++)
      if (d->mb[i].m == pb && d->mb[i].i == ba && d->mb[i].live) b = i;
    if (!dm || b < 0) {
      sfail(s, op,
            "TMA multicast from CTA %d into CTA %d before its mbarrier %lld was initialised (no cluster barrier "
            "after the init)",
            s->rank, d->rank, (long long)ba);
      return;
    }
    bm = pb;
  }
  int b = mb_find(d, op, bm, ba, false);
  if (b < 0) {
    if (d->bad) s->bad = true, snprintf(s->err, sizeof s->err, "%s", d->err);
    return;
  }
  if (!d->mb[b].live) {
    sfail(s, op, "TMA load completing on an mbarrier after its inval");
    return;
  }
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= box[i];
  if (da + n > dm->span) {
    sfail(s, op, "TMA box of %lld elements past the end of %s", (long long)n, dt->text);
    return;
  }
  int64_t base = lds_window(d, dm), sw = 0;
  kl_op_attr_i64(op, "swizzle", &sw);
  if ((base + da * eb) % (sw ? 8 * sw : 128))
    sfail(s, op, "TMA destination byte %lld not %lld-byte aligned", (long long)(base + da * eb),
          (long long)(sw ? 8 * sw : 128));
  if (sw && box[0] * eb != sw)
    sfail(s, op, "TMA box rows of %lld bytes with a %lld-byte swizzle (only rows of the swizzle span modelled)",
          (long long)(box[0] * eb), (long long)sw);
  int64_t ic[6];
  bool i2c = kl_op_attr_i64s(op, "im2col", ic, 6) == 6 && nd == 4 && i2o;
  int64_t pw = c[1], ph = c[2], pn = c[3]; /* im2col: the walk's position */
  if (i2c &&
      (pw < ic[0] || pw > dims[1] - 1 + ic[2] || (pw - ic[0]) % ic[4] || ph < ic[1] || ph > dims[2] - 1 + ic[3] ||
       (ph - ic[1]) % ic[5]))
    sfail(s, op, "TMA im2col: first pixel (w %lld, h %lld) off the bounding box's traversal grid", (long long)pw,
          (long long)ph);
  for (int64_t f = 0; f < n && !s->bad; f++) {
    int64_t r = f, e = off;
    bool in = true;
    if (i2c) {
      int64_t ch = f % box[0], p = f / box[0];
      if (ch == 0 && p > 0 && (pw += ic[4]) > dims[1] - 1 + ic[2]) {
        pw = ic[0];
        if ((ph += ic[5]) > dims[2] - 1 + ic[3]) ph = ic[1], pn++;
      }
      int64_t x[4] = { c[0] + ch, pw + i2o[0], ph + i2o[1], pn };
      for (int i = 0; i < 4; i++) {
        if (x[i] < 0 || x[i] >= dims[i]) in = false;
        e += i ? x[i] * (strides[i - 1] / eb) : x[i];
      }
    } else
      for (int i = 0; i < nd; i++) {
        int64_t x = c[i] + r % box[i];
        r /= box[i];
        if (x < 0 || x >= dims[i]) in = false;
        e += i ? x * (strides[i - 1] / eb) : x;
      }
    if (in && (e < 0 || e >= src->span)) {
      sfail(s, op, "TMA reads element %lld of a source of span %lld", (long long)e, (long long)src->span);
      return;
    }
    /* the element's shared byte, through the swizzle */
    int64_t byte = sw ? swz(base + (da + f) * eb, sw) : base + (da + f) * eb;
    dm->data[(byte - base) / eb] = in ? src->data[e] : 0.0;
    int64_t gr = byte / 16;
    if (d->lds_dirty && gr < WG_NGRAN && byte % 16 == 0) {
      for (int g = 0; g < 8 && g < d->nt / 128; g++)
        for (int q = 0; q <= d->wg_groups[g]; q++)
          if (d->wg_rd[g][q][gr])
            sfail(s, op,
                  "TMA writes shared byte %lld of CTA %d while a wgmma group of warpgroup %d reading it is in flight "
                  "(not retired by a wait_group)",
                  (long long)gr * 16, d->rank, g);
      if ((d->cl || d->clr_on) && d->tma_bar[gr] && !d->cl_rel[gr] && !s->bad) {
        /* released by a cluster barrier, else by d's arrive on the issuing CTA's mbarrier whose
         * phase the issuing thread waited for */
        int rb = d->clr_on && s->rank < CLR_MAX ? d->clr_bar[s->rank][gr] - 1 : -1;
        if (rb < 0 || s->mb[rb].seen[t] <= d->clr_ph[s->rank][gr])
          sfail(s, op,
                "TMA from CTA %d overwrites shared byte %lld of CTA %d before every CTA of the cluster released its "
                "readers (a cluster barrier after their wait_group, or their remote arrive on an empty mbarrier of "
                "the issuing CTA whose phase %s)",
                s->rank, (long long)gr * 16, d->rank, rb < 0 ? "it never got" : "the issuing thread did not wait for");
      }
      if (d->cl_rel) d->cl_rel[gr] = 0;
      for (int r = 0; r < CLR_MAX && d->clr_on; r++) d->clr_bar[r][gr] = 0;
      for (int g = 0; g < 8 && g < d->nt / 128; g++)
        if (d->wg_rd[g][WG_Q + 1][gr])
          sfail(s, op, "TMA writes shared byte %lld that warpgroup %d's wgmma read, retired with no barrier since",
                (long long)gr * 16, g);
      if (d->ws_active && !d->clr_on && d->tma_bar[gr] &&
          !s->bad) { /* the stage's earlier fill: released and awaited? */
        int rb = d->rel_bar[gr] - 1;
        if (rb < 0)
          sfail(s, op,
                "TMA overwrites shared byte %lld before its readers' release: an earlier TMA load filled it and no "
                "arrive after the wait_group of its readers released it",
                (long long)gr * 16);
        else if (d->mb[rb].seen[t] <= d->rel_phase[gr])
          sfail(s, op,
                "TMA overwrites shared byte %lld before its readers' release: thread %d did not wait for phase "
                "%lld of mbarrier %lld",
                (long long)gr * 16, t, (long long)d->rel_phase[gr], (long long)d->mb[rb].i);
      }
      if (d->rel_bar) d->rel_bar[gr] = 0;
      d->lds_dirty[gr] = 0, d->lds_fenced[gr] = -1; /* the async proxy: no fence needed */
      d->tma_bar[gr] = (uint8_t)(b + 1), d->tma_phase[gr] = d->mb[b].phase, d->tma_swz[gr] = (uint8_t)(sw / 16);
    }
  }
  d->mb[b].tx -= n * eb;
  mb_complete(d, b);
  if (s->cl) s->cl->ops++;
}
/* rock.tma_load; {multicast = C, multicast_dim = md}: box j of C at coordinate md + j * box[md]
 * and destination + j * the box's elements; in a cluster rank r issues box r into every CTA,
 * else the workgroup loads all C */
static void exec_tma_load(sim *s, kl_op *op, const bool *mask) {
  int64_t box[8], mc = 0, md = 0;
  int nd = kl_op_attr_i64s(op, "box", box, 8);
  kl_op_attr_i64(op, "multicast", &mc);
  kl_op_attr_i64(op, "multicast_dim", &md);
  const kl_type *dt = op->opnds[3].value->type;
  mem *src = find_mem(s, op->opnds[0].value);
  if (!src) {
    sfail(s, op, "TMA source is not a kernel argument");
    return;
  }
  if (mc > 1 && s->cl && s->cl->C != mc) {
    sfail(s, op, "multicast over %lld CTAs in a cluster of %d", (long long)mc, s->cl->C);
    return;
  }
  int64_t bn = 1;
  for (int i = 0; i < nd; i++) bn *= box[i];
  for (int t = 0; t < s->nt && !s->bad; t++) {
    if (!mask[t]) continue;
    mem *bm, *dm;
    int64_t ba, da;
    if (!addr(s, op, 1, t, 1, &bm, &ba) || !addr(s, op, 3, t, 1, &dm, &da)) return;
    int64_t c[8], o2[2];
    bool i2c = kl_op_attr(op, "im2col") != NULL; /* the im2col offsets after the coordinates */
    for (int i = 0; i < nd + (i2c ? 2 : 0); i++) {
      double *cv = val_r(s, op, op->opnds[4 + dt->rank + i].value);
      if (!cv) return;
      if (i < nd)
        c[i] = (int64_t)cv[t];
      else
        o2[i - nd] = (int64_t)cv[t];
    }
    if (i2c && mc > 1) {
      sfail(s, op, "TMA im2col with multicast");
      return;
    }
    if (mc <= 1) {
      tma_box(s, s, op, t, src, bm, ba, dm, da, c, i2c ? o2 : NULL);
    } else if (s->cl) { /* rank r's box, multicast to every CTA of the cluster */
      c[md] += s->rank * box[md];
      for (int r = 0; r < s->cl->C && !s->bad; r++)
        tma_box(s, s->cl->cta[r], op, t, src, bm, ba, dm, da + s->rank * bn, c, NULL);
    } else /* no cluster: all C boxes here */
      for (int64_t j = 0; j < mc && !s->bad; j++) {
        int64_t cj[8];
        memcpy(cj, c, sizeof cj);
        cj[md] += j * box[md];
        tma_box(s, s, op, t, src, bm, ba, dm, da + j * bn, cj, NULL);
      }
    s->ntma++;
  }
}

/* Coalescing check (g_lane_check, test_amd_lanes): per wave, the active lanes of a global
 * load (loads: [0], stores: [1]) must read consecutive runs in lane order (lane t + 1's
 * first element right after lane t's last), so that the wave's access is one contiguous
 * byte range, or all read the same elements (a broadcast: one read for the wave, e.g. a
 * row's max in a split softmax's division). Counts accesses, broadcasts and the others;
 * keeps the first failure. */
static bool g_lane_check;
static int64_t g_lane_n[2], g_lane_bad[2], g_lane_uniform[2];
static char g_lane_first[256];
static void lane_runs(sim *s, kl_op *op, bool ld, const int64_t *as, const bool *mask, int w) {
  int W = s->t && s->t->wave_size > 0 ? s->t->wave_size : 64;
  for (int w0 = 0; w0 < s->nt; w0 += W) {
    int prev = -1;
    bool ok = true, any = false, uni = true;
    for (int t = w0, f = -1; t < w0 + W && t < s->nt; t++) {
      if (!mask[t]) continue;
      any = true;
      if (f < 0) f = t;
      if (as[t] != as[f] || w0 + W > s->nt) uni = false; /* a broadcast: every lane of a whole wave */
    }
    if (any && uni) {
      int na = 0;
      for (int t = w0; t < w0 + W; t++) na += mask[t];
      if (na < 2) uni = false; /* one lane: checked as a run (trivially contiguous) */
    }
    for (int t = w0; t < w0 + W && t < s->nt && !uni; t++) {
      if (!mask[t]) continue;
      if (prev >= 0 && as[t] != as[prev] + w) {
        ok = false;
        if (!g_lane_first[0])
          snprintf(g_lane_first, sizeof g_lane_first,
                   "%s of %d elements: lane %d at element %lld, lane %d at %lld (workgroup %lld)",
                   ld ? "load" : "store", w, prev - w0, (long long)as[prev], t - w0, (long long)as[t],
                   (long long)s->bid);
      }
      prev = t;
    }
    if (!any) continue;
    g_lane_n[ld ? 0 : 1]++;
    g_lane_uniform[ld ? 0 : 1] += uni;
    g_lane_bad[ld ? 0 : 1] += !ok;
  }
  (void)op;
}

/* An LDS write of w elements (eb bytes each) at a[t] by every active thread t of m: the
 * wgmma read protocol's checks (no write under a wgmma group in flight, nor one another
 * warpgroup read with no barrier since) and the granules marked written. */
static void lds_written(sim *s, kl_op *op, mem *m, const int64_t *as, const bool *mask, int w, int eb) {
  int nt = s->nt;
  int64_t base = m ? lds_window(s, m) : 0;
  for (int t = 0; m && t < nt && !s->bad; t++) {
    if (!mask[t]) continue;
    for (int64_t gr = (base + as[t] * eb) / 16; gr <= (base + (as[t] + w) * eb - 1) / 16 && gr < WG_NGRAN; gr++) {
      for (int g = 0; g < 8 && g < nt / 128; g++) {
        for (int q = 0; q <= s->wg_groups[g]; q++)
          if (s->wg_rd[g][q][gr])
            sfail(s, op,
                  "thread %d writes shared byte %lld while a wgmma group of warpgroup %d reading it is in "
                  "flight (not retired by a wait_group)",
                  t, (long long)gr * 16, g);
        if (g != t / 128 && s->wg_rd[g][WG_Q + 1][gr])
          sfail(s, op,
                "thread %d writes shared byte %lld that warpgroup %d's wgmma read, retired by its "
                "wait_group with no barrier since",
                t, (long long)gr * 16, g);
      }
      s->lds_dirty[gr] = 1;
      if (s->tma_bar) s->tma_bar[gr] = 0, s->tma_swz[gr] = 0;
    }
  }
}

/* rock.stmatrix {num = N, trans}: the PTX ISA's stmatrix.sync.aligned.m8n8.xN[.trans].b16
 * written out here, ldmatrix's mirror: lane 8j + r gives the address of row r of matrix j
 * (16 bytes, 16-byte aligned); lane l's elements 2j, 2j+1 go to (row l/4, columns 2(l%4),
 * 2(l%4)+1) of matrix j, with .trans to (rows 2(l%4), 2(l%4)+1, column l/4); the
 * addresses of lanes 8N.. are ignored. Banks: one phase per matrix (8 rows of 16 bytes),
 * counted as stores. */
static int64_t g_nstmatrix, g_stm_wavefronts, g_stm_phases;
static void exec_stmatrix(sim *s, kl_op *op, const bool *mask) {
  int64_t num = 0;
  kl_op_attr_i64(op, "num", &num);
  const kl_attr *tr = kl_op_attr(op, "trans");
  bool trans = tr && tr->i;
  const kl_type *bt = op->opnds[1].value->type;
  int nt = s->nt, w = (int)(2 * num);
  if (nt % 32) {
    sfail(s, op, "workgroup of %d threads is not whole warps", nt);
    return;
  }
  double *x = val_r(s, op, op->opnds[0].value);
  if (!x) return;
  int64_t *as = calloc(nt, sizeof *as);
  bool *warp_on = calloc(nt / 32 + 1, sizeof *warp_on);
  mem *m = NULL;
  for (int w0 = 0; w0 < nt && !s->bad; w0 += 32) { /* whole warps (a warp-specialized role: others idle) */
    int on = 0;
    for (int l = 0; l < 32; l++) on += mask[w0 + l];
    if (on && on < 32) sfail(s, op, "warp %d has %d of 32 lanes active: stmatrix is warp-synchronous", w0 / 32, on);
    warp_on[w0 / 32] = on == 32;
  }
  for (int t = 0; t < nt && !s->bad; t++) {
    if (!warp_on[t / 32]) continue;
    if (!s->bad && addr(s, op, 1, t, 8, &m, &as[t]) && as[t] % 8)
      sfail(s, op, "row address %lld of thread %d is not 16-byte aligned", (long long)as[t], t);
    /* only lanes 0 .. 8N-1 give row addresses (the others are ignored) */
    if (!s->bad && m->rc_w && t % 32 < 8 * num) lds_race(s, op, m, as[t], 8, t, false);
  }
  for (int w0 = 0; !s->bad && w0 < nt; w0 += 32) {
    if (!warp_on[w0 / 32]) continue;
    for (int l = 0; l < 32; l++)
      for (int e = 0; e < w; e++) { m->data[mat_elem(as, w0, l, e, trans)] = round_to(bt->elem, x[(w0 + l) * w + e]); }
    for (int j = 0; j < num; j++) {
      int worst = mat_phase_wavefronts(as, w0, j);
      s->lds_wavefronts[1] += worst;
      s->lds_ideal[1] += 1;
      g_stm_wavefronts += worst;
      g_stm_phases += 1;
    }
  }
  if (!s->bad && s->lds_dirty) {
    bool *rows = malloc(sizeof *rows * nt);
    for (int t = 0; t < nt; t++) rows[t] = mask[t] && t % 32 < 8 * num;
    lds_written(s, op, m, as, rows, 8, 2);
    free(rows);
  }
  g_nstmatrix++;
  free(warp_on);
  free(as);
}

static void exec_op(sim *s, kl_op *op, const bool *mask) {
  const char *n = op->name;
  int nt = s->nt;
  if (s->cl) s->cl->ops++;
  if (!strcmp(n, "arith.constant")) {
    const kl_attr *a = kl_op_attr(op, "value");
    double v = a->kind == KL_AT_FLOAT ? a->f : (double)a->i;
    double *o = val_w(s, &op->results[0]);
    int w = width_of(op->results[0].type);
    for (int i = 0; i < nt * w; i++) o[i] = v;
    return;
  }
  if (!strcmp(n, "rock.workgroup_count")) {
    double *o = val_w(s, &op->results[0]);
    for (int t = 0; t < nt; t++) o[t] = (double)s->grid;
    return;
  }
  if (!strcmp(n, "rock.workgroup_id") || !strcmp(n, "rock.workitem_id")) {
    double *o = val_w(s, &op->results[0]);
    for (int t = 0; t < nt; t++) o[t] = n[9] == 'g' ? (double)s->bid : t;
    return;
  }
  if (!strcmp(n, "rock.barrier")) {
    /* in the consumer region of a warp-specialized split: bar.sync 1, nc over threads [0, nc) */
    int64_t nc = kl_ws_consumer_threads(op);
    for (int t = 0; t < nt; t++)
      if (mask[t] != (!nc || t < nc)) {
        sfail(s, op,
              nc ? "named barrier of %lld consumer threads in divergent code" : "barrier in divergent code%.0lld",
              (long long)nc);
        return;
      }
    const char *scope = kl_op_attr_string(op, "scope");
    if (scope && !strcmp(scope, "cluster") && s->cl) { /* every CTA of the cluster arrives, the last releases */
      clus *c = s->cl;
      int64_t gen = c->gen;
      int alive = 0;
      for (int r = 0; r < c->C; r++) alive += !c->done[r];
      if (++c->arrived == alive) {
        for (int r = 0; r < c->C; r++) { /* the readers retired before the barrier, in every CTA: released */
          sim *d = c->cta[r];
          for (int g = 0; d->wg_rd && g < 8; g++) {
            for (int i = 0; i < WG_NGRAN; i++)
              if (d->wg_rd[g][WG_Q + 1][i]) d->cl_rel[i] = 1;
            memset(d->wg_rd[g][WG_Q + 1], 0, WG_NGRAN); /* the barrier is passed for every CTA */
          }
        }
        c->arrived = 0, c->gen++;
      } else
        while (c->gen == gen && !c->abort) cl_yield(s);
      if (c->abort) return;
    }
    s->barriers++;
    for (int g = 0; s->wg_rd && g < 8; g++) memset(s->wg_rd[g][WG_Q + 1], 0, WG_NGRAN);
    return;
  }
  if (!strcmp(n, "rock.lane_shuffle")) { /* x of lane (lane ^ xor) of the wave; past the wave: its own */
    int64_t xr = 0, W = s->t && s->t->wave_size > 0 ? s->t->wave_size : 1;
    double *x = val_r(s, op, op->opnds[0].value), *o = val_w(s, &op->results[0]);
    kl_op_attr_i64(op, "xor", &xr);
    for (int t = 0; x && t < nt && !s->bad; t++) {
      if (!mask[t]) continue;
      int u = t ^ (int)xr;
      bool in = xr < W && u < nt && u / W == t / W;
      if (in && !mask[u]) sfail(s, op, "thread %d reads inactive lane %d", t, u);
      o[t] = in ? x[u] : x[t];
    }
    return;
  }
  if (!strcmp(n, "rock.alloc")) {
    const kl_type *bt = op->results[0].type;
    if (bt->space == KL_SPACE_GLOBAL) {
      sfail(s, op, "global alloc in a loop-level kernel");
      return;
    }
    if (s->nmems == 512) {
      sfail(s, op, "too many allocs");
      return;
    }
    int64_t span = 1;
    for (int i = 0; i < bt->rank; i++) span += (bt->shape[i] - 1) * bt->strides[i];
    bool pt = bt->space == KL_SPACE_PRIVATE;
    mem *m = &s->mems[s->nmems++];
    m->k = &op->results[0];
    m->cp_writer = m->cp_group = NULL;
    m->rc_w = m->rc_r = NULL;
    m->rc_wb = m->rc_rb = NULL;
    if (bt->space == KL_SPACE_LDS) {
      m->rc_w = malloc(sizeof *m->rc_w * span);
      m->rc_r = malloc(sizeof *m->rc_r * span);
      m->rc_wb = malloc(sizeof *m->rc_wb * span);
      m->rc_rb = malloc(sizeof *m->rc_rb * span);
      for (int64_t i = 0; i < span; i++) m->rc_w[i] = m->rc_r[i] = -1, m->rc_wb[i] = m->rc_rb[i] = -1;
    }
    m->span = span;
    m->per_thread = pt;
    int64_t tot = span * (pt ? nt : 1);
    m->data = malloc(sizeof(double) * tot);
    for (int64_t i = 0; i < tot; i++) m->data[i] = NAN; /* uninitialized */
    return;
  }
  if (!strcmp(n, "rock.load") || !strcmp(n, "rock.store")) {
    bool ld = n[5] == 'l';
    int bi = ld ? 0 : 1, w = width_of(ld ? op->results[0].type : op->opnds[0].value->type);
    const kl_type *bt = op->opnds[bi].value->type;
    double *o = ld ? val_w(s, &op->results[0]) : NULL, *x = ld ? NULL : val_r(s, op, op->opnds[0].value);
    if (!ld && !x) return;
    int64_t *as = malloc(sizeof *as * nt);
    mem *sm = NULL;
    for (int t = 0; t < nt && !s->bad; t++) {
      as[t] = 0;
      if (!mask[t]) continue;
      mem *m;
      int64_t a;
      if (!addr(s, op, bi, t, w, &m, &a)) {
        free(as);
        return;
      }
      as[t] = a;
      sm = m;
      if (ld) cp_check_read(s, op, m, a, w, t);
      if (m->rc_w) lds_race(s, op, m, a, w, t, ld);
      for (int i = 0; i < w; i++) {
        if (ld)
          o[t * w + i] = m->data[a + i];
        else
          m->data[a + i] = round_to(bt->elem, x[t * w + i]);
      }
    }
    if (!s->bad && bt->space == KL_SPACE_LDS && s->t && s->t->arch != KL_ARCH_HOST)
      count_banks(s, !ld, as, mask, w, (kl_type_bits(bt->elem) + 7) / 8);
    if (!s->bad && g_lane_check && bt->space == KL_SPACE_GLOBAL) lane_runs(s, op, ld, as, mask, w);
    if (!ld && bt->space == KL_SPACE_LDS && s->lds_dirty)
      lds_written(s, op, sm, as, mask, w, (kl_type_bits(bt->elem) + 7) / 8);
    for (int g = 0; !ld && bt->space == KL_SPACE_GLOBAL && g < 8 && !s->bad; g++)
      if (s->wg_open[g] || s->wg_groups[g])
        sfail(s, op, "global store while warpgroup %d has wgmma.mma_async in flight (no wait_group 0)", g);
    free(as);
    return;
  }
  if (!strcmp(n, "rock.mma")) {
    exec_mma(s, op, mask);
    return;
  }
  if (!strcmp(n, "rock.ldmatrix")) {
    exec_ldmatrix(s, op, mask);
    return;
  }
  if (!strcmp(n, "rock.stmatrix")) {
    exec_stmatrix(s, op, mask);
    return;
  }
  if (!strcmp(n, "rock.async_copy")) {
    exec_async_copy(s, op, mask);
    return;
  }
  if (!strcmp(n, "rock.async_commit")) {
    for (int t = 0; t < nt; t++) s->cp_commits[t] += mask[t];
    return;
  }
  if (!strcmp(n, "rock.async_wait")) {
    int64_t pend = 0;
    kl_op_attr_i64(op, "pending", &pend);
    for (int t = 0; t < nt; t++) {
      if (!mask[t]) continue;
      for (int g = s->cp_retired[t]; g < s->cp_commits[t] - pend; g++) s->cp_bar[t][g] = s->barriers;
      if (s->cp_commits[t] - pend > s->cp_retired[t]) s->cp_retired[t] = (int32_t)(s->cp_commits[t] - pend);
    }
    return;
  }
  if (!strcmp(n, "vector.shuffle")) { /* result[e] = concat(x, y)[mask[e]] */
    const kl_attr *mk = kl_op_attr(op, "mask");
    kl_value *xv = op->opnds[0].value, *yv = op->opnds[1].value;
    int wx = width_of(xv->type), wy = width_of(yv->type), wo = width_of(op->results[0].type);
    double *x = val_r(s, op, xv), *y = val_r(s, op, yv), *o = val_w(s, &op->results[0]);
    if (!mk || mk->kind != KL_AT_ARRAY || mk->n != wo) {
      sfail(s, op, "vector.shuffle without a mask of the result's width");
      return;
    }
    for (int t = 0; x && y && t < nt; t++)
      for (int e = 0; e < wo; e++) {
        int64_t j = mk->elems[e]->i;
        o[t * wo + e] = j < wx ? x[t * wx + j] : y[t * wy + (j - wx)];
      }
    return;
  }
  if (!strcmp(n, "rock.wgmma_desc")) {
    exec_wgmma_desc(s, op, mask);
    return;
  }
  if (!strcmp(n, "rock.wgmma")) {
    exec_wgmma(s, op, mask);
    return;
  }
  if (!strcmp(n, "rock.wgmma_sync")) {
    exec_wgmma_sync(s, op, mask);
    return;
  }
  if (!strcmp(n, "rock.setmaxnreg")) { /* .sync.aligned: whole warpgroups */
    for (int g = 0; g * 128 < nt && !s->bad; g++) {
      int on = 0;
      for (int l = 0; l < 128 && g * 128 + l < nt; l++) on += mask[g * 128 + l];
      if (on && on != 128) sfail(s, op, "setmaxnreg by %d of the 128 threads of warpgroup %d", on, g);
    }
    return;
  }
  if (!strcmp(n, "rock.mbarrier")) {
    exec_mbarrier(s, op, mask);
    return;
  }
  if (!strcmp(n, "rock.tma_load")) {
    exec_tma_load(s, op, mask);
    return;
  }
  if (!strcmp(n, "scf.for")) {
    int64_t lb, ub, st;
    if (!uniform(s, op, op->opnds[0].value, mask, &lb) || !uniform(s, op, op->opnds[1].value, mask, &ub) ||
        !uniform(s, op, op->opnds[2].value, mask, &st))
      return;
    if (st <= 0) {
      sfail(s, op, "step %lld", (long long)st);
      return;
    }
    kl_block *body = op->regions[0].first;
    int niter = op->nopnds - 3;
    double *tmp[16];
    if (niter > 16) {
      sfail(s, op, "too many iteration values");
      return;
    }
    for (int i = 0; i < niter; i++) {
      int w = width_of(op->results[i].type);
      double *src = val_r(s, op, op->opnds[3 + i].value), *dst = val_w(s, body->args[1 + i]);
      if (!src) return;
      memcpy(dst, src, sizeof(double) * nt * w);
      tmp[i] = malloc(sizeof(double) * nt * w);
    }
    for (int64_t iv = lb; iv < ub && !s->bad; iv += st) {
      double *ivs = val_w(s, body->args[0]);
      for (int t = 0; t < nt; t++) ivs[t] = (double)iv;
      exec_block(s, body, mask);
      kl_op *y = body->last;
      for (int i = 0; i < niter && !s->bad; i++) {
        double *src = val_r(s, y, y->opnds[i].value);
        if (src) memcpy(tmp[i], src, sizeof(double) * nt * width_of(op->results[i].type));
      }
      for (int i = 0; i < niter && !s->bad; i++)
        memcpy(val_w(s, body->args[1 + i]), tmp[i], sizeof(double) * nt * width_of(op->results[i].type));
    }
    for (int i = 0; i < niter; i++) {
      if (!s->bad)
        memcpy(val_w(s, &op->results[i]), val_w(s, body->args[1 + i]),
               sizeof(double) * nt * width_of(op->results[i].type));
      free(tmp[i]);
    }
    return;
  }
  if (!strcmp(n, "scf.if")) {
    double *c = val_r(s, op, op->opnds[0].value);
    if (!c) return;
    if (kl_op_attr(op, "ws_consumers")) {
      exec_ws_split(s, op, c, mask);
      return;
    }
    bool *m2 = malloc(nt);
    for (int r = 0; r < 2 && !s->bad; r++) {
      bool any = false;
      for (int t = 0; t < nt; t++) {
        m2[t] = mask[t] && ((c[t] != 0) == (r == 0));
        any |= m2[t];
      }
      kl_block *b = op->nregions > r ? op->regions[r].first : NULL;
      if (!b || !any) continue;
      exec_block(s, b, m2);
      for (int i = 0; i < op->nresults && !s->bad; i++) {
        int w = width_of(op->results[i].type);
        double *src = val_r(s, b->last, b->last->opnds[i].value), *dst = val_w(s, &op->results[i]);
        for (int t = 0; src && t < nt; t++)
          if (m2[t]) memcpy(dst + t * w, src + t * w, sizeof(double) * w);
      }
    }
    free(m2);
    return;
  }
  if (!strcmp(n, "scf.yield") || !strcmp(n, "func.return")) return;
  if (op->nresults != 1 || op->nopnds < 1 || op->nopnds > 3) {
    sfail(s, op, "unsupported by the test interpreter");
    return;
  }
  double *x[3] = { NULL, NULL, NULL };
  int ws[3] = { 1, 1, 1 };
  for (int i = 0; i < op->nopnds; i++) {
    x[i] = val_r(s, op, op->opnds[i].value);
    if (!x[i]) return;
    ws[i] = width_of(op->opnds[i].value->type);
  }
  const kl_type *rt = elem_t(op->results[0].type), *at = elem_t(op->opnds[0].value->type);
  int w = width_of(op->results[0].type);
  double *o = val_w(s, &op->results[0]);
  for (int t = 0; t < nt && !s->bad; t++) {
    if (!mask[t]) continue;
    for (int i = 0; i < w; i++) {
      double a = x[0][t * ws[0] + (ws[0] > 1 ? i : 0)];
      double b = x[1] ? x[1][t * ws[1] + (ws[1] > 1 ? i : 0)] : 0;
      double c = x[2] ? x[2][t * ws[2] + (ws[2] > 1 ? i : 0)] : 0;
      o[t * w + i] = arith(s, op, n, a, b, c, rt, at);
    }
  }
}

static void exec_block(sim *s, kl_block *b, const bool *mask) {
  for (kl_op *o = b->first; o && !s->bad; o = o->next) exec_op(s, o, mask);
}
typedef struct {
  sim *s;
  kl_block *b;
  bool *mask;
  int id;
} ws_role;
static void *ws_role_main(void *arg) {
  ws_role *r = arg;
  sim *s = r->s;
  pthread_mutex_lock(&g_ws_mu);
  while (s->ws_turn != r->id) pthread_cond_wait(&g_ws_cv, &g_ws_mu);
  s->ws_cur = r->id;
  exec_block(s, r->b, r->mask);
  s->ws_done[r->id] = true;
  s->ws_turn = 2;
  pthread_cond_broadcast(&g_ws_cv);
  pthread_mutex_unlock(&g_ws_mu);
  return NULL;
}
/* The warp-specialized split (see struct sim): the producer role (region 1, cond false)
 * and the consumers (region 0) as coroutines. */
static void exec_ws_split(sim *s, kl_op *op, const double *c, const bool *mask) {
  if (s->ws_active) {
    sfail(s, op, "nested warp-specialized split");
    return;
  }
  ws_role r[2];
  pthread_t th[2];
  for (int i = 0; i < 2; i++) {
    r[i] = (ws_role){ s, op->regions[i == 0 ? 1 : 0].first, malloc((size_t)s->nt), i };
    for (int t = 0; t < s->nt; t++) r[i].mask[t] = mask[t] && ((c[t] != 0) == (i == 1));
    s->ws_done[i] = s->ws_blocked[i] = false;
  }
  s->ws_active = true;
  pthread_mutex_lock(&g_ws_mu);
  s->ws_turn = 2;
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setstacksize(&at, 64u << 20);
  for (int i = 0; i < 2; i++) pthread_create(&th[i], &at, ws_role_main, &r[i]);
  pthread_attr_destroy(&at);
  int cur = 0;
  while (!s->ws_done[0] || !s->ws_done[1]) {
    if (s->ws_done[cur]) cur ^= 1;
    ws_switch(s, 2, cur);
    if (s->ws_done[cur] || !s->ws_blocked[cur]) continue;
    int o = cur ^ 1;
    bool stuck = s->ws_done[o] || (s->ws_blocked[o] && s->ws_ev_block[o] == s->ws_events);
    if (stuck && s->cl && !s->bad) { /* in a cluster: the peers may complete the phase (cl_run finds deadlocks) */
      int64_t ev = s->ws_events;
      pthread_mutex_unlock(&g_ws_mu); /* the peers' splits take it (lock order: g_cl_mu, then g_ws_mu) */
      while (s->ws_events == ev && !s->cl->abort) cl_yield(s);
      pthread_mutex_lock(&g_ws_mu);
      if (s->cl->abort) s->bad = true;
      continue;
    }
    if (!s->bad && stuck)
      sfail(s, op, "the warp-specialized roles deadlock: %s waits for an mbarrier phase that cannot complete",
            s->ws_done[o] ? (cur ? "the consumers (the producer done)" : "the producer (the consumers done)")
                          : "each role");
    cur = o;
  }
  s->ws_cur = 2;
  pthread_mutex_unlock(&g_ws_mu);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL), free(r[i].mask);
  s->ws_active = false;
}

/* Runs kernel func k over its grid; args[i] = the data of kernel argument i (span
 * elements each, in the argument's buffer layout). */
static int64_t g_lds_wavefronts[2], g_lds_ideal[2]; /* of the last sim_run: [0] loads, [1] stores */
static bool g_sim_blocks;                           /* sim_run: workgroups 0, 1 and the last only */
static int64_t g_ntma;                              /* TMA boxes of the last sim_run */
/* persistent kernels (grid_persistent): the launch's workgroups when > 0 (at most the tiles),
 * so that each loops over several tiles; else the tiles */
static int64_t g_sim_grid;
static int64_t g_sim_ran; /* workgroups of the last sim_run */
static void sim_init(sim *s, const kl_target *t, int64_t bs, int64_t grid) {
  *s = (sim){ .nt = (int)bs, .t = t, .grid = grid };
  if (t && t->wgmma) {
    s->wg_rd = calloc(8, sizeof *s->wg_rd);
    s->lds_dirty = calloc(WG_NGRAN, 1);
    s->lds_fenced = malloc(sizeof *s->lds_fenced * WG_NGRAN);
    s->tma_bar = calloc(WG_NGRAN, 1);
    s->tma_swz = calloc(WG_NGRAN, 1);
    s->tma_phase = calloc(WG_NGRAN, sizeof *s->tma_phase);
    s->rel_bar = calloc(WG_NGRAN, 1);
    s->rel_phase = calloc(WG_NGRAN, sizeof *s->rel_phase);
    s->cl_rel = calloc(WG_NGRAN, 1);
    for (int r = 0; r < CLR_MAX; r++)
      s->clr_bar[r] = calloc(WG_NGRAN, 1), s->clr_ph[r] = calloc(WG_NGRAN, sizeof *s->clr_ph[r]);
  }
  s->ws_cur = 2;
  s->cp_commits = calloc(bs, sizeof *s->cp_commits);
  s->cp_retired = calloc(bs, sizeof *s->cp_retired);
  s->cp_bar = malloc(bs * sizeof *s->cp_bar);
}
static void sim_fini(sim *s) {
  free(s->cp_commits);
  free(s->cp_retired);
  free(s->cp_bar);
  free(s->wg_rd);
  free(s->lds_dirty);
  free(s->lds_fenced);
  free(s->tma_bar);
  free(s->tma_swz);
  free(s->tma_phase);
  free(s->rel_bar);
  free(s->rel_phase);
  free(s->cl_rel);
  for (int r = 0; r < CLR_MAX; r++) free(s->clr_bar[r]), free(s->clr_ph[r]);
  for (int i = 0; i < s->nmb; i++) free(s->mb[i].seen);
  s->nmb = 0;
}
/* a fresh block b: nothing written, nothing in flight, no mbarriers */
static void sim_fresh(sim *s, int64_t b) {
  s->bid = b;
  s->nmems = 0;
  memset(s->cp_commits, 0, s->nt * sizeof *s->cp_commits);
  memset(s->cp_retired, 0, s->nt * sizeof *s->cp_retired);
  if (s->lds_dirty) {
    memset(s->lds_dirty, 0, WG_NGRAN);
    for (int i = 0; i < WG_NGRAN; i++) s->lds_fenced[i] = -1;
    memset(s->wg_rd, 0, 8 * sizeof *s->wg_rd);
    memset(s->tma_bar, 0, WG_NGRAN);
    memset(s->tma_swz, 0, WG_NGRAN);
    memset(s->rel_bar, 0, WG_NGRAN);
    memset(s->cl_rel, 0, WG_NGRAN);
    for (int r = 0; r < CLR_MAX && s->clr_on; r++) memset(s->clr_bar[r], 0, WG_NGRAN);
  }
  s->clr_on = false;
  for (int i = 0; i < s->nmb; i++) free(s->mb[i].seen);
  s->nmb = 0;
}
/* Runs workgroup s->bid (sim_fresh done) of kernel func k to its end. */
static void sim_block(sim *s, kl_op *k, double **args) {
  kl_block *entry = k->regions[0].first;
  bool *mask = malloc((size_t)s->nt);
  memset(mask, 1, (size_t)s->nt);
  for (int i = 0; i < entry->nargs; i++) {
    const kl_type *bt = entry->args[i]->type;
    int64_t span = 1;
    for (int d = 0; d < bt->rank; d++) span += (bt->shape[d] - 1) * bt->strides[d];
    s->mems[s->nmems++] = (mem){ entry->args[i], args[i], span, false, NULL, NULL, NULL, NULL, NULL, NULL };
  }
  int nargs = s->nmems;
  exec_block(s, entry, mask);
  for (int g = 0; g < 8; g++)
    if (s->wg_groups[g] || s->wg_open[g]) sfail(s, NULL, "the kernel ends with wgmma groups in flight");
  for (int i = 0; i < s->nmb; i++)
    if (s->mb[i].tx || s->mb[i].missing != s->mb[i].count)
      sfail(s, NULL, "the kernel ends with TMA loads or arrivals pending on mbarrier %lld", (long long)s->mb[i].i);
  for (int t = 0; t < s->nt; t++)
    if (s->cp_retired[t] < s->cp_commits[t]) {
      sfail(s, NULL, "thread %d ends with cp.async groups in flight", t);
      break;
    }
  for (int i = nargs; i < s->nmems; i++) {
    free(s->mems[i].data);
    free(s->mems[i].cp_writer);
    free(s->mems[i].cp_group);
    free(s->mems[i].rc_w);
    free(s->mems[i].rc_r);
    free(s->mems[i].rc_wb);
    free(s->mems[i].rc_rb);
  }
  s->nmems = nargs;
  sim_reset_values(s);
  free(mask);
}
/* a CTA of a cluster: its block when its turn comes (g_cl_mu held while it runs) */
typedef struct {
  sim *s;
  kl_op *k;
  double **args;
} cl_arg;
static void *cl_cta_main(void *arg) {
  cl_arg *a = arg;
  sim *s = a->s;
  clus *c = s->cl;
  pthread_mutex_lock(&g_cl_mu);
  while (c->turn != s->rank) pthread_cond_wait(&g_cl_cv, &g_cl_mu);
  sim_block(s, a->k, a->args);
  c->done[s->rank] = true;
  c->turn = c->C;
  pthread_cond_broadcast(&g_cl_cv);
  pthread_mutex_unlock(&g_cl_mu);
  return NULL;
}
/* The C CTAs of the cluster of blocks b0 .. b0 + C - 1 together (struct sim: cl). */
static void cl_run(clus *c, kl_op *k, double **args, int64_t b0) {
  cl_arg a[16];
  pthread_t th[16];
  c->abort = false, c->arrived = 0, c->ops = 0, c->first_bad = -1;
  for (int r = 0; r < c->C; r++) {
    c->done[r] = false;
    sim_fresh(c->cta[r], b0 + r);
    a[r] = (cl_arg){ c->cta[r], k, args };
  }
  pthread_mutex_lock(&g_cl_mu);
  c->turn = c->C;
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setstacksize(&at, 64u << 20);
  for (int r = 0; r < c->C; r++) pthread_create(&th[r], &at, cl_cta_main, &a[r]);
  pthread_attr_destroy(&at);
  for (;;) {
    bool all = true;
    int64_t ops = c->ops;
    for (int r = 0; r < c->C; r++) {
      if (c->done[r]) continue;
      all = false;
      c->turn = r;
      pthread_cond_broadcast(&g_cl_cv);
      while (c->turn != c->C) pthread_cond_wait(&g_cl_cv, &g_cl_mu);
    }
    if (all) break;
    bool bad = false;
    for (int r = 0; r < c->C; r++) bad |= c->cta[r]->bad;
    if ((ops == c->ops || bad) && !c->abort) { /* a round without an op: every CTA waits for another */
      if (!bad)
        sfail(c->cta[0], NULL, "the CTAs of cluster %lld deadlock (each waits at a cluster barrier or an mbarrier)",
              (long long)(b0 / c->C));
      c->abort = true;
      for (int r = 0; r < c->C; r++) c->cta[r]->bad = true;
    }
  }
  pthread_mutex_unlock(&g_cl_mu);
  for (int r = 0; r < c->C; r++) pthread_join(th[r], NULL);
}
/* g_sim_nocluster: a clustered kernel runs one workgroup at a time (each multicast load takes
 * all its boxes, the cluster barrier the block's: what the IR means without clusters) */
static bool g_sim_nocluster;
static int64_t g_sim_clusters; /* clusters of the last sim_run (0: none) */
static bool sim_run(kl_op *k, const kl_target *t, double **args, char *err, size_t errlen, int64_t *nmma) {
  int64_t bs = 1, grid = 1, gp = 0, C = 0;
  kl_op_attr_i64(k, "block_size", &bs);
  kl_op_attr_i64(k, "grid_size", &grid);
  kl_op_attr_i64(k, "cluster_size", &C);
  if (kl_op_attr_i64(k, "grid_persistent", &gp) && gp > 0 && g_sim_grid > 0 && g_sim_grid < grid) grid = g_sim_grid;
  g_sim_ran = grid;
  g_sim_clusters = 0;
  sim s;
  sim_init(&s, t, bs, grid);
  bool bad = false;
  if (C > 1 && !g_sim_nocluster) {
    if (C > 16 || grid % C) {
      snprintf(err, errlen, "cluster_size %lld with a grid of %lld", (long long)C, (long long)grid);
      sim_fini(&s);
      return false;
    }
    sim cs[16];
    clus cl = { .C = (int)C };
    for (int r = 0; r < C; r++) {
      sim_init(&cs[r], t, bs, grid);
      cs[r].cl = &cl, cs[r].rank = r, cl.cta[r] = &cs[r];
    }
    for (int64_t b0 = 0; b0 < grid && !bad; b0 += C) {
      cl_run(&cl, k, args, b0);
      g_sim_clusters++;
      for (int r = 0; r < C && !bad; r++)
        if (cs[r].bad) { /* the first failure's error (the others may follow from it) */
          bad = true;
          int q = cl.first_bad >= 0 ? cl.first_bad : r;
          snprintf(err, errlen, "CTA %d of cluster %lld: %s", q, (long long)(b0 / C), cs[q].err[0] ? cs[q].err : "?");
        }
    }
    for (int r = 0; r < C; r++) {
      s.nmma += cs[r].nmma, s.ntma += cs[r].ntma;
      for (int i = 0; i < 2; i++) s.lds_wavefronts[i] += cs[r].lds_wavefronts[i], s.lds_ideal[i] += cs[r].lds_ideal[i];
      sim_fini(&cs[r]);
    }
  } else
    for (int64_t b = 0; b < grid && !s.bad; b++) {
      /* g_sim_blocks: only the first two workgroups and the last (coalescing checks on
       * large grids) */
      if (g_sim_blocks && b >= 2 && b < grid - 1) b = grid - 1;
      sim_fresh(&s, b);
      sim_block(&s, k, args);
    }
  if (s.bad) bad = true, snprintf(err, errlen, "%s", s.err);
  sim_fini(&s);
  g_ntma = s.ntma;
  *nmma = s.nmma;
  for (int i = 0; i < 2; i++) {
    g_lds_wavefronts[i] = s.lds_wavefronts[i];
    g_lds_ideal[i] = s.lds_ideal[i];
  }
  return !bad;
}

/* ---------------------------------------------------------------------------------
 * GEMM kernels as .kir text
 * --------------------------------------------------------------------------------- */
typedef struct gcase {
  const char *target, *type;
  int64_t G, M, N, K;
  bool at, bt;      /* A stored [G,M,K] / B stored [G,N,K] (transposed views) */
  bool epi;         /* fused epilogue: relu(c + bias[n]) converted to the output type */
  const char *perf; /* NULL: heuristic */
  const char *out;  /* output element type */
} gcase;

static const char *acc_of(const char *type) { return !strcmp(type, "i8") ? "i32" : "f32"; }

static char *gemm_kir(const gcase *c) {
  static char buf[8192];
  long long G = c->G, M = c->M, N = c->N, K = c->K;
  const char *T = c->type, *To = c->out, *Ta = acc_of(T);
  char ta[128], tb[128], perf[96] = "";
  if (c->at)
    snprintf(ta, sizeof ta, "buffer<%lldx%lldx%lldx%s>", G, M, K, T);
  else
    snprintf(ta, sizeof ta, "buffer<%lldx%lldx%lldx%s>", G, K, M, T);
  if (c->bt)
    snprintf(tb, sizeof tb, "buffer<%lldx%lldx%lldx%s>", G, N, K, T);
  else
    snprintf(tb, sizeof tb, "buffer<%lldx%lldx%lldx%s>", G, K, N, T);
  if (c->perf) snprintf(perf, sizeof perf, ", perf_config = \"%s\"", c->perf);
  char bias[64] = "";
  if (c->epi) snprintf(bias, sizeof bias, ", %%bias: buffer<%lldxf32>", N);
  int n = snprintf(buf, sizeof buf,
                   "func.func @gemm(%%a: %s, %%b: %s%s, %%out: buffer<%lldx%lldx%lldx%s>) attributes {kernel, target = "
                   "\"%s\"%s} {\n",
                   ta, tb, bias, G, M, N, To, c->target, perf);
  const char *A = "%a", *B = "%b";
  if (c->at) {
    n += snprintf(buf + n, sizeof buf - n,
                  "  %%at = \"rock.transform\"(%%a) {view = #view<[PassThrough [\"g\",\"k\",\"m\"] at [0,1,2] -> "
                  "[\"g\",\"k\",\"m\"] at [0,2,1]] bounds=[%lld,%lld,%lld] -> [%lld,%lld,%lld]>} : (%s) -> "
                  "buffer<%lldx%lldx%lldx%s>\n",
                  G, K, M, G, M, K, ta, G, K, M, T);
    A = "%at";
  }
  if (c->bt) {
    n += snprintf(buf + n, sizeof buf - n,
                  "  %%bt = \"rock.transform\"(%%b) {view = #view<[PassThrough [\"g\",\"k\",\"n\"] at [0,1,2] -> "
                  "[\"g\",\"k\",\"n\"] at [0,2,1]] bounds=[%lld,%lld,%lld] -> [%lld,%lld,%lld]>} : (%s) -> "
                  "buffer<%lldx%lldx%lldx%s>\n",
                  G, K, N, G, N, K, tb, G, K, N, T);
    B = "%bt";
  }
  if (!c->epi) {
    n += snprintf(buf + n, sizeof buf - n,
                  "  \"rock.gemm\"(%s, %s, %%out) {store = \"set\"} : (buffer<%lldx%lldx%lldx%s>, "
                  "buffer<%lldx%lldx%lldx%s>, buffer<%lldx%lldx%lldx%s>) -> ()\n",
                  A, B, G, K, M, T, G, K, N, T, G, M, N, To);
  } else {
    n += snprintf(buf + n, sizeof buf - n,
                  "  %%c = \"rock.alloc\"() : () -> buffer<%lldx%lldx%lldx%s>\n"
                  "  \"rock.gemm\"(%s, %s, %%c) {store = \"set\"} : (buffer<%lldx%lldx%lldx%s>, "
                  "buffer<%lldx%lldx%lldx%s>, buffer<%lldx%lldx%lldx%s>) -> ()\n"
                  "  %%bb = \"rock.transform\"(%%bias) {view = #view<[AddDim{%lld} [\"g\"] at [0] -> [] at [], "
                  "AddDim{%lld} [\"m\"] at [1] -> [] at [], PassThrough [\"n\"] at [2] -> [\"n\"] at [0]] "
                  "bounds=[%lld,%lld,%lld] -> [%lld]>} : (buffer<%lldxf32>) -> buffer<%lldx%lldx%lldxf32>\n"
                  "  \"rock.elementwise\"(%%c, %%bb, %%out) ({\n"
                  "  ^bb0(%%x: f32, %%y: f32):\n"
                  "    %%s = arith.addf %%x, %%y : f32\n"
                  "    %%z = arith.constant 0.0 : f32\n"
                  "    %%r = arith.maxf %%s, %%z : f32\n",
                  G, M, N, Ta, A, B, G, K, M, T, G, K, N, T, G, M, N, Ta, G, M, G, M, N, N, N, G, M, N);
    if (strcmp(To, "f32")) {
      n += snprintf(buf + n, sizeof buf - n,
                    "    %%h = \"arith.truncf\"(%%r) : (f32) -> %s\n    \"rock.yield\"(%%h) : (%s) -> ()\n", To, To);
    } else {
      n += snprintf(buf + n, sizeof buf - n, "    \"rock.yield\"(%%r) : (f32) -> ()\n");
    }
    n += snprintf(buf + n, sizeof buf - n,
                  "  }) : (buffer<%lldx%lldx%lldxf32>, buffer<%lldx%lldx%lldxf32>, buffer<%lldx%lldx%lldx%s>) -> ()\n",
                  G, M, N, G, M, N, G, M, N, To);
  }
  snprintf(buf + n, sizeof buf - n, "  func.return\n}\n");
  return buf;
}

static const char *k_pipeline = "rock-gemm-to-gridwise,rock-gridwise-to-blockwise,rock-blockwise-to-threadwise,"
                                "rock-align-tiling,rock-lower-loops,canonicalize,cse,dce";
/* k_pipeline with the wgmma GEMMs' register-staged K loop (tma=0; TMA, the sm_90a default where
 * the operands are plain boxes, is test_tma's): test_wgmma's protocol and its mutations */
static const char *k_reg_pipeline =
    "rock-gemm-to-gridwise,rock-gridwise-to-blockwise{tma=0},rock-blockwise-to-threadwise,"
    "rock-align-tiling,rock-lower-loops,canonicalize,cse,dce";

/* Parses and lowers a case to loop level; NULL (+ err) on failure. */
static kl_op *lower_case(kl_ctx *ctx, const gcase *c, const char *pipeline, char *err, size_t errlen) {
  const char *text = gemm_kir(c);
  kl_op *m = kl_parse_module(ctx, text, strlen(text), "accel.kir");
  if (!m) {
    char *d = kl_diag_take(ctx);
    snprintf(err, errlen, "parse: %s\n%s", d, text);
    free(d);
    return NULL;
  }
  kl_pass_manager *pm = kl_pass_manager_create(ctx);
  kl_status st = kl_pass_manager_add_pipeline(pm, pipeline ? pipeline : k_pipeline);
  if (st == KL_OK) st = kl_pass_manager_run(pm, m);
  kl_pass_manager_destroy(pm);
  if (st != KL_OK) {
    char *d = kl_diag_take(ctx);
    snprintf(err, errlen, "%s", d);
    free(d);
    return NULL;
  }
  return m;
}
static kl_op *kernel_of(kl_op *m) {
  for (kl_op *o = kl_module_body(m)->first; o; o = o->next)
    if (kl_is_kernel(o)) return o;
  return NULL;
}
static int count_ops(kl_op *root, const char *name) {
  int n, c = 0;
  kl_op **ops = kl_collect_ops(root, &n);
  for (int i = 0; i < n; i++) c += !strcmp(ops[i]->name, name);
  free(ops);
  return c;
}

/* How many rock.wgmma ops of k (perf config pc) do not have the descriptor pairs they
 * should: every K step of the K tile chained in one op where a warpgroup issues one
 * instruction per K step (mPerWave 64, nPerWave <= 256, at most 16 steps), else one pair. */
static int wgmma_not_chained(kl_op *k, const char *pc) {
  int64_t f[7] = { 0 };
  if (!pc ||
      sscanf(pc, "v3:%lld,%lld,%lld,%lld,%lld,%lld", (long long *)&f[0], (long long *)&f[1], (long long *)&f[2],
             (long long *)&f[3], (long long *)&f[4], (long long *)&f[5]) != 6)
    return -1;
  int n, bad = 0;
  kl_op **ops = kl_collect_ops(k, &n);
  for (int i = 0; i < n; i++) {
    if (strcmp(ops[i]->name, "rock.wgmma")) continue;
    const char *instr = kl_op_attr_string(ops[i], "instr");
    int64_t ki = instr && strstr(instr, "k32.") ? 32 : 16;
    int64_t pairs = f[3] == 64 && f[4] <= 256 && f[2] / ki <= 16 ? f[2] / ki : 1;
    bad += ops[i]->nopnds != 2 * pairs + 1;
  }
  free(ops);
  return bad;
}

/* small integers: exact in every input type, sums exact in f32 */
static double rnd_val(uint64_t *st) {
  *st = *st * 6364136223846793005ull + 1442695040888963407ull;
  return (double)((int)((*st >> 33) % 7) - 3);
}
/* fp8 inputs (ebits 4: e4m3, 5: e5m2): a random code of either sign, every mantissa, the
 * exponents 2^-2..2^2 (and 1 in 16 a zero), so that every product is a multiple of 2^-10
 * below 2^6 and sums of up to 256 of them are exact in f32 */
static int rnd_fp8(uint64_t *st, int ebits) {
  *st = *st * 6364136223846793005ull + 1442695040888963407ull;
  uint64_t r = *st >> 20;
  int mbits = 7 - ebits, bias = (1 << (ebits - 1)) - 1;
  if (r % 16 == 0) return (int)((r >> 4) & 1) << 7;
  int e = (int)((r >> 5) % 5) - 2 + bias, m = (int)((r >> 8) & ((1 << mbits) - 1));
  return (int)(((r >> 4) & 1) << 7) | (e << mbits) | m;
}

/* The K loop of a lowered kernel: the scf.for with rock.barrier ops in its body that
 * contains a rock.mma (NULL if none); its barriers per K step (the body's barriers over
 * the loop's constant step) in *bps. */
static kl_op *k_loop(kl_op *k, double *bps) {
  int n;
  kl_op **ops = kl_collect_ops(k, &n), *best = NULL;
  for (int i = 0; i < n && !best; i++) {
    kl_op *f = ops[i];
    if (strcmp(f->name, "scf.for") || !f->nregions || count_ops(f, "rock.mma") == 0) continue;
    int nb = 0;
    for (kl_op *o = f->regions[0].first ? f->regions[0].first->first : NULL; o; o = o->next)
      nb += !strcmp(o->name, "rock.barrier");
    const kl_op *st = f->nopnds >= 3 ? f->opnds[2].value->def : NULL;
    const kl_attr *v = st ? kl_op_attr(st, "value") : NULL;
    if (nb && v && v->kind == KL_AT_INT && v->i > 0) {
      best = f;
      *bps = (double)nb / (double)v->i;
    }
  }
  free(ops);
  return best;
}
/* Of the last run_case_with: the kernel's amd_lds_layout is "xor" (g_last_xor1: "xor1",
 * the kpack-1 tiles); its K loop's barriers per K step (k_loop; 0 without one). */
static bool g_last_xor, g_last_xor1;
static double g_last_bps;

/* When set, run_case_with breaks the lowered kernel with it before interpreting; it
 * returns the part of the interpreter's error expected (NULL: the mutation found nothing
 * to break, which fails). */
static const char *(*g_mutate)(kl_op *kernel);

/* Lowers (through `pipeline`, NULL: k_pipeline), interprets and checks one case against
 * a direct matmul. */
/* The fp8 wgmma GEMM of one output by the rule (fp8_rule_instr): products p[0..K) in K order
 * (ex their alignment exponents); the config's K slices (split-K S: slices of
 * Kc = ceil(ceil(K / S) / kpb) kpb, else one, padded to kpb with zeros), within a slice
 * intervals of P k32 instructions (the kernel's fp8_promote / 32; 0: one level) from a zero
 * accumulator, each added to the slice's sum in f32, and the slices' sums added in f32 (the
 * split's atomic adds onto the zero-filled output; at most 2 slices here: order-free).
 * *nadd: the f32 adds. */
static double fp8_rule_gemm(const double *p, const int *ex, int64_t K, int64_t kpb, int64_t S, int64_t P, int *nadd) {
  int64_t kc = S > 1 ? ((K + S - 1) / S + kpb - 1) / kpb * kpb : (K + kpb - 1) / kpb * kpb;
  double out = 0;
  *nadd = 0;
  for (int64_t off = 0; off < K; off += kc) {
    int64_t ni = kc / 32, per = P > 0 ? P : ni;
    double main = 0;
    for (int64_t j0 = 0; j0 < ni; j0 += per) {
      double t = 0;
      for (int64_t j = j0; j < j0 + per && j < ni; j++) {
        double pp[32];
        int ee[32];
        for (int i = 0; i < 32; i++) {
          int64_t k = off + 32 * j + i;
          pp[i] = k < K && k < off + kc ? p[k] : 0;
          ee[i] = k < K && k < off + kc ? ex[k] : 0;
        }
        t = fp8_rule_instr(t, pp, ee, 32);
      }
      if (j0 == 0)
        main = t;
      else
        main = kl_round_f32(main + t), ++*nadd;
    }
    if (off == 0)
      out = main;
    else
      out = kl_round_f32(out + main), ++*nadd;
  }
  return out;
}

static int g_fp8_cases, g_fp8_promoted;
static double g_fp8_worst;
static void run_case_with(const gcase *c, const char *pipeline) {
  char err[4096], what[256];
  snprintf(what, sizeof what, "%s %s G=%lld M=%lld N=%lld K=%lld%s%s%s perf=%s -> %s", c->target, c->type,
           (long long)c->G, (long long)c->M, (long long)c->N, (long long)c->K, c->at ? " A^T" : "", c->bt ? " B^T" : "",
           c->epi ? " +bias,relu" : "", c->perf ? c->perf : "heuristic", c->out);
  kl_ctx *ctx = kl_test_ctx();
  kl_op *m = lower_case(ctx, c, pipeline, err, sizeof err);
  CHECK(m != NULL, "%s: %s", what, err);
  kl_op *k = m ? kernel_of(m) : NULL;
  if (!k) {
    kl_ctx_destroy(ctx);
    return;
  }
  const kl_target *t = kl_target_lookup(c->target);
  /* Hopper wgmma: a v3 config, or the default for f16 / bf16 on a target with wgmma */
  bool wg = c->perf ? !strncmp(c->perf, "v3:", 3)
                    : t && t->wgmma &&
          (!strcmp(c->type, "f16") || !strcmp(c->type, "bf16") || !strcmp(c->type, "f8e4m3fn") ||
           !strcmp(c->type, "f8e5m2")) &&
          (!pipeline || !strstr(pipeline, "wgmma=false"));
  bool want_accel = !wg && (!c->perf || !strncmp(c->perf, "v2:", 3)) &&
      kl_accel_desc_for(t, kl_type_scalar(ctx, kl_scalar_kind_from_name(c->type, strlen(c->type))));
  const char *lay = kl_op_attr_string(k, "amd_lds_layout");
  g_last_xor = lay && !strcmp(lay, "xor");
  g_last_xor1 = lay && !strcmp(lay, "xor1");
  g_last_bps = 0;
  k_loop(k, &g_last_bps);
  CHECK((count_ops(k, "rock.mma") > 0) == want_accel, "%s: %d rock.mma ops (accel expected: %d)", what,
        count_ops(k, "rock.mma"), want_accel);
  const char *pc = kl_op_attr_string(k, "perf_config");
  CHECK(pc && !strncmp(pc, wg ? "v3:" : want_accel ? "v2:" : "v1:", 3), "%s: perf_config %s", what, pc ? pc : "none");
  CHECK(!wg || (count_ops(k, "rock.wgmma") > 0 && count_ops(k, "rock.mma") == 0), "%s: %d rock.wgmma ops", what,
        count_ops(k, "rock.wgmma"));
  CHECK(!wg || wgmma_not_chained(k, pc) == 0, "%s: %d rock.wgmma ops not chained over the K tile (%s)", what,
        wgmma_not_chained(k, pc), pc ? pc : "-");
  int64_t G = c->G, M = c->M, N = c->N, K = c->K;
  double *A = malloc(sizeof(double) * G * M * K), *B = malloc(sizeof(double) * G * N * K),
         *bias = malloc(sizeof(double) * N);
  double *O = malloc(sizeof(double) * G * M * N);
  uint64_t st = (uint64_t)(M * 1000003 + N * 1009 + K * 7 + G);
  /* fp8: the kernel's buffers hold the codes (Ac, Bc), the reference their values */
  int x8 = fp8_ebits(kl_type_scalar(ctx, kl_scalar_kind_from_name(c->type, strlen(c->type))));
  double *Ac = x8 ? malloc(sizeof(double) * G * M * K) : A, *Bc = x8 ? malloc(sizeof(double) * G * N * K) : B;
  for (int64_t i = 0; i < G * M * K; i++) A[i] = x8 ? fp8_decode(x8, (int)(Ac[i] = rnd_fp8(&st, x8))) : rnd_val(&st);
  for (int64_t i = 0; i < G * N * K; i++) B[i] = x8 ? fp8_decode(x8, (int)(Bc[i] = rnd_fp8(&st, x8))) : rnd_val(&st);
  for (int64_t i = 0; i < N; i++) bias[i] = rnd_val(&st) + 0.5;
  for (int64_t i = 0; i < G * M * N; i++) O[i] = NAN; /* never written: stays NaN */
  double *args[4] = { Ac, Bc, c->epi ? bias : O, O };
  int64_t nmma = 0;
  const char *expect = g_mutate ? g_mutate(k) : NULL; /* a broken protocol: the interpreter must refuse it */
  bool ok = sim_run(k, t, args, err, sizeof err, &nmma);
  if (g_mutate) {
    CHECK(expect && !ok && strstr(err, expect), "%s, mutated: expected an interpreter error with \"%s\", got %s", what,
          expect ? expect : "?", ok ? "none" : err);
    ok = false;
  }
  CHECK(ok || g_mutate, "%s: interpreter: %s", what, err);
  CHECK(g_mutate || !(want_accel || wg) || nmma > 0, "%s: no matrix instruction executed", what);
  const kl_type *ot = kl_type_scalar(ctx, kl_scalar_kind_from_name(c->out, strlen(c->out)));
  int64_t bad = 0, first = -1, pf[8] = { 0 }, promote = 0, outb = 0;
  double got0 = 0, want0 = 0, worst = 0;
  /* the fp8 wgmma: the rule's emulation (fp8_rule_gemm) bit for bit, and within the rule's
   * closed-form bound of the exact sum (docs/ARCHITECTURE.md, fp8_wgmma_rule.bound_closed:
   * each interval of P products loses less than (P + P/16 - 1) 2^-13 of its sum |a b|, each
   * f32 add rounds by at most 2^-24 of the running sum; normal operands, as rnd_fp8 draws) */
  bool f8wg = wg && x8 && pc &&
      sscanf(pc, "v3:%" SCNd64 ",%" SCNd64 ",%" SCNd64 ",%" SCNd64 ",%" SCNd64 ",%" SCNd64 ",%" SCNd64, &pf[0], &pf[1],
             &pf[2], &pf[3], &pf[4], &pf[5], &pf[6]) >= 6;
  if (f8wg) kl_op_attr_i64(k, "fp8_promote", &promote);
  double *prod = f8wg ? malloc(sizeof(double) * K) : NULL;
  int *pex = f8wg ? malloc(sizeof(int) * K) : NULL;
  for (int64_t g = 0; ok && g < G; g++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double acc = 0, absum = 0;
        for (int64_t kk = 0; kk < K; kk++) {
          int64_t ia = c->at ? (g * M + i) * K + kk : (g * K + kk) * M + i;
          int64_t ib = c->bt ? (g * N + j) * K + kk : (g * K + kk) * N + j;
          double a = A[ia], b = B[ib];
          acc += a * b;
          absum += fabs(a * b);
          if (f8wg) prod[kk] = a * b, pex[kk] = fp8_align_exp(x8, (int)Ac[ia], (int)Bc[ib]);
        }
        double emu = 0;
        int nadd = 0;
        if (f8wg) {
          emu = fp8_rule_gemm(prod, pex, K, pf[2], pf[6], promote / 32, &nadd);
          int64_t P = promote > 0 ? promote : (K + pf[2] - 1) / pf[2] * pf[2];
          double u = ldexp(1.0, -24), c1 = (double)(P + P / 16 - 1) * ldexp(1.0, -13);
          double cb = (c1 + nadd * u) / (1 - nadd * u), ex = acc + (c->epi ? bias[j] : 0);
          double tol = cb * absum + ldexp(1.0, -23) * (fabs(ex) + cb * absum) + 1e-30;
          double r = fabs(kl_round_f32(emu + (c->epi ? bias[j] : 0)) - ex) / tol;
          if (r > worst) worst = r;
          if (r > 1) outb++;
        }
        if (c->epi) {
          acc += bias[j];
          if (acc < 0) acc = 0;
          if (f8wg) emu = kl_round_f32(emu + bias[j]), emu = emu < 0 ? 0 : emu;
        }
        double want = round_to(ot, f8wg ? emu : acc), got = O[(g * M + i) * N + j];
        if (!(got == want)) {
          if (first < 0) {
            first = (g * M + i) * N + j;
            got0 = got;
            want0 = want;
          }
          bad++;
        }
      }
  CHECK(bad == 0, "%s: %lld of %lld outputs differ (first at %lld: got %g, want %g)%s", what, (long long)bad,
        (long long)(G * M * N), (long long)first, got0, want0,
        f8wg ? " (the fp8 wgmma rule's emulation, fp8_rule_gemm)" : "");
  CHECK(outb == 0, "%s: %lld outputs of the fp8 wgmma rule outside its closed-form bound (worst %.3g x)", what,
        (long long)outb, worst);
  if (f8wg) {
    g_fp8_cases++;
    if (promote > 0) g_fp8_promoted++;
    if (worst > g_fp8_worst) g_fp8_worst = worst;
  }
  free(prod);
  free(pex);
  if (x8) {
    free(Ac);
    free(Bc);
  }
  free(A);
  free(B);
  free(bias);
  free(O);
  kl_ctx_destroy(ctx);
}

static void run_case(const gcase *c) { run_case_with(c, NULL); }
/* the fp8 wgmma cases checked against the rule (fp8_rule_gemm), those promoted, the worst
 * error over the closed-form bound */

static void test_numerics(void) {
  group_begin();
  static const gcase cases[] = {
    /* mma.sync (sm_80 / sm_90): f16, bf16, i8; odd sizes, transposes, several configs */
    { "sm_90", "f16", 1, 37, 29, 45, false, false, false, "v2:32,16,32,16,8,2", "f32" },
    { "sm_90", "f16", 2, 33, 17, 40, true, false, true, "v2:32,32,16,16,16,8", "f16" },
    { "sm_80", "bf16", 1, 50, 40, 33, false, true, true, "v2:64,32,32,32,16,2", "bf16" },
    { "sm_80", "f16", 1, 64, 64, 64, false, false, false, NULL, "f32" },
    { "sm_90", "bf16", 1, 7, 9, 19, true, true, false, NULL, "f32" },
    { "sm_90", "i8", 1, 21, 13, 70, false, false, false, "v2:32,16,32,16,8,4", "i32" },
    /* MFMA (gfx908 / gfx90a / gfx942): f16, bf16 (both forms), i8 (both forms), f32 */
    { "gfx942", "f16", 1, 70, 45, 37, false, false, true, "v2:64,32,16,32,32,4", "f16" },
    { "gfx942", "f16", 1, 40, 33, 24, true, true, false, "v2:32,64,8,32,32,4", "f32" },
    { "gfx90a", "bf16", 2, 31, 35, 20, false, false, false, NULL, "f32" },
    { "gfx908", "bf16", 1, 33, 32, 13, false, true, true, "v2:32,32,8,32,32,2", "bf16" },
    { "gfx942", "i8", 1, 35, 30, 50, false, false, false, "v2:32,32,32,32,32,8", "i32" },
    { "gfx908", "i8", 1, 32, 33, 9, true, false, false, NULL, "i32" },
    { "gfx942", "f32", 1, 33, 20, 7, false, false, true, NULL, "f32" },
    /* WMMA (gfx1100) */
    { "gfx1100", "f16", 1, 33, 47, 40, false, false, true, "v2:32,32,16,16,16,16", "f16" },
    { "gfx1100", "bf16", 1, 20, 17, 48, true, true, false, "v2:32,16,32,16,16,8", "f32" },
    { "gfx1100", "i8", 1, 17, 18, 35, false, false, false, NULL, "i32" },
    /* several instructions per wave in both dims, several waves in both dims */
    { "sm_90", "f16", 1, 70, 60, 50, false, true, false, "v2:32,32,16,32,16,8", "f32" },
    { "sm_80", "bf16", 1, 64, 64, 32, true, false, true, "v2:64,64,16,32,32,2", "f32" },
    { "gfx942", "f16", 1, 64, 64, 16, false, false, false, "v2:64,64,16,64,64,4", "f32" },
    { "gfx90a", "f16", 1, 100, 90, 20, true, true, true, "v2:64,64,8,32,32,4", "f16" },
    { "gfx1100", "f16", 1, 48, 40, 32, false, true, false, "v2:32,32,16,32,32,16", "f32" },
    { "gfx1100", "bf16", 1, 64, 64, 16, false, false, true, "v2:64,64,16,32,32,8", "bf16" },
    { "gfx942", "f16", 1, 128, 96, 64, false, false, false, NULL, "f32" },
    { "sm_90", "f16", 1, 96, 128, 64, true, false, false, NULL, "f32" },
    /* the FMA path on GPU targets (v1 config, f32 on NVIDIA, gfx1030) */
    { "gfx942", "f16", 1, 19, 23, 17, false, false, true, "v1:32,32,8,4,4,2", "f16" },
    { "sm_90", "f32", 1, 19, 23, 17, true, false, false, NULL, "f32" },
    { "gfx1030", "f16", 1, 19, 23, 17, false, false, false, NULL, "f32" },
    /* fp8 operands kept (fp8-compute{gemm-operands=fp8}) where no matrix instruction takes
     * them: the FMA path converts after its tiles (arith.extf of the codes) */
    { "sm_90", "f8e4m3fn", 1, 19, 23, 37, true, false, true, NULL, "f32" },
    { "gfx942", "f8e5m2", 1, 21, 18, 40, false, true, false, NULL, "f32" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&cases[i]);
  group_end(
      "numerics: lane-level interpretation of the lowered kernels equals a direct matmul (mma.sync, MFMA, WMMA, FMA)");
}

/* mma.sync LDS layout (passes/rock_gridwise_to_blockwise.c): kpack 8 (16 bytes of K per
 * row) with the d + d/8 row skew and a pad row per K group. Counted at the IR's access
 * widths by the interpreter: the fragment reads (32-bit) are bank-conflict-free in every
 * case, double- (even K steps) and single-buffered (odd); for K-contiguous operands
 * (A [M,K], B [N,K], the NHWC convolution) with the heuristic's 128x128x32 tile the
 * 128-bit copies into LDS are too. (M/N-contiguous operands are transposed by scalar
 * stores, which may conflict: reported, not checked.) kpack 2 (no skew) has 4-way
 * conflicts on the fragment reads (so the count can fail). */
/* AMD (MFMA / WMMA): the configs the heuristic picks for the suite's big GEMMs, one block
 * tile, two K steps; LDS accesses counted per phase at the IR's widths (32 banks of 4
 * bytes; 128-bit accesses 8 lanes per phase, 64-bit 16, 32-bit 32, all lanes of each wave).
 * MFMA and WMMA with 16-byte kpack rows use the skewed rows of the mma.sync layout
 * (rock-gridwise-to-blockwise): MFMA fragment reads (64-bit, 16 rows of 16 bytes) 2-way,
 * WMMA's (two 16-byte rows per lane, lanes 16-31 the same rows as 0-15) conflict-free,
 * copies <= 2-way (the copy layout ranks by its LDS store wavefronts on AMD: the
 * transposed scalar stores of an N-contiguous B were 4-way with lanes along N only;
 * 32-way unskewed: the kpack 4 case shows the check can fail; WMMA's old kpack 16, 32-byte
 * rows unskewed, 5.3-way copies and 2-way reads). */
static void test_banks_amd(void) {
  group_begin();
  static const gcase cases[] = {
    { "gfx942", "f16", 1, 256, 256, 64, false, false, false, "v2:256,256,32,128,64,8", "f32" },
    { "gfx942", "f16", 1, 256, 256, 64, false, true, false, "v2:256,256,32,128,64,8", "f32" },
    { "gfx90a", "bf16", 1, 256, 128, 128, false, false, false, "v2:256,128,64,128,32,8", "f32" },
    { "gfx942", "f32", 1, 256, 256, 32, false, false, false, "v2:256,256,16,128,64,1", "f32" },
    { "gfx1100", "f16", 1, 256, 64, 128, false, false, false, "v2:256,64,64,64,16,8", "f32" },
    { "gfx942", "f16", 1, 256, 256, 64, false, false, false, "v2:256,256,32,128,64,4", "f32" }, /* no skew */
    /* the heuristic's other picks for the suite (spec/lua/amd_cases.lua) */
    { "gfx942", "f16", 1, 128, 128, 128, false, false, false, "v2:128,128,64,64,32,8", "f32" },
    { "gfx942", "bf16", 1, 64, 64, 128, false, false, false, "v2:64,64,64,64,32,8", "f32" },
    { "gfx942", "f16", 1, 128, 128, 64, false, true, false, "v2:128,128,32,128,64,8", "f32" },
    { "gfx942", "f16", 1, 64, 256, 64, false, true, false, "v2:64,256,32,64,128,8", "f32" },
    { "gfx942", "f16", 1, 128, 64, 128, false, true, false, "v2:128,64,64,32,32,8", "f32" },
    { "gfx90a", "f16", 1, 256, 256, 64, false, true, false, "v2:256,256,32,128,64,8", "f32" },
    { "gfx90a", "f16", 1, 64, 256, 128, false, true, false, "v2:64,256,64,32,64,8", "f32" },
    { "gfx90a", "f16", 1, 32, 32, 128, false, true, false, "v2:32,32,64,32,32,8", "f32" },
    { "gfx90a", "bf16", 1, 128, 128, 128, false, false, false, "v2:128,128,64,64,32,8", "f32" },
    /* the suite's forms: GEMMs A [M,K] and B [K,N] (B transposed into LDS), convs both K-contiguous */
    { "gfx942", "f16", 1, 256, 256, 64, true, false, false, "v2:256,256,32,128,64,8", "f32" },
    { "gfx942", "bf16", 1, 128, 128, 128, true, false, false, "v2:128,128,64,64,32,8", "f32" },
    { "gfx942", "f16", 1, 64, 64, 128, true, false, false, "v2:64,64,64,64,32,8", "f32" },
    { "gfx942", "f16", 1, 128, 256, 128, true, true, false, "v2:128,256,64,64,64,8", "f32" },
    { "gfx90a", "f16", 1, 256, 256, 64, true, false, false, "v2:256,256,32,128,64,8", "f32" },
    /* WMMA (gfx1100, wave32): the heuristic's picks for the suite, kpack 8 (16-byte rows, skewed) */
    { "gfx1100", "f16", 1, 256, 64, 128, true, false, false, "v2:256,64,64,64,16,8", "f32" },
    { "gfx1100", "bf16", 1, 256, 64, 128, true, false, false, "v2:256,64,64,64,16,8", "f32" },
    { "gfx1100", "f16", 1, 64, 32, 128, true, false, false, "v2:64,32,64,32,32,8", "f32" },
    { "gfx1100", "f16", 1, 32, 32, 128, true, true, false, "v2:32,32,64,16,16,8", "f32" },
    { "gfx1100", "f16", 1, 128, 64, 128, true, true, false, "v2:128,64,64,32,16,8", "f32" },
    { "gfx1100", "f16", 1, 64, 64, 128, true, true, false, "v2:64,64,64,64,16,8", "f32" },
    { "gfx1100", "f16", 1, 128, 64, 128, true, true, false, "v2:128,64,64,64,16,8", "f32" },
    { "gfx1100", "f16", 1, 128, 32, 64, true, true, false, "v2:128,32,32,64,32,8", "f32" },
    { "gfx1100", "f16", 1, 256, 64, 128, true, false, false, "v2:256,64,64,64,16,16", "f32" }, /* kpack 16 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const gcase *c = &cases[i];
    for (int j = 0; j < 2; j++) g_lds_wavefronts[j] = g_lds_ideal[j] = -1;
    run_case(c);
    printf("  banks: %s %s %lldx%lldx%lld%s %s: LDS loads %lld wavefronts for %lld phases, stores %lld for %lld\n",
           c->target, c->type, (long long)c->M, (long long)c->N, (long long)c->K, c->bt ? " B^T" : "", c->perf,
           (long long)g_lds_wavefronts[0], (long long)g_lds_ideal[0], (long long)g_lds_wavefronts[1],
           (long long)g_lds_ideal[1]);
    CHECK(g_lds_ideal[0] > 0 && g_lds_ideal[1] > 0, "%s: no LDS access counted", c->perf);
    /* kpack 8 (2-byte) / 1 (f32): 16-byte rows, skewed; kpack 4 (MFMA) and 16 (WMMA) are not */
    const char *kp = strrchr(c->perf, ',');
    bool skewed = kp && strcmp(kp, ",4") && strcmp(kp, ",16");
    if (skewed) { /* the fragment reads and the copies at most 2-way */
      CHECK(g_lds_wavefronts[0] <= 2 * g_lds_ideal[0], "%s %s: fragment reads %lld wavefronts for %lld phases",
            c->target, c->perf, (long long)g_lds_wavefronts[0], (long long)g_lds_ideal[0]);
      CHECK(g_lds_wavefronts[1] <= 2 * g_lds_ideal[1], "%s %s: copies %lld wavefronts for %lld phases", c->target,
            c->perf, (long long)g_lds_wavefronts[1], (long long)g_lds_ideal[1]);
      if (!strcmp(c->target, "gfx1100")) /* WMMA: two 16-byte rows per lane, 8 lanes on 128 contiguous bytes */
        CHECK(g_lds_wavefronts[0] == g_lds_ideal[0], "%s %s: WMMA fragment reads %lld wavefronts for %lld phases",
              c->target, c->perf, (long long)g_lds_wavefronts[0], (long long)g_lds_ideal[0]);
    } else /* the unskewed copies conflict (the kpack 4 MFMA / kpack 16 WMMA cases: the check can fail) */
      CHECK(g_lds_wavefronts[1] > 4 * g_lds_ideal[1], "%s %s: expected the unskewed copies to conflict", c->target,
            c->perf);
  }
  group_end("banks: AMD heuristic configs: MFMA and WMMA fragment reads and copies <= 2-way with skewed 16-byte "
            "rows (kpack 8 for 2-byte types)");
}

/* One AMD heuristic config c of the bank tests, in the GEMM (bt false) or conv-form (bt) case
 * of element type dt: perf gets the config's v2 string, the case runs (numerics, races) with
 * g_lds_wavefronts / g_lds_ideal reset before it; returns the case (its perf is the buffer). */
static gcase amd_bank_case(const char *target, const char *dt, const kl_accel_config *c, bool bt, char *perf,
                           size_t n) {
  snprintf(perf, n, "v2:%lld,%lld,%lld,%lld,%lld,%lld", (long long)c->m_per_block, (long long)c->n_per_block,
           (long long)c->k_per_block, (long long)c->m_per_wave, (long long)c->n_per_wave, (long long)c->kpack);
  gcase g = { target, dt, 1, c->m_per_block, c->n_per_block, 2 * c->k_per_block, true, bt, false, perf, "f32" };
  for (int j = 0; j < 2; j++) g_lds_wavefronts[j] = g_lds_ideal[j] = -1;
  run_case(&g);
  return g;
}

/* Every config the AMD heuristic can pick (kl_accel_amd_candidates) for 2-byte inputs on
 * gfx90a, gfx942 (MFMA) and gfx1100 (WMMA), one block tile and two K steps, in the
 * benchmark suite's two operand forms (GEMM: A [M,K] and B [K,N], B transposed into LDS;
 * conv: both K-contiguous): the interpreter's numerics and the LDS bank count, fragment
 * reads and copies at most 2-way. KILN_TEST_AMD_FORMS=1 runs only the GEMM form. */
static void test_banks_amd_all(void) {
  group_begin();
  static const char *targets[] = { "gfx90a", "gfx942", "gfx1100" };
  kl_ctx *ctx = kl_test_ctx();
  int64_t total = 0;
  for (size_t ti = 0; ti < sizeof targets / sizeof *targets; ti++) {
    const kl_target *t = kl_target_lookup(targets[ti]);
    const kl_accel_desc *d = kl_accel_desc_for(t, kl_type_scalar(ctx, KL_TY_F16));
    static kl_accel_config cs[KL_ACCEL_AMD_MAX_CANDIDATES];
    int n = d ? kl_accel_amd_candidates(t, d, 2, cs, KL_ACCEL_AMD_MAX_CANDIDATES) : 0;
    CHECK(n > 0 && n <= KL_ACCEL_AMD_MAX_CANDIDATES, "%s: %d heuristic candidates", targets[ti], n);
    int64_t worst[2] = { 0, 0 }; /* per mille of the ideal */
    int nxor = 0;                /* configs in the xor layout (amd-lds-layout=auto) */
    for (int i = 0; i < n && i < KL_ACCEL_AMD_MAX_CANDIDATES; i++)
      for (int form = 0; form < (getenv("KILN_TEST_AMD_FORMS") ? 1 : 2); form++) {
        char perf[96];
        gcase g = amd_bank_case(targets[ti], "f16", &cs[i], form == 1, perf, sizeof perf);
        total++;
        if (g_last_xor) { /* the unpadded xor tiles exist to double-buffer: one barrier per K step */
          nxor += form == 0;
          CHECK(g_last_bps == 1.0, "%s %s%s (xor LDS): %.2f barriers per K step", g.target, perf, g.bt ? " B^T" : "",
                g_last_bps);
        }
        CHECK(g_lds_ideal[0] > 0 && g_lds_ideal[1] > 0, "%s %s: no LDS access counted", g.target, perf);
        for (int j = 0; j < 2; j++) {
          CHECK(g_lds_wavefronts[j] <= 2 * g_lds_ideal[j], "%s %s%s: %s %lld wavefronts for %lld phases", g.target,
                perf, g.bt ? " B^T" : "", j ? "copies" : "fragment reads", (long long)g_lds_wavefronts[j],
                (long long)g_lds_ideal[j]);
          int64_t pm = g_lds_ideal[j] > 0 ? 1000 * g_lds_wavefronts[j] / g_lds_ideal[j] : 0;
          if (pm > worst[j]) worst[j] = pm;
        }
      }
    printf("  banks: %s f16: %d heuristic configs (%d in the xor LDS layout, double-buffered), worst fragment reads "
           "%.2f-way, copies %.2f-way\n",
           targets[ti], n, nxor, worst[0] / 1000.0, worst[1] / 1000.0);
    if (!strcmp(targets[ti], "gfx942")) CHECK(nxor > 0, "gfx942: no heuristic config takes the xor LDS layout");
  }
  kl_ctx_destroy(ctx);
  group_end("banks: every AMD heuristic config (f16, gfx90a / gfx942 / gfx1100, GEMM and conv forms, skewed or "
            "xor LDS tiles): fragment reads and copies <= 2-way, no LDS race, xor tiles one barrier per K step");
}

/* The FMA-path (no-matrix) configs the GPU heuristic (kl_perf_config_heuristic) picks on
 * target t for elements of eb bytes over a grid of shapes (M, N in 16 .. 16384, K in 64 ..
 * 8192, batch 1 and 64) and the benchmark suite's: the distinct v1 strings into out[0..n),
 * returned n. */
static int fma_picks(const kl_target *t, int eb, char out[][64], int max) {
  static const int64_t mn[] = { 16, 64, 256, 320, 1024, 2304, 4096, 16384 }, ks[] = { 64, 768, 1280, 8192 };
  int n = 0;
  for (int g = 0; g < 2; g++)
    for (size_t a = 0; a < 8; a++)
      for (size_t b = 0; b < 8; b++)
        for (size_t c = 0; c < 4; c++) {
          kl_perf_config pc;
          if (!kl_perf_config_heuristic(t, g ? 64 : 1, mn[a], mn[b], ks[c], eb, &pc)) continue;
          char s[64];
          snprintf(s, sizeof s, "v1:%lld,%lld,%lld,%lld,%lld,%lld", (long long)pc.m_per_block,
                   (long long)pc.n_per_block, (long long)pc.k_per_block, (long long)pc.m_per_thread,
                   (long long)pc.n_per_thread, (long long)pc.kpack);
          int j = 0;
          while (j < n && strcmp(out[j], s)) j++;
          if (j == n && n < max) snprintf(out[n++], 64, "%s", s);
        }
  return n;
}

/* The other AMD GEMM paths of the benchmark suite: every f32 config the heuristic can pick
 * on MFMA (gfx90a, gfx942: kpack 1; the suite's f32 GEMMs) and the no-matrix (FMA) path's
 * configs the heuristic picks over a grid of shapes (fma_picks: gfx1030 f16 / f32, gfx1100
 * f32; the suite's among them), in the GEMM and conv operand forms: numerics, no LDS race,
 * reads (MFMA fragments, FMA operands) and copies at most 2-way. The copies take the xor1
 * tiles (rock-gridwise-to-blockwise: each K row's granules XOR-swizzled inside their 128
 * bytes, no pad); on the plain tiles (amd-lds-layout=skew, the layout before them) the
 * suite's picks were 2.5 to 4-way (MFMA f32, up to 5.33-way over the configs) and 2.25 to
 * 8-way (FMA path): checked below to exceed 2-way, so the bound fails on them. */
static void test_banks_amd_other(void) {
  group_begin();
  kl_ctx *ctx = kl_test_ctx();
  static const char *mfma[] = { "gfx90a", "gfx942" };
  for (size_t ti = 0; ti < sizeof mfma / sizeof *mfma; ti++) {
    const kl_target *t = kl_target_lookup(mfma[ti]);
    const kl_accel_desc *d = kl_accel_desc_for(t, kl_type_scalar(ctx, KL_TY_F32));
    static kl_accel_config cs[KL_ACCEL_AMD_MAX_CANDIDATES];
    int n = d ? kl_accel_amd_candidates(t, d, 4, cs, KL_ACCEL_AMD_MAX_CANDIDATES) : 0;
    CHECK(n > 0 && n <= KL_ACCEL_AMD_MAX_CANDIDATES, "%s f32: %d heuristic candidates", mfma[ti], n);
    int64_t worst[2] = { 0, 0 };
    int nx1 = 0;
    for (int i = 0; i < n && i < KL_ACCEL_AMD_MAX_CANDIDATES; i++)
      for (int form = 0; form < 2; form++) {
        char perf[96];
        gcase g = amd_bank_case(mfma[ti], "f32", &cs[i], form == 1, perf, sizeof perf);
        nx1 += g_last_xor1 && form == 0;
        for (int j = 0; j < 2; j++) {
          CHECK(g_lds_ideal[j] > 0 && g_lds_wavefronts[j] <= 2 * g_lds_ideal[j],
                "%s f32 %s%s: %s %lld wavefronts for %lld phases", g.target, perf, g.bt ? " B^T" : "",
                j ? "copies" : "fragment reads", (long long)g_lds_wavefronts[j], (long long)g_lds_ideal[j]);
          int64_t pm = g_lds_ideal[j] > 0 ? 1000 * g_lds_wavefronts[j] / g_lds_ideal[j] : 0;
          if (pm > worst[j]) worst[j] = pm;
        }
        /* the suite's picks (bench/amd_static.lua) */
        if (!strcmp(perf, "v2:256,128,16,128,32,1") || !strcmp(perf, "v2:256,256,16,128,64,1") ||
            !strcmp(perf, "v2:128,32,16,64,32,1"))
          printf("  banks: %s f32 %s%s (a suite pick): reads %lld / %lld, copies %lld / %lld wavefronts\n", g.target,
                 perf, g.bt ? " B^T" : "", (long long)g_lds_wavefronts[0], (long long)g_lds_ideal[0],
                 (long long)g_lds_wavefronts[1], (long long)g_lds_ideal[1]);
      }
    printf("  banks: %s f32 (MFMA): %d heuristic configs (%d on xor1 tiles), worst fragment reads %.2f-way, copies "
           "%.2f-way\n",
           mfma[ti], n, nx1, worst[0] / 1000.0, worst[1] / 1000.0);
  }
  kl_ctx_destroy(ctx);
  /* the FMA path: the heuristic's picks over a grid of shapes */
  static const struct {
    const char *target, *type;
    int eb;
  } fma[] = { { "gfx1030", "f16", 2 }, { "gfx1030", "f32", 4 }, { "gfx1100", "f32", 4 } };
  for (size_t fi = 0; fi < sizeof fma / sizeof *fma; fi++) {
    static char picks[64][64];
    int np = fma_picks(kl_target_lookup(fma[fi].target), fma[fi].eb, picks, 64);
    CHECK(np > 0, "%s %s: no FMA-path picks", fma[fi].target, fma[fi].type);
    int64_t worst[2] = { 0, 0 };
    for (int i = 0; i < np; i++)
      for (int form = 0; form < 2; form++) {
        int64_t MB, NB, KB;
        sscanf(picks[i], "v1:%lld,%lld,%lld", (long long *)&MB, (long long *)&NB, (long long *)&KB);
        gcase c = { fma[fi].target, fma[fi].type, 1, MB, NB, 2 * KB, true, form == 1, false, picks[i], "f32" };
        for (int j = 0; j < 2; j++) g_lds_wavefronts[j] = g_lds_ideal[j] = -1;
        run_case(&c);
        for (int j = 0; j < 2; j++) {
          CHECK(g_lds_ideal[j] > 0 && g_lds_wavefronts[j] <= 2 * g_lds_ideal[j],
                "%s %s %s%s (FMA path): %s %lld wavefronts for %lld phases", c.target, c.type, c.perf,
                c.bt ? " B^T" : "", j ? "stores" : "loads", (long long)g_lds_wavefronts[j], (long long)g_lds_ideal[j]);
          int64_t pm = g_lds_ideal[j] > 0 ? 1000 * g_lds_wavefronts[j] / g_lds_ideal[j] : 0;
          if (pm > worst[j]) worst[j] = pm;
        }
      }
    printf("  banks: %s %s (FMA path): %d heuristic picks, worst LDS loads %.2f-way, stores %.2f-way\n", fma[fi].target,
           fma[fi].type, np, worst[0] / 1000.0, worst[1] / 1000.0);
  }
  /* the plain tiles (amd-lds-layout=skew: no xor1) of the suite's picks: copies above 2-way */
  static const gcase old[] = {
    { "gfx942", "f32", 1, 256, 256, 32, true, false, false, "v2:256,256,16,128,64,1", "f32" },
    { "gfx90a", "f32", 1, 256, 128, 32, true, true, false, "v2:256,128,16,128,32,1", "f32" },
    { "gfx942", "f32", 1, 128, 32, 32, true, false, false, "v2:128,32,16,64,32,1", "f32" },
    { "gfx1030", "f16", 1, 128, 128, 64, true, true, false, "v1:128,128,32,8,8,1", "f32" },
    { "gfx1030", "f32", 1, 128, 128, 64, true, false, false, "v1:128,128,32,8,8,1", "f32" },
    { "gfx1100", "f32", 1, 128, 128, 64, true, false, false, "v1:128,128,32,8,8,1", "f32" },
  };
  for (size_t i = 0; i < sizeof old / sizeof *old; i++) {
    const gcase *c = &old[i];
    for (int j = 0; j < 2; j++) g_lds_wavefronts[j] = g_lds_ideal[j] = -1;
    run_case_with(c,
                  "rock-gemm-to-gridwise,rock-gridwise-to-blockwise{amd-lds-layout=skew},"
                  "rock-blockwise-to-threadwise,rock-align-tiling,rock-lower-loops,canonicalize,cse,dce");
    printf("  banks: %s %s %s%s plain tiles (amd-lds-layout=skew): copies %lld wavefronts for %lld phases\n", c->target,
           c->type, c->perf, c->bt ? " B^T" : "", (long long)g_lds_wavefronts[1], (long long)g_lds_ideal[1]);
    CHECK(!g_last_xor1 && g_lds_wavefronts[1] > 2 * g_lds_ideal[1],
          "%s %s %s: expected the plain tiles' copies above 2-way (xor1 %d, %lld wavefronts for %lld phases)",
          c->target, c->type, c->perf, g_last_xor1, (long long)g_lds_wavefronts[1], (long long)g_lds_ideal[1]);
  }
  group_end("banks: AMD f32 MFMA heuristic configs (gfx90a / gfx942) and the FMA path's heuristic picks (gfx1030, "
            "gfx1100 f32): reads and copies <= 2-way on the xor1 tiles (the plain tiles' copies were up to 5.33 / "
            "8-way)");
}

/* Removes the first (second: which = 1) barrier of the K loop's body (k_loop). */
static int g_mut_which;
static const char *mut_amd_barrier(kl_op *k) {
  double bps;
  kl_op *f = k_loop(k, &bps);
  int i = 0;
  for (kl_op *o = f ? f->regions[0].first->first : NULL; o; o = o->next)
    if (!strcmp(o->name, "rock.barrier") && i++ == g_mut_which) {
      kl_op_unlink(o);
      return "with no barrier since (a race)";
    }
  return NULL;
}
/* The AMDGPU K loop on unpadded xor LDS tiles (rock-gridwise-to-blockwise{amd-lds-layout},
 * auto: the heuristic's gfx942 256x256x32 f16 / bf16, whose skewed tile pair fits the LDS
 * once but not twice): double-buffered, one barrier per K step, equal to a direct matmul
 * (odd sizes: padded tiles; K steps even and odd; A / B transposed; a fused epilogue),
 * no LDS race (lds_race); with either barrier of the loop body removed the interpreter
 * reports the race. Forced xor (amd-lds-layout=xor) on other MFMA / WMMA tiles too. */
static void test_amd_xor(void) {
  group_begin();
  static const gcase cases[] = {
    { "gfx942", "f16", 1, 256, 256, 64, true, false, false, "v2:256,256,32,128,64,8", "f32" },
    { "gfx942", "bf16", 1, 300, 270, 100, false, true, true, "v2:256,256,32,128,64,8", "bf16" },
    { "gfx942", "f16", 1, 256, 256, 96, true, true, false, "v2:256,256,32,128,64,8", "f16" },
    { "gfx942", "f16", 1, 40, 300, 160, false, false, true, "v2:256,256,32,128,64,8", "f16" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const gcase *c = &cases[i];
    run_case(c);
    CHECK(g_last_xor && g_last_bps == 1.0, "%s %s %s: xor %d, %.2f barriers per K step", c->target, c->type,
          c->perf ? c->perf : "heuristic", g_last_xor, g_last_bps);
    CHECK(g_lds_wavefronts[0] <= 2 * g_lds_ideal[0] && g_lds_wavefronts[1] <= 2 * g_lds_ideal[1],
          "%s: LDS reads %lld / %lld, copies %lld / %lld", c->perf ? c->perf : "heuristic",
          (long long)g_lds_wavefronts[0], (long long)g_lds_ideal[0], (long long)g_lds_wavefronts[1],
          (long long)g_lds_ideal[1]);
    for (g_mut_which = 0; g_mut_which < 2; g_mut_which++) {
      g_mutate = mut_amd_barrier;
      run_case(c);
      g_mutate = NULL;
    }
  }
  /* forced: MFMA 128x128x64 (two 64-byte panels), WMMA 64x64x32, K steps 3 */
  static const gcase forced[] = {
    { "gfx90a", "f16", 1, 128, 128, 192, true, false, false, "v2:128,128,64,64,32,8", "f32" },
    { "gfx1100", "f16", 1, 64, 64, 96, false, true, false, "v2:64,64,32,32,32,8", "f32" },
  };
  for (size_t i = 0; i < sizeof forced / sizeof *forced; i++) {
    run_case_with(&forced[i],
                  "rock-gemm-to-gridwise,rock-gridwise-to-blockwise{amd-lds-layout=xor amd-k-loop=2},"
                  "rock-blockwise-to-threadwise,rock-align-tiling,rock-lower-loops,canonicalize,cse,dce");
    CHECK(g_last_xor && g_last_bps == 1.0, "%s forced xor: xor %d, %.2f barriers per K step", forced[i].perf,
          g_last_xor, g_last_bps);
  }
  /* the heuristic's K loop for gfx90a's and gfx1100's big tiles, which cannot double-buffer
   * at kPerBlock 64: kPerBlock 32 double-buffered on the skewed tiles (two pairs fit: 54 /
   * 45 KiB), by the default rule (kl_accel_amd_dbuf) without amd-k-loop=2; the heuristic
   * takes them for 4096^3 f16 / bf16 (kl_accel_amd_k_tile, checked below) */
  static const gcase dbuf32[] = {
    { "gfx90a", "f16", 1, 256, 128, 128, true, false, false, "v2:256,128,32,128,32,8", "f32" },
    { "gfx90a", "bf16", 1, 256, 128, 96, true, true, false, "v2:256,128,32,128,32,8", "f32" },
    { "gfx1100", "f16", 1, 256, 64, 128, true, false, false, "v2:256,64,32,64,16,8", "f32" },
    { "gfx1100", "f16", 1, 256, 64, 96, true, true, false, "v2:256,64,32,64,16,8", "f32" },
  };
  for (size_t i = 0; i < sizeof dbuf32 / sizeof *dbuf32; i++) {
    const gcase *c = &dbuf32[i];
    for (int j = 0; j < 2; j++) g_lds_wavefronts[j] = g_lds_ideal[j] = -1;
    run_case(c);
    CHECK(!g_last_xor && g_last_bps == 1.0, "%s %s dbuf32: xor %d, %.2f barriers per K step", c->target, c->perf,
          g_last_xor, g_last_bps);
    CHECK(g_lds_ideal[0] > 0 && g_lds_wavefronts[0] <= 2 * g_lds_ideal[0] && g_lds_wavefronts[1] <= 2 * g_lds_ideal[1],
          "%s %s dbuf32: LDS reads %lld / %lld, copies %lld / %lld", c->target, c->perf, (long long)g_lds_wavefronts[0],
          (long long)g_lds_ideal[0], (long long)g_lds_wavefronts[1], (long long)g_lds_ideal[1]);
    printf("  amd dbuf32: %s %s K %lld%s: reads %lld / %lld, copies %lld / %lld wavefronts, 1 barrier per K step\n",
           c->target, c->perf, (long long)c->K, c->bt ? " B^T" : "", (long long)g_lds_wavefronts[0],
           (long long)g_lds_ideal[0], (long long)g_lds_wavefronts[1], (long long)g_lds_ideal[1]);
    for (g_mut_which = 0; g_mut_which < 2; g_mut_which++) {
      g_mutate = mut_amd_barrier;
      run_case(c);
      g_mutate = NULL;
    }
  }
  /* the heuristic's K-loop model (kl_accel_amd_k_tile) on 4096^3: gfx90a 256x128x64 and
   * gfx1100 256x64x64 (single-buffered) become their K-32 variants above; gfx942's
   * 256x256x32 (xor, double-buffered) stays. rock-gemm-to-gridwise takes the move only where
   * the barrier is the LDS-only inline assembly (gfx1100 here; spec/lua/amd_suite_spec.lua) */
  static const struct {
    const char *target, *type, *pick, *want;
  } kt[] = {
    { "gfx90a", "f16", "v2:256,128,64,128,32,8", "v2:256,128,32,128,32,8" },
    { "gfx90a", "bf16", "v2:256,128,64,128,32,8", "v2:256,128,32,128,32,8" },
    { "gfx1100", "f16", "v2:256,64,64,64,16,8", "v2:256,64,32,64,16,8" },
    { "gfx1100", "bf16", "v2:256,64,64,64,16,8", "v2:256,64,32,64,16,8" },
    { "gfx942", "f16", "v2:256,256,32,128,64,8", "v2:256,256,32,128,64,8" },
  };
  for (size_t i = 0; i < sizeof kt / sizeof *kt; i++) {
    const kl_target *t = kl_target_lookup(kt[i].target);
    const kl_accel_desc *d = kl_accel_desc_by_intrinsic(kl_target_accel_for(t, kt[i].type)->intrinsic);
    kl_accel_config h, c;
    char hs[96], cs[96];
    CHECK(kl_accel_config_heuristic(t, d, 1, 4096, 4096, 4096, 2, &h), "%s heuristic", kt[i].target);
    kl_accel_config_print(&h, hs, sizeof hs);
    CHECK(!strcmp(hs, kt[i].pick), "%s %s 4096^3: heuristic %s, want %s", kt[i].target, kt[i].type, hs, kt[i].pick);
    c = h;
    bool moved = kl_accel_amd_k_tile(t, d, 1, 4096, 4096, 4096, 2, &c);
    kl_accel_config_print(&c, cs, sizeof cs);
    CHECK(!strcmp(cs, kt[i].want) && moved == !!strcmp(kt[i].pick, kt[i].want), "%s %s 4096^3: K loop %s, want %s",
          kt[i].target, kt[i].type, cs, kt[i].want);
  }
  /* the default rule (rock-gridwise-to-blockwise amd_dbuf): a WMMA tile whose two skewed pairs
   * fit the 64 KiB at no occupancy cost, gfx1100's seed-conv 128x64x64 (one workgroup of 16
   * waves per CU by registers), is double-buffered without amd-k-loop=2: K steps even and
   * odd, padded M / N, B^T, a fused epilogue */
  static const gcase rule[] = {
    { "gfx1100", "f16", 1, 128, 64, 128, false, false, false, "v2:128,64,64,32,16,8", "f32" },
    { "gfx1100", "f16", 1, 200, 90, 192, false, true, true, "v2:128,64,64,32,16,8", "f16" },
    { "gfx1100", "bf16", 1, 130, 70, 320, true, false, false, "v2:128,64,64,32,16,8", "bf16" },
  };
  for (size_t i = 0; i < sizeof rule / sizeof *rule; i++) {
    const gcase *c = &rule[i];
    for (int j = 0; j < 2; j++) g_lds_wavefronts[j] = g_lds_ideal[j] = -1;
    run_case(c);
    CHECK(g_last_bps == 1.0, "%s %s %lldx%lldx%lld (default rule): %.2f barriers per K step", c->target, c->perf,
          (long long)c->M, (long long)c->N, (long long)c->K, g_last_bps);
    CHECK(g_lds_ideal[0] > 0 && g_lds_wavefronts[0] <= 2 * g_lds_ideal[0] && g_lds_wavefronts[1] <= 2 * g_lds_ideal[1],
          "%s %s (default rule): LDS reads %lld / %lld, copies %lld / %lld", c->target, c->perf,
          (long long)g_lds_wavefronts[0], (long long)g_lds_ideal[0], (long long)g_lds_wavefronts[1],
          (long long)g_lds_ideal[1]);
    printf("  amd dbuf rule: %s %s %lldx%lldx%lld%s: 1 barrier per K step, reads %lld / %lld, copies %lld / %lld\n",
           c->target, c->perf, (long long)c->M, (long long)c->N, (long long)c->K, c->bt ? " B^T" : "",
           (long long)g_lds_wavefronts[0], (long long)g_lds_ideal[0], (long long)g_lds_wavefronts[1],
           (long long)g_lds_ideal[1]);
    for (g_mut_which = 0; g_mut_which < 2; g_mut_which++) {
      g_mutate = mut_amd_barrier;
      run_case(c);
      g_mutate = NULL;
    }
  }
  group_end("amd xor: double-buffered K loop on unpadded xor LDS tiles: one barrier per K step, numerics, no LDS "
            "race; either barrier removed: the race is reported; the kPerBlock 32 double-buffered tiles of "
            "gfx90a / gfx1100 (skewed tiles; the heuristic's K loop for 4096^3) and gfx1100's 128x64x64 WMMA tile "
            "(double-buffered by the default rule) likewise");
}

static void test_banks(void) {
  group_begin();
  static const struct {
    gcase c;
    bool loads_free, stores_free;
  } cases[] = {
    { { "sm_90", "f16", 1, 128, 128, 64, true, true, true, "v2:128,128,32,64,64,8", "f16" }, true, true },
    { { "sm_90", "f16", 1, 128, 128, 64, true, false, false, "v2:128,128,32,64,64,8", "f32" }, true, false },
    { { "sm_90", "bf16", 1, 128, 64, 96, true, true, false, "v2:128,64,32,64,32,8", "f32" }, true, false },
    { { "sm_80", "f16", 1, 64, 128, 128, true, false, false, "v2:64,128,64,32,64,8", "f32" }, true, false },
    { { "sm_90", "f16", 1, 128, 128, 64, true, true, false, "v2:128,128,32,64,64,2", "f32" }, false, false },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const gcase *c = &cases[i].c;
    for (int j = 0; j < 2; j++) g_lds_wavefronts[j] = g_lds_ideal[j] = -1;
    run_case(c);
    printf("  banks: %s %s %lldx%lldx%lld%s%s %s: LDS loads %lld wavefronts for %lld phases, stores %lld for %lld\n",
           c->target, c->type, (long long)c->M, (long long)c->N, (long long)c->K, c->at ? " A^T" : "",
           c->bt ? " B^T" : "", c->perf, (long long)g_lds_wavefronts[0], (long long)g_lds_ideal[0],
           (long long)g_lds_wavefronts[1], (long long)g_lds_ideal[1]);
    CHECK(g_lds_ideal[0] > 0 && g_lds_ideal[1] > 0, "%s: no LDS access counted", c->perf);
    if (cases[i].loads_free)
      CHECK(g_lds_wavefronts[0] == g_lds_ideal[0],
            "%s: fragment reads: %lld LDS wavefronts for %lld phases (bank conflicts)", c->perf,
            (long long)g_lds_wavefronts[0], (long long)g_lds_ideal[0]);
    else
      CHECK(g_lds_wavefronts[0] >= 4 * g_lds_ideal[0],
            "%s: expected 4-way conflicts on the fragment reads without the layout", c->perf);
    if (cases[i].stores_free)
      CHECK(g_lds_wavefronts[1] == g_lds_ideal[1], "%s: copies: %lld LDS wavefronts for %lld phases (bank conflicts)",
            c->perf, (long long)g_lds_wavefronts[1], (long long)g_lds_ideal[1]);
  }
  group_end(
      "banks: mma.sync fragment reads (and the copies of K-contiguous operands) bank-conflict-free with kpack 8 and "
      "skewed LDS rows");
  test_banks_amd();
  /* ctest runs the all-configs proof as its own test, test_accel_amd_all (CMakeLists.txt),
   * beside this one */
  if (!getenv("KILN_TEST_SKIP_AMD_ALL")) test_banks_amd_all();
  if (!getenv("KILN_TEST_SKIP_AMD_ALL")) test_banks_amd_other();
}


/* ldmatrix fragment reads (passes/lower_loops_ldmatrix.c): for the configs the heuristic
 * picks for f16 / bf16 GEMMs on sm_80 / sm_90 (square 64..8192, transformer shapes, odd
 * sizes), a GEMM of one block tile and two K steps with that config (every operand
 * layout) is lowered, interpreted with the ISA's ldmatrix lane mapping (exec_ldmatrix)
 * and checked: equal to a direct matmul, rock.ldmatrix used, and every LDS read of the
 * kernel bank-conflict-free (one wavefront per phase: per 8-row matrix of an ldmatrix). */
/* Protocol mutations of a lowered multi-buffered wgmma K loop (the first wait inside the
 * scf.for that defers its MMAs, pending W - 2, then the barrier; the proxy fence after the
 * LDS stores, before the global loads). */
static kl_op *loop_wait(kl_op *k) {
  int n;
  kl_op **ops = kl_collect_ops(k, &n), *w = NULL;
  for (int i = 0; i < n && !w; i++)
    if (!strcmp(ops[i]->name, "rock.wgmma_sync") && ops[i]->nopnds == 0 && ops[i]->block &&
        ops[i]->block != k->regions[0].first) {
      const char *st = kl_op_attr_string(ops[i], "step");
      if (st && !strcmp(st, "wait")) w = ops[i];
    }
  free(ops);
  return w;
}
static const char *mut_pending(kl_op *k) { /* one group fewer retired: its buffer is overwritten in flight */
  int n, hit = 0;
  kl_op **ops = kl_collect_ops(k, &n);
  for (int i = 0; i < n; i++) {
    const char *st = kl_op_attr_string(ops[i], "step");
    int64_t p = 0;
    if (!strcmp(ops[i]->name, "rock.wgmma_sync") && ops[i]->nopnds == 0 && st && !strcmp(st, "wait") &&
        kl_op_attr_i64(ops[i], "pending", &p))
      kl_op_set_attr(ops[i], "pending", kl_attr_int(k->ctx, p + 1)), hit++;
  }
  free(ops);
  return hit ? "in flight (not retired by a wait_group)" : NULL;
}
static const char *mut_proxy(kl_op *k) { /* the stores never reach the async proxy: the loop's first proxy fence */
  kl_op *w = loop_wait(k), *f = NULL;
  for (kl_op *o = w ? w->block->first : NULL; o && !f; o = o->next) {
    const char *st = kl_op_attr_string(o, "step");
    if (!strcmp(o->name, "rock.wgmma_sync") && st && !strcmp(st, "proxy_fence")) f = o;
  }
  if (!f) return NULL;
  kl_op_unlink(f);
  return "no fence.proxy.async";
}
static const char *mut_barrier(kl_op *k) { /* no barrier after the wait: other warpgroups overwrite too early */
  kl_op *w = loop_wait(k), *b = w ? w->next : NULL;
  if (b && strcmp(b->name, "rock.barrier")) b = b->next; /* after the proxy fence (wgmma-fence=late) */
  if (!b || strcmp(b->name, "rock.barrier")) return NULL;
  kl_op_unlink(b);
  return "barrier since";
}

/* Hopper wgmma (passes/rock_wgmma.h), sm_90a's default: "v3:" configs on sm_90a lower to
 * rock.wgmma_desc / rock.wgmma / rock.wgmma_sync, and the interpreter executes them from
 * the descriptor bits against the LDS image the kernel's own copies wrote (model above):
 * results equal a direct matmul; every wgmma follows a fence, LDS is never written while
 * one is in flight. Configs: 1 and 2 warpgroups along M and N, 2 instructions along M,
 * N = 64, 128, 256, K tiles of 16..64 (odd and even K step counts: single- and
 * double-buffered LDS), odd sizes, transposes, batch, the fused bias + relu + cast; the
 * heuristic through the pass option wgmma=true; the errors of v3 configs. */
static void test_wgmma(void) {
  group_begin();
  static const gcase cases[] = {
    { "sm_90a", "f16", 1, 128, 128, 128, false, false, false, "v3:128,128,64,64,128,8", "f32" },
    { "sm_90a", "bf16", 1, 70, 50, 45, true, false, true, "v3:64,64,32,64,64,8", "bf16" },
    { "sm_90a", "f16", 2, 100, 72, 48, false, true, false, "v3:128,64,16,64,64,8", "f32" },
    { "sm_90a", "f16", 1, 64, 256, 32, true, true, true, "v3:64,256,32,64,256,8", "f16" },
    { "sm_90a", "bf16", 1, 130, 40, 64, false, false, false, "v3:128,64,32,128,64,8", "f32" },
    { "sm_90a", "f16", 1, 33, 129, 80, false, true, true, "v3:64,128,16,64,64,8", "f32" },
    /* the large tiles: two warpgroups of m64n256k16 / of 2 x m64n128k16; 3 and 2 buffers */
    { "sm_90a", "f16", 1, 130, 260, 96, false, false, true, "v3:128,256,32,64,256,8", "f16" },
    { "sm_90a", "bf16", 1, 200, 100, 40, true, true, false, "v3:256,128,16,128,128,8", "f32" },
    { "sm_90a", "f16", 2, 128, 256, 128, true, false, false, "v3:128,256,64,64,256,8", "f32" },
    /* kPerBlock 64 with a peeled remainder of 1 and 2 steps after the 3-buffer loop (4 and 5
     * K steps): the peeled steps skip the copies past the last step */
    { "sm_90a", "f16", 1, 128, 256, 256, false, true, true, "v3:128,256,64,64,256,8", "f16" },
    { "sm_90a", "bf16", 1, 256, 128, 320, true, false, false, "v3:256,128,64,128,128,8", "f32" },
    /* fp8 (m64nNk32 e4m3 / e5m2, LDS tiles [K/16, rows, 16]): odd sizes, K-contiguous and
     * N-contiguous operands, batch, one to four K steps, the large tiles */
    { "sm_90a", "f8e4m3fn", 1, 128, 128, 128, true, true, false, "v3:128,128,64,64,128,16", "f32" },
    { "sm_90a", "f8e5m2", 1, 70, 50, 45, true, false, true, "v3:64,64,32,64,64,16", "f32" },
    { "sm_90a", "f8e4m3fn", 2, 100, 72, 96, false, true, false, "v3:128,64,32,64,64,16", "f32" },
    { "sm_90a", "f8e5m2", 1, 33, 129, 20, false, false, true, "v3:64,128,32,64,64,16", "f32" },
    { "sm_90a", "f8e4m3fn", 1, 130, 260, 192, true, true, true, "v3:128,256,64,64,256,16", "f32" },
    { "sm_90a", "f8e5m2", 1, 200, 100, 256, true, false, false, "v3:256,128,64,128,128,16", "f32" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case_with(&cases[i], k_reg_pipeline);
  /* fp8 two-level accumulation (rock-gemm-to-gridwise{fp8-promote=P}; the default 0, one level:
   * the cases above): one level (0) and intervals of 1, 2, 8 k32 instructions; one to eight intervals,
   * partial last intervals (K 333, 200), the plain loop (one K step), the 3-buffer loop with
   * peeled steps, the heuristic's promotion tiles; each output equal to fp8_rule_gemm */
  {
    static const struct {
      const char *promote;
      gcase c;
    } pc8[] = {
      { "0", { "sm_90a", "f8e4m3fn", 1, 70, 50, 200, true, false, true, "v3:64,64,32,64,64,16", "f32" } },
      { "32", { "sm_90a", "f8e5m2", 1, 64, 72, 333, false, true, false, "v3:64,64,32,64,64,16", "f32" } },
      { "64", { "sm_90a", "f8e4m3fn", 2, 100, 72, 256, false, true, true, "v3:128,64,64,64,64,16", "f32" } },
      { "256", { "sm_90a", "f8e5m2", 1, 130, 140, 448, true, true, false, "v3:128,128,64,64,128,16", "f32" } },
      { "64", { "sm_90a", "f8e4m3fn", 1, 33, 40, 20, false, false, true, "v3:64,64,64,64,64,16", "f32" } },
      { "128", { "sm_90a", "f8e5m2", 1, 150, 260, 200, true, false, true, NULL, "f32" } },
      { "32", { "sm_90a", "f8e4m3fn", 1, 40, 24, 96, true, true, false, NULL, "f32" } },
    };
    for (size_t i = 0; i < sizeof pc8 / sizeof *pc8; i++) {
      char pl[512];
      snprintf(pl, sizeof pl,
               "rock-gemm-to-gridwise{fp8-promote=%s,wgmma=true},rock-gridwise-to-blockwise{tma=0},"
               "rock-blockwise-to-threadwise,rock-align-tiling,rock-lower-loops,canonicalize,cse,dce",
               pc8[i].promote);
      run_case_with(&pc8[i].c, pl);
    }
    /* the promoted ones: the table's entries with P > 0 (the cases above run the default, one level) */
    CHECK(g_fp8_cases >= 13 && g_fp8_promoted >= 6, "fp8 wgmma cases checked by the rule: %d (%d promoted)",
          g_fp8_cases, g_fp8_promoted);
    printf("  fp8 wgmma: %d cases equal to the rule's emulation (%d two-level), worst error %.3g x the closed-form "
           "bound\n",
           g_fp8_cases, g_fp8_promoted, g_fp8_worst);
  }
  /* the static proof of the in-flight protocol can fail: each broken variant is refused
   * (2 warpgroups, 3 buffers: 5 K steps) */
  {
    const char *(*muts[3])(kl_op *) = { mut_pending, mut_proxy, mut_barrier };
    gcase c = { "sm_90a", "f16", 1, 128, 64, 80, false, true, false, "v3:128,64,16,64,64,8", "f32" };
    for (int i = 0; i < 3; i++) {
      g_mutate = muts[i];
      run_case_with(&c, k_reg_pipeline);
    }
    g_mutate = NULL;
  }
  /* the heuristic (pass option wgmma=true): rock.wgmma, a v3 config, the same numerics */
  const char *pl = "rock-gemm-to-gridwise{wgmma=true},rock-gridwise-to-blockwise{tma=0},rock-blockwise-to-threadwise,"
                   "rock-align-tiling,rock-lower-loops,canonicalize,cse,dce";
  static const gcase heur[] = {
    { "sm_90a", "f16", 1, 200, 300, 96, false, false, true, NULL, "f16" },
    { "sm_90a", "bf16", 1, 40, 24, 20, true, true, false, NULL, "f32" },
    { "sm_90a", "f8e4m3fn", 1, 150, 260, 200, true, false, true, NULL, "f32" },
    { "sm_90a", "f8e5m2", 1, 40, 24, 16, true, true, false, NULL, "f32" },
  };
  for (size_t i = 0; i < sizeof heur / sizeof *heur; i++) {
    char err[4096];
    kl_ctx *ctx = kl_test_ctx();
    kl_op *m = lower_case(ctx, &heur[i], pl, err, sizeof err);
    kl_op *k = m ? kernel_of(m) : NULL;
    const char *pc = k ? kl_op_attr_string(k, "perf_config") : NULL;
    CHECK(k && pc && !strncmp(pc, "v3:", 3) && count_ops(k, "rock.wgmma") > 0, "heuristic %zu: %s %s", i, pc ? pc : "-",
          k ? "" : err);
    if (pc) {
      gcase c = heur[i];
      c.perf = pc; /* the same kernel through a given config: interpreted by run_case */
      run_case(&c);
    }
    kl_ctx_destroy(ctx);
  }
  /* through rock-output-swizzle (forced): the accumulator tile through LDS, which grows the
   * K-loop buffer into a slice of a larger one (the descriptors are re-addressed by
   * rock-lower-loops, passes/lower_loops_wgmma.c) */
  {
    const char *sw = "rock-gemm-to-gridwise,rock-gridwise-to-blockwise{tma=0},rock-blockwise-to-threadwise,"
                     "rock-output-swizzle{force=on},rock-align-tiling,rock-lower-loops,canonicalize,cse,dce";
    gcase c = { "sm_90a", "f16", 3, 100, 136, 72, false, false, true, "v3:64,128,32,64,128,8", "f16" };
    run_case_with(&c, sw);
    gcase c2 = { "sm_90a", "bf16", 1, 64, 200, 48, true, false, false, "v3:64,128,16,64,64,8", "bf16" };
    run_case_with(&c2, sw);
  }
  /* wgmma=true elsewhere keeps the other paths; sm_90a takes wgmma by default, mma.sync
   * with wgmma=false */
  {
    gcase c = { "sm_90", "f16", 1, 64, 64, 64, false, false, false, NULL, "f32" };
    run_case_with(&c, pl);
    gcase c2 = { "sm_90a", "f16", 1, 64, 64, 64, false, false, false, NULL, "f32" };
    run_case(&c2);
    run_case_with(&c2,
                  "rock-gemm-to-gridwise{wgmma=false},rock-gridwise-to-blockwise,rock-blockwise-to-threadwise,"
                  "rock-align-tiling,rock-lower-loops,canonicalize,cse,dce");
  }
  kl_ctx *ctx = kl_test_ctx();
  const kl_type *f16 = kl_type_scalar(ctx, KL_TY_F16), *f32 = kl_type_f32(ctx);
  const kl_target *s90 = kl_target_lookup("sm_90"), *s90a = kl_target_lookup("sm_90a");
  kl_accel_config ac;
  const kl_accel_desc *ad = NULL;
  char err[512] = "";
  CHECK(kl_accel_select(s90a, f16, f16, "v3:128,128,64,64,128,8", 1, 256, 256, 256, &ac, &ad, err, sizeof err) == 1 &&
            ad && ad->kind == KL_ACCEL_WGMMA && ad->n == 128 && ad->wave == 128 && kl_accel_block_size(&ac, ad) == 256,
        "v3 select: %s", err);
  /* the heuristic's large tiles: 128x256x64 for a large GEMM (x32 where K has fewer than 3
   * tiles of 64 or is no multiple of 64; and for operands staged wider than their type),
   * not where 256-wide tiles pad N more (N = 384) or leave compute units idle */
  CHECK(kl_wgmma_select(s90a, f16, f16, NULL, 1, 4096, 4096, 4096, &ac, &ad, err, sizeof err) == 1 &&
            ac.m_per_block == 128 && ac.n_per_block == 256 && ac.k_per_block == 64 && ad->n == 256,
        "v3 heuristic 4096^3: %lldx%lldx%lld", (long long)ac.m_per_block, (long long)ac.n_per_block,
        (long long)ac.k_per_block);
  CHECK(kl_wgmma_wide_staging(&ac) && ac.k_per_block == 32 && !kl_wgmma_wide_staging(&ac), "wide staging: %lld",
        (long long)ac.k_per_block);
  CHECK(kl_wgmma_select(s90a, f16, f16, NULL, 1, 4096, 4096, 128, &ac, &ad, err, sizeof err) == 1 &&
            ac.n_per_block == 256 && ac.k_per_block == 32,
        "v3 heuristic K 128: %lldx%lld", (long long)ac.n_per_block, (long long)ac.k_per_block);
  CHECK(kl_wgmma_select(s90a, f16, f16, NULL, 1, 4096, 4096, 288, &ac, &ad, err, sizeof err) == 1 &&
            ac.n_per_block == 256 && ac.k_per_block == 32,
        "v3 heuristic K 288: %lldx%lld", (long long)ac.n_per_block, (long long)ac.k_per_block);
  /* under two waves of the rule's tiles the sub-wave model decides (rock_wgmma.h): N 384 at
   * 128x128 is 96 tiles for 132 SMs, at 128x96 128 tiles (cheaper steps, the same one round) */
  CHECK(kl_wgmma_select(s90a, f16, f16, NULL, 1, 4096, 384, 4096, &ac, &ad, err, sizeof err) == 1 &&
            ac.n_per_block == 96 && ac.m_per_block == 128,
        "v3 heuristic N 384: %lldx%lld", (long long)ac.m_per_block, (long long)ac.n_per_block);
  /* the ResNet-50 3x3 layers (NHWC, batch 64): 7x7x512 (M 512, N 3136, K 4608) 128x96, one
   * wave, not split; 14x14x256 (M 256, N 12544, K 2304) 128x192, 132 tiles */
  {
    kl_gemm_split_est est = { 100, 64, 1 };
    CHECK(kl_wgmma_select(s90a, f16, f16, NULL, 1, 512, 3136, 4608, &ac, &ad, err, sizeof err) == 1 &&
              ac.m_per_block == 128 && ac.n_per_block == 96 && ac.k_per_block == 64,
          "v3 heuristic 3x3 7x7x512: %lldx%lldx%lld", (long long)ac.m_per_block, (long long)ac.n_per_block,
          (long long)ac.k_per_block);
    CHECK(kl_gemm_split_choose(s90a, f16, f16, 1, 512, 3136, 4608, 32, &est) == 1, "3x3 7x7x512: split %lld",
          (long long)kl_gemm_split_choose(s90a, f16, f16, 1, 512, 3136, 4608, 32, &est));
    CHECK(kl_wgmma_select(s90a, f16, f16, NULL, 1, 256, 12544, 2304, &ac, &ad, err, sizeof err) == 1 &&
              ac.m_per_block == 128 && ac.n_per_block == 192,
          "v3 heuristic 3x3 14x14x256: %lldx%lld", (long long)ac.m_per_block, (long long)ac.n_per_block);
    /* the model: one wave of 128x96 below 128x128's 100 tiles; two rounds cost twice one */
    CHECK(kl_wgmma_tile_cost(s90a, 2, 1, 512, 3136, 4608, 128, 96, 64) <
                  kl_wgmma_tile_cost(s90a, 2, 1, 512, 3136, 4608, 128, 128, 64) &&
              kl_wgmma_tile_cost(s90a, 2, 2, 512, 3136, 2304, 128, 128, 64) ==
                  2 * kl_wgmma_tile_cost(s90a, 2, 1, 512, 3136, 2304, 128, 128, 64),
          "wgmma tile cost");
  }
  CHECK(kl_wgmma_select(s90a, f16, f16, NULL, 1, 512, 512, 4096, &ac, &ad, err, sizeof err) == 1 &&
            ac.n_per_block == 128,
        "v3 heuristic 512^2 (8 tiles of 128x256 for 132 SMs): %lld", (long long)ac.n_per_block);
  CHECK(kl_accel_select(s90, f16, f16, "v3:128,128,64,64,128,8", 1, 256, 256, 256, &ac, &ad, err, sizeof err) == -1 &&
            strstr(err, "sm_90a"),
        "v3 on sm_90: %s", err);
  CHECK(kl_accel_select(s90a, f32, f32, "v3:128,128,64,64,128,8", 1, 256, 256, 256, &ac, &ad, err, sizeof err) == -1 &&
            strstr(err, "f16 or bf16"),
        "v3 with f32: %s", err);
  CHECK(kl_accel_select(s90a, f16, f16, "v3:128,128,64,64,128,4", 1, 256, 256, 256, &ac, &ad, err, sizeof err) == -1 &&
            strstr(err, "kpack"),
        "v3 kpack 4: %s", err);
  CHECK(kl_accel_select(s90a, f16, f16, "v3:128,128,64,32,128,8", 1, 256, 256, 256, &ac, &ad, err, sizeof err) == -1 &&
            strstr(err, "mPerWave"),
        "v3 mPerWave 32: %s", err);
  CHECK(kl_accel_select(s90a, f16, f16, "v3:128,132,64,64,132,8", 1, 256, 256, 256, &ac, &ad, err, sizeof err) == -1 &&
            strstr(err, "nPerWave"),
        "v3 nPerWave 132: %s", err);
  CHECK(kl_accel_select(s90a, f16, f16, "v3:128,128,64", 1, 256, 256, 256, &ac, &ad, err, sizeof err) == -1,
        "v3 short: %s", err);
  char pb[64];
  kl_wgmma_config_print(&ac, pb, sizeof pb);
  CHECK(kl_wgmma_config_parse("v3:64,256,32,64,256,8,2", &ac, err, sizeof err) && ac.split_k == 2 &&
            !strcmp(kl_wgmma_config_print(&ac, pb, sizeof pb), "v3:64,256,32,64,256,8,2"),
        "v3 round trip: %s", pb);
  /* the descriptor encoding (ISA bit positions) */
  uint64_t dsc = kl_wgmma_desc_encode(0x12340 + 0x40000, 0x1230, 144);
  CHECK(dsc == ((uint64_t)(0x12340 >> 4) | ((uint64_t)0x123 << 16) | ((uint64_t)9 << 32)), "desc %llx",
        (unsigned long long)dsc);
  kl_ctx_destroy(ctx);
  group_end("wgmma (sm_90a): descriptor-level interpretation of the lowered kernels equals a direct matmul; "
            "fences, commits and waits ordered; v3 configs");
}

/* TMA + mbarrier (passes/rock_tma.h), rock-gridwise-to-blockwise{tma=...}: the operands
 * that are K-major boxes of a kernel argument load through rock.tma_load (the interpreter
 * copies the box from the tensor map's dims / strides / offset, zero past the dims), the
 * others through registers; results equal a direct matmul; the mbarrier protocol holds. */
static kl_op *first_in_loop(kl_op *k, const char *name, const char *step) {
  int n;
  kl_op **ops = kl_collect_ops(k, &n), *w = NULL;
  for (int i = 0; i < n && !w; i++) {
    const char *st = kl_op_attr_string(ops[i], "step");
    if (!strcmp(ops[i]->name, name) && ops[i]->block && ops[i]->block != k->regions[0].first && st && !strcmp(st, step))
      w = ops[i];
  }
  free(ops);
  return w;
}
static const char *mut_tma_wait(kl_op *k) { /* the MMAs read a stage before its mbarrier phase completed */
  kl_op *w = first_in_loop(k, "rock.mbarrier", "wait");
  if (!w) return NULL;
  kl_op_unlink(w);
  return "waited for phase";
}
static const char *mut_tma_barrier(kl_op *k) { /* the TMA issues right after the waits: other warpgroups still read */
  int n, hit = 0;
  kl_op **ops = kl_collect_ops(k, &n);
  for (int i = 0; i < n; i++) {
    const char *st = kl_op_attr_string(ops[i], "step");
    if (strcmp(ops[i]->name, "rock.wgmma_sync") || ops[i]->nopnds || !st || strcmp(st, "wait") ||
        ops[i]->block == k->regions[0].first)
      continue;
    kl_op *b = ops[i]->next;
    if (b && !strcmp(b->name, "rock.wgmma_sync")) b = b->next; /* the proxy fence of the mixed loop */
    if (b && !strcmp(b->name, "rock.barrier")) kl_op_unlink(b), hit++;
  }
  free(ops);
  return hit ? "with no barrier since" : NULL;
}
static const char *mut_tma_expect(kl_op *k) { /* fewer transaction bytes announced: ... */
  kl_op *w = first_in_loop(k, "rock.mbarrier", "arrive_expect_tx");
  int64_t b = 0;
  if (!w || !kl_op_attr_i64(w, "bytes", &b)) return NULL;
  kl_op_set_attr(w, "bytes", kl_attr_int(k->ctx, b + 16)); /* ... more: the phase never completes */
  return "deadlock";
}
static const char *mut_tma_noswizzle(kl_op *k) { /* descriptors claiming no swizzle over swizzled tiles */
  int n, hit = 0;
  kl_op **ops = kl_collect_ops(k, &n);
  for (int i = 0; i < n; i++) {
    int64_t sw = 0;
    if (strcmp(ops[i]->name, "rock.wgmma_desc") || !kl_op_attr_i64(ops[i], "swizzle", &sw) || !sw) continue;
    kl_op_set_attr(ops[i], "swizzle", kl_attr_int(k->ctx, 0));
    hit++;
  }
  free(ops);
  return hit ? "through a descriptor of swizzle 0 that a TMA load wrote with swizzle" : NULL;
}
/* c lowered through the GEMM passes with rock-gridwise-to-blockwise{opt} (the pipeline written
 * to pl, for run_case_with): its kernel func, or NULL with the error in err (the TMA and
 * warp-specialized cases) */
static kl_op *lower_gtb_case(kl_ctx *ctx, const gcase *c, const char *opt, char *pl, size_t npl, char *err, size_t n) {
  snprintf(pl, npl,
           "rock-gemm-to-gridwise,rock-gridwise-to-blockwise{%s},rock-blockwise-to-threadwise,"
           "rock-align-tiling,rock-lower-loops,canonicalize,cse,dce",
           opt);
  kl_op *m = lower_case(ctx, c, pl, err, n);
  return m ? kernel_of(m) : NULL;
}
/* c lowered with rock-gridwise-to-blockwise{opt} (lower_gtb_case) in a fresh context must be
 * refused with want in the error */
static void check_gtb_refused(const gcase *c, const char *opt, const char *want) {
  char pl[512], err[4096];
  kl_ctx *ctx = kl_test_ctx();
  kl_op *k = lower_gtb_case(ctx, c, opt, pl, sizeof pl, err, sizeof err);
  CHECK(!k && strstr(err, want), "%s: %s", opt, k ? "accepted" : err);
  kl_ctx_destroy(ctx);
}
/* ... must lower, its kernel's string attribute attr equal to want (prefix: starting with it)
 * and, with absent_attr, no attribute of that name */
static void check_gtb_attr(const gcase *c, const char *opt, const char *attr, const char *want, bool prefix,
                           const char *absent_attr) {
  char pl[512], err[4096];
  kl_ctx *ctx = kl_test_ctx();
  kl_op *k = lower_gtb_case(ctx, c, opt, pl, sizeof pl, err, sizeof err);
  const char *v = k ? kl_op_attr_string(k, attr) : NULL;
  CHECK(v && (prefix ? !strncmp(v, want, strlen(want)) : !strcmp(v, want)) &&
            !(absent_attr && kl_op_attr(k, absent_attr)),
        "%s: %s = %s", opt, attr, v ? v : err);
  kl_ctx_destroy(ctx);
}
/* One TMA case: c lowered with rock-gridwise-to-blockwise{tma=N[,tma-swizzle=S]} (swz: 0 the
 * default, -1 none, else S) must take
 * TMA for the operands `want` ("none": no rock.tma_load) with tiles of swizzle want_sw
 * (bytes; -1 unchecked), and interpret equal to a direct matmul with the mbarrier protocol
 * held; with g_mutate set (run_case_with) the mutated kernel must be refused instead. */
static void tma_case(const gcase *c, int tma, int swz, const char *want, int64_t want_sw) {
  char opt[64], pl[512], err[4096];
  int n = snprintf(opt, sizeof opt, "tma=%d", tma);
  if (swz) snprintf(opt + n, sizeof opt - n, swz < 0 ? ",tma-swizzle=none" : ",tma-swizzle=%d", swz);
  kl_ctx *ctx = kl_test_ctx();
  kl_op *k = lower_gtb_case(ctx, c, opt, pl, sizeof pl, err, sizeof err);
  const char *got = k ? kl_op_attr_string(k, "tma") : NULL;
  CHECK(k && got && !strncmp(got, want, strlen(want)), "tma %s M=%lld N=%lld K=%lld: tma = %s, want %s %s", c->perf,
        (long long)c->M, (long long)c->N, (long long)c->K, got ? got : "-", want, k ? "" : err);
  CHECK(!k || (count_ops(k, "rock.tma_load") > 0) == (strcmp(want, "none") != 0), "tma %s: %d rock.tma_load", c->perf,
        k ? count_ops(k, "rock.tma_load") : 0);
  int64_t sw = -1;
  if (k && strcmp(want, "none")) kl_op_attr_i64(k, "tma_swizzle", &sw);
  CHECK(!k || !strcmp(want, "none") || want_sw < 0 || sw == want_sw, "tma %s %s: tma_swizzle %lld, want %lld", c->perf,
        opt, (long long)sw, (long long)want_sw);
  kl_ctx_destroy(ctx);
  g_ntma = 0;
  run_case_with(c, pl);
  CHECK(g_mutate || (g_ntma > 0) == (strcmp(want, "none") != 0), "tma %s: %lld TMA boxes executed", c->perf,
        (long long)g_ntma);
}
static void test_tma(void) {
  group_begin();
  /* the shapes the mutations below break: 2 warpgroups, 4 stages, 6 K steps (K4); the same
   * with B MN-major (K4B); 128-byte swizzled tiles at K 64 (KSW) */
  enum { K4, K4B, KSW };
  static const gcase mcase[] = {
    [K4] = { "sm_90a", "f16", 1, 128, 64, 96, true, true, false, "v3:128,64,16,64,64,8", "f32" },
    [K4B] = { "sm_90a", "f16", 1, 128, 64, 96, true, false, false, "v3:128,64,16,64,64,8", "f32" },
    [KSW] = { "sm_90a", "f16", 1, 128, 128, 256, true, true, false, "v3:128,128,64,64,128,8", "f32" },
  };
  static const struct {
    gcase c;
    int tma;          /* tma=N */
    int swz;          /* tma-swizzle: 0 the default (the widest dividing the K tile's bytes), -1 none */
    const char *want; /* the operands through TMA */
    int64_t sw;       /* the TMA tiles' swizzle (bytes; unchecked where want is "none") */
  } cases[] = {
    /* both operands K-major (A [M,K], B [N,K]): 4 stages, 4 / 6 / 5 K steps */
    { { "sm_90a", "f16", 1, 128, 128, 128, true, true, false, "v3:128,128,32,64,128,8", "f32" }, 1, 0, "A,B", 64 },
    { { "sm_90a", "bf16", 1, 64, 128, 96, true, true, true, "v3:64,128,16,64,128,8", "bf16" }, 1, 0, "A,B", 32 },
    { { "sm_90a", "f16", 1, 128, 64, 80, true, true, false, "v3:128,64,16,64,64,8", "f32" }, 3, 0, "A,B", 32 },
    /* batch (rank-3 tensor maps), two warpgroups of m64n256 at KB 64 (the large tile) */
    { { "sm_90a", "f16", 2, 128, 256, 192, true, true, false, "v3:128,256,64,64,256,8", "f32" }, 1, 0, "A,B", 128 },
    /* odd M / N and K padded to the tile: TMA's zero fill past the dims */
    { { "sm_90a", "f16", 1, 70, 72, 40, true, true, true, "v3:64,64,16,64,64,8", "f16" }, 6, 0, "A,B", 32 },
    { { "sm_90a", "bf16", 2, 130, 100, 56, true, true, false, "v3:128,64,32,64,64,8", "f32" }, 1, 0, "A,B", 64 },
    /* MN-major operands (B [K, N], A [K, M]): the swizzled MN-major tiles (boxes {64, KB}
     * of M / N panels), read with imm-trans; the K-major one's swizzle by its K tile */
    { { "sm_90a", "f16", 1, 128, 256, 128, true, false, false, "v3:128,256,32,64,256,8", "f32" }, 1, 0, "A,B", 128 },
    { { "sm_90a", "bf16", 2, 64, 128, 64, false, true, true, "v3:64,128,16,64,128,8", "f32" }, 3, 0, "A,B", 128 },
    { { "sm_90a", "f16", 1, 128, 128, 64, false, false, false, "v3:128,128,16,64,128,8", "f32" }, 1, 0, "A,B", 128 },
    { { "sm_90a", "bf16", 1, 136, 136, 72, false, false, true, "v3:128,64,32,128,64,8", "bf16" }, 1, 64, "A,B", 64 },
    { { "sm_90a", "f16", 2, 70, 104, 40, true, false, false, "v3:64,64,16,64,64,8", "f32" }, 1, 32, "A,B", 32 },
    /* MN-major with no swizzle: the register path (the mixed loop) */
    { { "sm_90a", "f16", 1, 128, 256, 128, true, false, false, "v3:128,256,32,64,256,8", "f32" }, 1, -1, "A", 0 },
    { { "sm_90a", "f16", 1, 128, 128, 64, false, false, false, "v3:128,128,16,64,128,8", "f32" }, 1, -1, "none", 0 },
    /* no TMA: K rows of 90 bytes (not a multiple of 16) */
    { { "sm_90a", "f16", 1, 64, 64, 45, true, true, false, "v3:64,64,16,64,64,8", "f32" }, 1, 0, "none", 32 },
    /* tma-swizzle: none (the unswizzled core-matrix boxes {8, rows}), capped at 64 / 32 */
    { { "sm_90a", "f16", 2, 128, 256, 192, true, true, false, "v3:128,256,64,64,256,8", "f32" }, 1, -1, "A,B", 0 },
    { { "sm_90a", "f16", 1, 128, 256, 128, true, false, false, "v3:128,256,64,64,256,8", "f32" }, 1, 64, "A,B", 64 },
    { { "sm_90a", "bf16", 1, 130, 100, 136, true, true, true, "v3:128,64,64,64,64,8", "bf16" }, 4, 32, "A,B", 32 },
    { { "sm_90a", "bf16", 2, 64, 128, 64, false, true, true, "v3:64,128,16,64,128,8", "f32" }, 3, -1, "B", 0 },
    /* 128-byte swizzle with K tiles of 128 (two panels per tile: the panel stride) */
    { { "sm_90a", "f16", 1, 64, 72, 384, true, true, false, "v3:64,64,128,64,64,8", "f32" }, 3, 0, "A,B", 128 },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    tma_case(&cases[i].c, cases[i].tma, cases[i].swz, cases[i].want, cases[i].sw);
  /* the protocol check can fail: each broken variant of a mutation shape is refused (and the
   * mixed loop: B MN-major on registers with tma-swizzle=none) */
  static const struct {
    const char *(*mut)(kl_op *);
    int c;
    int swz;
    const char *want;
  } muts[] = {
    /* a descriptor claiming no swizzle over the swizzled TMA tiles (32 bytes at K 16; 128 at K 64) */
    { mut_tma_noswizzle, K4, 0, "A,B" }, { mut_tma_noswizzle, KSW, 0, "A,B" }, { mut_tma_noswizzle, K4B, 0, "A,B" },
    { mut_tma_wait, K4, 0, "A,B" },      { mut_tma_wait, K4B, -1, "A" },       { mut_pending, K4, 0, "A,B" },
    { mut_pending, K4B, -1, "A" },       { mut_tma_barrier, K4, 0, "A,B" },    { mut_tma_barrier, K4B, -1, "A" },
    { mut_tma_expect, K4, 0, "A,B" },    { mut_tma_expect, K4B, -1, "A" },
  };
  for (size_t i = 0; i < sizeof muts / sizeof *muts; i++) {
    g_mutate = muts[i].mut;
    tma_case(&mcase[muts[i].c], 1, muts[i].swz, muts[i].want, -1);
  }
  g_mutate = NULL;
  /* option errors */
  {
    gcase c = { "sm_90a", "f16", 1, 128, 128, 128, true, true, false, "v3:128,128,32,64,128,8", "f32" };
    check_gtb_refused(&c, "tma=2", "tma must be 0 (off), 1 (on");
    check_gtb_refused(&c, "tma=1,tma-swizzle=96", "tma-swizzle must be 128, 64, 32 or none");
  }
  group_end("tma (sm_90a): TMA + mbarrier K loops interpreted equal a direct matmul; operand choice; the broken "
            "protocols are refused");
}

static void test_ldmatrix(void) {
  group_begin();
  static const int64_t shapes[][3] = { { 4096, 4096, 4096 }, { 8192, 8192, 8192 }, { 1500, 3840, 1280 },
                                       { 1024, 1024, 1024 }, { 256, 256, 256 },    { 64, 64, 64 },
                                       { 37, 29, 45 },       { 128, 4096, 1024 } };
  static const char *const targets[] = { "sm_80", "sm_90" }, *const types[] = { "f16", "bf16" };
  char seen[64][64];
  int nseen = 0, n = 0;
  kl_ctx *ctx = kl_test_ctx();
  for (int ti = 0; ti < 2; ti++)
    for (int ty = 0; ty < 2; ty++)
      for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        const kl_target *t = kl_target_lookup(targets[ti]);
        const kl_accel_desc *d = kl_accel_desc_for(
            t, kl_type_scalar(ctx, kl_scalar_kind_from_name(types[ty], strlen(types[ty]))));
        kl_accel_config c;
        CHECK(d && kl_accel_config_heuristic(t, d, 1, shapes[si][0], shapes[si][1], shapes[si][2], 2, &c),
              "%s %s: no heuristic config", targets[ti], types[ty]);
        if (!d) continue;
        char buf[64], key[64];
        kl_accel_config_print(&c, buf, sizeof buf);
        snprintf(key, sizeof key, "%s%s%s", buf, types[ty], targets[ti]);
        int j = 0;
        while (j < nseen && strcmp(seen[j], key)) j++;
        if (j < nseen || nseen == 64) continue;
        snprintf(seen[nseen++], sizeof seen[0], "%s", key);
        bool at = n % 2 == 0, bt = n % 4 < 2; /* every operand layout across the configs */
        gcase gc = { targets[ti], types[ty], 1,          c.m_per_block, c.n_per_block, 2 * c.k_per_block,
                     at,          bt,        n % 3 == 0, buf,           "f32" };
        n++;
        int64_t before = g_nldmatrix;
        for (int k = 0; k < 2; k++) g_lds_wavefronts[k] = g_lds_ideal[k] = -1;
        run_case(&gc);
        printf("  ldmatrix: %s %s %s%s%s: %lld ldmatrix executions, LDS loads %lld wavefronts for %lld phases\n",
               targets[ti], types[ty], buf, at ? " A^T" : "", bt ? " B^T" : "", (long long)(g_nldmatrix - before),
               (long long)g_lds_wavefronts[0], (long long)g_lds_ideal[0]);
        CHECK(g_nldmatrix > before, "%s %s: no rock.ldmatrix executed", targets[ti], buf);
        CHECK(g_lds_wavefronts[0] == g_lds_ideal[0], "%s %s: LDS reads: %lld wavefronts for %lld phases", targets[ti],
              buf, (long long)g_lds_wavefronts[0], (long long)g_lds_ideal[0]);
      }
  kl_ctx_destroy(ctx);
  group_end("ldmatrix: the heuristic's sm_80 / sm_90 f16 / bf16 configs read their mma.sync fragments with "
            "ldmatrix.x4 (ISA lane mapping), exact, bank-conflict-free");
}

/* The cp.async pipeline (rock-gridwise-to-blockwise{cp-async=S, cp-async-layout=L}) on
 * sm_80 / sm_90 mma.sync tiles, interpreted (exec_async_copy: data written at issue, the
 * commit / wait / barrier protocol checked on every LDS read): equal to a direct matmul for
 * K-contiguous operands (both async), an N-major B (A async, B through registers), padded
 * odd sizes and a fused epilogue; with the xor layout every ldmatrix phase and every copy
 * phase is bank-conflict-free, the kernel says async_lds_layout "xor:A,B"; a wait that
 * retires one group fewer is refused (a read of a copy that has not landed). */
static const char *mut_cp_wait(kl_op *k) {
  int n, hit = 0;
  kl_op **ops = kl_collect_ops(k, &n);
  for (int i = 0; i < n; i++) {
    int64_t p = 0;
    if (!strcmp(ops[i]->name, "rock.async_wait") && kl_op_attr_i64(ops[i], "pending", &p) && p < 2)
      kl_op_set_attr(ops[i], "pending", kl_attr_int(k->ctx, p + 1)), hit++;
  }
  free(ops);
  return hit ? "no wait_group retired" : NULL;
}
static void test_cp_async(void) {
  group_begin();
  typedef struct {
    gcase c;
    int S;
    const char *layout, *want; /* want: the kernel's async_lds_layout */
  } cpcase;
  static const cpcase cases[] = {
    { { "sm_90", "f16", 1, 128, 128, 160, true, true, false, "v2:128,128,32,64,64,8", "f32" }, 3, "xor", "xor:A,B" },
    { { "sm_80", "f16", 1, 128, 128, 320, true, true, false, "v2:128,128,64,64,64,8", "f32" }, 3, "xor", "xor:A,B" },
    { { "sm_80", "bf16", 1, 128, 128, 128, true, true, true, "v2:128,128,32,64,64,8", "bf16" }, 4, "xor", "xor:A,B" },
    { { "sm_90", "f16", 1, 128, 256, 96, true, true, false, "v2:128,256,32,64,64,8", "f32" }, 3, "xor", "xor:A,B" },
    /* the async heuristic's tiles: 256x128x32 at S = 3 (a GEMM) and S = 4 (a narrow grid) */
    { { "sm_80", "f16", 1, 256, 128, 128, true, true, false, "v2:256,128,32,64,64,8", "f32" }, 4, "xor", "xor:A,B" },
    { { "sm_90", "bf16", 1, 300, 200, 160, true, true, true, "v2:256,128,32,64,64,8", "bf16" }, 3, "xor", "xor:A,B" },
    { { "sm_90", "f16", 1, 128, 128, 64, true, true, false, "v2:128,128,16,64,64,8", "f32" }, 2, "xor", "xor:A,B" },
    { { "sm_90", "f16", 2, 100, 72, 200, true, true, true, "v2:128,128,32,64,64,8", "f16" }, 3, "xor", "xor:A,B" },
    /* M / N-contiguous operands (B stored [K, N], A stored [K, M]): the M / N-major xor stages,
     * read with ldmatrix.trans */
    { { "sm_90", "f16", 1, 128, 128, 128, true, false, false, "v2:128,128,32,64,64,8", "f32" }, 2, "xor", "xor:A,B" },
    { { "sm_80", "f16", 1, 128, 128, 160, true, false, false, "v2:128,128,32,64,64,8", "f32" }, 3, "xor", "xor:A,B" },
    { { "sm_90", "f16", 1, 256, 128, 128, false, true, false, "v2:256,128,32,64,64,8", "f32" }, 4, "xor", "xor:A,B" },
    { { "sm_80", "bf16", 2, 96, 72, 200, false, false, true, "v2:128,128,32,64,64,8", "bf16" }, 3, "xor", "xor:A,B" },
    { { "sm_90", "f16", 1, 128, 256, 96, false, false, false, "v2:128,256,32,64,64,8", "f32" }, 3, "xor", "xor:A,B" },
    { { "sm_80", "f16", 1, 64, 64, 128, false, false, false, "v2:64,64,16,32,32,8", "f32" }, 3, "xor", "xor:A,B" },
    { { "sm_80", "f16", 1, 128, 128, 2048, true, false, true, "v2:128,128,32,64,64,8", "f16" }, 4, "xor", "xor:A,B" },
    { { "sm_90", "f16", 1, 128, 128, 128, false, true, false, "v2:128,128,32,64,64,8", "f32" }, 2, "krow", "krow:B" },
    { { "sm_90", "f16", 1, 128, 128, 128, true, true, false, "v2:128,128,32,64,64,8", "f32" }, 3, "krow", "krow:A,B" },
    { { "sm_90", "f16", 1, 128, 128, 128, true, true, false, "v2:128,128,32,64,64,8", "f32" }, 3, "kgroup", "" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const cpcase *x = &cases[i];
    char pl[512], err[1024];
    snprintf(pl, sizeof pl,
             "rock-gemm-to-gridwise,rock-gridwise-to-blockwise{cp-async=%d,cp-async-layout=%s},"
             "rock-blockwise-to-threadwise,rock-align-tiling,rock-lower-loops,canonicalize,cse,dce",
             x->S, x->layout);
    kl_ctx *ctx = kl_test_ctx();
    kl_op *m = lower_case(ctx, &x->c, pl, err, sizeof err);
    kl_op *k = m ? kernel_of(m) : NULL;
    const char *lay = k ? kl_op_attr_string(k, "async_lds_layout") : NULL;
    int64_t stages = 0;
    if (k) kl_op_attr_i64(k, "pipeline_stages", &stages);
    CHECK(k && !strcmp(lay ? lay : "", x->want) && stages == x->S && count_ops(k, "rock.async_copy") > 0 &&
              count_ops(k, "rock.ldmatrix") > 0,
          "%s %s %s S=%d: async_lds_layout %s, %lld stages, %d async copies, %d ldmatrix (%s)", x->c.target, x->c.perf,
          x->layout, x->S, lay ? lay : "none", (long long)stages, k ? count_ops(k, "rock.async_copy") : 0,
          k ? count_ops(k, "rock.ldmatrix") : 0, k ? "" : err);
    kl_ctx_destroy(ctx);
    for (int j = 0; j < 2; j++) g_lds_wavefronts[j] = g_lds_ideal[j] = -1;
    run_case_with(&x->c, pl);
    printf("  cp.async: %s %s %s S=%d %s%s: LDS loads %lld wavefronts for %lld phases, stores %lld for %lld\n",
           x->c.target, x->c.perf, x->layout, x->S, x->c.bt ? "B^T" : "B", x->c.epi ? " +bias,relu" : "",
           (long long)g_lds_wavefronts[0], (long long)g_lds_ideal[0], (long long)g_lds_wavefronts[1],
           (long long)g_lds_ideal[1]);
    if (!strcmp(x->layout, "xor")) {
      CHECK(g_lds_wavefronts[0] == g_lds_ideal[0], "%s xor: LDS reads %lld wavefronts for %lld phases", x->c.perf,
            (long long)g_lds_wavefronts[0], (long long)g_lds_ideal[0]);
      /* both operands async: every LDS write is a copy into the xor stages (an N-major B's
       * register-path stores into its kgroup tile are 2-byte and not checked here) */
      CHECK(strcmp(x->want, "xor:A,B") || g_lds_wavefronts[1] == g_lds_ideal[1],
            "%s xor: LDS writes %lld wavefronts for %lld phases", x->c.perf, (long long)g_lds_wavefronts[1],
            (long long)g_lds_ideal[1]);
    }
  }
  g_mutate = mut_cp_wait;
  run_case_with(&cases[0].c,
                "rock-gemm-to-gridwise,rock-gridwise-to-blockwise{cp-async=3,cp-async-layout=xor},"
                "rock-blockwise-to-threadwise,rock-align-tiling,rock-lower-loops,canonicalize,cse,dce");
  g_mutate = NULL;
  group_end("cp.async: the multi-stage pipeline (xor / krow / kgroup stages) exact on sm_80 / sm_90 tiles, its "
            "wait / barrier protocol checked, the xor stages' copies and ldmatrix bank-conflict-free");
}

/* rock-output-swizzle on the big mma.sync tiles (the accumulator tile through the K loop's
 * one LDS buffer): numerics with the swizzle forced on and off, and the bank accounting
 * of the swizzle's own LDS store and read (on minus off). */
static void test_swizzle(void) {
  group_begin();
  static const gcase cases[] = {
    { "sm_90", "f16", 1, 128, 128, 64, false, false, false, "v2:128,128,32,64,64,8", "f16" },
    { "sm_90", "f16", 1, 200, 136, 72, true, false, false, "v2:128,128,32,64,64,8", "f16" }, /* 3 K steps */
    { "sm_90", "bf16", 1, 256, 64, 64, false, true, false, "v2:256,64,32,64,32,8", "bf16" },
    { "sm_90", "f16", 2, 130, 70, 40, false, false, false, "v2:256,64,32,64,32,8", "f16" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const gcase *c = &cases[i];
    int64_t wf[2][2], ph[2][2];
    for (int on = 0; on < 2; on++) {
      char pipe[512];
      snprintf(pipe, sizeof pipe,
               "rock-gemm-to-gridwise,rock-gridwise-to-blockwise,rock-blockwise-to-threadwise,"
               "rock-output-swizzle{force=%s},rock-align-tiling,rock-lower-loops,canonicalize,cse,dce",
               on ? "on" : "off");
      run_case_with(c, pipe);
      for (int j = 0; j < 2; j++) wf[on][j] = g_lds_wavefronts[j], ph[on][j] = g_lds_ideal[j];
    }
    printf("  swizzle: %s %s %lldx%lldx%lld %s -> %s: swizzle LDS reads %lld wavefronts for %lld phases, "
           "stores %lld for %lld\n",
           c->target, c->type, (long long)c->M, (long long)c->N, (long long)c->K, c->perf, c->out,
           (long long)(wf[1][0] - wf[0][0]), (long long)(ph[1][0] - ph[0][0]), (long long)(wf[1][1] - wf[0][1]),
           (long long)(ph[1][1] - ph[0][1]));
    CHECK(ph[1][1] > ph[0][1] && ph[1][0] > ph[0][0], "%s: the swizzle added no LDS access", c->perf);
    CHECK(wf[1][0] - wf[0][0] == ph[1][0] - ph[0][0] && wf[1][1] - wf[0][1] == ph[1][1] - ph[0][1],
          "%s: bank conflicts in the swizzle's LDS accesses", c->perf);
  }
  group_end("swizzle: big mma.sync tiles (one K-loop LDS buffer, reused or grown) with rock-output-swizzle forced "
            "on and off equal a direct matmul; the swizzle's padded LDS rows are bank-conflict-free");
}

/* ---------------------------------------------------------------------------------
 * whole graphs: kl_compile for a GPU target, every launch of the plan interpreted
 * --------------------------------------------------------------------------------- */
static int64_t span_of(const kl_type *t) {
  int64_t s = 1;
  for (int i = 0; i < t->rank; i++) s += (t->shape[i] - 1) * t->strides[i];
  return s;
}
static int64_t offset_of(const kl_type *t, const kl_tensor *like, int64_t flat) {
  int64_t idx[KL_MAX_RANK], off = 0;
  kl_tensor_unravel(like, flat, idx);
  for (int i = 0; i < t->rank; i++) off += idx[i] * t->strides[i];
  return off;
}

typedef struct graph_case {
  const char *target, *text;
  double tol;
  int min_accel;
  bool one_kernel;
  const char *pipeline; /* NULL: the default */
  const char *want_tma; /* a kernel's `tma` attribute must be this (NULL: not checked) */
  const char *perf;     /* the compile's perf_config (NULL: the heuristic) */
} graph_case;

/* the 1x1 conv + residual + relu with 3 x 1 tiles of the heuristic's 128x256 (NHWC, 288 pixels,
 * 200 output channels) */
static const char *const conv1x1_big_f16 =
    "func.func @conv1x1_big_res_relu() attributes {graph} {\n"
    "  %x = \"graph.param\"() {name = \"x\"} : () -> tensor<4x256x8x9xf16, strides=[18432,1,2304,256]>\n"
    "  %w = \"graph.param\"() {name = \"w\"} : () -> tensor<200x256x1x1xf16, strides=[256,1,256,256]>\n"
    "  %r = \"graph.param\"() {name = \"r\"} : () -> tensor<4x200x8x9xf16, strides=[14400,1,1800,200]>\n"
    "  %c = \"graph.conv\"(%x, %w) {stride = [1, 1], padding = [0, 0, 0, 0], dilation = [1, 1], groups = 1} : "
    "(tensor<4x256x8x9xf16, strides=[18432,1,2304,256]>, tensor<200x256x1x1xf16, strides=[256,1,256,256]>) -> "
    "tensor<4x200x8x9xf16, strides=[14400,1,1800,200]>\n"
    "  %s = \"graph.add\"(%c, %r) : (tensor<4x200x8x9xf16, strides=[14400,1,1800,200]>, tensor<4x200x8x9xf16, "
    "strides=[14400,1,1800,200]>) -> tensor<4x200x8x9xf16, strides=[14400,1,1800,200]>\n"
    "  %y = \"graph.relu\"(%s) : (tensor<4x200x8x9xf16, strides=[14400,1,1800,200]>) -> tensor<4x200x8x9xf16, "
    "strides=[14400,1,1800,200]>\n"
    "  func.return %y : tensor<4x200x8x9xf16, strides=[14400,1,1800,200]>\n}\n";

/* rock.stmatrix ops of the last module run_graph_case compiled: [0] plain, [1] .trans */
static int g_stm_ops[2];
static void count_stmatrix_ops(kl_op *m) {
  g_stm_ops[0] = g_stm_ops[1] = 0;
  int n;
  kl_op **ops = m ? kl_collect_ops(m, &n) : NULL;
  for (int i = 0; ops && i < n; i++)
    if (!strcmp(ops[i]->name, "rock.stmatrix")) {
      const kl_attr *tr = kl_op_attr(ops[i], "trans");
      g_stm_ops[tr && tr->i ? 1 : 0]++;
    }
  free(ops);
}

static void run_graph_case(const graph_case *gc) {
  char err[4096];
  kl_ctx *ctx = kl_test_ctx();
  kl_op *mod = kl_parse_module(ctx, gc->text, strlen(gc->text), "graph.kir");
  kl_op *g = mod ? kl_module_body(mod)->first : NULL;
  if (!g) {
    char *d = kl_diag_take(ctx);
    CHECK(0, "parse: %s", d);
    free(d);
    kl_ctx_destroy(ctx);
    return;
  }
  const char *gname = kl_op_attr_string(g, "sym_name");
  const char *targets[1] = { gc->target };
  kl_compile_opts o = {
    .targets = targets, .ntargets = 1, .no_cache = true, .pipeline = gc->pipeline, .perf_config = gc->perf
  };
  kl_program *p = kl_compile(g, &o, err, sizeof err);
  CHECK(p != NULL, "%s on %s: compile: %s", gname, gc->target, err);
  if (!p) {
    kl_ctx_destroy(ctx);
    return;
  }
  const char *T = gc->target;
  const kl_target *tgt = kl_target_lookup(T);
  int naccel = 0;
  bool tma_seen = false;
  char tmas[512] = "";
  for (int i = 0; i < kl_program_nkernels(p, T); i++) {
    const kl_kernel_info *ki = kl_program_kernel(p, T, i);
    if (ki->tma && *ki->tma && strlen(tmas) + strlen(ki->tma) + 4 < sizeof tmas)
      strcat(strcat(tmas, *tmas ? " | " : ""), ki->tma);
    naccel += !strncmp(ki->perf_config, "v2:", 3) || !strncmp(ki->perf_config, "v3:", 3);
    tma_seen |= gc->want_tma && ki->tma && !strcmp(ki->tma, gc->want_tma) &&
        (!gc->pipeline || !strstr(gc->pipeline, "ws=1") ||
         (ki->ws && !strcmp(ki->ws, "on") && ki->output_swizzle && !strncmp(ki->output_swizzle, "applied", 7))) &&
        (!gc->pipeline || !strstr(gc->pipeline, "persistent=1") ||
         (ki->persistent && !strcmp(ki->persistent, "on") && ki->grid_persistent == 1 && ki->grid_size > 2 &&
          ki->output_swizzle && !strncmp(ki->output_swizzle, "applied", 7)));
  }
  CHECK(
      !gc->want_tma || tma_seen,
      "%s on %s: no kernel with tma = %s (ws=1: ws on, persistent=1: persistent on over > 2 tiles; the output swizzle "
      "applied); the kernels' tma: %s",
      gname, T, gc->want_tma ? gc->want_tma : "", tmas);
  CHECK(naccel >= gc->min_accel, "%s on %s: %d accel kernels, want >= %d", gname, T, naccel, gc->min_accel);
  CHECK(!gc->one_kernel || kl_program_nkernels(p, T) == 1, "%s on %s: %d kernels, want 1", gname, T,
        kl_program_nkernels(p, T));
  /* inputs: random tensors in the params' layouts */
  int nslots = kl_program_nslots(p, T);
  double **mem = calloc(nslots + 1, sizeof *mem);
  kl_named_tensor in[16];
  int nin = 0;
  for (kl_op *x = kl_region_entry(&g->regions[0])->first; x; x = x->next) {
    if (strcmp(x->name, "graph.param") || nin == 16) continue;
    const kl_type *pt = x->results[0].type;
    in[nin].name = kl_op_attr_string(x, "name");
    in[nin].tensor = kl_tensor_rand(kl_dtype_of_type(pt->elem), pt->rank, pt->shape, pt->strides, 1000 + nin,
                                    KL_DIST_NORMAL, err, sizeof err);
    if (pt->elem->kind == KL_TY_I8) { /* the full range -128..127 (no zeros), so that sums leave it */
      uint64_t st = 77 + (uint64_t)nin;
      for (int64_t f = 0; f < kl_tensor_numel(in[nin].tensor); f++) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        int v = (int)((st >> 33) % 255) - 128;
        kl_tensor_set_flat(in[nin].tensor, f, v >= 0 ? v + 1 : v);
      }
    }
    nin++;
  }
  for (int i = 0; i < nslots; i++) {
    const char *kind = NULL, *name = NULL;
    kl_program_slot(p, T, i, &kind, &name);
    const kl_type *st = kl_program_slot_type(p, T, i);
    const kl_tensor *src = NULL;
    if (!strcmp(kind, "param"))
      for (int j = 0; j < nin; j++)
        if (!strcmp(in[j].name, name)) src = in[j].tensor;
    if (!strcmp(kind, "constant")) src = kl_program_slot_constant(p, T, i);
    int64_t span = span_of(st);
    mem[i] = malloc(sizeof(double) * span);
    for (int64_t e = 0; e < span; e++) mem[i][e] = NAN;
    if (src)
      for (int64_t f = 0; f < kl_tensor_numel(src); f++) mem[i][offset_of(st, src, f)] = kl_tensor_get_flat(src, f);
  }
  /* the launches */
  kl_op *cm = kl_program_module(p, T);
  count_stmatrix_ops(cm);
  bool ok = true;
  int64_t nmma = 0;
  for (int s = 0; s < kl_program_nsteps(p, T) && ok; s++) {
    const kl_bundle_step *step = kl_program_step(p, T, s);
    if (step->kernel < 0) { /* workspace steps (split-K): the slots exist already; a prefill sets its value */
      if (step->kind == KL_BUNDLE_PREFILL && step->slot >= 0)
        for (int64_t e = 0; e < span_of(kl_program_slot_type(p, T, step->slot)); e++) mem[step->slot][e] = step->value;
      continue;
    }
    const kl_kernel_info *ki = kl_program_kernel(p, T, step->kernel);
    kl_op *kf = kl_module_lookup(cm, ki->name);
    double *args[32];
    for (int a = 0; a < step->nargs && a < 32; a++) args[a] = mem[step->args[a]];
    int64_t nm = 0;
    ok = kf && sim_run(kf, tgt, args, err, sizeof err, &nm);
    CHECK(ok, "%s on %s: kernel %s (%s): %s", gname, T, ki->name, ki->perf_config, kf ? err : "not in the module");
    nmma += nm;
  }
  CHECK(!ok || (nmma > 0) == (naccel > 0), "%s on %s: %lld matrix instructions executed", gname, T, (long long)nmma);
  /* against the reference */
  int nref = 0;
  kl_tensor **ref = NULL;
  CHECK(kl_graph_eval(g, nin, in, &nref, &ref, err, sizeof err) == KL_OK, "eval: %s", err);
  for (int oi = 0; ok && oi < nref && oi < kl_program_noutputs(p, T); oi++) {
    int sl = kl_program_output_slot(p, T, oi);
    const kl_type *st = kl_program_slot_type(p, T, sl);
    double maxerr = 0, maxref = 0;
    int64_t nan_count = 0;
    for (int64_t f = 0; f < kl_tensor_numel(ref[oi]); f++) {
      double want = kl_tensor_get_flat(ref[oi], f), got = mem[sl][offset_of(st, ref[oi], f)];
      if (isnan(got) != isnan(want)) {
        nan_count++;
        continue;
      }
      double e = fabs(got - want) / (fabs(want) > 1 ? fabs(want) : 1);
      if (e > maxerr) maxerr = e;
      if (fabs(want) > maxref) maxref = fabs(want);
    }
    CHECK(nan_count == 0 && maxerr <= gc->tol, "%s on %s: output %d: %lld NaN mismatches, max error %g (tolerance %g)",
          gname, T, oi, (long long)nan_count, maxerr, gc->tol);
  }
  for (int i = 0; i < nref; i++) kl_tensor_release(ref[i]);
  free(ref);
  for (int i = 0; i < nin; i++) kl_tensor_release(in[i].tensor);
  for (int i = 0; i < nslots; i++) free(mem[i]);
  free(mem);
  kl_program_release(p);
  kl_ctx_destroy(ctx);
}

static const char *const conv_nhwc_f16 =
    "func.func @conv_bias_relu() attributes {graph} {\n"
    "  %x = \"graph.param\"() {name = \"x\"} : () -> tensor<2x16x9x7xf16, strides=[1008,1,112,16]>\n"
    "  %w = \"graph.param\"() {name = \"w\"} : () -> tensor<24x16x3x3xf16>\n"
    "  %b = \"graph.param\"() {name = \"b\"} : () -> tensor<24x1x1xf16>\n"
    "  %c = \"graph.conv\"(%x, %w) {stride = [2, 1], padding = [1, 1, 0, 2], dilation = [1, 1], groups = 1} : "
    "(tensor<2x16x9x7xf16, strides=[1008,1,112,16]>, tensor<24x16x3x3xf16>) -> tensor<2x24x5x7xf16, "
    "strides=[840,1,168,24]>\n"
    "  %cb = \"graph.add\"(%c, %b) : (tensor<2x24x5x7xf16, strides=[840,1,168,24]>, tensor<24x1x1xf16>) -> "
    "tensor<2x24x5x7xf16, strides=[840,1,168,24]>\n"
    "  %y = \"graph.relu\"(%cb) : (tensor<2x24x5x7xf16, strides=[840,1,168,24]>) -> tensor<2x24x5x7xf16, "
    "strides=[840,1,168,24]>\n"
    "  func.return %y : tensor<2x24x5x7xf16, strides=[840,1,168,24]>\n}\n";
static const char *const dot_bf16 =
    "func.func @dot_t_res() attributes {graph} {\n"
    "  %a = \"graph.param\"() {name = \"a\"} : () -> tensor<3x19x33xbf16>\n"
    "  %b = \"graph.param\"() {name = \"b\"} : () -> tensor<41x19xbf16>\n"
    "  %r = \"graph.param\"() {name = \"r\"} : () -> tensor<3x33x41xbf16>\n"
    "  %d = \"graph.dot\"(%a, %b) {transpose_a = true, transpose_b = true} : (tensor<3x19x33xbf16>, "
    "tensor<41x19xbf16>) -> tensor<3x33x41xbf16>\n"
    "  %e = \"graph.add\"(%d, %r) : (tensor<3x33x41xbf16>, tensor<3x33x41xbf16>) -> tensor<3x33x41xbf16>\n"
    "  %y = \"graph.clip\"(%e) {min = -1.5, max = 0.75} : (tensor<3x33x41xbf16>) -> tensor<3x33x41xbf16>\n"
    "  func.return %y : tensor<3x33x41xbf16>\n}\n";
static const char *const dot_f32 =
    "func.func @dot_f32_sigmoid() attributes {graph} {\n"
    "  %a = \"graph.param\"() {name = \"a\"} : () -> tensor<37x29xf32>\n"
    "  %b = \"graph.param\"() {name = \"b\"} : () -> tensor<29x45xf32>\n"
    "  %d = \"graph.dot\"(%a, %b) : (tensor<37x29xf32>, tensor<29x45xf32>) -> tensor<37x45xf32>\n"
    "  %y = \"graph.sigmoid\"(%d) : (tensor<37x45xf32>) -> tensor<37x45xf32>\n"
    "  %h = \"graph.convert\"(%y) : (tensor<37x45xf32>) -> tensor<37x45xf16>\n"
    "  func.return %h : tensor<37x45xf16>\n}\n";

/* integer contractions: i8 x i8 -> i32 (exact), epilogues in i32, converts to f32 / i8 */
static const char *const conv_nhwc_i8 =
    "func.func @conv_i8_clip() attributes {graph} {\n"
    "  %x = \"graph.param\"() {name = \"x\"} : () -> tensor<2x16x9x7xi8, strides=[1008,1,112,16]>\n"
    "  %w = \"graph.param\"() {name = \"w\"} : () -> tensor<24x16x3x3xi8>\n"
    "  %c = \"graph.conv\"(%x, %w) {stride = [2, 1], padding = [1, 1, 0, 2], dilation = [1, 1], groups = 1} : "
    "(tensor<2x16x9x7xi8, strides=[1008,1,112,16]>, tensor<24x16x3x3xi8>) -> tensor<2x24x5x7xi32, "
    "strides=[840,1,168,24]>\n"
    "  %y = \"graph.clip\"(%c) {min = -20000, max = 20000} : (tensor<2x24x5x7xi32, strides=[840,1,168,24]>) -> "
    "tensor<2x24x5x7xi32, strides=[840,1,168,24]>\n"
    "  %h = \"graph.convert\"(%y) : (tensor<2x24x5x7xi32, strides=[840,1,168,24]>) -> tensor<2x24x5x7xi8, "
    "strides=[840,1,168,24]>\n"
    "  func.return %h : tensor<2x24x5x7xi8, strides=[840,1,168,24]>\n}\n";
static const char *const dot_i8 =
    "func.func @dot_i8_bias_relu() attributes {graph} {\n"
    "  %a = \"graph.param\"() {name = \"a\"} : () -> tensor<2x37x70xi8>\n"
    "  %b = \"graph.param\"() {name = \"b\"} : () -> tensor<45x70xi8>\n"
    "  %r = \"graph.param\"() {name = \"r\"} : () -> tensor<45xi32>\n"
    "  %d = \"graph.dot\"(%a, %b) {transpose_b = true} : (tensor<2x37x70xi8>, tensor<45x70xi8>) -> "
    "tensor<2x37x45xi32>\n"
    "  %e = \"graph.add\"(%d, %r) : (tensor<2x37x45xi32>, tensor<45xi32>) -> tensor<2x37x45xi32>\n"
    "  %y = \"graph.relu\"(%e) : (tensor<2x37x45xi32>) -> tensor<2x37x45xi32>\n"
    "  %f = \"graph.convert\"(%y) : (tensor<2x37x45xi32>) -> tensor<2x37x45xf32>\n"
    "  func.return %f : tensor<2x37x45xf32>\n}\n";

/* 1x1 NHWC conv (C = 256: four K steps of the heuristic's 64) + residual + relu: both
 * operands plain K-major boxes (TMA) */
static const char *const conv1x1_nhwc_f16 =
    "func.func @conv1x1_res_relu() attributes {graph} {\n"
    "  %x = \"graph.param\"() {name = \"x\"} : () -> tensor<2x256x5x7xf16, strides=[8960,1,1792,256]>\n"
    "  %w = \"graph.param\"() {name = \"w\"} : () -> tensor<72x256x1x1xf16, strides=[256,1,256,256]>\n"
    "  %r = \"graph.param\"() {name = \"r\"} : () -> tensor<2x72x5x7xf16, strides=[2520,1,504,72]>\n"
    "  %c = \"graph.conv\"(%x, %w) {stride = [1, 1], padding = [0, 0, 0, 0], dilation = [1, 1], groups = 1} : "
    "(tensor<2x256x5x7xf16, strides=[8960,1,1792,256]>, tensor<72x256x1x1xf16, strides=[256,1,256,256]>) -> "
    "tensor<2x72x5x7xf16, strides=[2520,1,504,72]>\n"
    "  %s = \"graph.add\"(%c, %r) : (tensor<2x72x5x7xf16, strides=[2520,1,504,72]>, tensor<2x72x5x7xf16, "
    "strides=[2520,1,504,72]>) -> tensor<2x72x5x7xf16, strides=[2520,1,504,72]>\n"
    "  %y = \"graph.relu\"(%s) : (tensor<2x72x5x7xf16, strides=[2520,1,504,72]>) -> tensor<2x72x5x7xf16, "
    "strides=[2520,1,504,72]>\n"
    "  func.return %y : tensor<2x72x5x7xf16, strides=[2520,1,504,72]>\n}\n";
/* Warp specialization (rock-gridwise-to-blockwise{ws=1}, passes/rock_tma.h): a producer
 * warpgroup after the consumers issues the TMA boxes on full[s] / empty[s] mbarriers; the
 * interpreter runs the roles as coroutines (exec_ws_split); results equal a direct matmul;
 * the kernel has block nc + 128, setmaxnreg in both roles, no block barrier in the consumer
 * region; an MMA before its full phase and a TMA write before its empty phase are refused. */
static const char *mut_ws_full(kl_op *k) { /* the consumers' first wait on full[s] in the loop removed */
  int n;
  kl_op **ops = kl_collect_ops(k, &n), *w = NULL;
  for (int i = 0; i < n && !w; i++) {
    const char *st = kl_op_attr_string(ops[i], "step");
    if (!strcmp(ops[i]->name, "rock.mbarrier") && st && !strcmp(st, "wait") && kl_ws_consumer_threads(ops[i]) &&
        kl_op_parent_op(ops[i]) && !strcmp(kl_op_parent_op(ops[i])->name, "scf.for"))
      w = ops[i];
  }
  free(ops);
  if (!w) return NULL;
  kl_op_unlink(w);
  return "waited for phase";
}
static const char *mut_ws_empty(kl_op *k) { /* the producer's first wait on empty[s] in the loop removed */
  int n;
  kl_op **ops = kl_collect_ops(k, &n), *w = NULL;
  for (int i = 0; i < n && !w; i++) {
    const char *st = kl_op_attr_string(ops[i], "step");
    if (!strcmp(ops[i]->name, "rock.mbarrier") && st && !strcmp(st, "wait") && !kl_ws_consumer_threads(ops[i]) &&
        kl_op_parent_op(ops[i]) && !strcmp(kl_op_parent_op(ops[i])->name, "scf.for"))
      w = ops[i];
  }
  free(ops);
  if (!w) return NULL;
  kl_op_unlink(w);
  return "before its readers' release";
}
static const char *mut_ws_arrive(kl_op *k) { /* the consumers' wait_group moved after their release of a stage */
  int n, hit = 0;
  kl_op **ops = kl_collect_ops(k, &n);
  for (int i = 0; i < n && !hit; i++) {
    const char *st = kl_op_attr_string(ops[i], "step");
    if (strcmp(ops[i]->name, "rock.mbarrier") || !st || strcmp(st, "arrive")) continue;
    kl_op *a = ops[i], *in = kl_op_parent_op(a); /* the arrive under its scf.if (kidx > 0) in the loop */
    kl_op *anchor = in && !strcmp(in->name, "scf.if") ? in : a;
    for (kl_op *w = anchor->prev; w; w = w->prev) {
      const char *ws = kl_op_attr_string(w, "step");
      if (!strcmp(w->name, "rock.wgmma_sync") && ws && !strcmp(ws, "wait") && !w->nopnds) {
        kl_op_unlink(w);
        kl_op_insert_after(anchor, w);
        hit = 1;
        break;
      }
    }
  }
  free(ops);
  return hit ? "before its readers' release" : NULL;
}
static void ws_case(const gcase *c, const char *opt) {
  char pl[512], err[4096];
  kl_ctx *ctx = kl_test_ctx();
  kl_op *k = lower_gtb_case(ctx, c, opt, pl, sizeof pl, err, sizeof err);
  const char *ws = k ? kl_op_attr_string(k, "ws") : NULL;
  int64_t bs = 0, nc = 0;
  if (k) kl_op_attr_i64(k, "block_size", &bs);
  int n = 0, blk = 0, inc = 0, dec = 0;
  kl_op **ops = k ? kl_collect_ops(k, &n) : NULL;
  for (int i = 0; i < n; i++) {
    const char *a = kl_op_attr_string(ops[i], "action");
    if (!strcmp(ops[i]->name, "scf.if")) kl_op_attr_i64(ops[i], "ws_consumers", &nc);
    if (!strcmp(ops[i]->name, "rock.barrier") && kl_op_parent_op(ops[i]) != k && !kl_ws_consumer_threads(ops[i])) blk++;
    if (!strcmp(ops[i]->name, "rock.setmaxnreg")) inc += !strcmp(a, "inc"), dec += !strcmp(a, "dec");
  }
  free(ops);
  CHECK(k && ws && !strcmp(ws, "on") && nc > 0 && bs == nc + 128 && inc == 1 && dec == 1 && blk == 0,
        "ws %s M=%lld N=%lld K=%lld: ws = %s, block %lld, consumers %lld, setmaxnreg inc %d dec %d, %d block "
        "barriers inside regions %s",
        c->perf, (long long)c->M, (long long)c->N, (long long)c->K, ws ? ws : "-", (long long)bs, (long long)nc, inc,
        dec, blk, k ? "" : err);
  kl_ctx_destroy(ctx);
  g_ntma = 0;
  run_case_with(c, pl);
  CHECK(g_mutate || g_ntma > 0, "ws %s: %lld TMA boxes executed", c->perf, (long long)g_ntma);
}
static void test_ws(void) {
  group_begin();
  static const struct {
    gcase c;
    const char *opt;
  } cases[] = {
    /* both operands K-major: 4 stages, 4 / 6 / 5 K steps; two warpgroups + the producer */
    { { "sm_90a", "f16", 1, 128, 128, 128, true, true, false, "v3:128,128,32,64,128,8", "f32" }, "ws=1" },
    { { "sm_90a", "bf16", 1, 64, 128, 96, true, true, true, "v3:64,128,16,64,128,8", "bf16" }, "ws=1" },
    { { "sm_90a", "f16", 1, 128, 64, 80, true, true, false, "v3:128,64,16,64,64,8", "f32" }, "tma=3,ws=1" },
    /* batch, the large tile; odd sizes (TMA zero fill); K = 16 (one step) */
    { { "sm_90a", "f16", 2, 128, 256, 192, true, true, false, "v3:128,256,64,64,256,8", "f32" }, "ws=1" },
    { { "sm_90a", "f16", 1, 70, 72, 40, true, true, true, "v3:64,64,16,64,64,8", "f16" }, "tma=6,ws=1" },
    { { "sm_90a", "bf16", 2, 130, 100, 56, true, true, false, "v3:128,64,32,64,64,8", "f32" }, "ws=1" },
    { { "sm_90a", "f16", 1, 64, 64, 32, true, true, false, "v3:64,64,16,64,64,8", "f32" }, "ws=1" },
    /* MN-major operands (B [K, N], A [K, M]) */
    { { "sm_90a", "f16", 1, 128, 256, 128, true, false, false, "v3:128,256,32,64,256,8", "f32" }, "ws=1" },
    { { "sm_90a", "bf16", 2, 64, 128, 64, false, true, true, "v3:64,128,16,64,128,8", "f32" }, "tma=3,ws=1" },
    { { "sm_90a", "f16", 1, 128, 128, 64, false, false, false, "v3:128,128,16,64,128,8", "f32" }, "ws=1" },
    /* unswizzled boxes; more K steps than stages by several laps (parities wrap) */
    { { "sm_90a", "f16", 1, 128, 128, 256, true, true, false, "v3:128,128,16,64,128,8", "f32" },
      "ws=1,tma-swizzle=none" },
    { { "sm_90a", "f16", 1, 64, 64, 400, true, true, true, "v3:64,64,16,64,64,8", "f32" }, "tma=3,ws=1" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) ws_case(&cases[i].c, cases[i].opt);
  /* ws=1 with one operand on registers keeps the TMA loop: ws = "off (...)" */
  {
    gcase c = { "sm_90a", "f16", 1, 128, 256, 128, true, false, false, "v3:128,256,32,64,256,8", "f32" };
    check_gtb_attr(&c, "ws=1,tma-swizzle=none", "ws", "off (not both operands", true, NULL);
    check_gtb_refused(&c, "ws=2", "ws must be 0, 1 or auto");
  }
  /* the protocol check can fail: each broken variant is refused */
  {
    const char *(*muts[3])(kl_op *) = { mut_ws_full, mut_ws_empty, mut_ws_arrive };
    gcase c = { "sm_90a", "f16", 1, 128, 64, 160, true, true, false, "v3:128,64,16,64,64,8", "f32" };
    gcase c2 = { "sm_90a", "f16", 1, 128, 128, 256, true, false, false, "v3:128,128,32,64,128,8", "f32" };
    for (int i = 0; i < 3; i++) {
      g_mutate = muts[i];
      ws_case(&c, "tma=3,ws=1");
      ws_case(&c2, "ws=1");
    }
    g_mutate = mut_tma_expect; /* a full phase that never completes: the roles deadlock */
    ws_case(&c, "tma=3,ws=1");
    g_mutate = NULL;
  }
  group_end("ws (sm_90a): warp-specialized TMA K loops (producer warpgroup, full / empty mbarriers, setmaxnreg) "
            "interpreted equal a direct matmul; the broken protocols are refused");
}

/* Persistent tiles (rock-gridwise-to-blockwise{persistent=1}, passes/rock_tma.h): the TMA loop
 * and the warp-specialized one loop over the tiles (t = workgroup id; t < tiles; t += workgroup
 * count) in the raster order, the next tile's first loads issued before this tile's epilogue.
 * Interpreted with fewer workgroups than tiles (g_sim_grid; tile counts not multiples of it, a
 * workgroup with one tile less than another), equal to a direct matmul with the mbarrier
 * protocol held across the tile boundaries; the broken variants are refused. */
static const char *mut_persist_tail(kl_op *k) { /* no barrier between the tile's last waits and the next tile's loads */
  int n, hit = 0;
  kl_op **ops = kl_collect_ops(k, &n);
  for (int i = 0; i < n && !hit; i++) { /* the barrier after the tile's wait_group 0, in the tile loop */
    const char *st = kl_op_attr_string(ops[i], "step");
    kl_op *par = kl_op_parent_op(ops[i]);
    if (strcmp(ops[i]->name, "rock.wgmma_sync") || !st || strcmp(st, "wait") || !par || strcmp(par->name, "scf.for"))
      continue;
    int64_t pend = -1;
    kl_op_attr_i64(ops[i], "pending", &pend);
    if (pend != 0 && ops[i]->nopnds == 0) continue;
    for (kl_op *b = ops[i]->next; b && !hit; b = b->next)
      if (!strcmp(b->name, "rock.barrier")) kl_op_unlink(b), hit = 1;
  }
  free(ops);
  return hit ? "with no barrier since" : NULL;
}
static const char *mut_persist_parity(kl_op *k) { /* every tile waits with the first tile's phases */
  int n, hit = 0;
  kl_op **ops = kl_collect_ops(k, &n);
  for (int i = 0; i < n && !hit; i++) { /* i = (t - h0) / ng becomes ng / ng = 1 */
    if (strcmp(ops[i]->name, "arith.divsi") || ops[i]->nopnds != 2) continue;
    kl_value *d = ops[i]->opnds[1].value;
    if (!d->def || strcmp(d->def->name, "rock.workgroup_count")) continue;
    kl_op_set_operand(ops[i], 0, d);
    hit = 1;
  }
  free(ops);
  return hit ? "deadlock" : NULL; /* a wait on a phase of the wrong parity never completes */
}
static void persist_case(const gcase *c, const char *opt, int64_t grid) {
  char pl[512], err[4096], o2[160];
  snprintf(o2, sizeof o2, "persistent=1,%s", opt);
  kl_ctx *ctx = kl_test_ctx();
  kl_op *k = lower_gtb_case(ctx, c, o2, pl, sizeof pl, err, sizeof err);
  const char *ps = k ? kl_op_attr_string(k, "persistent") : NULL;
  int64_t gp = 0, tiles = 0, gs = 0;
  if (k)
    kl_op_attr_i64(k, "grid_persistent", &gp), kl_op_attr_i64(k, "persistent_tiles", &tiles),
        kl_op_attr_i64(k, "grid_size", &gs);
  CHECK(k && ps && !strcmp(ps, "on") && gp == 1 && tiles == gs && tiles > grid &&
            count_ops(k, "rock.workgroup_count") == 1,
        "persistent %s %s M=%lld N=%lld K=%lld: persistent = %s, grid_persistent %lld, tiles %lld, grid_size %lld, "
        "%d workgroup_count %s",
        c->perf, opt, (long long)c->M, (long long)c->N, (long long)c->K, ps ? ps : "-", (long long)gp, (long long)tiles,
        (long long)gs, k ? count_ops(k, "rock.workgroup_count") : 0, k ? "" : err);
  kl_ctx_destroy(ctx);
  g_ntma = 0;
  g_sim_grid = grid;
  g_sim_ran = 0;
  run_case_with(c, pl);
  g_sim_grid = 0;
  CHECK(g_mutate || (g_ntma > 0 && g_sim_ran == grid), "persistent %s %s: %lld TMA boxes, %lld workgroups (want %lld)",
        c->perf, opt, (long long)g_ntma, (long long)g_sim_ran, (long long)grid);
}
static void test_persist(void) {
  group_begin();
  static const struct {
    gcase c;
    const char *opt;
    int64_t grid;
  } cases[] = {
    /* 2 x 2 tiles on 3 workgroups; 4 K steps in 4 stages */
    { { "sm_90a", "f16", 1, 256, 256, 128, true, true, false, "v3:128,128,32,64,128,8", "f32" }, "tma=1", 3 },
    { { "sm_90a", "f16", 1, 256, 256, 128, true, true, false, "v3:128,128,32,64,128,8", "f32" }, "ws=1", 3 },
    /* batch 2, odd M / N (TMA zero fill), 2 K steps: 8 tiles on 3 */
    { { "sm_90a", "bf16", 2, 130, 100, 56, true, true, false, "v3:128,64,32,64,64,8", "f32" }, "tma=1", 3 },
    { { "sm_90a", "bf16", 2, 130, 100, 56, true, true, false, "v3:128,64,32,64,64,8", "f32" }, "ws=1", 3 },
    /* odd sizes with the fused epilogue (bias, relu, f16 out), 3 K steps: 4 tiles on 3 */
    { { "sm_90a", "f16", 1, 70, 72, 40, true, true, true, "v3:64,64,16,64,64,8", "f16" }, "tma=3", 3 },
    { { "sm_90a", "f16", 1, 70, 72, 40, true, true, true, "v3:64,64,16,64,64,8", "f16" }, "tma=4,ws=1", 3 },
    /* 25 K steps in 3 stages (stage 0 filled once more per tile than 1, 2: the parities per stage
     * differ across tiles), 3 x 2 tiles on 4 workgroups, K padded to the tile, the epilogue */
    { { "sm_90a", "f16", 1, 192, 128, 392, true, true, true, "v3:64,64,16,64,64,8", "f32" }, "tma=3", 4 },
    { { "sm_90a", "f16", 1, 192, 128, 392, true, true, true, "v3:64,64,16,64,64,8", "f32" }, "tma=3,ws=1", 4 },
    /* MN-major B (B [K, N]) and A: the swizzled MN-major tiles, one workgroup for every tile */
    { { "sm_90a", "f16", 1, 256, 512, 128, true, false, false, "v3:128,256,32,64,256,8", "f32" }, "tma=1", 1 },
    { { "sm_90a", "bf16", 2, 64, 256, 64, false, false, true, "v3:64,128,16,64,128,8", "f32" }, "tma=3,ws=1", 3 },
    /* the mixed loop (B MN-major on registers with tma-swizzle=none): its register stage per tile */
    { { "sm_90a", "f16", 1, 256, 384, 128, true, false, false, "v3:128,128,32,64,128,8", "f32" },
      "tma=1,tma-swizzle=none",
      4 },
    /* the grouped raster order (groups of 2 m-tiles, the last partial): 3 x 3 tiles on 2 */
    { { "sm_90a", "f16", 1, 192, 192, 64, true, true, false, "v3:64,64,16,64,64,8", "f32" },
      "tma=3,raster-group-m=2",
      2 },
    { { "sm_90a", "f16", 1, 192, 192, 64, true, true, false, "v3:64,64,16,64,64,8", "f32" },
      "tma=3,ws=1,raster-group-m=2",
      4 },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) persist_case(&cases[i].c, cases[i].opt, cases[i].grid);
  /* ws = "on" with persistence: the roles' checks of ws_case (no block barrier in the regions) */
  ws_case(&cases[1].c, "persistent=1,ws=1");
  /* the broken protocols are refused: no barrier before the next tile's loads (a TMA write
   * over the stage another warpgroup read), every tile waiting with the first tile's parities,
   * no mbarrier wait, one wgmma group fewer retired, more bytes expected than loaded */
  {
    gcase c = { "sm_90a", "f16", 1, 192, 128, 160, true, true, false, "v3:128,64,16,64,64,8", "f32" };
    static const struct {
      const char *(*mut)(kl_op *);
      const char *opt;
    } muts[] = {
      { mut_persist_tail, "tma=3" }, { mut_persist_parity, "tma=3" }, { mut_persist_parity, "tma=3,ws=1" },
      { mut_tma_wait, "tma=3" },     { mut_pending, "tma=3" },        { mut_tma_expect, "tma=3" },
      { mut_ws_full, "tma=3,ws=1" }, { mut_ws_empty, "tma=3,ws=1" },  { mut_ws_arrive, "tma=3,ws=1" },
    };
    for (size_t i = 0; i < sizeof muts / sizeof *muts; i++) {
      g_mutate = muts[i].mut;
      persist_case(&c, muts[i].opt, 2);
    }
    g_mutate = NULL;
  }
  /* not applicable: recorded on the kernel; option errors */
  {
    gcase c = { "sm_90a", "f16", 1, 128, 128, 128, true, true, false, "v3:128,128,32,64,128,8", "f32" };
    check_gtb_attr(&c, "persistent=1", "persistent", "off (one tile)", false, "grid_persistent");
    check_gtb_attr(&c, "persistent=1,tma=0", "persistent", "off (the TMA loop is not taken)", false, NULL);
    check_gtb_refused(&c, "persistent=2", "persistent must be 0, 1 or auto");
  }
  group_end("persistent (sm_90a): TMA and warp-specialized K loops over several tiles per workgroup (the next "
            "tile's loads before the epilogue) interpreted equal a direct matmul; the broken protocols are refused");
}

/* Thread-block clusters (passes/rock_tma.h: cluster). The mutations: the K loop's cluster
 * barrier (the one guarding stage reuse) or the init's made a block barrier. */
static const char *mut_cluster_scope(kl_op *k, bool in_loop) {
  int n, hit = 0;
  kl_op **ops = kl_collect_ops(k, &n);
  for (int i = 0; i < n; i++) {
    const char *sc = kl_op_attr_string(ops[i], "scope");
    kl_op *par = kl_op_parent_op(ops[i]);
    bool loop = par && !strcmp(par->name, "scf.for");
    if (strcmp(ops[i]->name, "rock.barrier") || !sc || strcmp(sc, "cluster") || loop != in_loop) continue;
    kl_op_set_attr(ops[i], "scope", NULL);
    hit++; /* the loop: every step's barrier; else the first (the init's) */
    if (!in_loop) break;
  }
  free(ops);
  return hit ? (in_loop ? "before every CTA of the cluster released its readers" : "before its mbarrier") : NULL;
}
static const char *mut_cluster_loop(kl_op *k) { return mut_cluster_scope(k, true); }
/* The empty-mbarrier form (both operands through TMA): the issuing thread's empty waits dropped
 * (it overwrites peers' stages before their readers' release), or the remote arrives dropped
 * (the second lap's empty phase never completes). */
static const char *mut_cmb(kl_op *k, const char *step) {
  int n, hit = 0;
  kl_op **ops = kl_collect_ops(k, &n);
  for (int i = 0; i < n; i++) {
    const char *st = kl_op_attr_string(ops[i], "step");
    if (strcmp(ops[i]->name, "rock.mbarrier") || !st || strcmp(st, step)) continue;
    const char *nx = ops[i]->next ? kl_op_attr_string(ops[i]->next, "step") : NULL;
    if (!strcmp(step, "wait") && (!nx || strcmp(nx, "arrive_expect_tx")))
      continue; /* the empty waits: before a refill */
    kl_op_unlink(ops[i]);
    hit++;
  }
  free(ops);
  return !hit ? NULL : !strcmp(step, "wait") ? "before every CTA of the cluster released its readers" : "deadlock";
}
static const char *mut_cmb_wait(kl_op *k) { return mut_cmb(k, "wait"); }
static const char *mut_cmb_arrive(kl_op *k) { return mut_cmb(k, "arrive_remote"); }
static const char *mut_cluster_init(kl_op *k) { return mut_cluster_scope(k, false); }
/* One cluster case: c lowered with rock-gridwise-to-blockwise{opt} must record cluster = want
 * (the shape, or a prefix of "off (why)") with want_grid workgroups; its multicast loads and
 * cluster barriers present, interpreted in clusters (and once without: each multicast load
 * taking all its boxes) equal to a direct matmul; with g_mutate, refused. */
static void cluster_case(const gcase *c, const char *opt, const char *want, int64_t want_grid) {
  char pl[512], err[4096];
  kl_ctx *ctx = kl_test_ctx();
  kl_op *k = lower_gtb_case(ctx, c, opt, pl, sizeof pl, err, sizeof err);
  const char *got = k ? kl_op_attr_string(k, "cluster") : NULL;
  int64_t cs = 0, gs = 0;
  int mcast = 0, cbar = 0, n = 0, rarr = 0, lbar = 0;
  if (k) {
    kl_op_attr_i64(k, "cluster_size", &cs);
    kl_op_attr_i64(k, "grid_size", &gs);
    kl_op **ops = kl_collect_ops(k, &n);
    for (int i = 0; i < n; i++) {
      const char *st = kl_op_attr_string(ops[i], "step");
      mcast += !strcmp(ops[i]->name, "rock.tma_load") && kl_op_attr(ops[i], "multicast");
      cbar += !strcmp(ops[i]->name, "rock.barrier") && kl_op_attr(ops[i], "scope");
      rarr += !strcmp(ops[i]->name, "rock.mbarrier") && st && !strcmp(st, "arrive_remote");
      bool in_loop = false; /* inside the K loop (an scf.for) */
      for (kl_op *q = kl_op_parent_op(ops[i]); q && q != k; q = kl_op_parent_op(q))
        in_loop |= !strcmp(q->name, "scf.for");
      lbar += !strcmp(ops[i]->name, "rock.barrier") && in_loop;
    }
    free(ops);
  }
  bool on = strncmp(want, "off", 3) != 0;
  /* on: the init's and the end's cluster barriers, and in the K loop either remote arrives on
   * empty mbarriers and no barrier (both operands through TMA) or the cluster barrier */
  CHECK(k && got && !strncmp(got, want, strlen(want)) && (!on || (gs == want_grid && cs > 1 && gs % cs == 0)) &&
            (mcast > 0) == on && (cbar >= 2) == on && (!on || (rarr > 0 ? lbar == 0 : cbar >= 3)),
        "cluster %s %s M=%lld N=%lld K=%lld: cluster = %s (want %s), cluster_size %lld, grid %lld (want %lld), %d "
        "multicast loads, %d cluster barriers, %d remote arrives, %d barriers in the loop %s",
        c->perf, opt, (long long)c->M, (long long)c->N, (long long)c->K, got ? got : "-", want, (long long)cs,
        (long long)gs, (long long)want_grid, mcast, cbar, rarr, lbar, k ? "" : err);
  kl_ctx_destroy(ctx);
  if (!on) return;
  g_sim_clusters = 0;
  run_case_with(c, pl);
  CHECK(g_mutate || g_sim_clusters == want_grid / cs, "cluster %s %s: %lld clusters interpreted, want %lld", c->perf,
        opt, (long long)g_sim_clusters, (long long)(want_grid / (cs ? cs : 1)));
  if (!g_mutate) {
    g_sim_nocluster = true;
    run_case_with(c, pl);
    g_sim_nocluster = false;
  }
}
static void test_cluster(void) {
  group_begin();
  /* the reference mapping: every tile once, padding only in the last cluster row / column */
  for (int am = 0; am < 2; am++)
    for (int64_t C = 2; C <= 4; C += 2)
      for (int64_t gm = 0; gm <= 3; gm++) {
        int64_t G = 2, nM = 5, nN = 3, T = G * nM * nN, grid = kl_gemm_cluster_grid(G, nM, nN, C, am);
        int64_t seen[64] = { 0 }, pad = 0;
        for (int64_t h = 0; h < grid; h++) {
          int64_t b = kl_gemm_cluster_ref(h, G, nM, nN, gm, C, am);
          if (b < 0)
            pad++;
          else if (b < T)
            seen[b]++;
          if (b >= 0 && h % C) { /* the cluster's tiles share the m-tile (1 x C) or the n-tile (C x 1) */
            int64_t b0 = kl_gemm_cluster_ref(h - h % C, G, nM, nN, gm, C, am);
            CHECK(b0 >= 0 && (am ? b % nN == b0 % nN : b / nN == b0 / nN), "cluster ref: h %lld shares nothing",
                  (long long)h);
          }
        }
        int64_t once = 0;
        for (int64_t i = 0; i < T; i++) once += seen[i] == 1;
        CHECK(grid % C == 0 && once == T && pad == grid - T, "cluster ref C=%lld along_m=%d gm=%lld: %lld of %lld once",
              (long long)C, am, (long long)gm, (long long)once, (long long)T);
      }
  static const struct {
    gcase c;
    const char *opt, *want;
    int64_t grid;
  } cases[] = {
    /* 2 x 4 tiles: 2 (auto: no padding either way, B's tile the larger one... equal: B) */
    { { "sm_90a", "f16", 1, 256, 512, 128, true, true, false, "v3:128,128,32,64,128,8", "f32" },
      "cluster=2",
      "2x1",
      8 },
    { { "sm_90a", "f16", 1, 256, 512, 128, true, true, false, "v3:128,128,32,64,128,8", "f32" },
      "cluster=1x2",
      "1x2",
      8 },
    /* batch 2, odd M / N (TMA zero fill): A shared (1 x 2) */
    { { "sm_90a", "bf16", 2, 130, 100, 56, true, true, false, "v3:128,64,32,64,64,8", "f32" },
      "cluster=1x2",
      "1x2",
      8 },
    { { "sm_90a", "bf16", 2, 130, 100, 56, true, true, false, "v3:128,64,32,64,64,8", "f32" },
      "cluster=2x1",
      "2x1",
      8 },
    /* 3 x 2 tiles, the grid padded (2 x 1: one padding CTA per column), the fused epilogue */
    { { "sm_90a", "f16", 1, 192, 128, 160, true, true, true, "v3:64,64,16,64,64,8", "f16" },
      "tma=3,cluster=2x1",
      "2x1",
      8 },
    { { "sm_90a", "f16", 1, 70, 72, 40, true, true, true, "v3:64,64,16,64,64,8", "f16" }, "tma=3,cluster=2", "2x1", 4 },
    /* clusters of 4: 2 x 3 tiles padded to 12 (4 x 1) and 8 (1 x 4) */
    { { "sm_90a", "f16", 1, 256, 384, 128, true, true, false, "v3:128,128,32,64,128,8", "f32" },
      "cluster=4",
      "4x1",
      12 },
    { { "sm_90a", "f16", 1, 256, 384, 128, true, true, false, "v3:128,128,32,64,128,8", "f32" },
      "cluster=1x4",
      "1x4",
      8 },
    /* MN-major shared operands (panels multicast): B [K, N] 2 x 1, A [K, M] 1 x 2 */
    { { "sm_90a", "f16", 1, 256, 512, 128, true, false, false, "v3:128,256,32,64,256,8", "f32" },
      "cluster=2x1",
      "2x1",
      4 },
    { { "sm_90a", "bf16", 1, 128, 256, 64, false, true, false, "v3:128,64,16,64,64,8", "f32" },
      "cluster=1x2",
      "1x2",
      4 },
    /* the grouped raster order over cluster tiles; the mixed loop (B on registers): A shared */
    { { "sm_90a", "f16", 1, 256, 192, 64, true, true, false, "v3:64,64,16,64,64,8", "f32" },
      "tma=3,cluster=2x1,raster-group-m=4",
      "2x1",
      12 },
    { { "sm_90a", "f16", 1, 256, 384, 128, true, false, false, "v3:128,128,32,64,128,8", "f32" },
      "tma=1,tma-swizzle=none,cluster=2",
      "1x2",
      8 },
    /* refused: one tile; B shared but B on registers; persistent=1 */
    { { "sm_90a", "f16", 1, 128, 128, 128, true, true, false, "v3:128,128,32,64,128,8", "f32" },
      "cluster=2",
      "off (one tile)",
      0 },
    { { "sm_90a", "f16", 1, 256, 384, 128, true, false, false, "v3:128,128,32,64,128,8", "f32" },
      "tma=1,tma-swizzle=none,cluster=2x1",
      "off (C x 1 shares B",
      0 },
    /* warp-specialized (the producer issues the multicast, the consumers arrive remotely) */
    { { "sm_90a", "f16", 1, 256, 512, 256, true, true, false, "v3:128,128,32,64,128,8", "f32" },
      "tma=3,cluster=2,ws=1",
      "2x1",
      8 },
    { { "sm_90a", "f16", 1, 256, 512, 128, true, true, false, "v3:128,128,32,64,128,8", "f32" },
      "cluster=2,persistent=1",
      "off (persistent",
      0 },
    { { "sm_90a", "f16", 1, 256, 512, 128, true, true, false, "v3:128,128,32,64,128,8", "f32" },
      "cluster=2,tma=0",
      "off (the TMA loop is not taken)",
      0 },
    /* stage reuse (nk > W) with clusters of 4 (empty mbarriers, 4 x 2 arrivals per phase) and in
     * the mixed loop (its cluster barrier) */
    { { "sm_90a", "f16", 1, 256, 384, 256, true, true, false, "v3:128,128,32,64,128,8", "f32" },
      "tma=3,cluster=4",
      "4x1",
      12 },
    { { "sm_90a", "f16", 1, 256, 384, 256, true, false, false, "v3:128,128,32,64,128,8", "f32" },
      "tma=3,tma-swizzle=none,cluster=2",
      "1x2",
      8 },
    /* warp-specialized: the padded grid and fused epilogue; clusters of 4; odd sizes, batch, 1 x 2 */
    { { "sm_90a", "f16", 1, 192, 128, 160, true, true, true, "v3:64,64,16,64,64,8", "f16" },
      "tma=3,cluster=2x1,ws=1",
      "2x1",
      8 },
    { { "sm_90a", "f16", 1, 256, 384, 256, true, true, false, "v3:128,128,32,64,128,8", "f32" },
      "tma=3,cluster=4,ws=1",
      "4x1",
      12 },
    { { "sm_90a", "bf16", 2, 130, 100, 120, true, true, false, "v3:128,64,32,64,64,8", "f32" },
      "tma=3,cluster=1x2,ws=1",
      "1x2",
      8 },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    cluster_case(&cases[i].c, cases[i].opt, cases[i].want, cases[i].grid);
  /* broken orderings are refused: a peer's multicast into a stage before every CTA released
   * its readers (the K loop's barrier a block barrier); multicasts before the peers' mbarrier
   * init (the init's barrier a block barrier) */
  g_mutate = mut_cluster_loop; /* the mixed loop (B on registers) keeps the cluster barrier */
  cluster_case(&cases[18].c, cases[18].opt, cases[18].want, cases[18].grid);
  g_mutate = mut_cmb_wait; /* both through TMA: the empty-mbarrier form */
  cluster_case(&cases[4].c, cases[4].opt, cases[4].want, cases[4].grid);
  cluster_case(&cases[17].c, cases[17].opt, cases[17].want, cases[17].grid);
  cluster_case(&cases[10].c, cases[10].opt, cases[10].want, cases[10].grid);
  cluster_case(&cases[14].c, cases[14].opt, cases[14].want, cases[14].grid); /* ws: the producer's */
  cluster_case(&cases[19].c, cases[19].opt, cases[19].want, cases[19].grid);
  g_mutate = mut_cmb_arrive;
  cluster_case(&cases[4].c, cases[4].opt, cases[4].want, cases[4].grid);
  cluster_case(&cases[17].c, cases[17].opt, cases[17].want, cases[17].grid);
  cluster_case(&cases[20].c, cases[20].opt, cases[20].want, cases[20].grid);
  g_mutate = mut_cluster_init;
  cluster_case(&cases[0].c, cases[0].opt, cases[0].want, cases[0].grid);
  g_mutate = mut_pending;
  cluster_case(&cases[4].c, cases[4].opt, cases[4].want, cases[4].grid);
  g_mutate = NULL;
  /* option errors */
  {
    char err[4096], pl[512];
    check_gtb_refused(&cases[0].c, "cluster=3", "cluster must be 1 (none), 2, 4");
    kl_ctx *ctx = kl_test_ctx();
    kl_op *k = lower_gtb_case(ctx, &cases[0].c, "cluster=auto", pl, sizeof pl, err, sizeof err);
    CHECK(k && !kl_op_attr(k, "cluster") && !kl_op_attr(k, "cluster_size"), "cluster=auto (KL_CLUSTER_AUTO 1): %s",
          k ? kl_op_attr_string(k, "cluster") : err);
    kl_ctx_destroy(ctx);
  }
  group_end("clusters (sm_90a): TMA multicast of the shared operand's slices into every CTA of the cluster, the "
            "cluster barrier guarding stage reuse, padded grids, interpreted CTA by CTA of each cluster equal a "
            "direct matmul; the broken orderings are refused");
}

/* TMA on sm_90a (passes/rock_tma.h): the 1x1 NHWC conv with both operands through TMA, the
 * padded, strided 3x3 conv with one (the other's im2col view is not a box), interpreted */
static void test_tma_graphs(void) {
  group_begin();
  /* the 1x1 conv with both operands through TMA, swizzled and as unswizzled boxes; the 3x3 conv;
   * warp-specialized (ws=1): the epilogue (residual, relu, the LDS output swizzle) in the
   * consumer region behind named barriers */
  const struct {
    const char *text, *opt, *want_tma;
  } cases[] = {
    { conv1x1_nhwc_f16, "tma=1", "A,B" },
    { conv_nhwc_f16, "tma=1", NULL },
    { conv1x1_nhwc_f16, "tma=1,tma-swizzle=none", "A,B" },
    { conv1x1_nhwc_f16, "tma=1,ws=1", "A,B" },
    /* persistent tiles, interpreted on 2 workgroups (g_sim_grid): the residual + relu epilogue
     * through the output swizzle's own LDS while the next tile's loads land in the stages */
    { conv1x1_big_f16, "tma=1,persistent=1", "A,B" },
    { conv1x1_big_f16, "tma=1,ws=1,persistent=1", "A,B" },
    /* clusters (the seed conv's class): 2 and 4 CTAs, either operand shared, run as clusters */
    { conv1x1_big_f16, "tma=1,cluster=2", "A,B" },
    { conv1x1_big_f16, "tma=1,cluster=1x2", "A,B" },
    { conv1x1_big_f16, "tma=1,cluster=4", "A,B" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char pl[1024];
    snprintf(pl, sizeof pl,
             "fp8-compute,reduce-split,split-k-workspace,graph-partition,graph-to-rock,rock-regularize,"
             "rock-conv-to-gemm,rock-gemm-to-gridwise,rock-gridwise-to-blockwise{%s},"
             "rock-blockwise-to-threadwise,rock-output-swizzle,rock-align-tiling,rock-plan-steps,"
             "rock-lower-loops,canonicalize,cse,dce",
             cases[i].opt);
    graph_case g = { "sm_90a", cases[i].text, 2e-2, 1, false, pl, cases[i].want_tma, NULL };
    g_sim_grid = strstr(cases[i].opt, "persistent=1") ? 2 : 0;
    g_sim_ran = 0;
    g_sim_clusters = 0;
    run_graph_case(&g);
    CHECK(!strstr(cases[i].opt, "cluster=") || g_sim_clusters > 0, "%s: no cluster interpreted", cases[i].opt);
    CHECK(!g_sim_grid || g_sim_ran == 2, "%s: the persistent kernel ran on %lld workgroups, want 2", cases[i].opt,
          (long long)g_sim_ran);
    g_sim_grid = 0;
  }
  group_end("tma graphs: 1x1 and 3x3 NHWC convs with TMA operands (swizzled and not) on sm_90a interpreted against "
            "g:eval");
}


/* TMA for split-K operands (passes/rock_tma.h: K in runs): split-k-workspace slices a conv's
 * input channels, so the KYXC filter's slice view [g, (tap, c'), m] is contiguous in runs of
 * the slice's Cc channels at the taps' stride C: a rank-4 tensor map {Cc, taps, M, G} with
 * the K coordinate split per box. 3x3 NHWC convs (padding 1) and split dots, interpreted
 * against g:eval; a run that is not whole boxes keeps the register path. */
static char *split_conv_text(const char *T, int64_t n, int64_t c, int64_t h, int64_t w, int64_t k) {
  static char buf[4096];
  snprintf(
      buf, sizeof buf,
      "func.func @split_conv_relu() attributes {graph} {\n"
      "  %%x = \"graph.param\"() {name = \"x\"} : () -> tensor<%lldx%lldx%lldx%lldx%s, strides=[%lld,1,%lld,%lld]>\n"
      "  %%w = \"graph.param\"() {name = \"w\"} : () -> tensor<%lldx%lldx3x3x%s, strides=[%lld,1,%lld,%lld]>\n"
      "  %%b = \"graph.param\"() {name = \"b\"} : () -> tensor<%lldx1x1x%s>\n"
      "  %%c = \"graph.conv\"(%%x, %%w) {stride = [1, 1], padding = [1, 1, 1, 1], dilation = [1, 1], groups = 1} "
      ": (tensor<%lldx%lldx%lldx%lldx%s, strides=[%lld,1,%lld,%lld]>, "
      "tensor<%lldx%lldx3x3x%s, strides=[%lld,1,%lld,%lld]>) -> tensor<%lldx%lldx%lldx%lldx%s, "
      "strides=[%lld,1,%lld,%lld]>\n"
      "  %%cb = \"graph.add\"(%%c, %%b) : (tensor<%lldx%lldx%lldx%lldx%s, strides=[%lld,1,%lld,%lld]>, "
      "tensor<%lldx1x1x%s>) -> tensor<%lldx%lldx%lldx%lldx%s, strides=[%lld,1,%lld,%lld]>\n"
      "  %%y = \"graph.relu\"(%%cb) : (tensor<%lldx%lldx%lldx%lldx%s, strides=[%lld,1,%lld,%lld]>) -> "
      "tensor<%lldx%lldx%lldx%lldx%s, strides=[%lld,1,%lld,%lld]>\n"
      "  func.return %%y : tensor<%lldx%lldx%lldx%lldx%s, strides=[%lld,1,%lld,%lld]>\n}\n",
      (long long)n, (long long)c, (long long)h, (long long)w, T, (long long)(h * w * c), (long long)(w * c),
      (long long)c,                                                                        /* x */
      (long long)k, (long long)c, T, (long long)(9 * c), (long long)(3 * c), (long long)c, /* w */
      (long long)k, T,                                                                     /* b, conv */
      (long long)n, (long long)c, (long long)h, (long long)w, T, (long long)(h * w * c), (long long)(w * c),
      (long long)c, (long long)k, (long long)c, T, (long long)(9 * c), (long long)(3 * c), (long long)c, (long long)n,
      (long long)k, (long long)h, (long long)w, T, (long long)(h * w * k), (long long)(w * k),
      (long long)k, /* the conv's result */
      (long long)n, (long long)k, (long long)h, (long long)w, T, (long long)(h * w * k), (long long)(w * k),
      (long long)k, (long long)k, T, (long long)n, (long long)k, (long long)h, (long long)w, T, (long long)(h * w * k),
      (long long)(w * k), (long long)k, /* add */
      (long long)n, (long long)k, (long long)h, (long long)w, T, (long long)(h * w * k), (long long)(w * k),
      (long long)k, (long long)n, (long long)k, (long long)h, (long long)w, T, (long long)(h * w * k),
      (long long)(w * k), (long long)k, /* relu */
      (long long)n, (long long)k, (long long)h, (long long)w, T, (long long)(h * w * k), (long long)(w * k),
      (long long)k);
  return buf;
}
/* y = relu(a @ b + r[n]): a [M, K], b [K, N] (tb: [N, K], transpose_b) */
static char *split_dot_text(const char *T, int64_t M, int64_t N, int64_t K, bool tb) {
  static char buf[2048];
  char bt[64];
  snprintf(bt, sizeof bt, "tensor<%lldx%lldx%s>", (long long)(tb ? N : K), (long long)(tb ? K : N), T);
  snprintf(buf, sizeof buf,
           "func.func @split_dot_relu() attributes {graph} {\n"
           "  %%a = \"graph.param\"() {name = \"a\"} : () -> tensor<%lldx%lldx%s>\n"
           "  %%b = \"graph.param\"() {name = \"b\"} : () -> %s\n"
           "  %%r = \"graph.param\"() {name = \"r\"} : () -> tensor<%lldx%s>\n"
           "  %%d = \"graph.dot\"(%%a, %%b) {transpose_b = %s} : (tensor<%lldx%lldx%s>, %s) -> "
           "tensor<%lldx%lldx%s>\n"
           "  %%e = \"graph.add\"(%%d, %%r) : (tensor<%lldx%lldx%s>, tensor<%lldx%s>) -> tensor<%lldx%lldx%s>\n"
           "  %%y = \"graph.relu\"(%%e) : (tensor<%lldx%lldx%s>) -> tensor<%lldx%lldx%s>\n"
           "  func.return %%y : tensor<%lldx%lldx%s>\n}\n",
           (long long)M, (long long)K, T, bt, (long long)N, T, tb ? "true" : "false", (long long)M, (long long)K, T, bt,
           (long long)M, (long long)N, T, (long long)M, (long long)N, T, (long long)N, T, (long long)M, (long long)N, T,
           (long long)M, (long long)N, T, (long long)M, (long long)N, T, (long long)M, (long long)N, T);
  return buf;
}
/* the kernels' tma attributes of text compiled for sm_90a, joined by " | " */
static void tma_attrs(const char *text, const char *perf, char *out, size_t n) {
  char err[4096];
  out[0] = 0;
  kl_ctx *ctx = kl_test_ctx();
  kl_op *mod = kl_parse_module(ctx, text, strlen(text), "graph.kir");
  kl_op *g = mod ? kl_module_body(mod)->first : NULL;
  const char *targets[1] = { "sm_90a" };
  kl_compile_opts o = { .targets = targets, .ntargets = 1, .no_cache = true, .perf_config = perf };
  kl_program *p = g ? kl_compile(g, &o, err, sizeof err) : NULL;
  CHECK(p != NULL, "split-K tma: compile: %s", g ? err : "parse");
  size_t at = 0;
  for (int i = 0; p && i < kl_program_nkernels(p, "sm_90a"); i++) {
    const kl_kernel_info *ki = kl_program_kernel(p, "sm_90a", i);
    if (ki->tma && *ki->tma && at < n)
      at += (size_t)snprintf(out + at, n - at, "%s%s [%s]", at ? " | " : "", ki->tma, ki->perf_config);
  }
  if (p) kl_program_release(p);
  kl_ctx_destroy(ctx);
}
/* kl_tma_fit_radix accepts exactly the mixed-radix sequences: random radices (1..3 dims, runs
 * 1..9, strides 1..700) are found back (every point re-derived); one point moved, a partial
 * last run, or more dims than allowed are refused */
static int64_t radix_at(int kd, const int64_t *P, const int64_t *s, int64_t k) {
  int64_t a = 0;
  for (int i = 0; i < kd; i++) {
    a += (i + 1 == kd ? k : k % P[i]) * s[i];
    if (i + 1 < kd) k /= P[i];
  }
  return a;
}
static void test_tma_radix(void) {
  uint64_t st = 12345;
  int64_t a[4096];
  for (int it = 0; it < 400; it++) {
    int64_t P[3], S[3], e = 1;
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    int kd = 1 + (int)((st >> 33) % 3);
    for (int i = 0; i < kd; i++) {
      st = st * 6364136223846793005ull + 1442695040888963407ull;
      P[i] = 2 + (int64_t)((st >> 33) % 8);
      S[i] = i == 0 ? 1 : 1 + (int64_t)((st >> 40) % 700);
      e *= P[i];
    }
    for (int64_t k = 0; k < e; k++) a[k] = radix_at(kd, P, S, k);
    int64_t gp[3], gs[3];
    int got = kl_tma_fit_radix(a, e, 3, gp, gs);
    bool same = got >= 1;
    for (int64_t k = 0; same && k < e; k++) same = a[k] == radix_at(got, gp, gs, k);
    CHECK(same && got <= kd, "radix %d dims (runs %lld, strides %lld ...): found %d", kd, (long long)P[0],
          (long long)S[1 < kd ? 1 : 0], got);
    /* one point moved off the radix: refused, or a radix that still derives every point */
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    int64_t j = 1 + (int64_t)((st >> 33) % (uint64_t)(e - 1));
    a[j] += 1 + (int64_t)((st >> 45) % 5);
    got = kl_tma_fit_radix(a, e, 3, gp, gs);
    same = got >= 1;
    for (int64_t k = 0; same && k < e; k++) same = a[k] == radix_at(got, gp, gs, k);
    CHECK(got == 0 || same, "moved point %lld of a %d-dim radix: found %d dims that do not derive it", (long long)j, kd,
          got);
    a[j] = radix_at(kd, P, S, j);
    if (kd > 1 && e > P[0] + 1) { /* a partial last run */
      got = kl_tma_fit_radix(a, e - 1, 3, gp, gs);
      CHECK(got == 0, "a partial last run (e %lld, runs %lld): %d dims", (long long)(e - 1), (long long)P[0], got);
    }
    if (kd == 3 && S[1] != P[0] && S[2] != P[0] * P[1] && S[2] != S[1] * P[1])
      CHECK(kl_tma_fit_radix(a, e, 2, gp, gs) == 0, "3 runs' dims within 2: accepted");
  }
}
static void test_tma_split(void) {
  group_begin();
  test_tma_radix();
  static const struct {
    const char *type;
    int64_t n, c, h, w, k;
    const char *perf, *want; /* want: the GEMM kernel's tma (the interpreter runs every case) */
  } convs[] = {
    /* runs of 64 channels (C 128 split 2), KB 64: one 128-byte panel per run and tap */
    { "f16", 2, 128, 5, 5, 64, "v3:64,64,64,64,64,8,2", "A" },
    /* runs of 48 (C 96 split 2), KB 16 (32-byte panels), odd M 40 and N 72; bf16 */
    { "bf16", 3, 96, 4, 6, 40, "v3:64,64,16,64,64,8,2", "A" },
    /* C 192 split 3 (runs of 64), KB 32, 130 filters (M past the tile: zero fill) */
    { "f16", 1, 192, 3, 7, 130, "v3:128,64,32,64,64,8,3", "A" },
    /* the sub-wave model's tiles unsplit (passes/rock_wgmma.h): 128x96 and 128x192, N 100 / 150
     * past one tile (the filter a plain box) */
    { "f16", 4, 64, 5, 5, 128, "v3:128,96,64,64,96,8", "A" },
    { "bf16", 6, 64, 5, 5, 136, "v3:128,192,64,64,192,8", "A" },
  };
  for (size_t i = 0; i < sizeof convs / sizeof *convs; i++) {
    const char *text = split_conv_text(convs[i].type, convs[i].n, convs[i].c, convs[i].h, convs[i].w, convs[i].k);
    graph_case g = { "sm_90a", text, 2e-2, 1, false, NULL, convs[i].want, convs[i].perf };
    run_graph_case(&g);
  }
  /* runs of 48 with KB 32 (64-byte panels of 32): a box would cross a run: registers, interpreted */
  {
    const char *text = split_conv_text("bf16", 3, 96, 4, 6, 40), *perf = "v3:64,64,32,64,64,8,2";
    char got[1024];
    tma_attrs(text, perf, got, sizeof got);
    CHECK(strstr(got, "A: K runs of 48 elements are not whole boxes of 32") != NULL, "runs of 48, KB 32: tma = %s",
          got);
    graph_case g = { "sm_90a", text, 2e-2, 1, false, NULL, NULL, perf };
    run_graph_case(&g);
  }
  /* split dots: the slices are affine (rank 3: {Kc, M, S}); B [K, N] MN-major and B [N, K] */
  static const struct {
    const char *type;
    int64_t M, N, K;
    bool tb;
    const char *perf, *want;
  } dots[] = {
    { "f16", 70, 136, 128, false, "v3:64,64,32,64,64,8,2", "A,B" },
    { "bf16", 70, 136, 192, true, "v3:64,64,32,64,64,8,3", "A,B" },
  };
  for (size_t i = 0; i < sizeof dots / sizeof *dots; i++) {
    const char *text = split_dot_text(dots[i].type, dots[i].M, dots[i].N, dots[i].K, dots[i].tb);
    graph_case g = { "sm_90a", text, 2e-2, 1, false, NULL, dots[i].want, dots[i].perf };
    run_graph_case(&g);
  }
  group_end("tma split-K: channel-sliced 3x3 NHWC conv filters through rank-4 tensor maps (K in runs) and split dots, "
            "interpreted against g:eval on sm_90a; runs that are not whole boxes keep registers");
}

/* TMA im2col mode (passes/rock_tma_im2col.h, rock-gridwise-to-blockwise{tma-im2col=1}): the
 * activation operand (B: D = the output pixels) of NHWC convs with a KYXC filter, R x S windows
 * with stride, padding (asymmetric too) and dilation, loads through rock.tma_load {im2col}, whose
 * walk over the bounding box tma_box interprets as the PTX ISA describes it; tiles of 64 pixels
 * cross image rows and images; interpreted against g:eval. */
static char *im2col_conv_text(const char *T, int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t r,
                              int64_t s, const int64_t *st, const int64_t *pad, const int64_t *dil) {
  static char buf[4096];
  int64_t ho = (h + pad[0] + pad[1] - dil[0] * (r - 1) - 1) / st[0] + 1,
          wo = (w + pad[2] + pad[3] - dil[1] * (s - 1) - 1) / st[1] + 1;
  char xt[128], wt[128], yt[128];
  snprintf(xt, sizeof xt, "tensor<%lldx%lldx%lldx%lldx%s, strides=[%lld,1,%lld,%lld]>", (long long)n, (long long)c,
           (long long)h, (long long)w, T, (long long)(h * w * c), (long long)(w * c), (long long)c);
  snprintf(wt, sizeof wt, "tensor<%lldx%lldx%lldx%lldx%s, strides=[%lld,1,%lld,%lld]>", (long long)k, (long long)c,
           (long long)r, (long long)s, T, (long long)(r * s * c), (long long)(s * c), (long long)c);
  snprintf(yt, sizeof yt, "tensor<%lldx%lldx%lldx%lldx%s, strides=[%lld,1,%lld,%lld]>", (long long)n, (long long)k,
           (long long)ho, (long long)wo, T, (long long)(ho * wo * k), (long long)(wo * k), (long long)k);
  snprintf(buf, sizeof buf,
           "func.func @im2col_conv_relu() attributes {graph} {\n"
           "  %%x = \"graph.param\"() {name = \"x\"} : () -> %s\n"
           "  %%w = \"graph.param\"() {name = \"w\"} : () -> %s\n"
           "  %%c = \"graph.conv\"(%%x, %%w) {stride = [%lld, %lld], padding = [%lld, %lld, %lld, %lld], dilation = "
           "[%lld, %lld], groups = 1} : (%s, %s) -> %s\n"
           "  %%y = \"graph.relu\"(%%c) : (%s) -> %s\n"
           "  func.return %%y : %s\n}\n",
           xt, wt, (long long)st[0], (long long)st[1], (long long)pad[0], (long long)pad[1], (long long)pad[2],
           (long long)pad[3], (long long)dil[0], (long long)dil[1], xt, wt, yt, yt, yt, yt);
  return buf;
}
static void test_tma_im2col(void) {
  group_begin();
  static const struct {
    const char *type;
    int64_t n, c, h, w, k, r, s, st[2], pad[4], dil[2];
    const char *perf, *want; /* want: the GEMM kernel's tma */
  } cs[] = {
    /* 3x3 pad 1 stride 1, odd H / W, 2 images: 126 pixels in tiles of 64 (rows and the image cross) */
    { "f16", 2, 64, 7, 9, 64, 3, 3, { 1, 1 }, { 1, 1, 1, 1 }, { 1, 1 }, "v3:64,64,64,64,64,8", "A,B(im2col)" },
    /* stride 2, C 128 (two panels per tap), 3 images */
    { "f16", 3, 128, 9, 7, 64, 3, 3, { 2, 2 }, { 1, 1, 1, 1 }, { 1, 1 }, "v3:64,64,64,64,64,8", "A,B(im2col)" },
    /* bf16, C 256, 40 filters (M past the tile), one image */
    { "bf16", 1, 256, 5, 6, 40, 3, 3, { 1, 1 }, { 1, 1, 1, 1 }, { 1, 1 }, "v3:64,64,64,64,64,8", "A,B(im2col)" },
    /* asymmetric padding, strides (2, 1), dilation (1, 2), a 3x2 window, bf16 */
    { "bf16", 2, 64, 9, 8, 24, 3, 2, { 2, 1 }, { 1, 1, 0, 2 }, { 1, 2 }, "v3:64,64,64,64,64,8", "A,B(im2col)" },
    /* 48 channels in 32-byte panels of 16 (K tile 16), 32 filters */
    { "f16", 2, 48, 5, 5, 32, 3, 3, { 1, 1 }, { 1, 1, 1, 1 }, { 1, 1 }, "v3:64,64,16,64,64,8", "A,B(im2col)" },
    /* split K in 2 (channel slices of 64: G = 2, c = g 64 + k % 64), 3 (slices of 64, K tile 32) */
    { "f16", 2, 128, 5, 7, 64, 3, 3, { 1, 1 }, { 1, 1, 1, 1 }, { 1, 1 }, "v3:64,64,64,64,64,8,2", "A,B(im2col)" },
    { "bf16", 1, 192, 6, 5, 40, 3, 3, { 2, 1 }, { 1, 1, 1, 1 }, { 1, 1 }, "v3:64,64,32,64,64,8,3", "A,B(im2col)" },
    /* 128-pixel tiles over 4 images of 5x5 (100 pixels: a tile holds more than one image) */
    { "f16", 4, 64, 5, 5, 64, 3, 3, { 1, 1 }, { 1, 1, 1, 1 }, { 1, 1 }, "v3:64,128,64,64,128,8", "A,B(im2col)" },
  };
  const char *pl_fmt = "fp8-compute,reduce-split,split-k-workspace,graph-partition,graph-to-rock,rock-regularize,"
                       "rock-conv-to-gemm,rock-gemm-to-gridwise,rock-gridwise-to-blockwise{%s},"
                       "rock-blockwise-to-threadwise,rock-output-swizzle,rock-align-tiling,rock-plan-steps,"
                       "rock-lower-loops,canonicalize,cse,dce";
  char pl[1024];
  snprintf(pl, sizeof pl, pl_fmt, "tma=1,tma-im2col=1");
  for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
    const char *text = im2col_conv_text(cs[i].type, cs[i].n, cs[i].c, cs[i].h, cs[i].w, cs[i].k, cs[i].r, cs[i].s,
                                        cs[i].st, cs[i].pad, cs[i].dil);
    graph_case g = { "sm_90a", text, 2e-2, 1, false, pl, cs[i].want, cs[i].perf };
    int64_t before = g_checks - g_fail;
    run_graph_case(&g);
    CHECK(g_checks - g_fail > before, "im2col case %zu ran no check", i);
  }
  /* the warp-specialized loop (both operands through TMA: the producer issues the im2col boxes)
   * and persistent tiles (on 2 workgroups: the next tile's boxes from its own first pixel) */
  static const char *const more[2] = { "tma=1,tma-im2col=1,ws=1", "tma=1,tma-im2col=1,persistent=1" };
  for (int i = 0; i < 2; i++) {
    snprintf(pl, sizeof pl, pl_fmt, more[i]);
    int64_t st[2] = { 1, 1 }, pad[4] = { 1, 1, 1, 1 }, dil[2] = { 1, 1 };
    const char *text = im2col_conv_text("f16", 3, 64, 9, 9, 128, 3, 3, st, pad, dil); /* 2 x 4 tiles */
    graph_case g = { "sm_90a", text, 2e-2, 1, false, pl, "A,B(im2col)", "v3:64,64,64,64,64,8" };
    g_sim_grid = i ? 2 : 0;
    g_sim_ran = 0;
    run_graph_case(&g);
    CHECK(!g_sim_grid || g_sim_ran == 2, "%s: the persistent kernel ran on %lld workgroups, want 2", more[i],
          (long long)g_sim_ran);
    g_sim_grid = 0;
  }
  snprintf(pl, sizeof pl, pl_fmt, "tma=1,tma-im2col=1");
  /* refused classes keep the register path, interpreted: 48 channels with a K tile of 32 (not
   * whole 32-element panels); the option off */
  {
    int64_t st[2] = { 1, 1 }, pad[4] = { 1, 1, 1, 1 }, dil[2] = { 1, 1 };
    const char *text = im2col_conv_text("f16", 2, 48, 5, 5, 32, 3, 3, st, pad, dil);
    graph_case g = { "sm_90a", text, 2e-2, 1, false, pl, "A", "v3:64,64,32,64,64,8" };
    run_graph_case(&g);
    text = im2col_conv_text("f16", 2, 64, 5, 5, 64, 3, 3, st, pad, dil);
    snprintf(pl, sizeof pl, pl_fmt, "tma=1,tma-im2col=0");
    graph_case g2 = { "sm_90a", text, 2e-2, 1, false, pl, "A", "v3:64,64,64,64,64,8" };
    run_graph_case(&g2);
  }
  group_end(
      "tma im2col (sm_90a): NHWC conv activations through TMA im2col boxes (stride, padding, dilation, tiles "
      "crossing rows and images, f16 / bf16; ws=1, persistent=1) interpreted against g:eval; refused classes keep "
      "registers");
}

/* stmatrix (sm_90+, passes/lower_loops_ldmatrix.c): rock-output-swizzle's accumulator ->
 * LDS store of 16-bit outputs is lowered to rock.stmatrix x4 where the lane mapping is
 * proven; .trans where the LDS rows run along M (the NHWC conv's output is contiguous
 * along the GEMM's M). Interpreted lane by lane with the ISA's mapping (exec_stmatrix)
 * against g:eval: wgmma (sm_90a, TMA and register K loops) and mma.sync (sm_90) tiles,
 * odd M / N, batch, f16 / bf16, the 1x1 conv with residual + relu; every stmatrix phase
 * bank-conflict-free; sm_80 (no stmatrix) keeps the scalar stores. */
static const char *const dot_f16_odd =
    "func.func @dot_odd_bias_relu() attributes {graph} {\n"
    "  %a = \"graph.param\"() {name = \"a\"} : () -> tensor<70x72xf16>\n"
    "  %b = \"graph.param\"() {name = \"b\"} : () -> tensor<72x136xf16>\n"
    "  %r = \"graph.param\"() {name = \"r\"} : () -> tensor<136xf16>\n"
    "  %d = \"graph.dot\"(%a, %b) : (tensor<70x72xf16>, tensor<72x136xf16>) -> tensor<70x136xf16>\n"
    "  %e = \"graph.add\"(%d, %r) : (tensor<70x136xf16>, tensor<136xf16>) -> tensor<70x136xf16>\n"
    "  %y = \"graph.relu\"(%e) : (tensor<70x136xf16>) -> tensor<70x136xf16>\n"
    "  func.return %y : tensor<70x136xf16>\n}\n";
static const char *const dot_f16_big =
    "func.func @dot_big() attributes {graph} {\n"
    "  %a = \"graph.param\"() {name = \"a\"} : () -> tensor<256x128xf16>\n"
    "  %b = \"graph.param\"() {name = \"b\"} : () -> tensor<128x256xf16>\n"
    "  %d = \"graph.dot\"(%a, %b) : (tensor<256x128xf16>, tensor<128x256xf16>) -> tensor<256x256xf16>\n"
    "  func.return %d : tensor<256x256xf16>\n}\n";
static const char *const dot_bf16_batch =
    "func.func @dot_batch_res_clip() attributes {graph} {\n"
    "  %a = \"graph.param\"() {name = \"a\"} : () -> tensor<2x48x40xbf16>\n"
    "  %b = \"graph.param\"() {name = \"b\"} : () -> tensor<2x48x72xbf16>\n"
    "  %r = \"graph.param\"() {name = \"r\"} : () -> tensor<2x40x72xbf16>\n"
    "  %d = \"graph.dot\"(%a, %b) {transpose_a = true} : (tensor<2x48x40xbf16>, tensor<2x48x72xbf16>) -> "
    "tensor<2x40x72xbf16>\n"
    "  %e = \"graph.add\"(%d, %r) : (tensor<2x40x72xbf16>, tensor<2x40x72xbf16>) -> tensor<2x40x72xbf16>\n"
    "  %y = \"graph.clip\"(%e) {min = -1.5, max = 0.75} : (tensor<2x40x72xbf16>) -> tensor<2x40x72xbf16>\n"
    "  func.return %y : tensor<2x40x72xbf16>\n}\n";
static void test_stmatrix(void) {
  group_begin();
  static const struct {
    const char *target, *text, *what;
    int want; /* 0: no stmatrix, 1: plain, 2: .trans */
  } cases[] = {
    { "sm_90a", conv1x1_nhwc_f16, "1x1 NHWC conv + residual + relu (M-contiguous)", 2 },
    { "sm_90a", dot_f16_odd, "f16 dot 70x136x72 + bias + relu", 1 },
    { "sm_90a", dot_bf16_batch, "bf16 batched dot 2x40x72x48 (A^T) + residual + clip", 1 },
    { "sm_90a", dot_f16_big, "f16 dot 256x256x128 (the 128x256 tile of 4096^3)", 1 },
    { "sm_90", conv1x1_nhwc_f16, "mma.sync 1x1 NHWC conv + residual + relu", 1 },
    { "sm_90", dot_bf16_batch, "mma.sync bf16 batched dot + residual + clip", 1 },
    { "sm_90", dot_f16_odd, "mma.sync f16 dot 70x136x72 + bias + relu", 1 },
    { "sm_80", dot_f16_odd, "sm_80: no stmatrix", 0 },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    /* the default pipeline's passes, rock-output-swizzle with stmatrix on (the default) and off */
    int64_t store_wf[2] = { 0, 0 }, ex = 0, wf = 0, ph = 0;
    int ops[2] = { 0, 0 };
    for (int on = 1; on >= 0; on--) {
      char pl[1024];
      snprintf(pl, sizeof pl,
               "fp8-compute,reduce-split,split-k-workspace,graph-partition,graph-to-rock,rock-regularize,"
               "rock-conv-to-gemm,rock-gemm-to-gridwise,rock-gridwise-to-blockwise,rock-blockwise-to-threadwise,"
               "rock-output-swizzle{stmatrix=%s},rock-align-tiling,rock-plan-steps,rock-lower-loops,canonicalize,"
               "cse,dce",
               on ? "true" : "false");
      int64_t n0 = g_nstmatrix, w0 = g_stm_wavefronts, p0 = g_stm_phases;
      graph_case g = { cases[i].target, cases[i].text, 2e-2, 1, false, pl, NULL, NULL };
      g_lds_wavefronts[1] = 0;
      run_graph_case(&g);
      store_wf[on] = g_lds_wavefronts[1];
      if (on) {
        ex = g_nstmatrix - n0, wf = g_stm_wavefronts - w0, ph = g_stm_phases - p0;
        ops[0] = g_stm_ops[0], ops[1] = g_stm_ops[1];
      } else
        CHECK(g_stm_ops[0] + g_stm_ops[1] == 0, "%s %s: stmatrix=false still has rock.stmatrix", cases[i].target,
              cases[i].what);
    }
    printf("  stmatrix: %s %s: %d plain + %d .trans ops, %lld executions, %lld wavefronts for %lld phases; LDS "
           "stores of the (last) kernel %lld wavefronts (scalar: %lld)\n",
           cases[i].target, cases[i].what, ops[0], ops[1], (long long)ex, (long long)wf, (long long)ph,
           (long long)store_wf[1], (long long)store_wf[0]);
    int want = cases[i].want;
    CHECK(want ? ex > 0 && ops[want - 1] > 0 && ops[2 - want] == 0 : ops[0] + ops[1] == 0,
          "%s %s: %d plain / %d .trans stmatrix ops, %lld executed (want %s)", cases[i].target, cases[i].what, ops[0],
          ops[1], (long long)ex,
          want == 2  ? ".trans"
              : want ? "plain"
                     : "none");
    /* conflict-free where the swizzle's padded rows allow it (tiles of 64+ bytes along the
     * fast dim: the wgmma tiles); never more LDS store wavefronts than the scalar stores */
    CHECK(wf == ph || !strcmp(cases[i].target, "sm_90"),
          "%s %s: stmatrix bank conflicts: %lld wavefronts for %lld phases", cases[i].target, cases[i].what,
          (long long)wf, (long long)ph);
    CHECK(store_wf[1] <= store_wf[0], "%s %s: %lld LDS store wavefronts with stmatrix, %lld without", cases[i].target,
          cases[i].what, (long long)store_wf[1], (long long)store_wf[0]);
  }
  group_end(
      "stmatrix: the output swizzle's LDS store of f16 / bf16 tiles as stmatrix (x4 where the tile allows; .trans "
      "for M-contiguous outputs) on sm_90 / sm_90a, interpreted lane by lane against g:eval; conflict-free on the "
      "wgmma tiles, never more store wavefronts than scalar stores; none on sm_80");
}

static void test_graphs(void) {
  group_begin();
  static const graph_case cases[] = {
    { "sm_90", NULL, 2e-2, 1, false, NULL, NULL, NULL },
    { "gfx942", NULL, 2e-2, 1, false, NULL, NULL, NULL },
    { "gfx1100", NULL, 2e-2, 1, false, NULL, NULL, NULL },
    { "sm_80", NULL, 3e-2, 1, false, NULL, NULL, NULL },
    { "gfx90a", NULL, 3e-2, 1, false, NULL, NULL, NULL },
    { "gfx1100", NULL, 3e-2, 1, false, NULL, NULL, NULL },
    { "gfx942", NULL, 2e-3, 1, false, NULL, NULL, NULL },
    { "sm_90", NULL, 2e-3, 0, false, NULL, NULL, NULL },
    /* each integer matrix instruction at least once (gfx90a shares gfx908's, sm_80 sm_90's) */
    { "gfx908", NULL, 0, 1, true, NULL, NULL, NULL },
    { "gfx1100", NULL, 0, 1, true, NULL, NULL, NULL },
    { "sm_90", NULL, 0, 1, true, NULL, NULL, NULL },
    { "gfx942", NULL, 0, 1, true, NULL, NULL, NULL },
    { "sm_80", NULL, 0, 1, true, NULL, NULL, NULL },
  };
  const char *texts[] = { conv_nhwc_f16, conv_nhwc_f16, conv_nhwc_f16, dot_bf16,     dot_bf16, dot_bf16, dot_f32,
                          dot_f32,       conv_nhwc_i8,  conv_nhwc_i8,  conv_nhwc_i8, dot_i8,   dot_i8 };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    graph_case gc = cases[i];
    gc.text = texts[i];
    run_graph_case(&gc);
  }
  group_end(
      "graphs: conv NHWC + bias + relu (f16), batched transposed dot + residual + clip (bf16), dot + sigmoid (f32), "
      "i8 conv -> i32 + clip -> i8 and i8 dot -> i32 + bias + relu -> f32 (exact) compiled for GPU targets, every "
      "launch "
      "interpreted, against g:eval");
}

/* The random fused-graph suite of the busted specs (spec/lua/fused_gen.lua: conv / dot
 * with epilogues, element-wise, reductions, softmax) compiled for a GPU target, every
 * launch interpreted, against g:eval with the suite's tolerances. */
/* gen: the Lua expression of case number %d (a table with g, inputs, name, dtype) */
static int g_fused_wgmma; /* wgmma (v3) kernels interpreted by run_fused_suite */
static void run_fused_suite(lua_State *L, const char *T, int nseeds, const char *gen, int *ngraphs, int *naccel) {
  for (int seed = 1; seed <= nseeds; seed++) {
    char code[512], expr[128];
    snprintf(expr, sizeof expr, gen, seed);
    snprintf(code, sizeof code,
             "local c = %s; local p = kiln.compile(c.g, {target = '%s', cache = false}); "
             "return p, c.inputs, table.pack(c.g:eval(c.inputs)), c.name, c.dtype, c.dtypes",
             expr, T);
    if (luaL_dostring(L, code) != LUA_OK) {
      CHECK(0, "fused seed %d on %s: %s", seed, T, lua_tostring(L, -1));
      lua_settop(L, 0);
      continue;
    }
    kl_program *p = kl_lua__check_program(L, 1);
    const char *name = lua_tostring(L, 4), *dtype = lua_tostring(L, 5);
    int nslots = kl_program_nslots(p, T);
    double **mem = calloc(nslots + 1, sizeof *mem);
    for (int i = 0; i < nslots; i++) {
      const char *kind = NULL, *sn = NULL;
      kl_program_slot(p, T, i, &kind, &sn);
      const kl_type *st = kl_program_slot_type(p, T, i);
      const kl_tensor *src = NULL;
      if (!strcmp(kind, "param")) {
        lua_getfield(L, 2, sn);
        src = kl_lua__test_tensor(L, -1);
        lua_pop(L, 1);
      }
      if (!strcmp(kind, "constant")) src = kl_program_slot_constant(p, T, i);
      int64_t span = span_of(st);
      mem[i] = malloc(sizeof(double) * span);
      for (int64_t e = 0; e < span; e++) mem[i][e] = NAN;
      if (src)
        for (int64_t f = 0; f < kl_tensor_numel(src); f++) mem[i][offset_of(st, src, f)] = kl_tensor_get_flat(src, f);
    }
    kl_op *cm = kl_program_module(p, T);
    bool ok = true, accel = false;
    char err[4096];
    for (int si = 0; si < kl_program_nsteps(p, T) && ok; si++) {
      const kl_bundle_step *step = kl_program_step(p, T, si);
      if (step->kind != KL_BUNDLE_LAUNCH) continue; /* workspaces: the slots are all allocated here */
      const kl_kernel_info *ki = kl_program_kernel(p, T, step->kernel);
      accel |= !strncmp(ki->perf_config, "v2:", 3) || !strncmp(ki->perf_config, "v3:", 3);
      g_fused_wgmma += !strncmp(ki->perf_config, "v3:", 3);
      kl_op *kf = kl_module_lookup(cm, ki->name);
      double *args[32];
      for (int a = 0; a < step->nargs && a < 32; a++) args[a] = mem[step->args[a]];
      int64_t nm = 0;
      ok = kf && step->nargs <= 32 && sim_run(kf, kl_target_lookup(T), args, err, sizeof err, &nm);
      CHECK(ok, "%s on %s: kernel %s (%s): %s", name, T, ki->name, ki->perf_config, kf ? err : "not in the module");
    }
    *naccel += accel;
    for (int oi = 0; ok && oi < kl_program_noutputs(p, T); oi++) {
      if (lua_istable(L, 6))
        lua_rawgeti(L, 6, oi + 1); /* each output's own dtype */
      else
        lua_pushnil(L);
      const char *odt = lua_isstring(L, -1) ? lua_tostring(L, -1) : dtype;
      double tol = !strcmp(odt, "f32") ? 1e-5 : 1e-2;
      lua_pop(L, 1);
      kl_tensor *want = kl_lua__test_tensor(L, 3);
      if (!want) {
        lua_rawgeti(L, 3, oi + 1);
        want = kl_lua__test_tensor(L, -1);
        lua_pop(L, 1);
      }
      if (!want) {
        CHECK(0, "%s: no reference output %d", name, oi);
        break;
      }
      int sl = kl_program_output_slot(p, T, oi);
      const kl_type *st = kl_program_slot_type(p, T, sl);
      double scale = 0, maxe = 0;
      for (int64_t f = 0; f < kl_tensor_numel(want); f++) scale = fmax(scale, fabs(kl_tensor_get_flat(want, f)));
      int64_t bad = 0;
      for (int64_t f = 0; f < kl_tensor_numel(want); f++) {
        double w = kl_tensor_get_flat(want, f), e = fabs(mem[sl][offset_of(st, want, f)] - w);
        if (!(e <= tol * fabs(w) + tol * scale)) bad++;
        if (!(e <= maxe)) maxe = e;
      }
      CHECK(bad == 0, "%s on %s (%s kernel): %lld elements off, max error %g (scale %g)", name, T,
            accel ? "accel" : "FMA", (long long)bad, maxe, scale);
    }
    (*ngraphs)++;
    for (int i = 0; i < nslots; i++) free(mem[i]);
    free(mem);
    lua_settop(L, 0);
  }
}

static void test_fused_suite(void) {
  /* the repository root from this file's path (CMake passes absolute source paths) */
  char root[1024];
  snprintf(root, sizeof root, "%s", __FILE__);
  for (int up = 0; up < 3; up++) {
    char *sl = strrchr(root, '/');
    if (sl)
      *sl = 0;
    else
      root[0] = 0;
  }
  char gen_path[1200];
  snprintf(gen_path, sizeof gen_path, "%s/spec/lua/fused_gen.lua", root[0] ? root : ".");
  FILE *f = fopen(gen_path, "r");
  if (!f) {
    printf("fused suite: skipped (%s not found)\n", gen_path);
    return;
  }
  fclose(f);
  group_begin();
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  /* require 'kiln' (protected) finds kl_lua_open in package.preload */
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, kl_lua_open);
  lua_setfield(L, -2, "kiln");
  lua_pop(L, 2);
  char code[4096];
  snprintf(code, sizeof code,
           "package.path = '%s/lua/?.lua;%s/lua/?/init.lua;%s/spec/lua/?.lua;' .. package.path; "
           "kiln = require 'kiln'; gen = require 'fused_gen'",
           root, root, root);
  bool loaded = luaL_dostring(L, code) == LUA_OK;
  CHECK(loaded, "fused_gen: %s", lua_tostring(L, -1));
  static const struct {
    const char *target;
    int seeds;
  } runs[] = { { "sm_90", 140 }, { "sm_90a", 140 }, { "gfx942", 140 }, { "gfx1100", 70 } };
  for (size_t i = 0; loaded && i < sizeof runs / sizeof *runs; i++) {
    int ng = 0, na = 0;
    g_fused_wgmma = 0;
    run_fused_suite(L, runs[i].target, runs[i].seeds, "gen.gen(%d)", &ng, &na);
    CHECK(ng == runs[i].seeds && na > 0, "%s: %d graphs, %d with accel kernels", runs[i].target, ng, na);
    bool wgt = kl_target_lookup(runs[i].target)->wgmma; /* sm_90a: wgmma by default */
    CHECK(wgt == (g_fused_wgmma > 0), "%s: %d wgmma kernels", runs[i].target, g_fused_wgmma);
    printf("fused suite on %s: %d graphs interpreted, %d with accel kernels (%d wgmma kernels)\n", runs[i].target, ng,
           na, g_fused_wgmma);
  }
  /* the blockwise reduction / softmax cases of spec/lua/reduce_blockwise_cases.lua (lane
   * shuffles, LDS across waves, column mappings) */
  int nrb = 0;
  if (loaded && luaL_dostring(L, "rb = require 'reduce_blockwise_cases'; rbc = rb.cases(); return #rbc") == LUA_OK)
    nrb = (int)lua_tointeger(L, -1);
  lua_settop(L, 0);
  CHECK(nrb > 0, "reduce_blockwise_cases: no cases");
  static const char *const rb_targets[] = { "sm_90", "sm_90a", "gfx942", "gfx1100" };
  for (size_t i = 0; nrb > 0 && i < sizeof rb_targets / sizeof *rb_targets; i++) {
    int ng = 0, na = 0;
    run_fused_suite(L, rb_targets[i], nrb, "rbc[%d]", &ng, &na);
    CHECK(ng == nrb, "%s: %d of %d reduction cases", rb_targets[i], ng, nrb);
    printf("reduction cases on %s: %d graphs interpreted\n", rb_targets[i], ng);
  }
  lua_close(L);
  group_end("fused suite: the random fused graphs of spec/lua/fused_gen.lua compiled for sm_90 / gfx942 / gfx1100, "
            "interpreted, "
            "against g:eval");
}

/* ---------------------------------------------------------------------------------
 * code generation
 * --------------------------------------------------------------------------------- */
static int count_sub(const char *s, const char *sub) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, sub)); p += strlen(sub)) n++;
  return n;
}

/* Compiles a case to the target's binary; checks it; returns the disassembly / PTX. */
static char *compile_case(const gcase *c, const char *what) {
  char err[4096];
  kl_ctx *ctx = kl_test_ctx();
  kl_op *m = lower_case(ctx, c, NULL, err, sizeof err);
  CHECK(m != NULL, "%s: %s", what, err);
  kl_op *k = m ? kernel_of(m) : NULL;
  char *text = NULL;
  const kl_target *t = kl_target_lookup(c->target);
  if (k) {
    int64_t lds = 0, bs = 0;
    kl_op_attr_i64(k, "lds_bytes", &lds);
    kl_op_attr_i64(k, "block_size", &bs);
    LLVMContextRef lc = LLVMContextCreate();
    LLVMModuleRef lm = NULL;
    kl_status st = kl_lower_kernel_to_llvm(k, t, lc, &lm);
    if (st != KL_OK) {
      char *d = kl_diag_take(ctx);
      CHECK(0, "%s: lower-to-llvm: %s", what, d);
      free(d);
    }
    kl_binary bin = { 0 };
    if (st == KL_OK) {
      st = kl_codegen_emit(lm, c->target, NULL, &bin, err, sizeof err);
      CHECK(st == KL_OK, "%s: emit: %s", what, err);
    }
    if (st == KL_OK && bin.arch == KL_ARCH_NVPTX) {
      text = strdup(bin.data);
      CHECK(strstr(text, ".local") == NULL, "%s: PTX uses local memory", what);
    } else if (st == KL_OK && bin.arch == KL_ARCH_AMDGPU) {
      kl_hsaco_info info;
      if (kl_hsaco_parse(bin.data, bin.size, &info, err, sizeof err) == KL_OK) {
        const kl_hsaco_kernel *kk = kl_hsaco_find_kernel(&info, "gemm");
        CHECK(kk != NULL, "%s: no kernel in the code object", what);
        if (kk) {
          CHECK(kk->scratch_bytes == 0 && kk->kd_private_segment_size == 0, "%s: scratch %lld", what,
                (long long)kk->scratch_bytes);
          CHECK(kk->vgpr_spill_count <= 0 && kk->sgpr_spill_count <= 0, "%s: spills %lld/%lld", what,
                (long long)kk->vgpr_spill_count, (long long)kk->sgpr_spill_count);
          CHECK(kk->vgpr_count > 0 && kk->vgpr_count <= t->max_vgprs, "%s: %lld VGPRs (max %d)", what,
                (long long)kk->vgpr_count, t->max_vgprs);
          CHECK(kk->agpr_count <= 0 || kk->vgpr_count + kk->agpr_count <= 512, "%s: %lld AGPRs", what,
                (long long)kk->agpr_count);
          CHECK(kk->lds_bytes >= lds && kk->lds_bytes <= t->lds_bytes, "%s: LDS %lld (kernel %lld, max %lld)", what,
                (long long)kk->lds_bytes, (long long)lds, (long long)t->lds_bytes);
          CHECK(kk->max_flat_workgroup_size == bs, "%s: max workgroup %lld, block %lld", what,
                (long long)kk->max_flat_workgroup_size, (long long)bs);
          CHECK(kk->wavefront_size == t->wave_size, "%s: wave %lld", what, (long long)kk->wavefront_size);
        }
        text = kl_disasm_hsaco(bin.data, bin.size, NULL, err, sizeof err);
        CHECK(text != NULL, "%s: disasm: %s", what, err);
      } else {
        CHECK(0, "%s: hsaco: %s", what, err);
      }
      kl_hsaco_info_free(&info);
    }
    kl_binary_free(&bin);
    if (lm) LLVMDisposeModule(lm);
    LLVMContextDispose(lc);
  }
  kl_ctx_destroy(ctx);
  return text;
}

static void test_codegen(void) {
  group_begin();
  static const struct {
    gcase c;
    const char *want, *not ;
  } cases[] = {
    { { "sm_80", "f16", 1, 128, 128, 128, false, false, true, NULL, "f16" },
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
      NULL },
    { { "sm_90", "f16", 1, 1024, 1024, 1024, false, true, false, NULL, "f32" },
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
      NULL },
    { { "sm_90", "bf16", 1, 100, 77, 300, true, false, true, NULL, "bf16" },
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
      NULL },
    { { "sm_80", "bf16", 4, 64, 64, 64, false, false, false, "v2:64,64,32,32,32,8", "f32" },
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
      NULL },
    { { "sm_90", "i8", 1, 64, 64, 128, false, false, false, NULL, "i32" },
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
      NULL },
    { { "gfx90a", "f16", 1, 256, 256, 256, false, false, true, NULL, "f16" }, "v_mfma_f32_32x32x8", "v_wmma" },
    { { "gfx90a", "bf16", 1, 129, 65, 33, true, false, false, NULL, "f32" }, "v_mfma_f32_32x32x8bf16_1k", "v_wmma" },
    { { "gfx942", "f16", 1, 1024, 1024, 1024, false, false, false, NULL, "f32" }, "v_mfma_f32_32x32x8", "v_wmma" },
    { { "gfx942", "bf16", 2, 70, 50, 40, false, true, true, "v2:64,64,16,32,32,4", "bf16" },
      "v_mfma_f32_32x32x8",
      "v_wmma" },
    { { "gfx942", "i8", 1, 128, 128, 128, false, false, false, NULL, "i32" }, "v_mfma_i32_32x32x16", "v_wmma" },
    { { "gfx942", "f32", 1, 64, 64, 64, false, false, false, NULL, "f32" }, "v_mfma_f32_32x32x2", "v_wmma" },
    { { "gfx1100", "f16", 1, 256, 256, 256, false, false, true, NULL, "f16" }, "v_wmma_f32_16x16x16_f16", "v_mfma" },
    { { "gfx1100", "bf16", 1, 33, 65, 17, true, true, false, NULL, "f32" }, "v_wmma_f32_16x16x16_bf16", "v_mfma" },
    { { "gfx1100", "i8", 1, 64, 64, 64, false, false, false, NULL, "i32" }, "v_wmma_i32_16x16x16_iu8", "v_mfma" },
    /* FMA path: no matrix instructions */
    { { "gfx942", "f16", 1, 64, 64, 64, false, false, false, "v1:64,64,16,4,4,4", "f32" }, "s_endpgm", "v_mfma" },
    { { "gfx1030", "f16", 1, 64, 64, 64, false, false, false, NULL, "f32" }, "s_endpgm", "v_wmma" },
    { { "sm_90", "f32", 1, 64, 64, 64, false, false, false, NULL, "f32" }, ".entry gemm", "mma.sync" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const gcase *c = &cases[i].c;
    char what[200];
    snprintf(what, sizeof what, "%s %s %lldx%lldx%lldx%lld %s", c->target, c->type, (long long)c->G, (long long)c->M,
             (long long)c->N, (long long)c->K, c->perf ? c->perf : "heuristic");
    char *text = compile_case(c, what);
    if (!text) continue;
    CHECK(strstr(text, cases[i].want) != NULL, "%s: no %s in the code", what, cases[i].want);
    if (cases[i].not ) CHECK(strstr(text, cases[i].not ) == NULL, "%s: unexpected %s", what, cases[i].not );
    if (!strncmp(c->target, "gfx", 3)) CHECK(count_sub(text, "; invalid") == 0, "%s: undecodable bytes", what);
    free(text);
  }
  group_end("codegen: mma.sync in PTX (sm_80, sm_90), v_mfma (gfx90a, gfx942), v_wmma (gfx1100); scratch 0, limits; "
            "FMA fallback");
}

/* ---------------------------------------------------------------------------------
 * errors
 * --------------------------------------------------------------------------------- */
static void test_errors(void) {
  group_begin();
  static const struct {
    gcase c;
    const char *want;
  } cases[] = {
    { { "host", "f16", 1, 16, 16, 16, false, false, false, "v2:32,32,16,16,16,2", "f32" },
      "needs a matrix instruction for f16" },
    { { "gfx1030", "f16", 1, 16, 16, 16, false, false, false, "v2:32,32,16,16,16,2", "f32" },
      "target gfx1030 has none" },
    { { "sm_90", "f32", 1, 16, 16, 16, false, false, false, "v2:32,32,16,16,16,2", "f32" },
      "needs a matrix instruction for f32" },
    { { "gfx942", "f16", 1, 16, 16, 16, false, false, false, "v2:64,64,16,32,48,4", "f32" }, "nPerWave (48)" },
    { { "gfx1100", "f16", 1, 16, 16, 16, false, false, false, "v2:32,32,16,16,16,7", "f32" },
      "kPerBlock (16) is not a multiple of kpack (7)" },
    { { "sm_80", "f16", 1, 16, 16, 16, false, false, false, "v2:32,32,16,16,16", "f32" }, "missing kpack" },
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char err[4096] = "";
    kl_ctx *ctx = kl_test_ctx();
    kl_op *m = lower_case(ctx, &cases[i].c, "rock-gemm-to-gridwise", err, sizeof err);
    CHECK(m == NULL && strstr(err, cases[i].want), "%s %s: want '%s', got: %s", cases[i].c.target, cases[i].c.perf,
          cases[i].want, err);
    kl_ctx_destroy(ctx);
  }
  /* rock.mma for the wrong target is an error of lower-to-llvm, not an LLVM crash */
  {
    gcase c = { "gfx942", "f16", 1, 32, 32, 16, false, false, false, "v2:32,32,16,32,32,4", "f32" };
    char err[4096];
    kl_ctx *ctx = kl_test_ctx();
    kl_op *m = lower_case(ctx, &c, NULL, err, sizeof err);
    kl_op *k = m ? kernel_of(m) : NULL;
    CHECK(k != NULL, "%s", err);
    if (k) {
      LLVMContextRef lc = LLVMContextCreate();
      LLVMModuleRef lm = NULL;
      CHECK(kl_lower_kernel_to_llvm(k, kl_target_lookup("sm_90"), lc, &lm) == KL_ERR, "mfma lowered for sm_90");
      char *d = kl_diag_take(ctx);
      CHECK(d && strstr(d, "rock.mma") && strstr(d, "not available on target sm_90"), "diag: %s", d ? d : "");
      free(d);
      if (lm) LLVMDisposeModule(lm);
      LLVMContextDispose(lc);
    }
    kl_ctx_destroy(ctx);
  }
  group_end("errors: v2 without a matrix instruction, bad v2 fields, rock.mma on the wrong target");
}

/* ---------------------------------------------------------------------------------
 * GPU (CUDA) run, when a device is present
 * --------------------------------------------------------------------------------- */
static void test_gpu(void) {
  char err[4096];
  kl_device *dev = kl_device_open("cuda", err, sizeof err);
  if (!dev) {
    char *nl = strchr(err, '\n');
    if (nl) *nl = 0;
    printf("gpu: skipped (no CUDA device: %s)\n", err);
    return;
  }
  group_begin();
  const kl_device_info *info = kl_device_get_info(dev);
  static const struct {
    const char *type;
    int64_t M, N, K;
  } cases[] = {
    { "f16", 127, 65, 200 },
    { "bf16", 64, 96, 64 },
    { "f16", 1024, 512, 256 },
    { "f16", 7, 3, 5 },
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
    const char *T = cases[ci].type;
    long long M = cases[ci].M, N = cases[ci].N, K = cases[ci].K;
    char text[2048];
    snprintf(text, sizeof text,
             "func.func @mm() attributes {graph} {\n"
             "  %%a = \"graph.param\"() {name = \"a\"} : () -> tensor<%lldx%lldx%s>\n"
             "  %%b = \"graph.param\"() {name = \"b\"} : () -> tensor<%lldx%lldx%s>\n"
             "  %%bias = \"graph.param\"() {name = \"bias\"} : () -> tensor<%lldx%s>\n"
             "  %%d = \"graph.dot\"(%%a, %%b) : (tensor<%lldx%lldx%s>, tensor<%lldx%lldx%s>) -> tensor<%lldx%lldx%s>\n"
             "  %%e = \"graph.add\"(%%d, %%bias) : (tensor<%lldx%lldx%s>, tensor<%lldx%s>) -> tensor<%lldx%lldx%s>\n"
             "  %%r = \"graph.relu\"(%%e) : (tensor<%lldx%lldx%s>) -> tensor<%lldx%lldx%s>\n"
             "  func.return %%r : tensor<%lldx%lldx%s>\n}\n",
             M, K, T, K, N, T, N, T, M, K, T, K, N, T, M, N, T, M, N, T, N, T, M, N, T, M, N, T, M, N, T, M, N, T);
    kl_ctx *ctx = kl_test_ctx();
    kl_op *mod = kl_parse_module(ctx, text, strlen(text), "gpu.kir");
    kl_op *g = mod ? kl_module_lookup(mod, "mm") : NULL;
    CHECK(g != NULL, "parse: %s", mod ? "no @mm" : kl_diag_take(ctx));
    if (!g) {
      kl_ctx_destroy(ctx);
      continue;
    }
    const char *targets[1] = { info->arch };
    kl_compile_opts o = { .targets = targets, .ntargets = 1, .no_cache = true };
    kl_program *p = kl_compile(g, &o, err, sizeof err);
    CHECK(p != NULL, "compile for %s: %s", info->arch, err);
    if (p) {
      const kl_kernel_info *ki = kl_program_kernel(p, info->arch, 0);
      CHECK(ki && !strncmp(ki->perf_config, "v2:", 3), "%s %s: kernel perf config %s (accel expected)", info->arch, T,
            ki ? ki->perf_config : "none");
      kl_dtype dt = kl_dtype_from_name(T);
      int64_t sa[2] = { M, K }, sb[2] = { K, N }, sc[1] = { N };
      kl_tensor *ta = kl_tensor_rand(dt, 2, sa, NULL, 11 + ci, KL_DIST_NORMAL, err, sizeof err);
      kl_tensor *tb = kl_tensor_rand(dt, 2, sb, NULL, 23 + ci, KL_DIST_NORMAL, err, sizeof err);
      kl_tensor *tc = kl_tensor_rand(dt, 1, sc, NULL, 37 + ci, KL_DIST_NORMAL, err, sizeof err);
      kl_named_tensor in[3] = { { "a", ta }, { "b", tb }, { "bias", tc } };
      int nout = 0, nref = 0;
      kl_tensor **out = NULL, **ref = NULL;
      kl_status st = kl_program_run(p, dev, 3, in, &nout, &out, err, sizeof err);
      CHECK(st == KL_OK && nout == 1, "run on %s: %s", info->name, err);
      CHECK(kl_graph_eval(g, 3, in, &nref, &ref, err, sizeof err) == KL_OK && nref == 1, "eval: %s", err);
      if (st == KL_OK && nout == 1 && nref == 1) {
        double maxerr = 0, maxref = 0;
        for (int64_t i = 0; i < M * N; i++) {
          double x = kl_tensor_get_flat(out[0], i), y = kl_tensor_get_flat(ref[0], i);
          double e = fabs(x - y);
          if (!(e <= maxerr)) maxerr = isnan(e) ? INFINITY : e;
          if (fabs(y) > maxref) maxref = fabs(y);
        }
        double tol = (!strcmp(T, "bf16") ? 2e-2 : 1e-2) * (maxref > 1 ? maxref : 1);
        CHECK(maxerr <= tol, "%s %s %lldx%lldx%lld on %s: max error %g (max |ref| %g, tolerance %g)", info->arch, T, M,
              N, K, info->name, maxerr, maxref, tol);
        printf("gpu: %s %s %lldx%lldx%lld (%s): max error %g, max |ref| %g\n", info->arch, T, M, N, K,
               ki ? ki->perf_config : "?", maxerr, maxref);
      }
      for (int i = 0; i < nout; i++) kl_tensor_release(out[i]);
      for (int i = 0; i < nref; i++) kl_tensor_release(ref[i]);
      free(out);
      free(ref);
      kl_tensor_release(ta);
      kl_tensor_release(tb);
      kl_tensor_release(tc);
      kl_program_release(p);
    }
    kl_ctx_destroy(ctx);
  }
  kl_device_destroy(dev);
  group_end("gpu: dot + bias + relu on the CUDA device (tensor cores) against g:eval");
}

/* The benchmark suite's reductions, softmax and element-wise adds (spec/lua/amd_cases.lua:
 * softmax and row sum of 8192x8192 f16 and 64x262144 f32 (split into partial and final
 * kernels), add of 16384x16384 f32 and f16) through the default pipeline's graph and loop
 * passes for gfx90a, gfx942, gfx1100 and gfx1030, interpreted on workgroups 0, 1 and the
 * last: every global load and store of every wave is one contiguous byte range, lane by
 * lane in order (coalesced; lane_runs), or one address for the whole wave. The old one-thread-per-row reduction (lane t reads row t)
 * is refused. */
static const char *lanes_pipeline = "reduce-split,split-k-workspace,graph-partition,graph-to-rock,rock-regularize,"
                                    "rock-plan-steps,rock-lower-loops,canonicalize,cse,dce";
static void lanes_reset(void) {
  g_lane_n[0] = g_lane_n[1] = g_lane_bad[0] = g_lane_bad[1] = g_lane_uniform[0] = g_lane_uniform[1] = 0;
  g_lane_first[0] = 0;
}
/* Runs every kernel of module m (target t) with zero-filled arguments; false on an
 * interpreter error (err). */
static bool lanes_run(kl_op *m, const kl_target *t, int *nk, char *err, size_t n) {
  *nk = 0;
  for (kl_op *k = kl_module_body(m)->first; k; k = k->next) {
    if (!kl_is_kernel(k)) continue;
    kl_block *e = k->regions[0].first;
    double *args[16] = { 0 };
    bool ok = e->nargs <= 16;
    for (int i = 0; ok && i < e->nargs; i++) {
      const kl_type *bt = e->args[i]->type;
      int64_t span = 1;
      for (int d = 0; d < bt->rank; d++) span += (bt->shape[d] - 1) * bt->strides[d];
      args[i] = calloc((size_t)span, sizeof(double)); /* pages only touched where read */
      ok = args[i] != NULL;
    }
    int64_t nmma = 0;
    if (ok) ok = sim_run(k, t, args, err, n, &nmma);
    for (int i = 0; i < 16; i++) free(args[i]);
    if (!ok) return false;
    ++*nk;
  }
  return true;
}
static void test_amd_lanes(void) {
  group_begin();
  static const struct {
    const char *name, *body;
  } cases[] = {
    { "softmax 8192x8192 f16",
      "  %x = \"graph.param\"() {name = \"x\"} : () -> tensor<8192x8192xf16>\n"
      "  %y = \"graph.softmax\"(%x) {axis = 1} : (tensor<8192x8192xf16>) -> tensor<8192x8192xf16>\n"
      "  func.return %y : tensor<8192x8192xf16>\n" },
    { "softmax 64x262144 f32",
      "  %x = \"graph.param\"() {name = \"x\"} : () -> tensor<64x262144xf32>\n"
      "  %y = \"graph.softmax\"(%x) {axis = 1} : (tensor<64x262144xf32>) -> tensor<64x262144xf32>\n"
      "  func.return %y : tensor<64x262144xf32>\n" },
    { "row sum 8192x8192 f16",
      "  %x = \"graph.param\"() {name = \"x\"} : () -> tensor<8192x8192xf16>\n"
      "  %y = \"graph.reduce_sum\"(%x) {axes = [1], keepdims = false} : (tensor<8192x8192xf16>) -> tensor<8192xf16>\n"
      "  func.return %y : tensor<8192xf16>\n" },
    { "row sum 64x262144 f32",
      "  %x = \"graph.param\"() {name = \"x\"} : () -> tensor<64x262144xf32>\n"
      "  %y = \"graph.reduce_sum\"(%x) {axes = [1], keepdims = false} : (tensor<64x262144xf32>) -> tensor<64xf32>\n"
      "  func.return %y : tensor<64xf32>\n" },
    { "add 16384x16384 f32",
      "  %x = \"graph.param\"() {name = \"x\"} : () -> tensor<16384x16384xf32>\n"
      "  %y = \"graph.param\"() {name = \"y\"} : () -> tensor<16384x16384xf32>\n"
      "  %z = \"graph.add\"(%x, %y) : (tensor<16384x16384xf32>, tensor<16384x16384xf32>) -> tensor<16384x16384xf32>\n"
      "  func.return %z : tensor<16384x16384xf32>\n" },
    { "add 16384x16384 f16",
      "  %x = \"graph.param\"() {name = \"x\"} : () -> tensor<16384x16384xf16>\n"
      "  %y = \"graph.param\"() {name = \"y\"} : () -> tensor<16384x16384xf16>\n"
      "  %z = \"graph.add\"(%x, %y) : (tensor<16384x16384xf16>, tensor<16384x16384xf16>) -> tensor<16384x16384xf16>\n"
      "  func.return %z : tensor<16384x16384xf16>\n" },
  };
  static const char *targets[] = { "gfx90a", "gfx942", "gfx1100", "gfx1030" };
  char err[4096];
  static char text[4096];
  g_sim_blocks = g_lane_check = true;
  for (size_t ti = 0; ti < sizeof targets / sizeof *targets; ti++)
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
      snprintf(text, sizeof text,
               "\"builtin.module\"() ({\nfunc.func @g() attributes {graph} {\n%s}\n}) {target = \"%s\"} : () -> ()\n",
               cases[ci].body, targets[ti]);
      kl_ctx *ctx = kl_test_ctx();
      kl_op *m = kl_parse_module(ctx, text, strlen(text), "lanes.kir");
      kl_pass_manager *pm = kl_pass_manager_create(ctx);
      kl_status st = m ? kl_pass_manager_add_pipeline(pm, lanes_pipeline) : KL_ERR;
      if (st == KL_OK) st = kl_pass_manager_run(pm, m);
      kl_pass_manager_destroy(pm);
      if (st != KL_OK) {
        char *d = kl_diag_take(ctx);
        CHECK(false, "%s %s: %s", targets[ti], cases[ci].name, d ? d : "parse");
        free(d);
        kl_ctx_destroy(ctx);
        continue;
      }
      lanes_reset();
      int nk = 0;
      bool ok = lanes_run(m, kl_target_lookup(targets[ti]), &nk, err, sizeof err);
      CHECK(ok, "%s %s: interpreter: %s", targets[ti], cases[ci].name, err);
      CHECK(nk > 0 && g_lane_n[0] > 0, "%s %s: %d kernels, %lld wave loads", targets[ti], cases[ci].name, nk,
            (long long)g_lane_n[0]);
      CHECK(g_lane_bad[0] == 0, "%s %s: %lld of %lld wave loads not one contiguous run in lane order (first: %s)",
            targets[ti], cases[ci].name, (long long)g_lane_bad[0], (long long)g_lane_n[0], g_lane_first);
      CHECK(g_lane_bad[1] == 0, "%s %s: %lld of %lld wave stores not one contiguous run in lane order (first: %s)",
            targets[ti], cases[ci].name, (long long)g_lane_bad[1], (long long)g_lane_n[1], g_lane_first);
      printf("  lanes: %s %s: %d kernels, %lld wave loads (%lld broadcasts, %lld not contiguous), %lld wave stores "
             "(%lld not contiguous)\n",
             targets[ti], cases[ci].name, nk, (long long)g_lane_n[0], (long long)g_lane_uniform[0],
             (long long)g_lane_bad[0], (long long)g_lane_n[1], (long long)g_lane_bad[1]);
      kl_ctx_destroy(ctx);
    }
  /* the old reduction: one thread per row, lane t reads 16 bytes of row t */
  static const char *old_rows =
      "\"builtin.module\"() ({\n"
      "func.func @old(%x: buffer<64x8192xf16>, %y: buffer<64xf32>) attributes {kernel, block_size = 64, grid_size = "
      "1} {\n"
      "  %t = \"rock.workitem_id\"() : () -> index\n"
      "  %c0 = arith.constant 0 : index\n"
      "  %v = \"rock.load\"(%x, %t, %c0) : (buffer<64x8192xf16>, index, index) -> vector<8xf16>\n"
      "  func.return\n}\n}) {target = \"gfx942\"} : () -> ()\n";
  kl_ctx *ctx = kl_test_ctx();
  kl_op *m = kl_parse_module(ctx, old_rows, strlen(old_rows), "old_rows.kir");
  CHECK(m != NULL, "old_rows.kir parses");
  lanes_reset();
  int nk = 0;
  bool ok = m && lanes_run(m, kl_target_lookup("gfx942"), &nk, err, sizeof err);
  CHECK(ok, "old rows: interpreter: %s", err);
  CHECK(g_lane_n[0] == 1 && g_lane_bad[0] == 1, "old rows: %lld of %lld wave loads refused (%s)",
        (long long)g_lane_bad[0], (long long)g_lane_n[0], g_lane_first);
  kl_ctx_destroy(ctx);
  g_sim_blocks = g_lane_check = false;
  group_end("lanes: the suite's reductions, softmax and element-wise kernels on gfx90a / gfx942 / gfx1100 / "
            "gfx1030: every wave's global loads and stores one contiguous run in lane order (or one broadcast "
            "address); one thread per row refused");
}

int main(void) {
  if (getenv("KILN_TEST_ONLY_AMD_XOR")) {
    test_amd_xor();
    return g_fail ? 1 : 0;
  }
  if (getenv("KILN_TEST_ONLY_WGMMA")) { /* iterating on the wgmma group alone */
    test_wgmma();
    return g_fail ? 1 : 0;
  }
  if (getenv("KILN_TEST_ONLY_AMD_BANKS")) { /* iterating on the AMD LDS layouts alone */
    test_amd_xor();
    test_banks_amd();
    test_banks_amd_all();
    test_banks_amd_other();
    return g_fail ? 1 : 0;
  }
  if (getenv("KILN_TEST_ONLY_WS")) { /* iterating on the warp-specialized group alone */
    test_ws();
    printf("test_accel: %d checks passed\n", g_checks - g_fail);
    return g_fail ? 1 : 0;
  }
  if (getenv("KILN_TEST_ONLY_PERSIST")) { /* iterating on the persistent group alone */
    test_persist();
    test_tma_graphs();
    printf("test_accel: %d checks passed\n", g_checks - g_fail);
    return g_fail ? 1 : 0;
  }
  if (getenv("KILN_TEST_ONLY_CLUSTER")) { /* iterating on the cluster group alone */
    test_cluster();
    printf("test_accel: %d checks passed\n", g_checks - g_fail);
    return g_fail ? 1 : 0;
  }
  if (getenv("KILN_TEST_ONLY_TMA_IM2COL")) { /* iterating on the im2col TMA group alone */
    test_tma_im2col();
    printf("test_accel: %d checks passed\n", g_checks - g_fail);
    return g_fail ? 1 : 0;
  }
  if (getenv("KILN_TEST_ONLY_TMA_SPLIT")) { /* iterating on the split-K TMA group alone */
    test_tma_split();
    printf("test_accel: %d checks passed\n", g_checks - g_fail);
    return g_fail ? 1 : 0;
  }
  if (getenv("KILN_TEST_ONLY_TMA")) { /* iterating on the TMA group alone */
    test_tma();
    test_tma_split();
    test_tma_im2col();
    test_ws();
    test_tma_graphs();
    printf("test_accel: %d checks passed\n", g_checks - g_fail);
    return g_fail ? 1 : 0;
  }
  if (getenv("KILN_TEST_ONLY_AMD_OTHER")) {
    test_banks_amd_other();
    return g_fail ? 1 : 0;
  }
  if (getenv("KILN_TEST_ONLY_AMD_LANES")) { /* iterating on the coalescing check alone */
    test_amd_lanes();
    return g_fail ? 1 : 0;
  }
  if (getenv("KILN_TEST_ONLY_STMATRIX")) { /* iterating on the stmatrix group alone */
    test_stmatrix();
    printf("test_accel: %d checks passed\n", g_checks - g_fail);
    return g_fail ? 1 : 0;
  }
  if (getenv("KILN_TEST_ONLY_CP_ASYNC")) { /* iterating on the cp.async group alone */
    test_cp_async();
    return g_fail ? 1 : 0;
  }
  test_layouts();
  test_configs();
  test_numerics();
  test_banks();
  test_amd_xor();
  test_amd_lanes();
  test_ldmatrix();
  test_cp_async();
  test_wgmma();
  test_tma();
  test_ws();
  test_persist();
  test_cluster();
  test_tma_graphs();
  test_tma_split();
  test_tma_im2col();
  test_swizzle();
  test_stmatrix();
  test_graphs();
  test_fused_suite();
  test_codegen();
  test_errors();
  test_gpu();
  printf("test_accel: %d checks passed%s\n", g_checks - g_fail, g_fail ? "" : "");
  if (g_fail) printf("test_accel: %d checks FAILED\n", g_fail);
  return g_fail ? 1 : 0;
}
