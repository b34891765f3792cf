/* Optimizer update kernels: PyTorch 1.13's single-tensor formulas, fused per parameter. */
#include "optim.h"
#include "dispatch.h"
#include "parallel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


pt_status pt_optim_check_param(pt_ctx *ctx, const char *fname, int index, pt_tensor *param) {
  if (param->dtype != PT_FLOAT32 && param->dtype != PT_FLOAT64)
    return pt_fail(ctx, PT_EARG, "%s: parameter %d must be float32 or float64, got %s", fname,
                   index, pt_dtype_name(param->dtype));
  if (param->grad) {
    pt_tensor *g = param->grad;
    if (g->ndim != param->ndim ||
        memcmp(g->shape, param->shape, (size_t)g->ndim * sizeof(int64_t)) != 0) {
      char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
      return pt_fail(ctx, PT_ESHAPE, "%s: gradient of parameter %d has shape %s, expected %s",
                     fname, index, pt_shape_format(g->ndim, g->shape, a, sizeof a),
                     pt_shape_format(param->ndim, param->shape, b, sizeof b));
    }
  }
  return PT_OK;
}

pt_status pt_optim_check_state(pt_ctx *ctx, const char *fname, const char *what, int index,
                               pt_tensor *param, pt_tensor *state) {
  char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
  if (state->ndim != param->ndim ||
      memcmp(state->shape, param->shape, (size_t)param->ndim * sizeof(int64_t)) != 0)
    return pt_fail(ctx, PT_ESHAPE, "%s: %s of parameter %d has shape %s, expected %s", fname, what,
                   index, pt_shape_format(state->ndim, state->shape, a, sizeof a),
                   pt_shape_format(param->ndim, param->shape, b, sizeof b));
  if (state->dtype != param->dtype)
    return pt_fail(ctx, PT_EARG, "%s: %s of parameter %d has dtype %s, expected %s", fname, what,
                   index, pt_dtype_name(state->dtype), pt_dtype_name(param->dtype));
  if (!pt_tensor_is_contiguous(state))
    return pt_fail(ctx, PT_EARG, "%s: %s of parameter %d is not contiguous", fname, what, index);
  return PT_OK;
}

/* the gradient as a contiguous tensor of the parameter's dtype (new reference) */
static pt_status grad_of(pt_ctx *ctx, pt_tensor *param, pt_tensor *grad, pt_tensor **out) {
  if (grad->dtype == param->dtype && pt_tensor_is_contiguous(grad)) {
    *out = pt_tensor_retain(grad);
    return PT_OK;
  }
  pt_tensor *g;
  pt_status st = pt_tensor_empty(ctx, param->dtype, param->ndim, param->shape, &g);
  if (st) return st;
  if ((st = pt_tensor_copy_into(ctx, g, grad))) {
    pt_tensor_release(g);
    return st;
  }
  *out = g;
  return PT_OK;
}

static void bump(pt_tensor *t) {
  if (t) atomic_fetch_add(&t->storage->version, 1);
}

/* Element-wise updates split over the intra-op threads as one range across all the tensors of
 * a step (pt_parallel_for_segments); zero_grad splits its tensors the same way, so each core
 * zeroes the gradients it has just read. */
#define STEP_GRAIN 32768

typedef struct sgd_many_job {
  const pt_sgd_item *items;
  pt_tensor *const *g; /* contiguous gradients of the parameters' dtypes */
  const pt_sgd_opts *o;
} sgd_many_job;

static void sgd_segment(void *arg, int i, int64_t lo, int64_t hi) {
  const sgd_many_job *j = arg;
  const pt_sgd_item *it = &j->items[i];
  pt_dtype dt = it->param->dtype;
  size_t es = pt_dtype_size(dt);
  pt_optim_sgd_raw(dt, (char *)pt_tensor_data(it->param) + (size_t)lo * es,
                   (const char *)pt_tensor_data(j->g[i]) + (size_t)lo * es, NULL,
                   it->buf ? (char *)pt_tensor_data(it->buf) + (size_t)lo * es : NULL,
                   it->buf_init, j->o, hi - lo);
}

