/* Reductions from Lua: t:sum([dim | {dims}][, keepdim]) and friends, also as pt.sum(t, ...).
 * Dims are 1-based (negative from the end); indices returned by max/min/argmax/argmin are
 * 1-based int64, as in Torch7. Without a dim every element is reduced into a 0-d tensor. */
#include <math.h>
#include <string.h>

#include "lpt.h"
#include "../lib/ops_decomp.h"
#include "../lib/ops_elementwise.h"
#include "../lib/ops_reduce.h"

/* dim at idx: nil/none -> PT_DIM_ALL, else 1-based -> 0-based */
static int opt_dim(lua_State *L, int idx, const pt_tensor *t, const char *fname) {
  if (lua_isnoneornil(L, idx)) return PT_DIM_ALL;
  return lpt_check_dim(L, idx, t->ndim, fname);
}

/* A trailing option table (the last argument that is not nil, when it is a table), or 0. */
static int trailing_opts(lua_State *L, int first) {
  int top = lua_gettop(L);
  while (top >= first && lua_isnil(L, top)) top--; /* t:var(1, {unbiased = false}, nil) */
  return top >= first && lua_istable(L, top) ? top : 0;
}

/* Argument idx unless it is the option table. */
static bool is_arg(lua_State *L, int idx, int opts) { return idx != opts && !lua_isnoneornil(L, idx); }

typedef pt_status (*reduce_fn)(pt_ctx *, pt_tensor *, int, bool, pt_tensor **);

/* Argument idx as keepdim: nil or a boolean. Anything else is an error naming fname (t:sum(1, 2)
 * meant keepdim before, not the dims 1 and 2; torch rejects an integer keepdim too). */
static bool check_keepdim(lua_State *L, int idx, const char *fname, bool lists) {
  if (!lua_isnoneornil(L, idx) && !lua_isboolean(L, idx))
    lpt_errorf(L, "%s: keepdim must be a boolean, got %s%s", fname, luaL_typename(L, idx),
               lists && lua_type(L, idx) == LUA_TNUMBER ? " (several dims go in a list: {1, 2})" : "");
  return lua_toboolean(L, idx);
}

/* keepdim: argument idx (a boolean), or {keepdim = } there; nothing else may follow. lists: whether
 * fname takes a list of dims (the error then says how to reduce several). */
static bool keepdim_arg(lua_State *L, int idx, const char *fname, bool lists) {
  static const char *const names[] = {"keepdim", NULL};
  lpt_check_max_args(L, idx, fname);
  if (!lua_istable(L, idx)) return check_keepdim(L, idx, fname, lists);
  lpt_check_options(L, idx, fname, names);
  return lpt_opt_bool(L, idx, "keepdim", false);
}

/* keepdim and torch's dtype= for sum, mean, prod, nansum, nanmean from idx on: a boolean keepdim,
 * an options table {keepdim=, dtype=}, or a boolean then {dtype=}; *dt = PT_DTYPE_COUNT when no
 * dtype is given. */
static bool keepdim_dtype_arg(lua_State *L, int idx, const char *fname, bool lists, pt_dtype *dt) {
  *dt = PT_DTYPE_COUNT;
  int opts = lua_istable(L, idx) ? idx : lua_isboolean(L, idx) && lua_istable(L, idx + 1) ? idx + 1 : 0;
  if (!opts) return keepdim_arg(L, idx, fname, lists);
  static const char *const names[] = {"keepdim", "dtype", NULL};
  lpt_check_max_args(L, opts, fname);
  lpt_check_options(L, opts, fname, names);
  bool keepdim;
  if (opts == idx) {
    keepdim = lpt_opt_bool(L, opts, "keepdim", false);
  } else {
    keepdim = lua_toboolean(L, idx);
    if (lua_getfield(L, opts, "keepdim") != LUA_TNIL)
      lpt_errorf(L, "%s: keepdim given twice (argument #%d and an option)", fname, idx);
    lua_pop(L, 1);
  }
  if (lua_getfield(L, opts, "dtype") != LUA_TNIL) {
    const char *name = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    if (!name || !pt_dtype_from_name(name, dt))
      lpt_errorf(L, "%s: dtype must be a dtype name such as \"float64\", got %s", fname,
                 name ? name : lpt_typename(L, -1));
  }
  lua_pop(L, 1);
  return keepdim;
}

