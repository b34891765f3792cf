/* Convolution-family layers on NCHW tensors (float32/float64), forward and backward fused in C,
 * GEMMs through OpenBLAS. All record autograd nodes when an input requires grad. */
#ifndef PT_CONV_H
#define PT_CONV_H

#include "autograd.h"

typedef struct pt_conv2d_opts {
  int stride[2], padding[2], dilation[2];
  int groups;
} pt_conv2d_opts;

/* x {N,C,H,W} (or {C,H,W}), w {O,C/groups,kh,kw}, bias {O} or NULL -> {N,O,Ho,Wo} */
pt_status pt_conv2d(pt_ctx *ctx, pt_tensor *x, pt_tensor *w, pt_tensor *bias,
                    const pt_conv2d_opts *o, pt_tensor **out);

/* The transpose of conv2d (PyTorch's conv_transpose2d): x {N,C,H,W} (or {C,H,W}), w
 * {C,out/groups,kh,kw}, bias {out} or NULL -> {N,out,Ho,Wo} with
 * Ho = (H-1)*stride - 2*padding + dilation*(kh-1) + output_padding + 1. Its forward is conv2d's
 * input gradient, its input gradient conv2d's forward, its weight gradient conv2d's with the
 * roles of input and output gradient swapped (the same im2col/col2im kernels). output_padding
 * must be smaller than stride or dilation (it adds rows and columns at the end that no input
 * reaches: bias only). */
typedef struct pt_conv_transpose2d_opts {
  int stride[2], padding[2], output_padding[2], dilation[2];
  int groups;
} pt_conv_transpose2d_opts;

pt_status pt_conv_transpose2d(pt_ctx *ctx, pt_tensor *x, pt_tensor *w, pt_tensor *bias,
                              const pt_conv_transpose2d_opts *o, pt_tensor **out);

/* PyTorch's conv_transpose3d: x {N,C,D,H,W} or {C,D,H,W}, w {C, out/groups, kd, kh, kw}, bias
 * {out} or NULL; output depth (D-1)*stride - 2*padding + dilation*(kd-1) + output_padding + 1
 * (and alike for H, W). Computed as one conv_transpose2d, recorded with the public ops (so its
 * gradients, also under create_graph, are theirs): the kd input depths each output depth reads
 * (a zero slice where none) are gathered into the channels, {N*D_out, kd*C, H, W}, and
 * transposed-convolved with the weight as {kd*C, out/groups, kh, kw} (channels ordered group,
 * tap, channel so that each group keeps its own block). */
typedef struct pt_conv_transpose3d_opts {
  int stride[3], padding[3], output_padding[3], dilation[3];
  int groups;
} pt_conv_transpose3d_opts;

pt_status pt_conv_transpose3d(pt_ctx *ctx, pt_tensor *x, pt_tensor *w, pt_tensor *bias,
                              const pt_conv_transpose3d_opts *o, pt_tensor **out);

typedef struct pt_pool2d_opts {
  int kernel[2], stride[2], padding[2];
  int dilation[2];        /* max pool only; 0 reads as 1 (initializers that leave it out) */
  bool ceil_mode;
  bool count_include_pad; /* avg pool only */
  int divisor_override;   /* avg pool only: when not 0, every window's sum is divided by it (PyTorch's
                           * divisor_override), whatever count_include_pad says */
  bool relu;              /* max pool only: max(pool, 0), i.e. a ReLU before the pooling fused in
                           * (ReLU is monotonic: pooling then rectifying gives the same values, and
                           * the gradient reaches the window's first maximum only where it is > 0) */
} pt_pool2d_opts;

pt_status pt_max_pool2d(pt_ctx *ctx, pt_tensor *x, const pt_pool2d_opts *o, pt_tensor **out);
/* max_pool2d that also gives, in indices, an int64 tensor of the output's shape with each
 * window's maximum's 0-based flat position in its H*W input plane (PyTorch's return_indices;
 * the first maximum, the last NaN). relu must be false. */
pt_status pt_max_pool2d_with_indices(pt_ctx *ctx, pt_tensor *x, const pt_pool2d_opts *o, pt_tensor **out,
                                     pt_tensor **indices);
pt_status pt_avg_pool2d(pt_ctx *ctx, pt_tensor *x, const pt_pool2d_opts *o, pt_tensor **out);
pt_status pt_adaptive_avg_pool2d(pt_ctx *ctx, pt_tensor *x, int out_h, int out_w, pt_tensor **out);
/* Adaptive max pooling (PyTorch's bins: rows floor(i*H/Ho) .. ceil((i+1)*H/Ho)); indices (may be
 * NULL) gets an int64 tensor of the output's shape with each maximum's 0-based flat position in
 * its H*W plane (NaN wins, as in max_pool2d). */
pt_status pt_adaptive_max_pool2d(pt_ctx *ctx, pt_tensor *x, int out_h, int out_w, pt_tensor **out,
                                 pt_tensor **indices);

/* Max unpooling (PyTorch's max_unpool2d): y {N,C,out_h,out_w} (or {C,out_h,out_w}) is zero but
 * where indices points: y's plane at indices[i] - index_base is x's element i of that plane.
 * indices: int64 of x's shape, positions in the flattened out_h*out_w plane counting from
 * index_base (0 in C, 1 from Lua); one outside the plane is an error. Where positions coincide
 * the later one in x's order wins (PyTorch's CPU kernel); the gradient takes the output
 * gradient at each position (a gather, as PyTorch's). fname names the caller in messages
 * (max_unpool1d runs this on a unit height). */
pt_status pt_max_unpool2d(pt_ctx *ctx, const char *fname, pt_tensor *x, pt_tensor *indices, int64_t index_base,
                          int out_h, int out_w, pt_tensor **out);

/* Batch norm over {N,C,H,W} (also {N,C} and {N,C,L}): per-channel statistics over the other
 * dims. In training mode updates running_mean/var (may be NULL) with momentum (PyTorch's
 * unbiased running variance); in eval mode normalises with them. weight/bias may be NULL. */
/* running statistic t (1-D, C elements, may be NULL): t[c] = (1 - momentum) t[c] + momentum v[c] */
void pt_batch_norm_update_running(pt_tensor *t, const double *v, int64_t C, double momentum);
pt_status pt_batch_norm(pt_ctx *ctx, pt_tensor *x, pt_tensor *running_mean, pt_tensor *running_var,
                        pt_tensor *weight, pt_tensor *bias, bool training, double momentum,
                        double eps, pt_tensor **out);

/* Channel dropout: zeroes whole {H,W} maps of x {N,C,H,W} with probability p, scales by 1/(1-p). */
pt_status pt_dropout2d(pt_ctx *ctx, pt_tensor *x, double p, bool training, pt_tensor **out);

/* Nearest-neighbour upsampling by integer factors. */
pt_status pt_upsample_nearest2d(pt_ctx *ctx, pt_tensor *x, int scale_h, int scale_w, pt_tensor **out);

#endif
