/* Winograd F(2x2, 5x5) for float32 convolutions (see conv_winograd.h).
 *
 * One output tile of 2x2 needs a 6x6 input tile d and the 5x5 filter g:
 *   y = A^T [ (G g G^T) . (B^T d B) ] A        (. is the element-wise product)
 * with the matrices below, derived by Toom-Cook at the points 0, 1, -1, 2, -1/2 and infinity
 * (rows of B^T scaled to integers, the scale moved into G). Those points keep the fp32 error
 * near 1.5e-6 of the output's scale on random data (0, +-1, +-2: 2.3e-6).
 *
 * Layout: channels last, so that every transform is a vector operation over 16 channels and
 * the GEMMs are dense: per block of images, V[p][tile][c] (p = one of the 36 tile positions),
 * U[p][c][o] and M[p][tile][o] = V[p] x U[p]. Channel counts are rounded up to WG_VL with
 * zeros, which the GEMMs carry through harmlessly.
 *
 *   B^T = [ 2  3 -4 -3  2  0 ]   G = [ 1/2    0     0     0     0   ]   A^T = [ 1 1  1 1   1  0 ]
 *         [ 0  2  5  1 -2  0 ]       [ 1/6   1/6   1/6   1/6   1/6  ]         [ 0 1 -1 2 -1/2 1 ]
 *         [ 0  2  1 -5  2  0 ]       [ 1/6  -1/6   1/6  -1/6   1/6  ]
 *         [ 0 -1 -2  1  2  0 ]       [ 1/30  1/15  2/15  4/15  8/15 ]
 *         [ 0 -2  1  2 -1  0 ]       [ 16/15 -8/15 4/15 -2/15  1/15 ]
 *         [ 0  2  3 -4 -3  2 ]       [ 0      0     0     0    1/2  ]
 */
#include "conv_winograd.h"

#include "blas.h"
#include "parallel.h"

#include <cblas.h>
#include <string.h>

#define WG_VL 16     /* channels per vector step */
#define WG_P 36      /* positions in a 6x6 tile */
#define WG_TILES 98 /* tiles per GEMM block: the block's V and M stay within L2 */

static const double wg_G[6][5] = {
    {1.0 / 2, 0, 0, 0, 0},
    {1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6},
    {1.0 / 6, -1.0 / 6, 1.0 / 6, -1.0 / 6, 1.0 / 6},
    {1.0 / 30, 1.0 / 15, 2.0 / 15, 4.0 / 15, 8.0 / 15},
    {16.0 / 15, -8.0 / 15, 4.0 / 15, -2.0 / 15, 1.0 / 15},
    {0, 0, 0, 0, 1.0 / 2},
};

typedef struct wg_dims {
  int N, C, H, W, O, ph, pw, Ho, Wo;
  int th, tw, tpi; /* tiles down, across, per image */
  int Hq, Wq;      /* the padded input plane the tiles cover: 2*th+4 by 2*tw+4 */
  int Cp, Op;      /* channel counts rounded up to WG_VL */
  int nb;          /* images per block */
  int64_t Tb;      /* tiles per block (nb * tpi): the row count the buffers hold */
} wg_dims;

static int round_up(int n, int m) { return (n + m - 1) / m * m; }

static void dims_init(wg_dims *d, int N, int C, int H, int W, int O, int ph, int pw, int Ho, int Wo) {
  *d = (wg_dims){.N = N, .C = C, .H = H, .W = W, .O = O, .ph = ph, .pw = pw, .Ho = Ho, .Wo = Wo};
  d->th = (Ho + 1) / 2;
  d->tw = (Wo + 1) / 2;
  d->tpi = d->th * d->tw;
  d->Hq = 2 * d->th + 4;
  d->Wq = 2 * d->tw + 4;
  d->Cp = round_up(C, WG_VL);
  d->Op = round_up(O, WG_VL);
  d->nb = d->tpi >= WG_TILES ? 1 : WG_TILES / d->tpi;
  if (d->nb > N) d->nb = N;
  d->Tb = (int64_t)d->nb * d->tpi;
}

