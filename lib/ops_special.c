/* Special functions (lgamma, digamma, polygamma, Bessel i0/i1, the normal CDF family, entr,
 * mvlgamma, xlog1py) and bitwise / integer ops, with broadcasting, promotion and autograd.
 *
 * The scalar functions are written from their series and asymptotic expansions (digamma: the
 * recurrence to x >= 10 and the Stirling series; polygamma: n! times the Hurwitz zeta by
 * Euler-Maclaurin summation, and the reflection formula with the derivatives of cot for x < 0;
 * i0/i1: the power series up to 30 and Hankel's expansion beyond; ndtri: Newton steps on
 * log ndtr or on erf from Abramowitz-Stegun 26.2.23). They compute in double; float32 tensors
 * round the double result once. Where the CPU has AVX2, lgamma, digamma, the Bessel functions,
 * the normal CDF family and entr run instead as the vectorised forms further down (other
 * methods, PyTorch's speed or better; see there).
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
#include "ops_reduce.h"
#include "ops_shape.h"
#include "parallel.h"
#include "simd_math.h"

/* ---------------------------------------------------------------------------------------------
 * scalar functions
 * ------------------------------------------------------------------------------------------- */

#define SQRT_2PI 2.50662827463100050242     /* sqrt(2 pi) */
#define LOG_SQRT_2PI 0.91893853320467274178 /* log sqrt(2 pi) */

