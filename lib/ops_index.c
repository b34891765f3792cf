/* gather/scatter, index_select/index_add_/index_copy_, masked_select/masked assignment.
 * Index tensors hold 1-based positions; every value is validated before anything is written, so
 * a bad index leaves no half-written result behind. */
#include "ops_index.h"

#include <stdio.h>
#include <string.h>

#include "ops_elementwise.h"
#include "ops_shape.h"
#include "parallel.h"

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
  if (pt_tensor_is_contiguous(index)) { /* one pass that vectorises; the slow one names a bad value */
    int64_t n = pt_tensor_numel(index);
    int64_t lo = 1, hi = 1;
    if (index->dtype == PT_INT64) {
      const int64_t *p = pt_tensor_data(index);
      for (int64_t i = 0; i < n; i++) {
        lo = p[i] < lo ? p[i] : lo;
        hi = p[i] > hi ? p[i] : hi;
      }
    } else {
      const int32_t *p = pt_tensor_data(index);
      int32_t lo32 = 1, hi32 = 1;
      for (int64_t i = 0; i < n; i++) {
        lo32 = p[i] < lo32 ? p[i] : lo32;
        hi32 = p[i] > hi32 ? p[i] : hi32;
      }
      lo = lo32;
      hi = hi32;
    }
    if (lo >= 1 && hi <= size) return PT_OK;
  }
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

/* v as an element of dtype dt at p. A Lua integer (or an int64 element) is converted from the
 * integer, as PyTorch's integer scalars are: exact into int64 (beyond 2^53, where a double is
 * not), low bits into int32 / uint8, rounded once into float32 (through a double, 2^60 + 2^36 + 1
 * would round twice, to 2^60 instead of 2^60 + 2^37). */
static void write_number(void *p, pt_dtype dt, pt_number v) {
  if (!v.is_int) {
    pt_write_from_double(p, dt, v.d);
    return;
  }
  switch (dt) {
  case PT_INT64: memcpy(p, &v.i, sizeof v.i); break;
  case PT_INT32: {
    int32_t x = (int32_t)(uint32_t)(uint64_t)v.i;
    memcpy(p, &x, sizeof x);
    break;
  }
  case PT_UINT8: *(uint8_t *)p = (uint8_t)(uint64_t)v.i; break;
  case PT_FLOAT32: {
    float f = (float)v.i;
    memcpy(p, &f, sizeof f);
    break;
  }
  default: pt_write_from_double(p, dt, v.d); break; /* float64: (double)v.i, rounded once; bool */
  }
}

pt_number pt_tensor_get_flat_number(const pt_tensor *t, int64_t i) {
  if (t->dtype != PT_INT64) return pt_number_float(pt_tensor_get_flat(t, i));
  int64_t off = t->offset, v;
  for (int d = t->ndim - 1; d >= 0; d--) {
    off += i % t->shape[d] * t->stride[d];
    i /= t->shape[d];
  }
  memcpy(&v, (const char *)t->storage->data + off * (int64_t)sizeof v, sizeof v);
  return pt_number_int(v);
}

