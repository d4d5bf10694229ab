/* plan.c — the host plan of one target (plan.h): built from a compiled module, compared
 * with a bundle's plan section. */
#include "driver/plan.h"
#include "core/dialect_graph.h"
#include "core/dialect_rock.h"
#include "codegen/codegen_target.h"
#include "passes/rock_tma.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *keep(kl_plan *p, void *mem) {
  p->mem = kl_xrealloc(p->mem, (size_t)(p->nmem + 1) * sizeof *p->mem);
  p->mem[p->nmem++] = mem;
  return mem;
}

int64_t kl_kernel_lds_bytes(kl_op *kernel) { return kl_tma_lds_bytes(kernel); }

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

/* ---- steps ---- */
typedef struct step_vec {
  kl_bundle_step *v;
  int n, cap, mem; /* mem: the index of v in p->mem */
} step_vec;

static kl_bundle_step *sv_push(kl_plan *p, step_vec *sv, kl_bundle_step_kind kind) {
  if (sv->n == sv->cap) {
    bool first = sv->cap == 0;
    sv->cap = sv->cap ? 2 * sv->cap : 8;
    sv->v = kl_xrealloc(sv->v, (size_t)sv->cap * sizeof *sv->v);
    if (first) {
      keep(p, sv->v);
      sv->mem = p->nmem - 1;
    } else
      p->mem[sv->mem] = sv->v;
  }
  kl_bundle_step *st = &sv->v[sv->n++];
  *st = (kl_bundle_step){ .kind = kind, .kernel = -1, .slot = -1, .src = -1, .dst = -1 };
  return st;
}

static kl_op *kernel_func(kl_op *module, const char *name) {
  for (kl_op *o = kl_module_body(module)->first; o; o = o->next) {
    const char *s = kl_is_kernel(o) ? kl_op_attr_string(o, "sym_name") : NULL;
    if (s && !strcmp(s, name)) return o;
  }
  return NULL;
}

static kl_status kernel_err(kl_op *f, const char *name, char *err, size_t errlen, const char *what) {
  char where[256];
  kl_loc_format(f->loc, where, sizeof where);
  snprintf(err, errlen, "%s: error: compile: kernel @%s: %s", where, name, what);
  return KL_ERR;
}

static bool same_layout(const kl_bundle_tensor *a, const kl_bundle_tensor *b) {
  bool same = !strcmp(a->elem, b->elem) && a->rank == b->rank;
  for (int d = 0; same && d < a->rank; d++) same = a->shape[d] == b->shape[d] && a->strides[d] == b->strides[d];
  return same;
}

/* The steps of one graph.launch `o` of kernel k (args: its slots, inputs then outputs):
 * the prefills its kernel func's `prefill` attribute asks for, then the launch, or the
 * host step its `plan_step` attribute names instead (plan.h). */
static kl_status launch_steps(kl_plan *p, step_vec *sv, kl_op *module, kl_op *o, int k, int *args, char *err,
                              size_t errlen) {
  const kl_bundle_kernel *K = &p->t.kernels[k];
  kl_op *f = kernel_func(module, K->name);
  const kl_attr *pf = f ? kl_op_attr(f, "prefill") : NULL;
  const char *ps = f ? kl_op_attr_string(f, "plan_step") : NULL;
  char what[512];
  int nargs = o->nopnds + o->nresults, nfilled = 0;
  if (pf && pf->kind != KL_AT_DICT)
    return kernel_err(f, K->name, err, errlen, "prefill must be a dictionary {\"<argument index>\" = value, ...}");
  for (int e = 0; pf && e < pf->n; e++) {
    const char *key = pf->entries[e].name;
    const kl_attr *v = pf->entries[e].value;
    char *end = NULL;
    long a = strtol(key, &end, 10);
    if (!*key || *end || a < o->nopnds || a >= nargs) {
      snprintf(what, sizeof what, "prefill names argument '%s', which is not an output argument (outputs: %d..%d)", key,
               o->nopnds, nargs - 1);
      return kernel_err(f, K->name, err, errlen, what);
    }
    if (v->kind != KL_AT_FLOAT && v->kind != KL_AT_INT) {
      snprintf(what, sizeof what, "prefill value of argument %ld is %s, not a number", a, kl_attr_str_of(v));
      return kernel_err(f, K->name, err, errlen, what);
    }
    double val = v->kind == KL_AT_FLOAT ? v->f : (double)v->i;
    const kl_bundle_slot *S = &p->t.slots[args[a]];
    if (!kl_bundle_value_fits(S->t.elem, val)) {
      snprintf(what, sizeof what, "prefill value %s of argument %ld does not fit its element type %s",
               kl_attr_str_of(v), a, S->t.elem);
      return kernel_err(f, K->name, err, errlen, what);
    }
    kl_bundle_step *st = sv_push(p, sv, KL_BUNDLE_PREFILL);
    st->slot = args[a];
    st->value = val;
    nfilled++;
  }
  if (!ps) {
    kl_bundle_step *st = sv_push(p, sv, KL_BUNDLE_LAUNCH);
    st->kernel = k;
    st->nargs = nargs;
    st->args = args;
  } else if (!strcmp(ps, "prefill")) {
    if (nfilled != o->nresults)
      return kernel_err(f, K->name, err, errlen,
                        "plan_step = \"prefill\" needs a prefill value for every output argument");
  } else if (!strcmp(ps, "copy")) {
    if (o->nopnds != 1 || o->nresults != 1 || !same_layout(&p->t.slots[args[0]].t, &p->t.slots[args[1]].t))
      return kernel_err(f, K->name, err, errlen,
                        "plan_step = \"copy\" needs one input and one output of the same layout");
    kl_bundle_step *st = sv_push(p, sv, KL_BUNDLE_COPY);
    st->src = args[0];
    st->dst = args[1];
    st->bytes = p->t.slots[args[1]].t.bytes;
  } else {
    snprintf(what, sizeof what, "unknown plan_step '%s' (\"prefill\" or \"copy\")", ps);
    return kernel_err(f, K->name, err, errlen, what);
  }
  return KL_OK;
}

