/* Resampling along one dimension with precomputed taps: the kernels under
 * nn.functional.interpolate's separable modes (lua/partrain/resample.lua computes the source
 * positions and weights as PyTorch does; the data pass is here, one pass per dimension). Dims are
 * 0-based here; tap indices are 0-based too (internal op, not user-facing). */
#ifndef PT_OPS_RESAMPLE_H
#define PT_OPS_RESAMPLE_H

#include "autograd.h"

/* out has x's shape with dim's size replaced by m = idx->shape[0]; for every output position i
 * along dim: out[.., i, ..] = sum over k < K of x[.., idx[i][k], ..] * w[i][k], the products
 * rounded to x's dtype and added in k order (idx int64 {m, K}, 0-based, within dim's size; w
 * float64 {m, K}, each weight rounded to x's dtype first). x is float32 or float64; the
 * gradient of x scatters each output gradient back through the same taps. */
pt_status pt_taps_along(pt_ctx *ctx, pt_tensor *x, int dim, pt_tensor *idx, pt_tensor *w, pt_tensor **out);

#endif
