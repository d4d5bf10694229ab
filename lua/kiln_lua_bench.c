/* kiln_lua_bench.c — benchmark helpers: kiln.bench.cblas_sgemm(a, b, c [, threads]),
 * the host BLAS peer for bench/host_gemm.lua. OpenBLAS is opened with dlopen at the first
 * call (libopenblas.so.0, else libblas.so.3 with cblas symbols), so kiln has no link-time
 * BLAS dependency; a missing library is a Lua error saying which package to install.
 * a: [M,K], b: [K,N], c: [M,N], f32, row-major host tensors. */
#include "lua/kiln_lua.h"
#include "lua/kiln_lua_rt.h"
#include <dlfcn.h>
#include <string.h>

typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                         const float *b, int ldb, float beta, float *c, int ldc);
typedef void (*set_threads_fn)(int);

static kl_tensor *check_f32_2d(lua_State *L, int idx) {
  kl_tensor *t = kl_lua__check_tensor(L, idx);
  if ( t->dtype != KL_DT_F32 || t->rank != 2 || !kl_tensor_is_row_major(t))
    luaL_argerror(L, idx, "expected a row-major 2-D f32 tensor");
  return t;
}

static int cblas_sgemm_l(lua_State *L) {
  static void *lib;
  static sgemm_fn sgemm;
  static set_threads_fn set_threads;
  if (!lib) {
    lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libblas.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return luaL_error(L, "kiln.bench.cblas_sgemm: no BLAS library (apt-get install libopenblas-dev)");
    sgemm = (sgemm_fn)dlsym(lib, "cblas_sgemm");
    set_threads = (set_threads_fn)dlsym(lib, "openblas_set_num_threads");
  }
  if (!sgemm) return luaL_error(L, "kiln.bench.cblas_sgemm: the BLAS library has no cblas_sgemm");
  kl_tensor *a = check_f32_2d(L, 1), *b = check_f32_2d(L, 2), *c = check_f32_2d(L, 3);
  int m = (int)a->shape[0], k = (int)a->shape[1], n = (int)b->shape[1];
  if (b->shape[0] != k || c->shape[0] != m || c->shape[1] != n)
    return luaL_error(L, "kiln.bench.cblas_sgemm: shapes [%d,%d] x [%d,%d] -> [%d,%d] do not agree",
                      m, k, (int)b->shape[0], n, (int)c->shape[0], (int)c->shape[1]);
  if (set_threads && lua_isinteger(L, 4)) set_threads((int)lua_tointeger(L, 4));
  sgemm(101 /* row major */, 111, 111, m, n, k, 1.0f, (const float *)a->data + a->offset, k,
        (const float *)b->data + b->offset, n, 0.0f, (float *)c->data + c->offset, n);
  return 0;
}

void kl_lua__open_bench(lua_State *L) {
  static const luaL_Reg fns[] = { { "cblas_sgemm", cblas_sgemm_l }, { NULL, NULL } };
  lua_newtable(L);
  luaL_setfuncs(L, fns, 0);
  lua_setfield(L, -2, "bench");
}
