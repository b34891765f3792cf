/* pt.linalg (solve, inv, det, slogdet, cholesky, qr, eigh, eigvalsh, svd, svdvals, lstsq, pinv,
 * matrix_rank, norm, vector_norm, matrix_norm, matrix_power, multi_dot, cross,
 * solve_triangular) and torch's top-level aliases (pt.det, pt.inverse, pt.logdet, pt.slogdet,
 * pt.pinverse, pt.matrix_power, pt.svd, pt.qr, pt.cholesky, pt.cholesky_solve,
 * pt.triangular_solve, pt.trace, also as Tensor methods). See lib/ops_decomp.h.
 *
 * Arguments PyTorch takes by position come by position here too, and every one of them (and
 * the keyword-only ones) also as a trailing options table with PyTorch's names:
 * pt.linalg.qr(A, "complete") or pt.linalg.qr(A, {mode = "complete"}). Dims are 1-based
 * (negative from the end). Functions returning several tensors return them as several values
 * (Q, R = pt.linalg.qr(A)). */
#include <math.h>

#include "lpt.h"
#include "../lib/ops_decomp.h"
#include "../lib/ops_elementwise.h"
#include "../lib/ops_shape.h"

/* The trailing options table (a table without list items, after `min_pos` arguments), or 0;
 * arguments beyond max_pos that are not it are an error, and so are unknown option names. */
static int get_opts(lua_State *L, int min_pos, int max_pos, const char *fname, const char *const *names) {
  lpt_check_max_args(L, max_pos + 1, fname);
  while (lua_gettop(L) > 0 && lua_isnil(L, lua_gettop(L))) lua_pop(L, 1); /* f(A, nil) is f(A) */
  int top = lua_gettop(L), opts = 0;
  if (top > min_pos && lua_type(L, top) == LUA_TTABLE && lua_rawlen(L, top) == 0) opts = top;
  if (!opts && top > max_pos)
    lpt_errorf(L, "%s: unexpected argument #%d (%s)", fname, top, lpt_typename(L, top));
  lpt_check_options(L, opts, fname, names);
  return opts;
}

/* stack index of argument pos (when given and before the options table) or of option key
 * (pushed); 0 when neither. Positions at or past opts are not arguments: the values of options
 * read before sit there, and were taken for later positional arguments (vector_norm(A, {ord = 1})
 * read the pushed ord as its dim). */
static bool get_bool(lua_State *L, int pos, int opts, const char *key, const char *fname, bool def) {
  int i = lpt_arg_or_opt(L, pos, opts, key, fname);
  if (!i) return def;
  if (!lua_isboolean(L, i))
    lpt_errorf(L, "%s: %s must be a boolean, got %s", fname, key, luaL_typename(L, i));
  return lua_toboolean(L, i);
}

/* NAN when not given */
static double get_num(lua_State *L, int pos, int opts, const char *key, const char *fname) {
  int i = lpt_arg_or_opt(L, pos, opts, key, fname);
  if (!i) return NAN;
  if (lua_type(L, i) != LUA_TNUMBER) lpt_errorf(L, "%s: %s must be a number, got %s", fname, key, luaL_typename(L, i));
  return lua_tonumber(L, i);
}

static const char *get_str(lua_State *L, int pos, int opts, const char *key, const char *fname, const char *def) {
  int i = lpt_arg_or_opt(L, pos, opts, key, fname);
  if (!i) return def;
  if (lua_type(L, i) != LUA_TSTRING) lpt_errorf(L, "%s: %s must be a string, got %s", fname, key, luaL_typename(L, i));
  return lua_tostring(L, i);
}

static int push2(lua_State *L, pt_status st, pt_tensor *a, pt_tensor *b) {
  if (st) return lpt_error(L);
  lpt_push_tensor(L, a);
  lpt_push_tensor(L, b);
  return 2;
}

/* ------------------------------------------------------------------ pt.linalg */

static int l_solve(lua_State *L) {
  static const char *const names[] = {"left", NULL};
  pt_tensor *A = lpt_check_tensor(L, 1), *B = lpt_check_tensor(L, 2), *r = NULL;
  int opts = get_opts(L, 2, 2, "linalg.solve", names);
  bool left = get_bool(L, 0, opts, "left", "linalg.solve", true);
  pt_status st_ = pt_linalg_solve(lpt_ctx(L), A, B, left, &r);
  return lpt_push_result(L, st_, r);
}

static int one_matrix(lua_State *L, const char *fname,
                      pt_status (*fn)(pt_ctx *, const char *, pt_tensor *, pt_tensor **)) {
  pt_tensor *A = lpt_check_tensor(L, 1), *r = NULL;
  lpt_check_max_args(L, 1, fname);
  pt_status st = fn(lpt_ctx(L), fname, A, &r);
  return lpt_push_result(L, st, r);
}

static int l_inv(lua_State *L) { return one_matrix(L, "linalg.inv", pt_linalg_inv); }
static int l_det(lua_State *L) { return one_matrix(L, "linalg.det", pt_linalg_det); }
static int t_inverse(lua_State *L) { return one_matrix(L, "inverse", pt_linalg_inv); }
static int t_det(lua_State *L) { return one_matrix(L, "det", pt_linalg_det); }

static int slogdet_named(lua_State *L, const char *fname) {
  pt_tensor *A = lpt_check_tensor(L, 1), *s = NULL, *l = NULL;
  lpt_check_max_args(L, 1, fname);
  pt_status st_ = pt_linalg_slogdet(lpt_ctx(L), fname, A, &s, &l);
  return push2(L, st_, s, l);
}
static int l_slogdet(lua_State *L) { return slogdet_named(L, "linalg.slogdet"); }
static int t_slogdet(lua_State *L) { return slogdet_named(L, "slogdet"); }

static int t_logdet(lua_State *L) {
  pt_tensor *A = lpt_check_tensor(L, 1), *r = NULL;
  lpt_check_max_args(L, 1, "logdet");
  pt_status st_ = pt_logdet(lpt_ctx(L), A, &r);
  return lpt_push_result(L, st_, r);
}

