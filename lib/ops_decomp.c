/* torch.linalg through LAPACKE (see ops_decomp.h).
 *
 * Every factorisation works on a float64 contiguous copy of its input broadcast to the batch
 * shape (a "work" tensor: batch x rows x cols, row-major), calls LAPACKE's row-major d*
 * routine per matrix and converts the result to the input's dtype once. Backward functions
 * take the gradient to float64 the same way and run PyTorch's formulas per matrix with
 * pt_gemm and triangular solves; the gradient is then summed over broadcast batch dims and
 * converted back. Outputs of one factorisation that are all differentiable (Q and R, L and V,
 * U, S and Vh) get one node each, saving the same float64 factors: each node's backward is the
 * formula with the other outputs' gradients zero, and the engine adds them up in A.
 * LAPACKE checks its inputs for NaN and refuses them: a matrix with a NaN is never passed to
 * it (its results are NaN, or an error for the SVD-based functions). */
#include "ops_decomp.h"

#include <lapacke.h>
#include <dlfcn.h>
#include <pthread.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd.h"
#include "blas.h"
#include "ops_elementwise.h"
#include "ops_linalg.h"
#include "ops_reduce.h"
#include "ops_shape.h"

/* ------------------------------------------------------------------ helpers */

static double *dp(const pt_tensor *t) { return (double *)pt_tensor_data(t); }

static const char *shp(const pt_tensor *t, char *buf) {
  return pt_shape_format(t->ndim, t->shape, buf, PT_SHAPE_STR_MAX);
}

static pt_status check_float(pt_ctx *ctx, const char *fname, const pt_tensor *t) {
  if (!pt_dtype_is_floating(t->dtype))
    return pt_fail(ctx, PT_EARG, "%s: expected a float32 or float64 tensor, got %s (convert with float())",
                   fname, pt_dtype_name(t->dtype));
  if (t->storage->device.type != PT_CPU)
    return pt_fail(ctx, PT_EDEVICE, "%s: LAPACK runs on the CPU: move the tensor with to('cpu') first",
                   fname);
  return PT_OK;
}

static pt_status check_same_dtype(pt_ctx *ctx, const char *fname, const pt_tensor *a,
                                  const pt_tensor *b) {
  pt_status st = check_float(ctx, fname, a);
  if (!st) st = check_float(ctx, fname, b);
  if (st) return st;
  if (a->dtype != b->dtype)
    return pt_fail(ctx, PT_EARG, "%s: expected tensors of the same dtype, got %s and %s", fname,
                   pt_dtype_name(a->dtype), pt_dtype_name(b->dtype));
  return PT_OK;
}

/* a float tensor with >= 2 dims (square ones when square), sizes LAPACK can index */
static pt_status check_matrix(pt_ctx *ctx, const char *fname, const pt_tensor *t, bool square) {
  pt_status st = check_float(ctx, fname, t);
  if (st) return st;
  char s[PT_SHAPE_STR_MAX];
  if (t->ndim < 2)
    return pt_fail(ctx, PT_ESHAPE, "%s: expected a matrix or a batch of matrices (2 or more dims), got shape %s",
                   fname, shp(t, s));
  int64_t m = t->shape[t->ndim - 2], n = t->shape[t->ndim - 1];
  if (square && m != n)
    return pt_fail(ctx, PT_ESHAPE, "%s: expected square matrices, got shape %s (%lld by %lld matrices)", fname,
                   shp(t, s), (long long)m, (long long)n);
  if (m > INT_MAX / 2 || n > INT_MAX / 2)
    return pt_fail(ctx, PT_ESHAPE, "%s: matrix sizes above %d are not supported by LAPACK, got shape %s",
                   fname, INT_MAX / 2, shp(t, s));
  return PT_OK;
}

/* the message of a failure in one matrix of a batch: ", batch element k" (1-based) when the
 * input had batch dims */
static pt_status fail_at(pt_ctx *ctx, pt_status code, bool batched, int64_t b, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static pt_status fail_at(pt_ctx *ctx, pt_status code, bool batched, int64_t b, const char *fmt, ...) {
  char msg[PT_ERRMSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (batched) return pt_fail(ctx, code, "%s, batch element %lld", msg, (long long)b + 1);
  return pt_fail(ctx, code, "%s", msg);
}

/* LAPACKE is opened on the first call that needs it, not at start-up: linked in, its library
 * and the LAPACK and test-matrix libraries it pulls in cost ~1 ms of every process start, for a
 * feature most scripts never use. lapacke.h still gives every prototype. */
#define LAPACKE_FNS(X) X(dgetrf) X(dgetrs) X(dgetri) X(dpotrf) X(dgeqrf) X(dorgqr) X(dsyevd) \
  X(dgesdd) X(dgels) X(dgelsy) X(dgelsd) X(dgelss)
static struct {
#define LAPACKE_FIELD(f) __typeof__(&LAPACKE_##f) f;
  LAPACKE_FNS(LAPACKE_FIELD)
#undef LAPACKE_FIELD
} lapacke;
static pthread_once_t lapacke_once = PTHREAD_ONCE_INIT;
static char lapacke_err[200]; /* why it could not be opened; empty when it was */

static void lapacke_open(void) {
  const char *path = getenv("PARTRAIN_LAPACKE"); /* another build of it (and the missing case's test) */
  void *h = dlopen(path && *path ? path : "liblapacke.so.3", RTLD_LAZY | RTLD_LOCAL);
  if (!h) {
    snprintf(lapacke_err, sizeof lapacke_err, "%s", dlerror());
    return;
  }
#define LAPACKE_LOAD(f)                                                                  \
  if (!(lapacke.f = (__typeof__(lapacke.f))dlsym(h, "LAPACKE_" #f))) {                     \
    snprintf(lapacke_err, sizeof lapacke_err, "liblapacke.so.3 has no LAPACKE_" #f);       \
    return;                                                                               \
  }
  LAPACKE_FNS(LAPACKE_LOAD)
#undef LAPACKE_LOAD
}

static bool lapacke_loaded(void) {
  pthread_once(&lapacke_once, lapacke_open);
  return lapacke_err[0] == '\0';
}

/* what a call returns when LAPACKE could not be opened (lapack_arg names the reason) */
#define LAPACKE_UNAVAILABLE (-100000)
#define LAPACK_CALL(f, ...) (lapacke_loaded() ? lapacke.f(__VA_ARGS__) : LAPACKE_UNAVAILABLE)

static pt_status lapack_arg(pt_ctx *ctx, const char *fname, const char *routine, int info) {
  if (info == LAPACKE_UNAVAILABLE)
    return pt_fail(ctx, PT_EDEVICE, "%s: LAPACK is not available (%s)", fname, lapacke_err);
  return pt_fail(ctx, PT_EARG, "%s: LAPACK %s rejected argument %d", fname, routine, -info);
}

/* A new float64 contiguous tensor (zeroed when zero). */
static pt_status new64(pt_ctx *ctx, int ndim, const int64_t *shape, bool zero, pt_tensor **out) {
  return zero ? pt_tensor_zeros(ctx, PT_FLOAT64, ndim, shape, out)
              : pt_tensor_empty(ctx, PT_FLOAT64, ndim, shape, out);
}

/* A float64 contiguous copy of t broadcast to (ndim, shape). */
static pt_status to64(pt_ctx *ctx, const pt_tensor *t, int ndim, const int64_t *shape, pt_tensor **out) {
  pt_tensor *w;
  pt_status st = new64(ctx, ndim, shape, false, &w);
  if (st) return st;
  if ((st = pt_tensor_copy_into(ctx, w, t))) {
    pt_tensor_release(w);
    return st;
  }
  *out = w;
  return PT_OK;
}

/* w (float64) as dtype dt: a new reference (w itself, retained, for float64) */
static pt_status as_dtype(pt_ctx *ctx, pt_tensor *w, pt_dtype dt, pt_tensor **out) {
  return pt_tensor_to_dtype_raw(ctx, w, dt, out);
}

/* a float64 gradient of the broadcast shape, summed to `like`'s shape and converted to its dtype */
static pt_status grad_to(pt_ctx *ctx, pt_tensor *g64, const pt_tensor *like, pt_tensor **out) {
  pt_tensor *s = NULL;
  pt_status st = pt_sum_to_shape(ctx, g64, like->ndim, like->shape, &s);
  if (st) return st;
  st = as_dtype(ctx, s, like->dtype, out);
  pt_tensor_release(s);
  return st;
}

/* the batch shape of t with the last `drop` dims removed, followed by r (and c when c >= 0) */
static int batch_shape(const pt_tensor *t, int drop, int64_t r, int64_t c, int64_t *shape) {
  int nb = t->ndim - drop;
  memcpy(shape, t->shape, sizeof(int64_t) * (size_t)nb);
  shape[nb] = r;
  if (c < 0) return nb + 1;
  shape[nb + 1] = c;
  return nb + 2;
}

static bool has_nan(const double *a, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (isnan(a[i])) return true;
  return false;
}

static bool all_finite(const double *a, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(a[i])) return false;
  return true;
}

static void fill_nan(double *a, int64_t n) {
  for (int64_t i = 0; i < n; i++) a[i] = NAN;
}

static int64_t maxi(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t mini(int64_t a, int64_t b) { return a < b ? a : b; }
static int ld(int64_t n) { return n > 1 ? (int)n : 1; }

/* C (m x n) = alpha op(A) op(B) + beta C; op(A) is m x k, A stored row-major as k x m when ta */
static void mm(const pt_ctx *ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
               const double *a, const double *b, double beta, double *c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m * n; i++) c[i] = beta == 0 ? 0 : beta * c[i];
    return;
  }
  pt_gemm(ctx, PT_FLOAT64, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k,
          alpha, a, ta ? m : k, b, tb ? k : n, beta, c, n);
}

/* B (m x n) := op(T)^-1 B (left, T m x m) or B op(T)^-1 (right, T n x n); T triangular */
static void trsm(bool left, bool upper, bool trans, bool unit, int64_t m, int64_t n, const double *T,
                 double *B) {
  if (m == 0 || n == 0) return;
  cblas_dtrsm(CblasRowMajor, left ? CblasLeft : CblasRight, upper ? CblasUpper : CblasLower,
              trans ? CblasTrans : CblasNoTrans, unit ? CblasUnit : CblasNonUnit, (int)m, (int)n, 1.0,
              T, left ? ld(m) : ld(n), B, ld(n));
}

static void transpose_into(int64_t m, int64_t n, const double *a, double *t) { /* t = a^T */
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) t[j * m + i] = a[i * n + j];
}

/* scratch memory for one call (freed with pt_free) */
static double *scratch(pt_ctx *ctx, int64_t n, pt_status *st) {
  double *p = pt_alloc(ctx, sizeof(double) * (size_t)(n > 0 ? n : 1));
  if (!p) *st = pt_fail(ctx, PT_ENOMEM, "linalg: out of memory for %lld doubles", (long long)n);
  return p;
}

/* The node for out (inputs ins), saving the given float64 tensors (retained). */
static pt_status record(pt_ctx *ctx, pt_tensor *out, const char *name, pt_backward_fn fn, int n,
                        pt_tensor *const *ins, int nsave, pt_tensor *const *save, pt_node **node_out) {
  pt_node *node = NULL;
  pt_status st = pt_autograd_record(ctx, out, name, fn, n, ins, &node);
  if (st) return st;
  /* aliases without history: a saved tensor may be one of the outputs (float64), and a node
   * holding its own output (or a sibling's, whose node holds this one) would be a cycle */
  for (int k = 0; node && k < nsave; k++) {
    pt_tensor *t = save[k], *a = NULL;
    if (t && (st = pt_tensor_from_storage(ctx, t->storage, t->dtype, t->offset, t->ndim, t->shape,
                                          t->stride, &a)))
      return st;
    pt_node_save(node, k, a);
  }
  if (node_out) *node_out = node;
  return PT_OK;
}

/* g (shaped like an output) as a float64 contiguous tensor of (ndim, shape) (same numel) */
static pt_status grad64(pt_ctx *ctx, pt_tensor *g, int ndim, const int64_t *shape, pt_tensor **out) {
  pt_tensor *c = NULL, *v = NULL;
  pt_status st = pt_tensor_contiguous_raw(ctx, g, &c);
  if (st) return st;
  st = pt_view_raw(ctx, c, ndim, shape, &v);
  pt_tensor_release(c);
  if (st) return st;
  st = to64(ctx, v, ndim, shape, out);
  pt_tensor_release(v);
  return st;
}

/* ------------------------------------------------------------------ LU: solve, inv, det */

/* Solves op(A_b) X_b = B_b in place for each batch element (A: batch x n x n, untouched; X:
 * batch x n x k). trans: A^T. Fails on a singular matrix. */
static pt_status lu_solve_batch(pt_ctx *ctx, const char *fname, bool batched, const pt_tensor *A,
                                pt_tensor *X, bool trans) {
  int64_t n = A->shape[A->ndim - 1], k = X->shape[X->ndim - 1];
  if (n == 0 || k == 0) return PT_OK;
  int64_t batch = pt_tensor_numel(A) / (n * n);
  pt_status st = PT_OK;
  double *lu = scratch(ctx, n * n, &st);
  lapack_int *piv = lu ? pt_alloc(ctx, sizeof(lapack_int) * (size_t)n) : NULL;
  if (lu && !piv) st = pt_fail(ctx, PT_ENOMEM, "%s: out of memory", fname);
  for (int64_t b = 0; !st && b < batch; b++) {
    const double *a = dp(A) + b * n * n;
    double *x = dp(X) + b * n * k;
    if (has_nan(a, n * n) || has_nan(x, n * k)) {
      fill_nan(x, n * k);
      continue;
    }
    memcpy(lu, a, sizeof(double) * (size_t)(n * n));
    lapack_int info = LAPACK_CALL(dgetrf, LAPACK_ROW_MAJOR, (int)n, (int)n, lu, ld(n), piv);
    if (info > 0) {
      st = fail_at(ctx, PT_EARG, batched, b, "%s: the matrix is singular (U[%d,%d] is zero)", fname,
                   (int)info, (int)info);
    } else if (info < 0) {
      st = lapack_arg(ctx, fname, "dgetrf", info);
    } else {
      info = LAPACK_CALL(dgetrs, LAPACK_ROW_MAJOR, trans ? 'T' : 'N', (int)n, (int)k, lu, ld(n), piv, x, ld(k));
      if (info < 0) st = lapack_arg(ctx, fname, "dgetrs", info);
    }
  }
  pt_free(lu);
  pt_free(piv);
  return st;
}

/* B is a vector right-hand side of A (torch's linalg_solve_is_vector_rhs) */
static bool vector_rhs(const pt_tensor *A, const pt_tensor *B) {
  if (B->ndim == 1) return true;
  if (B->ndim != A->ndim - 1) return false;
  for (int i = 0; i < B->ndim; i++)
    if (B->shape[i] != A->shape[i]) return false;
  return true;
}

/* Shapes of A X = B: the broadcast batch, n and k (B as a matrix). Fails when they do not fit. */
static pt_status solve_shapes(pt_ctx *ctx, const char *fname, const pt_tensor *A, const pt_tensor *B,
                              bool vector, int *nbatch, int64_t *shape) {
  int64_t n = A->shape[A->ndim - 1];
  int bnd = vector ? B->ndim - 1 : B->ndim - 2;
  int64_t brows = B->shape[bnd], bcols = vector ? 1 : B->shape[B->ndim - 1];
  char sa[PT_SHAPE_STR_MAX], sb[PT_SHAPE_STR_MAX];
  if (brows != n)
    return pt_fail(ctx, PT_ESHAPE, "%s: A of shape %s and B of shape %s do not fit A X = B (%lldx%lld and %lldx%lld)",
                   fname, shp(A, sa), shp(B, sb), (long long)n, (long long)n, (long long)brows,
                   (long long)bcols);
  if (pt_broadcast_shapes(ctx, fname, A->ndim - 2, A->shape, bnd, B->shape, nbatch, shape))
    return pt_fail(ctx, PT_ESHAPE, "%s: the batch dims of A %s and B %s cannot be broadcast", fname,
                   shp(A, sa), shp(B, sb));
  shape[*nbatch] = n;
  shape[*nbatch + 1] = bcols;
  return PT_OK;
}

/* saved: 0 A64 (batch x n x n), 1 X64 (batch x n x k); ints[0]: vector case */
static pt_status solve_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *A = node->inputs[0], *B = node->inputs[1], *A64 = node->saved[0], *X64 = node->saved[1];
  pt_tensor *G = NULL, *GA = NULL;
  int nd = X64->ndim;
  int64_t n = X64->shape[nd - 2], k = X64->shape[nd - 1], batch = pt_shape_numel(nd - 2, X64->shape);
  pt_status st = grad64(ctx, g, nd, X64->shape, &G);
  if (st) return st;
  /* gB = A^-T g */
  if ((st = lu_solve_batch(ctx, "linalg.solve backward", false, A64, G, true))) goto done;
  if (node->needs_grad[0]) {
    if ((st = new64(ctx, A64->ndim, A64->shape, false, &GA))) goto done;
    for (int64_t b = 0; b < batch; b++) /* gA = -gB X^T */
      mm(ctx, false, true, n, n, k, -1.0, dp(G) + b * n * k, dp(X64) + b * n * k, 0.0, dp(GA) + b * n * n);
    if ((st = grad_to(ctx, GA, A, &gin[0]))) goto done;
  }
  if (node->needs_grad[1]) {
    pt_tensor *v = G;
    if (node->ints[0]) { /* drop the unit column again */
      if ((st = pt_view_raw(ctx, G, nd - 1, X64->shape, &v))) goto done;
    } else {
      pt_tensor_retain(v);
    }
    st = grad_to(ctx, v, B, &gin[1]);
    pt_tensor_release(v);
  }
done:
  pt_tensor_release(G);
  pt_tensor_release(GA);
  return st;
}

pt_status pt_linalg_solve(pt_ctx *ctx, pt_tensor *A, pt_tensor *B, bool left, pt_tensor **out) {
  const char *fname = "linalg.solve";
  pt_status st = check_matrix(ctx, fname, A, true);
  if (!st) st = check_same_dtype(ctx, fname, A, B);
  if (st) return st;
  char sa[PT_SHAPE_STR_MAX], sb[PT_SHAPE_STR_MAX];
  if (B->ndim < 1)
    return pt_fail(ctx, PT_ESHAPE, "%s: B must have at least 1 dimension, got shape %s", fname, shp(B, sb));
  bool vector = vector_rhs(A, B);
  if (!left) {
    /* X A = B is A^T X^T = B^T */
    if (vector || B->ndim < 2)
      return pt_fail(ctx, PT_ESHAPE,
                     "%s: with left = false B must be a matrix or a batch of matrices, got shape %s (A %s)",
                     fname, shp(B, sb), shp(A, sa));
    int64_t n = A->shape[A->ndim - 1];
    if (B->shape[B->ndim - 1] != n)
      return pt_fail(ctx, PT_ESHAPE, "%s: A of shape %s and B of shape %s do not fit X A = B (%lldx%lld and %lldx%lld)",
                     fname, shp(A, sa), shp(B, sb), (long long)n, (long long)n,
                     (long long)B->shape[B->ndim - 2], (long long)B->shape[B->ndim - 1]);
    pt_tensor *At = NULL, *Bt = NULL, *Xt = NULL;
    st = pt_transpose(ctx, A, A->ndim - 2, A->ndim - 1, &At);
    if (!st) st = pt_transpose(ctx, B, B->ndim - 2, B->ndim - 1, &Bt);
    if (!st) st = pt_linalg_solve(ctx, At, Bt, true, &Xt);
    if (!st) st = pt_transpose(ctx, Xt, Xt->ndim - 2, Xt->ndim - 1, out);
    pt_tensor_release(At);
    pt_tensor_release(Bt);
    pt_tensor_release(Xt);
    return st;
  }
  int nbatch;
  int64_t shape[PT_MAX_DIMS + 1], ashape[PT_MAX_DIMS];
  if ((st = solve_shapes(ctx, fname, A, B, vector, &nbatch, shape))) return st;
  memcpy(ashape, shape, sizeof(int64_t) * (size_t)nbatch);
  ashape[nbatch] = ashape[nbatch + 1] = A->shape[A->ndim - 1];
  pt_tensor *A64 = NULL, *X64 = NULL, *Bv = NULL, *r = NULL, *o = NULL;
  if (vector) {
    if ((st = pt_unsqueeze_raw(ctx, B, B->ndim, &Bv))) return st;
  } else {
    Bv = pt_tensor_retain(B);
  }
  if ((st = to64(ctx, A, nbatch + 2, ashape, &A64))) goto done;
  if ((st = to64(ctx, Bv, nbatch + 2, shape, &X64))) goto done;
  if ((st = lu_solve_batch(ctx, fname, A->ndim > 2, A64, X64, false))) goto done;
  if ((st = as_dtype(ctx, X64, A->dtype, &r))) goto done;
  if (vector) {
    if ((st = pt_view_raw(ctx, r, nbatch + 1, shape, &o))) goto done;
  } else {
    o = pt_tensor_retain(r);
  }
  pt_tensor *ins[2] = {A, B}, *save[2] = {A64, X64};
  pt_node *node;
  if ((st = record(ctx, o, "LinalgSolveBackward", solve_backward, 2, ins, 2, save, &node))) goto done;
  if (node) {
    node->ints[0] = vector;
    node->n_ints = 1;
  }
done:
  pt_tensor_release(A64);
  pt_tensor_release(X64);
  pt_tensor_release(Bv);
  pt_tensor_release(r);
  if (st) {
    pt_tensor_release(o);
    return st;
  }
  *out = o;
  return PT_OK;
}

/* A^-1 of each matrix of W (batch x n x n) in place; fails on a singular matrix */
static pt_status inv_batch(pt_ctx *ctx, const char *fname, bool batched, pt_tensor *W) {
  int64_t n = W->shape[W->ndim - 1];
  if (n == 0) return PT_OK;
  int64_t batch = pt_tensor_numel(W) / (n * n);
  pt_status st = PT_OK;
  lapack_int *piv = pt_alloc(ctx, sizeof(lapack_int) * (size_t)n);
  if (!piv) return pt_fail(ctx, PT_ENOMEM, "%s: out of memory", fname);
  for (int64_t b = 0; !st && b < batch; b++) {
    double *a = dp(W) + b * n * n;
    if (has_nan(a, n * n)) {
      fill_nan(a, n * n);
      continue;
    }
    lapack_int info = LAPACK_CALL(dgetrf, LAPACK_ROW_MAJOR, (int)n, (int)n, a, ld(n), piv);
    if (info == 0) info = LAPACK_CALL(dgetri, LAPACK_ROW_MAJOR, (int)n, a, ld(n), piv);
    if (info > 0)
      st = fail_at(ctx, PT_EARG, batched, b, "%s: the matrix is singular (U[%d,%d] is zero)", fname,
                   (int)info, (int)info);
    else if (info < 0)
      st = lapack_arg(ctx, fname, "dgetri", info);
  }
  pt_free(piv);
  return st;
}

/* saved: 0 Ainv64 */
static pt_status inv_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *P = node->saved[0], *G = NULL, *GA = NULL;
  int64_t n = P->shape[P->ndim - 1], batch = n ? pt_tensor_numel(P) / (n * n) : 0;
  pt_status st = grad64(ctx, g, P->ndim, P->shape, &G);
  if (!st) st = new64(ctx, P->ndim, P->shape, false, &GA);
  if (st) goto done;
  double *t = scratch(ctx, n * n, &st);
  if (!t) goto done;
  for (int64_t b = 0; b < batch; b++) { /* gA = -P^T g P^T */
    double *p = dp(P) + b * n * n;
    mm(ctx, true, false, n, n, n, 1.0, p, dp(G) + b * n * n, 0.0, t);
    mm(ctx, false, true, n, n, n, -1.0, t, p, 0.0, dp(GA) + b * n * n);
  }
  pt_free(t);
  st = grad_to(ctx, GA, node->inputs[0], &gin[0]);
done:
  pt_tensor_release(G);
  pt_tensor_release(GA);
  return st;
}

