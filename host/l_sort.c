/* Bindings of lib/ops_sort.h (sort, topk, cumsum, cumprod, all, any, median, kthvalue, mode,
 * nonzero, unique, bincount, searchsorted) and the whole-tensor
 * comparisons equal and allclose, which answer with a Lua boolean. */
#include <math.h>
#include <string.h>

#include "../lib/ops_elementwise.h"
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

/* Whether argument idx is a dim: a number (2.0 too: lpt_check_dim takes a float with an integer
 * value, and rejects 1.5, rather than it being passed over for the last dim). */
static bool is_dim_arg(lua_State *L, int idx) { return lua_type(L, idx) == LUA_TNUMBER; }

/* The flag argument at o of sort (descending) and topk (largest): a boolean, an options table or
 * nothing; anything else is an error naming it (it was ignored). */
static void check_flag_arg(lua_State *L, int o, const char *fname, const char *flag) {
  if (!lua_isnoneornil(L, o) && !lua_isboolean(L, o) && !lua_istable(L, o))
    lpt_errorf(L, "%s: %s must be a boolean or an options table, got %s", fname, flag, luaL_typename(L, o));
}

/* The dim of sort/topk: argument idx when it is a number, else opts.dim, else the last. */
static int sort_dim(lua_State *L, int idx, int opts, const pt_tensor *t, const char *fname) {
  if (is_dim_arg(L, idx)) return lpt_check_dim(L, idx, t->ndim, fname);
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
  int o = is_dim_arg(L, 2) ? 3 : 2;
  int opts = lua_istable(L, o) ? o : 0;
  if (opts && lua_rawlen(L, opts) > 0) return lpt_errorf(L, "sort: takes one dim, not a list of dims");
  check_flag_arg(L, o, "sort", "descending");
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
  int o = is_dim_arg(L, 3) ? 4 : 3;
  int opts = lua_istable(L, o) ? o : 0;
  check_flag_arg(L, o, "topk", "largest");
  static const char *const names[] = {"dim", "largest", "sorted", NULL};
  lpt_check_options(L, opts, "topk", names);
  lpt_check_max_args(L, o, "topk");
  int dim = sort_dim(L, 3, opts, t, "topk");
  bool largest = lua_isboolean(L, o) ? lua_toboolean(L, o) : lpt_opt_bool(L, opts, "largest", true);
  pt_status st = pt_topk(lpt_ctx(L), t, (int64_t)k, dim, largest, &v, &i);
  return push_pair(L, st, v, i);
}

/* The dtype option of the table at opts (a name such as "float64"), or def; errors name fname. */
static pt_dtype dtype_opt(lua_State *L, int opts, const char *fname, pt_dtype def) {
  pt_dtype dt = def;
  if (opts && lua_getfield(L, opts, "dtype") != LUA_TNIL) {
    const char *name = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    if (!name || !pt_dtype_from_name(name, &dt))
      lpt_errorf(L, "%s: unknown dtype %s (expected float32, float64, int64, int32, uint8 or bool)", fname,
                 luaL_tolstring(L, -1, NULL));
  }
  if (opts) lua_pop(L, 1);
  return dt;
}

/* t:cumsum([dim][, {dtype=}]) (also {dim=, dtype=}): dtype converts t first, as torch's dtype=,
 * and the result has that dtype (an int32 cumsum stays int32). */