static int l_cholesky(lua_State *L) {
  static const char *const names[] = {"upper", NULL};
  pt_tensor *A = lpt_check_tensor(L, 1), *r = NULL;
  int opts = get_opts(L, 1, 1, "linalg.cholesky", names);
  bool upper = get_bool(L, 0, opts, "upper", "linalg.cholesky", false);
  pt_status st_ = pt_linalg_cholesky(lpt_ctx(L), "linalg.cholesky", A, upper, &r);
  return lpt_push_result(L, st_, r);
}

/* pt.cholesky(A[, upper=false]) */
static int t_cholesky(lua_State *L) {
  static const char *const names[] = {"upper", NULL};
  pt_tensor *A = lpt_check_tensor(L, 1), *r = NULL;
  int opts = get_opts(L, 1, 2, "cholesky", names);
  bool upper = get_bool(L, 2, opts, "upper", "cholesky", false);
  pt_status st_ = pt_linalg_cholesky(lpt_ctx(L), "cholesky", A, upper, &r);
  return lpt_push_result(L, st_, r);
}

static pt_qr_mode check_mode(lua_State *L, const char *fname, const char *mode) {
  if (!strcmp(mode, "reduced")) return PT_QR_REDUCED;
  if (!strcmp(mode, "complete")) return PT_QR_COMPLETE;
  if (!strcmp(mode, "r")) return PT_QR_R;
  lpt_errorf(L, "%s: mode must be 'reduced', 'complete' or 'r', got '%s'", fname, mode);
  return PT_QR_REDUCED;
}

static int l_qr(lua_State *L) {
  static const char *const names[] = {"mode", NULL};
  pt_tensor *A = lpt_check_tensor(L, 1), *q = NULL, *r = NULL;
  int opts = get_opts(L, 1, 2, "linalg.qr", names);
  pt_qr_mode mode = check_mode(L, "linalg.qr", get_str(L, 2, opts, "mode", "linalg.qr", "reduced"));
  pt_status st_ = pt_linalg_qr(lpt_ctx(L), "linalg.qr", A, mode, &q, &r);
  return push2(L, st_, q, r);
}

/* pt.qr(A[, some=true]) */
static int t_qr(lua_State *L) {
  static const char *const names[] = {"some", NULL};
  pt_tensor *A = lpt_check_tensor(L, 1), *q = NULL, *r = NULL;
  int opts = get_opts(L, 1, 2, "qr", names);
  bool some = get_bool(L, 2, opts, "some", "qr", true);
  pt_status st_ = pt_linalg_qr(lpt_ctx(L), "qr", A, some ? PT_QR_REDUCED : PT_QR_COMPLETE, &q, &r);
  return push2(L, st_, q, r);
}

static bool check_uplo(lua_State *L, const char *fname, int opts) {
  const char *u = get_str(L, 2, opts, "UPLO", fname, "L");
  if (strcmp(u, "L") && strcmp(u, "U")) lpt_errorf(L, "%s: UPLO must be 'L' or 'U', got '%s'", fname, u);
  return u[0] == 'U';
}

static int l_eigh(lua_State *L) {
  static const char *const names[] = {"UPLO", NULL};
  pt_tensor *A = lpt_check_tensor(L, 1), *w = NULL, *v = NULL;
  int opts = get_opts(L, 1, 2, "linalg.eigh", names);
  bool upper = check_uplo(L, "linalg.eigh", opts);
  pt_status st_ = pt_linalg_eigh(lpt_ctx(L), "linalg.eigh", A, upper, &w, &v);
  return push2(L, st_, w, v);
}

static int l_eigvalsh(lua_State *L) {
  static const char *const names[] = {"UPLO", NULL};
  pt_tensor *A = lpt_check_tensor(L, 1), *w = NULL;
  int opts = get_opts(L, 1, 2, "linalg.eigvalsh", names);
  bool upper = check_uplo(L, "linalg.eigvalsh", opts);
  pt_status st_ = pt_linalg_eigh(lpt_ctx(L), "linalg.eigvalsh", A, upper, &w, NULL);
  return lpt_push_result(L, st_, w);
}

static int l_svd(lua_State *L) {
  static const char *const names[] = {"full_matrices", NULL};
  pt_tensor *A = lpt_check_tensor(L, 1), *u = NULL, *s = NULL, *vh = NULL;
  int opts = get_opts(L, 1, 2, "linalg.svd", names);
  bool full = get_bool(L, 2, opts, "full_matrices", "linalg.svd", true);
  if (pt_linalg_svd(lpt_ctx(L), "linalg.svd", A, full, &u, &s, &vh)) return lpt_error(L);
  lpt_push_tensor(L, u);
  lpt_push_tensor(L, s);
  lpt_push_tensor(L, vh);
  return 3;
}

static int l_svdvals(lua_State *L) {
  pt_tensor *A = lpt_check_tensor(L, 1), *s = NULL;
  lpt_check_max_args(L, 1, "linalg.svdvals");
  pt_status st_ = pt_linalg_svd(lpt_ctx(L), "linalg.svdvals", A, false, NULL, &s, NULL);
  return lpt_push_result(L, st_, s);
}

