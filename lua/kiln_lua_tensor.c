/* kiln_lua_tensor.c — host tensors in Lua ("kiln.tensor" userdata over runtime/tensor.h):
 * kiln.tensor / zeros / ones / full / rand, element access, layouts, printing,
 * kiln.compare / kiln.allclose, and the helpers the other front-end binding files share
 * (kiln_lua_rt.h). Indices are 0-based logical coordinates (like numpy and kiln's C API),
 * whatever the memory layout. A tensor's data always lives in host memory; t:to(dev)
 * returns a host copy tagged with the device's name (t.device), and programs copy
 * inputs to the device at each run. */
#include "lua/kiln_lua_rt.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REG_RAND_COUNTER "kiln.rand_counter"

/* user value 1: device name (or nil = host). t stays the first member: bench/kiln_bench.c reads it. */
typedef struct tens_ud {
  kl_tensor *t;
  kl_lua_pin pin;
} tens_ud;

/* ---------------------------------------------------------------- tensors --- */
kl_tensor *kl_lua__test_tensor(lua_State *L, int idx) {
  tens_ud *u = luaL_testudata(L, idx, KL_MT_TENSOR);
  return u ? u->t : NULL;
}
kl_tensor *kl_lua__check_tensor(lua_State *L, int idx) {
  tens_ud *u = luaL_testudata(L, idx, KL_MT_TENSOR);
  if (!u)
    kl_lua__rt_error(L, "kiln.tensor", "argument #%d: expected a kiln.tensor, got a %s", idx, luaL_typename(L, idx));
  if (!u->t) kl_lua__rt_error(L, "kiln.tensor", "this tensor has been released");
  return u->t;
}
kl_tensor *kl_lua__pin_tensor(lua_State *L, int idx, const char *what) {
  kl_lua__check_tensor(L, idx);
  kl_lua__pin_guard(L, idx, &((tens_ud *)lua_touserdata(L, idx))->pin, what);
  return kl_lua__check_tensor(L, idx); /* a finalizer of the guard's allocation may have released it */
}
void kl_lua__push_tensor(lua_State *L, kl_tensor *t) {
  tens_ud *u = lua_newuserdatauv(L, sizeof *u, 1);
  u->t = t;
  u->pin = (kl_lua_pin){ 0, NULL };
  luaL_setmetatable(L, KL_MT_TENSOR);
}
int kl_lua__push_outputs(lua_State *L, int n, kl_tensor **outs, const char *device_id) {
  if (!lua_checkstack(L, n + 4)) {
    for (int i = 0; i < n; i++) kl_tensor_release(outs[i]);
    free(outs);
    return luaL_error(L, "kiln: too many outputs");
  }
  for (int i = 0; i < n; i++) {
    kl_lua__push_tensor(L, outs[i]);
    if (strcmp(device_id, "host")) {
      lua_pushstring(L, device_id);
      lua_setiuservalue(L, -2, 1);
    }
  }
  free(outs);
  return n;
}
#define T(i) kl_lua__check_tensor(L, (i))

/* ---------------------------------------------------------- conversions ---- */
static const char *const DTYPES_TEXT =
    "f32, f16, bf16, i8, u8 (or ui8), i32, f8e4m3fn, f8e5m2, f8e4m3fnuz, f8e5m2fnuz (also f64, i64, i1)";

kl_dtype kl_lua__opt_dtype(lua_State *L, int idx, kl_dtype dflt, const char *what) {
  if (lua_isnoneornil(L, idx)) return dflt;
  if (lua_type(L, idx) != LUA_TSTRING) {
    /* a kiln.type handle prints as its name */
    if (kl_lua__test(L, idx, KL_LH_TYPE)) {
      const kl_type *ty = kl_lua__check(L, idx, KL_LH_TYPE);
      kl_dtype d = kl_type_dtype(ty);
      if (d != KL_DT_NONE) return d;
      kl_lua__rt_error(L, what, "the type %s is not an element type (dtypes: %s)", kl_type_str(ty), DTYPES_TEXT);
    }
    kl_lua__rt_error(L, what, "dtype must be a string such as \"f32\", got a %s", luaL_typename(L, idx));
  }
  const char *s = lua_tostring(L, idx);
  kl_dtype d = kl_dtype_from_name(s);
  if (d == KL_DT_NONE) kl_lua__rt_error(L, what, "unknown dtype '%s' (dtypes: %s)", s, DTYPES_TEXT);
  return d;
}

static bool to_int(lua_State *L, int idx, int64_t *out) {
  int isnum;
  lua_Integer v = lua_tointegerx(L, idx, &isnum);
  if (!isnum) return false;
  *out = (int64_t)v;
  return true;
}

int kl_lua__check_ints(lua_State *L, int idx, int64_t *out, int max, const char *what, const char *field) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) == LUA_TNUMBER && max >= 1) {
    if (!to_int(L, idx, out)) kl_lua__rt_error(L, what, "%s must be integers, got %s", field, lua_tostring(L, idx));
    return 1;
  }
  if (!lua_istable(L, idx))
    kl_lua__rt_error(L, what, "%s must be a list of integers, got a %s", field, luaL_typename(L, idx));
  lua_Integer n = luaL_len(L, idx);
  if (n > max) kl_lua__rt_error(L, what, "%s has %lld entries (at most %d)", field, (long long)n, max);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, idx, i);
    if (!to_int(L, -1, &out[i - 1]))
      kl_lua__rt_error(L, what, "%s entry %lld must be an integer, got %s", field, (long long)i,
                       lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1) : luaL_typename(L, -1));
    lua_pop(L, 1);
  }
  return (int)n;
}

