/* Reductions from Lua: t:sum([dim][, keepdim]) and friends, also as pt.sum(t, ...).
 * Dims are 1-based (negative from the end); indices returned by max/min/argmax/argmin are
 * 1-based int64, as in Torch7. Without a dim every element is reduced into a 0-d tensor. */
#include <math.h>
#include <string.h>

#include "lpt.h"
#include "../lib/ops_reduce.h"

/* dim at idx: nil/none -> PT_DIM_ALL, else 1-based -> 0-based */
static int opt_dim(lua_State *L, int idx, const pt_tensor *t, const char *fname) {
  if (lua_isnoneornil(L, idx)) return PT_DIM_ALL;
  return lpt_check_dim(L, idx, t->ndim, fname);
}

/* A trailing option table (the last argument when it is a table), or 0. */
static int trailing_opts(lua_State *L, int first) {
  int top = lua_gettop(L);
  return top >= first && lua_istable(L, top) ? top : 0;
}

/* Argument idx unless it is the option table. */
static bool is_arg(lua_State *L, int idx, int opts) { return idx != opts && !lua_isnoneornil(L, idx); }

typedef pt_status (*reduce_fn)(pt_ctx *, pt_tensor *, int, bool, pt_tensor **);

/* keepdim: argument idx (a boolean), or {keepdim = } there; nothing else may follow */
static bool keepdim_arg(lua_State *L, int idx, const char *fname) {
  static const char *const names[] = {"keepdim", NULL};
  lpt_check_max_args(L, idx, fname);
  if (!lua_istable(L, idx)) return lua_toboolean(L, idx);
  lpt_check_options(L, idx, fname, names);
  return lpt_opt_bool(L, idx, "keepdim", false);
}

static int reduce_simple(lua_State *L, const char *fname, reduce_fn fn) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r;
  if (lua_istable(L, 2)) { /* t:sum({keepdim = true}): no dim */
    lua_pushnil(L);
    lua_insert(L, 2);
  }
  int dim = opt_dim(L, 2, t, fname);
  bool keepdim = keepdim_arg(L, 3, fname);
  if (fn(lpt_ctx(L), t, dim, keepdim, &r)) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

static int t_sum(lua_State *L) { return reduce_simple(L, "sum", pt_sum); }
static int t_mean(lua_State *L) { return reduce_simple(L, "mean", pt_mean); }
static int t_prod(lua_State *L) { return reduce_simple(L, "prod", pt_prod); }
static int t_logsumexp(lua_State *L) { return reduce_simple(L, "logsumexp", pt_logsumexp); }

/* 0-based int64 indices -> 1-based; in place when the tensor is ours alone, else a copy. */
typedef pt_status (*minmax_fn)(pt_ctx *, pt_tensor *, int, bool, pt_tensor **, pt_tensor **);

static int minmax(lua_State *L, const char *fname, minmax_fn fn) {
  pt_tensor *t = lpt_check_tensor(L, 1), *v, *ix, *ix1;
  pt_ctx *ctx = lpt_ctx(L);
  if (lua_isnoneornil(L, 2)) {
    if (fn(ctx, t, PT_DIM_ALL, keepdim_arg(L, 3, fname), &v, NULL)) return lpt_error(L);
    lpt_push_tensor(L, v);
    return 1;
  }
  int dim = lpt_check_dim(L, 2, t->ndim, fname);
  bool keepdim = keepdim_arg(L, 3, fname);
  if (fn(ctx, t, dim, keepdim, &v, &ix)) return lpt_error(L);
  /* the autograd node keeps the 0-based indices: hand out a 1-based copy */
  pt_status st = lpt_one_based(ctx, ix, true, &ix1);
  pt_tensor_release(ix);
  if (st) {
    pt_tensor_release(v);
    return lpt_error(L);
  }
  lpt_push_tensor(L, v);
  lpt_push_tensor(L, ix1);
  return 2;
}

static int t_max(lua_State *L) { return minmax(L, "max", pt_max); }
static int t_min(lua_State *L) { return minmax(L, "min", pt_min); }

static int argminmax(lua_State *L, const char *fname, reduce_fn fn) {
  pt_tensor *t = lpt_check_tensor(L, 1), *ix, *r;
  int dim = opt_dim(L, 2, t, fname);
  bool keepdim = keepdim_arg(L, 3, fname);
  pt_ctx *ctx = lpt_ctx(L);
  if (fn(ctx, t, dim, keepdim, &ix)) return lpt_error(L);
  lpt_one_based(ctx, ix, false, &r); /* in place: cannot fail */
  lpt_push_tensor(L, r);
  return 1;
}

static int t_argmax(lua_State *L) { return argminmax(L, "argmax", pt_argmax); }
static int t_argmin(lua_State *L) { return argminmax(L, "argmin", pt_argmin); }

typedef pt_status (*var_fn)(pt_ctx *, pt_tensor *, int, bool, bool, pt_tensor **);

/* t:var([dim][, keepdim][, {unbiased=true, correction=1, keepdim=false}]) */
static int var_std(lua_State *L, const char *fname, var_fn fn) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r;
  int opts = trailing_opts(L, 2);
  static const char *const names[] = {"unbiased", "correction", "keepdim", NULL};
  lpt_check_options(L, opts, fname, names);
  lpt_check_max_args(L, opts ? opts : 3, fname);
  int dim = is_arg(L, 2, opts) ? lpt_check_dim(L, 2, t->ndim, fname) : PT_DIM_ALL;
  bool keepdim = (is_arg(L, 3, opts) && lua_toboolean(L, 3)) || lpt_opt_bool(L, opts, "keepdim", false);
  bool unbiased = lpt_opt_bool(L, opts, "unbiased", true);
  if (opts && lua_getfield(L, opts, "correction") != LUA_TNIL) { /* PyTorch's newer spelling */
    if (!lua_isinteger(L, -1) || (lua_tointeger(L, -1) != 0 && lua_tointeger(L, -1) != 1))
      return lpt_errorf(L, "%s: correction must be 0 or 1, got %s", fname, luaL_tolstring(L, -1, NULL));
    unbiased = lua_tointeger(L, -1) == 1;
  }
  if (opts) lua_pop(L, 1);
  if (fn(lpt_ctx(L), t, dim, unbiased, keepdim, &r)) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

