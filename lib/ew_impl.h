/* The element-wise engine's pieces that other op files build their own binary ops on (lib/
 * ops_special.c: xlog1py and the bitwise ops): the kernel type and its generator, operands
 * (a tensor or a number), numbers as dtype buffers and the broadcasting runner. Defined in
 * lib/ops_elementwise.c; not public API. */
#ifndef PT_EW_IMPL_H
#define PT_EW_IMPL_H

#include "ops_elementwise.h"
#include "tensor.h"

/* out[i*so] = f(a[i*sa], b[i*sb]), strides in elements */
typedef void (*pt_ew_bin_kernel)(int64_t n, const void *pa, int64_t sa, const void *pb, int64_t sb,
                                 void *po, int64_t so);

/* A pt_ew_bin_kernel `name` computing EXPR (of T x, T y) into OT, with the common stride
 * patterns (1/1, 1/0, 0/1, output contiguous) specialised so that the compiler vectorises them. */
#define PT_EW_BK(name, T, OT, EXPR)                                                              \
  static void name(int64_t n, const void *pa, int64_t sa, const void *pb, int64_t sb, void *po, \
                   int64_t so) {                                                                \
    const T *a = pa, *b = pb;                                                                   \
    OT *o = po;                                                                                 \
    if (so == 1 && sa == 1 && sb == 1) {                                                        \
      for (int64_t i = 0; i < n; i++) {                                                         \
        T x = a[i], y = b[i];                                                                   \
        o[i] = (OT)(EXPR);                                                                      \
      }                                                                                         \
    } else if (so == 1 && sa == 1 && sb == 0) {                                                 \
      const T y = b[0];                                                                         \
      for (int64_t i = 0; i < n; i++) {                                                         \
        T x = a[i];                                                                             \
        o[i] = (OT)(EXPR);                                                                      \
      }                                                                                         \
    } else if (so == 1 && sa == 0 && sb == 1) {                                                 \
      const T x = a[0];                                                                         \
      for (int64_t i = 0; i < n; i++) {                                                         \
        T y = b[i];                                                                             \
        o[i] = (OT)(EXPR);                                                                      \
      }                                                                                         \
    } else {                                                                                    \
      for (int64_t i = 0; i < n; i++) {                                                         \
        T x = a[i * sa], y = b[i * sb];                                                         \
        o[i * so] = (OT)(EXPR);                                                                 \
      }                                                                                         \
    }                                                                                           \
  }

/* an operand of a binary op: a tensor, or (t NULL) a number as Lua gave it */
typedef struct pt_ew_opnd {
  pt_tensor *t;
  double s;
  bool is_int;
  int64_t i; /* the integer exactly, when is_int */
} pt_ew_opnd;

static inline pt_ew_opnd pt_ew_opnd_tensor(pt_tensor *t) { return (pt_ew_opnd){t, 0.0, false, 0}; }
static inline pt_ew_opnd pt_ew_opnd_number(pt_number n) {
  return (pt_ew_opnd){NULL, n.d, n.is_int, n.is_int ? n.i : 0};
}
static inline pt_number pt_ew_opnd_value(pt_ew_opnd x) { return (pt_number){x.is_int, x.i, x.s}; }

/* the promoted dtype of x op y (PyTorch's rules for tensors, 0-d tensors and numbers) */
static inline pt_dtype pt_ew_result_type(pt_ew_opnd x, pt_ew_opnd y) {
  if (x.t && y.t) return pt_result_type(x.t, y.t);
  if (x.t) return pt_result_type_scalar(x.t, y.is_int);
  if (y.t) return pt_result_type_scalar(y.t, x.is_int);
  return x.is_int && y.is_int ? PT_INT64 : PT_FLOAT32;
}

/* s rounded toward zero into int64, saturating (NaN: 0): no undefined conversion */
static inline int64_t pt_ew_sat_i64(double s) {
  if (s != s) return 0;
  if (s >= 0x1p63) return INT64_MAX;
  if (s < -0x1p63) return INT64_MIN;
  return (int64_t)s;
}

/* n as dtype dt into buf (16 bytes): an integer exactly into int64 and its low bits into int32
 * and uint8 (PyTorch: uint8 & -1 is uint8 & 255), a float rounded toward zero into the integer
 * dtypes, nonzero into bool */
static inline void pt_ew_number_to_buf(void *buf, pt_dtype dt, pt_number n) {
  uint64_t u = (uint64_t)(n.is_int ? n.i : pt_ew_sat_i64(n.d));
  switch (dt) {
  case PT_INT64: *(int64_t *)buf = (int64_t)u; break;
  case PT_INT32: *(int32_t *)buf = (int32_t)(uint32_t)u; break;
  case PT_UINT8: *(uint8_t *)buf = (uint8_t)u; break;
  case PT_BOOL: *(uint8_t *)buf = n.is_int ? n.i != 0 : n.d != 0.0; break;
  /* an integer rounds once to float32, as torch (through a double it could round twice) */
  case PT_FLOAT32: *(float *)buf = n.is_int ? (float)n.i : (float)n.d; break;
  default: pt_write_from_double(buf, dt, n.d); break;
  }
}

/* the integer at p, of an integer dtype or bool */
static inline int64_t pt_ew_int_at(const void *p, pt_dtype dt) {
  switch (dt) {
  case PT_INT64: return *(const int64_t *)p;
  case PT_INT32: return *(const int32_t *)p;
  default: return *(const uint8_t *)p; /* uint8, bool */
  }
}

/* o (allocated with the broadcast shape, any layout) = k(x, y); x and y are tensors of the
 * kernel's dtype or, when NULL, the number in xb / yb (pt_ew_number_to_buf). Contiguous operands
 * (or one element) run as one span, over the intra-op threads when large; the rest row by row
 * over coalesced dimensions. */
void pt_ew_run_binary(const pt_ctx *ctx, pt_ew_bin_kernel k, pt_tensor *o, const pt_tensor *x,
                      const void *xb, const pt_tensor *y, const void *yb);

#endif
