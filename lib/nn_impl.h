/* Helpers shared by the fused layers' files (lib/nn.c, lib/nn_activation.c); not public API. */
#ifndef PT_NN_IMPL_H
#define PT_NN_IMPL_H

#include "autograd.h"
#include "nn.h"
#include "tensor.h"

#include <string.h>

static inline const char *shape_str(const pt_tensor *t, char *buf) {
  return pt_shape_format(t->ndim, t->shape, buf, PT_SHAPE_STR_MAX);
}

static inline pt_status check_float(pt_ctx *ctx, const char *fname, const char *what, const pt_tensor *t) {
  if (t->dtype != PT_FLOAT32 && t->dtype != PT_FLOAT64)
    return pt_fail(ctx, PT_EARG, "%s: %s must be float32 or float64, got %s", fname, what,
                   pt_dtype_name(t->dtype));
  return PT_OK;
}

static inline pt_status check_same_dtype(pt_ctx *ctx, const char *fname, const char *what,
                                  const pt_tensor *t, const pt_tensor *ref) {
  if (t->dtype != ref->dtype)
    return pt_fail(ctx, PT_EARG, "%s: %s dtype %s does not match input dtype %s", fname, what,
                   pt_dtype_name(t->dtype), pt_dtype_name(ref->dtype));
  return PT_OK;
}

static inline bool same_shape(const pt_tensor *a, const pt_tensor *b) {
  return a->ndim == b->ndim && memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof(int64_t)) == 0;
}

/* A tensor over out's storage without out's grad_fn: saving it in out's own node would make a
 * reference cycle (out -> node -> out). */
static inline pt_status alias(pt_ctx *ctx, pt_tensor *t, pt_tensor **out) {
  return pt_tensor_from_storage(ctx, t->storage, t->dtype, t->offset, t->ndim, t->shape, t->stride,
                                out);
}

/* grad_out as a contiguous tensor of dtype dt (new reference) */
static inline pt_status grad_prep(pt_ctx *ctx, pt_tensor *g, pt_dtype dt, pt_tensor **out) {
  pt_tensor *c;
  pt_status st = pt_tensor_to_dtype_raw(ctx, g, dt, &c);
  if (st) return st;
  st = pt_tensor_contiguous_raw(ctx, c, out);
  pt_tensor_release(c);
  return st;
}

/* Where a backward may write a leaf's gradient directly (no temporary): see
 * pt_autograd_grad_target (leaf->grad under the default accumulation, or the dispatcher's
 * per-worker buffer). Returns the tensor (borrowed) or NULL for the general path. */
static inline pt_tensor *direct_grad(pt_ctx *ctx, pt_tensor *leaf, bool *fresh) {
  return pt_autograd_grad_target(ctx, leaf, fresh);
}

/* y[0..n) = act(x[0..n)) (x may be y) by the activation layer's own forward kernel
 * (lib/nn_activation.c), for fused ops that apply an activation inside (the RNN steps' gates).
 * act takes no parameters; x and y contiguous, of dtype dt (float32 or float64). */
void pt_nn_act_span(pt_dtype dt, pt_nn_act act, const void *x, void *y, int64_t n);

#endif
