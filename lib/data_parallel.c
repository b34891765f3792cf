/* DataParallel's autograd glue; see data_parallel.h for the picture. */
#include "data_parallel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "parallel.h"

#define DP_DEV_MAX 32

typedef struct dp_piece {
  int ndim;
  int64_t shape[PT_MAX_DIMS];
  bool needs; /* requires grad: part of the replica's root */
} dp_piece;

typedef struct dp_pos {
  bool gathered, stacked;
  int dim;
  dp_piece *pieces;  /* k */
  int64_t *offset;   /* k: start along dim in the gathered tensor (stacked: index) */
  pt_tensor **grad;  /* gradient slots: 1 when gathered, k per device */
  unsigned *mark;    /* backward pass that filled each slot */
} dp_pos;

typedef struct dp_in {
  pt_tensor *orig;
  pt_tensor **leaves; /* k */
  int64_t *starts;    /* k, or NULL */
  int dim;
  pt_tensor *grad;    /* computed by R for inputs reached through the chain */
} dp_in;

struct pt_dp_call {
  atomic_int refcount;
  int k;
  pt_tensor **roots;
  char (*dev)[DP_DEV_MAX];
  int npos, cappos;
  dp_pos *pos;
  int nin;
  dp_in *in;
  pt_tensor *H; /* the bundle tensor, held only until the creator releases the call */
};

/* ------------------------------------------------------------------ lifetime --- */

static pt_dp_call *call_retain(pt_dp_call *c) {
  atomic_fetch_add_explicit(&c->refcount, 1, memory_order_relaxed);
  return c;
}

/* Drop everything that keeps the replicas' graphs (and the inputs) alive. */
static void call_release_graph(pt_dp_call *c) {
  for (int i = 0; i < c->k; i++) {
    /* the replica's graph was recorded under its own tag: free its saved activations now, not
     * when the last Lua handle of a replica output (in a worker's state or the caller's) is
     * collected, which kept several steps' activations alive (a batch-256 CNN: 639 MB) */
    if (c->roots[i]) pt_graph_release_tagged(c->roots[i]->grad_fn);
    pt_tensor_release(c->roots[i]);
    c->roots[i] = NULL;
  }
  for (int e = 0; e < c->nin; e++) {
    dp_in *in = &c->in[e];
    for (int i = 0; i < c->k; i++) {
      pt_tensor_release(in->leaves[i]);
      in->leaves[i] = NULL;
    }
    pt_tensor_release(in->grad);
    in->grad = NULL;
    pt_tensor_release(in->orig);
    in->orig = NULL;
  }
  for (int p = 0; p < c->npos; p++) {
    dp_pos *ps = &c->pos[p];
    int slots = ps->gathered ? 1 : c->k;
    for (int s = 0; s < slots; s++) {
      pt_tensor_release(ps->grad[s]);
      ps->grad[s] = NULL;
    }
  }
}

static void call_unref(void *p) {
  pt_dp_call *c = p;
  if (!c || atomic_fetch_sub_explicit(&c->refcount, 1, memory_order_acq_rel) != 1) return;
  call_release_graph(c);
  pt_tensor_release(c->H);
  for (int e = 0; e < c->nin; e++) {
    free(c->in[e].leaves);
    free(c->in[e].starts);
  }
  for (int q = 0; q < c->npos; q++) {
    free(c->pos[q].pieces);
    free(c->pos[q].offset);
    free(c->pos[q].grad);
    free(c->pos[q].mark);
  }
  free(c->in);
  free(c->pos);
  free(c->roots);
  free(c->dev);
  free(c);
}

/* free_extra of the DataParallelBackward node: its saved data is the replicas' graphs */
static void call_free_from_R(void *p) {
  call_release_graph(p);
  call_unref(p);
}

void pt_dp_call_release(pt_dp_call *c) {
  if (!c) return;
  pt_tensor *H = c->H;
  c->H = NULL;
  pt_tensor_release(H); /* may free R, which drops its own reference */
  call_unref(c);
}

/* ------------------------------------------------------------------ helpers --- */

