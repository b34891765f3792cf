/* Views, indexing/slicing, joining/splitting and the gather/scatter family from Lua.
 * Dims, indices and index tensors are 1-based (negative counts from the end), as in Torch7. */
#include <math.h>
#include <string.h>

#include "../lib/ops_index.h"
#include "../lib/ops_shape.h"
#include "../lib/ops_elementwise.h"
#include "lpt.h"

/* --- helpers --- */


/* 1-based position (negative from the end) -> 0-based; out-of-range values stay out of range so
 * that lib/ reports them (with the original value when it was negative). */
static int64_t norm_index(lua_Integer i, int64_t size) {
  if (i < 0) return i + size;
  return i - 1;
}

/* An integer argument: a Lua integer, or a one-element integer tensor (PyTorch takes
 * x.narrow(0, torch.tensor(1), 2) and x.select(0, i) with a 0-d tensor i, as argmax returns) */
static lua_Integer check_integer(lua_State *L, int idx, const char *fname, const char *what) {
  int isnum;
  lua_Integer v = lua_tointegerx(L, idx, &isnum);
  if (isnum) return v;
  pt_tensor *x = lpt_test_tensor(L, idx);
  if (x && pt_tensor_numel(x) == 1 && (x->dtype == PT_INT64 || x->dtype == PT_INT32 || x->dtype == PT_UINT8)) {
    pt_number n = pt_tensor_get_flat_number(x, 0);
    return n.is_int ? (lua_Integer)n.i : (lua_Integer)n.d;
  }
  if (x) {
    char b[PT_SHAPE_STR_MAX];
    return lpt_errorf(L, "%s: %s must be an integer, got a tensor of dtype %s and shape %s", fname, what,
                      pt_dtype_name(x->dtype), pt_shape_format(x->ndim, x->shape, b, sizeof b));
  }
  return lpt_errorf(L, "%s: %s must be an integer, got %s", fname, what,
                    lua_type(L, idx) == LUA_TNUMBER ? lua_tostring(L, idx) : luaL_typename(L, idx));
}

/* The number (or boolean) at idx as Lua has it: an integer stays exact, so that it goes into an
 * int64 tensor beyond 2^53 (through a double, 2^53 + 1 became 2^53) */
static pt_number number_at(lua_State *L, int idx) {
  if (lua_isinteger(L, idx)) return pt_number_int(lua_tointeger(L, idx));
  return pt_number_float(lua_isboolean(L, idx) ? lua_toboolean(L, idx) : lua_tonumber(L, idx));
}

/* A number, a boolean or a tensor at idx: returns the tensor (borrowed) or NULL with *value set. */
static pt_tensor *value_or_tensor(lua_State *L, int idx, const char *fname, pt_number *value) {
  pt_tensor *t = lpt_test_tensor(L, idx);
  if (t) return t;
  if (lua_type(L, idx) == LUA_TNUMBER || lua_type(L, idx) == LUA_TBOOLEAN) {
    *value = number_at(L, idx);
    return NULL;
  }
  lpt_errorf(L, "%s: value must be a number or a tensor, got %s", fname, luaL_typename(L, idx));
  return NULL;
}

/* A dim for a new dimension (unsqueeze, stack): 1..ndim+1 of the result, negative from the end. */
static int check_new_dim(lua_State *L, int idx, int result_ndim, const char *fname) {
  lua_Integer d = luaL_checkinteger(L, idx);
  lua_Integer d1 = d < 0 ? d + result_ndim + 1 : d;
  if (d1 < 1 || d1 > result_ndim)
    return lpt_errorf(L, "%s: dimension %I out of range (the result has %d dimensions)", fname,
                      (LUAI_UACINT)d, result_ndim);
  return (int)d1 - 1;
}

/* The tensor entries of a key (advanced indexing), as resolve_key collects them: each on the dim
 * of the view it returns where it starts, and for each dim of that view the dim of t it is. */
typedef struct adv_key {
  int n;
  pt_index_entry e[PT_INDEX_MAX_ENTRIES];
  int orig[PT_MAX_DIMS];
} adv_key;

static pt_tensor *test_index_tensor(lua_State *L, int idx) {
  return lua_type(L, idx) == LUA_TUSERDATA ? lpt_test_tensor(L, idx) : NULL;
}

static bool is_mask(const pt_tensor *t) { return t->dtype == PT_BOOL || t->dtype == PT_UINT8; }

/* --- views --- */

/* lpt_check_shape (sizes as integers from idx on, or one table of them), then nothing after the
 * sizes: x:view(2, "a"), x:expand(2, nil) and x:view({2, 3}, 1) ignored what followed, and
 * x:view("a") said the shape {} was invalid */
static int check_sizes(lua_State *L, int idx, int64_t *shape, const char *fname, const char *what) {
  int n = lpt_check_shape(L, idx, shape);
  bool table = lua_istable(L, idx);
  int next = table ? idx + 1 : idx + n, top = lua_gettop(L);
  while (top >= next && lua_isnil(L, top)) top--; /* f(a, b, nil) is f(a, b), as lpt_check_max_args */
  if (top < next) return n;
  if (table || n > 0)
    return lpt_errorf(L, "%s: unexpected argument #%d (%s) after the %s", fname, next,
                      lpt_typename(L, next), what);
  return lpt_errorf(L, "%s: %s must be integers or a table of integers, got %s", fname, what,
                    lpt_typename(L, next));
}

static int t_view(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int64_t shape[PT_MAX_DIMS];
  int n = check_sizes(L, 2, shape, "view", "sizes");
  pt_status st = pt_view(lpt_ctx(L), t, n, shape, &r);
  return lpt_push_result(L, st, r);
}

static int t_reshape(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int64_t shape[PT_MAX_DIMS];
  int n = check_sizes(L, 2, shape, "reshape", "sizes");
  pt_status st = pt_reshape(lpt_ctx(L), t, n, shape, &r);
  return lpt_push_result(L, st, r);
}

static int t_view_as(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *o = lpt_check_tensor(L, 2), *r = NULL;
  pt_status st = pt_view(lpt_ctx(L), t, o->ndim, o->shape, &r);
  return lpt_push_result(L, st, r);
}

static int t_reshape_as(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *o = lpt_check_tensor(L, 2), *r = NULL;
  pt_status st = pt_reshape(lpt_ctx(L), t, o->ndim, o->shape, &r);
  return lpt_push_result(L, st, r);
}

static int t_transpose(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int d0 = lpt_check_dim(L, 2, t->ndim, "transpose");
  int d1 = lpt_check_dim(L, 3, t->ndim, "transpose");
  pt_status st = pt_transpose(lpt_ctx(L), t, d0, d1, &r);
  return lpt_push_result(L, st, r);
}

static int t_t(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  pt_status st = pt_t(lpt_ctx(L), t, &r);
  return lpt_push_result(L, st, r);
}

static int t_permute(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int64_t dims[PT_MAX_DIMS];
  int n = check_sizes(L, 2, dims, "permute", "dims");
  if (n != t->ndim)
    return lpt_errorf(L, "permute: expected %d dims for a tensor of %d dimensions, got %d", t->ndim,
                      t->ndim, n);
  int perm[PT_MAX_DIMS];
  for (int i = 0; i < n; i++) {
    int64_t d = dims[i] < 0 ? dims[i] + n + 1 : dims[i];
    perm[i] = d >= 1 && d <= n ? (int)d - 1 : -1;
  }
  pt_status st = pt_permute(lpt_ctx(L), t, perm, &r);
  return lpt_push_result(L, st, r);
}

static int t_narrow(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int dim = lpt_check_dim(L, 2, t->ndim, "narrow");
  lua_Integer start = check_integer(L, 3, "narrow", "start");
  lua_Integer length = check_integer(L, 4, "narrow", "length");
  int64_t size = t->ndim ? t->shape[dim] : 0;
  if (start < 0 && start + size < 0)
    return lpt_errorf(L, "narrow: start %I and length %I out of range for dimension %d of size %I",
                      (LUAI_UACINT)start, (LUAI_UACINT)length, dim + 1, (LUAI_UACINT)size);
  if (start < 0) start += size + 1;
  pt_status st = pt_narrow(lpt_ctx(L), t, dim, start - 1, length, &r);
  return lpt_push_result(L, st, r);
}

