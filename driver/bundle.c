/* bundle.c — kl_program_save / kl_program_load: a program's variants to and from the
 * bundle format of bundle.h (encoding and validation: kiln_client.c). */
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
typedef struct save_mem {   /* what the descriptions point to, freed after encoding */
  void **ptrs; int n;
} save_mem;
static void *keep(save_mem *m, void *p) {
  m->ptrs = kl_xrealloc(m->ptrs, (size_t)(m->n + 1) * sizeof *m->ptrs);
  m->ptrs[m->n++] = p;
  return p;
}

static kl_status tensor_desc(const kl_type *t, kl_bundle_tensor *out, save_mem *m, char *err, size_t errlen, const char *what) {
  const kl_type *elem = kl_type_is_shaped(t) ? t->elem : t;
  const char *en = kl_scalar_name(elem->kind);
  if (!en) { snprintf(err, errlen, "save: %s has type %s, which a bundle cannot describe", what, kl_type_str(t)); return KL_ERR; }
  out->type = kl_type_str(t);
  out->elem = en;
  out->elem_bytes = (kl_type_bits(elem) + 7) / 8;
  out->rank = kl_type_is_shaped(t) ? t->rank : 0;
  int64_t *shape = keep(m, kl_xcalloc(out->rank + 1, sizeof *shape));
  int64_t *strides = keep(m, kl_xcalloc(out->rank + 1, sizeof *strides));
  for (int i = 0; i < out->rank; i++) shape[i] = t->shape[i];
  if (out->rank && t->strides) for (int i = 0; i < out->rank; i++) strides[i] = t->strides[i];
  else kl_row_major_strides(out->rank, shape, strides);
  out->shape = shape; out->strides = strides;
  return KL_OK;
}

static kl_op *find_kernel(kl_op *module, const char *name) {
  for (kl_op *o = kl_module_body(module)->first; o; o = o->next) {
    const char *s = kl_is_kernel(o) ? kl_op_attr_string(o, "sym_name") : NULL;
    if (s && !strcmp(s, name)) return o;
  }
  return NULL;
}

static int64_t span_elems(const kl_bundle_tensor *t) {
  int64_t span = 1;
  for (int i = 0; i < t->rank; i++) { if (t->shape[i] == 0) return 0; span += (t->shape[i] - 1) * t->strides[i]; }
  return span;
}

