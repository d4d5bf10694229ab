/* test_codegen_amdgpu.c — AMDGPU code objects without a GPU: kernels built with the LLVM
 * C API (vector add, LDS + barrier, MFMA on gfx90a/gfx942, WMMA on gfx1100, an FMA
 * kernel on gfx1030/gfx908) are compiled to HSACOs by codegen_target (in-process lld),
 * then read back: ELF DYN + EM_AMDGPU, kernel symbol + .kd descriptor, metadata
 * (VGPRs, LDS, scratch 0, kernarg size, wave size) and the disassembly (v_mfma / v_wmma).
 * Also: bad targets, invalid modules, corrupted / truncated code objects give errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen_target.h"
#include "codegen/disasm.h"
#include "codegen/hsaco.h"

#include "check.h"
#include "llvm_kernels.h"

/* ---- kernel builders (llvm_kernels.h) ---- */

/* c[i] = a[i] + b[i] for i = wg*256 + tid < n */
static void build_vadd_in(lk *k, bool preset_layout, const char *target) {
  lk_begin(k, NULL, "vadd_mod");
  if (preset_layout) {
    char triple[64], *dl = NULL, err[256];
    if (kl_codegen_target_layout(target, triple, &dl, err, sizeof err) != KL_OK) {
      fprintf(stderr, "layout: %s\n", err);
      exit(2);
    }
    LLVMSetTarget(k->mod, triple);
    LLVMSetDataLayout(k->mod, dl);
    free(dl);
  }
  lk_gpu_vadd(k, LK_AMDGPU, "vadd", 256);
}

/* out[wg*256 + t] = in[wg*256 + 255 - t] through a 1 KiB LDS array and a barrier. */
static void build_lds_reverse(lk *k) {
  lk_begin(k, NULL, "lds_mod");
  LLVMTypeRef ps[] = { k->gptr, k->gptr };
  lk_kernel(k, LK_AMDGPU, "lds_reverse", ps, 2, "256,256");
  LLVMTypeRef arr = LLVMArrayType2(k->f32, 256);
  LLVMValueRef lds = LLVMAddGlobalInAddressSpace(k->mod, arr, "tile", 3);
  LLVMSetInitializer(lds, LLVMGetUndef(arr));
  LLVMSetLinkage(lds, LLVMInternalLinkage);
  LLVMSetAlignment(lds, 16);
  LLVMValueRef tid = lk_tid(k, true);
  LLVMValueRef wg = lk_ctaid(k, true);
  LLVMValueRef base = LLVMBuildMul(k->b, wg, LLVMConstInt(k->i32, 256, 0), "");
  LLVMValueRef gi = LLVMBuildSExt(k->b, LLVMBuildAdd(k->b, base, tid, ""), k->i64, "");
  LLVMValueRef v = LLVMBuildLoad2(k->b, k->f32, LLVMBuildInBoundsGEP2(k->b, k->f32, LLVMGetParam(k->fn, 0), &gi, 1, ""),
                                  "");
  LLVMValueRef zero = LLVMConstInt(k->i32, 0, 0);
  LLVMValueRef idx[2] = { zero, tid };
  LLVMBuildStore(k->b, v, LLVMBuildInBoundsGEP2(k->b, arr, lds, idx, 2, ""));
  lk_barrier(k, true);
  idx[1] = LLVMBuildSub(k->b, LLVMConstInt(k->i32, 255, 0), tid, "");
  LLVMValueRef r = LLVMBuildLoad2(k->b, k->f32, LLVMBuildInBoundsGEP2(k->b, arr, lds, idx, 2, ""), "");
  LLVMBuildStore(k->b, r, LLVMBuildInBoundsGEP2(k->b, k->f32, LLVMGetParam(k->fn, 1), &gi, 1, ""));
  LLVMBuildRetVoid(k->b);
}

/* One matrix instruction per lane: C[tid] = op(A[tid], B[tid], 0) with vector operands
 * of the intrinsic's types. */