pt_status pt_optim_sgd_many(pt_ctx *ctx, const pt_sgd_item *items, int n, const pt_sgd_opts *o) {
  if (n <= 0) return PT_OK;
  pt_tensor **g = calloc((size_t)n, sizeof *g);
  int64_t *counts = calloc((size_t)n, sizeof *counts);
  pt_status st = g && counts ? PT_OK : pt_fail(ctx, PT_ENOMEM, "out of memory");
  for (int i = 0; i < n && !st; i++) {
    st = grad_of(ctx, items[i].param, items[i].grad, &g[i]);
    counts[i] = pt_tensor_numel(items[i].param);
  }
  if (!st) {
    sgd_many_job job = {items, g, o};
    st = pt_parallel_for_segments(ctx, n, counts, STEP_GRAIN, sgd_segment, &job);
  }
  for (int i = 0; i < n; i++) {
    if (!st) {
      bump(items[i].param);
      bump(items[i].buf);
    }
    if (g) pt_tensor_release(g[i]);
  }
  free(g);
  free(counts);
  return st;
}

pt_status pt_optim_sgd(pt_ctx *ctx, pt_tensor *param, pt_tensor *grad, pt_tensor *buf,
                       bool buf_init, const pt_sgd_opts *o) {
  pt_sgd_item it = {param, grad, buf, buf_init};
  return pt_optim_sgd_many(ctx, &it, 1, o);
}

static void zero_segment(void *arg, int i, int64_t lo, int64_t hi) {
  pt_tensor *t = ((pt_tensor *const *)arg)[i];
  size_t es = pt_dtype_size(t->dtype);
  memset((char *)pt_tensor_data(t) + (size_t)lo * es, 0, (size_t)(hi - lo) * es);
}

pt_status pt_optim_zero_grads(pt_ctx *ctx, pt_tensor *const *grads, int n) {
  pt_tensor **flat = malloc((size_t)(n > 0 ? n : 1) * sizeof *flat);
  int64_t *counts = calloc((size_t)(n > 0 ? n : 1), sizeof *counts);
  pt_status st = flat && counts ? PT_OK : pt_fail(ctx, PT_ENOMEM, "out of memory");
  int nflat = 0;
  for (int i = 0; i < n && !st; i++) {
    pt_tensor *t = grads[i];
    if (pt_tensor_is_contiguous(t)) {
      flat[nflat] = t;
      counts[nflat++] = pt_tensor_numel(t);
    } else {
      st = pt_tensor_fill(ctx, t, 0.0); /* bumps its version */
    }
  }
  if (!st) st = pt_parallel_for_segments(ctx, nflat, counts, STEP_GRAIN, zero_segment, flat);
  if (!st)
    for (int i = 0; i < nflat; i++) bump(flat[i]);
  free(flat);
  free(counts);
  return st;
}

/* SGD without momentum on P[0..N) with gradient G (an expression of i); lr, sign and wd in
 * scope. The one update formula of pt_optim_sgd_raw and pt_optim_sgd_scaled: bitwise alike. */
#define SGD_PLAIN(P, N, G)                                                 \
  do {                                                                     \
    if (wd == 0 && sign == 1) /* as PyTorch: no decay term; half the work */ \
      for (int64_t i = 0; i < (N); i++) (P)[i] -= lr * (G);                \
    else                                                                   \
      for (int64_t i = 0; i < (N); i++) (P)[i] -= lr * (sign * (G) + wd * (P)[i]); \
  } while (0)

#define SGD_LOOP(G)                                                      \
  do {                                                                   \
    if (!b) {                                                            \
      SGD_PLAIN(p, n, G);                                                \
    } else {                                                             \
      for (int64_t i = 0; i < n; i++) {                                  \
        T d = sign * (G) + wd * p[i];                                    \
        T bi = buf_init ? d : mom * b[i] + damp * d;                     \
        b[i] = bi;                                                       \
        p[i] -= lr * (o->nesterov ? d + mom * bi : bi);                  \
      }                                                                  \
    }                                                                    \
  } while (0)

