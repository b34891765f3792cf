/* Autograd from Lua: backward, no_grad, detach, requires_grad_, retain_grad. */
#include <string.h>

#include "lpt.h"

/* t:backward([grad][, {retain_graph=}]) */
static int t_backward(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  pt_tensor *g = NULL;
  int opts = 0;
  if (lua_istable(L, 2)) opts = 2;
  else {
    if (!lua_isnoneornil(L, 2)) g = lpt_check_tensor(L, 2);
    if (lua_istable(L, 3)) opts = 3; /* backward(grad, opts) or backward(nil, opts) */
  }
  static const char *const names[] = {"retain_graph", NULL}; /* a typo would free the graph */
  lpt_check_options(L, opts, "backward", names);
  bool retain = lpt_opt_bool(L, opts, "retain_graph", false);
  if (pt_backward(lpt_ctx(L), t, g, retain)) return lpt_error(L);
  return 0;
}

static int t_detach(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r;
  if (pt_detach(lpt_ctx(L), t, &r)) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

static int t_requires_grad_(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  bool v = lua_isnone(L, 2) ? true : lua_toboolean(L, 2);
  if (v && !pt_dtype_is_floating(t->dtype))
    return lpt_errorf(L, "requires_grad_: only floating point tensors can require gradients (dtype %s)",
                      pt_dtype_name(t->dtype));
  if (!v && t->grad_fn)
    return lpt_errorf(L, "requires_grad_: cannot turn off requires_grad of a non-leaf tensor (use detach())");
  t->requires_grad = v;
  lua_settop(L, 1);
  return 1;
}

static int t_retain_grad(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  if (!t->requires_grad)
    return lpt_errorf(L, "retain_grad: tensor does not require grad");
  if (t->grad_fn) t->retains_grad = true;
  lua_settop(L, 1);
  return 1;
}

/* internal, 1-based flat access for tests and gradient checks */
static int t_get_flat(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  lua_Integer i = luaL_checkinteger(L, 2);
  luaL_argcheck(L, i >= 1 && i <= pt_tensor_numel(t), 2, "flat index out of range");
  lua_pushnumber(L, pt_tensor_get_flat(t, i - 1));
  return 1;
}

static int t_set_flat(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  lua_Integer i = luaL_checkinteger(L, 2);
  luaL_argcheck(L, i >= 1 && i <= pt_tensor_numel(t), 2, "flat index out of range");
  pt_tensor_set_flat(t, i - 1, luaL_checknumber(L, 3));
  atomic_fetch_add(&t->storage->version, 1);
  return 0;
}

static int no_grad_finish(lua_State *L, int status, lua_KContext old) {
  lpt_ctx(L)->grad_enabled = (bool)old;
  if (status != LUA_OK && status != LUA_YIELD) return lua_error(L);
  return lua_gettop(L);
}

/* pt.no_grad(fn, ...) -> fn(...) with gradient recording off; restored even on error */
static int l_no_grad(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  pt_ctx *ctx = lpt_ctx(L);
  lua_KContext old = ctx->grad_enabled;
  ctx->grad_enabled = false;
  int n = lua_gettop(L) - 1;
  /* pcall so the flag is restored before the error continues */
  int status = lua_pcallk(L, n, LUA_MULTRET, 0, old, no_grad_finish);
  return no_grad_finish(L, status, old);
}

/* pt.enable_grad(fn, ...) */
static int l_enable_grad(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  pt_ctx *ctx = lpt_ctx(L);
  lua_KContext old = ctx->grad_enabled;
  ctx->grad_enabled = true;
  int n = lua_gettop(L) - 1;
  int status = lua_pcallk(L, n, LUA_MULTRET, 0, old, no_grad_finish);
  return no_grad_finish(L, status, old);
}

static const luaL_Reg methods[] = {
    {"backward", t_backward},
    {"detach", t_detach},
    {"requires_grad_", t_requires_grad_},
    {"retain_grad", t_retain_grad},
    {"_get_flat", t_get_flat},
    {"_set_flat", t_set_flat},
    {NULL, NULL},
};

static const luaL_Reg functions[] = {
    {"no_grad", l_no_grad},
    {"enable_grad", l_enable_grad},
    {NULL, NULL},
};

static const char *const method_docs[] = {
    "backward", "t:backward([grad][, {retain_graph=false}])\n  Reverse-mode gradients of t into .grad of the leaves (adds; zero them yourself).\n  grad may be omitted for one-element t.",
    "detach", "t:detach() -> a tensor sharing t's storage, outside the graph.",
    "requires_grad_", "t:requires_grad_([flag=true]) -> t, marking a leaf for gradients.",
    "retain_grad", "t:retain_grad() -> t; a non-leaf keeps its .grad after backward.",
    NULL, NULL,
};

static const char *const function_docs[] = {
    "no_grad", "pt.no_grad(fn, ...) -> fn(...) run without recording a graph.",
    "enable_grad", "pt.enable_grad(fn, ...) -> fn(...) run with gradient recording on.",
    NULL, NULL,
};

void lpt_open_autograd(lua_State *L) {
  lpt_add_methods(L, methods);
  lpt_add_functions(L, functions);
  lpt_add_docs(L, 1, method_docs);
  lpt_add_docs(L, 0, function_docs);
}
