/* Bindings of the convolution family (lib/conv.h): pt.conv2d, pt.conv_transpose2d, pt.max_pool2d,
 * pt.conv_transpose3d, pt.avg_pool2d, pt.adaptive_avg_pool2d, pt.adaptive_max_pool2d, pt._max_unpool2d, pt.batch_norm,
 * pt.dropout2d, pt.upsample_nearest2d. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../lib/conv.h"
#include "lpt.h"

/* the integer at idx as an int; a Lua integer beyond int's range is an error, not truncated */
static int int_at(lua_State *L, int idx, const char *fname, const char *what) {
  lua_Integer v = lua_tointeger(L, idx);
  if (v < INT_MIN || v > INT_MAX)
    lpt_errorf(L, "%s: %s %I is out of range", fname, what, (LUAI_UACINT)v);
  return (int)v;
}

/* opts[key] as an int pair: a number n means {n, n}; missing means def */
static void opt_pair(lua_State *L, int opts, const char *key, const int *def, int *out, const char *fname) {
  out[0] = def[0];
  out[1] = def[1];
  if (opts == 0 || !lua_istable(L, opts)) return;
  int t = lua_getfield(L, opts, key);
  char what[64];
  snprintf(what, sizeof what, "option '%s'", key);
  if (t == LUA_TNUMBER) {
    if (!lua_isinteger(L, -1)) lpt_errorf(L, "%s: option '%s' must be an integer or a pair {h, w}", fname, key);
    out[0] = out[1] = int_at(L, -1, fname, what);
  } else if (t == LUA_TTABLE) {
    for (int i = 0; i < 2; i++) {
      lua_geti(L, -1, i + 1);
      if (!lua_isinteger(L, -1)) lpt_errorf(L, "%s: option '%s' must be an integer or a pair {h, w}", fname, key);
      out[i] = int_at(L, -1, fname, what);
      lua_pop(L, 1);
    }
  } else if (t != LUA_TNIL) {
    lpt_errorf(L, "%s: option '%s' must be an integer or a pair {h, w}", fname, key);
  }
  lua_pop(L, 1);
}

/* opts[key] as an int triple {d, h, w}: a number n means {n, n, n}; missing means def */
static void opt_triple(lua_State *L, int opts, const char *key, int def, int *out, const char *fname) {
  out[0] = out[1] = out[2] = def;
  if (opts == 0 || !lua_istable(L, opts)) return;
  int t = lua_getfield(L, opts, key);
  char what[64];
  snprintf(what, sizeof what, "option '%s'", key);
  if (t == LUA_TNUMBER) {
    if (!lua_isinteger(L, -1)) lpt_errorf(L, "%s: option '%s' must be an integer or a triple {d, h, w}", fname, key);
    out[0] = out[1] = out[2] = int_at(L, -1, fname, what);
  } else if (t == LUA_TTABLE) {
    if (luaL_len(L, -1) != 3) lpt_errorf(L, "%s: option '%s' must be an integer or a triple {d, h, w}", fname, key);
    for (int i = 0; i < 3; i++) {
      lua_geti(L, -1, i + 1);
      if (!lua_isinteger(L, -1)) lpt_errorf(L, "%s: option '%s' must be an integer or a triple {d, h, w}", fname, key);
      out[i] = int_at(L, -1, fname, what);
      lua_pop(L, 1);
    }
  } else if (t != LUA_TNIL) {
    lpt_errorf(L, "%s: option '%s' must be an integer or a triple {d, h, w}", fname, key);
  }
  lua_pop(L, 1);
}

static void arg_pair(lua_State *L, int idx, int *out, const char *fname, const char *what) {
  if (lua_isinteger(L, idx)) {
    out[0] = out[1] = int_at(L, idx, fname, what);
  } else if (lua_istable(L, idx)) {
    for (int i = 0; i < 2; i++) {
      lua_geti(L, idx, i + 1);
      if (!lua_isinteger(L, -1)) lpt_errorf(L, "%s: %s must be an integer or a pair {h, w}", fname, what);
      out[i] = int_at(L, -1, fname, what);
      lua_pop(L, 1);
    }
  } else {
    lpt_errorf(L, "%s: %s must be an integer or a pair {h, w}", fname, what);
  }
}

