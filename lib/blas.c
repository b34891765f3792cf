/* See blas.h. */
#include "blas.h"

#include "parallel.h"

#include <dlfcn.h>
#include <stdatomic.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SGEMV_AVX512 1 /* kernels built for AVX-512 whatever -march says, chosen at run time */
#endif
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

extern void openblas_set_num_threads(int n);
/* OpenBLAS's own pool (what its fork handler calls); weak: other BLAS builds lack it */
extern void blas_thread_shutdown_(void) __attribute__((weak));

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

/* partrain splits GEMMs over its own pool, so OpenBLAS's threads are never used; they spin after
 * start-up (~0.1 s of a second core, which slowed W3 by half when the two cores share a
 * physical one), so the pool is stopped. */
static void set_single_threaded(void) {
  openblas_set_num_threads(1);
  if (blas_thread_shutdown_) blas_thread_shutdown_();
}

void pt_blas_single_threaded(void) { pthread_once(&blas_once, set_single_threaded); }

/* float32 GEMMs run on oneDNN's sgemm when its library is installed (Debian's libdnnl2, the one
 * PyTorch uses): it picks its AVX-512 kernels from the CPU's feature flags, while OpenBLAS here
 * may be held to older kernels (OPENBLAS_CORETYPE), and it runs the MLP's products about twice
 * as fast on one thread. It is loaded on the first GEMM (start-up stays small), runs one OpenMP
 * thread per calling thread (partrain splits GEMMs itself, so no OpenMP pool ever starts), and
 * PARTRAIN_SGEMM=openblas keeps OpenBLAS. Without the library OpenBLAS runs everything. */
typedef int (*dnnl_sgemm_fn)(char transa, char transb, int64_t m, int64_t n, int64_t k,
                             float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                             float beta, float *c, int64_t ldc);
typedef void (*omp_set_num_threads_fn)(int n);

static pthread_once_t onednn_once = PTHREAD_ONCE_INIT;
static dnnl_sgemm_fn onednn_sgemm;
static omp_set_num_threads_fn onednn_omp_set_threads;
static _Thread_local bool onednn_thread_ready;

/* below this many multiply-adds OpenBLAS's lighter call wins (8x8x8: 0.07 vs 0.16 us) */
#define ONEDNN_MIN_FLOPS 4096

static void onednn_load(void) {
#ifdef PT_SANITIZER
  /* sanitizer builds check partrain's own code on OpenBLAS: LeakSanitizer's exit scan crashed
   * on the TLS of pool threads that had run oneDNN, and its JIT code is not instrumented */
  return;
#endif
  const char *choice = getenv("PARTRAIN_SGEMM");
  if (choice && strcmp(choice, "openblas") == 0) return;
  void *lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libdnnl.so.3", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return;
  dnnl_sgemm_fn sgemm = (dnnl_sgemm_fn)dlsym(lib, "dnnl_sgemm");
  /* found through the library's own dependencies (libgomp) */
  omp_set_num_threads_fn set_threads = (omp_set_num_threads_fn)dlsym(lib, "omp_set_num_threads");
  if (!sgemm || !set_threads) {
    dlclose(lib);
    return;
  }
  onednn_omp_set_threads = set_threads;
  onednn_sgemm = sgemm;
}

const char *pt_blas_sgemm_backend(void) {
  pthread_once(&onednn_once, onednn_load);
  return onednn_sgemm ? "onednn" : "openblas";
}

void pt_sgemm_serial(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k,
                     float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                     float beta, float *c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (lda < 1) lda = 1;
  if (ldb < 1) ldb = 1;
  if (ldc < 1) ldc = 1;
  if ((double)m * (double)n * (double)k >= ONEDNN_MIN_FLOPS) {
    pthread_once(&onednn_once, onednn_load);
    if (onednn_sgemm) {
      if (!onednn_thread_ready) {
        onednn_omp_set_threads(1); /* this thread's OpenMP setting only */
        onednn_thread_ready = true;
      }
      if (onednn_sgemm(ta == CblasNoTrans ? 'N' : 'T', tb == CblasNoTrans ? 'N' : 'T', m, n, k,
                       alpha, a, lda, b, ldb, beta, c, ldc) == 0)
        return;
      /* an argument oneDNN refuses (none partrain passes): OpenBLAS computes it instead */
    }
  }
  cblas_sgemm(CblasRowMajor, ta, tb, (blasint)m, (blasint)n, (blasint)k, alpha, a, (blasint)lda,
              b, (blasint)ldb, beta, c, (blasint)ldc);
}

