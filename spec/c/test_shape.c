/* lib/ shape and index ops: view strides, autograd through views and cat trees, error messages. */
#include <string.h>

#include "autograd.h"
#include "ops_index.h"
#include "ops_shape.h"
#include "tensor.h"
#include "testing.h"

static pt_tensor *arange(pt_ctx *ctx, pt_dtype dt, int ndim, const int64_t *shape) {
  pt_tensor *t = NULL;
  pt_tensor_empty(ctx, dt, ndim, shape, &t);
  for (int64_t i = 0; i < pt_tensor_numel(t); i++) pt_tensor_set_flat(t, i, (double)i);
  return t;
}

static void test_view_strides(void) {
  int64_t st[PT_MAX_DIMS];
  /* {4,6} narrowed to rows 1..2: strides {6,1} -> view as {12} works */
  CHECK(pt_view_strides(2, (int64_t[]){2, 6}, (int64_t[]){6, 1}, 1, (int64_t[]){12}, st));
  CHECK(st[0] == 1);
  /* transposed {3,4} (strides {1,3}) cannot be flattened... */
  CHECK(!pt_view_strides(2, (int64_t[]){4, 3}, (int64_t[]){1, 4}, 1, (int64_t[]){12}, st));
  /* ...but a dim can be split: {4,3} strides {1,4} as {2,2,3} */
  CHECK(pt_view_strides(2, (int64_t[]){4, 3}, (int64_t[]){1, 4}, 3, (int64_t[]){2, 2, 3}, st));
  CHECK(st[0] == 2 && st[1] == 1 && st[2] == 4);
  /* size-1 dims are free */
  CHECK(pt_view_strides(2, (int64_t[]){3, 1}, (int64_t[]){1, 7}, 3, (int64_t[]){1, 3, 1}, st));
  CHECK(st[1] == 1);
  /* a narrowed column cannot merge with its rows */
  CHECK(!pt_view_strides(2, (int64_t[]){4, 2}, (int64_t[]){6, 1}, 1, (int64_t[]){8}, st));
}

static void test_views_share_and_backward(pt_ctx *ctx) {
  pt_tensor *x = arange(ctx, PT_FLOAT64, 2, (int64_t[]){3, 4}), *v = NULL, *n = NULL;
  x->requires_grad = true;
  CHECK(pt_transpose(ctx, x, 0, 1, &v) == PT_OK);
  CHECK(v->storage == x->storage && v->grad_fn && strcmp(v->grad_fn->name, "TransposeBackward") == 0);
  CHECK(pt_narrow(ctx, v, 0, 1, 2, &n) == PT_OK); /* columns 2..3 of x, as rows */
  pt_tensor *g = NULL;
  pt_tensor_zeros(ctx, PT_FLOAT64, 2, (int64_t[]){2, 3}, &g);
  pt_tensor_fill(ctx, g, 1.0);
  CHECK(pt_backward(ctx, n, g, false) == PT_OK);
  CHECK(x->grad != NULL);
  double expect[12] = {0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0};
  for (int i = 0; i < 12 && x->grad; i++) CHECK(pt_tensor_get_flat(x->grad, i) == expect[i]);
  pt_tensor_release(g);
  pt_tensor_release(n);
  pt_tensor_release(v);
  pt_tensor_release(x);
}

static void test_cat_tree(pt_ctx *ctx) {
  /* 11 inputs: more than a node holds, so cat records a tree over views of its output */
  enum { N = 11 };
  pt_tensor *xs[N], *out = NULL;
  for (int k = 0; k < N; k++) {
    xs[k] = arange(ctx, PT_FLOAT64, 2, (int64_t[]){2, k % 3 + 1});
    xs[k]->requires_grad = k % 2 == 0;
  }
  CHECK(pt_cat(ctx, N, xs, 1, &out) == PT_OK);
  int64_t total = 0;
  for (int k = 0; k < N; k++) total += k % 3 + 1;
  CHECK(out->ndim == 2 && out->shape[0] == 2 && out->shape[1] == total);
  CHECK(out->grad_fn && out->grad_fn->n_inputs <= PT_NODE_MAX_INPUTS);
  /* the gradient of every element is its flat position, so each input gets its own slice */
  pt_tensor *g = arange(ctx, PT_FLOAT64, 2, out->shape);
  CHECK(pt_backward(ctx, out, g, false) == PT_OK);
  int64_t off = 0;
  for (int k = 0; k < N; k++) {
    int64_t w = k % 3 + 1;
    if (k % 2 == 0) {
      CHECK(xs[k]->grad != NULL);
      if (xs[k]->grad)
        for (int64_t r = 0; r < 2; r++)
          for (int64_t c = 0; c < w; c++)
            CHECK(pt_tensor_get(xs[k]->grad, (int64_t[]){r, c}) == (double)(r * total + off + c));
    } else {
      CHECK(xs[k]->grad == NULL);
    }
    off += w;
  }
  pt_tensor_release(g);
  pt_tensor_release(out);
  for (int k = 0; k < N; k++) pt_tensor_release(xs[k]);
}

