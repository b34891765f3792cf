/* Typed kernels for conv.c, included once per element type (Torch7's "generic" pattern).
 * Before including: real, REAL_IS_F32 (1 or 0), SUFFIX(name), GEMM (cblas_sgemm/cblas_dgemm). All tensors here are
 * contiguous NCHW buffers. */

/* Stride 1, no dilation, and a padded channel that fits CONV_PAD_MAX elements: im2col and
 * col2im go through one zero-padded copy of the channel, so every row of cols is a plain copy
 * (or add) of Wo elements without bounds checks. The checked loops below spent most of their
 * time on the edges of 14-element rows (the CNN's conv2: 80 -> 40 us per image). */
#ifndef CONV_PAD_MAX
#define CONV_PAD_MAX 8192
static bool conv_padded_path(int H, int W, int kh, int kw, int ph, int pw, int sh, int sw, int dh,
                             int dw, int Ho, int Wo) {
  return sh == 1 && sw == 1 && dh == 1 && dw == 1 && (int64_t)(H + 2 * ph) * (W + 2 * pw) <= CONV_PAD_MAX &&
         Ho + kh - 1 <= H + 2 * ph && Wo + kw - 1 <= W + 2 * pw;
}
#endif

static void SUFFIX(im2col_padded)(const real *x, int C, int H, int W, int kh, int kw, int ph, int pw,
                                  int Ho, int Wo, real *cols) {
  int Hp = H + 2 * ph, Wp = W + 2 * pw;
  real pad[CONV_PAD_MAX];
  for (int i = 0; i < Hp * Wp; i++) pad[i] = 0; /* the border stays zero for every channel */
  for (int c = 0; c < C; c++) {
    const real *xc = x + (int64_t)c * H * W;
    for (int y = 0; y < H; y++) memcpy(pad + (y + ph) * Wp + pw, xc + (int64_t)y * W, (size_t)W * sizeof(real));
    for (int ki = 0; ki < kh; ki++)
      for (int kj = 0; kj < kw; kj++) {
        real *dst = cols + ((int64_t)(c * kh + ki) * kw + kj) * Ho * Wo;
        const real *src = pad + ki * Wp + kj;
        for (int oy = 0; oy < Ho; oy++, dst += Wo, src += Wp)
          for (int ox = 0; ox < Wo; ox++) dst[ox] = src[ox];
      }
  }
}

static void SUFFIX(col2im_padded)(const real *cols, int C, int H, int W, int kh, int kw, int ph, int pw,
                                  int Ho, int Wo, real *dx) {
  int Hp = H + 2 * ph, Wp = W + 2 * pw;
  real pad[CONV_PAD_MAX];
  for (int c = 0; c < C; c++) {
    for (int i = 0; i < Hp * Wp; i++) pad[i] = 0;
    /* each element gets the same additions in the same order as in the checked loop below,
     * from zero; dx is all zeros here (conv_backward's zero-filled gradient), so the results
     * are bitwise alike */
    for (int ki = 0; ki < kh; ki++)
      for (int kj = 0; kj < kw; kj++) {
        const real *src = cols + ((int64_t)(c * kh + ki) * kw + kj) * Ho * Wo;
        real *dst = pad + ki * Wp + kj;
        for (int oy = 0; oy < Ho; oy++, src += Wo, dst += Wp)
          for (int ox = 0; ox < Wo; ox++) dst[ox] += src[ox];
      }
    real *dxc = dx + (int64_t)c * H * W;
    for (int y = 0; y < H; y++) {
      const real *prow = pad + (y + ph) * Wp + pw;
      real *drow = dxc + (int64_t)y * W;
      for (int x = 0; x < W; x++) drow[x] += prow[x];
    }
  }
}

