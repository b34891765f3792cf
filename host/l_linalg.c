/* Matrix products from Lua: t:matmul(u), t:mm(u), t:bmm(u), t:mv(v), t:dot(u), t:outer(u),
 * input:addmm(a, b[, {beta=1, alpha=1}]), each also as pt.<name>(...). Lua has no `@`.
 * Each takes a trailing {out = t} (torch's out=): the result is written into t, which must
 * have the result's shape and dtype, and t is returned; as out= elsewhere, not with autograd. */
#include <stdatomic.h>
#include <string.h>

#include "lpt.h"
#include "../lib/ops_linalg.h"

typedef pt_status (*binary_fn)(pt_ctx *, pt_tensor *, pt_tensor *, pt_tensor **);

/* The out tensor of an options table at opts (0: none), left on the stack (its index), or 0. */
static int out_arg(lua_State *L, int opts, const char *fname) {
  if (!opts) return 0;
  if (lua_getfield(L, opts, "out") == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  if (!lpt_test_tensor(L, -1))
    return lpt_errorf(L, "%s: out must be a Tensor, got %s", fname, luaL_typename(L, -1));
  return lua_gettop(L);
}

/* out= refuses autograd before anything is computed (as pt.add's out= does) */
static void check_out_grad(lua_State *L, const char *fname, int out, int n, pt_tensor *const *ins) {
  pt_ctx *ctx = lpt_ctx(L);
  if (!out || !ctx->grad_enabled) return;
  bool req = lpt_check_tensor(L, out)->requires_grad;
  for (int i = 0; i < n; i++) req = req || ins[i]->requires_grad;
  if (req)
    lpt_errorf(L, "%s: out= does not support autograd, but an argument requires grad (leave out "
                  "out=, or compute under pt.no_grad)", fname);
}

/* Pushes r, or writes it into the tensor at out (same shape and dtype) and pushes that. */
static int push_or_write(lua_State *L, const char *fname, pt_tensor *r, int out) {
  if (!out) {
    lpt_push_tensor(L, r);
    return 1;
  }
  pt_ctx *ctx = lpt_ctx(L);
  pt_tensor *o = lpt_check_tensor(L, out);
  pt_status st = PT_OK;
  if (o->dtype != r->dtype) {
    st = pt_fail(ctx, PT_EARG, "%s: expected out of dtype %s (the result's), got %s", fname,
                 pt_dtype_name(r->dtype), pt_dtype_name(o->dtype));
  } else if (o->ndim != r->ndim || memcmp(o->shape, r->shape, (size_t)r->ndim * sizeof(int64_t))) {
    char so[PT_SHAPE_STR_MAX], sr[PT_SHAPE_STR_MAX];
    st = pt_fail(ctx, PT_ESHAPE, "%s: out has shape %s, but the result has shape %s", fname,
                 pt_shape_format(o->ndim, o->shape, so, sizeof so),
                 pt_shape_format(r->ndim, r->shape, sr, sizeof sr));
  } else if (!(st = pt_check_no_internal_overlap(ctx, fname, o)) &&
             !(st = pt_tensor_copy_into(ctx, o, r))) {
    atomic_fetch_add(&o->storage->version, 1);
  }
  pt_tensor_release(r);
  if (st) return lpt_error(L);
  lua_pushvalue(L, out);
  return 1;
}

static int binary(lua_State *L, binary_fn fn, const char *fname) {
  pt_tensor *a = lpt_check_tensor(L, 1), *b = lpt_check_tensor(L, 2), *r;
  lpt_check_max_args(L, 3, fname);
  int opts = 0;
  if (!lua_isnoneornil(L, 3)) {
    if (!lua_istable(L, 3) || lpt_test_tensor(L, 3))
      return lpt_errorf(L, "%s: unexpected argument #3 (%s)", fname, lpt_typename(L, 3));
    static const char *const names[] = {"out", NULL};
    lpt_check_options(L, 3, fname, names);
    opts = 3;
  }
  int out = out_arg(L, opts, fname);
  check_out_grad(L, fname, out, 2, (pt_tensor *[]){a, b});
  if (fn(lpt_ctx(L), a, b, &r)) return lpt_error(L);
  return push_or_write(L, fname, r, out);
}

static int t_matmul(lua_State *L) { return binary(L, pt_matmul, "matmul"); }
static int t_mm(lua_State *L) { return binary(L, pt_mm, "mm"); }
static int t_bmm(lua_State *L) { return binary(L, pt_bmm, "bmm"); }
static int t_mv(lua_State *L) { return binary(L, pt_mv, "mv"); }
static int t_dot(lua_State *L) { return binary(L, pt_dot, "dot"); }
static int t_outer(lua_State *L) { return binary(L, pt_outer, "outer"); }

/* addmm(input, a, b[, {beta=1, alpha=1, out=}]) = beta * input + alpha * (a @ b) */
static int t_addmm(lua_State *L) {
  pt_tensor *in = lpt_check_tensor(L, 1), *a = lpt_check_tensor(L, 2), *b = lpt_check_tensor(L, 3);
  int opts = 0;
  if (!lua_isnoneornil(L, 4)) {
    luaL_checktype(L, 4, LUA_TTABLE);
    static const char *const names[] = {"beta", "alpha", "out", NULL};
    lpt_check_options(L, 4, "addmm", names);
    opts = 4;
  }
  lpt_check_max_args(L, 4, "addmm");
  double beta = lpt_opt_number(L, opts, "beta", 1.0, "addmm");
  double alpha = lpt_opt_number(L, opts, "alpha", 1.0, "addmm");
  int out = out_arg(L, opts, "addmm");
  check_out_grad(L, "addmm", out, 3, (pt_tensor *[]){in, a, b});
  pt_tensor *r;
  if (pt_addmm(lpt_ctx(L), in, a, b, beta, alpha, &r)) return lpt_error(L);
  return push_or_write(L, "addmm", r, out);
}

static const luaL_Reg functions[] = {
    {"matmul", t_matmul}, {"mm", t_mm},       {"bmm", t_bmm},     {"mv", t_mv},
    {"dot", t_dot},       {"outer", t_outer}, {"addmm", t_addmm}, {NULL, NULL},
};

/* methods and functions are the same C functions, so one doc each serves both */
static const char *const docs[] = {
    "matmul", "a:matmul(b[, {out=}]) or pt.matmul(a, b) -> Tensor, the matrix product with PyTorch's rules:\n"
              "  1-D.1-D -> 0-d dot product; 2-D x 2-D; a 1-D operand becomes a row (left) or a\n"
              "  column (right) and that dim is removed again; >= 3-D operands are stacks of\n"
              "  matrices whose batch dims broadcast. float32/float64 through OpenBLAS.\n"
              "  A trailing {out = t} writes the result into t (its shape and dtype; no autograd)\n"
              "  and returns t, as torch's out=; so do mm, bmm, mv, dot, outer and addmm.",
    "mm", "a:mm(b[, {out=}]) or pt.mm(a, b) -> Tensor, product of two 2-D matrices.",
    "bmm", "a:bmm(b[, {out=}]) or pt.bmm(a, b) -> Tensor, products of two 3-D stacks with the same batch size.",
    "mv", "a:mv(v[, {out=}]) or pt.mv(a, v) -> Tensor, product of a 2-D matrix and a 1-D vector.",
    "dot", "a:dot(b[, {out=}]) or pt.dot(a, b) -> 0-d Tensor, the dot product of two 1-D tensors.",
    "outer", "a:outer(b[, {out=}]) or pt.outer(a, b) -> Tensor, the outer product of two 1-D tensors.",
    "addmm", "input:addmm(a, b[, {beta=1, alpha=1, out=}]) or pt.addmm(input, a, b, opts) -> Tensor,\n"
             "  beta * input + alpha * (a @ b); input broadcasts to the product's shape\n"
             "  (with beta = 0 it is ignored, NaNs included).",
    NULL, NULL,
};

void lpt_open_linalg(lua_State *L) {
  lpt_add_methods(L, functions);
  lpt_add_functions(L, functions);
  lpt_add_docs(L, 1, docs);
}