/* Whether the table at idx is a list of dims ({1, 3}, or {}: every dim) rather than options. */
static bool is_dim_list(lua_State *L, int idx) {
  if (!lua_istable(L, idx)) return false;
  if (lua_rawlen(L, idx) > 0) return true;
  lua_pushnil(L);
  if (!lua_next(L, idx)) return true; /* {} */
  lua_pop(L, 2);
  return false;
}

/* The list of dims at idx -> 0-based dims[] (1-based, negative from the end, in Lua); returns
 * how many. Repeats, non-integers and keys other than 1..n are errors naming the function. */
static int check_dim_list(lua_State *L, int idx, const pt_tensor *t, const char *fname, int *dims) {
  idx = lua_absindex(L, idx);
  lua_Integer len = (lua_Integer)lua_rawlen(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) { /* only the keys 1..len */
    lua_pop(L, 1);
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 || lua_tointeger(L, -1) > len)
      lpt_errorf(L, "%s: the list of dimensions may hold only dimensions (found key '%s'; options go in a "
                 "table of their own)", fname, luaL_tolstring(L, -1, NULL));
  }
  bool seen[PT_MAX_DIMS] = {false};
  int n = 0;
  for (lua_Integer i = 1; i <= len; i++) {
    lua_rawgeti(L, idx, i);
    if (!lua_isinteger(L, -1))
      lpt_errorf(L, "%s: the list of dimensions holds %s at position %d (expected integers)", fname,
                 lua_isnumber(L, -1) ? lua_tostring(L, -1) : luaL_typename(L, -1), (int)i);
    int d = lpt_check_dim(L, -1, t->ndim, fname);
    if (seen[d])
      lpt_errorf(L, "%s: dimension %I appears more than once in the list of dimensions", fname,
                 (LUAI_UACINT)lua_tointeger(L, -1));
    seen[d] = true;
    dims[n++] = d;
    lua_pop(L, 1);
  }
  return n;
}

typedef pt_status (*dims_fn)(pt_ctx *, pt_tensor *, int, const int *, bool, pt_tensor **);

/* t:sum([dim | {dims}][, keepdim | {keepdim=}]) */
/* with_dtype: torch's dtype= (t converted to it first; the result has it: an int32 sum with
 * dtype "int32" stays int32) */
static int reduce_simple(lua_State *L, const char *fname, reduce_fn fn, dims_fn fnd, bool with_dtype) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL, *c = NULL;
  pt_ctx *ctx = lpt_ctx(L);
  pt_dtype dt = PT_DTYPE_COUNT;
  int dims[PT_MAX_DIMS], n = -1, dim = PT_DIM_ALL;
  bool keepdim;
  if (fnd && is_dim_list(L, 2)) { /* t:sum({1, 3}[, keepdim]) */
    n = check_dim_list(L, 2, t, fname, dims);
    keepdim = with_dtype ? keepdim_dtype_arg(L, 3, fname, true, &dt) : keepdim_arg(L, 3, fname, true);
  } else {
    if (!fnd && lua_istable(L, 2) && lua_rawlen(L, 2) > 0) /* it read as options: "unknown option '1'" */
      return lpt_errorf(L, "%s: takes one dim, not a list of dims", fname);
    if (lua_istable(L, 2)) { /* t:sum({keepdim = true}): no dim */
      lua_pushnil(L);
      lua_insert(L, 2);
    }
    dim = opt_dim(L, 2, t, fname);
    keepdim = with_dtype ? keepdim_dtype_arg(L, 3, fname, fnd != NULL, &dt) : keepdim_arg(L, 3, fname, fnd != NULL);
  }
  if (dt == PT_DTYPE_COUNT) {
    if (n >= 0 ? fnd(ctx, t, n, dims, keepdim, &r) : fn(ctx, t, dim, keepdim, &r)) return lpt_error(L);
    lpt_push_tensor(L, r);
    return 1;
  }
  if (pt_to_dtype(ctx, t, dt, &c)) return lpt_error(L);
  pt_status st = n >= 0 ? fnd(ctx, c, n, dims, keepdim, &r) : fn(ctx, c, dim, keepdim, &r);
  pt_tensor_release(c);
  if (!st && r->dtype != dt) { /* an integer sum comes as int64 */
    c = r;
    st = pt_to_dtype(ctx, c, dt, &r);
    pt_tensor_release(c);
  }
  return lpt_push_result(L, st, r);
}

