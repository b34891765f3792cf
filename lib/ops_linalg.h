/* Linear algebra through OpenBLAS (cblas), with autograd.
 *
 * float32 goes to sgemm, float64 to dgemm; both operands must have the same floating dtype
 * (integer tensors are an error: convert with float() first). Operands whose last two dims
 * have a unit stride on either side are handed to BLAS as they are (a transposed view becomes
 * CblasTrans with the leading dimension taken from its strides); only truly non-contiguous
 * operands are copied. The output is a new contiguous tensor. Gradients for every input.
 * The BLAS thread count is left alone (the dispatcher owns it). */
#ifndef PT_OPS_LINALG_H
#define PT_OPS_LINALG_H

#include "tensor.h"

/* PyTorch's matmul: 1-D . 1-D -> 0-d; 2-D x 2-D; 1-D x 2-D and 2-D x 1-D (the added dim is
 * removed again); >= 3-D batched, batch dims broadcast. */
pt_status pt_matmul(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);
pt_status pt_mm(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);    /* 2-D x 2-D */
pt_status pt_bmm(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);   /* 3-D, same batch */
pt_status pt_mv(pt_ctx *ctx, pt_tensor *a, pt_tensor *v, pt_tensor **out);    /* 2-D x 1-D */
pt_status pt_dot(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out);   /* 1-D . 1-D -> 0-d */
pt_status pt_outer(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out); /* 1-D x 1-D -> 2-D */
/* beta * input + alpha * (a @ b); a, b 2-D, input broadcastable to the product's shape */
pt_status pt_addmm(pt_ctx *ctx, pt_tensor *input, pt_tensor *a, pt_tensor *b, double beta,
                   double alpha, pt_tensor **out);

#endif