static void build_matrix(lk *k, const char *fname, const char *intr, unsigned a_len, unsigned c_len, bool mfma,
                         const char *wgsize) {
  lk_begin(k, NULL, "mm_mod");
  LLVMTypeRef av = LLVMVectorType(LLVMHalfTypeInContext(k->ctx), a_len), cv = LLVMVectorType(k->f32, c_len);
  LLVMTypeRef ps[] = { k->gptr, k->gptr, k->gptr };
  lk_kernel(k, LK_AMDGPU, fname, ps, 3, wgsize);
  LLVMValueRef tid = LLVMBuildZExt(k->b, lk_tid(k, true), k->i64, "");
  LLVMValueRef a = LLVMBuildLoad2(k->b, av, LLVMBuildInBoundsGEP2(k->b, av, LLVMGetParam(k->fn, 0), &tid, 1, ""), "");
  LLVMValueRef bb = LLVMBuildLoad2(k->b, av, LLVMBuildInBoundsGEP2(k->b, av, LLVMGetParam(k->fn, 1), &tid, 1, ""), "");
  LLVMValueRef cptr = LLVMBuildInBoundsGEP2(k->b, cv, LLVMGetParam(k->fn, 2), &tid, 1, "");
  LLVMValueRef c = LLVMBuildLoad2(k->b, cv, cptr, "");
  LLVMTypeRef over[2] = { cv, av };
  LLVMTypeRef fty;
  LLVMValueRef f = lk_intrinsic(k, intr, over, 2, &fty);
  LLVMValueRef r;
  if (mfma) {
    LLVMValueRef zero = LLVMConstInt(k->i32, 0, 0);
    LLVMValueRef args[6] = { a, bb, c, zero, zero, zero };
    r = LLVMBuildCall2(k->b, fty, f, args, 6, "");
  } else {
    LLVMValueRef args[3] = { a, bb, c };
    r = LLVMBuildCall2(k->b, fty, f, args, 3, "");
  }
  LLVMBuildStore(k->b, r, cptr);
  LLVMBuildRetVoid(k->b);
}

/* ---- checks ---- */

static unsigned char *emit_hsaco(LLVMModuleRef m, const char *target, size_t *n) {
  kl_binary bin;
  char err[2048];
  if (kl_codegen_emit(m, target, NULL, &bin, err, sizeof err) != KL_OK) {
    CHECK(0, "emit %s: %s", target, err);
    return NULL;
  }
  CHECK(bin.arch == KL_ARCH_AMDGPU, "arch %d", bin.arch);
  *n = bin.size;
  return bin.data;
}

/* Common code object checks; returns the parsed info (caller frees) through out. */
static bool check_code_object(const unsigned char *h, size_t n, const char *chip, const char *kname,
                              kl_hsaco_info *info) {
  char err[512];
  if (kl_hsaco_parse(h, n, info, err, sizeof err) != KL_OK) {
    CHECK(0, "parse %s: %s", chip, err);
    return false;
  }
  CHECK(info->elf_type == 3, "ELF type %u (want ET_DYN)", info->elf_type);
  CHECK(info->machine == 224, "machine %u", info->machine);
  CHECK(strcmp(info->chip, chip) == 0, "e_flags chip %s, want %s", info->chip, chip);
  CHECK(info->target && strstr(info->target, chip), "amdhsa.target %s", info->target ? info->target : "(null)");
  CHECK(info->version_major == 1, "amdhsa.version %d.%d", info->version_major, info->version_minor);
  CHECK(info->nkernels == 1, "%d kernels", info->nkernels);
  const kl_hsaco_kernel *k = kl_hsaco_find_kernel(info, kname);
  CHECK(k != NULL, "kernel %s not in metadata", kname);
  if (!k) return false;
  char kd[160];
  snprintf(kd, sizeof kd, "%s.kd", kname);
  CHECK(k->symbol && strcmp(k->symbol, kd) == 0, "symbol %s", k->symbol ? k->symbol : "(null)");
  CHECK(k->has_function_symbol, "no function symbol %s", kname);
  CHECK(k->has_kd_symbol, "no descriptor symbol %s", kd);
  CHECK(k->vgpr_count > 0 && k->vgpr_count <= 512, "vgpr_count %lld", (long long)k->vgpr_count);
  CHECK(k->sgpr_count > 0 && k->sgpr_count <= 112, "sgpr_count %lld", (long long)k->sgpr_count);
  CHECK(k->scratch_bytes == 0, "scratch %lld", (long long)k->scratch_bytes);
  CHECK(k->vgpr_spill_count == 0 && k->sgpr_spill_count == 0, "spills %lld/%lld", (long long)k->vgpr_spill_count,
        (long long)k->sgpr_spill_count);
  CHECK(k->kd_group_segment_size == k->lds_bytes, "KD LDS %lld vs metadata %lld", (long long)k->kd_group_segment_size,
        (long long)k->lds_bytes);
  CHECK(k->kd_private_segment_size == 0, "KD scratch %lld", (long long)k->kd_private_segment_size);
  CHECK(k->kd_kernarg_size == k->kernarg_size, "KD kernarg %lld vs metadata %lld", (long long)k->kd_kernarg_size,
        (long long)k->kernarg_size);
  CHECK(info->text_size > 0, "no .text");
  return true;
}