pt_status pt_fill_number_raw(pt_ctx *ctx, pt_tensor *t, pt_number value) {
  if (!value.is_int || (t->dtype != PT_INT64 && t->dtype != PT_FLOAT32)) /* where a double does */
    return pt_tensor_fill(ctx, t, value.d);
  _Alignas(8) char vbuf[8];
  write_number(vbuf, t->dtype, value);
  size_t es = pt_dtype_size(t->dtype);
  char *tp = t->storage->data;
  const int64_t *strides[1] = {t->stride};
  pt_iter it;
  pt_iter_init(&it, t->ndim, t->shape, 1, strides);
  while (pt_iter_next(&it)) memcpy(tp + (t->offset + it.offset[0]) * (int64_t)es, vbuf, es);
  atomic_fetch_add(&t->storage->version, 1);
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
 * out for gather), NULL meaning the scalar value. Assumes shapes and values were validated.
 * The positions of index go row by row (its last dimension in a loop, the others through an
 * odometer), with the element type, the index dtype and the operation fixed per loop (the
 * index's dtype tested per element kept gather 5x slower than PyTorch). Work is split over the
 * intra-op threads so that each element of t is written by one thread in the serial order:
 * gather splits anything (it writes a fresh out); scatter along the last dim splits rows
 * (each row of index writes its own row of t), along another dim splits columns (a column j
 * of index only reaches positions of t whose last coordinate is j), rows in order within it,
 * so scatter_add with repeated indices adds in the same order as one thread does. */
typedef struct sg_job {
  pt_tensor *t;
  const pt_tensor *index;
  pt_tensor *other;
  int dim;
  sc_mode mode;
  bool split_cols; /* the parallel items are columns of index (else rows) */
  int64_t nrows, len;
  _Alignas(8) char vbuf[8];
} sg_job;

#define SG_LOOP(IT, TYPE, BODY)                                                        \
  do {                                                                                 \
    const IT *ixs_ = (const IT *)index->storage->data;                                 \
    TYPE *tt = (TYPE *)tp;                                                             \
    TYPE *oo = (TYPE *)(other ? op : j->vbuf);                                         \
    for (int64_t row = r0; row < r1; row++) {                                          \
      const IT *ix = ixs_ + ib;                                                        \
      TYPE *trow = tt + tb;                                                            \
      TYPE *orow = oo + ob;                                                            \
      if (il == 1 && ol == 1)                                                          \
        for (int64_t c = c0; c < c1; c++) {                                            \
          TYPE *tq = trow + c * tl + (int64_t)(ix[c] - 1) * dstride;                   \
          TYPE *oq = orow + c;                                                         \
          BODY;                                                                        \
        }                                                                              \
      else                                                                             \
        for (int64_t c = c0; c < c1; c++) {                                            \
          TYPE *tq = trow + c * tl + (int64_t)(ix[c * il] - 1) * dstride;              \
          TYPE *oq = orow + c * ol;                                                    \
          BODY;                                                                        \
        }                                                                              \
      for (int k = last - 1; k >= 0; k--) { /* the next row */                         \
        ib += index->stride[k];                                                        \
        tb += k == dim ? 0 : t->stride[k];                                             \
        if (other) ob += other->stride[k];                                             \
        if (++idx[k] < index->shape[k]) break;                                         \
        ib -= idx[k] * index->stride[k];                                               \
        tb -= k == dim ? 0 : idx[k] * t->stride[k];                                    \
        if (other) ob -= idx[k] * other->stride[k];                                    \
        idx[k] = 0;                                                                    \
      }                                                                                \
    }                                                                                  \
  } while (0)

#define SG_INDEX(TYPE, BODY)                                        \
  do {                                                              \
    if (index->dtype == PT_INT64) SG_LOOP(int64_t, TYPE, BODY);     \
    else SG_LOOP(int32_t, TYPE, BODY);                              \
  } while (0)

/* rows [r0, r1) and columns [c0, c1) of index */
static void sg_part(const sg_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  pt_tensor *t = j->t, *other = j->other;
  const pt_tensor *index = j->index;
  int dim = j->dim, nd = index->ndim, last = nd - 1;
  sc_mode mode = j->mode;
  size_t es = pt_dtype_size(t->dtype);
  char *tp = pt_tensor_data(t), *op = other ? pt_tensor_data(other) : NULL; /* at their offsets */
  const int64_t dstride = t->stride[dim];
  const int64_t il = nd ? index->stride[last] : 0, tl = nd && last != dim ? t->stride[last] : 0;
  const int64_t ol = nd && other ? other->stride[last] : 0;
  int64_t idx[PT_MAX_DIMS] = {0};
  int64_t ib = index->offset, tb = 0, ob = 0; /* index offsets are from its storage */
  int64_t rest = r0;
  for (int k = last - 1; k >= 0; k--) { /* the odometer at row r0 */
    idx[k] = rest % index->shape[k];
    rest /= index->shape[k];
    ib += idx[k] * index->stride[k];
    tb += k == dim ? 0 : idx[k] * t->stride[k];
    if (other) ob += idx[k] * other->stride[k];
  }
  bool f32 = t->dtype == PT_FLOAT32, f64 = t->dtype == PT_FLOAT64;
  if (mode == SC_ADD && f32) SG_INDEX(float, *tq += *oq);
  else if (mode == SC_ADD && f64) SG_INDEX(double, *tq += *oq);
  /* integers add exactly (int64 beyond 2^53), wrapping as PyTorch's; src has t's dtype */
  else if (mode == SC_ADD && t->dtype == PT_INT64) SG_INDEX(uint64_t, *tq += *oq);
  else if (mode == SC_ADD && t->dtype == PT_INT32) SG_INDEX(uint32_t, *tq += *oq);
  else if (mode == SC_ADD && t->dtype == PT_UINT8) SG_INDEX(uint8_t, *tq += *oq);
  else if (mode == SC_GATHER && es == 4) SG_INDEX(uint32_t, *oq = *tq);
  else if (mode == SC_GATHER && es == 8) SG_INDEX(uint64_t, *oq = *tq);
  else if (mode == SC_GATHER && es == 1) SG_INDEX(uint8_t, *oq = *tq);
  else if (mode == SC_SET && es == 4) SG_INDEX(uint32_t, *tq = *oq);
  else if (mode == SC_SET && es == 8) SG_INDEX(uint64_t, *tq = *oq);
  else if (mode == SC_SET && es == 1) SG_INDEX(uint8_t, *tq = *oq);
  else /* bool adds (any true stays true) */
    for (int64_t row = r0; row < r1; row++) {
      for (int64_t c = c0; c < c1; c++) {
        int64_t v = index_at(index, ib + c * il) - 1;
        char *tq = tp + (tb + c * tl + v * dstride) * (int64_t)es;
        char *oq = other ? op + (ob + c * ol) * (int64_t)es : (char *)j->vbuf;
        pt_write_from_double(tq, t->dtype,
                             pt_read_as_double(tq, t->dtype) + pt_read_as_double(oq, t->dtype));
      }
      for (int k = last - 1; k >= 0; k--) {
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

static void sg_chunk(void *arg, int64_t b, int64_t e, int tid) {
  (void)tid;
  const sg_job *j = arg;
  if (j->split_cols) sg_part(j, 0, j->nrows, b, e);
  else sg_part(j, b, e, 0, j->len);
}

/* below this many positions a call runs on one thread */
#define NO_VALUE ((pt_number){false, 0, 0.0}) /* the loop's value when other is given, or 0 */
#define SG_PARALLEL_MIN 32768

static void scatter_gather_loop(const pt_ctx *ctx, pt_tensor *t, int dim, const pt_tensor *index,
                                pt_tensor *other, pt_number value, sc_mode mode) {
  int nd = index->ndim;
  int64_t n = pt_tensor_numel(index);
  if (n == 0) return;
  sg_job j = {.t = t, .index = index, .other = other, .dim = dim, .mode = mode};
  write_number(j.vbuf, t->dtype, value);
  j.len = nd ? index->shape[nd - 1] : 1;
  j.nrows = n / j.len;
  /* a src sharing t's storage keeps the serial order */
  bool free_order = mode == SC_GATHER || !other || other->storage != t->storage;
  if (n < SG_PARALLEL_MIN || !free_order || pt_parallel_threads(ctx) < 2) {
    sg_part(&j, 0, j.nrows, 0, j.len);
    return;
  }
  bool rows_ok = mode == SC_GATHER || dim == nd - 1, cols_ok = mode == SC_GATHER || dim != nd - 1;
  if (rows_ok && (j.nrows >= 2 * pt_parallel_threads(ctx) || !cols_ok)) {
    int64_t grain = SG_PARALLEL_MIN / 2 / j.len;
    pt_parallel_for(ctx, j.nrows, grain < 1 ? 1 : grain, sg_chunk, &j);
  } else {
    j.split_cols = true;
    int64_t grain = SG_PARALLEL_MIN / 2 / j.nrows;
    pt_parallel_for(ctx, j.len, grain < 16 ? 16 : grain, sg_chunk, &j);
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
  if (!st) scatter_gather_loop(ctx, g, dim, index, view, NO_VALUE, SC_GATHER);
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
  scatter_gather_loop(ctx, z, (int)node->ints[0], node->saved[0], g, NO_VALUE, SC_ADD);
  gin[0] = z;
  return PT_OK;
}

pt_status pt_gather(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor **out) {
  pt_status st = check_gather_shapes(ctx, "gather", t, dim, index, NULL);
  if (st) return st;
  pt_tensor *r;
  if ((st = pt_tensor_empty(ctx, t->dtype, index->ndim, index->shape, &r))) return st;
  scatter_gather_loop(ctx, t, dim, index, r, NO_VALUE, SC_GATHER);
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

/* scatter_backward with recorded ops, for a create_graph pass (it runs with grad mode on): g
 * scattered with 0 at the overwritten positions for t, g gathered at the index for src, with
 * zeros appended where src is larger than the index. Both are linear in g. */
static pt_status scatter_backward_graph(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  int dim = (int)node->ints[0];
  pt_tensor *index = node->saved[0];
  pt_status st = PT_OK;
  if (node->needs_grad[0])
    st = node->ints[1] ? (gin[0] = pt_tensor_retain(g), PT_OK)
                       : pt_scatter_number(ctx, g, dim, index, NULL, pt_number_float(0), &gin[0]);
  if (st || node->n_inputs < 2 || !node->needs_grad[1]) return st;
  const pt_tensor *like = node->inputs[1];
  pt_tensor *r;
  if ((st = pt_gather(ctx, g, dim, index, &r))) return st;
  for (int d = 0; d < like->ndim && !st; d++) {
    if (r->shape[d] == like->shape[d]) continue;
    int64_t zs[PT_MAX_DIMS];
    memcpy(zs, r->shape, sizeof zs);
    zs[d] = like->shape[d] - r->shape[d];
    pt_tensor *z, *c = NULL;
    if (!(st = pt_tensor_zeros(ctx, g->dtype, r->ndim, zs, &z))) {
      pt_tensor *parts[2] = {r, z};
      st = pt_cat(ctx, 2, parts, d, &c);
      pt_tensor_release(z);
    }
    pt_tensor_release(r);
    r = c;
  }
  if (st) return st;
  gin[1] = r;
  return PT_OK;
}

/* scatter: grad_t is grad with the overwritten positions zeroed; grad_src gathers grad */
static pt_status scatter_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  if (ctx->grad_enabled) return scatter_backward_graph(ctx, node, g, gin);
  int dim = (int)node->ints[0];
  bool add = node->ints[1] != 0;
  pt_tensor *index = node->saved[0];
  pt_status st = PT_OK;
  if (node->needs_grad[0]) {
    if (add) {
      gin[0] = pt_tensor_retain(g);
    } else {
      if ((st = pt_tensor_clone_raw(ctx, g, &gin[0]))) return st;
      scatter_gather_loop(ctx, gin[0], dim, index, NULL, NO_VALUE, SC_SET);
    }
  }
  if (node->n_inputs > 1 && node->needs_grad[1])
    st = gather_into_shape(ctx, g, dim, index, node->inputs[1], &gin[1]);
  return st;
}

static pt_status scatter_out(pt_ctx *ctx, const char *fname, pt_tensor *t, int dim,
                             pt_tensor *index, pt_tensor *src, pt_number value, sc_mode mode,
                             pt_tensor **out) {
  pt_status st = check_gather_shapes(ctx, fname, t, dim, index, src);
  if (st) return st;
  pt_tensor *r;
  if ((st = pt_tensor_clone_raw(ctx, t, &r))) return st;
  scatter_gather_loop(ctx, r, dim, index, src, value, mode);
  pt_node *node;
  pt_tensor *inputs[2] = {t, src};
  st = pt_autograd_record(ctx, r, mode == SC_ADD ? "ScatterAddBackward" : "ScatterBackward",
                          scatter_backward, src ? 2 : 1, inputs, &node);
  if (st) {
    pt_tensor_release(r);
    return st;
  }
  if (node) {
    node->backward_differentiable = true; /* create_graph: scatter_backward_graph */
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
  return scatter_out(ctx, "scatter", t, dim, index, src, pt_number_float(value), SC_SET, out);
}

pt_status pt_scatter_number(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src,
                            pt_number value, pt_tensor **out) {
  return scatter_out(ctx, "scatter", t, dim, index, src, value, SC_SET, out);
}

pt_status pt_scatter_add(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src,
                         pt_tensor **out) {
  if (!src) return pt_fail(ctx, PT_EARG, "scatter_add: src must be a tensor");
  return scatter_out(ctx, "scatter_add", t, dim, index, src, NO_VALUE, SC_ADD, out);
}

/* A src (or index) sharing t's storage is read before t is written (scatter_ of t into itself
 * read values it had just overwritten: t:scatter_(1, {2, 3, 1}, t) gave {0, 0, 0}); PyTorch
 * refuses the overlap. *copy: the copy made, NULL when none was needed. */
static pt_status read_before_write(pt_ctx *ctx, const pt_tensor *t, pt_tensor **src, pt_tensor **copy) {
  *copy = NULL;
  if (!*src || (*src)->storage != t->storage) return PT_OK;
  pt_status st = pt_tensor_clone_raw(ctx, *src, copy);
  if (!st) *src = *copy;
  return st;
}

pt_status pt_scatter_(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src,
                      double value) {
  return pt_scatter_number_(ctx, t, dim, index, src, pt_number_float(value));
}

/* scatter_ / scatter_add_ into t, src (NULL: value) and index read before the write when they
 * share t's storage */
static pt_status scatter_into(pt_ctx *ctx, const char *fname, pt_tensor *t, int dim, pt_tensor *index,
                              pt_tensor *src, pt_number value, sc_mode mode) {
  pt_status st = pt_check_inplace(ctx, fname, t, src);
  if (!st) st = pt_check_no_internal_overlap(ctx, fname, t);
  if (!st) st = check_gather_shapes(ctx, fname, t, dim, index, src);
  pt_tensor *copy = NULL, *icopy = NULL;
  if (!st) st = read_before_write(ctx, t, &src, &copy);
  if (!st) st = read_before_write(ctx, t, &index, &icopy);
  if (st) {
    pt_tensor_release(copy);
    return st;
  }
  scatter_gather_loop(ctx, t, dim, index, src, value, mode);
  pt_tensor_release(copy);
  pt_tensor_release(icopy);
  atomic_fetch_add(&t->storage->version, 1);
  return PT_OK;
}

pt_status pt_scatter_number_(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src,
                             pt_number value) {
  return scatter_into(ctx, "scatter_", t, dim, index, src, value, SC_SET);
}

pt_status pt_scatter_add_(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src) {
  if (!src) return pt_fail(ctx, PT_EARG, "scatter_add_: src must be a tensor");
  return scatter_into(ctx, "scatter_add_", t, dim, index, src, NO_VALUE, SC_ADD);
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

typedef enum { IX_COPY_FROM_T, IX_ADD_TO_T, IX_COPY_TO_T } ix_mode;

static bool slice_contiguous(int nd, const int64_t *shape, const int64_t *stride) {
  int64_t s = 1;
  for (int d = nd - 1; d >= 0; d--) {
    if (shape[d] != 1 && stride[d] != s) return false;
    s *= shape[d];
  }
  return true;
}

/* The general loop: slice by slice, element by element through pt_iter (dtype conversions,
 * integer adds, slices whose trailing dims are not one contiguous run). */
static void index_loop_general(pt_tensor *t, int dim, const pt_tensor *index, pt_tensor *other,
                               ix_mode mode) {
  int nd = 0;
  int64_t shape[PT_MAX_DIMS], ts[PT_MAX_DIMS], os[PT_MAX_DIMS];
  for (int d = 0; d < t->ndim; d++)
    if (d != dim) {
      shape[nd] = t->shape[d];
      ts[nd] = t->stride[d];
      os[nd++] = other->stride[d];
    }
  int64_t n = pt_tensor_numel(index);
  size_t tes = pt_dtype_size(t->dtype), oes = pt_dtype_size(other->dtype);
  char *tp = t->storage->data, *op = other->storage->data;
  bool same = t->dtype == other->dtype;
  const int64_t *strides[2] = {ts, os};
  const int64_t toff = t->offset, tdim = t->stride[dim], ooff = other->offset, odim = other->stride[dim];
  /* whole contiguous slices of one dtype copy as blocks (memmove: src may overlap t) */
  bool block = same && mode != IX_ADD_TO_T && slice_contiguous(nd, shape, ts) &&
               slice_contiguous(nd, shape, os);
  size_t bytes = (size_t)pt_shape_numel(nd, shape) * tes;
  for (int64_t i = 0; i < n; i++) {
    int64_t e = index_entry(index, i);
    char *tb = tp + (toff + e * tdim) * (int64_t)tes;
    char *ob = op + (ooff + i * odim) * (int64_t)oes;
    if (block) {
      if (mode == IX_COPY_FROM_T) memcpy(ob, tb, bytes);
      else memmove(tb, ob, bytes);
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
        else if (same && t->dtype == PT_INT64) /* exact beyond 2^53, wrapping as PyTorch's */
          *(uint64_t *)tq += *(const uint64_t *)oq;
        else if (same && t->dtype == PT_INT32)
          *(uint32_t *)tq += *(const uint32_t *)oq;
        else if (same && t->dtype == PT_UINT8)
          *(uint8_t *)tq += *(const uint8_t *)oq;
        else
          pt_write_from_double(tq, t->dtype,
                               pt_read_as_double(tq, t->dtype) + pt_read_as_double(oq, other->dtype));
        break;
      }
    }
  }
}

/* The typed loop, for one dtype whose dims after `dim` form one contiguous run of `inner`
 * elements in both t and other (any strides before dim: the `outer` positions, walked by an
 * odometer). Element-wise adds keep the serial order per element of t: index entries in order.
 * Work splits over the threads by outer positions (disjoint parts of t), else by ranges of the
 * run, else (index_select only) by index entries. */
typedef struct ix_job {
  pt_tensor *t, *other;
  ix_mode mode;
  const int64_t *pos; /* 0-based positions, n of them */
  int64_t n, inner, outer, tdim, odim;
  int nouter;
  int64_t oshape[PT_MAX_DIMS], ostride_t[PT_MAX_DIMS], ostride_o[PT_MAX_DIMS];
  int split; /* 0 outer, 1 run, 2 index entries */
} ix_job;

#define IX_ELEMS(TYPE, BODY)                                    \
  do {                                                          \
    TYPE *tt_ = (TYPE *)tbase, *oo_ = (TYPE *)obase;            \
    if (j->inner == 1)                                          \
      for (int64_t i = i0; i < i1; i++) {                       \
        TYPE *tq = tt_ + pos[i] * tdim, *oq = oo_ + i * odim;   \
        BODY;                                                   \
      }                                                         \
    else                                                        \
      for (int64_t i = i0; i < i1; i++) {                       \
        TYPE *tq = tt_ + pos[i] * tdim, *oq = oo_ + i * odim;   \
        for (int64_t k = k0; k < k1; k++) {                     \
          BODY;                                                 \
          tq++;                                                 \
          oq++;                                                 \
        }                                                       \
      }                                                         \
  } while (0)

static void ix_part(const ix_job *j, int64_t o0, int64_t o1, int64_t k0, int64_t k1, int64_t i0,
                    int64_t i1) {
  const int64_t *pos = j->pos;
  const int64_t tdim = j->tdim, odim = j->odim;
  size_t es = pt_dtype_size(j->t->dtype);
  int64_t idx[PT_MAX_DIMS] = {0}, rest = o0, tb = 0, ob = 0;
  for (int d = j->nouter - 1; d >= 0; d--) {
    idx[d] = rest % j->oshape[d];
    rest /= j->oshape[d];
    tb += idx[d] * j->ostride_t[d];
    ob += idx[d] * j->ostride_o[d];
  }
  char *tp = pt_tensor_data(j->t), *op = pt_tensor_data(j->other);
  size_t bytes = (size_t)(k1 - k0) * es;
  for (int64_t o = o0; o < o1; o++) {
    char *tbase = tp + (tb + k0) * (int64_t)es, *obase = op + (ob + k0) * (int64_t)es;
    if (j->inner > 1 && j->mode != IX_ADD_TO_T && bytes >= 64) {
      for (int64_t i = i0; i < i1; i++) {
        char *tq = tbase + pos[i] * tdim * (int64_t)es, *oq = obase + i * odim * (int64_t)es;
        if (j->mode == IX_COPY_FROM_T) memcpy(oq, tq, bytes);
        else memmove(tq, oq, bytes);
      }
    } else if (j->mode == IX_ADD_TO_T) {
      if (j->t->dtype == PT_FLOAT32) IX_ELEMS(float, *tq += *oq);
      else IX_ELEMS(double, *tq += *oq);
    } else if (j->mode == IX_COPY_FROM_T) {
      if (es == 4) IX_ELEMS(uint32_t, *oq = *tq);
      else if (es == 8) IX_ELEMS(uint64_t, *oq = *tq);
      else IX_ELEMS(uint8_t, *oq = *tq);
    } else {
      if (es == 4) IX_ELEMS(uint32_t, *tq = *oq);
      else if (es == 8) IX_ELEMS(uint64_t, *tq = *oq);
      else IX_ELEMS(uint8_t, *tq = *oq);
    }
    for (int d = j->nouter - 1; d >= 0; d--) {
      tb += j->ostride_t[d];
      ob += j->ostride_o[d];
      if (++idx[d] < j->oshape[d]) break;
      tb -= idx[d] * j->ostride_t[d];
      ob -= idx[d] * j->ostride_o[d];
      idx[d] = 0;
    }
  }
}

static void ix_chunk(void *arg, int64_t b, int64_t e, int tid) {
  (void)tid;
  const ix_job *j = arg;
  if (j->split == 0) ix_part(j, b, e, 0, j->inner, 0, j->n);
  else if (j->split == 1) ix_part(j, 0, j->outer, b, e, 0, j->n);
  else ix_part(j, 0, j->outer, 0, j->inner, b, e);
}

/* dims dim+1.. of t (with t's shape) laid out as one run of stride 1 */
static bool trailing_run(const pt_tensor *t, const int64_t *stride, int dim) {
  int64_t s = 1;
  for (int d = t->ndim - 1; d > dim; d--) {
    if (t->shape[d] != 1 && stride[d] != s) return false;
    s *= t->shape[d];
  }
  return true;
}

#define IX_PARALLEL_MIN 32768 /* elements moved below which a call runs on one thread */

/* For each i: f(t.select(dim, index[i]), other.select(dim, i)). other has t's shape except along
 * dim. Fails only when out of memory. */
static pt_status index_loop(pt_ctx *ctx, pt_tensor *t, int dim, const pt_tensor *index,
                            pt_tensor *other, ix_mode mode) {
  int64_t n = pt_tensor_numel(index);
  bool typed = t->dtype == other->dtype &&
               (mode != IX_ADD_TO_T || t->dtype == PT_FLOAT32 || t->dtype == PT_FLOAT64) &&
               trailing_run(t, t->stride, dim) && trailing_run(t, other->stride, dim);
  /* a src sharing t's storage (index_copy_, index_add_) keeps the general path's order */
  if (!typed || n == 0 || (mode != IX_COPY_FROM_T && other->storage == t->storage)) {
    index_loop_general(t, dim, index, other, mode);
    return PT_OK;
  }
  ix_job j = {.t = t, .other = other, .mode = mode, .n = n, .inner = 1, .outer = 1,
              .tdim = t->stride[dim], .odim = other->stride[dim], .nouter = dim};
  for (int d = dim + 1; d < t->ndim; d++) j.inner *= t->shape[d];
  for (int d = 0; d < dim; d++) {
    j.oshape[d] = t->shape[d];
    j.ostride_t[d] = t->stride[d];
    j.ostride_o[d] = other->stride[d];
    j.outer *= t->shape[d];
  }
  if (j.outer == 0 || j.inner == 0) return PT_OK; /* empty slices */
  int64_t *pos = pt_alloc(ctx, (size_t)n * sizeof *pos);
  if (!pos) return PT_ENOMEM;
  for (int64_t i = 0; i < n; i++) pos[i] = index_entry(index, i);
  j.pos = pos;
  /* t's offset goes into the data pointers (pt_tensor_data); the rest is relative */
  int64_t work = j.outer * j.inner * n;
  int threads = pt_parallel_threads(ctx);
  if (work < IX_PARALLEL_MIN || threads < 2) {
    ix_part(&j, 0, j.outer, 0, j.inner, 0, n);
  } else if (j.outer >= 2 * threads) {
    int64_t grain = IX_PARALLEL_MIN / 2 / (j.inner * n);
    pt_parallel_for(ctx, j.outer, grain < 1 ? 1 : grain, ix_chunk, &j);
  } else if (j.inner >= 64 * threads) {
    j.split = 1;
    int64_t grain = IX_PARALLEL_MIN / 2 / (j.outer * n);
    pt_parallel_for(ctx, j.inner, grain < 64 ? 64 : grain, ix_chunk, &j);
  } else if (mode == IX_COPY_FROM_T) {
    j.split = 2;
    int64_t grain = IX_PARALLEL_MIN / 2 / (j.outer * j.inner);
    pt_parallel_for(ctx, n, grain < 1 ? 1 : grain, ix_chunk, &j);
  } else {
    ix_part(&j, 0, j.outer, 0, j.inner, 0, n);
  }
  pt_free(pos);
  return PT_OK;
}

/* The gradient of index_select is zeros with g's slices added at the index. When the input is a
 * leaf whose gradient does not exist yet (the default accumulation would copy ours into a new
 * .grad), that new .grad is zeroed and added into directly: the same additions on the same zeros,
 * without a second dense buffer and copy. */
static pt_status index_select_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *in = node->inputs[0], *z;
  bool fresh = false;
  pt_tensor *target = g->dtype == in->dtype ? pt_autograd_grad_target(ctx, in, &fresh) : NULL;
  if (target && fresh) {
    memset(pt_tensor_data(target), 0, (size_t)pt_tensor_numel(target) * pt_dtype_size(target->dtype));
    pt_status st = index_loop(ctx, target, (int)node->ints[0], node->saved[0], g, IX_ADD_TO_T);
    atomic_fetch_add(&target->storage->version, 1);
    return st;
  }
  pt_status st = pt_tensor_zeros(ctx, g->dtype, in->ndim, in->shape, &z);
  if (st) return st;
  if ((st = index_loop(ctx, z, (int)node->ints[0], node->saved[0], g, IX_ADD_TO_T))) {
    pt_tensor_release(z);
    return st;
  }
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
  if ((st = index_loop(ctx, t, dim, index, r, IX_COPY_FROM_T))) {
    pt_tensor_release(r);
    return st;
  }
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
  /* a src (or index) sharing t's storage is read before t is written, as scatter_'s */
  pt_tensor *copy = NULL, *icopy = NULL;
  if (!(st = read_before_write(ctx, t, &src, &copy)) && !(st = read_before_write(ctx, t, &index, &icopy)))
    st = index_loop(ctx, t, dim, index, src, IX_ADD_TO_T);
  pt_tensor_release(copy);
  pt_tensor_release(icopy);
  if (st) return st;
  atomic_fetch_add(&t->storage->version, 1);
  return PT_OK;
}

pt_status pt_index_fill_(pt_ctx *ctx, const char *fname, pt_tensor *t, int dim, pt_tensor *index,
                         double value) {
  return pt_index_fill_number_(ctx, fname, t, dim, index, pt_number_float(value));
}

static pt_status index_copy_any(pt_ctx *ctx, const char *fname, pt_tensor *t, int dim,
                                pt_tensor *index, pt_tensor *src, pt_number value);

/* index_fill's index with -k read as size + 1 - k (torch's index_fill takes negative positions,
 * -1 the last); a new reference: index itself when it has none in -size..-1, or NULL (no memory) */
static pt_tensor *index_from_end(pt_ctx *ctx, const pt_tensor *t, int dim, pt_tensor *index) {
  if (dim < 0 || dim >= (t->ndim ? t->ndim : 1) || (index->dtype != PT_INT64 && index->dtype != PT_INT32) ||
      index->ndim > 1)
    return pt_tensor_retain(index); /* check_index_1d names the problem */
  int64_t size = t->ndim ? t->shape[dim] : 1, n = pt_tensor_numel(index);
  bool any = false;
  for (int64_t i = 0; i < n && !any; i++) {
    int64_t v = index_entry(index, i) + 1;
    any = v < 0 && v >= -size;
  }
  if (!any) return pt_tensor_retain(index);
  pt_tensor *r;
  if (pt_tensor_empty(ctx, PT_INT64, 1, &n, &r)) return NULL;
  int64_t *p = pt_tensor_data(r);
  for (int64_t i = 0; i < n; i++) {
    int64_t v = index_entry(index, i) + 1;
    p[i] = v < 0 && v >= -size ? v + size + 1 : v;
  }
  return r;
}

static pt_status index_fill_positions(pt_ctx *ctx, const char *fname, pt_tensor *t, int dim,
                                      pt_tensor *index, pt_number value);

pt_status pt_index_fill_number_(pt_ctx *ctx, const char *fname, pt_tensor *t, int dim,
                                pt_tensor *index, pt_number value) {
  pt_tensor *idx = index_from_end(ctx, t, dim, index);
  if (!idx) return PT_ENOMEM;
  pt_status st = index_fill_positions(ctx, fname, t, dim, idx, value);
  pt_tensor_release(idx);
  return st;
}

static pt_status index_fill_positions(pt_ctx *ctx, const char *fname, pt_tensor *t, int dim,
                                      pt_tensor *index, pt_number value) {
  if (!(ctx->grad_enabled && t->requires_grad && pt_dtype_is_floating(t->dtype))) {
    pt_status st = check_index_1d(ctx, fname, t, dim, index);
    return st ? st : index_copy_any(ctx, fname, t, dim, index, NULL, value);
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
  st = pt_masked_fill_number_(ctx, t, mask, value);
  pt_tensor_release(mask);
  return st;
}

pt_status pt_index_copy_(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src,
                         double value) {
  return pt_index_copy_number_(ctx, t, dim, index, src, pt_number_float(value));
}

pt_status pt_index_copy_number_(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index,
                                pt_tensor *src, pt_number value) {
  return index_copy_any(ctx, "index_copy_", t, dim, index, src, value);
}

/* index_copy_, and index_fill_ (src NULL) outside autograd: errors name fname */
static pt_status index_copy_any(pt_ctx *ctx, const char *fname, pt_tensor *t, int dim,
                                pt_tensor *index, pt_tensor *src, pt_number value) {
  pt_status st = pt_check_inplace(ctx, fname, t, src);
  if (!st) st = pt_check_no_internal_overlap(ctx, fname, t);
  if (!st) st = check_index_1d(ctx, fname, t, dim, index);
  if (st) return st;
  int64_t shape[PT_MAX_DIMS];
  memcpy(shape, t->shape, sizeof shape);
  shape[dim] = pt_tensor_numel(index);
  pt_tensor *s;
  if (src) {
    int nb;
    int64_t bshape[PT_MAX_DIMS];
    if (pt_broadcast_shapes(ctx, fname, t->ndim, shape, src->ndim, src->shape, &nb,
                            bshape) ||
        nb != t->ndim || memcmp(bshape, shape, (size_t)nb * sizeof(int64_t)) != 0) {
      char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
      return pt_fail(ctx, PT_ESHAPE, "%s: src of shape %s cannot be broadcast to %s", fname,
                     pt_shape_format(src->ndim, src->shape, a, sizeof a),
                     pt_shape_format(t->ndim, shape, b, sizeof b));
    }
    /* a src sharing t's storage is read before t is written, as scatter_'s (PyTorch refuses the
     * overlap; t:index_copy_(1, {3, 2, 1}, t) wrote rows it read later) */
    pt_tensor *copy = NULL;
    if ((st = read_before_write(ctx, t, &src, &copy))) return st;
    st = pt_expand_raw(ctx, src, t->ndim, shape, &s);
    pt_tensor_release(copy);
    if (st) return st;
  } else {
    pt_tensor *v;
    if ((st = pt_tensor_scalar(ctx, t->dtype, value.d, &v))) return st;
    write_number(pt_tensor_data(v), t->dtype, value);
    st = pt_expand_raw(ctx, v, t->ndim, shape, &s);
    pt_tensor_release(v);
    if (st) return st;
  }
  st = index_loop(ctx, t, dim, index, s, IX_COPY_TO_T);
  pt_tensor_release(s);
  if (st) return st;
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
  return pt_masked_assign_number_(ctx, fname, t, mask, src, pt_number_float(value));
}

pt_status pt_masked_assign_number_(pt_ctx *ctx, const char *fname, pt_tensor *t, pt_tensor *mask,
                                   pt_tensor *src, pt_number value) {
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
    value = pt_tensor_get_flat_number(src, 0);
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
  _Alignas(8) char vbuf[8];
  write_number(vbuf, t->dtype, value);
  int64_t k = 0;
  pt_iter_init(&it, t->ndim, t->shape, 2, strides);
  while (pt_iter_next(&it)) {
    if (!mp[it.offset[1]]) continue;
    char *p = tp + it.offset[0] * (int64_t)es;
    if (sequential)
      write_number(p, t->dtype, pt_tensor_get_flat_number(src, k++));
    else
      memcpy(p, vbuf, es);
  }
  atomic_fetch_add(&t->storage->version, 1);
  return PT_OK;
}

/* --- advanced indexing: x[idx1, :, idx2], index_put_, put_, masked_scatter_ ---
 * Everything goes through positions: for each element of the result (or each value written),
 * its row-major position in t (1-based, an index tensor as the other ops take: what an
 * index_select of t's flattened view or a gradient of t's shape is addressed with) and, for raw
 * reads and writes, its position in t's storage. Reads with autograd are an index_select of the
 * flattened t (its backward accumulates repeated positions and has a create_graph formula);
 * writes record IndexPutBackward, whose backward is made of public ops (masked_fill,
 * index_select) and so serves create_graph passes too (backward_differentiable). */

void pt_index_view_of(const pt_tensor *t, pt_index_view *v) {
  v->ndim = t->ndim;
  v->offset = 0;
  v->soffset = t->offset;
  int64_t s = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    v->shape[d] = t->shape[d];
    v->stride[d] = s;
    v->sstride[d] = t->stride[d];
    v->dim[d] = d;
    s *= t->shape[d];
  }
}

bool pt_index_has_negative(const pt_tensor *index) {
  const int64_t *strides[1] = {index->stride};
  pt_iter it;
  pt_iter_init(&it, index->ndim, index->shape, 1, strides);
  while (pt_iter_next(&it))
    if (index_at(index, index->offset + it.offset[0]) < 0) return true;
  return false;
}

static bool is_mask_dtype(pt_dtype dt) { return dt == PT_BOOL || dt == PT_UINT8; }

/* one dim of the indexed view: plain (adv < 0) or indexed by ix[adv] (0-based positions) */
typedef struct ix_dim {
  int64_t size, stride, sstride;
  int adv;
} ix_dim;

#define IX_MAX_XDIMS (PT_MAX_DIMS + PT_INDEX_MAX_ENTRIES)

typedef struct ix_plan {
  int nx, nadv;
  ix_dim x[IX_MAX_XDIMS];
  pt_tensor *ix[IX_MAX_XDIMS]; /* int64, contiguous, 0-based */
} ix_plan;

static void plan_free(ix_plan *p) {
  for (int i = 0; i < p->nadv; i++) pt_tensor_release(p->ix[i]);
  p->nadv = 0;
}

static pt_status plan_push(pt_ctx *ctx, const char *fname, ix_plan *p, int64_t size, int64_t stride,
                           int64_t sstride, pt_tensor *ix) {
  if (p->nx == IX_MAX_XDIMS) {
    pt_tensor_release(ix);
    return pt_fail(ctx, PT_EARG, "%s: too many index entries (at most %d)", fname,
                   PT_INDEX_MAX_ENTRIES);
  }
  p->x[p->nx++] = (ix_dim){size, stride, sstride, ix ? p->nadv : -1};
  if (ix) p->ix[p->nadv++] = ix;
  return PT_OK;
}

/* index's values (1-based, negative from the end) as 0-based int64 positions, checked */
static pt_status normalize_index(pt_ctx *ctx, const char *fname, const pt_tensor *index,
                                 int64_t size, int tdim, pt_tensor **out) {
  pt_tensor *r;
  pt_status st = pt_tensor_empty(ctx, PT_INT64, index->ndim, index->shape, &r);
  if (st) return st;
  int64_t *rp = pt_tensor_data(r), k = 0, n = pt_tensor_numel(index), bad = 0;
  if (index->dtype == PT_INT64 && pt_tensor_is_contiguous(index)) { /* one pass that vectorises */
    const int64_t *ip = pt_tensor_data(index);
    for (int64_t i = 0; i < n; i++) {
      int64_t v = ip[i], w = v < 0 ? v + size : v - 1;
      bad |= (uint64_t)w >= (uint64_t)size;
      rp[i] = w;
    }
    if (!bad) {
      *out = r;
      return PT_OK;
    }
  }
  const int64_t *strides[1] = {index->stride};
  pt_iter it;
  pt_iter_init(&it, index->ndim, index->shape, 1, strides);
  while (pt_iter_next(&it)) {
    int64_t v = index_at(index, index->offset + it.offset[0]), w = v < 0 ? v + size + 1 : v;
    if (w < 1 || w > size) {
      pt_tensor_release(r);
      return pt_fail(ctx, PT_EARG, "%s: index %lld out of range for dimension %d of size %lld",
                     fname, (long long)v, tdim + 1, (long long)size);
    }
    rp[k++] = w - 1;
  }
  *out = r;
  return PT_OK;
}

/* a k-D mask over dims d..d+k-1 of v: one dim per mask dim, indexed by its true positions */
static pt_status plan_mask(pt_ctx *ctx, const char *fname, ix_plan *p, const pt_index_view *v,
                           int d, const pt_tensor *mask) {
  int kd = mask->ndim;
  for (int j = 0; j < kd; j++)
    if (mask->shape[j] != v->shape[d + j]) {
      char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
      return pt_fail(ctx, PT_ESHAPE,
                     "%s: mask of shape %s does not match the shape %s of the dimensions it "
                     "indexes (from dimension %d)",
                     fname, pt_shape_format(kd, mask->shape, a, sizeof a),
                     pt_shape_format(kd, v->shape + d, b, sizeof b), v->dim[d] + 1);
    }
  const int64_t *strides[1] = {mask->stride};
  const uint8_t *mp = (const uint8_t *)mask->storage->data + mask->offset;
  pt_iter it;
  pt_status st;
  if (kd == 0) { /* x[true] adds a dim of size 1 holding everything, x[false] one of size 0 */
    int64_t cnt = mp[0] != 0;
    pt_tensor *ix = NULL;
    if ((st = pt_tensor_zeros(ctx, PT_INT64, 1, &cnt, &ix))) return st;
    return plan_push(ctx, fname, p, 1, 0, 0, ix);
  }
  int64_t nnz = 0;
  pt_iter_init(&it, kd, mask->shape, 1, strides);
  while (pt_iter_next(&it)) nnz += mp[it.offset[0]] != 0;
  int64_t *cols[PT_MAX_DIMS];
  int first = p->nadv;
  for (int j = 0; j < kd; j++) {
    pt_tensor *ix = NULL;
    if ((st = pt_tensor_empty(ctx, PT_INT64, 1, &nnz, &ix)) ||
        (st = plan_push(ctx, fname, p, v->shape[d + j], v->stride[d + j], v->sstride[d + j], ix)))
      return st;
    cols[j] = pt_tensor_data(p->ix[first + j]);
  }
  int64_t k = 0;
  pt_iter_init(&it, kd, mask->shape, 1, strides);
  while (pt_iter_next(&it)) {
    if (!mp[it.offset[0]]) continue;
    for (int j = 0; j < kd; j++) cols[j][k] = it.index[j];
    k++;
  }
  return PT_OK;
}

/* The indexed dims of v in order (plain ones and those the entries index). */
static pt_status plan_build(pt_ctx *ctx, const char *fname, const pt_index_view *v, int n,
                            const pt_index_entry *e, ix_plan *p) {
  p->nx = p->nadv = 0;
  if (n > PT_INDEX_MAX_ENTRIES)
    return pt_fail(ctx, PT_EARG, "%s: too many index entries (at most %d)", fname,
                   PT_INDEX_MAX_ENTRIES);
  int used = 0; /* dims the entries reach */
  for (int k = 0; k < n; k++) {
    int end = e[k].dim + (is_mask_dtype(e[k].index->dtype) ? e[k].index->ndim : 1);
    used = end > used ? end : used;
  }
  if (used > v->ndim)
    return pt_fail(ctx, PT_EARG, "%s: too many indices for a tensor of %d dimensions (got %d)",
                   fname, v->ndim, used);
  int cursor = 0;
  pt_status st = PT_OK;
  for (int k = 0; k < n && !st; k++) {
    pt_tensor *index = e[k].index;
    int d = e[k].dim;
    if (d < cursor) return pt_fail(ctx, PT_EARG, "%s: index entries out of order", fname);
    for (; cursor < d && !st; cursor++)
      st = plan_push(ctx, fname, p, v->shape[cursor], v->stride[cursor], v->sstride[cursor], NULL);
    if (st) break;
    if (is_mask_dtype(index->dtype)) {
      st = plan_mask(ctx, fname, p, v, d, index);
      cursor = d + index->ndim;
    } else if (index->dtype == PT_INT64 || index->dtype == PT_INT32) {
      pt_tensor *ix = NULL;
      if (!(st = normalize_index(ctx, fname, index, v->shape[d], v->dim[d], &ix)))
        st = plan_push(ctx, fname, p, v->shape[d], v->stride[d], v->sstride[d], ix);
      cursor = d + 1;
    } else {
      st = pt_fail(ctx, PT_EARG, "%s: a tensor index must be a bool mask or int64 positions, got %s",
                   fname, pt_dtype_name(index->dtype));
    }
  }
  for (; cursor < v->ndim && !st; cursor++)
    st = plan_push(ctx, fname, p, v->shape[cursor], v->stride[cursor], v->sstride[cursor], NULL);
  if (st) plan_free(p);
  return st;
}

/* out[k] = off + the plain dims' part + base[the broadcast dims' part], over the result's shape
 * (stride: the plain dims' strides, 0 for broadcast ones; rb: the broadcast dims' strides in
 * base, 0 for plain ones), row by row */
static void fill_positions(int nr, const int64_t *shape, const int64_t *stride, const int64_t *rb,
                           int64_t off, const int64_t *base, int64_t *out) {
  int64_t n = pt_shape_numel(nr, shape);
  if (nr == 0) out[0] = off + base[0];
  if (nr == 0 || n == 0) return;
  int last = nr - 1;
  const int64_t len = shape[last], ls = stride[last], lb = rb[last];
  int64_t idx[PT_MAX_DIMS] = {0}, po = off, bo = 0;
  for (int64_t k = 0; k < n; k += len) {
    int64_t *o = out + k;
    const int64_t *bb = base + bo;
    if (lb == 1)
      for (int64_t j = 0; j < len; j++) o[j] = po + bb[j];
    else if (lb == 0)
      for (int64_t j = 0; j < len; j++) o[j] = po + bb[0] + j * ls;
    else
      for (int64_t j = 0; j < len; j++) o[j] = po + j * ls + bb[j * lb];
    for (int d = last - 1; d >= 0; d--) { /* the next row */
      po += stride[d];
      bo += rb[d];
      if (++idx[d] < shape[d]) break;
      po -= idx[d] * stride[d];
      bo -= idx[d] * rb[d];
      idx[d] = 0;
    }
  }
}

/* Positions of every element of v[entries], in the result's shape: *pos (int64, 1-based
 * row-major positions in t) and *spos (int64, 0-based storage positions); either may be NULL. */
static pt_status index_positions(pt_ctx *ctx, const char *fname, const pt_index_view *v, int n,
                                 const pt_index_entry *e, pt_tensor **pos, pt_tensor **spos) {
  ix_plan p;
  pt_status st = plan_build(ctx, fname, v, n, e, &p);
  if (st) return st;
  /* the index tensors broadcast together */
  int nb = 0;
  int64_t bshape[PT_MAX_DIMS];
  for (int k = 0; k < p.nadv && !st; k++) {
    pt_tensor *ix = p.ix[k];
    int64_t prev[PT_MAX_DIMS];
    memcpy(prev, bshape, sizeof prev);
    if (pt_broadcast_shapes(ctx, fname, nb, prev, ix->ndim, ix->shape, &nb, bshape)) {
      char msg[PT_ERRMSG_MAX / 2], a[PT_SHAPE_STR_MAX];
      size_t len = 0;
      for (int j = 0; j < p.nadv && len < sizeof msg; j++)
        len += (size_t)snprintf(msg + len, sizeof msg - len, j ? ", %s" : "%s",
                                pt_shape_format(p.ix[j]->ndim, p.ix[j]->shape, a, sizeof a));
      st = pt_fail(ctx, PT_ESHAPE,
                   "%s: shape mismatch: indexing tensors could not be broadcast together with "
                   "shapes %s", fname, msg);
    }
  }
  /* the result's dims: the broadcast ones in place of adjacent indexed dims, else first */
  int first = -1, last = -1;
  for (int i = 0; i < p.nx; i++)
    if (p.x[i].adv >= 0) {
      if (first < 0) first = i;
      last = i;
    }
  bool adjacent = first < 0 || last - first + 1 == p.nadv;
  int nplain = p.nx - p.nadv, nr = nplain + (first >= 0 ? nb : 0);
  if (!st && nr > PT_MAX_DIMS)
    st = pt_fail(ctx, PT_ESHAPE, "%s: the result would have %d dimensions (at most %d)", fname, nr,
                 PT_MAX_DIMS);
  if (st) {
    plan_free(&p);
    return st;
  }
  int64_t rshape[PT_MAX_DIMS], rstride[PT_MAX_DIMS], rsstride[PT_MAX_DIMS], rb[PT_MAX_DIMS];
  int64_t bstride[PT_MAX_DIMS];
  pt_contiguous_strides(nb, bshape, bstride);
  int r = 0;
  bool b_done = first < 0;
  for (int i = 0; i <= p.nx; i++) {
    if (!b_done && (adjacent ? i == first : i == 0)) {
      for (int j = 0; j < nb; j++, r++) {
        rshape[r] = bshape[j];
        rstride[r] = rsstride[r] = 0;
        rb[r] = bstride[j];
      }
      b_done = true;
    }
    if (i == p.nx || p.x[i].adv >= 0) continue;
    rshape[r] = p.x[i].size;
    rstride[r] = p.x[i].stride;
    rsstride[r] = p.x[i].sstride;
    rb[r++] = 0;
  }
  /* the broadcast part's positions, summed over the indexed dims */
  int64_t nbe = pt_shape_numel(nb, bshape);
  int64_t *base = pt_alloc(ctx, (size_t)(nbe ? nbe : 1) * 2 * sizeof *base);
  if (!base) {
    plan_free(&p);
    return PT_ENOMEM;
  }
  int64_t *sbase = base + (nbe ? nbe : 1);
  memset(base, 0, (size_t)(nbe ? nbe : 1) * 2 * sizeof *base);
  for (int i = 0; i < p.nx; i++) {
    if (p.x[i].adv < 0) continue;
    pt_tensor *ix = p.ix[p.x[i].adv];
    const int64_t *ip = pt_tensor_data(ix), st_ = p.x[i].stride, ss = p.x[i].sstride;
    if (pt_tensor_numel(ix) == nbe) { /* (contiguous, made here) not broadcast: one run */
      if (pos)
        for (int64_t k = 0; k < nbe; k++) base[k] += ip[k] * st_;
      if (spos)
        for (int64_t k = 0; k < nbe; k++) sbase[k] += ip[k] * ss;
      continue;
    }
    int64_t s[PT_MAX_DIMS];
    pt_broadcast_strides(ix, nb, bshape, s);
    const int64_t *strides[1] = {s};
    pt_iter it;
    pt_iter_init(&it, nb, bshape, 1, strides);
    for (int64_t k = 0; pt_iter_next(&it); k++) {
      base[k] += ip[it.offset[0]] * st_;
      sbase[k] += ip[it.offset[0]] * ss;
    }
  }
  plan_free(&p);
  pt_tensor *pr = NULL, *sr = NULL;
  if ((pos && (st = pt_tensor_empty(ctx, PT_INT64, nr, rshape, &pr))) ||
      (spos && (st = pt_tensor_empty(ctx, PT_INT64, nr, rshape, &sr)))) {
    pt_tensor_release(pr);
    pt_free(base);
    return st;
  }
  if (pr) fill_positions(nr, rshape, rstride, rb, v->offset + 1, base, pt_tensor_data(pr));
  if (sr) fill_positions(nr, rshape, rsstride, rb, v->soffset, sbase, pt_tensor_data(sr));
  pt_free(base);
  if (pos) *pos = pr;
  if (spos) *spos = sr;
  return PT_OK;
}

/* 0-based storage positions of t's elements at the 1-based row-major positions pos */
static pt_status storage_positions(pt_ctx *ctx, const pt_tensor *t, const pt_tensor *pos,
                                   pt_tensor **out) {
  pt_tensor *r;
  pt_status st = pt_tensor_empty(ctx, PT_INT64, pos->ndim, pos->shape, &r);
  if (st) return st;
  int64_t n = pt_tensor_numel(pos), *rp = pt_tensor_data(r);
  const int64_t *pp = pt_tensor_data(pos); /* (contiguous: made here) */
  bool contig = pt_tensor_is_contiguous(t);
  for (int64_t k = 0; k < n; k++) {
    int64_t i = pp[k] - 1, off = t->offset;
    if (contig) {
      rp[k] = off + i;
      continue;
    }
    for (int d = t->ndim - 1; d >= 0; d--) {
      off += i % t->shape[d] * t->stride[d];
      i /= t->shape[d];
    }
    rp[k] = off;
  }
  *out = r;
  return PT_OK;
}

/* out[k] = t's storage element at spos[k] */
typedef struct take_job {
  const char *src;
  char *dst;
  const int64_t *spos;
  size_t es;
} take_job;

static void take_chunk(void *arg, int64_t b, int64_t e, int tid) {
  (void)tid;
  const take_job *j = arg;
  const int64_t *sp = j->spos;
  if (j->es == 8)
    for (int64_t k = b; k < e; k++) ((uint64_t *)j->dst)[k] = ((const uint64_t *)j->src)[sp[k]];
  else if (j->es == 4)
    for (int64_t k = b; k < e; k++) ((uint32_t *)j->dst)[k] = ((const uint32_t *)j->src)[sp[k]];
  else
    for (int64_t k = b; k < e; k++) memcpy(j->dst + k * (int64_t)j->es, j->src + sp[k] * (int64_t)j->es, j->es);
}

pt_status pt_index_get(pt_ctx *ctx, const char *fname, pt_tensor *t, const pt_index_view *v, int n,
                       const pt_index_entry *e, pt_tensor **out) {
  bool graph = pt_autograd_needed(ctx, 1, &t);
  pt_tensor *pos = NULL, *spos = NULL, *r = NULL;
  pt_status st;
  if (!graph && n == 1 && e[0].index->ndim == 1 && !is_mask_dtype(e[0].index->dtype) &&
      e[0].dim < v->ndim) {
    /* one list of positions: index_select of the view (no position per element) */
    pt_tensor *ix = NULL, *view = NULL;
    int d = e[0].dim;
    if (!(st = normalize_index(ctx, fname, e[0].index, v->shape[d], v->dim[d], &ix))) {
      int64_t *p = pt_tensor_data(ix), m = pt_tensor_numel(ix);
      for (int64_t k = 0; k < m; k++) p[k]++;
      if (!(st = pt_tensor_from_storage(ctx, t->storage, t->dtype, v->soffset, v->ndim, v->shape,
                                        v->sstride, &view)))
        st = pt_index_select(ctx, view, d, ix, out);
    }
    pt_tensor_release(ix);
    pt_tensor_release(view);
    return st;
  }
  st = index_positions(ctx, fname, v, n, e, graph ? &pos : NULL, graph ? NULL : &spos);
  if (st) return st;
  if (graph) { /* index_select of the flattened t: its backward and create_graph formula */
    int64_t all = -1, np = pt_tensor_numel(pos);
    pt_tensor *flat = NULL, *p1 = NULL, *sel = NULL;
    if (!(st = pt_reshape(ctx, t, 1, &all, &flat)) && !(st = pt_view_raw(ctx, pos, 1, &np, &p1)) &&
        !(st = pt_index_select(ctx, flat, 0, p1, &sel)))
      st = pt_view(ctx, sel, pos->ndim, pos->shape, &r);
    pt_tensor_release(flat);
    pt_tensor_release(p1);
    pt_tensor_release(sel);
    pt_tensor_release(pos);
    if (st) return st;
    *out = r;
    return PT_OK;
  }
  if ((st = pt_tensor_empty(ctx, t->dtype, spos->ndim, spos->shape, &r))) {
    pt_tensor_release(spos);
    return st;
  }
  take_job j = {t->storage->data, r->storage->data, pt_tensor_data(spos), pt_dtype_size(t->dtype)};
  pt_parallel_for(ctx, pt_tensor_numel(spos), 32768, take_chunk, &j);
  pt_tensor_release(spos);
  *out = r;
  return PT_OK;
}

/* The backward of a write at positions (saved[0]: 1-based row-major positions in the result,
 * the values' shape R; saved[1]: the written positions as a bool mask of t's shape, NULL with
 * accumulate; saved[2]: the values a later one overwrote, a bool mask of R, NULL when none).
 * Made of public ops, so a create_graph pass runs it as its own formula. */
static pt_status index_put_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *pos = node->saved[0], *written = node->saved[1], *lost = node->saved[2];
  pt_status st = PT_OK;
  if (node->needs_grad[0])
    st = written ? pt_masked_fill(ctx, g, written, 0.0, &gin[0]) : (gin[0] = pt_tensor_retain(g), PT_OK);
  if (st || node->n_inputs < 2 || !node->needs_grad[1]) return st;
  int64_t all = -1, np = pt_tensor_numel(pos);
  pt_tensor *flat = NULL, *p1 = NULL, *sel = NULL, *gv = NULL;
  if (!(st = pt_reshape(ctx, g, 1, &all, &flat)) && !(st = pt_view_raw(ctx, pos, 1, &np, &p1)) &&
      !(st = pt_index_select(ctx, flat, 0, p1, &sel)) &&
      !(st = pt_view(ctx, sel, pos->ndim, pos->shape, &gv)))
    st = lost ? pt_masked_fill(ctx, gv, lost, 0.0, &gin[1]) : (gin[1] = pt_tensor_retain(gv), PT_OK);
  pt_tensor_release(flat);
  pt_tensor_release(p1);
  pt_tensor_release(sel);
  pt_tensor_release(gv);
  return st;
}

/* dst[spos[k]] = (or +=) vals[k] for k in order (R row-major), vals broadcast to R (NULL: vbuf) */
#define PUT_LOOP(TYPE, BODY)                                                              \
  do {                                                                                    \
    TYPE *d_ = (TYPE *)dst->storage->data;                                                \
    const TYPE *v_ = vals ? (const TYPE *)vals->storage->data : (const TYPE *)(void *)vbuf; \
    if (linear) {                                                                         \
      for (int64_t k = 0; k < n; k++) {                                                   \
        TYPE *dq = d_ + sp[k];                                                            \
        const TYPE *vq = v_ + voff + k;                                                   \
        BODY;                                                                             \
      }                                                                                   \
      break;                                                                              \
    }                                                                                     \
    pt_iter it;                                                                           \
    pt_iter_init(&it, nr, pos->shape, 1, strides);                                        \
    for (int64_t k = 0; pt_iter_next(&it); k++) {                                         \
      TYPE *dq = d_ + sp[k];                                                              \
      const TYPE *vq = v_ + voff + it.offset[0];                                          \
      BODY;                                                                               \
    }                                                                                     \
  } while (0)

static void put_values(pt_tensor *dst, const pt_tensor *pos, const int64_t *sp,
                       const pt_tensor *vals, pt_number value, bool accumulate) {
  int nr = pos->ndim;
  _Alignas(8) char vbuf[8];
  write_number(vbuf, dst->dtype, value);
  int64_t vstride[PT_MAX_DIMS] = {0}, voff = vals ? vals->offset : 0;
  if (vals) pt_broadcast_strides(vals, nr, pos->shape, vstride);
  /* the values in order (contiguous), or every value the same element: plain loops */
  int64_t n = pt_tensor_numel(pos), cstride[PT_MAX_DIMS];
  pt_contiguous_strides(nr, pos->shape, cstride);
  bool one = true, linear = vals != NULL;
  for (int d = 0; d < nr; d++) {
    one &= vstride[d] == 0 || pos->shape[d] == 1;
    linear &= vstride[d] == cstride[d] || pos->shape[d] == 1;
  }
  size_t es = pt_dtype_size(dst->dtype);
  if (one && !accumulate) {
    const char *vp = vals ? (const char *)vals->storage->data + voff * (int64_t)es : vbuf;
    char *d_ = dst->storage->data;
    if (es == 8) {
      uint64_t x;
      memcpy(&x, vp, 8);
      for (int64_t k = 0; k < n; k++) ((uint64_t *)d_)[sp[k]] = x;
    } else if (es == 4) {
      uint32_t x;
      memcpy(&x, vp, 4);
      for (int64_t k = 0; k < n; k++) ((uint32_t *)d_)[sp[k]] = x;
    } else {
      for (int64_t k = 0; k < n; k++) d_[sp[k]] = vp[0];
    }
    return;
  }
  const int64_t *strides[1] = {vstride};
  if (!accumulate) {
    if (es == 8) PUT_LOOP(uint64_t, *dq = *vq);
    else if (es == 4) PUT_LOOP(uint32_t, *dq = *vq);
    else PUT_LOOP(uint8_t, *dq = *vq);
    return;
  }
  switch (dst->dtype) { /* integers add exactly, wrapping as PyTorch's; bool: any true stays */
  case PT_FLOAT32: PUT_LOOP(float, *dq += *vq); break;
  case PT_FLOAT64: PUT_LOOP(double, *dq += *vq); break;
  case PT_INT64: PUT_LOOP(uint64_t, *dq += *vq); break;
  case PT_INT32: PUT_LOOP(uint32_t, *dq += *vq); break;
  case PT_BOOL: PUT_LOOP(uint8_t, *dq = *dq || *vq); break;
  default: PUT_LOOP(uint8_t, *dq += *vq); break;
  }
}

/* The written positions (bool, t's shape) and the values overwritten by a later one (bool, R;
 * *lost NULL when none): positions walked from the last value back. */
static pt_status written_masks(pt_ctx *ctx, const pt_tensor *t, const pt_tensor *pos,
                               pt_tensor **written, pt_tensor **lost) {
  pt_tensor *w = NULL, *l = NULL;
  pt_status st = pt_tensor_zeros(ctx, PT_BOOL, t->ndim, t->shape, &w);
  if (!st) st = pt_tensor_zeros(ctx, PT_BOOL, pos->ndim, pos->shape, &l);
  if (st) {
    pt_tensor_release(w);
    return st;
  }
  bool *wp = pt_tensor_data(w), *lp = pt_tensor_data(l), any = false;
  const int64_t *pp = pt_tensor_data(pos);
  for (int64_t k = pt_tensor_numel(pos) - 1; k >= 0; k--) {
    bool *q = wp + pp[k] - 1;
    if (*q) lp[k] = any = true;
    *q = true;
  }
  if (!any) {
    pt_tensor_release(l);
    l = NULL;
  }
  *written = w;
  *lost = l;
  return PT_OK;
}

/* The write of every index_put-like op. pos: 1-based row-major positions in t (int64,
 * contiguous, shape R; NULL only for a raw write in place); spos: their storage positions (NULL:
 * computed when needed); values: t's dtype, broadcastable to R (NULL: value). In place (out
 * NULL) or into a copy of t. */
static pt_status put_at(pt_ctx *ctx, const char *fname, pt_tensor *t, pt_tensor *pos,
                        pt_tensor *spos, pt_tensor *values, pt_number value, bool accumulate,
                        pt_tensor **out) {
  pt_status st;
  const pt_tensor *rt = pos ? pos : spos; /* R */
  if (values) {
    int nb;
    int64_t bshape[PT_MAX_DIMS];
    if (pt_broadcast_shapes(ctx, fname, values->ndim, values->shape, rt->ndim, rt->shape, &nb,
                            bshape) ||
        nb != rt->ndim || memcmp(bshape, rt->shape, (size_t)nb * sizeof(int64_t)) != 0) {
      char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
      return pt_fail(ctx, PT_ESHAPE,
                     "%s: shape mismatch: value tensor of shape %s cannot be broadcast to indexing "
                     "result of shape %s",
                     fname, pt_shape_format(values->ndim, values->shape, a, sizeof a),
                     pt_shape_format(rt->ndim, rt->shape, b, sizeof b));
    }
    if (values->dtype != t->dtype)
      return pt_fail(ctx, PT_EARG, "%s: values must have the tensor's dtype (%s), got %s", fname,
                     pt_dtype_name(t->dtype), pt_dtype_name(values->dtype));
  }
  bool inplace = out == NULL;
  bool graph = ctx->grad_enabled && pt_dtype_is_floating(t->dtype) &&
               (t->requires_grad || (values && values->requires_grad));
  if (inplace && (st = graph ? pt_inplace_check(ctx, fname, t)
                             : pt_check_no_internal_overlap(ctx, fname, t)))
    return st;
  if (inplace && graph && t->base) {
    /* a view: written into a copy, then copy_ (the base's history takes the change in) */
    pt_tensor *r = NULL;
    if (!(st = put_at(ctx, fname, t, pos, NULL, values, value, accumulate, &r)))
      st = pt_copy_(ctx, t, r);
    pt_tensor_release(r);
    return st;
  }
  pt_tensor *vals = NULL, *dst = NULL, *sp = NULL, *old = NULL, *written = NULL, *lost = NULL;
  if (values) { /* the values as the graph sees them: broadcast to R (ExpandBackward sums) */
    pt_tensor *src = values;
    if (inplace && values->storage == t->storage) /* read while t is written: a copy first */
      if ((st = graph ? pt_clone(ctx, values, &src) : pt_tensor_clone_raw(ctx, values, &src))) return st;
    st = graph ? pt_expand(ctx, src, rt->ndim, rt->shape, &vals)
               : pt_expand_raw(ctx, src, rt->ndim, rt->shape, &vals);
    if (src != values) pt_tensor_release(src);
    if (st) return st;
  }
  if (inplace) {
    dst = pt_tensor_retain(t);
    st = spos ? (sp = pt_tensor_retain(spos), PT_OK) : storage_positions(ctx, t, pos, &sp);
  } else {
    st = pt_tensor_clone_raw(ctx, t, &dst);
    if (!st) st = storage_positions(ctx, dst, pos, &sp);
  }
  if (!st && graph && !accumulate) st = written_masks(ctx, t, pos, &written, &lost);
  if (!st && graph && inplace) st = pt_autograd_alias(ctx, t, t->grad_fn, &old); /* t's history so far */
  if (st) goto done;
  put_values(dst, rt, pt_tensor_data(sp), vals, value, accumulate);
  if (inplace) atomic_fetch_add(&t->storage->version, 1);
  if (graph) {
    pt_tensor *inputs[2] = {inplace ? old : t, vals};
    pt_node *node;
    st = pt_autograd_record(ctx, dst, "IndexPutBackward", index_put_backward, vals ? 2 : 1, inputs,
                            &node);
    if (!st && node) {
      node->backward_differentiable = true;
      pt_node_save(node, 0, pt_tensor_retain(pos));
      pt_node_save(node, 1, written);
      pt_node_save(node, 2, lost);
      written = lost = NULL;
    }
  }
done:
  pt_tensor_release(vals);
  pt_tensor_release(sp);
  pt_tensor_release(old);
  pt_tensor_release(written);
  pt_tensor_release(lost);
  if (st || inplace) {
    pt_tensor_release(dst);
    return st;
  }
  *out = dst;
  return PT_OK;
}

static pt_status index_put_any(pt_ctx *ctx, const char *fname, pt_tensor *t,
                               const pt_index_view *v, int n, const pt_index_entry *e,
                               pt_tensor *values, pt_number value, bool accumulate,
                               pt_tensor **out) {
  pt_tensor *pos = NULL, *spos = NULL;
  bool raw_inplace = !out && !(ctx->grad_enabled && pt_dtype_is_floating(t->dtype) &&
                               (t->requires_grad || (values && values->requires_grad)));
  pt_status st = index_positions(ctx, fname, v, n, e, raw_inplace ? NULL : &pos, raw_inplace ? &spos : NULL);
  if (st) return st;
  st = put_at(ctx, fname, t, pos, spos, values, value, accumulate, out);
  pt_tensor_release(pos);
  pt_tensor_release(spos);
  return st;
}

pt_status pt_index_put(pt_ctx *ctx, const char *fname, pt_tensor *t, const pt_index_view *v, int n,
                       const pt_index_entry *e, pt_tensor *values, pt_number value, bool accumulate,
                       pt_tensor **out) {
  return index_put_any(ctx, fname, t, v, n, e, values, value, accumulate, out);
}

pt_status pt_index_put_(pt_ctx *ctx, const char *fname, pt_tensor *t, const pt_index_view *v,
                        int n, const pt_index_entry *e, pt_tensor *values, pt_number value,
                        bool accumulate) {
  return index_put_any(ctx, fname, t, v, n, e, values, value, accumulate, NULL);
}

/* --- put_ / masked_scatter_ --- */

static pt_status put_any(pt_ctx *ctx, const char *fname, pt_tensor *t, pt_tensor *index,
                         pt_tensor *source, bool accumulate, pt_tensor **out) {
  pt_status st = check_index_dtype(ctx, fname, index);
  if (st) return st;
  if (source->dtype != t->dtype)
    return pt_fail(ctx, PT_EARG, "%s: source must have the tensor's dtype (%s), got %s", fname,
                   pt_dtype_name(t->dtype), pt_dtype_name(source->dtype));
  int64_t n = pt_tensor_numel(index), numel = pt_tensor_numel(t);
  if (pt_tensor_numel(source) != n)
    return pt_fail(ctx, PT_ESHAPE,
                   "%s: source and index must have the same number of elements, got %lld and %lld",
                   fname, (long long)pt_tensor_numel(source), (long long)n);
  pt_tensor *pos, *vals = NULL;
  if ((st = pt_tensor_empty(ctx, PT_INT64, index->ndim, index->shape, &pos))) return st;
  int64_t *pp = pt_tensor_data(pos), k = 0;
  const int64_t *strides[1] = {index->stride};
  pt_iter it;
  pt_iter_init(&it, index->ndim, index->shape, 1, strides);
  while (pt_iter_next(&it)) {
    int64_t v = index_at(index, index->offset + it.offset[0]), w = v < 0 ? v + numel + 1 : v;
    if (w < 1 || w > numel) {
      pt_tensor_release(pos);
      return pt_fail(ctx, PT_EARG, "%s: index %lld out of range for a tensor of %lld elements",
                     fname, (long long)v, (long long)numel);
    }
    pp[k++] = w;
  }
  st = pt_reshape(ctx, source, index->ndim, index->shape, &vals);
  if (!st) st = put_at(ctx, fname, t, pos, NULL, vals, NO_VALUE, accumulate, out);
  pt_tensor_release(vals);
  pt_tensor_release(pos);
  return st;
}

pt_status pt_put(pt_ctx *ctx, pt_tensor *t, pt_tensor *index, pt_tensor *source, bool accumulate,
                 pt_tensor **out) {
  return put_any(ctx, "put", t, index, source, accumulate, out);
}

pt_status pt_put_(pt_ctx *ctx, pt_tensor *t, pt_tensor *index, pt_tensor *source, bool accumulate) {
  return put_any(ctx, "put_", t, index, source, accumulate, NULL);
}

/* t (broadcast to shape) with source's first elements where mask is true */
static pt_status masked_scatter_any(pt_ctx *ctx, const char *fname, pt_tensor *t, pt_tensor *mask,
                                    pt_tensor *source, int nd, const int64_t *shape,
                                    pt_tensor **out) {
  pt_status st = check_mask(ctx, fname, mask);
  if (st) return st;
  if (source->dtype != t->dtype)
    return pt_fail(ctx, PT_EARG, "%s: source must have the tensor's dtype (%s), got %s", fname,
                   pt_dtype_name(t->dtype), pt_dtype_name(source->dtype));
  int64_t mstride[PT_MAX_DIMS];
  pt_broadcast_strides(mask, nd, shape, mstride);
  const int64_t *strides[1] = {mstride};
  const uint8_t *mp = pt_tensor_data(mask);
  pt_iter it;
  int64_t k = 0, i = 0;
  pt_iter_init(&it, nd, shape, 1, strides);
  while (pt_iter_next(&it)) k += mp[it.offset[0]] != 0;
  if (pt_tensor_numel(source) < k)
    return pt_fail(ctx, PT_ESHAPE, "%s: the mask has %lld true elements but source only %lld",
                   fname, (long long)k, (long long)pt_tensor_numel(source));
  pt_tensor *pos, *tb = NULL, *flat = NULL, *vals = NULL;
  if ((st = pt_tensor_empty(ctx, PT_INT64, 1, &k, &pos))) return st;
  int64_t *pp = pt_tensor_data(pos), all = -1;
  pt_iter_init(&it, nd, shape, 1, strides);
  for (int64_t p = 1; pt_iter_next(&it); p++)
    if (mp[it.offset[0]]) pp[i++] = p;
  if (out) st = pt_expand(ctx, t, nd, shape, &tb); /* out of place: t broadcast with the mask */
  else tb = pt_tensor_retain(t);
  if (!st) st = pt_reshape(ctx, source, 1, &all, &flat);
  if (!st) st = pt_narrow(ctx, flat, 0, 0, k, &vals);
  if (!st) st = put_at(ctx, fname, tb, pos, NULL, vals, NO_VALUE, false, out);
  pt_tensor_release(tb);
  pt_tensor_release(flat);
  pt_tensor_release(vals);
  pt_tensor_release(pos);
  return st;
}

pt_status pt_masked_scatter(pt_ctx *ctx, pt_tensor *t, pt_tensor *mask, pt_tensor *source,
                            pt_tensor **out) {
  int nd;
  int64_t shape[PT_MAX_DIMS];
  pt_status st = check_mask(ctx, "masked_scatter", mask);
  if (!st)
    st = pt_broadcast_shapes(ctx, "masked_scatter", t->ndim, t->shape, mask->ndim, mask->shape, &nd,
                             shape);
  return st ? st : masked_scatter_any(ctx, "masked_scatter", t, mask, source, nd, shape, out);
}

pt_status pt_masked_scatter_(pt_ctx *ctx, pt_tensor *t, pt_tensor *mask, pt_tensor *source) {
  int nd;
  int64_t shape[PT_MAX_DIMS];
  pt_status st = check_mask(ctx, "masked_scatter_", mask);
  if (st) return st;
  if (pt_broadcast_shapes(ctx, "masked_scatter_", t->ndim, t->shape, mask->ndim, mask->shape, &nd,
                          shape) ||
      nd != t->ndim || memcmp(shape, t->shape, (size_t)nd * sizeof(int64_t)) != 0) {
    char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "masked_scatter_: mask of shape %s cannot be broadcast to the "
                   "tensor's shape %s", pt_shape_format(mask->ndim, mask->shape, a, sizeof a),
                   pt_shape_format(t->ndim, t->shape, b, sizeof b));
  }
  return masked_scatter_any(ctx, "masked_scatter_", t, mask, source, t->ndim, t->shape, NULL);
}