pt_status pt_linalg_inv(pt_ctx *ctx, const char *fname, pt_tensor *A, pt_tensor **out) {
  pt_status st = check_matrix(ctx, fname, A, true);
  if (st) return st;
  pt_tensor *W = NULL, *o = NULL;
  if ((st = to64(ctx, A, A->ndim, A->shape, &W))) return st;
  if ((st = inv_batch(ctx, fname, A->ndim > 2, W))) goto done;
  if ((st = as_dtype(ctx, W, A->dtype, &o))) goto done;
  st = record(ctx, o, "LinalgInvBackward", inv_backward, 1, &A, 1, &W, NULL);
done:
  pt_tensor_release(W);
  if (st) {
    pt_tensor_release(o);
    return st;
  }
  *out = o;
  return PT_OK;
}

/* LU of each matrix of A64: sign of the permutation times the signs of U's diagonal, and
 * either det (the product) or log|det| */
static pt_status lu_det_batch(pt_ctx *ctx, const char *fname, const pt_tensor *A64, double *sign,
                              double *det, double *logabs) {
  int64_t n = A64->shape[A64->ndim - 1];
  int64_t batch = pt_shape_numel(A64->ndim - 2, A64->shape);
  pt_status st = PT_OK;
  double *lu = scratch(ctx, n * n, &st);
  lapack_int *piv = lu ? pt_alloc(ctx, sizeof(lapack_int) * (size_t)(n > 0 ? n : 1)) : NULL;
  if (lu && !piv) st = pt_fail(ctx, PT_ENOMEM, "%s: out of memory", fname);
  for (int64_t b = 0; !st && b < batch; b++) {
    const double *a = dp(A64) + b * n * n;
    double s = 1, p = 1, l = 0;
    if (has_nan(a, n * n)) {
      s = p = l = NAN;
    } else if (n > 0) {
      memcpy(lu, a, sizeof(double) * (size_t)(n * n));
      lapack_int info = LAPACK_CALL(dgetrf, LAPACK_ROW_MAJOR, (int)n, (int)n, lu, ld(n), piv);
      if (info < 0) {
        st = lapack_arg(ctx, fname, "dgetrf", info);
        break;
      }
      for (int64_t i = 0; i < n; i++) {
        double u = lu[i * n + i];
        if (piv[i] != i + 1) {
          s = -s;
          p = -p;
        }
        if (u < 0) s = -s;
        p *= u;
        l += log(fabs(u));
      }
      if (info > 0) {
        s = 0;
        p = 0;
        l = -INFINITY;
      }
      p = s == 0 ? 0 : p;
    }
    if (sign) sign[b] = s;
    if (det) det[b] = p;
    if (logabs) logabs[b] = l;
  }
  pt_free(lu);
  pt_free(piv);
  return st;
}

/* out = A^-T for a (n x n); false when A is singular */
static bool inv_t(pt_ctx *ctx, int64_t n, const double *a, double *w, lapack_int *piv, double *out) {
  memcpy(w, a, sizeof(double) * (size_t)(n * n));
  lapack_int info = LAPACK_CALL(dgetrf, LAPACK_ROW_MAJOR, (int)n, (int)n, w, ld(n), piv);
  if (!info) info = LAPACK_CALL(dgetri, LAPACK_ROW_MAJOR, (int)n, w, ld(n), piv);
  if (info) return false;
  transpose_into(n, n, w, out);
  return true;
}

/* The cofactor matrix of a (n x n), det(A) A^-T, also for singular A (through its SVD:
 * A = U S V^T, cof = det(U) det(V) U diag(prod_{j != i} s_j) V^T). */
