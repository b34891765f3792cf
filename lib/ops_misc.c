/* See ops_misc.h. scatter_reduce works on contiguous copies: a plan lists, for every position of
 * index (row-major), the element of the output it reduces into and the element of src it takes. */
#include "ops_misc.h"
#include "dispatch.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static const char *const FN = "scatter_reduce";

typedef struct sr_plan {
  int64_t np;          /* positions of index */
  int64_t *tgt, *srco; /* per position: offset in the contiguous output, in the contiguous src */
} sr_plan;

static void plan_free(sr_plan *p) {
  pt_free(p->tgt);
  pt_free(p->srco);
  p->tgt = p->srco = NULL;
}

/* nd >= 1 (a 0-d operand is seen as shape {1}); ix: index contiguous, int64, values validated */
static pt_status plan_build(pt_ctx *ctx, int nd, const int64_t *tshape, const int64_t *ishape,
                            const int64_t *sshape, int dim, const int64_t *ix, sr_plan *p) {
  int64_t tstride[PT_MAX_DIMS], sstride[PT_MAX_DIMS], at[PT_MAX_DIMS] = {0};
  pt_contiguous_strides(nd, tshape, tstride);
  pt_contiguous_strides(nd, sshape, sstride);
  p->np = pt_shape_numel(nd, ishape);
  size_t bytes = (size_t)(p->np ? p->np : 1) * sizeof(int64_t);
  p->tgt = pt_alloc(ctx, bytes);
  p->srco = pt_alloc(ctx, bytes);
  if (!p->tgt || !p->srco) {
    plan_free(p);
    return pt_fail(ctx, PT_ENOMEM, "%s: out of memory", FN);
  }
  for (int64_t q = 0; q < p->np; q++) {
    int64_t ot = 0, os = 0;
    for (int d = 0; d < nd; d++) {
      os += at[d] * sstride[d];
      ot += (d == dim ? ix[q] - 1 : at[d]) * tstride[d];
    }
    p->tgt[q] = ot;
    p->srco[q] = os;
    for (int d = nd - 1; d >= 0; d--) {
      if (++at[d] < ishape[d]) break;
      at[d] = 0;
    }
  }
  return PT_OK;
}

static inline bool never_nan(int64_t x) {
  (void)x;
  return false;
}
static inline bool float_nan(double x) { return isnan(x); }
#define ELEM_NAN(x) _Generic((x), float: float_nan, double: float_nan, default: never_nan)(x)

/* mean's division by a count: true division for floats, floor division for integers */
static inline float div_f(float a, int64_t c) { return a / (float)c; }
static inline double div_d(double a, int64_t c) { return a / (double)c; }
static inline int64_t div_floor(int64_t a, int64_t c) {
  int64_t q = a / c;
  return (a % c != 0 && a < 0) ? q - 1 : q;
}
#define MEAN_DIV(a, c) _Generic((a), float: div_f, double: div_d, default: div_floor)((a), (c))

/* BODY with T the element type, U its wrapping (unsigned) arithmetic type, LOW/HIGH the
 * identities of amax/amin */
#define SR_DISPATCH(dt, ...)                                                                       \
  do {                                                                                             \
    switch (dt) {                                                                                  \
    case PT_FLOAT32: {                                                                             \
      typedef float T;                                                                             \
      typedef float U;                                                                             \
      const T LOW = -INFINITY, HIGH = INFINITY;                                                    \
      __VA_ARGS__ break;                                                                           \
    }                                                                                              \
    case PT_FLOAT64: {                                                                             \
      typedef double T;                                                                            \
      typedef double U;                                                                            \
      const T LOW = -INFINITY, HIGH = INFINITY;                                                    \
      __VA_ARGS__ break;                                                                           \
    }                                                                                              \
    case PT_INT64: {                                                                               \
      typedef int64_t T;                                                                           \
      typedef uint64_t U;                                                                          \
      const T LOW = INT64_MIN, HIGH = INT64_MAX;                                                   \
      __VA_ARGS__ break;                                                                           \
    }                                                                                              \
    case PT_INT32: {                                                                               \
      typedef int32_t T;                                                                           \
      typedef uint32_t U;                                                                          \
      const T LOW = INT32_MIN, HIGH = INT32_MAX;                                                   \
      __VA_ARGS__ break;                                                                           \
    }                                                                                              \
    case PT_BOOL: {                                                                                \
      typedef uint8_t T;                                                                           \
      typedef uint8_t U;                                                                           \
      const T LOW = 0, HIGH = 1;                                                                   \
      __VA_ARGS__ break;                                                                           \
    }                                                                                              \
    default: {                                                                                     \
      typedef uint8_t T;                                                                           \
      typedef uint8_t U;                                                                           \
      const T LOW = 0, HIGH = UINT8_MAX;                                                           \
      __VA_ARGS__ break;                                                                           \
    }                                                                                              \
    }                                                                                              \
  } while (0)

