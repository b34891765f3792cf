/* The reverse-mode engine: recording nodes, ordering them, running backward functions (or, with
 * create_graph, differentiable formulas of them), tensor hooks and autograd.grad's pruning. */
#include "autograd.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conv.h"
#include "dispatch.h"
#include "nn.h"
#include "nn_rnn.h"
#include "ops_decomp.h"
#include "parallel.h"
#include "ops_elementwise.h"
#include "ops_index.h"
#include "ops_linalg.h"
#include "ops_misc.h"
#include "ops_reduce.h"
#include "ops_resample.h"
#include "ops_shape.h"
#include "ops_sort.h"
#include "ops_special.h"

bool pt_autograd_needed(const pt_ctx *ctx, int n, pt_tensor *const *inputs) {
  if (!ctx->grad_enabled) return false;
  for (int i = 0; i < n; i++)
    if (inputs[i] && inputs[i]->requires_grad) return true;
  return false;
}

pt_node *pt_node_retain(pt_node *n) {
  if (n) atomic_fetch_add_explicit(&n->refcount, 1, memory_order_relaxed);
  return n;
}

static void node_free_saved(pt_node *n) {
  for (int i = 0; i < PT_NODE_MAX_SAVED; i++) {
    pt_tensor_release(n->saved[i]);
    n->saved[i] = NULL;
  }
  for (int i = 0; i < n->n_inputs; i++) {
    pt_tensor_release(n->inputs[i]);
    n->inputs[i] = NULL;
    pt_node_release(n->input_fn[i]);
    n->input_fn[i] = NULL;
  }
  if (n->extra && n->free_extra) n->free_extra(n->extra);
  n->extra = NULL;
  pt_tensor_release(n->pending_grad);
  n->pending_grad = NULL;
  pt_tensor_release(n->captured);
  n->captured = NULL;
}

/* Freeing a node releases its inputs' nodes, and a graph can be a chain as long as a training
 * run (a loss summed over 400k steps without item()): nodes whose last reference goes while
 * this thread frees another are queued and freed by the outermost call, in a loop, where
 * recursion ran out of stack. */
static _Thread_local pt_node *release_queue;
static _Thread_local bool releasing;

void pt_node_release(pt_node *n) {
  if (!n) return;
  if (atomic_fetch_sub_explicit(&n->refcount, 1, memory_order_acq_rel) != 1) return;
  n->release_next = release_queue;
  release_queue = n;
  if (releasing) return;
  releasing = true;
  while (release_queue) {
    pt_node *m = release_queue;
    release_queue = m->release_next;
    node_free_saved(m);
    pt_small_free(m, sizeof *m); /* per-thread small-block cache (lib/tensor.c) */
  }
  releasing = false;
}

/* A view node is plain when nothing but its one input went into it. */
static bool plain_view(const pt_node *m) {
  bool plain = m && m->is_view && m->n_inputs == 1 && m->inputs[0] && !m->extra && !m->released;
  for (int k = 0; plain && k < PT_NODE_MAX_SAVED; k++) plain = !m->saved[k];
  return plain;
}

/* No in-place op touched the storage since the view was recorded: its history is as it was. */
static bool view_unchanged(const pt_node *m) {
  return atomic_load(&m->inputs[0]->storage->version) == m->view_version;
}

/* AsStridedBackward: a view seen over its base's current history. The geometry is in elements
 * of the base's storage, counted from the base's offset; span is how many of them the base
 * covers. */
typedef struct strided_geometry {
  int64_t offset, span;
  int ndim, base_ndim;
  int64_t shape[PT_MAX_DIMS], stride[PT_MAX_DIMS];
  int64_t base_shape[PT_MAX_DIMS], base_stride[PT_MAX_DIMS];
} strided_geometry;

/* the view's gradient added into a zero gradient laid out as the base (strides of 0 add up) */
static pt_status as_strided_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  if (!node->needs_grad[0]) return PT_OK;
  const strided_geometry *v = node->extra;
  pt_tensor *buf = NULL, *region = NULL;
  pt_status st = pt_tensor_zeros(ctx, g->dtype, 1, &v->span, &buf);
  if (!st)
    st = pt_tensor_from_storage(ctx, buf->storage, g->dtype, v->offset, v->ndim, v->shape,
                                v->stride, &region);
  if (!st) {
    pt_tensor_add_raw(region, g);
    st = pt_tensor_from_storage(ctx, buf->storage, g->dtype, 0, v->base_ndim, v->base_shape,
                                v->base_stride, &gin[0]);
  }
  pt_tensor_release(region);
  pt_tensor_release(buf);
  return st;
}

static pt_status node_hold(pt_ctx *ctx, pt_tensor *t, pt_node *history, pt_tensor **out);

/* The history of t as of now (a new reference). A view's values follow its base (t->base, the
 * first tensor of its chain of views): when the storage was written in place since the view's
 * node was recorded, the view's history is its base's current one seen through the view's
 * geometry, a new AsStridedBackward node (PyTorch regenerates a view's grad_fn the same way),
 * and what was recorded earlier keeps the old one. Other tensors' grad_fn is their history. When
 * no such node can be made, the view keeps its recorded history. */
static pt_node *history_now(pt_ctx *ctx, pt_tensor *t) {
  pt_node *m = t->grad_fn;
  pt_tensor *b = t->base;
  if (!plain_view(m) || view_unchanged(m) || !b || b->base || b->dtype != t->dtype ||
      b->storage != t->storage || b->storage->device.type != PT_CPU ||
      (!b->grad_fn && !b->requires_grad) || t->offset < b->offset || b->ndim > PT_MAX_DIMS)
    return pt_node_retain(m);
  strided_geometry *v = malloc(sizeof *v);
  if (!v) return pt_node_retain(m);
  v->offset = t->offset - b->offset;
  v->ndim = t->ndim;
  v->base_ndim = b->ndim;
  v->span = 1;
  for (int i = 0; i < b->ndim; i++) {
    v->base_shape[i] = b->shape[i];
    v->base_stride[i] = b->stride[i];
    if (b->shape[i] == 0 || b->stride[i] < 0) v->span = 0;
    else if (v->span) v->span += (b->shape[i] - 1) * b->stride[i];
  }
  for (int i = 0; i < t->ndim; i++) {
    v->shape[i] = t->shape[i];
    v->stride[i] = t->stride[i];
  }
  pt_node *c = v->span > 0 ? pt_small_alloc(NULL, sizeof *c) : NULL;
  if (!c) {
    free(v);
    return pt_node_retain(m);
  }
  memset(c, 0, sizeof *c);
  atomic_init(&c->refcount, 1);
  c->name = "AsStridedBackward";
  c->backward = as_strided_backward;
  c->tag = ctx->graph_tag;
  c->n_inputs = 1;
  c->input_fn[0] = pt_node_retain(b->grad_fn); /* a base is no view: its grad_fn is its history */
  c->needs_grad[0] = b->requires_grad;
  c->out_ndim = t->ndim;
  memcpy(c->out_shape, t->shape, sizeof c->out_shape);
  c->out_dtype = t->dtype;
  c->extra = v;
  c->free_extra = free;
  c->is_view = true;
  c->slice_grad = pt_tensor_is_contiguous(b); /* the engine adds into its region (pend_slice) */
  c->view_version = atomic_load(&t->storage->version);
  if (node_hold(ctx, b, b->grad_fn, &c->inputs[0])) {
    pt_node_release(c);
    return pt_node_retain(m);
  }
  return c;
}

/* What a node keeps of a tensor it records or saves (a new reference in *out). A leaf that
 * requires grad is kept itself: the engine adds its gradient into it. Anything else is kept as
 * an alias of it as it is now: its storage, geometry and history, but no base and none of the
 * history an in-place op gives it later (as PyTorch's SavedVariable). A node then only reaches
 * older nodes, and a graph holds no cycle: with the tensor itself, t:mul_(t:exp()) or an
 * in-place op on a view (whose base's new history holds the view, which holds the base) made
 * the tensor's new history reach back to it, and nothing freed either unless a backward ran. */
static pt_status node_hold(pt_ctx *ctx, pt_tensor *t, pt_node *history, pt_tensor **out) {
  if (!t || (!t->grad_fn && t->requires_grad)) {
    *out = pt_tensor_retain(t);
    return PT_OK;
  }
  return pt_autograd_alias(ctx, t, history, out);
}

pt_status pt_autograd_alias(pt_ctx *ctx, pt_tensor *t, pt_node *history, pt_tensor **out) {
  pt_status st = pt_detach(ctx, t, out);
  if (st) return st;
  (*out)->grad_fn = pt_node_retain(history);
  (*out)->requires_grad = t->requires_grad;
  return PT_OK;
}

void pt_node_save(pt_node *node, int k, pt_tensor *t) {
  node->saved_version[k] = t ? atomic_load(&t->storage->version) : 0;
  /* a tensor nobody else holds cannot change: kept as it is (the common case, a buffer the op
   * made); the node's own output is kept without a history (it would hold the node) */
  if (!t || (atomic_load(&t->refcount) == 1 && !t->base && !t->grad_fn)) {
    node->saved[k] = t;
    return;
  }
  pt_tensor *alias = NULL; /* (no ctx: an alias of a valid tensor fails only for memory; a leaf
                            * that requires grad comes back itself) */
  if (node_hold(NULL, t, t->grad_fn == node ? NULL : t->grad_fn, &alias)) {
    node->saved[k] = t; /* no memory for an alias: the tensor itself, as before */
    return;
  }
  pt_tensor_release(t);
  node->saved[k] = alias;
}

pt_status pt_autograd_record(pt_ctx *ctx, pt_tensor *out, const char *name, pt_backward_fn backward,
                             int n_inputs, pt_tensor *const *inputs, pt_node **node_out) {
  *node_out = NULL;
  if (!pt_autograd_needed(ctx, n_inputs, inputs)) return PT_OK;
  if (n_inputs > PT_NODE_MAX_INPUTS)
    return pt_fail(ctx, PT_EARG, "%s: too many inputs for autograd", name);
  pt_node *n = pt_small_alloc(ctx, sizeof *n);
  if (!n) return PT_ENOMEM;
  memset(n, 0, sizeof *n);
  atomic_init(&n->refcount, 1);
  n->name = name;
  n->backward = backward;
  n->tag = ctx->graph_tag;
  n->n_inputs = n_inputs;
  for (int i = 0; i < n_inputs; i++) {
    n->input_fn[i] = inputs[i] ? history_now(ctx, inputs[i]) : NULL;
    n->needs_grad[i] = inputs[i] && inputs[i]->requires_grad;
    if (node_hold(ctx, inputs[i], n->input_fn[i], &n->inputs[i])) {
      n->n_inputs = i + 1;
      pt_node_release(n);
      return PT_ENOMEM;
    }
  }
  n->out_ndim = out->ndim;
  memcpy(n->out_shape, out->shape, sizeof n->out_shape);
  n->out_dtype = out->dtype;
  if (out->retains_grad) { /* t:retain_grad() follows t to its new history */
    if (out->grad_fn && out->grad_fn->retain_target == out) out->grad_fn->retain_target = NULL;
    n->retain_target = out;
  }
  pt_node_release(out->grad_fn);
  out->grad_fn = n;
  out->requires_grad = true;
  *node_out = n;
  return PT_OK;
}

/* --- gradient arithmetic used by the engine --- */

/* dst += src, same shape; dst is contiguous and owned by the engine. */
/* dst[b, e) += src[b, e), both contiguous float tensors of one dtype */
typedef struct add_job {
  pt_tensor *dst, *src;
} add_job;
static void add_chunk(void *arg, int64_t b, int64_t e, int tid) {
  (void)tid;
  const add_job *j = arg;
  PT_DISPATCH_FLOAT(j->dst->dtype, {
    T *d = pt_tensor_data(j->dst);
    const T *s = pt_tensor_data(j->src);
    for (int64_t i = b; i < e; i++) d[i] += s[i];
  });
}

#define ADD_GRAIN 65536
static pt_status add_into(pt_ctx *ctx, pt_tensor *dst, pt_tensor *src) {
  int64_t n = pt_tensor_numel(dst);
  if (pt_tensor_numel(src) != n || dst->ndim != src->ndim) return pt_grad_shape_error(ctx, src, dst);
  if (n >= 2 * ADD_GRAIN && dst->dtype == src->dtype && pt_dtype_is_floating(dst->dtype) &&
      pt_tensor_is_contiguous(dst) && pt_tensor_is_contiguous(src)) {
    /* a large gradient accumulated on every thread (element-wise: any split, the same sums) */
    add_job j = {dst, src};
    pt_parallel_for(ctx, n, ADD_GRAIN, add_chunk, &j);
  } else {
    pt_tensor_add_raw(dst, src);
  }
  atomic_fetch_add(&dst->storage->version, 1);
  return PT_OK;
}

pt_status pt_grad_shape_error(pt_ctx *ctx, const pt_tensor *grad, const pt_tensor *target) {
  char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
  return pt_fail(ctx, PT_ESHAPE, "backward: gradient of shape %s does not match shape %s",
                 pt_shape_format(grad->ndim, grad->shape, a, sizeof a),
                 pt_shape_format(target->ndim, target->shape, b, sizeof b));
}

/* A fresh contiguous copy of g in dtype dt that the engine may add into. */
static pt_status owned_copy(pt_ctx *ctx, pt_tensor *g, pt_dtype dt, pt_tensor **out) {
  pt_tensor *r;
  pt_status st = pt_tensor_empty(ctx, dt, g->ndim, g->shape, &r);
  if (st) return st;
  st = pt_tensor_copy_into(ctx, r, g);
  if (st) {
    pt_tensor_release(r);
    return st;
  }
  *out = r;
  return PT_OK;
}

pt_status pt_accumulate_default(pt_ctx *ctx, pt_tensor *leaf, pt_tensor *grad, void *userdata) {
  (void)userdata;
  if (!leaf->grad) return owned_copy(ctx, grad, leaf->dtype, &leaf->grad);
  return add_into(ctx, leaf->grad, grad);
}

pt_status pt_accumulate_redirect(pt_ctx *ctx, pt_tensor *leaf, pt_tensor *grad, void *redirect) {
  pt_grad_redirect *r = redirect;
  return r->accumulate(ctx, leaf, grad, r->userdata);
}

static bool same_shape(const pt_tensor *a, const pt_tensor *b) {
  return a->ndim == b->ndim && memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof(int64_t)) == 0;
}

bool pt_autograd_grad_rank1(pt_ctx *ctx, pt_tensor *leaf, const void *g, const void *x) {
  if (ctx->accumulate != pt_accumulate_redirect || leaf->grad_fn || !leaf->requires_grad ||
      leaf->ndim != 2 || !pt_tensor_is_contiguous(leaf))
    return false;
  pt_grad_redirect *r = ctx->accumulate_data;
  return r->rank1 && r->rank1(ctx, leaf, g, x, r->userdata);
}

pt_tensor *pt_autograd_grad_target(pt_ctx *ctx, pt_tensor *leaf, bool *fresh) {
  *fresh = false;
  if (ctx->grad_direct_off || leaf->grad_fn || !leaf->requires_grad || !pt_tensor_is_contiguous(leaf))
    return NULL;
  if (ctx->accumulate) {
    if (ctx->accumulate != pt_accumulate_redirect) return NULL;
    pt_grad_redirect *r = ctx->accumulate_data;
    if (!r->target) return NULL;
    pt_tensor *g = r->target(ctx, leaf, fresh, r->userdata);
    if (g && (g->dtype != leaf->dtype || !same_shape(g, leaf) || !pt_tensor_is_contiguous(g))) {
      *fresh = false;
      return NULL;
    }
    return g;
  }
  if (!leaf->grad) {
    if (pt_tensor_empty(ctx, leaf->dtype, leaf->ndim, leaf->shape, &leaf->grad)) {
      leaf->grad = NULL;
      return NULL;
    }
    *fresh = true;
    return leaf->grad;
  }
  pt_tensor *g = leaf->grad;
  if (g->dtype != leaf->dtype || !same_shape(g, leaf) || !pt_tensor_is_contiguous(g)) return NULL;
  return g;
}

pt_status pt_sum_to_shape(pt_ctx *ctx, pt_tensor *g, int ndim, const int64_t *shape, pt_tensor **out) {
  if (g->ndim == ndim && memcmp(g->shape, shape, (size_t)ndim * sizeof(int64_t)) == 0) {
    *out = pt_tensor_retain(g);
    return PT_OK;
  }
  pt_tensor *r;
  pt_status st = pt_tensor_zeros(ctx, g->dtype, ndim, shape, &r);
  if (st) return st;
  /* Read r as if broadcast to g's shape: broadcast dims get stride 0, so they sum. */
  int64_t rstride[PT_MAX_DIMS];
  pt_broadcast_strides(r, g->ndim, g->shape, rstride);
  const int64_t *strides[2] = {g->stride, rstride};
  pt_iter it;
  pt_iter_init(&it, g->ndim, g->shape, 2, strides);
  if (g->dtype == PT_FLOAT32) {
    const float *gp = pt_tensor_data(g);
    float *rp = pt_tensor_data(r);
    while (pt_iter_next(&it)) rp[it.offset[1]] += gp[it.offset[0]];
  } else if (g->dtype == PT_FLOAT64) {
    const double *gp = pt_tensor_data(g);
    double *rp = pt_tensor_data(r);
    while (pt_iter_next(&it)) rp[it.offset[1]] += gp[it.offset[0]];
  } else {
    pt_tensor_release(r);
    return pt_fail(ctx, PT_EARG, "backward: gradients must be floating point, got %s",
                   pt_dtype_name(g->dtype));
  }
  *out = r;
  return PT_OK;
}

pt_status pt_detach(pt_ctx *ctx, pt_tensor *t, pt_tensor **out) {
  return pt_tensor_from_storage(ctx, t->storage, t->dtype, t->offset, t->ndim, t->shape, t->stride,
                                out);
}

/* --- backward --- */

typedef struct node_list {
  pt_node **items;
  size_t n, cap;
} node_list;

static pt_status list_push(pt_ctx *ctx, node_list *l, pt_node *n) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    pt_node **items = realloc(l->items, cap * sizeof *items);
    if (!items) return pt_fail(ctx, PT_ENOMEM, "backward: out of memory");
    l->items = items;
    l->cap = cap;
  }
  l->items[l->n++] = n;
  return PT_OK;
}

static atomic_uint backward_pass_counter;

/* The end of a backward without retain_graph: mark the nodes released and free their saved data,
 * last and with every node retained meanwhile (freeing one's data may drop the last reference
 * to another in the list). */
static void release_saved(const node_list *all) {
  for (size_t i = 0; i < all->n; i++) all->items[i]->released = true;
  for (size_t i = 0; i < all->n; i++) pt_node_retain(all->items[i]);
  for (size_t i = 0; i < all->n; i++) node_free_saved(all->items[i]);
  for (size_t i = 0; i < all->n; i++) pt_node_release(all->items[i]);
}

uint64_t pt_graph_tag_new(void) {
  static atomic_uint_fast64_t next_tag;
  return atomic_fetch_add(&next_tag, 1) + 1;
}

void pt_graph_release_tagged(pt_node *root) {
  if (!root || !root->tag || root->released) return;
  uint64_t tag = root->tag;
  unsigned mark = atomic_fetch_add(&backward_pass_counter, 1) + 1;
  node_list all = {0}, stack = {0};
  pt_ctx quiet; /* list_push reports into a ctx; nobody reads this one */
  pt_ctx_init(&quiet, 0);
  root->visit_mark = mark;
  if (list_push(&quiet, &stack, root) || list_push(&quiet, &all, root)) goto done;
  while (stack.n) {
    pt_node *n = stack.items[--stack.n];
    for (int i = 0; i < n->n_inputs; i++) {
      pt_node *m = n->input_fn[i];
      if (!m || m->tag != tag || m->released || m->visit_mark == mark) continue;
      m->visit_mark = mark;
      if (list_push(&quiet, &stack, m) || list_push(&quiet, &all, m)) goto done;
    }
  }
  release_saved(&all);
done: /* out of memory for the lists: the graph is left to its references, as before */
  free(all.items);
  free(stack.items);
}

/* --- create_graph: backward formulas made of the public ops ---
 * The backward functions of the ops compute with raw kernels (grad mode is off while they run),
 * so their results carry no history. A pass with create_graph runs each node through a formula
 * here instead: the same gradient, computed with the public ops under grad mode, so that it
 * records its own graph and can be differentiated again. A formula reads what the op recorded
 * (node->inputs, saved, ints, scalars: each op's layout is named below), recomputing from the
 * inputs what an op saved without history (exp's, tanh's, softmax's outputs). Nodes are told
 * apart by their backward function, found per pass by recording one tiny op of each kind
 * (graph_probe): names alone are ambiguous (the nn activations and the elementwise ops share
 * "TanhBackward"). A node with no formula fails the pass before anything runs. */

typedef struct graph_table {
  pt_backward_fn binary, unary, reduce, softmax, product, addmm, reshape, transpose, permute,
      narrow, expand, clone, cat, to_dtype, where, masked_fill, linear, act, layer_norm, rms_norm,
      batch_norm, conv2d, nn_view, dropout, pointwise_loss, class_loss, max_pool, avg_pool,
      adaptive_avg_pool, gather, index_select, embedding, minmax, cumsum, select, repeat, scatter,
      conv_transpose2d, cumprod, strided, taps, lstm_cell, gru_cell, special, xlog1py, scatter_reduce,
      copy, copy_slices, fill, masked_select, lerp, logcumsumexp, dropout2d, max_unpool, linalg_inv, det,
      linalg_solve, cholesky, eigh, svd;
} graph_table;

static pt_status hook_identity_backward(pt_ctx *ctx, pt_node *node, pt_tensor *g, pt_tensor **gin) {
  (void)ctx;
  if (node->needs_grad[0]) gin[0] = pt_tensor_retain(g);
  return PT_OK;
}

pt_status pt_autograd_identity(pt_ctx *ctx, pt_tensor *t, const char *name, pt_tensor **out) {
  pt_tensor *r = NULL;
  pt_status st = pt_tensor_from_storage(ctx, t->storage, t->dtype, t->offset, t->ndim, t->shape,
                                        t->stride, &r);
  if (st) return st;
  pt_node *node;
  if ((st = pt_autograd_record(ctx, r, name, hook_identity_backward, 1, &t, &node))) {
    pt_tensor_release(r);
    return st;
  }
  if (node) { /* a view of t, as ops_shape.c's views: in-place ops on it rebase t's history */
    node->is_view = true;
    node->view_version = atomic_load(&t->storage->version);
    r->base = pt_tensor_retain(t->base ? t->base : t);
  }
  *out = r;
  return PT_OK;
}

/* the backward function of the node t got (t is released) */
static pt_backward_fn probe_fn(pt_status st, pt_tensor *t) {
  pt_backward_fn f = !st && t && t->grad_fn ? t->grad_fn->backward : NULL;
  if (!st) pt_tensor_release(t);
  return f;
}

