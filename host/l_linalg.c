/* Matrix products from Lua: t:matmul(u), t:mm(u), t:bmm(u), t:mv(v), t:dot(u), t:outer(u),
 * input:addmm(a, b[, {beta=1, alpha=1}]), each also as pt.<name>(...). Lua has no `@`. */
#include "lpt.h"
#include "../lib/ops_linalg.h"

typedef pt_status (*binary_fn)(pt_ctx *, pt_tensor *, pt_tensor *, pt_tensor **);

static int binary(lua_State *L, binary_fn fn) {
  pt_tensor *a = lpt_check_tensor(L, 1), *b = lpt_check_tensor(L, 2), *r;
  if (fn(lpt_ctx(L), a, b, &r)) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

static int t_matmul(lua_State *L) { return binary(L, pt_matmul); }
static int t_mm(lua_State *L) { return binary(L, pt_mm); }
static int t_bmm(lua_State *L) { return binary(L, pt_bmm); }
static int t_mv(lua_State *L) { return binary(L, pt_mv); }
static int t_dot(lua_State *L) { return binary(L, pt_dot); }
static int t_outer(lua_State *L) { return binary(L, pt_outer); }

static double opt_number(lua_State *L, int opts, const char *fname, const char *key, double def) {
  if (!opts) return def;
  double v = def;
  if (lua_getfield(L, opts, key) != LUA_TNIL) {
    if (lua_type(L, -1) != LUA_TNUMBER)
      return lpt_errorf(L, "%s: option '%s' must be a number, got %s", fname, key,
                        luaL_typename(L, -1));
    v = lua_tonumber(L, -1);
  }
  lua_pop(L, 1);
  return v;
}

/* addmm(input, a, b[, {beta=1, alpha=1}]) = beta * input + alpha * (a @ b) */
static int t_addmm(lua_State *L) {
  pt_tensor *in = lpt_check_tensor(L, 1), *a = lpt_check_tensor(L, 2), *b = lpt_check_tensor(L, 3);
  int opts = 0;
  if (!lua_isnoneornil(L, 4)) {
    luaL_checktype(L, 4, LUA_TTABLE);
    static const char *const names[] = {"beta", "alpha", NULL};
    lpt_check_options(L, 4, "addmm", names);
    opts = 4;
  }
  lpt_check_max_args(L, 4, "addmm");
  double beta = opt_number(L, opts, "addmm", "beta", 1.0);
  double alpha = opt_number(L, opts, "addmm", "alpha", 1.0);
  pt_tensor *r;
  if (pt_addmm(lpt_ctx(L), in, a, b, beta, alpha, &r)) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

static const luaL_Reg functions[] = {
    {"matmul", t_matmul}, {"mm", t_mm},       {"bmm", t_bmm},     {"mv", t_mv},
    {"dot", t_dot},       {"outer", t_outer}, {"addmm", t_addmm}, {NULL, NULL},
};

/* methods and functions are the same C functions, so one doc each serves both */
static const char *const docs[] = {
    "matmul", "a:matmul(b) or pt.matmul(a, b) -> Tensor, the matrix product with PyTorch's rules:\n"
              "  1-D.1-D -> 0-d dot product; 2-D x 2-D; a 1-D operand becomes a row (left) or a\n"
              "  column (right) and that dim is removed again; >= 3-D operands are stacks of\n"
              "  matrices whose batch dims broadcast. float32/float64 through OpenBLAS.",
    "mm", "a:mm(b) or pt.mm(a, b) -> Tensor, product of two 2-D matrices.",
    "bmm", "a:bmm(b) or pt.bmm(a, b) -> Tensor, products of two 3-D stacks with the same batch size.",
    "mv", "a:mv(v) or pt.mv(a, v) -> Tensor, product of a 2-D matrix and a 1-D vector.",
    "dot", "a:dot(b) or pt.dot(a, b) -> 0-d Tensor, the dot product of two 1-D tensors.",
    "outer", "a:outer(b) or pt.outer(a, b) -> Tensor, the outer product of two 1-D tensors.",
    "addmm", "input:addmm(a, b[, {beta=1, alpha=1}]) or pt.addmm(input, a, b, opts) -> Tensor,\n"
             "  beta * input + alpha * (a @ b); input broadcasts to the product's shape\n"
             "  (with beta = 0 it is ignored, NaNs included).",
    NULL, NULL,
};

void lpt_open_linalg(lua_State *L) {
  lpt_add_methods(L, functions);
  lpt_add_functions(L, functions);
  lpt_add_docs(L, 1, docs);
}
