/* gather/scatter, index_select/index_add_/index_copy_, masked_select/masked assignment.
 * Index tensors hold 1-based positions; every value is validated before anything is written, so
 * a bad index leaves no half-written result behind. */
#include "ops_index.h"

#include <string.h>

#include "ops_elementwise.h"
#include "ops_shape.h"

/* --- helpers --- */

static pt_status check_dim(pt_ctx *ctx, const char *fname, const pt_tensor *t, int dim) {
  if (dim < 0 || dim >= t->ndim)
    return pt_fail(ctx, PT_EARG, "%s: dimension %d out of range (tensor has %d dimensions)", fname,
                   dim + 1, t->ndim);
  return PT_OK;
}

static pt_status check_index_dtype(pt_ctx *ctx, const char *fname, const pt_tensor *index) {
  if (index->dtype != PT_INT64 && index->dtype != PT_INT32)
    return pt_fail(ctx, PT_EARG, "%s: index must be an int64 tensor, got %s", fname,
                   pt_dtype_name(index->dtype));
  return PT_OK;
}

static inline int64_t index_at(const pt_tensor *index, int64_t off) {
  const char *base = index->storage->data;
  if (index->dtype == PT_INT64) return ((const int64_t *)base)[off];
  return ((const int32_t *)base)[off];
}

/* Every index value must lie in 1..size. */
static pt_status validate_index(pt_ctx *ctx, const char *fname, const pt_tensor *index,
                                int64_t size, int dim) {
  pt_status st = check_index_dtype(ctx, fname, index);
  if (st) return st;
  const int64_t *strides[1] = {index->stride};
  pt_iter it;
  pt_iter_init(&it, index->ndim, index->shape, 1, strides);
  while (pt_iter_next(&it)) {
    int64_t v = index_at(index, index->offset + it.offset[0]);
    if (v < 1 || v > size)
      return pt_fail(ctx, PT_EARG, "%s: index %lld out of range for dimension %d of size %lld",
                     fname, (long long)v, dim + 1, (long long)size);
  }
  return PT_OK;
}

pt_status pt_check_inplace(pt_ctx *ctx, const char *fname, pt_tensor *t, pt_tensor *src) {
  if (ctx->grad_enabled && (t->requires_grad || (src && src->requires_grad)))
    return pt_fail(ctx, PT_ESTATE,
                   "%s: in-place operation on a tensor that requires grad (use pt.no_grad, "
                   "detach() or the out-of-place form)",
                   fname);
  return PT_OK;
}

/* --- gather / scatter core --- */

/* index must fit t outside dim (and src everywhere, when given) */
static pt_status check_gather_shapes(pt_ctx *ctx, const char *fname, const pt_tensor *t, int dim,
                                     const pt_tensor *index, const pt_tensor *src) {
  pt_status st = check_dim(ctx, fname, t, dim);
  if (st) return st;
  if ((st = check_index_dtype(ctx, fname, index))) return st;
  char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
  if (index->ndim != t->ndim)
    return pt_fail(ctx, PT_ESHAPE,
                   "%s: index must have as many dimensions as the tensor (%d), got %d", fname,
                   t->ndim, index->ndim);
  for (int d = 0; d < t->ndim; d++)
    if (d != dim && index->shape[d] > t->shape[d])
      return pt_fail(ctx, PT_ESHAPE,
                     "%s: index of shape %s does not fit the tensor of shape %s in dimension %d",
                     fname, pt_shape_format(index->ndim, index->shape, a, sizeof a),
                     pt_shape_format(t->ndim, t->shape, b, sizeof b), d + 1);
  if (src) {
    if (src->dtype != t->dtype)
      return pt_fail(ctx, PT_EARG, "%s: src must have the tensor's dtype (%s), got %s", fname,
                     pt_dtype_name(t->dtype), pt_dtype_name(src->dtype));
    if (src->ndim != index->ndim)
      return pt_fail(ctx, PT_ESHAPE, "%s: src must have as many dimensions as index (%d), got %d",
                     fname, index->ndim, src->ndim);
    for (int d = 0; d < src->ndim; d++)
      if (index->shape[d] > src->shape[d])
        return pt_fail(ctx, PT_ESHAPE,
                       "%s: index of shape %s does not fit src of shape %s in dimension %d", fname,
                       pt_shape_format(index->ndim, index->shape, a, sizeof a),
                       pt_shape_format(src->ndim, src->shape, b, sizeof b), d + 1);
  }
  return validate_index(ctx, fname, index, t->shape[dim], dim);
}