static pt_status graph_probe(pt_ctx *ctx, graph_table *gt) {
  memset(gt, 0, sizeof *gt);
  pt_tensor *a = NULL, *m = NULL, *c = NULL, *r = NULL;
  int64_t one = 1, two = 2, sq[2] = {1, 1};
  pt_status st;
  if ((st = pt_tensor_zeros(ctx, PT_FLOAT64, 1, &one, &a)) ||
      (st = pt_tensor_zeros(ctx, PT_FLOAT64, 2, sq, &m)) ||
      (st = pt_tensor_zeros(ctx, PT_BOOL, 1, &one, &c))) {
    pt_tensor_release(a);
    pt_tensor_release(m);
    return st;
  }
  a->requires_grad = m->requires_grad = true;
  bool was = ctx->grad_enabled;
  ctx->grad_enabled = true;
  pt_tensor *aa[2] = {a, a};
  int perm[2] = {1, 0};
#define PROBE(field, call) (r = NULL, st = (call), gt->field = probe_fn(st, r))
  PROBE(binary, pt_add(ctx, a, a, &r));
  PROBE(unary, pt_sin(ctx, a, &r));
  PROBE(reduce, pt_sum(ctx, a, 0, false, &r));
  PROBE(softmax, pt_softmax(ctx, a, 0, &r));
  PROBE(product, pt_mm(ctx, m, m, &r));
  PROBE(addmm, pt_addmm(ctx, m, m, m, 1.0, 1.0, &r));
  PROBE(reshape, pt_view(ctx, a, 2, sq, &r));
  PROBE(transpose, pt_transpose(ctx, m, 0, 1, &r));
  PROBE(permute, pt_permute(ctx, m, perm, &r));
  PROBE(narrow, pt_narrow(ctx, a, 0, 0, 1, &r));
  PROBE(strided, pt_diagonal(ctx, m, 0, 0, 1, &r));
  PROBE(expand, pt_expand(ctx, a, 1, &two, &r));
  PROBE(clone, pt_clone(ctx, a, &r));
  PROBE(cat, pt_cat(ctx, 2, aa, 0, &r));
  PROBE(to_dtype, pt_to_dtype(ctx, a, PT_FLOAT32, &r));
  PROBE(where, pt_where(ctx, c, a, a, &r));
  PROBE(masked_fill, pt_masked_fill(ctx, a, c, 0.0, &r));
  PROBE(linear, pt_nn_linear(ctx, "linear", m, m, NULL, PT_ACT_NONE, &r));
  PROBE(act, pt_nn_activation(ctx, PT_ACT_TANH, a, 0.0, &r));
  PROBE(layer_norm, pt_nn_layer_norm(ctx, a, 1, &one, NULL, NULL, 1e-5, &r));
  PROBE(rms_norm, pt_nn_rms_norm(ctx, "rms_norm", a, 1, &one, NULL, 1e-5, &r));
  pt_tensor *b2 = NULL; /* two values per channel: a training batch norm needs more than one */
  int64_t b2s[2] = {2, 1};
  if (!pt_tensor_zeros(ctx, PT_FLOAT64, 2, b2s, &b2)) {
    b2->requires_grad = true;
    PROBE(batch_norm, pt_batch_norm(ctx, b2, NULL, NULL, NULL, NULL, true, 0.1, 1e-5, &r));
    pt_tensor_release(b2);
  }
  PROBE(nn_view, pt_nn_view(ctx, "view", a, 1, &one, &r));
  {
    pt_rng keep = ctx->rng; /* the probe's draws must not move the user's stream */
    PROBE(dropout, pt_nn_dropout(ctx, a, 0.5, true, &r));
    ctx->rng = keep;
  }
  PROBE(pointwise_loss, pt_nn_pointwise_loss(ctx, "mse_loss", PT_LOSS_MSE, a, a, NULL, 1.0, PT_REDUCE_MEAN, &r));
  pt_tensor *cls = NULL;
  if (!pt_tensor_zeros(ctx, PT_INT64, 1, &one, &cls)) {
    pt_tensor_fill(ctx, cls, 1.0); /* class 1: the kernels take 1-based targets */
    PROBE(class_loss, pt_nn_cross_entropy(ctx, m, cls, NULL, 0.0, -100, PT_REDUCE_MEAN, &r));
    pt_tensor_release(cls);
  }
  pt_tensor *i1 = NULL; /* index 1 (the kernels take 1-based indices) */
  if (!pt_tensor_zeros(ctx, PT_INT64, 1, &one, &i1)) {
    pt_tensor_fill(ctx, i1, 1.0);
    PROBE(gather, pt_gather(ctx, a, 0, i1, &r));
    PROBE(index_select, pt_index_select(ctx, a, 0, i1, &r));
    PROBE(embedding, pt_nn_embedding(ctx, m, i1, 0, &r));
    PROBE(scatter, pt_scatter_add(ctx, a, 0, i1, a, &r));
    PROBE(scatter_reduce, pt_scatter_reduce(ctx, a, 0, i1, a, PT_SCATTER_SUM, true, &r));
    pt_tensor_release(i1);
  }
  pt_tensor *g4 = NULL, *g3 = NULL; /* one row of H = 1 */
  int64_t s4[2] = {1, 4}, s3[2] = {1, 3};
  if (!pt_tensor_zeros(ctx, PT_FLOAT64, 2, s4, &g4) && !pt_tensor_zeros(ctx, PT_FLOAT64, 2, s3, &g3)) {
    PROBE(lstm_cell, pt_nn_lstm_cell(ctx, g4, g4, m, &r));
    PROBE(gru_cell, pt_nn_gru_cell(ctx, g3, g3, m, &r));
  }
  pt_tensor_release(g4);
  pt_tensor_release(g3);
  pt_tensor *tap = NULL, *wt = NULL; /* one tap of weight 0 at 0 */
  if (!pt_tensor_zeros(ctx, PT_INT64, 2, sq, &tap) && !pt_tensor_zeros(ctx, PT_FLOAT64, 2, sq, &wt))
    PROBE(taps, pt_taps_along(ctx, a, 0, tap, wt, &r));
  pt_tensor_release(tap);
  pt_tensor_release(wt);
  PROBE(minmax, pt_max(ctx, a, 0, false, &r, NULL));
  PROBE(cumsum, pt_cumsum(ctx, a, 0, &r));
  PROBE(cumprod, pt_cumprod(ctx, a, 0, &r));
  PROBE(special, pt_special(ctx, PT_SP_LGAMMA, a, 0, &r));
  PROBE(xlog1py, pt_xlog1py(ctx, a, a, &r));
  PROBE(select, pt_sort(ctx, a, 0, false, &r, NULL));
  PROBE(repeat, pt_repeat(ctx, a, 1, &two, &r));
  PROBE(masked_select, pt_masked_select(ctx, a, c, &r));
  PROBE(lerp, pt_lerp(ctx, a, a, NULL, 0.5, &r));
  PROBE(logcumsumexp, pt_logcumsumexp(ctx, a, 0, &r));
  pt_tensor *m1 = NULL; /* an invertible {1,1} matrix */
  if (!pt_tensor_zeros(ctx, PT_FLOAT64, 2, sq, &m1)) {
    pt_tensor_fill(ctx, m1, 1.0);
    m1->requires_grad = true;
    PROBE(linalg_inv, pt_linalg_inv(ctx, "linalg.inv", m1, &r));
    PROBE(det, pt_linalg_det(ctx, "linalg.det", m1, &r)); /* slogdet and logdet share its backward */
    PROBE(linalg_solve, pt_linalg_solve(ctx, m1, m1, true, &r));
    PROBE(cholesky, pt_linalg_cholesky(ctx, "linalg.cholesky", m1, false, &r));
    PROBE(eigh, pt_linalg_eigh(ctx, "linalg.eigvalsh", m1, false, &r, NULL));
    PROBE(svd, pt_linalg_svd(ctx, "linalg.svdvals", m1, false, NULL, &r, NULL));
    pt_tensor_release(m1);
  }
  { /* in-place writes: copy_ into a constant, copy_ into a view of a base with a history
     * (the base gets CopySlices), fill_ of a tensor with a history */
    pt_tensor *d = NULL, *b = NULL, *v = NULL;
    if (!(st = pt_tensor_zeros(ctx, PT_FLOAT64, 1, &one, &d))) {
      st = pt_copy_(ctx, d, a);
      gt->copy = probe_fn(st, d);
      if (st) pt_tensor_release(d);
    }
    if (!pt_clone(ctx, a, &b) && !pt_narrow(ctx, b, 0, 0, 1, &v) && !pt_copy_(ctx, v, a))
      gt->copy_slices = b->grad_fn ? b->grad_fn->backward : NULL;
    pt_tensor_release(v);
    pt_tensor_release(b);
    r = NULL;
    if (!(st = pt_clone(ctx, a, &r))) st = pt_fill_(ctx, r, 0.0);
    gt->fill = probe_fn(st, r);
    if (st) pt_tensor_release(r);
  }
  pt_tensor *x4 = NULL;
  int64_t x4s[4] = {1, 1, 1, 1};
  if (!pt_tensor_zeros(ctx, PT_FLOAT64, 4, x4s, &x4)) {
    x4->requires_grad = true;
    pt_conv2d_opts co = {{1, 1}, {0, 0}, {1, 1}, 1};
    PROBE(conv2d, pt_conv2d(ctx, x4, x4, NULL, &co, &r));
    pt_conv_transpose2d_opts cto = {{1, 1}, {0, 0}, {0, 0}, {1, 1}, 1};
    PROBE(conv_transpose2d, pt_conv_transpose2d(ctx, x4, x4, NULL, &cto, &r));
    pt_pool2d_opts po = {.kernel = {1, 1}, .stride = {1, 1}, .dilation = {1, 1}, .count_include_pad = true};
    PROBE(max_pool, pt_max_pool2d(ctx, x4, &po, &r));
    PROBE(avg_pool, pt_avg_pool2d(ctx, x4, &po, &r));
    PROBE(adaptive_avg_pool, pt_adaptive_avg_pool2d(ctx, x4, 1, 1, &r));
    PROBE(dropout2d, pt_dropout2d(ctx, x4, 0.5, false, &r)); /* (evaluation mode: no draws) */
    pt_tensor *i4 = NULL;
    if (!pt_tensor_zeros(ctx, PT_INT64, 4, x4s, &i4))
      PROBE(max_unpool, pt_max_unpool2d(ctx, "max_unpool2d", x4, i4, 0, 1, 1, &r));
    pt_tensor_release(i4);
    pt_tensor_release(x4);
  }
#undef PROBE
  ctx->grad_enabled = was;
  pt_tensor_release(a);
  pt_tensor_release(m);
  pt_tensor_release(c);
  return PT_OK;
}

/* Temporaries of one formula: every helper returns a borrowed tensor owned by the scratch (NULL
 * once something failed, and then does nothing), so formulas read as expressions. */
#define GF_MAX_TMP 96
typedef struct gf {
  pt_ctx *ctx;
  pt_status st;
  int n;
  pt_tensor *tmp[GF_MAX_TMP];
} gf;

static pt_tensor *gf_keep(gf *s, pt_status st, pt_tensor *t) {
  if (st) {
    s->st = st;
    return NULL;
  }
  if (s->n == GF_MAX_TMP) {
    pt_tensor_release(t);
    s->st = pt_fail(s->ctx, PT_ESTATE, "create_graph: too many temporaries in one formula");
    return NULL;
  }
  return s->tmp[s->n++] = t;
}

static pt_status gf_end(gf *s) {
  for (int i = 0; i < s->n; i++) pt_tensor_release(s->tmp[i]);
  return s->st;
}

#define GF(s, call)                                                                            \
  do {                                                                                         \
    if ((s)->st) return NULL;                                                                  \
    pt_tensor *r_ = NULL;                                                                      \
    pt_status st_ = (call);                                                                    \
    return gf_keep((s), st_, r_);                                                              \
  } while (0)
#define R_ (&r_)

static pt_tensor *G_bin(gf *s, pt_binop op, pt_tensor *a, pt_tensor *b) { GF(s, pt_binary(s->ctx, op, a, b, R_)); }
static pt_tensor *G_numn(gf *s, pt_binop op, pt_tensor *a, pt_number v, bool rev) {
  GF(s, pt_binary_number(s->ctx, op, a, v, rev, R_));
}
static pt_tensor *G_num(gf *s, pt_binop op, pt_tensor *a, double v) {
  return G_numn(s, op, a, pt_number_float(v), false);
}
static pt_tensor *G_rnum(gf *s, pt_binop op, double v, pt_tensor *a) {
  return G_numn(s, op, a, pt_number_float(v), true);
}
static pt_tensor *G_un(gf *s, pt_unop op, pt_tensor *a) { GF(s, pt_unary(s->ctx, op, a, R_)); }
static pt_tensor *G_to(gf *s, pt_tensor *a, pt_dtype dt) { GF(s, pt_to_dtype(s->ctx, a, dt, R_)); }
static pt_tensor *G_where(gf *s, pt_tensor *c, pt_tensor *a, pt_tensor *b) { GF(s, pt_where(s->ctx, c, a, b, R_)); }
static pt_tensor *G_zero(gf *s, pt_dtype dt) { GF(s, pt_tensor_scalar(s->ctx, dt, 0.0, R_)); }
static pt_tensor *G_zeros(gf *s, pt_dtype dt, int nd, const int64_t *shape) {
  GF(s, pt_tensor_zeros(s->ctx, dt, nd, shape, R_));
}
static pt_tensor *G_sum(gf *s, pt_tensor *a, int dim, bool keep) { GF(s, pt_sum(s->ctx, a, dim, keep, R_)); }
static pt_tensor *G_sum_dims(gf *s, pt_tensor *a, int n, const int *dims, bool keep) {
  GF(s, pt_sum_dims(s->ctx, a, n, dims, keep, R_));
}
static pt_tensor *G_mean(gf *s, pt_tensor *a, int dim) { GF(s, pt_mean(s->ctx, a, dim, true, R_)); }
static pt_tensor *G_std(gf *s, pt_tensor *a, int dim, double c) { GF(s, pt_std(s->ctx, a, dim, c, true, R_)); }
static pt_tensor *G_norm2(gf *s, pt_tensor *a, int dim) { GF(s, pt_norm(s->ctx, a, 2.0, dim, true, R_)); }
static pt_tensor *G_norm(gf *s, pt_tensor *a, double p, int dim) { GF(s, pt_norm(s->ctx, a, p, dim, true, R_)); }
static pt_tensor *G_lse(gf *s, pt_tensor *a, int dim) { GF(s, pt_logsumexp(s->ctx, a, dim, true, R_)); }
static pt_tensor *G_softmax(gf *s, pt_tensor *a, int dim, bool logsm) {
  GF(s, logsm ? pt_log_softmax(s->ctx, a, dim, R_) : pt_softmax(s->ctx, a, dim, R_));
}
static pt_tensor *G_reshape(gf *s, pt_tensor *a, int nd, const int64_t *shape) {
  GF(s, pt_reshape(s->ctx, a, nd, shape, R_));
}
static pt_tensor *G_unsq(gf *s, pt_tensor *a, int dim) { GF(s, pt_unsqueeze(s->ctx, a, dim, R_)); }
static pt_tensor *G_expand(gf *s, pt_tensor *a, int nd, const int64_t *shape) {
  GF(s, pt_expand(s->ctx, a, nd, shape, R_));
}
static pt_tensor *G_transpose(gf *s, pt_tensor *a, int d0, int d1) { GF(s, pt_transpose(s->ctx, a, d0, d1, R_)); }
static pt_tensor *G_mT(gf *s, pt_tensor *a) { /* the last two dims swapped */
  return s->st ? NULL : G_transpose(s, a, a->ndim - 2, a->ndim - 1);
}
static pt_tensor *G_permute(gf *s, pt_tensor *a, const int *perm) { GF(s, pt_permute(s->ctx, a, perm, R_)); }
static pt_tensor *G_matmul(gf *s, pt_tensor *a, pt_tensor *b) { GF(s, pt_matmul(s->ctx, a, b, R_)); }
static pt_tensor *G_narrow(gf *s, pt_tensor *a, int dim, int64_t start, int64_t len) {
  GF(s, pt_narrow(s->ctx, a, dim, start, len, R_));
}
static pt_tensor *G_cat(gf *s, int n, pt_tensor *const *ts, int dim) { GF(s, pt_cat(s->ctx, n, ts, dim, R_)); }
static pt_tensor *G_masked_fill(gf *s, pt_tensor *a, pt_tensor *mask) {
  GF(s, pt_masked_fill(s->ctx, a, mask, 0.0, R_));
}
static pt_tensor *G_prod(gf *s, pt_tensor *a, int dim, bool keep) { GF(s, pt_prod(s->ctx, a, dim, keep, R_)); }
static pt_tensor *G_cumsum(gf *s, pt_tensor *a, int dim) { GF(s, pt_cumsum(s->ctx, a, dim, R_)); }
static pt_tensor *G_cumprod(gf *s, pt_tensor *a, int dim) { GF(s, pt_cumprod(s->ctx, a, dim, R_)); }
static pt_tensor *G_index_select(gf *s, pt_tensor *a, int dim, pt_tensor *ix) {
  GF(s, pt_index_select(s->ctx, a, dim, ix, R_));
}
#undef GF
#undef R_

#define G_add(s, a, b) G_bin(s, PT_BIN_ADD, a, b)
#define G_sub(s, a, b) G_bin(s, PT_BIN_SUB, a, b)
#define G_mul(s, a, b) G_bin(s, PT_BIN_MUL, a, b)
#define G_div(s, a, b) G_bin(s, PT_BIN_DIV, a, b)

/* comparisons give constants: a bool mask, or 1/0 in dtype dt */
static pt_tensor *G_cmp(gf *s, pt_binop op, pt_tensor *a, double v) { return G_num(s, op, a, v); }
static pt_tensor *G_ind(gf *s, pt_binop op, pt_tensor *a, double v, pt_dtype dt) {
  return G_to(s, G_cmp(s, op, a, v), dt);
}
/* 1 where !(a <= 0) (NaN included, as relu's threshold), else 0 */
static pt_tensor *G_relu_mask(gf *s, pt_tensor *a) {
  return G_to(s, G_un(s, PT_UN_LOGICAL_NOT, G_cmp(s, PT_BIN_LE, a, 0.0)), a->dtype);
}
/* zeros shaped like t whose gradient (zero) flows back to t: where PyTorch's double backward
 * connects the input with a zero derivative (relu's and abs's masks), so that what lies behind
 * it gets a zero gradient, as there, rather than none */
static pt_tensor *G_zero_of(gf *s, pt_tensor *t) {
  if (s->st) return NULL;
  pt_tensor *r_ = NULL, *yes = NULL;
  pt_status st = pt_tensor_scalar(s->ctx, PT_BOOL, 1.0, &yes);
  if (!st) st = pt_masked_fill(s->ctx, t, yes, 0.0, &r_);
  pt_tensor_release(yes);
  return gf_keep(s, st, r_);
}

/* 0 where mask, else a */
static pt_tensor *G_zero_where(gf *s, pt_tensor *mask, pt_tensor *a) {
  return s->st ? NULL : G_where(s, mask, G_zero(s, a->dtype), a);
}

/* a summed over the dims it was broadcast along, to (nd, shape) */
static pt_tensor *G_sum_to(gf *s, pt_tensor *a, int nd, const int64_t *shape) {
  if (s->st) return NULL;
  if (a->ndim == nd && memcmp(a->shape, shape, (size_t)nd * sizeof(int64_t)) == 0) return a;
  int dims[PT_MAX_DIMS], k = 0, lead = a->ndim - nd;
  for (int i = 0; i < a->ndim; i++)
    if (i < lead || (shape[i - lead] == 1 && a->shape[i] != 1)) dims[k++] = i;
  return G_reshape(s, k ? G_sum_dims(s, a, k, dims, true) : a, nd, shape);
}

/* the gradient of input t: reduced to its shape, in its dtype; a new reference */
static pt_tensor *G_finish(gf *s, pt_tensor *d, const pt_tensor *t) {
  pt_tensor *r = G_sum_to(s, d, t->ndim, t->shape);
  if (r && r->dtype != t->dtype) r = G_to(s, r, t->dtype);
  return r ? pt_tensor_retain(r) : NULL;
}

/* t's values without its history: a constant */
static pt_tensor *G_detach(gf *s, pt_tensor *t) {
  if (s->st) return NULL;
  pt_tensor *r = NULL;
  pt_status st = pt_detach(s->ctx, t, &r);
  return gf_keep(s, st, r);
}
static pt_tensor *G_special(gf *s, pt_special_op op, pt_tensor *x, int64_t k) {
  if (s->st) return NULL;
  pt_tensor *r = NULL;
  pt_status st = pt_special(s->ctx, op, x, k, &r);
  return gf_keep(s, st, r);
}

/* constants (no history): ones, and an int64 index 1..n or n..1 (pt_index_select's 1-based) */
static pt_tensor *G_ones(gf *s, pt_dtype dt, int nd, const int64_t *shape) {
  static const int64_t none = 0; /* (a 0-d tensor needs no shape) */
  pt_tensor *r = G_zeros(s, dt, nd, nd ? shape : &none);
  if (r) pt_tensor_fill(s->ctx, r, 1.0);
  return r;
}
static pt_tensor *G_range_index(gf *s, int64_t n, bool reversed) {
  pt_tensor *r = G_zeros(s, PT_INT64, 1, &n);
  if (!r) return NULL;
  int64_t *p = pt_tensor_data(r);
  for (int64_t i = 0; i < n; i++) p[i] = reversed ? n - i : i + 1;
  return r;
}
/* a reversed along dim (torch's flip), as a recorded index_select */
static pt_tensor *G_flip(gf *s, pt_tensor *a, int dim) {
  return s->st ? NULL : G_index_select(s, a, dim, G_range_index(s, a->shape[dim], true));
}

/* whether t (a floating tensor on the CPU) holds a zero */
static bool any_zero(const pt_tensor *t) {
  for (int64_t i = 0, n = pt_tensor_numel(t); i < n; i++)
    if (pt_tensor_get_flat(t, i) == 0) return true;
  return false;
}

/* ops_elementwise.c keeps each input's storage version in ints[8 + k] (check_versions) */
#define EW_VERSION_SLOT 8
static pt_status gf_check_versions(pt_ctx *ctx, const pt_node *n) {
  if (n->n_ints != EW_VERSION_SLOT + n->n_inputs) return PT_OK;
  for (int k = 0; k < n->n_inputs; k++) {
    pt_tensor *t = n->inputs[k];
    if (t && (int64_t)atomic_load(&t->storage->version) != n->ints[EW_VERSION_SLOT + k])
      return pt_fail(ctx, PT_ESTATE,
                     "one of the variables needed for gradient computation has been modified by "
                     "an inplace operation (input %d is at version %u; expected version %lld)",
                     k + 1, (unsigned)atomic_load(&t->storage->version),
                     (long long)n->ints[EW_VERSION_SLOT + k]);
  }
  return PT_OK;
}

/* ops_elementwise.c binary: ints[0] op, ints[1] layout (0 both tensors, 1 tensor op number,
 * 2 number op tensor), ints[2] the number is an integer, scalars[0] the number, scalars[1] alpha */
static bool gf_binary_ok(int op) {
  return op == PT_BIN_ADD || op == PT_BIN_SUB || op == PT_BIN_MUL || op == PT_BIN_DIV ||
         op == PT_BIN_POW || op == PT_BIN_MAXIMUM || op == PT_BIN_MINIMUM || op == PT_BIN_ATAN2 ||
         op == PT_BIN_HYPOT || op == PT_BIN_REMAINDER || op == PT_BIN_FMOD || op == PT_BIN_LOGADDEXP ||
         op == PT_BIN_XLOGY || op == PT_BIN_COPYSIGN;
}

/* maximum / minimum's share of the gradient for a against b (b NULL: the number v), as PyTorch
 * splits it: 0 where a loses (lose: LT for maximum, GT for minimum), 1/2 at a tie, else 1 (a NaN
 * on either side, which neither wins nor loses, gives both sides the whole gradient) */
static pt_tensor *G_wins(gf *s, pt_binop lose, pt_tensor *a, pt_tensor *b, pt_number v) {
  pt_dtype dt = a->dtype;
  pt_tensor *out =
      b ? G_add(s, G_to(s, G_bin(s, lose, a, b), dt), G_num(s, PT_BIN_MUL, G_to(s, G_bin(s, PT_BIN_EQ, a, b), dt), 0.5))
        : G_add(s, G_ind(s, lose, a, v.d, dt), G_num(s, PT_BIN_MUL, G_ind(s, PT_BIN_EQ, a, v.d, dt), 0.5));
  return G_num(s, PT_BIN_ADD, G_num(s, PT_BIN_MUL, out, -1.0), 1.0);
}