static void cofactor(pt_ctx *ctx, int64_t n, const double *a, double det, double *w, lapack_int *piv,
                     double *out) {
  double *u = w + n * n, *vt = u + n * n, *tmp = vt + n * n, *s = tmp + n * n, *pr = s + n;
  if (det != 0 && isfinite(det) && inv_t(ctx, n, a, w, piv, out)) {
    for (int64_t i = 0; i < n * n; i++) out[i] *= det;
    return;
  }
  memcpy(w, a, sizeof(double) * (size_t)(n * n));
  if (!all_finite(w, n * n) ||
      LAPACK_CALL(dgesdd, LAPACK_ROW_MAJOR, 'A', (int)n, (int)n, w, ld(n), s, u, ld(n), vt, ld(n))) {
    fill_nan(out, n * n);
    return;
  }
  double d = 1;
  for (int pass = 0; pass < 2; pass++) { /* det(U) det(V^T), each +-1 */
    memcpy(tmp, pass ? vt : u, sizeof(double) * (size_t)(n * n));
    LAPACK_CALL(dgetrf, LAPACK_ROW_MAJOR, (int)n, (int)n, tmp, ld(n), piv);
    for (int64_t i = 0; i < n; i++) {
      if (piv[i] != i + 1) d = -d;
      if (tmp[i * n + i] < 0) d = -d;
    }
  }
  for (int64_t i = 0; i < n; i++) {
    double p = d;
    for (int64_t j = 0; j < n; j++)
      if (j != i) p *= s[j];
    pr[i] = p;
  }
  for (int64_t i = 0; i < n; i++) /* tmp = U diag(pr) */
    for (int64_t j = 0; j < n; j++) tmp[i * n + j] = u[i * n + j] * pr[j];
  mm(ctx, false, false, n, n, n, 1.0, tmp, vt, 0.0, out);
}

/* det: saved 0 A64, 1 det64; ints[0] 1: log|det| (slogdet, logdet), whose gradient is g A^-T
 * (nan for a singular matrix) */
static pt_status det_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *A64 = node->saved[0], *D = node->saved[1], *G = NULL, *GA = NULL;
  bool logabs = node->ints[0];
  int64_t n = A64->shape[A64->ndim - 1], batch = pt_tensor_numel(D);
  double *w = NULL;
  lapack_int *piv = NULL;
  pt_status st = grad64(ctx, g, D->ndim, D->shape, &G);
  if (!st) st = new64(ctx, A64->ndim, A64->shape, false, &GA);
  if (st) goto done;
  if (!(w = scratch(ctx, 4 * n * n + 2 * n, &st))) goto done;
  if (!(piv = pt_alloc(ctx, sizeof(lapack_int) * (size_t)(n > 0 ? n : 1)))) {
    st = pt_fail(ctx, PT_ENOMEM, "linalg.det backward: out of memory");
    goto done;
  }
  for (int64_t b = 0; b < batch && n > 0; b++) {
    double gb = dp(G)[b], *o = dp(GA) + b * n * n;
    const double *a = dp(A64) + b * n * n;
    if (logabs) {
      if (!inv_t(ctx, n, a, w, piv, o)) fill_nan(o, n * n);
    } else {
      cofactor(ctx, n, a, dp(D)[b], w, piv, o);
    }
    for (int64_t i = 0; i < n * n; i++) o[i] *= gb;
  }
  st = grad_to(ctx, GA, node->inputs[0], &gin[0]);
done:
  pt_free(w);
  pt_free(piv);
  pt_tensor_release(G);
  pt_tensor_release(GA);
  return st;
}

/* which: 0 det, 1 slogdet, 2 logdet */
static pt_status det_common(pt_ctx *ctx, const char *fname, pt_tensor *A, int which, pt_tensor **o1,
                            pt_tensor **o2) {
  pt_status st = check_matrix(ctx, fname, A, true);
  if (st) return st;
  pt_tensor *A64 = NULL, *S = NULL, *V = NULL, *r1 = NULL, *r2 = NULL;
  int nb = A->ndim - 2;
  if ((st = to64(ctx, A, A->ndim, A->shape, &A64))) return st;
  if ((st = new64(ctx, nb, A->shape, false, &S)) || (st = new64(ctx, nb, A->shape, false, &V))) goto done;
  if ((st = lu_det_batch(ctx, fname, A64, dp(S), which == 0 ? dp(V) : NULL, which == 0 ? NULL : dp(V))))
    goto done;
  if (which == 2) { /* log(det): nan below 0 */
    int64_t nel = pt_tensor_numel(V);
    for (int64_t i = 0; i < nel; i++)
      if (dp(S)[i] < 0) dp(V)[i] = NAN;
  }
  if ((st = as_dtype(ctx, V, A->dtype, &r2))) goto done;
  pt_node *node;
  pt_tensor *save[2] = {A64, V};
  if (which == 0) {
    /* det's backward needs det itself: V holds it */
    if ((st = record(ctx, r2, "LinalgDetBackward", det_backward, 1, &A, 2, save, &node))) goto done;
  } else {
    if ((st = record(ctx, r2, which == 1 ? "LinalgSlogdetBackward" : "LogdetBackward", det_backward, 1, &A,
                     2, save, &node)))
      goto done;
  }
  if (node) {
    node->ints[0] = which != 0;
    node->n_ints = 1;
  }
  if (which == 1 && (st = as_dtype(ctx, S, A->dtype, &r1))) goto done;
done:
  pt_tensor_release(A64);
  pt_tensor_release(S);
  pt_tensor_release(V);
  if (st) {
    pt_tensor_release(r1);
    pt_tensor_release(r2);
    return st;
  }
  if (which == 1) {
    *o1 = r1;
    *o2 = r2;
  } else {
    *o1 = r2;
  }
  return PT_OK;
}

pt_status pt_linalg_det(pt_ctx *ctx, const char *fname, pt_tensor *A, pt_tensor **out) {
  return det_common(ctx, fname, A, 0, out, NULL);
}

pt_status pt_linalg_slogdet(pt_ctx *ctx, const char *fname, pt_tensor *A, pt_tensor **sign,
                            pt_tensor **logabsdet) {
  return det_common(ctx, fname, A, 1, sign, logabsdet);
}

pt_status pt_logdet(pt_ctx *ctx, pt_tensor *A, pt_tensor **out) {
  return det_common(ctx, "logdet", A, 2, out, NULL);
}

/* ------------------------------------------------------------------ cholesky */

/* saved: 0 the factor (lower L, or upper U when ints[0]) */
static pt_status cholesky_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *C = node->saved[0], *G = NULL, *GA = NULL;
  bool upper = node->ints[0];
  int64_t n = C->shape[C->ndim - 1], batch = n ? pt_tensor_numel(C) / (n * n) : 0;
  pt_status st = grad64(ctx, g, C->ndim, C->shape, &G);
  if (!st) st = new64(ctx, C->ndim, C->shape, false, &GA);
  if (st) goto done;
  double *w = scratch(ctx, 3 * n * n, &st);
  if (!w) goto done;
  double *l = w, *gl = w + n * n, *t = gl + n * n;
  for (int64_t b = 0; b < batch; b++) {
    const double *c = dp(C) + b * n * n, *gb = dp(G) + b * n * n;
    double *p = dp(GA) + b * n * n;
    if (upper) { /* L = U^T, gL = gU^T */
      transpose_into(n, n, c, l);
      transpose_into(n, n, gb, gl);
    } else {
      memcpy(l, c, sizeof(double) * (size_t)(n * n));
      memcpy(gl, gb, sizeof(double) * (size_t)(n * n));
    }
    mm(ctx, true, false, n, n, n, 1.0, l, gl, 0.0, t); /* L^T gL */
    for (int64_t i = 0; i < n; i++) /* P = 0.5 (tril(T) + tril(T, -1)^T) */
      for (int64_t j = 0; j <= i; j++) p[i * n + j] = p[j * n + i] = 0.5 * t[i * n + j];
    trsm(true, false, true, false, n, n, l, p);  /* L^-T P */
    trsm(false, false, false, false, n, n, l, p); /* ... L^-1 */
  }
  pt_free(w);
  st = grad_to(ctx, GA, node->inputs[0], &gin[0]);
done:
  pt_tensor_release(G);
  pt_tensor_release(GA);
  return st;
}

pt_status pt_linalg_cholesky(pt_ctx *ctx, const char *fname, pt_tensor *A, bool upper, pt_tensor **out) {
  pt_status st = check_matrix(ctx, fname, A, true);
  if (st) return st;
  pt_tensor *W = NULL, *o = NULL;
  if ((st = to64(ctx, A, A->ndim, A->shape, &W))) return st;
  int64_t n = A->shape[A->ndim - 1], batch = n ? pt_tensor_numel(W) / (n * n) : 0;
  for (int64_t b = 0; b < batch; b++) {
    double *a = dp(W) + b * n * n;
    if (has_nan(a, n * n)) {
      fill_nan(a, n * n);
      continue;
    }
    lapack_int info = LAPACK_CALL(dpotrf, LAPACK_ROW_MAJOR, upper ? 'U' : 'L', (int)n, a, ld(n));
    if (info > 0) {
      st = fail_at(ctx, PT_EARG, A->ndim > 2, b,
                   "%s: the matrix is not positive-definite (the leading minor of order %d is not "
                   "positive-definite)",
                   fname, (int)info);
      goto done;
    }
    if (info < 0) {
      st = lapack_arg(ctx, fname, "dpotrf", info);
      goto done;
    }
    for (int64_t i = 0; i < n; i++) /* zero the other triangle */
      for (int64_t j = 0; j < n; j++)
        if (upper ? j < i : j > i) a[i * n + j] = 0;
  }
  if ((st = as_dtype(ctx, W, A->dtype, &o))) goto done;
  pt_node *node;
  if ((st = record(ctx, o, "LinalgCholeskyBackward", cholesky_backward, 1, &A, 1, &W, &node))) goto done;
  if (node) {
    node->ints[0] = upper;
    node->n_ints = 1;
  }
done:
  pt_tensor_release(W);
  if (st) {
    pt_tensor_release(o);
    return st;
  }
  *out = o;
  return PT_OK;
}

/* ------------------------------------------------------------------ qr */

/* gA (m x n, m >= n) of A = Q R (Q m x n, R n x n) from gQ and/or gR (NULL: zero):
 * gA = (gQ + Q copyltu(M)) R^-T, M = R gR^T - gQ^T Q. w: 2 n*n + m*n doubles. */
static void qr_grad_tall(const pt_ctx *ctx, int64_t m, int64_t n, const double *Q, const double *R,
                         const double *gQ, const double *gR, double *w, double *gA) {
  double *M = w, *C = w + n * n;
  for (int64_t i = 0; i < n * n; i++) M[i] = 0;
  if (gR) mm(ctx, false, true, n, n, n, 1.0, R, gR, 0.0, M);
  if (gQ) mm(ctx, true, false, n, n, m, -1.0, gQ, Q, 1.0, M);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) C[i * n + j] = i >= j ? M[i * n + j] : M[j * n + i];
  if (gQ) memcpy(gA, gQ, sizeof(double) * (size_t)(m * n));
  mm(ctx, false, false, m, n, n, 1.0, Q, C, gQ ? 1.0 : 0.0, gA);
  trsm(false, true, true, false, m, n, R, gA); /* gA R^-T */
}

/* saved: 0 Q64, 1 R64; ints[0] mode, ints[1] 1 for the R node */
static pt_status qr_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *Qt = node->saved[0], *Rt = node->saved[1], *G = NULL, *GA = NULL;
  bool is_r = node->ints[1];
  int nd = Rt->ndim;
  int64_t m = Qt->shape[nd - 2], k = Rt->shape[nd - 2], n = Rt->shape[nd - 1];
  if (node->ints[0] == PT_QR_R)
    return pt_fail(ctx, PT_EARG, "linalg.qr: the derivative depends on Q, which mode 'r' does not compute: "
                                 "use mode 'reduced' to differentiate through linalg.qr");
  if (node->ints[0] == PT_QR_COMPLETE && m > n)
    return pt_fail(ctx, PT_EARG, "linalg.qr: the QR decomposition is not differentiable when mode is "
                                 "'complete' and the matrix has more rows than columns (%lld > %lld)",
                   (long long)m, (long long)n);
  int64_t batch = pt_shape_numel(nd - 2, Rt->shape);
  pt_tensor *out = is_r ? Rt : Qt;
  pt_status st = grad64(ctx, g, out->ndim, out->shape, &G);
  int64_t ashape[PT_MAX_DIMS];
  memcpy(ashape, Rt->shape, sizeof(int64_t) * (size_t)nd);
  ashape[nd - 2] = m;
  if (!st) st = new64(ctx, nd, ashape, false, &GA);
  if (st) goto done;
  double *w = scratch(ctx, 4 * k * k + 3 * m * n + 2 * k * n + m * k, &st);
  if (!w) goto done;
  for (int64_t b = 0; b < batch; b++) {
    const double *q = dp(Qt) + b * m * k, *r = dp(Rt) + b * k * n, *gb = dp(G) + b * (is_r ? k * n : m * k);
    double *ga = dp(GA) + b * m * n;
    if (m >= n) {
      qr_grad_tall(ctx, m, n, q, r, is_r ? NULL : gb, is_r ? gb : NULL, w, ga);
      continue;
    }
    /* m < n: A = Q [X Y], X = R[:, :m]; A2 = Q Y, so gQ' = gQ + Q Y gY^T, gA2 = Q gY */
    double *X = w + 2 * k * k + m * k, *Y = X + m * m, *gX = Y + m * (n - m), *gY = gX + m * m,
           *gQ = gY + m * (n - m), *ga1 = gQ + m * m;
    for (int64_t i = 0; i < m; i++) {
      memcpy(X + i * m, r + i * n, sizeof(double) * (size_t)m);
      memcpy(Y + i * (n - m), r + i * n + m, sizeof(double) * (size_t)(n - m));
      if (is_r) {
        memcpy(gX + i * m, gb + i * n, sizeof(double) * (size_t)m);
        memcpy(gY + i * (n - m), gb + i * n + m, sizeof(double) * (size_t)(n - m));
      }
    }
    if (is_r) {
      double *t = ga1; /* Y gY^T (m x m), then Q times it */
      mm(ctx, false, true, m, m, n - m, 1.0, Y, gY, 0.0, t);
      mm(ctx, false, false, m, m, m, 1.0, q, t, 0.0, gQ);
      qr_grad_tall(ctx, m, m, q, X, gQ, gX, w, ga1);
    } else {
      qr_grad_tall(ctx, m, m, q, X, gb, NULL, w, ga1);
    }
    for (int64_t i = 0; i < m; i++) memcpy(ga + i * n, ga1 + i * m, sizeof(double) * (size_t)m);
    if (is_r) { /* gA2 = Q gY */
      double *t = ga1 + m * m;
      mm(ctx, false, false, m, n - m, m, 1.0, q, gY, 0.0, t);
      for (int64_t i = 0; i < m; i++) memcpy(ga + i * n + m, t + i * (n - m), sizeof(double) * (size_t)(n - m));
    } else {
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = m; j < n; j++) ga[i * n + j] = 0;
    }
  }
  pt_free(w);
  st = grad_to(ctx, GA, node->inputs[0], &gin[0]);
