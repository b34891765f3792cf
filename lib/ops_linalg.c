/* Matrix products through OpenBLAS (see ops_linalg.h).
 *
 * Every product is one batched core: both operands are seen as stacks of matrices (1-D
 * operands get a unit dim added as a row or a column, removed again from the result). Each
 * matrix is passed to cblas_?gemm as it lies in memory when one of its last two strides is 1
 * (a transposed view becomes CblasTrans, the leading dimension comes from the other stride);
 * only other layouts are copied. When the right operand is a single matrix and the left
 * operand's batch dims stack its rows evenly (any contiguous batch), the whole batch is one gemm.
 * Backward uses the same core with transposed views, so it copies nothing either. */
#include "ops_linalg.h"

#include "blas.h"

#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "autograd.h"

typedef enum vmode { M_ASIS = 0, M_ROW = 1, M_COL = 2 } vmode;

static pt_status check_float_pair(pt_ctx *ctx, const char *fname, const pt_tensor *a,
                                  const pt_tensor *b) {
  if (!pt_dtype_is_floating(a->dtype) || !pt_dtype_is_floating(b->dtype))
    return pt_fail(ctx, PT_EARG,
                   "%s: expected float32 or float64 tensors, got %s and %s (convert with float())",
                   fname, pt_dtype_name(a->dtype), pt_dtype_name(b->dtype));
  if (a->dtype != b->dtype)
    return pt_fail(ctx, PT_EARG, "%s: expected tensors of the same dtype, got %s and %s", fname,
                   pt_dtype_name(a->dtype), pt_dtype_name(b->dtype));
  return PT_OK;
}

static pt_status fail_shapes(pt_ctx *ctx, const char *fname, const char *what, const pt_tensor *a,
                             const pt_tensor *b) {
  char sa[PT_SHAPE_STR_MAX], sb[PT_SHAPE_STR_MAX];
  return pt_fail(ctx, PT_ESHAPE, "%s: %s%s and %s%s", fname,
                 what ? what : "shapes ", pt_shape_format(a->ndim, a->shape, sa, sizeof sa),
                 pt_shape_format(b->ndim, b->shape, sb, sizeof sb),
                 what ? "" : " cannot be multiplied");
}

/* 1-D operands as a (1,k) row or a (k,1) column: a raw view (new reference). */
static pt_status as_matrix(pt_ctx *ctx, pt_tensor *t, vmode m, pt_tensor **out) {
  if (m == M_ROW) return pt_unsqueeze_raw(ctx, t, t->ndim - 1, out);
  if (m == M_COL) return pt_unsqueeze_raw(ctx, t, t->ndim, out);
  *out = pt_tensor_retain(t);
  return PT_OK;
}

/* How BLAS can read a rows x cols matrix with strides (s0, s1); false when it cannot. */
static bool blas_layout(int64_t rows, int64_t cols, int64_t s0, int64_t s1,
                        enum CBLAS_TRANSPOSE *tr, int64_t *ld) {
  int64_t minc = cols > 1 ? cols : 1, minr = rows > 1 ? rows : 1;
  if (s1 == 1 || cols <= 1) { /* row-major as it is */
    int64_t l = rows <= 1 ? minc : s0;
    if (l >= minc && l <= INT_MAX) {
      *tr = CblasNoTrans;
      *ld = l;
      return true;
    }
  }
  if (s0 == 1 || rows <= 1) { /* the row-major storage of its transpose */
    int64_t l = cols <= 1 ? minr : s1;
    if (l >= minr && l <= INT_MAX) {
      *tr = CblasTrans;
      *ld = l;
      return true;
    }
  }
  return false;
}

typedef struct operand {
  pt_tensor *t; /* a view BLAS can read (retained) */
  enum CBLAS_TRANSPOSE tr;
  int64_t ld;
} operand;

static pt_status prepare_operand(pt_ctx *ctx, pt_tensor *t, operand *op) {
  int nd = t->ndim;
  if (blas_layout(t->shape[nd - 2], t->shape[nd - 1], t->stride[nd - 2], t->stride[nd - 1], &op->tr,
                  &op->ld)) {
    op->t = pt_tensor_retain(t);
    return PT_OK;
  }
  pt_status st = pt_tensor_clone_raw(ctx, t, &op->t);
  if (st) return st;
  op->tr = CblasNoTrans;
  op->ld = t->shape[nd - 1] > 1 ? t->shape[nd - 1] : 1;
  return PT_OK;
}

