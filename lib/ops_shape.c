/* Views with autograd (view/reshape, transpose, permute, narrow, select, squeeze, unsqueeze,
 * expand, flatten, contiguous, clone, repeat) and joining/splitting (cat, stack, split, chunk).
 * The raw views live in tensor.c; this file adds the checks PyTorch users expect and the
 * backward functions. */
#include "ops_shape.h"

#include <stdio.h>
#include <string.h>

#include "ops_elementwise.h"
#include "ops_index.h"
#include "parallel.h"

/* --- small helpers --- */

static void save_shape(pt_node *node, int at, const pt_tensor *t) {
  for (int i = 0; i < t->ndim; i++) node->ints[at + i] = t->shape[i];
  node->n_ints = at + t->ndim;
}

/* Record a one-input node on *out; on failure *out is released and cleared. */
static pt_status record1(pt_ctx *ctx, pt_tensor *in, pt_tensor **out, const char *name,
                         pt_backward_fn fn, pt_node **node) {
  pt_status st = pt_autograd_record(ctx, *out, name, fn, 1, &in, node);
  if (st) {
    pt_tensor_release(*out);
    *out = NULL;
  } else if ((*out)->storage == in->storage && *out != in) {
    if (*node) {
      (*node)->is_view = true;
      (*node)->view_version = atomic_load(&in->storage->version);
    }
    if (!(*out)->base) (*out)->base = pt_tensor_retain(in->base ? in->base : in);
  }
  return st;
}

static pt_status check_dim(pt_ctx *ctx, const char *fname, const pt_tensor *t, int dim) {
  if (dim < 0 || dim >= t->ndim)
    return pt_fail(ctx, PT_EARG, "%s: dimension %d out of range (tensor has %d dimensions)", fname,
                   dim + 1, t->ndim);
  return PT_OK;
}

/* --- view / reshape --- */

/* grad reshaped to the input's shape (ints hold it) */
static pt_status reshape_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  return pt_reshape(ctx, g, node->n_ints, node->ints, &gin[0]);
}