/* cols {C*kh*kw, Ho*Wo} from one image x {C,H,W} */
static void SUFFIX(im2col)(const real *x, int C, int H, int W, int kh, int kw, int ph, int pw,
                           int sh, int sw, int dh, int dw, int Ho, int Wo, real *cols) {
  if (conv_padded_path(H, W, kh, kw, ph, pw, sh, sw, dh, dw, Ho, Wo)) {
    SUFFIX(im2col_padded)(x, C, H, W, kh, kw, ph, pw, Ho, Wo, cols);
    return;
  }
  for (int c = 0; c < C; c++)
    for (int ki = 0; ki < kh; ki++)
      for (int kj = 0; kj < kw; kj++) {
        real *row = cols + ((int64_t)(c * kh + ki) * kw + kj) * Ho * Wo;
        for (int oy = 0; oy < Ho; oy++) {
          int iy = oy * sh - ph + ki * dh;
          real *dst = row + (int64_t)oy * Wo;
          if (iy < 0 || iy >= H) {
            for (int ox = 0; ox < Wo; ox++) dst[ox] = 0;
            continue;
          }
          const real *src = x + ((int64_t)c * H + iy) * W;
          int off = kj * dw - pw;
          if (sw == 1) {
            /* contiguous middle part */
            int lo = off < 0 ? -off : 0;
            int hi = W - off < Wo ? W - off : Wo;
            if (hi < lo) hi = lo;
            for (int ox = 0; ox < lo; ox++) dst[ox] = 0;
            memcpy(dst + lo, src + lo + off, (size_t)(hi - lo) * sizeof(real));
            for (int ox = hi; ox < Wo; ox++) dst[ox] = 0;
          } else {
            for (int ox = 0; ox < Wo; ox++) {
              int ix = ox * sw + off;
              dst[ox] = (ix >= 0 && ix < W) ? src[ix] : 0;
            }
          }
        }
      }
}

/* dx {C,H,W} += col2im(cols) */
static void SUFFIX(col2im)(const real *cols, int C, int H, int W, int kh, int kw, int ph, int pw,
                           int sh, int sw, int dh, int dw, int Ho, int Wo, real *dx) {
  if (conv_padded_path(H, W, kh, kw, ph, pw, sh, sw, dh, dw, Ho, Wo)) {
    SUFFIX(col2im_padded)(cols, C, H, W, kh, kw, ph, pw, Ho, Wo, dx);
    return;
  }
  for (int c = 0; c < C; c++)
    for (int ki = 0; ki < kh; ki++)
      for (int kj = 0; kj < kw; kj++) {
        const real *row = cols + ((int64_t)(c * kh + ki) * kw + kj) * Ho * Wo;
        for (int oy = 0; oy < Ho; oy++) {
          int iy = oy * sh - ph + ki * dh;
          if (iy < 0 || iy >= H) continue;
          real *dst = dx + ((int64_t)c * H + iy) * W;
          const real *src = row + (int64_t)oy * Wo;
          int off = kj * dw - pw;
          if (sw == 1) {
            /* the valid output columns form one range: a plain, vectorisable add */
            int lo = off < 0 ? -off : 0;
            int hi = W - off < Wo ? W - off : Wo;
            for (int ox = lo; ox < hi; ox++) dst[ox + off] += src[ox];
          } else {
            for (int ox = 0; ox < Wo; ox++) {
              int ix = ox * sw + off;
              if (ix >= 0 && ix < W) dst[ix] += src[ox];
            }
          }
        }
      }
}

/* y {N,O,Ho,Wo} = conv(x {N,C,H,W}, w {O,C/g,kh,kw}) + b */
static void SUFFIX(conv_forward)(const real *x, const real *w, const real *b, real *y, int n0, int N, int C,
                                 int H, int W, int O, int kh, int kw, int Ho, int Wo,
                                 const pt_conv2d_opts *o, real *cols) {
  int g = o->groups, Cg = C / g, Og = O / g;
  int K = Cg * kh * kw, P = Ho * Wo;
  /* a 1x1 kernel reading every input element once: the input plane is the column matrix. Not when
   * the planes differ in size: conv_transpose2d's output_padding makes its input-gradient conv's
   * input (H, W) larger than its output (Ho, Wo), and GEMMs over Ho*Wo then misplaced the rows */
  bool direct = kh == 1 && kw == 1 && o->stride[0] == 1 && o->stride[1] == 1 && o->padding[0] == 0 &&
                o->padding[1] == 0 && H == Ho && W == Wo;
  for (int n = n0; n < N; n++) {
    for (int gi = 0; gi < g; gi++) {
      const real *xg = x + ((int64_t)n * C + gi * Cg) * H * W;
      const real *colp = xg;
      if (!direct) {
        SUFFIX(im2col)(xg, Cg, H, W, kh, kw, o->padding[0], o->padding[1], o->stride[0], o->stride[1],
                       o->dilation[0], o->dilation[1], Ho, Wo, cols);
        colp = cols;
      }
      real *yg = y + ((int64_t)n * O + gi * Og) * P;
      GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, Og, P, K, 1, w + (int64_t)gi * Og * K, K, colp, P,
           0, yg, P);
      if (b)
        for (int oc = 0; oc < Og; oc++) {
          real bv = b[gi * Og + oc];
          real *row = yg + (int64_t)oc * P;
          for (int p = 0; p < P; p++) row[p] += bv;
        }
    }
  }
}