int kl_lua__check_shape(lua_State *L, int idx, int64_t *dims, const char *what) {
  if (lua_isnoneornil(L, idx)) kl_lua__rt_error(L, what, "a shape (a list of sizes) is required");
  int rank = kl_lua__check_ints(L, idx, dims, KL_MAX_RANK, what, "shape");
  char why[512]; /* the shape limits (core/shape.h) */
  if (!kl_shape_check(rank, dims, NULL, why, sizeof why)) kl_lua__rt_error(L, what, "%s", why);
  return rank;
}

bool kl_lua__opt_layout(lua_State *L, int idx, int rank, const int64_t *shape, int64_t *strides, const char *what) {
  if (lua_isnoneornil(L, idx)) return false;
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) == LUA_TSTRING) { /* a bare layout string */
    char err[512];
    if (kl_layout_strides(lua_tostring(L, idx), rank, shape, strides, err, sizeof err))
      kl_lua__rt_error(L, what, "%s", err);
    return true;
  }
  if (!lua_istable(L, idx))
    kl_lua__rt_error(L, what, "options must be a table such as {layout = \"NHWC\"}, got a %s", luaL_typename(L, idx));
  int lt = lua_getfield(L, idx, "layout");
  int st = lua_getfield(L, idx, "strides");
  bool have = false;
  if (lt != LUA_TNIL && st != LUA_TNIL) kl_lua__rt_error(L, what, "give either layout= or strides=, not both");
  if (lt != LUA_TNIL) {
    if (lt != LUA_TSTRING) kl_lua__rt_error(L, what, "layout must be a string such as \"NHWC\"");
    char err[512];
    if (kl_layout_strides(lua_tostring(L, -2), rank, shape, strides, err, sizeof err))
      kl_lua__rt_error(L, what, "%s", err);
    have = true;
  } else if (st != LUA_TNIL) {
    int n = kl_lua__check_ints(L, -1, strides, KL_MAX_RANK, what, "strides");
    if (n != rank) kl_lua__rt_error(L, what, "strides has %d entries, the shape has rank %d", n, rank);
    char why[512];
    if (!kl_shape_check(rank, shape, strides, why, sizeof why)) kl_lua__rt_error(L, what, "%s", why);
    if (!kl_strides_nonoverlapping(rank, shape, strides)) {
      char b1[256], b2[256];
      kl_lua__rt_error(L, what, "strides %s overlap for shape %s", kl_dims_format(rank, strides, b1, sizeof b1),
                       kl_dims_format(rank, shape, b2, sizeof b2));
    }
    have = true;
  }
  lua_pop(L, 2);
  return have;
}

/* ---------------------------------------------------------- constructors ---- */
typedef struct nested {
  int rank;
  int64_t dims[KL_MAX_RANK];
} nested;

/* Shape of a nested table by following first elements. */
static void nested_shape(lua_State *L, int idx, nested *s, const char *what) {
  int top = lua_gettop(L);
  lua_pushvalue(L, idx);
  s->rank = 0;
  while (lua_type(L, -1) == LUA_TTABLE) {
    if (s->rank >= KL_MAX_RANK) kl_lua__rt_error(L, what, "nested deeper than %d levels", KL_MAX_RANK);
    lua_Integer n = luaL_len(L, -1);
    s->dims[s->rank++] = n;
    if (n == 0) break;
    lua_geti(L, -1, 1);
  }
  lua_settop(L, top);
}

typedef struct fill_st {
  kl_dtype dt;
  bool ints;
  double *f;
  int64_t *i;
  int64_t k;
  int64_t path[KL_MAX_RANK];
} fill_st;

static const char *path_text(const fill_st *f, int depth, char *buf, size_t n) {
  size_t o = 0;
  buf[0] = 0;
  for (int d = 0; d < depth && o < n; d++) o += (size_t)snprintf(buf + o, n - o, "[%lld]", (long long)f->path[d] + 1);
  return buf;
}

