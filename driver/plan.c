/* plan.c — the host plan of one target (plan.h): built from a compiled module, compared
 * with a bundle's plan section. */
#include "driver/plan.h"
#include "core/dialect_graph.h"
#include "core/dialect_rock.h"
#include "codegen/codegen_target.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *keep(kl_plan *p, void *mem) {
  p->mem = kl_xrealloc(p->mem, (size_t)(p->nmem + 1) * sizeof *p->mem);
  p->mem[p->nmem++] = mem;
  return mem;
}

int64_t kl_kernel_lds_bytes(kl_op *kernel) {
  int n;
  kl_op **ops = kl_collect_ops(kernel, &n);
  int64_t bytes = 0;
  for (int i = 0; i < n; i++) {
    const kl_type *t = ops[i]->nresults ? ops[i]->results[0].type : NULL;
    if (!strcmp(ops[i]->name, "rock.alloc") && t && t->kind == KL_TY_BUFFER && t->space == KL_SPACE_LDS) {
      int64_t b = kl_type_numel(t) * ((kl_type_bits(t->elem) + 7) / 8);
      bytes = (b < 0 || bytes > INT64_MAX - b) ? INT64_MAX : bytes + b;
    }
  }
  free(ops);
  return bytes;
}

/* A type's layout as a bundle describes it (elem "" when it cannot). */
static void tensor_of(kl_plan *p, const kl_type *t, kl_bundle_tensor *out) {
  const kl_type *elem = kl_type_is_shaped(t) ? t->elem : t;
  const char *en = kl_scalar_name(elem->kind);
  out->type = kl_type_str(t);
  out->elem = en ? en : "";
  out->elem_bytes = (kl_type_bits(elem) + 7) / 8;
  out->rank = kl_type_is_shaped(t) ? t->rank : 0;
  int64_t *shape = keep(p, kl_xcalloc(out->rank + 1, sizeof *shape));
  int64_t *strides = keep(p, kl_xcalloc(out->rank + 1, sizeof *strides));
  for (int i = 0; i < out->rank; i++) shape[i] = t->shape[i];
  if (out->rank && t->strides)
    for (int i = 0; i < out->rank; i++) strides[i] = t->strides[i];
  else
    kl_row_major_strides(out->rank, shape, strides);
  out->shape = shape;
  out->strides = strides;
  int64_t span = 1;
  for (int i = 0; i < out->rank; i++) span = shape[i] == 0 || span == 0 ? 0 : span + (shape[i] - 1) * strides[i];
  out->bytes = (uint64_t)span * (uint64_t)out->elem_bytes;
}

static kl_status build_kernels(kl_plan *p, kl_op *module) {
  kl_bundle_target *T = &p->t;
  for (kl_op *o = kl_module_body(module)->first; o; o = o->next)
    if (kl_is_kernel(o)) T->nkernels++;
  kl_bundle_kernel *ks = keep(p, kl_xcalloc(T->nkernels + 1, sizeof *ks));
  T->kernels = ks;
  int k = 0;
  for (kl_op *o = kl_module_body(module)->first; o; o = o->next) {
    if (!kl_is_kernel(o)) continue;
    kl_bundle_kernel *K = &ks[k++];
    const char *kind = kl_op_attr_string(o, "kind"), *pc = kl_op_attr_string(o, "perf_config");
    K->name = kl_op_attr_string(o, "sym_name");
    K->kind = kind ? kind : "";
    K->perf_config = pc ? pc : "";
    K->grid[0] = K->grid[1] = K->grid[2] = 1;
    K->block[0] = K->block[1] = K->block[2] = 1;
    kl_op_attr_i64(o, "grid_size", &K->grid[0]);
    kl_op_attr_i64(o, "block_size", &K->block[0]);
    K->lds_bytes = kl_kernel_lds_bytes(o);
    kl_block *body = o->regions[0].first;
    K->nargs = body ? body->nargs : 0;
    kl_bundle_arg *as = keep(p, kl_xcalloc(K->nargs + 1, sizeof *as));
    const kl_attr *names = kl_op_attr(o, "arg_names");
    for (int a = 0; a < K->nargs; a++) {
      as[a].name = (names && names->kind == KL_AT_ARRAY && a < names->n && names->elems[a]->kind == KL_AT_STR)
          ? names->elems[a]->s
          : "";
      tensor_of(p, body->args[a]->type, &as[a].t);
    }
    K->args = as;
  }
  return KL_OK;
}

static int kernel_index(const kl_bundle_target *T, const char *name) {
  for (int i = 0; i < T->nkernels; i++)
    if (!strcmp(T->kernels[i].name, name)) return i;
  return -1;
}