/* The convolutions' arguments x, weight[, bias][, opts]: *b NULL when absent; returns the options
 * table's index (0: none), its names checked against names. */
static int conv_args(lua_State *L, const char *fn, const char *const *names, pt_tensor **x,
                     pt_tensor **w, pt_tensor **b) {
  *x = lpt_check_tensor(L, 1);
  *w = lpt_check_tensor(L, 2);
  *b = NULL;
  int opts = 0;
  if (lua_istable(L, 3) && !lpt_test_tensor(L, 3)) opts = 3;
  else {
    if (!lua_isnoneornil(L, 3)) *b = lpt_check_tensor(L, 3);
    if (lua_istable(L, 4)) opts = 4;
  }
  lpt_check_options(L, opts, fn, names);
  return opts;
}

/* the convolutions' groups option (an integer, default 1) */
static int groups_opt(lua_State *L, int opts, const char *fn) {
  int groups = 1;
  if (opts && lua_getfield(L, opts, "groups") != LUA_TNIL) {
    if (!lua_isinteger(L, -1)) lpt_errorf(L, "%s: option 'groups' must be an integer", fn);
    groups = int_at(L, -1, fn, "option 'groups'");
  }
  if (opts) lua_pop(L, 1);
  return groups;
}

/* pt.conv2d(x, weight[, bias][, {stride=1, padding=0, dilation=1, groups=1}]) */
static int l_conv2d(lua_State *L) {
  static const char *const names[] = {"stride", "padding", "dilation", "groups", NULL};
  pt_tensor *x, *w, *b;
  int opts = conv_args(L, "conv2d", names, &x, &w, &b);
  pt_conv2d_opts o;
  static const int one[2] = {1, 1}, zero[2] = {0, 0};
  opt_pair(L, opts, "stride", one, o.stride, "conv2d");
  opt_pair(L, opts, "padding", zero, o.padding, "conv2d");
  opt_pair(L, opts, "dilation", one, o.dilation, "conv2d");
  o.groups = groups_opt(L, opts, "conv2d");
  pt_tensor *out = NULL;
  pt_status st = pt_conv2d(lpt_ctx(L), x, w, b, &o, &out);
  return lpt_push_result(L, st, out);
}

/* pt.conv_transpose2d(x, weight[, bias][, {stride=1, padding=0, output_padding=0, groups=1, dilation=1}]) */
static int l_conv_transpose2d(lua_State *L) {
  const char *fn = "conv_transpose2d";
  static const char *const names[] = {"stride", "padding", "output_padding", "groups", "dilation", NULL};
  pt_tensor *x, *w, *b;
  int opts = conv_args(L, fn, names, &x, &w, &b);
  pt_conv_transpose2d_opts o;
  static const int one[2] = {1, 1}, zero[2] = {0, 0};
  opt_pair(L, opts, "stride", one, o.stride, fn);
  opt_pair(L, opts, "padding", zero, o.padding, fn);
  opt_pair(L, opts, "output_padding", zero, o.output_padding, fn);
  opt_pair(L, opts, "dilation", one, o.dilation, fn);
  o.groups = groups_opt(L, opts, fn);
  pt_tensor *out = NULL;
  pt_status st = pt_conv_transpose2d(lpt_ctx(L), x, w, b, &o, &out);
  return lpt_push_result(L, st, out);
}

/* pt.conv_transpose3d(x, weight[, bias][, {stride=1, padding=0, output_padding=0, groups=1, dilation=1}]) */
static int l_conv_transpose3d(lua_State *L) {
  const char *fn = "conv_transpose3d";
  static const char *const names[] = {"stride", "padding", "output_padding", "groups", "dilation", NULL};
  pt_tensor *x, *w, *b;
  int opts = conv_args(L, fn, names, &x, &w, &b);
  pt_conv_transpose3d_opts o;
  opt_triple(L, opts, "stride", 1, o.stride, fn);
  opt_triple(L, opts, "padding", 0, o.padding, fn);
  opt_triple(L, opts, "output_padding", 0, o.output_padding, fn);
  opt_triple(L, opts, "dilation", 1, o.dilation, fn);
  o.groups = groups_opt(L, opts, fn);
  pt_tensor *out = NULL;
  pt_status st = pt_conv_transpose3d(lpt_ctx(L), x, w, b, &o, &out);
  return lpt_push_result(L, st, out);
}

