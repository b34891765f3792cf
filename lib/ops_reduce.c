/* Reductions with autograd (see ops_reduce.h).
 *
 * Every op works on a contiguous copy of its input seen as (outer, n, inner): the reduced
 * dimension has n elements at stride `inner`. A "lane" is one such run of n elements; lane `oi`
 * produces output element `oi`. The common case (last dim, inner == 1) gets its own expansion of
 * each loop with a constant unit stride so the compiler can vectorise it. Float32 and float64
 * share one source through DISPATCH_FLOAT (the body is expanded once per type, with T bound). */
#include "ops_reduce.h"
#include "dispatch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "ops_elementwise.h"
#include "ops_shape.h"
#include "parallel.h"



typedef struct geom {
  int64_t outer, n, inner;
} geom;

static geom geom_of(const pt_tensor *t, int dim) {
  geom g = {1, 1, 1};
  if (dim == PT_DIM_ALL || t->ndim == 0) {
    g.n = pt_tensor_numel(t);
    return g;
  }
  for (int i = 0; i < dim; i++) g.outer *= t->shape[i];
  g.n = t->shape[dim];
  for (int i = dim + 1; i < t->ndim; i++) g.inner *= t->shape[i];
  return g;
}

/* Runs BODY once per lane with `s` (stride inside the lane), `base` (offset of the lane's first
 * element) and `oi` (the lane's number = output element). */
#define FOR_LANES(g, ...)                                                                          \
  do {                                                                                             \
    if ((g).inner == 1) {                                                                          \
      const int64_t s = 1;                                                                         \
      for (int64_t oi = 0; oi < (g).outer; oi++) {                                                 \
        const int64_t base = oi * (g).n;                                                           \
        (void)base;                                                                                \
        __VA_ARGS__                                                                                \
      }                                                                                            \
    } else {                                                                                       \
      const int64_t s = (g).inner;                                                                 \
      for (int64_t o_ = 0; o_ < (g).outer; o_++)                                                   \
        for (int64_t j_ = 0; j_ < s; j_++) {                                                       \
          const int64_t oi = o_ * s + j_, base = o_ * (g).n * s + j_;                              \
          (void)oi;                                                                                \
          __VA_ARGS__                                                                              \
        }                                                                                          \
    }                                                                                              \
  } while (0)

/* exp in the precision of T: float32 through fast_expf (below; vectorises), float64 libm's */
static inline float fast_expf(float x);
#define EXP_T(x) (sizeof(T) == sizeof(float) ? (double)fast_expf((float)(x)) : exp((double)(x)))

/* --- unit-stride float32 kernels (the common case: the last dim of a float32 tensor) ---
 * Written so the compiler vectorises them without -ffast-math: VW independent partial results
 * per loop (double accumulators fed from float loads), folded at the end. */
#define VW 16

static double sum_f32(const float *p, int64_t n) {
  double acc[VW] = {0};
  int64_t i = 0;
  for (; i + VW <= n; i += VW)
    for (int j = 0; j < VW; j++) acc[j] += (double)p[i + j];
  double total = 0;
  for (; i < n; i++) total += (double)p[i];
  for (int j = 0; j < VW; j++) total += acc[j];
  return total;
}

/* the maximum ignoring NaN (callers see NaN again through the exp of x - max); GCC vector
 * extensions, since a float max loop does not vectorise without -ffinite-math-only */
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

float pt_row_max_f32(const float *p, int64_t n) {
  v8f acc;
  for (int j = 0; j < 8; j++) acc[j] = -INFINITY;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    v8f v;
    memcpy(&v, p + i, sizeof v);
    v8i gt = v > acc;
    acc = (v8f)(((v8i)v & gt) | ((v8i)acc & ~gt));
  }
  float m = -INFINITY;
  for (int j = 0; j < 8; j++) m = acc[j] > m ? acc[j] : m;
  for (; i < n; i++) m = p[i] > m ? p[i] : m;
  return m;
}

/* expf within about 2 ulp (Cephes' polynomial), branch-free so loops vectorise. Results that
 * would be denormal (inputs below -87.3) are flushed to 0; NaN stays NaN. */
static inline float fast_expf(float x) {
  float c = x < -87.33654f ? -87.33654f : x;
  c = c > 88.37626f ? 88.37626f : c;
  c = c == c ? c : 0.0f; /* NaN: computed on 0, replaced at the end */
  float n = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round(c / ln 2) */
  float r = c - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  uint32_t bits = (uint32_t)((int32_t)n + 127) << 23; /* n >= -126: a normal exponent */
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  float e = x < -87.33654f ? 0.0f : y * scale;
  return x != x ? x : e;
}

/* sum of exp(p[i] - m), storing each exp in q when q != NULL */
double pt_row_sum_exp_f32(const float *restrict p, float m, float *restrict q, int64_t n) {
  double acc[VW] = {0};
  int64_t i = 0;
  if (q) {
    for (; i + VW <= n; i += VW)
      for (int j = 0; j < VW; j++) {
        float e = fast_expf(p[i + j] - m);
        q[i + j] = e;
        acc[j] += (double)e;
      }
  } else {
    for (; i + VW <= n; i += VW)
      for (int j = 0; j < VW; j++) acc[j] += (double)fast_expf(p[i + j] - m);
  }
  double total = 0;
  for (; i < n; i++) {
    float e = fast_expf(p[i] - m);
    if (q) q[i] = e;
    total += (double)e;
  }
  for (int j = 0; j < VW; j++) total += acc[j];
  return total;
}

static void softmax_row_f32(const float *restrict p, float *restrict q, int64_t n, bool logsm) {
  float m = pt_row_max_f32(p, n);
  if (logsm) {
    float l = (float)log(pt_row_sum_exp_f32(p, m, NULL, n));
    for (int64_t i = 0; i < n; i++) q[i] = (p[i] - m) - l;
  } else {
    float inv = (float)(1.0 / pt_row_sum_exp_f32(p, m, q, n));
    for (int64_t i = 0; i < n; i++) q[i] *= inv;
  }
}

static pt_status check_dim(pt_ctx *ctx, const char *fname, const pt_tensor *t, int dim) {
  int n = t->ndim > 0 ? t->ndim : 1;
  if (dim != PT_DIM_ALL && (dim < 0 || dim >= n))
    return pt_fail(ctx, PT_EARG, "%s: dimension %d out of range (tensor has %d dimensions)", fname,
                   dim < 0 ? dim : dim + 1, t->ndim);
  return PT_OK;
}

static void reduced_shape(const pt_tensor *t, int dim, bool keepdim, int *ndim, int64_t *shape) {
  int n = 0;
  if (t->ndim == 0) {
    *ndim = 0;
    return;
  }
  for (int i = 0; i < t->ndim; i++) {
    if (dim == PT_DIM_ALL || i == dim) {
      if (keepdim) shape[n++] = 1;
    } else {
      shape[n++] = t->shape[i];
    }
  }
  *ndim = n;
}