static bool same_shape(int na, const int64_t *a, int nb, const int64_t *b) {
  return na == nb && memcmp(a, b, (size_t)na * sizeof(int64_t)) == 0;
}

static pt_status scalar_zero(pt_ctx *ctx, pt_tensor **out) {
  int64_t one = 1;
  return pt_tensor_zeros(ctx, PT_FLOAT32, 1, &one, out);
}

/* ------------------------------------------------------------------ creation --- */

static pt_status chain_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin);
static pt_status dp_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin);

/* A tensor whose node hands out the gradients of inputs first.. (computed by R) to the engine;
 * up to 4 inputs per node, the 4th slot continuing the chain when more remain. */
static pt_status make_chain(pt_ctx *ctx, pt_dp_call *c, int first, pt_tensor **out) {
  int remaining = c->nin - first;
  bool tail = remaining > PT_NODE_MAX_INPUTS;
  int direct = tail ? PT_NODE_MAX_INPUTS - 1 : remaining;
  pt_tensor *ins[PT_NODE_MAX_INPUTS] = {NULL};
  for (int j = 0; j < direct; j++) ins[j] = c->in[first + j].orig;
  pt_tensor *next = NULL, *D = NULL;
  pt_status st;
  if (tail && (st = make_chain(ctx, c, first + direct, &next))) return st;
  if (tail) ins[direct] = next;
  if ((st = scalar_zero(ctx, &D))) {
    pt_tensor_release(next);
    return st;
  }
  pt_node *node = NULL;
  st = pt_autograd_record(ctx, D, "DataParallelInputsBackward", chain_backward,
                          direct + (tail ? 1 : 0), ins, &node);
  pt_tensor_release(next);
  if (!st && !node) st = pt_fail(ctx, PT_ESTATE, "DataParallel: inputs need no gradient");
  if (st) {
    pt_tensor_release(D);
    return st;
  }
  node->ints[0] = first;
  node->ints[1] = direct;
  node->ints[2] = tail;
  node->n_ints = 3;
  node->extra = call_retain(c);
  node->free_extra = call_unref;
  *out = D;
  return PT_OK;
}

