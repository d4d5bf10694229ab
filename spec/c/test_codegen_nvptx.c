/* test_codegen_nvptx.c — PTX text from LLVM modules built with the C API: a vector add
 * marked as an entry by the ptx_kernel calling convention (71), a kernel marked through
 * nvvm.annotations, shared memory + bar.sync, a device function that must not become an
 * entry, and an mma.sync m16n8k16 tensor-core kernel; for sm_80 and sm_90. Checks the
 * PTX header (.version / .target / .address_size), .entry names, special registers and
 * instructions; bad targets and wrong triples give clear errors. Vector casts read lane by
 * lane become scalar casts before code generation (codegen/lane_casts.h); a cast with a
 * whole-vector user and a bitcast that changes the lanes stay. Long runs of stores get an
 * empty memory-clobbering asm every 16 stores (codegen/store_runs.h); calls end a run, and
 * the emitted PTX keeps every store. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen_target.h"
#include "codegen/lane_casts.h"
#include "codegen/store_runs.h"
#include "codegen/wide_private.h"
#include <llvm-c/Analysis.h>

#include "check.h"
#include "llvm_kernels.h"

/* A device function (not an entry) and a kernel using shared memory + a barrier:
 * out[t] = twice(tile[255 - t]) where tile[t] = in[t]. */
static void add_shared(lk *k) {
  LLVMTypeRef f32 = k->f32;
  LLVMValueRef twice = LLVMAddFunction(k->mod, "twice", LLVMFunctionType(f32, &f32, 1, 0));
  LLVMSetLinkage(twice, LLVMExternalLinkage);
  LLVMPositionBuilderAtEnd(k->b, LLVMAppendBasicBlockInContext(k->ctx, twice, "entry"));
  LLVMBuildRet(k->b, LLVMBuildFAdd(k->b, LLVMGetParam(twice, 0), LLVMGetParam(twice, 0), ""));
  /* keep it out of line so that a .func is emitted */
  LLVMAddAttributeAtIndex(twice, LLVMAttributeFunctionIndex,
                          LLVMCreateEnumAttribute(k->ctx, LLVMGetEnumAttributeKindForName("noinline", 8), 0));

  LLVMTypeRef ps[] = { k->gptr, k->gptr };
  LLVMValueRef fn = lk_kernel(k, LK_PTX, "rev", ps, 2, NULL);
  LLVMTypeRef arr = LLVMArrayType2(f32, 256);
  LLVMValueRef tile = LLVMAddGlobalInAddressSpace(k->mod, arr, "tile", 3);
  LLVMSetInitializer(tile, LLVMGetUndef(arr));
  LLVMSetLinkage(tile, LLVMInternalLinkage);
  LLVMSetAlignment(tile, 16);
  LLVMValueRef tid = lk_tid(k, false);
  LLVMValueRef t64 = LLVMBuildZExt(k->b, tid, k->i64, "");
  LLVMValueRef v = LLVMBuildLoad2(k->b, f32, LLVMBuildInBoundsGEP2(k->b, f32, LLVMGetParam(fn, 0), &t64, 1, ""), "");
  LLVMValueRef idx[2] = { LLVMConstInt(k->i32, 0, 0), tid };
  LLVMBuildStore(k->b, v, LLVMBuildInBoundsGEP2(k->b, arr, tile, idx, 2, ""));
  lk_barrier(k, false);
  idx[1] = LLVMBuildSub(k->b, LLVMConstInt(k->i32, 255, 0), tid, "");
  LLVMValueRef r = LLVMBuildLoad2(k->b, f32, LLVMBuildInBoundsGEP2(k->b, arr, tile, idx, 2, ""), "");
  LLVMTypeRef tw = LLVMFunctionType(f32, &f32, 1, 0);
  r = LLVMBuildCall2(k->b, tw, twice, &r, 1, "");
  LLVMBuildStore(k->b, r, LLVMBuildInBoundsGEP2(k->b, f32, LLVMGetParam(fn, 1), &t64, 1, ""));
  LLVMBuildRetVoid(k->b);
}

