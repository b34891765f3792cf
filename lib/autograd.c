/* The reverse-mode engine: recording nodes, ordering them, running backward functions. */
#include "autograd.h"

#include <stdlib.h>
#include <string.h>

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

/* The history of a tensor whose grad_fn is m, as of now (a new reference). A view's values
 * follow its base: when the base got a new history since the view was made (an in-place op),
 * the view's node is resolved again over the base's current one, as a copy, so that what was
 * recorded earlier keeps the old one (PyTorch rebases views the same way). Other nodes are
 * their own history. On failure to copy, the view keeps its recorded history. */
static bool plain_view(const pt_node *m) {
  bool plain = m && m->is_view && m->n_inputs == 1 && m->inputs[0] && !m->extra && !m->released;
  for (int k = 0; plain && k < PT_NODE_MAX_SAVED; k++) plain = !m->saved[k];
  return plain;
}

/* No in-place op touched the storage since the view was recorded: its history is as it was
 * (and so is every view under it, recorded earlier), without walking the chain of views. */
static bool view_unchanged(const pt_node *m) {
  return atomic_load(&m->inputs[0]->storage->version) == m->view_version;
}

static pt_node *node_now(pt_node *m) {
  if (!plain_view(m) || view_unchanged(m)) return pt_node_retain(m);
  /* the chain of views down to a history that stands as it is, then back up, in loops: a
   * sequence consumed one narrow() at a time makes chains as long as the sequence */
  size_t n = 0, cap = 16;
  pt_node **chain = malloc(cap * sizeof *chain);
  if (!chain) return pt_node_retain(m);
  pt_node *cur = m;
  while (plain_view(cur) && !view_unchanged(cur)) {
    if (n == cap) {
      pt_node **grown = realloc(chain, 2 * cap * sizeof *chain);
      if (!grown) {
        free(chain);
        return pt_node_retain(m); /* keeps its recorded history, as on any failure here */
      }
      chain = grown;
      cap *= 2;
    }
    chain[n++] = cur;
    cur = cur->inputs[0]->grad_fn;
  }
  pt_node *below = pt_node_retain(cur); /* the history of the innermost view's input, now */
  while (n > 0) {
    pt_node *v = chain[--n];
    if (below == v->input_fn[0]) {
      pt_node_release(below);
      below = pt_node_retain(v);
      continue;
    }
    pt_node *c = pt_small_alloc(NULL, sizeof *c);
    if (!c) {
      pt_node_release(below);
      below = pt_node_retain(v);
      continue;
    }
    memcpy(c, v, sizeof *c);
    atomic_init(&c->refcount, 1);
    c->inputs[0] = pt_tensor_retain(v->inputs[0]);
    c->input_fn[0] = below;
    c->view_version = atomic_load(&c->inputs[0]->storage->version); /* resolved as of now */
    c->pending_grad = NULL;
    c->pending_deps = 0;
    c->visit_mark = 0;
    below = c;
  }
  free(chain);
  return below;
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
    n->inputs[i] = pt_tensor_retain(inputs[i]);
    n->input_fn[i] = inputs[i] ? node_now(inputs[i]->grad_fn) : NULL;
    n->needs_grad[i] = inputs[i] && inputs[i]->requires_grad;
  }
  n->out_ndim = out->ndim;
  memcpy(n->out_shape, out->shape, sizeof n->out_shape);
  n->out_dtype = out->dtype;
  pt_node_release(out->grad_fn);
  out->grad_fn = n;
  out->requires_grad = true;
  *node_out = n;
  return PT_OK;
}

/* --- gradient arithmetic used by the engine --- */

