/* codegen_target.c — LLVM module -> host object / AMDGPU HSACO / NVPTX PTX.
 * See codegen_target.h for the contract. */
#include "codegen/codegen_target.h"
#include "core/diag.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Error.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "codegen/lane_casts.h"
#include "codegen/ptx_cluster.h"
#include "codegen/store_runs.h"
#include "codegen/wide_private.h"
#include "core/arena.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- LLVM target initialisation (process-wide, once) ---- */

void LLVMInitializeAMDGPUTargetInfo(void);
void LLVMInitializeAMDGPUTarget(void);
void LLVMInitializeAMDGPUTargetMC(void);
void LLVMInitializeAMDGPUAsmPrinter(void);
void LLVMInitializeAMDGPUAsmParser(void);
void LLVMInitializeAMDGPUDisassembler(void);
void LLVMInitializeNVPTXTargetInfo(void);
void LLVMInitializeNVPTXTarget(void);
void LLVMInitializeNVPTXTargetMC(void);
void LLVMInitializeNVPTXAsmPrinter(void);

static pthread_once_t kl_llvm_once = PTHREAD_ONCE_INIT;

static void kl_llvm_init_once(void) {
  LLVMInitializeAMDGPUTargetInfo();
  LLVMInitializeAMDGPUTarget();
  LLVMInitializeAMDGPUTargetMC();
  LLVMInitializeAMDGPUAsmPrinter();
  LLVMInitializeAMDGPUAsmParser();
  LLVMInitializeAMDGPUDisassembler();
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
  LLVMInitializeNativeAsmParser();
  LLVMInitializeNativeDisassembler();
}

void kl_llvm_init_targets(void) { pthread_once(&kl_llvm_once, kl_llvm_init_once); }

void kl_binary_free(kl_binary *b) {
  if (!b) return;
  free(b->data);
  b->data = NULL;
  b->size = 0;
}

/* ---- targets: a row of core's table resolved for LLVM ---- */

#define KL_NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* What the LLVM target machine is made from: the row, and the triple, cpu and features
 * (the row's, the host's detected at run time, a feature suffix's, or the options'). */
typedef struct llvm_target {
  const kl_target *desc;
  char name[64]; /* the chip / arch without feature suffixes: "gfx90a", "sm_90", "host" */
  char triple[64];
  char cpu[64];
  char features[4096];
} llvm_target;

const char *kl_binary_format_name(kl_arch a) {
  return a == KL_ARCH_AMDGPU ? "hsaco" : a == KL_ARCH_NVPTX ? "ptx" : "host-object";
}

static size_t chip_len(const char *target) {
  const char *colon = strchr(target, ':');
  return colon ? (size_t)(colon - target) : strlen(target);
}

const kl_target *kl_codegen_target_lookup(const char *target, char *err, size_t errlen) {
  const kl_target *t = NULL;
  if (target) {
    size_t n = chip_len(target);
    char chip[64];
    if (n < sizeof chip) {
      memcpy(chip, target, n);
      chip[n] = '\0';
      t = kl_target_lookup_emit(chip);
    }
  }
  if (!t)
    kl_errf(err, errlen,
            "unknown target '%s' (expected host, an AMDGPU chip such as gfx90a/gfx942/gfx1100, "
            "or an NVIDIA arch such as sm_80/sm_90)",
            target ? target : "(null)");
  return t;
}

/* "gfx90a:sramecc+:xnack-" -> "+sramecc,-xnack". */
static kl_status parse_amdgpu_suffix(const char *target, char *feat, size_t n, char *err, size_t errlen) {
  feat[0] = '\0';
  const char *p = strchr(target, ':');
  size_t used = 0;
  while (p) {
    p++;
    const char *end = strchr(p, ':');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len < 2 || (p[len - 1] != '+' && p[len - 1] != '-')) {
      kl_errf(err, errlen, "target '%s': feature '%.*s' must end in '+' or '-'", target, (int)len, p);
      return KL_ERR;
    }
    int w = snprintf(feat + used, n - used, "%s%c%.*s", used ? "," : "", p[len - 1], (int)(len - 1), p);
    if (w < 0 || (size_t)w >= n - used) {
      kl_errf(err, errlen, "target '%s': feature list too long", target);
      return KL_ERR;
    }
    used += (size_t)w;
    p = end;
  }
  return KL_OK;
}