static kl_status describe_target(const kl_program *p, const char *name, kl_bundle_target *T, save_mem *m, char *err, size_t errlen) {
  const kl_target *desc = kl_target_lookup(name);
  kl_op *module = kl_program_module(p, name);
  if (!desc || !module) { snprintf(err, errlen, "save: target '%s' has no compiled module", name); return KL_ERR; }
  T->name = name;
  T->arch = kl_arch_name(desc->arch);
  T->binary_format = kl_binary_format_name(desc->arch);
  char *ir = keep(m, kl_print_op(module, IR_FLAGS));
  T->ir = ir; T->ir_size = strlen(ir);
  char what[256];
  T->nkernels = kl_program_nkernels(p, name);
  kl_bundle_kernel *ks = keep(m, kl_xcalloc(T->nkernels + 1, sizeof *ks));
  T->kernels = ks;
  for (int k = 0; k < T->nkernels; k++) {
    const kl_kernel_info *ki = kl_program_kernel(p, name, k);
    const kl_binary_info *bi = kl_program_binary(p, name, ki->name);
    kl_op *f = find_kernel(module, ki->name);
    kl_block *body = f ? f->regions[0].first : NULL;
    if (!bi || !body || body->nargs != ki->nargs) { snprintf(err, errlen, "save: target '%s': kernel %s is incomplete", name, ki->name); return KL_ERR; }
    kl_bundle_kernel *K = &ks[k];
    K->name = ki->name; K->kind = ki->kind ? ki->kind : ""; K->perf_config = ki->perf_config ? ki->perf_config : "";
    K->grid[0] = ki->grid_size; K->grid[1] = K->grid[2] = 1;
    K->block[0] = ki->block_size; K->block[1] = K->block[2] = 1;
    K->lds_bytes = ki->lds_bytes;
    K->nargs = ki->nargs; K->ninputs = ki->ninputs;
    K->binary = bi->data; K->binary_size = bi->size;
    kl_bundle_arg *as = keep(m, kl_xcalloc(ki->nargs + 1, sizeof *as));
    for (int a = 0; a < ki->nargs; a++) {
      snprintf(what, sizeof what, "kernel %s argument %d", ki->name, a);
      as[a].name = ki->arg_names[a] ? ki->arg_names[a] : "";
      if (tensor_desc(body->args[a]->type, &as[a].t, m, err, errlen, what) != KL_OK) return KL_ERR;
    }
    K->args = as;
  }
  T->nslots = kl_program_nslots(p, name);
  kl_bundle_slot *ss = keep(m, kl_xcalloc(T->nslots + 1, sizeof *ss));
  T->slots = ss;
  for (int s = 0; s < T->nslots; s++) {
    const char *kind = NULL, *pname = NULL;
    kl_program_slot(p, name, s, &kind, &pname);
    ss[s].kind = !strcmp(kind, "param") ? KL_BUNDLE_PARAM : !strcmp(kind, "constant") ? KL_BUNDLE_CONSTANT : KL_BUNDLE_RESULT;
    ss[s].name = ss[s].kind == KL_BUNDLE_PARAM ? pname : "";
    snprintf(what, sizeof what, "slot %d", s);
    if (tensor_desc(kl_program_slot_type(p, name, s), &ss[s].t, m, err, errlen, what) != KL_OK) return KL_ERR;
    if (ss[s].kind == KL_BUNDLE_CONSTANT) {
      const kl_tensor *c = kl_program_slot_constant(p, name, s);
      int64_t span = span_elems(&ss[s].t);
      size_t bytes = (size_t)span * (size_t)ss[s].t.elem_bytes;
      if (!c || (size_t)kl_dtype_size(c->dtype) != (size_t)ss[s].t.elem_bytes ||
          (size_t)(c->offset + span) * kl_dtype_size(c->dtype) > c->nbytes) {
        snprintf(err, errlen, "save: target '%s': constant slot %d does not match its type %s", name, s, ss[s].t.type);
        return KL_ERR;
      }
      ss[s].data = (const char *)c->data + c->offset * (int64_t)kl_dtype_size(c->dtype);
      ss[s].data_size = bytes;
    }
  }
  T->nsteps = kl_program_nsteps(p, name);
  kl_bundle_step *st = keep(m, kl_xcalloc(T->nsteps + 1, sizeof *st));
  T->steps = st;
  for (int i = 0; i < T->nsteps; i++) {
    const kl_plan_step *ps = kl_program_step(p, name, i);
    st[i] = (kl_bundle_step){ KL_BUNDLE_LAUNCH, ps->kernel, ps->nargs, ps->args };
  }
  T->noutputs = kl_program_noutputs(p, name);
  int *outs = keep(m, kl_xcalloc(T->noutputs + 1, sizeof *outs));
  for (int i = 0; i < T->noutputs; i++) outs[i] = kl_program_output_slot(p, name, i);
  T->outputs = outs;
  return KL_OK;
}

kl_status kl_program_save_memory(const kl_program *p, void **out, size_t *size, char *err, size_t errlen) {
  *out = NULL; *size = 0;
  int nt = kl_program_ntargets(p);
  kl_bundle_target *ts = kl_xcalloc(nt + 1, sizeof *ts);
  save_mem m = {0};
  kl_status st = KL_OK;
  for (int t = 0; t < nt && st == KL_OK; t++) st = describe_target(p, kl_program_target(p, t), &ts[t], &m, err, errlen);
  if (st == KL_OK && kl_bundle_encode(nt, ts, PRODUCER, out, size, err, errlen) != 0) st = KL_ERR;
  for (int i = 0; i < m.n; i++) free(m.ptrs[i]);
  free(m.ptrs);
  free(ts);
  return st;
}

kl_status kl_program_save(const kl_program *p, const char *path, char *err, size_t errlen) {
  void *buf; size_t n;
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
    if (fclose(f) != 0 && ok) { ok = false; e = errno; }
    if (!ok) { snprintf(err, errlen, "save: writing '%s': %s", path, strerror(e)); remove(tmp); st = KL_ERR; }
    else if (rename(tmp, path) != 0) { snprintf(err, errlen, "save: cannot write '%s': %s", path, strerror(errno)); remove(tmp); st = KL_ERR; }
  }
  free(tmp);
  free(buf);
  return st;
}

/* ---------------------------------------------------------------- loading ---- */
static void chomp(char *s) { size_t n = strlen(s); while (n && (s[n - 1] == '\n' || s[n - 1] == ' ')) s[--n] = 0; }