static int count_substr(const char *s, const char *sub) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, sub)) != NULL; p += strlen(sub)) n++;
  return n;
}

static void test_vadd(void) {
  group_begin();
  static const char *chips[] = { "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100" };
  for (size_t c = 0; c < sizeof chips / sizeof chips[0]; c++) {
    lk k;
    build_vadd_in(&k, c % 2 == 1, chips[c]); /* alternate: preset vs. empty triple/layout */
    size_t n = 0;
    unsigned char *h = emit_hsaco(k.mod, chips[c], &n);
    /* The input module is not modified by emission. */
    CHECK(c % 2 == 1 || LLVMGetTarget(k.mod)[0] == '\0', "module triple was modified: %s", LLVMGetTarget(k.mod));
    lk_end(&k);
    if (!h) continue;
    kl_hsaco_info info;
    if (check_code_object(h, n, chips[c], "vadd", &info)) {
      const kl_hsaco_kernel *kk = kl_hsaco_find_kernel(&info, "vadd");
      CHECK(kk->lds_bytes == 0, "vadd LDS %lld", (long long)kk->lds_bytes);
      CHECK(kk->kernarg_size >= 28, "vadd kernarg %lld", (long long)kk->kernarg_size);
      CHECK(kk->nargs == 4, "vadd args %d", kk->nargs);
      CHECK(kk->max_flat_workgroup_size == 256, "max wg %lld", (long long)kk->max_flat_workgroup_size);
      int wave = strncmp(chips[c], "gfx9", 4) == 0 ? 64 : 32;
      CHECK(kk->wavefront_size == wave, "%s wave %lld", chips[c], (long long)kk->wavefront_size);
      char err[512];
      char *dis = kl_disasm_hsaco(h, n, NULL, err, sizeof err);
      CHECK(dis != NULL, "disasm: %s", err);
      if (dis) {
        CHECK(strstr(dis, "vadd:\n") != NULL, "no label in disassembly");
        CHECK(strstr(dis, "s_endpgm") != NULL, "no s_endpgm");
        CHECK(strstr(dis, "v_add_f32") != NULL, "%s: no v_add_f32 in\n%s", chips[c], dis);
        CHECK(count_substr(dis, "; invalid") == 0 || strcmp(chips[c], "gfx1030") != 0, "invalid bytes");
        CHECK(strstr(dis, "v_mfma") == NULL && strstr(dis, "v_wmma") == NULL, "unexpected matrix op");
        free(dis);
      }
      char *md = kl_hsaco_metadata_text(h, n, err, sizeof err);
      CHECK(md && strstr(md, "\".vgpr_count\"") && strstr(md, "\"amdhsa.kernels\""), "metadata text: %s",
            md ? md : err);
      free(md);
    }
    kl_hsaco_info_free(&info);
    free(h);
  }
  group_end("vadd: HSACO for gfx908/gfx90a/gfx942/gfx1030/gfx1100");
}

static void test_lds(void) {
  group_begin();
  lk k;
  build_lds_reverse(&k);
  size_t n = 0;
  unsigned char *h = emit_hsaco(k.mod, "gfx942", &n);
  lk_end(&k);
  if (!h) return;
  kl_hsaco_info info;
  if (check_code_object(h, n, "gfx942", "lds_reverse", &info)) {
    const kl_hsaco_kernel *kk = kl_hsaco_find_kernel(&info, "lds_reverse");
    CHECK(kk->lds_bytes == 1024, "LDS %lld", (long long)kk->lds_bytes);
    CHECK(kk->max_flat_workgroup_size == 256, "max wg %lld", (long long)kk->max_flat_workgroup_size);
    char err[256];
    char *dis = kl_disasm_hsaco(h, n, NULL, err, sizeof err);
    CHECK(dis && strstr(dis, "s_barrier") && strstr(dis, "ds_write") && strstr(dis, "ds_read"), "lds disasm: %s",
          dis ? dis : err);
    free(dis);
  }
  kl_hsaco_info_free(&info);
  free(h);
  group_end("lds: 1 KiB LDS, barrier, ds_read/ds_write");
}

