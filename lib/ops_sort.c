/* See ops_sort.h. Work is organised in lanes: a contiguous copy of the input seen as
 * {outer, n, inner}, lane (o, j) holding the n elements o*n*inner + i*inner + j. */
#include "ops_sort.h"
#include "ops_reduce.h"
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

/* Runs BODY with T bound to the element type of dt (bool as uint8_t). */
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

/* Order keys: every element becomes a uint64 whose unsigned order is the numeric order of the
 * values, exact for every dtype (int64 beyond 2^53 included, which a double cannot hold). Floats:
 * -0 and +0 get one key, every NaN the key NAN_KEY above all others; integers: the sign bit
 * flipped (INT64_MAX also gets NAN_KEY: only floating point keys are tested for it). */
#define NAN_KEY UINT64_MAX

static inline uint64_t key_of_double(double v) {
  if (isnan(v)) return NAN_KEY;
  if (v == 0) v = 0; /* -0 */
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  return b >> 63 ? ~b : b | (UINT64_C(1) << 63);
}

static inline uint64_t key_of_int(int64_t v) { return (uint64_t)v ^ (UINT64_C(1) << 63); }

#define KEY_OF(x) _Generic((x), float: key_of_double, double: key_of_double, default: key_of_int)(x)

typedef struct keyed {
  uint64_t k;
  int64_t i;
} keyed;

/* NaN is the largest; equal keys keep index order */
static int cmp_asc(const void *pa, const void *pb) {
  const keyed *a = pa, *b = pb;
  if (a->k != b->k) return a->k < b->k ? -1 : 1;
  return a->i < b->i ? -1 : (a->i > b->i);
}

static int cmp_desc(const void *pa, const void *pb) {
  const keyed *a = pa, *b = pb;
  if (a->k != b->k) return a->k > b->k ? -1 : 1;
  return a->i < b->i ? -1 : (a->i > b->i);
}

/* lane (o, j) of a contiguous buffer of dtype dt as keys with their indices along the lane */
static void lane_keys(const void *src, pt_dtype dt, lanes l, int64_t o, int64_t j, keyed *buf) {
  DISPATCH_ALL(dt, {
    const T *xp = (const T *)src + o * l.n * l.inner + j;
    for (int64_t i = 0; i < l.n; i++) {
      buf[i].k = KEY_OF(xp[i * l.inner]);
      buf[i].i = i;
    }
  });
}

/* --- std::sort as PyTorch's CPU kernels run it ---
 * torch 1.13's mode and unique(dim=) sort with std::sort, which is not stable, under a plain `<`
 * on the values, for which NaN is neither below nor above anything. Which of several equal values
 * comes last, and where NaNs end up, is decided by that algorithm, and torch's answers follow from
 * it (mode's index is the last of the winning run; a NaN splits runs of equal values). What follows
 * is the introsort of libstdc++ (GCC 12, the one torch 1.13 was built with) step by step: the
 * same pivots, partitions, heap fallback and final insertion sorts, so the same permutation.
 * One deviation: the final unguarded insertion stops at the first element, where libstdc++ would
 * walk off the front of the array (possible only with NaNs, undefined there). */
typedef bool (*stl_less)(const void *a, const void *b, const void *arg);

typedef struct stl_sorter {
  char *base;
  size_t es; /* at most STL_MAX_ES */
  stl_less less;
  const void *arg;
} stl_sorter;

#define STL_MAX_ES 16
#define AT(s, i) ((s)->base + (size_t)(i) * (s)->es)

static inline bool s_less(const stl_sorter *s, const void *a, const void *b) { return s->less(a, b, s->arg); }
static inline void s_copy(const stl_sorter *s, void *dst, const void *src) { memcpy(dst, src, s->es); }

static void s_swap(const stl_sorter *s, int64_t a, int64_t b) {
  char t[STL_MAX_ES];
  s_copy(s, t, AT(s, a));
  s_copy(s, AT(s, a), AT(s, b));
  s_copy(s, AT(s, b), t);
}

static void s_push_heap(const stl_sorter *s, int64_t first, int64_t hole, int64_t top, const void *value) {
  int64_t parent = (hole - 1) / 2;
  while (hole > top && s_less(s, AT(s, first + parent), value)) {
    s_copy(s, AT(s, first + hole), AT(s, first + parent));
    hole = parent;
    parent = (hole - 1) / 2;
  }
  s_copy(s, AT(s, first + hole), value);
}

static void s_adjust_heap(const stl_sorter *s, int64_t first, int64_t hole, int64_t len, const void *value) {
  const int64_t top = hole;
  int64_t second = hole;
  while (second < (len - 1) / 2) {
    second = 2 * (second + 1);
    if (s_less(s, AT(s, first + second), AT(s, first + second - 1))) second--;
    s_copy(s, AT(s, first + hole), AT(s, first + second));
    hole = second;
  }
  if ((len & 1) == 0 && second == (len - 2) / 2) {
    second = 2 * (second + 1);
    s_copy(s, AT(s, first + hole), AT(s, first + second - 1));
    hole = second - 1;
  }
  s_push_heap(s, first, hole, top, value);
}

static void s_pop_heap(const stl_sorter *s, int64_t first, int64_t last, int64_t result) {
  char value[STL_MAX_ES];
  s_copy(s, value, AT(s, result));
  s_copy(s, AT(s, result), AT(s, first));
  s_adjust_heap(s, first, 0, last - first, value);
}