done:
  pt_tensor_release(G);
  pt_tensor_release(GA);
  return st;
}

pt_status pt_linalg_qr(pt_ctx *ctx, const char *fname, pt_tensor *A, pt_qr_mode mode, pt_tensor **Q,
                       pt_tensor **R) {
  pt_status st = check_matrix(ctx, fname, A, false);
  if (st) return st;
  int nd = A->ndim;
  int64_t m = A->shape[nd - 2], n = A->shape[nd - 1], k = mini(m, n);
  int64_t qc = mode == PT_QR_COMPLETE ? m : k, rr = mode == PT_QR_COMPLETE ? m : k;
  int64_t qshape[PT_MAX_DIMS], rshape[PT_MAX_DIMS];
  batch_shape(A, 2, m, qc, qshape);
  batch_shape(A, 2, rr, n, rshape);
  int64_t batch = pt_shape_numel(nd - 2, A->shape);
  pt_tensor *W = NULL, *Q64 = NULL, *R64 = NULL, *qo = NULL, *ro = NULL;
  double *tau = NULL;
  if ((st = to64(ctx, A, nd, A->shape, &W)) || (st = new64(ctx, nd, qshape, true, &Q64)) ||
      (st = new64(ctx, nd, rshape, true, &R64)))
    goto done;
  if (!(tau = scratch(ctx, k, &st))) goto done;
  for (int64_t b = 0; b < batch; b++) {
    double *a = dp(W) + b * m * n, *q = dp(Q64) + b * m * qc, *r = dp(R64) + b * rr * n;
    if (has_nan(a, m * n)) {
      fill_nan(q, m * qc);
      fill_nan(r, rr * n);
      continue;
    }
    if (k > 0) {
      lapack_int info = LAPACK_CALL(dgeqrf, LAPACK_ROW_MAJOR, (int)m, (int)n, a, ld(n), tau);
      if (info) {
        st = lapack_arg(ctx, fname, "dgeqrf", info);
        goto done;
      }
    }
    for (int64_t i = 0; i < k; i++)
      for (int64_t j = i; j < n; j++) r[i * n + j] = a[i * n + j];
    if (mode == PT_QR_R || m == 0) continue;
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < mini(n, qc); j++) q[i * qc + j] = a[i * n + j];
    if (qc == 0) continue;
    lapack_int info = LAPACK_CALL(dorgqr, LAPACK_ROW_MAJOR, (int)m, (int)qc, (int)k, q, ld(qc), tau);
    if (info) {
      st = lapack_arg(ctx, fname, "dorgqr", info);
      goto done;
    }
  }
  if (mode == PT_QR_R) {
    if ((st = pt_tensor_empty(ctx, A->dtype, 1, (int64_t[]){0}, &qo))) goto done;
  } else if ((st = as_dtype(ctx, Q64, A->dtype, &qo))) {
    goto done;
  }
  if ((st = as_dtype(ctx, R64, A->dtype, &ro))) goto done;
  pt_tensor *save[2] = {Q64, R64};
  for (int which = 0; which < 2; which++) {
    if (which == 0 && mode == PT_QR_R) continue;
    pt_node *node;
    if ((st = record(ctx, which ? ro : qo, "LinalgQrBackward", qr_backward, 1, &A, 2, save, &node))) goto done;
    if (node) {
      node->ints[0] = mode;
      node->ints[1] = which;
      node->n_ints = 2;
    }
  }
done:
  pt_free(tau);
  pt_tensor_release(W);
  pt_tensor_release(Q64);
  pt_tensor_release(R64);
  if (st) {
    pt_tensor_release(qo);
    pt_tensor_release(ro);
    return st;
  }
  *Q = qo;
  *R = ro;
  return PT_OK;
}

/* ------------------------------------------------------------------ eigh */

/* saved: 0 eigenvalues (batch x n), 1 eigenvectors (batch x n x n); ints[0] 1 for V's node */
static pt_status eigh_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *E = node->saved[0], *V = node->saved[1], *G = NULL, *GA = NULL;
  bool is_v = node->ints[0];
  int64_t n = V->shape[V->ndim - 1], batch = pt_shape_numel(V->ndim - 2, V->shape);
  pt_tensor *out = is_v ? V : E;
  pt_status st = grad64(ctx, g, out->ndim, out->shape, &G);
  if (!st) st = new64(ctx, V->ndim, V->shape, false, &GA);
  if (st) goto done;
  double *w = scratch(ctx, 2 * n * n, &st);
  if (!w) goto done;
  double *ret = w, *t = w + n * n;
  for (int64_t b = 0; b < batch; b++) {
    const double *v = dp(V) + b * n * n, *l = dp(E) + b * n;
    if (is_v) { /* ret = skew(V^T gV) / 2 / (l_j - l_i) off the diagonal */
      mm(ctx, true, false, n, n, n, 1.0, v, dp(G) + b * n * n, 0.0, t);
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
          ret[i * n + j] = i == j ? 0 : 0.5 * (t[i * n + j] - t[j * n + i]) / (l[j] - l[i]);
    } else {
      for (int64_t i = 0; i < n * n; i++) ret[i] = 0;
      for (int64_t i = 0; i < n; i++) ret[i * n + i] = dp(G)[b * n + i];
    }
    mm(ctx, false, false, n, n, n, 1.0, v, ret, 0.0, t); /* V ret V^T */
    mm(ctx, false, true, n, n, n, 1.0, t, v, 0.0, dp(GA) + b * n * n);
  }
  pt_free(w);
  st = grad_to(ctx, GA, node->inputs[0], &gin[0]);
done:
  pt_tensor_release(G);
  pt_tensor_release(GA);
  return st;
}

pt_status pt_linalg_eigh(pt_ctx *ctx, const char *fname, pt_tensor *A, bool upper, pt_tensor **L,
                         pt_tensor **V) {
  pt_status st = check_matrix(ctx, fname, A, true);
  if (st) return st;
  bool need_v = V || pt_autograd_needed(ctx, 1, &A);
  int nd = A->ndim;
  int64_t n = A->shape[nd - 1], batch = pt_shape_numel(nd - 2, A->shape), eshape[PT_MAX_DIMS];
  batch_shape(A, 2, n, -1, eshape);
  pt_tensor *W = NULL, *E = NULL, *lo = NULL, *vo = NULL;
  if ((st = to64(ctx, A, nd, A->shape, &W)) || (st = new64(ctx, nd - 1, eshape, false, &E))) goto done;
  for (int64_t b = 0; b < batch && n > 0; b++) {
    double *a = dp(W) + b * n * n, *e = dp(E) + b * n;
    if (has_nan(a, n * n)) {
      fill_nan(a, n * n);
      fill_nan(e, n);
      continue;
    }
    lapack_int info = LAPACK_CALL(dsyevd, LAPACK_ROW_MAJOR, need_v ? 'V' : 'N', upper ? 'U' : 'L', (int)n, a,
                                     ld(n), e);
    if (info > 0) {
      st = fail_at(ctx, PT_EARG, nd > 2, b, "%s: the algorithm failed to converge (LAPACK dsyevd info %d)",
                   fname, (int)info);
      goto done;
    }
    if (info < 0) {
      st = lapack_arg(ctx, fname, "dsyevd", info);
      goto done;
    }
  }
  if ((st = as_dtype(ctx, E, A->dtype, &lo))) goto done;
  if (V && (st = as_dtype(ctx, W, A->dtype, &vo))) goto done;
  pt_tensor *save[2] = {E, W};
  for (int which = 0; which < 2 && need_v; which++) {
    if (which == 1 && !V) break;
    pt_node *node;
    if ((st = record(ctx, which ? vo : lo, "LinalgEighBackward", eigh_backward, 1, &A, 2, save, &node)))
      goto done;
    if (node) {
      node->ints[0] = which;
      node->n_ints = 1;
    }
  }
done:
  pt_tensor_release(W);
  pt_tensor_release(E);
  if (st) {
    pt_tensor_release(lo);
    pt_tensor_release(vo);
    return st;
  }
  *L = lo;
  if (V) *V = vo;
  return PT_OK;
}

/* ------------------------------------------------------------------ svd */

/* gA (m x n) of A = U diag(S) Vh (reduced: U m x k, Vh k x n) from one of gU, gS, gVh (the
 * others NULL), PyTorch's formula: with E_ij = S_j^2 - S_i^2,
 *   gU:  U (skew(U^T gU) S / E) Vh, plus (I - U U^T) gU S^-1 Vh when m > n
 *   gVh: U (S skew(Vh gVh^T) / E) Vh, plus U S^-1 gVh (I - V Vh) when m < n
 *   gS:  U diag(gS) Vh
 * Repeated singular values make E zero off the diagonal (inf/nan), and the extra terms divide
 * by S: the gradient of U and Vh is undefined there, as in PyTorch. w: 3 k*k + 2 max(m,n)*k. */
static void svd_grad(const pt_ctx *ctx, int64_t m, int64_t n, const double *U, const double *S,
                     const double *Vh, const double *gU, const double *gS, const double *gVh, double *w,
                     double *gA) {
  int64_t k = mini(m, n), big = maxi(m, n);
  double *X = w, *ret = w + k * k, *T = ret + k * k, *Y = T + big * k;
  if (gS) {
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < k; j++) T[i * k + j] = U[i * k + j] * gS[j];
    mm(ctx, false, false, m, n, k, 1.0, T, Vh, 0.0, gA);
    return;
  }
  if (gU) mm(ctx, true, false, k, k, m, 1.0, U, gU, 0.0, X);  /* U^T gU */
  else mm(ctx, false, true, k, k, n, 1.0, Vh, gVh, 0.0, X);   /* Vh gVh^T */
  for (int64_t i = 0; i < k; i++)
    for (int64_t j = 0; j < k; j++) {
      double e = S[j] * S[j] - S[i] * S[i], sk = X[i * k + j] - X[j * k + i];
      ret[i * k + j] = i == j ? 0 : (gU ? sk * S[j] : S[i] * sk) / e;
    }
  if (gU && m > n) { /* U (ret - U^T Y) + Y, Y = gU S^-1 */
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < k; j++) Y[i * k + j] = gU[i * k + j] / S[j];
    mm(ctx, true, false, k, k, m, -1.0, U, Y, 1.0, ret);
    mm(ctx, false, false, m, k, k, 1.0, U, ret, 1.0, Y);
    mm(ctx, false, false, m, n, k, 1.0, Y, Vh, 0.0, gA);
  } else if (gVh && m < n) { /* U ((ret - Y Vh^T) Vh + Y), Y = S^-1 gVh */
    for (int64_t i = 0; i < k; i++)
      for (int64_t j = 0; j < n; j++) Y[i * n + j] = gVh[i * n + j] / S[i];
    mm(ctx, false, true, k, k, n, -1.0, Y, Vh, 1.0, ret);
    mm(ctx, false, false, k, n, k, 1.0, ret, Vh, 1.0, Y);
    mm(ctx, false, false, m, n, k, 1.0, U, Y, 0.0, gA);
  } else {
    mm(ctx, false, false, m, k, k, 1.0, U, ret, 0.0, T);
    mm(ctx, false, false, m, n, k, 1.0, T, Vh, 0.0, gA);
  }
}

/* saved: 0 U64 (batch x m x uc), 1 S64, 2 Vh64 (batch x vr x n); ints[0]: 0 U, 1 S, 2 Vh.
 * With full_matrices only the first k columns of U (rows of Vh) and of their gradients count:
 * the others are not determined by A (PyTorch does the same). */
static pt_status svd_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *Ut = node->saved[0], *St = node->saved[1], *Vt = node->saved[2], *G = NULL, *GA = NULL;
  int which = (int)node->ints[0], nd = Ut->ndim;
  int64_t m = Ut->shape[nd - 2], uc = Ut->shape[nd - 1], vr = Vt->shape[nd - 2], n = Vt->shape[nd - 1];
  int64_t k = mini(m, n), big = maxi(m, n), batch = pt_shape_numel(nd - 2, Ut->shape);
  pt_tensor *out = which == 0 ? Ut : which == 1 ? St : Vt;
  pt_status st = grad64(ctx, g, out->ndim, out->shape, &G);
  int64_t ashape[PT_MAX_DIMS];
  memcpy(ashape, Ut->shape, sizeof(int64_t) * (size_t)nd);
  ashape[nd - 1] = n;
  if (!st) st = new64(ctx, nd, ashape, false, &GA);
  if (st) goto done;
  double *w = scratch(ctx, 3 * k * k + 2 * big * k + 2 * m * k, &st);
  if (!w) goto done;
  double *u = w + 3 * k * k + 2 * big * k, *gu = u + m * k;
  for (int64_t b = 0; b < batch; b++) {
    const double *ub = dp(Ut) + b * m * uc, *gb = dp(G) + b * pt_tensor_numel(out) / (batch ? batch : 1);
    for (int64_t i = 0; i < m; i++) { /* the first k columns, packed */
      memcpy(u + i * k, ub + i * uc, sizeof(double) * (size_t)k);
      if (which == 0) memcpy(gu + i * k, gb + i * uc, sizeof(double) * (size_t)k);
    }
    svd_grad(ctx, m, n, u, dp(St) + b * k, dp(Vt) + b * vr * n, which == 0 ? gu : NULL,
             which == 1 ? gb : NULL, which == 2 ? gb : NULL, w, dp(GA) + b * m * n);
  }
  pt_free(w);
  st = grad_to(ctx, GA, node->inputs[0], &gin[0]);
