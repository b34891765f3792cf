/* lib/conv_winograd.c against a direct convolution in double: forward, input, weight and bias
 * gradients (each alone too), odd output sizes, padding 0..3, channel counts that are not
 * multiples of the vector width, more images than one block; which layers take the path.
 * lib/conv.c's conv_transpose2d against its direct definition (every output gathers
 * x * w where oy = iy*stride - padding + ky*dilation), forward and the three gradients, in
 * float64 and float32, and its argument errors. */
#include <stdlib.h>
#include <string.h>

#include "conv.h"
#include "conv_winograd.h"
#include "testing.h"

static double *rand_buf(int64_t n, unsigned *seed) {
  double *p = malloc((size_t)n * sizeof *p);
  for (int64_t i = 0; i < n; i++) p[i] = (double)rand_r(seed) / RAND_MAX * 2 - 1;
  return p;
}

static float *to_float(const double *v, int64_t n) {
  float *p = malloc((size_t)(n ? n : 1) * sizeof *p);
  for (int64_t i = 0; i < n; i++) p[i] = (float)v[i];
  return p;
}

/* the largest |a - b| over n values, relative to the largest |b| */
static double rel_err(const float *a, const double *b, int64_t n) {
  double e = 0, m = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - b[i]);
    if (d > e) e = d;
    if (fabs(b[i]) > m) m = fabs(b[i]);
  }
  return m > 0 ? e / m : e;
}

static void check_case(pt_ctx *ctx, int N, int C, int H, int W, int O, int pad, unsigned seed) {
  int Ho = H + 2 * pad - 4, Wo = W + 2 * pad - 4;
  int64_t nx = (int64_t)N * C * H * W, nw = (int64_t)O * C * 25, ny = (int64_t)N * O * Ho * Wo;
  double *x = rand_buf(nx, &seed), *w = rand_buf(nw, &seed), *b = rand_buf(O, &seed), *gy = rand_buf(ny, &seed);
  /* reference: y = conv(x, w) + b, dx, dw, db from gy, all in double */
  double *y = calloc((size_t)ny, sizeof *y), *dx = calloc((size_t)nx, sizeof *dx),
         *dw = calloc((size_t)nw, sizeof *dw), *db = calloc((size_t)O, sizeof *db);
  for (int n = 0; n < N; n++)
    for (int o = 0; o < O; o++)
      for (int oy = 0; oy < Ho; oy++)
        for (int ox = 0; ox < Wo; ox++) {
          int64_t yi = (((int64_t)n * O + o) * Ho + oy) * Wo + ox;
          double s = b[o], g = gy[yi];
          db[o] += g;
          for (int c = 0; c < C; c++)
            for (int ky = 0; ky < 5; ky++)
              for (int kx = 0; kx < 5; kx++) {
                int iy = oy + ky - pad, ix = ox + kx - pad;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                int64_t xi = (((int64_t)n * C + c) * H + iy) * W + ix, wi = (((int64_t)o * C + c) * 5 + ky) * 5 + kx;
                s += x[xi] * w[wi];
                dx[xi] += g * w[wi];
                dw[wi] += g * x[xi];
              }
          y[yi] = s;
        }
  float *xf = to_float(x, nx), *wf = to_float(w, nw), *bf = to_float(b, O), *gyf = to_float(gy, ny);
  float *yf = malloc((size_t)ny * sizeof *yf);
  CHECK(pt_conv_winograd_forward(ctx, xf, wf, bf, yf, N, C, H, W, O, pad, pad, Ho, Wo) == PT_OK);
  CHECK(rel_err(yf, y, ny) < 1e-5);
  /* all three gradients, then each one alone (the others NULL) */
  for (int which = 0; which < 4; which++) {
    float *dxf = calloc((size_t)nx, sizeof *dxf), *dwf = calloc((size_t)nw, sizeof *dwf),
          *dbf = calloc((size_t)O, sizeof *dbf);
    bool want_x = which == 0 || which == 1, want_w = which == 0 || which == 2, want_b = which == 0 || which == 3;
    CHECK(pt_conv_winograd_backward(ctx, xf, wf, gyf, want_x ? dxf : NULL, want_w ? dwf : NULL,
                                    want_b ? dbf : NULL, N, C, H, W, O, pad, pad, Ho, Wo) == PT_OK);
    if (want_x) CHECK(rel_err(dxf, dx, nx) < 1e-5);
    if (want_w) CHECK(rel_err(dwf, dw, nw) < 1e-5);
    if (want_b) CHECK(rel_err(dbf, db, O) < 1e-5);
    if (!want_x) CHECK(dxf[0] == 0 && dxf[nx - 1] == 0); /* untouched */
    free(dxf);
    free(dwf);
    free(dbf);
  }
  free(x), free(w), free(b), free(gy), free(y), free(dx), free(dw), free(db);
  free(xf), free(wf), free(bf), free(gyf), free(yf);
}

