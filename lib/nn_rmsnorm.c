/* RMS norm (PyTorch 2.4's nn.RMSNorm / F.rms_norm): y = x / sqrt(mean(x^2) + eps) * w over the
 * trailing dims, forward and backward fused, laid out as lib/nn.c's layer norm: M rows of D
 * contiguous elements, a row's sum of squares in one pass over 16 lanes of double
 * (norm_stats.h's vectors: float32 is widened on load, so its squares are exact), element-wise
 * passes 4 rows at a time (a weight element loaded serves 4 rows), groups of rows split over the
 * intra-op threads. The backward splits fixed blocks of rows, each adding its rows' weight
 * gradient into its own partial sums (double), added afterwards in block order: no result
 * depends on the thread count. Saved: x, rstd per row (float64) and w. */
#include "nn.h"
#include "dispatch.h"
#include "nn_impl.h"
#include "norm_stats.h"
#include "parallel.h"

#include <math.h>
#include <string.h>

#define RMS_GROUP 4       /* rows per group */
#define RMS_GRAIN 32768   /* elements per parallel chunk, at least */
#define RMS_BLOCKS 64     /* the backward's blocks, at most */
#define RMS_BLOCK_MIN 16  /* rows per block, at least */

typedef struct rms_job {
  pt_dtype dt;
  int64_t M, D, rb; /* rb: rows per backward block */
  double eps;
  const void *x, *g, *w; /* g: the output gradient (backward); w may be NULL */
  void *out;             /* y or the input gradient (NULL: none wanted) */
  double *rstd;          /* {M} */
  double *part;          /* backward: per block, D weight gradient sums; or NULL */
  bool add;              /* backward: out += the input gradient (x's gradient buffer) */
} rms_job;

/* s = the sum of the squares of the n elements at p (T, const T *p) */
#define RMS_SUMSQ(p, n, s)                                 \
  do {                                                     \
    nn_v8d a0_ = {0}, a1_ = {0}, v0_, v1_;                 \
    int64_t i_ = 0, nv_ = (n) - (n) % 16;                  \
    for (; i_ < nv_; i_ += 16) {                           \
      NN_LD8(v0_, (p) + i_);                               \
      NN_LD8(v1_, (p) + i_ + 8);                           \
      a0_ += v0_ * v0_;                                    \
      a1_ += v1_ * v1_;                                    \
    }                                                      \
    (s) = nn_hsum16(&a0_, &a1_);                           \
    for (; i_ < (n); i_++) (s) += (double)(p)[i_] * (p)[i_]; \
  } while (0)

/* y = (x rstd) w for the NR rows from r0 (rstds rs[]) */
#define RMS_FORWARD_ROWS(T, NR, r0, rs)                                                           \
  do {                                                                                            \
    const T *xr_[NR];                                                                             \
    T *yr_[NR];                                                                                   \
    for (int k_ = 0; k_ < NR; k_++) xr_[k_] = x + ((r0) + k_) * D, yr_[k_] = y + ((r0) + k_) * D; \
    int64_t i_ = 0;                                                                               \
    for (; i_ < D - D % 8; i_ += 8) {                                                             \
      nn_v8d wv_ = {1, 1, 1, 1, 1, 1, 1, 1}, v_;                                                  \
      if (w) NN_LD8(wv_, w + i_);                                                                 \
      for (int k_ = 0; k_ < NR; k_++) {                                                           \
        NN_LD8(v_, xr_[k_] + i_);                                                                 \
        v_ = (v_ * (rs)[k_]) * wv_;                                                               \
        NN_ST8(yr_[k_] + i_, v_);                                                                 \
      }                                                                                           \
    }                                                                                             \
    for (; i_ < D; i_++) {                                                                        \
      double wi_ = w ? (double)w[i_] : 1.0;                                                       \
      for (int k_ = 0; k_ < NR; k_++) yr_[k_][i_] = (T)((xr_[k_][i_] * (rs)[k_]) * wi_);           \
    }                                                                                             \
  } while (0)