done:
  pt_tensor_release(G);
  pt_tensor_release(GA);
  return st;
}

/* SVD of every matrix of W (batch x m x n, destroyed) into U64/S64/Vh64 (jobz 'A', 'S' or
 * 'N'); fails on non-finite input or no convergence */
static pt_status svd_batch(pt_ctx *ctx, const char *fname, bool batched, pt_tensor *W, char jobz,
                           double *u, double *s, double *vt) {
  int nd = W->ndim;
  int64_t m = W->shape[nd - 2], n = W->shape[nd - 1], k = mini(m, n);
  int64_t batch = pt_shape_numel(nd - 2, W->shape);
  int64_t uc = jobz == 'A' ? m : jobz == 'S' ? k : 0, vr = jobz == 'A' ? n : jobz == 'S' ? k : 0;
  double dummy[1];
  for (int64_t b = 0; b < batch; b++) {
    double *a = dp(W) + b * m * n;
    if (!all_finite(a, m * n))
      return fail_at(ctx, PT_EARG, batched, b,
                     "%s: the algorithm failed to converge because the matrix contains non-finite values",
                     fname);
    double *ub = uc ? u + b * m * uc : dummy, *vb = vr ? vt + b * vr * n : dummy;
    if (k == 0) { /* an empty matrix: U, Vh identities (full) */
      for (int64_t i = 0; i < m && uc; i++) ub[i * uc + i] = 1;
      for (int64_t i = 0; i < n && vr; i++) vb[i * n + i] = 1;
      continue;
    }
    lapack_int info = LAPACK_CALL(dgesdd, LAPACK_ROW_MAJOR, jobz, (int)m, (int)n, a, ld(n), s + b * k, ub,
                                     uc ? ld(uc) : 1, vb, ld(n));
    if (info > 0)
      return fail_at(ctx, PT_EARG, batched, b, "%s: the algorithm failed to converge (LAPACK dgesdd info %d)",
                     fname, (int)info);
    if (info < 0) return lapack_arg(ctx, fname, "dgesdd", info);
  }
  return PT_OK;
}

pt_status pt_linalg_svd(pt_ctx *ctx, const char *fname, pt_tensor *A, bool full_matrices,
                        pt_tensor **U, pt_tensor **S, pt_tensor **Vh) {
  pt_status st = check_matrix(ctx, fname, A, false);
  if (st) return st;
  bool want = U != NULL, need = want || pt_autograd_needed(ctx, 1, &A);
  char jobz = want ? (full_matrices ? 'A' : 'S') : need ? 'S' : 'N';
  int nd = A->ndim;
  int64_t m = A->shape[nd - 2], n = A->shape[nd - 1], k = mini(m, n);
  int64_t uc = jobz == 'A' ? m : k, vr = jobz == 'A' ? n : k;
  int64_t ushape[PT_MAX_DIMS], sshape[PT_MAX_DIMS], vshape[PT_MAX_DIMS];
  batch_shape(A, 2, m, uc, ushape);
  batch_shape(A, 2, k, -1, sshape);
  batch_shape(A, 2, vr, n, vshape);
  pt_tensor *W = NULL, *U64 = NULL, *S64 = NULL, *V64 = NULL, *uo = NULL, *so = NULL, *vo = NULL;
  if ((st = to64(ctx, A, nd, A->shape, &W)) || (st = new64(ctx, nd - 1, sshape, false, &S64))) goto done;
  if (need && ((st = new64(ctx, nd, ushape, true, &U64)) || (st = new64(ctx, nd, vshape, true, &V64))))
    goto done;
  if ((st = svd_batch(ctx, fname, nd > 2, W, jobz, need ? dp(U64) : NULL, dp(S64), need ? dp(V64) : NULL)))
    goto done;
  if ((st = as_dtype(ctx, S64, A->dtype, &so))) goto done;
  if (want && ((st = as_dtype(ctx, U64, A->dtype, &uo)) || (st = as_dtype(ctx, V64, A->dtype, &vo))))
    goto done;
  if (need) {
    pt_tensor *save[3] = {U64, S64, V64}, *outs[3] = {uo, so, vo};
    for (int which = 0; which < 3; which++) {
      if (!outs[which]) continue;
      pt_node *node;
      if ((st = record(ctx, outs[which], "LinalgSvdBackward", svd_backward, 1, &A, 3, save, &node))) goto done;
      if (node) {
        node->ints[0] = which;
        node->n_ints = 1;
      }
    }
  }
done:
  pt_tensor_release(W);
  pt_tensor_release(U64);
  pt_tensor_release(S64);
  pt_tensor_release(V64);
  if (st) {
    pt_tensor_release(uo);
    pt_tensor_release(so);
    pt_tensor_release(vo);
    return st;
  }
  *S = so;
  if (U) *U = uo;
  if (Vh) *Vh = vo;
  return PT_OK;
}

/* ------------------------------------------------------------------ pinv, matrix_rank */

static double dtype_eps(pt_dtype dt) { return dt == PT_FLOAT32 ? 1.1920928955078125e-07 : 2.220446049250313e-16; }

/* PyTorch's tolerance: max(atol, rtol * largest); atol/rtol NAN when not given */
static double tolerance(double atol, double rtol, double largest, pt_dtype dt, int64_t m, int64_t n) {
  bool has_atol = !isnan(atol), has_rtol = !isnan(rtol);
  if (!has_atol) atol = 0;
  if (!has_rtol) rtol = has_atol && atol > 0 ? 0 : dtype_eps(dt) * (double)maxi(m, n);
  double r = rtol * largest;
  return atol > r ? atol : r;
}

/* Pseudo-inverse P (n x m) of a (m x n) by SVD, or of a symmetric a by eigh (lower triangle).
 * Fills *rank when rank != NULL. w: m*n + m*k + k*n + k + n*k (+ n*n) doubles. */
static pt_status pinv_one(pt_ctx *ctx, const char *fname, bool batched, int64_t b, int64_t m, int64_t n,
                          const double *a, double atol, double rtol, pt_dtype dt, bool hermitian,
                          double *w, double *P, int64_t *rank) {
  int64_t k = mini(m, n), r = 0;
  double *c = w, *u = c + m * n, *s = u + m * k, *vt = s + k, *t = vt + k * n;
  if (!all_finite(a, m * n))
    return fail_at(ctx, PT_EARG, batched, b,
                   "%s: the algorithm failed to converge because the matrix contains non-finite values", fname);
  memcpy(c, a, sizeof(double) * (size_t)(m * n));
  if (k == 0) {
    for (int64_t i = 0; i < m * n; i++) P[i] = 0;
    if (rank) *rank = 0;
    return PT_OK;
  }
  if (hermitian) {
    lapack_int info = LAPACK_CALL(dsyevd, LAPACK_ROW_MAJOR, 'V', 'L', (int)n, c, ld(n), s);
    if (info)
      return fail_at(ctx, PT_EARG, batched, b, "%s: the algorithm failed to converge (LAPACK dsyevd info %d)",
                     fname, (int)info);
    double big = 0;
    for (int64_t i = 0; i < n; i++) big = fabs(s[i]) > big ? fabs(s[i]) : big;
    double tol = tolerance(atol, rtol, big, dt, m, n);
    for (int64_t i = 0; i < n; i++) /* t = V diag(1/s) */
      for (int64_t j = 0; j < n; j++) t[i * n + j] = fabs(s[j]) > tol ? c[i * n + j] / s[j] : 0;
    for (int64_t j = 0; j < n; j++) r += fabs(s[j]) > tol;
    mm(ctx, false, true, n, n, n, 1.0, t, c, 0.0, P);
  } else {
    lapack_int info =
        LAPACK_CALL(dgesdd, LAPACK_ROW_MAJOR, 'S', (int)m, (int)n, c, ld(n), s, u, ld(k), vt, ld(n));
    if (info)
      return fail_at(ctx, PT_EARG, batched, b, "%s: the algorithm failed to converge (LAPACK dgesdd info %d)",
                     fname, (int)info);
    double tol = tolerance(atol, rtol, s[0], dt, m, n);
    for (int64_t i = 0; i < n; i++) /* t (n x k) = V diag(1/s) */
      for (int64_t j = 0; j < k; j++) t[i * k + j] = s[j] > tol ? vt[j * n + i] / s[j] : 0;
    for (int64_t j = 0; j < k; j++) r += s[j] > tol;
    mm(ctx, false, true, n, m, k, 1.0, t, u, 0.0, P);
  }
  if (rank) *rank = r;
  return PT_OK;
}

static int64_t pinv_scratch(int64_t m, int64_t n) {
  int64_t k = mini(m, n);
  return m * n + m * k + k + k * n + maxi(n * k, n * n) + 1;
}

/* PyTorch's pinv_backward: gA (m x n) from gP (n x m), P = pinv(A). w: 5 max(m,n)^2 */
static void pinv_grad(const pt_ctx *ctx, int64_t m, int64_t n, const double *A, const double *P,
                      const double *gP, double *w, double *gA) {
  int64_t big = maxi(m, n);
  double *K = w, *T1 = K + big * big, *T2 = T1 + big * big, *T3 = T2 + big * big, *R = T3 + big * big;
  transpose_into(n, m, gP, R); /* gP^T: m x n */
  if (m <= n) {
    mm(ctx, true, false, m, m, n, 1.0, gP, P, 0.0, K);       /* K = gP^T P (m x m) */
    mm(ctx, false, true, m, n, m, 1.0, K, P, 0.0, gA);       /* K P^T (m x n) */
    mm(ctx, false, false, n, m, m, 1.0, P, K, 0.0, T1);      /* P K (n x m) */
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) T3[i * n + j] = gA[i * n + j];
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) gA[i * n + j] -= T1[j * m + i];
    mm(ctx, false, false, m, m, n, 1.0, A, P, 0.0, T2);      /* A P (m x m) */
    mm(ctx, false, false, m, n, m, -1.0, T2, T3, 1.0, gA);   /* - A P K P^T */
    mm(ctx, false, false, m, n, m, -1.0, K, A, 1.0, R);      /* gP^T - K A */
    mm(ctx, true, false, m, m, n, 1.0, P, P, 0.0, T2);       /* P^T P (m x m) */
    mm(ctx, false, false, m, n, m, 1.0, T2, R, 1.0, gA);
  } else {
    mm(ctx, false, true, n, n, m, 1.0, P, gP, 0.0, K);       /* K = P gP^T (n x n) */
    mm(ctx, true, false, m, n, n, 1.0, P, K, 0.0, gA);       /* P^T K (m x n) */
    for (int64_t i = 0; i < m * n; i++) T3[i] = gA[i];
    mm(ctx, false, false, n, m, n, 1.0, K, P, 0.0, T1);      /* K P (n x m) */
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) gA[i * n + j] -= T1[j * m + i];
    mm(ctx, false, false, m, n, n, -1.0, A, K, 1.0, R);      /* gP^T - A K */
    mm(ctx, false, false, m, m, n, 1.0, R, P, 0.0, T2);      /* (..) P (m x m) */
    mm(ctx, false, true, m, n, m, 1.0, T2, P, 1.0, gA);      /* (..) P P^T */
    mm(ctx, false, false, m, m, n, 1.0, T3, P, 0.0, T2);     /* P^T K P (m x m) */
    mm(ctx, false, false, m, n, m, -1.0, T2, A, 1.0, gA);
  }
}

/* saved: 0 A64, 1 P64 */
static pt_status pinv_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *A64 = node->saved[0], *P64 = node->saved[1], *G = NULL, *GA = NULL;
  int nd = A64->ndim;
  int64_t m = A64->shape[nd - 2], n = A64->shape[nd - 1], big = maxi(m, n);
  int64_t batch = pt_shape_numel(nd - 2, A64->shape);
  pt_status st = grad64(ctx, g, P64->ndim, P64->shape, &G);
  if (!st) st = new64(ctx, nd, A64->shape, false, &GA);
  if (st) goto done;
  double *w = scratch(ctx, 5 * big * big, &st);
  if (!w) goto done;
  for (int64_t b = 0; b < batch; b++)
    pinv_grad(ctx, m, n, dp(A64) + b * m * n, dp(P64) + b * m * n, dp(G) + b * m * n, w, dp(GA) + b * m * n);
  pt_free(w);
  st = grad_to(ctx, GA, node->inputs[0], &gin[0]);
done:
  pt_tensor_release(G);
  pt_tensor_release(GA);
  return st;
}

static pt_status check_tols(pt_ctx *ctx, const char *fname, const pt_tensor *A, bool hermitian,
                            double atol, double rtol) {
  char s[PT_SHAPE_STR_MAX];
  if (hermitian && A->shape[A->ndim - 1] != A->shape[A->ndim - 2])
    return pt_fail(ctx, PT_ESHAPE, "%s: hermitian = true needs square matrices, got shape %s", fname, shp(A, s));
  if (atol < 0 || rtol < 0)
    return pt_fail(ctx, PT_EARG, "%s: atol and rtol must be >= 0, got %g and %g", fname, atol, rtol);
  return PT_OK;
}

pt_status pt_linalg_pinv(pt_ctx *ctx, const char *fname, pt_tensor *A, double atol, double rtol,
                         bool hermitian, pt_tensor **out) {
  pt_status st = check_matrix(ctx, fname, A, false);
  if (!st) st = check_tols(ctx, fname, A, hermitian, atol, rtol);
  if (st) return st;
  int nd = A->ndim;
  int64_t m = A->shape[nd - 2], n = A->shape[nd - 1], batch = pt_shape_numel(nd - 2, A->shape);
  int64_t pshape[PT_MAX_DIMS];
  batch_shape(A, 2, n, m, pshape);
  pt_tensor *W = NULL, *P = NULL, *o = NULL;
  double *w = NULL;
  if ((st = to64(ctx, A, nd, A->shape, &W)) || (st = new64(ctx, nd, pshape, false, &P))) goto done;
  if (!(w = scratch(ctx, pinv_scratch(m, n), &st))) goto done;
  for (int64_t b = 0; b < batch; b++)
    if ((st = pinv_one(ctx, fname, nd > 2, b, m, n, dp(W) + b * m * n, atol, rtol, A->dtype, hermitian, w,
                       dp(P) + b * m * n, NULL)))
      goto done;
  if ((st = as_dtype(ctx, P, A->dtype, &o))) goto done;
  pt_tensor *save[2] = {W, P};
  st = record(ctx, o, "LinalgPinvBackward", pinv_backward, 1, &A, 2, save, NULL);
done:
  pt_free(w);
  pt_tensor_release(W);
  pt_tensor_release(P);
  if (st) {
    pt_tensor_release(o);
    return st;
  }
  *out = o;
  return PT_OK;
}