typedef enum { SC_SET, SC_ADD, SC_GATHER } sc_mode;

/* One loop for the family, over index's shape. t is the tensor addressed through the index
 * (dst for scatter, source for gather); other is the per-position operand (src for scatter,
 * out for gather), NULL meaning the scalar value. Assumes shapes and values were validated. */
/* The positions of index row by row (its last dimension in a loop, the others through an
 * odometer): element by element through pt_iter and memcpy, gather and scatter_add ran 6-19x
 * slower than PyTorch. Rows run in order (scatter_add with repeated indices adds in the same
 * order as before). */
#define SG_ROW(TYPE, BODY)                                                  \
  do {                                                                      \
    TYPE *tt = (TYPE *)tp;                                                  \
    TYPE *oo = (TYPE *)(other ? op : vbuf);                                 \
    for (int64_t j = 0; j < len; j++) {                                     \
      int64_t v = index_at(index, ib + j * il) - 1;                         \
      TYPE *tq = tt + tb + j * tl + v * dstride;                            \
      TYPE *oq = oo + (other ? ob + j * ol : 0);                            \
      BODY;                                                                 \
    }                                                                       \
  } while (0)

static void scatter_gather_loop(pt_tensor *t, int dim, const pt_tensor *index, pt_tensor *other,
                                double value, sc_mode mode) {
  int nd = index->ndim, last = nd - 1;
  int64_t n = pt_tensor_numel(index);
  if (n == 0) return;
  size_t es = pt_dtype_size(t->dtype);
  char *tp = pt_tensor_data(t), *op = other ? pt_tensor_data(other) : NULL; /* at their offsets */
  _Alignas(8) char vbuf[8];
  pt_write_from_double(vbuf, t->dtype, value);
  int64_t dstride = t->stride[dim];
  int64_t len = nd ? index->shape[last] : 1;
  int64_t il = nd ? index->stride[last] : 0, tl = nd && last != dim ? t->stride[last] : 0;
  int64_t ol = nd && other ? other->stride[last] : 0;
  int64_t idx[PT_MAX_DIMS] = {0};
  int64_t ib = index->offset, tb = 0, ob = 0; /* index_at takes offsets from its storage */
  bool f32 = t->dtype == PT_FLOAT32, f64 = t->dtype == PT_FLOAT64;
  for (int64_t row = 0; row < n / len; row++) {
    if (mode == SC_ADD && f32) SG_ROW(float, *tq += *oq);
    else if (mode == SC_ADD && f64) SG_ROW(double, *tq += *oq);
    else if (mode != SC_ADD && es == 4 && mode == SC_GATHER) SG_ROW(uint32_t, *oq = *tq);
    else if (mode != SC_ADD && es == 4) SG_ROW(uint32_t, *tq = *oq);
    else if (mode != SC_ADD && es == 8 && mode == SC_GATHER) SG_ROW(uint64_t, *oq = *tq);
    else if (mode != SC_ADD && es == 8) SG_ROW(uint64_t, *tq = *oq);
    else
      for (int64_t j = 0; j < len; j++) { /* other sizes and integer adds */
        int64_t v = index_at(index, ib + j * il) - 1;
        char *tq = tp + (tb + j * tl + v * dstride) * (int64_t)es;
        char *oq = other ? op + (ob + j * ol) * (int64_t)es : vbuf;
        if (mode == SC_GATHER) memcpy(oq, tq, es);
        else if (mode == SC_SET) memcpy(tq, oq, es);
        else pt_write_from_double(tq, t->dtype, pt_read_as_double(tq, t->dtype) + pt_read_as_double(oq, t->dtype));
      }
    for (int k = last - 1; k >= 0; k--) { /* the next row */
      ib += index->stride[k];
      tb += k == dim ? 0 : t->stride[k];
      if (other) ob += other->stride[k];
      if (++idx[k] < index->shape[k]) break;
      ib -= idx[k] * index->stride[k];
      tb -= k == dim ? 0 : idx[k] * t->stride[k];
      if (other) ob -= idx[k] * other->stride[k];
      idx[k] = 0;
    }
  }
}

/* A gradient for src (shape of src) from grad_out: gather at index, zero where index does not
 * reach (src may be larger than index). */
