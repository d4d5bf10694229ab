/* test_plan_sched.c — the executor's schedule of a host plan (driver/plan_sched.h), on
 * plans built by hand (only tokens and waits matter):
 *  - a diamond (a -> b, c -> d): waves 0, 1, 1, 2; b continues a's stream, c opens a
 *    second one, d continues b's; exactly the waits across streams become event waits;
 *  - six independent steps on at most 4 streams: one wave, streams 0..3 then reused
 *    oldest first; with 1 stream everything is on stream 0 without event waits;
 *  - two chains issued wave by wave (interleaved), each on its own stream;
 *  - a wait on a token no earlier step yields (unknown, or a later step's) is an error
 *    naming the step and the token;
 *  - random DAGs: every dep is earlier and yields the awaited token, waves are 1 + the
 *    deepest dep, no two steps of one wave depend on each other, streams stay below the
 *    limit, cross marks exactly the deps on other streams, the issue order goes by wave
 *    then index, and a step whose dep is the last step issued on its stream continues
 *    a such stream. */
#include "check.h"
#include "driver/plan_sched.h"
#include <stdlib.h>
#include <string.h>

enum { MAXS = 40 };

typedef struct plan {
  kl_bundle_step steps[MAXS];
  int waits[MAXS][MAXS];
  kl_bundle_target t;
} plan;

/* Step i yields token 10 + i; w lists the steps it waits on (-1 ends it). */
static void add(plan *p, const int *w) {
  int i = p->t.nsteps++;
  kl_bundle_step *s = &p->steps[i];
  memset(s, 0, sizeof *s);
  s->kind = KL_BUNDLE_LAUNCH;
  s->token = 10 + i;
  s->nwaits = 0;
  for (; w && *w >= 0; w++) p->waits[i][s->nwaits++] = 10 + *w;
  s->waits = p->waits[i];
  p->t.steps = p->steps;
}

static void init(plan *p) {
  memset(p, 0, sizeof *p);
  p->t.name = "test";
  p->t.steps = p->steps;
}

static void test_diamond(void) {
  group_begin();
  plan p;
  init(&p);
  add(&p, NULL);
  add(&p, (int[]){ 0, -1 });
  add(&p, (int[]){ 0, -1 });
  add(&p, (int[]){ 1, 2, -1 });
  kl_plan_sched s;
  char err[256] = "";
  CHECK(kl_plan_schedule(&p.t, 4, &s, err, sizeof err) == KL_OK, "%s", err);
  CHECK(s.nwaves == 3 && s.wave[0] == 0 && s.wave[1] == 1 && s.wave[2] == 1 && s.wave[3] == 2);
  CHECK(s.nstreams == 2 && s.stream[0] == 0 && s.stream[1] == 0 && s.stream[2] == 1 && s.stream[3] == 0,
        "streams %d %d %d %d", s.stream[0], s.stream[1], s.stream[2], s.stream[3]);
  CHECK(s.dep_off[3] == 2 && s.dep_off[4] == 4 && s.dep[2] == 1 && s.dep[3] == 2);
  CHECK(!s.cross[0] && s.cross[1] && !s.cross[2] && s.cross[3]); /* b: same stream; c: other; d: b same, c other */
  kl_plan_sched_free(&s);
  group_end("diamond: waves, streams, event waits");
}

static void test_wide(void) {
  group_begin();
  plan p;
  init(&p);
  for (int i = 0; i < 6; i++) add(&p, NULL);
  kl_plan_sched s;
  char err[256] = "";
  CHECK(kl_plan_schedule(&p.t, 4, &s, err, sizeof err) == KL_OK, "%s", err);
  CHECK(s.nwaves == 1 && s.nstreams == 4);
  int want[6] = { 0, 1, 2, 3, 0, 1 };
  for (int i = 0; i < 6; i++) CHECK(s.stream[i] == want[i] && s.wave[i] == 0, "step %d on stream %d", i, s.stream[i]);
  kl_plan_sched_free(&s);
  add(&p, (int[]){ 0, 5, -1 });
  CHECK(kl_plan_schedule(&p.t, 1, &s, err, sizeof err) == KL_OK, "%s", err);
  CHECK(s.nstreams == 1 && s.nwaves == 2 && s.wave[6] == 1);
  for (int i = 0; i < 7; i++) CHECK(s.stream[i] == 0);
  CHECK(!s.cross[0] && !s.cross[1]);
  kl_plan_sched_free(&s);
  group_end("independent steps: one wave, up to 4 streams; 1 stream");
}

/* Two chains a0 -> a1 -> a2 and b0 -> b1 -> b2 in plan order a..., b..., joined by j:
 * issued wave by wave (a0 b0 a1 b1 a2 b2 j), each chain on its own stream, j on a third. */