/* out (nout elements, holding t's values) reduced with src through the plan, as torch's CPU
 * kernel: the written positions first set to the identity without include_self, then combined in
 * index order; mean divides by the count (count: nout scratch entries). */
static void sr_forward(pt_dtype dt, pt_scatter_reduce_op op, bool include_self, void *outp,
                       int64_t nout, const void *srcp, const sr_plan *p, int64_t *count) {
  SR_DISPATCH(dt, {
    T *o = outp;
    const T *s = srcp;
    if (!include_self) {
      T init = op == PT_SCATTER_PROD ? (T)1 : op == PT_SCATTER_AMAX ? LOW : op == PT_SCATTER_AMIN ? HIGH : (T)0;
      for (int64_t q = 0; q < p->np; q++) o[p->tgt[q]] = init;
    }
    for (int64_t q = 0; q < p->np; q++) {
      T *a = o + p->tgt[q];
      T b = s[p->srco[q]];
      switch (op) {
      case PT_SCATTER_SUM:
      case PT_SCATTER_MEAN: *a = (T)((U)*a + (U)b); break;
      case PT_SCATTER_PROD: *a = (T)((U)*a * (U)b); break;
      case PT_SCATTER_AMAX: *a = ELEM_NAN(b) ? b : (*a < b ? b : *a); break;
      case PT_SCATTER_AMIN: *a = ELEM_NAN(b) ? b : (b < *a ? b : *a); break;
      }
    }
    if (dt == PT_BOOL)
      for (int64_t i = 0; i < nout; i++) o[i] = o[i] != 0;
    if (op == PT_SCATTER_MEAN) {
      for (int64_t i = 0; i < nout; i++) count[i] = include_self;
      for (int64_t q = 0; q < p->np; q++) count[p->tgt[q]]++;
      for (int64_t i = 0; i < nout; i++) {
        o[i] = (T)MEAN_DIV(o[i], count[i] ? count[i] : 1);
      }
    }
  });
}

typedef struct sr_args {
  int nd, dim;
  int64_t tshape[PT_MAX_DIMS], ishape[PT_MAX_DIMS], sshape[PT_MAX_DIMS];
} sr_args;

static void shape_of(const pt_tensor *t, int64_t *shape) {
  if (t->ndim == 0) shape[0] = 1;
  else memcpy(shape, t->shape, (size_t)t->ndim * sizeof *shape);
}

/* contiguous copies of t, src and index (as int64), and the plan */
static pt_status sr_prepare(pt_ctx *ctx, const sr_args *a, pt_tensor *t, pt_tensor *src, pt_tensor *index,
                            pt_tensor **tc, pt_tensor **sc, pt_tensor **ic, sr_plan *p) {
  pt_tensor *i64 = NULL;
  *tc = *sc = *ic = NULL;
  pt_status st;
  if ((st = pt_tensor_contiguous_raw(ctx, t, tc)) || (st = pt_tensor_contiguous_raw(ctx, src, sc)) ||
      (st = pt_tensor_to_dtype_raw(ctx, index, PT_INT64, &i64)) || (st = pt_tensor_contiguous_raw(ctx, i64, ic)) ||
      (st = plan_build(ctx, a->nd, a->tshape, a->ishape, a->sshape, a->dim, pt_tensor_data(*ic), p))) {
    pt_tensor_release(i64);
    pt_tensor_release(*tc);
    pt_tensor_release(*sc);
    pt_tensor_release(*ic);
    *tc = *sc = *ic = NULL;
    return st;
  }
  pt_tensor_release(i64);
  return PT_OK;
}

