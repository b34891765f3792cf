/* lib/nn_ctc.c: the alpha recursion and the alpha-beta gradient against a brute-force
 * enumeration of every alignment (all C^T frame labellings, collapsed: repeats merged, then
 * blanks dropped) on tiny cases, in float64 and float32, plus an error. */
#include <math.h>
#include <string.h>

#include "autograd.h"
#include "nn_ctc.h"
#include "tensor.h"
#include "testing.h"

enum { T = 5, N = 5, C = 3 };

/* log-probabilities: a log_softmax of 2 sin(0.9 i + 0.4) over each frame's C classes */
static void fill_log_probs(double lp[T][N][C]) {
  for (int t = 0; t < T; t++)
    for (int b = 0; b < N; b++) {
      double m = 0, s = 0;
      for (int c = 0; c < C; c++) lp[t][b][c] = 2 * sin(0.9 * ((t * N + b) * C + c) + 0.4);
      for (int c = 0; c < C; c++) s += exp(lp[t][b][c] - m);
      for (int c = 0; c < C; c++) lp[t][b][c] -= m + log(s);
    }
}

/* Does the labelling pi (il frames, 0-based classes) collapse to tg (L labels)? */
static int collapses_to(const int *pi, int il, int blank, const int *tg, int L) {
  int n = 0;
  for (int t = 0; t < il; t++) {
    if (pi[t] == blank || (t > 0 && pi[t] == pi[t - 1])) continue;
    if (n >= L || pi[t] != tg[n]) return 0;
    n++;
  }
  return n == L;
}

/* Sequence b by enumeration: -log p, and PyTorch's gradient exp(lp) - (1/p) sum over the
 * alignments through label c at frame t of their probability (0 from frame il on) */
static double brute_force(double lp[T][N][C], int b, int il, int blank, const int *tg, int L,
                          double grad[T][C]) {
  double post[T][C] = {{0}}, p = 0;
  int total = 1;
  for (int t = 0; t < il; t++) total *= C;
  for (int k = 0; k < total; k++) {
    int pi[T], r = k;
    for (int t = 0; t < il; t++, r /= C) pi[t] = r % C;
    if (!collapses_to(pi, il, blank, tg, L)) continue;
    double lw = 0;
    for (int t = 0; t < il; t++) lw += lp[t][b][pi[t]];
    double w = exp(lw);
    p += w;
    for (int t = 0; t < il; t++) post[t][pi[t]] += w;
  }
  for (int t = 0; t < T; t++)
    for (int c = 0; c < C; c++) grad[t][c] = t < il ? exp(lp[t][b][c]) - post[t][c] / p : 0;
  return -log(p);
}