static kl_status resolve_target(const char *target, llvm_target *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  const kl_target *d = kl_codegen_target_lookup(target, err, errlen);
  if (!d) return KL_ERR;
  kl_llvm_init_targets();
  out->desc = d;
  size_t n = chip_len(target);
  snprintf(out->name, sizeof out->name, "%s", d->name);
  if (d->arch == KL_ARCH_HOST) {
    if (target[n] == ':') {
      kl_errf(err, errlen, "target '%s': the host target takes no feature suffix", target);
      return KL_ERR;
    }
    char *def = LLVMGetDefaultTargetTriple();
    char *norm = LLVMNormalizeTargetTriple(def);
    snprintf(out->triple, sizeof out->triple, "%s", norm);
    LLVMDisposeMessage(norm);
    LLVMDisposeMessage(def);
    char *cpu = LLVMGetHostCPUName();
    snprintf(out->cpu, sizeof out->cpu, "%s", cpu);
    LLVMDisposeMessage(cpu);
    char *feat = LLVMGetHostCPUFeatures();
    if (strlen(feat) >= sizeof out->features) {
      LLVMDisposeMessage(feat);
      kl_errf(err, errlen, "host CPU feature string too long");
      return KL_ERR;
    }
    snprintf(out->features, sizeof out->features, "%s", feat);
    LLVMDisposeMessage(feat);
    return KL_OK;
  }
  snprintf(out->triple, sizeof out->triple, "%s", d->triple);
  snprintf(out->cpu, sizeof out->cpu, "%s", d->cpu);
  if (d->arch == KL_ARCH_AMDGPU) {
    if (parse_amdgpu_suffix(target, out->features, sizeof out->features, err, errlen) != KL_OK) return KL_ERR;
    if (!out->features[0]) snprintf(out->features, sizeof out->features, "%s", d->features);
    return KL_OK;
  }
  if (target[n] == ':') {
    kl_errf(err, errlen, "target '%s': NVPTX targets take no feature suffix", target);
    return KL_ERR;
  }
  snprintf(out->features, sizeof out->features, "%s", d->features);
  return KL_OK;
}

static LLVMCodeGenOptLevel cg_level(int opt_level) {
  switch (opt_level) {
    case 0: return LLVMCodeGenLevelNone;
    case 1: return LLVMCodeGenLevelLess;
    case 2: return LLVMCodeGenLevelDefault;
    default: return LLVMCodeGenLevelAggressive;
  }
}

/* host_object: the target machine of host objects (what the host JIT compiled with): PIC,
 * the JIT code model; otherwise PIC for AMDGPU and the defaults elsewhere. */
static LLVMTargetMachineRef create_tm(const llvm_target *t, int opt_level, bool host_object, char *err, size_t errlen) {
  kl_llvm_init_targets();
  LLVMTargetRef target = NULL;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(t->triple, &target, &msg)) {
    kl_errf(err, errlen, "no LLVM target for triple %s: %s", t->triple, msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return NULL;
  }
  LLVMDisposeMessage(msg);
  LLVMRelocMode reloc = host_object || t->desc->arch == KL_ARCH_AMDGPU ? LLVMRelocPIC : LLVMRelocDefault;
  LLVMCodeModel model = host_object ? LLVMCodeModelJITDefault : LLVMCodeModelDefault;
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, t->triple, t->cpu, t->features, cg_level(opt_level), reloc,
                                                    model);
  if (!tm) kl_errf(err, errlen, "could not create an LLVM target machine for %s (cpu %s)", t->triple, t->cpu);
  return tm;
}

