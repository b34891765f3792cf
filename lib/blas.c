/* See blas.h. */
#include "blas.h"

#include "parallel.h"

#include <dlfcn.h>
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
