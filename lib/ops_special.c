/* Special functions (lgamma, digamma, polygamma, Bessel i0/i1, the normal CDF family, entr,
 * mvlgamma, xlog1py) and bitwise / integer ops, with broadcasting, promotion and autograd.
 *
 * The scalar functions are written from their series and asymptotic expansions (digamma: the
 * recurrence to x >= 10 and the Stirling series; polygamma: n! times the Hurwitz zeta by
 * Euler-Maclaurin summation, and the reflection formula with the derivatives of cot for x < 0;
 * i0/i1: the power series up to 30 and Hankel's expansion beyond; ndtri: Newton steps on
 * log ndtr or on erf from Abramowitz-Stegun 26.2.23). They compute in double; float32 tensors
 * round the double result once (lgamma excepted: lgammaf_r).
 *
 * Special functions run over contiguous arrays; the binary ops are kernels of the element-wise
 * engine (lib/ew_impl.h: its kernel generator, operands and broadcasting runner) with this
 * file's dtype rules. Outputs are fresh tensors. In-place forms compute out of place and copy in
 * with pt_copy_, which already knows views, versions and autograd. */
#include "ops_special.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ew_impl.h"
#include "ops_shape.h"
#include "parallel.h"

/* ---------------------------------------------------------------------------------------------
 * scalar functions
 * ------------------------------------------------------------------------------------------- */

#define SQRT_2PI 2.50662827463100050242     /* sqrt(2 pi) */
#define LOG_SQRT_2PI 0.91893853320467274178 /* log sqrt(2 pi) */

double pt_sf_lgamma(double x) {
  int sign; /* lgamma_r: plain lgamma writes the global signgam, a race between threads */
  return lgamma_r(x, &sign);
}

static float sf_lgammaf(float x) {
  int sign;
  return lgammaf_r(x, &sign);
}

/* psi(x) for x >= 10 from the Stirling series: log x - 1/(2x) - sum_k B_2k / (2k x^2k) (the
 * ninth term is below 5e-17 at 10) */
static double digamma_large(double x) {
  if (x >= 1e17) return log(x) - 0.5 / x;
  static const double c[] = {1.0 / 12, -1.0 / 120, 1.0 / 252, -1.0 / 240, 1.0 / 132,
                             -691.0 / 32760, 1.0 / 12, -3617.0 / 8160};
  double z = 1.0 / (x * x), p = 0;
  for (int k = 7; k >= 0; k--) p = p * z + c[k];
  return log(x) - 0.5 / x - z * p;
}

/* cot(pi x) for a non-integer x: from r = x - nearest integer (exact; cot has period 1), so
 * that pi r keeps its digits near the poles, and as tan(pi (1/2 - |r|)) for |r| >= 1/4 (exact
 * too), so that it is 0 at the half-integers (1 / tan(pi / 2) is 6e-17, which polygamma's
 * reflection multiplies by up to n! pi^(n+1)) */
static double cot_pi(double x) {
  double r = x - nearbyint(x);
  if (r >= 0.25) return tan(M_PI * (0.5 - r));
  if (r <= -0.25) return -tan(M_PI * (0.5 + r));
  return 1.0 / tan(M_PI * r);
}

double pt_sf_digamma(double x) {
  if (x != x || x == INFINITY) return x;
  if (x == 0) return copysign(INFINITY, -x); /* -inf at +0, +inf at -0, as C's lgamma and PyTorch */
  if (x < 0) {
    if (x == nearbyint(x)) return NAN; /* a pole (or -inf) */
    return pt_sf_digamma(1.0 - x) - M_PI * cot_pi(x); /* the reflection formula */
  }
  double acc = 0;
  while (x < 10) { /* psi(x) = psi(x + 1) - 1/x */
    acc -= 1.0 / x;
    x += 1.0;
  }
  return acc + digamma_large(x);
}

/* B_2j / (2j)!, j = 1..13: the Euler-Maclaurin corrections */
static const double em_coef[13] = {
    1.0 / 6 / 2,
    -1.0 / 30 / 24,
    1.0 / 42 / 720,
    -1.0 / 30 / 40320,
    5.0 / 66 / 3628800,
    -691.0 / 2730 / 479001600,
    7.0 / 6 / 87178291200.0,
    -3617.0 / 510 / 20922789888000.0,
    43867.0 / 798 / 6402373705728000.0,
    -174611.0 / 330 / 2432902008176640000.0,
    854513.0 / 138 / 1.1240007277776077e21,
    -236364091.0 / 2730 / 6.2044840173323941e23,
    8553103.0 / 6 / 4.0329146112660565e26,
};

/* f^s zeta(s, q) for s > 1, q > 0 (f scales every term, so that n! zeta(n+1, q) can be had
 * where n! or zeta alone would overflow or underflow): the first terms summed directly up to
 * q + N >= max(12, 2.5 s), then the integral of the rest, half its first term and the
 * Euler-Maclaurin corrections, which converge fast that far out. */
static double hurwitz_zeta(double s, double q, double f) {
  double w = fmax(12.0, 2.5 * s), sum = 0, a = q;
  int64_t k = 0;
  while (a < w) {
    double t = pow(f / a, s);
    sum += t;
    a = q + (double)++k;
    /* the rest is about t a / (s - 1): done when it no longer shows */
    if (t * a <= 1e-17 * (s - 1) * sum) return sum;
  }
  double pa = pow(f / a, s); /* a^-s */
  sum += a * pa / (s - 1) + 0.5 * pa;
  double fac = s * pa / a; /* s (s+1) ... (s+2j-2) a^(-s-2j+1) */
  for (int j = 0; j < 13; j++) {
    double t = em_coef[j] * fac;
    sum += t;
    if (fabs(t) <= 1e-17 * fabs(sum)) break;
    fac *= (s + 2 * j + 1) * (s + 2 * j + 2) / (a * a);
  }
  return sum;
}

/* psi^(n)(x) for x > 0, n >= 1: (-1)^(n+1) n! zeta(n + 1, x) */
static double polygamma_pos(int64_t n, double x) {
  double s = (double)n + 1, sign = (n & 1) ? 1.0 : -1.0;
  if (n <= 170) {
    double fact = 1;
    for (int64_t i = 2; i <= n; i++) fact *= (double)i;
    double z = hurwitz_zeta(s, x, 1.0), r = fact * z;
    if (isfinite(r) && z >= DBL_MIN && fabs(r) >= DBL_MIN) return sign * r;
  }
  /* n! folded into the terms: (n!^(1/s) / (x + k))^s */
  return sign * hurwitz_zeta(s, x, exp(pt_sf_lgamma(s) / s));
}

