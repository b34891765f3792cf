/* GEMM for every op (Linear, matmul, conv): one entry point that picks sgemm/dgemm and, for
 * products big enough to pay for it, splits the output across the intra-op threads
 * (lib/parallel.h), each block computed by single-threaded OpenBLAS. Mid-sized products like
 * a batch of 64 rows gain far more this way than from OpenBLAS's own threading. */
#ifndef PT_BLAS_H
#define PT_BLAS_H

#include <cblas.h>
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

/* "onednn" or "openblas": the library that runs float32 GEMMs in this process. */
const char *pt_blas_sgemm_backend(void);

#endif
