/* lib/ops_elementwise.c: an in-place op on a view of a tensor with history gives the base a
 * CopySlices node. That node must not hold the view itself (the view holds the base, whose
 * grad_fn is the node: a cycle that kept the base, the view and both nodes alive forever). After
 * the last handle goes, only the observer's own reference to the base's storage remains. */
#include "autograd.h"
#include "ops_elementwise.h"
#include "ops_shape.h"
#include "tensor.h"
#include "testing.h"

int main(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  pt_tensor *a = NULL, *base = NULL, *view = NULL, *one = NULL;
  CHECK(pt_tensor_empty(&ctx, PT_FLOAT64, 1, (int64_t[]){4}, &a) == PT_OK);
  for (int i = 0; i < 4; i++) pt_tensor_set_flat(a, i, i + 1);
  a->requires_grad = true;
  CHECK(pt_mul_scalar(&ctx, a, 2, &base) == PT_OK);
  CHECK(pt_narrow(&ctx, base, 0, 1, 2, &view) == PT_OK);
  CHECK(pt_binary_number_(&ctx, PT_BIN_MUL, view, (pt_number){.d = 3}) == PT_OK);
  CHECK(base->grad_fn && base->grad_fn->n_inputs == 2);
  /* the gradient still flows through both parts: d(sum base)/da = 2 outside the view, 6 in it */
  CHECK(pt_tensor_empty(&ctx, PT_FLOAT64, 1, (int64_t[]){4}, &one) == PT_OK);
  pt_tensor_fill(&ctx, one, 1.0);
  CHECK(pt_backward(&ctx, base, one, false) == PT_OK);
  CHECK(a->grad && pt_tensor_get_flat(a->grad, 0) == 2 && pt_tensor_get_flat(a->grad, 1) == 6 &&
        pt_tensor_get_flat(a->grad, 2) == 6 && pt_tensor_get_flat(a->grad, 3) == 2);
  /* a second op, no backward: the graph is dropped with its tensors */
  pt_tensor *base2 = NULL, *view2 = NULL;
  CHECK(pt_mul_scalar(&ctx, a, 2, &base2) == PT_OK);
  CHECK(pt_narrow(&ctx, base2, 0, 0, 3, &view2) == PT_OK);
  CHECK(pt_binary_number_(&ctx, PT_BIN_ADD, view2, (pt_number){.d = 1}) == PT_OK);
  pt_storage *s = pt_storage_retain(base2->storage), *s1 = pt_storage_retain(base->storage);
  pt_tensor_release(view2);
  pt_tensor_release(base2);
  pt_tensor_release(view);
  pt_tensor_release(base);
  CHECK(atomic_load(&s->refcount) == 1);
  CHECK(atomic_load(&s1->refcount) == 1);
  pt_storage_release(s);
  pt_storage_release(s1);
  pt_tensor_release(one);
  pt_tensor_release(a);
  return TEST_SUMMARY();
}