static int scan(lua_State *L, bool prod) {
  const char *fn = prod ? "cumprod" : "cumsum";
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL, *c = NULL;
  static const char *const names[] = {"dim", "dtype", NULL};
  int opts = lua_istable(L, 2) ? 2 : lua_istable(L, 3) ? 3 : 0;
  if (opts && lua_rawlen(L, opts) > 0) return lpt_errorf(L, "%s: takes one dim, not a list of dims", fn);
  lpt_check_options(L, opts, fn, names);
  lpt_check_max_args(L, opts ? opts : 2, fn);
  int didx = 2;
  if (opts && lua_getfield(L, opts, "dim") != LUA_TNIL) {
    if (opts == 3 && !lua_isnil(L, 2))
      return lpt_errorf(L, "%s: dim given twice (as argument #2 and as an option)", fn);
    didx = lua_gettop(L);
  } else if (opts == 2) {
    didx = lua_gettop(L) + 1; /* none */
  }
  if (lua_isnoneornil(L, didx) && t->ndim > 1)
    return lpt_errorf(L, "%s: a dimension is needed for a %d-D tensor", fn, t->ndim);
  int dim = lua_isnoneornil(L, didx) ? 0 : lpt_check_dim(L, didx, t->ndim, fn);
  pt_dtype dt = dtype_opt(L, opts, fn, PT_DTYPE_COUNT); /* PT_DTYPE_COUNT: none given */
  pt_ctx *ctx = lpt_ctx(L);
  if (pt_to_dtype(ctx, t, dt == PT_DTYPE_COUNT ? t->dtype : dt, &c)) return lpt_error(L);
  pt_status st = prod ? pt_cumprod(ctx, c, dim, &r) : pt_cumsum(ctx, c, dim, &r);
  pt_tensor_release(c);
  if (!st && dt != PT_DTYPE_COUNT && r->dtype != dt) { /* an integer dtype asked for: cumsum gives int64 */
    c = r;
    st = pt_to_dtype(ctx, c, dt, &r);
    pt_tensor_release(c);
  }
  return lpt_push_result(L, st, r);
}
static int t_cumsum(lua_State *L) { return scan(L, false); }
static int t_cumprod(lua_State *L) { return scan(L, true); }


static int bool_reduce(lua_State *L, bool is_all) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  const char *fname = is_all ? "all" : "any";
  lpt_dim_opts_to_args(L, fname);
  int dim = lua_isnoneornil(L, 2) ? -1 : lpt_check_dim(L, 2, t->ndim, fname);
  static const char *const names[] = {"keepdim", NULL};
  lpt_check_max_args(L, 3, fname);
  lpt_check_options(L, lua_istable(L, 3) ? 3 : 0, fname, names);
  if (!lua_istable(L, 3) && !lua_isnoneornil(L, 3) && !lua_isboolean(L, 3))
    return lpt_errorf(L, "%s: keepdim must be a boolean, got %s", fname, luaL_typename(L, 3));
  bool keepdim = lua_istable(L, 3) ? lpt_opt_bool(L, 3, "keepdim", false) : lua_toboolean(L, 3);
  pt_status st = is_all ? pt_all(lpt_ctx(L), t, dim, keepdim, &r) : pt_any(lpt_ctx(L), t, dim, keepdim, &r);
  return lpt_push_result(L, st, r);
}
static int t_all(lua_State *L) { return bool_reduce(L, true); }
static int t_any(lua_State *L) { return bool_reduce(L, false); }

static bool same_shape(const pt_tensor *a, const pt_tensor *b) {
  return a->ndim == b->ndim && memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof(int64_t)) == 0;
}

/* The element of t at offset off (in elements, from t's first element). */
static const void *elem_at(const pt_tensor *t, int64_t off) {
  return (const char *)pt_tensor_data(t) + off * (int64_t)pt_dtype_size(t->dtype);
}

/* |x - y| of two elements ordered by pt_element_cmp, neither NaN: for two integers the exact
 * difference rounded once (2^53 and 2^53+1 are 1 apart, not 0) */
static double abs_diff(const void *pa, pt_dtype da, const void *pb, pt_dtype db) {
  double x = pt_read_as_double(pa, da), y = pt_read_as_double(pb, db);
  if (pt_dtype_is_floating(da) || pt_dtype_is_floating(db)) return fabs(x - y);
  int64_t i = da == PT_INT64 ? *(const int64_t *)pa : (int64_t)x, j = db == PT_INT64 ? *(const int64_t *)pb : (int64_t)y;
  if ((i < 0) == (j < 0)) return fabs((double)(i - j)); /* same signs: no overflow */
  return fabs(x - y);
}

/* t:equal(u) -> true when shapes and every value are equal (dtypes may differ; compared exactly,
 * int64 beyond 2^53 included) */
