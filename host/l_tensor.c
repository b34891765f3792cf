/* Tensor userdata: lifetime, type checks, properties, indexing dispatch, constructors,
 * conversions and the printed form. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/backend.h"
#include "../lib/ops_elementwise.h"
#include "../lib/ops_index.h"
#include "../lib/ops_shape.h"
#include "lpt.h"

/* --- userdata --- */

pt_tensor *lpt_check_tensor(lua_State *L, int idx) {
  lpt_box *b = lpt_test_box(L, idx);
  if (!b) {
    luaL_typeerror(L, idx, "Tensor");
    return NULL;
  }
  if (!b->t) luaL_argerror(L, idx, "tensor was closed");
  return b->t;
}

void lpt_push_tensor(lua_State *L, pt_tensor *t) {
  lpt_state *S = lpt_state_fast(L);
  lpt_box_new(L, S, t);
  lua_rawgeti(L, LUA_REGISTRYINDEX, S->tensor_mt_ref);
  lua_setmetatable(L, -2);
  /* after the box owns t: the note allocates */
  if (__builtin_expect(S->ctx.detect_anomaly, 0) && t->grad_fn) lpt_anomaly_note(L, t->grad_fn);
  lpt_gc_account_fast(L, S);
}

pt_tensor *lpt_to_tensor(lua_State *L, int idx, pt_dtype like) {
  pt_tensor *t = lpt_test_tensor(L, idx);
  if (t) return pt_tensor_retain(t);
  if (lua_type(L, idx) == LUA_TNUMBER) {
    pt_dtype dt = like;
    if (lua_isinteger(L, idx)) {
      if (dt == PT_BOOL) dt = PT_INT64;
    } else if (!pt_dtype_is_floating(dt)) {
      dt = pt_default_float();
    }
    if (pt_tensor_scalar(lpt_ctx(L), dt, lua_tonumber(L, idx), &t)) lpt_error(L);
    return t;
  }
  if (lua_type(L, idx) == LUA_TBOOLEAN) {
    if (pt_tensor_scalar(lpt_ctx(L), PT_BOOL, lua_toboolean(L, idx), &t)) lpt_error(L);
    return t;
  }
  luaL_typeerror(L, idx, "Tensor or number");
  return NULL;
}

static int t_gc(lua_State *L) {
  lpt_box *b = lua_touserdata(L, 1);
  pt_tensor_release(b->t);
  b->t = NULL;
  b->tag = 0; /* the block may be reused for another object: a stale tag must not match */
  return 0;
}

/* --- small helpers --- */

