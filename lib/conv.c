/* Convolution, pooling, batch norm, channel dropout and upsampling (see conv.h). */
#include "conv.h"

#include "blas.h"
#include "conv_winograd.h"
#include "dispatch.h"
#include "norm_stats.h"
#include "ops_elementwise.h"
#include "ops_index.h"
#include "ops_shape.h"
#include "parallel.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)
/* The second pass of 2x2 max pooling (conv_impl.h's max_pool_rows2) for float32 with AVX-512:
 * the CNN's rows are 14 and 7 outputs long, shorter than a vector, so the compiler's
 * vectorised loop never ran and its scalar remainder (a mispredicted branch per output) was
 * most of the pooling time. Masked loads and stores do a row in one step. */
#define MAX_POOL_ROWS2_F32_AVX512
static void max_pool_rows2_f32(const float *restrict h0, const float *restrict h1, const int32_t *restrict c0,
                               const int32_t *restrict c1, float *restrict yo, int32_t *restrict io, int Wo,
                               int32_t i0, int32_t W) {
  const __m512i lane = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  for (int ox = 0; ox < Wo; ox += 16) {
    __mmask16 m = Wo - ox >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (Wo - ox)) - 1);
    __m512 a = _mm512_maskz_loadu_ps(m, h0 + ox), b = _mm512_maskz_loadu_ps(m, h1 + ox);
    /* b wins when b > a or b is NaN (the general path's order: the first maximum, the last NaN) */
    __mmask16 t = _mm512_cmp_ps_mask(b, a, _CMP_GT_OQ) | _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q);
    __m512i ca = _mm512_maskz_loadu_epi32(m, c0 + ox), cb = _mm512_maskz_loadu_epi32(m, c1 + ox);
    __m512i base = _mm512_add_epi32(_mm512_set1_epi32(i0 + 2 * ox), lane);
    __m512i ia = _mm512_add_epi32(base, ca), ib = _mm512_add_epi32(_mm512_add_epi32(base, cb), _mm512_set1_epi32(W));
    _mm512_mask_storeu_ps(yo + ox, m, _mm512_mask_blend_ps(t, a, b));
    _mm512_mask_storeu_epi32(io + ox, m, _mm512_mask_blend_epi32(t, ia, ib));
  }
}
#endif

