/* Bindings of the fused nn layers and losses (lib/nn.h) as internal module functions
 * pt._nn_*; the public API is lua/partrain/nn.lua. */
#include <string.h>

#include "../lib/nn.h"
#include "../lib/optim.h"
#include "../lib/ops_reduce.h"
#include "lpt.h"

static pt_tensor *opt_tensor(lua_State *L, int idx) {
  return lua_isnoneornil(L, idx) ? NULL : lpt_check_tensor(L, idx);
}

/* the tensor at idx (nil allowed when optional), or an error naming the function and the argument
 * (lpt_check_tensor's "bad argument #4 to '_nn_batch_norm'" names the internal binding) */
static pt_tensor *arg_tensor(lua_State *L, int idx, const char *fname, const char *what, bool optional,
                             const char *hint) {
  if (optional && lua_isnoneornil(L, idx)) return NULL;
  pt_tensor *t = lpt_test_tensor(L, idx);
  if (!t)
    lpt_errorf(L, "%s: %s must be a Tensor%s, got %s%s", fname, what, optional ? " or nil" : "", luaL_typename(L, idx),
               hint ? hint : "");
  return t;
}

static pt_reduction check_reduction(lua_State *L, int idx, const char *fname) {
  if (!lua_isnoneornil(L, idx) && lua_type(L, idx) != LUA_TSTRING)
    lpt_errorf(L, "%s: reduction must be 'mean', 'sum' or 'none', got %s", fname, luaL_typename(L, idx));
  const char *r = luaL_optstring(L, idx, "mean");
  if (strcmp(r, "mean") == 0) return PT_REDUCE_MEAN;
  if (strcmp(r, "sum") == 0) return PT_REDUCE_SUM;
  if (strcmp(r, "none") == 0) return PT_REDUCE_NONE;
  lpt_errorf(L, "%s: reduction must be 'mean', 'sum' or 'none', got '%s'", fname, r);
  return PT_REDUCE_MEAN;
}

/* push_result(L, call): out is read after the call (argument order is unspecified in C) */
#define push_result(L, call, out) ((call) ? lpt_error(L) : (lpt_push_tensor(L, out), 1))

/* _nn_linear(x, w[, b][, fname][, "relu"]) */
static int l_linear(lua_State *L) {
  const char *fname = luaL_optstring(L, 4, "linear");
  pt_tensor *x = arg_tensor(L, 1, fname, "input", false, NULL), *w = arg_tensor(L, 2, fname, "weight", false, NULL);
  pt_tensor *b = arg_tensor(L, 3, fname, "bias", true, NULL), *out;
  const char *act = luaL_optstring(L, 5, "none");
  pt_nn_act a = PT_ACT_NONE;
  if (strcmp(act, "relu") == 0) a = PT_ACT_RELU;
  else if (strcmp(act, "none") != 0)
    return lpt_errorf(L, "%s: cannot fuse activation '%s' (only 'relu')", fname, act);
  return push_result(L, pt_nn_linear(lpt_ctx(L), fname, x, w, b, a, &out), out);
}

static int activation(lua_State *L, pt_nn_act act, double slope) {
  pt_tensor *x = lpt_check_tensor(L, 1), *out;
  return push_result(L, pt_nn_activation(lpt_ctx(L), act, x, slope, &out), out);
}

static int l_relu(lua_State *L) { return activation(L, PT_ACT_RELU, 0); }

/* _nn_leaky_relu(x[, negative_slope=0.01 | {negative_slope=, inplace=}]): the table is
 * torch's keyword form, F.leaky_relu(x, negative_slope=0.2) */
static int l_leaky_relu(lua_State *L) {
  double slope = 0.01;
  if (lua_istable(L, 2) && !lpt_test_tensor(L, 2)) {
    static const char *const names[] = {"negative_slope", "inplace", NULL};
    lpt_check_options(L, 2, "leaky_relu", names);
    if (lpt_opt_bool(L, 2, "inplace", false))
      return lpt_errorf(L, "leaky_relu: inplace=true is not supported here (use nn.LeakyReLU or x:copy_ of the result)");
    slope = lpt_opt_number(L, 2, "negative_slope", 0.01, "leaky_relu");
  } else if (!lua_isnoneornil(L, 2)) {
    if (lua_type(L, 2) != LUA_TNUMBER)
      return lpt_errorf(L, "leaky_relu: negative_slope must be a number or an options table, got %s", luaL_typename(L, 2));
    slope = lua_tonumber(L, 2);
  }
  return activation(L, PT_ACT_LEAKY_RELU, slope);
}
static int l_tanh(lua_State *L) { return activation(L, PT_ACT_TANH, 0); }
static int l_sigmoid(lua_State *L) { return activation(L, PT_ACT_SIGMOID, 0); }
static int l_silu(lua_State *L) { return activation(L, PT_ACT_SILU, 0); }
/* _nn_gelu(x[, approximate]) approximate: "none" or "tanh" */
static int l_gelu(lua_State *L) {
  const char *approx = luaL_optstring(L, 2, "none");
  if (strcmp(approx, "tanh") == 0) return activation(L, PT_ACT_GELU_TANH, 0);
  if (strcmp(approx, "none") != 0)
    return lpt_errorf(L, "gelu: approximate must be 'none' or 'tanh', got '%s'", approx);
  return activation(L, PT_ACT_GELU, 0);
}

