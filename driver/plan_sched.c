/* plan_sched.c — waves and streams for a host plan's steps (plan_sched.h). */
#include "driver/plan_sched.h"
#include "core/arena.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kl_plan_sched_free(kl_plan_sched *s) {
  free(s->dep_off);
  free(s->dep);
  free(s->cross);
  free(s->wave);
  free(s->stream);
  free(s->order);
  memset(s, 0, sizeof *s);
}

kl_status kl_plan_schedule(const kl_bundle_target *P, int max_streams, kl_plan_sched *s, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  int n = P->nsteps, nd = 0;
  if (max_streams < 1) max_streams = 1;
  for (int i = 0; i < n; i++) nd += P->steps[i].nwaits;
  s->nsteps = n;
  s->dep_off = kl_xcalloc((size_t)n + 1, sizeof *s->dep_off);
  s->dep = kl_xcalloc((size_t)nd + 1, sizeof *s->dep);
  s->cross = kl_xcalloc((size_t)nd + 1, sizeof *s->cross);
  s->wave = kl_xcalloc((size_t)n + 1, sizeof *s->wave);
  s->stream = kl_xcalloc((size_t)n + 1, sizeof *s->stream);
  s->order = kl_xcalloc((size_t)n + 1, sizeof *s->order);
  int k = 0;
  for (int i = 0; i < n; i++) { /* deps and waves */
    const kl_bundle_step *st = &P->steps[i];
    s->dep_off[i] = k;
    int w = 0;
    for (int j = 0; j < st->nwaits; j++) {
      int d = i - 1;
      while (d >= 0 && P->steps[d].token != st->waits[j]) d--;
      if (d < 0) {
        snprintf(err, errlen, "step %d waits on token %d, which no earlier step yields", i, st->waits[j]);
        kl_plan_sched_free(s);
        return KL_ERR;
      }
      s->dep[k++] = d;
      if (s->wave[d] + 1 > w) w = s->wave[d] + 1;
    }
    s->wave[i] = w;
    if (w + 1 > s->nwaves) s->nwaves = w + 1;
  }
  s->dep_off[n] = k;
  int o = 0; /* issue order: wave by wave, plan order within a wave */
  for (int w = 0; w < s->nwaves; w++)
    for (int i = 0; i < n; i++)
      if (s->wave[i] == w) s->order[o++] = i;
  int *last = kl_xcalloc((size_t)max_streams, sizeof *last); /* last step issued on each stream */
  int *when = kl_xcalloc((size_t)max_streams, sizeof *when); /* its position in the order */
  for (int q = 0; q < n; q++) {
    int i = s->order[q], on = -1;
    for (int j = s->dep_off[i]; j < s->dep_off[i + 1] && on < 0; j++)
      if (last[s->stream[s->dep[j]]] == s->dep[j]) on = s->stream[s->dep[j]];
    if (on < 0 && s->nstreams < max_streams) on = s->nstreams++;
    if (on < 0) { /* the stream whose last step was issued longest ago */
      on = 0;
      for (int t = 1; t < s->nstreams; t++)
        if (when[t] < when[on]) on = t;
    }
    s->stream[i] = on;
    last[on] = i;
    when[on] = q;
    for (int j = s->dep_off[i]; j < s->dep_off[i + 1]; j++) s->cross[j] = s->stream[s->dep[j]] != on;
  }
  free(last);
  free(when);
  if (!s->nstreams) s->nstreams = 1;
  return KL_OK;
}