static void fill_nested(lua_State *L, int idx, int depth, const nested *s, fill_st *f, const char *what) {
  char pb[256];
  luaL_checkstack(L, 4, "kiln: nested table too deep");
  if (depth == s->rank) {
    int t = lua_type(L, idx);
    if (t == LUA_TBOOLEAN) {
      if (f->ints)
        f->i[f->k] = lua_toboolean(L, idx);
      else
        f->f[f->k] = lua_toboolean(L, idx);
    } else if (t == LUA_TNUMBER) {
      if (f->ints) { /* Lua integers wrap like a C cast; floats truncate and saturate */
        if (lua_isinteger(L, idx))
          f->i[f->k] = (int64_t)lua_tointeger(L, idx);
        else if (f->dt == KL_DT_I1)
          f->i[f->k] = lua_tonumber(L, idx) != 0; /* NaN too */
        else {
          int64_t v = kl_f64_to_i64_sat((double)lua_tonumber(L, idx));
          int64_t lo = kl_dtype_int_min(f->dt), hi = kl_dtype_int_max(f->dt);
          f->i[f->k] = v < lo ? lo : v > hi ? hi : v;
        }
      } else
        f->f[f->k] = (double)lua_tonumber(L, idx);
    } else {
      kl_lua__rt_error(L, what, "element %s must be a number, got a %s", path_text(f, depth, pb, sizeof pb),
                       luaL_typename(L, idx));
    }
    f->k++;
    return;
  }
  if (lua_type(L, idx) != LUA_TTABLE)
    kl_lua__rt_error(L, what, "ragged nested table: %s is a %s, expected a table of %lld entries",
                     depth ? path_text(f, depth, pb, sizeof pb) : "the value", luaL_typename(L, idx),
                     (long long)s->dims[depth]);
  lua_Integer n = luaL_len(L, idx);
  if (n != s->dims[depth])
    kl_lua__rt_error(L, what, "ragged nested table: %s has %lld entries, expected %lld",
                     depth ? path_text(f, depth, pb, sizeof pb) : "the outer table", (long long)n,
                     (long long)s->dims[depth]);
  for (lua_Integer i = 1; i <= n; i++) {
    f->path[depth] = i - 1;
    lua_geti(L, idx, i);
    fill_nested(L, lua_gettop(L), depth + 1, s, f, what);
    lua_pop(L, 1);
  }
}

/* kiln.tensor(nested_table | number | tensor [, dtype="f32"] [, {layout=|strides=|shape=}]) */
static int l_tensor(lua_State *L) {
  const char *what = "kiln.tensor";
  char err[512];
  lua_settop(L, 3); /* temporaries go above the arguments */
  kl_tensor *src = kl_lua__test_tensor(L, 1);
  if (src) {                        /* copy (and convert) a tensor */
    kl_lua__pin_tensor(L, 1, what); /* the options table may run metamethods */
    static const char *const copy_opts[] = { "layout", "strides", NULL };
    kl_lua__check_opts(L, 3, what, copy_opts);
    kl_dtype dt = kl_lua__opt_dtype(L, 2, src->dtype, what);
    int64_t strides[KL_MAX_RANK];
    bool has = kl_lua__opt_layout(L, 3, src->rank, src->shape, strides, what);
    kl_tensor *t = kl_tensor_zeros(dt, src->rank, src->shape, has ? strides : NULL, err, sizeof err);
    if (!t || kl_tensor_copy_into(t, src, err, sizeof err)) {
      kl_tensor_release(t);
      return kl_lua__rt_error(L, what, "%s", err);
    }
    kl_lua__push_tensor(L, t);
    return 1;
  }
  int t1 = lua_type(L, 1);
  if (t1 != LUA_TTABLE && t1 != LUA_TNUMBER && t1 != LUA_TBOOLEAN)
    return kl_lua__rt_error(L, what, "expected a nested table of numbers, a number or a tensor, got a %s",
                            luaL_typename(L, 1));
  static const char *const opts[] = { "shape", "layout", "strides", NULL };
  kl_lua__check_opts(L, 3, what, opts);
  kl_dtype dt = kl_lua__opt_dtype(L, 2, KL_DT_F32, what);
  nested s;
  nested_shape(L, 1, &s, what);
  char why[512]; /* __len may return anything: the IR's limits bound numel and the buffer size */
  if (!kl_shape_check(s.rank, s.dims, NULL, why, sizeof why)) return kl_lua__rt_error(L, what, "nested table: %s", why);
  int64_t numel = 1;
  for (int i = 0; i < s.rank; i++) numel *= s.dims[i];
  fill_st f = { .dt = dt, .ints = kl_dtype_is_int(dt) };
  if (f.ints)
    f.i = kl_lua__tmp(L, (size_t)(numel ? numel : 1) * sizeof *f.i);
  else
    f.f = kl_lua__tmp(L, (size_t)(numel ? numel : 1) * sizeof *f.f);
  fill_nested(L, 1, 0, &s, &f, what);
  /* {shape = {...}} reshapes a flat (or any) table */
  int rank = s.rank;
  int64_t dims[KL_MAX_RANK];
  memcpy(dims, s.dims, sizeof dims);
  if (lua_istable(L, 3) && lua_getfield(L, 3, "shape") != LUA_TNIL) {
    rank = kl_lua__check_shape(L, -1, dims, what);
    int64_t n2 = 1;
    for (int i = 0; i < rank; i++) n2 *= dims[i];
    if (n2 != numel) {
      char b[256];
      return kl_lua__rt_error(L, what, "shape %s has %lld elements, the table has %lld",
                              kl_dims_format(rank, dims, b, sizeof b), (long long)n2, (long long)numel);
    }
    lua_pop(L, 1);
  }
  int64_t strides[KL_MAX_RANK];
  bool has = kl_lua__opt_layout(L, 3, rank, dims, strides, what);
  kl_tensor *t = f.ints ? kl_tensor_from_i64(dt, rank, dims, has ? strides : NULL, f.i, err, sizeof err)
                        : kl_tensor_from_f64(dt, rank, dims, has ? strides : NULL, f.f, err, sizeof err);
  if (!t) return kl_lua__rt_error(L, what, "%s", err);
  kl_lua__push_tensor(L, t);
  return 1;
}