bool pt_view_strides(int ndim, const int64_t *shape, const int64_t *stride, int new_ndim,
                     const int64_t *new_shape, int64_t *new_stride) {
  int64_t numel = pt_shape_numel(ndim, shape);
  if (numel == 0 || ndim == 0) {
    pt_contiguous_strides(new_ndim, new_shape, new_stride);
    return true;
  }
  /* PyTorch's computeStride: each run of old dims that is contiguous in memory ("chunk") must
   * be covered by a run of new dims with exactly the same number of elements. */
  int view_d = new_ndim - 1;
  int64_t chunk_base_stride = stride[ndim - 1];
  int64_t tensor_numel = 1, view_numel = 1;
  for (int tensor_d = ndim - 1; tensor_d >= 0; tensor_d--) {
    tensor_numel *= shape[tensor_d];
    if (tensor_d == 0 ||
        (shape[tensor_d - 1] != 1 && stride[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
        new_stride[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_shape[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return false;
      if (tensor_d > 0) {
        chunk_base_stride = stride[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

static pt_status check_ndim(pt_ctx *ctx, const char *fname, int ndim) {
  if (ndim < 0 || ndim > PT_MAX_DIMS)
    return pt_fail(ctx, PT_ESHAPE, "%s: tensors have at most %d dimensions, got %d", fname,
                   PT_MAX_DIMS, ndim);
  return PT_OK;
}

static pt_status record_reshape(pt_ctx *ctx, pt_tensor *t, pt_tensor **out, const char *name) {
  pt_node *node;
  pt_status st = record1(ctx, t, out, name, reshape_backward, &node);
  if (!st && node) save_shape(node, 0, t);
  return st;
}

/* pt_infer_shape (lib/tensor.c) for view and reshape, whose sizes come from the user: a product
 * of sizes beyond int64 is refused before it wraps around to the input's size ({4, 2^62 + 3} of
 * 12 elements made a tensor of that shape over 12 elements) */
static pt_status infer_user_shape(pt_ctx *ctx, const char *fname, int64_t numel, int ndim, int64_t *shape) {
  int64_t known = 1;
  bool zero = false, overflow = false;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) continue; /* -1, or a bad size pt_infer_shape reports */
    if (shape[i] == 0) zero = true;
    else overflow = overflow || __builtin_mul_overflow(known, shape[i], &known);
  }
  if (overflow) {
    if (zero) { /* no elements, whatever the rest: pt_infer_shape must not multiply the rest */
      for (int i = 0; i < ndim; i++)
        if (shape[i] == -1) {
          char b[PT_SHAPE_STR_MAX];
          return pt_fail(ctx, PT_ESHAPE, "%s: shape %s is invalid for input of size %lld", fname,
                         pt_shape_format(ndim, shape, b, sizeof b), (long long)numel);
        }
      for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) return pt_fail(ctx, PT_ESHAPE, "%s: invalid size %lld", fname, (long long)shape[i]);
      if (numel == 0) return PT_OK;
    }
    char b[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "%s: shape %s is invalid for input of size %lld", fname,
                   pt_shape_format(ndim, shape, b, sizeof b), (long long)numel);
  }
  return pt_infer_shape(ctx, fname, numel, ndim, shape);
}

pt_status pt_view(pt_ctx *ctx, pt_tensor *t, int ndim, const int64_t *shape, pt_tensor **out) {
  int64_t s[PT_MAX_DIMS], stride[PT_MAX_DIMS];
  pt_status st = check_ndim(ctx, "view", ndim);
  if (st) return st;
  if (ndim) memcpy(s, shape, (size_t)ndim * sizeof(int64_t));
  if ((st = infer_user_shape(ctx, "view", pt_tensor_numel(t), ndim, s))) return st;
  if (!pt_view_strides(t->ndim, t->shape, t->stride, ndim, s, stride)) {
    char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX], c[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE,
                   "view: cannot view a tensor of shape %s and strides %s as shape %s without a "
                   "copy (use reshape or contiguous())",
                   pt_shape_format(t->ndim, t->shape, a, sizeof a),
                   pt_shape_format(t->ndim, t->stride, b, sizeof b),
                   pt_shape_format(ndim, s, c, sizeof c));
  }
  if ((st = pt_tensor_from_storage(ctx, t->storage, t->dtype, t->offset, ndim, s, stride, out)))
    return st;
  return record_reshape(ctx, t, out, "ViewBackward");
}

pt_status pt_reshape(pt_ctx *ctx, pt_tensor *t, int ndim, const int64_t *shape, pt_tensor **out) {
  int64_t s[PT_MAX_DIMS], stride[PT_MAX_DIMS];
  pt_status st = check_ndim(ctx, "reshape", ndim);
  if (st) return st;
  if (ndim) memcpy(s, shape, (size_t)ndim * sizeof(int64_t));
  if ((st = infer_user_shape(ctx, "reshape", pt_tensor_numel(t), ndim, s))) return st;
  if (pt_view_strides(t->ndim, t->shape, t->stride, ndim, s, stride)) {
    st = pt_tensor_from_storage(ctx, t->storage, t->dtype, t->offset, ndim, s, stride, out);
  } else {
    pt_tensor *c;
    if ((st = pt_tensor_clone_raw(ctx, t, &c))) return st;
    pt_contiguous_strides(ndim, s, stride);
    st = pt_tensor_from_storage(ctx, c->storage, c->dtype, 0, ndim, s, stride, out);
    pt_tensor_release(c);
  }
  if (st) return st;
  return record_reshape(ctx, t, out, "ReshapeBackward");
}

/* --- transpose / permute --- */

static pt_status transpose_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  if (g->ndim == 0) return (gin[0] = pt_tensor_retain(g), PT_OK); /* a 0-d transpose */
  return pt_transpose_raw(ctx, g, (int)node->ints[0], (int)node->ints[1], &gin[0]);
}

pt_status pt_transpose(pt_ctx *ctx, pt_tensor *t, int d0, int d1, pt_tensor **out) {
  /* a 0-d tensor has the one dim 1 (or -1) to swap with itself, as PyTorch's transpose(0, 0) */
  pt_status st = t->ndim == 0 && d0 == 0 && d1 == 0
                     ? pt_tensor_from_storage(ctx, t->storage, t->dtype, t->offset, 0, NULL, NULL, out)
                     : pt_transpose_raw(ctx, t, d0, d1, out);
  if (st) return st;
  pt_node *node;
  if ((st = record1(ctx, t, out, "TransposeBackward", transpose_backward, &node))) return st;
  if (node) {
    node->ints[0] = d0;
    node->ints[1] = d1;
    node->n_ints = 2;
  }
  return PT_OK;
}

pt_status pt_t(pt_ctx *ctx, pt_tensor *t, pt_tensor **out) {
  if (t->ndim > 2)
    return pt_fail(ctx, PT_EARG, "t: expects a tensor with at most 2 dimensions, got %d (use transpose)",
                   t->ndim);
  if (t->ndim < 2) {
    *out = pt_tensor_retain(t);
    return PT_OK;
  }
  return pt_transpose(ctx, t, 0, 1, out);
}

static pt_status permute_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  int inv[PT_MAX_DIMS];
  for (int i = 0; i < node->n_ints; i++) inv[node->ints[i]] = i;
  return pt_permute_raw(ctx, g, inv, &gin[0]);
}

pt_status pt_permute(pt_ctx *ctx, pt_tensor *t, const int *perm, pt_tensor **out) {
  pt_status st = pt_permute_raw(ctx, t, perm, out);
  if (st) return st;
  pt_node *node;
  if ((st = record1(ctx, t, out, "PermuteBackward", permute_backward, &node))) return st;
  if (node) {
    for (int i = 0; i < t->ndim; i++) node->ints[i] = perm[i];
    node->n_ints = t->ndim;
  }
  return PT_OK;
}

/* --- narrow / select: backward writes grad into a zero tensor of the input's shape --- */

static pt_status narrow_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  int dim = (int)node->ints[0];
  pt_tensor *z, *v;
  pt_status st = pt_tensor_zeros(ctx, g->dtype, node->n_ints - 3, node->ints + 3, &z);
  if (st) return st;
  if (node->ints[2] == -1) /* select */
    st = pt_select_raw(ctx, z, dim, node->ints[1], &v);
  else
    st = pt_narrow_raw(ctx, z, dim, node->ints[1], node->ints[2], &v);
  if (!st) {
    st = pt_tensor_copy_into(ctx, v, g);
    pt_tensor_release(v);
  }
  if (st) {
    pt_tensor_release(z);
    return st;
  }
  gin[0] = z;
  return PT_OK;
}

pt_status pt_narrow(pt_ctx *ctx, pt_tensor *t, int dim, int64_t start, int64_t length,
                    pt_tensor **out) {
  pt_status st = pt_narrow_raw(ctx, t, dim, start, length, out);
  if (st) return st;
  pt_node *node;
  if ((st = record1(ctx, t, out, "NarrowBackward", narrow_backward, &node))) return st;
  if (node) {
    node->slice_grad = true;
    node->ints[0] = dim;
    node->ints[1] = start;
    node->ints[2] = length;
    save_shape(node, 3, t);
  }
  return PT_OK;
}

pt_status pt_select(pt_ctx *ctx, pt_tensor *t, int dim, int64_t index, pt_tensor **out) {
  pt_status st = pt_select_raw(ctx, t, dim, index, out);
  if (st) return st;
  pt_node *node;
  if ((st = record1(ctx, t, out, "SelectBackward", narrow_backward, &node))) return st;
  if (node) {
    node->slice_grad = true;
    node->ints[0] = dim;
    node->ints[1] = index;
    node->ints[2] = -1;
    save_shape(node, 3, t);
  }
  return PT_OK;
}

/* --- squeeze / unsqueeze / flatten: reshapes --- */

pt_status pt_squeeze(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out) {
  pt_status st;
  if (t->ndim == 0 && dim <= 0)
    st = pt_tensor_from_storage(ctx, t->storage, t->dtype, t->offset, 0, NULL, NULL, out);
  else
    st = pt_squeeze_raw(ctx, t, dim, out);
  if (st) return st;
  return record_reshape(ctx, t, out, "SqueezeBackward");
}

pt_status pt_unsqueeze(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out) {
  pt_status st = pt_unsqueeze_raw(ctx, t, dim, out);
  if (st) return st;
  return record_reshape(ctx, t, out, "UnsqueezeBackward");
}

pt_status pt_flatten(pt_ctx *ctx, pt_tensor *t, int start, int end, pt_tensor **out) {
  if (t->ndim == 0) {
    int64_t one = 1;
    return pt_reshape(ctx, t, 1, &one, out);
  }
  pt_status st;
  if ((st = check_dim(ctx, "flatten", t, start)) || (st = check_dim(ctx, "flatten", t, end)))
    return st;
  if (start > end)
    return pt_fail(ctx, PT_EARG, "flatten: start_dim %d must not come after end_dim %d", start + 1,
                   end + 1);
  int64_t s[PT_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < start; i++) s[n++] = t->shape[i];
  int64_t m = 1;
  for (int i = start; i <= end; i++) m *= t->shape[i];
  s[n++] = m;
  for (int i = end + 1; i < t->ndim; i++) s[n++] = t->shape[i];
  return pt_reshape(ctx, t, n, s, out);
}

/* --- expand --- */

static pt_status expand_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  return pt_sum_to_shape(ctx, g, node->n_ints, node->ints, &gin[0]);
}

/* the number of elements of a shape does not fit in an int64 (sizes are non-negative; a 0 makes
 * it 0, as PyTorch's numel) */
static bool shape_numel_overflows(int ndim, const int64_t *shape) {
  int64_t n = 1;
  bool overflow = false;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] == 0) return false;
    overflow = overflow || __builtin_mul_overflow(n, shape[d], &n);
  }
  return overflow;
}

pt_status pt_expand(pt_ctx *ctx, pt_tensor *t, int ndim, const int64_t *shape, pt_tensor **out) {
  pt_status st = pt_expand_raw(ctx, t, ndim, shape, out);
  if (st) return st;
  if (shape_numel_overflows((*out)->ndim, (*out)->shape)) {
    char a[PT_SHAPE_STR_MAX];
    pt_fail(ctx, PT_ESHAPE, "expand: shape %s has too many elements (more than 2^63 - 1)",
            pt_shape_format((*out)->ndim, (*out)->shape, a, sizeof a));
    pt_tensor_release(*out);
    *out = NULL;
    return PT_ESHAPE;
  }
  pt_node *node;
  if ((st = record1(ctx, t, out, "ExpandBackward", expand_backward, &node))) return st;
  if (node) save_shape(node, 0, t);
  return PT_OK;
}