/* cblas_sgemm's arguments, run by pt_sgemm_serial (oneDNN where installed, blas.c) */
static inline void conv_sgemm(CBLAS_ORDER order, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m,
                              int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                              const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  (void)order; /* always CblasRowMajor */
  pt_sgemm_serial(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

#define real float
#define REAL_IS_F32 1
#define SUFFIX(name) name##_f32
#define GEMM conv_sgemm
#include "conv_impl.h"
#undef real
#undef REAL_IS_F32
#undef SUFFIX
#undef GEMM
#define real double
#define REAL_IS_F32 0
#define SUFFIX(name) name##_f64
#define GEMM cblas_dgemm
#include "conv_impl.h"
#undef real
#undef REAL_IS_F32
#undef SUFFIX
#undef GEMM

static pt_status check_floating(pt_ctx *ctx, const char *fname, const char *what, const pt_tensor *t) {
  if (!pt_dtype_is_floating(t->dtype))
    return pt_fail(ctx, PT_EARG, "%s: %s must be float32 or float64, got %s", fname, what,
                   pt_dtype_name(t->dtype));
  return PT_OK;
}

static pt_status check_same_dtype(pt_ctx *ctx, const char *fname, const char *what, const pt_tensor *a,
                                  const pt_tensor *b) {
  if (a->dtype != b->dtype)
    return pt_fail(ctx, PT_EARG, "%s: %s has dtype %s, input has %s", fname, what,
                   pt_dtype_name(b->dtype), pt_dtype_name(a->dtype));
  return PT_OK;
}

/* A 4-D view {N,C,H,W} of x ({C,H,W} gets N = 1). */
static pt_status as_nchw(pt_ctx *ctx, const char *fname, pt_tensor *x, int64_t *dims) {
  char b[PT_SHAPE_STR_MAX];
  if (x->ndim == 4) {
    memcpy(dims, x->shape, 4 * sizeof(int64_t));
  } else if (x->ndim == 3) {
    dims[0] = 1;
    memcpy(dims + 1, x->shape, 3 * sizeof(int64_t));
  } else {
    return pt_fail(ctx, PT_ESHAPE, "%s: expected a 3-D {C,H,W} or 4-D {N,C,H,W} input, got shape %s",
                   fname, pt_shape_format(x->ndim, x->shape, b, sizeof b));
  }
  return PT_OK;
}

/* output shape with x's batch layout: {N,C,Ho,Wo} or {C,Ho,Wo} */
static int out_shape(const pt_tensor *x, int64_t N, int64_t C, int64_t Ho, int64_t Wo, int64_t *s) {
  if (x->ndim == 4) {
    s[0] = N, s[1] = C, s[2] = Ho, s[3] = Wo;
    return 4;
  }
  s[0] = C, s[1] = Ho, s[2] = Wo;
  return 3;
}

/* ---------------------------------------------------------------- conv2d */

/* One conv call split over samples: each thread has its own im2col buffer and, in backward,
 * its own weight/bias gradient partials, summed afterwards in thread order (deterministic). */
typedef struct conv_job {
  const void *x, *w, *b, *gy;
  void *y, *dx, *dw, *db;
  pt_dtype dtype;
  int C, H, W, O, kh, kw, Ho, Wo;
  const pt_conv2d_opts *o;
  char *cols;
  size_t cols_bytes;
  char *partials; /* per thread (tid >= 1): dw then db */
  size_t partial_bytes, dw_bytes;
} conv_job;

static void conv_forward_chunk(void *arg, int64_t b, int64_t e, int tid) {
  conv_job *j = arg;
  void *cols = j->cols + (size_t)tid * j->cols_bytes;
  if (j->dtype == PT_FLOAT32)
    conv_forward_f32(j->x, j->w, j->b, j->y, (int)b, (int)e, j->C, j->H, j->W, j->O, j->kh, j->kw, j->Ho, j->Wo,
                     j->o, cols);
  else
    conv_forward_f64(j->x, j->w, j->b, j->y, (int)b, (int)e, j->C, j->H, j->W, j->O, j->kh, j->kw, j->Ho, j->Wo,
                     j->o, cols);
}

static void conv_backward_chunk(void *arg, int64_t b, int64_t e, int tid) {
  conv_job *j = arg;
  void *cols = j->cols + (size_t)tid * j->cols_bytes;
  void *dw = j->dw, *db = j->db;
  if (tid > 0) {
    char *p = j->partials + (size_t)(tid - 1) * j->partial_bytes;
    memset(p, 0, j->partial_bytes);
    if (dw) dw = p;
    if (db) db = p + j->dw_bytes;
  }
  if (j->dtype == PT_FLOAT32)
    conv_backward_f32(j->x, j->w, j->gy, j->dx, dw, db, (int)b, (int)e, j->C, j->H, j->W, j->O, j->kh, j->kw,
                      j->Ho, j->Wo, j->o, cols);
  else
    conv_backward_f64(j->x, j->w, j->gy, j->dx, dw, db, (int)b, (int)e, j->C, j->H, j->W, j->O, j->kh, j->kw,
                      j->Ho, j->Wo, j->o, cols);
}

static void add_partials(pt_dtype dt, void *dst, const char *src, int64_t n) {
  if (dt == PT_FLOAT32)
    for (int64_t i = 0; i < n; i++) ((float *)dst)[i] += ((const float *)src)[i];
  else
    for (int64_t i = 0; i < n; i++) ((double *)dst)[i] += ((const double *)src)[i];
}

static void *data_or_null(const pt_tensor *t) { return t ? pt_tensor_data(t) : NULL; }

/* The sizes of one convolution in conv2d's terms, kept in its node's ints after the options
 * (conv_opts_of): N images of C channels of H x W in, O channels of Ho x Wo out, a kh x kw
 * kernel. conv_transpose2d runs conv2d's kernels with the roles swapped: its output is the
 * conv's input (C, H, W) and its input the conv's output (O, Ho, Wo). */
typedef struct conv_geom {
  int N, C, H, W, O, kh, kw, Ho, Wo;
} conv_geom;

/* A job over conv2d's kernels for geometry g and options o, with the bytes of one im2col buffer
 * ({C/groups*kh*kw, Ho*Wo}); the tensors' data are the caller's to set. */
static conv_job conv_job_for(pt_dtype dtype, const conv_geom *g, const pt_conv2d_opts *o) {
  int64_t K = (int64_t)(g->C / o->groups) * g->kh * g->kw, P = (int64_t)g->Ho * g->Wo;
  return (conv_job){.dtype = dtype, .C = g->C, .H = g->H, .W = g->W, .O = g->O, .kh = g->kh, .kw = g->kw,
                    .Ho = g->Ho, .Wo = g->Wo, .o = o, .cols_bytes = (size_t)(K * P) * pt_dtype_size(dtype)};
}

/* The im2col path of conv2d's forward over N images: job has the tensors and sizes; its
 * per-thread cols buffers are made and freed here. */
static pt_status conv_forward_im2col(pt_ctx *ctx, conv_job *job, int N) {
  int nthreads = pt_parallel_threads(ctx);
  job->cols = pt_alloc(ctx, job->cols_bytes * (size_t)nthreads);
  if (!job->cols) return PT_ENOMEM;
  pt_parallel_for(ctx, N, 1, conv_forward_chunk, job);
  pt_free(job->cols);
  job->cols = NULL;
  return PT_OK;
}

/* The im2col path of conv2d's backward over N images: job has the tensors and sizes; its
 * buffers (per-thread cols and weight/bias partials) are made and freed here. */
static pt_status conv_backward_im2col(pt_ctx *ctx, conv_job *job, int N) {
  size_t es = pt_dtype_size(job->dtype);
  int nthreads = pt_parallel_threads(ctx);
  if (nthreads > N) nthreads = N;
  job->partial_bytes = job->dw_bytes + (size_t)job->O * es;
  job->cols = pt_alloc(ctx, job->cols_bytes * (size_t)nthreads);
  job->partials = nthreads > 1 ? pt_alloc(ctx, job->partial_bytes * (size_t)(nthreads - 1)) : NULL;
  if (!job->cols || (nthreads > 1 && !job->partials)) {
    pt_free(job->cols);
    pt_free(job->partials);
    return PT_ENOMEM;
  }
  int used = pt_parallel_for(ctx, N, 1, conv_backward_chunk, job);
  for (int t = 1; t < used; t++) {
    const char *p = job->partials + (size_t)(t - 1) * job->partial_bytes;
    if (job->dw) add_partials(job->dtype, job->dw, p, (int64_t)(job->dw_bytes / es));
    if (job->db) add_partials(job->dtype, job->db, p + job->dw_bytes, job->O);
  }
  pt_free(job->cols);
  pt_free(job->partials);
  return PT_OK;
}

/* The start of conv2d's and conv_transpose2d's backwards: the options and sizes their nodes keep
 * in their ints (stride, padding, dilation (two each), groups, then the conv_geom), the output
 * gradient made contiguous, and zeroed gradients (g: input, weight, bias) for the inputs that
 * need one. On failure nothing is left to release. */
static pt_status conv_backward_begin(pt_ctx *ctx, const pt_node *node, pt_tensor *gout, pt_conv2d_opts *o,
                                     conv_geom *g, pt_tensor **gy, pt_tensor **grads) {
  const int64_t *iv = node->ints;
  for (int i = 0; i < 2; i++) {
    o->stride[i] = (int)iv[i];
    o->padding[i] = (int)iv[2 + i];
    o->dilation[i] = (int)iv[4 + i];
  }
  o->groups = (int)iv[6];
  *g = (conv_geom){(int)iv[7], (int)iv[8], (int)iv[9], (int)iv[10], (int)iv[11], (int)iv[12], (int)iv[13],
                   (int)iv[14], (int)iv[15]};
  grads[0] = grads[1] = grads[2] = NULL;
  pt_status st = pt_tensor_contiguous_raw(ctx, gout, gy);
  if (st) return st;
  if ((node->needs_grad[0] && (st = pt_tensor_zeros_like(ctx, node->inputs[0], &grads[0]))) ||
      (node->needs_grad[1] && (st = pt_tensor_zeros_like(ctx, node->saved[1], &grads[1]))) ||
      (node->n_inputs > 2 && node->needs_grad[2] && (st = pt_tensor_zeros_like(ctx, node->inputs[2], &grads[2])))) {
    pt_tensor_release(*gy);
    for (int k = 0; k < 3; k++) pt_tensor_release(grads[k]);
  }
  return st;
}

/* The end of those backwards: the gradients handed over (st == PT_OK) or released. */
static pt_status conv_backward_end(pt_status st, pt_tensor *gy, pt_tensor **grads, pt_tensor **gin) {
  pt_tensor_release(gy);
  for (int k = 0; k < 3; k++) {
    if (st) pt_tensor_release(grads[k]);
    else gin[k] = grads[k];
  }
  return st;
}

/* The checks conv2d and conv_transpose2d share: a float input {C,H,W} or {N,C,H,W} (d gets its
 * NCHW sizes) with non-empty H and W, a weight and bias of its dtype, a 4-D weight (layout names
 * its dims in the message). */
static pt_status conv_check_args(pt_ctx *ctx, const char *fn, pt_tensor *x, const pt_tensor *w,
                                 const pt_tensor *bias, const char *layout, int64_t *d) {
  char b[PT_SHAPE_STR_MAX];
  pt_status st;
  if ((st = check_floating(ctx, fn, "input", x)) || (st = check_same_dtype(ctx, fn, "weight", x, w)) ||
      (bias && (st = check_same_dtype(ctx, fn, "bias", x, bias))) || (st = as_nchw(ctx, fn, x, d)))
    return st;
  if (w->ndim != 4)
    return pt_fail(ctx, PT_ESHAPE, "%s: weight must be 4-D %s, got shape %s", fn, layout,
                   pt_shape_format(w->ndim, w->shape, b, sizeof b));
  if (d[2] == 0 || d[3] == 0) /* as PyTorch */
    return pt_fail(ctx, PT_ESHAPE, "%s: only the batch or the channels may be empty, got input shape %s", fn,
                   pt_shape_format(x->ndim, x->shape, b, sizeof b));
  return PT_OK;
}

/* Contiguous copies (or references) of x, w and bias (may be NULL); on failure none are left. */
static pt_status conv_operands(pt_ctx *ctx, pt_tensor *x, pt_tensor *w, pt_tensor *bias, pt_tensor **xc,
                               pt_tensor **wc, pt_tensor **bc) {
  pt_status st;
  *xc = *wc = *bc = NULL;
  if ((st = pt_tensor_contiguous_raw(ctx, x, xc)) || (st = pt_tensor_contiguous_raw(ctx, w, wc)) ||
      (bias && (st = pt_tensor_contiguous_raw(ctx, bias, bc)))) {
    pt_tensor_release(*xc);
    pt_tensor_release(*wc);
    *xc = *wc = NULL;
  }
  return st;
}

/* Records conv2d's or conv_transpose2d's node on y (inputs x, w and bias when given; saved: the
 * contiguous xc and wc; ints: o and g as conv_backward_begin reads them), then releases the
 * operands, and hands y over (st == PT_OK) or releases it. */
static pt_status conv_forward_end(pt_ctx *ctx, pt_status st, const char *name, pt_backward_fn backward,
                                  pt_tensor *x, pt_tensor *w, pt_tensor *bias, pt_tensor *xc, pt_tensor *wc,
                                  pt_tensor *bc, const pt_conv2d_opts *o, const conv_geom *g, pt_tensor *y,
                                  pt_tensor **out) {
  pt_tensor *inputs[3] = {x, w, bias};
  pt_node *node = NULL;
  if (!st && !(st = pt_autograd_record(ctx, y, name, backward, bias ? 3 : 2, inputs, &node)) && node) {
    pt_node_save(node, 0, pt_tensor_retain(xc));
    pt_node_save(node, 1, pt_tensor_retain(wc));
    int64_t ints[16] = {o->stride[0], o->stride[1], o->padding[0], o->padding[1], o->dilation[0], o->dilation[1],
                        o->groups, g->N, g->C, g->H, g->W, g->O, g->kh, g->kw, g->Ho, g->Wo};
    memcpy(node->ints, ints, sizeof ints);
    node->n_ints = 16;
  }
  pt_tensor_release(xc);
  pt_tensor_release(wc);
  pt_tensor_release(bc);
  if (st) {
    pt_tensor_release(y);
    return st;
  }
  *out = y;
  return PT_OK;
}

static pt_status conv2d_backward(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gin) {
  pt_tensor *x = node->saved[0], *w = node->saved[1], *gy, *g[3];
  pt_conv2d_opts o;
  conv_geom s;
  pt_status st = conv_backward_begin(ctx, node, gout, &o, &s, &gy, g);
  if (st) return st;
  if (pt_conv_winograd_applies(x->dtype, s.N, s.C, s.O, s.kh, s.kw, s.Ho, s.Wo, &o)) {
    st = pt_conv_winograd_backward(ctx, pt_tensor_data(x), pt_tensor_data(w), pt_tensor_data(gy), data_or_null(g[0]),
                                   data_or_null(g[1]), data_or_null(g[2]), s.N, s.C, s.H, s.W, s.O, o.padding[0],
                                   o.padding[1], s.Ho, s.Wo);
  } else {
    conv_job job = conv_job_for(x->dtype, &s, &o);
    job.x = pt_tensor_data(x), job.w = pt_tensor_data(w), job.gy = pt_tensor_data(gy);
    job.dx = data_or_null(g[0]), job.dw = data_or_null(g[1]), job.db = data_or_null(g[2]);
    job.dw_bytes = (size_t)pt_tensor_numel(w) * pt_dtype_size(x->dtype);
    st = conv_backward_im2col(ctx, &job, s.N);
  }
  return conv_backward_end(st, gy, g, gin);
}

pt_status pt_conv2d(pt_ctx *ctx, pt_tensor *x, pt_tensor *w, pt_tensor *bias, const pt_conv2d_opts *o,
                    pt_tensor **out) {
  const char *fn = "conv2d";
  char bx[PT_SHAPE_STR_MAX], bw[PT_SHAPE_STR_MAX];
  int64_t d[4];
  pt_status st;
  if ((st = conv_check_args(ctx, fn, x, w, bias, "{out,in/groups,kh,kw}", d))) return st;
  int g = o->groups;
  for (int i = 0; i < 2; i++)
    if (o->stride[i] < 1 || o->dilation[i] < 1 || o->padding[i] < 0)
      return pt_fail(ctx, PT_EARG, "%s: stride and dilation must be >= 1 and padding >= 0", fn);
  if (g < 1 || d[1] % g || w->shape[0] % g)
    return pt_fail(ctx, PT_EARG, "%s: groups=%d must divide input channels %lld and output channels %lld",
                   fn, g, (long long)d[1], (long long)w->shape[0]);
  if (w->shape[1] * g != d[1])
    return pt_fail(ctx, PT_ESHAPE, "%s: input has %lld channels, expected %lld (input shape %s, weight shape %s)",
                   fn, (long long)d[1], (long long)(w->shape[1] * g),
                   pt_shape_format(x->ndim, x->shape, bx, sizeof bx),
                   pt_shape_format(w->ndim, w->shape, bw, sizeof bw));
  if (bias && (bias->ndim != 1 || bias->shape[0] != w->shape[0]))
    return pt_fail(ctx, PT_ESHAPE, "%s: bias must have shape {%lld}, got %s", fn, (long long)w->shape[0],
                   pt_shape_format(bias->ndim, bias->shape, bx, sizeof bx));
  int N = (int)d[0], C = (int)d[1], H = (int)d[2], W = (int)d[3], O = (int)w->shape[0];
  int kh = (int)w->shape[2], kw = (int)w->shape[3];
  int Ho = (H + 2 * o->padding[0] - o->dilation[0] * (kh - 1) - 1) / o->stride[0] + 1;
  int Wo = (W + 2 * o->padding[1] - o->dilation[1] * (kw - 1) - 1) / o->stride[1] + 1;
  if (H + 2 * o->padding[0] < o->dilation[0] * (kh - 1) + 1 || W + 2 * o->padding[1] < o->dilation[1] * (kw - 1) + 1 ||
      Ho < 1 || Wo < 1)
    return pt_fail(ctx, PT_ESHAPE, "%s: kernel %dx%d%s is larger than the padded input %dx%d (input shape %s)", fn,
                   o->dilation[0] * (kh - 1) + 1, o->dilation[1] * (kw - 1) + 1,
                   o->dilation[0] > 1 || o->dilation[1] > 1 ? " (dilated)" : "",
                   H + 2 * o->padding[0], W + 2 * o->padding[1],
                   pt_shape_format(x->ndim, x->shape, bx, sizeof bx));
  conv_geom s = {N, C, H, W, O, kh, kw, Ho, Wo};
  pt_tensor *xc, *wc, *bc, *y = NULL;
  int64_t ys[4];
  int yn = out_shape(x, N, O, Ho, Wo, ys);
  if ((st = conv_operands(ctx, x, w, bias, &xc, &wc, &bc))) return st;
  if ((st = pt_tensor_empty(ctx, x->dtype, yn, ys, &y))) goto done;
  if (pt_conv_winograd_applies(x->dtype, N, C, O, kh, kw, Ho, Wo, o)) {
    st = pt_conv_winograd_forward(ctx, pt_tensor_data(xc), pt_tensor_data(wc), data_or_null(bc), pt_tensor_data(y),
                                  N, C, H, W, O, o->padding[0], o->padding[1], Ho, Wo);
  } else {
    conv_job job = conv_job_for(x->dtype, &s, o);
    job.x = pt_tensor_data(xc), job.w = pt_tensor_data(wc), job.b = data_or_null(bc), job.y = pt_tensor_data(y);
    st = conv_forward_im2col(ctx, &job, N);
  }
done:
  return conv_forward_end(ctx, st, "Conv2dBackward", conv2d_backward, x, w, bias, xc, wc, bc, o, &s, y, out);
}

/* ---------------------------------------------------------------- conv_transpose2d */

/* In conv2d's terms a transposed convolution maps the conv's output space (x here, {N,Ci,Hi,Wi},
 * Ci the conv's output channels) to its input space (y, {N,Co,Ho,Wo}): conv2d's kernels run with
 * the conv_geom C = Co, H = Ho, W = Wo, O = Ci and the conv's output size Hi x Wi. */
static pt_status conv_transpose2d_backward(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gin) {
  pt_tensor *x = node->saved[0], *w = node->saved[1], *gy, *g[3];
  pt_conv2d_opts o;
  conv_geom s;
  pt_status st = conv_backward_begin(ctx, node, gout, &o, &s, &gy, g);
  if (st) return st;
  if (s.N > 0 && s.O > 0 && s.C > 0) {
    conv_job job = conv_job_for(x->dtype, &s, &o);
    job.x = pt_tensor_data(gy), job.w = pt_tensor_data(w);
    if (g[0]) { /* conv2d's forward of the output gradient */
      conv_job f = job;
      f.y = pt_tensor_data(g[0]);
      st = conv_forward_im2col(ctx, &f, s.N);
    }
    if (!st && g[1]) { /* conv2d's weight gradient with the output gradient as its input */
      conv_job b = job;
      b.gy = pt_tensor_data(x), b.dw = pt_tensor_data(g[1]);
      b.dw_bytes = (size_t)pt_tensor_numel(w) * pt_dtype_size(x->dtype);
      st = conv_backward_im2col(ctx, &b, s.N);
    }
  }
  if (!st && g[2]) {
    int64_t S = (int64_t)s.H * s.W;
    PT_DISPATCH_FLOAT(x->dtype, {
      const T *gp = pt_tensor_data(gy);
      T *b = pt_tensor_data(g[2]);
      for (int64_t n = 0; n < s.N; n++)
        for (int64_t c = 0; c < s.C; c++) {
          const T *row = gp + (n * s.C + c) * S;
          T sum = 0;
          for (int64_t i = 0; i < S; i++) sum += row[i];
          b[c] += sum;
        }
    });
  }
  return conv_backward_end(st, gy, g, gin);
}

pt_status pt_conv_transpose2d(pt_ctx *ctx, pt_tensor *x, pt_tensor *w, pt_tensor *bias,
                              const pt_conv_transpose2d_opts *ot, pt_tensor **out) {
  const char *fn = "conv_transpose2d";
  char bx[PT_SHAPE_STR_MAX], bw[PT_SHAPE_STR_MAX];
  int64_t d[4];
  pt_status st;
  if ((st = conv_check_args(ctx, fn, x, w, bias, "{in,out/groups,kh,kw}", d))) return st;
  for (int i = 0; i < 2; i++)
    if (ot->stride[i] < 1 || ot->dilation[i] < 1 || ot->padding[i] < 0 || ot->output_padding[i] < 0)
      return pt_fail(ctx, PT_EARG, "%s: stride and dilation must be >= 1, padding and output_padding >= 0", fn);
  for (int i = 0; i < 2; i++)
    if (ot->output_padding[i] >= ot->stride[i] && ot->output_padding[i] >= ot->dilation[i])
      return pt_fail(ctx, PT_EARG,
                     "%s: output_padding {%d,%d} must be smaller than either stride {%d,%d} or dilation {%d,%d}", fn,
                     ot->output_padding[0], ot->output_padding[1], ot->stride[0], ot->stride[1], ot->dilation[0],
                     ot->dilation[1]);
  int g = ot->groups;
  if (g < 1 || d[1] % g)
    return pt_fail(ctx, PT_EARG, "%s: groups=%d must divide input channels %lld", fn, g, (long long)d[1]);
  if (w->shape[0] != d[1])
    return pt_fail(ctx, PT_ESHAPE, "%s: input has %lld channels, expected %lld (input shape %s, weight shape %s)",
                   fn, (long long)d[1], (long long)w->shape[0], pt_shape_format(x->ndim, x->shape, bx, sizeof bx),
                   pt_shape_format(w->ndim, w->shape, bw, sizeof bw));
  int64_t Co64 = w->shape[1] * g;
  if (bias && (bias->ndim != 1 || bias->shape[0] != Co64))
    return pt_fail(ctx, PT_ESHAPE, "%s: bias must have shape {%lld}, got %s", fn, (long long)Co64,
                   pt_shape_format(bias->ndim, bias->shape, bx, sizeof bx));
  int kh = (int)w->shape[2], kw = (int)w->shape[3];
  int64_t ho = (d[2] - 1) * ot->stride[0] - 2 * (int64_t)ot->padding[0] + (int64_t)ot->dilation[0] * (kh - 1) +
               ot->output_padding[0] + 1;
  int64_t wo = (d[3] - 1) * ot->stride[1] - 2 * (int64_t)ot->padding[1] + (int64_t)ot->dilation[1] * (kw - 1) +
               ot->output_padding[1] + 1;
  if (ho < 1 || wo < 1 || kh < 1 || kw < 1)
    return pt_fail(ctx, PT_ESHAPE, "%s: output size %lldx%lld is too small (input shape %s, weight shape %s)", fn,
                   (long long)ho, (long long)wo, pt_shape_format(x->ndim, x->shape, bx, sizeof bx),
                   pt_shape_format(w->ndim, w->shape, bw, sizeof bw));
  if (ho > INT32_MAX || wo > INT32_MAX || Co64 > INT32_MAX)
    return pt_fail(ctx, PT_ESHAPE, "%s: output size %lldx%lld is too large", fn, (long long)ho, (long long)wo);
  int N = (int)d[0], Ci = (int)d[1], Hi = (int)d[2], Wi = (int)d[3], Co = (int)Co64, Ho = (int)ho, Wo = (int)wo;
  pt_conv2d_opts o = {.groups = g};
  for (int i = 0; i < 2; i++) {
    o.stride[i] = ot->stride[i];
    o.padding[i] = ot->padding[i];
    o.dilation[i] = ot->dilation[i];
  }
  conv_geom s = {N, Co, Ho, Wo, Ci, kh, kw, Hi, Wi}; /* the conv whose input gradient this is */
  pt_tensor *xc, *wc, *bc, *y = NULL;
  int64_t ys[4];
  int yn = out_shape(x, N, Co, Ho, Wo, ys);
  if ((st = conv_operands(ctx, x, w, bias, &xc, &wc, &bc))) return st;
  if ((st = pt_tensor_zeros(ctx, x->dtype, yn, ys, &y))) goto done;
  if (N > 0 && Ci > 0 && Co > 0) { /* conv2d's input gradient, with x as the output gradient */
    conv_job job = conv_job_for(x->dtype, &s, &o);
    job.x = pt_tensor_data(y); /* not read: no weight gradient */
    job.w = pt_tensor_data(wc), job.gy = pt_tensor_data(xc), job.dx = pt_tensor_data(y);
    if ((st = conv_backward_im2col(ctx, &job, N))) goto done;
  }
  if (bc) {
    int64_t S = (int64_t)Ho * Wo;
    PT_DISPATCH_FLOAT(x->dtype, {
      const T *b = pt_tensor_data(bc);
      T *q = pt_tensor_data(y);
      for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < Co; c++) {
          T *row = q + (n * Co + c) * S;
          for (int64_t i = 0; i < S; i++) row[i] += b[c];
        }
    });
  }
done:
  return conv_forward_end(ctx, st, "ConvTranspose2dBackward", conv_transpose2d_backward, x, w, bias, xc, wc, bc, &o,
                          &s, y, out);
}

/* For the backward of an op that scatters or sums its output gradient into its single input:
 * the output gradient made contiguous, and a zeroed input gradient to add into. */
static pt_status scatter_buffers(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gy,
                                 pt_tensor **gx) {
  pt_status st = pt_tensor_contiguous_raw(ctx, gout, gy);
  if (st) return st;
  if ((st = pt_tensor_zeros_like(ctx, node->inputs[0], gx))) {
    pt_tensor_release(*gy);
    return st;
  }
  return PT_OK;
}


/* ---------------------------------------------------------------- conv_transpose3d */

pt_status pt_conv_transpose3d(pt_ctx *ctx, pt_tensor *x, pt_tensor *w, pt_tensor *bias,
                              const pt_conv_transpose3d_opts *o, pt_tensor **out) {
  const char *fn = "conv_transpose3d";
  char bx[PT_SHAPE_STR_MAX], bw[PT_SHAPE_STR_MAX];
  pt_status st;
  if ((st = check_floating(ctx, fn, "input", x)) || (st = check_same_dtype(ctx, fn, "weight", x, w)) ||
      (bias && (st = check_same_dtype(ctx, fn, "bias", x, bias))))
    return st;
  if (x->ndim != 4 && x->ndim != 5)
    return pt_fail(ctx, PT_ESHAPE, "%s: expected a 4-D {C,D,H,W} or 5-D {N,C,D,H,W} input, got shape %s", fn,
                   pt_shape_format(x->ndim, x->shape, bx, sizeof bx));
  if (w->ndim != 5)
    return pt_fail(ctx, PT_ESHAPE, "%s: weight must be 5-D {in,out/groups,kd,kh,kw}, got shape %s", fn,
                   pt_shape_format(w->ndim, w->shape, bw, sizeof bw));
  for (int i = 0; i < 3; i++)
    if (o->stride[i] < 1 || o->dilation[i] < 1 || o->padding[i] < 0 || o->output_padding[i] < 0)
      return pt_fail(ctx, PT_EARG, "%s: stride and dilation must be >= 1, padding and output_padding >= 0", fn);
  for (int i = 0; i < 3; i++)
    if (o->output_padding[i] >= o->stride[i] && o->output_padding[i] >= o->dilation[i])
      return pt_fail(ctx, PT_EARG,
                     "%s: output_padding {%d,%d,%d} must be smaller than either stride {%d,%d,%d} or dilation "
                     "{%d,%d,%d}", fn, o->output_padding[0], o->output_padding[1], o->output_padding[2],
                     o->stride[0], o->stride[1], o->stride[2], o->dilation[0], o->dilation[1], o->dilation[2]);
  bool batched = x->ndim == 5;
  int64_t N = batched ? x->shape[0] : 1, C = x->shape[batched], D = x->shape[batched + 1];
  int64_t H = x->shape[batched + 2], W = x->shape[batched + 3];
  int g = o->groups;
  if (g < 1 || C % g)
    return pt_fail(ctx, PT_EARG, "%s: groups=%d must divide input channels %lld", fn, g, (long long)C);
  if (w->shape[0] != C)
    return pt_fail(ctx, PT_ESHAPE, "%s: input has %lld channels, expected %lld (input shape %s, weight shape %s)", fn,
                   (long long)C, (long long)w->shape[0], pt_shape_format(x->ndim, x->shape, bx, sizeof bx),
                   pt_shape_format(w->ndim, w->shape, bw, sizeof bw));
  int64_t Cog = w->shape[1], Co = Cog * g, kd = w->shape[2], kh = w->shape[3], kw = w->shape[4];
  if (bias && (bias->ndim != 1 || bias->shape[0] != Co))
    return pt_fail(ctx, PT_ESHAPE, "%s: bias must have shape {%lld}, got %s", fn, (long long)Co,
                   pt_shape_format(bias->ndim, bias->shape, bx, sizeof bx));
  if (D == 0 || H == 0 || W == 0) /* as PyTorch */
    return pt_fail(ctx, PT_ESHAPE, "%s: only the batch or the channels may be empty, got input shape %s", fn,
                   pt_shape_format(x->ndim, x->shape, bx, sizeof bx));
  int64_t in[3] = {D, H, W}, k[3] = {kd, kh, kw}, os[3];
  for (int i = 0; i < 3; i++)
    os[i] = (in[i] - 1) * o->stride[i] - 2 * (int64_t)o->padding[i] + (int64_t)o->dilation[i] * (k[i] - 1) +
            o->output_padding[i] + 1;
  if (os[0] < 1 || os[1] < 1 || os[2] < 1 || kd < 1 || kh < 1 || kw < 1)
    return pt_fail(ctx, PT_ESHAPE, "%s: output size %lldx%lldx%lld is too small (input shape %s, weight shape %s)", fn,
                   (long long)os[0], (long long)os[1], (long long)os[2],
                   pt_shape_format(x->ndim, x->shape, bx, sizeof bx), pt_shape_format(w->ndim, w->shape, bw, sizeof bw));
  int64_t Do = os[0];
  pt_tensor *x5 = NULL, *xp = NULL, *zero = NULL, *xz = NULL, *idx = NULL, *gath = NULL, *g7 = NULL, *gp = NULL,
            *g4 = NULL, *w6 = NULL, *wp = NULL, *w4 = NULL, *y4 = NULL, *y5 = NULL, *yp = NULL, *yc = NULL,
            *b5 = NULL, *yb = NULL, *y = NULL;
  int64_t s5[5] = {N, C, D, H, W};
  if ((st = pt_reshape(ctx, x, 5, s5, &x5))) goto done;
  static const int to_ndchw[5] = {0, 2, 1, 3, 4};
  if ((st = pt_permute(ctx, x5, to_ndchw, &xp))) goto done;
  /* the input depths with a zero slice at index D, read where no input depth reaches */
  int64_t zs[5] = {N, 1, C, H, W};
  if ((st = pt_tensor_zeros(ctx, x->dtype, 5, zs, &zero))) goto done;
  pt_tensor *parts[2] = {xp, zero};
  if ((st = pt_cat(ctx, 2, parts, 1, &xz))) goto done;
  int64_t ni = Do * kd;
  if ((st = pt_tensor_empty(ctx, PT_INT64, 1, &ni, &idx))) goto done;
  {
    int64_t *ip = pt_tensor_data(idx);
    for (int64_t od = 0; od < Do; od++)
      for (int64_t t = 0; t < kd; t++) {
        int64_t num = od + o->padding[0] - t * o->dilation[0], id = D;
        if (num >= 0 && num % o->stride[0] == 0 && num / o->stride[0] < D) id = num / o->stride[0];
        ip[od * kd + t] = id + 1; /* pt_index_select's indices are 1-based */
      }
  }
  if ((st = pt_index_select(ctx, xz, 1, idx, &gath))) goto done; /* {N, Do*kd, C, H, W} */
  int64_t s7[7] = {N, Do, kd, g, C / g, H, W};
  if ((st = pt_reshape(ctx, gath, 7, s7, &g7))) goto done;
  static const int gtc[7] = {0, 1, 3, 2, 4, 5, 6};
  if ((st = pt_permute(ctx, g7, gtc, &gp))) goto done;
  int64_t s4[4] = {N * Do, kd * C, H, W};
  if ((st = pt_reshape(ctx, gp, 4, s4, &g4))) goto done;
  int64_t sw6[6] = {g, C / g, Cog, kd, kh, kw};
  if ((st = pt_reshape(ctx, w, 6, sw6, &w6))) goto done;
  static const int wperm[6] = {0, 3, 1, 2, 4, 5};
  if ((st = pt_permute(ctx, w6, wperm, &wp))) goto done;
  int64_t sw4[4] = {kd * C, Cog, kh, kw};
  if ((st = pt_reshape(ctx, wp, 4, sw4, &w4))) goto done;
  pt_conv_transpose2d_opts o2 = {.groups = g};
  for (int i = 0; i < 2; i++) {
    o2.stride[i] = o->stride[i + 1];
    o2.padding[i] = o->padding[i + 1];
    o2.output_padding[i] = o->output_padding[i + 1];
    o2.dilation[i] = o->dilation[i + 1];
  }
  if ((st = pt_conv_transpose2d(ctx, g4, w4, NULL, &o2, &y4))) goto done;
  int64_t Ho = y4->shape[2], Wo = y4->shape[3];
  int64_t sy5[5] = {N, Do, Co, Ho, Wo};
  if ((st = pt_reshape(ctx, y4, 5, sy5, &y5))) goto done;
  if ((st = pt_permute(ctx, y5, to_ndchw, &yp))) goto done; /* {N, Co, Do, Ho, Wo} */
  if ((st = pt_contiguous(ctx, yp, &yc))) goto done;
  pt_tensor *r = yc;
  if (bias) {
    int64_t sb[5] = {1, Co, 1, 1, 1};
    if ((st = pt_reshape(ctx, bias, 5, sb, &b5)) || (st = pt_add(ctx, yc, b5, &yb))) goto done;
    r = yb;
  }
  if (batched) {
    y = pt_tensor_retain(r);
  } else {
    int64_t sy[4] = {Co, Do, Ho, Wo};
    if ((st = pt_reshape(ctx, r, 4, sy, &y))) goto done;
  }
done:
  pt_tensor_release(x5);
  pt_tensor_release(xp);
  pt_tensor_release(zero);
  pt_tensor_release(xz);
  pt_tensor_release(idx);
  pt_tensor_release(gath);
  pt_tensor_release(g7);
  pt_tensor_release(gp);
  pt_tensor_release(g4);
  pt_tensor_release(w6);
  pt_tensor_release(wp);
  pt_tensor_release(w4);
  pt_tensor_release(y4);
  pt_tensor_release(y5);
  pt_tensor_release(yp);
  pt_tensor_release(yc);
  pt_tensor_release(b5);
  pt_tensor_release(yb);
  if (st) {
    pt_tensor_release(y);
    return st;
  }
  *out = y;
  return PT_OK;
}

/* ---------------------------------------------------------------- pooling */

static pt_status pool_out_size(pt_ctx *ctx, const char *fn, const pt_pool2d_opts *o, int H, int W, int *Ho,
                               int *Wo) {
  int in[2] = {H, W}, res[2] = {0, 0};
  for (int i = 0; i < 2; i++) {
    if (o->kernel[i] < 1 || o->stride[i] < 1 || o->padding[i] < 0)
      return pt_fail(ctx, PT_EARG, "%s: kernel and stride must be >= 1 and padding >= 0", fn);
    if (o->padding[i] * 2 > o->kernel[i])
      return pt_fail(ctx, PT_EARG, "%s: padding %d should be at most half of kernel size %d", fn,
                     o->padding[i], o->kernel[i]);
    if (o->dilation[i] < 0) return pt_fail(ctx, PT_EARG, "%s: dilation must be >= 1", fn);
    int extent[2]; /* the window's span with dilation */
    for (int k = 0; k < 2; k++) extent[k] = (o->dilation[k] > 1 ? o->dilation[k] : 1) * (o->kernel[k] - 1) + 1;
    int span = in[i] + 2 * o->padding[i] - extent[i];
    if (span < 0)
      return pt_fail(ctx, PT_ESHAPE, "%s: kernel %dx%d%s is larger than the padded input %dx%d", fn,
                     extent[0], extent[1], extent[0] != o->kernel[0] || extent[1] != o->kernel[1] ? " (dilated)" : "",
                     H + 2 * o->padding[0], W + 2 * o->padding[1]);
    int n = (o->ceil_mode ? (span + o->stride[i] - 1) / o->stride[i] : span / o->stride[i]) + 1;
    /* the last window must start inside the input or left padding (PyTorch's rule) */
    if (o->ceil_mode && (n - 1) * o->stride[i] >= in[i] + o->padding[i]) n--;
    res[i] = n;
  }
  *Ho = res[0];
  *Wo = res[1];
  return PT_OK;
}

static void pool_ints(pt_node *node, const pt_pool2d_opts *o, int64_t planes, int H, int W, int Ho, int Wo) {
  int64_t ints[14] = {o->kernel[0], o->kernel[1], o->stride[0], o->stride[1], o->padding[0],
                      o->padding[1], o->ceil_mode, o->count_include_pad, planes, H, W, Ho, Wo, o->divisor_override};
  memcpy(node->ints, ints, sizeof ints);
  node->n_ints = 14;
}

static void pool_unints(const pt_node *node, pt_pool2d_opts *o, int64_t *planes, int *H, int *W, int *Ho,
                        int *Wo) {
  const int64_t *iv = node->ints;
  o->kernel[0] = (int)iv[0], o->kernel[1] = (int)iv[1], o->stride[0] = (int)iv[2], o->stride[1] = (int)iv[3];
  o->padding[0] = (int)iv[4], o->padding[1] = (int)iv[5], o->ceil_mode = iv[6], o->count_include_pad = iv[7];
  o->relu = false; /* the backward needs no flag: the forward left index -1 where it rectified */
  o->dilation[0] = o->dilation[1] = 1; /* max pool's backward follows the saved indices */
  *planes = iv[8], *H = (int)iv[9], *W = (int)iv[10], *Ho = (int)iv[11], *Wo = (int)iv[12];
  o->divisor_override = (int)iv[13];
}

/* Max pooling's backward, split over planes: each plane of the input gradient is zeroed and
 * receives its window maxima's gradients while it is in cache (a memset of the whole gradient
 * first, then the scatter, went over it twice; a batch-256 CNN's first pool has 26 MB of it). */
typedef struct max_pool_grad_job {
  const void *gy;
  void *gx;
  const int32_t *idx;
  pt_dtype dtype;
  int64_t P, HW;
} max_pool_grad_job;

static void max_pool_grad_chunk(void *arg, int64_t b, int64_t e, int tid) {
  const max_pool_grad_job *j = arg;
  PT_DISPATCH_FLOAT(j->dtype, {
    for (int64_t pl = b; pl < e; pl++) {
      const T *g = (const T *)j->gy + pl * j->P;
      T *d = (T *)j->gx + pl * j->HW;
      const int32_t *ix = j->idx + pl * j->P;
      memset(d, 0, (size_t)j->HW * sizeof(T));
      for (int64_t i = 0; i < j->P; i++)
        if (ix[i] >= 0) d[ix[i]] += g[i];
    }
  });
}

static pt_status max_pool_backward(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gin) {
  pt_pool2d_opts o;
  int64_t planes;
  int H, W, Ho, Wo;
  pool_unints(node, &o, &planes, &H, &W, &Ho, &Wo);
  pt_tensor *gy = NULL, *gx = NULL;
  pt_tensor *xin = node->inputs[0];
  pt_status st = pt_tensor_contiguous_raw(ctx, gout, &gy);
  if (st) return st;
  if ((st = pt_tensor_empty(ctx, xin->dtype, xin->ndim, xin->shape, &gx))) {
    pt_tensor_release(gy);
    return st;
  }
  max_pool_grad_job job = {pt_tensor_data(gy), pt_tensor_data(gx), pt_tensor_data(node->saved[0]), gx->dtype,
                           (int64_t)Ho * Wo, (int64_t)H * W};
  pt_parallel_for(ctx, planes, 16, max_pool_grad_chunk, &job);
  pt_tensor_release(gy);
  gin[0] = gx;
  return PT_OK;
}

static pt_status avg_pool_backward(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gin) {
  pt_pool2d_opts o;
  int64_t planes;
  int H, W, Ho, Wo;
  pool_unints(node, &o, &planes, &H, &W, &Ho, &Wo);
  pt_tensor *gy, *gx;
  pt_status st = scatter_buffers(ctx, node, gout, &gy, &gx);
  if (st) return st;
  if (gx->dtype == PT_FLOAT32)
    avg_pool_backward_f32(pt_tensor_data(gy), pt_tensor_data(gx), planes, H, W, Ho, Wo, &o);
  else
    avg_pool_backward_f64(pt_tensor_data(gy), pt_tensor_data(gx), planes, H, W, Ho, Wo, &o);
  pt_tensor_release(gy);
  gin[0] = gx;
  return PT_OK;
}

typedef struct pool_job {
  const void *x;
  void *y;
  int32_t *idx;
  pt_dtype dtype;
  int H, W, Ho, Wo;
  const pt_pool2d_opts *o;
} pool_job;

static void max_pool_chunk(void *arg, int64_t b, int64_t e, int tid) {
  pool_job *j = arg;
  int64_t P = (int64_t)j->Ho * j->Wo;
  if (j->dtype == PT_FLOAT32) {
    max_pool_forward_f32(j->x, j->y, j->idx, b, e, j->H, j->W, j->Ho, j->Wo, j->o);
    if (j->o->relu) max_pool_relu_f32(j->y, j->idx, b * P, e * P);
  } else {
    max_pool_forward_f64(j->x, j->y, j->idx, b, e, j->H, j->W, j->Ho, j->Wo, j->o);
    if (j->o->relu) max_pool_relu_f64(j->y, j->idx, b * P, e * P);
  }
}

static void avg_pool_chunk(void *arg, int64_t b, int64_t e, int tid) {
  pool_job *j = arg;
  if (j->dtype == PT_FLOAT32)
    avg_pool_forward_f32(j->x, j->y, b, e, j->H, j->W, j->Ho, j->Wo, j->o);
  else
    avg_pool_forward_f64(j->x, j->y, b, e, j->H, j->W, j->Ho, j->Wo, j->o);
}

/* idx64: an int64 copy of max pooling's int32 positions (shape ys), for return_indices */
static pt_status indices64(pt_ctx *ctx, const pt_tensor *idx, int yn, const int64_t *ys, pt_tensor **idx64) {
  pt_status st = pt_tensor_empty(ctx, PT_INT64, yn, ys, idx64);
  if (st) return st;
  const int32_t *s = pt_tensor_data(idx);
  int64_t *t = pt_tensor_data(*idx64), n = pt_tensor_numel(idx);
  for (int64_t i = 0; i < n; i++) t[i] = s[i];
  return PT_OK;
}

/* indices (max pooling only, may be NULL): each maximum's 0-based position in its plane */
static pt_status pool2d(pt_ctx *ctx, const char *fn, bool is_max, pt_tensor *x, const pt_pool2d_opts *o,
                        pt_tensor **out, pt_tensor **indices) {
  int64_t d[4];
  pt_status st;
  if ((st = check_floating(ctx, fn, "input", x)) || (st = as_nchw(ctx, fn, x, d))) return st;
  if (d[1] == 0 || d[2] == 0 || d[3] == 0) { /* as PyTorch: only the batch may be empty */
    char b[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "%s: channels, height and width must be non-zero (only the batch may be "
                   "empty), got input shape %s", fn, pt_shape_format(x->ndim, x->shape, b, sizeof b));
  }
  int H = (int)d[2], W = (int)d[3], Ho = 0, Wo = 0;
  if ((st = pool_out_size(ctx, fn, o, H, W, &Ho, &Wo))) return st;
  int64_t planes = d[0] * d[1], ys[4];
  int yn = out_shape(x, d[0], d[1], Ho, Wo, ys);
  pt_tensor *xc = NULL, *y = NULL, *idx = NULL, *idx64 = NULL;
  if (indices && o->relu) {
    st = pt_fail(ctx, PT_EARG, "%s: return_indices=true cannot be combined with relu=true", fn);
    goto done;
  }
  if ((st = pt_tensor_contiguous_raw(ctx, x, &xc)) || (st = pt_tensor_empty(ctx, x->dtype, yn, ys, &y)))
    goto done;
  if (is_max && (int64_t)H * W > INT32_MAX) {
    st = pt_fail(ctx, PT_ESHAPE, "%s: a plane of %dx%d elements is too large (at most 2^31 - 1)", fn, H, W);
    goto done;
  }
  if (is_max && (st = pt_tensor_empty(ctx, PT_INT32, yn, ys, &idx))) goto done;
  pool_job job = {pt_tensor_data(xc), pt_tensor_data(y), idx ? pt_tensor_data(idx) : NULL, x->dtype, H, W, Ho, Wo, o};
  pt_parallel_for(ctx, planes, 16, is_max ? max_pool_chunk : avg_pool_chunk, &job);
  if (indices && (st = indices64(ctx, idx, yn, ys, &idx64))) goto done;
  pt_node *node;
  if ((st = pt_autograd_record(ctx, y, is_max ? (o->relu ? "ReluMaxPool2dBackward" : "MaxPool2dBackward") : "AvgPool2dBackward",
                               is_max ? max_pool_backward : avg_pool_backward, 1, &x, &node)))
    goto done;
  if (node) {
    pt_node_save(node, 0, pt_tensor_retain(idx));
    pool_ints(node, o, planes, H, W, Ho, Wo);
  }
done:
  pt_tensor_release(xc);
  pt_tensor_release(idx);
  if (st) {
    pt_tensor_release(y);
    pt_tensor_release(idx64);
    return st;
  }
  *out = y;
  if (indices) *indices = idx64;
  return PT_OK;
}

pt_status pt_max_pool2d(pt_ctx *ctx, pt_tensor *x, const pt_pool2d_opts *o, pt_tensor **out) {
  return pool2d(ctx, "max_pool2d", true, x, o, out, NULL);
}

pt_status pt_max_pool2d_with_indices(pt_ctx *ctx, pt_tensor *x, const pt_pool2d_opts *o, pt_tensor **out,
                                     pt_tensor **indices) {
  return pool2d(ctx, "max_pool2d", true, x, o, out, indices);
}

pt_status pt_avg_pool2d(pt_ctx *ctx, pt_tensor *x, const pt_pool2d_opts *o, pt_tensor **out) {
  return pool2d(ctx, "avg_pool2d", false, x, o, out, NULL);
}

static pt_status adaptive_backward(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gin) {
  const int64_t *iv = node->ints;
  pt_tensor *gy, *gx;
  pt_status st = scatter_buffers(ctx, node, gout, &gy, &gx);
  if (st) return st;
  if (gx->dtype == PT_FLOAT32)
    adaptive_avg_backward_f32(pt_tensor_data(gy), pt_tensor_data(gx), iv[0], (int)iv[1], (int)iv[2], (int)iv[3], (int)iv[4]);
  else
    adaptive_avg_backward_f64(pt_tensor_data(gy), pt_tensor_data(gx), iv[0], (int)iv[1], (int)iv[2], (int)iv[3], (int)iv[4]);
  pt_tensor_release(gy);
  gin[0] = gx;
  return PT_OK;
}

typedef struct adaptive_job {
  const void *x;
  void *y;
  pt_dtype dtype;
  int H, W, Ho, Wo;
} adaptive_job;

static void adaptive_chunk(void *arg, int64_t b, int64_t e, int tid) {
  (void)tid;
  const adaptive_job *j = arg;
  if (j->dtype == PT_FLOAT32)
    adaptive_avg_forward_f32(j->x, j->y, b, e, j->H, j->W, j->Ho, j->Wo);
  else
    adaptive_avg_forward_f64(j->x, j->y, b, e, j->H, j->W, j->Ho, j->Wo);
}

pt_status pt_adaptive_avg_pool2d(pt_ctx *ctx, pt_tensor *x, int Ho, int Wo, pt_tensor **out) {
  const char *fn = "adaptive_avg_pool2d";
  int64_t d[4];
  pt_status st;
  if ((st = check_floating(ctx, fn, "input", x)) || (st = as_nchw(ctx, fn, x, d))) return st;
  if (Ho < 0 || Wo < 0) return pt_fail(ctx, PT_EARG, "%s: output size must be non-negative, got %dx%d", fn, Ho, Wo);
  int H = (int)d[2], W = (int)d[3];
  if (H < 1 || W < 1) return pt_fail(ctx, PT_ESHAPE, "%s: input has an empty spatial size", fn);
  int64_t planes = d[0] * d[1], ys[4];
  int yn = out_shape(x, d[0], d[1], Ho, Wo, ys);
  pt_tensor *xc = NULL, *y = NULL;
  if ((st = pt_tensor_contiguous_raw(ctx, x, &xc)) || (st = pt_tensor_empty(ctx, x->dtype, yn, ys, &y))) goto done;
  {
    adaptive_job job = {pt_tensor_data(xc), pt_tensor_data(y), x->dtype, H, W, Ho, Wo};
    pt_parallel_for(ctx, planes, (int64_t)(65536 / ((int64_t)H * W) + 1), adaptive_chunk, &job);
  }
  pt_node *node;
  if ((st = pt_autograd_record(ctx, y, "AdaptiveAvgPool2dBackward", adaptive_backward, 1, &x, &node))) goto done;
  if (node) {
    int64_t ints[5] = {planes, H, W, Ho, Wo};
    memcpy(node->ints, ints, sizeof ints);
    node->n_ints = 5;
  }
done:
  pt_tensor_release(xc);
  if (st) {
    pt_tensor_release(y);
    return st;
  }
  *out = y;
  return PT_OK;
}

typedef struct adaptive_max_job {
  const void *x;
  void *y;
  int32_t *idx;
  pt_dtype dtype;
  int H, W, Ho, Wo;
} adaptive_max_job;

static void adaptive_max_chunk(void *arg, int64_t b, int64_t e, int tid) {
  (void)tid;
  const adaptive_max_job *j = arg;
  if (j->dtype == PT_FLOAT32)
    adaptive_max_forward_f32(j->x, j->y, j->idx, b, e, j->H, j->W, j->Ho, j->Wo);
  else
    adaptive_max_forward_f64(j->x, j->y, j->idx, b, e, j->H, j->W, j->Ho, j->Wo);
}

pt_status pt_adaptive_max_pool2d(pt_ctx *ctx, pt_tensor *x, int Ho, int Wo, pt_tensor **out, pt_tensor **indices) {
  const char *fn = "adaptive_max_pool2d";
  int64_t d[4];
  pt_status st;
  if ((st = check_floating(ctx, fn, "input", x)) || (st = as_nchw(ctx, fn, x, d))) return st;
  if (Ho < 0 || Wo < 0) return pt_fail(ctx, PT_EARG, "%s: output size must be non-negative, got %dx%d", fn, Ho, Wo);
  if (d[1] == 0 || d[2] == 0 || d[3] == 0) {
    char b[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "%s: channels, height and width must be non-zero (only the batch may be "
                   "empty), got input shape %s", fn, pt_shape_format(x->ndim, x->shape, b, sizeof b));
  }
  if (d[2] * d[3] > INT32_MAX)
    return pt_fail(ctx, PT_ESHAPE, "%s: a plane of %lldx%lld elements is too large (at most 2^31 - 1)", fn,
                   (long long)d[2], (long long)d[3]);
  int H = (int)d[2], W = (int)d[3];
  int64_t planes = d[0] * d[1], ys[4];
  int yn = out_shape(x, d[0], d[1], Ho, Wo, ys);
  pt_tensor *xc = NULL, *y = NULL, *idx = NULL, *idx64 = NULL;
  if ((st = pt_tensor_contiguous_raw(ctx, x, &xc)) || (st = pt_tensor_empty(ctx, x->dtype, yn, ys, &y)) ||
      (st = pt_tensor_empty(ctx, PT_INT32, yn, ys, &idx)))
    goto done;
  {
    adaptive_max_job job = {pt_tensor_data(xc), pt_tensor_data(y), pt_tensor_data(idx), x->dtype, H, W, Ho, Wo};
    pt_parallel_for(ctx, planes, (int64_t)(65536 / ((int64_t)H * W) + 1), adaptive_max_chunk, &job);
  }
  if (indices && (st = indices64(ctx, idx, yn, ys, &idx64))) goto done;
  pt_node *node;
  /* the backward is max pooling's: it scatters by the saved positions */
  if ((st = pt_autograd_record(ctx, y, "AdaptiveMaxPool2dBackward", max_pool_backward, 1, &x, &node))) goto done;
  if (node) {
    pt_node_save(node, 0, pt_tensor_retain(idx));
    pt_pool2d_opts o = {.kernel = {1, 1}, .stride = {1, 1}};
    pool_ints(node, &o, planes, H, W, Ho, Wo);
  }
done:
  pt_tensor_release(xc);
  pt_tensor_release(idx);
  if (st) {
    pt_tensor_release(y);
    pt_tensor_release(idx64);
    return st;
  }
  *out = y;
  if (indices) *indices = idx64;
  return PT_OK;
}

/* ---------------------------------------------------------------- max unpooling */

/* Each plane of the output is zeroed, then x's plane written at its positions (in x's order:
 * where two coincide the later wins, as PyTorch's CPU kernel); the backward gathers. Split over
 * planes. */
typedef struct unpool_job {
  const void *src;
  void *dst;
  const int64_t *idx; /* 0-based, checked */
  pt_dtype dtype;
  int64_t P, S; /* x's and the output's plane sizes */
  bool gather;  /* backward: dst[i] = src[idx[i]] over x's planes */
} unpool_job;

static void unpool_chunk(void *arg, int64_t b, int64_t e, int tid) {
  (void)tid;
  const unpool_job *j = arg;
  PT_DISPATCH_FLOAT(j->dtype, {
    for (int64_t pl = b; pl < e; pl++) {
      const int64_t *ix = j->idx + pl * j->P;
      if (j->gather) {
        const T *g = (const T *)j->src + pl * j->S;
        T *d = (T *)j->dst + pl * j->P;
        for (int64_t i = 0; i < j->P; i++) d[i] = g[ix[i]];
      } else {
        const T *s = (const T *)j->src + pl * j->P;
        T *d = (T *)j->dst + pl * j->S;
        memset(d, 0, (size_t)j->S * sizeof(T));
        for (int64_t i = 0; i < j->P; i++) d[ix[i]] = s[i];
      }
    }
  });
}

static pt_status max_unpool_backward(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gin) {
  pt_tensor *xin = node->inputs[0], *gy = NULL, *gx = NULL;
  pt_status st = pt_tensor_contiguous_raw(ctx, gout, &gy);
  if (st) return st;
  if ((st = pt_tensor_empty(ctx, xin->dtype, xin->ndim, xin->shape, &gx))) {
    pt_tensor_release(gy);
    return st;
  }
  int64_t planes = node->ints[0];
  unpool_job job = {pt_tensor_data(gy), pt_tensor_data(gx), pt_tensor_data(node->saved[0]), gx->dtype,
                    node->ints[1], node->ints[2], true};
  pt_parallel_for(ctx, planes, 16, unpool_chunk, &job);
  pt_tensor_release(gy);
  gin[0] = gx;
  return PT_OK;
}

pt_status pt_max_unpool2d(pt_ctx *ctx, const char *fn, pt_tensor *x, pt_tensor *indices, int64_t index_base,
                          int out_h, int out_w, pt_tensor **out) {
  char bx[PT_SHAPE_STR_MAX], bi[PT_SHAPE_STR_MAX];
  int64_t d[4];
  pt_status st;
  if ((st = check_floating(ctx, fn, "input", x)) || (st = as_nchw(ctx, fn, x, d))) return st;
  if (indices->dtype != PT_INT64)
    return pt_fail(ctx, PT_EARG, "%s: indices must be int64, got %s", fn, pt_dtype_name(indices->dtype));
  if (indices->ndim != x->ndim || memcmp(indices->shape, x->shape, (size_t)x->ndim * sizeof(int64_t)))
    return pt_fail(ctx, PT_ESHAPE, "%s: indices have shape %s, expected the input's shape %s", fn,
                   pt_shape_format(indices->ndim, indices->shape, bi, sizeof bi),
                   pt_shape_format(x->ndim, x->shape, bx, sizeof bx));
  if (d[1] == 0 || d[2] == 0 || d[3] == 0)
    return pt_fail(ctx, PT_ESHAPE, "%s: channels, height and width must be non-zero (only the batch may be "
                   "empty), got input shape %s", fn, pt_shape_format(x->ndim, x->shape, bx, sizeof bx));
  if (out_h < 1 || out_w < 1)
    return pt_fail(ctx, PT_EARG, "%s: output size must be positive, got %dx%d (input shape %s)", fn, out_h, out_w,
                   pt_shape_format(x->ndim, x->shape, bx, sizeof bx));
  int64_t planes = d[0] * d[1], P = d[2] * d[3], S = (int64_t)out_h * out_w, ys[4];
  int yn = out_shape(x, d[0], d[1], out_h, out_w, ys);
  pt_tensor *xc = NULL, *ic = NULL, *i0 = NULL, *y = NULL;
  if ((st = pt_tensor_contiguous_raw(ctx, x, &xc)) || (st = pt_tensor_contiguous_raw(ctx, indices, &ic)) ||
      (st = pt_tensor_empty(ctx, PT_INT64, indices->ndim, indices->shape, &i0)) ||
      (st = pt_tensor_empty(ctx, x->dtype, yn, ys, &y)))
    goto done;
  {
    const int64_t *s = pt_tensor_data(ic);
    int64_t *t = pt_tensor_data(i0), n = planes * P;
    for (int64_t i = 0; i < n; i++) {
      t[i] = s[i] - index_base;
      if (t[i] < 0 || t[i] >= S) {
        st = pt_fail(ctx, PT_EARG, "%s: index %lld is out of range: an output plane has %lld positions "
                     "(%lld to %lld; output size %dx%d)", fn, (long long)s[i], (long long)S,
                     (long long)index_base, (long long)(S - 1 + index_base), out_h, out_w);
        goto done;
      }
    }
  }
  unpool_job job = {pt_tensor_data(xc), pt_tensor_data(y), pt_tensor_data(i0), x->dtype, P, S, false};
  pt_parallel_for(ctx, planes, 16, unpool_chunk, &job);
  pt_node *node;
  if ((st = pt_autograd_record(ctx, y, "MaxUnpool2dBackward", max_unpool_backward, 1, &x, &node))) goto done;
  if (node) {
    pt_node_save(node, 0, pt_tensor_retain(i0));
    node->ints[0] = planes, node->ints[1] = P, node->ints[2] = S;
    node->n_ints = 3;
  }
done:
  pt_tensor_release(xc);
  pt_tensor_release(ic);
  pt_tensor_release(i0);
  if (st) {
    pt_tensor_release(y);
    return st;
  }
  *out = y;
  return PT_OK;
}

/* ---------------------------------------------------------------- batch norm */

/* x {N,C,S} (contiguous) is read in one of two layouts:
 * - planes (S >= BN_PLANE_MIN: BatchNorm2d, and GroupNorm/InstanceNorm through {1, N*G, M}):
 *   each (n, c) plane is S contiguous elements, cut into runs of at most BN_RUN, summed in 16
 *   lanes of double; the reduction items are the runs;
 * - columns (BatchNorm1d's {N,C}, short {N,C,L}): x as an {N, C*S} matrix in tiles of BN_TR
 *   rows by BN_TC columns, summed down the columns 4 rows at a time (the vectors run across the
 *   columns, so no row is read with a stride); the reduction items are the tiles.
 * Each item yields its mean and sum of squared deviations in one pass (shifted by one of its
 * values: see nn_moments), and Chan et al.'s pairwise update combines them in a fixed
 * order: a channel's runs in (n, run) order; a column's tiles in row order, then a channel's S
 * columns in order. The backward's sums go through the same items. Items, groups of rows and
 * every order of addition depend only on the shape, never on the thread count, so neither does
 * any result (bit for bit). Sums and the backward's element-wise pass are in double, as before;
 * the float32 forward's element-wise pass is in float (bn_forward_f32_chunk). The earlier loops
 * (one channel at a time, strided down the rows of {N,C}, one chain of dependent adds, two
 * passes for the variance) were 15x slower than PyTorch on BatchNorm1d {256,4096}. */
#define BN_RUN 2048       /* elements of a plane in one reduction item */
#define BN_PLANE_MIN 32   /* S from which the plane layout is used */
#define BN_TR 64          /* tile rows (column layout) */
#define BN_TC 2048        /* tile columns */
#define BN_GRAIN 32768    /* elements per parallel chunk, at least */
#define BN_PF 1024        /* the float32 forward prefetches its output this many elements ahead */
#define BN_STRIP 256      /* columns per strip of the float32 forward (with the strip's prefetches) */

typedef struct bn_geom {
  int64_t N, C, S, K; /* K = C * S */
  bool planes;
  int64_t nrun;       /* planes: runs per plane */
  int64_t ntr, ntc;   /* columns: tile rows, tile columns */
  int64_t nitems;     /* reduction items */
  int64_t nred;       /* entries of a reduction's partial results: one per run, or per tile row and column */
} bn_geom;

static bn_geom bn_geom_of(int64_t N, int64_t C, int64_t S) {
  bn_geom g = {.N = N, .C = C, .S = S, .K = C * S, .planes = S >= BN_PLANE_MIN};
  if (g.planes) {
    g.nrun = (S + BN_RUN - 1) / BN_RUN;
    g.nitems = g.nred = N * C * g.nrun;
  } else {
    g.ntr = (N + BN_TR - 1) / BN_TR;
    g.ntc = (g.K + BN_TC - 1) / BN_TC;
    g.nitems = g.ntr * g.ntc;
    g.nred = g.ntr * g.K;
  }
  return g;
}

/* items per parallel chunk, for about BN_GRAIN elements */
static int64_t bn_grain(int64_t per_item) {
  return per_item >= BN_GRAIN ? 1 : BN_GRAIN / (per_item > 0 ? per_item : 1);
}

static int64_t bn_item_grain(const bn_geom *g) {
  if (g->planes) return bn_grain(g->S < BN_RUN ? g->S : BN_RUN);
  return bn_grain((g->N < BN_TR ? g->N : BN_TR) * (g->K < BN_TC ? g->K : BN_TC));
}

typedef struct bn_job {
  bn_geom g;
  pt_dtype dt;
  const void *x, *gy; /* input; output gradient (backward) */
  void *out;          /* y, or the input gradient */
  bool add;           /* out += the result (out is x's gradient buffer) */
  /* per channel (planes) or column (columns): out = (x - m) * ca + cb forward,
   * ca * gy + cb * (x - m) + cc backward; the backward's sums use m */
  const double *m, *ca, *cb, *cc;
  const float *fm, *fa, *fc; /* the float32 forward's: y = (x - fm) fa + fc */
  bool fm_zero;              /* every fm is 0 */
  double *pa, *pb; /* reductions: bn_geom.nred entries each */
} bn_job;


/* sum of g and of g * (x - m) over n elements */
static void bn_run_sums(pt_dtype dt, const void *xv, const void *gv, int64_t n, double m, double *sg,
                        double *sgx) {
  PT_DISPATCH_FLOAT(dt, {
    const T *x = xv, *g = gv;
    int64_t nv = n - n % 16, i;
    nn_v8d a0 = {0}, a1 = {0}, b0 = {0}, b1 = {0}, x0, x1, g0, g1;
    for (i = 0; i < nv; i += 16) {
      NN_LD8(x0, x + i);
      NN_LD8(x1, x + i + 8);
      NN_LD8(g0, g + i);
      NN_LD8(g1, g + i + 8);
      a0 += g0;
      a1 += g1;
      b0 += g0 * (x0 - m);
      b1 += g1 * (x1 - m);
    }
    double s = nn_hsum16(&a0, &a1), q = nn_hsum16(&b0, &b1);
    for (; i < n; i++) {
      s += g[i];
      q += g[i] * (x[i] - m);
    }
    *sg = s;
    *sgx = q;
  });
}

/* columns [j0, j0 + w) of rows [r0, r1) of x {., K}: per column mean and squared deviations, in
 * one pass as nn_moments (shifted by the tile's first row). Rows go 4 at a time (pairs of
 * pairs added to the column's sums), so that each load and store of a partial sum serves 4
 * elements. */
static void bn_tile_moments(pt_dtype dt, const void *xv, int64_t K, int64_t r0, int64_t r1, int64_t j0, int64_t w,
                            double *restrict mean, double *restrict m2) {
  double k[BN_TC], *restrict s1 = mean, *restrict s2 = m2; /* the sums, in place */
  double cnt = (double)(r1 - r0);
  PT_DISPATCH_FLOAT(dt, {
    const T *x = (const T *)xv + j0;
    int64_t r;
    for (int64_t j = 0; j < w; j++) {
      k[j] = x[r0 * K + j];
      s1[j] = s2[j] = 0;
    }
    for (r = r0; r + 4 <= r1; r += 4) {
      const T *x0 = x + r * K, *x1 = x0 + K, *x2 = x1 + K, *x3 = x2 + K;
      _Pragma("GCC ivdep")
      for (int64_t j = 0; j < w; j++) {
        double kj = k[j], d0 = x0[j] - kj, d1 = x1[j] - kj, d2 = x2[j] - kj, d3 = x3[j] - kj;
        s1[j] += (d0 + d1) + (d2 + d3);
        s2[j] += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);
      }
    }
    for (; r < r1; r++) {
      const T *x0 = x + r * K;
      _Pragma("GCC ivdep")
      for (int64_t j = 0; j < w; j++) {
        double d = x0[j] - k[j];
        s1[j] += d;
        s2[j] += d * d;
      }
    }
    for (int64_t j = 0; j < w; j++) {
      double q = s2[j] - s1[j] * (s1[j] / cnt);
      s1[j] = k[j] + s1[j] / cnt;
      s2[j] = q > 0 ? q : 0;
    }
  });
}