static pt_status gf_binary(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  int op = (int)n->ints[0], layout = (int)n->ints[1];
  double alpha = n->scalars[1];
  pt_number num = n->ints[2] ? pt_number_int((int64_t)n->scalars[0]) : pt_number_float(n->scalars[0]);
  pt_tensor *x = NULL, *y = NULL;
  int ix = -1, iy = -1;
  if (layout == 0) x = n->inputs[0], y = n->inputs[1], ix = 0, iy = 1;
  else if (layout == 1) x = n->inputs[0], ix = 0;
  else y = n->inputs[0], iy = 0;
  pt_status st;
  if (op != PT_BIN_ADD && op != PT_BIN_SUB && (st = gf_check_versions(ctx, n))) return st;
  gf s = {.ctx = ctx};
  for (int side = 0; side < 2 && !s.st; side++) {
    int k = side == 0 ? ix : iy;
    if (k < 0 || !n->needs_grad[k]) continue;
    pt_tensor *d = NULL;
    switch (op) {
    case PT_BIN_ADD:
    case PT_BIN_SUB: {
      double f = side == 0 ? 1.0 : (op == PT_BIN_ADD ? alpha : -alpha);
      d = f == 1.0 ? g : G_num(&s, PT_BIN_MUL, g, f);
      break;
    }
    case PT_BIN_MUL: {
      pt_tensor *o = side == 0 ? y : x;
      d = o ? G_mul(&s, g, o) : G_numn(&s, PT_BIN_MUL, g, num, false);
      break;
    }
    case PT_BIN_DIV:
      if (side == 0) {
        d = y ? G_div(&s, g, y) : G_numn(&s, PT_BIN_DIV, g, num, false);
      } else { /* -g x / y^2 */
        pt_tensor *gx = x ? G_mul(&s, g, x) : G_numn(&s, PT_BIN_MUL, g, num, false);
        d = G_un(&s, PT_UN_NEG, G_div(&s, gx, G_mul(&s, y, y)));
      }
      break;
    case PT_BIN_ATAN2: { /* d/dx atan2(x, y) = y / (x^2 + y^2), d/dy = -x / (x^2 + y^2) */
      pt_tensor *xx = x ? G_mul(&s, x, x) : NULL, *yy = y ? G_mul(&s, y, y) : NULL;
      pt_tensor *den = xx && yy ? G_add(&s, xx, yy) : G_num(&s, PT_BIN_ADD, xx ? xx : yy, num.d * num.d);
      pt_tensor *other = side == 0 ? (y ? y : NULL) : (x ? x : NULL);
      pt_tensor *top = other ? G_mul(&s, g, other) : G_num(&s, PT_BIN_MUL, g, num.d);
      d = G_div(&s, top, den);
      if (side == 1) d = G_un(&s, PT_UN_NEG, d);
      break;
    }
    case PT_BIN_MAXIMUM:
    case PT_BIN_MINIMUM: {
      pt_binop lose = op == PT_BIN_MAXIMUM ? PT_BIN_LT : PT_BIN_GT;
      d = G_mul(&s, g, side == 0 ? G_wins(&s, lose, x, y, num) : G_wins(&s, lose, y, x, num));
      break;
    }
    case PT_BIN_HYPOT: { /* this side / hypot(x, y) */
      pt_tensor *self = side == 0 ? x : y, *other = side == 0 ? y : x;
      pt_tensor *h = other ? G_bin(&s, PT_BIN_HYPOT, self, other) : G_numn(&s, PT_BIN_HYPOT, self, num, false);
      d = G_div(&s, G_mul(&s, g, self), h);
      break;
    }
    case PT_BIN_LOGADDEXP: { /* sigmoid(this side - the other) */
      pt_tensor *self = side == 0 ? x : y, *other = side == 0 ? y : x;
      pt_tensor *diff = other ? G_sub(&s, self, other) : G_numn(&s, PT_BIN_SUB, self, num, false);
      d = G_mul(&s, g, G_un(&s, PT_UN_SIGMOID, diff));
      break;
    }
    case PT_BIN_REMAINDER:
    case PT_BIN_FMOD: /* x: 1; y: -floor(x / y) (remainder), -trunc(x / y) (fmod), constants */
      if (side == 0) {
        d = g;
      } else {
        pt_tensor *yd = G_detach(&s, y), *xd = x ? G_detach(&s, x) : NULL, *q;
        if (op == PT_BIN_REMAINDER) {
          q = xd ? G_bin(&s, PT_BIN_FLOOR_DIVIDE, xd, yd) : G_numn(&s, PT_BIN_FLOOR_DIVIDE, yd, num, true);
        } else { /* trunc(q) = q - frac(q), exactly */
          q = xd ? G_div(&s, xd, yd) : G_numn(&s, PT_BIN_DIV, yd, num, true);
          q = G_sub(&s, q, G_un(&s, PT_UN_FRAC, q));
        }
        d = G_un(&s, PT_UN_NEG, G_mul(&s, g, q));
      }
      break;
    case PT_BIN_XLOGY:
      if (side == 0) { /* xlogy(g, y), 0 where x == 0 and y <= 0 (PyTorch's) */
        d = y ? G_bin(&s, PT_BIN_XLOGY, g, y) : G_numn(&s, PT_BIN_XLOGY, g, num, false);
        pt_tensor *yle = y ? G_cmp(&s, PT_BIN_LE, y, 0.0) : NULL;
        if (!y && num.d <= 0) d = G_zero_where(&s, G_cmp(&s, PT_BIN_EQ, x, 0.0), d);
        else if (y) d = G_zero_where(&s, G_bin(&s, PT_BIN_LOGICAL_AND, G_cmp(&s, PT_BIN_EQ, x, 0.0), yle), d);
      } else { /* g x / y */
        d = G_div(&s, x ? G_mul(&s, g, x) : G_numn(&s, PT_BIN_MUL, g, num, false), y);
      }
      break;
    case PT_BIN_COPYSIGN:
      if (side == 0) { /* copysign(x, y) / x, 0 where x == 0: a constant sign */
        pt_tensor *xd = G_detach(&s, x), *yd = y ? G_detach(&s, y) : NULL;
        pt_tensor *c = yd ? G_bin(&s, PT_BIN_COPYSIGN, xd, yd) : G_numn(&s, PT_BIN_COPYSIGN, xd, num, false);
        d = G_mul(&s, g, G_zero_where(&s, G_cmp(&s, PT_BIN_EQ, xd, 0.0), G_div(&s, c, xd)));
      } else { /* the sign's source gets zeros, as PyTorch */
        d = G_zero_of(&s, g);
      }
      break;
    default: /* PT_BIN_POW */
      if (side == 0) { /* y x^(y-1), 0 where y == 0 */
        if (!y) {
          if (num.d == 0) {
            d = G_num(&s, PT_BIN_MUL, g, 0.0);
          } else {
            pt_number e1 = num.is_int ? pt_number_int(num.i - 1) : pt_number_float(num.d - 1);
            d = G_mul(&s, g, G_num(&s, PT_BIN_MUL, G_numn(&s, PT_BIN_POW, x, e1, false), num.d));
          }
        } else {
          pt_tensor *t = G_mul(&s, y, G_bin(&s, PT_BIN_POW, x, G_num(&s, PT_BIN_SUB, y, 1.0)));
          d = G_mul(&s, g, G_zero_where(&s, G_cmp(&s, PT_BIN_EQ, y, 0.0), t));
        }
      } else { /* x^y log x, 0 where x == 0 and y >= 0 */
        pt_tensor *t;
        if (x) {
          t = G_mul(&s, G_bin(&s, PT_BIN_POW, x, y), G_un(&s, PT_UN_LOG, x));
          pt_tensor *zero = G_bin(&s, PT_BIN_LOGICAL_AND, G_cmp(&s, PT_BIN_EQ, x, 0.0),
                                  G_cmp(&s, PT_BIN_GE, y, 0.0));
          t = G_zero_where(&s, zero, t);
        } else {
          t = G_num(&s, PT_BIN_MUL, G_numn(&s, PT_BIN_POW, y, num, true), log(num.d));
          if (num.d == 0) t = G_zero_where(&s, G_cmp(&s, PT_BIN_GE, y, 0.0), t);
        }
        d = G_mul(&s, g, t);
      }
      break;
    }
    gin[k] = G_finish(&s, d, n->inputs[k]);
  }
  return gf_end(&s);
}

/* ops_elementwise.c unary: ints[0] op (saved[0], an output alias for exp/tanh/sigmoid, is
 * recomputed here from the input: it has no history) */
static bool gf_unary_ok(int op) {
  switch (op) {
  case PT_UN_NEG: case PT_UN_ABS: case PT_UN_EXP: case PT_UN_LOG: case PT_UN_SQRT:
  case PT_UN_TANH: case PT_UN_SIGMOID: case PT_UN_RELU: case PT_UN_GELU: case PT_UN_SIN:
  case PT_UN_COS: case PT_UN_ERF: case PT_UN_ERFC: case PT_UN_ERFINV: case PT_UN_LOG1P:
  case PT_UN_EXPM1: case PT_UN_LOG2: case PT_UN_LOG10: case PT_UN_EXP2: case PT_UN_TAN:
  case PT_UN_ASIN: case PT_UN_ACOS: case PT_UN_ATAN: case PT_UN_SINH: case PT_UN_COSH:
  case PT_UN_ASINH: case PT_UN_ACOSH: case PT_UN_ATANH: case PT_UN_FRAC: case PT_UN_SINC:
  case PT_UN_SIGN: case PT_UN_FLOOR: case PT_UN_CEIL: case PT_UN_ROUND:
  case PT_UN_COUNT_PUBLIC: /* ops_elementwise.c's clamp (UN_CLAMP): scalars the bounds */
    return true;
  default:
    return false;
  }
}

#define GF_2_SQRTPI 1.1283791670955126   /* 2 / sqrt(pi) */
#define GF_SQRTPI_2 0.88622692545275801  /* sqrt(pi) / 2 */
#define GF_1_SQRT2PI 0.3989422804014327  /* 1 / sqrt(2 pi) */
#define GF_SQRT1_2 0.70710678118654752   /* 1 / sqrt(2) */

/* exact gelu's derivative: Phi(x) + x phi(x) */
static pt_tensor *G_gelu_d(gf *s, pt_tensor *x) {
  pt_tensor *Phi = G_num(s, PT_BIN_MUL, G_num(s, PT_BIN_ADD, G_un(s, PT_UN_ERF, G_num(s, PT_BIN_MUL, x, GF_SQRT1_2)), 1.0), 0.5);
  pt_tensor *phi = G_num(s, PT_BIN_MUL, G_un(s, PT_UN_EXP, G_num(s, PT_BIN_MUL, G_mul(s, x, x), -0.5)), GF_1_SQRT2PI);
  return G_add(s, Phi, G_mul(s, x, phi));
}

static pt_status gf_unary(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  int op = (int)n->ints[0];
  pt_tensor *x = n->inputs[0];
  pt_status st;
  if (op != PT_UN_NEG && op != PT_UN_FRAC && op != PT_UN_SIGN && op != PT_UN_FLOOR && op != PT_UN_CEIL &&
      op != PT_UN_ROUND && (st = gf_check_versions(ctx, n)))
    return st;
  gf s = {.ctx = ctx};
  pt_tensor *d = NULL, *t; /* d: the gradient; t: a part of the derivative */
  switch (op) {
  case PT_UN_NEG: d = G_un(&s, PT_UN_NEG, g); break;
  case PT_UN_FRAC: d = g; break;
  case PT_UN_SIGN: case PT_UN_FLOOR: case PT_UN_CEIL: case PT_UN_ROUND: d = G_zero_of(&s, g); break;
  case PT_UN_COUNT_PUBLIC: /* clamp: the gradient passes where min <= x <= max (torch) */
    d = G_mul(&s, g, G_mul(&s, G_ind(&s, PT_BIN_GE, x, n->scalars[0], x->dtype),
                          G_ind(&s, PT_BIN_LE, x, n->scalars[1], x->dtype)));
    break;
  case PT_UN_ABS:
    d = G_mul(&s, g, G_sub(&s, G_ind(&s, PT_BIN_GT, x, 0.0, x->dtype), G_ind(&s, PT_BIN_LT, x, 0.0, x->dtype)));
    d = G_add(&s, d, G_zero_of(&s, x));
    break;
  case PT_UN_EXP: d = G_mul(&s, g, G_un(&s, PT_UN_EXP, x)); break;
  case PT_UN_LOG: d = G_div(&s, g, x); break;
  case PT_UN_SQRT: d = G_div(&s, g, G_num(&s, PT_BIN_MUL, G_un(&s, PT_UN_SQRT, x), 2.0)); break;
  case PT_UN_TANH:
    t = G_un(&s, PT_UN_TANH, x);
    d = G_mul(&s, g, G_rnum(&s, PT_BIN_SUB, 1.0, G_mul(&s, t, t)));
    break;
  case PT_UN_SIGMOID:
    t = G_un(&s, PT_UN_SIGMOID, x);
    d = G_mul(&s, g, G_mul(&s, t, G_rnum(&s, PT_BIN_SUB, 1.0, t)));
    break;
  case PT_UN_RELU: d = G_add(&s, G_mul(&s, g, G_relu_mask(&s, x)), G_zero_of(&s, x)); break;
  case PT_UN_GELU: d = G_mul(&s, g, G_gelu_d(&s, x)); break;
  case PT_UN_SIN: d = G_mul(&s, g, G_un(&s, PT_UN_COS, x)); break;
  case PT_UN_COS: d = G_un(&s, PT_UN_NEG, G_mul(&s, g, G_un(&s, PT_UN_SIN, x))); break;
  case PT_UN_ERF:
  case PT_UN_ERFC:
    t = G_un(&s, PT_UN_EXP, G_un(&s, PT_UN_NEG, G_mul(&s, x, x)));
    d = G_mul(&s, g, G_num(&s, PT_BIN_MUL, t, op == PT_UN_ERF ? GF_2_SQRTPI : -GF_2_SQRTPI));
    break;
  case PT_UN_ERFINV:
    t = G_un(&s, PT_UN_ERFINV, x);
    d = G_mul(&s, g, G_num(&s, PT_BIN_MUL, G_un(&s, PT_UN_EXP, G_mul(&s, t, t)), GF_SQRTPI_2));
    break;
  case PT_UN_LOG1P: d = G_div(&s, g, G_num(&s, PT_BIN_ADD, x, 1.0)); break;
  case PT_UN_EXPM1: d = G_mul(&s, g, G_un(&s, PT_UN_EXP, x)); break;
  case PT_UN_LOG2: d = G_div(&s, g, G_num(&s, PT_BIN_MUL, x, M_LN2)); break;
  case PT_UN_LOG10: d = G_div(&s, g, G_num(&s, PT_BIN_MUL, x, M_LN10)); break;
  case PT_UN_EXP2: d = G_mul(&s, g, G_num(&s, PT_BIN_MUL, G_un(&s, PT_UN_EXP2, x), M_LN2)); break;
  case PT_UN_TAN:
    t = G_un(&s, PT_UN_TAN, x);
    d = G_mul(&s, g, G_num(&s, PT_BIN_ADD, G_mul(&s, t, t), 1.0));
    break;
  case PT_UN_ASIN:
  case PT_UN_ACOS: /* -+ g / sqrt(1 - x^2) */
    t = G_un(&s, PT_UN_SQRT, G_rnum(&s, PT_BIN_SUB, 1.0, G_mul(&s, x, x)));
    d = G_div(&s, op == PT_UN_ASIN ? g : G_un(&s, PT_UN_NEG, g), t);
    break;
  case PT_UN_ATAN: d = G_div(&s, g, G_num(&s, PT_BIN_ADD, G_mul(&s, x, x), 1.0)); break;
  case PT_UN_SINH: d = G_mul(&s, g, G_un(&s, PT_UN_COSH, x)); break;
  case PT_UN_COSH: d = G_mul(&s, g, G_un(&s, PT_UN_SINH, x)); break;
  case PT_UN_ASINH:
  case PT_UN_ACOSH: /* g / sqrt(x^2 +- 1) */
    t = G_num(&s, PT_BIN_ADD, G_mul(&s, x, x), op == PT_UN_ASINH ? 1.0 : -1.0);
    d = G_div(&s, g, G_un(&s, PT_UN_SQRT, t));
    break;
  case PT_UN_SINC: { /* (p cos p - sin p) / (p x), p = pi x; at 0 it is 0 with slope -pi^2/3 */
    pt_tensor *zero = G_cmp(&s, PT_BIN_EQ, x, 0.0);
    pt_tensor *xs = G_where(&s, zero, G_ones(&s, x->dtype, 0, NULL), x), *p = G_num(&s, PT_BIN_MUL, xs, M_PI);
    t = G_div(&s, G_sub(&s, G_mul(&s, p, G_un(&s, PT_UN_COS, p)), G_un(&s, PT_UN_SIN, p)), G_mul(&s, p, xs));
    d = G_mul(&s, g, G_where(&s, zero, G_num(&s, PT_BIN_MUL, x, -M_PI * M_PI / 3.0), t));
    break;
  }
  default: /* PT_UN_ATANH */
    d = G_div(&s, g, G_rnum(&s, PT_BIN_SUB, 1.0, G_mul(&s, x, x)));
    break;
  }
  gin[0] = G_finish(&s, d, x);
  return gf_end(&s);
}

/* ops_reduce.c: ints[0] dim (PT_DIM_ALL: every element), ints[1] keepdim, scalars[0] the
 * correction (var, std) or p (norm); the kind is the node's name */
static bool gf_reduce_ok(const pt_node *n) {
  const char *nm = n->name;
  return !strcmp(nm, "SumBackward") || !strcmp(nm, "MeanBackward") || !strcmp(nm, "VarBackward") ||
         !strcmp(nm, "StdBackward") || !strcmp(nm, "LogsumexpBackward") || !strcmp(nm, "NormBackward") ||
         !strcmp(nm, "NansumBackward") || !strcmp(nm, "NanmeanBackward");
}

/* the gradient of the p-norm of x along dim (PT_DIM_ALL: all of it) for p != 0, 2, ge the
 * gradient expanded to x's shape, as torch 1.13's norm_backward: sgn(x) for p = 1, the
 * sign shared between the elements tied at the norm for +-inf, else
 * sgn(x) |x|^(p-1) / norm^(p-1), 0 where x == 0 or the norm is 0. The powers read 1 at those
 * places, so that their own derivatives stay finite there. (p = 0 has none: gf_reduce.) */
static pt_tensor *G_norm_d(gf *s, pt_tensor *x, int dim, double p, pt_tensor *ge) {
  if (s->st) return NULL;
  pt_tensor *sgn = G_add(s, G_un(s, PT_UN_SIGN, x), G_zero_of(s, x)); /* a zero derivative, as torch */
  if (p == 1) return G_mul(s, ge, sgn);
  pt_tensor *ax = G_un(s, PT_UN_ABS, x), *r = G_norm(s, x, p, dim);
  if (isinf(p)) { /* (|x| == norm) / the number of ties */
    pt_tensor *tie = G_to(s, G_bin(s, PT_BIN_EQ, ax, r), x->dtype);
    pt_tensor *ties = G_sum(s, tie, dim, true);
    return G_mul(s, ge, G_div(s, G_mul(s, sgn, tie), ties));
  }
  pt_tensor *xz = G_cmp(s, PT_BIN_EQ, x, 0.0), *rz = G_cmp(s, PT_BIN_EQ, r, 0.0);
  pt_tensor *one = G_ones(s, x->dtype, 0, NULL);
  pt_tensor *axs = G_where(s, xz, one, ax), *rs = G_where(s, rz, one, r);
  pt_tensor *q = G_div(s, G_num(s, PT_BIN_POW, axs, p - 1), G_num(s, PT_BIN_POW, rs, p - 1));
  return G_zero_where(s, rz, G_zero_where(s, xz, G_mul(s, ge, G_mul(s, sgn, q))));
}

static pt_status gf_reduce(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  double param = n->scalars[0];
  const char *nm = n->name;
  /* the 0-"norm" (a count) has no gradient: none, as torch's undefined one */
  if (!n->needs_grad[0] || (!strcmp(nm, "NormBackward") && param == 0)) return PT_OK;
  pt_tensor *x = n->inputs[0];
  int dim = (int)n->ints[0];
  bool keepdim = n->ints[1] != 0;
  gf s = {.ctx = ctx};
  pt_tensor *gr;
  double count;
  if (dim == PT_DIM_ALL) {
    int64_t ones[PT_MAX_DIMS];
    for (int i = 0; i < x->ndim; i++) ones[i] = 1;
    gr = G_reshape(&s, g, x->ndim, ones);
    count = (double)pt_tensor_numel(x);
  } else {
    gr = keepdim ? g : G_unsq(&s, g, dim);
    count = (double)x->shape[dim];
  }
  pt_tensor *ge = G_expand(&s, gr, x->ndim, x->shape), *d, *t;
  if (!strcmp(nm, "SumBackward")) {
    d = ge;
  } else if (!strcmp(nm, "MeanBackward")) {
    d = G_num(&s, PT_BIN_DIV, ge, count);
  } else if (!strcmp(nm, "VarBackward")) {
    t = G_sub(&s, x, G_mean(&s, x, dim));
    d = G_num(&s, PT_BIN_MUL, G_mul(&s, ge, t), 2.0 / (count - param));
  } else if (!strcmp(nm, "StdBackward")) {
    /* (x - mean) / ((n - c) std), 0 where std == 0; the division reads 1 there, so that its own
     * derivative stays finite (torch's double backward of a constant lane is 0, not nan) */
    pt_tensor *sd = G_std(&s, x, dim, param), *sz = G_cmp(&s, PT_BIN_EQ, sd, 0.0);
    pt_tensor *sds = G_where(&s, sz, G_ones(&s, x->dtype, 0, NULL), sd);
    t = G_div(&s, G_mul(&s, ge, G_sub(&s, x, G_mean(&s, x, dim))), G_num(&s, PT_BIN_MUL, sds, count - param));
    d = G_zero_where(&s, sz, t);
  } else if (!strcmp(nm, "NormBackward") && param == 2.0) { /* x / |x|, 0 where |x| == 0 */
    pt_tensor *r = G_norm2(&s, x, dim);
    d = G_zero_where(&s, G_cmp(&s, PT_BIN_EQ, r, 0.0), G_div(&s, G_mul(&s, ge, x), r));
  } else if (!strcmp(nm, "NormBackward")) {
    d = G_norm_d(&s, x, dim, param, ge);
  } else if (!strcmp(nm, "NansumBackward") || !strcmp(nm, "NanmeanBackward")) {
    /* g (nanmean: g / the lane's non-NaN count, a constant) where x is not NaN, else 0 */
    pt_tensor *nan = G_bin(&s, PT_BIN_NE, x, x);
    if (!strcmp(nm, "NanmeanBackward")) {
      pt_tensor *ok = G_to(&s, G_un(&s, PT_UN_LOGICAL_NOT, nan), x->dtype);
      ge = G_div(&s, ge, G_sum(&s, ok, dim, true));
    }
    d = G_zero_where(&s, nan, ge);
  } else { /* logsumexp: exp(x - lse) */
    d = G_mul(&s, ge, G_un(&s, PT_UN_EXP, G_sub(&s, x, G_lse(&s, x, dim))));
  }
  gin[0] = G_finish(&s, d, x);
  return gf_end(&s);
}

/* ops_reduce.c softmax: ints[0] dim (0-based), ints[1] log_softmax */
static pt_status gf_softmax(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *x = n->inputs[0];
  int dim = (int)n->ints[0];
  bool logsm = n->ints[1] != 0;
  gf s = {.ctx = ctx};
  pt_tensor *d;
  if (x->ndim == 0) { /* one element: the output is constant */
    d = G_num(&s, PT_BIN_MUL, g, 0.0);
  } else {
    pt_tensor *y = G_softmax(&s, x, dim, logsm);
    if (logsm) d = G_sub(&s, g, G_mul(&s, G_un(&s, PT_UN_EXP, y), G_sum(&s, g, dim, true)));
    else d = G_mul(&s, y, G_sub(&s, g, G_sum(&s, G_mul(&s, g, y), dim, true)));
  }
  gin[0] = G_finish(&s, d, x);
  return gf_end(&s);
}

/* ops_linalg.c products: which operand is a 1-D row or column follows from the name */
enum { GF_ASIS, GF_ROW, GF_COL };
static bool gf_product_modes(const pt_node *n, int *ma, int *mb) {
  const char *nm = n->name;
  const pt_tensor *a = n->inputs[0], *b = n->inputs[1];
  if (!a || !b) return false;
  if (!strcmp(nm, "MatmulBackward")) {
    *ma = a->ndim == 1 ? GF_ROW : GF_ASIS;
    *mb = b->ndim == 1 ? GF_COL : GF_ASIS;
  } else if (!strcmp(nm, "MmBackward") || !strcmp(nm, "BmmBackward")) {
    *ma = *mb = GF_ASIS;
  } else if (!strcmp(nm, "MvBackward")) {
    *ma = GF_ASIS, *mb = GF_COL;
  } else if (!strcmp(nm, "DotBackward")) {
    *ma = GF_ROW, *mb = GF_COL;
  } else if (!strcmp(nm, "OuterBackward")) {
    *ma = GF_COL, *mb = GF_ROW;
  } else {
    return false;
  }
  return true;
}

static pt_tensor *G_as_matrix(gf *s, pt_tensor *t, int mode) {
  return mode == GF_ROW ? G_unsq(s, t, 0) : mode == GF_COL ? G_unsq(s, t, 1) : t;
}

static pt_status gf_product(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *a = n->inputs[0], *b = n->inputs[1];
  int ma = GF_ASIS, mb = GF_ASIS;
  gf_product_modes(n, &ma, &mb);
  gf s = {.ctx = ctx};
  pt_tensor *am = G_as_matrix(&s, a, ma), *bm = G_as_matrix(&s, b, mb);
  if (s.st) return gf_end(&s);
  int64_t full[PT_MAX_DIMS + 2];
  int nb;
  if ((s.st = pt_broadcast_shapes(ctx, "matmul", am->ndim - 2, am->shape, bm->ndim - 2, bm->shape, &nb, full)))
    return gf_end(&s);
  full[nb] = am->shape[am->ndim - 2];
  full[nb + 1] = bm->shape[bm->ndim - 1];
  pt_tensor *gm = G_reshape(&s, g, nb + 2, full);
  if (n->needs_grad[0]) {
    pt_tensor *ga = G_sum_to(&s, G_matmul(&s, gm, G_mT(&s, bm)), am->ndim, am->shape);
    gin[0] = G_finish(&s, G_reshape(&s, ga, a->ndim, a->shape), a);
  }
  if (n->needs_grad[1]) {
    pt_tensor *gb = G_sum_to(&s, G_matmul(&s, G_mT(&s, am), gm), bm->ndim, bm->shape);
    gin[1] = G_finish(&s, G_reshape(&s, gb, b->ndim, b->shape), b);
  }
  return gf_end(&s);
}

/* ops_linalg.c addmm: inputs input, a, b; scalars[0] beta, scalars[1] alpha */
static pt_status gf_addmm(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  double beta = n->scalars[0], alpha = n->scalars[1];
  pt_tensor *a = n->inputs[1], *b = n->inputs[2];
  gf s = {.ctx = ctx};
  if (n->needs_grad[0]) gin[0] = G_finish(&s, beta == 1 ? g : G_num(&s, PT_BIN_MUL, g, beta), n->inputs[0]);
  if (n->needs_grad[1]) gin[1] = G_finish(&s, G_num(&s, PT_BIN_MUL, G_matmul(&s, g, G_mT(&s, b)), alpha), a);
  if (n->needs_grad[2]) gin[2] = G_finish(&s, G_num(&s, PT_BIN_MUL, G_matmul(&s, G_mT(&s, a), g), alpha), b);
  return gf_end(&s);
}

/* ops_shape.c views and copies */
static pt_status gf_reshape(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  gf s = {.ctx = ctx};
  if (n->needs_grad[0]) gin[0] = G_finish(&s, G_reshape(&s, g, n->inputs[0]->ndim, n->inputs[0]->shape), n->inputs[0]);
  return gf_end(&s);
}

static pt_status gf_transpose(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  gf s = {.ctx = ctx}; /* ints[0], ints[1]: the dims swapped */
  if (n->needs_grad[0]) gin[0] = G_finish(&s, G_transpose(&s, g, (int)n->ints[0], (int)n->ints[1]), n->inputs[0]);
  return gf_end(&s);
}

static pt_status gf_permute(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  int inv[PT_MAX_DIMS]; /* ints: the permutation */
  for (int i = 0; i < n->n_ints && i < PT_MAX_DIMS; i++) inv[n->ints[i]] = i;
  gf s = {.ctx = ctx};
  if (n->needs_grad[0]) gin[0] = G_finish(&s, G_permute(&s, g, inv), n->inputs[0]);
  return gf_end(&s);
}

/* narrow and select: ints[0] dim, ints[1] start, ints[2] length (narrow); the gradient is g
 * between zeros, joined with cat */