static pt_status gather_into_shape(pt_ctx *ctx, pt_tensor *g, int dim, pt_tensor *index,
                                   const pt_tensor *like, pt_tensor **out) {
  pt_tensor *r;
  pt_status st = pt_tensor_zeros(ctx, g->dtype, like->ndim, like->shape, &r);
  if (st) return st;
  pt_tensor *view = pt_tensor_retain(r);
  for (int d = 0; d < r->ndim && !st; d++) {
    if (index->shape[d] == r->shape[d]) continue;
    pt_tensor *v;
    st = pt_narrow_raw(ctx, view, d, 0, index->shape[d], &v);
    pt_tensor_release(view);
    view = st ? NULL : v;
  }
  if (!st) scatter_gather_loop(g, dim, index, view, 0, SC_GATHER);
  pt_tensor_release(view);
  if (st) {
    pt_tensor_release(r);
    return st;
  }
  *out = r;
  return PT_OK;
}

/* --- gather --- */

static pt_status gather_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *in = node->inputs[0], *z;
  pt_status st = pt_tensor_zeros(ctx, g->dtype, in->ndim, in->shape, &z);
  if (st) return st;
  scatter_gather_loop(z, (int)node->ints[0], node->saved[0], g, 0, SC_ADD);
  gin[0] = z;
  return PT_OK;
}

pt_status pt_gather(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor **out) {
  pt_status st = check_gather_shapes(ctx, "gather", t, dim, index, NULL);
  if (st) return st;
  pt_tensor *r;
  if ((st = pt_tensor_empty(ctx, t->dtype, index->ndim, index->shape, &r))) return st;
  scatter_gather_loop(t, dim, index, r, 0, SC_GATHER);
  pt_node *node;
  if ((st = pt_autograd_record(ctx, r, "GatherBackward", gather_backward, 1, &t, &node))) {
    pt_tensor_release(r);
    return st;
  }
  if (node) {
    pt_node_save(node, 0, pt_tensor_retain(index));
    node->ints[0] = dim;
    node->n_ints = 1;
  }
  *out = r;
  return PT_OK;
}

/* --- scatter / scatter_add --- */

/* scatter: grad_t is grad with the overwritten positions zeroed; grad_src gathers grad */
static pt_status scatter_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  int dim = (int)node->ints[0];
  bool add = node->ints[1] != 0;
  pt_tensor *index = node->saved[0];
  pt_status st = PT_OK;
  if (node->needs_grad[0]) {
    if (add) {
      gin[0] = pt_tensor_retain(g);
    } else {
      if ((st = pt_tensor_clone_raw(ctx, g, &gin[0]))) return st;
      scatter_gather_loop(gin[0], dim, index, NULL, 0, SC_SET);
    }
  }
  if (node->n_inputs > 1 && node->needs_grad[1])
    st = gather_into_shape(ctx, g, dim, index, node->inputs[1], &gin[1]);
  return st;
}

static pt_status scatter_out(pt_ctx *ctx, const char *fname, pt_tensor *t, int dim,
                             pt_tensor *index, pt_tensor *src, double value, sc_mode mode,
                             pt_tensor **out) {
  pt_status st = check_gather_shapes(ctx, fname, t, dim, index, src);
  if (st) return st;
  pt_tensor *r;
  if ((st = pt_tensor_clone_raw(ctx, t, &r))) return st;
  scatter_gather_loop(r, dim, index, src, value, mode);
  pt_node *node;
  pt_tensor *inputs[2] = {t, src};
  st = pt_autograd_record(ctx, r, mode == SC_ADD ? "ScatterAddBackward" : "ScatterBackward",
                          scatter_backward, src ? 2 : 1, inputs, &node);
  if (st) {
    pt_tensor_release(r);
    return st;
  }
  if (node) {
    pt_node_save(node, 0, pt_tensor_retain(index));
    node->ints[0] = dim;
    node->ints[1] = mode == SC_ADD;
    node->n_ints = 2;
  }
  *out = r;
  return PT_OK;
}

pt_status pt_scatter(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src,
                     double value, pt_tensor **out) {
  return scatter_out(ctx, "scatter", t, dim, index, src, value, SC_SET, out);
}

pt_status pt_scatter_add(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src,
                         pt_tensor **out) {
  if (!src) return pt_fail(ctx, PT_EARG, "scatter_add: src must be a tensor");
  return scatter_out(ctx, "scatter_add", t, dim, index, src, 0, SC_ADD, out);
}