bool pt_conv_winograd_applies(pt_dtype dt, int N, int C, int O, int kh, int kw, int Ho, int Wo,
                              const pt_conv2d_opts *o) {
  if (dt != PT_FLOAT32 || kh != 5 || kw != 5 || o->groups != 1 || o->stride[0] != 1 || o->stride[1] != 1 ||
      o->dilation[0] != 1 || o->dilation[1] != 1)
    return false;
  /* few channels: the transforms cost more than the GEMMs save (and rounding up to 16 wastes);
   * many: the transformed filters (36 per filter, twice in the backward, and a weight gradient
   * partial per thread) outgrow im2col's buffers */
  if (C < 8 || O < 8 || C > 1024 || O > 1024) return false;
  int64_t tpi = (int64_t)((Ho + 1) / 2) * ((Wo + 1) / 2);
  /* transforming the filters costs about as much as 5 tiles of the convolution: a batch with
   * fewer than 32 tiles in all is left to im2col */
  if ((int64_t)N * tpi < 32) return false;
  /* one image's transformed input and output must fit a modest buffer */
  return tpi * (round_up(C, WG_VL) + round_up(O, WG_VL)) * WG_P * (int64_t)sizeof(float) <= ((int64_t)8 << 20);
}

/* ---------------------------------------------------------------- the four transforms */

/* One image {C,H,W} into the zero-padded channels-last plane xq {Hq,Wq,Cp}; the border and the
 * channels past C were zeroed once and are never written. */
static void pack_input(const wg_dims *d, const float *restrict xn, float *restrict xq) {
  for (int c = 0; c < d->C; c++)
    for (int y = 0; y < d->H; y++) {
      const float *src = xn + ((int64_t)c * d->H + y) * d->W;
      float *dst = xq + ((int64_t)(y + d->ph) * d->Wq + d->pw) * d->Cp + c;
      for (int x = 0; x < d->W; x++) dst[(int64_t)x * d->Cp] = src[x];
    }
}

/* The 1-D transforms, each applied to the columns of a tile and then to its rows:
 * r = B^T d (6 -> 6), r = B v (6 -> 6, its transpose), r = A^T m (6 -> 2), r = A g (2 -> 6). */
static inline void wg_bt(const float d[6], float r[6]) {
  r[0] = 2 * d[0] + 3 * d[1] - 4 * d[2] - 3 * d[3] + 2 * d[4];
  r[1] = 2 * d[1] + 5 * d[2] + d[3] - 2 * d[4];
  r[2] = 2 * d[1] + d[2] - 5 * d[3] + 2 * d[4];
  r[3] = -d[1] - 2 * d[2] + d[3] + 2 * d[4];
  r[4] = -2 * d[1] + d[2] + 2 * d[3] - d[4];
  r[5] = 2 * d[1] + 3 * d[2] - 4 * d[3] - 3 * d[4] + 2 * d[5];
}

static inline void wg_b(const float v[6], float r[6]) {
  r[0] = 2 * v[0];
  r[1] = 3 * v[0] + 2 * v[1] + 2 * v[2] - v[3] - 2 * v[4] + 2 * v[5];
  r[2] = -4 * v[0] + 5 * v[1] + v[2] - 2 * v[3] + v[4] + 3 * v[5];
  r[3] = -3 * v[0] + v[1] - 5 * v[2] + v[3] + 2 * v[4] - 4 * v[5];
  r[4] = 2 * v[0] - 2 * v[1] + 2 * v[2] + 2 * v[3] - v[4] - 3 * v[5];
  r[5] = 2 * v[5];
}

static inline void wg_at(const float m[6], float r[2]) {
  r[0] = m[0] + m[1] + m[2] + m[3] + m[4];
  r[1] = m[1] - m[2] + 2 * m[3] - 0.5f * m[4] + m[5];
}

static inline void wg_a(const float g[2], float r[6]) {
  r[0] = g[0], r[1] = g[0] + g[1], r[2] = g[0] - g[1];
  r[3] = g[0] + 2 * g[1], r[4] = g[0] - 0.5f * g[1], r[5] = g[1];
}

/* dst[k * stride + l] = r[k][l]: one vector store per row (stores through six offsets of one
 * pointer in a single loop are not vectorised: the compiler cannot rule out overlap) */
