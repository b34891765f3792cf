/* lib/ tensor core: creation, views sharing storage, broadcasting, copies, errors. */
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "tensor.h"
#include "testing.h"

static void test_create_and_views(pt_ctx *ctx) {
  int64_t shape[2] = {3, 4};
  pt_tensor *t = NULL, *v = NULL, *tr = NULL;
  CHECK(pt_tensor_zeros(ctx, PT_FLOAT32, 2, shape, &t) == PT_OK);
  CHECK(pt_tensor_numel(t) == 12);
  CHECK(pt_tensor_is_contiguous(t));
  for (int i = 0; i < 12; i++) pt_tensor_set_flat(t, i, i);
  CHECK(pt_transpose_raw(ctx, t, 0, 1, &tr) == PT_OK);
  CHECK(tr->shape[0] == 4 && tr->shape[1] == 3);
  CHECK(!pt_tensor_is_contiguous(tr));
  CHECK(tr->storage == t->storage);
  int64_t idx[2] = {1, 2};
  CHECK(pt_tensor_get(tr, idx) == 9.0); /* t[2][1] */
  int64_t vs[1] = {-1};
  CHECK(pt_view_raw(ctx, tr, 1, vs, &v) == PT_ESHAPE);
  CHECK(strstr(pt_errmsg(ctx), "not contiguous") != NULL);
  CHECK(pt_view_raw(ctx, t, 1, vs, &v) == PT_OK);
  CHECK(v->shape[0] == 12);
  pt_tensor_release(v);
  pt_tensor_release(tr);
  pt_tensor_release(t);
}

static int external_released;
static void external_release(pt_storage *s) {
  free(s->data);
  external_released++;
}

/* pt_storage_share moves every kind of CPU storage (small, embedded in its tensor, large,
 * external) into a shared mapping in place: views keep their values, release unmaps. */
static void test_share(pt_ctx *ctx) {
  int64_t sizes[3] = {3, 5000, 0};
  for (int k = 0; k < 3; k++) {
    pt_tensor *t = NULL, *v = NULL;
    CHECK(pt_tensor_empty(ctx, PT_FLOAT64, 1, &sizes[k], &t) == PT_OK);
    for (int64_t i = 0; i < sizes[k]; i++) pt_tensor_set_flat(t, i, (double)i + 0.5);
    int64_t one[1] = {sizes[k] > 1 ? sizes[k] - 1 : 0};
    if (sizes[k] > 1) CHECK(pt_narrow_raw(ctx, t, 0, 1, one[0], &v) == PT_OK);
    CHECK(!pt_storage_is_shared(t->storage));
    CHECK(pt_storage_share(ctx, t->storage) == PT_OK);
    CHECK(pt_storage_is_shared(t->storage));
    CHECK(pt_storage_share(ctx, t->storage) == PT_OK); /* once is enough */
    for (int64_t i = 0; i < sizes[k]; i++) CHECK(pt_tensor_get_flat(t, i) == (double)i + 0.5);
    if (v) {
      CHECK(pt_tensor_get_flat(v, 0) == 1.5);
      pt_tensor_set_flat(v, 0, -1.0);
      CHECK(pt_tensor_get_flat(t, 1) == -1.0);
    }
    pt_tensor_release(t);
    pt_tensor_release(v); /* the storage (and its mapping) goes with the last view */
  }
  /* memory partrain did not allocate: its own release runs once, at the move */
  pt_storage *s = pt_alloc(ctx, sizeof *s);
  float *data = malloc(4 * sizeof *data);
  for (int i = 0; i < 4; i++) data[i] = (float)i;
  pt_storage_init_external(s, data, 4 * sizeof *data, (pt_device){PT_CPU, 0}, external_release, NULL);
  pt_tensor *e = NULL;
  int64_t four = 4, unit = 1;
  CHECK(pt_tensor_from_storage(ctx, s, PT_FLOAT32, 0, 1, &four, &unit, &e) == PT_OK);
  pt_storage_release(s);
  CHECK(pt_storage_share(ctx, e->storage) == PT_OK && external_released == 1);
  CHECK(pt_tensor_get_flat(e, 3) == 3.0);
  pt_tensor_release(e);
  CHECK(external_released == 1);
}

static void test_broadcast(pt_ctx *ctx) {
  int64_t a[2] = {3, 4}, b[1] = {5}, c[2] = {3, 1}, out[PT_MAX_DIMS];
  int n;
  CHECK(pt_broadcast_shapes(ctx, "add", 2, a, 1, b, &n, out) == PT_ESHAPE);
  CHECK(strcmp(pt_errmsg(ctx), "add: shapes {3,4} and {5} cannot be broadcast") == 0);
  CHECK(pt_broadcast_shapes(ctx, "add", 2, c, 1, (int64_t[]){4}, &n, out) == PT_OK);
  CHECK(n == 2 && out[0] == 3 && out[1] == 4);
}

