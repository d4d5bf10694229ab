/* kiln_lua_ir.c — the module functions that make IR (kiln.parse, kiln.type, kiln.attr,
 * kiln.op, kiln.block, kiln.module, kiln.ops, kiln.diagnostics), also context methods
 * (ctx:parse(text), ctx:op{...}, ...). The handles they return have their own files
 * (kiln_lua_op.c, kiln_lua_value.c, kiln_lua_block.c, kiln_lua_region.c,
 * kiln_lua_type.c, kiln_lua_attr.c). */
#include "lua/kiln_lua.h"
#include "core/parse.h"
#include "frontend/migraphx_parse.h"
#include <stdlib.h>

static int l_parse(lua_State *L) {
  int first;
  int c = kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, c);
  size_t n;
  const char *text = luaL_checklstring(L, first, &n);
  const char *name = luaL_optstring(L, first + 1, "<string>");
  kl_lua__flush_diags(ctx);
  kl_op *m = kl_parse_module(ctx, text, n, name);
  if (!m) return kl_lua__diag_error(L, ctx, "kiln.parse", "parse failed");
  kl_lua__flush_diags(ctx);
  kl_lua__push(L, c, KL_LH_OP, m);
  return 1;
}
/* kiln.migraphx_module(text [, name [, func]]) -> the module of graphs (all, or only func's);
 * lua/kiln/migraphx.lua wraps it */
static int l_migraphx_module(lua_State *L) {
  int first;
  int c = kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, c);
  size_t n;
  const char *text = luaL_checklstring(L, first, &n);
  const char *name = luaL_optstring(L, first + 1, "<string>");
  const char *only = luaL_optstring(L, first + 2, NULL);
  kl_lua__flush_diags(ctx);
  kl_op *m = kl_migraphx_parse_func(ctx, text, n, name, only);
  if (!m) return kl_lua__diag_error(L, ctx, "kiln.migraphx", "parse failed");
  kl_lua__flush_diags(ctx);
  kl_lua__push(L, c, KL_LH_OP, m);
  return 1;
}
static int l_type(lua_State *L) {
  int first;
  int c = kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, c);
  kl_lua__push(L, c, KL_LH_TYPE, kl_lua__totype(L, first, ctx));
  return 1;
}
static int l_attr(lua_State *L) { /* kiln.attr("text") parses; kiln.attr(3, "i32") is typed */
  int first;
  int c = kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, c);
  const kl_attr *a;
  if (lua_type(L, first) == LUA_TSTRING) {
    size_t n;
    const char *s = lua_tolstring(L, first, &n);
    kl_lua__flush_diags(ctx);
    a = kl_parse_attr(ctx, s, n, "<attribute>");
    if (!a) return kl_lua__diag_error(L, ctx, "kiln.attr", "invalid attribute");
  } else if (lua_type(L, first) == LUA_TNUMBER && !lua_isnoneornil(L, first + 1)) {
    const kl_type *t = kl_lua__totype(L, first + 1, ctx);
    if (kl_type_is_float(t))
      a = kl_attr_float_typed(ctx, (double)lua_tonumber(L, first), t);
    else if (kl_type_is_int(t)) {
      if (!lua_isinteger(L, first))
        return kl_lua__rt_error(L, "kiln.attr", "an integer attribute needs an integer value");
      a = kl_attr_int_typed(ctx, (int64_t)lua_tointeger(L, first), t);
    } else
      return kl_lua__rt_error(L, "kiln.attr", "a number attribute needs an integer or float type");
  } else {
    a = kl_lua__toattr(L, first, ctx);
    if (!a) return kl_lua__rt_error(L, "kiln.attr", "a value is required");
  }
  kl_lua__push(L, c, KL_LH_ATTR, a);
  return 1;
}

/* The context for kiln.op{...}: explicit ctx argument, the table's ctx field, the
 * first operand's context, else the default context; it ends up in slot 1. */
static int op_ctx(lua_State *L, int *first) {
  if (luaL_testudata(L, 1, KL_MT_CONTEXT)) return kl_lua__ctx_arg(L, first);
  *first = 2;
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  if (lua_getfield(L, 1, "ctx") != LUA_TNIL) {
    kl_lua__check_ctx(L, 2);
    lua_insert(L, 1);
    return 1;
  }
  lua_pop(L, 1);
  if (lua_getfield(L, 1, "operands") == LUA_TTABLE && lua_geti(L, -1, 1) == LUA_TUSERDATA &&
      kl_lua__test(L, -1, KL_LH_VALUE)) { /* stack: tbl, operands, operand 1 */
    kl_lua__push_handle_ctxud(L, 3);
    lua_insert(L, 1);
    lua_settop(L, 2);
    return 1;
  }
  lua_settop(L, 1);
  return kl_lua__ctx_arg(L, first);
}
static int l_op(lua_State *L) {
  int first;
  int c = op_ctx(L, &first);
  kl_lua__busy_guard(L, c, "kiln.op"); /* metamethods of the table, finalizers */
  kl_op *op = kl_lua__build_op(L, first, kl_lua__check_ctx(L, c));
  kl_lua__push(L, c, KL_LH_OP, op);
  return 1;
}
static int l_block(lua_State *L) { /* kiln.block([ctx,] {types} or types...) -> detached block */
  int first;
  int c = kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, c);
  int top = lua_gettop(L);
  kl_lua__busy_guard(L, c, "kiln.block"); /* the types table: metamethods */
  kl_block *b = kl_block_create(ctx);
  kl_lua__add_arg_types(L, ctx, b, first, top);
  kl_lua__push(L, c, KL_LH_BLOCK, b);
  return 1;
}
static int l_module(lua_State *L) { /* kiln.module([ctx]) -> empty module */
  int first;
  int c = kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, c);
  kl_op *m = kl_module_create(ctx, kl_lua__caller_loc(L, ctx));
  kl_lua__push(L, c, KL_LH_OP, m);
  return 1;
}
static int l_ops(lua_State *L) { /* registered op definitions: {name=, summary=} sorted */
  int first;
  int c = kl_lua__ctx_arg(L, &first);
  kl_ctx *ctx = kl_lua__check_ctx(L, c);
  int n = kl_opdef_count(ctx);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    const kl_opdef *d = kl_opdef_at(ctx, i);
    lua_createtable(L, 0, 2);
    kl_lua__set_str(L, "name", d->name);
    kl_lua__set_str(L, "summary", d->summary);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}
static int l_diagnostics(lua_State *L) { /* pending diagnostics text (cleared) */
  int first;
  int c = kl_lua__ctx_arg(L, &first);
  char *d = kl_diag_take(kl_lua__check_ctx(L, c));
  lua_pushstring(L, d);
  free(d);
  return 1;
}

void kl_lua__open_ir(lua_State *L) {
  int mod = lua_gettop(L);
  static const luaL_Reg fns[] = { { "parse", l_parse },
                                  { "type", l_type },
                                  { "attr", l_attr },
                                  { "op", l_op },
                                  { "block", l_block },
                                  { "module", l_module },
                                  { "ops", l_ops },
                                  { "diagnostics", l_diagnostics },
                                  { "migraphx_module", l_migraphx_module },
                                  { NULL, NULL } };
  luaL_setfuncs(L, fns, 0);
  /* the same functions as context methods: ctx:parse(text), ctx:op{...}, ... */
  lua_getfield(L, mod, "methods");
  lua_getfield(L, -1, "context");
  luaL_setfuncs(L, fns, 0);
  lua_pop(L, 2);
}