/* pt.svd(A[, some=true[, compute_uv=true]]) -> U, S, V (V, not Vh; zeros when not computed) */
static int t_svd(lua_State *L) {
  static const char *const names[] = {"some", "compute_uv", NULL};
  pt_tensor *A = lpt_check_tensor(L, 1), *u = NULL, *s = NULL, *vh = NULL, *v = NULL;
  int opts = get_opts(L, 1, 3, "svd", names);
  bool some = get_bool(L, 2, opts, "some", "svd", true);
  bool uv = get_bool(L, 3, opts, "compute_uv", "svd", true);
  pt_ctx *ctx = lpt_ctx(L);
  pt_status st;
  if (uv) {
    st = pt_linalg_svd(ctx, "svd", A, !some, &u, &s, &vh);
    if (!st) st = pt_transpose(ctx, vh, vh->ndim - 2, vh->ndim - 1, &v);
    pt_tensor_release(vh);
  } else {
    st = pt_linalg_svd(ctx, "svd", A, false, NULL, &s, NULL);
    int64_t shape[PT_MAX_DIMS];
    int nd = A->ndim;
    if (!st) {
      memcpy(shape, A->shape, sizeof shape);
      shape[nd - 1] = shape[nd - 2];
      st = pt_tensor_zeros(ctx, A->dtype, nd, shape, &u);
    }
    if (!st) {
      shape[nd - 1] = shape[nd - 2] = A->shape[nd - 1];
      st = pt_tensor_zeros(ctx, A->dtype, nd, shape, &v);
    }
  }
  if (st) {
    pt_tensor_release(u);
    pt_tensor_release(s);
    pt_tensor_release(v);
    return lpt_error(L);
  }
  lpt_push_tensor(L, u);
  lpt_push_tensor(L, s);
  lpt_push_tensor(L, v);
  return 3;
}

static int l_lstsq(lua_State *L) {
  static const char *const names[] = {"rcond", "driver", NULL};
  static const char *const drivers[] = {"gels", "gelsy", "gelsd", "gelss", NULL};
  const char *fname = "linalg.lstsq";
  pt_tensor *A = lpt_check_tensor(L, 1), *B = lpt_check_tensor(L, 2), *x = NULL, *res = NULL, *rk = NULL,
            *sv = NULL;
  int opts = get_opts(L, 2, 3, fname, names);
  double rcond = get_num(L, 3, opts, "rcond", fname);
  const char *d = get_str(L, 0, opts, "driver", fname, "gelsy");
  int drv = -1;
  for (int i = 0; drivers[i]; i++)
    if (!strcmp(d, drivers[i])) drv = i;
  if (drv < 0) return lpt_errorf(L, "%s: driver must be 'gels', 'gelsy', 'gelsd' or 'gelss', got '%s'", fname, d);
  if (!isnan(rcond) && rcond < 0) rcond = NAN; /* LAPACK: a negative rcond means machine precision */
  if (pt_linalg_lstsq(lpt_ctx(L), A, B, isnan(rcond) ? -1 : rcond, (pt_lstsq_driver)drv, &x, &res, &rk, &sv))
    return lpt_error(L);
  lpt_push_tensor(L, x);
  lpt_push_tensor(L, res);
  lpt_push_tensor(L, rk);
  lpt_push_tensor(L, sv);
  return 4;
}

/* a tolerance: a number (*t NULL; NAN when not given) or a tensor (torch's Tensor atol/rtol) */
static double get_tol(lua_State *L, int pos, int opts, const char *key, const char *fname, pt_tensor **t) {
  int i = lpt_arg_or_opt(L, pos, opts, key, fname);
  *t = NULL;
  if (!i) return NAN;
  if (lua_type(L, i) == LUA_TNUMBER) return lua_tonumber(L, i);
  if (!(*t = lpt_test_tensor(L, i)))
    lpt_errorf(L, "%s: %s must be a number or a tensor, got %s", fname, key, luaL_typename(L, i));
  return NAN;
}

/* when either tolerance is a tensor, the other one (a number) as one too: 0-dim float64, pushed
 * (kept alive by the stack); false when both are numbers */
static bool tol_tensors(lua_State *L, double atol, double rtol, pt_tensor **at, pt_tensor **rt) {
  if (!*at && !*rt) return false;
  pt_tensor **ts[2] = {at, rt};
  double v[2] = {atol, rtol};
  for (int i = 0; i < 2; i++) {
    if (*ts[i] || isnan(v[i])) continue;
    if (pt_tensor_scalar(lpt_ctx(L), PT_FLOAT64, v[i], ts[i])) lpt_error(L);
    lpt_push_tensor(L, *ts[i]);
  }
  return true;
}

static int l_pinv(lua_State *L) {
  static const char *const names[] = {"rcond", "atol", "rtol", "hermitian", NULL};
  const char *fname = "linalg.pinv";
  pt_tensor *A = lpt_check_tensor(L, 1), *r = NULL, *rc_t, *at, *rt;
  int opts = get_opts(L, 1, 2, fname, names);
  double rcond = get_tol(L, 2, opts, "rcond", fname, &rc_t), atol = get_tol(L, 0, opts, "atol", fname, &at);
  double rtol = get_tol(L, 0, opts, "rtol", fname, &rt);
  if (!isnan(rcond) || rc_t) {
    if (!isnan(rtol) || rt) return lpt_errorf(L, "%s: give rcond or rtol, not both (rcond is rtol's old name)", fname);
    rtol = rcond;
    rt = rc_t;
  }
  bool herm = get_bool(L, 0, opts, "hermitian", fname, false);
  pt_status st_ = tol_tensors(L, atol, rtol, &at, &rt) ? pt_linalg_pinv_tensors(lpt_ctx(L), fname, A, at, rt, herm, &r)
                                                       : pt_linalg_pinv(lpt_ctx(L), fname, A, atol, rtol, herm, &r);
  return lpt_push_result(L, st_, r);
}

/* pt.pinverse(A[, rcond=1e-15]) */
static int t_pinverse(lua_State *L) {
  static const char *const names[] = {"rcond", NULL};
  pt_tensor *A = lpt_check_tensor(L, 1), *r = NULL;
  int opts = get_opts(L, 1, 2, "pinverse", names);
  double rcond = get_num(L, 2, opts, "rcond", "pinverse");
  if (isnan(rcond)) rcond = 1e-15;
  pt_status st_ = pt_linalg_pinv(lpt_ctx(L), "pinverse", A, NAN, rcond, false, &r);
  return lpt_push_result(L, st_, r);
}

