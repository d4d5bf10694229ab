/* plan_exec.c — running a host plan's steps on a device (plan_exec.h). */
#include "driver/plan_exec.h"
#include "core/target.h"
#include "driver/plan_sched.h"
#include "core/dtype.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kl_plan_value_bits(const char *elem, double v, uint64_t *bits) {
  kl_dtype dt = !strcmp(elem, "index") ? KL_DT_I64 : !strcmp(elem, "i1") ? KL_DT_I1 : kl_dtype_from_name(elem);
  *bits = 0;
  switch (dt) {
    case KL_DT_F32: {
      float f = (float)v;
      uint32_t u;
      memcpy(&u, &f, 4);
      *bits = u;
      return 4;
    }
    case KL_DT_F64: memcpy(bits, &v, 8); return 8;
    case KL_DT_F16: *bits = kl_f64_to_f16(v); return 2;
    case KL_DT_BF16: *bits = kl_f64_to_bf16(v); return 2;
    case KL_DT_F8E4M3FN:
    case KL_DT_F8E5M2:
    case KL_DT_F8E4M3FNUZ:
    case KL_DT_F8E5M2FNUZ: *bits = kl_f64_to_fp8(dt, v); return 1;
    case KL_DT_I1:
    case KL_DT_I8: *bits = (uint8_t)(int8_t)v; return 1;
    case KL_DT_U8: *bits = (uint8_t)(int64_t)v; return 1;
    case KL_DT_I32: *bits = (uint32_t)(int32_t)v; return 4;
    case KL_DT_I64: *bits = (uint64_t)(int64_t)v; return 8;
    default: return 0;
  }
}

static kl_status fail(kl_plan_exec *x, char *err, size_t errlen, const char *what) {
  snprintf(err, errlen, "%s: %s", what, kl_device_error(x->dev));
  return KL_ERR;
}

static kl_status prefill(kl_plan_exec *x, const kl_bundle_step *s, char *err, size_t errlen) {
  const kl_bundle_tensor *t = &x->plan->slots[s->slot].t;
  uint64_t bits;
  int eb = kl_plan_value_bits(t->elem, s->value, &bits);
  if (!eb) {
    snprintf(err, errlen, "prefill of slot %d: unknown element type '%s'", s->slot, t->elem);
    return KL_ERR;
  }
  size_t count = (size_t)(t->bytes / (uint64_t)eb);
  unsigned char *dst = x->ptr[s->slot];
  if (!count) return KL_OK;
  if (x->host) {
    for (size_t i = 0; i < count; i++) memcpy(dst + i * (size_t)eb, &bits, (size_t)eb); /* little-endian */
    return KL_OK;
  }
  if (eb == 8 && (uint32_t)bits == (uint32_t)(bits >> 32)) {
    eb = 4;
    count *= 2;
  }
  if (eb < 8) {
    kl_status st = x->stream ? kl_device_fill_on(x->stream, dst, (uint32_t)bits, eb, count)
                             : kl_device_fill(x->dev, dst, (uint32_t)bits, eb, count);
    return st == KL_OK ? KL_OK : fail(x, err, errlen, "prefill");
  }
  uint64_t *h = kl_xmalloc(count * sizeof *h);
  for (size_t i = 0; i < count; i++) h[i] = bits;
  kl_status st = kl_device_copy_htod(x->dev, dst, h, count * 8);
  free(h);
  return st == KL_OK ? KL_OK : fail(x, err, errlen, "prefill");
}

size_t kl_plan_launch_shared_bytes(const kl_device *dev, const kl_bundle_kernel *k) {
  return kl_device_get_info(dev)->kind == KL_DEVICE_CUDA && k->lds_bytes > KL_NVPTX_STATIC_LDS_MAX
      ? (size_t)k->lds_bytes
      : 0;
}

uint32_t kl_plan_launch_grid(kl_device *dev, kl_dev_kernel *kern, const kl_bundle_kernel *k, bool persistent,
                             size_t shared) {
  int64_t g = k->grid[0];
  if (persistent) {
    int64_t cus = kl_device_get_info(dev)->compute_units;
    int64_t wave = (cus > 0 ? cus : 1) * kl_device_resident_per_cu(kern, (uint32_t)k->block[0], shared);
    if (wave < g) g = wave;
  }
  return (uint32_t)(g > 0 ? g : 1);
}