static void test_matrix(void) {
  group_begin();
  static const struct {
    const char *chip, *intr, *want;
    unsigned alen, clen;
    bool mfma;
    const char *wg;
  } cases[] = {
    { "gfx90a", "llvm.amdgcn.mfma.f32.32x32x8f16", "v_mfma_f32_32x32x8", 4, 16, true, "1,256" },
    { "gfx942", "llvm.amdgcn.mfma.f32.32x32x8f16", "v_mfma_f32_32x32x8", 4, 16, true, "1,256" },
    { "gfx908", "llvm.amdgcn.mfma.f32.32x32x8f16", "v_mfma_f32_32x32x8", 4, 16, true, "1,256" },
    { "gfx1100", "llvm.amdgcn.wmma.f32.16x16x16.f16", "v_wmma_f32_16x16x16_f16", 16, 8, false, "1,256" },
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    lk k;
    build_matrix(&k, "mm", cases[c].intr, cases[c].alen, cases[c].clen, cases[c].mfma, cases[c].wg);
    size_t n = 0;
    unsigned char *h = emit_hsaco(k.mod, cases[c].chip, &n);
    lk_end(&k);
    if (!h) continue;
    kl_hsaco_info info;
    if (check_code_object(h, n, cases[c].chip, "mm", &info)) {
      const kl_hsaco_kernel *kk = kl_hsaco_find_kernel(&info, "mm");
      CHECK(kk->agpr_count >= 0 || !cases[c].mfma, "%s agpr_count %lld", cases[c].chip, (long long)kk->agpr_count);
      CHECK(kk->lds_bytes == 0, "LDS %lld", (long long)kk->lds_bytes);
      char err[256];
      char *dis = kl_disasm_hsaco(h, n, NULL, err, sizeof err);
      CHECK(dis != NULL, "disasm: %s", err);
      if (dis) {
        CHECK(strstr(dis, cases[c].want) != NULL, "%s: no %s in\n%s", cases[c].chip, cases[c].want, dis);
        CHECK(strstr(dis, cases[c].mfma ? "v_wmma" : "v_mfma") == NULL, "wrong matrix op family");
        free(dis);
      }
    }
    kl_hsaco_info_free(&info);
    free(h);
  }
  /* Chips without the matrix unit: a clear error instead of LLVM's "Cannot select"
   * abort. */
  static const struct {
    const char *chip, *intr;
    unsigned alen, clen;
    bool mfma;
  } bad[] = {
    { "gfx1030", "llvm.amdgcn.mfma.f32.32x32x8f16", 4, 16, true },
    { "gfx1100", "llvm.amdgcn.mfma.f32.32x32x8f16", 4, 16, true },
    { "gfx942", "llvm.amdgcn.wmma.f32.16x16x16.f16", 16, 8, false },
    { "gfx1030", "llvm.amdgcn.wmma.f32.16x16x16.f16", 16, 8, false },
  };
  for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
    lk k;
    build_matrix(&k, "mm", bad[c].intr, bad[c].alen, bad[c].clen, bad[c].mfma, "1,256");
    kl_binary bin;
    char err[1024] = "";
    CHECK(kl_codegen_emit(k.mod, bad[c].chip, NULL, &bin, err, sizeof err) == KL_ERR && strstr(err, "not available"),
          "%s on %s: %s", bad[c].intr, bad[c].chip, err);
    lk_end(&k);
  }
  group_end("matrix: MFMA on gfx908/gfx90a/gfx942, WMMA on gfx1100");
}

