/* Optimizer update kernels (PyTorch's formulas), one in-place pass over a parameter.
 * The Lua binding (host/l_optim.c) calls these for every parameter of a group in one C call.
 * Parameters and state tensors are contiguous float32/float64 of the parameter's shape (the
 * bindings step a contiguous copy of a non-contiguous parameter);
 * a non-contiguous gradient is copied first. fname names the optimizer in messages. */
#ifndef PT_OPTIM_H
#define PT_OPTIM_H

#include "tensor.h"

typedef struct pt_sgd_opts {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
} pt_sgd_opts;

/* buf may be NULL when momentum == 0; buf_init: first step (buf = gradient, no dampening) */
pt_status pt_optim_sgd(pt_ctx *ctx, pt_tensor *param, pt_tensor *grad, pt_tensor *buf,
                       bool buf_init, const pt_sgd_opts *o);

/* One parameter of pt_optim_sgd_many: as pt_optim_sgd's arguments. */
typedef struct pt_sgd_item {
  pt_tensor *param, *grad, *buf;
  bool buf_init;
} pt_sgd_item;
/* pt_optim_sgd on every item with one split of all their elements over the intra-op threads
 * (the same numbers: the update is element-wise). */
pt_status pt_optim_sgd_many(pt_ctx *ctx, const pt_sgd_item *items, int n, const pt_sgd_opts *o);

/* Zeroes n gradient tensors (optimizers' zero_grad) with the split of pt_optim_sgd_many over
 * the same tensors, and bumps their versions. */
pt_status pt_optim_zero_grads(pt_ctx *ctx, pt_tensor *const *grads, int n);

/* The same update on elements [lo, hi) of a contiguous param, grad (same dtype) and buf (or
 * NULL), then grad[lo, hi) = 0 when zero_grad: the dispatcher steps one slice per worker.
 * No checks, no version bumps (the caller does both). */
void pt_optim_sgd_range(pt_tensor *param, pt_tensor *grad, pt_tensor *buf, bool buf_init,
                        const pt_sgd_opts *o, int64_t lo, int64_t hi, bool zero_grad);
/* SGD without momentum on n elements p[0..n) whose gradient is the sum of nf scaled vectors,
 * (((0 + s[0] x[0][i]) + s[1] x[1][i]) + ...), each product rounded before it is added (this
 * file is built with -ffp-contract=off): the value a dense buffer of those products would give,
 * so the update is bitwise that of pt_optim_sgd_raw on the summed gradient. Terms with s == 0
 * are skipped (adding 0 changes no sum that starts at +0). */
void pt_optim_sgd_scaled(pt_dtype dt, void *p, const void *const *x, const double *s, int nf,
                         const pt_sgd_opts *o, int64_t n);
/* pt_optim_sgd_scaled over every row of a rows x cols parameter (or a block of its rows) whose
 * gradient is a sum of nf rank-1 terms g[j] (rows elements) times x[j] (cols): row r gets the
 * terms with g[j][r] != 0, in order (bitwise the same updates). Rows with no term are left
 * alone when skip_dead (plain SGD: no decay, no maximize), else decayed. One call for the
 * whole block: the per-row calls' set-up was a tenth of par_by_sample's per-sample step. */
#define PT_SGD_RANK_MAX 256 /* nf limit of pt_optim_sgd_rank_rows (par_by_sample's slots) */
void pt_optim_sgd_rank_rows(pt_dtype dt, void *p, int64_t rows, int64_t cols,
                            const void *const *g, const void *const *x, int nf,
                            const pt_sgd_opts *o, bool skip_dead);
/* The same on raw arrays of n elements of dtype dt (p, g, buf or NULL, already offset); g2,
 * when not NULL, is added to g first (the gradient is g[i] + g2[i]). */
void pt_optim_sgd_raw(pt_dtype dt, void *p, const void *g, const void *g2, void *buf,
                      bool buf_init, const pt_sgd_opts *o, int64_t n);

typedef struct pt_adam_opts {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, decoupled /* AdamW */, maximize;
} pt_adam_opts;

