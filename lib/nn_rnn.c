/* See nn_rnn.h. Composed of tensor ops, one LSTM step was ~10 element-wise ops (each with its
 * own output, autograd node and backward) and a GRU step ~12: nn.GRU forward+backward ran at
 * 1.4x PyTorch's time. Here a step's element-wise work is one pass forward and one backward. */
#include "nn_rnn.h"

#include "dispatch.h"
#include "nn_impl.h"

#include <string.h>

/* d[0..n) = a + b, the gates' argument, where the activation then runs in place */
static void add_span(pt_dtype dt, void *d, const void *a, const void *b, int64_t n) {
  PT_DISPATCH_FLOAT(dt, {
    T *dp = d;
    const T *ap = a, *bp = b;
    for (int64_t i = 0; i < n; i++) dp[i] = ap[i] + bp[i];
  });
}

/* The checks both cells share: float tensors of one dtype, x_proj and gh of one shape whose last
 * dim is gates * H, the state s with the same leading dims and last dim H. *rows, *H out. */
static pt_status check_cell(pt_ctx *ctx, const char *fn, int gates, pt_tensor *x, pt_tensor *gh, pt_tensor *s,
                            const char *sname, int64_t *rows, int64_t *H) {
  char b1[PT_SHAPE_STR_MAX], b2[PT_SHAPE_STR_MAX];
  pt_status st;
  if ((st = check_float(ctx, fn, "x_proj", x))) return st;
  if ((st = check_same_dtype(ctx, fn, "gh", gh, x)) || (st = check_same_dtype(ctx, fn, sname, s, x))) return st;
  if (x->ndim < 1 || !same_shape(x, gh) || x->shape[x->ndim - 1] % gates != 0)
    return pt_fail(ctx, PT_ESHAPE, "%s: x_proj %s and gh %s must have one shape {..., %d*H}", fn,
                   shape_str(x, b1), shape_str(gh, b2), gates);
  int64_t h = x->shape[x->ndim - 1] / gates;
  bool ok = s->ndim == x->ndim && s->shape[s->ndim - 1] == h;
  for (int d = 0; ok && d + 1 < x->ndim; d++) ok = s->shape[d] == x->shape[d];
  if (!ok)
    return pt_fail(ctx, PT_ESHAPE, "%s: %s %s does not match x_proj %s (expected {..., %lld})", fn, sname,
                   shape_str(s, b1), shape_str(x, b2), (long long)h);
  *H = h;
  *rows = h ? pt_tensor_numel(s) / h : 0;
  return PT_OK;
}

/* A step's tensors: the contiguous forms of x_proj, gh and the state (new references), the
 * output and the activations kept for the backward (aux {rows, aux_width}). */
typedef struct cell_io {
  pt_tensor *in[3], *y, *aux;
  int64_t rows, H;
} cell_io;

static void cell_release(cell_io *io) {
  for (int k = 0; k < 3; k++) pt_tensor_release(io->in[k]);
  pt_tensor_release(io->aux);
  pt_tensor_release(io->y);
  memset(io, 0, sizeof *io);
}

/* Checks the inputs (check_cell) and makes io: y shaped like the state with a last dim of
 * out_per_h * H. On failure io holds nothing. */
static pt_status cell_begin(pt_ctx *ctx, const char *fn, int gates, pt_tensor *const in[3], const char *sname,
                            int out_per_h, int aux_per_h, cell_io *io) {
  memset(io, 0, sizeof *io);
  pt_status st = check_cell(ctx, fn, gates, in[0], in[1], in[2], sname, &io->rows, &io->H);
  if (st) return st;
  pt_tensor *s = in[2];
  int64_t shape[PT_MAX_DIMS], ashape[2] = {io->rows, aux_per_h * io->H};
  memcpy(shape, s->shape, sizeof shape);
  shape[s->ndim - 1] = out_per_h * io->H;
  for (int k = 0; k < 3 && !st; k++) st = pt_tensor_contiguous_raw(ctx, in[k], &io->in[k]);
  if (!st) st = pt_tensor_empty(ctx, s->dtype, s->ndim, shape, &io->y);
  if (!st) st = pt_tensor_empty(ctx, s->dtype, 2, ashape, &io->aux);
  if (st) cell_release(io);
  return st;
}