static pt_status gf_narrow(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *x = n->inputs[0];
  bool sel = !strcmp(n->name, "SelectBackward");
  int dim = (int)n->ints[0];
  int64_t start = n->ints[1], len = sel ? 1 : n->ints[2], after = x->shape[dim] - start - len;
  gf s = {.ctx = ctx};
  pt_tensor *parts[3];
  int k = 0;
  int64_t shape[PT_MAX_DIMS];
  memcpy(shape, x->shape, sizeof shape);
  if (start > 0) shape[dim] = start, parts[k++] = G_zeros(&s, g->dtype, x->ndim, shape);
  parts[k++] = sel ? G_unsq(&s, g, dim) : g;
  if (after > 0) shape[dim] = after, parts[k++] = G_zeros(&s, g->dtype, x->ndim, shape);
  gin[0] = G_finish(&s, k == 1 ? parts[0] : G_cat(&s, k, parts, dim), x);
  return gf_end(&s);
}

static pt_status gf_expand(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  gf s = {.ctx = ctx};
  if (n->needs_grad[0]) gin[0] = G_finish(&s, g, n->inputs[0]);
  return gf_end(&s);
}

static pt_status gf_identity(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  (void)ctx;
  if (n->needs_grad[0]) gin[0] = pt_tensor_retain(g);
  return PT_OK;
}

/* cat: ints[0] dim, ints[1 + k] input k's length along it */
static pt_status gf_cat(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  int dim = (int)n->ints[0];
  int64_t off = 0;
  gf s = {.ctx = ctx};
  for (int k = 0; k < n->n_inputs; k++) {
    int64_t len = n->ints[1 + k];
    if (n->needs_grad[k]) gin[k] = G_finish(&s, G_narrow(&s, g, dim, off, len), n->inputs[k]);
    off += len;
  }
  return gf_end(&s);
}

static pt_status gf_to_dtype(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  gf s = {.ctx = ctx};
  if (n->needs_grad[0]) gin[0] = G_finish(&s, g, n->inputs[0]);
  return gf_end(&s);
}

/* where: saved[0] the condition; masked_fill: saved[0] the mask */
static pt_status gf_where(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  gf s = {.ctx = ctx};
  pt_tensor *cond = n->saved[0], *zero = G_zero(&s, g->dtype);
  for (int k = 0; k < 2; k++)
    if (n->needs_grad[k])
      gin[k] = G_finish(&s, k == 0 ? G_where(&s, cond, g, zero) : G_where(&s, cond, zero, g), n->inputs[k]);
  return gf_end(&s);
}

static pt_status gf_masked_fill(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  gf s = {.ctx = ctx};
  if (n->needs_grad[0]) gin[0] = G_finish(&s, G_masked_fill(&s, g, n->saved[0]), n->inputs[0]);
  return gf_end(&s);
}

/* nn.c linear: inputs x, weight {out, in}[, bias]; ints[0] rows M, ints[3] the fused activation
 * (relu: saved[2] is the output, whose sign masks the gradient) */
static pt_status gf_linear(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *x = n->inputs[0], *w = n->inputs[1];
  int64_t M = n->ints[0], nout = w->shape[0], in = w->shape[1];
  gf s = {.ctx = ctx};
  pt_tensor *gp = g;
  if (n->ints[3] == PT_ACT_RELU) { /* the mask's zero derivative reaches x, weight and bias */
    gp = G_mul(&s, g, G_ind(&s, PT_BIN_GT, n->saved[2], 0.0, g->dtype));
    for (int k = 0; k < n->n_inputs; k++)
      if (n->needs_grad[k]) gp = G_add(&s, gp, G_sum(&s, G_zero_of(&s, n->inputs[k]), PT_DIM_ALL, false));
  }
  if (n->needs_grad[0]) gin[0] = G_finish(&s, G_matmul(&s, gp, w), x);
  if (n->needs_grad[1] || (n->n_inputs > 2 && n->needs_grad[2])) {
    int64_t s2[2] = {M, nout}, x2[2] = {M, in};
    pt_tensor *g2 = G_reshape(&s, gp, 2, s2);
    if (n->needs_grad[1]) gin[1] = G_finish(&s, G_matmul(&s, G_mT(&s, g2), G_reshape(&s, x, 2, x2)), w);
    if (n->n_inputs > 2 && n->needs_grad[2]) gin[2] = G_finish(&s, G_sum(&s, g2, 0, false), n->inputs[2]);
  }
  return gf_end(&s);
}

/* nn.c's layer norm (inputs x, weight, bias) and nn_rmsnorm.c's RMS norm (x, weight; no mean,
 * no bias): ints M rows of D, scalars[0] eps. Their kernels save statistics without a history,
 * so the formula recomputes the rows' mean and 1/sqrt(var + eps) from x with the ops:
 * dx = rstd (gw - mean(gw) - xhat mean(gw xhat)), gw = g w (RMS: without mean(gw)). */
static pt_status gf_norm_rows(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin, bool centred) {
  pt_tensor *x = n->inputs[0], *w = n->n_inputs > 1 ? n->inputs[1] : NULL;
  pt_tensor *b = centred && n->n_inputs > 2 ? n->inputs[2] : NULL;
  int64_t md[2] = {n->ints[0], n->ints[1]}, wd[2] = {1, n->ints[1]};
  gf s = {.ctx = ctx};
  pt_tensor *x2 = G_reshape(&s, x, 2, md), *g2 = G_reshape(&s, g, 2, md);
  pt_tensor *xm = centred ? G_bin(&s, PT_BIN_SUB, x2, G_mean(&s, x2, 1)) : x2;
  pt_tensor *var = G_mean(&s, G_mul(&s, xm, xm), 1);
  pt_tensor *rstd = G_rnum(&s, PT_BIN_DIV, 1.0, G_un(&s, PT_UN_SQRT, G_num(&s, PT_BIN_ADD, var, n->scalars[0])));
  pt_tensor *xhat = G_mul(&s, xm, rstd);
  pt_tensor *gw = w ? G_mul(&s, g2, G_reshape(&s, w, 2, wd)) : g2;
  if (n->needs_grad[0]) {
    pt_tensor *d = G_bin(&s, PT_BIN_SUB, gw, G_mul(&s, xhat, G_mean(&s, G_mul(&s, gw, xhat), 1)));
    if (centred) d = G_bin(&s, PT_BIN_SUB, d, G_mean(&s, gw, 1));
    gin[0] = G_finish(&s, G_reshape(&s, G_mul(&s, d, rstd), x->ndim, x->shape), x);
  }
  if (w && n->needs_grad[1])
    gin[1] = G_finish(&s, G_reshape(&s, G_sum(&s, G_mul(&s, g2, xhat), 0, false), w->ndim, w->shape), w);
  if (b && n->needs_grad[2]) gin[2] = G_finish(&s, G_reshape(&s, G_sum(&s, g2, 0, false), b->ndim, b->shape), b);
  return gf_end(&s);
}
static pt_status gf_layer_norm(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  return gf_norm_rows(ctx, n, g, gin, true);
}
static pt_status gf_rms_norm(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  return gf_norm_rows(ctx, n, g, gin, false);
}

/* conv.c's batch norm (inputs x {N,C,S...}, weight, bias; ints N, C, S, training; saved[1] the
 * mean and 1/sqrt(var + eps) per channel, float64; scalars[0] eps): in training the statistics
 * are recomputed from x with the ops (over N and S), as gf_norm_rows does over rows; in eval they
 * are the running ones, constants. */
static pt_status gf_batch_norm(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *x = n->inputs[0], *w = n->inputs[1], *b = n->inputs[2];
  int64_t C = n->ints[1], shp[3] = {n->ints[0], C, n->ints[2]}, cshape[3] = {1, C, 1};
  int dims[2] = {0, 2};
  double cnt = (double)(n->ints[0] * n->ints[2]);
  gf s = {.ctx = ctx};
  pt_tensor *x3 = G_reshape(&s, x, 3, shp), *g3 = G_reshape(&s, g, 3, shp), *mean, *rstd;
  if (n->ints[3]) {
    mean = G_num(&s, PT_BIN_DIV, G_sum_dims(&s, x3, 2, dims, true), cnt);
    pt_tensor *xm = G_bin(&s, PT_BIN_SUB, x3, mean);
    pt_tensor *var = G_num(&s, PT_BIN_DIV, G_sum_dims(&s, G_mul(&s, xm, xm), 2, dims, true), cnt);
    rstd = G_rnum(&s, PT_BIN_DIV, 1.0, G_un(&s, PT_UN_SQRT, G_num(&s, PT_BIN_ADD, var, n->scalars[0])));
  } else {
    pt_tensor *st = G_to(&s, n->saved[1], x->dtype);
    mean = G_reshape(&s, G_narrow(&s, st, 0, 0, C), 3, cshape);
    rstd = G_reshape(&s, G_narrow(&s, st, 0, C, C), 3, cshape);
  }
  pt_tensor *xhat = G_mul(&s, G_bin(&s, PT_BIN_SUB, x3, mean), rstd);
  pt_tensor *gw = w ? G_mul(&s, g3, G_reshape(&s, w, 3, cshape)) : g3;
  if (n->needs_grad[0]) {
    pt_tensor *d = gw;
    if (n->ints[3]) {
      pt_tensor *m1 = G_num(&s, PT_BIN_DIV, G_sum_dims(&s, gw, 2, dims, true), cnt);
      pt_tensor *m2 = G_num(&s, PT_BIN_DIV, G_sum_dims(&s, G_mul(&s, gw, xhat), 2, dims, true), cnt);
      d = G_bin(&s, PT_BIN_SUB, G_bin(&s, PT_BIN_SUB, gw, m1), G_mul(&s, xhat, m2));
    }
    gin[0] = G_finish(&s, G_reshape(&s, G_mul(&s, d, rstd), x->ndim, x->shape), x);
  }
  if (w && n->needs_grad[1])
    gin[1] = G_finish(&s, G_reshape(&s, G_sum_dims(&s, G_mul(&s, g3, xhat), 2, dims, false), w->ndim, w->shape), w);
  if (b && n->needs_grad[2])
    gin[2] = G_finish(&s, G_reshape(&s, G_sum_dims(&s, g3, 2, dims, false), b->ndim, b->shape), b);
  return gf_end(&s);
}

static pt_tensor *G_conv2d(gf *s, pt_tensor *a, pt_tensor *w, const pt_conv2d_opts *o) {
  if (s->st) return NULL;
  pt_tensor *r = NULL;
  pt_status st = pt_conv2d(s->ctx, a, w, NULL, o, &r);
  return gf_keep(s, st, r);
}
static pt_tensor *G_conv_transpose2d(gf *s, pt_tensor *a, pt_tensor *w, const pt_conv_transpose2d_opts *o) {
  if (s->st) return NULL;
  pt_tensor *r = NULL;
  pt_status st = pt_conv_transpose2d(s->ctx, a, w, NULL, o, &r);
  return gf_keep(s, st, r);
}
/* conv.c's conv2d and conv_transpose2d nodes share ints (stride, padding, dilation, groups,
 * then N, C, H, W, O, kh, kw, Ho, Wo of the conv2d; for conv_transpose2d the conv whose input
 * gradient it is: C its output channels, H x W its output size, O = its input channels, Ho x Wo
 * its input size). With G groups:
 *  - conv2d's input gradient is conv_transpose2d(g, w) (output_padding restores the input size),
 *    conv_transpose2d's is conv2d(g, w), both with the G groups;
 *  - the weight gradient is the correlation of the conv2d's input with its output gradient (x
 *    and g for conv2d, g and x for conv_transpose2d), itself a conv2d over the batch: both with
 *    their first two dims swapped, stride and dilation trading places, cut to the kernel; with
 *    groups, the input's channels of group k (batch n) become channel k N + n of that conv2d,
 *    whose G groups then pair each output channel with its own group's input channels;
 *  - the bias gradient sums g over N, H, W.
 * All are recorded ops, so a gradient penalty (WGAN-GP) can differentiate them once more. */
static pt_status gf_conv(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin, bool transposed) {
  pt_tensor *x = n->inputs[0], *w = n->inputs[1];
  const int64_t *iv = n->ints;
  int64_t N = iv[7], C = iv[8], H = iv[9], W = iv[10], O = iv[11], kh = iv[12], kw = iv[13], Ho = iv[14], Wo = iv[15];
  int64_t big[4] = {N, C, H, W}, small[4] = {N, O, Ho, Wo}; /* the conv2d's input and output */
  gf s = {.ctx = ctx};
  pt_tensor *x4 = G_reshape(&s, x, 4, transposed ? small : big), *g4 = G_reshape(&s, g, 4, transposed ? big : small);
  int G = (int)iv[6];
  pt_conv2d_opts conv = {{(int)iv[0], (int)iv[1]}, {(int)iv[2], (int)iv[3]}, {(int)iv[4], (int)iv[5]}, G};
  if (n->needs_grad[0]) {
    pt_tensor *d;
    if (transposed) {
      d = G_conv2d(&s, g4, w, &conv);
    } else {
      pt_conv_transpose2d_opts t = {{conv.stride[0], conv.stride[1]}, {conv.padding[0], conv.padding[1]}, {0, 0},
                                    {conv.dilation[0], conv.dilation[1]}, G};
      int64_t size[2] = {H, W}, k[2] = {kh, kw}, in[2] = {Ho, Wo};
      for (int i = 0; i < 2; i++)
        t.output_padding[i] = (int)(size[i] - ((in[i] - 1) * t.stride[i] - 2 * t.padding[i] + t.dilation[i] * (k[i] - 1) + 1));
      d = G_conv_transpose2d(&s, g4, w, &t);
    }
    gin[0] = G_finish(&s, G_reshape(&s, d, x->ndim, x->shape), x);
  }
  if (n->needs_grad[1]) {
    pt_conv2d_opts c = {{conv.dilation[0], conv.dilation[1]}, {conv.padding[0], conv.padding[1]},
                        {conv.stride[0], conv.stride[1]}, 1};
    pt_tensor *in = transposed ? g4 : x4, *out = transposed ? x4 : g4, *bin = NULL;
    if (G == 1) {
      bin = G_transpose(&s, in, 0, 1);
    } else { /* the batch of group k's channels j at channel k N + n: {C/G, G N, H, W} */
      int64_t split[5] = {N, G, C / G, H, W}, joined[4] = {C / G, G * N, H, W};
      int perm[5] = {2, 1, 0, 3, 4};
      bin = G_reshape(&s, G_permute(&s, G_reshape(&s, in, 5, split), perm), 4, joined);
      c.groups = G;
    }
    pt_tensor *d = G_conv2d(&s, bin, G_transpose(&s, out, 0, 1), &c); /* {C/G,O,..} */
    d = G_narrow(&s, G_narrow(&s, d, 2, 0, kh), 3, 0, kw);
    gin[1] = G_finish(&s, G_transpose(&s, d, 0, 1), w);
  }
  if (n->n_inputs > 2 && n->needs_grad[2]) {
    int dims[3] = {0, 2, 3};
    gin[2] = G_finish(&s, G_sum_dims(&s, g4, 3, dims, false), n->inputs[2]);
  }
  return gf_end(&s);
}
static pt_status gf_conv2d(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  return gf_conv(ctx, n, g, gin, false);
}
static pt_status gf_conv_transpose2d(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  return gf_conv(ctx, n, g, gin, true);
}

/* nn.c's view (Flatten, ...; ints: the input's ndim and shape) and dropout (saved[0] the mask,
 * 0 or 1/(1-p) per element): both linear in x */
static pt_status gf_nn_view(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  gf s = {.ctx = ctx};
  if (n->needs_grad[0]) gin[0] = G_finish(&s, G_reshape(&s, g, (int)n->ints[0], n->ints + 1), n->inputs[0]);
  return gf_end(&s);
}
static pt_status gf_dropout(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  gf s = {.ctx = ctx};
  if (n->needs_grad[0]) gin[0] = G_finish(&s, G_mul(&s, g, n->saved[0]), n->inputs[0]);
  return gf_end(&s);
}

/* conv.c's max pooling (ints planes at [8], H, W, Ho, Wo at [9..12]; saved[0] the int32 argmax
 * per output within its plane, -1 where no gradient goes): g scattered to the argmaxes, a
 * scatter_add of g with constant indices, so it is differentiable in g */
static pt_status gf_max_pool(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *x = n->inputs[0], *idx = n->saved[0], *ix = NULL, *keep = NULL;
  int64_t P = n->ints[8], HW = n->ints[9] * n->ints[10], L = n->ints[11] * n->ints[12];
  int64_t os[2] = {P, L}, is[2] = {P, HW};
  pt_status st = pt_tensor_empty(ctx, PT_INT64, 2, os, &ix);
  if (!st) st = pt_tensor_empty(ctx, g->dtype, 2, os, &keep);
  if (st) {
    pt_tensor_release(ix);
    return st;
  }
  const int32_t *ip = pt_tensor_data(idx);
  int64_t *op = pt_tensor_data(ix);
  for (int64_t i = 0; i < P * L; i++) {
    op[i] = ip[i] < 0 ? 1 : ip[i] + 1; /* pt_scatter_add takes 1-based indices */
    pt_tensor_set_flat(keep, i, ip[i] < 0 ? 0.0 : 1.0);
  }
  gf s = {.ctx = ctx};
  gf_keep(&s, PT_OK, ix);
  gf_keep(&s, PT_OK, keep);
  pt_tensor *src = G_mul(&s, G_reshape(&s, g, 2, os), keep), *r = NULL;
  pt_tensor *zero = G_zeros(&s, g->dtype, 2, is);
  if (!s.st) { /* (the call first: an argument list has no order) */
    pt_status st = pt_scatter_add(ctx, zero, 1, ix, src, &r);
    r = gf_keep(&s, st, r);
  }
  if (!s.st) gin[0] = G_finish(&s, G_reshape(&s, r, x->ndim, x->shape), x);
  return gf_end(&s);
}

/* conv.c's average pooling (ints as max pooling's; [13] divisor_override) and adaptive average
 * pooling whose bins tile the input (ints planes, H, W, Ho, Wo; the bins are then windows with
 * a stride of their size): g divided by each window's divisor and spread over the window, a
 * conv_transpose2d of the planes with a kernel of ones, linear in g. The divisors are
 * conv_impl.h's avg_pool_backward's (divisor_override, or the window's elements in the padded
 * input, or in the input alone without count_include_pad): when they differ (padding without
 * count_include_pad, ceil_mode) g is divided by their map first, else the kernel holds
 * 1/divisor. ceil_mode's last windows can reach past the padding: the result is then cut to the
 * input's size. */
static pt_status gf_avg_pool(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *x = n->inputs[0];
  const int64_t *iv = n->ints;
  bool adaptive = n->n_ints == 5;
  int64_t P, H, W, Ho, Wo, kh, kw;
  pt_conv_transpose2d_opts t = {{1, 1}, {0, 0}, {0, 0}, {1, 1}, 1};
  if (adaptive) {
    P = iv[0], H = iv[1], W = iv[2], Ho = iv[3], Wo = iv[4];
    kh = H / Ho, kw = W / Wo;
    t.stride[0] = (int)kh, t.stride[1] = (int)kw;
  } else {
    P = iv[8], H = iv[9], W = iv[10], Ho = iv[11], Wo = iv[12];
    kh = iv[0], kw = iv[1];
    t.stride[0] = (int)iv[2], t.stride[1] = (int)iv[3], t.padding[0] = (int)iv[4], t.padding[1] = (int)iv[5];
  }
  int64_t gs[4] = {P, 1, Ho, Wo}, ks[4] = {1, 1, kh, kw}, ms[4] = {1, 1, Ho, Wo};
  gf s = {.ctx = ctx};
  pt_tensor *divs = G_zeros(&s, g->dtype, 4, ms), *kernel = G_zeros(&s, g->dtype, 4, ks);
  if (s.st) return gf_end(&s);
  bool uniform = true;
  double first = 0;
  for (int64_t oy = 0; oy < Ho; oy++)
    for (int64_t ox = 0; ox < Wo; ox++) {
      double c = (double)(kh * kw);
      if (!adaptive && !iv[13]) {
        int64_t y0 = oy * t.stride[0] - t.padding[0], x0 = ox * t.stride[1] - t.padding[1];
        int64_t y1 = y0 + kh, x1 = x0 + kw;
        int64_t py1 = y1 < H + t.padding[0] ? y1 : H + t.padding[0];
        int64_t px1 = x1 < W + t.padding[1] ? x1 : W + t.padding[1];
        int64_t ya = y0 < 0 ? 0 : y0, xa = x0 < 0 ? 0 : x0, yb = y1 < H ? y1 : H, xb = x1 < W ? x1 : W;
        c = (double)(iv[7] ? (py1 - y0) * (px1 - x0) : (yb - ya) * (xb - xa));
      } else if (!adaptive) {
        c = (double)iv[13];
      }
      if (oy == 0 && ox == 0) first = c;
      uniform = uniform && c == first;
      pt_tensor_set_flat(divs, oy * Wo + ox, c != 0 ? c : INFINITY); /* an empty window gives nothing */
    }
  pt_tensor *g4 = G_reshape(&s, g, 4, gs);
  if (!s.st) pt_tensor_fill(ctx, kernel, uniform ? (first != 0 ? 1.0 / first : 0.0) : 1.0);
  if (!uniform) g4 = G_div(&s, g4, divs);
  int64_t size[2] = {H, W}, k[2] = {kh, kw}, in[2] = {Ho, Wo};
  bool cut = false;
  for (int i = 0; i < 2; i++) {
    int64_t extra = size[i] - ((in[i] - 1) * t.stride[i] - 2 * t.padding[i] + k[i]);
    t.output_padding[i] = extra > 0 ? (int)extra : 0;
    cut = cut || extra < 0;
  }
  pt_tensor *r = G_conv_transpose2d(&s, g4, kernel, &t);
  if (cut) r = G_narrow(&s, G_narrow(&s, r, 2, 0, H), 3, 0, W);
  gin[0] = G_finish(&s, G_reshape(&s, r, x->ndim, x->shape), x);
  return gf_end(&s);
}

/* conv.c's adaptive average pooling in general (ints planes, H, W, Ho, Wo): bin i of n over a
 * size of len is [floor(i len / n), ceil((i + 1) len / n)) (conv_impl.h's), the bins overlap or
 * differ in size. The pooling is separable, y = A x B^T per plane with 0/1 matrices A {Ho, H}
 * and B {Wo, W} of the bins, divided by the bins' sizes: the gradient is A^T (g / sizes) B,
 * two recorded matmuls with constants. */
static pt_tensor *G_bins(gf *s, pt_dtype dt, int64_t n, int64_t len) {
  int64_t shape[2] = {n, len};
  pt_tensor *r = G_zeros(s, dt, 2, shape);
  if (!r) return NULL;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = i * len / n, e = ((i + 1) * len + n - 1) / n; j < e; j++) pt_tensor_set_flat(r, i * len + j, 1.0);
  return r;
}
static pt_status gf_adaptive_avg_pool(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *x = n->inputs[0];
  int64_t P = n->ints[0], H = n->ints[1], W = n->ints[2], Ho = n->ints[3], Wo = n->ints[4];
  int64_t gs[3] = {P, Ho, Wo}, ms[2] = {Ho, Wo};
  gf s = {.ctx = ctx};
  pt_tensor *a = G_bins(&s, g->dtype, Ho, H), *b = G_bins(&s, g->dtype, Wo, W), *sizes = G_zeros(&s, g->dtype, 2, ms);
  if (!s.st)
    for (int64_t i = 0; i < Ho; i++)
      for (int64_t j = 0; j < Wo; j++) {
        int64_t h = ((i + 1) * H + Ho - 1) / Ho - i * H / Ho, w = ((j + 1) * W + Wo - 1) / Wo - j * W / Wo;
        pt_tensor_set_flat(sizes, i * Wo + j, (double)(h * w));
      }
  pt_tensor *q = G_div(&s, G_reshape(&s, g, 3, gs), sizes);
  pt_tensor *r = G_matmul(&s, G_matmul(&s, G_mT(&s, a), q), b);
  gin[0] = G_finish(&s, G_reshape(&s, r, x->ndim, x->shape), x);
  return gf_end(&s);
}

/* gather (ints[0] dim, saved[0] the 1-based index), index_select (the same, a 1-D index),
 * embedding (saved 0-based rows, ints V, D, the padding row or -1) and max/min over a dim
 * (saved 0-based positions, ints[0] dim): their gradients put g back at the indexed places,
 * which scatter_add / index_add_ on zeros do as recorded ops, linear in g */
static pt_tensor *G_scatter_add_zeros(gf *s, const pt_tensor *like, pt_dtype dt, int dim, pt_tensor *ix,
                                      pt_tensor *src) {
  pt_tensor *z = G_zeros(s, dt, like->ndim, like->shape), *r = NULL;
  if (s->st) return NULL;
  pt_status st = pt_scatter_add(s->ctx, z, dim, ix, src, &r);
  return gf_keep(s, st, r);
}
/* index_add of src along dim at the 1-D 1-based index ix into zeros of like's shape, as a
 * scatter_add with the index spread over src's shape (index_add_ is in-place: no graph) */