static void pool_opts(lua_State *L, const char *fname, bool is_max, pt_pool2d_opts *o) {
  arg_pair(L, 2, o->kernel, fname, "kernel size");
  int opts = lua_istable(L, 3) ? 3 : 0;
  static const char *const max_names[] = {"stride", "padding", "dilation", "ceil_mode", "relu", "return_indices", NULL};
  static const char *const avg_names[] = {"stride", "padding", "ceil_mode", "count_include_pad", "divisor_override",
                                          "relu", NULL};
  lpt_check_options(L, opts, fname, is_max ? max_names : avg_names);
  opt_pair(L, opts, "stride", o->kernel, o->stride, fname);
  static const int zero[2] = {0, 0}, one[2] = {1, 1};
  opt_pair(L, opts, "padding", zero, o->padding, fname);
  opt_pair(L, opts, "dilation", one, o->dilation, fname);
  if (o->dilation[0] < 1 || o->dilation[1] < 1) lpt_errorf(L, "%s: dilation must be >= 1", fname);
  o->ceil_mode = lpt_opt_bool(L, opts, "ceil_mode", false);
  o->count_include_pad = lpt_opt_bool(L, opts, "count_include_pad", true);
  o->relu = lpt_opt_bool(L, opts, "relu", false);
  if (o->relu && !is_max) luaL_error(L, "%s: relu=true is an option of max_pool2d only", fname);
  o->divisor_override = 0;
  if (opts && !is_max && lua_getfield(L, opts, "divisor_override") != LUA_TNIL) {
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) == 0)
      lpt_errorf(L, "%s: divisor_override must be a non-zero integer, got %s", fname, luaL_tolstring(L, -1, NULL));
    o->divisor_override = int_at(L, -1, fname, "option 'divisor_override'");
  }
  if (opts && !is_max) lua_pop(L, 1);
}

/* pushes y and, when idx is not NULL, idx (int64, 0-based in C) as Lua's 1-based positions */
static int push_with_indices(lua_State *L, pt_tensor *y, pt_tensor *idx) {
  lpt_push_tensor(L, y);
  if (!idx) return 1;
  int64_t *p = pt_tensor_data(idx), n = pt_tensor_numel(idx);
  for (int64_t i = 0; i < n; i++) p[i] += 1;
  lpt_push_tensor(L, idx);
  return 2;
}

/* pt.max_pool2d(x, kernel[, {stride=kernel, padding=0, dilation=1, ceil_mode=false, relu=false,
 * return_indices=false}]) -> y[, indices (1-based, int64)] */
static int l_max_pool2d(lua_State *L) {
  pt_tensor *x = lpt_check_tensor(L, 1), *out = NULL, *idx = NULL;
  pt_pool2d_opts o;
  pool_opts(L, "max_pool2d", true, &o);
  bool want = lpt_opt_bool(L, lua_istable(L, 3) ? 3 : 0, "return_indices", false);
  pt_ctx *ctx = lpt_ctx(L);
  pt_status st = want ? pt_max_pool2d_with_indices(ctx, x, &o, &out, &idx) : pt_max_pool2d(ctx, x, &o, &out);
  if (st) return lpt_error(L);
  return push_with_indices(L, out, idx);
}

static int l_avg_pool2d(lua_State *L) {
  pt_tensor *x = lpt_check_tensor(L, 1), *out = NULL;
  pt_pool2d_opts o;
  pool_opts(L, "avg_pool2d", false, &o);
  pt_status st = pt_avg_pool2d(lpt_ctx(L), x, &o, &out);
  return lpt_push_result(L, st, out);
}

static int l_adaptive_avg_pool2d(lua_State *L) {
  pt_tensor *x = lpt_check_tensor(L, 1), *out = NULL;
  int size[2];
  arg_pair(L, 2, size, "adaptive_avg_pool2d", "output size");
  pt_status st = pt_adaptive_avg_pool2d(lpt_ctx(L), x, size[0], size[1], &out);
  return lpt_push_result(L, st, out);
}