static int t_sum(lua_State *L) { return reduce_simple(L, "sum", pt_sum, pt_sum_dims, true); }
static int t_mean(lua_State *L) { return reduce_simple(L, "mean", pt_mean, pt_mean_dims, true); }
static int t_prod(lua_State *L) { return reduce_simple(L, "prod", pt_prod, NULL, true); }
static int t_logsumexp(lua_State *L) { return reduce_simple(L, "logsumexp", pt_logsumexp, pt_logsumexp_dims, false); }
static int t_nansum(lua_State *L) { return reduce_simple(L, "nansum", pt_nansum, pt_nansum_dims, true); }
static int t_nanmean(lua_State *L) { return reduce_simple(L, "nanmean", pt_nanmean, pt_nanmean_dims, true); }

/* t:count_nonzero([dim | {dims}]) -> int64 */
static int t_count_nonzero(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r;
  lpt_check_max_args(L, 2, "count_nonzero");
  int dims[PT_MAX_DIMS], n = 0;
  if (lua_istable(L, 2)) n = check_dim_list(L, 2, t, "count_nonzero", dims);
  else if (!lua_isnoneornil(L, 2)) dims[n++] = lpt_check_dim(L, 2, t->ndim, "count_nonzero");
  if (pt_count_nonzero(lpt_ctx(L), t, n, dims, &r)) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

/* a max/min kernel: the values and their 0-based int64 indices along dim */
typedef pt_status (*minmax_fn)(pt_ctx *, pt_tensor *, int, bool, pt_tensor **, pt_tensor **);

static int minmax(lua_State *L, const char *fname, minmax_fn fn) {
  pt_tensor *t = lpt_check_tensor(L, 1), *v, *ix, *ix1, *other = lpt_test_tensor(L, 2);
  pt_ctx *ctx = lpt_ctx(L);
  lpt_dim_opts_to_args(L, fname);
  if (other) { /* t:max(u): the element-wise maximum, as torch.max(input, other) */
    lpt_check_max_args(L, 2, fname);
    pt_status st = fname[1] == 'a' ? pt_maximum(ctx, t, other, &v) : pt_minimum(ctx, t, other, &v);
    return lpt_push_result(L, st, v);
  }
  if (lua_isnoneornil(L, 2)) {
    if (fn(ctx, t, PT_DIM_ALL, keepdim_arg(L, 3, fname, false), &v, NULL)) return lpt_error(L);
    lpt_push_tensor(L, v);
    return 1;
  }
  int dim = lpt_check_dim(L, 2, t->ndim, fname);
  bool keepdim = keepdim_arg(L, 3, fname, false);
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
  lpt_dim_opts_to_args(L, fname);
  int dim = opt_dim(L, 2, t, fname);
  bool keepdim = keepdim_arg(L, 3, fname, false);
  pt_ctx *ctx = lpt_ctx(L);
  if (fn(ctx, t, dim, keepdim, &ix)) return lpt_error(L);
  lpt_one_based(ctx, ix, false, &r); /* in place: cannot fail */
  lpt_push_tensor(L, r);
  return 1;
}

static int t_argmax(lua_State *L) { return argminmax(L, "argmax", pt_argmax); }
static int t_argmin(lua_State *L) { return argminmax(L, "argmin", pt_argmin); }

typedef pt_status (*var_fn)(pt_ctx *, pt_tensor *, int, double, bool, pt_tensor **);
typedef pt_status (*var_dims_fn)(pt_ctx *, pt_tensor *, int, const int *, double, bool, pt_tensor **);

/* t:var([dim | {dims}][, keepdim][, {unbiased=true, correction=1, keepdim=false}]) */
static int var_std(lua_State *L, const char *fname, var_fn fn, var_dims_fn fnd) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r;
  bool list = is_dim_list(L, 2);
  int opts = trailing_opts(L, 2);
  if (opts == 2 && list) opts = 0; /* t:var({1, 2}): dims, not options */
  static const char *const names[] = {"unbiased", "correction", "keepdim", NULL};
  lpt_check_options(L, opts, fname, names);
  lpt_check_max_args(L, opts ? opts : 3, fname);
  int dims[PT_MAX_DIMS], ndims = 0;
  int dim = PT_DIM_ALL;
  if (list) ndims = check_dim_list(L, 2, t, fname, dims);
  else if (is_arg(L, 2, opts)) dim = lpt_check_dim(L, 2, t->ndim, fname);
  bool keepdim = (is_arg(L, 3, opts) && check_keepdim(L, 3, fname, true)) || lpt_opt_bool(L, opts, "keepdim", false);
  double correction = lpt_opt_bool(L, opts, "unbiased", true) ? 1 : 0;
  if (opts && lua_getfield(L, opts, "correction") != LUA_TNIL) { /* PyTorch's newer spelling */
    if (lua_getfield(L, opts, "unbiased") != LUA_TNIL) /* torch refuses both; correction won */
      return lpt_errorf(L, "%s: give unbiased or correction, not both", fname);
    lua_pop(L, 1);
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0)
      return lpt_errorf(L, "%s: correction must be a non-negative integer, got %s", fname,
                        luaL_tolstring(L, -1, NULL));
    correction = (double)lua_tointeger(L, -1); /* divides by n - correction, as torch.var */
  }
  if (opts) lua_pop(L, 1);
  pt_status st = list ? fnd(lpt_ctx(L), t, ndims, dims, correction, keepdim, &r)
                      : fn(lpt_ctx(L), t, dim, correction, keepdim, &r);
  if (st) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