void pt_optim_sgd_raw(pt_dtype dt, void *pv, const void *gv, const void *g2v, void *bv,
                      bool buf_init, const pt_sgd_opts *o, int64_t n) {
  PT_DISPATCH_FLOAT(dt, {
    T *p = pv;
    const T *gp = gv, *g2 = g2v;
    T *b = bv;
    const T lr = (T)o->lr, wd = (T)o->weight_decay, mom = (T)o->momentum;
    const T damp = (T)(1.0 - o->dampening), sign = o->maximize ? (T)-1 : (T)1;
    /* the same expressions as pt_optim_sgd: bitwise the same results */
    if (g2)
      SGD_LOOP(gp[i] + g2[i]);
    else
      SGD_LOOP(gp[i]);
  });
}

/* The update from k <= 2 live rank-1 terms x[j] scaled by sc[j] (x, sc, k, lr, sign, wd in
 * scope): pt_optim_sgd_scaled and pt_optim_sgd_rank_rows share it so that they round alike. */
#define SGD_FEW_TERMS(P, N)                                     \
  do {                                                          \
    if (k == 1) {                                               \
      const T *x0 = x[0], s0 = sc[0];                           \
      SGD_PLAIN(P, N, s0 * x0[i]);                              \
    } else if (k == 2) {                                        \
      const T *x0 = x[0], *x1 = x[1], s0 = sc[0], s1 = sc[1];   \
      SGD_PLAIN(P, N, s0 * x0[i] + s1 * x1[i]);                 \
    } else {                                                    \
      SGD_PLAIN(P, N, (T)0);                                    \
    }                                                           \
  } while (0)

void pt_optim_sgd_scaled(pt_dtype dt, void *pv, const void *const *xv, const double *s, int nf,
                         const pt_sgd_opts *o, int64_t n) {
  PT_DISPATCH_FLOAT(dt, {
    T *p = pv;
    const T lr = (T)o->lr, wd = (T)o->weight_decay, sign = o->maximize ? (T)-1 : (T)1;
    const T *x[2];
    T sc[2];
    int k = 0;
    for (int j = 0; j < nf; j++) {
      if (s[j] == 0) continue;
      if (k == 2) { /* three or more live terms: sum in a block on the stack */
        enum { BLK = 512 };
        T g[BLK];
        for (int64_t b0 = 0; b0 < n; b0 += BLK) {
          int64_t m = n - b0 < BLK ? n - b0 : BLK;
          for (int64_t i = 0; i < m; i++) g[i] = (T)0;
          for (int q = 0; q < nf; q++) {
            if (s[q] == 0) continue;
            const T *xq = (const T *)xv[q] + b0, sq = (T)s[q];
            for (int64_t i = 0; i < m; i++) g[i] += sq * xq[i];
          }
          T *pb = p + b0;
          SGD_PLAIN(pb, m, g[i]);
        }
        return;
      }
      x[k] = xv[j];
      sc[k++] = (T)s[j];
    }
    SGD_FEW_TERMS(p, n);
  });
}

void pt_optim_sgd_rank_rows(pt_dtype dt, void *pv, int64_t rows, int64_t cols,
                            const void *const *gs, const void *const *xs, int nf,
                            const pt_sgd_opts *o, bool skip_dead) {
  PT_DISPATCH_FLOAT(dt, {
    T *p = pv;
    const T lr = (T)o->lr, wd = (T)o->weight_decay, sign = o->maximize ? (T)-1 : (T)1;
    for (int64_t r = 0; r < rows; r++, p += cols) {
      const T *x[2] = {NULL, NULL};
      T sc[2] = {0, 0};
      int k = 0;
      for (int j = 0; j < nf; j++) {
        T s = ((const T *)gs[j])[r];
        if (s == 0) continue;
        if (k < 2) {
          x[k] = xs[j];
          sc[k] = s;
        }
        k++;
      }
      if (k == 0 && skip_dead) continue;
      if (k > 2) { /* three or more live terms: pt_optim_sgd_scaled's block path */
        const void *xv[PT_SGD_RANK_MAX];
        double sv[PT_SGD_RANK_MAX];
        int n = nf < PT_SGD_RANK_MAX ? nf : PT_SGD_RANK_MAX; /* nf <= PT_SGD_RANK_MAX: documented */
        for (int j = 0; j < n; j++) {
          xv[j] = xs[j];
          sv[j] = (double)((const T *)gs[j])[r];
        }
        pt_optim_sgd_scaled(dt, p, xv, sv, n, o, cols);
        continue;
      }
      SGD_FEW_TERMS(p, cols);
    }
  });
}