/* A contiguous version of t: floating dtypes kept, others converted to int64 when allowed. */
static pt_status prepare(pt_ctx *ctx, const char *fname, pt_tensor *t, bool ints_ok, pt_tensor **x) {
  if (pt_dtype_is_floating(t->dtype)) return pt_tensor_contiguous_raw(ctx, t, x);
  if (!ints_ok)
    return pt_fail(ctx, PT_EARG, "%s: expected a floating point tensor, got %s", fname,
                   pt_dtype_name(t->dtype));
  pt_tensor *c;
  pt_status st = pt_tensor_to_dtype_raw(ctx, t, PT_INT64, &c);
  if (st) return st;
  st = pt_tensor_contiguous_raw(ctx, c, x);
  pt_tensor_release(c);
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* Plain reductions: sum, mean, prod, var, std, norm, logsumexp                                */

typedef enum rkind { R_SUM, R_MEAN, R_PROD, R_VAR, R_STD, R_NORM, R_LSE, R_NANSUM, R_NANMEAN } rkind;

static const char *const rnames[] = {"sum", "mean",      "prod",   "var",    "std",
                                     "norm", "logsumexp", "nansum", "nanmean"};
static const char *const rnodes[] = {"SumBackward",       "MeanBackward",   "ProdBackward",
                                     "VarBackward",       "StdBackward",    "NormBackward",
                                     "LogsumexpBackward", "NansumBackward", "NanmeanBackward"};

static pt_status reduce_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin);

/* The value of one lane in double. `param` is ddof for var/std and p for norm. */
#define LANE_VALUE(kind, p, n, s, param, r)                                                        \
  do {                                                                                             \
    switch (kind) {                                                                                \
    case R_SUM:                                                                                    \
    case R_MEAN: {                                                                                 \
      double a0 = 0, a1 = 0, a2 = 0, a3 = 0;                                                       \
      int64_t i = 0;                                                                               \
      for (; i + 4 <= (n); i += 4) {                                                               \
        a0 += (double)(p)[i * s];                                                                  \
        a1 += (double)(p)[(i + 1) * s];                                                            \
        a2 += (double)(p)[(i + 2) * s];                                                            \
        a3 += (double)(p)[(i + 3) * s];                                                            \
      }                                                                                            \
      for (; i < (n); i++) a0 += (double)(p)[i * s];                                               \
      r = (a0 + a1) + (a2 + a3);                                                                   \
      if ((kind) == R_MEAN) r /= (double)(n);                                                      \
      break;                                                                                       \
    }                                                                                              \
    case R_PROD: {                                                                                 \
      double a = 1;                                                                                \
      for (int64_t i = 0; i < (n); i++) a *= (double)(p)[i * s];                                   \
      r = a;                                                                                       \
      break;                                                                                       \
    }                                                                                              \
    case R_VAR:                                                                                    \
    case R_STD: {                                                                                  \
      double m = 0, ss = 0;                                                                        \
      for (int64_t i = 0; i < (n); i++) m += (double)(p)[i * s];                                   \
      m /= (double)(n);                                                                            \
      for (int64_t i = 0; i < (n); i++) {                                                          \
        double d = (double)(p)[i * s] - m;                                                         \
        ss += d * d;                                                                               \
      }                                                                                            \
      double den = fmax((double)(n) - (param), 0.0); /* torch's max(0, n - correction) */          \
      r = ss / den; /* den 0: inf, or nan when ss is 0 (n <= 1), as torch */                       \
      if ((kind) == R_STD) r = sqrt(r);                                                            \
      break;                                                                                       \
    }                                                                                              \
    case R_NORM: {                                                                                 \
      double pp = (param), a = 0;                                                                  \
      if (pp == INFINITY) {                                                                        \
        for (int64_t i = 0; i < (n); i++) {                                                        \
          double v = fabs((double)(p)[i * s]);                                                     \
          if (v > a || isnan(v)) a = v;                                                            \
        }                                                                                          \
      } else if (pp == -INFINITY) {                                                                \
        a = INFINITY;                                                                              \
        for (int64_t i = 0; i < (n); i++) {                                                        \
          double v = fabs((double)(p)[i * s]);                                                     \
          if (v < a || isnan(v)) a = v;                                                            \
        }                                                                                          \
      } else if (pp == 0) {                                                                        \
        for (int64_t i = 0; i < (n); i++) a += (p)[i * s] != 0;                                    \
      } else if (pp == 1) {                                                                        \
        for (int64_t i = 0; i < (n); i++) a += fabs((double)(p)[i * s]);                           \
      } else if (pp == 2) {                                                                        \
        for (int64_t i = 0; i < (n); i++) a += (double)(p)[i * s] * (double)(p)[i * s];            \
        a = sqrt(a);                                                                               \
      } else {                                                                                     \
        for (int64_t i = 0; i < (n); i++) a += pow(fabs((double)(p)[i * s]), pp);                  \
        a = pow(a, 1.0 / pp);                                                                      \
      }                                                                                            \
      r = a;                                                                                       \
      break;                                                                                       \
    }                                                                                              \
    case R_NANSUM:                                                                                 \
    case R_NANMEAN: { /* NaN left out: counted as 0 by nansum, not counted by nanmean */          \
      double a = 0;                                                                                \
      int64_t c = 0;                                                                               \
      for (int64_t i = 0; i < (n); i++) {                                                          \
        double v = (double)(p)[i * s];                                                             \
        if (v == v) {                                                                              \
          a += v;                                                                                  \
          c++;                                                                                     \
        }                                                                                          \
      }                                                                                            \
      r = (kind) == R_NANMEAN ? a / (double)c : a;                                                 \
      break;                                                                                       \
    }                                                                                              \
    case R_LSE: {                                                                                  \
      double m = -INFINITY;                                                                        \
      for (int64_t i = 0; i < (n); i++) {                                                          \
        double v = (double)(p)[i * s];                                                             \
        if (v > m || isnan(v)) m = v;                                                              \
      }                                                                                            \
      if (isinf(m) || isnan(m)) {                                                                  \
        r = m;                                                                                     \
      } else {                                                                                     \
        double e = 0;                                                                              \
        for (int64_t i = 0; i < (n); i++) e += EXP_T((double)(p)[i * s] - m);                      \
        r = m + log(e);                                                                            \
      }                                                                                            \
      break;                                                                                       \
    }                                                                                              \
    }                                                                                              \
  } while (0)