/* Workspace steps around each intermediate's uses, then tokens and waits (plan.h). */
static void finish_steps(kl_plan *p, step_vec *sv) {
  kl_bundle_target *T = &p->t;
  int ns = T->nslots, n = sv->n;
  int *first = kl_xmalloc((ns + 1) * sizeof *first), *last = kl_xmalloc((ns + 1) * sizeof *last);
  for (int s = 0; s < ns; s++) first[s] = last[s] = -1;
  for (int i = 0; i < n; i++) {
    for (int a = 0, na = kl_bundle_step_naccess(&sv->v[i]); a < na; a++) {
      int wr, s = kl_bundle_step_access(T, &sv->v[i], a, &wr);
      if (T->slots[s].kind != KL_BUNDLE_RESULT || T->slots[s].output >= 0) continue;
      if (first[s] < 0) first[s] = i;
      last[s] = i;
    }
  }
  step_vec out = { 0 };
  for (int i = 0; i < n; i++) {
    for (int s = 0; s < ns; s++)
      if (first[s] == i) {
        kl_bundle_step *st = sv_push(p, &out, KL_BUNDLE_ALLOC_WORKSPACE);
        st->slot = s;
        st->bytes = T->slots[s].t.bytes;
      }
    *sv_push(p, &out, sv->v[i].kind) = sv->v[i];
    for (int s = 0; s < ns; s++)
      if (last[s] == i) sv_push(p, &out, KL_BUNDLE_FREE)->slot = s;
  }
  /* tokens: a step waits on the last writer of what it reads, and on the last writer and
   * the readers since of what it writes */
  int *lastw = first, *nread = last;
  int **readers = kl_xcalloc(ns + 1, sizeof *readers);
  int *capr = kl_xcalloc(ns + 1, sizeof *capr), *seen = kl_xcalloc(out.n + 1, sizeof *seen);
  for (int s = 0; s < ns; s++) lastw[s] = -1, nread[s] = 0;
  for (int j = 0; j < out.n; j++) {
    kl_bundle_step *st = &out.v[j];
    st->token = j;
    int na = kl_bundle_step_naccess(st), wr;
    int *w = keep(p, kl_xmalloc((size_t)(j + 1) * sizeof *w)), nw = 0;
#define ADD_WAIT(t)                     \
  do {                                  \
    int t_ = (t);                       \
    if (t_ >= 0 && seen[t_] != j + 1) { \
      seen[t_] = j + 1;                 \
      w[nw++] = t_;                     \
    }                                   \
  } while (0)
    for (int a = 0; a < na; a++) {
      int s = kl_bundle_step_access(T, st, a, &wr);
      ADD_WAIT(lastw[s]);
      if (wr)
        for (int r = 0; r < nread[s]; r++) ADD_WAIT(readers[s][r]);
    }
#undef ADD_WAIT
    for (int x = 1; x < nw; x++) /* ascending */
      for (int y = x; y > 0 && w[y - 1] > w[y]; y--) {
        int t = w[y];
        w[y] = w[y - 1];
        w[y - 1] = t;
      }
    st->nwaits = nw;
    st->waits = w;
    for (int a = 0; a < na; a++) {
      int s = kl_bundle_step_access(T, st, a, &wr);
      if (wr) {
        lastw[s] = j;
        nread[s] = 0;
      } else {
        if (nread[s] == capr[s]) {
          capr[s] = capr[s] ? 2 * capr[s] : 4;
          readers[s] = kl_xrealloc(readers[s], (size_t)capr[s] * sizeof **readers);
        }
        readers[s][nread[s]++] = j;
      }
    }
  }
  for (int s = 0; s < ns; s++) free(readers[s]);
  free(readers);
  free(capr);
  free(seen);
  free(first);
  free(last);
  T->steps = out.v ? out.v : keep(p, kl_xcalloc(1, sizeof *T->steps));
  T->nsteps = out.n;
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
  step_vec sv = { 0 };
  p->slot_types = keep(p, kl_xcalloc(cap, sizeof *p->slot_types));
  p->constants = kl_xcalloc(cap, sizeof *p->constants);
  T->slots = slots;
  (void)nops;
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
      if (launch_steps(p, &sv, module, o, k, args, err, errlen) != KL_OK) return KL_ERR;
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
  finish_steps(p, &sv);
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

static kl_status compare(const kl_bundle_target *I, const kl_bundle_target *F, bool v2, char *why, size_t n) {
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
  if (v2) { /* the file's launches are the IR plan's launches; the IR plan adds workspace steps only */
    int j = 0;
    for (int i = 0; i < I->nsteps; i++) {
      const kl_bundle_step *ps = &I->steps[i];
      if (ps->kind == KL_BUNDLE_ALLOC_WORKSPACE || ps->kind == KL_BUNDLE_FREE) continue;
      if (ps->kind != KL_BUNDLE_LAUNCH) {
        snprintf(why, n, "step %d is a %s in the IR, which a format version 2 plan section cannot hold", i,
                 kl_bundle_step_kind_name(ps->kind));
        return KL_ERR;
      }
      const kl_bundle_step *bs = j < F->nsteps ? &F->steps[j] : NULL;
      if (!bs || strcmp(I->kernels[ps->kernel].name, F->kernels[bs->kernel].name) || ps->nargs != bs->nargs ||
          (ps->nargs && memcmp(ps->args, bs->args, (size_t)ps->nargs * sizeof *ps->args))) {
        snprintf(why, n, "launch %d of the IR (%s) is not step %d of the format version 2 plan section", j,
                 I->kernels[ps->kernel].name, j);
        return KL_ERR;
      }
      j++;
    }
    if (j != F->nsteps) {
      snprintf(why, n, "%d launches in the IR, %d in the plan section", j, F->nsteps);
      return KL_ERR;
    }
  } else {
    if (I->nsteps != F->nsteps) {
      snprintf(why, n, "%d steps in the IR, %d in the plan section", I->nsteps, F->nsteps);
      return KL_ERR;
    }
    for (int i = 0; i < F->nsteps; i++) {
      const kl_bundle_step *ps = &I->steps[i], *bs = &F->steps[i];
      if (ps->kind != bs->kind) {
        snprintf(why, n, "step %d is a %s in the IR, a %s in the plan section", i, kl_bundle_step_kind_name(ps->kind),
                 kl_bundle_step_kind_name(bs->kind));
        return KL_ERR;
      }
      if (ps->kind == KL_BUNDLE_LAUNCH) {
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
      if (ps->slot != bs->slot || ps->src != bs->src || ps->dst != bs->dst || ps->bytes != bs->bytes ||
          memcmp(&ps->value, &bs->value, sizeof ps->value)) {
        snprintf(why, n,
                 "step %d (%s) has slot %d, src %d, dst %d, %llu bytes, value %g in the IR; slot %d, src %d, dst %d, "
                 "%llu bytes, value %g in the plan section",
                 i, kl_bundle_step_kind_name(ps->kind), ps->slot, ps->src, ps->dst, (unsigned long long)ps->bytes,
                 ps->value, bs->slot, bs->src, bs->dst, (unsigned long long)bs->bytes, bs->value);
        return KL_ERR;
      }
      bool same = ps->token == bs->token && ps->nwaits == bs->nwaits;
      for (int w = 0; same && w < ps->nwaits; w++) same = ps->waits[w] == bs->waits[w];
      if (!same) {
        snprintf(why, n,
                 "step %d yields token %d after %d waits in the IR, token %d after %d waits (or other tokens) in "
                 "the plan section",
                 i, ps->token, ps->nwaits, bs->token, bs->nwaits);
        return KL_ERR;
      }
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

kl_status kl_plan_compare(const kl_bundle_target *I, const kl_bundle_target *F, char *why, size_t n) {
  return compare(I, F, false, why, n);
}
kl_status kl_plan_compare_v2(const kl_bundle_target *I, const kl_bundle_target *F, char *why, size_t n) {
  return compare(I, F, true, why, n);
}

/* ---- the listing ---- */
static void text_value(kl_sb *sb, double v) {
  char b[40];
  for (int prec = 9; prec <= 17; prec++) {
    snprintf(b, sizeof b, "%.*g", prec, v);
    if (strtod(b, NULL) == v || v != v) break;
  }
  kl_sb_printf(sb, "%s", b);
}

static void text_waits(kl_sb *sb, const kl_bundle_step *s) {
  if (!s->nwaits) return;
  kl_sb_printf(sb, " waits(");
  for (int w = 0; w < s->nwaits; w++) kl_sb_printf(sb, "%s%%t%d", w ? ", " : "", s->waits[w]);
  kl_sb_printf(sb, ")");
}

char *kl_plan_text(const kl_bundle_target *T) {
  kl_sb sb = { 0 };
  if (!T) return kl_sb_take(&sb);
  kl_sb_printf(&sb, "plan %s (%s): %d slots, %d steps\n", T->name, T->binary_format, T->nslots, T->nsteps);
  for (int i = 0; i < T->nslots; i++) {
    const kl_bundle_slot *S = &T->slots[i];
    kl_sb_printf(&sb, "%%s%d = %s", i, slot_kind_name(S->kind));
    if (S->kind == KL_BUNDLE_PARAM) kl_sb_printf(&sb, " \"%s\"", S->name);
    kl_sb_printf(&sb, " : %s (%llu bytes)", S->t.type, (unsigned long long)S->t.bytes);
    if (S->output >= 0) kl_sb_printf(&sb, " -> output %d", S->output);
    kl_sb_printf(&sb, "\n");
  }
  for (int i = 0; i < T->nsteps; i++) {
    const kl_bundle_step *s = &T->steps[i];
    kl_sb_printf(&sb, "%%t%d = %s", s->token, kl_bundle_step_kind_name(s->kind));
    if (s->kind == KL_BUNDLE_LAUNCH) {
      const kl_bundle_kernel *K = &T->kernels[s->kernel];
      kl_sb_printf(&sb, " %s(grid=[%lld,%lld,%lld], block=[%lld,%lld,%lld], lds=%lld) args(", K->name,
                   (long long)K->grid[0], (long long)K->grid[1], (long long)K->grid[2], (long long)K->block[0],
                   (long long)K->block[1], (long long)K->block[2], (long long)K->lds_bytes);
      for (int a = 0; a < s->nargs; a++)
        kl_sb_printf(&sb, "%s%%s%d", a == 0 ? "" : a == K->ninputs ? " -> " : ", ", s->args[a]);
      kl_sb_printf(&sb, ")");
    } else if (s->kind == KL_BUNDLE_PREFILL) {
      kl_sb_printf(&sb, " %%s%d value(", s->slot);
      text_value(&sb, s->value);
      kl_sb_printf(&sb, ")");
    } else if (s->kind == KL_BUNDLE_COPY)
      kl_sb_printf(&sb, " %%s%d -> %%s%d (%llu bytes)", s->src, s->dst, (unsigned long long)s->bytes);
    else if (s->kind == KL_BUNDLE_ALLOC_WORKSPACE)
      kl_sb_printf(&sb, " %%s%d (%llu bytes)", s->slot, (unsigned long long)s->bytes);
    else
      kl_sb_printf(&sb, " %%s%d", s->slot);
    text_waits(&sb, s);
    kl_sb_printf(&sb, "\n");
  }
  kl_sb_printf(&sb, "return");
  for (int i = 0; i < T->noutputs; i++) kl_sb_printf(&sb, "%s %%s%d", i ? "," : "", T->outputs[i]);
  kl_sb_printf(&sb, "\n");
  return kl_sb_take(&sb);
}