pt_status pt_dp_call_new(pt_ctx *ctx, int k, pt_tensor *const *roots, const char *const *devices,
                         int n_inputs, const pt_dp_input *inputs, pt_dp_call **out) {
  *out = NULL;
  if (k < 1) return pt_fail(ctx, PT_EARG, "DataParallel: no replicas");
  pt_dp_call *c = calloc(1, sizeof *c);
  if (!c) return pt_fail(ctx, PT_ENOMEM, "DataParallel: out of memory");
  atomic_init(&c->refcount, 1);
  c->k = k;
  c->roots = calloc((size_t)k, sizeof *c->roots);
  c->dev = calloc((size_t)k, sizeof *c->dev);
  c->in = n_inputs ? calloc((size_t)n_inputs, sizeof *c->in) : NULL;
  if (!c->roots || !c->dev || (n_inputs && !c->in)) {
    call_unref(c);
    return pt_fail(ctx, PT_ENOMEM, "DataParallel: out of memory");
  }
  bool any_root = false;
  for (int i = 0; i < k; i++) {
    c->roots[i] = roots[i] ? pt_tensor_retain(roots[i]) : NULL;
    any_root = any_root || roots[i];
    snprintf(c->dev[i], DP_DEV_MAX, "%s", devices && devices[i] ? devices[i] : "?");
  }
  for (int e = 0; e < n_inputs; e++) {
    dp_in *in = &c->in[e];
    c->nin = e + 1;
    in->leaves = calloc((size_t)k, sizeof *in->leaves);
    in->starts = inputs[e].starts ? malloc((size_t)k * sizeof *in->starts) : NULL;
    if (!in->leaves || (inputs[e].starts && !in->starts)) {
      call_unref(c);
      return pt_fail(ctx, PT_ENOMEM, "DataParallel: out of memory");
    }
    in->orig = pt_tensor_retain(inputs[e].orig);
    in->dim = inputs[e].dim;
    for (int i = 0; i < k; i++) {
      in->leaves[i] = inputs[e].leaves[i] ? pt_tensor_retain(inputs[e].leaves[i]) : NULL;
      if (in->starts) in->starts[i] = inputs[e].starts[i];
    }
    if (!in->orig->requires_grad) {
      call_unref(c);
      return pt_fail(ctx, PT_EARG, "DataParallel: input %d does not require grad", e + 1);
    }
  }
  if (!ctx->grad_enabled || !any_root) {
    *out = c;
    return PT_OK;
  }
  /* R: the node of H; its engine inputs are the original inputs (or a dummy leaf) */
  pt_status st;
  pt_tensor *H = NULL, *dummy = NULL, *chain = NULL;
  pt_tensor *ins[PT_NODE_MAX_INPUTS] = {NULL};
  int nins, direct;
  bool tail = c->nin > PT_NODE_MAX_INPUTS;
  if ((st = scalar_zero(ctx, &H))) goto fail;
  if (c->nin == 0) {
    if ((st = scalar_zero(ctx, &dummy))) goto fail;
    dummy->requires_grad = true; /* never receives anything: R returns no gradient for it */
    ins[0] = dummy;
    nins = 1;
    direct = 0;
  } else {
    direct = tail ? PT_NODE_MAX_INPUTS - 1 : c->nin;
    for (int e = 0; e < direct; e++) ins[e] = c->in[e].orig;
    nins = direct;
    if (tail) {
      if ((st = make_chain(ctx, c, direct, &chain))) goto fail;
      ins[nins++] = chain;
    }
  }
  pt_node *R = NULL;
  if ((st = pt_autograd_record(ctx, H, "DataParallelBackward", dp_backward, nins, ins, &R))) goto fail;
  if (!R) {
    st = pt_fail(ctx, PT_ESTATE, "DataParallel: could not record the backward node");
    goto fail;
  }
  R->ints[0] = direct;
  R->ints[1] = tail;
  R->n_ints = 2;
  R->extra = call_retain(c);
  R->free_extra = call_free_from_R;
  c->H = H;
  pt_tensor_release(dummy);
  pt_tensor_release(chain);
  *out = c;
  return PT_OK;
fail:
  pt_tensor_release(H);
  pt_tensor_release(dummy);
  pt_tensor_release(chain);
  call_unref(c);
  return st;
}

static pt_status piece_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin);

static pt_status add_position(pt_ctx *ctx, pt_dp_call *c, pt_tensor *const *pieces, bool gathered,
                              int dim, dp_pos **out) {
  if (c->npos == c->cappos) {
    int cap = c->cappos ? 2 * c->cappos : 8;
    dp_pos *np = realloc(c->pos, (size_t)cap * sizeof *np);
    if (!np) return pt_fail(ctx, PT_ENOMEM, "DataParallel: out of memory");
    c->pos = np;
    c->cappos = cap;
  }
  dp_pos *ps = &c->pos[c->npos];
  memset(ps, 0, sizeof *ps);
  int slots = gathered ? 1 : c->k;
  ps->pieces = calloc((size_t)c->k, sizeof *ps->pieces);
  ps->offset = calloc((size_t)c->k, sizeof *ps->offset);
  ps->grad = calloc((size_t)slots, sizeof *ps->grad);
  ps->mark = calloc((size_t)slots, sizeof *ps->mark);
  if (!ps->pieces || !ps->offset || !ps->grad || !ps->mark) {
    free(ps->pieces);
    free(ps->offset);
    free(ps->grad);
    free(ps->mark);
    return pt_fail(ctx, PT_ENOMEM, "DataParallel: out of memory");
  }
  ps->gathered = gathered;
  ps->dim = dim;
  for (int i = 0; i < c->k; i++) {
    ps->pieces[i].ndim = pieces[i]->ndim;
    memcpy(ps->pieces[i].shape, pieces[i]->shape, sizeof ps->pieces[i].shape);
    ps->pieces[i].needs = pieces[i]->requires_grad;
  }
  c->npos++;
  *out = ps;
  return PT_OK;
}

