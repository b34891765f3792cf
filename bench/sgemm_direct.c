/* W4 reference: 2048x2048 sgemm through the library called directly (no partrain API), with
 * the same data layout and output allocation per call that pt.mm(a, b) gets: OpenBLAS's
 * cblas_sgemm, or with "onednn" oneDNN's dnnl_sgemm (what pt.mm runs when pt.sgemm_backend() is
 * "onednn"; its own OpenMP threads, one per core by default).
 * Prints `METRIC w4_openblas_direct_gflops <median> GFLOP/s` (or w4_onednn_direct_gflops).
 *   build/bench_sgemm_direct [n=2048] [reps=7] [openblas|onednn] */
#include <cblas.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 2048, reps = argc > 2 ? atoi(argv[2]) : 7;
  const char *lib = argc > 3 ? argv[3] : "openblas";
  bool onednn = strcmp(lib, "onednn") == 0;
  if (n <= 0 || reps < 5 || (!onednn && strcmp(lib, "openblas") != 0)) {
    fprintf(stderr, "usage: bench_sgemm_direct [n>0] [reps>=5] [openblas|onednn]\n");
    return 2;
  }
  typedef int (*dnnl_sgemm_fn)(char, char, int64_t, int64_t, int64_t, float, const float *, int64_t,
                               const float *, int64_t, float, float *, int64_t);
  dnnl_sgemm_fn dnnl_sgemm = NULL;
  if (onednn) {
    void *h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libdnnl.so.3", RTLD_NOW | RTLD_LOCAL);
    dnnl_sgemm = h ? (dnnl_sgemm_fn)dlsym(h, "dnnl_sgemm") : NULL;
    if (!dnnl_sgemm) {
      fprintf(stderr, "bench_sgemm_direct: oneDNN (libdnnl.so.2) is not installed\n");
      return 1;
    }
  }
  size_t bytes = (size_t)n * (size_t)n * sizeof(float);
  float *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes);
  if (!a || !b) return 1;
  unsigned s = 12345;
  for (size_t i = 0; i < (size_t)n * (size_t)n; i++) {
    s = s * 1103515245u + 12345u;
    a[i] = (float)((s >> 8) & 0xffff) / 65536.0f - 0.5f;
    s = s * 1103515245u + 12345u;
    b[i] = (float)((s >> 8) & 0xffff) / 65536.0f - 0.5f;
  }
  double *t = malloc((size_t)reps * sizeof *t), check = 0;
  for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
    double t0 = now();
    float *c = aligned_alloc(64, bytes); /* a fresh output each call, as the API does */
    if (!c) return 1;
    if (onednn)
      dnnl_sgemm('N', 'N', n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    double dt = now() - t0;
    check += c[0];
    free(c);
    if (r >= 0) t[r] = dt;
  }
  qsort(t, (size_t)reps, sizeof *t, cmp);
  double med = t[reps / 2], gflops = 2.0 * n * (double)n * n / med * 1e-9;
  printf("# sgemm %dx%d direct: median %.2f ms over %d runs (checksum %g)\n", n, n, med * 1e3, reps,
         check);
  printf("METRIC w4_%s_direct_gflops %.2f GFLOP/s\n", lib, gflops);
  free(t);
  free(a);
  free(b);
  return 0;
}