static inline void store_rows(float *restrict dst, int64_t stride, const float r[6][WG_VL]) {
  for (int k = 0; k < 6; k++) memcpy(dst + k * stride, r[k], sizeof r[k]);
}

/* V[p][row0 + tile][c] = (B^T d B)[p] for every tile of one packed image */
static void transform_input(const wg_dims *d, const float *restrict xq, float *restrict V, int64_t row0) {
  const int64_t Cp = d->Cp, rs = (int64_t)d->Wq * Cp, ps = d->Tb * Cp;
  for (int ty = 0; ty < d->th; ty++)
    for (int tx = 0; tx < d->tw; tx++) {
      int64_t t = row0 + (int64_t)ty * d->tw + tx;
      for (int64_t c0 = 0; c0 < Cp; c0 += WG_VL) {
        float m[6][6][WG_VL]; /* B^T d: columns transformed */
        for (int j = 0; j < 6; j++) {
          const float *col = xq + (2 * ty) * rs + (int64_t)(2 * tx + j) * Cp + c0;
          for (int l = 0; l < WG_VL; l++) {
            float in[6] = {col[l], col[rs + l], col[2 * rs + l], col[3 * rs + l], col[4 * rs + l], col[5 * rs + l]}, out[6];
            wg_bt(in, out);
            for (int i = 0; i < 6; i++) m[i][j][l] = out[i];
          }
        }
        for (int i = 0; i < 6; i++) {
          float r[6][WG_VL];
          for (int l = 0; l < WG_VL; l++) {
            float in[6] = {m[i][0][l], m[i][1][l], m[i][2][l], m[i][3][l], m[i][4][l], m[i][5][l]}, out[6];
            wg_bt(in, out);
            for (int k = 0; k < 6; k++) r[k][l] = out[k];
          }
          store_rows(V + (int64_t)(i * 6) * ps + t * Cp + c0, ps, r);
        }
      }
    }
}

/* y {O,Ho,Wo} of one image = A^T M A (+ bias) from M[p][row0 + tile][o] */
static void transform_output(const wg_dims *d, const float *restrict M, int64_t row0, const float *bias,
                             float *restrict yn) {
  const int64_t Op = d->Op, ps = d->Tb * Op, plane = (int64_t)d->Ho * d->Wo;
  for (int ty = 0; ty < d->th; ty++)
    for (int tx = 0; tx < d->tw; tx++) {
      int64_t t = row0 + (int64_t)ty * d->tw + tx;
      bool full = 2 * ty + 1 < d->Ho && 2 * tx + 1 < d->Wo;
      for (int64_t o0 = 0; o0 < Op; o0 += WG_VL) {
        float s[2][6][WG_VL], r[2][2][WG_VL];
        for (int j = 0; j < 6; j++) {
          const float *in = M + (int64_t)j * ps + t * Op + o0;
          for (int l = 0; l < WG_VL; l++) {
            float v[6] = {in[l], in[6 * ps + l], in[12 * ps + l], in[18 * ps + l], in[24 * ps + l], in[30 * ps + l]}, out[2];
            wg_at(v, out);
            s[0][j][l] = out[0], s[1][j][l] = out[1];
          }
        }
        for (int a = 0; a < 2; a++)
          for (int l = 0; l < WG_VL; l++) {
            float v[6] = {s[a][0][l], s[a][1][l], s[a][2][l], s[a][3][l], s[a][4][l], s[a][5][l]}, out[2];
            wg_at(v, out);
            r[a][0][l] = out[0], r[a][1][l] = out[1];
          }
        int n = d->O - (int)o0 < WG_VL ? d->O - (int)o0 : WG_VL;
        for (int l = 0; l < n; l++) {
          float bv = bias ? bias[o0 + l] : 0;
          float *dst = yn + (o0 + l) * plane + (int64_t)(2 * ty) * d->Wo + 2 * tx;
          if (full) {
            dst[0] = r[0][0][l] + bv, dst[1] = r[0][1][l] + bv;
            dst[d->Wo] = r[1][0][l] + bv, dst[d->Wo + 1] = r[1][1][l] + bv;
            continue;
          }
          for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++)
              if (2 * ty + a < d->Ho && 2 * tx + b < d->Wo) dst[a * d->Wo + b] = r[a][b][l] + bv;
        }
      }
    }
}

