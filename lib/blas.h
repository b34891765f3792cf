/* GEMM for every op (Linear, matmul, conv): one entry point that picks sgemm/dgemm and, for
 * products big enough to pay for it, splits the output across the intra-op threads
 * (lib/parallel.h), each block computed by single-threaded OpenBLAS. Mid-sized products like
 * a batch of 64 rows gain far more this way than from OpenBLAS's own threading. */
#ifndef PT_BLAS_H
#define PT_BLAS_H

#include <cblas.h>
#include <stdbool.h>
#include <stdint.h>

#include "pt_core.h"

/* Put OpenBLAS in single-threaded mode, once per process (idempotent, thread-safe). partrain owns
 * the thread budget: BLAS never starts threads of its own, so its pool and ours (or dispatcher
 * workers) never compete. Called when the Lua module opens and when the intra-op pool starts. */
void pt_blas_single_threaded(void);

/* Row-major C{m,n} = alpha * op(A){m,k} op(B){k,n} + beta * C, dtype float32 or float64. */
void pt_gemm(const pt_ctx *ctx, pt_dtype dt, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m,
             int64_t n, int64_t k, double alpha, const void *a, int64_t lda, const void *b,
             int64_t ldb, double beta, void *c, int64_t ldc);

/* Row-major float32 GEMM on the calling thread alone: oneDNN's sgemm where it is installed,
 * otherwise OpenBLAS (see blas.c). For callers that split work themselves (conv, Winograd). */
void pt_sgemm_serial(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k,
                     float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                     float beta, float *c, int64_t ldc);

/* Rows r0..r1 of nx float32 matrix-vector products with one row-major weight w {rows, cols}:
 * ys[i][r] = w[r,:] . xs[i] (+ ys[i][r] when beta[i]), on the calling thread. Every (row,
 * input) pair is summed in one fixed order whatever r0, r1, nx and the other inputs, so any
 * split of the rows and any grouping of the inputs gives bitwise the numbers of one call over
 * all rows (par_by_sample's partitioned weights rely on it). With two inputs the weight is read
 * once for both (a 128x784 block: 5.2 us against two single-threaded OpenBLAS sgemv calls'
 * 8.2 us here), and one input runs a little faster than OpenBLAS's sgemv. */
void pt_sgemv_rows(const float *w, int64_t cols, int64_t r0, int64_t r1, const float *const *xs,
                   float *const *ys, const bool *beta, int nx);
/* pt_sgemv_rows's plain-C kernels, which it runs on CPUs without AVX-512 (exposed for the
 * tests: the same guarantees, other rounding). */
void pt_sgemv_rows_portable(const float *w, int64_t cols, int64_t r0, int64_t r1,
                            const float *const *xs, float *const *ys, const bool *beta, int nx);

/* "onednn" or "openblas": the library that runs float32 GEMMs in this process. */
const char *pt_blas_sgemm_backend(void);

#endif
