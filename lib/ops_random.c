/* See ops_random.h. Elements are visited in flat (row-major) order through get/set_flat, so a
 * seed gives the same values whatever the tensor's strides. */
#include "ops_random.h"

#include "autograd.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

static pt_status check_float_dtype(pt_ctx *ctx, const char *fname, const pt_tensor *t) {
  if (t->dtype == PT_FLOAT32 || t->dtype == PT_FLOAT64) return PT_OK;
  return pt_fail(ctx, PT_EARG, "%s: expected a float32 or float64 tensor, got %s", fname,
                 pt_dtype_name(t->dtype));
}

/* u in (0, 1]: a log of it is finite */
static double uniform_open0(pt_rng *r) { return 1.0 - pt_rng_uniform(r); }

static double draw(pt_rng *r, pt_dist d, double a, double b) {
  switch (d) {
  case PT_DIST_BERNOULLI:
    return pt_rng_uniform(r) < a ? 1.0 : 0.0;
  case PT_DIST_EXPONENTIAL:
    return -log(uniform_open0(r)) / a;
  case PT_DIST_GEOMETRIC: /* inversion: the first k with 1 - (1-p)^k > u */
    if (a >= 1.0) return 1.0;
    return ceil(log(uniform_open0(r)) / log1p(-a));
  case PT_DIST_LOG_NORMAL:
    return exp(a + b * pt_rng_normal(r));
  case PT_DIST_CAUCHY:
    return a + b * tan(M_PI * (pt_rng_uniform(r) - 0.5));
  }
  return 0.0;
}

pt_status pt_random_fill_(pt_ctx *ctx, const char *fname, pt_tensor *t, pt_dist d, double a, double b) {
  pt_status st;
  switch (d) {
  case PT_DIST_BERNOULLI:
    if (!(a >= 0.0 && a <= 1.0))
      return pt_fail(ctx, PT_EARG, "%s: p must be in [0, 1], got %g", fname, a);
    break;
  case PT_DIST_GEOMETRIC:
    if (!(a > 0.0 && a <= 1.0))
      return pt_fail(ctx, PT_EARG, "%s: p must be in (0, 1], got %g", fname, a);
    break;
  case PT_DIST_EXPONENTIAL:
    if ((st = check_float_dtype(ctx, fname, t))) return st;
    if (!(a > 0.0) || isinf(a))
      return pt_fail(ctx, PT_EARG, "%s: lambd must be positive and finite, got %g", fname, a);
    break;
  case PT_DIST_LOG_NORMAL:
  case PT_DIST_CAUCHY:
    if ((st = check_float_dtype(ctx, fname, t))) return st;
    if (!isfinite(a)) return pt_fail(ctx, PT_EARG, "%s: %s must be finite, got %g", fname,
                                     d == PT_DIST_CAUCHY ? "median" : "mean", a);
    if (!(b > 0.0) || isinf(b))
      return pt_fail(ctx, PT_EARG, "%s: %s must be positive and finite, got %g", fname,
                     d == PT_DIST_CAUCHY ? "sigma" : "std", b);
    break;
  }
  int64_t n = pt_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) pt_tensor_set_flat(t, i, draw(&ctx->rng, d, a, b));
  atomic_fetch_add(&t->storage->version, 1);
  return PT_OK;
}

pt_status pt_random_integers_(pt_ctx *ctx, const char *fname, pt_tensor *t, int64_t lo, int64_t hi) {
  if (hi <= lo)
    return pt_fail(ctx, PT_EARG, "%s: empty range [%lld, %lld)", fname, (long long)lo, (long long)hi);
  /* every value of [lo, hi) must be representable (floats: exactly) */
  double max_exact = t->dtype == PT_FLOAT32 ? 16777216.0 : t->dtype == PT_FLOAT64 ? 9007199254740992.0 : 0;
  double tmin = 0, tmax = 0;
  switch (t->dtype) {
  case PT_UINT8: tmin = 0, tmax = 255; break;
  case PT_INT32: tmin = -2147483648.0, tmax = 2147483647.0; break;
  case PT_BOOL: tmin = 0, tmax = 1; break;
  case PT_INT64: tmin = -9223372036854775808.0, tmax = 9223372036854775807.0; break;
  default: tmin = -max_exact, tmax = max_exact; break;
  }
  if ((double)lo < tmin || (double)(hi - 1) > tmax)
    return pt_fail(ctx, PT_EARG, "%s: range [%lld, %lld) does not fit %s", fname, (long long)lo,
                   (long long)hi, pt_dtype_name(t->dtype));
  uint64_t span = (uint64_t)hi - (uint64_t)lo;
  int64_t n = pt_tensor_numel(t);
  if (t->dtype == PT_INT64 && pt_tensor_is_contiguous(t)) { /* exact beyond 2^53 */
    int64_t *p = pt_tensor_data(t);
    for (int64_t i = 0; i < n; i++) p[i] = (int64_t)((uint64_t)lo + pt_rng_below(&ctx->rng, span));
  } else {
    for (int64_t i = 0; i < n; i++)
      pt_tensor_set_flat(t, i, (double)(int64_t)((uint64_t)lo + pt_rng_below(&ctx->rng, span)));
  }
  atomic_fetch_add(&t->storage->version, 1);
  return PT_OK;
}

