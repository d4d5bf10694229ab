/* public_api_only.c — the half of test_public_api that sees include/kiln.h and nothing
 * else of kiln (as an embedder does): the layout table of kiln.h's value types
 * (public_api_layout.h), the address of every function kiln.h declares (so one that
 * the libraries do not define fails the link), and a graph built, compiled, run and
 * read back through kiln.h alone. */
#include "kiln.h"
#include "public_api_layout.h"
#include <stdio.h>
#include <stdlib.h>

const kl_layout_entry kl_layout_public[] = { KL_PUBLIC_LAYOUT(KL_LAYOUT_ENTRY) };
const int kl_layout_public_n = (int)(sizeof kl_layout_public / sizeof kl_layout_public[0]);

#define F(f) (void (*)(void))(f),
void (*const kl_public_fns[])(void) = {
  F(kl_ctx_create) F(kl_ctx_destroy) F(kl_register_builtin_passes) F(kl_loc_make) F(kl_loc_format) F(kl_diag_take)
      F(kl_diag_has_error) F(kl_diag_error_count) F(kl_ctx_set_diag_handler) F(kl_dtype_name) F(kl_dtype_from_name)
          F(kl_dtype_size) F(kl_module_create) F(kl_graph_create) F(kl_graph_add_param) F(kl_graph_add_op)
              F(kl_graph_add_convert) F(kl_graph_add_constant) F(kl_graph_output) F(kl_parse_module)
                  F(kl_migraphx_parse) F(kl_migraphx_parse_func) F(kl_module_graph) F(kl_verify) F(kl_print_op)
                      F(kl_graph_eval) F(kl_default_pipeline) F(kl_compile) F(kl_program_retain) F(kl_program_release)
                          F(kl_program_ntargets) F(kl_program_target) F(kl_program_nkernels) F(kl_program_noutputs)
                              F(kl_program_compile_ms) F(kl_program_from_cache) F(kl_program_ir) F(kl_device_open)
                                  F(kl_device_destroy) F(kl_device_get_info) F(kl_device_error) F(kl_tensor_zeros)
                                      F(kl_tensor_from_f64) F(kl_tensor_from_i64) F(kl_tensor_rand) F(kl_tensor_wrap)
                                          F(kl_tensor_as_layout) F(kl_tensor_contiguous) F(kl_tensor_retain)
                                              F(kl_tensor_release) F(kl_tensor_dtype) F(kl_tensor_rank) F(kl_tensor_dim)
                                                  F(kl_tensor_stride) F(kl_tensor_numel) F(kl_tensor_data)
                                                      F(kl_tensor_get_flat) F(kl_tensor_set_flat) F(kl_tensor_to_f64)
                                                          F(kl_tensor_tostring) F(kl_tensor_allclose) F(kl_program_run)
                                                              F(kl_program_load_kernels) F(kl_program_prepare)
                                                                  F(kl_prepared_nsets) F(kl_prepared_launch)
                                                                      F(kl_prepared_sync) F(kl_prepared_time)
                                                                          F(kl_prepared_outputs) F(kl_prepared_free)
                                                                              F(kl_program_save)
                                                                                  F(kl_program_save_memory)
                                                                                      F(kl_program_load)
                                                                                          F(kl_program_load_for_device)
};
const int kl_public_nfns = (int)(sizeof kl_public_fns / sizeof kl_public_fns[0]);

/* y = relu(x * w + b) for x[2,3], w[3] and b (a scalar constant), compiled for the host
 * and run on dev; the output's values into out[6]. Returns 0, or 1 with a message in err. */
int public_mul_add_relu(kl_device *dev, const double x[6], const double w[3], double b, double out[6], char *err,
                        size_t errlen) {
  int rc = 1;
  kl_ctx *ctx = kl_ctx_create();
  kl_register_builtin_passes(ctx);
  kl_op *g = kl_graph_create(ctx, kl_module_create(ctx, KL_HERE(ctx)), "mar", KL_HERE(ctx));
  kl_value *xv = kl_graph_add_param(g, "x", KL_DT_F32, 2, (int64_t[]){ 2, 3 }, NULL, KL_HERE(ctx));
  kl_value *wv = kl_graph_add_param(g, "w", KL_DT_F32, 1, (int64_t[]){ 3 }, NULL, KL_HERE(ctx));
  kl_value *bv = kl_graph_add_constant(g, KL_DT_F32, 0, NULL, &b, KL_HERE(ctx));
  kl_value *m = kl_graph_add_op(g, "mul", 2, (kl_value *[]){ xv, wv }, NULL, KL_HERE(ctx));
  kl_value *a = kl_graph_add_op(g, "add", 2, (kl_value *[]){ m, bv }, NULL, KL_HERE(ctx));
  kl_value *y = kl_graph_add_op(g, "relu", 1, &a, NULL, KL_HERE(ctx));
  kl_program *p = NULL;
  kl_tensor *tx = kl_tensor_from_f64(KL_DT_F32, 2, (int64_t[]){ 2, 3 }, NULL, x, err, errlen);
  kl_tensor *tw = tx ? kl_tensor_from_f64(KL_DT_F32, 1, (int64_t[]){ 3 }, NULL, w, err, errlen) : NULL;
  kl_tensor **outs = NULL;
  int nout = 0;
  if (kl_graph_output(g, 1, &y, KL_HERE(ctx)) != KL_OK) {
    char *d = kl_diag_take(ctx);
    snprintf(err, errlen, "%s", d);
    free(d);
  } else if (tw && (p = kl_compile(g, NULL, err, errlen)) != NULL) {
    kl_named_tensor in[] = { { "x", tx }, { "w", tw } };
    if (kl_program_run(p, dev, 2, in, &nout, &outs, err, errlen) == KL_OK) {
      if (nout == 1 && kl_tensor_numel(outs[0]) == 6 && kl_tensor_rank(outs[0]) == 2) {
        kl_tensor_to_f64(outs[0], out);
        rc = 0;
      } else {
        snprintf(err, errlen, "%d outputs, the first of %lld elements", nout,
                 nout ? (long long)kl_tensor_numel(outs[0]) : 0LL);
      }
    }
  }
  for (int i = 0; i < nout; i++) kl_tensor_release(outs[i]);
  free(outs);
  kl_tensor_release(tx);
  kl_tensor_release(tw);
  kl_program_release(p);
  kl_ctx_destroy(ctx);
  return rc;
}
