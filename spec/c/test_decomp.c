/* lib/ops_decomp.c without Lua: LAPACK results, LAPACK info codes as messages, a backward, and
 * no reference cycle between a float64 factorisation's outputs and their nodes. */
#include <math.h>
#include <string.h>

#include "autograd.h"
#include "ops_decomp.h"
#include "tensor.h"
#include "testing.h"

static pt_tensor *make(pt_ctx *ctx, int ndim, const int64_t *shape, const double *v) {
  pt_tensor *t = NULL;
  pt_tensor_empty(ctx, PT_FLOAT64, ndim, shape, &t);
  for (int64_t i = 0; i < pt_tensor_numel(t); i++) pt_tensor_set_flat(t, i, v[i]);
  return t;
}

static void test_solve_det(pt_ctx *ctx) {
  const double n3[9] = {1, 2, 3, 0, 4, 5, 1, 0, 6};
  pt_tensor *A = make(ctx, 2, (int64_t[]){3, 3}, n3), *b = make(ctx, 1, (int64_t[]){3}, (double[]){1, 2, 3});
  pt_tensor *x = NULL, *d = NULL;
  CHECK(pt_linalg_solve(ctx, A, b, true, &x) == PT_OK);
  CHECK(x->ndim == 1 && x->shape[0] == 3);
  CHECK_NEAR(pt_tensor_get_flat(x, 0), -6.0 / 22, 1e-12);
  CHECK_NEAR(pt_tensor_get_flat(x, 2), 12.0 / 22, 1e-12);
  CHECK(pt_linalg_det(ctx, "linalg.det", A, &d) == PT_OK);
  CHECK_NEAR(pt_tensor_get_flat(d, 0), 22, 1e-12);
  pt_tensor_release(x);
  pt_tensor_release(d);
  /* a singular second matrix: LAPACK's info becomes the message */
  const double two[8] = {1, 0, 0, 1, 1, 2, 2, 4};
  pt_tensor *S = make(ctx, 3, (int64_t[]){2, 2, 2}, two), *bb = make(ctx, 2, (int64_t[]){2, 2}, (double[]){1, 1, 1, 1});
  CHECK(pt_linalg_solve(ctx, S, bb, true, &x) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "linalg.solve: the matrix is singular (U[2,2] is zero), batch element 2") == 0);
  CHECK(pt_linalg_inv(ctx, "linalg.inv", S, &x) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "linalg.inv: the matrix is singular (U[2,2] is zero), batch element 2") == 0);
  CHECK(pt_linalg_det(ctx, "linalg.det", S, &d) == PT_OK);
  CHECK(pt_tensor_get_flat(d, 0) == 1 && pt_tensor_get_flat(d, 1) == 0);
  pt_tensor_release(d);
  CHECK(pt_linalg_cholesky(ctx, "linalg.cholesky", S, false, &x) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "linalg.cholesky: the matrix is not positive-definite (the leading minor of "
                               "order 2 is not positive-definite), batch element 2") == 0);
  pt_tensor_release(S);
  pt_tensor_release(bb);
  pt_tensor_release(A);
  pt_tensor_release(b);
}

static void test_qr_backward(pt_ctx *ctx) {
  const double v[6] = {1, 2, 0, 1, 2, 0};
  pt_tensor *A = make(ctx, 2, (int64_t[]){3, 2}, v), *Q = NULL, *R = NULL, *g = NULL;
  A->requires_grad = true;
  CHECK(pt_linalg_qr(ctx, "linalg.qr", A, PT_QR_REDUCED, &Q, &R) == PT_OK);
  CHECK(Q->shape[0] == 3 && Q->shape[1] == 2 && R->shape[0] == 2 && R->shape[1] == 2);
  CHECK(Q->grad_fn && R->grad_fn);
  /* |R[0,0]| is the norm of A's first column */
  CHECK_NEAR(fabs(pt_tensor_get_flat(R, 0)), sqrt(5.0), 1e-12);
  /* d|R00|/dA[:,0] = A[:,0] / |A[:,0]|: the gradient of R00 times its sign */
  pt_tensor_zeros(ctx, PT_FLOAT64, 2, (int64_t[]){2, 2}, &g);
  pt_tensor_set_flat(g, 0, pt_tensor_get_flat(R, 0) < 0 ? -1 : 1);
  CHECK(pt_backward(ctx, R, g, false) == PT_OK);
  CHECK(A->grad != NULL);
  CHECK_NEAR(pt_tensor_get_flat(A->grad, 0), 1 / sqrt(5.0), 1e-12);
  CHECK_NEAR(pt_tensor_get_flat(A->grad, 4), 2 / sqrt(5.0), 1e-12);
  CHECK_NEAR(pt_tensor_get_flat(A->grad, 1), 0, 1e-12);
  /* the outputs' nodes save aliases, not the outputs: releasing them frees everything (ASan) */
  pt_tensor_release(Q);
  pt_tensor_release(R);
  pt_tensor_release(g);
  pt_tensor_release(A);
}

static void test_lstsq_shapes(pt_ctx *ctx) {
  const double v[6] = {1, 0, 0, 1, 1, 1};
  pt_tensor *A = make(ctx, 2, (int64_t[]){3, 2}, v), *B = make(ctx, 2, (int64_t[]){2, 1}, (double[]){1, 2});
  pt_tensor *x = NULL, *res = NULL, *rk = NULL, *sv = NULL;
  CHECK(pt_linalg_lstsq(ctx, A, B, -1, PT_LSTSQ_GELSD, &x, &res, &rk, &sv) == PT_ESHAPE);
  CHECK(strcmp(pt_errmsg(ctx), "linalg.lstsq: A of shape {3,2} and B of shape {2,1} need the same number "
                               "of rows (3 and 2)") == 0);
  pt_tensor_release(B);
  B = make(ctx, 2, (int64_t[]){3, 1}, (double[]){1, 2, 4});
  CHECK(pt_linalg_lstsq(ctx, A, B, -1, PT_LSTSQ_GELSD, &x, &res, &rk, &sv) == PT_OK);
  /* normal equations: [[2,1],[1,2]] x = [5,6] */
  CHECK_NEAR(pt_tensor_get_flat(x, 0), 4.0 / 3, 1e-12);
  CHECK_NEAR(pt_tensor_get_flat(x, 1), 7.0 / 3, 1e-12);
  CHECK(res->ndim == 1 && res->shape[0] == 1);
  CHECK_NEAR(pt_tensor_get_flat(res, 0), 1.0 / 3, 1e-12);
  CHECK(rk->dtype == PT_INT64 && pt_tensor_get_flat(rk, 0) == 2);
  CHECK(sv->shape[0] == 2);
  pt_tensor_release(x);
  pt_tensor_release(res);
  pt_tensor_release(rk);
  pt_tensor_release(sv);
  pt_tensor_release(A);
  pt_tensor_release(B);
}

int main(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  test_solve_det(&ctx);
  test_qr_backward(&ctx);
  test_lstsq_shapes(&ctx);
  return TEST_SUMMARY();
}