static int t_equal(lua_State *L) {
  pt_tensor *a = lpt_check_tensor(L, 1), *b = lpt_check_tensor(L, 2);
  bool eq = same_shape(a, b);
  if (eq) {
    pt_iter it;
    pt_iter_init(&it, a->ndim, a->shape, 2, (const int64_t *const[]){a->stride, b->stride});
    while (eq && pt_iter_next(&it))
      eq = pt_element_cmp(elem_at(a, it.offset[0]), a->dtype, elem_at(b, it.offset[1]), b->dtype) == 0;
  }
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
    rtol = lpt_opt_number(L, 3, "rtol", rtol, "allclose");
    atol = lpt_opt_number(L, 3, "atol", atol, "allclose");
    equal_nan = lpt_opt_bool(L, 3, "equal_nan", false);
  }
  /* the two broadcast against each other, as PyTorch's */
  pt_ctx *ctx = lpt_ctx(L);
  int nd;
  int64_t shape[PT_MAX_DIMS];
  pt_tensor *ea = NULL, *eb = NULL;
  if (pt_broadcast_shapes(ctx, "allclose", a->ndim, a->shape, b->ndim, b->shape, &nd, shape) ||
      pt_expand_raw(ctx, a, nd, shape, &ea))
    return lpt_error(L);
  if (pt_expand_raw(ctx, b, nd, shape, &eb)) {
    pt_tensor_release(ea);
    return lpt_error(L);
  }
  bool ok = true;
  pt_iter it;
  pt_iter_init(&it, nd, shape, 2, (const int64_t *const[]){ea->stride, eb->stride});
  while (ok && pt_iter_next(&it)) {
    const void *pa = elem_at(ea, it.offset[0]), *pb = elem_at(eb, it.offset[1]);
    int c = pt_element_cmp(pa, ea->dtype, pb, eb->dtype);
    if (c == 2) /* a NaN */
      ok = equal_nan && isnan(pt_read_as_double(pa, ea->dtype)) && isnan(pt_read_as_double(pb, eb->dtype));
    else { /* equal, or finitely within the tolerance: 1 and inf were close (inf <= rtol * inf), as
            * were inf and -inf; torch.allclose says no, as pt.isclose */
      double d = abs_diff(pa, ea->dtype, pb, eb->dtype);
      ok = c == 0 || (isfinite(d) && d <= atol + rtol * fabs(pt_read_as_double(pb, eb->dtype)));
    }
  }
  pt_tensor_release(ea);
  pt_tensor_release(eb);
  lua_pushboolean(L, ok);
  return 1;
}

/* keepdim at idx: a boolean, or {keepdim=} in the options table opts */
static bool keepdim_at(lua_State *L, int idx, int opts) {
  if (lua_isboolean(L, idx)) return lua_toboolean(L, idx);
  return lpt_opt_bool(L, opts, "keepdim", false);
}

/* t:median() -> 0-d; t:median(dim[, keepdim | {keepdim=}]) -> values, indices */
static int t_median(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *v = NULL, *i = NULL;
  lpt_dim_opts_to_args(L, "median");
  if (lua_isnoneornil(L, 2)) {
    lpt_check_max_args(L, 1, "median");
    pt_status st = pt_median(lpt_ctx(L), t, &v);
    return lpt_push_result(L, st, v);
  }
  int opts = lua_istable(L, 3) ? 3 : 0;
  static const char *const names[] = {"keepdim", NULL};
  lpt_check_options(L, opts, "median", names);
  lpt_check_max_args(L, 3, "median");
  if (!opts && !lua_isnoneornil(L, 3) && !lua_isboolean(L, 3)) /* it was ignored */
    return lpt_errorf(L, "median: keepdim must be a boolean, got %s", luaL_typename(L, 3));
  int dim = lpt_check_dim(L, 2, t->ndim, "median");
  pt_status st = pt_median_dim(lpt_ctx(L), t, dim, keepdim_at(L, 3, opts), &v, &i);
  return push_pair(L, st, v, i);
}

