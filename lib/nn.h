/* Fused neural-network layers and losses (float32 and float64), forward and backward.
 * Each function computes its output in one pass over contiguous data and records one autograd
 * node whose backward is also one fused pass (Linear uses OpenBLAS gemm). Inputs are borrowed,
 * *out is a new reference. fname (where taken) names the caller in error messages, e.g.
 * "Linear:forward: input has 783 features, expected 784 (input shape {64,783})".
 * Class indices (cross_entropy, nll_loss, embedding) are 1-based, as in Torch7. */
#ifndef PT_NN_H
#define PT_NN_H

#include "autograd.h"

typedef enum pt_reduction { PT_REDUCE_NONE = 0, PT_REDUCE_MEAN = 1, PT_REDUCE_SUM = 2 } pt_reduction;

typedef enum pt_nn_act {
  PT_ACT_NONE = 0,
  PT_ACT_RELU,
  PT_ACT_LEAKY_RELU, /* slope in the scalar argument */
  PT_ACT_GELU,       /* exact, with erf */
  PT_ACT_GELU_TANH,  /* tanh approximation */
  PT_ACT_TANH,
  PT_ACT_SIGMOID,
  PT_ACT_SILU,
  /* nn_extra's activations, parameters p0 and p1 of pt_nn_activation_p (PyTorch's defaults in
   * nn_extra.lua) */
  PT_ACT_ELU,         /* p0 alpha */
  PT_ACT_SELU,        /* PyTorch's fixed alpha and scale */
  PT_ACT_CELU,        /* p0 alpha (not 0) */
  PT_ACT_SOFTPLUS,    /* p0 beta (not 0), p1 threshold: x where beta x > threshold */
  PT_ACT_MISH,
  PT_ACT_HARDTANH,    /* p0 min_val < p1 max_val */
  PT_ACT_RELU6,
  PT_ACT_HARDSWISH,
  PT_ACT_HARDSIGMOID,
  PT_ACT_SOFTSIGN,
  PT_ACT_TANHSHRINK,
  PT_ACT_THRESHOLD,   /* p0 threshold, p1 value: value where x <= threshold */
  PT_ACT_LOGSIGMOID,
  PT_ACT_SOFTSHRINK,  /* p0 lambda >= 0 */
  PT_ACT_HARDSHRINK,  /* p0 lambda */
} pt_nn_act;

/* Rows r0..r1 of nx batch-1 linear products with one weight: ys[i][r] = W[r,:] xs[i]
 * (+ ys[i][r] when beta[i]), for a contiguous float32/float64 weight; pt_nn_linear's batch-1
 * path computes this way. A block whose ends are multiples of PT_LINEAR_ROWS_CHUNK (or the last
 * row) gets bitwise the numbers of the whole product, which par_by_sample's partitioned
 * weights rely on: float32 runs pt_sgemv_rows (any split will do, two inputs share one pass
 * over the weight), float64 sends the rows to BLAS in chunks of PT_LINEAR_ROWS_CHUNK rows that
 * start at multiples of it (BLAS's kernels treat a row differently by where it falls in the
 * call). */
#define PT_LINEAR_ROWS_CHUNK 128
void pt_nn_linear_rows(const pt_tensor *w, int64_t r0, int64_t r1, const void *const *xs,
                       void *const *ys, const bool *beta, int nx);

/* y = x W^T + b (PyTorch layout: W {out,in}, b {out} or NULL), x {..., in}; act may be
 * PT_ACT_NONE or PT_ACT_RELU (fused Linear+ReLU). */
pt_status pt_nn_linear(pt_ctx *ctx, const char *fname, pt_tensor *x, pt_tensor *w, pt_tensor *b,
                       pt_nn_act act, pt_tensor **out);

/* elementwise activation; slope is used by PT_ACT_LEAKY_RELU (pt_nn_activation_p with p0 = slope,
 * p1 = 0) */
pt_status pt_nn_activation(pt_ctx *ctx, pt_nn_act act, pt_tensor *x, double slope, pt_tensor **out);
/* elementwise activation with its parameters p0, p1 (see pt_nn_act; unused ones are ignored),
 * PyTorch 1.13's formulas: one pass forward, one node whose backward is one pass */
pt_status pt_nn_activation_p(pt_ctx *ctx, pt_nn_act act, pt_tensor *x, double p0, double p1,
                             pt_tensor **out);