static void rms_forward_chunk(void *arg, int64_t g0, int64_t g1, int tid) {
  (void)tid;
  const rms_job *j = arg;
  int64_t M = j->M, D = j->D;
  PT_DISPATCH_FLOAT(j->dt, {
    const T *x = j->x, *w = j->w;
    T *y = j->out;
    for (int64_t gi = g0; gi < g1; gi++) {
      int64_t r0 = gi * RMS_GROUP, nr = M - r0 < RMS_GROUP ? M - r0 : RMS_GROUP;
      double rs[RMS_GROUP];
      for (int64_t k = 0; k < nr; k++) {
        const T *xr = x + (r0 + k) * D;
        double ss;
        RMS_SUMSQ(xr, D, ss);
        rs[k] = 1.0 / sqrt(ss / (double)D + j->eps);
        j->rstd[r0 + k] = rs[k];
      }
      if (nr == RMS_GROUP)
        RMS_FORWARD_ROWS(T, RMS_GROUP, r0, rs);
      else
        for (int64_t k = 0; k < nr; k++) RMS_FORWARD_ROWS(T, 1, r0 + k, rs + k);
    }
  });
}

/* the 8 lanes of a, added in a fixed order */
static inline double rms_hsum(const nn_v8d *a) {
  return (((*a)[0] + (*a)[4]) + ((*a)[2] + (*a)[6])) + (((*a)[1] + (*a)[5]) + ((*a)[3] + (*a)[7]));
}

/* The backward of the NR rows from r0: with gh = g w, one pass for s = sum gh x per row (and the
 * block's weight gradient sums pw += g x rstd when wanted), then
 * gx = rstd (gh - x rstd^2 s / D), the derivative of x rstd through rstd's dependence on x. */