/* The [dim=-1][, keepdim | {keepdim=, dim=}] arguments of kthvalue and mode, from idx on. */
static void dim_keepdim_args(lua_State *L, int idx, const pt_tensor *t, const char *fname, int *dim, bool *keepdim) {
  int o = is_dim_arg(L, idx) ? idx + 1 : idx;
  int opts = lua_istable(L, o) ? o : 0;
  static const char *const names[] = {"dim", "keepdim", NULL};
  lpt_check_options(L, opts, fname, names);
  lpt_check_max_args(L, o, fname);
  if (o == idx && !opts && !lua_isnoneornil(L, idx) && !lua_isboolean(L, idx))
    luaL_checkinteger(L, idx); /* a dim that is no integer */
  if (!opts && !lua_isnoneornil(L, o)) luaL_checktype(L, o, LUA_TBOOLEAN); /* keepdim */
  *dim = sort_dim(L, idx, opts, t, fname);
  *keepdim = keepdim_at(L, o, opts);
}

/* t:kthvalue(k[, dim=-1][, keepdim | {keepdim=, dim=}]) -> values, indices */
static int t_kthvalue(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *v = NULL, *i = NULL;
  lua_Integer k = luaL_checkinteger(L, 2);
  int dim;
  bool keepdim;
  dim_keepdim_args(L, 3, t, "kthvalue", &dim, &keepdim);
  pt_status st = pt_kthvalue(lpt_ctx(L), t, (int64_t)k, dim, keepdim, &v, &i);
  return push_pair(L, st, v, i);
}

/* t:mode([dim=-1][, keepdim | {keepdim=, dim=}]) -> values, indices */
static int t_mode(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *v = NULL, *i = NULL;
  int dim;
  bool keepdim;
  dim_keepdim_args(L, 2, t, "mode", &dim, &keepdim);
  pt_status st = pt_mode(lpt_ctx(L), t, dim, keepdim, &v, &i);
  return push_pair(L, st, v, i);
}

/* t:nonzero([{as_tuple=false}]) -> int64 {n, ndim} of 1-based indices, or (as_tuple) one 1-D
 * int64 tensor per dim */
static int t_nonzero(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  static const char *const names[] = {"as_tuple", NULL};
  lpt_check_max_args(L, 2, "nonzero");
  if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
  lpt_check_options(L, lua_istable(L, 2) ? 2 : 0, "nonzero", names);
  bool as_tuple = lpt_opt_bool(L, lua_istable(L, 2) ? 2 : 0, "as_tuple", false);
  pt_ctx *ctx = lpt_ctx(L);
  if (pt_nonzero(ctx, t, &r)) return lpt_error(L);
  lpt_one_based(ctx, r, false, &r); /* in place: cannot fail */
  if (!as_tuple) {
    lpt_push_tensor(L, r);
    return 1;
  }
  int64_t n = r->shape[0];
  int cols = t->ndim ? t->ndim : 1; /* a 0-d tensor: one tensor of n ones, as torch's (zeros) */
  luaL_checkstack(L, cols, "nonzero");
  for (int d = 0; d < cols; d++) {
    pt_tensor *c = NULL, *col = NULL;
    pt_status st;
    if (t->ndim) {
      if (!(st = pt_select_raw(ctx, r, 1, d, &c))) st = pt_tensor_clone_raw(ctx, c, &col);
    } else if (!(st = pt_tensor_empty(ctx, PT_INT64, 1, &n, &col))) {
      st = pt_tensor_fill(ctx, col, 1);
    }
    pt_tensor_release(c);
    if (st) {
      pt_tensor_release(col);
      pt_tensor_release(r);
      return lpt_error(L);
    }
    lpt_push_tensor(L, col);
  }
  pt_tensor_release(r);
  return cols;
}

/* t:unique([{sorted=true, return_inverse=false, return_counts=false, dim=nil}])
 *   -> values[, inverse (1-based)][, counts]; with dim, the distinct slices along dim */