static pt_status reduce_op(pt_ctx *ctx, rkind kind, pt_tensor *t, int dim, bool keepdim,
                           double param, pt_tensor **out) {
  const char *fname = rnames[kind];
  pt_status st = check_dim(ctx, fname, t, dim);
  if (st) return st;
  pt_tensor *x = NULL, *o = NULL;
  if ((st = prepare(ctx, fname, t, kind == R_SUM || kind == R_PROD || kind == R_NANSUM, &x))) return st;
  int ondim;
  int64_t oshape[PT_MAX_DIMS];
  reduced_shape(t, dim, keepdim, &ondim, oshape);
  if ((st = pt_tensor_empty(ctx, x->dtype, ondim, oshape, &o))) goto fail;
  geom g = geom_of(x, dim);
  if (x->dtype == PT_INT64) { /* wraps around on overflow, as two's complement */
    const int64_t *xp = pt_tensor_data(x);
    int64_t *op = pt_tensor_data(o);
    FOR_LANES(g, {
      uint64_t a = kind == R_PROD ? 1 : 0;
      if (kind == R_PROD)
        for (int64_t i = 0; i < g.n; i++) a *= (uint64_t)xp[base + i * s];
      else
        for (int64_t i = 0; i < g.n; i++) a += (uint64_t)xp[base + i * s];
      op[oi] = (int64_t)a;
    });
  } else if ((kind == R_SUM || kind == R_MEAN) && g.inner == 1 && x->dtype == PT_FLOAT32) {
    const float *xp = pt_tensor_data(x);
    float *op = pt_tensor_data(o);
    for (int64_t oi = 0; oi < g.outer; oi++) {
      double r = sum_f32(xp + oi * g.n, g.n);
      op[oi] = (float)(kind == R_MEAN ? r / (double)g.n : r);
    }
  } else if ((kind == R_SUM || kind == R_MEAN || kind == R_NANSUM) && g.inner > 1) {
    /* a leading or middle dim: add whole rows (unit stride) into double accumulators */
    double *acc = pt_alloc(ctx, (size_t)g.inner * sizeof(double));
    if (!acc) {
      st = PT_ENOMEM;
      goto fail;
    }
    double scale = kind == R_MEAN ? 1.0 / (double)g.n : 1.0;
    PT_DISPATCH_FLOAT(x->dtype, {
      const T *xp = pt_tensor_data(x);
      T *op = pt_tensor_data(o);
      for (int64_t oo = 0; oo < g.outer; oo++) {
        memset(acc, 0, (size_t)g.inner * sizeof(double));
        for (int64_t i = 0; i < g.n; i++) {
          const T *row = xp + (oo * g.n + i) * g.inner;
          if (kind == R_NANSUM)
            for (int64_t j = 0; j < g.inner; j++) acc[j] += row[j] == row[j] ? (double)row[j] : 0.0;
          else
            for (int64_t j = 0; j < g.inner; j++) acc[j] += (double)row[j];
        }
        for (int64_t j = 0; j < g.inner; j++) op[oo * g.inner + j] = (T)(acc[j] * scale);
      }
    });
    pt_free(acc);
  } else if (kind == R_LSE && g.inner > 1) {
    /* a leading or middle dim: the lanes side by side, row by row through memory, each lane
     * with LANE_VALUE's operations in its order (strided lane by lane was 3-4x slower) */
    double *acc = pt_alloc(ctx, (size_t)g.inner * 2 * sizeof(double));
    if (!acc) {
      st = PT_ENOMEM;
      goto fail;
    }
    double *mx = acc, *e = acc + g.inner;
    PT_DISPATCH_FLOAT(x->dtype, {
      const T *xp = pt_tensor_data(x);
      T *op = pt_tensor_data(o);
      for (int64_t oo = 0; oo < g.outer; oo++) {
        const T *blk = xp + oo * g.n * g.inner;
        for (int64_t j = 0; j < g.inner; j++) mx[j] = -INFINITY, e[j] = 0;
        for (int64_t i = 0; i < g.n; i++)
          for (int64_t j = 0; j < g.inner; j++) {
            double v = (double)blk[i * g.inner + j];
            if (v > mx[j] || isnan(v)) mx[j] = v;
          }
        for (int64_t i = 0; i < g.n; i++)
          for (int64_t j = 0; j < g.inner; j++) e[j] += EXP_T((double)blk[i * g.inner + j] - mx[j]);
        for (int64_t j = 0; j < g.inner; j++)
          op[oo * g.inner + j] = (T)(isinf(mx[j]) || isnan(mx[j]) ? mx[j] : mx[j] + log(e[j]));
      }
    });
    pt_free(acc);
  } else {
    PT_DISPATCH_FLOAT(x->dtype, {
      const T *xp = pt_tensor_data(x);
      T *op = pt_tensor_data(o);
      FOR_LANES(g, {
        const T *p = xp + base;
        double r = 0;
        LANE_VALUE(kind, p, g.n, s, param, r);
        op[oi] = (T)r;
      });
    });
  }
  pt_node *node;
  if ((st = pt_autograd_record(ctx, o, rnodes[kind], reduce_backward, 1, &t, &node))) goto fail;
  if (node) {
    /* sum and mean need only the input's shape; the others read its values */
    if (kind != R_SUM && kind != R_MEAN) pt_node_save(node, 0, pt_tensor_retain(x));
    node->ints[0] = dim;
    node->ints[1] = keepdim;
    node->ints[2] = kind;
    node->n_ints = 3;
    node->scalars[0] = param;
  }
  pt_tensor_release(x);
  *out = o;
  return PT_OK;
fail:
  pt_tensor_release(x);
  pt_tensor_release(o);
  return st;
}

static pt_status reduce_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  if (!node->needs_grad[0]) return PT_OK;
  pt_tensor *in = node->inputs[0], *x = node->saved[0];
  int dim = (int)node->ints[0];
  rkind kind = (rkind)node->ints[2];
  double param = node->scalars[0];
  geom gm = geom_of(in, dim);
  pt_dtype dt = in->dtype;
  pt_tensor *gc = NULL, *gi = NULL, *r = NULL, *m = NULL;
  pt_status st;
  if ((st = pt_tensor_to_dtype_raw(ctx, g, dt, &r))) return st;
  st = pt_tensor_contiguous_raw(ctx, r, &gc);
  pt_tensor_release(r);
  r = NULL;
  if (st) return st;
  if ((st = pt_tensor_empty(ctx, dt, in->ndim, in->shape, &gi))) goto done;
  /* per-lane statistics the gradient needs (grad mode is off here, so no graph) */
  if (kind == R_VAR || kind == R_STD) {
    if ((st = pt_mean(ctx, x, dim, true, &m))) goto done;
    if (kind == R_STD && (st = pt_std(ctx, x, dim, param, true, &r))) goto done;
  } else if (kind == R_NORM) {
    if ((st = pt_norm(ctx, x, param, dim, true, &r))) goto done;
  } else if (kind == R_LSE) {
    if ((st = pt_logsumexp(ctx, x, dim, true, &r))) goto done;
  }
  PT_DISPATCH_FLOAT(dt, {
    const T *xp = x ? (const T *)pt_tensor_data(x) : NULL, *gp = pt_tensor_data(gc);
    const T *mp = m ? (const T *)pt_tensor_data(m) : NULL;
    const T *rp = r ? (const T *)pt_tensor_data(r) : NULL;
    T *ip = pt_tensor_data(gi);
    const int64_t n = gm.n;
    FOR_LANES(gm, {
      const T *p = xp ? xp + base : NULL; /* NULL for sum and mean */
      T *q = ip + base;
      const double go = gp[oi];
      switch (kind) {
      case R_SUM:
      case R_MEAN: {
        T v = (T)(kind == R_MEAN ? go / (double)n : go);
        for (int64_t i = 0; i < n; i++) q[i * s] = v;
        break;
      }
      case R_PROD: { /* product of the others: prefix * suffix, exact with zeros */
        double acc = 1;
        for (int64_t i = 0; i < n; i++) {
          q[i * s] = (T)acc;
          acc *= (double)p[i * s];
        }
        acc = 1;
        for (int64_t i = n - 1; i >= 0; i--) {
          q[i * s] = (T)((double)q[i * s] * acc * go);
          acc *= (double)p[i * s];
        }
        break;
      }
      case R_VAR:
      case R_STD: {
        double den = (double)n - param, mean = mp[oi];
        /* std: 0 where the std is 0 (as torch's masked_fill), but NaN where it is NaN (one element,
         * or a NaN in the lane), as torch's: that gradient was 0, hiding the NaN */
        double sd = kind == R_STD ? (double)rp[oi] : 0.0; /* var has no r */
        double f = kind == R_VAR ? 2.0 * go / den : (sd > 0 || isnan(sd) ? go / (den * sd) : 0.0);
        for (int64_t i = 0; i < n; i++) q[i * s] = (T)(f * ((double)p[i * s] - mean));
        break;
      }
      case R_NORM: {
        double nv = rp[oi];
        if (param == INFINITY || param == -INFINITY) { /* shared between tied elements */
          int64_t ties = 0;
          for (int64_t i = 0; i < n; i++) ties += fabs((double)p[i * s]) == nv;
          for (int64_t i = 0; i < n; i++) {
            double v = (double)p[i * s];
            q[i * s] = (T)(fabs(v) == nv ? go * ((v > 0) - (v < 0)) / (double)ties : 0.0);
          }
        } else if (param == 0) {
          for (int64_t i = 0; i < n; i++) q[i * s] = 0;
        } else if (param == 1) {
          for (int64_t i = 0; i < n; i++) {
            double v = (double)p[i * s];
            q[i * s] = (T)(go * ((v > 0) - (v < 0)));
          }
        } else if (param == 2) {
          double f = nv > 0 ? go / nv : 0.0;
          for (int64_t i = 0; i < n; i++) q[i * s] = (T)(f * (double)p[i * s]);
        } else {
          double f = nv > 0 ? go / pow(nv, param - 1) : 0.0;
          for (int64_t i = 0; i < n; i++) {
            double v = (double)p[i * s];
            /* a zero element gets 0 (for p < 1, 0 * 0^(p-1) would be 0 * inf), as vector_norm */
            q[i * s] = (T)(v == 0 ? 0.0 : f * ((v > 0) - (v < 0)) * pow(fabs(v), param - 1));
          }
        }
        break;
      }
      case R_NANSUM:
      case R_NANMEAN: { /* go (nanmean: go / the number of non-NaN) where x is not NaN, else 0 */
        double f = go;
        if (kind == R_NANMEAN) {
          int64_t c = 0;
          for (int64_t i = 0; i < n; i++) c += p[i * s] == p[i * s];
          f = c ? go / (double)c : 0.0;
        }
        for (int64_t i = 0; i < n; i++) q[i * s] = (T)(p[i * s] == p[i * s] ? f : 0.0);
        break;
      }
      case R_LSE: {
        double l = rp[oi];
        for (int64_t i = 0; i < n; i++)
          q[i * s] = (T)(l == -INFINITY ? 0.0 : go * EXP_T((double)p[i * s] - l));
        break;
      }
      }
    });
  });