/* Runs the new pass manager's pipeline text on m (level >= 2: loop and SLP vectorization, unrolling). */
static kl_status run_passes(LLVMModuleRef m, LLVMTargetMachineRef tm, const char *pipeline, int opt_level, char *err,
                            size_t errlen) {
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(po, opt_level >= 2);
  LLVMPassBuilderOptionsSetSLPVectorization(po, opt_level >= 2);
  LLVMPassBuilderOptionsSetLoopUnrolling(po, opt_level >= 2);
  LLVMErrorRef e = LLVMRunPasses(m, pipeline, tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (e) {
    char *msg = LLVMGetErrorMessage(e);
    kl_errf(err, errlen, "LLVM optimisation (%s) failed: %s", pipeline, msg);
    LLVMDisposeErrorMessage(msg);
    return KL_ERR;
  }
  return KL_OK;
}

kl_status kl_codegen_optimize(LLVMModuleRef m, LLVMTargetMachineRef tm, int opt_level, char *err, size_t errlen) {
  if (opt_level < 0 || opt_level > 3) opt_level = 3;
  char pipeline[32];
  snprintf(pipeline, sizeof pipeline, "default<O%d>", opt_level);
  return run_passes(m, tm, pipeline, opt_level, err, errlen);
}

/* The architecture part of a triple ("amdgcn" of "amdgcn-amd-amdhsa"). */
static size_t triple_arch_len(const char *t) {
  const char *d = strchr(t, '-');
  return d ? (size_t)(d - t) : strlen(t);
}

/* Sets an empty triple / data layout of m for the target, or checks that the present
 * ones match. Modifies m. */
static kl_status prepare_module(LLVMModuleRef m, const llvm_target *t, LLVMTargetMachineRef tm, char *err,
                                size_t errlen) {
  const char *mt = LLVMGetTarget(m);
  if (mt && mt[0]) {
    size_t a = triple_arch_len(mt), b = triple_arch_len(t->triple);
    if (a != b || strncmp(mt, t->triple, a) != 0) {
      kl_errf(err, errlen, "module triple '%s' does not match target %s (%s)", mt, t->name, t->triple);
      return KL_ERR;
    }
  } else {
    LLVMSetTarget(m, t->triple);
  }
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  char *want = LLVMCopyStringRepOfTargetData(td);
  LLVMDisposeTargetData(td);
  const char *have = LLVMGetDataLayoutStr(m);
  kl_status st = KL_OK;
  if (have && have[0]) {
    if (strcmp(have, want) != 0) {
      kl_errf(err, errlen, "module data layout '%s' does not match target %s ('%s')", have, t->name, want);
      st = KL_ERR;
    }
  } else {
    LLVMSetDataLayout(m, want);
  }
  LLVMDisposeMessage(want);
  return st;
}

kl_status kl_codegen_target_layout(const char *target, char *triple_out, char **dl, char *err, size_t errlen) {
  llvm_target t;
  if (resolve_target(target, &t, err, errlen) != KL_OK) return KL_ERR;
  LLVMTargetMachineRef tm = create_tm(&t, 3, false, err, errlen);
  if (!tm) return KL_ERR;
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  char *s = LLVMCopyStringRepOfTargetData(td);
  *dl = kl_xstrdup(s);
  LLVMDisposeMessage(s);
  LLVMDisposeTargetData(td);
  LLVMDisposeTargetMachine(tm);
  snprintf(triple_out, 64, "%s", t.triple);
  return KL_OK;
}

/* ---- emission ---- */

static int opts_level(const kl_codegen_opts *o) {
  return (o && o->opt_level >= 0 && o->opt_level <= 3) ? o->opt_level : 3;
}

/* LLVM's instruction selector aborts the process ("Cannot select: intrinsic …") when a
 * matrix intrinsic is used on a chip without it. Catch the common cases first. */
static bool chip_in(const char *chip, const char *const *list) {
  for (; *list; list++)
    if (strcmp(chip, *list) == 0) return true;
  return false;
}

static kl_status check_amdgpu_intrinsics(LLVMModuleRef m, const char *chip, char *err, size_t errlen) {
  static const char *const mfma_chips[] = { "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", NULL };
  static const char *const mfma90a_chips[] = { "gfx90a", "gfx940", "gfx941", "gfx942", NULL };
  static const char *const gfx94x[] = { "gfx940", "gfx941", "gfx942", NULL };
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
    size_t len;
    const char *name = LLVMGetValueName2(f, &len);
    const char *need = NULL;
    bool ok = true;
    if (strncmp(name, "llvm.amdgcn.mfma.", 17) == 0) {
      if (strstr(name, "fp8") || strstr(name, "bf8") || strstr(name, "xf32") || strstr(name, "16x16x32i8") ||
          strstr(name, "32x32x16i8")) {
        ok = chip_in(chip, gfx94x);
        need = "gfx940/gfx941/gfx942";
      } else if (strstr(name, "f64") || strstr(name, "bf16.1k")) {
        ok = chip_in(chip, mfma90a_chips);
        need = "gfx90a or gfx94x";
      } else {
        ok = chip_in(chip, mfma_chips);
        need = "an MFMA chip (gfx908, gfx90a, gfx94x)";
      }
    } else if (strncmp(name, "llvm.amdgcn.smfmac.", 19) == 0) {
      ok = chip_in(chip, gfx94x);
      need = "gfx940/gfx941/gfx942";
    } else if (strncmp(name, "llvm.amdgcn.wmma.", 17) == 0 || strncmp(name, "llvm.amdgcn.swmmac.", 19) == 0) {
      ok = strncmp(chip, "gfx11", 5) == 0 || strncmp(chip, "gfx12", 5) == 0;
      need = "a WMMA chip (gfx11xx, gfx12xx)";
    }
    if (!ok) {
      kl_errf(err, errlen, "intrinsic %s is not available on %s (needs %s)", name, chip, need);
      return KL_ERR;
    }
  }
  return KL_OK;
}

