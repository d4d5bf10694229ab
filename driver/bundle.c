/* bundle.c — kl_program_save / kl_program_load: a program's variants to and from the
 * bundle format of bundle.h (encoding and validation: kiln_client.c). Saving writes format
 * version 3 (steps with tokens and waits); a version 2 bundle still loads (its steps are
 * launches in order with a token chain; the plan rebuilt from its IR must have those
 * launches plus workspace steps only, kl_plan_compare_v2, and the program runs the
 * rebuilt plan). */
#include "driver/bundle.h"
#include "core/dialect_rock.h"
#include "core/parse.h"
#include "core/print.h"
#include "core/target.h"
#include "core/verify.h"
#include "passes/lower_to_llvm.h"
#include "codegen/codegen_target.h"
#include "codegen/hsaco.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRODUCER "kiln 0.1.0"
/* The IR text is printed in generic form with locations, so a loaded program reports
 * errors (a missing input, a wrong layout) at the user's original source lines. */
#define IR_FLAGS (KL_PRINT_GENERIC | KL_PRINT_LOCS)


/* ---------------------------------------------------------------- saving ---- */
static kl_op *find_kernel(kl_op *module, const char *name) {
  for (kl_op *o = kl_module_body(module)->first; o; o = o->next) {
    const char *s = kl_is_kernel(o) ? kl_op_attr_string(o, "sym_name") : NULL;
    if (s && !strcmp(s, name)) return o;
  }
  return NULL;
}

/* A target's plan as the program holds it, plus its module's IR text (malloc'd in *ir). */
static kl_status describe_target(const kl_program *p, const char *name, kl_bundle_target *T, char **ir, char *err,
                                 size_t errlen) {
  const kl_bundle_target *plan = kl_program_plan(p, name);
  kl_op *module = kl_program_module(p, name);
  if (!plan || !module) {
    snprintf(err, errlen, "save: target '%s' has no compiled module", name);
    return KL_ERR;
  }
  char what[256];
  const char *type = NULL;
  *T = *plan;
  if (kl_plan_describable(plan, what, sizeof what, &type) != KL_OK) {
    snprintf(err, errlen, "save: %s has type %s, which a bundle cannot describe", what, type);
    return KL_ERR;
  }
  *ir = kl_print_op(module, IR_FLAGS);
  T->ir = *ir;
  T->ir_size = strlen(*ir);
  return KL_OK;
}

kl_status kl_program_save_memory(const kl_program *p, void **out, size_t *size, char *err, size_t errlen) {
  *out = NULL;
  *size = 0;
  int nt = kl_program_ntargets(p);
  kl_bundle_target *ts = kl_xcalloc(nt + 1, sizeof *ts);
  char **irs = kl_xcalloc(nt + 1, sizeof *irs);
  kl_status st = KL_OK;
  for (int t = 0; t < nt && st == KL_OK; t++)
    st = describe_target(p, kl_program_target(p, t), &ts[t], &irs[t], err, errlen);
  if (st == KL_OK && kl_bundle_encode(nt, ts, PRODUCER, out, size, err, errlen) != 0) st = KL_ERR;
  for (int t = 0; t < nt; t++) free(irs[t]);
  free(irs);
  free(ts);
  return st;
}

