/* DataParallel's autograd glue (the Lua side is lua/partrain/data_parallel.lua).
 *
 * Each replica of a DataParallel call ran its forward on a dispatcher worker and recorded its own
 * graph (nodes are plain C objects, so any thread may traverse them). This file links those
 * graphs into the caller's graph so that one backward() in the caller runs every replica's
 * backward concurrently:
 *
 *   exposed tensors E (gathered outputs, or per-device pieces)
 *        | node "DataParallelGatherBackward"/"DataParallelPieceBackward": stores dL/dE in the
 *        v  call object (a side channel) and passes a 1-element zero on
 *   H (a 1-element bundle tensor)
 *        | node "DataParallelBackward" (R): splits the stored gradients per replica, runs
 *        v  pt_backward(root_i, g_i) for all replicas at once (pt_parallel_for), each with its
 *           own pt_ctx whose accumulate hook collects leaf gradients into per-replica buffers,
 *           then adds the buffers into the leaves in replica order through the CALLER's
 *           ctx->accumulate (so an outer redirect still works; deterministic), and returns the
 *           gradients of the scattered inputs (assembled from the chunk leaves) to the engine.
 *   the original inputs that require grad (R's engine inputs; more than 4 chain through
 *   1-element bundle tensors carrying "DataParallelInputsBackward" nodes)
 *
 * Replica graphs are not engine inputs of any node: the engine never walks them itself. They are
 * run with retain_graph (so an outer retain_graph keeps working) and freed when R's saved data
 * is freed (after a backward without retain_graph, or when the outputs are collected).
 * A replica's root is its single output that requires grad, or the flat concatenation of all of
 * them (made by the replica, in canonical position order) when it has several. */
#ifndef PT_DATA_PARALLEL_H
#define PT_DATA_PARALLEL_H

#include "autograd.h"

typedef struct pt_dp_call pt_dp_call;

/* A scattered input: orig (requires grad) and the leaf each replica saw in its place.
 * starts == NULL: leaf i stands for the whole of orig (inputs_are_scattered); otherwise leaf i
 * is orig's slice [starts[i], starts[i] + leaf->shape[dim]) along dim (0-based). */
typedef struct pt_dp_input {
  pt_tensor *orig;
  pt_tensor **leaves; /* k entries, NULL where replica i has none */
  const int64_t *starts;
  int dim;
} pt_dp_input;

/* A call of k replicas. roots[i]: replica i's root (NULL when it has no output that requires
 * grad); devices[i] names replica i in messages ("cpu:2"). Inputs are copied (references
 * retained). When grad mode is on and some root exists, the nodes are created now. */
pt_status pt_dp_call_new(pt_ctx *ctx, int k, pt_tensor *const *roots, const char *const *devices,
                         int n_inputs, const pt_dp_input *inputs, pt_dp_call **out);

/* The next output position (canonical order, the order of the replicas' flat roots):
 * pieces[i] is replica i's tensor. Gathered: *out = the pieces joined along dim (0-based; 0-d
 * pieces are stacked into a vector), with a node when a piece requires grad. name names the
 * position in messages. */
pt_status pt_dp_gather(pt_ctx *ctx, pt_dp_call *call, pt_tensor *const *pieces, int dim,
                       const char *name, pt_tensor **out);
/* Per-device: outs[i] shares pieces[i]'s data and carries its own node. */
pt_status pt_dp_pieces(pt_ctx *ctx, pt_dp_call *call, pt_tensor *const *pieces, pt_tensor **outs);

/* Drop the creator's reference (the nodes keep theirs). NULL is fine. */
void pt_dp_call_release(pt_dp_call *call);

#endif
