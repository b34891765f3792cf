/* Activation layers (nn.ReLU, LeakyReLU, GELU, Tanh, Sigmoid, SiLU, and nn_extra's ELU, SELU, CELU,
 * Softplus, Mish, Hardtanh, ReLU6, Hardswish, Hardsigmoid, Softsign, Tanhshrink, Threshold,
 * LogSigmoid, Softshrink, Hardshrink and their functions): one pass forward, one pass backward,
 * one autograd node each. */
#include "nn.h"
#include "dispatch.h"
#include "nn_impl.h"
#include "parallel.h"
#include "simd_math.h"

#include <math.h>
#include <stdlib.h>

/* ================================================================= activations */

static const char *act_name(pt_nn_act act) {
  switch (act) {
  case PT_ACT_RELU: return "relu";
  case PT_ACT_LEAKY_RELU: return "leaky_relu";
  case PT_ACT_GELU: return "gelu";
  case PT_ACT_GELU_TANH: return "gelu";
  case PT_ACT_TANH: return "tanh";
  case PT_ACT_SIGMOID: return "sigmoid";
  case PT_ACT_SILU: return "silu";
  case PT_ACT_ELU: return "elu";
  case PT_ACT_SELU: return "selu";
  case PT_ACT_CELU: return "celu";
  case PT_ACT_SOFTPLUS: return "softplus";
  case PT_ACT_MISH: return "mish";
  case PT_ACT_HARDTANH: return "hardtanh";
  case PT_ACT_RELU6: return "relu6";
  case PT_ACT_HARDSWISH: return "hardswish";
  case PT_ACT_HARDSIGMOID: return "hardsigmoid";
  case PT_ACT_SOFTSIGN: return "softsign";
  case PT_ACT_TANHSHRINK: return "tanhshrink";
  case PT_ACT_THRESHOLD: return "threshold";
  case PT_ACT_LOGSIGMOID: return "logsigmoid";
  case PT_ACT_SOFTSHRINK: return "softshrink";
  case PT_ACT_HARDSHRINK: return "hardshrink";
  default: return "activation";
  }
}

static const char *act_backward_name(pt_nn_act act) {
  switch (act) {
  case PT_ACT_RELU: return "ReluBackward";
  case PT_ACT_LEAKY_RELU: return "LeakyReluBackward";
  case PT_ACT_GELU:
  case PT_ACT_GELU_TANH: return "GeluBackward";
  case PT_ACT_TANH: return "TanhBackward";
  case PT_ACT_SIGMOID: return "SigmoidBackward";
  case PT_ACT_SILU: return "SiluBackward";
  case PT_ACT_ELU:
  case PT_ACT_SELU:
  case PT_ACT_CELU: return "EluBackward"; /* as PyTorch: selu and celu are elu with coefficients */
  case PT_ACT_SOFTPLUS: return "SoftplusBackward";
  case PT_ACT_MISH: return "MishBackward";
  case PT_ACT_HARDTANH:
  case PT_ACT_RELU6: return "HardtanhBackward";
  case PT_ACT_HARDSWISH: return "HardswishBackward";
  case PT_ACT_HARDSIGMOID: return "HardsigmoidBackward";
  case PT_ACT_SOFTSIGN: return "SoftsignBackward";
  case PT_ACT_TANHSHRINK: return "TanhshrinkBackward";
  case PT_ACT_THRESHOLD: return "ThresholdBackward";
  case PT_ACT_LOGSIGMOID: return "LogSigmoidBackward";
  case PT_ACT_SOFTSHRINK: return "SoftshrinkBackward";
  case PT_ACT_HARDSHRINK: return "HardshrinkBackward";
  default: return "ActivationBackward";
  }
}

#define GELU_K 0.7978845608028654 /* sqrt(2/pi) */
#define GELU_C 0.044715
#define INV_SQRT_2PI 0.3989422804014327

/* --- kernels: y = act(x) forward, gx = g * act'(x, y) backward, over n contiguous elements.
 * float32 transcendentals run 8 lanes at a time, as PyTorch's CPU kernels do, through the
 * helpers below (exp, expm1, tanh, sigmoid, log1p from Cephes' exp reduction: half the time of
 * SLEEF's exp, a fifth of its expm1 and tanh; GELU's erf by Abramowitz-Stegun; a few ulp against
 * float64 on the specs' long rows) behind simd_f8() (lib/simd_math.h); the scalar forms
 * (float64, the tail, a CPU without AVX2) compute in double. One function per activation and
 * direction, so no per-element switch stands in the way of the compiler's vectoriser (the
 * switch-per-element loop was 5-50x slower than PyTorch). --- */

typedef struct act_args {
  pt_dtype dt;
  const void *x, *y, *g;
  void *out;
  double p[3]; /* the kind's coefficients (act_coefs) */
} act_args;

typedef void (*act_kernel)(const act_args *a, int64_t b, int64_t e);

/* ReLU keeps NaN and passes its gradient (x <= 0 is false for NaN), as PyTorch's threshold */
static void relu_fwd(const act_args *a, int64_t b, int64_t e) {
  PT_DISPATCH_FLOAT(a->dt, {
    const T *x = a->x;
    T *y = a->out;
    for (int64_t i = b; i < e; i++) y[i] = x[i] <= 0 ? (T)0 : x[i];
  });
}
static void relu_bwd(const act_args *a, int64_t b, int64_t e) {
  PT_DISPATCH_FLOAT(a->dt, {
    const T *x = a->x, *g = a->g;
    T *o = a->out;
    for (int64_t i = b; i < e; i++) o[i] = x[i] <= 0 ? (T)0 : g[i];
  });
}

static void leaky_fwd(const act_args *a, int64_t b, int64_t e) {
  PT_DISPATCH_FLOAT(a->dt, {
    const T *x = a->x, s = (T)a->p[0];
    T *y = a->out;
    for (int64_t i = b; i < e; i++) y[i] = x[i] > 0 ? x[i] : s * x[i];
  });
}
static void leaky_bwd(const act_args *a, int64_t b, int64_t e) {
  PT_DISPATCH_FLOAT(a->dt, {
    const T *x = a->x, *g = a->g, s = (T)a->p[0];
    T *o = a->out;
    for (int64_t i = b; i < e; i++) o[i] = x[i] > 0 ? g[i] : s * g[i];
  });
}