static int t_select(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int dim = lpt_check_dim(L, 2, t->ndim, "select");
  lua_Integer i = check_integer(L, 3, "select", "index");
  int64_t size = t->ndim ? t->shape[dim] : 0;
  if (t->ndim && i < 0 && i + size < 0)
    return lpt_errorf(L, "select: index %I out of range for dimension %d of size %I", (LUAI_UACINT)i,
                      dim + 1, (LUAI_UACINT)size);
  pt_status st = pt_select(lpt_ctx(L), t, dim, norm_index(i, size), &r);
  return lpt_push_result(L, st, r);
}

static int t_squeeze(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int dim = lpt_opt_dim(L, 2, t->ndim, "squeeze", -1);
  pt_status st = pt_squeeze(lpt_ctx(L), t, dim, &r);
  return lpt_push_result(L, st, r);
}

static int t_unsqueeze(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int dim = check_new_dim(L, 2, t->ndim + 1, "unsqueeze");
  pt_status st = pt_unsqueeze(lpt_ctx(L), t, dim, &r);
  return lpt_push_result(L, st, r);
}

static int t_expand(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int64_t shape[PT_MAX_DIMS];
  int n = check_sizes(L, 2, shape, "expand", "sizes");
  pt_status st = pt_expand(lpt_ctx(L), t, n, shape, &r);
  return lpt_push_result(L, st, r);
}

static int t_expand_as(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *o = lpt_check_tensor(L, 2), *r = NULL;
  pt_status st = pt_expand(lpt_ctx(L), t, o->ndim, o->shape, &r);
  return lpt_push_result(L, st, r);
}

static int t_flatten(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int start = lpt_opt_dim(L, 2, t->ndim, "flatten", 0);
  int end = lpt_opt_dim(L, 3, t->ndim, "flatten", t->ndim ? t->ndim - 1 : 0);
  pt_status st = pt_flatten(lpt_ctx(L), t, start, end, &r);
  return lpt_push_result(L, st, r);
}

static int t_contiguous(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  pt_status st = pt_contiguous(lpt_ctx(L), t, &r);
  return lpt_push_result(L, st, r);
}

static int t_clone(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  pt_status st = pt_clone(lpt_ctx(L), t, &r);
  return lpt_push_result(L, st, r);
}

static int t_repeat(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int64_t reps[PT_MAX_DIMS];
  int n = check_sizes(L, 2, reps, "repeat_tensor", "repeat counts");
  pt_status st = pt_repeat(lpt_ctx(L), t, n, reps, &r);
  return lpt_push_result(L, st, r);
}

/* diagonal([offset=0[, dim1=1[, dim2=2]]]) */
static int t_diagonal(lua_State *L) {
  lpt_check_max_args(L, 4, "diagonal");
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  if (t->ndim < 2)
    return lpt_errorf(L, "diagonal: expects a tensor with at least 2 dimensions, got %d", t->ndim);
  lua_Integer offset = lua_isnoneornil(L, 2) ? 0 : check_integer(L, 2, "diagonal", "offset");
  int d1 = lpt_opt_dim(L, 3, t->ndim, "diagonal", 0);
  int d2 = lpt_opt_dim(L, 4, t->ndim, "diagonal", 1);
  pt_status st = pt_diagonal(lpt_ctx(L), t, offset, d1, d2, &r);
  return lpt_push_result(L, st, r);
}

/* unfold(dim, size, step) */
static int t_unfold(lua_State *L) {
  lpt_check_max_args(L, 4, "unfold");
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int dim = lpt_check_dim(L, 2, t->ndim, "unfold");
  lua_Integer size = check_integer(L, 3, "unfold", "size");
  lua_Integer step = check_integer(L, 4, "unfold", "step");
  pt_status st = pt_unfold(lpt_ctx(L), t, dim, size, step, &r);
  return lpt_push_result(L, st, r);
}

/* --- joining --- */

/* The tensors of cat/stack: pt.cat({a, b, c}, dim) or Torch7's pt.cat(a, b, c, dim). Leaves a
 * userdata holding the pointer array on the stack (borrowed tensors stay referenced by their
 * table or stack slot). Returns n; *dim_idx is the stack index of the optional dim. */
static int tensor_list(lua_State *L, const char *fname, pt_tensor ***list, int *dim_idx) {
  int n;
  if (lua_istable(L, 1)) {
    n = (int)lua_rawlen(L, 1);
    *dim_idx = 2;
    lua_settop(L, 2); /* the optional dim, then our array */
    pt_tensor **a = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *a, 0);
    for (int i = 0; i < n; i++) {
      lua_rawgeti(L, 1, i + 1);
      a[i] = lpt_test_tensor(L, -1);
      if (!a[i])
        return lpt_errorf(L, "%s: element %d of the list is not a tensor (got %s)", fname, i + 1,
                          luaL_typename(L, -1));
      lua_pop(L, 1);
    }
    *list = a;
    return n;
  }
  int top = lua_gettop(L);
  n = 0;
  while (n < top && lpt_test_tensor(L, n + 1)) n++;
  if (n == 0)
    return lpt_errorf(L, "%s: expected a list of tensors, got %s", fname, luaL_typename(L, 1));
  *dim_idx = n + 1;
  lua_settop(L, n + 1);
  pt_tensor **a = lua_newuserdatauv(L, (size_t)n * sizeof *a, 0);
  for (int i = 0; i < n; i++) a[i] = lpt_test_tensor(L, i + 1);
  *list = a;
  return n;
}

static int l_cat(lua_State *L) {
  pt_tensor **ts, *r = NULL;
  int dim_idx, n = tensor_list(L, "cat", &ts, &dim_idx);
  int dim = n ? lpt_opt_dim(L, dim_idx, pt_cat_ref_ndim(n, ts), "cat", 0) : 0;
  pt_status st = pt_cat(lpt_ctx(L), n, ts, dim, &r);
  return lpt_push_result(L, st, r);
}

static int l_stack(lua_State *L) {
  pt_tensor **ts, *r = NULL;
  int dim_idx, n = tensor_list(L, "stack", &ts, &dim_idx);
  int dim = n && !lua_isnoneornil(L, dim_idx) ? check_new_dim(L, dim_idx, ts[0]->ndim + 1, "stack") : 0;
  pt_status st = pt_stack(lpt_ctx(L), n, ts, dim, &r);
  return lpt_push_result(L, st, r);
}

/* --- splitting --- */

