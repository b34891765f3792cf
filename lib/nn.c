/* Fused layers and losses: one pass forward, one pass backward, one autograd node each. */
#include "nn.h"
#include "dispatch.h"
#include "nn_impl.h"
#include "norm_stats.h"
#include "ops_elementwise.h"

#include "blas.h"
#include "conv.h"
#include "ops_reduce.h"
#include "parallel.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


/* ===================================================================== linear */


/* saved: 0 x (contiguous), 1 W (contiguous), 2 y alias when act is relu; ints: M, in, out, act */
/* Batch-1 backward (M == 1), one pass per output and no temporaries: g (nout, masked by the
 * saved output when act is relu) is read once; rows of W and dW whose g is 0 (a dead ReLU) are
 * skipped when adding (dW row += g_i x, gx += g_i W_i), written as zeros when dW is fresh. */
#define LINEAR_VEC_MAX 4096
static pt_status linear_backward_vec(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **grad_in) {
  pt_tensor *x = node->saved[0], *w = node->saved[1];
  int64_t in = node->ints[1], nout = node->ints[2];
  pt_dtype dt = w->dtype;
  pt_status st;
  pt_tensor *gx = NULL;
  bool relu = node->ints[3] == PT_ACT_RELU;
  if (node->needs_grad[0]) {
    pt_tensor *xin = node->inputs[0];
    if ((st = pt_tensor_empty(ctx, dt, xin->ndim, xin->shape, &gx))) return st;
  }
  pt_tensor *dW = NULL, *db = NULL, *gw = NULL, *gb = NULL;
  bool fresh_w = false, fresh_b = false;
  /* g masked by the ReLU, in g's own buffer or gmask */
  _Alignas(64) char gmask[LINEAR_VEC_MAX * sizeof(double)];
  const void *gv = pt_tensor_data(g);
  if (relu) {
    PT_DISPATCH_FLOAT(dt, {
      const T *gp = gv, *yp = pt_tensor_data(node->saved[2]);
      T *m = (T *)gmask;
      for (int64_t i = 0; i < nout; i++) m[i] = yp[i] <= 0 ? (T)0 : gp[i];
    });
    gv = gmask;
  }
  /* the weight's gradient as factors, where the accumulation takes them (par_by_sample) */
  bool w_done = node->needs_grad[1] &&
                pt_autograd_grad_rank1(ctx, node->inputs[1], gv, pt_tensor_data(x));
  if (node->needs_grad[1] && !w_done) {
    dW = direct_grad(ctx, node->inputs[1], &fresh_w);
    if (!dW) {
      if ((st = pt_tensor_empty(ctx, dt, 2, w->shape, &gw))) goto fail;
      dW = gw;
      fresh_w = true;
    }
  }
  if (node->n_inputs > 2 && node->needs_grad[2]) {
    db = direct_grad(ctx, node->inputs[2], &fresh_b);
    if (!db) {
      if ((st = pt_tensor_empty(ctx, dt, 1, &nout, &gb))) goto fail;
      db = gb;
      fresh_b = true;
    }
  }
  PT_DISPATCH_FLOAT(dt, {
    const T *gp = gv;
    const T *xp = pt_tensor_data(x), *wp = pt_tensor_data(w);
    if (gx) {
      T *o = pt_tensor_data(gx);
      for (int64_t k = 0; k < in; k++) o[k] = 0;
      for (int64_t i = 0; i < nout; i++) {
        T gi = gp[i];
        if (gi == 0) continue;
        const T *wr = wp + i * in;
        for (int64_t k = 0; k < in; k++) o[k] += gi * wr[k];
      }
    }
    if (dW) {
      T *d = pt_tensor_data(dW);
      for (int64_t i = 0; i < nout; i++) {
        T gi = gp[i];
        T *dr = d + i * in;
        if (fresh_w) {
          if (gi == 0)
            memset(dr, 0, (size_t)in * sizeof(T));
          else
            for (int64_t k = 0; k < in; k++) dr[k] = gi * xp[k];
        } else if (gi != 0) {
          for (int64_t k = 0; k < in; k++) dr[k] += gi * xp[k];
        }
      }
      atomic_fetch_add(&dW->storage->version, 1);
    }
    if (db) {
      T *bp = pt_tensor_data(db);
      if (fresh_b)
        for (int64_t j = 0; j < nout; j++) bp[j] = gp[j];
      else
        for (int64_t j = 0; j < nout; j++) bp[j] += gp[j];
      atomic_fetch_add(&db->storage->version, 1);
    }
  });
  grad_in[0] = gx;
  grad_in[1] = gw;
  if (node->n_inputs > 2) grad_in[2] = gb;
  return PT_OK;
fail:
  /* a fresh target handed out but not written must still hold a valid gradient */
  if (dW && dW != gw && fresh_w) memset(pt_tensor_data(dW), 0, (size_t)(nout * in) * pt_dtype_size(dt));
  pt_tensor_release(gx);
  pt_tensor_release(gw);
  pt_tensor_release(gb);
  return st;
}

static pt_status linear_backward(pt_ctx *ctx, pt_node *node, pt_tensor *grad_out,
                                 pt_tensor **grad_in) {
  pt_tensor *x = node->saved[0], *w = node->saved[1];
  int64_t M = node->ints[0], in = node->ints[1], nout = node->ints[2];
  pt_dtype dt = w->dtype;
  pt_tensor *g = NULL;
  pt_status st = grad_prep(ctx, grad_out, dt, &g);
  if (st) return st;
  if (M == 1 && nout <= LINEAR_VEC_MAX) {
    st = linear_backward_vec(ctx, node, g, grad_in);
    pt_tensor_release(g);
    return st;
  }
  if (node->ints[3] == PT_ACT_RELU) { /* mask by the saved output: a new buffer */
    pt_tensor *m;
    if ((st = pt_tensor_empty(ctx, dt, g->ndim, g->shape, &m))) goto fail;
    int64_t n = M * nout;
    const void *yv = pt_tensor_data(node->saved[2]);
    PT_DISPATCH_FLOAT(dt, {
      const T *gp = pt_tensor_data(g), *yp = yv;
      T *mp = pt_tensor_data(m);
      for (int64_t i = 0; i < n; i++) mp[i] = yp[i] <= 0 ? (T)0 : gp[i];
    });
    pt_tensor_release(g);
    g = m;
  }
  const void *gp = pt_tensor_data(g);
  if (node->needs_grad[0]) {
    pt_tensor *gx;
    pt_tensor *xin = node->inputs[0];
    if ((st = pt_tensor_empty(ctx, dt, xin->ndim, xin->shape, &gx))) goto fail;
    pt_gemm(ctx, dt, CblasNoTrans, CblasNoTrans, M, in, nout, 1.0, gp, nout, pt_tensor_data(w), in, 0.0,
         pt_tensor_data(gx), in);
    grad_in[0] = gx;
  }
  if (node->needs_grad[1]) {
    bool fresh;
    pt_tensor *wleaf = node->inputs[1];
    pt_tensor *dg = direct_grad(ctx, wleaf, &fresh);
    if (dg) {
      pt_gemm(ctx, dt, CblasTrans, CblasNoTrans, nout, in, M, 1.0, gp, nout, pt_tensor_data(x), in,
           fresh ? 0.0 : 1.0, pt_tensor_data(dg), in);
      if (M == 0 && fresh) memset(pt_tensor_data(dg), 0, dg->storage->nbytes);
      atomic_fetch_add(&dg->storage->version, 1);
    } else {
      /* beta 0: the GEMM writes every element (a zeroed buffer cost a pass over 12.8 MB in the
       * CNN's fc1, per DataParallel replica); an empty batch has nothing to write */
      pt_tensor *gw;
      if ((st = pt_tensor_empty(ctx, dt, 2, w->shape, &gw))) goto fail;
      pt_gemm(ctx, dt, CblasTrans, CblasNoTrans, nout, in, M, 1.0, gp, nout, pt_tensor_data(x), in, 0.0,
           pt_tensor_data(gw), in);
      if (M == 0) memset(pt_tensor_data(gw), 0, gw->storage->nbytes);
      grad_in[1] = gw;
    }
  }
  if (node->n_inputs > 2 && node->needs_grad[2]) {
    bool fresh;
    pt_tensor *bleaf = node->inputs[2];
    pt_tensor *dg = direct_grad(ctx, bleaf, &fresh);
    pt_tensor *gb = NULL;
    if (!dg) {
      if ((st = pt_tensor_zeros(ctx, dt, 1, &nout, &gb))) goto fail;
      dg = gb;
      fresh = true;
    }
    PT_DISPATCH_FLOAT(dt, {
      const T *gq = gp;
      T *bp = pt_tensor_data(dg);
      if (fresh)
        for (int64_t j = 0; j < nout; j++) bp[j] = 0;
      for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < nout; j++) bp[j] += gq[i * nout + j];
    });
    atomic_fetch_add(&dg->storage->version, 1);
    grad_in[2] = gb;
  }
  pt_tensor_release(g);
  return PT_OK;
fail:
  pt_tensor_release(g);
  return st;
}

void pt_nn_linear_rows(const pt_tensor *w, int64_t r0, int64_t r1, const void *const *xs,
                       void *const *ys, const bool *beta, int nx) {
  int64_t cols = w->shape[1];
  if (w->dtype == PT_FLOAT32) {
    pt_sgemv_rows(pt_tensor_data(w), cols, r0, r1, (const float *const *)xs, (float *const *)ys,
                  beta, nx);
    return;
  }
  for (int64_t c0 = r0; c0 < r1;) {
    int64_t c1 = (c0 / PT_LINEAR_ROWS_CHUNK + 1) * PT_LINEAR_ROWS_CHUNK;
    if (c1 > r1) c1 = r1;
    for (int i = 0; i < nx; i++)
      cblas_dgemv(CblasRowMajor, CblasNoTrans, (blasint)(c1 - c0), (blasint)cols, 1.0,
                  (const double *)pt_tensor_data(w) + c0 * cols, (blasint)cols, xs[i], 1,
                  beta[i] ? 1.0 : 0.0, (double *)ys[i] + c0, 1);
    c0 = c1;
  }
}

