/* lib/ elementwise ops: values, broadcasting, promotion, errors, in-place rules, gradients. */
#include <string.h>

#include "autograd.h"
#include "ops_elementwise.h"
#include "tensor.h"
#include "testing.h"

static pt_tensor *make(pt_ctx *ctx, pt_dtype dt, int ndim, const int64_t *shape, const double *v) {
  pt_tensor *t = NULL;
  CHECK(pt_tensor_empty(ctx, dt, ndim, shape, &t) == PT_OK);
  int64_t n = pt_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) pt_tensor_set_flat(t, i, v[i]);
  return t;
}

static void test_broadcast_add(pt_ctx *ctx) {
  pt_tensor *a = make(ctx, PT_FLOAT32, 2, (int64_t[]){3, 1}, (double[]){1, 2, 3});
  pt_tensor *b = make(ctx, PT_FLOAT32, 1, (int64_t[]){4}, (double[]){10, 20, 30, 40});
  pt_tensor *c = NULL;
  CHECK(pt_add(ctx, a, b, &c) == PT_OK);
  CHECK(c->ndim == 2 && c->shape[0] == 3 && c->shape[1] == 4);
  CHECK(pt_tensor_get_flat(c, 0) == 11 && pt_tensor_get_flat(c, 11) == 43);
  CHECK(c->refcount == 1);
  pt_tensor_release(c);
  /* the error names the op and both shapes */
  pt_tensor *d = make(ctx, PT_FLOAT32, 2, (int64_t[]){3, 4}, (double[12]){0});
  pt_tensor *e = make(ctx, PT_FLOAT32, 1, (int64_t[]){5}, (double[5]){0});
  c = NULL;
  CHECK(pt_add(ctx, d, e, &c) == PT_ESHAPE);
  CHECK(c == NULL);
  CHECK(strcmp(pt_errmsg(ctx), "add: shapes {3,4} and {5} cannot be broadcast") == 0);
  pt_tensor_release(a);
  pt_tensor_release(b);
  pt_tensor_release(d);
  pt_tensor_release(e);
}

static void test_promotion(pt_ctx *ctx) {
  pt_tensor *i = make(ctx, PT_INT64, 1, (int64_t[]){2}, (double[]){1, 3});
  pt_tensor *f = make(ctx, PT_FLOAT32, 1, (int64_t[]){2}, (double[]){1, 3});
  pt_tensor *d0 = make(ctx, PT_FLOAT64, 0, NULL, (double[]){2});
  pt_tensor *r = NULL;
  CHECK(pt_result_type(i, f) == PT_FLOAT32);
  CHECK(pt_result_type(f, d0) == PT_FLOAT32);
  CHECK(pt_result_type(i, d0) == PT_FLOAT64);
  CHECK(pt_result_type_scalar(i, false) == PT_FLOAT32);
  CHECK(pt_result_type_scalar(i, true) == PT_INT64);
  CHECK(pt_div(ctx, i, i, &r) == PT_OK);
  CHECK(r->dtype == PT_FLOAT32 && pt_tensor_get_flat(r, 1) == 1.0);
  pt_tensor_release(r);
  CHECK(pt_div_scalar(ctx, i, 2, &r) == PT_OK);
  CHECK(r->dtype == PT_FLOAT32 && pt_tensor_get_flat(r, 1) == 1.5);
  pt_tensor_release(r);
  CHECK(pt_rsub_scalar(ctx, i, 10, &r) == PT_OK);
  CHECK(r->dtype == PT_INT64 && pt_tensor_get_flat(r, 1) == 7);
  pt_tensor_release(r);
  /* the default float dtype decides integer promotions (torch.set_default_dtype) */
  CHECK(pt_default_float() == PT_FLOAT32);
  CHECK(pt_set_default_float(ctx, PT_FLOAT64) == PT_OK);
  CHECK(pt_result_type_scalar(i, false) == PT_FLOAT64);
  CHECK(pt_div(ctx, i, i, &r) == PT_OK);
  CHECK(r->dtype == PT_FLOAT64);
  pt_tensor_release(r);
  CHECK(pt_set_default_float(ctx, PT_INT64) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "set_default_dtype: only floating-point types are supported as the default type "
                               "(float32, float64), got int64") == 0);
  CHECK(pt_default_float() == PT_FLOAT64);
  CHECK(pt_set_default_float(ctx, PT_FLOAT32) == PT_OK);
  CHECK(pt_lt(ctx, f, d0, &r) == PT_OK);
  CHECK(r->dtype == PT_BOOL && pt_tensor_get_flat(r, 0) == 1 && pt_tensor_get_flat(r, 1) == 0);
  pt_tensor_release(r);
  CHECK(pt_pow_scalar(ctx, i, -1, &r) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "pow: integers to negative integer powers are not allowed") == 0);
  pt_tensor_release(i);
  pt_tensor_release(f);
  pt_tensor_release(d0);
}

