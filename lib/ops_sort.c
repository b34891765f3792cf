/* See ops_sort.h. Work is organised in lanes: a contiguous copy of the input seen as
 * {outer, n, inner}, lane (o, j) holding the n elements o*n*inner + i*inner + j. */
#include "ops_sort.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct lanes {
  int64_t outer, n, inner;
} lanes;

static lanes lanes_of(const pt_tensor *t, int dim) {
  lanes l = {1, t->ndim ? t->shape[dim] : 1, 1};
  for (int i = 0; i < dim; i++) l.outer *= t->shape[i];
  for (int i = dim + 1; i < t->ndim; i++) l.inner *= t->shape[i];
  return l;
}

static pt_status check_dim(pt_ctx *ctx, const char *fn, const pt_tensor *t, int dim) {
  int n = t->ndim ? t->ndim : 1;
  if (dim < 0 || dim >= n)
    return pt_fail(ctx, PT_EARG, "%s: dimension %d out of range (tensor has %d dimensions)", fn,
                   dim + 1, t->ndim);
  return PT_OK;
}

typedef struct keyed {
  double v;
  int64_t i;
} keyed;

/* NaN is the largest; equal keys keep index order */
static int cmp_asc(const void *pa, const void *pb) {
  const keyed *a = pa, *b = pb;
  bool na = isnan(a->v), nb = isnan(b->v);
  if (na != nb) return na ? 1 : -1;
  if (!na && a->v != b->v) return a->v < b->v ? -1 : 1;
  return a->i < b->i ? -1 : (a->i > b->i);
}

static int cmp_desc(const void *pa, const void *pb) {
  const keyed *a = pa, *b = pb;
  bool na = isnan(a->v), nb = isnan(b->v);
  if (na != nb) return na ? -1 : 1;
  if (!na && a->v != b->v) return a->v > b->v ? -1 : 1;
  return a->i < b->i ? -1 : (a->i > b->i);
}

typedef int (*keyed_cmp)(const void *, const void *);

static void sift_down(keyed *h, int64_t k, int64_t i, keyed_cmp cmp) {
  for (;;) {
    int64_t c = 2 * i + 1;
    if (c >= k) return;
    if (c + 1 < k && cmp(&h[c + 1], &h[c]) > 0) c++;
    if (cmp(&h[c], &h[i]) <= 0) return;
    keyed t = h[i];
    h[i] = h[c];
    h[c] = t;
    i = c;
  }
}

/* buf[0..k) becomes the first k of buf[0..n) in cmp's order, sorted. cmp is a total order
 * (ties broken by index), so this is exactly the head of a full sort: a full sort for a small
 * k (top-5 of 1000) was 60-100x slower than PyTorch's selection. */
static void first_k(keyed *buf, int64_t n, int64_t k, keyed_cmp cmp) {
  if (k == 0) return;
  if (k * 8 >= n) {
    qsort(buf, (size_t)n, sizeof *buf, cmp);
    return;
  }
  for (int64_t i = k / 2 - 1; i >= 0; i--) sift_down(buf, k, i, cmp); /* the worst kept at the root */
  for (int64_t i = k; i < n; i++)
    if (cmp(&buf[i], &buf[0]) < 0) {
      buf[0] = buf[i];
      sift_down(buf, k, 0, cmp);
    }
  qsort(buf, (size_t)k, sizeof *buf, cmp);
}