/* --- contiguous / clone --- */

static pt_status identity_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  gin[0] = pt_tensor_retain(g);
  return PT_OK;
}

pt_status pt_clone(pt_ctx *ctx, pt_tensor *t, pt_tensor **out) {
  pt_status st = pt_tensor_clone_raw(ctx, t, out);
  if (st) return st;
  pt_node *node;
  return record1(ctx, t, out, "CloneBackward", identity_backward, &node);
}

pt_status pt_contiguous(pt_ctx *ctx, pt_tensor *t, pt_tensor **out) {
  if (pt_tensor_is_contiguous(t)) {
    *out = pt_tensor_retain(t);
    return PT_OK;
  }
  return pt_clone(ctx, t, out);
}

/* --- repeat --- */

/* grad_in[src position] += grad over every tile, the tiles in the order of g's elements (row
 * major), as the element-by-element loop added them. Float gradients go row by row: for each
 * combination of leading tiles (in order) and each source row, the tiles along the last dim
 * add into that row one after the other. */
typedef struct repeat_bwd_job {
  const pt_tensor *g;
  pt_tensor *z;
  int nd, lead;
  int64_t S[PT_MAX_DIMS], reps[PT_MAX_DIMS]; /* per dim of g; leading dims have S = 1 */
  int64_t zrow_stride[PT_MAX_DIMS];         /* z's strides per dim of g (0 for leading) */
  int64_t nrows;                            /* source rows: prod S[0..nd-2] */
} repeat_bwd_job;

static void repeat_bwd_rows(void *arg, int64_t r0, int64_t r1, int tid) {
  (void)tid;
  const repeat_bwd_job *j = arg;
  const pt_tensor *g = j->g;
  int nd = j->nd, last = nd - 1;
  int64_t SL = j->S[last], RL = j->reps[last], gl = g->stride[last];
  int64_t ntiles = 1; /* combinations of the leading tiles */
  for (int d = 0; d < last; d++) ntiles *= j->reps[d];
  bool f32 = g->dtype == PT_FLOAT32;
  const char *gp = g->storage->data;
  char *zp = j->z->storage->data;
  int64_t tile[PT_MAX_DIMS] = {0}, src[PT_MAX_DIMS];
  for (int64_t tc = 0; tc < ntiles; tc++) {
    int64_t rest = r0;
    for (int d = last - 1; d >= 0; d--) {
      src[d] = rest % j->S[d];
      rest /= j->S[d];
    }
    for (int64_t r = r0; r < r1; r++) {
      int64_t goff = g->offset, zoff = 0;
      for (int d = 0; d < last; d++) {
        goff += (tile[d] * j->S[d] + src[d]) * g->stride[d];
        zoff += src[d] * j->zrow_stride[d];
      }
      for (int64_t tl = 0; tl < RL; tl++) {
        int64_t go = goff + tl * SL * gl;
        if (f32) {
          float *zq = (float *)zp + zoff;
          const float *gq = (const float *)gp + go;
          if (gl == 1)
            for (int64_t k = 0; k < SL; k++) zq[k] += gq[k];
          else
            for (int64_t k = 0; k < SL; k++) zq[k] += gq[k * gl];
        } else {
          double *zq = (double *)zp + zoff;
          const double *gq = (const double *)gp + go;
          if (gl == 1)
            for (int64_t k = 0; k < SL; k++) zq[k] += gq[k];
          else
            for (int64_t k = 0; k < SL; k++) zq[k] += gq[k * gl];
        }
      }
      for (int d = last - 1; d >= 0; d--) { /* the next source row */
        if (++src[d] < j->S[d]) break;
        src[d] = 0;
      }
    }
    for (int d = last - 1; d >= 0; d--) { /* the next combination of leading tiles */
      if (++tile[d] < j->reps[d]) break;
      tile[d] = 0;
    }
  }
}

static pt_status repeat_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *in = node->inputs[0], *z;
  int nd = g->ndim, lead = nd - in->ndim;
  pt_status st = pt_tensor_zeros(ctx, g->dtype, in->ndim, in->shape, &z);
  if (st) return st;
  int64_t n = pt_tensor_numel(g), coord[PT_MAX_DIMS] = {0}, zstride[PT_MAX_DIMS];
  pt_contiguous_strides(in->ndim, in->shape, zstride);
  if (n > 0 && nd > 0 && (g->dtype == PT_FLOAT32 || g->dtype == PT_FLOAT64)) {
    repeat_bwd_job j = {.g = g, .z = z, .nd = nd, .lead = lead, .nrows = 1};
    for (int d = 0; d < nd; d++) {
      j.S[d] = d < lead ? 1 : in->shape[d - lead];
      j.reps[d] = g->shape[d] / j.S[d];
      j.zrow_stride[d] = d < lead ? 0 : zstride[d - lead];
      if (d < nd - 1) j.nrows *= j.S[d];
    }
    int64_t per_row = n / j.nrows;
    int64_t grain = 32768 / (per_row > 0 ? per_row : 1);
    pt_parallel_for(ctx, j.nrows, grain < 1 ? 1 : grain, repeat_bwd_rows, &j);
    gin[0] = z;
    return PT_OK;
  }
  char *zp = z->storage->data;
  size_t es = pt_dtype_size(z->dtype);
  for (int64_t i = 0; i < n; i++) {
    int64_t goff = g->offset, zoff = 0;
    for (int d = 0; d < nd; d++) {
      goff += coord[d] * g->stride[d];
      if (d >= lead) zoff += (coord[d] % in->shape[d - lead]) * zstride[d - lead];
    }
    char *zq = zp + zoff * (int64_t)es;
    double gv = pt_read_as_double((char *)g->storage->data + goff * (int64_t)pt_dtype_size(g->dtype),
                                  g->dtype);
    pt_write_from_double(zq, z->dtype, pt_read_as_double(zq, z->dtype) + gv);
    for (int d = nd - 1; d >= 0; d--) {
      if (++coord[d] < g->shape[d]) break;
      coord[d] = 0;
    }
  }
  gin[0] = z;
  return PT_OK;
}

/* out (contiguous, shape reps[d] * S[d]) from dim d on: the first tile of each dim is built
 * (source rows copied, element by element when strided), then copied tile by tile with memcpy
 * (tiles under 256 bytes: what is filled doubled) until the reps are filled. */