static void test_split_chunk(pt_ctx *ctx) {
  pt_tensor *t = arange(ctx, PT_FLOAT32, 1, (int64_t[]){7}), *outs[4] = {NULL};
  CHECK(pt_split_count(7, 3) == 3);
  CHECK(pt_split(ctx, t, 3, 0, outs) == PT_OK);
  CHECK(outs[2]->shape[0] == 1 && pt_tensor_get_flat(outs[2], 0) == 6);
  for (int i = 0; i < 3; i++) pt_tensor_release(outs[i]);
  int n = 0;
  CHECK(pt_chunk(ctx, t, 4, 0, &n, outs) == PT_OK);
  CHECK(n == 4 && outs[0]->shape[0] == 2 && outs[3]->shape[0] == 1);
  for (int i = 0; i < n; i++) pt_tensor_release(outs[i]);
  CHECK(pt_split_sizes(ctx, t, 2, (int64_t[]){3, 3}, 0, outs) == PT_ESHAPE);
  CHECK(strcmp(pt_errmsg(ctx), "split: split sizes add up to 6 but dimension 1 has size 7") == 0);
  int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 7};
  CHECK(pt_view(ctx, t, 9, nine, &outs[0]) == PT_ESHAPE);
  CHECK(strcmp(pt_errmsg(ctx), "view: tensors have at most 8 dimensions, got 9") == 0);
  pt_tensor_release(t);
}

static void test_index_errors(pt_ctx *ctx) {
  pt_tensor *t = arange(ctx, PT_FLOAT32, 2, (int64_t[]){2, 3}), *idx = NULL, *out = NULL;
  pt_tensor_empty(ctx, PT_INT64, 2, (int64_t[]){2, 1}, &idx);
  pt_tensor_set_flat(idx, 0, 3);
  pt_tensor_set_flat(idx, 1, 4);
  CHECK(pt_gather(ctx, t, 1, idx, &out) == PT_EARG);
  CHECK(out == NULL);
  CHECK(strcmp(pt_errmsg(ctx), "gather: index 4 out of range for dimension 2 of size 3") == 0);
  pt_tensor_set_flat(idx, 1, 1);
  CHECK(pt_gather(ctx, t, 1, idx, &out) == PT_OK);
  CHECK(pt_tensor_get_flat(out, 0) == 2 && pt_tensor_get_flat(out, 1) == 3);
  pt_tensor_release(out);
  out = NULL;
  /* scatter_ validates every index before writing anything */
  pt_tensor_set_flat(idx, 1, 9);
  CHECK(pt_scatter_(ctx, t, 1, idx, NULL, -1.0) == PT_EARG);
  CHECK(pt_tensor_get_flat(t, 2) == 2);
  CHECK(strcmp(pt_errmsg(ctx), "scatter_: index 9 out of range for dimension 2 of size 3") == 0);
  CHECK(pt_scatter_add(ctx, t, 1, idx, NULL, &out) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "scatter_add: src must be a tensor") == 0);
  pt_tensor *mask = NULL;
  pt_tensor_zeros(ctx, PT_BOOL, 1, (int64_t[]){3}, &mask);
  pt_tensor_set_flat(mask, 1, 1);
  CHECK(pt_masked_select(ctx, t, mask, &out) == PT_OK);
  CHECK(out->ndim == 1 && out->shape[0] == 2 && pt_tensor_get_flat(out, 1) == 4);
  pt_tensor_release(out);
  pt_tensor_release(mask);
  pt_tensor_release(idx);
  pt_tensor_release(t);
}