/* Given gy {N,O,Ho,Wo}: dx (may be NULL) = conv^T, dw (may be NULL) += gy x cols^T, db += sum */
static void SUFFIX(conv_backward)(const real *x, const real *w, const real *gy, real *dx, real *dw,
                                  real *db, int n0, int N, int C, int H, int W, int O, int kh, int kw,
                                  int Ho, int Wo, const pt_conv2d_opts *o, real *cols) {
  int g = o->groups, Cg = C / g, Og = O / g;
  int K = Cg * kh * kw, P = Ho * Wo;
  /* a 1x1 kernel reading every input element once: the input plane is the column matrix. Not when
   * the planes differ in size: conv_transpose2d's output_padding makes its input-gradient conv's
   * input (H, W) larger than its output (Ho, Wo), and GEMMs over Ho*Wo then misplaced the rows */
  bool direct = kh == 1 && kw == 1 && o->stride[0] == 1 && o->stride[1] == 1 && o->padding[0] == 0 &&
                o->padding[1] == 0 && H == Ho && W == Wo;
  for (int n = n0; n < N; n++) {
    for (int gi = 0; gi < g; gi++) {
      const real *xg = x + ((int64_t)n * C + gi * Cg) * H * W;
      const real *gyg = gy + ((int64_t)n * O + gi * Og) * P;
      if (dw) {
        const real *colp = xg;
        if (!direct) {
          SUFFIX(im2col)(xg, Cg, H, W, kh, kw, o->padding[0], o->padding[1], o->stride[0],
                         o->stride[1], o->dilation[0], o->dilation[1], Ho, Wo, cols);
          colp = cols;
        }
        GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, Og, K, P, 1, gyg, P, colp, P, 1,
             dw + (int64_t)gi * Og * K, K);
      }
      if (dx) {
        real *dxg = dx + ((int64_t)n * C + gi * Cg) * H * W;
        if (direct) {
          GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, K, P, Og, 1, w + (int64_t)gi * Og * K, K, gyg,
               P, 1, dxg, P);
        } else {
          GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, K, P, Og, 1, w + (int64_t)gi * Og * K, K, gyg,
               P, 0, cols, P);
          SUFFIX(col2im)(cols, Cg, H, W, kh, kw, o->padding[0], o->padding[1], o->stride[0],
                         o->stride[1], o->dilation[0], o->dilation[1], Ho, Wo, dxg);
        }
      }
      if (db)
        for (int oc = 0; oc < Og; oc++) {
          const real *row = gyg + (int64_t)oc * P;
          real s = 0;
          for (int p = 0; p < P; p++) s += row[p];
          db[gi * Og + oc] += s;
        }
    }
  }
}

/* 2x2/2 max pooling of one plane with W == 2*Wo, in two passes that vectorise: first the
 * pairs of each input row (flat over the whole plane: pair k is x[2k], x[2k+1]), then the
 * pairs of rows. The winner is the first maximum in the order (0,0) (0,1) (1,0) (1,1) and the
 * last NaN, as in the general path: taking each row's pair first keeps that order. Selects,
 * not branches (which of four values wins is random on real data). */
#ifndef MAX_POOL_FLAT_MAX
#define MAX_POOL_FLAT_MAX 4096
#endif
#if !(REAL_IS_F32 && defined(MAX_POOL_ROWS2_F32_AVX512)) /* else conv.c has an AVX-512 one */
static void SUFFIX(max_pool_rows2)(const real *restrict h0, const real *restrict h1, const int32_t *restrict c0,
                                   const int32_t *restrict c1, real *restrict yo, int32_t *restrict io, int Wo,
                                   int32_t i0, int32_t W) {
  for (int ox = 0; ox < Wo; ox++) {
    bool t = (h1[ox] > h0[ox]) | (h1[ox] != h1[ox]); /* | not ||: no branch */
    yo[ox] = t ? h1[ox] : h0[ox];
    io[ox] = (t ? i0 + W + c1[ox] : i0 + c0[ox]) + 2 * ox;
  }
}
#endif

