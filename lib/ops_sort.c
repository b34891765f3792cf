/* See ops_sort.h. Work is organised in lanes: a contiguous copy of the input seen as
 * {outer, n, inner}, lane (o, j) holding the n elements o*n*inner + i*inner + j. */
#include "ops_sort.h"
#include "dispatch.h"
#include "ops_shape.h"
#include "parallel.h"

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

/* y = the running sum (or product) of x along the lanes of l, accumulated in double in index
 * order (from the last index down with reverse: cumsum's backward), stored in x's float dtype.
 * The inner lanes go side by side, row by row through memory (lane by lane through a double
 * per element was 4x slower than PyTorch), blocks over the threads; each lane sees the same
 * operations in the same order. */
typedef struct scan_job {
  pt_dtype dt;
  const void *x;
  void *y;
  lanes l;
  bool prod, reverse, oom;
} scan_job;

static void scan_chunk(void *arg, int64_t begin, int64_t end, int tid) {
  (void)tid;
  scan_job *a = arg;
  const int64_t n = a->l.n, in = a->l.inner;
  double one, *acc = in == 1 ? &one : malloc((size_t)in * sizeof *acc);
  if (!acc) {
    a->oom = true;
    return;
  }
  bool prod = a->prod, reverse = a->reverse;
  PT_DISPATCH_FLOAT(a->dt, {
    const T *xp = a->x;
    T *yp = a->y;
    for (int64_t o = begin; o < end; o++) {
      if (in == 1) { /* one lane: the running value in a register */
        const T *row = xp + o * n;
        T *out = yp + o * n;
        double v = prod ? 1 : 0;
        for (int64_t ii = 0; ii < n; ii++) {
          int64_t i = reverse ? n - 1 - ii : ii;
          v = prod ? v * (double)row[i] : v + (double)row[i];
          out[i] = (T)v;
        }
        continue;
      }
      for (int64_t j = 0; j < in; j++) acc[j] = prod ? 1 : 0;
      for (int64_t ii = 0; ii < n; ii++) {
        int64_t i = reverse ? n - 1 - ii : ii;
        const T *row = xp + (o * n + i) * in;
        T *out = yp + (o * n + i) * in;
        if (prod)
          for (int64_t j = 0; j < in; j++) out[j] = (T)(acc[j] *= (double)row[j]);
        else
          for (int64_t j = 0; j < in; j++) out[j] = (T)(acc[j] += (double)row[j]);
      }
    }
  });
  if (in != 1) free(acc);
}

