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

#endif