/* Shared by zeros/ones/full/rand: shape at 1, dtype at dtidx, options at optidx. */
typedef struct geo {
  int rank;
  int64_t dims[KL_MAX_RANK], strides[KL_MAX_RANK];
  bool has;
  kl_dtype dt;
} geo;
static const char *const GEO_OPTS[] = { "layout", "strides", NULL };
static void read_geo(lua_State *L, int dtidx, int optidx, geo *g, const char *what, const char *const *known) {
  kl_lua__check_opts(L, optidx, what, known);
  g->rank = kl_lua__check_shape(L, 1, g->dims, what);
  g->dt = kl_lua__opt_dtype(L, dtidx, KL_DT_F32, what);
  g->has = kl_lua__opt_layout(L, optidx, g->rank, g->dims, g->strides, what);
}
static int l_zeros(lua_State *L) {
  geo g;
  char err[512];
  read_geo(L, 2, 3, &g, "kiln.zeros", GEO_OPTS);
  kl_tensor *t = kl_tensor_zeros(g.dt, g.rank, g.dims, g.has ? g.strides : NULL, err, sizeof err);
  if (!t) return kl_lua__rt_error(L, "kiln.zeros", "%s", err);
  kl_lua__push_tensor(L, t);
  return 1;
}
static int l_ones(lua_State *L) {
  geo g;
  char err[512];
  read_geo(L, 2, 3, &g, "kiln.ones", GEO_OPTS);
  kl_tensor *t = kl_tensor_ones(g.dt, g.rank, g.dims, g.has ? g.strides : NULL, err, sizeof err);
  if (!t) return kl_lua__rt_error(L, "kiln.ones", "%s", err);
  kl_lua__push_tensor(L, t);
  return 1;
}
/* kiln.full(shape, value, dtype, opts) */
static int l_full(lua_State *L) {
  geo g;
  char err[512];
  read_geo(L, 3, 4, &g, "kiln.full", GEO_OPTS);
  if (lua_type(L, 2) != LUA_TNUMBER)
    return kl_lua__rt_error(L, "kiln.full", "the fill value must be a number, got a %s", luaL_typename(L, 2));
  kl_tensor *t;
  int64_t iv;
  if (kl_dtype_is_int(g.dt) && to_int(L, 2, &iv)) {
    t = kl_tensor_zeros(g.dt, g.rank, g.dims, g.has ? g.strides : NULL, err, sizeof err);
    if (t)
      for (int64_t i = 0, n = kl_tensor_numel(t); i < n; i++) {
        int64_t idx[KL_MAX_RANK];
        kl_tensor_unravel(t, i, idx);
        kl_tensor_set_i64(t, idx, iv);
      }
  } else
    t = kl_tensor_full(g.dt, g.rank, g.dims, g.has ? g.strides : NULL, (double)lua_tonumber(L, 2), err, sizeof err);
  if (!t) return kl_lua__rt_error(L, "kiln.full", "%s", err);
  kl_lua__push_tensor(L, t);
  return 1;
}
/* kiln.rand(shape, dtype, {seed=, dist="uniform"|"normal", layout=, strides=}) */
static const char *const RAND_OPTS[] = { "seed", "dist", "layout", "strides", NULL };
static int l_rand(lua_State *L) {
  const char *what = "kiln.rand";
  geo g;
  char err[512];
  read_geo(L, 2, 3, &g, what, RAND_OPTS);
  uint64_t seed;
  kl_dist dist = KL_DIST_UNIFORM;
  bool have_seed = false;
  if (lua_istable(L, 3)) {
    if (lua_getfield(L, 3, "seed") != LUA_TNIL) {
      int64_t s;
      if (!to_int(L, -1, &s)) return kl_lua__rt_error(L, what, "seed must be an integer");
      seed = (uint64_t)s;
      have_seed = true;
    }
    if (lua_getfield(L, 3, "dist") != LUA_TNIL) {
      const char *d = lua_tostring(L, -1);
      if (d && !strcmp(d, "normal"))
        dist = KL_DIST_NORMAL;
      else if (d && !strcmp(d, "uniform"))
        dist = KL_DIST_UNIFORM;
      else
        return kl_lua__rt_error(L, what, "dist must be \"uniform\" or \"normal\", got %s",
                                d ? d : luaL_typename(L, -1));
    }
    lua_pop(L, 2);
  }
  if (!have_seed) { /* a fresh seed per call from a per-state counter */
    lua_getfield(L, LUA_REGISTRYINDEX, REG_RAND_COUNTER);
    lua_Integer c = lua_tointeger(L, -1) + 1;
    lua_pop(L, 1);
    lua_pushinteger(L, c);
    lua_setfield(L, LUA_REGISTRYINDEX, REG_RAND_COUNTER);
    seed = 0x9e3779b97f4a7c15ull * (uint64_t)c + 0x6b696c6eull;
  }
  kl_tensor *t = kl_tensor_rand(g.dt, g.rank, g.dims, g.has ? g.strides : NULL, seed, dist, err, sizeof err);
  if (!t) return kl_lua__rt_error(L, what, "%s", err);
  kl_lua__push_tensor(L, t);
  return 1;
}

