/* test_fp8_codegen.c — the generated fp8 conversions (passes/lower_fp8.h) against
 * core/dtype.h, bit for bit, on the host (ORC JIT):
 *  - f32 -> fp8: a graph convert over f32 inputs holding every fp8 value, every midpoint
 *    between neighbours (the ties) and the f32 values next to them, overflow (at and past
 *    the rounding boundary), +-inf, NaN, +-0, f32 subnormals and 2^16 random f32 bit
 *    patterns; each output byte equals kl_f64_to_fp8;
 *  - fp8 -> f32: all 256 codes converted back; each f32 equals kl_fp8_to_f64 (NaN: a NaN);
 *  - fp8 -> f16 (the direct conversion of lower_fp8.h that feeds fp8 GEMMs): all 256
 *    codes, at lengths 1..9 and 2 x 256 (scalar and vector forms), each f16 equal to
 *    kl_fp8_to_f64 with the sign of zero (NaN: a NaN);
 *  - lengths 1..9 and the big one, so that both the scalar and vector forms run.
 * The four formats: f8e4m3fn, f8e5m2, f8e4m3fnuz, f8e5m2fnuz. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/dtype.h"
#include "core/graph_api.h"
#include "core/pass.h"
#include "driver/program.h"
#include "runtime/device.h"
#include "runtime/tensor.h"
#include "include/kiln.h"

#include "check.h"

static kl_tensor *run1(kl_ctx *ctx, kl_device *dev, kl_dtype from, kl_dtype to, kl_tensor *in) {
  kl_op *module = kl_module_create(ctx, KL_LOC_UNKNOWN);
  kl_op *g = kl_graph_create(ctx, module, "cvt", KL_LOC_UNKNOWN);
  int64_t n = kl_tensor_numel(in);
  kl_value *x = kl_graph_add_param(g, "x", from, 1, &n, NULL, KL_LOC_UNKNOWN);
  kl_value *y = kl_graph_add_convert(g, x, to, KL_LOC_UNKNOWN);
  char err[1024] = "";
  CHECK(y && kl_graph_output(g, 1, &y, KL_LOC_UNKNOWN) == KL_OK, "graph");
  kl_compile_opts o = { 0 };
  o.no_cache = true;
  kl_program *p = kl_compile(g, &o, err, sizeof err);
  CHECK(p != NULL, "compile %s -> %s: %s", kl_dtype_name(from), kl_dtype_name(to), err);
  if (!p) return NULL;
  kl_named_tensor nt = { "x", in };
  int nout = 0;
  kl_tensor **outs = NULL;
  kl_status st = kl_program_run(p, dev, 1, &nt, &nout, &outs, err, sizeof err);
  CHECK(st == KL_OK && nout == 1, "run: %s", err);
  kl_program_release(p);
  kl_tensor *r = st == KL_OK ? outs[0] : NULL;
  free(outs);
  return r;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static void check_format(kl_ctx *ctx, kl_device *dev, kl_dtype dt) {
  char err[512];
  /* f32 inputs */
  int cap = 256 * 8 + 70000, n = 0;
  float *v = malloc(sizeof(float) * (size_t)cap);
  for (int c = 0; c < 256; c++) {
    double a = kl_fp8_to_f64(dt, (uint8_t)c);
    v[n++] = (float)a;
    double b = kl_fp8_to_f64(dt, (uint8_t)(c + 1));
    if ((c & 0x7f) != 0x7f && !isnan(a) && !isnan(b) && !isinf(a) && !isinf(b)) {
      float mid = (float)((a + b) / 2); /* exact: fp8 midpoints fit f32 */
      v[n++] = mid;
      v[n++] = nextafterf(mid, INFINITY);
      v[n++] = nextafterf(mid, -INFINITY);
    }
  }
  double mx = kl_fp8_max(dt), step = mx - kl_fp8_to_f64(dt, kl_f64_to_fp8(dt, mx) - 1);
  float specials[] = { (float)(mx + step / 2),
                       nextafterf((float)(mx + step / 2), 0),
                       nextafterf((float)(mx + step / 2), INFINITY),
                       (float)(2 * mx),
                       1e30f,
                       -1e30f,
                       INFINITY,
                       -INFINITY,
                       NAN,
                       -NAN,
                       0.0f,
                       -0.0f,
                       1e-40f,
                       -1e-40f,
                       1e-45f,
                       3.4e38f,
                       -(float)(mx + step / 2),
                       (float)mx,
                       -(float)mx };
  for (size_t i = 0; i < sizeof specials / sizeof *specials; i++) v[n++] = specials[i];
  while (n < cap) {
    uint32_t u = (uint32_t)xorshift64(&rng);
    if (n % 2) u = (u & 0x807fffffu) | ((uint32_t)(100 + (u >> 23) % 60) << 23); /* near the fp8 range */
    memcpy(&v[n++], &u, 4);
  }
  for (int len = 1; len <= 10; len++) {
    int64_t m = len == 10 ? n : len;
    int off = len == 10 ? 0 : (int)(xorshift64(&rng) % (uint64_t)(n - 9));
    kl_tensor *in = kl_tensor_wrap(v + off, sizeof(float) * (size_t)m, false, KL_DT_F32, 1, &m, NULL, 0, err,
                                   sizeof err);
    kl_tensor *out = in ? run1(ctx, dev, KL_DT_F32, dt, in) : NULL;
    CHECK(out != NULL, "f32 -> %s", kl_dtype_name(dt));
    int bad = 0;
    for (int64_t i = 0; out && i < m; i++) {
      uint8_t got = ((const uint8_t *)kl_tensor_data(out))[i], want = kl_f64_to_fp8(dt, v[off + i]);
      if (got != want && bad++ < 5)
        CHECK(false, "%s: f32 %a (%08x) -> %02x, core/dtype %02x", kl_dtype_name(dt), (double)v[off + i],
              *(const uint32_t *)&v[off + i], got, want);
    }
    CHECK(bad == 0, "%s: %d of %lld f32 -> fp8 differ", kl_dtype_name(dt), bad, (long long)m);
    kl_tensor_release(in);
    kl_tensor_release(out);
  }
  free(v);
  /* all codes back to f32 */
  uint8_t codes[256];
  for (int c = 0; c < 256; c++) codes[c] = (uint8_t)c;
  int64_t m = 256;
  kl_tensor *in = kl_tensor_wrap(codes, 256, false, dt, 1, &m, NULL, 0, err, sizeof err);
  kl_tensor *out = in ? run1(ctx, dev, dt, KL_DT_F32, in) : NULL;
  CHECK(out != NULL, "%s -> f32", kl_dtype_name(dt));
  for (int c = 0; out && c < 256; c++) {
    float got = ((const float *)kl_tensor_data(out))[c];
    double want = kl_fp8_to_f64(dt, (uint8_t)c);
    CHECK(isnan(want) ? isnan(got) : (got == want && !signbit(got) == !signbit(want)), "%s code %02x -> %a, want %a",
          kl_dtype_name(dt), c, (double)got, want);
  }
  kl_tensor_release(in);
  kl_tensor_release(out);
  /* all codes to f16, at several lengths (the code of lane i is (start + i) mod 256) */
  uint8_t codes2[512];
  for (int c = 0; c < 512; c++) codes2[c] = (uint8_t)c;
  for (int len = 1; len <= 10; len++) {
    int64_t m2 = len == 10 ? 512 : len;
    int start = len == 10 ? 0 : (int)(xorshift64(&rng) % 256);
    kl_tensor *in2 = kl_tensor_wrap(codes2 + start, (size_t)m2, false, dt, 1, &m2, NULL, 0, err, sizeof err);
    kl_tensor *out2 = in2 ? run1(ctx, dev, dt, KL_DT_F16, in2) : NULL;
    CHECK(out2 != NULL, "%s -> f16", kl_dtype_name(dt));
    for (int64_t i = 0; out2 && i < m2; i++) {
      uint8_t c = codes2[start + i];
      uint16_t h = ((const uint16_t *)kl_tensor_data(out2))[i];
      double got = kl_f16_to_f64(h), want = kl_fp8_to_f64(dt, c);
      CHECK(isnan(want) ? isnan(got) : (got == want && !signbit(got) == !signbit(want)),
            "%s code %02x -> f16 %04x (%a), want %a", kl_dtype_name(dt), c, h, got, want);
    }
    kl_tensor_release(in2);
    kl_tensor_release(out2);
  }
  GROUP(kl_dtype_name(dt));
}

int main(void) {
  kl_ctx *ctx = kl_ctx_create();
  kl_register_builtin_passes(ctx);
  char err[512];
  kl_device *dev = kl_device_open("host", err, sizeof err);
  CHECK(dev != NULL, "host device: %s", err);
  if (dev) {
    check_format(ctx, dev, KL_DT_F8E4M3FN);
    check_format(ctx, dev, KL_DT_F8E5M2);
    check_format(ctx, dev, KL_DT_F8E4M3FNUZ);
    check_format(ctx, dev, KL_DT_F8E5M2FNUZ);
  }
  kl_device_destroy(dev);
  kl_ctx_destroy(ctx);
  return check_summary("test_fp8_codegen");
}