pt_status pt_scatter_(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src,
                      double value) {
  pt_status st = pt_check_inplace(ctx, "scatter_", t, src);
  if (!st) st = pt_check_no_internal_overlap(ctx, "scatter_", t);
  if (!st) st = check_gather_shapes(ctx, "scatter_", t, dim, index, src);
  if (st) return st;
  scatter_gather_loop(t, dim, index, src, value, SC_SET);
  atomic_fetch_add(&t->storage->version, 1);
  return PT_OK;
}

pt_status pt_scatter_add_(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src) {
  if (!src) return pt_fail(ctx, PT_EARG, "scatter_add_: src must be a tensor");
  pt_status st = pt_check_inplace(ctx, "scatter_add_", t, src);
  if (!st) st = pt_check_no_internal_overlap(ctx, "scatter_add_", t);
  if (!st) st = check_gather_shapes(ctx, "scatter_add_", t, dim, index, src);
  if (st) return st;
  scatter_gather_loop(t, dim, index, src, 0, SC_ADD);
  atomic_fetch_add(&t->storage->version, 1);
  return PT_OK;
}

/* --- index_select / index_add_ / index_copy_ --- */

static pt_status check_index_1d(pt_ctx *ctx, const char *fname, const pt_tensor *t, int dim,
                                const pt_tensor *index) {
  pt_status st = check_dim(ctx, fname, t, dim);
  if (st) return st;
  if ((st = check_index_dtype(ctx, fname, index))) return st;
  if (index->ndim > 1)
    return pt_fail(ctx, PT_ESHAPE, "%s: index must be 1-D, got %d dimensions", fname, index->ndim);
  return validate_index(ctx, fname, index, t->shape[dim], dim);
}

/* i-th entry (0-based position) of a 0-d or 1-D index, as a 0-based position */
static int64_t index_entry(const pt_tensor *index, int64_t i) {
  return index_at(index, index->offset + (index->ndim ? i * index->stride[0] : 0)) - 1;
}

/* For each i: f(t.select(dim, index[i]), other.select(dim, i)). other has t's shape except along
 * dim. The slices are walked in place (no view objects); contiguous same-dtype slices are copied
 * with one memcpy. */
typedef enum { IX_COPY_FROM_T, IX_ADD_TO_T, IX_COPY_TO_T } ix_mode;

static bool slice_contiguous(int nd, const int64_t *shape, const int64_t *stride) {
  int64_t s = 1;
  for (int d = nd - 1; d >= 0; d--) {
    if (shape[d] != 1 && stride[d] != s) return false;
    s *= shape[d];
  }
  return true;
}

