/* Bindings of lib/ops_sort.h (sort, topk, cumsum, cumprod, all, any) and the whole-tensor
 * comparisons equal and allclose, which answer with a Lua boolean. */
#include <math.h>
#include <string.h>

#include "../lib/ops_sort.h"
#include "lpt.h"

static int push_pair(lua_State *L, pt_status st, pt_tensor *v, pt_tensor *i) {
  if (st) return lpt_error(L);
  lpt_push_tensor(L, v);
  /* a 1-based copy for Lua: the graph keeps the 0-based indices */
  pt_tensor *one_based;
  st = lpt_one_based(lpt_ctx(L), i, true, &one_based);
  pt_tensor_release(i);
  lpt_push_result(L, st, one_based);
  return 2;
}

/* The dim of sort/topk: argument idx when it is an integer, else opts.dim, else the last. */
static int sort_dim(lua_State *L, int idx, int opts, const pt_tensor *t, const char *fname) {
  if (lua_isinteger(L, idx)) return lpt_check_dim(L, idx, t->ndim, fname);
  if (opts && lua_getfield(L, opts, "dim") != LUA_TNIL) {
    int d = lpt_check_dim(L, -1, t->ndim, fname);
    lua_pop(L, 1);
    return d;
  }
  if (opts) lua_pop(L, 1);
  return t->ndim ? t->ndim - 1 : 0;
}

/* t:sort([dim=-1][, descending | {descending=false, dim=}]) -> values, indices */
static int t_sort(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *v = NULL, *i = NULL;
  int o = lua_isinteger(L, 2) ? 3 : 2;
  int opts = lua_istable(L, o) ? o : 0;
  static const char *const names[] = {"dim", "descending", "stable", NULL};
  lpt_check_options(L, opts, "sort", names);
  lpt_check_max_args(L, o, "sort");
  int dim = sort_dim(L, 2, opts, t, "sort");
  bool desc = lua_isboolean(L, o) ? lua_toboolean(L, o) : lpt_opt_bool(L, opts, "descending", false);
  pt_status st = pt_sort(lpt_ctx(L), t, dim, desc, &v, &i);
  return push_pair(L, st, v, i);
}

/* t:topk(k[, dim=-1][, largest | {largest=true, dim=, sorted=true}]) -> values, indices (sorted) */
static int t_topk(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *v = NULL, *i = NULL;
  lua_Integer k = luaL_checkinteger(L, 2);
  int o = lua_isinteger(L, 3) ? 4 : 3;
  int opts = lua_istable(L, o) ? o : 0;
  static const char *const names[] = {"dim", "largest", "sorted", NULL};
  lpt_check_options(L, opts, "topk", names);
  lpt_check_max_args(L, o, "topk");
  int dim = sort_dim(L, 3, opts, t, "topk");
  bool largest = lua_isboolean(L, o) ? lua_toboolean(L, o) : lpt_opt_bool(L, opts, "largest", true);
  pt_status st = pt_topk(lpt_ctx(L), t, (int64_t)k, dim, largest, &v, &i);
  return push_pair(L, st, v, i);
}

static int scan(lua_State *L, bool prod) {
  const char *fn = prod ? "cumprod" : "cumsum";
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  if (lua_isnoneornil(L, 2) && t->ndim > 1)
    return lpt_errorf(L, "%s: a dimension is needed for a %d-D tensor", fn, t->ndim);
  int dim = lua_isnoneornil(L, 2) ? 0 : lpt_check_dim(L, 2, t->ndim, fn);
  pt_status st = prod ? pt_cumprod(lpt_ctx(L), t, dim, &r) : pt_cumsum(lpt_ctx(L), t, dim, &r);
  return lpt_push_result(L, st, r);
}
static int t_cumsum(lua_State *L) { return scan(L, false); }
static int t_cumprod(lua_State *L) { return scan(L, true); }

static int bool_reduce(lua_State *L, bool is_all) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  const char *fname = is_all ? "all" : "any";
  int dim = lua_isnoneornil(L, 2) ? -1 : lpt_check_dim(L, 2, t->ndim, fname);
  static const char *const names[] = {"keepdim", NULL};
  lpt_check_max_args(L, 3, fname);
  lpt_check_options(L, lua_istable(L, 3) ? 3 : 0, fname, names);
  bool keepdim = lua_istable(L, 3) ? lpt_opt_bool(L, 3, "keepdim", false) : lua_toboolean(L, 3);
  pt_status st = is_all ? pt_all(lpt_ctx(L), t, dim, keepdim, &r) : pt_any(lpt_ctx(L), t, dim, keepdim, &r);
  return lpt_push_result(L, st, r);
}
static int t_all(lua_State *L) { return bool_reduce(L, true); }
static int t_any(lua_State *L) { return bool_reduce(L, false); }