static void test_sum_to_shape(pt_ctx *ctx) {
  int64_t gs[2] = {2, 3}, ts[1] = {3};
  pt_tensor *g, *r;
  pt_tensor_empty(ctx, PT_FLOAT64, 2, gs, &g);
  for (int i = 0; i < 6; i++) pt_tensor_set_flat(g, i, i + 1);
  CHECK(pt_sum_to_shape(ctx, g, 1, ts, &r) == PT_OK);
  CHECK(pt_tensor_get_flat(r, 0) == 5 && pt_tensor_get_flat(r, 2) == 9);
  pt_tensor_release(r);
  pt_tensor_release(g);
}

static void test_errors(pt_ctx *ctx) {
  int64_t bad[1] = {-2};
  pt_tensor *t = NULL;
  CHECK(pt_tensor_empty(ctx, PT_FLOAT32, 1, bad, &t) == PT_ESHAPE);
  CHECK(t == NULL);
  int64_t s[1] = {4};
  pt_tensor_zeros(ctx, PT_FLOAT32, 1, s, &t);
  pt_tensor *n = NULL;
  CHECK(pt_narrow_raw(ctx, t, 0, 3, 2, &n) == PT_EARG);
  CHECK(strstr(pt_errmsg(ctx), "narrow:") != NULL);
  pt_tensor_release(t);
}

static void test_rng(pt_ctx *ctx) {
  pt_rng a, b;
  pt_rng_seed(&a, 42);
  pt_rng_seed(&b, 42);
  for (int i = 0; i < 10; i++) CHECK(pt_rng_next(&a) == pt_rng_next(&b));
  double sum = 0;
  for (int i = 0; i < 10000; i++) sum += pt_rng_normal(&ctx->rng);
  CHECK(fabs(sum / 10000) < 0.05);
}

/* set_data keeps the object and swaps its data; a small tensor's header shares one block with
 * its first storage, which must outlive the header however often the data is swapped (ASan
 * checks the frees) */
static void test_set_data(pt_ctx *ctx) {
  int64_t small[1] = {2}, big[1] = {300};
  for (int order = 0; order < 2; order++) {
    pt_tensor *t = NULL, *view = NULL, *a = NULL, *b = NULL;
    CHECK(pt_tensor_zeros(ctx, PT_FLOAT32, 1, small, &t) == PT_OK); /* one block */
    pt_tensor_set_flat(t, 1, 7);
    CHECK(pt_narrow_raw(ctx, t, 0, 1, 1, &view) == PT_OK); /* a view of the first storage */
    CHECK(pt_tensor_zeros(ctx, PT_FLOAT64, 1, big, &a) == PT_OK);
    CHECK(pt_tensor_zeros(ctx, PT_FLOAT64, 1, small, &b) == PT_OK);
    pt_tensor_set_flat(b, 0, 5);
    CHECK(pt_tensor_set_data(ctx, t, a) == PT_OK);
    CHECK(t->dtype == PT_FLOAT64 && t->shape[0] == 300 && t->storage == a->storage);
    CHECK(pt_tensor_set_data(ctx, t, b) == PT_OK);
    CHECK(pt_tensor_get_flat(t, 0) == 5);
    CHECK(pt_tensor_set_data(ctx, t, view) == PT_OK); /* back onto its own first storage */
    CHECK(t->dtype == PT_FLOAT32 && pt_tensor_get_flat(t, 0) == 7);
    CHECK(pt_tensor_set_data(ctx, t, b) == PT_OK);
    pt_tensor_release(a);
    pt_tensor_release(b);
    if (order == 0) { /* the view outlives the tensor, or the other way round */
      pt_tensor_release(t);
      CHECK(pt_tensor_get_flat(view, 0) == 7);
      pt_tensor_release(view);
    } else {
      pt_tensor_release(view);
      CHECK(pt_tensor_get_flat(t, 0) == 5);
      pt_tensor_release(t);
    }
  }
  pt_tensor *t = NULL, *g = NULL, *f = NULL;
  CHECK(pt_tensor_zeros(ctx, PT_FLOAT32, 1, small, &t) == PT_OK);
  CHECK(pt_tensor_zeros(ctx, PT_FLOAT32, 1, small, &g) == PT_OK);
  t->grad = g;
  CHECK(pt_tensor_zeros(ctx, PT_FLOAT64, 1, small, &f) == PT_OK);
  CHECK(pt_tensor_set_data(ctx, t, f) == PT_OK);
  CHECK(t->grad == NULL); /* a gradient of the old dtype no longer fits */
  pt_tensor_release(f);
  pt_tensor_release(t);
}

int main(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  test_set_data(&ctx);
  test_create_and_views(&ctx);
  test_broadcast(&ctx);
  test_share(&ctx);
  test_sum_to_shape(&ctx);
  test_errors(&ctx);
  test_rng(&ctx);
  return TEST_SUMMARY();
}