/* One mma.sync.m16n8k16 (f16 x f16 -> f32) per warp: fragments loaded per lane. */
static void add_mma(lk *k) {
  LLVMTypeRef h2 = LLVMVectorType(LLVMHalfTypeInContext(k->ctx), 2);
  LLVMTypeRef ps[] = { k->gptr, k->gptr, k->gptr };
  LLVMValueRef fn = lk_kernel(k, LK_PTX, "mma", ps, 3, NULL);
  LLVMValueRef tid = LLVMBuildZExt(k->b, lk_tid(k, false), k->i64, "");
  LLVMValueRef args[10];
  LLVMValueRef base = LLVMBuildMul(k->b, tid, LLVMConstInt(k->i64, 4, 0), "");
  for (int q = 0; q < 4; q++) { /* A: 4 x <2 x half> */
    LLVMValueRef ix = LLVMBuildAdd(k->b, base, LLVMConstInt(k->i64, (unsigned)q, 0), "");
    args[q] = LLVMBuildLoad2(k->b, h2, LLVMBuildInBoundsGEP2(k->b, h2, LLVMGetParam(fn, 0), &ix, 1, ""), "");
  }
  for (int q = 0; q < 2; q++) { /* B: 2 x <2 x half> */
    LLVMValueRef ix = LLVMBuildAdd(k->b, base, LLVMConstInt(k->i64, (unsigned)q, 0), "");
    args[4 + q] = LLVMBuildLoad2(k->b, h2, LLVMBuildInBoundsGEP2(k->b, h2, LLVMGetParam(fn, 1), &ix, 1, ""), "");
  }
  for (int q = 0; q < 4; q++) args[6 + q] = LLVMConstReal(k->f32, 0.0);
  LLVMValueRef r = lk_call(k, "llvm.nvvm.mma.m16n8k16.row.col.f32.f32", args, 10);
  for (unsigned q = 0; q < 4; q++) {
    LLVMValueRef ix = LLVMBuildAdd(k->b, base, LLVMConstInt(k->i64, q, 0), "");
    LLVMBuildStore(k->b, LLVMBuildExtractValue(k->b, r, q, ""),
                   LLVMBuildInBoundsGEP2(k->b, k->f32, LLVMGetParam(fn, 2), &ix, 1, ""));
  }
  LLVMBuildRetVoid(k->b);
}

static char *emit(LLVMModuleRef m, const char *target) {
  kl_binary bin;
  char err[2048];
  if (kl_codegen_emit(m, target, NULL, &bin, err, sizeof err) != KL_OK) {
    CHECK(0, "emit %s: %s", target, err);
    return NULL;
  }
  CHECK(bin.arch == KL_ARCH_NVPTX, "arch %d", bin.arch);
  CHECK(strlen(bin.data) == bin.size, "PTX not NUL-terminated text (%zu vs %zu)", strlen(bin.data), bin.size);
  return bin.data;
}

static void test_vadd(void) {
  group_begin();
  static const struct { const char *sm, *version; } t[] = { { "sm_90", ".version 8.0" }, { "sm_80", ".version 7.0" } };
  for (int use_cc = 0; use_cc < 2; use_cc++)
    for (size_t c = 0; c < 2; c++) {
      lk k;
      lk_begin(&k, NULL, "ptx_mod");
      lk_gpu_vadd(&k, use_cc ? LK_PTX : LK_PTX_ANNOTATED, "vadd", 0);
      char *ptx = emit(k.mod, t[c].sm);
      lk_end(&k);
      if (!ptx) continue;
      char target[32];
      snprintf(target, sizeof target, ".target %s", t[c].sm);
      CHECK(strstr(ptx, target) != NULL, "no '%s' in\n%s", target, ptx);
      CHECK(strstr(ptx, t[c].version) != NULL, "no '%s'", t[c].version);
      CHECK(strstr(ptx, ".address_size 64") != NULL, "no .address_size 64");
      CHECK(strstr(ptx, ".visible .entry vadd(") != NULL, "no .entry vadd (%s) in\n%s",
            use_cc ? "calling convention" : "nvvm.annotations", ptx);
      CHECK(strstr(ptx, "%tid.x") && strstr(ptx, "%ctaid.x") && strstr(ptx, "%ntid.x"), "special registers");
      CHECK(strstr(ptx, "ld.global") && strstr(ptx, "st.global") && strstr(ptx, "add.rn.f32"), "body:\n%s", ptx);
      free(ptx);
    }
  group_end("vadd: .entry via ptx_kernel cc and nvvm.annotations, sm_80 + sm_90");
}