static void SUFFIX(max_pool_plane2)(const real *restrict xp, real *restrict yp, int32_t *restrict ip, int H,
                                    int Wo) {
  real h[MAX_POOL_FLAT_MAX];
  int32_t hc[MAX_POOL_FLAT_MAX]; /* 1: the row's second column won */
  int n = H * Wo, W = 2 * Wo;
  for (int k = 0; k < n; k++) {
    real a = xp[2 * k], b = xp[2 * k + 1];
    bool tb = (b > a) | (b != b);
    h[k] = tb ? b : a;
    hc[k] = tb;
  }
  for (int oy = 0; oy < H / 2; oy++)
    SUFFIX(max_pool_rows2)(h + 2 * oy * Wo, h + (2 * oy + 1) * Wo, hc + 2 * oy * Wo, hc + (2 * oy + 1) * Wo,
                           yp + oy * Wo, ip + oy * Wo, Wo, 2 * oy * W, W);
}

/* planes: N*C images of H*W; y {planes,Ho,Wo}; idx holds the argmax position within the plane
 * (int32: half the memory traffic of int64; pool2d refuses planes of 2^31 elements or more) */
static inline void SUFFIX(max_pool_windows)(const real *x, real *y, int32_t *idx, int64_t p0,
                                            int64_t planes, int H, int W, int Ho, int Wo, int kh,
                                            int kw, int sh, int sw, int ph, int pw, int dy, int dx) {
  for (int64_t pl = p0; pl < planes; pl++) {
    const real *xp = x + pl * H * W;
    for (int oy = 0; oy < Ho; oy++)
      for (int ox = 0; ox < Wo; ox++) {
        int y0 = oy * sh - ph, x0 = ox * sw - pw;
        real best = 0;
        int32_t bi = -1;
        for (int ki = 0; ki < kh; ki++) {
          int iy = y0 + ki * dy;
          if (iy < 0 || iy >= H) continue;
          for (int kj = 0; kj < kw; kj++) {
            int ix = x0 + kj * dx;
            if (ix < 0 || ix >= W) continue;
            real v = xp[iy * W + ix];
            if (bi < 0 || v > best || v != v) {
              best = v;
              bi = iy * W + ix;
            }
          }
        }
        int64_t out = (pl * Ho + oy) * Wo + ox;
        /* a window that dilation and padding leave without an input element: the maximum of
         * nothing, -inf as PyTorch's (which also points it at an arbitrary element that then
         * takes its gradient; here it takes none) */
        y[out] = bi < 0 ? (real)-INFINITY : best;
        idx[out] = bi;
      }
  }
}

static void SUFFIX(max_pool_forward)(const real *x, real *y, int32_t *idx, int64_t p0, int64_t planes,
                                     int H, int W, int Ho, int Wo, const pt_pool2d_opts *o) {
  int dy = o->dilation[0] > 1 ? o->dilation[0] : 1, dx = o->dilation[1] > 1 ? o->dilation[1] : 1;
  if (o->kernel[0] == 2 && o->kernel[1] == 2 && o->stride[0] == 2 && o->stride[1] == 2 &&
      o->padding[0] == 0 && o->padding[1] == 0 && dy == 1 && dx == 1 && 2 * Ho <= H && 2 * Wo <= W) {
    /* the common 2x2/2 case: no bounds checks; NaN propagates as in the general path */
    for (int64_t pl = p0; pl < planes; pl++) {
      const real *xp = x + pl * H * W;
      real *yp = y + pl * Ho * Wo;
      int32_t *ip = idx + pl * Ho * Wo;
      if (W == 2 * Wo && H * Wo <= MAX_POOL_FLAT_MAX) {
        SUFFIX(max_pool_plane2)(xp, yp, ip, 2 * Ho, Wo);
        continue;
      }
      for (int oy = 0; oy < Ho; oy++) {
        const real *r0 = xp + 2 * oy * W, *r1 = r0 + W;
        for (int ox = 0; ox < Wo; ox++) {
          int32_t i0 = 2 * oy * W + 2 * ox;
          real a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1];
          bool tb = (b > a) | (b != b);
          real best = tb ? b : a;
          int32_t bi = tb ? i0 + 1 : i0;
          bool tc = (c > best) | (c != c);
          best = tc ? c : best;
          bi = tc ? i0 + W : bi;
          bool td = (d > best) | (d != d);
          yp[oy * Wo + ox] = td ? d : best;
          ip[oy * Wo + ox] = td ? i0 + W + 1 : bi;
        }
      }
    }
    return;
  }
  /* the window sizes in locals (stores into y and idx could otherwise alias o's fields), and
   * the undilated case as its own instance: a dilation multiply in the inner loops made 3x3
   * pooling 30% slower */
  if (dy == 1 && dx == 1)
    SUFFIX(max_pool_windows)(x, y, idx, p0, planes, H, W, Ho, Wo, o->kernel[0], o->kernel[1],
                             o->stride[0], o->stride[1], o->padding[0], o->padding[1], 1, 1);
  else
    SUFFIX(max_pool_windows)(x, y, idx, p0, planes, H, W, Ho, Wo, o->kernel[0], o->kernel[1],
                             o->stride[0], o->stride[1], o->padding[0], o->padding[1], dy, dx);
}