static void test_inplace(pt_ctx *ctx) {
  pt_tensor *w = make(ctx, PT_FLOAT32, 1, (int64_t[]){3}, (double[]){1, 2, 3});
  pt_tensor *i = make(ctx, PT_INT64, 1, (int64_t[]){3}, (double[]){1, 2, 3});
  unsigned v0 = atomic_load(&w->storage->version);
  CHECK(pt_add_scalar_(ctx, w, 1) == PT_OK);
  CHECK(pt_tensor_get_flat(w, 2) == 4);
  CHECK(atomic_load(&w->storage->version) == v0 + 1);
  CHECK(pt_binary_scalar_(ctx, PT_BIN_DIV, i, 2, true) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "div_: result type float32 can't be cast to the desired output type int64") == 0);
  w->requires_grad = true;
  CHECK(pt_mul_scalar_(ctx, w, 2) == PT_ESTATE);
  CHECK(strcmp(pt_errmsg(ctx), "mul_: a leaf tensor that requires grad is used in an in-place operation") == 0);
  ctx->grad_enabled = false;
  CHECK(pt_mul_scalar_(ctx, w, 2) == PT_OK);
  CHECK(pt_tensor_get_flat(w, 0) == 4);
  ctx->grad_enabled = true;
  pt_tensor *big = make(ctx, PT_FLOAT32, 2, (int64_t[]){2, 3}, (double[6]){0});
  pt_tensor *s = make(ctx, PT_FLOAT32, 1, (int64_t[]){3}, (double[3]){0});
  CHECK(pt_add_(ctx, s, big, 1.0) == PT_ESHAPE);
  CHECK(strcmp(pt_errmsg(ctx), "add_: output with shape {3} doesn't match the broadcast shape {2,3}") == 0);
  CHECK(pt_copy_(ctx, big, i) == PT_OK);
  CHECK(pt_tensor_get_flat(big, 5) == 3);
  pt_tensor_release(w);
  pt_tensor_release(i);
  pt_tensor_release(big);
  pt_tensor_release(s);
}

static void test_gradients(pt_ctx *ctx) {
  /* z = x * y with y broadcast: dz/dy sums over the broadcast dim */
  pt_tensor *x = make(ctx, PT_FLOAT64, 2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 4});
  pt_tensor *y = make(ctx, PT_FLOAT64, 1, (int64_t[]){2}, (double[]){10, 20});
  x->requires_grad = y->requires_grad = true;
  pt_tensor *z = NULL, *g = NULL;
  CHECK(pt_mul(ctx, x, y, &z) == PT_OK);
  CHECK(z->grad_fn && strcmp(z->grad_fn->name, "MulBackward") == 0);
  CHECK(pt_tensor_empty(ctx, PT_FLOAT64, 2, (int64_t[]){2, 2}, &g) == PT_OK);
  pt_tensor_fill(ctx, g, 1.0);
  CHECK(pt_backward(ctx, z, g, false) == PT_OK);
  CHECK(x->grad && pt_tensor_get_flat(x->grad, 0) == 10 && pt_tensor_get_flat(x->grad, 3) == 20);
  CHECK(y->grad && y->grad->ndim == 1 && pt_tensor_get_flat(y->grad, 0) == 4 &&
        pt_tensor_get_flat(y->grad, 1) == 6);
  pt_tensor_release(z);
  /* tanh'(0) = 1, sigmoid'(0) = 1/4, gelu'(0) = 1/2 */
  pt_tensor *o = make(ctx, PT_FLOAT64, 0, NULL, (double[]){0});
  o->requires_grad = true;
  pt_unop ops[3] = {PT_UN_TANH, PT_UN_SIGMOID, PT_UN_GELU};
  double want[3] = {1, 0.25, 0.5};
  for (int k = 0; k < 3; k++) {
    pt_tensor_release(o->grad);
    o->grad = NULL;
    CHECK(pt_unary(ctx, ops[k], o, &z) == PT_OK);
    CHECK(pt_backward(ctx, z, NULL, false) == PT_OK);
    CHECK_NEAR(pt_tensor_get_flat(o->grad, 0), want[k], 1e-12);
    pt_tensor_release(z);
  }
  /* clamp passes the gradient inside [lo, hi] only */
  pt_tensor *c = make(ctx, PT_FLOAT64, 1, (int64_t[]){3}, (double[]){-2, 0.5, 2});
  c->requires_grad = true;
  CHECK(pt_clamp(ctx, c, true, -1, true, 1, &z) == PT_OK);
  pt_tensor *g3 = make(ctx, PT_FLOAT64, 1, (int64_t[]){3}, (double[]){1, 1, 1});
  CHECK(pt_backward(ctx, z, g3, false) == PT_OK);
  CHECK(pt_tensor_get_flat(c->grad, 0) == 0 && pt_tensor_get_flat(c->grad, 1) == 1 &&
        pt_tensor_get_flat(c->grad, 2) == 0);
  pt_tensor_release(z);
  pt_tensor_release(g3);
  pt_tensor_release(c);
  pt_tensor_release(o);
  pt_tensor_release(g);
  pt_tensor_release(x);
  pt_tensor_release(y);
}