/* gq {2*th, 2*tw, Op} from one image's output gradient {O,Ho,Wo} (past Ho/Wo/O stays zero);
 * db[o] += the plane's sum */
static void pack_grad(const wg_dims *d, const float *restrict gyn, float *restrict gq, float *db) {
  int64_t Wg = 2 * d->tw;
  for (int o = 0; o < d->O; o++) {
    float sum = 0;
    for (int y = 0; y < d->Ho; y++) {
      const float *src = gyn + ((int64_t)o * d->Ho + y) * d->Wo;
      float *dst = gq + (int64_t)y * Wg * d->Op + o;
      for (int x = 0; x < d->Wo; x++) {
        dst[(int64_t)x * d->Op] = src[x];
        sum += src[x];
      }
    }
    if (db) db[o] += sum;
  }
}

/* G[p][row0 + tile][o] = (A g A^T)[p]: the output transform's transpose */
static void transform_grad(const wg_dims *d, const float *restrict gq, float *restrict G, int64_t row0) {
  const int64_t Op = d->Op, rs = 2 * (int64_t)d->tw * Op, ps = d->Tb * Op;
  for (int ty = 0; ty < d->th; ty++)
    for (int tx = 0; tx < d->tw; tx++) {
      int64_t t = row0 + (int64_t)ty * d->tw + tx;
      for (int64_t o0 = 0; o0 < Op; o0 += WG_VL) {
        float h[6][2][WG_VL];
        for (int b = 0; b < 2; b++) {
          const float *in = gq + (2 * ty) * rs + (int64_t)(2 * tx + b) * Op + o0;
          for (int l = 0; l < WG_VL; l++) {
            float g[2] = {in[l], in[rs + l]}, out[6];
            wg_a(g, out);
            for (int i = 0; i < 6; i++) h[i][b][l] = out[i];
          }
        }
        for (int i = 0; i < 6; i++) {
          float r[6][WG_VL];
          for (int l = 0; l < WG_VL; l++) {
            float g[2] = {h[i][0][l], h[i][1][l]}, out[6];
            wg_a(g, out);
            for (int k = 0; k < 6; k++) r[k][l] = out[k];
          }
          store_rows(G + (int64_t)(i * 6) * ps + t * Op + o0, ps, r);
        }
      }
    }
}

/* dxq {Hq,Wq,Cp} += B dV B^T for every tile (the input transform's transpose; tiles overlap) */
static void transform_dinput(const wg_dims *d, const float *restrict dV, int64_t row0, float *restrict dxq) {
  const int64_t Cp = d->Cp, rs = (int64_t)d->Wq * Cp, ps = d->Tb * Cp;
  for (int ty = 0; ty < d->th; ty++)
    for (int tx = 0; tx < d->tw; tx++) {
      int64_t t = row0 + (int64_t)ty * d->tw + tx;
      for (int64_t c0 = 0; c0 < Cp; c0 += WG_VL) {
        float m[6][6][WG_VL]; /* rows transformed: m[i][k] = sum_j B^T[j][k] dV[i*6+j] */
        for (int i = 0; i < 6; i++) {
          const float *in = dV + (int64_t)(i * 6) * ps + t * Cp + c0;
          for (int l = 0; l < WG_VL; l++) {
            float v[6] = {in[l], in[ps + l], in[2 * ps + l], in[3 * ps + l], in[4 * ps + l], in[5 * ps + l]}, out[6];
            wg_b(v, out);
            for (int k = 0; k < 6; k++) m[i][k][l] = out[k];
          }
        }
        for (int k = 0; k < 6; k++) {
          float r[6][WG_VL];
          for (int l = 0; l < WG_VL; l++) {
            float v[6] = {m[0][k][l], m[1][k][l], m[2][k][l], m[3][k][l], m[4][k][l], m[5][k][l]}, out[6];
            wg_b(v, out);
            for (int i = 0; i < 6; i++) r[i][l] = out[i];
          }
          float *col = dxq + (2 * ty) * rs + (int64_t)(2 * tx + k) * Cp + c0;
          for (int i = 0; i < 6; i++)
            for (int l = 0; l < WG_VL; l++) col[i * rs + l] += r[i][l];
        }
      }
    }
}