/* ---- LLVM diagnostics ---- */

static void diag_cb(LLVMDiagnosticInfoRef di, void *user) {
  kl_llvm_diag *d = user;
  if (LLVMGetDiagInfoSeverity(di) != LLVMDSError) return;
  char *m = LLVMGetDiagInfoDescription(di);
  if (d->errors == 0) snprintf(d->msg, sizeof d->msg, "%s", m ? m : "error");
  d->errors++;
  LLVMDisposeMessage(m);
}

void kl_llvm_diag_install(LLVMContextRef ctx, kl_llvm_diag *d) {
  d->errors = 0;
  d->msg[0] = '\0';
  LLVMContextSetDiagnosticHandler(ctx, diag_cb, d);
}

/* One emission: the parsed target, the optimised clone and its target machine, with
 * the context's diagnostic handler redirected into diag until end_emit. */
typedef struct emit_state {
  llvm_target t;
  LLVMModuleRef clone;
  LLVMTargetMachineRef tm;
  LLVMContextRef ctx;
  LLVMDiagnosticHandler old_handler;
  void *old_diag_ctx;
  kl_llvm_diag diag;
  kl_codegen_times *times; /* the options', or NULL */
  bool in_place;           /* clone is the caller's module (kl_codegen_opts.in_place) */
} emit_state;

static void end_emit(emit_state *s) {
  if (s->clone && !s->in_place) LLVMDisposeModule(s->clone);
  if (s->tm) LLVMDisposeTargetMachine(s->tm);
  if (s->ctx) LLVMContextSetDiagnosticHandler(s->ctx, s->old_handler, s->old_diag_ctx);
  s->clone = NULL;
  s->tm = NULL;
  s->ctx = NULL;
}