static int l_matrix_rank(lua_State *L) {
  static const char *const names[] = {"tol", "atol", "rtol", "hermitian", NULL};
  const char *fname = "linalg.matrix_rank";
  pt_tensor *A = lpt_check_tensor(L, 1), *r = NULL, *tol_t, *at, *rt;
  int opts = get_opts(L, 1, 2, fname, names);
  double tol = get_tol(L, 2, opts, "tol", fname, &tol_t), atol = get_tol(L, 0, opts, "atol", fname, &at);
  double rtol = get_tol(L, 0, opts, "rtol", fname, &rt);
  if (!isnan(tol) || tol_t) { /* torch's old tol: an absolute tolerance, rtol 0 */
    if (!isnan(atol) || !isnan(rtol) || at || rt) return lpt_errorf(L, "%s: give tol or atol/rtol, not both", fname);
    atol = tol;
    at = tol_t;
    rtol = 0;
  }
  bool herm = get_bool(L, 0, opts, "hermitian", fname, false);
  pt_status st_ = tol_tensors(L, atol, rtol, &at, &rt) ? pt_linalg_matrix_rank_tensors(lpt_ctx(L), A, at, rt, herm, &r)
                                                       : pt_linalg_matrix_rank(lpt_ctx(L), A, atol, rtol, herm, &r);
  return lpt_push_result(L, st_, r);
}

/* --- norms --- */

/* dims from an integer or a list at idx (0-based into dims); returns how many */
static int check_dims(lua_State *L, int idx, int ndim, const char *fname, int *dims) {
  if (lua_isinteger(L, idx)) {
    dims[0] = lpt_check_dim(L, idx, ndim, fname);
    return 1;
  }
  if (!lua_istable(L, idx))
    return lpt_errorf(L, "%s: dim must be an integer or a list of integers, got %s", fname, luaL_typename(L, idx));
  int n = (int)lua_rawlen(L, idx);
  if (n > PT_MAX_DIMS) return lpt_errorf(L, "%s: too many dims (%d)", fname, n);
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, idx, i + 1);
    if (!lua_isinteger(L, -1))
      return lpt_errorf(L, "%s: dim holds %s at position %d (expected integers)", fname, luaL_typename(L, -1), i + 1);
    dims[i] = lpt_check_dim(L, -1, ndim, fname);
    for (int j = 0; j < i; j++)
      if (dims[j] == dims[i])
        return lpt_errorf(L, "%s: dimension %d appears more than once in the list of dimensions", fname,
                          (int)lua_tointeger(L, -1));
    lua_pop(L, 1);
  }
  return n;
}

/* ord at idx: a number (*kind PT_NORM_ORD) or 'fro'/'nuc' when strings are allowed */
static double check_ord(lua_State *L, int idx, const char *fname, bool strings, pt_matrix_norm_kind *kind) {
  *kind = PT_NORM_ORD;
  if (lua_type(L, idx) == LUA_TNUMBER) return lua_tonumber(L, idx);
  if (strings && lua_type(L, idx) == LUA_TSTRING) {
    const char *s = lua_tostring(L, idx);
    if (!strcmp(s, "fro")) *kind = PT_NORM_FRO;
    else if (!strcmp(s, "nuc")) *kind = PT_NORM_NUC;
    else lpt_errorf(L, "%s: ord must be a number, 'fro' or 'nuc', got '%s'", fname, s);
    return 0;
  }
  return lpt_errorf(L, "%s: ord must be a number%s, got %s", fname, strings ? ", 'fro' or 'nuc'" : "",
                    luaL_typename(L, idx));
}

static const char *const norm_names[] = {"ord", "dim", "keepdim", "dtype", NULL};

/* torch's dtype= of the norms: x converted to it first (a floating dtype, not narrower than a
 * floating x's). *x is replaced by a new reference (release it) or left as it is; an integer x
 * is left to the norm's own error, as torch. */
static bool norm_dtype(lua_State *L, int opts, const char *fname, pt_tensor **x) {
  int i = lpt_arg_or_opt(L, 0, opts, "dtype", fname);
  if (!i) return false;
  pt_dtype dt;
  if (lua_type(L, i) != LUA_TSTRING || !pt_dtype_from_name(lua_tostring(L, i), &dt))
    lpt_errorf(L, "%s: dtype must be a dtype name such as \"float64\", got %s", fname,
               lua_type(L, i) == LUA_TSTRING ? lua_tostring(L, i) : luaL_typename(L, i));
  if (!pt_dtype_is_floating(dt))
    lpt_errorf(L, "%s: dtype should be floating point, but got %s", fname, pt_dtype_name(dt));
  if (!pt_dtype_is_floating((*x)->dtype)) return false;
  if ((*x)->dtype == PT_FLOAT64 && dt == PT_FLOAT32)
    lpt_errorf(L, "%s: the dtype of the input (%s) should be convertible without narrowing to the specified dtype (%s)",
               fname, pt_dtype_name((*x)->dtype), pt_dtype_name(dt));
  pt_tensor *c = NULL;
  if (pt_to_dtype(lpt_ctx(L), *x, dt, &c)) lpt_error(L);
  *x = c;
  return true;
}

static int l_vector_norm(lua_State *L) {
  const char *fname = "linalg.vector_norm";
  pt_tensor *x = lpt_check_tensor(L, 1), *r = NULL;
  int opts = get_opts(L, 1, 4, fname, norm_names);
  pt_matrix_norm_kind kind;
  int i = lpt_arg_or_opt(L, 2, opts, "ord", fname);
  double ord = i ? check_ord(L, i, fname, false, &kind) : 2;
  int dims[PT_MAX_DIMS], nd = 0;
  if ((i = lpt_arg_or_opt(L, 3, opts, "dim", fname))) nd = check_dims(L, i, x->ndim, fname, dims);
  bool keepdim = get_bool(L, 4, opts, "keepdim", fname, false);
  bool cast = norm_dtype(L, opts, fname, &x);
  pt_status st_ = pt_linalg_vector_norm(lpt_ctx(L), x, ord, nd, dims, keepdim, &r);
  if (cast) pt_tensor_release(x);
  return lpt_push_result(L, st_, r);
}