done:
  pt_tensor_release(gc);
  pt_tensor_release(m);
  pt_tensor_release(r);
  if (st) {
    pt_tensor_release(gi);
    return st;
  }
  gin[0] = gi;
  return PT_OK;
}

pt_status pt_sum(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out) {
  return reduce_op(ctx, R_SUM, t, dim, keepdim, 0, out);
}
pt_status pt_mean(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out) {
  return reduce_op(ctx, R_MEAN, t, dim, keepdim, 0, out);
}
pt_status pt_prod(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out) {
  return reduce_op(ctx, R_PROD, t, dim, keepdim, 0, out);
}
pt_status pt_var(pt_ctx *ctx, pt_tensor *t, int dim, double correction, bool keepdim, pt_tensor **out) {
  return reduce_op(ctx, R_VAR, t, dim, keepdim, correction, out);
}
pt_status pt_std(pt_ctx *ctx, pt_tensor *t, int dim, double correction, bool keepdim, pt_tensor **out) {
  return reduce_op(ctx, R_STD, t, dim, keepdim, correction, out);
}
pt_status pt_norm(pt_ctx *ctx, pt_tensor *t, double p, int dim, bool keepdim, pt_tensor **out) {
  if (isnan(p) || (p < 0 && p != -INFINITY))
    return pt_fail(ctx, PT_EARG, "norm: p must be positive, 0, math.huge or -math.huge (got %g)", p);
  return reduce_op(ctx, R_NORM, t, dim, keepdim, p, out);
}
/* integer and bool tensors go through the default float dtype, as torch.logsumexp's */
static pt_status as_float(pt_ctx *ctx, pt_tensor *t, pt_tensor **f) {
  if (pt_dtype_is_floating(t->dtype)) {
    *f = pt_tensor_retain(t);
    return PT_OK;
  }
  return pt_tensor_to_dtype_raw(ctx, t, pt_default_float(), f);
}

pt_status pt_logsumexp(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out) {
  pt_tensor *f;
  pt_status st = as_float(ctx, t, &f);
  if (st) return st;
  st = reduce_op(ctx, R_LSE, f, dim, keepdim, 0, out);
  pt_tensor_release(f);
  return st;
}

pt_status pt_nansum(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out) {
  return reduce_op(ctx, R_NANSUM, t, dim, keepdim, 0, out);
}
pt_status pt_nanmean(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out) {
  return reduce_op(ctx, R_NANMEAN, t, dim, keepdim, 0, out);
}

/* ------------------------------------------------------------------------------------------ */
/* Several dims at once                                                                        */

/* Checks a list of 0-based dims (range, repeats) and marks them in red[]; returns how many
 * distinct dims it names (0 for an empty list). */
static pt_status check_dims(pt_ctx *ctx, const char *fname, const pt_tensor *t, int ndims,
                            const int *dims, bool *red) {
  int n = t->ndim > 0 ? t->ndim : 1;
  for (int i = 0; i < PT_MAX_DIMS; i++) red[i] = false;
  if (ndims < 0) return pt_fail(ctx, PT_EARG, "%s: negative number of dimensions", fname);
  for (int i = 0; i < ndims; i++) {
    int d = dims[i];
    if (d < 0 || d >= n)
      return pt_fail(ctx, PT_EARG, "%s: dimension %d out of range (tensor has %d dimensions)", fname,
                     d < 0 ? d : d + 1, t->ndim);
    if (red[d])
      return pt_fail(ctx, PT_EARG, "%s: dimension %d appears more than once in the list of dimensions",
                     fname, d + 1);
    red[d] = true;
  }
  return PT_OK;
}

/* The dims group is moved together (a view when the dims are adjacent, else one permuted copy)
 * and reduced as one run of elements by reduce_op, so autograd goes through reshape/permute.
 * sum, mean and nansum over dims that are not adjacent reduce one dim after the other instead
 * ({64,512,256} over dims 1 and 3: 23 -> 2 ms; the permuted copy cost 10x the sums). */