/* the backward's sums over the same tile: g and g * (x - m) per column, rows 4 at a time */
static void bn_tile_sums(pt_dtype dt, const void *xv, const void *gv, int64_t K, int64_t r0, int64_t r1,
                         int64_t j0, int64_t w, const double *restrict m, double *restrict sg,
                         double *restrict sgx) {
  double *restrict a = sg, *restrict b = sgx; /* the sums, in place */
  PT_DISPATCH_FLOAT(dt, {
    const T *x = (const T *)xv + j0, *g = (const T *)gv + j0;
    int64_t r;
    for (int64_t j = 0; j < w; j++) a[j] = b[j] = 0;
    for (r = r0; r + 4 <= r1; r += 4) {
      const T *x0 = x + r * K, *x1 = x0 + K, *x2 = x1 + K, *x3 = x2 + K;
      const T *g0 = g + r * K, *g1 = g0 + K, *g2 = g1 + K, *g3 = g2 + K;
      _Pragma("GCC ivdep")
      for (int64_t j = 0; j < w; j++) {
        double mj = m[j];
        a[j] += ((double)g0[j] + g1[j]) + ((double)g2[j] + g3[j]);
        b[j] += ((double)g0[j] * (x0[j] - mj) + (double)g1[j] * (x1[j] - mj)) +
                ((double)g2[j] * (x2[j] - mj) + (double)g3[j] * (x3[j] - mj));
      }
    }
    for (; r < r1; r++) {
      const T *x0 = x + r * K, *g0 = g + r * K;
      _Pragma("GCC ivdep")
      for (int64_t j = 0; j < w; j++) {
        a[j] += g0[j];
        b[j] += (double)g0[j] * (x0[j] - m[j]);
      }
    }
  });
}