/* dx {C,H,W} of one image += the interior of dxq */
static void unpack_dinput(const wg_dims *d, const float *restrict dxq, float *restrict dxn) {
  for (int c = 0; c < d->C; c++)
    for (int y = 0; y < d->H; y++) {
      const float *src = dxq + ((int64_t)(y + d->ph) * d->Wq + d->pw) * d->Cp + c;
      float *dst = dxn + ((int64_t)c * d->H + y) * d->W;
      for (int x = 0; x < d->W; x++) dst[x] += src[(int64_t)x * d->Cp];
    }
}

/* U[p][c][o] = (G g G^T)[p] for every filter g = w[o][c]; UT (may be NULL) the same as [p][o][c] */
static void transform_filters(const wg_dims *d, const float *w, float *U, float *UT) {
  const int64_t cpo = (int64_t)d->Cp * d->Op;
  memset(U, 0, (size_t)(WG_P * cpo) * sizeof(float));
  if (UT) memset(UT, 0, (size_t)(WG_P * cpo) * sizeof(float));
  for (int o = 0; o < d->O; o++)
    for (int c = 0; c < d->C; c++) {
      const float *g = w + ((int64_t)o * d->C + c) * 25;
      double gt[6][5]; /* G g */
      for (int i = 0; i < 6; i++)
        for (int kx = 0; kx < 5; kx++) {
          double s = 0;
          for (int ky = 0; ky < 5; ky++) s += wg_G[i][ky] * g[ky * 5 + kx];
          gt[i][kx] = s;
        }
      for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
          double s = 0;
          for (int kx = 0; kx < 5; kx++) s += gt[i][kx] * wg_G[j][kx];
          U[(i * 6 + j) * cpo + (int64_t)c * d->Op + o] = (float)s;
          if (UT) UT[(i * 6 + j) * cpo + (int64_t)o * d->Cp + c] = (float)s;
        }
    }
}

/* dw[o][c] += G^T dU[.][c][o] G */
static void untransform_filter_grad(const wg_dims *d, const float *dU, float *dw) {
  const int64_t cpo = (int64_t)d->Cp * d->Op;
  for (int o = 0; o < d->O; o++)
    for (int c = 0; c < d->C; c++) {
      double t[5][6]; /* G^T dU */
      for (int ky = 0; ky < 5; ky++)
        for (int j = 0; j < 6; j++) {
          double s = 0;
          for (int i = 0; i < 6; i++) s += wg_G[i][ky] * dU[(i * 6 + j) * cpo + (int64_t)c * d->Op + o];
          t[ky][j] = s;
        }
      float *g = dw + ((int64_t)o * d->C + c) * 25;
      for (int ky = 0; ky < 5; ky++)
        for (int kx = 0; kx < 5; kx++) {
          double s = 0;
          for (int j = 0; j < 6; j++) s += t[ky][j] * wg_G[j][kx];
          g[ky * 5 + kx] += (float)s;
        }
    }
}

/* ---------------------------------------------------------------- the passes, split over images */

typedef struct wg_job {
  wg_dims d;
  const float *x, *w, *b, *gy;
  float *y, *dx, *dw, *db;
  const float *U, *UT;
  char *scratch; /* per thread: scratch_bytes */
  size_t scratch_bytes;
  float *partials; /* per thread: dU {36,Cp,Op} then db {Op} */
  int64_t partial_floats;
} wg_job;

/* per-thread scratch: xq {Hq,Wq,Cp}, V {36,Tb,Cp}, then M {36,Tb,Op} (forward) or gq
 * {2th,2tw,Op}, G {36,Tb,Op}, dV {36,Tb,Cp} (backward) */
static size_t scratch_floats(const wg_dims *d, bool backward) {
  int64_t xq = (int64_t)d->Hq * d->Wq * d->Cp, V = WG_P * d->Tb * d->Cp, M = WG_P * d->Tb * d->Op;
  if (!backward) return (size_t)(xq + V + M);
  return (size_t)(xq + V + (int64_t)4 * d->tpi * d->Op + M + V);
}