static pt_status reduce_dims(pt_ctx *ctx, rkind kind, pt_tensor *t, int ndims, const int *dims,
                             bool keepdim, double param, pt_tensor **out) {
  bool red[PT_MAX_DIMS];
  pt_status st = check_dims(ctx, rnames[kind], t, ndims, dims, red);
  if (st) return st;
  int nd = t->ndim, nr = 0, lo = -1, hi = -1;
  for (int i = 0; i < nd; i++)
    if (red[i]) {
      nr++;
      if (lo < 0) lo = i;
      hi = i;
    }
  if (ndims == 0 || nd == 0 || nr == nd) return reduce_op(ctx, kind, t, PT_DIM_ALL, keepdim, param, out);
  if (nr == 1) return reduce_op(ctx, kind, t, lo, keepdim, param, out);
  if (hi - lo + 1 != nr && (kind == R_SUM || kind == R_MEAN || kind == R_NANSUM)) {
    /* linear in each dim: one dim after the other, the last first (so the lower dims keep their
     * numbers without keepdim), each a fast lane pass; no permuted copy */
    pt_tensor *cur = pt_tensor_retain(t), *next = NULL;
    for (int i = nd - 1; i >= 0; i--) {
      if (!red[i]) continue;
      st = reduce_op(ctx, kind, cur, i, keepdim, param, &next);
      pt_tensor_release(cur);
      if (st) return st;
      cur = next;
    }
    *out = cur;
    return PT_OK;
  }
  int64_t shape[PT_MAX_DIMS], group = 1;
  int m = 0, rdim;
  pt_tensor *y = NULL, *r = NULL;
  for (int i = 0; i < nd; i++)
    if (red[i]) group *= t->shape[i];
  if (hi - lo + 1 == nr) { /* adjacent: (before..., group, after...) is a view of a contiguous t */
    for (int i = 0; i < lo; i++) shape[m++] = t->shape[i];
    rdim = m;
    shape[m++] = group;
    for (int i = hi + 1; i < nd; i++) shape[m++] = t->shape[i];
    st = pt_reshape(ctx, t, m, shape, &y);
  } else { /* kept dims first, the reduced ones last */
    int perm[PT_MAX_DIMS], k = 0;
    for (int i = 0; i < nd; i++)
      if (!red[i]) perm[k++] = i, shape[m++] = t->shape[i];
    for (int i = 0; i < nd; i++)
      if (red[i]) perm[k++] = i;
    rdim = m;
    shape[m++] = group;
    pt_tensor *p = NULL;
    if (!(st = pt_permute(ctx, t, perm, &p))) st = pt_reshape(ctx, p, m, shape, &y);
    pt_tensor_release(p);
  }
  if (st) return st;
  st = reduce_op(ctx, kind, y, rdim, false, param, &r);
  pt_tensor_release(y);
  if (st) return st;
  if (!keepdim) {
    *out = r;
    return PT_OK;
  }
  for (int i = 0; i < nd; i++) shape[i] = red[i] ? 1 : t->shape[i];
  st = pt_view(ctx, r, nd, shape, out);
  pt_tensor_release(r);
  return st;
}

pt_status pt_sum_dims(pt_ctx *ctx, pt_tensor *t, int ndims, const int *dims, bool keepdim,
                      pt_tensor **out) {
  return reduce_dims(ctx, R_SUM, t, ndims, dims, keepdim, 0, out);
}
pt_status pt_mean_dims(pt_ctx *ctx, pt_tensor *t, int ndims, const int *dims, bool keepdim,
                       pt_tensor **out) {
  return reduce_dims(ctx, R_MEAN, t, ndims, dims, keepdim, 0, out);
}
pt_status pt_nansum_dims(pt_ctx *ctx, pt_tensor *t, int ndims, const int *dims, bool keepdim,
                         pt_tensor **out) {
  return reduce_dims(ctx, R_NANSUM, t, ndims, dims, keepdim, 0, out);
}
pt_status pt_nanmean_dims(pt_ctx *ctx, pt_tensor *t, int ndims, const int *dims, bool keepdim,
                          pt_tensor **out) {
  return reduce_dims(ctx, R_NANMEAN, t, ndims, dims, keepdim, 0, out);
}
pt_status pt_var_dims(pt_ctx *ctx, pt_tensor *t, int ndims, const int *dims, double correction,
                      bool keepdim, pt_tensor **out) {
  return reduce_dims(ctx, R_VAR, t, ndims, dims, keepdim, correction, out);
}
pt_status pt_std_dims(pt_ctx *ctx, pt_tensor *t, int ndims, const int *dims, double correction,
                      bool keepdim, pt_tensor **out) {
  return reduce_dims(ctx, R_STD, t, ndims, dims, keepdim, correction, out);
}
pt_status pt_norm_dims(pt_ctx *ctx, pt_tensor *t, double p, int ndims, const int *dims,
                       bool keepdim, pt_tensor **out) {
  if (isnan(p) || (p < 0 && p != -INFINITY))
    return pt_fail(ctx, PT_EARG, "norm: p must be positive, 0, math.huge or -math.huge (got %g)", p);
  return reduce_dims(ctx, R_NORM, t, ndims, dims, keepdim, p, out);
}
pt_status pt_logsumexp_dims(pt_ctx *ctx, pt_tensor *t, int ndims, const int *dims, bool keepdim,
                            pt_tensor **out) {
  pt_tensor *f;
  pt_status st = as_float(ctx, t, &f);
  if (st) return st;
  st = reduce_dims(ctx, R_LSE, f, ndims, dims, keepdim, 0, out);
  pt_tensor_release(f);
  return st;
}

pt_status pt_count_nonzero(pt_ctx *ctx, pt_tensor *t, int ndims, const int *dims, pt_tensor **out) {
  bool red[PT_MAX_DIMS];
  pt_status st = check_dims(ctx, "count_nonzero", t, ndims, dims, red);
  if (st) return st;
  pt_tensor *x = NULL, *m = NULL;
  if ((st = prepare(ctx, "count_nonzero", t, true, &x))) return st;
  if ((st = pt_tensor_empty(ctx, PT_INT64, x->ndim, x->shape, &m))) goto done;
  int64_t *mp = pt_tensor_data(m);
  const int64_t n = pt_tensor_numel(x);
  PT_DISPATCH_FLOAT_INT64(x->dtype, {
    const T *xp = pt_tensor_data(x);
    for (int64_t i = 0; i < n; i++) mp[i] = xp[i] != 0; /* NaN counts, as in PyTorch */
  });
  st = reduce_dims(ctx, R_SUM, m, ndims, dims, false, 0, out);
done:
  pt_tensor_release(x);
  pt_tensor_release(m);
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* max, min, argmax, argmin                                                                    */

pt_status pt_even_tie_backward(pt_ctx *ctx, pt_tensor *in, pt_tensor *value, pt_tensor *g, pt_tensor **gin) {
  /* mask: where in equals the result (every NaN when the result is NaN), in in's dtype */
  pt_tensor *mask = NULL, *count = NULL, *share = NULL, *ic = NULL;
  pt_status st = pt_tensor_contiguous_raw(ctx, in, &ic);
  if (!st) st = pt_tensor_empty(ctx, in->dtype, in->ndim, in->shape, &mask);
  if (st) {
    pt_tensor_release(ic);
    return st;
  }
  double v = pt_tensor_get_flat(value, 0), n = 0;
  int64_t numel = pt_tensor_numel(ic);
  PT_DISPATCH_FLOAT(in->dtype, {
    const T *xp = pt_tensor_data(ic);
    T *mp = pt_tensor_data(mask);
    for (int64_t i = 0; i < numel; i++) {
      bool hit = v != v ? xp[i] != xp[i] : (double)xp[i] == v;
      mp[i] = hit ? (T)1 : (T)0;
      n += hit;
    }
  });
  pt_tensor_release(ic);
  /* g / count, then times the mask: recorded ops, so that a create_graph pass differentiates it */
  if (!(st = pt_tensor_scalar(ctx, in->dtype, n, &count)) && !(st = pt_binary(ctx, PT_BIN_DIV, g, count, &share)))
    st = pt_binary(ctx, PT_BIN_MUL, mask, share, gin);
  pt_tensor_release(mask);
  pt_tensor_release(count);
  pt_tensor_release(share);
  return st;
}

static pt_status minmax_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  if (!node->needs_grad[0]) return PT_OK;
  /* over all elements: shared among ties (saved: the input and the result), as torch */
  if (node->ints[0] == PT_DIM_ALL) return pt_even_tie_backward(ctx, node->saved[1], node->saved[2], g, gin);
  pt_tensor *in = node->inputs[0], *idx = node->saved[0], *gc = NULL, *gi = NULL, *tmp;
  geom gm = geom_of(in, (int)node->ints[0]);
  pt_status st = pt_tensor_to_dtype_raw(ctx, g, in->dtype, &tmp);
  if (st) return st;
  st = pt_tensor_contiguous_raw(ctx, tmp, &gc);
  pt_tensor_release(tmp);
  if (st) return st;
  if ((st = pt_tensor_zeros(ctx, in->dtype, in->ndim, in->shape, &gi))) {
    pt_tensor_release(gc);
    return st;
  }
  const int64_t *ixp = pt_tensor_data(idx);
  PT_DISPATCH_FLOAT(in->dtype, {
    const T *gp = pt_tensor_data(gc);
    T *ip = pt_tensor_data(gi);
    FOR_LANES(gm, { ip[base + ixp[oi] * s] = gp[oi]; });
  });
  pt_tensor_release(gc);
  gin[0] = gi;
  return PT_OK;
}