/* where reduction item `it` lies: planes: plane p, offset and length of its run; columns: tile
 * row t, first column and width */
static void bn_item(const bn_geom *g, int64_t it, int64_t *p, int64_t *off, int64_t *len) {
  if (g->planes) {
    int64_t r = it % g->nrun;
    *p = it / g->nrun;
    *off = r * BN_RUN;
    *len = r + 1 < g->nrun ? BN_RUN : g->S - *off;
  } else {
    int64_t tc = it % g->ntc;
    *p = it / g->ntc;
    *off = tc * BN_TC;
    *len = g->K - *off < BN_TC ? g->K - *off : BN_TC;
  }
}

static void bn_moments_chunk(void *arg, int64_t b, int64_t e, int tid) {
  const bn_job *j = arg;
  const bn_geom *g = &j->g;
  size_t es = pt_dtype_size(j->dt);
  for (int64_t it = b; it < e; it++) {
    int64_t p, off, len;
    bn_item(g, it, &p, &off, &len);
    if (g->planes) {
      nn_moments(j->dt, (const char *)j->x + (size_t)(p * g->S + off) * es, len, &j->pa[it], &j->pb[it]);
    } else {
      int64_t r1 = (p + 1) * BN_TR < g->N ? (p + 1) * BN_TR : g->N;
      bn_tile_moments(j->dt, j->x, g->K, p * BN_TR, r1, off, len, j->pa + p * g->K + off, j->pb + p * g->K + off);
    }
  }
}

