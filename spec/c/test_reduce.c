/* lib/ reductions and matrix products: values, shapes, 0-based indices, errors, a backward. */
#include <math.h>
#include <string.h>

#include "autograd.h"
#include "ops_linalg.h"
#include "ops_reduce.h"
#include "tensor.h"
#include "testing.h"

static pt_tensor *make(pt_ctx *ctx, pt_dtype dt, int ndim, const int64_t *shape, const double *v) {
  pt_tensor *t = NULL;
  pt_tensor_empty(ctx, dt, ndim, shape, &t);
  for (int64_t i = 0; i < pt_tensor_numel(t); i++) pt_tensor_set_flat(t, i, v[i]);
  return t;
}

static void test_sum_mean(pt_ctx *ctx) {
  const double v[6] = {1, 2, 3, 4, 5, 6};
  pt_tensor *x = make(ctx, PT_FLOAT32, 2, (int64_t[]){2, 3}, v), *r = NULL;
  CHECK(pt_sum(ctx, x, PT_DIM_ALL, false, &r) == PT_OK);
  CHECK(r->ndim == 0 && pt_tensor_get_flat(r, 0) == 21);
  pt_tensor_release(r);
  CHECK(pt_sum(ctx, x, 0, false, &r) == PT_OK); /* column sums: the strided lanes */
  CHECK(r->ndim == 1 && r->shape[0] == 3);
  CHECK(pt_tensor_get_flat(r, 0) == 5 && pt_tensor_get_flat(r, 2) == 9);
  pt_tensor_release(r);
  CHECK(pt_mean(ctx, x, 1, true, &r) == PT_OK);
  CHECK(r->ndim == 2 && r->shape[0] == 2 && r->shape[1] == 1);
  CHECK_NEAR(pt_tensor_get_flat(r, 1), 5.0, 1e-6);
  pt_tensor_release(r);
  CHECK(pt_sum(ctx, x, 2, false, &r) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "sum: dimension 3 out of range (tensor has 2 dimensions)") == 0);
  pt_tensor_release(x);

  pt_tensor *xi = make(ctx, PT_INT32, 1, (int64_t[]){3}, (double[]){4, 5, 6});
  CHECK(pt_sum(ctx, xi, PT_DIM_ALL, false, &r) == PT_OK);
  CHECK(r->dtype == PT_INT64 && pt_tensor_get_flat(r, 0) == 15);
  pt_tensor_release(r);
  CHECK(pt_mean(ctx, xi, PT_DIM_ALL, false, &r) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "mean: expected a floating point tensor, got int32") == 0);
  pt_tensor_release(xi);
}

static void test_max_indices(pt_ctx *ctx) {
  const double v[6] = {1, 7, 3, 9, 5, 9};
  pt_tensor *x = make(ctx, PT_FLOAT64, 2, (int64_t[]){2, 3}, v), *val = NULL, *ix = NULL;
  CHECK(pt_max(ctx, x, 1, false, &val, &ix) == PT_OK);
  CHECK(ix->dtype == PT_INT64);
  CHECK(pt_tensor_get_flat(val, 0) == 7 && pt_tensor_get_flat(val, 1) == 9);
  CHECK(pt_tensor_get_flat(ix, 0) == 1 && pt_tensor_get_flat(ix, 1) == 0); /* 0-based, first tie */
  pt_tensor_release(val);
  pt_tensor_release(ix);
  CHECK(pt_argmin(ctx, x, PT_DIM_ALL, false, &ix) == PT_OK);
  CHECK(ix->ndim == 0 && pt_tensor_get_flat(ix, 0) == 0);
  pt_tensor_release(ix);
  pt_tensor *e;
  pt_tensor_empty(ctx, PT_FLOAT32, 1, (int64_t[]){0}, &e);
  CHECK(pt_max(ctx, e, PT_DIM_ALL, false, &val, NULL) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "max: cannot reduce over an empty tensor (shape {0})") == 0);
  pt_tensor_release(e);
  pt_tensor_release(x);
}