static int t_var(lua_State *L) { return var_std(L, "var", pt_var); }
static int t_std(lua_State *L) { return var_std(L, "std", pt_std); }

/* t:norm([p=2][, dim][, keepdim]); p may be a number, math.huge, -math.huge or "fro" */
static int t_norm(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r;
  double p = 2;
  if (lua_type(L, 2) == LUA_TSTRING) {
    if (strcmp(lua_tostring(L, 2), "fro") != 0)
      return lpt_errorf(L, "norm: unknown norm '%s' (expected a number or \"fro\")", lua_tostring(L, 2));
  } else if (!lua_isnoneornil(L, 2)) {
    p = luaL_checknumber(L, 2);
  }
  int dim = opt_dim(L, 3, t, "norm");
  bool keepdim = lua_toboolean(L, 4);
  if (pt_norm(lpt_ctx(L), t, p, dim, keepdim, &r)) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

static int softmax(lua_State *L, const char *fname,
                   pt_status (*fn)(pt_ctx *, pt_tensor *, int, pt_tensor **)) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r;
  if (lua_isnoneornil(L, 2)) return lpt_errorf(L, "%s: a dimension is required", fname);
  int dim = lpt_check_dim(L, 2, t->ndim, fname);
  if (fn(lpt_ctx(L), t, dim, &r)) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

static int t_softmax(lua_State *L) { return softmax(L, "softmax", pt_softmax); }
static int t_log_softmax(lua_State *L) { return softmax(L, "log_softmax", pt_log_softmax); }

static const luaL_Reg functions[] = {
    {"sum", t_sum},         {"mean", t_mean},       {"prod", t_prod},
    {"max", t_max},         {"min", t_min},         {"argmax", t_argmax},
    {"argmin", t_argmin},   {"var", t_var},         {"std", t_std},
    {"norm", t_norm},       {"softmax", t_softmax}, {"log_softmax", t_log_softmax},
    {"logsumexp", t_logsumexp}, {NULL, NULL},
};

#define DIMS "  dim is 1-based (negative from the end); without it every element is reduced to a 0-d tensor.\n  keepdim keeps the reduced dimension with size 1."

static const char *const method_docs[] = {
    "sum", "t:sum([dim][, keepdim]) -> Tensor, the sum (integer tensors give int64).\n  Also pt.sum(t, ...).\n" DIMS,
    "mean", "t:mean([dim][, keepdim]) -> Tensor, the mean (floating point tensors only).\n  Also pt.mean(t, ...).\n" DIMS,
    "prod", "t:prod([dim][, keepdim]) -> Tensor, the product (integer tensors give int64).\n  Also pt.prod(t, ...).\n" DIMS,
    "max", "t:max() -> 0-d Tensor, the largest element (NaN if any; t:max(nil, true) keeps the dims).\n"
           "t:max(dim[, keepdim]) -> values, indices (1-based int64) along dim.\n"
           "  The gradient goes to the selected element. Also pt.max(t, ...).",
    "min", "t:min() -> 0-d Tensor, the smallest element (NaN if any).\n"
           "t:min(dim[, keepdim]) -> values, indices (1-based int64) along dim. Also pt.min(t, ...).",
    "argmax", "t:argmax([dim][, keepdim]) -> int64 Tensor of 1-based indices of the maxima\n"
              "  (without dim: the flat index). The first one wins on ties. Also pt.argmax(t, ...).",
    "argmin", "t:argmin([dim][, keepdim]) -> int64 Tensor of 1-based indices of the minima\n"
              "  (without dim: the flat index). The first one wins on ties. Also pt.argmin(t, ...).",
    "var", "t:var([dim][, keepdim][, {unbiased=true}]) -> Tensor, the variance\n"
           "  (divides by n-1, or by n with unbiased=false).\n  Also pt.var(t, ...).\n" DIMS,
    "std", "t:std([dim][, keepdim][, {unbiased=true}]) -> Tensor, the standard deviation\n"
           "  (divides by n-1, or by n with unbiased=false).\n  Also pt.std(t, ...).\n" DIMS,
    "norm", "t:norm([p=2][, dim][, keepdim]) -> Tensor, the p-norm: p > 0, math.huge (max |x|),\n"
            "  -math.huge (min |x|), 0 (count of non-zeros) or \"fro\" (= 2).\n  Also pt.norm(t, ...).\n" DIMS,
    "softmax", "t:softmax(dim) -> Tensor, exp(t) / sum(exp(t)) along dim (numerically stable).\n  Also pt.softmax(t, dim).",
    "log_softmax", "t:log_softmax(dim) -> Tensor, t - logsumexp(t, dim) (numerically stable).\n  Also pt.log_softmax(t, dim).",
    "logsumexp", "t:logsumexp([dim][, keepdim]) -> Tensor, log(sum(exp(t))) computed stably.\n  Also pt.logsumexp(t, ...).\n" DIMS,
    NULL, NULL,
};

void lpt_open_reduce(lua_State *L) {
  lpt_add_methods(L, functions);
  lpt_add_functions(L, functions);
  /* methods and functions are the same C functions, so one doc each serves both */
  lpt_add_docs(L, 1, method_docs);
}
