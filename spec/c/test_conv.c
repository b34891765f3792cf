/* lib/conv_winograd.c against a direct convolution in double: forward, input, weight and bias
 * gradients (each alone too), odd output sizes, padding 0..3, channel counts that are not
 * multiples of the vector width, more images than one block; which layers take the path. */
#include <stdlib.h>
#include <string.h>

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
  return TEST_SUMMARY();
}
