/* Gather/scatter family, index_select, masked selection and assignment.
 * Index tensors are int64 (int32 is accepted too) and hold 1-BASED positions, as in Torch7 and
 * everywhere in partrain's Lua API, so a tensor of labels or of argmax results passes straight
 * through. Dims are 0-based (the bindings translate). An index value out of range fails with the
 * function, the value and the size: "gather: index 5 out of range for dimension 2 of size 4".
 * Out-of-place ops record autograd nodes; in-place ones (name ending in _) refuse tensors that
 * would need a graph (grad mode on and t or src requiring grad). */
#ifndef PT_OPS_INDEX_H
#define PT_OPS_INDEX_H

#include "autograd.h"
#include "ops_elementwise.h" /* pt_number */

/* out[...i_dim...] = t[...index[i]...]; index is 1-D (or 0-d: then the dim is kept with size 1) */
pt_status pt_index_select(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor **out);
/* out has index's shape; out[i][j] = t[index[i][j]][j] for dim 0 (PyTorch gather) */
pt_status pt_gather(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor **out);
/* out = copy of t with out[index[i][j]][j] = src[i][j] (dim 0); src NULL means the scalar value */
pt_status pt_scatter(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src,
                     double value, pt_tensor **out);
/* out = copy of t with src added at the indexed positions (duplicates accumulate) */
pt_status pt_scatter_add(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src,
                         pt_tensor **out);
/* 1-D copy of the elements of t where mask (bool or uint8, broadcast with t) is true */
pt_status pt_masked_select(pt_ctx *ctx, pt_tensor *t, pt_tensor *mask, pt_tensor **out);

/* In place (bump t->version). */
pt_status pt_scatter_(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src,
                      double value);
pt_status pt_scatter_add_(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src);
/* t.select(dim, index[i]) += src.select(dim, i); index 1-D */
pt_status pt_index_add_(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src);
/* t.select(dim, index[i]) = src broadcast to the index_select shape (src NULL: value) */
pt_status pt_index_copy_(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src,
                         double value);
/* t.select(dim, index[i]) = value for every i; index 1-D. Differentiable: when t is part of a
 * graph the fill is masked_fill_ with a bool mask along dim (the filled slices get no gradient,
 * through views too); fname names the caller in messages. */
pt_status pt_index_fill_(pt_ctx *ctx, const char *fname, pt_tensor *t, int dim, pt_tensor *index,
                         double value);
/* Where mask (same shape as t after broadcasting the mask) is true: src NULL or one element:
 * fill with value / that element; otherwise src must have exactly as many elements as the mask
 * has true entries and they are written in order (masked_scatter). fname names the caller. */
pt_status pt_masked_assign_(pt_ctx *ctx, const char *fname, pt_tensor *t, pt_tensor *mask,
                            pt_tensor *src, double value);

/* The same with the value as Lua gives it (pt_number): a Lua integer goes into an int64 tensor
 * exactly beyond 2^53 (into int32 / uint8 as its low bits, into float32 rounded once), as
 * PyTorch's integer scalars; the double forms above take it through a double (2^53 + 1 became
 * 2^53). Values are not range-checked here (the bindings check them: lpt_check_value). A
 * one-element int64 src is exact too, and so are the values of an int64 src written in order. */
pt_status pt_scatter_number(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src,
                            pt_number value, pt_tensor **out);
pt_status pt_scatter_number_(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src,
                             pt_number value);
pt_status pt_index_copy_number_(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index,
                                pt_tensor *src, pt_number value);
pt_status pt_index_fill_number_(pt_ctx *ctx, const char *fname, pt_tensor *t, int dim,
                                pt_tensor *index, pt_number value);
pt_status pt_masked_assign_number_(pt_ctx *ctx, const char *fname, pt_tensor *t, pt_tensor *mask,
                                   pt_tensor *src, pt_number value);
/* Every element of t (any strides) set to value, without autograd (pt_tensor_fill with the
 * number rules above; bumps t's version as it does). For slice assignment, t[{...}] = value. */
pt_status pt_fill_number_raw(pt_ctx *ctx, pt_tensor *t, pt_number value);
/* Element i (flat, row-major over any strides) of t as a number: an int64 element exact. */
pt_number pt_tensor_get_flat_number(const pt_tensor *t, int64_t i);

