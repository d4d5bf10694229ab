/* kiln_lua_view.c — coordinate-transform views in Lua ("kiln.view" userdata over
 * core/view.h): kiln.view{shape=, names=} and the chainable builders (each returns a
 * NEW view; views are immutable), eval / compose / invert / simplify / vector_len, the
 * text form (tostring, kiln.view_parse), #view attributes (kiln._view_attr, attr.view)
 * and kiln.conv_views (core/view_conv.h). Coordinates and dim positions are 0-based;
 * dims may be named by their name or by their 0-based position. */
#include "lua/kiln_lua_rt.h"
#include "core/view.h"
#include "core/view_conv.h"
#include <stdlib.h>
#include <string.h>

#if __has_include("core/view_attr.h")
#include "core/view_attr.h"
#else
const kl_attr *kl_attr_from_view(kl_ctx *ctx, const kl_view *v);
const kl_view *kl_attr_view(const kl_attr *a);
#endif

typedef struct view_ud {
  kl_view *v;
  kl_lua_pin pin;
} view_ud;

static kl_view *check_view(lua_State *L, int idx) {
  view_ud *u = luaL_checkudata(L, idx, KL_MT_VIEW);
  if (!u->v) kl_lua__rt_error(L, NULL, "this view has been released");
  return u->v;
}
static void push_view(lua_State *L, kl_view *v) {
  view_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->v = v;
  u->pin = (kl_lua_pin){ 0, NULL };
  luaL_setmetatable(L, KL_MT_VIEW);
}
/* Pushes v or raises the builder error. */
static int push_or_fail(lua_State *L, kl_view *v, const kl_view_err *e, const char *what) {
  if (!v) return kl_lua__rt_error(L, what, "%s", e->msg[0] ? e->msg : "invalid view");
  push_view(L, v);
  return 1;
}
#define V(i) check_view(L, (i))
/* check_view, and pins the view until the calling builder returns (kiln_lua.h, Pins): its
 * argument tables may run metamethods, its allocations finalizers. */
static kl_view *pin_view(lua_State *L, int idx, const char *what) {
  check_view(L, idx);
  kl_lua__pin_guard(L, idx, &((view_ud *)lua_touserdata(L, idx))->pin, what);
  return check_view(L, idx); /* a finalizer of the guard's allocation may have released it */
}
/* The builder's arguments are fixed first (nargs): the guard takes the next slot. */
#define VP(i, what, nargs) (lua_settop(L, (nargs)), pin_view(L, (i), (what)))

/* "view text:line:col: message" (the parser's message may already start with line:col). */
static int parse_error(lua_State *L, const char *what, const kl_view_err *e) {
  if (e->msg[0] >= '0' && e->msg[0] <= '9') return kl_lua__rt_error(L, what, "view text:%s", e->msg);
  return kl_lua__rt_error(L, what, "view text:%d:%d: %s", e->line, e->col, e->msg);
}

/* ------------------------------------------------------------- arguments ---- */
/* A dim of v at idx: a name, or a 0-based position. Returns the upper dim index. */
static int dim_arg(lua_State *L, const kl_view *v, int idx, const char *what) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    lua_Integer d = lua_tointeger(L, idx);
    if (!lua_isinteger(L, idx) || d < 0 || d >= kl_view_rank(v))
      kl_lua__rt_error(L, what, "dim %s out of range (0-based, rank %d)", lua_tostring(L, idx), kl_view_rank(v));
    return (int)d;
  }
  if (lua_type(L, idx) != LUA_TSTRING)
    kl_lua__rt_error(L, what, "a dim is a name or a 0-based position, got a %s", luaL_typename(L, idx));
  int d = kl_view_dim(v, lua_tostring(L, idx));
  if (d < 0) {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 0; i < kl_view_rank(v); i++) {
      if (i) luaL_addstring(&b, ", ");
      luaL_addstring(&b, kl_view_name(v, i));
    }
    luaL_pushresult(&b);
    kl_lua__rt_error(L, what, "no dim named '%s' (dims: %s)", lua_tostring(L, idx), lua_tostring(L, -1));
  }
  return d;
}
static const char *dim_name_arg(lua_State *L, const kl_view *v, int idx, const char *what) {
  return kl_view_name(v, dim_arg(L, v, idx, what));
}
/* A list of names (or dim positions when v is given) at idx into out; returns the count.
 * Each entry stays on the stack (one slot per entry, until the caller returns): a string
 * an __index metamethod built is referenced by nothing else and could be collected. */