static void test_shared(void) {
  group_begin();
  lk k;
  lk_begin(&k, NULL, "ptx_mod");
  add_shared(&k);
  char *ptx = emit(k.mod, "sm_90");
  lk_end(&k);
  if (!ptx) return;
  CHECK(strstr(ptx, ".entry rev(") != NULL, "no .entry rev");
  CHECK(strstr(ptx, ".func") && strstr(ptx, "twice") && !strstr(ptx, ".entry twice"), "device function:\n%s", ptx);
  CHECK(strstr(ptx, ".shared") != NULL, "no .shared");
  CHECK(strstr(ptx, "bar.sync") || strstr(ptx, "barrier.sync"), "no barrier:\n%s", ptx);
  CHECK(strstr(ptx, "st.shared") && strstr(ptx, "ld.shared"), "no shared accesses");
  free(ptx);
  group_end("shared: .shared, bar.sync, device .func");
}

static void test_mma(void) {
  group_begin();
  for (int c = 0; c < 2; c++) {
    const char *sm = c ? "sm_90" : "sm_80";
    lk k;
    lk_begin(&k, NULL, "ptx_mod");
    add_mma(&k);
    char *ptx = emit(k.mod, sm);
    lk_end(&k);
    if (!ptx) continue;
    CHECK(strstr(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") != NULL, "%s: no mma.sync in\n%s", sm, ptx);
    free(ptx);
  }
  group_end("mma: mma.sync m16n8k16 on sm_80 and sm_90");
}

static void test_errors(void) {
  group_begin();
  lk k;
  lk_begin(&k, NULL, "ptx_mod");
  lk_gpu_vadd(&k, LK_PTX, "vadd", 0);
  kl_binary bin;
  char err[1024];
  CHECK(kl_codegen_emit(k.mod, "sm_99", NULL, &bin, err, sizeof err) == KL_ERR && strstr(err, "unknown target"),
        "sm_99: %s", err);
  CHECK(kl_codegen_emit(k.mod, "sm_90:foo+", NULL, &bin, err, sizeof err) == KL_ERR, "suffix accepted");
  /* features override: PTX ISA 7.8 instead of the default 8.0 */
  kl_codegen_opts o = { .opt_level = 3, .features = "+ptx78" };
  CHECK(kl_codegen_emit(k.mod, "sm_90", &o, &bin, err, sizeof err) == KL_OK, "ptx78: %s", err);
  if (bin.data) CHECK(strstr(bin.data, ".version 7.8") != NULL, "override ignored");
  kl_binary_free(&bin);
  /* the host-side triple and a matching NVPTX layout from kl_codegen_target_layout */
  char triple[64], *dl = NULL;
  CHECK(kl_codegen_target_layout("sm_90", triple, &dl, err, sizeof err) == KL_OK, "layout: %s", err);
  CHECK(strcmp(triple, "nvptx64-nvidia-cuda") == 0, "triple %s", triple);
  CHECK(dl && strstr(dl, "e-") == dl, "layout %s", dl ? dl : "(null)");
  LLVMSetTarget(k.mod, triple);
  LLVMSetDataLayout(k.mod, dl);
  CHECK(kl_codegen_emit(k.mod, "sm_80", NULL, &bin, err, sizeof err) == KL_OK, "preset layout: %s", err);
  kl_binary_free(&bin);
  free(dl);
  LLVMSetTarget(k.mod, "amdgcn-amd-amdhsa");
  CHECK(kl_codegen_emit(k.mod, "sm_90", NULL, &bin, err, sizeof err) == KL_ERR && strstr(err, "triple"),
        "wrong triple: %s", err);
  lk_end(&k);
  const kl_target *t90 = kl_codegen_target_lookup("sm_90", err, sizeof err),
                  *t942 = kl_codegen_target_lookup("gfx942", err, sizeof err),
                  *th = kl_codegen_target_lookup("host", err, sizeof err);
  CHECK(t90 && t90->arch == KL_ARCH_NVPTX && t942 && t942->arch == KL_ARCH_AMDGPU && th && th->arch == KL_ARCH_HOST,
        "lookup");
  CHECK(!kl_codegen_target_lookup("cuda", err, sizeof err) && strstr(err, "unknown target 'cuda'"), "cuda: %s", err);
  group_end("errors: unknown arch, features override, layouts, wrong triple");
}

/* core's table is the one table: codegen resolves every name through it. The compile
 * targets are what kiln.targets() lists; emit-only chips (a device's own arch) are found
 * by codegen only, with a suffix stripped; binaries carry the row's kl_arch. */
static void test_target_table(void) {
  group_begin();
  char err[1024] = "";
  CHECK(kl_target_count() == 9, "compile targets %d", kl_target_count());
  const kl_target *s90 = kl_target_lookup("sm_90"), *s90a = kl_target_lookup("sm_90a");
  CHECK(s90 && s90a && !s90->wgmma && s90a->wgmma && !strcmp(s90a->cpu, "sm_90a") &&
            !strcmp(s90a->features, "+ptx80") && s90a->accel == s90->accel && s90a->lds_bytes == s90->lds_bytes,
        "sm_90a: sm_90 plus wgmma");
  for (int i = 0; i < kl_target_count(); i++) {
    const kl_target *t = kl_target_at(i);
    CHECK(!t->emit_only && kl_target_lookup(t->name) == t && kl_target_lookup_emit(t->name) == t &&
              kl_codegen_target_lookup(t->name, err, sizeof err) == t,
          "%s", t->name);
  }
  const kl_target *sm86 = kl_target_lookup_emit("sm_86"),
                  *g906 = kl_codegen_target_lookup("gfx906:xnack-", err, sizeof err);
  CHECK(sm86 && sm86->emit_only && sm86->arch == KL_ARCH_NVPTX && !strcmp(sm86->features, "+ptx71") &&
            !kl_target_lookup("sm_86"),
        "sm_86 is emit-only");
  CHECK(g906 && g906->emit_only && g906->arch == KL_ARCH_AMDGPU && !strcmp(g906->name, "gfx906") &&
            !kl_target_lookup("gfx906"),
        "gfx906 is emit-only: %s", err);
  CHECK(!kl_target_lookup_emit("gfx906:xnack-") && !kl_target_lookup_emit(NULL) &&
            !kl_codegen_target_lookup(NULL, err, sizeof err),
        "exact names only");
  CHECK(!strcmp(kl_arch_name(KL_ARCH_HOST), "host") && !strcmp(kl_arch_name(KL_ARCH_AMDGPU), "amdgpu") &&
            !strcmp(kl_arch_name(KL_ARCH_NVPTX), "nvptx"),
        "arch names");
  CHECK(!strcmp(kl_binary_format_name(KL_ARCH_HOST), "host-object") &&
            !strcmp(kl_binary_format_name(KL_ARCH_AMDGPU), "hsaco") &&
            !strcmp(kl_binary_format_name(KL_ARCH_NVPTX), "ptx"),
        "binary formats");
  lk k;
  lk_begin(&k, NULL, "ptx_mod86");
  lk_gpu_vadd(&k, LK_PTX, "vadd", 0);
  kl_binary bin = { 0 };
  CHECK(kl_codegen_emit(k.mod, "sm_86", NULL, &bin, err, sizeof err) == KL_OK && bin.arch == KL_ARCH_NVPTX, "sm_86: %s",
        err);
  if (bin.data) CHECK(strstr(bin.data, ".version 7.1") && strstr(bin.data, ".target sm_86"), "sm_86 PTX header");
  kl_binary_free(&bin);
  lk_end(&k);
  group_end("target table: compile targets, emit-only chips, arch and format names");
}

/* Kernel `name`: v = fptrunc <4 x float> in[4t..4t+3]; out[8t + 2i] = v[i] (strided: no
 * vector store); with whole, also out4[t] = v (a whole-vector user); with bitcast, the
 * lanes come from a bitcast <2 x double> -> <4 x float> instead of a load + fptrunc of f32. */
static void add_lanes(lk *k, const char *name, bool whole, bool bitcast) {
  LLVMTypeRef h = LLVMHalfTypeInContext(k->ctx), v4f = LLVMVectorType(k->f32, 4), v4h = LLVMVectorType(h, 4);
  LLVMTypeRef ps[] = { k->gptr, k->gptr };
  LLVMValueRef fn = lk_kernel(k, LK_PTX, name, ps, 2, NULL);
  LLVMValueRef t = LLVMBuildZExt(k->b, lk_tid(k, false), k->i64, "");
  LLVMValueRef v;
  if (bitcast) {
    LLVMTypeRef v2d = LLVMVectorType(LLVMDoubleTypeInContext(k->ctx), 2);
    v = LLVMBuildLoad2(k->b, v2d, LLVMBuildInBoundsGEP2(k->b, v2d, LLVMGetParam(fn, 0), &t, 1, ""), "");
    v = LLVMBuildBitCast(k->b, v, v4f, "");
    v = LLVMBuildFPTrunc(k->b, v, v4h, "");
  } else {
    v = LLVMBuildLoad2(k->b, v4f, LLVMBuildInBoundsGEP2(k->b, v4f, LLVMGetParam(fn, 0), &t, 1, ""), "");
    v = LLVMBuildFPTrunc(k->b, v, v4h, "");
  }
  LLVMValueRef base = LLVMBuildMul(k->b, t, LLVMConstInt(k->i64, 8, 0), "");
  for (unsigned i = 0; i < 4; i++) {
    LLVMValueRef ix = LLVMBuildAdd(k->b, base, LLVMConstInt(k->i64, 2 * i, 0), "");
    LLVMValueRef e = LLVMBuildExtractElement(k->b, v, LLVMConstInt(k->i32, i, 0), "");
    LLVMBuildStore(k->b, e, LLVMBuildInBoundsGEP2(k->b, h, LLVMGetParam(fn, 1), &ix, 1, ""));
  }
  if (whole) {
    LLVMValueRef ix = LLVMBuildAdd(k->b, base, LLVMConstInt(k->i64, 1 << 20, 0), "");
    LLVMBuildStore(k->b, v, LLVMBuildInBoundsGEP2(k->b, h, LLVMGetParam(fn, 1), &ix, 1, ""));
  }
  LLVMBuildRetVoid(k->b);
}

static int count(const char *s, const char *what) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, what)); p += strlen(what)) n++;
  return n;
}