/* Refuse an in-place write that autograd cannot follow; fname names the caller. */
pt_status pt_check_inplace(pt_ctx *ctx, const char *fname, pt_tensor *t, pt_tensor *src);

/* --- advanced indexing: PyTorch's x[idx1, :, idx2] ---
 * A key's numbers and ranges are applied first (a view), then its tensor entries index that
 * view: integer tensors (int64/int32, 1-based, negative from the end) take one dim each, a k-D
 * bool/uint8 mask takes k dims (its true positions, as nonzero() gives them), a 0-d mask adds a
 * dim of size 1 (true) or 0 (false). The integer tensors and masks broadcast together to a shape
 * B. Where they index adjacent dims, B replaces those dims in the result; where other dims come
 * between them, B comes first (PyTorch's rule). The view is described twice: in t's row-major
 * element order (offset/stride, what a gradient of t's shape is addressed with) and in t's
 * storage (soffset/sstride); dim[] names t's dim (0-based) for messages. */
typedef struct pt_index_view {
  int ndim;
  int64_t shape[PT_MAX_DIMS];
  int64_t offset, stride[PT_MAX_DIMS];   /* row-major positions in t, from 0 */
  int64_t soffset, sstride[PT_MAX_DIMS]; /* storage positions */
  int dim[PT_MAX_DIMS];
} pt_index_view;

typedef struct pt_index_entry {
  pt_tensor *index; /* int64/int32 positions or a bool/uint8 mask (borrowed) */
  int dim;          /* the view's dim where it starts (entries in increasing order) */
} pt_index_entry;

#define PT_INDEX_MAX_ENTRIES (2 * PT_MAX_DIMS)

/* all of t */
void pt_index_view_of(const pt_tensor *t, pt_index_view *v);
/* out = t[view][entries] (a copy). With autograd it is an index_select of t's flattened view at
 * the row-major positions (IndexSelectBackward: repeated positions accumulate; second
 * derivatives too). fname names the caller in messages. */
pt_status pt_index_get(pt_ctx *ctx, const char *fname, pt_tensor *t, const pt_index_view *v, int n,
                       const pt_index_entry *e, pt_tensor **out);
/* t[view][entries] = values (broadcast to the indexed shape; NULL: the number value), in place
 * (t, whatever its strides; the storage's version moves) or into a copy (*out). values has t's
 * dtype (the callers convert or refuse). accumulate adds (repeated positions sum); otherwise the
 * last write of a position wins and only that value gets a gradient. Gradients: t gets g with
 * the written positions zeroed (all of g with accumulate), values g at its positions (summed
 * over broadcast dims). In place on a view with autograd, the write goes through copy_ (the
 * base's history follows, CopySlices). */
pt_status pt_index_put(pt_ctx *ctx, const char *fname, pt_tensor *t, const pt_index_view *v, int n,
                       const pt_index_entry *e, pt_tensor *values, pt_number value, bool accumulate,
                       pt_tensor **out);
pt_status pt_index_put_(pt_ctx *ctx, const char *fname, pt_tensor *t, const pt_index_view *v,
                        int n, const pt_index_entry *e, pt_tensor *values, pt_number value,
                        bool accumulate);
/* put_: source's elements (as many as index has, t's dtype) written at the 1-based row-major
 * positions of index (negative from the end) in t, as if t were contiguous; accumulate adds. */
pt_status pt_put(pt_ctx *ctx, pt_tensor *t, pt_tensor *index, pt_tensor *source, bool accumulate,
                 pt_tensor **out);
pt_status pt_put_(pt_ctx *ctx, pt_tensor *t, pt_tensor *index, pt_tensor *source, bool accumulate);
/* masked_scatter: the first k elements of source (k = true entries of mask, row-major) written
 * where mask is true. In place, mask broadcasts to t's shape; out of place, t and mask broadcast
 * together. Gradients: t's zero where written, source's the written positions' (zero beyond k). */
pt_status pt_masked_scatter(pt_ctx *ctx, pt_tensor *t, pt_tensor *mask, pt_tensor *source,
                            pt_tensor **out);
pt_status pt_masked_scatter_(pt_ctx *ctx, pt_tensor *t, pt_tensor *mask, pt_tensor *source);
/* Does an int64/int32 index hold a value below 1 (a negative position)? */
bool pt_index_has_negative(const pt_tensor *index);

#endif