/* --------------------------------------------------------------- methods ---- */
static int t_gc(lua_State *L) {
  tens_ud *u = luaL_checkudata(L, 1, KL_MT_TENSOR);
  if (u->t && u->pin.n > 0)
    return kl_lua__rt_error(L, "tensor:release",
                            "the tensor is being read by %s (this is a metamethod or finalizer "
                            "that runs inside it); release it after that call returns",
                            u->pin.what);
  if (u->t) {
    kl_tensor_release(u->t);
    u->t = NULL;
  }
  return 0;
}
static int t_tostring(lua_State *L) {
  tens_ud *u = luaL_checkudata(L, 1, KL_MT_TENSOR);
  if (!u->t) {
    lua_pushstring(L, "kiln.tensor (released)");
    return 1;
  }
  char *s = kl_tensor_tostring(u->t);
  lua_pushstring(L, s);
  free(s);
  return 1;
}
/* t:tostring{threshold=, edge=, precision=} */
static int t_format(lua_State *L) {
  kl_tensor *t = kl_lua__pin_tensor(L, 1, "tensor:tostring"); /* options: metamethods */
  int64_t threshold = 1000;
  int edge = 3, prec = 6;
  if (lua_istable(L, 2)) {
    static const char *const FORMAT_OPTS[] = { "threshold", "edge", "precision", NULL };
    kl_lua__check_opts(L, 2, "tensor:tostring", FORMAT_OPTS);
    lua_getfield(L, 2, "threshold");
    threshold = luaL_optinteger(L, -1, threshold);
    lua_getfield(L, 2, "edge");
    edge = (int)luaL_optinteger(L, -1, edge);
    lua_getfield(L, 2, "precision");
    prec = (int)luaL_optinteger(L, -1, prec);
    lua_pop(L, 3);
  }
  if (edge < 1) edge = 1;
  if (prec < 1) prec = 1;
  if (prec > 17) prec = 17;
  char *s = kl_tensor_tostring_ex(t, threshold, edge, prec);
  lua_pushstring(L, s);
  free(s);
  return 1;
}
static int t_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)kl_tensor_numel(T(1)));
  return 1;
}

static void push_elem(lua_State *L, const kl_tensor *t, const int64_t *idx) {
  if (kl_dtype_is_int(t->dtype))
    lua_pushinteger(L, (lua_Integer)kl_tensor_get_i64(t, idx));
  else
    lua_pushnumber(L, (lua_Number)kl_tensor_get(t, idx));
}