/* _nn_act(x, kind[, p0[, p1]]): any element-wise activation of lib/nn_activation.c by name, with
 * its parameters (see pt_nn_act); nn_extra.lua's activations are one call each */
static int l_act(lua_State *L) {
  static const char *const names[] = {
      "relu", "leaky_relu", "gelu", "gelu_tanh", "tanh", "sigmoid", "silu", "elu", "selu", "celu",
      "softplus", "mish", "hardtanh", "relu6", "hardswish", "hardsigmoid", "softsign", "tanhshrink",
      "threshold", "logsigmoid", "softshrink", "hardshrink", NULL};
  static const pt_nn_act kinds[] = {
      PT_ACT_RELU, PT_ACT_LEAKY_RELU, PT_ACT_GELU, PT_ACT_GELU_TANH, PT_ACT_TANH, PT_ACT_SIGMOID,
      PT_ACT_SILU, PT_ACT_ELU, PT_ACT_SELU, PT_ACT_CELU, PT_ACT_SOFTPLUS, PT_ACT_MISH,
      PT_ACT_HARDTANH, PT_ACT_RELU6, PT_ACT_HARDSWISH, PT_ACT_HARDSIGMOID, PT_ACT_SOFTSIGN,
      PT_ACT_TANHSHRINK, PT_ACT_THRESHOLD, PT_ACT_LOGSIGMOID, PT_ACT_SOFTSHRINK, PT_ACT_HARDSHRINK};
  pt_tensor *x = lpt_check_tensor(L, 1), *out;
  pt_nn_act act = kinds[luaL_checkoption(L, 2, NULL, names)];
  double p0 = luaL_optnumber(L, 3, 0.0), p1 = luaL_optnumber(L, 4, 0.0);
  return push_result(L, pt_nn_activation_p(lpt_ctx(L), act, x, p0, p1, &out), out);
}

static int softmax(lua_State *L, bool lg) {
  const char *fname = lg ? "log_softmax" : "softmax";
  pt_tensor *x = lpt_check_tensor(L, 1), *out;
  int ndim = x->ndim;
  if (lua_istable(L, 2) && !lpt_test_tensor(L, 2)) { /* torch's keyword form: {dim = d} */
    static const char *const names[] = {"dim", NULL};
    lpt_check_options(L, 2, fname, names);
    lua_getfield(L, 2, "dim");
    lua_replace(L, 2);
  }
  int dim = lpt_opt_dim(L, 2, ndim, fname, ndim ? ndim - 1 : 0);
  /* the kernels of t:softmax / t:log_softmax (lib/ops_reduce.c); here dim defaults to the last */
  return push_result(L, (lg ? pt_log_softmax : pt_softmax)(lpt_ctx(L), x, dim, &out), out);
}
static int l_softmax(lua_State *L) { return softmax(L, false); }
static int l_log_softmax(lua_State *L) { return softmax(L, true); }

/* _nn_cross_entropy(input, target, weight|nil, label_smoothing, ignore_index|nil, reduction) */
static int l_cross_entropy(lua_State *L) {
  pt_tensor *x = lpt_check_tensor(L, 1), *t = lpt_check_tensor(L, 2), *w = opt_tensor(L, 3), *out;
  double eps = luaL_optnumber(L, 4, 0.0);
  int64_t ignore = luaL_optinteger(L, 5, 0);
  pt_reduction red = check_reduction(L, 6, "cross_entropy");
  return push_result(L, pt_nn_cross_entropy(lpt_ctx(L), x, t, w, eps, ignore, red, &out), out);
}

/* _nn_cross_entropy_plain(input, target) -> the mean loss of {N,C} or {C} scores and class
 * indices, or nothing for the forms nn.cross_entropy handles in Lua ({N,C,d...} scores, class
 * probabilities): one C call on the per-sample hot path instead of Lua's shape tests */