static int names_arg(lua_State *L, const kl_view *v, int idx, const char **out, int max, const char *what,
                     const char *field) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) == LUA_TSTRING) {
    out[0] = lua_tostring(L, idx);
    return 1;
  }
  if (!lua_istable(L, idx))
    kl_lua__rt_error(L, what, "%s must be a list of dim names, got a %s", field, luaL_typename(L, idx));
  lua_Integer n = luaL_len(L, idx);
  if (n > max) kl_lua__rt_error(L, what, "%s has %lld entries (at most %d)", field, (long long)n, max);
  luaL_checkstack(L, (int)n + LUA_MINSTACK, what);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, idx, i);
    if (v && lua_type(L, -1) == LUA_TNUMBER)
      out[i - 1] = dim_name_arg(L, v, lua_gettop(L), what);
    else if (lua_type(L, -1) == LUA_TSTRING)
      out[i - 1] = lua_tostring(L, -1);
    else
      kl_lua__rt_error(L, what, "%s entry %lld must be a dim name", field, (long long)i);
  }
  return (int)n;
}
static int push_i64s(lua_State *L, int n, const int64_t *v) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushinteger(L, (lua_Integer)v[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* Dim-keyed form {h = {1, 1}, w = {0, 2}} (pairs) or {h = 4} (single values) at idx:
 * names in dim order into names, values (per = 1 or 2 each) into vals. */
static int keyed_arg(lua_State *L, const kl_view *v, int idx, int per, const char **names, int64_t *vals,
                     const char *what) {
  idx = lua_absindex(L, idx);
  int n = 0;
  for (int d = 0; d < kl_view_rank(v); d++) {
    const char *nm = kl_view_name(v, d);
    if (lua_getfield(L, idx, nm) == LUA_TNIL) {
      lua_pop(L, 1);
      continue;
    }
    names[n] = nm;
    if (per == 1) {
      int64_t x;
      if (kl_lua__check_ints(L, -1, &x, 1, what, nm) != 1) kl_lua__rt_error(L, what, "%s needs one integer", nm);
      vals[n] = x;
    } else {
      int64_t x[2];
      if (kl_lua__check_ints(L, -1, x, 2, what, nm) != 2) kl_lua__rt_error(L, what, "%s needs two integers {a, b}", nm);
      vals[2 * n] = x[0];
      vals[2 * n + 1] = x[1];
    }
    lua_pop(L, 1);
    n++;
  }
  /* every key must be a dim */
  for (lua_pushnil(L); lua_next(L, idx); lua_pop(L, 1)) {
    if (lua_type(L, -2) != LUA_TSTRING || kl_view_dim(v, lua_tostring(L, -2)) < 0) {
      lua_pushvalue(L, -2);
      kl_lua__rt_error(L, what, "'%s' is not a dim of the view", luaL_tolstring(L, -1, NULL));
    }
  }
  return n;
}
static bool is_list(lua_State *L, int idx) {
  if (!lua_istable(L, idx)) return false;
  lua_geti(L, idx, 1);
  bool r = !lua_isnil(L, -1);
  lua_pop(L, 1);
  return r;
}
/* Field `f` of the table at idx if arg 2 is a table with named fields, else arg `pos`. */
static int field_or_arg(lua_State *L, const char *f, int pos) {
  if (lua_istable(L, 2) && !is_list(L, 2)) {
    lua_getfield(L, 2, f);
    return lua_gettop(L);
  }
  return pos;
}

/* --------------------------------------------------------------- builders ---- */
/* kiln.view{shape=, names=} | kiln.view({sizes}) | kiln.view("text") | kiln.view(attr) | kiln.view(view) */
static int l_view(lua_State *L) {
  const char *what = "kiln.view";
  kl_view_err e = { 0 };
  if (lua_type(L, 1) == LUA_TSTRING) {
    size_t n;
    const char *s = lua_tolstring(L, 1, &n);
    kl_view *v = kl_view_parse(s, n, &e);
    if (!v) return parse_error(L, what, &e);
    push_view(L, v);
    return 1;
  }
  if (luaL_testudata(L, 1, KL_MT_VIEW)) {
    push_view(L, kl_view_clone(V(1)));
    return 1;
  }
  if (kl_lua__test(L, 1, KL_LH_ATTR)) {
    const kl_attr *a = kl_lua__check(L, 1, KL_LH_ATTR);
    const kl_view *v = kl_attr_view(a);
    if (!v) return kl_lua__rt_error(L, what, "the attribute %s is not a #view", kl_attr_str_of(a));
    push_view(L, kl_view_clone(v));
    return 1;
  }
  if (!lua_istable(L, 1))
    return kl_lua__rt_error(L, what, "expected {shape = {...}, names = {...}}, a view text or a #view attribute");
  int64_t shape[KL_VIEW_MAX_DIMS];
  const char *names[KL_VIEW_MAX_DIMS];
  int rank, nn = -1;
  if (is_list(L, 1))
    rank = kl_lua__check_ints(L, 1, shape, KL_VIEW_MAX_DIMS, what, "shape");
  else {
    static const char *const VIEW_FIELDS[] = { "shape", "names", NULL };
    kl_lua__check_opts(L, 1, what, VIEW_FIELDS);
    if (lua_getfield(L, 1, "shape") == LUA_TNIL) return kl_lua__rt_error(L, what, "shape = {...} is required");
    rank = kl_lua__check_ints(L, -1, shape, KL_VIEW_MAX_DIMS, what, "shape");
    if (lua_getfield(L, 1, "names") != LUA_TNIL) nn = names_arg(L, NULL, -1, names, KL_VIEW_MAX_DIMS, what, "names");
  }
  if (nn >= 0 && nn != rank) return kl_lua__rt_error(L, what, "names has %d entries, shape has %d", nn, rank);
  return push_or_fail(L, kl_view_identity(rank, shape, nn >= 0 ? names : NULL, &e), &e, what);
}

/* v:passthrough(names, from) | v:passthrough{names=, from=} — rename / permute */
static int v_passthrough(lua_State *L) {
  const char *what = "view:passthrough";
  kl_view *v = VP(1, what, 3);
  const char *names[KL_VIEW_MAX_DIMS], *from[KL_VIEW_MAX_DIMS];
  int a = field_or_arg(L, "names", 2), b = field_or_arg(L, "from", 3);
  int n = names_arg(L, NULL, a, names, KL_VIEW_MAX_DIMS, what, "names");
  int m = names_arg(L, v, b, from, KL_VIEW_MAX_DIMS, what, "from");
  if (n != m) return kl_lua__rt_error(L, what, "names has %d entries, from has %d", n, m);
  kl_view_err e = { 0 };
  return push_or_fail(L, kl_view_passthrough(v, n, names, from, &e), &e, what);
}
/* v:transpose{perm} — 0-based positions or dim names */
static int v_transpose(lua_State *L) {
  const char *what = "view:transpose";
  kl_view *v = VP(1, what, 2);
  if (!lua_istable(L, 2))
    return kl_lua__rt_error(L, what, "expected a permutation {1, 0, ...} (0-based) or a list of dim names");
  lua_Integer n = luaL_len(L, 2);
  if (n > KL_VIEW_MAX_DIMS) return kl_lua__rt_error(L, what, "permutation too long");
  int perm[KL_VIEW_MAX_DIMS];
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 2, i);
    perm[i - 1] = dim_arg(L, v, lua_gettop(L), what);
    lua_pop(L, 1);
  }
  kl_view_err e = { 0 };
  return push_or_fail(L, kl_view_transpose(v, (int)n, perm, &e), &e, what);
}
/* Pad / slice: v:pad{h = {l, r}, ...} or v:pad(names, {l1, r1, l2, r2, ...}) */
static int pad_or_slice(lua_State *L, bool pad) {
  const char *what = pad ? "view:pad" : "view:slice";
  kl_view *v = VP(1, what, 3);
  const char *names[KL_VIEW_MAX_DIMS];
  int64_t vals[2 * KL_VIEW_MAX_DIMS];
  int n;
  if (lua_istable(L, 2) && !is_list(L, 2) && lua_isnoneornil(L, 3))
    n = keyed_arg(L, v, 2, 2, names, vals, what);
  else {
    n = names_arg(L, v, 2, names, KL_VIEW_MAX_DIMS, what, "names");
    int m = kl_lua__check_ints(L, 3, vals, 2 * KL_VIEW_MAX_DIMS, what, pad ? "padding" : "bounds");
    if (m != 2 * n) return kl_lua__rt_error(L, what, "expected %d integers (two per dim), got %d", 2 * n, m);
  }
  kl_view_err e = { 0 };
  kl_view *r = pad ? kl_view_pad(v, n, names, vals, &e) : kl_view_slice(v, n, names, vals, &e);
  return push_or_fail(L, r, &e, what);
}
static int v_pad(lua_State *L) { return pad_or_slice(L, true); }
static int v_slice(lua_State *L) { return pad_or_slice(L, false); }
/* v:embed(dim, names, sizes, coeffs) | v:embed{dim=, names=, sizes=, coeffs=} */
static int v_embed(lua_State *L) {
  const char *what = "view:embed";
  kl_view *v = VP(1, what, 5);
  int d = field_or_arg(L, "dim", 2), a = field_or_arg(L, "names", 3), b = field_or_arg(L, "sizes", 4),
      c = field_or_arg(L, "coeffs", 5);
  const char *dim = dim_name_arg(L, v, d, what);
  const char *names[KL_VIEW_MAX_DIMS];
  int64_t sizes[KL_VIEW_MAX_DIMS], coeffs[KL_VIEW_MAX_DIMS];
  int n = names_arg(L, NULL, a, names, KL_VIEW_MAX_DIMS, what, "names");
  int ns = kl_lua__check_ints(L, b, sizes, KL_VIEW_MAX_DIMS, what, "sizes");
  int nc = kl_lua__check_ints(L, c, coeffs, KL_VIEW_MAX_DIMS, what, "coeffs");
  if (ns != n || nc != n)
    return kl_lua__rt_error(L, what, "names, sizes and coeffs need the same length (%d, %d, %d)", n, ns, nc);
  kl_view_err e = { 0 };
  return push_or_fail(L, kl_view_embed(v, dim, n, names, sizes, coeffs, &e), &e, what);
}
/* v:unmerge(dim, names, sizes) | v:unmerge{dim=, names=, sizes=} */
static int v_unmerge(lua_State *L) {
  const char *what = "view:unmerge";
  kl_view *v = VP(1, what, 4);
  int d = field_or_arg(L, "dim", 2), a = field_or_arg(L, "names", 3), b = field_or_arg(L, "sizes", 4);
  const char *dim = dim_name_arg(L, v, d, what);
  const char *names[KL_VIEW_MAX_DIMS];
  int64_t sizes[KL_VIEW_MAX_DIMS];
  int n = names_arg(L, NULL, a, names, KL_VIEW_MAX_DIMS, what, "names");
  int ns = kl_lua__check_ints(L, b, sizes, KL_VIEW_MAX_DIMS, what, "sizes");
  if (ns != n) return kl_lua__rt_error(L, what, "names has %d entries, sizes has %d", n, ns);
  kl_view_err e = { 0 };
  return push_or_fail(L, kl_view_unmerge(v, dim, n, names, sizes, &e), &e, what);
}
/* v:merge(name, from) | v:merge{name=, from=} */
static int v_merge(lua_State *L) {
  const char *what = "view:merge";
  kl_view *v = VP(1, what, 3);
  int a = field_or_arg(L, "name", 2), b = field_or_arg(L, "from", 3);
  if (lua_type(L, a) != LUA_TSTRING) return kl_lua__rt_error(L, what, "the merged dim needs a name");
  const char *from[KL_VIEW_MAX_DIMS];
  int n = names_arg(L, v, b, from, KL_VIEW_MAX_DIMS, what, "from");
  kl_view_err e = { 0 };
  return push_or_fail(L, kl_view_merge(v, lua_tostring(L, a), n, from, &e), &e, what);
}
/* v:broadcast{d = size, ...} | v:broadcast(names, sizes) */
static int v_broadcast(lua_State *L) {
  const char *what = "view:broadcast";
  kl_view *v = VP(1, what, 3);
  const char *names[KL_VIEW_MAX_DIMS];
  int64_t sizes[KL_VIEW_MAX_DIMS];
  int n;
  if (lua_istable(L, 2) && !is_list(L, 2) && lua_isnoneornil(L, 3))
    n = keyed_arg(L, v, 2, 1, names, sizes, what);
  else {
    n = names_arg(L, v, 2, names, KL_VIEW_MAX_DIMS, what, "names");
    int m = kl_lua__check_ints(L, 3, sizes, KL_VIEW_MAX_DIMS, what, "sizes");
    if (m != n) return kl_lua__rt_error(L, what, "names has %d entries, sizes has %d", n, m);
  }
  kl_view_err e = { 0 };
  return push_or_fail(L, kl_view_broadcast(v, n, names, sizes, &e), &e, what);
}
/* v:add_dim(name, size [, pos = rank]) | v:add_dim{name=, size=, pos=} (pos 0-based) */
static int v_add_dim(lua_State *L) {
  const char *what = "view:add_dim";
  kl_view *v = VP(1, what, 4);
  int a = field_or_arg(L, "name", 2), b = field_or_arg(L, "size", 3), c = field_or_arg(L, "pos", 4);
  if (lua_type(L, a) != LUA_TSTRING) return kl_lua__rt_error(L, what, "the new dim needs a name");
  int64_t size, pos = kl_view_rank(v);
  if (kl_lua__check_ints(L, b, &size, 1, what, "size") != 1)
    return kl_lua__rt_error(L, what, "size must be one integer");
  if (!lua_isnoneornil(L, c) && kl_lua__check_ints(L, c, &pos, 1, what, "pos") != 1)
    return kl_lua__rt_error(L, what, "pos must be one integer");
  if (pos < 0 || pos > kl_view_rank(v))
    return kl_lua__rt_error(L, what, "pos %lld outside [0, %d]", (long long)pos, kl_view_rank(v));
  kl_view_err e = { 0 };
  return push_or_fail(L, kl_view_add_dim(v, lua_tostring(L, a), size, (int)pos, &e), &e, what);
}
/* v:const_dim(dim, value) | v:const_dim{name=, value=} */
static int v_const_dim(lua_State *L) {
  const char *what = "view:const_dim";
  kl_view *v = VP(1, what, 3);
  int a = field_or_arg(L, "name", 2), b = field_or_arg(L, "value", 3);
  const char *dim = dim_name_arg(L, v, a, what);
  int64_t val;
  if (kl_lua__check_ints(L, b, &val, 1, what, "value") != 1)
    return kl_lua__rt_error(L, what, "value must be one integer");
  kl_view_err e = { 0 };
  return push_or_fail(L, kl_view_const_dim(v, dim, val, &e), &e, what);
}
/* v:reshape{shape...} | v:reshape(shape [, names]) */
static int v_reshape(lua_State *L) {
  const char *what = "view:reshape";
  kl_view *v = VP(1, what, 3);
  int64_t shape[KL_VIEW_MAX_DIMS];
  const char *names[KL_VIEW_MAX_DIMS];
  int rank = kl_lua__check_ints(L, 2, shape, KL_VIEW_MAX_DIMS, what, "shape"), nn = -1;
  if (!lua_isnoneornil(L, 3)) nn = names_arg(L, NULL, 3, names, KL_VIEW_MAX_DIMS, what, "names");
  if (nn >= 0 && nn != rank) return kl_lua__rt_error(L, what, "names has %d entries, shape has %d", nn, rank);
  kl_view_err e = { 0 };
  return push_or_fail(L, kl_view_reshape(v, rank, shape, nn >= 0 ? names : NULL, &e), &e, what);
}