static pt_tensor *G_index_add_zeros(gf *s, const pt_tensor *like, pt_dtype dt, int dim, pt_tensor *ix,
                                    pt_tensor *src) {
  if (s->st) return NULL;
  pt_tensor *full = NULL;
  s->st = pt_tensor_empty(s->ctx, PT_INT64, src->ndim, src->shape, &full);
  if (s->st) return NULL;
  gf_keep(s, PT_OK, full);
  int64_t inner = 1, len = src->ndim ? src->shape[dim] : 1;
  for (int d = dim + 1; d < src->ndim; d++) inner *= src->shape[d];
  int64_t *fp = pt_tensor_data(full);
  for (int64_t i = 0, n = pt_tensor_numel(full); i < n; i++)
    fp[i] = (int64_t)pt_tensor_get_flat(ix, (i / inner) % len);
  return G_scatter_add_zeros(s, like, dt, dim, full, src);
}
/* a new 1-based int64 copy of 0-based positions, in shape (nd, shape) */
static pt_tensor *G_one_based(gf *s, const pt_tensor *ix0, int nd, const int64_t *shape) {
  if (s->st) return NULL;
  pt_tensor *r = NULL;
  s->st = pt_tensor_empty(s->ctx, PT_INT64, nd, shape, &r);
  if (s->st) return NULL;
  const int64_t *ip = pt_tensor_data(ix0);
  int64_t *op = pt_tensor_data(r);
  for (int64_t i = 0, n = pt_tensor_numel(r); i < n; i++) op[i] = ip[i] + 1;
  return gf_keep(s, PT_OK, r);
}
static pt_tensor *G_gather(gf *s, pt_tensor *t, int dim, pt_tensor *ix) {
  if (s->st) return NULL;
  pt_tensor *r = NULL;
  pt_status st = pt_gather(s->ctx, t, dim, ix, &r);
  return gf_keep(s, st, r);
}
static pt_status gf_gather(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  gf s = {.ctx = ctx};
  pt_tensor *x = n->inputs[0];
  if (n->needs_grad[0])
    gin[0] = G_finish(&s, G_scatter_add_zeros(&s, x, g->dtype, (int)n->ints[0], n->saved[0], g), x);
  return gf_end(&s);
}
static pt_status gf_index_select(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  gf s = {.ctx = ctx};
  pt_tensor *x = n->inputs[0];
  if (n->needs_grad[0])
    gin[0] = G_finish(&s, G_index_add_zeros(&s, x, g->dtype, (int)n->ints[0], n->saved[0], g), x);
  return gf_end(&s);
}
static pt_status gf_embedding(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *w = n->inputs[0], *idx = n->saved[0];
  int64_t cnt = pt_tensor_numel(idx), D = n->ints[1], pad = n->ints[2], g2s[2] = {cnt, D}, col[2] = {cnt, 1};
  gf s = {.ctx = ctx};
  pt_tensor *g2 = G_reshape(&s, g, 2, g2s);
  if (pad >= 0) { /* the padding row gets no gradient */
    pt_tensor *keep = G_zeros(&s, g->dtype, 2, col);
    if (!s.st) {
      const int64_t *ip = pt_tensor_data(idx);
      for (int64_t i = 0; i < cnt; i++) pt_tensor_set_flat(keep, i, ip[i] == pad ? 0.0 : 1.0);
    }
    g2 = G_mul(&s, g2, keep);
  }
  pt_tensor *ix = G_one_based(&s, idx, 1, &cnt);
  gin[0] = G_finish(&s, G_index_add_zeros(&s, w, g->dtype, 0, ix, g2), w);
  return gf_end(&s);
}
static pt_status gf_minmax(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *x = n->inputs[0];
  int dim = (int)n->ints[0];
  gf s = {.ctx = ctx};
  /* over all elements the node shares g among ties with recorded ops (backward_differentiable,
   * ops_reduce.c), so this formula sees a dim; a 0-d x's one element is a flat position */
  if (x->ndim == 0) {
    int64_t one = 1, numel = pt_tensor_numel(x);
    pt_tensor *flat = G_reshape(&s, x, 1, &numel);
    pt_tensor *ix = G_one_based(&s, n->saved[0], 1, &one);
    pt_tensor *r = G_scatter_add_zeros(&s, flat, g->dtype, 0, ix, G_reshape(&s, g, 1, &one));
    gin[0] = G_finish(&s, G_reshape(&s, r, x->ndim, x->shape), x);
    return gf_end(&s);
  }
  int64_t ks[PT_MAX_DIMS];
  memcpy(ks, x->shape, sizeof ks);
  ks[dim] = 1; /* keepdim's shape: g and the positions as scatter_add wants them */
  pt_tensor *gk = G_reshape(&s, g, x->ndim, ks);
  pt_tensor *ix = G_one_based(&s, n->saved[0], x->ndim, ks);
  gin[0] = G_finish(&s, G_scatter_add_zeros(&s, x, g->dtype, dim, ix, gk), x);
  return gf_end(&s);
}
/* ops_resample.c's resampling along ints[0] with taps (saved idx, 0-based, and w, float64, both
 * {m, K}; interpolate's linear, bilinear, bicubic and trilinear modes, a dim at a time):
 * out[.., i, ..] = sum_k x[.., idx[i][k], ..] w[i][k], so x's gradient adds g[.., i, ..] w[i][k]
 * at idx[i][k]: g times the weights (rounded to x's dtype, as the kernel), index_add'ed */
static pt_status gf_taps(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *x = n->inputs[0], *idx = n->saved[0], *w = n->saved[1];
  int dim = (int)n->ints[0];
  int64_t m = idx->shape[0], K = idx->shape[1], mk = m * K, ws[PT_MAX_DIMS + 1], spread[PT_MAX_DIMS];
  ws[0] = m, ws[1] = K;
  for (int d = dim + 1; d < x->ndim; d++) ws[d - dim + 1] = 1; /* w broadcast over the dims after dim */
  memcpy(spread, x->shape, sizeof spread);
  spread[dim] = mk;
  gf s = {.ctx = ctx};
  pt_tensor *wx = G_reshape(&s, G_to(&s, G_to(&s, w, x->dtype), g->dtype), x->ndim - dim + 1, ws);
  pt_tensor *src = G_reshape(&s, G_mul(&s, G_unsq(&s, g, dim + 1), wx), x->ndim, spread);
  pt_tensor *ix = G_one_based(&s, idx, 1, &mk);
  gin[0] = G_finish(&s, G_index_add_zeros(&s, x, g->dtype, dim, ix, src), x);
  return gf_end(&s);
}

/* ops_sort.c's selections (sort, topk, kthvalue, median, mode, cummax/cummin; saved[0] the
 * 0-based positions along ints[0] with that dim kept): g goes back to those positions */
static pt_status gf_select(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *x = n->inputs[0], *ix0 = n->saved[0];
  gf s = {.ctx = ctx};
  pt_tensor *gk = G_reshape(&s, g, ix0->ndim, ix0->shape);
  pt_tensor *ix = G_one_based(&s, ix0, ix0->ndim, ix0->shape);
  gin[0] = G_finish(&s, G_scatter_add_zeros(&s, x, g->dtype, (int)n->ints[0], ix, gk), x);
  return gf_end(&s);
}

/* ops_index.c's scatter_add (inputs t, src; ints dim, add; saved the 1-based index): g for t,
 * g gathered at the index for src */
static pt_status gf_scatter_add(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  gf s = {.ctx = ctx};
  if (n->needs_grad[0]) gin[0] = G_finish(&s, g, n->inputs[0]);
  if (n->n_inputs > 1 && n->inputs[1] && n->needs_grad[1]) {
    pt_tensor *r = NULL;
    pt_status st = pt_gather(ctx, g, (int)n->ints[0], n->saved[0], &r);
    r = gf_keep(&s, st, r);
    gin[1] = G_finish(&s, G_reshape(&s, r, n->inputs[1]->ndim, n->inputs[1]->shape), n->inputs[1]);
  }
  return gf_end(&s);
}

/* The 1-based positions, in storage elements, of a view's elements ({nd, shape} with stride,
 * from offset), flat in row-major order: a constant index (an int64 {numel}). */
static pt_tensor *G_positions(gf *s, int nd, const int64_t *shape, const int64_t *stride, int64_t offset) {
  int64_t numel = 1, at[PT_MAX_DIMS] = {0};
  for (int i = 0; i < nd; i++) numel *= shape[i];
  pt_tensor *r = G_zeros(s, PT_INT64, 1, &numel);
  if (!r) return NULL;
  int64_t *p = pt_tensor_data(r), pos = offset;
  for (int64_t e = 0; e < numel; e++) {
    p[e] = pos + 1;
    for (int i = nd - 1; i >= 0; i--) { /* the next multi-index, row-major */
      pos += stride[i];
      if (++at[i] < shape[i]) break;
      pos -= stride[i] * shape[i];
      at[i] = 0;
    }
  }
  return r;
}
/* g, laid out as a view of a buffer of len elements at positions pos (repeats add up), as a
 * recorded scatter_add of g's elements into zeros: the buffer, 1-D */
static pt_tensor *G_scatter_flat(gf *s, pt_tensor *g, int64_t len, pt_tensor *pos) {
  if (s->st) return NULL;
  int64_t numel = pt_tensor_numel(g);
  pt_tensor *z = G_zeros(s, g->dtype, 1, &len), *src = G_reshape(s, g, 1, &numel), *r = NULL;
  if (s->st) return NULL;
  pt_status st = pt_scatter_add(s->ctx, z, 0, pos, src, &r);
  return gf_keep(s, st, r);
}

/* ops_shape.c's strided views, told apart by name (ints[0] the kind, ints[1..4] the view's
 * parameters, ints[5..] the input's shape): slice (dim, start, count, step), diagonal (offset,
 * dim1, dim2) and unfold (dim, size, step). The same view of a contiguous tensor shaped like the
 * input gives each element's place in it: g is scattered (added: unfold's windows overlap) to
 * those places of a flat gradient. */
static pt_status gf_strided(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *x = n->inputs[0], *v = NULL;
  const int64_t *p = n->ints + 1;
  gf s = {.ctx = ctx};
  pt_tensor *like = G_zeros(&s, PT_BOOL, x->ndim, x->shape); /* contiguous: its offsets are places */
  if (!s.st) {
    pt_status st;
    if (!strcmp(n->name, "DiagonalBackward")) st = pt_diagonal(ctx, like, p[0], (int)p[1], (int)p[2], &v);
    else if (!strcmp(n->name, "UnfoldBackward")) st = pt_unfold(ctx, like, (int)p[0], p[1], p[2], &v);
    else st = pt_slice(ctx, like, (int)p[0], p[1], p[2], p[3], &v);
    v = gf_keep(&s, st, v);
  }
  pt_tensor *pos = v ? G_positions(&s, v->ndim, v->shape, v->stride, v->offset) : NULL;
  pt_tensor *flat = G_scatter_flat(&s, g, pt_tensor_numel(x), pos);
  gin[0] = G_finish(&s, G_reshape(&s, flat, x->ndim, x->shape), x);
  return gf_end(&s);
}

/* AsStridedBackward (a view over its base's current history, autograd.c's history_now): g
 * scattered into a buffer laid out as the base's storage (as_strided_backward), which the base's
 * elements then read at their own places (a recorded index_select) */
static pt_status gf_as_strided(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  const strided_geometry *v = n->extra;
  gf s = {.ctx = ctx};
  pt_tensor *buf = G_scatter_flat(&s, g, v->span, G_positions(&s, v->ndim, v->shape, v->stride, v->offset));
  pt_tensor *at = G_positions(&s, v->base_ndim, v->base_shape, v->base_stride, 0);
  pt_tensor *r = G_reshape(&s, G_index_select(&s, buf, 0, at), v->base_ndim, v->base_shape);
  gin[0] = G_finish(&s, r, n->inputs[0]);
  return gf_end(&s);
}

/* CopySlices (ops_elementwise.c's rebase_view: an in-place write into a view of a contiguous
 * base): inputs[0] the base's old history (an alias at the base's offset), inputs[1] the view
 * (its geometry in the same storage). The view's part of g goes to the view (a recorded
 * index_select at its places), the rest to the old history (g with those places zeroed). */
static pt_status gf_copy_slices(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *b = n->inputs[0], *v = n->inputs[1];
  gf s = {.ctx = ctx};
  int64_t numel = pt_tensor_numel(b);
  pt_tensor *pos = G_positions(&s, v->ndim, v->shape, v->stride, v->offset - b->offset);
  pt_tensor *flat = G_reshape(&s, g, 1, &numel);
  if (n->needs_grad[1])
    gin[1] = G_finish(&s, G_reshape(&s, G_index_select(&s, flat, 0, pos), v->ndim, v->shape), v);
  if (n->needs_grad[0]) {
    pt_tensor *mask = G_zeros(&s, PT_BOOL, 1, &numel); /* a constant: the view's places */
    if (mask)
      for (int64_t i = 0, k = pt_tensor_numel(pos); i < k; i++)
        pt_tensor_set_flat(mask, ((const int64_t *)pt_tensor_data(pos))[i] - 1, 1.0);
    gin[0] = G_finish(&s, G_reshape(&s, G_masked_fill(&s, flat, mask), b->ndim, b->shape), b);
  }
  return gf_end(&s);
}

/* ops_index.c's masked_select: saved[0] the mask, ints[0] and ints[1..] the broadcast shape. g's
 * elements go to the places of the mask's true elements in that shape (a constant index), as a
 * recorded scatter_add, then summed back to the input's shape. */
static pt_status gf_masked_select(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *mask = n->saved[0];
  int nb = (int)n->ints[0];
  const int64_t *bshape = n->ints + 1;
  int64_t numel = 1, mstride[PT_MAX_DIMS], at[PT_MAX_DIMS] = {0}, k = 0, pos = 0;
  for (int i = 0; i < nb; i++) numel *= bshape[i];
  pt_broadcast_strides(mask, nb, bshape, mstride);
  gf s = {.ctx = ctx};
  int64_t count = pt_tensor_numel(g);
  pt_tensor *ix = G_zeros(&s, PT_INT64, 1, &count);
  if (ix) {
    const uint8_t *mp = (const uint8_t *)pt_tensor_data(mask);
    int64_t *p = pt_tensor_data(ix), mo = 0;
    for (int64_t e = 0; e < numel && k < count; e++, pos++) {
      if (mp[mo]) p[k++] = pos + 1;
      for (int i = nb - 1; i >= 0; i--) { /* the next multi-index, row-major */
        mo += mstride[i];
        if (++at[i] < bshape[i]) break;
        mo -= mstride[i] * bshape[i];
        at[i] = 0;
      }
    }
  }
  pt_tensor *flat = G_scatter_flat(&s, g, numel, ix);
  gin[0] = G_finish(&s, G_reshape(&s, flat, nb, bshape), n->inputs[0]);
  return gf_end(&s);
}

/* ops_elementwise.c's lerp: inputs start, end[, weight]; scalars[0] the weight when a number */
static pt_status gf_lerp(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *a = n->inputs[0], *b = n->inputs[1], *w = n->n_inputs > 2 ? n->inputs[2] : NULL;
  double ws = n->scalars[0];
  pt_status st = w ? gf_check_versions(ctx, n) : PT_OK;
  if (st) return st;
  gf s = {.ctx = ctx};
  if (n->needs_grad[0])
    gin[0] = G_finish(&s, w ? G_mul(&s, g, G_rnum(&s, PT_BIN_SUB, 1.0, w)) : G_num(&s, PT_BIN_MUL, g, 1.0 - ws), a);
  if (n->needs_grad[1]) gin[1] = G_finish(&s, w ? G_mul(&s, g, w) : G_num(&s, PT_BIN_MUL, g, ws), b);
  if (w && n->needs_grad[2]) gin[2] = G_finish(&s, G_mul(&s, g, G_sub(&s, b, a)), w);
  return gf_end(&s);
}

/* ops_sort.c's logcumsumexp (ints[0] dim), as torch 1.13's logcumsumexp_backward: with
 * y = logcumsumexp(x) recomputed, the positive and the negative g apart,
 * exp(reversed logcumsumexp(log|g| - y) + x), a very negative number standing for log 0. |g| reads
 * 1 where g == 0 so that log's derivative stays finite there. */
static pt_tensor *G_logcumsumexp(gf *s, pt_tensor *a, int dim) {
  if (s->st) return NULL;
  pt_tensor *r = NULL;
  pt_status st = pt_logcumsumexp(s->ctx, a, dim, &r);
  return gf_keep(s, st, r);
}
static pt_status gf_logcumsumexp(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *x = n->inputs[0];
  int dim = (int)n->ints[0];
  gf s = {.ctx = ctx};
  pt_tensor *y = G_logcumsumexp(&s, x, dim), *one = G_ones(&s, g->dtype, 0, NULL), *lo = G_ones(&s, g->dtype, 0, NULL);
  if (lo) pt_tensor_fill(ctx, lo, g->dtype == PT_FLOAT64 ? -DBL_MAX : g->dtype == PT_FLOAT32 ? -FLT_MAX : -65504.0);
  pt_tensor *lg = G_un(&s, PT_UN_LOG, G_where(&s, G_cmp(&s, PT_BIN_EQ, g, 0.0), one, G_un(&s, PT_UN_ABS, g)));
  pt_tensor *part[2];
  for (int k = 0; k < 2; k++) {
    pt_tensor *lgk = G_where(&s, G_cmp(&s, k ? PT_BIN_LT : PT_BIN_GT, g, 0.0), lg, lo);
    pt_tensor *rev = x->ndim ? G_flip(&s, G_logcumsumexp(&s, G_flip(&s, G_sub(&s, lgk, y), dim), dim), dim)
                             : G_sub(&s, lgk, y); /* one element */
    part[k] = G_un(&s, PT_UN_EXP, G_add(&s, rev, x));
  }
  gin[0] = G_finish(&s, G_sub(&s, part[0], part[1]), x);
  return gf_end(&s);
}

/* conv.c's dropout2d: saved[0] the float64 scale per plane, ints[0] the plane size */
static pt_status gf_dropout2d(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *x = n->inputs[0], *m = n->saved[0];
  int64_t gs[2] = {pt_tensor_numel(m), n->ints[0]}, ms[2] = {gs[0], 1};
  gf s = {.ctx = ctx};
  pt_tensor *d = G_mul(&s, G_reshape(&s, g, 2, gs), G_reshape(&s, m, 2, ms));
  gin[0] = G_finish(&s, G_reshape(&s, d, x->ndim, x->shape), x);
  return gf_end(&s);
}

/* conv.c's max_unpool2d (saved[0] the 0-based int64 places within each output plane, shaped as
 * x; ints planes, P, S the input's and the output's plane sizes): g read at those places, a
 * recorded gather */
static pt_status gf_max_unpool(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *x = n->inputs[0];
  int64_t gs[2] = {n->ints[0], n->ints[2]}, is[2] = {n->ints[0], n->ints[1]};
  gf s = {.ctx = ctx};
  pt_tensor *r = G_gather(&s, G_reshape(&s, g, 2, gs), 1, G_one_based(&s, n->saved[0], 2, is));
  gin[0] = G_finish(&s, G_reshape(&s, r, x->ndim, x->shape), x);
  return gf_end(&s);
}

/* ops_decomp.c's linalg.inv and det / slogdet / logdet, with the inverse recomputed by the op */
static pt_tensor *G_inv(gf *s, pt_tensor *a) {
  if (s->st) return NULL;
  pt_tensor *r = NULL;
  pt_status st = pt_linalg_inv(s->ctx, "linalg.inv", a, &r);
  return gf_keep(s, st, r);
}
static pt_tensor *G_det(gf *s, pt_tensor *a) {
  if (s->st) return NULL;
  pt_tensor *r = NULL;
  pt_status st = pt_linalg_det(s->ctx, "linalg.det", a, &r);
  return gf_keep(s, st, r);
}
/* inv: -P^T g P^T with P = inv(A) */
static pt_status gf_linalg_inv(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *A = n->inputs[0];
  gf s = {.ctx = ctx};
  pt_tensor *pT = G_mT(&s, G_inv(&s, A));
  gin[0] = G_finish(&s, G_num(&s, PT_BIN_MUL, G_matmul(&s, G_matmul(&s, pT, g), pT), -1.0), A);
  return gf_end(&s);
}
/* solve (inputs A, B; ints[0] B is a vector): gB = solve(A^T, g), gA = -gB X^T with X
 * recomputed; a vector's gradients as {n, 1} matrices */
static pt_tensor *G_solve(gf *s, pt_tensor *a, pt_tensor *b) {
  if (s->st) return NULL;
  pt_tensor *r = NULL;
  pt_status st = pt_linalg_solve(s->ctx, a, b, true, &r);
  return gf_keep(s, st, r);
}
static pt_status gf_linalg_solve(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *A = n->inputs[0], *B = n->inputs[1];
  bool vec = n->ints[0] != 0;
  gf s = {.ctx = ctx};
  pt_tensor *gB = G_solve(&s, G_mT(&s, A), vec ? G_unsq(&s, g, g->ndim) : g);
  if (n->needs_grad[0]) {
    pt_tensor *X = G_solve(&s, A, B);
    if (X && vec) X = G_unsq(&s, X, X->ndim);
    gin[0] = G_finish(&s, G_num(&s, PT_BIN_MUL, G_matmul(&s, gB, G_mT(&s, X)), -1.0), A);
  }
  if (n->needs_grad[1]) gin[1] = G_finish(&s, vec ? G_reshape(&s, gB, g->ndim, g->shape) : gB, B);
  return gf_end(&s);
}

/* cholesky (ints[0] upper: the factor is U = L^T), as torch 1.13's cholesky_backward with L
 * recomputed by the op: S = tril(L^T gL), gA = L^-T (S + tril(S, -1)^T) / 2 L^-1 (the triangles
 * by constant masks, the triangular solves as products with inv(L)) */
static pt_tensor *G_cholesky(gf *s, pt_tensor *a, bool upper) {
  if (s->st) return NULL;
  pt_tensor *r = NULL;
  pt_status st = pt_linalg_cholesky(s->ctx, "linalg.cholesky", a, upper, &r);
  return gf_keep(s, st, r);
}
static pt_status gf_cholesky(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *A = n->inputs[0];
  bool upper = n->ints[0] != 0;
  int64_t k = A->shape[A->ndim - 1], sq2[2] = {k, k};
  gf s = {.ctx = ctx};
  pt_tensor *low = G_zeros(&s, A->dtype, 2, sq2), *strict = G_zeros(&s, A->dtype, 2, sq2);
  if (strict)
    for (int64_t i = 0; i < k; i++)
      for (int64_t j = 0; j <= i; j++) {
        pt_tensor_set_flat(low, i * k + j, 1.0);
        if (j < i) pt_tensor_set_flat(strict, i * k + j, 1.0);
      }
  pt_tensor *L = G_cholesky(&s, A, upper), *gL = g;
  if (upper) {
    L = G_mT(&s, L);
    gL = G_mT(&s, g);
  }
  pt_tensor *S = G_mul(&s, G_matmul(&s, G_mT(&s, L), gL), low);
  S = G_num(&s, PT_BIN_MUL, G_add(&s, S, G_mT(&s, G_mul(&s, S, strict))), 0.5);
  pt_tensor *Li = G_inv(&s, L);
  gin[0] = G_finish(&s, G_matmul(&s, G_matmul(&s, G_mT(&s, Li), S), Li), A);
  return gf_end(&s);
}

/* eigh / eigvalsh (ints[0] 1: the eigenvectors' node), as torch 1.13's linalg_eig_backward for
 * a symmetric A with L, V recomputed by the op: V diag(g) V^T for the eigenvalues,
 * V (skew(V^T g) / 2 / (l_j - l_i)) V^T for the eigenvectors. The node does not keep which
 * triangle was read: only a symmetric A has a formula here (graph_formula). */
static bool symmetric(const pt_tensor *A) {
  int64_t n = A->shape[A->ndim - 1], batch = pt_tensor_numel(A) / (n ? n * n : 1);
  for (int64_t b = 0; b < batch; b++)
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < i; j++)
        if (pt_tensor_get_flat(A, (b * n + i) * n + j) != pt_tensor_get_flat(A, (b * n + j) * n + i)) return false;
  return true;
}
static pt_status gf_eigh(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *A = n->inputs[0], *L = NULL, *V = NULL, *ret;
  gf s = {.ctx = ctx};
  pt_status st = pt_linalg_eigh(ctx, "linalg.eigh", A, false, &L, &V);
  L = gf_keep(&s, st, L);
  V = st ? NULL : gf_keep(&s, PT_OK, V);
  if (!n->ints[0]) {
    ret = G_mul(&s, G_unsq(&s, g, g->ndim), G_mT(&s, V)); /* diag(g) V^T */
    gin[0] = G_finish(&s, G_matmul(&s, V, ret), A);
  } else {
    pt_tensor *t = G_matmul(&s, G_mT(&s, V), g);
    pt_tensor *E = G_sub(&s, G_unsq(&s, L, L ? L->ndim - 1 : 0), G_unsq(&s, L, L ? L->ndim : 0));
    int64_t k = A->shape[A->ndim - 1], sq2[2] = {k, k};
    pt_tensor *eye = G_zeros(&s, A->dtype, 2, sq2);
    if (eye)
      for (int64_t i = 0; i < k; i++) pt_tensor_set_flat(eye, i * k + i, 1.0);
    ret = G_div(&s, G_num(&s, PT_BIN_MUL, G_sub(&s, t, G_mT(&s, t)), 0.5), G_add(&s, E, eye));
    gin[0] = G_finish(&s, G_matmul(&s, G_matmul(&s, V, ret), G_mT(&s, V)), A);
  }
  return gf_end(&s);
}

/* svd / svdvals: the singular values' node (ints[0] 1) only: U diag(g) Vh with the reduced U,
 * Vh recomputed by the op (the nodes of U and Vh have no formula here) */
static pt_status gf_svdvals(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *A = n->inputs[0], *U = NULL, *S = NULL, *Vh = NULL;
  gf s = {.ctx = ctx};
  pt_status st = pt_linalg_svd(ctx, "linalg.svd", A, false, &U, &S, &Vh);
  S = gf_keep(&s, st, S);
  U = st ? NULL : gf_keep(&s, PT_OK, U);
  Vh = st ? NULL : gf_keep(&s, PT_OK, Vh);
  gin[0] = G_finish(&s, G_matmul(&s, G_mul(&s, U, G_unsq(&s, g, g->ndim - 1)), Vh), A);
  return gf_end(&s);
}

