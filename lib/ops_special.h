/* Special functions (torch.special) and bitwise / integer ops.
 *
 * Special functions take float32 and float64 tensors; integer and bool inputs give float32
 * results, as PyTorch's default dtype. float32 is computed in double and rounded once (on CPUs
 * with AVX2, some of the double series are summed to fewer terms for float32, relative error
 * below 1e-10 before the rounding; see ops_special.c). Every one records an autograd node (when
 * grad mode is on and the input requires grad) whose backward is the derivative below;
 * create_graph passes use their formulas in lib/autograd.c.
 *
 *   lgamma      log |Gamma(x)|: +inf at 0 and the negative integers           d: digamma
 *   digamma     psi(x): -inf at +0, +inf at -0, nan at negative integers       d: polygamma(1)
 *   polygamma   psi^(n)(x), n >= 0 (n = 0: digamma); at a non-positive integer
 *               x and at -inf, (-1)^(n+1) inf (as PyTorch's Hurwitz zeta path)   d: polygamma(n+1)
 *   i0, i1      modified Bessel functions of the first kind, orders 0 and 1     d: i1, i0 - i1/x
 *   i0e, i1e    the same times exp(-|x|)
 *   ndtr        the standard normal CDF, log_ndtr its logarithm (accurate far into the lower
 *               tail), ndtri its inverse on [0, 1]
 *   entr        -x log x for x > 0, 0 at 0, -inf for x < 0
 *   mvlgamma    the multivariate log-gamma of dimension p >= 1:
 *               p(p-1)/4 log(pi) + sum_{i<p} lgamma(x - i/2)                    d: sum digamma
 *
 * Results follow PyTorch 1.13 except where its value is an artifact of its formulas (this file's
 * functions are written from the mathematics, not from PyTorch's code): i0 and i1 at +-inf are
 * +-inf (PyTorch: nan), polygamma(n >= 1) at +inf is (-1)^(n+1) 0 (PyTorch: nan for n >= 2),
 * polygamma(1) at a negative integer or -inf is +inf (PyTorch: 6.6e32 at -1, its sin(pi x) not
 * being exactly 0 there; nan at -inf), and ndtr keeps its lower tail (PyTorch's
 * (1 + erf(x / sqrt 2)) / 2 has no digits left below -8 and is 0 from -8.4 on; ndtr(-20) is
 * 2.75e-89 here), and digamma keeps its digits near its zero 1.4616 (PyTorch's recurrence
 * cancels there: 1.7e-13 off at 1.46, 1e-9 at 1.4616325). float32 results are the double results
 * rounded, often closer than PyTorch's float arithmetic.
 *
 * xlog1py(x, y) = x log(1 + y), 0 where x == 0 (nan where y is nan), broadcasting like every
 * binary op, a number on either side; integers give float32.
 *
 * Bitwise ops take bool and integer tensors (bitwise_and/or/xor/not) or integer tensors (the
 * shifts); floating operands are an error naming the op and dtype ("bitwise_and: not supported
 * for float32 tensors"). Dtypes promote as PyTorch's (a Lua integer keeps an integer tensor's
 * dtype, with its low bits: uint8 & -1 is uint8 & 255; a bool tensor with an integer is int64).
 * Shifts by a negative amount or by the dtype's width or more give 0 (left) or the sign fill
 * (right), as PyTorch >= 2.1 defines them (1.13's result there is C's undefined behaviour).
 * logical_xor takes any dtypes (nonzero is true) and gives bool.
 *
 * In-place forms (name ending in `_`) compute the result, check that it can be cast to self's
 * dtype ("lgamma_: result type float32 can't be cast to the desired output type int64") and
 * copy it into self through pt_copy_ (so views and autograd behave as for copy_). */
#ifndef PT_OPS_SPECIAL_H
#define PT_OPS_SPECIAL_H

#include "autograd.h"
#include "ops_elementwise.h" /* pt_number */
#include "tensor.h"

typedef enum pt_special_op {
  PT_SP_LGAMMA = 0,
  PT_SP_DIGAMMA,
  PT_SP_POLYGAMMA, /* k: n */
  PT_SP_I0,
  PT_SP_I0E,
  PT_SP_I1,
  PT_SP_I1E,
  PT_SP_NDTR,
  PT_SP_LOG_NDTR,
  PT_SP_NDTRI,
  PT_SP_ENTR,
  PT_SP_MVLGAMMA, /* k: p */
  PT_SP_COUNT_PUBLIC
} pt_special_op;