/* step is the step count after this step (1 on the first); max_sq only with amsgrad */
pt_status pt_optim_adam(pt_ctx *ctx, pt_tensor *param, pt_tensor *grad, pt_tensor *exp_avg,
                        pt_tensor *exp_avg_sq, pt_tensor *max_sq, int64_t step,
                        const pt_adam_opts *o);

typedef struct pt_rmsprop_opts {
  double lr, alpha, eps, weight_decay, momentum;
  bool centered, maximize;
} pt_rmsprop_opts;

/* grad_avg only when centered, buf only when momentum > 0 */
pt_status pt_optim_rmsprop(pt_ctx *ctx, pt_tensor *param, pt_tensor *grad, pt_tensor *square_avg,
                           pt_tensor *grad_avg, pt_tensor *buf, const pt_rmsprop_opts *o);

typedef struct pt_adagrad_opts {
  double lr, lr_decay, weight_decay, eps;
  bool maximize;
} pt_adagrad_opts;

pt_status pt_optim_adagrad(pt_ctx *ctx, pt_tensor *param, pt_tensor *grad, pt_tensor *state_sum,
                           int64_t step, const pt_adagrad_opts *o);

/* Adamax, NAdam, RAdam and Adadelta: PyTorch 1.13's single-tensor formulas (NAdam: PyTorch 2's
 * mu_product_next, see optim.NAdam's help). step is the step
 * count after this step (1 on the first). */
typedef struct pt_adamax_opts {
  double lr, beta1, beta2, eps, weight_decay;
  bool maximize;
} pt_adamax_opts;

pt_status pt_optim_adamax(pt_ctx *ctx, pt_tensor *param, pt_tensor *grad, pt_tensor *exp_avg,
                          pt_tensor *exp_inf, int64_t step, const pt_adamax_opts *o);

typedef struct pt_nadam_opts {
  double lr, beta1, beta2, eps, weight_decay, momentum_decay;
} pt_nadam_opts;

/* *mu_product: the product of the momentum schedule so far (1 before the first step), updated */
pt_status pt_optim_nadam(pt_ctx *ctx, pt_tensor *param, pt_tensor *grad, pt_tensor *exp_avg,
                         pt_tensor *exp_avg_sq, int64_t step, double *mu_product,
                         const pt_nadam_opts *o);

typedef struct pt_radam_opts {
  double lr, beta1, beta2, eps, weight_decay;
} pt_radam_opts;

pt_status pt_optim_radam(pt_ctx *ctx, pt_tensor *param, pt_tensor *grad, pt_tensor *exp_avg,
                         pt_tensor *exp_avg_sq, int64_t step, const pt_radam_opts *o);

typedef struct pt_adadelta_opts {
  double lr, rho, eps, weight_decay;
  bool maximize;
} pt_adadelta_opts;

pt_status pt_optim_adadelta(pt_ctx *ctx, pt_tensor *param, pt_tensor *grad, pt_tensor *square_avg,
                            pt_tensor *acc_delta, const pt_adadelta_opts *o);

/* Checks used by the bindings: t is a usable parameter / state tensor for param. A parameter may
 * be non-contiguous: the bindings step a contiguous copy (the kernels' work tensor) and write it
 * back with pt_optim_write_back (param = work, its version bumped). */
pt_status pt_optim_check_param(pt_ctx *ctx, const char *fname, int index, pt_tensor *param);
pt_status pt_optim_check_state(pt_ctx *ctx, const char *fname, const char *what, int index,
                               pt_tensor *param, pt_tensor *state);

pt_status pt_optim_write_back(pt_ctx *ctx, pt_tensor *param, pt_tensor *work);

/* Norm helpers for clip_grad_norm: acc += sum |g|^p (p finite) or acc = max(acc, max|g|). */
pt_status pt_optim_norm_acc(pt_ctx *ctx, pt_tensor *g, double p, double *acc);
/* t *= s in place */
pt_status pt_optim_scale_(pt_ctx *ctx, pt_tensor *t, double s);
/* clamp every element of t into [-v, v] */
pt_status pt_optim_clamp_(pt_ctx *ctx, pt_tensor *t, double v);

#endif