/* a fresh contiguous result of self (contiguous, t's shape) reduced with src */
static pt_status sr_run(pt_ctx *ctx, pt_tensor *self, const void *srcp, const sr_plan *p, pt_scatter_reduce_op op,
                        bool include_self, pt_tensor **out) {
  pt_tensor *r = NULL;
  pt_status st = pt_tensor_clone_raw(ctx, self, &r);
  if (st) return st;
  int64_t n = pt_tensor_numel(r), *count = NULL;
  if (op == PT_SCATTER_MEAN && !(count = pt_alloc(ctx, (size_t)(n ? n : 1) * sizeof *count))) {
    pt_tensor_release(r);
    return pt_fail(ctx, PT_ENOMEM, "%s: out of memory", FN);
  }
  sr_forward(r->dtype, op, include_self, pt_tensor_data(r), n, srcp, p, count);
  pt_free(count);
  *out = r;
  return PT_OK;
}

/* the shapes from the saved contiguous copies of t, src and index */
static void args_from_node(const pt_node *node, sr_args *a) {
  a->dim = (int)node->ints[0];
  a->nd = node->saved[0]->ndim ? node->saved[0]->ndim : 1;
  shape_of(node->saved[0], a->tshape);
  shape_of(node->saved[1], a->sshape);
  shape_of(node->saved[2], a->ishape);
}