static void test_asm_and_object(void) {
  group_begin();
  lk k;
  build_vadd_in(&k, false, "gfx942");
  kl_binary asmtext, obj;
  char err[1024];
  CHECK(kl_codegen_emit_asm(k.mod, "gfx942", NULL, &asmtext, err, sizeof err) == KL_OK, "asm: %s", err);
  if (asmtext.data) {
    CHECK(strstr(asmtext.data, ".amdhsa_kernel vadd") != NULL, "asm has no .amdhsa_kernel");
    CHECK(strstr(asmtext.data, "v_add_f32") != NULL, "asm has no v_add_f32");
  }
  kl_binary_free(&asmtext);
  CHECK(kl_codegen_amdgpu_object(k.mod, "gfx942", NULL, &obj, err, sizeof err) == KL_OK, "object: %s", err);
  if (obj.data) {
    kl_hsaco_info info;
    /* a relocatable object is ET_REL: the parser must refuse it with a clear message */
    CHECK(kl_hsaco_parse(obj.data, obj.size, &info, err, sizeof err) == KL_ERR && strstr(err, "ET_DYN"),
          "ET_REL accepted: %s", err);
    /* linking twice in one process works and gives identical code objects */
    kl_binary h1, h2;
    CHECK(kl_codegen_link_hsaco(obj.data, obj.size, &h1, err, sizeof err) == KL_OK, "link 1: %s", err);
    CHECK(kl_codegen_link_hsaco(obj.data, obj.size, &h2, err, sizeof err) == KL_OK, "link 2: %s", err);
    CHECK(h1.size == h2.size && h1.size > 0 && memcmp(h1.data, h2.data, h1.size) == 0, "relink differs");
    kl_binary_free(&h1);
    kl_binary_free(&h2);
    /* a garbage object makes lld fail with a message, and lld still works afterwards */
    char junk[64];
    memset(junk, 0x5a, sizeof junk);
    CHECK(kl_codegen_link_hsaco(junk, sizeof junk, &h1, err, sizeof err) == KL_ERR && strstr(err, "lld"),
          "junk link: %s", err);
    CHECK(kl_codegen_link_hsaco(obj.data, obj.size, &h2, err, sizeof err) == KL_OK, "link after failure: %s", err);
    kl_binary_free(&h2);
  }
  kl_binary_free(&obj);
  lk_end(&k);
  group_end("asm text, relocatable object, repeated in-process lld links");
}

static void test_errors(void) {
  group_begin();
  lk k;
  build_vadd_in(&k, false, "gfx942");
  kl_binary bin;
  char err[1024];
  CHECK(kl_codegen_emit(k.mod, "gfx9999", NULL, &bin, err, sizeof err) == KL_ERR && strstr(err, "unknown target"),
        "bad chip: %s", err);
  CHECK(kl_codegen_emit(k.mod, "gfx90a:xnack", NULL, &bin, err, sizeof err) == KL_ERR, "bad suffix accepted");
  CHECK(kl_codegen_amdgpu_object(k.mod, "sm_90", NULL, &bin, err, sizeof err) == KL_ERR, "sm_90 as amdgpu");
  /* a feature suffix is accepted and a wrong triple is refused */
  CHECK(kl_codegen_emit(k.mod, "gfx90a:sramecc+:xnack-", NULL, &bin, err, sizeof err) == KL_OK, "suffix: %s", err);
  kl_binary_free(&bin);
  LLVMSetTarget(k.mod, "nvptx64-nvidia-cuda");
  CHECK(kl_codegen_emit(k.mod, "gfx942", NULL, &bin, err, sizeof err) == KL_ERR && strstr(err, "triple"),
        "wrong triple: %s", err);
  lk_end(&k);
  /* too much LDS: LLVM reports an error diagnostic (its default handler would exit(1)) */
  {
    lk big;
    lk_begin(&big, NULL, "big_lds");
    lk_kernel(&big, LK_AMDGPU, "big", &big.gptr, 1, "1,256");
    LLVMTypeRef arr = LLVMArrayType2(big.f32, 32768); /* 128 KiB > 64 KiB */
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(big.mod, arr, "huge", 3);
    LLVMSetInitializer(g, LLVMGetUndef(arr));
    LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMValueRef tid = lk_tid(&big, true);
    LLVMValueRef idx[2] = { LLVMConstInt(big.i32, 0, 0), tid };
    LLVMValueRef slot = LLVMBuildInBoundsGEP2(big.b, arr, g, idx, 2, "");
    LLVMBuildStore(big.b, LLVMConstReal(big.f32, 1.0), slot);
    lk_barrier(&big, true);
    idx[1] = LLVMBuildAdd(big.b, tid, LLVMConstInt(big.i32, 30000, 0), "");
    LLVMValueRef v = LLVMBuildLoad2(big.b, big.f32, LLVMBuildInBoundsGEP2(big.b, arr, g, idx, 2, ""), "");
    LLVMValueRef t64 = LLVMBuildZExt(big.b, tid, big.i64, "");
    LLVMBuildStore(big.b, v, LLVMBuildInBoundsGEP2(big.b, big.f32, LLVMGetParam(big.fn, 0), &t64, 1, ""));
    LLVMBuildRetVoid(big.b);
    err[0] = '\0';
    CHECK(kl_codegen_emit(big.mod, "gfx942", NULL, &bin, err, sizeof err) == KL_ERR && strstr(err, "exceeds limit"),
          "128 KiB LDS: %s", err);
    /* the context's own handler is restored afterwards and the context still works */
    CHECK(LLVMContextGetDiagnosticHandler(big.ctx) == NULL, "diagnostic handler not restored");
    lk_end(&big);
  }
  /* an invalid module (block without terminator) is reported by the verifier */
  lk v;
  lk_begin(&v, NULL, "bad");
  LLVMValueRef f = LLVMAddFunction(v.mod, "bad", LLVMFunctionType(LLVMVoidTypeInContext(v.ctx), NULL, 0, 0));
  LLVMAppendBasicBlockInContext(v.ctx, f, "entry");
  CHECK(kl_codegen_emit(v.mod, "gfx942", NULL, &bin, err, sizeof err) == KL_ERR && strstr(err, "invalid LLVM module"),
        "verifier: %s", err);
  lk_end(&v);
  group_end("errors: unknown chip, bad suffix, wrong triple, too much LDS, invalid module");
}

