/* Connectionist temporal classification loss (PyTorch 1.13's F.ctc_loss / nn.CTCLoss), forward
 * and backward fused in C. Class indices are 1-based, as everywhere in partrain: the blank is a
 * class index in 1..C and the targets hold classes 1..C other than the blank. */
#ifndef PT_NN_CTC_H
#define PT_NN_CTC_H

#include "nn.h"

/* The negative log likelihood of each target sequence under the per-frame log-probabilities,
 * summed over every alignment (the alpha recursion in log space), then reduced:
 *   log_probs {T,N,C} (or {T,C}: one unbatched sequence), float32 or float64, normally
 *     log_softmax outputs;
 *   targets of an integer dtype: {N,S} padded (row b's first target_lengths[b] entries; the rest
 *     is ignored) or 1-D, the N sequences concatenated (sum(target_lengths) entries);
 *   input_lengths[n_input] and target_lengths[n_target], one per sequence, in 0..T and 0..S;
 *   blank: the 1-based blank class; zero_infinity: an impossible sequence (no alignment fits
 *     its input length) has loss 0 and gradient 0 instead of inf and NaN.
 * red: PT_REDUCE_NONE gives {N} (0-d unbatched), PT_REDUCE_SUM the sum, PT_REDUCE_MEAN the mean
 * over the batch of each loss divided by max(its target length, 1), as PyTorch.
 * The gradient is PyTorch's: exp(log_probs) - (alignment posteriors), which equals the true
 * gradient once it has passed back through a log_softmax (it assumes normalised log_probs).
 * Sequences are split over the intra-op threads. fname names the caller in messages. */
pt_status pt_nn_ctc_loss(pt_ctx *ctx, const char *fname, pt_tensor *log_probs, pt_tensor *targets,
                         int64_t n_input, const int64_t *input_lengths, int64_t n_target,
                         const int64_t *target_lengths, int64_t blank, pt_reduction red,
                         bool zero_infinity, pt_tensor **out);

#endif
