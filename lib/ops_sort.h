/* Sorting and scans along one dimension (0-based dims here; Lua adds 1 to indices):
 * sort, topk (values with int64 indices, gradients to the selected elements), cumsum, cumprod
 * (with gradients), and the boolean reductions all/any. NaN sorts as the largest value, as in
 * PyTorch; ties keep their original order (stable), so results are deterministic. Every ordering
 * and equality test here (sort, topk, kthvalue, median, mode, unique, searchsorted) is exact for
 * every dtype: int64 values are compared as integers, never through a double (2^53 and 2^53+1
 * are two values). */
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
 * mode: torch 1.13's CPU mode, values and indices: the (value, index) pairs of the lane sorted by
 * value with std::sort (libstdc++'s introsort, reproduced step by step: it is not stable) under a
 * plain <, then the first of the longest runs of equal neighbours and the index of its last pair.
 * Without NaN: the smallest most frequent value, with the index of its last occurrence in lanes
 * of up to 16 elements (an insertion sort), of one of its occurrences beyond. A NaN equals
 * nothing (each NaN is a run of one) and is below and above nothing, so it may also split a run
 * of equal values: {1, NaN, 1} gives 1 at index 0, as torch. */
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
/* The distinct slices of t along dim (0-based), as torch.unique(dim=): t's shape with dim's size
 * the number of distinct slices, sorted lexicographically (the elements of a slice in the order
 * of t:transpose(0, dim), a position holding a NaN deciding nothing, by libstdc++'s std::sort
 * as torch's); a slice holding a NaN equals no other. inverse: int64 {t.shape[dim]}, the slice
 * each one became; counts: int64. Every dimension but dim must be non-empty; an empty dim gives
 * empty results. No gradient. */
pt_status pt_unique_dim(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **values, pt_tensor **inverse,
                        pt_tensor **counts);

/* Counts of each value of a 1-D tensor of non-negative integers: out[v] (0-based) is how often v
 * occurs (or the sum of weights[i] over the elements i equal to v); the length is
 * max(max(t) + 1, minlength). int64 without weights; with weights, float32 for float32 weights,
 * else float64 (as torch.bincount). */
pt_status pt_bincount(pt_ctx *ctx, pt_tensor *t, pt_tensor *weights, int64_t minlength,
                      pt_tensor **out);

/* For each element v of values, the 0-based index i of the first element of seq (ascending
 * along its last dim) with seq[i] >= v (right: > v), n when there is none; NaN sorts largest.
 * Comparisons are exact, also between an integer and a floating point dtype (torch compares those
 * in the promoted dtype, where an int64 beyond 2^53 rounds).
 * seq is 1-D, or has the leading dims of values (one sequence per row). int64 of values' shape. */
pt_status pt_searchsorted(pt_ctx *ctx, pt_tensor *seq, pt_tensor *values, bool right, pt_tensor **out);

/* Exact three-way order of the elements at pa (dtype da) and pb (dtype db), any mix of dtypes
 * (int64 as an integer, never rounded through a double): -1, 0 or 1; 2 when either is NaN. */
int pt_element_cmp(const void *pa, pt_dtype da, const void *pb, pt_dtype db);

/* Running maximum (minimum) along dim and the 0-based index where it was taken, as torch's
 * cummax/cummin: an element replaces the running value when it is >= it (<= for cummin), so on
 * ties the later index wins; a NaN always takes over and stays (the index of the last NaN so far).
 * Every dtype; t's shape (0-d too). Float inputs get gradients: each output's to its index. */
pt_status pt_cummax(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **values, pt_tensor **indices);
pt_status pt_cummin(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **values, pt_tensor **indices);
/* log(cumsum(exp(t))) along dim, accumulated in double by torch's log-add-exp step (stable for
 * any range; NaN propagates; +-inf as torch's). Float tensors only; differentiable. */
pt_status pt_logcumsumexp(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out);
/* Histogram of the elements of a float tensor (any shape) over bins equal bins between min and
 * max (both equal: the data's smallest and largest; still equal: widened by 1 on each side), as
 * torch.histc: t's dtype, {bins}; the bin of x is (int)((x - min) / (max - min) * bins) computed
 * in t's dtype, max in the last bin; elements outside [min, max] are not counted; a NaN is
 * counted in the first bin, as torch 1.13 does (later versions skip it; a NaN in the data's range
 * is an error in both). No gradient. */
pt_status pt_histc(pt_ctx *ctx, pt_tensor *t, int64_t bins, double min, double max, pt_tensor **out);

#endif