static pt_status attach(pt_ctx *ctx, pt_dp_call *c, pt_tensor *t, const char *name, int p, int slot) {
  pt_node *node = NULL;
  pt_status st = pt_autograd_record(ctx, t, name, piece_backward, 1, &c->H, &node);
  if (st || !node) return st;
  node->ints[0] = p;
  node->ints[1] = slot;
  node->n_ints = 2;
  node->extra = call_retain(c);
  node->free_extra = call_unref;
  return PT_OK;
}

pt_status pt_dp_gather(pt_ctx *ctx, pt_dp_call *c, pt_tensor *const *pieces, int dim,
                       const char *name, pt_tensor **out) {
  *out = NULL;
  int k = c->k;
  bool stacked = pieces[0]->ndim == 0;
  char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
  pt_dtype dt = pieces[0]->dtype;
  bool needs = false;
  int64_t shape[PT_MAX_DIMS];
  int ndim;
  for (int i = 0; i < k; i++) {
    const pt_tensor *t = pieces[i];
    needs = needs || t->requires_grad;
    dt = pt_dtype_promote(dt, t->dtype);
    if (stacked) {
      if (t->ndim != 0)
        return pt_fail(ctx, PT_ESHAPE,
                       "DataParallel: cannot gather %s: replica 1 gave shape %s but replica %d gave %s",
                       name, pt_shape_format(0, pieces[0]->shape, a, sizeof a), i + 1,
                       pt_shape_format(t->ndim, t->shape, b, sizeof b));
      continue;
    }
    if (dim >= t->ndim)
      return pt_fail(ctx, PT_ESHAPE,
                     "DataParallel: cannot gather %s of shape %s along dimension %d",
                     name, pt_shape_format(t->ndim, t->shape, a, sizeof a), dim + 1);
    bool ok = t->ndim == pieces[0]->ndim;
    for (int d = 0; ok && d < t->ndim; d++) ok = d == dim || t->shape[d] == pieces[0]->shape[d];
    if (!ok)
      return pt_fail(ctx, PT_ESHAPE,
                     "DataParallel: cannot gather %s along dimension %d: replica 1 gave shape %s "
                     "but replica %d gave %s",
                     name, dim + 1, pt_shape_format(pieces[0]->ndim, pieces[0]->shape, a, sizeof a),
                     i + 1, pt_shape_format(t->ndim, t->shape, b, sizeof b));
  }
  if (stacked) {
    ndim = 1;
    shape[0] = k;
  } else {
    ndim = pieces[0]->ndim;
    memcpy(shape, pieces[0]->shape, sizeof shape);
    shape[dim] = 0;
    for (int i = 0; i < k; i++) shape[dim] += pieces[i]->shape[dim];
  }
  pt_tensor *r;
  pt_status st = pt_tensor_empty(ctx, dt, ndim, shape, &r);
  if (st) return st;
  dp_pos *ps;
  if ((st = add_position(ctx, c, pieces, true, dim, &ps))) {
    pt_tensor_release(r);
    return st;
  }
  ps->stacked = stacked;
  int64_t off = 0;
  for (int i = 0; i < k && !st; i++) {
    pt_tensor *v;
    int64_t len = stacked ? 1 : pieces[i]->shape[dim];
    ps->offset[i] = off;
    st = stacked ? pt_select_raw(ctx, r, 0, off, &v) : pt_narrow_raw(ctx, r, dim, off, len, &v);
    if (!st) {
      st = pt_tensor_copy_into(ctx, v, pieces[i]);
      pt_tensor_release(v);
    }
    off += len;
  }
  if (!st && needs && c->H) st = attach(ctx, c, r, "DataParallelGatherBackward", c->npos - 1, -1);
  if (st) {
    pt_tensor_release(r);
    return st;
  }
  *out = r;
  return PT_OK;
}

pt_status pt_dp_pieces(pt_ctx *ctx, pt_dp_call *c, pt_tensor *const *pieces, pt_tensor **outs) {
  dp_pos *ps;
  pt_status st = add_position(ctx, c, pieces, false, 0, &ps);
  if (st) return st;
  int i = 0;
  for (; i < c->k && !st; i++) {
    outs[i] = NULL;
    if ((st = pt_detach(ctx, pieces[i], &outs[i]))) break;
    if (pieces[i]->requires_grad && c->H)
      st = attach(ctx, c, outs[i], "DataParallelPieceBackward", c->npos - 1, i);
  }
  if (st)
    for (int j = 0; j < c->k && j <= i; j++) {
      pt_tensor_release(outs[j]);
      outs[j] = NULL;
    }
  return st;
}