/* below this many multiply-adds a split costs more than it saves */
#define SPLIT_MIN_FLOPS (1 << 20)

static void gemm_serial(pt_dtype dt, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n,
                        int64_t k, double alpha, const void *a, int64_t lda, const void *b,
                        int64_t ldb, double beta, void *c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (lda < 1) lda = 1;
  if (ldb < 1) ldb = 1;
  if (ldc < 1) ldc = 1;
  if (dt == PT_FLOAT32)
    pt_sgemm_serial(ta, tb, m, n, k, (float)alpha, a, lda, b, ldb, (float)beta, c, ldc);
  else
    cblas_dgemm(CblasRowMajor, ta, tb, (blasint)m, (blasint)n, (blasint)k, alpha, a, (blasint)lda,
                b, (blasint)ldb, beta, c, (blasint)ldc);
}

typedef struct gemm_job {
  pt_dtype dt;
  CBLAS_TRANSPOSE ta, tb;
  int64_t m, n, k, lda, ldb, ldc, block;
  double alpha, beta;
  const char *a, *b;
  char *c;
  bool split_rows;
} gemm_job;

static void gemm_chunk(void *arg, int64_t begin, int64_t end, int tid) {
  (void)tid;
  const gemm_job *j = arg;
  size_t es = pt_dtype_size(j->dt);
  int64_t lo = begin * j->block, hi = end * j->block;
  if (j->split_rows) {
    if (hi > j->m) hi = j->m;
    /* rows of C come from rows of op(A): row i of A, or column i when A is transposed */
    const char *a = j->a + (size_t)(j->ta == CblasNoTrans ? lo * j->lda : lo) * es;
    gemm_serial(j->dt, j->ta, j->tb, hi - lo, j->n, j->k, j->alpha, a, j->lda, j->b, j->ldb,
                j->beta, j->c + (size_t)(lo * j->ldc) * es, j->ldc);
  } else {
    if (hi > j->n) hi = j->n;
    const char *b = j->b + (size_t)(j->tb == CblasNoTrans ? lo : lo * j->ldb) * es;
    gemm_serial(j->dt, j->ta, j->tb, j->m, hi - lo, j->k, j->alpha, j->a, j->lda, b, j->ldb,
                j->beta, j->c + (size_t)lo * es, j->ldc);
  }
}