static void test_lane_casts(void) {
  group_begin();
  lk k;
  lk_begin(&k, NULL, "lanes_mod");
  add_lanes(&k, "lanes", false, false);
  add_lanes(&k, "lanes_whole", true, false);
  LLVMValueRef before = LLVMGetNamedFunction(k.mod, "lanes");
  int n = kl_llvm_scalarize_lane_casts(k.mod);
  CHECK(n == 1, "rewrote %d casts, want 1 (the one read only by lanes)", n);
  char *msg = NULL;
  CHECK(!LLVMVerifyModule(k.mod, LLVMReturnStatusAction, &msg), "invalid after the rewrite: %s", msg ? msg : "?");
  LLVMDisposeMessage(msg);
  char *text = LLVMPrintModuleToString(k.mod);
  CHECK(count(text, "fptrunc <4 x float>") == 1, "the whole-vector cast stays, the other goes:\n%s", text);
  CHECK(count(text, "fptrunc float") == 4, "four scalar casts:\n%s", text);
  CHECK(LLVMGetNamedFunction(k.mod, "lanes") == before, "the function is rewritten in place");
  LLVMDisposeMessage(text);
  lk_end(&k);

  lk_begin(&k, NULL, "lanes_bitcast");
  add_lanes(&k, "lanes_bc", false, true);
  n = kl_llvm_scalarize_lane_casts(k.mod);
  text = LLVMPrintModuleToString(k.mod);
  CHECK(n == 1 && count(text, "bitcast <2 x double>") == 1 && count(text, "fptrunc float") == 4,
        "the lane-changing bitcast stays, the fptrunc after it goes (%d):\n%s", n, text);
  LLVMDisposeMessage(text);
  lk_end(&k);

  /* through emission: four scalar conversions, four 16-bit stores */
  lk_begin(&k, NULL, "lanes_emit");
  add_lanes(&k, "lanes", false, false);
  char *ptx = emit(k.mod, "sm_90a");
  lk_end(&k);
  if (ptx) {
    CHECK(count(ptx, "cvt.rn.f16.f32") == 4 && count(ptx, "st.global.b16") == 4, "PTX:\n%s", ptx);
    free(ptx);
  }
  group_end("lane casts: fptrunc <4 x float> read by lanes -> 4 scalar casts; whole-vector users and bitcasts stay");
}

