/* Elementwise ops with NumPy broadcasting, PyTorch type promotion and autograd.
 *
 * Conventions (docs/HACKING.md): inputs are borrowed, `*out` receives a NEW reference, errors
 * name the op: "add: shapes {3,4} and {5} cannot be broadcast". Every op records an autograd node
 * when grad mode is on and a floating input requires grad; backward functions reduce broadcast
 * gradients to each input's shape and dtype.
 *
 * Type promotion follows PyTorch: dimensioned tensors decide the dtype within a category
 * (bool < integer < floating); 0-d tensors and plain numbers only raise the category (a Lua float
 * with an int tensor gives float32, a number with a float32 tensor stays float32). Division is
 * true division (int / int -> float32). Comparisons give bool tensors.
 *
 * In-place forms (name ending in `_`) write into `self`, bump its version and return PT_OK; they
 * fail with "<op>: a leaf tensor that requires grad is used in an in-place operation" while grad
 * mode is on, when the result dtype cannot be cast to self's dtype
 * ("add_: result type float32 can't be cast to the desired output type int64"), or when the
 * broadcast shape differs from self's shape. When a graph is recorded, self takes the new
 * grad_fn (its old value is kept for the backward). */
#ifndef PT_OPS_ELEMENTWISE_H
#define PT_OPS_ELEMENTWISE_H

#include "autograd.h"
#include "tensor.h"

typedef enum pt_binop {
  PT_BIN_ADD = 0,
  PT_BIN_SUB,
  PT_BIN_MUL,
  PT_BIN_DIV,
  PT_BIN_POW,
  PT_BIN_MAXIMUM,
  PT_BIN_MINIMUM,
  /* comparisons: bool results */
  PT_BIN_EQ,
  PT_BIN_NE,
  PT_BIN_LT,
  PT_BIN_LE,
  PT_BIN_GT,
  PT_BIN_GE,
  /* logical: any dtype (nonzero is true), bool results */
  PT_BIN_LOGICAL_AND,
  PT_BIN_LOGICAL_OR,
  /* more math (floating results for integer inputs: atan2, xlogy, copysign; floating only:
   * hypot, logaddexp; every dtype but bool: remainder, fmod, floor_divide) */
  PT_BIN_ATAN2,        /* atan2(a, b), the angle of the point (b, a) */
  PT_BIN_HYPOT,        /* sqrt(a^2 + b^2) without overflow */
  PT_BIN_REMAINDER,    /* Python's %: the sign of the divisor; integer / 0 is an error */
  PT_BIN_FMOD,         /* C's fmod: the sign of the dividend; integer / 0 is an error */
  PT_BIN_FLOOR_DIVIDE, /* rounds toward -inf (torch >= 1.13); integer / 0 is an error; no gradient */
  PT_BIN_LOGADDEXP,    /* log(e^a + e^b) */
  PT_BIN_XLOGY,        /* a * log(b), 0 where a == 0 (unless b is NaN) */
  PT_BIN_COPYSIGN,     /* |a| with the sign (bit) of b */
  PT_BIN_COUNT_PUBLIC
} pt_binop;

typedef enum pt_unop {
  PT_UN_NEG = 0,
  PT_UN_ABS,
  PT_UN_EXP,
  PT_UN_LOG,
  PT_UN_SQRT,
  PT_UN_TANH,
  PT_UN_SIGMOID,
  PT_UN_RELU,
  PT_UN_GELU,
  PT_UN_SIN,
  PT_UN_COS,
  PT_UN_SIGN,  /* a zero gradient (as PyTorch's) */
  PT_UN_FLOOR, /* a zero gradient */
  PT_UN_CEIL,  /* a zero gradient */
  PT_UN_ROUND, /* half to even, like PyTorch; a zero gradient */
  PT_UN_LOGICAL_NOT,
  /* more math: floating results (integers give float32) except frac (floating only) */
  PT_UN_ERF,
  PT_UN_ERFC,
  PT_UN_ERFINV,
  PT_UN_LOG1P,
  PT_UN_EXPM1,
  PT_UN_LOG2,
  PT_UN_LOG10,
  PT_UN_EXP2,
  PT_UN_TAN,
  PT_UN_ASIN,
  PT_UN_ACOS,
  PT_UN_ATAN,
  PT_UN_SINH,
  PT_UN_COSH,
  PT_UN_ASINH,
  PT_UN_ACOSH,
  PT_UN_ATANH,
  PT_UN_FRAC, /* x - trunc(x); gradient 1 */
  PT_UN_SINC, /* sin(pi x) / (pi x), 1 at 0 */
  PT_UN_COUNT_PUBLIC
} pt_unop;