static void test_against_enumeration(pt_ctx *ctx, pt_dtype dt, double tol) {
  static double lp[T][N][C];
  fill_log_probs(lp);
  /* 1-based targets (blank 1): two labels, a repeat (needs a blank between), one label with a
   * shorter input, an empty target, and a target that cannot fit (a label three times in 4
   * frames: needs 5) */
  const int64_t il[N] = {5, 5, 3, 4, 4}, tl[N] = {2, 2, 1, 0, 3};
  const double tg1[N][3] = {{2, 3, 0}, {3, 3, 0}, {2, 0, 0}, {0, 0, 0}, {2, 2, 2}};
  pt_tensor *x = NULL, *tg = NULL, *loss = NULL;
  CHECK(pt_tensor_empty(ctx, dt, 3, (int64_t[]){T, N, C}, &x) == PT_OK);
  CHECK(pt_tensor_empty(ctx, PT_INT64, 2, (int64_t[]){N, 3}, &tg) == PT_OK);
  for (int i = 0; i < T * N * C; i++) pt_tensor_set_flat(x, i, (&lp[0][0][0])[i]);
  for (int i = 0; i < N * 3; i++) pt_tensor_set_flat(tg, i, (&tg1[0][0])[i]);
  x->requires_grad = true;
  CHECK(pt_nn_ctc_loss(ctx, "ctc_loss", x, tg, N, il, N, tl, 1, PT_REDUCE_NONE, false, &loss) == PT_OK);
  CHECK(loss->ndim == 1 && loss->shape[0] == N && loss->dtype == dt);
  pt_tensor *w = NULL; /* the backward's weights: sequence b's gradient scaled by b + 1 */
  CHECK(pt_tensor_empty(ctx, dt, 1, (int64_t[]){N}, &w) == PT_OK);
  for (int b = 0; b < N; b++) pt_tensor_set_flat(w, b, b + 1);
  /* the impossible sequence's gradient is NaN (0/0 as PyTorch's): leave it out of this pass */
  pt_tensor_set_flat(w, 4, 0);
  CHECK(pt_backward(ctx, loss, w, false) == PT_OK);
  CHECK(x->grad != NULL);
  for (int b = 0; b < N; b++) {
    int tgi[3];
    for (int i = 0; i < 3; i++) tgi[i] = (int)tg1[b][i] - 1;
    double g[T][C];
    double want = brute_force(lp, b, (int)il[b], 0, tgi, (int)tl[b], g);
    double got = pt_tensor_get_flat(loss, b);
    if (b == 4) {
      CHECK(isinf(want) && want > 0);
      CHECK(isinf(got) && got > 0);
      continue;
    }
    CHECK_NEAR(got, want, tol * fmax(1, fabs(want)));
    for (int t = 0; t < T; t++)
      for (int c = 0; c < C; c++) {
        /* the gradient's frame t, sequence b, class c; scaled by the weight b + 1 (0 from il on) */
        double gv = pt_tensor_get_flat(x->grad, (t * N + b) * C + c);
        CHECK_NEAR(gv, (b + 1) * g[t][c], tol);
      }
  }
  pt_tensor_release(w);
  pt_tensor_release(loss);
  /* mean: each loss / its target length (at least 1), over the batch; zero_infinity drops the
   * impossible one */
  CHECK(pt_nn_ctc_loss(ctx, "ctc_loss", x, tg, N, il, N, tl, 1, PT_REDUCE_MEAN, true, &loss) == PT_OK);
  double mean = 0;
  for (int b = 0; b < 4; b++) {
    int tgi[3];
    for (int i = 0; i < 3; i++) tgi[i] = (int)tg1[b][i] - 1;
    double g[T][C];
    mean += brute_force(lp, b, (int)il[b], 0, tgi, (int)tl[b], g) / (double)(tl[b] > 1 ? tl[b] : 1);
  }
  CHECK(loss->ndim == 0);
  CHECK_NEAR(pt_tensor_get_flat(loss, 0), mean / N, tol);
  pt_tensor_release(loss);
  pt_tensor_release(tg);
  pt_tensor_release(x);
}

/* blank = class 3 (the last): the same enumeration with another blank */
static void test_other_blank(pt_ctx *ctx) {
  static double lp[T][N][C];
  fill_log_probs(lp);
  const int64_t il[1] = {5}, tl[1] = {3};
  pt_tensor *x = NULL, *tg = NULL, *loss = NULL;
  CHECK(pt_tensor_empty(ctx, PT_FLOAT64, 2, (int64_t[]){T, C}, &x) == PT_OK); /* unbatched */
  for (int t = 0; t < T; t++)
    for (int c = 0; c < C; c++) pt_tensor_set_flat(x, t * C + c, lp[t][2][c]);
  CHECK(pt_tensor_empty(ctx, PT_INT32, 1, (int64_t[]){3}, &tg) == PT_OK);
  pt_tensor_set_flat(tg, 0, 1);
  pt_tensor_set_flat(tg, 1, 2);
  pt_tensor_set_flat(tg, 2, 1);
  CHECK(pt_nn_ctc_loss(ctx, "ctc_loss", x, tg, 1, il, 1, tl, 3, PT_REDUCE_NONE, false, &loss) == PT_OK);
  CHECK(loss->ndim == 0);
  static double lp1[T][N][C];
  for (int t = 0; t < T; t++)
    for (int c = 0; c < C; c++) lp1[t][0][c] = lp[t][2][c];
  double g[T][C];
  double want = brute_force(lp1, 0, 5, 2, (const int[]){0, 1, 0}, 3, g);
  CHECK_NEAR(pt_tensor_get_flat(loss, 0), want, 1e-12 * fabs(want));
  pt_tensor_release(loss);
  /* a target holding the blank is refused, naming the position (1-based) */
  pt_tensor_set_flat(tg, 1, 3);
  CHECK(pt_nn_ctc_loss(ctx, "ctc_loss", x, tg, 1, il, 1, tl, 3, PT_REDUCE_NONE, false, &loss) == PT_EARG);
  CHECK(strcmp(pt_errmsg(ctx), "ctc_loss: targets[2] is 3, the blank class (targets must not contain the blank)") == 0);
  pt_tensor_release(tg);
  pt_tensor_release(x);
}

int main(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  test_against_enumeration(&ctx, PT_FLOAT64, 1e-12);
  test_against_enumeration(&ctx, PT_FLOAT32, 2e-6);
  test_other_blank(&ctx);
  return TEST_SUMMARY();
}