static int l_cross_entropy_plain(lua_State *L) {
  pt_tensor *x = lpt_check_tensor(L, 1), *t = lpt_check_tensor(L, 2), *out;
  if (x->ndim > 2 || (pt_dtype_is_floating(t->dtype) && t->ndim == x->ndim)) return 0;
  return push_result(L, pt_nn_cross_entropy(lpt_ctx(L), x, t, NULL, 0.0, 0, PT_REDUCE_MEAN, &out), out);
}

/* _nn_nll_loss(input, target, weight|nil, ignore_index|nil, reduction) */
static int l_nll_loss(lua_State *L) {
  pt_tensor *x = lpt_check_tensor(L, 1), *t = lpt_check_tensor(L, 2), *w = opt_tensor(L, 3), *out;
  int64_t ignore = luaL_optinteger(L, 4, 0);
  pt_reduction red = check_reduction(L, 5, "nll_loss");
  return push_result(L, pt_nn_nll_loss(lpt_ctx(L), x, t, w, ignore, red, &out), out);
}

static int pointwise(lua_State *L, const char *fname, pt_pointwise_loss kind, int red_idx,
                     double beta, pt_tensor *pos_weight) {
  pt_tensor *x = lpt_check_tensor(L, 1), *out;
  pt_reduction red = check_reduction(L, red_idx, fname); /* before the reference below */
  pt_tensor *t = lpt_to_tensor(L, 2, x->dtype); /* new reference */
  pt_status st = pt_nn_pointwise_loss(lpt_ctx(L), fname, kind, x, t, pos_weight, beta, red, &out);
  pt_tensor_release(t);
  if (st) return lpt_error(L);
  lpt_push_tensor(L, out);
  return 1;
}

/* _nn_mse_loss(input, target, reduction) and friends */
static int l_mse_loss(lua_State *L) { return pointwise(L, "mse_loss", PT_LOSS_MSE, 3, 0, NULL); }
static int l_l1_loss(lua_State *L) { return pointwise(L, "l1_loss", PT_LOSS_L1, 3, 0, NULL); }
/* _nn_smooth_l1_loss(input, target, beta, reduction) */
static int l_smooth_l1_loss(lua_State *L) {
  return pointwise(L, "smooth_l1_loss", PT_LOSS_SMOOTH_L1, 4, luaL_optnumber(L, 3, 1.0), NULL);
}
static int l_bce(lua_State *L) { return pointwise(L, "binary_cross_entropy", PT_LOSS_BCE, 3, 0, NULL); }
/* _nn_bce_with_logits(input, target, pos_weight|nil, reduction) */
static int l_bce_with_logits(lua_State *L) {
  return pointwise(L, "binary_cross_entropy_with_logits", PT_LOSS_BCE_WITH_LOGITS, 4, 0,
                   opt_tensor(L, 3));
}

/* _nn_dropout(x, p, training) or _nn_dropout(x, {p=0.5, training=true}) (torch's keyword form;
 * then the third argument, nn.dropout's default, is not read) */
static int l_dropout(lua_State *L) {
  pt_tensor *x = lpt_check_tensor(L, 1), *out;
  double p;
  bool training;
  if (lua_istable(L, 2) && !lpt_test_tensor(L, 2)) {
    static const char *const names[] = {"p", "training", "inplace", NULL};
    lpt_check_options(L, 2, "dropout", names);
    if (lpt_opt_bool(L, 2, "inplace", false))
      return lpt_errorf(L, "dropout: inplace=true is not supported here (use nn.Dropout or x:copy_ of the result)");
    p = lpt_opt_number(L, 2, "p", 0.5, "dropout");
    training = lpt_opt_bool(L, 2, "training", true);
  } else {
    p = luaL_optnumber(L, 2, 0.5);
    training = lua_isnone(L, 3) ? true : lua_toboolean(L, 3);
  }
  return push_result(L, pt_nn_dropout(lpt_ctx(L), x, p, training, &out), out);
}

/* a norm's normalized_shape at idx: an integer or a table of them; returns the dim count */
static int check_norm_shape(lua_State *L, int idx, int64_t *shape, const char *fname) {
  if (lua_isinteger(L, idx)) {
    shape[0] = lua_tointeger(L, idx);
    return 1;
  }
  if (!lua_istable(L, idx) || lpt_test_tensor(L, idx))
    lpt_errorf(L, "%s: normalized_shape must be an integer or a table of them, got %s", fname,
               lpt_test_tensor(L, idx) ? "a Tensor" : luaL_typename(L, idx));
  return lpt_check_shape(L, idx, shape);
}