static void gemm(const pt_ctx *ctx, pt_dtype dt, const operand *a, const operand *b, int64_t m,
                 int64_t n, int64_t k, double alpha, const void *ap, const void *bp, double beta,
                 void *cp, int64_t ldc) {
  pt_gemm(ctx, dt, a->tr, b->tr, m, n, k, alpha, ap, a->ld, bp, b->ld, beta, cp, ldc);
}

/* Can the batch dims of a (with b a single matrix) be folded into a's rows? */
static bool rows_stack(const pt_tensor *a, const operand *op) {
  if (op->tr != CblasNoTrans) return false;
  int nd = a->ndim;
  int64_t step = a->shape[nd - 2] > 1 ? a->stride[nd - 2] : op->ld;
  if (step != op->ld) return false;
  int64_t expect = op->ld * a->shape[nd - 2];
  for (int i = nd - 3; i >= 0; i--) {
    if (a->shape[i] != 1 && a->stride[i] != expect) return false;
    expect *= a->shape[i];
  }
  return true;
}

/* out = alpha * a @ b (+ beta * init broadcast to the result, when init != NULL).
 * a and b have >= 2 dims, matching inner sizes and broadcastable batch dims (checked by the
 * callers). The result is a new contiguous tensor with the broadcast batch dims. */
static pt_status bmm_core(pt_ctx *ctx, const char *fname, pt_tensor *a, pt_tensor *b, double alpha,
                          double beta, pt_tensor *init, pt_tensor **out) {
  int na = a->ndim, nb = b->ndim, nbatch; /* nbatch + 2 <= max(na, nb) <= PT_MAX_DIMS */
  int64_t m = a->shape[na - 2], k = a->shape[na - 1], n = b->shape[nb - 1];
  int64_t shape[PT_MAX_DIMS];
  pt_status st = pt_broadcast_shapes(ctx, fname, na - 2, a->shape, nb - 2, b->shape, &nbatch, shape);
  if (st) return st;
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
    return pt_fail(ctx, PT_ESHAPE, "%s: matrix sizes above %d are not supported by BLAS", fname,
                   INT_MAX);
  shape[nbatch] = m;
  shape[nbatch + 1] = n;
  pt_tensor *c = NULL;
  operand oa = {0}, ob = {0};
  if ((st = pt_tensor_empty(ctx, a->dtype, nbatch + 2, shape, &c))) return st;
  if (init) {
    if ((st = pt_tensor_copy_into(ctx, c, init))) goto done;
  } else {
    beta = 0;
  }
  int64_t batch = pt_shape_numel(nbatch, shape);
  if (batch == 0 || m == 0 || n == 0) goto done;
  if (k == 0) { /* an empty sum */
    if (beta == 0) {
      pt_tensor_fill(ctx, c, 0);
    } else if (beta != 1) {
      int64_t total = pt_tensor_numel(c);
      for (int64_t i = 0; i < total; i++) pt_tensor_set_flat(c, i, beta * pt_tensor_get_flat(c, i));
    }
    goto done;
  }
  if ((st = prepare_operand(ctx, a, &oa)) || (st = prepare_operand(ctx, b, &ob))) goto done;
  size_t es = pt_dtype_size(a->dtype);
  char *ap = pt_tensor_data(oa.t), *bp = pt_tensor_data(ob.t), *cp = pt_tensor_data(c);
  if (nb == 2 && rows_stack(oa.t, &oa)) {
    gemm(ctx, a->dtype, &oa, &ob, m * (batch), n, k, alpha, ap, bp, beta, cp, n);
    goto done;
  }
  /* batch strides of each operand under broadcasting (0 for broadcast dims) */
  int64_t sa[PT_MAX_DIMS], sb[PT_MAX_DIMS];
  for (int i = 0; i < nbatch; i++) {
    int ia = i - (nbatch - (na - 2)), ib = i - (nbatch - (nb - 2));
    sa[i] = ia < 0 || oa.t->shape[ia] == 1 ? 0 : oa.t->stride[ia];
    sb[i] = ib < 0 || ob.t->shape[ib] == 1 ? 0 : ob.t->stride[ib];
  }
  const int64_t *strides[2] = {sa, sb};
  pt_iter it;
  pt_iter_init(&it, nbatch, shape, 2, strides);
  int64_t i = 0;
  while (pt_iter_next(&it)) {
    gemm(ctx, a->dtype, &oa, &ob, m, n, k, alpha, ap + it.offset[0] * (int64_t)es,
         bp + it.offset[1] * (int64_t)es, beta, cp + i * m * n * (int64_t)es, n);
    i++;
  }
done:
  pt_tensor_release(oa.t);
  pt_tensor_release(ob.t);
  if (st) {
    pt_tensor_release(c);
    return st;
  }
  atomic_fetch_add(&c->storage->version, 1);
  *out = c;
  return PT_OK;
}