/* the derivatives of tanh and sigmoid come from the saved output */
static void tanh_bwd(const act_args *a, int64_t b, int64_t e) {
  PT_DISPATCH_FLOAT(a->dt, {
    const T *y = a->y, *g = a->g;
    T *o = a->out;
    for (int64_t i = b; i < e; i++) o[i] = g[i] * ((T)1 - y[i] * y[i]);
  });
}
static void sigmoid_bwd(const act_args *a, int64_t b, int64_t e) {
  PT_DISPATCH_FLOAT(a->dt, {
    const T *y = a->y, *g = a->g;
    T *o = a->out;
    for (int64_t i = b; i < e; i++) o[i] = g[i] * (y[i] * ((T)1 - y[i]));
  });
}

static inline double gelu_d(double x) { return 0.5 * x * (1.0 + erf(x * M_SQRT1_2)); }
static inline double gelu_dd(double x) {
  return 0.5 * (1.0 + erf(x * M_SQRT1_2)) + x * exp(-0.5 * x * x) * INV_SQRT_2PI;
}
static inline double gelu_tanh_d(double x) {
  return 0.5 * x * (1.0 + tanh(GELU_K * (x + GELU_C * x * x * x)));
}
static inline double gelu_tanh_dd(double x) {
  double t = tanh(GELU_K * (x + GELU_C * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_K * (1.0 + 3.0 * GELU_C * x * x);
}
static inline double tanh_d(double x) { return tanh(x); }
static inline double sigmoid_d(double x) {
  return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}
static inline double silu_d(double x) { return x / (1.0 + exp(-x)); }
static inline double silu_dd(double x) {
  double s = 1.0 / (1.0 + exp(-x));
  return s * (1.0 + x * (1.0 - s));
}

/* --- float32 helpers, 8 lanes */
#define V8 __attribute__((target("avx2,fma"))) static inline __m256
/* an 8-lane loop over [b, e): returns where it stopped, the scalar loop does the rest */
#define V8_KERNEL __attribute__((target("avx2,fma"))) static int64_t

V8 v8_abs(__m256 x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
V8 v8_negabs(__m256 x) { return _mm256_or_ps(_mm256_set1_ps(-0.0f), x); }

/* exp and expm1 after Cephes' expf: u = q ln2 + r with |r| <= ln2 / 2, exp(r) - 1 = r + r^2 P(r)
 * (within 1 ulp); returns that, and 2^q in *t. u is clamped to [-88, 88] (callers stay within
 * 88; from -88 down the results are 0 and -1); NaN passes. */
V8 v8_exp_parts(__m256 u, __m256 *t) {
  u = _mm256_min_ps(_mm256_set1_ps(88.0f), _mm256_max_ps(_mm256_set1_ps(-88.0f), u));
  __m256 q = _mm256_round_ps(_mm256_mul_ps(u, _mm256_set1_ps(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(q, _mm256_set1_ps(0.693359375f), u); /* ln 2 in two parts */
  r = _mm256_fnmadd_ps(q, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  __m256i qi = _mm256_add_epi32(_mm256_cvtps_epi32(q), _mm256_set1_epi32(127));
  *t = _mm256_castsi256_ps(_mm256_slli_epi32(qi, 23)); /* 2^q; 0 for q = -127 */
  return _mm256_fmadd_ps(_mm256_mul_ps(r, r), p, r);
}
V8 v8_exp(__m256 u) {
  __m256 t, em = v8_exp_parts(u, &t);
  return _mm256_fmadd_ps(t, em, t);
}
/* 2^q em + (2^q - 1): exact where q = 0 (small u has no cancellation), within a few ulp
 * elsewhere */
V8 v8_expm1(__m256 u) {
  __m256 t, em = v8_exp_parts(u, &t);
  return _mm256_fmadd_ps(t, em, _mm256_sub_ps(t, _mm256_set1_ps(1.0f)));
}

/* log1p(t) for 0 <= t <= 1 (t = exp(-|z|)): 2 atanh(s), s = t / (2 + t) <= 1/3, as
 * 2 s (1 + s^2 R(s^2)), R a degree-4 fit (Chebyshev, 2e-9 relative); half SLEEF's log1p */
V8 v8_log1p_unit(__m256 t) {
  __m256 s = _mm256_div_ps(t, _mm256_add_ps(t, _mm256_set1_ps(2.0f)));
  __m256 z = _mm256_mul_ps(s, s);
  __m256 p = _mm256_set1_ps(0.10698965191841125f);
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(0.11074407398700714f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(0.1427810937166214f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(0.20000417530536652f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(0.333333283662796f));
  __m256 s2 = _mm256_add_ps(s, s);
  return _mm256_fmadd_ps(_mm256_mul_ps(s2, z), p, s2);
}

/* sigmoid(z) through t = exp(-|z|) <= 1 (no overflow): 1 / (1 + t), or t / (1 + t) below 0 */
V8 v8_sigmoid_t(__m256 z) {
  __m256 t = v8_exp(_mm256_or_ps(_mm256_set1_ps(-0.0f), z));
  __m256 r = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(_mm256_set1_ps(1.0f), t));
  return _mm256_blendv_ps(r, _mm256_mul_ps(t, r), _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_LT_OQ));
}

/* log(1 + exp(z)) = max(z, 0) + log1p(exp(-|z|)): no overflow; NaN stays NaN (max's second
 * operand is returned when one is NaN) */
V8 v8_softplus(__m256 z) {
  __m256 t = v8_exp(v8_negabs(z));
  return _mm256_add_ps(_mm256_max_ps(_mm256_setzero_ps(), z), v8_log1p_unit(t));
}

/* tanh(x) = sign(x) m / (m + 2), m = expm1(2|x|), |x| capped at 10 (where tanh rounds to 1) */
V8 v8_tanh_fast(__m256 x) {
  __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
  __m256 u = _mm256_min_ps(_mm256_set1_ps(10.0f), v8_abs(x)); /* NaN passes */
  __m256 m = v8_expm1(_mm256_add_ps(u, u));
  return _mm256_xor_ps(_mm256_div_ps(m, _mm256_add_ps(m, _mm256_set1_ps(2.0f))), sign);
}

/* erf(z) for the GELU kernels, given ez = exp(-z^2): Abramowitz and Stegun's 7.1.26,
 * 1 - (a1 t + ... + a5 t^5) exp(-z^2) with t = 1 / (1 + p |z|), absolute error below 1.5e-7
 * (as PyTorch's vectorised GELU). In GELU it is multiplied by x / 2 or added to 1, so the
 * error stays within float32 rounding; the exp is shared with the backward's density term,
 * one exp (v8_exp) per element instead of SLEEF's erf (4-5x slower) and an exp. */
V8 v8_erf_gelu(__m256 z, __m256 ez) {
  const __m256 one = _mm256_set1_ps(1.0f);
  __m256 sign = _mm256_and_ps(z, _mm256_set1_ps(-0.0f));
  __m256 az = _mm256_xor_ps(z, sign);
  __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(0.3275911f), az, one));
  __m256 r = _mm256_set1_ps(1.061405429f);
  r = _mm256_fmadd_ps(r, t, _mm256_set1_ps(-1.453152027f));
  r = _mm256_fmadd_ps(r, t, _mm256_set1_ps(1.421413741f));
  r = _mm256_fmadd_ps(r, t, _mm256_set1_ps(-0.284496736f));
  r = _mm256_fmadd_ps(r, t, _mm256_set1_ps(0.254829592f));
  r = _mm256_mul_ps(r, t);
  __m256 y = _mm256_fnmadd_ps(r, ez, one);
  return _mm256_xor_ps(y, sign);
}
V8 v8_gelu_fast(__m256 x) { /* 0.5 x (1 + erf(x / sqrt 2)) */
  __m256 ez = v8_exp(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(-0.5f), x), x));
  __m256 e = v8_erf_gelu(_mm256_mul_ps(x, _mm256_set1_ps((float)M_SQRT1_2)), ez);
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}
V8 v8_gelud_fast(__m256 x) { /* 0.5 (1 + erf(x / sqrt 2)) + x phi(x) */
  __m256 ez = v8_exp(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(-0.5f), x), x));
  __m256 e = v8_erf_gelu(_mm256_mul_ps(x, _mm256_set1_ps((float)M_SQRT1_2)), ez);
  __m256 cdf = _mm256_mul_ps(_mm256_set1_ps(0.5f), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  return _mm256_fmadd_ps(_mm256_mul_ps(x, ez), _mm256_set1_ps((float)INV_SQRT_2PI), cdf);
}
V8 v8_gelu_tanh(__m256 x) { /* 0.5 x (1 + tanh(k (x + c x^3))) */
  __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  __m256 in = _mm256_mul_ps(_mm256_set1_ps((float)GELU_K),
                            _mm256_add_ps(x, _mm256_mul_ps(_mm256_set1_ps((float)GELU_C), x3)));
  __m256 t = v8_tanh_fast(in);
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), t));
}
V8 v8_gelu_tanhd(__m256 x) { /* 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2) */
  __m256 one = _mm256_set1_ps(1.0f), half = _mm256_set1_ps(0.5f), x2 = _mm256_mul_ps(x, x);
  __m256 in = _mm256_mul_ps(_mm256_set1_ps((float)GELU_K),
                            _mm256_add_ps(x, _mm256_mul_ps(_mm256_set1_ps((float)GELU_C), _mm256_mul_ps(x2, x))));
  __m256 t = v8_tanh_fast(in);
  __m256 left = _mm256_mul_ps(half, _mm256_add_ps(one, t));
  __m256 sech2 = _mm256_sub_ps(one, _mm256_mul_ps(t, t));
  __m256 poly = _mm256_add_ps(one, _mm256_mul_ps(_mm256_set1_ps((float)(3.0 * GELU_C)), x2));
  __m256 right = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(half, x), sech2),
                               _mm256_mul_ps(_mm256_set1_ps((float)GELU_K), poly));
  return _mm256_add_ps(left, right);
}
V8 v8_silu(__m256 x) { return _mm256_mul_ps(x, v8_sigmoid_t(x)); }
V8 v8_silud(__m256 x) { /* s (1 + x (1 - s)) */
  __m256 one = _mm256_set1_ps(1.0f), s = v8_sigmoid_t(x);
  return _mm256_mul_ps(s, _mm256_add_ps(one, _mm256_mul_ps(x, _mm256_sub_ps(one, s))));
}
V8 v8_tanh(__m256 x) { return v8_tanh_fast(x); }