/* --------------------------------------------------------------- queries ---- */
/* Upper coordinate from a table at idx or from the integers idx..top. */
static void coords_arg(lua_State *L, const kl_view *v, int idx, int64_t *c, const char *what) {
  int rank = kl_view_rank(v), n;
  if (lua_istable(L, idx))
    n = kl_lua__check_ints(L, idx, c, KL_VIEW_MAX_DIMS, what, "coordinate");
  else {
    n = 0;
    for (int i = idx; i <= lua_gettop(L) && n < KL_VIEW_MAX_DIMS; i++) {
      int isnum;
      c[n++] = (int64_t)lua_tointegerx(L, i, &isnum);
      if (!isnum) kl_lua__rt_error(L, what, "coordinates must be integers");
    }
  }
  if (n != rank) kl_lua__rt_error(L, what, "the coordinate has %d entries, the view has rank %d", n, rank);
}
/* Buffer strides given for v's lower shape must be within the IR's limits (kl_shape_check). */
static void check_strides(lua_State *L, const kl_view *v, const int64_t *st, const char *what) {
  int64_t shape[KL_VIEW_MAX_DIMS];
  int n = kl_view_lower_rank(v);
  for (int i = 0; i < n; i++) shape[i] = kl_view_lower_size(v, i);
  char why[512];
  if (!kl_shape_check(n, shape, st, why, sizeof why)) kl_lua__rt_error(L, what, "buffer %s", why);
}
/* v:eval{c0, c1, ...} -> lower coordinate (table), valid */
static int v_eval(lua_State *L) {
  kl_view *v = V(1);
  if (lua_istable(L, 2)) v = VP(1, "view:eval", 2); /* coordinate table: metamethods */
  int64_t up[KL_VIEW_MAX_DIMS], lo[KL_VIEW_MAX_DIMS];
  coords_arg(L, v, 2, up, "view:eval");
  bool ok = kl_view_eval(v, up, lo);
  push_i64s(L, kl_view_lower_rank(v), lo);
  lua_pushboolean(L, ok);
  return 2;
}
/* v:addr({coords} [, strides]) -> linear address, valid */
static int v_addr(lua_State *L) {
  kl_view *v = V(1);
  int64_t up[KL_VIEW_MAX_DIMS], st[KL_VIEW_MAX_DIMS];
  lua_settop(L, 3);
  if (lua_istable(L, 2) || lua_istable(L, 3)) v = VP(1, "view:addr", 3); /* tables: metamethods */
  coords_arg(L, v, 2, up, "view:addr");
  bool has = false;
  if (!lua_isnil(L, 3)) {
    int n = kl_lua__check_ints(L, 3, st, KL_VIEW_MAX_DIMS, "view:addr", "strides");
    if (n != kl_view_lower_rank(v))
      return kl_lua__rt_error(L, "view:addr", "strides has %d entries, the buffer has rank %d", n,
                              kl_view_lower_rank(v));
    check_strides(L, v, st, "view:addr");
    has = true;
  }
  bool ok;
  int64_t a = kl_view_eval_addr(v, up, has ? st : NULL, &ok);
  lua_pushinteger(L, (lua_Integer)a);
  lua_pushboolean(L, ok);
  return 2;
}
static int v_compose(lua_State *L) {
  kl_view *a = V(1), *b = V(2);
  kl_view_err e = { 0 };
  return push_or_fail(L, kl_view_compose(a, b, &e), &e, "view:compose");
}
/* v:invert() -> view, or nil + message when not invertible */
static int v_invert(lua_State *L) {
  kl_view_err e = { 0 };
  kl_view *r = kl_view_invert(V(1), &e);
  if (!r) {
    lua_pushnil(L);
    lua_pushstring(L, e.msg[0] ? e.msg : "not invertible");
    return 2;
  }
  push_view(L, r);
  return 1;
}
static int v_simplify(lua_State *L) {
  push_view(L, kl_view_simplify(V(1)));
  return 1;
}
/* v:vector_len(dim, dtype | max_len | nil [, strides]) */
static int v_vector_len(lua_State *L) {
  const char *what = "view:vector_len";
  kl_view *v = VP(1, what, 4);
  int d = dim_arg(L, v, 2, what);
  int64_t st[KL_VIEW_MAX_DIMS];
  bool has = false;
  if (!lua_isnil(L, 4)) {
    int n = kl_lua__check_ints(L, 4, st, KL_VIEW_MAX_DIMS, what, "strides");
    if (n != kl_view_lower_rank(v))
      return kl_lua__rt_error(L, what, "strides has %d entries, the buffer has rank %d", n, kl_view_lower_rank(v));
    check_strides(L, v, st, what);
    has = true;
  }
  int64_t r;
  if (lua_type(L, 3) == LUA_TNUMBER) {
    int64_t maxlen;
    if (kl_lua__check_ints(L, 3, &maxlen, 1, what, "max_len") != 1 || maxlen < 1)
      return kl_lua__rt_error(L, what, "max_len must be >= 1");
    r = kl_view_vector_len(v, d, has ? st : NULL, maxlen);
  } else if (lua_isnil(L, 3)) {
    r = kl_view_vector_len(v, d, has ? st : NULL, (int64_t)1 << 30);
  } else {
    kl_dtype dt = kl_lua__opt_dtype(L, 3, KL_DT_F32, what);
    r = kl_view_max_vectorization(v, d, has ? st : NULL, (int)kl_dtype_size(dt) * 8);
  }
  if (r < 0) return kl_lua__rt_error(L, what, "bad arguments");
  lua_pushinteger(L, (lua_Integer)r);
  return 1;
}
/* v:invalid_dims() -> names of upper dims that can produce invalid coordinates */
static int v_invalid_dims(lua_State *L) {
  kl_view *v = VP(1, "view:invalid_dims", 1); /* allocations: finalizers */
  uint32_t m = kl_view_invalid_dims(v);
  lua_newtable(L);
  int k = 0;
  for (int i = 0; i < kl_view_rank(v) && i < 32; i++)
    if (m & (1u << i)) {
      lua_pushstring(L, kl_view_name(v, i));
      lua_rawseti(L, -2, ++k);
    }
  return 1;
}
/* v:maps() -> {{upper=, upper_sizes=, lower=, lower_sizes=, transforms={{kind=, params=, upper=, lower=}}}} */
static int push_names(lua_State *L, int n, const char *const *names) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, names[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}
static int v_maps(lua_State *L) {
  kl_view *v = VP(1, "view:maps", 1); /* allocations: finalizers */
  lua_createtable(L, v->nmaps, 0);
  for (int i = 0; i < v->nmaps; i++) {
    const kl_vmap *m = &v->maps[i];
    lua_createtable(L, 0, 5);
    push_names(L, m->nupper, m->upper_names);
    lua_setfield(L, -2, "upper");
    push_i64s(L, m->nupper, m->upper_sizes);
    lua_setfield(L, -2, "upper_sizes");
    push_names(L, m->nlower, m->lower_names);
    lua_setfield(L, -2, "lower");
    push_i64s(L, m->nlower, m->lower_sizes);
    lua_setfield(L, -2, "lower_sizes");
    lua_createtable(L, m->ntrans, 0);
    for (int t = 0; t < m->ntrans; t++) {
      const kl_vtrans *tr = &m->trans[t];
      lua_createtable(L, 0, 4);
      kl_lua__set_str(L, "kind", kl_vkind_name(tr->kind));
      push_i64s(L, tr->nparams, tr->params);
      lua_setfield(L, -2, "params");
      lua_createtable(L, tr->nupper, 0);
      for (int j = 0; j < tr->nupper; j++) {
        lua_pushstring(L, m->upper_names[tr->upper[j]]);
        lua_rawseti(L, -2, j + 1);
      }
      lua_setfield(L, -2, "upper");
      lua_createtable(L, tr->nlower, 0);
      for (int j = 0; j < tr->nlower; j++) {
        lua_pushstring(L, m->lower_names[tr->lower[j]]);
        lua_rawseti(L, -2, j + 1);
      }
      lua_setfield(L, -2, "lower");
      lua_rawseti(L, -2, t + 1);
    }
    lua_setfield(L, -2, "transforms");
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int vp_shape(lua_State *L) {
  kl_view *v = VP(1, "view.shape", 1); /* allocations: finalizers */
  lua_createtable(L, kl_view_rank(v), 0);
  for (int i = 0; i < kl_view_rank(v); i++) {
    lua_pushinteger(L, (lua_Integer)kl_view_size(v, i));
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}
static int vp_lower_shape(lua_State *L) {
  kl_view *v = VP(1, "view.lower_shape", 1); /* allocations: finalizers */
  lua_createtable(L, kl_view_lower_rank(v), 0);
  for (int i = 0; i < kl_view_lower_rank(v); i++) {
    lua_pushinteger(L, (lua_Integer)kl_view_lower_size(v, i));
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}
static int vp_names(lua_State *L) {
  kl_view *v = VP(1, "view.names", 1); /* allocations: finalizers */
  lua_createtable(L, kl_view_rank(v), 0);
  for (int i = 0; i < kl_view_rank(v); i++) {
    lua_pushstring(L, kl_view_name(v, i));
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}
static int vp_lower_names(lua_State *L) {
  kl_view *v = VP(1, "view.lower_names", 1); /* allocations: finalizers */
  lua_createtable(L, kl_view_lower_rank(v), 0);
  for (int i = 0; i < kl_view_lower_rank(v); i++) {
    lua_pushstring(L, kl_view_lower_name(v, i));
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}
static int vp_rank(lua_State *L) {
  lua_pushinteger(L, kl_view_rank(V(1)));
  return 1;
}
static int vp_lower_rank(lua_State *L) {
  lua_pushinteger(L, kl_view_lower_rank(V(1)));
  return 1;
}
static int vp_nmaps(lua_State *L) {
  lua_pushinteger(L, V(1)->nmaps);
  return 1;
}
static int vp_numel(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)kl_view_numel(V(1)));
  return 1;
}
static int v_tostring(lua_State *L) {
  view_ud *u = luaL_checkudata(L, 1, KL_MT_VIEW);
  if (!u->v) {
    lua_pushstring(L, "kiln.view (released)");
    return 1;
  }
  char *s = kl_view_print(u->v);
  lua_pushstring(L, s);
  free(s);
  return 1;
}
static int v_gc(lua_State *L) {
  view_ud *u = luaL_checkudata(L, 1, KL_MT_VIEW);
  if (u->v && u->pin.n > 0)
    return kl_lua__rt_error(L, "view:release",
                            "the view is being read by %s (this is a metamethod or finalizer "
                            "that runs inside it); release it after that call returns",
                            u->pin.what);
  kl_view_free(u->v);
  u->v = NULL;
  return 0;
}
static int v_eq(lua_State *L) {
  view_ud *a = luaL_testudata(L, 1, KL_MT_VIEW), *b = luaL_testudata(L, 2, KL_MT_VIEW);
  lua_pushboolean(L, a && b && a->v && b->v && kl_view_equal(a->v, b->v));
  return 1;
}

/* kiln.view_parse(text) -> view (errors carry line:col) */
static int l_view_parse(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  kl_view_err e = { 0 };
  kl_view *v = kl_view_parse(s, n, &e);
  if (!v) return parse_error(L, "kiln.view_parse", &e);
  push_view(L, v);
  return 1;
}
static int l_is_view(lua_State *L) {
  lua_pushboolean(L, luaL_testudata(L, 1, KL_MT_VIEW) != NULL);
  return 1;
}
/* kiln._view_attr([ctx,] view) -> #view attribute handle */
static int l_view_attr(lua_State *L) {
  int first;
  int c = kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, c);
  kl_view *v = check_view(L, first);
  const kl_attr *a = kl_attr_from_view(ctx, v);
  if (!a) return kl_lua__rt_error(L, "kiln.attr", "cannot make a #view attribute");
  kl_lua__push(L, c, KL_LH_ATTR, a);
  return 1;
}
/* attr.view -> view object (nil if the attribute is not a #view) */
static int attr_p_view(lua_State *L) {
  const kl_attr *a = kl_lua__check(L, 1, KL_LH_ATTR);
  const kl_view *v = kl_attr_view(a);
  if (v)
    push_view(L, kl_view_clone(v));
  else
    lua_pushnil(L);
  return 1;
}

/* ---------------------------------------------------------- conv views ---- */
static int64_t int_field(lua_State *L, int t, const char *k, const char *alt, int64_t dflt, bool required) {
  int ty = lua_getfield(L, t, k);
  if (ty == LUA_TNIL && alt) {
    lua_pop(L, 1);
    ty = lua_getfield(L, t, alt);
  }
  if (ty == LUA_TNIL) {
    lua_pop(L, 1);
    if (required) kl_lua__rt_error(L, "kiln.conv_views", "field '%s' is required", k);
    return dflt;
  }
  int64_t v;
  if (kl_lua__check_ints(L, -1, &v, 1, "kiln.conv_views", k) != 1)
    kl_lua__rt_error(L, "kiln.conv_views", "%s must be one integer", k);
  lua_pop(L, 1);
  return v;
}
/* A pair field: a number or {a, b}. */
static void pair_field(lua_State *L, int t, const char *k, int64_t *a, int64_t *b) {
  if (lua_getfield(L, t, k) != LUA_TNIL) {
    int64_t v[2];
    int n = kl_lua__check_ints(L, -1, v, 2, "kiln.conv_views", k);
    if (n == 1) {
      *a = *b = v[0];
    } else if (n == 2) {
      *a = v[0];
      *b = v[1];
    } else
      kl_lua__rt_error(L, "kiln.conv_views", "%s must be a number or {h, w}", k);
  }
  lua_pop(L, 1);
}
/* The string stays on the stack (until the caller returns): an __index metamethod may
 * have built it, and nothing else references it. */
static const char *str_field(lua_State *L, int t, const char *k, const char *dflt) {
  if (lua_getfield(L, t, k) == LUA_TNIL) {
    lua_pop(L, 1);
    return dflt;
  }
  if (lua_type(L, -1) != LUA_TSTRING) kl_lua__rt_error(L, "kiln.conv_views", "%s must be a string", k);
  return lua_tostring(L, -1);
}
/* kiln.conv_views{n=, c=, h=|hi=, w=|wi=, k=, y=, x=, groups=, stride=, padding=, dilation=,
 *                 layout="NCHW"|"NHWC", filter_layout="KCYX"|"KYXC", output_layout="NKHW"|"NHWK"} */
static int l_conv_views(lua_State *L) {
  const char *what = "kiln.conv_views";
  luaL_checktype(L, 1, LUA_TTABLE);
  static const char *const CONV_FIELDS[] = { "n",
                                             "c",
                                             "h",
                                             "hi",
                                             "w",
                                             "wi",
                                             "k",
                                             "y",
                                             "x",
                                             "groups",
                                             "stride",
                                             "padding",
                                             "dilation",
                                             "layout",
                                             "filter_layout",
                                             "output_layout",
                                             NULL };
  kl_lua__check_opts(L, 1, what, CONV_FIELDS);
  kl_conv2d d = { 0 };
  d.n = int_field(L, 1, "n", NULL, 1, true);
  d.c = int_field(L, 1, "c", NULL, 1, true);
  d.hi = int_field(L, 1, "h", "hi", 1, true);
  d.wi = int_field(L, 1, "w", "wi", 1, true);
  d.k = int_field(L, 1, "k", NULL, 1, true);
  d.y = int_field(L, 1, "y", NULL, 1, true);
  d.x = int_field(L, 1, "x", NULL, 1, true);
  d.groups = int_field(L, 1, "groups", NULL, 1, false);
  d.stride_h = d.stride_w = d.dil_h = d.dil_w = 1;
  pair_field(L, 1, "stride", &d.stride_h, &d.stride_w);
  pair_field(L, 1, "dilation", &d.dil_h, &d.dil_w);
  if (lua_getfield(L, 1, "padding") != LUA_TNIL) {
    int64_t p[4];
    int n = kl_lua__check_ints(L, -1, p, 4, what, "padding");
    if (n == 1)
      d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = p[0];
    else if (n == 2) {
      d.pad_top = d.pad_bottom = p[0];
      d.pad_left = d.pad_right = p[1];
    } else if (n == 4) {
      d.pad_top = p[0];
      d.pad_bottom = p[1];
      d.pad_left = p[2];
      d.pad_right = p[3];
    } else
      return kl_lua__rt_error(L, what, "padding must be a number, {ph, pw} or {top, bottom, left, right}");
  }
  lua_pop(L, 1);
  const char *lay = str_field(L, 1, "layout", "NCHW");
  if (!strcmp(lay, "NCHW"))
    d.in_layout = KL_CONV_NCHW;
  else if (!strcmp(lay, "NHWC"))
    d.in_layout = KL_CONV_NHWC;
  else
    return kl_lua__rt_error(L, what, "layout must be \"NCHW\" or \"NHWC\", got \"%s\"", lay);
  const char *fl = str_field(L, 1, "filter_layout", d.in_layout == KL_CONV_NHWC ? "KYXC" : "KCYX");
  if (!strcmp(fl, "KCYX"))
    d.filter_layout = KL_CONV_KCYX;
  else if (!strcmp(fl, "KYXC"))
    d.filter_layout = KL_CONV_KYXC;
  else
    return kl_lua__rt_error(L, what, "filter_layout must be \"KCYX\" or \"KYXC\", got \"%s\"", fl);
  const char *ol = str_field(L, 1, "output_layout", d.in_layout == KL_CONV_NHWC ? "NHWK" : "NKHW");
  if (!strcmp(ol, "NKHW"))
    d.out_layout = KL_CONV_NKHW;
  else if (!strcmp(ol, "NHWK"))
    d.out_layout = KL_CONV_NHWK;
  else
    return kl_lua__rt_error(L, what, "output_layout must be \"NKHW\" or \"NHWK\", got \"%s\"", ol);
  kl_conv_views cv;
  kl_view_err e = { 0 };
  if (!kl_conv_views_build(&d, &cv, &e)) return kl_lua__rt_error(L, what, "%s", e.msg);
  int64_t in[4], fs[4], os[4];
  kl_conv_buffer_shapes(&d, in, fs, os);
  lua_createtable(L, 0, 16);
  push_view(L, cv.filter);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "filter");
  lua_setfield(L, -2, "a");
  push_view(L, cv.input);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "input");
  lua_setfield(L, -2, "b");
  push_view(L, cv.output);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "output");
  lua_setfield(L, -2, "c");
  cv.filter = cv.input = cv.output = NULL; /* owned by the userdata now */
  kl_lua__set_int(L, "g", (lua_Integer)cv.g);
  kl_lua__set_int(L, "gemm_k", (lua_Integer)cv.gemm_k);
  kl_lua__set_int(L, "gemm_m", (lua_Integer)cv.gemm_m);
  kl_lua__set_int(L, "gemm_n", (lua_Integer)cv.gemm_n);
  kl_lua__set_int(L, "ho", (lua_Integer)cv.ho);
  kl_lua__set_int(L, "wo", (lua_Integer)cv.wo);
  push_i64s(L, 4, in);
  lua_setfield(L, -2, "input_shape");
  push_i64s(L, 4, fs);
  lua_setfield(L, -2, "filter_shape");
  push_i64s(L, 4, os);
  lua_setfield(L, -2, "output_shape");
  return 1;
}