static void forward_chunk(void *arg, int64_t b, int64_t e, int tid) {
  wg_job *j = arg;
  const wg_dims *d = &j->d;
  float *xq = (float *)(j->scratch + (size_t)tid * j->scratch_bytes);
  float *V = xq + (int64_t)d->Hq * d->Wq * d->Cp, *M = V + WG_P * d->Tb * d->Cp;
  memset(xq, 0, (size_t)d->Hq * d->Wq * d->Cp * sizeof(float));
  const int64_t in_img = (int64_t)d->C * d->H * d->W, out_img = (int64_t)d->O * d->Ho * d->Wo;
  for (int64_t n0 = b; n0 < e; n0 += d->nb) {
    int cnt = e - n0 < d->nb ? (int)(e - n0) : d->nb;
    for (int k = 0; k < cnt; k++) {
      pack_input(d, j->x + (n0 + k) * in_img, xq);
      transform_input(d, xq, V, (int64_t)k * d->tpi);
    }
    int rows = cnt * d->tpi;
    for (int p = 0; p < WG_P; p++)
      pt_sgemm_serial(CblasNoTrans, CblasNoTrans, rows, d->Op, d->Cp, 1, V + p * d->Tb * d->Cp, d->Cp,
                  j->U + (int64_t)p * d->Cp * d->Op, d->Op, 0, M + p * d->Tb * d->Op, d->Op);
    for (int k = 0; k < cnt; k++) transform_output(d, M, (int64_t)k * d->tpi, j->b, j->y + (n0 + k) * out_img);
  }
}

static void backward_chunk(void *arg, int64_t b, int64_t e, int tid) {
  wg_job *j = arg;
  const wg_dims *d = &j->d;
  float *xq = (float *)(j->scratch + (size_t)tid * j->scratch_bytes);
  float *V = xq + (int64_t)d->Hq * d->Wq * d->Cp, *gq = V + WG_P * d->Tb * d->Cp;
  float *G = gq + (int64_t)4 * d->tpi * d->Op, *dV = G + WG_P * d->Tb * d->Op;
  float *dU = j->partials + (size_t)tid * j->partial_floats, *db = j->db ? dU + WG_P * d->Cp * d->Op : NULL;
  memset(dU, 0, (size_t)j->partial_floats * sizeof(float));
  memset(xq, 0, (size_t)d->Hq * d->Wq * d->Cp * sizeof(float));
  memset(gq, 0, (size_t)4 * d->tpi * d->Op * sizeof(float));
  const int64_t in_img = (int64_t)d->C * d->H * d->W, out_img = (int64_t)d->O * d->Ho * d->Wo;
  for (int64_t n0 = b; n0 < e; n0 += d->nb) {
    int cnt = e - n0 < d->nb ? (int)(e - n0) : d->nb;
    for (int k = 0; k < cnt; k++) {
      pack_grad(d, j->gy + (n0 + k) * out_img, gq, db);
      transform_grad(d, gq, G, (int64_t)k * d->tpi);
    }
    int rows = cnt * d->tpi;
    if (j->dw) {
      for (int k = 0; k < cnt; k++) {
        pack_input(d, j->x + (n0 + k) * in_img, xq);
        transform_input(d, xq, V, (int64_t)k * d->tpi);
      }
      for (int p = 0; p < WG_P; p++)
        pt_sgemm_serial(CblasTrans, CblasNoTrans, d->Cp, d->Op, rows, 1, V + p * d->Tb * d->Cp,
                    d->Cp, G + p * d->Tb * d->Op, d->Op, 1, dU + (int64_t)p * d->Cp * d->Op, d->Op);
    }
    if (j->dx) {
      for (int p = 0; p < WG_P; p++)
        pt_sgemm_serial(CblasNoTrans, CblasNoTrans, rows, d->Cp, d->Op, 1, G + p * d->Tb * d->Op,
                    d->Op, j->UT + (int64_t)p * d->Op * d->Cp, d->Cp, 0, dV + p * d->Tb * d->Cp, d->Cp);
      for (int k = 0; k < cnt; k++) {
        /* xq is free here (the weight gradient is done with this block): it holds dx's plane */
        memset(xq, 0, (size_t)d->Hq * d->Wq * d->Cp * sizeof(float));
        transform_dinput(d, dV, (int64_t)k * d->tpi, xq);
        unpack_dinput(d, xq, j->dx + (n0 + k) * in_img);
      }
      /* pack_input relies on a zero border */
      memset(xq, 0, (size_t)d->Hq * d->Wq * d->Cp * sizeof(float));
    }
  }
}