/* Beyond this n, polygamma of a negative x is nan (its reflection polynomial would take O(n^2)
 * to make; the values overflow long before, from n ~ 170). */
#define POLYGAMMA_REFLECT_MAX 1000

/* d^n/dx^n cot(pi x) = pi^n P_n(cot(pi x)) with P_0(c) = c and P_{k+1}(c) = -(1 + c^2) P_k'(c):
 * the n + 2 coefficients of P_n, lowest first (malloc'd; NULL when out of memory). */
static double *cot_derivative_coefs(int64_t n) {
  double *c = calloc((size_t)n + 3, sizeof *c), *d = calloc((size_t)n + 3, sizeof *d);
  if (!c || !d) {
    free(c);
    free(d);
    return NULL;
  }
  c[1] = 1;
  for (int64_t k = 0; k < n; k++) { /* P_k has degree k + 1 */
    for (int64_t i = 0; i <= k; i++) d[i] = (double)(i + 1) * c[i + 1];
    for (int64_t i = 0; i <= k + 2; i++)
      c[i] = -((i <= k ? d[i] : 0) + (i >= 2 ? d[i - 2] : 0));
  }
  free(d);
  return c;
}

/* psi^(n)(x); coef: cot_derivative_coefs(n), needed for x < 0 (NULL there: nan) */
static double polygamma_impl(int64_t n, double x, const double *coef) {
  if (n == 0) return pt_sf_digamma(x);
  if (x != x) return x;
  double sign = (n & 1) ? 1.0 : -1.0;
  if (x == INFINITY) return sign * 0.0;
  /* a pole (-inf counts as one, as in lgamma): PyTorch's Hurwitz zeta gives inf there */
  if (x <= 0 && x == floor(x)) return sign * INFINITY;
  if (x > 0) return polygamma_pos(n, x);
  if (!coef) return NAN;
  /* reflection: psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) P_n(cot(pi x)) */
  double c = cot_pi(x), p = 0;
  for (int64_t i = n + 1; i >= 0; i--) p = p * c + coef[i];
  return -sign * polygamma_pos(n, 1.0 - x) - pow(M_PI, (double)n + 1) * p;
}

double pt_sf_polygamma(int64_t n, double x) {
  if (n < 0) return NAN;
  double *coef = n > 0 && x < 0 && n <= POLYGAMMA_REFLECT_MAX ? cot_derivative_coefs(n) : NULL;
  double r = polygamma_impl(n, x, coef);
  free(coef);
  return r;
}

/* I0 (nu 0) or I1 (nu 1) for 0 <= x <= 30: the power series (its terms are all positive) */
static double bessel_series(double x, int nu) {
  double q = 0.25 * x * x, t = nu ? 0.5 * x : 1.0, s = t;
  for (int k = 1; k < 200; k++) {
    t *= q / ((double)k * (double)(k + nu));
    s += t;
    if (t <= 1e-17 * s) break;
  }
  return s;
}

/* Hankel's expansion for x > 30: I_nu(x) = e^x / sqrt(2 pi x) s_nu with
 * s_nu = sum_k (-1)^k prod_{j<=k} (4 nu^2 - (2j-1)^2) / (k! (8x)^k); d = s0 - s1, summed term by
 * term (their first terms cancel) for the derivatives of i0e and i1e. */
typedef struct hankel {
  double s0, s1, d;
} hankel;

static hankel bessel_hankel(double x) {
  double t0 = 1, t1 = 1, e = 8 * x;
  hankel h = {1, 1, 0};
  for (int k = 1; k < 100; k++) {
    double m = (2.0 * k - 1) * (2.0 * k - 1);
    t0 *= m / (k * e);
    t1 *= (m - 4.0) / (k * e);
    h.s0 += t0;
    h.s1 += t1;
    h.d += t0 - t1;
    if (fabs(t0) <= 1e-17 * h.s0 && fabs(t1) <= 1e-17 * h.s1 && fabs(t0 - t1) <= 1e-17 * fabs(h.d))
      break;
  }
  return h;
}

/* e^a s / sqrt(2 pi a) without overflowing before the result does */
static double unscale(double a, double s) {
  double e = exp(0.5 * a);
  return e * (e * s / sqrt(2 * M_PI * a));
}

#define BESSEL_SERIES_MAX 30.0

double pt_sf_i0(double x) {
  double a = fabs(x);
  if (x != x || a == INFINITY) return a; /* I0(+-inf) = inf (PyTorch 1.13: nan) */
  if (a <= BESSEL_SERIES_MAX) return bessel_series(a, 0);
  return unscale(a, bessel_hankel(a).s0);
}

double pt_sf_i0e(double x) {
  double a = fabs(x);
  if (x != x) return x;
  if (a == INFINITY) return 0;
  if (a <= BESSEL_SERIES_MAX) return exp(-a) * bessel_series(a, 0);
  return bessel_hankel(a).s0 / sqrt(2 * M_PI * a);
}

double pt_sf_i1(double x) {
  double a = fabs(x);
  if (x != x || a == INFINITY) return x; /* I1(+-inf) = +-inf (PyTorch 1.13: nan) */
  double r = a <= BESSEL_SERIES_MAX ? bessel_series(a, 1) : unscale(a, bessel_hankel(a).s1);
  return x < 0 ? -r : r; /* +0 at -0, as PyTorch */
}

double pt_sf_i1e(double x) {
  double a = fabs(x);
  if (x != x) return x;
  if (a == INFINITY) return copysign(0.0, x);
  double r = a <= BESSEL_SERIES_MAX ? exp(-a) * bessel_series(a, 1)
                                    : bessel_hankel(a).s1 / sqrt(2 * M_PI * a);
  return x < 0 ? -r : r;
}

/* i1'(x) = i0(x) - i1(x) / x (0.5 at 0), an even function */
static double d_i1(double x) {
  double a = fabs(x);
  if (x != x || a == INFINITY) return a;
  if (a == 0) return 0.5;
  if (a <= BESSEL_SERIES_MAX) return bessel_series(a, 0) - bessel_series(a, 1) / a;
  hankel h = bessel_hankel(a);
  return unscale(a, h.s0 - h.s1 / a);
}