static kl_status check_plan(const kl_program *p, const kl_bundle_target *T, char *why, size_t n) {
  const char *t = T->name;
  if (kl_program_nslots(p, t) != T->nslots) { snprintf(why, n, "%d slots in the IR, %d in the plan section", kl_program_nslots(p, t), T->nslots); return KL_ERR; }
  for (int s = 0; s < T->nslots; s++) {
    const kl_bundle_slot *S = &T->slots[s];
    const char *kind = NULL, *name = NULL;
    const char *type = kl_program_slot(p, t, s, &kind, &name);
    const char *bk = S->kind == KL_BUNDLE_PARAM ? "param" : S->kind == KL_BUNDLE_CONSTANT ? "constant" : "result";
    if (strcmp(kind, bk)) { snprintf(why, n, "slot %d is a %s in the IR, a %s in the plan section", s, kind, bk); return KL_ERR; }
    if (S->kind == KL_BUNDLE_PARAM && strcmp(name, S->name)) { snprintf(why, n, "slot %d is param '%s' in the IR, '%s' in the plan section", s, name, S->name); return KL_ERR; }
    if (strcmp(type, S->t.type)) { snprintf(why, n, "slot %d has type %s in the IR, %s in the plan section", s, type, S->t.type); return KL_ERR; }
    if (S->kind == KL_BUNDLE_CONSTANT && S->data_size) {
      const kl_tensor *c = kl_program_slot_constant(p, t, s);
      const char *d = c ? (const char *)c->data + c->offset * (int64_t)kl_dtype_size(c->dtype) : NULL;
      if (!d || (size_t)c->offset * kl_dtype_size(c->dtype) + S->data_size > c->nbytes || memcmp(d, S->data, S->data_size)) {
        snprintf(why, n, "the data of constant slot %d differs between the IR and the constant section", s);
        return KL_ERR;
      }
    }
  }
  if (kl_program_nsteps(p, t) != T->nsteps) { snprintf(why, n, "%d launches in the IR, %d in the plan section", kl_program_nsteps(p, t), T->nsteps); return KL_ERR; }
  for (int i = 0; i < T->nsteps; i++) {
    const kl_plan_step *ps = kl_program_step(p, t, i);
    const kl_bundle_step *bs = &T->steps[i];
    const kl_kernel_info *k = kl_program_kernel(p, t, ps->kernel);
    if (strcmp(k->name, T->kernels[bs->kernel].name) || ps->nargs != bs->nargs) {
      snprintf(why, n, "step %d launches %s in the IR, %s in the plan section", i, k->name, T->kernels[bs->kernel].name);
      return KL_ERR;
    }
    for (int a = 0; a < ps->nargs; a++)
      if (ps->args[a] != bs->args[a]) { snprintf(why, n, "step %d argument %d is slot %d in the IR, slot %d in the plan section", i, a, ps->args[a], bs->args[a]); return KL_ERR; }
  }
  if (kl_program_noutputs(p, t) != T->noutputs) { snprintf(why, n, "%d outputs in the IR, %d in the plan section", kl_program_noutputs(p, t), T->noutputs); return KL_ERR; }
  for (int i = 0; i < T->noutputs; i++)
    if (kl_program_output_slot(p, t, i) != T->outputs[i]) { snprintf(why, n, "output %d is slot %d in the IR, slot %d in the plan section", i, kl_program_output_slot(p, t, i), T->outputs[i]); return KL_ERR; }
  return KL_OK;
}

/* A plan tensor (element type, shape, strides) against the IR type it describes. */
static kl_status tensor_agrees(const kl_type *t, const kl_bundle_tensor *bt, const char *what, char *why, size_t n) {
  save_mem m = {0};
  kl_bundle_tensor d;
  char e[256];
  kl_status st = tensor_desc(t, &d, &m, e, sizeof e, what);
  if (st != KL_OK) snprintf(why, n, "%s", e);
  else if (strcmp(d.type, bt->type)) { snprintf(why, n, "%s has type %s in the IR, %s in the plan section", what, d.type, bt->type); st = KL_ERR; }
  else if (strcmp(d.elem, bt->elem) || d.rank != bt->rank) { snprintf(why, n, "%s: the element type or rank differs from its type %s", what, d.type); st = KL_ERR; }
  for (int i = 0; st == KL_OK && i < d.rank; i++)
    if (d.shape[i] != bt->shape[i] || d.strides[i] != bt->strides[i]) {
      snprintf(why, n, "%s: dimension %d is %lld (stride %lld) in the IR type %s, %lld (stride %lld) in the plan section", what, i,
               (long long)d.shape[i], (long long)d.strides[i], d.type, (long long)bt->shape[i], (long long)bt->strides[i]);
      st = KL_ERR;
    }
  for (int i = 0; i < m.n; i++) free(m.ptrs[i]);
  free(m.ptrs);
  return st;
}