static void matrix_dims(lua_State *L, int i, const pt_tensor *A, const char *fname, int *d0, int *d1) {
  int dims[PT_MAX_DIMS];
  *d0 = A->ndim - 2;
  *d1 = A->ndim - 1;
  if (!i) return;
  if (!lua_istable(L, i) || lua_rawlen(L, i) != 2)
    lpt_errorf(L, "%s: dim must be a list of 2 dims, got %s", fname,
               lua_istable(L, i) ? lua_pushfstring(L, "%d of them", (int)lua_rawlen(L, i)) : luaL_typename(L, i));
  if (A->ndim < 2) return; /* the shape error comes from lib/ */
  check_dims(L, i, A->ndim, fname, dims);
  *d0 = dims[0];
  *d1 = dims[1];
}

static int l_matrix_norm(lua_State *L) {
  const char *fname = "linalg.matrix_norm";
  pt_tensor *A = lpt_check_tensor(L, 1), *r = NULL;
  int opts = get_opts(L, 1, 4, fname, norm_names);
  pt_matrix_norm_kind kind = PT_NORM_FRO;
  int i = lpt_arg_or_opt(L, 2, opts, "ord", fname);
  double ord = i ? check_ord(L, i, fname, true, &kind) : 0;
  int d0, d1;
  matrix_dims(L, lpt_arg_or_opt(L, 3, opts, "dim", fname), A, fname, &d0, &d1);
  bool keepdim = get_bool(L, 4, opts, "keepdim", fname, false);
  bool cast = norm_dtype(L, opts, fname, &A);
  pt_status st_ = pt_linalg_matrix_norm(lpt_ctx(L), A, kind, ord, d0, d1, keepdim, &r);
  if (cast) pt_tensor_release(A);
  return lpt_push_result(L, st_, r);
}

static int l_norm(lua_State *L) {
  const char *fname = "linalg.norm";
  pt_tensor *A = lpt_check_tensor(L, 1), *r = NULL;
  int opts = get_opts(L, 1, 4, fname, norm_names);
  pt_matrix_norm_kind kind = PT_NORM_ORD;
  int io = lpt_arg_or_opt(L, 2, opts, "ord", fname);
  double ord = io ? check_ord(L, io, fname, true, &kind) : 2;
  int id = lpt_arg_or_opt(L, 3, opts, "dim", fname);
  bool keepdim = get_bool(L, 4, opts, "keepdim", fname, false);
  pt_ctx *ctx = lpt_ctx(L);
  int dims[PT_MAX_DIMS], nd = 0;
  bool matrix;
  if (id) {
    nd = check_dims(L, id, A->ndim, fname, dims);
    if (nd != 1 && nd != 2) return lpt_errorf(L, "%s: dim must hold 1 or 2 dims, got %d", fname, nd);
    matrix = nd == 2;
  } else if (!io) {
    matrix = false; /* the 2-norm of all elements */
  } else {
    if (A->ndim != 1 && A->ndim != 2) {
      char s[PT_SHAPE_STR_MAX];
      return lpt_errorf(L, "%s: without dim, an ord needs a 1-D or 2-D input, got shape %s", fname,
                        pt_shape_format(A->ndim, A->shape, s, sizeof s));
    }
    matrix = A->ndim == 2;
    if (matrix) {
      dims[0] = 0;
      dims[1] = 1;
    }
  }
  if (!matrix && kind != PT_NORM_ORD)
    return lpt_errorf(L, "%s: ord '%s' is a matrix norm: give 2 dims (or a 2-D input)", fname,
                      kind == PT_NORM_FRO ? "fro" : "nuc");
  if (matrix && !io) kind = PT_NORM_FRO;
  bool cast = norm_dtype(L, opts, fname, &A);
  pt_status st = matrix ? pt_linalg_matrix_norm(ctx, A, kind, ord, dims[0], dims[1], keepdim, &r)
                        : pt_linalg_vector_norm(ctx, A, ord, nd, dims, keepdim, &r);
  if (cast) pt_tensor_release(A);
  return lpt_push_result(L, st, r);
}

static int matrix_power_named(lua_State *L, const char *fname) {
  pt_tensor *A = lpt_check_tensor(L, 1), *r = NULL;
  lpt_check_max_args(L, 2, fname);
  if (!lua_isinteger(L, 2)) return lpt_errorf(L, "%s: n must be an integer, got %s", fname, luaL_typename(L, 2));
  pt_status st_ = pt_linalg_matrix_power(lpt_ctx(L), A, lua_tointeger(L, 2), &r);
  return lpt_push_result(L, st_, r);
}
static int l_matrix_power(lua_State *L) { return matrix_power_named(L, "linalg.matrix_power"); }
static int t_matrix_power(lua_State *L) { return matrix_power_named(L, "matrix_power"); }

static int l_multi_dot(lua_State *L) {
  const char *fname = "linalg.multi_dot";
  lpt_check_max_args(L, 1, fname);
  if (!lua_istable(L, 1) || lpt_test_tensor(L, 1))
    return lpt_errorf(L, "%s: expected a list of tensors, got %s", fname, luaL_typename(L, 1));
  int n = (int)lua_rawlen(L, 1);
  if (n > 1024) return lpt_errorf(L, "%s: too many tensors (%d)", fname, n);
  pt_tensor *ts[1024];
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 1, i + 1);
    ts[i] = lpt_test_tensor(L, -1);
    if (!ts[i]) return lpt_errorf(L, "%s: item %d is a %s, not a tensor", fname, i + 1, luaL_typename(L, -1));
    lua_pop(L, 1);
  }
  pt_tensor *r = NULL;
  pt_status st_ = pt_linalg_multi_dot(lpt_ctx(L), n, ts, &r);
  return lpt_push_result(L, st_, r);
}