/* Gradients of out' = alpha * A' @ B' given g' (shaped like out'): new references, reduced to
 * the shapes of A' and B' (batch broadcasting summed away). */
static pt_status product_grads(pt_ctx *ctx, pt_tensor *am, pt_tensor *bm, pt_tensor *g,
                               double alpha, bool need_a, bool need_b, pt_tensor **ga,
                               pt_tensor **gb) {
  pt_tensor *t = NULL, *full = NULL;
  pt_status st = PT_OK;
  if (need_a) {
    if ((st = pt_transpose_raw(ctx, bm, bm->ndim - 2, bm->ndim - 1, &t))) return st;
    st = bmm_core(ctx, "backward", g, t, alpha, 0, NULL, &full);
    pt_tensor_release(t);
    if (st) return st;
    st = pt_sum_to_shape(ctx, full, am->ndim, am->shape, ga);
    pt_tensor_release(full);
    if (st) return st;
  }
  if (need_b) {
    pt_tensor *a2 = NULL, *g2 = NULL;
    if (bm->ndim == 2 && am->ndim > 2 && pt_tensor_is_contiguous(am) && pt_tensor_is_contiguous(g)) {
      /* one matrix times a stack: fold the stack into rows, one gemm instead of a sum over
       * per-batch products */
      int64_t k = am->shape[am->ndim - 1], n = g->shape[g->ndim - 1];
      int64_t rows = pt_tensor_numel(am) / (k > 0 ? k : 1);
      if (k > 0 && n > 0 && !pt_view_raw(ctx, am, 2, (int64_t[]){rows, k}, &a2) &&
          !pt_view_raw(ctx, g, 2, (int64_t[]){rows, n}, &g2)) {
        st = pt_transpose_raw(ctx, a2, 0, 1, &t);
        if (!st) st = bmm_core(ctx, "backward", t, g2, alpha, 0, NULL, gb);
        pt_tensor_release(t);
        pt_tensor_release(a2);
        pt_tensor_release(g2);
        if (st) goto fail;
        return PT_OK;
      }
      pt_tensor_release(a2);
      pt_tensor_release(g2);
    }
    if ((st = pt_transpose_raw(ctx, am, am->ndim - 2, am->ndim - 1, &t))) goto fail;
    st = bmm_core(ctx, "backward", t, g, alpha, 0, NULL, &full);
    pt_tensor_release(t);
    if (st) goto fail;
    st = pt_sum_to_shape(ctx, full, bm->ndim, bm->shape, gb);
    pt_tensor_release(full);
    if (st) goto fail;
  }
  return PT_OK;
fail:
  if (need_a) {
    pt_tensor_release(*ga);
    *ga = NULL;
  }
  return st;
}

/* A gradient shaped like src reshaped to (ndim, shape) of the same numel: new reference. */
static pt_status reshape_grad(pt_ctx *ctx, pt_tensor *g, int ndim, const int64_t *shape,
                              pt_tensor **out) {
  pt_tensor *c;
  pt_status st = pt_tensor_contiguous_raw(ctx, g, &c);
  if (st) return st;
  st = pt_view_raw(ctx, c, ndim, shape, out);
  pt_tensor_release(c);
  return st;
}