/* ------------------------------------------------------------------ backward --- */

/* An exposed tensor's gradient goes into the call (the side channel R reads); the engine gets a
 * 1-element zero for H so that R runs once every exposed tensor in the graph has delivered. */
static pt_status piece_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  pt_dp_call *c = node->extra;
  dp_pos *ps = &c->pos[node->ints[0]];
  int slot = node->ints[1] < 0 ? 0 : (int)node->ints[1];
  pt_tensor_release(ps->grad[slot]);
  ps->grad[slot] = pt_tensor_retain(g);
  ps->mark[slot] = node->visit_mark;
  return scalar_zero(ctx, &gin[0]);
}

static pt_status chain_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  (void)g;
  pt_dp_call *c = node->extra;
  int first = (int)node->ints[0], direct = (int)node->ints[1];
  pt_status st = PT_OK;
  for (int j = 0; j < direct && !st; j++) {
    dp_in *in = &c->in[first + j];
    if (in->grad) {
      gin[j] = in->grad;
      in->grad = NULL;
    } else if (in->orig) {
      st = pt_tensor_zeros(ctx, in->orig->dtype, in->orig->ndim, in->orig->shape, &gin[j]);
    }
  }
  if (!st && node->ints[2]) st = scalar_zero(ctx, &gin[direct]);
  return st;
}

typedef struct dp_buf {
  pt_tensor *leaf, *buf;
} dp_buf;

typedef struct dp_rep {
  pt_tensor *root, *g;
  dp_buf *b;
  int nb, cap, last;
  pt_status st;
  char err[PT_ERRMSG_MAX];
} dp_rep;

static dp_buf *find_buf(dp_rep *r, const pt_tensor *leaf) {
  if (r->last < r->nb && r->b[r->last].leaf == leaf) return &r->b[r->last];
  for (int j = 0; j < r->nb; j++)
    if (r->b[j].leaf == leaf) {
      r->last = j;
      return &r->b[j];
    }
  return NULL;
}

/* ctx->accumulate of one replica's backward: leaf gradients into the replica's own buffers */
static pt_status dp_accumulate(pt_ctx *ctx, pt_tensor *leaf, pt_tensor *grad, void *ud) {
  dp_rep *r = ud;
  if (pt_tensor_numel(grad) != pt_tensor_numel(leaf)) return pt_grad_shape_error(ctx, grad, leaf);
  dp_buf *e = find_buf(r, leaf);
  if (e) {
    pt_tensor_add_raw(e->buf, grad);
    return PT_OK;
  }
  if (r->nb == r->cap) {
    int cap = r->cap ? 2 * r->cap : 16;
    dp_buf *nb = realloc(r->b, (size_t)cap * sizeof *nb);
    if (!nb) return pt_fail(ctx, PT_ENOMEM, "backward: out of memory for gradient buffers");
    r->b = nb;
    r->cap = cap;
  }
  pt_tensor *buf;
  /* a fresh gradient that nobody else sees (tensor and storage) becomes the buffer itself */
  if (atomic_load(&grad->refcount) == 1 && atomic_load(&grad->storage->refcount) == 1 &&
      grad->storage->release == NULL && !grad->grad_fn && pt_tensor_is_contiguous(grad) &&
      grad->dtype == leaf->dtype && same_shape(grad->ndim, grad->shape, leaf->ndim, leaf->shape)) {
    buf = pt_tensor_retain(grad);
  } else {
    pt_status st = pt_tensor_empty(ctx, leaf->dtype, leaf->ndim, leaf->shape, &buf);
    if (st) return st;
    if (same_shape(grad->ndim, grad->shape, leaf->ndim, leaf->shape)) {
      st = pt_tensor_copy_into(ctx, buf, grad);
    } else {
      int64_t n = pt_tensor_numel(buf);
      for (int64_t i = 0; i < n; i++) pt_tensor_set_flat(buf, i, pt_tensor_get_flat(grad, i));
    }
    if (st) {
      pt_tensor_release(buf);
      return st;
    }
  }
  e = &r->b[r->nb];
  r->last = r->nb++;
  e->leaf = pt_tensor_retain(leaf);
  e->buf = buf;
  return PT_OK;
}