static void repeat_fill(int d, int nd, const int64_t *S, const int64_t *reps, const int64_t *ostride,
                        const int64_t *sstride, size_t es, char *out, const char *src) {
  int64_t block; /* elements of one tile along dim d (with everything after it) */
  if (d == nd - 1) {
    block = S[d];
    int64_t ss = sstride[d];
    if (ss == 1 || S[d] == 1) memcpy(out, src, (size_t)S[d] * es);
    else if (es == 4)
      for (int64_t k = 0; k < S[d]; k++) ((uint32_t *)out)[k] = ((const uint32_t *)src)[k * ss];
    else if (es == 8)
      for (int64_t k = 0; k < S[d]; k++) ((uint64_t *)out)[k] = ((const uint64_t *)src)[k * ss];
    else
      for (int64_t k = 0; k < S[d]; k++) memcpy(out + k * (int64_t)es, src + k * ss * (int64_t)es, es);
  } else {
    block = S[d] * ostride[d];
    for (int64_t i = 0; i < S[d]; i++)
      repeat_fill(d + 1, nd, S, reps, ostride, sstride, es, out + i * ostride[d] * (int64_t)es,
                  src + i * sstride[d] * (int64_t)es);
  }
  size_t bytes = (size_t)block * es, total = (size_t)(block * reps[d]) * es, filled = bytes;
  if (bytes >= 256) /* copies of the first tile (read while it is in cache) */
    for (; filled < total; filled += bytes) memcpy(out + filled, out, bytes);
  while (filled < total) { /* small tiles: double what is filled */
    size_t c = total - filled < filled ? total - filled : filled;
    memcpy(out + filled, out, c);
    filled += c;
  }
}

pt_status pt_repeat(pt_ctx *ctx, pt_tensor *t, int nreps, const int64_t *reps, pt_tensor **out) {
  if (nreps < t->ndim)
    return pt_fail(ctx, PT_EARG,
                   "repeat_tensor: number of repeat counts (%d) cannot be smaller than the number of "
                   "dimensions of the tensor (%d)",
                   nreps, t->ndim);
  pt_status st = check_ndim(ctx, "repeat_tensor", nreps);
  if (st) return st;
  int lead = nreps - t->ndim;
  int64_t shape[PT_MAX_DIMS], src_shape[PT_MAX_DIMS], src_stride[PT_MAX_DIMS];
  for (int d = 0; d < nreps; d++) {
    if (reps[d] < 0)
      return pt_fail(ctx, PT_EARG, "repeat_tensor: repeat counts must be non-negative, got %lld",
                     (long long)reps[d]);
    src_shape[d] = d < lead ? 1 : t->shape[d - lead];
    src_stride[d] = d < lead ? 0 : t->stride[d - lead];
    if (__builtin_mul_overflow(reps[d], src_shape[d], &shape[d]))
      return pt_fail(ctx, PT_ESHAPE, "repeat_tensor: %lld repeats of dimension %d of size %lld make more "
                     "than 2^63 - 1 elements", (long long)reps[d], d + 1, (long long)src_shape[d]);
  }
  pt_tensor *r;
  if ((st = pt_tensor_empty(ctx, t->dtype, nreps, shape, &r))) return st;
  int64_t n = pt_tensor_numel(r);
  size_t es = pt_dtype_size(t->dtype);
  char *dst = r->storage->data;
  const char *src = pt_tensor_data(t);
  if (n > 0 && nreps > 0) {
    repeat_fill(0, nreps, src_shape, reps, r->stride, src_stride, es, dst, src);
  } else if (n > 0) { /* 0-d: one element */
    memcpy(dst, src, es);
  }
  *out = r;
  pt_node *node;
  return record1(ctx, t, out, "RepeatBackward", repeat_backward, &node);
}

/* --- cat / stack --- */

static pt_status cat_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  int dim = (int)node->ints[0];
  int64_t off = 0;
  for (int k = 0; k < node->n_inputs; k++) {
    int64_t len = node->ints[1 + k];
    if (node->needs_grad[k]) {
      pt_status st = pt_narrow_raw(ctx, g, dim, off, len, &gin[k]);
      if (st) return st;
    }
    off += len;
  }
  return PT_OK;
}

/* Record the graph of out = cat(ts) as a tree with at most PT_NODE_MAX_INPUTS inputs per node:
 * groups become raw views of out's storage carrying their own CatBackward node, so no data is
 * copied twice. */
static pt_status cat_record(pt_ctx *ctx, pt_tensor *out, int n, pt_tensor *const *ts, int dim) {
  if (!pt_autograd_needed(ctx, n, ts)) return PT_OK;
  pt_status st;
  if (n <= PT_NODE_MAX_INPUTS) {
    pt_node *node;
    if ((st = pt_autograd_record(ctx, out, "CatBackward", cat_backward, n, ts, &node))) return st;
    if (node) {
      node->ints[0] = dim;
      for (int k = 0; k < n; k++) node->ints[1 + k] = ts[k]->shape[dim];
      node->n_ints = 1 + n;
    }
    return PT_OK;
  }
  pt_tensor *parts[PT_NODE_MAX_INPUTS] = {NULL};
  int per = (n + PT_NODE_MAX_INPUTS - 1) / PT_NODE_MAX_INPUTS, np = 0;
  int64_t off = 0;
  st = PT_OK;
  for (int lo = 0; lo < n && !st; lo += per) {
    int cnt = n - lo < per ? n - lo : per;
    int64_t len = 0;
    for (int k = lo; k < lo + cnt; k++) len += ts[k]->shape[dim];
    if (cnt == 1) {
      parts[np++] = pt_tensor_retain(ts[lo]);
    } else {
      pt_tensor *p;
      if ((st = pt_narrow_raw(ctx, out, dim, off, len, &p))) break;
      parts[np++] = p;
      st = cat_record(ctx, p, cnt, ts + lo, dim);
    }
    off += len;
  }
  if (!st) st = cat_record(ctx, out, np, parts, dim);
  for (int k = 0; k < np; k++) pt_tensor_release(parts[k]);
  return st;
}

/* Rows [o0, o1) of cat's result seen as (outer, rowlen): each contiguous input of the result's
 * dtype holds (outer, its length along dim * inner) and fills its part of every row (one memcpy
 * for parts of 64 bytes or more, typed copies below that: stack along a new last dim puts one
 * element of each input side by side). */
typedef struct cat_job {
  pt_tensor *const *ts;
  int n;
  bool all_direct;
  size_t es;
  char *dst;
  int64_t outer, inner, rowlen;
  const int64_t *len; /* per input: elements per row, negated when it goes through copy_into */
  const char **src;   /* per input: its data */
} cat_job;

/* blocks of 16 rows: each input's 16 elements read together, written 16 rows apart */
#define CAT_ONE_EACH(TYPE)                                                                 \
  for (int64_t b = o0; b < o1; b += 16) {                                                  \
    int64_t be = o1 - b < 16 ? o1 : b + 16;                                                \
    TYPE *d = (TYPE *)j->dst + b * j->rowlen;                                              \
    for (int k = 0; k < j->n; k++) {                                                       \
      const TYPE *sp = (const TYPE *)j->src[k] + b;                                        \
      for (int64_t o = 0; o < be - b; o++) d[o * j->rowlen + k] = sp[o];                  \
    }                                                                                      \
  }

