/* Data, checkpoints and progress helpers from Lua. The Lua modules partrain.data,
 * partrain.checkpoint, partrain.metrics and partrain.progress build on these pt._data_* entry
 * points; users normally call those modules, not these functions. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lib/checkpoint.h"
#include "../lib/data.h"
#include "lpt.h"

#define INTERRUPT_KEY "partrain.data.interrupt"

static void push_new(lua_State *L, pt_tensor *t) { lpt_push_tensor(L, t); }

/* --- files --- */

static int l_read_idx(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  pt_tensor *t;
  if (pt_idx_read(lpt_ctx(L), path, &t)) return lpt_error(L);
  push_new(L, t);
  return 1;
}

static int l_class_index(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *o;
  lua_Integer off = luaL_optinteger(L, 2, 1);
  if (pt_data_class_index(lpt_ctx(L), t, off, &o)) return lpt_error(L);
  push_new(L, o);
  return 1;
}

static void push_strings(lua_State *L, char **s, int n) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, s[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

/* (r) -> _data_read_csv's four values; the tensors move out of r as they are pushed. Runs under
 * a protected call: a memory error leaves the rest in r, freed by the caller. */
static int csv_push(lua_State *L) {
  pt_csv_result *r = lua_touserdata(L, 1);
  lpt_push_tensor(L, r->features);
  r->features = NULL;
  if (r->labels) {
    lpt_push_tensor(L, r->labels);
    r->labels = NULL;
  } else {
    lua_pushnil(L);
  }
  if (r->header) push_strings(L, r->header, r->ncols);
  else lua_pushnil(L);
  if (r->class_names) push_strings(L, r->class_names, r->n_classes);
  else lua_pushnil(L);
  return 4;
}

/* _data_read_csv(path, header, label (name | 1-based index, negative from the end | nil), offset)
 * -> features, labels|nil, header names|nil, class names|nil */
static int l_read_csv(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  pt_csv_opts o = {.has_header = lua_toboolean(L, 2)};
  if (lua_type(L, 3) == LUA_TSTRING) {
    o.label_name = lua_tostring(L, 3);
    o.has_label = true;
  } else if (!lua_isnoneornil(L, 3)) {
    o.label_index = luaL_checkinteger(L, 3); /* any value: out of range ones fail with the file's column count */
    o.has_label = true;
  }
  o.label_offset = luaL_optinteger(L, 4, 0);
  pt_csv_result r;
  if (pt_csv_read_opts(lpt_ctx(L), path, &o, &r)) return lpt_error(L);
  lua_pushcfunction(L, csv_push);
  lua_pushlightuserdata(L, &r);
  int status = lua_pcall(L, 1, 4, 0);
  pt_csv_result_free(&r); /* and what a memory error left unpushed */
  if (status != LUA_OK) return lua_error(L);
  return 4;
}

/* --- batches --- */

/* idx: int64 tensor of 1-based indices; reads idx[first .. first+count-1] into a 0-based array */
static int64_t *index_slice(lua_State *L, int arg, lua_Integer first, lua_Integer count) {
  pt_tensor *idx = lpt_check_tensor(L, arg);
  if (idx->dtype != PT_INT64 || idx->ndim != 1 || !pt_tensor_is_contiguous(idx))
    lpt_errorf(L, "gather: indices must be a contiguous 1-D int64 tensor");
  if (first < 1 || count < 0 || first - 1 + count > idx->shape[0])
    lpt_errorf(L, "gather: index range %d..%d out of range 1..%d", (int)first, (int)(first + count - 1),
               (int)idx->shape[0]);
  int64_t *out = lua_newuserdatauv(L, (size_t)(count ? count : 1) * sizeof(int64_t), 0);
  const int64_t *src = (const int64_t *)pt_tensor_data(idx) + (first - 1);
  for (lua_Integer i = 0; i < count; i++) out[i] = src[i] - 1;
  return out; /* stays on the stack, collected with it */
}

/* a fresh contiguous {1, ...} tensor we own alone -> {...} */
static void drop_leading_dim(pt_tensor *o) {
  for (int d = 1; d < o->ndim; d++) {
    o->shape[d - 1] = o->shape[d];
    o->stride[d - 1] = o->stride[d];
  }
  o->ndim--;
}

/* _data_gather(src, indices, first, count[, {dtype=, scale=, shape=, sample=}]) -> batch
 * (sample = true with count 1: one sample without the batch dimension) */
static int l_gather(lua_State *L) {
  pt_tensor *src = lpt_check_tensor(L, 1);
  lua_Integer first = luaL_checkinteger(L, 3), count = luaL_checkinteger(L, 4);
  int opts = lua_istable(L, 5) ? 5 : 0;
  pt_dtype dt = lpt_opt_dtype(L, opts, src->dtype);
  double scale = 1.0;
  int64_t shape[PT_MAX_DIMS];
  int nd = -1;
  if (opts) {
    if (lua_getfield(L, opts, "scale") != LUA_TNIL) scale = luaL_checknumber(L, -1);
    lua_pop(L, 1);
    if (lua_getfield(L, opts, "shape") != LUA_TNIL) nd = lpt_check_shape(L, lua_gettop(L), shape);
    lua_pop(L, 1);
  }
  bool sample = lpt_opt_bool(L, opts, "sample", false);
  int64_t *index = index_slice(L, 2, first, count);
  pt_tensor *o;
  if (pt_data_gather(lpt_ctx(L), src, index, count, dt, scale, nd, shape, &o)) return lpt_error(L);
  if (sample && count == 1) drop_leading_dim(o);
  push_new(L, o);
  return 1;
}

/* _data_take(base, indices, first, count) -> int64 {count}: base[indices[first..]] (1-based) */
static int l_take(lua_State *L) {
  pt_tensor *base = lpt_check_tensor(L, 1);
  lua_Integer first = luaL_checkinteger(L, 3), count = luaL_checkinteger(L, 4);
  int64_t *index = index_slice(L, 2, first, count);
  pt_tensor *o;
  if (pt_data_gather(lpt_ctx(L), base, index, count, PT_INT64, 1.0, -1, NULL, &o)) return lpt_error(L);
  push_new(L, o);
  return 1;
}

/* collate errors carry no position: they are about the dataset's samples, not a line of code */
static int collate_fail(lua_State *L, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  return lua_error(L);
}

/* what the value at idx is, for messages: "a tensor", "a number", "a table", "nothing", ... */
static const char *kind_of(lua_State *L, int idx) {
  switch (lua_type(L, idx)) {
  case LUA_TNIL: case LUA_TNONE: return "nothing";
  case LUA_TNUMBER: return "a number";
  case LUA_TSTRING: return "a string";
  case LUA_TTABLE: return "a table";
  case LUA_TBOOLEAN: return "a boolean";
  case LUA_TFUNCTION: return "a function";
  default: return lpt_test_tensor(L, idx) ? "a tensor" : "a userdata";
  }
}

/* One leaf of a batch: the dataset index of batch entry i (1-based) and the key path */
typedef struct stack_where {
  const int64_t *perm; /* 1-based dataset indices of the batch (NULL: entry i is sample i) */
  const char *path;    /* "" for the whole sample */
} stack_where;

static long long sample_of(const stack_where *w, lua_Integer i) {
  return w->perm ? (long long)w->perm[i - 1] : (long long)i;
}

/* "collate: sample 7 has <a> at key x, sample 3 <b>"; for a whole sample (path "") "sample 7 is
 * <a>, ..." or, with has, "sample 7 has <a>, ..." */
static int stack_mismatch(lua_State *L, const stack_where *w, lua_Integer i, bool has, const char *what,
                          const char *ref_what) {
  char a[32], b[32];
  snprintf(a, sizeof a, "%lld", sample_of(w, i));
  snprintf(b, sizeof b, "%lld", sample_of(w, 1));
  if (!w->path[0])
    return collate_fail(L, "collate: sample %s %s %s, sample %s %s", a, has ? "has" : "is", what, b, ref_what);
  return collate_fail(L, "collate: sample %s has %s at key %s, sample %s %s", a, what, w->path, b, ref_what);
}

/* _data_stack(list[, perm, first, path]) -> tensor {n, ...}; a list of numbers gives int64 (all
 * integers) or float32. perm (int64 tensor of 1-based dataset indices) with first tells the
 * dataset index of each entry and path the key path of the leaf, for messages. */
static int l_stack(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 1);
  if (n < 1) return lpt_errorf(L, "collate: empty batch");
  stack_where w = {NULL, luaL_optstring(L, 4, "")};
  if (!lua_isnoneornil(L, 2)) {
    pt_tensor *perm = lpt_check_tensor(L, 2);
    lua_Integer first = luaL_checkinteger(L, 3);
    if (perm->dtype != PT_INT64 || perm->ndim != 1 || !pt_tensor_is_contiguous(perm) || first < 1 ||
        first - 1 + n > perm->shape[0])
      return lpt_errorf(L, "collate: bad permutation");
    w.perm = (const int64_t *)pt_tensor_data(perm) + (first - 1);
  }
  lua_geti(L, 1, 1);
  int first_type = lua_type(L, -1);
  lua_pop(L, 1);
  pt_ctx *ctx = lpt_ctx(L);
  if (first_type == LUA_TNUMBER || first_type == LUA_TBOOLEAN) { /* booleans: a bool {B}, as torch */
    bool ints = true, bools = first_type == LUA_TBOOLEAN;
    for (lua_Integer i = 1; i <= n; i++) {
      lua_geti(L, 1, i);
      if (lua_type(L, -1) != first_type)
        return stack_mismatch(L, &w, i, false, kind_of(L, -1), bools ? "a boolean" : "a number");
      if (!bools && !lua_isinteger(L, -1)) ints = false;
      lua_pop(L, 1);
    }
    int64_t shape[1] = {n};
    pt_tensor *o;
    if (pt_tensor_empty(ctx, bools ? PT_BOOL : ints ? PT_INT64 : PT_FLOAT32, 1, shape, &o)) return lpt_error(L);
    push_new(L, o); /* owned by Lua before the second pass, whose lua_geti may raise */
    for (lua_Integer i = 1; i <= n; i++) {
      lua_geti(L, 1, i);
      if (bools) ((uint8_t *)pt_tensor_data(o))[i - 1] = (uint8_t)lua_toboolean(L, -1);
      else if (ints) ((int64_t *)pt_tensor_data(o))[i - 1] = lua_tointeger(L, -1);
      else ((float *)pt_tensor_data(o))[i - 1] = (float)lua_tonumber(L, -1);
      lua_pop(L, 1);
    }
    return 1;
  }
  pt_tensor **items = lua_newuserdatauv(L, (size_t)n * sizeof(pt_tensor *), 0);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    items[i - 1] = lpt_test_tensor(L, -1);
    if (!items[i - 1]) {
      if (i > 1) return stack_mismatch(L, &w, i, false, kind_of(L, -1), "a tensor");
      char a[32];
      snprintf(a, sizeof a, "%lld", sample_of(&w, 1));
      if (!w.path[0])
        return collate_fail(L, "collate: sample %s is %s, expected a tensor or a number", a, kind_of(L, -1));
      return collate_fail(L, "collate: sample %s has %s at key %s, expected a tensor or a number", a,
                          kind_of(L, -1), w.path);
    }
    lua_pop(L, 1); /* still referenced by the list */
    const pt_tensor *t = items[i - 1], *f = items[0];
    if (t->ndim != f->ndim || memcmp(t->shape, f->shape, (size_t)f->ndim * sizeof(int64_t))) {
      char a[PT_SHAPE_STR_MAX + 8], b[PT_SHAPE_STR_MAX + 8], s[PT_SHAPE_STR_MAX];
      snprintf(a, sizeof a, "shape %s", pt_shape_format(t->ndim, t->shape, s, sizeof s));
      snprintf(b, sizeof b, "shape %s", pt_shape_format(f->ndim, f->shape, s, sizeof s));
      return stack_mismatch(L, &w, i, true, a, b);
    }
    if (t->dtype != f->dtype) {
      char a[64], b[64];
      snprintf(a, sizeof a, "dtype %s", pt_dtype_name(t->dtype));
      snprintf(b, sizeof b, "dtype %s", pt_dtype_name(f->dtype));
      return stack_mismatch(L, &w, i, true, a, b);
    }
  }
  pt_tensor *o;
  if (pt_data_stack(ctx, items, n, &o)) return lpt_error(L);
  push_new(L, o);
  return 1;
}

