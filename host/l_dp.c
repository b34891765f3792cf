/* Bindings of DataParallel's autograd glue (lib/data_parallel.h); the module itself is
 * lua/partrain/data_parallel.lua.
 *
 *   pt._dp_link(roots, devices, inputs, positions) -> exposed
 *     roots[i]      replica i's root tensor, or false (k entries)
 *     devices[i]    replica i's device name ("cpu:2"), for messages
 *     inputs[e]     {orig = tensor, leaves = {tensor|false, ... k}, starts = {0-based...}|nil,
 *                    dim = 0-based}: a scattered input that requires grad
 *     positions[p]  {pieces = {k tensors}, gather = bool, dim = 0-based, name = "path"}, in
 *                   canonical order (the order of the replicas' flat roots)
 *   exposed[p] is the gathered tensor, or a list of k per-device tensors. */
#include <stdlib.h>
#include <string.h>

#include "../lib/data_parallel.h"
#include "../lib/parallel.h"
#include "lpt.h"

/* scratch memory owned by a userdata stored in the table at `keep`, so a Lua error never
 * leaks it and it lives as long as that table is on the stack */
static void *scratch(lua_State *L, int keep, size_t n) {
  void *p = lua_newuserdatauv(L, n ? n : 1, 0);
  memset(p, 0, n ? n : 1);
  lua_rawseti(L, keep, (lua_Integer)lua_rawlen(L, keep) + 1);
  return p;
}

static pt_tensor *field_tensor(lua_State *L, int tbl, int i, bool allow_false, const char *what) {
  lua_rawgeti(L, tbl, i);
  pt_tensor *t = lpt_test_tensor(L, -1);
  if (!t && !(allow_false && !lua_toboolean(L, -1)))
    luaL_error(L, "_dp_link: %s %d must be a tensor%s", what, i, allow_false ? " or false" : "");
  lua_pop(L, 1);
  return t;
}