/* i1e'(x) = i0e(x) - i1e(x) (sgn x + 1/x) (0.5 at 0), even */
static double d_i1e(double x) {
  double a = fabs(x);
  if (x != x) return x;
  if (a == INFINITY) return 0;
  if (a == 0) return 0.5;
  if (a <= BESSEL_SERIES_MAX) {
    double s1 = bessel_series(a, 1);
    return exp(-a) * (bessel_series(a, 0) - s1 - s1 / a);
  }
  hankel h = bessel_hankel(a);
  return (h.d - h.s1 / a) / sqrt(2 * M_PI * a);
}

/* i0e'(x) = i1e(x) - sgn(x) i0e(x) = sgn(x) (i1e(|x|) - i0e(|x|)) */
static double d_i0e(double x) {
  double a = fabs(x), sg = (double)((x > 0) - (x < 0));
  if (x != x) return x;
  if (a == INFINITY) return copysign(0.0, -x);
  if (a == 0) return 0; /* +0, as PyTorch's i1e(0) - 0 * i0e(0) */
  if (a <= BESSEL_SERIES_MAX) return sg * exp(-a) * (bessel_series(a, 1) - bessel_series(a, 0));
  return -sg * bessel_hankel(a).d / sqrt(2 * M_PI * a);
}

double pt_sf_ndtr(double x) { return 0.5 * erfc(-x * M_SQRT1_2); }

/* sum_k (-1)^k (2k-1)!! / x^2k for x <= -10: Phi(x) = phi(x) / (-x) times this (asymptotic: its
 * terms shrink until k ~ x^2 / 2; 21 of them reach 1e-17 at -10) */
static double mills_series(double x) {
  double z = 1.0 / (x * x), t = 1, s = 1;
  for (int k = 1; k < 48; k++) {
    t *= -(2.0 * k - 1) * z;
    s += t;
    if (fabs(t) <= 1e-17 * s) break;
  }
  return s;
}

#define LOG_NDTR_ASYMPTOTIC (-20.0)

double pt_sf_log_ndtr(double x) {
  if (x != x) return x;
  if (x > 0) return log1p(-0.5 * erfc(x * M_SQRT1_2));
  if (x > LOG_NDTR_ASYMPTOTIC) return log(0.5 * erfc(-x * M_SQRT1_2));
  /* erfc underflows from -37.5 on (and loses digits as a subnormal before): the asymptotic form */
  return -0.5 * x * x - log(-x) - LOG_SQRT_2PI + log(mills_series(x));
}

/* ndtri(q) for 0 < q <= 0.5 (x <= 0) */
static double ndtri_lower(double q) {
  /* start: Abramowitz-Stegun 26.2.23 (error below 4.5e-4) */
  double t = sqrt(-2.0 * log(q));
  double x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) /
                       (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  if (q >= 1e-300) {
    /* Halley steps on ndtr(x) = q (cubic: two of them from the start): the residual from
     * erf(x / sqrt 2) and q - 0.5 (exact) near the middle, where x is near 0, else from erfc,
     * accurate to its last digits however small q is (until it is subnormal) */
    double y = q - 0.5;
    for (int i = 0; i < 8; i++) {
      double e = q > 0.25 ? 0.5 * erf(x * M_SQRT1_2) - y : 0.5 * erfc(-x * M_SQRT1_2) - q;
      double u = e * SQRT_2PI * exp(0.5 * x * x), step = u / (1.0 + 0.5 * x * u);
      x -= step;
      if (fabs(step) <= 1e-7 * fabs(x)) break; /* the error left is about step^3 */
    }
    return x;
  }
  /* Newton on log ndtr(x) = log q */
  double lq = log(q);
  for (int i = 0; i < 12; i++) {
    double ln = pt_sf_log_ndtr(x), step = (ln - lq) * mills_series(x) / -x; /* phi / Phi = -x / mills */
    x -= step;
    if (fabs(step) <= 1e-16 * fabs(x)) break;
  }
  return x;
}

double pt_sf_ndtri(double p) {
  if (p != p || p < 0 || p > 1) return NAN;
  if (p == 0) return -INFINITY;
  if (p == 1) return INFINITY;
  if (p == 0.5) return 0;
  return p < 0.5 ? ndtri_lower(p) : -ndtri_lower(1.0 - p); /* 1 - p is exact there */
}

double pt_sf_entr(double x) {
  if (x != x) return x;
  if (x > 0) return -x * log(x);
  return x == 0 ? 0.0 : -INFINITY;
}

double pt_sf_xlog1py(double x, double y) {
  if (y != y) return y;
  if (x == 0) return 0;
  return x * log1p(y);
}

static double d_ndtr(double x) { return exp(-0.5 * x * x) / SQRT_2PI; }

/* phi(x) / Phi(x): from the asymptotic series below -10 (its smallest term is e^-50 there),
 * where the difference of exponents -x^2/2 - log_ndtr(x) would lose digits to x^2's rounding */
static double d_log_ndtr(double x) {
  if (x != x) return x;
  if (x < -10) return -x / mills_series(x);
  return exp(-0.5 * x * x - pt_sf_log_ndtr(x)) / SQRT_2PI;
}

static double d_ndtri(double p) {
  double y = pt_sf_ndtri(p);
  return SQRT_2PI * exp(0.5 * y * y);
}

static double mvlgamma(double x, int64_t p) {
  double s = 0.25 * (double)p * (double)(p - 1) * log(M_PI);
  for (int64_t i = 0; i < p; i++) s += pt_sf_lgamma(x - 0.5 * (double)i);
  return s;
}

static double d_mvlgamma(double x, int64_t p) {
  double s = 0;
  for (int64_t i = 0; i < p; i++) s += pt_sf_digamma(x - 0.5 * (double)i);
  return s;
}

/* ---------------------------------------------------------------------------------------------
 * special functions on tensors
 * ------------------------------------------------------------------------------------------- */

/* internal ops: the derivatives that are not another public op */
enum {
  SP_D_I0E = PT_SP_COUNT_PUBLIC,
  SP_D_I1,
  SP_D_I1E,
  SP_D_NDTR,
  SP_D_LOG_NDTR,
  SP_D_NDTRI,
  SP_D_ENTR,
  SP_D_MVLGAMMA,
  SP_COUNT
};