/* the fused ReLU of max pooling, outputs [b, e): a maximum <= 0 becomes 0 and takes no gradient
 * (index -1); NaN stays NaN without a gradient, as a ReLU's backward gives it none */
static void SUFFIX(max_pool_relu)(real *restrict y, int32_t *restrict idx, int64_t b, int64_t e) {
  for (int64_t i = b; i < e; i++) {
    /* a NaN maximum stays, with its gradient, as PyTorch's relu; so does an empty window's -inf
     * (max_pool2d(relu(x)) is -inf there too) */
    bool dead = y[i] <= 0 && idx[i] >= 0;
    idx[i] = dead ? -1 : idx[i];
    y[i] = dead ? 0 : y[i];
  }
}

static void SUFFIX(avg_pool_forward)(const real *x, real *y, int64_t p0, int64_t planes, int H, int W, int Ho,
                                     int Wo, const pt_pool2d_opts *o) {
  for (int64_t pl = p0; pl < planes; pl++) {
    const real *xp = x + pl * H * W;
    for (int oy = 0; oy < Ho; oy++)
      for (int ox = 0; ox < Wo; ox++) {
        int y0 = oy * o->stride[0] - o->padding[0], x0 = ox * o->stride[1] - o->padding[1];
        int y1 = y0 + o->kernel[0], x1 = x0 + o->kernel[1];
        int py1 = y1 < H + o->padding[0] ? y1 : H + o->padding[0];
        int px1 = x1 < W + o->padding[1] ? x1 : W + o->padding[1];
        int pad_count = (py1 - y0) * (px1 - x0);
        int ya = y0 < 0 ? 0 : y0, xa = x0 < 0 ? 0 : x0;
        int yb = y1 < H ? y1 : H, xb = x1 < W ? x1 : W;
        real s = 0;
        for (int iy = ya; iy < yb; iy++)
          for (int ix = xa; ix < xb; ix++) s += xp[iy * W + ix];
        int count = o->divisor_override ? o->divisor_override
                    : o->count_include_pad ? pad_count : (yb - ya) * (xb - xa);
        y[(pl * Ho + oy) * Wo + ox] = count != 0 ? s / count : 0;
      }
  }
}

static void SUFFIX(avg_pool_backward)(const real *gy, real *gx, int64_t planes, int H, int W, int Ho,
                                      int Wo, const pt_pool2d_opts *o) {
  for (int64_t pl = 0; pl < planes; pl++) {
    real *gp = gx + pl * H * W;
    for (int oy = 0; oy < Ho; oy++)
      for (int ox = 0; ox < Wo; ox++) {
        int y0 = oy * o->stride[0] - o->padding[0], x0 = ox * o->stride[1] - o->padding[1];
        int y1 = y0 + o->kernel[0], x1 = x0 + o->kernel[1];
        int py1 = y1 < H + o->padding[0] ? y1 : H + o->padding[0];
        int px1 = x1 < W + o->padding[1] ? x1 : W + o->padding[1];
        int pad_count = (py1 - y0) * (px1 - x0);
        int ya = y0 < 0 ? 0 : y0, xa = x0 < 0 ? 0 : x0;
        int yb = y1 < H ? y1 : H, xb = x1 < W ? x1 : W;
        int count = o->divisor_override ? o->divisor_override
                    : o->count_include_pad ? pad_count : (yb - ya) * (xb - xa);
        if (count == 0) continue;
        real g = gy[(pl * Ho + oy) * Wo + ox] / count;
        for (int iy = ya; iy < yb; iy++)
          for (int ix = xa; ix < xb; ix++) gp[iy * W + ix] += g;
      }
  }
}