static void test_corrupt(void) {
  group_begin();
  lk k;
  build_vadd_in(&k, false, "gfx90a");
  size_t n = 0;
  unsigned char *h = emit_hsaco(k.mod, "gfx90a", &n);
  lk_end(&k);
  if (!h) return;
  char err[256];
  kl_hsaco_info info;
  /* every truncation either parses (if nothing needed was cut) or fails cleanly */
  int rejected = 0;
  for (size_t cut = 0; cut < n; cut += (cut < 128 ? 1 : 37)) {
    unsigned char *t = malloc(cut ? cut : 1);
    memcpy(t, h, cut);
    if (kl_hsaco_parse(t, cut, &info, err, sizeof err) == KL_ERR)
      rejected++;
    else
      kl_hsaco_info_free(&info);
    char *md = kl_hsaco_metadata_text(t, cut, err, sizeof err);
    free(md);
    free(t);
  }
  CHECK(rejected > 0, "no truncation was detected");
  CHECK(kl_hsaco_parse(h, 10, &info, err, sizeof err) == KL_ERR && strstr(err, "too short"), "short: %s", err);
  /* random byte flips: parse must not crash (run under ASan in CI) */
  srand(1234);
  for (int it = 0; it < 400; it++) {
    unsigned char *t = malloc(n);
    memcpy(t, h, n);
    for (int f = 0; f < 8; f++) t[(size_t)rand() % n] = (unsigned char)rand();
    if (kl_hsaco_parse(t, n, &info, err, sizeof err) == KL_OK) kl_hsaco_info_free(&info);
    free(kl_hsaco_metadata_text(t, n, err, sizeof err));
    free(t);
  }
  /* bad magic / wrong machine */
  unsigned char *t = malloc(n);
  memcpy(t, h, n);
  t[0] = 0;
  CHECK(kl_hsaco_parse(t, n, &info, err, sizeof err) == KL_ERR && strstr(err, "magic"), "magic: %s", err);
  memcpy(t, h, n);
  t[18] = 62; /* EM_X86_64 */
  t[19] = 0;
  CHECK(kl_hsaco_parse(t, n, &info, err, sizeof err) == KL_ERR && strstr(err, "EM_AMDGPU"), "machine: %s", err);
  free(t);
  free(h);
  group_end("corrupt: truncated / flipped / wrong-machine code objects fail cleanly");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  test_vadd();
  test_lds();
  test_matrix();
  test_asm_and_object();
  test_errors();
  test_corrupt();
  return check_summary("test_codegen_amdgpu");
}
