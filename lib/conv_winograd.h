/* Winograd F(2x2, 5x5) convolution for float32 (conv.c's fast path for 5x5, stride-1 layers).
 * Each 6x6 input tile is transformed once per channel and each 5x5 filter once per call; the
 * convolution becomes 36 small GEMMs over (tiles x channels) with 36 multiplies per 2x2 outputs
 * instead of 100. Forward, input gradient and weight gradient all run in the transformed domain
 * (the backward passes are the exact transposes of the forward map). Internal to lib/. */
#ifndef PT_CONV_WINOGRAD_H
#define PT_CONV_WINOGRAD_H

#include "conv.h"

/* Whether conv2d with these sizes takes the Winograd path: float32, 5x5, stride 1, no
 * dilation, one group, 8..1024 channels in and out (enough for the transforms to pay, few
 * enough for its transformed filters), small planes (the padded per-image buffers stay in
 * cache) and a batch with enough tiles to pay for transforming the filters. */
bool pt_conv_winograd_applies(pt_dtype dt, int N, int C, int O, int kh, int kw, int Ho, int Wo,
                              const pt_conv2d_opts *o);

/* y {N,O,Ho,Wo} = conv(x {N,C,H,W}, w {O,C,5,5}) + b (b may be NULL); all contiguous. */
pt_status pt_conv_winograd_forward(pt_ctx *ctx, const float *x, const float *w, const float *b, float *y,
                                   int N, int C, int H, int W, int O, int ph, int pw, int Ho, int Wo);

/* From gy {N,O,Ho,Wo}: dx {N,C,H,W} += input gradient (dx may be NULL), dw {O,C,5,5} += weight
 * gradient (may be NULL), db {O} += bias gradient (may be NULL). */
pt_status pt_conv_winograd_backward(pt_ctx *ctx, const float *x, const float *w, const float *gy, float *dx,
                                    float *dw, float *db, int N, int C, int H, int W, int O, int ph, int pw,
                                    int Ho, int Wo);

#endif
