/* Bindings of lib/ops_misc.h (scatter_reduce), lib/ops_resample.h (interpolate's taps) and
 * lib/nn_rnn.h (the fused LSTM and GRU steps under lua/partrain/nn_rnn.lua). */
#include <string.h>

#include "../lib/ops_misc.h"
#include "../lib/nn_rnn.h"
#include "../lib/ops_resample.h"
#include "lpt.h"

static const char *const reduce_names[] = {"sum", "prod", "mean", "amax", "amin", NULL};

/* t:scatter_reduce(dim, index, src, reduce[, {include_self=true}]) */
static int t_scatter_reduce(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  static const char *const names[] = {"include_self", NULL};
  lpt_check_max_args(L, 6, "scatter_reduce");
  int opts = lua_istable(L, 6) ? 6 : 0;
  if (!opts && !lua_isnoneornil(L, 6)) luaL_checktype(L, 6, LUA_TTABLE);
  lpt_check_options(L, opts, "scatter_reduce", names);
  int dim = lpt_check_dim(L, 2, t->ndim, "scatter_reduce");
  pt_tensor *index = lpt_check_tensor(L, 3), *src = lpt_check_tensor(L, 4);
  const char *reduce = lua_tostring(L, 5);
  if (lua_type(L, 5) != LUA_TSTRING)
    return lpt_errorf(L, "scatter_reduce: reduce must be one of sum, prod, mean, amax or amin, got %s",
                      lua_isnoneornil(L, 5) ? "nothing" : luaL_typename(L, 5));
  int op = 0;
  while (reduce_names[op] && strcmp(reduce_names[op], reduce) != 0) op++;
  if (!reduce_names[op])
    return lpt_errorf(L, "scatter_reduce: reduce must be one of sum, prod, mean, amax or amin, got '%s'", reduce);
  bool include_self = true;
  if (opts && lua_getfield(L, opts, "include_self") != LUA_TNIL) { /* {include_self=0} was true */
    if (!lua_isboolean(L, -1))
      return lpt_errorf(L, "scatter_reduce: include_self must be a boolean, got %s", luaL_typename(L, -1));
    include_self = lua_toboolean(L, -1);
  }
  pt_status st = pt_scatter_reduce(lpt_ctx(L), t, dim, index, src, (pt_scatter_reduce_op)op, include_self, &r);
  return lpt_push_result(L, st, r);
}

static const luaL_Reg methods[] = {
    {"scatter_reduce", t_scatter_reduce},
    {NULL, NULL},
};

static const char *const docs[] = {
    "scatter_reduce",
    "t:scatter_reduce(dim, index, src, reduce[, {include_self=true}]) -> copy of t where each src[p] is\n"
    "  reduced into the position of p with dim replaced by index[p] (1-based; dim 1: out[index[i][j]][j]),\n"
    "  as torch.scatter_reduce: reduce is \"sum\", \"prod\", \"mean\", \"amax\" or \"amin\", over the scattered\n"
    "  values and t's own (include_self=false: the written positions reduce the scattered values alone).\n"
    "  mean divides by the count (floor division for integers); amax/amin propagate NaN; integer sums and\n"
    "  products wrap as torch's; bool: sum/amax = or, prod/amin = and. index is int64 with t's number of\n"
    "  dims, no larger than src, nor than t outside dim; src has t's dtype. Gradients flow to t and src\n"
    "  for float tensors (amax/amin share it evenly between ties, as torch). Also pt.scatter_reduce(t, ...).",
    NULL,
    NULL,
};

/* pt._taps_along(x, dim, idx, w) -> the resampling of x along dim (1-based) through the taps
 * idx (int64 {m, K}, 0-based) and w (float64 {m, K}): resample.lua's interpolate kernels */
static int l_taps_along(lua_State *L) {
  pt_tensor *x = lpt_check_tensor(L, 1), *idx = lpt_check_tensor(L, 3), *w = lpt_check_tensor(L, 4), *r;
  int dim = (int)luaL_checkinteger(L, 2) - 1;
  if (pt_taps_along(lpt_ctx(L), x, dim, idx, w, &r)) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

/* pt._lstm_cell(x_proj, gh, c) -> {..., 2H}: h' then c' per row; pt._gru_cell(x_proj, gh, h) -> h' */
static int l_lstm_cell(lua_State *L) {
  pt_tensor *r;
  if (pt_nn_lstm_cell(lpt_ctx(L), lpt_check_tensor(L, 1), lpt_check_tensor(L, 2), lpt_check_tensor(L, 3), &r))
    return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

static int l_gru_cell(lua_State *L) {
  pt_tensor *r;
  if (pt_nn_gru_cell(lpt_ctx(L), lpt_check_tensor(L, 1), lpt_check_tensor(L, 2), lpt_check_tensor(L, 3), &r))
    return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

static const luaL_Reg internal[] = {
    {"_taps_along", l_taps_along},
    {"_lstm_cell", l_lstm_cell},
    {"_gru_cell", l_gru_cell},
    {NULL, NULL},
};

void lpt_open_misc(lua_State *L); /* called from l_module.c's list of areas */

void lpt_open_misc(lua_State *L) {
  lpt_add_methods(L, methods);
  lpt_add_functions(L, methods);
  lpt_add_functions(L, internal);
  lpt_add_docs(L, 1, docs);
}