void pt_gemm(const pt_ctx *ctx, pt_dtype dt, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m,
             int64_t n, int64_t k, double alpha, const void *a, int64_t lda, const void *b,
             int64_t ldb, double beta, void *c, int64_t ldc) {
  int threads = pt_parallel_threads(ctx);
  if (threads < 2 || (double)m * (double)n * (double)k < SPLIT_MIN_FLOPS) {
    gemm_serial(dt, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  gemm_job j = {dt, ta, tb, m, n, k, lda < 1 ? 1 : lda, ldb < 1 ? 1 : ldb, ldc < 1 ? 1 : ldc, 0,
                alpha, beta, a, b, c, m >= n};
  /* blocks in multiples of 16 rows/columns keep the kernels' panels whole */
  int64_t len = j.split_rows ? m : n;
  int64_t per = (len + threads - 1) / threads;
  j.block = (per + 15) / 16 * 16;
  int64_t nblocks = (len + j.block - 1) / j.block;
  if (nblocks < 2) {
    gemm_serial(dt, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  pt_parallel_for(ctx, nblocks, 1, gemm_chunk, &j);
}

/* --- pt_sgemv_rows ---
 * Each (row, input) pair has one accumulator of 16 lanes: lane l sums w[r,c] * x[c] for
 * c = l, l + 16, ... in order with fused multiply-adds (a last partial block padded with zeros),
 * then the lanes are summed by one fixed reduction. Kernels differ only in how many rows and
 * inputs share a pass over the weight, never in that arithmetic. The AVX-512 kernels run where
 * the CPU has AVX-512 (chosen once per process, so a process always gets the same numbers),
 * the plain-C ones elsewhere (the same scheme, rounded differently: without FMA). */
enum { SGEMV_LANES = 16 };

static inline void sgemv_store(float *y, float v, bool beta) { *y = beta ? *y + v : v; }

#if defined(SGEMV_AVX512)
#define SGEMV_TARGET __attribute__((target("avx512f")))

/* the last cols % 16 elements of p, zero in the other lanes (a masked load: the lanes past the
 * end are not read) */
SGEMV_TARGET static inline __m512 sgemv_tail(const float *p, int64_t left) {
  return _mm512_maskz_loadu_ps((__mmask16)((1u << left) - 1), p);
}

/* Keeps a block in a register: left to itself GCC folds its load into every multiply-add that
 * uses it (an input block once per row, a weight block once per input), and the two-input
 * kernel ran at 8.5 us for a 128x784 block instead of 5.2 us (a harness on this machine) */
#define SGEMV_IN_REGISTER(v) __asm__("" : "+v"(v))

/* R rows of w (from row r) times one input */
#define SGEMV_KERNEL_1(R)                                                                        \
  SGEMV_TARGET static void sgemv_##R##x1(const float *w, int64_t cols, int64_t r, const float *x, float *y,   \
                            bool beta) {                                                         \
    __m512 a[R];                                                                                 \
    const float *wr = w + r * cols;                                                              \
    for (int i = 0; i < R; i++) a[i] = _mm512_setzero_ps();                                      \
    int64_t c = 0;                                                                               \
    for (; c + SGEMV_LANES <= cols; c += SGEMV_LANES) {                                          \
      __m512 xv = _mm512_loadu_ps(x + c);                                                        \
      SGEMV_IN_REGISTER(xv);                                                                     \
      for (int i = 0; i < R; i++) a[i] = _mm512_fmadd_ps(_mm512_loadu_ps(wr + i * cols + c), xv, a[i]); \
    }                                                                                            \
    if (c < cols) {                                                                              \
      __m512 xv = sgemv_tail(x + c, cols - c);                                                   \
      for (int i = 0; i < R; i++) a[i] = _mm512_fmadd_ps(sgemv_tail(wr + i * cols + c, cols - c), xv, a[i]); \
    }                                                                                            \
    for (int i = 0; i < R; i++) sgemv_store(y + r + i, _mm512_reduce_add_ps(a[i]), beta);        \
  }

/* R rows of w (from row r) times two inputs, each weight block loaded once */
#define SGEMV_KERNEL_2(R)                                                                        \
  SGEMV_TARGET static void sgemv_##R##x2(const float *w, int64_t cols, int64_t r, const float *x0,            \
                            const float *x1, float *y0, float *y1, bool beta0, bool beta1) {     \
    __m512 a[R], b[R];                                                                           \
    const float *wr = w + r * cols;                                                              \
    for (int i = 0; i < R; i++) a[i] = b[i] = _mm512_setzero_ps();                               \
    int64_t c = 0;                                                                               \
    for (; c + SGEMV_LANES <= cols; c += SGEMV_LANES) {                                          \
      __m512 xv = _mm512_loadu_ps(x0 + c), zv = _mm512_loadu_ps(x1 + c);                         \
      SGEMV_IN_REGISTER(xv);                                                                     \
      SGEMV_IN_REGISTER(zv);                                                                     \
      for (int i = 0; i < R; i++) {                                                              \
        __m512 wv = _mm512_loadu_ps(wr + i * cols + c);                                          \
        SGEMV_IN_REGISTER(wv);                                                                   \
        a[i] = _mm512_fmadd_ps(wv, xv, a[i]);                                                    \
        b[i] = _mm512_fmadd_ps(wv, zv, b[i]);                                                    \
      }                                                                                          \
    }                                                                                            \
    if (c < cols) {                                                                              \
      __m512 xv = sgemv_tail(x0 + c, cols - c), zv = sgemv_tail(x1 + c, cols - c);               \
      for (int i = 0; i < R; i++) {                                                              \
        __m512 wv = sgemv_tail(wr + i * cols + c, cols - c);                                     \
        a[i] = _mm512_fmadd_ps(wv, xv, a[i]);                                                    \
        b[i] = _mm512_fmadd_ps(wv, zv, b[i]);                                                    \
      }                                                                                          \
    }                                                                                            \
    for (int i = 0; i < R; i++) {                                                                \
      sgemv_store(y0 + r + i, _mm512_reduce_add_ps(a[i]), beta0);                                \
      sgemv_store(y1 + r + i, _mm512_reduce_add_ps(b[i]), beta1);                                \
    }                                                                                            \
  }

SGEMV_KERNEL_1(4)
SGEMV_KERNEL_1(1)
SGEMV_KERNEL_2(4)
SGEMV_KERNEL_2(1)

SGEMV_TARGET static void sgemv_rows_avx512(const float *w, int64_t cols, int64_t r0, int64_t r1,
                                           const float *const *xs, float *const *ys,
                                           const bool *beta, int nx) {
  int i = 0;
  for (; i + 2 <= nx; i += 2) { /* inputs in pairs */
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) sgemv_4x2(w, cols, r, xs[i], xs[i + 1], ys[i], ys[i + 1], beta[i], beta[i + 1]);
    for (; r < r1; r++) sgemv_1x2(w, cols, r, xs[i], xs[i + 1], ys[i], ys[i + 1], beta[i], beta[i + 1]);
  }
  if (i < nx) {
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) sgemv_4x1(w, cols, r, xs[i], ys[i], beta[i]);
    for (; r < r1; r++) sgemv_1x1(w, cols, r, xs[i], ys[i], beta[i]);
  }
}
#endif