static void bn_sums_chunk(void *arg, int64_t b, int64_t e, int tid) {
  const bn_job *j = arg;
  const bn_geom *g = &j->g;
  size_t es = pt_dtype_size(j->dt);
  for (int64_t it = b; it < e; it++) {
    int64_t p, off, len;
    bn_item(g, it, &p, &off, &len);
    if (g->planes) {
      size_t o = (size_t)(p * g->S + off) * es;
      bn_run_sums(j->dt, (const char *)j->x + o, (const char *)j->gy + o, len, j->m[p % g->C], &j->pa[it],
                  &j->pb[it]);
    } else {
      int64_t r1 = (p + 1) * BN_TR < g->N ? (p + 1) * BN_TR : g->N;
      bn_tile_sums(j->dt, j->x, j->gy, g->K, p * BN_TR, r1, off, len, j->m + off, j->pa + p * g->K + off,
                   j->pb + p * g->K + off);
    }
  }
}

/* Chan et al.'s update of (mean, m2) over na values by a group of nb values (mean mb, squared
 * deviations m2b); f1 = nb / (na + nb), f2 = na * nb / (na + nb) are the same for every channel */
static inline void bn_merge(double *mean, double *m2, double mb, double m2b, double f1, double f2) {
  double d = mb - *mean;
  *mean += d * f1;
  *m2 += m2b + d * d * f2;
}