/* Backward of a selection along dim: scatter grad_out into zeros at the saved indices. */
static pt_status select_backward(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gin) {
  pt_tensor *x = node->inputs[0], *idx = node->saved[0], *g = NULL, *gx = NULL;
  int dim = (int)node->ints[0];
  pt_status st;
  if ((st = pt_tensor_contiguous_raw(ctx, gout, &g)) || (st = pt_tensor_zeros_like(ctx, x, &gx))) {
    pt_tensor_release(g);
    return st;
  }
  lanes lx = lanes_of(x, dim), lo = lanes_of(idx, dim);
  const int64_t *ip = pt_tensor_data(idx);
  for (int64_t o = 0; o < lo.outer; o++)
    for (int64_t j = 0; j < lo.inner; j++)
      for (int64_t k = 0; k < lo.n; k++) {
        int64_t src = (o * lo.n + k) * lo.inner + j;
        int64_t dst = (o * lx.n + ip[src]) * lx.inner + j;
        if (gx->dtype == PT_FLOAT32)
          ((float *)pt_tensor_data(gx))[dst] += ((const float *)pt_tensor_data(g))[src];
        else
          ((double *)pt_tensor_data(gx))[dst] += ((const double *)pt_tensor_data(g))[src];
      }
  pt_tensor_release(g);
  gin[0] = gx;
  return PT_OK;
}

static pt_status sorted_k(pt_ctx *ctx, const char *fn, pt_tensor *t, int64_t k, int dim, bool desc,
                          pt_tensor **values, pt_tensor **indices) {
  pt_status st = check_dim(ctx, fn, t, dim);
  if (st) return st;
  lanes l = lanes_of(t, dim);
  if (k < 0 || k > l.n)
    return pt_fail(ctx, PT_EARG, "%s: k=%lld out of range for dimension %d of size %lld", fn,
                   (long long)k, dim + 1, (long long)l.n);
  int64_t shape[PT_MAX_DIMS];
  memcpy(shape, t->shape, sizeof shape);
  if (t->ndim) shape[dim] = k;
  pt_tensor *tc = NULL, *v = NULL, *ix = NULL;
  keyed *buf = NULL;
  if ((st = pt_tensor_contiguous_raw(ctx, t, &tc)) || (st = pt_tensor_empty(ctx, t->dtype, t->ndim, shape, &v)) ||
      (st = pt_tensor_empty(ctx, PT_INT64, t->ndim, shape, &ix)))
    goto done;
  buf = pt_alloc(ctx, (size_t)(l.n ? l.n : 1) * sizeof *buf);
  if (!buf) {
    st = PT_ENOMEM;
    goto done;
  }
  size_t es = pt_dtype_size(t->dtype);
  const char *src = pt_tensor_data(tc);
  char *vp = pt_tensor_data(v);
  int64_t *ip = pt_tensor_data(ix);
  for (int64_t o = 0; o < l.outer; o++)
    for (int64_t j = 0; j < l.inner; j++) {
      for (int64_t i = 0; i < l.n; i++) {
        buf[i].v = pt_read_as_double(src + ((o * l.n + i) * l.inner + j) * (int64_t)es, t->dtype);
        buf[i].i = i;
      }
      first_k(buf, l.n, k, desc ? cmp_desc : cmp_asc);
      for (int64_t i = 0; i < k; i++) {
        int64_t at = (o * k + i) * l.inner + j;
        memcpy(vp + at * (int64_t)es, src + ((o * l.n + buf[i].i) * l.inner + j) * (int64_t)es, es);
        ip[at] = buf[i].i;
      }
    }
  pt_node *node;
  if (pt_dtype_is_floating(t->dtype) &&
      (st = pt_autograd_record(ctx, v, desc ? "SortBackward" : "SortBackward", select_backward, 1, &t, &node)))
    goto done;
  if (pt_dtype_is_floating(t->dtype) && node) {
    pt_node_save(node, 0, pt_tensor_retain(ix));
    node->ints[0] = dim;
    node->n_ints = 1;
  }
done:
  pt_free(buf);
  pt_tensor_release(tc);
  if (st) {
    pt_tensor_release(v);
    pt_tensor_release(ix);
    return st;
  }
  *values = v;
  if (indices)
    *indices = ix;
  else
    pt_tensor_release(ix);
  return PT_OK;
}

pt_status pt_sort(pt_ctx *ctx, pt_tensor *t, int dim, bool descending, pt_tensor **values,
                  pt_tensor **indices) {
  int64_t n = t->ndim ? t->shape[dim < 0 || dim >= t->ndim ? 0 : dim] : 1;
  return sorted_k(ctx, "sort", t, n, dim, descending, values, indices);
}

