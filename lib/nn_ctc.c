/* CTC loss (Graves et al. 2006; PyTorch 1.13's CPU kernel, aten/src/ATen/native/LossCTC.cpp),
 * forward and backward fused. A sequence's target l of length L is extended with blanks to
 * l' = (blank, l1, blank, l2, ..., lL, blank) of W = 2L+1 states; alpha[t][s] is the log of the
 * summed probability of the alignment prefixes of frames 0..t that end in state s:
 *   alpha[t][s] = lse(alpha[t-1][s], alpha[t-1][s-1], alpha[t-1][s-2] when l'[s] != l'[s-2])
 *                 + log_probs[t][l'[s]]
 * and the loss is -lse(alpha[T-1][W-1], alpha[T-1][W-2]). beta runs the same recursion from the
 * end; the gradient is PyTorch's exp(log_probs[t][c]) - exp(lse over s with l'[s] = c of
 * alpha[t][s] + beta[t][s], + nll - log_probs[t][c]), which is the gradient of the loss through
 * a log_softmax (the exp term cancels in its backward) but not of the loss as a function of free
 * log_probs, exactly as PyTorch's. Every sum is taken in float64 whatever the input's dtype.
 * States that cannot be reached from the start by frame t (s >= 2t+2) or cannot reach the end
 * from it (s < W - 2(T_b - t)) are skipped (left -inf): their alpha + beta is -inf either way,
 * so the values are the full recursion's. Sequences are independent: the batch is split over
 * the intra-op threads, each sequence's work done by one thread into its own rows, so nothing
 * depends on the thread count. The forward keeps every alpha for the backward when a graph is
 * recorded (saved, float64), else two rows per thread. */
#include "nn_ctc.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dispatch.h"
#include "nn_impl.h"
#include "parallel.h"

#define CTC_GRAIN 16384 /* alignment states (frames x extended target length) per chunk, at least */

/* What the checks learned about the batch: the forward's plan and the backward's (node->extra,
 * one block: the arrays follow the struct) */
typedef struct ctc_plan {
  int64_t T, N, C, blank; /* blank 0-based */
  int64_t W_max;          /* the widest 2L+1 */
  int64_t *il, *tl;       /* {N} input and target lengths */
  int64_t *tg_off;        /* {N} where each target starts in tg */
  int64_t *alpha_off;     /* {N} where each sequence's alphas (il rows of 2L+1) start */
  int64_t *tg;            /* the targets one after another, 0-based classes */
} ctc_plan;

typedef struct ctc_job {
  const ctc_plan *p;
  pt_dtype dt;
  const void *lp;      /* {T,N,C} contiguous */
  double *alpha;       /* the saved alphas, or NULL (the forward then uses two scratch rows) */
  double *scratch;     /* per thread: scratch_per doubles */
  int64_t scratch_per;
  double *nll;         /* {N}: -log p of each sequence, inf when no alignment fits */
  /* backward */
  const double *g;     /* the output gradient, float64 */
  bool g_each;         /* one per sequence (reduction none), else one for all */
  bool mean;           /* each sequence's gradient / (N max(L, 1)) */
  bool zero_infinity;
  void *grad;          /* {T,N,C} of dtype dt */
} ctc_job;

/* l'[s]: the blank at even states, the target's labels at odd ones */
static inline int64_t ctc_prime(const int64_t *tg, int64_t s, int64_t blank) {
  return (s & 1) ? tg[s >> 1] : blank;
}

/* log(exp(a) + exp(b) + exp(c)), -inf when all three are */
static inline double ctc_lse3(double a, double b, double c) {
  double m = a > b ? a : b;
  if (c > m) m = c;
  if (m == -INFINITY) return -INFINITY;
  return m + log(exp(a - m) + exp(b - m) + exp(c - m));
}

/* log(exp(a) + exp(b)) where a may be -inf (PyTorch's accumulation of the gradient sums) */
static inline double ctc_lse2(double a, double b) {
  if (a == -INFINITY) return b;
  double m = a > b ? a : b;
  if (m == -INFINITY) return -INFINITY;
  return m + log(exp(a - m) + exp(b - m));
}

static inline void ctc_fill_neginf(double *p, int64_t n) {
  for (int64_t i = 0; i < n; i++) p[i] = -INFINITY;
}

/* The states of frame t worth computing in a sequence of il frames and W states: [lo, hi) */
static inline void ctc_window(int64_t t, int64_t il, int64_t W, int64_t *lo, int64_t *hi) {
  int64_t a = W - 2 * (il - t), b = 2 * t + 2;
  *lo = a < 0 ? 0 : a;
  *hi = b > W ? W : b;
}