static double sf_lgamma(double x) {
  int sign; /* lgamma_r: plain lgamma writes the global signgam, a race between threads */
  return lgamma_r(x, &sign);
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

/* psi^(k)(x0) / k!, k = 1..20, at the positive zero x0 of digamma (x0 = HI + LO) */
#define DIGAMMA_ZERO_HI 1.4616321449683622
#define DIGAMMA_ZERO_LO 9.549995429965697e-17
static const double digamma_zero_taylor[20] = {
    0.9676722454476212, -0.4427631689835921, 0.258499760955651, -0.16394270544240652,
    0.10782405069126237, -0.07219956125645471, 0.04880428816414311, -0.03316112647484736,
    0.022597648232218104, -0.01542476590494896, 0.010538791616612175, -0.007204534386356869,
    0.004926781395729853, -0.003369801655439328, 0.002305126326734928, -0.0015769367714301972,
    0.0010788252019162967, -0.0007380709389960052, 0.000504953265834602, -0.0003454680251063077,
};

/* psi near its positive zero, |x - x0| < 0.2, where psi(x + n) - sum 1/(x + k) cancels */
static double digamma_near_zero(double x) {
  double d = (x - DIGAMMA_ZERO_HI) - DIGAMMA_ZERO_LO, p = 0;
  for (int k = 19; k >= 0; k--) p = p * d + digamma_zero_taylor[k];
  return d * p;
}

static double sf_digamma(double x) {
  if (x != x || x == INFINITY) return x;
  if (x == 0) return copysign(INFINITY, -x); /* -inf at +0, +inf at -0, as C's lgamma and PyTorch */
  if (x < 0) {
    if (x == nearbyint(x)) return NAN; /* a pole (or -inf) */
    return sf_digamma(1.0 - x) - M_PI * cot_pi(x); /* the reflection formula */
  }
  if (fabs(x - DIGAMMA_ZERO_HI) < 0.2) return digamma_near_zero(x);
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
  return sign * hurwitz_zeta(s, x, exp(sf_lgamma(s) / s));
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

/* erfcx(x) = exp(x^2) erfc(x), the scaled complementary error function (torch.special.erfcx):
 * exp(x^2) with x^2's rounding error put back (x^2 = h + l exactly, exp(h) (1 + l)) times erfc,
 * whose relative error stays small far into its tail; from x = 25 on (erfc underflows from 26.5)
 * the asymptotic series 1 / (x sqrt(pi)) sum_k (-1)^k (2k-1)!! / (2x^2)^k, to below 1e-17 in a
 * few terms; below 0 the reflection erfcx(x) = 2 exp(x^2) - erfcx(-x) (inf from x^2 > 709.8). */
static double erfcx_pos(double x) {
  if (x < 25) {
    double h = x * x, l = fma(x, x, -h);
    return exp(h) * (1 + l) * erfc(x);
  }
  if (x == INFINITY) return 0;
  double r = 1, t = 1, u = 1 / (2 * x * x);
  for (int k = 1; k < 12; k++) {
    t *= -(2 * k - 1) * u;
    r += t;
    if (fabs(t) < 1e-17) break;
  }
  return r / (x * 1.7724538509055160273); /* sqrt(pi) */
}

double pt_sf_erfcx(double x) {
  if (x != x) return x;
  if (x >= 0) return erfcx_pos(x);
  if (x < -26.7) return INFINITY;
  double h = x * x, l = fma(x, x, -h);
  return 2 * exp(h) * (1 + l) - erfcx_pos(-x);
}

/* the Hurwitz zeta function zeta(x, q) = sum_{k >= 0} (k + q)^-x (torch.special.zeta), with
 * Cephes' domain as PyTorch's: inf at x == 1 and at q a non-positive integer, nan for x < 1 and
 * for q < 0 with x not an integer; a negative q's terms are summed directly up to q + k > 0. */
/* sum + zeta(x, q) for x > 1, q > 0 (sum: terms already added, which the first ones join in
 * order, as Cephes' one running sum) */
static double zeta_pos(double x, double q, double sum) {
  if (q > 1e8) return sum + (1 / (x - 1) + 1 / (2 * q)) * pow(q, 1 - x); /* Cephes' asymptotic form */
  /* the first terms as (k + q)^-x (hurwitz_zeta's (1 / (k + q))^x rounds 1 / (k + q) first, which
   * x multiplies: 1e-14 off at x = 200), then hurwitz_zeta's tail from where it starts it */
  for (double w = fmax(12.0, 2.5 * x), t; q < w; sum += t) {
    t = pow(q, -x);
    q += 1;
    if (t * q <= 1e-17 * (x - 1) * (sum + t)) return sum + t;
  }
  return sum + hurwitz_zeta(x, q, 1.0);
}

double pt_sf_zeta(double x, double q) {
  if (x != x || q != q) return NAN;
  if (x == 1) return INFINITY;
  if (x < 1) return NAN;
  if (q <= 0) {
    if (q == floor(q)) return INFINITY;
    if (x != floor(x)) return NAN;
  }
  if (x == INFINITY) return fabs(q) < 1 ? INFINITY : q == 1 ? 1 : 0; /* the first term's limit */
  if (q > 0) return zeta_pos(x, q, 0.0);
  /* q < 0 (not an integer, so |q| < 2^52), x an integer: the m terms (q + k)^-x with q + k < 0
   * and then zeta(x, q + m). Those are (-1)^x (r + j)^-x, j < m, with r = -(q + m - 1) in (0, 1):
   * summed directly (they cancel: no early end) up to a million, beyond that as
   * (-1)^x (zeta(x, r) - zeta(x, r + m)) */
  double m = ceil(-q), sign = fmod(x, 2.0) == 0 ? 1.0 : -1.0, neg = 0;
  if (m <= 1e6) {
    for (double k = 0; k < m; k++) neg += pow(q + k, -x);
  } else {
    double r = -(q + (m - 1));
    neg = sign * (zeta_pos(x, r, 0.0) - zeta_pos(x, r + m, 0.0));
  }
  return zeta_pos(x, q + m, neg);
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

static double sf_i0(double x) {
  double a = fabs(x);
  if (x != x || a == INFINITY) return a; /* I0(+-inf) = inf (PyTorch 1.13: nan) */
  if (a <= BESSEL_SERIES_MAX) return bessel_series(a, 0);
  return unscale(a, bessel_hankel(a).s0);
}

static double sf_i0e(double x) {
  double a = fabs(x);
  if (x != x) return x;
  if (a == INFINITY) return 0;
  if (a <= BESSEL_SERIES_MAX) return exp(-a) * bessel_series(a, 0);
  return bessel_hankel(a).s0 / sqrt(2 * M_PI * a);
}

static double sf_i1(double x) {
  double a = fabs(x);
  if (x != x || a == INFINITY) return x; /* I1(+-inf) = +-inf (PyTorch 1.13: nan) */
  double r = a <= BESSEL_SERIES_MAX ? bessel_series(a, 1) : unscale(a, bessel_hankel(a).s1);
  return x < 0 ? -r : r; /* +0 at -0, as PyTorch */
}

static double sf_i1e(double x) {
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

static double sf_ndtr(double x) { return 0.5 * erfc(-x * M_SQRT1_2); }

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

static double sf_log_ndtr(double x) {
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
    double ln = sf_log_ndtr(x), step = (ln - lq) * mills_series(x) / -x; /* phi / Phi = -x / mills */
    x -= step;
    if (fabs(step) <= 1e-16 * fabs(x)) break;
  }
  return x;
}

static double sf_ndtri(double p) {
  if (p != p || p < 0 || p > 1) return NAN;
  if (p == 0) return -INFINITY;
  if (p == 1) return INFINITY;
  if (p == 0.5) return 0;
  return p < 0.5 ? ndtri_lower(p) : -ndtri_lower(1.0 - p); /* 1 - p is exact there */
}

static double sf_entr(double x) {
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

static double mvlgamma_const(int64_t p) { return 0.25 * (double)p * (double)(p - 1) * log(M_PI); }

static double mvlgamma(double x, int64_t p) {
  double s = mvlgamma_const(p);
  for (int64_t i = 0; i < p; i++) s += pt_sf_lgamma(x - 0.5 * (double)i);
  return s;
}

static double d_mvlgamma(double x, int64_t p) {
  double s = 0;
  for (int64_t i = 0; i < p; i++) s += pt_sf_digamma(x - 0.5 * (double)i);
  return s;
}

/* ---------------------------------------------------------------------------------------------
 * the same functions 4 lanes at a time
 *
 * lgamma, digamma, i0, i0e, i1, i1e, ndtr, log_ndtr, ndtri and entr (and the derivatives of
 * log_ndtr, ndtri and, through lgamma and digamma, mvlgamma) run over arrays in AVX2 + FMA vectors
 * of 4 doubles (float32 converted to double and back) when the CPU has them (simd_f8()), PyTorch's
 * speed or better at one thread where the scalar forms above were 2-7x slower; pt_sf_* runs the
 * same code on one lane, so that a value does not depend on how it is computed (a scalar call, a
 * lane of a tensor, the padded tail of a thread's chunk). The scalar forms serve CPUs without
 * AVX2. Against mpmath, on random points over each domain, float64 is within 1.3e-15 (digamma
 * 3.4e-15 and lgamma 2.1e-15 where they reflect; near lgamma's zeros below 0 within 1.4e-16
 * absolute). The methods (series coefficients computed with mpmath at 50 digits; the rational
 * approximations are published ones):
 *   lgamma   x >= 12.5: Stirling; below: lgamma(2 + z) (a Chebyshev fit, z = x - round(x) in
 *            [-1/2, 1/2]) plus the log of the product that shifts x by round(x) - 2 (relative
 *            accuracy at the zeros 1 and 2); x < 0: the reflection with sin(pi x)
 *   digamma  the recurrence to x >= 8 and the Stirling series, but the Taylor series at the
 *            positive zero x0 = 1.4616... within 0.2 of it (as the scalar form: the recurrence's
 *            sum cancels there, PyTorch is 1e-9 off); x < 0: the reflection with cot(pi x)
 *   i0..i1e  the power series up to |x| = 22 and Hankel's expansion beyond
 *   ndtr     Cephes' rational approximations of erf (|x| < sqrt 2) and of erfc e^(t^2), times
 *            e^(-x^2/2) with x^2 split into two doubles; log_ndtr for x <= 0 takes their log
 *            and subtracts x^2/2 (nothing underflows), above 0 log1p(-(1 - ndtr))
 *   ndtri    Wichura's AS241 (PPND16): relative error below 2e-16 from 1e-300 to 1 - 1e-16
 *   entr     -x log x
 * exp and log are inline (SLEEF's calls were half of the time; within 1 ulp as its u10 forms),
 * polynomials are four Horner chains side by side (one chain's latency was the limit). float32
 * sums the Bessel series, the exp and the log of ndtri, log_ndtr and entr to fewer terms
 * (relative error below 1e-10 before the rounding to float: 1 ulp off the rounded float64 value
 * at about 1e-4 of the points); lgamma and digamma keep every term, since near their zeros below 0
 * the result is the difference of much larger terms (the shortened series were 1e-5 off). */

#define VF __attribute__((target("avx2,fma"), always_inline)) static inline
typedef __m256d vd;

VF vd v_set(double c) { return _mm256_set1_pd(c); }
VF vd v_sel(vd m, vd a, vd b) { return _mm256_blendv_pd(b, a, m); } /* m ? a : b, lane by lane */
VF vd v_lt(vd a, vd b) { return _mm256_cmp_pd(a, b, _CMP_LT_OQ); }
VF vd v_le(vd a, vd b) { return _mm256_cmp_pd(a, b, _CMP_LE_OQ); }
VF vd v_ge(vd a, vd b) { return _mm256_cmp_pd(a, b, _CMP_GE_OQ); }
VF vd v_eq(vd a, vd b) { return _mm256_cmp_pd(a, b, _CMP_EQ_OQ); }
VF vd v_nan(vd a) { return _mm256_cmp_pd(a, a, _CMP_UNORD_Q); }
VF vd v_and(vd a, vd b) { return _mm256_and_pd(a, b); }
VF vd v_or(vd a, vd b) { return _mm256_or_pd(a, b); }
VF vd v_not(vd m) { return _mm256_xor_pd(m, _mm256_castsi256_pd(_mm256_set1_epi64x(-1))); }
VF bool v_any(vd m) { return _mm256_movemask_pd(m) != 0; }
VF vd v_abs(vd a) { return _mm256_andnot_pd(v_set(-0.0), a); }
/* m ? -a : a */
VF vd v_neg_if(vd m, vd a) { return _mm256_xor_pd(a, _mm256_and_pd(m, v_set(-0.0))); }
VF vd v_round(vd a) { return _mm256_round_pd(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
VF vd v_exp(vd x) { return Sleef_expd4_u10avx2(x); }

VF vd v_fma(vd a, vd b, vd c) { return _mm256_fmadd_pd(a, b, c); }

/* c[0] + c[1] x + ... + c[n-1] x^(n-1): short ones by Horner's rule, longer ones as four Horner
 * chains in x^4 (p0 + x p1 + x^2 (p2 + x p3)), which the CPU runs side by side (one chain's
 * latency made the 23-term series twice as slow) */
VF double v_coef(const double *c, int n, int i) { return i < n ? c[i] : 0.0; }
VF vd v_poly(vd x, const double *c, int n) {
  if (n <= 8) {
    vd p = v_set(c[n - 1]);
    for (int i = n - 2; i >= 0; i--) p = v_fma(p, x, v_set(c[i]));
    return p;
  }
  vd x2 = x * x, x4 = x2 * x2;
  int top = 4 * ((n - 1) / 4);
  vd p0 = v_set(v_coef(c, n, top)), p1 = v_set(v_coef(c, n, top + 1));
  vd p2 = v_set(v_coef(c, n, top + 2)), p3 = v_set(v_coef(c, n, top + 3));
  for (int i = top - 4; i >= 0; i -= 4) {
    p0 = v_fma(p0, x4, v_set(c[i]));
    p1 = v_fma(p1, x4, v_set(c[i + 1]));
    p2 = v_fma(p2, x4, v_set(c[i + 2]));
    p3 = v_fma(p3, x4, v_set(c[i + 3]));
  }
  return v_fma(x, p1, p0) + x2 * v_fma(x, p3, p2);
}

/* e^x for -700 <= x <= 700 without a call (the Bessel series' e^-|x|): x = n ln 2 + r with
 * |r| <= ln(2)/2, e^r by its Taylor series (14 terms: 4e-18; float32 10: 7e-12), 2^n put into
 * the exponent's bits */
static const double exp_taylor[14] = {
    1.0, 1.0, 0.5, 0.16666666666666666, 0.041666666666666664, 0.008333333333333333,
    0.001388888888888889, 0.0001984126984126984, 2.48015873015873e-05, 2.7557319223985893e-06,
    2.755731922398589e-07, 2.505210838544172e-08, 2.08767569878681e-09, 1.6059043836821613e-10,
};
#define LN2_HI 0.6931471805599453
#define LN2_LO 2.3190468138462996e-17

VF vd v_exp_inline(vd x, bool f64) {
  vd n = v_round(x * v_set(M_LOG2E));
  vd r = v_fma(n, v_set(-LN2_LO), v_fma(n, v_set(-LN2_HI), x));
  __m256i e = _mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(n));
  e = _mm256_add_epi64(e, _mm256_set1_epi64x(1023));
  return v_poly(r, exp_taylor, f64 ? 14 : 10) * _mm256_castsi256_pd(_mm256_slli_epi64(e, 52));
}

/* log x (-inf at 0, nan below 0), inline (SLEEF's call was half of lgamma's time; this is
 * within 1 ulp as SLEEF's u10): x = 2^e m with m in [sqrt(1/2), sqrt 2), f = m - 1 (exact) and
 * s = f / (2 + f): log(1 + f) = f - (f^2/2 - s (f^2/2 + R(s^2))) (fdlibm's arrangement: f exact,
 * the rest small) with R(z) = sum_k 2 z^k / (2k + 1) (10 terms: 2e-17; float32 5: 5e-11) */
static const double log_taylor[10] = {
    2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11, 2.0 / 13, 2.0 / 15, 2.0 / 17, 2.0 / 19, 2.0 / 21,
};

VF vd v_log(vd x, bool f64) {
  vd one = v_set(1), sub = v_lt(x, v_set(DBL_MIN)); /* subnormals scaled by 2^54 first */
  __m256i bits = _mm256_castpd_si256(v_sel(sub, x * v_set(0x1p54), x));
  __m256i mbits = _mm256_and_si256(bits, _mm256_set1_epi64x(0x000fffffffffffff));
  vd m = _mm256_castsi256_pd(_mm256_or_si256(mbits, _mm256_castpd_si256(one)));
  /* the exponent field as a double: its bits under 2^52's */
  __m256i ebits = _mm256_or_si256(_mm256_srli_epi64(bits, 52), _mm256_castpd_si256(v_set(0x1p52)));
  vd e = _mm256_castsi256_pd(ebits) - v_set(0x1p52 + 1023);
  e = e - v_and(sub, v_set(54));
  vd over = v_ge(m, v_set(M_SQRT2));
  m = v_sel(over, v_set(0.5) * m, m);
  e = e + v_and(over, one);
  vd f = m - one, s = f / (v_set(2) + f), z = s * s, hfsq = v_set(0.5) * f * f;
  vd lm = f - (hfsq - s * (hfsq + z * v_poly(z, log_taylor, f64 ? 10 : 5)));
  vd r = v_fma(e, v_set(LN2_HI), v_fma(e, v_set(LN2_LO), lm));
  r = v_sel(v_eq(x, v_set(0)), v_set(-INFINITY), v_sel(v_eq(x, v_set(INFINITY)), x, r));
  return v_sel(_mm256_cmp_pd(x, v_set(0), _CMP_NGE_UQ), v_set(NAN), r); /* below 0, nan */
}

/* sin(pi x) = sin(pi r) and cos(pi x) = +-cos(pi r) with r = x - round(x) in [-1/2, 1/2]:
 * s = sin(pi |r|) and c = cos(pi r), both >= 0, from polynomials on [0, 1/4] (c is exactly 0 at
 * the half-integers); neg: r < 0 */
static const double sinpi_taylor[12] = {
    3.141592653589793, -5.16771278004997, 2.5501640398773455, -0.5992645293207921,
    0.08214588661112823, -0.0073704309457143504, 0.00046630280576761255, -2.1915353447830217e-05,
    7.952054001475513e-07, -2.2948428997269873e-08, 5.392664662608129e-10,
    -1.0518471716932065e-11,
};
static const double cospi_taylor[10] = {
    1.0, -4.934802200544679, 4.0587121264167685, -1.3352627688545895, 0.2353306303588932,
    -0.02580689139001406, 0.0019295743094039231, -0.0001046381049248457, 4.303069587032947e-06,
    -1.3878952462213771e-07,
};

typedef struct v_sincos {
  vd s, c, neg;
} v_sincos;

VF v_sincos v_sincospi(vd x) {
  vd r = x - v_round(x), a = v_abs(r), quarter = v_le(a, v_set(0.25));
  vd u = v_sel(quarter, a, v_set(0.5) - a), u2 = u * u;
  vd s = u * v_poly(u2, sinpi_taylor, 10), c = v_poly(u2, cospi_taylor, 10);
  return (v_sincos){v_sel(quarter, s, c), v_sel(quarter, c, s), v_lt(r, v_set(0))};
}

/* |sin(pi x)| alone: the Taylor series of sin(pi a) on a = |r| <= 1/2 (12 terms: 1e-18) */
VF vd v_sinpi_abs(vd x) {
  vd a = v_abs(x - v_round(x));
  return a * v_poly(a * a, sinpi_taylor, 12);
}

/* lgamma(2 + z) / z on [-1/2, 1/2]: mpmath's chebyfit (Chebyshev interpolation, 19 terms; the
 * Taylor series, whose coefficients (-1)^k (zeta(k) - 1) / k these approach, needs 28), within
 * 7e-17 */
static const double lgamma2_fit[19] = {
    0.42278433509846713, 0.32246703342411326, -0.0673523010531981, 0.02058080842778038,
    -0.0073855510286719986, 0.002890510331034267, -0.0011927539118428156, 0.0005096695154115458,
    -0.00022315475400520507, 9.945767355819498e-05, -4.49263133791557e-05, 2.0505590755833454e-05,
    -9.438715099211532e-06, 4.38470440459836e-06, -2.0439048107029907e-06, 9.200527894968101e-07,
    -4.3252393445604814e-07, 2.78740805211359e-07, -1.3219945666117874e-07,
};
/* B_2k / (2k (2k - 1)), k = 1..7: lgamma's Stirling series in 1/x */
static const double lgamma_stirling[7] = {
    0.08333333333333333, -0.002777777777777778, 0.0007936507936507937, -0.0005952380952380953,
    0.0008417508417508417, -0.0019175269175269176, 0.00641025641025641,
};

#define LGAMMA_STIRLING_MIN 12.5

/* lgamma: for y = x (x > 0) or 1 - x (x < 0, the reflection lgamma(x) = log(pi / |sin(pi x)|) -
 * lgamma(1 - x)) below 12.5, y = 2 + z + (m - 2) with m = round(y) <= 12 and z exact:
 * lgamma(y) = lgamma(2 + z) + log P with P = (y-1)...(y-m+2) for m >= 2, and - log P with P = y
 * (m = 1) or y (y+1) (m = 0); from 12.5 on, Stirling: y (log y - 1) - log(y) / 2 + log sqrt(2 pi)
 * + the series (y (log y - 1) overflows only where lgamma does). One logarithm a lane: of P, of
 * pi / (|sin| P) or pi P / |sin| for x < 0, of y for Stirling (x < -11.5 takes a second one). */
VF vd v_lgamma(vd x) {
  vd zero = v_set(0), one = v_set(1), inf = v_set(INFINITY), neg = v_lt(x, zero);
  vd y = v_sel(neg, one - x, x), big = v_ge(y, v_set(LGAMMA_STIRLING_MIN)), small = v_not(big);
  vd sin_abs = one;
  if (v_any(neg)) sin_abs = v_sinpi_abs(x);
  vd arg = y, lz = zero, up = zero;
  if (v_any(small)) {
    /* the factors y - k (1 where k > m - 2) multiplied as a tree: no data-dependent loop (its
     * exit was a mispredicted branch) and a short chain */
    vd m = v_round(y), z = y - m, f[10];
    for (int k = 1; k <= 10; k++) f[k - 1] = v_sel(v_ge(m, v_set(k + 2)), y - v_set(k), one);
    vd p = ((f[0] * f[1]) * (f[2] * f[3])) * ((f[4] * f[5]) * (f[6] * f[7])) * (f[8] * f[9]);
    p = v_sel(v_eq(m, one), y, p);
    p = v_sel(v_eq(m, zero), y * (y + one), p);
    up = v_lt(m, v_set(2));
    lz = z * v_poly(z, lgamma2_fit, 19);
    arg = v_sel(small, p, y);
    if (v_any(neg)) {
      vd pn = v_sel(up, v_set(M_PI) * p / sin_abs, v_set(M_PI) / (sin_abs * p));
      arg = v_sel(v_and(small, neg), pn, arg);
    }
  }
  vd l = v_log(arg, true), r = zero;
  if (v_any(small)) r = v_sel(neg, l - lz, lz + v_neg_if(up, l));
  if (v_any(big)) {
    vd w = one / y;
    vd s = w * v_poly(w * w, lgamma_stirling, 7);
    vd rb = y * (l - one) - v_set(0.5) * l + v_set(LOG_SQRT_2PI) + s;
    vd bn = v_and(big, neg);
    if (v_any(bn)) rb = v_sel(bn, v_log(v_set(M_PI) / sin_abs, true) - rb, rb);
    r = v_sel(big, rb, r);
  }
  /* +inf at 0, the negative integers, -inf and +inf */
  vd pole = v_and(v_le(x, zero), v_eq(x, v_round(x)));
  return v_sel(v_or(pole, v_eq(x, inf)), inf, r);
}

/* B_2k / 2k, k = 1..10: digamma's Stirling series in 1/x^2 (from x = 8 on: 2e-18; float32 5
 * terms: 2e-13) */
static const double digamma_stirling[10] = {
    0.08333333333333333, -0.008333333333333333, 0.003968253968253968, -0.004166666666666667,
    0.007575757575757576, -0.021092796092796094, 0.08333333333333333, -0.4432598039215686,
    3.0539543302701198, -26.456212121212122,
};
#define DIGAMMA_STIRLING_MIN 8.0

VF vd v_digamma(vd x) {
  vd zero = v_set(0), one = v_set(1), neg = v_lt(x, zero);
  vd y = v_sel(neg, one - x, x), w = y, acc = zero;
  for (;;) { /* psi(w) = psi(w + 1) - 1/w up to w >= 8 (8 steps at most: y > 0) */
    vd m = v_lt(w, v_set(DIGAMMA_STIRLING_MIN));
    if (!v_any(m)) break;
    acc = acc - v_and(m, one / w);
    w = w + v_and(m, one);
  }
  vd z = one / (w * w);
  vd r = acc + (v_log(w, true) - v_set(0.5) / w - z * v_poly(z, digamma_stirling, 10));
  vd d = y - v_set(DIGAMMA_ZERO_HI), near = v_lt(v_abs(d), v_set(0.2));
  if (v_any(near)) {
    d = d - v_set(DIGAMMA_ZERO_LO);
    r = v_sel(near, d * v_poly(d, digamma_zero_taylor, 20), r);
  }
  if (v_any(neg)) { /* psi(1 - x) - pi cot(pi x) */
    v_sincos sc = v_sincospi(x);
    r = v_sel(neg, r - v_set(M_PI) * v_neg_if(sc.neg, sc.c / sc.s), r);
  }
  /* -inf at +0, +inf at -0 (as C's lgamma), nan at the negative integers and -inf */
  r = v_sel(v_eq(x, zero), _mm256_xor_pd(v_set(-INFINITY), v_and(x, v_set(-0.0))), r);
  return v_sel(v_and(neg, v_eq(x, v_round(x))), v_set(NAN), r);
}

/* I0 = sum q^k / k!^2 and I1 = x/2 sum q^k / (k! (k+1)!), q = x^2/4 */
static const double i0_series[37] = {
    1.0, 1.0, 0.25, 0.027777777777777776, 0.001736111111111111, 6.944444444444444e-05,
    1.9290123456790124e-06, 3.936759889140842e-08, 6.151187326782565e-10, 7.594058428126624e-12,
    7.594058428126623e-14, 6.276081345559193e-16, 4.358389823304995e-18, 2.5789288895295828e-20,
    1.3157800456783586e-22, 5.8479113141260385e-25, 2.2843403570804838e-27, 7.904291893012054e-30,
    2.4395962632753253e-32, 6.757884385804225e-35, 1.6894710964510564e-37, 3.8310002187098785e-40,
    7.915289708078262e-43, 1.4962740468957016e-45, 2.5976979980828152e-48, 4.156316796932504e-51,
    6.14839762859838e-54, 8.434015951438106e-57, 1.0757673407446564e-59, 1.2791526049282477e-62,
    1.4212806721424974e-65, 1.4789601166935458e-68, 1.4442969889585408e-71,
    1.3262598613026087e-74, 1.147283617043779e-77, 9.365580547296156e-81, 7.226528200074194e-84,
};
static const double i1_series[36] = {
    1.0, 0.5, 0.08333333333333333, 0.006944444444444444, 0.00034722222222222224,
    1.1574074074074073e-05, 2.755731922398589e-07, 4.920949861426052e-09, 6.834652585313961e-11,
    7.594058428126623e-13, 6.903689480115112e-15, 5.230067787965994e-17, 3.352607556388458e-19,
    1.842092063949702e-21, 8.771866971189057e-24, 3.654944571328774e-26, 1.3437296218120491e-28,
    4.391273273895586e-31, 1.2839980333028028e-33, 3.3789421929021126e-36, 8.045100459290744e-39,
    1.7413637357772174e-41, 3.4414303078601135e-44, 6.234475195398757e-47, 1.0390791992331261e-49,
    1.5985833834355786e-52, 2.2771843068882885e-55, 3.0121485540850376e-58,
    3.7095425542919185e-61, 4.263842016427493e-64, 4.5847763617499917e-67, 4.6217503646673306e-70,
    4.376657542298608e-73, 3.900764297948849e-76, 3.2779531915536543e-79, 2.60155015202671e-82,
};
/* I_nu(x) e^-x sqrt(2 pi x) ~ sum_k (-1)^k prod_{j<=k} (4 nu^2 - (2j-1)^2) / (k! (8x)^k) */
static const double i0_hankel[23] = {
    1.0, 0.125, 0.0703125, 0.0732421875, 0.11215209960937501, 0.22710800170898438,
    0.5725014209747314, 1.7277275025844576, 6.074042001273483, 24.380529699556067,
    110.01714026924677, 551.3358961220207, 3038.0905109223854, 18257.755474293182,
    118838.42625678329, 832859.3040162897, 6252951.4934348, 50069589.53198895, 425939216.5047671,
    3836255180.2304354, 36468400807.065575, 364901081884.9835, 3833534661393.9463,
};
static const double i1_hankel[23] = {
    1.0, -0.375, -0.1171875, -0.1025390625, -0.144195556640625, -0.2775764465332031,
    -0.6765925884246826, -1.9935317337512972, -6.883914268109948, -27.248827311268546,
    -121.5978918765359, -603.8440767050703, -3302.272294480853, -19718.375912236632,
    -127641.27264617462, -890297.876707068, -6656367.718817688, -53104110.10968523,
    -450278600.3050393, -4043620325.1077538, -38338575207.42789, -382701134659.86053,
    -4011838599133.197,
};

enum { V_I0, V_I0E, V_I1, V_I1E };

/* the series up to 22 (float32: 15), where Hankel's expansion has its digits (37 and 23 terms;
 * float32 23 and 12) */
VF vd v_bessel(vd x, int kind, bool f64) {
  bool order1 = kind == V_I1 || kind == V_I1E, scaled = kind == V_I0E || kind == V_I1E;
  vd a = v_abs(x), near = v_le(a, v_set(f64 ? 22.0 : 15.0)), far = v_not(near), r = v_set(0);
  if (v_any(near)) {
    vd q = v_set(0.25) * a * a;
    if (order1) r = v_set(0.5) * a * v_poly(q, i1_series, f64 ? 36 : 23);
    else r = v_poly(q, i0_series, f64 ? 37 : 23);
    if (scaled) r = r * v_exp_inline(-a, f64);
  }
  if (v_any(far)) { /* nan lanes too */
    vd h = v_poly(v_set(1) / a, order1 ? i1_hankel : i0_hankel, f64 ? 23 : 12);
    vd sq = _mm256_sqrt_pd(v_set(2 * M_PI) * a);
    if (scaled) {
      h = h / sq;
    } else { /* e^a h / sq without overflowing before the result does */
      vd e = v_exp(v_set(0.5) * a);
      h = v_sel(v_eq(a, v_set(INFINITY)), a, e * (e * h / sq));
    }
    r = v_sel(far, h, r);
  }
  return order1 ? v_neg_if(v_lt(x, v_set(0)), r) : r; /* +0 at -0, as PyTorch */
}

VF vd v_i0(vd x, bool f64) { return v_bessel(x, V_I0, f64); }
VF vd v_i0e(vd x, bool f64) { return v_bessel(x, V_I0E, f64); }
VF vd v_i1(vd x, bool f64) { return v_bessel(x, V_I1, f64); }
VF vd v_i1e(vd x, bool f64) { return v_bessel(x, V_I1E, f64); }

/* Cephes ndtr.c: erf(t) = t T(t^2) / U(t^2) for |t| <= 1; erfc(t) e^(t^2) = P(t) / Q(t) for
 * 1 <= t < 8 and R(t) / S(t) beyond (lowest power first; within 1e-16 there, in exact
 * arithmetic, and 2e-15 at t = 1000) */
static const double erf_T[5] = {
    55592.30130103949, 7003.325141128051, 2232.005345946843, 90.02601972038427, 9.604973739870516,
};
static const double erf_U[6] = {
    49267.39426086359, 22629.000061389095, 4594.323829709801, 521.3579497801527,
    33.56171416475031, 1.0,
};
static const double erfc_P[9] = {
    557.5353353693994, 1027.5518868951572, 934.5285271719576, 526.4451949954773,
    196.5208329560771, 48.63719709856814, 7.463210564422699, 0.5641895648310689,
    2.461969814735305e-10,
};
static const double erfc_Q[9] = {
    557.5353408177277, 1656.6630919416134, 2246.3376081871097, 1823.9091668790973,
    975.7085017432055, 354.9377788878199, 86.70721408859897, 13.228195115474499, 1.0,
};
static const double erfc_R[6] = {
    2.9788666537210022, 7.4097426995044895, 6.160210979930536, 5.019050422511805,
    1.275366707599781, 0.5641895835477551,
};
static const double erfc_S[7] = {
    3.369076451000815, 9.608968090632859, 17.08144507475659, 12.048953980809666,
    9.396035249380015, 2.2605286322011726, 1.0,
};

VF vd v_erf_small(vd t) {
  vd t2 = t * t;
  return t * v_poly(t2, erf_T, 5) / v_poly(t2, erf_U, 6);
}

/* erfc(t) e^(t^2) for t >= 1; 1 / (sqrt(pi) t) beyond 1e8 (where R and S would overflow) */
VF vd v_erfcx(vd t) {
  vd lo = v_lt(t, v_set(8)), hi = v_not(lo), r = v_set(0);
  if (v_any(lo)) r = v_poly(t, erfc_P, 9) / v_poly(t, erfc_Q, 9);
  if (v_any(hi)) {
    vd rs = v_sel(v_lt(t, v_set(1e8)), v_poly(t, erfc_R, 6) / v_poly(t, erfc_S, 7),
                  v_set(0.5 * M_2_SQRTPI) / t);
    r = v_sel(hi, rs, r);
  }
  return r;
}

/* e^(-x^2/2) with x^2 = h + lo (h = x * x rounded, lo exact): e^(-h/2) (1 - lo/2); in ndtr's
 * lower tail the rounding of x^2 alone would cost x^2 * 1e-16 of relative accuracy */
VF vd v_exp_half_sq(vd x, vd h) {
  vd lo = _mm256_fmsub_pd(x, x, h);
  return v_exp(v_set(-0.5) * h) * (v_set(1) - v_set(0.5) * lo);
}

#define NDTR_ERF_MAX M_SQRT2 /* erf below, erfc from here on (t = |x| / sqrt 2 >= 1) */
#define NDTR_TAIL_ZERO 40.0  /* the smaller tail underflows from 38.5 on */

VF vd v_ndtr(vd x, bool f64) {
  (void)f64;
  vd a = v_abs(x), t = a * v_set(M_SQRT1_2), neg = v_lt(x, v_set(0));
  vd small = v_lt(a, v_set(NDTR_ERF_MAX)), big = v_not(small), r = v_set(0);
  if (v_any(small)) r = v_set(0.5) + v_set(0.5) * v_neg_if(neg, v_erf_small(t));
  if (v_any(big)) { /* nan lanes too */
    vd q = v_set(0.5) * v_erfcx(t) * v_exp_half_sq(x, x * x);
    q = v_sel(v_ge(a, v_set(NDTR_TAIL_ZERO)), v_set(0), q);
    r = v_sel(big, v_sel(neg, q, v_set(1) - q), r);
  }
  return r;
}

VF vd v_log_ndtr(vd x, bool f64) {
  vd zero = v_set(0), one = v_set(1), half = v_set(0.5);
  vd a = v_abs(x), t = a * v_set(M_SQRT1_2), pos = v_lt(zero, x);
  vd small = v_lt(a, v_set(NDTR_ERF_MAX)), big = v_not(small);
  /* x <= 0: log(arg) + add; x > 0: log1p(u) with u = -(1 - ndtr(x)) */
  vd arg = one, add = zero, u = zero;
  if (v_any(small)) {
    vd q = half - half * v_erf_small(t); /* erfc(t) / 2 */
    arg = q;
    u = -q;
  }
  if (v_any(big)) {
    vd c = v_erfcx(t), h = x * x;
    add = -(half * h + half * _mm256_fmsub_pd(x, x, h));
    add = v_sel(v_eq(h, v_set(INFINITY)), v_set(-INFINITY), add);
    arg = v_sel(big, half * c, arg);
    vd bp = v_and(big, pos);
    if (v_any(bp)) {
      vd q = half * c * v_exp_half_sq(x, h);
      u = v_sel(bp, -v_sel(v_ge(a, v_set(NDTR_TAIL_ZERO)), zero, q), u);
    }
  }
  add = v_and(big, add);
  /* log1p(u) = log(w) - ((w - 1) - u) / w with w = 1 + u rounded; u where w is 1 (-0 at +inf) */
  vd w = one + u;
  vd l = v_log(v_sel(pos, w, arg), f64);
  vd lp = v_sel(v_eq(w, one), u, l - ((w - one) - u) / w);
  return v_sel(pos, lp, l + add);
}

static const double as241_a[8] = {
    3.3871328727963665, 133.14166789178438, 1971.5909503065513, 13731.69376550946,
    45921.95393154987, 67265.7709270087, 33430.57558358813, 2509.0809287301227,
};
static const double as241_b[8] = {
    1.0, 42.31333070160091, 687.1870074920579, 5394.196021424751, 21213.794301586597,
    39307.89580009271, 28729.085735721943, 5226.495278852854,
};
static const double as241_c[8] = {
    1.4234371107496835, 4.630337846156546, 5.769497221460691, 3.6478483247632045,
    1.2704582524523684, 0.2417807251774506, 0.022723844989269184, 0.0007745450142783414,
};
static const double as241_d[8] = {
    1.0, 2.053191626637759, 1.6763848301838038, 0.6897673349851, 0.14810397642748008,
    0.015198666563616457, 0.0005475938084995345, 1.0507500716444169e-09,
};
static const double as241_e[8] = {
    6.657904643501103, 5.463784911164114, 1.7848265399172913, 0.29656057182850487,
    0.026532189526576124, 0.0012426609473880784, 2.7115555687434876e-05, 2.0103343992922881e-07,
};
static const double as241_f[8] = {
    1.0, 0.599832206555888, 0.1369298809227358, 0.014875361290850615, 0.0007868691311456133,
    1.8463183175100548e-05, 1.421511758316446e-07, 2.0442631033899397e-15,
};

/* AS241: q a(r) / b(r) with r = 0.180625 - q^2 for |q| = |p - 1/2| <= 0.425; else, with
 * r = sqrt(-log(min(p, 1 - p))), +-c(r - 1.6) / d(r - 1.6) for r <= 5 and +-e(r - 5) / f(r - 5)
 * beyond */
VF vd v_ndtri(vd p, bool f64) {
  vd zero = v_set(0), one = v_set(1), q = p - v_set(0.5), r = zero;
  vd central = v_le(v_abs(q), v_set(0.425)), tail = v_not(central);
  if (v_any(central)) {
    vd s = v_set(0.180625) - q * q;
    r = q * v_poly(s, as241_a, 8) / v_poly(s, as241_b, 8);
  }
  if (v_any(tail)) {
    vd s = _mm256_sqrt_pd(-v_log(v_sel(v_lt(q, zero), p, one - p), f64)); /* 1 - p is exact */
    vd mid = v_le(s, v_set(5)), far = v_not(mid), y = zero;
    if (v_any(mid)) {
      vd u = s - v_set(1.6);
      y = v_poly(u, as241_c, 8) / v_poly(u, as241_d, 8);
    }
    if (v_any(far)) {
      vd u = s - v_set(5);
      y = v_sel(far, v_poly(u, as241_e, 8) / v_poly(u, as241_f, 8), y);
    }
    r = v_sel(tail, v_neg_if(v_lt(q, zero), y), r);
  }
  r = v_sel(v_eq(p, zero), v_set(-INFINITY), v_sel(v_eq(p, one), v_set(INFINITY), r));
  return v_sel(v_or(v_nan(p), v_or(v_lt(p, zero), v_lt(one, p))), v_set(NAN), r);
}

VF vd v_entr(vd x, bool f64) {
  vd zero = v_set(0), r = -x * v_log(x, f64);
  return v_sel(v_lt(x, zero), v_set(-INFINITY), v_sel(v_eq(x, zero), zero, r));
}

/* y[0..n) = F(x[0..n)): whole vectors, then the tail padded to one (the same code for every
 * element, wherever it lies) */
#define SP_VKERNELS(name, F)                                                                    \
  __attribute__((target("avx2,fma"))) static void name##_f64(const double *x, double *y,       \
                                                             int64_t n) {                      \
    int64_t i = 0;                                                                              \
    for (; i + 4 <= n; i += 4) _mm256_storeu_pd(y + i, F(_mm256_loadu_pd(x + i), true));        \
    if (i < n) {                                                                                \
      double b[4] = {0.5, 0.5, 0.5, 0.5};                                                       \
      memcpy(b, x + i, (size_t)(n - i) * sizeof *b);                                            \
      _mm256_storeu_pd(b, F(_mm256_loadu_pd(b), true));                                         \
      memcpy(y + i, b, (size_t)(n - i) * sizeof *b);                                            \
    }                                                                                           \
  }                                                                                             \
  __attribute__((target("avx2,fma"))) static void name##_f32(const float *x, float *y,         \
                                                             int64_t n) {                      \
    int64_t i = 0;                                                                              \
    for (; i + 4 <= n; i += 4)                                                                  \
      _mm_storeu_ps(y + i, _mm256_cvtpd_ps(F(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), false)));    \
    if (i < n) {                                                                                \
      float b[4] = {0.5f, 0.5f, 0.5f, 0.5f};                                                    \
      memcpy(b, x + i, (size_t)(n - i) * sizeof *b);                                            \
      _mm_storeu_ps(b, _mm256_cvtpd_ps(F(_mm256_cvtps_pd(_mm_loadu_ps(b)), false)));            \
      memcpy(y + i, b, (size_t)(n - i) * sizeof *b);                                            \
    }                                                                                           \
  }

/* lgamma and digamma have no shortened float32 form (see v_lgamma) */
VF vd v_lgamma_k(vd x, bool f64) { (void)f64; return v_lgamma(x); }
VF vd v_digamma_k(vd x, bool f64) { (void)f64; return v_digamma(x); }

SP_VKERNELS(vk_lgamma, v_lgamma_k)
SP_VKERNELS(vk_digamma, v_digamma_k)
SP_VKERNELS(vk_i0, v_i0)
SP_VKERNELS(vk_i0e, v_i0e)
SP_VKERNELS(vk_i1, v_i1)
SP_VKERNELS(vk_i1e, v_i1e)
SP_VKERNELS(vk_ndtr, v_ndtr)
SP_VKERNELS(vk_log_ndtr, v_log_ndtr)
SP_VKERNELS(vk_ndtri, v_ndtri)
SP_VKERNELS(vk_entr, v_entr)

/* (2k-1)!! (-1/x^2)^k, k = 0..22: Phi(x) |x| / phi(x) ~ their sum for x -> -inf (2e-18 from
 * x = -10 on) */
static const double mills_asymptotic[23] = {
    1.0, -1.0, 3.0, -15.0, 105.0, -945.0, 10395.0, -135135.0, 2027025.0, -34459425.0,
    654729075.0, -13749310575.0, 316234143225.0, -7905853580625.0, 213458046676875.0,
    -6190283353629375.0, 1.9189878396251062e+17, -6.33265987076285e+18, 2.2164309547669976e+20,
    -8.200794532637892e+21, 3.1983098677287775e+23, -1.3113070457687988e+25, 5.638620296805835e+26,
};

/* the derivatives d_log_ndtr and d_ndtri (below) 4 lanes at a time */
VF vd v_d_log_ndtr(vd x, bool f64) {
  vd r = v_exp(v_set(-0.5) * x * x - v_log_ndtr(x, f64)) / v_set(SQRT_2PI);
  vd far = v_lt(x, v_set(-10));
  if (v_any(far)) r = v_sel(far, -x / v_poly(v_set(1) / (x * x), mills_asymptotic, 23), r);
  return r;
}

VF vd v_d_ndtri(vd p, bool f64) {
  vd y = v_ndtri(p, f64);
  return v_set(SQRT_2PI) * v_exp(v_set(0.5) * y * y);
}

SP_VKERNELS(vk_d_log_ndtr, v_d_log_ndtr)
SP_VKERNELS(vk_d_ndtri, v_d_ndtri)


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

typedef struct sp_vkernel {
  void (*f64)(const double *x, double *y, int64_t n);
  void (*f32)(const float *x, float *y, int64_t n);
} sp_vkernel;

#define VK(name) {name##_f64, name##_f32}
static const sp_vkernel sp_vkernels[SP_COUNT] = {
    [PT_SP_LGAMMA] = VK(vk_lgamma),     [PT_SP_DIGAMMA] = VK(vk_digamma),
    [PT_SP_I0] = VK(vk_i0),             [PT_SP_I0E] = VK(vk_i0e),
    [PT_SP_I1] = VK(vk_i1),             [PT_SP_I1E] = VK(vk_i1e),
    [PT_SP_NDTR] = VK(vk_ndtr),         [PT_SP_LOG_NDTR] = VK(vk_log_ndtr),
    [PT_SP_NDTRI] = VK(vk_ndtri),       [PT_SP_ENTR] = VK(vk_entr),
    [SP_D_LOG_NDTR] = VK(vk_d_log_ndtr), [SP_D_NDTRI] = VK(vk_d_ndtri),
};

/* op's vector kernels (op < SP_COUNT), NULL where it has none or the CPU lacks AVX2 / FMA */
static const sp_vkernel *sp_vkernel_of(int op) {
  if (!sp_vkernels[op].f64 || !simd_f8()) return NULL;
  return &sp_vkernels[op];
}

/* f(x) on one lane of op's vector kernel, or the scalar form */
static double sf_eval(int op, double (*scalar)(double), double x) {
  const sp_vkernel *vk = sp_vkernel_of(op);
  if (!vk) return scalar(x);
  double y;
  vk->f64(&x, &y, 1);
  return y;
}

double pt_sf_lgamma(double x) { return sf_eval(PT_SP_LGAMMA, sf_lgamma, x); }
double pt_sf_digamma(double x) { return sf_eval(PT_SP_DIGAMMA, sf_digamma, x); }
double pt_sf_i0(double x) { return sf_eval(PT_SP_I0, sf_i0, x); }
double pt_sf_i0e(double x) { return sf_eval(PT_SP_I0E, sf_i0e, x); }
double pt_sf_i1(double x) { return sf_eval(PT_SP_I1, sf_i1, x); }
double pt_sf_i1e(double x) { return sf_eval(PT_SP_I1E, sf_i1e, x); }
double pt_sf_ndtr(double x) { return sf_eval(PT_SP_NDTR, sf_ndtr, x); }
double pt_sf_log_ndtr(double x) { return sf_eval(PT_SP_LOG_NDTR, sf_log_ndtr, x); }
double pt_sf_ndtri(double p) { return sf_eval(PT_SP_NDTRI, sf_ndtri, p); }
double pt_sf_entr(double x) { return sf_eval(PT_SP_ENTR, sf_entr, x); }

typedef struct sp_param {
  int64_t k;          /* polygamma's n, mvlgamma's p */
  const double *coef; /* polygamma: cot_derivative_coefs(n) or NULL */
} sp_param;

typedef double (*sp_fn)(double x, const sp_param *p);

static double f_lgamma(double x, const sp_param *p) { (void)p; return sf_lgamma(x); }
static double f_digamma(double x, const sp_param *p) { (void)p; return sf_digamma(x); }
static double f_polygamma(double x, const sp_param *p) { return polygamma_impl(p->k, x, p->coef); }
static double f_i0(double x, const sp_param *p) { (void)p; return sf_i0(x); }
static double f_i0e(double x, const sp_param *p) { (void)p; return sf_i0e(x); }
static double f_i1(double x, const sp_param *p) { (void)p; return sf_i1(x); }
static double f_i1e(double x, const sp_param *p) { (void)p; return sf_i1e(x); }
static double f_ndtr(double x, const sp_param *p) { (void)p; return sf_ndtr(x); }
static double f_log_ndtr(double x, const sp_param *p) { (void)p; return sf_log_ndtr(x); }
static double f_ndtri(double x, const sp_param *p) { (void)p; return sf_ndtri(x); }
static double f_entr(double x, const sp_param *p) { (void)p; return sf_entr(x); }
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
  const sp_vkernel *vk; /* the vector kernels, when op has them (f unused then) */
  bool shifted_sum;     /* mvlgamma and its derivative: c + sum_{i<k} vk(x - i/2) */
  double c;
  const void *x;
  void *o;
  bool f32;
} sp_job;

/* mvlgamma (lgamma's kernel) or its derivative (digamma's) over [b, e), a block at a time: the
 * same terms in the same order as mvlgamma() on lanes of the kernel, so p = 1 is lgamma */
static void sp_shifted_sum(const sp_job *j, int64_t b, int64_t e) {
  enum { BLOCK = 256 };
  double xs[BLOCK], ys[BLOCK], acc[BLOCK];
  for (int64_t s = b; s < e; s += BLOCK) {
    int64_t n = e - s < BLOCK ? e - s : BLOCK;
    for (int64_t t = 0; t < n; t++) acc[t] = j->c;
    for (int64_t i = 0; i < j->p->k; i++) {
      for (int64_t t = 0; t < n; t++) {
        double v = j->f32 ? (double)((const float *)j->x)[s + t] : ((const double *)j->x)[s + t];
        xs[t] = v - 0.5 * (double)i;
      }
      j->vk->f64(xs, ys, n);
      for (int64_t t = 0; t < n; t++) acc[t] += ys[t];
    }
    for (int64_t t = 0; t < n; t++) {
      if (j->f32) ((float *)j->o)[s + t] = (float)acc[t];
      else ((double *)j->o)[s + t] = acc[t];
    }
  }
}

static void sp_chunk(void *arg, int64_t b, int64_t e, int tid) {
  (void)tid;
  const sp_job *j = arg;
  if (j->shifted_sum) {
    sp_shifted_sum(j, b, e);
  } else if (j->vk) {
    if (j->f32) j->vk->f32((const float *)j->x + b, (float *)j->o + b, e - b);
    else j->vk->f64((const double *)j->x + b, (double *)j->o + b, e - b);
  } else if (j->f32) {
    const float *x = j->x;
    float *o = j->o;
    for (int64_t i = b; i < e; i++) o[i] = (float)j->f((double)x[i], j->p);
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

/* out = op(x) without autograd: a new contiguous tensor of x's floating dtype (for
 * integers: the default float dtype) */
static pt_status special_forward(pt_ctx *ctx, int op, pt_tensor *x, int64_t k, pt_tensor **out) {
  pt_dtype dt = pt_dtype_is_floating(x->dtype) ? x->dtype : pt_default_float();
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
    /* polygamma(0, x) is digamma: the same kernel, the same numbers */
    int vop = op == PT_SP_POLYGAMMA && k == 0 ? PT_SP_DIGAMMA
              : op == PT_SP_MVLGAMMA          ? PT_SP_LGAMMA
              : op == SP_D_MVLGAMMA           ? PT_SP_DIGAMMA
                                              : op;
    const sp_vkernel *vk = sp_vkernel_of(vop);
    bool sum = vk && (op == PT_SP_MVLGAMMA || op == SP_D_MVLGAMMA);
    sp_job j = {sp_fns[op], &p, vk, sum, op == PT_SP_MVLGAMMA ? mvlgamma_const(k) : 0.0,
                pt_tensor_data(xx), pt_tensor_data(o), dt == PT_FLOAT32};
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
  if (!pt_dtype_is_floating(self->dtype)) return cast_error(ctx, name, pt_default_float(), self->dtype);
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
  B_ZETA,         /* Hurwitz zeta(x, q) */
  B_ERFCX,        /* erfcx(x), y ignored */
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
BK(zeta_f, float, float, (float)pt_sf_zeta((double)x, (double)y))
BK(zeta_d, double, double, pt_sf_zeta(x, y))
/* erfcx runs as a binary op with a number it ignores (the engine's dtypes, threads, layouts) */
BK(erfcx_f, float, float, ((void)y, (float)pt_sf_erfcx((double)x)))
BK(erfcx_d, double, double, ((void)y, pt_sf_erfcx(x)))

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
    [B_ZETA] = ROW_FLOAT(zeta),
    [B_ERFCX] = ROW_FLOAT(erfcx),
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
    *cdt = pt_dtype_is_floating(res) ? res : pt_default_float();
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

/* *out = r = op(x, y) of xlog1py or zeta, recorded when a tensor operand requires grad: the
 * tensor operands are the node's inputs and saved tensors, ints[0] the layout (0: both tensors,
 * 1: y a number, 2: x a number), scalars[0] the number. r is released on failure. */
static pt_status record_special_binary(pt_ctx *ctx, const char *name, pt_backward_fn backward,
                                       bool differentiable, sopnd x, sopnd y, pt_tensor *r,
                                       pt_tensor **out) {
  pt_tensor *inputs[2];
  int n = 0, layout = x.t && y.t ? 0 : (x.t ? 1 : 2);
  if (x.t) inputs[n++] = x.t;
  if (y.t) inputs[n++] = y.t;
  bool req = false;
  for (int i = 0; i < n; i++) req = req || inputs[i]->requires_grad;
  pt_node *node = NULL;
  pt_status st;
  if (ctx->grad_enabled && req && pt_dtype_is_floating(r->dtype) &&
      (st = pt_autograd_record(ctx, r, name, backward, n, inputs, &node))) {
    pt_tensor_release(r);
    return st;
  }
  if (node) {
    node->ints[0] = layout;
    node->n_ints = 1;
    node->scalars[0] = layout == 1 ? y.s : (layout == 2 ? x.s : 0);
    for (int i = 0; i < n; i++) pt_node_save(node, i, pt_tensor_retain(inputs[i]));
    node->backward_differentiable = differentiable;
  }
  *out = r;
  return PT_OK;
}

static pt_status xlog1py_op(pt_ctx *ctx, sopnd x, sopnd y, pt_tensor **out) {
  pt_tensor *r = NULL;
  pt_status st = binary_forward(ctx, "xlog1py", B_XLOG1PY, x, y, &r);
  if (st) return st;
  return record_special_binary(ctx, "SpecialXlog1PyBackward", xlog1py_backward, false, x, y, r, out);
}

pt_status pt_xlog1py(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out) {
  return xlog1py_op(ctx, OT(a), OT(b), out);
}

pt_status pt_xlog1py_number(pt_ctx *ctx, pt_tensor *a, pt_number s, bool reversed, pt_tensor **out) {
  return reversed ? xlog1py_op(ctx, ON(s), OT(a), out) : xlog1py_op(ctx, OT(a), ON(s), out);
}

/* --- erfcx and zeta with autograd: their backwards are written with the public ops (so a
 * create_graph pass runs them as their own formulas: backward_differentiable) --- */

#define M_2_SQRTPI_ 1.1283791670955125739 /* 2 / sqrt(pi) */

/* erfcx'(x) = 2 x erfcx(x) - 2 / sqrt(pi); saved[0]: x */
static pt_status erfcx_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  if (!node->needs_grad[0]) return PT_OK;
  pt_tensor *x = node->saved[0], *e = NULL, *xe = NULL, *d = NULL, *r = NULL;
  pt_status st = pt_erfcx(ctx, x, &e);
  if (!st) st = pt_mul(ctx, x, e, &xe);
  if (!st) st = pt_mul_scalar(ctx, xe, 2.0, &d);
  pt_tensor_release(xe);
  xe = NULL;
  if (!st) st = pt_add_scalar(ctx, d, -M_2_SQRTPI_, &xe);
  if (!st) st = pt_mul(ctx, g, xe, &r);
  pt_tensor_release(e);
  pt_tensor_release(xe);
  pt_tensor_release(d);
  if (st) return st;
  gin[0] = r;
  return PT_OK;
}

pt_status pt_erfcx(pt_ctx *ctx, pt_tensor *x, pt_tensor **out) {
  pt_tensor *r = NULL;
  pt_status st = binary_forward(ctx, "erfcx", B_ERFCX, OT(x), ON(pt_number_int(0)), &r);
  if (st) return st;
  pt_node *node = NULL;
  if (ctx->grad_enabled && x->requires_grad &&
      (st = pt_autograd_record(ctx, r, "SpecialErfcxBackward", erfcx_backward, 1, &x, &node))) {
    pt_tensor_release(r);
    return st;
  }
  if (node) {
    pt_node_save(node, 0, pt_tensor_retain(x));
    node->backward_differentiable = true;
  }
  *out = r;
  return PT_OK;
}

/* g summed over the dims t was broadcast along and in t's dtype, with the recorded ops (new
 * reference; g itself when nothing is to do): a create_graph pass keeps its history */
static pt_status sum_to_like(pt_ctx *ctx, pt_tensor *g, const pt_tensor *t, pt_tensor **out) {
  pt_tensor *r = pt_tensor_retain(g), *n = NULL;
  pt_status st = PT_OK;
  while (!st && r->ndim > t->ndim) { /* leading dims t does not have */
    if (!(st = pt_sum(ctx, r, 0, false, &n))) {
      pt_tensor_release(r);
      r = n;
    }
  }
  for (int d = 0; !st && d < t->ndim; d++) {
    if (t->shape[d] != 1 || r->shape[d] == 1) continue;
    if (!(st = pt_sum(ctx, r, d, true, &n))) {
      pt_tensor_release(r);
      r = n;
    }
  }
  if (!st && r->dtype != t->dtype && !(st = pt_to_dtype(ctx, r, t->dtype, &n))) {
    pt_tensor_release(r);
    r = n;
  }
  if (st) {
    pt_tensor_release(r);
    return st;
  }
  *out = r;
  return PT_OK;
}

/* zeta's gradient: none for x (PyTorch: not implemented), -x zeta(x + 1, q) for q. ints[0]:
 * layout (0 both tensors, 1 x a tensor and q the number, 2 x the number and q a tensor),
 * scalars[0]: the number; saved: the tensor operands */
static pt_status zeta_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  int layout = (int)node->ints[0];
  int ix = layout == 2 ? -1 : 0, iq = layout == 0 ? 1 : (layout == 2 ? 0 : -1);
  if (ix >= 0 && node->needs_grad[ix])
    return pt_fail(ctx, PT_EARG, "zeta: the derivative with respect to x (input) is not implemented (as torch)");
  if (iq < 0 || !node->needs_grad[iq]) return PT_OK;
  pt_tensor *q = node->saved[iq], *x1 = NULL, *z = NULL, *xz = NULL, *d = NULL, *r = NULL;
  pt_status st;
  if (layout == 2) { /* -x zeta(x + 1, q) with the number x */
    double x = node->scalars[0];
    st = pt_zeta_number(ctx, q, pt_number_float(x + 1), true, &z);
    if (!st) st = pt_mul_scalar(ctx, z, -x, &d);
  } else {
    pt_tensor *x = node->saved[0];
    st = pt_add_scalar(ctx, x, 1.0, &x1);
    if (!st) st = pt_zeta(ctx, x1, q, &z);
    if (!st) st = pt_mul(ctx, x, z, &xz);
    if (!st) st = pt_mul_scalar(ctx, xz, -1.0, &d);
  }
  if (!st) st = pt_mul(ctx, g, d, &r);
  pt_tensor_release(x1);
  pt_tensor_release(z);
  pt_tensor_release(xz);
  pt_tensor_release(d);
  if (!st) st = sum_to_like(ctx, r, q, &gin[iq]);
  pt_tensor_release(r);
  return st;
}

static pt_status zeta_op(pt_ctx *ctx, sopnd x, sopnd q, pt_tensor **out) {
  pt_tensor *r = NULL;
  pt_status st = binary_forward(ctx, "zeta", B_ZETA, x, q, &r);
  if (st) return st;
  return record_special_binary(ctx, "SpecialZetaBackward", zeta_backward, true, x, q, r, out);
}

pt_status pt_zeta(pt_ctx *ctx, pt_tensor *x, pt_tensor *q, pt_tensor **out) {
  return zeta_op(ctx, OT(x), OT(q), out);
}

pt_status pt_zeta_number(pt_ctx *ctx, pt_tensor *a, pt_number s, bool reversed, pt_tensor **out) {
  return reversed ? zeta_op(ctx, ON(s), OT(a), out) : zeta_op(ctx, OT(a), ON(s), out);
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