/* Reports an LLVM error diagnostic raised since the handler was installed. */
static kl_status diag_check(emit_state *s, const char *stage, char *err, size_t errlen) {
  if (s->diag.errors == 0) return KL_OK;
  kl_errf(err, errlen, "LLVM %s for %s: %s", stage, s->t.name, s->diag.msg);
  return KL_ERR;
}

/* Parses the target, applies option features, verifies, clones, prepares and
 * optimises the module. On failure everything is released (end_emit is done). */
static kl_status begin_emit(emit_state *s, LLVMModuleRef m, const char *target, const kl_codegen_opts *opts,
                            const kl_arch *want, bool optimize, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  if (!m) {
    kl_errf(err, errlen, "codegen: no module");
    return KL_ERR;
  }
  llvm_target *t = &s->t;
  if (resolve_target(target, t, err, errlen) != KL_OK) return KL_ERR;
  if (want && t->desc->arch != *want) {
    kl_errf(err, errlen, "target '%s' is not an %s target", target, kl_arch_name(*want));
    return KL_ERR;
  }
  if (opts && opts->features) {
    if (strlen(opts->features) >= sizeof t->features) {
      kl_errf(err, errlen, "codegen: feature string too long");
      return KL_ERR;
    }
    snprintf(t->features, sizeof t->features, "%s", opts->features);
  }
  int level = opts_level(opts);
  s->times = opts ? opts->times : NULL;
  double t0 = now_ms();
  /* Verify before cloning: cloning an invalid module can crash. */
  char *msg = NULL;
  if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
    kl_errf(err, errlen, "invalid LLVM module for %s: %s", t->name, msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return KL_ERR;
  }
  LLVMDisposeMessage(msg);
  s->tm = create_tm(t, level, want && *want == KL_ARCH_HOST, err, errlen);
  if (!s->tm) return KL_ERR;
  /* LLVM's default diagnostic handler calls exit(1) on errors (e.g. too much LDS). */
  s->ctx = LLVMGetModuleContext(m);
  s->old_handler = LLVMContextGetDiagnosticHandler(s->ctx);
  s->old_diag_ctx = LLVMContextGetDiagnosticContext(s->ctx);
  kl_llvm_diag_install(s->ctx, &s->diag);
  s->in_place = opts && opts->in_place;
  s->clone = s->in_place ? m : LLVMCloneModule(m);
  if (prepare_module(s->clone, t, s->tm, err, errlen) != KL_OK) goto fail;
  if (t->desc->arch == KL_ARCH_AMDGPU && check_amdgpu_intrinsics(s->clone, t->name, err, errlen) != KL_OK) goto fail;
  /* InstCombine is slow on the insert chains of wide private vectors (wide_private.h) */
  if (optimize) kl_llvm_scalarize_wide_private(s->clone, 32);
  if (optimize && kl_codegen_optimize(s->clone, s->tm, level, err, errlen) != KL_OK) goto fail;
  /* the NVPTX selector is slow on lanes of vector casts (lane_casts.h) and on long runs of
   * stores (store_runs.h: after the load-store vectorizer, whose chains the barriers end) */
  if (optimize && t->desc->arch == KL_ARCH_NVPTX) {
    kl_llvm_scalarize_lane_casts(s->clone);
    if (run_passes(s->clone, s->tm, "function(load-store-vectorizer)", level, err, errlen) != KL_OK) goto fail;
    kl_llvm_break_store_runs(s->clone, 16);
  }
  if (diag_check(s, "optimisation", err, errlen) != KL_OK) goto fail;
  if (s->times) s->times->opt_ms += now_ms() - t0;
  return KL_OK;
fail:
  end_emit(s);
  return KL_ERR;
}

