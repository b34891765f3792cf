/* See ops_resample.h. The tensor is seen as (outer, n, inner) around dim: the output row i of
 * each outer slice is a weighted sum of K input rows of `inner` contiguous elements, which the
 * compiler vectorises; along the last dim (inner = 1) it is a gather per element. This replaced
 * resample.lua's index_select + multiply + add per tap (5 passes over the data per dimension,
 * bilinear 2.8x PyTorch's time). */
#include "ops_resample.h"

#include "dispatch.h"
#include "parallel.h"

#include <string.h>

static const char *const FN = "interpolate";

typedef struct taps_job {
  pt_dtype dt;
  const char *x;
  char *y;
  int64_t n, m, inner, K;
  const int64_t *idx;
  const void *w; /* m * K weights in the data's dtype */
  bool backward; /* scatter y (the output gradient) into x (the input gradient) */
} taps_job;

/* outer slices [b, e) */
static void taps_chunk(void *arg, int64_t b, int64_t e, int tid) {
  (void)tid;
  const taps_job *j = arg;
  int64_t n = j->n, m = j->m, inner = j->inner, K = j->K;
  const int64_t *idx = j->idx;
  PT_DISPATCH_FLOAT(j->dt, {
    const T *w = j->w;
    for (int64_t o = b; o < e; o++) {
      if (j->backward) { /* j->y is the output gradient (m rows), j->x the input gradient (n rows) */
        const T *g = (const T *)j->y + o * m * inner;
        T *gx = (T *)j->x + o * n * inner;
        if (inner == 1) {
          for (int64_t i = 0; i < m; i++)
            for (int64_t k = 0; k < K; k++) gx[idx[i * K + k]] += g[i] * w[i * K + k];
          continue;
        }
        for (int64_t i = 0; i < m; i++) {
          const T *gr = g + i * inner;
          for (int64_t k = 0; k < K; k++) {
            T *dst = gx + idx[i * K + k] * inner;
            const T wk = w[i * K + k];
            for (int64_t c = 0; c < inner; c++) dst[c] += gr[c] * wk;
          }
        }
        continue;
      }
      const T *xs = (const T *)j->x + o * n * inner;
      T *ys = (T *)j->y + o * m * inner;
      if (inner == 1 && K == 2) { /* the last dim, linear: a gather per element */
        for (int64_t i = 0; i < m; i++) ys[i] = xs[idx[2 * i]] * w[2 * i] + xs[idx[2 * i + 1]] * w[2 * i + 1];
      } else if (inner == 1) {
        for (int64_t i = 0; i < m; i++) {
          T acc = xs[idx[i * K]] * w[i * K];
          for (int64_t k = 1; k < K; k++) acc += xs[idx[i * K + k]] * w[i * K + k];
          ys[i] = acc;
        }
      } else {
        for (int64_t i = 0; i < m; i++) {
          T *yr = ys + i * inner;
          const T *x0 = xs + idx[i * K] * inner, w0 = w[i * K];
          for (int64_t c = 0; c < inner; c++) yr[c] = x0[c] * w0;
          for (int64_t k = 1; k < K; k++) {
            const T *xk = xs + idx[i * K + k] * inner, wk = w[i * K + k];
            for (int64_t c = 0; c < inner; c++) yr[c] += xk[c] * wk;
          }
        }
      }
    }
  });
}

static void taps_run(const pt_ctx *ctx, taps_job *j, int64_t outer) {
  int64_t per = j->m * j->inner * j->K; /* work per outer slice */
  int64_t grain = per >= 16384 ? 1 : 16384 / (per ? per : 1);
  if (outer < 2 * grain)
    taps_chunk(j, 0, outer, 0);
  else
    pt_parallel_for(ctx, outer, grain, taps_chunk, j);
}

/* the weights rounded to dt once (pt_alloc'ed; NULL when out of memory, ctx says so) */
static void *typed_weights(pt_ctx *ctx, pt_dtype dt, const pt_tensor *w) {
  int64_t n = pt_tensor_numel(w);
  const double *src = pt_tensor_data(w);
  void *out = pt_alloc(ctx, (size_t)(n ? n : 1) * pt_dtype_size(dt));
  if (!out) return NULL;
  PT_DISPATCH_FLOAT(dt, {
    T *o = out;
    for (int64_t i = 0; i < n; i++) o[i] = (T)src[i];
  });
  return out;
}

static void split_dims(const pt_tensor *t, int dim, int64_t *outer, int64_t *inner) {
  *outer = 1;
  *inner = 1;
  for (int d = 0; d < dim; d++) *outer *= t->shape[d];
  for (int d = dim + 1; d < t->ndim; d++) *inner *= t->shape[d];
}