pt_status pt_nn_linear(pt_ctx *ctx, const char *fname, pt_tensor *x, pt_tensor *w, pt_tensor *b,
                       pt_nn_act act, pt_tensor **out) {
  char s1[PT_SHAPE_STR_MAX], s2[PT_SHAPE_STR_MAX];
  pt_status st;
  if (!fname) fname = "linear";
  if ((st = check_float(ctx, fname, "weight", w))) return st;
  if (w->ndim != 2)
    return pt_fail(ctx, PT_ESHAPE, "%s: weight must be 2-D {out,in}, got shape %s", fname,
                   shape_str(w, s1));
  if ((st = check_float(ctx, fname, "input", x))) return st;
  if (x->dtype != w->dtype)
    return pt_fail(ctx, PT_EARG, "%s: input dtype %s does not match weight dtype %s", fname,
                   pt_dtype_name(x->dtype), pt_dtype_name(w->dtype));
  int64_t in = w->shape[1], nout = w->shape[0];
  if (x->ndim < 1)
    return pt_fail(ctx, PT_ESHAPE, "%s: input must have at least 1 dimension, got a 0-d tensor",
                   fname);
  if (x->shape[x->ndim - 1] != in)
    return pt_fail(ctx, PT_ESHAPE, "%s: input has %lld features, expected %lld (input shape %s)",
                   fname, (long long)x->shape[x->ndim - 1], (long long)in, shape_str(x, s1));
  if (b) {
    if (b->dtype != w->dtype)
      return pt_fail(ctx, PT_EARG, "%s: bias dtype %s does not match weight dtype %s", fname,
                     pt_dtype_name(b->dtype), pt_dtype_name(w->dtype));
    if (b->ndim != 1 || b->shape[0] != nout) {
      /* any other bias that broadcasts to the output (torch's: {1}, a scalar, {N,out}, ...): the
       * product, then an add with its own gradient (the fused path takes a {out} bias) */
      int64_t ys[PT_MAX_DIMS], bs[PT_MAX_DIMS];
      int nb = 0;
      memcpy(ys, x->shape, (size_t)x->ndim * sizeof(int64_t));
      ys[x->ndim - 1] = nout;
      bool fits = b->ndim <= x->ndim;
      if (fits) {
        if (pt_broadcast_shapes(ctx, fname, x->ndim, ys, b->ndim, b->shape, &nb, bs)) fits = false;
        else fits = nb == x->ndim && memcmp(bs, ys, (size_t)nb * sizeof(int64_t)) == 0;
      }
      if (!fits) {
        char s3[PT_SHAPE_STR_MAX];
        return pt_fail(ctx, PT_ESHAPE, "%s: bias shape %s cannot be broadcast to the output shape %s (weight shape %s)",
                       fname, shape_str(b, s1), pt_shape_format(x->ndim, ys, s2, sizeof s2), shape_str(w, s3));
      }
      pt_tensor *y0 = NULL, *y1 = NULL;
      if ((st = pt_nn_linear(ctx, fname, x, w, NULL, PT_ACT_NONE, &y0))) return st;
      st = pt_add(ctx, y0, b, &y1);
      pt_tensor_release(y0);
      if (st) return st;
      if (act == PT_ACT_NONE) {
        *out = y1;
        return PT_OK;
      }
      st = pt_nn_activation(ctx, act, y1, 0, out);
      pt_tensor_release(y1);
      return st;
    }
  }
  if (act != PT_ACT_NONE && act != PT_ACT_RELU)
    return pt_fail(ctx, PT_EARG, "%s: only relu can be fused into linear", fname);
  pt_dtype dt = w->dtype;
  int64_t M = pt_tensor_numel(x) / (in ? in : 1);
  if (in == 0) M = pt_shape_numel(x->ndim - 1, x->shape);
  pt_tensor *xc = NULL, *wc = NULL, *bc = NULL, *y = NULL;
  if ((st = pt_tensor_contiguous_raw(ctx, x, &xc))) goto fail;
  if ((st = pt_tensor_contiguous_raw(ctx, w, &wc))) goto fail;
  if (b && (st = pt_tensor_contiguous_raw(ctx, b, &bc))) goto fail;
  int64_t yshape[PT_MAX_DIMS];
  memcpy(yshape, x->shape, (size_t)x->ndim * sizeof(int64_t));
  yshape[x->ndim - 1] = nout;
  if ((st = pt_tensor_empty(ctx, dt, x->ndim, yshape, &y))) goto fail;
  PT_DISPATCH_FLOAT(dt, {
    T *yp = pt_tensor_data(y);
    if (bc) {
      const T *bp = pt_tensor_data(bc);
      for (int64_t i = 0; i < M; i++) memcpy(yp + i * nout, bp, (size_t)nout * sizeof(T));
    } else if (in == 0 || M == 1) {
      memset(yp, 0, (size_t)(M * nout) * sizeof(T));
    }
  });
  if (in > 0 && M == 1 && ctx->linear_coop && wc == w &&
      ctx->linear_coop(ctx->linear_coop_data, w, pt_tensor_data(xc), pt_tensor_data(y), bc != NULL)) {
    /* computed with the other workers of a par_by_sample window */
  } else if (in > 0 && M == 1) { /* batch 1: y = W x (+ b), a matrix-vector product */
    const void *xs[1] = {pt_tensor_data(xc)};
    void *ys[1] = {pt_tensor_data(y)};
    bool beta[1] = {bc != NULL};
    pt_nn_linear_rows(wc, 0, nout, xs, ys, beta, 1);
  } else if (in > 0) {
    pt_gemm(ctx, dt, CblasNoTrans, CblasTrans, M, nout, in, 1.0, pt_tensor_data(xc), in, pt_tensor_data(wc), in,
         bc ? 1.0 : 0.0, pt_tensor_data(y), nout);
  }
  if (act == PT_ACT_RELU) {
    int64_t n = M * nout;
    PT_DISPATCH_FLOAT(dt, {
      T *yp = pt_tensor_data(y);
      for (int64_t i = 0; i < n; i++) yp[i] = yp[i] <= 0 ? (T)0 : yp[i];
    });
  }
  pt_node *node;
  pt_tensor *inputs[3] = {x, w, b};
  if ((st = pt_autograd_record(ctx, y, act == PT_ACT_RELU ? "LinearReluBackward" : "LinearBackward",
                               linear_backward, b ? 3 : 2, inputs, &node)))
    goto fail;
  if (node) {
    pt_node_save(node, 0, xc);
    pt_node_save(node, 1, wc);
    xc = wc = NULL;
    if (act == PT_ACT_RELU && (st = alias(ctx, y, &node->saved[2]))) goto fail;
    node->ints[0] = M;
    node->ints[1] = in;
    node->ints[2] = nout;
    node->ints[3] = act;
    node->n_ints = 4;
  }
  pt_tensor_release(xc);
  pt_tensor_release(wc);
  pt_tensor_release(bc);
  *out = y;
  return PT_OK;
fail:
  pt_tensor_release(xc);
  pt_tensor_release(wc);
  pt_tensor_release(bc);
  pt_tensor_release(y);
  return st;
}

/* ====================================================== cross entropy and NLL */

/* Read the targets of a classification loss into 0-based int64 indices (-1 = ignored). */
static pt_status read_targets(pt_ctx *ctx, const char *fname, pt_tensor *input, pt_tensor *target,
                              int64_t ignore_index, int64_t *N_out, int64_t *C_out,
                              pt_tensor **idx_out) {
  char s1[PT_SHAPE_STR_MAX], s2[PT_SHAPE_STR_MAX];
  if (input->ndim != 1 && input->ndim != 2)
    return pt_fail(ctx, PT_ESHAPE, "%s: input must be {N,C} or {C}, got shape %s", fname,
                   shape_str(input, s1));
  int64_t N = input->ndim == 2 ? input->shape[0] : 1;
  int64_t C = input->shape[input->ndim - 1];
  bool ok = input->ndim == 2 ? (target->ndim == 1 && target->shape[0] == N)
                             : (pt_tensor_numel(target) == 1 && target->ndim <= 1);
  if (!ok)
    return pt_fail(ctx, PT_ESHAPE, "%s: target shape %s does not match input shape %s (expected %s)",
                   fname, shape_str(target, s1), shape_str(input, s2),
                   input->ndim == 2 ? "one class index per row" : "a single class index");
  if (target->dtype == PT_BOOL)
    return pt_fail(ctx, PT_EARG, "%s: target must hold class indices, got dtype bool", fname);
  pt_tensor *idx;
  pt_status st = pt_tensor_empty(ctx, PT_INT64, 1, &N, &idx);
  if (st) return st;
  int64_t *ip = pt_tensor_data(idx);
  for (int64_t i = 0; i < N; i++) {
    double v = pt_tensor_get_flat(target, i);
    if (v != floor(v)) {
      pt_tensor_release(idx);
      return pt_fail(ctx, PT_EARG, "%s: target %g is not a class index", fname, v);
    }
    int64_t c = (int64_t)v;
    if (ignore_index != 0 && c == ignore_index) {
      ip[i] = -1;
      continue;
    }
    if (c < 1 || c > C) {
      pt_tensor_release(idx);
      return pt_fail(ctx, PT_EARG, "%s: target class %lld out of range for %lld classes%s", fname,
                     (long long)c, (long long)C, c == 0 ? " (class indices are 1-based)" : "");
    }
    ip[i] = c - 1;
  }
  *N_out = N;
  *C_out = C;
  *idx_out = idx;
  return PT_OK;
}