static int push_list(lua_State *L, int n, pt_tensor **outs) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lpt_push_tensor(L, outs[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* split(t, size_or_sizes[, dim=1]) -> list of views */
static int t_split(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  int dim = lpt_opt_dim(L, 3, t->ndim, "split", 0);
  int64_t size = t->ndim ? t->shape[dim] : 0;
  pt_ctx *ctx = lpt_ctx(L);
  if (lua_istable(L, 2)) {
    int n = (int)lua_rawlen(L, 2);
    int64_t *sizes = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *sizes, 0);
    for (int i = 0; i < n; i++) {
      lua_rawgeti(L, 2, i + 1);
      sizes[i] = check_integer(L, -1, "split", "a split size");
      lua_pop(L, 1);
    }
    pt_tensor **outs = lua_newuserdatauv(L, (size_t)(n ? n : 1) * sizeof *outs, 0);
    if (pt_split_sizes(ctx, t, n, sizes, dim, outs)) return lpt_error(L);
    return push_list(L, n, outs);
  }
  lua_Integer s = check_integer(L, 2, "split", "split size");
  int64_t n = s > 0 ? pt_split_count(size, s) : 1;
  pt_tensor **outs = lua_newuserdatauv(L, (size_t)n * sizeof *outs, 0);
  if (pt_split(ctx, t, s, dim, outs)) return lpt_error(L);
  return push_list(L, (int)n, outs);
}

/* chunk(t, n[, dim=1]) -> list of at most n views */
static int t_chunk(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  lua_Integer chunks = check_integer(L, 2, "chunk", "number of chunks");
  int dim = lpt_opt_dim(L, 3, t->ndim, "chunk", 0);
  int64_t size = t->ndim ? t->shape[dim] : 0, cap = size > 1 ? size : 1;
  if (chunks > 0 && chunks < cap) cap = chunks;
  if (size == 0 && chunks > 1 && chunks <= PT_CHUNK_EMPTY_MAX) cap = chunks; /* empty pieces */
  pt_tensor **outs = lua_newuserdatauv(L, (size_t)cap * sizeof *outs, 0);
  int n = 0;
  if (pt_chunk(lpt_ctx(L), t, chunks, dim, &n, outs)) return lpt_error(L);
  return push_list(L, n, outs);
}

/* unbind(t[, dim=1]) -> list of selects */
static int t_unbind(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  int dim = lpt_opt_dim(L, 2, t->ndim, "unbind", 0);
  if (t->ndim == 0) return lpt_errorf(L, "unbind: cannot unbind a 0-d tensor");
  int64_t n = t->shape[dim];
  lua_createtable(L, (int)n, 0);
  for (int64_t i = 0; i < n; i++) {
    pt_tensor *r;
    if (pt_select(lpt_ctx(L), t, dim, i, &r)) return lpt_error(L);
    lpt_push_tensor(L, r);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* --- gather / scatter / index --- */

static int t_gather(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int dim = lpt_check_dim(L, 2, t->ndim, "gather");
  pt_tensor *index = lpt_check_tensor(L, 3);
  pt_status st = pt_gather(lpt_ctx(L), t, dim, index, &r);
  return lpt_push_result(L, st, r);
}

static int t_scatter(lua_State *L) {
  lpt_check_max_args(L, 4, "scatter"); /* PyTorch's reduce= is scatter_add here */
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int dim = lpt_check_dim(L, 2, t->ndim, "scatter");
  pt_tensor *index = lpt_check_tensor(L, 3);
  pt_number v = pt_number_float(0);
  pt_tensor *src = value_or_tensor(L, 4, "scatter", &v);
  if (!src) lpt_check_value(L, "scatter", t->dtype, 4, v.d);
  pt_status st = pt_scatter_number(lpt_ctx(L), t, dim, index, src, v, &r);
  return lpt_push_result(L, st, r);
}

static int t_scatter_(lua_State *L) {
  lpt_check_max_args(L, 4, "scatter_");
  pt_tensor *t = lpt_check_tensor(L, 1);
  int dim = lpt_check_dim(L, 2, t->ndim, "scatter_");
  pt_tensor *index = lpt_check_tensor(L, 3);
  pt_number v = pt_number_float(0);
  pt_tensor *src = value_or_tensor(L, 4, "scatter_", &v);
  if (!src) lpt_check_value(L, "scatter_", t->dtype, 4, v.d);
  if (pt_scatter_number_(lpt_ctx(L), t, dim, index, src, v)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

static int t_scatter_add(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int dim = lpt_check_dim(L, 2, t->ndim, "scatter_add");
  pt_tensor *index = lpt_check_tensor(L, 3), *src = lpt_check_tensor(L, 4);
  pt_status st = pt_scatter_add(lpt_ctx(L), t, dim, index, src, &r);
  return lpt_push_result(L, st, r);
}

static int t_scatter_add_(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  int dim = lpt_check_dim(L, 2, t->ndim, "scatter_add_");
  pt_tensor *index = lpt_check_tensor(L, 3), *src = lpt_check_tensor(L, 4);
  if (pt_scatter_add_(lpt_ctx(L), t, dim, index, src)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

static int t_index_select(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int dim = lpt_check_dim(L, 2, t->ndim, "index_select");
  pt_tensor *index = lpt_check_tensor(L, 3);
  pt_status st = pt_index_select(lpt_ctx(L), t, dim, index, &r);
  return lpt_push_result(L, st, r);
}

/* t:index_add_(dim, index, source[, {alpha=1}]): source scaled by alpha first, as torch's */
static int t_index_add_(lua_State *L) {
  const char *fname = "index_add_";
  int opts = lua_istable(L, 5) ? 5 : 0;
  lpt_check_max_args(L, opts ? 5 : 4, fname);
  static const char *const names[] = {"alpha", NULL};
  lpt_check_options(L, opts, fname, names);
  pt_tensor *t = lpt_check_tensor(L, 1);
  int dim = lpt_check_dim(L, 2, t->ndim, fname);
  pt_tensor *index = lpt_check_tensor(L, 3), *src = lpt_check_tensor(L, 4), *scaled = NULL;
  pt_ctx *ctx = lpt_ctx(L);
  if (opts && lua_getfield(L, opts, "alpha") != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TNUMBER)
      return lpt_errorf(L, "%s: alpha must be a number, got %s", fname, lpt_typename(L, -1));
    pt_number alpha = number_at(L, lua_gettop(L));
    if (!pt_dtype_is_floating(t->dtype) && !alpha.is_int) {
      if (alpha.d != floor(alpha.d) || !isfinite(alpha.d))
        return lpt_errorf(L, "%s: alpha must be an integer for %s tensors, got %s", fname,
                          pt_dtype_name(t->dtype), lua_tostring(L, -1));
      alpha = pt_number_int((int64_t)alpha.d);
    }
    if (alpha.d != 1 && pt_binary_number(ctx, PT_BIN_MUL, src, alpha, false, &scaled)) return lpt_error(L);
  }
  pt_status st = pt_index_add_(ctx, t, dim, index, scaled ? scaled : src);
  pt_tensor_release(scaled);
  if (st) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

static int t_index_copy_(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  int dim = lpt_check_dim(L, 2, t->ndim, "index_copy_");
  pt_tensor *index = lpt_check_tensor(L, 3), *src = lpt_check_tensor(L, 4);
  if (pt_index_copy_(lpt_ctx(L), t, dim, index, src, 0)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

static int t_index_fill_(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  int dim = lpt_check_dim(L, 2, t->ndim, "index_fill_");
  pt_tensor *index = lpt_check_tensor(L, 3);
  if (!lua_isboolean(L, 4)) luaL_checknumber(L, 4);
  pt_number v = number_at(L, 4);
  lpt_check_value(L, "index_fill_", t->dtype, 4, v.d);
  if (pt_index_fill_number_(lpt_ctx(L), "index_fill_", t, dim, index, v)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

static int t_masked_select(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *mask = lpt_check_tensor(L, 2), *r = NULL;
  pt_status st = pt_masked_select(lpt_ctx(L), t, mask, &r);
  return lpt_push_result(L, st, r);
}

/* --- index_put_, put_, masked_scatter_ --- */

/* accumulate at idx: nil, a boolean or {accumulate = bool} */
static bool opt_accumulate(lua_State *L, int idx, const char *fname) {
  if (lua_isnoneornil(L, idx)) return false;
  if (lua_istable(L, idx)) {
    static const char *const names[] = {"accumulate", NULL};
    lpt_check_options(L, idx, fname, names);
    lua_getfield(L, idx, "accumulate");
    int ty = lua_type(L, -1);
    bool v = lua_toboolean(L, -1);
    if (ty != LUA_TNIL && ty != LUA_TBOOLEAN)
      lpt_errorf(L, "%s: accumulate must be a boolean, got %s", fname, lua_typename(L, ty));
    lua_pop(L, 1);
    return v;
  }
  if (!lua_isboolean(L, idx))
    lpt_errorf(L, "%s: accumulate must be a boolean, got %s", fname, luaL_typename(L, idx));
  return lua_toboolean(L, idx);
}

/* indices as index_put_ takes them: a list of tensors and ":" (PyTorch's None: a whole dim) */
static void indices_list(lua_State *L, int idx, const char *fname, const pt_tensor *t,
                         pt_index_view *v, adv_key *a) {
  if (!lua_istable(L, idx))
    lpt_errorf(L, "%s: indices must be a list of tensors, got %s", fname, luaL_typename(L, idx));
  int n = (int)lua_rawlen(L, idx), d = 0;
  a->n = 0;
  for (int k = 1; k <= n; k++) {
    lua_rawgeti(L, idx, k);
    pt_tensor *it = test_index_tensor(L, -1);
    if (it) {
      if (a->n == PT_INDEX_MAX_ENTRIES)
        lpt_errorf(L, "%s: too many tensor entries (at most %d)", fname, PT_INDEX_MAX_ENTRIES);
      a->e[a->n++] = (pt_index_entry){it, d};
      d += is_mask(it) ? it->ndim : 1;
    } else if (lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), ":") == 0) {
      d++;
    } else {
      lpt_errorf(L, "%s: indices[%d] must be a tensor or \":\" (a whole dimension), got %s", fname,
                 k, luaL_typename(L, -1));
    }
    lua_pop(L, 1);
  }
  if (d > t->ndim)
    lpt_errorf(L, "%s: too many indices for a tensor of %d dimensions (got %d)", fname, t->ndim, d);
  pt_index_view_of(t, v);
}

/* values for index_put: a tensor or a number of t's dtype */
static pt_tensor *put_values_arg(lua_State *L, int idx, const char *fname, const pt_tensor *t,
                                 pt_number *value) {
  pt_tensor *src = lpt_test_tensor(L, idx);
  if (src) return src;
  if (lua_type(L, idx) != LUA_TNUMBER && !lua_isboolean(L, idx))
    lpt_errorf(L, "%s: values must be a tensor or a number, got %s", fname, luaL_typename(L, idx));
  *value = number_at(L, idx);
  lpt_check_value(L, fname, t->dtype, idx, value->d);
  return NULL;
}

/* t:index_put_(indices, values[, accumulate]) / t:index_put(...) */
static int index_put_common(lua_State *L, bool inplace) {
  const char *fname = inplace ? "index_put_" : "index_put";
  lpt_check_max_args(L, 4, fname);
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  pt_index_view v;
  adv_key a;
  indices_list(L, 2, fname, t, &v, &a);
  pt_number value = pt_number_float(0);
  pt_tensor *src = put_values_arg(L, 3, fname, t, &value);
  bool acc = opt_accumulate(L, 4, fname);
  pt_ctx *ctx = lpt_ctx(L);
  if (inplace) {
    if (pt_index_put_(ctx, fname, t, &v, a.n, a.e, src, value, acc)) return lpt_error(L);
    lua_settop(L, 1);
    return 1;
  }
  pt_status st = pt_index_put(ctx, fname, t, &v, a.n, a.e, src, value, acc, &r);
  return lpt_push_result(L, st, r);
}

static int t_index_put_(lua_State *L) { return index_put_common(L, true); }
static int t_index_put(lua_State *L) { return index_put_common(L, false); }

/* t:put_(index, source[, accumulate]) / t:put(...) */
static int put_common(lua_State *L, bool inplace) {
  const char *fname = inplace ? "put_" : "put";
  lpt_check_max_args(L, 4, fname);
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  pt_tensor *index = lpt_check_tensor(L, 2), *source = lpt_check_tensor(L, 3);
  bool acc = opt_accumulate(L, 4, fname);
  pt_ctx *ctx = lpt_ctx(L);
  if (inplace) {
    if (pt_put_(ctx, t, index, source, acc)) return lpt_error(L);
    lua_settop(L, 1);
    return 1;
  }
  pt_status st = pt_put(ctx, t, index, source, acc, &r);
  return lpt_push_result(L, st, r);
}

static int t_put_(lua_State *L) { return put_common(L, true); }
static int t_put(lua_State *L) { return put_common(L, false); }

/* t:masked_scatter_(mask, source) / t:masked_scatter(mask, source) */
static int t_masked_scatter_(lua_State *L) {
  lpt_check_max_args(L, 3, "masked_scatter_");
  pt_tensor *t = lpt_check_tensor(L, 1), *mask = lpt_check_tensor(L, 2), *source = lpt_check_tensor(L, 3);
  if (pt_masked_scatter_(lpt_ctx(L), t, mask, source)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

static int t_masked_scatter(lua_State *L) {
  lpt_check_max_args(L, 3, "masked_scatter");
  pt_tensor *t = lpt_check_tensor(L, 1), *mask = lpt_check_tensor(L, 2), *source = lpt_check_tensor(L, 3);
  pt_tensor *r = NULL;
  pt_status st = pt_masked_scatter(lpt_ctx(L), t, mask, source, &r);
  return lpt_push_result(L, st, r);
}

/* --- as_strided and the in-place geometry ops --- */

/* t:as_strided(size, stride[, storage_offset]): the offset 1-based, as t:storage_offset() */
static int t_as_strided(lua_State *L) {
  lpt_check_max_args(L, 4, "as_strided");
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int64_t size[PT_MAX_DIMS], stride[PT_MAX_DIMS];
  if (!lua_istable(L, 2)) lpt_errorf(L, "as_strided: size must be a table of integers, got %s", luaL_typename(L, 2));
  if (!lua_istable(L, 3)) lpt_errorf(L, "as_strided: stride must be a table of integers, got %s", luaL_typename(L, 3));
  int n = lpt_check_shape(L, 2, size), m = lpt_check_shape(L, 3, stride);
  if (n != m) return lpt_errorf(L, "as_strided: got %d sizes but %d strides", n, m);
  lua_Integer off = lua_isnoneornil(L, 4) ? t->offset + 1 : check_integer(L, 4, "as_strided", "storage_offset");
  pt_status st = pt_as_strided(lpt_ctx(L), t, n, size, stride, (int64_t)off - 1, &r);
  return lpt_push_result(L, st, r);
}

/* t becomes r (a view of it) in place; returns t */
static int adopt(lua_State *L, const char *fname, pt_tensor *t, pt_status st, pt_tensor *r) {
  if (!st) st = pt_adopt_view(lpt_ctx(L), fname, t, r);
  pt_tensor_release(r);
  if (st) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

static int t_squeeze_(lua_State *L) {
  lpt_check_max_args(L, 2, "squeeze_");
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int dim = lpt_opt_dim(L, 2, t->ndim, "squeeze_", -1);
  pt_status st = pt_squeeze(lpt_ctx(L), t, dim, &r);
  return adopt(L, "squeeze_", t, st, r);
}

static int t_unsqueeze_(lua_State *L) {
  lpt_check_max_args(L, 2, "unsqueeze_");
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int dim = check_new_dim(L, 2, t->ndim + 1, "unsqueeze_");
  pt_status st = pt_unsqueeze(lpt_ctx(L), t, dim, &r);
  return adopt(L, "unsqueeze_", t, st, r);
}

static int t_transpose_(lua_State *L) {
  lpt_check_max_args(L, 3, "transpose_");
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int d0 = lpt_check_dim(L, 2, t->ndim, "transpose_");
  int d1 = lpt_check_dim(L, 3, t->ndim, "transpose_");
  pt_status st = pt_transpose(lpt_ctx(L), t, d0, d1, &r);
  return adopt(L, "transpose_", t, st, r);
}

static int t_t_(lua_State *L) {
  lpt_check_max_args(L, 1, "t_");
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  if (t->ndim > 2)
    return lpt_errorf(L, "t_: expects a tensor with at most 2 dimensions, got %d (use transpose_)",
                      t->ndim);
  pt_status st = pt_t(lpt_ctx(L), t, &r);
  return adopt(L, "t_", t, st, r);
}

/* --- indexing and slicing: t[key] and t[key] = value --- */

typedef pt_status (*select_fn)(pt_ctx *, pt_tensor *, int, int64_t, pt_tensor **);
typedef pt_status (*narrow_fn)(pt_ctx *, pt_tensor *, int, int64_t, int64_t, pt_tensor **);
typedef pt_status (*slice_fn)(pt_ctx *, pt_tensor *, int, int64_t, int64_t, int64_t, pt_tensor **);

/* Does the table key hold a tensor entry? */
static bool key_has_tensor(lua_State *L, int key) {
  int n = (int)lua_rawlen(L, key);
  bool found = false;
  for (int k = 1; k <= n && !found; k++) {
    lua_rawgeti(L, key, k);
    found = test_index_tensor(L, -1) != NULL;
    lua_pop(L, 1);
  }
  return found;
}

/* Resolve a number or a table key (one entry per leading dim) to a view of t: a new reference.
 * With raw, no graph is recorded (assignment). *all_selected: every dim was removed by numbers.
 * Tensor entries are collected into adv (a k-D mask covers k dims) and leave their dims alone;
 * with adv NULL they are invalid. */
static pt_tensor *resolve_key(lua_State *L, pt_tensor *t, int key, bool raw, bool *all_selected,
                              adv_key *adv) {
  pt_ctx *ctx = lpt_ctx(L);
  select_fn sel = raw ? pt_select_raw : pt_select;
  narrow_fn nar = raw ? pt_narrow_raw : pt_narrow;
  slice_fn slc = raw ? pt_slice_raw : pt_slice;
  pt_tensor *next;
  *all_selected = false;
  if (lua_type(L, key) == LUA_TNUMBER) { /* checked before any reference is taken */
    lua_Integer i = check_integer(L, key, "index", "an index");
    if (t->ndim == 0) lpt_errorf(L, "index: cannot index a 0-d tensor (use item())");
    if (i == 0 || i > t->shape[0] || i < -t->shape[0])
      lpt_errorf(L, "index: index %I out of range for dimension 1 of size %I", (LUAI_UACINT)i,
                 (LUAI_UACINT)t->shape[0]);
    if (sel(ctx, t, 0, norm_index(i, t->shape[0]), &next)) lpt_error(L);
    *all_selected = t->ndim == 1;
    return next;
  }
  pt_tensor *cur = pt_tensor_retain(t);
  int n = (int)lua_rawlen(L, key);
  int ellipsis = 0; /* position of "..." (PyTorch's t[..., i]): the dims the other entries leave */
  int used = 0;     /* dims the entries index (a mask as many as it has) */
  for (int k = 1; k <= n; k++) {
    bool dots = lua_rawgeti(L, key, k) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "...") == 0;
    pt_tensor *it = test_index_tensor(L, -1);
    used += dots ? 0 : it && is_mask(it) ? it->ndim : 1;
    lua_pop(L, 1);
    if (!dots) continue;
    if (ellipsis) {
      pt_tensor_release(cur);
      lpt_errorf(L, "index: only one '...' is allowed (positions %d and %d)", ellipsis, k);
    }
    ellipsis = k;
  }
  if (used > t->ndim) {
    pt_tensor_release(cur);
    lpt_errorf(L, "index: too many indices for a tensor of %d dimensions (got %d)", t->ndim, used);
  }
  int orig[PT_MAX_DIMS]; /* the dim of t each dim of cur is */
  for (int i = 0; i < t->ndim; i++) orig[i] = i;
  if (adv) adv->n = 0;
  int d = 0, selected = 0;
  for (int k = 1; k <= n; k++) {
    int top = lua_gettop(L);
    int ty = lua_rawgeti(L, key, k);
    int64_t size = d < cur->ndim ? cur->shape[d] : 0;
    pt_status st = PT_OK;
    pt_tensor *it = adv && ty == LUA_TUSERDATA ? lpt_test_tensor(L, -1) : NULL;
    if (it) {
      if (!is_mask(it) && it->dtype != PT_INT64 && it->dtype != PT_INT32) {
        pt_tensor_release(cur);
        lpt_errorf(L, "index: a tensor index must be a bool mask or int64 positions, got %s "
                   "(position %d)", pt_dtype_name(it->dtype), k);
      }
      if (adv->n == PT_INDEX_MAX_ENTRIES) {
        pt_tensor_release(cur);
        lpt_errorf(L, "index: too many tensor entries (at most %d)", PT_INDEX_MAX_ENTRIES);
      }
      /* borrowed: the key table holds it */
      adv->e[adv->n++] = (pt_index_entry){it, d};
      d += is_mask(it) ? it->ndim : 1;
      lua_settop(L, top);
      continue;
    }
    if (ty == LUA_TNUMBER) {
      int isnum;
      lua_Integer i = lua_tointegerx(L, -1, &isnum);
      if (!isnum) {
        pt_tensor_release(cur);
        lpt_errorf(L, "index: index entries must be integers, got %s", lua_tostring(L, -1));
      }
      if (i == 0 || i > size || i < -size) {
        pt_tensor_release(cur);
        lpt_errorf(L, "index: index %I out of range for dimension %d of size %I", (LUAI_UACINT)i, k,
                   (LUAI_UACINT)size);
      }
      st = sel(ctx, cur, d, norm_index(i, size), &next);
      selected++;
      memmove(orig + d, orig + d + 1, (size_t)(cur->ndim - d - 1) * sizeof *orig);
    } else if (ty == LUA_TTABLE) {
      int m = (int)lua_rawlen(L, -1);
      if (m == 0) {
        d++;
        lua_settop(L, top);
        continue;
      }
      if (m > 3) {
        pt_tensor_release(cur);
        lpt_errorf(L, "index: a range is {}, {first}, {first, last} or {first, last, step}, got %d "
                   "entries at position %d", m, k);
      }
      int isnum1, isnum2, isnum3 = 1;
      lua_rawgeti(L, -1, 1);
      lua_rawgeti(L, -2, m > 1 ? 2 : 1);
      lua_rawgeti(L, -3, m > 2 ? 3 : 1);
      lua_Integer a = lua_tointegerx(L, -3, &isnum1), b = lua_tointegerx(L, -2, &isnum2);
      lua_Integer step = m > 2 ? lua_tointegerx(L, -1, &isnum3) : 1;
      if (m > 2 && lua_type(L, -1) != LUA_TNUMBER) isnum3 = 0;
      if (!isnum1 || !isnum2) {
        pt_tensor_release(cur);
        lpt_errorf(L, "index: range bounds must be integers (position %d)", k);
      }
      if (!isnum3) {
        pt_tensor_release(cur);
        lpt_errorf(L, "index: a range step must be an integer, got %s (position %d)",
                   lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1) : luaL_typename(L, -1), k);
      }
      if (step < 1) {
        pt_tensor_release(cur);
        lpt_errorf(L, "index: a range step must be at least 1, got %I (position %d; negative steps "
                   "are not supported, use flip)", (LUAI_UACINT)step, k);
      }
      lua_Integer a1 = a < 0 ? a + size + 1 : a, b1 = b < 0 ? b + size + 1 : b;
      if (a1 < 1 || a1 > size + 1 || b1 < a1 - 1 || b1 > size) {
        pt_tensor_release(cur);
        if (m > 2)
          lpt_errorf(L, "index: range {%I,%I,%I} out of range for dimension %d of size %I",
                     (LUAI_UACINT)a, (LUAI_UACINT)b, (LUAI_UACINT)step, k, (LUAI_UACINT)size);
        lpt_errorf(L, "index: range {%I,%I} out of range for dimension %d of size %I", (LUAI_UACINT)a,
                   (LUAI_UACINT)b, k, (LUAI_UACINT)size);
      }
      if (step == 1)
        st = nar(ctx, cur, d, a1 - 1, b1 - a1 + 1, &next);
      else /* first, first+step, ... up to last (inclusive) */
        st = slc(ctx, cur, d, a1 - 1, b1 >= a1 ? (b1 - a1) / step + 1 : 0, step, &next);
      d++;
    } else if (ty == LUA_TSTRING && strcmp(lua_tostring(L, -1), ":") == 0) {
      d++;
      lua_settop(L, top);
      continue;
    } else if (k == ellipsis) { /* every dim the other entries do not index, kept whole */
      d += t->ndim - used;
      lua_settop(L, top);
      continue;
    } else if (ty == LUA_TSTRING) {
      pt_tensor_release(cur);
      lpt_errorf(L, "index: invalid index entry '%s' at position %d (strings: \":\" for a whole "
                 "dimension, \"...\" for all the dimensions the other entries leave)",
                 lua_tostring(L, -1), k);
    } else {
      pt_tensor_release(cur);
      lpt_errorf(L, "index: invalid index entry of type %s at position %d", luaL_typename(L, -1), k);
    }
    lua_settop(L, top);
    pt_tensor_release(cur);
    if (st) lpt_error(L);
    cur = next;
  }
  *all_selected = selected > 0 && cur->ndim == 0 && !(adv && adv->n);
  if (adv) memcpy(adv->orig, orig, sizeof orig);
  return cur;
}

/* A table key with tensor entries: the view its numbers and ranges leave, described in t's
 * row-major order and in its storage (resolve_key on a contiguous stand-in of t, then on t). */
static void resolve_adv(lua_State *L, pt_tensor *t, int key, pt_index_view *v, adv_key *a) {
  pt_ctx *ctx = lpt_ctx(L);
  int64_t cs[PT_MAX_DIMS];
  pt_contiguous_strides(t->ndim, t->shape, cs);
  pt_tensor *tc = NULL; /* never read: only its geometry matters */
  if (pt_tensor_from_storage(ctx, t->storage, t->dtype, 0, t->ndim, t->shape, cs, &tc))
    lpt_error(L);
  lpt_push_tensor(L, tc); /* the stack owns it (errors below) */
  bool all;
  pt_tensor *vc = resolve_key(L, tc, key, true, &all, a);
  v->ndim = vc->ndim;
  v->offset = vc->offset;
  for (int d = 0; d < vc->ndim; d++) {
    v->shape[d] = vc->shape[d];
    v->stride[d] = vc->stride[d];
    v->dim[d] = a->orig[d];
  }
  pt_tensor_release(vc);
  adv_key again;
  pt_tensor *vs = resolve_key(L, t, key, true, &all, &again);
  v->soffset = vs->offset;
  memcpy(v->sstride, vs->stride, sizeof v->sstride);
  pt_tensor_release(vs);
  lua_pop(L, 1);
}

/* the index of t[index] for an int64/int32 tensor: one entry on dim 1 */
static void adv_single(pt_tensor *t, pt_tensor *index, pt_index_view *v, adv_key *a) {
  pt_index_view_of(t, v);
  a->n = 1;
  a->e[0] = (pt_index_entry){index, 0};
}

static int t_slice(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  pt_tensor *key = lpt_test_tensor(L, 2);
  pt_ctx *ctx = lpt_ctx(L);
  if (key) {
    pt_status st;
    if (key->dtype == PT_BOOL || key->dtype == PT_UINT8) {
      st = pt_masked_select(ctx, t, key, &r);
      return lpt_push_result(L, st, r);
    }
    if (key->dtype == PT_INT64 || key->dtype == PT_INT32) {
      if (t->ndim == 0) return lpt_errorf(L, "index: cannot index a 0-d tensor (use item())");
      if (key->ndim == 1 && !pt_index_has_negative(key)) { /* rows, as before */
        st = pt_index_select(ctx, t, 0, key, &r);
        return lpt_push_result(L, st, r);
      }
      pt_index_view v;
      adv_key a;
      adv_single(t, key, &v, &a);
      st = pt_index_get(ctx, "index", t, &v, a.n, a.e, &r);
      return lpt_push_result(L, st, r);
    }
    return lpt_errorf(L, "index: a tensor index must be a bool mask or int64 positions, got %s",
                      pt_dtype_name(key->dtype));
  }
  if (!lua_istable(L, 2) && lua_type(L, 2) != LUA_TNUMBER)
    return lpt_errorf(L, "index: invalid index of type %s", luaL_typename(L, 2));
  if (lua_istable(L, 2) && key_has_tensor(L, 2)) {
    pt_index_view v;
    adv_key a;
    resolve_adv(L, t, 2, &v, &a);
    pt_status st = pt_index_get(ctx, "index", t, &v, a.n, a.e, &r);
    return lpt_push_result(L, st, r);
  }
  bool all;
  r = resolve_key(L, t, 2, false, &all, NULL);
  if (all) {
    lpt_push_element(L, (const char *)r->storage->data + r->offset * (int64_t)pt_dtype_size(r->dtype), r->dtype);
    pt_tensor_release(r);
    return 1;
  }
  lpt_push_tensor(L, r);
  return 1;
}

/* t[mask] = value / t[index] = value (a checked key) where t is part of a graph: a number (or
 * a one-element tensor that needs no gradient) is filled in with masked_fill_ / index_fill_,
 * which record it; tensor values are not differentiable here. */
static int key_assign_graph(lua_State *L, pt_tensor *t, pt_tensor *key, bool is_mask, pt_tensor *src,
                            pt_number v) {
  pt_ctx *ctx = lpt_ctx(L);
  if (src && (src->requires_grad || pt_tensor_numel(src) != 1))
    return lpt_errorf(L, "index: assigning a tensor through a %s is not differentiable; assign a "
                      "number, or build the result out of place with pt.where(mask, value, t)",
                      is_mask ? "bool mask" : "tensor of positions");
  if (src) v = pt_tensor_get_flat_number(src, 0);
  pt_status st;
  if (is_mask) {
    pt_tensor *mask = NULL;
    st = pt_tensor_to_dtype_raw(ctx, key, PT_BOOL, &mask);
    if (!st) st = pt_masked_fill_number_(ctx, t, mask, v);
    pt_tensor_release(mask);
  } else {
    st = pt_index_fill_number_(ctx, "index", t, 0, key, v);
  }
  return st ? lpt_error(L) : 0;
}

/* t[key] = value for a key with tensor entries: index_put_ (the last write of a position wins),
 * the value converted to t's dtype as every assignment does */
static int adv_assign(lua_State *L, pt_tensor *t, const pt_index_view *v, const adv_key *a,
                      pt_tensor *src, pt_number value) {
  pt_ctx *ctx = lpt_ctx(L);
  pt_tensor *conv = NULL;
  pt_status st = PT_OK;
  if (src && src->dtype != t->dtype) st = pt_to_dtype(ctx, src, t->dtype, &conv);
  else conv = pt_tensor_retain(src);
  if (!st) st = pt_index_put_(ctx, "index", t, v, a->n, a->e, conv, value, false);
  pt_tensor_release(conv);
  return st ? lpt_error(L) : 0;
}

static int t_slice_assign(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  pt_ctx *ctx = lpt_ctx(L);
  pt_number v = pt_number_float(0);
  pt_tensor *src = value_or_tensor(L, 3, "index", &v);
  if (!src) lpt_check_value(L, "index", t->dtype, 3, v.d);
  pt_tensor *key = lpt_test_tensor(L, 2);
  /* autograd involved: a slice goes through copy_/fill_ on a view, a mask or index tensor
   * through masked_fill_, each of which updates t's history */
  bool leaf = t->requires_grad && !t->grad_fn; /* refused below, as any in-place op on one */
  bool graph = !leaf && ctx->grad_enabled && (t->requires_grad || (src && src->requires_grad));
  if (!graph && pt_check_inplace(ctx, "index", t, src)) return lpt_error(L);
  if (!graph && src && src->storage == t->storage) {
    /* a value that is a view of t is read before t is written, whichever way the key writes
     * (copy_ and index_put_ do so; a mask, a 1-D position tensor and a slice read it while
     * writing: u[{}] = u:t() gave {{0,3,6},{3,4,7},{6,7,8}}). PyTorch refuses the overlap. */
    pt_tensor *c;
    if (pt_tensor_clone_raw(ctx, src, &c)) return lpt_error(L);
    lpt_push_tensor(L, c); /* kept by the stack */
    src = c;
  }
  if (key) {
    bool is_mask = key->dtype == PT_BOOL || key->dtype == PT_UINT8;
    if (!is_mask && key->dtype != PT_INT64 && key->dtype != PT_INT32)
      return lpt_errorf(L, "index: a tensor index must be a bool mask or int64 positions, got %s",
                        pt_dtype_name(key->dtype));
    if (!is_mask && t->ndim == 0) return lpt_errorf(L, "index: cannot index a 0-d tensor (use fill_)");
    if (!is_mask && (key->ndim != 1 || pt_index_has_negative(key))) {
      pt_index_view iv;
      adv_key a;
      adv_single(t, key, &iv, &a);
      return adv_assign(L, t, &iv, &a, src, v);
    }
    if (graph) return key_assign_graph(L, t, key, is_mask, src, v);
    if (is_mask ? pt_masked_assign_number_(ctx, "index", t, key, src, v)
                : pt_index_copy_number_(ctx, t, 0, key, src, v))
      return lpt_error(L);
    return 0;
  }
  if (!lua_istable(L, 2) && lua_type(L, 2) != LUA_TNUMBER)
    return lpt_errorf(L, "index: invalid index of type %s", luaL_typename(L, 2));
  if (lua_istable(L, 2) && key_has_tensor(L, 2)) {
    pt_index_view iv;
    adv_key a;
    resolve_adv(L, t, 2, &iv, &a);
    return adv_assign(L, t, &iv, &a, src, v);
  }
  bool all;
  pt_tensor *view = resolve_key(L, t, 2, !graph, &all, NULL);
  pt_status st;
  if (src && pt_tensor_numel(src) == 1 && !src->requires_grad) {
    v = pt_tensor_get_flat_number(src, 0);
    src = NULL;
  }
  if (src) {
    int nb;
    int64_t bshape[PT_MAX_DIMS];
    st = pt_broadcast_shapes(ctx, "index", view->ndim, view->shape, src->ndim, src->shape, &nb,
                             bshape);
    if (st || nb != view->ndim || memcmp(bshape, view->shape, (size_t)nb * sizeof(int64_t))) {
      char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
      st = pt_fail(ctx, PT_ESHAPE, "index: value of shape %s cannot be broadcast to the slice of shape %s",
                   pt_shape_format(src->ndim, src->shape, a, sizeof a),
                   pt_shape_format(view->ndim, view->shape, b, sizeof b));
    }
    if (!st) st = graph ? pt_copy_(ctx, view, src) : pt_tensor_copy_into(ctx, view, src);
  } else {
    st = graph ? pt_fill_number_(ctx, view, v) : pt_fill_number_raw(ctx, view, v);
  }
  pt_tensor_release(view);
  if (st) return lpt_error(L);
  atomic_fetch_add(&t->storage->version, 1);
  return 0;
}

/* --- registration --- */

static const luaL_Reg methods[] = {
    {"view", t_view},
    {"reshape", t_reshape},
    {"view_as", t_view_as},
    {"reshape_as", t_reshape_as},
    {"transpose", t_transpose},
    {"t", t_t},
    {"permute", t_permute},
    {"narrow", t_narrow},
    {"select", t_select},
    {"squeeze", t_squeeze},
    {"unsqueeze", t_unsqueeze},
    {"expand", t_expand},
    {"expand_as", t_expand_as},
    {"flatten", t_flatten},
    {"contiguous", t_contiguous},
    {"clone", t_clone},
    {"repeat_tensor", t_repeat},
    {"repeatTensor", t_repeat},
    {"diagonal", t_diagonal},
    {"unfold", t_unfold},
    {"split", t_split},
    {"chunk", t_chunk},
    {"unbind", t_unbind},
    {"gather", t_gather},
    {"scatter", t_scatter},
    {"scatter_", t_scatter_},
    {"scatter_add", t_scatter_add},
    {"scatter_add_", t_scatter_add_},
    {"index_select", t_index_select},
    {"index_add_", t_index_add_},
    {"index_copy_", t_index_copy_},
    {"index_fill_", t_index_fill_},
    {"masked_select", t_masked_select},
    {"index_put_", t_index_put_},
    {"index_put", t_index_put},
    {"put_", t_put_},
    {"put", t_put},
    {"masked_scatter_", t_masked_scatter_},
    {"masked_scatter", t_masked_scatter},
    {"as_strided", t_as_strided},
    {"squeeze_", t_squeeze_},
    {"unsqueeze_", t_unsqueeze_},
    {"transpose_", t_transpose_},
    {"swapdims_", t_transpose_},
    {"swapaxes_", t_transpose_},
    {"t_", t_t_},
    {"__slice", t_slice},
    {"__slice_assign", t_slice_assign},
    {NULL, NULL},
};

/* module functions: pt.reshape(t, ...) etc. take the tensor first, like the methods */
static const luaL_Reg functions[] = {
    {"cat", l_cat},
    {"stack", l_stack},
    {"view", t_view},
    {"reshape", t_reshape},
    {"transpose", t_transpose},
    {"t", t_t},
    {"permute", t_permute},
    {"narrow", t_narrow},
    {"select", t_select},
    {"squeeze", t_squeeze},
    {"unsqueeze", t_unsqueeze},
    {"expand", t_expand},
    {"flatten", t_flatten},
    {"contiguous", t_contiguous},
    {"clone", t_clone},
    {"repeat_tensor", t_repeat},
    {"diagonal", t_diagonal},
    {"unfold", t_unfold},
    {"split", t_split},
    {"chunk", t_chunk},
    {"unbind", t_unbind},
    {"gather", t_gather},
    {"scatter", t_scatter},
    {"scatter_add", t_scatter_add},
    {"index_select", t_index_select},
    {"masked_select", t_masked_select},
    {"index_put", t_index_put},
    {"put", t_put},
    {"masked_scatter", t_masked_scatter},
    {"as_strided", t_as_strided},
    {NULL, NULL},
};

/* Methods listed in `functions` too are also available as pt.name(t, ...). */
static const char *const method_docs[] = {
    "view", "t:view(size...) or t:view({sizes}) -> view sharing t's storage; one size may be -1.\n  Fails when t's strides do not allow it (use reshape).",
    "reshape", "t:reshape(size...) -> a view when possible, otherwise a contiguous copy; one size may be -1.",
    "view_as", "t:view_as(other) -> t:view(other:size()).",
    "reshape_as", "t:reshape_as(other) -> t:reshape(other:size()).",
    "transpose", "t:transpose(dim1, dim2) -> view with the two dims swapped (1-based, negative from the end).",
    "t", "t:t() -> transpose of a 2-D tensor (0-D and 1-D come back unchanged).",
    "permute", "t:permute(dims...) -> view with dims reordered, e.g. x:permute(3, 1, 2).",
    "narrow", "t:narrow(dim, start, length) -> view of elements start..start+length-1 along dim (1-based).",
    "select", "t:select(dim, index) -> view of slice index along dim, which is removed (t[i] is t:select(1, i)).",
    "squeeze", "t:squeeze([dim]) -> view without size-1 dims (or only dim, when it has size 1).",
    "unsqueeze", "t:unsqueeze(dim) -> view with a size-1 dim inserted at position dim (1..ndim+1).",
    "expand", "t:expand(size...) -> broadcast view (stride 0) to a larger shape; -1 keeps a size.",
    "expand_as", "t:expand_as(other) -> t:expand(other:size()).",
    "flatten", "t:flatten([start_dim=1[, end_dim=-1]]) -> dims start..end merged into one (a view when possible).",
    "contiguous", "t:contiguous() -> t itself when contiguous, otherwise a contiguous copy.",
    "clone", "t:clone() -> contiguous copy (gradients flow back to t).",
    "repeat_tensor", "t:repeat_tensor(reps...) (also t:repeatTensor, Torch7's name; `repeat` is a Lua keyword)\n  -> t tiled reps[i] times along each dim (a copy); extra leading reps add dims.",
    "diagonal", "t:diagonal([offset=0[, dim1=1[, dim2=2]]]) -> view of the diagonal of dims dim1 and dim2, which are\n"
    "  removed; the diagonal becomes the last dim (as torch.diagonal). offset > 0 is above the main\n"
    "  diagonal, < 0 below. Gradients flow back. Also pt.diagonal(t, ...).",
    "unfold", "t:unfold(dim, size, step) -> view of every window of `size` elements along dim, `step` apart:\n"
    "  dim becomes the (size(dim) - size) // step + 1 windows and a new last dim of `size` holds each\n"
    "  (as Tensor.unfold; windows may overlap). Gradients flow back (summed where windows overlap).\n"
    "  Also pt.unfold(t, dim, size, step).",
    "split", "t:split(size_or_sizes[, dim=1]) -> list of views: pieces of `size` (last one shorter) or of the given sizes.",
    "chunk", "t:chunk(n[, dim=1]) -> list of at most n views of size ceil(size/n).",
    "unbind", "t:unbind([dim=1]) -> list of the slices along dim (views, dim removed).",
    "gather", "t:gather(dim, index) -> values at 1-based int64 positions: out[i][j] = t[index[i][j]][j] for dim 1.",
    "scatter", "t:scatter(dim, index, src_or_value) -> copy of t with out[index[i][j]][j] = src[i][j] (dim 1).",
    "scatter_", "t:scatter_(dim, index, src_or_value) -> t, scatter in place.",
    "scatter_add", "t:scatter_add(dim, index, src) -> copy of t with src added at the indexed positions.",
    "scatter_add_", "t:scatter_add_(dim, index, src) -> t, scatter_add in place.",
    "index_select", "t:index_select(dim, index) -> copy of the slices at the 1-based positions of a 1-D int64 index.",
    "index_add_", "t:index_add_(dim, index, src[, {alpha=1}]) -> t, with slice i of alpha * src added to slice index[i] of t.",
    "index_copy_", "t:index_copy_(dim, index, src) -> t, with slice i of src copied to slice index[i].",
    "index_fill_", "t:index_fill_(dim, index, value) -> t, with the slices at index set to value (differentiable: they get no gradient).",
    "masked_select", "t:masked_select(mask) -> 1-D copy of the elements where the bool mask is true (mask broadcasts).",
    "__slice", "t[key]: a number selects along dim 1; a table has one entry per leading dim: a number selects\n  (the dim goes away), {a, b} is the inclusive range a..b (negative from the end), {a} keeps a..a,\n  {a, b, step} takes a, a+step, ... up to b (step >= 1), {} or \":\" keeps the whole dim, \"...\" all the dims the\n  other entries leave. Ranges give views sharing storage. When every dim is selected by numbers the result is a number.\n"
    "  Tensor entries index as PyTorch's advanced indexing (the result is a copy; gradients flow back, repeated\n"
    "  positions accumulating, second derivatives too): an int64/int32 tensor of 1-based positions (negative from\n"
    "  the end, any shape; a 0-d one too) indexes one dim, a k-D bool mask k dims (its true positions), and they\n"
    "  broadcast together, e.g. x[{i, \":\", j}], x[{{2, 4}, mask}]. Numbers and ranges apply first (as views); then the\n"
    "  broadcast shape of the tensor entries replaces the dims they index when those are adjacent, and comes\n"
    "  first when other dims lie between them (x[{i, \":\", j}] of a {5,6,7} tensor is {#i, 6}). A plain Lua list\n"
    "  is never a list of positions ({a, b} is a range): use pt.tensor{...}. A bare key: a bool tensor is\n"
    "  masked_select (the mask broadcasts, a 1-D result); a 1-D int64 tensor of positive positions selects rows\n"
    "  (index_select); any other int64 tensor is t[{index}].",
    "__slice_assign", "t[key] = value: key as for t[key]; value is a number or a tensor broadcast to the slice.\n  With a bool mask, a number or one-element tensor fills, a tensor with one value per true entry is copied in order.\n  With autograd (t in a graph, or a value that requires grad) slices record CopySlices; a bare mask or 1-D\n  position tensor takes numbers only (recorded as masked_fill_), e.g. logits[mask] = -math.huge.\n"
    "  A table key with tensor entries (t[{idx}] = v, t[{\":\", idx}] = v, ...) is t:index_put_ (see there): v (a\n"
    "  number, or a tensor converted to t's dtype and broadcast to the indexed shape) lands in t, views and\n"
    "  non-contiguous t included; where a position repeats the last write wins; gradients flow to t and v.",
    "index_put_", "t:index_put_(indices, values[, accumulate=false]) -> t, with t[indices] = values as torch.Tensor.index_put_:\n"
    "  indices is a list of tensors (int64/int32 1-based positions, negative from the end, or bool masks),\n"
    "  one per leading dim as in t[{...}] (\":\" keeps a dim whole, PyTorch's None); values is a tensor of t's\n"
    "  dtype (or a number) broadcast to the indexed shape. accumulate (a boolean or {accumulate=}) adds into t,\n"
    "  repeated positions summing; without it the last write of a repeated position wins, and only that value\n"
    "  gets a gradient (torch gives every duplicate the position's gradient). Gradients: t's is zero at the\n"
    "  written positions (unless accumulate), values' is the gradient at its positions, summed over broadcast\n"
    "  dims; second derivatives too. Bumps t's version; refused for a leaf that requires grad (grad mode).",
    "index_put", "t:index_put(indices, values[, accumulate=false]) -> a copy of t with index_put_ applied (see there).\n"
    "  Also pt.index_put(t, ...).",
    "put_", "t:put_(index, source[, accumulate=false]) -> t, with source's elements written at the 1-based positions of\n"
    "  the int64 tensor index into t read as if contiguous (row-major; negative from the end), as\n"
    "  torch.Tensor.put_; source has t's dtype and as many elements as index. accumulate adds (repeats sum);\n"
    "  otherwise the last write of a repeated position wins. Gradients flow to t (zero where written, unless\n"
    "  accumulate) and source.",
    "put", "t:put(index, source[, accumulate=false]) -> a copy of t with put_ applied. Also pt.put(t, ...).",
    "masked_scatter_", "t:masked_scatter_(mask, source) -> t, with the elements where the bool mask (broadcast to t's shape) is\n"
    "  true replaced by source's first elements in row-major order, as torch.Tensor.masked_scatter_; source has\n"
    "  t's dtype and at least as many elements as mask has true entries. Gradients flow to t (zero where\n"
    "  written) and source (zero beyond the elements used).",
    "masked_scatter", "t:masked_scatter(mask, source) -> a copy with masked_scatter_ applied (t and mask broadcast together).\n"
    "  Also pt.masked_scatter(t, mask, source).",
    "as_strided", "t:as_strided(size, stride[, storage_offset]) -> a view of t's storage with the given sizes and strides\n"
    "  (tables; strides >= 0, in elements) starting at storage_offset (1-based, as t:storage_offset(), which is\n"
    "  the default), as torch.as_strided; every element must lie in the storage. Gradients flow back as torch's:\n"
    "  locations the view repeats add up, locations t repeats share; second derivatives too. Also\n"
    "  pt.as_strided(t, size, stride[, storage_offset]).",
    "squeeze_", "t:squeeze_([dim]) -> t itself, squeezed in place (its shape and strides become t:squeeze(dim)'s; with\n"
    "  autograd its history goes on through SqueezeBackward). Refused for a leaf that requires grad in grad\n"
    "  mode, as PyTorch's in-place ops.",
    "unsqueeze_", "t:unsqueeze_(dim) -> t itself with a size-1 dim inserted at dim, in place (as squeeze_).",
    "transpose_", "t:transpose_(dim1, dim2) -> t itself with the two dims swapped in place (its strides change, as\n"
    "  t:transpose's view; with autograd its history goes on through TransposeBackward). Also t:swapdims_ and\n"
    "  t:swapaxes_ (the same function). Refused for a leaf that requires grad in grad mode.",
    "t_", "t:t_() -> t itself transposed in place (2-D; 0-D and 1-D stay as they are), as transpose_(1, 2).",
    NULL, NULL,
};

/* The module forms pt.view(t, ...) etc. are the same C functions as the methods, so they share
 * the method docs (docs are keyed by function value). */
static const char *const function_docs[] = {
    "cat", "pt.cat({t1, t2, ...}[, dim=1]) or pt.cat(t1, t2, ...[, dim]) -> tensors joined along dim\n  (same sizes in the other dims; dtypes promoted).",
    "stack", "pt.stack({t1, t2, ...}[, dim=1]) -> tensors of one shape joined along a new dim.",
    NULL, NULL,
};

void lpt_open_shape(lua_State *L) {
  lpt_add_methods(L, methods);
  lpt_add_functions(L, functions);
  lpt_add_docs(L, 1, method_docs);
  lpt_add_docs(L, 0, function_docs);
}