/* pt.adaptive_max_pool2d(x, size[, {return_indices=false}]) -> y[, indices (1-based, int64)] */
static int l_adaptive_max_pool2d(lua_State *L) {
  const char *fn = "adaptive_max_pool2d";
  pt_tensor *x = lpt_check_tensor(L, 1), *out = NULL, *idx = NULL;
  int size[2];
  arg_pair(L, 2, size, fn, "output size");
  int opts = lua_istable(L, 3) ? 3 : 0;
  static const char *const names[] = {"return_indices", NULL};
  lpt_check_options(L, opts, fn, names);
  bool want = lpt_opt_bool(L, opts, "return_indices", false);
  pt_status st = pt_adaptive_max_pool2d(lpt_ctx(L), x, size[0], size[1], &out, want ? &idx : NULL);
  if (st) return lpt_error(L);
  return push_with_indices(L, out, idx);
}

/* pt._max_unpool2d(fname, x, indices, out_h, out_w): the kernel of nn.functional.max_unpool1d/2d
 * (nn_conv.lua checks their options and works out the output size); indices are Lua's (1-based) */
static int l_max_unpool2d(lua_State *L) {
  const char *fn = luaL_checkstring(L, 1);
  pt_tensor *x = lpt_check_tensor(L, 2), *idx = lpt_check_tensor(L, 3), *out = NULL;
  luaL_checkinteger(L, 4);
  luaL_checkinteger(L, 5);
  int h = int_at(L, 4, fn, "output height"), w = int_at(L, 5, fn, "output width");
  pt_status st = pt_max_unpool2d(lpt_ctx(L), fn, x, idx, 1, h, w, &out);
  return lpt_push_result(L, st, out);
}

/* pt.batch_norm(x, running_mean, running_var[, weight, bias][, {training=, momentum=0.1, eps=1e-5}]) */
static int l_batch_norm(lua_State *L) {
  pt_tensor *x = lpt_check_tensor(L, 1), *t[4] = {NULL, NULL, NULL, NULL};
  int opts = 0;
  for (int i = 0; i < 4; i++) {
    int idx = 2 + i;
    if (lua_istable(L, idx) && !lpt_test_tensor(L, idx)) {
      opts = idx;
      break;
    }
    if (!lua_isnoneornil(L, idx)) t[i] = lpt_check_tensor(L, idx);
  }
  if (!opts && lua_istable(L, 6)) opts = 6;
  static const char *const names[] = {"training", "momentum", "eps", NULL};
  lpt_check_options(L, opts, "batch_norm", names);
  bool training = lpt_opt_bool(L, opts, "training", true);
  double momentum = lpt_opt_number(L, opts, "momentum", 0.1, "batch_norm");
  double eps = lpt_opt_number(L, opts, "eps", 1e-5, "batch_norm");
  pt_tensor *out = NULL;
  pt_status st = pt_batch_norm(lpt_ctx(L), x, t[0], t[1], t[2], t[3], training, momentum, eps, &out);
  return lpt_push_result(L, st, out);
}

/* pt.dropout2d(x[, p=0.5][, training=true]) */
static int l_dropout2d(lua_State *L) {
  pt_tensor *x = lpt_check_tensor(L, 1), *out = NULL;
  double p = luaL_optnumber(L, 2, 0.5);
  bool training = lua_isnone(L, 3) ? true : lua_toboolean(L, 3);
  pt_status st = pt_dropout2d(lpt_ctx(L), x, p, training, &out);
  return lpt_push_result(L, st, out);
}

/* pt.upsample_nearest2d(x, scale) -- scale an integer or {sh, sw} */
static int l_upsample_nearest2d(lua_State *L) {
  pt_tensor *x = lpt_check_tensor(L, 1), *out = NULL;
  int s[2];
  arg_pair(L, 2, s, "upsample_nearest2d", "scale factor");
  pt_status st = pt_upsample_nearest2d(lpt_ctx(L), x, s[0], s[1], &out);
  return lpt_push_result(L, st, out);
}

static const luaL_Reg functions[] = {
    {"conv2d", l_conv2d},
    {"conv_transpose2d", l_conv_transpose2d},
    {"conv_transpose3d", l_conv_transpose3d},
    {"max_pool2d", l_max_pool2d},
    {"avg_pool2d", l_avg_pool2d},
    {"adaptive_avg_pool2d", l_adaptive_avg_pool2d},
    {"adaptive_max_pool2d", l_adaptive_max_pool2d},
    {"_max_unpool2d", l_max_unpool2d},
    {"batch_norm", l_batch_norm},
    {"dropout2d", l_dropout2d},
    {"upsample_nearest2d", l_upsample_nearest2d},
    {NULL, NULL},
};