/* A forward kernel y = F(x), and a backward one from x (gx = g * DF(x)): the 8-lane body for
 * float32 when the CPU has AVX2, the double-precision scalar SF / SDF otherwise. */
#define ACT_FORWARD(name, VF, SF)                                                               \
  __attribute__((target("avx2,fma"))) static void name##_fwd_v8(const float *x, float *y,      \
                                                                int64_t b, int64_t e) {        \
    int64_t i = b;                                                                              \
    for (; i + 8 <= e; i += 8) _mm256_storeu_ps(y + i, VF(_mm256_loadu_ps(x + i)));            \
    for (; i < e; i++) y[i] = (float)SF((double)x[i]);                                          \
  }                                                                                             \
  static void name##_fwd(const act_args *a, int64_t b, int64_t e) {                            \
    if (a->dt == PT_FLOAT32 && simd_f8()) {                                                  \
      name##_fwd_v8(a->x, a->out, b, e);                                                        \
      return;                                                                                   \
    }                                                                                           \
    PT_DISPATCH_FLOAT(a->dt, {                                                                  \
      const T *x = a->x;                                                                        \
      T *y = a->out;                                                                            \
      for (int64_t i = b; i < e; i++) y[i] = (T)SF((double)x[i]);                               \
    });                                                                                         \
  }