static void test_softmax_and_backward(pt_ctx *ctx) {
  pt_tensor *x = make(ctx, PT_FLOAT64, 1, (int64_t[]){3}, (double[]){1000, 1001, 1002}), *y, *l;
  x->requires_grad = true;
  CHECK(pt_softmax(ctx, x, -1, &y) == PT_OK);
  double z = 1 + exp(1) + exp(2);
  CHECK_NEAR(pt_tensor_get_flat(y, 0), 1 / z, 1e-12);
  CHECK_NEAR(pt_tensor_get_flat(y, 2), exp(2) / z, 1e-12);
  CHECK(y->grad_fn != NULL && strcmp(y->grad_fn->name, "SoftmaxBackward") == 0);
  /* sum of softmax is constant: its gradient vanishes */
  CHECK(pt_sum(ctx, y, PT_DIM_ALL, false, &l) == PT_OK);
  CHECK(pt_backward(ctx, l, NULL, false) == PT_OK);
  CHECK(x->grad != NULL);
  for (int i = 0; i < 3; i++) CHECK_NEAR(pt_tensor_get_flat(x->grad, i), 0.0, 1e-12);
  pt_tensor_release(l);
  pt_tensor_release(y);
  CHECK(pt_logsumexp(ctx, x, 0, false, &l) == PT_OK);
  CHECK_NEAR(pt_tensor_get_flat(l, 0), 1002 + log(z / exp(2)), 1e-9);
  pt_tensor_release(l);
  CHECK(pt_softmax(ctx, x, 1, &y) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "softmax: dimension 2 out of range (tensor has 1 dimensions)") == 0);
  pt_tensor_release(x);
}

static void test_matmul(pt_ctx *ctx) {
  pt_tensor *a = make(ctx, PT_FLOAT32, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6});
  pt_tensor *b = make(ctx, PT_FLOAT32, 2, (int64_t[]){3, 2}, (double[]){1, 0, 0, 1, 1, 1});
  pt_tensor *c = NULL, *at = NULL;
  CHECK(pt_matmul(ctx, a, b, &c) == PT_OK);
  CHECK(c->ndim == 2 && c->shape[0] == 2 && c->shape[1] == 2);
  CHECK(pt_tensor_get_flat(c, 0) == 4 && pt_tensor_get_flat(c, 1) == 5);
  CHECK(pt_tensor_get_flat(c, 2) == 10 && pt_tensor_get_flat(c, 3) == 11);
  pt_tensor_release(c);
  /* a transposed view goes to BLAS as CblasTrans: same numbers as b^T b computed by hand */
  CHECK(pt_transpose_raw(ctx, b, 0, 1, &at) == PT_OK);
  CHECK(pt_mm(ctx, at, b, &c) == PT_OK);
  CHECK(pt_tensor_get_flat(c, 0) == 2 && pt_tensor_get_flat(c, 1) == 1);
  CHECK(pt_tensor_get_flat(c, 2) == 1 && pt_tensor_get_flat(c, 3) == 2);
  pt_tensor_release(c);
  CHECK(pt_mm(ctx, a, a, &c) == PT_ESHAPE);
  CHECK(strcmp(pt_errmsg(ctx), "mm: shapes {2,3} and {2,3} cannot be multiplied") == 0);
  pt_tensor *v = make(ctx, PT_FLOAT32, 1, (int64_t[]){3}, (double[]){1, 1, 1});
  CHECK(pt_matmul(ctx, a, v, &c) == PT_OK);
  CHECK(c->ndim == 1 && c->shape[0] == 2 && pt_tensor_get_flat(c, 1) == 15);
  pt_tensor_release(c);
  CHECK(pt_dot(ctx, v, v, &c) == PT_OK);
  CHECK(c->ndim == 0 && pt_tensor_get_flat(c, 0) == 3);
  pt_tensor_release(c);
  pt_tensor *ai = NULL;
  pt_tensor_to_dtype_raw(ctx, a, PT_INT64, &ai);
  CHECK(pt_matmul(ctx, ai, ai, &c) == PT_EARG);
  CHECK(strstr(pt_errmsg(ctx), "matmul: expected float32 or float64 tensors, got int64 and int64") != NULL);
  pt_tensor_release(ai);
  pt_tensor_release(v);
  pt_tensor_release(at);
  pt_tensor_release(a);
  pt_tensor_release(b);
}