/* det: g det(A) A^-T; log|det| (ints[0] 1: slogdet, logdet): g A^-T. saved[1] holds the
 * results: a singular matrix (det 0, log|det| -inf) has no formula here (graph_formula). */
static bool det_singular(const pt_node *n) {
  for (int64_t i = 0, k = pt_tensor_numel(n->saved[1]); i < k; i++) {
    double v = pt_tensor_get_flat(n->saved[1], i);
    if (n->ints[0] ? v == -INFINITY : v == 0) return true;
  }
  return false;
}
static pt_status gf_det(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *A = n->inputs[0];
  int64_t shape[PT_MAX_DIMS]; /* the batch's dims, then 1, 1 */
  memcpy(shape, A->shape, sizeof shape);
  shape[A->ndim - 2] = shape[A->ndim - 1] = 1;
  gf s = {.ctx = ctx};
  pt_tensor *gr = G_reshape(&s, g, A->ndim, shape);
  if (!n->ints[0]) gr = G_mul(&s, gr, G_reshape(&s, G_det(&s, A), A->ndim, shape));
  gin[0] = G_finish(&s, G_mul(&s, gr, G_mT(&s, G_inv(&s, A))), A);
  return gf_end(&s);
}

/* FillBackward (ops_elementwise.c's zero_backward: the tensor became a constant): zeros without
 * a history, as torch's */
static pt_status gf_fill(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  (void)g;
  if (!n->needs_grad[0]) return PT_OK;
  gf s = {.ctx = ctx};
  pt_tensor *x = n->inputs[0];
  gin[0] = G_finish(&s, G_ones(&s, x->dtype, x->ndim, x->shape), x);
  if (gin[0]) pt_tensor_fill(ctx, gin[0], 0.0);
  return gf_end(&s);
}

/* What a later backward through t must refuse (PyTorch's DelayedError): t passes through a node
 * whose backward fails with msg (a string literal), and whose create_graph pass is refused. */
static pt_status delayed_error_backward(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  (void)g, (void)gin;
  return pt_fail(ctx, PT_EARG, "%s", (const char *)n->extra);
}
static pt_tensor *G_delayed_error(gf *s, pt_tensor *t, const char *msg) {
  if (s->st) return NULL;
  pt_tensor *r = NULL;
  pt_node *node = NULL;
  pt_status st = pt_tensor_from_storage(s->ctx, t->storage, t->dtype, t->offset, t->ndim, t->shape, t->stride, &r);
  if (!st && (st = pt_autograd_record(s->ctx, r, "DelayedError", delayed_error_backward, 1, &t, &node))) {
    pt_tensor_release(r);
    r = NULL;
  }
  if (node) node->extra = (void *)msg; /* no free_extra: a literal */
  return gf_keep(s, st, r);
}
static pt_tensor *G_scatter_reduce(gf *s, pt_tensor *t, int dim, pt_tensor *ix, pt_tensor *src, int op, bool self) {
  if (s->st) return NULL;
  pt_tensor *r = NULL;
  pt_status st = pt_scatter_reduce(s->ctx, t, dim, ix, src, (pt_scatter_reduce_op)op, self, &r);
  return gf_keep(s, st, r);
}
/* t padded with zeros at the end of each dim to (nd, shape) */
static pt_tensor *G_pad_end(gf *s, pt_tensor *t, int nd, const int64_t *shape) {
  int64_t cur[PT_MAX_DIMS];
  for (int d = 0; d < nd && !s->st; d++) {
    if (t->shape[d] == shape[d]) continue;
    memcpy(cur, t->shape, (size_t)nd * sizeof(int64_t));
    cur[d] = shape[d] - t->shape[d];
    pt_tensor *parts[2] = {t, G_zeros(s, t->dtype, nd, cur)};
    t = G_cat(s, 2, parts, d);
  }
  return t;
}

/* ops_misc.c's scatter_reduce (inputs t, src; ints dim, op, include_self; saved the contiguous
 * t, src and the 1-based int64 index), torch 1.13's scatter_reduce_backward formula by formula
 * (as sr_backward): sum and mean pass g (divided by the counts) and gather it for src; amax and
 * amin share g evenly between the elements equal to the result (constant masks); prod divides
 * the result, zeros taken out (t's zeros as 1, and a src zero alone at its position as 1). As
 * PyTorch, src's gradient refuses a later backward when two of its zeros meet at one place.
 * Without include_self, t's gradient is 0 where src was scattered. A 0-d t is handled as {1};
 * src's elements outside the index's extent get 0. */
static pt_status gf_scatter_reduce(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *x = n->inputs[0], *src = n->inputs[1], *ix = n->saved[2];
  int dim = (int)n->ints[0], op = (int)n->ints[1];
  bool self = n->ints[2] != 0;
  int64_t one = 1;
  gf s = {.ctx = ctx};
  pt_tensor *x1 = x, *s1 = src, *g1 = g;
  if (x->ndim == 0) {
    x1 = G_reshape(&s, x, 1, &one), s1 = G_reshape(&s, src, 1, &one), g1 = G_reshape(&s, g, 1, &one);
    ix = G_reshape(&s, ix, 1, &one);
  }
  if (s.st) return gf_end(&s);
  int nd = x1->ndim;
  pt_tensor *sr = s1; /* src within the index's extent */
  for (int d = 0; d < nd; d++)
    if (sr && sr->shape[d] != ix->shape[d]) sr = G_narrow(&s, sr, d, 0, ix->shape[d]);
  pt_dtype dt = x->dtype;
  pt_tensor *cnt = G_scatter_add_zeros(&s, x1, dt, dim, ix, G_ones(&s, dt, nd, ix->shape)); /* per place */
  pt_tensor *gs = NULL, *gx = NULL;
  switch ((pt_scatter_reduce_op)op) {
  case PT_SCATTER_SUM:
    gs = g1, gx = G_gather(&s, g1, dim, ix);
    break;
  case PT_SCATTER_MEAN: { /* N: the values reduced (t's own with include_self), 0 as 1 */
    pt_tensor *N = self ? G_num(&s, PT_BIN_ADD, cnt, 1.0) : cnt;
    N = G_where(&s, G_cmp(&s, PT_BIN_EQ, N, 0.0), G_ones(&s, dt, 0, NULL), N);
    gs = G_div(&s, g1, N), gx = G_gather(&s, gs, dim, ix);
    break;
  }
  case PT_SCATTER_AMAX:
  case PT_SCATTER_AMIN: {
    pt_tensor *xd = G_detach(&s, x1), *sd = G_detach(&s, sr);
    pt_tensor *res = G_scatter_reduce(&s, xd, dim, ix, sd, op, self);
    pt_tensor *xm = G_to(&s, G_bin(&s, PT_BIN_EQ, xd, res), dt);
    pt_tensor *sm = G_to(&s, G_bin(&s, PT_BIN_EQ, sd, G_gather(&s, res, dim, ix)), dt);
    /* g shared between the elements equal to the result: t's own (even without include_self) and src's */
    pt_tensor *share = G_div(&s, g1, G_add(&s, xm, G_scatter_add_zeros(&s, x1, dt, dim, ix, sm)));
    gs = G_mul(&s, xm, share), gx = G_mul(&s, sm, G_gather(&s, share, dim, ix));
    break;
  }
  default: { /* prod */
    pt_tensor *one0 = G_ones(&s, dt, 0, NULL);
    pt_tensor *xz = G_cmp(&s, PT_BIN_EQ, G_detach(&s, x1), 0.0);
    pt_tensor *mx = G_where(&s, xz, one0, x1);
    gs = G_div(&s, G_mul(&s, g1, G_scatter_reduce(&s, mx, dim, ix, sr, op, self)), mx);
    pt_tensor *sz = G_cmp(&s, PT_BIN_EQ, G_detach(&s, sr), 0.0);
    pt_tensor *nz = G_gather(&s, G_scatter_add_zeros(&s, x1, dt, dim, ix, G_to(&s, sz, dt)), dim, ix);
    pt_tensor *single = G_bin(&s, PT_BIN_LOGICAL_AND, sz, G_cmp(&s, PT_BIN_EQ, nz, 1.0));
    pt_tensor *res = G_scatter_reduce(&s, x1, dim, ix, sr, op, self);
    pt_tensor *res1 = G_scatter_reduce(&s, x1, dim, ix, G_where(&s, single, one0, sr), op, self);
    gx = G_where(&s, single, G_gather(&s, G_mul(&s, g1, res1), dim, ix),
                 G_div(&s, G_gather(&s, G_mul(&s, g1, res), dim, ix), G_where(&s, sz, one0, sr)));
    bool several = false;
    if (!s.st)
      for (int64_t i = 0, m = pt_tensor_numel(nz); i < m && !several; i++) several = pt_tensor_get_flat(nz, i) > 1;
    if (several)
      gx = G_delayed_error(&s, gx, "scatter_reduce(): Double backward is unsupported for src when >1 zeros in src "
                                   "are scattered to the same position in self");
    break;
  }
  }
  if (!self) gs = G_zero_where(&s, G_cmp(&s, PT_BIN_GT, cnt, 0.0), gs);
  if (n->needs_grad[0]) gin[0] = G_finish(&s, G_reshape(&s, gs, x->ndim, x->shape), x);
  if (n->needs_grad[1] && gx)
    gin[1] = G_finish(&s, G_reshape(&s, G_pad_end(&s, gx, nd, s1->shape), src->ndim, src->shape), src);
  return gf_end(&s);
}

/* ops_shape.c's repeat: every copy's gradient added up, a dim at a time (g viewed as
 * {before, copies, size, after} and summed over the copies); leading new dims are copies of 1 */
static pt_status gf_repeat(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *x = n->inputs[0];
  int nd = g->ndim, lead = nd - x->ndim;
  gf s = {.ctx = ctx};
  pt_tensor *r = g;
  int64_t cur[PT_MAX_DIMS];
  memcpy(cur, g->shape, sizeof cur);
  for (int d = 0; d < nd && !s.st; d++) {
    int64_t size = d < lead ? 1 : x->shape[d - lead], copies = size ? cur[d] / size : 0;
    if (copies <= 1) continue;
    int64_t before = 1, after = 1;
    for (int e = 0; e < d; e++) before *= cur[e];
    for (int e = d + 1; e < nd; e++) after *= cur[e];
    int64_t v[4] = {before, copies, size, after};
    r = G_sum(&s, G_reshape(&s, r, 4, v), 1, false);
    cur[d] = size;
    r = G_reshape(&s, r, nd, cur);
  }
  gin[0] = G_finish(&s, G_reshape(&s, r, x->ndim, x->shape), x);
  return gf_end(&s);
}

/* cumsum along ints[0]: the gradient is g summed from each position to the end,
 * sum(g) - cumsum(g) + g, written with the ops (cumsum's own formula is this one) */
static pt_status gf_cumsum(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  int dim = (int)n->ints[0];
  gf s = {.ctx = ctx};
  pt_tensor *c = NULL;
  if (!s.st) {
    pt_status st = pt_cumsum(ctx, g, dim, &c);
    c = gf_keep(&s, st, c);
  }
  pt_tensor *r = G_add(&s, G_bin(&s, PT_BIN_SUB, G_sum(&s, g, dim, true), c), g);
  gin[0] = G_finish(&s, r, n->inputs[0]);
  return gf_end(&s);
}

/* ops_reduce.c's prod (ints[0] dim or PT_DIM_ALL, ints[1] keepdim; saved[0] the contiguous
 * input, read for zeros). Without zeros the gradient is g prod(x) / x, as PyTorch. With zeros
 * it is g times the product of the elements before and the product after each one (cumprods of
 * x shifted by one, forwards and reversed: PyTorch's prod_safe_zeros_backward), exact with any
 * number of zeros. PyTorch 1.13 gives a constant zero gradient for a product of all elements
 * with two zeros or more (its second derivatives there are 0); this one is exact. */
static pt_status gf_prod(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *x = n->inputs[0];
  int dim = (int)n->ints[0];
  bool all = dim == PT_DIM_ALL || x->ndim == 0;
  gf s = {.ctx = ctx};
  int64_t ones[PT_MAX_DIMS];
  for (int i = 0; i < x->ndim; i++) ones[i] = 1;
  pt_tensor *gr = all ? G_reshape(&s, g, x->ndim, ones) : n->ints[1] ? g : G_unsq(&s, g, dim), *d;
  if (!any_zero(n->saved[0])) {
    d = G_div(&s, G_mul(&s, gr, G_prod(&s, x, dim, true)), x);
  } else {
    int64_t numel = pt_tensor_numel(x);
    pt_tensor *xl = all ? G_reshape(&s, x, 1, &numel) : x; /* the lanes along ld */
    int ld = all ? 0 : dim;
    int64_t len = s.st ? 0 : xl->shape[ld], os[PT_MAX_DIMS];
    pt_tensor *others = NULL;
    if (len <= 1) {
      d = gr;
    } else {
      memcpy(os, xl->shape, sizeof os);
      os[ld] = 1;
      pt_tensor *one = G_ones(&s, x->dtype, xl->ndim, os);
      pt_tensor *before[2] = {one, G_narrow(&s, xl, ld, 0, len - 1)};
      pt_tensor *after[2] = {one, G_flip(&s, G_narrow(&s, xl, ld, 1, len - 1), ld)};
      others = G_mul(&s, G_cumprod(&s, G_cat(&s, 2, before, ld), ld),
                     G_flip(&s, G_cumprod(&s, G_cat(&s, 2, after, ld), ld), ld));
      d = G_mul(&s, gr, all ? G_reshape(&s, others, x->ndim, x->shape) : others);
    }
  }
  gin[0] = G_finish(&s, d, x);
  return gf_end(&s);
}

/* ops_sort.c's cumprod along ints[0] (saved[0] the contiguous input, read for zeros): without
 * zeros g_i = sum_{k >= i} g_k y_k / x_i with y = cumprod(x), as PyTorch; with zeros, exactly,
 * g_i = sum_{k >= i} g_k prod_{m <= k, m != i} x_m, the products being the cumprod along k of
 * {n, n} matrices per lane with x_i replaced by 1 in row i (n^2 elements a lane). */
static pt_status gf_cumprod(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *x = n->inputs[0];
  int dim = (int)n->ints[0], last = x->ndim - 1;
  int64_t len = x->ndim ? x->shape[dim] : 1;
  gf s = {.ctx = ctx};
  pt_tensor *d;
  if (len <= 1) {
    d = g;
  } else if (!any_zero(n->saved[0])) {
    pt_tensor *w = G_mul(&s, g, G_cumprod(&s, x, dim));
    pt_tensor *tail = G_add(&s, G_sub(&s, G_sum(&s, w, dim, true), G_cumsum(&s, w, dim)), w);
    d = G_div(&s, tail, x);
  } else {
    int64_t sq[2] = {len, len}, full[PT_MAX_DIMS + 1];
    pt_tensor *eye = G_zeros(&s, PT_BOOL, 2, sq), *upper = G_zeros(&s, x->dtype, 2, sq);
    if (!s.st)
      for (int64_t i = 0; i < len; i++) {
        pt_tensor_set_flat(eye, i * len + i, 1.0);
        for (int64_t k = i; k < len; k++) pt_tensor_set_flat(upper, i * len + k, 1.0);
      }
    pt_tensor *xt = dim == last ? x : G_transpose(&s, x, dim, last);
    pt_tensor *gt = dim == last ? g : G_transpose(&s, g, dim, last);
    if (!s.st) {
      memcpy(full, xt->shape, (size_t)xt->ndim * sizeof(int64_t));
      full[xt->ndim] = len; /* {..., i, k} */
    }
    pt_tensor *rows = G_expand(&s, G_unsq(&s, xt, last), x->ndim + 1, full);
    pt_tensor *c = G_cumprod(&s, G_where(&s, eye, G_ones(&s, x->dtype, 0, NULL), rows), last + 1);
    d = G_sum(&s, G_mul(&s, c, G_mul(&s, upper, G_unsq(&s, gt, last))), last + 1, false);
    if (dim != last) d = G_transpose(&s, d, dim, last);
  }
  gin[0] = G_finish(&s, d, x);
  return gf_end(&s);
}

/* nn_rnn.c's fused cells (inputs x_proj, gh and the state, each {..., gates H} or {..., H}; the
 * kernels keep their activations without history): the gates are recomputed from the inputs with
 * the ops and the cell's gradient written with them. */
static pt_tensor *G_gate(gf *s, pt_tensor *t, int k, int64_t H) { /* gate k of the last dim */
  return s->st ? NULL : G_narrow(s, t, t->ndim - 1, k * H, H);
}
static pt_tensor *G_dsigmoid(gf *s, pt_tensor *y) { return G_mul(s, y, G_rnum(s, PT_BIN_SUB, 1.0, y)); }
static pt_tensor *G_dtanh(gf *s, pt_tensor *y) { return G_rnum(s, PT_BIN_SUB, 1.0, G_mul(s, y, y)); }

/* LSTM (gate order i, f, g, o; out {..., 2H}: h' then c'): with p = x_proj + gh, c' = f c + i g,
 * h' = o tanh(c'); dc' = g_c + g_h o (1 - tanh(c')^2), dc = dc' f, and the gates' gradient
 * (for x_proj and gh alike) dc' g i (1 - i), dc' c f (1 - f), dc' i (1 - g^2), g_h tanh(c') o (1 - o) */
static pt_status gf_lstm_cell(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *c = n->inputs[2];
  int64_t H = n->ints[1];
  int last = c->ndim - 1;
  gf s = {.ctx = ctx};
  pt_tensor *p = G_add(&s, n->inputs[0], n->inputs[1]);
  pt_tensor *i = G_un(&s, PT_UN_SIGMOID, G_gate(&s, p, 0, H)), *f = G_un(&s, PT_UN_SIGMOID, G_gate(&s, p, 1, H));
  pt_tensor *gg = G_un(&s, PT_UN_TANH, G_gate(&s, p, 2, H)), *o = G_un(&s, PT_UN_SIGMOID, G_gate(&s, p, 3, H));
  pt_tensor *tc = G_un(&s, PT_UN_TANH, G_add(&s, G_mul(&s, f, c), G_mul(&s, i, gg)));
  pt_tensor *gh = G_gate(&s, g, 0, H), *gc = G_gate(&s, g, 1, H);
  pt_tensor *dct = G_add(&s, gc, G_mul(&s, G_mul(&s, gh, o), G_dtanh(&s, tc)));
  if (n->needs_grad[2]) gin[2] = G_finish(&s, G_mul(&s, dct, f), c);
  if (n->needs_grad[0] || n->needs_grad[1]) {
    pt_tensor *parts[4] = {G_mul(&s, G_mul(&s, dct, gg), G_dsigmoid(&s, i)),
                           G_mul(&s, G_mul(&s, dct, c), G_dsigmoid(&s, f)),
                           G_mul(&s, G_mul(&s, dct, i), G_dtanh(&s, gg)),
                           G_mul(&s, G_mul(&s, gh, tc), G_dsigmoid(&s, o))};
    pt_tensor *dp = G_cat(&s, 4, parts, last);
    for (int k = 0; k < 2; k++)
      if (n->needs_grad[k]) gin[k] = G_finish(&s, dp, n->inputs[k]);
  }
  return gf_end(&s);
}

/* GRU (gate order r, z, n): r, z = sigmoid(x + gh), n = tanh(x_n + r gh_n),
 * h' = n + z (h - n); dn = g (1 - z) (1 - n^2), dr = dn gh_n r (1 - r), dz = g (h - n) z (1 - z),
 * dh = g z; x_proj gets (dr, dz, dn), gh (dr, dz, dn r) */
static pt_status gf_gru_cell(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *x = n->inputs[0], *gh = n->inputs[1], *h = n->inputs[2];
  int64_t H = n->ints[1];
  int last = h->ndim - 1;
  gf s = {.ctx = ctx};
  pt_tensor *r = G_un(&s, PT_UN_SIGMOID, G_add(&s, G_gate(&s, x, 0, H), G_gate(&s, gh, 0, H)));
  pt_tensor *z = G_un(&s, PT_UN_SIGMOID, G_add(&s, G_gate(&s, x, 1, H), G_gate(&s, gh, 1, H)));
  pt_tensor *ghn = G_gate(&s, gh, 2, H);
  pt_tensor *nn = G_un(&s, PT_UN_TANH, G_add(&s, G_gate(&s, x, 2, H), G_mul(&s, r, ghn)));
  pt_tensor *dn = G_mul(&s, G_mul(&s, g, G_rnum(&s, PT_BIN_SUB, 1.0, z)), G_dtanh(&s, nn));
  pt_tensor *dr = G_mul(&s, G_mul(&s, dn, ghn), G_dsigmoid(&s, r));
  pt_tensor *dz = G_mul(&s, G_mul(&s, g, G_sub(&s, h, nn)), G_dsigmoid(&s, z));
  if (n->needs_grad[2]) gin[2] = G_finish(&s, G_mul(&s, g, z), h);
  if (n->needs_grad[0]) {
    pt_tensor *parts[3] = {dr, dz, dn};
    gin[0] = G_finish(&s, G_cat(&s, 3, parts, last), x);
  }
  if (n->needs_grad[1]) {
    pt_tensor *parts[3] = {dr, dz, G_mul(&s, dn, r)};
    gin[1] = G_finish(&s, G_cat(&s, 3, parts, last), gh);
  }
  return gf_end(&s);
}

/* ops_special.c's special functions (ints[0] the op, ints[1] polygamma's n or mvlgamma's p):
 * the derivative written with the special functions themselves (recorded, so they nest), as
 * PyTorch's formulas: i1's and i1e's are 1/2 where |x| <= the dtype's epsilon, as there. */
static pt_status gf_special(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *x = n->inputs[0], *d = NULL;
  int64_t k = n->ints[1];
  gf s = {.ctx = ctx};
  switch ((pt_special_op)n->ints[0]) {
  case PT_SP_LGAMMA: d = G_special(&s, PT_SP_DIGAMMA, x, 0); break;
  case PT_SP_DIGAMMA: d = G_special(&s, PT_SP_POLYGAMMA, x, 1); break;
  case PT_SP_POLYGAMMA: d = G_special(&s, PT_SP_POLYGAMMA, x, k + 1); break;
  case PT_SP_I0: d = G_special(&s, PT_SP_I1, x, 0); break;
  case PT_SP_I0E: /* i1e(x) - sgn(x) i0e(x) */
    d = G_sub(&s, G_special(&s, PT_SP_I1E, x, 0), G_mul(&s, G_un(&s, PT_UN_SIGN, x), G_special(&s, PT_SP_I0E, x, 0)));
    break;
  case PT_SP_I1:
  case PT_SP_I1E: { /* i0(x) - i1(x) / x; i0e(x) - i1e(x) (sgn(x) + 1/x) */
    bool e = n->ints[0] == PT_SP_I1E;
    double eps = x->dtype == PT_FLOAT32 ? 1.1920928955078125e-07 : 2.220446049250313e-16;
    pt_tensor *big = G_cmp(&s, PT_BIN_GT, G_un(&s, PT_UN_ABS, x), eps);
    pt_tensor *xs = G_where(&s, big, x, G_num(&s, PT_BIN_ADD, G_zero(&s, x->dtype), eps));
    pt_tensor *inv = G_rnum(&s, PT_BIN_DIV, 1.0, xs);
    pt_tensor *t = e ? G_sub(&s, G_special(&s, PT_SP_I0E, xs, 0),
                             G_mul(&s, G_special(&s, PT_SP_I1E, x, 0), G_add(&s, G_un(&s, PT_UN_SIGN, xs), inv)))
                     : G_sub(&s, G_special(&s, PT_SP_I0, xs, 0), G_mul(&s, G_special(&s, PT_SP_I1, x, 0), inv));
    d = G_where(&s, big, t, G_num(&s, PT_BIN_ADD, G_zero(&s, x->dtype), 0.5));
    break;
  }
  case PT_SP_NDTR: /* exp(-x^2 / 2) / sqrt(2 pi) */
    d = G_num(&s, PT_BIN_MUL, G_un(&s, PT_UN_EXP, G_num(&s, PT_BIN_MUL, G_mul(&s, x, x), -0.5)), GF_1_SQRT2PI);
    break;
  case PT_SP_LOG_NDTR: { /* exp(-(log_ndtr(x) + x^2 / 2)) / sqrt(2 pi) */
    pt_tensor *e = G_add(&s, G_special(&s, PT_SP_LOG_NDTR, x, 0), G_num(&s, PT_BIN_MUL, G_mul(&s, x, x), 0.5));
    d = G_num(&s, PT_BIN_MUL, G_un(&s, PT_UN_EXP, G_un(&s, PT_UN_NEG, e)), GF_1_SQRT2PI);
    break;
  }
  case PT_SP_NDTRI: { /* sqrt(2 pi) exp(ndtri(x)^2 / 2) */
    pt_tensor *y = G_special(&s, PT_SP_NDTRI, x, 0);
    d = G_num(&s, PT_BIN_MUL, G_un(&s, PT_UN_EXP, G_num(&s, PT_BIN_MUL, G_mul(&s, y, y), 0.5)), 1.0 / GF_1_SQRT2PI);
    break;
  }
  case PT_SP_ENTR: d = G_un(&s, PT_UN_NEG, G_num(&s, PT_BIN_ADD, G_un(&s, PT_UN_LOG, x), 1.0)); break;
  default: { /* mvlgamma: sum_{i < p} digamma(x - i/2) */
    pt_tensor *off = G_zeros(&s, x->dtype, 1, &k);
    for (int64_t i = 0; off && i < k; i++) pt_tensor_set_flat(off, i, -0.5 * (double)i);
    d = G_sum(&s, G_special(&s, PT_SP_DIGAMMA, G_add(&s, G_unsq(&s, x, x->ndim), off), 0), x->ndim, false);
    break;
  }
  }
  gin[0] = G_finish(&s, G_mul(&s, g, d), x);
  return gf_end(&s);
}