kl_status kl_plan_build(kl_plan *p, kl_op *module, const char *target, const kl_target *desc, char *err,
                        size_t errlen) {
  memset(p, 0, sizeof *p);
  kl_bundle_target *T = &p->t;
  T->name = target;
  T->arch = kl_arch_name(desc->arch);
  T->binary_format = kl_binary_format_name(desc->arch);
  build_kernels(p, module);
  kl_op *graph = NULL;
  for (kl_op *o = kl_module_body(module)->first; o && !graph; o = o->next)
    if (kl_is_graph(o)) graph = o;
  if (!graph) {
    snprintf(err, errlen, "compile: target %s: the module has no graph func (the plan)", target);
    return KL_ERR;
  }
  kl_block *b = kl_graph_body(graph);
  int nops = 0, cap = 1;
  for (kl_op *o = b->first; o; o = o->next) {
    nops++;
    cap += o->nresults;
  }
  kl_bundle_slot *slots = keep(p, kl_xcalloc(cap, sizeof *slots));
  kl_bundle_step *steps = keep(p, kl_xcalloc(nops + 1, sizeof *steps));
  p->slot_types = keep(p, kl_xcalloc(cap, sizeof *p->slot_types));
  p->constants = kl_xcalloc(cap, sizeof *p->constants);
  T->slots = slots;
  T->steps = steps;
  for (kl_op *o = b->first; o; o = o->next) {
    o->scratch = T->nslots;
    if (kl_graph_is_param(o)) {
      kl_bundle_slot *S = &slots[T->nslots];
      S->kind = KL_BUNDLE_PARAM;
      S->name = kl_op_attr_string(o, "name");
      S->output = -1;
      p->slot_types[T->nslots++] = o->results[0].type;
      tensor_of(p, o->results[0].type, &S->t);
    } else if (kl_graph_is_constant(o)) {
      const kl_type *t = o->results[0].type;
      const kl_attr *val = kl_op_attr(o, "value");
      int64_t n = kl_type_numel(t);
      double *d = kl_xmalloc((n ? n : 1) * sizeof *d);
      for (int64_t i = 0; i < n; i++)
        d[i] = val->elems[i]->kind == KL_AT_FLOAT ? val->elems[i]->f : (double)val->elems[i]->i;
      kl_tensor *tc = kl_tensor_from_f64(kl_dtype_of_type(t->elem), t->rank, t->shape, t->strides, d, err, errlen);
      free(d);
      if (!tc) return KL_ERR;
      kl_bundle_slot *S = &slots[T->nslots];
      S->kind = KL_BUNDLE_CONSTANT;
      S->name = "";
      S->output = -1;
      tensor_of(p, t, &S->t);
      S->data = (const char *)tc->data + tc->offset * (int64_t)kl_dtype_size(tc->dtype);
      S->data_size = (size_t)S->t.bytes;
      p->constants[T->nslots] = tc;
      p->slot_types[T->nslots++] = t;
    } else if (kl_graph_is_launch(o)) {
      const kl_attr *callee = kl_op_attr(o, "callee");
      int k = kernel_index(T, callee->s);
      if (k < 0) {
        snprintf(err, errlen, "compile: launch of unknown kernel @%s", callee->s);
        return KL_ERR;
      }
      for (int i = 0; i < o->nresults; i++) {
        kl_bundle_slot *S = &slots[T->nslots];
        S->kind = KL_BUNDLE_RESULT;
        S->name = "";
        S->output = -1;
        tensor_of(p, o->results[i].type, &S->t);
        p->slot_types[T->nslots++] = o->results[i].type;
      }
      kl_bundle_kernel *K = (kl_bundle_kernel *)&T->kernels[k];
      if (K->nargs != o->nopnds + o->nresults) {
        snprintf(err, errlen, "compile: kernel @%s takes %d arguments, the launch passes %d", callee->s, K->nargs,
                 o->nopnds + o->nresults);
        return KL_ERR;
      }
      int *args = keep(p, kl_xmalloc((o->nopnds + o->nresults + 1) * sizeof *args));
      for (int i = 0; i < o->nopnds; i++) {
        kl_value *a = o->opnds[i].value;
        args[i] = (int)a->def->scratch + a->index;
      }
      for (int i = 0; i < o->nresults; i++) args[o->nopnds + i] = (int)o->scratch + i;
      K->ninputs = o->nopnds;
      for (int a = 0; a < K->nargs; a++) ((kl_bundle_arg *)&K->args[a])->is_output = a >= K->ninputs;
      steps[T->nsteps++] = (kl_bundle_step){ KL_BUNDLE_LAUNCH, k, o->nopnds + o->nresults, args };
    } else if (!strcmp(o->name, "func.return")) {
      int *outs = keep(p, kl_xmalloc((o->nopnds + 1) * sizeof *outs));
      for (int i = 0; i < o->nopnds; i++) {
        kl_value *a = o->opnds[i].value;
        outs[i] = (int)a->def->scratch + a->index;
      }
      T->noutputs = o->nopnds;
      T->outputs = outs;
      for (int i = 0; i < o->nopnds; i++)
        if (slots[outs[i]].output < 0) slots[outs[i]].output = i;
    } else {
      char where[256];
      kl_loc_format(o->loc, where, sizeof where);
      snprintf(err, errlen,
               "%s: error: compile: '%s' is left in the host plan after the pipeline (graph-partition must run)", where,
               o->name);
      return KL_ERR;
    }
  }
  return KL_OK;
}