static pt_status scan_float(pt_ctx *ctx, pt_dtype dt, const void *x, void *y, lanes l, bool prod,
                            bool reverse) {
  scan_job job = {dt, x, y, l, prod, reverse, false};
  int64_t per = l.n * l.inner;
  pt_parallel_for(ctx, l.outer, (1 << 16) / (per > 0 ? per : 1) + 1, scan_chunk, &job);
  return job.oom ? pt_fail(ctx, PT_ENOMEM, "scan: out of memory") : PT_OK;
}

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
  st = scan_float(ctx, g->dtype, pt_tensor_data(g), pt_tensor_data(r), lanes_of(g, dim), false, true);
  pt_tensor_release(g);
  if (st) {
    pt_tensor_release(r);
    return st;
  }
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
  if (dt == PT_INT64) {
    for (int64_t o = 0; o < l.outer; o++)
      for (int64_t j = 0; j < l.inner; j++) {
        int64_t acc = prod ? 1 : 0;
        for (int64_t i = 0; i < l.n; i++) {
          int64_t at = (o * l.n + i) * l.inner + j;
          int64_t v = ((const int64_t *)pt_tensor_data(tc))[at];
          acc = prod ? acc * v : acc + v;
          ((int64_t *)pt_tensor_data(r))[at] = acc;
        }
      }
  } else if ((st = scan_float(ctx, dt, pt_tensor_data(tc), pt_tensor_data(r), l, prod, false))) {
    goto done;
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

/* --- kthvalue, median, mode --- */

static void swap_keyed(keyed *a, int64_t i, int64_t j) {
  keyed t = a[i];
  a[i] = a[j];
  a[j] = t;
}

/* Reorders a[0..n) so that a[k] is the element a full sort by cmp puts there (cmp is a total
 * order: keys are distinct through the index), in O(n) on average (quickselect, median of three). */
static void nth_element(keyed *a, int64_t n, int64_t k, keyed_cmp cmp) {
  int64_t lo = 0, hi = n - 1;
  while (hi - lo > 16) {
    int64_t mid = lo + (hi - lo) / 2;
    if (cmp(&a[mid], &a[lo]) < 0) swap_keyed(a, mid, lo);
    if (cmp(&a[hi], &a[lo]) < 0) swap_keyed(a, hi, lo);
    if (cmp(&a[hi], &a[mid]) < 0) swap_keyed(a, hi, mid);
    keyed p = a[mid];
    int64_t i = lo, j = hi;
    while (i <= j) {
      while (cmp(&a[i], &p) < 0) i++;
      while (cmp(&p, &a[j]) < 0) j--;
      if (i <= j) swap_keyed(a, i++, j--);
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else return;
  }
  for (int64_t i = lo + 1; i <= hi; i++)
    for (int64_t j = i; j > lo && cmp(&a[j], &a[j - 1]) < 0; j--) swap_keyed(a, j, j - 1);
}

typedef enum selkind { SEL_KTH, SEL_MEDIAN, SEL_MODE } selkind;

static bool same_value(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* One value per lane along dim, chosen by kind; values in t's dtype (exact copies), 0-based
 * indices. The node saves the indices with dim kept (size 1), which select_backward reads. */
static pt_status select_lanes(pt_ctx *ctx, const char *fn, selkind kind, pt_tensor *t, int64_t k, int dim,
                              bool keepdim, pt_tensor **values, pt_tensor **indices) {
  pt_status st = check_dim(ctx, fn, t, dim);
  if (st) return st;
  lanes l = lanes_of(t, dim);
  if (l.n == 0) {
    char b[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_EARG, "%s: cannot reduce over an empty dimension (shape %s)", fn,
                   pt_shape_format(t->ndim, t->shape, b, sizeof b));
  }
  if (kind == SEL_KTH && (k < 1 || k > l.n))
    return pt_fail(ctx, PT_EARG, "%s: k=%lld out of range for dimension %d of size %lld (k counts from 1)",
                   fn, (long long)k, dim + 1, (long long)l.n);
  int64_t kshape[PT_MAX_DIMS], oshape[PT_MAX_DIMS];
  int ond = 0;
  for (int i = 0; i < t->ndim; i++) {
    kshape[i] = i == dim ? 1 : t->shape[i];
    if (i != dim || keepdim) oshape[ond++] = kshape[i];
  }
  pt_tensor *tc = NULL, *v = NULL, *ix = NULL, *ixo = NULL;
  keyed *buf = NULL;
  if ((st = pt_tensor_contiguous_raw(ctx, t, &tc)) || (st = pt_tensor_empty(ctx, t->dtype, ond, oshape, &v)) ||
      (st = pt_tensor_empty(ctx, PT_INT64, t->ndim, kshape, &ix)))
    goto done;
  buf = pt_alloc(ctx, (size_t)l.n * sizeof *buf);
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
      int64_t sel = -1;
      for (int64_t i = 0; i < l.n; i++) {
        buf[i].v = pt_read_as_double(src + ((o * l.n + i) * l.inner + j) * (int64_t)es, t->dtype);
        buf[i].i = i;
        if (kind == SEL_MEDIAN && sel < 0 && isnan(buf[i].v)) sel = i; /* the first NaN */
      }
      if (kind == SEL_KTH) {
        nth_element(buf, l.n, k - 1, cmp_asc);
        sel = buf[k - 1].i;
      } else if (kind == SEL_MEDIAN && sel < 0) {
        nth_element(buf, l.n, (l.n - 1) / 2, cmp_asc);
        sel = buf[(l.n - 1) / 2].i;
      } else if (kind == SEL_MODE) { /* runs of equal values in sorted order: the longest, the
                                        first (smallest) on ties, its last (largest) index */
        qsort(buf, (size_t)l.n, sizeof *buf, cmp_asc);
        int64_t best = 0;
        for (int64_t a = 0, b; a < l.n; a = b) {
          for (b = a + 1; b < l.n && same_value(buf[b].v, buf[a].v);) b++;
          if (b - a > best) {
            best = b - a;
            sel = buf[b - 1].i;
          }
        }
      }
      int64_t at = o * l.inner + j;
      memcpy(vp + at * (int64_t)es, src + ((o * l.n + sel) * l.inner + j) * (int64_t)es, es);
      ip[at] = sel;
    }
  if (pt_dtype_is_floating(t->dtype)) {
    pt_node *node;
    static const char *const names[] = {"KthvalueBackward", "MedianBackward", "ModeBackward"};
    if ((st = pt_autograd_record(ctx, v, names[kind], select_backward, 1, &t, &node))) goto done;
    if (node) {
      pt_node_save(node, 0, pt_tensor_retain(ix));
      node->ints[0] = dim;
      node->n_ints = 1;
    }
  }
  if (indices) st = pt_view_raw(ctx, ix, ond, oshape, &ixo);
done:
  pt_free(buf);
  pt_tensor_release(tc);
  pt_tensor_release(ix);
  if (st) {
    pt_tensor_release(v);
    pt_tensor_release(ixo);
    return st;
  }
  *values = v;
  if (indices) *indices = ixo;
  return PT_OK;
}

pt_status pt_kthvalue(pt_ctx *ctx, pt_tensor *t, int64_t k, int dim, bool keepdim, pt_tensor **values,
                      pt_tensor **indices) {
  return select_lanes(ctx, "kthvalue", SEL_KTH, t, k, dim, keepdim, values, indices);
}

pt_status pt_median_dim(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **values,
                        pt_tensor **indices) {
  return select_lanes(ctx, "median", SEL_MEDIAN, t, 0, dim, keepdim, values, indices);
}

pt_status pt_mode(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **values,
                  pt_tensor **indices) {
  return select_lanes(ctx, "mode", SEL_MODE, t, 0, dim, keepdim, values, indices);
}

pt_status pt_median(pt_ctx *ctx, pt_tensor *t, pt_tensor **out) {
  int64_t n = pt_tensor_numel(t);
  if (n == 0) {
    if (!pt_dtype_is_floating(t->dtype))
      return pt_fail(ctx, PT_EARG, "median: cannot take the median of an empty %s tensor",
                     pt_dtype_name(t->dtype));
    return pt_tensor_scalar(ctx, t->dtype, NAN, out);
  }
  pt_tensor *flat = NULL;
  pt_status st = pt_reshape(ctx, t, 1, &n, &flat); /* through autograd: the gradient flows back */
  if (st) return st;
  st = select_lanes(ctx, "median", SEL_MEDIAN, flat, 0, 0, false, out, NULL);
  pt_tensor_release(flat);
  return st;
}

/* --- nonzero, unique, bincount, searchsorted --- */

/* Runs BODY with T bound to t's element type (bool as uint8_t). */
#define DISPATCH_ALL(dt, ...)                                                                      \
  do {                                                                                             \
    switch (dt) {                                                                                  \
    case PT_FLOAT32: {                                                                             \
      typedef float T;                                                                             \
      __VA_ARGS__ break;                                                                           \
    }                                                                                              \
    case PT_FLOAT64: {                                                                             \
      typedef double T;                                                                            \
      __VA_ARGS__ break;                                                                           \
    }                                                                                              \
    case PT_INT64: {                                                                               \
      typedef int64_t T;                                                                           \
      __VA_ARGS__ break;                                                                           \
    }                                                                                              \
    case PT_INT32: {                                                                               \
      typedef int32_t T;                                                                           \
      __VA_ARGS__ break;                                                                           \
    }                                                                                              \
    default: {                                                                                     \
      typedef uint8_t T;                                                                           \
      __VA_ARGS__ break;                                                                           \
    }                                                                                              \
    }                                                                                              \
  } while (0)

pt_status pt_nonzero(pt_ctx *ctx, pt_tensor *t, pt_tensor **out) {
  pt_tensor *tc = NULL, *r = NULL;
  pt_status st = pt_tensor_contiguous_raw(ctx, t, &tc);
  if (st) return st;
  const int64_t n = pt_tensor_numel(tc);
  int64_t cnt = 0;
  const int nd = t->ndim;
  DISPATCH_ALL(tc->dtype, {
    const T *xp = pt_tensor_data(tc);
    for (int64_t i = 0; i < n; i++) cnt += xp[i] != 0; /* NaN != 0 */
  });
  if ((st = pt_tensor_empty(ctx, PT_INT64, 2, (int64_t[]){cnt, nd}, &r))) goto done;
  int64_t *rp = pt_tensor_data(r), idx[PT_MAX_DIMS] = {0};
  const int64_t last = nd ? t->shape[nd - 1] : 1;
  DISPATCH_ALL(tc->dtype, {
    const T *xp = pt_tensor_data(tc);
    for (int64_t i = 0; i < n; i += last) { /* one row of the last dim at a time */
      for (int64_t j = 0; j < last; j++)
        if (xp[i + j] != 0) {
          if (nd) idx[nd - 1] = j;
          memcpy(rp, idx, (size_t)nd * sizeof *idx);
          rp += nd;
        }
      for (int d = nd - 2; d >= 0; d--) { /* the next row's index */
        if (++idx[d] < t->shape[d]) break;
        idx[d] = 0;
      }
    }
  });
done:
  pt_tensor_release(tc);
  if (st) return st;
  *out = r;
  return PT_OK;
}

typedef struct ikeyed {
  int64_t v, i;
} ikeyed;

static int cmp_iasc(const void *pa, const void *pb) {
  const ikeyed *a = pa, *b = pb;
  if (a->v != b->v) return a->v < b->v ? -1 : 1;
  return a->i < b->i ? -1 : (a->i > b->i);
}

pt_status pt_unique(pt_ctx *ctx, pt_tensor *t, pt_tensor **values, pt_tensor **inverse,
                    pt_tensor **counts) {
  bool fl = pt_dtype_is_floating(t->dtype);
  pt_dtype wd = fl ? PT_FLOAT64 : PT_INT64; /* exact for every dtype */
  pt_tensor *w = NULL, *wc = NULL, *u = NULL, *ut = NULL, *inv = NULL, *cn = NULL;
  void *buf = NULL;
  int64_t n = pt_tensor_numel(t), nu = 0;
  pt_status st;
  if ((st = pt_tensor_to_dtype_raw(ctx, t, wd, &w)) || (st = pt_tensor_contiguous_raw(ctx, w, &wc))) goto done;
  buf = pt_alloc(ctx, (size_t)(n ? n : 1) * sizeof(keyed));
  if (!buf) {
    st = PT_ENOMEM;
    goto done;
  }
  if (inverse && (st = pt_tensor_empty(ctx, PT_INT64, t->ndim, t->shape, &inv))) goto done;
  int64_t *invp = inv ? (int64_t *)pt_tensor_data(inv) : NULL;
  /* sort (value, index) pairs, then one pass over the runs of equal values */
#define UNIQUE_PASS(KT, TV, CMP, EQ)                                                               \
  do {                                                                                             \
    KT *b = buf;                                                                                   \
    const TV *xp = pt_tensor_data(wc);                                                             \
    for (int64_t i = 0; i < n; i++) b[i].v = xp[i], b[i].i = i;                                    \
    qsort(b, (size_t)n, sizeof *b, CMP);                                                           \
    for (int64_t i = 0; i < n; i++) {                                                              \
      if (i == 0 || !(EQ)) nu++;                                                                   \
      if (invp) invp[b[i].i] = nu - 1;                                                             \
    }                                                                                              \
    if ((st = pt_tensor_empty(ctx, wd, 1, &nu, &u))) goto done;                                    \
    if (counts && (st = pt_tensor_zeros(ctx, PT_INT64, 1, &nu, &cn))) goto done;                   \
    TV *up = pt_tensor_data(u);                                                                    \
    int64_t *cp = cn ? (int64_t *)pt_tensor_data(cn) : NULL;                                       \
    for (int64_t i = 0, k = -1; i < n; i++) {                                                      \
      if (i == 0 || !(EQ)) up[++k] = b[i].v;                                                       \
      if (cp) cp[k]++;                                                                             \
    }                                                                                              \
  } while (0)
  if (fl) UNIQUE_PASS(keyed, double, cmp_asc, b[i].v == b[i - 1].v); /* NaN != NaN: each its own */
  else UNIQUE_PASS(ikeyed, int64_t, cmp_iasc, b[i].v == b[i - 1].v);
#undef UNIQUE_PASS
  if ((st = pt_tensor_to_dtype_raw(ctx, u, t->dtype, &ut))) goto done;
done:
  pt_free(buf);
  pt_tensor_release(w);
  pt_tensor_release(wc);
  pt_tensor_release(u);
  if (st) {
    pt_tensor_release(ut);
    pt_tensor_release(inv);
    pt_tensor_release(cn);
    return st;
  }
  *values = ut;
  if (inverse) *inverse = inv;
  if (counts) *counts = cn;
  return PT_OK;
}

pt_status pt_bincount(pt_ctx *ctx, pt_tensor *t, pt_tensor *weights, int64_t minlength,
                      pt_tensor **out) {
  char b1[PT_SHAPE_STR_MAX];
  if (pt_dtype_is_floating(t->dtype))
    return pt_fail(ctx, PT_EARG, "bincount: expected a tensor of integers, got %s (t:long() converts)",
                   pt_dtype_name(t->dtype));
  if (t->ndim != 1)
    return pt_fail(ctx, PT_EARG, "bincount: expected a 1-D tensor, got shape %s",
                   pt_shape_format(t->ndim, t->shape, b1, sizeof b1));
  if (minlength < 0)
    return pt_fail(ctx, PT_EARG, "bincount: minlength must be >= 0, got %lld", (long long)minlength);
  if (weights && (weights->ndim != 1 || weights->shape[0] != t->shape[0]))
    return pt_fail(ctx, PT_EARG, "bincount: weights must be 1-D with one weight per element (%lld), got shape %s",
                   (long long)t->shape[0], pt_shape_format(weights->ndim, weights->shape, b1, sizeof b1));
  pt_tensor *x = NULL, *wt = NULL, *r = NULL;
  pt_status st;
  if ((st = pt_tensor_to_dtype_raw(ctx, t, PT_INT64, &r)) || (st = pt_tensor_contiguous_raw(ctx, r, &x))) goto done;
  pt_tensor_release(r);
  r = NULL;
  const int64_t *xp = pt_tensor_data(x), n = t->shape[0];
  int64_t len = minlength;
  for (int64_t i = 0; i < n; i++) {
    if (xp[i] < 0) {
      st = pt_fail(ctx, PT_EARG, "bincount: values must be non-negative, got %lld (element %lld)",
                   (long long)xp[i], (long long)i + 1);
      goto done;
    }
    if (xp[i] >= len) len = xp[i] + 1;
  }
  if (!weights) {
    if ((st = pt_tensor_zeros(ctx, PT_INT64, 1, &len, &r))) goto done;
    int64_t *rp = pt_tensor_data(r);
    for (int64_t i = 0; i < n; i++) rp[xp[i]]++;
  } else {
    pt_dtype od = weights->dtype == PT_FLOAT32 ? PT_FLOAT32 : PT_FLOAT64;
    pt_tensor *w64 = NULL;
    if ((st = pt_tensor_to_dtype_raw(ctx, weights, PT_FLOAT64, &w64))) goto done;
    st = pt_tensor_contiguous_raw(ctx, w64, &wt);
    pt_tensor_release(w64);
    if (st) goto done;
    double *acc = pt_alloc(ctx, (size_t)(len ? len : 1) * sizeof *acc);
    if (!acc) {
      st = PT_ENOMEM;
      goto done;
    }
    memset(acc, 0, (size_t)len * sizeof *acc);
    const double *wp = pt_tensor_data(wt);
    for (int64_t i = 0; i < n; i++) acc[xp[i]] += wp[i];
    if (!(st = pt_tensor_empty(ctx, od, 1, &len, &r)))
      PT_DISPATCH_FLOAT(od, {
        T *rp = pt_tensor_data(r);
        for (int64_t i = 0; i < len; i++) rp[i] = (T)acc[i];
      });
    pt_free(acc);
  }
done:
  pt_tensor_release(x);
  pt_tensor_release(wt);
  if (st) {
    pt_tensor_release(r);
    return st;
  }
  *out = r;
  return PT_OK;
}

/* a < b with NaN the largest (NaN is not below NaN) */
static inline bool lt_nan_last(double a, double b) { return !isnan(a) && (isnan(b) || a < b); }

pt_status pt_searchsorted(pt_ctx *ctx, pt_tensor *seq, pt_tensor *values, bool right, pt_tensor **out) {
  char b1[PT_SHAPE_STR_MAX], b2[PT_SHAPE_STR_MAX];
  bool ok = seq->ndim >= 1;
  if (ok && seq->ndim > 1) { /* one sequence per row: the leading dims of values */
    ok = values->ndim == seq->ndim;
    for (int i = 0; ok && i < seq->ndim - 1; i++) ok = values->shape[i] == seq->shape[i];
  }
  if (!ok)
    return pt_fail(ctx, PT_EARG,
                   "searchsorted: the sorted sequence must be 1-D, or have the leading dimensions of values "
                   "(got shapes %s and %s)",
                   pt_shape_format(seq->ndim, seq->shape, b1, sizeof b1),
                   pt_shape_format(values->ndim, values->shape, b2, sizeof b2));
  pt_tensor *s64 = NULL, *sc = NULL, *v64 = NULL, *vc = NULL, *r = NULL;
  pt_status st;
  if ((st = pt_tensor_to_dtype_raw(ctx, seq, PT_FLOAT64, &s64)) || (st = pt_tensor_contiguous_raw(ctx, s64, &sc)) ||
      (st = pt_tensor_to_dtype_raw(ctx, values, PT_FLOAT64, &v64)) ||
      (st = pt_tensor_contiguous_raw(ctx, v64, &vc)) ||
      (st = pt_tensor_empty(ctx, PT_INT64, values->ndim, values->shape, &r)))
    goto done;
  const int64_t n = seq->shape[seq->ndim - 1], nv = pt_tensor_numel(values);
  const int64_t per_row = seq->ndim > 1 ? (values->ndim ? values->shape[values->ndim - 1] : 1) : nv;
  const double *sp = pt_tensor_data(sc), *vp = pt_tensor_data(vc);
  int64_t *rp = pt_tensor_data(r);
  for (int64_t e = 0; e < nv; e++) {
    const double *row = sp + (per_row ? e / per_row : 0) * n, v = vp[e];
    int64_t lo = 0, hi = n; /* the first i in [lo, hi) where the predicate holds */
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      bool past = right ? lt_nan_last(v, row[mid]) : !lt_nan_last(row[mid], v);
      if (past) hi = mid;
      else lo = mid + 1;
    }
    rp[e] = lo;
  }
done:
  pt_tensor_release(s64);
  pt_tensor_release(sc);
  pt_tensor_release(v64);
  pt_tensor_release(vc);
  if (st) {
    pt_tensor_release(r);
    return st;
  }
  *out = r;
  return PT_OK;
}