static const char *const docs[] = {
    "conv2d", "pt.conv2d(x, weight[, bias][, {stride=1, padding=0, dilation=1, groups=1}]) -> Tensor\n  x {N,C,H,W} or {C,H,W}; weight {out, C/groups, kh, kw}; options take n or {h, w}.",
    "conv_transpose2d", "pt.conv_transpose2d(x, weight[, bias][, {stride=1, padding=0, output_padding=0, groups=1, dilation=1}]) -> Tensor\n"
    "  The transpose (gradient) of conv2d: x {N,C,H,W} or {C,H,W}; weight {C, out/groups, kh, kw} (PyTorch's layout);\n"
    "  output size (H-1)*stride - 2*padding + dilation*(kh-1) + output_padding + 1; options take n or {h, w}.\n"
    "  output_padding must be smaller than stride or dilation.",
    "conv_transpose3d", "pt.conv_transpose3d(x, weight[, bias][, {stride=1, padding=0, output_padding=0, groups=1, dilation=1}]) -> Tensor\n"
    "  PyTorch's conv_transpose3d: x {N,C,D,H,W} or {C,D,H,W}; weight {C, out/groups, kd, kh, kw}; options take n or\n"
    "  {d, h, w}; output depth (D-1)*stride - 2*padding + dilation*(kd-1) + output_padding + 1 (H and W alike).\n"
    "  One conv_transpose2d over the input depths each output depth reads, gathered into the channels.",
    "max_pool2d", "pt.max_pool2d(x, kernel[, {stride=kernel, padding=0, dilation=1, ceil_mode=false, relu=false,\n"
    "  return_indices=false}]) -> Tensor[, indices]\n"
    "  x {N,C,H,W} or {C,H,W}; sizes are n or {h, w}. return_indices=true also returns an int64 tensor of each\n"
    "  maximum's 1-based position in its flattened H*W input plane (PyTorch's, which counts from 0), as\n"
    "  max_unpool2d takes them. relu=true: max_pool2d(relu(x)) in one pass (what Sequential runs for a ReLU\n"
    "  followed by a MaxPool2d; not with return_indices).",
    "avg_pool2d", "pt.avg_pool2d(x, kernel[, {stride=kernel, padding=0, ceil_mode=false, count_include_pad=true,\n"
    "  divisor_override}]) -> Tensor\n"
    "  x {N,C,H,W} or {C,H,W}; sizes are n or {h, w}. Each window's mean: its sum divided by the window's size,\n"
    "  padding included (count_include_pad=true, the part of a ceil_mode window past the padding not), or the\n"
    "  number of input elements in it (false), or divisor_override (a non-zero integer) when given.",
    "adaptive_avg_pool2d", "pt.adaptive_avg_pool2d(x, size) -> Tensor with spatial size size (n or {h, w}).",
    "adaptive_max_pool2d", "pt.adaptive_max_pool2d(x, size[, {return_indices=false}]) -> Tensor[, indices]\n"
    "  The maximum of each of size (n or {h, w}) bins (PyTorch's bins); with return_indices=true also an int64\n"
    "  tensor of each maximum's 1-based position in its flattened H*W plane.",
    "_max_unpool2d", "pt._max_unpool2d(fname, x, indices, out_h, out_w) -> Tensor: the kernel of nn.functional.max_unpool1d/2d\n"
    "  (which check the options and work out the output size); indices 1-based, fname names the caller in errors.",
    "batch_norm", "pt.batch_norm(x, running_mean, running_var[, weight, bias][, {training=true, momentum=0.1, eps=1e-5}])\n  Per-channel normalisation of {N,C,...}; training updates the running statistics in place.",
    "dropout2d", "pt.dropout2d(x[, p=0.5][, training=true]) -> Tensor with whole channels zeroed with probability p.",
    "upsample_nearest2d", "pt.upsample_nearest2d(x, scale) -> nearest-neighbour upsampling by integer factors.",
    NULL, NULL,
};

void lpt_open_conv(lua_State *L) {
  lpt_add_functions(L, functions);
  lpt_add_docs(L, 0, docs);
}