static int t_unique(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *v = NULL, *inv = NULL, *cn = NULL;
  static const char *const names[] = {"sorted", "return_inverse", "return_counts", "dim", NULL};
  lpt_check_max_args(L, 2, "unique");
  int opts = 0;
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    opts = 2;
  }
  lpt_check_options(L, opts, "unique", names);
  int dim = -1; /* none: the flattened form */
  if (opts) {
    if (lua_getfield(L, opts, "dim") != LUA_TNIL) dim = lpt_check_dim(L, -1, t->ndim, "unique");
    lua_pop(L, 1);
  }
  bool want_inv = lpt_opt_bool(L, opts, "return_inverse", false);
  bool want_cnt = lpt_opt_bool(L, opts, "return_counts", false);
  (void)lpt_opt_bool(L, opts, "sorted", true); /* the values come sorted either way */
  pt_ctx *ctx = lpt_ctx(L);
  pt_status st = dim < 0 ? pt_unique(ctx, t, &v, want_inv ? &inv : NULL, want_cnt ? &cn : NULL)
                         : pt_unique_dim(ctx, t, dim, &v, want_inv ? &inv : NULL, want_cnt ? &cn : NULL);
  if (st) return lpt_error(L);
  lpt_push_tensor(L, v);
  if (want_inv) {
    lpt_one_based(ctx, inv, false, &inv); /* in place: cannot fail */
    lpt_push_tensor(L, inv);
  }
  if (want_cnt) lpt_push_tensor(L, cn);
  return 1 + want_inv + want_cnt;
}

/* t:bincount([weights][, {minlength=0}]) */
static int t_bincount(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *w = NULL, *r = NULL;
  int o = lua_istable(L, 2) ? 2 : 3; /* a tensor is a userdata, never a table */
  if (o == 3 && !lua_isnoneornil(L, 2)) w = lpt_check_tensor(L, 2);
  int opts = lua_istable(L, o) ? o : 0;
  if (opts && lua_rawlen(L, opts) > 0) /* t:bincount({1.0, 2.0}): read as options ("unknown option '1'") */
    return lpt_errorf(L, "bincount: weights must be a tensor (pt.tensor(list) makes one), got a table");
  static const char *const names[] = {"minlength", NULL};
  lpt_check_options(L, opts, "bincount", names);
  lpt_check_max_args(L, o, "bincount");
  lua_Integer minlength = 0;
  if (opts && lua_getfield(L, opts, "minlength") != LUA_TNIL) {
    if (!lua_isinteger(L, -1))
      return lpt_errorf(L, "bincount: minlength must be an integer, got %s", luaL_tolstring(L, -1, NULL));
    minlength = lua_tointeger(L, -1);
  }
  pt_status st = pt_bincount(lpt_ctx(L), t, w, (int64_t)minlength, &r);
  return lpt_push_result(L, st, r);
}

/* seq:searchsorted(values[, {right=false, side="left"}]) -> 1-based insertion positions */
static int t_searchsorted(lua_State *L) {
  pt_tensor *seq = lpt_check_tensor(L, 1), *r = NULL;
  if (lua_isnoneornil(L, 2)) return lpt_errorf(L, "searchsorted: values (a tensor or a number) are required");
  if (!lpt_test_tensor(L, 2) && !lua_isnumber(L, 2)) lpt_check_tensor(L, 2); /* the usual type error */
  static const char *const names[] = {"right", "side", NULL};
  lpt_check_max_args(L, 3, "searchsorted");
  int opts = lua_istable(L, 3) ? 3 : 0;
  if (!opts && !lua_isnoneornil(L, 3)) luaL_checktype(L, 3, LUA_TTABLE);
  lpt_check_options(L, opts, "searchsorted", names);
  bool right = lpt_opt_bool(L, opts, "right", false);
  if (opts && lua_getfield(L, opts, "side") != LUA_TNIL) {
    const char *side = lua_tostring(L, -1);
    bool is_right = side && strcmp(side, "right") == 0;
    if (!side || (!is_right && strcmp(side, "left") != 0))
      return lpt_errorf(L, "searchsorted: side must be \"left\" or \"right\", got %s", luaL_tolstring(L, -1, NULL));
    if (lua_getfield(L, opts, "right") != LUA_TNIL && lua_toboolean(L, -1) != is_right)
      return lpt_errorf(L, "searchsorted: side=\"%s\" contradicts right=%s", side, right ? "true" : "false");
    right = is_right;
  }
  /* a number keeps its value (2.5 is not truncated for an integer sequence; an integer is written
   * as an int64, not through a double, so 2^53+1 stays itself): comparisons are exact across dtypes */
  pt_ctx *ctx = lpt_ctx(L);
  pt_tensor *v;
  if (lua_isinteger(L, 2)) {
    if (pt_tensor_empty(ctx, PT_INT64, 0, NULL, &v)) return lpt_error(L);
    *(int64_t *)pt_tensor_data(v) = (int64_t)lua_tointeger(L, 2);
  } else {
    v = lpt_to_tensor(L, 2, PT_FLOAT64);
  }
  pt_status st = pt_searchsorted(ctx, seq, v, right, &r);
  pt_tensor_release(v);
  if (st) return lpt_error(L);
  lpt_one_based(ctx, r, false, &r); /* in place: cannot fail */
  lpt_push_tensor(L, r);
  return 1;
}