static void ctc_forward_chunk(void *arg, int64_t b0, int64_t b1, int tid) {
  const ctc_job *j = arg;
  const ctc_plan *p = j->p;
  int64_t C = p->C, blank = p->blank, rs = p->N * C;
  PT_DISPATCH_FLOAT(j->dt, {
    for (int64_t b = b0; b < b1; b++) {
      int64_t il = p->il[b], L = p->tl[b], W = 2 * L + 1;
      const int64_t *tg = p->tg + p->tg_off[b];
      const T *lp = (const T *)j->lp + b * C; /* frame t: lp + t * rs */
      if (il == 0) { /* no frames: only the empty target has an alignment */
        j->nll[b] = L == 0 ? 0.0 : INFINITY;
        continue;
      }
      double *a0 = j->alpha ? j->alpha + p->alpha_off[b] : j->scratch + (int64_t)tid * j->scratch_per;
      double *row = a0;
      ctc_fill_neginf(row, W);
      row[0] = lp[blank];
      if (L > 0) row[1] = lp[tg[0]];
      for (int64_t t = 1; t < il; t++) {
        const double *prev = row;
        row = j->alpha ? a0 + t * W : a0 + (t & 1) * W;
        const T *lpt = lp + t * rs;
        int64_t lo, hi;
        ctc_window(t, il, W, &lo, &hi);
        ctc_fill_neginf(row, lo);
        if (hi > lo) ctc_fill_neginf(row + hi, W - hi);
        else ctc_fill_neginf(row + lo, W - lo);
        for (int64_t s = lo; s < hi; s++) {
          int64_t c = ctc_prime(tg, s, blank);
          double a1 = prev[s], a2 = s > 0 ? prev[s - 1] : -INFINITY;
          /* skipping a blank is allowed between two different labels only */
          double a3 = (s > 1 && ctc_prime(tg, s - 2, blank) != c) ? prev[s - 2] : -INFINITY;
          row[s] = ctc_lse3(a1, a2, a3) + (double)lpt[c];
        }
      }
      /* an empty target ends in its one blank state, any other in its last label or blank */
      j->nll[b] = L == 0 ? -row[0] : -ctc_lse3(row[W - 1], row[W - 2], -INFINITY);
    }
  });
}

static void ctc_backward_chunk(void *arg, int64_t b0, int64_t b1, int tid) {
  const ctc_job *j = arg;
  const ctc_plan *p = j->p;
  int64_t T_all = p->T, N = p->N, C = p->C, blank = p->blank, rs = N * C;
  double *lcab = j->scratch + (int64_t)tid * j->scratch_per; /* {C}: lse of alpha + beta per class */
  double *beta = lcab + C;                                     /* two rows of W_max */
  PT_DISPATCH_FLOAT(j->dt, {
    for (int64_t b = b0; b < b1; b++) {
      int64_t il = p->il[b], L = p->tl[b], W = 2 * L + 1;
      const int64_t *tg = p->tg + p->tg_off[b];
      const T *lp = (const T *)j->lp + b * C;
      T *gb = (T *)j->grad + b * C;
      double nll = j->nll[b];
      double gr = j->g[j->g_each ? b : 0];
      if (j->mean) gr /= (double)N * (double)(L > 1 ? L : 1);
      int64_t t_end = il;
      /* a sequence without frames, or an impossible one under zero_infinity, gets no gradient */
      if (il == 0 || (j->zero_infinity && nll == INFINITY)) t_end = 0;
      for (int64_t t = t_end; t < T_all; t++) memset(gb + t * rs, 0, (size_t)C * sizeof(T));
      if (t_end == 0) continue;
      const double *alpha = j->alpha + p->alpha_off[b];
      double *next = NULL;
      for (int64_t t = il - 1; t >= 0; t--) {
        double *cur = beta + (t & 1) * W;
        const T *lpt = lp + t * rs;
        int64_t lo, hi;
        ctc_window(t, il, W, &lo, &hi);
        ctc_fill_neginf(cur, W);
        if (t == il - 1) { /* the two end states, as beta's initialisation */
          cur[W - 1] = lpt[blank];
          if (L > 0) cur[W - 2] = lpt[tg[L - 1]];
        } else {
          for (int64_t s = lo; s < hi; s++) {
            int64_t c = ctc_prime(tg, s, blank);
            double b1v = next[s], b2v = s < W - 1 ? next[s + 1] : -INFINITY;
            double b3v = (s < W - 2 && ctc_prime(tg, s + 2, blank) != c) ? next[s + 2] : -INFINITY;
            cur[s] = ctc_lse3(b1v, b2v, b3v) + (double)lpt[c];
          }
        }
        ctc_fill_neginf(lcab, C);
        const double *at = alpha + t * W;
        for (int64_t s = lo; s < hi; s++) {
          double ab = at[s] + cur[s];
          if (ab == -INFINITY) continue;
          int64_t c = ctc_prime(tg, s, blank);
          lcab[c] = ctc_lse2(lcab[c], ab);
        }
        T *gt = gb + t * rs;
        for (int64_t c = 0; c < C; c++) {
          double l = (double)lpt[c];
          gt[c] = (T)((exp(l) - exp(lcab[c] + nll - l)) * gr);
        }
        next = cur;
      }
    }
  });
}

