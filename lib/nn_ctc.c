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
 * log_probs, exactly as PyTorch's (NaN where it gives NaN: an impossible sequence, a class of
 * log-probability -inf). Every sum is taken in float64 whatever the input's dtype.
 * States that cannot be reached from the start by frame t (s >= 2t+2) or cannot reach the end
 * from it (s < W - 2(T_b - t)) are skipped (left -inf): their alpha + beta is -inf either way,
 * so the values are the full recursion's.
 * Speed: a frame's states depend only on the frame before, so a row is one vector loop (4
 * lanes of float64 with SLEEF's exp and log where the CPU has AVX2 and FMA, checked at run time)
 * over rows padded with two -inf on either side (the s-1, s-2, s+1, s+2 neighbours need no
 * tests) and a per-state 0/-inf term for the skip condition. The gradient's sums over the states
 * of one class use one max and one exp per state (not a log-add each), and the classes outside
 * the target take exp(log_probs) alone, so a frame costs C exps (vectorised) plus O(L).
 * Sequences are independent: the batch is split over the intra-op threads, each sequence's work
 * done by one thread into its own rows, so nothing depends on the thread count. The forward
 * keeps every alpha row for the backward when a graph is recorded (saved, float64), else two
 * rows per thread. */
#include "nn_ctc.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "dispatch.h"
#include "nn_impl.h"
#include "parallel.h"
#include "simd_math.h"

#define CTC_GRAIN 16384 /* alignment states (frames x extended target length) per chunk, at least */
#define CTC_PAD 2       /* -inf entries on either side of a row */

/* What the checks learned about the batch: the forward's plan and the backward's (node->extra,
 * one block: the arrays follow the struct) */
typedef struct ctc_plan {
  int64_t T, N, C, blank; /* blank 0-based */
  int64_t W_max;          /* the widest 2L+1 */
  int64_t *il, *tl;       /* {N} input and target lengths */
  int64_t *tg_off;        /* {N} where each target starts in tg */
  int64_t *alpha_off;     /* {N} where each sequence's alphas (il padded rows) start */
  int64_t *tg;            /* the targets one after another, 0-based classes */
} ctc_plan;

typedef struct ctc_job {
  const ctc_plan *p;
  pt_dtype dt;
  bool simd;           /* AVX2 + FMA: SLEEF's 4-lane exp and log */
  const void *lp;      /* {T,N,C} contiguous */
  double *alpha;       /* the saved alphas, or NULL (the forward then uses two scratch rows) */
  void *scratch;       /* per thread: scratch_per 8-byte words (see ctc_work) */
  int64_t scratch_per;
  double *nll;         /* {N}: -log p of each sequence, inf when no alignment fits */
  /* backward */
  const double *g;     /* the output gradient, float64 */
  bool g_each;         /* one per sequence (reduction none), else one for all */
  bool mean;           /* each sequence's gradient / (N max(L, 1)) */
  bool zero_infinity;
  void *grad;          /* {T,N,C} of dtype dt */
} ctc_job;

/* A thread's scratch, carved from its part of job->scratch (W = W_max) */
typedef struct ctc_work {
  int64_t *cls;      /* {W} l'[s] */
  double *pen;       /* {W+2} 0 where alpha[t][s] may come from s-2 (l'[s] != l'[s-2]), else -inf */
  double *lpv;       /* {W} log_probs of the frame at l'[s] */
  double *rows;      /* two padded rows: the forward's when nothing is saved, the backward's beta */
  /* backward */
  int64_t *slot;     /* {W} which of the target's distinct classes l'[s] is */
  int64_t *slot_cls; /* {W} the distinct classes */
  int64_t *seen;     /* {C} class -> slot + 1 (0: not in the target), cleared after each sequence */
  double *ab;        /* {W} alpha + beta of a frame */
  double *mx, *sm;   /* {W} per slot: the max of ab and the sum of exp(ab - max) */
  double *ex;        /* {C} exp(log_probs) of a frame */
} ctc_work;

static int64_t ctc_work_words(int64_t W, int64_t C, bool backward) {
  int64_t n = W + (W + 2) + W + 2 * (W + 2 * CTC_PAD);
  return backward ? n + 2 * W + C + 3 * W + C : n;
}