typedef struct sp_param {
  int64_t k;          /* polygamma's n, mvlgamma's p */
  const double *coef; /* polygamma: cot_derivative_coefs(n) or NULL */
} sp_param;

typedef double (*sp_fn)(double x, const sp_param *p);

static double f_lgamma(double x, const sp_param *p) { (void)p; return pt_sf_lgamma(x); }
static double f_digamma(double x, const sp_param *p) { (void)p; return pt_sf_digamma(x); }
static double f_polygamma(double x, const sp_param *p) { return polygamma_impl(p->k, x, p->coef); }
static double f_i0(double x, const sp_param *p) { (void)p; return pt_sf_i0(x); }
static double f_i0e(double x, const sp_param *p) { (void)p; return pt_sf_i0e(x); }
static double f_i1(double x, const sp_param *p) { (void)p; return pt_sf_i1(x); }
static double f_i1e(double x, const sp_param *p) { (void)p; return pt_sf_i1e(x); }
static double f_ndtr(double x, const sp_param *p) { (void)p; return pt_sf_ndtr(x); }
static double f_log_ndtr(double x, const sp_param *p) { (void)p; return pt_sf_log_ndtr(x); }
static double f_ndtri(double x, const sp_param *p) { (void)p; return pt_sf_ndtri(x); }
static double f_entr(double x, const sp_param *p) { (void)p; return pt_sf_entr(x); }
static double f_mvlgamma(double x, const sp_param *p) { return mvlgamma(x, p->k); }
static double f_d_i0e(double x, const sp_param *p) { (void)p; return d_i0e(x); }
static double f_d_i1(double x, const sp_param *p) { (void)p; return d_i1(x); }
static double f_d_i1e(double x, const sp_param *p) { (void)p; return d_i1e(x); }
static double f_d_ndtr(double x, const sp_param *p) { (void)p; return d_ndtr(x); }
static double f_d_log_ndtr(double x, const sp_param *p) { (void)p; return d_log_ndtr(x); }
static double f_d_ndtri(double x, const sp_param *p) { (void)p; return d_ndtri(x); }
static double f_d_entr(double x, const sp_param *p) { (void)p; return -(1.0 + log(x)); }
static double f_d_mvlgamma(double x, const sp_param *p) { return d_mvlgamma(x, p->k); }

static const sp_fn sp_fns[SP_COUNT] = {
    [PT_SP_LGAMMA] = f_lgamma,     [PT_SP_DIGAMMA] = f_digamma,   [PT_SP_POLYGAMMA] = f_polygamma,
    [PT_SP_I0] = f_i0,             [PT_SP_I0E] = f_i0e,           [PT_SP_I1] = f_i1,
    [PT_SP_I1E] = f_i1e,           [PT_SP_NDTR] = f_ndtr,         [PT_SP_LOG_NDTR] = f_log_ndtr,
    [PT_SP_NDTRI] = f_ndtri,       [PT_SP_ENTR] = f_entr,         [PT_SP_MVLGAMMA] = f_mvlgamma,
    [SP_D_I0E] = f_d_i0e,          [SP_D_I1] = f_d_i1,            [SP_D_I1E] = f_d_i1e,
    [SP_D_NDTR] = f_d_ndtr,        [SP_D_LOG_NDTR] = f_d_log_ndtr, [SP_D_NDTRI] = f_d_ndtri,
    [SP_D_ENTR] = f_d_entr,        [SP_D_MVLGAMMA] = f_d_mvlgamma,
};

static const char *const sp_names[PT_SP_COUNT_PUBLIC] = {
    [PT_SP_LGAMMA] = "lgamma", [PT_SP_DIGAMMA] = "digamma",   [PT_SP_POLYGAMMA] = "polygamma",
    [PT_SP_I0] = "i0",         [PT_SP_I0E] = "i0e",           [PT_SP_I1] = "i1",
    [PT_SP_I1E] = "i1e",       [PT_SP_NDTR] = "ndtr",         [PT_SP_LOG_NDTR] = "log_ndtr",
    [PT_SP_NDTRI] = "ndtri",   [PT_SP_ENTR] = "entr",         [PT_SP_MVLGAMMA] = "mvlgamma",
};

static const char *const sp_nodes[PT_SP_COUNT_PUBLIC] = {
    [PT_SP_LGAMMA] = "LgammaBackward",          [PT_SP_DIGAMMA] = "DigammaBackward",
    [PT_SP_POLYGAMMA] = "PolygammaBackward",    [PT_SP_I0] = "I0Backward",
    [PT_SP_I0E] = "SpecialI0EBackward",         [PT_SP_I1] = "SpecialI1Backward",
    [PT_SP_I1E] = "SpecialI1EBackward",         [PT_SP_NDTR] = "SpecialNdtrBackward",
    [PT_SP_LOG_NDTR] = "SpecialLogNdtrBackward", [PT_SP_NDTRI] = "SpecialNdtriBackward",
    [PT_SP_ENTR] = "SpecialEntrBackward",       [PT_SP_MVLGAMMA] = "MvlgammaBackward",
};

const char *pt_special_name(pt_special_op op) {
  return (unsigned)op < PT_SP_COUNT_PUBLIC ? sp_names[op] : "?";
}

/* The derivative of op with parameter k, as an op and its parameter */
static int sp_derivative(int op, int64_t k, int64_t *dk) {
  *dk = k;
  switch (op) {
  case PT_SP_LGAMMA: return PT_SP_DIGAMMA;
  case PT_SP_DIGAMMA: *dk = 1; return PT_SP_POLYGAMMA;
  case PT_SP_POLYGAMMA: *dk = k < INT64_MAX ? k + 1 : k; return PT_SP_POLYGAMMA;
  case PT_SP_I0: return PT_SP_I1;
  case PT_SP_I0E: return SP_D_I0E;
  case PT_SP_I1: return SP_D_I1;
  case PT_SP_I1E: return SP_D_I1E;
  case PT_SP_NDTR: return SP_D_NDTR;
  case PT_SP_LOG_NDTR: return SP_D_LOG_NDTR;
  case PT_SP_NDTRI: return SP_D_NDTRI;
  case PT_SP_ENTR: return SP_D_ENTR;
  default: return SP_D_MVLGAMMA;
  }
}

/* Special functions cost 20-500 ns an element: split from a few thousand on. */
#define SP_GRAIN 2048

typedef struct sp_job {
  sp_fn f;
  const sp_param *p;
  const void *x;
  void *o;
  bool f32, lgammaf;
} sp_job;