static pt_status ctc_run(pt_ctx *ctx, ctc_job *job, pt_parallel_fn fn, int64_t per_thread, int64_t states) {
  const ctc_plan *p = job->p;
  if (p->N == 0) return PT_OK;
  int nth = pt_parallel_threads(ctx);
  job->scratch_per = per_thread;
  job->scratch = NULL;
  if (per_thread > 0 && !(job->scratch = pt_alloc(ctx, (size_t)(nth * per_thread) * sizeof(double))))
    return PT_ENOMEM;
  int64_t per_seq = states / p->N + 1;
  pt_parallel_for(ctx, p->N, per_seq >= CTC_GRAIN ? 1 : CTC_GRAIN / per_seq, fn, job);
  pt_free(job->scratch);
  job->scratch = NULL;
  return PT_OK;
}

/* saved: 0 log_probs (contiguous), 1 the alphas (float64, each sequence's il x (2L+1) one after
 * another; see alpha_off), 2 the losses before zero_infinity {N} (float64); extra: the plan;
 * ints: 0 reduction, 1 zero_infinity */
static pt_status ctc_loss_backward(pt_ctx *ctx, pt_node *node, pt_tensor *grad_out, pt_tensor **grad_in) {
  grad_in[0] = NULL;
  if (!node->needs_grad[0]) return PT_OK;
  pt_tensor *lpc = node->saved[0], *alpha = node->saved[1], *nll = node->saved[2];
  const ctc_plan *p = node->extra;
  pt_tensor *g = NULL, *gx = NULL;
  pt_status st = grad_prep(ctx, grad_out, PT_FLOAT64, &g);
  if (st) return st;
  if ((st = pt_tensor_empty(ctx, lpc->dtype, lpc->ndim, lpc->shape, &gx))) goto fail;
  pt_reduction red = (pt_reduction)node->ints[0];
  ctc_job job = {.p = p, .dt = lpc->dtype, .lp = pt_tensor_data(lpc), .alpha = pt_tensor_data(alpha),
                 .nll = pt_tensor_data(nll), .g = pt_tensor_data(g), .g_each = red == PT_REDUCE_NONE,
                 .mean = red == PT_REDUCE_MEAN, .zero_infinity = node->ints[1] != 0,
                 .grad = pt_tensor_data(gx)};
  if ((st = ctc_run(ctx, &job, ctc_backward_chunk, p->C + 2 * p->W_max, pt_tensor_numel(alpha)))) goto fail;
  pt_tensor_release(g);
  grad_in[0] = gx;
  return PT_OK;
fail:
  pt_tensor_release(g);
  pt_tensor_release(gx);
  return st;
}

static pt_status check_lengths(pt_ctx *ctx, const char *fname, const char *what, int64_t n,
                               const int64_t *v, int64_t N, bool batched, const pt_tensor *lp) {
  char s1[PT_SHAPE_STR_MAX];
  if (n != N)
    return pt_fail(ctx, PT_ESHAPE, "%s: %s has %lld entries, expected %lld (%s, log_probs shape %s)", fname,
                   what, (long long)n, (long long)N, batched ? "one per sequence of the batch" : "unbatched",
                   shape_str(lp, s1));
  for (int64_t b = 0; b < n; b++)
    if (v[b] < 0)
      return pt_fail(ctx, PT_EARG, "%s: %s[%lld] is %lld, lengths must not be negative", fname, what,
                     (long long)b + 1, (long long)v[b]);
  return PT_OK;
}