/* Backward of every product made by product(): inputs a, b; scalars[0..1] the view modes. */
static pt_status product_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *a = node->inputs[0], *b = node->inputs[1];
  pt_tensor *am = NULL, *bm = NULL, *gm = NULL, *ga = NULL, *gb = NULL;
  pt_status st;
  if ((st = as_matrix(ctx, a, (vmode)node->scalars[0], &am))) return st;
  if ((st = as_matrix(ctx, b, (vmode)node->scalars[1], &bm))) goto done;
  int64_t shape[PT_MAX_DIMS];
  int nbatch;
  if ((st = pt_broadcast_shapes(ctx, "matmul", am->ndim - 2, am->shape, bm->ndim - 2, bm->shape,
                                &nbatch, shape)))
    goto done;
  shape[nbatch] = am->shape[am->ndim - 2];
  shape[nbatch + 1] = bm->shape[bm->ndim - 1];
  if ((st = reshape_grad(ctx, g, nbatch + 2, shape, &gm))) goto done;
  if ((st = product_grads(ctx, am, bm, gm, 1.0, node->needs_grad[0], node->needs_grad[1], &ga, &gb)))
    goto done;
  if (ga && (st = reshape_grad(ctx, ga, a->ndim, a->shape, &gin[0]))) goto done;
  if (gb && (st = reshape_grad(ctx, gb, b->ndim, b->shape, &gin[1]))) goto done;
done:
  pt_tensor_release(am);
  pt_tensor_release(bm);
  pt_tensor_release(gm);
  pt_tensor_release(ga);
  pt_tensor_release(gb);
  return st;
}

/* The shared forward: a, b as matrices per (ma, mb), batched product, added unit dims removed. */
static pt_status product(pt_ctx *ctx, const char *fname, const char *node_name, pt_tensor *a,
                         pt_tensor *b, vmode ma, vmode mb, pt_tensor **out) {
  pt_status st = check_float_pair(ctx, fname, a, b);
  if (st) return st;
  pt_tensor *am = NULL, *bm = NULL, *r = NULL, *o = NULL;
  if ((st = as_matrix(ctx, a, ma, &am)) || (st = as_matrix(ctx, b, mb, &bm))) goto done;
  if (am->shape[am->ndim - 1] != bm->shape[bm->ndim - 2]) {
    st = fail_shapes(ctx, fname, NULL, a, b);
    goto done;
  }
  int nbatch;
  int64_t shape[PT_MAX_DIMS];
  if (pt_broadcast_shapes(ctx, fname, am->ndim - 2, am->shape, bm->ndim - 2, bm->shape, &nbatch,
                          shape)) {
    st = fail_shapes(ctx, fname, NULL, a, b);
    goto done;
  }
  if ((st = bmm_core(ctx, fname, am, bm, 1.0, 0.0, NULL, &r))) goto done;
  /* drop the unit dims that 1-D operands brought in */
  int nd = 0;
  for (int i = 0; i < r->ndim; i++) {
    if (i == r->ndim - 2 && ma == M_ROW && a->ndim == 1) continue;
    if (i == r->ndim - 1 && mb == M_COL && b->ndim == 1) continue;
    shape[nd++] = r->shape[i];
  }
  if (nd == r->ndim) {
    o = r;
    r = NULL;
  } else if ((st = pt_view_raw(ctx, r, nd, shape, &o))) {
    goto done;
  }
  pt_node *node;
  pt_tensor *ins[2] = {a, b};
  if ((st = pt_autograd_record(ctx, o, node_name, product_backward, 2, ins, &node))) goto done;
  if (node) {
    node->scalars[0] = ma;
    node->scalars[1] = mb;
  }
done:
  pt_tensor_release(am);
  pt_tensor_release(bm);
  pt_tensor_release(r);
  if (st) {
    pt_tensor_release(o);
    return st;
  }
  *out = o;
  return PT_OK;
}

pt_status pt_matmul(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out) {
  if (a->ndim == 0 || b->ndim == 0)
    return fail_shapes(ctx, "matmul", "both arguments need at least 1 dimension, got shapes ", a, b);
  return product(ctx, "matmul", "MatmulBackward", a, b, a->ndim == 1 ? M_ROW : M_ASIS,
                 b->ndim == 1 ? M_COL : M_ASIS, out);
}

pt_status pt_mm(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out) {
  if (a->ndim != 2 || b->ndim != 2)
    return fail_shapes(ctx, "mm", "expected 2-D tensors, got shapes ", a, b);
  return product(ctx, "mm", "MmBackward", a, b, M_ASIS, M_ASIS, out);
}

pt_status pt_bmm(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out) {
  if (a->ndim != 3 || b->ndim != 3)
    return fail_shapes(ctx, "bmm", "expected 3-D tensors, got shapes ", a, b);
  if (a->shape[0] != b->shape[0]) return fail_shapes(ctx, "bmm", NULL, a, b);
  return product(ctx, "bmm", "BmmBackward", a, b, M_ASIS, M_ASIS, out);
}