static pt_status check_class_weight(pt_ctx *ctx, const char *fname, pt_tensor *weight,
                                    pt_tensor *input, int64_t C, pt_tensor **wc) {
  char s1[PT_SHAPE_STR_MAX];
  *wc = NULL;
  if (!weight) return PT_OK;
  pt_status st;
  if ((st = check_same_dtype(ctx, fname, "weight", weight, input))) return st;
  if (weight->ndim != 1 || weight->shape[0] != C)
    return pt_fail(ctx, PT_ESHAPE, "%s: weight must have shape {%lld} (one per class), got %s",
                   fname, (long long)C, shape_str(weight, s1));
  return pt_tensor_contiguous_raw(ctx, weight, wc);
}

static pt_status loss_output(pt_ctx *ctx, pt_dtype dt, pt_reduction red, int64_t N, bool batched,
                             pt_tensor **out) {
  if (red == PT_REDUCE_NONE && batched) return pt_tensor_empty(ctx, dt, 1, &N, out);
  return pt_tensor_empty(ctx, dt, 0, NULL, out);
}

/* saved: 0 probabilities (CE) or nothing (NLL), 1 indices, 2 class weights;
 * ints: N, C, reduction, is_ce; scalars: label smoothing, denominator */
static pt_status class_loss_backward(pt_ctx *ctx, pt_node *node, pt_tensor *grad_out,
                                     pt_tensor **grad_in) {
  pt_tensor *probs = node->saved[0], *idx = node->saved[1], *wt = node->saved[2];
  int64_t N = node->ints[0], C = node->ints[1];
  pt_reduction red = (pt_reduction)node->ints[2];
  bool ce = node->ints[3] != 0;
  double eps = node->scalars[0], denom = node->scalars[1];
  pt_dtype dt = node->out_dtype;
  pt_tensor *in = node->inputs[0];
  pt_tensor *g, *gx;
  pt_status st = grad_prep(ctx, grad_out, dt, &g);
  if (st) return st;
  if ((st = pt_tensor_zeros(ctx, dt, in->ndim, in->shape, &gx))) {
    pt_tensor_release(g);
    return st;
  }
  const int64_t *ip = pt_tensor_data(idx);
  PT_DISPATCH_FLOAT(dt, {
    const T *gp = pt_tensor_data(g);
    const T *wp = wt ? (const T *)pt_tensor_data(wt) : NULL;
    T *op = pt_tensor_data(gx);
    double wsum = 0;
    if (wp)
      for (int64_t c = 0; c < C; c++) wsum += wp[c];
    else
      wsum = (double)C;
    for (int64_t i = 0; i < N; i++) {
      int64_t y = ip[i];
      if (y < 0) continue;
      double a = (red == PT_REDUCE_NONE ? gp[i] : gp[0]) / denom;
      T *row = op + i * C;
      double wy = wp ? wp[y] : 1.0;
      if (ce) {
        const T *pr = (const T *)pt_tensor_data(probs) + i * C;
        double coef = (1.0 - eps) * wy + eps / (double)C * wsum;
        for (int64_t c = 0; c < C; c++)
          row[c] = (T)(a * (pr[c] * coef - eps / (double)C * (wp ? wp[c] : 1.0)));
        row[y] -= (T)(a * (1.0 - eps) * wy);
      } else {
        row[y] = (T)(-a * wy);
      }
    }
  });
  pt_tensor_release(g);
  grad_in[0] = gx;
  return PT_OK;
}

/* The per-row work of cross_entropy / nll_loss: row i's loss into li[i] and, for
 * cross_entropy, its softmax into probs. float32 rows take the vectorised max and exp of the
 * softmax kernels (expf within ~2 ulp, summed in double); float64 rows libm's exp. */
typedef struct class_rows {
  pt_dtype dt;
  const void *x;
  void *probs;
  const int64_t *idx;
  const void *w;
  int64_t C;
  double eps;
  bool ce;
  double *li;
} class_rows;

static void class_rows_run(void *arg, int64_t begin, int64_t end, int tid) {
  (void)tid;
  const class_rows *a = arg;
  int64_t C = a->C;
  PT_DISPATCH_FLOAT(a->dt, {
    const T *xp = a->x, *wp = a->w;
    for (int64_t i = begin; i < end; i++) {
      const T *row = xp + i * C;
      int64_t y = a->idx[i];
      double li = 0;
      if (a->ce) {
        T *pr = (T *)a->probs + i * C;
        double mx = -INFINITY, s = 0;
        if (a->dt == PT_FLOAT32) {
          mx = pt_row_max_f32((const float *)row, C);
          if (isinf(mx) && mx < 0) mx = 0;
          s = pt_row_sum_exp_f32((const float *)row, (float)mx, (float *)pr, C);
        } else {
          for (int64_t c = 0; c < C; c++)
            if (row[c] > mx) mx = row[c];
          if (isinf(mx) && mx < 0) mx = 0;
          for (int64_t c = 0; c < C; c++) {
            double e = exp(row[c] - mx);
            pr[c] = (T)e;
            s += e;
          }
        }
        double inv = 1.0 / s, lse = mx + log(s);
        T tinv = (T)inv;
        for (int64_t c = 0; c < C; c++) pr[c] = pr[c] * tinv;
        if (y >= 0) {
          double wy = wp ? wp[y] : 1.0;
          li = (1.0 - a->eps) * wy * (lse - row[y]);
          if (a->eps > 0) {
            double sm = 0;
            for (int64_t c = 0; c < C; c++) sm += (wp ? wp[c] : 1.0) * (lse - row[c]);
            li += a->eps / (double)C * sm;
          }
        }
      } else if (y >= 0) {
        li = -(wp ? wp[y] : 1.0) * row[y];
      }
      a->li[i] = li;
    }
  });
}

static pt_status class_loss(pt_ctx *ctx, const char *fname, bool ce, pt_tensor *input,
                            pt_tensor *target, pt_tensor *weight, double eps, int64_t ignore_index,
                            pt_reduction red, pt_tensor **out) {
  pt_status st;
  if ((st = check_float(ctx, fname, "input", input))) return st;
  if (eps < 0 || eps > 1)
    return pt_fail(ctx, PT_EARG, "%s: label_smoothing must be between 0 and 1, got %g", fname, eps);
  int64_t N = 0, C = 0;
  pt_tensor *idx = NULL, *wc = NULL, *xc = NULL, *probs = NULL, *loss = NULL;
  if ((st = read_targets(ctx, fname, input, target, ignore_index, &N, &C, &idx))) return st;
  if ((st = check_class_weight(ctx, fname, weight, input, C, &wc))) goto fail;
  if ((st = pt_tensor_contiguous_raw(ctx, input, &xc))) goto fail;
  if (ce && (st = pt_tensor_empty(ctx, input->dtype, input->ndim, input->shape, &probs))) goto fail;
  if ((st = loss_output(ctx, input->dtype, red, N, input->ndim == 2, &loss))) goto fail;
  double total = 0, denom = 0;
  double *li = malloc((size_t)(N > 0 ? N : 1) * sizeof *li);
  if (!li) {
    st = pt_fail(ctx, PT_ENOMEM, "%s: out of memory", fname);
    goto fail;
  }
  class_rows rows = {input->dtype, pt_tensor_data(xc), ce ? pt_tensor_data(probs) : NULL,
                     pt_tensor_data(idx), wc ? pt_tensor_data(wc) : NULL, C, eps, ce, li};
  /* rows are independent: split them over the threads once there is enough work; the sums
   * below add the per-row losses in row order, so the result does not depend on the split */
  pt_parallel_for(ctx, N, (1 << 15) / (C > 0 ? C : 1) + 1, class_rows_run, &rows);
  const int64_t *ip = pt_tensor_data(idx);
  PT_DISPATCH_FLOAT(input->dtype, {
    const T *wp = wc ? (const T *)pt_tensor_data(wc) : NULL;
    T *lp = pt_tensor_data(loss);
    for (int64_t i = 0; i < N; i++) {
      if (ip[i] >= 0) denom += wp ? wp[ip[i]] : 1.0;
      if (red == PT_REDUCE_NONE)
        lp[i] = (T)li[i];
      else
        total += li[i];
    }
    if (red == PT_REDUCE_MEAN)
      lp[0] = (T)(total / denom); /* 0/0 = nan when every target is ignored, as PyTorch */
    else if (red == PT_REDUCE_SUM)
      lp[0] = (T)total;
  });
  free(li);
  pt_node *node;
  pt_tensor *inputs[1] = {input};
  if ((st = pt_autograd_record(ctx, loss, ce ? "CrossEntropyBackward" : "NllLossBackward",
                               class_loss_backward, 1, inputs, &node)))
    goto fail;
  if (node) {
    pt_node_save(node, 0, probs);
    pt_node_save(node, 1, idx);
    pt_node_save(node, 2, wc);
    probs = idx = wc = NULL;
    node->ints[0] = N;
    node->ints[1] = C;
    node->ints[2] = red;
    node->ints[3] = ce;
    node->n_ints = 4;
    node->scalars[0] = ce ? eps : 0;
    node->scalars[1] = red == PT_REDUCE_MEAN ? denom : 1.0;
  }
  pt_tensor_release(idx);
  pt_tensor_release(wc);
  pt_tensor_release(xc);
  pt_tensor_release(probs);
  *out = loss;
  return PT_OK;
fail:
  pt_tensor_release(idx);
  pt_tensor_release(wc);
  pt_tensor_release(xc);
  pt_tensor_release(probs);
  pt_tensor_release(loss);
  return st;
}

static pt_status check_reduction(pt_ctx *ctx, const char *fname, pt_reduction red) {
  if (red != PT_REDUCE_NONE && red != PT_REDUCE_MEAN && red != PT_REDUCE_SUM)
    return pt_fail(ctx, PT_EARG, "%s: invalid reduction %d", fname, (int)red);
  return PT_OK;
}