void kl_plan_free(kl_plan *p) {
  if (!p) return;
  for (int i = 0; p->constants && i < p->t.nslots; i++) kl_tensor_release(p->constants[i]);
  free(p->constants);
  for (int i = 0; i < p->nmem; i++) free(p->mem[i]);
  free(p->mem);
  memset(p, 0, sizeof *p);
}

kl_status kl_plan_describable(const kl_bundle_target *T, char *what, size_t n, const char **type) {
  for (int k = 0; k < T->nkernels; k++)
    for (int a = 0; a < T->kernels[k].nargs; a++)
      if (!*T->kernels[k].args[a].t.elem) {
        snprintf(what, n, "kernel %s argument %d", T->kernels[k].name, a);
        *type = T->kernels[k].args[a].t.type;
        return KL_ERR;
      }
  for (int s = 0; s < T->nslots; s++)
    if (!*T->slots[s].t.elem) {
      snprintf(what, n, "slot %d", s);
      *type = T->slots[s].t.type;
      return KL_ERR;
    }
  return KL_OK;
}

/* ---- comparing a bundle's plan with the IR's ---- */
static kl_status tensor_same(const kl_bundle_tensor *d, const kl_bundle_tensor *bt, const char *what, char *why,
                             size_t n) {
  if (strcmp(d->type, bt->type)) {
    snprintf(why, n, "%s has type %s in the IR, %s in the plan section", what, d->type, bt->type);
    return KL_ERR;
  }
  if (strcmp(d->elem, bt->elem) || d->rank != bt->rank) {
    snprintf(why, n, "%s: the element type or rank differs from its type %s", what, d->type);
    return KL_ERR;
  }
  for (int i = 0; i < d->rank; i++)
    if (d->shape[i] != bt->shape[i] || d->strides[i] != bt->strides[i]) {
      snprintf(why, n,
               "%s: dimension %d is %lld (stride %lld) in the IR type %s, %lld (stride %lld) in the plan section", what,
               i, (long long)d->shape[i], (long long)d->strides[i], d->type, (long long)bt->shape[i],
               (long long)bt->strides[i]);
      return KL_ERR;
    }
  return KL_OK;
}

static kl_status kernel_same(const kl_bundle_kernel *I, const kl_bundle_kernel *K, char *why, size_t n) {
  if (K->grid[0] != I->grid[0] || K->block[0] != I->block[0] || K->lds_bytes != I->lds_bytes || K->grid[1] != 1 ||
      K->grid[2] != 1 || K->block[1] != 1 || K->block[2] != 1) {
    snprintf(
        why, n,
        "kernel %s launches with grid [%lld,%lld,%lld], block [%lld,%lld,%lld], %lld LDS bytes in the plan section; "
        "the IR says grid %lld, block %lld, %lld LDS bytes",
        K->name, (long long)K->grid[0], (long long)K->grid[1], (long long)K->grid[2], (long long)K->block[0],
        (long long)K->block[1], (long long)K->block[2], (long long)K->lds_bytes, (long long)I->grid[0],
        (long long)I->block[0], (long long)I->lds_bytes);
    return KL_ERR;
  }
  if (strcmp(I->kind, K->kind) || strcmp(I->perf_config, K->perf_config)) {
    snprintf(why, n, "kernel %s is a '%s' kernel with perf config '%s' in the IR, '%s' with '%s' in the plan section",
             K->name, I->kind, I->perf_config, K->kind, K->perf_config);
    return KL_ERR;
  }
  if (I->nargs != K->nargs) {
    snprintf(why, n, "kernel %s takes %d arguments in the IR, %d in the plan section", K->name, I->nargs, K->nargs);
    return KL_ERR;
  }
  for (int a = 0; a < K->nargs; a++) {
    char what[160];
    snprintf(what, sizeof what, "kernel %s argument %d", K->name, a);
    if (strcmp(I->args[a].name, K->args[a].name)) {
      snprintf(why, n, "%s is named '%s' in the IR, '%s' in the plan section", what, I->args[a].name, K->args[a].name);
      return KL_ERR;
    }
    if (tensor_same(&I->args[a].t, &K->args[a].t, what, why, n) != KL_OK) return KL_ERR;
  }
  if (I->ninputs != K->ninputs) {
    snprintf(why, n, "kernel %s has %d inputs in the IR, %d in the plan section", K->name, I->ninputs, K->ninputs);
    return KL_ERR;
  }
  return KL_OK;
}