/* Without AVX-512: the same 16-lane scheme in plain C, one (row, input) pair at a time (the
 * compiler vectorises the 16 lanes; fmaf here would be a libm call per element without FMA
 * hardware, ~50x slower). */
void pt_sgemv_rows_portable(const float *w, int64_t cols, int64_t r0, int64_t r1,
                            const float *const *xs, float *const *ys, const bool *beta, int nx) {
  for (int i = 0; i < nx; i++)
    for (int64_t r = r0; r < r1; r++) {
      const float *wr = w + r * cols, *x = xs[i];
      float lane[SGEMV_LANES] = {0};
      int64_t c = 0;
      for (; c + SGEMV_LANES <= cols; c += SGEMV_LANES)
        for (int l = 0; l < SGEMV_LANES; l++) lane[l] += wr[c + l] * x[c + l];
      for (int l = 0; c + l < cols; l++) lane[l] += wr[c + l] * x[c + l];
      for (int h = SGEMV_LANES / 2; h >= 1; h /= 2)
        for (int l = 0; l < h; l++) lane[l] += lane[l + h];
      sgemv_store(&ys[i][r], lane[0], beta[i]);
    }
}

void pt_sgemv_rows(const float *w, int64_t cols, int64_t r0, int64_t r1, const float *const *xs,
                   float *const *ys, const bool *beta, int nx) {
#if defined(SGEMV_AVX512)
  static atomic_int avx512; /* 0: not asked yet, 1: yes, 2: no */
  int has = atomic_load_explicit(&avx512, memory_order_relaxed);
  if (!has) {
    has = __builtin_cpu_supports("avx512f") ? 1 : 2;
    atomic_store_explicit(&avx512, has, memory_order_relaxed);
  }
  if (has == 1) {
    sgemv_rows_avx512(w, cols, r0, r1, xs, ys, beta, nx);
    return;
  }
#endif
  pt_sgemv_rows_portable(w, cols, r0, r1, xs, ys, beta, nx);
}