#define ACT_BACKWARD(name, VDF, SDF)                                                            \
  __attribute__((target("avx2,fma"))) static void name##_bwd_v8(const float *x, const float *g, \
                                                                float *o, int64_t b, int64_t e) { \
    int64_t i = b;                                                                              \
    for (; i + 8 <= e; i += 8)                                                                  \
      _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_loadu_ps(g + i), VDF(_mm256_loadu_ps(x + i)))); \
    for (; i < e; i++) o[i] = (float)((double)g[i] * SDF((double)x[i]));                        \
  }                                                                                             \
  static void name##_bwd(const act_args *a, int64_t b, int64_t e) {                            \
    if (a->dt == PT_FLOAT32 && simd_f8()) {                                                  \
      name##_bwd_v8(a->x, a->g, a->out, b, e);                                                  \
      return;                                                                                   \
    }                                                                                           \
    PT_DISPATCH_FLOAT(a->dt, {                                                                  \
      const T *x = a->x, *g = a->g;                                                             \
      T *o = a->out;                                                                            \
      for (int64_t i = b; i < e; i++) o[i] = (T)((double)g[i] * SDF((double)x[i]));            \
    });                                                                                         \
  }

ACT_FORWARD(gelu, v8_gelu_fast, gelu_d)
ACT_BACKWARD(gelu, v8_gelud_fast, gelu_dd)
ACT_FORWARD(gelu_tanh, v8_gelu_tanh, gelu_tanh_d)
ACT_BACKWARD(gelu_tanh, v8_gelu_tanhd, gelu_tanh_dd)
ACT_FORWARD(silu, v8_silu, silu_d)
ACT_BACKWARD(silu, v8_silud, silu_dd)
ACT_FORWARD(tanh, v8_tanh, tanh_d) /* tanh and sigmoid differentiate through their output */
ACT_FORWARD(sigmoid, v8_sigmoid_t, sigmoid_d)

/* ------------------------------------------------------------ nn_extra's activations
 * PyTorch 1.13's CPU kernels as its vectorised loops compute them (what every tensor of 8 or
 * more elements gets there; its scalar loop for the last few elements differs at a few points,
 * such as the gradient of a NaN): the branch conditions (strict or not), the values and
 * gradients at the kinks and the special values are theirs (spec/nn_activation_spec.lua pins
 * them). Rounding aside, a few formulas are more accurate than PyTorch's: ELU takes expm1 (its
 * exp - 1 gives 0 for float32 x = -1e-8), Softplus max(z, 0) + log1p(exp(-|z|)) and a sigmoid for
 * its derivative (no overflow under a large threshold), and float64 Hardsigmoid's gradient is
 * float64's 1/6 (PyTorch 1.13 multiplies by float32's). Comparisons and the piecewise linear kinds compute in the tensor's dtype with coefficients
 * rounded to it, as PyTorch's scalar_t. The transcendental kinds run float32 8 lanes at a time
 * through the helpers above; float64, the last elements and other CPUs compute them in double.
 * Coefficients in act_args.p (act_coefs): ELU, SELU, CELU alpha, scale, input_scale (y = scale x
 * for x > 0, alpha scale expm1(input_scale x) otherwise); Softplus beta, threshold; Hardtanh,
 * ReLU6 min, max; Threshold threshold, value; Softshrink, Hardshrink lambda. */

/* ELU, SELU, CELU */
V8_KERNEL elu_fwd_v8(const act_args *a, int64_t b, int64_t e) {
  const float *x = a->x;
  float *y = a->out;
  const __m256 neg = _mm256_set1_ps((float)a->p[0] * (float)a->p[1]), pos = _mm256_set1_ps((float)a->p[1]);
  const __m256 ips = _mm256_set1_ps((float)a->p[2]), zero = _mm256_setzero_ps();
  int64_t i = b;
  for (; i + 8 <= e; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i), gt = _mm256_cmp_ps(v, zero, _CMP_GT_OQ), r = _mm256_mul_ps(v, pos);
    if (_mm256_movemask_ps(gt) != 0xff) /* not all positive */
      r = _mm256_blendv_ps(_mm256_mul_ps(v8_expm1(_mm256_mul_ps(v, ips)), neg), r, gt);
    _mm256_storeu_ps(y + i, r);
  }
  return i;
}
static void elu_fwd(const act_args *a, int64_t b, int64_t e) {
  if (a->dt == PT_FLOAT32 && simd_f8()) b = elu_fwd_v8(a, b, e);
  PT_DISPATCH_FLOAT(a->dt, {
    const T *x = a->x, neg = (T)a->p[0] * (T)a->p[1], pos = (T)a->p[1], ips = (T)a->p[2];
    T *y = a->out;
    for (int64_t i = b; i < e; i++) y[i] = x[i] > 0 ? x[i] * pos : (T)expm1((double)(x[i] * ips)) * neg;
  });
}
V8_KERNEL elu_bwd_v8(const act_args *a, int64_t b, int64_t e) {
  const float *x = a->x, *g = a->g;
  float *o = a->out;
  const float ipsf = (float)a->p[2];
  const __m256 negips = _mm256_set1_ps((float)a->p[0] * (float)a->p[1] * ipsf), pos = _mm256_set1_ps((float)a->p[1]);
  const __m256 ips = _mm256_set1_ps(ipsf), zero = _mm256_setzero_ps();
  int64_t i = b;
  for (; i + 8 <= e; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i), gt = _mm256_cmp_ps(v, zero, _CMP_GT_OQ), d = pos;
    if (_mm256_movemask_ps(gt) != 0xff)
      d = _mm256_blendv_ps(_mm256_mul_ps(negips, v8_exp(_mm256_mul_ps(v, ips))), pos, gt);
    _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_loadu_ps(g + i), d));
  }
  return i;
}
static void elu_bwd(const act_args *a, int64_t b, int64_t e) {
  if (a->dt == PT_FLOAT32 && simd_f8()) b = elu_bwd_v8(a, b, e);
  PT_DISPATCH_FLOAT(a->dt, {
    const T *x = a->x, *g = a->g, ips = (T)a->p[2], negips = (T)a->p[0] * (T)a->p[1] * ips, pos = (T)a->p[1];
    T *o = a->out;
    for (int64_t i = b; i < e; i++)
      o[i] = g[i] * (x[i] > 0 ? pos : negips * (T)exp((double)(x[i] * ips)));
  });
}