static void test_winograd(pt_ctx *ctx) {
  check_case(ctx, 2, 32, 14, 14, 64, 2, 1); /* the CNN's second layer */
  check_case(ctx, 3, 9, 7, 9, 17, 2, 2);    /* odd output sizes: partial tiles */
  check_case(ctx, 1, 16, 8, 8, 8, 0, 3);    /* no padding */
  check_case(ctx, 5, 20, 5, 6, 33, 3, 4);   /* padding wider than the kernel's half */
  check_case(ctx, 30, 8, 6, 6, 8, 1, 5);    /* more images than a block of tiles (24 here) */
  /* an empty batch adds nothing to the gradients */
  float w[8 * 8 * 25] = {0}, dw[8 * 8 * 25] = {0}, db[8] = {0};
  CHECK(pt_conv_winograd_backward(ctx, NULL, w, NULL, NULL, dw, db, 0, 8, 6, 6, 8, 2, 2, 6, 6) == PT_OK);
  CHECK(dw[0] == 0 && dw[8 * 8 * 25 - 1] == 0 && db[0] == 0);
}

/* the direct definition of a transposed convolution and its gradients, in double */
typedef struct ct_case {
  int N, Ci, H, W, Co, g, kh, kw, s[2], p[2], op[2], d[2];
} ct_case;

static pt_tensor *tensor_of(pt_ctx *ctx, pt_dtype dt, int nd, const int64_t *shape, const double *v) {
  pt_tensor *t = NULL;
  if (pt_tensor_empty(ctx, dt, nd, shape, &t)) return NULL;
  int64_t n = pt_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    if (dt == PT_FLOAT32) ((float *)pt_tensor_data(t))[i] = (float)v[i];
    else ((double *)pt_tensor_data(t))[i] = v[i];
  }
  return t;
}

static double max_rel(const pt_tensor *t, const double *ref, int64_t n) {
  double e = 0, m = 0;
  for (int64_t i = 0; i < n; i++) {
    double a = t->dtype == PT_FLOAT32 ? ((const float *)pt_tensor_data(t))[i] : ((const double *)pt_tensor_data(t))[i];
    if (fabs(a - ref[i]) > e) e = fabs(a - ref[i]);
    if (fabs(ref[i]) > m) m = fabs(ref[i]);
  }
  return m > 0 ? e / m : e;
}