static bool same_shape(const pt_tensor *a, const pt_tensor *b) {
  return a->ndim == b->ndim && memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof(int64_t)) == 0;
}

/* t:equal(u) -> true when shapes and every value are equal (dtypes may differ) */
static int t_equal(lua_State *L) {
  pt_tensor *a = lpt_check_tensor(L, 1), *b = lpt_check_tensor(L, 2);
  bool eq = same_shape(a, b);
  for (int64_t i = 0, n = pt_tensor_numel(a); eq && i < n; i++)
    eq = pt_tensor_get_flat(a, i) == pt_tensor_get_flat(b, i);
  lua_pushboolean(L, eq);
  return 1;
}

/* t:allclose(u[, {rtol=1e-5, atol=1e-8, equal_nan=false}]) -> |a-b| <= atol + rtol*|b| everywhere */
static int t_allclose(lua_State *L) {
  pt_tensor *a = lpt_check_tensor(L, 1), *b = lpt_check_tensor(L, 2);
  double rtol = 1e-5, atol = 1e-8;
  bool equal_nan = false;
  static const char *const names[] = {"rtol", "atol", "equal_nan", NULL};
  lpt_check_max_args(L, 3, "allclose");
  if (lua_istable(L, 3)) {
    lpt_check_options(L, 3, "allclose", names);
    if (lua_getfield(L, 3, "rtol") != LUA_TNIL) rtol = luaL_checknumber(L, -1);
    if (lua_getfield(L, 3, "atol") != LUA_TNIL) atol = luaL_checknumber(L, -1);
    lua_pop(L, 2);
    equal_nan = lpt_opt_bool(L, 3, "equal_nan", false);
  }
  if (!same_shape(a, b)) {
    char sa[PT_SHAPE_STR_MAX], sb[PT_SHAPE_STR_MAX];
    return lpt_errorf(L, "allclose: shapes %s and %s differ", pt_shape_format(a->ndim, a->shape, sa, sizeof sa),
                      pt_shape_format(b->ndim, b->shape, sb, sizeof sb));
  }
  bool ok = true;
  for (int64_t i = 0, n = pt_tensor_numel(a); ok && i < n; i++) {
    double x = pt_tensor_get_flat(a, i), y = pt_tensor_get_flat(b, i);
    if (isnan(x) || isnan(y)) ok = equal_nan && isnan(x) && isnan(y);
    else ok = x == y || fabs(x - y) <= atol + rtol * fabs(y);
  }
  lua_pushboolean(L, ok);
  return 1;
}

static const luaL_Reg methods[] = {
    {"sort", t_sort},   {"topk", t_topk}, {"cumsum", t_cumsum}, {"cumprod", t_cumprod},
    {"all", t_all},     {"any", t_any},   {"equal", t_equal},   {"allclose", t_allclose},
    {NULL, NULL},
};

static const char *const docs[] = {
    "sort", "t:sort([dim=-1][, descending | {descending=false}]) -> values, indices (1-based int64).\n  Stable: equal values keep their order; NaN sorts as the largest.",
    "topk", "t:topk(k[, dim=-1][, {largest=true}]) -> the k largest (or smallest) values along dim, sorted, and their 1-based indices.",
    "cumsum", "t:cumsum([dim]) -> running sums along dim (dim may be omitted for 1-D tensors).",
    "cumprod", "t:cumprod([dim]) -> running products along dim.",
    "all", "t:all([dim][, keepdim]) -> bool tensor: every element nonzero (over everything, or along dim).",
    "any", "t:any([dim][, keepdim]) -> bool tensor: some element nonzero.",
    "equal", "t:equal(u) -> true when u has t's shape and the same values.",
    "allclose", "t:allclose(u[, {rtol=1e-5, atol=1e-8, equal_nan=false}]) -> true when |t-u| <= atol + rtol*|u| everywhere.",
    NULL, NULL,
};

void lpt_open_sort(lua_State *L) {
  lpt_add_methods(L, methods);
  /* module forms take the tensor first: pt.sort(t, ...) */
  lua_getfield(L, LUA_REGISTRYINDEX, LPT_MODULE);
  for (const luaL_Reg *r = methods; r->name; r++) {
    lua_pushcfunction(L, r->func);
    lua_setfield(L, -2, r->name);
  }
  lua_pop(L, 1);
  lpt_add_docs(L, 1, docs);
}