void pt_optim_sgd_range(pt_tensor *param, pt_tensor *grad, pt_tensor *buf, bool buf_init,
                        const pt_sgd_opts *o, int64_t lo, int64_t hi, bool zero_grad) {
  size_t es = pt_dtype_size(param->dtype);
  char *g = (char *)pt_tensor_data(grad) + (size_t)lo * es;
  pt_optim_sgd_raw(param->dtype, (char *)pt_tensor_data(param) + (size_t)lo * es, g, NULL,
                   buf ? (char *)pt_tensor_data(buf) + (size_t)lo * es : NULL, buf_init, o, hi - lo);
  if (zero_grad) memset(g, 0, (size_t)(hi - lo) * es);
}

pt_status pt_optim_adam(pt_ctx *ctx, pt_tensor *param, pt_tensor *grad, pt_tensor *exp_avg,
                        pt_tensor *exp_avg_sq, pt_tensor *max_sq, int64_t step,
                        const pt_adam_opts *o) {
  pt_tensor *g;
  pt_status st = grad_of(ctx, param, grad, &g);
  if (st) return st;
  int64_t n = pt_tensor_numel(param);
  double bc1 = 1.0 - pow(o->beta1, (double)step);
  double bc2 = 1.0 - pow(o->beta2, (double)step);
  PT_DISPATCH_FLOAT(param->dtype, {
    T *p = pt_tensor_data(param);
    const T *gp = pt_tensor_data(g);
    T *m = pt_tensor_data(exp_avg), *v = pt_tensor_data(exp_avg_sq);
    T *vm = max_sq ? (T *)pt_tensor_data(max_sq) : NULL;
    const T b1 = (T)o->beta1, b2 = (T)o->beta2, eps = (T)o->eps;
    const T omb1 = (T)(1.0 - o->beta1), omb2 = (T)(1.0 - o->beta2);
    const T step_size = (T)(o->lr / bc1), bc2_sqrt = (T)sqrt(bc2);
    const T sign = o->maximize ? (T)-1 : (T)1;
    const T wd = o->decoupled ? (T)0 : (T)o->weight_decay;
    const T decay = o->decoupled ? (T)(1.0 - o->lr * o->weight_decay) : (T)1;
    for (int64_t i = 0; i < n; i++) {
      T pi = p[i] * decay;
      T gi = sign * gp[i] + wd * pi;
      T mi = b1 * m[i] + omb1 * gi;
      T vi = b2 * v[i] + omb2 * gi * gi;
      m[i] = mi;
      v[i] = vi;
      if (vm) {
        if (vi > vm[i] || vi != vi) vm[i] = vi; /* torch.maximum: NaN wins */
        vi = vm[i];
      }
      T denom = (T)sqrt(vi) / bc2_sqrt + eps;
      p[i] = pi - step_size * mi / denom;
    }
  });
  bump(param);
  bump(exp_avg);
  bump(exp_avg_sq);
  bump(max_sq);
  pt_tensor_release(g);
  return PT_OK;
}

pt_status pt_optim_rmsprop(pt_ctx *ctx, pt_tensor *param, pt_tensor *grad, pt_tensor *square_avg,
                           pt_tensor *grad_avg, pt_tensor *buf, const pt_rmsprop_opts *o) {
  pt_tensor *g;
  pt_status st = grad_of(ctx, param, grad, &g);
  if (st) return st;
  int64_t n = pt_tensor_numel(param);
  PT_DISPATCH_FLOAT(param->dtype, {
    T *p = pt_tensor_data(param);
    const T *gp = pt_tensor_data(g);
    T *sq = pt_tensor_data(square_avg);
    T *ga = grad_avg ? (T *)pt_tensor_data(grad_avg) : NULL;
    T *b = buf ? (T *)pt_tensor_data(buf) : NULL;
    const T alpha = (T)o->alpha, eps = (T)o->eps, wd = (T)o->weight_decay, lr = (T)o->lr;
    const T mom = (T)o->momentum, sign = o->maximize ? (T)-1 : (T)1, oma = (T)(1.0 - o->alpha);
    for (int64_t i = 0; i < n; i++) {
      T gi = sign * gp[i] + wd * p[i];
      T s = alpha * sq[i] + oma * gi * gi;
      sq[i] = s;
      T avg;
      if (ga) {
        T a = alpha * ga[i] + oma * gi;
        ga[i] = a;
        avg = (T)sqrt(s - a * a) + eps;
      } else {
        avg = (T)sqrt(s) + eps;
      }
      if (b) {
        b[i] = mom * b[i] + gi / avg;
        p[i] -= lr * b[i];
      } else {
        p[i] -= lr * gi / avg;
      }
    }
  });
  bump(param);
  bump(square_avg);
  bump(grad_avg);
  bump(buf);
  pt_tensor_release(g);
  return PT_OK;
}