pt_status pt_nn_cross_entropy(pt_ctx *ctx, pt_tensor *input, pt_tensor *target, pt_tensor *weight,
                              double label_smoothing, int64_t ignore_index, pt_reduction red,
                              pt_tensor **out) {
  pt_status st = check_reduction(ctx, "cross_entropy", red);
  if (st) return st;
  return class_loss(ctx, "cross_entropy", true, input, target, weight, label_smoothing,
                    ignore_index, red, out);
}

pt_status pt_nn_nll_loss(pt_ctx *ctx, pt_tensor *input, pt_tensor *target, pt_tensor *weight,
                         int64_t ignore_index, pt_reduction red, pt_tensor **out) {
  pt_status st = check_reduction(ctx, "nll_loss", red);
  if (st) return st;
  return class_loss(ctx, "nll_loss", false, input, target, weight, 0.0, ignore_index, red, out);
}

/* ============================================================ pointwise losses */

#define LOG_CLAMP (-100.0) /* PyTorch clamps log(p) of BCE at -100 */

static inline double clamped_log(double v) {
  double l = log(v);
  return l < LOG_CLAMP ? LOG_CLAMP : l;
}

static inline double softplus_neg(double x) { /* log(1 + exp(-x)), stable */
  return log1p(exp(-fabs(x))) + (x < 0 ? -x : 0);
}

/* loss value and derivatives by input (da) and target (db) */
static inline double pw_loss(pt_pointwise_loss kind, double a, double b, double pw, double beta,
                             double *da, double *db) {
  switch (kind) {
  case PT_LOSS_MSE: {
    double d = a - b;
    *da = 2 * d;
    *db = -2 * d;
    return d * d;
  }
  case PT_LOSS_L1: {
    double d = a - b, s = d > 0 ? 1 : (d < 0 ? -1 : 0);
    *da = s;
    *db = -s;
    return fabs(d);
  }
  case PT_LOSS_SMOOTH_L1: {
    double d = a - b, ad = fabs(d);
    double s = d > 0 ? 1 : (d < 0 ? -1 : 0);
    if (ad < beta) {
      *da = d / beta;
      *db = -d / beta;
      return 0.5 * d * d / beta;
    }
    *da = s;
    *db = -s;
    return ad - 0.5 * beta;
  }
  case PT_LOSS_BCE: {
    double lp = clamped_log(a), l1p = clamped_log(1 - a);
    double den = (1 - a) * a;
    if (den < 1e-12) den = 1e-12;
    *da = (a - b) / den;
    *db = l1p - lp;
    return -(b * lp + (1 - b) * l1p);
  }
  case PT_LOSS_BCE_WITH_LOGITS: {
    double sp = softplus_neg(a); /* log(1 + exp(-a)) */
    double lw = 1 + (pw - 1) * b;
    double sig = a >= 0 ? 1.0 / (1.0 + exp(-a)) : exp(a) / (1.0 + exp(a));
    *da = (1 - b) - lw * (1 - sig);
    *db = -a + (pw - 1) * sp;
    return (1 - b) * a + lw * sp;
  }
  }
  *da = *db = 0;
  return 0;
}

/* saved: 0 input, 1 target, 2 pos_weight; ints: kind, reduction, last dim; scalars: beta */
static pt_status pw_backward(pt_ctx *ctx, pt_node *node, pt_tensor *grad_out, pt_tensor **grad_in) {
  pt_tensor *a = node->saved[0], *b = node->saved[1], *pwt = node->saved[2];
  pt_pointwise_loss kind = (pt_pointwise_loss)node->ints[0];
  pt_reduction red = (pt_reduction)node->ints[1];
  int64_t last = node->ints[2];
  double beta = node->scalars[0];
  pt_dtype dt = a->dtype;
  int64_t n = pt_tensor_numel(a);
  pt_tensor *g, *ga = NULL, *gb = NULL;
  pt_status st = grad_prep(ctx, grad_out, dt, &g);
  if (st) return st;
  if (node->needs_grad[0] && (st = pt_tensor_empty(ctx, dt, a->ndim, a->shape, &ga))) goto fail;
  if (node->needs_grad[1] && (st = pt_tensor_empty(ctx, dt, a->ndim, a->shape, &gb))) goto fail;
  PT_DISPATCH_FLOAT(dt, {
    const T *ap = pt_tensor_data(a), *bp = pt_tensor_data(b), *gp = pt_tensor_data(g);
    const T *pp = pwt ? (const T *)pt_tensor_data(pwt) : NULL;
    T *gap = ga ? (T *)pt_tensor_data(ga) : NULL, *gbp = gb ? (T *)pt_tensor_data(gb) : NULL;
    double scale = red == PT_REDUCE_MEAN ? 1.0 / (double)n : 1.0;
    for (int64_t i = 0; i < n; i++) {
      double da, db;
      pw_loss(kind, ap[i], bp[i], pp ? pp[i % last] : 1.0, beta, &da, &db);
      double gi = (red == PT_REDUCE_NONE ? gp[i] : gp[0]) * scale;
      if (gap) gap[i] = (T)(gi * da);
      if (gbp) gbp[i] = (T)(gi * db);
    }
  });
  pt_tensor_release(g);
  grad_in[0] = ga;
  grad_in[1] = gb;
  return PT_OK;
fail:
  pt_tensor_release(g);
  pt_tensor_release(ga);
  pt_tensor_release(gb);
  return st;
}

static const char *pw_backward_name(pt_pointwise_loss kind) {
  switch (kind) {
  case PT_LOSS_MSE: return "MseLossBackward";
  case PT_LOSS_L1: return "L1LossBackward";
  case PT_LOSS_SMOOTH_L1: return "SmoothL1LossBackward";
  case PT_LOSS_BCE: return "BinaryCrossEntropyBackward";
  default: return "BinaryCrossEntropyWithLogitsBackward";
  }
}

pt_status pt_nn_pointwise_loss(pt_ctx *ctx, const char *fname, pt_pointwise_loss kind,
                               pt_tensor *input, pt_tensor *target, pt_tensor *pos_weight,
                               double beta, pt_reduction red, pt_tensor **out) {
  char s1[PT_SHAPE_STR_MAX], s2[PT_SHAPE_STR_MAX];
  pt_status st;
  if ((st = check_reduction(ctx, fname, red))) return st;
  if ((st = check_float(ctx, fname, "input", input))) return st;
  if (!same_shape(input, target))
    return pt_fail(ctx, PT_ESHAPE, "%s: input shape %s and target shape %s differ", fname,
                   shape_str(input, s1), shape_str(target, s2));
  if (kind == PT_LOSS_SMOOTH_L1 && beta < 0)
    return pt_fail(ctx, PT_EARG, "%s: beta must be non-negative, got %g", fname, beta);
  if (kind == PT_LOSS_SMOOTH_L1 && beta == 0) kind = PT_LOSS_L1;
  if (target->dtype != input->dtype && target->requires_grad)
    return pt_fail(ctx, PT_EARG, "%s: target dtype %s does not match input dtype %s", fname,
                   pt_dtype_name(target->dtype), pt_dtype_name(input->dtype));
  int64_t n = pt_tensor_numel(input);
  int64_t last = input->ndim ? input->shape[input->ndim - 1] : 1;
  pt_tensor *a = NULL, *b = NULL, *bt = NULL, *pwc = NULL, *loss = NULL;
  if (pos_weight) {
    if (kind != PT_LOSS_BCE_WITH_LOGITS)
      return pt_fail(ctx, PT_EARG, "%s: pos_weight is only used by bce_with_logits", fname);
    if ((st = check_same_dtype(ctx, fname, "pos_weight", pos_weight, input))) return st;
    if (pos_weight->ndim <= 1 && pt_tensor_numel(pos_weight) == (pos_weight->ndim ? last : 1)) {
      /* one weight per class of the last dim (or one for all): read as pp[i % last] */
      if (pos_weight->ndim == 0) last = 1;
      if ((st = pt_tensor_contiguous_raw(ctx, pos_weight, &pwc))) goto fail;
    } else {
      /* any other shape that broadcasts to the input's, as torch's (e.g. {C,1,1} for {N,C,H,W}):
       * expanded to one weight per element */
      pt_tensor *e = NULL;
      if (pos_weight->ndim > input->ndim || pt_expand_raw(ctx, pos_weight, input->ndim, input->shape, &e))
        return pt_fail(ctx, PT_ESHAPE, "%s: pos_weight shape %s cannot be broadcast to input shape %s", fname,
                       shape_str(pos_weight, s1), shape_str(input, s2));
      st = pt_tensor_contiguous_raw(ctx, e, &pwc);
      pt_tensor_release(e);
      if (st) goto fail;
      last = n > 0 ? n : 1;
    }
  }
  if (kind == PT_LOSS_BCE) {
    for (int64_t i = 0; i < n; i++) {
      double v = pt_tensor_get_flat(input, i);
      if (!(v >= 0 && v <= 1)) {
        st = pt_fail(ctx, PT_EARG, "%s: input values must be probabilities in [0, 1], got %g "
                     "(use bce_with_logits for logits)", fname, v);
        goto fail;
      }
    }
  }
  if ((st = pt_tensor_contiguous_raw(ctx, input, &a))) goto fail;
  if ((st = pt_tensor_to_dtype_raw(ctx, target, input->dtype, &bt))) goto fail;
  if ((st = pt_tensor_contiguous_raw(ctx, bt, &b))) goto fail;
  if (red == PT_REDUCE_NONE)
    st = pt_tensor_empty(ctx, input->dtype, input->ndim, input->shape, &loss);
  else
    st = pt_tensor_empty(ctx, input->dtype, 0, NULL, &loss);
  if (st) goto fail;
  PT_DISPATCH_FLOAT(input->dtype, {
    const T *ap = pt_tensor_data(a), *bp = pt_tensor_data(b);
    const T *pp = pwc ? (const T *)pt_tensor_data(pwc) : NULL;
    T *lp = pt_tensor_data(loss);
    double total = 0;
    for (int64_t i = 0; i < n; i++) {
      double da, db;
      double l = pw_loss(kind, ap[i], bp[i], pp ? pp[i % last] : 1.0, beta, &da, &db);
      if (red == PT_REDUCE_NONE)
        lp[i] = (T)l;
      else
        total += l;
    }
    if (red == PT_REDUCE_MEAN) lp[0] = (T)(total / (double)n);
    if (red == PT_REDUCE_SUM) lp[0] = (T)total;
  });
  pt_node *node;
  pt_tensor *inputs[2] = {input, target->dtype == input->dtype ? target : NULL};
  if ((st = pt_autograd_record(ctx, loss, pw_backward_name(kind), pw_backward, 2, inputs, &node)))
    goto fail;
  if (node) {
    pt_node_save(node, 0, a);
    pt_node_save(node, 1, b);
    pt_node_save(node, 2, pwc);
    a = b = pwc = NULL;
    node->ints[0] = kind;
    node->ints[1] = red;
    node->ints[2] = last;
    node->n_ints = 3;
    node->scalars[0] = beta;
  }
  pt_tensor_release(a);
  pt_tensor_release(b);
  pt_tensor_release(bt);
  pt_tensor_release(pwc);
  *out = loss;
  return PT_OK;
fail:
  pt_tensor_release(a);
  pt_tensor_release(b);
  pt_tensor_release(bt);
  pt_tensor_release(pwc);
  pt_tensor_release(loss);
  return st;
}