static void totable_rec(lua_State *L, const kl_tensor *t, int d, int64_t *idx) {
  if (d == t->rank) {
    push_elem(L, t, idx);
    return;
  }
  luaL_checkstack(L, 3, "kiln");
  lua_createtable(L, (int)(t->shape[d] < (1 << 24) ? t->shape[d] : 0), 0);
  for (int64_t i = 0; i < t->shape[d]; i++) {
    idx[d] = i;
    totable_rec(L, t, d + 1, idx);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
}
static int t_totable(lua_State *L) {
  kl_tensor *t = kl_lua__pin_tensor(L, 1, "tensor:totable"); /* allocations: finalizers */
  int64_t idx[KL_MAX_RANK] = { 0 };
  totable_rec(L, t, 0, idx);
  return 1;
}
/* All elements in logical row-major order as one flat list. */
static int t_flat(lua_State *L) {
  kl_tensor *t = kl_lua__pin_tensor(L, 1, "tensor:flat"); /* allocations: finalizers */
  int64_t n = kl_tensor_numel(t);
  lua_createtable(L, (int)(n < (1 << 24) ? n : 0), 0);
  int64_t idx[KL_MAX_RANK];
  for (int64_t i = 0; i < n; i++) {
    kl_tensor_unravel(t, i, idx);
    push_elem(L, t, idx);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* Index from a table {i, j} at idx, or from the integers idx..last. */
static void read_index(lua_State *L, const kl_tensor *t, int idx, int last, int64_t *out, const char *what) {
  int n;
  if (lua_istable(L, idx)) {
    n = kl_lua__check_ints(L, idx, out, KL_MAX_RANK, what, "index");
  } else {
    n = 0;
    for (int i = idx; i <= last; i++) {
      if (n >= KL_MAX_RANK) kl_lua__rt_error(L, what, "too many indices");
      if (!to_int(L, i, &out[n]))
        kl_lua__rt_error(L, what, "index entries must be integers (0-based), got a %s", luaL_typename(L, i));
      n++;
    }
  }
  char err[512];
  if (kl_tensor_check_index(t, n, out, err, sizeof err)) kl_lua__rt_error(L, what, "%s (indices are 0-based)", err);
}
/* t:get{i, j} or t:get(i, j) — 0-based logical index. */
static int t_get(lua_State *L) {
  kl_tensor *t = T(1);
  int64_t idx[KL_MAX_RANK];
  if (lua_istable(L, 2)) {
    lua_settop(L, 2);
    t = kl_lua__pin_tensor(L, 1, "tensor:get");
  } /* index table: metamethods */
  read_index(L, t, 2, lua_gettop(L), idx, "tensor:get");
  push_elem(L, t, idx);
  return 1;
}
/* t:set({i, j}, v) — 0-based logical index; v rounds through the dtype. */
static int t_set(lua_State *L) {
  kl_tensor *t = T(1);
  int64_t idx[KL_MAX_RANK];
  int top = lua_gettop(L);
  if (top < 3) return kl_lua__rt_error(L, "tensor:set", "expected t:set({i, j, ...}, value)");
  if (lua_type(L, top) != LUA_TNUMBER && lua_type(L, top) != LUA_TBOOLEAN)
    return kl_lua__rt_error(L, "tensor:set", "the value must be a number, got a %s", luaL_typename(L, top));
  if (lua_istable(L, 2)) t = kl_lua__pin_tensor(L, 1, "tensor:set"); /* index table: metamethods */
  read_index(L, t, 2, top - 1, idx, "tensor:set");
  int64_t iv;
  if (lua_type(L, top) == LUA_TBOOLEAN)
    kl_tensor_set_i64(t, idx, lua_toboolean(L, top));
  else if (kl_dtype_is_int(t->dtype) && to_int(L, top, &iv))
    kl_tensor_set_i64(t, idx, iv);
  else
    kl_tensor_set(t, idx, (double)lua_tonumber(L, top));
  lua_settop(L, 1);
  return 1;
}
static void push_copy_like(lua_State *L, kl_tensor *t) { /* result keeps the device tag of arg 1 */
  kl_lua__push_tensor(L, t);
  lua_getiuservalue(L, 1, 1);
  lua_setiuservalue(L, -2, 1);
}
static int t_as_layout(lua_State *L) {
  kl_tensor *t = kl_lua__pin_tensor(L, 1, "tensor:as_layout"); /* options: metamethods */
  char err[512];
  int64_t strides[KL_MAX_RANK];
  kl_tensor *r;
  if (lua_type(L, 2) == LUA_TSTRING)
    r = kl_tensor_as_layout(t, lua_tostring(L, 2), err, sizeof err);
  else if (lua_istable(L, 2)) {
    if (!kl_lua__opt_layout(L, 2, t->rank, t->shape, strides, "tensor:as_layout"))
      return kl_lua__rt_error(L, "tensor:as_layout", "expected a layout string or {layout=} / {strides=}");
    r = kl_tensor_with_strides(t, strides, err, sizeof err);
  } else
    return kl_lua__rt_error(L, "tensor:as_layout", "expected a layout such as \"NHWC\", got a %s", luaL_typename(L, 2));
  if (!r) return kl_lua__rt_error(L, "tensor:as_layout", "%s", err);
  push_copy_like(L, r);
  return 1;
}
static int t_contiguous(lua_State *L) {
  char err[512];
  kl_tensor *r = kl_tensor_contiguous(T(1), err, sizeof err);
  if (!r) return kl_lua__rt_error(L, "tensor:contiguous", "%s", err);
  push_copy_like(L, r);
  return 1;
}
/* t:astype(dtype) — a converted copy in the same layout. */
static int t_astype(lua_State *L) {
  kl_tensor *t = T(1);
  kl_dtype dt = kl_lua__opt_dtype(L, 2, t->dtype, "tensor:astype");
  char err[512];
  int64_t st[KL_MAX_RANK];
  bool dense = kl_strides_nonoverlapping(t->rank, t->shape, t->strides) &&
      kl_strides_to_perm(t->rank, t->shape, t->strides, NULL);
  if (dense) memcpy(st, t->strides, sizeof st);
  kl_tensor *r = kl_tensor_zeros(dt, t->rank, t->shape, dense ? st : NULL, err, sizeof err);
  if (!r || kl_tensor_copy_into(r, t, err, sizeof err)) {
    kl_tensor_release(r);
    return kl_lua__rt_error(L, "tensor:astype", "%s", err);
  }
  push_copy_like(L, r);
  return 1;
}
static int t_clone(lua_State *L) {
  kl_tensor *t = T(1);
  char err[512];
  kl_tensor *r = kl_tensor_zeros(t->dtype, t->rank, t->shape,
                                 kl_strides_nonoverlapping(t->rank, t->shape, t->strides) ? t->strides : NULL, err,
                                 sizeof err);
  if (!r || kl_tensor_copy_into(r, t, err, sizeof err)) {
    kl_tensor_release(r);
    return kl_lua__rt_error(L, "tensor:clone", "%s", err);
  }
  push_copy_like(L, r);
  return 1;
}
/* t:to(device) — "host" / a device object / a device name (opened as kiln.device(name):
 * an unknown or unavailable device is an error). The data stays in host memory (programs
 * copy inputs to the device per run); the copy is tagged with the device's id (t.device). */
static int t_to(lua_State *L) {
  T(1);
  lua_settop(L, 2);
  const char *name = NULL;
  if (lua_type(L, 2) == LUA_TSTRING)
    kl_lua__push_device(L, lua_tostring(L, 2), "tensor:to"); /* must exist */
  else if (luaL_testudata(L, 2, KL_MT_DEVICE))
    lua_pushvalue(L, 2);
  else
    return kl_lua__rt_error(L, "tensor:to", "expected a device (kiln.device(...)) or a device name, got a %s",
                            luaL_typename(L, 2));
  lua_getfield(L, -1, "id");
  name = lua_tostring(L, -1);
  if (!name) return kl_lua__rt_error(L, "tensor:to", "the device has no name");
  kl_tensor *t = T(1);
  char err[512];
  kl_tensor *r = kl_tensor_zeros(t->dtype, t->rank, t->shape,
                                 kl_strides_nonoverlapping(t->rank, t->shape, t->strides) ? t->strides : NULL, err,
                                 sizeof err);
  if (!r || kl_tensor_copy_into(r, t, err, sizeof err)) {
    kl_tensor_release(r);
    return kl_lua__rt_error(L, "tensor:to", "%s", err);
  }
  kl_lua__push_tensor(L, r);
  if (strcmp(name, "host")) {
    lua_pushstring(L, name);
    lua_setiuservalue(L, -2, 1);
  }
  return 1;
}

static int push_i64s(lua_State *L, int n, const int64_t *v) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)v[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}
/* Copied before push_i64s allocates (a finalizer it runs may release the tensor): no pin needed. */
static int push_dims_copy(lua_State *L, int n, const int64_t *v) {
  int64_t d[KL_MAX_RANK];
  memcpy(d, v, (size_t)n * sizeof *d);
  return push_i64s(L, n, d);
}
static int tp_shape(lua_State *L) {
  kl_tensor *t = T(1);
  return push_dims_copy(L, t->rank, t->shape);
}
static int tp_strides(lua_State *L) {
  kl_tensor *t = T(1);
  return push_dims_copy(L, t->rank, t->strides);
}
static int tp_dtype(lua_State *L) {
  lua_pushstring(L, kl_dtype_name(T(1)->dtype));
  return 1;
}
static int tp_rank(lua_State *L) {
  lua_pushinteger(L, T(1)->rank);
  return 1;
}
static int tp_numel(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)kl_tensor_numel(T(1)));
  return 1;
}
/* "row_major", a layout name of the rank's family (NHWC, NWC, NDHWC, col_major), else
 * kl_tensor_layout_str's "perm=[...]" / "strides=[...]". */
