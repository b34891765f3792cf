/* Activation layers (nn.ReLU, LeakyReLU, GELU, Tanh, Sigmoid, SiLU and their functions): one
 * pass forward, one pass backward, one autograd node each. */
#include "nn.h"
#include "dispatch.h"
#include "nn_impl.h"

#include <math.h>
#include <stdlib.h>

/* ================================================================= activations */

static const char *act_name(pt_nn_act act) {
  switch (act) {
  case PT_ACT_RELU: return "relu";
  case PT_ACT_LEAKY_RELU: return "leaky_relu";
  case PT_ACT_GELU: return "gelu";
  case PT_ACT_GELU_TANH: return "gelu";
  case PT_ACT_TANH: return "tanh";
  case PT_ACT_SIGMOID: return "sigmoid";
  case PT_ACT_SILU: return "silu";
  default: return "activation";
  }
}

static const char *act_backward_name(pt_nn_act act) {
  switch (act) {
  case PT_ACT_RELU: return "ReluBackward";
  case PT_ACT_LEAKY_RELU: return "LeakyReluBackward";
  case PT_ACT_GELU:
  case PT_ACT_GELU_TANH: return "GeluBackward";
  case PT_ACT_TANH: return "TanhBackward";
  case PT_ACT_SIGMOID: return "SigmoidBackward";
  case PT_ACT_SILU: return "SiluBackward";
  default: return "ActivationBackward";
  }
}

#define GELU_K 0.7978845608028654 /* sqrt(2/pi) */
#define GELU_C 0.044715

/* ReLU keeps NaN and passes its gradient (x <= 0 is false for NaN), as PyTorch's threshold */
static inline double act_f(pt_nn_act act, double x, double slope) {
  switch (act) {
  case PT_ACT_RELU: return x <= 0 ? 0 : x;
  case PT_ACT_LEAKY_RELU: return x > 0 ? x : slope * x;
  case PT_ACT_GELU: return 0.5 * x * (1.0 + erf(x * M_SQRT1_2));
  case PT_ACT_GELU_TANH: return 0.5 * x * (1.0 + tanh(GELU_K * (x + GELU_C * x * x * x)));
  case PT_ACT_TANH: return tanh(x);
  case PT_ACT_SIGMOID: return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
  case PT_ACT_SILU: return x / (1.0 + exp(-x));
  default: return x;
  }
}

/* derivative from the input x and the output y */
static inline double act_df(pt_nn_act act, double x, double y, double slope) {
  switch (act) {
  case PT_ACT_RELU: return x <= 0 ? 0 : 1;
  case PT_ACT_LEAKY_RELU: return x > 0 ? 1 : slope;
  case PT_ACT_GELU:
    return 0.5 * (1.0 + erf(x * M_SQRT1_2)) + x * exp(-0.5 * x * x) * 0.3989422804014327;
  case PT_ACT_GELU_TANH: {
    double t = tanh(GELU_K * (x + GELU_C * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_K * (1.0 + 3.0 * GELU_C * x * x);
  }
  case PT_ACT_TANH: return 1.0 - y * y;
  case PT_ACT_SIGMOID: return y * (1.0 - y);
  case PT_ACT_SILU: {
    double s = 1.0 / (1.0 + exp(-x));
    return s * (1.0 + x * (1.0 - s));
  }
  default: return 1;
  }
}

/* saved: 0 x, 1 y alias; ints: act; scalars: slope */
static pt_status act_backward(pt_ctx *ctx, pt_node *node, pt_tensor *grad_out, pt_tensor **grad_in) {
  pt_tensor *x = node->saved[0], *y = node->saved[1], *g, *gx;
  pt_nn_act act = (pt_nn_act)node->ints[0];
  double slope = node->scalars[0];
  pt_status st = grad_prep(ctx, grad_out, x->dtype, &g);
  if (st) return st;
  if ((st = pt_tensor_empty(ctx, x->dtype, x->ndim, x->shape, &gx))) {
    pt_tensor_release(g);
    return st;
  }
  int64_t n = pt_tensor_numel(x);
  PT_DISPATCH_FLOAT(x->dtype, {
    const T *xp = pt_tensor_data(x), *yp = pt_tensor_data(y), *gp = pt_tensor_data(g);
    T *op = pt_tensor_data(gx);
    if (act == PT_ACT_RELU) {
      for (int64_t i = 0; i < n; i++) op[i] = xp[i] <= 0 ? (T)0 : gp[i];
    } else {
      for (int64_t i = 0; i < n; i++) op[i] = (T)(gp[i] * act_df(act, xp[i], yp[i], slope));
    }
  });
  pt_tensor_release(g);
  grad_in[0] = gx;
  return PT_OK;
}

pt_status pt_nn_activation(pt_ctx *ctx, pt_nn_act act, pt_tensor *x, double slope, pt_tensor **out) {
  pt_status st;
  if (act <= PT_ACT_NONE || act > PT_ACT_SILU)
    return pt_fail(ctx, PT_EARG, "activation: unknown activation %d", (int)act);
  if ((st = check_float(ctx, act_name(act), "input", x))) return st;
  pt_tensor *xc, *y;
  if ((st = pt_tensor_contiguous_raw(ctx, x, &xc))) return st;
  if ((st = pt_tensor_empty(ctx, x->dtype, x->ndim, x->shape, &y))) {
    pt_tensor_release(xc);
    return st;
  }
  int64_t n = pt_tensor_numel(x);
  PT_DISPATCH_FLOAT(x->dtype, {
    const T *xp = pt_tensor_data(xc);
    T *yp = pt_tensor_data(y);
    if (act == PT_ACT_RELU) {
      for (int64_t i = 0; i < n; i++) yp[i] = xp[i] <= 0 ? (T)0 : xp[i];
    } else {
      for (int64_t i = 0; i < n; i++) yp[i] = (T)act_f(act, xp[i], slope);
    }
  });
  pt_node *node;
  if ((st = pt_autograd_record(ctx, y, act_backward_name(act), act_backward, 1, &x, &node))) goto fail;
  if (node) {
    pt_node_save(node, 0, xc);
    xc = NULL;
    if ((st = alias(ctx, y, &node->saved[1]))) goto fail;
    node->ints[0] = act;
    node->n_ints = 1;
    node->scalars[0] = slope;
  }
  pt_tensor_release(xc);
  *out = y;
  return PT_OK;
fail:
  pt_tensor_release(xc);
  pt_tensor_release(y);
  return st;
}