static void test_where_mask(pt_ctx *ctx) {
  pt_tensor *cond = make(ctx, PT_BOOL, 2, (int64_t[]){2, 1}, (double[]){1, 0});
  pt_tensor *a = make(ctx, PT_INT64, 1, (int64_t[]){3}, (double[]){1, 2, 3});
  pt_tensor *b = make(ctx, PT_FLOAT32, 0, NULL, (double[]){-1});
  pt_tensor *r = NULL;
  CHECK(pt_where(ctx, cond, a, b, &r) == PT_OK);
  CHECK(r->dtype == PT_FLOAT32 && r->ndim == 2 && r->shape[0] == 2 && r->shape[1] == 3);
  CHECK(pt_tensor_get_flat(r, 2) == 3 && pt_tensor_get_flat(r, 3) == -1);
  pt_tensor_release(r);
  CHECK(pt_where(ctx, a, a, b, &r) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "where: condition must be a bool tensor, got int64") == 0);
  pt_tensor *m = make(ctx, PT_BOOL, 1, (int64_t[]){3}, (double[]){0, 1, 0});
  CHECK(pt_masked_fill(ctx, a, m, 7, &r) == PT_OK);
  CHECK(r->dtype == PT_INT64 && pt_tensor_get_flat(r, 1) == 7 && pt_tensor_get_flat(r, 2) == 3);
  pt_tensor_release(r);
  /* a larger mask broadcasts a (torch's masked_fill): {3} and {2,1} give {2,3}; in place it cannot */
  CHECK(pt_masked_fill(ctx, a, cond, 7, &r) == PT_OK);
  CHECK(r->ndim == 2 && r->shape[0] == 2 && r->shape[1] == 3);
  pt_tensor_release(r);
  CHECK(pt_masked_fill_(ctx, a, cond, 7) == PT_ESHAPE);
  CHECK(strcmp(pt_errmsg(ctx), "masked_fill_: mask of shape {2,1} cannot be broadcast to shape {3}") == 0);
  pt_tensor_release(m);
  pt_tensor_release(cond);
  pt_tensor_release(a);
  pt_tensor_release(b);
}

static void test_large_strided(pt_ctx *ctx) {
  /* a transposed 64x48 operand goes through the strided path and matches element access */
  int64_t s[2] = {48, 64};
  pt_tensor *a = NULL, *at = NULL, *b = NULL, *r = NULL;
  CHECK(pt_tensor_empty(ctx, PT_FLOAT32, 2, s, &a) == PT_OK);
  CHECK(pt_tensor_empty(ctx, PT_FLOAT32, 2, (int64_t[]){64, 48}, &b) == PT_OK);
  for (int i = 0; i < 48 * 64; i++) {
    pt_tensor_set_flat(a, i, i);
    pt_tensor_set_flat(b, i, 2 * i);
  }
  CHECK(pt_transpose_raw(ctx, a, 0, 1, &at) == PT_OK);
  CHECK(pt_sub(ctx, b, at, &r) == PT_OK);
  int bad = 0;
  for (int64_t i = 0; i < 64; i++)
    for (int64_t j = 0; j < 48; j++)
      if (pt_tensor_get(r, (int64_t[]){i, j}) != 2.0 * (i * 48 + j) - (double)(j * 64 + i)) bad++;
  CHECK(bad == 0);
  pt_tensor_release(r);
  pt_tensor_release(at);
  pt_tensor_release(a);
  pt_tensor_release(b);
}

/* remainder / fmod / floor_divide on integers: a zero divisor is a status, never a trap; the most
 * negative value by -1 gives 0 and itself; erfinv inverts erf; lerp's weight tensor */
