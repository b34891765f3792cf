/* Reverse-mode autograd engine.
 * An op that produces `out` from inputs calls pt_autograd_record(): when grad mode is on and an
 * input requires grad, a node is attached to out->grad_fn holding references to the inputs and
 * whatever the op saved. backward() walks nodes in reverse topological order; each node's
 * backward function turns the gradient of its output into gradients of its inputs (already
 * reduced to each input's shape). Leaf gradients go through ctx->accumulate. */
#ifndef PT_AUTOGRAD_H
#define PT_AUTOGRAD_H

#include "tensor.h"

#define PT_NODE_MAX_INPUTS 4
#define PT_NODE_MAX_SAVED 4

typedef struct pt_node pt_node;

/* grad_in[k] receives a new reference (or NULL when input k needs no gradient).
 * needs_grad[k] tells which inputs need one. */
typedef pt_status (*pt_backward_fn)(pt_ctx *ctx, pt_node *node, pt_tensor *grad_out,
                                    pt_tensor **grad_in);

struct pt_node {
  atomic_int refcount;
  const char *name;                         /* "AddBackward", shown by t.grad_fn */
  pt_backward_fn backward;
  int n_inputs;
  pt_tensor *inputs[PT_NODE_MAX_INPUTS];    /* retained */
  /* each input's grad_fn when this node was recorded (retained; NULL for leaves): the edge the
   * backward follows, so that an in-place op giving an input a new history later does not
   * change what this node's output was computed from */
  struct pt_node *input_fn[PT_NODE_MAX_INPUTS];
  bool needs_grad[PT_NODE_MAX_INPUTS];
  pt_tensor *saved[PT_NODE_MAX_SAVED];      /* retained, op-specific: set with pt_node_save */
  unsigned saved_version[PT_NODE_MAX_SAVED]; /* their storages' versions when saved */
  double scalars[4];                        /* op-specific */
  int64_t ints[PT_MAX_DIMS * 2];            /* op-specific (dims, shapes) */
  int n_ints;
  /* shape/dtype of the output, to make zero gradients and check shapes */
  int out_ndim;
  int64_t out_shape[PT_MAX_DIMS];
  pt_dtype out_dtype;
  void *extra;                              /* op-specific heap data */
  void (*free_extra)(void *extra);
  bool released;                            /* saved tensors freed after backward */
  uint64_t tag;                             /* ctx->graph_tag when recorded (pt_graph_release_tagged) */
  bool is_view;                             /* the output shares its input's storage (view ops) */
  /* backward records its own graph when grad mode is on (an autograd.Function's Lua backward):
   * a create_graph pass runs it as its formula */
  bool backward_differentiable;
  /* narrow/select (lib/ops_shape.c; ints: dim, start or index, length or -1, the input's shape):
   * the engine adds the gradient straight into that slice of the input's pending gradient
   * instead of running backward, which would make a zero tensor of the input's size per slice
   * (an RNN's time steps: quadratic in the sequence length) */
  bool slice_grad;
  unsigned view_version;                    /* is_view: that storage's version when recorded */
  struct pt_node *release_next;             /* pt_node_release's queue of nodes being freed */
  /* tensor hooks are registered on the output (t:register_hook on a non-leaf): the engine asks
   * pt_backward_opts.hooks to run them on the output's whole gradient before this node runs */
  bool has_hooks;
  /* engine bookkeeping during one backward pass (single thread) */
  pt_tensor *pending_grad;
  int pending_deps;
  unsigned visit_mark;
  int topo_deps;            /* autograd.grad's pruning: consumers not yet ordered */
  unsigned char pass_flags; /* what the pass does with the node (autograd.c) */
  /* borrowed: the tensor with retains_grad whose history this node is (t:retain_grad() sets it,
   * the tensor clears it when it dies or gets a new history) */
  pt_tensor *retain_target;
  pt_tensor *captured;      /* autograd.grad: the gradient of the output, when asked for */
};