static kl_dev_launch launch_of(kl_plan_exec *x, const kl_bundle_step *s) {
  const kl_bundle_kernel *k = &x->plan->kernels[s->kernel];
  kl_dev_launch l = { 0 };
  l.k = x->kernels[s->kernel];
  l.args = kl_xmalloc((s->nargs + 1) * sizeof *l.args);
  size_t *sizes = kl_xmalloc((s->nargs + 1) * sizeof *sizes);
  for (int a = 0; a < s->nargs; a++) {
    l.args[a] = &x->ptr[s->args[a]];
    sizes[a] = sizeof(void *);
  }
  l.args[s->nargs] = NULL; /* tma_args' maps */
  l.arg_sizes = sizes;
  l.nargs = s->nargs;
  l.shared_bytes = kl_plan_launch_shared_bytes(x->dev, k);
  for (int d = 0; d < 3; d++) {
    l.grid[d] = (uint32_t)k->grid[d];
    l.block[d] = (uint32_t)k->block[d];
  }
  if (x->persistent && x->persistent[s->kernel] && l.k)
    l.grid[0] = kl_plan_launch_grid(x->dev, l.k, k, true, l.shared_bytes);
  return l;
}

/* The tensor-map parameters of launch l of step s (x->tma, see plan_exec.h): the maps go
 * after the buffers in one 64-byte aligned block kept in l->args[l->nargs] (freed by
 * launch_free). */
static kl_status tma_args(kl_plan_exec *x, const kl_bundle_step *s, kl_dev_launch *l, char *err, size_t errlen) {
  const kl_plan_tmas *t = x->tma ? &x->tma[s->kernel] : NULL;
  if (!t || !t->n) return KL_OK;
  void **args = kl_xmalloc((size_t)(l->nargs + t->n + 1) * sizeof *args);
  size_t *sizes = kl_xmalloc((size_t)(l->nargs + t->n + 1) * sizeof *sizes);
  memcpy(args, l->args, (size_t)l->nargs * sizeof *args);
  memcpy(sizes, l->arg_sizes, (size_t)l->nargs * sizeof *sizes);
  free(l->args);
  free((void *)l->arg_sizes);
  unsigned char *maps = aligned_alloc(64, (size_t)t->n * 128);
  if (!maps) abort(); /* out of memory */
  l->args = args, l->arg_sizes = sizes;
  for (int j = 0; j < t->n; j++) {
    const kl_plan_tma *m = &t->m[j];
    if (m->arg < 0 || m->arg >= s->nargs) {
      snprintf(err, errlen, "launch of %s: tensor map %d names argument %d of %d", x->plan->kernels[s->kernel].name, j,
               m->arg, s->nargs);
      free(maps);
      args[l->nargs] = NULL;
      return KL_ERR;
    }
    kl_tensor_map_desc d = { .rank = m->rank, .bf16 = m->bf16, .swizzle = m->swizzle, .im2col = m->im2col };
    for (int i = 0; i < 2; i++) d.lo[i] = m->lo[i], d.up[i] = m->up[i], d.es[i] = m->es[i];
    d.base = (char *)x->ptr[s->args[m->arg]] + m->offset;
    for (int i = 0; i < m->rank; i++) {
      d.dims[i] = m->dims[i];
      d.box[i] = m->box[i];
      if (i) d.strides[i - 1] = m->strides[i - 1];
    }
    if (kl_device_tensor_map(x->dev, &d, maps + 128 * j) != KL_OK) {
      snprintf(err, errlen, "launch of %s: tensor map of argument %d: %s", x->plan->kernels[s->kernel].name, m->arg,
               kl_device_error(x->dev));
      free(maps);
      args[l->nargs] = NULL;
      return KL_ERR;
    }
    args[l->nargs + j] = maps + 128 * j;
    sizes[l->nargs + j] = 128;
  }
  l->nargs += t->n;
  args[l->nargs] = maps;
  return KL_OK;
}

static void launch_free(kl_dev_launch *l) {
  if (l->args) free(l->args[l->nargs]); /* tma_args' maps, else NULL */
  free(l->args);
  free((void *)l->arg_sizes);
}