/* Per channel mean and m2 from bn_moments_chunk's partials (pa, pb are overwritten); f: room for
 * the merge factors, 2 N nrun (planes) or 2 ntr (columns) doubles */
static void bn_combine_moments(const bn_geom *g, double *pa, double *pb, double *f, double *mean, double *m2) {
  int64_t C = g->C;
  if (g->planes) {
    int64_t steps = g->N * g->nrun;
    double na = 0;
    for (int64_t k = 0; k < steps; k++) {
      int64_t r = k % g->nrun;
      double nb = (double)(r + 1 < g->nrun ? BN_RUN : g->S - r * BN_RUN), t = na + nb;
      f[2 * k] = nb / t;
      f[2 * k + 1] = na * nb / t;
      na = t;
    }
    for (int64_t c = 0; c < C; c++) mean[c] = m2[c] = 0;
    for (int64_t k = 0; k < steps; k++) {
      int64_t n = k / g->nrun, r = k % g->nrun;
      const double *a = pa + n * C * g->nrun + r, *b = pb + n * C * g->nrun + r;
      for (int64_t c = 0; c < C; c++)
        bn_merge(&mean[c], &m2[c], a[c * g->nrun], b[c * g->nrun], f[2 * k], f[2 * k + 1]);
    }
    return;
  }
  /* a column's tiles, in row order, into row 0 of pa/pb */
  int64_t K = g->K;
  double na = 0;
  for (int64_t t = 0; t < g->ntr; t++) {
    double nb = (double)((t + 1) * BN_TR < g->N ? BN_TR : g->N - t * BN_TR), s = na + nb;
    f[2 * t] = nb / s;
    f[2 * t + 1] = na * nb / s;
    na = s;
  }
  for (int64_t t = 1; t < g->ntr; t++)
    for (int64_t j = 0; j < K; j++) bn_merge(&pa[j], &pb[j], pa[t * K + j], pb[t * K + j], f[2 * t], f[2 * t + 1]);
  if (g->S == 1) {
    memcpy(mean, pa, (size_t)C * sizeof(double));
    memcpy(m2, pb, (size_t)C * sizeof(double));
    return;
  }
  /* a channel's S columns (N values each), in order */
  for (int64_t c = 0; c < C; c++) {
    double mu = pa[c * g->S], q = pb[c * g->S];
    for (int64_t s = 1; s < g->S; s++)
      bn_merge(&mu, &q, pa[c * g->S + s], pb[c * g->S + s], 1.0 / (double)(s + 1),
               (double)g->N * (double)s / (double)(s + 1));
    mean[c] = mu;
    m2[c] = q;
  }
}

/* Per channel sums from bn_sums_chunk's partials, added in a fixed order */
static void bn_combine_sums(const bn_geom *g, double *pa, double *pb, double *sg, double *sgx) {
  int64_t C = g->C;
  if (g->planes) {
    for (int64_t c = 0; c < C; c++) sg[c] = sgx[c] = 0;
    for (int64_t k = 0; k < g->N * g->nrun; k++) {
      int64_t n = k / g->nrun, r = k % g->nrun;
      const double *a = pa + n * C * g->nrun + r, *b = pb + n * C * g->nrun + r;
      for (int64_t c = 0; c < C; c++) {
        sg[c] += a[c * g->nrun];
        sgx[c] += b[c * g->nrun];
      }
    }
    return;
  }
  int64_t K = g->K;
  for (int64_t t = 1; t < g->ntr; t++)
    for (int64_t j = 0; j < K; j++) {
      pa[j] += pa[t * K + j];
      pb[j] += pb[t * K + j];
    }
  for (int64_t c = 0; c < C; c++) {
    double a = 0, b = 0;
    for (int64_t s = 0; s < g->S; s++) {
      a += pa[c * g->S + s];
      b += pb[c * g->S + s];
    }
    sg[c] = a;
    sgx[c] = b;
  }
}

/* one element of the element-wise pass: forward (x - m) a + b; backward a g + b (x - m) + c */
#define BN_FWD(x, m, a, b) (((x) - (m)) * (a) + (b))
#define BN_BWD(x, g, m, a, b, c) ((a) * (g) + (b) * ((x) - (m)) + (c))

/* the element-wise pass. planes: items are planes, one set of coefficients each. columns: items
 * are groups of 4 rows (the last may be shorter), each row read and written in order; a
 * coefficient loaded serves 4 elements. Groups are fixed, so a row always takes the same loop. */
static void bn_apply_chunk(void *arg, int64_t b, int64_t e, int tid) {
  const bn_job *j = arg;
  const bn_geom *g = &j->g;
  PT_DISPATCH_FLOAT(j->dt, {
    const T *x = j->x, *gy = j->gy;
    T *out = j->out;
    if (g->planes) {
      for (int64_t p = b; p < e; p++) {
        int64_t c = p % g->C, o = p * g->S, S = g->S;
        const T *restrict xp = x + o;
        T *restrict op = out + o;
        double m = j->m[c], ca = j->ca[c], cb = j->cb[c];
        if (!gy) {
          for (int64_t i = 0; i < S; i++) op[i] = (T)BN_FWD(xp[i], m, ca, cb);
        } else {
          const T *restrict gp = gy + o;
          double cc = j->cc[c];
          if (!j->add)
            for (int64_t i = 0; i < S; i++) op[i] = (T)BN_BWD(xp[i], gp[i], m, ca, cb, cc);
          else
            for (int64_t i = 0; i < S; i++) op[i] += (T)BN_BWD(xp[i], gp[i], m, ca, cb, cc);
        }
      }
      break;
    }
    int64_t K = g->K;
    const double *m = j->m, *ca = j->ca, *cb = j->cb, *cc = j->cc;
    for (int64_t gi = b; gi < e; gi++) {
      int64_t r = gi * 4, r1 = r + 4 < g->N ? r + 4 : g->N;
      if (r1 - r == 4) {
        const T *x0 = x + r * K, *x1 = x0 + K, *x2 = x1 + K, *x3 = x2 + K;
        T *o0 = out + r * K, *o1 = o0 + K, *o2 = o1 + K, *o3 = o2 + K;
        if (!gy) {
          _Pragma("GCC ivdep")
          for (int64_t i = 0; i < K; i++) {
            double mi = m[i], ai = ca[i], bi = cb[i];
            o0[i] = (T)BN_FWD(x0[i], mi, ai, bi);
            o1[i] = (T)BN_FWD(x1[i], mi, ai, bi);
            o2[i] = (T)BN_FWD(x2[i], mi, ai, bi);
            o3[i] = (T)BN_FWD(x3[i], mi, ai, bi);
          }
          continue;
        }
        const T *g0 = gy + r * K, *g1 = g0 + K, *g2 = g1 + K, *g3 = g2 + K;
        if (!j->add) {
          _Pragma("GCC ivdep")
          for (int64_t i = 0; i < K; i++) {
            double mi = m[i], ai = ca[i], bi = cb[i], ci = cc[i];
            o0[i] = (T)BN_BWD(x0[i], g0[i], mi, ai, bi, ci);
            o1[i] = (T)BN_BWD(x1[i], g1[i], mi, ai, bi, ci);
            o2[i] = (T)BN_BWD(x2[i], g2[i], mi, ai, bi, ci);
            o3[i] = (T)BN_BWD(x3[i], g3[i], mi, ai, bi, ci);
          }
        } else {
          _Pragma("GCC ivdep")
          for (int64_t i = 0; i < K; i++) {
            double mi = m[i], ai = ca[i], bi = cb[i], ci = cc[i];
            o0[i] += (T)BN_BWD(x0[i], g0[i], mi, ai, bi, ci);
            o1[i] += (T)BN_BWD(x1[i], g1[i], mi, ai, bi, ci);
            o2[i] += (T)BN_BWD(x2[i], g2[i], mi, ai, bi, ci);
            o3[i] += (T)BN_BWD(x3[i], g3[i], mi, ai, bi, ci);
          }
        }
        continue;
      }
      for (; r < r1; r++) {
        const T *x0 = x + r * K, *g0 = gy ? gy + r * K : NULL;
        T *o0 = out + r * K;
        if (!gy) {
          _Pragma("GCC ivdep")
          for (int64_t i = 0; i < K; i++) o0[i] = (T)BN_FWD(x0[i], m[i], ca[i], cb[i]);
        } else if (!j->add) {
          _Pragma("GCC ivdep")
          for (int64_t i = 0; i < K; i++) o0[i] = (T)BN_BWD(x0[i], g0[i], m[i], ca[i], cb[i], cc[i]);
        } else {
          _Pragma("GCC ivdep")
          for (int64_t i = 0; i < K; i++) o0[i] += (T)BN_BWD(x0[i], g0[i], m[i], ca[i], cb[i], cc[i]);
        }
      }
    }
  });
}