/* Kernel `name`: out[40 t + 3 i] = t + i for i < 40 (scattered stores: no vector store),
 * with a barrier after the 20th store. */
static void add_store_run(lk *k, const char *name) {
  LLVMTypeRef ps[] = { k->gptr };
  LLVMValueRef fn = lk_kernel(k, LK_PTX, name, ps, 1, NULL);
  LLVMValueRef t = LLVMBuildZExt(k->b, lk_tid(k, false), k->i64, "");
  LLVMValueRef base = LLVMBuildMul(k->b, t, LLVMConstInt(k->i64, 40, 0), "");
  for (unsigned i = 0; i < 40; i++) {
    LLVMValueRef ix = LLVMBuildAdd(k->b, base, LLVMConstInt(k->i64, 3 * i, 0), "");
    LLVMValueRef v = LLVMBuildTrunc(k->b, LLVMBuildAdd(k->b, t, LLVMConstInt(k->i64, i, 0), ""), k->i32, "");
    LLVMBuildStore(k->b, v, LLVMBuildInBoundsGEP2(k->b, k->i32, LLVMGetParam(fn, 0), &ix, 1, ""));
    if (i == 19) lk_call(k, "llvm.nvvm.barrier0", NULL, 0);
  }
  LLVMBuildRetVoid(k->b);
}

