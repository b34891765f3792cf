/* Elementwise ops from Lua: arithmetic metamethods (+ - * / ^ % // unary -), methods and pt.*
 * functions for binary, unary, comparison and logical ops, where / masked_fill / clamp, the
 * in-place forms and _to_dtype (clone lives with the shape ops).
 *
 * Every function here is registered with the tensor metatable as upvalue 1, so results are pushed
 * without a registry lookup; `c = a + b` on small tensors is a hot path (W3). */
#include <math.h>
#include <string.h>

#include "../lib/ops_elementwise.h"
#include "lpt.h"

/* --- fast stack helpers --- */

/* Push a result, taking over the reference (metatable from upvalue 1). */
static inline void ew_push(lua_State *L, lpt_state *S, pt_tensor *t) {
  lpt_box_new(L, S, t);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_setmetatable(L, -2);
  if (__builtin_expect(S->ctx.detect_anomaly, 0) && t->grad_fn) lpt_anomaly_note(L, t->grad_fn);
  lpt_gc_account_fast(L, S);
}

static inline bool is_number(lua_State *L, int idx) { return lua_type(L, idx) == LUA_TNUMBER; }

/* Raise the right error for an operand that is neither a tensor nor a number. */
static int bad_operand(lua_State *L, int idx, const char *expected) {
  if (lua_type(L, idx) == LUA_TUSERDATA) lpt_check_tensor(L, idx); /* "tensor was closed" */
  return luaL_typeerror(L, idx, expected);
}

/* The number at idx as Lua has it: an integer stays exact (int64 tensors compute with it beyond
 * 2^53) */
static pt_number number_at(lua_State *L, int idx) {
  return lua_isinteger(L, idx) ? pt_number_int(lua_tointeger(L, idx))
                               : pt_number_float(lua_tonumber(L, idx));
}

/* ... times alpha (add/sub's option): an integer times an integral alpha stays an integer, in
 * int64 arithmetic (wrapping, as PyTorch's); floating tensors use the product in double */
static pt_number scaled_number_at(lua_State *L, int idx, double alpha) {
  if (alpha == 1.0) return number_at(L, idx);
  double d = lua_tonumber(L, idx) * alpha;
  if (!lua_isinteger(L, idx) || alpha != floor(alpha) || fabs(alpha) >= 0x1p63) return pt_number_float(d);
  lua_Unsigned u = (lua_Unsigned)lua_tointeger(L, idx) * (lua_Unsigned)(lua_Integer)alpha;
  return (pt_number){true, (int64_t)u, d};
}

/* The options table at idx of a binary function: {alpha=} (add, sub: with_alpha) and, when
 * out_idx is given, {out=} (PyTorch's out=; *out_idx is its stack index, 0 when absent). */
static double opt_binary(lua_State *L, int idx, const char *fname, bool with_alpha, int *out_idx) {
  lpt_check_max_args(L, idx, fname);
  if (out_idx) *out_idx = 0;
  if (!lua_istable(L, idx)) {
    if (!lua_isnoneornil(L, idx))
      lpt_errorf(L, "%s: unexpected argument #%d (%s)", fname, idx, lpt_typename(L, idx));
    return 1.0;
  }
  static const char *const alpha_out[] = {"alpha", "out", NULL}, *const alpha_only[] = {"alpha", NULL};
  lpt_check_options(L, idx, fname, !out_idx ? alpha_only : with_alpha ? alpha_out : alpha_out + 1);
  double alpha = 1.0;
  if (with_alpha && lua_getfield(L, idx, "alpha") != LUA_TNIL) {
    int ok;
    alpha = lua_tonumberx(L, -1, &ok);
    if (!ok) luaL_argerror(L, idx, "alpha must be a number");
  }
  if (with_alpha) lua_pop(L, 1);
  if (!out_idx) return alpha;
  if (lua_getfield(L, idx, "out") != LUA_TNIL) {
    if (!lpt_test_tensor(L, -1)) return lpt_errorf(L, "%s: out must be a Tensor, got %s", fname, luaL_typename(L, -1));
    *out_idx = lua_gettop(L); /* left on the stack: the result */
  } else {
    lua_pop(L, 1);
  }
  return alpha;
}

/* op(arg1, arg2, {out=}): the result written into the tensor at out_idx, which is returned */
static int binary_into(lua_State *L, pt_binop op, double alpha, int out_idx) {
  pt_ctx *ctx = lpt_ctx(L);
  pt_tensor *out = lpt_check_tensor(L, out_idx), *t[2] = {NULL, NULL}, *tmp[2] = {NULL, NULL};
  pt_number n[2] = {{0}, {0}};
  for (int k = 0; k < 2; k++) /* every check before the first conversion takes a reference */
    if (!lpt_test_tensor(L, k + 1) && !is_number(L, k + 1) && !lua_isboolean(L, k + 1))
      return bad_operand(L, k + 1, "Tensor or number");
  for (int k = 0; k < 2; k++) {
    if ((t[k] = lpt_test_tensor(L, k + 1))) continue;
    if (is_number(L, k + 1)) n[k] = number_at(L, k + 1);
    else t[k] = tmp[k] = lpt_to_tensor(L, k + 1, PT_BOOL);
  }
  if (!t[0] && !t[1]) return luaL_typeerror(L, 1, "Tensor");
  pt_status st = pt_binary_into(ctx, op, t[0], n[0], t[1], n[1], alpha, out);
  pt_tensor_release(tmp[0]);
  pt_tensor_release(tmp[1]);
  if (st) return lpt_error(L);
  lua_pushvalue(L, out_idx);
  return 1;
}

/* --- binary --- */

/* op(arg1, arg2) where either may be a number (or a boolean); alpha for add/sub */
static int binary_args(lua_State *L, pt_binop op, double alpha) {
  lpt_state *S = lpt_state_fast(L);
  pt_ctx *ctx = &S->ctx;
  pt_tensor *a = lpt_test_tensor(L, 1), *b = lpt_test_tensor(L, 2), *r = NULL, *tmp = NULL;
  pt_status st;
  if (a && b) {
    if (alpha != 1.0)
      st = op == PT_BIN_ADD ? pt_add_alpha(ctx, a, b, alpha, &r) : pt_sub_alpha(ctx, a, b, alpha, &r);
    else
      st = pt_binary(ctx, op, a, b, &r);
  } else if (a && is_number(L, 2)) {
    st = pt_binary_number(ctx, op, a, scaled_number_at(L, 2, alpha), false, &r);
  } else if (b && is_number(L, 1)) {
    st = alpha != 1.0 ? pt_binary_number_alpha(ctx, op, b, number_at(L, 1), true, alpha, &r) /* s op alpha*b */
                      : pt_binary_number(ctx, op, b, number_at(L, 1), true, &r);
  } else if ((a || b) && lua_isboolean(L, a ? 2 : 1)) {
    if (alpha != 1.0)
      return lpt_errorf(L, "%s: alpha is not supported with a boolean operand", pt_binop_name(op));
    tmp = lpt_to_tensor(L, a ? 2 : 1, PT_BOOL);
    st = a ? pt_binary(ctx, op, a, tmp, &r) : pt_binary(ctx, op, tmp, b, &r);
  } else if (!a && !b && is_number(L, 1) && is_number(L, 2)) {
    return luaL_typeerror(L, 1, "Tensor");
  } else {
    return bad_operand(L, (a || is_number(L, 1)) ? 2 : 1, "Tensor or number");
  }
  pt_tensor_release(tmp);
  if (st) return lpt_error(L);
  ew_push(L, S, r);
  return 1;
}

