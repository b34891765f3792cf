/* Statistics of the normalisation layers (lib/nn.c's layer norm, lib/conv.c's batch norm),
 * shared by both: vectors of eight doubles and the one-pass moments of a run. Not public API. */
#ifndef PT_NORM_STATS_H
#define PT_NORM_STATS_H

#include "dispatch.h"
#include "pt_core.h"

#include <string.h>

/* Eight doubles in one vector: float32 data are widened on load, so sums run in double, 16
 * lanes at a time. */
typedef double nn_v8d __attribute__((vector_size(64)));
typedef float nn_v8f __attribute__((vector_size(32)));

static inline void nn_ld8_f32(nn_v8d *d, const float *p) {
  nn_v8f f;
  memcpy(&f, p, sizeof f);
  *d = __builtin_convertvector(f, nn_v8d);
}
static inline void nn_ld8_f64(nn_v8d *d, const double *p) { memcpy(d, p, sizeof *d); }
static inline void nn_st8_f32(float *p, const nn_v8d *v) {
  nn_v8f f = __builtin_convertvector(*v, nn_v8f);
  memcpy(p, &f, sizeof f);
}
static inline void nn_st8_f64(double *p, const nn_v8d *v) { memcpy(p, v, sizeof *v); }
/* p[0..8) += v rounded to p's type (the sum in that type, as the engine's accumulation) */
static inline void nn_add8_f32(float *p, const nn_v8d *v) {
  nn_v8f f = __builtin_convertvector(*v, nn_v8f), o;
  memcpy(&o, p, sizeof o);
  o += f;
  memcpy(p, &o, sizeof o);
}
static inline void nn_add8_f64(double *p, const nn_v8d *v) {
  nn_v8d o;
  memcpy(&o, p, sizeof o);
  o += *v;
  memcpy(p, &o, sizeof o);
}
/* 8 elements at p (float or double) as doubles, and back */
#define NN_LD8(d, p) _Generic((p), const float *: nn_ld8_f32, const double *: nn_ld8_f64)(&(d), (p))
#define NN_ST8(p, v) _Generic((p), float *: nn_st8_f32, double *: nn_st8_f64)((p), &(v))
#define NN_ADD8(p, v) _Generic((p), float *: nn_add8_f32, double *: nn_add8_f64)((p), &(v))

/* the 16 lanes of a and b, added in a fixed order */
static inline double nn_hsum16(const nn_v8d *a, const nn_v8d *b) {
  nn_v8d s = *a + *b;
  return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

/* mean and sum of squared deviations of the n >= 1 elements at pv, in one pass: sums of d and d^2
 * for d = x - x[0] (exact in double for float32 x), then m2 = sum d^2 - (sum d)^2 / n. Shifting
 * by a value of the data keeps the cancellation small (relative error ~1e-16 times the squared
 * ratio of |mean - x[0]| to the standard deviation); a constant run gives exactly 0. */
static inline void nn_moments(pt_dtype dt, const void *pv, int64_t n, double *mean, double *m2) {
  PT_DISPATCH_FLOAT(dt, {
    const T *p = pv;
    double k = p[0];
    int64_t nv = n - n % 16, i;
    nn_v8d a0 = {0}, a1 = {0}, b0 = {0}, b1 = {0}, v0, v1;
    for (i = 0; i < nv; i += 16) {
      NN_LD8(v0, p + i);
      NN_LD8(v1, p + i + 8);
      v0 -= k;
      v1 -= k;
      a0 += v0;
      a1 += v1;
      b0 += v0 * v0;
      b1 += v1 * v1;
    }
    double s = nn_hsum16(&a0, &a1), q = nn_hsum16(&b0, &b1);
    for (; i < n; i++) {
      double d = p[i] - k;
      s += d;
      q += d * d;
    }
    q -= s * (s / (double)n);
    *mean = k + s / (double)n;
    *m2 = q > 0 ? q : 0;
  });
}

#endif
