/* torch.linalg through LAPACKE (see ops_decomp.h).
 *
 * Every factorisation works on a contiguous copy of its input in the input's dtype, broadcast
 * to the batch shape (a "work" tensor: batch x rows x cols), and calls LAPACK's routines for
 * that dtype (float32: the s* routines, as PyTorch; float64: the d* ones) once per matrix
 * through one batch driver (lp_run: the loop, the NaN screen, one workspace for the batch,
 * LAPACK's info codes as messages). LAPACK is called column-major through LAPACKE's _work entry
 * points. A row-major matrix is its transpose column-major, so where the factors of A^T give
 * A's directly, the row-major copy is factorised as it is (LU: det(A^T) = det(A), inv(A^T)
 * read row-major is inv(A), A X = B is solved with triangular solves on B as it is; Cholesky and
 * eigh: the other triangle; SVD of a wide or square A: A^T's U and V^T read row-major are A's
 * Vh and U). QR, lstsq and the SVD of a tall A copy A transposed, as PyTorch does (gesdd's and
 * gels' paths for wide matrices and gelqf run at half the speed), and transpose what they give
 * back. Each function says how it reads its results.
 * The work tensors become the outputs, and what backward needs is saved in the input's dtype.
 * Backward functions take the saved tensors and the gradient to float64 and run PyTorch's
 * formulas per matrix with pt_gemm and triangular solves; the gradient is then summed over
 * broadcast batch dims and converted back. Outputs of one factorisation that are all
 * differentiable (Q and R, L and V, U, S and Vh) get one node each, saving the same factors:
 * each node's backward is the formula with the other outputs' gradients zero, and the engine
 * adds them up in A. A matrix with a NaN is never passed to LAPACK (its results are NaN, or an
 * error for the SVD-based functions). */
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

_Static_assert(sizeof(lapack_int) == sizeof(int32_t), "pivots are saved as int32 tensors");

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

/* A new contiguous tensor of dtype dt (zeroed when zero). */
static pt_status new_work(pt_ctx *ctx, pt_dtype dt, int ndim, const int64_t *shape, bool zero, pt_tensor **out) {
  return zero ? pt_tensor_zeros(ctx, dt, ndim, shape, out) : pt_tensor_empty(ctx, dt, ndim, shape, out);
}

static pt_status new64(pt_ctx *ctx, int ndim, const int64_t *shape, bool zero, pt_tensor **out) {
  return new_work(ctx, PT_FLOAT64, ndim, shape, zero, out);
}

/* A contiguous copy of t as dt, broadcast to (ndim, shape). */
static pt_status to_work(pt_ctx *ctx, const pt_tensor *t, pt_dtype dt, int ndim, const int64_t *shape,
                         pt_tensor **out) {
  pt_tensor *w;
  pt_status st = new_work(ctx, dt, ndim, shape, false, &w);
  if (st) return st;
  if ((st = pt_tensor_copy_into(ctx, w, t))) {
    pt_tensor_release(w);
    return st;
  }
  *out = w;
  return PT_OK;
}

static pt_status to64(pt_ctx *ctx, const pt_tensor *t, int ndim, const int64_t *shape, pt_tensor **out) {
  return to_work(ctx, t, PT_FLOAT64, ndim, shape, out);
}

/* w as dtype dt: a new reference (w itself, retained, when it has that dtype) */
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

/* the node's first n saved tensors with the float32 ones as float64 copies (backward runs in
 * float64); s[k] are new references (NULL where nothing was saved) */
static pt_status saved64(pt_ctx *ctx, const pt_node *node, int n, pt_tensor **s) {
  pt_status st = PT_OK;
  for (int k = 0; k < n; k++) s[k] = NULL;
  for (int k = 0; k < n && !st; k++) {
    pt_tensor *t = node->saved[k];
    if (t && t->dtype == PT_FLOAT32) st = to64(ctx, t, t->ndim, t->shape, &s[k]);
    else if (t) s[k] = pt_tensor_retain(t);
  }
  for (int k = 0; k < n && st; k++) {
    pt_tensor_release(s[k]);
    s[k] = NULL;
  }
  return st;
}

static void release_all(int n, pt_tensor **s) {
  for (int k = 0; k < n; k++) pt_tensor_release(s[k]);
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

/* element access in either float dtype */
static double get_at(pt_dtype dt, const void *p, int64_t i) {
  return dt == PT_FLOAT32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static void set_at(pt_dtype dt, void *p, int64_t i, double v) {
  if (dt == PT_FLOAT32) ((float *)p)[i] = (float)v;
  else ((double *)p)[i] = v;
}

static void *elem(pt_dtype dt, const void *p, int64_t i) { return (char *)p + i * (int64_t)pt_dtype_size(dt); }

static void copy_elems(pt_dtype dt, void *dst, const void *src, int64_t n) {
  if (n > 0) memcpy(dst, src, pt_dtype_size(dt) * (size_t)n);
}

/* has_nan, all_finite: branch-free loops (vectorised) over the whole of a */
#define ANY_NAN(T, a, n)                                                                 \
  do {                                                                                   \
    const T *x_ = (a);                                                                   \
    int bad_ = 0;                                                                        \
    for (int64_t i = 0; i < (n); i++) bad_ |= x_[i] != x_[i];                            \
    return bad_ != 0;                                                                    \
  } while (0)

static bool has_nan(pt_dtype dt, const void *a, int64_t n) {
  if (dt == PT_FLOAT32) ANY_NAN(float, a, n);
  ANY_NAN(double, a, n);
}

/* x - x is 0 for finite x and NaN for inf and NaN */
#define ALL_FINITE(T, a, n)                                                              \
  do {                                                                                   \
    const T *x_ = (a);                                                                   \
    int bad_ = 0;                                                                        \
    for (int64_t i = 0; i < (n); i++) bad_ |= x_[i] - x_[i] != 0;                        \
    return bad_ == 0;                                                                    \
  } while (0)

static bool all_finite(pt_dtype dt, const void *a, int64_t n) {
  if (dt == PT_FLOAT32) ALL_FINITE(float, a, n);
  ALL_FINITE(double, a, n);
}

static void fill_nan(pt_dtype dt, void *a, int64_t n) {
  for (int64_t i = 0; i < n; i++) set_at(dt, a, i, NAN);
}

static int64_t maxi(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t mini(int64_t a, int64_t b) { return a < b ? a : b; }
static int ld(int64_t n) { return n > 1 ? (int)n : 1; }

/* C (m x n) = alpha op(A) op(B) + beta C; op(A) is m x k, A stored row-major as k x m when ta */
static void mmx(const pt_ctx *ctx, pt_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                double alpha, const void *a, const void *b, double beta, void *c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m * n; i++) set_at(dt, c, i, beta == 0 ? 0 : beta * get_at(dt, c, i));
    return;
  }
  pt_gemm(ctx, dt, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a,
          ta ? m : k, b, tb ? k : n, beta, c, n);
}

static void mm(const pt_ctx *ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
               const double *a, const double *b, double beta, double *c) {
  mmx(ctx, PT_FLOAT64, ta, tb, m, n, k, alpha, a, b, beta, c);
}

/* B (m x n) := op(T)^-1 B (left, T m x m) or B op(T)^-1 (right, T n x n); T triangular */
static void trsmx(pt_dtype dt, bool left, bool upper, bool trans, bool unit, int64_t m, int64_t n,
                  const void *T, void *B) {
  if (m == 0 || n == 0) return;
  CBLAS_SIDE s = left ? CblasLeft : CblasRight;
  CBLAS_UPLO u = upper ? CblasUpper : CblasLower;
  CBLAS_TRANSPOSE t = trans ? CblasTrans : CblasNoTrans;
  CBLAS_DIAG d = unit ? CblasUnit : CblasNonUnit;
  if (dt == PT_FLOAT32)
    cblas_strsm(CblasRowMajor, s, u, t, d, (int)m, (int)n, 1.0f, T, left ? ld(m) : ld(n), B, ld(n));
  else
    cblas_dtrsm(CblasRowMajor, s, u, t, d, (int)m, (int)n, 1.0, T, left ? ld(m) : ld(n), B, ld(n));
}

static void trsm(bool left, bool upper, bool trans, bool unit, int64_t m, int64_t n, const double *T,
                 double *B) {
  trsmx(PT_FLOAT64, left, upper, trans, unit, m, n, T, B);
}

static void transpose_into(int64_t m, int64_t n, const double *a, double *t) { /* t = a^T */
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) t[j * m + i] = a[i * n + j];
}

/* a (n x n) := a^T, in 32 x 32 blocks */
#define TRANSPOSE_SQUARE(T, p, n)                                                        \
  do {                                                                                   \
    T *x_ = (p);                                                                         \
    for (int64_t bi = 0; bi < (n); bi += 32)                                             \
      for (int64_t bj = bi; bj < (n); bj += 32)                                          \
        for (int64_t i = bi; i < mini(bi + 32, (n)); i++)                                \
          for (int64_t j = bj == bi ? i + 1 : bj; j < mini(bj + 32, (n)); j++) {         \
            T t_ = x_[i * (n) + j];                                                      \
            x_[i * (n) + j] = x_[j * (n) + i];                                           \
            x_[j * (n) + i] = t_;                                                        \
          }                                                                              \
  } while (0)

static void transpose_square(pt_dtype dt, int64_t n, void *a) {
  if (dt == PT_FLOAT32) TRANSPOSE_SQUARE(float, a, n);
  else TRANSPOSE_SQUARE(double, a, n);
}

/* b (row-major c x r) := a^T, a row-major r x c (a column-major c x r matrix read row-major),
 * in tiles one cache line of b high (power-of-two strides make taller tiles evict each other:
 * 2-4x slower) and 32 columns wide, column by column (4x faster than row by row) */
#define TRANSPOSE_COPY(T, r, c, a, b)                                                    \
  do {                                                                                   \
    const T *a_ = (a);                                                                   \
    T *b_ = (b);                                                                         \
    const int64_t bh_ = 64 / (int64_t)sizeof(T);                                         \
    for (int64_t bi = 0; bi < (r); bi += bh_)                                            \
      for (int64_t bj = 0; bj < (c); bj += 32)                                           \
        for (int64_t j = bj; j < mini(bj + 32, (c)); j++)                                \
          for (int64_t i = bi; i < mini(bi + bh_, (r)); i++) b_[j * (r) + i] = a_[i * (c) + j]; \
  } while (0)

static void transpose_copy(pt_dtype dt, int64_t r, int64_t c, const void *a, void *b) {
  if (dt == PT_FLOAT32) TRANSPOSE_COPY(float, r, c, a, b);
  else TRANSPOSE_COPY(double, r, c, a, b);
}

/* scratch memory for one call (freed with pt_free) */
static double *scratch(pt_ctx *ctx, int64_t n, pt_status *st) {
  double *p = pt_alloc(ctx, sizeof(double) * (size_t)(n > 0 ? n : 1));
  if (!p) *st = pt_fail(ctx, PT_ENOMEM, "linalg: out of memory for %lld doubles", (long long)n);
  return p;
}

