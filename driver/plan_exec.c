/* plan_exec.c — running a host plan's steps on a device (plan_exec.h). */
#include "driver/plan_exec.h"
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
    case KL_DT_I1:
    case KL_DT_I8: *bits = (uint8_t)(int8_t)v; return 1;
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

kl_status kl_plan_exec_step(kl_plan_exec *x, int i, char *err, size_t errlen) {
  const kl_bundle_target *P = x->plan;
  const kl_bundle_step *s = &P->steps[i];
  switch (s->kind) {
    case KL_BUNDLE_LAUNCH: {
      const kl_bundle_kernel *k = &P->kernels[s->kernel];
      void **args = kl_xmalloc((s->nargs + 1) * sizeof *args);
      size_t *sizes = kl_xmalloc((s->nargs + 1) * sizeof *sizes);
      for (int a = 0; a < s->nargs; a++) {
        args[a] = &x->ptr[s->args[a]];
        sizes[a] = sizeof(void *);
      }
      uint32_t grid[3] = { (uint32_t)k->grid[0], (uint32_t)k->grid[1], (uint32_t)k->grid[2] },
               block[3] = { (uint32_t)k->block[0], (uint32_t)k->block[1], (uint32_t)k->block[2] };
      kl_status st = x->stream
          ? kl_device_launch_on(x->stream, x->kernels[s->kernel], grid, block, 0, args, sizes, s->nargs)
          : kl_device_launch(x->kernels[s->kernel], grid, block, 0, args, sizes, s->nargs);
      free(args);
      free(sizes);
      if (st != KL_OK) snprintf(err, errlen, "launch of %s: %s", k->name, kl_device_error(x->dev));
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

kl_status kl_plan_exec_all(kl_plan_exec *x, char *err, size_t errlen) {
  const kl_bundle_target *P = x->plan;
  if (x->host || P->nsteps < 2) {
    for (int i = 0; i < P->nsteps; i++)
      if (kl_plan_exec_step(x, i, err, errlen) != KL_OK) return KL_ERR;
    return KL_OK;
  }
  int ns = P->nsteps < MAX_STREAMS ? P->nsteps : MAX_STREAMS;
  kl_dev_stream *streams[MAX_STREAMS] = { 0 };
  kl_dev_event **ev = kl_xcalloc((size_t)P->nsteps + 1, sizeof *ev);
  kl_status st = KL_OK;
  for (int k = 0; k < ns && st == KL_OK; k++)
    if (kl_device_stream_create(x->dev, &streams[k]) != KL_OK) st = fail(x, err, errlen, "stream");
  for (int i = 0; i < P->nsteps && st == KL_OK; i++) {
    const kl_bundle_step *s = &P->steps[i];
    kl_dev_stream *on = streams[i % ns];
    for (int w = 0; w < s->nwaits && st == KL_OK; w++) {
      int j = i - 1;
      while (j >= 0 && P->steps[j].token != s->waits[w]) j--;
      if (j < 0 || !ev[j]) {
        snprintf(err, errlen, "step %d waits on token %d of no earlier step", i, s->waits[w]);
        st = KL_ERR;
      } else if (kl_device_stream_wait_event(on, ev[j]) != KL_OK)
        st = fail(x, err, errlen, "stream wait");
    }
    if (st != KL_OK) break;
    x->stream = on;
    st = kl_plan_exec_step(x, i, err, errlen);
    x->stream = NULL;
    if (st == KL_OK &&
        (kl_device_event_create(x->dev, &ev[i]) != KL_OK || kl_device_event_record_on(ev[i], on) != KL_OK))
      st = fail(x, err, errlen, "event");
  }
  if (kl_device_synchronize(x->dev) != KL_OK && st == KL_OK) st = fail(x, err, errlen, "synchronize");
  for (int i = 0; i < P->nsteps; i++) kl_device_event_destroy(ev[i]);
  free(ev);
  for (int k = 0; k < ns; k++) kl_device_stream_destroy(streams[k]);
  return st;
}