static void cat_rows(void *arg, int64_t o0, int64_t o1, int tid) {
  (void)tid;
  const cat_job *j = arg;
  size_t es = j->es;
  if (j->all_direct && j->rowlen == j->n) { /* every part one element: stack on a new last dim */
    if (es == 4) CAT_ONE_EACH(uint32_t)
    else if (es == 8) CAT_ONE_EACH(uint64_t)
    else CAT_ONE_EACH(uint8_t)
    return;
  }
  for (int64_t o = o0; o < o1; o++) {
    char *d = j->dst + (size_t)(o * j->rowlen) * es;
    for (int k = 0; k < j->n; k++) {
      int64_t len = j->len[k];
      size_t bytes = (size_t)(len < 0 ? -len : len) * es;
      if (len > 0) {
        const char *sp = j->src[k] + (size_t)(o * len) * es;
        if (bytes >= 64) memcpy(d, sp, bytes);
        else if (es == 4)
          for (int64_t i = 0; i < len; i++) ((uint32_t *)d)[i] = ((const uint32_t *)sp)[i];
        else if (es == 8)
          for (int64_t i = 0; i < len; i++) ((uint64_t *)d)[i] = ((const uint64_t *)sp)[i];
        else
          for (int64_t i = 0; i < len; i++) d[i] = sp[i];
      }
      d += bytes;
    }
  }
}

/* A 1-D tensor of size 0 (torch.zeros(0), the usual start of `out = cat({out, x})`) is left out
 * of cat's shape checks and result, as PyTorch's legacy rule; it still takes part in the result's
 * dtype. */
static bool cat_skipped(const pt_tensor *t) { return t->ndim == 1 && t->shape[0] == 0; }

int pt_cat_ref_ndim(int n, pt_tensor *const *ts) {
  for (int k = 0; k < n; k++)
    if (!cat_skipped(ts[k])) return ts[k]->ndim;
  return n > 0 ? ts[0]->ndim : 0;
}

/* cat of the tensors that are not skipped (some are, some are not): the first kept one converted
 * to the dtype of all of them, so that the result's dtype is the same */
static pt_status cat_without_skipped(pt_ctx *ctx, int n, pt_tensor *const *ts, int dim, pt_tensor **out) {
  pt_tensor **kept = pt_alloc(ctx, (size_t)n * sizeof *kept);
  if (!kept) return PT_ENOMEM;
  pt_dtype all = ts[0]->dtype, some = PT_BOOL;
  int nk = 0;
  for (int k = 0; k < n; k++) {
    all = pt_dtype_promote(all, ts[k]->dtype);
    if (cat_skipped(ts[k])) continue;
    some = nk ? pt_dtype_promote(some, ts[k]->dtype) : ts[k]->dtype;
    kept[nk++] = ts[k];
  }
  pt_tensor *first = NULL;
  pt_status st = PT_OK;
  if (some != all && !(st = pt_to_dtype(ctx, kept[0], all, &first))) kept[0] = first;
  if (!st) st = pt_cat(ctx, nk, kept, dim, out);
  if (first) pt_tensor_release(first);
  pt_free(kept);
  return st;
}

pt_status pt_cat(pt_ctx *ctx, int n, pt_tensor *const *ts, int dim, pt_tensor **out) {
  if (n <= 0) return pt_fail(ctx, PT_EARG, "cat: expected a non-empty list of tensors");
  int nskip = 0;
  for (int k = 0; k < n; k++) {
    if (ts[k]->ndim == 0)
      return pt_fail(ctx, PT_EARG,
                     "cat: zero-dimensional tensor (at position %d) cannot be concatenated", k + 1);
    nskip += cat_skipped(ts[k]);
  }
  if (nskip > 0 && nskip < n) return cat_without_skipped(ctx, n, ts, dim, out);
  pt_tensor *ref = ts[0];
  if (ref->ndim == 0)
    return pt_fail(ctx, PT_EARG, "cat: zero-dimensional tensor (at position 1) cannot be concatenated");
  pt_status st = check_dim(ctx, "cat", ref, dim);
  if (st) return st;
  pt_dtype dt = ref->dtype;
  int64_t shape[PT_MAX_DIMS];
  memcpy(shape, ref->shape, sizeof shape);
  shape[dim] = 0;
  for (int k = 0; k < n; k++) {
    pt_tensor *t = ts[k];
    char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
    if (t->ndim == 0)
      return pt_fail(ctx, PT_EARG,
                     "cat: zero-dimensional tensor (at position %d) cannot be concatenated", k + 1);
    if (t->ndim != ref->ndim)
      return pt_fail(ctx, PT_ESHAPE,
                     "cat: tensors must have the same number of dimensions, got %s and %s",
                     pt_shape_format(ref->ndim, ref->shape, a, sizeof a),
                     pt_shape_format(t->ndim, t->shape, b, sizeof b));
    for (int d = 0; d < t->ndim; d++)
      if (d != dim && t->shape[d] != ref->shape[d])
        return pt_fail(ctx, PT_ESHAPE,
                       "cat: tensors must have the same shape except in dimension %d, got %s and %s",
                       dim + 1, pt_shape_format(ref->ndim, ref->shape, a, sizeof a),
                       pt_shape_format(t->ndim, t->shape, b, sizeof b));
    shape[dim] += t->shape[dim];
    dt = pt_dtype_promote(dt, t->dtype);
  }
  pt_tensor *r;
  if ((st = pt_tensor_empty(ctx, dt, ref->ndim, shape, &r))) return st;
  /* contiguous inputs of the result's dtype go in rows of the result (cat_rows); the others
   * through a narrowed view and pt_tensor_copy_into */
  cat_job j = {.ts = ts, .n = n, .es = pt_dtype_size(dt), .dst = r->storage->data, .outer = 1,
               .inner = 1};
  for (int d = 0; d < dim; d++) j.outer *= shape[d];
  for (int d = dim + 1; d < ref->ndim; d++) j.inner *= shape[d];
  j.rowlen = shape[dim] * j.inner;
  int64_t *lens = pt_alloc(ctx, (size_t)n * (sizeof(int64_t) + sizeof(char *)));
  if (!lens) {
    pt_tensor_release(r);
    return PT_ENOMEM;
  }
  int direct = 0;
  for (int k = 0; k < n; k++) {
    bool d = ts[k]->dtype == dt && pt_tensor_is_contiguous(ts[k]);
    lens[k] = ts[k]->shape[dim] * j.inner * (d ? 1 : -1);
    direct += d && lens[k] != 0;
  }
  const char **srcs = (const char **)(lens + n);
  for (int k = 0; k < n; k++) srcs[k] = pt_tensor_data(ts[k]);
  j.len = lens;
  j.src = srcs;
  int64_t numel = j.outer * j.rowlen;
  if (direct > 0 && numel > 0) {
    j.all_direct = direct == n;
    int64_t grain = 32768 / j.rowlen;
    pt_parallel_for(ctx, j.outer, grain < 1 ? 1 : grain, cat_rows, &j);
  }
  int64_t off = 0;
  for (int k = 0; k < n && !st; k++) {
    if (lens[k] >= 0 && numel > 0) {
      off += ts[k]->shape[dim];
      continue;
    }
    pt_tensor *v;
    if ((st = pt_narrow_raw(ctx, r, dim, off, ts[k]->shape[dim], &v))) break;
    st = pt_tensor_copy_into(ctx, v, ts[k]);
    pt_tensor_release(v);
    off += ts[k]->shape[dim];
  }
  pt_free(lens);
  if (!st) st = cat_record(ctx, r, n, ts, dim);
  if (st) {
    pt_tensor_release(r);
    return st;
  }
  *out = r;
  return PT_OK;
}