/* Records the step's node (inputs in[], saving aux and the contiguous inputs flagged in save,
 * in input order) and hands y over to *out; io holds nothing afterwards. */
static pt_status cell_end(pt_ctx *ctx, const char *name, pt_backward_fn backward, pt_tensor *const in[3],
                          const bool save[3], cell_io *io, pt_tensor **out) {
  pt_node *node;
  pt_status st = pt_autograd_record(ctx, io->y, name, backward, 3, in, &node);
  if (st) {
    cell_release(io);
    return st;
  }
  if (node) {
    int k = 0;
    pt_node_save(node, k++, io->aux);
    io->aux = NULL;
    for (int i = 0; i < 3; i++)
      if (save[i]) {
        pt_node_save(node, k++, io->in[i]);
        io->in[i] = NULL;
      }
    node->ints[0] = io->rows;
    node->ints[1] = io->H;
    node->n_ints = 2;
  }
  *out = io->y;
  io->y = NULL;
  cell_release(io);
  return PT_OK;
}

/* grad_out as a contiguous tensor of dt, and empty tensors like the node's inputs that need
 * gradients (grad_in[k], NULL for the others) */
static pt_status cell_grads_prep(pt_ctx *ctx, pt_node *node, pt_tensor *grad_out, pt_tensor **g,
                                 pt_tensor **grad_in) {
  pt_dtype dt = node->inputs[0]->dtype;
  pt_status st = grad_prep(ctx, grad_out, dt, g);
  if (st) return st;
  for (int k = 0; k < 3; k++) {
    grad_in[k] = NULL;
    pt_tensor *in = node->inputs[k];
    if (node->needs_grad[k] && (st = pt_tensor_empty(ctx, dt, in->ndim, in->shape, &grad_in[k]))) {
      for (int q = 0; q < k; q++) {
        pt_tensor_release(grad_in[q]);
        grad_in[q] = NULL;
      }
      pt_tensor_release(*g);
      return st;
    }
  }
  return PT_OK;
}

/* ===================================================================== LSTM */

/* saved: 0 aux {rows, 5H}: i f g o (activated) and tanh(c') per row, 1 c (contiguous);
 * ints: rows, H */
static pt_status lstm_backward(pt_ctx *ctx, pt_node *node, pt_tensor *grad_out, pt_tensor **grad_in) {
  pt_tensor *aux = node->saved[0], *c = node->saved[1], *g;
  int64_t rows = node->ints[0], H = node->ints[1];
  pt_status st = cell_grads_prep(ctx, node, grad_out, &g, grad_in);
  if (st) return st;
  PT_DISPATCH_FLOAT(aux->dtype, {
    const T *A = pt_tensor_data(aux), *C = pt_tensor_data(c), *G = pt_tensor_data(g);
    T *dx = grad_in[0] ? (T *)pt_tensor_data(grad_in[0]) : NULL;
    T *dgh = grad_in[1] ? (T *)pt_tensor_data(grad_in[1]) : NULL;
    T *dc = grad_in[2] ? (T *)pt_tensor_data(grad_in[2]) : NULL;
    T *dp = dx ? dx : dgh; /* where the gates' gradient is written (the other gets a copy) */
    for (int64_t r = 0; r < rows; r++) {
      const T *ig = A + r * 5 * H, *fg = ig + H, *gg = fg + H, *og = gg + H, *tc = og + H;
      const T *cr = C + r * H, *dh = G + r * 2 * H, *dcn = dh + H;
      T *drow = dp ? dp + r * 4 * H : NULL, *dcr = dc ? dc + r * H : NULL;
      for (int64_t j = 0; j < H; j++) {
        T dct = dcn[j] + dh[j] * og[j] * ((T)1 - tc[j] * tc[j]);
        if (dcr) dcr[j] = dct * fg[j];
        if (!drow) continue;
        drow[j] = dct * gg[j] * ig[j] * ((T)1 - ig[j]);
        drow[H + j] = dct * cr[j] * fg[j] * ((T)1 - fg[j]);
        drow[2 * H + j] = dct * ig[j] * ((T)1 - gg[j] * gg[j]);
        drow[3 * H + j] = dh[j] * tc[j] * og[j] * ((T)1 - og[j]);
      }
    }
    if (dx && dgh) memcpy(dgh, dx, (size_t)rows * 4 * (size_t)H * sizeof(T));
  });
  pt_tensor_release(g);
  return PT_OK;
}