/* ==================================================================== dropout */

/* saved: 0 mask (0 or 1/(1-p)) */
static pt_status dropout_backward(pt_ctx *ctx, pt_node *node, pt_tensor *grad_out, pt_tensor **grad_in) {
  pt_tensor *mask = node->saved[0], *g, *gx;
  pt_status st = grad_prep(ctx, grad_out, mask->dtype, &g);
  if (st) return st;
  if ((st = pt_tensor_empty(ctx, mask->dtype, mask->ndim, mask->shape, &gx))) {
    pt_tensor_release(g);
    return st;
  }
  int64_t n = pt_tensor_numel(mask);
  PT_DISPATCH_FLOAT(mask->dtype, {
    const T *mp = pt_tensor_data(mask), *gp = pt_tensor_data(g);
    T *op = pt_tensor_data(gx);
    for (int64_t i = 0; i < n; i++) op[i] = gp[i] * mp[i];
  });
  pt_tensor_release(g);
  grad_in[0] = gx;
  return PT_OK;
}

pt_status pt_nn_dropout(pt_ctx *ctx, pt_tensor *x, double p, bool training, pt_tensor **out) {
  pt_status st;
  if (!(p >= 0 && p <= 1))
    return pt_fail(ctx, PT_EARG, "dropout: probability has to be between 0 and 1, but got %g", p);
  if ((st = check_float(ctx, "dropout", "input", x))) return st;
  if (!training || p == 0) {
    *out = pt_tensor_retain(x);
    return PT_OK;
  }
  pt_tensor *xc, *mask = NULL, *y = NULL;
  if ((st = pt_tensor_contiguous_raw(ctx, x, &xc))) return st;
  if ((st = pt_tensor_empty(ctx, x->dtype, x->ndim, x->shape, &mask))) goto fail;
  if ((st = pt_tensor_empty(ctx, x->dtype, x->ndim, x->shape, &y))) goto fail;
  int64_t n = pt_tensor_numel(x);
  double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  PT_DISPATCH_FLOAT(x->dtype, {
    const T *xp = pt_tensor_data(xc);
    T *mp = pt_tensor_data(mask), *yp = pt_tensor_data(y);
    for (int64_t i = 0; i < n; i++) {
      mp[i] = pt_rng_uniform(&ctx->rng) < p ? (T)0 : (T)scale;
      yp[i] = xp[i] * mp[i];
    }
  });
  pt_node *node;
  if ((st = pt_autograd_record(ctx, y, "DropoutBackward", dropout_backward, 1, &x, &node))) goto fail;
  if (node) {
    pt_node_save(node, 0, mask);
    mask = NULL;
  }
  pt_tensor_release(mask);
  pt_tensor_release(xc);
  *out = y;
  return PT_OK;
fail:
  pt_tensor_release(xc);
  pt_tensor_release(mask);
  pt_tensor_release(y);
  return st;
}

/* ================================================================ normalisation */

/* Layer norm over M rows of D contiguous elements. A row's statistics take one pass (sums of d
 * and d^2 for d = x - x[0], in 16 lanes of double: see nn_moments), and the element-wise
 * passes go 4 rows at a time (a weight or bias element loaded serves 4 rows). The forward splits
 * groups of 4 rows over the threads; the backward splits fixed blocks of rows, each adding its
 * rows' weight and bias gradients into its own partial sums (double), which are then added in
 * block order. Groups and blocks depend only on M, so no result depends on the thread count.
 * Saved statistics are float64 (mean, rstd) per row. The earlier loops (three passes per row,
 * one chain of dependent double adds each) were 3x slower than PyTorch. */
#define LN_GROUP 4       /* rows per group */
#define LN_GRAIN 32768   /* elements per parallel chunk, at least */
#define LN_BLOCKS 64     /* the backward's blocks, at most */
#define LN_BLOCK_MIN 16  /* rows per block, at least */


typedef struct ln_job {
  pt_dtype dt;
  int64_t M, D, rb; /* rb: rows per backward block */
  double eps;
  const void *x, *g, *w, *b; /* g: the output gradient (backward); w, b may be NULL */
  void *out;                 /* y or the input gradient (NULL: none wanted) */
  double *stats;             /* {M,2}: mean, rstd */
  double *part;              /* backward: per block, D weight then D bias gradient sums; or NULL */
  bool add;                  /* backward: out += the input gradient (x's gradient buffer) */
} ln_job;

/* y = (x - mean) rstd w + b for the NR rows from r0 (means m[], rstds rs[]) */
#define LN_FORWARD_ROWS(T, NR, r0, m, rs)                                                         \
  do {                                                                                            \
    const T *xr_[NR];                                                                             \
    T *yr_[NR];                                                                                   \
    for (int k_ = 0; k_ < NR; k_++) xr_[k_] = x + ((r0) + k_) * D, yr_[k_] = y + ((r0) + k_) * D; \
    int64_t i_ = 0;                                                                               \
    for (; i_ < D - D % 8; i_ += 8) {                                                             \
      nn_v8d wv_ = {1, 1, 1, 1, 1, 1, 1, 1}, bv_ = {0}, v_;                                       \
      if (w) NN_LD8(wv_, w + i_);                                                                 \
      if (b) NN_LD8(bv_, b + i_);                                                                 \
      for (int k_ = 0; k_ < NR; k_++) {                                                           \
        NN_LD8(v_, xr_[k_] + i_);                                                                 \
        v_ = ((v_ - (m)[k_]) * (rs)[k_]) * wv_ + bv_;                                             \
        NN_ST8(yr_[k_] + i_, v_);                                                                 \
      }                                                                                           \
    }                                                                                             \
    for (; i_ < D; i_++) {                                                                        \
      double wi_ = w ? (double)w[i_] : 1.0, bi_ = b ? (double)b[i_] : 0.0;                        \
      for (int k_ = 0; k_ < NR; k_++)                                                             \
        yr_[k_][i_] = (T)(((xr_[k_][i_] - (m)[k_]) * (rs)[k_]) * wi_ + bi_);                      \
    }                                                                                             \
  } while (0)

static void ln_forward_chunk(void *arg, int64_t g0, int64_t g1, int tid) {
  const ln_job *j = arg;
  int64_t M = j->M, D = j->D;
  PT_DISPATCH_FLOAT(j->dt, {
    const T *x = j->x, *w = j->w, *b = j->b;
    T *y = j->out;
    for (int64_t gi = g0; gi < g1; gi++) {
      int64_t r0 = gi * LN_GROUP, nr = M - r0 < LN_GROUP ? M - r0 : LN_GROUP;
      double m[LN_GROUP], rs[LN_GROUP];
      for (int64_t k = 0; k < nr; k++) {
        double m2;
        nn_moments(j->dt, x + (r0 + k) * D, D, &m[k], &m2);
        rs[k] = 1.0 / sqrt(m2 / (double)D + j->eps);
        j->stats[2 * (r0 + k)] = m[k];
        j->stats[2 * (r0 + k) + 1] = rs[k];
      }
      if (nr == LN_GROUP)
        LN_FORWARD_ROWS(T, LN_GROUP, r0, m, rs);
      else
        for (int64_t k = 0; k < nr; k++) LN_FORWARD_ROWS(T, 1, r0 + k, m + k, rs + k);
    }
  });
}

/* the 8 lanes of a, added in a fixed order */
static inline double ln_hsum1(const nn_v8d *a) {
  return (((*a)[0] + (*a)[4]) + ((*a)[2] + (*a)[6])) + (((*a)[1] + (*a)[5]) + ((*a)[3] + (*a)[7]));
}

/* The backward of the NR rows from r0: with xh = (x - mean) rstd and gh = g w, one pass for
 * s1 = sum gh and s2 = sum gh xh per row (and the block's weight and bias gradient sums pw, pb
 * when wanted), then gx = rstd (gh - s1 / D - xh s2 / D). */