/* prefetch for writing the cache lines of p[0 .. n) */
static inline void bn_prefetch_w(const float *p, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) __builtin_prefetch(p + i, 1, 3);
}

/* The float32 forward: y = (x - fm) fa + fc in float, with fa = rstd w and fc = b - (mean - fm)
 * rstd w rounded to float. An element costs a subtract and an FMA (through double it took 5
 * conversions and shuffles per 16 elements, the pass's bottleneck). fm is 0 (x * scale + shift,
 * the old formula) unless |mean rstd w| >= 1; then it is the mean rounded to float, so that a
 * large mean cancels exactly (x - fm is exact near fm) instead of in the rounded shift, where
 * the old formula lost up to 1e-4 of a normalised value. Items as bn_apply_chunk's; the
 * output is prefetched for writing BN_PF elements ahead (a new output is usually not in cache:
 * starting its lines' reads early took a {64,32,28,28} evaluation from 0.41 to 0.33 ms). */
static void bn_forward_f32_chunk(void *arg, int64_t b, int64_t e, int tid) {
  const bn_job *j = arg;
  const bn_geom *g = &j->g;
  const float *x = j->x;
  float *out = j->out;
  if (g->planes) {
    for (int64_t p = b; p < e; p++) {
      int64_t c = p % g->C, o = p * g->S, S = g->S;
      const float *restrict xp = x + o;
      float *restrict op = out + o;
      float m = j->fm[c], a = j->fa[c], k = j->fc[c];
      bn_prefetch_w(op + BN_PF, S);
      for (int64_t i = 0; i < S; i++) op[i] = (xp[i] - m) * a + k;
    }
    return;
  }
  int64_t K = g->K;
  for (int64_t gi = b; gi < e; gi++) {
    int64_t r = gi * 4, r1 = r + 4 < g->N ? r + 4 : g->N;
    for (int64_t i0 = 0; i0 < K; i0 += BN_STRIP) {
      int64_t n = K - i0 < BN_STRIP ? K - i0 : BN_STRIP;
      const float *m = j->fm + i0, *a = j->fa + i0, *k = j->fc + i0;
      if (r1 - r == 4) {
        const float *x0 = x + r * K + i0, *x1 = x0 + K, *x2 = x1 + K, *x3 = x2 + K;
        float *o0 = out + r * K + i0, *o1 = o0 + K, *o2 = o1 + K, *o3 = o2 + K;
        bn_prefetch_w(o0 + BN_PF, n);
        bn_prefetch_w(o1 + BN_PF, n);
        bn_prefetch_w(o2 + BN_PF, n);
        bn_prefetch_w(o3 + BN_PF, n);
        if (j->fm_zero) { /* the same values without loading the zeros */
#pragma GCC ivdep
          for (int64_t i = 0; i < n; i++) {
            float ai = a[i], ki = k[i];
            o0[i] = x0[i] * ai + ki;
            o1[i] = x1[i] * ai + ki;
            o2[i] = x2[i] * ai + ki;
            o3[i] = x3[i] * ai + ki;
          }
          continue;
        }
#pragma GCC ivdep
        for (int64_t i = 0; i < n; i++) {
          float mi = m[i], ai = a[i], ki = k[i];
          o0[i] = (x0[i] - mi) * ai + ki;
          o1[i] = (x1[i] - mi) * ai + ki;
          o2[i] = (x2[i] - mi) * ai + ki;
          o3[i] = (x3[i] - mi) * ai + ki;
        }
        continue;
      }
      for (int64_t q = r; q < r1; q++) {
        const float *x0 = x + q * K + i0;
        float *o0 = out + q * K + i0;
        bn_prefetch_w(o0 + BN_PF, n);
#pragma GCC ivdep
        for (int64_t i = 0; i < n; i++) o0[i] = (x0[i] - m[i]) * a[i] + k[i];
      }
    }
  }
}

static void bn_apply(pt_ctx *ctx, bn_job *j) {
  const bn_geom *g = &j->g;
  pt_parallel_fn fn = j->fm ? bn_forward_f32_chunk : bn_apply_chunk;
  if (g->planes)
    pt_parallel_for(ctx, g->N * g->C, bn_grain(g->S), fn, j);
  else
    pt_parallel_for(ctx, (g->N + 3) / 4, bn_grain(4 * g->K), fn, j);
}

/* per channel values v[C] as per column ones (columns layout with S > 1) into dst[K]; returns
 * what the kernels read */
static const double *bn_per_column(const bn_geom *g, const double *v, double *dst) {
  if (g->planes || g->S == 1) return v;
  for (int64_t c = 0; c < g->C; c++)
    for (int64_t s = 0; s < g->S; s++) dst[c * g->S + s] = v[c];
  return dst;
}

/* a running statistic's element c (1-D, any stride), read and written as pt_tensor_get/set do */
static inline char *bn_elem(const pt_tensor *t, int64_t c) {
  return (char *)t->storage->data + (t->offset + c * t->stride[0]) * (int64_t)pt_dtype_size(t->dtype);
}
static inline double bn_stat_get(const pt_tensor *t, int64_t c) {
  const char *p = bn_elem(t, c);
  if (t->dtype == PT_FLOAT32) return *(const float *)p;
  if (t->dtype == PT_FLOAT64) return *(const double *)p;
  return pt_read_as_double(p, t->dtype);
}
static inline void bn_stat_set(pt_tensor *t, int64_t c, double v) {
  char *p = bn_elem(t, c);
  if (t->dtype == PT_FLOAT32)
    *(float *)p = (float)v;
  else if (t->dtype == PT_FLOAT64)
    *(double *)p = v;
  else
    pt_write_from_double(p, t->dtype, v);
}
/* t[c] = (1 - momentum) t[c] + momentum v[c] for a running statistic t, in double then rounded to
 * t's dtype as pt_tensor_set does; float32 and float64 in one typed loop */
void pt_batch_norm_update_running(pt_tensor *t, const double *v, int64_t C, double momentum) {
  if (!t) return;
  int64_t s = t->stride[0];
  if (t->dtype == PT_FLOAT32) {
    float *p = (float *)t->storage->data + t->offset;
    for (int64_t c = 0; c < C; c++) p[c * s] = (float)((1 - momentum) * p[c * s] + momentum * v[c]);
  } else if (t->dtype == PT_FLOAT64) {
    double *p = (double *)t->storage->data + t->offset;
    for (int64_t c = 0; c < C; c++) p[c * s] = (1 - momentum) * p[c * s] + momentum * v[c];
  } else {
    for (int64_t c = 0; c < C; c++) bn_stat_set(t, c, (1 - momentum) * bn_stat_get(t, c) + momentum * v[c]);
  }
}

/* weight or bias element c as double (d when absent) */
static inline double bn_param(const void *p, pt_dtype dt, int64_t c, double d) {
  if (!p) return d;
  return dt == PT_FLOAT32 ? (double)((const float *)p)[c] : ((const double *)p)[c];
}

static pt_status batch_norm_backward(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gin) {
  pt_tensor *x = node->saved[0], *stats = node->saved[1], *gy;
  pt_tensor *w = node->inputs[1];
  int64_t N = node->ints[0], C = node->ints[1], S = node->ints[2];
  bool training = node->ints[3];
  pt_dtype dt = x->dtype;
  pt_status st = pt_tensor_contiguous_raw(ctx, gout, &gy);
  if (st) return st;
  pt_tensor *gx = NULL, *gw = NULL, *gb = NULL, *wc = NULL, *gxt = NULL;
  double *work = NULL;
  bool fresh = false;
  /* a leaf input's gradient buffer (contiguous, x's dtype and shape), written when fresh, else
   * added to in place: no temporary and no pass of the engine's accumulation */
  if (node->needs_grad[0]) gxt = pt_autograd_grad_target(ctx, node->inputs[0], &fresh);
  if ((node->needs_grad[0] && !gxt && (st = pt_tensor_empty_like(ctx, node->inputs[0], &gx))) ||
      (node->needs_grad[1] && (st = pt_tensor_empty_like(ctx, w, &gw))) ||
      (node->needs_grad[2] && (st = pt_tensor_empty_like(ctx, node->inputs[2], &gb))) ||
      (w && (st = pt_tensor_contiguous_raw(ctx, w, &wc))))
    goto fail;
  const double *mean = pt_tensor_data(stats), *invstd = mean + C;
  const void *wp = wc ? pt_tensor_data(wc) : NULL;
  bn_geom g = bn_geom_of(N, C, S);
  pt_tensor *gxo = gxt ? gxt : gx;
  bool sums = (gxo && training) || gw || gb, expand = !g.planes && S > 1;
  /* sg, sgx, ca, cb, cc per channel; the reductions; 4 per column arrays */
  size_t nwork = 5 * (size_t)C + (sums ? 2 * (size_t)g.nred : 0) + (expand ? 4 * (size_t)g.K : 0);
  if (!(work = pt_alloc(ctx, (nwork ? nwork : 1) * sizeof(double)))) {
    st = PT_ENOMEM;
    goto fail;
  }
  double *sg = work, *sgx = sg + C, *ca = sgx + C, *cb = ca + C, *cc = cb + C, *pa = cc + C, *pb = pa;
  if (sums) pb = pa + g.nred;
  double *cols = sums ? pb + g.nred : pa;
  bn_job job = {.g = g, .dt = dt, .x = pt_tensor_data(x), .gy = pt_tensor_data(gy), .pa = pa, .pb = pb};
  int64_t numel = N * C * S;
  if (sums && numel > 0) {
    job.m = bn_per_column(&g, mean, cols);
    pt_parallel_for(ctx, g.nitems, bn_item_grain(&g), bn_sums_chunk, &job);
    bn_combine_sums(&g, pa, pb, sg, sgx);
  } else {
    for (int64_t c = 0; c < C; c++) sg[c] = sgx[c] = 0;
  }
  PT_DISPATCH_FLOAT(dt, {
    if (gw)
      for (int64_t c = 0; c < C; c++) ((T *)pt_tensor_data(gw))[c] = (T)(sgx[c] * invstd[c]);
    if (gb)
      for (int64_t c = 0; c < C; c++) ((T *)pt_tensor_data(gb))[c] = (T)sg[c];
  });
  if (gxo && numel > 0) {
    double M = (double)(N * S);
    for (int64_t c = 0; c < C; c++) {
      double is = invstd[c], a = bn_param(wp, dt, c, 1.0) * is;
      ca[c] = a;
      cb[c] = training ? -a * is * is * sgx[c] / M : 0;
      cc[c] = training ? -a * sg[c] / M : 0;
    }
    job.out = pt_tensor_data(gxo);
    job.add = gxt && !fresh;
    job.m = bn_per_column(&g, mean, cols);
    job.ca = bn_per_column(&g, ca, cols + g.K);
    job.cb = bn_per_column(&g, cb, cols + 2 * g.K);
    job.cc = bn_per_column(&g, cc, cols + 3 * g.K);
    bn_apply(ctx, &job);
  }
  if (gxt) atomic_fetch_add(&gxt->storage->version, 1);
  pt_free(work);
  pt_tensor_release(gy);
  pt_tensor_release(wc);
  gin[0] = gx;
  gin[1] = gw;
  gin[2] = gb;
  return PT_OK;
fail:
  /* a fresh target handed out but not written must still hold a valid gradient */
  if (gxt && fresh) memset(pt_tensor_data(gxt), 0, (size_t)pt_tensor_numel(gxt) * pt_dtype_size(dt));
  pt_free(work);
  pt_tensor_release(gy);
  pt_tensor_release(gx);
  pt_tensor_release(gw);
  pt_tensor_release(gb);
  pt_tensor_release(wc);
  return st;
}

/* v is nil or {C} of x's dtype (the kernels read weight and bias as x's dtype; PyTorch refuses a
 * mixed dtype too) */