static int l_dp_link(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TTABLE);
  luaL_checktype(L, 4, LUA_TTABLE);
  lua_settop(L, 4);
  lua_newtable(L); /* 5: keeps the scratch arrays */
  const int keep = 5;
  int k = (int)lua_rawlen(L, 1);
  if (k < 1 || k > 4096) return luaL_error(L, "_dp_link: expected 1..4096 replicas, got %d", k);
  pt_tensor **roots = scratch(L, keep, (size_t)k * sizeof *roots);
  const char **devs = scratch(L, keep, (size_t)k * sizeof *devs);
  for (int i = 1; i <= k; i++) {
    roots[i - 1] = field_tensor(L, 1, i, true, "root");
    lua_rawgeti(L, 2, i);
    devs[i - 1] = lua_tostring(L, -1); /* the devices table keeps the string alive */
    lua_pop(L, 1);
  }
  int nin = (int)lua_rawlen(L, 3);
  pt_dp_input *ins = scratch(L, keep, (size_t)nin * sizeof *ins);
  for (int e = 1; e <= nin; e++) {
    lua_rawgeti(L, 3, e);
    luaL_checktype(L, -1, LUA_TTABLE);
    pt_dp_input *in = &ins[e - 1];
    lua_getfield(L, -1, "orig");
    in->orig = lpt_check_tensor(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, -1, "dim");
    in->dim = (int)luaL_optinteger(L, -1, 0);
    lua_pop(L, 1);
    lua_getfield(L, -1, "leaves");
    luaL_checktype(L, -1, LUA_TTABLE);
    in->leaves = scratch(L, keep, (size_t)k * sizeof *in->leaves);
    for (int i = 1; i <= k; i++) in->leaves[i - 1] = field_tensor(L, lua_gettop(L), i, true, "leaf");
    lua_pop(L, 1);
    lua_getfield(L, -1, "starts");
    if (lua_istable(L, -1)) {
      int64_t *starts = scratch(L, keep, (size_t)k * sizeof *starts);
      for (int i = 1; i <= k; i++) {
        lua_rawgeti(L, -1, i);
        starts[i - 1] = lua_tointeger(L, -1);
        lua_pop(L, 1);
      }
      in->starts = starts;
    }
    lua_pop(L, 2);
  }
  int npos = (int)lua_rawlen(L, 4);
  pt_tensor **pieces = scratch(L, keep, (size_t)npos * (size_t)k * sizeof *pieces + 1);
  for (int p = 1; p <= npos; p++) {
    lua_rawgeti(L, 4, p);
    luaL_checktype(L, -1, LUA_TTABLE);
    lua_getfield(L, -1, "pieces");
    luaL_checktype(L, -1, LUA_TTABLE);
    for (int i = 1; i <= k; i++)
      pieces[(size_t)(p - 1) * k + (i - 1)] = field_tensor(L, lua_gettop(L), i, false, "piece");
    lua_pop(L, 2);
  }
  pt_tensor **outs = scratch(L, keep, (size_t)k * sizeof *outs);
  lua_createtable(L, npos, 0); /* 6: the result */
  const int res = 6;
  pt_ctx *ctx = lpt_ctx(L);
  pt_dp_call *call;
  if (pt_dp_call_new(ctx, k, roots, devs, nin, ins, &call)) return lpt_error(L);
  /* from here on nothing raises before the call is released (except out of memory): the
   * fields are read raw, so no __index of the caller's tables runs */
  for (int p = 1; p <= npos; p++) {
    lua_rawgeti(L, 4, p);
    lua_pushliteral(L, "gather");
    lua_rawget(L, -2);
    bool gather = lua_toboolean(L, -1);
    lua_pushliteral(L, "dim");
    lua_rawget(L, -3);
    int dim = (int)lua_tointeger(L, -1);
    lua_pushliteral(L, "name");
    lua_rawget(L, -4);
    const char *name = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    pt_tensor *const *pc = &pieces[(size_t)(p - 1) * k];
    pt_status st;
    if (gather) {
      pt_tensor *r;
      st = pt_dp_gather(ctx, call, pc, dim, name ? name : "?", &r);
      if (!st) {
        lpt_push_tensor(L, r);
        lua_rawseti(L, res, p);
      }
    } else {
      st = pt_dp_pieces(ctx, call, pc, outs);
      if (!st) {
        lua_createtable(L, k, 0);
        for (int i = 0; i < k; i++) {
          lpt_push_tensor(L, outs[i]);
          outs[i] = NULL;
          lua_rawseti(L, -2, i + 1);
        }
        lua_rawseti(L, res, p);
      }
    }
    lua_pop(L, 4);
    if (st) {
      pt_dp_call_release(call);
      return lpt_error(L);
    }
  }
  pt_dp_call_release(call);
  lua_settop(L, res);
  return 1;
}

/* pt._dp_cpu_count() -> the thread budget (PARTRAIN_NUM_THREADS, else the online CPUs): the
 * default number of cpu devices */
static int l_dp_cpu_count(lua_State *L) {
  lua_pushinteger(L, pt_parallel_budget());
  return 1;
}

/* pt._graph_tag() -> a new tag; pt._graph_tag(tag) sets this state's tag for the nodes it
 * records from now on (0: none) and returns the previous one (DataParallel's replicas) */
static int l_graph_tag(lua_State *L) {
  pt_ctx *ctx = lpt_ctx(L);
  if (lua_isnoneornil(L, 1)) {
    lua_pushinteger(L, (lua_Integer)(pt_graph_tag_new() & 0x7fffffffffffffffULL));
    return 1;
  }
  lua_Integer tag = luaL_checkinteger(L, 1);
  lua_pushinteger(L, (lua_Integer)ctx->graph_tag);
  ctx->graph_tag = (uint64_t)tag;
  return 1;
}

static const luaL_Reg functions[] = {
    {"_dp_link", l_dp_link},
    {"_graph_tag", l_graph_tag},
    {"_dp_cpu_count", l_dp_cpu_count},
    {NULL, NULL},
};

static const char *const docs[] = {
    "_dp_link", "pt._dp_link(roots, devices, inputs, positions) -> exposed (internal to nn.DataParallel)\n  Links the replicas' graphs into the caller's: one backward runs every replica's backward at once.",
    "_dp_cpu_count", "pt._dp_cpu_count() -> the thread budget (PARTRAIN_NUM_THREADS or the online CPUs); nn.DataParallel's default device count.",
    NULL, NULL,
};

void lpt_open_dp(lua_State *L) {
  lpt_add_functions(L, functions);
  lpt_add_docs(L, 0, docs);
}