/* The position of the maximum (is_min: minimum) of a unit-stride lane p[0..n), n >= 1, with the
 * serial loop's rules: the first NaN wins; otherwise the first element that compares equal to
 * the extreme (a later equal one, or +0 after -0, never replaces it). Blocks of LANE_BLOCK
 * elements are reduced with vector compares (a NaN noted, not taken); only a block that beats
 * the best so far (strictly) or holds a NaN is searched again, a vector at a time, for the
 * position. VSEL(v, a) is v where v beats a, else a (MAXPS/MINPS where there are any). */
#define LANE_BLOCK 1024
#define DEFINE_LANE_BEST(SUF, T, IT, VSEL)                                                       \
  typedef T vec_##SUF __attribute__((vector_size(32)));                                          \
  typedef IT ivec_##SUF __attribute__((vector_size(32)));                                        \
  static inline bool any_##SUF(const ivec_##SUF *k) { /* by address: no vector in the ABI */   \
    uint64_t w[4];                                                                               \
    memcpy(w, k, sizeof w);                                                                      \
    return (w[0] | w[1] | w[2] | w[3]) != 0;                                                     \
  }                                                                                              \
  /* the first i >= b with p[i] == m (m != NaN), or p[i] != p[i] (nan), known to exist */        \
  static inline int64_t find_##SUF(const T *p, int64_t b, int64_t e, T m, bool nan) {            \
    enum { W = 32 / sizeof(T) };                                                                 \
    vec_##SUF mv, v;                                                                             \
    for (int l = 0; l < W; l++) mv[l] = m;                                                       \
    for (; b + W <= e; b += W) {                                                                 \
      memcpy(&v, p + b, sizeof v);                                                               \
      ivec_##SUF k = nan ? v != v : v == mv;                                                     \
      if (any_##SUF(&k)) break;                                                                  \
    }                                                                                            \
    while (nan ? p[b] == p[b] : p[b] != m) b++;                                                  \
    return b;                                                                                    \
  }                                                                                              \
  static inline __attribute__((always_inline)) int64_t lane_best_##SUF##_k(const T *p, int64_t n, \
                                                                          const bool is_min) {   \
    enum { W = 32 / sizeof(T) };                                                                 \
    T best = p[0];                                                                               \
    int64_t bi = 0;                                                                              \
    for (int64_t b0 = 0; b0 < n; b0 += LANE_BLOCK) {                                             \
      int64_t b1 = n - b0 < LANE_BLOCK ? n : b0 + LANE_BLOCK, i = b0;                            \
      T m = p[b0];                                                                               \
      bool nan = false;                                                                          \
      if (b1 - b0 >= 4 * W) {                                                                    \
        vec_##SUF a0, a1, a2, a3, v0, v1, v2, v3;                                                \
        ivec_##SUF nn;                                                                           \
        memcpy(&a0, p + i, sizeof a0);                                                           \
        memcpy(&a1, p + i + W, sizeof a1);                                                       \
        memcpy(&a2, p + i + 2 * W, sizeof a2);                                                   \
        memcpy(&a3, p + i + 3 * W, sizeof a3);                                                   \
        nn = (a0 != a0) | (a1 != a1) | (a2 != a2) | (a3 != a3);                                  \
        for (i += 4 * W; i + 4 * W <= b1; i += 4 * W) {                                          \
          memcpy(&v0, p + i, sizeof v0);                                                         \
          memcpy(&v1, p + i + W, sizeof v1);                                                     \
          memcpy(&v2, p + i + 2 * W, sizeof v2);                                                 \
          memcpy(&v3, p + i + 3 * W, sizeof v3);                                                 \
          nn |= (v0 != v0) | (v1 != v1) | (v2 != v2) | (v3 != v3);                               \
          a0 = VSEL(v0, a0);                                                                     \
          a1 = VSEL(v1, a1);                                                                     \
          a2 = VSEL(v2, a2);                                                                     \
          a3 = VSEL(v3, a3);                                                                     \
        }                                                                                        \
        nan = any_##SUF(&nn);                                                                    \
        m = a0[0];                                                                               \
        for (int l = 0; l < W; l++) {                                                            \
          T e[4] = {a0[l], a1[l], a2[l], a3[l]};                                                 \
          for (int q = 0; q < 4; q++)                                                            \
            if (is_min ? e[q] < m : e[q] > m) m = e[q];                                          \
        }                                                                                        \
      }                                                                                          \
      for (; i < b1; i++) {                                                                      \
        T e = p[i];                                                                              \
        nan |= e != e;                                                                           \
        if (is_min ? e < m || m != m : e > m || m != m) m = e;                                   \
      }                                                                                          \
      if (nan) return find_##SUF(p, b0, b1, m, true); /* the first NaN is the result */          \
      if (b0 == 0 || (is_min ? m < best : m > best)) {                                           \
        best = m;                                                                                \
        bi = find_##SUF(p, b0, b1, m, false);                                                    \
      }                                                                                          \
    }                                                                                            \
    return bi;                                                                                   \
  }                                                                                              \
  static int64_t lane_best_##SUF(const T *p, int64_t n, bool is_min) {                           \
    return is_min ? lane_best_##SUF##_k(p, n, true) : lane_best_##SUF##_k(p, n, false);          \
  }

/* v where it beats a (strictly), else a: MAXPS/MINPS are exactly that (a NaN in v is not taken) */
#if defined(__AVX__)
#include <immintrin.h>
#define VSEL_F32(v, a) \
  (is_min ? (vec_f32)_mm256_min_ps((__m256)(v), (__m256)(a)) : (vec_f32)_mm256_max_ps((__m256)(v), (__m256)(a)))
#define VSEL_F64(v, a) \
  (is_min ? (vec_f64)_mm256_min_pd((__m256d)(v), (__m256d)(a)) : (vec_f64)_mm256_max_pd((__m256d)(v), (__m256d)(a)))