/* The arithmetic metamethods: the hot path of `c = a + b`. */
static int mm_add(lua_State *L) {
  lpt_state *S = lpt_state_fast(L);
  pt_tensor *a = lpt_test_tensor(L, 1), *b, *r;
  if (a && (b = lpt_test_tensor(L, 2))) {
    if (pt_add(&S->ctx, a, b, &r)) return lpt_error(L);
    ew_push(L, S, r);
    return 1;
  }
  return binary_args(L, PT_BIN_ADD, 1.0);
}
static int mm_sub(lua_State *L) { return binary_args(L, PT_BIN_SUB, 1.0); }
static int mm_mul(lua_State *L) { return binary_args(L, PT_BIN_MUL, 1.0); }
static int mm_div(lua_State *L) { return binary_args(L, PT_BIN_DIV, 1.0); }
static int mm_pow(lua_State *L) { return binary_args(L, PT_BIN_POW, 1.0); }
static int mm_mod(lua_State *L) { return binary_args(L, PT_BIN_REMAINDER, 1.0); }
static int mm_idiv(lua_State *L) { return binary_args(L, PT_BIN_FLOOR_DIVIDE, 1.0); }

/* a third argument other than the options is refused, never
 * ignored; the metamethods (__add, __div, ...) get exactly two */
#define BINARY_FN(name, OP, WITH_ALPHA)                                                         \
  static int f_##name(lua_State *L) {                                                           \
    int out_idx;                                                                                \
    double alpha = opt_binary(L, 3, #name, WITH_ALPHA, &out_idx);                               \
    return out_idx ? binary_into(L, OP, alpha, out_idx) : binary_args(L, OP, alpha);            \
  }
BINARY_FN(add, PT_BIN_ADD, true)
BINARY_FN(sub, PT_BIN_SUB, true)
BINARY_FN(mul, PT_BIN_MUL, false)

/* pt.div(a, b, {rounding_mode = "trunc" | "floor"}) is torch.div's: pt.divide (tensor_more.lua,
 * which has the rounding modes) does it; without one, div is the plain binary op */
static int f_div(lua_State *L) {
  static const char *const names[] = {"out", "rounding_mode", NULL};
  if (lua_istable(L, 3)) lpt_check_options(L, 3, "div", names);
  if (lua_istable(L, 3)) {
    int has_mode = lua_getfield(L, 3, "rounding_mode") != LUA_TNIL;
    lua_pop(L, 1);
    if (has_mode) {
      lua_getfield(L, LUA_REGISTRYINDEX, LPT_MODULE);
      lua_getfield(L, -1, "divide"); /* through the module's __index: loads tensor_more */
      lua_insert(L, 1);
      lua_pop(L, 1);
      lua_call(L, lua_gettop(L) - 1, 1);
      return 1;
    }
  }
  int out_idx;
  opt_binary(L, 3, "div", false, &out_idx);
  return out_idx ? binary_into(L, PT_BIN_DIV, 1.0, out_idx) : binary_args(L, PT_BIN_DIV, 1.0);
}
BINARY_FN(pow, PT_BIN_POW, false)
BINARY_FN(maximum, PT_BIN_MAXIMUM, false)
BINARY_FN(minimum, PT_BIN_MINIMUM, false)
BINARY_FN(eq, PT_BIN_EQ, false)
BINARY_FN(ne, PT_BIN_NE, false)
BINARY_FN(lt, PT_BIN_LT, false)
BINARY_FN(le, PT_BIN_LE, false)
BINARY_FN(gt, PT_BIN_GT, false)
BINARY_FN(ge, PT_BIN_GE, false)
BINARY_FN(logical_and, PT_BIN_LOGICAL_AND, false)
BINARY_FN(logical_or, PT_BIN_LOGICAL_OR, false)
BINARY_FN(atan2, PT_BIN_ATAN2, false)
BINARY_FN(hypot, PT_BIN_HYPOT, false)
BINARY_FN(remainder, PT_BIN_REMAINDER, false)
BINARY_FN(fmod, PT_BIN_FMOD, false)
BINARY_FN(floor_divide, PT_BIN_FLOOR_DIVIDE, false)
BINARY_FN(logaddexp, PT_BIN_LOGADDEXP, false)
BINARY_FN(xlogy, PT_BIN_XLOGY, false)
BINARY_FN(copysign, PT_BIN_COPYSIGN, false)

/* --- in-place binary: self:op_(other[, {alpha=}]) -> self --- */