static int t_var(lua_State *L) { return var_std(L, "var", pt_var, pt_var_dims); }
static int t_std(lua_State *L) { return var_std(L, "std", pt_std, pt_std_dims); }

/* Stack index of norm's setting k (2 p, 3 dim, 4 keepdim): the argument there when it comes
 * before the options table opts (0: none), else the option's value, pushed (nil when absent). */
static int norm_setting(lua_State *L, int k, int opts, const char *key) {
  int i = lpt_arg_or_opt(L, k, opts, key, "norm");
  if (i) return i;
  lua_pushnil(L); /* not given: a nil the caller reads as the default */
  return lua_gettop(L);
}

/* t:norm([p=2][, dim | {dims}][, keepdim]); p may be a number, math.huge, -math.huge, "fro" or
 * "nuc" (torch's nuclear_norm: a 2-D t, or dim a pair of dims).
 * The settings may end in an options table {p=, dim=, keepdim=} (torch's keywords): a table
 * that is not a list of dims. */
static int t_norm(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r;
  lpt_check_max_args(L, 4, "norm");
  int top = lua_gettop(L), opts = 0;
  if (top >= 2 && lua_istable(L, top) && !is_dim_list(L, top)) {
    static const char *const names[] = {"p", "dim", "keepdim", NULL};
    lpt_check_options(L, top, "norm", names);
    opts = top;
  }
  lua_settop(L, opts ? opts : 4); /* positions 2..4 exist (nil when not given) */
  int pi = norm_setting(L, 2, opts, "p"), di = norm_setting(L, 3, opts, "dim"),
      ki = norm_setting(L, 4, opts, "keepdim");
  double p = 2;
  bool nuc = false;
  if (lua_type(L, pi) == LUA_TSTRING) {
    nuc = strcmp(lua_tostring(L, pi), "nuc") == 0;
    if (!nuc && strcmp(lua_tostring(L, pi), "fro") != 0)
      return lpt_errorf(L, "norm: unknown norm '%s' (expected a number, \"fro\" or \"nuc\")", lua_tostring(L, pi));
  } else if (!lua_isnoneornil(L, pi)) {
    if (lua_type(L, pi) != LUA_TNUMBER)
      return lpt_errorf(L, "norm: p must be a number, \"fro\" or \"nuc\", got %s", luaL_typename(L, pi));
    p = lua_tonumber(L, pi);
  }
  bool keepdim = check_keepdim(L, ki, "norm", true);
  pt_status st;
  if (nuc) { /* the sum of the singular values over the two dims */
    int dims[PT_MAX_DIMS] = {0, 1};
    if (lua_isnoneornil(L, di)) {
      if (t->ndim != 2)
        return lpt_errorf(L, "norm: the nuclear norm without dim needs a tensor with 2 dimensions, got %d", t->ndim);
    } else if (!is_dim_list(L, di) || lua_rawlen(L, di) != 2) {
      return lpt_errorf(L, "norm: the nuclear norm needs dim = a list of 2 dims");
    } else {
      check_dim_list(L, di, t, "norm", dims);
    }
    st = pt_linalg_matrix_norm(lpt_ctx(L), t, PT_NORM_NUC, 0, dims[0], dims[1], keepdim, &r);
  } else if (is_dim_list(L, di)) {
    int dims[PT_MAX_DIMS];
    int n = check_dim_list(L, di, t, "norm", dims);
    st = pt_norm_dims(lpt_ctx(L), t, p, n, dims, keepdim, &r);
  } else {
    st = pt_norm(lpt_ctx(L), t, p, opt_dim(L, di, t, "norm"), keepdim, &r);
  }
  if (st) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

static int softmax(lua_State *L, const char *fname,
                   pt_status (*fn)(pt_ctx *, pt_tensor *, int, pt_tensor **)) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r;
  lpt_check_max_args(L, 2, fname);
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
    {"logsumexp", t_logsumexp}, {"nansum", t_nansum}, {"nanmean", t_nanmean},
    {"count_nonzero", t_count_nonzero}, {NULL, NULL},
};