#else
#define VSEL_F32(v, a) VSEL_BLEND(f32, v, a)
#define VSEL_F64(v, a) VSEL_BLEND(f64, v, a)
#endif
#define VSEL_BLEND(SUF, v, a)                                                             \
  ({                                                                                      \
    ivec_##SUF k_ = is_min ? (v) < (a) : (v) > (a);                                       \
    (vec_##SUF)(((ivec_##SUF)(v) & k_) | ((ivec_##SUF)(a) & ~k_));                       \
  })
#define VSEL_I64(v, a) VSEL_BLEND(i64, v, a)

DEFINE_LANE_BEST(f32, float, int32_t, VSEL_F32)
DEFINE_LANE_BEST(f64, double, int64_t, VSEL_F64)
DEFINE_LANE_BEST(i64, int64_t, int64_t, VSEL_I64)

static int64_t lane_best(pt_dtype dt, const void *p, int64_t n, bool is_min) {
  if (dt == PT_FLOAT32) return lane_best_f32(p, n, is_min);
  if (dt == PT_FLOAT64) return lane_best_f64(p, n, is_min);
  return lane_best_i64(p, n, is_min);
}

/* unit-stride lanes (the last dim, or everything): lanes split over the threads, or one long
 * lane in chunks whose results are combined in chunk order */
typedef struct minmax_job {
  const char *x; /* float32, float64 or int64 */
  pt_dtype dt;
  int64_t n;
  bool is_min;
  int64_t *ix;
  int64_t chunk_ix[64]; /* one lane: each chunk's position */
  int nchunks;
} minmax_job;

static void minmax_lanes(void *arg, int64_t b, int64_t e, int tid) {
  (void)tid;
  minmax_job *j = arg;
  size_t es = pt_dtype_size(j->dt);
  for (int64_t oi = b; oi < e; oi++) j->ix[oi] = lane_best(j->dt, j->x + oi * j->n * (int64_t)es, j->n, j->is_min);
}

static void minmax_chunks(void *arg, int64_t b, int64_t e, int tid) {
  (void)tid;
  minmax_job *j = arg;
  size_t es = pt_dtype_size(j->dt);
  for (int64_t c = b; c < e; c++) {
    int64_t c0 = c * j->n / j->nchunks, c1 = (c + 1) * j->n / j->nchunks;
    j->chunk_ix[c] = c0 + lane_best(j->dt, j->x + c0 * (int64_t)es, c1 - c0, j->is_min);
  }
}

#define MINMAX_PARALLEL_MIN 65536 /* elements below which a call runs on one thread */

static void minmax_unit_stride(const pt_ctx *ctx, const pt_tensor *x, int64_t outer, int64_t n,
                               bool is_min, int64_t *ix) {
  minmax_job j = {.x = pt_tensor_data(x), .dt = x->dtype, .n = n, .is_min = is_min, .ix = ix};
  int threads = pt_parallel_threads(ctx);
  if (outer * n < MINMAX_PARALLEL_MIN || threads < 2) {
    minmax_lanes(&j, 0, outer, 0);
  } else if (outer >= 2 * threads) {
    int64_t grain = MINMAX_PARALLEL_MIN / 2 / n;
    pt_parallel_for(ctx, outer, grain < 1 ? 1 : grain, minmax_lanes, &j);
  } else {
    /* few long lanes: each in chunks (fixed by n alone, so the split never changes the answer) */
    j.nchunks = (int)(n / (MINMAX_PARALLEL_MIN / 2) < 16 ? n / (MINMAX_PARALLEL_MIN / 2) : 16);
    if (j.nchunks < 2) j.nchunks = 2;
    for (int64_t oi = 0; oi < outer; oi++) {
      pt_parallel_for(ctx, j.nchunks, 1, minmax_chunks, &j);
      /* the first chunk with a NaN, else the strictly best in chunk order */
      size_t es = pt_dtype_size(x->dtype);
      int64_t bi = -1;
      for (int c = 0; c < j.nchunks && bi < 0; c++) {
        int64_t k = j.chunk_ix[c];
        bool nan = x->dtype == PT_FLOAT32 ? isnan(((const float *)j.x)[k])
                   : x->dtype == PT_FLOAT64 ? isnan(((const double *)j.x)[k]) : false;
        if (nan) bi = k;
      }
      if (bi < 0) {
        bi = j.chunk_ix[0];
        for (int c = 1; c < j.nchunks; c++) {
          int64_t k = j.chunk_ix[c];
          bool better;
          if (x->dtype == PT_FLOAT32) {
            float a = ((const float *)j.x)[k], m = ((const float *)j.x)[bi];
            better = is_min ? a < m : a > m;
          } else if (x->dtype == PT_FLOAT64) {
            double a = ((const double *)j.x)[k], m = ((const double *)j.x)[bi];
            better = is_min ? a < m : a > m;
          } else {
            int64_t a = ((const int64_t *)j.x)[k], m = ((const int64_t *)j.x)[bi];
            better = is_min ? a < m : a > m;
          }
          if (better) bi = k;
        }
      }
      ix[oi] = bi;
      j.x += n * (int64_t)es;
    }
  }
}

static pt_status minmax(pt_ctx *ctx, const char *fname, pt_tensor *t, int dim, bool keepdim,
                        bool is_min, pt_tensor **values, pt_tensor **indices) {
  pt_status st = check_dim(ctx, fname, t, dim);
  if (st) return st;
  geom g = geom_of(t, dim);
  if (g.n == 0) {
    char b[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_EARG, "%s: cannot reduce over an empty %s (shape %s)", fname,
                   dim == PT_DIM_ALL ? "tensor" : "dimension",
                   pt_shape_format(t->ndim, t->shape, b, sizeof b));
  }
  pt_tensor *x = NULL, *v = NULL, *ix = NULL;
  if ((st = prepare(ctx, fname, t, true, &x))) return st;
  int ondim;
  int64_t oshape[PT_MAX_DIMS];
  reduced_shape(t, dim, keepdim, &ondim, oshape);
  if ((st = pt_tensor_empty(ctx, PT_INT64, ondim, oshape, &ix))) goto fail;
  if (values && (st = pt_tensor_empty(ctx, x->dtype, ondim, oshape, &v))) goto fail;
  int64_t *ixp = pt_tensor_data(ix);
  if (g.inner == 1) {
    minmax_unit_stride(ctx, x, g.outer, g.n, is_min, ixp);
    if (v) {
      PT_DISPATCH_FLOAT_INT64(x->dtype, {
        const T *xp = pt_tensor_data(x);
        T *vp = pt_tensor_data(v);
        for (int64_t oi = 0; oi < g.outer; oi++) vp[oi] = xp[oi * g.n + ixp[oi]];
      });
    }
  } else
  PT_DISPATCH_FLOAT_INT64(x->dtype, {
    const T *xp = pt_tensor_data(x);
    T *vp = v ? (T *)pt_tensor_data(v) : NULL;
    FOR_LANES(g, {
      const T *p = xp + base;
      T b = p[0];
      int64_t bi = 0;
      if (b == b) /* a NaN wins: the first one is the result */
        for (int64_t i = 1; i < g.n; i++) {
          T e = p[i * s];
          if (is_min ? e < b : e > b) {
            b = e;
            bi = i;
          } else if (e != e) {
            b = e;
            bi = i;
            break;
          }
        }
      ixp[oi] = bi;
      if (vp) vp[oi] = b;
    });
  });
  if (v && v->dtype != t->dtype) { /* integer inputs: values in the input's dtype */
    pt_tensor *c;
    if ((st = pt_tensor_to_dtype_raw(ctx, v, t->dtype, &c))) goto fail;
    pt_tensor_release(v);
    v = c;
  }
  if (v) {
    pt_node *node;
    if ((st = pt_autograd_record(ctx, v, is_min ? "MinBackward" : "MaxBackward", minmax_backward,
                                 1, &t, &node)))
      goto fail;
    if (node) {
      pt_node_save(node, 0, pt_tensor_retain(ix));
      node->ints[0] = dim;
      node->n_ints = 1;
      if (dim == PT_DIM_ALL) { /* the gradient is shared among ties, with recorded ops */
        pt_node_save(node, 1, pt_tensor_retain(t));
        pt_node_save(node, 2, pt_tensor_retain(v));
        node->backward_differentiable = true;
      }
    }
    *values = v;
  }
  if (indices)
    *indices = ix;
  else
    pt_tensor_release(ix);
  pt_tensor_release(x);
  return PT_OK;
fail:
  pt_tensor_release(x);
  pt_tensor_release(v);
  pt_tensor_release(ix);
  return st;
}

pt_status pt_max(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **values,
                 pt_tensor **indices) {
  return minmax(ctx, "max", t, dim, keepdim, false, values, indices);
}
pt_status pt_min(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **values,
                 pt_tensor **indices) {
  return minmax(ctx, "min", t, dim, keepdim, true, values, indices);
}
pt_status pt_argmax(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out) {
  return minmax(ctx, "argmax", t, dim, keepdim, false, NULL, out);
}
pt_status pt_argmin(pt_ctx *ctx, pt_tensor *t, int dim, bool keepdim, pt_tensor **out) {
  return minmax(ctx, "argmin", t, dim, keepdim, true, NULL, out);
}

/* ------------------------------------------------------------------------------------------ */
/* softmax, log_softmax                                                                        */

static pt_status softmax_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  if (!node->needs_grad[0]) return PT_OK;
  pt_tensor *y = node->saved[0], *gc = NULL, *gi = NULL, *tmp;
  bool logsm = node->ints[1];
  geom gm = geom_of(y, (int)node->ints[0]);
  pt_status st = pt_tensor_to_dtype_raw(ctx, g, y->dtype, &tmp);
  if (st) return st;
  st = pt_tensor_contiguous_raw(ctx, tmp, &gc);
  pt_tensor_release(tmp);
  if (st) return st;
  if ((st = pt_tensor_empty(ctx, y->dtype, y->ndim, y->shape, &gi))) {
    pt_tensor_release(gc);
    return st;
  }
  PT_DISPATCH_FLOAT(y->dtype, {
    const T *yp = pt_tensor_data(y), *gp = pt_tensor_data(gc);
    T *ip = pt_tensor_data(gi);
    const int64_t n = gm.n;
    FOR_LANES(gm, {
      const T *yl = yp + base, *gl = gp + base;
      T *q = ip + base;
      double acc = 0;
      if (logsm) { /* g - softmax * sum(g) */
        for (int64_t i = 0; i < n; i++) acc += (double)gl[i * s];
        for (int64_t i = 0; i < n; i++)
          q[i * s] = (T)((double)gl[i * s] - EXP_T(yl[i * s]) * acc);
      } else { /* y * (g - sum(g * y)) */
        for (int64_t i = 0; i < n; i++) acc += (double)gl[i * s] * (double)yl[i * s];
        for (int64_t i = 0; i < n; i++) q[i * s] = (T)((double)yl[i * s] * ((double)gl[i * s] - acc));
      }
    });
  });
  pt_tensor_release(gc);
  gin[0] = gi;
  return PT_OK;
}

