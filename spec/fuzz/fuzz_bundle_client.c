/* fuzz_bundle_client.c — libFuzzer target: the plain-C bundle reader alone
 * (client/kiln_client.c, built without the rest of kiln). Each input is opened as it is
 * and once more with its framing repaired (bundle_repair.h). A bundle that opens must be
 * readable everywhere it points (every string, shape, argument, binary, constant and the
 * IR are walked under ASan), and re-encoding it must give a bundle that opens and
 * re-encodes to the same bytes (fuzz_bug otherwise). A failed open must leave a message.
 * Seeds: bundles generated at test time by spec/fuzz/gen_bundles.lua. */
#include "client/kiln_client.h"
#include "spec/fuzz/bundle_repair.h"
#include <stdio.h>

static void bug(const char *what) {
  fprintf(stderr, "kiln fuzz: %s\n", what);
  abort();
}

static volatile size_t sink;
static void walk_tensor(const kl_bundle_tensor *t) {
  sink += strlen(t->type) + strlen(t->elem) + (size_t)t->elem_bytes;
  for (int i = 0; i < t->rank; i++) sink += (size_t)t->shape[i] + (size_t)t->strides[i];
}
static void walk_bytes(const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) sink += b[i];
}

static void check(const void *data, size_t size) {
  char err[512];
  kl_bundle *b = kl_bundle_open_memory(data, size, err, sizeof err);
  if (!b) {
    if (!err[0]) bug("a rejected bundle left no message");
    return;
  }
  sink += strlen(kl_bundle_producer(b)) + kl_bundle_format_version(b);
  int nt = kl_bundle_ntargets(b);
  kl_bundle_target *ts = calloc((size_t)nt, sizeof *ts);
  for (int i = 0; i < nt; i++) {
    const kl_bundle_target *t = kl_bundle_target_at(b, i);
    ts[i] = *t;
    if (kl_bundle_find_target(b, t->name) != t) bug("kl_bundle_find_target does not find a target");
    sink += strlen(t->arch) + strlen(t->binary_format);
    if (strlen(t->ir) != t->ir_size) bug("IR size disagrees with its text");
    for (int k = 0; k < t->nkernels; k++) {
      const kl_bundle_kernel *K = &t->kernels[k];
      sink += strlen(K->kind) + strlen(K->perf_config);
      if (kl_bundle_find_kernel(t, K->name) != K) bug("kl_bundle_find_kernel does not find a kernel");
      for (int a = 0; a < K->nargs; a++) {
        sink += strlen(K->args[a].name);
        walk_tensor(&K->args[a].t);
      }
      size_t n = 0;
      if (kl_bundle_binary(b, t->name, K->name, &n) != K->binary || n != K->binary_size)
        bug("kl_bundle_binary disagrees");
      walk_bytes(K->binary, K->binary_size);
    }
    for (int s = 0; s < t->nslots; s++) {
      const kl_bundle_slot *S = &t->slots[s];
      walk_tensor(&S->t);
      if (S->kind == KL_BUNDLE_PARAM && kl_bundle_find_param(t, S->name) != s)
        bug("kl_bundle_find_param does not find a param");
      if (S->data) walk_bytes(S->data, S->data_size);
    }
    for (int s = 0; s < t->nsteps; s++) {
      const kl_bundle_step *S = &t->steps[s];
      if ((unsigned)S->kind > KL_BUNDLE_FREE) bug("step kind out of range");
      if (S->kind == KL_BUNDLE_LAUNCH && (S->kernel < 0 || S->kernel >= t->nkernels)) bug("step kernel out of range");
      for (int a = 0; a < kl_bundle_step_naccess(S); a++) {
        int wr, slot = kl_bundle_step_access(t, S, a, &wr);
        if (slot < 0 || slot >= t->nslots) bug("step slot out of range");
      }
      for (int w = 0; w < S->nwaits; w++) {
        int j = s - 1;
        while (j >= 0 && t->steps[j].token != S->waits[w]) j--;
        if (j < 0) bug("a wait names no earlier step's token");
      }
    }
    for (int o = 0; o < t->noutputs; o++)
      if (t->outputs[o] < 0 || t->outputs[o] >= t->nslots) bug("output slot out of range");
  }
  void *y = NULL, *z = NULL;
  size_t ny = 0, nz = 0;
  if (kl_bundle_encode(nt, ts, kl_bundle_producer(b), &y, &ny, err, sizeof err) != 0) {
    fprintf(stderr, "%s\n", err);
    bug("an opened bundle does not re-encode");
  }
  kl_bundle *b2 = kl_bundle_open_memory(y, ny, err, sizeof err);
  if (!b2) {
    fprintf(stderr, "%s\n", err);
    bug("a re-encoded bundle does not open");
  }
  kl_bundle_target *t2 = calloc((size_t)nt, sizeof *t2);
  for (int i = 0; i < nt; i++) t2[i] = *kl_bundle_target_at(b2, i);
  if (kl_bundle_ntargets(b2) != nt || kl_bundle_encode(nt, t2, kl_bundle_producer(b2), &z, &nz, err, sizeof err) != 0 ||
      nz != ny || memcmp(y, z, ny))
    bug("re-encoding is not stable");
  free(t2);
  free(y);
  free(z);
  free(ts);
  kl_bundle_close(b2);
  kl_bundle_close(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_bundle_input(check, data, size); }