static int tp_layout(lua_State *L) {
  kl_tensor *t = T(1);
  static const char *const names[] = { "NHWC", "NWC", "NDHWC", "CHWN", "col_major", NULL };
  int64_t st[KL_MAX_RANK];
  char buf[256];
  if (!kl_tensor_is_row_major(t))
    for (int i = 0; names[i]; i++)
      if (!kl_layout_strides(names[i], t->rank, t->shape, st, NULL, 0) &&
          kl_strides_equivalent(t->rank, t->shape, st, t->strides) && t->rank > 1) {
        lua_pushstring(L, names[i]);
        return 1;
      }
  lua_pushstring(L, kl_tensor_layout_str(t, buf, sizeof buf));
  return 1;
}
static int tp_device(lua_State *L) {
  T(1);
  if (lua_getiuservalue(L, 1, 1) == LUA_TNIL) {
    lua_pop(L, 1);
    lua_pushstring(L, "host");
  }
  return 1;
}
static int tp_nbytes(lua_State *L) {
  kl_tensor *t = T(1);
  lua_pushinteger(L, (lua_Integer)(kl_tensor_numel(t) * (int64_t)kl_dtype_size(t->dtype)));
  return 1;
}
static int tp_is_row_major(lua_State *L) {
  lua_pushboolean(L, kl_tensor_is_row_major(T(1)));
  return 1;
}

/* ------------------------------------------------------------ comparison ---- */
static void read_tols(lua_State *L, int idx, double *rtol, double *atol, const char *what) {
  *rtol = -1;
  *atol = -1;
  if (lua_isnoneornil(L, idx)) return;
  if (!lua_istable(L, idx)) kl_lua__rt_error(L, what, "options must be a table {rtol=, atol=}");
  static const char *const opts[] = { "rtol", "atol", NULL };
  kl_lua__check_opts(L, idx, what, opts);
  double *tol[2] = { rtol, atol };
  for (int i = 0; i < 2; i++) {
    if (lua_getfield(L, idx, opts[i]) != LUA_TNIL) {
      if (lua_type(L, -1) != LUA_TNUMBER) kl_lua__rt_error(L, what, "%s must be a number", opts[i]);
      double x = lua_tonumber(L, -1);
      if (!(x >= 0)) kl_lua__rt_error(L, what, "%s must be a non-negative number, got %g", opts[i], x); /* NaN too */
      *tol[i] = x;
    }
    lua_pop(L, 1);
  }
  /* one given: the other defaults to 0 unless also given */
  if (*rtol >= 0 && *atol < 0) *atol = 0;
  if (*atol >= 0 && *rtol < 0) *rtol = 0;
}

