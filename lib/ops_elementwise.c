/* Elementwise ops: broadcasting, promotion, typed kernels, autograd, in-place forms.
 *
 * Every binary op runs through one engine (binary_forward): it works out the result dtype, the
 * broadcast shape, converts inputs to the compute dtype when they differ, and then runs a typed
 * kernel either once over whole contiguous buffers (same shape, or one side a single element) or
 * row by row over coalesced strided dimensions. Kernels take element strides, with the common
 * stride patterns (1/1, 1/0, 0/1) specialised so the compiler vectorises them.
 * Backward functions are compositions of the same forward engine (grad mode is off there). */
#include "ops_elementwise.h"
#include "ops_shape.h"
#include "ew_impl.h"
#include "parallel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simd_math.h"

/* ---------------------------------------------------------------------------------------------
 * op tables
 * ------------------------------------------------------------------------------------------- */

/* internal binary ops used by backward functions (floating only) */
enum {
  BIN_POW_DX = PT_BIN_COUNT_PUBLIC, /* y == 0 ? 0 : y * x^(y-1) */
  BIN_POW_DY,                       /* x == 0 && y >= 0 ? 0 : x^y * log x */
  BIN_DIV_DY,                       /* -x / y^2 */
  BIN_MAXW,                         /* x < y ? 0 : x == y ? 0.5 : 1 (a NaN: 1, as torch) */
  BIN_MINW,                         /* x > y ? 0 : x == y ? 0.5 : 1 */
  BIN_ATAN2_DX,                     /* y / (x^2 + y^2) */
  BIN_ATAN2_DY,                     /* -x / (x^2 + y^2) */
  BIN_HYPOT_D,                      /* x / hypot(x, y) */
  BIN_REM_DY,                       /* -floor_divide(x, y) */
  BIN_FMOD_DY,                      /* -trunc(x / y) */
  BIN_LAE_D,                        /* 1 / (1 + e^(y - x)) */
  BIN_XLOGY_ZERO,                   /* bool: x == 0 && y <= 0 (xlogy's self gradient is 0) */
  BIN_XLOGY_DY,                     /* x / y */
  BIN_COPYSIGN_DX,                  /* x == 0 ? 0 : copysign(x, y) / x */
  BIN_COUNT
};

/* internal unary ops */
enum {
  UN_CLAMP = PT_UN_COUNT_PUBLIC, /* p[0] <= x <= p[1] */
  UN_ABS_D,
  UN_LOG_D,
  UN_SQRT_D,
  UN_TANH_D,
  UN_SIGMOID_D,
  UN_RELU_D,
  UN_GELU_D,
  UN_COS_D, /* -sin x */
  UN_CLAMP_D,
  UN_ERF_D,
  UN_ERFC_D,
  UN_ERFINV_D,
  UN_LOG1P_D,
  UN_LOG2_D,
  UN_LOG10_D,
  UN_EXP2_D,
  UN_TAN_D,
  UN_ASIN_D,
  UN_ACOS_D,
  UN_ATAN_D,
  UN_ASINH_D,
  UN_ACOSH_D,
  UN_ATANH_D,
  UN_SINC_D,
  UN_COUNT
};

static const char *const bin_names[BIN_COUNT] = {
    [PT_BIN_ADD] = "add",         [PT_BIN_SUB] = "sub",
    [PT_BIN_MUL] = "mul",         [PT_BIN_DIV] = "div",
    [PT_BIN_POW] = "pow",         [PT_BIN_MAXIMUM] = "maximum",
    [PT_BIN_MINIMUM] = "minimum", [PT_BIN_EQ] = "eq",
    [PT_BIN_NE] = "ne",           [PT_BIN_LT] = "lt",
    [PT_BIN_LE] = "le",           [PT_BIN_GT] = "gt",
    [PT_BIN_GE] = "ge",           [PT_BIN_LOGICAL_AND] = "logical_and",
    [PT_BIN_LOGICAL_OR] = "logical_or", [BIN_POW_DX] = "pow",
    [BIN_POW_DY] = "pow",         [BIN_DIV_DY] = "div",
    [BIN_MAXW] = "maximum",       [BIN_MINW] = "minimum",
    [PT_BIN_ATAN2] = "atan2",     [PT_BIN_HYPOT] = "hypot",
    [PT_BIN_REMAINDER] = "remainder", [PT_BIN_FMOD] = "fmod",
    [PT_BIN_FLOOR_DIVIDE] = "floor_divide", [PT_BIN_LOGADDEXP] = "logaddexp",
    [PT_BIN_XLOGY] = "xlogy",     [PT_BIN_COPYSIGN] = "copysign",
    [BIN_ATAN2_DX] = "atan2",     [BIN_ATAN2_DY] = "atan2",
    [BIN_HYPOT_D] = "hypot",      [BIN_REM_DY] = "remainder",
    [BIN_FMOD_DY] = "fmod",       [BIN_LAE_D] = "logaddexp",
    [BIN_XLOGY_ZERO] = "xlogy",   [BIN_XLOGY_DY] = "xlogy",
    [BIN_COPYSIGN_DX] = "copysign",
};

static const char *const bin_nodes[PT_BIN_COUNT_PUBLIC] = {
    [PT_BIN_ADD] = "AddBackward",         [PT_BIN_SUB] = "SubBackward",
    [PT_BIN_MUL] = "MulBackward",         [PT_BIN_DIV] = "DivBackward",
    [PT_BIN_POW] = "PowBackward",         [PT_BIN_MAXIMUM] = "MaximumBackward",
    [PT_BIN_MINIMUM] = "MinimumBackward",
    [PT_BIN_ATAN2] = "Atan2Backward",     [PT_BIN_HYPOT] = "HypotBackward",
    [PT_BIN_REMAINDER] = "RemainderBackward", [PT_BIN_FMOD] = "FmodBackward",
    [PT_BIN_LOGADDEXP] = "LogaddexpBackward", [PT_BIN_XLOGY] = "XlogyBackward",
    [PT_BIN_COPYSIGN] = "CopysignBackward",
};

static const char *const un_names[UN_COUNT] = {
    [PT_UN_NEG] = "neg",     [PT_UN_ABS] = "abs",         [PT_UN_EXP] = "exp",
    [PT_UN_LOG] = "log",     [PT_UN_SQRT] = "sqrt",       [PT_UN_TANH] = "tanh",
    [PT_UN_SIGMOID] = "sigmoid", [PT_UN_RELU] = "relu",   [PT_UN_GELU] = "gelu",
    [PT_UN_SIN] = "sin",     [PT_UN_COS] = "cos",         [PT_UN_SIGN] = "sign",
    [PT_UN_FLOOR] = "floor", [PT_UN_CEIL] = "ceil",       [PT_UN_ROUND] = "round",
    [PT_UN_LOGICAL_NOT] = "logical_not", [UN_CLAMP] = "clamp", [UN_ABS_D] = "abs",
    [UN_LOG_D] = "log",      [UN_SQRT_D] = "sqrt",        [UN_TANH_D] = "tanh",
    [UN_SIGMOID_D] = "sigmoid", [UN_RELU_D] = "relu",     [UN_GELU_D] = "gelu",
    [UN_COS_D] = "cos",      [UN_CLAMP_D] = "clamp",
    [PT_UN_ERF] = "erf",     [PT_UN_ERFC] = "erfc",       [PT_UN_ERFINV] = "erfinv",
    [PT_UN_LOG1P] = "log1p", [PT_UN_EXPM1] = "expm1",     [PT_UN_LOG2] = "log2",
    [PT_UN_LOG10] = "log10", [PT_UN_EXP2] = "exp2",       [PT_UN_TAN] = "tan",
    [PT_UN_ASIN] = "asin",   [PT_UN_ACOS] = "acos",       [PT_UN_ATAN] = "atan",
    [PT_UN_SINH] = "sinh",   [PT_UN_COSH] = "cosh",       [PT_UN_ASINH] = "asinh",
    [PT_UN_ACOSH] = "acosh", [PT_UN_ATANH] = "atanh",     [PT_UN_FRAC] = "frac",
    [PT_UN_SINC] = "sinc",   [UN_ERF_D] = "erf",          [UN_ERFC_D] = "erfc",
    [UN_ERFINV_D] = "erfinv", [UN_LOG1P_D] = "log1p",     [UN_LOG2_D] = "log2",
    [UN_LOG10_D] = "log10",  [UN_EXP2_D] = "exp2",        [UN_TAN_D] = "tan",
    [UN_ASIN_D] = "asin",    [UN_ACOS_D] = "acos",        [UN_ATAN_D] = "atan",
    [UN_ASINH_D] = "asinh",  [UN_ACOSH_D] = "acosh",      [UN_ATANH_D] = "atanh",
    [UN_SINC_D] = "sinc",
};

static const char *const un_nodes[UN_COUNT] = {
    [PT_UN_NEG] = "NegBackward",   [PT_UN_ABS] = "AbsBackward",   [PT_UN_EXP] = "ExpBackward",
    [PT_UN_LOG] = "LogBackward",   [PT_UN_SQRT] = "SqrtBackward", [PT_UN_TANH] = "TanhBackward",
    [PT_UN_SIGMOID] = "SigmoidBackward", [PT_UN_RELU] = "ReluBackward",
    [PT_UN_GELU] = "GeluBackward", [PT_UN_SIN] = "SinBackward",   [PT_UN_COS] = "CosBackward",
    [UN_CLAMP] = "ClampBackward",
    [PT_UN_ERF] = "ErfBackward",     [PT_UN_ERFC] = "ErfcBackward",   [PT_UN_ERFINV] = "ErfinvBackward",
    [PT_UN_LOG1P] = "Log1pBackward", [PT_UN_EXPM1] = "Expm1Backward", [PT_UN_LOG2] = "Log2Backward",
    [PT_UN_LOG10] = "Log10Backward", [PT_UN_EXP2] = "Exp2Backward",   [PT_UN_TAN] = "TanBackward",
    [PT_UN_ASIN] = "AsinBackward",   [PT_UN_ACOS] = "AcosBackward",   [PT_UN_ATAN] = "AtanBackward",
    [PT_UN_SINH] = "SinhBackward",   [PT_UN_COSH] = "CoshBackward",   [PT_UN_ASINH] = "AsinhBackward",
    [PT_UN_ACOSH] = "AcoshBackward", [PT_UN_ATANH] = "AtanhBackward", [PT_UN_FRAC] = "FracBackward",
    [PT_UN_SINC] = "SincBackward",
    /* a zero gradient, as PyTorch's: the result still requires grad */
    [PT_UN_SIGN] = "SignBackward",   [PT_UN_FLOOR] = "FloorBackward", [PT_UN_CEIL] = "CeilBackward",
    [PT_UN_ROUND] = "RoundBackward",
};

/* derivative of each differentiable unary op, as an op on the input */
static const int un_deriv[UN_COUNT] = {
    [PT_UN_ABS] = UN_ABS_D,   [PT_UN_EXP] = PT_UN_EXP,         [PT_UN_LOG] = UN_LOG_D,
    [PT_UN_SQRT] = UN_SQRT_D, [PT_UN_TANH] = UN_TANH_D,        [PT_UN_SIGMOID] = UN_SIGMOID_D,
    [PT_UN_RELU] = UN_RELU_D, [PT_UN_GELU] = UN_GELU_D,        [PT_UN_SIN] = PT_UN_COS,
    [PT_UN_COS] = UN_COS_D,   [UN_CLAMP] = UN_CLAMP_D,
    [PT_UN_ERF] = UN_ERF_D,   [PT_UN_ERFC] = UN_ERFC_D,        [PT_UN_ERFINV] = UN_ERFINV_D,
    [PT_UN_LOG1P] = UN_LOG1P_D, [PT_UN_EXPM1] = PT_UN_EXP,     [PT_UN_LOG2] = UN_LOG2_D,
    [PT_UN_LOG10] = UN_LOG10_D, [PT_UN_EXP2] = UN_EXP2_D,      [PT_UN_TAN] = UN_TAN_D,
    [PT_UN_ASIN] = UN_ASIN_D, [PT_UN_ACOS] = UN_ACOS_D,        [PT_UN_ATAN] = UN_ATAN_D,
    [PT_UN_SINH] = PT_UN_COSH, [PT_UN_COSH] = PT_UN_SINH,      [PT_UN_ASINH] = UN_ASINH_D,
    [PT_UN_ACOSH] = UN_ACOSH_D, [PT_UN_ATANH] = UN_ATANH_D,    [PT_UN_SINC] = UN_SINC_D,
    /* frac: the gradient passes through (unary_backward) */
};

const char *pt_binop_name(pt_binop op) {
  return (unsigned)op < PT_BIN_COUNT_PUBLIC ? bin_names[op] : "?";
}
const char *pt_unop_name(pt_unop op) {
  return (unsigned)op < PT_UN_COUNT_PUBLIC ? un_names[op] : "?";
}

/* ---------------------------------------------------------------------------------------------
 * kernels: out[i*so] = f(a[i*sa], b[i*sb]), strides in elements
 * ------------------------------------------------------------------------------------------- */

typedef pt_ew_bin_kernel bin_kernel; /* and BK: ew_impl.h's, shared with lib/ops_special.c */
typedef void (*un_kernel)(int64_t n, const void *pa, int64_t sa, void *po, int64_t so,
                          const double *p);

#define BK PT_EW_BK

#define UK(name, T, OT, EXPR)                                                                   \
  static void name(int64_t n, const void *pa, int64_t sa, void *po, int64_t so,                 \
                   const double *p) {                                                           \
    const T *a = pa;                                                                            \
    OT *o = po;                                                                                 \
    (void)p;                                                                                    \
    if (sa == 1 && so == 1) {                                                                   \
      for (int64_t i = 0; i < n; i++) {                                                         \
        T x = a[i];                                                                             \
        o[i] = (OT)(EXPR);                                                                      \
      }                                                                                         \
    } else {                                                                                    \
      for (int64_t i = 0; i < n; i++) {                                                         \
        T x = a[i * sa];                                                                        \
        o[i * so] = (OT)(EXPR);                                                                 \
      }                                                                                         \
    }                                                                                           \
  }

/* float helpers: NaN-propagating max/min as PyTorch */
#define FMAX(x, y) ((x) != (x) ? (x) : ((y) != (y) ? (y) : ((x) > (y) ? (x) : (y))))
#define FMIN(x, y) ((x) != (x) ? (x) : ((y) != (y) ? (y) : ((x) < (y) ? (x) : (y))))

static inline float h_tanhd_f(float x) { float t = tanhf(x); return 1.0f - t * t; }
static inline double h_tanhd_d(double x) { double t = tanh(x); return 1.0 - t * t; }
static inline float h_sigmoid_f(float x) { return 1.0f / (1.0f + expf(-x)); }
static inline double h_sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }
static inline float h_sigmoidd_f(float x) { float s = h_sigmoid_f(x); return s * (1.0f - s); }
static inline double h_sigmoidd_d(double x) { double s = h_sigmoid_d(x); return s * (1.0 - s); }
static inline float h_gelu_f(float x) { return 0.5f * x * (1.0f + erff(x * (float)M_SQRT1_2)); }
static inline double h_gelu_d(double x) { return 0.5 * x * (1.0 + erf(x * M_SQRT1_2)); }
/* d/dx x Phi(x) = Phi(x) + x phi(x) */
static inline float h_gelud_f(float x) {
  return 0.5f * (1.0f + erff(x * (float)M_SQRT1_2)) +
         x * expf(-0.5f * x * x) * (float)(0.5 * M_2_SQRTPI * M_SQRT1_2);
}
static inline double h_gelud_d(double x) {
  return 0.5 * (1.0 + erf(x * M_SQRT1_2)) + x * exp(-0.5 * x * x) * (0.5 * M_2_SQRTPI * M_SQRT1_2);
}

/* min(max(x, lo), hi) keeping NaN */
#define CLAMP_LO(T, x, p) ((x) < (T)(p)[0] ? (T)(p)[0] : (x))
#define CLAMP(T, x, p) (CLAMP_LO(T, x, p) > (T)(p)[1] ? (T)(p)[1] : CLAMP_LO(T, x, p))