static ctc_work ctc_work_at(const ctc_job *j, int tid, bool backward) {
  int64_t W = j->p->W_max, C = j->p->C;
  int64_t *w = (int64_t *)j->scratch + (int64_t)tid * j->scratch_per;
  ctc_work k = {0};
  k.cls = w, w += W;
  k.pen = (double *)w, w += W + 2;
  k.lpv = (double *)w, w += W;
  k.rows = (double *)w, w += 2 * (W + 2 * CTC_PAD);
  if (backward) {
    k.slot = w, w += W;
    k.slot_cls = w, w += W;
    k.seen = w, w += C;
    k.ab = (double *)w, w += W;
    k.mx = (double *)w, w += W;
    k.sm = (double *)w, w += W;
    k.ex = (double *)w;
  }
  return k;
}

/* l'[s] and the skip terms of sequence b */
static void ctc_extend(const ctc_plan *p, int64_t b, const ctc_work *k) {
  const int64_t *tg = p->tg + p->tg_off[b];
  int64_t W = 2 * p->tl[b] + 1;
  for (int64_t s = 0; s < W; s++) {
    k->cls[s] = (s & 1) ? tg[s >> 1] : p->blank;
    k->pen[s] = (s & 1) && s >= 2 && k->cls[s] != k->cls[s - 2] ? 0.0 : -INFINITY;
  }
  k->pen[W] = k->pen[W + 1] = -INFINITY;
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

/* A padded row of W states whose [lo, hi) is about to be written: -inf elsewhere */
static inline void ctc_row_edges(double *row, int64_t W, int64_t lo, int64_t hi) {
  if (hi < lo) hi = lo;
  ctc_fill_neginf(row - CTC_PAD, lo + CTC_PAD);
  ctc_fill_neginf(row + hi, W + CTC_PAD - hi);
}

/* log(exp(a) + exp(b) + exp(c)) around the max m, as PyTorch takes it; exp(m - m) = 1 needs no
 * exp: the other two are min(a, b) and min(max(a, b), c) */
static inline double ctc_lse3(double a, double b, double c) {
  double hi = a > b ? a : b, lo = a > b ? b : a;
  double m = hi > c ? hi : c, mid = hi > c ? c : hi;
  if (m == -INFINITY) return -INFINITY;
  return log(1.0 + exp(lo - m) + exp(mid - m)) + m;
}

/* out[i] = lse(a[i], b[i], c[i] + pen[i]) + add[i] */
static void ctc_lse3_row(const double *a, const double *b, const double *c, const double *pen,
                         const double *add, double *out, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = ctc_lse3(a[i], b[i], c[i] + pen[i]) + add[i];
}

__attribute__((target("avx2,fma"))) static void ctc_lse3_row_v4(const double *a, const double *b, const double *c,
                                                               const double *pen, const double *add, double *out,
                                                               int64_t n) {
  const __m256d ninf = _mm256_set1_pd(-INFINITY), zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256d va = _mm256_loadu_pd(a + i), vb = _mm256_loadu_pd(b + i);
    __m256d vc = _mm256_add_pd(_mm256_loadu_pd(c + i), _mm256_loadu_pd(pen + i));
    __m256d hi = _mm256_max_pd(va, vb), lo = _mm256_min_pd(va, vb);
    __m256d m = _mm256_max_pd(hi, vc), mid = _mm256_min_pd(hi, vc);
    __m256d none = _mm256_cmp_pd(m, ninf, _CMP_EQ_OQ); /* all three -inf */
    __m256d mm = _mm256_blendv_pd(m, zero, none);       /* no -inf - -inf */
    __m256d s = _mm256_add_pd(_mm256_add_pd(one, Sleef_expd4_u10avx2(_mm256_sub_pd(lo, mm))),
                              Sleef_expd4_u10avx2(_mm256_sub_pd(mid, mm)));
    __m256d r = _mm256_blendv_pd(_mm256_add_pd(Sleef_logd4_u10avx2(s), m), ninf, none);
    _mm256_storeu_pd(out + i, _mm256_add_pd(r, _mm256_loadu_pd(add + i)));
  }
  ctc_lse3_row(a + i, b + i, c + i, pen + i, add + i, out + i, n - i);
}

/* x[i] = exp(x[i]) */
static void ctc_exp_row(double *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) x[i] = exp(x[i]);
}

__attribute__((target("avx2,fma"))) static void ctc_exp_row_v4(double *x, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm256_storeu_pd(x + i, Sleef_expd4_u10avx2(_mm256_loadu_pd(x + i)));
  ctc_exp_row(x + i, n - i);
}