/* Does any of these inputs need a gradient under the current grad mode? */
bool pt_autograd_needed(const pt_ctx *ctx, int n, pt_tensor *const *inputs);

/* Create a node for `out` if needed. On success *node_out is the new node (owned by out) or
 * NULL when no graph is recorded; the op then fills saved/scalars/ints. */
pt_status pt_autograd_record(pt_ctx *ctx, pt_tensor *out, const char *name, pt_backward_fn backward,
                             int n_inputs, pt_tensor *const *inputs, pt_node **node_out);

/* A process-wide unique graph tag (never 0), for ctx->graph_tag. */
uint64_t pt_graph_tag_new(void);

/* Frees the saved data of root and of every node it reaches through nodes carrying root's tag
 * (nonzero), and marks them released, as a backward without retain_graph does: for a graph
 * recorded under a tag whose outputs may still be referenced (DataParallel's replicas, whose
 * Lua handles live until a collector runs) once nothing can run backward through it. Nodes with
 * another tag (a graph the tagged one was built on) are left alone. */
void pt_graph_release_tagged(pt_node *root);

pt_node *pt_node_retain(pt_node *n);
void pt_node_release(pt_node *n);

/* root.backward(grad): grad may be NULL for a one-element root (then 1). */
pt_status pt_backward(pt_ctx *ctx, pt_tensor *root, pt_tensor *grad, bool retain_graph);

/* Tensor hooks (t:register_hook): run(ctx, data, node, leaf, &grad) runs the hooks of a
 * non-leaf (node: its grad_fn, which has has_hooks set; leaf NULL) or of a leaf (node NULL) on
 * the whole gradient of that tensor, once per pass; it may replace *grad (releasing the old
 * reference). A leaf's hooks run before the gradient is accumulated; leaves lists the leaves
 * that have hooks (any order, duplicates allowed). */
typedef struct pt_grad_hooks {
  pt_status (*run)(pt_ctx *ctx, void *data, pt_node *node, pt_tensor *leaf, pt_tensor **grad);
  void *data;
  int n_leaves;
  pt_tensor *const *leaves;
} pt_grad_hooks;

typedef struct pt_backward_opts {
  const char *fname;  /* the messages' prefix; NULL: "backward" */
  bool retain_graph;  /* keep the saved tensors for another pass */
  /* record the backward pass itself (grad mode on, every node through a differentiable formula
   * built from the public ops), so that the gradients can be differentiated again; a node with
   * no such formula fails the call before anything runs: "<fname>: create_graph is not supported
   * through LinearBackward"; leaf gradients are then accumulated out of place, with history */
  bool create_graph;
  const pt_grad_hooks *hooks; /* NULL: no tensor hooks run */
  /* autograd.grad: when n_inputs > 0, only what leads to these tensors runs, no .grad of a leaf
   * changes, and grads_out[i] receives the gradient of inputs[i] (a new reference; NULL when the
   * outputs do not depend on it). Every input must require grad. */
  int n_inputs;
  pt_tensor *const *inputs;
  pt_tensor **grads_out;
  /* backward's `inputs`: the same pruned pass, but each input's gradient goes into its .grad as
   * a backward would put it there (its hooks run first, a leaf's through ctx->accumulate) and
   * grads_out stays NULL (may be NULL) */
  bool accumulate_inputs;
} pt_backward_opts;

/* Backward from several roots at once (their gradients summed where graphs meet); grads[i] may be
 * NULL for a one-element root (then 1), grads itself may be NULL. */
pt_status pt_backward_ex(pt_ctx *ctx, int n_roots, pt_tensor *const *roots, pt_tensor *const *grads,
                         const pt_backward_opts *opts);

/* out = a view of all of t (same storage, shape and strides) whose node (`name`) passes the
 * gradient through unchanged: a tensor of its own whose gradient hooks see only what flows
 * through it (Module backward hooks wrap a module's inputs and outputs this way). Without a
 * graph to record, out is a plain alias. */