pt_status pt_optim_adagrad(pt_ctx *ctx, pt_tensor *param, pt_tensor *grad, pt_tensor *state_sum,
                           int64_t step, const pt_adagrad_opts *o) {
  pt_tensor *g;
  pt_status st = grad_of(ctx, param, grad, &g);
  if (st) return st;
  int64_t n = pt_tensor_numel(param);
  double clr = o->lr / (1.0 + (double)(step - 1) * o->lr_decay);
  PT_DISPATCH_FLOAT(param->dtype, {
    T *p = pt_tensor_data(param);
    const T *gp = pt_tensor_data(g);
    T *s = pt_tensor_data(state_sum);
    const T eps = (T)o->eps, wd = (T)o->weight_decay, c = (T)clr;
    const T sign = o->maximize ? (T)-1 : (T)1;
    for (int64_t i = 0; i < n; i++) {
      T gi = sign * gp[i] + wd * p[i];
      s[i] += gi * gi;
      p[i] -= c * gi / ((T)sqrt(s[i]) + eps);
    }
  });
  bump(param);
  bump(state_sum);
  pt_tensor_release(g);
  return PT_OK;
}

/* --- Adamax, NAdam, RAdam, Adadelta: PyTorch 1.13's _single_tensor_* formulas (NAdam with PyTorch 2's
 * mu_product_next), in the order of their operations; the scalars (1 - beta too) in double, as
 * Python computes them, rounded to the parameter's dtype as PyTorch's ops take them --- */

pt_status pt_optim_adamax(pt_ctx *ctx, pt_tensor *param, pt_tensor *grad, pt_tensor *exp_avg,
                          pt_tensor *exp_inf, int64_t step, const pt_adamax_opts *o) {
  pt_tensor *g;
  pt_status st = grad_of(ctx, param, grad, &g);
  if (st) return st;
  int64_t n = pt_tensor_numel(param);
  double clr = o->lr / (1.0 - pow(o->beta1, (double)step));
  PT_DISPATCH_FLOAT(param->dtype, {
    T *p = pt_tensor_data(param), *m = pt_tensor_data(exp_avg), *u = pt_tensor_data(exp_inf);
    const T *gp = pt_tensor_data(g);
    const T b1 = (T)o->beta1, b2 = (T)o->beta2, eps = (T)o->eps, wd = (T)o->weight_decay;
    const T sign = o->maximize ? (T)-1 : (T)1, c = (T)clr, omb1 = (T)(1.0 - o->beta1);
    for (int64_t i = 0; i < n; i++) {
      T gi = sign * gp[i] + wd * p[i];
      T mi = b1 * m[i] + omb1 * gi; /* torch 1.13: exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1) */
      T a = u[i] * b2, b = (T)fabs((double)gi) + eps;
      T ui = a > b || a != a ? a : b; /* amax over {exp_inf * beta2, |g| + eps}: NaN wins */
      m[i] = mi;
      u[i] = ui;
      p[i] -= c * mi / ui; /* param.addcdiv_(exp_avg, exp_inf, value=-clr) */
    }
  });
  bump(param);
  bump(exp_avg);
  bump(exp_inf);
  pt_tensor_release(g);
  return PT_OK;
}