#define FLOAT_KERNELS(S, T, POW, LOG, EXP, SQRT, TANH, SIN, COS, FLOOR, CEIL, RINT, FABS)        \
  BK(add_##S, T, T, x + y)                                                                      \
  BK(sub_##S, T, T, x - y)                                                                      \
  BK(mul_##S, T, T, x *y)                                                                       \
  BK(div_##S, T, T, x / y)                                                                      \
  BK(pow_##S, T, T, POW(x, y))                                                                  \
  BK(max_##S, T, T, FMAX(x, y))                                                                 \
  BK(min_##S, T, T, FMIN(x, y))                                                                 \
  BK(powdx_##S, T, T, y == 0 ? (T)0 : y * POW(x, y - 1))                                        \
  BK(powdy_##S, T, T, (x == 0 && y >= 0) ? (T)0 : POW(x, y) * LOG(x))                          \
  BK(divdy_##S, T, T, -x / (y * y))                                                             \
  BK(maxw_##S, T, T, x < y ? (T)0 : (x == y ? (T)0.5 : (T)1))                                   \
  BK(minw_##S, T, T, x > y ? (T)0 : (x == y ? (T)0.5 : (T)1))                                   \
  UK(neg_##S, T, T, -x)                                                                         \
  UK(abs_##S, T, T, FABS(x))                                                                    \
  UK(exp_##S, T, T, EXP(x))                                                                     \
  UK(log_##S, T, T, LOG(x))                                                                     \
  UK(sqrt_##S, T, T, SQRT(x))                                                                   \
  UK(tanh_##S, T, T, TANH(x))                                                                   \
  UK(sigmoid_##S, T, T, h_sigmoid_##S(x))                                                         \
  UK(relu_##S, T, T, (x > 0 || x != x) ? x : (T)0)                                              \
  UK(gelu_##S, T, T, h_gelu_##S(x))                                                               \
  UK(sin_##S, T, T, SIN(x))                                                                     \
  UK(cos_##S, T, T, COS(x))                                                                     \
  UK(sign_##S, T, T, (T)((x > 0) - (x < 0)))                                                    \
  UK(floor_##S, T, T, FLOOR(x))                                                                 \
  UK(ceil_##S, T, T, CEIL(x))                                                                   \
  UK(round_##S, T, T, RINT(x))                                                                  \
  UK(not_##S, T, uint8_t, x == 0)                                                               \
  UK(clamp_##S, T, T, CLAMP(T, x, p))                                                             \
  UK(absd_##S, T, T, (T)((x > 0) - (x < 0)))                                                    \
  UK(logd_##S, T, T, (T)1 / x)                                                                  \
  UK(sqrtd_##S, T, T, (T)0.5 / SQRT(x))                                                         \
  UK(tanhd_##S, T, T, h_tanhd_##S(x))                                                            \
  UK(sigmoidd_##S, T, T, h_sigmoidd_##S(x))                                                      \
  UK(relud_##S, T, T, x <= 0 ? (T)0 : (T)1)                                                      \
  UK(gelud_##S, T, T, h_gelud_##S(x))                                                            \
  UK(cosd_##S, T, T, -SIN(x))                                                                   \
  UK(clampd_##S, T, T, (x >= (T)p[0] && x <= (T)p[1]) ? (T)1 : (T)0)

FLOAT_KERNELS(f, float, powf, logf, expf, sqrtf, tanhf, sinf, cosf, floorf, ceilf, nearbyintf, fabsf)
FLOAT_KERNELS(d, double, pow, log, exp, sqrt, tanh, sin, cos, floor, ceil, nearbyint, fabs)

/* --- more math: erf family, logs and exps, trigonometric and hyperbolic functions, frac, sinc,
 * atan2, hypot, remainder, fmod, floor_divide, logaddexp, xlogy, copysign (float, double) --- */
#define LIBM_f(fn) fn##f
#define LIBM_d(fn) fn

/* erfinv (C has none): Giles' single-precision approximation ("Approximating the erfinv
 * function", GPU Computing Gems) as the start, then Newton steps on erf(x) = |y| for |y| <= 0.5
 * and on log erfc(x) = log(1 - |y|) above (1 - |y| is exact there, erf has no digits left to
 * compare with, and the logarithm is nearly linear in x where the start is far off: within 1 ulp
 * of mpmath up to 1 - 2^-53, where PyTorch 1.13's is 1% off). Correctly signed zeros, +-inf at
 * +-1, NaN outside [-1, 1]. float32 goes through this double version. */
static double h_erfinv_d(double y) {
  if (y != y || y < -1 || y > 1) return NAN;
  if (y == 1) return INFINITY;
  if (y == -1) return -INFINITY;
  if (y == 0) return y;
  double a = fabs(y), w = -log((1.0 - a) * (1.0 + a)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double x = p * a, lc = a > 0.5 ? log(1.0 - a) : 0;
  for (int k = 0; k < 10; k++) {
    double d = M_2_SQRTPI * exp(-x * x), step;
    if (a <= 0.5) {
      step = (erf(x) - a) / d;
    } else {
      double e = erfc(x);
      step = -(log(e) - lc) * e / d;
    }
    if (!(step == step) || d == 0) break;
    x -= step;
    if (fabs(step) <= 0x1p-53 * fabs(x)) break;
  }
  return y < 0 ? -x : x;
}
static inline float h_erfinv_f(float y) { return (float)h_erfinv_d(y); }

/* fmodf, exactly, in double arithmetic where the quotient is below 2^24 (glibc's fmodf works
 * bit by bit: remainder of float32 tensors was 5x slower than PyTorch's). t * y has at most 48
 * bits and x - t * y at most 49 (|x| >= |y| there), so both are exact; trunc(x / y) can only be
 * one too large in magnitude (x / y rounded up to an integer), which leaves r with the sign
 * opposite to x: one more divisor fixes it. Zeros keep x's sign; inf, NaN, y = 0, y = +-inf (0 *
 * inf) and larger quotients go to fmodf. */
static inline float h_fmod_f(float x, float y) {
  double q = (double)x / (double)y;
  if (!(fabs(q) < 16777216.0) || !(fabsf(y) < INFINITY)) return fmodf(x, y);
  double r = (double)x - trunc(q) * (double)y;
  bool fix = (r != 0) & ((r < 0) != (x < 0));
  r += fix ? copysign((double)y, (double)x) : -0.0;
  return copysignf((float)r, r == 0 ? x : (float)r);
}
/* fmod in double the same way with a fused multiply-add, where the quotient is below 2^53: the
 * remainder is representable, so fma(-t, y, x) is it exactly when t = trunc(x / y) is right; when
 * x / y rounded up to an integer (r has the sign opposite to x), t - 1 in magnitude is. */
static inline double h_fmod_d(double x, double y) {
  double q = x / y;
  if (!(fabs(q) < 9007199254740992.0) || !(fabs(y) < INFINITY)) return fmod(x, y);
  double t = trunc(q), r = fma(-t, y, x);
  if (r != 0 && (r < 0) != (x < 0)) r = fma(-(t - copysign(1.0, t)), y, x);
  return r == 0 ? copysign(0.0, x) : r;
}

/* c ? a : b through the bits: gcc turns a float ?: into a branch, which random signs defeat
 * (remainder of randn data was 3x slower than of its absolute values) */
static inline float sel_f(bool c, float a, float b) {
  uint32_t ua, ub, m = 0u - (uint32_t)c;
  memcpy(&ua, &a, 4);
  memcpy(&ub, &b, 4);
  ua = (ua & m) | (ub & ~m);
  memcpy(&a, &ua, 4);
  return a;
}
static inline double sel_d(bool c, double a, double b) {
  uint64_t ua, ub, m = 0u - (uint64_t)c;
  memcpy(&ua, &a, 8);
  memcpy(&ub, &b, 8);
  ua = (ua & m) | (ub & ~m);
  memcpy(&a, &ua, 8);
  return a;
}

#define MATH_HELPERS(S, T)                                                                      \
  static inline T h_sinc_##S(T x) {                                                             \
    if (x == 0) return (T)1;                                                                    \
    T p = (T)M_PI * x;                                                                          \
    return LIBM_##S(sin)(p) / p;                                                                \
  }                                                                                             \
  /* d/dx sin(pi x)/(pi x) = (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 at 0 (as PyTorch) */    \
  static inline T h_sincd_##S(T x) {                                                            \
    if (x == 0) return (T)0;                                                                    \
    T p = (T)M_PI * x;                                                                          \
    return (p * LIBM_##S(cos)(p) - LIBM_##S(sin)(p)) / (p * x);                                 \
  }                                                                                             \
  /* Python's %: fmod, moved by one divisor when the signs differ (PyTorch's formula). Adding   \
   * -0 keeps every m, -0 included. */                                                          \
  static inline T h_rem_##S(T x, T y) {                                                         \
    T m = h_fmod_##S(x, y);                                                                     \
    bool move = (m != 0) & ((y < 0) != (m < 0));                                                \
    return m + sel_##S(move, y, (T)-0.0);                                                       \
  }                                                                                             \
  /* floor(x / y) through fmod, exact where x / y rounds (0.3 // 0.1 is 2), PyTorch's formula */\
  static inline T h_floordiv_##S(T x, T y) {                                                    \
    T m = h_fmod_##S(x, y);                                                                     \
    T q = (x - m) / y;                                                                          \
    bool down = (m != 0) & ((y < 0) != (m < 0));                                                \
    q -= sel_##S(down, (T)1, (T)0);                                                             \
    T f = LIBM_##S(floor)(q);                                                                   \
    f += sel_##S(q - f > (T)0.5, (T)1, (T)0);                                                   \
    f = sel_##S(q == 0, LIBM_##S(copysign)((T)0, x / y), f);                                    \
    return y == 0 ? x / y : f;                                                                  \
  }                                                                                             \
  static inline T h_xlogy_##S(T x, T y) {                                                       \
    if (y != y) return y;                                                                       \
    if (x == 0) return (T)0;                                                                    \
    return x * LIBM_##S(log)(y);                                                                \
  }                                                                                             \
  static inline T h_logaddexp_##S(T x, T y) {                                                   \
    if (LIBM_##S(fabs)(x) == (T)INFINITY && x == y) return x;                                   \
    T m = x < y ? y : x;                                                                        \
    return m + LIBM_##S(log1p)(LIBM_##S(exp)(-LIBM_##S(fabs)(x - y)));                          \
  }

#define MATH_KERNELS(S, T)                                                                      \
  MATH_HELPERS(S, T)                                                                            \
  UK(erf_##S, T, T, LIBM_##S(erf)(x))                                                           \
  UK(erfc_##S, T, T, LIBM_##S(erfc)(x))                                                         \
  UK(erfinv_##S, T, T, h_erfinv_##S(x))                                                         \
  UK(log1p_##S, T, T, LIBM_##S(log1p)(x))                                                       \
  UK(expm1_##S, T, T, LIBM_##S(expm1)(x))                                                       \
  UK(log2_##S, T, T, LIBM_##S(log2)(x))                                                         \
  UK(log10_##S, T, T, LIBM_##S(log10)(x))                                                       \
  UK(exp2_##S, T, T, LIBM_##S(exp2)(x))                                                         \
  UK(tan_##S, T, T, LIBM_##S(tan)(x))                                                           \
  UK(asin_##S, T, T, LIBM_##S(asin)(x))                                                         \
  UK(acos_##S, T, T, LIBM_##S(acos)(x))                                                         \
  UK(atan_##S, T, T, LIBM_##S(atan)(x))                                                         \
  UK(sinh_##S, T, T, LIBM_##S(sinh)(x))                                                         \
  UK(cosh_##S, T, T, LIBM_##S(cosh)(x))                                                         \
  UK(asinh_##S, T, T, LIBM_##S(asinh)(x))                                                       \
  UK(acosh_##S, T, T, LIBM_##S(acosh)(x))                                                       \
  UK(atanh_##S, T, T, LIBM_##S(atanh)(x))                                                       \
  UK(frac_##S, T, T, x - LIBM_##S(trunc)(x))                                                    \
  UK(sinc_##S, T, T, h_sinc_##S(x))                                                             \
  UK(erfd_##S, T, T, (T)M_2_SQRTPI * LIBM_##S(exp)(-x * x))                                     \
  UK(erfcd_##S, T, T, -(T)M_2_SQRTPI * LIBM_##S(exp)(-x * x))                                   \
  UK(erfinvd_##S, T, T, (T)(1.0 / M_2_SQRTPI) * LIBM_##S(exp)(h_erfinv_##S(x) * h_erfinv_##S(x))) \
  UK(log1pd_##S, T, T, (T)1 / (x + (T)1))                                                       \
  UK(log2d_##S, T, T, (T)1 / (x * (T)M_LN2))                                                    \
  UK(log10d_##S, T, T, (T)1 / (x * (T)M_LN10))                                                  \
  UK(exp2d_##S, T, T, LIBM_##S(exp2)(x) * (T)M_LN2)                                             \
  UK(tand_##S, T, T, (T)1 + LIBM_##S(tan)(x) * LIBM_##S(tan)(x))                                \
  UK(asind_##S, T, T, (T)1 / LIBM_##S(sqrt)((T)1 - x * x))                                      \
  UK(acosd_##S, T, T, (T)-1 / LIBM_##S(sqrt)((T)1 - x * x))                                     \
  UK(atand_##S, T, T, (T)1 / (x * x + (T)1))                                                    \
  UK(asinhd_##S, T, T, (T)1 / LIBM_##S(sqrt)(x * x + (T)1))                                     \
  UK(acoshd_##S, T, T, (T)1 / LIBM_##S(sqrt)(x * x - (T)1))                                     \
  UK(atanhd_##S, T, T, (T)1 / ((T)1 - x * x))                                                   \
  UK(sincd_##S, T, T, h_sincd_##S(x))                                                           \
  BK(atan2_##S, T, T, LIBM_##S(atan2)(x, y))                                                    \
  BK(hypot_##S, T, T, LIBM_##S(hypot)(x, y))                                                    \
  BK(rem_##S, T, T, h_rem_##S(x, y))                                                            \
  BK(fmod_##S, T, T, h_fmod_##S(x, y))                                                          \
  BK(floordiv_##S, T, T, h_floordiv_##S(x, y))                                                  \
  BK(logaddexp_##S, T, T, h_logaddexp_##S(x, y))                                                \
  BK(xlogy_##S, T, T, h_xlogy_##S(x, y))                                                        \
  BK(copysign_##S, T, T, LIBM_##S(copysign)(x, y))                                              \
  BK(atan2dx_##S, T, T, y / (x * x + y * y))                                                    \
  BK(atan2dy_##S, T, T, -x / (x * x + y * y))                                                   \
  BK(hypotd_##S, T, T, x / LIBM_##S(hypot)(x, y))                                               \
  BK(remdy_##S, T, T, -h_floordiv_##S(x, y))                                                    \
  BK(fmoddy_##S, T, T, -LIBM_##S(trunc)(x / y))                                                 \
  BK(laed_##S, T, T, (T)1 / ((T)1 + LIBM_##S(exp)(y - x)))                                      \
  BK(xlogyz_##S, T, uint8_t, x == 0 && y <= 0)                                                  \
  BK(xlogydy_##S, T, T, x / y)                                                                  \
  BK(copysigndx_##S, T, T, x == 0 ? (T)0 : LIBM_##S(copysign)(x, y) / x)

MATH_KERNELS(f, float)
MATH_KERNELS(d, double)

/* The integer clamps take their bounds as exact int64 values in the bytes of p[0] and p[1]
 * (clamp_params): a double holds int64 bounds only up to 2^53. */
static inline int64_t int_bound(const double *p, int k) {
  int64_t v;
  memcpy(&v, p + k, sizeof v);
  return v;
}

/* integer power by squaring with wrap-around; a negative exponent (a tensor's: a number's is
 * refused before), as torch: 1 for base 1, +-1 for base -1, else 0. NEG(e): e < 0 for signed T. */
#define INT_KERNELS(S, T, UT, NEG)                                                              \
  static inline T ipow_##S(T base, T e) {                                                       \
    if (NEG(e)) return base == 1 ? (T)1 : (T)(UT)(base == (T)(UT)-1 ? ((e & 1) ? (UT)-1 : 1) : 0); \
    UT r = 1, b = (UT)base;                                                                     \
    for (uint64_t k = (uint64_t)e; k; k >>= 1) {                                                \
      if (k & 1) r = (UT)(r * b);                                                               \
      b = (UT)(b * b);                                                                          \
    }                                                                                           \
    return (T)r;                                                                                \
  }                                                                                             \
  BK(add_##S, T, T, (UT)x + (UT)y)                                                              \
  BK(sub_##S, T, T, (UT)x - (UT)y)                                                              \
  BK(mul_##S, T, T, (UT)x *(UT)y)                                                               \
  BK(pow_##S, T, T, ipow_##S(x, y))                                                             \
  BK(max_##S, T, T, x > y ? x : y)                                                              \
  BK(min_##S, T, T, x < y ? x : y)                                                              \
  UK(neg_##S, T, T, (UT)0 - (UT)x)                                                              \
  UK(id_##S, T, T, x)                                                                           \
  UK(not_##S, T, uint8_t, x == 0)                                                               \
  static inline T iclamp_##S(T x, const double *p) {                                            \
    int64_t v = x, lo = int_bound(p, 0), hi = int_bound(p, 1);                                  \
    if (v < lo) v = lo;                                                                         \
    return (T)(v > hi ? hi : v);                                                                \
  }                                                                                             \
  UK(clamp_##S, T, T, iclamp_##S(x, p))

#define IS_NEGATIVE(e) ((e) < 0)
#define NEVER_NEGATIVE(e) ((void)(e), 0)
#define SIGNED_KERNELS(S, T, UT)                                                                \
  INT_KERNELS(S, T, UT, IS_NEGATIVE)                                                            \
  UK(abs_##S, T, T, x < 0 ? (UT)0 - (UT)x : (UT)x)                                              \
  UK(relu_##S, T, T, x > 0 ? x : 0)                                                             \
  UK(sign_##S, T, T, (x > 0) - (x < 0))

SIGNED_KERNELS(l, int64_t, uint64_t)
SIGNED_KERNELS(i, int32_t, uint32_t)
INT_KERNELS(u, uint8_t, uint8_t, NEVER_NEGATIVE)
UK(sign_u, uint8_t, uint8_t, x != 0)

/* Integer remainder, fmod and floor division. A zero divisor is refused before a kernel runs
 * (int_division_by_zero); the kernels still give 0 for it, so that no input can trap (SIGFPE).
 * Division by -1 never divides: MIN % -1 and MIN / -1 trap on x86, and their results are 0 and
 * MIN (wrapped, as every other integer overflow here). */
#define SIGNED_DIV_KERNELS(S, T, UT)                                                            \
  static inline T irem_##S(T x, T y) {                                                          \
    if (y == 0 || y == -1) return 0;                                                            \
    T r = (T)(x % y);                                                                           \
    if (r != 0 && ((r < 0) != (y < 0))) r = (T)(r + y);                                         \
    return r;                                                                                   \
  }                                                                                             \
  static inline T ifmod_##S(T x, T y) { return (y == 0 || y == -1) ? 0 : (T)(x % y); }           \
  static inline T ifloordiv_##S(T x, T y) {                                                     \
    if (y == 0) return 0;                                                                       \
    if (y == -1) return (T)((UT)0 - (UT)x);                                                     \
    T q = (T)(x / y);                                                                           \
    if (x % y != 0 && ((x < 0) != (y < 0))) q--;                                                \
    return q;                                                                                   \
  }                                                                                             \
  BK(rem_##S, T, T, irem_##S(x, y))                                                             \
  BK(fmod_##S, T, T, ifmod_##S(x, y))                                                           \
  BK(floordiv_##S, T, T, ifloordiv_##S(x, y))

SIGNED_DIV_KERNELS(l, int64_t, uint64_t)
SIGNED_DIV_KERNELS(i, int32_t, uint32_t)
BK(rem_u, uint8_t, uint8_t, y == 0 ? 0 : x % y)
BK(fmod_u, uint8_t, uint8_t, y == 0 ? 0 : x % y)
BK(floordiv_u, uint8_t, uint8_t, y == 0 ? 0 : x / y)

/* comparisons: every dtype, bool result */
#define CMP_KERNELS(S, T)                                                                       \
  BK(eq_##S, T, uint8_t, x == y)                                                                \
  BK(ne_##S, T, uint8_t, x != y)                                                                \
  BK(lt_##S, T, uint8_t, x < y)                                                                 \
  BK(le_##S, T, uint8_t, x <= y)                                                                \
  BK(gt_##S, T, uint8_t, x > y)                                                                 \
  BK(ge_##S, T, uint8_t, x >= y)

CMP_KERNELS(f, float)
CMP_KERNELS(d, double)
CMP_KERNELS(l, int64_t)
CMP_KERNELS(i, int32_t)
CMP_KERNELS(u, uint8_t)

/* bool: add is or, mul is and (as PyTorch) */
BK(or_b, uint8_t, uint8_t, (x | y) != 0)
BK(and_b, uint8_t, uint8_t, (x & y) != 0)

/* --- float32 transcendentals, unit stride, on CPUs with AVX2 and FMA: SLEEF's vectorised
 * functions (within 1 ulp; erfc 1.5), 8 lanes at a time, as PyTorch's CPU kernels do (libm's
 * scalar tanhf/erff/expf were 3-6x slower than PyTorch). The tail and strided rows take the
 * scalar kernel, as does a CPU without AVX2. --- */

#define SLEEF_UK(name, scalar, VEXPR)                                                            \
  __attribute__((target("avx2,fma"))) static void name##_v8(int64_t n, const float *a, float *o) { \
    int64_t i = 0;                                                                              \
    for (; i + 8 <= n; i += 8) {                                                                \
      __m256 x = _mm256_loadu_ps(a + i);                                                        \
      _mm256_storeu_ps(o + i, VEXPR);                                                           \
    }                                                                                           \
    if (i < n) scalar(n - i, a + i, 1, o + i, 1, NULL);                                         \
  }                                                                                             \
  static void name(int64_t n, const void *pa, int64_t sa, void *po, int64_t so, const double *p) { \
    if (sa == 1 && so == 1 && simd_f8())                                                        \
      name##_v8(n, pa, po);                                                                     \
    else                                                                                        \
      scalar(n, pa, sa, po, so, p);                                                             \
  }

/* (not asinh/acosh: SLEEF's float versions overflow to inf from |x| ~ 1.8e19, sqrt(FLT_MAX)) */
SLEEF_UK(exp_fv, exp_f, Sleef_expf8_u10avx2(x))
SLEEF_UK(log_fv, log_f, Sleef_logf8_u10avx2(x))
SLEEF_UK(tanh_fv, tanh_f, Sleef_tanhf8_u10avx2(x))
SLEEF_UK(sigmoid_fv, sigmoid_f, v8_sigmoid(x))
SLEEF_UK(gelu_fv, gelu_f, v8_gelu(x))
SLEEF_UK(sin_fv, sin_f, Sleef_sinf8_u10avx2(x))
SLEEF_UK(cos_fv, cos_f, Sleef_cosf8_u10avx2(x))
SLEEF_UK(tanhd_fv, tanhd_f, v8_tanhd(x))
SLEEF_UK(sigmoidd_fv, sigmoidd_f, v8_sigmoidd(x))
SLEEF_UK(gelud_fv, gelud_f, v8_gelud(x))
SLEEF_UK(erf_fv, erf_f, Sleef_erff8_u10avx2(x))
SLEEF_UK(erfc_fv, erfc_f, Sleef_erfcf8_u15avx2(x))
SLEEF_UK(log1p_fv, log1p_f, Sleef_log1pf8_u10avx2(x))
SLEEF_UK(expm1_fv, expm1_f, Sleef_expm1f8_u10avx2(x))
SLEEF_UK(log2_fv, log2_f, Sleef_log2f8_u10avx2(x))
SLEEF_UK(log10_fv, log10_f, Sleef_log10f8_u10avx2(x))
SLEEF_UK(exp2_fv, exp2_f, Sleef_exp2f8_u10avx2(x))
SLEEF_UK(tan_fv, tan_f, Sleef_tanf8_u10avx2(x))
SLEEF_UK(asin_fv, asin_f, Sleef_asinf8_u10avx2(x))
SLEEF_UK(acos_fv, acos_f, Sleef_acosf8_u10avx2(x))
SLEEF_UK(atan_fv, atan_f, Sleef_atanf8_u10avx2(x))
SLEEF_UK(sinh_fv, sinh_f, Sleef_sinhf8_u10avx2(x))
SLEEF_UK(cosh_fv, cosh_f, Sleef_coshf8_u10avx2(x))
SLEEF_UK(atanh_fv, atanh_f, Sleef_atanhf8_u10avx2(x))

/* the float32 kernel from SLEEF, the float64 one from libm */
#define ROW_FV(name) {[PT_FLOAT32] = name##_fv, [PT_FLOAT64] = name##_d}

#define ROW_ALL(name)                                                                           \
  { [PT_FLOAT32] = name##_f, [PT_FLOAT64] = name##_d, [PT_INT64] = name##_l,                   \
    [PT_INT32] = name##_i, [PT_UINT8] = name##_u, [PT_BOOL] = name##_u }
#define ROW_FLOAT(name) {[PT_FLOAT32] = name##_f, [PT_FLOAT64] = name##_d}
#define ROW_NUM(name)                                                                           \
  { [PT_FLOAT32] = name##_f, [PT_FLOAT64] = name##_d, [PT_INT64] = name##_l,                   \
    [PT_INT32] = name##_i, [PT_UINT8] = name##_u }

static const bin_kernel bin_kernels[BIN_COUNT][PT_DTYPE_COUNT] = {
    [PT_BIN_ADD] = {[PT_FLOAT32] = add_f, [PT_FLOAT64] = add_d, [PT_INT64] = add_l,
                    [PT_INT32] = add_i, [PT_UINT8] = add_u, [PT_BOOL] = or_b},
    [PT_BIN_SUB] = ROW_NUM(sub),
    [PT_BIN_MUL] = {[PT_FLOAT32] = mul_f, [PT_FLOAT64] = mul_d, [PT_INT64] = mul_l,
                    [PT_INT32] = mul_i, [PT_UINT8] = mul_u, [PT_BOOL] = and_b},
    [PT_BIN_DIV] = ROW_FLOAT(div),
    [PT_BIN_POW] = ROW_NUM(pow),
    [PT_BIN_MAXIMUM] = {[PT_FLOAT32] = max_f, [PT_FLOAT64] = max_d, [PT_INT64] = max_l,
                        [PT_INT32] = max_i, [PT_UINT8] = max_u, [PT_BOOL] = or_b},
    [PT_BIN_MINIMUM] = {[PT_FLOAT32] = min_f, [PT_FLOAT64] = min_d, [PT_INT64] = min_l,
                        [PT_INT32] = min_i, [PT_UINT8] = min_u, [PT_BOOL] = and_b},
    [PT_BIN_EQ] = ROW_ALL(eq),
    [PT_BIN_NE] = ROW_ALL(ne),
    [PT_BIN_LT] = ROW_ALL(lt),
    [PT_BIN_LE] = ROW_ALL(le),
    [PT_BIN_GT] = ROW_ALL(gt),
    [PT_BIN_GE] = ROW_ALL(ge),
    [PT_BIN_LOGICAL_AND] = {[PT_BOOL] = and_b},
    [PT_BIN_LOGICAL_OR] = {[PT_BOOL] = or_b},
    [BIN_POW_DX] = ROW_FLOAT(powdx),
    [BIN_POW_DY] = ROW_FLOAT(powdy),
    [BIN_DIV_DY] = ROW_FLOAT(divdy),
    [BIN_MAXW] = ROW_FLOAT(maxw),
    [BIN_MINW] = ROW_FLOAT(minw),
    [PT_BIN_ATAN2] = ROW_FLOAT(atan2),
    [PT_BIN_HYPOT] = ROW_FLOAT(hypot),
    [PT_BIN_REMAINDER] = ROW_NUM(rem),
    [PT_BIN_FMOD] = ROW_NUM(fmod),
    [PT_BIN_FLOOR_DIVIDE] = ROW_NUM(floordiv),
    [PT_BIN_LOGADDEXP] = ROW_FLOAT(logaddexp),
    [PT_BIN_XLOGY] = ROW_FLOAT(xlogy),
    [PT_BIN_COPYSIGN] = ROW_FLOAT(copysign),
    [BIN_ATAN2_DX] = ROW_FLOAT(atan2dx),
    [BIN_ATAN2_DY] = ROW_FLOAT(atan2dy),
    [BIN_HYPOT_D] = ROW_FLOAT(hypotd),
    [BIN_REM_DY] = ROW_FLOAT(remdy),
    [BIN_FMOD_DY] = ROW_FLOAT(fmoddy),
    [BIN_LAE_D] = ROW_FLOAT(laed),
    [BIN_XLOGY_ZERO] = ROW_FLOAT(xlogyz),
    [BIN_XLOGY_DY] = ROW_FLOAT(xlogydy),
    [BIN_COPYSIGN_DX] = ROW_FLOAT(copysigndx),
};

static const un_kernel un_kernels[UN_COUNT][PT_DTYPE_COUNT] = {
    [PT_UN_NEG] = ROW_NUM(neg),
    [PT_UN_ABS] = {[PT_FLOAT32] = abs_f, [PT_FLOAT64] = abs_d, [PT_INT64] = abs_l,
                   [PT_INT32] = abs_i, [PT_UINT8] = id_u, [PT_BOOL] = id_u},
    [PT_UN_EXP] = ROW_FV(exp),
    [PT_UN_LOG] = ROW_FV(log),
    [PT_UN_SQRT] = ROW_FLOAT(sqrt),
    [PT_UN_TANH] = ROW_FV(tanh),
    [PT_UN_SIGMOID] = ROW_FV(sigmoid),
    [PT_UN_RELU] = {[PT_FLOAT32] = relu_f, [PT_FLOAT64] = relu_d, [PT_INT64] = relu_l,
                    [PT_INT32] = relu_i, [PT_UINT8] = id_u, [PT_BOOL] = id_u},
    [PT_UN_GELU] = ROW_FV(gelu),
    [PT_UN_SIN] = ROW_FV(sin),
    [PT_UN_COS] = ROW_FV(cos),
    [PT_UN_SIGN] = {[PT_FLOAT32] = sign_f, [PT_FLOAT64] = sign_d, [PT_INT64] = sign_l,
                    [PT_INT32] = sign_i, [PT_UINT8] = sign_u, [PT_BOOL] = id_u},
    [PT_UN_FLOOR] = {[PT_FLOAT32] = floor_f, [PT_FLOAT64] = floor_d, [PT_INT64] = id_l,
                     [PT_INT32] = id_i, [PT_UINT8] = id_u, [PT_BOOL] = id_u},
    [PT_UN_CEIL] = {[PT_FLOAT32] = ceil_f, [PT_FLOAT64] = ceil_d, [PT_INT64] = id_l,
                    [PT_INT32] = id_i, [PT_UINT8] = id_u, [PT_BOOL] = id_u},
    [PT_UN_ROUND] = {[PT_FLOAT32] = round_f, [PT_FLOAT64] = round_d, [PT_INT64] = id_l,
                     [PT_INT32] = id_i, [PT_UINT8] = id_u, [PT_BOOL] = id_u},
    [PT_UN_LOGICAL_NOT] = ROW_ALL(not),
    [UN_CLAMP] = ROW_NUM(clamp),
    [UN_ABS_D] = ROW_FLOAT(absd),
    [UN_LOG_D] = ROW_FLOAT(logd),
    [UN_SQRT_D] = ROW_FLOAT(sqrtd),
    [UN_TANH_D] = ROW_FV(tanhd),
    [UN_SIGMOID_D] = ROW_FV(sigmoidd),
    [UN_RELU_D] = ROW_FLOAT(relud),
    [UN_GELU_D] = ROW_FV(gelud),
    [UN_COS_D] = ROW_FLOAT(cosd),
    [UN_CLAMP_D] = ROW_FLOAT(clampd),
    [PT_UN_ERF] = ROW_FV(erf),
    [PT_UN_ERFC] = ROW_FV(erfc),
    [PT_UN_ERFINV] = ROW_FLOAT(erfinv),
    [PT_UN_LOG1P] = ROW_FV(log1p),
    [PT_UN_EXPM1] = ROW_FV(expm1),
    [PT_UN_LOG2] = ROW_FV(log2),
    [PT_UN_LOG10] = ROW_FV(log10),
    [PT_UN_EXP2] = ROW_FV(exp2),
    [PT_UN_TAN] = ROW_FV(tan),
    [PT_UN_ASIN] = ROW_FV(asin),
    [PT_UN_ACOS] = ROW_FV(acos),
    [PT_UN_ATAN] = ROW_FV(atan),
    [PT_UN_SINH] = ROW_FV(sinh),
    [PT_UN_COSH] = ROW_FV(cosh),
    [PT_UN_ASINH] = ROW_FLOAT(asinh),
    [PT_UN_ACOSH] = ROW_FLOAT(acosh),
    [PT_UN_ATANH] = ROW_FV(atanh),
    [PT_UN_FRAC] = ROW_FLOAT(frac),
    [PT_UN_SINC] = ROW_FLOAT(sinc),
    [UN_ERF_D] = ROW_FLOAT(erfd),
    [UN_ERFC_D] = ROW_FLOAT(erfcd),
    [UN_ERFINV_D] = ROW_FLOAT(erfinvd),
    [UN_LOG1P_D] = ROW_FLOAT(log1pd),
    [UN_LOG2_D] = ROW_FLOAT(log2d),
    [UN_LOG10_D] = ROW_FLOAT(log10d),
    [UN_EXP2_D] = ROW_FLOAT(exp2d),
    [UN_TAN_D] = ROW_FLOAT(tand),
    [UN_ASIN_D] = ROW_FLOAT(asind),
    [UN_ACOS_D] = ROW_FLOAT(acosd),
    [UN_ATAN_D] = ROW_FLOAT(atand),
    [UN_ASINH_D] = ROW_FLOAT(asinhd),
    [UN_ACOSH_D] = ROW_FLOAT(acoshd),
    [UN_ATANH_D] = ROW_FLOAT(atanhd),
    [UN_SINC_D] = ROW_FLOAT(sincd),
};

/* unary ops whose result is floating even for integer inputs */
static bool un_is_float_op(int op) {
  switch (op) {
  case PT_UN_EXP: case PT_UN_LOG: case PT_UN_SQRT: case PT_UN_TANH: case PT_UN_SIGMOID:
  case PT_UN_GELU: case PT_UN_SIN: case PT_UN_COS:
  case PT_UN_ERF: case PT_UN_ERFC: case PT_UN_ERFINV: case PT_UN_LOG1P: case PT_UN_EXPM1:
  case PT_UN_LOG2: case PT_UN_LOG10: case PT_UN_EXP2: case PT_UN_TAN: case PT_UN_ASIN:
  case PT_UN_ACOS: case PT_UN_ATAN: case PT_UN_SINH: case PT_UN_COSH: case PT_UN_ASINH:
  case PT_UN_ACOSH: case PT_UN_ATANH: case PT_UN_SINC:
    return true;
  default:
    return op >= UN_ABS_D;
  }
}

/* ---------------------------------------------------------------------------------------------
 * dtype rules
 * ------------------------------------------------------------------------------------------- */

static int category(pt_dtype dt) {
  return dt == PT_BOOL ? 0 : (pt_dtype_is_floating(dt) ? 2 : 1);
}

pt_dtype pt_result_type(const pt_tensor *a, const pt_tensor *b) {
  bool za = a->ndim == 0, zb = b->ndim == 0;
  if (za == zb) return pt_dtype_promote(a->dtype, b->dtype);
  const pt_tensor *dim = za ? b : a, *zero = za ? a : b;
  /* a 0-d tensor only matters when it is of a higher category */
  return category(zero->dtype) > category(dim->dtype) ? zero->dtype : dim->dtype;
}

pt_dtype pt_result_type_scalar(const pt_tensor *a, bool is_int) {
  int cs = is_int ? 1 : 2;
  if (cs <= category(a->dtype)) return a->dtype;
  return is_int ? PT_INT64 : pt_default_float();
}

bool pt_can_cast(pt_dtype from, pt_dtype to) { return category(from) <= category(to); }

/* ---------------------------------------------------------------------------------------------
 * operands and iteration
 * ------------------------------------------------------------------------------------------- */

typedef pt_ew_opnd opnd; /* a tensor or a number (ew_impl.h) */

static inline opnd T_(pt_tensor *t) { return pt_ew_opnd_tensor(t); }
static inline opnd S_(double s, bool is_int) { return (opnd){NULL, s, is_int, is_int ? pt_ew_sat_i64(s) : 0}; }
static inline opnd N_(pt_number n) { return pt_ew_opnd_number(n); }

/* x * alpha for a number: an integer stays one (int64 arithmetic, wrapping) when alpha is integral */
static opnd scale_opnd(opnd x, double alpha) {
  bool is_int = x.is_int && alpha == floor(alpha);
  opnd r = {NULL, x.s * alpha, is_int, 0};
  if (is_int) r.i = (int64_t)((uint64_t)x.i * (uint64_t)pt_ew_sat_i64(alpha));
  return r;
}

static inline bool same_shape(const pt_tensor *a, const pt_tensor *b) {
  if (a->ndim != b->ndim) return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

static inline bool shape_equals(const pt_tensor *t, int nd, const int64_t *shape) {
  if (t->ndim != nd) return false;
  for (int i = 0; i < nd; i++)
    if (t->shape[i] != shape[i]) return false;
  return true;
}

/* A set of operands over one output shape, with dims of size 1 dropped and dims that are
 * contiguous in every operand merged. Rows are the last dimension. */
#define MAX_OPS 4
typedef struct nd_loop {
  int nd, nops;
  int64_t shape[PT_MAX_DIMS];
  int64_t stride[MAX_OPS][PT_MAX_DIMS];
} nd_loop;

static void nd_setup(nd_loop *l, int nd, const int64_t *shape, int nops,
                     int64_t (*strides)[PT_MAX_DIMS]) {
  int m = 0;
  l->nops = nops;
  for (int d = 0; d < nd; d++) {
    if (shape[d] == 1) continue;
    if (m > 0) {
      bool merge = true;
      for (int k = 0; k < nops; k++)
        if (l->stride[k][m - 1] != strides[k][d] * shape[d]) merge = false;
      if (merge) {
        l->shape[m - 1] *= shape[d];
        for (int k = 0; k < nops; k++) l->stride[k][m - 1] = strides[k][d];
        continue;
      }
    }
    l->shape[m] = shape[d];
    for (int k = 0; k < nops; k++) l->stride[k][m] = strides[k][d];
    m++;
  }
  if (m == 0) {
    l->shape[0] = 1;
    for (int k = 0; k < nops; k++) l->stride[k][0] = 0;
    m = 1;
  }
  l->nd = m;
}

/* Visit every row: off[k] is operand k's element offset of the row's first element.
 * Returns false after the last row. */
typedef struct nd_pos {
  int64_t idx[PT_MAX_DIMS];
  int64_t off[MAX_OPS];
  int64_t rows;
} nd_pos;

static void nd_begin(const nd_loop *l, nd_pos *p) {
  memset(p, 0, sizeof *p);
  p->rows = 1;
  for (int d = 0; d < l->nd - 1; d++) p->rows *= l->shape[d];
}

static void nd_advance(const nd_loop *l, nd_pos *p) {
  for (int d = l->nd - 2; d >= 0; d--) {
    for (int k = 0; k < l->nops; k++) p->off[k] += l->stride[k][d];
    if (++p->idx[d] < l->shape[d]) return;
    for (int k = 0; k < l->nops; k++) p->off[k] -= l->stride[k][d] * l->shape[d];
    p->idx[d] = 0;
  }
}

static inline char *elem_ptr(const pt_tensor *t, int64_t off) {
  return (char *)t->storage->data + (t->offset + off) * (int64_t)pt_dtype_size(t->dtype);
}

/* ---------------------------------------------------------------------------------------------
 * binary engine
 * ------------------------------------------------------------------------------------------- */

static void op_dtypes(int op, pt_dtype res, pt_dtype *compute, pt_dtype *outdt) {
  switch (op) {
  case PT_BIN_EQ: case PT_BIN_NE: case PT_BIN_LT: case PT_BIN_LE: case PT_BIN_GT: case PT_BIN_GE:
    *compute = res;
    *outdt = PT_BOOL;
    return;
  case PT_BIN_LOGICAL_AND: case PT_BIN_LOGICAL_OR:
    *compute = *outdt = PT_BOOL;
    return;
  case PT_BIN_DIV: case BIN_POW_DX: case BIN_POW_DY: case BIN_DIV_DY: case BIN_MAXW: case BIN_MINW:
  case PT_BIN_ATAN2: case PT_BIN_XLOGY: case PT_BIN_COPYSIGN:
    *compute = *outdt = pt_dtype_is_floating(res) ? res : pt_default_float();
    return;
  case BIN_XLOGY_ZERO:
    *compute = pt_dtype_is_floating(res) ? res : pt_default_float();
    *outdt = PT_BOOL;
    return;
  default:
    *compute = *outdt = res;
  }
}

static pt_status negative_int_power(pt_ctx *ctx, const char *fname) {
  return pt_fail(ctx, PT_EARG, "%s: integers to negative integer powers are not allowed", fname);
}

/* Run kernel k over out (already allocated with the broadcast shape). x / y are tensors of the
 * compute dtype or numbers stored in xb / yb. */
/* Element-wise kernels over contiguous arrays are split over the intra-op threads from this many
 * elements on (each thread a range of the same arrays: the same numbers); below it, one call. */
#define EW_GRAIN 32768

typedef struct bin_job {
  bin_kernel k;
  const char *x, *y;
  char *o;
  int64_t xs, ys;    /* 1, or 0 for a scalar */
  size_t xe, ye, oe; /* element sizes */
} bin_job;

static void bin_chunk(void *arg, int64_t b, int64_t e, int tid) {
  (void)tid;
  const bin_job *j = arg;
  j->k(e - b, j->x + b * j->xs * (int64_t)j->xe, j->xs, j->y + b * j->ys * (int64_t)j->ye, j->ys,
       j->o + b * (int64_t)j->oe, 1);
}

static void bin_contiguous(const pt_ctx *ctx, bin_kernel k, int64_t n, const void *x, int64_t xs,
                           size_t xe, const void *y, int64_t ys, size_t ye, void *o, size_t oe) {
  if (n < 2 * EW_GRAIN) {
    k(n, x, xs, y, ys, o, 1);
    return;
  }
  bin_job j = {k, x, y, o, xs, ys, xe, ye, oe};
  pt_parallel_for(ctx, n, EW_GRAIN, bin_chunk, &j);
}

void pt_ew_run_binary(const pt_ctx *ctx, bin_kernel k, pt_tensor *o, const pt_tensor *x,
                      const void *xb, const pt_tensor *y, const void *yb) {
  int64_t n = pt_tensor_numel(o);
  if (n == 0) return;
  bool oc = pt_tensor_is_contiguous(o);
  int64_t nx = x ? pt_tensor_numel(x) : 1, ny = y ? pt_tensor_numel(y) : 1;
  if (oc && (!x || (pt_tensor_is_contiguous(x) && (nx == n || nx == 1))) &&
      (!y || (pt_tensor_is_contiguous(y) && (ny == n || ny == 1)))) {
    bin_contiguous(ctx, k, n, x ? pt_tensor_data(x) : xb, nx == n ? 1 : 0,
                   x ? pt_dtype_size(x->dtype) : 0, y ? pt_tensor_data(y) : yb, ny == n ? 1 : 0,
                   y ? pt_dtype_size(y->dtype) : 0, pt_tensor_data(o), pt_dtype_size(o->dtype));
    return;
  }
  int64_t st[3][PT_MAX_DIMS];
  memcpy(st[0], o->stride, sizeof st[0]);
  if (x) pt_broadcast_strides(x, o->ndim, o->shape, st[1]);
  else memset(st[1], 0, sizeof st[1]);
  if (y) pt_broadcast_strides(y, o->ndim, o->shape, st[2]);
  else memset(st[2], 0, sizeof st[2]);
  nd_loop l;
  nd_setup(&l, o->ndim, o->shape, 3, st);
  nd_pos p;
  nd_begin(&l, &p);
  int last = l.nd - 1;
  for (int64_t r = 0; r < p.rows; r++) {
    k(l.shape[last], x ? elem_ptr(x, p.off[1]) : xb, l.stride[1][last],
      y ? elem_ptr(y, p.off[2]) : yb, l.stride[2][last], elem_ptr(o, p.off[0]), l.stride[0][last]);
    nd_advance(&l, &p);
  }
}

static inline bool contig(const pt_tensor *t) {
  int64_t s = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->shape[i] != 1 && t->stride[i] != s) return false;
    s *= t->shape[i];
  }
  return true;
}

/* remainder, fmod and floor_divide on integers divide: a zero divisor is an error */
static inline bool int_divides(int op, pt_dtype cdt) {
  return (op == PT_BIN_REMAINDER || op == PT_BIN_FMOD || op == PT_BIN_FLOOR_DIVIDE) &&
         !pt_dtype_is_floating(cdt);
}

#define ANY_ZERO(T)                                                                             \
  do {                                                                                          \
    const T *v = pt_tensor_data(t);                                                             \
    bool z = false;                                                                             \
    for (int64_t i = 0; i < n; i++) z |= v[i] == 0;                                             \
    return z;                                                                                   \
  } while (0)

/* whether an integer tensor has a zero element */
static bool has_zero(const pt_tensor *t) {
  int64_t n = pt_tensor_numel(t);
  if (contig(t)) {
    switch (t->dtype) {
    case PT_INT64: ANY_ZERO(int64_t);
    case PT_INT32: ANY_ZERO(int32_t);
    case PT_UINT8: case PT_BOOL: ANY_ZERO(uint8_t);
    default: break;
    }
  }
  for (int64_t i = 0; i < n; i++)
    if (pt_tensor_get_flat(t, i) == 0) return true;
  return false;
}

/* the integer number in buf (dtype dt) is zero */
static bool buf_is_zero(const void *buf, pt_dtype dt) { return pt_ew_int_at(buf, dt) == 0; }

static pt_status division_by_zero(pt_ctx *ctx, const char *fname) {
  return pt_fail(ctx, PT_EARG,
                 "%s: integer division by zero (a divisor is 0; a float dtype gives inf or nan "
                 "instead)", fname);
}

/* out = op(x, y) without autograd. dst (optional) is the output, already checked to have the
 * broadcast shape and the op's output dtype. */
static pt_status binary_forward(pt_ctx *ctx, const char *fname, int op, opnd x, opnd y,
                                pt_tensor *dst, pt_tensor **out) {
  pt_dtype cdt, odt;
  /* fast path: two contiguous tensors of one shape and one dtype (small tensors live here) */
  if (x.t && y.t && !dst && x.t->dtype == y.t->dtype && same_shape(x.t, y.t)) {
    op_dtypes(op, x.t->dtype, &cdt, &odt);
    bin_kernel k = bin_kernels[op][cdt];
    if (k && cdt == x.t->dtype && (op != PT_BIN_POW || pt_dtype_is_floating(cdt)) &&
        !int_divides(op, cdt) && contig(x.t) && contig(y.t)) {
      pt_tensor *o;
      pt_status st = pt_tensor_empty(ctx, odt, x.t->ndim, x.t->shape, &o);
      if (st) return st;
      int64_t n = pt_shape_numel(o->ndim, o->shape);
      size_t es = pt_dtype_size(cdt);
      if (n) bin_contiguous(ctx, k, n, pt_tensor_data(x.t), 1, es, pt_tensor_data(y.t), 1, es,
                            o->storage->data, pt_dtype_size(odt));
      *out = o;
      return PT_OK;
    }
  }
  op_dtypes(op, pt_ew_result_type(x, y), &cdt, &odt);
  bin_kernel k = bin_kernels[op][cdt];
  if (!k) {
    if (op == PT_BIN_SUB && cdt == PT_BOOL)
      return pt_fail(ctx, PT_EARG,
                     "sub: subtraction with bool tensors is not supported (use logical_xor or "
                     "logical_not)");
    return pt_fail(ctx, PT_EARG, "%s: not supported for %s tensors", fname, pt_dtype_name(cdt));
  }
  /* the output shape */
  int nd;
  int64_t shape[PT_MAX_DIMS];
  if (x.t && y.t) {
    if (same_shape(x.t, y.t)) {
      nd = x.t->ndim;
      memcpy(shape, x.t->shape, (size_t)nd * sizeof(int64_t));
    } else {
      pt_status st = pt_broadcast_shapes(ctx, fname, x.t->ndim, x.t->shape, y.t->ndim, y.t->shape,
                                         &nd, shape);
      if (st) return st;
    }
  } else {
    const pt_tensor *t = x.t ? x.t : y.t;
    nd = t->ndim;
    memcpy(shape, t->shape, (size_t)nd * sizeof(int64_t));
  }
  if (op == PT_BIN_POW && !pt_dtype_is_floating(cdt) && !y.t && y.s < 0) /* as torch: a tensor's */
    return negative_int_power(ctx, fname);                                   /* are computed */
  /* inputs in the compute dtype: borrowed when they already are, converted copies otherwise */
  pt_tensor *xconv = NULL, *yconv = NULL, *o = NULL;
  const pt_tensor *xc = x.t, *yc = y.t;
  _Alignas(16) unsigned char xb[16], yb[16];
  pt_status st = PT_OK;
  if (!x.t) pt_ew_number_to_buf(xb, cdt, pt_ew_opnd_value(x));
  else if (x.t->dtype != cdt) {
    if ((st = pt_tensor_to_dtype_raw(ctx, x.t, cdt, &xconv))) goto done;
    xc = xconv;
  }
  if (!y.t) pt_ew_number_to_buf(yb, cdt, pt_ew_opnd_value(y));
  else if (y.t->dtype != cdt) {
    if ((st = pt_tensor_to_dtype_raw(ctx, y.t, cdt, &yconv))) goto done;
    yc = yconv;
  }
  /* (an empty result divides nothing: PyTorch's empty // 0 is empty) */
  if (int_divides(op, cdt) && pt_shape_numel(nd, shape) > 0 && (yc ? has_zero(yc) : buf_is_zero(yb, cdt))) {
    st = division_by_zero(ctx, fname);
    goto done;
  }
  if (dst) o = pt_tensor_retain(dst);
  else if ((st = pt_tensor_empty(ctx, odt, nd, shape, &o))) goto done;
  if (op == PT_BIN_POW && !y.t && y.s == 2 && xc && pt_dtype_is_floating(cdt)) {
    /* x^2 as x * x: the same correctly rounded square, in a vectorised loop (powf per element
     * was 140x slower than PyTorch) */
    pt_ew_run_binary(ctx, bin_kernels[PT_BIN_MUL][cdt], o, xc, xb, xc, xb);
  } else {
    pt_ew_run_binary(ctx, k, o, xc, xb, yc, yb);
  }
  *out = o;
done:
  pt_tensor_release(xconv);
  pt_tensor_release(yconv);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * autograd helpers
 * ------------------------------------------------------------------------------------------- */

#define VERSION_SLOT 8 /* node->ints[VERSION_SLOT + k]: version of input k when recorded */

static void save_versions(pt_node *node) {
  for (int k = 0; k < node->n_inputs; k++)
    node->ints[VERSION_SLOT + k] = node->inputs[k] ? (int64_t)atomic_load(&node->inputs[k]->storage->version) : 0;
  node->n_ints = VERSION_SLOT + node->n_inputs;
}

static pt_status check_versions(pt_ctx *ctx, pt_node *node) {
  for (int k = 0; k < node->n_inputs; k++) {
    pt_tensor *t = node->inputs[k];
    if (t && (int64_t)atomic_load(&t->storage->version) != node->ints[VERSION_SLOT + k])
      return pt_fail(ctx, PT_ESTATE,
                     "one of the variables needed for gradient computation has been modified by "
                     "an inplace operation (input %d is at version %u; expected version %lld)",
                     k + 1, (unsigned)atomic_load(&t->storage->version),
                     (long long)node->ints[VERSION_SLOT + k]);
  }
  return PT_OK;
}

/* Reduce a gradient to input t's shape and dtype; takes over the reference to g. */
static pt_status finish_grad(pt_ctx *ctx, pt_tensor *g, const pt_tensor *t, pt_tensor **out) {
  pt_tensor *r = NULL, *c = NULL;
  pt_status st = pt_sum_to_shape(ctx, g, t->ndim, t->shape, &r);
  pt_tensor_release(g);
  if (st) return st;
  st = pt_tensor_to_dtype_raw(ctx, r, t->dtype, &c);
  pt_tensor_release(r);
  if (st) return st;
  *out = c;
  return PT_OK;
}

/* g * d where d = op(x, y) */
static pt_status grad_times(pt_ctx *ctx, pt_tensor *g, int op, opnd x, opnd y, pt_tensor **out) {
  pt_tensor *d = NULL;
  pt_status st = binary_forward(ctx, bin_names[op], op, x, y, NULL, &d);
  if (st) return st;
  st = binary_forward(ctx, "mul", PT_BIN_MUL, T_(g), T_(d), NULL, out);
  pt_tensor_release(d);
  return st;
}

static bool bin_uses_values(int op) { return op != PT_BIN_ADD && op != PT_BIN_SUB; }

static void fill_masked(pt_tensor *t, const pt_tensor *mask, pt_number value);

/* xlogy's gradient for x: xlogy(g, y), 0 where x == 0 and y <= 0 (PyTorch's formula) */
static pt_status xlogy_grad_x(pt_ctx *ctx, pt_tensor *g, opnd x, opnd y, pt_tensor **out) {
  pt_tensor *d = NULL, *zero = NULL;
  pt_status st = binary_forward(ctx, "xlogy", PT_BIN_XLOGY, T_(g), y, NULL, &d);
  if (!st) st = binary_forward(ctx, "xlogy", BIN_XLOGY_ZERO, x, y, NULL, &zero);
  if (st) {
    pt_tensor_release(d);
    return st;
  }
  fill_masked(d, zero, pt_number_int(0)); /* zero has the broadcast shape of x and y, d of g (the same) */
  pt_tensor_release(zero);
  *out = d;
  return PT_OK;
}

/* layout in ints[1]: 0 both tensors, 1 tensor op number, 2 number op tensor */
static pt_status binary_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  int op = (int)node->ints[0], layout = (int)node->ints[1];
  double alpha = node->scalars[1];
  opnd num = S_(node->scalars[0], node->ints[2] != 0);
  opnd x, y;
  int ix = -1, iy = -1;
  if (layout == 0) {
    x = T_(node->inputs[0]), y = T_(node->inputs[1]), ix = 0, iy = 1;
  } else if (layout == 1) {
    x = T_(node->inputs[0]), y = num, ix = 0;
  } else {
    x = num, y = T_(node->inputs[0]), iy = 0;
  }
  pt_status st;
  if (bin_uses_values(op) && (st = check_versions(ctx, node))) return st;
  for (int side = 0; side < 2; side++) {
    int k = side == 0 ? ix : iy;
    if (k < 0 || !node->needs_grad[k]) continue;
    pt_tensor *d = NULL;
    switch (op) {
    case PT_BIN_ADD:
    case PT_BIN_SUB: {
      double f = side == 0 ? 1.0 : (op == PT_BIN_ADD ? alpha : -alpha);
      if (f == 1.0) d = pt_tensor_retain(g), st = PT_OK;
      else st = binary_forward(ctx, "mul", PT_BIN_MUL, T_(g), S_(f, false), NULL, &d);
      break;
    }
    case PT_BIN_MUL:
      st = binary_forward(ctx, "mul", PT_BIN_MUL, T_(g), side == 0 ? y : x, NULL, &d);
      break;
    case PT_BIN_DIV:
      if (side == 0) st = binary_forward(ctx, "div", PT_BIN_DIV, T_(g), y, NULL, &d);
      else st = grad_times(ctx, g, BIN_DIV_DY, x, y, &d);
      break;
    case PT_BIN_POW:
      st = grad_times(ctx, g, side == 0 ? BIN_POW_DX : BIN_POW_DY, x, y, &d);
      break;
    case PT_BIN_MAXIMUM:
      st = grad_times(ctx, g, BIN_MAXW, side == 0 ? x : y, side == 0 ? y : x, &d);
      break;
    case PT_BIN_MINIMUM:
      st = grad_times(ctx, g, BIN_MINW, side == 0 ? x : y, side == 0 ? y : x, &d);
      break;
    case PT_BIN_ATAN2:
      st = grad_times(ctx, g, side == 0 ? BIN_ATAN2_DX : BIN_ATAN2_DY, x, y, &d);
      break;
    case PT_BIN_HYPOT:
      st = grad_times(ctx, g, BIN_HYPOT_D, side == 0 ? x : y, side == 0 ? y : x, &d);
      break;
    case PT_BIN_REMAINDER:
    case PT_BIN_FMOD:
      if (side == 0) d = pt_tensor_retain(g), st = PT_OK;
      else st = grad_times(ctx, g, op == PT_BIN_FMOD ? BIN_FMOD_DY : BIN_REM_DY, x, y, &d);
      break;
    case PT_BIN_LOGADDEXP:
      st = grad_times(ctx, g, BIN_LAE_D, side == 0 ? x : y, side == 0 ? y : x, &d);
      break;
    case PT_BIN_XLOGY:
      if (side == 0) st = xlogy_grad_x(ctx, g, x, y, &d);
      else st = grad_times(ctx, g, BIN_XLOGY_DY, x, y, &d);
      break;
    case PT_BIN_COPYSIGN:
      if (side == 0) {
        st = grad_times(ctx, g, BIN_COPYSIGN_DX, x, y, &d);
        break;
      }
      /* the sign's source gets zeros, as PyTorch */
      if ((st = pt_tensor_zeros_like(ctx, node->inputs[k], &gin[k]))) return st;
      continue;
    default:
      return pt_fail(ctx, PT_EARG, "no gradient for %s", bin_names[op]);
    }
    if (st) return st;
    if ((st = finish_grad(ctx, d, node->inputs[k], &gin[k]))) return st;
  }
  return PT_OK;
}

static bool bin_differentiable(int op) {
  return op <= PT_BIN_MINIMUM || (op >= PT_BIN_ATAN2 && op <= PT_BIN_COPYSIGN &&
                                  op != PT_BIN_FLOOR_DIVIDE);
}

static pt_status record_binary(pt_ctx *ctx, int op, opnd x, opnd y, double alpha, pt_tensor *out) {
  if (!(x.t && x.t->requires_grad) && !(y.t && y.t->requires_grad)) return PT_OK;
  if (!bin_differentiable(op) || !pt_dtype_is_floating(out->dtype)) return PT_OK;
  pt_tensor *inputs[2];
  int n, layout;
  double s = 0;
  bool is_int = false;
  if (x.t && y.t) {
    inputs[0] = x.t, inputs[1] = y.t, n = 2, layout = 0;
  } else if (x.t) {
    inputs[0] = x.t, n = 1, layout = 1, s = y.s, is_int = y.is_int;
  } else {
    inputs[0] = y.t, n = 1, layout = 2, s = x.s, is_int = x.is_int;
  }
  pt_node *node;
  pt_status st = pt_autograd_record(ctx, out, bin_nodes[op], binary_backward, n, inputs, &node);
  if (st || !node) return st;
  node->ints[0] = op;
  node->ints[1] = layout;
  node->ints[2] = is_int;
  node->scalars[0] = s;
  node->scalars[1] = alpha;
  save_versions(node);
  return PT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * binary: public out-of-place entry points
 * ------------------------------------------------------------------------------------------- */

/* One-element tensors of one floating dtype and rank, nothing to record: `c = a + b` on scalars
 * (W3). Same rank and one element each means the same all-ones shape, so there is nothing to
 * broadcast, promote or iterate; this skips the generic path's dtype tables, kernel call and
 * shape checks (~15 ns of an op that costs ~200 with its Lua handle). false: take the generic
 * path. */
static bool binary_one_element(pt_ctx *ctx, int op, const pt_tensor *a, const pt_tensor *b,
                               pt_tensor **out) {
  if (a->dtype != b->dtype || a->ndim != b->ndim || op > PT_BIN_DIV) return false;
  if ((a->requires_grad || b->requires_grad) && ctx->grad_enabled) return false;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] != 1 || b->shape[i] != 1) return false;
  double r;
  if (a->dtype == PT_FLOAT32) {
    float u = *(const float *)pt_tensor_data(a), v = *(const float *)pt_tensor_data(b), w;
    switch (op) {
    case PT_BIN_ADD: w = u + v; break;
    case PT_BIN_SUB: w = u - v; break;
    case PT_BIN_MUL: w = u * v; break;
    default: w = u / v; break;
    }
    r = w;
  } else if (a->dtype == PT_FLOAT64) {
    double u = *(const double *)pt_tensor_data(a), v = *(const double *)pt_tensor_data(b);
    switch (op) {
    case PT_BIN_ADD: r = u + v; break;
    case PT_BIN_SUB: r = u - v; break;
    case PT_BIN_MUL: r = u * v; break;
    default: r = u / v; break;
    }
  } else {
    return false;
  }
  pt_tensor *o;
  if (pt_tensor_empty(ctx, a->dtype, a->ndim, a->shape, &o)) return false; /* the generic path reports it */
  if (a->dtype == PT_FLOAT32) *(float *)o->storage->data = (float)r;
  else *(double *)o->storage->data = r;
  *out = o;
  return true;
}

static bool overlaps_differently(const pt_tensor *self, const pt_tensor *y);

/* y scaled by alpha (add / sub's alpha): *y becomes the scaled operand, *scaled the tensor that
 * holds it (NULL for numbers and alpha 1), released by the caller */
/* y <- alpha * y for add / sub (alpha != 1; *scaled holds a new tensor operand, else NULL). A
 * tensor y is scaled in the dtype x op y computes in (as PyTorch's add, which multiplies in the
 * result's type: int32 + alpha * bool stays int32, float64 + 0.5 * int64 has no float32 step),
 * so the scaled operand never changes the result's dtype, except that a non-integral alpha makes
 * an integer or bool result float32 (PyTorch refuses it; alpha_result_dtype says so to the
 * in-place and out= forms, which check their destination against it). With a bool result an
 * integral alpha counts as a bool, as PyTorch casts it (b + 2 * c is b or c). */
static pt_dtype alpha_result_dtype(int op, pt_dtype odt, double alpha) {
  if ((op == PT_BIN_ADD || op == PT_BIN_SUB) && !(alpha == floor(alpha)) && !pt_dtype_is_floating(odt))
    return pt_default_float();
  return odt;
}

static pt_status scale_operand(pt_ctx *ctx, const char *fname, opnd x, opnd *y, double alpha,
                               pt_tensor **scaled) {
  *scaled = NULL;
  if (alpha == 1.0) return PT_OK;
  if (!y->t) {
    *y = scale_opnd(*y, alpha);
    return PT_OK;
  }
  bool integral = alpha == floor(alpha);
  pt_dtype cdt = pt_ew_result_type(x, *y);
  if (!integral && !pt_dtype_is_floating(cdt)) cdt = pt_default_float();
  if (cdt == PT_BOOL) { /* alpha as a bool, as PyTorch casts it: y itself, or all false */
    if (alpha != 0.0) return PT_OK;
    pt_status st = binary_forward(ctx, fname, PT_BIN_LOGICAL_AND, *y, S_(0.0, true), NULL, scaled);
    if (!st) *y = T_(*scaled);
    return st;
  }
  pt_tensor *yc = NULL;
  pt_status st = PT_OK;
  if (y->t->dtype != cdt) st = pt_tensor_to_dtype_raw(ctx, y->t, cdt, &yc);
  else yc = pt_tensor_retain(y->t);
  if (!st) st = binary_forward(ctx, fname, PT_BIN_MUL, T_(yc), S_(alpha, integral && !pt_dtype_is_floating(cdt)), NULL, scaled);
  pt_tensor_release(yc);
  if (!st) *y = T_(*scaled);
  return st;
}

/* dst = x op y (in-place ops and out=): straight into dst when the result has its dtype and no
 * operand overlaps it in another layout, else through a copy; dst's version moves either way */
static pt_status binary_write(pt_ctx *ctx, const char *fname, int op, opnd x, opnd y, pt_dtype odt,
                              pt_tensor *dst) {
  pt_tensor *r = NULL;
  pt_status st;
  if (odt == dst->dtype && !overlaps_differently(dst, x.t) && !overlaps_differently(dst, y.t)) {
    st = binary_forward(ctx, fname, op, x, y, dst, &r);
  } else {
    st = binary_forward(ctx, fname, op, x, y, NULL, &r);
    if (!st) st = pt_tensor_copy_into(ctx, dst, r);
  }
  if (!st) atomic_fetch_add(&dst->storage->version, 1);
  pt_tensor_release(r);
  return st;
}

static pt_status binary_op(pt_ctx *ctx, int op, opnd x, opnd y, double alpha, pt_tensor **out) {
  if (x.t && y.t && alpha == 1.0 && binary_one_element(ctx, op, x.t, y.t, out)) return PT_OK;
  const char *fname = bin_names[op];
  pt_tensor *scaled = NULL, *r = NULL;
  opnd yy = y;
  pt_status st = scale_operand(ctx, fname, x, &yy, op == PT_BIN_ADD || op == PT_BIN_SUB ? alpha : 1.0, &scaled);
  if (st) return st;
  st = binary_forward(ctx, fname, op, x, yy, NULL, &r);
  pt_tensor_release(scaled);
  if (st) return st;
  if (ctx->grad_enabled && (st = record_binary(ctx, op, x, y, alpha, r))) {
    pt_tensor_release(r);
    return st;
  }
  *out = r;
  return PT_OK;
}

static pt_status check_binop(pt_ctx *ctx, pt_binop op) {
  if ((unsigned)op >= PT_BIN_COUNT_PUBLIC) return pt_fail(ctx, PT_EARG, "binary: invalid op %d", (int)op);
  return PT_OK;
}

pt_status pt_binary(pt_ctx *ctx, pt_binop op, pt_tensor *a, pt_tensor *b, pt_tensor **out) {
  pt_status st = check_binop(ctx, op);
  return st ? st : binary_op(ctx, op, T_(a), T_(b), 1.0, out);
}

pt_status pt_binary_scalar(pt_ctx *ctx, pt_binop op, pt_tensor *a, double s, bool is_int,
                           bool reversed, pt_tensor **out) {
  pt_status st = check_binop(ctx, op);
  if (st) return st;
  return reversed ? binary_op(ctx, op, S_(s, is_int), T_(a), 1.0, out)
                  : binary_op(ctx, op, T_(a), S_(s, is_int), 1.0, out);
}

pt_status pt_binary_number(pt_ctx *ctx, pt_binop op, pt_tensor *a, pt_number s, bool reversed,
                           pt_tensor **out) {
  pt_status st = check_binop(ctx, op);
  if (st) return st;
  return reversed ? binary_op(ctx, op, N_(s), T_(a), 1.0, out)
                  : binary_op(ctx, op, T_(a), N_(s), 1.0, out);
}

pt_status pt_binary_number_alpha(pt_ctx *ctx, pt_binop op, pt_tensor *a, pt_number s, bool reversed,
                                 double alpha, pt_tensor **out) {
  pt_status st = check_binop(ctx, op);
  if (st) return st;
  if (op != PT_BIN_ADD && op != PT_BIN_SUB) alpha = 1.0;
  return reversed ? binary_op(ctx, op, N_(s), T_(a), alpha, out)
                  : binary_op(ctx, op, T_(a), N_(s), alpha, out);
}

#define BIN_FN(fn, OP)                                                                          \
  pt_status fn(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out) {                      \
    return binary_op(ctx, OP, T_(a), T_(b), 1.0, out);                                          \
  }
BIN_FN(pt_add, PT_BIN_ADD)
BIN_FN(pt_sub, PT_BIN_SUB)
BIN_FN(pt_mul, PT_BIN_MUL)
BIN_FN(pt_div, PT_BIN_DIV)
BIN_FN(pt_pow, PT_BIN_POW)
BIN_FN(pt_maximum, PT_BIN_MAXIMUM)
BIN_FN(pt_minimum, PT_BIN_MINIMUM)
BIN_FN(pt_eq, PT_BIN_EQ)
BIN_FN(pt_ne, PT_BIN_NE)
BIN_FN(pt_lt, PT_BIN_LT)
BIN_FN(pt_le, PT_BIN_LE)
BIN_FN(pt_gt, PT_BIN_GT)
BIN_FN(pt_ge, PT_BIN_GE)
BIN_FN(pt_logical_and, PT_BIN_LOGICAL_AND)
BIN_FN(pt_logical_or, PT_BIN_LOGICAL_OR)
BIN_FN(pt_atan2, PT_BIN_ATAN2)
BIN_FN(pt_hypot, PT_BIN_HYPOT)
BIN_FN(pt_remainder, PT_BIN_REMAINDER)
BIN_FN(pt_fmod, PT_BIN_FMOD)
BIN_FN(pt_floor_divide, PT_BIN_FLOOR_DIVIDE)
BIN_FN(pt_logaddexp, PT_BIN_LOGADDEXP)
BIN_FN(pt_xlogy, PT_BIN_XLOGY)
BIN_FN(pt_copysign, PT_BIN_COPYSIGN)

pt_status pt_add_alpha(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, double alpha, pt_tensor **out) {
  return binary_op(ctx, PT_BIN_ADD, T_(a), T_(b), alpha, out);
}
pt_status pt_sub_alpha(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, double alpha, pt_tensor **out) {
  return binary_op(ctx, PT_BIN_SUB, T_(a), T_(b), alpha, out);
}

/* PyTorch's out=: out = a op b (alpha * b for add/sub), a or b a number when NULL (an, bn).
 * out must have the result's shape; the result is cast to out's dtype when the in-place rules
 * allow it. Written straight into out (no new tensor) unless an operand overlaps it in another
 * layout. Not differentiable, as in PyTorch: refused under grad mode when an operand or out
 * requires grad. */
pt_status pt_binary_into(pt_ctx *ctx, pt_binop op, pt_tensor *a, pt_number an, pt_tensor *b,
                         pt_number bn, double alpha, pt_tensor *out) {
  pt_status st = check_binop(ctx, op);
  if (st) return st;
  const char *fname = bin_names[op];
  if (ctx->grad_enabled &&
      ((a && a->requires_grad) || (b && b->requires_grad) || out->requires_grad))
    return pt_fail(ctx, PT_EARG,
                   "%s: out= does not support autograd, but an argument requires grad (leave out "
                   "out=, or compute under pt.no_grad)", fname);
  if ((st = pt_check_no_internal_overlap(ctx, fname, out))) return st;
  opnd x = a ? T_(a) : N_(an), y = b ? T_(b) : N_(bn);
  pt_dtype cdt, odt;
  op_dtypes(op, pt_ew_result_type(x, y), &cdt, &odt);
  odt = alpha_result_dtype(op, odt, alpha);
  int nd = 0;
  int64_t shape[PT_MAX_DIMS];
  if (a && b) {
    if ((st = pt_broadcast_shapes(ctx, fname, a->ndim, a->shape, b->ndim, b->shape, &nd, shape)))
      return st;
  } else {
    const pt_tensor *t = a ? a : b;
    nd = t->ndim;
    memcpy(shape, t->shape, (size_t)nd * sizeof(int64_t));
  }
  if (!shape_equals(out, nd, shape)) {
    char o[PT_SHAPE_STR_MAX], r[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "%s: out has shape %s, but the result has shape %s", fname,
                   pt_shape_format(out->ndim, out->shape, o, sizeof o),
                   pt_shape_format(nd, shape, r, sizeof r));
  }
  if (!pt_can_cast(odt, out->dtype))
    return pt_fail(ctx, PT_EARG, "%s: result type %s can't be cast to the desired output type %s",
                   fname, pt_dtype_name(odt), pt_dtype_name(out->dtype));
  pt_tensor *scaled = NULL;
  if ((st = scale_operand(ctx, fname, x, &y, op == PT_BIN_ADD || op == PT_BIN_SUB ? alpha : 1.0, &scaled)))
    return st;
  st = binary_write(ctx, fname, op, x, y, odt, out);
  pt_tensor_release(scaled);
  return st;
}

static bool is_integral(double s) { return s == floor(s) && fabs(s) < 9.2e18; }

#define SCALAR_FN(fn, OP, REV)                                                                  \
  pt_status fn(pt_ctx *ctx, pt_tensor *a, double s, pt_tensor **out) {                          \
    opnd n = S_(s, is_integral(s) && !pt_dtype_is_floating(a->dtype));                          \
    return REV ? binary_op(ctx, OP, n, T_(a), 1.0, out) : binary_op(ctx, OP, T_(a), n, 1.0, out); \
  }
SCALAR_FN(pt_add_scalar, PT_BIN_ADD, false)
SCALAR_FN(pt_sub_scalar, PT_BIN_SUB, false)
SCALAR_FN(pt_rsub_scalar, PT_BIN_SUB, true)
SCALAR_FN(pt_mul_scalar, PT_BIN_MUL, false)
SCALAR_FN(pt_div_scalar, PT_BIN_DIV, false)
SCALAR_FN(pt_rdiv_scalar, PT_BIN_DIV, true)
SCALAR_FN(pt_pow_scalar, PT_BIN_POW, false)
SCALAR_FN(pt_rpow_scalar, PT_BIN_POW, true)

/* ---------------------------------------------------------------------------------------------
 * unary
 * ------------------------------------------------------------------------------------------- */

typedef struct un_job {
  un_kernel k;
  const char *x;
  char *o;
  size_t xe, oe;
  const double *p;
} un_job;

static void un_chunk(void *arg, int64_t b, int64_t e, int tid) {
  (void)tid;
  const un_job *j = arg;
  j->k(e - b, j->x + b * (int64_t)j->xe, 1, j->o + b * (int64_t)j->oe, 1, j->p);
}

static void run_unary(const pt_ctx *ctx, un_kernel k, pt_tensor *o, const pt_tensor *x, const double *p) {
  int64_t n = pt_tensor_numel(o);
  if (n == 0) return;
  if (pt_tensor_is_contiguous(o) && pt_tensor_is_contiguous(x) && pt_tensor_numel(x) == n) {
    if (n < 2 * EW_GRAIN) {
      k(n, pt_tensor_data(x), 1, pt_tensor_data(o), 1, p);
    } else {
      un_job j = {k, pt_tensor_data(x), pt_tensor_data(o), pt_dtype_size(x->dtype), pt_dtype_size(o->dtype), p};
      pt_parallel_for(ctx, n, EW_GRAIN, un_chunk, &j);
    }
    return;
  }
  int64_t st[2][PT_MAX_DIMS];
  memcpy(st[0], o->stride, sizeof st[0]);
  pt_broadcast_strides(x, o->ndim, o->shape, st[1]);
  nd_loop l;
  nd_setup(&l, o->ndim, o->shape, 2, st);
  nd_pos pos;
  nd_begin(&l, &pos);
  int last = l.nd - 1;
  for (int64_t r = 0; r < pos.rows; r++) {
    k(l.shape[last], elem_ptr(x, pos.off[1]), l.stride[1][last], elem_ptr(o, pos.off[0]),
      l.stride[0][last], p);
    nd_advance(&l, &pos);
  }
}

static void un_dtypes(int op, pt_dtype in, pt_dtype *compute, pt_dtype *outdt) {
  *compute = in;
  if (un_is_float_op(op) && !pt_dtype_is_floating(in)) *compute = pt_default_float();
  *outdt = op == PT_UN_LOGICAL_NOT ? PT_BOOL : *compute;
}

static pt_status unary_forward(pt_ctx *ctx, int op, pt_tensor *x, const double *p, pt_tensor *dst,
                               pt_tensor **out) {
  pt_dtype cdt, odt;
  un_dtypes(op, x->dtype, &cdt, &odt);
  un_kernel k = un_kernels[op][cdt];
  if (!k) {
    if (op == PT_UN_NEG && cdt == PT_BOOL)
      return pt_fail(ctx, PT_EARG,
                     "neg: negation, the `-` operator, on a bool tensor is not supported (use "
                     "logical_not)");
    return pt_fail(ctx, PT_EARG, "%s: not supported for %s tensors", un_names[op],
                   pt_dtype_name(cdt));
  }
  pt_tensor *xc = NULL, *o = NULL;
  pt_status st = pt_tensor_to_dtype_raw(ctx, x, cdt, &xc);
  if (st) return st;
  if (dst) o = pt_tensor_retain(dst);
  else if ((st = pt_tensor_empty(ctx, odt, x->ndim, x->shape, &o))) {
    pt_tensor_release(xc);
    return st;
  }
  run_unary(ctx, k, o, xc, p);
  pt_tensor_release(xc);
  *out = o;
  return PT_OK;
}

/* d = 0 where the 0/1 derivative mask dx is 0 (both fresh, contiguous, one shape): relu and
 * clamp select their gradient as torch's threshold/clamp backward do, so a NaN or inf gradient
 * does not reach clamped elements through 0 * NaN */
static void zero_where_zero(pt_tensor *d, const pt_tensor *dx) {
  int64_t n = pt_tensor_numel(d);
  if (d->dtype != dx->dtype || pt_tensor_numel(dx) != n || !pt_tensor_is_contiguous(d) ||
      !pt_tensor_is_contiguous(dx))
    return;
  if (d->dtype == PT_FLOAT32) {
    float *o = pt_tensor_data(d);
    const float *m = pt_tensor_data(dx);
    for (int64_t i = 0; i < n; i++) o[i] = m[i] == 0 ? 0.0f : o[i];
  } else if (d->dtype == PT_FLOAT64) {
    double *o = pt_tensor_data(d);
    const double *m = pt_tensor_data(dx);
    for (int64_t i = 0; i < n; i++) o[i] = m[i] == 0 ? 0.0 : o[i];
  }
}

static pt_status unary_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  int op = (int)node->ints[0];
  pt_tensor *x = node->inputs[0], *d = NULL;
  if (!node->needs_grad[0]) return PT_OK;
  if (op == PT_UN_SIGN || op == PT_UN_FLOOR || op == PT_UN_CEIL || op == PT_UN_ROUND)
    return pt_tensor_zeros_like(ctx, x, &gin[0]);
  pt_status st = PT_OK;
  pt_tensor *y = node->saved[0]; /* the output, for tanh, sigmoid and exp (record_unary) */
  if (op == PT_UN_NEG) {
    st = binary_forward(ctx, "mul", PT_BIN_MUL, T_(g), S_(-1.0, false), NULL, &d);
  } else if (op == PT_UN_FRAC) {
    d = pt_tensor_retain(g);
  } else if (y) {
    /* the derivative from the saved output, in vectorised arithmetic, where the input's went
     * through tanhf/expf again per element; the same expressions, so the same numbers:
     * exp' = y, tanh' = 1 - y*y, sigmoid' = y * (1 - y) */
    pt_tensor *u = NULL, *dy = NULL;
    if (op == PT_UN_EXP) {
      dy = pt_tensor_retain(y);
    } else if (op == PT_UN_TANH) {
      if (!(st = binary_forward(ctx, "mul", PT_BIN_MUL, T_(y), T_(y), NULL, &u)))
        st = binary_forward(ctx, "sub", PT_BIN_SUB, S_(1.0, false), T_(u), NULL, &dy);
    } else {
      if (!(st = binary_forward(ctx, "sub", PT_BIN_SUB, S_(1.0, false), T_(y), NULL, &u)))
        st = binary_forward(ctx, "mul", PT_BIN_MUL, T_(y), T_(u), NULL, &dy);
    }
    if (!st) st = binary_forward(ctx, "mul", PT_BIN_MUL, T_(g), T_(dy), NULL, &d);
    pt_tensor_release(u);
    pt_tensor_release(dy);
  } else {
    if ((st = check_versions(ctx, node))) return st;
    pt_tensor *dx = NULL;
    if ((st = unary_forward(ctx, un_deriv[op], x, node->scalars, NULL, &dx))) return st;
    st = binary_forward(ctx, "mul", PT_BIN_MUL, T_(g), T_(dx), NULL, &d);
    if (!st && (op == PT_UN_RELU || op == UN_CLAMP)) zero_where_zero(d, dx);
    pt_tensor_release(dx);
  }
  if (st) return st;
  return finish_grad(ctx, d, x, &gin[0]);
}

static bool un_differentiable(int op) { return un_nodes[op] != NULL; }

static pt_status record_unary(pt_ctx *ctx, int op, pt_tensor *x, const double *p, pt_tensor *out) {
  if (!un_differentiable(op) || !pt_dtype_is_floating(out->dtype)) return PT_OK;
  pt_node *node;
  pt_status st = pt_autograd_record(ctx, out, un_nodes[op], unary_backward, 1, &x, &node);
  if (st || !node) return st;
  node->ints[0] = op;
  node->scalars[0] = p ? p[0] : 0;
  node->scalars[1] = p ? p[1] : 0;
  save_versions(node);
  if (op == PT_UN_EXP || op == PT_UN_TANH || op == PT_UN_SIGMOID) {
    /* the backward reads the output: an alias without history (out's node holding out itself
     * would be a cycle), whose version the engine checks as PyTorch does */
    pt_tensor *alias;
    if ((st = pt_detach(ctx, out, &alias))) return st;
    pt_node_save(node, 0, alias);
  }
  return PT_OK;
}

static pt_status unary_op(pt_ctx *ctx, int op, pt_tensor *x, const double *p, pt_tensor **out) {
  pt_tensor *r = NULL;
  pt_status st = unary_forward(ctx, op, x, p, NULL, &r);
  if (st) return st;
  if (ctx->grad_enabled && (st = record_unary(ctx, op, x, p, r))) {
    pt_tensor_release(r);
    return st;
  }
  *out = r;
  return PT_OK;
}

pt_status pt_unary(pt_ctx *ctx, pt_unop op, pt_tensor *a, pt_tensor **out) {
  if ((unsigned)op >= PT_UN_COUNT_PUBLIC) return pt_fail(ctx, PT_EARG, "unary: invalid op %d", (int)op);
  return unary_op(ctx, op, a, NULL, out);
}

/* out = op(a) into a given tensor (PyTorch's out=), with pt_binary_into's rules. */
pt_status pt_unary_into(pt_ctx *ctx, pt_unop op, pt_tensor *a, pt_tensor *out) {
  if ((unsigned)op >= PT_UN_COUNT_PUBLIC) return pt_fail(ctx, PT_EARG, "unary: invalid op %d", (int)op);
  const char *fname = un_names[op];
  if (ctx->grad_enabled && (a->requires_grad || out->requires_grad))
    return pt_fail(ctx, PT_EARG,
                   "%s: out= does not support autograd, but an argument requires grad (leave out "
                   "out=, or compute under pt.no_grad)", fname);
  pt_status st = pt_check_no_internal_overlap(ctx, fname, out);
  if (st) return st;
  if (!same_shape(out, a)) {
    char o[PT_SHAPE_STR_MAX], r[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "%s: out has shape %s, but the result has shape %s", fname,
                   pt_shape_format(out->ndim, out->shape, o, sizeof o),
                   pt_shape_format(a->ndim, a->shape, r, sizeof r));
  }
  pt_dtype cdt, odt;
  un_dtypes(op, a->dtype, &cdt, &odt);
  if (!pt_can_cast(odt, out->dtype))
    return pt_fail(ctx, PT_EARG, "%s: result type %s can't be cast to the desired output type %s",
                   fname, pt_dtype_name(odt), pt_dtype_name(out->dtype));
  pt_tensor *r = NULL;
  if (odt == out->dtype && !overlaps_differently(out, a)) {
    st = unary_forward(ctx, op, a, NULL, out, &r);
  } else {
    st = unary_forward(ctx, op, a, NULL, NULL, &r);
    if (!st) st = pt_tensor_copy_into(ctx, out, r);
  }
  if (!st) atomic_fetch_add(&out->storage->version, 1);
  pt_tensor_release(r);
  return st;
}

#define UN_FN(fn, OP)                                                                           \
  pt_status fn(pt_ctx *ctx, pt_tensor *a, pt_tensor **out) { return unary_op(ctx, OP, a, NULL, out); }
UN_FN(pt_neg, PT_UN_NEG)
UN_FN(pt_abs, PT_UN_ABS)
UN_FN(pt_exp, PT_UN_EXP)
UN_FN(pt_log, PT_UN_LOG)
UN_FN(pt_sqrt, PT_UN_SQRT)
UN_FN(pt_tanh, PT_UN_TANH)
UN_FN(pt_sigmoid, PT_UN_SIGMOID)
UN_FN(pt_relu, PT_UN_RELU)
UN_FN(pt_gelu, PT_UN_GELU)
UN_FN(pt_sin, PT_UN_SIN)
UN_FN(pt_cos, PT_UN_COS)
UN_FN(pt_logical_not, PT_UN_LOGICAL_NOT)
UN_FN(pt_erf, PT_UN_ERF)
UN_FN(pt_erfc, PT_UN_ERFC)
UN_FN(pt_erfinv, PT_UN_ERFINV)
UN_FN(pt_log1p, PT_UN_LOG1P)
UN_FN(pt_expm1, PT_UN_EXPM1)
UN_FN(pt_log2, PT_UN_LOG2)
UN_FN(pt_log10, PT_UN_LOG10)
UN_FN(pt_exp2, PT_UN_EXP2)
UN_FN(pt_tan, PT_UN_TAN)
UN_FN(pt_asin, PT_UN_ASIN)
UN_FN(pt_acos, PT_UN_ACOS)
UN_FN(pt_atan, PT_UN_ATAN)
UN_FN(pt_sinh, PT_UN_SINH)
UN_FN(pt_cosh, PT_UN_COSH)
UN_FN(pt_asinh, PT_UN_ASINH)
UN_FN(pt_acosh, PT_UN_ACOSH)
UN_FN(pt_atanh, PT_UN_ATANH)
UN_FN(pt_frac, PT_UN_FRAC)
UN_FN(pt_sinc, PT_UN_SINC)

/* A clamp bound must fit the result's dtype, as PyTorch requires of every scalar (integers in an
 * int64 result always do). uint8 takes no negative bound: PyTorch's check lets -255..-1 through
 * and wraps them around (clamp(u8, -1) clamps to 255), which no one means. */
static pt_status check_bound(pt_ctx *ctx, const char *fname, pt_dtype dt, const pt_number *b) {
  if (!b || (dt == PT_INT64 && b->is_int)) return PT_OK;
  if (dt == PT_UINT8 && b->is_int && b->i < 0 && b->i >= -255)
    return pt_fail(ctx, PT_EARG, "%s: value %lld cannot be converted to uint8 without overflow",
                   fname, (long long)b->i);
  return pt_check_value_fits(ctx, fname, dt, b->d);
}

/* clamp parameters for dtype dt (the bounds already promoted into it): floating dtypes get
 * doubles (an open side or a NaN bound is +-inf: no limit), integer dtypes exact int64 bounds in
 * p's bytes (int_bound). */
static pt_status clamp_params(pt_ctx *ctx, const char *fname, pt_dtype dt, const pt_number *lo,
                              const pt_number *hi, double *p) {
  if (!lo && !hi)
    return pt_fail(ctx, PT_EARG, "%s: at least one of min and max must be given", fname);
  if (dt == PT_BOOL) return pt_fail(ctx, PT_EARG, "%s: not supported for bool tensors", fname);
  pt_status st;
  if ((st = check_bound(ctx, fname, dt, lo)) || (st = check_bound(ctx, fname, dt, hi))) return st;
  if (pt_dtype_is_floating(dt)) {
    p[0] = lo ? fmax(lo->d, -INFINITY) : -INFINITY;
    p[1] = hi ? fmin(hi->d, INFINITY) : INFINITY;
  } else { /* integer bounds only (a float bound made dt floating); open sides limit nothing */
    int64_t b[2] = {lo ? lo->i : INT64_MIN, hi ? hi->i : INT64_MAX};
    memcpy(p, b, sizeof b);
  }
  return PT_OK;
}

/* torch.clamp's result dtype: t's promoted with the bounds (a float bound makes an integer or
 * bool t float32, integer bounds make a bool t int64) */
static pt_dtype clamp_dtype(const pt_tensor *t, const pt_number *lo, const pt_number *hi) {
  return pt_result_type_scalar(t, !((lo && !lo->is_int) || (hi && !hi->is_int)));
}

/* a bound given as a double (the C API): an integral one counts as an integer */
static pt_number bound_number(const pt_tensor *t, double v) {
  return is_integral(v) && !pt_dtype_is_floating(t->dtype) ? pt_number_int((int64_t)v)
                                                           : pt_number_float(v);
}

pt_status pt_clamp_number(pt_ctx *ctx, pt_tensor *t, const pt_number *lo, const pt_number *hi,
                          pt_tensor **out) {
  double p[2];
  pt_dtype dt = clamp_dtype(t, lo, hi);
  pt_status st = clamp_params(ctx, "clamp", dt, lo, hi, p);
  if (st) return st;
  if (dt == t->dtype) return unary_op(ctx, UN_CLAMP, t, p, out);
  pt_tensor *c = NULL;
  if ((st = pt_tensor_to_dtype_raw(ctx, t, dt, &c))) return st;
  st = unary_op(ctx, UN_CLAMP, c, p, out);
  pt_tensor_release(c);
  return st;
}

pt_status pt_clamp(pt_ctx *ctx, pt_tensor *t, bool has_lo, double lo, bool has_hi, double hi,
                   pt_tensor **out) {
  pt_number l = bound_number(t, lo), h = bound_number(t, hi);
  return pt_clamp_number(ctx, t, has_lo ? &l : NULL, has_hi ? &h : NULL, out);
}

/* clamp with tensor bounds (NULL: that side open), as torch.clamp(t, min, max) with tensors: the
 * dtype of t promoted with the bounds, the three broadcast, min(max(t, lo), hi) with NaN from any
 * of them (lo > hi gives hi). Gradients as torch's clamp_backward / clamp_backward_min_max: t
 * where lo <= t <= hi, lo where t < lo < hi, hi where t > hi or hi < lo, nothing elsewhere (NaN,
 * lo == hi outside). Built from the ops (the values computed once without a graph, then selected
 * through where), so create_graph passes through it too. */
static pt_status clamp_tensor(pt_ctx *ctx, const char *fname, pt_tensor *t, pt_tensor *lo,
                              pt_tensor *hi, pt_tensor **out) {
  if (!lo && !hi) return pt_fail(ctx, PT_EARG, "%s: at least one of min and max must be given", fname);
  int nd = t->ndim, n2;
  int64_t shape[PT_MAX_DIMS], s2[PT_MAX_DIMS];
  memcpy(shape, t->shape, sizeof shape);
  pt_status st = PT_OK;
  for (int k = 0; k < 2 && !st; k++) {
    pt_tensor *b = k == 0 ? lo : hi;
    if (!b) continue;
    if ((st = pt_broadcast_shapes(ctx, fname, nd, shape, b->ndim, b->shape, &n2, s2))) {
      char x[PT_SHAPE_STR_MAX], y[PT_SHAPE_STR_MAX];
      return pt_fail(ctx, PT_ESHAPE, "%s: shapes %s (input) and %s (%s) cannot be broadcast", fname,
                     pt_shape_format(t->ndim, t->shape, x, sizeof x),
                     pt_shape_format(b->ndim, b->shape, y, sizeof y), k == 0 ? "min" : "max");
    }
    nd = n2;
    memcpy(shape, s2, sizeof shape);
  }
  bool grad = ctx->grad_enabled;
  pt_tensor *r1 = NULL, *raw = NULL;
  ctx->grad_enabled = false; /* the values; the graph (if any) comes through where below */
  st = lo ? pt_binary(ctx, PT_BIN_MAXIMUM, t, lo, &r1) : (r1 = pt_tensor_retain(t), PT_OK);
  if (!st) st = hi ? pt_binary(ctx, PT_BIN_MINIMUM, r1, hi, &raw) : (raw = pt_tensor_retain(r1), PT_OK);
  ctx->grad_enabled = grad;
  pt_tensor_release(r1);
  if (st) return st;
  if (!grad || !pt_dtype_is_floating(raw->dtype) ||
      !(t->requires_grad || (lo && lo->requires_grad) || (hi && hi->requires_grad))) {
    *out = raw;
    return PT_OK;
  }
  pt_dtype dt = raw->dtype;
  pt_tensor *x = NULL, *l = NULL, *h = NULL, *m_self = NULL, *m_lo = NULL, *m_hi = NULL, *a = NULL,
            *b = NULL, *y = raw;
  raw = NULL;
  st = pt_to_dtype(ctx, t, dt, &x);
  if (!st && lo) st = pt_to_dtype(ctx, lo, dt, &l);
  if (!st && hi) st = pt_to_dtype(ctx, hi, dt, &h);
  /* the masks (comparisons record nothing) */
  if (!st && l && h) {
    if (!(st = pt_binary(ctx, PT_BIN_GE, x, l, &a)) && !(st = pt_binary(ctx, PT_BIN_LE, x, h, &b)))
      st = pt_binary(ctx, PT_BIN_LOGICAL_AND, a, b, &m_self);
    pt_tensor_release(a);
    pt_tensor_release(b);
    a = b = NULL;
    if (!st && !(st = pt_binary(ctx, PT_BIN_LT, x, l, &a)) && !(st = pt_binary(ctx, PT_BIN_LT, l, h, &b)))
      st = pt_binary(ctx, PT_BIN_LOGICAL_AND, a, b, &m_lo);
    pt_tensor_release(a);
    pt_tensor_release(b);
    a = b = NULL;
    if (!st && !(st = pt_binary(ctx, PT_BIN_GT, x, h, &a)) && !(st = pt_binary(ctx, PT_BIN_LT, h, l, &b)))
      st = pt_binary(ctx, PT_BIN_LOGICAL_OR, a, b, &m_hi);
    pt_tensor_release(a);
    pt_tensor_release(b);
    a = b = NULL;
  } else if (!st && l) {
    if (!(st = pt_binary(ctx, PT_BIN_GE, x, l, &m_self))) st = pt_binary(ctx, PT_BIN_LT, x, l, &m_lo);
  } else if (!st) {
    if (!(st = pt_binary(ctx, PT_BIN_LE, x, h, &m_self))) st = pt_binary(ctx, PT_BIN_GT, x, h, &m_hi);
  }
  /* y = where(m_self, x, where(m_lo, lo, where(m_hi, hi, values))) */
  pt_tensor *sel[3][2] = {{m_hi, h}, {m_lo, l}, {m_self, x}};
  for (int k = 0; k < 3 && !st; k++) {
    if (!sel[k][0]) continue;
    pt_tensor *nxt = NULL;
    st = pt_where(ctx, sel[k][0], sel[k][1], y, &nxt);
    if (!st) {
      pt_tensor_release(y);
      y = nxt;
    }
  }
  pt_tensor_release(x);
  pt_tensor_release(l);
  pt_tensor_release(h);
  pt_tensor_release(m_self);
  pt_tensor_release(m_lo);
  pt_tensor_release(m_hi);
  if (st) {
    pt_tensor_release(y);
    return st;
  }
  *out = y;
  return PT_OK;
}

pt_status pt_clamp_tensor(pt_ctx *ctx, pt_tensor *t, pt_tensor *lo, pt_tensor *hi, pt_tensor **out) {
  return clamp_tensor(ctx, "clamp", t, lo, hi, out);
}

/* ---------------------------------------------------------------------------------------------
 * where and masked_fill
 * ------------------------------------------------------------------------------------------- */

static inline void copy_elem(char *d, const char *s, size_t es) {
  switch (es) {
  case 1: *d = *s; break;
  case 4: memcpy(d, s, 4); break;
  default: memcpy(d, s, 8); break;
  }
}

static pt_status where_forward(pt_ctx *ctx, pt_tensor *cond, pt_tensor *a, pt_tensor *b,
                               pt_tensor **out) {
  /* uint8 too, read as nonzero: torch's deprecated byte conditions */
  if (cond->dtype != PT_BOOL && cond->dtype != PT_UINT8)
    return pt_fail(ctx, PT_EARG, "where: condition must be a bool tensor, got %s",
                   pt_dtype_name(cond->dtype));
  int n1, nd;
  int64_t s1[PT_MAX_DIMS], shape[PT_MAX_DIMS];
  pt_status st = pt_broadcast_shapes(ctx, "where", a->ndim, a->shape, b->ndim, b->shape, &n1, s1);
  if (st) return st;
  if ((st = pt_broadcast_shapes(ctx, "where", cond->ndim, cond->shape, n1, s1, &nd, shape))) {
    char c[PT_SHAPE_STR_MAX], x[PT_SHAPE_STR_MAX], y[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "where: shapes %s, %s and %s cannot be broadcast",
                   pt_shape_format(cond->ndim, cond->shape, c, sizeof c),
                   pt_shape_format(a->ndim, a->shape, x, sizeof x),
                   pt_shape_format(b->ndim, b->shape, y, sizeof y));
  }
  pt_dtype dt = pt_result_type(a, b);
  pt_tensor *ac = NULL, *bc = NULL, *o = NULL;
  if ((st = pt_tensor_to_dtype_raw(ctx, a, dt, &ac)) || (st = pt_tensor_to_dtype_raw(ctx, b, dt, &bc)) ||
      (st = pt_tensor_empty(ctx, dt, nd, shape, &o))) {
    pt_tensor_release(ac);
    pt_tensor_release(bc);
    return st;
  }
  if (pt_tensor_numel(o) > 0) {
    int64_t strides[4][PT_MAX_DIMS];
    memcpy(strides[0], o->stride, sizeof strides[0]);
    pt_broadcast_strides(cond, nd, shape, strides[1]);
    pt_broadcast_strides(ac, nd, shape, strides[2]);
    pt_broadcast_strides(bc, nd, shape, strides[3]);
    nd_loop l;
    nd_setup(&l, nd, shape, 4, strides);
    nd_pos p;
    nd_begin(&l, &p);
    int last = l.nd - 1;
    size_t es = pt_dtype_size(dt);
    int64_t n = l.shape[last];
    for (int64_t r = 0; r < p.rows; r++) {
      char *po = elem_ptr(o, p.off[0]);
      const uint8_t *pc = (const uint8_t *)elem_ptr(cond, p.off[1]);
      const char *pa = elem_ptr(ac, p.off[2]), *pb = elem_ptr(bc, p.off[3]);
      for (int64_t i = 0; i < n; i++)
        copy_elem(po + i * l.stride[0][last] * (int64_t)es,
                  pc[i * l.stride[1][last]] ? pa + i * l.stride[2][last] * (int64_t)es
                                            : pb + i * l.stride[3][last] * (int64_t)es,
                  es);
      nd_advance(&l, &p);
    }
  }
  pt_tensor_release(ac);
  pt_tensor_release(bc);
  *out = o;
  return PT_OK;
}

static pt_status where_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *cond = node->saved[0], *zero;
  pt_status st = pt_tensor_scalar(ctx, g->dtype, 0.0, &zero);
  if (st) return st;
  for (int k = 0; k < 2 && !st; k++) {
    if (!node->needs_grad[k]) continue;
    pt_tensor *d = NULL;
    st = where_forward(ctx, cond, k == 0 ? g : zero, k == 0 ? zero : g, &d);
    if (!st) st = finish_grad(ctx, d, node->inputs[k], &gin[k]);
  }
  pt_tensor_release(zero);
  return st;
}

pt_status pt_where(pt_ctx *ctx, pt_tensor *cond, pt_tensor *a, pt_tensor *b, pt_tensor **out) {
  pt_tensor *r = NULL;
  pt_status st = where_forward(ctx, cond, a, b, &r);
  if (st) return st;
  if (ctx->grad_enabled && pt_dtype_is_floating(r->dtype)) {
    pt_node *node;
    pt_tensor *inputs[2] = {a, b};
    if ((st = pt_autograd_record(ctx, r, "WhereBackward", where_backward, 2, inputs, &node))) {
      pt_tensor_release(r);
      return st;
    }
    if (node) pt_node_save(node, 0, pt_tensor_retain(cond));
  }
  *out = r;
  return PT_OK;
}

/* mask's checks; out (when not NULL): the shape t and mask broadcast to (masked_fill's result, as
 * torch's), else mask must broadcast to t's shape (the in-place forms) */
static pt_status check_mask(pt_ctx *ctx, const char *fname, const pt_tensor *t, const pt_tensor *mask,
                            int *out_nd, int64_t *out_shape) {
  /* uint8 too, read as nonzero: torch's deprecated byte masks */
  if (mask->dtype != PT_BOOL && mask->dtype != PT_UINT8)
    return pt_fail(ctx, PT_EARG, "%s: mask must be a bool tensor, got %s", fname,
                   pt_dtype_name(mask->dtype));
  int nd;
  int64_t shape[PT_MAX_DIMS];
  pt_status st = pt_broadcast_shapes(ctx, fname, t->ndim, t->shape, mask->ndim, mask->shape, &nd, shape);
  if (st) return st;
  if (out_nd) {
    *out_nd = nd;
    memcpy(out_shape, shape, sizeof shape);
    return PT_OK;
  }
  if (!shape_equals(t, nd, shape)) {
    char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "%s: mask of shape %s cannot be broadcast to shape %s", fname,
                   pt_shape_format(mask->ndim, mask->shape, a, sizeof a),
                   pt_shape_format(t->ndim, t->shape, b, sizeof b));
  }
  return PT_OK;
}

/* t[mask] = value in place (no checks); every element when mask is NULL */
static void fill_masked(pt_tensor *t, const pt_tensor *mask, pt_number value) {
  if (pt_tensor_numel(t) == 0) return;
  _Alignas(16) unsigned char vb[16];
  pt_ew_number_to_buf(vb, t->dtype, value);
  int64_t strides[2][PT_MAX_DIMS];
  memcpy(strides[0], t->stride, sizeof strides[0]);
  if (mask) pt_broadcast_strides(mask, t->ndim, t->shape, strides[1]);
  else memset(strides[1], 0, sizeof strides[1]);
  nd_loop l;
  nd_setup(&l, t->ndim, t->shape, 2, strides);
  nd_pos p;
  nd_begin(&l, &p);
  int last = l.nd - 1;
  size_t es = pt_dtype_size(t->dtype);
  for (int64_t r = 0; r < p.rows; r++) {
    char *po = elem_ptr(t, p.off[0]);
    const uint8_t *pm = mask ? (const uint8_t *)elem_ptr(mask, p.off[1]) : NULL;
    for (int64_t i = 0; i < l.shape[last]; i++)
      if (!pm || pm[i * l.stride[1][last]]) copy_elem(po + i * l.stride[0][last] * (int64_t)es, (const char *)vb, es);
    nd_advance(&l, &p);
  }
}

static pt_status masked_fill_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  if (!node->needs_grad[0]) return PT_OK;
  pt_tensor *r = NULL;
  pt_status st = pt_tensor_clone_raw(ctx, g, &r);
  if (st) return st;
  fill_masked(r, node->saved[0], pt_number_int(0));
  return finish_grad(ctx, r, node->inputs[0], &gin[0]);
}

pt_status pt_masked_fill(pt_ctx *ctx, pt_tensor *t, pt_tensor *mask, double value, pt_tensor **out) {
  return pt_masked_fill_number(ctx, t, mask, pt_number_float(value), out);
}

pt_status pt_masked_fill_number(pt_ctx *ctx, pt_tensor *t, pt_tensor *mask, pt_number value,
                                pt_tensor **out) {
  int nd;
  int64_t shape[PT_MAX_DIMS];
  pt_status st = check_mask(ctx, "masked_fill", t, mask, &nd, shape);
  if (st) return st;
  pt_tensor *r = NULL;
  if (shape_equals(t, nd, shape)) {
    st = pt_tensor_clone_raw(ctx, t, &r);
  } else { /* a mask larger than t: t broadcast (its gradient is summed back by the backward) */
    bool grad = ctx->grad_enabled;
    ctx->grad_enabled = false;
    pt_tensor *e = NULL;
    st = pt_expand(ctx, t, nd, shape, &e);
    ctx->grad_enabled = grad;
    if (!st) st = pt_tensor_clone_raw(ctx, e, &r);
    pt_tensor_release(e);
  }
  if (st) return st;
  fill_masked(r, mask, value);
  if (ctx->grad_enabled && pt_dtype_is_floating(r->dtype)) {
    pt_node *node;
    if ((st = pt_autograd_record(ctx, r, "MaskedFillBackward", masked_fill_backward, 1, &t, &node))) {
      pt_tensor_release(r);
      return st;
    }
    if (node) pt_node_save(node, 0, pt_tensor_retain(mask));
  }
  *out = r;
  return PT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * conversions
 * ------------------------------------------------------------------------------------------- */

static pt_status to_dtype_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  if (!node->needs_grad[0]) return PT_OK;
  return pt_tensor_to_dtype_raw(ctx, g, node->inputs[0]->dtype, &gin[0]);
}

pt_status pt_to_dtype(pt_ctx *ctx, pt_tensor *t, pt_dtype dt, pt_tensor **out) {
  if ((unsigned)dt >= PT_DTYPE_COUNT) return pt_fail(ctx, PT_EARG, "to: invalid dtype %d", (int)dt);
  if (t->dtype == dt) {
    *out = pt_tensor_retain(t);
    return PT_OK;
  }
  pt_tensor *r = NULL;
  pt_status st = pt_tensor_to_dtype_raw(ctx, t, dt, &r);
  if (st) return st;
  if (pt_dtype_is_floating(dt) && pt_dtype_is_floating(t->dtype)) {
    pt_node *node;
    if ((st = pt_autograd_record(ctx, r, "ToCopyBackward", to_dtype_backward, 1, &t, &node))) {
      pt_tensor_release(r);
      return st;
    }
  }
  *out = r;
  return PT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * in-place
 * ------------------------------------------------------------------------------------------- */

pt_status pt_inplace_check(pt_ctx *ctx, const char *fname, const pt_tensor *self) {
  pt_status st = pt_check_no_internal_overlap(ctx, fname, self);
  if (st) return st;
  if (ctx->grad_enabled && self->requires_grad && !self->grad_fn)
    return pt_fail(ctx, PT_ESTATE,
                   "%s: a leaf tensor that requires grad is used in an in-place operation", fname);
  const pt_tensor *b = self->base;
  if (ctx->grad_enabled && b && b->requires_grad && !b->grad_fn)
    return pt_fail(ctx, PT_ESTATE,
                   "%s: a view of a leaf tensor that requires grad is used in an in-place operation",
                   fname);
  return PT_OK;
}

/* --- CopySlices: an in-place op on a view changes its base ---
 * The base's new history: its old one for the elements outside the view, and the view's new
 * one (the in-place op's node, or none after a constant was copied in) inside it. */
typedef struct view_geometry {
  int64_t offset; /* of the view in its base's (contiguous) storage order, base offset excluded */
  int ndim;
  int64_t shape[PT_MAX_DIMS], stride[PT_MAX_DIMS];
} view_geometry;

/* The view's region of g (contiguous, the base's shape), sharing g's storage. */
static pt_status region_of(pt_ctx *ctx, pt_tensor *g, const view_geometry *v, pt_tensor **out) {
  return pt_tensor_from_storage(ctx, g->storage, g->dtype, g->offset + v->offset, v->ndim, v->shape,
                                v->stride, out);
}

static pt_status copy_slices_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  const view_geometry *v = node->extra;
  pt_tensor *gc = NULL, *region = NULL;
  pt_status st = pt_tensor_contiguous_raw(ctx, g, &gc);
  if (st) return st;
  if (node->needs_grad[1]) { /* the view's part */
    if (!(st = region_of(ctx, gc, v, &region))) st = pt_tensor_clone_raw(ctx, region, &gin[1]);
    pt_tensor_release(region);
    region = NULL;
  }
  if (!st && node->needs_grad[0]) { /* the rest goes to the old history */
    if (!(st = pt_tensor_clone_raw(ctx, gc, &gin[0])) && !(st = region_of(ctx, gin[0], v, &region)))
      pt_tensor_fill(ctx, region, 0.0);
    pt_tensor_release(region);
  }
  pt_tensor_release(gc);
  return st;
}

/* After an in-place op on self under grad mode: when self is a view, its base's history takes
 * the change in (the base must be contiguous, so that the view's strides address the gradient
 * too). */
static pt_status rebase_view(pt_ctx *ctx, const char *fname, pt_tensor *self) {
  pt_tensor *b = self->base;
  if (!ctx->grad_enabled || !b || (!b->requires_grad && !self->requires_grad)) return PT_OK;
  if (!pt_tensor_is_contiguous(b))
    return pt_fail(ctx, PT_EARG,
                   "%s: an in-place operation on a view of a non-contiguous tensor is not supported "
                   "with autograd (make the base contiguous() first)", fname);
  view_geometry *v = malloc(sizeof *v);
  if (!v) return pt_fail(ctx, PT_ENOMEM, "%s: out of memory", fname);
  v->offset = self->offset - b->offset;
  v->ndim = self->ndim;
  for (int i = 0; i < self->ndim; i++) {
    v->shape[i] = self->shape[i];
    v->stride[i] = self->stride[i];
  }
  pt_tensor *old = NULL; /* the base's old history, carried by an alias */
  pt_status st = pt_autograd_alias(ctx, b, b->grad_fn, &old);
  if (st) {
    free(v);
    return st;
  }
  pt_tensor *inputs[2] = {old, self};
  pt_node *node = NULL;
  st = pt_autograd_record(ctx, b, "CopySlices", copy_slices_backward, 2, inputs, &node);
  if (!st && node) {
    node->extra = v;
    node->free_extra = free;
  } else {
    free(v);
  }
  pt_tensor_release(old);
  return st;
}

/* The tensor that stands for self's value before an in-place op in the recorded graph: a copy
 * (when the backward needs the old values) or an alias, carrying self's old grad_fn. */
static pt_status inplace_old(pt_ctx *ctx, pt_tensor *self, bool need_values, pt_tensor **out) {
  pt_tensor *old = NULL;
  if (!need_values) return pt_autograd_alias(ctx, self, self->grad_fn, out);
  pt_status st = pt_tensor_clone_raw(ctx, self, &old);
  if (st) return st;
  old->grad_fn = pt_node_retain(self->grad_fn);
  old->requires_grad = self->requires_grad;
  *out = old;
  return PT_OK;
}

static bool overlaps_differently(const pt_tensor *self, const pt_tensor *y) {
  if (!y || y == self || y->storage != self->storage) return false;
  if (y->offset != self->offset || !same_shape(self, y)) return true;
  for (int i = 0; i < self->ndim; i++)
    if (self->stride[i] != y->stride[i]) return true;
  return false;
}

/* the in-place result no longer depends on what self was (defined with fill_) */
static pt_status became_constant(pt_ctx *ctx, const char *fname, pt_tensor *self);

static pt_status inplace_binary(pt_ctx *ctx, const char *fname, int op, pt_tensor *self, opnd y,
                                double alpha) {
  pt_status st = pt_inplace_check(ctx, fname, self);
  if (st) return st;
  pt_dtype cdt, odt;
  op_dtypes(op, pt_ew_result_type(T_(self), y), &cdt, &odt);
  odt = alpha_result_dtype(op, odt, alpha);
  if (!pt_can_cast(odt, self->dtype))
    return pt_fail(ctx, PT_EARG, "%s: result type %s can't be cast to the desired output type %s",
                   fname, pt_dtype_name(odt), pt_dtype_name(self->dtype));
  if (y.t && !same_shape(self, y.t)) {
    int nd;
    int64_t shape[PT_MAX_DIMS];
    if ((st = pt_broadcast_shapes(ctx, fname, self->ndim, self->shape, y.t->ndim, y.t->shape, &nd,
                                  shape)))
      return st;
    if (!shape_equals(self, nd, shape)) {
      char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
      return pt_fail(ctx, PT_ESHAPE, "%s: output with shape %s doesn't match the broadcast shape %s",
                     fname, pt_shape_format(self->ndim, self->shape, a, sizeof a),
                     pt_shape_format(nd, shape, b, sizeof b));
    }
  }
  bool graph = ctx->grad_enabled && bin_differentiable(op) && pt_dtype_is_floating(self->dtype) &&
               (self->requires_grad || (y.t && y.t->requires_grad));
  pt_tensor *old = NULL;
  if (graph && (st = inplace_old(ctx, self, bin_uses_values(op), &old))) return st;
  opnd x = T_(self), yy = y;
  pt_tensor *scaled = NULL, *yold = NULL;
  if (graph && y.t == self) {
    yy = T_(old); /* a.mul_(a): the backward must see the old value */
  } else if (graph && y.t && y.t->storage == self->storage) {
    /* another view of self's storage (a:mul_(a:view(3))): the op overwrites it too, so the
     * backward gets a copy of its values as they were, with its history */
    if ((st = inplace_old(ctx, y.t, bin_uses_values(op), &yold))) goto done;
    yy = T_(yold);
  }
  if ((st = scale_operand(ctx, fname, x, &y, alpha, &scaled))) goto done;
  st = binary_write(ctx, fname, op, x, y, odt, self);
  if (!st && !graph && !bin_differentiable(op) && pt_dtype_is_floating(self->dtype))
    st = became_constant(ctx, fname, self); /* floor_divide_: its old history gives no gradient */
  if (st || !graph) goto done;
  {
    pt_tensor *inputs[2] = {old, yy.t};
    pt_node *node;
    st = pt_autograd_record(ctx, self, bin_nodes[op], binary_backward, yy.t ? 2 : 1, inputs, &node);
    if (!st && node) {
      node->ints[0] = op;
      node->ints[1] = yy.t ? 0 : 1;
      node->ints[2] = yy.is_int;
      node->scalars[0] = yy.s;
      node->scalars[1] = alpha;
      save_versions(node);
    }
  }
  if (!st) st = rebase_view(ctx, fname, self);
done:
  pt_tensor_release(scaled);
  pt_tensor_release(yold);
  pt_tensor_release(old);
  return st;
}

pt_status pt_binary_(pt_ctx *ctx, pt_binop op, pt_tensor *self, pt_tensor *b) {
  pt_status st = check_binop(ctx, op);
  if (st) return st;
  char name[32];
  snprintf(name, sizeof name, "%s_", bin_names[op]);
  return inplace_binary(ctx, name, op, self, T_(b), 1.0);
}

pt_status pt_binary_scalar_(pt_ctx *ctx, pt_binop op, pt_tensor *self, double s, bool is_int) {
  pt_status st = check_binop(ctx, op);
  if (st) return st;
  char name[32];
  snprintf(name, sizeof name, "%s_", bin_names[op]);
  return inplace_binary(ctx, name, op, self, S_(s, is_int), 1.0);
}

pt_status pt_binary_number_(pt_ctx *ctx, pt_binop op, pt_tensor *self, pt_number s) {
  pt_status st = check_binop(ctx, op);
  if (st) return st;
  char name[32];
  snprintf(name, sizeof name, "%s_", bin_names[op]);
  return inplace_binary(ctx, name, op, self, N_(s), 1.0);
}

pt_status pt_add_(pt_ctx *ctx, pt_tensor *self, pt_tensor *b, double alpha) {
  return inplace_binary(ctx, "add_", PT_BIN_ADD, self, T_(b), alpha);
}
pt_status pt_sub_(pt_ctx *ctx, pt_tensor *self, pt_tensor *b, double alpha) {
  return inplace_binary(ctx, "sub_", PT_BIN_SUB, self, T_(b), alpha);
}
pt_status pt_mul_(pt_ctx *ctx, pt_tensor *self, pt_tensor *b) {
  return inplace_binary(ctx, "mul_", PT_BIN_MUL, self, T_(b), 1.0);
}
pt_status pt_div_(pt_ctx *ctx, pt_tensor *self, pt_tensor *b) {
  return inplace_binary(ctx, "div_", PT_BIN_DIV, self, T_(b), 1.0);
}
pt_status pt_add_scalar_(pt_ctx *ctx, pt_tensor *self, double s) {
  return inplace_binary(ctx, "add_", PT_BIN_ADD, self,
                        S_(s, is_integral(s) && !pt_dtype_is_floating(self->dtype)), 1.0);
}
pt_status pt_mul_scalar_(pt_ctx *ctx, pt_tensor *self, double s) {
  return inplace_binary(ctx, "mul_", PT_BIN_MUL, self,
                        S_(s, is_integral(s) && !pt_dtype_is_floating(self->dtype)), 1.0);
}

static pt_status inplace_unary(pt_ctx *ctx, const char *fname, int op, pt_tensor *self,
                               const double *p) {
  pt_status st = pt_inplace_check(ctx, fname, self);
  if (st) return st;
  pt_dtype cdt, odt;
  un_dtypes(op, self->dtype, &cdt, &odt);
  if (!un_kernels[op][cdt] && op != PT_UN_NEG) /* neg has its own message (unary_forward) */
    return pt_fail(ctx, PT_EARG, "%s: not supported for %s tensors", fname, pt_dtype_name(cdt));
  if (!pt_can_cast(odt, self->dtype))
    return pt_fail(ctx, PT_EARG, "%s: result type %s can't be cast to the desired output type %s",
                   fname, pt_dtype_name(odt), pt_dtype_name(self->dtype));
  bool graph = ctx->grad_enabled && un_differentiable(op) && pt_dtype_is_floating(self->dtype) &&
               self->requires_grad;
  pt_tensor *old = NULL, *r = NULL;
  if (graph && (st = inplace_old(ctx, self, op != PT_UN_NEG && op != PT_UN_FRAC, &old))) return st;
  if (odt == self->dtype) {
    st = unary_forward(ctx, op, self, p, self, &r);
    if (!st) atomic_fetch_add(&self->storage->version, 1);
  } else {
    st = unary_forward(ctx, op, self, p, NULL, &r);
    if (!st) st = pt_tensor_copy_into(ctx, self, r);
  }
  if (!st && graph) {
    pt_node *node;
    st = pt_autograd_record(ctx, self, un_nodes[op], unary_backward, 1, &old, &node);
    if (!st && node) {
      node->ints[0] = op;
      node->scalars[0] = p ? p[0] : 0;
      node->scalars[1] = p ? p[1] : 0;
      save_versions(node);
    }
  }
  if (!st && !graph && !un_differentiable(op) && pt_dtype_is_floating(self->dtype))
    st = became_constant(ctx, fname, self); /* floor_, sign_, ...: zero gradient, as PyTorch */
  else if (!st)
    st = rebase_view(ctx, un_names[op], self);
  pt_tensor_release(r);
  pt_tensor_release(old);
  return st;
}

pt_status pt_unary_(pt_ctx *ctx, pt_unop op, pt_tensor *self) {
  if ((unsigned)op >= PT_UN_COUNT_PUBLIC) return pt_fail(ctx, PT_EARG, "unary: invalid op %d", (int)op);
  char name[32];
  snprintf(name, sizeof name, "%s_", un_names[op]);
  return inplace_unary(ctx, name, op, self, NULL);
}

pt_status pt_clamp_number_(pt_ctx *ctx, pt_tensor *self, const pt_number *lo, const pt_number *hi) {
  double p[2];
  pt_dtype dt = clamp_dtype(self, lo, hi);
  if (lo || hi) { /* (no bound at all: clamp_params says so) */
    if (dt != self->dtype) /* PyTorch's check comes before the bounds' range */
      return pt_fail(ctx, PT_EARG, "clamp_: result type %s can't be cast to the desired output type %s",
                     pt_dtype_name(dt), pt_dtype_name(self->dtype));
  }
  pt_status st = clamp_params(ctx, "clamp_", dt, lo, hi, p);
  if (st) return st;
  return inplace_unary(ctx, "clamp_", UN_CLAMP, self, p);
}

pt_status pt_clamp_(pt_ctx *ctx, pt_tensor *self, bool has_lo, double lo, bool has_hi, double hi) {
  pt_number l = bound_number(self, lo), h = bound_number(self, hi);
  return pt_clamp_number_(ctx, self, has_lo ? &l : NULL, has_hi ? &h : NULL);
}

pt_status pt_clamp_tensor_(pt_ctx *ctx, pt_tensor *self, pt_tensor *lo, pt_tensor *hi) {
  pt_status st = pt_inplace_check(ctx, "clamp_", self);
  pt_tensor *r = NULL;
  if (st || (st = clamp_tensor(ctx, "clamp_", self, lo, hi, &r))) return st;
  if (!pt_can_cast(r->dtype, self->dtype)) {
    st = pt_fail(ctx, PT_EARG, "clamp_: result type %s can't be cast to the desired output type %s",
                 pt_dtype_name(r->dtype), pt_dtype_name(self->dtype));
  } else if (!shape_equals(self, r->ndim, r->shape)) {
    char x[PT_SHAPE_STR_MAX], y[PT_SHAPE_STR_MAX];
    st = pt_fail(ctx, PT_ESHAPE, "clamp_: output with shape %s doesn't match the broadcast shape %s",
                 pt_shape_format(self->ndim, self->shape, x, sizeof x),
                 pt_shape_format(r->ndim, r->shape, y, sizeof y));
  } else {
    st = pt_copy_(ctx, self, r); /* r is computed aside: lo or hi may share self's memory */
  }
  pt_tensor_release(r);
  return st;
}

/* torch.round(t, decimals=d) for d != 0, torch 1.13's formula in t's dtype: nearbyint(t * 10^d) /
 * 10^d, or nearbyint(t / 10^-d) * 10^-d for d < 0 (ties to even, as its kernel); floating tensors
 * only (PyTorch: not implemented for integers); no gradient, as round. d == 0 is plain round. */
static pt_status round_decimals(pt_ctx *ctx, const char *fname, pt_tensor *t, int64_t decimals,
                                pt_tensor **out) {
  if (decimals == 0) return pt_unary(ctx, PT_UN_ROUND, t, out);
  if (!pt_dtype_is_floating(t->dtype))
    return pt_fail(ctx, PT_EARG, "%s: decimals is not supported for %s tensors (as torch)", fname,
                   pt_dtype_name(t->dtype));
  bool neg = decimals < 0;
  double p = pow(10.0, (double)(neg ? -decimals : decimals)); /* float32: rounded to float in the op */
  bool grad = ctx->grad_enabled;
  ctx->grad_enabled = false;
  pt_tensor *a = NULL, *b = NULL;
  pt_status st = pt_binary_number(ctx, neg ? PT_BIN_DIV : PT_BIN_MUL, t, pt_number_float(p), false, &a);
  if (!st) st = pt_unary(ctx, PT_UN_ROUND, a, &b);
  if (!st) st = pt_binary_number(ctx, neg ? PT_BIN_MUL : PT_BIN_DIV, b, pt_number_float(p), false, out);
  ctx->grad_enabled = grad;
  pt_tensor_release(a);
  pt_tensor_release(b);
  if (!st && grad && (st = record_unary(ctx, PT_UN_ROUND, t, NULL, *out))) { /* a zero gradient */
    pt_tensor_release(*out);
    *out = NULL;
  }
  return st;
}

pt_status pt_round_decimals(pt_ctx *ctx, pt_tensor *t, int64_t decimals, pt_tensor **out) {
  return round_decimals(ctx, "round", t, decimals, out);
}

pt_status pt_round_decimals_(pt_ctx *ctx, pt_tensor *self, int64_t decimals) {
  if (decimals == 0) return pt_unary_(ctx, PT_UN_ROUND, self);
  pt_status st = pt_inplace_check(ctx, "round_", self);
  pt_tensor *r = NULL;
  if (st || (st = round_decimals(ctx, "round_", self, decimals, &r))) return st;
  st = pt_copy_(ctx, self, r); /* r has no history: self's old one gets a zero gradient, as round_ */
  pt_tensor_release(r);
  return st;
}

pt_status pt_round_decimals_into(pt_ctx *ctx, pt_tensor *t, int64_t decimals, pt_tensor *out) {
  if (decimals == 0) return pt_unary_into(ctx, PT_UN_ROUND, t, out);
  if (ctx->grad_enabled && (t->requires_grad || out->requires_grad))
    return pt_fail(ctx, PT_EARG,
                   "round: out= does not support autograd, but an argument requires grad (leave out "
                   "out=, or compute under pt.no_grad)");
  pt_status st = pt_check_no_internal_overlap(ctx, "round", out);
  if (st) return st;
  if (!same_shape(out, t)) {
    char o[PT_SHAPE_STR_MAX], r[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "round: out has shape %s, but the result has shape %s",
                   pt_shape_format(out->ndim, out->shape, o, sizeof o),
                   pt_shape_format(t->ndim, t->shape, r, sizeof r));
  }
  pt_tensor *r = NULL;
  if ((st = round_decimals(ctx, "round", t, decimals, &r))) return st;
  if (!pt_can_cast(r->dtype, out->dtype))
    st = pt_fail(ctx, PT_EARG, "round: result type %s can't be cast to the desired output type %s",
                 pt_dtype_name(r->dtype), pt_dtype_name(out->dtype));
  else if (!(st = pt_tensor_copy_into(ctx, out, r)))
    atomic_fetch_add(&out->storage->version, 1);
  pt_tensor_release(r);
  return st;
}

/* torch.fmax / fmin: the larger / smaller of a and b with NaN only where both are NaN: a where
 * a >= b (fmin: a <= b) or b is NaN, else b, which also gives torch's gradients (a's at ties) */
static pt_status fmaxmin(pt_ctx *ctx, const char *fname, bool is_max, pt_tensor *a, pt_tensor *b,
                         pt_tensor **out) {
  int nd;
  int64_t shape[PT_MAX_DIMS];
  pt_status st = pt_broadcast_shapes(ctx, fname, a->ndim, a->shape, b->ndim, b->shape, &nd, shape);
  if (st) return st;
  pt_tensor *cmp = NULL, *bnan = NULL, *pick = NULL;
  if (!(st = pt_binary(ctx, is_max ? PT_BIN_GE : PT_BIN_LE, a, b, &cmp)) &&
      !(st = pt_binary(ctx, PT_BIN_NE, b, b, &bnan)) &&
      !(st = pt_binary(ctx, PT_BIN_LOGICAL_OR, cmp, bnan, &pick)))
    st = pt_where(ctx, pick, a, b, out);
  pt_tensor_release(cmp);
  pt_tensor_release(bnan);
  pt_tensor_release(pick);
  return st;
}

pt_status pt_fmax(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out) {
  return fmaxmin(ctx, "fmax", true, a, b, out);
}

pt_status pt_fmin(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out) {
  return fmaxmin(ctx, "fmin", false, a, b, out);
}

/* masked_fill with a 0-d tensor value (torch's Tensor overload): where(mask, value cast to t's
 * dtype, t), so t's gradient is kept outside the mask and value's is summed over it */
static pt_status masked_fill_tensor(pt_ctx *ctx, const char *fname, bool in_place, pt_tensor *t,
                                    pt_tensor *mask, pt_tensor *value, pt_tensor **out) {
  int nd;
  int64_t shape[PT_MAX_DIMS];
  /* where() below broadcasts t and mask; in place, the result must have t's shape */
  pt_status st = in_place ? check_mask(ctx, fname, t, mask, NULL, NULL) : check_mask(ctx, fname, t, mask, &nd, shape);
  if (st) return st;
  if (value->ndim != 0)
    return pt_fail(ctx, PT_EARG,
                   "%s: only supports a 0-dimensional value tensor, but got tensor with %d dimension(s)",
                   fname, value->ndim);
  pt_tensor *v = NULL;
  if ((st = pt_to_dtype(ctx, value, t->dtype, &v))) return st;
  st = pt_where(ctx, mask, v, t, out);
  pt_tensor_release(v);
  return st;
}

pt_status pt_masked_fill_tensor(pt_ctx *ctx, pt_tensor *t, pt_tensor *mask, pt_tensor *value,
                                pt_tensor **out) {
  return masked_fill_tensor(ctx, "masked_fill", false, t, mask, value, out);
}

pt_status pt_masked_fill_tensor_(pt_ctx *ctx, pt_tensor *self, pt_tensor *mask, pt_tensor *value) {
  pt_status st = pt_inplace_check(ctx, "masked_fill_", self);
  pt_tensor *r = NULL;
  if (st || (st = masked_fill_tensor(ctx, "masked_fill_", true, self, mask, value, &r))) return st;
  st = pt_copy_(ctx, self, r); /* computed aside: value may share self's memory */
  pt_tensor_release(r);
  return st;
}

pt_status pt_masked_fill_(pt_ctx *ctx, pt_tensor *self, pt_tensor *mask, double value) {
  return pt_masked_fill_number_(ctx, self, mask, pt_number_float(value));
}

pt_status pt_masked_fill_number_(pt_ctx *ctx, pt_tensor *self, pt_tensor *mask, pt_number value) {
  pt_status st = pt_inplace_check(ctx, "masked_fill_", self);
  if (!st) st = check_mask(ctx, "masked_fill_", self, mask, NULL, NULL);
  if (st) return st;
  bool graph = ctx->grad_enabled && self->requires_grad && pt_dtype_is_floating(self->dtype);
  pt_tensor *old = NULL;
  if (graph && (st = inplace_old(ctx, self, false, &old))) return st;
  fill_masked(self, mask, value);
  atomic_fetch_add(&self->storage->version, 1);
  if (graph) {
    pt_node *node;
    st = pt_autograd_record(ctx, self, "MaskedFillBackward", masked_fill_backward, 1, &old, &node);
    if (!st && node) pt_node_save(node, 0, pt_tensor_retain(mask));
  }
  if (!st) st = rebase_view(ctx, "masked_fill_", self);
  pt_tensor_release(old);
  return st;
}

static pt_status copy_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  if (!node->needs_grad[0]) return PT_OK;
  return finish_grad(ctx, pt_tensor_retain(g), node->inputs[0], &gin[0]);
}


pt_status pt_copy_(pt_ctx *ctx, pt_tensor *self, pt_tensor *src) {
  pt_status st = pt_inplace_check(ctx, "copy_", self);
  if (st) return st;
  if (overlaps_differently(self, src)) {
    pt_tensor *tmp = NULL;
    if ((st = pt_tensor_clone_raw(ctx, src, &tmp))) return st;
    st = pt_tensor_copy_into(ctx, self, tmp);
    pt_tensor_release(tmp);
  } else if (src != self) {
    st = pt_tensor_copy_into(ctx, self, src);
  }
  if (st) return st;
  /* a value saved for a backward and now overwritten must be noticed (review: b:copy_(y) after
   * y = b:clamp(...) gave wrong gradients silently) */
  if (src != self) atomic_fetch_add(&self->storage->version, 1);
  if (ctx->grad_enabled && pt_dtype_is_floating(self->dtype) && src->requires_grad && src != self) {
    pt_node *node;
    st = pt_autograd_record(ctx, self, "CopyBackwards", copy_backward, 1, &src, &node);
    return st ? st : rebase_view(ctx, "copy_", self);
  }
  if (src == self) return PT_OK;
  return became_constant(ctx, "copy_", self);
}

static pt_status zero_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  (void)g;
  if (!node->needs_grad[0]) return PT_OK;
  return pt_tensor_zeros_like(ctx, node->inputs[0], &gin[0]);
}

/* self now holds values that depend on nothing that requires grad: its old history gets zero
 * gradients (as PyTorch's FillBackward: self still requires grad), and so, when self is a
 * view, do those elements of its base. */
static pt_status became_constant(pt_ctx *ctx, const char *fname, pt_tensor *self) {
  if (!ctx->grad_enabled) return PT_OK;
  if (self->grad_fn) {
    pt_tensor *old = NULL; /* (self has a grad_fn: it requires grad) */
    pt_status st = pt_autograd_alias(ctx, self, self->grad_fn, &old);
    if (st) return st;
    pt_node *node;
    st = pt_autograd_record(ctx, self, "FillBackward", zero_backward, 1, &old, &node);
    pt_tensor_release(old);
    if (st) return st;
  }
  return rebase_view(ctx, fname, self);
}

pt_status pt_fill_(pt_ctx *ctx, pt_tensor *self, double v) {
  pt_status st = pt_inplace_check(ctx, "fill_", self);
  if (!st) st = pt_tensor_fill(ctx, self, v);
  if (!st) st = became_constant(ctx, "fill_", self);
  return st;
}

pt_status pt_fill_number_(pt_ctx *ctx, pt_tensor *self, pt_number v) {
  if (!(v.is_int && (self->dtype == PT_INT64 || self->dtype == PT_FLOAT32))) return pt_fill_(ctx, self, v.d);
  pt_status st = pt_inplace_check(ctx, "fill_", self);
  if (st) return st;
  fill_masked(self, NULL, v); /* exact beyond 2^53 (int64) or rounded once (float32) */
  atomic_fetch_add(&self->storage->version, 1);
  return became_constant(ctx, "fill_", self);
}

/* ---------------------------------------------------------------------------------------------
 * lerp: start + weight * (end - start), three operands (weight a tensor or a number)
 * ------------------------------------------------------------------------------------------- */

typedef void (*lerp_kernel)(int64_t n, const void *pa, int64_t sa, const void *pb, int64_t sb,
                            const void *pw, int64_t sw, void *po, int64_t so);

/* PyTorch 1.13's form (its vectorised CPU kernel): from start while weight < 0.5, else from end,
 * each one fused multiply-add, so that weight 0 gives start and weight 1 gives end exactly, the
 * bits are torch's, and an extrapolation below 0 from -inf to inf gives -inf, not inf - inf */
#define LERP_KERNEL(S, T)                                                                       \
  static inline T h_lerp_##S(T a, T b, T w) {                                                   \
    return w < (T)0.5 ? LIBM_##S(fma)(w, b - a, a) : LIBM_##S(fma)(w - (T)1, b - a, b);         \
  }                                                                                             \
  static void lerp_##S(int64_t n, const void *pa, int64_t sa, const void *pb, int64_t sb,       \
                       const void *pw, int64_t sw, void *po, int64_t so) {                      \
    const T *a = pa, *b = pb, *w = pw;                                                          \
    T *o = po;                                                                                  \
    if (so == 1 && sa == 1 && sb == 1 && sw == 0) {                                             \
      const T c = w[0];                                                                         \
      for (int64_t i = 0; i < n; i++) o[i] = h_lerp_##S(a[i], b[i], c);                         \
    } else if (so == 1 && sa == 1 && sb == 1 && sw == 1) {                                      \
      for (int64_t i = 0; i < n; i++) o[i] = h_lerp_##S(a[i], b[i], w[i]);                      \
    } else {                                                                                    \
      for (int64_t i = 0; i < n; i++) o[i * so] = h_lerp_##S(a[i * sa], b[i * sb], w[i * sw]);  \
    }                                                                                           \
  }
LERP_KERNEL(f, float)
LERP_KERNEL(d, double)

typedef struct lerp_job {
  lerp_kernel k;
  const char *p[3];
  int64_t s[3]; /* 1, or 0 for one element */
  char *o;
  size_t es;
} lerp_job;

static void lerp_chunk(void *arg, int64_t b, int64_t e, int tid) {
  (void)tid;
  const lerp_job *j = arg;
  int64_t step = (int64_t)j->es;
  j->k(e - b, j->p[0] + b * j->s[0] * step, j->s[0], j->p[1] + b * j->s[1] * step, j->s[1],
       j->p[2] + b * j->s[2] * step, j->s[2], j->o + b * step, 1);
}

/* PyTorch's promotion over several tensors: dimensioned ones decide within a category, 0-d ones
 * only raise the category */
static pt_dtype result_type_n(pt_tensor *const *ts, int n) {
  pt_dtype dim = PT_BOOL, zero = PT_BOOL;
  bool have_dim = false, have_zero = false;
  for (int i = 0; i < n; i++) {
    if (!ts[i]) continue;
    if (ts[i]->ndim > 0) {
      dim = have_dim ? pt_dtype_promote(dim, ts[i]->dtype) : ts[i]->dtype;
      have_dim = true;
    } else {
      zero = have_zero ? pt_dtype_promote(zero, ts[i]->dtype) : ts[i]->dtype;
      have_zero = true;
    }
  }
  if (!have_dim) return zero;
  if (!have_zero) return dim;
  return category(zero) > category(dim) ? zero : dim;
}

/* out = lerp(a, b, w or ws) without autograd */
static pt_status lerp_forward(pt_ctx *ctx, const char *fname, pt_tensor *a, pt_tensor *b,
                              pt_tensor *w, double ws, pt_tensor **out) {
  pt_tensor *in[3] = {a, b, w};
  pt_dtype dt = result_type_n(in, 3);
  if (!pt_dtype_is_floating(dt))
    return pt_fail(ctx, PT_EARG, "%s: not supported for %s tensors (start, end and weight must "
                   "give a floating dtype)", fname, pt_dtype_name(dt));
  int nd;
  int64_t shape[PT_MAX_DIMS];
  pt_status st = pt_broadcast_shapes(ctx, fname, a->ndim, a->shape, b->ndim, b->shape, &nd, shape);
  if (st) return st;
  if (w) {
    int n1 = nd;
    int64_t s1[PT_MAX_DIMS];
    memcpy(s1, shape, sizeof s1);
    if (pt_broadcast_shapes(ctx, fname, n1, s1, w->ndim, w->shape, &nd, shape)) {
      char x[PT_SHAPE_STR_MAX], y[PT_SHAPE_STR_MAX], z[PT_SHAPE_STR_MAX];
      return pt_fail(ctx, PT_ESHAPE, "%s: shapes %s, %s and %s (weight) cannot be broadcast", fname,
                     pt_shape_format(a->ndim, a->shape, x, sizeof x),
                     pt_shape_format(b->ndim, b->shape, y, sizeof y),
                     pt_shape_format(w->ndim, w->shape, z, sizeof z));
    }
  }
  pt_tensor *c[3] = {NULL, NULL, NULL}, *o = NULL;
  _Alignas(16) unsigned char wb[16];
  pt_write_from_double(wb, dt, ws);
  for (int i = 0; i < 3 && !st; i++)
    if (in[i]) st = pt_tensor_to_dtype_raw(ctx, in[i], dt, &c[i]);
  if (!st) st = pt_tensor_empty(ctx, dt, nd, shape, &o);
  if (st) goto done;
  lerp_kernel k = dt == PT_FLOAT32 ? lerp_f : lerp_d;
  int64_t n = pt_tensor_numel(o);
  size_t es = pt_dtype_size(dt);
  bool flat = true;
  for (int i = 0; i < 3; i++)
    if (c[i] && !(pt_tensor_is_contiguous(c[i]) &&
                  (pt_tensor_numel(c[i]) == n || pt_tensor_numel(c[i]) == 1)))
      flat = false;
  if (n == 0) {
    /* nothing to compute */
  } else if (flat) {
    lerp_job j = {k, {NULL, NULL, NULL}, {0, 0, 0}, o->storage->data, es};
    for (int i = 0; i < 3; i++) {
      j.p[i] = c[i] ? pt_tensor_data(c[i]) : (const char *)wb;
      j.s[i] = c[i] && pt_tensor_numel(c[i]) == n ? 1 : 0;
    }
    if (n < 2 * EW_GRAIN) lerp_chunk(&j, 0, n, 0);
    else pt_parallel_for(ctx, n, EW_GRAIN, lerp_chunk, &j);
  } else {
    int64_t strides[4][PT_MAX_DIMS];
    memcpy(strides[0], o->stride, sizeof strides[0]);
    for (int i = 0; i < 3; i++) {
      if (c[i]) pt_broadcast_strides(c[i], nd, shape, strides[i + 1]);
      else memset(strides[i + 1], 0, sizeof strides[i + 1]);
    }
    nd_loop l;
    nd_setup(&l, nd, shape, 4, strides);
    nd_pos p;
    nd_begin(&l, &p);
    int last = l.nd - 1;
    for (int64_t r = 0; r < p.rows; r++) {
      const void *ops[3];
      for (int i = 0; i < 3; i++) ops[i] = c[i] ? elem_ptr(c[i], p.off[i + 1]) : (const void *)wb;
      k(l.shape[last], ops[0], l.stride[1][last], ops[1], l.stride[2][last], ops[2],
        l.stride[3][last], elem_ptr(o, p.off[0]), l.stride[0][last]);
      nd_advance(&l, &p);
    }
  }
  *out = o;
  o = NULL;
done:
  for (int i = 0; i < 3; i++) pt_tensor_release(c[i]);
  pt_tensor_release(o);
  return st;
}

/* inputs: start, end[, weight]; scalars[0]: the weight when it is a number */
static pt_status lerp_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *a = node->inputs[0], *b = node->inputs[1];
  pt_tensor *w = node->n_inputs > 2 ? node->inputs[2] : NULL;
  double ws = node->scalars[0];
  pt_status st = PT_OK;
  if (w && (st = check_versions(ctx, node))) return st; /* a number weight uses no values */
  for (int k = 0; k < node->n_inputs && !st; k++) {
    if (!node->needs_grad[k]) continue;
    pt_tensor *u = NULL, *d = NULL;
    if (k == 0) { /* g * (1 - w) */
      if (!w) st = binary_forward(ctx, "mul", PT_BIN_MUL, T_(g), S_(1.0 - ws, false), NULL, &d);
      else if (!(st = binary_forward(ctx, "sub", PT_BIN_SUB, S_(1.0, false), T_(w), NULL, &u)))
        st = binary_forward(ctx, "mul", PT_BIN_MUL, T_(g), T_(u), NULL, &d);
    } else if (k == 1) { /* g * w */
      st = binary_forward(ctx, "mul", PT_BIN_MUL, T_(g), w ? T_(w) : S_(ws, false), NULL, &d);
    } else { /* g * (end - start) */
      if (!(st = binary_forward(ctx, "sub", PT_BIN_SUB, T_(b), T_(a), NULL, &u)))
        st = binary_forward(ctx, "mul", PT_BIN_MUL, T_(g), T_(u), NULL, &d);
    }
    pt_tensor_release(u);
    if (!st) st = finish_grad(ctx, d, node->inputs[k], &gin[k]);
  }
  return st;
}

static pt_status record_lerp(pt_ctx *ctx, pt_tensor *out, pt_tensor *a, pt_tensor *b, pt_tensor *w,
                             double ws) {
  pt_tensor *inputs[3] = {a, b, w};
  pt_node *node;
  pt_status st = pt_autograd_record(ctx, out, "LerpBackward", lerp_backward, w ? 3 : 2, inputs, &node);
  if (st || !node) return st;
  node->scalars[0] = ws;
  save_versions(node);
  return PT_OK;
}

pt_status pt_lerp(pt_ctx *ctx, pt_tensor *start, pt_tensor *end, pt_tensor *weight, double w,
                  pt_tensor **out) {
  pt_tensor *r = NULL;
  pt_status st = lerp_forward(ctx, "lerp", start, end, weight, w, &r);
  if (st) return st;
  if (ctx->grad_enabled && (st = record_lerp(ctx, r, start, end, weight, w))) {
    pt_tensor_release(r);
    return st;
  }
  *out = r;
  return PT_OK;
}

pt_status pt_lerp_(pt_ctx *ctx, pt_tensor *self, pt_tensor *end, pt_tensor *weight, double w) {
  const char *fname = "lerp_";
  pt_status st = pt_inplace_check(ctx, fname, self);
  if (st) return st;
  pt_tensor *r = NULL, *old = NULL, *eold = NULL, *wold = NULL;
  /* computed aside (end or weight may share self's memory), then copied in */
  if ((st = lerp_forward(ctx, fname, self, end, weight, w, &r))) return st;
  if (!pt_can_cast(r->dtype, self->dtype)) {
    st = pt_fail(ctx, PT_EARG, "%s: result type %s can't be cast to the desired output type %s",
                 fname, pt_dtype_name(r->dtype), pt_dtype_name(self->dtype));
    goto done;
  }
  if (!shape_equals(self, r->ndim, r->shape)) {
    char x[PT_SHAPE_STR_MAX], y[PT_SHAPE_STR_MAX];
    st = pt_fail(ctx, PT_ESHAPE, "%s: output with shape %s doesn't match the broadcast shape %s",
                 fname, pt_shape_format(self->ndim, self->shape, x, sizeof x),
                 pt_shape_format(r->ndim, r->shape, y, sizeof y));
    goto done;
  }
  bool graph = ctx->grad_enabled && pt_dtype_is_floating(self->dtype) &&
               (self->requires_grad || end->requires_grad || (weight && weight->requires_grad));
  pt_tensor *e = end, *wt = weight;
  if (graph) {
    /* the backward needs values only with a tensor weight; operands in self's memory are
     * overwritten, so the graph gets copies of them as they were */
    bool values = weight != NULL;
    if ((st = inplace_old(ctx, self, values, &old))) goto done;
    if (end == self) e = old;
    else if (end->storage == self->storage) {
      if ((st = inplace_old(ctx, end, values, &eold))) goto done;
      e = eold;
    }
    if (weight == self) wt = old;
    else if (weight && weight->storage == self->storage) {
      if ((st = inplace_old(ctx, weight, true, &wold))) goto done;
      wt = wold;
    }
  }
  if ((st = pt_tensor_copy_into(ctx, self, r)) || !graph) goto done;
  if ((st = record_lerp(ctx, self, old, e, wt, w))) goto done;
  st = rebase_view(ctx, fname, self);
done:
  pt_tensor_release(r);
  pt_tensor_release(old);
  pt_tensor_release(eold);
  pt_tensor_release(wold);
  return st;
}