static void test_store_runs(void) {
  group_begin();
  lk k;
  lk_begin(&k, NULL, "runs_mod");
  add_store_run(&k, "runs");
  /* stores 1..20, the barrier, stores 21..40: one break after the 16th and one after the 36th */
  int n = kl_llvm_break_store_runs(k.mod, 16);
  CHECK(n == 2, "inserted %d barriers, want 2", n);
  char *msg = NULL;
  CHECK(!LLVMVerifyModule(k.mod, LLVMReturnStatusAction, &msg), "invalid after the rewrite: %s", msg ? msg : "?");
  LLVMDisposeMessage(msg);
  char *text = LLVMPrintModuleToString(k.mod);
  CHECK(count(text, "asm sideeffect \"\", \"~{memory}\"") == 2, "two empty memory-clobbering asm calls:\n%s", text);
  LLVMDisposeMessage(text);
  CHECK(kl_llvm_break_store_runs(k.mod, 1) == 0, "a run below 2 inserts nothing");
  lk_end(&k);

  /* through emission (which breaks the runs itself): every store stays */
  lk_begin(&k, NULL, "runs_emit");
  add_store_run(&k, "runs");
  char *ptx = emit(k.mod, "sm_90a");
  lk_end(&k);
  if (ptx) {
    CHECK(count(ptx, "st.global.u32") + count(ptx, "st.global.b32") == 40 && count(ptx, "bar.sync") == 1, "PTX:\n%s",
          ptx);
    free(ptx);
  }
  group_end("store runs: an empty memory asm after every 16 stores not interrupted by a call; the PTX keeps them all");
}

/* Kernel `name`: a private [64 x float] filled by one <64 x float> store of an insert chain
 * (lane i = tid + i), read back by one load whose lanes 3 and 60 are extracted and summed
 * into out[tid]; with whole_use, that load also goes to out as a whole vector. */