static void ctc_forward_chunk(void *arg, int64_t b0, int64_t b1, int tid) {
  const ctc_job *j = arg;
  const ctc_plan *p = j->p;
  ctc_work k = ctc_work_at(j, tid, false);
  int64_t C = p->C, blank = p->blank, rs = p->N * C;
  PT_DISPATCH_FLOAT(j->dt, {
    for (int64_t b = b0; b < b1; b++) {
      int64_t il = p->il[b], L = p->tl[b], W = 2 * L + 1, RW = W + 2 * CTC_PAD;
      const T *lp = (const T *)j->lp + b * C; /* frame t: lp + t * rs */
      if (il == 0) { /* no frames: only the empty target has an alignment */
        j->nll[b] = L == 0 ? 0.0 : INFINITY;
        continue;
      }
      ctc_extend(p, b, &k);
      double *a0 = (j->alpha ? j->alpha + p->alpha_off[b] : k.rows) + CTC_PAD;
      double *row = a0;
      ctc_fill_neginf(row - CTC_PAD, RW);
      row[0] = lp[blank];
      if (L > 0) row[1] = lp[k.cls[1]];
      for (int64_t t = 1; t < il; t++) {
        const double *prev = row;
        row = a0 + (j->alpha ? t : (t & 1)) * RW;
        const T *lpt = lp + t * rs;
        int64_t lo, hi;
        ctc_window(t, il, W, &lo, &hi);
        ctc_row_edges(row, W, lo, hi);
        for (int64_t s = lo; s < hi; s++) k.lpv[s] = (double)lpt[k.cls[s]];
        if (hi > lo)
          (j->simd ? ctc_lse3_row_v4 : ctc_lse3_row)(prev + lo, prev + lo - 1, prev + lo - 2, k.pen + lo,
                                                      k.lpv + lo, row + lo, hi - lo);
      }
      /* an empty target ends in its one blank state, any other in its last label or blank */
      j->nll[b] = L == 0 ? -row[0] : -ctc_lse3(row[W - 1], row[W - 2], -INFINITY);
    }
  });
}

static void ctc_backward_chunk(void *arg, int64_t b0, int64_t b1, int tid) {
  const ctc_job *j = arg;
  const ctc_plan *p = j->p;
  ctc_work k = ctc_work_at(j, tid, true);
  int64_t T_all = p->T, N = p->N, C = p->C, blank = p->blank, rs = N * C;
  memset(k.seen, 0, (size_t)C * sizeof(int64_t));
  PT_DISPATCH_FLOAT(j->dt, {
    for (int64_t b = b0; b < b1; b++) {
      int64_t il = p->il[b], L = p->tl[b], W = 2 * L + 1, RW = W + 2 * CTC_PAD;
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
      ctc_extend(p, b, &k);
      int64_t K = 0; /* the target's distinct classes, blank first */
      for (int64_t s = 0; s < W; s++) {
        int64_t c = k.cls[s];
        if (!k.seen[c]) k.slot_cls[K] = c, k.seen[c] = ++K;
        k.slot[s] = k.seen[c] - 1;
      }
      const double *alpha = j->alpha + p->alpha_off[b] + CTC_PAD;
      double *next = NULL;
      for (int64_t t = il - 1; t >= 0; t--) {
        double *cur = k.rows + CTC_PAD + (t & 1) * RW;
        const T *lpt = lp + t * rs;
        int64_t lo, hi;
        ctc_window(t, il, W, &lo, &hi);
        if (t == il - 1) { /* the two end states, as beta's initialisation */
          ctc_fill_neginf(cur - CTC_PAD, RW);
          cur[W - 1] = lpt[blank];
          if (L > 0) cur[W - 2] = lpt[k.cls[W - 2]];
        } else {
          ctc_row_edges(cur, W, lo, hi);
          for (int64_t s = lo; s < hi; s++) k.lpv[s] = (double)lpt[k.cls[s]];
          /* beta may skip from s to s+2 when alpha may skip from s to s+2: pen[s+2] */
          if (hi > lo)
            (j->simd ? ctc_lse3_row_v4 : ctc_lse3_row)(next + lo, next + lo + 1, next + lo + 2, k.pen + lo + 2,
                                                        k.lpv + lo, cur + lo, hi - lo);
        }
        /* per class: lse over its states of alpha + beta, as max + log(sum of exp(ab - max)) */
        const double *at = alpha + t * RW;
        for (int64_t q = 0; q < K; q++) k.mx[q] = -INFINITY, k.sm[q] = 0;
        for (int64_t s = lo; s < hi; s++) {
          double v = at[s] + cur[s];
          k.ab[s] = v;
          if (v > k.mx[k.slot[s]]) k.mx[k.slot[s]] = v;
        }
        for (int64_t s = lo; s < hi; s++) {
          double m = k.mx[k.slot[s]];
          k.ab[s] -= m == -INFINITY ? 0 : m;
        }
        if (hi > lo) (j->simd ? ctc_exp_row_v4 : ctc_exp_row)(k.ab + lo, hi - lo);
        for (int64_t s = lo; s < hi; s++) k.sm[k.slot[s]] += k.ab[s];
        /* exp(lp) - exp(lcab + nll - lp) per class: lcab is -inf outside the target, where the
         * second term is 0 unless nll - lp is inf or NaN (PyTorch then gives NaN: -inf + inf) */
        for (int64_t c = 0; c < C; c++) k.ex[c] = (double)lpt[c];
        (j->simd ? ctc_exp_row_v4 : ctc_exp_row)(k.ex, C);
        T *gt = gb + t * rs;
        for (int64_t c = 0; c < C; c++) {
          double x = nll - (double)lpt[c];
          gt[c] = (T)((k.ex[c] - (x == INFINITY || x != x ? NAN : 0.0)) * gr);
        }
        for (int64_t q = 0; q < K; q++) {
          int64_t c = k.slot_cls[q];
          double lcab = k.mx[q] == -INFINITY ? -INFINITY : k.mx[q] + log(k.sm[q]);
          double l = (double)lpt[c];
          gt[c] = (T)((k.ex[c] - exp(lcab + nll - l)) * gr);
        }
        next = cur;
      }
      for (int64_t q = 0; q < K; q++) k.seen[k.slot_cls[q]] = 0;
    }
  });
}