pt_status pt_linalg_matrix_rank(pt_ctx *ctx, pt_tensor *A, double atol, double rtol, bool hermitian,
                                pt_tensor **out) {
  const char *fname = "linalg.matrix_rank";
  pt_status st = check_matrix(ctx, fname, A, false);
  if (!st) st = check_tols(ctx, fname, A, hermitian, atol, rtol);
  if (st) return st;
  int nd = A->ndim;
  int64_t m = A->shape[nd - 2], n = A->shape[nd - 1], batch = pt_shape_numel(nd - 2, A->shape);
  pt_tensor *W = NULL, *o = NULL;
  double *w = NULL, *P = NULL;
  if ((st = to64(ctx, A, nd, A->shape, &W)) || (st = pt_tensor_empty(ctx, PT_INT64, nd - 2, A->shape, &o)))
    goto done;
  if (!(w = scratch(ctx, pinv_scratch(m, n) + m * n, &st))) goto done;
  P = w + pinv_scratch(m, n);
  for (int64_t b = 0; b < batch; b++)
    if ((st = pinv_one(ctx, fname, nd > 2, b, m, n, dp(W) + b * m * n, atol, rtol, A->dtype, hermitian, w, P,
                       (int64_t *)pt_tensor_data(o) + b)))
      goto done;
done:
  pt_free(w);
  pt_tensor_release(W);
  if (st) {
    pt_tensor_release(o);
    return st;
  }
  *out = o;
  return PT_OK;
}

/* ------------------------------------------------------------------ lstsq */

/* saved: 0 A64 (batch x m x n), 1 B64 (batch x m x k); ints[0] vector case; scalars[0] the
 * dtype's eps (pinv's default tolerance) */
static pt_status lstsq_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *A64 = node->saved[0], *B64 = node->saved[1], *G = NULL, *GA = NULL, *GB = NULL;
  int nd = A64->ndim;
  int64_t m = A64->shape[nd - 2], n = A64->shape[nd - 1], k = B64->shape[nd - 1], big = maxi(m, n);
  int64_t batch = pt_shape_numel(nd - 2, A64->shape), xshape[PT_MAX_DIMS];
  memcpy(xshape, B64->shape, sizeof(int64_t) * (size_t)nd);
  xshape[nd - 2] = n;
  pt_tensor *A = node->inputs[0];
  pt_status st = grad64(ctx, g, nd, xshape, &G);
  if (!st) st = new64(ctx, nd, A64->shape, false, &GA);
  if (!st) st = new64(ctx, nd, B64->shape, false, &GB);
  if (st) goto done;
  int64_t ps = pinv_scratch(m, n);
  double *w = scratch(ctx, ps + 2 * m * n + 5 * big * big, &st);
  if (!w) goto done;
  double *P = w + ps, *gP = P + m * n, *w2 = gP + m * n;
  for (int64_t b = 0; b < batch; b++) {
    const double *a = dp(A64) + b * m * n, *bb = dp(B64) + b * m * k, *gx = dp(G) + b * n * k;
    if ((st = pinv_one(ctx, "linalg.lstsq backward", false, b, m, n, a, NAN, NAN, A->dtype, false, w, P, NULL)))
      break;
    mm(ctx, true, false, m, k, n, 1.0, P, gx, 0.0, dp(GB) + b * m * k); /* gB = P^T gX */
    mm(ctx, false, true, n, m, k, 1.0, gx, bb, 0.0, gP);                /* gP = gX B^T */
    pinv_grad(ctx, m, n, a, P, gP, w2, dp(GA) + b * m * n);
  }
  pt_free(w);
  if (st) goto done;
  if (node->needs_grad[0] && (st = grad_to(ctx, GA, A, &gin[0]))) goto done;
  if (node->needs_grad[1]) {
    pt_tensor *v = GB;
    if (node->ints[0]) {
      if ((st = pt_view_raw(ctx, GB, nd - 1, B64->shape, &v))) goto done;
    } else {
      pt_tensor_retain(v);
    }
    st = grad_to(ctx, v, node->inputs[1], &gin[1]);
    pt_tensor_release(v);
  }
done:
  pt_tensor_release(G);
  pt_tensor_release(GA);
  pt_tensor_release(GB);
  return st;
}

pt_status pt_linalg_lstsq(pt_ctx *ctx, pt_tensor *A, pt_tensor *B, double rcond,
                          pt_lstsq_driver driver, pt_tensor **solution, pt_tensor **residuals,
                          pt_tensor **rank, pt_tensor **singular_values) {
  const char *fname = "linalg.lstsq";
  static const char *const names[] = {"gels", "gelsy", "gelsd", "gelss"};
  pt_status st = check_matrix(ctx, fname, A, false);
  if (!st) st = check_same_dtype(ctx, fname, A, B);
  if (st) return st;
  char sa[PT_SHAPE_STR_MAX], sb[PT_SHAPE_STR_MAX];
  int na = A->ndim;
  int64_t m = A->shape[na - 2], n = A->shape[na - 1], kk = mini(m, n);
  if (B->ndim < 1)
    return pt_fail(ctx, PT_ESHAPE, "%s: B must have at least 1 dimension, got shape %s", fname, shp(B, sb));
  /* torch's lstsq takes B as vectors whenever it has one dim less than A */
  bool vector = B->ndim == 1 || B->ndim == na - 1;
  int bnd = vector ? B->ndim - 1 : B->ndim - 2;
  if (B->shape[bnd] != m)
    return pt_fail(ctx, PT_ESHAPE, "%s: A of shape %s and B of shape %s need the same number of rows (%lld and %lld)",
                   fname, shp(A, sa), shp(B, sb), (long long)m, (long long)B->shape[bnd]);
  int nbatch;
  int64_t bshape[PT_MAX_DIMS + 1], ashape[PT_MAX_DIMS], k = vector ? 1 : B->shape[B->ndim - 1];
  if (pt_broadcast_shapes(ctx, fname, na - 2, A->shape, bnd, B->shape, &nbatch, bshape))
    return pt_fail(ctx, PT_ESHAPE, "%s: the batch dims of A %s and B %s cannot be broadcast", fname, shp(A, sa),
                   shp(B, sb));
  int nd = nbatch + 2;
  memcpy(ashape, bshape, sizeof(int64_t) * (size_t)nbatch);
  ashape[nbatch] = m;
  ashape[nbatch + 1] = n;
  bshape[nbatch] = m;
  bshape[nbatch + 1] = k;
  int64_t batch = pt_shape_numel(nbatch, bshape), big = maxi(m, n);
  if (rcond < 0) rcond = dtype_eps(A->dtype) * (double)big;
  bool has_rank = driver != PT_LSTSQ_GELS, has_sv = driver == PT_LSTSQ_GELSD || driver == PT_LSTSQ_GELSS;
  pt_tensor *Bv = NULL, *A64 = NULL, *B64 = NULL, *X64 = NULL, *S64 = NULL, *Rk = NULL, *Res = NULL;
  pt_tensor *xo = NULL, *x = NULL, *ro = NULL, *so = NULL;
  double *w = NULL;
  lapack_int *jpvt = NULL;
  if (vector) {
    if ((st = pt_unsqueeze_raw(ctx, B, B->ndim, &Bv))) return st;
  } else {
    Bv = pt_tensor_retain(B);
  }
  int64_t xshape[PT_MAX_DIMS], sshape[PT_MAX_DIMS];
  memcpy(xshape, bshape, sizeof(int64_t) * (size_t)nd);
  xshape[nbatch] = n;
  memcpy(sshape, bshape, sizeof(int64_t) * (size_t)nbatch);
  sshape[nbatch] = kk;
  if ((st = to64(ctx, A, nd, ashape, &A64)) || (st = to64(ctx, Bv, nd, bshape, &B64)) ||
      (st = new64(ctx, nd, xshape, false, &X64)))
    goto done;
  if (has_sv && (st = new64(ctx, nbatch + 1, sshape, false, &S64))) goto done;
  if (has_rank && (st = pt_tensor_empty(ctx, PT_INT64, nbatch, bshape, &Rk))) goto done;
  if (!(w = scratch(ctx, m * n + big * k + kk + 1, &st))) goto done;
  if (!(jpvt = pt_alloc(ctx, sizeof(lapack_int) * (size_t)(n + 1)))) {
    st = pt_fail(ctx, PT_ENOMEM, "%s: out of memory", fname);
    goto done;
  }
  bool full_rank = true;
  int64_t rshape[PT_MAX_DIMS];
  memcpy(rshape, bshape, sizeof(int64_t) * (size_t)nbatch);
  rshape[nbatch] = k;
  bool want_res = m > n && driver != PT_LSTSQ_GELSY && !vector;
  if (want_res && (st = new64(ctx, nbatch + 1, rshape, true, &Res))) goto done;
  for (int64_t b = 0; b < batch; b++) {
    double *a = w, *bb = w + m * n, *xb = dp(X64) + b * n * k;
    memcpy(a, dp(A64) + b * m * n, sizeof(double) * (size_t)(m * n));
    for (int64_t i = 0; i < big * k; i++) bb[i] = 0;
    memcpy(bb, dp(B64) + b * m * k, sizeof(double) * (size_t)(m * k));
    lapack_int r = (lapack_int)kk, info = 0;
    if (has_nan(a, m * n) || has_nan(bb, m * k)) {
      fill_nan(bb, big * k);
      if (has_sv) fill_nan(dp(S64) + b * kk, kk);
    } else if (kk > 0 && k > 0) {
      switch (driver) {
      case PT_LSTSQ_GELS:
        info = LAPACK_CALL(dgels, LAPACK_ROW_MAJOR, 'N', (int)m, (int)n, (int)k, a, ld(n), bb, ld(k));
        break;
      case PT_LSTSQ_GELSY:
        memset(jpvt, 0, sizeof(lapack_int) * (size_t)(n + 1));
        info = LAPACK_CALL(dgelsy, LAPACK_ROW_MAJOR, (int)m, (int)n, (int)k, a, ld(n), bb, ld(k), jpvt, rcond, &r);
        break;
      case PT_LSTSQ_GELSD:
        info = LAPACK_CALL(dgelsd, LAPACK_ROW_MAJOR, (int)m, (int)n, (int)k, a, ld(n), bb, ld(k), dp(S64) + b * kk,
                              rcond, &r);
        break;
      case PT_LSTSQ_GELSS:
        info = LAPACK_CALL(dgelss, LAPACK_ROW_MAJOR, (int)m, (int)n, (int)k, a, ld(n), bb, ld(k), dp(S64) + b * kk,
                              rcond, &r);
        break;
      }
      if (info > 0) {
        st = driver == PT_LSTSQ_GELS
                 ? fail_at(ctx, PT_EARG, nbatch > 0, b,
                           "%s: the matrix does not have full rank (diagonal element %d of its triangular "
                           "factor is zero): use driver gelsy, gelsd or gelss",
                           fname, (int)info)
                 : fail_at(ctx, PT_EARG, nbatch > 0, b, "%s: the algorithm failed to converge (LAPACK d%s info %d)",
                           fname, names[driver], (int)info);
        goto done;
      }
      if (info < 0) {
        st = lapack_arg(ctx, fname, names[driver], info);
        goto done;
      }
    } else if (kk > 0 && has_rank) { /* no columns in B: the rank and singular values of A alone */
      double *s = has_sv ? dp(S64) + b * kk : bb + big * k, dummy[1];
      if (!all_finite(a, m * n) ||
          LAPACK_CALL(dgesdd, LAPACK_ROW_MAJOR, 'N', (int)m, (int)n, a, ld(n), s, dummy, 1, dummy, ld(n)))
        fill_nan(s, kk);
      r = 0;
      for (int64_t i = 0; i < kk; i++) r += s[i] > rcond * s[0];
    }
    if (has_rank) ((int64_t *)pt_tensor_data(Rk))[b] = r;
    if (r < n) full_rank = false;
    memcpy(xb, bb, sizeof(double) * (size_t)(n * k));
    if (want_res)
      for (int64_t i = n; i < m; i++)
        for (int64_t j = 0; j < k; j++) dp(Res)[b * k + j] += bb[i * k + j] * bb[i * k + j];
  }
  /* outputs */
  if ((st = as_dtype(ctx, X64, A->dtype, &xo))) goto done;
  if (vector) {
    if ((st = pt_view_raw(ctx, xo, nd - 1, xshape, &x))) goto done;
  } else {
    x = pt_tensor_retain(xo);
  }
  int64_t zero = 0;
  if (want_res && (!has_rank || full_rank)) {
    if ((st = as_dtype(ctx, Res, A->dtype, &ro))) goto done;
  } else if ((st = pt_tensor_empty(ctx, A->dtype, 1, &zero, &ro))) {
    goto done;
  }
  if (has_sv) {
    if ((st = as_dtype(ctx, S64, A->dtype, &so))) goto done;
  } else if ((st = pt_tensor_empty(ctx, A->dtype, 1, &zero, &so))) {
    goto done;
  }
  if (!has_rank && (st = pt_tensor_empty(ctx, PT_INT64, 1, &zero, &Rk))) goto done;
  pt_tensor *ins[2] = {A, B}, *save[2] = {A64, B64};
  pt_node *node;
  if ((st = record(ctx, x, "LinalgLstsqBackward", lstsq_backward, 2, ins, 2, save, &node))) goto done;
  if (node) {
    node->ints[0] = vector;
    node->n_ints = 1;
  }
done:
  pt_free(w);
  pt_free(jpvt);
  pt_tensor_release(Bv);
  pt_tensor_release(A64);
  pt_tensor_release(B64);
  pt_tensor_release(X64);
  pt_tensor_release(S64);
  pt_tensor_release(Res);
  pt_tensor_release(xo);
  if (st) {
    pt_tensor_release(x);
    pt_tensor_release(ro);
    pt_tensor_release(so);
    pt_tensor_release(Rk);
    return st;
  }
  *solution = x;
  *residuals = ro;
  *rank = Rk;
  *singular_values = so;
  return PT_OK;
}