static void s_partial_sort_all(const stl_sorter *s, int64_t first, int64_t last) {
  /* __partial_sort(first, last, last): __heap_select (make_heap; nothing beyond middle), __sort_heap */
  const int64_t len = last - first;
  if (len >= 2)
    for (int64_t parent = (len - 2) / 2;; parent--) {
      char value[STL_MAX_ES];
      s_copy(s, value, AT(s, first + parent));
      s_adjust_heap(s, first, parent, len, value);
      if (parent == 0) break;
    }
  while (last - first > 1) {
    --last;
    s_pop_heap(s, first, last, last);
  }
}

static void s_linear_insert(const stl_sorter *s, int64_t last) {
  char val[STL_MAX_ES];
  s_copy(s, val, AT(s, last));
  int64_t next = last - 1;
  while (next >= 0 && s_less(s, val, AT(s, next))) {
    s_copy(s, AT(s, last), AT(s, next));
    last = next--;
  }
  s_copy(s, AT(s, last), val);
}

static void s_insertion_sort(const stl_sorter *s, int64_t first, int64_t last) {
  if (first == last) return;
  for (int64_t i = first + 1; i != last; i++) {
    if (s_less(s, AT(s, i), AT(s, first))) {
      char val[STL_MAX_ES];
      s_copy(s, val, AT(s, i));
      memmove(AT(s, first + 1), AT(s, first), (size_t)(i - first) * s->es);
      s_copy(s, AT(s, first), val);
    } else {
      s_linear_insert(s, i);
    }
  }
}

static void s_move_median_to_first(const stl_sorter *s, int64_t result, int64_t a, int64_t b, int64_t c) {
  if (s_less(s, AT(s, a), AT(s, b))) {
    if (s_less(s, AT(s, b), AT(s, c))) s_swap(s, result, b);
    else if (s_less(s, AT(s, a), AT(s, c))) s_swap(s, result, c);
    else s_swap(s, result, a);
  } else if (s_less(s, AT(s, a), AT(s, c))) {
    s_swap(s, result, a);
  } else if (s_less(s, AT(s, b), AT(s, c))) {
    s_swap(s, result, c);
  } else {
    s_swap(s, result, b);
  }
}

static int64_t s_partition_pivot(const stl_sorter *s, int64_t first, int64_t last) {
  int64_t mid = first + (last - first) / 2;
  s_move_median_to_first(s, first, first + 1, mid, last - 1);
  const int64_t pivot = first;
  first++;
  for (;;) { /* __unguarded_partition: the median of three bounds both scans */
    while (s_less(s, AT(s, first), AT(s, pivot))) first++;
    --last;
    while (s_less(s, AT(s, pivot), AT(s, last))) --last;
    if (!(first < last)) return first;
    s_swap(s, first, last);
    first++;
  }
}

static void s_introsort_loop(const stl_sorter *s, int64_t first, int64_t last, int depth_limit) {
  while (last - first > 16) {
    if (depth_limit == 0) {
      s_partial_sort_all(s, first, last);
      return;
    }
    --depth_limit;
    int64_t cut = s_partition_pivot(s, first, last);
    s_introsort_loop(s, cut, last, depth_limit);
    last = cut;
  }
}

/* std::sort(base, base + n, less) */
static void stl_sort(void *base, int64_t n, size_t es, stl_less less, const void *arg) {
  stl_sorter s = {base, es, less, arg};
  if (n == 0) return;
  int lg = 63 - __builtin_clzll((unsigned long long)n);
  s_introsort_loop(&s, 0, n, 2 * lg);
  if (n > 16) {
    s_insertion_sort(&s, 0, 16);
    for (int64_t i = 16; i < n; i++) s_linear_insert(&s, i);
  } else {
    s_insertion_sort(&s, 0, n);
  }
}

#undef AT

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

/* A stable least-significant-digit radix sort of buf[0..n) by key (descending: by ~key), 11
 * bits per pass, through tmp (n entries). Stable, so equal keys keep the index order lane_keys
 * gave them: the order of cmp_asc / cmp_desc exactly. Digits that are the same in every key
 * (the low 29 bits of a float32's key, the high bytes of small integers) cost no pass: one read
 * of the keys counts every digit at once. qsort's comparisons made sort(1e6 floats) 150 ms,
 * 1.6x PyTorch's std::sort; four passes of counting and moving take a fraction of that. */
#define RADIX_BITS 11
#define RADIX_PASSES 6 /* ceil(64 / 11) */
#define RADIX_MIN 512  /* below this, qsort */
enum { RADIX_B = 1 << RADIX_BITS };
typedef int64_t radix_counts[RADIX_PASSES][RADIX_B];
static void radix_sort(keyed *buf, keyed *tmp, radix_counts count, int64_t n, bool desc) {
  enum { B = RADIX_B };
  memset(count, 0, sizeof(radix_counts));
  uint64_t flip = desc ? UINT64_MAX : 0;
  for (int64_t i = 0; i < n; i++) {
    uint64_t k = buf[i].k ^ flip;
    for (int p = 0; p < RADIX_PASSES; p++) count[p][(k >> (p * RADIX_BITS)) & (B - 1)]++;
  }
  keyed *src = buf, *dst = tmp;
  for (int p = 0; p < RADIX_PASSES; p++) {
    int64_t *c = count[p];
    if (c[(((buf[0].k ^ flip) >> (p * RADIX_BITS)) & (B - 1))] == n) continue; /* one digit everywhere */
    int64_t sum = 0;
    for (int d = 0; d < B; d++) {
      int64_t v = c[d];
      c[d] = sum;
      sum += v;
    }
    int shift = p * RADIX_BITS;
    for (int64_t i = 0; i < n; i++) dst[c[((src[i].k ^ flip) >> shift) & (B - 1)]++] = src[i];
    keyed *t = src;
    src = dst;
    dst = t;
  }
  if (src != buf) memcpy(buf, src, (size_t)n * sizeof *buf);
}