kl_status kl_program_save(const kl_program *p, const char *path, char *err, size_t errlen) {
  void *buf;
  size_t n;
  if (kl_program_save_memory(p, &buf, &n, err, errlen) != KL_OK) return KL_ERR;
  /* write a temporary file next to the target, then rename: a reader never sees half a bundle */
  size_t plen = strlen(path);
  char *tmp = kl_xmalloc(plen + 16);
  snprintf(tmp, plen + 16, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  kl_status st = KL_OK;
  if (!f) {
    snprintf(err, errlen, "save: cannot write '%s': %s", path, strerror(errno));
    st = KL_ERR;
  } else {
    bool ok = fwrite(buf, 1, n, f) == n;
    int e = errno;
    if (fclose(f) != 0 && ok) {
      ok = false;
      e = errno;
    }
    if (!ok) {
      snprintf(err, errlen, "save: writing '%s': %s", path, strerror(e));
      remove(tmp);
      st = KL_ERR;
    } else if (rename(tmp, path) != 0) {
      snprintf(err, errlen, "save: cannot write '%s': %s", path, strerror(errno));
      remove(tmp);
      st = KL_ERR;
    }
  }
  free(tmp);
  free(buf);
  return st;
}

/* ---------------------------------------------------------------- loading ---- */
static void chomp(char *s) {
  size_t n = strlen(s);
  while (n && (s[n - 1] == '\n' || s[n - 1] == ' ')) s[--n] = 0;
}

/* A kernel func of the IR within the target's limits: the launch sizes it was compiled
 * for (what the plan, rebuilt from the IR, launches it with). */
static kl_status kernel_in_limits(const kl_target *desc, kl_op *f, const char *name, char *why, size_t n) {
  int64_t grid = 1, block = 1, lds = kl_kernel_lds_bytes(f);
  kl_op_attr_i64(f, "grid_size", &grid);
  kl_op_attr_i64(f, "block_size", &block);
  if (grid < 1 || grid > 0x7fffffff) {
    snprintf(why, n, "kernel %s: grid_size %lld in the IR is out of range (1..2^31-1)", name, (long long)grid);
    return KL_ERR;
  }
  if (block < 1 || block > desc->max_workgroup_size) {
    snprintf(why, n, "kernel %s: block_size %lld in the IR is out of range for target '%s' (1..%d)", name,
             (long long)block, desc->name, desc->max_workgroup_size);
    return KL_ERR;
  }
  if (lds > desc->lds_bytes) {
    snprintf(why, n, "kernel %s declares %lld LDS bytes in the IR, more than target '%s' has (%lld)", name,
             (long long)lds, desc->name, (long long)desc->lds_bytes);
    return KL_ERR;
  }
  return KL_OK;
}

/* Host binaries are never handed to LLVM as they come: the kernel is lowered and compiled
 * again from the IR (authoritative, already parsed and verified by kiln) and its object
 * must be the bundle's byte for byte. So a damaged or crafted object section gives this
 * error instead of reaching LLVM's object reader and JITLink (the loader still treats a
 * bundle's binaries as untrusted: KL_LOAD_TRUSTED is for binaries compiled in-process). */
static kl_status host_binary_agrees(kl_ctx *ctx, const kl_target *desc, kl_op *f, const kl_bundle_target *T,
                                    const kl_bundle_kernel *K, char *why, size_t n) {
  LLVMContextRef lc = LLVMContextCreate();
  LLVMModuleRef lm = NULL;
  kl_status st = kl_lower_kernel_to_llvm(f, desc, lc, &lm);
  if (st != KL_OK) {
    char *d = kl_diag_take(ctx);
    chomp(d);
    snprintf(why, n, "kernel %s does not lower to LLVM:\n%s", K->name, *d ? d : "(no diagnostic)");
    free(d);
  } else {
    kl_binary bin = { 0 };
    char e[1024] = "";
    st = kl_codegen_emit(lm, T->name, NULL, &bin, e, sizeof e);
    if (st != KL_OK)
      snprintf(why, n, "kernel %s: %s", K->name, e);
    else if (bin.size != K->binary_size || memcmp(bin.data, K->binary, bin.size)) {
      snprintf(why, n,
               "the binary of kernel %s (%zu bytes) is not the host object of its IR (%zu bytes): the bundle is "
               "damaged, or it was "
               "written by a kiln with another LLVM version or for another host CPU",
               K->name, K->binary_size, bin.size);
      st = KL_ERR;
    }
    kl_binary_free(&bin);
    LLVMDisposeModule(lm);
  }
  LLVMContextDispose(lc);
  return st;
}

/* An AMDGPU code object must hold the kernel, for the target's chip, compiled for the
 * IR's block size (its .max_flat_workgroup_size) and with the IR's LDS (its
 * .group_segment_fixed_size); kiln reads the ELF and the metadata itself (hsaco.h). */
static kl_status hsaco_agrees(const kl_bundle_target *T, const kl_bundle_kernel *K, kl_op *f, char *why, size_t n) {
  kl_hsaco_info info;
  char e[512] = "";
  if (kl_hsaco_parse(K->binary, K->binary_size, &info, e, sizeof e) != KL_OK) {
    snprintf(why, n, "the binary of kernel %s is not a valid code object: %s", K->name, e);
    return KL_ERR;
  }
  kl_status st = KL_ERR;
  int64_t block = 1, lds = kl_kernel_lds_bytes(f);
  kl_op_attr_i64(f, "block_size", &block);
  const kl_hsaco_kernel *hk = kl_hsaco_find_kernel(&info, K->name);
  if (strncmp(info.chip, T->name, strlen(info.chip)) ||
      (T->name[strlen(info.chip)] && T->name[strlen(info.chip)] != ':'))
    snprintf(why, n, "the binary of kernel %s is for %s, not %s", K->name, info.chip, T->name);
  else if (!hk || !hk->has_function_symbol || !hk->has_kd_symbol)
    snprintf(why, n, "the binary of kernel %s does not define the kernel", K->name);
  else if (hk->max_flat_workgroup_size != block)
    snprintf(why, n, "the binary of kernel %s was compiled for workgroups of %lld threads, the IR says block_size %lld",
             K->name, (long long)hk->max_flat_workgroup_size, (long long)block);
  else if (hk->lds_bytes != lds)
    snprintf(why, n, "the binary of kernel %s declares %lld LDS bytes, the IR %lld", K->name, (long long)hk->lds_bytes,
             (long long)lds);
  else
    st = KL_OK;
  kl_hsaco_info_free(&info);
  return st;
}

/* Ops printed without a location get the position in the bundle's text when parsed;
 * they had none, so they get none again (and a loaded program saves to the same bytes). */
static kl_walk_result unlocate(kl_op *op, void *user) {
  if (op->loc.file == (const char *)user) op->loc = KL_LOC_UNKNOWN;
  return KL_WALK_ADVANCE;
}

kl_program *kl_program_from_bundle(kl_ctx *ctx, const kl_bundle *b, const char *path, char *err, size_t errlen) {
  const char *where = path ? path : "bundle";
  int nt = kl_bundle_ntargets(b);
  kl_program_part *parts = kl_xcalloc(nt + 1, sizeof *parts);
  kl_kernel_info **kinfos = kl_xcalloc(nt + 1, sizeof *kinfos);
  kl_binary_info **bins = kl_xcalloc(nt + 1, sizeof *bins);
  kl_program *p = NULL;
  char msg[2048] = "";
  for (int t = 0; t < nt; t++) {
    const kl_bundle_target *T = kl_bundle_target_at(b, t);
    const kl_target *desc = kl_target_lookup(T->name);
    if (!desc) {
      kl_sb sb = { 0 };
      for (int i = 0; i < kl_target_count(); i++) kl_sb_printf(&sb, "%s%s", i ? ", " : "", kl_target_at(i)->name);
      snprintf(err, errlen, "load: %s: target '%s' is unknown to this kiln (known: %s)", where, T->name,
               kl_sb_str(&sb));
      kl_sb_free(&sb);
      goto done;
    }
    if (strcmp(kl_arch_name(desc->arch), T->arch) || strcmp(kl_binary_format_name(desc->arch), T->binary_format)) {
      snprintf(err, errlen, "load: %s: target '%s' is %s with %s binaries, the bundle says %s with %s binaries", where,
               T->name, kl_arch_name(desc->arch), kl_binary_format_name(desc->arch), T->arch, T->binary_format);
      goto done;
    }
    char fname[512];
    snprintf(fname, sizeof fname, "%s[%s]", where, T->name);
    kl_op *module = kl_parse_module(ctx, T->ir, T->ir_size, fname);
    if (!module || kl_verify(module) != KL_OK) {
      char *d = kl_diag_take(ctx);
      chomp(d);
      snprintf(err, errlen, "load: %s: the IR of target '%s' does not %s:\n%s", where, T->name,
               module ? "verify" : "parse", *d ? d : "(no diagnostic)");
      free(d);
      goto done;
    }
    kl_walk_pre(module, unlocate, (void *)kl_intern(ctx, fname));
    kinfos[t] = kl_xcalloc(T->nkernels + 1, sizeof **kinfos);
    bins[t] = kl_xcalloc(T->nkernels + 1, sizeof **bins);
    for (int k = 0; k < T->nkernels; k++) {
      const kl_bundle_kernel *K = &T->kernels[k];
      if (K->grid[1] != 1 || K->grid[2] != 1 || K->block[1] != 1 || K->block[2] != 1) {
        snprintf(err, errlen,
                 "load: %s: target '%s': kernel %s has a multi-dimensional grid or block, which this kiln does not run",
                 where, T->name, K->name);
        goto done;
      }
      kl_op *f = find_kernel(module, K->name);
      if (f && kernel_in_limits(desc, f, K->name, msg, sizeof msg) != KL_OK) {
        snprintf(err, errlen, "load: %s: target '%s': the plan section disagrees with the IR: %s", where, T->name, msg);
        goto done;
      }
    }
    /* the plan the IR makes (authoritative) must be the plan section, before any binary
     * is looked at */
    kl_plan ir_plan;
    kl_status pst = kl_plan_build(&ir_plan, module, T->name, desc, msg, sizeof msg);
    if (pst == KL_OK)
      pst = (kl_bundle_format_version(b) == 2 ? kl_plan_compare_v2 : kl_plan_compare)(&ir_plan.t, T, msg, sizeof msg);
    kl_plan_free(&ir_plan);
    if (pst != KL_OK) {
      snprintf(err, errlen, "load: %s: target '%s': the plan section disagrees with the IR: %s", where, T->name, msg);
      goto done;
    }
    for (int k = 0; k < T->nkernels; k++) {
      const kl_bundle_kernel *K = &T->kernels[k];
      kl_op *f = find_kernel(module, K->name);
      if (f &&
          ((desc->arch == KL_ARCH_HOST && host_binary_agrees(ctx, desc, f, T, K, msg, sizeof msg) != KL_OK) ||
           (desc->arch == KL_ARCH_AMDGPU && hsaco_agrees(T, K, f, msg, sizeof msg) != KL_OK))) {
        snprintf(err, errlen, "load: %s: target '%s': %s", where, T->name, msg);
        goto done;
      }
      kl_kernel_info *ki = &kinfos[t][k];
      ki->name = K->name;
      ki->nargs = K->nargs;
      ki->ninputs = K->ninputs;
      bins[t][k] = (kl_binary_info){ T->name, K->binary, K->binary_size };
    }
    parts[t] = (kl_program_part){ T->name, module, T->nkernels, kinfos[t], bins[t] };
  }
  p = kl_program_assemble(ctx, nt, parts, msg, sizeof msg);
  if (!p) {
    snprintf(err, errlen, "load: %s: %s", where, msg);
    goto done;
  }
done:
  for (int t = 0; t < nt; t++) {
    free(kinfos[t]);
    free(bins[t]);
  }
  free(kinfos);
  free(bins);
  free(parts);
  return p;
}

kl_program *kl_program_load(kl_ctx *ctx, const char *path, char *err, size_t errlen) {
  char msg[2048];
  kl_bundle *b = kl_bundle_open_file(path, msg, sizeof msg);
  if (!b) {
    snprintf(err, errlen, "load: %s", msg);
    return NULL;
  }
  kl_program *p = kl_program_from_bundle(ctx, b, path, err, errlen);
  kl_bundle_close(b);
  return p;
}

kl_program *kl_program_load_for_device(kl_ctx *ctx, const char *path, kl_device *dev, char *err, size_t errlen) {
  kl_program *p = kl_program_load(ctx, path, err, errlen);
  if (!p) return NULL;
  const kl_device_info *info = kl_device_get_info(dev);
  if (kl_program_target_for_device(p, info) < 0) {
    kl_sb sb = { 0 };
    for (int i = 0; i < kl_program_ntargets(p); i++) kl_sb_printf(&sb, "%s%s", i ? ", " : "", kl_program_target(p, i));
    snprintf(err, errlen, "load: %s has no binary for device %s (arch %s); the bundle has: %s", path, info->name,
             info->arch, kl_sb_str(&sb));
    kl_sb_free(&sb);
    kl_program_release(p);
    return NULL;
  }
  return p;
}