pt_status pt_stack(pt_ctx *ctx, int n, pt_tensor *const *ts, int dim, pt_tensor **out) {
  if (n <= 0) return pt_fail(ctx, PT_EARG, "stack: expected a non-empty list of tensors");
  pt_tensor *ref = ts[0];
  if (dim < 0 || dim > ref->ndim)
    return pt_fail(ctx, PT_EARG, "stack: dimension %d out of range (the result has %d dimensions)",
                   dim + 1, ref->ndim + 1);
  if (ref->ndim >= PT_MAX_DIMS)
    return pt_fail(ctx, PT_ESHAPE, "stack: tensors have at most %d dimensions", PT_MAX_DIMS);
  for (int k = 1; k < n; k++) {
    pt_tensor *t = ts[k];
    if (t->ndim != ref->ndim ||
        (t->ndim && memcmp(t->shape, ref->shape, (size_t)t->ndim * sizeof(int64_t)) != 0)) {
      char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
      return pt_fail(ctx, PT_ESHAPE, "stack: tensors must have the same shape, got %s and %s",
                     pt_shape_format(ref->ndim, ref->shape, a, sizeof a),
                     pt_shape_format(t->ndim, t->shape, b, sizeof b));
    }
  }
  pt_tensor **u = pt_alloc(ctx, (size_t)n * sizeof *u);
  if (!u) return PT_ENOMEM;
  pt_status st = PT_OK;
  int made = 0;
  for (; made < n; made++)
    if ((st = pt_unsqueeze(ctx, ts[made], dim, &u[made]))) break;
  if (!st) st = pt_cat(ctx, n, u, dim, out);
  for (int k = 0; k < made; k++) pt_tensor_release(u[k]);
  pt_free(u);
  return st;
}

/* --- split / chunk --- */

int64_t pt_split_count(int64_t size, int64_t split_size) {
  if (size <= 0 || split_size <= 0) return 1;
  return size / split_size + (size % split_size != 0); /* size + split_size - 1 may overflow */
}

static pt_status split_fill(pt_ctx *ctx, pt_tensor *t, int n, const int64_t *sizes,
                            int64_t split_size, int dim, pt_tensor **outs) {
  int64_t off = 0;
  for (int i = 0; i < n; i++) {
    int64_t len = sizes ? sizes[i] : (t->shape[dim] - off < split_size ? t->shape[dim] - off : split_size);
    pt_status st = pt_narrow(ctx, t, dim, off, len, &outs[i]);
    if (st) {
      for (int k = 0; k < i; k++) {
        pt_tensor_release(outs[k]);
        outs[k] = NULL;
      }
      return st;
    }
    off += len;
  }
  return PT_OK;
}

pt_status pt_split(pt_ctx *ctx, pt_tensor *t, int64_t split_size, int dim, pt_tensor **outs) {
  pt_status st = check_dim(ctx, "split", t, dim);
  if (st) return st;
  if (split_size <= 0)
    return pt_fail(ctx, PT_EARG, "split: split size must be positive, got %lld",
                   (long long)split_size);
  int64_t n = pt_split_count(t->shape[dim], split_size);
  return split_fill(ctx, t, (int)n, NULL, split_size, dim, outs);
}

pt_status pt_split_sizes(pt_ctx *ctx, pt_tensor *t, int n, const int64_t *sizes, int dim,
                         pt_tensor **outs) {
  pt_status st = check_dim(ctx, "split", t, dim);
  if (st) return st;
  if (n <= 0) return pt_fail(ctx, PT_EARG, "split: expected at least one split size");
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 0)
      return pt_fail(ctx, PT_EARG, "split: split sizes must be non-negative, got %lld",
                     (long long)sizes[i]);
    if (__builtin_add_overflow(total, sizes[i], &total))
      return pt_fail(ctx, PT_ESHAPE, "split: split sizes add up to more than 2^63 - 1 but dimension %d has size %lld",
                     dim + 1, (long long)t->shape[dim]);
  }
  if (total != t->shape[dim])
    return pt_fail(ctx, PT_ESHAPE,
                   "split: split sizes add up to %lld but dimension %d has size %lld",
                   (long long)total, dim + 1, (long long)t->shape[dim]);
  return split_fill(ctx, t, n, sizes, 0, dim, outs);
}

pt_status pt_chunk(pt_ctx *ctx, pt_tensor *t, int64_t chunks, int dim, int *n_out, pt_tensor **outs) {
  pt_status st = check_dim(ctx, "chunk", t, dim);
  if (st) return st;
  if (chunks <= 0)
    return pt_fail(ctx, PT_EARG, "chunk: number of chunks must be positive, got %lld",
                   (long long)chunks);
  int64_t size = t->shape[dim];
  int64_t split_size = size / chunks + (size % chunks != 0);
  int64_t n = pt_split_count(size, split_size);
  if (size == 0) { /* chunks empty pieces, as torch.chunk */
    if (chunks > PT_CHUNK_EMPTY_MAX)
      return pt_fail(ctx, PT_EARG, "chunk: %lld empty chunks of a dimension of size 0 is too many",
                     (long long)chunks);
    split_size = 0;
    n = chunks;
  }
  if ((st = split_fill(ctx, t, (int)n, NULL, split_size, dim, outs))) return st;
  *n_out = (int)n;
  return PT_OK;
}

/* --- strided views: slice with a step, diagonal, unfold ---
 * Each records its kind (ints[0]), parameters (ints[1..4]) and the input's shape (ints[5..]);
 * the backward rebuilds the same view over zeros of the input's shape and writes grad into it. */

enum { STRIDED_SLICE, STRIDED_DIAGONAL, STRIDED_UNFOLD };

pt_status pt_slice_raw(pt_ctx *ctx, pt_tensor *t, int dim, int64_t start, int64_t count,
                       int64_t step, pt_tensor **out) {
  pt_status st = check_dim(ctx, "slice", t, dim);
  if (st) return st;
  int64_t size = t->shape[dim];
  if (step < 1) return pt_fail(ctx, PT_EARG, "slice: step must be at least 1, got %lld", (long long)step);
  if (start < 0 || count < 0 || start > size || (count > 0 && start + (count - 1) * step >= size))
    return pt_fail(ctx, PT_EARG,
                   "slice: %lld elements from %lld with step %lld out of range for dimension %d of "
                   "size %lld",
                   (long long)count, (long long)start + 1, (long long)step, dim + 1, (long long)size);
  int64_t shape[PT_MAX_DIMS], stride[PT_MAX_DIMS];
  memcpy(shape, t->shape, (size_t)t->ndim * sizeof(int64_t));
  memcpy(stride, t->stride, (size_t)t->ndim * sizeof(int64_t));
  shape[dim] = count;
  stride[dim] = t->stride[dim] * step;
  return pt_tensor_from_storage(ctx, t->storage, t->dtype, t->offset + start * t->stride[dim],
                                t->ndim, shape, stride, out);
}