static void index_loop(pt_tensor *t, int dim, const pt_tensor *index, pt_tensor *other,
                       ix_mode mode) {
  int nd = 0;
  int64_t shape[PT_MAX_DIMS], ts[PT_MAX_DIMS], os[PT_MAX_DIMS];
  for (int d = 0; d < t->ndim; d++)
    if (d != dim) {
      shape[nd] = t->shape[d];
      ts[nd] = t->stride[d];
      os[nd++] = other->stride[d];
    }
  int64_t n = pt_tensor_numel(index), m = pt_shape_numel(nd, shape);
  size_t tes = pt_dtype_size(t->dtype), oes = pt_dtype_size(other->dtype);
  char *tp = t->storage->data, *op = other->storage->data;
  bool same = t->dtype == other->dtype;
  bool contiguous = same && slice_contiguous(nd, shape, ts) && slice_contiguous(nd, shape, os);
  bool block = contiguous && mode != IX_ADD_TO_T;
  /* index_add_ of contiguous float slices (index_select's and embedding-style backwards) adds
   * whole slices in one loop */
  bool add_block = contiguous && mode == IX_ADD_TO_T && (t->dtype == PT_FLOAT32 || t->dtype == PT_FLOAT64);
  size_t bytes = (size_t)m * tes; /* a slice */
  const int64_t *strides[2] = {ts, os};
  /* loop invariants in locals: the slice loops below store through float pointers, which the
   * compiler must otherwise assume may change these fields (reloading them made the copy
   * loop of a 1-D index_select 50% slower) */
  const int64_t toff = t->offset, tdim = t->stride[dim], ooff = other->offset, odim = other->stride[dim];
  const char *ixp = index->storage->data;
  const int64_t ixoff = index->offset, ixs = index->ndim ? index->stride[0] : 0;
  const bool ix64 = index->dtype == PT_INT64;
  for (int64_t i = 0; i < n; i++) {
    int64_t e = ix64 ? ((const int64_t *)ixp)[ixoff + i * ixs] : ((const int32_t *)ixp)[ixoff + i * ixs];
    char *tb = tp + (toff + (e - 1) * tdim) * (int64_t)tes;
    char *ob = op + (ooff + i * odim) * (int64_t)oes;
    if (block) {
      if (mode == IX_COPY_FROM_T) memcpy(ob, tb, bytes);
      else memmove(tb, ob, bytes);
      continue;
    }
    if (add_block) {
      if (t->dtype == PT_FLOAT32)
        for (int64_t k = 0; k < m; k++) ((float *)tb)[k] += ((const float *)ob)[k];
      else
        for (int64_t k = 0; k < m; k++) ((double *)tb)[k] += ((const double *)ob)[k];
      continue;
    }
    pt_iter it;
    pt_iter_init(&it, nd, shape, 2, strides);
    while (pt_iter_next(&it)) {
      char *tq = tb + it.offset[0] * (int64_t)tes, *oq = ob + it.offset[1] * (int64_t)oes;
      switch (mode) {
      case IX_COPY_FROM_T:
        if (same)
          memcpy(oq, tq, tes);
        else
          pt_write_from_double(oq, other->dtype, pt_read_as_double(tq, t->dtype));
        break;
      case IX_COPY_TO_T:
        if (same)
          memcpy(tq, oq, tes);
        else
          pt_write_from_double(tq, t->dtype, pt_read_as_double(oq, other->dtype));
        break;
      case IX_ADD_TO_T:
        if (same && t->dtype == PT_FLOAT32)
          *(float *)tq += *(const float *)oq;
        else if (same && t->dtype == PT_FLOAT64)
          *(double *)tq += *(const double *)oq;
        else
          pt_write_from_double(tq, t->dtype,
                               pt_read_as_double(tq, t->dtype) + pt_read_as_double(oq, other->dtype));
        break;
      }
    }
  }
}

static pt_status index_select_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *in = node->inputs[0], *z;
  pt_status st = pt_tensor_zeros(ctx, g->dtype, in->ndim, in->shape, &z);
  if (st) return st;
  index_loop(z, (int)node->ints[0], node->saved[0], g, IX_ADD_TO_T);
  gin[0] = z;
  return PT_OK;
}

pt_status pt_index_select(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor **out) {
  pt_status st = check_index_1d(ctx, "index_select", t, dim, index);
  if (st) return st;
  int64_t shape[PT_MAX_DIMS];
  memcpy(shape, t->shape, sizeof shape);
  shape[dim] = pt_tensor_numel(index);
  pt_tensor *r;
  if ((st = pt_tensor_empty(ctx, t->dtype, t->ndim, shape, &r))) return st;
  index_loop(t, dim, index, r, IX_COPY_FROM_T);
  pt_node *node = NULL;
  st = pt_autograd_record(ctx, r, "IndexSelectBackward", index_select_backward, 1, &t, &node);
  if (st) {
    pt_tensor_release(r);
    return st;
  }
  if (node) {
    pt_node_save(node, 0, pt_tensor_retain(index));
    node->ints[0] = dim;
    node->n_ints = 1;
  }
  *out = r;
  return PT_OK;
}

pt_status pt_index_add_(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src) {
  pt_status st = pt_check_inplace(ctx, "index_add_", t, src);
  if (!st) st = pt_check_no_internal_overlap(ctx, "index_add_", t);
  if (!st) st = check_index_1d(ctx, "index_add_", t, dim, index);
  if (st) return st;
  int64_t shape[PT_MAX_DIMS];
  memcpy(shape, t->shape, sizeof shape);
  shape[dim] = pt_tensor_numel(index);
  if (src->ndim != t->ndim || memcmp(src->shape, shape, (size_t)t->ndim * sizeof(int64_t)) != 0) {
    char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "index_add_: src must have shape %s, got %s",
                   pt_shape_format(t->ndim, shape, a, sizeof a),
                   pt_shape_format(src->ndim, src->shape, b, sizeof b));
  }
  index_loop(t, dim, index, src, IX_ADD_TO_T);
  atomic_fetch_add(&t->storage->version, 1);
  return PT_OK;
}