static kl_status emit_to_binary(emit_state *s, LLVMCodeGenFileType ft, kl_binary *out, char *err, size_t errlen) {
  LLVMMemoryBufferRef buf = NULL;
  char *msg = NULL;
  double t0 = now_ms();
  LLVMBool failed = LLVMTargetMachineEmitToMemoryBuffer(s->tm, s->clone, ft, &msg, &buf);
  if (s->times) s->times->codegen_ms += now_ms() - t0;
  if (failed) {
    kl_errf(err, errlen, "LLVM code generation (%s) failed: %s", s->t.name, msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return KL_ERR;
  }
  LLVMDisposeMessage(msg);
  if (diag_check(s, "code generation", err, errlen) != KL_OK) {
    LLVMDisposeMemoryBuffer(buf);
    return KL_ERR;
  }
  size_t n = LLVMGetBufferSize(buf);
  out->arch = s->t.desc->arch;
  out->size = n;
  out->data = kl_xmalloc(n + 1);
  memcpy(out->data, LLVMGetBufferStart(buf), n);
  ((char *)out->data)[n] = '\0';
  LLVMDisposeMemoryBuffer(buf);
  if (out->arch == KL_ARCH_NVPTX && ft == LLVMAssemblyFile) { /* clusters: codegen/ptx_cluster.h */
    char *text = out->data;
    if (!kl_ptx_add_cluster_dims(s->clone, &text, &out->size)) {
      out->data = text;
      kl_errf(err, errlen, "codegen (%s): no .entry for a clustered kernel in the PTX", s->t.name);
      return KL_ERR;
    }
    out->data = text;
  }
  return KL_OK;
}

kl_status kl_codegen_amdgpu_object(LLVMModuleRef m, const char *target, const kl_codegen_opts *opts, kl_binary *out,
                                   char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  emit_state s;
  static const kl_arch amdgpu = KL_ARCH_AMDGPU;
  if (begin_emit(&s, m, target, opts, &amdgpu, true, err, errlen) != KL_OK) return KL_ERR;
  kl_status st = emit_to_binary(&s, LLVMObjectFile, out, err, errlen);
  end_emit(&s);
  return st;
}

static const char *tmp_dir(void) {
  const char *d = getenv("TMPDIR");
  return (d && d[0]) ? d : "/tmp";
}

static kl_status write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return KL_ERR;
    }
    c += w;
    n -= (size_t)w;
  }
  return KL_OK;
}

static kl_status read_file(const char *path, kl_binary *out) {
  FILE *f = fopen(path, "rb");
  if (!f) return KL_ERR;
  if (fseek(f, 0, SEEK_END) != 0) {
    fclose(f);
    return KL_ERR;
  }
  long n = ftell(f);
  if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return KL_ERR;
  }
  out->data = kl_xmalloc((size_t)n + 1);
  out->size = (size_t)n;
  size_t r = fread(out->data, 1, (size_t)n, f);
  fclose(f);
  if (r != (size_t)n) {
    kl_binary_free(out);
    return KL_ERR;
  }
  return KL_OK;
}

kl_status kl_codegen_link_hsaco(const void *obj, size_t size, kl_binary *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  char in_path[4096], out_path[4096];
  snprintf(in_path, sizeof in_path, "%s/kiln-XXXXXX.o", tmp_dir());
  snprintf(out_path, sizeof out_path, "%s/kiln-XXXXXX.hsaco", tmp_dir());
  int fd = mkstemps(in_path, 2);
  if (fd < 0) {
    kl_errf(err, errlen, "hsaco link: cannot create a temporary file in %s: %s", tmp_dir(), strerror(errno));
    return KL_ERR;
  }
  if (write_all(fd, obj, size) != KL_OK) {
    kl_errf(err, errlen, "hsaco link: cannot write %s: %s", in_path, strerror(errno));
    close(fd);
    unlink(in_path);
    return KL_ERR;
  }
  close(fd);
  int ofd = mkstemps(out_path, 6);
  if (ofd < 0) {
    kl_errf(err, errlen, "hsaco link: cannot create a temporary file in %s: %s", tmp_dir(), strerror(errno));
    unlink(in_path);
    return KL_ERR;
  }
  close(ofd);
  const char *argv[] = { "ld.lld", "-shared", "--no-undefined", in_path, "-o", out_path };
  char lerr[1024];
  int rc = kl_lld_link_elf(argv, (int)KL_NELEM(argv), lerr, sizeof lerr);
  kl_status st = KL_OK;
  if (rc != 0) {
    kl_errf(err, errlen, "hsaco link (lld) failed: %s", lerr);
    st = KL_ERR;
  } else if (read_file(out_path, out) != KL_OK) {
    kl_errf(err, errlen, "hsaco link: cannot read back %s: %s", out_path, strerror(errno));
    st = KL_ERR;
  }
  out->arch = KL_ARCH_AMDGPU;
  unlink(in_path);
  unlink(out_path);
  return st;
}