pt_status pt_topk(pt_ctx *ctx, pt_tensor *t, int64_t k, int dim, bool largest, pt_tensor **values,
                  pt_tensor **indices) {
  return sorted_k(ctx, "topk", t, k, dim, largest, values, indices);
}

/* --- scans --- */

static pt_status scan(pt_ctx *ctx, const char *fn, pt_tensor *t, int dim, bool prod, pt_tensor **out);

static pt_status cumsum_backward(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gin) {
  /* d/dx_i of sum_k y_k g_k = sum_{k >= i} g_k: a reversed cumulative sum */
  int dim = (int)node->ints[0];
  pt_tensor *g, *r;
  pt_status st = pt_tensor_contiguous_raw(ctx, gout, &g);
  if (st) return st;
  if ((st = pt_tensor_empty_like(ctx, g, &r))) {
    pt_tensor_release(g);
    return st;
  }
  lanes l = lanes_of(g, dim);
  for (int64_t o = 0; o < l.outer; o++)
    for (int64_t j = 0; j < l.inner; j++) {
      double acc = 0;
      for (int64_t i = l.n - 1; i >= 0; i--) {
        int64_t at = (o * l.n + i) * l.inner + j;
        acc += pt_read_as_double((char *)pt_tensor_data(g) + at * (int64_t)pt_dtype_size(g->dtype), g->dtype);
        pt_write_from_double((char *)pt_tensor_data(r) + at * (int64_t)pt_dtype_size(r->dtype), r->dtype, acc);
      }
    }
  pt_tensor_release(g);
  gin[0] = r;
  return PT_OK;
}

static pt_status cumprod_backward(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gin) {
  /* dy_k/dx_i = prod_{m <= k, m != i} x_m; computed directly (O(n^2) per lane, exact with zeros) */
  int dim = (int)node->ints[0];
  pt_tensor *x = node->saved[0], *g, *r;
  pt_status st = pt_tensor_contiguous_raw(ctx, gout, &g);
  if (st) return st;
  if ((st = pt_tensor_zeros_like(ctx, x, &r))) {
    pt_tensor_release(g);
    return st;
  }
  lanes l = lanes_of(x, dim);
  size_t es = pt_dtype_size(x->dtype);
  const char *xp = pt_tensor_data(x), *gp = pt_tensor_data(g);
  char *rp = pt_tensor_data(r);
  for (int64_t o = 0; o < l.outer; o++)
    for (int64_t j = 0; j < l.inner; j++)
      for (int64_t i = 0; i < l.n; i++) {
        double sum = 0, prefix = 1;
        for (int64_t m = 0; m < i; m++)
          prefix *= pt_read_as_double(xp + ((o * l.n + m) * l.inner + j) * (int64_t)es, x->dtype);
        double run = prefix;
        for (int64_t k = i; k < l.n; k++) {
          if (k > i) run *= pt_read_as_double(xp + ((o * l.n + k) * l.inner + j) * (int64_t)es, x->dtype);
          sum += run * pt_read_as_double(gp + ((o * l.n + k) * l.inner + j) * (int64_t)es, x->dtype);
        }
        pt_write_from_double(rp + ((o * l.n + i) * l.inner + j) * (int64_t)es, x->dtype, sum);
      }
  pt_tensor_release(g);
  gin[0] = r;
  return PT_OK;
}