pt_status pt_random_bernoulli_tensor_(pt_ctx *ctx, const char *fname, pt_tensor *t, pt_tensor *probs) {
  if (probs->dtype != PT_FLOAT32 && probs->dtype != PT_FLOAT64)
    return pt_fail(ctx, PT_EARG, "%s: p must be a float32 or float64 tensor, got %s", fname,
                   pt_dtype_name(probs->dtype));
  /* p broadcasts to t's shape (t's shape does not change) */
  bool fits = probs->ndim <= t->ndim;
  for (int i = 0; fits && i < probs->ndim; i++) {
    int64_t ps = probs->shape[probs->ndim - 1 - i], ts = t->shape[t->ndim - 1 - i];
    fits = ps == ts || ps == 1;
  }
  if (!fits) {
    char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "%s: p of shape %s does not broadcast to the tensor's shape %s", fname,
                   pt_shape_format(probs->ndim, probs->shape, a, sizeof a),
                   pt_shape_format(t->ndim, t->shape, b, sizeof b));
  }
  pt_tensor *p = NULL;
  pt_status st = pt_expand_raw(ctx, probs, t->ndim, t->shape, &p);
  if (st) return st;
  int64_t n = pt_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    double v = pt_tensor_get_flat(p, i);
    if (!(v >= 0.0 && v <= 1.0)) {
      pt_tensor_release(p);
      return pt_fail(ctx, PT_EARG, "%s: p must be in [0, 1], got %g at element %lld", fname, v, (long long)i + 1);
    }
  }
  /* p may share t's storage (t:bernoulli_(t)): draw each element from its p before writing it */
  for (int64_t i = 0; i < n; i++)
    pt_tensor_set_flat(t, i, pt_rng_uniform(&ctx->rng) < pt_tensor_get_flat(p, i) ? 1.0 : 0.0);
  pt_tensor_release(p);
  atomic_fetch_add(&t->storage->version, 1);
  return PT_OK;
}

/* The samplers' gradient, as torch's (NormalBackward, BernoulliBackward, PoissonBackward): zero
 * for every input. A draw is not a differentiable function of its parameters, but the result
 * stays in the graph so that backward through it gives zeros rather than "does not require grad". */
static pt_status zero_grads_backward(pt_ctx *ctx, pt_node *node, pt_tensor *grad_out, pt_tensor **grad_in) {
  (void)grad_out;
  for (int k = 0; k < node->n_inputs; k++) {
    if (!node->needs_grad[k]) continue;
    const pt_tensor *in = node->inputs[k];
    pt_status st = pt_tensor_zeros(ctx, in->dtype, in->ndim, in->shape, &grad_in[k]);
    if (st) return st;
  }
  return PT_OK;
}