static void add_wide_private(lk *k, const char *name, bool whole_use) {
  LLVMTypeRef ps[] = { k->gptr };
  LLVMValueRef fn = lk_kernel(k, LK_PTX, name, ps, 1, NULL);
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx), vt = LLVMVectorType(f32, 64);
  LLVMValueRef buf = LLVMBuildAlloca(k->b, LLVMArrayType2(f32, 64), "");
  LLVMValueRef t = LLVMBuildUIToFP(k->b, lk_tid(k, false), f32, "");
  LLVMValueRef v = LLVMGetUndef(vt);
  for (unsigned i = 0; i < 64; i++)
    v = LLVMBuildInsertElement(k->b, v, LLVMBuildFAdd(k->b, t, LLVMConstReal(f32, i), ""), LLVMConstInt(k->i32, i, 0),
                               "");
  LLVMBuildStore(k->b, v, buf);
  LLVMValueRef ld = LLVMBuildLoad2(k->b, vt, buf, "");
  LLVMValueRef a = LLVMBuildExtractElement(k->b, ld, LLVMConstInt(k->i32, 3, 0), "");
  LLVMValueRef b = LLVMBuildExtractElement(k->b, ld, LLVMConstInt(k->i32, 60, 0), "");
  LLVMValueRef ix = LLVMBuildZExt(k->b, lk_tid(k, false), k->i64, "");
  LLVMBuildStore(k->b, LLVMBuildFAdd(k->b, a, b, ""),
                 LLVMBuildInBoundsGEP2(k->b, f32, LLVMGetParam(fn, 0), &ix, 1, ""));
  if (whole_use) LLVMBuildStore(k->b, ld, LLVMGetParam(fn, 0));
  LLVMBuildRetVoid(k->b);
}

static void test_wide_private(void) {
  group_begin();
  lk k;
  lk_begin(&k, NULL, "wide_mod");
  add_wide_private(&k, "wide", false);
  int n = kl_llvm_scalarize_wide_private(k.mod, 32);
  CHECK(n == 2, "rewrote %d loads and stores, want 2", n);
  char *msg = NULL;
  CHECK(!LLVMVerifyModule(k.mod, LLVMReturnStatusAction, &msg), "invalid after the rewrite: %s", msg ? msg : "?");
  LLVMDisposeMessage(msg);
  char *text = LLVMPrintModuleToString(k.mod);
  CHECK(!strstr(text, "<64 x float>") && count(text, "store float") == 65 && count(text, "load float") == 2,
        "64 scalar stores (and out's), 2 scalar loads, no vector left:\n%s", text);
  LLVMDisposeMessage(text);
  CHECK(kl_llvm_scalarize_wide_private(k.mod, 32) == 0, "nothing left to rewrite");
  lk_end(&k);

  /* a load with a whole-vector user stays (its store still splits); below min_lanes nothing */
  lk_begin(&k, NULL, "wide_whole");
  add_wide_private(&k, "wide", true);
  CHECK(kl_llvm_scalarize_wide_private(k.mod, 65) == 0, "64 lanes are below 65");
  n = kl_llvm_scalarize_wide_private(k.mod, 32);
  CHECK(n == 1, "rewrote %d, want 1 (the store)", n);
  text = LLVMPrintModuleToString(k.mod);
  CHECK(count(text, "load <64 x float>") == 1, "the vector load stays:\n%s", text);
  LLVMDisposeMessage(text);
  lk_end(&k);

  /* through emission: out[tid] = 2 tid + 63 */
  lk_begin(&k, NULL, "wide_emit");
  add_wide_private(&k, "wide", false);
  char *ptx = emit(k.mod, "sm_90a");
  lk_end(&k);
  if (ptx) {
    CHECK(count(ptx, "st.global.f32") + count(ptx, "st.global.b32") == 1 && !strstr(ptx, "local"), "PTX:\n%s", ptx);
    free(ptx);
  }
  group_end("wide private vectors: a <64 x float> store of an insert chain and a load read by lanes go scalar");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  test_vadd();
  test_shared();
  test_mma();
  test_errors();
  test_target_table();
  test_lane_casts();
  test_store_runs();
  test_wide_private();
  return check_summary("test_codegen_nvptx");
}