pt_status pt_conv_winograd_forward(pt_ctx *ctx, const float *x, const float *w, const float *b, float *y,
                                   int N, int C, int H, int W, int O, int ph, int pw, int Ho, int Wo) {
  if (N <= 0) return PT_OK; /* an empty batch: no output to write */
  wg_job j = {.x = x, .w = w, .b = b, .y = y};
  dims_init(&j.d, N, C, H, W, O, ph, pw, Ho, Wo);
  int nthreads = pt_parallel_threads(ctx);
  j.scratch_bytes = scratch_floats(&j.d, false) * sizeof(float);
  float *U = pt_alloc(ctx, (size_t)(WG_P * j.d.Cp * j.d.Op) * sizeof(float));
  j.scratch = pt_alloc(ctx, j.scratch_bytes * (size_t)nthreads);
  if (!U || !j.scratch) {
    pt_free(U);
    pt_free(j.scratch);
    return PT_ENOMEM;
  }
  transform_filters(&j.d, w, U, NULL);
  j.U = U;
  pt_parallel_for(ctx, N, 1, forward_chunk, &j);
  pt_free(U);
  pt_free(j.scratch);
  return PT_OK;
}

pt_status pt_conv_winograd_backward(pt_ctx *ctx, const float *x, const float *w, const float *gy, float *dx,
                                    float *dw, float *db, int N, int C, int H, int W, int O, int ph, int pw,
                                    int Ho, int Wo) {
  if (N <= 0) return PT_OK; /* an empty batch adds nothing (no chunk would zero the partials) */
  wg_job j = {.x = x, .w = w, .gy = gy, .dx = dx, .dw = dw, .db = db};
  dims_init(&j.d, N, C, H, W, O, ph, pw, Ho, Wo);
  const wg_dims *d = &j.d;
  int nthreads = pt_parallel_threads(ctx);
  if (nthreads > N) nthreads = N;
  const size_t filters = (size_t)(WG_P * d->Cp * d->Op) * sizeof(float);
  j.scratch_bytes = scratch_floats(d, true) * sizeof(float);
  j.partial_floats = WG_P * (int64_t)d->Cp * d->Op + d->Op;
  float *U = dx ? pt_alloc(ctx, 2 * filters) : NULL;
  j.scratch = pt_alloc(ctx, j.scratch_bytes * (size_t)nthreads);
  j.partials = pt_alloc(ctx, (size_t)j.partial_floats * sizeof(float) * (size_t)nthreads);
  if ((dx && !U) || !j.scratch || !j.partials) {
    pt_free(U);
    pt_free(j.scratch);
    pt_free(j.partials);
    return PT_ENOMEM;
  }
  if (dx) {
    transform_filters(d, w, U, U + filters / sizeof(float));
    j.U = U;
    j.UT = U + filters / sizeof(float);
  }
  int used = pt_parallel_for(ctx, N, 1, backward_chunk, &j);
  /* the threads' partial sums in thread order: the same split gives the same bits */
  for (int t = 1; t < used; t++) {
    const float *p = j.partials + (size_t)t * j.partial_floats;
    for (int64_t i = 0; i < j.partial_floats; i++) j.partials[i] += p[i];
  }
  if (dw) untransform_filter_grad(d, j.partials, dw);
  if (db)
    for (int o = 0; o < O; o++) db[o] += j.partials[WG_P * (int64_t)d->Cp * d->Op + o];
  pt_free(U);
  pt_free(j.scratch);
  pt_free(j.partials);
  return PT_OK;
}