/* The plan (one block, see ctc_plan) with the targets checked and converted to 0-based */
static pt_status ctc_plan_make(pt_ctx *ctx, const char *fname, pt_tensor *lp, pt_tensor *targets,
                               const int64_t *il, const int64_t *tl, int64_t blank, ctc_plan **out) {
  char s1[PT_SHAPE_STR_MAX], s2[PT_SHAPE_STR_MAX];
  bool batched = lp->ndim == 3;
  int64_t T = lp->shape[0], N = batched ? lp->shape[1] : 1, C = lp->shape[lp->ndim - 1];
  for (int64_t b = 0; b < N; b++)
    if (il[b] > T)
      return pt_fail(ctx, PT_EARG, "%s: input_lengths[%lld] is %lld, more than the %lld frames of log_probs (shape %s)",
                     fname, (long long)b + 1, (long long)il[b], (long long)T, shape_str(lp, s1));
  /* float targets are read as PyTorch reads them (converted), when they hold whole numbers */
  if (targets->dtype == PT_BOOL)
    return pt_fail(ctx, PT_EARG, "%s: targets must hold class indices, got dtype bool", fname);
  if (targets->ndim != 1 && targets->ndim != 2)
    return pt_fail(ctx, PT_ESHAPE, "%s: targets must be {N,S} (padded) or 1-D (concatenated), got shape %s",
                   fname, shape_str(targets, s1));
  int64_t total = 0, S = 0;
  for (int64_t b = 0; b < N; b++) total += tl[b];
  if (targets->ndim == 2) {
    S = targets->shape[1];
    if (targets->shape[0] != N)
      return pt_fail(ctx, PT_ESHAPE, "%s: padded targets have %lld rows (shape %s), expected %lld (log_probs shape %s)",
                     fname, (long long)targets->shape[0], shape_str(targets, s1), (long long)N, shape_str(lp, s2));
    for (int64_t b = 0; b < N; b++)
      if (tl[b] > S)
        return pt_fail(ctx, PT_EARG, "%s: target_lengths[%lld] is %lld, longer than the padded targets (shape %s)",
                       fname, (long long)b + 1, (long long)tl[b], shape_str(targets, s1));
  } else if (targets->shape[0] != total) {
    return pt_fail(ctx, PT_ESHAPE, "%s: concatenated targets have %lld elements, but target_lengths sum to %lld",
                   fname, (long long)targets->shape[0], (long long)total);
  }
  size_t bytes = sizeof(ctc_plan) + (size_t)(4 * N + total) * sizeof(int64_t);
  ctc_plan *p = pt_alloc(ctx, bytes);
  if (!p) return PT_ENOMEM;
  int64_t *arr = (int64_t *)(p + 1);
  *p = (ctc_plan){.T = T, .N = N, .C = C, .blank = blank - 1, .W_max = 1, .il = arr, .tl = arr + N,
                  .tg_off = arr + 2 * N, .alpha_off = arr + 3 * N, .tg = arr + 4 * N};
  memcpy(p->il, il, (size_t)N * sizeof(int64_t));
  memcpy(p->tl, tl, (size_t)N * sizeof(int64_t));
  /* as float64: exact for every class index, and a float target's fraction shows */
  pt_tensor *t64 = NULL, *tc = NULL;
  pt_status st = pt_tensor_to_dtype_raw(ctx, targets, PT_FLOAT64, &t64);
  if (!st) st = pt_tensor_contiguous_raw(ctx, t64, &tc);
  pt_tensor_release(t64);
  if (st) {
    pt_free(p);
    return st;
  }
  const double *tv = pt_tensor_numel(tc) ? pt_tensor_data(tc) : NULL;
  int64_t pos = 0, aoff = 0;
  for (int64_t b = 0; b < N; b++) {
    int64_t W = 2 * tl[b] + 1, src = targets->ndim == 2 ? b * S : pos;
    p->tg_off[b] = pos;
    p->alpha_off[b] = aoff;
    aoff += il[b] * W;
    if (W > p->W_max) p->W_max = W;
    for (int64_t i = 0; i < tl[b]; i++) {
      double v = tv[src + i];
      if (v >= 1 && v <= (double)C && v == floor(v) && (int64_t)v != blank) {
        p->tg[pos + i] = (int64_t)v - 1;
        continue;
      }
      char where[64];
      if (targets->ndim == 2)
        snprintf(where, sizeof where, "targets[%lld][%lld]", (long long)b + 1, (long long)i + 1);
      else
        snprintf(where, sizeof where, "targets[%lld]", (long long)(src + i) + 1);
      if (v == (double)blank)
        pt_fail(ctx, PT_EARG, "%s: %s is %lld, the blank class (targets must not contain the blank)", fname,
                where, (long long)blank);
      else
        pt_fail(ctx, PT_EARG, "%s: %s is %.17g, not a class in 1..%lld%s", fname, where, v, (long long)C,
                v == 0 ? " (class indices are 1-based)" : "");
      goto bad;
    }
    pos += tl[b];
  }
  pt_tensor_release(tc);
  *out = p;
  return PT_OK;
bad:
  pt_tensor_release(tc);
  pt_free(p);
  return PT_EARG;
}