static void check_transpose(pt_ctx *ctx, const ct_case *c, pt_dtype dt, unsigned seed) {
  int Ho = (c->H - 1) * c->s[0] - 2 * c->p[0] + c->d[0] * (c->kh - 1) + c->op[0] + 1;
  int Wo = (c->W - 1) * c->s[1] - 2 * c->p[1] + c->d[1] * (c->kw - 1) + c->op[1] + 1;
  int Cog = c->Co / c->g, Cig = c->Ci / c->g;
  int64_t nx = (int64_t)c->N * c->Ci * c->H * c->W, nw = (int64_t)c->Ci * Cog * c->kh * c->kw,
          ny = (int64_t)c->N * c->Co * Ho * Wo;
  double *x = rand_buf(nx, &seed), *w = rand_buf(nw, &seed), *b = rand_buf(c->Co, &seed), *gy = rand_buf(ny, &seed);
  double *y = calloc((size_t)ny, sizeof *y), *dx = calloc((size_t)nx, sizeof *dx), *dw = calloc((size_t)nw, sizeof *dw),
         *db = calloc((size_t)c->Co, sizeof *db);
  for (int64_t i = 0; i < ny; i++) y[i] = b[(i / ((int64_t)Ho * Wo)) % c->Co];
  for (int64_t i = 0; i < ny; i++) db[(i / ((int64_t)Ho * Wo)) % c->Co] += gy[i];
  for (int n = 0; n < c->N; n++)
    for (int ci = 0; ci < c->Ci; ci++)
      for (int iy = 0; iy < c->H; iy++)
        for (int ix = 0; ix < c->W; ix++)
          for (int oc = 0; oc < Cog; oc++)
            for (int ky = 0; ky < c->kh; ky++)
              for (int kx = 0; kx < c->kw; kx++) {
                int oy = iy * c->s[0] - c->p[0] + ky * c->d[0], ox = ix * c->s[1] - c->p[1] + kx * c->d[1];
                if (oy < 0 || oy >= Ho || ox < 0 || ox >= Wo) continue;
                int co = (ci / Cig) * Cog + oc;
                int64_t xi = (((int64_t)n * c->Ci + ci) * c->H + iy) * c->W + ix;
                int64_t wi = (((int64_t)ci * Cog + oc) * c->kh + ky) * c->kw + kx;
                int64_t yi = (((int64_t)n * c->Co + co) * Ho + oy) * Wo + ox;
                y[yi] += x[xi] * w[wi];
                dx[xi] += gy[yi] * w[wi];
                dw[wi] += gy[yi] * x[xi];
              }
  int64_t xs[4] = {c->N, c->Ci, c->H, c->W}, ws[4] = {c->Ci, Cog, c->kh, c->kw}, bs[1] = {c->Co},
          ys[4] = {c->N, c->Co, Ho, Wo};
  pt_tensor *tx = tensor_of(ctx, dt, 4, xs, x), *tw = tensor_of(ctx, dt, 4, ws, w), *tb = tensor_of(ctx, dt, 1, bs, b),
            *tg = tensor_of(ctx, dt, 4, ys, gy), *out = NULL;
  tx->requires_grad = tw->requires_grad = tb->requires_grad = true;
  pt_conv_transpose2d_opts o = {.stride = {c->s[0], c->s[1]}, .padding = {c->p[0], c->p[1]},
                                .output_padding = {c->op[0], c->op[1]}, .dilation = {c->d[0], c->d[1]}, .groups = c->g};
  double tol = dt == PT_FLOAT32 ? 1e-5 : 1e-12;
  CHECK(pt_conv_transpose2d(ctx, tx, tw, tb, &o, &out) == PT_OK);
  if (out) {
    CHECK(out->ndim == 4 && out->shape[1] == c->Co && out->shape[2] == Ho && out->shape[3] == Wo);
    CHECK(max_rel(out, y, ny) < tol);
    CHECK(pt_backward(ctx, out, tg, false) == PT_OK);
    CHECK(tx->grad && max_rel(tx->grad, dx, nx) < tol);
    CHECK(tw->grad && max_rel(tw->grad, dw, nw) < tol);
    CHECK(tb->grad && max_rel(tb->grad, db, c->Co) < tol);
  }
  pt_tensor_release(out);
  pt_tensor_release(tx), pt_tensor_release(tw), pt_tensor_release(tb), pt_tensor_release(tg);
  free(x), free(w), free(b), free(gy), free(y), free(dx), free(dw), free(db);
}