/* planes [p0, p1); each window summed into 8 partial sums (one chain of dependent adds made
 * a global average pool 12x slower than PyTorch's), then added pairwise: a fixed order */
static void SUFFIX(adaptive_avg_forward)(const real *x, real *y, int64_t p0, int64_t p1, int H, int W,
                                         int Ho, int Wo) {
  for (int64_t pl = p0; pl < p1; pl++)
    for (int oy = 0; oy < Ho; oy++) {
      int y0 = (int)((int64_t)oy * H / Ho), y1 = (int)(((int64_t)(oy + 1) * H + Ho - 1) / Ho);
      for (int ox = 0; ox < Wo; ox++) {
        int x0 = (int)((int64_t)ox * W / Wo), x1 = (int)(((int64_t)(ox + 1) * W + Wo - 1) / Wo);
        real acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        /* whole rows (a global pool): one contiguous run */
        int runs = x0 == 0 && x1 == W ? 1 : y1 - y0;
        int64_t len = x0 == 0 && x1 == W ? (int64_t)(y1 - y0) * W : x1 - x0;
        for (int r = 0; r < runs; r++) {
          const real *run = x + (pl * H + y0 + r) * W + x0;
          int64_t i = 0;
          for (; i + 8 <= len; i += 8)
            for (int k = 0; k < 8; k++) acc[k] += run[i + k];
          for (int k = 0; i < len; i++, k++) acc[k] += run[i];
        }
        real s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        y[(pl * Ho + oy) * Wo + ox] = s / ((y1 - y0) * (x1 - x0));
      }
    }
}

static void SUFFIX(adaptive_avg_backward)(const real *gy, real *gx, int64_t planes, int H, int W, int Ho,
                                          int Wo) {
  for (int64_t pl = 0; pl < planes; pl++)
    for (int oy = 0; oy < Ho; oy++) {
      int y0 = (int)((int64_t)oy * H / Ho), y1 = (int)(((int64_t)(oy + 1) * H + Ho - 1) / Ho);
      for (int ox = 0; ox < Wo; ox++) {
        int x0 = (int)((int64_t)ox * W / Wo), x1 = (int)(((int64_t)(ox + 1) * W + Wo - 1) / Wo);
        real g = gy[(pl * Ho + oy) * Wo + ox] / ((y1 - y0) * (x1 - x0));
        for (int iy = y0; iy < y1; iy++)
          for (int ix = x0; ix < x1; ix++) gx[(pl * H + iy) * W + ix] += g;
      }
    }
}

/* adaptive max pooling of planes [p0, p1) with the bins of adaptive_avg_forward; idx gets each
 * maximum's position in its plane (the first maximum, the last NaN, as max pooling) */
static void SUFFIX(adaptive_max_forward)(const real *x, real *y, int32_t *idx, int64_t p0, int64_t p1, int H,
                                         int W, int Ho, int Wo) {
  for (int64_t pl = p0; pl < p1; pl++) {
    const real *xp = x + pl * H * W;
    for (int oy = 0; oy < Ho; oy++) {
      int y0 = (int)((int64_t)oy * H / Ho), y1 = (int)(((int64_t)(oy + 1) * H + Ho - 1) / Ho);
      for (int ox = 0; ox < Wo; ox++) {
        int x0 = (int)((int64_t)ox * W / Wo), x1 = (int)(((int64_t)(ox + 1) * W + Wo - 1) / Wo);
        real best = xp[y0 * W + x0];
        int32_t bi = y0 * W + x0;
        for (int iy = y0; iy < y1; iy++)
          for (int ix = x0; ix < x1; ix++) {
            real v = xp[iy * W + ix];
            if (v > best || v != v) {
              best = v;
              bi = iy * W + ix;
            }
          }
        y[(pl * Ho + oy) * Wo + ox] = best;
        idx[(pl * Ho + oy) * Wo + ox] = bi;
      }
    }
  }
}
