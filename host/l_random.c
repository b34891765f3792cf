/* Random sampling bindings (lib/ops_random.h): the in-place distributions as Tensor methods
 * (t:uniform_, t:normal_, t:bernoulli_, t:exponential_, t:geometric_, t:log_normal_, t:cauchy_,
 * t:random_), pt.bernoulli, pt.normal, pt.poisson, pt.multinomial and the *_like creators.
 * Category indices are 1-based, as everywhere in partrain. */
#include <math.h>
#include <stdarg.h>

#include "../lib/ops_index.h"
#include "../lib/ops_random.h"
#include "lpt.h"

void lpt_open_random(lua_State *L);

/* A message with numbers as C prints them (%g: "-1", not Lua's "-1.0"), raised at the caller. */
__attribute__((format(printf, 2, 3))) static int bad_value(lua_State *L, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pt_failv(lpt_ctx(L), PT_EARG, fmt, ap);
  va_end(ap);
  return lpt_error(L);
}

/* The in-place fills: t is checked for an in-place write (a leaf that requires grad outside
 * no_grad is refused, as PyTorch) before anything is drawn. */
static pt_tensor *inplace_target(lua_State *L, const char *fname, int nmax) {
  lpt_check_max_args(L, nmax, fname);
  pt_tensor *t = lpt_check_tensor(L, 1);
  if (pt_check_inplace(lpt_ctx(L), fname, t, NULL)) lpt_error(L);
  return t;
}

static int float_only(lua_State *L, const char *fname, pt_tensor *t) {
  if (t->dtype != PT_FLOAT32 && t->dtype != PT_FLOAT64)
    return lpt_errorf(L, "%s: expected a float32 or float64 tensor, got %s", fname, pt_dtype_name(t->dtype));
  return 0;
}

