/* fuzz_bundle.c — libFuzzer target: loading bundles into kiln (kl_program_from_bundle:
 * the client reader, then the IR parse and verify and the plan rebuilt and checked
 * against the bundle's). Each input is tried as it is and with its framing repaired
 * (bundle_repair.h). A rejected bundle must leave a message; a loaded program is
 * introspected (targets, kernels, steps, slots) and released. Binaries are not loaded
 * or run. Seeds: bundles generated at test time by spec/fuzz/gen_bundles.lua. */
#include "driver/bundle.h"
#include "spec/fuzz/bundle_repair.h"
#include "spec/fuzz/fuzz_util.h"

static volatile size_t sink;

static void check(const void *data, size_t size) {
  char err[1024];
  kl_bundle *b = kl_bundle_open_memory(data, size, err, sizeof err);
  if (!b) return; /* fuzz_bundle_client checks the reader itself */
  kl_ctx *ctx = fuzz_ctx();
  err[0] = 0;
  kl_program *p = kl_program_from_bundle(ctx, b, "fuzz.klb", err, sizeof err);
  kl_bundle_close(b);
  if (!p && !err[0]) fuzz_bug(ctx, "a rejected bundle left no message");
  if (p) {
    for (int t = 0; t < kl_program_ntargets(p); t++) {
      const char *name = kl_program_target(p, t);
      for (int k = 0; k < kl_program_nkernels(p, name); k++) {
        const kl_kernel_info *ki = kl_program_kernel(p, name, k);
        const kl_binary_info *bi = kl_program_binary(p, name, ki->name);
        if (!bi || !bi->size) fuzz_bug(ctx, "a loaded kernel has no binary");
        sink += strlen(ki->name) + (size_t)ki->nargs;
      }
      for (int s = 0; s < kl_program_nsteps(p, name); s++) sink += (size_t)kl_program_step(p, name, s)->nargs;
      for (int s = 0; s < kl_program_nslots(p, name); s++) {
        const char *kind = NULL, *pname = NULL;
        const char *ty = kl_program_slot(p, name, s, &kind, &pname);
        sink += (ty ? strlen(ty) : 0) + (kind ? strlen(kind) : 0);
      }
    }
    kl_program_release(p);
  }
  kl_ctx_destroy(ctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_bundle_input(check, data, size); }
