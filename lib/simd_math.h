/* Vectorised float32 math shared by the elementwise ops (lib/ops_elementwise.c) and the fused
 * activation layers (lib/nn_activation.c): SLEEF's 8-lane functions (within 1 ulp), run behind
 * a CPU check (simd_f8) whatever the build's own -march. Not public API. */
#ifndef PT_SIMD_MATH_H
#define PT_SIMD_MATH_H

#include <math.h>
#include <stdbool.h>

/* SLEEF's 8-lane functions are declared for AVX builds only (Debug builds have no -march) */
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include <immintrin.h>
#include <sleef.h>
#pragma GCC pop_options

static inline bool simd_f8(void) {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

#define V8 __attribute__((target("avx2,fma"))) static inline __m256
V8 v8_sigmoid(__m256 x) { /* 1 / (1 + exp(-x)) */
  __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}
V8 v8_sigmoidd(__m256 x) {
  __m256 s = v8_sigmoid(x);
  return _mm256_mul_ps(s, _mm256_sub_ps(_mm256_set1_ps(1.0f), s));
}
V8 v8_tanhd(__m256 x) {
  __m256 t = Sleef_tanhf8_u10avx2(x);
  return _mm256_fnmadd_ps(t, t, _mm256_set1_ps(1.0f));
}
V8 v8_gelu(__m256 x) { /* 0.5 x (1 + erf(x / sqrt 2)) */
  __m256 e = Sleef_erff8_u10avx2(_mm256_mul_ps(x, _mm256_set1_ps((float)M_SQRT1_2)));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}
V8 v8_gelud(__m256 x) { /* d/dx x Phi(x) = Phi(x) + x phi(x) */
  __m256 half = _mm256_set1_ps(0.5f);
  __m256 e = Sleef_erff8_u10avx2(_mm256_mul_ps(x, _mm256_set1_ps((float)M_SQRT1_2)));
  __m256 phi = Sleef_expf8_u10avx2(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(-0.5f), x), x));
  __m256 a = _mm256_mul_ps(half, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  return _mm256_add_ps(a, _mm256_mul_ps(_mm256_mul_ps(x, phi), _mm256_set1_ps((float)(0.5 * M_2_SQRTPI * M_SQRT1_2))));
}
#undef V8

#endif