#define LN_BACKWARD_ROWS(T, NR, r0)                                                            \
  do {                                                                                         \
    const T *xr[NR], *gr[NR];                                                                  \
    double m[NR], rs[NR], c1[NR], c2[NR];                                                      \
    nn_v8d s1[NR], s2[NR];                                                                     \
    for (int k_ = 0; k_ < NR; k_++) {                                                          \
      xr[k_] = x + ((r0) + k_) * D, gr[k_] = g + ((r0) + k_) * D;                              \
      m[k_] = j->stats[2 * ((r0) + k_)], rs[k_] = j->stats[2 * ((r0) + k_) + 1];               \
      s1[k_] = s2[k_] = (nn_v8d){0};                                                           \
    }                                                                                          \
    int64_t i_ = 0, nv = D - D % 8;                                                            \
    for (; i_ < nv; i_ += 8) {                                                                 \
      nn_v8d wv = {1, 1, 1, 1, 1, 1, 1, 1}, sw = {0}, sb = {0}, xv, gv, xh, gh;                \
      if (w) NN_LD8(wv, w + i_);                                                               \
      for (int k_ = 0; k_ < NR; k_++) {                                                        \
        NN_LD8(xv, xr[k_] + i_);                                                               \
        NN_LD8(gv, gr[k_] + i_);                                                               \
        xh = (xv - m[k_]) * rs[k_];                                                            \
        gh = gv * wv;                                                                          \
        s1[k_] += gh;                                                                          \
        s2[k_] += gh * xh;                                                                     \
        sw += gv * xh;                                                                         \
        sb += gv;                                                                              \
      }                                                                                        \
      if (pw) {                                                                                \
        nn_v8d t;                                                                              \
        memcpy(&t, pw + i_, sizeof t);                                                         \
        t += sw;                                                                               \
        memcpy(pw + i_, &t, sizeof t);                                                         \
        memcpy(&t, pb + i_, sizeof t);                                                         \
        t += sb;                                                                               \
        memcpy(pb + i_, &t, sizeof t);                                                         \
      }                                                                                        \
    }                                                                                          \
    for (int k_ = 0; k_ < NR; k_++) c1[k_] = ln_hsum1(&s1[k_]), c2[k_] = ln_hsum1(&s2[k_]);    \
    for (; i_ < D; i_++) {                                                                     \
      double wi = w ? (double)w[i_] : 1.0, sw = 0, sb = 0;                                     \
      for (int k_ = 0; k_ < NR; k_++) {                                                        \
        double xh = (xr[k_][i_] - m[k_]) * rs[k_], gh = gr[k_][i_] * wi;                       \
        c1[k_] += gh;                                                                          \
        c2[k_] += gh * xh;                                                                     \
        sw += gr[k_][i_] * xh;                                                                 \
        sb += gr[k_][i_];                                                                      \
      }                                                                                        \
      if (pw) pw[i_] += sw, pb[i_] += sb;                                                      \
    }                                                                                          \
    if (gx) {                                                                                  \
      T *or_[NR];                                                                              \
      for (int k_ = 0; k_ < NR; k_++) {                                                        \
        or_[k_] = gx + ((r0) + k_) * D;                                                        \
        c1[k_] /= (double)D;                                                                   \
        c2[k_] /= (double)D;                                                                   \
      }                                                                                        \
      for (i_ = 0; i_ < nv; i_ += 8) {                                                         \
        nn_v8d wv = {1, 1, 1, 1, 1, 1, 1, 1}, xv, gv;                                          \
        if (w) NN_LD8(wv, w + i_);                                                             \
        for (int k_ = 0; k_ < NR; k_++) {                                                      \
          NN_LD8(xv, xr[k_] + i_);                                                             \
          NN_LD8(gv, gr[k_] + i_);                                                             \
          xv = rs[k_] * (gv * wv - c1[k_] - ((xv - m[k_]) * rs[k_]) * c2[k_]);                 \
          if (j->add)                                                                          \
            NN_ADD8(or_[k_] + i_, xv);                                                         \
          else                                                                                 \
            NN_ST8(or_[k_] + i_, xv);                                                          \
        }                                                                                      \
      }                                                                                        \
      for (; i_ < D; i_++) {                                                                   \
        double wi = w ? (double)w[i_] : 1.0;                                                   \
        for (int k_ = 0; k_ < NR; k_++) {                                                      \
          double xh = (xr[k_][i_] - m[k_]) * rs[k_], gh = gr[k_][i_] * wi;                     \
          T v_ = (T)(rs[k_] * (gh - c1[k_] - xh * c2[k_]));                                   \
          or_[k_][i_] = j->add ? or_[k_][i_] + v_ : v_;                                        \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  } while (0)

static void ln_backward_chunk(void *arg, int64_t b0, int64_t b1, int tid) {
  const ln_job *j = arg;
  int64_t M = j->M, D = j->D;
  PT_DISPATCH_FLOAT(j->dt, {
    const T *x = j->x, *g = j->g, *w = j->w;
    T *gx = j->out;
    for (int64_t blk = b0; blk < b1; blk++) {
      int64_t r = blk * j->rb, r1 = r + j->rb < M ? r + j->rb : M;
      double *pw = j->part ? j->part + blk * 2 * D : NULL, *pb = pw ? pw + D : NULL;
      if (pw) memset(pw, 0, 2 * (size_t)D * sizeof(double));
      for (; r + LN_GROUP <= r1; r += LN_GROUP) LN_BACKWARD_ROWS(T, LN_GROUP, r);
      for (; r < r1; r++) LN_BACKWARD_ROWS(T, 1, r);
    }
  });
}

/* layer norm saved: 0 x, 1 stats {M,2} float64, 2 w; ints: M, D */
static pt_status layer_norm_backward(pt_ctx *ctx, pt_node *node, pt_tensor *grad_out,
                                     pt_tensor **grad_in) {
  pt_tensor *x = node->saved[0], *stats = node->saved[1], *w = node->saved[2];
  int64_t M = node->ints[0], D = node->ints[1];
  pt_dtype dt = x->dtype;
  pt_tensor *g, *gx = NULL, *gw = NULL, *gb = NULL;
  double *part = NULL;
  pt_status st = grad_prep(ctx, grad_out, dt, &g);
  if (st) return st;
  pt_tensor *win = node->inputs[1], *gxt = NULL;
  bool fresh = false;
  /* a leaf input's gradient buffer (contiguous, x's dtype and shape), written when fresh, else
   * added to in place: no temporary and no pass of the engine's accumulation */
  if (node->needs_grad[0]) gxt = direct_grad(ctx, node->inputs[0], &fresh);
  if (node->needs_grad[0] && !gxt && (st = pt_tensor_empty(ctx, dt, x->ndim, x->shape, &gx))) goto fail;
  if (node->needs_grad[1] && (st = pt_tensor_empty(ctx, dt, win->ndim, win->shape, &gw))) goto fail;
  if (node->n_inputs > 2 && node->needs_grad[2] &&
      (st = pt_tensor_empty(ctx, dt, node->inputs[2]->ndim, node->inputs[2]->shape, &gb)))
    goto fail;
  /* blocks of rb rows (a multiple of LN_GROUP), at most LN_BLOCKS of them */
  int64_t rb = (M + LN_BLOCKS - 1) / LN_BLOCKS;
  rb = rb < LN_BLOCK_MIN ? LN_BLOCK_MIN : (rb + LN_GROUP - 1) / LN_GROUP * LN_GROUP;
  int64_t nblk = (M + rb - 1) / rb;
  if ((gw || gb) && nblk > 0 && D > 0 && !(part = pt_alloc(ctx, (size_t)(nblk * 2 * D) * sizeof(double)))) {
    st = PT_ENOMEM;
    goto fail;
  }
  ln_job job = {.dt = dt, .M = M, .D = D, .rb = rb, .x = pt_tensor_data(x), .g = pt_tensor_data(g),
                .w = w ? pt_tensor_data(w) : NULL, .stats = pt_tensor_data(stats), .part = part,
                .add = gxt && !fresh};
  pt_tensor *gxo = gxt ? gxt : gx;
  job.out = gxo ? pt_tensor_data(gxo) : NULL;
  if ((gxo || part) && M > 0 && D > 0) {
    int64_t per = rb * D;
    pt_parallel_for(ctx, nblk, per >= LN_GRAIN ? 1 : LN_GRAIN / per, ln_backward_chunk, &job);
  }
  /* the blocks' sums, in block order */
  PT_DISPATCH_FLOAT(dt, {
    for (int k = 0; k < 2; k++) {
      pt_tensor *t = k ? gb : gw;
      if (!t) continue;
      T *o = pt_tensor_data(t);
      if (!part) {
        for (int64_t i = 0; i < D; i++) o[i] = 0;
        continue;
      }
      double *p0 = part + k * D;
      for (int64_t blk = 1; blk < nblk; blk++) {
        const double *p = part + (blk * 2 + k) * D;
        for (int64_t i = 0; i < D; i++) p0[i] += p[i];
      }
      for (int64_t i = 0; i < D; i++) o[i] = (T)p0[i];
    }
  });
  if (gxt) atomic_fetch_add(&gxt->storage->version, 1);
  pt_free(part);
  pt_tensor_release(g);
  grad_in[0] = gx;
  grad_in[1] = gw;
  grad_in[2] = gb;
  return PT_OK;
fail:
  /* a fresh target handed out but not written must still hold a valid gradient */
  if (gxt && fresh) memset(pt_tensor_data(gxt), 0, (size_t)pt_tensor_numel(gxt) * pt_dtype_size(dt));
  pt_free(part);
  pt_tensor_release(g);
  pt_tensor_release(gx);
  pt_tensor_release(gw);
  pt_tensor_release(gb);
  return st;
}

static pt_status check_affine(pt_ctx *ctx, const char *fname, const char *what, pt_tensor *p,
                              pt_tensor *x, int ndim, const int64_t *shape) {
  char s1[PT_SHAPE_STR_MAX], s2[PT_SHAPE_STR_MAX];
  if (!p) return PT_OK;
  pt_status st = check_same_dtype(ctx, fname, what, p, x);
  if (st) return st;
  if (p->ndim != ndim || memcmp(p->shape, shape, (size_t)ndim * sizeof(int64_t)) != 0)
    return pt_fail(ctx, PT_ESHAPE, "%s: %s shape %s, expected %s", fname, what, shape_str(p, s1),
                   pt_shape_format(ndim, shape, s2, sizeof s2));
  return PT_OK;
}

pt_status pt_nn_layer_norm(pt_ctx *ctx, pt_tensor *x, int nnorm, const int64_t *norm_shape,
                           pt_tensor *w, pt_tensor *b, double eps, pt_tensor **out) {
  char s1[PT_SHAPE_STR_MAX], s2[PT_SHAPE_STR_MAX];
  pt_status st;
  if ((st = check_float(ctx, "layer_norm", "input", x))) return st;
  if (nnorm < 1 || nnorm > x->ndim ||
      memcmp(x->shape + x->ndim - nnorm, norm_shape, (size_t)nnorm * sizeof(int64_t)) != 0)
    return pt_fail(ctx, PT_ESHAPE, "layer_norm: input shape %s does not end with normalized shape %s",
                   shape_str(x, s1), pt_shape_format(nnorm, norm_shape, s2, sizeof s2));
  if ((st = check_affine(ctx, "layer_norm", "weight", w, x, nnorm, norm_shape))) return st;
  if ((st = check_affine(ctx, "layer_norm", "bias", b, x, nnorm, norm_shape))) return st;
  int64_t D = pt_shape_numel(nnorm, norm_shape);
  int64_t M = D ? pt_tensor_numel(x) / D : 0;
  pt_dtype dt = x->dtype;
  pt_tensor *xc = NULL, *wc = NULL, *bc = NULL, *stats = NULL, *y = NULL;
  int64_t sshape[2] = {M, 2};
  if ((st = pt_tensor_contiguous_raw(ctx, x, &xc))) goto fail;
  if (w && (st = pt_tensor_contiguous_raw(ctx, w, &wc))) goto fail;
  if (b && (st = pt_tensor_contiguous_raw(ctx, b, &bc))) goto fail;
  if ((st = pt_tensor_empty(ctx, PT_FLOAT64, 2, sshape, &stats))) goto fail;
  if ((st = pt_tensor_empty(ctx, dt, x->ndim, x->shape, &y))) goto fail;
  if (M > 0 && D > 0) {
    ln_job job = {.dt = dt, .M = M, .D = D, .eps = eps, .x = pt_tensor_data(xc),
                  .w = wc ? pt_tensor_data(wc) : NULL, .b = bc ? pt_tensor_data(bc) : NULL,
                  .out = pt_tensor_data(y), .stats = pt_tensor_data(stats)};
    int64_t per = LN_GROUP * D;
    pt_parallel_for(ctx, (M + LN_GROUP - 1) / LN_GROUP, per >= LN_GRAIN ? 1 : LN_GRAIN / per, ln_forward_chunk,
                    &job);
  }
  pt_node *node;
  pt_tensor *inputs[3] = {x, w, b};
  if ((st = pt_autograd_record(ctx, y, "LayerNormBackward", layer_norm_backward, 3, inputs, &node)))
    goto fail;
  if (node) {
    pt_node_save(node, 0, xc);
    pt_node_save(node, 1, stats);
    pt_node_save(node, 2, wc);
    xc = stats = wc = NULL;
    node->ints[0] = M;
    node->ints[1] = D;
    node->n_ints = 2;
    node->scalars[0] = eps; /* for the create_graph formula (autograd.c) */
  }
  pt_tensor_release(xc);
  pt_tensor_release(wc);
  pt_tensor_release(bc);
  pt_tensor_release(stats);
  *out = y;
  return PT_OK;
fail:
  pt_tensor_release(xc);
  pt_tensor_release(wc);
  pt_tensor_release(bc);
  pt_tensor_release(stats);
  pt_tensor_release(y);
  return st;
}


/* Batch norm over {N,C} or {N,C,L}. The computation is pt_batch_norm's (lib/conv.h), shared
 * with BatchNorm2d; this keeps BatchNorm1d's shape rule and uses batch statistics when no
 * running statistics are given (track_running_stats=false). */
pt_status pt_nn_batch_norm(pt_ctx *ctx, pt_tensor *x, pt_tensor *running_mean,
                           pt_tensor *running_var, pt_tensor *w, pt_tensor *b, bool training,
                           double momentum, double eps, pt_tensor **out) {
  char s1[PT_SHAPE_STR_MAX];
  pt_status st;
  if ((st = check_float(ctx, "batch_norm", "input", x))) return st;
  if (x->ndim != 2 && x->ndim != 3)
    return pt_fail(ctx, PT_ESHAPE, "batch_norm: expected input {N,C} or {N,C,L}, got shape %s",
                   shape_str(x, s1));
  bool batch = training || !running_mean || !running_var;
  return pt_batch_norm(ctx, x, running_mean, running_var, w, b, batch, momentum, eps, out);
}

/* ================================================================== embedding */

/* The weight's gradient is zeros with g's rows added at the indices, in order; the default
 * accumulation then copies it into a new .grad or adds it to the existing one (grad + gw, every
 * element). Without a dense buffer per step, with the same numbers bit for bit:
 * - .grad (or the dispatcher's buffer) is new: zero it and add the rows into it directly;
 * - it exists: each distinct row's sum is formed from +0 in index order in a small buffer and
 *   added to its row of .grad (grad + gw for those rows); every other element would have
 *   become grad + 0, which differs from grad only for -0 (-> +0) and NaN payloads (quieted),
 *   so those rows are only read, and written where x + 0 is not x.
 * Adds split over column ranges (every element keeps its order), row passes over rows. */
typedef struct emb_job {
  pt_dtype dt;
  const int64_t *ip;   /* n 0-based rows */
  const int32_t *slot; /* per row: its slot in buf, -1 untouched (NULL: add straight to dst) */
  int64_t n, D, pad;
  const void *g;       /* n x D */
  void *dst;           /* V x D: the rows are added here (or buf, by slot) */
  void *buf;           /* distinct rows x D */
} emb_job;

static void emb_add_cols(void *arg, int64_t c0, int64_t c1, int tid) {
  (void)tid;
  const emb_job *j = arg;
  PT_DISPATCH_FLOAT(j->dt, {
    const T *gp = j->g;
    T *out = j->slot ? (T *)j->buf : (T *)j->dst;
    for (int64_t i = 0; i < j->n; i++) {
      if (j->ip[i] == j->pad) continue;
      T *row = out + (j->slot ? j->slot[j->ip[i]] : j->ip[i]) * j->D;
      const T *gr = gp + i * j->D;
      for (int64_t c = c0; c < c1; c++) row[c] += gr[c];
    }
  });
}

/* whether x + 0 differs from x in its bits for some x of the row (-0, a signalling NaN):
 * an OR of bit differences, which vectorises */
static bool emb_changed_by_zero_add_f32(const float *row, int64_t D) {
  uint32_t acc = 0;
  for (int64_t c = 0; c < D; c++) {
    float y = row[c] + 0.0f;
    uint32_t a, b;
    memcpy(&a, &row[c], sizeof a);
    memcpy(&b, &y, sizeof b);
    acc |= a ^ b;
  }
  return acc != 0;
}
static bool emb_changed_by_zero_add_f64(const double *row, int64_t D) {
  uint64_t acc = 0;
  for (int64_t c = 0; c < D; c++) {
    double y = row[c] + 0.0;
    uint64_t a, b;
    memcpy(&a, &row[c], sizeof a);
    memcpy(&b, &y, sizeof b);
    acc |= a ^ b;
  }
  return acc != 0;
}

/* rows [r0, r1) of dst: touched ones += their sum, the others x -> x + 0 where that changes x */
static void emb_fold_rows(void *arg, int64_t r0, int64_t r1, int tid) {
  (void)tid;
  const emb_job *j = arg;
  int64_t D = j->D;
  PT_DISPATCH_FLOAT(j->dt, {
    T *dst = j->dst;
    const T *buf = j->buf;
    for (int64_t r = r0; r < r1; r++) {
      T *row = dst + r * D;
      int32_t s = j->slot[r];
      if (s >= 0) {
        const T *b = buf + (int64_t)s * D;
        for (int64_t c = 0; c < D; c++) row[c] += b[c];
      } else if (sizeof(T) == sizeof(float) ? emb_changed_by_zero_add_f32((const float *)row, D)
                                            : emb_changed_by_zero_add_f64((const double *)row, D)) {
        for (int64_t c = 0; c < D; c++) row[c] = row[c] + (T)0;
      }
    }
  });
}

/* saved: 0 indices (0-based int64, flat); ints: V, D, padding (0-based, -1 none) */
static pt_status embedding_backward(pt_ctx *ctx, pt_node *node, pt_tensor *grad_out,
                                    pt_tensor **grad_in) {
  pt_tensor *idx = node->saved[0], *g, *gw;
  int64_t V = node->ints[0], D = node->ints[1], pad = node->ints[2];
  pt_dtype dt = node->out_dtype;
  pt_status st = grad_prep(ctx, grad_out, dt, &g);
  if (st) return st;
  int64_t n = pt_tensor_numel(idx);
  emb_job j = {.dt = dt, .ip = pt_tensor_data(idx), .n = n, .D = D, .pad = pad,
               .g = pt_tensor_data(g)};
  int64_t col_grain = D * n > 0 ? 65536 / n : 1;
  if (col_grain < 16) col_grain = 16;
  bool fresh = false;
  pt_tensor *target = V <= INT32_MAX ? direct_grad(ctx, node->inputs[0], &fresh) : NULL;
  if (target && fresh) {
    j.dst = pt_tensor_data(target);
    memset(j.dst, 0, (size_t)(V * D) * pt_dtype_size(dt));
    pt_parallel_for(ctx, D, col_grain, emb_add_cols, &j);
    atomic_fetch_add(&target->storage->version, 1);
    pt_tensor_release(g);
    return PT_OK;
  }
  if (target) {
    int32_t *slot = pt_alloc(ctx, (size_t)V * sizeof *slot);
    void *buf = NULL;
    int32_t nslots = 0;
    if (slot) {
      memset(slot, 0xff, (size_t)V * sizeof *slot); /* -1 */
      for (int64_t i = 0; i < n; i++)
        if (j.ip[i] != pad && slot[j.ip[i]] < 0) slot[j.ip[i]] = nslots++;
      buf = pt_alloc(ctx, (size_t)(nslots > 0 ? nslots : 1) * (size_t)D * pt_dtype_size(dt));
    }
    if (!slot || !buf) {
      pt_free(slot);
      pt_tensor_release(g);
      return PT_ENOMEM;
    }
    memset(buf, 0, (size_t)nslots * (size_t)D * pt_dtype_size(dt)); /* +0 */
    j.slot = slot;
    j.buf = buf;
    j.dst = pt_tensor_data(target);
    pt_parallel_for(ctx, D, col_grain, emb_add_cols, &j);
    int64_t row_grain = D > 0 ? 65536 / D : 1;
    pt_parallel_for(ctx, V, row_grain < 1 ? 1 : row_grain, emb_fold_rows, &j);
    atomic_fetch_add(&target->storage->version, 1);
    pt_free(buf);
    pt_free(slot);
    pt_tensor_release(g);
    return PT_OK;
  }
  int64_t wshape[2] = {V, D};
  if ((st = pt_tensor_zeros(ctx, dt, 2, wshape, &gw))) {
    pt_tensor_release(g);
    return st;
  }
  j.dst = pt_tensor_data(gw);
  pt_parallel_for(ctx, D, col_grain, emb_add_cols, &j);
  pt_tensor_release(g);
  grad_in[0] = gw;
  return PT_OK;
}

/* embedding's weight (a float {num_embeddings, dim}) and indices (integers) */
static pt_status embedding_check(pt_ctx *ctx, const pt_tensor *weight, const pt_tensor *indices) {
  char s1[PT_SHAPE_STR_MAX];
  pt_status st;
  if ((st = check_float(ctx, "embedding", "weight", weight))) return st;
  if (weight->ndim != 2)
    return pt_fail(ctx, PT_ESHAPE, "embedding: weight must be 2-D {num_embeddings,dim}, got shape %s",
                   shape_str(weight, s1));
  if (pt_dtype_is_floating(indices->dtype) || indices->dtype == PT_BOOL)
    return pt_fail(ctx, PT_EARG, "embedding: indices must be integers, got dtype %s",
                   pt_dtype_name(indices->dtype));
  return PT_OK;
}

pt_status pt_nn_embedding_renorm_(pt_ctx *ctx, pt_tensor *weight, pt_tensor *indices, double max_norm,
                                  double norm_type) {
  pt_status st;
  if ((st = embedding_check(ctx, weight, indices))) return st;
  if (!(max_norm >= 0))
    return pt_fail(ctx, PT_EARG, "embedding: max_norm must be a non-negative number, got %g", max_norm);
  int64_t V = weight->shape[0], D = weight->shape[1], n = pt_tensor_numel(indices);
  for (int64_t i = 0; i < n; i++) {
    int64_t v = (int64_t)pt_tensor_get_flat(indices, i);
    if (v < 1 || v > V)
      return pt_fail(ctx, PT_EARG, "embedding: index %lld out of range for %lld embeddings%s", (long long)v,
                     (long long)V, v == 0 ? " (indices are 1-based)" : "");
  }
  unsigned char *done = pt_alloc(ctx, V > 0 ? (size_t)V : 1);
  if (!done) return PT_ENOMEM;
  memset(done, 0, V > 0 ? (size_t)V : 1);
  bool changed = false;
  for (int64_t i = 0; i < n; i++) {
    int64_t r = (int64_t)pt_tensor_get_flat(indices, i) - 1;
    if (done[r]) continue;
    done[r] = 1;
    double norm = 0;
    if (isinf(norm_type)) {
      for (int64_t c = 0; c < D; c++) {
        double a = fabs(pt_tensor_get_flat(weight, r * D + c));
        norm = norm_type > 0 ? (c == 0 || a > norm ? a : norm) : (c == 0 || a < norm ? a : norm);
      }
    } else if (norm_type == 0) {
      for (int64_t c = 0; c < D; c++) norm += pt_tensor_get_flat(weight, r * D + c) != 0;
    } else {
      for (int64_t c = 0; c < D; c++) norm += pow(fabs(pt_tensor_get_flat(weight, r * D + c)), norm_type);
      norm = pow(norm, 1.0 / norm_type);
    }
    if (norm > max_norm) {
      double scale = max_norm / (norm + 1e-7);
      for (int64_t c = 0; c < D; c++)
        pt_tensor_set_flat(weight, r * D + c, pt_tensor_get_flat(weight, r * D + c) * scale);
      changed = true;
    }
  }
  pt_free(done);
  if (changed) atomic_fetch_add(&weight->storage->version, 1);
  return PT_OK;
}

pt_status pt_nn_embedding(pt_ctx *ctx, pt_tensor *weight, pt_tensor *indices, int64_t padding_idx,
                          pt_tensor **out) {
  pt_status st;
  if ((st = embedding_check(ctx, weight, indices))) return st;
  if (indices->ndim >= PT_MAX_DIMS)
    return pt_fail(ctx, PT_ESHAPE, "embedding: indices have too many dimensions");
  int64_t V = weight->shape[0], D = weight->shape[1];
  int64_t pad_given = padding_idx;
  if (padding_idx < 0) padding_idx += V + 1; /* -1: the last row */
  if (padding_idx > V || (pad_given < 0 && padding_idx < 1))
    return pt_fail(ctx, PT_EARG, "embedding: padding_idx %lld out of range for %lld embeddings (1..%lld, or -%lld..-1)",
                   (long long)pad_given, (long long)V, (long long)V, (long long)V);
  int64_t n = pt_tensor_numel(indices);
  pt_tensor *idx = NULL, *wc = NULL, *y = NULL;
  if ((st = pt_tensor_empty(ctx, PT_INT64, 1, &n, &idx))) return st;
  int64_t *ip = pt_tensor_data(idx);
  for (int64_t i = 0; i < n; i++) {
    int64_t v = (int64_t)pt_tensor_get_flat(indices, i);
    if (v < 1 || v > V) {
      st = pt_fail(ctx, PT_EARG, "embedding: index %lld out of range for %lld embeddings%s",
                   (long long)v, (long long)V, v == 0 ? " (indices are 1-based)" : "");
      goto fail;
    }
    ip[i] = v - 1;
  }
  if ((st = pt_tensor_contiguous_raw(ctx, weight, &wc))) goto fail;
  int64_t yshape[PT_MAX_DIMS];
  memcpy(yshape, indices->shape, (size_t)indices->ndim * sizeof(int64_t));
  yshape[indices->ndim] = D;
  if ((st = pt_tensor_empty(ctx, weight->dtype, indices->ndim + 1, yshape, &y))) goto fail;
  {
    size_t es = pt_dtype_size(weight->dtype);
    char *yp = pt_tensor_data(y);
    const char *wp = pt_tensor_data(wc);
    for (int64_t i = 0; i < n; i++)
      memcpy(yp + (size_t)(i * D) * es, wp + (size_t)(ip[i] * D) * es, (size_t)D * es);
  }
  pt_tensor_release(wc);
  wc = NULL;
  pt_node *node;
  if ((st = pt_autograd_record(ctx, y, "EmbeddingBackward", embedding_backward, 1, &weight, &node)))
    goto fail;
  if (node) {
    pt_node_save(node, 0, idx);
    idx = NULL;
    node->ints[0] = V;
    node->ints[1] = D;
    node->ints[2] = padding_idx >= 1 ? padding_idx - 1 : -1;
    node->n_ints = 3;
  }
  pt_tensor_release(idx);
  *out = y;
  return PT_OK;
fail:
  pt_tensor_release(idx);
  pt_tensor_release(wc);
  pt_tensor_release(y);
  return st;
}

/* ======================================================================= view */

/* ints: input ndim, then input shape */
static pt_status view_backward(pt_ctx *ctx, pt_node *node, pt_tensor *grad_out, pt_tensor **grad_in) {
  pt_tensor *g, *gx;
  int ndim = (int)node->ints[0];
  pt_status st = pt_tensor_contiguous_raw(ctx, grad_out, &g);
  if (st) return st;
  st = pt_view_raw(ctx, g, ndim, node->ints + 1, &gx);
  pt_tensor_release(g);
  if (st) return st;
  grad_in[0] = gx;
  return PT_OK;
}

pt_status pt_nn_view(pt_ctx *ctx, const char *fname, pt_tensor *x, int ndim, const int64_t *shape,
                     pt_tensor **out) {
  char s1[PT_SHAPE_STR_MAX], s2[PT_SHAPE_STR_MAX];
  if (ndim < 0 || ndim > PT_MAX_DIMS)
    return pt_fail(ctx, PT_ESHAPE, "%s: tensors have at most %d dimensions", fname, PT_MAX_DIMS);
  if (pt_shape_numel(ndim, shape) != pt_tensor_numel(x))
    return pt_fail(ctx, PT_ESHAPE, "%s: shape %s is invalid for input of shape %s", fname,
                   pt_shape_format(ndim, shape, s1, sizeof s1), shape_str(x, s2));
  pt_tensor *xc, *y;
  pt_status st = pt_tensor_contiguous_raw(ctx, x, &xc);
  if (st) return st;
  st = pt_view_raw(ctx, xc, ndim, shape, &y);
  pt_tensor_release(xc);
  if (st) return st;
  /* a raw view carries no graph: record the reshape */
  pt_node *node;
  if ((st = pt_autograd_record(ctx, y, "ViewBackward", view_backward, 1, &x, &node))) {
    pt_tensor_release(y);
    return st;
  }
  if (node) {
    node->ints[0] = x->ndim;
    memcpy(node->ints + 1, x->shape, (size_t)x->ndim * sizeof(int64_t));
    node->n_ints = x->ndim + 1;
  }
  *out = y;
  return PT_OK;
}