static int l_cross(lua_State *L) {
  static const char *const names[] = {"dim", NULL};
  const char *fname = "linalg.cross";
  pt_tensor *a = lpt_check_tensor(L, 1), *b = lpt_check_tensor(L, 2), *r = NULL;
  int opts = get_opts(L, 2, 3, fname, names);
  int i = lpt_arg_or_opt(L, 3, opts, "dim", fname), nd = a->ndim > b->ndim ? a->ndim : b->ndim;
  int dim = i ? lpt_check_dim(L, i, nd, fname) : nd - 1;
  pt_status st_ = pt_linalg_cross(lpt_ctx(L), a, b, dim, &r);
  return lpt_push_result(L, st_, r);
}

static int l_solve_triangular(lua_State *L) {
  static const char *const names[] = {"upper", "left", "unitriangular", NULL};
  const char *fname = "linalg.solve_triangular";
  pt_tensor *A = lpt_check_tensor(L, 1), *B = lpt_check_tensor(L, 2), *r = NULL;
  int opts = get_opts(L, 2, 2, fname, names);
  if (!lpt_arg_or_opt(L, 0, opts, "upper", fname))
    return lpt_errorf(L, "%s: option 'upper' is required ({upper = true} or {upper = false})", fname);
  bool upper = get_bool(L, 0, opts, "upper", fname, false);
  bool left = get_bool(L, 0, opts, "left", fname, true);
  bool unit = get_bool(L, 0, opts, "unitriangular", fname, false);
  pt_status st_ = pt_linalg_solve_triangular(lpt_ctx(L), fname, A, B, upper, left, unit, &r);
  return lpt_push_result(L, st_, r);
}

/* ------------------------------------------------------------------ top-level only */

/* pt.cholesky_solve(B, L[, upper=false]) */
static int t_cholesky_solve(lua_State *L) {
  static const char *const names[] = {"upper", NULL};
  pt_tensor *B = lpt_check_tensor(L, 1), *F = lpt_check_tensor(L, 2), *r = NULL;
  int opts = get_opts(L, 2, 3, "cholesky_solve", names);
  bool upper = get_bool(L, 3, opts, "upper", "cholesky_solve", false);
  pt_status st_ = pt_cholesky_solve(lpt_ctx(L), B, F, upper, &r);
  return lpt_push_result(L, st_, r);
}

/* pt.triangular_solve(b, A[, upper=true[, transpose=false[, unitriangular=false]]]) -> X, A clone */
static int t_triangular_solve(lua_State *L) {
  static const char *const names[] = {"upper", "transpose", "unitriangular", NULL};
  const char *fname = "triangular_solve";
  pt_tensor *b = lpt_check_tensor(L, 1), *A = lpt_check_tensor(L, 2), *x = NULL, *c = NULL, *At = NULL;
  int opts = get_opts(L, 2, 5, fname, names);
  bool upper = get_bool(L, 3, opts, "upper", fname, true);
  bool trans = get_bool(L, 4, opts, "transpose", fname, false);
  bool unit = get_bool(L, 5, opts, "unitriangular", fname, false);
  pt_ctx *ctx = lpt_ctx(L);
  pt_status st = PT_OK;
  if (trans && A->ndim >= 2) st = pt_transpose(ctx, A, A->ndim - 2, A->ndim - 1, &At);
  else At = pt_tensor_retain(A);
  if (!st) st = pt_linalg_solve_triangular(ctx, fname, At, b, trans ? !upper : upper, true, unit, &x);
  pt_tensor_release(At);
  if (!st) { /* torch's cloned_coefficient: A broadcast to the solution's batch dims */
    int64_t shape[PT_MAX_DIMS];
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    shape[x->ndim - 1] = A->shape[A->ndim - 1];
    pt_tensor *e = NULL;
    st = pt_expand(ctx, A, x->ndim, shape, &e);
    if (!st) st = pt_clone(ctx, e, &c);
    pt_tensor_release(e);
  }
  if (st) pt_tensor_release(x);
  return push2(L, st, x, c);
}

static int t_trace(lua_State *L) {
  pt_tensor *A = lpt_check_tensor(L, 1), *r = NULL;
  lpt_check_max_args(L, 1, "trace");
  pt_status st_ = pt_trace(lpt_ctx(L), A, &r);
  return lpt_push_result(L, st_, r);
}

static const luaL_Reg linalg_functions[] = {
    {"solve", l_solve},
    {"inv", l_inv},
    {"det", l_det},
    {"slogdet", l_slogdet},
    {"cholesky", l_cholesky},
    {"qr", l_qr},
    {"eigh", l_eigh},
    {"eigvalsh", l_eigvalsh},
    {"svd", l_svd},
    {"svdvals", l_svdvals},
    {"lstsq", l_lstsq},
    {"pinv", l_pinv},
    {"matrix_rank", l_matrix_rank},
    {"norm", l_norm},
    {"vector_norm", l_vector_norm},
    {"matrix_norm", l_matrix_norm},
    {"matrix_power", l_matrix_power},
    {"multi_dot", l_multi_dot},
    {"cross", l_cross},
    {"solve_triangular", l_solve_triangular},
    {NULL, NULL},
};

/* functions and Tensor methods (self first) */
static const luaL_Reg functions[] = {
    {"det", t_det},
    {"inverse", t_inverse},
    {"logdet", t_logdet},
    {"slogdet", t_slogdet},
    {"pinverse", t_pinverse},
    {"matrix_power", t_matrix_power},
    {"svd", t_svd},
    {"qr", t_qr},
    {"cholesky", t_cholesky},
    {"cholesky_solve", t_cholesky_solve},
    {"triangular_solve", t_triangular_solve},
    {"trace", t_trace},
    {NULL, NULL},
};

