/* lib/blas.c: float32 GEMM (oneDNN where installed, OpenBLAS otherwise; ctest runs this file
 * once with each) matches a float64 reference for every transpose, odd and tiny sizes, strided
 * operands, alpha/beta, split over threads or not, and leaves C's padding alone. */
#include "../../lib/blas.h"
#include "../../lib/nn.h"
#include "../../lib/tensor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testing.h"

static uint64_t rng_state = 88172645463325252ull;
static float next_value(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (float)((double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* op(X)[i][j] of a row-major matrix X with leading dimension ld */
static double at(const float *x, int64_t ld, bool trans, int64_t i, int64_t j) {
  return trans ? x[j * ld + i] : x[i * ld + j];
}

static void check_product(const pt_ctx *ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                          float alpha, float beta) {
  /* leading dimensions wider than the matrices, so strides are honoured */
  int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 5;
  int64_t arows = ta ? k : m, brows = tb ? n : k;
  float *a = malloc(sizeof(float) * (size_t)(arows * lda + 1));
  float *b = malloc(sizeof(float) * (size_t)(brows * ldb + 1));
  float *c = malloc(sizeof(float) * (size_t)(m * ldc + 1));
  double *want = malloc(sizeof(double) * (size_t)(m * n + 1));
  for (int64_t i = 0; i < arows * lda; i++) a[i] = next_value();
  for (int64_t i = 0; i < brows * ldb; i++) b[i] = next_value();
  for (int64_t i = 0; i < m * ldc; i++) c[i] = next_value();
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t p = 0; p < k; p++) s += at(a, lda, ta, i, p) * at(b, ldb, tb, p, j);
      want[i * n + j] = alpha * s + beta * (double)c[i * ldc + j];
    }
  float pad = c[n]; /* the first element past row 0 (m, n >= 1 here) */
  pt_gemm(ctx, PT_FLOAT32, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
          k, alpha, a, lda, b, ldb, beta, c, ldc);
  double worst = 0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double d = fabs(c[i * ldc + j] - want[i * n + j]);
      if (d > worst) worst = d;
    }
  /* float32 accumulation of k terms of size <= 1 */
  double tol = 1e-5 * (double)(k + 2);
  if (worst > tol)
    fprintf(stderr, "gemm %c%c m=%lld n=%lld k=%lld alpha=%g beta=%g: error %g > %g\n",
            ta ? 'T' : 'N', tb ? 'T' : 'N', (long long)m, (long long)n, (long long)k, alpha, beta,
            worst, tol);
  CHECK(worst <= tol);
  CHECK(memcmp(&pad, &c[n], sizeof pad) == 0);
  free(a);
  free(b);
  free(c);
  free(want);
}

/* pt_nn_linear_rows over blocks whose ends are multiples of PT_LINEAR_ROWS_CHUNK rows (float32:
 * any rows), with several inputs per call, gives bitwise the numbers of the whole product
 * (par_by_sample's partitioned weights rely on it); float32's own kernel agrees with BLAS's
 * sgemv to rounding. */
static void check_linear_blocks(pt_ctx *ctx, pt_dtype dt, int64_t rows, int64_t cols) {
  enum { NX = 3 };
  int64_t shape[2] = {rows, cols};
  pt_tensor *w = NULL;
  CHECK(pt_tensor_empty(ctx, dt, 2, shape, &w) == PT_OK);
  if (!w) return;
  size_t es = pt_dtype_size(dt);
  for (int64_t i = 0; i < rows * cols; i++) pt_tensor_set_flat(w, i, next_value());
  void *x[NX], *whole[NX], *parts[NX];
  bool beta[NX] = {false, true, false};
  for (int i = 0; i < NX; i++) {
    x[i] = malloc(es * (size_t)(cols + 1));
    whole[i] = malloc(es * (size_t)(rows + 1));
    parts[i] = malloc(es * (size_t)(rows + 1));
    for (int64_t c = 0; c < cols; c++) {
      if (dt == PT_FLOAT32) ((float *)x[i])[c] = next_value();
      else ((double *)x[i])[c] = next_value();
    }
    for (int64_t r = 0; r < rows; r++) {
      if (dt == PT_FLOAT32) ((float *)whole[i])[r] = ((float *)parts[i])[r] = next_value();
      else ((double *)whole[i])[r] = ((double *)parts[i])[r] = next_value();
    }
  }
  for (int i = 0; i < NX; i++)
    pt_nn_linear_rows(w, 0, rows, (const void *const *)&x[i], &whole[i], &beta[i], 1);
  for (int64_t r0 = 0, b = 0; r0 < rows; b++) { /* blocks of 1, 3, 2, 1, 3, ... chunks */
    int64_t r1 = r0 + PT_LINEAR_ROWS_CHUNK * (1 + (b * 2) % 3);
    if (dt == PT_FLOAT32) r1 = r0 + 1 + (b * 37) % 61; /* blocks of 1 to 61 rows, anywhere */
    if (r1 > rows) r1 = rows;
    pt_nn_linear_rows(w, r0, r1, (const void *const *)x, parts, beta, NX);
    r0 = r1;
  }
  if (dt == PT_FLOAT32) { /* the whole product against BLAS (beta: the value before, saved) */
    for (int i = 0; i < NX; i++) {
      float *want = malloc(sizeof(float) * (size_t)(rows + 1)), *got = whole[i];
      for (int64_t r = 0; r < rows; r++) want[r] = 0;
      cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)rows, (blasint)cols, 1.0f,
                  pt_tensor_data(w), (blasint)cols, x[i], 1, 0.0f, want, 1);
      for (int64_t r = 0; r < rows && !beta[i]; r++) {
        float tol = 2e-6f * (float)cols;
        CHECK(fabsf(got[r] - want[r]) <= tol);
      }
      free(want);
    }
  }
  for (int i = 0; i < NX; i++) {
    CHECK(memcmp(whole[i], parts[i], es * (size_t)rows) == 0);
    free(x[i]);
    free(whole[i]);
    free(parts[i]);
  }
  pt_tensor_release(w);
}