/* The host object is compiled exactly as the host device's JIT used to compile bitcode
 * at load time: O3 for this CPU (its name and features), PIC, the JIT code model (large
 * on x86-64), so the kernels' code is the same; runtime/device_host_loader.c links it. */
static kl_status emit_host_object(LLVMModuleRef m, const kl_codegen_opts *opts, kl_binary *out, char *err,
                                  size_t errlen) {
  emit_state s;
  static const kl_arch host = KL_ARCH_HOST;
  if (begin_emit(&s, m, "host", opts, &host, true, err, errlen) != KL_OK) return KL_ERR;
  kl_status st = emit_to_binary(&s, LLVMObjectFile, out, err, errlen);
  end_emit(&s);
  return st;
}

kl_status kl_codegen_emit(LLVMModuleRef m, const char *target, const kl_codegen_opts *opts, kl_binary *out, char *err,
                          size_t errlen) {
  memset(out, 0, sizeof *out);
  const kl_target *t = kl_codegen_target_lookup(target, err, errlen);
  if (!t) return KL_ERR;
  switch (t->arch) {
    case KL_ARCH_HOST: return emit_host_object(m, opts, out, err, errlen);
    case KL_ARCH_AMDGPU: {
      kl_binary obj;
      if (kl_codegen_amdgpu_object(m, target, opts, &obj, err, errlen) != KL_OK) return KL_ERR;
      kl_status st = kl_codegen_link_hsaco(obj.data, obj.size, out, err, errlen);
      kl_binary_free(&obj);
      return st;
    }
    case KL_ARCH_NVPTX:
    default: {
      static const kl_arch nvptx = KL_ARCH_NVPTX;
      emit_state s;
      if (begin_emit(&s, m, target, opts, &nvptx, true, err, errlen) != KL_OK) return KL_ERR;
      kl_status st = emit_to_binary(&s, LLVMAssemblyFile, out, err, errlen);
      end_emit(&s);
      return st;
    }
  }
}

kl_status kl_codegen_emit_asm(LLVMModuleRef m, const char *target, const kl_codegen_opts *opts, kl_binary *out,
                              char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  emit_state s;
  if (begin_emit(&s, m, target, opts, NULL, true, err, errlen) != KL_OK) return KL_ERR;
  kl_status st = emit_to_binary(&s, LLVMAssemblyFile, out, err, errlen);
  end_emit(&s);
  return st;
}

kl_status kl_codegen_optimized_ir(LLVMModuleRef m, const char *target, const kl_codegen_opts *opts, kl_binary *out,
                                  char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  const kl_target *t = kl_codegen_target_lookup(target, err, errlen);
  if (!t) return KL_ERR;
  emit_state s;
  if (begin_emit(&s, m, target, opts, &t->arch, true, err, errlen) != KL_OK) return KL_ERR;
  char *text = LLVMPrintModuleToString(s.clone);
  out->arch = t->arch;
  out->size = strlen(text);
  out->data = kl_xmalloc(out->size + 1);
  memcpy(out->data, text, out->size + 1);
  LLVMDisposeMessage(text);
  end_emit(&s);
  return KL_OK;
}