/* lists of dims, nansum/nanmean, count_nonzero: values, shapes, 1-based messages */
static void test_dims_and_nan(pt_ctx *ctx) {
  double v[24];
  for (int i = 0; i < 24; i++) v[i] = i;
  pt_tensor *x = make(ctx, PT_FLOAT64, 3, (int64_t[]){2, 3, 4}, v), *r = NULL;
  CHECK(pt_sum_dims(ctx, x, 2, (int[]){0, 2}, false, &r) == PT_OK); /* not adjacent */
  CHECK(r->ndim == 1 && r->shape[0] == 3);
  CHECK(pt_tensor_get_flat(r, 0) == 60 && pt_tensor_get_flat(r, 2) == 124);
  pt_tensor_release(r);
  CHECK(pt_mean_dims(ctx, x, 2, (int[]){2, 1}, true, &r) == PT_OK); /* adjacent, keepdim */
  CHECK(r->ndim == 3 && r->shape[0] == 2 && r->shape[1] == 1 && r->shape[2] == 1);
  CHECK_NEAR(pt_tensor_get_flat(r, 1), 17.5, 1e-12);
  pt_tensor_release(r);
  CHECK(pt_var_dims(ctx, x, 2, (int[]){0, 2}, false, false, &r) == PT_OK); /* one pass over the group */
  CHECK_NEAR(pt_tensor_get_flat(r, 0), 37.25, 1e-12); /* {0..3, 12..15}: var with n = 8 */
  pt_tensor_release(r);
  CHECK(pt_sum_dims(ctx, x, 0, NULL, false, &r) == PT_OK); /* no dims: every dim */
  CHECK(r->ndim == 0 && pt_tensor_get_flat(r, 0) == 276);
  pt_tensor_release(r);
  CHECK(pt_std_dims(ctx, x, 2, (int[]){1, 1}, true, false, &r) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "std: dimension 2 appears more than once in the list of dimensions") == 0);
  CHECK(pt_logsumexp_dims(ctx, x, 2, (int[]){0, 3}, false, &r) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "logsumexp: dimension 4 out of range (tensor has 3 dimensions)") == 0);
  pt_tensor_release(x);

  pt_tensor *n = make(ctx, PT_FLOAT32, 2, (int64_t[]){2, 2}, (double[]){NAN, 1, 2, 4});
  CHECK(pt_nansum(ctx, n, PT_DIM_ALL, false, &r) == PT_OK);
  CHECK(pt_tensor_get_flat(r, 0) == 7);
  pt_tensor_release(r);
  CHECK(pt_nanmean(ctx, n, 0, false, &r) == PT_OK);
  CHECK(pt_tensor_get_flat(r, 0) == 2 && pt_tensor_get_flat(r, 1) == 2.5);
  pt_tensor_release(r);
  CHECK(pt_count_nonzero(ctx, n, 1, (int[]){1}, &r) == PT_OK);
  CHECK(r->dtype == PT_INT64 && pt_tensor_get_flat(r, 0) == 2 && pt_tensor_get_flat(r, 1) == 2);
  pt_tensor_release(r);
  pt_tensor_release(n);
}

int main(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  test_sum_mean(&ctx);
  test_max_indices(&ctx);
  test_softmax_and_backward(&ctx);
  test_matmul(&ctx);
  test_dims_and_nan(&ctx);
  return TEST_SUMMARY();
}
