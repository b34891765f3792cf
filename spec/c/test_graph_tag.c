/* lib/autograd.c graph tags: nodes recorded under ctx->graph_tag carry it, and
 * pt_graph_release_tagged frees the saved data of the tagged part of a graph (marking it
 * released, so a backward through it fails as after a backward without retain_graph) while the
 * output tensor is still referenced, leaving the untagged graph it was built on intact. */
#include <string.h>

#include "autograd.h"
#include "ops_elementwise.h"
#include "tensor.h"
#include "testing.h"

static pt_tensor *leaf(pt_ctx *ctx, double v) {
  pt_tensor *t = NULL;
  pt_tensor_empty(ctx, PT_FLOAT64, 1, (int64_t[]){3}, &t);
  for (int i = 0; i < 3; i++) pt_tensor_set_flat(t, i, v + i);
  t->requires_grad = true;
  return t;
}

static bool node_has_saved(const pt_node *n) {
  for (int i = 0; i < PT_NODE_MAX_SAVED; i++)
    if (n->saved[i]) return true;
  for (int i = 0; i < n->n_inputs; i++)
    if (n->inputs[i]) return true;
  return false;
}

int main(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  pt_tensor *a = leaf(&ctx, 1), *b = leaf(&ctx, 2);
  /* untagged: base = a * b */
  pt_tensor *base = NULL, *e = NULL, *y = NULL;
  CHECK(pt_mul(&ctx, a, b, &base) == PT_OK);
  CHECK(base->grad_fn && base->grad_fn->tag == 0);
  /* tagged: y = exp(base) * a */
  uint64_t tag = pt_graph_tag_new();
  CHECK(tag != 0 && pt_graph_tag_new() != tag);
  ctx.graph_tag = tag;
  CHECK(pt_exp(&ctx, base, &e) == PT_OK);
  CHECK(pt_mul(&ctx, e, a, &y) == PT_OK);
  ctx.graph_tag = 0;
  pt_node *yn = y->grad_fn, *en = e->grad_fn, *bn = base->grad_fn;
  CHECK(yn->tag == tag && en->tag == tag);
  CHECK(node_has_saved(yn) && node_has_saved(en) && node_has_saved(bn));
  pt_node_retain(en); /* observe it after the release */
  pt_graph_release_tagged(yn);
  CHECK(yn->released && en->released && !bn->released);
  CHECK(!node_has_saved(yn) && !node_has_saved(en));
  CHECK(node_has_saved(bn)); /* the untagged graph it was built on stays */
  /* a backward through the released part fails as after a backward without retain_graph */
  pt_tensor *one = NULL;
  pt_tensor_empty(&ctx, PT_FLOAT64, 1, (int64_t[]){3}, &one);
  pt_tensor_fill(&ctx, one, 1.0);
  CHECK(pt_backward(&ctx, y, one, false) == PT_ESTATE);
  CHECK(strstr(pt_errmsg(&ctx), "second time") != NULL);
  /* the untagged part still runs its backward */
  CHECK(pt_backward(&ctx, base, one, false) == PT_OK);
  CHECK(a->grad && pt_tensor_get_flat(a->grad, 0) == 2); /* d(a*b)/da = b */
  /* untagged roots and NULL are left alone */
  pt_graph_release_tagged(NULL);
  pt_node_release(en);
  pt_tensor_release(one);
  pt_tensor_release(y);
  pt_tensor_release(e);
  pt_tensor_release(base);
  pt_tensor_release(a);
  pt_tensor_release(b);
  return TEST_SUMMARY();
}