pt_status pt_index_fill_(pt_ctx *ctx, const char *fname, pt_tensor *t, int dim, pt_tensor *index,
                         double value) {
  if (!(ctx->grad_enabled && t->requires_grad && pt_dtype_is_floating(t->dtype))) {
    pt_status st = check_index_1d(ctx, fname, t, dim, index);
    return st ? st : pt_index_copy_(ctx, t, dim, index, NULL, value);
  }
  pt_status st = pt_inplace_check(ctx, fname, t);
  if (!st) st = check_index_1d(ctx, fname, t, dim, index);
  if (st) return st;
  int64_t shape[PT_MAX_DIMS];
  for (int d = 0; d < t->ndim; d++) shape[d] = d == dim ? t->shape[d] : 1;
  pt_tensor *mask;
  if ((st = pt_tensor_zeros(ctx, PT_BOOL, t->ndim, shape, &mask))) return st;
  bool *m = pt_tensor_data(mask);
  int64_t n = pt_tensor_numel(index);
  for (int64_t i = 0; i < n; i++) m[index_entry(index, i)] = true;
  st = pt_masked_fill_(ctx, t, mask, value);
  pt_tensor_release(mask);
  return st;
}

pt_status pt_index_copy_(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src,
                         double value) {
  pt_status st = pt_check_inplace(ctx, "index_copy_", t, src);
  if (!st) st = pt_check_no_internal_overlap(ctx, "index_copy_", t);
  if (!st) st = check_index_1d(ctx, "index_copy_", t, dim, index);
  if (st) return st;
  int64_t shape[PT_MAX_DIMS];
  memcpy(shape, t->shape, sizeof shape);
  shape[dim] = pt_tensor_numel(index);
  pt_tensor *s;
  if (src) {
    int nb;
    int64_t bshape[PT_MAX_DIMS];
    if (pt_broadcast_shapes(ctx, "index_copy_", t->ndim, shape, src->ndim, src->shape, &nb,
                            bshape) ||
        nb != t->ndim || memcmp(bshape, shape, (size_t)nb * sizeof(int64_t)) != 0) {
      char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
      return pt_fail(ctx, PT_ESHAPE, "index_copy_: src of shape %s cannot be broadcast to %s",
                     pt_shape_format(src->ndim, src->shape, a, sizeof a),
                     pt_shape_format(t->ndim, shape, b, sizeof b));
    }
    if ((st = pt_expand_raw(ctx, src, t->ndim, shape, &s))) return st;
  } else {
    pt_tensor *v;
    if ((st = pt_tensor_scalar(ctx, t->dtype, value, &v))) return st;
    st = pt_expand_raw(ctx, v, t->ndim, shape, &s);
    pt_tensor_release(v);
    if (st) return st;
  }
  index_loop(t, dim, index, s, IX_COPY_TO_T);
  pt_tensor_release(s);
  atomic_fetch_add(&t->storage->version, 1);
  return PT_OK;
}

/* --- masks --- */

static pt_status check_mask(pt_ctx *ctx, const char *fname, const pt_tensor *mask) {
  if (mask->dtype != PT_BOOL && mask->dtype != PT_UINT8)
    return pt_fail(ctx, PT_EARG, "%s: mask must be a bool tensor, got %s", fname,
                   pt_dtype_name(mask->dtype));
  return PT_OK;
}

static pt_status masked_select_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *in = node->inputs[0], *mask = node->saved[0], *z;
  int nb = (int)node->ints[0];
  const int64_t *bshape = node->ints + 1;
  pt_status st = pt_tensor_zeros(ctx, g->dtype, nb, bshape, &z);
  if (st) return st;
  int64_t mstride[PT_MAX_DIMS];
  pt_broadcast_strides(mask, nb, bshape, mstride);
  const int64_t *strides[2] = {z->stride, mstride};
  pt_iter it;
  pt_iter_init(&it, nb, bshape, 2, strides);
  const uint8_t *mp = pt_tensor_data(mask);
  char *zp = z->storage->data;
  size_t es = pt_dtype_size(z->dtype);
  int64_t k = 0;
  while (pt_iter_next(&it))
    if (mp[it.offset[1]]) pt_write_from_double(zp + it.offset[0] * (int64_t)es, z->dtype, pt_tensor_get_flat(g, k++));
  st = pt_sum_to_shape(ctx, z, in->ndim, in->shape, &gin[0]);
  pt_tensor_release(z);
  return st;
}