/* ops_special.c's xlog1py (ints[0] layout: 0 two tensors, 1 tensor and number, 2 number and
 * tensor; scalars[0] the number): x gets xlog1py(g, y), 0 where x == 0 and y <= -1; y gets
 * g x / (1 + y) */
static pt_status gf_xlog1py(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  int layout = (int)n->ints[0];
  double num = n->scalars[0];
  pt_tensor *x = layout == 2 ? NULL : n->inputs[0], *y = layout == 1 ? NULL : n->inputs[layout == 0 ? 1 : 0];
  int ix = layout == 2 ? -1 : 0, iy = layout == 0 ? 1 : (layout == 2 ? 0 : -1);
  gf s = {.ctx = ctx};
  if (ix >= 0 && n->needs_grad[ix]) {
    pt_tensor *d = NULL;
    if (!s.st) {
      pt_status st = y ? pt_xlog1py(ctx, g, y, &d) : pt_xlog1py_number(ctx, g, pt_number_float(num), false, &d);
      d = gf_keep(&s, st, d);
    }
    pt_tensor *zero = G_cmp(&s, PT_BIN_EQ, x, 0.0);
    if (y) zero = G_bin(&s, PT_BIN_LOGICAL_AND, zero, G_cmp(&s, PT_BIN_LE, y, -1.0));
    if (y || num <= -1) d = G_zero_where(&s, zero, d);
    gin[ix] = G_finish(&s, d, x);
  }
  if (iy >= 0 && n->needs_grad[iy]) {
    pt_tensor *gx = x ? G_mul(&s, g, x) : G_num(&s, PT_BIN_MUL, g, num);
    gin[iy] = G_finish(&s, G_div(&s, gx, G_num(&s, PT_BIN_ADD, y, 1.0)), y);
  }
  return gf_end(&s);
}

/* nn.c's pointwise losses (inputs input, target; ints kind, reduction, last dim; scalars[0]
 * smooth_l1's beta; saved[2] pos_weight): MSE, L1, smooth L1 and BCE with logits (without
 * pos_weight), each derivative written with the ops; the reduction's g is spread (sum) or
 * divided by the count (mean). */
static bool gf_pointwise_loss_ok(const pt_node *n) {
  pt_pointwise_loss k = (pt_pointwise_loss)n->ints[0];
  return k == PT_LOSS_MSE || k == PT_LOSS_L1 || k == PT_LOSS_SMOOTH_L1 || k == PT_LOSS_BCE ||
         k == PT_LOSS_BCE_WITH_LOGITS;
}
/* max(a, lo) as a where: a's derivative where a >= lo, 0 below */
static pt_tensor *G_clamp_min(gf *s, pt_tensor *a, double lo) {
  if (s->st) return NULL;
  pt_tensor *c = G_ones(s, a->dtype, 0, NULL);
  if (c) pt_tensor_fill(s->ctx, c, lo);
  return G_where(s, G_cmp(s, PT_BIN_LT, a, lo), c, a);
}
static pt_status gf_pointwise_loss(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  pt_tensor *a = n->inputs[0], *b = n->inputs[1] ? n->inputs[1] : n->saved[1];
  pt_pointwise_loss kind = (pt_pointwise_loss)n->ints[0];
  pt_reduction red = (pt_reduction)n->ints[1];
  gf s = {.ctx = ctx};
  pt_tensor *d = G_bin(&s, PT_BIN_SUB, a, b), *da, *db;
  switch (kind) {
  case PT_LOSS_MSE: da = G_num(&s, PT_BIN_MUL, d, 2.0); break;
  case PT_LOSS_L1: /* sign(d), plus 0 d: torch's gradient has a graph (a zero second derivative) */
    da = G_add(&s, G_un(&s, PT_UN_SIGN, d), G_num(&s, PT_BIN_MUL, d, 0.0));
    break;
  case PT_LOSS_SMOOTH_L1: {
    double beta = n->scalars[0];
    pt_tensor *inside = G_cmp(&s, PT_BIN_LT, G_un(&s, PT_UN_ABS, d), beta);
    da = G_where(&s, inside, G_num(&s, PT_BIN_DIV, d, beta), G_un(&s, PT_UN_SIGN, d));
    break;
  }
  case PT_LOSS_BCE: /* (a - b) / max(a (1 - a), 1e-12); logs clamped at -100, as nn.c's pw_loss */
    da = G_div(&s, d, G_clamp_min(&s, G_mul(&s, a, G_rnum(&s, PT_BIN_SUB, 1.0, a)), 1e-12));
    break;
  default: da = G_bin(&s, PT_BIN_SUB, G_un(&s, PT_UN_SIGMOID, a), b); break; /* BCE with logits */
  }
  if (kind == PT_LOSS_BCE_WITH_LOGITS && n->saved[2]) {
    /* pos_weight w (saved[2], a constant over the last dim): with l = 1 + (w - 1) b,
     * da = (1 - b) - l (1 - sigmoid(a)), db = (w - 1) log(1 + exp(-a)) - a */
    pt_tensor *w1 = G_num(&s, PT_BIN_SUB, n->saved[2], 1.0);
    pt_tensor *l = G_rnum(&s, PT_BIN_ADD, 1.0, G_mul(&s, w1, b));
    da = G_sub(&s, G_rnum(&s, PT_BIN_SUB, 1.0, b), G_mul(&s, l, G_un(&s, PT_UN_SIGMOID, G_un(&s, PT_UN_NEG, a))));
    pt_tensor *sp = G_add(&s, G_un(&s, PT_UN_LOG1P, G_un(&s, PT_UN_EXP, G_un(&s, PT_UN_NEG, G_un(&s, PT_UN_ABS, a)))),
                          G_un(&s, PT_UN_RELU, G_un(&s, PT_UN_NEG, a)));
    db = G_sub(&s, G_mul(&s, w1, sp), a);
  } else if (kind == PT_LOSS_BCE) {
    db = G_sub(&s, G_clamp_min(&s, G_un(&s, PT_UN_LOG, G_rnum(&s, PT_BIN_SUB, 1.0, a)), -100.0),
               G_clamp_min(&s, G_un(&s, PT_UN_LOG, a), -100.0));
  } else {
    db = kind == PT_LOSS_BCE_WITH_LOGITS ? G_un(&s, PT_UN_NEG, a) : G_un(&s, PT_UN_NEG, da);
  }
  pt_tensor *gs = red == PT_REDUCE_MEAN ? G_num(&s, PT_BIN_DIV, g, (double)pt_tensor_numel(a)) : g;
  if (n->needs_grad[0]) gin[0] = G_finish(&s, G_mul(&s, da, gs), a);
  if (n->inputs[1] && n->needs_grad[1]) gin[1] = G_finish(&s, G_mul(&s, db, gs), n->inputs[1]);
  return gf_end(&s);
}

/* nn.c's cross_entropy / nll_loss on {N,C} or {C} (ints N, C, reduction, ce; scalars eps, the
 * mean's denominator; saved probs, 0-based targets (-1: ignored), class weights). The gradient
 * is a (softmax(x) rowsum(Q) - Q) for cross_entropy, -a Q for nll_loss, with the constant
 * Q[i,c] = eps/C w_c + [c == y_i] (1 - eps) w_{y_i} (zero rows for ignored targets) and
 * a = g / denominator; softmax is recomputed from x so that it has a graph. */
static pt_status gf_class_loss(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *x = n->inputs[0], *idx = n->saved[1], *wt = n->saved[2], *q = NULL;
  int64_t N = n->ints[0], C = n->ints[1], qs[2] = {N, C}, col[2] = {N, 1};
  pt_reduction red = (pt_reduction)n->ints[2];
  bool ce = n->ints[3] != 0;
  double eps = n->scalars[0], denom = n->scalars[1];
  pt_status st = pt_tensor_zeros(ctx, x->dtype, 2, qs, &q);
  if (st) return st;
  const int64_t *ip = pt_tensor_data(idx);
  for (int64_t i = 0; i < N; i++) {
    if (ip[i] < 0) continue;
    for (int64_t c = 0; c < C && eps > 0; c++)
      pt_tensor_set_flat(q, i * C + c, eps / (double)C * (wt ? pt_tensor_get_flat(wt, c) : 1.0));
    double wy = wt ? pt_tensor_get_flat(wt, ip[i]) : 1.0;
    pt_tensor_set_flat(q, i * C + ip[i], pt_tensor_get_flat(q, i * C + ip[i]) + (1.0 - eps) * wy);
  }
  gf s = {.ctx = ctx};
  gf_keep(&s, PT_OK, q);
  pt_tensor *a = G_num(&s, PT_BIN_DIV, red == PT_REDUCE_NONE ? G_reshape(&s, g, 2, col) : g, denom);
  pt_tensor *d;
  if (ce) {
    pt_tensor *p = G_softmax(&s, G_reshape(&s, x, 2, qs), 1, false);
    d = G_bin(&s, PT_BIN_SUB, G_mul(&s, p, G_sum(&s, q, 1, true)), q);
  } else {
    d = G_un(&s, PT_UN_NEG, q);
  }
  gin[0] = G_finish(&s, G_reshape(&s, G_mul(&s, d, a), x->ndim, x->shape), x);
  return gf_end(&s);
}

/* nn.c activations: ints[0] the activation, scalars[0] leaky_relu's slope */
static bool gf_act_ok(int act) { return act > PT_ACT_NONE && act <= PT_ACT_HARDSHRINK; }

#define GF_SELU_ALPHA 1.6732632423543772848170429916717 /* as nn_activation.c */
#define GF_SELU_SCALE 1.0507009873554804934193349852946

#define GF_GELU_K 0.7978845608028654 /* sqrt(2/pi), as nn.c */
#define GF_GELU_C 0.044715

static pt_status gf_act(pt_ctx *ctx, pt_node *n, pt_tensor *g, pt_tensor **gin) {
  if (!n->needs_grad[0]) return PT_OK;
  pt_tensor *x = n->inputs[0], *d, *t, *u;
  double slope = n->scalars[0];
  gf s = {.ctx = ctx};
  switch ((pt_nn_act)n->ints[0]) {
  case PT_ACT_RELU: d = G_relu_mask(&s, x); break;
  case PT_ACT_LEAKY_RELU: /* 1 where x > 0, else slope */
    d = G_num(&s, PT_BIN_ADD, G_num(&s, PT_BIN_MUL, G_ind(&s, PT_BIN_GT, x, 0.0, x->dtype), 1.0 - slope), slope);
    break;
  case PT_ACT_GELU: d = G_gelu_d(&s, x); break;
  case PT_ACT_GELU_TANH: {
    /* t = tanh(k (x + c x^3)): 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2) */
    pt_tensor *x2 = G_mul(&s, x, x);
    t = G_un(&s, PT_UN_TANH, G_num(&s, PT_BIN_MUL, G_add(&s, x, G_num(&s, PT_BIN_MUL, G_mul(&s, x2, x), GF_GELU_C)), GF_GELU_K));
    u = G_num(&s, PT_BIN_MUL, G_num(&s, PT_BIN_ADD, G_num(&s, PT_BIN_MUL, x2, 3 * GF_GELU_C), 1.0), 0.5 * GF_GELU_K);
    u = G_mul(&s, G_mul(&s, x, G_rnum(&s, PT_BIN_SUB, 1.0, G_mul(&s, t, t))), u);
    d = G_add(&s, G_num(&s, PT_BIN_MUL, G_num(&s, PT_BIN_ADD, t, 1.0), 0.5), u);
    break;
  }
  case PT_ACT_TANH:
    t = G_un(&s, PT_UN_TANH, x);
    d = G_rnum(&s, PT_BIN_SUB, 1.0, G_mul(&s, t, t));
    break;
  case PT_ACT_SIGMOID:
    t = G_un(&s, PT_UN_SIGMOID, x);
    d = G_mul(&s, t, G_rnum(&s, PT_BIN_SUB, 1.0, t));
    break;
  case PT_ACT_SILU: /* s (1 + x (1 - s)) */
    t = G_un(&s, PT_UN_SIGMOID, x);
    d = G_mul(&s, t, G_num(&s, PT_BIN_ADD, G_mul(&s, x, G_rnum(&s, PT_BIN_SUB, 1.0, t)), 1.0));
    break;
  case PT_ACT_ELU:
  case PT_ACT_SELU:
  case PT_ACT_CELU: { /* scale where x > 0, else alpha scale ips exp(ips x) (nn_activation.c's
                       * coefficients: ELU alpha, 1, 1; SELU fixed; CELU alpha, 1, 1/alpha) */
    pt_nn_act a = (pt_nn_act)n->ints[0];
    double alpha = a == PT_ACT_SELU ? GF_SELU_ALPHA : slope, scale = a == PT_ACT_SELU ? GF_SELU_SCALE : 1.0;
    double ips = a == PT_ACT_CELU ? 1.0 / slope : 1.0;
    t = G_num(&s, PT_BIN_MUL, G_un(&s, PT_UN_EXP, G_num(&s, PT_BIN_MUL, x, ips)), alpha * scale * ips);
    d = G_where(&s, G_cmp(&s, PT_BIN_GT, x, 0.0), G_num(&s, PT_BIN_ADD, G_zero(&s, x->dtype), scale), t);
    break;
  }
  case PT_ACT_SOFTPLUS: { /* 1 where beta x > threshold, else sigmoid(beta x) */
    pt_tensor *bx = G_num(&s, PT_BIN_MUL, x, slope);
    d = G_where(&s, G_cmp(&s, PT_BIN_GT, bx, n->scalars[1]), G_num(&s, PT_BIN_ADD, G_zero(&s, x->dtype), 1.0),
                G_un(&s, PT_UN_SIGMOID, bx));
    break;
  }
  case PT_ACT_MISH: /* t + x sigmoid(x) (1 - t^2), t = tanh(log1p(exp(x))) */
    t = G_un(&s, PT_UN_TANH, G_un(&s, PT_UN_LOG1P, G_un(&s, PT_UN_EXP, x)));
    u = G_mul(&s, G_mul(&s, x, G_un(&s, PT_UN_SIGMOID, x)), G_rnum(&s, PT_BIN_SUB, 1.0, G_mul(&s, t, t)));
    d = G_add(&s, t, u);
    break;
  case PT_ACT_HARDTANH:
  case PT_ACT_RELU6: { /* 1 strictly between the bounds */
    double lo = n->ints[0] == PT_ACT_RELU6 ? 0.0 : slope, hi = n->ints[0] == PT_ACT_RELU6 ? 6.0 : n->scalars[1];
    d = G_mul(&s, G_ind(&s, PT_BIN_GT, x, lo, x->dtype), G_ind(&s, PT_BIN_LT, x, hi, x->dtype));
    break;
  }
  case PT_ACT_HARDSWISH: /* 0 below -3, 1 from 3, x / 3 + 1/2 between */
    t = G_num(&s, PT_BIN_ADD, G_num(&s, PT_BIN_DIV, x, 3.0), 0.5);
    t = G_where(&s, G_cmp(&s, PT_BIN_GE, x, 3.0), G_num(&s, PT_BIN_ADD, G_zero(&s, x->dtype), 1.0), t);
    d = G_zero_where(&s, G_cmp(&s, PT_BIN_LT, x, -3.0), t);
    break;
  case PT_ACT_HARDSIGMOID: /* 1/6 strictly between -3 and 3 */
    d = G_num(&s, PT_BIN_MUL,
              G_mul(&s, G_ind(&s, PT_BIN_GT, x, -3.0, x->dtype), G_ind(&s, PT_BIN_LT, x, 3.0, x->dtype)), 1.0 / 6.0);
    break;
  case PT_ACT_SOFTSIGN: /* 1 / (1 + |x|)^2 */
    t = G_num(&s, PT_BIN_ADD, G_un(&s, PT_UN_ABS, x), 1.0);
    d = G_rnum(&s, PT_BIN_DIV, 1.0, G_mul(&s, t, t));
    break;
  case PT_ACT_TANHSHRINK: /* tanh(x)^2 */
    t = G_un(&s, PT_UN_TANH, x);
    d = G_mul(&s, t, t);
    break;
  case PT_ACT_THRESHOLD: d = G_ind(&s, PT_BIN_GT, x, slope, x->dtype); break;
  case PT_ACT_LOGSIGMOID: d = G_un(&s, PT_UN_SIGMOID, G_un(&s, PT_UN_NEG, x)); break;
  default: /* softshrink, hardshrink: 1 outside [-lambda, lambda] */
    d = G_add(&s, G_ind(&s, PT_BIN_GT, x, slope, x->dtype), G_ind(&s, PT_BIN_LT, x, -slope, x->dtype));
    break;
  }
  pt_tensor *gx = G_mul(&s, g, d);
  switch ((pt_nn_act)n->ints[0]) { /* piecewise constant derivatives: a zero second derivative */
  case PT_ACT_RELU:
  case PT_ACT_LEAKY_RELU:
  case PT_ACT_HARDTANH:
  case PT_ACT_RELU6:
  case PT_ACT_HARDSIGMOID:
  case PT_ACT_THRESHOLD:
  case PT_ACT_SOFTSHRINK:
  case PT_ACT_HARDSHRINK: gx = G_add(&s, gx, G_zero_of(&s, x)); break;
  default: break;
  }
  gin[0] = G_finish(&s, gx, x);
  return gf_end(&s);
}

/* Anomaly detection: a NaN in a gradient a node returned fails the pass there. */
static bool has_nan(const pt_tensor *t) {
  int64_t n = pt_tensor_numel(t);
  if (!pt_dtype_is_floating(t->dtype)) return false;
  if (pt_tensor_is_contiguous(t)) {
    if (t->dtype == PT_FLOAT32) {
      const float *p = pt_tensor_data(t);
      for (int64_t i = 0; i < n; i++)
        if (p[i] != p[i]) return true;
    } else {
      const double *p = pt_tensor_data(t);
      for (int64_t i = 0; i < n; i++)
        if (p[i] != p[i]) return true;
    }
    return false;
  }
  for (int64_t i = 0; i < n; i++) {
    double v = pt_tensor_get_flat(t, i);
    if (v != v) return true;
  }
  return false;
}

static pt_status check_anomaly(pt_ctx *ctx, const pt_node *n, pt_tensor *const *gin) {
  for (int i = 0; i < n->n_inputs; i++)
    if (gin[i] && has_nan(gin[i]))
      return pt_fail(ctx, PT_EARG, "returned nan values in the gradient of its input %d (anomaly detection)", i + 1);
  return PT_OK;
}

/* The formula for n, or NULL: create_graph is not supported through it. */
static pt_backward_fn graph_formula(const graph_table *gt, const pt_node *n) {
  pt_backward_fn f = n->backward;
  int ma, mb;
  if (!f) return NULL;
  if (n->backward_differentiable) return f;
  if (f == hook_identity_backward || f == gt->clone) return gf_identity;
  if (f == gt->binary) return gf_binary_ok((int)n->ints[0]) ? gf_binary : NULL;
  if (f == gt->unary) return gf_unary_ok((int)n->ints[0]) ? gf_unary : NULL;
  if (f == gt->reduce) return !strcmp(n->name, "ProdBackward") ? gf_prod : gf_reduce_ok(n) ? gf_reduce : NULL;
  if (f == gt->softmax) return gf_softmax;
  if (f == gt->product) return gf_product_modes(n, &ma, &mb) ? gf_product : NULL;
  if (f == gt->addmm) return gf_addmm;
  if (f == gt->reshape) return gf_reshape;
  if (f == gt->transpose) return gf_transpose;
  if (f == gt->permute) return gf_permute;
  if (f == gt->narrow) return gf_narrow;
  if (f == gt->expand) return gf_expand;
  if (f == gt->cat) return gf_cat;
  if (f == gt->to_dtype || f == gt->copy) return gf_to_dtype; /* copy_: g to the source, as a cast */
  if (f == gt->copy_slices) return gf_copy_slices;
  if (f == gt->fill) return gf_fill;
  if (f == gt->masked_select) return gf_masked_select;
  if (f == gt->lerp) return gf_lerp;
  if (f == gt->linalg_inv) return gf_linalg_inv;
  if (f == gt->linalg_solve) return gf_linalg_solve;
  if (f == gt->cholesky) return gf_cholesky;
  if (f == gt->svd) return n->ints[0] == 1 ? gf_svdvals : NULL;
  if (f == gt->eigh) return n->inputs[0] && symmetric(n->inputs[0]) ? gf_eigh : NULL;
  if (f == gt->det) return n->saved[1] && !det_singular(n) ? gf_det : NULL;
  if (f == gt->logcumsumexp) return gf_logcumsumexp;
  if (f == gt->dropout2d) return gf_dropout2d;
  if (f == gt->max_unpool) return gf_max_unpool;
  if (f == gt->where) return gf_where;
  if (f == gt->masked_fill) return gf_masked_fill;
  if (f == gt->linear) return n->ints[3] == PT_ACT_NONE || n->ints[3] == PT_ACT_RELU ? gf_linear : NULL;
  if (f == gt->act) return gf_act_ok((int)n->ints[0]) ? gf_act : NULL;
  if (f == gt->layer_norm) return gf_layer_norm;
  if (f == gt->rms_norm) return gf_rms_norm;
  if (f == gt->batch_norm) return gf_batch_norm;
  if (f == gt->conv2d) return gf_conv2d;
  if (f == gt->conv_transpose2d) return gf_conv_transpose2d;
  if (f == gt->nn_view) return gf_nn_view;
  if (f == gt->gather) return gf_gather;
  if (f == gt->index_select) return gf_index_select;
  if (f == gt->embedding) return gf_embedding;
  if (f == gt->minmax) return gf_minmax;
  if (f == gt->cumsum) return gf_cumsum;
  if (f == gt->cumprod) return gf_cumprod;
  if (f == gt->strided) return gf_strided;
  if (f == as_strided_backward) return gf_as_strided;
  if (f == gt->select) return gf_select;
  if (f == gt->repeat) return gf_repeat;
  /* scatter_add with src the index's shape (scatter_, which overwrites, has none) */
  if (f == gt->scatter)
    return n->ints[1] && (n->n_inputs < 2 || !n->inputs[1] || pt_tensor_numel(n->inputs[1]) == pt_tensor_numel(n->saved[0]))
               ? gf_scatter_add : NULL;
  if (f == gt->max_pool) return gf_max_pool;
  if (f == gt->avg_pool) return gf_avg_pool;
  if (f == gt->adaptive_avg_pool)
    return n->ints[1] % n->ints[3] == 0 && n->ints[2] % n->ints[4] == 0 ? gf_avg_pool : gf_adaptive_avg_pool;
  if (f == gt->taps) return gf_taps;
  if (f == gt->lstm_cell) return gf_lstm_cell;
  if (f == gt->special) return gf_special;
  if (f == gt->scatter_reduce) return gf_scatter_reduce;
  if (f == gt->xlog1py) return gf_xlog1py;
  if (f == gt->gru_cell) return gf_gru_cell;
  if (f == gt->dropout) return gf_dropout;
  if (f == gt->pointwise_loss) return gf_pointwise_loss_ok(n) ? gf_pointwise_loss : NULL;
  if (f == gt->class_loss) return n->inputs[0] && n->inputs[0]->ndim <= 2 ? gf_class_loss : NULL;
  return NULL;
}

/* --- the pass --- */

enum {
  PASS_RUN = 1,     /* its backward runs (every node of a plain backward) */
  PASS_CAPTURE = 2, /* autograd.grad asks for its output's gradient */
  PASS_QUEUED = 4,  /* a root already on the ready list */
};

/* A leaf whose gradient is summed before it is used: it has hooks (which see the whole
 * gradient), or autograd.grad asks for it. */
typedef struct leaf_slot {
  pt_tensor *leaf;    /* borrowed */
  pt_tensor *pending; /* the sum so far */
  int deps;           /* deliveries still to come */
  bool hooked;
} leaf_slot;

typedef struct pass {
  pt_ctx *ctx;
  const char *fname;
  const pt_grad_hooks *hooks;
  bool create;  /* create_graph */
  bool capture; /* autograd.grad, or backward's inputs */
  bool accumulate; /* backward's inputs: the captured gradients go into .grad */
  leaf_slot *slots;
  int n_slots;
} pass;

static int slot_cmp(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)((const leaf_slot *)a)->leaf, y = (uintptr_t)((const leaf_slot *)b)->leaf;
  return x < y ? -1 : x > y;
}

static leaf_slot *find_slot(const pass *p, const pt_tensor *leaf) {
  if (!p->n_slots) return NULL;
  leaf_slot key = {.leaf = (pt_tensor *)leaf};
  return bsearch(&key, p->slots, (size_t)p->n_slots, sizeof key, slot_cmp);
}

/* Nobody but the engine holds t or its storage, which partrain allocated: it may be written. */
static bool exclusive(const pt_tensor *t) {
  return atomic_load(&t->refcount) == 1 && atomic_load(&t->storage->refcount) == 1 && !t->storage->release &&
         pt_tensor_is_contiguous(t);
}

/* *acc += g: taking a reference to the first, summing the next ones (out of place, recorded,
 * under create_graph) */