/* Softplus: x where beta x > threshold, log(1 + exp(beta x)) / beta elsewhere */
static inline double softplus_d(double z) { return fmax(z, 0.0) + log1p(exp(-fabs(z))); }
V8_KERNEL softplus_fwd_v8(const act_args *a, int64_t b, int64_t e) {
  const float *x = a->x;
  float *y = a->out;
  const __m256 beta = _mm256_set1_ps((float)a->p[0]), th = _mm256_set1_ps((float)a->p[1]);
  const bool unit = (float)a->p[0] == 1.0f; /* x * 1 and y / 1 are x and y */
  int64_t i = b;
  for (; i + 8 <= e; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i), bx = v, r;
    if (unit) {
      r = v8_softplus(v);
    } else {
      bx = _mm256_mul_ps(v, beta);
      r = _mm256_div_ps(v8_softplus(bx), beta);
    }
    _mm256_storeu_ps(y + i, _mm256_blendv_ps(r, v, _mm256_cmp_ps(bx, th, _CMP_GT_OQ)));
  }
  return i;
}
static void softplus_fwd(const act_args *a, int64_t b, int64_t e) {
  if (a->dt == PT_FLOAT32 && simd_f8()) b = softplus_fwd_v8(a, b, e);
  PT_DISPATCH_FLOAT(a->dt, {
    const T *x = a->x, beta = (T)a->p[0], th = (T)a->p[1];
    T *y = a->out;
    for (int64_t i = b; i < e; i++) {
      T bx = x[i] * beta;
      y[i] = bx > th ? x[i] : (T)(softplus_d((double)bx) / (double)beta);
    }
  });
}
V8_KERNEL softplus_bwd_v8(const act_args *a, int64_t b, int64_t e) {
  const float *x = a->x, *g = a->g;
  float *o = a->out;
  const __m256 beta = _mm256_set1_ps((float)a->p[0]), th = _mm256_set1_ps((float)a->p[1]);
  int64_t i = b;
  for (; i + 8 <= e; i += 8) {
    __m256 bx = _mm256_mul_ps(_mm256_loadu_ps(x + i), beta), gv = _mm256_loadu_ps(g + i);
    __m256 r = _mm256_mul_ps(gv, v8_sigmoid_t(bx));
    _mm256_storeu_ps(o + i, _mm256_blendv_ps(r, gv, _mm256_cmp_ps(bx, th, _CMP_GT_OQ)));
  }
  return i;
}
static void softplus_bwd(const act_args *a, int64_t b, int64_t e) {
  if (a->dt == PT_FLOAT32 && simd_f8()) b = softplus_bwd_v8(a, b, e);
  PT_DISPATCH_FLOAT(a->dt, {
    const T *x = a->x, *g = a->g, beta = (T)a->p[0], th = (T)a->p[1];
    T *o = a->out;
    for (int64_t i = b; i < e; i++) {
      T bx = x[i] * beta;
      o[i] = bx > th ? g[i] : g[i] * (T)sigmoid_d((double)bx);
    }
  });
}

/* Mish: x tanh(softplus(x)). With e = exp(x) and n = e (e + 2), tanh(log(1 + e)) = n / (n + 2)
 * and the derivative tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2) = n / w + 4 x e (1 + e) / w^2,
 * w = n + 2: one exp and one division. x is capped at 20 inside, where n / w rounds to 1 and the
 * second term of the derivative is below float32's resolution (it is dropped there, so that an
 * infinite x gives PyTorch's NaN gradient, as at -inf). float64 runs PyTorch's formulas. */
static inline double mish_d(double x) { return x * tanh(log1p(exp(x))); }
static inline double mish_dd(double x) {
  double s = 1.0 / (1.0 + exp(-x)), t = tanh(log1p(exp(x)));
  return t + x * s * (1.0 - t * t);
}
V8_KERNEL mish_fwd_v8(const act_args *a, int64_t b, int64_t e) {
  const float *x = a->x;
  float *y = a->out;
  const __m256 two = _mm256_set1_ps(2.0f), cap = _mm256_set1_ps(20.0f);
  int64_t i = b;
  for (; i + 8 <= e; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m256 ex = v8_exp(_mm256_min_ps(cap, v));
    __m256 n = _mm256_mul_ps(ex, _mm256_add_ps(ex, two));
    _mm256_storeu_ps(y + i, _mm256_mul_ps(v, _mm256_div_ps(n, _mm256_add_ps(n, two))));
  }
  return i;
}
static void mish_fwd(const act_args *a, int64_t b, int64_t e) {
  if (a->dt == PT_FLOAT32 && simd_f8()) b = mish_fwd_v8(a, b, e);
  PT_DISPATCH_FLOAT(a->dt, {
    const T *x = a->x;
    T *y = a->out;
    for (int64_t i = b; i < e; i++) y[i] = (T)mish_d((double)x[i]);
  });
}
V8_KERNEL mish_bwd_v8(const act_args *a, int64_t b, int64_t e) {
  const float *x = a->x, *g = a->g;
  float *o = a->out;
  const __m256 one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f), four = _mm256_set1_ps(4.0f);
  const __m256 cap = _mm256_set1_ps(20.0f);
  int64_t i = b;
  for (; i + 8 <= e; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m256 ex = v8_exp(_mm256_min_ps(cap, v));
    __m256 n = _mm256_mul_ps(ex, _mm256_add_ps(ex, two));
    __m256 inv = _mm256_div_ps(one, _mm256_add_ps(n, two));
    __m256 q = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(four, ex), _mm256_add_ps(one, ex)), _mm256_mul_ps(inv, inv));
    q = _mm256_andnot_ps(_mm256_cmp_ps(v, cap, _CMP_GT_OQ), q);
    __m256 d = _mm256_fmadd_ps(v, q, _mm256_mul_ps(n, inv));
    _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_loadu_ps(g + i), d));
  }
  return i;
}
static void mish_bwd(const act_args *a, int64_t b, int64_t e) {
  if (a->dt == PT_FLOAT32 && simd_f8()) b = mish_bwd_v8(a, b, e);
  PT_DISPATCH_FLOAT(a->dt, {
    const T *x = a->x, *g = a->g;
    T *o = a->out;
    for (int64_t i = b; i < e; i++) o[i] = (T)((double)g[i] * mish_dd((double)x[i]));
  });
}

