/* kiln_bench.c — the benchmarks' Lua C module (build/kiln_bench.so, `require "kiln_bench"`;
 * not part of kiln.so, not installed): kiln_bench.cblas_sgemm(a, b, c [, threads]), the host
 * BLAS peer for bench/host_gemm.lua. OpenBLAS is opened with dlopen at the first call
 * (libopenblas.so.0, else libblas.so.3 with cblas symbols), so nothing links a BLAS; a
 * missing library is a Lua error saying which package to install.
 * a: [M,K], b: [K,N], c: [M,N], f32, row-major host tensors (kiln.tensor userdata); c is
 * written in place.
 * Contract with the kiln module: this module sees only the Lua C API and kiln_core (it is
 * loaded into stock lua5.4 next to kiln.so, and into the static kiln, which exports the
 * Lua API alone), so it reads a "kiln.tensor" userdata the way lua/kiln_lua_tensor.c lays
 * it out: its first member is the kl_tensor pointer (NULL once released). */
#include <lua.h>
#include <lauxlib.h>
#include "runtime/tensor.h"
#include <dlfcn.h>
#include <string.h>

typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                         const float *b, int ldb, float beta, float *c, int ldc);
typedef void (*set_threads_fn)(int);

typedef struct tensor_ud_head {
  kl_tensor *t;
} tensor_ud_head; /* lua/kiln_lua_tensor.c's tens_ud */

static kl_tensor *check_f32_2d(lua_State *L, int idx) {
  tensor_ud_head *u = luaL_testudata(L, idx, "kiln.tensor");
  if (!u) luaL_argerror(L, idx, "expected a kiln.tensor");
  kl_tensor *t = u->t;
  if (!t) luaL_argerror(L, idx, "the tensor has been released");
  if (t->dtype != KL_DT_F32 || t->rank != 2 || !kl_strides_is_row_major(t->rank, t->shape, t->strides))
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
    if (!lib) return luaL_error(L, "kiln_bench.cblas_sgemm: no BLAS library (apt-get install libopenblas-dev)");
    sgemm = (sgemm_fn)dlsym(lib, "cblas_sgemm");
    set_threads = (set_threads_fn)dlsym(lib, "openblas_set_num_threads");
  }
  if (!sgemm) return luaL_error(L, "kiln_bench.cblas_sgemm: the BLAS library has no cblas_sgemm");
  kl_tensor *a = check_f32_2d(L, 1), *b = check_f32_2d(L, 2), *c = check_f32_2d(L, 3);
  int m = (int)a->shape[0], k = (int)a->shape[1], n = (int)b->shape[1];
  if (b->shape[0] != k || c->shape[0] != m || c->shape[1] != n)
    return luaL_error(L, "kiln_bench.cblas_sgemm: shapes [%d,%d] x [%d,%d] -> [%d,%d] do not agree", m, k,
                      (int)b->shape[0], n, (int)c->shape[0], (int)c->shape[1]);
  if (set_threads && lua_isinteger(L, 4)) set_threads((int)lua_tointeger(L, 4));
  sgemm(101 /* row major */, 111, 111, m, n, k, 1.0f, (const float *)a->data + a->offset, k,
        (const float *)b->data + b->offset, n, 0.0f, (float *)c->data + c->offset, n);
  return 0;
}

int luaopen_kiln_bench(lua_State *L) {
  static const luaL_Reg fns[] = { { "cblas_sgemm", cblas_sgemm_l }, { NULL, NULL } };
  luaL_newlib(L, fns);
  return 1;
}