static int fill(lua_State *L, pt_tensor *t, const char *fname, pt_dist d, double a, double b) {
  if (pt_random_fill_(lpt_ctx(L), fname, t, d, a, b)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

static int t_uniform_(lua_State *L) {
  pt_tensor *t = inplace_target(L, "uniform_", 3);
  double lo = luaL_optnumber(L, 2, 0.0), hi = luaL_optnumber(L, 3, 1.0);
  float_only(L, "uniform_", t);
  if (!(lo <= hi) || !isfinite(hi - lo))
    return bad_value(L, "uniform_: expected from <= to with a finite range, got [%g, %g)", lo, hi);
  pt_tensor_uniform_(lpt_ctx(L), t, lo, hi);
  atomic_fetch_add(&t->storage->version, 1);
  lua_settop(L, 1);
  return 1;
}

static int t_normal_(lua_State *L) {
  pt_tensor *t = inplace_target(L, "normal_", 3);
  double mean = luaL_optnumber(L, 2, 0.0), std = luaL_optnumber(L, 3, 1.0);
  float_only(L, "normal_", t);
  if (!(std >= 0.0) || isinf(std) || !isfinite(mean))
    return bad_value(L, "normal_: expected a finite mean and std >= 0, got mean %g, std %g", mean, std);
  pt_tensor_normal_(lpt_ctx(L), t, mean, std);
  atomic_fetch_add(&t->storage->version, 1);
  lua_settop(L, 1);
  return 1;
}

/* t:bernoulli_([p=0.5]): p a number or a tensor of probabilities broadcast to t's shape */
static int t_bernoulli_(lua_State *L) {
  pt_tensor *t = inplace_target(L, "bernoulli_", 2);
  pt_tensor *p = lpt_test_tensor(L, 2);
  if (p) {
    if (pt_random_bernoulli_tensor_(lpt_ctx(L), "bernoulli_", t, p)) return lpt_error(L);
    lua_settop(L, 1);
    return 1;
  }
  return fill(L, t, "bernoulli_", PT_DIST_BERNOULLI, luaL_optnumber(L, 2, 0.5), 0);
}

static int t_exponential_(lua_State *L) {
  pt_tensor *t = inplace_target(L, "exponential_", 2);
  return fill(L, t, "exponential_", PT_DIST_EXPONENTIAL, luaL_optnumber(L, 2, 1.0), 0);
}

static int t_geometric_(lua_State *L) {
  pt_tensor *t = inplace_target(L, "geometric_", 2);
  return fill(L, t, "geometric_", PT_DIST_GEOMETRIC, luaL_checknumber(L, 2), 0);
}

static int t_log_normal_(lua_State *L) {
  pt_tensor *t = inplace_target(L, "log_normal_", 3);
  return fill(L, t, "log_normal_", PT_DIST_LOG_NORMAL, luaL_optnumber(L, 2, 1.0), luaL_optnumber(L, 3, 2.0));
}

static int t_cauchy_(lua_State *L) {
  pt_tensor *t = inplace_target(L, "cauchy_", 3);
  return fill(L, t, "cauchy_", PT_DIST_CAUCHY, luaL_optnumber(L, 2, 0.0), luaL_optnumber(L, 3, 1.0));
}

/* t:random_() (every integer the dtype holds exactly, from 0), t:random_(to), t:random_(from, to) */
static int t_random_(lua_State *L) {
  pt_tensor *t = inplace_target(L, "random_", 3);
  int64_t lo = 0, hi;
  if (lua_isnoneornil(L, 2)) {
    switch (t->dtype) {
    case PT_FLOAT32: hi = ((int64_t)1 << 24) + 1; break;
    case PT_FLOAT64: hi = ((int64_t)1 << 53) + 1; break;
    case PT_INT32: hi = (int64_t)2147483647 + 1; break;
    case PT_UINT8: hi = 256; break;
    case PT_BOOL: hi = 2; break;
    default: hi = INT64_MAX; break; /* int64: [0, 2^63 - 1) */
    }
  } else if (lua_isnoneornil(L, 3)) {
    hi = luaL_checkinteger(L, 2);
  } else {
    lo = luaL_checkinteger(L, 2);
    hi = luaL_checkinteger(L, 3);
  }
  if (pt_random_integers_(lpt_ctx(L), "random_", t, lo, hi)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

/* pt.bernoulli(probs) or pt.bernoulli(t, p): the second fills t's shape with probability p */
static int l_bernoulli(lua_State *L) {
  lpt_check_max_args(L, 2, "bernoulli");
  pt_tensor *t = lpt_check_tensor(L, 1), *out;
  if (!lua_isnoneornil(L, 2)) {
    double p = luaL_checknumber(L, 2);
    if (pt_tensor_empty(lpt_ctx(L), t->dtype, t->ndim, t->shape, &out)) return lpt_error(L);
    lpt_push_tensor(L, out);
    if (pt_random_fill_(lpt_ctx(L), "bernoulli", out, PT_DIST_BERNOULLI, p, 0)) return lpt_error(L);
    return 1;
  }
  pt_status st = pt_random_bernoulli(lpt_ctx(L), t, &out);
  return lpt_push_result(L, st, out);
}

static int l_poisson(lua_State *L) {
  lpt_check_max_args(L, 1, "poisson");
  pt_tensor *out;
  pt_status st = pt_random_poisson(lpt_ctx(L), lpt_check_tensor(L, 1), &out);
  return lpt_push_result(L, st, out);
}

/* pt.multinomial(weights, n[, {replacement=false} | replacement]) -> int64 indices from 1 */
static int l_multinomial(lua_State *L) {
  lpt_check_max_args(L, 3, "multinomial");
  pt_tensor *w = lpt_check_tensor(L, 1), *out;
  lua_Integer n = luaL_checkinteger(L, 2);
  bool replacement = false;
  if (lua_isboolean(L, 3)) {
    replacement = lua_toboolean(L, 3);
  } else if (!lua_isnoneornil(L, 3)) {
    luaL_checktype(L, 3, LUA_TTABLE);
    static const char *const names[] = {"replacement", NULL};
    lpt_check_options(L, 3, "multinomial", names);
    replacement = lpt_opt_bool(L, 3, "replacement", false);
  }
  pt_ctx *ctx = lpt_ctx(L);
  if (pt_random_multinomial(ctx, w, n, replacement, &out)) return lpt_error(L);
  int64_t *p = pt_tensor_data(out), count = pt_tensor_numel(out);
  for (int64_t i = 0; i < count; i++) p[i] += 1;
  lpt_push_tensor(L, out);
  return 1;
}

/* pt.normal(mean, std[, size][, {dtype=}]): numbers with a size make a new tensor; a tensor mean
 * and/or std broadcast together */
static int l_normal(lua_State *L) {
  pt_tensor *mean = lpt_test_tensor(L, 1), *std = lpt_test_tensor(L, 2), *out;
  if (!mean && !std) {
    double mu = luaL_checknumber(L, 1), sd = luaL_checknumber(L, 2);
    luaL_checktype(L, 3, LUA_TTABLE);
    lpt_check_max_args(L, 4, "normal");
    int64_t shape[PT_MAX_DIMS];
    int ndim = lpt_check_shape(L, 3, shape);
    static const char *const names[] = {"dtype", NULL};
    if (lua_istable(L, 4)) lpt_check_options(L, 4, "normal", names);
    pt_dtype dt = lpt_opt_dtype(L, lua_istable(L, 4) ? 4 : 0, pt_default_float());
    if (dt != PT_FLOAT32 && dt != PT_FLOAT64)
      return lpt_errorf(L, "normal: dtype must be float32 or float64, got %s", pt_dtype_name(dt));
    if (!(sd >= 0.0) || isinf(sd) || !isfinite(mu))
      return bad_value(L, "normal: expected a finite mean and std >= 0, got mean %g, std %g", mu, sd);
    if (pt_tensor_empty(lpt_ctx(L), dt, ndim, shape, &out)) return lpt_error(L);
    pt_tensor_normal_(lpt_ctx(L), out, mu, sd);
    lpt_push_tensor(L, out);
    return 1;
  }
  lpt_check_max_args(L, 2, "normal");
  double mu = mean ? 0.0 : luaL_checknumber(L, 1), sd = std ? 0.0 : luaL_checknumber(L, 2);
  if (!std && (!(sd >= 0.0) || isinf(sd)))
    return bad_value(L, "normal: std must be non-negative and finite, got %g", sd);
  pt_status st = pt_random_normal(lpt_ctx(L), mean, mu, std, sd, &out);
  return lpt_push_result(L, st, out);
}

/* rand_like / randn_like (t[, {dtype=}]) and randint_like(t, [low,] high[, {dtype=}]) */
static pt_tensor *new_like(lua_State *L, const char *fname, int opts, bool floating) {
  pt_tensor *t = lpt_check_tensor(L, 1), *out;
  static const char *const names[] = {"dtype", NULL};
  if (lua_istable(L, opts)) lpt_check_options(L, opts, fname, names);
  pt_dtype dt = lpt_opt_dtype(L, lua_istable(L, opts) ? opts : 0, t->dtype);
  if (floating && dt != PT_FLOAT32 && dt != PT_FLOAT64)
    lpt_errorf(L, "%s: dtype must be float32 or float64, got %s", fname, pt_dtype_name(dt));
  if (pt_tensor_empty(lpt_ctx(L), dt, t->ndim, t->shape, &out)) lpt_error(L);
  lpt_push_tensor(L, out);
  return out;
}

static int l_rand_like(lua_State *L) {
  lpt_check_max_args(L, 2, "rand_like");
  pt_tensor_uniform_(lpt_ctx(L), new_like(L, "rand_like", 2, true), 0.0, 1.0);
  return 1;
}

static int l_randn_like(lua_State *L) {
  lpt_check_max_args(L, 2, "randn_like");
  pt_tensor_normal_(lpt_ctx(L), new_like(L, "randn_like", 2, true), 0.0, 1.0);
  return 1;
}

static int l_randint_like(lua_State *L) {
  lpt_check_max_args(L, 4, "randint_like");
  int64_t lo = 0, hi;
  int opts;
  if (lua_isinteger(L, 3)) {
    lo = luaL_checkinteger(L, 2);
    hi = luaL_checkinteger(L, 3);
    opts = 4;
  } else {
    hi = luaL_checkinteger(L, 2);
    opts = 3;
  }
  pt_tensor *out = new_like(L, "randint_like", opts, false);
  if (pt_random_integers_(lpt_ctx(L), "randint_like", out, lo, hi)) return lpt_error(L);
  return 1;
}

static const luaL_Reg random_methods[] = {
    {"uniform_", t_uniform_},         {"normal_", t_normal_},   {"bernoulli_", t_bernoulli_},
    {"exponential_", t_exponential_}, {"geometric_", t_geometric_}, {"log_normal_", t_log_normal_},
    {"cauchy_", t_cauchy_},           {"random_", t_random_},   {"bernoulli", l_bernoulli},
    {"multinomial", l_multinomial},   {"poisson", l_poisson},   {NULL, NULL},
};

static const luaL_Reg random_functions[] = {
    {"bernoulli", l_bernoulli},     {"poisson", l_poisson},     {"multinomial", l_multinomial},
    {"normal", l_normal},           {"rand_like", l_rand_like}, {"randn_like", l_randn_like},
    {"randint_like", l_randint_like}, {NULL, NULL},
};

static const char *const random_docs[] = {
    "uniform_", "t:uniform_([from=0, to=1]) -> t filled from U(from, to) (float dtypes; seeded by pt.manual_seed).",
    "normal_", "t:normal_([mean=0, std=1]) -> t filled from N(mean, std^2) (float dtypes).",
    "bernoulli_", "t:bernoulli_([p=0.5]) -> t filled with 1 (probability p) or 0 (any dtype); p a number or a\n"
    "  float tensor of probabilities broadcast to t's shape (one per element).",
    "exponential_", "t:exponential_([lambd=1]) -> t filled from the exponential distribution of rate lambd.",
    "geometric_", "t:geometric_(p) -> t filled with the number of trials up to the first success (1, 2, ...).",
    "log_normal_", "t:log_normal_([mean=1, std=2]) -> t filled with exp(N(mean, std^2)).",
    "cauchy_", "t:cauchy_([median=0, sigma=1]) -> t filled from the Cauchy distribution.",
    "random_", "t:random_([from,] to) -> t filled with integers in [from, to) (from = 0); t:random_() -> integers\n"
    "  from 0 to the largest the dtype holds exactly (2^24 for float32, 2^53 for float64).",
    "bernoulli", "pt.bernoulli(probs) -> 0/1 tensor drawn with each element's probability (probs in [0, 1]);\n"
    "  pt.bernoulli(t, p) -> t's shape and dtype, 1 with probability p. No gradient.",
    "poisson", "pt.poisson(rates) -> Poisson draws with those rates (>= 0), rates' shape and dtype.",
    "multinomial", "pt.multinomial(weights, n[, {replacement=false}]) -> int64 category indices (from 1), n per row\n"
    "  of weights (1-D or 2-D, >= 0, not all zero), each drawn with probability proportional to its weight;\n"
    "  without replacement (the default, as torch's) every index at most once per row, in draw order.",
    NULL, NULL,
};

static const char *const random_function_docs[] = {
    "normal", "pt.normal(mean, std, size[, {dtype=}]) -> new tensor of N(mean, std^2) draws;\n"
    "  pt.normal(mean_t, std_t) (tensors or a tensor and a number) -> draws with those means/stds, broadcast.",
    "rand_like", "pt.rand_like(t[, {dtype=}]) -> U(0, 1) draws of t's shape (and dtype).",
    "randn_like", "pt.randn_like(t[, {dtype=}]) -> N(0, 1) draws of t's shape (and dtype).",
    "randint_like", "pt.randint_like(t, [low,] high[, {dtype=}]) -> integers in [low, high) of t's shape.",
    NULL, NULL,
};

void lpt_open_random(lua_State *L) {
  lpt_add_methods(L, random_methods);
  lpt_add_functions(L, random_functions);
  lpt_add_docs(L, 1, random_docs);
  lpt_add_docs(L, 0, random_function_docs);
}