typedef struct dp_job {
  dp_rep *reps;
  const int *active;
  int intra;
  volatile sig_atomic_t *intr;
} dp_job;

static void run_replicas(void *arg, int64_t lo, int64_t hi, int tid) {
  (void)tid;
  dp_job *J = arg;
  for (int64_t a = lo; a < hi; a++) {
    dp_rep *r = &J->reps[J->active[a]];
    pt_ctx lc;
    pt_ctx_init(&lc, 0);
    lc.intra_threads = J->intra;
    lc.interrupted = J->intr;
    lc.accumulate = dp_accumulate;
    lc.accumulate_data = r;
    /* retain_graph: R owns the replicas' graphs and frees them with its own saved data */
    r->st = pt_backward(&lc, r->root, r->g, true);
    if (r->st) memcpy(r->err, lc.err, sizeof r->err);
  }
}

typedef struct add_job {
  pt_tensor *dst;
  pt_tensor **srcs;
  int n;
} add_job;

/* d += s_0, then += s_1, ... element by element; block by block so that each block of d is
 * read and written once for all sources (one pass over d per source cost ~1 ms of a 100 ms
 * batch-256 CNN step at fc1's 13 MB), with the same additions in the same order. */
#define ADD_BLOCK 2048
static void add_range(void *arg, int64_t lo, int64_t hi, int tid) {
  (void)tid;
  add_job *J = arg;
  if (pt_dtype_is_floating(J->dst->dtype)) {
    PT_DISPATCH_FLOAT(J->dst->dtype, {
      T *d = pt_tensor_data(J->dst);
      for (int64_t b = lo; b < hi; b += ADD_BLOCK) {
        int64_t e = hi - b < ADD_BLOCK ? hi : b + ADD_BLOCK;
        for (int j = 0; j < J->n; j++) {
          const T *s = pt_tensor_data(J->srcs[j]);
          for (int64_t i = b; i < e; i++) d[i] += s[i];
        }
      }
    });
  } else {
    for (int j = 0; j < J->n; j++)
      for (int64_t i = lo; i < hi; i++)
        pt_tensor_set_flat(J->dst, i, pt_tensor_get_flat(J->dst, i) + pt_tensor_get_flat(J->srcs[j], i));
  }
}

static bool delivered(const dp_pos *ps, int i, unsigned mark) {
  int slot = ps->gathered ? 0 : i;
  return ps->grad[slot] && ps->mark[slot] == mark;
}

static int64_t piece_numel(const dp_piece *p) { return pt_shape_numel(p->ndim, p->shape); }

/* replica i's part of position ps's gradient (a view) */
static pt_status piece_grad(pt_ctx *ctx, const dp_pos *ps, int i, pt_tensor **out) {
  if (!ps->gathered) {
    *out = pt_tensor_retain(ps->grad[i]);
    return PT_OK;
  }
  if (ps->stacked) return pt_select_raw(ctx, ps->grad[0], 0, ps->offset[i], out);
  return pt_narrow_raw(ctx, ps->grad[0], ps->dim, ps->offset[i], ps->pieces[i].shape[ps->dim], out);
}