pt_status pt_nn_ctc_loss(pt_ctx *ctx, const char *fname, pt_tensor *log_probs, pt_tensor *targets,
                         int64_t n_input, const int64_t *input_lengths, int64_t n_target,
                         const int64_t *target_lengths, int64_t blank, pt_reduction red,
                         bool zero_infinity, pt_tensor **out) {
  char s1[PT_SHAPE_STR_MAX];
  pt_status st;
  if ((st = check_float(ctx, fname, "log_probs", log_probs))) return st;
  if (log_probs->ndim != 2 && log_probs->ndim != 3)
    return pt_fail(ctx, PT_ESHAPE, "%s: log_probs must be {T,N,C} or {T,C} (unbatched), got shape %s", fname,
                   shape_str(log_probs, s1));
  bool batched = log_probs->ndim == 3;
  int64_t N = batched ? log_probs->shape[1] : 1, C = log_probs->shape[log_probs->ndim - 1];
  if (blank < 1 || blank > C)
    return pt_fail(ctx, PT_EARG, "%s: blank %lld is not a class in 1..%lld (log_probs shape %s)%s", fname,
                   (long long)blank, (long long)C, shape_str(log_probs, s1),
                   blank == 0 ? "; class indices are 1-based" : "");
  if ((st = check_lengths(ctx, fname, "input_lengths", n_input, input_lengths, N, batched, log_probs)) ||
      (st = check_lengths(ctx, fname, "target_lengths", n_target, target_lengths, N, batched, log_probs)))
    return st;
  ctc_plan *p = NULL;
  if ((st = ctc_plan_make(ctx, fname, log_probs, targets, input_lengths, target_lengths, blank, &p))) return st;
  bool keep = pt_autograd_needed(ctx, 1, &log_probs);
  int64_t states = 0;
  for (int64_t b = 0; b < N; b++) states += p->il[b] * (2 * p->tl[b] + 1);
  pt_tensor *lpc = NULL, *alpha = NULL, *nll = NULL, *y = NULL;
  if ((st = pt_tensor_contiguous_raw(ctx, log_probs, &lpc))) goto fail;
  if ((st = pt_tensor_empty(ctx, PT_FLOAT64, 1, &N, &nll))) goto fail;
  if (keep && (st = pt_tensor_empty(ctx, PT_FLOAT64, 1, &states, &alpha))) goto fail;
  ctc_job job = {.p = p, .dt = log_probs->dtype, .lp = pt_tensor_data(lpc),
                 .alpha = alpha ? pt_tensor_data(alpha) : NULL, .nll = pt_tensor_data(nll)};
  if ((st = ctc_run(ctx, &job, ctc_forward_chunk, alpha ? 0 : 2 * p->W_max, states))) goto fail;
  bool each = red == PT_REDUCE_NONE;
  if ((st = pt_tensor_empty(ctx, log_probs->dtype, each && batched ? 1 : 0, &N, &y))) goto fail;
  const double *nv = job.nll;
  double total = 0;
  PT_DISPATCH_FLOAT(log_probs->dtype, {
    T *yv = pt_tensor_data(y);
    for (int64_t b = 0; b < N; b++) {
      double v = zero_infinity && nv[b] == INFINITY ? 0.0 : nv[b];
      if (each) yv[b] = (T)v;
      else total += red == PT_REDUCE_MEAN ? v / (double)(p->tl[b] > 1 ? p->tl[b] : 1) : v;
    }
    /* the mean of no sequences is 0/0 = nan, as PyTorch's */
    if (!each) yv[0] = (T)(red == PT_REDUCE_MEAN ? total / (double)N : total);
  });
  pt_node *node;
  if ((st = pt_autograd_record(ctx, y, "CtcLossBackward", ctc_loss_backward, 1, &log_probs, &node))) goto fail;
  if (node) {
    pt_node_save(node, 0, lpc);
    pt_node_save(node, 1, alpha);
    pt_node_save(node, 2, nll);
    lpc = alpha = nll = NULL;
    node->extra = p;
    node->free_extra = pt_free;
    p = NULL;
    node->ints[0] = red;
    node->ints[1] = zero_infinity;
    node->n_ints = 2;
  }
  pt_tensor_release(lpc);
  pt_tensor_release(alpha);
  pt_tensor_release(nll);
  pt_free(p);
  *out = y;
  return PT_OK;
fail:
  pt_tensor_release(lpc);
  pt_tensor_release(alpha);
  pt_tensor_release(nll);
  pt_tensor_release(y);
  pt_free(p);
  return st;
}