/* slice with a step, diagonal and unfold: strides, messages, and backwards that write (or add,
 * for overlapping windows) into zeros of the input's shape */
static void test_strided_views(pt_ctx *ctx) {
  pt_tensor *x = arange(ctx, PT_FLOAT64, 2, (int64_t[]){4, 5}), *s = NULL, *d = NULL, *u = NULL;
  x->requires_grad = true;
  CHECK(pt_slice(ctx, x, 1, 1, 2, 3, &s) == PT_OK); /* columns 2 and 5 (1-based) */
  CHECK(s->storage == x->storage && s->shape[1] == 2 && s->stride[1] == 3 && s->offset == 1);
  CHECK(pt_tensor_get_flat(s, 1) == 4 && pt_tensor_get_flat(s, 2) == 6);
  CHECK(pt_slice(ctx, x, 1, 1, 3, 2, &d) == PT_EARG && d == NULL);
  CHECK(strcmp(pt_errmsg(ctx), "slice: 3 elements from 2 with step 2 out of range for dimension 2 of size 5") == 0);
  CHECK(pt_slice(ctx, x, 0, 0, 1, 0, &d) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "slice: step must be at least 1, got 0") == 0);
  CHECK(pt_diagonal(ctx, x, 1, 0, 1, &d) == PT_OK); /* 1, 7, 13, 19 */
  CHECK(d->ndim == 1 && d->shape[0] == 4 && d->stride[0] == 6 && pt_tensor_get_flat(d, 3) == 19);
  pt_tensor_release(d);
  CHECK(pt_diagonal(ctx, x, -7, 0, 1, &d) == PT_OK && d->shape[0] == 0 && d->offset == x->offset);
  pt_tensor_release(d);
  CHECK(pt_diagonal(ctx, x, 0, 1, 1, &d) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "diagonal: dim1 and dim2 must be different dimensions, got 2 and 2") == 0);
  CHECK(pt_unfold(ctx, x, 1, 6, 1, &u) == PT_EARG && u == NULL);
  CHECK(strcmp(pt_errmsg(ctx), "unfold: size 6 is larger than dimension 2 of size 5") == 0);
  CHECK(pt_unfold(ctx, x, 1, 3, 1, &u) == PT_OK); /* {4, 3, 3}: windows overlap */
  CHECK(u->ndim == 3 && u->shape[1] == 3 && u->shape[2] == 3 && u->stride[1] == 1 && u->stride[2] == 1);
  CHECK(strcmp(u->grad_fn->name, "UnfoldBackward") == 0);
  pt_tensor *g = NULL;
  pt_tensor_zeros(ctx, PT_FLOAT64, 3, (int64_t[]){4, 3, 3}, &g);
  pt_tensor_fill(ctx, g, 1.0);
  CHECK(pt_backward(ctx, u, g, false) == PT_OK);
  /* each column is in 1, 2, 3, 2, 1 windows */
  double count[5] = {1, 2, 3, 2, 1};
  for (int i = 0; i < 20 && x->grad; i++) CHECK(pt_tensor_get_flat(x->grad, i) == count[i % 5]);
  pt_tensor_release(g);
  g = NULL;
  pt_tensor_release(x->grad);
  x->grad = NULL;
  pt_tensor_zeros(ctx, PT_FLOAT64, 2, (int64_t[]){4, 2}, &g);
  pt_tensor_fill(ctx, g, 2.0);
  CHECK(pt_backward(ctx, s, g, false) == PT_OK);
  double sgrad[5] = {0, 2, 0, 0, 2};
  for (int i = 0; i < 20 && x->grad; i++) CHECK(pt_tensor_get_flat(x->grad, i) == sgrad[i % 5]);
  pt_tensor_release(g);
  pt_tensor_release(u);
  pt_tensor_release(s);
  pt_tensor_release(x);
}

int main(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  test_view_strides();
  test_views_share_and_backward(&ctx);
  test_cat_tree(&ctx);
  test_split_chunk(&ctx);
  test_index_errors(&ctx);
  test_strided_views(&ctx);
  return TEST_SUMMARY();
}