kl_status kl_plan_exec_step(kl_plan_exec *x, int i, char *err, size_t errlen) {
  const kl_bundle_target *P = x->plan;
  const kl_bundle_step *s = &P->steps[i];
  switch (s->kind) {
    case KL_BUNDLE_LAUNCH: {
      kl_dev_launch l = launch_of(x, s);
      if (tma_args(x, s, &l, err, errlen) != KL_OK) {
        launch_free(&l);
        return KL_ERR;
      }
      kl_status st = x->stream
          ? kl_device_launch_on(x->stream, l.k, l.grid, l.block, l.shared_bytes, l.args, l.arg_sizes, l.nargs)
          : kl_device_launch(l.k, l.grid, l.block, l.shared_bytes, l.args, l.arg_sizes, l.nargs);
      launch_free(&l);
      if (st != KL_OK) snprintf(err, errlen, "launch of %s: %s", P->kernels[s->kernel].name, kl_device_error(x->dev));
      return st;
    }
    case KL_BUNDLE_PREFILL: return prefill(x, s, err, errlen);
    case KL_BUNDLE_COPY:
      if (!s->bytes) return KL_OK;
      if (x->host) {
        memcpy(x->ptr[s->dst], x->ptr[s->src], (size_t)s->bytes);
        return KL_OK;
      }
      if ((x->stream ? kl_device_copy_dtod_on(x->stream, x->ptr[s->dst], x->ptr[s->src], (size_t)s->bytes)
                     : kl_device_copy_dtod(x->dev, x->ptr[s->dst], x->ptr[s->src], (size_t)s->bytes)) != KL_OK)
        return fail(x, err, errlen, "copy");
      return KL_OK;
    case KL_BUNDLE_ALLOC_WORKSPACE:
      if (x->preallocated) return KL_OK;
      if (kl_device_alloc(x->dev, (size_t)s->bytes, &x->ptr[s->slot]) != KL_OK)
        return fail(x, err, errlen, "alloc_workspace");
      x->owned[s->slot] = true;
      return KL_OK;
    case KL_BUNDLE_FREE:
      if (x->preallocated || !x->owned[s->slot]) return KL_OK;
      if (!x->host && kl_device_synchronize(x->dev) != KL_OK) return fail(x, err, errlen, "free");
      x->owned[s->slot] = false;
      if (kl_device_free(x->dev, x->ptr[s->slot]) != KL_OK) return fail(x, err, errlen, "free");
      x->ptr[s->slot] = NULL;
      return KL_OK;
  }
  snprintf(err, errlen, "step %d: unknown kind %d", i, (int)s->kind);
  return KL_ERR;
}

enum { MAX_STREAMS = 4 };

/* The host: waves in order; in a wave the other steps, then the launches as a group. */
static kl_status exec_host(kl_plan_exec *x, const kl_plan_sched *S, char *err, size_t errlen) {
  const kl_bundle_target *P = x->plan;
  kl_dev_launch *ls = kl_xcalloc((size_t)P->nsteps + 1, sizeof *ls);
  int *li = kl_xcalloc((size_t)P->nsteps + 1, sizeof *li);
  double *lt = kl_xcalloc(2 * (size_t)P->nsteps + 2, sizeof *lt);
  double t0 = kl_device_now_ms();
  kl_status st = KL_OK;
  for (int w = 0; w < S->nwaves && st == KL_OK; w++) {
    int nl = 0;
    for (int i = 0; i < P->nsteps && st == KL_OK; i++) {
      if (S->wave[i] != w) continue;
      if (x->stream_of) x->stream_of[i] = w;
      if (P->steps[i].kind == KL_BUNDLE_LAUNCH) {
        li[nl] = i;
        ls[nl++] = launch_of(x, &P->steps[i]);
        continue;
      }
      double a = kl_device_now_ms();
      st = kl_plan_exec_step(x, i, err, errlen);
      if (x->times) {
        x->times[2 * i] = a - t0;
        x->times[2 * i + 1] = kl_device_now_ms() - t0;
      }
    }
    if (st == KL_OK && nl && kl_device_launch_group(x->dev, nl, ls, x->times ? lt : NULL) != KL_OK) {
      int j = 0; /* name the first launch; the device's message says which failed */
      snprintf(err, errlen, "launch of %s: %s", P->kernels[P->steps[li[j]].kernel].name, kl_device_error(x->dev));
      st = KL_ERR;
    }
    for (int j = 0; j < nl; j++) {
      if (x->times && st == KL_OK) {
        x->times[2 * li[j]] = lt[2 * j] - t0;
        x->times[2 * li[j] + 1] = lt[2 * j + 1] - t0;
      }
      launch_free(&ls[j]);
    }
  }
  free(ls);
  free(li);
  free(lt);
  return st;
}

