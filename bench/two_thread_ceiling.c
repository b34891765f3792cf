/* What 2 threads can give on this machine for W2's memory pattern, with no partrain and no
 * synchronisation at all: each thread owns a 256x784 float32 weight matrix (W2's first layer,
 * 800 KB: most of a 1 MB L2) and repeats "y = W x (sgemv), then W -= a g x^T" (a forward and a
 * rank-1 SGD step), the two passes over W of every per-sample step. Rounds with 1 and 2 threads
 * alternate; prints the medians and METRIC w8_ceiling <2-thread rate / 1-thread rate> x, the
 * speed-up W8 cannot beat on this machine however little par_by_sample adds.
 *   bench_two_thread_ceiling [rounds] */
#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ROWS = 256, COLS = 784, STEPS = 20000 };

extern void openblas_set_num_threads(int n);

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct worker {
  pthread_t thread;
  float *w, *x, *y;
  float sink;
} worker;

static void *run_steps(void *arg) {
  worker *k = arg;
  for (int s = 0; s < STEPS; s++) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, ROWS, COLS, 1.0f, k->w, COLS, k->x, 1, 0.0f, k->y, 1);
    for (int r = 0; r < ROWS; r++) {
      float g = k->y[r] > 0 ? -1e-6f * k->y[r] : 0.0f; /* a ReLU's dead rows take no update */
      if (g == 0) continue;
      float *row = k->w + (size_t)r * COLS;
      for (int c = 0; c < COLS; c++) row[c] += g * k->x[c];
    }
    k->x[s % COLS] += 1e-3f * k->y[s % ROWS]; /* the next sample differs */
  }
  k->sink = k->y[0];
  return NULL;
}

/* steps per second of n threads together */
static double round_rate(worker *ws, int n) {
  double t0 = now();
  for (int i = 1; i < n; i++)
    if (pthread_create(&ws[i].thread, NULL, run_steps, &ws[i]) != 0) return 0;
  run_steps(&ws[0]);
  for (int i = 1; i < n; i++) pthread_join(ws[i].thread, NULL);
  return n * STEPS / (now() - t0);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 5;
  if (rounds < 1 || rounds > 100) rounds = 5;
  openblas_set_num_threads(1);
  worker ws[2];
  memset(ws, 0, sizeof ws);
  for (int i = 0; i < 2; i++) {
    ws[i].w = malloc(sizeof(float) * ROWS * COLS);
    ws[i].x = malloc(sizeof(float) * COLS);
    ws[i].y = malloc(sizeof(float) * ROWS);
    if (!ws[i].w || !ws[i].x || !ws[i].y) return 1;
    for (int j = 0; j < ROWS * COLS; j++) ws[i].w[j] = 0.01f * (float)((j * 7 + i) % 13 - 6);
    for (int j = 0; j < COLS; j++) ws[i].x[j] = (float)(j % 10) / 10.0f;
  }
  double one[100], two[100];
  for (int r = 0; r < rounds; r++) {
    one[r] = round_rate(ws, 1);
    two[r] = round_rate(ws, 2);
  }
  qsort(one, (size_t)rounds, sizeof one[0], cmp_double);
  qsort(two, (size_t)rounds, sizeof two[0], cmp_double);
  double m1 = one[rounds / 2], m2 = two[rounds / 2];
  printf("1 thread %.0f steps/s, 2 threads %.0f steps/s (medians of %d rounds)\n", m1, m2, rounds);
  printf("METRIC w8_ceiling %.3f x\n", m2 / m1);
  for (int i = 0; i < 2; i++) {
    free(ws[i].w);
    free(ws[i].x);
    free(ws[i].y);
  }
  return 0;
}