static pt_status check_channel_vec(pt_ctx *ctx, const char *what, const pt_tensor *v, int64_t C, const pt_tensor *x) {
  if (v && (v->ndim != 1 || v->shape[0] != C)) {
    char b[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "batch_norm: %s must have shape {%lld}, got %s", what, (long long)C,
                   pt_shape_format(v->ndim, v->shape, b, sizeof b));
  }
  if (v && v->dtype != x->dtype)
    return pt_fail(ctx, PT_EARG, "batch_norm: %s has dtype %s, input has %s", what, pt_dtype_name(v->dtype),
                   pt_dtype_name(x->dtype));
  return PT_OK;
}

pt_status pt_batch_norm(pt_ctx *ctx, pt_tensor *x, pt_tensor *rmean, pt_tensor *rvar, pt_tensor *w,
                        pt_tensor *b, bool training, double momentum, double eps, pt_tensor **out) {
  const char *fn = "batch_norm";
  char bx[PT_SHAPE_STR_MAX];
  pt_status st;
  if ((st = check_floating(ctx, fn, "input", x))) return st;
  if (x->ndim < 2)
    return pt_fail(ctx, PT_ESHAPE, "%s: expected an input of at least 2 dimensions {N,C,...}, got shape %s", fn,
                   pt_shape_format(x->ndim, x->shape, bx, sizeof bx));
  int64_t N = x->shape[0], C = x->shape[1], S = 1;
  for (int i = 2; i < x->ndim; i++) S *= x->shape[i];
  if ((st = check_channel_vec(ctx, "running_mean", rmean, C, x)) || (st = check_channel_vec(ctx, "running_var", rvar, C, x)) ||
      (st = check_channel_vec(ctx, "weight", w, C, x)) || (st = check_channel_vec(ctx, "bias", b, C, x)))
    return st;
  if (!training && (!rmean || !rvar))
    return pt_fail(ctx, PT_EARG, "%s: evaluation mode needs running_mean and running_var", fn);
  if (training && N * S <= 1)
    return pt_fail(ctx, PT_ESHAPE, "%s: expected more than 1 value per channel when training, got input shape %s",
                   fn, pt_shape_format(x->ndim, x->shape, bx, sizeof bx));
  pt_tensor *xc = NULL, *y = NULL, *stats = NULL, *wc = NULL, *bc = NULL;
  int64_t two_c = 2 * C;
  double *work = NULL;
  float *fwork = NULL;
  if ((st = pt_tensor_contiguous_raw(ctx, x, &xc)) || (st = pt_tensor_empty_like(ctx, x, &y)) ||
      (st = pt_tensor_empty(ctx, PT_FLOAT64, 1, &two_c, &stats)) ||
      (w && (st = pt_tensor_contiguous_raw(ctx, w, &wc))) || (b && (st = pt_tensor_contiguous_raw(ctx, b, &bc))))
    goto done;
  double *mean = pt_tensor_data(stats), *invstd = mean + C;
  bn_geom g = bn_geom_of(N, C, S);
  int64_t numel = N * C * S;
  bool expand = !g.planes && S > 1;
  /* m2 (then the unbiased variance), ca, cb per channel; the reductions and their merge factors;
   * 3 per column arrays */
  size_t nwork = 3 * (size_t)C + (training ? 2 * (size_t)g.nred + 2 * (size_t)(g.N * g.nrun + g.ntr) : 0) +
                 (expand ? 3 * (size_t)g.K : 0);
  if (!(work = pt_alloc(ctx, (nwork ? nwork : 1) * sizeof(double)))) {
    st = PT_ENOMEM;
    goto done;
  }
  double *vu = work, *ca = vu + C, *cb = ca + C, *pa = cb + C, *pb = pa, *f = pa, *cols;
  if (training) pb = pa + g.nred, f = pb + g.nred, cols = f + 2 * (g.N * g.nrun + g.ntr);
  else cols = pa;
  bn_job job = {.g = g, .dt = x->dtype, .x = pt_tensor_data(xc), .out = pt_tensor_data(y), .pa = pa, .pb = pb};
  if (training) {
    if (numel > 0) {
      pt_parallel_for(ctx, g.nitems, bn_item_grain(&g), bn_moments_chunk, &job);
      bn_combine_moments(&g, pa, pb, f, mean, vu);
    }
    double M = (double)(N * S);
    for (int64_t c = 0; c < C; c++) {
      double m2 = vu[c];
      invstd[c] = 1.0 / sqrt(m2 / M + eps);
      vu[c] = M > 1 ? m2 / (M - 1) : 0;
    }
  } else {
    for (int64_t c = 0; c < C; c++) {
      mean[c] = bn_stat_get(rmean, c);
      invstd[c] = 1.0 / sqrt(bn_stat_get(rvar, c) + eps);
    }
  }
  const void *wp = wc ? pt_tensor_data(wc) : NULL, *bp = bc ? pt_tensor_data(bc) : NULL;
  for (int64_t c = 0; c < C; c++) {
    ca[c] = invstd[c] * bn_param(wp, x->dtype, c, 1.0);
    cb[c] = bn_param(bp, x->dtype, c, 0.0);
  }
  if (numel > 0 && x->dtype == PT_FLOAT32) {
    /* per channel (planes), per column (columns) */
    int64_t n = g.planes ? C : g.K, sc = g.planes ? 1 : S;
    if (!(fwork = pt_alloc(ctx, 3 * (size_t)n * sizeof(float)))) {
      st = PT_ENOMEM;
      goto done;
    }
    job.fm_zero = true;
    for (int64_t c = 0; c < C; c++) {
      /* |mean rstd w| < 1: x fa + fc (as before; one rounding fewer), else the mean's float first */
      float fm = fabs(mean[c] * ca[c]) < 1 ? 0.0f : (float)mean[c];
      job.fm_zero &= fm == 0;
      float fa = (float)ca[c], fc = (float)(cb[c] - (mean[c] - fm) * ca[c]);
      for (int64_t s = 0; s < sc; s++) {
        fwork[c * sc + s] = fm;
        fwork[n + c * sc + s] = fa;
        fwork[2 * n + c * sc + s] = fc;
      }
    }
    job.fm = fwork, job.fa = fwork + n, job.fc = fwork + 2 * n;
    bn_apply(ctx, &job);
  } else if (numel > 0) {
    job.m = bn_per_column(&g, mean, cols);
    job.ca = bn_per_column(&g, ca, cols + g.K);
    job.cb = bn_per_column(&g, cb, cols + 2 * g.K);
    bn_apply(ctx, &job);
  }
  if (training && ctx->running_defer && (rmean || rvar)) {
    if ((st = ctx->running_defer(ctx->running_defer_data, rmean, rvar, mean, vu, C, momentum))) goto done;
  } else if (training) {
    pt_batch_norm_update_running(rmean, mean, C, momentum);
    pt_batch_norm_update_running(rvar, vu, C, momentum);
  }
  pt_tensor *inputs[3] = {x, w, b};
  pt_node *node;
  if ((st = pt_autograd_record(ctx, y, "BatchNormBackward", batch_norm_backward, 3, inputs, &node))) goto done;
  if (node) {
    pt_node_save(node, 0, pt_tensor_retain(xc));
    pt_node_save(node, 1, pt_tensor_retain(stats));
    node->ints[0] = N, node->ints[1] = C, node->ints[2] = S, node->ints[3] = training;
    node->n_ints = 4;
    node->scalars[0] = eps; /* for the create_graph formula (autograd.c) */
  }
done:
  pt_free(work);
  pt_free(fwork);
  pt_tensor_release(xc);
  pt_tensor_release(stats);
  pt_tensor_release(wc);
  pt_tensor_release(bc);
  if (st) {
    pt_tensor_release(y);
    return st;
  }
  *out = y;
  return PT_OK;
}

/* ---------------------------------------------------------------- dropout2d, upsample */

static pt_status scale_by_mask(pt_ctx *ctx, pt_tensor *x, const pt_tensor *mask, int64_t S, pt_tensor **out) {
  pt_tensor *xc, *y;
  pt_status st = pt_tensor_contiguous_raw(ctx, x, &xc);
  if (st) return st;
  if ((st = pt_tensor_empty_like(ctx, x, &y))) {
    pt_tensor_release(xc);
    return st;
  }
  const double *m = pt_tensor_data(mask);
  int64_t planes = pt_tensor_numel(mask);
  if (x->dtype == PT_FLOAT32) {
    const float *p = pt_tensor_data(xc);
    float *q = pt_tensor_data(y);
    for (int64_t pl = 0; pl < planes; pl++)
      for (int64_t i = 0; i < S; i++) q[pl * S + i] = p[pl * S + i] * (float)m[pl];
  } else {
    const double *p = pt_tensor_data(xc);
    double *q = pt_tensor_data(y);
    for (int64_t pl = 0; pl < planes; pl++)
      for (int64_t i = 0; i < S; i++) q[pl * S + i] = p[pl * S + i] * m[pl];
  }
  pt_tensor_release(xc);
  *out = y;
  return PT_OK;
}

static pt_status dropout2d_backward(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gin) {
  return scale_by_mask(ctx, gout, node->saved[0], node->ints[0], &gin[0]);
}

pt_status pt_dropout2d(pt_ctx *ctx, pt_tensor *x, double p, bool training, pt_tensor **out) {
  const char *fn = "dropout2d";
  pt_status st;
  if ((st = check_floating(ctx, fn, "input", x))) return st;
  if (p < 0 || p > 1) return pt_fail(ctx, PT_EARG, "%s: probability must be in [0, 1], got %g", fn, p);
  if (x->ndim < 3) {
    char b[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "%s: expected a {N,C,H,W} or {C,H,W} input, got shape %s", fn,
                   pt_shape_format(x->ndim, x->shape, b, sizeof b));
  }
  int64_t planes = x->ndim == 4 ? x->shape[0] * x->shape[1] : x->shape[0];
  int64_t S = pt_tensor_numel(x) / (planes ? planes : 1);
  pt_tensor *mask, *y;
  if ((st = pt_tensor_empty(ctx, PT_FLOAT64, 1, &planes, &mask))) return st;
  double *m = pt_tensor_data(mask);
  /* evaluation mode (or p = 0) is the identity; it still records a node so gradients flow */
  for (int64_t i = 0; i < planes; i++)
    m[i] = (!training || p == 0) ? 1.0 : (p >= 1 || pt_rng_uniform(&ctx->rng) < p) ? 0.0 : 1.0 / (1.0 - p);
  if ((st = scale_by_mask(ctx, x, mask, S, &y))) {
    pt_tensor_release(mask);
    return st;
  }
  pt_node *node;
  if ((st = pt_autograd_record(ctx, y, "Dropout2dBackward", dropout2d_backward, 1, &x, &node))) {
    pt_tensor_release(mask);
    pt_tensor_release(y);
    return st;
  }
  if (node) {
    pt_node_save(node, 0, pt_tensor_retain(mask));
    node->ints[0] = S;
    node->n_ints = 1;
  }
  pt_tensor_release(mask);
  *out = y;
  return PT_OK;
}

static pt_status upsample_backward(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gin) {
  int64_t planes = node->ints[0];
  int H = (int)node->ints[1], W = (int)node->ints[2], sh = (int)node->ints[3], sw = (int)node->ints[4];
  pt_tensor *gy, *gx;
  pt_status st = scatter_buffers(ctx, node, gout, &gy, &gx);
  if (st) return st;
  int Ho = H * sh, Wo = W * sw;
  for (int64_t pl = 0; pl < planes; pl++)
    for (int oy = 0; oy < Ho; oy++)
      for (int ox = 0; ox < Wo; ox++) {
        int64_t src = (pl * Ho + oy) * Wo + ox, dst = (pl * H + oy / sh) * W + ox / sw;
        if (gx->dtype == PT_FLOAT32)
          ((float *)pt_tensor_data(gx))[dst] += ((const float *)pt_tensor_data(gy))[src];
        else
          ((double *)pt_tensor_data(gx))[dst] += ((const double *)pt_tensor_data(gy))[src];
      }
  pt_tensor_release(gy);
  gin[0] = gx;
  return PT_OK;
}

pt_status pt_upsample_nearest2d(pt_ctx *ctx, pt_tensor *x, int sh, int sw, pt_tensor **out) {
  const char *fn = "upsample_nearest2d";
  int64_t d[4];
  pt_status st;
  if ((st = check_floating(ctx, fn, "input", x)) || (st = as_nchw(ctx, fn, x, d))) return st;
  if (sh < 1 || sw < 1) return pt_fail(ctx, PT_EARG, "%s: scale factors must be positive integers", fn);
  int H = (int)d[2], W = (int)d[3], Ho = H * sh, Wo = W * sw;
  int64_t planes = d[0] * d[1], ys[4];
  int yn = out_shape(x, d[0], d[1], Ho, Wo, ys);
  pt_tensor *xc = NULL, *y = NULL;
  if ((st = pt_tensor_contiguous_raw(ctx, x, &xc)) || (st = pt_tensor_empty(ctx, x->dtype, yn, ys, &y))) goto done;
  size_t es = pt_dtype_size(x->dtype);
  const char *src = pt_tensor_data(xc);
  char *dst = pt_tensor_data(y);
  for (int64_t pl = 0; pl < planes; pl++)
    for (int oy = 0; oy < Ho; oy++)
      for (int ox = 0; ox < Wo; ox++)
        memcpy(dst + ((pl * Ho + oy) * Wo + ox) * (int64_t)es, src + ((pl * H + oy / sh) * W + ox / sw) * (int64_t)es, es);
  pt_node *node;
  if ((st = pt_autograd_record(ctx, y, "UpsampleNearest2dBackward", upsample_backward, 1, &x, &node))) goto done;
  if (node) {
    int64_t ints[5] = {planes, H, W, sh, sw};
    memcpy(node->ints, ints, sizeof ints);
    node->n_ints = 5;
  }
done:
  pt_tensor_release(xc);
  if (st) {
    pt_tensor_release(y);
    return st;
  }
  *out = y;
  return PT_OK;
}