kl_status kl_plan_exec_all(kl_plan_exec *x, char *err, size_t errlen) {
  const kl_bundle_target *P = x->plan;
  kl_plan_sched S;
  if (kl_plan_schedule(P, MAX_STREAMS, &S, err, errlen) != KL_OK) return KL_ERR;
  if (x->host) {
    kl_status st = exec_host(x, &S, err, errlen);
    kl_plan_sched_free(&S);
    return st;
  }
  int ns = S.nstreams;
  kl_dev_stream *streams[MAX_STREAMS] = { 0 };
  kl_dev_event **ev = kl_xcalloc((size_t)P->nsteps + 1, sizeof *ev);   /* a step's token: its end */
  kl_dev_event **evs = kl_xcalloc((size_t)P->nsteps + 1, sizeof *evs); /* timing: its start */
  kl_dev_event *base = NULL;
  kl_status st = KL_OK;
  for (int k = 0; k < ns && st == KL_OK; k++)
    if (kl_device_stream_create(x->dev, &streams[k]) != KL_OK) st = fail(x, err, errlen, "stream");
  if (st == KL_OK && x->times) { /* every stream starts after `base` */
    if (kl_device_event_create(x->dev, &base) != KL_OK || kl_device_event_record_on(base, streams[0]) != KL_OK)
      st = fail(x, err, errlen, "event");
    for (int k = 1; k < ns && st == KL_OK; k++)
      if (kl_device_stream_wait_event(streams[k], base) != KL_OK) st = fail(x, err, errlen, "stream wait");
  }
  for (int q = 0; q < P->nsteps && st == KL_OK; q++) {
    int i = S.order[q];
    kl_dev_stream *on = streams[S.stream[i]];
    if (x->stream_of) x->stream_of[i] = S.stream[i];
    for (int k = S.dep_off[i]; k < S.dep_off[i + 1] && st == KL_OK; k++)
      if (S.cross[k] && kl_device_stream_wait_event(on, ev[S.dep[k]]) != KL_OK)
        st = fail(x, err, errlen, "stream wait");
    if (st == KL_OK && x->times &&
        (kl_device_event_create(x->dev, &evs[i]) != KL_OK || kl_device_event_record_on(evs[i], on) != KL_OK))
      st = fail(x, err, errlen, "event");
    if (st != KL_OK) break;
    x->stream = on;
    st = kl_plan_exec_step(x, i, err, errlen);
    x->stream = NULL;
    if (st == KL_OK &&
        (kl_device_event_create(x->dev, &ev[i]) != KL_OK || kl_device_event_record_on(ev[i], on) != KL_OK))
      st = fail(x, err, errlen, "event");
  }
  if (kl_device_synchronize(x->dev) != KL_OK && st == KL_OK) st = fail(x, err, errlen, "synchronize");
  for (int i = 0; i < P->nsteps && st == KL_OK && x->times; i++) {
    float a = 0, b = 0;
    if (kl_device_event_elapsed_ms(base, evs[i], &a) != KL_OK || kl_device_event_elapsed_ms(base, ev[i], &b) != KL_OK)
      st = fail(x, err, errlen, "event timing");
    x->times[2 * i] = a;
    x->times[2 * i + 1] = b;
  }
  for (int i = 0; i < P->nsteps; i++) {
    kl_device_event_destroy(ev[i]);
    kl_device_event_destroy(evs[i]);
  }
  kl_device_event_destroy(base);
  free(ev);
  free(evs);
  for (int k = 0; k < ns; k++) kl_device_stream_destroy(streams[k]);
  kl_plan_sched_free(&S);
  return st;
}