static pt_status scan(pt_ctx *ctx, const char *fn, pt_tensor *t, int dim, bool prod, pt_tensor **out) {
  pt_status st = check_dim(ctx, fn, t, dim);
  if (st) return st;
  pt_dtype dt = pt_dtype_is_floating(t->dtype) ? t->dtype : PT_INT64;
  pt_tensor *tc = NULL, *r = NULL;
  if ((st = pt_tensor_to_dtype_raw(ctx, t, dt, &tc))) return st;
  pt_tensor *c2;
  if ((st = pt_tensor_contiguous_raw(ctx, tc, &c2))) {
    pt_tensor_release(tc);
    return st;
  }
  pt_tensor_release(tc);
  tc = c2;
  if ((st = pt_tensor_empty_like(ctx, tc, &r))) goto done;
  lanes l = lanes_of(tc, dim);
  size_t es = pt_dtype_size(dt);
  for (int64_t o = 0; o < l.outer; o++)
    for (int64_t j = 0; j < l.inner; j++) {
      if (dt == PT_INT64) {
        int64_t acc = prod ? 1 : 0;
        for (int64_t i = 0; i < l.n; i++) {
          int64_t at = (o * l.n + i) * l.inner + j;
          int64_t v = ((const int64_t *)pt_tensor_data(tc))[at];
          acc = prod ? acc * v : acc + v;
          ((int64_t *)pt_tensor_data(r))[at] = acc;
        }
      } else {
        double acc = prod ? 1 : 0;
        for (int64_t i = 0; i < l.n; i++) {
          int64_t at = (o * l.n + i) * l.inner + j;
          double v = pt_read_as_double((char *)pt_tensor_data(tc) + at * (int64_t)es, dt);
          acc = prod ? acc * v : acc + v;
          pt_write_from_double((char *)pt_tensor_data(r) + at * (int64_t)es, dt, acc);
        }
      }
    }
  if (pt_dtype_is_floating(dt)) {
    pt_node *node;
    if ((st = pt_autograd_record(ctx, r, prod ? "CumprodBackward" : "CumsumBackward",
                                 prod ? cumprod_backward : cumsum_backward, 1, &t, &node)))
      goto done;
    if (node) {
      node->ints[0] = dim;
      node->n_ints = 1;
      if (prod) pt_node_save(node, 0, pt_tensor_retain(tc));
    }
  }
done:
  pt_tensor_release(tc);
  if (st) {
    pt_tensor_release(r);
    return st;
  }
  *out = r;
  return PT_OK;
}

pt_status pt_cumsum(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out) {
  return scan(ctx, "cumsum", t, dim, false, out);
}

pt_status pt_cumprod(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out) {
  return scan(ctx, "cumprod", t, dim, true, out);
}

/* --- all / any --- */

static pt_status bool_reduce(pt_ctx *ctx, const char *fn, pt_tensor *t, int dim, bool keepdim, bool is_all,
                             pt_tensor **out) {
  pt_status st;
  int64_t shape[PT_MAX_DIMS];
  int nd = 0;
  lanes l;
  if (dim < 0) {
    l = (lanes){1, pt_tensor_numel(t), 1};
    if (keepdim)
      for (nd = 0; nd < t->ndim; nd++) shape[nd] = 1;
  } else {
    if ((st = check_dim(ctx, fn, t, dim))) return st;
    l = lanes_of(t, dim);
    for (int i = 0; i < t->ndim; i++)
      if (i != dim) shape[nd++] = t->shape[i];
      else if (keepdim) shape[nd++] = 1;
  }
  pt_tensor *tc, *r;
  if ((st = pt_tensor_contiguous_raw(ctx, t, &tc))) return st;
  if ((st = pt_tensor_empty(ctx, PT_BOOL, nd, shape, &r))) {
    pt_tensor_release(tc);
    return st;
  }
  size_t es = pt_dtype_size(t->dtype);
  uint8_t *rp = pt_tensor_data(r);
  for (int64_t o = 0; o < l.outer; o++)
    for (int64_t j = 0; j < l.inner; j++) {
      bool acc = is_all;
      for (int64_t i = 0; i < l.n; i++) {
        double v = pt_read_as_double((char *)pt_tensor_data(tc) + ((o * l.n + i) * l.inner + j) * (int64_t)es, t->dtype);
        if (is_all && v == 0) { acc = false; break; }
        if (!is_all && v != 0) { acc = true; break; }
      }
      rp[o * l.inner + j] = acc;
    }
  pt_tensor_release(tc);
  *out = r;
  return PT_OK;
}

pt_status pt_all(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out) {
  return bool_reduce(ctx, "all", t, dim, keepdim, true, out);
}

pt_status pt_any(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out) {
  return bool_reduce(ctx, "any", t, dim, keepdim, false, out);
}
