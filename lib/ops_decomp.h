/* Linear algebra beyond products (PyTorch's torch.linalg), through LAPACK (LAPACKE), with
 * autograd.
 *
 * Every function takes float32 or float64 matrices (the last two dims; leading dims are a
 * batch) and returns the input's dtype. Each dtype is factorised in itself, as PyTorch does:
 * float32 by LAPACK's s* routines, float64 by the d* ones. float32 results have float32's
 * accuracy but need not be bitwise PyTorch's (some routines are called on A^T where PyTorch
 * calls them on A). Gradients of float32 inputs are computed in float64 from the saved float32
 * factors and returned as float32. Factors whose signs are not unique (Q of qr, eigenvectors,
 * singular vectors) are LAPACK's; compare invariants, not signs.
 *
 * Errors name the function, the shapes and, for a batch, the 1-based batch element:
 *   "linalg.solve: the matrix is singular (U[2,2] is zero), batch element 3".
 * A matrix containing NaN gives NaN results (such matrices are never handed to LAPACK); the
 * SVD-based functions (svd, svdvals, pinv, matrix_rank, lstsq with gelsd/gelss, nuc/2/-2
 * norms) fail on non-finite input, as PyTorch's svd does.
 *
 * Gradients (each a PyTorch 1.13 formula): solve, inv, det, slogdet/logdet, cholesky, qr
 * (mode reduced, or complete with rows <= columns), eigh/eigvalsh, svd/svdvals, lstsq's
 * solution, pinv, solve_triangular, vector and matrix norms, and (composed of differentiable
 * ops) matrix_power, multi_dot, cross, cholesky_solve, trace. Multi-output functions record
 * one node per output; their gradients add up in the input as PyTorch's single node does. */
#ifndef PT_OPS_DECOMP_H
#define PT_OPS_DECOMP_H

#include "tensor.h"

/* A X = B (left) or X A = B; B is a vector (or a batch of vectors) when it is 1-D or its shape
 * is A's without the last dim (left only), else (..., n, k); batch dims broadcast. */
pt_status pt_linalg_solve(pt_ctx *ctx, pt_tensor *A, pt_tensor *B, bool left, pt_tensor **out);
/* fname: the name in messages ("linalg.inv", "inverse", ...) */
pt_status pt_linalg_inv(pt_ctx *ctx, const char *fname, pt_tensor *A, pt_tensor **out);
pt_status pt_linalg_det(pt_ctx *ctx, const char *fname, pt_tensor *A, pt_tensor **out);
/* sign (no gradient) and log|det| */
pt_status pt_linalg_slogdet(pt_ctx *ctx, const char *fname, pt_tensor *A, pt_tensor **sign,
                            pt_tensor **logabsdet);
/* log(det): nan for a negative determinant, -inf for a singular matrix */
pt_status pt_logdet(pt_ctx *ctx, pt_tensor *A, pt_tensor **out);
/* lower L with A = L L^T (upper: U with A = U^T U); reads one triangle */
pt_status pt_linalg_cholesky(pt_ctx *ctx, const char *fname, pt_tensor *A, bool upper, pt_tensor **out);

typedef enum pt_qr_mode { PT_QR_REDUCED = 0, PT_QR_COMPLETE, PT_QR_R } pt_qr_mode;
/* Q (m x k, complete: m x m, mode r: an empty 1-D tensor) and R (k x n, complete: m x n) */
pt_status pt_linalg_qr(pt_ctx *ctx, const char *fname, pt_tensor *A, pt_qr_mode mode, pt_tensor **Q,
                       pt_tensor **R);
/* Symmetric eigendecomposition from the lower (upper: upper) triangle: eigenvalues ascending,
 * eigenvectors as columns. V == NULL: eigenvalues only (eigvalsh). */
pt_status pt_linalg_eigh(pt_ctx *ctx, const char *fname, pt_tensor *A, bool upper, pt_tensor **L,
                         pt_tensor **V);
/* A = U diag(S) Vh, S descending. full_matrices: U m x m, Vh n x n; else m x k and k x n.
 * U == NULL (and Vh == NULL): singular values only (svdvals). */