/* records the zero-gradient node on a fresh sample; on failure releases it */
static pt_status record_sampler(pt_ctx *ctx, pt_tensor **out, const char *name, int n, pt_tensor *const *inputs) {
  pt_node *node;
  pt_status st = pt_autograd_record(ctx, *out, name, zero_grads_backward, n, inputs, &node);
  if (st) {
    pt_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

pt_status pt_random_bernoulli(pt_ctx *ctx, pt_tensor *probs, pt_tensor **out) {
  pt_status st = check_float_dtype(ctx, "bernoulli", probs);
  if (st) return st;
  int64_t n = pt_tensor_numel(probs);
  for (int64_t i = 0; i < n; i++) {
    double p = pt_tensor_get_flat(probs, i);
    if (!(p >= 0.0 && p <= 1.0))
      return pt_fail(ctx, PT_EARG, "bernoulli: probabilities must be in [0, 1], got %g at element %lld",
                     p, (long long)i + 1);
  }
  if ((st = pt_tensor_empty(ctx, probs->dtype, probs->ndim, probs->shape, out))) return st;
  for (int64_t i = 0; i < n; i++)
    pt_tensor_set_flat(*out, i, pt_rng_uniform(&ctx->rng) < pt_tensor_get_flat(probs, i) ? 1.0 : 0.0);
  return record_sampler(ctx, out, "BernoulliBackward", 1, &probs);
}

pt_status pt_random_normal(pt_ctx *ctx, pt_tensor *mean, double mean_v, pt_tensor *std, double std_v,
                           pt_tensor **out) {
  pt_status st;
  if (mean && (st = check_float_dtype(ctx, "normal", mean))) return st;
  if (std && (st = check_float_dtype(ctx, "normal", std))) return st;
  if (mean && std && mean->dtype != std->dtype)
    return pt_fail(ctx, PT_EARG, "normal: mean is %s and std is %s (expected one dtype)",
                   pt_dtype_name(mean->dtype), pt_dtype_name(std->dtype));
  int nd = 0;
  int64_t shape[PT_MAX_DIMS];
  const pt_tensor *a = mean ? mean : std, *b = mean && std ? std : a;
  if ((st = pt_broadcast_shapes(ctx, "normal", a->ndim, a->shape, b->ndim, b->shape, &nd, shape))) return st;
  pt_tensor *m = NULL, *s = NULL;
  if (mean && (st = pt_expand_raw(ctx, mean, nd, shape, &m))) return st;
  if (std && (st = pt_expand_raw(ctx, std, nd, shape, &s))) {
    pt_tensor_release(m);
    return st;
  }
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= shape[i];
  for (int64_t i = 0; i < n && s; i++) {
    double v = pt_tensor_get_flat(s, i);
    if (!(v >= 0.0) || isinf(v)) {
      pt_tensor_release(m);
      pt_tensor_release(s);
      return pt_fail(ctx, PT_EARG, "normal: std must be non-negative and finite, got %g at element %lld", v,
                     (long long)i + 1);
    }
  }
  if ((st = pt_tensor_empty(ctx, a->dtype, nd, shape, out))) {
    pt_tensor_release(m);
    pt_tensor_release(s);
    return st;
  }
  for (int64_t i = 0; i < n; i++) {
    double mu = m ? pt_tensor_get_flat(m, i) : mean_v, sd = s ? pt_tensor_get_flat(s, i) : std_v;
    pt_tensor_set_flat(*out, i, mu + sd * pt_rng_normal(&ctx->rng));
  }
  pt_tensor_release(m);
  pt_tensor_release(s);
  pt_tensor *params[2];
  int np = 0;
  if (mean) params[np++] = mean;
  if (std) params[np++] = std;
  return record_sampler(ctx, out, "NormalBackward", np, params);
}

/* One Poisson draw: multiplication of uniforms (Knuth) for small rates, Hormann's transformed
 * rejection (PTRS, as NumPy) for rates >= 10. */
static double poisson_draw(pt_rng *r, double lam) {
  if (lam == 0.0) return 0.0;
  if (lam < 10.0) {
    double limit = exp(-lam), prod = 1.0;
    double k = -1.0;
    do {
      k += 1.0;
      prod *= pt_rng_uniform(r);
    } while (prod > limit);
    return k;
  }
  double slam = sqrt(lam), loglam = log(lam);
  double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    double u = pt_rng_uniform(r) - 0.5, v = pt_rng_uniform(r);
    double us = 0.5 - fabs(u);
    double k = floor((2 * a / us + b) * u + lam + 0.43);
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (log(v) + log(invalpha) - log(a / (us * us) + b) <= -lam + k * loglam - lgamma(k + 1)) return k;
  }
}

pt_status pt_random_poisson(pt_ctx *ctx, pt_tensor *rates, pt_tensor **out) {
  pt_status st = check_float_dtype(ctx, "poisson", rates);
  if (st) return st;
  int64_t n = pt_tensor_numel(rates);
  for (int64_t i = 0; i < n; i++) {
    double lam = pt_tensor_get_flat(rates, i);
    if (!(lam >= 0.0) || isinf(lam))
      return pt_fail(ctx, PT_EARG, "poisson: rates must be non-negative and finite, got %g at element %lld",
                     lam, (long long)i + 1);
  }
  if ((st = pt_tensor_empty(ctx, rates->dtype, rates->ndim, rates->shape, out))) return st;
  for (int64_t i = 0; i < n; i++) pt_tensor_set_flat(*out, i, poisson_draw(&ctx->rng, pt_tensor_get_flat(rates, i)));
  return record_sampler(ctx, out, "PoissonBackward", 1, &rates);
}

typedef struct keyed {
  double key;
  int64_t index;
} keyed;

static int by_key_desc(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? 1 : -1;
  return x->index < y->index ? -1 : x->index > y->index;
}

pt_status pt_random_multinomial(pt_ctx *ctx, pt_tensor *w, int64_t n, bool replacement, pt_tensor **out) {
  pt_status st = check_float_dtype(ctx, "multinomial", w);
  if (st) return st;
  if (w->ndim != 1 && w->ndim != 2)
    return pt_fail(ctx, PT_ESHAPE, "multinomial: weights must be 1-D or 2-D, got %d dimensions", w->ndim);
  int64_t rows = w->ndim == 2 ? w->shape[0] : 1, k = w->shape[w->ndim - 1];
  if (k == 0) return pt_fail(ctx, PT_ESHAPE, "multinomial: weights have no categories");
  if (n < 0) return pt_fail(ctx, PT_EARG, "multinomial: number of samples must be non-negative, got %lld",
                            (long long)n);
  if (!replacement && n > k)
    return pt_fail(ctx, PT_EARG, "multinomial: cannot draw %lld samples from %lld categories without replacement",
                   (long long)n, (long long)k);
  /* validate every row before drawing anything */
  for (int64_t r = 0; r < rows; r++) {
    double sum = 0;
    int64_t nonzero = 0;
    for (int64_t j = 0; j < k; j++) {
      double v = pt_tensor_get_flat(w, r * k + j);
      if (!(v >= 0.0) || isinf(v))
        return pt_fail(ctx, PT_EARG, "multinomial: weights must be non-negative and finite, got %g in row %lld",
                       v, (long long)r + 1);
      sum += v;
      nonzero += v > 0;
    }
    if (!(sum > 0.0))
      return pt_fail(ctx, PT_EARG, "multinomial: the weights of row %lld sum to zero", (long long)r + 1);
    if (!replacement && n > nonzero)
      return pt_fail(ctx, PT_EARG, "multinomial: row %lld has %lld nonzero weights, fewer than the %lld samples "
                     "drawn without replacement", (long long)r + 1, (long long)nonzero, (long long)n);
  }
  int64_t shape[2] = {rows, n};
  if ((st = pt_tensor_empty(ctx, PT_INT64, w->ndim, w->ndim == 2 ? shape : shape + 1, out))) return st;
  int64_t *o = pt_tensor_data(*out);
  double *cdf = malloc((size_t)k * (replacement ? sizeof(double) : sizeof(keyed)));
  if (!cdf) {
    pt_tensor_release(*out);
    *out = NULL;
    return pt_fail(ctx, PT_ENOMEM, "multinomial: out of memory");
  }
  for (int64_t r = 0; r < rows; r++) {
    if (replacement) { /* inverse of the cumulative weights, by bisection */
      double acc = 0;
      for (int64_t j = 0; j < k; j++) cdf[j] = acc += pt_tensor_get_flat(w, r * k + j);
      for (int64_t s = 0; s < n; s++) {
        double u = pt_rng_uniform(&ctx->rng) * acc;
        int64_t lo = 0, hi = k - 1;
        while (lo < hi) {
          int64_t mid = (lo + hi) / 2;
          if (cdf[mid] > u) hi = mid;
          else lo = mid + 1;
        }
        /* u rounded up to the total: the last category with a weight */
        while (cdf[lo] <= u && lo > 0 && pt_tensor_get_flat(w, r * k + lo) == 0) lo--;
        o[r * n + s] = lo;
      }
    } else { /* Efraimidis-Spirakis: the n largest log(u)/w are a sequential draw, in order */
      keyed *kv = (keyed *)cdf;
      for (int64_t j = 0; j < k; j++) {
        double v = pt_tensor_get_flat(w, r * k + j);
        double u = uniform_open0(&ctx->rng);
        kv[j].key = v > 0 ? log(u) / v : -INFINITY;
        kv[j].index = j;
      }
      qsort(kv, (size_t)k, sizeof *kv, by_key_desc);
      for (int64_t s = 0; s < n; s++) o[r * n + s] = kv[s].index;
    }
  }
  free(cdf);
  return PT_OK;
}