/* The node for out (inputs ins), saving the given tensors (retained; NULL entries skipped). */
static pt_status record(pt_ctx *ctx, pt_tensor *out, const char *name, pt_backward_fn fn, int n,
                        pt_tensor *const *ins, int nsave, pt_tensor *const *save, pt_node **node_out) {
  pt_node *node = NULL;
  pt_status st = pt_autograd_record(ctx, out, name, fn, n, ins, &node);
  if (st) return st;
  /* aliases without history: a saved tensor may be one of the outputs, and a node holding its
   * own output (or a sibling's, whose node holds this one) would be a cycle */
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

/* a contiguous tensor of (nbatch batch dims, cols, rows) holding each matrix of t (broadcast
 * to the batch) column-major, as dt */
static pt_status to_colmajor(pt_ctx *ctx, pt_tensor *t, pt_dtype dt, int nbatch, const int64_t *batch,
                             pt_tensor **out) {
  int64_t shape[PT_MAX_DIMS];
  memcpy(shape, batch, sizeof(int64_t) * (size_t)nbatch);
  shape[nbatch] = t->shape[t->ndim - 1];
  shape[nbatch + 1] = t->shape[t->ndim - 2];
  if (t->dtype == dt && t->ndim == nbatch + 2 && pt_tensor_is_contiguous(t) &&
      !memcmp(t->shape, batch, sizeof(int64_t) * (size_t)nbatch)) { /* one transpose a matrix */
    pt_status st = new_work(ctx, dt, nbatch + 2, shape, false, out);
    int64_t r = shape[nbatch + 1], c = shape[nbatch], nb = pt_shape_numel(nbatch, batch);
    for (int64_t b = 0; !st && b < nb; b++)
      transpose_copy(dt, r, c, elem(dt, pt_tensor_data(t), b * r * c), elem(dt, pt_tensor_data(*out), b * r * c));
    return st;
  }
  pt_tensor *tt = NULL;
  pt_status st = pt_transpose_raw(ctx, t, t->ndim - 2, t->ndim - 1, &tt);
  if (!st) st = to_work(ctx, tt, dt, nbatch + 2, shape, out);
  pt_tensor_release(tt);
  return st;
}

/* What the backward functions giving one input A's gradient share: the node's saved tensors
 * as float64 (s), the gradient g as float64 shaped like the output saved[out] (G), A's float64
 * gradient of the batch shape (GA, not zeroed) and nw doubles of scratch (w); bw_end sums GA to
 * A's shape, converts it to A's dtype and releases everything. */
typedef struct bw {
  pt_tensor *s[3], *G, *GA;
  double *w;
} bw;

static pt_status bw_begin(pt_ctx *ctx, const pt_node *node, int nsave, pt_tensor *g, int out, int nd,
                          const int64_t *ashape, int64_t nw, bw *f) {
  memset(f, 0, sizeof *f);
  pt_status st = saved64(ctx, node, nsave, f->s);
  if (!st) st = grad64(ctx, g, f->s[out]->ndim, f->s[out]->shape, &f->G);
  if (!st) st = new64(ctx, nd, ashape, false, &f->GA);
  if (!st) f->w = scratch(ctx, nw, &st);
  return st;
}

static pt_status bw_end(pt_ctx *ctx, const pt_node *node, pt_status st, bw *f, pt_tensor **gin) {
  if (!st) st = grad_to(ctx, f->GA, node->inputs[0], &gin[0]);
  pt_free(f->w);
  release_all(3, f->s);
  pt_tensor_release(f->G);
  pt_tensor_release(f->GA);
  return st;
}

/* ------------------------------------------------------------------ LAPACK */

/* LAPACKE is opened on the first call that needs it, not at start-up: linked in, its library
 * and the LAPACK and test-matrix libraries it pulls in cost ~1 ms of every process start, for a
 * feature most scripts never use. lapacke.h still gives every prototype. Only the _work entry
 * points are used, column-major: they call LAPACK directly (no NaN scan, no transposed copies,
 * no workspace allocated per call). */
#define LAPACKE_FNS(X) X(getrf) X(getri) X(potrf) X(geqrf) X(orgqr) X(syevd) X(gesdd) X(gels) \
  X(gelsy) X(gelsd) X(gelss)
static struct {
#define LAPACKE_FIELD(f) __typeof__(&LAPACKE_s##f##_work) s##f; __typeof__(&LAPACKE_d##f##_work) d##f;
  LAPACKE_FNS(LAPACKE_FIELD)
#undef LAPACKE_FIELD
} lapacke;
static pthread_once_t lapacke_once = PTHREAD_ONCE_INIT;
static char lapacke_err[200]; /* why it could not be opened; empty when it was */

static void lapacke_open(void) {
  const char *path = getenv("PARTRAIN_LAPACKE"); /* another build of it (and the missing case's test) */
  const char *lib = path && *path ? path : "liblapacke.so.3";
  void *h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
  if (!h) {
    snprintf(lapacke_err, sizeof lapacke_err, "%s", dlerror());
    return;
  }
#define LAPACKE_LOAD1(field, name)                                                       \
  if (!(field = (__typeof__(field))dlsym(h, name))) {                                    \
    snprintf(lapacke_err, sizeof lapacke_err, "%s has no %s", lib, name);               \
    return;                                                                              \
  }
#define LAPACKE_LOAD(f)                                                                  \
  LAPACKE_LOAD1(lapacke.s##f, "LAPACKE_s" #f "_work")                                    \
  LAPACKE_LOAD1(lapacke.d##f, "LAPACKE_d" #f "_work")
  LAPACKE_FNS(LAPACKE_LOAD)
#undef LAPACKE_LOAD
#undef LAPACKE_LOAD1
}

static bool lapacke_loaded(void) {
  pthread_once(&lapacke_once, lapacke_open);
  return lapacke_err[0] == '\0';
}

/* what a call returns when LAPACKE could not be opened (lp_fail names the reason) */
#define LAPACKE_UNAVAILABLE (-100000)

/* ------------------------------------------------------------------ the batch driver */

/* A job runs LAPACK on each matrix of a batch: lp_run loops over the batch and does what
 * surrounds every call (the NaN screen, the workspace, LAPACK's info as a message); the job's
 * `one` function makes the calls for one matrix. Operands are tensors' data in the working
 * dtype (float32: the s* routines, float64: the d* ones), size[i] elements a matrix; the
 * parameters of `one` are fields of the job. With query set, lp_run first calls `one` in
 * query mode: it asks its routines for their workspace (lwork = -1) and records the sizes with
 * lp_want; lp_run allocates that once for the whole batch. */
#define LP_MAX_OPS 4
typedef enum lp_nan {
  LP_NAN_FILL = 0, /* a NaN in the checked operands: the operands become NaN, LAPACK is not called */
  LP_NAN_FAIL,     /* a non-finite value in them: the SVD's "failed to converge" error */
  LP_NAN_PASS,     /* `one` looks itself */
} lp_nan;
typedef enum lp_info { LP_SINGULAR = 0, LP_NOT_PD, LP_NO_CONVERGE, LP_RANK } lp_info; /* info > 0 */

typedef struct lp_job lp_job;
typedef lapack_int (*lp_fn)(lp_job *j, void *const *p, bool query);
struct lp_job {
  pt_ctx *ctx;
  const char *fname;
  pt_dtype dt;
  bool batched; /* messages name the batch element */
  int64_t batch;
  int nop, nchk;     /* operands; the first nchk are screened for NaN */
  unsigned keep;     /* bit i: operand i is left alone when a matrix is skipped for NaN */
  void *op[LP_MAX_OPS];
  int64_t size[LP_MAX_OPS];
  lp_nan nan;
  lp_info info;
  bool query;
  int64_t ntmp, npiv; /* scratch elements (dt) and pivots lp_run allocates */
  /* parameters of `one` */
  int64_t m, n, k, c0, c1;
  int mode;
  bool flag, trans;
  char jobz, uplo;
  double atol, rtol, rcond;
  const double *atols, *rtols; /* pinv's tolerances per matrix (NULL: atol, rtol) */
  pt_dtype tol_dt; /* pinv's tolerance: eps of this dtype */
  lapack_int *pivs; /* pivots kept per matrix (n each), or NULL */
  int64_t *rank;    /* a rank per matrix, or NULL */
  /* set by lp_run */
  int64_t b;           /* the matrix `one` works on */
  const char *routine; /* the routine called last, without its s/d */
  void *work, *tmp;
  lapack_int lwork, liwork, *iwork, *ipiv;
  int64_t want_work, want_iwork;
};

/* one LAPACK call on the job's dtype (column-major); records the routine for messages */
#define LP_CALL(j, f, ...)                                                                        \
  ((j)->routine = #f, !lapacke_loaded()        ? LAPACKE_UNAVAILABLE                             \
                      : (j)->dt == PT_FLOAT32 ? lapacke.s##f(LAPACK_COL_MAJOR, __VA_ARGS__)      \
                                              : lapacke.d##f(LAPACK_COL_MAJOR, __VA_ARGS__))

/* in query mode, after a routine's workspace query: its sizes (iwork: at least min_iwork) */
static void lp_want(lp_job *j, int64_t min_iwork) {
  double v = get_at(j->dt, j->work, 0);
  j->want_work = maxi(j->want_work, (int64_t)ceil(v * (1 + 1e-6)));
  j->want_iwork = maxi(j->want_iwork, maxi(min_iwork, j->iwork[0]));
  set_at(j->dt, j->work, 0, 0);
  j->iwork[0] = 0;
}

static pt_status lp_fail(lp_job *j, lapack_int info) {
  pt_ctx *ctx = j->ctx;
  char r = j->dt == PT_FLOAT32 ? 's' : 'd';
  if (info == LAPACKE_UNAVAILABLE)
    return pt_fail(ctx, PT_EDEVICE, "%s: LAPACK is not available (%s)", j->fname, lapacke_err);
  if (info < 0) return pt_fail(ctx, PT_EARG, "%s: LAPACK %c%s rejected argument %d", j->fname, r, j->routine, -info);
  switch (j->info) {
  case LP_SINGULAR:
    return fail_at(ctx, PT_EARG, j->batched, j->b, "%s: the matrix is singular (U[%d,%d] is zero)", j->fname,
                   (int)info, (int)info);
  case LP_NOT_PD:
    return fail_at(ctx, PT_EARG, j->batched, j->b,
                   "%s: the matrix is not positive-definite (the leading minor of order %d is not "
                   "positive-definite)",
                   j->fname, (int)info);
  case LP_RANK:
    return fail_at(ctx, PT_EARG, j->batched, j->b,
                   "%s: the matrix does not have full rank (diagonal element %d of its triangular factor is "
                   "zero): use driver gelsy, gelsd or gelss",
                   j->fname, (int)info);
  default:
    return fail_at(ctx, PT_EARG, j->batched, j->b, "%s: the algorithm failed to converge (LAPACK %c%s info %d)",
                   j->fname, r, j->routine, (int)info);
  }
}

static pt_status lp_run(lp_job *j, lp_fn one) {
  pt_ctx *ctx = j->ctx;
  size_t es = pt_dtype_size(j->dt);
  void *p[LP_MAX_OPS] = {0};
  double qwork[2] = {0};
  lapack_int qiwork[2] = {0};
  pt_status st = PT_OK;
  j->work = j->tmp = NULL;
  j->iwork = j->ipiv = NULL;
  j->lwork = j->liwork = 0;
  j->want_work = j->want_iwork = 1;
  j->b = 0;
  if (j->batch == 0) return PT_OK;
  if (j->query) { /* the first matrix's operands: a query reads only the sizes */
    for (int i = 0; i < j->nop; i++) p[i] = j->op[i];
    j->work = qwork;
    j->iwork = qiwork;
    j->lwork = j->liwork = -1;
    lapack_int info = one(j, p, true);
    j->work = NULL;
    j->iwork = NULL;
    if (info) return lp_fail(j, info);
  }
  j->lwork = (lapack_int)j->want_work;
  j->liwork = (lapack_int)j->want_iwork;
  j->work = pt_alloc(ctx, es * (size_t)j->want_work);
  j->tmp = pt_alloc(ctx, es * (size_t)maxi(j->ntmp, 1));
  j->iwork = pt_alloc(ctx, sizeof(lapack_int) * (size_t)j->want_iwork);
  j->ipiv = pt_alloc(ctx, sizeof(lapack_int) * (size_t)maxi(j->npiv, 1));
  if (!j->work || !j->tmp || !j->iwork || !j->ipiv)
    st = pt_fail(ctx, PT_ENOMEM, "%s: out of memory for LAPACK's workspace", j->fname);
  for (int64_t b = 0; !st && b < j->batch; b++) {
    j->b = b;
    for (int i = 0; i < j->nop; i++) p[i] = j->op[i] ? (char *)j->op[i] + (size_t)(b * j->size[i]) * es : NULL;
    bool bad = false;
    for (int i = 0; i < j->nchk && !bad && j->nan != LP_NAN_PASS; i++)
      bad = j->nan == LP_NAN_FILL ? has_nan(j->dt, p[i], j->size[i]) : !all_finite(j->dt, p[i], j->size[i]);
    if (bad && j->nan == LP_NAN_FAIL) {
      st = fail_at(ctx, PT_EARG, j->batched, b,
                   "%s: the algorithm failed to converge because the matrix contains non-finite values", j->fname);
    } else if (bad) {
      for (int i = 0; i < j->nop; i++)
        if (!(j->keep >> i & 1)) fill_nan(j->dt, p[i], j->size[i]);
    } else {
      lapack_int info = one(j, p, false);
      if (info) st = lp_fail(j, info);
    }
  }
  pt_free(j->work);
  pt_free(j->tmp);
  pt_free(j->iwork);
  pt_free(j->ipiv);
  j->work = j->tmp = NULL;
  j->iwork = j->ipiv = NULL;
  return st;
}

/* lp_op adds a job's operands in order (t NULL: none) */
static void lp_op(lp_job *j, pt_tensor *t, int64_t size) {
  j->op[j->nop] = t ? pt_tensor_data(t) : NULL;
  j->size[j->nop] = t ? size : 0;
  j->nop++;
}

/* ------------------------------------------------------------------ LU: solve, inv, det */

/* getrf on a row-major n x n buffer factorises A^T = P L U (column-major): det(A) = det(A^T),
 * inv(A^T) read row-major is inv(A), and A X = B is U^T L^T P^T X = B. */
static lapack_int lu_factor(lp_job *j, void *a, lapack_int *piv) {
  return LP_CALL(j, getrf, (int)j->n, (int)j->n, a, ld(j->n), piv);
}

static void swap_rows(void *x, int64_t i, int64_t p, size_t row) {
  if (i == p) return;
  unsigned char *a = (unsigned char *)x + (size_t)i * row, *b = (unsigned char *)x + (size_t)p * row, t[256];
  for (size_t o = 0; o < row; o += sizeof t) {
    size_t c = row - o < sizeof t ? row - o : sizeof t;
    memcpy(t, a + o, c);
    memcpy(a + o, b + o, c);
    memcpy(b + o, t, c);
  }
}

/* X (row-major n x k) := A^-1 X (trans: A^-T X) from lu_factor's factors of A^T. The factor
 * buffer read row-major is F^T: its lower triangle is U^T and its unit upper one L^T, so both
 * solves are triangular solves on X as it is, and P swaps its rows. */
static void lu_apply(pt_dtype dt, bool trans, int64_t n, int64_t k, const void *lu, const lapack_int *piv,
                     void *x) {
  size_t row = pt_dtype_size(dt) * (size_t)k;
  if (!trans) { /* X = P L^-T U^-T B */
    trsmx(dt, true, false, false, false, n, k, lu, x);
    trsmx(dt, true, true, false, true, n, k, lu, x);
    for (int64_t i = n - 1; i >= 0; i--) swap_rows(x, i, piv[i] - 1, row);
  } else { /* X = U^-1 L^-1 P^T B */
    for (int64_t i = 0; i < n; i++) swap_rows(x, i, piv[i] - 1, row);
    trsmx(dt, true, true, true, true, n, k, lu, x);
    trsmx(dt, true, false, true, false, n, k, lu, x);
  }
}

/* operands: 0 A (n x n; factorised in place unless flag: then it holds the factors and the
 * pivots are j->pivs), 1 X (n x k), solved in place (trans: with A^T) */
static lapack_int solve_one(lp_job *j, void *const *p, bool query) {
  if (query) return 0;
  lapack_int *piv = j->pivs ? j->pivs + j->b * j->n : j->ipiv;
  if (!j->flag) {
    lapack_int info = lu_factor(j, p[0], piv);
    if (info) return info;
  }
  lu_apply(j->dt, j->trans, j->n, j->k, p[0], piv, p[1]);
  return 0;
}

/* X_b := op(A_b)^-1 X_b for each matrix (LU: batch x n x n, A factorised in place, or A's
 * factors when factored; X: batch x n x k; piv: int32 batch x n, filled, or read when
 * factored, or NULL). Fails on a singular matrix. */
static pt_status lu_solve(pt_ctx *ctx, const char *fname, bool batched, pt_tensor *LU, pt_tensor *piv,
                          bool factored, pt_tensor *X, bool trans) {
  int64_t n = LU->shape[LU->ndim - 1], k = X->shape[X->ndim - 1];
  if (n == 0 || k == 0) return PT_OK;
  lp_job j = {.ctx = ctx, .fname = fname, .dt = X->dtype, .batched = batched,
              .batch = pt_tensor_numel(X) / (n * k), .nchk = 2, .keep = factored ? 1 : 0,
              .info = LP_SINGULAR, .npiv = n, .n = n, .k = k, .flag = factored, .trans = trans,
              .pivs = piv ? pt_tensor_data(piv) : NULL};
  lp_op(&j, LU, n * n);
  lp_op(&j, X, n * k);
  return lp_run(&j, solve_one);
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

/* saved: 0 LU (lu_factor's factors, batch x n x n), 1 X (batch x n x k), 2 the pivots (int32
 * batch x n); ints[0]: vector case */
static pt_status solve_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *A = node->inputs[0], *B = node->inputs[1], *s[2], *G = NULL, *GA = NULL;
  pt_status st = saved64(ctx, node, 2, s);
  if (st) return st;
  pt_tensor *LU = s[0], *X64 = s[1];
  int nd = X64->ndim;
  int64_t n = X64->shape[nd - 2], k = X64->shape[nd - 1], batch = pt_shape_numel(nd - 2, X64->shape);
  if ((st = grad64(ctx, g, nd, X64->shape, &G))) goto done;
  /* gB = A^-T g */
  if ((st = lu_solve(ctx, "linalg.solve backward", false, LU, node->saved[2], true, G, true))) goto done;
  if (node->needs_grad[0]) {
    if ((st = new64(ctx, LU->ndim, LU->shape, false, &GA))) goto done;
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
  release_all(2, s);
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
  pt_tensor *ins[2] = {A, B};
  bool need = pt_autograd_needed(ctx, 2, ins);
  pt_tensor *LU = NULL, *X = NULL, *piv = NULL, *Bv = NULL, *o = NULL;
  if (vector) {
    if ((st = pt_unsqueeze_raw(ctx, B, B->ndim, &Bv))) return st;
  } else {
    Bv = pt_tensor_retain(B);
  }
  /* the factors and pivots are saved (backward solves with A^T), not A */
  if ((st = to_work(ctx, A, A->dtype, nbatch + 2, ashape, &LU))) goto done;
  if ((st = to_work(ctx, Bv, A->dtype, nbatch + 2, shape, &X))) goto done;
  if (need && (st = pt_tensor_zeros(ctx, PT_INT32, nbatch + 1, ashape, &piv))) goto done;
  if ((st = lu_solve(ctx, fname, A->ndim > 2, LU, piv, false, X, false))) goto done;
  if (vector) {
    if ((st = pt_view_raw(ctx, X, nbatch + 1, shape, &o))) goto done;
  } else {
    o = pt_tensor_retain(X);
  }
  pt_tensor *save[3] = {LU, X, piv};
  pt_node *node;
  if ((st = record(ctx, o, "LinalgSolveBackward", solve_backward, 2, ins, 3, save, &node))) goto done;
  if (node) {
    node->ints[0] = vector;
    node->n_ints = 1;
  }
done:
  pt_tensor_release(LU);
  pt_tensor_release(X);
  pt_tensor_release(piv);
  pt_tensor_release(Bv);
  if (st) {
    pt_tensor_release(o);
    return st;
  }
  *out = o;
  return PT_OK;
}

/* operand 0: A, inverted in place (getrf and getri of A^T: inv(A^T) read row-major is inv(A)) */
static lapack_int inv_one(lp_job *j, void *const *p, bool query) {
  int n = (int)j->n;
  if (query) {
    lapack_int info = LP_CALL(j, getri, n, p[0], ld(n), j->ipiv, j->work, -1);
    if (!info) lp_want(j, 0);
    return info;
  }
  lapack_int info = lu_factor(j, p[0], j->ipiv);
  if (!info) info = LP_CALL(j, getri, n, p[0], ld(n), j->ipiv, j->work, j->lwork);
  return info;
}

/* A^-1 of each matrix of W (batch x n x n) in place; fails on a singular matrix */
static pt_status inv_batch(pt_ctx *ctx, const char *fname, bool batched, pt_tensor *W) {
  int64_t n = W->shape[W->ndim - 1];
  if (n == 0) return PT_OK;
  lp_job j = {.ctx = ctx, .fname = fname, .dt = W->dtype, .batched = batched,
              .batch = pt_tensor_numel(W) / (n * n), .nchk = 1, .info = LP_SINGULAR, .query = true,
              .npiv = n, .n = n};
  lp_op(&j, W, n * n);
  return lp_run(&j, inv_one);
}

/* saved: 0 the inverse */
static pt_status inv_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  const pt_tensor *P = node->saved[0];
  int64_t n = P->shape[P->ndim - 1], batch = pt_shape_numel(P->ndim - 2, P->shape);
  bw f;
  pt_status st = bw_begin(ctx, node, 1, g, 0, P->ndim, P->shape, n * n, &f);
  for (int64_t b = 0; !st && b < batch; b++) { /* gA = -P^T g P^T */
    double *p = dp(f.s[0]) + b * n * n;
    mm(ctx, true, false, n, n, n, 1.0, p, dp(f.G) + b * n * n, 0.0, f.w);
    mm(ctx, false, true, n, n, n, -1.0, f.w, p, 0.0, dp(f.GA) + b * n * n);
  }
  return bw_end(ctx, node, st, &f, gin);
}

pt_status pt_linalg_inv(pt_ctx *ctx, const char *fname, pt_tensor *A, pt_tensor **out) {
  pt_status st = check_matrix(ctx, fname, A, true);
  if (st) return st;
  pt_tensor *W = NULL;
  if ((st = to_work(ctx, A, A->dtype, A->ndim, A->shape, &W))) return st;
  if (!(st = inv_batch(ctx, fname, A->ndim > 2, W)))
    st = record(ctx, W, "LinalgInvBackward", inv_backward, 1, &A, 1, &W, NULL);
  if (st) {
    pt_tensor_release(W);
    return st;
  }
  *out = W;
  return PT_OK;
}

/* operands: 0 A (n x n; factorised in a copy when flag: it is saved), 1 the sign of det(A), 2
 * det(A) (mode 0) or log|det(A)| (mode 1): the permutation's sign times the signs of U's
 * diagonal, and its product, in float64. As PyTorch, a zero pivot is not special: it gives a
 * zero sign, its product with the other pivots (nan with an inf one) and its log (-inf, or nan
 * with +inf); a nan pivot counts as sign 0. */
static lapack_int det_one(lp_job *j, void *const *p, bool query) {
  if (query) return 0;
  pt_dtype dt = j->dt;
  int64_t n = j->n;
  double s = 1, v = 1, l = 0;
  if (n > 0) {
    void *a = p[0];
    if (j->flag) {
      copy_elems(dt, j->tmp, a, n * n);
      a = j->tmp;
    }
    lapack_int info = lu_factor(j, a, j->ipiv);
    if (info < 0) return info;
    bool zero = false;
    for (int64_t i = 0; i < n; i++) {
      double u = get_at(dt, a, i * n + i);
      if (j->ipiv[i] != i + 1) {
        s = -s;
        v = -v;
      }
      if (u < 0) s = -s;
      else if (!(u > 0)) zero = true; /* 0 or nan */
      if (j->mode) l += log(fabs(u));
      else v *= u;
    }
    if (zero) s *= 0.0; /* a signed zero, as torch's product of signs */
  }
  set_at(dt, p[1], 0, s);
  set_at(dt, p[2], 0, j->mode ? l : v);
  return 0;
}

/* out = A^-T for a (n x n); false when A is singular. w: n*n */
static bool inv_t(lp_job *j, const double *a, double *w, double *out) {
  int64_t n = j->n;
  if (has_nan(PT_FLOAT64, a, n * n)) return false;
  memcpy(w, a, sizeof(double) * (size_t)(n * n));
  lapack_int info = lu_factor(j, w, j->ipiv);
  if (!info) info = LP_CALL(j, getri, (int)n, (void *)w, ld(n), j->ipiv, j->work, j->lwork);
  if (info) return false;
  transpose_into(n, n, w, out); /* w read row-major is A^-1 */
  return true;
}

/* The cofactor matrix of a (n x n), det(A) A^-T, also for singular A (through its SVD:
 * A = U S V^T, cof = det(U) det(V) U diag(prod_{j != i} s_j) V^T). j->tmp: 4 n*n + 2 n. */
static void cofactor(lp_job *j, const double *a, double det, double *out) {
  int64_t n = j->n;
  double *w = j->tmp, *u = w + n * n, *vt = u + n * n, *tmp = vt + n * n, *s = tmp + n * n, *pr = s + n;
  if (det != 0 && isfinite(det) && inv_t(j, a, w, out)) {
    for (int64_t i = 0; i < n * n; i++) out[i] *= det;
    return;
  }
  memcpy(w, a, sizeof(double) * (size_t)(n * n));
  /* the SVD of A^T (column-major): its V^T read row-major is U, its U is V^T */
  if (!all_finite(PT_FLOAT64, w, n * n) ||
      LP_CALL(j, gesdd, 'A', (int)n, (int)n, (void *)w, ld(n), (void *)s, (void *)vt, ld(n), (void *)u, ld(n),
              j->work, j->lwork, j->iwork)) {
    fill_nan(PT_FLOAT64, out, n * n);
    return;
  }
  double d = 1;
  for (int pass = 0; pass < 2; pass++) { /* det(U) det(V^T), each +-1 */
    memcpy(tmp, pass ? vt : u, sizeof(double) * (size_t)(n * n));
    lu_factor(j, tmp, j->ipiv);
    for (int64_t i = 0; i < n; i++) {
      if (j->ipiv[i] != i + 1) d = -d;
      if (tmp[i * n + i] < 0) d = -d;
    }
  }
  for (int64_t i = 0; i < n; i++) {
    double p = d;
    for (int64_t k = 0; k < n; k++)
      if (k != i) p *= s[k];
    pr[i] = p;
  }
  for (int64_t i = 0; i < n; i++) /* tmp = U diag(pr) */
    for (int64_t k = 0; k < n; k++) tmp[i * n + k] = u[i * n + k] * pr[k];
  mm(j->ctx, false, false, n, n, n, 1.0, tmp, vt, 0.0, out);
}

/* operands (float64): 0 A, 1 the gradient's matrix, 2 det(A); mode 1: A^-T (log|det|'s
 * gradient, nan for a singular A), else the cofactor matrix */
static lapack_int det_grad_one(lp_job *j, void *const *p, bool query) {
  int64_t n = j->n;
  if (query) {
    lapack_int info = LP_CALL(j, getri, (int)n, p[0], ld(n), j->ipiv, j->work, -1);
    if (!info) lp_want(j, 0);
    if (!info && !j->mode &&
        !(info = LP_CALL(j, gesdd, 'A', (int)n, (int)n, p[0], ld(n), p[1], p[1], ld(n), p[1], ld(n), j->work,
                         -1, j->iwork)))
      lp_want(j, 8 * n);
    return info;
  }
  if (j->mode) {
    if (!inv_t(j, p[0], j->tmp, p[1])) fill_nan(PT_FLOAT64, p[1], n * n);
  } else {
    cofactor(j, p[0], *(const double *)p[2], p[1]);
  }
  return 0;
}

/* det: saved 0 A, 1 det; ints[0] 1: log|det| (slogdet, logdet), whose gradient is g A^-T
 * (nan for a singular matrix) */
static pt_status det_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  const pt_tensor *A = node->saved[0];
  int64_t n = A->shape[A->ndim - 1], batch = pt_shape_numel(A->ndim - 2, A->shape);
  bw f;
  pt_status st = bw_begin(ctx, node, 2, g, 1, A->ndim, A->shape, 0, &f);
  if (st || n == 0) return bw_end(ctx, node, st, &f, gin);
  lp_job j = {.ctx = ctx, .fname = "linalg.det backward", .dt = PT_FLOAT64, .batched = false, .batch = batch,
              .nan = LP_NAN_PASS, .query = true, .ntmp = 4 * n * n + 2 * n, .npiv = n, .n = n,
              .mode = node->ints[0]};
  lp_op(&j, f.s[0], n * n);
  lp_op(&j, f.GA, n * n);
  lp_op(&j, f.s[1], 1);
  st = lp_run(&j, det_grad_one);
  for (int64_t b = 0; !st && b < batch; b++)
    for (int64_t i = 0; i < n * n; i++) dp(f.GA)[b * n * n + i] *= dp(f.G)[b];
  return bw_end(ctx, node, st, &f, gin);
}

/* which: 0 det, 1 slogdet, 2 logdet */
static pt_status det_common(pt_ctx *ctx, const char *fname, pt_tensor *A, int which, pt_tensor **o1,
                            pt_tensor **o2) {
  pt_status st = check_matrix(ctx, fname, A, true);
  if (st) return st;
  pt_dtype dt = A->dtype;
  bool need = pt_autograd_needed(ctx, 1, &A);
  pt_tensor *W = NULL, *S = NULL, *V = NULL;
  int nb = A->ndim - 2;
  int64_t n = A->shape[A->ndim - 1];
  if ((st = to_work(ctx, A, dt, A->ndim, A->shape, &W))) return st;
  if ((st = new_work(ctx, dt, nb, A->shape, false, &S)) || (st = new_work(ctx, dt, nb, A->shape, false, &V)))
    goto done;
  /* flag: A is saved, so a copy is factorised. NaN goes through the LU, as PyTorch's */
  lp_job j = {.ctx = ctx, .fname = fname, .dt = dt, .batched = nb > 0, .batch = pt_tensor_numel(S), .nchk = 1,
              .keep = 1, .nan = LP_NAN_PASS, .flag = need, .ntmp = need ? n * n : 0, .npiv = n, .n = n,
              .mode = which != 0};
  lp_op(&j, W, n * n);
  lp_op(&j, S, 1);
  lp_op(&j, V, 1);
  if ((st = lp_run(&j, det_one))) goto done;
  if (which == 2) { /* log(det): nan below 0 */
    int64_t nel = pt_tensor_numel(V);
    for (int64_t i = 0; i < nel; i++)
      if (get_at(dt, pt_tensor_data(S), i) < 0) set_at(dt, pt_tensor_data(V), i, NAN);
  }
  pt_node *node;
  pt_tensor *save[2] = {W, V}; /* det's backward needs det itself: V holds it */
  static const char *const names[] = {"LinalgDetBackward", "LinalgSlogdetBackward", "LogdetBackward"};
  if ((st = record(ctx, V, names[which], det_backward, 1, &A, 2, save, &node))) goto done;
  if (node) {
    node->ints[0] = which != 0;
    node->n_ints = 1;
  }
done:
  pt_tensor_release(W);
  if (st) {
    pt_tensor_release(S);
    pt_tensor_release(V);
    return st;
  }
  if (which == 1) {
    *o1 = S;
    *o2 = V;
  } else {
    pt_tensor_release(S);
    *o1 = V;
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
  const pt_tensor *C = node->saved[0];
  bool upper = node->ints[0];
  int64_t n = C->shape[C->ndim - 1], batch = pt_shape_numel(C->ndim - 2, C->shape);
  bw f;
  pt_status st = bw_begin(ctx, node, 1, g, 0, C->ndim, C->shape, 3 * n * n, &f);
  double *l = f.w, *gl = l + n * n, *t = gl + n * n;
  for (int64_t b = 0; !st && b < batch; b++) {
    const double *c = dp(f.s[0]) + b * n * n, *gb = dp(f.G) + b * n * n;
    double *p = dp(f.GA) + b * n * n;
    if (upper) { /* L = U^T, gL = gU^T */
      transpose_into(n, n, c, l);
      transpose_into(n, n, gb, gl);
    } else {
      memcpy(l, c, sizeof(double) * (size_t)(n * n));
      memcpy(gl, gb, sizeof(double) * (size_t)(n * n));
    }
    mm(ctx, true, false, n, n, n, 1.0, l, gl, 0.0, t); /* L^T gL */
    for (int64_t i = 0; i < n; i++) /* P = 0.5 (tril(T) + tril(T, -1)^T) */
      for (int64_t k = 0; k <= i; k++) p[i * n + k] = p[k * n + i] = 0.5 * t[i * n + k];
    trsm(true, false, true, false, n, n, l, p);  /* L^-T P */
    trsm(false, false, false, false, n, n, l, p); /* ... L^-1 */
  }
  return bw_end(ctx, node, st, &f, gin);
}

/* operand 0: A, factorised in place. potrf of the row-major buffer (A^T column-major) with the
 * other triangle gives U with A = U^T U, which read row-major is L = U^T (upper: the other way
 * round); the other triangle is zeroed. */
static lapack_int cholesky_one(lp_job *j, void *const *p, bool query) {
  if (query) return 0;
  int64_t n = j->n;
  bool upper = j->flag;
  lapack_int info = LP_CALL(j, potrf, upper ? 'L' : 'U', (int)n, p[0], ld(n));
  if (info) return info;
  size_t es = pt_dtype_size(j->dt);
  for (int64_t i = 0; i < n; i++)
    if (upper) memset(elem(j->dt, p[0], i * n), 0, es * (size_t)i);
    else memset(elem(j->dt, p[0], i * n + i + 1), 0, es * (size_t)(n - i - 1));
  return 0;
}

pt_status pt_linalg_cholesky(pt_ctx *ctx, const char *fname, pt_tensor *A, bool upper, pt_tensor **out) {
  pt_status st = check_matrix(ctx, fname, A, true);
  if (st) return st;
  pt_tensor *W = NULL;
  if ((st = to_work(ctx, A, A->dtype, A->ndim, A->shape, &W))) return st;
  int64_t n = A->shape[A->ndim - 1];
  lp_job j = {.ctx = ctx, .fname = fname, .dt = A->dtype, .batched = A->ndim > 2,
              .batch = n ? pt_tensor_numel(W) / (n * n) : 0, .nchk = 1, .info = LP_NOT_PD, .n = n,
              .flag = upper};
  lp_op(&j, W, n * n);
  pt_node *node = NULL;
  if (!(st = lp_run(&j, cholesky_one)))
    st = record(ctx, W, "LinalgCholeskyBackward", cholesky_backward, 1, &A, 1, &W, &node);
  if (st) {
    pt_tensor_release(W);
    return st;
  }
  if (node) {
    node->ints[0] = upper;
    node->n_ints = 1;
  }
  *out = W;
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

/* saved: 0 Q, 1 R; ints[0] mode, ints[1] 1 for the R node */
static pt_status qr_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  if (node->ints[0] == PT_QR_R)
    return pt_fail(ctx, PT_EARG, "linalg.qr: the derivative depends on Q, which mode 'r' does not compute: "
                                 "use mode 'reduced' to differentiate through linalg.qr");
  bool is_r = node->ints[1];
  int nd = node->saved[1]->ndim;
  int64_t m = node->saved[0]->shape[nd - 2], k = node->saved[1]->shape[nd - 2], n = node->saved[1]->shape[nd - 1];
  if (node->ints[0] == PT_QR_COMPLETE && m > n)
    return pt_fail(ctx, PT_EARG, "linalg.qr: the QR decomposition is not differentiable when mode is "
                                 "'complete' and the matrix has more rows than columns (%lld > %lld)",
                   (long long)m, (long long)n);
  int64_t batch = pt_shape_numel(nd - 2, node->saved[1]->shape), ashape[PT_MAX_DIMS];
  memcpy(ashape, node->saved[1]->shape, sizeof(int64_t) * (size_t)nd);
  ashape[nd - 2] = m;
  bw f;
  pt_status st = bw_begin(ctx, node, 2, g, is_r, nd, ashape, 4 * k * k + 3 * m * n + 2 * k * n + m * k, &f);
  double *w = f.w;
  for (int64_t b = 0; !st && b < batch; b++) {
    const double *q = dp(f.s[0]) + b * m * k, *r = dp(f.s[1]) + b * k * n, *gb = dp(f.G) + b * (is_r ? k * n : m * k);
    double *ga = dp(f.GA) + b * m * n;
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
  return bw_end(ctx, node, st, &f, gin);
}

#define COPY_R(T, m, n, k, a, r)                                                         \
  for (int64_t c = 0; c < (n); c++)                                                      \
    for (int64_t i = 0; i < mini(c + 1, (k)); i++) ((T *)(r))[i * (n) + c] = ((const T *)(a))[c * (m) + i]

/* operands: 0 A (column-major m x n: a transposed copy, destroyed), 1 Q (m x c0; none in mode
 * r), 2 R (c1 x n). geqrf, then R from A's upper triangle and Q from orgqr (in A's buffer when
 * it has room, else in tmp), each transposed to row-major as it is copied out. (The LQ of the
 * row-major buffer, A^T = L Q', would need no transposed copies, but gelqf and orglq run at
 * half geqrf's and orgqr's speed.) tmp: tau (k), then m x c0 when c0 > n. */
static lapack_int qr_one(lp_job *j, void *const *p, bool query) {
  pt_dtype dt = j->dt;
  int64_t m = j->m, n = j->n, k = j->k, qc = j->c0;
  bool want_q = p[1] && m > 0 && qc > 0;
  void *a = p[0], *q = p[1], *r = p[2], *tau = j->tmp, *qa = query || qc <= n ? a : elem(dt, j->tmp, k);
  lapack_int lw = query ? -1 : j->lwork, info = 0;
  if (k > 0 && (info = LP_CALL(j, geqrf, (int)m, (int)n, a, ld(m), query ? a : tau, j->work, lw))) return info;
  if (query) lp_want(j, 0);
  if (!query) { /* R[i, c] = A[c * m + i] for i <= c */
    if (dt == PT_FLOAT32) COPY_R(float, m, n, k, a, r);
    else COPY_R(double, m, n, k, a, r);
  }
  if (!want_q) return 0;
  if (!query && qa != a) copy_elems(dt, qa, a, m * mini(n, qc));
  if ((info = LP_CALL(j, orgqr, (int)m, (int)qc, (int)k, qa, ld(m), query ? a : tau, j->work, lw))) return info;
  if (query) lp_want(j, 0);
  else transpose_copy(dt, qc, m, qa, q);
  return 0;
}

pt_status pt_linalg_qr(pt_ctx *ctx, const char *fname, pt_tensor *A, pt_qr_mode mode, pt_tensor **Q,
                       pt_tensor **R) {
  pt_status st = check_matrix(ctx, fname, A, false);
  if (st) return st;
  pt_dtype dt = A->dtype;
  int nd = A->ndim;
  int64_t m = A->shape[nd - 2], n = A->shape[nd - 1], k = mini(m, n);
  int64_t qc = mode == PT_QR_COMPLETE ? m : k, rr = mode == PT_QR_COMPLETE ? m : k;
  int64_t qshape[PT_MAX_DIMS], rshape[PT_MAX_DIMS];
  batch_shape(A, 2, m, qc, qshape);
  batch_shape(A, 2, rr, n, rshape);
  pt_tensor *W = NULL, *Qw = NULL, *Rw = NULL;
  if ((st = to_colmajor(ctx, A, dt, nd - 2, A->shape, &W)) || (st = new_work(ctx, dt, nd, rshape, true, &Rw)))
    goto done;
  if (mode == PT_QR_R) st = pt_tensor_empty(ctx, dt, 1, (int64_t[]){0}, &Qw);
  else st = new_work(ctx, dt, nd, qshape, false, &Qw); /* qr_one writes all of it */
  if (st) goto done;
  lp_job j = {.ctx = ctx, .fname = fname, .dt = dt, .batched = nd > 2,
              .batch = pt_shape_numel(nd - 2, A->shape), .nchk = 1, .info = LP_NO_CONVERGE, .query = true,
              .ntmp = k + (qc > n ? m * qc : 0), .m = m, .n = n, .k = k, .c0 = qc};
  lp_op(&j, W, m * n);
  lp_op(&j, mode == PT_QR_R ? NULL : Qw, m * qc);
  lp_op(&j, Rw, rr * n);
  if ((st = lp_run(&j, qr_one))) goto done;
  pt_tensor *save[2] = {mode == PT_QR_R ? NULL : Qw, Rw};
  for (int which = 0; which < 2; which++) {
    if (which == 0 && mode == PT_QR_R) continue;
    pt_node *node;
    if ((st = record(ctx, which ? Rw : Qw, "LinalgQrBackward", qr_backward, 1, &A, 2, save, &node))) goto done;
    if (node) {
      node->ints[0] = mode;
      node->ints[1] = which;
      node->n_ints = 2;
    }
  }
done:
  pt_tensor_release(W);
  if (st) {
    pt_tensor_release(Qw);
    pt_tensor_release(Rw);
    return st;
  }
  *Q = Qw;
  *R = Rw;
  return PT_OK;
}

/* ------------------------------------------------------------------ eigh */

/* saved: 0 eigenvalues (batch x n), 1 eigenvectors (batch x n x n); ints[0] 1 for V's node */
static pt_status eigh_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  const pt_tensor *V = node->saved[1];
  bool is_v = node->ints[0];
  int64_t n = V->shape[V->ndim - 1], batch = pt_shape_numel(V->ndim - 2, V->shape);
  bw f;
  pt_status st = bw_begin(ctx, node, 2, g, is_v, V->ndim, V->shape, 2 * n * n, &f);
  double *ret = f.w, *t = ret + n * n;
  for (int64_t b = 0; !st && b < batch; b++) {
    const double *v = dp(f.s[1]) + b * n * n, *l = dp(f.s[0]) + b * n;
    if (is_v) { /* ret = skew(V^T gV) / 2 / (l_j - l_i) off the diagonal */
      mm(ctx, true, false, n, n, n, 1.0, v, dp(f.G) + b * n * n, 0.0, t);
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
          ret[i * n + j] = i == j ? 0 : 0.5 * (t[i * n + j] - t[j * n + i]) / (l[j] - l[i]);
    } else {
      for (int64_t i = 0; i < n * n; i++) ret[i] = 0;
      for (int64_t i = 0; i < n; i++) ret[i * n + i] = dp(f.G)[b * n + i];
    }
    mm(ctx, false, false, n, n, n, 1.0, v, ret, 0.0, t); /* V ret V^T */
    mm(ctx, false, true, n, n, n, 1.0, t, v, 0.0, dp(f.GA) + b * n * n);
  }
  return bw_end(ctx, node, st, &f, gin);
}

/* operands: 0 A (its eigenvectors when jobz is 'V'), 1 the eigenvalues. syevd on the row-major
 * buffer reads A^T column-major, in the other triangle (uplo); its eigenvectors come back as
 * columns of a column-major matrix and are transposed in place. */
static lapack_int eigh_one(lp_job *j, void *const *p, bool query) {
  int64_t n = j->n;
  if (n == 0) return 0;
  lapack_int info = LP_CALL(j, syevd, j->jobz, j->uplo, (int)n, p[0], ld(n), p[1], j->work, j->lwork, j->iwork,
                            j->liwork);
  if (query) {
    if (!info) lp_want(j, 0);
    return info;
  }
  if (!info && j->jobz == 'V') transpose_square(j->dt, n, p[0]);
  return info;
}

pt_status pt_linalg_eigh(pt_ctx *ctx, const char *fname, pt_tensor *A, bool upper, pt_tensor **L,
                         pt_tensor **V) {
  pt_status st = check_matrix(ctx, fname, A, true);
  if (st) return st;
  bool need_v = V || pt_autograd_needed(ctx, 1, &A);
  pt_dtype dt = A->dtype;
  int nd = A->ndim;
  int64_t n = A->shape[nd - 1], eshape[PT_MAX_DIMS];
  batch_shape(A, 2, n, -1, eshape);
  pt_tensor *W = NULL, *E = NULL;
  if ((st = to_work(ctx, A, dt, nd, A->shape, &W)) || (st = new_work(ctx, dt, nd - 1, eshape, false, &E))) goto done;
  lp_job j = {.ctx = ctx, .fname = fname, .dt = dt, .batched = nd > 2,
              .batch = pt_shape_numel(nd - 2, A->shape), .nchk = 1, .info = LP_NO_CONVERGE, .query = true,
              .n = n, .jobz = need_v ? 'V' : 'N', .uplo = upper ? 'L' : 'U'};
  lp_op(&j, W, n * n);
  lp_op(&j, E, n);
  if ((st = lp_run(&j, eigh_one))) goto done;
  pt_tensor *save[2] = {E, W};
  for (int which = 0; which < 2 && need_v; which++) {
    if (which == 1 && !V) break;
    pt_node *node;
    if ((st = record(ctx, which ? W : E, "LinalgEighBackward", eigh_backward, 1, &A, 2, save, &node)))
      goto done;
    if (node) {
      node->ints[0] = which;
      node->n_ints = 1;
    }
  }
done:
  if (st) {
    pt_tensor_release(W);
    pt_tensor_release(E);
    return st;
  }
  *L = E;
  if (V) *V = W;
  else pt_tensor_release(W);
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

/* saved: 0 U (batch x m x uc), 1 S, 2 Vh (batch x vr x n); ints[0]: 0 U, 1 S, 2 Vh.
 * With full_matrices only the first k columns of U (rows of Vh) and of their gradients count:
 * the others are not determined by A (PyTorch does the same). */
static pt_status svd_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  int which = (int)node->ints[0], nd = node->saved[0]->ndim;
  const int64_t *us = node->saved[0]->shape, *vs = node->saved[2]->shape;
  int64_t m = us[nd - 2], uc = us[nd - 1], vr = vs[nd - 2], n = vs[nd - 1];
  int64_t k = mini(m, n), big = maxi(m, n), batch = pt_shape_numel(nd - 2, us), ashape[PT_MAX_DIMS];
  memcpy(ashape, us, sizeof(int64_t) * (size_t)nd);
  ashape[nd - 1] = n;
  bw f;
  pt_status st = bw_begin(ctx, node, 3, g, which, nd, ashape, 3 * k * k + 2 * big * k + 2 * m * k, &f);
  double *u = f.w + 3 * k * k + 2 * big * k, *gu = u + m * k;
  int64_t gstep = st ? 0 : pt_tensor_numel(f.G) / (batch ? batch : 1);
  for (int64_t b = 0; !st && b < batch; b++) {
    const double *ub = dp(f.s[0]) + b * m * uc, *gb = dp(f.G) + b * gstep;
    for (int64_t i = 0; i < m; i++) { /* the first k columns, packed */
      memcpy(u + i * k, ub + i * uc, sizeof(double) * (size_t)k);
      if (which == 0) memcpy(gu + i * k, gb + i * uc, sizeof(double) * (size_t)k);
    }
    svd_grad(ctx, m, n, u, dp(f.s[1]) + b * k, dp(f.s[2]) + b * vr * n, which == 0 ? gu : NULL,
             which == 1 ? gb : NULL, which == 2 ? gb : NULL, f.w, dp(f.GA) + b * m * n);
  }
  return bw_end(ctx, node, st, &f, gin);
}

/* The SVD of one m x n matrix (k = min(m, n) > 0) into s, U (row-major m x uc) and Vh
 * (row-major vr x n) (jobz 'A', 'S', or 'N': no U, Vh), with gesdd on a tall matrix, its
 * faster case (its QR path is faster than its LQ path). tall (m > n): a holds A column-major,
 * and gesdd's column-major U and V^T come back in w (m*uc + vr*n) and are transposed out.
 * Else a holds A row-major, which is A^T (n x m, tall or square) column-major: A^T = U' S V'^T
 * is A = V' S U'^T, so V'^T read row-major is U and U' read row-major is Vh, with no copies.
 * a is destroyed. In query mode only the workspace is asked for (a stands in for the rest). */
static lapack_int svd_call(lp_job *j, char jobz, bool tall, int64_t m, int64_t n, void *a, void *s, void *u,
                           int64_t uc, void *vh, int64_t vr, void *w, bool query) {
  int64_t k = mini(m, n);
  lapack_int lw = query ? -1 : j->lwork, info;
  double dummy[1];
  if (!tall || jobz == 'N') {
    void *v = !tall || query ? a : (void *)dummy;
    info = tall ? LP_CALL(j, gesdd, jobz, (int)m, (int)n, a, ld(m), query ? a : s, v, 1, v, 1, j->work, lw, j->iwork)
                : LP_CALL(j, gesdd, jobz, (int)n, (int)m, a, ld(n), query ? a : s, vh ? vh : v, ld(n), u ? u : v,
                          ld(uc), j->work, lw, j->iwork);
  } else {
    void *wu = query ? a : w, *wv = query ? a : elem(j->dt, w, m * uc);
    info = LP_CALL(j, gesdd, jobz, (int)m, (int)n, a, ld(m), query ? a : s, wu, ld(m), wv, ld(vr), j->work, lw,
                   j->iwork);
    if (!info && !query) {
      transpose_copy(j->dt, uc, m, wu, u); /* column-major m x uc is row-major uc x m */
      transpose_copy(j->dt, n, vr, wv, vh);
    }
  }
  if (query && !info) lp_want(j, 8 * k);
  return info;
}

/* operands: 0 A (destroyed; m x n, column-major when tall: see svd_call), 1 S (k), 2 U (m x
 * c0), 3 Vh (c1 x n); jobz 'A', 'S' or 'N' (no U, Vh); trans: tall. tmp: m*c0 + c1*n when tall. */
static lapack_int svd_one(lp_job *j, void *const *p, bool query) {
  int64_t m = j->m, n = j->n, k = mini(m, n), uc = j->c0, vr = j->c1;
  void *u = p[2], *vh = p[3];
  if (k == 0) { /* an empty matrix: U, Vh identities (full) */
    for (int64_t i = 0; i < m && uc && !query; i++) set_at(j->dt, u, i * uc + i, 1);
    for (int64_t i = 0; i < n && vr && !query; i++) set_at(j->dt, vh, i * n + i, 1);
    return 0;
  }
  return svd_call(j, j->jobz, j->trans, m, n, p[0], p[1], u, uc, vh, vr, j->tmp, query);
}

pt_status pt_linalg_svd(pt_ctx *ctx, const char *fname, pt_tensor *A, bool full_matrices,
                        pt_tensor **U, pt_tensor **S, pt_tensor **Vh) {
  pt_status st = check_matrix(ctx, fname, A, false);
  if (st) return st;
  bool want = U != NULL, need = want || pt_autograd_needed(ctx, 1, &A);
  char jobz = want ? (full_matrices ? 'A' : 'S') : need ? 'S' : 'N';
  pt_dtype dt = A->dtype;
  int nd = A->ndim;
  int64_t m = A->shape[nd - 2], n = A->shape[nd - 1], k = mini(m, n);
  int64_t uc = jobz == 'A' ? m : k, vr = jobz == 'A' ? n : k;
  int64_t ushape[PT_MAX_DIMS], sshape[PT_MAX_DIMS], vshape[PT_MAX_DIMS];
  batch_shape(A, 2, m, uc, ushape);
  batch_shape(A, 2, k, -1, sshape);
  batch_shape(A, 2, vr, n, vshape);
  pt_tensor *W = NULL, *Uw = NULL, *Sw = NULL, *Vw = NULL;
  bool tall = m > n;
  if (tall) st = to_colmajor(ctx, A, dt, nd - 2, A->shape, &W);
  else st = to_work(ctx, A, dt, nd, A->shape, &W);
  if (st || (st = new_work(ctx, dt, nd - 1, sshape, false, &Sw))) goto done;
  if (need && ((st = new_work(ctx, dt, nd, ushape, true, &Uw)) || (st = new_work(ctx, dt, nd, vshape, true, &Vw))))
    goto done;
  lp_job j = {.ctx = ctx, .fname = fname, .dt = dt, .batched = nd > 2,
              .batch = pt_shape_numel(nd - 2, A->shape), .nchk = 1, .nan = LP_NAN_FAIL,
              .info = LP_NO_CONVERGE, .query = true, .m = m, .n = n, .c0 = need ? uc : 0,
              .c1 = need ? vr : 0, .jobz = jobz, .trans = tall, .ntmp = tall && need ? m * uc + vr * n : 0};
  lp_op(&j, W, m * n);
  lp_op(&j, Sw, k);
  lp_op(&j, Uw, m * uc);
  lp_op(&j, Vw, vr * n);
  if ((st = lp_run(&j, svd_one))) goto done;
  if (need) {
    pt_tensor *save[3] = {Uw, Sw, Vw}, *outs[3] = {want ? Uw : NULL, Sw, want ? Vw : NULL};
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
  if (st || !want) {
    pt_tensor_release(Uw);
    pt_tensor_release(Vw);
  }
  if (st) {
    pt_tensor_release(Sw);
    return st;
  }
  *S = Sw;
  if (U) *U = Uw;
  if (Vh) *Vh = Vw;
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

static int64_t pinv_scratch(int64_t m, int64_t n) {
  int64_t k = mini(m, n);
  return m * n + m * k + k + k * n + maxi(n * k, n * n) + (m > n ? m * k + k * n : 0) + 1;
}

/* operands: 0 A (m x n, read), 1 its pseudo-inverse P (n x m), or none (jobz 'N': the rank
 * alone, from the singular values). By the SVD (svd_call; tall A is copied transposed first),
 * or for a symmetric A (mode 1) by eigh of its lower triangle (syevd 'U' on the buffer; the
 * eigenvectors are the columns of the column-major result V, so the buffer read row-major is
 * V^T). Ranks into j->rank (when not NULL); the tolerance is PyTorch's for j->tol_dt.
 * tmp: pinv_scratch(m, n). */
static lapack_int pinv_one(lp_job *j, void *const *p, bool query) {
  pt_dtype dt = j->dt;
  int64_t m = j->m, n = j->n, k = mini(m, n), r = 0;
  bool herm = j->mode, vals = j->jobz == 'N', tall = !herm && m > n;
  lapack_int info;
  if (k == 0) {
    if (!query && p[1]) memset(p[1], 0, pt_dtype_size(dt) * (size_t)(m * n));
    if (!query && j->rank) j->rank[j->b] = 0;
    return 0;
  }
  if (query) {
    if (!herm) return svd_call(j, vals ? 'N' : 'S', tall, m, n, p[0], NULL, NULL, k, NULL, k, NULL, true);
    info = LP_CALL(j, syevd, vals ? 'N' : 'V', 'U', (int)n, p[0], ld(n), p[0], j->work, -1, j->iwork, -1);
    if (!info) lp_want(j, 0);
    return info;
  }
  void *c = j->tmp, *u = elem(dt, c, m * n), *s = elem(dt, u, m * k), *vt = elem(dt, s, k), *t = elem(dt, vt, k * n);
  if (tall) transpose_copy(dt, m, n, p[0], c);
  else copy_elems(dt, c, p[0], m * n);
  if (herm) info = LP_CALL(j, syevd, vals ? 'N' : 'V', 'U', (int)n, c, ld(n), s, j->work, j->lwork, j->iwork, j->liwork);
  else info = svd_call(j, vals ? 'N' : 'S', tall, m, n, c, s, u, k, vt, k, elem(dt, t, maxi(n * k, n * n)), false);
  if (info) return info;
  double big = 0;
  for (int64_t i = 0; i < k; i++) big = fmax(big, fabs(get_at(dt, s, i)));
  double tol = tolerance(j->atols ? j->atols[j->b] : j->atol, j->rtols ? j->rtols[j->b] : j->rtol, big, j->tol_dt,
                         m, n);
  for (int64_t i = 0; i < k; i++) r += fabs(get_at(dt, s, i)) > tol;
  if (j->rank) j->rank[j->b] = r;
  if (vals) return 0;
  if (herm) { /* P = V diag(1/s) V^T = C^T (diag(1/s) C), C = the buffer read row-major */
    for (int64_t l = 0; l < n; l++) {
      double sl = get_at(dt, s, l);
      for (int64_t i = 0; i < n; i++) set_at(dt, t, l * n + i, fabs(sl) > tol ? get_at(dt, c, l * n + i) / sl : 0);
    }
    mmx(j->ctx, dt, true, false, n, n, n, 1.0, c, t, 0.0, p[1]);
  } else { /* P = t U^T, t (n x k) = V diag(1/s) */
    for (int64_t i = 0; i < n; i++)
      for (int64_t l = 0; l < k; l++) {
        double sl = get_at(dt, s, l);
        set_at(dt, t, i * k + l, sl > tol ? get_at(dt, vt, l * n + i) / sl : 0);
      }
    mmx(j->ctx, dt, false, true, n, m, k, 1.0, t, u, 0.0, p[1]);
  }
  return 0;
}

/* pinv_one over every matrix of A (batch x m x n) into P (batch x n x m; NULL: ranks only);
 * atols/rtols: a tolerance per matrix instead of atol/rtol, or NULL */
static pt_status pinv_run(pt_ctx *ctx, const char *fname, bool batched, pt_tensor *A, pt_tensor *P, int64_t *rank,
                          double atol, double rtol, const double *atols, const double *rtols, pt_dtype tol_dt,
                          bool hermitian) {
  int nd = A->ndim;
  int64_t m = A->shape[nd - 2], n = A->shape[nd - 1];
  lp_job j = {.ctx = ctx, .fname = fname, .dt = A->dtype, .batched = batched,
              .batch = pt_shape_numel(nd - 2, A->shape), .nchk = 1, .nan = LP_NAN_FAIL,
              .info = LP_NO_CONVERGE, .query = true, .ntmp = pinv_scratch(m, n), .m = m, .n = n,
              .mode = hermitian, .jobz = P ? 'V' : 'N', .atol = atol, .rtol = rtol, .atols = atols,
              .rtols = rtols, .tol_dt = tol_dt, .rank = rank};
  lp_op(&j, A, m * n);
  lp_op(&j, P, m * n);
  return lp_run(&j, pinv_one);
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


/* saved: 0 A, 1 P */
static pt_status pinv_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  const pt_tensor *A = node->saved[0];
  int nd = A->ndim;
  int64_t m = A->shape[nd - 2], n = A->shape[nd - 1], big = maxi(m, n), batch = pt_shape_numel(nd - 2, A->shape);
  bw f;
  pt_status st = bw_begin(ctx, node, 2, g, 1, nd, A->shape, 5 * big * big, &f);
  for (int64_t b = 0; !st && b < batch; b++)
    pinv_grad(ctx, m, n, dp(f.s[0]) + b * m * n, dp(f.s[1]) + b * m * n, dp(f.G) + b * m * n, f.w,
              dp(f.GA) + b * m * n);
  return bw_end(ctx, node, st, &f, gin);
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
  int64_t m = A->shape[nd - 2], n = A->shape[nd - 1], pshape[PT_MAX_DIMS];
  batch_shape(A, 2, n, m, pshape);
  pt_tensor *W = NULL, *P = NULL;
  /* pinv_one reads A: a copy only when it is saved */
  if (pt_autograd_needed(ctx, 1, &A)) st = to_work(ctx, A, A->dtype, nd, A->shape, &W);
  else st = pt_tensor_contiguous_raw(ctx, A, &W);
  if (st || (st = new_work(ctx, A->dtype, nd, pshape, false, &P))) goto done;
  if ((st = pinv_run(ctx, fname, nd > 2, W, P, NULL, atol, rtol, NULL, NULL, A->dtype, hermitian))) goto done;
  pt_tensor *save[2] = {W, P};
  st = record(ctx, P, "LinalgPinvBackward", pinv_backward, 1, &A, 2, save, NULL);
done:
  pt_tensor_release(W);
  if (st) {
    pt_tensor_release(P);
    return st;
  }
  *out = P;
  return PT_OK;
}

pt_status pt_linalg_matrix_rank(pt_ctx *ctx, pt_tensor *A, double atol, double rtol, bool hermitian,
                                pt_tensor **out) {
  const char *fname = "linalg.matrix_rank";
  pt_status st = check_matrix(ctx, fname, A, false);
  if (!st) st = check_tols(ctx, fname, A, hermitian, atol, rtol);
  if (st) return st;
  int nd = A->ndim;
  pt_tensor *W = NULL, *o = NULL;
  if ((st = pt_tensor_contiguous_raw(ctx, A, &W)) || (st = pt_tensor_empty(ctx, PT_INT64, nd - 2, A->shape, &o)))
    goto done;
  st = pinv_run(ctx, fname, nd > 2, W, NULL, pt_tensor_data(o), atol, rtol, NULL, NULL, A->dtype, hermitian);
done:
  pt_tensor_release(W);
  if (st) {
    pt_tensor_release(o);
    return st;
  }
  *out = o;
  return PT_OK;
}

/* pinv (rank_only false) or matrix_rank with tolerance tensors (NULL: not given), broadcast with
 * A's batch dims as torch's: the result has the broadcast batch shape */
static pt_status pinv_tensors(pt_ctx *ctx, const char *fname, pt_tensor *A, pt_tensor *atol, pt_tensor *rtol,
                              bool hermitian, bool rank_only, pt_tensor **out) {
  pt_status st = check_matrix(ctx, fname, A, false);
  if (!st) st = check_tols(ctx, fname, A, hermitian, 0, 0);
  if (st) return st;
  int na = A->ndim, nb = na - 2;
  int64_t m = A->shape[na - 2], n = A->shape[na - 1], bshape[PT_MAX_DIMS], shape[PT_MAX_DIMS];
  memcpy(bshape, A->shape, sizeof(int64_t) * (size_t)nb);
  pt_tensor *tols[2] = {atol, rtol}, *tw[2] = {NULL, NULL}, *W = NULL, *r = NULL;
  for (int i = 0; i < 2; i++) {
    if (!tols[i]) continue;
    char sa[PT_SHAPE_STR_MAX], sb[PT_SHAPE_STR_MAX];
    if (tols[i]->ndim > PT_MAX_DIMS - 2 ||
        pt_broadcast_shapes(ctx, fname, nb, bshape, tols[i]->ndim, tols[i]->shape, &nb, shape))
      return pt_fail(ctx, PT_ESHAPE, "%s: %s of shape %s cannot be broadcast with the batch dims of A %s", fname,
                     i ? "rtol" : "atol", shp(tols[i], sb), shp(A, sa));
    memcpy(bshape, shape, sizeof(int64_t) * (size_t)nb);
  }
  int64_t batch = pt_shape_numel(nb, bshape);
  for (int i = 0; i < 2 && !st; i++) {
    if (!tols[i] || (st = to64(ctx, tols[i], nb, bshape, &tw[i]))) continue;
    for (int64_t b = 0; b < batch && !st; b++)
      if (dp(tw[i])[b] < 0)
        st = pt_fail(ctx, PT_EARG, "%s: atol and rtol must be >= 0, got %s %g", fname, i ? "rtol" : "atol",
                     dp(tw[i])[b]);
  }
  if (st) goto done;
  memcpy(shape, bshape, sizeof(int64_t) * (size_t)nb);
  shape[nb] = m;
  shape[nb + 1] = n;
  if ((st = to_work(ctx, A, A->dtype, nb + 2, shape, &W))) goto done;
  const double *at = tw[0] ? dp(tw[0]) : NULL, *rt = tw[1] ? dp(tw[1]) : NULL;
  if (rank_only) {
    if ((st = pt_tensor_empty(ctx, PT_INT64, nb, bshape, &r))) goto done;
    st = pinv_run(ctx, fname, nb > 0, W, NULL, pt_tensor_data(r), NAN, NAN, at, rt, A->dtype, hermitian);
    goto done;
  }
  shape[nb] = n;
  shape[nb + 1] = m;
  if ((st = new_work(ctx, A->dtype, nb + 2, shape, false, &r)) ||
      (st = pinv_run(ctx, fname, nb > 0, W, r, NULL, NAN, NAN, at, rt, A->dtype, hermitian)))
    goto done;
  pt_tensor *save[2] = {W, r};
  st = record(ctx, r, "LinalgPinvBackward", pinv_backward, 1, &A, 2, save, NULL);
done:
  pt_tensor_release(W);
  release_all(2, tw);
  if (st) {
    pt_tensor_release(r);
    return st;
  }
  *out = r;
  return PT_OK;
}

pt_status pt_linalg_pinv_tensors(pt_ctx *ctx, const char *fname, pt_tensor *A, pt_tensor *atol, pt_tensor *rtol,
                                 bool hermitian, pt_tensor **out) {
  return pinv_tensors(ctx, fname, A, atol, rtol, hermitian, false, out);
}

pt_status pt_linalg_matrix_rank_tensors(pt_ctx *ctx, pt_tensor *A, pt_tensor *atol, pt_tensor *rtol, bool hermitian,
                                        pt_tensor **out) {
  return pinv_tensors(ctx, "linalg.matrix_rank", A, atol, rtol, hermitian, true, out);
}

/* ------------------------------------------------------------------ lstsq */

/* saved: 0 A (batch x m x n), 1 B (batch x m x k); ints[0] vector case */
static pt_status lstsq_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *s[2], *G = NULL, *GA = NULL, *GB = NULL, *P = NULL;
  pt_status st = saved64(ctx, node, 2, s);
  if (st) return st;
  pt_tensor *A64 = s[0], *B64 = s[1];
  int nd = A64->ndim;
  int64_t m = A64->shape[nd - 2], n = A64->shape[nd - 1], k = B64->shape[nd - 1], big = maxi(m, n);
  int64_t batch = pt_shape_numel(nd - 2, A64->shape), xshape[PT_MAX_DIMS], pshape[PT_MAX_DIMS];
  memcpy(xshape, B64->shape, sizeof(int64_t) * (size_t)nd);
  xshape[nd - 2] = n;
  memcpy(pshape, A64->shape, sizeof(int64_t) * (size_t)nd);
  pshape[nd - 2] = n;
  pshape[nd - 1] = m;
  pt_tensor *A = node->inputs[0];
  st = grad64(ctx, g, nd, xshape, &G);
  if (!st) st = new64(ctx, nd, A64->shape, false, &GA);
  if (!st) st = new64(ctx, nd, B64->shape, false, &GB);
  if (!st) st = new64(ctx, nd, pshape, false, &P);
  if (!st) st = pinv_run(ctx, "linalg.lstsq backward", false, A64, P, NULL, NAN, NAN, NULL, NULL, A->dtype, false);
  if (st) goto done;
  double *w = scratch(ctx, m * n + 5 * big * big, &st);
  if (!w) goto done;
  double *gP = w, *w2 = gP + m * n;
  for (int64_t b = 0; b < batch; b++) {
    const double *a = dp(A64) + b * m * n, *bb = dp(B64) + b * m * k, *gx = dp(G) + b * n * k, *p = dp(P) + b * m * n;
    mm(ctx, true, false, m, k, n, 1.0, p, gx, 0.0, dp(GB) + b * m * k); /* gB = P^T gX */
    mm(ctx, false, true, n, m, k, 1.0, gx, bb, 0.0, gP);                /* gP = gX B^T */
    pinv_grad(ctx, m, n, a, p, gP, w2, dp(GA) + b * m * n);
  }
  pt_free(w);
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
  release_all(2, s);
  pt_tensor_release(G);
  pt_tensor_release(GA);
  pt_tensor_release(GB);
  pt_tensor_release(P);
  return st;
}

/* operands: 0 A (column-major m x n: a transposed copy), 1 B (column-major, max(m, n) rows, k
 * columns; the solution in its first n rows), 2 the singular values (gelsd, gelss); mode: the
 * driver. Ranks into j->rank. tmp: min(m, n); ipiv: gelsy's n + 1 column pivots. */
static lapack_int lstsq_one(lp_job *j, void *const *p, bool query) {
  int64_t m = j->m, n = j->n, k = j->k, kk = mini(m, n);
  int lda = ld(m), ldb = ld(maxi(m, n)), mi = (int)m, ni = (int)n, ki = (int)k;
  lapack_int lw = query ? -1 : j->lwork, r = (lapack_int)kk, info = 0;
  void *a = p[0], *bb = p[1], *s = p[2];
  if (kk > 0 && k > 0) {
    switch ((pt_lstsq_driver)j->mode) {
    case PT_LSTSQ_GELS: info = LP_CALL(j, gels, 'N', mi, ni, ki, a, lda, bb, ldb, j->work, lw); break;
    case PT_LSTSQ_GELSY:
      if (!query) memset(j->ipiv, 0, sizeof(lapack_int) * (size_t)(n + 1));
      info = LP_CALL(j, gelsy, mi, ni, ki, a, lda, bb, ldb, j->ipiv, j->rcond, &r, j->work, lw);
      break;
    case PT_LSTSQ_GELSD: info = LP_CALL(j, gelsd, mi, ni, ki, a, lda, bb, ldb, s, j->rcond, &r, j->work, lw, j->iwork); break;
    case PT_LSTSQ_GELSS: info = LP_CALL(j, gelss, mi, ni, ki, a, lda, bb, ldb, s, j->rcond, &r, j->work, lw); break;
    }
    if (query && !info) lp_want(j, 0);
    if (query || info) return info;
  } else if (kk > 0 && j->rank) { /* no columns in B: the rank and singular values of A alone */
    void *sv = s ? s : j->tmp;
    double dummy[1];
    if (query || all_finite(j->dt, a, m * n))
      info = LP_CALL(j, gesdd, 'N', mi, ni, a, lda, query ? a : sv, (void *)dummy, 1, (void *)dummy, 1, j->work, lw,
                     j->iwork);
    else
      info = 1;
    if (query) {
      if (!info) lp_want(j, 8 * kk);
      return info;
    }
    if (info) fill_nan(j->dt, sv, kk);
    r = 0;
    for (int64_t i = 0; i < kk; i++) r += get_at(j->dt, sv, i) > j->rcond * get_at(j->dt, sv, 0);
  } else if (query) {
    return 0;
  }
  if (j->rank) j->rank[j->b] = r;
  return 0;
}

pt_status pt_linalg_lstsq(pt_ctx *ctx, pt_tensor *A, pt_tensor *B, double rcond,
                          pt_lstsq_driver driver, pt_tensor **solution, pt_tensor **residuals,
                          pt_tensor **rank, pt_tensor **singular_values) {
  const char *fname = "linalg.lstsq";
  pt_status st = check_matrix(ctx, fname, A, false);
  if (!st) st = check_same_dtype(ctx, fname, A, B);
  if (st) return st;
  char sa[PT_SHAPE_STR_MAX], sb[PT_SHAPE_STR_MAX];
  int na = A->ndim;
  int64_t m = A->shape[na - 2], n = A->shape[na - 1], kk = mini(m, n);
  if (B->ndim < 1)
    return pt_fail(ctx, PT_ESHAPE, "%s: B must have at least 1 dimension, got shape %s", fname, shp(B, sb));
  if (B->ndim > na || na - B->ndim > 1) /* as torch: B has A's number of dims, or one less (vectors) */
    return pt_fail(ctx, PT_ESHAPE, "%s: B must have as many dims as A or one less, got A %s and B %s", fname,
                   shp(A, sa), shp(B, sb));
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
  pt_dtype dt = A->dtype;
  int64_t batch = pt_shape_numel(nbatch, bshape), big = maxi(m, n);
  if (rcond < 0) rcond = dtype_eps(dt) * (double)big;
  bool has_rank = driver != PT_LSTSQ_GELS, has_sv = driver == PT_LSTSQ_GELSD || driver == PT_LSTSQ_GELSS;
  pt_tensor *ins[2] = {A, B};
  pt_tensor *Bv = NULL, *Ac = NULL, *Bc = NULL, *Bn = NULL, *Aw = NULL, *Bw = NULL, *S = NULL, *Rk = NULL;
  pt_tensor *X = NULL, *x = NULL, *ro = NULL, *so = NULL, *v = NULL;
  if (vector) {
    if ((st = pt_unsqueeze_raw(ctx, B, B->ndim, &Bv))) return st;
  } else {
    Bv = pt_tensor_retain(B);
  }
  int64_t xshape[PT_MAX_DIMS], sshape[PT_MAX_DIMS], cshape[PT_MAX_DIMS];
  memcpy(xshape, bshape, sizeof(int64_t) * (size_t)nd);
  xshape[nbatch] = n;
  memcpy(sshape, bshape, sizeof(int64_t) * (size_t)nbatch);
  sshape[nbatch] = kk;
  memcpy(cshape, bshape, sizeof(int64_t) * (size_t)nbatch);
  cshape[nbatch] = k;
  cshape[nbatch + 1] = big;
  /* LAPACK's column-major operands, as PyTorch: A transposed, B transposed into max(m, n) rows */
  if ((st = to_colmajor(ctx, A, dt, nbatch, bshape, &Ac)) || (st = new_work(ctx, dt, nd, cshape, true, &Bc)) ||
      (st = pt_narrow_raw(ctx, Bc, nd - 1, 0, m, &Bn)) || (st = pt_transpose_raw(ctx, Bv, Bv->ndim - 2, Bv->ndim - 1, &v)) ||
      (st = pt_tensor_copy_into(ctx, Bn, v)))
    goto done;
  if (has_sv && (st = new_work(ctx, dt, nbatch + 1, sshape, false, &S))) goto done;
  if (has_rank) {
    if ((st = pt_tensor_empty(ctx, PT_INT64, nbatch, bshape, &Rk))) goto done;
    for (int64_t b = 0; b < batch; b++) ((int64_t *)pt_tensor_data(Rk))[b] = kk; /* a matrix with NaN */
  }
  lp_job j = {.ctx = ctx, .fname = fname, .dt = dt, .batched = nbatch > 0, .batch = batch, .nchk = 2,
              .info = driver == PT_LSTSQ_GELS ? LP_RANK : LP_NO_CONVERGE, .query = true, .ntmp = kk,
              .npiv = n + 1, .m = m, .n = n, .k = k, .mode = driver, .rcond = rcond,
              .rank = Rk ? pt_tensor_data(Rk) : NULL};
  lp_op(&j, Ac, m * n);
  lp_op(&j, Bc, big * k);
  lp_op(&j, S, kk);
  if ((st = lp_run(&j, lstsq_one))) goto done;
  /* the solution: B's first n rows, transposed back */
  pt_tensor_release(Bn);
  pt_tensor_release(v);
  Bn = v = NULL;
  if ((st = pt_narrow_raw(ctx, Bc, nd - 1, 0, n, &Bn)) || (st = pt_transpose_raw(ctx, Bn, nd - 2, nd - 1, &v)) ||
      (st = to_work(ctx, v, dt, nd, xshape, &X)))
    goto done;
  bool full_rank = true;
  for (int64_t b = 0; has_rank && b < batch; b++) full_rank = full_rank && ((int64_t *)pt_tensor_data(Rk))[b] >= n;
  if (!has_rank) full_rank = kk >= n;
  int64_t zero = 0;
  /* the squared norms of rows n.. (for vectors too: residuals (..., 1), as torch) */
  if (m > n && driver != PT_LSTSQ_GELSY && full_rank) {
    int64_t rshape[PT_MAX_DIMS];
    memcpy(rshape, bshape, sizeof(int64_t) * (size_t)nbatch);
    rshape[nbatch] = k;
    if ((st = new_work(ctx, dt, nbatch + 1, rshape, false, &ro))) goto done;
    for (int64_t bj = 0; bj < batch * k; bj++) {
      double acc = 0;
      for (int64_t i = n; i < m; i++) {
        double e = get_at(dt, pt_tensor_data(Bc), bj * big + i);
        acc += e * e;
      }
      set_at(dt, pt_tensor_data(ro), bj, acc);
    }
  } else if ((st = pt_tensor_empty(ctx, dt, 1, &zero, &ro))) {
    goto done;
  }
  if (has_rank && (nbatch != na - 2 || memcmp(bshape, A->shape, sizeof(int64_t) * (size_t)nbatch))) {
    /* rank and singular values have A's batch shape, as torch (they do not depend on B): the
     * elements of the broadcast batch at index 0 along the dims A broadcasts */
    int ab = na - 2, off = nbatch - ab;
    int64_t abatch = pt_shape_numel(ab, A->shape), ashp[PT_MAX_DIMS];
    memcpy(ashp, A->shape, sizeof(int64_t) * (size_t)ab);
    pt_tensor *R2 = NULL, *S2 = NULL;
    if ((st = pt_tensor_empty(ctx, PT_INT64, ab, ashp, &R2))) goto done;
    ashp[ab] = kk;
    if (has_sv && (st = new_work(ctx, dt, ab + 1, ashp, false, &S2))) {
      pt_tensor_release(R2);
      goto done;
    }
    for (int64_t a = 0; a < abatch; a++) {
      int64_t rem = a, bi = 0, stride = 1;
      for (int d = nbatch - 1; d >= 0; d--) {
        if (d >= off) {
          int64_t sz = A->shape[d - off];
          bi += rem % sz * stride;
          rem /= sz;
        }
        stride *= bshape[d];
      }
      ((int64_t *)pt_tensor_data(R2))[a] = ((int64_t *)pt_tensor_data(Rk))[bi];
      if (S2) copy_elems(dt, elem(dt, pt_tensor_data(S2), a * kk), elem(dt, pt_tensor_data(S), bi * kk), kk);
    }
    pt_tensor_release(Rk);
    Rk = R2;
    if (S2) {
      pt_tensor_release(S);
      S = S2;
    }
  }
  if (has_sv) so = pt_tensor_retain(S);
  else if ((st = pt_tensor_empty(ctx, dt, 1, &zero, &so))) goto done;
  if (!has_rank && (st = pt_tensor_empty(ctx, PT_INT64, 1, &zero, &Rk))) goto done;
  if (vector) {
    if ((st = pt_view_raw(ctx, X, nd - 1, xshape, &x))) goto done;
  } else {
    x = pt_tensor_retain(X);
  }
  if (pt_autograd_needed(ctx, 2, ins) &&
      ((st = to_work(ctx, A, dt, nd, ashape, &Aw)) || (st = to_work(ctx, Bv, dt, nd, bshape, &Bw))))
    goto done;
  pt_tensor *save[2] = {Aw, Bw};
  pt_node *node;
  if ((st = record(ctx, x, "LinalgLstsqBackward", lstsq_backward, 2, ins, 2, save, &node))) goto done;
  if (node) {
    node->ints[0] = vector;
    node->n_ints = 1;
  }
done:
  pt_tensor_release(Bv);
  pt_tensor_release(Ac);
  pt_tensor_release(Bc);
  pt_tensor_release(Bn);
  pt_tensor_release(v);
  pt_tensor_release(Aw);
  pt_tensor_release(Bw);
  pt_tensor_release(S);
  pt_tensor_release(X);
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

/* saved: 0 A (batch x n x n), 1 X (batch x r x c); ints: upper, left, unitriangular */
static pt_status solve_tri_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *s[2], *G = NULL, *GA = NULL;
  pt_status st = saved64(ctx, node, 2, s);
  if (st) return st;
  pt_tensor *A64 = s[0], *X64 = s[1];
  bool upper = node->ints[0], left = node->ints[1], unit = node->ints[2];
  int nd = X64->ndim;
  int64_t n = A64->shape[nd - 1], r = X64->shape[nd - 2], c = X64->shape[nd - 1];
  int64_t batch = pt_shape_numel(nd - 2, X64->shape);
  if ((st = grad64(ctx, g, nd, X64->shape, &G))) goto done;
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
  release_all(2, s);
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
  pt_tensor *ins[2] = {A, B}, *Aw = NULL, *X = NULL;
  /* A is only read: it is used as it is when it has the batch shape and is not saved */
  if (!pt_autograd_needed(ctx, 2, ins) && A->ndim == nd && !memcmp(A->shape, ashape, sizeof(int64_t) * (size_t)nd))
    st = pt_tensor_contiguous_raw(ctx, A, &Aw);
  else
    st = to_work(ctx, A, A->dtype, nd, ashape, &Aw);
  if (st || (st = to_work(ctx, B, A->dtype, nd, shape, &X))) goto done;
  for (int64_t b = 0; b < batch; b++)
    trsmx(A->dtype, left, upper, false, unitriangular, r, c, elem(A->dtype, pt_tensor_data(Aw), b * n * n),
          elem(A->dtype, pt_tensor_data(X), b * r * c));
  pt_tensor *save[2] = {Aw, X};
  pt_node *node;
  if ((st = record(ctx, X, "LinalgSolveTriangularBackward", solve_tri_backward, 2, ins, 2, save, &node))) goto done;
  if (node) {
    node->ints[0] = upper;
    node->ints[1] = left;
    node->ints[2] = unitriangular;
    node->n_ints = 3;
  }
done:
  pt_tensor_release(Aw);
  if (st) {
    pt_tensor_release(X);
    return st;
  }
  *out = X;
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