static pt_status pend(pass *p, pt_tensor **acc, pt_tensor *g) {
  pt_ctx *ctx = p->ctx;
  if (!*acc) {
    *acc = pt_tensor_retain(g);
    return PT_OK;
  }
  pt_tensor *sum = NULL;
  pt_status st;
  if (p->create) {
    if (!same_shape(*acc, g)) return pt_grad_shape_error(ctx, g, *acc);
    st = pt_add(ctx, *acc, g, &sum);
  } else if (exclusive(*acc)) {
    /* nobody else can see the accumulated gradient (a sum made here, or a producer's output it
     * has let go of): add in place. Copying it first on every arrival made a fan-in of n
     * gradients cost n full copies (an RNN's time steps sliced from one projection: 18% of
     * nn.GRU's backward in memmove) */
    return add_into(ctx, *acc, g);
  } else {
    /* the first gradient may be a view shared with someone else: copy before adding */
    if (!(st = owned_copy(ctx, *acc, (*acc)->dtype, &sum)) && (st = add_into(ctx, sum, g))) {
      pt_tensor_release(sum);
      sum = NULL;
    }
  }
  if (st) return st;
  pt_tensor_release(*acc);
  *acc = sum;
  return PT_OK;
}

/* n is a narrow/select node or a regenerated view (slice_grad): its gradient g goes straight
 * into that slice (region) of its input's pending gradient, made (zeros) by the first slice to
 * arrive or copied once when someone else holds it. */
static pt_status pend_slice(pass *p, pt_node *n, pt_tensor *g) {
  pt_ctx *ctx = p->ctx;
  pt_tensor **acc = &n->input_fn[0]->pending_grad, *view = NULL;
  pt_status st = PT_OK;
  if (n->backward == as_strided_backward) {
    /* a view seen over its (contiguous) base's history: its region of a contiguous pending
     * gradient, as a regenerated slice of an output buffer written step by step */
    const strided_geometry *v = n->extra;
    if (*acc && (!exclusive(*acc) || !pt_tensor_is_contiguous(*acc))) {
      pt_tensor *c;
      if ((st = owned_copy(ctx, *acc, (*acc)->dtype, &c))) return st;
      pt_tensor_release(*acc);
      *acc = c;
    }
    if (!*acc && (st = pt_tensor_zeros(ctx, g->dtype, v->base_ndim, v->base_shape, acc))) return st;
    if ((st = pt_tensor_from_storage(ctx, (*acc)->storage, (*acc)->dtype, (*acc)->offset + v->offset,
                                     v->ndim, v->shape, v->stride, &view)))
      return st;
    pt_tensor_add_raw(view, g);
    atomic_fetch_add(&(*acc)->storage->version, 1);
    pt_tensor_release(view);
    return PT_OK;
  }
  int dim = (int)n->ints[0], nd = n->n_ints - 3;
  if (*acc && !exclusive(*acc)) {
    pt_tensor *c;
    if ((st = owned_copy(ctx, *acc, (*acc)->dtype, &c))) return st;
    pt_tensor_release(*acc);
    *acc = c;
  }
  if (!*acc && (st = pt_tensor_zeros(ctx, g->dtype, nd, n->ints + 3, acc))) return st;
  if (n->ints[2] == -1)
    st = pt_select_raw(ctx, *acc, dim, n->ints[1], &view);
  else
    st = pt_narrow_raw(ctx, *acc, dim, n->ints[1], n->ints[2], &view);
  if (st) return st;
  if (pt_tensor_numel(view) != pt_tensor_numel(g) || view->ndim != g->ndim) {
    st = pt_grad_shape_error(ctx, g, view);
  } else {
    pt_tensor_add_raw(view, g);
    atomic_fetch_add(&(*acc)->storage->version, 1);
  }
  pt_tensor_release(view);
  return st;
}

/* t->grad += g under create_graph: out of place, with history (the first one a copy) */
static pt_status accumulate_graph(pt_ctx *ctx, pt_tensor *t, pt_tensor *g) {
  pt_tensor *c = NULL, *r = NULL;
  pt_status st;
  if (t->grad && (t->grad->dtype != t->dtype || !same_shape(t->grad, t)))
    return pt_grad_shape_error(ctx, g, t->grad);
  if (!same_shape(g, t)) return pt_grad_shape_error(ctx, g, t);
  if ((st = pt_to_dtype(ctx, g, t->dtype, &c))) return st;
  st = t->grad ? pt_add(ctx, t->grad, c, &r) : pt_clone(ctx, c, &r);
  pt_tensor_release(c);
  if (st) return st;
  pt_tensor_release(t->grad);
  t->grad = r;
  return PT_OK;
}

static pt_status accumulate_leaf(pass *p, pt_tensor *leaf, pt_tensor *g) {
  pt_ctx *ctx = p->ctx;
  /* turned off since the graph was recorded (x:requires_grad_(false)): no gradient, as PyTorch */
  if (!leaf->requires_grad) return PT_OK;
  if (ctx->accumulate) return ctx->accumulate(ctx, leaf, g, ctx->accumulate_data);
  if (p->create) return accumulate_graph(ctx, leaf, g);
  return pt_accumulate_default(ctx, leaf, g, NULL);
}

static pt_status run_hooks(pass *p, pt_node *node, pt_tensor *leaf, pt_tensor **g) {
  return p->hooks->run(p->ctx, p->hooks->data, node, leaf, g);
}

/* A leaf's gradient is complete: hooks, then .grad (autograd.grad keeps it in the slot). */
static pt_status finish_slot(pass *p, leaf_slot *s) {
  if ((p->capture && !p->accumulate) || !s->pending) return PT_OK;
  pt_tensor *g = s->pending;
  s->pending = NULL;
  pt_status st = PT_OK;
  if (s->hooked) st = run_hooks(p, NULL, s->leaf, &g);
  if (!st) st = accumulate_leaf(p, s->leaf, g);
  pt_tensor_release(g);
  return st;
}

/* g (NULL: none after all) reaches a leaf */
static pt_status deliver_leaf(pass *p, pt_tensor *leaf, pt_tensor *g) {
  leaf_slot *s = find_slot(p, leaf);
  if (s) {
    pt_status st = g ? pend(p, &s->pending, g) : PT_OK;
    if (!st && --s->deps == 0) st = finish_slot(p, s);
    return st;
  }
  if (p->capture || !g) return PT_OK; /* autograd.grad changes no .grad */
  return accumulate_leaf(p, leaf, g);
}

static pt_status fail_second_time(pass *p) {
  return pt_fail(p->ctx, PT_ESTATE,
                 "%s: trying to backward through the graph a second time (pass retain_graph = "
                 "true to the first backward)",
                 p->fname);
}

/* The gradient the pass starts from at root k: a copy of grads[k] as the backward functions
 * can read it (root's dtype, contiguous), grads[k] itself (in root's dtype) under create_graph,
 * or ones for a one-element root. */
static pt_status root_grad(pass *p, int k, int n_roots, pt_tensor *root, pt_tensor *grad,
                           pt_tensor **out) {
  pt_ctx *ctx = p->ctx;
  bool plain = !p->capture && n_roots == 1; /* backward's own messages */
  char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
  pt_status st;
  if (!root->requires_grad) {
    if (plain)
      return pt_fail(ctx, PT_ESTATE, "%s: tensor does not require grad and has no grad_fn", p->fname);
    return pt_fail(ctx, PT_ESTATE,
                   "%s: element %d of tensors does not require grad and does not have a grad_fn",
                   p->fname, k + 1);
  }
  if (grad) {
    if (!same_shape(grad, root)) {
      pt_shape_format(grad->ndim, grad->shape, a, sizeof a);
      pt_shape_format(root->ndim, root->shape, b, sizeof b);
      if (plain)
        return pt_fail(ctx, PT_ESHAPE, "%s: gradient shape %s does not match tensor shape %s",
                       p->fname, a, b);
      return pt_fail(ctx, PT_ESHAPE,
                     "%s: mismatch in shape: grad_outputs[%d] has shape %s and outputs[%d] has "
                     "shape %s",
                     p->fname, k + 1, a, k + 1, b);
    }
    if (p->create) return pt_to_dtype(ctx, grad, root->dtype, out);
    /* as PyTorch: the gradient takes the output's dtype; and a layout the backward functions
     * can read whatever they assume (a broadcast gradient has zero strides) */
    pt_tensor *cast = NULL;
    if ((st = pt_tensor_to_dtype_raw(ctx, grad, root->dtype, &cast))) return st;
    st = pt_tensor_contiguous_raw(ctx, cast, out);
    pt_tensor_release(cast);
    return st;
  }
  if (pt_tensor_numel(root) != 1) {
    pt_shape_format(root->ndim, root->shape, a, sizeof a);
    if (plain)
      return pt_fail(ctx, PT_ESHAPE,
                     "%s: grad can be implicitly created only for one-element outputs (tensor "
                     "shape %s)",
                     p->fname, a);
    return pt_fail(ctx, PT_ESHAPE,
                   "%s: grad can be implicitly created only for scalar outputs (outputs[%d] has "
                   "shape %s; pass grad_outputs)",
                   p->fname, k + 1, a);
  }
  if ((st = pt_tensor_empty(ctx, root->dtype, root->ndim, root->shape, out))) return st;
  pt_tensor_fill(ctx, *out, 1.0);
  return PT_OK;
}

/* autograd.grad: which nodes must run. Orders the collected nodes (roots first), then from the
 * leaves' side up: a node runs when one of its edges leads to a node that runs or is asked for,
 * or to a leaf asked for. Then counts the deliveries each node and slot will get. */
static pt_status prune(pass *p, node_list *all, pt_node *const *rootn, int n_roots) {
  node_list order = {0}, stack = {0};
  pt_status st = PT_OK;
  for (size_t i = 0; i < all->n; i++) all->items[i]->topo_deps = 0;
  for (size_t i = 0; i < all->n; i++) {
    pt_node *n = all->items[i];
    for (int k = 0; k < n->n_inputs; k++)
      if (n->input_fn[k] && n->needs_grad[k]) n->input_fn[k]->topo_deps++;
  }
  for (int r = 0; r < n_roots; r++) {
    pt_node *n = rootn[r];
    if (n && n->topo_deps == 0 && !(n->pass_flags & PASS_QUEUED)) {
      n->pass_flags |= PASS_QUEUED;
      if ((st = list_push(p->ctx, &stack, n))) goto done;
    }
  }
  while (stack.n) {
    pt_node *n = stack.items[--stack.n];
    if ((st = list_push(p->ctx, &order, n))) goto done;
    for (int k = 0; k < n->n_inputs; k++) {
      pt_node *m = n->input_fn[k];
      if (m && n->needs_grad[k] && --m->topo_deps == 0 && (st = list_push(p->ctx, &stack, m))) goto done;
    }
  }
  for (size_t i = order.n; i-- > 0;) {
    pt_node *n = order.items[i];
    bool run = false;
    for (int k = 0; k < n->n_inputs && !run; k++) {
      if (!n->needs_grad[k] || !n->inputs[k]) continue;
      pt_node *m = n->input_fn[k];
      run = m ? (m->pass_flags & (PASS_RUN | PASS_CAPTURE)) != 0 : find_slot(p, n->inputs[k]) != NULL;
    }
    n->pass_flags = (unsigned char)((n->pass_flags & PASS_CAPTURE) | (run ? PASS_RUN : 0));
  }
  for (size_t i = 0; i < all->n; i++) all->items[i]->pending_deps = 0;
  for (size_t i = 0; i < all->n; i++) {
    pt_node *n = all->items[i];
    if (!(n->pass_flags & PASS_RUN)) continue;
    for (int k = 0; k < n->n_inputs; k++) {
      if (!n->needs_grad[k] || !n->inputs[k]) continue;
      pt_node *m = n->input_fn[k];
      if (m) {
        if (m->pass_flags & (PASS_RUN | PASS_CAPTURE)) m->pending_deps++;
      } else {
        leaf_slot *s = find_slot(p, n->inputs[k]);
        if (s) s->deps++;
      }
    }
  }
done:
  free(order.items);
  free(stack.items);
  return st;
}

pt_status pt_backward(pt_ctx *ctx, pt_tensor *root, pt_tensor *grad, bool retain_graph) {
  pt_backward_opts o = {.retain_graph = retain_graph};
  return pt_backward_ex(ctx, 1, &root, grad ? &grad : NULL, &o);
}

pt_status pt_backward_ex(pt_ctx *ctx, int n_roots, pt_tensor *const *roots, pt_tensor *const *grads,
                         const pt_backward_opts *opts) {
  static const pt_backward_opts defaults = {0};
  if (!opts) opts = &defaults;
  pass p = {
      .ctx = ctx,
      .fname = opts->fname ? opts->fname : "backward",
      .hooks = opts->hooks && opts->hooks->run ? opts->hooks : NULL,
      .create = opts->create_graph,
      .capture = opts->n_inputs > 0,
      .accumulate = opts->n_inputs > 0 && opts->accumulate_inputs,
  };
  pt_status st = PT_OK;
  bool was_enabled = ctx->grad_enabled, was_direct_off = ctx->grad_direct_off;
  pt_tensor *const *was_inputs = ctx->pass_inputs;
  int was_n_inputs = ctx->n_pass_inputs;
  unsigned mark = atomic_fetch_add(&backward_pass_counter, 1) + 1;
  node_list all = {0}, stack = {0}, ready = {0};
  pt_tensor **g0 = NULL;
  pt_node **rootn = NULL;
  graph_table gt;

  if (p.capture && opts->grads_out)
    for (int i = 0; i < opts->n_inputs; i++) opts->grads_out[i] = NULL;
  if (n_roots <= 0) return pt_fail(ctx, PT_EARG, "%s: no tensors to differentiate", p.fname);
  g0 = calloc((size_t)n_roots, sizeof *g0);
  rootn = calloc((size_t)n_roots, sizeof *rootn);
  if (!g0 || !rootn) {
    st = pt_fail(ctx, PT_ENOMEM, "%s: out of memory", p.fname);
    goto done;
  }
  for (int k = 0; k < n_roots; k++)
    if ((st = root_grad(&p, k, n_roots, roots[k], grads ? grads[k] : NULL, &g0[k]))) goto done;
  for (int i = 0; i < opts->n_inputs; i++)
    if (!opts->inputs[i]->requires_grad) {
      st = pt_fail(ctx, PT_EARG,
                   "%s: one of the differentiated tensors (inputs[%d]) does not require grad",
                   p.fname, i + 1);
      goto done;
    }

  /* the leaves whose gradient is summed first: autograd.grad's leaf inputs, or hooked leaves */
  {
    int cap = p.capture ? opts->n_inputs : (p.hooks ? p.hooks->n_leaves : 0);
    if (cap > 0) {
      if (!(p.slots = calloc((size_t)cap, sizeof *p.slots))) {
        st = pt_fail(ctx, PT_ENOMEM, "%s: out of memory", p.fname);
        goto done;
      }
      for (int i = 0; i < cap; i++) {
        pt_tensor *t = p.capture ? opts->inputs[i] : p.hooks->leaves[i];
        if (!t->grad_fn)
          p.slots[p.n_slots++] = (leaf_slot){.leaf = t, .hooked = p.hooks && (!p.capture || p.accumulate)};
      }
      qsort(p.slots, (size_t)p.n_slots, sizeof *p.slots, slot_cmp);
      int m = 0; /* without duplicates */
      for (int i = 0; i < p.n_slots; i++)
        if (m == 0 || p.slots[m - 1].leaf != p.slots[i].leaf) p.slots[m++] = p.slots[i];
      p.n_slots = m;
    }
  }

  /* leaf gradients written straight into .grad by the backward functions would bypass the
   * capture, the hooks and create_graph's recorded accumulation */
  if (p.capture || p.create || p.n_slots > 0) ctx->grad_direct_off = true;
  ctx->pass_inputs = p.capture ? opts->inputs : NULL;
  ctx->n_pass_inputs = p.capture ? opts->n_inputs : 0;

  /* 1. collect the nodes reachable from the roots and count how many consumers each has */
  for (int k = 0; k < n_roots; k++) {
    pt_tensor *root = roots[k];
    leaf_slot *s;
    if (!root->grad_fn) {
      if ((s = find_slot(&p, root))) s->deps++;
      continue;
    }
    pt_node *rn = rootn[k] = history_now(ctx, root);
    if (rn->released) {
      st = fail_second_time(&p);
      goto done;
    }
    if (rn->visit_mark == mark) continue;
    rn->visit_mark = mark;
    rn->pending_deps = 0;
    rn->pass_flags = p.capture ? 0 : PASS_RUN;
    if ((st = list_push(ctx, &stack, rn)) || (st = list_push(ctx, &all, rn))) goto done;
  }
  while (stack.n) {
    pt_node *n = stack.items[--stack.n];
    for (int i = 0; i < n->n_inputs; i++) {
      if (!n->needs_grad[i] || !n->inputs[i]) continue;
      pt_node *m = n->input_fn[i]; /* the history when n was recorded */
      if (!m) {
        leaf_slot *s = p.capture ? NULL : find_slot(&p, n->inputs[i]);
        if (s) s->deps++;
        continue;
      }
      if (m->visit_mark != mark) {
        m->visit_mark = mark;
        m->pending_deps = 0;
        m->pass_flags = p.capture ? 0 : PASS_RUN;
        if ((st = list_push(ctx, &stack, m)) || (st = list_push(ctx, &all, m))) goto done;
      }
      m->pending_deps++;
    }
  }
  if (p.capture) {
    for (int i = 0; i < opts->n_inputs; i++) {
      pt_node *m = opts->inputs[i]->grad_fn;
      if (m && m->visit_mark == mark) m->pass_flags |= PASS_CAPTURE;
    }
    if ((st = prune(&p, &all, rootn, n_roots))) goto done;
  }
  if (p.create) { /* every node that runs needs its formula, checked before anything runs */
    if ((st = graph_probe(ctx, &gt))) goto done;
    for (size_t i = 0; i < all.n; i++) {
      pt_node *n = all.items[i];
      if ((n->pass_flags & PASS_RUN) && !graph_formula(&gt, n)) {
        st = pt_fail(ctx, PT_EARG, "%s: create_graph is not supported through %s", p.fname, n->name);
        goto done;
      }
    }
  }
  ctx->grad_enabled = p.create; /* backward functions build no graph, formulas do */

  /* 2. the roots' gradients; run nodes once all their consumers have delivered */
  for (int k = 0; k < n_roots; k++) {
    pt_tensor *g = g0[k];
    if (!rootn[k]) { /* a leaf */
      if ((st = deliver_leaf(&p, roots[k], g))) goto done;
      continue;
    }
    if ((st = pend(&p, &rootn[k]->pending_grad, g))) goto done;
    if (roots[k]->retains_grad) rootn[k]->retain_target = roots[k];
  }
  for (int k = 0; k < n_roots; k++) {
    pt_node *n = rootn[k];
    if (n && n->pending_deps == 0 && (n->pass_flags & (PASS_RUN | PASS_CAPTURE)) &&
        !(n->pass_flags & PASS_QUEUED)) {
      n->pass_flags |= PASS_QUEUED;
      if ((st = list_push(ctx, &ready, n))) goto done;
    }
  }
  while (ready.n) {
    pt_node *n = ready.items[--ready.n];
    if (n->released) {
      st = fail_second_time(&p);
      goto done;
    }
    if (ctx->interrupted && *ctx->interrupted) {
      st = pt_fail(ctx, PT_EINTR, "interrupted");
      goto done;
    }
    pt_tensor *gout = n->pending_grad;
    n->pending_grad = NULL;
    /* autograd.grad captures the gradient before the node's hooks (as torch 1.13); backward's
     * inputs after them, as the .grad a backward fills */
    bool hooks_first = p.accumulate && (n->pass_flags & PASS_CAPTURE);
    if (hooks_first && gout && n->has_hooks && p.hooks && (st = run_hooks(&p, n, NULL, &gout))) {
      pt_tensor_release(gout);
      goto done;
    }
    if (gout && (n->pass_flags & PASS_CAPTURE)) n->captured = pt_tensor_retain(gout);
    if (!(n->pass_flags & PASS_RUN)) {
      pt_tensor_release(gout);
      continue;
    }
    if (!hooks_first && gout && n->has_hooks && p.hooks && (st = run_hooks(&p, n, NULL, &gout))) {
      pt_tensor_release(gout);
      goto done;
    }
    if (gout && n->retain_target) {
      pt_tensor *t = n->retain_target;
      st = p.create ? accumulate_graph(ctx, t, gout) : pt_accumulate_default(ctx, t, gout, NULL);
      if (st) {
        pt_tensor_release(gout);
        goto done;
      }
    }
    pt_tensor *gin[PT_NODE_MAX_INPUTS] = {NULL};
    if (gout) { /* NULL: no gradient reached it after all; its inputs get none from it */
      for (int k = 0; k < PT_NODE_MAX_SAVED; k++) {
        pt_tensor *sv = n->saved[k];
        if (sv && atomic_load(&sv->storage->version) != n->saved_version[k]) {
          char shape[PT_SHAPE_STR_MAX];
          st = pt_fail(ctx, PT_ESTATE,
                       "%s: one of the variables needed for gradient computation has been "
                       "modified by an inplace operation (saved tensor %d of shape %s is at "
                       "version %u; expected version %u)",
                       n->name, k + 1, pt_shape_format(sv->ndim, sv->shape, shape, sizeof shape),
                       atomic_load(&sv->storage->version), n->saved_version[k]);
          pt_tensor_release(gout);
          goto done;
        }
      }
      if (!p.create && n->slice_grad && n->n_inputs == 1 && n->needs_grad[0] && n->input_fn[0] &&
          (n->input_fn[0]->pass_flags & (PASS_RUN | PASS_CAPTURE)))
        st = pend_slice(&p, n, gout); /* gin[0] stays NULL: delivered already */
      else
        st = (p.create ? graph_formula(&gt, n) : n->backward)(ctx, n, gout, gin);
      pt_tensor_release(gout);
      if (!st && ctx->detect_anomaly) st = check_anomaly(ctx, n, gin);
      if (st) {
        for (int i = 0; i < PT_NODE_MAX_INPUTS; i++) pt_tensor_release(gin[i]);
        pt_fail_prefix(ctx, n->name);
        if (ctx->detect_anomaly && !ctx->anomaly_node) ctx->anomaly_node = pt_node_retain(n);
        goto done;
      }
    }
    for (int i = 0; i < n->n_inputs && !st; i++) {
      pt_tensor *in = n->inputs[i];
      if (!in || !n->needs_grad[i]) continue;
      pt_node *m = n->input_fn[i]; /* the history when n was recorded */
      if (!m) {
        st = deliver_leaf(&p, in, gin[i]);
        continue;
      }
      if (!(m->pass_flags & (PASS_RUN | PASS_CAPTURE))) continue;
      if (gin[i]) st = pend(&p, &m->pending_grad, gin[i]);
      if (!st && --m->pending_deps == 0) st = list_push(ctx, &ready, m);
    }
    for (int i = 0; i < PT_NODE_MAX_INPUTS; i++) pt_tensor_release(gin[i]);
    if (st) goto done;
  }
  if (p.accumulate) { /* the non-leaf inputs' .grad (the leaves' went in at finish_slot) */
    for (int i = 0; i < opts->n_inputs && !st; i++) {
      pt_tensor *t = opts->inputs[i];
      pt_node *m = t->grad_fn;
      bool seen = false;
      for (int j = 0; j < i && !seen; j++) seen = opts->inputs[j] == t;
      if (!m || seen || m->visit_mark != mark || !m->captured) continue;
      if (m->retain_target == t && (m->pass_flags & PASS_RUN)) continue; /* retain_grad's did */
      st = p.create ? accumulate_graph(ctx, t, m->captured) : pt_accumulate_default(ctx, t, m->captured, NULL);
    }
    if (st) goto done;
  } else if (p.capture) { /* the answers, before the bookkeeping goes */
    for (int i = 0; i < opts->n_inputs; i++) {
      pt_tensor *t = opts->inputs[i];
      leaf_slot *s = t->grad_fn ? NULL : find_slot(&p, t);
      pt_node *m = t->grad_fn;
      pt_tensor *r = s ? s->pending : (m && m->visit_mark == mark ? m->captured : NULL);
      opts->grads_out[i] = pt_tensor_retain(r);
    }
  }

done:
  ctx->grad_enabled = was_enabled;
  ctx->grad_direct_off = was_direct_off;
  ctx->pass_inputs = was_inputs;
  ctx->n_pass_inputs = was_n_inputs;
  for (size_t i = 0; i < all.n; i++) {
    pt_node *n = all.items[i];
    pt_tensor_release(n->pending_grad);
    n->pending_grad = NULL;
    pt_tensor_release(n->captured);
    n->captured = NULL;
    /* a root's regenerated node borrowed it for this pass; t:retain_grad()'s stays */
    if (n->retain_target && n->retain_target->grad_fn != n) n->retain_target = NULL;
  }
  { /* the nodes that ran (all of a plain backward's, even when it failed) lose their saved
     * tensors without retain_graph */
    size_t m = 0;
    for (size_t i = 0; i < all.n; i++) {
      pt_node *n = all.items[i];
      bool ran = n->pass_flags & PASS_RUN;
      n->pass_flags = 0;
      if (ran) all.items[m++] = n;
    }
    all.n = m;
    if (!opts->retain_graph) release_saved(&all);
  }
  for (int i = 0; i < p.n_slots; i++) pt_tensor_release(p.slots[i].pending);
  free(p.slots);
  for (int k = 0; g0 && k < n_roots; k++) pt_tensor_release(g0[k]);
  for (int k = 0; rootn && k < n_roots; k++) pt_node_release(rootn[k]);
  free(g0);
  free(rootn);
  free(all.items);
  free(stack.items);
  free(ready.items);
  if (st && p.capture && !p.accumulate)
    for (int i = 0; i < opts->n_inputs; i++) {
      pt_tensor_release(opts->grads_out[i]);
      opts->grads_out[i] = NULL;
    }
  return st;
}
