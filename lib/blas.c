/* See blas.h. */
#include "blas.h"

#include "parallel.h"

#include <pthread.h>

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
    cblas_sgemm(CblasRowMajor, ta, tb, (blasint)m, (blasint)n, (blasint)k, (float)alpha, a,
                (blasint)lda, b, (blasint)ldb, (float)beta, c, (blasint)ldc);
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