static void sp_chunk(void *arg, int64_t b, int64_t e, int tid) {
  (void)tid;
  const sp_job *j = arg;
  if (j->f32) {
    const float *x = j->x;
    float *o = j->o;
    if (j->lgammaf) {
      for (int64_t i = b; i < e; i++) o[i] = sf_lgammaf(x[i]);
    } else {
      for (int64_t i = b; i < e; i++) o[i] = (float)j->f((double)x[i], j->p);
    }
  } else {
    const double *x = j->x;
    double *o = j->o;
    for (int64_t i = b; i < e; i++) o[i] = j->f(x[i], j->p);
  }
}

static pt_status check_param(pt_ctx *ctx, const char *fname, int op, const pt_tensor *x, int64_t k) {
  if (op == PT_SP_POLYGAMMA && k < 0)
    return pt_fail(ctx, PT_EARG, "%s: n must be a non-negative integer, got %lld", fname, (long long)k);
  if (op == PT_SP_MVLGAMMA) {
    if (k < 1)
      return pt_fail(ctx, PT_EARG, "%s: p has to be greater than or equal to 1, got %lld", fname,
                     (long long)k);
    if (x->dtype == PT_BOOL)
      return pt_fail(ctx, PT_EARG, "%s: the input tensor may not be a bool tensor", fname);
  }
  return PT_OK;
}

/* out = op(x) without autograd: a new contiguous tensor of x's floating dtype (float32 for
 * integers) */
static pt_status special_forward(pt_ctx *ctx, int op, pt_tensor *x, int64_t k, pt_tensor **out) {
  pt_dtype dt = pt_dtype_is_floating(x->dtype) ? x->dtype : PT_FLOAT32;
  sp_param p = {k, NULL};
  double *coef = NULL;
  if (op == PT_SP_POLYGAMMA && k > 0 && k <= POLYGAMMA_REFLECT_MAX) {
    if (!(coef = cot_derivative_coefs(k))) return pt_fail(ctx, PT_ENOMEM, "polygamma: out of memory");
    p.coef = coef;
  }
  pt_tensor *xc = NULL, *xx = NULL, *o = NULL;
  pt_status st = pt_tensor_to_dtype_raw(ctx, x, dt, &xc);
  if (!st) st = pt_tensor_contiguous_raw(ctx, xc, &xx);
  if (!st) st = pt_tensor_empty(ctx, dt, x->ndim, x->shape, &o);
  if (!st) {
    int64_t n = pt_tensor_numel(o);
    sp_job j = {sp_fns[op], &p, pt_tensor_data(xx), pt_tensor_data(o), dt == PT_FLOAT32,
                dt == PT_FLOAT32 && op == PT_SP_LGAMMA};
    if (n >= 2 * SP_GRAIN) pt_parallel_for(ctx, n, SP_GRAIN, sp_chunk, &j);
    else if (n > 0) sp_chunk(&j, 0, n, 0);
    *out = o;
  }
  pt_tensor_release(xc);
  pt_tensor_release(xx);
  free(coef);
  return st;
}

/* ints[0]: op, ints[1]: k; saved[0]: the input */
static pt_status special_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  if (!node->needs_grad[0]) return PT_OK;
  pt_tensor *x = node->saved[0], *d = NULL, *r = NULL;
  int64_t dk;
  int dop = sp_derivative((int)node->ints[0], node->ints[1], &dk);
  bool was = ctx->grad_enabled;
  ctx->grad_enabled = false;
  pt_status st = special_forward(ctx, dop, x, dk, &d);
  if (!st) st = pt_mul(ctx, g, d, &r);
  ctx->grad_enabled = was;
  pt_tensor_release(d);
  if (st) return st;
  st = pt_tensor_to_dtype_raw(ctx, r, node->inputs[0]->dtype, &gin[0]);
  pt_tensor_release(r);
  return st;
}

pt_status pt_special(pt_ctx *ctx, pt_special_op op, pt_tensor *x, int64_t k, pt_tensor **out) {
  if ((unsigned)op >= PT_SP_COUNT_PUBLIC) return pt_fail(ctx, PT_EARG, "special: invalid op %d", (int)op);
  pt_status st = check_param(ctx, sp_names[op], op, x, k);
  pt_tensor *r = NULL;
  if (!st) st = special_forward(ctx, op, x, k, &r);
  if (st) return st;
  pt_node *node = NULL;
  if (ctx->grad_enabled && x->requires_grad &&
      (st = pt_autograd_record(ctx, r, sp_nodes[op], special_backward, 1, &x, &node))) {
    pt_tensor_release(r);
    return st;
  }
  if (node) {
    node->ints[0] = op;
    node->ints[1] = k;
    node->n_ints = 2;
    pt_node_save(node, 0, pt_tensor_retain(x));
  }
  *out = r;
  return PT_OK;
}

static pt_status cast_error(pt_ctx *ctx, const char *fname, pt_dtype from, pt_dtype to) {
  return pt_fail(ctx, PT_EARG, "%s: result type %s can't be cast to the desired output type %s",
                 fname, pt_dtype_name(from), pt_dtype_name(to));
}