/* One kernel of the plan section against its func in the IR, which is authoritative: the
 * launch sizes (grid, block, LDS bytes: the ones the kernel was compiled for, within the
 * target's limits), kind, perf config, argument names and layouts. */
static kl_status kernel_agrees(const kl_target *desc, kl_op *f, const kl_bundle_kernel *K, char *why, size_t n) {
  int64_t grid = 1, block = 1, lds = kl_kernel_lds_bytes(f);
  kl_op_attr_i64(f, "grid_size", &grid);
  kl_op_attr_i64(f, "block_size", &block);
  if (grid < 1 || grid > 0x7fffffff) { snprintf(why, n, "kernel %s: grid_size %lld in the IR is out of range (1..2^31-1)", K->name, (long long)grid); return KL_ERR; }
  if (block < 1 || block > desc->max_workgroup_size) {
    snprintf(why, n, "kernel %s: block_size %lld in the IR is out of range for target '%s' (1..%d)", K->name, (long long)block, desc->name, desc->max_workgroup_size);
    return KL_ERR;
  }
  if (lds > desc->lds_bytes) {
    snprintf(why, n, "kernel %s declares %lld LDS bytes in the IR, more than target '%s' has (%lld)", K->name, (long long)lds, desc->name, (long long)desc->lds_bytes);
    return KL_ERR;
  }
  if (K->grid[0] != grid || K->block[0] != block || K->lds_bytes != lds) {
    snprintf(why, n, "kernel %s launches with grid [%lld,%lld,%lld], block [%lld,%lld,%lld], %lld LDS bytes in the plan section; "
             "the IR says grid %lld, block %lld, %lld LDS bytes", K->name, (long long)K->grid[0], (long long)K->grid[1], (long long)K->grid[2],
             (long long)K->block[0], (long long)K->block[1], (long long)K->block[2], (long long)K->lds_bytes, (long long)grid, (long long)block, (long long)lds);
    return KL_ERR;
  }
  const char *kind = kl_op_attr_string(f, "kind"), *pc = kl_op_attr_string(f, "perf_config");
  if (strcmp(kind ? kind : "", K->kind) || strcmp(pc ? pc : "", K->perf_config)) {
    snprintf(why, n, "kernel %s is a '%s' kernel with perf config '%s' in the IR, '%s' with '%s' in the plan section", K->name, kind ? kind : "",
             pc ? pc : "", K->kind, K->perf_config);
    return KL_ERR;
  }
  kl_block *body = f->regions[0].first;
  if (!body || body->nargs != K->nargs) { snprintf(why, n, "kernel %s takes %d arguments in the IR, %d in the plan section", K->name, body ? body->nargs : 0, K->nargs); return KL_ERR; }
  const kl_attr *names = kl_op_attr(f, "arg_names");
  for (int a = 0; a < K->nargs; a++) {
    const char *nm = (names && names->kind == KL_AT_ARRAY && a < names->n && names->elems[a]->kind == KL_AT_STR) ? names->elems[a]->s : "";
    char what[160];
    snprintf(what, sizeof what, "kernel %s argument %d", K->name, a);
    if (strcmp(nm, K->args[a].name)) { snprintf(why, n, "%s is named '%s' in the IR, '%s' in the plan section", what, nm, K->args[a].name); return KL_ERR; }
    if (tensor_agrees(body->args[a]->type, &K->args[a].t, what, why, n) != KL_OK) return KL_ERR;
  }
  return KL_OK;
}

/* Host binaries are never handed to LLVM as they come: the kernel is lowered and compiled
 * again from the IR (authoritative, already parsed and verified by kiln) and its object
 * must be the bundle's byte for byte. So a damaged or crafted object section gives this
 * error instead of reaching LLVM's object reader and JITLink (the loader still treats a
 * bundle's binaries as untrusted: KL_LOAD_TRUSTED is for binaries compiled in-process). */