static const char *slot_kind_name(kl_bundle_slot_kind k) {
  return k == KL_BUNDLE_PARAM ? "param" : k == KL_BUNDLE_CONSTANT ? "constant" : "result";
}

kl_status kl_plan_compare(const kl_bundle_target *I, const kl_bundle_target *F, char *why, size_t n) {
  if (I->nkernels != F->nkernels) {
    snprintf(why, n, "%d kernels in the IR, %d in the plan section", I->nkernels, F->nkernels);
    return KL_ERR;
  }
  for (int k = 0; k < F->nkernels; k++) {
    int i = kernel_index(I, F->kernels[k].name);
    if (i < 0) {
      snprintf(why, n, "kernel %s is not a kernel func of the IR", F->kernels[k].name);
      return KL_ERR;
    }
    if (kernel_same(&I->kernels[i], &F->kernels[k], why, n) != KL_OK) return KL_ERR;
  }
  if (I->nslots != F->nslots) {
    snprintf(why, n, "%d slots in the IR, %d in the plan section", I->nslots, F->nslots);
    return KL_ERR;
  }
  for (int s = 0; s < F->nslots; s++) {
    const kl_bundle_slot *A = &I->slots[s], *S = &F->slots[s];
    char what[64];
    snprintf(what, sizeof what, "slot %d", s);
    if (A->kind != S->kind) {
      snprintf(why, n, "slot %d is a %s in the IR, a %s in the plan section", s, slot_kind_name(A->kind),
               slot_kind_name(S->kind));
      return KL_ERR;
    }
    if (S->kind == KL_BUNDLE_PARAM && strcmp(A->name, S->name)) {
      snprintf(why, n, "slot %d is param '%s' in the IR, '%s' in the plan section", s, A->name, S->name);
      return KL_ERR;
    }
    if (tensor_same(&A->t, &S->t, what, why, n) != KL_OK) return KL_ERR;
    if (S->kind == KL_BUNDLE_CONSTANT && S->data_size &&
        (A->data_size != S->data_size || memcmp(A->data, S->data, S->data_size))) {
      snprintf(why, n, "the data of constant slot %d differs between the IR and the constant section", s);
      return KL_ERR;
    }
  }
  if (I->nsteps != F->nsteps) {
    snprintf(why, n, "%d launches in the IR, %d in the plan section", I->nsteps, F->nsteps);
    return KL_ERR;
  }
  for (int i = 0; i < F->nsteps; i++) {
    const kl_bundle_step *ps = &I->steps[i], *bs = &F->steps[i];
    const char *ik = I->kernels[ps->kernel].name, *fk = F->kernels[bs->kernel].name;
    if (strcmp(ik, fk) || ps->nargs != bs->nargs) {
      snprintf(why, n, "step %d launches %s in the IR, %s in the plan section", i, ik, fk);
      return KL_ERR;
    }
    for (int a = 0; a < ps->nargs; a++)
      if (ps->args[a] != bs->args[a]) {
        snprintf(why, n, "step %d argument %d is slot %d in the IR, slot %d in the plan section", i, a, ps->args[a],
                 bs->args[a]);
        return KL_ERR;
      }
  }
  if (I->noutputs != F->noutputs) {
    snprintf(why, n, "%d outputs in the IR, %d in the plan section", I->noutputs, F->noutputs);
    return KL_ERR;
  }
  for (int i = 0; i < F->noutputs; i++)
    if (I->outputs[i] != F->outputs[i]) {
      snprintf(why, n, "output %d is slot %d in the IR, slot %d in the plan section", i, I->outputs[i], F->outputs[i]);
      return KL_ERR;
    }
  return KL_OK;
}