static void push_shape(lua_State *L, int ndim, const int64_t *shape) {
  lua_createtable(L, ndim, 0);
  for (int i = 0; i < ndim; i++) {
    lua_pushinteger(L, shape[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

void lpt_push_element(lua_State *L, const void *p, pt_dtype dt) {
  switch (dt) {
  case PT_BOOL: lua_pushboolean(L, *(const bool *)p); break;
  case PT_UINT8: lua_pushinteger(L, *(const uint8_t *)p); break;
  case PT_INT32: lua_pushinteger(L, *(const int32_t *)p); break;
  case PT_INT64: lua_pushinteger(L, *(const int64_t *)p); break; /* exact beyond 2^53 */
  default: lua_pushnumber(L, pt_read_as_double(p, dt)); break;
  }
}

/* the element at storage offset off (in elements) */
static const void *element_at(const pt_tensor *t, int64_t off) {
  return (const char *)t->storage->data + off * (int64_t)pt_dtype_size(t->dtype);
}

/* --- properties and indexing --- */

/* A method that lives in a Lua module loaded on first use (init.lua registers the loader in
 * the registry): on a miss the loader runs once, then the name is looked up again. Only names
 * that are neither methods nor properties come here, so the common path pays nothing. */
static bool lazy_method(lua_State *L, int key) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, "partrain.lazy_methods") != LUA_TFUNCTION) {
    lua_pop(L, 1);
    return false;
  }
  lua_pushnil(L);
  lua_setfield(L, LUA_REGISTRYINDEX, "partrain.lazy_methods"); /* once per state */
  lua_call(L, 0, 0);
  lua_pushvalue(L, key);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return true;
  lua_pop(L, 1);
  return false;
}

/* t.T (all dims reversed), t.mT (the last two swapped), t.H / t.mH (the same for real tensors:
 * H on matrices only), as torch's properties; views with autograd */
static int push_transposed(lua_State *L, pt_tensor *t, const char *k) {
  pt_ctx *ctx = lpt_ctx(L);
  pt_tensor *r = NULL;
  pt_status st;
  if (k[0] == 'H' && t->ndim != 2)
    return lpt_errorf(L, "tensor.H is only supported on matrices (2-D tensors), got a %d-D tensor%s",
                      t->ndim, t->ndim > 2 ? " (for batches of matrices: tensor.mH)" : "");
  if (k[0] == 'm' && t->ndim < 2)
    return lpt_errorf(L, "tensor.%s is only supported on matrices or batches of matrices, got a %d-D tensor",
                      k, t->ndim);
  if (k[0] == 'm') {
    st = pt_transpose(ctx, t, t->ndim - 2, t->ndim - 1, &r);
  } else {
    int perm[PT_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) perm[i] = t->ndim - 1 - i;
    st = pt_permute(ctx, t, perm, &r);
  }
  if (st) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

static int t_index(lua_State *L) {
  /* methods first: the common case */
  if (lua_type(L, 2) == LUA_TSTRING) {
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
    lua_pop(L, 1);
    pt_tensor *t = lpt_check_tensor(L, 1);
    const char *k = lua_tostring(L, 2);
    if (strcmp(k, "grad") == 0) {
      if (t->grad)
        lpt_push_tensor(L, pt_tensor_retain(t->grad));
      else
        lua_pushnil(L);
    } else if (strcmp(k, "requires_grad") == 0) {
      lua_pushboolean(L, t->requires_grad);
    } else if (strcmp(k, "is_leaf") == 0) {
      lua_pushboolean(L, t->grad_fn == NULL);
    } else if (strcmp(k, "grad_fn") == 0) {
      if (t->grad_fn)
        lua_pushstring(L, t->grad_fn->name);
      else
        lua_pushnil(L);
    } else if (strcmp(k, "shape") == 0) {
      push_shape(L, t->ndim, t->shape);
    } else if (strcmp(k, "ndim") == 0) {
      lua_pushinteger(L, t->ndim);
    } else if (strcmp(k, "is_cuda") == 0) {
      lua_pushboolean(L, t->storage->device.type == PT_CUDA);
    } else if (strcmp(k, "data") == 0) { /* torch's t.data: t's storage and geometry, no history */
      pt_tensor *r;
      if (pt_detach(lpt_ctx(L), t, &r)) return lpt_error(L);
      lpt_push_tensor(L, r);
    } else if (k[0] == 'T' || k[0] == 'H' || ((k[0] == 'm') && (k[1] == 'T' || k[1] == 'H'))) {
      if (k[k[0] == 'm' ? 2 : 1] != '\0') {
        if (!lazy_method(L, 2)) lua_pushnil(L);
        return 1;
      }
      return push_transposed(L, t, k);
    } else if (!lazy_method(L, 2)) {
      lua_pushnil(L);
    }
    return 1;
  }
  pt_tensor *t = lpt_check_tensor(L, 1);
  if (lua_type(L, 2) == LUA_TNUMBER) { /* t[2.0] is t[2], as in an assignment */
    int exact;
    lua_Integer i0 = lua_tointegerx(L, 2, &exact);
    if (!exact) {
      lua_pushvalue(L, 2);
      return lpt_errorf(L, "index: an index must be an integer, got %s", lua_tostring(L, -1));
    }
    if (t->ndim == 0) return lpt_errorf(L, "index: cannot index a 0-d tensor (use item())");
    lua_Integer i = i0, n = t->shape[0];
    if (i < 0) i += n + 1;
    if (i < 1 || i > n)
      return lpt_errorf(L, "index: index %I out of range for dimension 1 of size %I",
                        (LUAI_UACINT)i0, (LUAI_UACINT)n);
    if (t->ndim == 1) {
      lpt_push_element(L, element_at(t, t->offset + (i - 1) * t->stride[0]), t->dtype);
      return 1;
    }
    /* a view: goes through select so autograd sees it */
    lua_getfield(L, lua_upvalueindex(1), "select");
    if (lua_isnil(L, -1)) return lpt_errorf(L, "index: select is not available");
    lua_pushvalue(L, 1);
    lua_pushinteger(L, 1);
    lua_pushinteger(L, i);
    lua_call(L, 3, 1);
    return 1;
  }
  if (lua_istable(L, 2) || lpt_test_tensor(L, 2)) {
    lua_getfield(L, lua_upvalueindex(1), "__slice");
    if (lua_isnil(L, -1)) return lpt_errorf(L, "index: slicing is not available");
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_call(L, 2, 1);
    return 1;
  }
  return lpt_errorf(L, "index: invalid index of type %s", luaL_typename(L, 2));
}

static int t_newindex(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  if (lua_type(L, 2) == LUA_TSTRING) {
    const char *k = lua_tostring(L, 2);
    if (strcmp(k, "requires_grad") == 0) {
      bool v = lua_toboolean(L, 3);
      if (v && !pt_dtype_is_floating(t->dtype))
        return lpt_errorf(L, "requires_grad: only floating point tensors can require gradients (dtype %s)",
                          pt_dtype_name(t->dtype));
      if (!v && t->grad_fn)
        return lpt_errorf(L, "requires_grad: cannot turn off requires_grad of a non-leaf tensor (use detach())");
      t->requires_grad = v;
      return 0;
    }
    if (strcmp(k, "data") == 0) { /* t.data = u: t takes u's storage, dtype and geometry */
      pt_tensor *u = lpt_test_tensor(L, 3);
      if (!u) return lpt_errorf(L, "data: expected a Tensor, got %s", luaL_typename(L, 3));
      if (t->grad_fn) return lpt_errorf(L, "data: only a leaf tensor's data can be replaced");
      if (t->requires_grad && !pt_dtype_is_floating(u->dtype))
        return lpt_errorf(L, "data: a tensor that requires grad needs floating point data, got dtype %s",
                          pt_dtype_name(u->dtype));
      if (pt_tensor_set_data(lpt_ctx(L), t, u)) return lpt_error(L);
      return 0;
    }
    if (strcmp(k, "grad") == 0) {
      pt_tensor *g = lua_isnil(L, 3) ? NULL : lpt_check_tensor(L, 3);
      if (g && (g->ndim != t->ndim || memcmp(g->shape, t->shape, (size_t)t->ndim * sizeof(int64_t)))) {
        char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
        return lpt_errorf(L, "grad: assigned gradient has shape %s, tensor has shape %s",
                          pt_shape_format(g->ndim, g->shape, a, sizeof a),
                          pt_shape_format(t->ndim, t->shape, b, sizeof b));
      }
      pt_tensor *old = t->grad;
      t->grad = pt_tensor_retain(g);
      pt_tensor_release(old);
      return 0;
    }
    return lpt_errorf(L, "cannot set field '%s' of a Tensor", k);
  }
  /* t[i] = x on a 1-D tensor; with autograd involved it goes through slice assignment below */
  if (lua_isinteger(L, 2) && t->ndim == 1 && lua_type(L, 3) == LUA_TNUMBER &&
      !(t->requires_grad && t->grad_fn && lpt_ctx(L)->grad_enabled)) {
    lua_Integer i = lua_tointeger(L, 2), n = t->shape[0];
    if (i < 0) i += n + 1;
    if (i < 1 || i > n)
      return lpt_errorf(L, "index: index %I out of range for dimension 1 of size %I",
                        (LUAI_UACINT)lua_tointeger(L, 2), (LUAI_UACINT)n);
    if (pt_check_inplace(lpt_ctx(L), "index", t, NULL)) return lpt_error(L);
    lpt_check_value(L, "index", t->dtype, 3, lua_tonumber(L, 3));
    int64_t idx = i - 1;
    if (t->dtype == PT_INT64 && lua_isinteger(L, 3)) /* every int64, not only what a double holds */
      ((int64_t *)t->storage->data)[t->offset + idx * t->stride[0]] = (int64_t)lua_tointeger(L, 3);
    else
      pt_tensor_set(t, &idx, lua_tonumber(L, 3));
    atomic_fetch_add(&t->storage->version, 1);
    return 0;
  }
  lua_getfield(L, lua_upvalueindex(1), "__slice_assign");
  if (lua_isnil(L, -1)) return lpt_errorf(L, "index: slice assignment is not available");
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 3);
  lua_call(L, 3, 0);
  return 0;
}

/* --- shape queries --- */

static int t_size(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  if (lua_isnoneornil(L, 2)) {
    push_shape(L, t->ndim, t->shape);
    return 1;
  }
  int d = lpt_check_dim(L, 2, t->ndim, "size");
  lua_pushinteger(L, t->ndim ? t->shape[d] : 1);
  return 1;
}

static int t_stride(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  if (lua_isnoneornil(L, 2)) {
    push_shape(L, t->ndim, t->stride);
    return 1;
  }
  int d = lpt_check_dim(L, 2, t->ndim, "stride");
  lua_pushinteger(L, t->stride[d]);
  return 1;
}

static int t_dim(lua_State *L) {
  lua_pushinteger(L, lpt_check_tensor(L, 1)->ndim);
  return 1;
}

static int t_numel(lua_State *L) {
  lua_pushinteger(L, pt_tensor_numel(lpt_check_tensor(L, 1)));
  return 1;
}

static int t_len(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  if (t->ndim == 0) return lpt_errorf(L, "len: a 0-d tensor has no length");
  lua_pushinteger(L, t->shape[0]);
  return 1;
}

static int t_dtype(lua_State *L) {
  lua_pushstring(L, pt_dtype_name(lpt_check_tensor(L, 1)->dtype));
  return 1;
}

static int t_device(lua_State *L) {
  char buf[32];
  pt_device_format(lpt_check_tensor(L, 1)->storage->device, buf, sizeof buf);
  lua_pushstring(L, buf);
  return 1;
}

static int t_is_contiguous(lua_State *L) {
  lua_pushboolean(L, pt_tensor_is_contiguous(lpt_check_tensor(L, 1)));
  return 1;
}

/* t:_storage_numel(): the elements of t's dtype its storage holds (resize_ grows it past that) */
static int t_storage_numel(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  lua_pushinteger(L, (lua_Integer)(t->storage->nbytes / pt_dtype_size(t->dtype)));
  return 1;
}

/* t:detach_(): t leaves the graph in place (no history, requires_grad false), as torch's; views are
 * refused as there (their base's history would still reach them) */
static int t_detach_(lua_State *L) {
  lpt_check_max_args(L, 1, "detach_");
  pt_tensor *t = lpt_check_tensor(L, 1);
  if (t->base) return lpt_errorf(L, "detach_: can't detach views in-place (use detach() instead)");
  if (t->grad_fn) {
    if (t->grad_fn->retain_target == t) t->grad_fn->retain_target = NULL;
    pt_node_release(t->grad_fn);
    t->grad_fn = NULL;
  }
  t->requires_grad = false;
  t->retains_grad = false;
  lua_settop(L, 1);
  return 1;
}

/* true when both tensors view the same storage */
static int t_is_same_storage(lua_State *L) {
  pt_tensor *a = lpt_check_tensor(L, 1), *b = lpt_check_tensor(L, 2);
  lua_pushboolean(L, a->storage == b->storage);
  return 1;
}

/* t:share_memory_(): PyTorch's; the storage moves into shared memory, so that processes forked
 * afterwards (the process target) write into the caller's tensor */
static int t_share_memory_(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  if (pt_storage_share(lpt_ctx(L), t->storage)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

static int t_is_shared(lua_State *L) {
  lua_pushboolean(L, pt_storage_is_shared(lpt_check_tensor(L, 1)->storage));
  return 1;
}

static int t_storage_offset(lua_State *L) {
  lua_pushinteger(L, lpt_check_tensor(L, 1)->offset + 1);
  return 1;
}

static int t_item(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  if (pt_tensor_numel(t) != 1) {
    char b[PT_SHAPE_STR_MAX];
    return lpt_errorf(L, "item: tensor with %d elements cannot be converted to a number (shape %s)",
                      (int)pt_tensor_numel(t), pt_shape_format(t->ndim, t->shape, b, sizeof b));
  }
  lpt_push_element(L, element_at(t, t->offset), t->dtype); /* one element: at the offset */
  return 1;
}

static void push_list(lua_State *L, const pt_tensor *t, int dim, int64_t offset) {
  const char *base = t->storage->data;
  size_t es = pt_dtype_size(t->dtype);
  if (dim == t->ndim) {
    lpt_push_element(L, base + offset * (int64_t)es, t->dtype);
    return;
  }
  lua_createtable(L, (int)t->shape[dim], 0);
  for (int64_t i = 0; i < t->shape[dim]; i++) {
    push_list(L, t, dim + 1, offset + i * t->stride[dim]);
    lua_rawseti(L, -2, i + 1);
  }
}

static int t_tolist(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  luaL_checkstack(L, t->ndim + 4, "tolist");
  push_list(L, t, 0, t->offset);
  return 1;
}

/* --- conversions and copies --- */

static int convert_to(lua_State *L, pt_dtype dt) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r;
  lua_getfield(L, LUA_REGISTRYINDEX, LPT_METHODS);
  /* the autograd-aware conversion lives with the elementwise ops when present */
  if (lua_getfield(L, -1, "_to_dtype") != LUA_TNIL) {
    lua_pushvalue(L, 1);
    lua_pushstring(L, pt_dtype_name(dt));
    lua_call(L, 2, 1);
    return 1;
  }
  lua_pop(L, 2);
  if (pt_tensor_to_dtype_raw(lpt_ctx(L), t, dt, &r)) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

static int t_float(lua_State *L) { return convert_to(L, PT_FLOAT32); }
static int t_double(lua_State *L) { return convert_to(L, PT_FLOAT64); }
static int t_long(lua_State *L) { return convert_to(L, PT_INT64); }
static int t_int(lua_State *L) { return convert_to(L, PT_INT32); }
static int t_byte(lua_State *L) { return convert_to(L, PT_UINT8); }
static int t_bool(lua_State *L) { return convert_to(L, PT_BOOL); }
static int t_to(lua_State *L) {
  lpt_check_tensor(L, 1);
  const char *what = luaL_checkstring(L, 2);
  pt_dtype dt;
  if (pt_dtype_from_name(what, &dt)) return convert_to(L, dt);
  pt_device dev;
  pt_ctx *ctx = lpt_ctx(L);
  if (pt_device_parse(ctx, what, &dev)) return lpt_error(L);
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  pt_status st = pt_tensor_to_device(ctx, t, dev, &r);
  if (st == PT_OK && r == t) { /* already there: t itself, as PyTorch */
    pt_tensor_release(r);
    lua_settop(L, 1);
    return 1;
  }
  return lpt_push_result(L, st, r);
}

/* pt.cuda.is_available() / pt.cuda.device_count(): whether a GPU backend registered itself
 * (lib/backend.h) and how many devices it found */
static int cuda_count(void) {
  const pt_backend *b = pt_backend_of(PT_CUDA);
  return b ? b->device_count() : 0;
}
static int l_cuda_is_available(lua_State *L) {
  lua_pushboolean(L, cuda_count() > 0);
  return 1;
}
static int l_cuda_device_count(lua_State *L) {
  lua_pushinteger(L, cuda_count());
  return 1;
}

int lpt_check_value(lua_State *L, const char *fname, pt_dtype dt, int idx, double v) {
  if (dt == PT_INT64 && lua_isinteger(L, idx)) return 0;
  if (pt_check_value_fits(lpt_ctx(L), fname, dt, v)) return lpt_error(L);
  return 0;
}

static int t_fill_(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  double v = lua_isboolean(L, 2) ? lua_toboolean(L, 2) : luaL_checknumber(L, 2);
  lpt_check_value(L, "fill_", t->dtype, 2, v);
  /* a Lua integer stays exact into int64 (beyond 2^53) */
  pt_number n = lua_isinteger(L, 2) ? pt_number_int(lua_tointeger(L, 2)) : pt_number_float(v);
  if (pt_fill_number_(lpt_ctx(L), t, n)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

static int t_zero_(lua_State *L) {
  if (pt_fill_(lpt_ctx(L), lpt_check_tensor(L, 1), 0.0)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

static int t_close(lua_State *L) {
  lpt_box *b = luaL_checkudata(L, 1, LPT_TENSOR);
  pt_tensor_release(b->t);
  b->t = NULL;
  return 0;
}

static int t_eq(lua_State *L) {
  /* == on tensors is identity (like tables); use t:eq(u) or t:equal(u) for values */
  lpt_box *a = lua_touserdata(L, 1), *b = lua_touserdata(L, 2);
  lua_pushboolean(L, a && b && a->t == b->t);
  return 1;
}

/* --- printing ---
 * PyTorch's rules, Lua's braces: tensor({{1.0000, 2.0000},
 *                                        {3.0000, 4.5000}}, shape={2,2}, dtype=float32)
 * Floating tensors whose shown values are all integers print as "1." (PyTorch); otherwise 4
 * digits after the point, or %.4e when the nonzero magnitudes span more than 1000x, exceed 1e8
 * or go below 1e-4. Integer dtypes print exactly, bool as true/false. Every element is padded
 * to the widest shown one; rows wrap at 80 columns. With more than 1000 elements each dimension
 * longer than 6 shows its first and last 3 entries around "...". Only the shown elements
 * decide the format. */

enum { FMT_INT, FMT_BOOL, FMT_FLOAT_INT, FMT_FIXED, FMT_SCI };

#define FMT_LINEWIDTH 80
#define FMT_THRESHOLD 1000
#define FMT_EDGE 3
#define FMT_PRECISION 4

typedef struct fmt_ctx {
  luaL_Buffer *b;
  const pt_tensor *t;
  int mode;
  int precision; /* digits after the point */
  int width;     /* of every element */
  int per_line;  /* elements per line in the last dimension */
  int64_t edge;  /* summarise dims longer than 2*edge (0: never) */
} fmt_ctx;

typedef void (*fmt_visit_fn)(fmt_ctx *f, const char *p, void *ud);

static const char *fmt_elem(const fmt_ctx *f, int64_t offset) {
  return (const char *)f->t->storage->data + offset * (int64_t)pt_dtype_size(f->t->dtype);
}

/* Visit the elements that will be shown, in order. */
static void fmt_walk(fmt_ctx *f, int dim, int64_t offset, fmt_visit_fn fn, void *ud) {
  const pt_tensor *t = f->t;
  if (dim == t->ndim) {
    fn(f, fmt_elem(f, offset), ud);
    return;
  }
  int64_t n = t->shape[dim];
  bool summarise = f->edge > 0 && n > 2 * f->edge;
  for (int64_t i = 0; i < n; i++) {
    if (summarise && i == f->edge) i = n - f->edge;
    fmt_walk(f, dim + 1, offset + i * t->stride[dim], fn, ud);
  }
}

static void format_number(char *buf, size_t n, const char *p, pt_dtype dt, int mode, int precision) {
  switch (dt) {
  case PT_BOOL: snprintf(buf, n, "%s", *(const uint8_t *)p ? "true" : "false"); return;
  case PT_INT64: snprintf(buf, n, "%lld", (long long)*(const int64_t *)p); return;
  case PT_INT32: snprintf(buf, n, "%d", (int)*(const int32_t *)p); return;
  case PT_UINT8: snprintf(buf, n, "%u", (unsigned)*(const uint8_t *)p); return;
  default: break;
  }
  double v = pt_read_as_double(p, dt);
  if (isnan(v)) snprintf(buf, n, "nan");
  else if (isinf(v)) snprintf(buf, n, v > 0 ? "inf" : "-inf");
  else if (mode == FMT_FLOAT_INT) snprintf(buf, n, "%.0f.", v);
  else if (mode == FMT_SCI) snprintf(buf, n, "%.*e", precision, v);
  else snprintf(buf, n, "%.*f", precision, v);
}

typedef struct fmt_stats {
  bool any_finite, all_int;
  double maxabs, minabs; /* over nonzero finite values */
} fmt_stats;

static void fmt_collect(fmt_ctx *f, const char *p, void *ud) {
  fmt_stats *s = ud;
  double v = pt_read_as_double(p, f->t->dtype);
  if (!isfinite(v) || v == 0) return;
  double a = fabs(v);
  s->any_finite = true;
  if (v != floor(v)) s->all_int = false;
  if (a > s->maxabs) s->maxabs = a;
  if (a < s->minabs) s->minabs = a;
}

static void fmt_measure(fmt_ctx *f, const char *p, void *ud) {
  (void)ud;
  char buf[400];
  format_number(buf, sizeof buf, p, f->t->dtype, f->mode, f->precision);
  int w = (int)strlen(buf);
  if (w > f->width) f->width = w;
}

static void fmt_indent(luaL_Buffer *b, int n) {
  for (int k = 0; k < n; k++) luaL_addchar(b, ' ');
}

static void fmt_rec(fmt_ctx *f, int dim, int64_t offset, int indent) {
  const pt_tensor *t = f->t;
  luaL_Buffer *b = f->b;
  if (dim == t->ndim) {
    char buf[400];
    format_number(buf, sizeof buf, fmt_elem(f, offset), t->dtype, f->mode, f->precision);
    for (int k = (int)strlen(buf); k < f->width; k++) luaL_addchar(b, ' ');
    luaL_addstring(b, buf);
    return;
  }
  luaL_addchar(b, '{');
  int64_t n = t->shape[dim];
  bool summarise = f->edge > 0 && n > 2 * f->edge;
  int64_t count = summarise ? 2 * f->edge + 1 : n;
  bool last = dim == t->ndim - 1;
  for (int64_t k = 0; k < count; k++) {
    if (k > 0) {
      luaL_addchar(b, ',');
      if (last && k % f->per_line != 0) {
        luaL_addchar(b, ' ');
      } else {
        int newlines = last ? 1 : t->ndim - 1 - dim; /* a blank line between 2-d blocks */
        for (int j = 0; j < newlines; j++) luaL_addchar(b, '\n');
        fmt_indent(b, indent + 1);
      }
    }
    if (summarise && k == f->edge) {
      luaL_addstring(b, "...");
      continue;
    }
    int64_t i = summarise && k > f->edge ? n - (count - k) : k;
    fmt_rec(f, dim + 1, offset + i * t->stride[dim], indent + 1);
  }
  luaL_addchar(b, '}');
}

static int t_tostring(lua_State *L) {
  lpt_box *bx = luaL_testudata(L, 1, LPT_TENSOR);
  if (!bx) return luaL_typeerror(L, 1, "Tensor");
  if (!bx->t) {
    lua_pushstring(L, "tensor(closed)");
    return 1;
  }
  const pt_tensor *t = bx->t;
  int64_t numel = pt_tensor_numel(t);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "tensor(");
  if (t->storage->device.type != PT_CPU) {
    luaL_addstring(&b, "<device data>");
  } else if (numel == 0) {
    luaL_addstring(&b, "{}");
  } else {
    const lpt_state *S = lpt_state_fast(L);
    int precision = S->print.set ? S->print.precision : FMT_PRECISION;
    int64_t threshold = S->print.set ? S->print.threshold : FMT_THRESHOLD;
    int edgeitems = S->print.set ? S->print.edgeitems : FMT_EDGE;
    int linewidth = S->print.set ? S->print.linewidth : FMT_LINEWIDTH;
    fmt_ctx f = {.b = &b, .t = t, .width = 1, .per_line = 1, .precision = precision};
    f.edge = numel > threshold ? edgeitems : 0;
    if (t->dtype == PT_BOOL) {
      f.mode = FMT_BOOL;
    } else if (!pt_dtype_is_floating(t->dtype)) {
      f.mode = FMT_INT;
    } else {
      fmt_stats s = {.all_int = true, .minabs = INFINITY};
      fmt_walk(&f, 0, t->offset, fmt_collect, &s);
      if (!s.any_finite) f.mode = s.all_int ? FMT_FLOAT_INT : FMT_FIXED;
      else if (s.all_int) f.mode = s.maxabs > 1e8 ? FMT_SCI : FMT_FLOAT_INT;
      else if (s.maxabs / s.minabs > 1000 || s.maxabs > 1e8 || s.minabs < 1e-4) f.mode = FMT_SCI;
      else f.mode = FMT_FIXED;
      if (S->print.sci_mode > 0) f.mode = FMT_SCI;
      else if (S->print.sci_mode < 0 && f.mode == FMT_SCI) f.mode = s.all_int ? FMT_FLOAT_INT : FMT_FIXED;
    }
    fmt_walk(&f, 0, t->offset, fmt_measure, NULL);
    if (t->ndim == 0) f.width = 0; /* a lone value is not padded */
    int avail = linewidth - (7 + (t->ndim > 0 ? t->ndim - 1 : 0));
    f.per_line = avail / (f.width + 2);
    if (f.per_line < 1) f.per_line = 1;
    fmt_rec(&f, 0, t->offset, 7);
  }
  char shape[PT_SHAPE_STR_MAX], dev[32], tail[PT_SHAPE_STR_MAX + 160];
  pt_shape_format(t->ndim, t->shape, shape, sizeof shape);
  int len = snprintf(tail, sizeof tail, ", shape=%s, dtype=%s", shape, pt_dtype_name(t->dtype));
  if (t->storage->device.type != PT_CPU) {
    pt_device_format(t->storage->device, dev, sizeof dev);
    len += snprintf(tail + len, sizeof tail - (size_t)len, ", device=%s", dev);
  }
  if (t->grad_fn)
    snprintf(tail + len, sizeof tail - (size_t)len, ", grad_fn=<%s>)", t->grad_fn->name);
  else
    snprintf(tail + len, sizeof tail - (size_t)len, "%s)", t->requires_grad ? ", requires_grad=true" : "");
  luaL_addstring(&b, tail);
  luaL_pushresult(&b);
  return 1;
}

/* pt.set_printoptions{precision=, threshold=, edgeitems=, linewidth=, profile=, sci_mode=} (torch's):
 * a profile first ("default", "short", "full"), then the fields given; sci_mode is reset to
 * automatic unless given, as torch does */
static int print_int_opt(lua_State *L, int idx, const char *key, lua_Integer lo, lua_Integer hi, lua_Integer *out) {
  int t = lua_getfield(L, idx, key);
  if (t == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  lua_Number v = lua_tonumber(L, -1);
  if (t != LUA_TNUMBER || v != v || v < (lua_Number)lo || (v > (lua_Number)hi && v != HUGE_VAL) ||
      (v != HUGE_VAL && v != floor(v)))
    return lpt_errorf(L, "set_printoptions: %s must be an integer from %I to %I, got %s", key, lo, hi,
                      lpt_error_text(L, -1));
  *out = v == HUGE_VAL ? hi : (lua_Integer)v;
  lua_pop(L, 1);
  return 1;
}

static int l_set_printoptions(lua_State *L) {
  lpt_check_max_args(L, 1, "set_printoptions");
  if (!lua_isnoneornil(L, 1) && !lua_istable(L, 1))
    return lpt_errorf(L, "set_printoptions: expected an options table, got %s", luaL_typename(L, 1));
  int opts = lua_istable(L, 1) ? 1 : 0;
  static const char *const names[] = {"precision", "threshold", "edgeitems", "linewidth", "profile", "sci_mode", NULL};
  lpt_check_options(L, opts, "set_printoptions", names);
  lpt_state *S = lpt_state_fast(L);
  /* every option is checked on a copy, applied only when all are good */
  struct lpt_print_opts P = S->print;
  if (!P.set) {
    P.precision = FMT_PRECISION;
    P.threshold = FMT_THRESHOLD;
    P.edgeitems = FMT_EDGE;
    P.linewidth = FMT_LINEWIDTH;
  }
  P.set = true;
  P.sci_mode = 0;
  if (!opts) {
    S->print = P;
    return 0;
  }
  if (lua_getfield(L, opts, "profile") != LUA_TNIL) {
    const char *p = lua_tostring(L, -1);
    if (p && strcmp(p, "default") == 0) {
      P.precision = FMT_PRECISION, P.threshold = FMT_THRESHOLD;
      P.edgeitems = FMT_EDGE, P.linewidth = FMT_LINEWIDTH;
    } else if (p && strcmp(p, "short") == 0) {
      P.precision = 2, P.threshold = FMT_THRESHOLD;
      P.edgeitems = 2, P.linewidth = FMT_LINEWIDTH;
    } else if (p && strcmp(p, "full") == 0) {
      P.precision = FMT_PRECISION, P.threshold = INT64_MAX;
      P.edgeitems = FMT_EDGE, P.linewidth = FMT_LINEWIDTH;
    } else {
      return lpt_errorf(L, "set_printoptions: profile must be \"default\", \"short\" or \"full\", got %s",
                        lpt_error_text(L, -1));
    }
  }
  lua_pop(L, 1);
  lua_Integer v;
  if (print_int_opt(L, opts, "precision", 0, 30, &v)) P.precision = (int)v;
  if (print_int_opt(L, opts, "threshold", 0, INT64_MAX, &v)) P.threshold = v;
  if (print_int_opt(L, opts, "edgeitems", 1, 1000, &v)) P.edgeitems = (int)v;
  if (print_int_opt(L, opts, "linewidth", 10, 100000, &v)) P.linewidth = (int)v;
  int t = lua_getfield(L, opts, "sci_mode");
  if (t == LUA_TBOOLEAN) P.sci_mode = lua_toboolean(L, -1) ? 1 : -1;
  else if (t != LUA_TNIL)
    return lpt_errorf(L, "set_printoptions: sci_mode must be true, false or nil (automatic), got %s",
                      luaL_typename(L, -1));
  lua_pop(L, 1);
  S->print = P;
  return 0;
}

/* pt.get_printoptions() -> {precision=, threshold=, edgeitems=, linewidth=, sci_mode=} */
static int l_get_printoptions(lua_State *L) {
  const lpt_state *S = lpt_state_fast(L);
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, S->print.set ? S->print.precision : FMT_PRECISION);
  lua_setfield(L, -2, "precision");
  int64_t th = S->print.set ? S->print.threshold : FMT_THRESHOLD;
  if (th == INT64_MAX) lua_pushnumber(L, HUGE_VAL);
  else lua_pushinteger(L, th);
  lua_setfield(L, -2, "threshold");
  lua_pushinteger(L, S->print.set ? S->print.edgeitems : FMT_EDGE);
  lua_setfield(L, -2, "edgeitems");
  lua_pushinteger(L, S->print.set ? S->print.linewidth : FMT_LINEWIDTH);
  lua_setfield(L, -2, "linewidth");
  if (S->print.sci_mode) {
    lua_pushboolean(L, S->print.sci_mode > 0);
    lua_setfield(L, -2, "sci_mode");
  }
  return 1;
}

/* --- constructors --- */

static int check_nested(lua_State *L, int idx, int dim, int *ndim, int64_t *shape, bool *has_float,
                        bool *has_bool) {
  int t = lua_type(L, idx);
  if (t == LUA_TNUMBER || t == LUA_TBOOLEAN) {
    if (*ndim < 0) *ndim = dim;
    else if (*ndim != dim) return lpt_errorf(L, "tensor: nested table has inconsistent depth");
    if (t == LUA_TBOOLEAN) *has_bool = true;
    else if (!lua_isinteger(L, idx)) *has_float = true;
    return 0;
  }
  if (t != LUA_TTABLE)
    return lpt_errorf(L, "tensor: expected numbers or nested tables, found a %s", luaL_typename(L, idx));
  if (dim >= PT_MAX_DIMS) return lpt_errorf(L, "tensor: too many dimensions");
  int64_t n = (int64_t)lua_rawlen(L, idx);
  if (*ndim >= 0 && dim >= *ndim) return lpt_errorf(L, "tensor: nested table has inconsistent depth");
  if (shape[dim] < 0)
    shape[dim] = n;
  else if (shape[dim] != n)
    return lpt_errorf(L, "tensor: nested tables have different lengths (%d and %d at depth %d)",
                      (int)shape[dim], (int)n, dim + 1);
  luaL_checkstack(L, 2, "tensor");
  if (n == 0 && *ndim < 0) *ndim = dim + 1;
  for (int64_t i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, i);
    check_nested(L, lua_gettop(L), dim + 1, ndim, shape, has_float, has_bool);
    lua_pop(L, 1);
  }
  return 0;
}

/* false (with the value in *bad) at the first number that overflows t's dtype */
static bool fill_nested(lua_State *L, int idx, int dim, int ndim, pt_tensor *t, char **p, double *bad) {
  if (dim == ndim) {
    double v = lua_isboolean(L, idx) ? lua_toboolean(L, idx) : lua_tonumber(L, idx);
    if (t->dtype == PT_INT64 && lua_isinteger(L, idx)) {
      *(int64_t *)*p = lua_tointeger(L, idx);
    } else if (!pt_dtype_is_floating(t->dtype) && !pt_value_fits(t->dtype, v)) {
      /* (floats: pt.tensor({1e39}) is inf, as torch.tensor; full and fill_ refuse it) */
      *bad = v;
      return false;
    } else {
      pt_write_from_double(*p, t->dtype, v);
    }
    *p += pt_dtype_size(t->dtype);
    return true;
  }
  int64_t n = (int64_t)lua_rawlen(L, idx);
  for (int64_t i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, i);
    if (!fill_nested(L, lua_gettop(L), dim + 1, ndim, t, p, bad)) return false;
    lua_pop(L, 1);
  }
  return true;
}

/* A constructor's options table (idx 0: none) may hold only dtype and requires_grad: a
 * misspelled key would otherwise be ignored (requires_gard = true: no gradients). */
static void check_creation_opts(lua_State *L, int idx, const char *fname) {
  if (!idx || !lua_istable(L, idx)) return;
  static const char *const names[] = {"dtype", "requires_grad", NULL};
  lpt_check_options(L, idx, fname, names);
  pt_dtype dt;
  if (lua_getfield(L, idx, "dtype") != LUA_TNIL &&
      !(lua_type(L, -1) == LUA_TSTRING && pt_dtype_from_name(lua_tostring(L, -1), &dt)))
    lpt_errorf(L, "%s: unknown dtype '%s' (expected float32, float64, int64, int32, uint8 or bool)",
               fname, luaL_tolstring(L, -1, NULL));
  lua_pop(L, 1);
}

/* pt.tensor(nested_table_or_number, {dtype=, requires_grad=}) */
static int l_tensor(lua_State *L) {
  int ndim = -1;
  int64_t shape[PT_MAX_DIMS];
  for (int i = 0; i < PT_MAX_DIMS; i++) shape[i] = -1;
  bool has_float = false, has_bool = false;
  pt_tensor *src = lpt_test_tensor(L, 1);
  if (src) { /* pt.tensor(t[, {dtype=, requires_grad=}]): a copy without history, as torch's */
    check_creation_opts(L, lua_istable(L, 2) ? 2 : 0, "tensor");
    pt_dtype dt = lpt_opt_dtype(L, 2, src->dtype);
    bool rg = lpt_opt_bool(L, 2, "requires_grad", false);
    if (rg && !pt_dtype_is_floating(dt))
      return lpt_errorf(L, "tensor: only floating point tensors can require gradients (dtype %s)",
                        pt_dtype_name(dt));
    pt_tensor *r;
    if (dt == src->dtype ? pt_tensor_clone_raw(lpt_ctx(L), src, &r)
                         : pt_tensor_to_dtype_raw(lpt_ctx(L), src, dt, &r))
      return lpt_error(L);
    r->requires_grad = rg;
    lpt_push_tensor(L, r);
    return 1;
  }
  check_nested(L, 1, 0, &ndim, shape, &has_float, &has_bool);
  if (ndim < 0) ndim = 0;
  pt_dtype def = has_float ? pt_default_float() : (has_bool ? PT_BOOL : PT_INT64);
  /* Torch7 and most Lua users write numbers without a decimal point: default to the default
   * float dtype unless every value is an integer and the user asked for an integer dtype. */
  if (def == PT_INT64) def = pt_default_float();
  check_creation_opts(L, lua_istable(L, 2) ? 2 : 0, "tensor");
  pt_dtype dt = lpt_opt_dtype(L, 2, def);
  pt_tensor *t;
  if (pt_tensor_empty(lpt_ctx(L), dt, ndim, shape, &t)) return lpt_error(L);
  lpt_push_tensor(L, t);
  char *p = t->storage->data;
  double bad;
  if (!fill_nested(L, 1, 0, ndim, t, &p, &bad)) { /* t is on the stack: the collector frees it */
    pt_check_value_fits(lpt_ctx(L), "tensor", dt, bad);
    return lpt_error(L);
  }
  if (lpt_opt_bool(L, 2, "requires_grad", false)) {
    if (!pt_dtype_is_floating(dt))
      return lpt_errorf(L, "tensor: only floating point tensors can require gradients (dtype %s)",
                        pt_dtype_name(dt));
    t->requires_grad = true;
  }
  return 1;
}

/* Shared by the size-taking constructors: shape from args at 1.., options table last. */
static pt_tensor *new_sized(lua_State *L, const char *fname, pt_dtype def, int *opts_idx) {
  int64_t shape[PT_MAX_DIMS];
  int top = lua_gettop(L);
  int opts = 0;
  if (top >= 1 && lua_istable(L, top) && !(top == 1 && lua_rawlen(L, 1) > 0)) {
    /* a trailing table with string keys is the options table */
    lua_pushnil(L);
    if (lua_next(L, top)) {
      bool stringkey = lua_type(L, -2) == LUA_TSTRING;
      lua_pop(L, 2);
      if (stringkey) opts = top;
    } else if (top > 1) {
      opts = top;
    }
  }
  check_creation_opts(L, opts, fname);
  int ndim = lpt_check_shape(L, 1, shape);
  for (int i = 0; i < ndim; i++)
    if (shape[i] < 0) {
      lpt_errorf(L, "%s: invalid size %d for dimension %d", fname, (int)shape[i], i + 1);
    }
  pt_dtype dt = opts ? lpt_opt_dtype(L, opts, def) : def;
  pt_tensor *t;
  if (pt_tensor_empty(lpt_ctx(L), dt, ndim, shape, &t)) lpt_error(L);
  *opts_idx = opts;
  return t;
}

static int finish_new(lua_State *L, pt_tensor *t, int opts) {
  lpt_push_tensor(L, t);
  if (opts && lpt_opt_bool(L, opts, "requires_grad", false)) {
    if (!pt_dtype_is_floating(t->dtype))
      return lpt_errorf(L, "requires_grad: only floating point tensors can require gradients");
    t->requires_grad = true;
  }
  return 1;
}

static int l_empty(lua_State *L) {
  int opts;
  pt_tensor *t = new_sized(L, "empty", pt_default_float(), &opts);
  return finish_new(L, t, opts);
}

static int l_zeros(lua_State *L) {
  int opts;
  pt_tensor *t = new_sized(L, "zeros", pt_default_float(), &opts);
  pt_tensor_fill(lpt_ctx(L), t, 0.0);
  return finish_new(L, t, opts);
}

static int l_ones(lua_State *L) {
  int opts;
  pt_tensor *t = new_sized(L, "ones", pt_default_float(), &opts);
  pt_tensor_fill(lpt_ctx(L), t, 1.0);
  return finish_new(L, t, opts);
}

/* full(shape_table, value, opts) */
static int l_full(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  double v = lua_isboolean(L, 2) ? lua_toboolean(L, 2) : luaL_checknumber(L, 2);
  int64_t shape[PT_MAX_DIMS];
  int ndim = lpt_check_shape(L, 1, shape);
  pt_dtype def = lua_isboolean(L, 2) ? PT_BOOL : pt_default_float();
  check_creation_opts(L, lua_istable(L, 3) ? 3 : 0, "full");
  pt_dtype dt = lpt_opt_dtype(L, 3, def);
  lpt_check_value(L, "full", dt, 2, v);
  pt_tensor *t;
  if (pt_tensor_empty(lpt_ctx(L), dt, ndim, shape, &t)) return lpt_error(L);
  /* a Lua integer: every int64 exactly, float32 rounded once (as torch.full) */
  if (lua_isinteger(L, 2) && (dt == PT_INT64 || dt == PT_FLOAT32)) {
    if (pt_fill_number_(lpt_ctx(L), t, pt_number_int(lua_tointeger(L, 2)))) {
      pt_tensor_release(t);
      return lpt_error(L);
    }
  } else {
    pt_tensor_fill(lpt_ctx(L), t, v);
  }
  return finish_new(L, t, lua_istable(L, 3) ? 3 : 0);
}

static int like(lua_State *L, const char *fname, double v, bool fill) {
  pt_tensor *src = lpt_check_tensor(L, 1), *t;
  check_creation_opts(L, lua_istable(L, 2) ? 2 : 0, fname);
  pt_dtype dt = lpt_opt_dtype(L, 2, src->dtype);
  if (pt_tensor_empty(lpt_ctx(L), dt, src->ndim, src->shape, &t)) return lpt_error(L);
  if (fill) pt_tensor_fill(lpt_ctx(L), t, v);
  return finish_new(L, t, lua_istable(L, 2) ? 2 : 0);
}
static int l_zeros_like(lua_State *L) { return like(L, "zeros_like", 0, true); }
static int l_ones_like(lua_State *L) { return like(L, "ones_like", 1, true); }
static int l_empty_like(lua_State *L) { return like(L, "empty_like", 0, false); }

/* arange(stop) / arange(start, stop[, step]) -- stop exclusive, as PyTorch */
static int l_arange(lua_State *L) {
  int nargs = lua_gettop(L);
  int opts = nargs > 0 && lua_istable(L, nargs) ? nargs : 0;
  int nnum = opts ? nargs - 1 : nargs;
  double start = 0, stop, step = 1;
  bool all_int = true;
  for (int i = 1; i <= nnum; i++)
    if (!lua_isinteger(L, i)) all_int = false;
  if (nnum == 1) stop = luaL_checknumber(L, 1);
  else if (nnum >= 2) {
    start = luaL_checknumber(L, 1);
    stop = luaL_checknumber(L, 2);
    if (nnum >= 3) step = luaL_checknumber(L, 3);
  } else
    return luaL_error(L, "arange: expected arange(stop) or arange(start, stop[, step])");
  if (step == 0) return lpt_errorf(L, "arange: step must be nonzero");
  double count = ceil((stop - start) / step);
  if (count < 0) count = 0;
  if (count > 1e12) return lpt_errorf(L, "arange: too many elements");
  int64_t n = (int64_t)count;
  check_creation_opts(L, opts, "arange");
  pt_dtype dt = lpt_opt_dtype(L, opts, all_int ? PT_INT64 : pt_default_float());
  pt_tensor *t;
  if (pt_tensor_empty(lpt_ctx(L), dt, 1, &n, &t)) return lpt_error(L);
  for (int64_t i = 0; i < n; i++) pt_write_from_double((char *)t->storage->data + i * (int64_t)pt_dtype_size(dt), dt, start + (double)i * step);
  return finish_new(L, t, opts);
}

static int l_linspace(lua_State *L) {
  double a = luaL_checknumber(L, 1), b = luaL_checknumber(L, 2);
  lua_Integer n = luaL_checkinteger(L, 3);
  if (n < 0) return lpt_errorf(L, "linspace: number of steps must be non-negative, got %I", (LUAI_UACINT)n);
  check_creation_opts(L, lua_istable(L, 4) ? 4 : 0, "linspace");
  pt_dtype dt = lpt_opt_dtype(L, 4, pt_default_float());
  int64_t sz = n;
  pt_tensor *t;
  if (pt_tensor_empty(lpt_ctx(L), dt, 1, &sz, &t)) return lpt_error(L);
  for (int64_t i = 0; i < n; i++)
    pt_tensor_set_flat(t, i, n == 1 ? a : a + (b - a) * (double)i / (double)(n - 1));
  return finish_new(L, t, lua_istable(L, 4) ? 4 : 0);
}

static int l_eye(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  int opts = lua_istable(L, 2) ? 2 : (lua_istable(L, 3) ? 3 : 0);
  lua_Integer m = lua_isinteger(L, 2) ? lua_tointeger(L, 2) : n;
  if (n < 0 || m < 0) return lpt_errorf(L, "eye: sizes must be non-negative");
  check_creation_opts(L, opts, "eye");
  int64_t shape[2] = {n, m};
  pt_tensor *t;
  if (pt_tensor_zeros(lpt_ctx(L), lpt_opt_dtype(L, opts, pt_default_float()), 2, shape, &t)) return lpt_error(L);
  for (int64_t i = 0; i < n && i < m; i++) {
    int64_t idx[2] = {i, i};
    pt_tensor_set(t, idx, 1.0);
  }
  return finish_new(L, t, opts);
}

/* pt.set_default_dtype("float64") / pt.get_default_dtype(): torch's default floating dtype,
 * process-wide (the worker threads' states see it too) */
static int l_set_default_dtype(lua_State *L) {
  lpt_check_max_args(L, 1, "set_default_dtype");
  pt_dtype dt = lpt_check_dtype(L, 1);
  if (pt_set_default_float(lpt_ctx(L), dt)) return lpt_error(L);
  return 0;
}

static int l_get_default_dtype(lua_State *L) {
  lpt_check_max_args(L, 0, "get_default_dtype");
  lua_pushstring(L, pt_dtype_name(pt_default_float()));
  return 1;
}

static int l_rand(lua_State *L) {
  int opts;
  pt_tensor *t = new_sized(L, "rand", pt_default_float(), &opts);
  if (!pt_dtype_is_floating(t->dtype)) {
    pt_tensor_release(t);
    return lpt_errorf(L, "rand: dtype must be floating point");
  }
  pt_tensor_uniform_(lpt_ctx(L), t, 0.0, 1.0);
  return finish_new(L, t, opts);
}

static int l_randn(lua_State *L) {
  int opts;
  pt_tensor *t = new_sized(L, "randn", pt_default_float(), &opts);
  if (!pt_dtype_is_floating(t->dtype)) {
    pt_tensor_release(t);
    return lpt_errorf(L, "randn: dtype must be floating point");
  }
  pt_tensor_normal_(lpt_ctx(L), t, 0.0, 1.0);
  return finish_new(L, t, opts);
}

/* randint(low, high, shape_table[, opts]) or randint(high, shape_table) -- high exclusive */
static int l_randint(lua_State *L) {
  lua_Integer lo = 0, hi;
  int shape_idx;
  if (lua_istable(L, 2)) {
    hi = luaL_checkinteger(L, 1);
    shape_idx = 2;
  } else {
    lo = luaL_checkinteger(L, 1);
    hi = luaL_checkinteger(L, 2);
    shape_idx = 3;
  }
  luaL_checktype(L, shape_idx, LUA_TTABLE);
  int64_t shape[PT_MAX_DIMS];
  int ndim = lpt_check_shape(L, shape_idx, shape);
  check_creation_opts(L, lua_istable(L, shape_idx + 1) ? shape_idx + 1 : 0, "randint");
  pt_dtype dt = lpt_opt_dtype(L, shape_idx + 1, PT_INT64);
  if (hi <= lo) return lpt_errorf(L, "randint: empty range [%I, %I)", (LUAI_UACINT)lo, (LUAI_UACINT)hi);
  pt_tensor *t;
  if (pt_tensor_empty(lpt_ctx(L), dt, ndim, shape, &t)) return lpt_error(L);
  pt_tensor_randint_(lpt_ctx(L), t, lo, hi);
  return finish_new(L, t, 0);
}

/* randperm(n): a random permutation of 1..n (1-based, as Torch7) */
static int l_randperm(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  if (n < 0) return lpt_errorf(L, "randperm: n must be non-negative, got %I", (LUAI_UACINT)n);
  check_creation_opts(L, lua_istable(L, 2) ? 2 : 0, "randperm");
  pt_dtype dt = lpt_opt_dtype(L, 2, PT_INT64);
  int64_t sz = n;
  pt_tensor *t;
  if (pt_tensor_empty(lpt_ctx(L), PT_INT64, 1, &sz, &t)) return lpt_error(L);
  int64_t *p = t->storage->data;
  for (int64_t i = 0; i < n; i++) p[i] = i + 1;
  pt_rng *rng = &lpt_ctx(L)->rng;
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)pt_rng_below(rng, (uint64_t)i + 1);
    int64_t tmp = p[i];
    p[i] = p[j];
    p[j] = tmp;
  }
  if (dt != PT_INT64) {
    pt_tensor *r;
    pt_status st = pt_tensor_to_dtype_raw(lpt_ctx(L), t, dt, &r);
    pt_tensor_release(t);
    if (st) return lpt_error(L);
    t = r;
  }
  return finish_new(L, t, 0);
}

static int l_is_tensor(lua_State *L) {
  lua_pushboolean(L, lpt_test_tensor(L, 1) != NULL);
  return 1;
}

static const luaL_Reg tensor_methods[] = {
    {"size", t_size},
    {"stride", t_stride},
    {"dim", t_dim},
    {"nDimension", t_dim},
    {"numel", t_numel},
    {"nElement", t_numel},
    {"dtype", t_dtype},
    {"device", t_device},
    {"_storage_numel", t_storage_numel},
    {"detach_", t_detach_},
    {"is_contiguous", t_is_contiguous},
    {"is_same_storage", t_is_same_storage},
    {"storage_offset", t_storage_offset},
    {"share_memory_", t_share_memory_},
    {"is_shared", t_is_shared},
    {"item", t_item},
    {"tolist", t_tolist},
    {"float", t_float},
    {"double", t_double},
    {"long", t_long},
    {"int", t_int},
    {"byte", t_byte},
    {"bool", t_bool},
    {"to", t_to},
    {"fill_", t_fill_},
    {"zero_", t_zero_},
    {NULL, NULL},
};

static const luaL_Reg tensor_metamethods[] = {
    {"__close", t_close},
    {"__len", t_len},
    {"__tostring", t_tostring},
    {"__eq", t_eq},
    {NULL, NULL},
};

static const luaL_Reg tensor_functions[] = {
    {"tensor", l_tensor},
    {"empty", l_empty},
    {"zeros", l_zeros},
    {"ones", l_ones},
    {"full", l_full},
    {"zeros_like", l_zeros_like},
    {"ones_like", l_ones_like},
    {"empty_like", l_empty_like},
    {"arange", l_arange},
    {"linspace", l_linspace},
    {"eye", l_eye},
    {"rand", l_rand},
    {"randn", l_randn},
    {"randint", l_randint},
    {"randperm", l_randperm},
    {"is_tensor", l_is_tensor},
    {"set_printoptions", l_set_printoptions},
    {"get_printoptions", l_get_printoptions},
    {"set_default_dtype", l_set_default_dtype},
    {"get_default_dtype", l_get_default_dtype},
    {NULL, NULL},
};

static const char *const tensor_docs[] = {
    "tensor", "pt.tensor(values[, {dtype=, requires_grad=}]) -> Tensor\n  From a number or nested tables: pt.tensor({{1,2},{3,4}}). Default dtype: pt.get_default_dtype() (float32).",
    "set_default_dtype", "pt.set_default_dtype(\"float64\" or \"float32\"): the floating dtype of new tensors made without a dtype\n"
    "  (pt.tensor of numbers, zeros, ones, rand, randn, arange of non-integers, linspace, eye, full, the\n"
    "  nn layers' parameters) and of integer inputs promoted to floating (int / int, sqrt of an int\n"
    "  tensor, an int tensor times 0.5), as torch.set_default_dtype. Process-wide: worker threads see it.",
    "get_default_dtype", "pt.get_default_dtype() -> \"float32\" (the default) or \"float64\": see pt.set_default_dtype.",
    "empty", "pt.empty(size...[, {dtype=}]) -> Tensor with uninitialised values.",
    "zeros", "pt.zeros(size...[, {dtype=, requires_grad=}]) -> Tensor of zeros: pt.zeros(2, 3) or pt.zeros({2, 3}).",
    "ones", "pt.ones(size...[, {dtype=, requires_grad=}]) -> Tensor of ones.",
    "full", "pt.full(size_table, value[, {dtype=}]) -> Tensor filled with value.",
    "zeros_like", "pt.zeros_like(t[, {dtype=}]) -> zeros with t's shape and dtype.",
    "ones_like", "pt.ones_like(t[, {dtype=}]) -> ones with t's shape and dtype.",
    "empty_like", "pt.empty_like(t[, {dtype=}]) -> uninitialised tensor with t's shape.",
    "arange", "pt.arange([start,] stop[, step][, {dtype=}]) -> 1-D Tensor start, start+step, ... (stop excluded).\n  int64 when all arguments are integers, float32 otherwise.",
    "linspace", "pt.linspace(a, b, n[, {dtype=}]) -> n evenly spaced values from a to b inclusive.",
    "eye", "pt.eye(n[, m][, {dtype=}]) -> identity matrix.",
    "rand", "pt.rand(size...[, {dtype=}]) -> uniform [0,1) values from the state's generator (pt.manual_seed).",
    "randn", "pt.randn(size...[, {dtype=}]) -> standard normal values.",
    "randint", "pt.randint([low,] high, size_table[, {dtype=}]) -> integers in [low, high) (high excluded).",
    "randperm", "pt.randperm(n) -> int64 permutation of 1..n.",
    "is_tensor", "pt.is_tensor(x) -> true when x is a Tensor.",
    "manual_seed", "pt.manual_seed(n): seed this Lua state's random generator.",
    "set_printoptions", "pt.set_printoptions{precision=4, threshold=1000, edgeitems=3, linewidth=80, profile=, sci_mode=}\n"
    "  How tensors print in this Lua state, as torch.set_printoptions: digits after the point, the\n"
    "  element count above which each long dimension shows only edgeitems entries at each end\n"
    "  (math.huge: never), the line width; profile \"default\", \"short\" (precision 2, edgeitems 2) or\n"
    "  \"full\" (no summarising) is applied first. sci_mode = true or false forces scientific notation\n"
    "  on or off; left out, the choice is automatic again (as torch).",
    "get_printoptions", "pt.get_printoptions() -> the current print options as a table (sci_mode only when forced).",
    NULL, NULL,
};

static const char *const method_docs[] = {
    "size", "t:size([dim]) -> table of sizes, or the size of dimension dim (1-based).",
    "dim", "t:dim() -> number of dimensions.",
    "numel", "t:numel() -> number of elements.",
    "dtype", "t:dtype() -> \"float32\", \"float64\", \"int64\", \"int32\", \"uint8\" or \"bool\".",
    "item", "t:item() -> the value of a one-element tensor as a Lua number.",
    "tolist", "t:tolist() -> nested Lua tables of values.",
    "float", "t:float() -> float32 copy (t itself when already float32).",
    "double", "t:double() -> float64 copy.",
    "long", "t:long() -> int64 copy.",
    "to", "t:to(dtype_or_device) -> converted tensor, or a copy on another device (t itself when\n  already there); \"cuda\" raises without a GPU backend (see pt.cuda.is_available()).",
    "fill_", "t:fill_(v) -> t, every element set to v.",
    "zero_", "t:zero_() -> t, every element set to 0.",
    "int", "t:int() -> int32 copy.",
    "byte", "t:byte() -> uint8 copy.",
    "bool", "t:bool() -> bool copy (nonzero -> true).",
    "device", "t:device() -> \"cpu\" (or \"cuda:N\").",
    "stride", "t:stride([dim]) -> table of strides in elements, or the stride of dimension dim.",
    "storage_offset", "t:storage_offset() -> 1-based position of t's first element in its storage.",
    "is_contiguous", "t:is_contiguous() -> true when t's elements are laid out row-major without gaps.",
    "detach_", "t:detach_() -> t, taken out of the graph in place: no history, requires_grad false (a leaf),\n"
    "  as torch's Tensor.detach_. Views are refused (as torch: use t:detach()).",
    "is_same_storage", "t:is_same_storage(u) -> true when t and u view the same storage (views share it).",
    "share_memory_", "t:share_memory_() -> t, its storage moved into shared memory (once; views share it): processes\n"
    "  forked afterwards (inbatch_parallel's process target) read and write the same bytes, so their\n"
    "  in-place writes (t:add_(...), t[i] = v, an optimizer step) are seen by the caller and by each\n"
    "  other (Hogwild training: model:share_memory()). Call it before the processes start and while\n"
    "  no worker thread uses t. Concurrent writes to one element are not ordered.",
    "is_shared", "t:is_shared() -> true when t's storage is in shared memory (t:share_memory_(), or a tensor\n"
    "  returned by a process worker).",
    NULL, NULL,
};

void lpt_open_tensor(lua_State *L) {
  luaL_newmetatable(L, LPT_TENSOR);
  lua_pushvalue(L, -1);
  lpt_get_state(L)->tensor_mt_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_pushliteral(L, "Tensor");
  lua_setfield(L, -2, "__name");
  luaL_setfuncs(L, tensor_metamethods, 0);
  if (!lpt_boxes_freed_by_allocator(L)) {
    lua_pushcfunction(L, t_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_getfield(L, LUA_REGISTRYINDEX, LPT_METHODS);
  lua_pushcclosure(L, t_index, 1);
  lua_setfield(L, -2, "__index");
  /* the fields t_index provides besides the methods (the REPL completes t.gr<TAB> from here) */
  static const char *const fields[] = {"grad", "requires_grad", "is_leaf", "grad_fn", "shape",
                                       "ndim", "data", "is_cuda", "T", "mT", "H", "mH"};
  lua_createtable(L, (int)(sizeof fields / sizeof *fields), 0);
  for (int i = 0; i < (int)(sizeof fields / sizeof *fields); i++) {
    lua_pushstring(L, fields[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "__fields");
  lua_getfield(L, LUA_REGISTRYINDEX, LPT_METHODS);
  lua_pushcclosure(L, t_newindex, 1);
  lua_setfield(L, -2, "__newindex");
  lua_pop(L, 1);
  lpt_add_methods(L, tensor_methods);
  lpt_add_functions(L, tensor_functions);
  lua_getfield(L, LUA_REGISTRYINDEX, LPT_MODULE);
  static const luaL_Reg cuda_functions[] = {
      {"is_available", l_cuda_is_available},
      {"device_count", l_cuda_device_count},
      {NULL, NULL},
  };
  luaL_newlib(L, cuda_functions);
  lua_getfield(L, -2, "_docs"); /* docs, keyed by function, as lpt_add_docs does */
  lua_getfield(L, -2, "is_available");
  lua_pushliteral(L, "pt.cuda.is_available() -> whether a GPU backend found a CUDA device "
                     "(false in this build: kernels/README.md).");
  lua_rawset(L, -3);
  lua_getfield(L, -2, "device_count");
  lua_pushliteral(L, "pt.cuda.device_count() -> the number of CUDA devices partrain can use (0 "
                     "without a GPU backend).");
  lua_rawset(L, -3);
  lua_pop(L, 1);
  lua_setfield(L, -2, "cuda");
  lua_pop(L, 1);
  lpt_add_docs(L, 0, tensor_docs);
  lpt_add_docs(L, 1, method_docs);
}
