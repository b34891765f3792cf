/* Random sampling beyond uniform/normal/randint fills (lib/tensor.h): PyTorch's in-place
 * distributions (bernoulli_, exponential_, geometric_, log_normal_, cauchy_, random_), bernoulli,
 * poisson and multinomial. Every draw comes from ctx->rng in element order, so pt.manual_seed
 * replays the same values; none of them records a gradient. */
#ifndef PT_OPS_RANDOM_H
#define PT_OPS_RANDOM_H

#include "tensor.h"

typedef enum pt_dist {
  PT_DIST_BERNOULLI,   /* a = p in [0, 1]: 1 with probability p, else 0 */
  PT_DIST_EXPONENTIAL, /* a = rate > 0 */
  PT_DIST_GEOMETRIC,   /* a = p in (0, 1]: trials up to the first success (1, 2, ...) */
  PT_DIST_LOG_NORMAL,  /* exp(N(a, b)), b > 0 */
  PT_DIST_CAUCHY,      /* a = median, b = scale > 0 */
} pt_dist;

/* t filled in place from the distribution (any dtype for bernoulli and geometric, floating
 * dtypes for the others); parameters out of range are errors naming fname. */
pt_status pt_random_fill_(pt_ctx *ctx, const char *fname, pt_tensor *t, pt_dist d, double a, double b);

/* t filled with integers in [lo, hi) (PyTorch's random_(from, to)); hi - lo must fit t's dtype */
pt_status pt_random_integers_(pt_ctx *ctx, const char *fname, pt_tensor *t, int64_t lo, int64_t hi);

/* t filled in place with 1 where a uniform draw is below the matching element of probs (float32
 * or float64, each in [0, 1], broadcast to t's shape), else 0 (PyTorch's t.bernoulli_(p_tensor));
 * any dtype for t. Errors name fname. */
pt_status pt_random_bernoulli_tensor_(pt_ctx *ctx, const char *fname, pt_tensor *t, pt_tensor *probs);

/* A new tensor of probs' shape and dtype: 1 where a uniform draw is below the element's
 * probability (each in [0, 1]). */
pt_status pt_random_bernoulli(pt_ctx *ctx, pt_tensor *probs, pt_tensor **out);

/* A new tensor of N(mean, std) draws, mean and std each a tensor (broadcast together) or, when
 * NULL, the number beside it; std >= 0. The dtype is the tensors' (float32 or float64). */
pt_status pt_random_normal(pt_ctx *ctx, pt_tensor *mean, double mean_v, pt_tensor *std, double std_v,
                           pt_tensor **out);

/* A new tensor of rates' shape and dtype: Poisson draws with those rates (each >= 0). */
pt_status pt_random_poisson(pt_ctx *ctx, pt_tensor *rates, pt_tensor **out);

/* Draws n category indices (0-based, int64) per row of weights (1-D: {n}; 2-D: {rows, n}), each
 * with probability proportional to its weight (>= 0, finite, a positive sum per row); without
 * replacement, n at most the row's count of nonzero weights, in the order a sequential draw
 * would pick them. */
pt_status pt_random_multinomial(pt_ctx *ctx, pt_tensor *weights, int64_t n, bool replacement,
                                pt_tensor **out);

#endif