pt_status pt_optim_nadam(pt_ctx *ctx, pt_tensor *param, pt_tensor *grad, pt_tensor *exp_avg,
                         pt_tensor *exp_avg_sq, int64_t step, double *mu_product,
                         const pt_nadam_opts *o) {
  pt_tensor *g;
  pt_status st = grad_of(ctx, param, grad, &g);
  if (st) return st;
  int64_t n = pt_tensor_numel(param);
  double bc2 = 1.0 - pow(o->beta2, (double)step);
  double mu = o->beta1 * (1.0 - 0.5 * pow(0.96, (double)step * o->momentum_decay));
  double mu_next = o->beta1 * (1.0 - 0.5 * pow(0.96, (double)(step + 1) * o->momentum_decay));
  double prod = *mu_product * mu, prod_next = prod * mu_next;
  *mu_product = prod;
  double c1 = -o->lr * (1.0 - mu) / (1.0 - prod), c2 = -o->lr * mu_next / (1.0 - prod_next);
  PT_DISPATCH_FLOAT(param->dtype, {
    T *p = pt_tensor_data(param), *m = pt_tensor_data(exp_avg), *v = pt_tensor_data(exp_avg_sq);
    const T *gp = pt_tensor_data(g);
    const T b1 = (T)o->beta1, b2 = (T)o->beta2, eps = (T)o->eps, wd = (T)o->weight_decay;
    const T bc = (T)bc2, k1 = (T)c1, k2 = (T)c2;
    const T omb1 = (T)(1.0 - o->beta1), omb2 = (T)(1.0 - o->beta2);
    for (int64_t i = 0; i < n; i++) {
      T gi = gp[i] + wd * p[i];
      T mi = m[i] * b1 + omb1 * gi;
      T vi = v[i] * b2 + omb2 * gi * gi;
      m[i] = mi;
      v[i] = vi;
      T denom = (T)sqrt((double)(vi / bc)) + eps;
      T pi = p[i] + k1 * gi / denom; /* param.addcdiv_(grad, denom, value=k1) */
      p[i] = pi + k2 * mi / denom;
    }
  });
  bump(param);
  bump(exp_avg);
  bump(exp_avg_sq);
  pt_tensor_release(g);
  return PT_OK;
}

pt_status pt_optim_radam(pt_ctx *ctx, pt_tensor *param, pt_tensor *grad, pt_tensor *exp_avg,
                         pt_tensor *exp_avg_sq, int64_t step, const pt_radam_opts *o) {
  pt_tensor *g;
  pt_status st = grad_of(ctx, param, grad, &g);
  if (st) return st;
  int64_t n = pt_tensor_numel(param);
  double bc1 = 1.0 - pow(o->beta1, (double)step), bc2 = 1.0 - pow(o->beta2, (double)step);
  double rho_inf = 2.0 / (1.0 - o->beta2) - 1.0;
  double rho_t = rho_inf - 2.0 * (double)step * pow(o->beta2, (double)step) / bc2;
  /* the variance is tractable after ~5 steps: rectified adaptive step; before, plain momentum */
  bool rectify = rho_t > 5.0;
  double rect = rectify ? sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) : 0;
  PT_DISPATCH_FLOAT(param->dtype, {
    T *p = pt_tensor_data(param), *m = pt_tensor_data(exp_avg), *v = pt_tensor_data(exp_avg_sq);
    const T *gp = pt_tensor_data(g);
    const T b1 = (T)o->beta1, b2 = (T)o->beta2, eps = (T)o->eps, wd = (T)o->weight_decay;
    const T lr = (T)o->lr, c1 = (T)bc1, sq2 = (T)sqrt(bc2), r = (T)rect;
    const T omb1 = (T)(1.0 - o->beta1), omb2 = (T)(1.0 - o->beta2);
    for (int64_t i = 0; i < n; i++) {
      T gi = gp[i] + wd * p[i];
      T mi = m[i] * b1 + omb1 * gi;
      T vi = v[i] * b2 + omb2 * gi * gi;
      m[i] = mi;
      v[i] = vi;
      T corrected = mi / c1;
      if (rectify) {
        T adaptive = sq2 / ((T)sqrt((double)vi) + eps);
        p[i] -= corrected * lr * adaptive * r;
      } else {
        p[i] -= corrected * lr;
      }
    }
  });
  bump(param);
  bump(exp_avg);
  bump(exp_avg_sq);
  pt_tensor_release(g);
  return PT_OK;
}