static void push_report(lua_State *L, const kl_compare_result *r) {
  lua_createtable(L, 0, 10);
  kl_lua__set_num(L, "max_abs", r->max_abs_err);
  kl_lua__set_num(L, "max_rel", r->max_rel_err);
  kl_lua__set_int(L, "mismatches", (lua_Integer)r->mismatches);
  kl_lua__set_num(L, "rtol", r->rtol);
  kl_lua__set_num(L, "atol", r->atol);
  kl_lua__set_bool(L, "ok", r->mismatches == 0);
  char text[1024];
  if (r->first_flat >= 0) {
    push_i64s(L, r->rank, r->first_index);
    lua_setfield(L, -2, "first_index");
    kl_lua__set_num(L, "first_a", r->first_a);
    kl_lua__set_num(L, "first_b", r->first_b);
    char ib[256];
    snprintf(text, sizeof text,
             "%lld mismatch%s (rtol %g, atol %g); max abs err %g, max rel err %g; first at %s: %.9g vs %.9g",
             (long long)r->mismatches, r->mismatches == 1 ? "" : "es", r->rtol, r->atol, r->max_abs_err, r->max_rel_err,
             kl_dims_format(r->rank, r->first_index, ib, sizeof ib), r->first_a, r->first_b);
  } else {
    snprintf(text, sizeof text, "all close (rtol %g, atol %g); max abs err %g, max rel err %g", r->rtol, r->atol,
             r->max_abs_err, r->max_rel_err);
  }
  kl_lua__set_str(L, "summary", text);
}
/* kiln.compare(a, b [, {rtol=, atol=}]) -> report (b is the reference) */
static int l_compare(lua_State *L) {
  lua_settop(L, 3);
  kl_lua__pin_tensor(L, 1, "kiln.compare");
  kl_lua__pin_tensor(L, 2, "kiln.compare");
  kl_tensor *a = T(1), *b = T(2);
  double rtol, atol;
  read_tols(L, 3, &rtol, &atol, "kiln.compare");
  kl_compare_result r;
  char err[512];
  if (kl_tensor_compare(a, b, rtol, atol, &r, err, sizeof err)) return kl_lua__rt_error(L, "kiln.compare", "%s", err);
  push_report(L, &r);
  return 1;
}
/* kiln.allclose(a, b [, {rtol=, atol=}]) -> bool, report */
static int l_allclose(lua_State *L) {
  lua_settop(L, 3);
  kl_lua__pin_tensor(L, 1, "kiln.allclose");
  kl_lua__pin_tensor(L, 2, "kiln.allclose");
  kl_tensor *a = T(1), *b = T(2);
  double rtol, atol;
  read_tols(L, 3, &rtol, &atol, "kiln.allclose");
  kl_compare_result r;
  char err[512];
  if (kl_tensor_compare(a, b, rtol, atol, &r, err, sizeof err)) return kl_lua__rt_error(L, "kiln.allclose", "%s", err);
  lua_pushboolean(L, r.mismatches == 0);
  push_report(L, &r);
  return 2;
}
/* kiln.default_tolerance(dtype) -> rtol, atol */
static int l_default_tolerance(lua_State *L) {
  kl_dtype dt = kl_lua__opt_dtype(L, 1, KL_DT_F32, "kiln.default_tolerance");
  double r, a;
  kl_default_tolerance(dt, &r, &a);
  lua_pushnumber(L, r);
  lua_pushnumber(L, a);
  return 2;
}
static int l_is_tensor(lua_State *L) {
  lua_pushboolean(L, kl_lua__test_tensor(L, 1) != NULL);
  return 1;
}
/* kiln.layout_strides(layout, shape) -> strides (dense) */
static int l_layout_strides(lua_State *L) {
  int64_t dims[KL_MAX_RANK], st[KL_MAX_RANK];
  const char *layout = luaL_checkstring(L, 1);
  lua_pushvalue(L, 2);
  lua_replace(L, 1);
  int rank = kl_lua__check_shape(L, 1, dims, "kiln.layout_strides");
  char err[512];
  if (kl_layout_strides(layout, rank, dims, st, err, sizeof err))
    return kl_lua__rt_error(L, "kiln.layout_strides", "%s", err);
  return push_i64s(L, rank, st);
}

void kl_lua__open_tensor(lua_State *L) {
  int mod = lua_gettop(L);
  static const luaL_Reg meta[] = {
    { "__gc", t_gc }, { "__close", t_gc }, { "__tostring", t_tostring }, { "__len", t_len }, { NULL, NULL }
  };
  static const luaL_Reg methods[] = {
    { "totable", t_totable }, { "flat", t_flat },           { "get", t_get },
    { "set", t_set },         { "as_layout", t_as_layout }, { "contiguous", t_contiguous },
    { "astype", t_astype },   { "clone", t_clone },         { "to", t_to },
    { "tostring", t_format }, { "release", t_gc },          { NULL, NULL }
  };
  static const luaL_Reg props[] = {
    { "shape", tp_shape },   { "strides", tp_strides }, { "dtype", tp_dtype },
    { "rank", tp_rank },     { "numel", tp_numel },     { "layout", tp_layout },
    { "device", tp_device }, { "nbytes", tp_nbytes },   { "is_row_major", tp_is_row_major },
    { NULL, NULL }
  };
  kl_lua__class(L, mod, KL_MT_TENSOR, "tensor", methods, props, meta);
  static const luaL_Reg fns[] = { { "tensor", l_tensor },
                                  { "zeros", l_zeros },
                                  { "ones", l_ones },
                                  { "full", l_full },
                                  { "rand", l_rand },
                                  { "compare", l_compare },
                                  { "allclose", l_allclose },
                                  { "default_tolerance", l_default_tolerance },
                                  { "is_tensor", l_is_tensor },
                                  { "layout_strides", l_layout_strides },
                                  { NULL, NULL } };
  luaL_setfuncs(L, fns, 0);
}
