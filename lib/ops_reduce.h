/* Reductions with autograd: sum, mean, prod, max/min, argmax/argmin, var, std, norm, softmax,
 * log_softmax, logsumexp.
 *
 * Dimensions are 0-based. For the reductions, dim == PT_DIM_ALL (-1) reduces over every element
 * (the result is 0-d, or all ones with keepdim); any other dim must be in 0..ndim-1 (a 0-d tensor
 * accepts dim 0 and stays 0-d). softmax and log_softmax take a dim in -ndim..ndim-1 (negative
 * counts from the end, as in Python). keepdim keeps the reduced dimension with size 1.
 *
 * dtypes: float32/float64 compute with double accumulators and return the input dtype.
 * Integer and bool inputs: sum and prod return int64 (int64 arithmetic: exact beyond 2^53, wrapping
 * on overflow as PyTorch's); max, min return the input dtype (compared as integers, exactly);
 * argmax/argmin work on any dtype; mean, var, std, norm, softmax, log_softmax and logsumexp
 * need a floating point tensor (as PyTorch, an error names the dtype).
 * Indices (max/min/argmax/argmin) are 0-based int64 here; the Lua bindings add 1.
 * nansum/nanmean are sum/mean without the NaN elements.
 * Empty inputs: sum -> 0, prod -> 1, mean -> nan, logsumexp -> -inf, norm -> 0; max, min, argmax
 * and argmin of an empty reduction are errors. */
#ifndef PT_OPS_REDUCE_H
#define PT_OPS_REDUCE_H

#include "tensor.h"

#define PT_DIM_ALL (-1)

/* The gradient of a reduction over all elements that picks one value (max, min, median): g (0-d)
 * shared evenly among the elements of in equal to value (all NaNs when value is NaN), as torch's
 * evenly_distribute_backward; built with recorded ops, so a create_graph pass differentiates it. */
pt_status pt_even_tie_backward(pt_ctx *ctx, pt_tensor *in, pt_tensor *value, pt_tensor *g, pt_tensor **gin);

pt_status pt_sum(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out);
pt_status pt_mean(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out);
pt_status pt_prod(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out);

/* values (and, when indices != NULL, 0-based int64 indices; with PT_DIM_ALL the flat index).
 * The gradient goes to the selected element (the first one on ties). */
pt_status pt_max(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **values,
                 pt_tensor **indices);
pt_status pt_min(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **values,
                 pt_tensor **indices);
pt_status pt_argmax(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out);
pt_status pt_argmin(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out);

/* divides by max(0, n - correction), as torch: a divisor of 0 gives inf (nan where every element
 * of the lane is equal, e.g. n = 1 with correction 1) */
pt_status pt_var(pt_ctx *ctx, pt_tensor *t, int dim, double correction, bool keepdim, pt_tensor **out);
pt_status pt_std(pt_ctx *ctx, pt_tensor *t, int dim, double correction, bool keepdim, pt_tensor **out);

/* p-norm: p > 0 (sum |x|^p)^(1/p); p = INFINITY max |x|; p = -INFINITY min |x|; p = 0 the
 * number of non-zeros. Other p are an error. */
pt_status pt_norm(pt_ctx *ctx, pt_tensor *t, double p, int dim, bool keepdim, pt_tensor **out);

/* numerically stable (the maximum is subtracted first) */
pt_status pt_softmax(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out);
pt_status pt_log_softmax(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out);
pt_status pt_logsumexp(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out);

/* NaN left out: nansum counts it as 0 (integer inputs give int64, as sum), nanmean divides by the
 * number of non-NaN elements (nan when there is none). The gradient is 0 at NaN elements. */
pt_status pt_nansum(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out);
pt_status pt_nanmean(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out);

/* Several dims at once: dims holds ndims 0-based dims (ndims == 0: every dim, as PyTorch's
 * sum(dim=())); a repeated dim is "<fname>: dimension <d> appears more than once in the list of
 * dimensions" (1-based). The dims are reduced together as one run of elements (var, std, norm,
 * logsumexp over all of them at once); keepdim keeps each with size 1. One dim gives exactly the
 * single-dim function. */
pt_status pt_sum_dims(pt_ctx *ctx, pt_tensor *t, int ndims, const int *dims, bool keepdim, pt_tensor **out);
pt_status pt_mean_dims(pt_ctx *ctx, pt_tensor *t, int ndims, const int *dims, bool keepdim, pt_tensor **out);
pt_status pt_nansum_dims(pt_ctx *ctx, pt_tensor *t, int ndims, const int *dims, bool keepdim, pt_tensor **out);
pt_status pt_nanmean_dims(pt_ctx *ctx, pt_tensor *t, int ndims, const int *dims, bool keepdim, pt_tensor **out);
pt_status pt_var_dims(pt_ctx *ctx, pt_tensor *t, int ndims, const int *dims, double correction, bool keepdim,
                      pt_tensor **out);
pt_status pt_std_dims(pt_ctx *ctx, pt_tensor *t, int ndims, const int *dims, double correction, bool keepdim,
                      pt_tensor **out);
pt_status pt_norm_dims(pt_ctx *ctx, pt_tensor *t, double p, int ndims, const int *dims, bool keepdim,
                       pt_tensor **out);
pt_status pt_logsumexp_dims(pt_ctx *ctx, pt_tensor *t, int ndims, const int *dims, bool keepdim,
                            pt_tensor **out);

/* int64 number of non-zero elements (NaN counts) over the dims (ndims == 0: all of them; no
 * keepdim, as torch.count_nonzero); any dtype */
pt_status pt_count_nonzero(pt_ctx *ctx, pt_tensor *t, int ndims, const int *dims, pt_tensor **out);

/* Row kernels shared with the losses (lib/nn.c): the largest of p[0..n) (NaNs are skipped),
 * and the sum in double of exp(p[i] - m) (expf within ~2 ulp, vectorised), storing each
 * exp in q when q != NULL. */
float pt_row_max_f32(const float *p, int64_t n);
double pt_row_sum_exp_f32(const float *restrict p, float m, float *restrict q, int64_t n);

#endif