pt_status pt_mv(pt_ctx *ctx, pt_tensor *a, pt_tensor *v, pt_tensor **out) {
  if (a->ndim != 2 || v->ndim != 1)
    return fail_shapes(ctx, "mv", "expected a 2-D and a 1-D tensor, got shapes ", a, v);
  return product(ctx, "mv", "MvBackward", a, v, M_ASIS, M_COL, out);
}

pt_status pt_dot(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out) {
  if (a->ndim != 1 || b->ndim != 1)
    return fail_shapes(ctx, "dot", "expected 1-D tensors, got shapes ", a, b);
  return product(ctx, "dot", "DotBackward", a, b, M_ROW, M_COL, out);
}

pt_status pt_outer(pt_ctx *ctx, pt_tensor *a, pt_tensor *b, pt_tensor **out) {
  if (a->ndim != 1 || b->ndim != 1)
    return fail_shapes(ctx, "outer", "expected 1-D tensors, got shapes ", a, b);
  return product(ctx, "outer", "OuterBackward", a, b, M_COL, M_ROW, out);
}

/* --- addmm --- */

static pt_status addmm_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *input = node->inputs[0], *a = node->inputs[1], *b = node->inputs[2], *gc = NULL;
  double beta = node->scalars[0], alpha = node->scalars[1];
  pt_status st = pt_tensor_contiguous_raw(ctx, g, &gc);
  if (st) return st;
  if (node->needs_grad[0]) {
    pt_tensor *s = NULL;
    if ((st = pt_sum_to_shape(ctx, gc, input->ndim, input->shape, &s))) goto done;
    st = pt_tensor_empty(ctx, gc->dtype, input->ndim, input->shape, &gin[0]);
    if (!st) st = pt_tensor_copy_into(ctx, gin[0], s);
    pt_tensor_release(s);
    if (st) goto done;
    if (beta != 1) {
      int64_t n = pt_tensor_numel(gin[0]);
      if (gin[0]->dtype == PT_FLOAT32) {
        float *p = pt_tensor_data(gin[0]);
        for (int64_t i = 0; i < n; i++) p[i] *= (float)beta;
      } else {
        double *p = pt_tensor_data(gin[0]);
        for (int64_t i = 0; i < n; i++) p[i] *= beta;
      }
    }
  }
  st = product_grads(ctx, a, b, gc, alpha, node->needs_grad[1], node->needs_grad[2], &gin[1],
                     &gin[2]);
done:
  pt_tensor_release(gc);
  return st;
}

pt_status pt_addmm(pt_ctx *ctx, pt_tensor *input, pt_tensor *a, pt_tensor *b, double beta,
                   double alpha, pt_tensor **out) {
  if (a->ndim != 2 || b->ndim != 2)
    return fail_shapes(ctx, "addmm", "expected 2-D matrices, got shapes ", a, b);
  pt_status st = check_float_pair(ctx, "addmm", a, b);
  if (st) return st;
  if (input->dtype != a->dtype)
    return pt_fail(ctx, PT_EARG, "addmm: expected input of dtype %s, got %s",
                   pt_dtype_name(a->dtype), pt_dtype_name(input->dtype));
  if (a->shape[1] != b->shape[0]) return fail_shapes(ctx, "addmm", NULL, a, b);
  int64_t want[2] = {a->shape[0], b->shape[1]}, shape[PT_MAX_DIMS];
  int nd;
  if (input->ndim > 2 ||
      pt_broadcast_shapes(ctx, "addmm", input->ndim, input->shape, 2, want, &nd, shape) ||
      shape[0] != want[0] || shape[1] != want[1]) {
    char si[PT_SHAPE_STR_MAX], sw[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "addmm: input of shape %s cannot be broadcast to %s",
                   pt_shape_format(input->ndim, input->shape, si, sizeof si),
                   pt_shape_format(2, want, sw, sizeof sw));
  }
  pt_tensor *o;
  if ((st = bmm_core(ctx, "addmm", a, b, alpha, beta, beta != 0 ? input : NULL, &o))) return st;
  pt_node *node;
  pt_tensor *ins[3] = {input, a, b};
  if ((st = pt_autograd_record(ctx, o, "AddmmBackward", addmm_backward, 3, ins, &node))) {
    pt_tensor_release(o);
    return st;
  }
  if (node) {
    node->scalars[0] = beta;
    node->scalars[1] = alpha;
  }
  *out = o;
  return PT_OK;
}