/* The gradient of replica i's root, or NULL when none of its outputs received one. */
static pt_status root_grad(pt_ctx *ctx, pt_dp_call *c, int i, unsigned mark, pt_tensor **out) {
  *out = NULL;
  pt_tensor *root = c->roots[i];
  int n = 0;
  bool any = false;
  int64_t total = 0;
  const dp_piece *only = NULL;
  for (int p = 0; p < c->npos; p++) {
    const dp_piece *pc = &c->pos[p].pieces[i];
    if (!pc->needs) continue;
    n++;
    only = pc;
    total += piece_numel(pc);
    any = any || delivered(&c->pos[p], i, mark);
  }
  if (!any) return PT_OK;
  bool fits = n == 1 ? same_shape(root->ndim, root->shape, only->ndim, only->shape)
                     : root->ndim == 1 && root->shape[0] == total;
  if (!fits) {
    char a[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESTATE,
                   "replica on %s: its root of shape %s does not match its %d outputs that require grad",
                   c->dev[i], pt_shape_format(root->ndim, root->shape, a, sizeof a), n);
  }
  pt_tensor *g;
  pt_status st = pt_tensor_empty(ctx, root->dtype, root->ndim, root->shape, &g);
  if (st) return st;
  int64_t off = 0;
  for (int p = 0; p < c->npos && !st; p++) {
    const dp_pos *ps = &c->pos[p];
    const dp_piece *pc = &ps->pieces[i];
    if (!pc->needs) continue;
    int64_t m = piece_numel(pc);
    pt_tensor *dst = NULL, *src = NULL;
    if (n == 1) {
      dst = pt_tensor_retain(g);
    } else {
      pt_tensor *flat;
      if (!(st = pt_narrow_raw(ctx, g, 0, off, m, &flat))) {
        st = pt_view_raw(ctx, flat, pc->ndim, pc->shape, &dst);
        pt_tensor_release(flat);
      }
    }
    if (!st) {
      if (delivered(ps, i, mark)) {
        if (!(st = piece_grad(ctx, ps, i, &src))) st = pt_tensor_copy_into(ctx, dst, src);
      } else {
        st = pt_tensor_fill(ctx, dst, 0);
      }
    }
    pt_tensor_release(src);
    pt_tensor_release(dst);
    off += m;
  }
  if (st) {
    pt_tensor_release(g);
    return st;
  }
  *out = g;
  return PT_OK;
}

static bool is_input_leaf(const pt_dp_call *c, int i, const pt_tensor *leaf) {
  for (int e = 0; e < c->nin; e++)
    if (c->in[e].leaves[i] == leaf) return true;
  return false;
}

/* Add the replicas' buffers of one (non-input) leaf into it, in replica order. */
static pt_status reduce_leaf(pt_ctx *ctx, pt_tensor *leaf, pt_tensor **srcs, int n) {
  pt_status st = PT_OK;
  if (ctx->accumulate) {
    for (int j = 0; j < n && !st; j++) st = ctx->accumulate(ctx, leaf, srcs[j], ctx->accumulate_data);
    return st;
  }
  int first = 0;
  if (!leaf->grad) { /* our buffers are private: the first becomes .grad itself */
    leaf->grad = pt_tensor_retain(srcs[0]);
    first = 1;
  }
  if (first == n) return PT_OK;
  pt_tensor *d = leaf->grad;
  bool fast = pt_tensor_is_contiguous(d) && d->dtype == leaf->dtype &&
              pt_tensor_numel(d) == pt_tensor_numel(leaf);
  if (!fast) {
    for (int j = first; j < n && !st; j++) st = pt_accumulate_default(ctx, leaf, srcs[j], NULL);
    return st;
  }
  add_job J = {d, srcs + first, n - first};
  /* each element sees the same additions in the same order however the range is split */
  pt_parallel_for(ctx, pt_tensor_numel(d), 1 << 14, add_range, &J);
  atomic_fetch_add(&d->storage->version, 1);
  return PT_OK;
}