/* ------------------------------------------------------------------ vector_norm */

static double sgn(double x) { return x > 0 ? 1 : x < 0 ? -1 : x; }

static double row_norm(const double *x, int64_t c, double p) {
  double acc;
  if (isinf(p)) {
    acc = p > 0 ? 0 : INFINITY;
    for (int64_t j = 0; j < c; j++) {
      double a = fabs(x[j]);
      if (isnan(a)) return NAN;
      if (p > 0 ? a > acc : a < acc) acc = a;
    }
    return acc;
  }
  acc = 0;
  if (p == 0) {
    for (int64_t j = 0; j < c; j++) acc += x[j] != 0;
    return acc;
  }
  if (p == 1) {
    for (int64_t j = 0; j < c; j++) acc += fabs(x[j]);
    return acc;
  }
  if (p == 2) {
    for (int64_t j = 0; j < c; j++) acc += x[j] * x[j];
    return sqrt(acc);
  }
  for (int64_t j = 0; j < c; j++) acc += pow(fabs(x[j]), p);
  return pow(acc, 1.0 / p);
}

/* torch's norm_backward for one row: gx from x, its norm and the output gradient */
static void row_norm_grad(const double *x, int64_t c, double p, double norm, double g, double *gx) {
  if (p == 0) {
    for (int64_t j = 0; j < c; j++) gx[j] = 0;
  } else if (p == 1) {
    for (int64_t j = 0; j < c; j++) gx[j] = sgn(x[j]) * g;
  } else if (p == 2) {
    for (int64_t j = 0; j < c; j++) gx[j] = norm == 0 ? 0 : g * x[j] / norm;
  } else if (isinf(p)) { /* shared evenly by the elements at the max (min), NaNs included */
    int64_t cnt = 0;
    for (int64_t j = 0; j < c; j++) cnt += fabs(x[j]) == norm || isnan(x[j]);
    for (int64_t j = 0; j < c; j++)
      gx[j] = fabs(x[j]) == norm || isnan(x[j]) ? sgn(x[j]) * g / (double)cnt : 0;
  } else if (p < 1) {
    for (int64_t j = 0; j < c; j++)
      gx[j] = x[j] == 0 ? 0 : sgn(x[j]) * pow(fabs(x[j]), p - 1) * g * pow(norm, 1 - p);
  } else {
    double scale = norm == 0 ? 0 : g / pow(norm, p - 1);
    for (int64_t j = 0; j < c; j++)
      gx[j] = p < 2 ? sgn(x[j]) * pow(fabs(x[j]), p - 1) * scale : x[j] * pow(fabs(x[j]), p - 2) * scale;
  }
}

/* saved: 0 the input permuted (kept dims first) as float64, 1 the norms; ints: the
 * permutation; scalars[0] ord */
static pt_status vector_norm_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *W = node->saved[0], *N = node->saved[1], *x = node->inputs[0], *G = NULL, *GX = NULL, *v = NULL;
  int64_t rows = pt_tensor_numel(N), cols = rows ? pt_tensor_numel(W) / rows : 0;
  pt_status st = grad64(ctx, g, 1, &rows, &G);
  if (!st) st = new64(ctx, W->ndim, W->shape, false, &GX);
  if (st) goto done;
  for (int64_t r = 0; r < rows; r++)
    row_norm_grad(dp(W) + r * cols, cols, node->scalars[0], dp(N)[r], dp(G)[r], dp(GX) + r * cols);
  int inv[PT_MAX_DIMS];
  for (int i = 0; i < W->ndim; i++) inv[node->ints[i]] = i;
  if ((st = pt_permute_raw(ctx, GX, inv, &v))) goto done;
  if ((st = pt_tensor_empty(ctx, x->dtype, x->ndim, x->shape, &gin[0]))) goto done;
  st = pt_tensor_copy_into(ctx, gin[0], v);
done:
  pt_tensor_release(G);
  pt_tensor_release(GX);
  pt_tensor_release(v);
  return st;
}

pt_status pt_linalg_vector_norm(pt_ctx *ctx, pt_tensor *x, double ord, int ndims, const int *dims,
                                bool keepdim, pt_tensor **out) {
  const char *fname = "linalg.vector_norm";
  pt_status st = check_float(ctx, fname, x);
  if (st) return st;
  if (isnan(ord)) return pt_fail(ctx, PT_EARG, "%s: ord must be a number, got nan", fname);
  int nd = x->ndim, perm[PT_MAX_DIMS], np = 0;
  bool red[PT_MAX_DIMS] = {0};
  for (int i = 0; i < ndims; i++) {
    if (dims[i] < 0 || dims[i] >= (nd ? nd : 1))
      return pt_fail(ctx, PT_EARG, "%s: dimension %d out of range for a %d-dim tensor", fname, dims[i] + 1, nd);
    if (nd && red[dims[i]])
      return pt_fail(ctx, PT_EARG, "%s: dimension %d appears more than once in the list of dimensions", fname,
                     dims[i] + 1);
    if (nd) red[dims[i]] = true;
  }
  for (int i = 0; i < nd; i++)
    if (ndims == 0) red[i] = true;
  int64_t rows = 1, cols = 1, oshape[PT_MAX_DIMS], pshape[PT_MAX_DIMS];
  int ond = 0;
  for (int i = 0; i < nd; i++)
    if (!red[i]) {
      perm[np++] = i;
      rows *= x->shape[i];
      oshape[ond++] = x->shape[i];
    }
  for (int i = 0; i < nd; i++)
    if (red[i]) {
      perm[np++] = i;
      cols *= x->shape[i];
    }
  if (keepdim) {
    ond = nd;
    for (int i = 0; i < nd; i++) oshape[i] = red[i] ? 1 : x->shape[i];
  }
  for (int i = 0; i < nd; i++) pshape[i] = x->shape[perm[i]];
  if (cols == 0 && rows > 0 && (isinf(ord) || ord < 0))
    return pt_fail(ctx, PT_EARG,
                   "%s: cannot compute the %g norm of an empty reduction (the operation has no identity)", fname,
                   ord);
  pt_tensor *P = NULL, *W = NULL, *N = NULL, *r = NULL, *o = NULL;
  if ((st = pt_permute_raw(ctx, x, perm, &P)) || (st = to64(ctx, P, nd, pshape, &W)) ||
      (st = new64(ctx, 1, &rows, false, &N)))
    goto done;
  for (int64_t i = 0; i < rows; i++) dp(N)[i] = row_norm(dp(W) + i * cols, cols, ord);
  if ((st = as_dtype(ctx, N, x->dtype, &r)) || (st = pt_view_raw(ctx, r, ond, oshape, &o))) goto done;
  pt_tensor *save[2] = {W, N};
  pt_node *node;
  if ((st = record(ctx, o, "LinalgVectorNormBackward", vector_norm_backward, 1, &x, 2, save, &node))) goto done;
  if (node) {
    for (int i = 0; i < nd; i++) node->ints[i] = perm[i];
    node->n_ints = nd;
    node->scalars[0] = ord;
  }
done:
  pt_tensor_release(P);
  pt_tensor_release(W);
  pt_tensor_release(N);
  pt_tensor_release(r);
  if (st) {
    pt_tensor_release(o);
    return st;
  }
  *out = o;
  return PT_OK;
}

/* ------------------------------------------------------------------ matrix_norm (composed) */

/* steals a: releases *t and puts a in its place */
static void swap_in(pt_tensor **t, pt_tensor *a) {
  pt_tensor_release(*t);
  *t = a;
}

pt_status pt_linalg_matrix_norm(pt_ctx *ctx, pt_tensor *A, pt_matrix_norm_kind kind, double ord,
                                int d0, int d1, bool keepdim, pt_tensor **out) {
  const char *fname = "linalg.matrix_norm";
  pt_status st = check_float(ctx, fname, A);
  if (st) return st;
  char s[PT_SHAPE_STR_MAX];
  int nd = A->ndim;
  if (nd < 2)
    return pt_fail(ctx, PT_ESHAPE, "%s: expected a matrix or a batch of matrices (2 or more dims), got shape %s",
                   fname, shp(A, s));
  if (d0 < 0 || d0 >= nd || d1 < 0 || d1 >= nd)
    return pt_fail(ctx, PT_EARG, "%s: dims %d and %d out of range for a %d-dim tensor", fname, d0 + 1, d1 + 1, nd);
  if (d0 == d1) return pt_fail(ctx, PT_EARG, "%s: the two dims must differ, got %d and %d", fname, d0 + 1, d1 + 1);
  if (kind == PT_NORM_ORD && !(fabs(ord) == 1 || fabs(ord) == 2 || isinf(ord)))
    return pt_fail(ctx, PT_EARG, "%s: order %g is not supported (use 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2)",
                   fname, ord);
  if (kind == PT_NORM_FRO) return pt_linalg_vector_norm(ctx, A, 2, 2, (int[]){d0, d1}, keepdim, out);
  int lo = d0 < d1 ? d0 : d1, hi = d0 < d1 ? d1 : d0;
  pt_tensor *t = NULL, *a = NULL;
  if (kind == PT_NORM_NUC || fabs(ord) == 2) {
    /* the singular values of A with d0, d1 moved last */
    int perm[PT_MAX_DIMS], np = 0;
    for (int i = 0; i < nd; i++)
      if (i != d0 && i != d1) perm[np++] = i;
    perm[np++] = d0;
    perm[np++] = d1;
    if ((st = pt_permute(ctx, A, perm, &t))) return st;
    st = pt_linalg_svd(ctx, fname, t, false, NULL, &a, NULL);
    swap_in(&t, a);
    if (st) goto fail;
    if (kind == PT_NORM_NUC) st = pt_sum(ctx, t, nd - 2, false, &a);
    else st = ord > 0 ? pt_max(ctx, t, nd - 2, false, &a, NULL) : pt_min(ctx, t, nd - 2, false, &a, NULL);
    if (st) goto fail;
    swap_in(&t, a);
    if (keepdim) {
      if ((st = pt_unsqueeze(ctx, t, lo, &a))) goto fail;
      swap_in(&t, a);
      if ((st = pt_unsqueeze(ctx, t, hi, &a))) goto fail;
      swap_in(&t, a);
    }
    *out = t;
    return PT_OK;
  }
  /* 1: max over d1 of the column sums (sum over d0); inf: max over d0 of the row sums */
  int sum_dim = fabs(ord) == 1 ? d0 : d1, ext_dim = fabs(ord) == 1 ? d1 : d0;
  if ((st = pt_abs(ctx, A, &t))) return st;
  if ((st = pt_sum(ctx, t, sum_dim, true, &a))) goto fail;
  swap_in(&t, a);
  st = ord > 0 ? pt_max(ctx, t, ext_dim, true, &a, NULL) : pt_min(ctx, t, ext_dim, true, &a, NULL);
  if (st) goto fail;
  swap_in(&t, a);
  if (!keepdim) {
    if ((st = pt_squeeze(ctx, t, hi, &a))) goto fail;
    swap_in(&t, a);
    if ((st = pt_squeeze(ctx, t, lo, &a))) goto fail;
    swap_in(&t, a);
  }
  *out = t;
  return PT_OK;
fail:
  pt_tensor_release(t);
  return st;
}

/* ------------------------------------------------------------------ matrix_power, multi_dot */

pt_status pt_linalg_matrix_power(pt_ctx *ctx, pt_tensor *A, int64_t n, pt_tensor **out) {
  const char *fname = "linalg.matrix_power";
  pt_status st = check_matrix(ctx, fname, A, true);
  if (st) return st;
  if (n == 0) { /* the identity, with a zero gradient as torch's clone().copy_(eye) */
    pt_tensor *eye = NULL, *c = NULL;
    int64_t k = A->shape[A->ndim - 1];
    if ((st = pt_tensor_zeros(ctx, A->dtype, 2, (int64_t[]){k, k}, &eye))) return st;
    for (int64_t i = 0; i < k; i++) pt_tensor_set(eye, (int64_t[]){i, i}, 1.0);
    if (!(st = pt_clone(ctx, A, &c))) st = pt_copy_(ctx, c, eye);
    pt_tensor_release(eye);
    if (st) {
      pt_tensor_release(c);
      return st;
    }
    *out = c;
    return PT_OK;
  }
  pt_tensor *base = NULL, *res = NULL, *t = NULL;
  if (n < 0) {
    if ((st = pt_linalg_inv(ctx, fname, A, &base))) return st;
    n = -n;
  } else {
    base = pt_tensor_retain(A);
  }
  while (n) {
    if (n & 1) {
      if (res) {
        if ((st = pt_matmul(ctx, res, base, &t))) goto done;
        swap_in(&res, t);
      } else {
        res = pt_tensor_retain(base);
      }
    }
    n >>= 1;
    if (n) {
      if ((st = pt_matmul(ctx, base, base, &t))) goto done;
      swap_in(&base, t);
    }
  }
  if (res == A) { /* A^1: a copy, as torch */
    st = pt_clone(ctx, A, &t);
    swap_in(&res, st ? NULL : t);
  }
done:
  pt_tensor_release(base);
  if (st) {
    pt_tensor_release(res);
    return st;
  }
  *out = res;
  return PT_OK;
}