/* _nn_layer_norm(x, normalized_shape, w|nil, b|nil, eps) */
static int l_layer_norm(lua_State *L) {
  static const char *const hint = " (layer_norm's arguments are positional: x, normalized_shape, weight, bias, eps)";
  pt_tensor *x = arg_tensor(L, 1, "layer_norm", "input", false, NULL), *out;
  int64_t shape[PT_MAX_DIMS];
  int n = check_norm_shape(L, 2, shape, "layer_norm");
  pt_tensor *w = arg_tensor(L, 3, "layer_norm", "weight", true, hint), *b = arg_tensor(L, 4, "layer_norm", "bias", true, hint);
  if (!lua_isnoneornil(L, 5) && lua_type(L, 5) != LUA_TNUMBER)
    return lpt_errorf(L, "layer_norm: eps must be a number, got %s%s", luaL_typename(L, 5), hint);
  double eps = luaL_optnumber(L, 5, 1e-5);
  return push_result(L, pt_nn_layer_norm(lpt_ctx(L), x, n, shape, w, b, eps, &out), out);
}

/* _nn_rms_norm(x, normalized_shape, w|nil, eps[, fname]): eps is given (nn_extra.lua picks
 * PyTorch's default, the dtype's machine epsilon) */
static int l_rms_norm(lua_State *L) {
  pt_tensor *x = lpt_check_tensor(L, 1), *out;
  int64_t shape[PT_MAX_DIMS];
  const char *fname = luaL_optstring(L, 5, "rms_norm");
  int n = check_norm_shape(L, 2, shape, fname);
  pt_tensor *w = opt_tensor(L, 3);
  double eps = luaL_checknumber(L, 4);
  return push_result(L, pt_nn_rms_norm(lpt_ctx(L), fname, x, n, shape, w, eps, &out), out);
}

/* _nn_batch_norm(x, running_mean|nil, running_var|nil, w|nil, b|nil, training, momentum, eps) */
static int l_batch_norm(lua_State *L) {
  static const char *const hint =
      " (nn.batch_norm's arguments are positional: x, running_mean, running_var, weight, bias, training, momentum, "
      "eps; pt.batch_norm takes an options table)";
  const char *fn = "batch_norm";
  pt_tensor *x = arg_tensor(L, 1, fn, "input", false, NULL), *out;
  pt_tensor *rm = arg_tensor(L, 2, fn, "running_mean", true, hint), *rv = arg_tensor(L, 3, fn, "running_var", true, hint);
  pt_tensor *w = arg_tensor(L, 4, fn, "weight", true, hint), *b = arg_tensor(L, 5, fn, "bias", true, hint);
  bool training = lua_toboolean(L, 6);
  double momentum = luaL_optnumber(L, 7, 0.1), eps = luaL_optnumber(L, 8, 1e-5);
  return push_result(L, pt_nn_batch_norm(lpt_ctx(L), x, rm, rv, w, b, training, momentum, eps, &out),
                     out);
}

/* _nn_embedding(weight, indices[, padding_idx[, max_norm[, norm_type]]]) */
static int l_embedding(lua_State *L) {
  pt_tensor *w = lpt_check_tensor(L, 1), *idx = lpt_check_tensor(L, 2), *out;
  int64_t pad = luaL_optinteger(L, 3, 0);
  if (!lua_isnoneornil(L, 4)) { /* max_norm[, norm_type=2]: PyTorch's renorm of the looked-up rows, in place */
    double max_norm = luaL_checknumber(L, 4), norm_type = luaL_optnumber(L, 5, 2.0);
    if (pt_nn_embedding_renorm_(lpt_ctx(L), w, idx, max_norm, norm_type)) return lpt_error(L);
  }
  return push_result(L, pt_nn_embedding(lpt_ctx(L), w, idx, pad, &out), out);
}

/* _nn_view(x, shape_table[, fname]) */
static int l_view(lua_State *L) {
  pt_tensor *x = lpt_check_tensor(L, 1), *out;
  luaL_checktype(L, 2, LUA_TTABLE);
  int64_t shape[PT_MAX_DIMS];
  int n = lpt_check_shape(L, 2, shape);
  const char *fname = luaL_optstring(L, 3, "view");
  return push_result(L, pt_nn_view(lpt_ctx(L), fname, x, n, shape, &out), out);
}

