/* kiln_lua_region.c — "kiln.region" handles: blocks, the entry block, the parent op,
 * adding and appending blocks. */
#include "lua/kiln_lua.h"

#define BLOCK(i)  ((kl_block *)kl_lua__check(L, (i), KL_LH_BLOCK))
#define REGION(i) ((kl_region *)kl_lua__check(L, (i), KL_LH_REGION))

static int region_tostring(lua_State *L) {
  kl_region *r = REGION(1);
  int n = 0;
  for (kl_block *b = r->first; b; b = b->next) n++;
  lua_pushfstring(L, "kiln.region(%d block%s%s%s)", n, n == 1 ? "" : "s", r->op ? " of " : "",
                  r->op ? r->op->name : "");
  return 1;
}
static int region_blocks(lua_State *L) {
  kl_region *r = REGION(1);
  int c = kl_lua__push_handle_ctxud(L, 1);
  lua_newtable(L);
  int n = 0;
  for (kl_block *b = r->first; b; b = b->next) {
    kl_lua__push(L, c, KL_LH_BLOCK, b);
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}
static int region_block(lua_State *L) {
  kl_region *r = REGION(1);
  lua_Integer i = luaL_optinteger(L, 2, 1);
  kl_block *b = r->first;
  for (lua_Integer k = 1; b && k < i; k++) b = b->next;
  kl_lua__push_like(L, 1, KL_LH_BLOCK, i >= 1 ? b : NULL);
  return 1;
}
static int region_entry(lua_State *L) {
  kl_lua__push_like(L, 1, KL_LH_BLOCK, REGION(1)->first);
  return 1;
}
static int region_parent(lua_State *L) {
  kl_lua__push_like(L, 1, KL_LH_OP, REGION(1)->op);
  return 1;
}
static int region_add_block(lua_State *L) { /* region:add_block([types]) -> new block */
  kl_region *r = REGION(1);
  kl_ctx *ctx = kl_lua__handle_ctx(L, 1);
  int top = lua_gettop(L);
  kl_lua__busy_guard(L, kl_lua__push_handle_ctxud(L, 1), "region:add_block"); /* the types table: metamethods */
  kl_block *b = kl_block_create(ctx);
  kl_lua__add_arg_types(L, ctx, b, 2, top);
  kl_region_push_block(r, b);
  kl_lua__push_like(L, 1, KL_LH_BLOCK, b);
  return 1;
}
static int region_append(lua_State *L) { /* region:append(detached block) */
  kl_region *r = REGION(1);
  kl_block *b = BLOCK(2);
  if (kl_lua__handle_ctx(L, 2) != kl_lua__handle_ctx(L, 1))
    return kl_lua__rt_error(L, "kiln", "block belongs to another kiln context");
  if (b->region) return luaL_argerror(L, 2, "block is already in a region");
  if (r->op)
    for (kl_op *o = b->first; o; o = o->next)
      if (kl_op_is_ancestor(o, r->op))
        return kl_lua__rt_error(L, "kiln", "cannot put a block into a region of an op it contains");
  kl_region_push_block(r, b);
  lua_settop(L, 2);
  return 1;
}
static int region_p_num_blocks(lua_State *L) {
  int n = 0;
  for (kl_block *b = REGION(1)->first; b; b = b->next) n++;
  lua_pushinteger(L, n);
  return 1;
}

void kl_lua__open_region(lua_State *L) {
  int mod = lua_gettop(L);
  static const luaL_Reg region_meta[] = { { "__tostring", region_tostring },
                                          { "__eq", kl_lua__handle_eq },
                                          { NULL, NULL } };
  static const luaL_Reg region_methods[] = { { "blocks", region_blocks },
                                             { "block", region_block },
                                             { "entry", region_entry },
                                             { "parent", region_parent },
                                             { "add_block", region_add_block },
                                             { "append", region_append },
                                             { NULL, NULL } };
  static const luaL_Reg region_props[] = { { "num_blocks", region_p_num_blocks }, { NULL, NULL } };
  kl_lua__class(L, mod, kl_lua__mt_names[KL_LH_REGION], "region", region_methods, region_props, region_meta);
}