static pt_status ctc_run(pt_ctx *ctx, ctc_job *job, pt_parallel_fn fn, bool backward, int64_t states) {
  const ctc_plan *p = job->p;
  if (p->N == 0) return PT_OK;
  int nth = pt_parallel_threads(ctx);
  job->simd = simd_f8();
  job->scratch_per = ctc_work_words(p->W_max, p->C, backward);
  if (!(job->scratch = pt_alloc(ctx, (size_t)(nth * job->scratch_per) * sizeof(int64_t)))) return PT_ENOMEM;
  int64_t per_seq = states / p->N + 1;
  pt_parallel_for(ctx, p->N, per_seq >= CTC_GRAIN ? 1 : CTC_GRAIN / per_seq, fn, job);
  pt_free(job->scratch);
  job->scratch = NULL;
  return PT_OK;
}

/* saved: 0 log_probs (contiguous), 1 the alphas (float64, each sequence's il padded rows of
 * 2L+1+2*CTC_PAD one after another; see alpha_off), 2 the losses before zero_infinity {N}
 * (float64); extra: the plan; ints: 0 reduction, 1 zero_infinity */
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
  if ((st = ctc_run(ctx, &job, ctc_backward_chunk, true, pt_tensor_numel(alpha)))) goto fail;
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
    aoff += il[b] * (W + 2 * CTC_PAD);
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
  for (int64_t b = 0; b < N; b++) states += p->il[b] * (2 * p->tl[b] + 1 + 2 * CTC_PAD);
  pt_tensor *lpc = NULL, *alpha = NULL, *nll = NULL, *y = NULL;
  if ((st = pt_tensor_contiguous_raw(ctx, log_probs, &lpc))) goto fail;
  if ((st = pt_tensor_empty(ctx, PT_FLOAT64, 1, &N, &nll))) goto fail;
  if (keep && (st = pt_tensor_empty(ctx, PT_FLOAT64, 1, &states, &alpha))) goto fail;
  ctc_job job = {.p = p, .dt = log_probs->dtype, .lp = pt_tensor_data(lpc),
                 .alpha = alpha ? pt_tensor_data(alpha) : NULL, .nll = pt_tensor_data(nll)};
  if ((st = ctc_run(ctx, &job, ctc_forward_chunk, false, states))) goto fail;
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