/* _nn_copy_(dst, src): copy values (no graph), src broadcast to dst's shape */
static int l_copy_(lua_State *L) {
  pt_tensor *dst = lpt_check_tensor(L, 1), *src = lpt_check_tensor(L, 2);
  if (pt_tensor_copy_into(lpt_ctx(L), dst, src)) return lpt_error(L);
  atomic_fetch_add(&dst->storage->version, 1);
  lua_settop(L, 1);
  return 1;
}

/* _nn_set_data_(t, src): t takes src's data and dtype, staying the same object (Module:to) */
static int l_set_data_(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *src = lpt_check_tensor(L, 2);
  if (pt_tensor_set_data(lpt_ctx(L), t, src)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

/* _nn_uniform_(t, lo, hi) / _nn_normal_(t, mean, std): in-place fills from the state's RNG */
static int l_uniform_(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  double lo = luaL_checknumber(L, 2), hi = luaL_checknumber(L, 3);
  if (!pt_dtype_is_floating(t->dtype))
    return lpt_errorf(L, "uniform_: tensor must be floating point, got %s", pt_dtype_name(t->dtype));
  if (pt_tensor_uniform_(lpt_ctx(L), t, lo, hi)) return lpt_error(L);
  atomic_fetch_add(&t->storage->version, 1);
  lua_settop(L, 1);
  return 1;
}

static int l_normal_(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  double mean = luaL_checknumber(L, 2), std = luaL_checknumber(L, 3);
  if (!pt_dtype_is_floating(t->dtype))
    return lpt_errorf(L, "normal_: tensor must be floating point, got %s", pt_dtype_name(t->dtype));
  if (pt_tensor_normal_(lpt_ctx(L), t, mean, std)) return lpt_error(L);
  atomic_fetch_add(&t->storage->version, 1);
  lua_settop(L, 1);
  return 1;
}

/* _nn_zero_grads(list_of_tensors[, set_to_none]): zero (or drop) every .grad in one call */
static int l_zero_grads(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  bool to_none = lua_toboolean(L, 2);
  lua_Integer n = luaL_len(L, 1);
  pt_tensor **grads = lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof *grads, 0);
  int m = 0;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    pt_tensor *t = lpt_test_tensor(L, -1);
    lua_pop(L, 1);
    if (!t || !t->grad) continue;
    if (to_none) {
      pt_tensor *g = t->grad;
      t->grad = NULL;
      pt_tensor_release(g);
    } else {
      pt_tensor *g = t->grad;
      /* a gradient made by backward({create_graph = true}) leaves its graph first, as torch
       * 1.13's zero_grad (detach_, requires_grad_(false)): the next backward then adds into a
       * plain tensor rather than onto the old graph */
      if (g->grad_fn && !g->base) {
        if (g->grad_fn->retain_target == g) g->grad_fn->retain_target = NULL;
        pt_node_release(g->grad_fn);
        g->grad_fn = NULL;
      }
      if (!g->base) g->requires_grad = false;
      grads[m++] = g; /* held by t until the call returns */
    }
  }
  if (pt_optim_zero_grads(lpt_ctx(L), grads, m)) return lpt_error(L);
  return 0;
}

static const luaL_Reg functions[] = {
    {"_nn_linear", l_linear},
    {"_nn_relu", l_relu},
    {"_nn_leaky_relu", l_leaky_relu},
    {"_nn_gelu", l_gelu},
    {"_nn_tanh", l_tanh},
    {"_nn_sigmoid", l_sigmoid},
    {"_nn_silu", l_silu},
    {"_nn_act", l_act},
    {"_nn_softmax", l_softmax},
    {"_nn_log_softmax", l_log_softmax},
    {"_nn_cross_entropy", l_cross_entropy},
    {"_nn_cross_entropy_plain", l_cross_entropy_plain},
    {"_nn_nll_loss", l_nll_loss},
    {"_nn_mse_loss", l_mse_loss},
    {"_nn_l1_loss", l_l1_loss},
    {"_nn_smooth_l1_loss", l_smooth_l1_loss},
    {"_nn_bce", l_bce},
    {"_nn_bce_with_logits", l_bce_with_logits},
    {"_nn_dropout", l_dropout},
    {"_nn_layer_norm", l_layer_norm},
    {"_nn_rms_norm", l_rms_norm},
    {"_nn_batch_norm", l_batch_norm},
    {"_nn_embedding", l_embedding},
    {"_nn_view", l_view},
    {"_nn_copy_", l_copy_},
    {"_nn_set_data_", l_set_data_},
    {"_nn_uniform_", l_uniform_},
    {"_nn_normal_", l_normal_},
    {"_nn_zero_grads", l_zero_grads},
    {NULL, NULL},
};

void lpt_open_nn(lua_State *L) { lpt_add_functions(L, functions); }