/* "lgamma", "polygamma", ... (the name used in messages) */
const char *pt_special_name(pt_special_op op);

/* op(x); k is polygamma's n (>= 0) or mvlgamma's p (>= 1), ignored by the others. */
pt_status pt_special(pt_ctx *ctx, pt_special_op op, pt_tensor *x, int64_t k, pt_tensor **out);
/* self <- op(self) (the in-place rules above) */
pt_status pt_special_(pt_ctx *ctx, pt_special_op op, pt_tensor *self, int64_t k);

/* The scalar functions themselves, in double (for tests and other kernels): the same numbers as
 * the tensor ops give in float64. */
double pt_sf_lgamma(double x);
double pt_sf_digamma(double x);
double pt_sf_polygamma(int64_t n, double x);
double pt_sf_i0(double x);
double pt_sf_i0e(double x);
double pt_sf_i1(double x);
double pt_sf_i1e(double x);
double pt_sf_ndtr(double x);
double pt_sf_log_ndtr(double x);
double pt_sf_ndtri(double p);
double pt_sf_entr(double x);
double pt_sf_xlog1py(double x, double y);

double pt_sf_erfcx(double x);
double pt_sf_zeta(double x, double q);

/* erfcx(x) = exp(x^2) erfc(x) (torch.special.erfcx): float results (integers give float32), the
 * gradient 2 x erfcx(x) - 2 / sqrt(pi) (recorded with the ops: create_graph nests it) */
pt_status pt_erfcx(pt_ctx *ctx, pt_tensor *x, pt_tensor **out);
/* the Hurwitz zeta function zeta(x, q) = sum_k (k + q)^-x (torch.special.zeta), broadcasting, a
 * number on either side (reversed: zeta(s, a)); the gradient of q is -x zeta(x + 1, q), x has
 * none ("zeta: the derivative with respect to x (input) is not implemented", as torch). At
 * x = +inf the limit of the first term (0 for q > 1, 1 at q = 1; PyTorch's Cephes code: nan). */
pt_status pt_zeta(pt_ctx *ctx, pt_tensor *x, pt_tensor *q, pt_tensor **out);
pt_status pt_zeta_number(pt_ctx *ctx, pt_tensor *a, pt_number s, bool reversed, pt_tensor **out);

/* xlog1py with tensors or a tensor and a number (reversed: s op a) */
pt_status pt_xlog1py(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_xlog1py_number(pt_ctx *ctx, pt_tensor *a, pt_number s, bool reversed, pt_tensor **out);

typedef enum pt_bitop {
  PT_BIT_AND = 0,
  PT_BIT_OR,
  PT_BIT_XOR,
  PT_BIT_LSHIFT,
  PT_BIT_RSHIFT,
  PT_BIT_LOGICAL_XOR,
  PT_BIT_LOGICAL_AND, /* the in-place forms only use these two: logical_and/or live in */
  PT_BIT_LOGICAL_OR,  /* ops_elementwise.c */
  PT_BIT_COUNT_PUBLIC
} pt_bitop;

/* "bitwise_and", "bitwise_left_shift", "logical_xor", ... */
const char *pt_bitop_name(pt_bitop op);

pt_status pt_bitwise(pt_ctx *ctx, pt_bitop op, pt_tensor *a, pt_tensor *b, pt_tensor **out);
/* a op s, or s op a when reversed (2 << t); an integer s with an int64 tensor is exact */
pt_status pt_bitwise_number(pt_ctx *ctx, pt_bitop op, pt_tensor *a, pt_number s, bool reversed,
                            pt_tensor **out);
pt_status pt_bitwise_not(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_bitwise_(pt_ctx *ctx, pt_bitop op, pt_tensor *self, pt_tensor *b);
pt_status pt_bitwise_number_(pt_ctx *ctx, pt_bitop op, pt_tensor *self, pt_number s);
pt_status pt_bitwise_not_(pt_ctx *ctx, pt_tensor *self);

#endif