/* Tanhshrink: x - tanh(x), derivative tanh(x)^2 */
V8_KERNEL tanhshrink_fwd_v8(const act_args *a, int64_t b, int64_t e) {
  const float *x = a->x;
  float *y = a->out;
  int64_t i = b;
  for (; i + 8 <= e; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    _mm256_storeu_ps(y + i, _mm256_sub_ps(v, v8_tanh_fast(v)));
  }
  return i;
}
static void tanhshrink_fwd(const act_args *a, int64_t b, int64_t e) {
  if (a->dt == PT_FLOAT32 && simd_f8()) b = tanhshrink_fwd_v8(a, b, e);
  PT_DISPATCH_FLOAT(a->dt, {
    const T *x = a->x;
    T *y = a->out;
    for (int64_t i = b; i < e; i++) y[i] = (T)((double)x[i] - tanh((double)x[i]));
  });
}
V8_KERNEL tanhshrink_bwd_v8(const act_args *a, int64_t b, int64_t e) {
  const float *x = a->x, *g = a->g;
  float *o = a->out;
  int64_t i = b;
  for (; i + 8 <= e; i += 8) {
    __m256 t = v8_tanh_fast(_mm256_loadu_ps(x + i));
    _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_loadu_ps(g + i), _mm256_mul_ps(t, t)));
  }
  return i;
}
static void tanhshrink_bwd(const act_args *a, int64_t b, int64_t e) {
  if (a->dt == PT_FLOAT32 && simd_f8()) b = tanhshrink_bwd_v8(a, b, e);
  PT_DISPATCH_FLOAT(a->dt, {
    const T *x = a->x, *g = a->g;
    T *o = a->out;
    for (int64_t i = b; i < e; i++) {
      double t = tanh((double)x[i]);
      o[i] = g[i] * (T)(t * t);
    }
  });
}

/* LogSigmoid: min(x, 0) - log1p(exp(-|x|)), derivative sigmoid(-x) */
V8_KERNEL logsigmoid_fwd_v8(const act_args *a, int64_t b, int64_t e) {
  const float *x = a->x;
  float *y = a->out;
  int64_t i = b;
  for (; i + 8 <= e; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m256 l = v8_log1p_unit(v8_exp(v8_negabs(v)));
    _mm256_storeu_ps(y + i, _mm256_sub_ps(_mm256_min_ps(_mm256_setzero_ps(), v), l));
  }
  return i;
}
static void logsigmoid_fwd(const act_args *a, int64_t b, int64_t e) {
  if (a->dt == PT_FLOAT32 && simd_f8()) b = logsigmoid_fwd_v8(a, b, e);
  PT_DISPATCH_FLOAT(a->dt, {
    const T *x = a->x;
    T *y = a->out;
    for (int64_t i = b; i < e; i++) {
      double v = (double)x[i];
      y[i] = (T)((v < 0 ? v : 0.0) - log1p(exp(-fabs(v))));
    }
  });
}
V8_KERNEL logsigmoid_bwd_v8(const act_args *a, int64_t b, int64_t e) {
  const float *x = a->x, *g = a->g;
  float *o = a->out;
  int64_t i = b;
  for (; i + 8 <= e; i += 8) {
    __m256 s = v8_sigmoid_t(_mm256_xor_ps(_mm256_loadu_ps(x + i), _mm256_set1_ps(-0.0f)));
    _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_loadu_ps(g + i), s));
  }
  return i;
}
static void logsigmoid_bwd(const act_args *a, int64_t b, int64_t e) {
  if (a->dt == PT_FLOAT32 && simd_f8()) b = logsigmoid_bwd_v8(a, b, e);
  PT_DISPATCH_FLOAT(a->dt, {
    const T *x = a->x, *g = a->g;
    T *o = a->out;
    for (int64_t i = b; i < e; i++) o[i] = g[i] * (T)sigmoid_d(-(double)x[i]);
  });
}
#undef V8
#undef V8_KERNEL

/* The piecewise linear kinds: plain loops in the dtype, which the compiler vectorises. Masked
 * gradients are 0 whatever g holds (PyTorch's masks), so a NaN in g does not get through. */
#define PIECEWISE_FWD(name, SETUP, EXPR)                              \
  static void name##_fwd(const act_args *a, int64_t b, int64_t e) {  \
    PT_DISPATCH_FLOAT(a->dt, {                                        \
      const T *restrict x = a->x;                                     \
      T *restrict y = a->out;                                         \
      SETUP                                                           \
      for (int64_t i = b; i < e; i++) {                               \
        const T v = x[i];                                             \
        y[i] = (EXPR);                                                \
      }                                                               \
    });                                                               \
  }
#define PIECEWISE_BWD(name, SETUP, EXPR)                              \
  static void name##_bwd(const act_args *a, int64_t b, int64_t e) {  \
    PT_DISPATCH_FLOAT(a->dt, {                                        \
      const T *restrict x = a->x, *restrict g = a->g;                 \
      T *restrict o = a->out;                                         \
      SETUP                                                           \
      for (int64_t i = b; i < e; i++) {                               \
        const T v = x[i], gv = g[i];                                  \
        o[i] = (EXPR);                                                \
      }                                                               \
    });                                                               \
  }