#define DIMS "  dim is 1-based (negative from the end); without it every element is reduced to a 0-d tensor.\n  keepdim keeps the reduced dimension with size 1."
#define DTYPE "  {dtype=\"float64\"} (torch's dtype=, in the options, also after a boolean keepdim) converts t first\n  and is the result's dtype (an int32 sum with dtype=\"int32\" stays int32)."
#define DIMLIST "  dim may be a list of dims, e.g. {1, 3}: reduced together ({} = every dim, as torch's dim=());\n  a dim may appear once."

static const char *const method_docs[] = {
    "sum", "t:sum([dim | {dims}][, keepdim][, {keepdim=, dtype=}]) -> Tensor, the sum (integer tensors give int64).\n"
           "  Also pt.sum(t, ...).\n" DIMS "\n" DIMLIST "\n" DTYPE,
    "mean", "t:mean([dim | {dims}][, keepdim][, {keepdim=, dtype=}]) -> Tensor, the mean (floating point tensors,\n"
            "  or a floating point dtype=). Also pt.mean(t, ...).\n" DIMS "\n" DIMLIST "\n" DTYPE,
    "prod", "t:prod([dim][, keepdim][, {keepdim=, dtype=}]) -> Tensor, the product (integer tensors give int64).\n"
            "  Also pt.prod(t, ...).\n" DIMS "\n" DTYPE,
    "max", "t:max() -> 0-d Tensor, the largest element (NaN if any; t:max(nil, true) keeps the dims).\n"
           "t:max(dim[, keepdim]) (or {dim=, keepdim=}) -> values, indices (1-based int64) along dim.\n"
           "t:max(u) -> the element-wise maximum of t and the tensor u (pt.maximum), as torch.max(t, u).\n"
           "  The gradient goes to the selected element. Also pt.max(t, ...).",
    "min", "t:min() -> 0-d Tensor, the smallest element (NaN if any).\n"
           "t:min(dim[, keepdim]) (or {dim=, keepdim=}) -> values, indices (1-based int64) along dim.\n"
           "t:min(u) -> the element-wise minimum of t and the tensor u (pt.minimum). Also pt.min(t, ...).",
    "argmax", "t:argmax([dim][, keepdim]) (or {dim=, keepdim=}) -> int64 Tensor of 1-based indices of the maxima\n"
              "  (without dim: the flat index). The first one wins on ties. Also pt.argmax(t, ...).",
    "argmin", "t:argmin([dim][, keepdim]) (or {dim=, keepdim=}) -> int64 Tensor of 1-based indices of the minima\n"
              "  (without dim: the flat index). The first one wins on ties. Also pt.argmin(t, ...).",
    "var", "t:var([dim | {dims}][, keepdim][, {unbiased=true, correction=1, keepdim=}]) -> Tensor, the variance\n"
           "  (divides by n-1, or by n-c with correction=c (unbiased=false: c = 0); n counts every reduced element;\n"
           "  as torch, a divisor n-c <= 0 counts as 0: inf, or nan for a lane of equal values).\n"
           "  Also pt.var(t, ...).\n" DIMS "\n" DIMLIST,
    "std", "t:std([dim | {dims}][, keepdim][, {unbiased=true, correction=1, keepdim=}]) -> Tensor, the standard\n"
           "  deviation (divides by n-1, or by n with unbiased=false / correction=0).\n  Also pt.std(t, ...).\n" DIMS
           "\n" DIMLIST,
    "norm", "t:norm([p=2][, dim | {dims}][, keepdim]) -> Tensor, the p-norm: p > 0, math.huge (max |x|),\n"
            "  -math.huge (min |x|), 0 (count of non-zeros) or \"fro\" (= 2). Over a list of dims it is the\n"
            "  vector norm of all their elements together. \"nuc\": the nuclear norm (sum of singular values)\n"
            "  of a 2-D t, or over dim = {d1, d2}. Also pt.norm(t, ...).\n" DIMS "\n" DIMLIST,
    "softmax", "t:softmax(dim) -> Tensor, exp(t) / sum(exp(t)) along dim (numerically stable).\n  Also pt.softmax(t, dim).",
    "log_softmax", "t:log_softmax(dim) -> Tensor, t - logsumexp(t, dim) (numerically stable).\n  Also pt.log_softmax(t, dim).",
    "logsumexp", "t:logsumexp([dim | {dims}][, keepdim | {keepdim=}]) -> Tensor, log(sum(exp(t))) computed stably.\n"
                 "  Also pt.logsumexp(t, ...).\n" DIMS "\n" DIMLIST,
    "nansum", "t:nansum([dim | {dims}][, keepdim][, {keepdim=, dtype=}]) -> Tensor, the sum with NaN counted as 0\n"
              "  (torch.nansum; integer tensors give int64). The gradient is 0 at NaN elements.\n"
              "  Also pt.nansum(t, ...).\n" DIMS "\n" DIMLIST "\n" DTYPE,
    "nanmean", "t:nanmean([dim | {dims}][, keepdim][, {keepdim=, dtype=}]) -> Tensor, the mean of the non-NaN\n"
               "  elements (nan where there is none; floating point tensors only). The gradient is 0 at NaN elements.\n"
               "  Also pt.nanmean(t, ...).\n" DIMS "\n" DIMLIST "\n" DTYPE,
    "count_nonzero", "t:count_nonzero([dim | {dims}]) -> int64 Tensor, the number of non-zero elements (NaN\n"
                     "  counts), over everything or along 1-based dim(s); no keepdim (as torch).\n"
                     "  Also pt.count_nonzero(t, ...).",
    NULL, NULL,
};

void lpt_open_reduce(lua_State *L) {
  lpt_add_methods(L, functions);
  lpt_add_functions(L, functions);
  /* methods and functions are the same C functions, so one doc each serves both */
  lpt_add_docs(L, 1, method_docs);
}