pt_status pt_optim_adadelta(pt_ctx *ctx, pt_tensor *param, pt_tensor *grad, pt_tensor *square_avg,
                            pt_tensor *acc_delta, const pt_adadelta_opts *o) {
  pt_tensor *g;
  pt_status st = grad_of(ctx, param, grad, &g);
  if (st) return st;
  int64_t n = pt_tensor_numel(param);
  PT_DISPATCH_FLOAT(param->dtype, {
    T *p = pt_tensor_data(param), *sq = pt_tensor_data(square_avg), *acc = pt_tensor_data(acc_delta);
    const T *gp = pt_tensor_data(g);
    const T rho = (T)o->rho, eps = (T)o->eps, wd = (T)o->weight_decay, lr = (T)o->lr;
    const T sign = o->maximize ? (T)-1 : (T)1, omr = (T)(1.0 - o->rho);
    for (int64_t i = 0; i < n; i++) {
      T gi = sign * gp[i] + wd * p[i];
      T s = sq[i] * rho + omr * gi * gi;
      sq[i] = s;
      T std = (T)sqrt((double)(s + eps));
      T delta = (T)sqrt((double)(acc[i] + eps)) / std * gi;
      acc[i] = acc[i] * rho + omr * delta * delta;
      p[i] -= lr * delta;
    }
  });
  bump(param);
  bump(square_avg);
  bump(acc_delta);
  pt_tensor_release(g);
  return PT_OK;
}

pt_status pt_optim_write_back(pt_ctx *ctx, pt_tensor *param, pt_tensor *work) {
  pt_status st = pt_tensor_copy_into(ctx, param, work);
  if (!st) bump(param);
  return st;
}

pt_status pt_optim_norm_acc(pt_ctx *ctx, pt_tensor *g, double p, double *acc) {
  if (!pt_dtype_is_floating(g->dtype))
    return pt_fail(ctx, PT_EARG, "clip_grad_norm: gradients must be floating point, got %s",
                   pt_dtype_name(g->dtype));
  int64_t n = pt_tensor_numel(g);
  bool contig = pt_tensor_is_contiguous(g) && (g->dtype == PT_FLOAT32 || g->dtype == PT_FLOAT64);
  double a = *acc;
  for (int64_t i = 0; i < n; i++) {
    double v;
    if (contig)
      v = g->dtype == PT_FLOAT32 ? ((const float *)pt_tensor_data(g))[i]
                                 : ((const double *)pt_tensor_data(g))[i];
    else
      v = pt_tensor_get_flat(g, i);
    v = fabs(v);
    if (isinf(p))
      a = v > a || isnan(v) ? v : a;
    else if (p == 2)
      a += v * v;
    else if (p == 1)
      a += v;
    else
      a += pow(v, p);
  }
  *acc = a;
  return PT_OK;
}

pt_status pt_optim_scale_(pt_ctx *ctx, pt_tensor *t, double s) {
  int64_t n = pt_tensor_numel(t);
  if (pt_tensor_is_contiguous(t) && (t->dtype == PT_FLOAT32 || t->dtype == PT_FLOAT64)) {
    PT_DISPATCH_FLOAT(t->dtype, {
      T *p = pt_tensor_data(t);
      for (int64_t i = 0; i < n; i++) p[i] *= (T)s;
    });
  } else {
    /* an expanded tensor (stride 0) holds each value once for many elements: scale the memory
     * once, through the view that narrows those dims to one element (it was scaled once per
     * element sharing it) */
    pt_tensor *u = pt_tensor_retain(t);
    for (int d = 0; d < t->ndim; d++) {
      if (t->stride[d] != 0 || t->shape[d] <= 1) continue;
      pt_tensor *v;
      pt_status st = pt_narrow_raw(ctx, u, d, 0, 1, &v);
      pt_tensor_release(u);
      if (st) return st;
      u = v;
    }
    int64_t m = pt_tensor_numel(u);
    for (int64_t i = 0; i < m; i++) pt_tensor_set_flat(u, i, pt_tensor_get_flat(u, i) * s);
    pt_tensor_release(u);
  }
  bump(t);
  return PT_OK;
}

pt_status pt_optim_clamp_(pt_ctx *ctx, pt_tensor *t, double v) {
  int64_t n = pt_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    double x = pt_tensor_get_flat(t, i);
    if (x > v) pt_tensor_set_flat(t, i, v);
    else if (x < -v) pt_tensor_set_flat(t, i, -v);
  }
  bump(t);
  (void)ctx;
  return PT_OK;
}