/* "add", "maximum", "eq", ... (the name used in messages) */
const char *pt_binop_name(pt_binop op);
const char *pt_unop_name(pt_unop op);

/* The dtype PyTorch would give op(a, b) for two tensors (comparisons: the compute dtype). */
pt_dtype pt_result_type(const pt_tensor *a, const pt_tensor *b);
/* ... for a tensor and a number (is_int: the number is an integer). */
pt_dtype pt_result_type_scalar(const pt_tensor *a, bool is_int);
/* Whether a value of dtype `from` may be written into a tensor of dtype `to` by an in-place op. */
bool pt_can_cast(pt_dtype from, pt_dtype to);

/* --- binary, tensor op tensor --- */
pt_status pt_binary(pt_ctx *ctx, pt_binop op, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_add(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_sub(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_mul(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_div(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_pow(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_maximum(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_minimum(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
/* a + alpha * b and a - alpha * b (PyTorch's alpha option) */
pt_status pt_add_alpha(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, double alpha, pt_tensor **out);
pt_status pt_sub_alpha(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, double alpha, pt_tensor **out);
pt_status pt_eq(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_ne(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_lt(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_le(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_gt(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_ge(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_logical_and(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_logical_or(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_atan2(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_hypot(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_remainder(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_fmod(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_floor_divide(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_logaddexp(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_xlogy(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_copysign(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);

/* --- lerp: start + weight * (end - start), weight a number or a tensor (NULL: use w) ---
 * start, end and weight broadcast and promote together; the result must be floating
 * ("lerp: not supported for int64 tensors"). Gradients: start (1 - weight), end weight,
 * weight (end - start). */
pt_status pt_lerp(pt_ctx *ctx, pt_tensor *start, pt_tensor *end, pt_tensor *weight, double w,
                  pt_tensor **out);
/* self <- lerp(self, end, weight) (the in-place rules above) */
pt_status pt_lerp_(pt_ctx *ctx, pt_tensor *self, pt_tensor *end, pt_tensor *weight, double w);

/* A number as Lua has it: an integer (i, exact: int64 tensors compute with it beyond 2^53, as
 * PyTorch's int64 scalars) or a float (d). d always holds the value as a double. */
typedef struct pt_number {
  bool is_int;
  int64_t i; /* is_int only */
  double d;
} pt_number;
static inline pt_number pt_number_int(int64_t i) { return (pt_number){true, i, (double)i}; }
static inline pt_number pt_number_float(double d) { return (pt_number){false, 0, d}; }

/* --- binary with a number: a op s, or s op a when reversed (2 - t, 2 / t, 2 ^ t) ---
 * is_int says whether s is an integer (Lua integer): it decides the promotion. */
pt_status pt_binary_scalar(pt_ctx *ctx, pt_binop op, pt_tensor *a, double s, bool is_int,
                           bool reversed, pt_tensor **out);
/* The same with the number as Lua gives it: an integer s with an int64 tensor is exact (2^53 + 1
 * == t compares exactly; int32 / uint8 tensors take its low bits, as PyTorch). */
pt_status pt_binary_number(pt_ctx *ctx, pt_binop op, pt_tensor *a, pt_number s, bool reversed,
                           pt_tensor **out);
/* add / sub with alpha and a number: a op alpha * s, or (reversed) s op alpha * a, the tensor
 * scaled in the result's dtype (s + 2 * uint8 in float32 when s is a float), as binary_op */
pt_status pt_binary_number_alpha(pt_ctx *ctx, pt_binop op, pt_tensor *a, pt_number s, bool reversed,
                                 double alpha, pt_tensor **out);
/* out = a op b into a given tensor (PyTorch's out=; a or b a number when NULL, an / bn; alpha
 * scales b for add and sub): out has the result's shape and a dtype the result casts to; not
 * differentiable (refused when grad mode is on and an operand or out requires grad). */
pt_status pt_binary_into(pt_ctx *ctx, pt_binop op, pt_tensor *a, pt_number an, pt_tensor *b,
                         pt_number bn, double alpha, pt_tensor *out);
pt_status pt_add_scalar(pt_ctx *ctx, pt_tensor *a, double s, pt_tensor **out);
pt_status pt_sub_scalar(pt_ctx *ctx, pt_tensor *a, double s, pt_tensor **out);
pt_status pt_rsub_scalar(pt_ctx *ctx, pt_tensor *a, double s, pt_tensor **out); /* s - a */
pt_status pt_mul_scalar(pt_ctx *ctx, pt_tensor *a, double s, pt_tensor **out);
pt_status pt_div_scalar(pt_ctx *ctx, pt_tensor *a, double s, pt_tensor **out);
pt_status pt_rdiv_scalar(pt_ctx *ctx, pt_tensor *a, double s, pt_tensor **out); /* s / a */
pt_status pt_pow_scalar(pt_ctx *ctx, pt_tensor *a, double s, pt_tensor **out);
pt_status pt_rpow_scalar(pt_ctx *ctx, pt_tensor *a, double s, pt_tensor **out); /* s ^ a */

/* --- unary --- */
pt_status pt_unary(pt_ctx *ctx, pt_unop op, pt_tensor *a, pt_tensor **out);
/* out = op(a) into a given tensor (out=), with pt_binary_into's rules */
pt_status pt_unary_into(pt_ctx *ctx, pt_unop op, pt_tensor *a, pt_tensor *out);
pt_status pt_neg(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_abs(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_exp(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_log(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_sqrt(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_tanh(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_sigmoid(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_relu(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_gelu(pt_ctx *ctx, pt_tensor *a, pt_tensor **out); /* exact: x/2 (1 + erf(x/sqrt 2)) */
pt_status pt_sin(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_cos(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_logical_not(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_erf(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_erfc(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_erfinv(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_log1p(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_expm1(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_log2(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_log10(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_exp2(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_tan(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_asin(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_acos(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_atan(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_sinh(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_cosh(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_asinh(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_acosh(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_atanh(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_frac(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);
pt_status pt_sinc(pt_ctx *ctx, pt_tensor *a, pt_tensor **out);

/* torch.round(t, decimals=d): nearbyint(t * 10^d) / 10^d (d < 0: nearbyint(t / 10^-d) * 10^-d) in
 * t's dtype, as torch 1.13's kernel; floating tensors only (d == 0 is pt_unary's round, any
 * dtype); no gradient. The in-place form and the out= form have round_'s and round's rules. */
pt_status pt_round_decimals(pt_ctx *ctx, pt_tensor *t, int64_t decimals, pt_tensor **out);
pt_status pt_round_decimals_(pt_ctx *ctx, pt_tensor *self, int64_t decimals);
pt_status pt_round_decimals_into(pt_ctx *ctx, pt_tensor *t, int64_t decimals, pt_tensor *out);

/* --- selection --- */
/* torch.fmax / fmin: the larger / smaller of a and b (broadcast, promoted), NaN only where both are
 * NaN; the gradient goes to a where a >= b (fmin: a <= b) or b is NaN, else to b, as torch's */
pt_status pt_fmax(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_fmin(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
/* where(cond, a, b): a where cond is true, else b; cond must be bool; all three broadcast. */
pt_status pt_where(pt_ctx *ctx, pt_tensor *cond, pt_tensor *a, pt_tensor *b, pt_tensor **out);
/* t with value where mask (bool, broadcast to t's shape) is true; keeps t's dtype. */
pt_status pt_masked_fill(pt_ctx *ctx, pt_tensor *t, pt_tensor *mask, double value, pt_tensor **out);
/* t with value where mask is true, the value as Lua gives it (an integer exact in an int64 t).
 * The value is not range-checked here (the bindings check it as every write path does:
 * pt_check_value_fits). */
pt_status pt_masked_fill_number(pt_ctx *ctx, pt_tensor *t, pt_tensor *mask, pt_number value,
                                pt_tensor **out);
/* masked_fill with a 0-d tensor value (cast to t's dtype), as torch's Tensor overload: gradients
 * to t outside the mask and to value (summed) inside; a value with dimensions is an error */
pt_status pt_masked_fill_tensor(pt_ctx *ctx, pt_tensor *t, pt_tensor *mask, pt_tensor *value,
                                pt_tensor **out);
/* clamp to [lo, hi]; has_lo / has_hi false leave that side open (at least one must be set).
 * An integral bound counts as an integer (pt_clamp_number has PyTorch's rule). */
pt_status pt_clamp(pt_ctx *ctx, pt_tensor *t, bool has_lo, double lo, bool has_hi, double hi,
                   pt_tensor **out);
/* clamp with the bounds as Lua gives them (NULL: that side open), as torch.clamp(t, min, max):
 * the result has the dtype of t promoted with the bounds (a float bound makes an integer or bool
 * t float32; integer bounds make a bool t int64). A bound must fit that dtype
 * ("clamp: value 1099511627776 cannot be converted to int32 without overflow", as PyTorch; a
 * negative bound for a uint8 result too, which PyTorch wraps around to 256 + bound). int64
 * bounds are exact. */
pt_status pt_clamp_number(pt_ctx *ctx, pt_tensor *t, const pt_number *lo, const pt_number *hi,
                          pt_tensor **out);
/* clamp with tensor bounds (NULL: that side open, at least one given), as torch.clamp with
 * tensors: t and the bounds broadcast and promoted, min(max(t, lo), hi) with NaN from any of them;
 * gradients to t where lo <= t <= hi, to lo where t < lo < hi, to hi where t > hi or hi < lo. */
pt_status pt_clamp_tensor(pt_ctx *ctx, pt_tensor *t, pt_tensor *lo, pt_tensor *hi, pt_tensor **out);

/* --- conversion with autograd (clone is pt_clone in ops_shape.h) --- */
/* t itself (retained) when already of dtype dt; float <-> float conversions pass gradients. */
pt_status pt_to_dtype(pt_ctx *ctx, pt_tensor *t, pt_dtype dt, pt_tensor **out);

/* --- in-place (self is modified; no new reference) --- */
/* Fails with "<fname>: a leaf tensor ..." when self is a leaf requiring grad in grad mode. */
pt_status pt_inplace_check(pt_ctx *ctx, const char *fname, const pt_tensor *self);
pt_status pt_binary_(pt_ctx *ctx, pt_binop op, pt_tensor *self, pt_tensor *b);
pt_status pt_binary_scalar_(pt_ctx *ctx, pt_binop op, pt_tensor *self, double s, bool is_int);
pt_status pt_binary_number_(pt_ctx *ctx, pt_binop op, pt_tensor *self, pt_number s);
pt_status pt_add_(pt_ctx *ctx, pt_tensor *self, pt_tensor *b, double alpha);
pt_status pt_sub_(pt_ctx *ctx, pt_tensor *self, pt_tensor *b, double alpha);
pt_status pt_mul_(pt_ctx *ctx, pt_tensor *self, pt_tensor *b);
pt_status pt_div_(pt_ctx *ctx, pt_tensor *self, pt_tensor *b);
pt_status pt_add_scalar_(pt_ctx *ctx, pt_tensor *self, double s);
pt_status pt_mul_scalar_(pt_ctx *ctx, pt_tensor *self, double s);
pt_status pt_unary_(pt_ctx *ctx, pt_unop op, pt_tensor *self);
pt_status pt_clamp_(pt_ctx *ctx, pt_tensor *self, bool has_lo, double lo, bool has_hi, double hi);
/* self's dtype must hold the promoted result ("clamp_: result type float32 can't be cast to the
 * desired output type int64") */
pt_status pt_clamp_number_(pt_ctx *ctx, pt_tensor *self, const pt_number *lo, const pt_number *hi);
/* self <- clamp(self, lo, hi) with tensor bounds (pt_clamp_tensor); the result's dtype and
 * broadcast shape must be self's */
pt_status pt_clamp_tensor_(pt_ctx *ctx, pt_tensor *self, pt_tensor *lo, pt_tensor *hi);
pt_status pt_masked_fill_(pt_ctx *ctx, pt_tensor *self, pt_tensor *mask, double value);
pt_status pt_masked_fill_number_(pt_ctx *ctx, pt_tensor *self, pt_tensor *mask, pt_number value);
pt_status pt_masked_fill_tensor_(pt_ctx *ctx, pt_tensor *self, pt_tensor *mask, pt_tensor *value);
/* self <- src (broadcast, dtype converted); gradients flow to src. */
pt_status pt_copy_(pt_ctx *ctx, pt_tensor *self, pt_tensor *src);
/* self[...] = v with autograd: self (and, for a view, those elements of its base) no longer
 * depends on its old history. */
pt_status pt_fill_(pt_ctx *ctx, pt_tensor *self, double v);
/* the same with v as Lua gives it: an integer fills an int64 self exactly (beyond 2^53 too) */
pt_status pt_fill_number_(pt_ctx *ctx, pt_tensor *self, pt_number v);

#endif
