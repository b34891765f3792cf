/* Reductions with autograd: sum, mean, prod, max/min, argmax/argmin, var, std, norm, softmax,
 * log_softmax, logsumexp.
 *
 * Dimensions are 0-based. For the reductions, dim == PT_DIM_ALL (-1) reduces over every element
 * (the result is 0-d, or all ones with keepdim); any other dim must be in 0..ndim-1 (a 0-d tensor
 * accepts dim 0 and stays 0-d). softmax and log_softmax take a dim in -ndim..ndim-1 (negative
 * counts from the end, as in Python). keepdim keeps the reduced dimension with size 1.
 *
 * dtypes: float32/float64 compute with double accumulators and return the input dtype.
 * Integer and bool inputs: sum and prod return int64; max, min return the input dtype;
 * argmax/argmin work on any dtype; mean, var, std, norm, softmax, log_softmax and logsumexp
 * need a floating point tensor (as PyTorch, an error names the dtype).
 * Indices (max/min/argmax/argmin) are 0-based int64 here; the Lua bindings add 1.
 * Empty inputs: sum -> 0, prod -> 1, mean -> nan, logsumexp -> -inf, norm -> 0; max, min, argmax
 * and argmin of an empty reduction are errors. */
#ifndef PT_OPS_REDUCE_H
#define PT_OPS_REDUCE_H

#include "tensor.h"

#define PT_DIM_ALL (-1)

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

/* unbiased divides by n - 1 (n = 1 gives nan), otherwise by n */
pt_status pt_var(pt_ctx *ctx, pt_tensor *t, int dim, bool unbiased, bool keepdim, pt_tensor **out);
pt_status pt_std(pt_ctx *ctx, pt_tensor *t, int dim, bool unbiased, bool keepdim, pt_tensor **out);

/* p-norm: p > 0 (sum |x|^p)^(1/p); p = INFINITY max |x|; p = -INFINITY min |x|; p = 0 the
 * number of non-zeros. Other p are an error. */
pt_status pt_norm(pt_ctx *ctx, pt_tensor *t, double p, int dim, bool keepdim, pt_tensor **out);

/* numerically stable (the maximum is subtracted first) */
pt_status pt_softmax(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out);
pt_status pt_log_softmax(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out);
pt_status pt_logsumexp(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out);

#endif