static void test_two_chains(void) {
  group_begin();
  plan p;
  init(&p);
  add(&p, NULL);
  add(&p, (int[]){ 0, -1 });
  add(&p, (int[]){ 0, 1, -1 });
  add(&p, NULL);
  add(&p, (int[]){ 3, -1 });
  add(&p, (int[]){ 3, 4, -1 });
  add(&p, (int[]){ 1, 4, -1 });
  kl_plan_sched s;
  char err[256] = "";
  CHECK(kl_plan_schedule(&p.t, 4, &s, err, sizeof err) == KL_OK, "%s", err);
  int order[7] = { 0, 3, 1, 4, 2, 5, 6 }, stream[7] = { 0, 0, 0, 1, 1, 1, 2 };
  for (int q = 0; q < 7; q++) CHECK(s.order[q] == order[q], "order[%d] = %d", q, s.order[q]);
  for (int i = 0; i < 7; i++) CHECK(s.stream[i] == stream[i], "step %d on stream %d", i, s.stream[i]);
  kl_plan_sched_free(&s);
  group_end("two chains: issued wave by wave, one stream each");
}

static void test_errors(void) {
  group_begin();
  plan p;
  init(&p);
  add(&p, NULL);
  add(&p, (int[]){ 0, -1 });
  p.waits[1][0] = 99;
  kl_plan_sched s;
  char err[256] = "";
  CHECK(kl_plan_schedule(&p.t, 4, &s, err, sizeof err) == KL_ERR);
  CHECK(strstr(err, "step 1 waits on token 99, which no earlier step yields") != NULL, "%s", err);
  CHECK(s.dep == NULL && s.wave == NULL);
  p.waits[1][0] = 10;
  p.waits[0][0] = 11; /* step 0 waits on step 1's token */
  p.steps[0].nwaits = 1;
  CHECK(kl_plan_schedule(&p.t, 4, &s, err, sizeof err) == KL_ERR);
  CHECK(strstr(err, "step 0 waits on token 11") != NULL, "%s", err);
  group_end("waits on no earlier token are errors");
}

static void test_random(void) {
  group_begin();
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  for (int iter = 0; iter < 300; iter++) {
    plan p;
    init(&p);
    int n = 1 + (int)(xorshift64(&rng) % MAXS);
    for (int i = 0; i < n; i++) {
      int w[MAXS + 1], k = 0;
      for (int j = 0; j < i; j++)
        if (xorshift64(&rng) % (unsigned)(i < 4 ? 2 : i / 2) == 0) w[k++] = j;
      w[k] = -1;
      add(&p, w);
    }
    int ms = 1 + (int)(xorshift64(&rng) % 5);
    kl_plan_sched s;
    char err[256] = "";
    kl_status st = kl_plan_schedule(&p.t, ms, &s, err, sizeof err);
    CHECK(st == KL_OK, "%s", err);
    if (st != KL_OK) continue;
    int last[8], maxw = 0, prev = -1;
    for (int t = 0; t < 8; t++) last[t] = -1;
    CHECK(s.nstreams >= 1 && s.nstreams <= ms);
    for (int i = 0; i < n; i++) {
      const kl_bundle_step *st = &p.steps[i];
      CHECK(s.dep_off[i + 1] - s.dep_off[i] == st->nwaits);
      int w = 0;
      for (int k = s.dep_off[i]; k < s.dep_off[i + 1]; k++) {
        int d = s.dep[k];
        CHECK(d >= 0 && d < i && p.steps[d].token == st->waits[k - s.dep_off[i]]);
        if (s.wave[d] + 1 > w) w = s.wave[d] + 1;
        CHECK(s.cross[k] == (s.stream[d] != s.stream[i]));
      }
      CHECK(s.wave[i] == w, "iter %d step %d wave %d want %d", iter, i, s.wave[i], w);
      CHECK(s.stream[i] >= 0 && s.stream[i] < s.nstreams);
      if (w > maxw) maxw = w;
    }
    for (int q = 0; q < n; q++) { /* the issue order: by wave, then index; chains continue streams */
      int i = s.order[q];
      CHECK(i >= 0 && i < n);
      if (q) CHECK(s.wave[prev] < s.wave[i] || (s.wave[prev] == s.wave[i] && prev < i), "order at %d", q);
      bool chain = false, cont = false;
      for (int k = s.dep_off[i]; k < s.dep_off[i + 1]; k++)
        if (last[s.stream[s.dep[k]]] == s.dep[k]) {
          chain = true;
          cont |= s.stream[s.dep[k]] == s.stream[i];
        }
      if (chain) CHECK(cont, "iter %d step %d does not continue a dep's stream", iter, i);
      last[s.stream[i]] = i;
      prev = i;
    }
    CHECK(s.nwaves == maxw + 1);
    kl_plan_sched_free(&s);
  }
  group_end("random DAGs: deps, waves, streams, event waits");
}

int main(void) {
  test_diamond();
  test_wide();
  test_two_chains();
  test_errors();
  test_random();
  return check_summary("test_plan_sched");
}