static kl_status host_binary_agrees(kl_ctx *ctx, const kl_target *desc, kl_op *f, const kl_bundle_target *T, const kl_bundle_kernel *K, char *why,
                                    size_t n) {
  LLVMContextRef lc = LLVMContextCreate();
  LLVMModuleRef lm = NULL;
  kl_status st = kl_lower_kernel_to_llvm(f, desc, lc, &lm);
  if (st != KL_OK) {
    char *d = kl_diag_take(ctx);
    chomp(d);
    snprintf(why, n, "kernel %s does not lower to LLVM:\n%s", K->name, *d ? d : "(no diagnostic)");
    free(d);
  } else {
    kl_binary bin = {0};
    char e[1024] = "";
    st = kl_codegen_emit(lm, T->name, NULL, &bin, e, sizeof e);
    if (st != KL_OK) snprintf(why, n, "kernel %s: %s", K->name, e);
    else if (bin.size != K->binary_size || memcmp(bin.data, K->binary, bin.size)) {
      snprintf(why, n, "the binary of kernel %s (%zu bytes) is not the host object of its IR (%zu bytes): the bundle is damaged, or it was "
               "written by a kiln with another LLVM version or for another host CPU", K->name, K->binary_size, bin.size);
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
  if (strncmp(info.chip, T->name, strlen(info.chip)) || (T->name[strlen(info.chip)] && T->name[strlen(info.chip)] != ':'))
    snprintf(why, n, "the binary of kernel %s is for %s, not %s", K->name, info.chip, T->name);
  else if (!hk || !hk->has_function_symbol || !hk->has_kd_symbol)
    snprintf(why, n, "the binary of kernel %s does not define the kernel", K->name);
  else if (hk->max_flat_workgroup_size != block)
    snprintf(why, n, "the binary of kernel %s was compiled for workgroups of %lld threads, the IR says block_size %lld", K->name,
             (long long)hk->max_flat_workgroup_size, (long long)block);
  else if (hk->lds_bytes != lds)
    snprintf(why, n, "the binary of kernel %s declares %lld LDS bytes, the IR %lld", K->name, (long long)hk->lds_bytes, (long long)lds);
  else st = KL_OK;
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
      kl_sb sb = {0};
      for (int i = 0; i < kl_target_count(); i++) kl_sb_printf(&sb, "%s%s", i ? ", " : "", kl_target_at(i)->name);
      snprintf(err, errlen, "load: %s: target '%s' is unknown to this kiln (known: %s)", where, T->name, kl_sb_str(&sb));
      kl_sb_free(&sb);
      goto done;
    }
    if (strcmp(kl_arch_name(desc->arch), T->arch) || strcmp(kl_binary_format_name(desc->arch), T->binary_format)) {
      snprintf(err, errlen, "load: %s: target '%s' is %s with %s binaries, the bundle says %s with %s binaries", where, T->name,
               kl_arch_name(desc->arch), kl_binary_format_name(desc->arch), T->arch, T->binary_format);
      goto done;
    }
    char fname[512];
    snprintf(fname, sizeof fname, "%s[%s]", where, T->name);
    kl_op *module = kl_parse_module(ctx, T->ir, T->ir_size, fname);
    if (!module || kl_verify(module) != KL_OK) {
      char *d = kl_diag_take(ctx);
      chomp(d);
      snprintf(err, errlen, "load: %s: the IR of target '%s' does not %s:\n%s", where, T->name, module ? "verify" : "parse", *d ? d : "(no diagnostic)");
      free(d);
      goto done;
    }
    kl_walk_pre(module, unlocate, (void *)kl_intern(ctx, fname));
    kinfos[t] = kl_xcalloc(T->nkernels + 1, sizeof **kinfos);
    bins[t] = kl_xcalloc(T->nkernels + 1, sizeof **bins);
    for (int k = 0; k < T->nkernels; k++) {
      const kl_bundle_kernel *K = &T->kernels[k];
      if (K->grid[1] != 1 || K->grid[2] != 1 || K->block[1] != 1 || K->block[2] != 1) {
        snprintf(err, errlen, "load: %s: target '%s': kernel %s has a multi-dimensional grid or block, which this kiln does not run", where, T->name, K->name);
        goto done;
      }
      kl_op *f = find_kernel(module, K->name);
      if (f && kernel_agrees(desc, f, K, msg, sizeof msg) != KL_OK) {
        snprintf(err, errlen, "load: %s: target '%s': the plan section disagrees with the IR: %s", where, T->name, msg);
        goto done;
      }
      if (f && ((desc->arch == KL_ARCH_HOST && host_binary_agrees(ctx, desc, f, T, K, msg, sizeof msg) != KL_OK) ||
                (desc->arch == KL_ARCH_AMDGPU && hsaco_agrees(T, K, f, msg, sizeof msg) != KL_OK))) {
        snprintf(err, errlen, "load: %s: target '%s': %s", where, T->name, msg);
        goto done;
      }
      kl_kernel_info *ki = &kinfos[t][k];
      ki->name = K->name; ki->kind = K->kind; ki->perf_config = K->perf_config;
      ki->grid_size = K->grid[0]; ki->block_size = K->block[0]; ki->lds_bytes = K->lds_bytes;
      ki->nargs = K->nargs; ki->ninputs = K->ninputs;
      ki->arg_names = kl_xcalloc(K->nargs + 1, sizeof *ki->arg_names);
      ki->arg_types = kl_xcalloc(K->nargs + 1, sizeof *ki->arg_types);
      for (int a = 0; a < K->nargs; a++) { ki->arg_names[a] = K->args[a].name; ki->arg_types[a] = K->args[a].t.type; }
      bins[t][k] = (kl_binary_info){ T->name, K->binary, K->binary_size };
    }
    parts[t] = (kl_program_part){ T->name, module, T->nkernels, kinfos[t], bins[t] };
  }
  p = kl_program_assemble(ctx, nt, parts, msg, sizeof msg);
  if (!p) { snprintf(err, errlen, "load: %s: %s", where, msg); goto done; }
  for (int t = 0; t < nt; t++) {
    const kl_bundle_target *T = kl_bundle_target_at(b, t);
    /* the kernel argument types of the bundle must be those of the module's kernel funcs */
    for (int k = 0; k < T->nkernels; k++) {
      const kl_kernel_info *ki = kl_program_kernel(p, T->name, k);
      const kl_bundle_kernel *K = kl_bundle_find_kernel(T, ki->name);
      kl_op *f = find_kernel(kl_program_module(p, T->name), ki->name);
      for (int a = 0; K && f && a < K->nargs; a++)
        if (strcmp(kl_type_str(f->regions[0].first->args[a]->type), K->args[a].t.type)) {
          snprintf(msg, sizeof msg, "kernel %s argument %d has type %s in the IR, %s in the plan section", ki->name, a,
                   kl_type_str(f->regions[0].first->args[a]->type), K->args[a].t.type);
          goto mismatch;
        }
      if (K && K->ninputs != ki->ninputs) {
        snprintf(msg, sizeof msg, "kernel %s has %d inputs in the IR, %d in the plan section", ki->name, ki->ninputs, K->ninputs);
        goto mismatch;
      }
    }
    if (check_plan(p, T, msg, sizeof msg) != KL_OK) goto mismatch;
    continue;
  mismatch:
    snprintf(err, errlen, "load: %s: target '%s': the plan section disagrees with the IR: %s", where, T->name, msg);
    kl_program_release(p);
    p = NULL;
    goto done;
  }
done:
  for (int t = 0; t < nt; t++) {
    if (kinfos[t])
      for (int k = 0; k < kl_bundle_target_at(b, t)->nkernels; k++) { free(kinfos[t][k].arg_names); free(kinfos[t][k].arg_types); }
    free(kinfos[t]); free(bins[t]);
  }
  free(kinfos); free(bins); free(parts);
  return p;
}

kl_program *kl_program_load(kl_ctx *ctx, const char *path, char *err, size_t errlen) {
  char msg[2048];
  kl_bundle *b = kl_bundle_open_file(path, msg, sizeof msg);
  if (!b) { snprintf(err, errlen, "load: %s", msg); return NULL; }
  kl_program *p = kl_program_from_bundle(ctx, b, path, err, errlen);
  kl_bundle_close(b);
  return p;
}

kl_program *kl_program_load_for_device(kl_ctx *ctx, const char *path, kl_device *dev, char *err, size_t errlen) {
  kl_program *p = kl_program_load(ctx, path, err, errlen);
  if (!p) return NULL;
  const kl_device_info *info = kl_device_get_info(dev);
  if (kl_program_target_for_device(p, info) < 0) {
    kl_sb sb = {0};
    for (int i = 0; i < kl_program_ntargets(p); i++) kl_sb_printf(&sb, "%s%s", i ? ", " : "", kl_program_target(p, i));
    snprintf(err, errlen, "load: %s has no binary for device %s (arch %s); the bundle has: %s", path, info->name, info->arch, kl_sb_str(&sb));
    kl_sb_free(&sb);
    kl_program_release(p);
    return NULL;
  }
  return p;
}