/* the product of ts[i..j] in the order of split[][] (new reference) */
static pt_status chain(pt_ctx *ctx, pt_tensor *const *ts, const int *split, int n, int i, int j, pt_tensor **out) {
  if (i == j) {
    *out = pt_tensor_retain(ts[i]);
    return PT_OK;
  }
  int s = split[i * n + j];
  pt_tensor *a = NULL, *b = NULL;
  pt_status st = chain(ctx, ts, split, n, i, s, &a);
  if (!st) st = chain(ctx, ts, split, n, s + 1, j, &b);
  if (!st) st = pt_mm(ctx, a, b, out);
  pt_tensor_release(a);
  pt_tensor_release(b);
  return st;
}

pt_status pt_linalg_multi_dot(pt_ctx *ctx, int n, pt_tensor *const *ts, pt_tensor **out) {
  const char *fname = "linalg.multi_dot";
  char s1[PT_SHAPE_STR_MAX], s2[PT_SHAPE_STR_MAX];
  if (n < 2) return pt_fail(ctx, PT_EARG, "%s: expected at least 2 tensors, got %d", fname, n);
  for (int i = 0; i < n; i++) {
    bool end = i == 0 || i == n - 1;
    if (ts[i]->ndim != 2 && !(end && ts[i]->ndim == 1))
      return pt_fail(ctx, PT_ESHAPE, "%s: tensor %d must be %s, got shape %s", fname, i + 1,
                     end ? "1-D or 2-D (the first and the last may be vectors)" : "2-D", shp(ts[i], s1));
    if (!pt_dtype_is_floating(ts[i]->dtype) || ts[i]->dtype != ts[0]->dtype)
      return pt_fail(ctx, PT_EARG, "%s: expected float32 or float64 tensors of one dtype, got %s (tensor 1) and %s (tensor %d)",
                     fname, pt_dtype_name(ts[0]->dtype), pt_dtype_name(ts[i]->dtype), i + 1);
  }
  pt_tensor *m[64], **mats = m;
  int64_t dimv[65], *d = dimv;
  int *split = NULL;
  int64_t *cost = NULL;
  pt_status st = PT_OK;
  if (n > 64) {
    mats = pt_alloc(ctx, sizeof(pt_tensor *) * (size_t)n);
    d = pt_alloc(ctx, sizeof(int64_t) * (size_t)(n + 1));
    if (!mats || !d) {
      st = pt_fail(ctx, PT_ENOMEM, "%s: out of memory", fname);
      goto out_free;
    }
  }
  for (int i = 0; i < n; i++) mats[i] = NULL;
  /* vectors as a row (first) and a column (last) */
  bool first_vec = ts[0]->ndim == 1, last_vec = ts[n - 1]->ndim == 1;
  for (int i = 0; i < n && !st; i++) {
    if (i == 0 && first_vec) st = pt_unsqueeze(ctx, ts[0], 0, &mats[0]);
    else if (i == n - 1 && last_vec) st = pt_unsqueeze(ctx, ts[i], 1, &mats[i]);
    else mats[i] = pt_tensor_retain(ts[i]);
  }
  if (st) goto out;
  for (int i = 0; i + 1 < n; i++)
    if (mats[i]->shape[1] != mats[i + 1]->shape[0]) {
      st = pt_fail(ctx, PT_ESHAPE, "%s: tensors %d and %d of shapes %s and %s cannot be multiplied", fname, i + 1,
                   i + 2, shp(ts[i], s1), shp(ts[i + 1], s2));
      goto out;
    }
  d[0] = mats[0]->shape[0];
  for (int i = 0; i < n; i++) d[i + 1] = mats[i]->shape[1];
  /* the matrix chain order (fewest multiplications), as torch for 3+ tensors */
  split = pt_alloc(ctx, sizeof(int) * (size_t)(n * n));
  cost = pt_alloc(ctx, sizeof(int64_t) * (size_t)(n * n));
  if (!split || !cost) {
    st = pt_fail(ctx, PT_ENOMEM, "%s: out of memory", fname);
    goto out;
  }
  for (int i = 0; i < n; i++) cost[i * n + i] = 0;
  for (int len = 1; len < n; len++)
    for (int i = 0; i + len < n; i++) {
      int j = i + len;
      cost[i * n + j] = INT64_MAX;
      for (int k = i; k < j; k++) {
        int64_t c = cost[i * n + k] + cost[(k + 1) * n + j] + d[i] * d[k + 1] * d[j + 1];
        if (c < cost[i * n + j]) {
          cost[i * n + j] = c;
          split[i * n + j] = k;
        }
      }
    }
  pt_tensor *r = NULL, *v = NULL;
  if ((st = chain(ctx, mats, split, n, 0, n - 1, &r))) goto out;
  if (first_vec && last_vec) st = pt_view(ctx, r, 0, NULL, &v);
  else if (first_vec) st = pt_squeeze(ctx, r, 0, &v);
  else if (last_vec) st = pt_squeeze(ctx, r, 1, &v);
  else v = pt_tensor_retain(r);
  pt_tensor_release(r);
  if (!st) *out = v;
out:
  for (int i = 0; i < n; i++) pt_tensor_release(mats[i]);
out_free:
  pt_free(split);
  pt_free(cost);
  if (mats != m) pt_free(mats);
  if (d != dimv) pt_free(d);
  return st;
}

/* ------------------------------------------------------------------ cross (composed) */

pt_status pt_linalg_cross(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, int dim, pt_tensor **out) {
  const char *fname = "linalg.cross";
  char sa[PT_SHAPE_STR_MAX], sb[PT_SHAPE_STR_MAX];
  if (a->ndim != b->ndim)
    return pt_fail(ctx, PT_ESHAPE, "%s: inputs must have the same number of dims, got shapes %s and %s", fname,
                   shp(a, sa), shp(b, sb));
  int nd = a->ndim, nout;
  int64_t shape[PT_MAX_DIMS];
  if (nd == 0 || dim < 0 || dim >= nd)
    return pt_fail(ctx, PT_EARG, "%s: dimension %d out of range for shapes %s and %s", fname, dim + 1, shp(a, sa),
                   shp(b, sb));
  if (a->shape[dim] != 3 || b->shape[dim] != 3)
    return pt_fail(ctx, PT_ESHAPE, "%s: dimension %d must have size 3 in both inputs, got shapes %s and %s", fname,
                   dim + 1, shp(a, sa), shp(b, sb));
  if (pt_broadcast_shapes(ctx, fname, nd, a->shape, nd, b->shape, &nout, shape))
    return pt_fail(ctx, PT_ESHAPE, "%s: shapes %s and %s cannot be broadcast", fname, shp(a, sa), shp(b, sb));
  /* (a2 b3 - a3 b2, a3 b1 - a1 b3, a1 b2 - a2 b1) */
  pt_tensor *ac[3] = {0}, *bc[3] = {0}, *parts[3] = {0};
  pt_status st = PT_OK;
  for (int i = 0; i < 3 && !st; i++) {
    st = pt_narrow(ctx, a, dim, i, 1, &ac[i]);
    if (!st) st = pt_narrow(ctx, b, dim, i, 1, &bc[i]);
  }
  for (int i = 0; i < 3 && !st; i++) {
    int j = (i + 1) % 3, k = (i + 2) % 3;
    pt_tensor *p = NULL, *q = NULL;
    st = pt_mul(ctx, ac[j], bc[k], &p);
    if (!st) st = pt_mul(ctx, ac[k], bc[j], &q);
    if (!st) st = pt_sub(ctx, p, q, &parts[i]);
    pt_tensor_release(p);
    pt_tensor_release(q);
  }
  if (!st) st = pt_cat(ctx, 3, parts, dim, out);
  for (int i = 0; i < 3; i++) {
    pt_tensor_release(ac[i]);
    pt_tensor_release(bc[i]);
    pt_tensor_release(parts[i]);
  }
  return st;
}

/* ------------------------------------------------------------------ triangular solves */

/* saved: 0 A64 (batch x n x n), 1 X64 (batch x r x c); ints: upper, left, unitriangular */
static pt_status solve_tri_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *A64 = node->saved[0], *X64 = node->saved[1], *G = NULL, *GA = NULL;
  bool upper = node->ints[0], left = node->ints[1], unit = node->ints[2];
  int nd = X64->ndim;
  int64_t n = A64->shape[nd - 1], r = X64->shape[nd - 2], c = X64->shape[nd - 1];
  int64_t batch = pt_shape_numel(nd - 2, X64->shape);
  pt_status st = grad64(ctx, g, nd, X64->shape, &G);
  if (st) return st;
  for (int64_t b = 0; b < batch; b++) /* gB = op(A)^-T g */
    trsm(left, upper, true, unit, r, c, dp(A64) + b * n * n, dp(G) + b * r * c);
  if (node->needs_grad[0]) {
    if ((st = new64(ctx, nd, A64->shape, false, &GA))) goto done;
    for (int64_t b = 0; b < batch; b++) {
      double *ga = dp(GA) + b * n * n;
      const double *gb = dp(G) + b * r * c, *x = dp(X64) + b * r * c;
      if (left) mm(ctx, false, true, n, n, c, -1.0, gb, x, 0.0, ga); /* -gB X^T */
      else mm(ctx, true, false, n, n, r, -1.0, x, gb, 0.0, ga);      /* -X^T gB */
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
          if ((upper ? j < i : j > i) || (unit && i == j)) ga[i * n + j] = 0;
    }
    if ((st = grad_to(ctx, GA, node->inputs[0], &gin[0]))) goto done;
  }
  if (node->needs_grad[1]) st = grad_to(ctx, G, node->inputs[1], &gin[1]);
done:
  pt_tensor_release(G);
  pt_tensor_release(GA);
  return st;
}

pt_status pt_linalg_solve_triangular(pt_ctx *ctx, const char *fname, pt_tensor *A, pt_tensor *B,
                                     bool upper, bool left, bool unitriangular, pt_tensor **out) {
  pt_status st = check_matrix(ctx, fname, A, true);
  if (!st) st = check_same_dtype(ctx, fname, A, B);
  if (st) return st;
  char sa[PT_SHAPE_STR_MAX], sb[PT_SHAPE_STR_MAX];
  if (B->ndim < 2)
    return pt_fail(ctx, PT_ESHAPE, "%s: B must be a matrix or a batch of matrices (2 or more dims), got shape %s",
                   fname, shp(B, sb));
  int64_t n = A->shape[A->ndim - 1], r = B->shape[B->ndim - 2], c = B->shape[B->ndim - 1];
  if ((left ? r : c) != n)
    return pt_fail(ctx, PT_ESHAPE, "%s: A of shape %s and B of shape %s do not fit %s (%lldx%lld and %lldx%lld)",
                   fname, shp(A, sa), shp(B, sb), left ? "A X = B" : "X A = B", (long long)n, (long long)n,
                   (long long)r, (long long)c);
  int nbatch;
  int64_t shape[PT_MAX_DIMS], ashape[PT_MAX_DIMS];
  if (pt_broadcast_shapes(ctx, fname, A->ndim - 2, A->shape, B->ndim - 2, B->shape, &nbatch, shape))
    return pt_fail(ctx, PT_ESHAPE, "%s: the batch dims of A %s and B %s cannot be broadcast", fname, shp(A, sa),
                   shp(B, sb));
  memcpy(ashape, shape, sizeof(int64_t) * (size_t)nbatch);
  ashape[nbatch] = ashape[nbatch + 1] = n;
  shape[nbatch] = r;
  shape[nbatch + 1] = c;
  int nd = nbatch + 2;
  int64_t batch = pt_shape_numel(nbatch, shape);
  pt_tensor *A64 = NULL, *X64 = NULL, *o = NULL;
  if ((st = to64(ctx, A, nd, ashape, &A64)) || (st = to64(ctx, B, nd, shape, &X64))) goto done;
  for (int64_t b = 0; b < batch; b++) trsm(left, upper, false, unitriangular, r, c, dp(A64) + b * n * n, dp(X64) + b * r * c);
  if ((st = as_dtype(ctx, X64, A->dtype, &o))) goto done;
  pt_tensor *ins[2] = {A, B}, *save[2] = {A64, X64};
  pt_node *node;
  if ((st = record(ctx, o, "LinalgSolveTriangularBackward", solve_tri_backward, 2, ins, 2, save, &node))) goto done;
  if (node) {
    node->ints[0] = upper;
    node->ints[1] = left;
    node->ints[2] = unitriangular;
    node->n_ints = 3;
  }
done:
  pt_tensor_release(A64);
  pt_tensor_release(X64);
  if (st) {
    pt_tensor_release(o);
    return st;
  }
  *out = o;
  return PT_OK;
}

pt_status pt_cholesky_solve(pt_ctx *ctx, pt_tensor *B, pt_tensor *L, bool upper, pt_tensor **out) {
  const char *fname = "cholesky_solve";
  /* (L L^T) X = B: L Y = B, then L^T X = Y (upper: U^T Y = B, U X = Y) */
  pt_tensor *Lt = NULL, *Y = NULL;
  pt_status st = check_matrix(ctx, fname, L, true);
  if (!st) st = pt_transpose(ctx, L, L->ndim - 2, L->ndim - 1, &Lt);
  if (st) return st;
  if (upper) {
    st = pt_linalg_solve_triangular(ctx, fname, Lt, B, false, true, false, &Y);
    if (!st) st = pt_linalg_solve_triangular(ctx, fname, L, Y, true, true, false, out);
  } else {
    st = pt_linalg_solve_triangular(ctx, fname, L, B, false, true, false, &Y);
    if (!st) st = pt_linalg_solve_triangular(ctx, fname, Lt, Y, true, true, false, out);
  }
  pt_tensor_release(Lt);
  pt_tensor_release(Y);
  return st;
}

pt_status pt_trace(pt_ctx *ctx, pt_tensor *A, pt_tensor **out) {
  char s[PT_SHAPE_STR_MAX];
  if (A->ndim != 2) return pt_fail(ctx, PT_ESHAPE, "trace: expected a 2-D tensor, got shape %s", shp(A, s));
  pt_tensor *d = NULL;
  pt_status st = pt_diagonal(ctx, A, 0, 0, 1, &d);
  if (st) return st;
  st = pt_sum(ctx, d, PT_DIM_ALL, false, out);
  pt_tensor_release(d);
  return st;
}
