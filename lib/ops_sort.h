/* Sorting and scans along one dimension (0-based dims here; Lua adds 1 to indices):
 * sort, topk (values with int64 indices, gradients to the selected elements), cumsum, cumprod
 * (with gradients), and the boolean reductions all/any. NaN sorts as the largest value, as in
 * PyTorch; ties keep their original order (stable), so results are deterministic. */
#ifndef PT_OPS_SORT_H
#define PT_OPS_SORT_H

#include "autograd.h"

pt_status pt_sort(pt_ctx *ctx, pt_tensor *t, int dim, bool descending, pt_tensor **values,
                  pt_tensor **indices);
/* the k largest (or smallest) along dim, in sorted order */
pt_status pt_topk(pt_ctx *ctx, pt_tensor *t, int64_t k, int dim, bool largest, pt_tensor **values,
                  pt_tensor **indices);
pt_status pt_cumsum(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out);
pt_status pt_cumprod(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out);
/* bool result: every / some element nonzero, over all elements (dim < 0) or one dim */
pt_status pt_all(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out);
pt_status pt_any(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out);

/* Selections along dim (0-based; values in t's dtype, 0-based int64 indices; keepdim keeps dim
 * with size 1). The gradient of the values goes to the selected elements.
 * kthvalue: the k-th smallest (k is 1-based, as torch's), in the order of a stable sort with NaN
 * largest: on ties the index is that of the k-th in that order.
 * median: the lower median (the ((n+1)/2)-th smallest, integer division); a lane holding a NaN
 * gives NaN and the index of its first NaN (as torch.median).
 * mode: the most frequent value, the smallest one on ties (NaNs count as one value, larger than
 * all), and the index of its last occurrence (as torch's CPU mode). */
pt_status pt_kthvalue(pt_ctx *ctx, pt_tensor *t, int64_t k, int dim, bool keepdim, pt_tensor **values,
                      pt_tensor **indices);
pt_status pt_median_dim(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **values,
                        pt_tensor **indices);
pt_status pt_mode(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **values,
                  pt_tensor **indices);
/* the lower median of every element, 0-d (NaN if any element is NaN; NaN for an empty floating
 * point tensor, an error for an empty integer one); the gradient goes to the selected element */
pt_status pt_median(pt_ctx *ctx, pt_tensor *t, pt_tensor **out);

/* int64 {n, ndim}: the 0-based indices of the n non-zero elements (NaN is non-zero) in row-major
 * order; a 0-d tensor gives {1, 0} or {0, 0} */
pt_status pt_nonzero(pt_ctx *ctx, pt_tensor *t, pt_tensor **out);

/* The distinct values of t (flattened), ascending (NaN last; every NaN is a value of its own).
 * inverse (when not NULL): int64 of t's shape, the 0-based position of each element in values;
 * counts (when not NULL): int64, how often each value occurs. */
pt_status pt_unique(pt_ctx *ctx, pt_tensor *t, pt_tensor **values, pt_tensor **inverse,
                    pt_tensor **counts);

/* Counts of each value of a 1-D tensor of non-negative integers: out[v] (0-based) is how often v
 * occurs (or the sum of weights[i] over the elements i equal to v); the length is
 * max(max(t) + 1, minlength). int64 without weights; with weights, float32 for float32 weights,
 * else float64 (as torch.bincount). */
pt_status pt_bincount(pt_ctx *ctx, pt_tensor *t, pt_tensor *weights, int64_t minlength,
                      pt_tensor **out);

/* For each element v of values, the 0-based index i of the first element of seq (ascending
 * along its last dim) with seq[i] >= v (right: > v), n when there is none; NaN sorts largest.
 * seq is 1-D, or has the leading dims of values (one sequence per row). int64 of values' shape. */
pt_status pt_searchsorted(pt_ctx *ctx, pt_tensor *seq, pt_tensor *values, bool right, pt_tensor **out);

#endif
