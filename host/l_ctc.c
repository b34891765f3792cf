/* Binding of the fused CTC loss (lib/nn_ctc.h) as the internal pt._nn_ctc_loss; the public API
 * (nn.CTCLoss, nn.functional.ctc_loss) is lua/partrain/nn_ctc.lua. */
#include <string.h>

#include "../lib/nn_ctc.h"
#include "lpt.h"

static const char *type_of(lua_State *L, int idx) {
  return lpt_test_tensor(L, idx) ? "tensor" : luaL_typename(L, idx);
}

/* The lengths at idx (a tensor of an integer dtype with at most one dimension, a list of
 * integers or one integer) as int64 in a buffer pushed on the stack (collected with it, so an
 * error raised afterwards loses nothing); returns the count and sets *out. */
static int64_t check_lengths(lua_State *L, int idx, const char *fname, const char *what, int64_t **out) {
  pt_tensor *t = lpt_test_tensor(L, idx);
  int64_t n;
  if (t) {
    char s[PT_SHAPE_STR_MAX];
    if (t->dtype != PT_INT64 && t->dtype != PT_INT32 && t->dtype != PT_UINT8)
      lpt_errorf(L, "%s: %s must hold integers, got dtype %s", fname, what, pt_dtype_name(t->dtype));
    if (t->ndim > 1)
      lpt_errorf(L, "%s: %s must be 0-D or 1-D, got shape %s", fname, what,
                 pt_shape_format(t->ndim, t->shape, s, sizeof s));
    n = pt_tensor_numel(t);
  } else if (lua_type(L, idx) == LUA_TTABLE) {
    n = (int64_t)lua_rawlen(L, idx);
  } else if (lua_type(L, idx) == LUA_TNUMBER) {
    int isint;
    lua_tointegerx(L, idx, &isint);
    if (!isint) lpt_errorf(L, "%s: %s must be an integer, got %s", fname, what, lua_tostring(L, idx));
    n = 1;
  } else {
    lpt_errorf(L, "%s: %s must be a tensor, a list of integers or an integer, got %s", fname, what,
               type_of(L, idx));
    return 0;
  }
  int64_t *v = lua_newuserdatauv(L, (size_t)(n > 0 ? n : 1) * sizeof(int64_t), 0);
  if (t) {
    for (int64_t i = 0; i < n; i++) v[i] = (int64_t)pt_tensor_get_flat(t, i);
  } else if (lua_type(L, idx) == LUA_TTABLE) {
    for (int64_t i = 0; i < n; i++) {
      lua_rawgeti(L, idx, (lua_Integer)i + 1);
      int isint = 0;
      lua_Integer x = lua_type(L, -1) == LUA_TNUMBER ? lua_tointegerx(L, -1, &isint) : 0; /* no strings */
      if (!isint)
        lpt_errorf(L, "%s: %s[%I] must be an integer, got %s", fname, what, (lua_Integer)i + 1,
                   lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1) : type_of(L, -1));
      v[i] = x;
      lua_pop(L, 1);
    }
  } else {
    v[0] = lua_tointeger(L, idx);
  }
  *out = v;
  return n;
}

/* _nn_ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction,
 *              zero_infinity[, fname]); blank 1-based, reduction "mean", "sum" or "none" */
static int l_ctc_loss(lua_State *L) {
  const char *fname = luaL_optstring(L, 8, "ctc_loss");
  pt_tensor *lp = lpt_check_tensor(L, 1), *tg = lpt_check_tensor(L, 2), *out;
  int64_t *il, *tl;
  int64_t nil = check_lengths(L, 3, fname, "input_lengths", &il);
  int64_t ntl = check_lengths(L, 4, fname, "target_lengths", &tl);
  lua_Integer blank = luaL_checkinteger(L, 5);
  const char *r = luaL_checkstring(L, 6);
  pt_reduction red;
  if (strcmp(r, "mean") == 0) red = PT_REDUCE_MEAN;
  else if (strcmp(r, "sum") == 0) red = PT_REDUCE_SUM;
  else if (strcmp(r, "none") == 0) red = PT_REDUCE_NONE;
  else return lpt_errorf(L, "%s: reduction must be 'mean', 'sum' or 'none', got '%s'", fname, r);
  bool zero_infinity = lua_toboolean(L, 7);
  pt_status st = pt_nn_ctc_loss(lpt_ctx(L), fname, lp, tg, nil, il, ntl, tl, blank, red, zero_infinity, &out);
  return lpt_push_result(L, st, st ? NULL : out);
}

static const luaL_Reg functions[] = {
    {"_nn_ctc_loss", l_ctc_loss},
    {NULL, NULL},
};

void lpt_open_ctc(lua_State *L) { lpt_add_functions(L, functions); }