static pt_status diagonal_raw(pt_ctx *ctx, pt_tensor *t, int64_t offset, int d1, int d2,
                              pt_tensor **out) {
  pt_status st;
  if ((st = check_dim(ctx, "diagonal", t, d1)) || (st = check_dim(ctx, "diagonal", t, d2))) return st;
  if (d1 == d2)
    return pt_fail(ctx, PT_EARG, "diagonal: dim1 and dim2 must be different dimensions, got %d and %d",
                   d1 + 1, d2 + 1);
  int64_t s1 = t->shape[d1], s2 = t->shape[d2], len, start = t->offset;
  if (offset >= 0) {
    len = s2 - offset < s1 ? s2 - offset : s1;
    if (len > 0) start += offset * t->stride[d2];
  } else {
    len = s1 + offset < s2 ? s1 + offset : s2;
    if (len > 0) start -= offset * t->stride[d1];
  }
  if (len < 0) len = 0;
  int64_t shape[PT_MAX_DIMS], stride[PT_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < t->ndim; i++)
    if (i != d1 && i != d2) {
      shape[n] = t->shape[i];
      stride[n++] = t->stride[i];
    }
  shape[n] = len;
  stride[n++] = t->stride[d1] + t->stride[d2];
  return pt_tensor_from_storage(ctx, t->storage, t->dtype, start, n, shape, stride, out);
}

static pt_status unfold_raw(pt_ctx *ctx, pt_tensor *t, int dim, int64_t size, int64_t step,
                            pt_tensor **out) {
  int nd = t->ndim;
  if (nd == 0 ? dim != 0 : (dim < 0 || dim >= nd))
    return pt_fail(ctx, PT_EARG, "unfold: dimension %d out of range (tensor has %d dimensions)",
                   dim + 1, nd);
  int64_t dsize = nd ? t->shape[dim] : 1;
  if (size < 0) return pt_fail(ctx, PT_EARG, "unfold: size must be non-negative, got %lld", (long long)size);
  if (size > dsize)
    return pt_fail(ctx, PT_EARG, "unfold: size %lld is larger than dimension %d of size %lld",
                   (long long)size, dim + 1, (long long)dsize);
  if (step < 1) return pt_fail(ctx, PT_EARG, "unfold: step must be at least 1, got %lld", (long long)step);
  if (nd >= PT_MAX_DIMS)
    return pt_fail(ctx, PT_ESHAPE, "unfold: tensors have at most %d dimensions", PT_MAX_DIMS);
  int64_t shape[PT_MAX_DIMS], stride[PT_MAX_DIMS];
  if (nd == 0) {
    shape[0] = size;
    stride[0] = 1;
    return pt_tensor_from_storage(ctx, t->storage, t->dtype, t->offset, 1, shape, stride, out);
  }
  memcpy(shape, t->shape, (size_t)nd * sizeof(int64_t));
  memcpy(stride, t->stride, (size_t)nd * sizeof(int64_t));
  shape[dim] = (dsize - size) / step + 1;
  stride[dim] = t->stride[dim] * step;
  shape[nd] = size;
  stride[nd] = t->stride[dim];
  return pt_tensor_from_storage(ctx, t->storage, t->dtype, t->offset, nd + 1, shape, stride, out);
}

static pt_status strided_view_raw(pt_ctx *ctx, int kind, pt_tensor *t, const int64_t *p,
                                  pt_tensor **out) {
  switch (kind) {
  case STRIDED_SLICE: return pt_slice_raw(ctx, t, (int)p[0], p[1], p[2], p[3], out);
  case STRIDED_DIAGONAL: return diagonal_raw(ctx, t, p[0], (int)p[1], (int)p[2], out);
  default: return unfold_raw(ctx, t, (int)p[0], p[1], p[2], out);
  }
}

static pt_status strided_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  int kind = (int)node->ints[0];
  const int64_t *p = node->ints + 1;
  pt_tensor *z, *v = NULL;
  pt_status st = pt_tensor_zeros(ctx, g->dtype, node->n_ints - 5, node->ints + 5, &z);
  if (st) return st;
  if (kind == STRIDED_UNFOLD && p[1] > p[2] && z->ndim > 0) {
    /* overlapping windows: element k of every window is a slice with the step, no overlap
     * within one k */
    int dim = (int)p[0], last = g->ndim - 1;
    int64_t nwin = g->shape[dim];
    for (int64_t k = 0; k < p[1] && !st; k++) {
      pt_tensor *gk = NULL;
      if (!(st = pt_slice_raw(ctx, z, dim, k, nwin, p[2], &v)) &&
          !(st = pt_select_raw(ctx, g, last, k, &gk)))
        pt_tensor_add_raw(v, gk);
      pt_tensor_release(gk);
      pt_tensor_release(v);
      v = NULL;
    }
  } else if (!(st = strided_view_raw(ctx, kind, z, p, &v))) {
    st = pt_tensor_copy_into(ctx, v, g);
  }
  pt_tensor_release(v);
  if (st) {
    pt_tensor_release(z);
    return st;
  }
  gin[0] = z;
  return PT_OK;
}

static pt_status strided_view(pt_ctx *ctx, int kind, const char *name, pt_tensor *t,
                              int64_t p0, int64_t p1, int64_t p2, int64_t p3, pt_tensor **out) {
  int64_t p[4] = {p0, p1, p2, p3};
  pt_status st = strided_view_raw(ctx, kind, t, p, out);
  if (st) return st;
  pt_node *node;
  if ((st = record1(ctx, t, out, name, strided_backward, &node))) return st;
  if (node) {
    node->ints[0] = kind;
    for (int i = 0; i < 4; i++) node->ints[1 + i] = p[i];
    save_shape(node, 5, t);
  }
  return PT_OK;
}

pt_status pt_slice(pt_ctx *ctx, pt_tensor *t, int dim, int64_t start, int64_t count, int64_t step,
                   pt_tensor **out) {
  return strided_view(ctx, STRIDED_SLICE, "SliceBackward", t, dim, start, count, step, out);
}

pt_status pt_diagonal(pt_ctx *ctx, pt_tensor *t, int64_t offset, int d1, int d2, pt_tensor **out) {
  return strided_view(ctx, STRIDED_DIAGONAL, "DiagonalBackward", t, offset, d1, d2, 0, out);
}

pt_status pt_unfold(pt_ctx *ctx, pt_tensor *t, int dim, int64_t size, int64_t step, pt_tensor **out) {
  return strided_view(ctx, STRIDED_UNFOLD, "UnfoldBackward", t, dim, size, step, 0, out);
}

/* --- as_strided --- */

/* storage positions of a geometry's elements, row-major, minus lo, plus 1 (an index tensor) */
static void strided_positions(int ndim, const int64_t *shape, const int64_t *stride, int64_t offset,
                              int64_t lo, int64_t *out) {
  const int64_t *strides[1] = {stride};
  pt_iter it;
  pt_iter_init(&it, ndim, shape, 1, strides);
  for (int64_t k = 0; pt_iter_next(&it); k++) out[k] = offset + it.offset[0] - lo + 1;
}

/* the lowest and highest storage position a geometry reaches (it has elements) */
static void strided_span(int ndim, const int64_t *shape, const int64_t *stride, int64_t offset,
                         int64_t *lo, int64_t *hi) {
  int64_t a = offset, b = offset;
  for (int d = 0; d < ndim; d++) {
    int64_t ext = (shape[d] - 1) * stride[d];
    if (ext < 0) a += ext;
    else b += ext;
  }
  *lo = a < *lo ? a : *lo;
  *hi = b > *hi ? b : *hi;
}

/* PyTorch's as_strided_backward: g added into a zero buffer over the storage both geometries
 * reach (output elements sharing a location add up), read back through the input's geometry
 * (input elements sharing a location share its gradient: divided by their count). Public ops
 * (scatter_add, index_select), so a create_graph pass runs it as its own formula. ints: the
 * output's storage offset, then its strides (its shape is the node's out_shape); the input's
 * geometry is its alias's. */