static void test_more_math(pt_ctx *ctx) {
  int64_t s3[1] = {3}, s2[1] = {2};
  pt_tensor *a = make(ctx, PT_INT64, 1, s3, (double[]){-9223372036854775808.0, 7, -7});
  pt_tensor *z = make(ctx, PT_INT64, 1, s3, (double[]){-1, 0, 2});
  pt_tensor *m1 = make(ctx, PT_INT64, 1, s3, (double[]){-1, -1, 2});
  pt_tensor *r = NULL;
  CHECK(pt_remainder(ctx, a, z, &r) == PT_EARG && r == NULL);
  CHECK(strcmp(pt_errmsg(ctx), "remainder: integer division by zero (a divisor is 0; a float dtype "
                               "gives inf or nan instead)") == 0);
  CHECK(pt_floor_divide(ctx, a, z, &r) == PT_EARG && r == NULL);
  CHECK(pt_binary_scalar(ctx, PT_BIN_FMOD, a, 0, true, false, &r) == PT_EARG && r == NULL);
  CHECK(pt_binary_scalar_(ctx, PT_BIN_REMAINDER, a, 0, true) == PT_EARG);
  CHECK(strncmp(pt_errmsg(ctx), "remainder_: integer division by zero", 36) == 0);
  CHECK(pt_tensor_get_flat(a, 1) == 7);
  CHECK(pt_remainder(ctx, a, m1, &r) == PT_OK);
  CHECK(r->dtype == PT_INT64 && pt_tensor_get_flat(r, 0) == 0 && pt_tensor_get_flat(r, 1) == 0 &&
        pt_tensor_get_flat(r, 2) == 1);
  pt_tensor_release(r);
  CHECK(pt_floor_divide(ctx, a, m1, &r) == PT_OK);
  CHECK(pt_tensor_get_flat(r, 0) == -9223372036854775808.0 && pt_tensor_get_flat(r, 1) == -7 &&
        pt_tensor_get_flat(r, 2) == -4);
  pt_tensor_release(r);
  CHECK(pt_fmod(ctx, a, m1, &r) == PT_OK);
  CHECK(pt_tensor_get_flat(r, 0) == 0 && pt_tensor_get_flat(r, 2) == -1);
  pt_tensor_release(r);

  /* erfinv(erf(x)) == x over [-5.5, 5.5] */
  int64_t sn[1] = {221};
  double xs[221];
  for (int i = 0; i < 221; i++) xs[i] = -5.5 + 0.05 * i;
  pt_tensor *x = make(ctx, PT_FLOAT64, 1, sn, xs), *e = NULL, *back = NULL;
  CHECK(pt_erf(ctx, x, &e) == PT_OK && pt_erfinv(ctx, e, &back) == PT_OK);
  for (int i = 0; i < 221; i++) {
    double want = xs[i], got = pt_tensor_get_flat(back, i);
    /* erf loses x where it rounds to +-1 or near 0 only through its own rounding: compare with
     * the conditioning of erf, |erf(x)| eps / erf'(x) */
    double tol = 4e-16 * (fabs(pt_tensor_get_flat(e, i)) + 1e-300) / (M_2_SQRTPI * exp(-want * want));
    if (fabs(pt_tensor_get_flat(e, i)) == 1.0) continue;
    CHECK_NEAR(got, want, tol + 1e-15 * fabs(want));
  }
  pt_tensor_release(x);
  pt_tensor_release(e);
  pt_tensor_release(back);

  pt_tensor *lo = make(ctx, PT_FLOAT32, 1, s2, (double[]){0, 10});
  pt_tensor *hi = make(ctx, PT_FLOAT32, 1, s2, (double[]){4, 20});
  pt_tensor *w = make(ctx, PT_FLOAT64, 1, s2, (double[]){0.25, 1});
  CHECK(pt_lerp(ctx, lo, hi, w, 0, &r) == PT_OK);
  CHECK(r->dtype == PT_FLOAT64 && r->refcount == 1 && pt_tensor_get_flat(r, 0) == 1 &&
        pt_tensor_get_flat(r, 1) == 20);
  pt_tensor_release(r);
  CHECK(pt_lerp(ctx, lo, hi, NULL, 0.5, &r) == PT_OK);
  CHECK(r->dtype == PT_FLOAT32 && pt_tensor_get_flat(r, 0) == 2 && pt_tensor_get_flat(r, 1) == 15);
  pt_tensor_release(r);
  r = NULL;
  CHECK(pt_lerp(ctx, a, a, NULL, 0.5, &r) == PT_EARG && r == NULL);
  CHECK(pt_unary_(ctx, PT_UN_FRAC, a) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "frac_: not supported for int64 tensors") == 0);
  pt_tensor_release(lo);
  pt_tensor_release(hi);
  pt_tensor_release(w);
  pt_tensor_release(a);
  pt_tensor_release(z);
  pt_tensor_release(m1);
}

int main(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 42);
  test_broadcast_add(&ctx);
  test_promotion(&ctx);
  test_inplace(&ctx);
  test_gradients(&ctx);
  test_where_mask(&ctx);
  test_large_strided(&ctx);
  test_more_math(&ctx);
  return TEST_SUMMARY();
}