pt_status pt_masked_select(pt_ctx *ctx, pt_tensor *t, pt_tensor *mask, pt_tensor **out) {
  pt_status st = check_mask(ctx, "masked_select", mask);
  if (st) return st;
  int nb;
  int64_t bshape[PT_MAX_DIMS], tstride[PT_MAX_DIMS], mstride[PT_MAX_DIMS];
  if ((st = pt_broadcast_shapes(ctx, "masked_select", t->ndim, t->shape, mask->ndim, mask->shape,
                                &nb, bshape)))
    return st;
  pt_broadcast_strides(t, nb, bshape, tstride);
  pt_broadcast_strides(mask, nb, bshape, mstride);
  const int64_t *strides[2] = {tstride, mstride};
  const uint8_t *mp = pt_tensor_data(mask);
  pt_iter it;
  pt_iter_init(&it, nb, bshape, 2, strides);
  int64_t count = 0;
  while (pt_iter_next(&it)) count += mp[it.offset[1]] != 0;
  pt_tensor *r;
  if ((st = pt_tensor_empty(ctx, t->dtype, 1, &count, &r))) return st;
  size_t es = pt_dtype_size(t->dtype);
  const char *tp = pt_tensor_data(t);
  char *rp = r->storage->data;
  pt_iter_init(&it, nb, bshape, 2, strides);
  while (pt_iter_next(&it))
    if (mp[it.offset[1]]) {
      memcpy(rp, tp + it.offset[0] * (int64_t)es, es);
      rp += es;
    }
  pt_node *node;
  if ((st = pt_autograd_record(ctx, r, "MaskedSelectBackward", masked_select_backward, 1, &t, &node))) {
    pt_tensor_release(r);
    return st;
  }
  if (node) {
    pt_node_save(node, 0, pt_tensor_retain(mask));
    node->ints[0] = nb;
    for (int d = 0; d < nb; d++) node->ints[1 + d] = bshape[d];
    node->n_ints = 1 + nb;
  }
  *out = r;
  return PT_OK;
}

pt_status pt_masked_assign_(pt_ctx *ctx, const char *fname, pt_tensor *t, pt_tensor *mask,
                            pt_tensor *src, double value) {
  pt_status st = pt_check_inplace(ctx, fname, t, src);
  if (!st) st = check_mask(ctx, fname, mask);
  if (st) return st;
  int nb;
  int64_t bshape[PT_MAX_DIMS], mstride[PT_MAX_DIMS];
  if (pt_broadcast_shapes(ctx, fname, t->ndim, t->shape, mask->ndim, mask->shape, &nb, bshape) ||
      nb != t->ndim || memcmp(bshape, t->shape, (size_t)nb * sizeof(int64_t)) != 0) {
    char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "%s: mask of shape %s does not match tensor of shape %s", fname,
                   pt_shape_format(mask->ndim, mask->shape, a, sizeof a),
                   pt_shape_format(t->ndim, t->shape, b, sizeof b));
  }
  pt_broadcast_strides(mask, t->ndim, t->shape, mstride);
  const int64_t *strides[2] = {t->stride, mstride};
  const uint8_t *mp = pt_tensor_data(mask);
  pt_iter it;
  bool sequential = false;
  if (src && pt_tensor_numel(src) == 1) {
    value = pt_tensor_get_flat(src, 0);
  } else if (src) {
    int64_t count = 0;
    pt_iter_init(&it, t->ndim, t->shape, 2, strides);
    while (pt_iter_next(&it)) count += mp[it.offset[1]] != 0;
    if (count != pt_tensor_numel(src))
      return pt_fail(ctx, PT_ESHAPE, "%s: mask selects %lld elements but the value has %lld",
                     fname, (long long)count, (long long)pt_tensor_numel(src));
    sequential = true;
  }
  char *tp = pt_tensor_data(t);
  size_t es = pt_dtype_size(t->dtype);
  char vbuf[8];
  pt_write_from_double(vbuf, t->dtype, value);
  int64_t k = 0;
  pt_iter_init(&it, t->ndim, t->shape, 2, strides);
  while (pt_iter_next(&it)) {
    if (!mp[it.offset[1]]) continue;
    char *p = tp + it.offset[0] * (int64_t)es;
    if (sequential)
      pt_write_from_double(p, t->dtype, pt_tensor_get_flat(src, k++));
    else
      memcpy(p, vbuf, es);
  }
  atomic_fetch_add(&t->storage->version, 1);
  return PT_OK;
}