static int inplace_binary(lua_State *L, pt_binop op, double alpha) {
  pt_tensor *self = lpt_check_tensor(L, 1);
  pt_ctx *ctx = lpt_ctx(L);
  pt_tensor *b = lpt_test_tensor(L, 2);
  pt_status st;
  if (b) {
    if (op == PT_BIN_ADD) st = pt_add_(ctx, self, b, alpha);
    else if (op == PT_BIN_SUB) st = pt_sub_(ctx, self, b, alpha);
    else st = pt_binary_(ctx, op, self, b);
  } else if (is_number(L, 2)) {
    st = pt_binary_number_(ctx, op, self, scaled_number_at(L, 2, alpha));
  } else if (lua_isboolean(L, 2)) {
    b = lpt_to_tensor(L, 2, PT_BOOL);
    st = pt_binary_(ctx, op, self, b);
    pt_tensor_release(b);
  } else {
    return bad_operand(L, 2, "Tensor or number");
  }
  if (st) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

static int m_add_(lua_State *L) { return inplace_binary(L, PT_BIN_ADD, opt_binary(L, 3, "add_", true, NULL)); }
static int m_sub_(lua_State *L) { return inplace_binary(L, PT_BIN_SUB, opt_binary(L, 3, "sub_", true, NULL)); }
#define INPLACE_BINARY_FN(name, OP)                                                             \
  static int m_##name##_(lua_State *L) {                                                        \
    lpt_check_max_args(L, 2, #name "_");                                                        \
    return inplace_binary(L, OP, 1.0);                                                          \
  }
INPLACE_BINARY_FN(mul, PT_BIN_MUL)

/* t:div_(other[, {rounding_mode = "trunc" | "floor"}]) is torch's div_: with a rounding mode
 * t:divide_ (tensor_more.lua) does it, as pt.div does with pt.divide */
static int m_div_(lua_State *L) {
  static const char *const names[] = {"rounding_mode", NULL};
  if (lua_istable(L, 3) && !lpt_test_tensor(L, 3)) {
    lpt_check_max_args(L, 3, "div_");
    lpt_check_options(L, 3, "div_", names);
    int has_mode = lua_getfield(L, 3, "rounding_mode") != LUA_TNIL;
    lua_pop(L, 1);
    if (has_mode) {
      lpt_check_tensor(L, 1);
      lua_getfield(L, 1, "divide_"); /* through the Tensor index: loads tensor_more */
      lua_insert(L, 1);
      lua_call(L, 3, 1);
      return 1;
    }
    lua_settop(L, 2);
  }
  lpt_check_max_args(L, 2, "div_");
  return inplace_binary(L, PT_BIN_DIV, 1.0);
}
INPLACE_BINARY_FN(pow, PT_BIN_POW)
INPLACE_BINARY_FN(maximum, PT_BIN_MAXIMUM)
INPLACE_BINARY_FN(minimum, PT_BIN_MINIMUM)
INPLACE_BINARY_FN(atan2, PT_BIN_ATAN2)
INPLACE_BINARY_FN(hypot, PT_BIN_HYPOT)
INPLACE_BINARY_FN(remainder, PT_BIN_REMAINDER)
INPLACE_BINARY_FN(fmod, PT_BIN_FMOD)
INPLACE_BINARY_FN(floor_divide, PT_BIN_FLOOR_DIVIDE)
INPLACE_BINARY_FN(xlogy, PT_BIN_XLOGY)
INPLACE_BINARY_FN(copysign, PT_BIN_COPYSIGN)

/* --- lerp(start, end, weight): start and end tensors, weight a tensor or a number --- */

static pt_tensor *lerp_weight(lua_State *L, double *w) {
  pt_tensor *t = lpt_test_tensor(L, 3);
  *w = 0;
  if (t) return t;
  if (!is_number(L, 3)) bad_operand(L, 3, "Tensor or number");
  *w = lua_tonumber(L, 3);
  return NULL;
}

static int f_lerp(lua_State *L) {
  lpt_check_max_args(L, 3, "lerp");
  pt_tensor *a = lpt_check_tensor(L, 1), *b = lpt_check_tensor(L, 2), *r;
  double w;
  pt_tensor *wt = lerp_weight(L, &w);
  if (pt_lerp(lpt_ctx(L), a, b, wt, w, &r)) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

static int m_lerp_(lua_State *L) {
  lpt_check_max_args(L, 3, "lerp_");
  pt_tensor *a = lpt_check_tensor(L, 1), *b = lpt_check_tensor(L, 2);
  double w;
  pt_tensor *wt = lerp_weight(L, &w);
  if (pt_lerp_(lpt_ctx(L), a, b, wt, w)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

/* --- unary --- */

static int unary(lua_State *L, pt_unop op) {
  lpt_state *S = lpt_get_state(L);
  pt_tensor *a = lpt_check_tensor(L, 1), *r;
  if (pt_unary(&S->ctx, op, a, &r)) return lpt_error(L);
  ew_push(L, S, r);
  return 1;
}

/* f(t[, {out=}]): PyTorch's out= for the unary functions */
static int unary_opts(lua_State *L, pt_unop op, const char *fname) {
  int out_idx;
  opt_binary(L, 2, fname, false, &out_idx);
  if (!out_idx) return unary(L, op);
  if (pt_unary_into(lpt_ctx(L), op, lpt_check_tensor(L, 1), lpt_check_tensor(L, out_idx)))
    return lpt_error(L);
  lua_pushvalue(L, out_idx);
  return 1;
}

static int inplace_unary(lua_State *L, pt_unop op) {
  pt_tensor *a = lpt_check_tensor(L, 1);
  if (pt_unary_(lpt_ctx(L), op, a)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

static int mm_unm(lua_State *L) { return unary(L, PT_UN_NEG); }

/* t:round(2) (PyTorch's decimals) and the like are refused, never ignored; an options table
 * may give out= */
#define UNARY_FN(name, OP)                                                                      \
  static int f_##name(lua_State *L) { return unary_opts(L, OP, #name); }                        \
  static int m_##name##_(lua_State *L) {                                                        \
    lpt_check_max_args(L, 1, #name "_");                                                        \
    return inplace_unary(L, OP);                                                                \
  }
UNARY_FN(neg, PT_UN_NEG)
UNARY_FN(abs, PT_UN_ABS)
UNARY_FN(exp, PT_UN_EXP)
UNARY_FN(log, PT_UN_LOG)
UNARY_FN(sqrt, PT_UN_SQRT)
UNARY_FN(tanh, PT_UN_TANH)
UNARY_FN(sigmoid, PT_UN_SIGMOID)
UNARY_FN(relu, PT_UN_RELU)
UNARY_FN(gelu, PT_UN_GELU)
UNARY_FN(sin, PT_UN_SIN)
UNARY_FN(cos, PT_UN_COS)
UNARY_FN(sign, PT_UN_SIGN)
UNARY_FN(floor, PT_UN_FLOOR)
UNARY_FN(ceil, PT_UN_CEIL)

/* round(t[, {decimals = d, out = o}]) and t:round_([{decimals = d}]): torch.round's decimals */
static int64_t round_decimals_opt(lua_State *L, int idx, const char *fname, bool with_out, int *out_idx) {
  static const char *const with[] = {"decimals", "out", NULL}, *const without[] = {"decimals", NULL};
  lpt_check_max_args(L, idx, fname);
  *out_idx = 0;
  if (lua_isnoneornil(L, idx)) return 0;
  if (!lua_istable(L, idx) || lpt_test_tensor(L, idx))
    return lpt_errorf(L, "%s: unexpected argument #%d (%s)", fname, idx, lpt_typename(L, idx));
  lpt_check_options(L, idx, fname, with_out ? with : without);
  int64_t d = 0;
  if (lua_getfield(L, idx, "decimals") != LUA_TNIL) {
    if (!lua_isinteger(L, -1))
      return lpt_errorf(L, "%s: decimals must be an integer, got %s", fname,
                        lua_type(L, -1) == LUA_TNUMBER ? "a float" : luaL_typename(L, -1));
    d = lua_tointeger(L, -1);
  }
  lua_pop(L, 1);
  if (with_out && lua_getfield(L, idx, "out") != LUA_TNIL) {
    if (!lpt_test_tensor(L, -1)) return lpt_errorf(L, "%s: out must be a Tensor, got %s", fname, luaL_typename(L, -1));
    *out_idx = lua_gettop(L);
  } else if (with_out) {
    lua_pop(L, 1);
  }
  return d;
}

static int f_round(lua_State *L) {
  if (lua_gettop(L) <= 1) return unary(L, PT_UN_ROUND);
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  int out_idx;
  int64_t d = round_decimals_opt(L, 2, "round", true, &out_idx);
  pt_ctx *ctx = lpt_ctx(L);
  if (out_idx) {
    if (pt_round_decimals_into(ctx, t, d, lpt_check_tensor(L, out_idx))) return lpt_error(L);
    lua_pushvalue(L, out_idx);
    return 1;
  }
  if (pt_round_decimals(ctx, t, d, &r)) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

static int m_round_(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  int out_idx;
  int64_t d = round_decimals_opt(L, 2, "round_", false, &out_idx);
  if (pt_round_decimals_(lpt_ctx(L), t, d)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}
UNARY_FN(logical_not, PT_UN_LOGICAL_NOT)
UNARY_FN(erf, PT_UN_ERF)
UNARY_FN(erfc, PT_UN_ERFC)
UNARY_FN(erfinv, PT_UN_ERFINV)
UNARY_FN(log1p, PT_UN_LOG1P)
UNARY_FN(expm1, PT_UN_EXPM1)
UNARY_FN(log2, PT_UN_LOG2)
UNARY_FN(log10, PT_UN_LOG10)
UNARY_FN(exp2, PT_UN_EXP2)
UNARY_FN(tan, PT_UN_TAN)
UNARY_FN(asin, PT_UN_ASIN)
UNARY_FN(acos, PT_UN_ACOS)
UNARY_FN(atan, PT_UN_ATAN)
UNARY_FN(sinh, PT_UN_SINH)
UNARY_FN(cosh, PT_UN_COSH)
UNARY_FN(asinh, PT_UN_ASINH)
UNARY_FN(acosh, PT_UN_ACOSH)
UNARY_FN(atanh, PT_UN_ATANH)
UNARY_FN(frac, PT_UN_FRAC)
UNARY_FN(sinc, PT_UN_SINC)

/* --- where, masked_fill, clamp --- */

/* The dtype of the 0-d tensor that the number or boolean at idx becomes next to a tensor of
 * dtype `like` (FLOAT32 when the other operand is no tensor either): an integer keeps like (bool:
 * int64), a float keeps a floating like, else float32, as PyTorch's promotion. The number must fit
 * that dtype, as on every write path ("where: value 1099511627776 cannot be converted to int32
 * without overflow"). Raises before anything is allocated. */
static pt_dtype where_number_dtype(lua_State *L, int idx, pt_dtype like, const char *fname) {
  if (lpt_test_tensor(L, idx)) return PT_DTYPE_COUNT;
  if (lua_isboolean(L, idx)) return PT_BOOL;
  if (!is_number(L, idx)) bad_operand(L, idx, "Tensor or number");
  pt_dtype dt = lua_isinteger(L, idx) ? (like == PT_BOOL ? PT_INT64 : like)
                                      : (pt_dtype_is_floating(like) ? like : pt_default_float());
  lpt_check_value(L, fname, dt, idx, lua_tonumber(L, idx));
  return dt;
}

/* where's operand at idx: the tensor, or the number as a 0-d tensor of dtype dt (an int64
 * exactly); new reference, NULL when out of memory (ctx has the message) */
static pt_tensor *where_operand(lua_State *L, int idx, pt_dtype dt) {
  pt_tensor *t = lpt_test_tensor(L, idx);
  if (t) return pt_tensor_retain(t);
  pt_number v = lua_isboolean(L, idx) ? pt_number_int(lua_toboolean(L, idx)) : number_at(L, idx);
  if (pt_tensor_scalar(lpt_ctx(L), dt, v.d, &t)) return NULL;
  if (dt == PT_INT64 && v.is_int) *(int64_t *)pt_tensor_data(t) = v.i; /* beyond 2^53 too */
  if (dt == PT_FLOAT32 && v.is_int) *(float *)pt_tensor_data(t) = (float)v.i; /* rounded once */
  return t;
}

static int where_impl(lua_State *L, int cond_idx, int a_idx, int b_idx) {
  pt_tensor *cond = lpt_check_tensor(L, cond_idx);
  pt_tensor *at = lpt_test_tensor(L, a_idx), *bt = lpt_test_tensor(L, b_idx);
  /* two numbers: int64 when both are integers (or booleans), as torch's Python scalars */
  bool ints = !at && !bt && (lua_isinteger(L, a_idx) || lua_isboolean(L, a_idx)) &&
              (lua_isinteger(L, b_idx) || lua_isboolean(L, b_idx));
  pt_dtype both = ints ? PT_INT64 : pt_default_float();
  pt_dtype da = where_number_dtype(L, a_idx, bt ? bt->dtype : both, "where");
  pt_dtype db = where_number_dtype(L, b_idx, at ? at->dtype : both, "where");
  pt_tensor *a = where_operand(L, a_idx, da), *b = a ? where_operand(L, b_idx, db) : NULL, *r = NULL;
  pt_status st = a && b ? pt_where(lpt_ctx(L), cond, a, b, &r) : PT_ENOMEM;
  pt_tensor_release(a);
  pt_tensor_release(b);
  if (st) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

/* pt.where(cond, a, b); pt.where(cond) is cond:nonzero({as_tuple = true}), as torch.where(cond):
 * one int64 tensor of 1-based indices per dim, as several return values */
static int f_where(lua_State *L) {
  if (lua_gettop(L) == 1) {
    lpt_check_tensor(L, 1);
    lua_getfield(L, 1, "nonzero");
    lua_pushvalue(L, 1);
    lua_createtable(L, 0, 1);
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "as_tuple");
    lua_call(L, 2, LUA_MULTRET);
    return lua_gettop(L) - 1;
  }
  return where_impl(L, 1, 2, 3);
}
/* t:where(cond, other) == pt.where(cond, t, other) */
static int m_where(lua_State *L) {
  lpt_check_tensor(L, 1);
  return where_impl(L, 2, 1, 3);
}

/* pt.fmax(a, b) / pt.fmin(a, b), t:fmax(other): a number on either side becomes a 0-d tensor as
 * where's numbers do */
static int fmaxmin_impl(lua_State *L, bool is_max) {
  const char *fname = is_max ? "fmax" : "fmin";
  lpt_check_max_args(L, 2, fname);
  pt_tensor *at = lpt_test_tensor(L, 1), *bt = lpt_test_tensor(L, 2);
  if (!at && !bt) return bad_operand(L, 1, "Tensor");
  pt_dtype da = where_number_dtype(L, 1, bt ? bt->dtype : pt_default_float(), fname);
  pt_dtype db = where_number_dtype(L, 2, at ? at->dtype : pt_default_float(), fname);
  pt_tensor *a = where_operand(L, 1, da), *b = a ? where_operand(L, 2, db) : NULL, *r = NULL;
  pt_ctx *ctx = lpt_ctx(L);
  pt_status st = a && b ? (is_max ? pt_fmax(ctx, a, b, &r) : pt_fmin(ctx, a, b, &r)) : PT_ENOMEM;
  pt_tensor_release(a);
  pt_tensor_release(b);
  if (st) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}
static int f_fmax(lua_State *L) { return fmaxmin_impl(L, true); }
static int f_fmin(lua_State *L) { return fmaxmin_impl(L, false); }

static double check_fill_value(lua_State *L, int idx) {
  if (lua_isboolean(L, idx)) return lua_toboolean(L, idx);
  if (!is_number(L, idx)) return luaL_typeerror(L, idx, "number or boolean");
  return lua_tonumber(L, idx);
}

/* masked_fill's value at idx, checked like every write path; an integer exact in int64 */
static pt_number fill_value(lua_State *L, int idx, pt_dtype dt, const char *fname) {
  double v = check_fill_value(L, idx);
  lpt_check_value(L, fname, dt, idx, v);
  return lua_isinteger(L, idx) ? pt_number_int(lua_tointeger(L, idx))
         : lua_isboolean(L, idx) ? pt_number_int((int64_t)v) : pt_number_float(v);
}

static int f_masked_fill(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *mask = lpt_check_tensor(L, 2), *r, *vt = lpt_test_tensor(L, 3);
  if (vt) { /* a 0-d tensor value, torch's Tensor overload (with its gradient) */
    if (pt_masked_fill_tensor(lpt_ctx(L), t, mask, vt, &r)) return lpt_error(L);
    lpt_push_tensor(L, r);
    return 1;
  }
  pt_number v = fill_value(L, 3, t->dtype, "masked_fill");
  if (pt_masked_fill_number(lpt_ctx(L), t, mask, v, &r)) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

static int m_masked_fill_(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *mask = lpt_check_tensor(L, 2), *vt = lpt_test_tensor(L, 3);
  if (vt) {
    if (pt_masked_fill_tensor_(lpt_ctx(L), t, mask, vt)) return lpt_error(L);
    lua_settop(L, 1);
    return 1;
  }
  pt_number v = fill_value(L, 3, t->dtype, "masked_fill_");
  if (pt_masked_fill_number_(lpt_ctx(L), t, mask, v)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

/* clamp(t, min, max) with nil for an open side, or clamp(t, {min=, max=}); the bounds as Lua has
 * them (integers exact: they decide the result's dtype, as PyTorch's int and float scalars) or
 * tensors (torch.clamp's Tensor overload). lo / hi point at the number bounds given, NULL for an
 * open side or a tensor bound; tlo / thi are the tensor bounds (borrowed), NULL when none. */
static void clamp_args(lua_State *L, const char *fname, pt_number *lo, pt_number *hi, pt_number **plo,
                       pt_number **phi, pt_tensor **tlo, pt_tensor **thi) {
  if (lua_istable(L, 2) && !lpt_test_tensor(L, 2)) {
    static const char *const names[] = {"min", "max", NULL};
    lpt_check_max_args(L, 2, fname);
    lpt_check_options(L, 2, fname, names);
    lua_getfield(L, 2, "min");
    lua_getfield(L, 2, "max");
    lua_remove(L, 2);
  } else {
    lpt_check_max_args(L, 3, fname);
  }
  *plo = *phi = NULL;
  *tlo = *thi = NULL;
  for (int k = 0; k < 2; k++) {
    int idx = 2 + k;
    if (lua_isnoneornil(L, idx)) continue;
    pt_tensor *bt = lpt_test_tensor(L, idx);
    if (bt) {
      *(k == 0 ? tlo : thi) = bt;
      continue;
    }
    if (!is_number(L, idx))
      lpt_errorf(L, "%s: %s must be a number or a Tensor, got %s", fname, k == 0 ? "min" : "max",
                 luaL_typename(L, idx));
    if (k == 0) {
      *lo = number_at(L, idx);
      *plo = lo;
    } else {
      *hi = number_at(L, idx);
      *phi = hi;
    }
  }
}

static int f_clamp(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL, *tlo, *thi;
  pt_number lo, hi, *plo, *phi;
  clamp_args(L, "clamp", &lo, &hi, &plo, &phi, &tlo, &thi);
  pt_ctx *ctx = lpt_ctx(L);
  if (!tlo && !thi) {
    if (pt_clamp_number(ctx, t, plo, phi, &r)) return lpt_error(L);
  } else {
    /* a tensor bound; a number on the other side is applied after it */
    if (pt_clamp_tensor(ctx, t, tlo, thi, &r)) return lpt_error(L);
    if (plo || phi) {
      pt_tensor *r2 = NULL;
      pt_status st = pt_clamp_number(ctx, r, plo, phi, &r2);
      pt_tensor_release(r);
      if (st) return lpt_error(L);
      r = r2;
    }
  }
  lpt_push_tensor(L, r);
  return 1;
}

static int m_clamp_(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *tlo, *thi;
  pt_number lo, hi, *plo, *phi;
  clamp_args(L, "clamp_", &lo, &hi, &plo, &phi, &tlo, &thi);
  pt_ctx *ctx = lpt_ctx(L);
  if (!tlo && !thi) {
    if (pt_clamp_number_(ctx, t, plo, phi)) return lpt_error(L);
  } else {
    if (pt_clamp_tensor_(ctx, t, tlo, thi)) return lpt_error(L);
    if ((plo || phi) && pt_clamp_number_(ctx, t, plo, phi)) return lpt_error(L);
  }
  lua_settop(L, 1);
  return 1;
}

/* --- conversions, copies --- */

static int m_to_dtype(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r;
  pt_dtype dt = lpt_check_dtype(L, 2);
  if (pt_to_dtype(lpt_ctx(L), t, dt, &r)) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

static int m_copy_(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *src = lpt_check_tensor(L, 2);
  if (pt_copy_(lpt_ctx(L), t, src)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

/* a < b, a <= b, a > b, a >= b with a tensor: Lua turns a comparison's result into one boolean
 * (and gives __lt swapped operands for >), so an element-wise mask (torch's x > 0) cannot come
 * from these operators; say what to write instead of Lua's "attempt to compare two Tensor values" */
static int mm_compare(lua_State *L) {
  return lpt_errorf(L, "attempt to compare a Tensor with <, <=, > or >= (a Lua comparison gives one "
                       "boolean): use a:lt(b), a:le(b), a:gt(b) or a:ge(b) for the element-wise bool "
                       "tensor (torch's a < b, ...), or t:item() for a one-element tensor's number");
}

/* --- registration --- */

static const luaL_Reg metamethods[] = {
    {"__add", mm_add}, {"__sub", mm_sub}, {"__mul", mm_mul},
    {"__div", mm_div}, {"__pow", mm_pow}, {"__unm", mm_unm},
    {"__mod", mm_mod}, {"__idiv", mm_idiv}, {"__lt", mm_compare},
    {"__le", mm_compare},
    {NULL, NULL},
};

/* both t:name(...) and pt.name(...) */
static const luaL_Reg shared[] = {
    {"add", f_add},         {"sub", f_sub},       {"mul", f_mul},
    {"div", f_div},         {"pow", f_pow},       {"maximum", f_maximum},
    {"minimum", f_minimum}, {"eq", f_eq},         {"ne", f_ne},
    {"lt", f_lt},           {"le", f_le},         {"gt", f_gt},
    {"ge", f_ge},           {"logical_and", f_logical_and},
    {"logical_or", f_logical_or},                 {"logical_not", f_logical_not},
    {"neg", f_neg},         {"abs", f_abs},       {"exp", f_exp},
    {"log", f_log},         {"sqrt", f_sqrt},     {"tanh", f_tanh},
    {"sigmoid", f_sigmoid}, {"relu", f_relu},     {"gelu", f_gelu},
    {"sin", f_sin},         {"cos", f_cos},       {"sign", f_sign},
    {"floor", f_floor},     {"ceil", f_ceil},     {"round", f_round},
    {"masked_fill", f_masked_fill},               {"clamp", f_clamp},
    {"atan2", f_atan2},     {"hypot", f_hypot},   {"remainder", f_remainder},
    {"fmod", f_fmod},       {"floor_divide", f_floor_divide},
    {"logaddexp", f_logaddexp},                   {"xlogy", f_xlogy},
    {"copysign", f_copysign},                     {"lerp", f_lerp},
    {"erf", f_erf},         {"erfc", f_erfc},     {"erfinv", f_erfinv},
    {"log1p", f_log1p},     {"expm1", f_expm1},   {"log2", f_log2},
    {"log10", f_log10},     {"exp2", f_exp2},     {"tan", f_tan},
    {"asin", f_asin},       {"acos", f_acos},     {"atan", f_atan},
    {"sinh", f_sinh},       {"cosh", f_cosh},     {"asinh", f_asinh},
    {"acosh", f_acosh},     {"atanh", f_atanh},   {"frac", f_frac},
    {"sinc", f_sinc},       {"fmax", f_fmax},     {"fmin", f_fmin},
    {NULL, NULL},
};

static const luaL_Reg methods_only[] = {
    {"where", m_where},     {"add_", m_add_},     {"sub_", m_sub_},
    {"mul_", m_mul_},       {"div_", m_div_},     {"pow_", m_pow_},
    {"maximum_", m_maximum_},                     {"minimum_", m_minimum_},
    {"neg_", m_neg_},       {"abs_", m_abs_},     {"exp_", m_exp_},
    {"log_", m_log_},       {"sqrt_", m_sqrt_},   {"tanh_", m_tanh_},
    {"sigmoid_", m_sigmoid_},                     {"relu_", m_relu_},
    {"gelu_", m_gelu_},     {"sin_", m_sin_},     {"cos_", m_cos_},
    {"sign_", m_sign_},     {"floor_", m_floor_}, {"ceil_", m_ceil_},
    {"round_", m_round_},   {"logical_not_", m_logical_not_},
    {"clamp_", m_clamp_},   {"masked_fill_", m_masked_fill_},
    {"copy_", m_copy_},     {"_to_dtype", m_to_dtype},
    {"atan2_", m_atan2_},   {"hypot_", m_hypot_}, {"remainder_", m_remainder_},
    {"fmod_", m_fmod_},     {"floor_divide_", m_floor_divide_},
    {"xlogy_", m_xlogy_},   {"copysign_", m_copysign_},
    {"lerp_", m_lerp_},
    {"erf_", m_erf_},       {"erfc_", m_erfc_},   {"erfinv_", m_erfinv_},
    {"log1p_", m_log1p_},   {"expm1_", m_expm1_}, {"log2_", m_log2_},
    {"log10_", m_log10_},   {"exp2_", m_exp2_},   {"tan_", m_tan_},
    {"asin_", m_asin_},     {"acos_", m_acos_},   {"atan_", m_atan_},
    {"sinh_", m_sinh_},     {"cosh_", m_cosh_},   {"asinh_", m_asinh_},
    {"acosh_", m_acosh_},   {"atanh_", m_atanh_}, {"frac_", m_frac_},
    {"sinc_", m_sinc_},
    {NULL, NULL},
};

static const luaL_Reg functions_only[] = {
    {"where", f_where},
    {NULL, NULL},
};

static const char *const docs[] = {
    "add", "add(a, b[, {alpha=1, out=}]) -> a + alpha * b with broadcasting; also a + b, t:add(u). Numbers on either side:\n"
    "  a Lua integer keeps an integer tensor's dtype (exact with int64 beyond 2^53), a Lua float makes it float32.\n"
    "  {out = t}, as PyTorch's out= (here and in the other element-wise functions: mul, div, exp, sqrt, ...):\n"
    "  the result is written into t, which must have the result's shape and a dtype it casts to, and t is\n"
    "  returned; no new tensor (a loop over large tensors stays in cache), no autograd.",
    "sub", "sub(a, b[, {alpha=1, out=}]) -> a - alpha * b; also a - b.",
    "mul", "mul(a, b[, {out=}]) -> elementwise product with broadcasting; also a * b.",
    "div", "div(a, b) -> true division (integers give float32); also a / b.",
    "pow", "pow(a, b) -> a raised to b elementwise; also a ^ b.",
    "maximum", "maximum(a, b) -> elementwise maximum (NaN propagates).",
    "minimum", "minimum(a, b) -> elementwise minimum (NaN propagates).",
    "eq", "eq(a, b) -> bool tensor a == b (== on tensors is identity; use this for values).",
    "ne", "ne(a, b) -> bool tensor a ~= b.",
    "lt", "lt(a, b) -> bool tensor a < b.",
    "le", "le(a, b) -> bool tensor a <= b.",
    "gt", "gt(a, b) -> bool tensor a > b.",
    "ge", "ge(a, b) -> bool tensor a >= b.",
    "logical_and", "logical_and(a, b) -> bool tensor, nonzero counts as true.",
    "logical_or", "logical_or(a, b) -> bool tensor.",
    "logical_not", "logical_not(t) -> bool tensor t == 0.",
    "neg", "neg(t) -> -t.",
    "abs", "abs(t) -> |t|.",
    "exp", "exp(t[, {out=}]) -> e^t (integers give float32).",
    "log", "log(t) -> natural logarithm.",
    "sqrt", "sqrt(t) -> square root.",
    "tanh", "tanh(t) -> hyperbolic tangent.",
    "sigmoid", "sigmoid(t) -> 1 / (1 + e^-t).",
    "relu", "relu(t) -> max(t, 0).",
    "gelu", "gelu(t) -> t * Phi(t), the exact erf form.",
    "sin", "sin(t) -> sine.",
    "cos", "cos(t) -> cosine.",
    "sign", "sign(t) -> -1, 0 or 1 (a zero gradient, as PyTorch's).",
    "floor", "floor(t) -> rounded down (a zero gradient, as PyTorch's).",
    "ceil", "ceil(t) -> rounded up (a zero gradient, as PyTorch's).",
    "round", "round(t[, {decimals = 0, out=}]) -> rounded half to even (a zero gradient). decimals d rounds to d\n"
    "  decimal places (negative: to tens, hundreds, ...) as torch.round: nearbyint(t * 10^d) / 10^d in t's\n"
    "  dtype (floating tensors only). t:round_({decimals = d}) in place.",
    "masked_fill", "masked_fill(t, mask, value) -> copy of t with value where the bool mask (broadcast to t) is true.\n"
    "  value: a number or a 0-d tensor (cast to t's dtype; its gradient is the sum of t's over the mask), as torch.",
    "clamp", "clamp(t, min, max) -> t limited to [min, max]; either bound may be nil. Also clamp(t, {min=, max=}).\n"
    "  The result's dtype is t's promoted with the bounds, as torch.clamp: a float bound (even 2.0) makes an\n"
    "  integer tensor float32, integer bounds make a bool tensor int64. A bound the dtype cannot hold is an\n"
    "  error (so is a negative bound for uint8, which torch wraps around); int64 bounds are exact.\n"
    "  The bounds may be tensors (broadcast with t, dtypes promoted, NaN in any gives NaN, min > max gives\n"
    "  max): gradients as torch's, to t where min <= t <= max, to min where t < min < max, to max where\n"
    "  t > max or max < min. t:clamp_(min, max) takes tensors too.",
    "atan2", "atan2(a, b) -> the angle of the point (b, a) in [-pi, pi], elementwise with broadcasting\n"
    "  (torch.atan2); integers give float32. Numbers on either side.",
    "hypot", "hypot(a, b) -> sqrt(a^2 + b^2) without overflow; floating tensors only.",
    "remainder", "remainder(a, b) -> a - floor(a / b) * b, Python's %: the result has the sign of the divisor\n"
    "  (-5 % 3 = 1, 5 % -3 = -1); also a % b. Integers stay integers, and an integer divisor of 0 is\n"
    "  an error (floats give nan). Gradients: 1 for a, -floor(a / b) for b.",
    "fmod", "fmod(a, b) -> C's fmod: the result has the sign of the dividend (fmod(-5, 3) = -2). Integers\n"
    "  stay integers; an integer divisor of 0 is an error (floats give nan). Gradients: 1 for a,\n"
    "  -trunc(a / b) for b.",
    "floor_divide", "floor_divide(a, b) -> a / b rounded toward -inf (torch >= 1.13), also a // b; -7 // 2 = -4.\n"
    "  Integers stay integers; an integer divisor of 0 is an error (floats give +-inf or nan). No\n"
    "  gradient (PyTorch has none either).",
    "logaddexp", "logaddexp(a, b) -> log(e^a + e^b) without overflow; floating tensors only.",
    "xlogy", "xlogy(a, b) -> a * log(b), 0 where a == 0 (NaN where b is NaN); integers give float32.",
    "copysign", "copysign(a, b) -> |a| with the sign of b (its sign bit: -0 counts as negative); integers\n"
    "  give float32. The gradient for b is zero.",
    "lerp", "lerp(start, end, weight) -> start + weight * (end - start); start and end tensors, weight a\n"
    "  number or a tensor; all three broadcast. Floating dtypes only. Gradients: (1 - weight) for start,\n"
    "  weight for end, end - start for weight.",
    "erf", "erf(t) -> the error function 2/sqrt(pi) * integral of e^(-u^2) from 0 to t (integers give float32).",
    "erfc", "erfc(t) -> 1 - erf(t), accurate where erf(t) is near 1.",
    "erfinv", "erfinv(t) -> the inverse of erf on [-1, 1]: +-inf at +-1, nan outside.",
    "log1p", "log1p(t) -> log(1 + t), accurate for small t.",
    "expm1", "expm1(t) -> e^t - 1, accurate for small t.",
    "log2", "log2(t) -> base-2 logarithm.",
    "log10", "log10(t) -> base-10 logarithm.",
    "exp2", "exp2(t) -> 2^t.",
    "tan", "tan(t) -> tangent.",
    "asin", "asin(t) -> arcsine in [-pi/2, pi/2] (nan outside [-1, 1]).",
    "acos", "acos(t) -> arccosine in [0, pi] (nan outside [-1, 1]).",
    "atan", "atan(t) -> arctangent in (-pi/2, pi/2).",
    "sinh", "sinh(t) -> hyperbolic sine.",
    "cosh", "cosh(t) -> hyperbolic cosine.",
    "asinh", "asinh(t) -> inverse hyperbolic sine.",
    "acosh", "acosh(t) -> inverse hyperbolic cosine (nan below 1).",
    "atanh", "atanh(t) -> inverse hyperbolic tangent (+-inf at +-1, nan outside).",
    "frac", "frac(t) -> t - trunc(t), the fractional part with t's sign (-1.5 -> -0.5); floating tensors\n"
    "  only; the gradient is 1.",
    "sinc", "sinc(t) -> sin(pi t) / (pi t), normalized (1 at 0), as torch.sinc.",
    "fmax", "fmax(a, b) -> the larger of a and b elementwise, NaN only where both are NaN (torch.fmax; maximum\n"
    "  propagates NaN); broadcast and promoted, numbers on either side as where's. The gradient goes to a where\n"
    "  a >= b or b is NaN, else to b, as torch's.",
    "fmin", "fmin(a, b) -> the smaller of a and b elementwise, NaN only where both are NaN (torch.fmin); the\n"
    "  gradient goes to a where a <= b or b is NaN, else to b.",
    NULL, NULL,
};

static const char *const method_docs[] = {
    "where", "t:where(cond, other) -> pt.where(cond, t, other).",
    "add_", "t:add_(other[, {alpha=1}]) -> t, t += alpha * other in place (other broadcasts to t).",
    "sub_", "t:sub_(other[, {alpha=1}]) -> t, t -= alpha * other in place.",
    "mul_", "t:mul_(other) -> t, t *= other in place.",
    "div_", "t:div_(other[, {rounding_mode=}]) -> t, t /= other in place (integer tensors cannot hold a true division);\n"
    "  rounding_mode \"trunc\" or \"floor\" as t:divide_(other, opts), torch's div_(other, rounding_mode=).",
    "pow_", "t:pow_(other) -> t, t = t ^ other in place.",
    "maximum_", "t:maximum_(other) -> t, elementwise maximum in place.",
    "minimum_", "t:minimum_(other) -> t, elementwise minimum in place.",
    "neg_", "t:neg_() -> t negated in place.",
    "abs_", "t:abs_() -> t, |t| in place.",
    "exp_", "t:exp_() -> t, e^t in place.",
    "log_", "t:log_() -> t, log t in place.",
    "sqrt_", "t:sqrt_() -> t, sqrt t in place.",
    "tanh_", "t:tanh_() -> t, tanh t in place.",
    "sigmoid_", "t:sigmoid_() -> t, sigmoid t in place.",
    "relu_", "t:relu_() -> t, max(t, 0) in place.",
    "gelu_", "t:gelu_() -> t, gelu t in place.",
    "sin_", "t:sin_() -> t, sin t in place.",
    "cos_", "t:cos_() -> t, cos t in place.",
    "sign_", "t:sign_() -> t, sign t in place.",
    "floor_", "t:floor_() -> t rounded down in place.",
    "ceil_", "t:ceil_() -> t rounded up in place.",
    "round_", "t:round_([{decimals = 0}]) -> t rounded half to even in place (to decimals places, as t:round).",
    "logical_not_", "t:logical_not_() -> t, 1 where t was 0 and 0 elsewhere, in t's dtype.",
    "clamp_", "t:clamp_(min, max) -> t limited to [min, max] in place; either bound may be nil (a float bound on\n"
    "  an integer t is an error: the result would be float32).",
    "masked_fill_", "t:masked_fill_(mask, value) -> t with value (a number or a 0-d tensor) written where mask is true.",
    "copy_", "t:copy_(src) -> t, src's values broadcast and converted into t; gradients flow to src.",
    "_to_dtype", "t:_to_dtype(name) -> t converted to dtype name; float conversions keep gradients (used by float(), double(), ...).",
    "atan2_", "t:atan2_(other) -> t, atan2(t, other) in place (t must be floating).",
    "hypot_", "t:hypot_(other) -> t, hypot(t, other) in place.",
    "remainder_", "t:remainder_(other) -> t, t % other in place (the sign of the divisor).",
    "fmod_", "t:fmod_(other) -> t, fmod(t, other) in place (the sign of the dividend).",
    "floor_divide_", "t:floor_divide_(other) -> t, t // other in place (rounded toward -inf).",
    "xlogy_", "t:xlogy_(other) -> t, t * log(other) in place (0 where t == 0).",
    "copysign_", "t:copysign_(other) -> t, |t| with other's sign in place.",
    "lerp_", "t:lerp_(end, weight) -> t, t + weight * (end - t) in place (weight a number or a tensor).",
    "erf_", "t:erf_() -> t, erf t in place.",
    "erfc_", "t:erfc_() -> t, erfc t in place.",
    "erfinv_", "t:erfinv_() -> t, erfinv t in place.",
    "log1p_", "t:log1p_() -> t, log(1 + t) in place.",
    "expm1_", "t:expm1_() -> t, e^t - 1 in place.",
    "log2_", "t:log2_() -> t, log2 t in place.",
    "log10_", "t:log10_() -> t, log10 t in place.",
    "exp2_", "t:exp2_() -> t, 2^t in place.",
    "tan_", "t:tan_() -> t, tan t in place.",
    "asin_", "t:asin_() -> t, asin t in place.",
    "acos_", "t:acos_() -> t, acos t in place.",
    "atan_", "t:atan_() -> t, atan t in place.",
    "sinh_", "t:sinh_() -> t, sinh t in place.",
    "cosh_", "t:cosh_() -> t, cosh t in place.",
    "asinh_", "t:asinh_() -> t, asinh t in place.",
    "acosh_", "t:acosh_() -> t, acosh t in place.",
    "atanh_", "t:atanh_() -> t, atanh t in place.",
    "frac_", "t:frac_() -> t, t - trunc(t) in place.",
    "sinc_", "t:sinc_() -> t, sinc t in place.",
    NULL, NULL,
};

static const char *const function_docs[] = {
    "where", "pt.where(cond, a, b) -> a where the bool tensor cond is true, else b; all three broadcast.\n"
    "  a and b may be numbers: an integer keeps the other's dtype (exact in int64; one that dtype cannot hold\n"
    "  is an error), a float makes an integer tensor's result float32.\n"
    "  pt.where(cond) -> cond:nonzero({as_tuple = true}): one int64 tensor of 1-based indices per dim.",
    NULL, NULL,
};

/* Register l into the registry table `key` with the tensor metatable as upvalue 1. */
static void add_with_mt(lua_State *L, const char *key, const luaL_Reg *l) {
  lua_getfield(L, LUA_REGISTRYINDEX, key);
  lua_getfield(L, LUA_REGISTRYINDEX, LPT_TENSOR);
  luaL_setfuncs(L, l, 1);
  lua_pop(L, 1);
}

void lpt_open_elementwise(lua_State *L) {
  add_with_mt(L, LPT_TENSOR, metamethods);
  add_with_mt(L, LPT_METHODS, shared);
  add_with_mt(L, LPT_MODULE, shared);
  add_with_mt(L, LPT_METHODS, methods_only);
  add_with_mt(L, LPT_MODULE, functions_only);
  lpt_add_docs(L, 0, docs);
  lpt_add_docs(L, 1, docs);
  lpt_add_docs(L, 1, method_docs);
  lpt_add_docs(L, 0, function_docs);
}
