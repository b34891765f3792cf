/* Views, reshaping, joining and splitting with autograd.
 * Dims are 0-based and already normalised (the Lua bindings translate from 1-based ones), except
 * where a comment says otherwise. Outputs are new references; inputs are borrowed. Views share
 * storage with their input; each op records a node (pt_autograd_record) when a gradient is needed,
 * so other areas can call these from forward and backward code alike. */
#ifndef PT_OPS_SHAPE_H
#define PT_OPS_SHAPE_H

#include "autograd.h"

/* view: shares storage; shape may contain one -1. Works on non-contiguous tensors whenever the
 * strides allow it (PyTorch's rule), else fails naming reshape/contiguous. */
pt_status pt_view(pt_ctx *ctx, pt_tensor *t, int ndim, const int64_t *shape, pt_tensor **out);
/* reshape: a view when possible, otherwise a contiguous copy. */
pt_status pt_reshape(pt_ctx *ctx, pt_tensor *t, int ndim, const int64_t *shape, pt_tensor **out);
/* Strides for viewing (ndim, shape, stride) as new_shape without a copy; false when impossible. */
bool pt_view_strides(int ndim, const int64_t *shape, const int64_t *stride, int new_ndim,
                     const int64_t *new_shape, int64_t *new_stride);

pt_status pt_transpose(pt_ctx *ctx, pt_tensor *t, int d0, int d1, pt_tensor **out);
/* t(): transpose of a 2-D tensor; 0-D and 1-D tensors come back as a view of themselves. */
pt_status pt_t(pt_ctx *ctx, pt_tensor *t, pt_tensor **out);
/* perm has t->ndim entries, a permutation of 0..ndim-1 */
pt_status pt_permute(pt_ctx *ctx, pt_tensor *t, const int *perm, pt_tensor **out);
/* start is 0-based */
pt_status pt_narrow(pt_ctx *ctx, pt_tensor *t, int dim, int64_t start, int64_t length, pt_tensor **out);
/* index is 0-based; removes the dimension */
pt_status pt_select(pt_ctx *ctx, pt_tensor *t, int dim, int64_t index, pt_tensor **out);
/* dim < 0: every size-1 dimension; a dim whose size is not 1 is left alone (PyTorch) */
pt_status pt_squeeze(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out);
/* dim in 0..ndim */
pt_status pt_unsqueeze(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out);
/* expand to (ndim, shape) with broadcasting rules; -1 keeps a size. Backward sums. */
pt_status pt_expand(pt_ctx *ctx, pt_tensor *t, int ndim, const int64_t *shape, pt_tensor **out);
/* flatten dims start..end (inclusive) into one; a 0-d tensor becomes shape {1} */
pt_status pt_flatten(pt_ctx *ctx, pt_tensor *t, int start, int end, pt_tensor **out);
/* contiguous: t itself (a new reference) when already contiguous, else a copy */
pt_status pt_contiguous(pt_ctx *ctx, pt_tensor *t, pt_tensor **out);
/* clone: always a contiguous copy, gradient passes through */
pt_status pt_clone(pt_ctx *ctx, pt_tensor *t, pt_tensor **out);
/* repeat (repeat_tensor in Lua, where `repeat` is a keyword): tile t reps[i] times along each dim; nreps >= t->ndim (leading new dims) */
pt_status pt_repeat(pt_ctx *ctx, pt_tensor *t, int nreps, const int64_t *reps, pt_tensor **out);

/* Joining: all tensors have the same ndim and sizes except along dim; dtypes are promoted.
 * Any number of inputs (the graph is a tree of nodes over views of the output). */
pt_status pt_cat(pt_ctx *ctx, int n, pt_tensor *const *ts, int dim, pt_tensor **out);
/* A 1-D tensor of size 0 next to others is left out of cat (PyTorch's legacy rule), so a cat's
 * dim is checked against the ndim of its first other tensor (this, ts[0]'s when all are such). */
int pt_cat_ref_ndim(int n, pt_tensor *const *ts);
/* stack: same shapes, a new dimension dim in 0..ndim */
pt_status pt_stack(pt_ctx *ctx, int n, pt_tensor *const *ts, int dim, pt_tensor **out);

/* Splitting into narrow views. pt_split_count tells how many pieces a split of `size` elements
 * into pieces of `split_size` gives (the last one may be shorter; at least 1). outs must have room
 * for that many; on failure nothing is left in outs. */
int64_t pt_split_count(int64_t size, int64_t split_size);
pt_status pt_split(pt_ctx *ctx, pt_tensor *t, int64_t split_size, int dim, pt_tensor **outs);
/* sizes must add up to t->shape[dim]; outs has n slots */
pt_status pt_split_sizes(pt_ctx *ctx, pt_tensor *t, int n, const int64_t *sizes, int dim,
                         pt_tensor **outs);
/* chunk into at most `chunks` pieces of ceil(size/chunks) (a size-0 dim gives one empty piece);
 * *n_out pieces are written to outs, which needs room for min(chunks, max(size, 1)) entries */
#define PT_CHUNK_EMPTY_MAX (1 << 20) /* chunk of a dimension of size 0: that many pieces at most */
pt_status pt_chunk(pt_ctx *ctx, pt_tensor *t, int64_t chunks, int dim, int *n_out, pt_tensor **outs);

/* Strided views (the backward writes grad into zeros of the input's shape; unfold's windows may
 * overlap, so there it adds). start/offset are 0-based, step >= 1.
 * slice: count elements start, start+step, ... along dim (t[{{first, last, step}}]). */
pt_status pt_slice(pt_ctx *ctx, pt_tensor *t, int dim, int64_t start, int64_t count, int64_t step,
                   pt_tensor **out);
pt_status pt_slice_raw(pt_ctx *ctx, pt_tensor *t, int dim, int64_t start, int64_t count,
                       int64_t step, pt_tensor **out);
/* diagonal (torch.diagonal): dims d1 and d2 (distinct) removed, their diagonal appended last;
 * offset > 0 above the main diagonal, < 0 below. */
pt_status pt_diagonal(pt_ctx *ctx, pt_tensor *t, int64_t offset, int d1, int d2, pt_tensor **out);
/* unfold (Tensor.unfold): dim becomes the (size(dim) - size) / step + 1 windows, and a last dim
 * of `size` holds each window. A 0-d tensor gives shape {size} (size 0 or 1). */
pt_status pt_unfold(pt_ctx *ctx, pt_tensor *t, int dim, int64_t size, int64_t step, pt_tensor **out);

/* as_strided: a view of t's storage with the given sizes, strides (>= 0) and storage offset (in
 * elements, 0-based here; 1-based in Lua, as t:storage_offset()), all within the storage.
 * Backward as PyTorch's (locations the output repeats add up, locations the input repeats share
 * their gradient), with second derivatives. */
pt_status pt_as_strided(pt_ctx *ctx, pt_tensor *t, int ndim, const int64_t *size,
                        const int64_t *stride, int64_t offset, pt_tensor **out);
/* t becomes view, a view of t made by one of the view ops above (squeeze_, transpose_, ...: the
 * same tensor object with the view's shape, strides and offset, and with autograd the view's
 * history, whose input is t as it was). view keeps no history. Refused in grad mode for a leaf
 * that requires grad and for a view of one, as PyTorch's in-place ops; fname names the caller. */
pt_status pt_adopt_view(pt_ctx *ctx, const char *fname, pt_tensor *t, pt_tensor *view);

#endif