/* Bytes for n keyed entries that a full sort (keyed_sort) will order: the entries, and for a
 * long one the radix sort's second buffer and counts after them. */
static size_t keyed_sort_bytes(int64_t n) {
  size_t b = (size_t)(n ? n : 1) * sizeof(keyed);
  return n >= RADIX_MIN ? 2 * b + sizeof(radix_counts) : b;
}

/* buf[0..n), allocated with keyed_sort_bytes(n), in cmp_asc's (or cmp_desc's) order */
static void keyed_sort(keyed *buf, int64_t n, bool desc) {
  if (n >= RADIX_MIN)
    radix_sort(buf, buf + n, (int64_t(*)[RADIX_B])(buf + 2 * n), n, desc);
  else
    qsort(buf, (size_t)n, sizeof *buf, desc ? cmp_desc : cmp_asc);
}

/* buf[0..k) becomes the first k of buf[0..n) in cmp's order, sorted. cmp is a total order
 * (ties broken by index), so this is exactly the head of a full sort: a full sort for a small
 * k (top-5 of 1000) was 60-100x slower than PyTorch's selection. When k * 8 >= n (a full sort)
 * buf must have keyed_sort_bytes(n). */
static void first_k(keyed *buf, int64_t n, int64_t k, keyed_cmp cmp) {
  if (k == 0) return;
  if (k * 8 >= n) {
    keyed_sort(buf, n, cmp == cmp_desc);
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
  /* median over all elements (pt_median): shared among ties, as torch */
  if (node->n_ints > 1 && node->ints[1]) return pt_even_tie_backward(ctx, node->saved[1], node->saved[2], gout, gin);
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

/* lanes [b, e) of a sort or topk, on thread tid (its buffer: bufs + tid * per) */
#define SORT_PAR_MIN 65536 /* elements of all lanes together, from which the lanes are split */
typedef struct sort_job {
  pt_dtype dt;
  lanes l;
  int64_t k;
  bool desc;
  const char *src;
  char *vp;
  int64_t *ip;
  char *bufs;
  size_t per;
} sort_job;

static void sort_chunk(void *arg, int64_t b, int64_t e, int tid) {
  const sort_job *J = arg;
  keyed *buf = (keyed *)(J->bufs + (size_t)tid * J->per);
  lanes l = J->l;
  int64_t k = J->k;
  for (int64_t lane = b; lane < e; lane++) {
    int64_t o = lane / l.inner, j = lane % l.inner;
    lane_keys(J->src, J->dt, l, o, j, buf);
    first_k(buf, l.n, k, J->desc ? cmp_desc : cmp_asc);
    DISPATCH_ALL(J->dt, { /* typed: a memcpy call per element was a third of a long sort */
      const T *xs = (const T *)J->src + o * l.n * l.inner + j;
      T *vs = (T *)J->vp + o * k * l.inner + j;
      int64_t *is = J->ip + o * k * l.inner + j;
      for (int64_t i = 0; i < k; i++) {
        vs[i * l.inner] = xs[buf[i].i * l.inner];
        is[i * l.inner] = buf[i].i;
      }
    });
  }
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
  else k = l.n; /* 0-d: the result holds the one element for k = 0 too, as torch (it was left unset) */
  pt_tensor *tc = NULL, *v = NULL, *ix = NULL;
  keyed *buf = NULL;
  if ((st = pt_tensor_contiguous_raw(ctx, t, &tc)) || (st = pt_tensor_empty(ctx, t->dtype, t->ndim, shape, &v)) ||
      (st = pt_tensor_empty(ctx, PT_INT64, t->ndim, shape, &ix)))
    goto done;
  /* lanes are independent: many of them (a {1000,1000} sort by rows) split over the threads,
   * each thread with its own buffer */
  int64_t nlanes = l.outer * l.inner;
  int nt = nlanes >= 2 && nlanes * l.n >= SORT_PAR_MIN ? pt_parallel_threads(ctx) : 1;
  size_t per = k * 8 >= l.n ? keyed_sort_bytes(l.n) : (size_t)(l.n ? l.n : 1) * sizeof *buf;
  per = (per + 63) & ~(size_t)63;
  buf = pt_alloc(ctx, per * (size_t)nt);
  if (!buf) {
    st = PT_ENOMEM;
    goto done;
  }
  sort_job job = {t->dtype, l, k, desc, pt_tensor_data(tc), pt_tensor_data(v), pt_tensor_data(ix), (char *)buf, per};
  if (nt > 1)
    pt_parallel_for(ctx, nlanes, 1, sort_chunk, &job);
  else
    sort_chunk(&job, 0, nlanes, 0);
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
          /* two's complement wrap on overflow, as torch (unsigned: no undefined behaviour) */
          acc = (int64_t)(prod ? (uint64_t)acc * (uint64_t)v : (uint64_t)acc + (uint64_t)v);
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

/* mode compares as torch's: a plain < on the values, under which NaN is below and above nothing */
static bool mode_less_float(const void *a, const void *b, const void *arg) {
  (void)arg;
  uint64_t x = ((const keyed *)a)->k, y = ((const keyed *)b)->k;
  return x < y && y != NAN_KEY; /* x < y already rules out x == NAN_KEY */
}

static bool mode_less_int(const void *a, const void *b, const void *arg) {
  (void)arg;
  return ((const keyed *)a)->k < ((const keyed *)b)->k;
}

/* torch's CPU mode of one lane: the (value, index) pairs std::sort'ed by value, then of the runs of
 * equal neighbours (a NaN equals nothing, so each NaN is a run of its own) the first longest one;
 * the index is that of the run's last pair. Without NaN that is the smallest most frequent value;
 * its index is its last occurrence for lanes of up to 16 (insertion sort, stable), any occurrence
 * beyond (introsort is not stable), as torch's. */
static int64_t lane_mode(keyed *buf, int64_t n, bool fl) {
  stl_sort(buf, n, sizeof *buf, fl ? mode_less_float : mode_less_int, NULL);
  int64_t best = 0, run = 0, sel = 0;
  for (int64_t i = 0; i < n; i++) {
    run++;
    if (i == n - 1 || buf[i].k != buf[i + 1].k || (fl && buf[i].k == NAN_KEY)) {
      if (run > best) {
        best = run;
        sel = buf[i].i;
      }
      run = 0;
    }
  }
  return sel;
}

/* the 0-based index along the lane of the element kind selects; buf holds the lane's keys in
 * index order and is reordered */
static int64_t lane_pick(selkind kind, keyed *buf, int64_t n, int64_t k, bool fl) {
  switch (kind) {
  case SEL_KTH:
    nth_element(buf, n, k - 1, cmp_asc);
    return buf[k - 1].i;
  case SEL_MEDIAN:
    for (int64_t i = 0; fl && i < n; i++)
      if (buf[i].k == NAN_KEY) return i; /* the first NaN */
    nth_element(buf, n, (n - 1) / 2, cmp_asc);
    return buf[(n - 1) / 2].i;
  case SEL_MODE:
    return lane_mode(buf, n, fl);
  }
  return 0;
}

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
  const bool fl = pt_dtype_is_floating(t->dtype);
  for (int64_t o = 0; o < l.outer; o++)
    for (int64_t j = 0; j < l.inner; j++) {
      lane_keys(src, t->dtype, l, o, j, buf);
      int64_t sel = lane_pick(kind, buf, l.n, k, fl);
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
  pt_node *node = st ? NULL : (*out)->grad_fn;
  if (node && node->backward == select_backward) { /* the gradient is shared among ties */
    node->ints[1] = 1;
    node->n_ints = 2;
    pt_node_save(node, 1, pt_tensor_retain(flat));
    pt_node_save(node, 2, pt_tensor_retain(*out));
    node->backward_differentiable = true;
  }
  pt_tensor_release(flat);
  return st;
}

/* --- nonzero, unique, bincount, searchsorted --- */


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

/* two keys of one value: a NaN equals nothing, not even a NaN (as torch's !=) */
static inline bool same_key(uint64_t a, uint64_t b, bool fl) { return a == b && !(fl && a == NAN_KEY); }

/* unique's ending: on success the results go to the caller (inverse and counts where asked for),
 * on failure they are released */
static pt_status unique_results(pt_status st, pt_tensor *u, pt_tensor *inv, pt_tensor *cn, pt_tensor **values,
                                pt_tensor **inverse, pt_tensor **counts) {
  if (st) {
    pt_tensor_release(u);
    pt_tensor_release(inv);
    pt_tensor_release(cn);
    return st;
  }
  *values = u;
  if (inverse) *inverse = inv;
  if (counts) *counts = cn;
  return PT_OK;
}

pt_status pt_unique(pt_ctx *ctx, pt_tensor *t, pt_tensor **values, pt_tensor **inverse,
                    pt_tensor **counts) {
  const bool fl = pt_dtype_is_floating(t->dtype);
  const size_t es = pt_dtype_size(t->dtype);
  pt_tensor *tc = NULL, *u = NULL, *inv = NULL, *cn = NULL;
  int64_t n = pt_tensor_numel(t), nu = 0;
  pt_status st;
  keyed *b = NULL;
  if ((st = pt_tensor_contiguous_raw(ctx, t, &tc))) goto done;
  b = pt_alloc(ctx, keyed_sort_bytes(n));
  if (!b) {
    st = PT_ENOMEM;
    goto done;
  }
  if (inverse && (st = pt_tensor_empty(ctx, PT_INT64, t->ndim, t->shape, &inv))) goto done;
  /* sort (key, index) pairs, then one pass over the runs of equal values; the values are copies
   * of the elements that start the runs */
  const char *src = pt_tensor_data(tc);
  lane_keys(src, t->dtype, (lanes){1, n, 1}, 0, 0, b);
  keyed_sort(b, n, false);
  int64_t *invp = inv ? (int64_t *)pt_tensor_data(inv) : NULL;
  for (int64_t i = 0; i < n; i++) {
    if (i == 0 || !same_key(b[i].k, b[i - 1].k, fl)) nu++;
    if (invp) invp[b[i].i] = nu - 1;
  }
  if ((st = pt_tensor_empty(ctx, t->dtype, 1, &nu, &u))) goto done;
  if (counts && (st = pt_tensor_zeros(ctx, PT_INT64, 1, &nu, &cn))) goto done;
  char *up = pt_tensor_data(u);
  int64_t *cp = cn ? (int64_t *)pt_tensor_data(cn) : NULL;
  for (int64_t i = 0, k = -1; i < n; i++) {
    if (i == 0 || !same_key(b[i].k, b[i - 1].k, fl)) memcpy(up + ++k * (int64_t)es, src + b[i].i * (int64_t)es, es);
    if (cp) cp[k]++;
  }
done:
  pt_free(b);
  pt_tensor_release(tc);
  return unique_results(st, u, inv, cn, values, inverse, counts);
}

/* the keys of n slices of m elements each, one after the other */
typedef struct slice_keys {
  const uint64_t *k;
  int64_t m;
  bool fl;
} slice_keys;

/* torch's order of slices in unique(dim=): the first position where one is below the other decides
 * (a NaN is neither, so its position decides nothing); no such position: not below */
static bool slice_less(const void *pa, const void *pb, const void *arg) {
  const slice_keys *s = arg;
  const uint64_t *a = s->k + *(const int64_t *)pa * s->m, *b = s->k + *(const int64_t *)pb * s->m;
  for (int64_t i = 0; i < s->m; i++)
    if (a[i] != b[i] && !(s->fl && (a[i] == NAN_KEY || b[i] == NAN_KEY))) return a[i] < b[i];
  return false;
}

static bool slice_same(const slice_keys *s, int64_t ia, int64_t ib) {
  const uint64_t *a = s->k + ia * s->m, *b = s->k + ib * s->m;
  for (int64_t i = 0; i < s->m; i++)
    if (!same_key(a[i], b[i], s->fl)) return false;
  return true;
}

pt_status pt_unique_dim(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **values, pt_tensor **inverse,
                        pt_tensor **counts) {
  char b1[PT_SHAPE_STR_MAX];
  if (dim < 0 || dim >= t->ndim)
    return pt_fail(ctx, PT_EARG, "unique: dimension %d out of range (tensor has %d dimensions)", dim + 1, t->ndim);
  int64_t m = 1;
  for (int d = 0; d < t->ndim; d++) {
    if (d != dim && t->shape[d] == 0)
      return pt_fail(ctx, PT_EARG, "unique: cannot take unique slices along dimension %d of shape %s: dimension %d has size 0",
                     dim + 1, pt_shape_format(t->ndim, t->shape, b1, sizeof b1), d + 1);
    if (d != dim) m *= t->shape[d];
  }
  const int64_t n = t->shape[dim];
  const bool fl = pt_dtype_is_floating(t->dtype);
  const size_t es = pt_dtype_size(t->dtype);
  pt_tensor *tt = NULL, *tc = NULL, *u = NULL, *ut = NULL, *uc = NULL, *inv = NULL, *cn = NULL;
  uint64_t *keys = NULL;
  int64_t *idx = NULL, nu = 0;
  pt_status st;
  /* torch's layout: t with its first dimension and dim swapped (transpose, not a move), made
   * contiguous, one slice per row; slices are compared in that order of their elements */
  if ((st = pt_transpose_raw(ctx, t, 0, dim, &tt)) || (st = pt_tensor_contiguous_raw(ctx, tt, &tc))) goto done;
  keys = pt_alloc(ctx, (size_t)(n * m > 0 ? n * m : 1) * sizeof *keys);
  idx = pt_alloc(ctx, (size_t)(n ? 3 * n : 1) * sizeof *idx);
  if (!keys || !idx) {
    st = PT_ENOMEM;
    goto done;
  }
  const char *src = pt_tensor_data(tc);
  DISPATCH_ALL(t->dtype, {
    const T *xp = (const T *)src;
    for (int64_t i = 0; i < n * m; i++) keys[i] = KEY_OF(xp[i]);
  });
  slice_keys sk = {keys, m, fl};
  int64_t *first = idx + n, *cnt = idx + 2 * n; /* per unique slice: the row it comes from, its count */
  for (int64_t i = 0; i < n; i++) idx[i] = i;
  stl_sort(idx, n, sizeof *idx, slice_less, &sk);
  if (inverse && (st = pt_tensor_empty(ctx, PT_INT64, 1, &n, &inv))) goto done;
  int64_t *invp = inv ? (int64_t *)pt_tensor_data(inv) : NULL;
  for (int64_t i = 0; i < n; i++) { /* each compared with the first of the current run, as torch's */
    if (i == 0 || !slice_same(&sk, first[nu - 1], idx[i])) {
      first[nu] = idx[i];
      cnt[nu++] = 0;
    }
    cnt[nu - 1]++;
    if (invp) invp[idx[i]] = nu - 1;
  }
  int64_t ushape[PT_MAX_DIMS];
  memcpy(ushape, tc->shape, (size_t)t->ndim * sizeof *ushape);
  ushape[0] = nu;
  if ((st = pt_tensor_empty(ctx, t->dtype, t->ndim, ushape, &u))) goto done;
  char *up = pt_tensor_data(u);
  for (int64_t r = 0; r < nu; r++) memcpy(up + r * m * (int64_t)es, src + first[r] * m * (int64_t)es, (size_t)m * es);
  if ((st = pt_transpose_raw(ctx, u, 0, dim, &ut)) || (st = pt_tensor_contiguous_raw(ctx, ut, &uc))) goto done;
  if (counts) {
    if ((st = pt_tensor_empty(ctx, PT_INT64, 1, &nu, &cn))) goto done;
    memcpy(pt_tensor_data(cn), cnt, (size_t)nu * sizeof *cnt);
  }
done:
  pt_free(keys);
  pt_free(idx);
  pt_tensor_release(tt);
  pt_tensor_release(tc);
  pt_tensor_release(u);
  pt_tensor_release(ut);
  return unique_results(st, uc, inv, cn, values, inverse, counts);
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
    if (xp[i] == INT64_MAX) { /* its count would be at position 2^63 */
      st = pt_fail(ctx, PT_EARG, "bincount: value %lld (element %lld) is too large to count", (long long)xp[i],
                   (long long)i + 1);
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
    /* the result first: it checks len (len * 8 bytes of accumulators wrapped around for a value
     * near 2^61, and the counts were added out of bounds) */
    if ((st = pt_tensor_empty(ctx, od, 1, &len, &r))) goto done;
    double *acc = pt_alloc(ctx, (size_t)(len ? len : 1) * sizeof *acc);
    if (!acc) {
      st = PT_ENOMEM;
      goto done;
    }
    memset(acc, 0, (size_t)len * sizeof *acc);
    const double *wp = pt_tensor_data(wt);
    for (int64_t i = 0; i < n; i++) acc[xp[i]] += wp[i];
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

/* exact three-way order of an int64 and a double, NaN the largest */
static int cmp_int_double(int64_t x, double f) {
  if (isnan(f) || f >= 0x1p63) return -1;
  if (f < -0x1p63) return 1;
  double fl = floor(f); /* in [-2^63, 2^63): exact as an int64 */
  int64_t i = (int64_t)fl;
  if (x != i) return x < i ? -1 : 1;
  return fl < f ? -1 : 0;
}

/* exact three-way order of a[ia] and b[ib], each an int64 (its is_int) or a double buffer; NaN
 * the largest and equal to NaN */
static int cmp_exact(const void *a, bool a_int, int64_t ia, const void *b, bool b_int, int64_t ib) {
  if (a_int != b_int)
    return a_int ? cmp_int_double(((const int64_t *)a)[ia], ((const double *)b)[ib])
                 : -cmp_int_double(((const int64_t *)b)[ib], ((const double *)a)[ia]);
  uint64_t x = a_int ? key_of_int(((const int64_t *)a)[ia]) : key_of_double(((const double *)a)[ia]);
  uint64_t y = b_int ? key_of_int(((const int64_t *)b)[ib]) : key_of_double(((const double *)b)[ib]);
  return (x > y) - (x < y);
}

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
  /* integers as int64, floats as double: every comparison exact (int64 beyond 2^53 included) */
  const bool s_int = !pt_dtype_is_floating(seq->dtype), v_int = !pt_dtype_is_floating(values->dtype);
  pt_tensor *s64 = NULL, *sc = NULL, *v64 = NULL, *vc = NULL, *r = NULL;
  pt_status st;
  if ((st = pt_tensor_to_dtype_raw(ctx, seq, s_int ? PT_INT64 : PT_FLOAT64, &s64)) ||
      (st = pt_tensor_contiguous_raw(ctx, s64, &sc)) ||
      (st = pt_tensor_to_dtype_raw(ctx, values, v_int ? PT_INT64 : PT_FLOAT64, &v64)) ||
      (st = pt_tensor_contiguous_raw(ctx, v64, &vc)) ||
      (st = pt_tensor_empty(ctx, PT_INT64, values->ndim, values->shape, &r)))
    goto done;
  const int64_t n = seq->shape[seq->ndim - 1], nv = pt_tensor_numel(values);
  const int64_t per_row = seq->ndim > 1 ? (values->ndim ? values->shape[values->ndim - 1] : 1) : nv;
  const void *sp = pt_tensor_data(sc), *vp = pt_tensor_data(vc);
  int64_t *rp = pt_tensor_data(r);
  for (int64_t e = 0; e < nv; e++) {
    const int64_t row = (per_row ? e / per_row : 0) * n;
    int64_t lo = 0, hi = n; /* the first i in [lo, hi) where the predicate holds */
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      int c = cmp_exact(sp, s_int, row + mid, vp, v_int, e); /* seq[mid] against v */
      bool past = right ? c > 0 : c >= 0;
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

int pt_element_cmp(const void *pa, pt_dtype da, const void *pb, pt_dtype db) {
  const bool a_int = !pt_dtype_is_floating(da), b_int = !pt_dtype_is_floating(db);
  int64_t ia = 0, ib = 0;
  double fa = 0, fb = 0;
  if (a_int) DISPATCH_ALL(da, { ia = (int64_t)((const T *)pa)[0]; });
  else fa = pt_read_as_double(pa, da);
  if (b_int) DISPATCH_ALL(db, { ib = (int64_t)((const T *)pb)[0]; });
  else fb = pt_read_as_double(pb, db);
  if ((!a_int && isnan(fa)) || (!b_int && isnan(fb))) return 2;
  return cmp_exact(a_int ? (const void *)&ia : &fa, a_int, 0, b_int ? (const void *)&ib : &fb, b_int, 0);
}

/* --- cummax / cummin --- */

static inline bool never_nan(int64_t x) {
  (void)x;
  return false;
}
static inline bool float_nan(double x) { return isnan(x); }
#define ELEM_NAN(x) _Generic((x), float: float_nan, double: float_nan, default: never_nan)(x)

/* torch's rule along each lane: a NaN always takes over (so the index is that of the last NaN
 * so far), else x replaces the running value when x >= it (cummax; <= for cummin) and the
 * running value is no NaN: ties take the later index */
static pt_status cum_extreme(pt_ctx *ctx, const char *fn, pt_tensor *t, int dim, bool is_max,
                             pt_tensor **values, pt_tensor **indices) {
  pt_status st = check_dim(ctx, fn, t, dim);
  if (st) return st;
  pt_tensor *tc = NULL, *v = NULL, *ix = NULL;
  if ((st = pt_tensor_contiguous_raw(ctx, t, &tc)) || (st = pt_tensor_empty(ctx, t->dtype, t->ndim, t->shape, &v)) ||
      (st = pt_tensor_empty(ctx, PT_INT64, t->ndim, t->shape, &ix)))
    goto done;
  lanes l = lanes_of(t, dim);
  int64_t *ip = pt_tensor_data(ix);
  DISPATCH_ALL(t->dtype, {
    const T *xp = pt_tensor_data(tc);
    T *vp = pt_tensor_data(v);
    for (int64_t o = 0; o < l.outer; o++)
      for (int64_t j = 0; j < l.inner; j++) {
        const int64_t base = o * l.n * l.inner + j;
        T run = l.n ? xp[base] : 0;
        int64_t at = 0;
        for (int64_t i = 0; i < l.n; i++) {
          T x = xp[base + i * l.inner];
          if (ELEM_NAN(x) || (!ELEM_NAN(run) && (is_max ? x >= run : x <= run))) {
            run = x;
            at = i;
          }
          vp[base + i * l.inner] = run;
          ip[base + i * l.inner] = at;
        }
      }
  });
  if (pt_dtype_is_floating(t->dtype)) {
    pt_node *node;
    if ((st = pt_autograd_record(ctx, v, is_max ? "CummaxBackward" : "CumminBackward", select_backward, 1, &t,
                                 &node)))
      goto done;
    if (node) {
      pt_node_save(node, 0, pt_tensor_retain(ix));
      node->ints[0] = dim;
      node->n_ints = 1;
    }
  }
done:
  pt_tensor_release(tc);
  if (st) {
    pt_tensor_release(v);
    pt_tensor_release(ix);
    return st;
  }
  *values = v;
  *indices = ix;
  return PT_OK;
}

pt_status pt_cummax(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **values, pt_tensor **indices) {
  return cum_extreme(ctx, "cummax", t, dim, true, values, indices);
}

pt_status pt_cummin(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **values, pt_tensor **indices) {
  return cum_extreme(ctx, "cummin", t, dim, false, values, indices);
}

/* --- logcumsumexp --- */

/* log(exp(x) + exp(y)) as torch's _log_add_exp_helper: a NaN y propagates, two equal infinities
 * give x (inf + inf = inf, -inf + -inf = -inf) */
static inline double log_add_exp(double x, double y) {
  double lo = isnan(y) ? y : (y < x ? y : x), hi = isnan(y) ? y : (x < y ? y : x);
  if (lo != hi || isfinite(lo)) return log1p(exp(lo - hi)) + hi;
  return x;
}

/* the running log-sum-exp of lane (o, j) of x (contiguous) in double, into y */
#define LCSE_LANE(xp, yp, l, o, j)                                         \
  do {                                                                     \
    double acc_ = -INFINITY;                                               \
    for (int64_t i_ = 0; i_ < (l).n; i_++) {                               \
      int64_t at_ = ((o) * (l).n + i_) * (l).inner + (j);                  \
      acc_ = log_add_exp((double)(xp)[at_], acc_);                         \
      (yp)[at_] = acc_;                                                    \
    }                                                                      \
  } while (0)

/* d/dx_j of sum_i g_i y_i = sum_{i >= j} g_i exp(x_j - y_i), as torch's: the positive and the
 * negative g_i apart, each a reversed running log-sum-exp of log|g_i| - y_i, plus x_j, exponentiated */
static pt_status logcumsumexp_backward(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gin) {
  int dim = (int)node->ints[0];
  pt_tensor *x = node->saved[0], *g = NULL, *r = NULL;
  pt_status st;
  if ((st = pt_tensor_contiguous_raw(ctx, gout, &g)) || (st = pt_tensor_empty_like(ctx, x, &r))) {
    pt_tensor_release(g);
    return st;
  }
  lanes l = lanes_of(x, dim);
  double *y = pt_alloc(ctx, (size_t)(l.n ? l.n : 1) * sizeof *y);
  if (!y) {
    pt_tensor_release(g);
    pt_tensor_release(r);
    return PT_ENOMEM;
  }
  PT_DISPATCH_FLOAT(x->dtype, {
    const T *xp = pt_tensor_data(x), *gp = pt_tensor_data(g);
    T *rp = pt_tensor_data(r);
    for (int64_t o = 0; o < l.outer; o++) {
      for (int64_t j = 0; j < l.inner; j++) {
        double acc = -INFINITY; /* the lane's y again, rounded to T as the forward stored it */
        for (int64_t i = 0; i < l.n; i++) {
          int64_t at = (o * l.n + i) * l.inner + j;
          acc = log_add_exp((double)xp[at], acc);
          y[i] = (double)(T)acc;
        }
        double pos = -INFINITY, neg = -INFINITY;
        for (int64_t i = l.n - 1; i >= 0; i--) {
          int64_t at = (o * l.n + i) * l.inner + j;
          double gi = (double)gp[at], yi = y[i];
          if (gi > 0) pos = log_add_exp(log(gi) - yi, pos); /* 0 and NaN add nothing, as torch's */
          else if (gi < 0) neg = log_add_exp(log(-gi) - yi, neg);
          rp[at] = (T)(exp(pos + (double)xp[at]) - exp(neg + (double)xp[at]));
        }
      }
    }
  });
  pt_free(y);
  pt_tensor_release(g);
  gin[0] = r;
  return PT_OK;
}

pt_status pt_logcumsumexp(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out) {
  pt_status st = check_dim(ctx, "logcumsumexp", t, dim);
  if (st) return st;
  if (!pt_dtype_is_floating(t->dtype))
    return pt_fail(ctx, PT_EARG, "logcumsumexp: expected a float32 or float64 tensor, got %s",
                   pt_dtype_name(t->dtype));
  pt_tensor *tc = NULL, *r = NULL;
  if ((st = pt_tensor_contiguous_raw(ctx, t, &tc)) || (st = pt_tensor_empty_like(ctx, tc, &r))) goto done;
  lanes l = lanes_of(tc, dim);
  PT_DISPATCH_FLOAT(t->dtype, {
    const T *xp = pt_tensor_data(tc);
    T *yp = pt_tensor_data(r);
    for (int64_t o = 0; o < l.outer; o++)
      for (int64_t j = 0; j < l.inner; j++) LCSE_LANE(xp, yp, l, o, j);
  });
  pt_node *node;
  if ((st = pt_autograd_record(ctx, r, "LogcumsumexpBackward", logcumsumexp_backward, 1, &t, &node))) goto done;
  if (node) {
    pt_node_save(node, 0, pt_tensor_retain(tc));
    node->ints[0] = dim;
    node->n_ints = 1;
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

/* --- histc --- */

/* The last of torch.linspace(lo, hi, bins + 1) in dtype T as torch 1.13's CPU kernel writes it
 * (AVX2 build): step = (hi - lo) / bins; elements past the halfway point are
 * fma(-step, steps - 1 - i, hi), so the last one is hi itself, except when it falls in the
 * vectorised part (steps a multiple of 2 vectors: 16 floats, 8 doubles), where it is the first
 * lane of its vector, fma(-step, width - 1, hi), plus (width - 1) * step, rounded twice. */
#define HISTC_RIGHT_EDGE(T, FMA, width, lo, hi, bins, out)                         \
  do {                                                                            \
    const int64_t steps_ = (bins) + 1;                                            \
    const T s_ = (T)(lo), e_ = (T)(hi);                                           \
    const T step_ = (e_ - s_) / (T)(steps_ - 1);                                  \
    if (steps_ % (2 * (width)) != 0) {                                            \
      (out) = e_;                                                                 \
    } else {                                                                      \
      T base_ = FMA(-step_, (T)((width) - 1), e_);                                \
      volatile T lane_ = (T)((width) - 1) * step_; /* rounded: no fused add */    \
      (out) = base_ + lane_;                                                      \
    }                                                                             \
  } while (0)

pt_status pt_histc(pt_ctx *ctx, pt_tensor *t, int64_t bins, double min, double max, pt_tensor **out) {
  if (!pt_dtype_is_floating(t->dtype))
    return pt_fail(ctx, PT_EARG, "histc: expected a float32 or float64 tensor, got %s (t:float() converts)",
                   pt_dtype_name(t->dtype));
  if (bins < 1) return pt_fail(ctx, PT_EARG, "histc: bins must be positive, got %lld", (long long)bins);
  pt_tensor *tc = NULL, *r = NULL;
  pt_status st;
  if ((st = pt_tensor_contiguous_raw(ctx, t, &tc)) || (st = pt_tensor_zeros(ctx, t->dtype, 1, &bins, &r))) goto done;
  const int64_t n = pt_tensor_numel(tc);
  double lo = min, hi = max;
  if (lo == hi && n > 0) { /* the data's range (NaN if it holds one) */
    PT_DISPATCH_FLOAT(t->dtype, {
      const T *xp = pt_tensor_data(tc);
      T a = xp[0], b = xp[0];
      for (int64_t i = 0; i < n; i++) {
        T x = xp[i];
        if (isnan(x) || isnan(a)) a = b = NAN;
        else {
          a = x < a ? x : a;
          b = x > b ? x : b;
        }
      }
      lo = (double)a;
      hi = (double)b;
    });
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  if (!isfinite(lo) || !isfinite(hi)) {
    st = pt_fail(ctx, PT_EARG, "histc: range of [%.17g, %.17g] is not finite", lo, hi);
    goto done;
  }
  if (!(lo < hi)) {
    st = pt_fail(ctx, PT_EARG, "histc: max must be larger than min, got min %.17g and max %.17g", lo, hi);
    goto done;
  }
  /* torch 1.13's linear interpolation in the input's dtype, (x - min) / (max - min) * bins in
   * that order (other orders round some elements on a bin edge into the neighbour), min and max
   * its first and last bin edges (see HISTC_RIGHT_EDGE); the last bin includes its right edge; elements outside [min, max] are
   * not counted, and a NaN is counted in the first bin, as torch 1.13 does (its range test lets
   * NaN through) */
  PT_DISPATCH_FLOAT(t->dtype, {
    const T *xp = pt_tensor_data(tc);
    T *rp = pt_tensor_data(r);
    const T left = (T)lo, nb = (T)bins;
    T right;
    if (sizeof(T) == sizeof(float)) HISTC_RIGHT_EDGE(float, fmaf, 8, lo, hi, bins, right);
    else HISTC_RIGHT_EDGE(double, fma, 4, lo, hi, bins, right);
    for (int64_t i = 0; i < n; i++) {
      T x = xp[i];
      if (isnan(x)) {
        rp[0] += 1;
        continue;
      }
      if (!(x >= left && x <= right)) continue;
      int64_t pos = (int64_t)((x - left) / (right - left) * nb);
      if (pos >= bins) pos = bins - 1;
      if (pos < 0) pos = 0;
      rp[pos] += 1;
    }
  });
done:
  pt_tensor_release(tc);
  if (st) {
    pt_tensor_release(r);
    return st;
  }
  *out = r;
  return PT_OK;
}
