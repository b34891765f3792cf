/* Bindings of the optimizer kernels (lib/optim.h) as internal module functions pt._optim_*.
 * Each call updates every parameter of one group: params is a Lua list of tensors, states a
 * list of per-parameter state tables (created here when missing) holding the moment buffers
 * as tensors and "step" as an integer. The public API is lua/partrain/optim.lua. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../lib/optim.h"
#include "lpt.h"

/* lua_pushfstring (so lpt_errorf) knows no %g: numbers in messages go through here ("0.5", "-1",
 * "nan", "inf"); buf holds 32 bytes */
static const char *num_str(double v, char *buf) {
  if (isnan(v)) return "nan";
  snprintf(buf, 32, "%g", v);
  return buf;
}

static double opt_num(lua_State *L, int opts, const char *key, double def) {
  double v = def;
  if (lua_getfield(L, opts, key) != LUA_TNIL) {
    if (!lua_isnumber(L, -1))
      lpt_errorf(L, "option '%s' must be a number, got %s", key, luaL_typename(L, -1));
    v = lua_tonumber(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

static bool opt_flag(lua_State *L, int opts, const char *key) {
  lua_getfield(L, opts, key);
  bool v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

/* Push params[i] and states[i] (creating the state table); returns the parameter or NULL when
 * it has no gradient (the caller skips it). The kernels step contiguous tensors: for a
 * non-contiguous parameter, *work is a contiguous copy (pushed too, so the stack keeps it; the
 * caller writes it back with pt_optim_write_back), else the parameter itself. */
static pt_tensor *param_at(lua_State *L, const char *fname, int i, int *state_idx, pt_tensor **work) {
  lua_geti(L, 1, i);
  pt_tensor *p = lpt_test_tensor(L, -1);
  if (!p) lpt_errorf(L, "%s: parameter %d is not a tensor (got %s)", fname, i, luaL_typename(L, -1));
  if (pt_optim_check_param(lpt_ctx(L), fname, i, p)) lpt_error(L);
  if (lua_geti(L, 2, i) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_seti(L, 2, i);
  }
  *state_idx = lua_gettop(L);
  *work = p;
  if (p->grad && !pt_tensor_is_contiguous(p)) {
    if (pt_tensor_clone_raw(lpt_ctx(L), p, work)) lpt_error(L);
    lpt_push_tensor(L, *work);
  }
  return p->grad ? p : NULL;
}

/* The state tensor states[i][key], created (filled with init) when missing. *fresh tells. */
static pt_tensor *state_tensor(lua_State *L, const char *fname, int sidx, const char *key, int i,
                               pt_tensor *p, double init, bool *fresh) {
  pt_ctx *ctx = lpt_ctx(L);
  if (fresh) *fresh = false;
  if (lua_getfield(L, sidx, key) != LUA_TNIL) {
    pt_tensor *t = lpt_test_tensor(L, -1);
    if (!t) lpt_errorf(L, "%s: state '%s' of parameter %d is not a tensor", fname, key, i);
    if (pt_optim_check_state(ctx, fname, key, i, p, t)) lpt_error(L);
    lua_pop(L, 1); /* still referenced by the state table */
    return t;
  }
  lua_pop(L, 1);
  pt_tensor *t;
  if (pt_tensor_empty(ctx, p->dtype, p->ndim, p->shape, &t)) lpt_error(L);
  if (!isnan(init)) pt_tensor_fill(ctx, t, init);
  lpt_push_tensor(L, t);
  lua_setfield(L, sidx, key);
  if (fresh) *fresh = true;
  return t;
}

static int64_t next_step(lua_State *L, int sidx) {
  lua_getfield(L, sidx, "step");
  int64_t step = (int64_t)luaL_optinteger(L, -1, 0) + 1;
  lua_pop(L, 1);
  lua_pushinteger(L, step);
  lua_setfield(L, sidx, "step");
  return step;
}

static void check_args(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TTABLE);
}

/* _optim_sgd(params, states, opts[, fname]) */
static int l_sgd(lua_State *L) {
  check_args(L);
  const char *fname = luaL_optstring(L, 4, "SGD");
  pt_sgd_opts o = {
      .lr = opt_num(L, 3, "lr", 1e-3),
      .momentum = opt_num(L, 3, "momentum", 0),
      .dampening = opt_num(L, 3, "dampening", 0),
      .weight_decay = opt_num(L, 3, "weight_decay", 0),
      .nesterov = opt_flag(L, 3, "nesterov"),
      .maximize = opt_flag(L, 3, "maximize"),
  };
  int n = (int)luaL_len(L, 1);
  /* collected first (the tensors stay referenced by params and states, the copies of
   * non-contiguous parameters by the table works), then stepped at once */
  size_t cap = (size_t)(n > 0 ? n : 1);
  pt_sgd_item *items = lua_newuserdatauv(L, cap * sizeof *items, 0);
  pt_tensor **orig = lua_newuserdatauv(L, cap * sizeof *orig, 0);
  lua_newtable(L);
  int works = lua_gettop(L), top = works, m = 0;
  for (int i = 1; i <= n; i++, lua_settop(L, top)) {
    int s;
    pt_tensor *w;
    pt_tensor *p = param_at(L, fname, i, &s, &w);
    if (!p) continue;
    if (w != p) {
      lua_pushvalue(L, -1); /* the copy, pushed last by param_at */
      lua_seti(L, works, i);
    }
    pt_tensor *buf = NULL;
    bool fresh = false;
    if (o.momentum != 0) buf = state_tensor(L, fname, s, "momentum_buffer", i, p, NAN, &fresh);
    orig[m] = p;
    items[m++] = (pt_sgd_item){w, p->grad, buf, fresh};
  }
  if (pt_optim_sgd_many(lpt_ctx(L), items, m, &o)) return lpt_error(L);
  for (int k = 0; k < m; k++)
    if (items[k].param != orig[k] && pt_optim_write_back(lpt_ctx(L), orig[k], items[k].param)) return lpt_error(L);
  return 0;
}

/* One parameter's update by a stateful optimizer: its state tensors in the order of the binding's
 * keys (NULL where the options leave a key out), its step count after this step, and its number
 * state (NAdam's mu_product), read and written back. */
typedef pt_status (*param_step_fn)(pt_ctx *ctx, pt_tensor *p, pt_tensor *g, pt_tensor **st, int64_t step,
                                   double *num, const void *opts);

enum { STEP_KEYS_MAX = 3 };

/* The loop every stateful optimizer binding shares: for each parameter with a gradient, its state
 * tensors keys[k] (made and filled with init when missing; a NULL key is skipped), step += 1, its
 * number state num_key (num_init when missing; NULL: none), then fn. */
static int step_each(lua_State *L, const char *fname, const char *const keys[STEP_KEYS_MAX], double init,
                     const char *num_key, double num_init, param_step_fn fn, const void *opts) {
  int n = (int)luaL_len(L, 1), top = lua_gettop(L);
  for (int i = 1; i <= n; i++, lua_settop(L, top)) {
    int s;
    pt_tensor *w;
    pt_tensor *p = param_at(L, fname, i, &s, &w);
    if (!p) continue;
    pt_tensor *st[STEP_KEYS_MAX] = {NULL, NULL, NULL};
    for (int k = 0; k < STEP_KEYS_MAX; k++)
      if (keys[k]) st[k] = state_tensor(L, fname, s, keys[k], i, p, init, NULL);
    double num = num_init;
    if (num_key) {
      int t = lua_getfield(L, s, num_key);
      if (t != LUA_TNIL && t != LUA_TNUMBER)
        lpt_errorf(L, "%s: state '%s' of parameter %d is not a number", fname, num_key, i);
      if (t == LUA_TNUMBER) num = lua_tonumber(L, -1);
      lua_pop(L, 1);
    }
    int64_t step = next_step(L, s);
    if (fn(lpt_ctx(L), w, p->grad, st, step, &num, opts)) return lpt_error(L);
    if (w != p && pt_optim_write_back(lpt_ctx(L), p, w)) return lpt_error(L);
    if (num_key) {
      lua_pushnumber(L, num);
      lua_setfield(L, s, num_key);
    }
  }
  return 0;
}

static pt_status adam_step(pt_ctx *ctx, pt_tensor *p, pt_tensor *g, pt_tensor **st, int64_t step, double *num,
                           const void *o) {
  (void)num;
  return pt_optim_adam(ctx, p, g, st[0], st[1], st[2], step, o);
}

/* _optim_adam(params, states, opts[, fname]); opts.decoupled selects AdamW */
static int l_adam(lua_State *L) {
  check_args(L);
  const char *fname = luaL_optstring(L, 4, "Adam");
  pt_adam_opts o = {
      .lr = opt_num(L, 3, "lr", 1e-3),
      .beta1 = opt_num(L, 3, "beta1", 0.9),
      .beta2 = opt_num(L, 3, "beta2", 0.999),
      .eps = opt_num(L, 3, "eps", 1e-8),
      .weight_decay = opt_num(L, 3, "weight_decay", 0),
      .amsgrad = opt_flag(L, 3, "amsgrad"),
      .decoupled = opt_flag(L, 3, "decoupled"),
      .maximize = opt_flag(L, 3, "maximize"),
  };
  const char *keys[] = {"exp_avg", "exp_avg_sq", o.amsgrad ? "max_exp_avg_sq" : NULL};
  return step_each(L, fname, keys, 0.0, NULL, 0.0, adam_step, &o);
}

static pt_status rmsprop_step(pt_ctx *ctx, pt_tensor *p, pt_tensor *g, pt_tensor **st, int64_t step,
                              double *num, const void *o) {
  (void)step, (void)num;
  return pt_optim_rmsprop(ctx, p, g, st[0], st[1], st[2], o);
}

/* _optim_rmsprop(params, states, opts[, fname]) */
static int l_rmsprop(lua_State *L) {
  check_args(L);
  const char *fname = luaL_optstring(L, 4, "RMSprop");
  pt_rmsprop_opts o = {
      .lr = opt_num(L, 3, "lr", 1e-2),
      .alpha = opt_num(L, 3, "alpha", 0.99),
      .eps = opt_num(L, 3, "eps", 1e-8),
      .weight_decay = opt_num(L, 3, "weight_decay", 0),
      .momentum = opt_num(L, 3, "momentum", 0),
      .centered = opt_flag(L, 3, "centered"),
      .maximize = opt_flag(L, 3, "maximize"),
  };
  const char *keys[] = {"square_avg", o.centered ? "grad_avg" : NULL, o.momentum > 0 ? "momentum_buffer" : NULL};
  return step_each(L, fname, keys, 0.0, NULL, 0.0, rmsprop_step, &o);
}

static pt_status adagrad_step(pt_ctx *ctx, pt_tensor *p, pt_tensor *g, pt_tensor **st, int64_t step,
                              double *num, const void *o) {
  (void)num;
  return pt_optim_adagrad(ctx, p, g, st[0], step, o);
}

/* _optim_adagrad(params, states, opts[, fname]) */
static int l_adagrad(lua_State *L) {
  check_args(L);
  const char *fname = luaL_optstring(L, 4, "Adagrad");
  pt_adagrad_opts o = {
      .lr = opt_num(L, 3, "lr", 1e-2),
      .lr_decay = opt_num(L, 3, "lr_decay", 0),
      .weight_decay = opt_num(L, 3, "weight_decay", 0),
      .eps = opt_num(L, 3, "eps", 1e-10),
      .maximize = opt_flag(L, 3, "maximize"),
  };
  const char *keys[] = {"sum", NULL, NULL};
  return step_each(L, fname, keys, opt_num(L, 3, "initial_accumulator_value", 0), NULL, 0.0, adagrad_step, &o);
}

static pt_status adamax_step(pt_ctx *ctx, pt_tensor *p, pt_tensor *g, pt_tensor **st, int64_t step,
                             double *num, const void *o) {
  (void)num;
  return pt_optim_adamax(ctx, p, g, st[0], st[1], step, o);
}

/* _optim_adamax(params, states, opts[, fname]) */
static int l_adamax(lua_State *L) {
  check_args(L);
  const char *fname = luaL_optstring(L, 4, "Adamax");
  pt_adamax_opts o = {
      .lr = opt_num(L, 3, "lr", 2e-3),
      .beta1 = opt_num(L, 3, "beta1", 0.9),
      .beta2 = opt_num(L, 3, "beta2", 0.999),
      .eps = opt_num(L, 3, "eps", 1e-8),
      .weight_decay = opt_num(L, 3, "weight_decay", 0),
      .maximize = opt_flag(L, 3, "maximize"),
  };
  const char *keys[] = {"exp_avg", "exp_inf", NULL};
  return step_each(L, fname, keys, 0.0, NULL, 0.0, adamax_step, &o);
}

static pt_status nadam_step(pt_ctx *ctx, pt_tensor *p, pt_tensor *g, pt_tensor **st, int64_t step,
                            double *mu_product, const void *o) {
  return pt_optim_nadam(ctx, p, g, st[0], st[1], step, mu_product, o);
}

/* _optim_nadam(params, states, opts[, fname]); states[i].mu_product: a number, as PyTorch's */
static int l_nadam(lua_State *L) {
  check_args(L);
  const char *fname = luaL_optstring(L, 4, "NAdam");
  pt_nadam_opts o = {
      .lr = opt_num(L, 3, "lr", 2e-3),
      .beta1 = opt_num(L, 3, "beta1", 0.9),
      .beta2 = opt_num(L, 3, "beta2", 0.999),
      .eps = opt_num(L, 3, "eps", 1e-8),
      .weight_decay = opt_num(L, 3, "weight_decay", 0),
      .momentum_decay = opt_num(L, 3, "momentum_decay", 4e-3),
  };
  const char *keys[] = {"exp_avg", "exp_avg_sq", NULL};
  return step_each(L, fname, keys, 0.0, "mu_product", 1.0, nadam_step, &o);
}

static pt_status radam_step(pt_ctx *ctx, pt_tensor *p, pt_tensor *g, pt_tensor **st, int64_t step,
                            double *num, const void *o) {
  (void)num;
  return pt_optim_radam(ctx, p, g, st[0], st[1], step, o);
}

/* _optim_radam(params, states, opts[, fname]) */
static int l_radam(lua_State *L) {
  check_args(L);
  const char *fname = luaL_optstring(L, 4, "RAdam");
  pt_radam_opts o = {
      .lr = opt_num(L, 3, "lr", 1e-3),
      .beta1 = opt_num(L, 3, "beta1", 0.9),
      .beta2 = opt_num(L, 3, "beta2", 0.999),
      .eps = opt_num(L, 3, "eps", 1e-8),
      .weight_decay = opt_num(L, 3, "weight_decay", 0),
  };
  const char *keys[] = {"exp_avg", "exp_avg_sq", NULL};
  return step_each(L, fname, keys, 0.0, NULL, 0.0, radam_step, &o);
}

static pt_status adadelta_step(pt_ctx *ctx, pt_tensor *p, pt_tensor *g, pt_tensor **st, int64_t step,
                               double *num, const void *o) {
  (void)step, (void)num;
  return pt_optim_adadelta(ctx, p, g, st[0], st[1], o);
}

/* _optim_adadelta(params, states, opts[, fname]) */
static int l_adadelta(lua_State *L) {
  check_args(L);
  const char *fname = luaL_optstring(L, 4, "Adadelta");
  pt_adadelta_opts o = {
      .lr = opt_num(L, 3, "lr", 1.0),
      .rho = opt_num(L, 3, "rho", 0.9),
      .eps = opt_num(L, 3, "eps", 1e-6),
      .weight_decay = opt_num(L, 3, "weight_decay", 0),
      .maximize = opt_flag(L, 3, "maximize"),
  };
  const char *keys[] = {"square_avg", "acc_delta", NULL};
  return step_each(L, fname, keys, 0.0, NULL, 0.0, adadelta_step, &o);
}

/* _optim_clip_grad_norm(params, max_norm[, norm_type[, error_if_nonfinite]]) -> total norm (before
 * clipping) */
static int l_clip_grad_norm(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  double max_norm = luaL_checknumber(L, 2);
  double p = luaL_optnumber(L, 3, 2.0);
  bool error_if_nonfinite = lua_toboolean(L, 4);
  char nb[32];
  if (!(p > 0)) return lpt_errorf(L, "clip_grad_norm: norm_type must be positive, got %s", num_str(p, nb));
  int n = (int)luaL_len(L, 1);
  double acc = 0;
  for (int pass = 0; pass < 2; pass++) {
    double coef = 1;
    if (pass == 1) {
      double total = isinf(p) ? acc : pow(acc, 1.0 / p);
      if (error_if_nonfinite && !isfinite(total)) {
        char tb[32];
        return lpt_errorf(L, "clip_grad_norm: the total norm of order %s of the gradients is %s, so it "
                          "cannot be clipped (error_if_nonfinite = false scales them by it anyway)",
                          num_str(p, nb), num_str(total, tb));
      }
      lua_pushnumber(L, total);
      coef = max_norm / (total + 1e-6);
      if (coef >= 1) return 1;
    }
    for (int i = 1; i <= n; i++) {
      lua_geti(L, 1, i);
      pt_tensor *t = lpt_test_tensor(L, -1);
      lua_pop(L, 1);
      if (!t) return lpt_errorf(L, "clip_grad_norm: parameter %d is not a tensor", i);
      if (!t->grad) continue;
      pt_status st = pass == 0 ? pt_optim_norm_acc(lpt_ctx(L), t->grad, p, &acc)
                               : pt_optim_scale_(lpt_ctx(L), t->grad, coef);
      if (st) return lpt_error(L);
    }
  }
  return 1;
}

/* _optim_clip_grad_value(params, clip_value) */
static int l_clip_grad_value(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  double v = luaL_checknumber(L, 2);
  char nb[32];
  if (!(v >= 0)) return lpt_errorf(L, "clip_grad_value: clip_value must be non-negative, got %s", num_str(v, nb));
  int n = (int)luaL_len(L, 1);
  for (int i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    pt_tensor *t = lpt_test_tensor(L, -1);
    lua_pop(L, 1);
    if (!t) return lpt_errorf(L, "clip_grad_value: parameter %d is not a tensor", i);
    if (t->grad && pt_optim_clamp_(lpt_ctx(L), t->grad, v)) return lpt_error(L);
  }
  return 0;
}

static const luaL_Reg functions[] = {
    {"_optim_sgd", l_sgd},
    {"_optim_adam", l_adam},
    {"_optim_rmsprop", l_rmsprop},
    {"_optim_adagrad", l_adagrad},
    {"_optim_adamax", l_adamax},
    {"_optim_nadam", l_nadam},
    {"_optim_radam", l_radam},
    {"_optim_adadelta", l_adadelta},
    {"_optim_clip_grad_norm", l_clip_grad_norm},
    {"_optim_clip_grad_value", l_clip_grad_value},
    {NULL, NULL},
};

void lpt_open_optim(lua_State *L) { lpt_add_functions(L, functions); }