static pt_status dp_backward(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gin) {
  (void)gout;
  pt_dp_call *c = node->extra;
  int k = c->k, direct = (int)node->ints[0];
  bool tail = node->ints[1] != 0;
  unsigned mark = node->visit_mark;
  pt_status st = PT_OK;
  dp_rep *reps = calloc((size_t)k, sizeof *reps);
  int *active = calloc((size_t)k, sizeof *active);
  pt_tensor **srcs = calloc((size_t)k, sizeof *srcs);
  if (!reps || !active || !srcs) {
    st = pt_fail(ctx, PT_ENOMEM, "out of memory");
    goto done;
  }
  int nact = 0;
  for (int i = 0; i < k && !st; i++) {
    if (!c->roots[i]) continue;
    pt_tensor *g = NULL;
    if ((st = root_grad(ctx, c, i, mark, &g))) break;
    if (!g) continue;
    reps[i].root = c->roots[i];
    reps[i].g = g;
    active[nact++] = i;
  }
  if (st) goto done;
  /* 1. every replica's backward at once; one replica keeps the caller's intra-op threads */
  if (nact > 0) {
    dp_job J = {reps, active, nact > 1 ? 1 : ctx->intra_threads, ctx->interrupted};
    pt_parallel_for(ctx, nact, 1, run_replicas, &J);
  }
  for (int a = 0; a < nact; a++) {
    dp_rep *r = &reps[active[a]];
    if (r->st) {
      st = pt_fail(ctx, r->st, "replica on %s failed in backward: %s", c->dev[active[a]], r->err);
      goto done;
    }
  }
  /* 2. leaf gradients (parameters) into the caller's accumulation, in replica order; a pass
   * that differentiates only some tensors (autograd.grad, backward{inputs=}) gives no other
   * tensor a gradient, and cannot return a parameter's, which goes into .grad from here */
  for (int a = 0; a < nact && !st; a++) {
    int i = active[a];
    for (int j = 0; j < reps[i].nb && !st; j++) {
      pt_tensor *leaf = reps[i].b[j].leaf;
      if (is_input_leaf(c, i, leaf)) continue;
      if (ctx->pass_inputs) {
        for (int q = 0; q < ctx->n_pass_inputs && !st; q++)
          if (ctx->pass_inputs[q] == leaf)
            st = pt_fail(ctx, PT_EARG, "nn.DataParallel: inputs[%d] is a parameter of the replicated module: "
                         "its gradient is added into .grad by the replicas, so it cannot be taken with "
                         "autograd.grad or backward{inputs=} (call backward() and read .grad)", q + 1);
        continue;
      }
      bool seen = false;
      for (int q = 0; q < a && !seen; q++) seen = find_buf(&reps[active[q]], leaf) != NULL;
      if (seen) continue;
      int n = 0;
      for (int q = a; q < nact; q++) {
        dp_buf *e = find_buf(&reps[active[q]], leaf);
        if (e) srcs[n++] = e->buf;
      }
      st = reduce_leaf(ctx, leaf, srcs, n);
    }
  }
  /* 3. the gradients of the scattered inputs, assembled from their chunk leaves */
  for (int e = 0; e < c->nin && !st; e++) {
    dp_in *in = &c->in[e];
    pt_tensor *gO;
    if ((st = pt_tensor_zeros(ctx, in->orig->dtype, in->orig->ndim, in->orig->shape, &gO))) break;
    for (int i = 0; i < k && !st; i++) {
      pt_tensor *L = in->leaves[i];
      dp_buf *b = L && reps[i].root ? find_buf(&reps[i], L) : NULL;
      if (!b) continue;
      pt_tensor *view;
      if (in->starts) st = pt_narrow_raw(ctx, gO, in->dim, in->starts[i], L->shape[in->dim], &view);
      else view = pt_tensor_retain(gO);
      if (!st) {
        st = pt_tensor_copy_into(ctx, view, b->buf);
        pt_tensor_release(view);
      }
    }
    if (st) {
      pt_tensor_release(gO);
      break;
    }
    if (e < direct) {
      gin[e] = gO;
    } else {
      pt_tensor_release(in->grad);
      in->grad = gO;
    }
  }
  if (!st && tail) st = scalar_zero(ctx, &gin[direct]);
done:
  if (reps)
    for (int i = 0; i < k; i++) {
      pt_tensor_release(reps[i].g);
      for (int j = 0; j < reps[i].nb; j++) {
        pt_tensor_release(reps[i].b[j].leaf);
        pt_tensor_release(reps[i].b[j].buf);
      }
      free(reps[i].b);
    }
  /* the exposed gradients are consumed */
  for (int p = 0; p < c->npos; p++) {
    dp_pos *ps = &c->pos[p];
    int slots = ps->gathered ? 1 : k;
    for (int s = 0; s < slots; s++) {
      pt_tensor_release(ps->grad[s]);
      ps->grad[s] = NULL;
    }
  }
  free(reps);
  free(active);
  free(srcs);
  return st;
}