pt_status pt_nn_lstm_cell(pt_ctx *ctx, pt_tensor *x_proj, pt_tensor *gh, pt_tensor *c, pt_tensor **out) {
  pt_tensor *inputs[3] = {x_proj, gh, c};
  cell_io io;
  pt_status st = cell_begin(ctx, "lstm_cell", 4, inputs, "c", 2, 5, &io);
  if (st) return st;
  int64_t rows = io.rows, H = io.H;
  pt_dtype dt = x_proj->dtype;
  size_t es = pt_dtype_size(dt);
  char *A = pt_tensor_data(io.aux), *Y = pt_tensor_data(io.y);
  const char *X = pt_tensor_data(io.in[0]), *GH = pt_tensor_data(io.in[1]);
  for (int64_t r = 0; r < rows; r++) { /* x_proj + gh, then i, f activated together, g, o */
    char *ar = A + (size_t)(r * 5 * H) * es, *ag = ar + (size_t)(2 * H) * es, *ao = ar + (size_t)(3 * H) * es;
    add_span(dt, ar, X + (size_t)(r * 4 * H) * es, GH + (size_t)(r * 4 * H) * es, 4 * H);
    pt_nn_act_span(dt, PT_ACT_SIGMOID, ar, ar, 2 * H);
    pt_nn_act_span(dt, PT_ACT_TANH, ag, ag, H);
    pt_nn_act_span(dt, PT_ACT_SIGMOID, ao, ao, H);
  }
  PT_DISPATCH_FLOAT(dt, { /* c' */
    const T *Ap = (const T *)A, *C = pt_tensor_data(io.in[2]);
    for (int64_t r = 0; r < rows; r++) {
      const T *ig = Ap + r * 5 * H, *fg = ig + H, *gg = fg + H, *cr = C + r * H;
      T *c2 = (T *)Y + r * 2 * H + H;
      for (int64_t j = 0; j < H; j++) c2[j] = fg[j] * cr[j] + ig[j] * gg[j];
    }
  });
  for (int64_t r = 0; r < rows; r++) /* tanh(c'), kept for the backward */
    pt_nn_act_span(dt, PT_ACT_TANH, Y + (size_t)(r * 2 * H + H) * es, A + (size_t)(r * 5 * H + 4 * H) * es, H);
  PT_DISPATCH_FLOAT(dt, { /* h' */
    const T *Ap = (const T *)A;
    for (int64_t r = 0; r < rows; r++) {
      const T *og = Ap + r * 5 * H + 3 * H, *tc = og + H;
      T *h2 = (T *)Y + r * 2 * H;
      for (int64_t j = 0; j < H; j++) h2[j] = og[j] * tc[j];
    }
  });
  static const bool save[3] = {false, false, true}; /* c */
  return cell_end(ctx, "LstmCellBackward", lstm_backward, inputs, save, &io, out);
}

/* ====================================================================== GRU */