void kl_lua__open_view(lua_State *L) {
  int mod = lua_gettop(L);
  static const luaL_Reg meta[] = {
    { "__gc", v_gc }, { "__close", v_gc }, { "__tostring", v_tostring }, { "__eq", v_eq }, { NULL, NULL }
  };
  static const luaL_Reg methods[] = { { "passthrough", v_passthrough },
                                      { "transpose", v_transpose },
                                      { "pad", v_pad },
                                      { "slice", v_slice },
                                      { "embed", v_embed },
                                      { "unmerge", v_unmerge },
                                      { "merge", v_merge },
                                      { "broadcast", v_broadcast },
                                      { "add_dim", v_add_dim },
                                      { "const_dim", v_const_dim },
                                      { "reshape", v_reshape },
                                      { "eval", v_eval },
                                      { "addr", v_addr },
                                      { "compose", v_compose },
                                      { "invert", v_invert },
                                      { "simplify", v_simplify },
                                      { "vector_len", v_vector_len },
                                      { "invalid_dims", v_invalid_dims },
                                      { "maps", v_maps },
                                      { "tostring", v_tostring },
                                      { NULL, NULL } };
  static const luaL_Reg props[] = { { "shape", vp_shape },  { "lower_shape", vp_lower_shape },
                                    { "names", vp_names },  { "lower_names", vp_lower_names },
                                    { "rank", vp_rank },    { "lower_rank", vp_lower_rank },
                                    { "nmaps", vp_nmaps },  { "numel", vp_numel },
                                    { "text", v_tostring }, { NULL, NULL } };
  kl_lua__class(L, mod, KL_MT_VIEW, "view", methods, props, meta);
  static const luaL_Reg fns[] = { { "view", l_view },
                                  { "view_parse", l_view_parse },
                                  { "is_view", l_is_view },
                                  { "_view_attr", l_view_attr },
                                  { "conv_views", l_conv_views },
                                  { NULL, NULL } };
  luaL_setfuncs(L, fns, 0);
  lua_getfield(L, mod, "props");
  if (lua_getfield(L, -1, "attr") == LUA_TTABLE) {
    lua_pushcfunction(L, attr_p_view);
    lua_setfield(L, -2, "view");
  }
  lua_pop(L, 2);
}