static pt_status as_strided_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *in = node->inputs[0];
  if (!node->needs_grad[0]) return PT_OK;
  int64_t nin = pt_tensor_numel(in), nout = pt_tensor_numel(g);
  if (nin == 0 || nout == 0) return pt_tensor_zeros(ctx, g->dtype, in->ndim, in->shape, &gin[0]);
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  strided_span(in->ndim, in->shape, in->stride, in->offset, &lo, &hi);
  strided_span(node->out_ndim, node->out_shape, node->ints + 1, node->ints[0], &lo, &hi);
  int64_t span = hi - lo + 1, all = -1;
  pt_tensor *po = NULL, *pi = NULL, *z = NULL, *flat = NULL, *acc = NULL, *sel = NULL, *w = NULL,
            *scaled = NULL;
  pt_status st;
  if ((st = pt_tensor_empty(ctx, PT_INT64, 1, &nout, &po)) ||
      (st = pt_tensor_empty(ctx, PT_INT64, 1, &nin, &pi)) ||
      (st = pt_tensor_zeros(ctx, g->dtype, 1, &span, &z)))
    goto done;
  strided_positions(node->out_ndim, node->out_shape, node->ints + 1, node->ints[0], lo,
                    pt_tensor_data(po));
  int64_t *ip = pt_tensor_data(pi);
  strided_positions(in->ndim, in->shape, in->stride, in->offset, lo, ip);
  if ((st = pt_reshape(ctx, g, 1, &all, &flat)) || (st = pt_scatter_add(ctx, z, 0, po, flat, &acc)) ||
      (st = pt_index_select(ctx, acc, 0, pi, &sel)))
    goto done;
  /* input elements sharing a location: each gets its share of the location's gradient */
  bool shared = false;
  {
    int64_t *c = pt_alloc(ctx, (size_t)span * sizeof *c);
    if (!c) {
      st = PT_ENOMEM;
      goto done;
    }
    memset(c, 0, (size_t)span * sizeof *c);
    for (int64_t k = 0; k < nin; k++) shared |= ++c[ip[k] - 1] > 1;
    if (shared && !(st = pt_tensor_empty(ctx, PT_FLOAT64, 1, &nin, &w))) {
      double *cnt = pt_tensor_data(w);
      for (int64_t k = 0; k < nin; k++) cnt[k] = 1.0 / (double)c[ip[k] - 1];
    }
    pt_free(c);
  }
  if (!st && shared) {
    pt_tensor *wt = NULL;
    if (!(st = pt_tensor_to_dtype_raw(ctx, w, g->dtype, &wt))) st = pt_mul(ctx, sel, wt, &scaled);
    pt_tensor_release(wt);
  } else if (!st) {
    scaled = pt_tensor_retain(sel);
  }
  if (!st) st = pt_view(ctx, scaled, in->ndim, in->shape, &gin[0]);
done:
  pt_tensor_release(po);
  pt_tensor_release(pi);
  pt_tensor_release(z);
  pt_tensor_release(flat);
  pt_tensor_release(acc);
  pt_tensor_release(sel);
  pt_tensor_release(w);
  pt_tensor_release(scaled);
  return st;
}

pt_status pt_as_strided(pt_ctx *ctx, pt_tensor *t, int ndim, const int64_t *size,
                        const int64_t *stride, int64_t offset, pt_tensor **out) {
  pt_status st = check_ndim(ctx, "as_strided", ndim);
  if (st) return st;
  char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
  for (int d = 0; d < ndim; d++) {
    if (size[d] < 0)
      return pt_fail(ctx, PT_EARG, "as_strided: sizes must be non-negative, got %s",
                     pt_shape_format(ndim, size, a, sizeof a));
    if (stride[d] < 0)
      return pt_fail(ctx, PT_EARG, "as_strided: negative strides are not supported, got %s",
                     pt_shape_format(ndim, stride, a, sizeof a));
  }
  if (offset < 0)
    return pt_fail(ctx, PT_EARG, "as_strided: storage offset must be at least 1, got %lld",
                   (long long)offset + 1);
  int64_t need = offset, have = (int64_t)(t->storage->nbytes / pt_dtype_size(t->dtype));
  bool overflow = shape_numel_overflows(ndim, size);
  if (!overflow && pt_shape_numel(ndim, size) > 0) {
    need = offset + 1;
    for (int d = 0; d < ndim && !overflow; d++) {
      int64_t span;
      overflow = __builtin_mul_overflow(size[d] - 1, stride[d], &span) ||
                 __builtin_add_overflow(need, span, &need);
    }
  }
  if (overflow) /* the sums would wrap around and pass the check below */
    return pt_fail(ctx, PT_EARG, "as_strided: sizes %s and strides %s reach beyond 2^63 - 1 elements",
                   pt_shape_format(ndim, size, a, sizeof a), pt_shape_format(ndim, stride, b, sizeof b));
  if (need > have)
    return pt_fail(ctx, PT_EARG,
                   "as_strided: sizes %s, strides %s and storage offset %lld reach element %lld of "
                   "a storage of %lld elements",
                   pt_shape_format(ndim, size, a, sizeof a), pt_shape_format(ndim, stride, b, sizeof b),
                   (long long)offset + 1, (long long)need, (long long)have);
  if ((st = pt_tensor_from_storage(ctx, t->storage, t->dtype, offset, ndim, size, stride, out)))
    return st;
  pt_node *node;
  if ((st = record1(ctx, t, out, "AsStridedBackward", as_strided_backward, &node))) return st;
  if (node) {
    node->backward_differentiable = true;
    node->ints[0] = offset;
    for (int d = 0; d < ndim; d++) node->ints[1 + d] = stride[d];
    node->n_ints = 1 + ndim;
  }
  return PT_OK;
}

/* --- in-place geometry: squeeze_, unsqueeze_, t_, transpose_ --- */

pt_status pt_adopt_view(pt_ctx *ctx, const char *fname, pt_tensor *t, pt_tensor *view) {
  if (ctx->grad_enabled && t->requires_grad && !t->grad_fn)
    return pt_fail(ctx, PT_ESTATE,
                   "%s: a leaf tensor that requires grad is used in an in-place operation", fname);
  if (ctx->grad_enabled && t->base && t->base->requires_grad && !t->base->grad_fn)
    return pt_fail(ctx, PT_ESTATE,
                   "%s: a view of a leaf tensor that requires grad is used in an in-place operation",
                   fname);
  if (view == t) return PT_OK; /* t_() of a 0-D or 1-D tensor */
  t->ndim = view->ndim;
  t->offset = view->offset;
  memcpy(t->shape, view->shape, sizeof t->shape);
  memcpy(t->stride, view->stride, sizeof t->stride);
  if (view->grad_fn) { /* t's history goes on through the view's node (input: t as it was) */
    pt_node *n = view->grad_fn;
    view->grad_fn = NULL;
    if (t->grad_fn && t->grad_fn->retain_target == t) t->grad_fn->retain_target = NULL;
    pt_node_release(t->grad_fn);
    t->grad_fn = n;
    if (t->retains_grad) n->retain_target = t;
    t->requires_grad = true;
  }
  return PT_OK;
}