pt_status pt_special_(pt_ctx *ctx, pt_special_op op, pt_tensor *self, int64_t k) {
  if ((unsigned)op >= PT_SP_COUNT_PUBLIC) return pt_fail(ctx, PT_EARG, "special: invalid op %d", (int)op);
  char name[32];
  snprintf(name, sizeof name, "%s_", sp_names[op]);
  pt_status st = pt_inplace_check(ctx, name, self);
  if (st) return st;
  if (!pt_dtype_is_floating(self->dtype)) return cast_error(ctx, name, PT_FLOAT32, self->dtype);
  if ((st = check_param(ctx, name, op, self, k))) return st;
  /* with a graph, the op reads a copy that keeps self's old history (the copy into self would
   * change what it saved) */
  pt_tensor *src = NULL, *r = NULL;
  if (ctx->grad_enabled && self->requires_grad) st = pt_clone(ctx, self, &src);
  else src = pt_tensor_retain(self);
  if (!st) st = pt_special(ctx, op, src, k, &r);
  if (!st) st = pt_copy_(ctx, self, r);
  pt_tensor_release(src);
  pt_tensor_release(r);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * binary engine: xlog1py and the bitwise ops
 * ------------------------------------------------------------------------------------------- */

enum {
  B_AND = PT_BIT_AND,
  B_OR = PT_BIT_OR,
  B_XOR = PT_BIT_XOR,
  B_LSHIFT = PT_BIT_LSHIFT,
  B_RSHIFT = PT_BIT_RSHIFT,
  B_LXOR = PT_BIT_LOGICAL_XOR,
  B_LAND = PT_BIT_LOGICAL_AND,
  B_LOR = PT_BIT_LOGICAL_OR,
  B_XLOG1PY = PT_BIT_COUNT_PUBLIC,
  B_XLOG1PY_DY,   /* x / (1 + y) */
  B_XLOG1PY_ZERO, /* bool: x == 0 && y <= -1 (the x gradient is 0 there) */
  B_COUNT
};

static const char *const bit_names[PT_BIT_COUNT_PUBLIC] = {
    [PT_BIT_AND] = "bitwise_and",         [PT_BIT_OR] = "bitwise_or",
    [PT_BIT_XOR] = "bitwise_xor",         [PT_BIT_LSHIFT] = "bitwise_left_shift",
    [PT_BIT_RSHIFT] = "bitwise_right_shift", [PT_BIT_LOGICAL_XOR] = "logical_xor",
    [PT_BIT_LOGICAL_AND] = "logical_and", [PT_BIT_LOGICAL_OR] = "logical_or",
};

const char *pt_bitop_name(pt_bitop op) {
  return (unsigned)op < PT_BIT_COUNT_PUBLIC ? bit_names[op] : "?";
}

#define BK PT_EW_BK /* the element-wise engine's kernels (ew_impl.h) */

/* Shifts as PyTorch >= 2.1 defines them: a negative amount or one of the width or more gives 0
 * (left) or the sign fill (right); the left shift works on the unsigned bits (no overflow). */
#define INT_KERNELS(S, T, UT, BITS)                                                             \
  BK(and_##S, T, T, x &y)                                                                       \
  BK(or_##S, T, T, x | y)                                                                       \
  BK(xor_##S, T, T, x ^ y)                                                                      \
  BK(lshift_##S, T, T, (y < 0 || y >= (BITS)) ? (T)0 : (T)((UT)x << y))                         \
  BK(rshift_##S, T, T, (y < 0 || y >= (BITS)) ? (T)(x >> ((BITS)-1)) : (T)(x >> y))
INT_KERNELS(i64, int64_t, uint64_t, 64)
INT_KERNELS(i32, int32_t, uint32_t, 32)
BK(and_u8, uint8_t, uint8_t, x &y)
BK(or_u8, uint8_t, uint8_t, x | y)
BK(xor_u8, uint8_t, uint8_t, x ^ y)
BK(lshift_u8, uint8_t, uint8_t, y >= 8 ? 0 : x << y)
BK(rshift_u8, uint8_t, uint8_t, y >= 8 ? 0 : x >> y)
/* logical ops on operands already converted to bool (0 / 1) */
BK(lxor_b, uint8_t, uint8_t, x ^ y)
BK(land_b, uint8_t, uint8_t, x &y)
BK(lor_b, uint8_t, uint8_t, x | y)
BK(xlog1py_f, float, float, pt_sf_xlog1py(x, y))
BK(xlog1py_d, double, double, pt_sf_xlog1py(x, y))
BK(xlog1py_dy_f, float, float, x / (1.0f + y))
BK(xlog1py_dy_d, double, double, x / (1.0 + y))
BK(xlog1py_zero_f, float, uint8_t, x == 0 && y <= -1)
BK(xlog1py_zero_d, double, uint8_t, x == 0 && y <= -1)

#define ROW_INT(name)                                                                           \
  {[PT_INT64] = name##_i64, [PT_INT32] = name##_i32, [PT_UINT8] = name##_u8}
#define ROW_FLOAT(name) {[PT_FLOAT32] = name##_f, [PT_FLOAT64] = name##_d}

static const pt_ew_bin_kernel bin_kernels[B_COUNT][PT_DTYPE_COUNT] = {
    [B_AND] = {[PT_INT64] = and_i64, [PT_INT32] = and_i32, [PT_UINT8] = and_u8, [PT_BOOL] = and_u8},
    [B_OR] = {[PT_INT64] = or_i64, [PT_INT32] = or_i32, [PT_UINT8] = or_u8, [PT_BOOL] = or_u8},
    [B_XOR] = {[PT_INT64] = xor_i64, [PT_INT32] = xor_i32, [PT_UINT8] = xor_u8, [PT_BOOL] = xor_u8},
    [B_LSHIFT] = ROW_INT(lshift),
    [B_RSHIFT] = ROW_INT(rshift),
    [B_LXOR] = {[PT_BOOL] = lxor_b},
    [B_LAND] = {[PT_BOOL] = land_b},
    [B_LOR] = {[PT_BOOL] = lor_b},
    [B_XLOG1PY] = ROW_FLOAT(xlog1py),
    [B_XLOG1PY_DY] = ROW_FLOAT(xlog1py_dy),
    [B_XLOG1PY_ZERO] = ROW_FLOAT(xlog1py_zero),
};

typedef pt_ew_opnd sopnd;
static inline sopnd OT(pt_tensor *t) { return pt_ew_opnd_tensor(t); }
static inline sopnd ON(pt_number n) { return pt_ew_opnd_number(n); }

static bool is_logical(int op) { return op == B_LXOR || op == B_LAND || op == B_LOR; }
static bool is_shift(int op) { return op == B_LSHIFT || op == B_RSHIFT; }

/* the compute and output dtypes of op(x, y) (PT_EARG for a dtype the op does not take) */
static pt_status bin_dtypes(pt_ctx *ctx, const char *fname, int op, sopnd x, sopnd y,
                            pt_dtype *cdt, pt_dtype *odt) {
  if (is_logical(op)) {
    *cdt = *odt = PT_BOOL;
    return PT_OK;
  }
  pt_dtype res = pt_ew_result_type(x, y);
  if (op >= B_XLOG1PY) {
    *cdt = pt_dtype_is_floating(res) ? res : PT_FLOAT32;
    *odt = op == B_XLOG1PY_ZERO ? PT_BOOL : *cdt;
    return PT_OK;
  }
  if (pt_dtype_is_floating(res) || (is_shift(op) && res == PT_BOOL))
    return pt_fail(ctx, PT_EARG, "%s: not supported for %s tensors", fname, pt_dtype_name(res));
  *cdt = *odt = res;
  return PT_OK;
}

/* t in dtype dt (a new reference; t itself when it already is): a narrower integer dtype takes
 * the low bits (an int64 0-d tensor beside an int32 tensor wraps as in PyTorch; the generic
 * conversion goes through double) */
static pt_status to_dtype(pt_ctx *ctx, pt_tensor *t, pt_dtype dt, pt_tensor **out) {
  bool narrow = !pt_dtype_is_floating(t->dtype) && !pt_dtype_is_floating(dt) && dt != PT_BOOL &&
                pt_dtype_size(dt) < pt_dtype_size(t->dtype);
  if (!narrow) return pt_tensor_to_dtype_raw(ctx, t, dt, out);
  pt_tensor *c = NULL, *r = NULL;
  pt_status st = pt_tensor_contiguous_raw(ctx, t, &c);
  if (!st) st = pt_tensor_empty(ctx, dt, t->ndim, t->shape, &r);
  if (!st) {
    int64_t n = pt_tensor_numel(r);
    const char *s = pt_tensor_data(c);
    size_t es = pt_dtype_size(t->dtype);
    pt_number v = pt_number_int(0);
    for (int64_t i = 0; i < n; i++) {
      v.i = pt_ew_int_at(s + i * (int64_t)es, t->dtype);
      pt_ew_number_to_buf((char *)pt_tensor_data(r) + i * (int64_t)pt_dtype_size(dt), dt, v);
    }
    *out = r;
  }
  pt_tensor_release(c);
  return st;
}

/* out = op(x, y) without autograd */
static pt_status binary_forward(pt_ctx *ctx, const char *fname, int op, sopnd x, sopnd y,
                                pt_tensor **out) {
  pt_dtype cdt = PT_BOOL, odt = PT_BOOL; /* set by bin_dtypes when it succeeds */
  pt_status st = bin_dtypes(ctx, fname, op, x, y, &cdt, &odt);
  if (st) return st;
  int nd;
  int64_t shape[PT_MAX_DIMS];
  if (x.t && y.t) {
    if ((st = pt_broadcast_shapes(ctx, fname, x.t->ndim, x.t->shape, y.t->ndim, y.t->shape, &nd,
                                  shape)))
      return st;
  } else {
    const pt_tensor *t = x.t ? x.t : y.t;
    nd = t->ndim;
    memcpy(shape, t->shape, (size_t)nd * sizeof(int64_t));
  }
  _Alignas(16) unsigned char xb[16], yb[16];
  pt_tensor *xc = NULL, *yc = NULL, *o = NULL;
  if (x.t) st = to_dtype(ctx, x.t, cdt, &xc);
  else pt_ew_number_to_buf(xb, cdt, pt_ew_opnd_value(x));
  if (!st && y.t) st = to_dtype(ctx, y.t, cdt, &yc);
  else if (!y.t) pt_ew_number_to_buf(yb, cdt, pt_ew_opnd_value(y));
  if (!st) st = pt_tensor_empty(ctx, odt, nd, shape, &o);
  if (!st) {
    pt_ew_run_binary(ctx, bin_kernels[op][cdt], o, xc, xb, yc, yb);
    *out = o;
  }
  pt_tensor_release(xc);
  pt_tensor_release(yc);
  return st;
}

/* --- xlog1py with autograd --- */

/* layout in ints[0]: 0 both tensors, 1 tensor op number, 2 number op tensor; the number in
 * scalars[0]; saved: the tensor operands */
static pt_status xlog1py_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  int layout = (int)node->ints[0];
  sopnd num = ON(pt_number_float(node->scalars[0]));
  sopnd x = layout == 2 ? num : OT(node->saved[0]);
  sopnd y = layout == 1 ? num : OT(node->saved[layout == 0 ? 1 : 0]);
  int ix = layout == 2 ? -1 : 0, iy = layout == 0 ? 1 : (layout == 2 ? 0 : -1);
  bool was = ctx->grad_enabled;
  ctx->grad_enabled = false;
  pt_status st = PT_OK;
  for (int side = 0; side < 2 && !st; side++) {
    int k = side == 0 ? ix : iy;
    if (k < 0 || !node->needs_grad[k]) continue;
    pt_tensor *d = NULL, *tmp = NULL, *sum = NULL;
    if (side == 0) {
      /* xlog1py(g, y): 0 where g is 0 even at y = -1; then 0 where x == 0 and y <= -1 */
      st = binary_forward(ctx, "xlog1py", B_XLOG1PY, OT(g), y, &tmp);
      pt_tensor *zero = NULL;
      if (!st) st = binary_forward(ctx, "xlog1py", B_XLOG1PY_ZERO, x, y, &zero);
      if (!st) st = pt_masked_fill(ctx, tmp, zero, 0.0, &d);
      pt_tensor_release(zero);
    } else {
      st = binary_forward(ctx, "xlog1py", B_XLOG1PY_DY, x, y, &tmp);
      if (!st) st = pt_mul(ctx, g, tmp, &d);
    }
    pt_tensor_release(tmp);
    pt_tensor *in = node->inputs[k];
    if (!st) st = pt_sum_to_shape(ctx, d, in->ndim, in->shape, &sum);
    if (!st) st = pt_tensor_to_dtype_raw(ctx, sum, in->dtype, &gin[k]);
    pt_tensor_release(d);
    pt_tensor_release(sum);
  }
  ctx->grad_enabled = was;
  return st;
}

static pt_status xlog1py_op(pt_ctx *ctx, sopnd x, sopnd y, pt_tensor **out) {
  pt_tensor *r = NULL;
  pt_status st = binary_forward(ctx, "xlog1py", B_XLOG1PY, x, y, &r);
  if (st) return st;
  pt_tensor *inputs[2];
  int n = 0, layout = x.t && y.t ? 0 : (x.t ? 1 : 2);
  if (x.t) inputs[n++] = x.t;
  if (y.t) inputs[n++] = y.t;
  bool any = (x.t && x.t->requires_grad) || (y.t && y.t->requires_grad);
  pt_node *node = NULL;
  if (ctx->grad_enabled && any &&
      (st = pt_autograd_record(ctx, r, "SpecialXlog1PyBackward", xlog1py_backward, n, inputs, &node))) {
    pt_tensor_release(r);
    return st;
  }
  if (node) {
    node->ints[0] = layout;
    node->n_ints = 1;
    node->scalars[0] = layout == 1 ? y.s : (layout == 2 ? x.s : 0);
    for (int i = 0; i < n; i++) pt_node_save(node, i, pt_tensor_retain(inputs[i]));
  }
  *out = r;
  return PT_OK;
}

pt_status pt_xlog1py(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out) {
  return xlog1py_op(ctx, OT(a), OT(b), out);
}

pt_status pt_xlog1py_number(pt_ctx *ctx, pt_tensor *a, pt_number s, bool reversed, pt_tensor **out) {
  return reversed ? xlog1py_op(ctx, ON(s), OT(a), out) : xlog1py_op(ctx, OT(a), ON(s), out);
}

/* --- bitwise --- */

static pt_status check_bitop(pt_ctx *ctx, pt_bitop op) {
  if ((unsigned)op >= PT_BIT_COUNT_PUBLIC) return pt_fail(ctx, PT_EARG, "bitwise: invalid op %d", (int)op);
  return PT_OK;
}

pt_status pt_bitwise(pt_ctx *ctx, pt_bitop op, pt_tensor *a, pt_tensor *b, pt_tensor **out) {
  pt_status st = check_bitop(ctx, op);
  return st ? st : binary_forward(ctx, bit_names[op], op, OT(a), OT(b), out);
}

pt_status pt_bitwise_number(pt_ctx *ctx, pt_bitop op, pt_tensor *a, pt_number s, bool reversed,
                            pt_tensor **out) {
  pt_status st = check_bitop(ctx, op);
  if (st) return st;
  return reversed ? binary_forward(ctx, bit_names[op], op, ON(s), OT(a), out)
                  : binary_forward(ctx, bit_names[op], op, OT(a), ON(s), out);
}

/* self <- r (r: the result computed out of place, of self's shape): converted to self's dtype
 * and copied in through pt_copy_ (versions, views and, for a float self, autograd: self's
 * history becomes a constant's) */
static pt_status assign_result(pt_ctx *ctx, pt_tensor *self, pt_tensor *r) {
  pt_tensor *c = NULL;
  pt_status st = to_dtype(ctx, r, self->dtype, &c);
  if (!st) st = pt_copy_(ctx, self, c);
  pt_tensor_release(c);
  return st;
}

static pt_status bitwise_inplace(pt_ctx *ctx, int op, pt_tensor *self, sopnd y) {
  char name[40];
  snprintf(name, sizeof name, "%s_", bit_names[op]);
  pt_status st = pt_inplace_check(ctx, name, self);
  pt_dtype cdt = PT_BOOL, odt = PT_BOOL; /* set by bin_dtypes when it succeeds */
  if (!st) st = bin_dtypes(ctx, name, op, OT(self), y, &cdt, &odt);
  if (st) return st;
  if (!pt_can_cast(odt, self->dtype)) return cast_error(ctx, name, odt, self->dtype);
  if (y.t) {
    int nd;
    int64_t shape[PT_MAX_DIMS];
    if ((st = pt_broadcast_shapes(ctx, name, self->ndim, self->shape, y.t->ndim, y.t->shape, &nd,
                                  shape)))
      return st;
    if (nd != self->ndim || memcmp(shape, self->shape, (size_t)nd * sizeof(int64_t)) != 0) {
      char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
      return pt_fail(ctx, PT_ESHAPE, "%s: output with shape %s doesn't match the broadcast shape %s",
                     name, pt_shape_format(self->ndim, self->shape, a, sizeof a),
                     pt_shape_format(nd, shape, b, sizeof b));
    }
  }
  pt_tensor *r = NULL;
  if (!(st = binary_forward(ctx, name, op, OT(self), y, &r))) st = assign_result(ctx, self, r);
  pt_tensor_release(r);
  return st;
}

pt_status pt_bitwise_(pt_ctx *ctx, pt_bitop op, pt_tensor *self, pt_tensor *b) {
  pt_status st = check_bitop(ctx, op);
  return st ? st : bitwise_inplace(ctx, op, self, OT(b));
}

pt_status pt_bitwise_number_(pt_ctx *ctx, pt_bitop op, pt_tensor *self, pt_number s) {
  pt_status st = check_bitop(ctx, op);
  return st ? st : bitwise_inplace(ctx, op, self, ON(s));
}

static pt_status bitwise_not_forward(pt_ctx *ctx, const char *fname, pt_tensor *a, pt_tensor **out) {
  if (pt_dtype_is_floating(a->dtype))
    return pt_fail(ctx, PT_EARG, "%s: not supported for %s tensors", fname, pt_dtype_name(a->dtype));
  pt_tensor *c = NULL, *o = NULL;
  pt_status st = pt_tensor_contiguous_raw(ctx, a, &c);
  if (!st) st = pt_tensor_empty(ctx, a->dtype, a->ndim, a->shape, &o);
  if (!st) {
    int64_t n = pt_tensor_numel(o);
    const void *s = pt_tensor_data(c);
    void *d = pt_tensor_data(o);
    switch (a->dtype) {
    case PT_INT64:
      for (int64_t i = 0; i < n; i++) ((int64_t *)d)[i] = ~((const int64_t *)s)[i];
      break;
    case PT_INT32:
      for (int64_t i = 0; i < n; i++) ((int32_t *)d)[i] = ~((const int32_t *)s)[i];
      break;
    case PT_UINT8:
      for (int64_t i = 0; i < n; i++) ((uint8_t *)d)[i] = (uint8_t)~((const uint8_t *)s)[i];
      break;
    default: /* bool: logical not */
      for (int64_t i = 0; i < n; i++) ((uint8_t *)d)[i] = !((const uint8_t *)s)[i];
      break;
    }
    *out = o;
  }
  pt_tensor_release(c);
  return st;
}

pt_status pt_bitwise_not(pt_ctx *ctx, pt_tensor *a, pt_tensor **out) {
  return bitwise_not_forward(ctx, "bitwise_not", a, out);
}

pt_status pt_bitwise_not_(pt_ctx *ctx, pt_tensor *self) {
  pt_status st = pt_inplace_check(ctx, "bitwise_not_", self);
  pt_tensor *r = NULL;
  if (!st) st = bitwise_not_forward(ctx, "bitwise_not_", self, &r);
  if (!st) st = pt_copy_(ctx, self, r);
  pt_tensor_release(r);
  return st;
}