pt_status pt_linalg_svd(pt_ctx *ctx, const char *fname, pt_tensor *A, bool full_matrices,
                        pt_tensor **U, pt_tensor **S, pt_tensor **Vh);

typedef enum pt_lstsq_driver {
  PT_LSTSQ_GELS = 0, PT_LSTSQ_GELSY, PT_LSTSQ_GELSD, PT_LSTSQ_GELSS
} pt_lstsq_driver;
/* min ||A X - B||: solution, residuals (squared column norms of A X - B when m > n, every
 * matrix has full rank and the driver is not gelsy, else empty), rank (int64; empty for gels)
 * and singular_values (gelsd, gelss; else empty). rcond < 0: eps(dtype) * max(m, n). */
pt_status pt_linalg_lstsq(pt_ctx *ctx, pt_tensor *A, pt_tensor *B, double rcond,
                          pt_lstsq_driver driver, pt_tensor **solution, pt_tensor **residuals,
                          pt_tensor **rank, pt_tensor **singular_values);
/* Singular values (|eigenvalues| when hermitian) above max(atol, rtol * largest) count.
 * atol/rtol NAN: not given (PyTorch's defaults: rtol = eps(dtype) * max(m, n) unless atol > 0
 * is given, then rtol = 0). */
pt_status pt_linalg_pinv(pt_ctx *ctx, const char *fname, pt_tensor *A, double atol, double rtol,
                         bool hermitian, pt_tensor **out);
pt_status pt_linalg_matrix_rank(pt_ctx *ctx, pt_tensor *A, double atol, double rtol, bool hermitian,
                                pt_tensor **out);
/* The same with tolerance tensors (NULL: not given; any real dtype, read as float64), broadcast
 * with A's batch dims as PyTorch's: the result has the broadcast batch shape. */
pt_status pt_linalg_pinv_tensors(pt_ctx *ctx, const char *fname, pt_tensor *A, pt_tensor *atol, pt_tensor *rtol,
                                 bool hermitian, pt_tensor **out);
pt_status pt_linalg_matrix_rank_tensors(pt_ctx *ctx, pt_tensor *A, pt_tensor *atol, pt_tensor *rtol, bool hermitian,
                                        pt_tensor **out);

/* ord: any number (inf, -inf, 0 counts non-zeros); dims 0-based, ndims == 0: all of them */
pt_status pt_linalg_vector_norm(pt_ctx *ctx, pt_tensor *x, double ord, int ndims, const int *dims,
                                bool keepdim, pt_tensor **out);
typedef enum pt_matrix_norm_kind { PT_NORM_FRO = 0, PT_NORM_NUC, PT_NORM_ORD } pt_matrix_norm_kind;
/* PT_NORM_ORD: ord one of inf, -inf, 1, -1, 2, -2; d0 != d1 0-based */
pt_status pt_linalg_matrix_norm(pt_ctx *ctx, pt_tensor *A, pt_matrix_norm_kind kind, double ord,
                                int d0, int d1, bool keepdim, pt_tensor **out);

pt_status pt_linalg_matrix_power(pt_ctx *ctx, pt_tensor *A, int64_t n, pt_tensor **out);
/* the first and the last may be 1-D; the product order minimises the multiplications */
pt_status pt_linalg_multi_dot(pt_ctx *ctx, int n, pt_tensor *const *ts, pt_tensor **out);
/* dim 0-based; same number of dims, broadcast; size 3 at dim */
pt_status pt_linalg_cross(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, int dim, pt_tensor **out);
/* A triangular (the other triangle is not read); B has >= 2 dims; batch dims broadcast. No
 * error for a zero on the diagonal (inf/nan, as PyTorch). */
pt_status pt_linalg_solve_triangular(pt_ctx *ctx, const char *fname, pt_tensor *A, pt_tensor *B,
                                     bool upper, bool left, bool unitriangular, pt_tensor **out);
/* X with (L L^T) X = B (upper: (U^T U) X = B) */
pt_status pt_cholesky_solve(pt_ctx *ctx, pt_tensor *B, pt_tensor *L, bool upper, pt_tensor **out);
/* sum of the diagonal of a 2-D tensor (integers give int64) */
pt_status pt_trace(pt_ctx *ctx, pt_tensor *A, pt_tensor **out);

#endif