/* saved: 0 idx, 1 w; ints: dim */
static pt_status taps_backward(pt_ctx *ctx, pt_node *node, pt_tensor *grad_out, pt_tensor **grad_in) {
  pt_tensor *x = node->inputs[0], *idx = node->saved[0], *w = node->saved[1], *g, *gx;
  int dim = (int)node->ints[0];
  pt_status st;
  pt_tensor *gc;
  if ((st = pt_tensor_to_dtype_raw(ctx, grad_out, x->dtype, &gc))) return st;
  st = pt_tensor_contiguous_raw(ctx, gc, &g);
  pt_tensor_release(gc);
  if (st) return st;
  if ((st = pt_tensor_zeros(ctx, x->dtype, x->ndim, x->shape, &gx))) {
    pt_tensor_release(g);
    return st;
  }
  void *wt = typed_weights(ctx, x->dtype, w);
  if (!wt) {
    pt_tensor_release(g);
    pt_tensor_release(gx);
    return PT_ENOMEM;
  }
  int64_t outer, inner;
  split_dims(x, dim, &outer, &inner);
  taps_job j = {x->dtype, pt_tensor_data(gx), pt_tensor_data(g), x->shape[dim], idx->shape[0],
                inner, idx->shape[1], pt_tensor_data(idx), wt, true};
  taps_run(ctx, &j, outer);
  pt_free(wt);
  pt_tensor_release(g);
  grad_in[0] = gx;
  return PT_OK;
}

pt_status pt_taps_along(pt_ctx *ctx, pt_tensor *x, int dim, pt_tensor *idx, pt_tensor *w, pt_tensor **out) {
  if (x->dtype != PT_FLOAT32 && x->dtype != PT_FLOAT64)
    return pt_fail(ctx, PT_EARG, "%s: expected a float32 or float64 input, got %s", FN, pt_dtype_name(x->dtype));
  if (dim < 0 || dim >= x->ndim)
    return pt_fail(ctx, PT_EARG, "%s: dimension %d out of range for a %d-D input", FN, dim + 1, x->ndim);
  if (idx->dtype != PT_INT64 || idx->ndim != 2 || w->dtype != PT_FLOAT64 || w->ndim != 2 ||
      idx->shape[0] != w->shape[0] || idx->shape[1] != w->shape[1] || idx->shape[1] < 1 ||
      !pt_tensor_is_contiguous(idx) || !pt_tensor_is_contiguous(w))
    return pt_fail(ctx, PT_EARG, "%s: taps must be contiguous int64 and float64 {m, K} tensors", FN);
  int64_t n = x->shape[dim], m = idx->shape[0], K = idx->shape[1];
  const int64_t *ip = pt_tensor_data(idx);
  for (int64_t i = 0; i < m * K; i++)
    if (ip[i] < 0 || ip[i] >= n)
      return pt_fail(ctx, PT_EARG, "%s: tap %lld out of range for dimension %d of size %lld", FN,
                     (long long)ip[i], dim + 1, (long long)n);
  pt_tensor *xc, *y;
  pt_status st;
  if ((st = pt_tensor_contiguous_raw(ctx, x, &xc))) return st;
  int64_t shape[PT_MAX_DIMS];
  memcpy(shape, x->shape, sizeof shape);
  shape[dim] = m;
  if ((st = pt_tensor_empty(ctx, x->dtype, x->ndim, shape, &y))) {
    pt_tensor_release(xc);
    return st;
  }
  void *wt = typed_weights(ctx, x->dtype, w);
  if (!wt) {
    pt_tensor_release(xc);
    pt_tensor_release(y);
    return PT_ENOMEM;
  }
  int64_t outer, inner;
  split_dims(x, dim, &outer, &inner);
  taps_job j = {x->dtype, pt_tensor_data(xc), pt_tensor_data(y), n, m, inner, K, ip, wt, false};
  if (m > 0 && outer > 0 && inner > 0) taps_run(ctx, &j, outer);
  pt_free(wt);
  pt_tensor_release(xc);
  pt_node *node;
  if ((st = pt_autograd_record(ctx, y, "UpsampleBackward", taps_backward, 1, &x, &node))) {
    pt_tensor_release(y);
    return st;
  }
  if (node) {
    pt_node_save(node, 0, pt_tensor_retain(idx));
    pt_node_save(node, 1, pt_tensor_retain(w));
    node->ints[0] = dim;
    node->n_ints = 1;
  }
  *out = y;
  return PT_OK;
}