pt_status pt_autograd_identity(pt_ctx *ctx, pt_tensor *t, const char *name, pt_tensor **out);

/* Fails with "backward: gradient of shape {..} does not match shape {..}" (grad vs target):
 * the one message every accumulation hook gives for a gradient of the wrong size. */
pt_status pt_grad_shape_error(pt_ctx *ctx, const pt_tensor *grad, const pt_tensor *target);

/* The default accumulation: leaf->grad += grad (allocating it on first use). */
pt_status pt_accumulate_default(pt_ctx *ctx, pt_tensor *leaf, pt_tensor *grad, void *userdata);

/* Reduce a broadcast gradient back to (ndim, shape): sums over broadcast dims. New reference. */
pt_status pt_sum_to_shape(pt_ctx *ctx, pt_tensor *g, int ndim, const int64_t *shape, pt_tensor **out);

/* Detach: a new tensor sharing storage, with no grad_fn and requires_grad false. */
pt_status pt_detach(pt_ctx *ctx, pt_tensor *t, pt_tensor **out);
/* An alias of t (its storage and geometry, no base) that carries history as its grad_fn and t's
 * requires_grad: what stands for t as it is now in a graph recorded later */
pt_status pt_autograd_alias(pt_ctx *ctx, pt_tensor *t, pt_node *history, pt_tensor **out);

/* --- direct leaf-gradient targets ---
 * A backward that can write a leaf's gradient in place (Linear's dW = g^T x, db = sum g) asks
 * pt_autograd_grad_target() for the tensor to write into instead of returning grad_in: a
 * contiguous tensor (borrowed) of the leaf's dtype and shape; when *fresh is set its contents
 * are undefined and the backward must overwrite every element (beta = 0), otherwise it adds.
 * The backward bumps the target's version after writing. NULL means "no target": use the general
 * path (grad_in). Under the default accumulation the target is leaf->grad (created when missing,
 * as pt_accumulate_default would). An accumulation hook offers targets by setting
 * ctx->accumulate = pt_accumulate_redirect and ctx->accumulate_data to a pt_grad_redirect,
 * whose accumulate() receives the gradients that did not go through a target. */
typedef struct pt_grad_redirect {
  pt_accumulate_fn accumulate; /* required */
  /* optional: the buffer for leaf's gradient, or NULL for the general path */
  pt_tensor *(*target)(pt_ctx *ctx, pt_tensor *leaf, bool *fresh, void *userdata);
  /* optional: take the gradient of a 2-D leaf (rows x cols) as the outer product g x^T, with g
   * (rows) and x (cols) in leaf's dtype, copied by the callee; false: use a target or grad_in.
   * A batch-1 Linear's weight gradient is such a product, and keeping the factors saves the
   * dispatcher writing, reading and zeroing a dense buffer per sample. */
  bool (*rank1)(pt_ctx *ctx, pt_tensor *leaf, const void *g, const void *x, void *userdata);
  void *userdata;
} pt_grad_redirect;

/* ctx->accumulate for a pt_grad_redirect in ctx->accumulate_data */
pt_status pt_accumulate_redirect(pt_ctx *ctx, pt_tensor *leaf, pt_tensor *grad, void *redirect);

/* node->saved[k] = t, taking over the reference (NULL is fine), with t's version: the engine
 * refuses to run the node's backward once the tensor was modified in place (through any view).
 * A tensor others hold is kept as an alias of it as it is now (see node_hold in autograd.c). */
void pt_node_save(pt_node *node, int k, pt_tensor *t);

pt_tensor *pt_autograd_grad_target(pt_ctx *ctx, pt_tensor *leaf, bool *fresh);
/* Offer leaf's gradient as g x^T (see pt_grad_redirect.rank1): true when it was taken. */
bool pt_autograd_grad_rank1(pt_ctx *ctx, pt_tensor *leaf, const void *g, const void *x);

#endif