/* Hardtanh and ReLU6: clamp (NaN stays, -0 stays -0); the gradient only strictly inside */
PIECEWISE_FWD(hardtanh, const T lo = (T)a->p[0]; const T hi = (T)a->p[1];,
              v < lo ? lo : (v > hi ? hi : v))
PIECEWISE_BWD(hardtanh, const T lo = (T)a->p[0]; const T hi = (T)a->p[1];,
              ((v > lo) & (v < hi)) ? gv : (T)0)
/* Hardswish: x relu6(x + 3) / 6 (-inf gives NaN, as PyTorch); gradient 0 below -3, 1 from 3 on,
 * x / 3 + 1/2 between (and for NaN) */
PIECEWISE_FWD(hardswish, , v * ((v + 3) < 0 ? (T)0 : ((v + 3) > 6 ? (T)6 : v + 3)) / 6)
PIECEWISE_BWD(hardswish, , v < -3 ? (T)0 : (v >= 3 ? gv : gv * (v / 3 + (T)0.5)))
/* Hardsigmoid: relu6(x + 3) / 6, gradient 1/6 strictly between -3 and 3 */
PIECEWISE_FWD(hardsigmoid, , ((v + 3) < 0 ? (T)0 : ((v + 3) > 6 ? (T)6 : v + 3)) / 6)
PIECEWISE_BWD(hardsigmoid, const T sixth = (T)(1.0 / 6.0);, ((v > -3) & (v < 3)) ? gv * sixth : (T)0)
/* Softsign: x / (|x| + 1), as PyTorch's composition (infinities give NaN); the gradient
 * 1 / (1 + |x|)^2, NaN at the infinities as PyTorch's (the x - x term) */
PIECEWISE_FWD(softsign, , v / ((v < 0 ? -v : v) + 1))
PIECEWISE_BWD(softsign, , gv * ((T)1 / (((v < 0 ? -v : v) + 1) * ((v < 0 ? -v : v) + 1)) + (v - v)))
/* Threshold: value where x <= threshold */
PIECEWISE_FWD(threshold, const T th = (T)a->p[0]; const T val = (T)a->p[1];, v <= th ? val : v)
PIECEWISE_BWD(threshold, const T th = (T)a->p[0];, v <= th ? (T)0 : gv)
/* Softshrink (NaN gives 0, as PyTorch) and Hardshrink; their gradient passes outside
 * [-lambda, lambda] */
PIECEWISE_FWD(softshrink, const T l = (T)a->p[0];, v > l ? v - l : (v < -l ? v + l : (T)0))
PIECEWISE_FWD(hardshrink, const T l = (T)a->p[0];, ((v >= -l) & (v <= l)) ? (T)0 : v)
PIECEWISE_BWD(shrink, const T l = (T)a->p[0];, ((v < -l) | (v > l)) ? gv : (T)0)
#undef PIECEWISE_FWD
#undef PIECEWISE_BWD

static act_kernel act_forward_kernel(pt_nn_act act) {
  switch (act) {
  case PT_ACT_RELU: return relu_fwd;
  case PT_ACT_LEAKY_RELU: return leaky_fwd;
  case PT_ACT_GELU: return gelu_fwd;
  case PT_ACT_GELU_TANH: return gelu_tanh_fwd;
  case PT_ACT_TANH: return tanh_fwd;
  case PT_ACT_SIGMOID: return sigmoid_fwd;
  case PT_ACT_SILU: return silu_fwd;
  case PT_ACT_ELU:
  case PT_ACT_SELU:
  case PT_ACT_CELU: return elu_fwd;
  case PT_ACT_SOFTPLUS: return softplus_fwd;
  case PT_ACT_MISH: return mish_fwd;
  case PT_ACT_HARDTANH:
  case PT_ACT_RELU6: return hardtanh_fwd;
  case PT_ACT_HARDSWISH: return hardswish_fwd;
  case PT_ACT_HARDSIGMOID: return hardsigmoid_fwd;
  case PT_ACT_SOFTSIGN: return softsign_fwd;
  case PT_ACT_TANHSHRINK: return tanhshrink_fwd;
  case PT_ACT_THRESHOLD: return threshold_fwd;
  case PT_ACT_LOGSIGMOID: return logsigmoid_fwd;
  case PT_ACT_SOFTSHRINK: return softshrink_fwd;
  case PT_ACT_HARDSHRINK: return hardshrink_fwd;
  default: return NULL;
  }
}

void pt_nn_act_span(pt_dtype dt, pt_nn_act act, const void *x, void *y, int64_t n) {
  act_args a = {dt, x, NULL, NULL, y, {0}};
  act_forward_kernel(act)(&a, 0, n);
}

static act_kernel act_backward_kernel(pt_nn_act act) {
  switch (act) {
  case PT_ACT_RELU: return relu_bwd;
  case PT_ACT_LEAKY_RELU: return leaky_bwd;
  case PT_ACT_GELU: return gelu_bwd;
  case PT_ACT_GELU_TANH: return gelu_tanh_bwd;
  case PT_ACT_TANH: return tanh_bwd;
  case PT_ACT_SIGMOID: return sigmoid_bwd;
  case PT_ACT_SILU: return silu_bwd;
  case PT_ACT_ELU:
  case PT_ACT_SELU:
  case PT_ACT_CELU: return elu_bwd;
  case PT_ACT_SOFTPLUS: return softplus_bwd;
  case PT_ACT_MISH: return mish_bwd;
  case PT_ACT_HARDTANH:
  case PT_ACT_RELU6: return hardtanh_bwd;
  case PT_ACT_HARDSWISH: return hardswish_bwd;
  case PT_ACT_HARDSIGMOID: return hardsigmoid_bwd;
  case PT_ACT_SOFTSIGN: return softsign_bwd;
  case PT_ACT_TANHSHRINK: return tanhshrink_bwd;
  case PT_ACT_THRESHOLD: return threshold_bwd;
  case PT_ACT_LOGSIGMOID: return logsigmoid_bwd;
  case PT_ACT_SOFTSHRINK:
  case PT_ACT_HARDSHRINK: return shrink_bwd;
  default: return NULL;
  }
}