/* The dim of cummax, cummin and logcumsumexp: argument 2 or {dim=}; may be left out for tensors
 * of up to 1 dimension (as cumsum's). */
static int scan_dim(lua_State *L, const pt_tensor *t, const char *fn) {
  static const char *const names[] = {"dim", NULL};
  int opts = lua_istable(L, 2) ? 2 : 0;
  lpt_check_options(L, opts, fn, names);
  lpt_check_max_args(L, 2, fn);
  int idx = 2;
  if (opts) {
    lua_getfield(L, opts, "dim");
    idx = lua_gettop(L);
  }
  if (lua_isnoneornil(L, idx)) {
    if (t->ndim > 1) lpt_errorf(L, "%s: a dimension is needed for a %d-D tensor", fn, t->ndim);
    return 0;
  }
  return lpt_check_dim(L, idx, t->ndim, fn);
}

static int cum_extreme(lua_State *L, bool is_max) {
  const char *fn = is_max ? "cummax" : "cummin";
  pt_tensor *t = lpt_check_tensor(L, 1), *v = NULL, *i = NULL;
  int dim = scan_dim(L, t, fn);
  pt_status st = is_max ? pt_cummax(lpt_ctx(L), t, dim, &v, &i) : pt_cummin(lpt_ctx(L), t, dim, &v, &i);
  return push_pair(L, st, v, i);
}
static int t_cummax(lua_State *L) { return cum_extreme(L, true); }
static int t_cummin(lua_State *L) { return cum_extreme(L, false); }

static int t_logcumsumexp(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int dim = scan_dim(L, t, "logcumsumexp");
  pt_status st = pt_logcumsumexp(lpt_ctx(L), t, dim, &r);
  return lpt_push_result(L, st, r);
}

/* t:histc([bins=100[, min=0[, max=0]]][, {bins=, min=, max=}]) */
static int t_histc(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  static const char *const names[] = {"bins", "min", "max", NULL};
  int o = 2;
  while (o <= 4 && lua_type(L, o) == LUA_TNUMBER) o++;
  int opts = lua_istable(L, o) ? o : 0;
  if (!opts && !lua_isnoneornil(L, o)) {
    if (o > 4) return lpt_errorf(L, "histc: unexpected argument #%d (%s)", o, luaL_typename(L, o));
    return lpt_errorf(L, "histc: %s must be a number, got %s", names[o - 2], luaL_typename(L, o));
  }
  lpt_check_options(L, opts, "histc", names);
  lpt_check_max_args(L, o, "histc");
  lua_Integer bins = 100;
  double lim[2] = {0, 0};
  for (int k = 0; k < 3; k++) {
    int idx = 2 + k;
    if (opts && lua_getfield(L, opts, names[k]) != LUA_TNIL) {
      if (idx < o) return lpt_errorf(L, "histc: %s given twice (as argument #%d and as an option)", names[k], idx);
      idx = lua_gettop(L);
    } else if (idx >= o) {
      continue;
    }
    if (lua_type(L, idx) != LUA_TNUMBER)
      return lpt_errorf(L, "histc: %s must be a number, got %s", names[k], luaL_typename(L, idx));
    if (k == 0) {
      if (!lua_isinteger(L, idx))
        return lpt_errorf(L, "histc: bins must be an integer, got %s", luaL_tolstring(L, idx, NULL));
      bins = lua_tointeger(L, idx);
    } else {
      lim[k - 1] = lua_tonumber(L, idx);
    }
  }
  pt_status st = pt_histc(lpt_ctx(L), t, (int64_t)bins, lim[0], lim[1], &r);
  return lpt_push_result(L, st, r);
}

