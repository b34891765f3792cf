/* Ops that fit no other area: scatter_reduce (reductions scattered along a dimension).
 * Dims are 0-based here (the bindings translate); index tensors hold 1-BASED positions, as
 * everywhere in partrain (lib/ops_index.h). */
#ifndef PT_OPS_MISC_H
#define PT_OPS_MISC_H

#include "autograd.h"

typedef enum {
  PT_SCATTER_SUM,
  PT_SCATTER_PROD,
  PT_SCATTER_MEAN,
  PT_SCATTER_AMAX,
  PT_SCATTER_AMIN,
} pt_scatter_reduce_op;

/* out = copy of t where each src[p] (p over index's shape) is reduced into
 * out[... index[p] ...] (the position of p with dim replaced by index[p]), as torch.scatter_reduce
 * (PyTorch 1.13): sum, prod, mean, amax or amin of the scattered values together with t's own
 * value (include_self) or without it (then the positions written take the scattered values alone;
 * the others keep t's). mean divides by the number of values reduced (floor division for integer
 * dtypes). amax/amin propagate NaN from either side. Integer sums and products wrap as PyTorch's
 * (exact in int64); bool: sum and amax are "or", prod and amin "and", mean is refused. index is
 * int64 (or int32) with t's number of dims, at most t's size in every dim but dim and at most
 * src's in every dim; src has t's dtype. A 0-d t takes dim 0 with 0-d index and src.
 * Float tensors get gradients (as torch's: the gradient of amax/amin shared evenly between the
 * elements equal to the result, t's own counted even without include_self; prod's by division,
 * with single zeros handled exactly); t's gradient is 0 at the written positions without
 * include_self. */
pt_status pt_scatter_reduce(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src,
                            pt_scatter_reduce_op op, bool include_self, pt_tensor **out);

#endif