/* _data_permutation(n, seed, epoch, shuffle) -> int64 {n} of 1-based indices */
static int l_permutation(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  lua_Integer seed = luaL_checkinteger(L, 2), epoch = luaL_checkinteger(L, 3);
  bool shuffle = lua_toboolean(L, 4);
  if (n < 0) return lpt_errorf(L, "permutation: negative length %d", (int)n);
  int64_t shape[1] = {n};
  pt_tensor *o;
  if (pt_tensor_empty(lpt_ctx(L), PT_INT64, 1, shape, &o)) return lpt_error(L);
  int64_t *p = pt_tensor_data(o);
  if (shuffle) pt_data_permutation(p, n, (uint64_t)seed, (uint64_t)epoch);
  else
    for (int64_t i = 0; i < n; i++) p[i] = i;
  for (int64_t i = 0; i < n; i++) p[i] += 1;
  push_new(L, o);
  return 1;
}

/* --- transforms --- */

static int read_stats(lua_State *L, int idx, double *out, int max, const char *what) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    out[0] = lua_tonumber(L, idx);
    return 1;
  }
  if (!lua_istable(L, idx)) return lpt_errorf(L, "normalize: %s must be a number or a list of numbers", what);
  int n = (int)luaL_len(L, idx);
  if (n < 1 || n > max) return lpt_errorf(L, "normalize: %s must have 1 to %d entries", what, max);
  for (int i = 0; i < n; i++) {
    lua_geti(L, idx, i + 1);
    if (lua_type(L, -1) != LUA_TNUMBER) return lpt_errorf(L, "normalize: %s entry %d is not a number", what, i + 1);
    out[i] = lua_tonumber(L, -1);
    lua_pop(L, 1);
  }
  return n;
}