static const char *const linalg_docs[] = {
    "solve", "pt.linalg.solve(A, B[, {left=true}]) -> X with A X = B (left = false: X A = B). A: square\n"
             "  matrices (..., n, n); B: a vector (n) or vectors (shape A's without the last dim), or\n"
             "  matrices (..., n, k); batch dims broadcast. LU with partial pivoting (LAPACK dgesv);\n"
             "  a singular matrix is an error naming the zero pivot and the batch element.\n"
             "  Gradients for A and B.",
    "inv", "pt.linalg.inv(A) -> the inverse of each square matrix (LU, LAPACK dgetrf/dgetri); a singular\n"
           "  matrix is an error. Gradient: -A^-T g A^-T.",
    "det", "pt.linalg.det(A) -> the determinant of each square matrix (batch shape; 0 for singular\n"
           "  ones; inf/nan entries go through the LU as PyTorch's: nan for a 0 * inf pivot product).\n"
           "  Gradient g det A^-T, and the cofactor matrix (by SVD) for singular A: PyTorch 1.13\n"
           "  gives 0 there, this is the true derivative.",
    "slogdet", "pt.linalg.slogdet(A) -> sign, logabsdet: det = sign * exp(logabsdet), without overflow; a\n"
               "  singular matrix gives 0, -inf. Gradient of logabsdet: g A^-T (nan for singular A).",
    "cholesky", "pt.linalg.cholesky(A[, {upper=false}]) -> L, lower triangular with A = L L^T (upper: U with\n"
                "  A = U^T U). Reads one triangle of A (the lower one; upper: the upper). A matrix that is not\n"
                "  positive-definite is an error naming the leading minor. Gradient as PyTorch's (symmetric).",
    "qr", "pt.linalg.qr(A[, mode='reduced']) -> Q, R with A = Q R. mode 'reduced': Q m x k, R k x n\n"
          "  (k = min(m, n)); 'complete': Q m x m, R m x n; 'r': R only (Q an empty tensor). Householder\n"
          "  (LAPACK dgeqrf/dorgqr); signs are LAPACK's. Differentiable for 'reduced', and 'complete'\n"
          "  when m <= n; mode 'r' cannot be differentiated (an error at backward, as PyTorch).",
    "eigh", "pt.linalg.eigh(A[, UPLO='L']) -> eigenvalues (ascending), eigenvectors (columns) of\n"
            "  symmetric matrices, read from the lower ('L') or upper ('U') triangle (LAPACK dsyevd).\n"
            "  Eigenvector signs are LAPACK's. Gradients of both (PyTorch's formula: the eigenvector\n"
            "  term divides by eigenvalue gaps, so it is undefined for repeated eigenvalues).",
    "eigvalsh", "pt.linalg.eigvalsh(A[, UPLO='L']) -> the eigenvalues (ascending) of symmetric matrices.\n"
                "  Gradient V diag(g) V^T.",
    "svd", "pt.linalg.svd(A[, full_matrices=true]) -> U, S, Vh with A = U diag(S) Vh, S descending\n"
           "  (LAPACK dgesdd). full_matrices: U m x m and Vh n x n, else m x k and k x n. Signs are\n"
           "  LAPACK's. Gradients of U, S and Vh (PyTorch's formula). Undefined, as in PyTorch: U's and\n"
           "  Vh's gradients when singular values repeat (divisions by s_i^2 - s_j^2) or are zero (when\n"
           "  m != n); with full_matrices only U's first k columns and Vh's first k rows count.\n"
           "  Non-finite input is an error.",
    "svdvals", "pt.linalg.svdvals(A) -> the singular values (descending). Gradient U diag(g) Vh.",
    "lstsq", "pt.linalg.lstsq(A, B[, rcond][, {rcond=, driver='gelsy'}]) -> solution, residuals, rank,\n"
             "  singular_values: min ||A X - B|| for A (..., m, n), B (..., m, k) or (..., m). driver\n"
             "  'gels' (QR, full rank), 'gelsy' (pivoted QR; PyTorch's CPU default), 'gelsd' (SVD,\n"
             "  divide and conquer), 'gelss' (SVD). rcond: singular values below rcond * largest count\n"
             "  as zero (default eps(dtype) * max(m, n)). B has A's number of dims (batch dims\n"
             "  broadcast) or one less (vectors). residuals: squared column norms of A X - B, (..., k)\n"
             "  ((..., 1) for vectors), when m > n, every matrix has full rank and the driver is not\n"
             "  gelsy (else empty); rank: int64 (empty for gels); singular_values: gelsd/gelss (else\n"
             "  empty); rank and singular_values have A's batch shape, as PyTorch. Gradients of the\n"
             "  solution for A and B (through pinv, as PyTorch).",
    "pinv", "pt.linalg.pinv(A[, rcond][, {atol=, rtol=, hermitian=false}]) -> the pseudo-inverse (n x m)\n"
            "  by SVD (hermitian: by eigh of the lower triangle). Singular values <= max(atol, rtol *\n"
            "  largest) count as zero; rtol defaults to eps(dtype) * max(m, n), or 0 when atol > 0 is\n"
            "  given; rcond is rtol's old name. atol/rtol/rcond may be tensors, broadcast with A's batch\n"
            "  dims (the result has the broadcast batch shape). Gradient: PyTorch's pinv_backward.",
    "matrix_rank", "pt.linalg.matrix_rank(A[, tol][, {atol=, rtol=, hermitian=false}]) -> int64 ranks: the\n"
                   "  singular values above max(atol, rtol * largest) (tolerances as pinv, tensors too; tol:\n"
                   "  an atol).",
    "norm", "pt.linalg.norm(A[, ord][, dim][, keepdim=false]) -> vector or matrix norm: dim one dim (or\n"
            "  none and no ord: all elements) -> vector_norm (ord default 2); dim {d1, d2}, or a 2-D input\n"
            "  with an ord -> matrix_norm (ord default 'fro'). Options {ord=, dim=, keepdim=, dtype=} too.",
    "vector_norm", "pt.linalg.vector_norm(x[, ord=2][, dim][, keepdim=false]) -> (sum |x|^ord)^(1/ord) over\n"
                   "  dim (a dim or a list; default all): ord any number, math.huge (max |x|), -math.huge\n"
                   "  (min |x|), 0 (count of non-zeros). Gradients as PyTorch (0 at a zero norm).\n"
                   "  {dtype='float64'} (also for norm and matrix_norm): x converted first, as torch's\n"
                   "  dtype= (float32 -> float64; float64 -> float32 is refused as narrowing).",
    "matrix_norm", "pt.linalg.matrix_norm(A[, ord='fro'][, dim={-2,-1}][, keepdim=false]) -> ord 'fro',\n"
                   "  'nuc' (sum of singular values), 2 / -2 (largest / smallest singular value), 1 / -1\n"
                   "  (max / min column sum of |A|), math.huge / -math.huge (max / min row sum). Gradients\n"
                   "  (a tie in the max/min goes to the first, where PyTorch shares it).",
    "matrix_power", "pt.linalg.matrix_power(A, n) -> A^n for an integer n (n < 0: inverse first, n = 0:\n"
                    "  identity), by repeated squaring; gradients flow through the products.",
    "multi_dot", "pt.linalg.multi_dot({A, B, C, ...}) -> the product of 2-D tensors (the first may be a row\n"
                 "  vector, the last a column vector), multiplied in the order with fewest operations.",
    "cross", "pt.linalg.cross(a, b[, dim=-1]) -> cross product of 3-vectors along dim (size 3 in both); a\n"
             "  and b have the same number of dims and broadcast. Gradients for both.",
    "solve_triangular", "pt.linalg.solve_triangular(A, B, {upper=, left=true, unitriangular=false}) -> X with\n"
                        "  A X = B (left = false: X A = B), A triangular (the other triangle is not read;\n"
                        "  unitriangular: the diagonal is taken as ones). upper is required. B has 2 or more\n"
                        "  dims; batch dims broadcast. No check for zeros on the diagonal (inf/nan, as\n"
                        "  PyTorch). Gradients for A (its triangle) and B.",
    NULL, NULL,
};