/* cross entropy of logits {N,C} (or {C}) against 1-based class indices {N} (or 0-d), with
 * optional class weights {C} (NULL), label smoothing in [0,1] and ignore_index (0 = none). */
pt_status pt_nn_cross_entropy(pt_ctx *ctx, pt_tensor *input, pt_tensor *target, pt_tensor *weight,
                              double label_smoothing, int64_t ignore_index, pt_reduction red,
                              pt_tensor **out);
/* negative log likelihood of log-probabilities {N,C} (or {C}) */
pt_status pt_nn_nll_loss(pt_ctx *ctx, pt_tensor *input, pt_tensor *target, pt_tensor *weight,
                         int64_t ignore_index, pt_reduction red, pt_tensor **out);

typedef enum pt_pointwise_loss {
  PT_LOSS_MSE = 0,
  PT_LOSS_L1,
  PT_LOSS_SMOOTH_L1,      /* beta */
  PT_LOSS_BCE,            /* input holds probabilities */
  PT_LOSS_BCE_WITH_LOGITS /* optional pos_weight over the last dimension */
} pt_pointwise_loss;

/* Losses of input against a target of the same shape. */
pt_status pt_nn_pointwise_loss(pt_ctx *ctx, const char *fname, pt_pointwise_loss kind,
                               pt_tensor *input, pt_tensor *target, pt_tensor *pos_weight,
                               double beta, pt_reduction red, pt_tensor **out);

/* Inverted dropout: zeroes elements with probability p and scales the rest by 1/(1-p), drawing
 * from ctx->rng. With training false or p == 0, *out is x itself (a new reference). */
pt_status pt_nn_dropout(pt_ctx *ctx, pt_tensor *x, double p, bool training, pt_tensor **out);

/* Layer norm over the trailing nnorm dims whose sizes are norm_shape; w and b (shape
 * norm_shape) may be NULL. */
pt_status pt_nn_layer_norm(pt_ctx *ctx, pt_tensor *x, int nnorm, const int64_t *norm_shape,
                           pt_tensor *w, pt_tensor *b, double eps, pt_tensor **out);

/* RMS norm (PyTorch 2.4's F.rms_norm) over the trailing nnorm dims whose sizes are norm_shape:
 * y = x / sqrt(mean(x^2) + eps) * w; w (shape norm_shape) may be NULL. fname names the caller in
 * error messages ("RMSNorm:forward", "rms_norm"). */
pt_status pt_nn_rms_norm(pt_ctx *ctx, const char *fname, pt_tensor *x, int nnorm, const int64_t *norm_shape,
                         pt_tensor *w, double eps, pt_tensor **out);

/* Batch norm over x {N,C} or {N,C,L}. running_mean/var ({C}, may be NULL) are updated in
 * place when training (var unbiased, as PyTorch), and used instead of batch statistics when
 * not training. w, b ({C}) may be NULL. */
pt_status pt_nn_batch_norm(pt_ctx *ctx, pt_tensor *x, pt_tensor *running_mean,
                           pt_tensor *running_var, pt_tensor *w, pt_tensor *b, bool training,
                           double momentum, double eps, pt_tensor **out);

/* rows of weight {V,D} at 1-based integer indices (any shape): out shape indices.shape + {D}.
 * padding_idx (1-based, 0 = none, negative from the end: -1 is row V, as PyTorch's) gets no
 * gradient. */
pt_status pt_nn_embedding(pt_ctx *ctx, pt_tensor *weight, pt_tensor *indices, int64_t padding_idx,
                          pt_tensor **out);

/* PyTorch's embedding_renorm_ (F.embedding's max_norm): each row of weight {V,D} that the 1-based
 * indices name and whose norm_type-norm exceeds max_norm is scaled in place, without a graph, by
 * max_norm / (norm + 1e-7). Out-of-range indices are refused before any row changes. */
pt_status pt_nn_embedding_renorm_(pt_ctx *ctx, pt_tensor *weight, pt_tensor *indices, double max_norm,
                                  double norm_type);

/* a differentiable reshape (copies when x is not contiguous); used by Flatten */
pt_status pt_nn_view(pt_ctx *ctx, const char *fname, pt_tensor *x, int ndim, const int64_t *shape,
                     pt_tensor **out);

#endif