/* saved: 0 aux {rows, 3H}: r z n per row, 1 gh (contiguous), 2 h (contiguous); ints: rows, H */
static pt_status gru_backward(pt_ctx *ctx, pt_node *node, pt_tensor *grad_out, pt_tensor **grad_in) {
  pt_tensor *aux = node->saved[0], *gh = node->saved[1], *h = node->saved[2], *g;
  int64_t rows = node->ints[0], H = node->ints[1];
  pt_status st = cell_grads_prep(ctx, node, grad_out, &g, grad_in);
  if (st) return st;
  PT_DISPATCH_FLOAT(aux->dtype, {
    const T *A = pt_tensor_data(aux), *GH = pt_tensor_data(gh), *Hp = pt_tensor_data(h), *G = pt_tensor_data(g);
    T *dx = grad_in[0] ? (T *)pt_tensor_data(grad_in[0]) : NULL;
    T *dgh = grad_in[1] ? (T *)pt_tensor_data(grad_in[1]) : NULL;
    T *dh = grad_in[2] ? (T *)pt_tensor_data(grad_in[2]) : NULL;
    for (int64_t r = 0; r < rows; r++) {
      const T *rg = A + r * 3 * H, *zg = rg + H, *ng = zg + H;
      const T *hn = GH + r * 3 * H + 2 * H, *hr = Hp + r * H, *gr = G + r * H;
      T *dxr = dx ? dx + r * 3 * H : NULL, *dghr = dgh ? dgh + r * 3 * H : NULL, *dhr = dh ? dh + r * H : NULL;
      for (int64_t j = 0; j < H; j++) {
        T dnp = gr[j] * ((T)1 - zg[j]) * ((T)1 - ng[j] * ng[j]);
        T drp = dnp * hn[j] * rg[j] * ((T)1 - rg[j]);
        T dzp = gr[j] * (hr[j] - ng[j]) * zg[j] * ((T)1 - zg[j]);
        if (dhr) dhr[j] = gr[j] * zg[j];
        if (dxr) {
          dxr[j] = drp;
          dxr[H + j] = dzp;
          dxr[2 * H + j] = dnp;
        }
        if (dghr) {
          dghr[j] = drp;
          dghr[H + j] = dzp;
          dghr[2 * H + j] = dnp * rg[j];
        }
      }
    }
  });
  pt_tensor_release(g);
  return PT_OK;
}

pt_status pt_nn_gru_cell(pt_ctx *ctx, pt_tensor *x_proj, pt_tensor *gh, pt_tensor *h, pt_tensor **out) {
  pt_tensor *inputs[3] = {x_proj, gh, h};
  cell_io io;
  pt_status st = cell_begin(ctx, "gru_cell", 3, inputs, "h", 1, 3, &io);
  if (st) return st;
  int64_t rows = io.rows, H = io.H;
  pt_dtype dt = x_proj->dtype;
  size_t es = pt_dtype_size(dt);
  char *A = pt_tensor_data(io.aux);
  const char *X = pt_tensor_data(io.in[0]), *GH = pt_tensor_data(io.in[1]);
  for (int64_t r = 0; r < rows; r++) { /* r and z together */
    char *ar = A + (size_t)(r * 3 * H) * es;
    add_span(dt, ar, X + (size_t)(r * 3 * H) * es, GH + (size_t)(r * 3 * H) * es, 2 * H);
    pt_nn_act_span(dt, PT_ACT_SIGMOID, ar, ar, 2 * H);
  }
  PT_DISPATCH_FLOAT(dt, { /* n's argument x_n + r gh_n, into n's slot */
    T *Ap = (T *)A;
    const T *Xp = (const T *)X, *GHp = (const T *)GH;
    for (int64_t r = 0; r < rows; r++) {
      const T *rg = Ap + r * 3 * H, *xn = Xp + r * 3 * H + 2 * H, *hn = GHp + r * 3 * H + 2 * H;
      T *ng = Ap + r * 3 * H + 2 * H;
      for (int64_t j = 0; j < H; j++) ng[j] = xn[j] + rg[j] * hn[j];
    }
  });
  for (int64_t r = 0; r < rows; r++) {
    char *ng = A + (size_t)(r * 3 * H + 2 * H) * es;
    pt_nn_act_span(dt, PT_ACT_TANH, ng, ng, H);
  }
  PT_DISPATCH_FLOAT(dt, { /* h' */
    const T *Ap = (const T *)A, *Hp = pt_tensor_data(io.in[2]);
    T *Y = pt_tensor_data(io.y);
    for (int64_t r = 0; r < rows; r++) {
      const T *zg = Ap + r * 3 * H + H, *ng = zg + H, *hr = Hp + r * H;
      T *yr = Y + r * H;
      for (int64_t j = 0; j < H; j++) yr[j] = ng[j] + zg[j] * (hr[j] - ng[j]);
    }
  });
  static const bool save[3] = {false, true, true}; /* gh, h */
  return cell_end(ctx, "GruCellBackward", gru_backward, inputs, save, &io, out);
}