/* Elementwise, so any split gives the same numbers; large tensors run on the intra-op threads. */
#define ACT_GRAIN 16384
typedef struct act_job {
  act_kernel k;
  act_args a;
} act_job;

static void act_chunk(void *arg, int64_t b, int64_t e, int tid) {
  (void)tid;
  const act_job *j = arg;
  j->k(&j->a, b, e);
}

static void act_run(const pt_ctx *ctx, act_kernel k, const act_args *a, int64_t n) {
  if (n < 2 * ACT_GRAIN) {
    k(a, 0, n);
    return;
  }
  act_job j = {k, *a};
  pt_parallel_for(ctx, n, ACT_GRAIN, act_chunk, &j);
}

#define SELU_ALPHA 1.6732632423543772848170429916717
#define SELU_SCALE 1.0507009873554804934193349852946

/* act_args.p from the parameters (see the kernels) */
static void act_coefs(pt_nn_act act, double p0, double p1, double c[3]) {
  c[0] = p0;
  c[1] = p1;
  c[2] = 0;
  switch (act) {
  case PT_ACT_ELU: c[1] = c[2] = 1; break;
  case PT_ACT_SELU: c[0] = SELU_ALPHA, c[1] = SELU_SCALE, c[2] = 1; break;
  case PT_ACT_CELU: c[1] = 1, c[2] = 1.0 / p0; break; /* PyTorch's input_scale, rounded to T */
  case PT_ACT_RELU6: c[0] = 0, c[1] = 6; break;
  default: break;
  }
}

/* tanh's and sigmoid's backward read y; ReLU saves it too, as PyTorch's (which differentiates
 * through its output), so that changing it in place before backward is refused there as here;
 * the others' outputs stay free to be modified in place, as PyTorch's */
static bool act_saves_y(pt_nn_act act) { return act == PT_ACT_TANH || act == PT_ACT_SIGMOID || act == PT_ACT_RELU; }

/* saved: 0 x, 1 y alias (act_saves_y) or NULL; ints: act; scalars: p0, p1 (slope, alpha, ...) */
static pt_status act_backward(pt_ctx *ctx, pt_node *node, pt_tensor *grad_out, pt_tensor **grad_in) {
  pt_tensor *x = node->saved[0], *y = node->saved[1], *g, *gx;
  pt_nn_act act = (pt_nn_act)node->ints[0];
  pt_status st = grad_prep(ctx, grad_out, x->dtype, &g);
  if (st) return st;
  if ((st = pt_tensor_empty(ctx, x->dtype, x->ndim, x->shape, &gx))) {
    pt_tensor_release(g);
    return st;
  }
  act_args a = {x->dtype, pt_tensor_data(x), y ? pt_tensor_data(y) : NULL, pt_tensor_data(g),
                pt_tensor_data(gx), {0}};
  act_coefs(act, node->scalars[0], node->scalars[1], a.p);
  act_run(ctx, act_backward_kernel(act), &a, pt_tensor_numel(x));
  pt_tensor_release(g);
  grad_in[0] = gx;
  return PT_OK;
}

static pt_status check_params(pt_ctx *ctx, pt_nn_act act, double p0, double p1) {
  const char *f = act_name(act);
  switch (act) {
  case PT_ACT_CELU:
    if (p0 == 0) return pt_fail(ctx, PT_EARG, "%s: alpha must not be 0", f);
    break;
  case PT_ACT_SOFTPLUS:
    if (p0 == 0) return pt_fail(ctx, PT_EARG, "%s: beta must not be 0", f);
    break;
  case PT_ACT_HARDTANH:
    if (!(p1 > p0))
      return pt_fail(ctx, PT_EARG, "%s: max_val (%g) must be greater than min_val (%g)", f, p1, p0);
    break;
  case PT_ACT_SOFTSHRINK:
    if (!(p0 >= 0)) return pt_fail(ctx, PT_EARG, "%s: lambda must be non-negative, got %g", f, p0);
    break;
  default: break;
  }
  return PT_OK;
}

pt_status pt_nn_activation_p(pt_ctx *ctx, pt_nn_act act, pt_tensor *x, double p0, double p1,
                             pt_tensor **out) {
  pt_status st;
  if (act <= PT_ACT_NONE || act > PT_ACT_HARDSHRINK)
    return pt_fail(ctx, PT_EARG, "activation: unknown activation %d", (int)act);
  if ((st = check_float(ctx, act_name(act), "input", x)) || (st = check_params(ctx, act, p0, p1)))
    return st;
  pt_tensor *xc, *y;
  if ((st = pt_tensor_contiguous_raw(ctx, x, &xc))) return st;
  if ((st = pt_tensor_empty(ctx, x->dtype, x->ndim, x->shape, &y))) {
    pt_tensor_release(xc);
    return st;
  }
  act_args a = {x->dtype, pt_tensor_data(xc), NULL, NULL, pt_tensor_data(y), {0}};
  act_coefs(act, p0, p1, a.p);
  act_run(ctx, act_forward_kernel(act), &a, pt_tensor_numel(x));
  pt_node *node;
  if ((st = pt_autograd_record(ctx, y, act_backward_name(act), act_backward, 1, &x, &node))) goto fail;
  if (node) {
    pt_node_save(node, 0, xc);
    xc = NULL;
    if (act_saves_y(act) && (st = alias(ctx, y, &node->saved[1]))) goto fail;
    node->ints[0] = act;
    node->n_ints = 1;
    node->scalars[0] = p0;
    node->scalars[1] = p1;
  }
  pt_tensor_release(xc);
  *out = y;
  return PT_OK;
fail:
  pt_tensor_release(xc);
  pt_tensor_release(y);
  return st;
}

pt_status pt_nn_activation(pt_ctx *ctx, pt_nn_act act, pt_tensor *x, double slope, pt_tensor **out) {
  return pt_nn_activation_p(ctx, act, x, slope, 0.0, out);
}
