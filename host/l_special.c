/* Special functions and bitwise ops from Lua (lib/ops_special.h): lgamma, digamma, polygamma,
 * mvlgamma, i0, i0e, i1, i1e, ndtr, log_ndtr, ndtri, entr, xlog1py, erfcx, zeta as pt.* functions and tensor
 * methods (in-place forms where PyTorch has them), the bitwise and shift ops with Lua 5.4's
 * operators on tensors (& | ~ << >>), logical_xor and the in-place logical ops, and the
 * pt.special namespace with torch.special's names. */
#include "../lib/ops_special.h"
#include "lpt.h"

/* --- special functions --- */

static int special_k(lua_State *L, pt_special_op op, int xi, int64_t k) {
  pt_tensor *x = lpt_check_tensor(L, xi), *r = NULL;
  pt_status st = pt_special(lpt_ctx(L), op, x, k, &r);
  return lpt_push_result(L, st, r);
}

static int special_k_(lua_State *L, pt_special_op op, int64_t k) {
  pt_tensor *x = lpt_check_tensor(L, 1);
  if (pt_special_(lpt_ctx(L), op, x, k)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

#define SPECIAL_FN(name, OP)                                                                    \
  static int f_##name(lua_State *L) {                                                           \
    lpt_check_max_args(L, 1, #name);                                                            \
    return special_k(L, OP, 1, 0);                                                              \
  }
SPECIAL_FN(lgamma, PT_SP_LGAMMA)
SPECIAL_FN(digamma, PT_SP_DIGAMMA)
SPECIAL_FN(i0, PT_SP_I0)
SPECIAL_FN(i0e, PT_SP_I0E)
SPECIAL_FN(i1, PT_SP_I1)
SPECIAL_FN(i1e, PT_SP_I1E)
SPECIAL_FN(ndtr, PT_SP_NDTR)
SPECIAL_FN(log_ndtr, PT_SP_LOG_NDTR)
SPECIAL_FN(ndtri, PT_SP_NDTRI)
SPECIAL_FN(entr, PT_SP_ENTR)

#define SPECIAL_INPLACE_FN(name, OP)                                                            \
  static int m_##name##_(lua_State *L) {                                                        \
    lpt_check_max_args(L, 1, #name "_");                                                        \
    return special_k_(L, OP, 0);                                                                \
  }
SPECIAL_INPLACE_FN(lgamma, PT_SP_LGAMMA)
SPECIAL_INPLACE_FN(digamma, PT_SP_DIGAMMA)
SPECIAL_INPLACE_FN(i0, PT_SP_I0)

/* pt.polygamma(n, x), as torch.polygamma */
static int f_polygamma(lua_State *L) {
  lpt_check_max_args(L, 2, "polygamma");
  return special_k(L, PT_SP_POLYGAMMA, 2, luaL_checkinteger(L, 1));
}
/* x:polygamma(n) */
static int m_polygamma(lua_State *L) {
  lpt_check_max_args(L, 2, "polygamma");
  lpt_check_tensor(L, 1);
  return special_k(L, PT_SP_POLYGAMMA, 1, luaL_checkinteger(L, 2));
}
static int m_polygamma_(lua_State *L) {
  lpt_check_max_args(L, 2, "polygamma_");
  lpt_check_tensor(L, 1);
  return special_k_(L, PT_SP_POLYGAMMA, luaL_checkinteger(L, 2));
}
/* pt.mvlgamma(x, p) and x:mvlgamma(p) */
static int f_mvlgamma(lua_State *L) {
  lpt_check_max_args(L, 2, "mvlgamma");
  lpt_check_tensor(L, 1);
  return special_k(L, PT_SP_MVLGAMMA, 1, luaL_checkinteger(L, 2));
}
static int m_mvlgamma_(lua_State *L) {
  lpt_check_max_args(L, 2, "mvlgamma_");
  lpt_check_tensor(L, 1);
  return special_k_(L, PT_SP_MVLGAMMA, luaL_checkinteger(L, 2));
}

/* --- operands: a tensor, a number or a boolean on either side --- */

static pt_number number_at(lua_State *L, int idx) {
  return lua_isinteger(L, idx) ? pt_number_int(lua_tointeger(L, idx))
                               : pt_number_float(lua_tonumber(L, idx));
}

static int bad_operand(lua_State *L, int idx) {
  if (lua_type(L, idx) == LUA_TUSERDATA) lpt_check_tensor(L, idx); /* "tensor was closed" */
  return luaL_typeerror(L, idx, "Tensor or number");
}

/* The tensor operand of a binary call (the one at 1 or 2, the other may be a number): *other is
 * set to the index of the number or boolean, 0 when both are tensors. A boolean becomes a 0-d
 * bool tensor in *tmp (torch's True keeps a bool tensor bool). */
typedef struct bin_args {
  pt_tensor *a, *b; /* a: the first operand when a tensor; b: the second */
  pt_tensor *tmp;   /* a boolean operand as a 0-d tensor (new reference) */
  int num;          /* index of the number operand, 0 when none */
} bin_args;

static void get_bin_args(lua_State *L, bin_args *ba) {
  ba->a = lpt_test_tensor(L, 1);
  ba->b = lpt_test_tensor(L, 2);
  ba->tmp = NULL;
  ba->num = 0;
  if (ba->a && ba->b) return;
  if (!ba->a && !ba->b) {
    bool n1 = lua_type(L, 1) == LUA_TNUMBER || lua_isboolean(L, 1);
    bool n2 = lua_type(L, 2) == LUA_TNUMBER || lua_isboolean(L, 2);
    if (n1 && n2) luaL_typeerror(L, 1, "Tensor"); /* one operand must be a tensor */
    bad_operand(L, n1 ? 2 : 1);
  }
  int idx = ba->a ? 2 : 1;
  if (lua_type(L, idx) == LUA_TNUMBER) {
    ba->num = idx;
  } else if (lua_isboolean(L, idx)) {
    ba->tmp = lpt_to_tensor(L, idx, PT_BOOL);
    if (idx == 1) ba->a = ba->tmp;
    else ba->b = ba->tmp;
  } else {
    bad_operand(L, idx);
  }
}

/* --- xlog1py --- */

/* f(a, b) with tensors, or f_number(tensor, number, reversed) when one operand is a number:
 * xlog1py, zeta */
typedef pt_status (*tensors_fn)(pt_ctx *, pt_tensor *, pt_tensor *, pt_tensor **);
typedef pt_status (*number_fn)(pt_ctx *, pt_tensor *, pt_number, bool, pt_tensor **);
static int binary_special(lua_State *L, const char *fname, tensors_fn f, number_fn f_number) {
  lpt_check_max_args(L, 2, fname);
  pt_ctx *ctx = lpt_ctx(L);
  bin_args ba;
  get_bin_args(L, &ba);
  pt_tensor *r = NULL;
  pt_status st = ba.num == 0   ? f(ctx, ba.a, ba.b, &r)
                 : ba.num == 2 ? f_number(ctx, ba.a, number_at(L, 2), false, &r)
                               : f_number(ctx, ba.b, number_at(L, 1), true, &r);
  pt_tensor_release(ba.tmp);
  return lpt_push_result(L, st, r);
}

static int f_xlog1py(lua_State *L) { return binary_special(L, "xlog1py", pt_xlog1py, pt_xlog1py_number); }

/* --- erfcx, zeta --- */

static int f_erfcx(lua_State *L) {
  lpt_check_max_args(L, 1, "erfcx");
  pt_tensor *x = lpt_check_tensor(L, 1), *r = NULL;
  pt_status st = pt_erfcx(lpt_ctx(L), x, &r);
  return lpt_push_result(L, st, r);
}

static int f_zeta(lua_State *L) { return binary_special(L, "zeta", pt_zeta, pt_zeta_number); }

/* --- bitwise --- */

static int bitwise_args(lua_State *L, pt_bitop op) {
  pt_ctx *ctx = lpt_ctx(L);
  bin_args ba;
  get_bin_args(L, &ba);
  pt_tensor *r = NULL;
  pt_status st = ba.num == 0   ? pt_bitwise(ctx, op, ba.a, ba.b, &r)
                 : ba.num == 2 ? pt_bitwise_number(ctx, op, ba.a, number_at(L, 2), false, &r)
                               : pt_bitwise_number(ctx, op, ba.b, number_at(L, 1), true, &r);
  pt_tensor_release(ba.tmp);
  return lpt_push_result(L, st, r);
}

/* the operators get exactly two operands (unary ~ gets the tensor twice) */
static int mm_band(lua_State *L) { return bitwise_args(L, PT_BIT_AND); }
static int mm_bor(lua_State *L) { return bitwise_args(L, PT_BIT_OR); }
static int mm_bxor(lua_State *L) { return bitwise_args(L, PT_BIT_XOR); }
static int mm_shl(lua_State *L) { return bitwise_args(L, PT_BIT_LSHIFT); }
static int mm_shr(lua_State *L) { return bitwise_args(L, PT_BIT_RSHIFT); }
static int mm_bnot(lua_State *L) {
  pt_tensor *a = lpt_check_tensor(L, 1), *r = NULL;
  pt_status st = pt_bitwise_not(lpt_ctx(L), a, &r);
  return lpt_push_result(L, st, r);
}

#define BITWISE_FN(name, OP)                                                                    \
  static int f_##name(lua_State *L) {                                                           \
    lpt_check_max_args(L, 2, #name);                                                            \
    return bitwise_args(L, OP);                                                                 \
  }
BITWISE_FN(bitwise_and, PT_BIT_AND)
BITWISE_FN(bitwise_or, PT_BIT_OR)
BITWISE_FN(bitwise_xor, PT_BIT_XOR)
BITWISE_FN(bitwise_left_shift, PT_BIT_LSHIFT)
BITWISE_FN(bitwise_right_shift, PT_BIT_RSHIFT)
BITWISE_FN(logical_xor, PT_BIT_LOGICAL_XOR)

static int f_bitwise_not(lua_State *L) {
  lpt_check_max_args(L, 1, "bitwise_not");
  return mm_bnot(L);
}

static int inplace_bitwise(lua_State *L, pt_bitop op) {
  pt_tensor *self = lpt_check_tensor(L, 1), *b = lpt_test_tensor(L, 2), *tmp = NULL;
  pt_ctx *ctx = lpt_ctx(L);
  pt_status st;
  if (b) {
    st = pt_bitwise_(ctx, op, self, b);
  } else if (lua_type(L, 2) == LUA_TNUMBER) {
    st = pt_bitwise_number_(ctx, op, self, number_at(L, 2));
  } else if (lua_isboolean(L, 2)) {
    tmp = lpt_to_tensor(L, 2, PT_BOOL);
    st = pt_bitwise_(ctx, op, self, tmp);
    pt_tensor_release(tmp);
  } else {
    return bad_operand(L, 2);
  }
  if (st) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

#define BITWISE_INPLACE_FN(name, OP)                                                            \
  static int m_##name##_(lua_State *L) {                                                        \
    lpt_check_max_args(L, 2, #name "_");                                                        \
    return inplace_bitwise(L, OP);                                                              \
  }
BITWISE_INPLACE_FN(bitwise_and, PT_BIT_AND)
BITWISE_INPLACE_FN(bitwise_or, PT_BIT_OR)
BITWISE_INPLACE_FN(bitwise_xor, PT_BIT_XOR)
BITWISE_INPLACE_FN(bitwise_left_shift, PT_BIT_LSHIFT)
BITWISE_INPLACE_FN(bitwise_right_shift, PT_BIT_RSHIFT)
BITWISE_INPLACE_FN(logical_xor, PT_BIT_LOGICAL_XOR)
BITWISE_INPLACE_FN(logical_and, PT_BIT_LOGICAL_AND)
BITWISE_INPLACE_FN(logical_or, PT_BIT_LOGICAL_OR)

static int m_bitwise_not_(lua_State *L) {
  lpt_check_max_args(L, 1, "bitwise_not_");
  pt_tensor *self = lpt_check_tensor(L, 1);
  if (pt_bitwise_not_(lpt_ctx(L), self)) return lpt_error(L);
  lua_settop(L, 1);
  return 1;
}

/* --- registration --- */

static const luaL_Reg metamethods[] = {
    {"__band", mm_band}, {"__bor", mm_bor}, {"__bxor", mm_bxor},
    {"__shl", mm_shl},   {"__shr", mm_shr}, {"__bnot", mm_bnot},
    {NULL, NULL},
};

/* both t:name(...) and pt.name(...) */
static const luaL_Reg shared[] = {
    {"lgamma", f_lgamma},
    {"digamma", f_digamma},
    {"mvlgamma", f_mvlgamma},
    {"i0", f_i0},
    {"i0e", f_i0e},
    {"i1", f_i1},
    {"i1e", f_i1e},
    {"ndtr", f_ndtr},
    {"log_ndtr", f_log_ndtr},
    {"ndtri", f_ndtri},
    {"entr", f_entr},
    {"xlog1py", f_xlog1py},
    {"erfcx", f_erfcx},
    {"zeta", f_zeta},
    {"bitwise_and", f_bitwise_and},
    {"bitwise_or", f_bitwise_or},
    {"bitwise_xor", f_bitwise_xor},
    {"bitwise_not", f_bitwise_not},
    {"bitwise_left_shift", f_bitwise_left_shift},
    {"bitwise_right_shift", f_bitwise_right_shift},
    {"logical_xor", f_logical_xor},
    {NULL, NULL},
};

static const luaL_Reg methods_only[] = {
    {"polygamma", m_polygamma},
    {"lgamma_", m_lgamma_},
    {"digamma_", m_digamma_},
    {"polygamma_", m_polygamma_},
    {"mvlgamma_", m_mvlgamma_},
    {"i0_", m_i0_},
    {"bitwise_and_", m_bitwise_and_},
    {"bitwise_or_", m_bitwise_or_},
    {"bitwise_xor_", m_bitwise_xor_},
    {"bitwise_not_", m_bitwise_not_},
    {"bitwise_left_shift_", m_bitwise_left_shift_},
    {"bitwise_right_shift_", m_bitwise_right_shift_},
    {"logical_xor_", m_logical_xor_},
    {"logical_and_", m_logical_and_},
    {"logical_or_", m_logical_or_},
    {NULL, NULL},
};

static const luaL_Reg functions_only[] = {
    {"polygamma", f_polygamma},
    {NULL, NULL},
};

#define FLOAT_NOTE "float32 and float64; integers and bool give float32"

static const char *const docs[] = {
    "lgamma", "lgamma(t) -> log |Gamma(t)| elementwise (" FLOAT_NOTE "): +inf at 0 and the negative\n"
    "  integers. Gradient: digamma(t).",
    "digamma", "digamma(t) -> psi(t) = d/dt log Gamma(t) (" FLOAT_NOTE "): -inf at +0, +inf at -0, nan at\n"
    "  the negative integers, as torch. Gradient: polygamma(1, t).",
    "mvlgamma", "mvlgamma(t, p) -> the multivariate log-gamma of dimension p >= 1,\n"
    "  p(p-1)/4 log(pi) + sum_{i=0}^{p-1} lgamma(t - i/2) (" FLOAT_NOTE "; bool is an error), as\n"
    "  torch.mvlgamma. Gradient: sum_i digamma(t - i/2).",
    "i0", "i0(t) -> the modified Bessel function of the first kind of order 0 (" FLOAT_NOTE ").\n"
    "  Gradient: i1(t). +-inf give inf (torch 1.13: nan).",
    "i0e", "i0e(t) -> exp(-|t|) i0(t), without overflow (" FLOAT_NOTE "; torch.special.i0e). Gradient:\n"
    "  i1e(t) - sgn(t) i0e(t).",
    "i1", "i1(t) -> the modified Bessel function of the first kind of order 1 (" FLOAT_NOTE ";\n"
    "  torch.special.i1). Gradient: i0(t) - i1(t)/t (0.5 at 0). +-inf give +-inf (torch 1.13: nan).",
    "i1e", "i1e(t) -> exp(-|t|) i1(t) (" FLOAT_NOTE "; torch.special.i1e). Gradient:\n"
    "  i0e(t) - i1e(t) (sgn(t) + 1/t) (0.5 at 0).",
    "ndtr", "ndtr(t) -> the standard normal CDF, (1 + erf(t / sqrt 2)) / 2 (" FLOAT_NOTE ";\n"
    "  torch.special.ndtr). Gradient: exp(-t^2/2) / sqrt(2 pi).",
    "log_ndtr", "log_ndtr(t) -> log(ndtr(t)), accurate far into the lower tail (log_ndtr(-1e10) = -5e19)\n"
    "  and where ndtr(t) is near 1 (" FLOAT_NOTE "; torch.special.log_ndtr).",
    "ndtri", "ndtri(p) -> the x with ndtr(x) = p: -inf at 0, inf at 1, nan outside [0, 1] (" FLOAT_NOTE ";\n"
    "  torch.special.ndtri). Gradient: sqrt(2 pi) exp(ndtri(p)^2 / 2).",
    "entr", "entr(t) -> -t log(t) for t > 0, 0 at 0, -inf for t < 0 (" FLOAT_NOTE ";\n"
    "  torch.special.entr). Gradient: -(1 + log t).",
    "erfcx", "erfcx(t) -> exp(t^2) * erfc(t), the scaled complementary error function (torch.special.erfcx),\n"
    "  without the overflow and underflow of that product (erfcx(30) = 0.0187958888614168; " FLOAT_NOTE ").\n"
    "  Gradient: 2 t erfcx(t) - 2 / sqrt(pi). Also pt.special.erfcx.",
    "zeta", "zeta(x, q) -> the Hurwitz zeta function sum_{k >= 0} (k + q)^-x (torch.special.zeta; zeta(x, 1) is\n"
    "  Riemann's), broadcasting, a number on either side, integers give float32: inf at x == 1 and at q a\n"
    "  non-positive integer, nan for x < 1 or for q < 0 with x not an integer, as torch. Gradient: -x zeta(x + 1, q)\n"
    "  for q; none for x (an error, as torch). Also pt.special.zeta.",
    "xlog1py", "xlog1py(a, b) -> a * log(1 + b), 0 where a == 0 (nan where b is nan); broadcasting, a number\n"
    "  on either side, integers give float32 (torch.special.xlog1py). Gradients: log1p(b) for a (0 where\n"
    "  a == 0 and b <= -1), a / (1 + b) for b.",
    "bitwise_and", "bitwise_and(a, b) -> a & b elementwise, also the & operator: bool and integer tensors with\n"
    "  broadcasting; a number or a boolean on either side (a Lua integer keeps an integer tensor's dtype,\n"
    "  with its low bits: a uint8 tensor & -1 is & 255; a bool tensor & 3 is int64, & true stays bool).\n"
    "  Floating operands are an error (also a Lua float such as 2.0: it makes the result float32).",
    "bitwise_or", "bitwise_or(a, b) -> a | b elementwise, also the | operator (dtypes as bitwise_and).",
    "bitwise_xor", "bitwise_xor(a, b) -> a ~ b (exclusive or) elementwise, also the binary ~ operator (dtypes as\n"
    "  bitwise_and).",
    "bitwise_not", "bitwise_not(t) -> ~t for integer tensors (two's complement: ~5 = -6; uint8 ~5 = 250),\n"
    "  logical not for bool; also the unary ~ operator. Floating tensors are an error.",
    "bitwise_left_shift", "bitwise_left_shift(a, b) -> a << b elementwise, also the << operator: integer tensors\n"
    "  (bool and floating are errors), broadcasting, numbers on either side; bits shifted out are lost\n"
    "  (int64 1 << 63 is the most negative int64). A shift by a negative amount or by the dtype's width\n"
    "  or more gives 0, as torch >= 2.1 defines it.",
    "bitwise_right_shift", "bitwise_right_shift(a, b) -> a >> b elementwise, also the >> operator: arithmetic for\n"
    "  signed dtypes (-8 >> 1 = -4). A shift by a negative amount or by the width or more gives the sign\n"
    "  fill (-1 or 0; 0 for uint8), as torch >= 2.1 defines it.",
    "logical_xor", "logical_xor(a, b) -> bool tensor: exactly one of a and b is nonzero (any dtypes, NaN counts as\n"
    "  true; numbers and booleans on either side).",
    NULL, NULL,
};

static const char *const method_docs[] = {
    "polygamma", "t:polygamma(n) -> pt.polygamma(n, t).",
    "lgamma_", "t:lgamma_() -> t, lgamma(t) in place (t must be floating).",
    "digamma_", "t:digamma_() -> t, digamma(t) in place.",
    "polygamma_", "t:polygamma_(n) -> t, polygamma(n, t) in place.",
    "mvlgamma_", "t:mvlgamma_(p) -> t, mvlgamma(t, p) in place.",
    "i0_", "t:i0_() -> t, i0(t) in place.",
    "bitwise_and_", "t:bitwise_and_(other) -> t, t & other in place (other broadcasts to t; its dtype must fit t's:\n"
    "  a bool t takes no int64 other).",
    "bitwise_or_", "t:bitwise_or_(other) -> t, t | other in place.",
    "bitwise_xor_", "t:bitwise_xor_(other) -> t, t ~ other (exclusive or) in place.",
    "bitwise_not_", "t:bitwise_not_() -> t, ~t in place.",
    "bitwise_left_shift_", "t:bitwise_left_shift_(other) -> t, t << other in place.",
    "bitwise_right_shift_", "t:bitwise_right_shift_(other) -> t, t >> other in place.",
    "logical_xor_", "t:logical_xor_(other) -> t holding 1 where exactly one of t and other is nonzero, else 0\n"
    "  (in t's dtype, as torch).",
    "logical_and_", "t:logical_and_(other) -> t holding 1 where both t and other are nonzero, else 0 (t's dtype).",
    "logical_or_", "t:logical_or_(other) -> t holding 1 where t or other is nonzero, else 0 (t's dtype).",
    NULL, NULL,
};

static const char *const function_docs[] = {
    "polygamma", "pt.polygamma(n, t) -> psi^(n)(t), the n-th derivative of digamma (n >= 0 an integer; n = 0 is\n"
    "  digamma), as torch.polygamma (" FLOAT_NOTE "). At 0 and the negative integers (-1)^(n+1) inf;\n"
    "  0 at +inf, nan at -inf. Gradient: polygamma(n + 1, t).",
    NULL, NULL,
};

/* pt.special: torch.special's names, each the pt function of that meaning */
static const char *const special_aliases[] = {
    "expit", "sigmoid",         "erf", "erf",           "erfc", "erfc",
    "erfinv", "erfinv",         "gammaln", "lgamma",    "digamma", "digamma",
    "psi", "digamma",           "polygamma", "polygamma", "multigammaln", "mvlgamma",
    "i0", "i0",                 "i0e", "i0e",           "i1", "i1",
    "i1e", "i1e",               "ndtr", "ndtr",         "ndtri", "ndtri",
    "log_ndtr", "log_ndtr",     "xlogy", "xlogy",       "xlog1py", "xlog1py",
    "entr", "entr",             "sinc", "sinc",         "log1p", "log1p",
    "expm1", "expm1",           "exp2", "exp2",         "logsumexp", "logsumexp",
    "softmax", "softmax",       "log_softmax", "log_softmax", "round", "round",
    "erfcx", "erfcx",           "zeta", "zeta",
    NULL, NULL,
};

/* special name, pt name: functions a Lua module defines (looked up on first use: it may load later) */
static const char *const special_lazy[] = {"logit", "logit", "gammainc", "igamma", "gammaincc", "igammac", NULL};

static int special_index(lua_State *L) {
  if (lua_type(L, 2) != LUA_TSTRING) return 0;
  const char *k = lua_tostring(L, 2);
  for (const char *const *p = special_lazy; *p; p += 2) {
    if (strcmp(*p, k) != 0) continue;
    lua_getfield(L, LUA_REGISTRYINDEX, LPT_MODULE);
    lua_getfield(L, -1, p[1]); /* through the module's own __index (lazily loaded functions) */
    if (!lua_isnil(L, -1)) {
      lua_pushvalue(L, 2);
      lua_pushvalue(L, -2);
      lua_rawset(L, 1);
    }
    return 1;
  }
  return 0;
}

static void open_special_table(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, LPT_MODULE);
  lua_newtable(L);
  for (const char *const *p = special_aliases; p[0]; p += 2) {
    lua_getfield(L, -2, p[1]);
    lua_setfield(L, -2, p[0]);
  }
  lua_newtable(L); /* its metatable */
  lua_pushcfunction(L, special_index);
  lua_setfield(L, -2, "__index");
  lua_setmetatable(L, -2);
  lua_getfield(L, -2, "_docs");
  lua_pushvalue(L, -2);
  lua_pushliteral(L,
      "pt.special: torch.special's names for partrain's functions. expit (sigmoid), erf, erfc, erfinv,\n"
      "  gammaln (lgamma), digamma, psi (digamma), polygamma, multigammaln (mvlgamma), i0, i0e, i1, i1e,\n"
      "  ndtr, ndtri, log_ndtr, xlogy, xlog1py, entr, sinc, log1p, expm1, exp2, logsumexp, softmax,\n"
      "  log_softmax, round, erfcx, zeta, and logit when pt.logit exists. Each entry is the pt function itself, so\n"
      "  help(pt.special.gammaln) shows pt.lgamma's doc. Dims are 1-based as everywhere in partrain.");
  lua_rawset(L, -3);
  lua_pop(L, 1);
  lua_setfield(L, -2, "special");
  lua_pop(L, 1);
}

void lpt_open_special(lua_State *L) {
  lpt_add_metamethods(L, metamethods);
  lpt_add_methods(L, shared);
  lpt_add_functions(L, shared);
  lpt_add_methods(L, methods_only);
  lpt_add_functions(L, functions_only);
  lpt_add_docs(L, 0, docs);
  lpt_add_docs(L, 1, docs);
  lpt_add_docs(L, 1, method_docs);
  lpt_add_docs(L, 0, function_docs);
  open_special_table(L);
}