static void test_transpose(pt_ctx *ctx) {
  static const ct_case cases[] = {
      {2, 3, 4, 4, 2, 1, 3, 3, {1, 1}, {0, 0}, {0, 0}, {1, 1}}, /* stride 1: the zero-padded copy */
      {2, 3, 4, 5, 4, 1, 3, 3, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {3, 4, 3, 4, 6, 2, 3, 2, {2, 1}, {1, 0}, {1, 0}, {1, 2}}, /* groups, dilation, output_padding */
      {2, 2, 3, 3, 2, 1, 2, 2, {1, 1}, {0, 0}, {1, 1}, {2, 2}}, /* output_padding < dilation */
      {5, 3, 3, 3, 2, 1, 1, 1, {1, 1}, {0, 0}, {0, 0}, {1, 1}}, /* 1x1: no im2col */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    check_transpose(ctx, &cases[i], PT_FLOAT64, 10 + (unsigned)i);
    check_transpose(ctx, &cases[i], PT_FLOAT32, 20 + (unsigned)i);
  }
  /* errors: a status and a message naming the function */
  int64_t xs[4] = {1, 3, 4, 4}, ws[4] = {3, 2, 3, 3}, w5[4] = {5, 2, 3, 3};
  pt_tensor *x = NULL, *w = NULL, *w_bad = NULL, *out = NULL;
  CHECK(pt_tensor_zeros(ctx, PT_FLOAT32, 4, xs, &x) == PT_OK);
  CHECK(pt_tensor_zeros(ctx, PT_FLOAT32, 4, ws, &w) == PT_OK);
  CHECK(pt_tensor_zeros(ctx, PT_FLOAT32, 4, w5, &w_bad) == PT_OK);
  pt_conv_transpose2d_opts o = {.stride = {2, 2}, .padding = {0, 0}, .output_padding = {2, 0}, .dilation = {1, 1}, .groups = 1};
  CHECK(pt_conv_transpose2d(ctx, x, w, NULL, &o, &out) == PT_EARG && !out);
  CHECK(strstr(ctx->err, "conv_transpose2d: output_padding {2,0} must be smaller than either stride {2,2}") != NULL);
  o.output_padding[0] = 0;
  CHECK(pt_conv_transpose2d(ctx, x, w_bad, NULL, &o, &out) == PT_ESHAPE && !out);
  CHECK(strstr(ctx->err, "conv_transpose2d: input has 3 channels, expected 5") != NULL);
  o.padding[0] = o.padding[1] = 9;
  CHECK(pt_conv_transpose2d(ctx, x, w, NULL, &o, &out) == PT_ESHAPE && !out);
  CHECK(strstr(ctx->err, "is too small") != NULL);
  pt_tensor_release(x), pt_tensor_release(w), pt_tensor_release(w_bad);
}

static void test_applies(void) {
  pt_conv2d_opts o = {.stride = {1, 1}, .padding = {2, 2}, .dilation = {1, 1}, .groups = 1};
  CHECK(pt_conv_winograd_applies(PT_FLOAT32, 64, 32, 64, 5, 5, 14, 14, &o));
  CHECK(!pt_conv_winograd_applies(PT_FLOAT64, 64, 32, 64, 5, 5, 14, 14, &o)); /* float64: im2col */
  CHECK(!pt_conv_winograd_applies(PT_FLOAT32, 64, 1, 32, 5, 5, 28, 28, &o));  /* too few channels */
  CHECK(!pt_conv_winograd_applies(PT_FLOAT32, 64, 32, 64, 3, 3, 14, 14, &o)); /* not 5x5 */
  pt_conv2d_opts s = o;
  s.stride[0] = 2;
  CHECK(!pt_conv_winograd_applies(PT_FLOAT32, 64, 32, 64, 5, 5, 14, 14, &s));
  pt_conv2d_opts g = o;
  g.groups = 2;
  CHECK(!pt_conv_winograd_applies(PT_FLOAT32, 64, 32, 64, 5, 5, 14, 14, &g));
  /* a plane whose transformed image would not fit the per-image buffer */
  CHECK(!pt_conv_winograd_applies(PT_FLOAT32, 1, 512, 512, 5, 5, 224, 224, &o));
  CHECK(!pt_conv_winograd_applies(PT_FLOAT32, 64, 2048, 64, 5, 5, 14, 14, &o)); /* too many channels */
  CHECK(!pt_conv_winograd_applies(PT_FLOAT32, 1, 32, 64, 5, 5, 6, 6, &o));    /* 9 tiles in all */
  CHECK(pt_conv_winograd_applies(PT_FLOAT32, 4, 32, 64, 5, 5, 6, 6, &o));     /* 36 */
}

int main(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  test_winograd(&ctx);
  test_applies();
  test_transpose(&ctx);
  return TEST_SUMMARY();
}