#define RMS_BACKWARD_ROWS(T, NR, r0)                                                           \
  do {                                                                                         \
    const T *xr[NR], *gr[NR];                                                                  \
    double rs[NR], c[NR];                                                                      \
    nn_v8d s[NR];                                                                              \
    for (int k_ = 0; k_ < NR; k_++) {                                                          \
      xr[k_] = x + ((r0) + k_) * D, gr[k_] = g + ((r0) + k_) * D;                              \
      rs[k_] = j->rstd[(r0) + k_];                                                             \
      s[k_] = (nn_v8d){0};                                                                     \
    }                                                                                          \
    int64_t i_ = 0, nv = D - D % 8;                                                            \
    for (; i_ < nv; i_ += 8) {                                                                 \
      nn_v8d wv = {1, 1, 1, 1, 1, 1, 1, 1}, sw = {0}, xv, gv;                                  \
      if (w) NN_LD8(wv, w + i_);                                                               \
      for (int k_ = 0; k_ < NR; k_++) {                                                        \
        NN_LD8(xv, xr[k_] + i_);                                                               \
        NN_LD8(gv, gr[k_] + i_);                                                               \
        s[k_] += gv * wv * xv;                                                                 \
        sw += gv * (xv * rs[k_]);                                                              \
      }                                                                                        \
      if (pw) {                                                                                \
        nn_v8d t;                                                                              \
        memcpy(&t, pw + i_, sizeof t);                                                         \
        t += sw;                                                                               \
        memcpy(pw + i_, &t, sizeof t);                                                         \
      }                                                                                        \
    }                                                                                          \
    for (int k_ = 0; k_ < NR; k_++) c[k_] = rms_hsum(&s[k_]);                                  \
    for (; i_ < D; i_++) {                                                                     \
      double wi = w ? (double)w[i_] : 1.0, sw = 0;                                             \
      for (int k_ = 0; k_ < NR; k_++) {                                                        \
        c[k_] += gr[k_][i_] * wi * xr[k_][i_];                                                 \
        sw += gr[k_][i_] * (xr[k_][i_] * rs[k_]);                                              \
      }                                                                                        \
      if (pw) pw[i_] += sw;                                                                    \
    }                                                                                          \
    if (gx) {                                                                                  \
      T *or_[NR];                                                                              \
      for (int k_ = 0; k_ < NR; k_++) {                                                        \
        or_[k_] = gx + ((r0) + k_) * D;                                                        \
        c[k_] *= rs[k_] * rs[k_] / (double)D;                                                  \
      }                                                                                        \
      for (i_ = 0; i_ < nv; i_ += 8) {                                                         \
        nn_v8d wv = {1, 1, 1, 1, 1, 1, 1, 1}, xv, gv;                                          \
        if (w) NN_LD8(wv, w + i_);                                                             \
        for (int k_ = 0; k_ < NR; k_++) {                                                      \
          NN_LD8(xv, xr[k_] + i_);                                                             \
          NN_LD8(gv, gr[k_] + i_);                                                             \
          xv = rs[k_] * (gv * wv - xv * c[k_]);                                                \
          if (j->add)                                                                          \
            NN_ADD8(or_[k_] + i_, xv);                                                         \
          else                                                                                 \
            NN_ST8(or_[k_] + i_, xv);                                                          \
        }                                                                                      \
      }                                                                                        \
      for (; i_ < D; i_++) {                                                                   \
        double wi = w ? (double)w[i_] : 1.0;                                                   \
        for (int k_ = 0; k_ < NR; k_++) {                                                      \
          T v_ = (T)(rs[k_] * (gr[k_][i_] * wi - xr[k_][i_] * c[k_]));                         \
          or_[k_][i_] = j->add ? or_[k_][i_] + v_ : v_;                                        \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  } while (0)

static void rms_backward_chunk(void *arg, int64_t b0, int64_t b1, int tid) {
  (void)tid;
  const rms_job *j = arg;
  int64_t M = j->M, D = j->D;
  PT_DISPATCH_FLOAT(j->dt, {
    const T *x = j->x, *g = j->g, *w = j->w;
    T *gx = j->out;
    for (int64_t blk = b0; blk < b1; blk++) {
      int64_t r = blk * j->rb, r1 = r + j->rb < M ? r + j->rb : M;
      double *pw = j->part ? j->part + blk * D : NULL;
      if (pw) memset(pw, 0, (size_t)D * sizeof(double));
      for (; r + RMS_GROUP <= r1; r += RMS_GROUP) RMS_BACKWARD_ROWS(T, RMS_GROUP, r);
      for (; r < r1; r++) RMS_BACKWARD_ROWS(T, 1, r);
    }
  });
}

/* saved: 0 x, 1 rstd {M} float64, 2 w; ints: M, D */
static pt_status rms_norm_backward(pt_ctx *ctx, pt_node *node, pt_tensor *grad_out, pt_tensor **grad_in) {
  pt_tensor *x = node->saved[0], *rstd = node->saved[1], *w = node->saved[2];
  int64_t M = node->ints[0], D = node->ints[1];
  pt_dtype dt = x->dtype;
  pt_tensor *g, *gx = NULL, *gw = NULL;
  double *part = NULL;
  pt_status st = grad_prep(ctx, grad_out, dt, &g);
  if (st) return st;
  pt_tensor *win = node->inputs[1], *gxt = NULL;
  bool fresh = false;
  /* a leaf input's gradient buffer, written when fresh, else added to in place (as layer norm) */
  if (node->needs_grad[0]) gxt = direct_grad(ctx, node->inputs[0], &fresh);
  if (node->needs_grad[0] && !gxt && (st = pt_tensor_empty(ctx, dt, x->ndim, x->shape, &gx))) goto fail;
  if (node->needs_grad[1] && (st = pt_tensor_empty(ctx, dt, win->ndim, win->shape, &gw))) goto fail;
  /* blocks of rb rows (a multiple of RMS_GROUP), at most RMS_BLOCKS of them */
  int64_t rb = (M + RMS_BLOCKS - 1) / RMS_BLOCKS;
  rb = rb < RMS_BLOCK_MIN ? RMS_BLOCK_MIN : (rb + RMS_GROUP - 1) / RMS_GROUP * RMS_GROUP;
  int64_t nblk = (M + rb - 1) / rb;
  if (gw && nblk > 0 && D > 0 && !(part = pt_alloc(ctx, (size_t)(nblk * D) * sizeof(double)))) {
    st = PT_ENOMEM;
    goto fail;
  }
  rms_job job = {.dt = dt, .M = M, .D = D, .rb = rb, .x = pt_tensor_data(x), .g = pt_tensor_data(g),
                 .w = w ? pt_tensor_data(w) : NULL, .rstd = pt_tensor_data(rstd), .part = part,
                 .add = gxt && !fresh};
  pt_tensor *gxo = gxt ? gxt : gx;
  job.out = gxo ? pt_tensor_data(gxo) : NULL;
  if ((gxo || part) && M > 0 && D > 0) {
    int64_t per = rb * D;
    pt_parallel_for(ctx, nblk, per >= RMS_GRAIN ? 1 : RMS_GRAIN / per, rms_backward_chunk, &job);
  }
  if (gw) { /* the blocks' sums, in block order */
    PT_DISPATCH_FLOAT(dt, {
      T *o = pt_tensor_data(gw);
      if (!part) {
        for (int64_t i = 0; i < D; i++) o[i] = 0;
      } else {
        for (int64_t blk = 1; blk < nblk; blk++) {
          const double *p = part + blk * D;
          for (int64_t i = 0; i < D; i++) part[i] += p[i];
        }
        for (int64_t i = 0; i < D; i++) o[i] = (T)part[i];
      }
    });
  }
  if (gxt) atomic_fetch_add(&gxt->storage->version, 1);
  pt_free(part);
  pt_tensor_release(g);
  grad_in[0] = gx;
  grad_in[1] = gw;
  return PT_OK;
fail:
  /* a fresh target handed out but not written must still hold a valid gradient */
  if (gxt && fresh) memset(pt_tensor_data(gxt), 0, (size_t)pt_tensor_numel(gxt) * pt_dtype_size(dt));
  pt_free(part);
  pt_tensor_release(g);
  pt_tensor_release(gx);
  pt_tensor_release(gw);
  return st;
}

pt_status pt_nn_rms_norm(pt_ctx *ctx, const char *fname, pt_tensor *x, int nnorm, const int64_t *norm_shape,
                         pt_tensor *w, double eps, pt_tensor **out) {
  char s1[PT_SHAPE_STR_MAX], s2[PT_SHAPE_STR_MAX];
  pt_status st;
  if ((st = check_float(ctx, fname, "input", x))) return st;
  if (nnorm < 1)
    return pt_fail(ctx, PT_ESHAPE, "%s: normalized_shape must have at least one dimension", fname);
  if (nnorm > x->ndim || memcmp(x->shape + x->ndim - nnorm, norm_shape, (size_t)nnorm * sizeof(int64_t)) != 0)
    return pt_fail(ctx, PT_ESHAPE, "%s: input shape %s does not end with normalized shape %s", fname,
                   shape_str(x, s1), pt_shape_format(nnorm, norm_shape, s2, sizeof s2));
  if (w) {
    if ((st = check_same_dtype(ctx, fname, "weight", w, x))) return st;
    if (w->ndim != nnorm || memcmp(w->shape, norm_shape, (size_t)nnorm * sizeof(int64_t)) != 0)
      return pt_fail(ctx, PT_ESHAPE, "%s: weight shape %s, expected %s", fname, shape_str(w, s1),
                     pt_shape_format(nnorm, norm_shape, s2, sizeof s2));
  }
  int64_t D = pt_shape_numel(nnorm, norm_shape);
  int64_t M = D ? pt_tensor_numel(x) / D : 0;
  pt_tensor *xc = NULL, *wc = NULL, *rstd = NULL, *y = NULL;
  if ((st = pt_tensor_contiguous_raw(ctx, x, &xc))) goto fail;
  if (w && (st = pt_tensor_contiguous_raw(ctx, w, &wc))) goto fail;
  if ((st = pt_tensor_empty(ctx, PT_FLOAT64, 1, &M, &rstd))) goto fail;
  if ((st = pt_tensor_empty(ctx, x->dtype, x->ndim, x->shape, &y))) goto fail;
  if (M > 0 && D > 0) {
    rms_job job = {.dt = x->dtype, .M = M, .D = D, .eps = eps, .x = pt_tensor_data(xc),
                   .w = wc ? pt_tensor_data(wc) : NULL, .out = pt_tensor_data(y), .rstd = pt_tensor_data(rstd)};
    int64_t per = RMS_GROUP * D;
    pt_parallel_for(ctx, (M + RMS_GROUP - 1) / RMS_GROUP, per >= RMS_GRAIN ? 1 : RMS_GRAIN / per,
                    rms_forward_chunk, &job);
  }
  pt_node *node;
  pt_tensor *inputs[2] = {x, w};
  if ((st = pt_autograd_record(ctx, y, "RMSNormBackward", rms_norm_backward, 2, inputs, &node))) goto fail;
  if (node) {
    pt_node_save(node, 0, xc);
    pt_node_save(node, 1, rstd);
    pt_node_save(node, 2, wc);
    xc = rstd = wc = NULL;
    node->ints[0] = M;
    node->ints[1] = D;
    node->n_ints = 2;
    node->scalars[0] = eps; /* for the create_graph formula (autograd.c) */
  }
  pt_tensor_release(xc);
  pt_tensor_release(wc);
  pt_tensor_release(rstd);
  *out = y;
  return PT_OK;
fail:
  pt_tensor_release(xc);
  pt_tensor_release(wc);
  pt_tensor_release(rstd);
  pt_tensor_release(y);
  return st;
}