/* torch 1.13's scatter_reduce_backward, formula by formula */
static pt_status sr_backward(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gin) {
  pt_tensor *self = node->saved[0], *src = node->saved[1], *ic = node->saved[2];
  pt_scatter_reduce_op op = (pt_scatter_reduce_op)node->ints[1];
  bool include_self = node->ints[2] != 0;
  sr_args a;
  args_from_node(node, &a);
  sr_plan p = {0, NULL, NULL};
  pt_tensor *g = NULL, *gs = NULL, *gx = NULL, *r = NULL, *r2 = NULL, *tmp = NULL;
  void *scratch = NULL;
  pt_status st;
  if ((st = pt_tensor_contiguous_raw(ctx, gout, &g)) || (st = pt_tensor_empty_like(ctx, self, &gs)) ||
      (st = pt_tensor_zeros_like(ctx, src, &gx)) ||
      (st = plan_build(ctx, a.nd, a.tshape, a.ishape, a.sshape, a.dim, pt_tensor_data(ic), &p)))
    goto done;
  const int64_t n = pt_tensor_numel(self), ns = pt_tensor_numel(src);
  if (!(scratch = pt_alloc(ctx, (size_t)((n > ns ? n : ns) + 1) * 8 * 2))) {
    st = pt_fail(ctx, PT_ENOMEM, "%s: out of memory", FN);
    goto done;
  }
  if (op == PT_SCATTER_AMAX || op == PT_SCATTER_AMIN || op == PT_SCATTER_PROD) {
    if ((st = sr_run(ctx, self, pt_tensor_data(src), &p, op, include_self, &r))) goto done;
  }
  PT_DISPATCH_FLOAT(self->dtype, {
    const T *gp = pt_tensor_data(g), *xp = pt_tensor_data(self), *sp = pt_tensor_data(src);
    T *gsp = pt_tensor_data(gs), *gxp = pt_tensor_data(gx);
    switch (op) {
    case PT_SCATTER_SUM:
      for (int64_t i = 0; i < n; i++) gsp[i] = gp[i];
      for (int64_t q = 0; q < p.np; q++) gxp[p.srco[q]] = gp[p.tgt[q]];
      break;
    case PT_SCATTER_MEAN: {
      T *cnt = scratch; /* N as torch's: 1 for self (with include_self) + the scattered, 0 -> 1 */
      for (int64_t i = 0; i < n; i++) cnt[i] = include_self ? 1 : 0;
      for (int64_t q = 0; q < p.np; q++) cnt[p.tgt[q]] += 1;
      for (int64_t i = 0; i < n; i++) {
        if (cnt[i] == 0) cnt[i] = 1;
        gsp[i] = gp[i] / cnt[i];
      }
      for (int64_t q = 0; q < p.np; q++) gxp[p.srco[q]] = gsp[p.tgt[q]];
      break;
    }
    case PT_SCATTER_AMAX:
    case PT_SCATTER_AMIN: {
      const T *rp = pt_tensor_data(r);
      T *cnt = scratch;
      for (int64_t i = 0; i < n; i++) cnt[i] = xp[i] == rp[i] ? 1 : 0;
      for (int64_t q = 0; q < p.np; q++) cnt[p.tgt[q]] += sp[p.srco[q]] == rp[p.tgt[q]] ? 1 : 0;
      for (int64_t i = 0; i < n; i++) {
        T dist = gp[i] / cnt[i];
        cnt[i] = dist; /* the distributed gradient from here on */
        gsp[i] = (xp[i] == rp[i] ? (T)1 : (T)0) * dist;
      }
      for (int64_t q = 0; q < p.np; q++)
        gxp[p.srco[q]] = (sp[p.srco[q]] == rp[p.tgt[q]] ? (T)1 : (T)0) * cnt[p.tgt[q]];
      break;
    }
    case PT_SCATTER_PROD: {
      const T *rp = pt_tensor_data(r);
      /* self: grad * (the product with self's zeros as 1) / (self with zeros as 1) */
      if ((st = pt_tensor_clone_raw(ctx, self, &tmp))) break;
      T *mp = pt_tensor_data(tmp);
      for (int64_t i = 0; i < n; i++) mp[i] = mp[i] == 0 ? (T)1 : mp[i];
      if ((st = sr_run(ctx, tmp, sp, &p, op, include_self, &r2))) break;
      const T *m2 = pt_tensor_data(r2);
      for (int64_t i = 0; i < n; i++) gsp[i] = gp[i] * m2[i] / mp[i];
      pt_tensor_release(r2);
      r2 = NULL;
      /* src: grad * result / src, except for the only zero reduced into its position, whose
       * gradient is grad times the product of the others (src with that zero as 1) */
      int64_t *nz = scratch;
      for (int64_t i = 0; i < n; i++) nz[i] = 0;
      for (int64_t q = 0; q < p.np; q++) nz[p.tgt[q]] += sp[p.srco[q]] == 0;
      pt_tensor_release(tmp);
      tmp = NULL;
      if ((st = pt_tensor_clone_raw(ctx, src, &tmp))) break;
      T *ms = pt_tensor_data(tmp);
      for (int64_t q = 0; q < p.np; q++)
        if (sp[p.srco[q]] == 0 && nz[p.tgt[q]] == 1) ms[p.srco[q]] = 1;
      if ((st = sr_run(ctx, self, ms, &p, op, include_self, &r2))) break;
      const T *m3 = pt_tensor_data(r2);
      for (int64_t q = 0; q < p.np; q++) {
        int64_t tq = p.tgt[q], sq = p.srco[q];
        T sv = sp[sq];
        if (sv == 0 && nz[tq] == 1) gxp[sq] = gp[tq] * m3[tq];
        else gxp[sq] = gp[tq] * rp[tq] / (sv == 0 ? (T)1 : sv);
      }
      break;
    }
    }
    if (!st && !include_self)
      for (int64_t q = 0; q < p.np; q++) gsp[p.tgt[q]] = 0;
  });
  if (st) goto done;
  if (node->needs_grad[0]) {
    gin[0] = gs;
    gs = NULL;
  }
  if (node->needs_grad[1]) {
    gin[1] = gx;
    gx = NULL;
  }
done:
  plan_free(&p);
  pt_free(scratch);
  pt_tensor_release(g);
  pt_tensor_release(gs);
  pt_tensor_release(gx);
  pt_tensor_release(r);
  pt_tensor_release(r2);
  pt_tensor_release(tmp);
  return st;
}