/* _data_normalize_(x, channels, mean, std) -> x */
static int l_normalize_(lua_State *L) {
  pt_tensor *x = lpt_check_tensor(L, 1);
  lua_Integer ch = luaL_checkinteger(L, 2);
  double mean[64], std[64];
  int nm = read_stats(L, 3, mean, 64, "mean"), ns = read_stats(L, 4, std, 64, "std");
  if (nm != ns) return lpt_errorf(L, "normalize: %d means but %d stds", nm, ns);
  if (pt_data_normalize_(lpt_ctx(L), x, ch, mean, std, nm)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

/* _data_random_flip_(x, C, H, W, p) -> x */
static int l_random_flip_(lua_State *L) {
  pt_tensor *x = lpt_check_tensor(L, 1);
  if (pt_data_random_flip_(lpt_ctx(L), x, luaL_checkinteger(L, 2), luaL_checkinteger(L, 3),
                           luaL_checkinteger(L, 4), luaL_checknumber(L, 5)))
    return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

/* _data_random_crop(x, C, H, W, size, padding[, flatten]) -> new {B, C, size, size} or {B, C*size*size} */
static int l_random_crop(lua_State *L) {
  pt_tensor *x = lpt_check_tensor(L, 1), *o;
  bool flatten = lua_toboolean(L, 7);
  if (pt_data_random_crop(lpt_ctx(L), x, luaL_checkinteger(L, 2), luaL_checkinteger(L, 3),
                          luaL_checkinteger(L, 4), luaL_checkinteger(L, 5), luaL_checkinteger(L, 6), &o))
    return lpt_error(L);
  if (flatten) { /* fresh and contiguous: {B, C, s, s} -> {B, C*s*s} */
    o->shape[1] *= o->shape[2] * o->shape[3];
    o->ndim = 2;
    pt_contiguous_strides(2, o->shape, o->stride);
  }
  push_new(L, o);
  return 1;
}

static int l_one_hot(lua_State *L) {
  pt_tensor *y = lpt_check_tensor(L, 1), *o;
  if (pt_data_one_hot(lpt_ctx(L), y, luaL_checkinteger(L, 2), &o)) return lpt_error(L);
  push_new(L, o);
  return 1;
}

/* --- metrics --- */

/* _data_count_correct(logits, labels[, fname]) -> correct, total; a label outside 1..C (C: the
 * scores' columns) raises "<fname>: label 0 out of range 1..C", as confusion_matrix does */
static int l_count_correct(lua_State *L) {
  pt_tensor *logits = lpt_check_tensor(L, 1), *labels = lpt_check_tensor(L, 2);
  const char *fname = luaL_optstring(L, 3, "count_correct");
  int64_t correct, total;
  if (pt_data_count_correct(lpt_ctx(L), logits, labels, &correct, &total)) return lpt_error(L);
  int64_t C = logits->shape[logits->ndim - 1];
  for (int64_t b = 0; b < total; b++) {
    double lv = pt_tensor_get_flat(labels, b);
    if (!(lv >= 1 && lv <= (double)C) || lv != floor(lv)) {
      char v[32], c[32];
      snprintf(v, sizeof v, "%g", lv);
      snprintf(c, sizeof c, "%lld", (long long)C);
      return lpt_errorf(L, "%s: label %s out of range 1..%s", fname, v, c);
    }
  }
  lua_pushinteger(L, correct);
  lua_pushinteger(L, total);
  return 2;
}

static int l_confusion_add(lua_State *L) {
  pt_tensor *cm = lpt_check_tensor(L, 1), *logits = lpt_check_tensor(L, 2),
            *labels = lpt_check_tensor(L, 3);
  if (pt_data_confusion_add(lpt_ctx(L), cm, logits, labels)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

/* --- terminal, clock, interrupts --- */

static int l_isatty(lua_State *L) {
  lua_pushboolean(L, isatty((int)luaL_optinteger(L, 1, 1)));
  return 1;
}

static int l_now(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (double)ts.tv_sec + ts.tv_nsec * 1e-9);
  return 1;
}

/* -> true once when a stop was requested (Ctrl-C through the host, or _data_request_interrupt);
 * the flag is cleared so a caught "interrupted" error does not stop the next loop too */
static int l_interrupted(lua_State *L) {
  pt_ctx *ctx = lpt_ctx(L);
  bool v = ctx->interrupted && *ctx->interrupted;
  if (v) *ctx->interrupted = 0;
  lua_pushboolean(L, v);
  return 1;
}

static int l_request_interrupt(lua_State *L) {
  pt_ctx *ctx = lpt_ctx(L);
  if (!ctx->interrupted) {
    /* no host flag: this state gets its own, kept alive by the registry */
    volatile sig_atomic_t *flag = lua_newuserdatauv(L, sizeof *flag, 0);
    *flag = 0;
    lua_setfield(L, LUA_REGISTRYINDEX, INTERRUPT_KEY);
    ctx->interrupted = flag;
  }
  *ctx->interrupted = 1;
  return 0;
}


/* --- checkpoints --- */

/* _save(path, names, tensors, meta_keys, meta_values[, floats, n_floats]): floats "F16" or "BF16"
 * stores the floating point tensors among the first n_floats in that format */
static int l_save(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TTABLE);
  luaL_checktype(L, 4, LUA_TTABLE);
  luaL_checktype(L, 5, LUA_TTABLE);
  int n = (int)luaL_len(L, 2), nm = (int)luaL_len(L, 4);
  if ((int)luaL_len(L, 3) != n || (int)luaL_len(L, 5) != nm)
    return lpt_errorf(L, "save: names and values differ in length");
  lua_settop(L, 7); /* the scratch below goes above the optional arguments */
  const char **names = lua_newuserdatauv(L, (size_t)(n + 1) * sizeof(char *), 0);
  pt_tensor **ts = lua_newuserdatauv(L, (size_t)(n + 1) * sizeof(pt_tensor *), 0);
  const char **keys = lua_newuserdatauv(L, (size_t)(nm + 1) * sizeof(char *), 0);
  const char **vals = lua_newuserdatauv(L, (size_t)(nm + 1) * sizeof(char *), 0);
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 2, i + 1);
    names[i] = lua_tostring(L, -1);
    if (!names[i]) return lpt_errorf(L, "save: tensor name %d is not a string", i + 1);
    lua_pop(L, 1); /* the string stays alive in the table */
    lua_rawgeti(L, 3, i + 1);
    ts[i] = lpt_test_tensor(L, -1);
    if (!ts[i]) return lpt_errorf(L, "save: value of '%s' is a %s, not a tensor", names[i], luaL_typename(L, -1));
    lua_pop(L, 1);
  }
  for (int i = 0; i < nm; i++) {
    lua_rawgeti(L, 4, i + 1);
    keys[i] = lua_tostring(L, -1);
    lua_pop(L, 1);
    lua_rawgeti(L, 5, i + 1);
    vals[i] = lua_tostring(L, -1);
    lua_pop(L, 1);
    if (!keys[i] || !vals[i]) return lpt_errorf(L, "save: metadata entry %d is not a pair of strings", i + 1);
  }
  const char *floats = luaL_optstring(L, 6, NULL);
  pt_st_format fmt = PT_ST_NATIVE;
  if (floats && strcmp(floats, "F16") == 0) fmt = PT_ST_F16;
  else if (floats && strcmp(floats, "BF16") == 0) fmt = PT_ST_BF16;
  else if (floats) return lpt_errorf(L, "save: unknown storage format '%s'", floats);
  lua_Integer n_floats = luaL_optinteger(L, 7, n);
  if (n_floats < 0 || n_floats > n) n_floats = n;
  if (pt_st_write_as(lpt_ctx(L), path, n, names, ts, nm, keys, vals, fmt, (int)n_floats)) return lpt_error(L);
  return 0;
}

/* (st) -> the three tables of _load; each tensor moves out of st as it is pushed. Runs under a
 * protected call: a memory error leaves the rest in st, freed by the caller. */
static int load_push(lua_State *L) {
  pt_safetensors *st = lua_touserdata(L, 1);
  lua_createtable(L, 0, st->n);
  lua_createtable(L, 0, st->n_meta);
  lua_createtable(L, st->n, 0);
  for (int i = 0; i < st->n; i++) {
    lua_pushstring(L, st->entries[i].name);
    lua_rawseti(L, -2, i + 1);
    lpt_push_tensor(L, st->entries[i].tensor);
    st->entries[i].tensor = NULL;
    lua_setfield(L, -4, st->entries[i].name);
  }
  for (int i = 0; i < st->n_meta; i++) {
    lua_pushstring(L, st->meta_values[i]);
    lua_setfield(L, -3, st->meta_keys[i]);
  }
  return 3;
}

/* _load(path) -> {name = tensor}, {key = string}, {names in file order} */
static int l_load(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  pt_safetensors st;
  if (pt_st_read(lpt_ctx(L), path, &st)) return lpt_error(L);
  lua_pushcfunction(L, load_push);
  lua_pushlightuserdata(L, &st);
  int status = lua_pcall(L, 1, 3, 0);
  pt_st_free(&st); /* and the tensors a memory error left unpushed */
  if (status != LUA_OK) return lua_error(L);
  return 3;
}

static const luaL_Reg functions[] = {
    {"_data_read_idx", l_read_idx},
    {"_data_class_index", l_class_index},
    {"_data_read_csv", l_read_csv},
    {"_data_gather", l_gather},
    {"_data_take", l_take},
    {"_data_stack", l_stack},
    {"_data_permutation", l_permutation},
    {"_data_normalize_", l_normalize_},
    {"_data_random_flip_", l_random_flip_},
    {"_data_random_crop", l_random_crop},
    {"_data_one_hot", l_one_hot},
    {"_data_count_correct", l_count_correct},
    {"_data_confusion_add", l_confusion_add},
    {"_data_interrupted", l_interrupted},
    {"_data_request_interrupt", l_request_interrupt},
    {"_data_now", l_now},
    {"_isatty", l_isatty},
    {"_save", l_save},
    {"_load", l_load},
    {NULL, NULL},
};

void lpt_open_data(lua_State *L) {
  lpt_add_functions(L, functions);
}