static const char *const docs[] = {
    "det", "pt.det(A) or A:det() -> the determinant (pt.linalg.det).",
    "inverse", "pt.inverse(A) or A:inverse() -> the inverse (pt.linalg.inv).",
    "logdet", "pt.logdet(A) or A:logdet() -> log(det A): nan for a negative determinant, -inf for a\n"
              "  singular matrix. Gradient g A^-T.",
    "slogdet", "pt.slogdet(A) or A:slogdet() -> sign, logabsdet (pt.linalg.slogdet).",
    "pinverse", "pt.pinverse(A[, rcond=1e-15]) or A:pinverse() -> the pseudo-inverse with singular values\n"
                "  <= rcond * largest dropped (pt.linalg.pinv with rtol = rcond).",
    "matrix_power", "pt.matrix_power(A, n) or A:matrix_power(n) -> A^n (pt.linalg.matrix_power).",
    "svd", "pt.svd(A[, some=true[, compute_uv=true]]) or A:svd() -> U, S, V with A = U diag(S) V^T\n"
           "  (torch.svd: V, not Vh; some: reduced factors; compute_uv = false: U and V are zero\n"
           "  matrices m x m and n x n). Gradients as pt.linalg.svd.",
    "qr", "pt.qr(A[, some=true]) or A:qr() -> Q, R (some = false: mode 'complete'; pt.linalg.qr).",
    "cholesky", "pt.cholesky(A[, upper=false]) or A:cholesky() -> the Cholesky factor (pt.linalg.cholesky).",
    "cholesky_solve", "pt.cholesky_solve(B, L[, upper=false]) or B:cholesky_solve(L) -> X with (L L^T) X = B\n"
                      "  (upper: (U^T U) X = B), by two triangular solves. Gradients for B and for L's\n"
                      "  triangle (PyTorch also gives the unread triangle one).",
    "triangular_solve", "pt.triangular_solve(b, A[, upper=true[, transpose=false[, unitriangular=false]]]) or\n"
                        "  b:triangular_solve(A) -> X, A's clone (broadcast to X's batch dims, as PyTorch) with\n"
                        "  op(A) X = b (transpose: A^T); batch dims broadcast. Prefer\n"
                        "  pt.linalg.solve_triangular.",
    "trace", "pt.trace(A) or A:trace() -> the sum of the diagonal of a 2-D tensor (integers give int64).\n"
             "  Gradient: g on the diagonal.",
    NULL, NULL,
};

void lpt_open_decomp(lua_State *L) {
  lpt_add_methods(L, functions);
  lpt_add_functions(L, functions);
  lpt_add_docs(L, 0, docs);
  /* pt.linalg, with its docs keyed by each function (help(pt.linalg.solve)) */
  lua_getfield(L, LUA_REGISTRYINDEX, LPT_MODULE);
  lua_getfield(L, -1, "_docs");
  lua_newtable(L);
  luaL_setfuncs(L, linalg_functions, 0);
  for (const char *const *p = linalg_docs; p[0] && p[1]; p += 2) {
    lua_getfield(L, -1, p[0]);
    lua_pushstring(L, p[1]);
    lua_rawset(L, -4);
  }
  lua_pushvalue(L, -1);
  lua_pushstring(L, "pt.linalg: linear algebra through LAPACK (float32 and float64, batched over leading\n"
                    "  dims, with gradients), as torch.linalg: solve, inv, det, slogdet, cholesky, qr, eigh,\n"
                    "  eigvalsh, svd, svdvals, lstsq, pinv, matrix_rank, norm, vector_norm, matrix_norm,\n"
                    "  matrix_power, multi_dot, cross, solve_triangular. float32 is factorised in float64.");
  lua_rawset(L, -4);
  lua_setfield(L, -3, "linalg");
  lua_pop(L, 2);
}
