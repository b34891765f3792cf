/* Views, indexing/slicing, joining/splitting and the gather/scatter family from Lua.
 * Dims, indices and index tensors are 1-based (negative counts from the end), as in Torch7. */
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

static lua_Integer check_integer(lua_State *L, int idx, const char *fname, const char *what) {
  int isnum;
  lua_Integer v = lua_tointegerx(L, idx, &isnum);
  if (!isnum)
    return lpt_errorf(L, "%s: %s must be an integer, got %s", fname, what,
                      lua_type(L, idx) == LUA_TNUMBER ? lua_tostring(L, idx) : luaL_typename(L, idx));
  return v;
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
    return lpt_errorf(L, "%s: dimension %d out of range (the result has %d dimensions)", fname,
                      (int)d, result_ndim);
  return (int)d1 - 1;
}

/* --- views --- */

static int t_view(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int64_t shape[PT_MAX_DIMS];
  int n = lpt_check_shape(L, 2, shape);
  pt_status st = pt_view(lpt_ctx(L), t, n, shape, &r);
  return lpt_push_result(L, st, r);
}

static int t_reshape(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int64_t shape[PT_MAX_DIMS];
  int n = lpt_check_shape(L, 2, shape);
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
  int n = lpt_check_shape(L, 2, dims);
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
    return lpt_errorf(L, "select: index %d out of range for dimension %d of size %d", (int)i,
                      dim + 1, (int)size);
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
  int n = lpt_check_shape(L, 2, shape);
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
  int n = lpt_check_shape(L, 2, reps);
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
  int dim = n ? lpt_opt_dim(L, dim_idx, ts[0]->ndim, "cat", 0) : 0;
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

static int t_index_add_(lua_State *L) {
  lpt_check_max_args(L, 4, "index_add_"); /* PyTorch's alpha is not there: refused, not ignored */
  pt_tensor *t = lpt_check_tensor(L, 1);
  int dim = lpt_check_dim(L, 2, t->ndim, "index_add_");
  pt_tensor *index = lpt_check_tensor(L, 3), *src = lpt_check_tensor(L, 4);
  if (pt_index_add_(lpt_ctx(L), t, dim, index, src)) return lpt_error(L);
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

/* --- indexing and slicing: t[key] and t[key] = value --- */

typedef pt_status (*select_fn)(pt_ctx *, pt_tensor *, int, int64_t, pt_tensor **);
typedef pt_status (*narrow_fn)(pt_ctx *, pt_tensor *, int, int64_t, int64_t, pt_tensor **);
typedef pt_status (*slice_fn)(pt_ctx *, pt_tensor *, int, int64_t, int64_t, int64_t, pt_tensor **);

/* Resolve a number or a table key (one entry per leading dim) to a view of t: a new reference.
 * With raw, no graph is recorded (assignment). *all_selected: every dim was removed by numbers. */
static pt_tensor *resolve_key(lua_State *L, pt_tensor *t, int key, bool raw, bool *all_selected) {
  pt_ctx *ctx = lpt_ctx(L);
  select_fn sel = raw ? pt_select_raw : pt_select;
  narrow_fn nar = raw ? pt_narrow_raw : pt_narrow;
  slice_fn slc = raw ? pt_slice_raw : pt_slice;
  pt_tensor *cur = pt_tensor_retain(t), *next;
  *all_selected = false;
  if (lua_type(L, key) == LUA_TNUMBER) {
    lua_Integer i = check_integer(L, key, "index", "an index");
    if (t->ndim == 0) {
      pt_tensor_release(cur);
      lpt_errorf(L, "index: cannot index a 0-d tensor (use item())");
    }
    if (i == 0 || i > t->shape[0] || i < -t->shape[0]) {
      pt_tensor_release(cur);
      lpt_errorf(L, "index: index %I out of range for dimension 1 of size %I", (LUAI_UACINT)i,
                 (LUAI_UACINT)t->shape[0]);
    }
    if (sel(ctx, cur, 0, norm_index(i, t->shape[0]), &next)) {
      pt_tensor_release(cur);
      lpt_error(L);
    }
    pt_tensor_release(cur);
    *all_selected = t->ndim == 1;
    return next;
  }
  int n = (int)lua_rawlen(L, key);
  int ellipsis = 0; /* position of "..." (PyTorch's t[..., i]): the dims the other entries leave */
  for (int k = 1; k <= n; k++) {
    bool dots = lua_rawgeti(L, key, k) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "...") == 0;
    lua_pop(L, 1);
    if (!dots) continue;
    if (ellipsis) {
      pt_tensor_release(cur);
      lpt_errorf(L, "index: only one '...' is allowed (positions %d and %d)", ellipsis, k);
    }
    ellipsis = k;
  }
  if (n - (ellipsis > 0) > t->ndim) {
    pt_tensor_release(cur);
    lpt_errorf(L, "index: too many indices for a tensor of %d dimensions (got %d)", t->ndim,
               n - (ellipsis > 0));
  }
  int d = 0, selected = 0;
  for (int k = 1; k <= n; k++) {
    int top = lua_gettop(L);
    int ty = lua_rawgeti(L, key, k);
    int64_t size = cur->shape[d];
    pt_status st = PT_OK;
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
        lpt_errorf(L, "index: range {%d,%d} out of range for dimension %d of size %d", (int)a,
                   (int)b, k, (int)size);
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
      d += t->ndim - (n - 1);
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
  *all_selected = selected > 0 && cur->ndim == 0;
  return cur;
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
      st = pt_index_select(ctx, t, 0, key, &r);
      return lpt_push_result(L, st, r);
    }
    return lpt_errorf(L, "index: a tensor index must be a bool mask or int64 positions, got %s",
                      pt_dtype_name(key->dtype));
  }
  if (!lua_istable(L, 2) && lua_type(L, 2) != LUA_TNUMBER)
    return lpt_errorf(L, "index: invalid index of type %s", luaL_typename(L, 2));
  bool all;
  r = resolve_key(L, t, 2, false, &all);
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
  if (key) {
    bool is_mask = key->dtype == PT_BOOL || key->dtype == PT_UINT8;
    if (!is_mask && key->dtype != PT_INT64 && key->dtype != PT_INT32)
      return lpt_errorf(L, "index: a tensor index must be a bool mask or int64 positions, got %s",
                        pt_dtype_name(key->dtype));
    if (!is_mask && t->ndim == 0) return lpt_errorf(L, "index: cannot index a 0-d tensor (use fill_)");
    if (graph) return key_assign_graph(L, t, key, is_mask, src, v);
    if (is_mask ? pt_masked_assign_number_(ctx, "index", t, key, src, v)
                : pt_index_copy_number_(ctx, t, 0, key, src, v))
      return lpt_error(L);
    return 0;
  }
  if (!lua_istable(L, 2) && lua_type(L, 2) != LUA_TNUMBER)
    return lpt_errorf(L, "index: invalid index of type %s", luaL_typename(L, 2));
  bool all;
  pt_tensor *view = resolve_key(L, t, 2, !graph, &all);
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
    "index_add_", "t:index_add_(dim, index, src) -> t, with slice i of src added to slice index[i] of t.",
    "index_copy_", "t:index_copy_(dim, index, src) -> t, with slice i of src copied to slice index[i].",
    "index_fill_", "t:index_fill_(dim, index, value) -> t, with the slices at index set to value (differentiable: they get no gradient).",
    "masked_select", "t:masked_select(mask) -> 1-D copy of the elements where the bool mask is true (mask broadcasts).",
    "__slice", "t[key]: a number selects along dim 1; a table has one entry per leading dim: a number selects\n  (the dim goes away), {a, b} is the inclusive range a..b (negative from the end), {a} keeps a..a,\n  {a, b, step} takes a, a+step, ... up to b (step >= 1), {} or \":\" keeps the whole dim; a bool tensor selects elements (1-D copy); an int64 tensor selects\n  rows. Ranges give views sharing storage. When every dim is selected by numbers the result is a number.",
    "__slice_assign", "t[key] = value: key as for t[key]; value is a number or a tensor broadcast to the slice.\n  With a bool mask, a number or one-element tensor fills, a tensor with one value per true entry is copied in order.\n  With autograd (t in a graph, or a value that requires grad) slices record CopySlices; masks and position\n  tensors take numbers only (recorded as masked_fill_), e.g. logits[mask] = -math.huge.",
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