/* pt_sgemv_rows_portable (the kernels of CPUs without AVX-512) keeps the same promise: any
 * block of rows and any grouping of inputs gives the whole single-input product's numbers. */
static void check_portable_rows(int64_t rows, int64_t cols) {
  enum { NX = 3 };
  float *w = malloc(sizeof(float) * (size_t)(rows * cols)), *x[NX], *whole[NX], *parts[NX];
  bool beta[NX] = {false, true, false};
  for (int64_t i = 0; i < rows * cols; i++) w[i] = next_value();
  for (int i = 0; i < NX; i++) {
    x[i] = malloc(sizeof(float) * (size_t)cols);
    whole[i] = malloc(sizeof(float) * (size_t)rows);
    parts[i] = malloc(sizeof(float) * (size_t)rows);
    for (int64_t c = 0; c < cols; c++) x[i][c] = next_value();
    for (int64_t r = 0; r < rows; r++) whole[i][r] = parts[i][r] = next_value();
  }
  for (int i = 0; i < NX; i++)
    pt_sgemv_rows_portable(w, cols, 0, rows, (const float *const *)&x[i], &whole[i], &beta[i], 1);
  for (int64_t r0 = 0, b = 0; r0 < rows; b++) {
    int64_t r1 = r0 + 1 + (b * 37) % 61;
    if (r1 > rows) r1 = rows;
    pt_sgemv_rows_portable(w, cols, r0, r1, (const float *const *)x, parts, beta, NX);
    r0 = r1;
  }
  float want[1024];
  cblas_sgemv(CblasRowMajor, CblasNoTrans, (blasint)rows, (blasint)cols, 1.0f, w, (blasint)cols,
              x[0], 1, 0.0f, want, 1);
  for (int64_t r = 0; r < rows; r++) CHECK(fabsf(whole[0][r] - want[r]) <= 2e-6f * (float)cols);
  for (int i = 0; i < NX; i++) {
    CHECK(memcmp(whole[i], parts[i], sizeof(float) * (size_t)rows) == 0);
    free(x[i]);
    free(whole[i]);
    free(parts[i]);
  }
  free(w);
}

int main(void) {
  pt_ctx lctx;
  pt_ctx_init(&lctx, 1);
  static const int64_t lin_shapes[][2] = {{256, 784}, {420, 40}, {700, 33}, {128, 256}, {100, 37}, {40, 5}};
  for (size_t s = 0; s < sizeof lin_shapes / sizeof lin_shapes[0]; s++) {
    check_linear_blocks(&lctx, PT_FLOAT32, lin_shapes[s][0], lin_shapes[s][1]);
    check_linear_blocks(&lctx, PT_FLOAT64, lin_shapes[s][0], lin_shapes[s][1]);
    check_portable_rows(lin_shapes[s][0], lin_shapes[s][1]);
  }
  printf("float32 GEMM backend: %s\n", pt_blas_sgemm_backend());
  const char *backend = pt_blas_sgemm_backend();
  CHECK(strcmp(backend, "onednn") == 0 || strcmp(backend, "openblas") == 0);
  const char *forced = getenv("PARTRAIN_SGEMM");
  if (forced && strcmp(forced, "openblas") == 0) CHECK(strcmp(backend, "openblas") == 0);

  static const int64_t shapes[][3] = {{1, 1, 1},    {2, 3, 4},    {8, 8, 8},     {17, 33, 65},
                                      {64, 10, 128}, {10, 128, 64}, {1, 256, 784}, {64, 256, 784},
                                      {129, 70, 31}, {5, 7, 0}};
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  for (int threads = 1; threads <= 2; threads++) {
    ctx.intra_threads = threads;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int t = 0; t < 4; t++) {
        check_product(&ctx, t & 1, t & 2, shapes[s][0], shapes[s][1], shapes[s][2], 1.0f, 0.0f);
        check_product(&ctx, t & 1, t & 2, shapes[s][0], shapes[s][1], shapes[s][2], -0.5f, 1.5f);
      }
  }
  /* the single-thread entry point conv and Winograd use */
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, -1, 2, 0.5f, 3}, c[4] = {0};
  pt_sgemm_serial(CblasNoTrans, CblasNoTrans, 2, 2, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2);
  CHECK(c[0] == 0.5f && c[1] == 13 && c[2] == 2 && c[3] == 28);
  return TEST_SUMMARY();
}