static const luaL_Reg methods[] = {
    {"sort", t_sort},   {"topk", t_topk}, {"cumsum", t_cumsum}, {"cumprod", t_cumprod},
    {"all", t_all},     {"any", t_any},   {"equal", t_equal},   {"allclose", t_allclose},
    {"median", t_median}, {"kthvalue", t_kthvalue}, {"mode", t_mode}, {"nonzero", t_nonzero},
    {"unique", t_unique}, {"bincount", t_bincount}, {"searchsorted", t_searchsorted},
    {"cummax", t_cummax}, {"cummin", t_cummin}, {"logcumsumexp", t_logcumsumexp}, {"histc", t_histc},
    {NULL, NULL},
};

static const char *const docs[] = {
    "sort", "t:sort([dim=-1][, descending | {descending=false}]) -> values, indices (1-based int64).\n  Stable: equal values keep their order; NaN sorts as the largest. Exact for every dtype (int64 beyond\n  2^53 too).",
    "topk", "t:topk(k[, dim=-1][, {largest=true}]) -> the k largest (or smallest) values along dim, sorted, and their 1-based indices.",
    "cumsum", "t:cumsum([dim][, {dtype=}]) -> running sums along dim (dim may be omitted for 1-D tensors; integer\n"
              "  and bool tensors give int64). dtype converts t first and is the result's dtype, as torch's dtype=.",
    "cumprod", "t:cumprod([dim][, {dtype=}]) -> running products along dim (as cumsum: integers give int64, dtype=).",
    "all", "t:all([dim][, keepdim]) (or {dim=, keepdim=}) -> bool tensor: every element nonzero (over everything,\n"
           "  or along dim).",
    "any", "t:any([dim][, keepdim]) (or {dim=, keepdim=}) -> bool tensor: some element nonzero.",
    "equal", "t:equal(u) -> true when u has t's shape and the same values (compared exactly, also across dtypes).",
    "allclose", "t:allclose(u[, {rtol=1e-5, atol=1e-8, equal_nan=false}]) -> true when |t-u| <= atol + rtol*|u| everywhere.",
    "median", "t:median() -> 0-d Tensor, the lower median of all elements (the ((n+1)//2)-th smallest, as torch;\n"
              "  NaN if any element is NaN, NaN for an empty tensor).\n"
              "t:median(dim[, keepdim | {keepdim=}]) (or {dim=, keepdim=}) -> values, indices (1-based int64) along\n"
              "  dim; a lane with a NaN gives NaN and the index of its first NaN. On ties the index is that of the\n"
              "  median in a stable sort (torch's CPU pick among equal values may differ). The gradient goes to the\n"
              "  selected element.\n"
              "  Also pt.median(t, ...).",
    "kthvalue", "t:kthvalue(k[, dim=-1][, keepdim | {keepdim=, dim=}]) -> values, indices (1-based int64): the k-th\n"
                "  smallest along dim (k counts from 1, as torch's), NaN sorting largest. On ties the index is that of\n"
                "  the k-th in a stable sort. The gradient goes to the selected element. Also pt.kthvalue(t, k, ...).",
    "mode", "t:mode([dim=-1][, keepdim | {keepdim=, dim=}]) -> values, indices (1-based int64): the most frequent\n"
            "  value along dim, the smallest one on ties, with torch 1.13's CPU index: that of the last of its\n"
            "  occurrences after torch's (unstable) sort, the last occurrence for lanes of up to 16 elements, one of\n"
            "  them beyond. A NaN equals nothing and is below and above nothing, as in torch's sort: each NaN counts\n"
            "  once and can split a run of equal values ({1, NaN, 1} gives 1 at index 1). The gradient goes to the\n"
            "  selected element. Also pt.mode(t, ...).",
    "nonzero", "t:nonzero() -> int64 Tensor {n, ndim}: the 1-based indices of the n non-zero elements (NaN counts), in\n"
               "  row-major order (a 0-d tensor gives {1, 0} or {0, 0}).\n"
               "t:nonzero({as_tuple=true}) -> one 1-D int64 tensor of 1-based indices per dim, as several return\n"
               "  values (local rows, cols = m:nonzero({as_tuple=true})). Also pt.nonzero(t, ...).",
    "unique", "t:unique([{sorted=true, return_inverse=false, return_counts=false, dim=}]) -> values[, inverse][, counts]:\n"
              "  the distinct values of t flattened, ascending (also with sorted=false, which torch lets return any\n"
              "  order); NaN last, every NaN a value of its own. inverse: int64 of t's shape, the 1-based position of\n"
              "  each element in values (values[inverse] rebuilds t); counts: int64, how often each value occurs.\n"
              "  With dim: the distinct slices along dim (as torch.unique(dim=)), sorted lexicographically, t's shape\n"
              "  with dim's size their number; inverse: int64 {t:size(dim)}, the 1-based slice each one became; a slice\n"
              "  holding a NaN equals no other. Values compare exactly (int64 beyond 2^53 too). Also pt.unique(t, ...).",
    "bincount", "t:bincount([weights][, {minlength=0}]) -> counts of the values of a 1-D tensor of non-negative\n"
                "  integers. Values keep torch's meaning (they are counted, not indices): value v is counted at\n"
                "  position v+1 of the result (value 0 at position 1), whose length is max(t:max()+1, minlength).\n"
                "  int64 counts; with weights (one per element) the sums of the weights, float32 for float32\n"
                "  weights, else float64. Also pt.bincount(t, ...).",
    "searchsorted", "seq:searchsorted(values[, {right=false}]) -> int64 Tensor of values' shape: for each v, the\n"
                    "  1-based position p (1..n+1) where inserting v keeps seq (ascending, n elements) sorted,\n"
                    "  i.e. table.insert(seq, p, v) order: seq[p-1] < v <= seq[p] (right=true or side=\"right\":\n"
                    "  seq[p-1] <= v < seq[p]); torch's 0-based answer + 1. NaN sorts largest. seq is 1-D, or has the\n"
                    "  leading dims of values (one sequence per row); values may be a number (0-d result).\n"
                    "  Comparisons are exact, also between integers and floats (torch promotes both to one dtype,\n"
                    "  where an int64 beyond 2^53 rounds). Also pt.searchsorted(seq, values, ...).",
    "cummax", "t:cummax([dim | {dim=}]) -> values, indices (1-based int64): the running maximum along dim and\n"
              "  where it was taken, as torch.cummax: an element takes over when it is >= the running maximum, so\n"
              "  on ties the later index wins; a NaN takes over and stays (the index of the latest NaN). Every\n"
              "  dtype; dim may be left out for 0-d and 1-D tensors. The gradient of each value goes to the element\n"
              "  at its index. Also pt.cummax(t, dim).",
    "cummin", "t:cummin([dim | {dim=}]) -> values, indices (1-based int64): the running minimum along dim and\n"
              "  where it was taken, as torch.cummin: an element takes over when it is <= the running minimum (ties:\n"
              "  the later index); a NaN takes over and stays. Every dtype; dim may be left out for 0-d and 1-D\n"
              "  tensors. The gradient of each value goes to the element at its index. Also pt.cummin(t, dim).",
    "logcumsumexp", "t:logcumsumexp([dim | {dim=}]) -> log(cumsum(exp(t))) along dim, computed stably in double (a\n"
                    "  running log-add-exp, as torch.logcumsumexp: {-1000, 0} gives {-1000, 0}); NaN propagates.\n"
                    "  float32/float64 only; dim may be left out for 0-d and 1-D tensors. Gradients flow back.\n"
                    "  Also pt.logcumsumexp(t, dim).",
    "histc", "t:histc([bins=100[, min=0[, max=0]]]) (or {bins=, min=, max=}) -> histogram of all elements of a\n"
             "  float tensor as torch.histc: t's dtype, shape {bins}, equal bins from min to max. min == max (the\n"
             "  default) takes the data's smallest and largest elements (and widens an empty range by 1 each\n"
             "  side). Elements outside [min, max] are not counted; max falls in the last bin. A NaN counts in\n"
             "  the first bin, as in torch 1.13 (later versions skip it); with the data's range, a NaN is an error.\n"
             "  No gradient. Also pt.histc(t, ...).",
    NULL, NULL,
};

void lpt_open_sort(lua_State *L) {
  lpt_add_methods(L, methods);
  /* module forms take the tensor first: pt.sort(t, ...) */
  lpt_add_functions(L, methods);
  lpt_add_docs(L, 1, docs);
}