typedef struct softmax_job {
  geom g;
  pt_dtype dt;
  const void *x;
  void *y;
  bool logsm;
  bool oom; /* a chunk could not get its buffers */
} softmax_job;

/* Blocks [begin, end) of softmax / log_softmax. A float32 last dim goes row by row through the
 * vectorised row kernel; otherwise the inner lanes of a block go side by side, row by row
 * through memory (lane by lane strided through it was 5-10x slower than PyTorch), every lane
 * seeing the operations of the row kernel's scalar form. */
static void softmax_chunk(void *arg, int64_t begin, int64_t end, int tid) {
  (void)tid;
  softmax_job *a = arg;
  const int64_t n = a->g.n, in = a->g.inner;
  bool logsm = a->logsm;
  if (a->dt == PT_FLOAT32 && in == 1) {
    const float *xp = a->x;
    float *yp = a->y;
    for (int64_t oi = begin; oi < end; oi++) softmax_row_f32(xp + oi * n, yp + oi * n, n, logsm);
    return;
  }
  double *acc = malloc((size_t)in * 3 * sizeof(double));
  if (!acc) {
    a->oom = true;
    return;
  }
  PT_DISPATCH_FLOAT(a->dt, {
    double *sum = acc;
    T *m = (T *)(acc + in), *f = (T *)(acc + 2 * in); /* max, then log-sum or 1/sum */
    for (int64_t oi = begin; oi < end; oi++) {
      const T *p = (const T *)a->x + oi * n * in;
      T *q = (T *)a->y + oi * n * in;
      for (int64_t j = 0; j < in; j++) m[j] = -INFINITY, sum[j] = 0;
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < in; j++) {
          T v = p[i * in + j];
          if (v > m[j] || v != v) m[j] = v;
        }
      if (logsm) {
        for (int64_t i = 0; i < n; i++)
          for (int64_t j = 0; j < in; j++) sum[j] += EXP_T(p[i * in + j] - m[j]);
        for (int64_t j = 0; j < in; j++) f[j] = (T)log(sum[j]);
        for (int64_t i = 0; i < n; i++)
          for (int64_t j = 0; j < in; j++) q[i * in + j] = (p[i * in + j] - m[j]) - f[j];
      } else {
        for (int64_t i = 0; i < n; i++)
          for (int64_t j = 0; j < in; j++) {
            T e = (T)EXP_T(p[i * in + j] - m[j]);
            q[i * in + j] = e;
            sum[j] += e;
          }
        for (int64_t j = 0; j < in; j++) f[j] = (T)(1.0 / sum[j]);
        for (int64_t i = 0; i < n; i++)
          for (int64_t j = 0; j < in; j++) q[i * in + j] *= f[j];
      }
    }
  });
  free(acc);
}

static pt_status softmax_op(pt_ctx *ctx, const char *fname, pt_tensor *t, int dim, bool logsm,
                            pt_tensor **out) {
  int nd = t->ndim > 0 ? t->ndim : 1;
  if (dim < -nd || dim >= nd)
    return pt_fail(ctx, PT_EARG, "%s: dimension %d out of range (tensor has %d dimensions)", fname,
                   dim < 0 ? dim : dim + 1, t->ndim);
  if (dim < 0) dim += nd;
  pt_tensor *x = NULL, *y = NULL;
  pt_status st = prepare(ctx, fname, t, false, &x);
  if (st) return st;
  if ((st = pt_tensor_empty(ctx, x->dtype, x->ndim, x->shape, &y))) goto fail;
  softmax_job job = {geom_of(x, dim), x->dtype, pt_tensor_data(x), pt_tensor_data(y), logsm, false};
  /* blocks (rows, for the last dim) are independent: over the threads once there is work */
  int64_t per = job.g.n * job.g.inner;
  pt_parallel_for(ctx, job.g.outer, (1 << 15) / (per > 0 ? per : 1) + 1, softmax_chunk, &job);
  if (job.oom) {
    st = pt_fail(ctx, PT_ENOMEM, "%s: out of memory", fname);
    goto fail;
  }
  pt_node *node;
  if ((st = pt_autograd_record(ctx, y, logsm ? "LogSoftmaxBackward" : "SoftmaxBackward",
                               softmax_backward, 1, &t, &node)))
    goto fail;
  if (node) {
    /* the output without its grad_fn (saving y itself would make a cycle) */
    if ((st = pt_detach(ctx, y, &node->saved[0]))) goto fail;
    node->ints[0] = dim;
    node->ints[1] = logsm;
    node->n_ints = 2;
  }
  pt_tensor_release(x);
  *out = y;
  return PT_OK;
fail:
  pt_tensor_release(x);
  pt_tensor_release(y);
  return st;
}

pt_status pt_softmax(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out) {
  return softmax_op(ctx, "softmax", t, dim, false, out);
}
pt_status pt_log_softmax(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out) {
  return softmax_op(ctx, "log_softmax", t, dim, true, out);
}
