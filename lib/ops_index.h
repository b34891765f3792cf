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

#endif