static pt_status sr_check(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src,
                          pt_scatter_reduce_op op, sr_args *a) {
  char b1[PT_SHAPE_STR_MAX], b2[PT_SHAPE_STR_MAX];
  int nd = t->ndim ? t->ndim : 1;
  if (dim < 0 || dim >= nd)
    return pt_fail(ctx, PT_EARG, "%s: dimension %d out of range (tensor has %d dimensions)", FN, dim + 1, t->ndim);
  if (index->dtype != PT_INT64 && index->dtype != PT_INT32)
    return pt_fail(ctx, PT_EARG, "%s: index must be an int64 tensor, got %s", FN, pt_dtype_name(index->dtype));
  if (src->dtype != t->dtype)
    return pt_fail(ctx, PT_EARG, "%s: src must have the tensor's dtype (%s), got %s", FN, pt_dtype_name(t->dtype),
                   pt_dtype_name(src->dtype));
  if (op == PT_SCATTER_MEAN && t->dtype == PT_BOOL)
    return pt_fail(ctx, PT_EARG, "%s: reduce 'mean' is not supported for bool tensors", FN);
  if (index->ndim != t->ndim)
    return pt_fail(ctx, PT_ESHAPE, "%s: index must have as many dimensions as the tensor (%d), got %d", FN, t->ndim,
                   index->ndim);
  if (src->ndim != index->ndim)
    return pt_fail(ctx, PT_ESHAPE, "%s: src must have as many dimensions as index (%d), got %d", FN, index->ndim,
                   src->ndim);
  a->nd = nd;
  a->dim = dim;
  shape_of(t, a->tshape);
  shape_of(index, a->ishape);
  shape_of(src, a->sshape);
  for (int d = 0; d < t->ndim; d++) {
    if (d != dim && index->shape[d] > t->shape[d])
      return pt_fail(ctx, PT_ESHAPE, "%s: index of shape %s does not fit the tensor of shape %s in dimension %d", FN,
                     pt_shape_format(index->ndim, index->shape, b1, sizeof b1),
                     pt_shape_format(t->ndim, t->shape, b2, sizeof b2), d + 1);
    if (index->shape[d] > src->shape[d])
      return pt_fail(ctx, PT_ESHAPE, "%s: index of shape %s does not fit src of shape %s in dimension %d", FN,
                     pt_shape_format(index->ndim, index->shape, b1, sizeof b1),
                     pt_shape_format(src->ndim, src->shape, b2, sizeof b2), d + 1);
  }
  const int64_t size = a->tshape[dim];
  const int64_t *strides[1] = {index->stride};
  pt_iter it;
  pt_iter_init(&it, index->ndim, index->shape, 1, strides);
  const char *base = index->storage->data;
  while (pt_iter_next(&it)) {
    int64_t off = index->offset + it.offset[0];
    int64_t v = index->dtype == PT_INT64 ? ((const int64_t *)base)[off] : ((const int32_t *)base)[off];
    if (v < 1 || v > size)
      return pt_fail(ctx, PT_EARG, "%s: index %lld out of range for dimension %d of size %lld", FN, (long long)v,
                     dim + 1, (long long)size);
  }
  return PT_OK;
}

pt_status pt_scatter_reduce(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor *index, pt_tensor *src,
                            pt_scatter_reduce_op op, bool include_self, pt_tensor **out) {
  if ((unsigned)op > PT_SCATTER_AMIN) return pt_fail(ctx, PT_EARG, "%s: unknown reduction %d", FN, (int)op);
  sr_args a;
  pt_status st = sr_check(ctx, t, dim, index, src, op, &a);
  if (st) return st;
  pt_tensor *tc, *sc, *ic, *r = NULL;
  sr_plan p = {0, NULL, NULL};
  if ((st = sr_prepare(ctx, &a, t, src, index, &tc, &sc, &ic, &p))) return st;
  if ((st = sr_run(ctx, tc, pt_tensor_data(sc), &p, op, include_self, &r))) goto done;
  if (pt_dtype_is_floating(t->dtype)) {
    pt_node *node;
    pt_tensor *inputs[2] = {t, src};
    if ((st = pt_autograd_record(ctx, r, "ScatterReduceBackward", sr_backward, 2, inputs, &node))) goto done;
    if (node) {
      pt_node_save(node, 0, pt_tensor_retain(tc));
      pt_node_save(node, 1, pt_tensor_retain(sc));
      pt_node_save(node, 2, pt_tensor_retain(ic));
      node->ints[0] = a.dim;
      node->ints[1] = op;
      node->ints[2] = include_self;
      node->n_ints = 3;
    }
  }
done:
  plan_free(&p);
  pt_tensor_release(tc);
  pt_tensor_release(sc);
  pt_tensor_release(ic);
  if (st) {
    pt_tensor_release(r);
    return st;
  }
  *out = r;
  return PT_OK;
}