/* dst += src, same shape; dst is contiguous and owned by the engine. */
static pt_status add_into(pt_ctx *ctx, pt_tensor *dst, pt_tensor *src) {
  int64_t n = pt_tensor_numel(dst);
  if (pt_tensor_numel(src) != n || dst->ndim != src->ndim) return pt_grad_shape_error(ctx, src, dst);
  pt_tensor_add_raw(dst, src);
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
  if (leaf->grad_fn || !leaf->requires_grad || !pt_tensor_is_contiguous(leaf)) return NULL;
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

static pt_status accumulate_leaf(pt_ctx *ctx, pt_tensor *leaf, pt_tensor *grad) {
  /* turned off since the graph was recorded (x:requires_grad_(false)): no gradient, as PyTorch */
  if (!leaf->requires_grad) return PT_OK;
  if (ctx->accumulate) return ctx->accumulate(ctx, leaf, grad, ctx->accumulate_data);
  return pt_accumulate_default(ctx, leaf, grad, NULL);
}

/* Add g into node's pending gradient (taking a reference to g or summing). */
static pt_status pend(pt_ctx *ctx, pt_node *node, pt_tensor *g) {
  if (!node->pending_grad) {
    node->pending_grad = pt_tensor_retain(g);
    return PT_OK;
  }
  /* The first gradient may be a view shared with someone else: copy before adding. */
  pt_tensor *sum;
  pt_status st = owned_copy(ctx, node->pending_grad, node->pending_grad->dtype, &sum);
  if (st) return st;
  st = add_into(ctx, sum, g);
  if (st) {
    pt_tensor_release(sum);
    return st;
  }
  pt_tensor_release(node->pending_grad);
  node->pending_grad = sum;
  return PT_OK;
}

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

pt_status pt_backward(pt_ctx *ctx, pt_tensor *root, pt_tensor *grad, bool retain_graph) {
  pt_status st = PT_OK;
  pt_tensor *g0 = NULL;
  if (!root->requires_grad)
    return pt_fail(ctx, PT_ESTATE, "backward: tensor does not require grad and has no grad_fn");
  if (grad) {
    if (grad->ndim != root->ndim ||
        memcmp(grad->shape, root->shape, (size_t)root->ndim * sizeof(int64_t)) != 0) {
      char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
      return pt_fail(ctx, PT_ESHAPE, "backward: gradient shape %s does not match tensor shape %s",
                     pt_shape_format(grad->ndim, grad->shape, a, sizeof a),
                     pt_shape_format(root->ndim, root->shape, b, sizeof b));
    }
    /* as PyTorch: the gradient takes the output's dtype; and a layout the backward functions
     * can read whatever they assume (a broadcast gradient has zero strides) */
    pt_tensor *cast = NULL;
    if ((st = pt_tensor_to_dtype_raw(ctx, grad, root->dtype, &cast))) return st;
    st = pt_tensor_contiguous_raw(ctx, cast, &g0);
    pt_tensor_release(cast);
    if (st) return st;
  } else {
    if (pt_tensor_numel(root) != 1) {
      char a[PT_SHAPE_STR_MAX];
      return pt_fail(ctx, PT_ESHAPE,
                     "backward: grad can be implicitly created only for one-element outputs "
                     "(tensor shape %s)",
                     pt_shape_format(root->ndim, root->shape, a, sizeof a));
    }
    if ((st = pt_tensor_empty(ctx, root->dtype, root->ndim, root->shape, &g0))) return st;
    pt_tensor_fill(ctx, g0, 1.0);
  }
  if (!root->grad_fn) { /* a leaf */
    st = accumulate_leaf(ctx, root, g0);
    pt_tensor_release(g0);
    return st;
  }
  bool was_enabled = ctx->grad_enabled;
  ctx->grad_enabled = false; /* backward functions build no graph */

  /* 1. collect the nodes reachable from root and count how many consumers each has */
  unsigned mark = atomic_fetch_add(&backward_pass_counter, 1) + 1;
  node_list all = {0}, stack = {0}, ready = {0};
  pt_node *rootn = node_now(root->grad_fn); /* released at the end */
  if (rootn->released) {
    st = pt_fail(ctx, PT_ESTATE,
                 "backward: trying to backward through the graph a second time (pass "
                 "retain_graph = true to the first backward)");
    goto done;
  }
  rootn->visit_mark = mark;
  rootn->pending_deps = 0;
  if ((st = list_push(ctx, &stack, rootn)) || (st = list_push(ctx, &all, rootn))) goto done;
  while (stack.n) {
    pt_node *n = stack.items[--stack.n];
    for (int i = 0; i < n->n_inputs; i++) {
      pt_node *m = n->input_fn[i]; /* the history when n was recorded */
      if (!m || !n->needs_grad[i]) continue;
      if (m->visit_mark != mark) {
        m->visit_mark = mark;
        m->pending_deps = 0;
        if ((st = list_push(ctx, &stack, m)) || (st = list_push(ctx, &all, m))) goto done;
      }
      m->pending_deps++;
    }
  }

  /* 2. run nodes once all their consumers have delivered */
  rootn->pending_grad = g0;
  g0 = NULL;
  if ((st = list_push(ctx, &ready, rootn))) goto done;
  while (ready.n) {
    pt_node *n = ready.items[--ready.n];
    if (n->released) {
      st = pt_fail(ctx, PT_ESTATE,
                   "backward: trying to backward through the graph a second time (pass "
                   "retain_graph = true to the first backward)");
      goto done;
    }
    if (ctx->interrupted && *ctx->interrupted) {
      st = pt_fail(ctx, PT_EINTR, "interrupted");
      goto done;
    }
    for (int k = 0; k < PT_NODE_MAX_SAVED; k++) {
      pt_tensor *sv = n->saved[k];
      if (sv && atomic_load(&sv->storage->version) != n->saved_version[k]) {
        char shape[96];
        st = pt_fail(ctx, PT_ESTATE,
                     "%s: one of the variables needed for gradient computation has been modified "
                     "by an inplace operation (saved tensor %d of shape %s is at version %u; "
                     "expected version %u)",
                     n->name, k + 1, pt_shape_format(sv->ndim, sv->shape, shape, sizeof shape),
                     atomic_load(&sv->storage->version), n->saved_version[k]);
        goto done;
      }
    }
    pt_tensor *gin[PT_NODE_MAX_INPUTS] = {NULL};
    pt_tensor *gout = n->pending_grad;
    n->pending_grad = NULL;
    st = n->backward(ctx, n, gout, gin);
    pt_tensor_release(gout);
    if (st) {
      for (int i = 0; i < PT_NODE_MAX_INPUTS; i++) pt_tensor_release(gin[i]);
      pt_fail_prefix(ctx, n->name);
      goto done;
    }
    for (int i = 0; i < n->n_inputs && !st; i++) {
      pt_tensor *in = n->inputs[i];
      if (!gin[i] || !in || !n->needs_grad[i]) continue;
      pt_node *m = n->input_fn[i]; /* the history when n was recorded */
      if (m) {
        if (in->retains_grad) st = pt_accumulate_default(ctx, in, gin[i], NULL);
        if (!st) st = pend(ctx, m, gin[i]);
        if (!st && --m->pending_deps == 0) st = list_push(ctx, &ready, m);
      } else {
        st = accumulate_leaf(ctx, in, gin[i]);
      }
    }
    for (int i = 0; i < PT_NODE_MAX_INPUTS; i++) pt_tensor_release(gin[i]);
    if (st) goto done;
  }

done:
  for (size_t i = 0; i < all.n; i++) {
    pt_node *n = all.items[i];
    pt_tensor_release(n->pending_grad);
    n->pending_grad = NULL;
  }
  if (!retain_graph) release_saved(&all);
  pt_tensor_release(g0);
  pt_node_release(rootn);
  free(all.items);
  free(stack.items);
  free(ready.items);
  ctx->grad_enabled = was_enabled;
  return st;
}
