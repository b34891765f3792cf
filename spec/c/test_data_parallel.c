/* lib/data_parallel: linking replica graphs into the caller's graph. Replicas are built in this
 * thread here (the Lua specs run them on dispatcher workers); one backward through the gathered
 * or per-device outputs must reach the shared leaf in every replica, in parallel. */
#include <string.h>

#include "autograd.h"
#include "data_parallel.h"
#include "ops_elementwise.h"
#include "ops_reduce.h"
#include "ops_shape.h"
#include "tensor.h"
#include "testing.h"

static pt_tensor *filled(pt_ctx *ctx, int ndim, const int64_t *shape, double base) {
  pt_tensor *t = NULL;
  pt_tensor_empty(ctx, PT_FLOAT64, ndim, shape, &t);
  for (int64_t i = 0; i < pt_tensor_numel(t); i++) pt_tensor_set_flat(t, i, base + (double)i);
  return t;
}

/* y_i = x[rows of i] * w for two replicas: rows 0..2 and 3 */
static void replicas(pt_ctx *ctx, pt_tensor *x, pt_tensor *w, pt_tensor **y) {
  pt_tensor *a = NULL, *b = NULL;
  CHECK(pt_narrow_raw(ctx, x, 0, 0, 3, &a) == PT_OK);
  CHECK(pt_narrow_raw(ctx, x, 0, 3, 1, &b) == PT_OK);
  CHECK(pt_mul(ctx, a, w, &y[0]) == PT_OK);
  CHECK(pt_mul(ctx, b, w, &y[1]) == PT_OK);
  pt_tensor_release(a);
  pt_tensor_release(b);
}

static void test_gather_backward(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  pt_tensor *x = filled(&ctx, 2, (int64_t[]){4, 3}, 1), *w = filled(&ctx, 1, (int64_t[]){3}, 1);
  w->requires_grad = true;
  pt_tensor *y[2];
  replicas(&ctx, x, w, y);
  const char *devs[] = {"cpu:1", "cpu:2"};
  pt_dp_call *call = NULL;
  CHECK(pt_dp_call_new(&ctx, 2, y, devs, 0, NULL, &call) == PT_OK);
  pt_tensor *g = NULL, *loss = NULL;
  CHECK(pt_dp_gather(&ctx, call, y, 0, "output 1", &g) == PT_OK);
  pt_dp_call_release(call);
  CHECK(g->ndim == 2 && g->shape[0] == 4 && g->shape[1] == 3);
  CHECK(g->grad_fn && strcmp(g->grad_fn->name, "DataParallelGatherBackward") == 0);
  /* gathered values: x * w */
  CHECK_NEAR(pt_tensor_get_flat(g, 11), 12.0 * 3.0, 1e-12);
  CHECK(pt_sum(&ctx, g, PT_DIM_ALL, false, &loss) == PT_OK);
  CHECK(pt_backward(&ctx, loss, NULL, false) == PT_OK);
  /* d sum(x * w) / dw = column sums of x: {22, 26, 30}, from both replicas */
  CHECK(w->grad != NULL);
  if (w->grad) {
    CHECK_NEAR(pt_tensor_get_flat(w->grad, 0), 1 + 4 + 7 + 10, 1e-12);
    CHECK_NEAR(pt_tensor_get_flat(w->grad, 2), 3 + 6 + 9 + 12, 1e-12);
  }
  /* a second backward through the released graph fails */
  CHECK(pt_backward(&ctx, loss, NULL, false) != PT_OK);
  pt_tensor_release(loss);
  pt_tensor_release(g);
  pt_tensor_release(y[0]);
  pt_tensor_release(y[1]);
  pt_tensor_release(x);
  pt_tensor_release(w);
}

static void test_pieces_backward(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  pt_tensor *x = filled(&ctx, 2, (int64_t[]){4, 3}, 1), *w = filled(&ctx, 1, (int64_t[]){3}, 1);
  w->requires_grad = true;
  pt_tensor *y[2], *p[2] = {NULL, NULL}, *loss = NULL;
  replicas(&ctx, x, w, y);
  const char *devs[] = {"cpu:1", "cpu:2"};
  pt_dp_call *call = NULL;
  CHECK(pt_dp_call_new(&ctx, 2, y, devs, 0, NULL, &call) == PT_OK);
  CHECK(pt_dp_pieces(&ctx, call, y, p) == PT_OK);
  pt_dp_call_release(call);
  CHECK(p[1]->shape[0] == 1 && strcmp(p[1]->grad_fn->name, "DataParallelPieceBackward") == 0);
  /* only replica 2's piece is used: the gradient is row 3 of x */
  CHECK(pt_sum(&ctx, p[1], PT_DIM_ALL, false, &loss) == PT_OK);
  CHECK(pt_backward(&ctx, loss, NULL, false) == PT_OK);
  if (w->grad) {
    CHECK_NEAR(pt_tensor_get_flat(w->grad, 0), 10, 1e-12);
    CHECK_NEAR(pt_tensor_get_flat(w->grad, 1), 11, 1e-12);
  }
  CHECK(w->grad != NULL);
  pt_tensor_release(loss);
  for (int i = 0; i < 2; i++) {
    pt_tensor_release(p[i]);
    pt_tensor_release(y[i]);
  }
  pt_tensor_release(x);
  pt_tensor_release(w);
}

static void test_gather_errors(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  pt_tensor *a = filled(&ctx, 2, (int64_t[]){2, 3}, 0), *b = filled(&ctx, 2, (int64_t[]){2, 2}, 0);
  pt_tensor *pieces[2] = {a, b}, *out = NULL;
  const char *devs[] = {"cpu:1", "cpu:2"};
  pt_tensor *roots[2] = {NULL, NULL};
  pt_dp_call *call = NULL;
  CHECK(pt_dp_call_new(&ctx, 2, roots, devs, 0, NULL, &call) == PT_OK);
  CHECK(pt_dp_gather(&ctx, call, pieces, 0, "output 1", &out) == PT_ESHAPE);
  CHECK(strcmp(ctx.err, "DataParallel: cannot gather output 1 along dimension 1: replica 1 gave "
                        "shape {2,3} but replica 2 gave {2,2}") == 0);
  CHECK(pt_dp_gather(&ctx, call, pieces, 2, "output 2", &out) == PT_ESHAPE);
  CHECK(strcmp(ctx.err, "DataParallel: cannot gather output 2 of shape {2,3} along dimension 3") == 0);
  /* same shapes along dim 2 (0-based 1) work; no grad needed, so no node */
  pieces[1] = a;
  CHECK(pt_dp_gather(&ctx, call, pieces, 1, "output 3", &out) == PT_OK);
  CHECK(out && out->shape[1] == 6 && out->grad_fn == NULL);
  pt_dp_call_release(call);
  pt_tensor_release(out);
  pt_tensor_release(a);
  pt_tensor_release(b);
}

int main(void) {
  test_gather_backward();
  test_pieces_backward();
  test_gather_errors();
  return TEST_SUMMARY();
}
