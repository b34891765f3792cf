/* What W1's matrix products alone cost on this machine: the eight GEMMs of one training step of
 * the MLP 784-256-128-10 at batch 64 (three forward, three weight gradients, two input
 * gradients; the first layer's input gradient is never needed), 938 steps = one epoch, through
 * pt_gemm exactly as Linear runs them (same shapes, transposes and thread split), on buffers
 * allocated once: no Lua, no autograd, no activations, no optimizer. W1 cannot take less than
 * this. Prints the median of the rounds as METRIC w1_gemm_floor_s <seconds> s.
 *   bench_w1_gemm_floor [rounds=5] */
#include "blas.h"
#include "parallel.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { B = 64, IN = 784, H1 = 256, H2 = 128, OUT = 10, STEPS = 938 };

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float *filled(size_t n) {
  float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
  if (!p) exit(1);
  for (size_t i = 0; i < n; i++) p[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  return p;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 5;
  if (rounds < 1 || rounds > 100) {
    fprintf(stderr, "usage: bench_w1_gemm_floor [rounds 1..100]\n");
    return 2;
  }
  pt_blas_single_threaded();
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  float *x = filled(B * IN), *w1 = filled(H1 * IN), *w2 = filled(H2 * H1), *w3 = filled(OUT * H2);
  float *h1 = filled(B * H1), *h2 = filled(B * H2), *h3 = filled(B * OUT);
  float *g1 = filled(B * H1), *g2 = filled(B * H2), *g3 = filled(B * OUT);
  float *dw1 = filled(H1 * IN), *dw2 = filled(H2 * H1), *dw3 = filled(OUT * H2);
  float *dx2 = filled(B * H1), *dx3 = filled(B * H2);
  double *t = calloc((size_t)rounds, sizeof *t);
  if (!t) return 1;
  for (int r = 0; r < rounds; r++) {
    double t0 = now();
    for (int s = 0; s < STEPS; s++) {
      /* forward: y = x W^T */
      pt_gemm(&ctx, PT_FLOAT32, CblasNoTrans, CblasTrans, B, H1, IN, 1, x, IN, w1, IN, 0, h1, H1);
      pt_gemm(&ctx, PT_FLOAT32, CblasNoTrans, CblasTrans, B, H2, H1, 1, h1, H1, w2, H1, 0, h2, H2);
      pt_gemm(&ctx, PT_FLOAT32, CblasNoTrans, CblasTrans, B, OUT, H2, 1, h2, H2, w3, H2, 0, h3, OUT);
      /* backward: dW = g^T x_in, dx = g W */
      pt_gemm(&ctx, PT_FLOAT32, CblasTrans, CblasNoTrans, OUT, H2, B, 1, g3, OUT, h2, H2, 0, dw3, H2);
      pt_gemm(&ctx, PT_FLOAT32, CblasNoTrans, CblasNoTrans, B, H2, OUT, 1, g3, OUT, w3, H2, 0, dx3, H2);
      pt_gemm(&ctx, PT_FLOAT32, CblasTrans, CblasNoTrans, H2, H1, B, 1, g2, H2, h1, H1, 0, dw2, H1);
      pt_gemm(&ctx, PT_FLOAT32, CblasNoTrans, CblasNoTrans, B, H1, H2, 1, g2, H2, w2, H1, 0, dx2, H1);
      pt_gemm(&ctx, PT_FLOAT32, CblasTrans, CblasNoTrans, H1, IN, B, 1, g1, H1, x, IN, 0, dw1, IN);
    }
    t[r] = now() - t0;
  }
  qsort(t, (size_t)rounds, sizeof *t, cmp);
  printf("METRIC w1_gemm_floor_s %.4f s\n", t[(rounds - 1) / 2]);
  fprintf(stderr, "w1 gemm floor: %d threads, rounds %.3f .. %.3f s\n", pt_parallel_threads(&ctx), t[0],
          t[rounds - 1]);
  return 0;
}
