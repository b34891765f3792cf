/* The parallel dispatcher's C side: a pool of worker threads each owning a lua_State with
 * partrain loaded, tasks that carry transferred values (host/transfer.c), per-worker gradient
 * buffers reduced in a fixed order, interrupts.
 *
 * Lua API (internal; the public wrappers are in lua/partrain/par.lua and runner.lua):
 *   pt._Pool(n)                      a dedicated pool of n workers (closed by :close() or GC)
 *     pool:submit(worker, fn, ...)   queue fn(...) on worker (1..n, 0 = any); returns a task id;
 *                                    blocks while 4 tasks per worker are outstanding
 *     pool:next()                    wait for one completion: id, worker, true, results...
 *                                    or id, worker, false, message, traceback
 *     pool:pending(), pool:size(), pool:close()
 *   pt._pool_map(fn, arglists, {n_workers=})   on the shared pool; see par.lua
 *   pt._par_windows(model, fn, get, windows, n, after_window, refresh_model)   see par.lua;
 *                                    sample 1 of each window runs on an extra worker state driven
 *                                    by the caller's own thread (the "inline" worker), samples
 *                                    2..n on pool workers 2..n
 *   pt.ActionError                   metatable of the error values of _pool_map
 *   pt.Runner{...}                   forwards to require("partrain.runner").new
 *   pt._par_test_sigint(seconds)     (tests) raise SIGINT in this process after a delay */
#include <lauxlib.h>
#include <lualib.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lib/conv.h"
#include "../lib/dispatch.h"
#include "../lib/nn.h"
#include "../lib/optim.h"
#include "../lib/parallel.h"
#include "../lib/pool.h"
#include "lpt.h"
#include "state.h"
#include "transfer.h"


#define POOL_MT "partrain.Pool"
#define SHARED_POOL_KEY "partrain.par.shared_pool"
#define ACTION_ERROR_KEY "partrain.ActionError"
#define WORKER_KEY "partrain.par.worker"
#define FN_KEY "partrain.par.fn"
#define MODEL_KEY "partrain.par.model"
#define DATA_KEY "partrain.par.dataset"
#define HOOK_COUNT 1000
#define PAR_MAX_SLOTS 256 /* pool_new's limit on workers */
_Static_assert(PAR_MAX_SLOTS <= PT_SGD_RANK_MAX, "a window's terms must fit pt_optim_sgd_rank_rows");

/* ------------------------------------------------------------------ worker side --- */

typedef struct grad_entry {
  pt_tensor *param; /* retained */
  pt_tensor *buf;   /* this worker's gradient of param, valid when gen matches */
  unsigned gen;
  /* or, when factored, the gradient is fac[0..rows) (g) times fac[rows..rows+cols) (x)^T:
   * a batch-1 Linear's weight in a window with a fused step (pt_grad_redirect.rank1) */
  bool factored;
  void *fac;
  size_t fac_bytes;
} grad_entry;

typedef struct lpar_pool lpar_pool;

/* One update of batch norm's running statistics, deferred (pt_ctx.running_defer): the tensors
 * (retained), num_batches_tracked (or NULL) and whether the momentum is its inverse
 * (momentum=nil: a cumulative average), and the batch's mean then unbiased variance. */
typedef struct bn_update {
  pt_tensor *rmean, *rvar, *nbt;
  bool cumulative;
  double momentum;
  int64_t C;
  double *v; /* 2 C values */
} bn_update;

typedef struct par_worker {
  lpar_pool *owner;
  int index; /* 1-based */
  lua_State *L;
  grad_entry *g;
  int ng, gcap, last;
  unsigned gen;
  volatile sig_atomic_t *intr; /* the inline worker: the caller's interrupt flag */
  uint64_t call_id;   /* call whose function is stored at FN_KEY */
  uint64_t model_gen; /* model stored at MODEL_KEY */
  uint64_t data_gen;  /* par_by_sample call whose dataset is stored at DATA_KEY */
  pt_grad_redirect redirect; /* ctx->accumulate_data while it runs a sample of slot > 0 */
  struct par_window *step_win; /* the window being run when it has a fused step, else NULL */
  int slot;                    /* its slot in the window being run */
  const struct par_task *task; /* the task it runs while its gradients are redirected */
  uint64_t rep_gen;            /* the replica set the model at MODEL_KEY was decoded with, or 0 */
  int coop_next;               /* its next round of cooperative products in this window */
  long coop_full, coop_alone;  /* its products made in a full round, alone (pt._par_coop_stats) */
  /* its waits for the other slot's block in first rounds of 2 slots, and how many (the
   * caller reads them while the worker may run a window submitted ahead) */
  atomic_long split_wait_ns, split_rounds;
  /* the running-statistic updates of the sample it runs in a window, applied in sample order
   * by slot 0 once every sample is done (window_apply_stats); workers running at once would
   * otherwise update the shared buffers in whatever order they come */
  bn_update *bn;
  int nbn, bncap;
  pt_tensor *bn_nbt;  /* num_batches_tracked nn's BatchNorm named for its next update */
  bool bn_cumulative; /* and its momentum is nil */
} par_worker;

enum { TASK_CALL = 0, TASK_ITEM = 1 };

typedef struct par_window par_window;

typedef struct par_task {
  pt_pool_task base;
  par_window *win; /* par_by_sample: the window this sample belongs to */
  int slot;        /* 0-based position in the window (= worker) */
  int kind;
  uint64_t id;
  int index;       /* item or sample index, 1-based */
  uint64_t call_id;
  lpt_msg *call;   /* [fn] shared by the items of one call (TASK_ITEM) */
  lpt_msg *model;  /* [model] appended as the last argument (par_by_sample) */
  uint64_t model_gen;
  uint64_t rep_gen; /* decode the model with the slot's parameter replicas (par_replicas.gen) */
  lpt_msg *args;   /* TASK_CALL: [fn, args...]; TASK_ITEM: [args...] */
  bool inline_arg; /* par_by_sample's slot 0: its sample waits in its state (inline_sample_key) */
  lpt_msg *data;   /* par_by_sample read_in_workers: [dataset], whose get(index) is the sample */
  uint64_t data_gen;
  bool grads;      /* collect leaf gradients into the worker's buffers */
  bool all_results;
  /* the worker's generator starts the item or sample at seed: a draw of the caller's generator
   * per call plus the index, so random ops in workers replay with pt.manual_seed and do not
   * depend on which worker runs what */
  bool seeded;
  uint64_t seed;
  /* out */
  bool ok;
  lpt_msg *result; /* ok: results; else: message, traceback */
  /* ok and result NULL: par_by_sample's one result, a tensor (retained), handed over as it is
   * rather than through a message (two per window on the caller's thread) */
  struct pt_tensor *result_tensor;
  bool collected;  /* par_by_sample: its completion came back to the caller */
  struct par_task *next_free;
} par_task;

/* par_by_sample's parameter replicas, for a fused step on 2+ workers: the worker of slot j > 0
 * runs its samples on its own copy of every stepped parameter and applies the whole step to it,
 * as slot 0 does to the parameter itself, with the same operations on the same inputs in the
 * same order, so every copy stays bitwise equal to the parameter. No worker then reads memory
 * that another core has just written: with one shared copy stepped slice by slice, each
 * worker's next forward re-fetched the slices the others had stepped, and 2 workers ran barely
 * faster than 1 (a 784x256 layer, 1 MB of L2 per core). */
#define PAR_REPLICA_BYTES ((size_t)64 << 20) /* per worker; larger models step slice by slice */
typedef struct par_replicas {
  int n, slots;        /* parameters; slots of the calls they serve (rows 1..slots-1) */
  pt_tensor **t;       /* [j * n + i]: slot j's copy of parameter i; row 0: the parameters (all retained) */
  pt_tensor **mom;     /* [j * n + i]: slot j's copy of parameter i's momentum buffer (or NULL); row 0 unused */
  unsigned *version;   /* [i]: the parameter's storage version when the copies last equalled it */
  pt_tensor **mom_src; /* [i]: the momentum buffer the copies last equalled (compared by identity only) */
  unsigned *mom_version;
  bool stale;          /* a window may have stepped some copies and not others: copy again */
  uint64_t gen;        /* changes with the set (the workers decode the model again); 0: none */
} par_replicas;

struct lpar_pool {
  pt_pool *pool;
  int n;
  par_worker *w;
  char *path, *cpath;
  uint64_t next_id, next_call;
  /* par_by_sample's model cache */
  int model_ref;
  lpt_msg *model_msg;
  uint64_t model_gen;
  bool closed;
  par_window *win; /* [2]: par_by_sample's windows alternate, one may be submitted ahead */
  par_worker *inl; /* par_by_sample's slot 1: a state driven by the caller's own thread */
  par_replicas rep;
  uint64_t rep_next_gen;
  long windows_ahead; /* par_by_sample windows whose worker tasks were submitted ahead */
  /* split_adapt's state: the shift of 2-slot windows' float32 row blocks (part_row) and the
   * workers' counters at its last look */
  int split_shift;
  long split_seen_wait[2], split_seen_rounds[2];
  /* par_by_sample's windows run on it: the caller's own code meanwhile (dataset:get,
   * after_window) cannot start parallel work on it (shared_pool raises) */
  bool busy;
  pid_t pid; /* the process whose threads these are: a forked child (process target) has none */
  uint64_t seed_base; /* par_by_sample's current call: its samples' seeds (par_task.seed) */
};

/* pt._par_partition(false): large weights are copied per worker as small ones (A/B timings) */
static atomic_bool partition_off;
/* pt._par_pipeline(false): par_by_sample submits a window's tasks only once the window before
 * has been collected (A/B timings) */
static atomic_bool pipeline_off;


/* registry[&inline_sample_key] of the inline worker's state: slot 0's sample, copied there by
 * read_sample_to rather than sent in a message */
static const char inline_sample_key = 0;

static void free_task(par_task *t) {
  if (!t) return;
  lpt_msg_release(t->call);
  lpt_msg_release(t->model);
  lpt_msg_release(t->args);
  lpt_msg_release(t->data);
  lpt_msg_release(t->result);
  pt_tensor_release(t->result_tensor);
  free(t);
}

static void discard_task(pt_pool_task *t) { free_task((par_task *)t); }

static par_worker *worker_of(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, WORKER_KEY);
  par_worker *w = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return w;
}

static void cancel_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  par_worker *w = worker_of(L);
  if (w && ((w->intr && *w->intr) || pt_pool_cancelled(w->owner->pool)))
    luaL_error(L, "interrupted");
}

/* This worker's entry for leaf (created when missing), or NULL when out of memory. */
static grad_entry *entry_of(pt_ctx *ctx, par_worker *w, pt_tensor *leaf) {
  if (w->last < w->ng && w->g[w->last].param == leaf) return &w->g[w->last];
  for (int i = 0; i < w->ng; i++)
    if (w->g[i].param == leaf) {
      w->last = i;
      return &w->g[i];
    }
  if (w->ng == w->gcap) {
    int cap = w->gcap ? w->gcap * 2 : 16;
    grad_entry *g = realloc(w->g, (size_t)cap * sizeof *g);
    if (!g) {
      pt_fail(ctx, PT_ENOMEM, "backward: out of memory for gradient buffers");
      return NULL;
    }
    w->g = g;
    w->gcap = cap;
  }
  grad_entry *e = &w->g[w->ng];
  w->last = w->ng++;
  e->param = pt_tensor_retain(leaf);
  e->buf = NULL;
  e->gen = 0;
  e->factored = false;
  e->fac = NULL;
  e->fac_bytes = 0;
  return e;
}

/* Make e->buf a persistent buffer for this window (contents undefined). Keeping the engine's
 * fresh gradients instead would make the allocator return and re-fault ~1 MB per sample. */
static pt_status entry_claim(pt_ctx *ctx, par_worker *w, grad_entry *e, pt_tensor *leaf) {
  if (e->buf && (atomic_load(&e->buf->refcount) != 1 || !pt_tensor_is_contiguous(e->buf) ||
                 e->buf->dtype != leaf->dtype || e->buf->ndim != leaf->ndim ||
                 memcmp(e->buf->shape, leaf->shape, (size_t)leaf->ndim * sizeof(int64_t)) != 0)) {
    pt_tensor_release(e->buf);
    e->buf = NULL;
  }
  if (!e->buf) {
    pt_status st = pt_tensor_empty(ctx, leaf->dtype, leaf->ndim, leaf->shape, &e->buf);
    if (st) {
      e->buf = NULL;
      return st;
    }
  }
  e->gen = w->gen;
  e->factored = false;
  return PT_OK;
}

/* buf = the factored gradient g x^T (a second gradient of the same leaf arrived). */
static pt_status entry_unfactor(pt_ctx *ctx, par_worker *w, grad_entry *e, pt_tensor *leaf) {
  int64_t rows = leaf->shape[0], cols = leaf->shape[1];
  pt_status st = entry_claim(ctx, w, e, leaf);
  if (st) return st;
  PT_DISPATCH_FLOAT(leaf->dtype, {
    const T *g = e->fac, *x = (const T *)e->fac + rows;
    T *d = pt_tensor_data(e->buf);
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 0; c < cols; c++) d[r * cols + c] = g[r] * x[c];
  });
  return PT_OK;
}

static bool plan_has(const par_window *W, int slot, const pt_tensor *t);

/* Whether leaf is the caller's: a parameter the window steps, or a tensor that came with the
 * model, the call or the sample. Its gradient goes to this worker's buffers and reaches .grad
 * summed in slot order after the window. A leaf the sample's own code made (an input it
 * differentiates: x = x:clone():requires_grad_()) is this worker's alone: its gradient goes
 * to its .grad at once, as in any backward (fn read nil there on workers 2..n). */
static bool leaf_shared(const par_worker *w, const pt_tensor *leaf) {
  const par_task *t = w->task;
  if (w->step_win && plan_has(w->step_win, w->slot, leaf)) return true;
  return !t || lpt_msg_has_tensor(t->model, leaf) || lpt_msg_has_tensor(t->call, leaf) ||
         lpt_msg_has_tensor(t->args, leaf);
}

/* The redirect's target: backward functions that can (Linear) write this worker's gradient
 * straight into its buffer: overwrite on the window's first gradient of leaf, add after. */
static pt_tensor *worker_target(pt_ctx *ctx, pt_tensor *leaf, bool *fresh, void *ud) {
  par_worker *w = ud;
  *fresh = false;
  if (!leaf_shared(w, leaf)) return NULL; /* the general path: worker_accumulate */
  grad_entry *e = entry_of(ctx, w, leaf);
  if (!e) return NULL;
  if (e->gen == w->gen && e->factored) {
    if (entry_unfactor(ctx, w, e, leaf)) return NULL;
  } else if (e->gen != w->gen || !e->buf) {
    if (entry_claim(ctx, w, e, leaf)) return NULL;
    *fresh = true;
  }
  return e->buf;
}

/* The redirect's accumulate: gradients that did not go through a target */
static pt_status worker_accumulate(pt_ctx *ctx, pt_tensor *leaf, pt_tensor *grad, void *ud) {
  par_worker *w = ud;
  if (pt_tensor_numel(grad) != pt_tensor_numel(leaf)) return pt_grad_shape_error(ctx, grad, leaf);
  if (!leaf_shared(w, leaf)) return pt_accumulate_default(ctx, leaf, grad, NULL);
  grad_entry *e = entry_of(ctx, w, leaf);
  if (!e) return PT_ENOMEM;
  if (e->gen == w->gen && e->factored) {
    pt_status st = entry_unfactor(ctx, w, e, leaf);
    if (st) return st;
  } else if (e->gen != w->gen || !e->buf) {
    pt_status st = entry_claim(ctx, w, e, leaf);
    if (st) return st;
    if ((st = pt_tensor_copy_into(ctx, e->buf, grad))) {
      e->gen = 0;
      return st;
    }
    return PT_OK;
  }
  pt_tensor_add_raw(e->buf, grad);
  atomic_fetch_add(&e->buf->storage->version, 1);
  return PT_OK;
}

static void clear_grads(par_worker *w) {
  for (int i = 0; i < w->ng; i++) {
    pt_tensor_release(w->g[i].param);
    pt_tensor_release(w->g[i].buf);
    free(w->g[i].fac);
  }
  w->ng = 0;
  w->last = 0;
}

static void clear_stats(par_worker *w) {
  for (int i = 0; i < w->nbn; i++) {
    bn_update *u = &w->bn[i];
    pt_tensor_release(u->rmean);
    pt_tensor_release(u->rvar);
    pt_tensor_release(u->nbt);
    free(u->v);
  }
  w->nbn = 0;
  pt_tensor_release(w->bn_nbt);
  w->bn_nbt = NULL;
}

/* pt_ctx.running_defer while a worker runs a sample of a window: the update is kept. */
static pt_status worker_defer_stats(void *data, pt_tensor *rmean, pt_tensor *rvar, const double *mean,
                                    const double *var, int64_t C, double momentum) {
  par_worker *w = data;
  pt_ctx *ctx = lpt_ctx(w->L);
  if (w->nbn == w->bncap) {
    int cap = w->bncap ? 2 * w->bncap : 8;
    bn_update *grown = realloc(w->bn, (size_t)cap * sizeof *grown);
    if (!grown) return pt_fail(ctx, PT_ENOMEM, "batch_norm: out of memory");
    w->bn = grown;
    w->bncap = cap;
  }
  double *v = malloc(2 * (size_t)C * sizeof *v);
  if (!v) return pt_fail(ctx, PT_ENOMEM, "batch_norm: out of memory");
  memcpy(v, mean, (size_t)C * sizeof *v);
  memcpy(v + C, var, (size_t)C * sizeof *v);
  w->bn[w->nbn++] = (bn_update){rmean ? pt_tensor_retain(rmean) : NULL, rvar ? pt_tensor_retain(rvar) : NULL,
                                w->bn_nbt, w->bn_cumulative, momentum, C, v};
  w->bn_nbt = NULL; /* moved into the update */
  w->bn_cumulative = false;
  return PT_OK;
}

static int worker_msgh(lua_State *L) {
  const char *msg = lpt_error_text(L, 1);
  lua_createtable(L, 2, 0);
  lua_pushstring(L, msg);
  lua_rawseti(L, -2, 1);
  luaL_traceback(L, L, NULL, 1);
  lua_rawseti(L, -2, 2);
  return 1;
}

/* The message and traceback (*tb, "" when none) of a pcall that failed with worker_msgh as its
 * handler: its pair, or the error itself (a memory error or an error in the handler skip it, and
 * are strings). Pushes what the pointers point into. */
static const char *msgh_error(lua_State *L, const char **tb) {
  *tb = "";
  if (lua_istable(L, -1)) {
    lua_rawgeti(L, -1, 2);
    lua_rawgeti(L, -2, 1);
    if (lua_tostring(L, -2)) *tb = lua_tostring(L, -2);
  }
  return lua_tostring(L, -1) ? lua_tostring(L, -1) : "(error)";
}

static lpt_msg *error_msg(lua_State *L, const char *message, const char *traceback) {
  lpt_msg *m = lpt_msg_new();
  if (!m) return NULL;
  lua_pushstring(L, message);
  lua_pushstring(L, traceback ? traceback : "");
  static const char *const names[] = {"message", "traceback"};
  if (lpt_encode(L, m, -2, 2, names, 0) != LUA_OK) {
    lua_pop(L, 1);
    lpt_msg_release(m);
    m = lpt_msg_string(message);
  }
  lua_pop(L, 2);
  return m;
}

/* A decode failure inside the worker becomes the task's error. */
static bool decode_into(lua_State *L, par_task *t, const lpt_msg *m, int *n, const char *what,
                        const lpt_tensor_subst *subst) {
  int st = lpt_decode_subst(L, m, n, subst);
  if (st == LUA_OK) return true;
  char buf[PT_ERRMSG_MAX];
  snprintf(buf, sizeof buf, "cannot receive %s: %s", what, lua_tostring(L, -1));
  lua_pop(L, 1);
  t->ok = false;
  t->result = error_msg(L, buf, NULL);
  return false;
}

/* --- the end of a par_by_sample window, inside the workers ---
 * Worker 1 (slot 0) accumulated straight into param.grad during its backward. The k workers of
 * a window meet at a barrier after their samples; the first one lists the parameters that got
 * gradients in slots 1..k-1 (allocating missing .grad), they meet again, and each worker adds
 * the buffers of slots 1..k-1, in that order, into its slice of every param.grad. Every element
 * sees the same additions in the same order whatever the slicing, so results are bitwise
 * reproducible, and the reduction runs on all cores without another round trip. */
/* par_by_sample's fused optimizer step (opts.step = an optim.SGD): after the reduction each
 * worker applies SGD to its own copy of every replicated parameter (par_replicas; slot 0 to the
 * parameter itself), or to its slice of the shared parameter when there are no copies, and
 * zeroes its slice of the gradient, so the step runs on all threads right where the gradients
 * are hot. Tensors are borrowed from the plan table on the caller's stack. */
typedef struct step_entry {
  pt_tensor *param, *buf;
  pt_sgd_opts o;
  bool first; /* the momentum buffer starts as the gradient */
  int rep;    /* its index in the pool's par_replicas (every slot steps all of it), or -1 */
  bool part;  /* a large weight shared by all slots, split by rows (coop_linear) */
  /* param.grad is known to be all zeros (this call zeroed it and its version has not moved
   * since): the step then reads only the workers' buffers */
  bool grad_zero;
  pt_tensor *zeroed;   /* the grad tensor this call zeroed (compared by identity only) */
  unsigned zeroed_version;
} step_entry;

/* A large weight (PAR_PART_BYTES and more) is not copied: every slot of a window uses the
 * parameter itself, and slot j alone reads and steps its block of rows (part_row). Its
 * batch-1 products meet in rounds: the m-th product of every slot's sample is round m, and
 * when all k slots reach it with the same weight, slot j multiplies its block by all k inputs
 * (coop_linear). A core then never reads rows that another core has just stepped (with one
 * shared copy read whole by every slot, each forward re-fetched the other core's rows and 2
 * workers ran barely faster than 1), and no core pays for stepping a whole copy either. A round
 * that cannot meet (a slot finished its sample without it, a different weight) is computed
 * alone over all rows: pt_nn_linear_rows gives every row the same numbers either way, so they
 * never depend on timing. A smaller weight is copied: its copy fits a core's L2 beside the
 * rest, and each round costs every slot two waits for the slowest peer (W8's 256x128 layer,
 * 128 KiB: three runs of 30 in-process rounds alternating 1 thread, 2 threads with a 64 KiB
 * threshold and 2 with this one gave medians of 1.837x, 1.768x, 1.824x of 1 thread copied
 * against 1.743x, 1.714x, 1.791x partitioned). */
#define PAR_PART_BYTES ((size_t)256 << 10)
#define PAR_COOP_ROUNDS 8
enum { COOP_OPEN = 0, COOP_FULL = 1, COOP_ALONE = 2 };
typedef struct coop_round {
  atomic_int arrived, state, done;
  /* slot j's product, written before it arrives: read by the others once the round is full */
  const pt_tensor *w[PAR_MAX_SLOTS];
  const void *x[PAR_MAX_SLOTS];
  void *y[PAR_MAX_SLOTS];
  bool beta[PAR_MAX_SLOTS];
} coop_round;

struct par_window {
  int k;
  step_entry *plan;
  int nplan;
  lpar_pool *pool;
  par_worker **slots; /* slot 0: the inline worker; slot j: pool worker j */
  par_replicas *rep;
  bool plan_has_grads; /* every planned parameter had its .grad when the window started */
  atomic_int arrived;
  atomic_uint phase;
  /* the last barrier's outcome, set by the slot that completed it before phase moves: false
   * when the window had failed or a slot had given up waiting (Ctrl-C) by then */
  atomic_bool passed;
  atomic_bool failed;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pt_tensor **params;
  int nparams, cap;
  bool coop; /* the plan has partitioned weights and k >= 2: slots meet in rounds */
  atomic_bool fn_done[PAR_MAX_SLOTS]; /* slot j is past its sample: its rounds are over */
  coop_round rounds[PAR_COOP_ROUNDS];
  /* Slots past window_reduce, over every window run in this struct (never reset: a task may
   * read it after the struct was set up again); this window's count starts at fin_base. */
  atomic_ullong fin_count;
  unsigned long long fin_base;
  /* Tasks submitted ahead (par_windows_impl) start once prev->fin_count reaches prev_target:
   * every slot of the window before is past its step (NULL: none to wait for). */
  struct par_window *prev;
  unsigned long long prev_target;
  int shift; /* the pool's split_shift when the window was set up */
  /* the caller's read of the next window's samples, run by slot 0 (the caller's thread) in the
   * window's first barrier (par_windows_impl), or NULL */
  struct ahead_job *chore;
};

static void ahead_job_run(struct ahead_job *a);

/* The first row of slot j's block of partitioned weight w in window W (j = k: all rows).
 * Blocks start at multiples of PT_LINEAR_ROWS_CHUNK (float64), where pt_nn_linear_rows gives
 * every row the numbers of the whole product, or of PAR_SPLIT_GRAIN (float32, whose products
 * give a row the same numbers wherever a block starts), so two slots never write the same
 * cache line of an output. For float32 the boundary of 2 slots moves by W->shift grains (up
 * to a quarter of the rows each way): slot 0 takes that many more rows (split_forced). */
#define PAR_SPLIT_GRAIN 16
#define PAR_SPLIT_CLIP_NS 20000u
/* The shift of 2 slots' blocks: 0 (even blocks) unless pt._par_partition(true, shift) fixes
 * another, or pt._par_partition(true, "adapt") has split_adapt move it (SPLIT_ADAPT). Even
 * blocks are the default: once the caller read the next samples in its barrier (ahead_job),
 * in-process runs alternating the two (30 rounds, 3 times, order balanced) gave even blocks
 * 1.010-1.012x the samples/s of the adapted boundary. */
#define SPLIT_ADAPT (-1000)
static atomic_int split_forced = 0;
static int64_t part_row(const par_window *W, const pt_tensor *w, int j) {
  int64_t rows = w->shape[0];
  int k = W->k;
  if (j >= k) return rows;
  int64_t grain = w->dtype == PT_FLOAT32 ? PAR_SPLIT_GRAIN : PT_LINEAR_ROWS_CHUNK;
  int64_t r = rows * j / k / grain * grain;
  if (k == 2 && j == 1 && W->shift && w->dtype == PT_FLOAT32) {
    int64_t lo = (rows / 4 + PAR_SPLIT_GRAIN - 1) / PAR_SPLIT_GRAIN * PAR_SPLIT_GRAIN;
    r += (int64_t)W->shift * PAR_SPLIT_GRAIN;
    if (r < lo) r = lo;
    if (r > rows - lo) r = (rows - lo) / PAR_SPLIT_GRAIN * PAR_SPLIT_GRAIN;
  }
  return r;
}

static bool plan_part(const par_window *W, const pt_tensor *w) {
  for (int i = 0; i < W->nplan; i++)
    if (W->plan[i].part && W->plan[i].param == w) return true;
  return false;
}

/* One turn of waiting for the other slots of a window (a round, a barrier): spin (peers usually
 * come within microseconds), yielding now and then; past WAIT_SPINS turns (~100 us: a peer's
 * sample runs long Lua code) sleep 20 us a turn instead of burning the core. */
#define WAIT_SPINS 3000
static void wait_turn(int spin) {
  if (spin > WAIT_SPINS) {
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
    return;
  }
  pt_cpu_relax();
  if ((spin & 127) == 0) sched_yield(); /* a peer sharing this core (a busy machine) may run */
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* pt_linear_coop_fn for the worker running a sample of a window (see PAR_PART_BYTES). */
static bool coop_linear(void *ud, const pt_tensor *w, const void *x, void *y, bool beta) {
  par_worker *self = ud;
  par_window *W = self->step_win;
  if (!W || !W->coop || !plan_part(W, w)) return false;
  int k = W->k, j = self->slot;
  int64_t rows = w->shape[0];
  int r = self->coop_next++;
  coop_round *R = r < PAR_COOP_ROUNDS ? &W->rounds[r] : NULL;
  bool alone = true;
  if (R) {
    R->w[j] = w;
    R->x[j] = x;
    R->y[j] = y;
    R->beta[j] = beta;
    if (atomic_fetch_add(&R->arrived, 1) + 1 == k) {
      int open = COOP_OPEN;
      atomic_compare_exchange_strong(&R->state, &open, COOP_FULL);
    }
    for (int spin = 1; atomic_load(&R->state) == COOP_OPEN; spin++) {
      if (self->intr && *self->intr) pt_pool_cancel(W->pool->pool); /* Ctrl-C: stop the others */
      bool gone = atomic_load(&W->failed) || pt_pool_cancelled(W->pool->pool);
      for (int i = 0; i < k && !gone; i++) gone = i != j && atomic_load(&W->fn_done[i]);
      if (gone) {
        int open = COOP_OPEN;
        atomic_compare_exchange_strong(&R->state, &open, COOP_ALONE);
        break;
      }
      wait_turn(spin);
    }
    alone = atomic_load(&R->state) != COOP_FULL;
    for (int i = 0; i < k && !alone; i++) alone = R->w[i] != w;
  }
  if (alone) {
    self->coop_alone++;
    pt_nn_linear_rows(w, 0, rows, &x, &y, &beta, 1);
    return true;
  }
  self->coop_full++;
  /* this slot's block of rows, for every slot's input */
  pt_nn_linear_rows(w, part_row(W, w, j), part_row(W, w, j + 1), R->x, R->y, R->beta, k);
  atomic_fetch_add(&R->done, 1);
  /* the first round's wait for the other blocks measures how the split fits the cores' speeds
   * (split_adapt, only when adapting: two clock reads a window otherwise wasted) */
  uint64_t t0 = r == 0 && k == 2 && atomic_load(&split_forced) == SPLIT_ADAPT ? now_ns() : 0;
  for (int spin = 1; atomic_load(&R->done) < k; spin++) wait_turn(spin); /* peers are in C: they finish */
  if (t0) {
    uint64_t waited = now_ns() - t0; /* clipped: a preempted peer says nothing of speeds */
    atomic_fetch_add_explicit(&self->split_wait_ns, (long)(waited < PAR_SPLIT_CLIP_NS ? waited : PAR_SPLIT_CLIP_NS),
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&self->split_rounds, 1, memory_order_relaxed);
  }
  return true;
}

/* The tensor the worker of slot j computes with for plan entry e: its copy, or the parameter. */
static pt_tensor *plan_param(const par_window *W, const step_entry *e, int slot) {
  return e->rep >= 0 && slot > 0 ? W->rep->t[slot * W->rep->n + e->rep] : e->param;
}

/* Whether t is what the worker of slot j steps for some plan entry (a copy or a parameter). */
static bool plan_has(const par_window *W, int slot, const pt_tensor *t) {
  for (int i = 0; i < W->nplan; i++)
    if (plan_param(W, &W->plan[i], slot) == t) return true;
  return false;
}

/* The parameter of which t is slot j's copy, or t itself. */
static pt_tensor *replica_origin(const par_window *W, int slot, pt_tensor *t) {
  for (int i = 0; i < W->nplan && slot > 0; i++)
    if (W->plan[i].rep >= 0 && plan_param(W, &W->plan[i], slot) == t) return W->plan[i].param;
  return t;
}

/* The redirect's rank1: the window's first gradient of a parameter the fused step updates is
 * kept as its two factors (copied: the graph may go before the window ends). */
static bool worker_rank1(pt_ctx *ctx, pt_tensor *leaf, const void *g, const void *x, void *ud) {
  par_worker *w = ud;
  par_window *W = w->step_win;
  if (!W || (leaf->dtype != PT_FLOAT32 && leaf->dtype != PT_FLOAT64)) return false;
  if (!plan_has(W, w->slot, leaf)) return false;
  grad_entry *e = entry_of(ctx, w, leaf);
  if (!e || e->gen == w->gen) return false; /* a second gradient: dense */
  size_t es = pt_dtype_size(leaf->dtype), rows = (size_t)leaf->shape[0], cols = (size_t)leaf->shape[1];
  size_t need = (rows + cols) * es;
  if (e->fac_bytes < need) {
    void *f = realloc(e->fac, need);
    if (!f) return false;
    e->fac = f;
    e->fac_bytes = need;
  }
  memcpy(e->fac, g, rows * es);
  memcpy((char *)e->fac + rows * es, x, cols * es);
  e->factored = true;
  e->gen = w->gen;
  return true;
}

/* The k slots of W meet. With chore (slot 0, the caller's thread), W's chore runs meanwhile:
 * while the others have not come (time it would spend waiting), else right after the others
 * were let go. True for every slot or for none: false when the window had failed, or a slot
 * gave up waiting (Ctrl-C, a cancelled pool), before the last one came. */
static bool win_barrier(par_window *W, par_worker *self, bool chore) {
  unsigned ph = atomic_load(&W->phase);
  if (atomic_fetch_add(&W->arrived, 1) + 1 == W->k) {
    atomic_store(&W->arrived, 0);
    pthread_mutex_lock(&W->mu);
    /* one outcome for every slot: a slot that gave up (failed, under mu) before the last one
     * came must not be the only one to skip what follows (half a partitioned weight stepped) */
    bool ok = !atomic_load(&W->failed);
    atomic_store(&W->passed, ok);
    atomic_fetch_add(&W->phase, 1);
    pthread_cond_broadcast(&W->cv);
    pthread_mutex_unlock(&W->mu);
    if (chore && W->chore) ahead_job_run(W->chore);
    return ok;
  }
  if (chore && W->chore) ahead_job_run(W->chore);
  /* peers usually arrive within microseconds: spin briefly (no system calls), then sleep */
  for (int spin = 1; spin <= WAIT_SPINS && atomic_load(&W->phase) == ph; spin++) wait_turn(spin);
  pthread_mutex_lock(&W->mu);
  while (atomic_load(&W->phase) == ph) {
    if (self->intr && *self->intr) /* Ctrl-C in the caller's thread: stop the others */
      pt_pool_cancel(W->pool->pool);
    if (pt_pool_cancelled(W->pool->pool)) { /* a peer may never come */
      atomic_store(&W->failed, true);
      pthread_mutex_unlock(&W->mu);
      return false;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_nsec -= 1000000000L;
      ts.tv_sec++;
    }
    pthread_cond_timedwait(&W->cv, &W->mu, &ts);
  }
  pthread_mutex_unlock(&W->mu);
  /* passed stays this barrier's until this slot comes to the next one */
  return atomic_load(&W->passed);
}

static void slice_add(pt_tensor *dst, const pt_tensor *src, int64_t lo, int64_t hi) {
  if (dst->dtype == PT_FLOAT32 && src->dtype == PT_FLOAT32 && pt_tensor_is_contiguous(dst) &&
      pt_tensor_is_contiguous(src)) {
    float *d = pt_tensor_data(dst);
    const float *sp = pt_tensor_data(src);
    for (int64_t i = lo; i < hi; i++) d[i] += sp[i];
  } else if (dst->dtype == PT_FLOAT64 && src->dtype == PT_FLOAT64 &&
             pt_tensor_is_contiguous(dst) && pt_tensor_is_contiguous(src)) {
    double *d = pt_tensor_data(dst);
    const double *sp = pt_tensor_data(src);
    for (int64_t i = lo; i < hi; i++) d[i] += sp[i];
  } else {
    for (int64_t i = lo; i < hi; i++)
      pt_tensor_set_flat(dst, i, pt_tensor_get_flat(dst, i) + pt_tensor_get_flat(src, i));
  }
}

static grad_entry *entry_for(par_worker *w, pt_tensor *param) {
  for (int i = 0; i < w->ng; i++)
    if (w->g[i].param == param)
      return w->g[i].gen == w->gen && (w->g[i].buf || w->g[i].factored) ? &w->g[i] : NULL;
  return NULL;
}

/* A gradient source of the fused step: a slot's dense buffer, or its factors g (rows) then x
 * (cols) when fac. */
typedef struct grad_src {
  const void *p;
  bool fac;
} grad_src;

/* out[0..m) = gradient elements b0..b0+m: grad0 (or 0 when NULL) + the sources in slot order,
 * factored ones as g[row] * x[col]: the additions of the unfused path (param.grad + each slot's
 * buffer), product by product, in the same order. This file is compiled with
 * -ffp-contract=off so that each product is rounded before its addition, as in a buffer. */
static void grad_block(pt_dtype dt, void *out, const char *grad0, const grad_src *src, int ns,
                       int64_t b0, int64_t m, int64_t cols, int64_t rows) {
  PT_DISPATCH_FLOAT(dt, {
    T *tp = out;
    if (grad0)
      memcpy(tp, grad0, (size_t)m * sizeof(T));
    else
      memset(tp, 0, (size_t)m * sizeof(T));
    for (int j = 0; j < ns; j++) {
      if (!src[j].fac) {
        const T *bp = (const T *)src[j].p + b0;
        for (int64_t i = 0; i < m; i++) tp[i] += bp[i];
        continue;
      }
      const T *g = src[j].p, *x = (const T *)src[j].p + rows;
      for (int64_t i = 0; i < m;) { /* row by row */
        int64_t f = b0 + i, r = f / cols, c = f % cols, len = cols - c;
        if (len > m - i) len = m - i;
        T gr = g[r];
        if (gr != 0)
          for (int64_t k = 0; k < len; k++) tp[i + k] += gr * x[c + k];
        i += len;
      }
    }
  });
}

/* After the first barrier every slot sees every slot's gradient entries. In the steady state
 * of a fused step (each parameter that got a gradient is planned and has its .grad) there is
 * nothing to list or allocate: every slot finds that alike and goes on without the listing and
 * the second barrier. */
static bool window_needs_list(const par_window *W) {
  if (W->nplan == 0 || !W->plan_has_grads) return true;
  for (int j = 0; j < W->k; j++) {
    const par_worker *w = W->slots[j];
    for (int i = 0; i < w->ng; i++) {
      const grad_entry *e = &w->g[i];
      if (e->gen != w->gen || (!e->buf && !e->factored)) continue;
      if (!plan_has(W, j, e->param)) return true;
    }
  }
  return false;
}

/* The other slots' gradient factors were written on other cores: ask for all of them at once,
 * before the step reads them row by row (one miss per 16 rows, each waiting for a line to come
 * from another core, was a tenth of a worker's time in W2). */
static void prefetch_factors(const par_window *W, int slot) {
  for (int q = 0; q < W->nplan; q++) {
    const step_entry *e = &W->plan[q];
    for (int j = 0; j < W->k; j++) {
      if (j == slot) continue;
      grad_entry *ge = entry_for(W->slots[j], plan_param(W, e, j));
      if (!ge || !ge->factored) continue;
      const pt_tensor *pa = e->param;
      size_t bytes = (size_t)(pa->shape[0] + pa->shape[1]) * pt_dtype_size(pa->dtype);
      for (size_t b = 0; b < bytes; b += 64) __builtin_prefetch((const char *)ge->fac + b, 0);
    }
  }
}

/* Slot 0, once every sample of W is done: the samples' running-statistic updates in sample
 * order (slot j ran the window's j-th sample), as a loop over the samples would make them. */
static void window_apply_stats(par_window *W) {
  for (int j = 0; j < W->k; j++) {
    par_worker *w = W->slots[j];
    for (int i = 0; i < w->nbn; i++) {
      bn_update *u = &w->bn[i];
      double mom = u->momentum;
      if (u->nbt) {
        double n = pt_tensor_get_flat(u->nbt, 0) + 1;
        pt_tensor_set_flat(u->nbt, 0, n);
        atomic_fetch_add(&u->nbt->storage->version, 1);
        if (u->cumulative) mom = 1.0 / n;
      }
      pt_batch_norm_update_running(u->rmean, u->v, u->C, mom);
      pt_batch_norm_update_running(u->rvar, u->v + u->C, u->C, mom);
      if (u->rmean) atomic_fetch_add(&u->rmean->storage->version, 1);
      if (u->rvar) atomic_fetch_add(&u->rvar->storage->version, 1);
    }
  }
}

static void window_reduce_slot(par_task *t, par_worker *self) {
  par_window *W = t->win;
  if (!t->ok) atomic_store(&W->failed, true);
  atomic_store(&W->fn_done[t->slot], true);
  if (!win_barrier(W, self, t->slot == 0)) return;
  if (t->slot == 0) window_apply_stats(W);
  if (W->nplan > 0 && !atomic_load(&W->failed)) prefetch_factors(W, t->slot);
  bool list = !atomic_load(&W->failed) && window_needs_list(W);
  if (list && t->slot == 0) {
    pt_ctx *ctx = lpt_ctx(self->L);
    W->nparams = 0;
    for (int j = 0; j < W->k && !atomic_load(&W->failed); j++) {
      par_worker *w = W->slots[j];
      for (int i = 0; i < w->ng; i++) {
        grad_entry *e = &w->g[i];
        if (e->gen != w->gen || (!e->buf && !e->factored)) continue;
        pt_tensor *param = replica_origin(W, j, e->param);
        bool have = false;
        for (int q = 0; q < W->nparams && !have; q++) have = W->params[q] == param;
        if (have) continue;
        if (W->nparams == W->cap) {
          int cap = W->cap ? 2 * W->cap : 16;
          pt_tensor **np = realloc(W->params, (size_t)cap * sizeof *np);
          if (!np) {
            atomic_store(&W->failed, true);
            break;
          }
          W->params = np;
          W->cap = cap;
        }
        if (!param->grad &&
            pt_tensor_zeros(ctx, param->dtype, param->ndim, param->shape, &param->grad)) {
          atomic_store(&W->failed, true);
          break;
        }
        W->params[W->nparams++] = param;
      }
    }
  }
  if ((list && !win_barrier(W, self, false)) || atomic_load(&W->failed)) return;
  int nlisted = list ? W->nparams : 0;
  for (int q = 0; q < nlisted; q++) {
    pt_tensor *param = W->params[q];
    if (plan_has(W, 0, param)) continue;
    int64_t n = pt_tensor_numel(param);
    int64_t lo = n * t->slot / W->k, hi = n * (t->slot + 1) / W->k;
    for (int j = 0; j < W->k; j++) {
      grad_entry *e = entry_for(W->slots[j], param);
      if (e && !e->factored) slice_add(param->grad, e->buf, lo, hi); /* factors: planned only */
    }
  }
  /* the fused step: this worker's slice of every parameter (elementwise, so slices are
   * independent; the caller sees them after collecting every completion). With a step every
   * slot (slot 0 too) filled its own buffers: the gradient of an element is
   * ((grad + buf_0) + buf_1) + ..., the order of the unfused path, summed block by block on
   * the stack; grad itself is read and zeroed only while it is not known to be zero. */
  /* A replicated parameter (e->rep >= 0) is stepped whole by every slot, each on its own copy
   * (slot 0: the parameter, with its momentum buffer); its gradient, when read, is zeroed only
   * after every slot has read it. */
  bool zero_after = false;
  for (int q = 0; q < W->nplan; q++) {
    step_entry *e = &W->plan[q];
    pt_tensor *grad = e->param->grad;
    if (!grad) continue; /* as opt:step(): no gradient, no update */
    bool whole = e->rep >= 0;
    pt_tensor *param = plan_param(W, e, t->slot);
    pt_tensor *mom = whole && t->slot > 0 ? W->rep->mom[t->slot * W->rep->n + e->rep] : e->buf;
    int64_t n = pt_tensor_numel(param);
    int64_t lo = whole ? 0 : n * t->slot / W->k, hi = whole ? n : n * (t->slot + 1) / W->k;
    if (e->part) { /* the block of rows this slot multiplied */
      int64_t prow = param->shape[0], pcols = n / prow;
      lo = part_row(W, param, t->slot) * pcols;
      hi = part_row(W, param, t->slot + 1) * pcols;
    }
    if (lo >= hi) continue;
    bool zero_grad = !e->grad_zero && !whole;
    zero_after = zero_after || (!e->grad_zero && whole);
    if (whole && t->slot > 0) atomic_fetch_add(&param->storage->version, 1);
    if (whole && t->slot > 0 && mom) atomic_fetch_add(&mom->storage->version, 1);
    grad_src src[PAR_MAX_SLOTS];
    int ns = 0, nb = 0;
    for (int j = 0; j < W->k; j++) {
      grad_entry *ge = entry_for(W->slots[j], plan_param(W, e, j));
      if (!ge) continue;
      src[ns].fac = ge->factored;
      src[ns++].p = ge->factored ? ge->fac : pt_tensor_data(ge->buf);
      nb += !ge->factored;
    }
    pt_dtype dt = param->dtype;
    size_t es = pt_dtype_size(dt);
    char *pp = pt_tensor_data(param), *gp = pt_tensor_data(grad);
    char *mp = mom ? pt_tensor_data(mom) : NULL;
    if (ns == 0) { /* no new gradient: step with grad as it is */
      pt_optim_sgd_range(param, grad, mom, e->first, &e->o, lo, hi, zero_grad);
      continue;
    }
    if (nb == ns && nb <= 2 && e->grad_zero) { /* the buffers are the whole gradient: read them directly */
      pt_optim_sgd_raw(dt, pp + (size_t)lo * es, (const char *)src[0].p + (size_t)lo * es,
                       nb == 2 ? (const char *)src[1].p + (size_t)lo * es : NULL,
                       mp ? mp + (size_t)lo * es : NULL, e->first, &e->o, hi - lo);
      continue;
    }
    int64_t rows = param->shape[0], cols = nb < ns ? param->shape[1] : 1;
    if (nb == 0 && e->grad_zero && !mp) {
      /* only factored gradients and no momentum: one pass per row segment over the
       * parameter, products summed on the fly; plain SGD leaves rows whose g is 0 in every
       * slot (dead ReLUs) as they are, so those are skipped */
      bool skip_dead = e->o.weight_decay == 0 && !e->o.maximize;
      if (lo % cols == 0 && hi % cols == 0) { /* whole rows (a replica, a block): one call */
        const void *gs[PAR_MAX_SLOTS], *xs[PAR_MAX_SLOTS];
        for (int j = 0; j < ns; j++) {
          gs[j] = (const char *)src[j].p + (size_t)(lo / cols) * es;
          xs[j] = (const char *)src[j].p + (size_t)rows * es;
        }
        pt_optim_sgd_rank_rows(dt, pp + (size_t)lo * es, (hi - lo) / cols, cols, gs, xs, ns, &e->o,
                               skip_dead);
        continue;
      }
      for (int64_t b0 = lo, r = lo / cols, c = lo % cols; b0 < hi; r++, c = 0) {
        int64_t m = cols - c; /* the rest of row r */
        if (m > hi - b0) m = hi - b0;
        const void *xs[PAR_MAX_SLOTS];
        double sc[PAR_MAX_SLOTS];
        bool dead = true;
        for (int j = 0; j < ns; j++) {
          sc[j] = dt == PT_FLOAT32 ? ((const float *)src[j].p)[r] : ((const double *)src[j].p)[r];
          xs[j] = (const char *)src[j].p + (size_t)(rows + c) * es;
          dead = dead && sc[j] == 0;
        }
        if (!(dead && skip_dead))
          pt_optim_sgd_scaled(dt, pp + (size_t)b0 * es, xs, sc, ns, &e->o, m);
        b0 += m;
      }
      continue;
    }
    enum { BLK = 1024 };
    double tmp[BLK]; /* BLK doubles or 2 BLK floats */
    int64_t blk = dt == PT_FLOAT32 ? 2 * BLK : BLK;
    for (int64_t b0 = lo; b0 < hi; b0 += blk) {
      int64_t m = hi - b0 < blk ? hi - b0 : blk;
      grad_block(dt, tmp, e->grad_zero ? NULL : gp + (size_t)b0 * es, src, ns, b0, m, cols, rows);
      pt_optim_sgd_raw(dt, pp + (size_t)b0 * es, tmp, NULL, mp ? mp + (size_t)b0 * es : NULL,
                       e->first, &e->o, m);
      if (zero_grad) memset(gp + (size_t)b0 * es, 0, (size_t)m * es);
    }
  }
  if (zero_after && win_barrier(W, self, false))
    for (int q = 0; q < W->nplan; q++) {
      step_entry *e = &W->plan[q];
      pt_tensor *grad = e->param->grad;
      if (!grad || e->grad_zero || e->rep < 0) continue;
      int64_t n = pt_tensor_numel(grad);
      int64_t lo = n * t->slot / W->k, hi = n * (t->slot + 1) / W->k;
      memset((char *)pt_tensor_data(grad) + (size_t)lo * pt_dtype_size(grad->dtype), 0,
             (size_t)(hi - lo) * pt_dtype_size(grad->dtype));
    }
}

/* A slot's end of its window: the reduction and the fused step, then counted as finished. */
static void window_reduce(par_task *t, par_worker *self) {
  window_reduce_slot(t, self);
  atomic_fetch_add(&t->win->fin_count, 1);
}

/* A task submitted ahead (par_windows_impl) waits here until every slot of the window before
 * is past its step: until then a slot may still read this worker's gradient buffers and
 * factors (about to be overwritten) or step rows this sample is about to read. The caller's
 * own step usually ends with this worker's, so the wait is short. False when the window was
 * failed or the pool cancelled meanwhile. */
static bool wait_prev(const par_task *t) {
  const par_window *W = t->win;
  for (int spin = 1; atomic_load(&W->prev->fin_count) < W->prev_target; spin++) {
    if (atomic_load(&W->failed) || pt_pool_cancelled(W->pool->pool)) return false;
    wait_turn(spin);
  }
  return true;
}

/* (dataset, i) -> dataset:get(i), for a protected call: a dataset's methods may come from an
 * __index that raises */
static int dataset_get(lua_State *L) {
  lua_Integer index = lua_tointeger(L, 2);
  lua_getfield(L, 1, "get");
  lua_insert(L, 1);
  lua_call(L, 2, LUA_MULTRET);
  int n = lua_gettop(L);
  while (n > 1 && lua_isnil(L, n)) n--; /* trailing nils say nothing */
  if (n > 1)
    return luaL_error(L, "dataset:get(%d) returned %d values: return one sample, e.g. {x, y}",
                      (int)index, n);
  lua_settop(L, 1);
  return 1;
}

/* registry[key] = the value at the top (popped), protected: a worker thread has no protected
 * call around it, and a memory error there would end the process. False (t->result says why)
 * when it failed. */
static int registry_store_k(lua_State *L) {
  const char *key = lua_touserdata(L, 2);
  lua_settop(L, 1);
  lua_setfield(L, LUA_REGISTRYINDEX, key);
  return 0;
}

static bool registry_store(lua_State *L, const char *key, par_task *t) {
  lua_pushcfunction(L, registry_store_k);
  lua_insert(L, -2);
  lua_pushlightuserdata(L, (void *)key);
  if (lua_pcall(L, 2, 0, 0) == LUA_OK) return true;
  lua_pop(L, 1);
  t->result = lpt_msg_string("out of memory");
  return false;
}

static void run_task(pt_pool_task *base, int worker, void *data) {
  (void)worker;
  par_task *t = (par_task *)base;
  par_worker *w = data;
  lua_State *L = w->L;
  int top = lua_gettop(L);
  t->ok = false;
  t->result = NULL;
  if (t->win && t->win->prev && !wait_prev(t)) {
    t->result = lpt_msg_string("interrupted");
    window_reduce(t, w);
    return;
  }
  /* a placeholder for a sample that could not be sent: fails the window */
  if (!t->args && !t->data && !t->inline_arg) {
    if (t->win) window_reduce(t, w);
    return;
  }
  if (t->seeded) pt_rng_seed(&lpt_ctx(L)->rng, t->seed); /* before the sample is read too */
  if (t->win) clear_stats(w); /* a failed window's, never applied */
  lua_pushcfunction(L, worker_msgh);
  int h = lua_gettop(L);
  int nargs = 0;
  if (t->kind == TASK_CALL) {
    int n;
    if (!decode_into(L, t, t->args, &n, "the function and its arguments", NULL)) goto out;
    if (n < 1) goto out;
    nargs = n - 1;
  } else {
    if (w->call_id != t->call_id) {
      int n;
      w->call_id = 0;
      if (!decode_into(L, t, t->call, &n, "the function", NULL)) goto out;
      lua_settop(L, h + 1);
      if (!registry_store(L, FN_KEY, t)) goto out;
      w->call_id = t->call_id;
    }
    if (t->model && (w->model_gen != t->model_gen || w->rep_gen != t->rep_gen)) {
      int n;
      w->model_gen = 0;
      clear_grads(w);
      const par_replicas *r = &w->owner->rep;
      lpt_tensor_subst sub = {r->t, r->t + (size_t)t->slot * (size_t)r->n, r->n};
      if (!decode_into(L, t, t->model, &n, "the model", t->rep_gen ? &sub : NULL)) goto out;
      lua_settop(L, h + 1);
      if (!registry_store(L, MODEL_KEY, t)) goto out;
      w->model_gen = t->model_gen;
      w->rep_gen = t->rep_gen;
    }
    if (t->data && w->data_gen != t->data_gen) {
      int n;
      w->data_gen = 0;
      if (!decode_into(L, t, t->data, &n, "the dataset", NULL)) goto out;
      lua_settop(L, h + 1);
      if (!registry_store(L, DATA_KEY, t)) goto out;
      w->data_gen = t->data_gen;
    }
    lua_getfield(L, LUA_REGISTRYINDEX, FN_KEY);
    int n;
    if (t->data) { /* the sample: dataset:get(index), read here (the lookup of get too may raise) */
      lua_pushcfunction(L, dataset_get);
      lua_getfield(L, LUA_REGISTRYINDEX, DATA_KEY);
      lua_pushinteger(L, t->index);
      if (lua_pcall(L, 2, 1, h) != LUA_OK) {
        char buf[PT_ERRMSG_MAX];
        const char *tb;
        snprintf(buf, sizeof buf, "reading the sample: %s", msgh_error(L, &tb));
        t->result = error_msg(L, buf, tb);
        goto out;
      }
      n = 1;
    } else if (t->inline_arg) {
      lua_rawgetp(L, LUA_REGISTRYINDEX, &inline_sample_key);
      n = 1;
    } else if (!decode_into(L, t, t->args, &n, "the arguments", NULL)) {
      goto out;
    }
    nargs = n;
    if (t->model) {
      lua_getfield(L, LUA_REGISTRYINDEX, MODEL_KEY);
      nargs++;
    }
  }
  pt_ctx *ctx = lpt_ctx(L);
  /* Slot 0 of a window adds straight into param.grad (nobody else touches .grad until the
   * window's barrier); the other slots fill their own buffers, added after the barrier. */
  bool own_buffers = t->grads && (t->slot > 0 || (t->win && t->win->nplan > 0));
  w->slot = t->slot;
  /* a new generation for every sample with gradients, also one whose gradients go straight into
   * .grad: the buffers of an earlier window (a fused step's) must not pass for this one's */
  if (t->grads) {
    w->gen++;
    if (w->gen == 0) w->gen = 1;
  }
  if (own_buffers) {
    w->redirect.accumulate = worker_accumulate;
    w->redirect.target = worker_target;
    w->step_win = t->win && t->win->nplan > 0 ? t->win : NULL;
    w->redirect.rank1 = w->step_win ? worker_rank1 : NULL;
    w->redirect.userdata = w;
    w->task = t;
    ctx->accumulate = pt_accumulate_redirect;
    ctx->accumulate_data = &w->redirect;
    if (w->step_win && w->step_win->coop) {
      w->coop_next = 0;
      ctx->linear_coop = coop_linear;
      ctx->linear_coop_data = w;
    }
  }
  if (t->win) {
    ctx->running_defer = worker_defer_stats;
    ctx->running_defer_data = w;
  }
  int st = lua_pcall(L, nargs, t->all_results ? LUA_MULTRET : 1, h);
  ctx->running_defer = NULL;
  ctx->running_defer_data = NULL;
  pt_tensor_release(w->bn_nbt); /* named for an update that did not come */
  w->bn_nbt = NULL;
  if (own_buffers) {
    w->task = NULL;
    ctx->accumulate = NULL;
    ctx->accumulate_data = NULL;
    ctx->linear_coop = NULL;
    ctx->linear_coop_data = NULL;
  }
  if (st != LUA_OK) {
    const char *tb, *msg = msgh_error(L, &tb);
    t->result = error_msg(L, msg, tb);
    goto out;
  }
  int nres = lua_gettop(L) - h;
  const lpt_box *box = t->win && nres == 1 ? lpt_test_box(L, h + 1) : NULL;
  if (box && box->t) { /* the sample's loss: the tensor itself, as a message would carry it */
    t->result_tensor = pt_tensor_retain(box->t);
    t->ok = true;
    goto out;
  }
  lpt_msg *m = lpt_msg_new();
  if (!m) {
    t->result = lpt_msg_string("out of memory");
    goto out;
  }
  static const char *const rnames[] = {"result 1", "result 2", "result 3", "result 4"};
  if (lpt_encode(L, m, h + 1, nres, nres <= 4 ? rnames : NULL, LPT_XFER_BACK) != LUA_OK) {
    char buf[PT_ERRMSG_MAX];
    snprintf(buf, sizeof buf, "cannot return the result: %s", lua_tostring(L, -1));
    lpt_msg_release(m);
    t->result = error_msg(L, buf, NULL);
    goto out;
  }
  t->ok = true;
  t->result = m;
out:
  lua_settop(L, top);
  if (t->win) window_reduce(t, w);
}

/* A worker's state: partrain loaded, the caller's module paths, worker id, hooks. */
static int make_state(lpar_pool *p, par_worker *w, char *err, size_t errlen) {
  lua_State *L = pt_state_new();
  if (!L) {
    snprintf(err, errlen, "cannot create a Lua state: not enough memory");
    return 1;
  }
  /* the caller's module paths first, so its own modules resolve here too */
  if (p->path) {
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "path");
    lua_pushfstring(L, "%s;%s", p->path, lua_tostring(L, -1));
    lua_setfield(L, -3, "path");
    lua_pop(L, 1);
    lua_getfield(L, -1, "cpath");
    lua_pushfstring(L, "%s;%s", p->cpath ? p->cpath : "", lua_tostring(L, -1));
    lua_setfield(L, -3, "cpath");
    lua_pop(L, 2);
  }
  lua_getglobal(L, "require");
  lua_pushliteral(L, "partrain");
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    snprintf(err, errlen, "require 'partrain' failed: %s", lua_tostring(L, -1));
    lua_close(L);
    return 1;
  }
  lua_setglobal(L, "pt");
  lpt_state *s = lpt_get_state(L);
  s->worker_id = w->index;
  /* the dispatcher owns the thread budget here: each worker's ops run on its own thread */
  s->ctx.intra_threads = 1;
  /* deterministic per worker: the same code gives the same numbers every run (par_by_sample's
   * samples and _pool_map's items start at their own seeds: par_task.seed) */
  pt_rng_seed(&s->ctx.rng, 0x9e3779b97f4a7c15ULL * (uint64_t)w->index + 42);
  lua_pushlightuserdata(L, w);
  lua_setfield(L, LUA_REGISTRYINDEX, WORKER_KEY);
  lua_sethook(L, cancel_hook, LUA_MASKCOUNT, HOOK_COUNT);
  w->L = L;
  return 0;
}

static int worker_init(void *ud, int index, void **data, char *err, size_t errlen) {
  lpar_pool *p = ud;
  par_worker *w = &p->w[index];
  w->owner = p;
  w->index = index + 1;
  if (make_state(p, w, err, errlen)) return 1;
  *data = w;
  return 0;
}

static void worker_fini(void *ud, int index, void *data) {
  (void)ud;
  (void)index;
  par_worker *w = data;
  if (!w) return;
  clear_grads(w);
  free(w->g);
  w->g = NULL;
  w->gcap = 0;
  clear_stats(w);
  free(w->bn);
  w->bn = NULL;
  w->bncap = 0;
  if (w->L) lua_close(w->L);
  w->L = NULL;
}

/* ------------------------------------------------------------------ caller side --- */

static lpar_pool *check_pool(lua_State *L, int idx) {
  lpar_pool **pp = luaL_checkudata(L, idx, POOL_MT);
  if (!*pp || (*pp)->closed) luaL_error(L, "the pool was closed");
  if ((*pp)->pid != getpid())
    luaL_error(L, "the pool belongs to the parent process (its threads are not in this forked one)");
  return *pp;
}

static void replicas_free(par_replicas *r) {
  for (int i = 0; r->t && i < r->n * r->slots; i++) pt_tensor_release(r->t[i]);
  for (int i = 0; r->mom && i < r->n * r->slots; i++) pt_tensor_release(r->mom[i]);
  free(r->t);
  free(r->mom);
  free(r->version);
  free(r->mom_src);
  free(r->mom_version);
  memset(r, 0, sizeof *r);
}

static bool same_layout(const pt_tensor *a, const pt_tensor *b) {
  return a && b && a->dtype == b->dtype && a->ndim == b->ndim &&
         memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof(int64_t)) == 0;
}

/* A fresh contiguous tensor like t in *out (kept when it is one already); false without memory. */
static bool replica_make(pt_tensor **out, const pt_tensor *t, bool requires_grad) {
  if (same_layout(*out, t)) return true;
  pt_tensor_release(*out);
  *out = NULL;
  pt_ctx quiet;
  pt_ctx_init(&quiet, 0);
  if (pt_tensor_empty(&quiet, t->dtype, t->ndim, t->shape, out)) {
    *out = NULL;
    return false;
  }
  (*out)->requires_grad = requires_grad;
  return true;
}

/* Give the plan's parameters (and momentum buffers) copies for slots 1..slots-1, keeping the
 * pool's set when it is the same, and set plan[q].rep; returns the set's gen. Without memory,
 * for a parameter listed twice, or past PAR_REPLICA_BYTES, the plan steps slice by slice on
 * the shared parameters and 0 is returned. */
static uint64_t replicas_prepare(lpar_pool *p, step_entry *plan, int nplan, int slots) {
  par_replicas *r = &p->rep;
  for (int q = 0; q < nplan; q++) {
    const pt_tensor *a = plan[q].param;
    plan[q].rep = -1;
    /* a large weight with rows for every slot's block is partitioned rather than copied */
    plan[q].part = slots >= 2 && !atomic_load(&partition_off) && a->ndim == 2 &&
                   a->shape[0] >= PT_LINEAR_ROWS_CHUNK * (int64_t)slots &&
                   (size_t)pt_tensor_numel(a) * pt_dtype_size(a->dtype) >= PAR_PART_BYTES;
  }
  if (slots < 2 || nplan == 0) return 0;
  size_t bytes = 0;
  for (int q = 0; q < nplan; q++) {
    const pt_tensor *a = plan[q].param;
    if (!plan[q].part) bytes += (size_t)pt_tensor_numel(a) * pt_dtype_size(a->dtype) * (plan[q].buf ? 2 : 1);
    for (int i = 0; i < q; i++)
      if (plan[i].param == a) {
        for (int e = 0; e < nplan; e++) plan[e].part = false; /* listed twice: one shared copy */
        return 0;
      }
  }
  if (bytes > PAR_REPLICA_BYTES) return 0;
  bool same = r->gen && r->n == nplan && r->slots == slots;
  for (int q = 0; same && q < nplan; q++)
    same = r->t[q] == plan[q].param && same_layout(r->t[nplan + q], plan[q].param);
  if (!same) {
    replicas_free(r);
    size_t cells = (size_t)nplan * (size_t)slots;
    r->t = calloc(cells, sizeof *r->t);
    r->mom = calloc(cells, sizeof *r->mom);
    r->version = calloc((size_t)nplan, sizeof *r->version);
    r->mom_src = calloc((size_t)nplan, sizeof *r->mom_src);
    r->mom_version = calloc((size_t)nplan, sizeof *r->mom_version);
    if (!r->t || !r->mom || !r->version || !r->mom_src || !r->mom_version) {
      replicas_free(r);
      return 0;
    }
    r->n = nplan;
    r->slots = slots;
    for (int q = 0; q < nplan; q++) r->t[q] = pt_tensor_retain(plan[q].param);
    r->gen = ++p->rep_next_gen;
  }
  for (int q = 0; q < nplan; q++)
    for (int j = 1; j < slots; j++) {
      pt_tensor **cell = &r->t[j * nplan + q], **mcell = &r->mom[j * nplan + q];
      if (plan[q].part || *cell == plan[q].param) { /* partitioned: the slot uses the parameter */
        pt_tensor_release(*cell);
        *cell = plan[q].part ? pt_tensor_retain(plan[q].param) : NULL;
        pt_tensor_release(*mcell);
        *mcell = NULL;
        if (plan[q].part) continue;
      }
      if (!replica_make(cell, plan[q].param, plan[q].param->requires_grad) ||
          (plan[q].buf && !replica_make(mcell, plan[q].buf, false))) {
        replicas_free(r);
        return 0;
      }
    }
  r->stale = true;
  for (int q = 0; q < nplan; q++) plan[q].rep = plan[q].part ? -1 : q;
  return r->gen;
}

/* rows[j * r->n + i] = src for slots 1..slots-1 (contiguous tensors of src's size). */
static void replicas_copy(const par_replicas *r, pt_tensor *const *rows, int i, const pt_tensor *src) {
  size_t nb = (size_t)pt_tensor_numel(src) * pt_dtype_size(src->dtype);
  for (int j = 1; j < r->slots; j++) memcpy(pt_tensor_data(rows[j * r->n + i]), pt_tensor_data(src), nb);
}

/* Before a window: the copies that may differ from their parameter or momentum buffer (the
 * set is new, a window failed, or the user's code changed them between windows or calls) are
 * copied again. */
static void replicas_sync(par_replicas *r, const step_entry *plan, int nplan) {
  for (int q = 0; q < nplan; q++) {
    const step_entry *e = &plan[q];
    if (e->rep < 0) continue;
    int i = e->rep;
    /* a frozen parameter's copies are frozen too (an after_window hook may change it) */
    for (int j = 1; j < r->slots; j++) r->t[j * r->n + i]->requires_grad = e->param->requires_grad;
    unsigned v = atomic_load(&e->param->storage->version);
    if (r->stale || v != r->version[i]) {
      replicas_copy(r, r->t, i, e->param);
      r->version[i] = v;
    }
    if (!e->buf || e->first) continue; /* the first step writes the buffers whole */
    unsigned bv = atomic_load(&e->buf->storage->version);
    if (r->stale || r->mom_src[i] != e->buf || bv != r->mom_version[i]) {
      replicas_copy(r, r->mom, i, e->buf);
      r->mom_src[i] = e->buf;
      r->mom_version[i] = bv;
    }
  }
  r->stale = false;
}

static void pool_close(lpar_pool *p) {
  if (!p) return;
  replicas_free(&p->rep);
  p->closed = true;
  if (p->pool) pt_pool_destroy(p->pool, discard_task);
  p->pool = NULL;
  lpt_msg_release(p->model_msg);
  p->model_msg = NULL;
  if (p->inl) { /* the caller's thread: GC and close run there */
    clear_grads(p->inl);
    free(p->inl->g);
    clear_stats(p->inl);
    free(p->inl->bn);
    if (p->inl->L) lua_close(p->inl->L);
    free(p->inl);
    p->inl = NULL;
  }
  if (p->win) {
    for (int i = 0; i < 2; i++) {
      free(p->win[i].slots);
      pthread_mutex_destroy(&p->win[i].mu);
      pthread_cond_destroy(&p->win[i].cv);
      free(p->win[i].params);
    }
    free(p->win);
    p->win = NULL;
  }
  free(p->w);
  free(p->path);
  free(p->cpath);
  p->w = NULL;
  p->path = p->cpath = NULL;
}

static int pool_gc(lua_State *L) {
  lpar_pool **pp = luaL_checkudata(L, 1, POOL_MT);
  if (*pp && (*pp)->pid != getpid()) { /* a forked child's copy: its threads are not here */
    *pp = NULL;
    return 0;
  }
  if (*pp) {
    if ((*pp)->model_ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, (*pp)->model_ref);
    pool_close(*pp);
    free(*pp);
    *pp = NULL;
  }
  return 0;
}

static char *dup_str(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

/* pushes a new pool userdata */
static lpar_pool *pool_new(lua_State *L, int n) {
  if (n < 1 || n > PAR_MAX_SLOTS)
    luaL_error(L, "pool: number of workers must be between 1 and %d, got %d", PAR_MAX_SLOTS, n);
  lpar_pool **pp = lua_newuserdatauv(L, sizeof *pp, 0);
  *pp = NULL;
  luaL_setmetatable(L, POOL_MT);
  lpar_pool *p = calloc(1, sizeof *p);
  if (!p) luaL_error(L, "pool: out of memory");
  *pp = p;
  p->n = n;
  p->pid = getpid();
  p->model_ref = LUA_NOREF;
  p->w = calloc((size_t)n, sizeof *p->w);
  p->win = calloc(2, sizeof *p->win);
  if (!p->w || !p->win) luaL_error(L, "pool: out of memory");
  for (int i = 0; i < 2; i++) {
    pthread_mutex_init(&p->win[i].mu, NULL);
    pthread_cond_init(&p->win[i].cv, NULL);
    p->win[i].pool = p;
  }
  for (int i = 0; i < 2; i++) {
    p->win[i].slots = calloc((size_t)n, sizeof *p->win[i].slots);
    if (!p->win[i].slots) luaL_error(L, "pool: out of memory");
  }
  lua_getglobal(L, "package");
  if (lua_istable(L, -1)) {
    lua_getfield(L, -1, "path");
    p->path = dup_str(lua_tostring(L, -1));
    lua_getfield(L, -2, "cpath");
    p->cpath = dup_str(lua_tostring(L, -1));
    lua_pop(L, 2);
  }
  lua_pop(L, 1);
  pt_pool_config cfg = {.n_workers = n, .max_pending = 4 * n, .worker_init = worker_init,
                        .worker_fini = worker_fini, .userdata = p};
  pt_ctx *ctx = lpt_ctx(L);
  if (pt_pool_create(ctx, &cfg, &p->pool)) {
    p->closed = true;
    return (lpar_pool *)(intptr_t)lpt_error(L);
  }
  return p;
}

/* The shared pool of this state with at least n workers (recreated bigger when needed). */
static lpar_pool *shared_pool(lua_State *L, int n) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, SHARED_POOL_KEY) == LUA_TUSERDATA) {
    lpar_pool **pp = lua_touserdata(L, -1);
    if (*pp && (*pp)->busy) /* its windows wait for this thread: it would hang or be torn down */
      luaL_error(L, "the shared workers are busy: code that par_by_sample runs on the caller's "
                    "thread (dataset:get, after_window) cannot start parallel work of its own");
    if (*pp && !(*pp)->closed && (*pp)->n >= n && (*pp)->pid == getpid()) {
      lua_pop(L, 1);
      return *pp;
    }
    lua_pushcfunction(L, pool_gc);
    lua_pushvalue(L, -2);
    lua_call(L, 1, 0);
  }
  lua_pop(L, 1);
  lpar_pool *p = pool_new(L, n);
  lua_setfield(L, LUA_REGISTRYINDEX, SHARED_POOL_KEY);
  return p;
}

/* Stops what is still out: when tasks are outstanding, cancel the pool, collect them all
 * (freeing those not in `owned`) and re-arm it; then free everything in `owned` (nowned
 * pointers, NULL ones are fine, set to NULL). */
static void pool_drain(lpar_pool *p, par_task **owned, int nowned) {
  if (pt_pool_pending(p->pool) > 0) {
    pt_pool_cancel(p->pool);
    pt_ctx quiet;
    pt_ctx_init(&quiet, 0);
    pt_pool_task *done;
    while (pt_pool_pending(p->pool) > 0 && pt_pool_wait(&quiet, p->pool, &done) == PT_OK) {
      bool mine = false;
      for (int i = 0; i < nowned; i++)
        if (owned[i] == (par_task *)done) mine = true;
      if (!mine) free_task((par_task *)done);
    }
    pt_pool_uncancel(p->pool);
  }
  for (int i = 0; i < nowned; i++) {
    free_task(owned[i]);
    owned[i] = NULL;
  }
}

/* Wait for one completion. On interrupt (or another wait failure): pool_drain(owned) and
 * return NULL; the caller ends its guard, frees its own things and raises "interrupted". */
static par_task *wait_one(lpar_pool *p, lpt_sigint_guard *g, par_task **owned, int nowned) {
  pt_pool_task *done;
  pt_status st = pt_pool_wait(g->ctx, p->pool, &done);
  if (st == PT_OK) return (par_task *)done;
  pool_drain(p, owned, nowned);
  return NULL;
}

static lpt_msg *encode_or_raise(lua_State *L, int first, int n, const char *const *names,
                                unsigned flags, const char *what) {
  lpt_msg *m = lpt_msg_new();
  if (!m) luaL_error(L, "out of memory");
  if (lpt_encode(L, m, first, n, names, flags) != LUA_OK) {
    lpt_msg_release(m);
    return (lpt_msg *)(intptr_t)luaL_error(L, "%s: %s", what, lua_tostring(L, -1));
  }
  return m;
}

/* Push the values of a result message; on a decode failure pushes nothing and returns -1
 * with the message at the top. */
static int push_results(lua_State *L, const lpt_msg *m) {
  int n;
  if (lpt_decode(L, m, &n) != LUA_OK) return -1;
  return n;
}

static int push_tensor_protected(lua_State *L) {
  lpt_push_tensor(L, pt_tensor_retain(lua_touserdata(L, 1)));
  return 1;
}

/* push_results for a task's result_tensor: 1, or -1 with the message at the top. */
static int push_tensor_result(lua_State *L, pt_tensor *t) {
  lua_pushcfunction(L, push_tensor_protected);
  lua_pushlightuserdata(L, t);
  return lua_pcall(L, 1, 1, 0) == LUA_OK ? 1 : -1;
}

/* --- pool objects --- */

static int l_pool_new(lua_State *L) {
  int n = (int)luaL_checkinteger(L, 1);
  pool_new(L, n);
  return 1;
}

/* Submits fn (at fn_idx) with the values above it to worker w of p. names_idx (0: none) is a
 * list naming the arguments in messages (missing entries: "argument i"); a value that cannot
 * be sent raises "<what>: ..." with no position when names are given (the Lua caller re-raises
 * it where its user called), else "submit: ..." at the caller's line. */
static int pool_submit(lua_State *L, lpar_pool *p, lua_Integer w, int fn_idx, int names_idx,
                       const char *what) {
  luaL_checktype(L, fn_idx, LUA_TFUNCTION);
  if (w < 0 || w > p->n) luaL_error(L, "submit: worker %d out of range (pool has %d workers)", (int)w, p->n);
  int nargs = lua_gettop(L) - fn_idx;
  const char *names[64];
  char bufs[64][48];
  names[0] = "the closure";
  for (int i = 1; i <= nargs && i < 64; i++) {
    const char *given = NULL;
    if (names_idx && lua_rawgeti(L, names_idx, i) == LUA_TSTRING) given = lua_tostring(L, -1);
    if (given) snprintf(bufs[i], sizeof bufs[i], "%s", given);
    else snprintf(bufs[i], sizeof bufs[i], "argument %d", i);
    if (names_idx) lua_pop(L, 1);
    names[i] = bufs[i];
  }
  lpt_msg *m = lpt_msg_new();
  if (!m) return luaL_error(L, "out of memory");
  if (lpt_encode(L, m, fn_idx, nargs + 1, nargs < 63 ? names : NULL, LPT_XFER_GLOBALS) != LUA_OK) {
    lpt_msg_release(m);
    if (names_idx) {
      lua_pushfstring(L, "%s: %s", what, lua_tostring(L, -1));
      return lua_error(L);
    }
    return luaL_error(L, "%s: %s", what, lua_tostring(L, -1));
  }
  par_task *t = lpt_zalloc(sizeof *t);
  if (!t) {
    lpt_msg_release(m);
    return luaL_error(L, "out of memory");
  }
  t->kind = TASK_CALL;
  t->args = m;
  t->all_results = true;
  t->id = ++p->next_id;
  t->base.worker = (int)w - 1;
  t->base.run = run_task;
  lpt_sigint_guard g;
  lpt_sigint_guard_begin(L, &g);
  pt_status st = pt_pool_submit(g.ctx, p->pool, &t->base);
  lpt_sigint_guard_end(&g);
  if (st) {
    free_task(t);
    return luaL_error(L, "%s", st == PT_EINTR ? "interrupted" : lpt_ctx(L)->err);
  }
  lua_pushinteger(L, (lua_Integer)t->id);
  return 1;
}

/* pool:submit(w, fn, ...) -> id */
static int l_pool_submit(lua_State *L) {
  lpar_pool *p = check_pool(L, 1);
  return pool_submit(L, p, luaL_checkinteger(L, 2), 3, 0, "submit");
}

/* pool:submit_as(what, names, w, fn, ...) -> id: as submit, naming the arguments in messages
 * ("Runner: upvalue 'co' (thread) of producer_work cannot be sent to a worker") */
static int l_pool_submit_as(lua_State *L) {
  lpar_pool *p = check_pool(L, 1);
  const char *what = luaL_checkstring(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  return pool_submit(L, p, luaL_checkinteger(L, 4), 5, 3, what);
}

static int l_pool_next(lua_State *L) {
  lpar_pool *p = check_pool(L, 1);
  if (pt_pool_pending(p->pool) == 0) return luaL_error(L, "next: no task is outstanding");
  lpt_sigint_guard g;
  lpt_sigint_guard_begin(L, &g);
  par_task *t = wait_one(p, &g, NULL, 0);
  lpt_sigint_guard_end(&g);
  if (!t) return luaL_error(L, "interrupted");
  lua_settop(L, 1);
  lua_pushinteger(L, (lua_Integer)t->id);
  lua_pushinteger(L, t->base.worker + 1);
  int top0 = lua_gettop(L);
  if (t->base.cancelled) {
    free_task(t);
    lua_pushboolean(L, 0);
    lua_pushliteral(L, "interrupted");
    return 4;
  }
  bool ok = t->ok;
  int nr = push_results(L, t->result);
  free_task(t);
  if (nr < 0) { /* the results could not be received: a failure of the task */
    lua_pushfstring(L, "cannot receive the result: %s", lua_tostring(L, -1));
    lua_replace(L, top0 + 1);
    lua_settop(L, top0 + 1);
    lua_pushboolean(L, 0);
    lua_insert(L, top0 + 1);
    return 4;
  }
  lua_pushboolean(L, ok);
  lua_insert(L, top0 + 1);
  return 3 + nr;
}

/* pool:cancel(): stops every task still out (Lua code running in a worker is interrupted at its
 * next instruction; a task not started never runs) and waits until all are back; none of them
 * is returned by next. The pool works again after. For the error paths of code that drops the
 * work it sent: waiting for each result instead kept Ctrl-C waiting for the longest task. */
static int l_pool_cancel(lua_State *L) {
  pool_drain(check_pool(L, 1), NULL, 0);
  return 0;
}

static int l_pool_pending(lua_State *L) {
  lpar_pool *p = check_pool(L, 1);
  lua_pushinteger(L, pt_pool_pending(p->pool));
  return 1;
}

static int l_pool_size(lua_State *L) {
  lpar_pool *p = check_pool(L, 1);
  lua_pushinteger(L, p->n);
  return 1;
}

static int l_pool_close(lua_State *L) {
  lpar_pool **pp = luaL_checkudata(L, 1, POOL_MT);
  if (*pp && (*pp)->pid != getpid()) *pp = NULL; /* the parent's, as pool_gc */
  if (*pp) pool_close(*pp);
  return 0;
}

static int l_pool_closed(lua_State *L) {
  lpar_pool **pp = luaL_checkudata(L, 1, POOL_MT);
  lua_pushboolean(L, !*pp || (*pp)->closed);
  return 1;
}

/* --- error values --- */

static void push_action_error(lua_State *L, int index, int worker, const char *msg,
                              const char *tb) {
  lua_createtable(L, 0, 4);
  lua_pushstring(L, msg);
  lua_setfield(L, -2, "message");
  lua_pushstring(L, tb ? tb : "");
  lua_setfield(L, -2, "traceback");
  lua_pushinteger(L, index);
  lua_setfield(L, -2, "index");
  lua_pushinteger(L, worker);
  lua_setfield(L, -2, "worker");
  luaL_setmetatable(L, ACTION_ERROR_KEY);
}

static int action_error_tostring(lua_State *L) {
  lua_getfield(L, 1, "index");
  lua_getfield(L, 1, "worker");
  lua_getfield(L, 1, "message");
  const char *msg = lua_tostring(L, -1) ? lua_tostring(L, -1) : "?";
  if (lua_tointeger(L, -2) > 0)
    lua_pushfstring(L, "ActionError: item %I failed on worker %I: %s", (LUAI_UACINT)lua_tointeger(L, -3),
                    (LUAI_UACINT)lua_tointeger(L, -2), msg);
  else /* the async target: in the caller's own state */
    lua_pushfstring(L, "ActionError: item %I failed: %s", (LUAI_UACINT)lua_tointeger(L, -3), msg);
  return 1;
}

/* The samples of the next window's workers (slots 1..k-1), read by the caller's thread in its
 * own slot's first barrier of the current window (ahead_job), or the first that could not be
 * read or sent (reported by its own window). */
typedef struct sample_ahead {
  int wi;        /* the window they belong to, or -1 */
  int k;         /* that window's size */
  int fail_slot; /* the slot whose sample failed (its message in err), or 0 */
  char err[PT_ERRMSG_MAX];
  lpt_msg *m[PAR_MAX_SLOTS];
} sample_ahead;

static void ahead_clear(sample_ahead *a) {
  for (int j = 1; j < a->k; j++) {
    lpt_msg_release(a->m[j]);
    a->m[j] = NULL;
  }
  a->wi = -1;
  a->k = 0;
  a->fail_slot = 0;
}

/* --- what a dispatching call must undo ---
 * A call that has tasks out, has taken Ctrl-C over or has marked the pool busy keeps all it must
 * undo in a to-be-closed userdata (lua_toclose): Lua closes it when the call returns and when
 * any error unwinds it, a memory error raised inside the Lua API included, so that no exit
 * leaves tasks running, the SIGINT handler installed or the pool busy for good. The userdata
 * does not move while it is on the stack: the guard lives in it, not in the C frame that an
 * error discards. */
typedef struct par_call {
  lpar_pool *p;
  lpt_sigint_guard g;
  bool guarded;      /* g begun and not ended */
  bool windows;      /* par_by_sample's: the pool is busy and its window structs are in use */
  par_task **tasks;  /* owned (NULL entries are fine): drained and freed at the end */
  int ntasks;
  lpt_msg *call, *dmsg;
  sample_ahead ahead; /* par_by_sample's samples read ahead */
} par_call;

#define PAR_CALL_MT "partrain.par_call"

/* Stops the tasks still out (a window's tasks: both windows failed first, so that no slot
 * waits at a barrier for one that was stopped), frees the tasks and messages, gives Ctrl-C
 * back and ends the transfer session. Runs once; every exit path of the call gets here. */
static void par_call_end(lua_State *L, par_call *c) {
  lpar_pool *p = c->p;
  if (c->windows && pt_pool_pending(p->pool) > 0)
    for (int i = 0; i < 2; i++) atomic_store(&p->win[i].failed, true);
  if (c->tasks) pool_drain(p, c->tasks, c->ntasks);
  free(c->tasks);
  c->tasks = NULL;
  c->ntasks = 0;
  if (c->windows) {
    c->windows = false;
    p->busy = false;
    for (int i = 0; i < 2; i++) { /* the plan is the call's (stack index 7); no task is out now */
      p->win[i].plan = NULL;
      p->win[i].nplan = 0;
      p->win[i].chore = NULL;
    }
    if (p->inl) { /* a sample copied for a window that did not run */
      lua_pushnil(p->inl->L);
      lua_rawsetp(p->inl->L, LUA_REGISTRYINDEX, &inline_sample_key);
    }
  }
  lpt_msg_release(c->call);
  lpt_msg_release(c->dmsg);
  c->call = c->dmsg = NULL;
  ahead_clear(&c->ahead);
  if (c->guarded) {
    c->guarded = false;
    lpt_sigint_guard_end(&c->g);
  }
  lpt_xfer_session(L, LPT_SESSION_END);
}

static int par_call_close(lua_State *L) {
  par_call_end(L, luaL_checkudata(L, 1, PAR_CALL_MT));
  return 0;
}

/* Pushes a par_call for pool p, to-be-closed, owning nothing yet. */
static par_call *par_call_push(lua_State *L, lpar_pool *p) {
  par_call *c = lua_newuserdatauv(L, sizeof *c, 0);
  memset(c, 0, sizeof *c);
  c->p = p;
  c->ahead.wi = -1;
  luaL_setmetatable(L, PAR_CALL_MT);
  lua_toclose(L, -1);
  return c;
}

/* pt._pool_map(fn, arglists, {n_workers=}) -> results (error values in failed slots) */
static int l_pool_map(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer nw = 0;
  if (lua_istable(L, 3)) {
    lua_getfield(L, 3, "n_workers");
    if (!lua_isnil(L, -1)) {
      nw = luaL_checkinteger(L, -1);
      if (nw < 1) return luaL_error(L, "_pool_map: n_workers must be at least 1, got %I", nw);
    }
    lua_pop(L, 1);
  }
  if (nw == 0) {
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    nw = nc > 0 ? nc : 2;
  }
  /* the items may hold nils: n counts them (table.pack, inbatch_parallel's lists) */
  lua_Integer ni = lpt_list_length(L, 2);
  if (ni < 0 || ni > INT_MAX) return luaL_error(L, "_pool_map: bad number of items %I", ni);
  int nitems = (int)ni;
  lua_settop(L, 2);
  lua_createtable(L, nitems, 0); /* 3: results */
  if (nitems == 0) return 1;
  if (nw > nitems) nw = nitems; /* more would idle (and grow the shared pool) */
  if (nw > PAR_MAX_SLOTS)
    return luaL_error(L, "_pool_map: at most %d workers, got n_workers=%I", PAR_MAX_SLOTS, nw);
  int nworkers = (int)nw;
  lpar_pool *p = shared_pool(L, nworkers);
  par_call *c = par_call_push(L, p); /* 4: closed at every exit */
  int limit = nworkers; /* at most nitems */
  par_task **inflight = c->tasks = calloc((size_t)limit, sizeof *inflight);
  if (!inflight) return luaL_error(L, "out of memory");
  c->ntasks = limit;
  lua_pushvalue(L, 1);
  static const char *const fname[] = {"the closure"};
  c->call = encode_or_raise(L, lua_gettop(L), 1, fname, LPT_XFER_GLOBALS | LPT_XFER_CACHE_FN,
                            "_pool_map");
  lua_pop(L, 1);
  lpt_msg *call = c->call;
  uint64_t call_id = ++p->next_call;
  uint64_t seed_base = pt_rng_next(&lpt_ctx(L)->rng); /* the items' seeds (par_task.seed) */
  lpt_sigint_guard *g = &c->g;
  lpt_sigint_guard_begin(L, g);
  c->guarded = true;
  lpt_xfer_session(L, LPT_SESSION_CHECK);
  int next = 1, ninflight = 0;
  char names_buf[16][24];
  const char *names[16];
  for (int i = 0; i < 16; i++) {
    snprintf(names_buf[i], sizeof names_buf[i], "argument %d", i + 1);
    names[i] = names_buf[i];
  }
  while (next <= nitems || ninflight > 0) {
    if (next <= nitems && ninflight < limit) {
      int i = next++;
      lua_rawgeti(L, 2, i);
      int base = lua_gettop(L);
      int na;
      char why[PT_ERRMSG_MAX]; /* why the item cannot be sent, or "" */
      why[0] = '\0';
      if (lua_istable(L, base)) {
        lua_Integer nl = lpt_list_length(L, base); /* nils among the arguments: n counts them */
        na = nl < 0 ? 0 : nl > INT_MAX - 8 ? INT_MAX - 8 : (int)nl;
        if (!lua_checkstack(L, na + 4)) /* Lua's stack limit (LUAI_MAXSTACK) */
          snprintf(why, sizeof why, "%d arguments are more than a Lua stack holds", na);
        else
          for (int k = 1; k <= na; k++) lua_rawgeti(L, base, k);
      } else {
        na = 1;
        lua_pushvalue(L, base);
      }
      par_task *t = why[0] ? NULL : lpt_zalloc(sizeof *t);
      lpt_msg *m = t ? lpt_msg_new() : NULL;
      if (!why[0] && !m)
        snprintf(why, sizeof why, "out of memory");
      else if (!why[0] && lpt_encode(L, m, base + 1, na, na <= 16 ? names : NULL, LPT_XFER_GLOBALS))
        snprintf(why, sizeof why, "%s", lua_tostring(L, -1) ? lua_tostring(L, -1) : "?");
      if (why[0]) { /* an error value in its slot; the other items go on */
        char buf[PT_ERRMSG_MAX + 32];
        snprintf(buf, sizeof buf, "cannot send item %d: %s", i, why);
        lpt_msg_release(m);
        free(t);
        lua_settop(L, 4);
        push_action_error(L, i, 0, buf, NULL);
        lua_rawseti(L, 3, i);
        continue;
      }
      lua_settop(L, 4);
      t->kind = TASK_ITEM;
      t->args = m;
      t->call = lpt_msg_retain(call);
      t->call_id = call_id;
      t->index = i;
      t->seeded = true;
      t->seed = seed_base + (uint64_t)i;
      t->base.run = run_task;
      int slot = 0;
      while (inflight[slot]) slot++;
      inflight[slot] = t;
      /* slot s runs on worker s: at most `limit` workers even when the shared pool is bigger
       * (a par_by_sample with more threads grew it), and the slot's worker is free now */
      t->base.worker = slot;
      pt_status st = pt_pool_submit(g->ctx, p->pool, &t->base);
      if (st) {
        inflight[slot] = NULL;
        free_task(t);
        wait_one(p, g, inflight, limit); /* fails too: drains */
        return luaL_error(L, "interrupted");
      }
      ninflight++;
      continue;
    }
    par_task *t = wait_one(p, g, inflight, limit);
    if (!t) return luaL_error(L, "interrupted");
    int slot = 0; /* t stays owned by c until its result is stored */
    while (inflight[slot] != t) slot++;
    if (t->base.cancelled) {
      push_action_error(L, t->index, t->base.worker + 1, "interrupted", NULL);
    } else if (t->ok) {
      int n = push_results(L, t->result);
      if (n < 0) {
        char buf[PT_ERRMSG_MAX];
        snprintf(buf, sizeof buf, "cannot receive the result: %s", lua_tostring(L, -1));
        lua_pop(L, 1);
        push_action_error(L, t->index, t->base.worker + 1, buf, NULL);
      } else if (n == 0) {
        lua_pushnil(L);
      } else if (n > 1) {
        lua_pop(L, n - 1);
      }
    } else {
      int top0 = lua_gettop(L);
      int nr = push_results(L, t->result);
      const char *msg = "(error)", *tb = "";
      if (nr < 0 && lua_tostring(L, -1)) msg = lua_tostring(L, -1);
      if (nr >= 1 && lua_tostring(L, top0 + 1)) msg = lua_tostring(L, top0 + 1);
      if (nr >= 2 && lua_tostring(L, top0 + 2)) tb = lua_tostring(L, top0 + 2);
      push_action_error(L, t->index, t->base.worker + 1, msg, tb);
      lua_insert(L, top0 + 1);
      lua_settop(L, top0 + 1);
    }
    lua_rawseti(L, 3, t->index);
    inflight[slot] = NULL;
    ninflight--;
    free_task(t);
  }
  lua_settop(L, 3); /* closes c (par_call_end) */
  return 1;
}

/* --- par_by_sample --- */

/* pt._par_windows(model, fn, get, windows, n, after_window, refresh) -> losses
 * windows: {start1, stop1, start2, stop2, ...} (1-based, inclusive); sample i goes to worker
 * i - start + 1 of its window. */
/* Sample i (get at stack index 3), encoded; NULL with err set when it cannot be read or sent.
 * With Li (slot 0's worker state, which runs on this thread) a flat sample such as {x, y} is
 * copied straight into Li instead (lpt_copy_flat; *copied, NULL returned): no message to make,
 * decode and free on the thread every window waits for. */
static lpt_msg *read_sample_to(lua_State *L, lua_State *Li, int i, bool *copied, char *err,
                               size_t errlen) {
  static const char *const sname[] = {"sample"};
  int top = lua_gettop(L);
  lua_pushcfunction(L, worker_msgh); /* {message, traceback}, as a worker's failure */
  lua_pushvalue(L, 3);
  lua_pushinteger(L, i);
  int st = lua_pcall(L, 1, 1, top + 1);
  if (st == LUA_OK && Li) {
    int cst = lpt_copy_flat(L, -1, Li, &inline_sample_key);
    if (cst == LUA_OK) {
      *copied = true;
      lua_settop(L, top);
      return NULL;
    }
    if (cst > 0) { /* out of memory in Li */
      snprintf(err, errlen, "par_by_sample: sample %d cannot be sent to a worker: %s", i,
               lua_tostring(Li, -1) ? lua_tostring(Li, -1) : "(error)");
      lua_pop(Li, 1);
      lua_settop(L, top);
      return NULL;
    }
  }
  lpt_msg *m = st == LUA_OK ? lpt_msg_new() : NULL;
  if (st != LUA_OK || !m || lpt_encode(L, m, -1, 1, sname, LPT_XFER_GLOBALS) != LUA_OK) {
    const char *why = "out of memory", *tb = "";
    if (st != LUA_OK) /* get raised */
      why = msgh_error(L, &tb);
    else if (m) /* the encoder's message */
      why = lua_tostring(L, -1) ? lua_tostring(L, -1) : "(error)";
    snprintf(err, errlen, "par_by_sample: sample %d %s: %s%s%s", i,
             st != LUA_OK ? "could not be read" : "cannot be sent to a worker", why, *tb ? "\n" : "", tb);
    lpt_msg_release(m);
    m = NULL;
  }
  lua_settop(L, top);
  return m;
}

static lpt_msg *read_sample(lua_State *L, int i, char *err, size_t errlen) {
  return read_sample_to(L, NULL, i, NULL, err, errlen);
}

/* Reads window wi's samples for slots 1..k-1 into a (the first failure stops it). */
static void ahead_read(lua_State *L, sample_ahead *a, int wi, int start, int k) {
  ahead_clear(a);
  a->wi = wi;
  a->k = k;
  for (int j = 1; j < k; j++)
    if (!(a->m[j] = read_sample(L, start + j, a->err, sizeof a->err))) {
      a->fail_slot = j;
      break;
    }
}

/* Ready W for a window of k slots before any of its tasks is submitted. Its tasks start once
 * every slot of prev (the window still running, or NULL) is past its step. */
static void window_setup(par_window *W, int k, step_entry *plan, int nplan, par_window *prev) {
  W->k = k;
  W->plan = plan;
  W->nplan = nplan;
  W->prev = prev;
  W->prev_target = prev ? prev->fin_base + (unsigned long long)prev->k : 0;
  W->fin_base = atomic_load(&W->fin_count);
  int forced = atomic_load(&split_forced);
  W->shift = forced != SPLIT_ADAPT ? forced : W->pool->split_shift;
  atomic_store(&W->arrived, 0);
  atomic_store(&W->failed, false);
  /* no slot runs a sample of this window yet: its rounds start empty */
  W->coop = false;
  for (int q = 0; q < nplan && k >= 2; q++) W->coop = W->coop || plan[q].part;
  for (int j = 0; j < k; j++) atomic_store(&W->fn_done[j], false);
  for (int m = 0; W->coop && m < PAR_COOP_ROUNDS; m++) {
    atomic_store(&W->rounds[m].arrived, 0);
    atomic_store(&W->rounds[m].state, COOP_OPEN);
    atomic_store(&W->rounds[m].done, 0);
  }
}

/* t runs sample `index` in slot j of window W. */
static void window_task(par_task *t, par_window *W, int j, int index, lpt_msg *call,
                        uint64_t call_id, lpar_pool *p, uint64_t rep_gen) {
  t->kind = TASK_ITEM;
  t->call = lpt_msg_retain(call);
  t->call_id = call_id;
  t->model = lpt_msg_retain(p->model_msg);
  t->model_gen = p->model_gen;
  t->rep_gen = rep_gen;
  t->grads = true;
  t->index = index;
  t->seeded = true;
  t->seed = p->seed_base + (uint64_t)index;
  t->base.worker = j;
  t->base.run = run_task;
  t->win = W;
  t->slot = j;
}

/* lua_pcall(L, nargs, 0, 0) with a count hook that raises "interrupted" once *flag is set (the
 * state's own hook, if any, is put back afterwards). */
static _Thread_local volatile sig_atomic_t *caller_flag;
static void caller_intr_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  if (caller_flag && *caller_flag) luaL_error(L, "interrupted");
}

static int call_interruptible(lua_State *L, int nargs, volatile sig_atomic_t *flag) {
  lua_Hook old = lua_gethook(L);
  int mask = lua_gethookmask(L), count = lua_gethookcount(L);
  volatile sig_atomic_t *old_flag = caller_flag;
  caller_flag = flag;
  if (flag) lua_sethook(L, caller_intr_hook, LUA_MASKCOUNT, HOOK_COUNT);
  int st = lua_pcall(L, nargs, 0, 0);
  caller_flag = old_flag;
  lua_sethook(L, old, mask, count);
  return st;
}

/* With pt._par_partition(true, "adapt"), between windows, in the caller: every
 * PAR_SPLIT_WINDOWS first rounds of 2 slots, compare the slots' mean waits for the other slot's
 * block. The VM's two vCPUs do not always run at the same speed (one ran this workload's Lua
 * code ~35% slower than the other for minutes at a time): the slot that waits more is on the
 * faster core and takes one more grain of rows of every float32 partitioned weight, when the
 * gap is larger than moving a grain would change it (~1 us for the 784x256 layer). The numbers
 * do not depend on the split. */
#define PAR_SPLIT_WINDOWS 64
#define PAR_SPLIT_DEADBAND_NS 1000
#define PAR_SPLIT_MAX 8
static void split_adapt(lpar_pool *p) {
  if (atomic_load(&split_forced) != SPLIT_ADAPT || p->n < 2 || !p->inl) return;
  par_worker *ws[2] = {p->inl, &p->w[1]};
  long wait[2], rounds[2];
  for (int i = 0; i < 2; i++) {
    wait[i] = atomic_load_explicit(&ws[i]->split_wait_ns, memory_order_relaxed);
    rounds[i] = atomic_load_explicit(&ws[i]->split_rounds, memory_order_relaxed);
  }
  long r0 = rounds[0] - p->split_seen_rounds[0], r1 = rounds[1] - p->split_seen_rounds[1];
  if (r0 < PAR_SPLIT_WINDOWS || r1 < PAR_SPLIT_WINDOWS) return;
  /* > 0: slot 0 waits more, its core is the faster */
  long d = (wait[0] - p->split_seen_wait[0]) / r0 - (wait[1] - p->split_seen_wait[1]) / r1;
  if (d > PAR_SPLIT_DEADBAND_NS && p->split_shift < PAR_SPLIT_MAX) p->split_shift++;
  if (d < -PAR_SPLIT_DEADBAND_NS && p->split_shift > -PAR_SPLIT_MAX) p->split_shift--;
  for (int i = 0; i < 2; i++) {
    p->split_seen_wait[i] = wait[i];
    p->split_seen_rounds[i] = rounds[i];
  }
}

/* The first sample and the size of window wi of the windows table at stack index 4. */
static void window_span(lua_State *L, int wi, int *start, int *k) {
  lua_rawgeti(L, 4, 2 * wi + 1);
  lua_rawgeti(L, 4, 2 * wi + 2);
  *start = (int)lua_tointeger(L, -2);
  *k = (int)lua_tointeger(L, -1) - *start + 1;
  lua_pop(L, 2);
}

/* par_windows_impl's pipelining: window wi's samples for slots 1..k-1 are read (after the
 * window before's own, in the same order as without it) and submitted in a window struct of
 * their own while the window before runs, so that each worker goes on to its next sample as
 * soon as it is past its step instead of waiting for the caller to collect the window. The
 * caller's thread, which also reads every sample, is the one every window waits for: it reads
 * them in its slot's first barrier (win_barrier), in time it would spend waiting for the
 * others when it comes first, and in any case before the workers are past their step (a
 * worker that found no task would go to sleep). Not with after_window, which must run before
 * the next samples are read. */
typedef struct ahead_job {
  lua_State *L; /* the caller's state, in par_windows_impl (its stack index 4: the windows) */
  lpar_pool *p;
  lpt_sigint_guard *g;
  sample_ahead *ahead;
  int wi, n;        /* the window to read and submit; the pool's workers */
  step_entry *plan;
  int nplan;
  par_window *W;    /* the window running meanwhile */
  par_task **nxt;   /* wi's tasks go here, by slot */
  lpt_msg *call;
  uint64_t call_id, rep_gen;
  bool pending;     /* to run in W's barrier */
  bool submitted;   /* wi's tasks went out */
  bool pool_failed; /* a task could not go out: the call ends with ferr (or "interrupted") */
  char ferr[PT_ERRMSG_MAX];
} ahead_job;

static void ahead_job_run(ahead_job *a) {
  if (!a->pending) return;
  a->pending = false;
  lua_State *L = a->L;
  if (a->g->ctx->interrupted && *a->g->ctx->interrupted) return;
  int start, k;
  window_span(L, a->wi, &start, &k);
  if (k < 2 || k > a->n) return;
  lpt_xfer_session(L, LPT_SESSION_RESUME); /* checked at this call's first window */
  ahead_read(L, a->ahead, a->wi, start, k);
  lpt_xfer_session(L, LPT_SESSION_END);
  /* a sample that failed is reported by its own window, as if read then */
  if (a->ahead->fail_slot || atomic_load(&pipeline_off)) return;
  par_window *W2 = &a->p->win[a->wi & 1];
  window_setup(W2, k, a->plan, a->nplan, a->W);
  for (int j = 1; j < k && !a->pool_failed; j++) {
    par_task *t = lpt_zalloc(sizeof *t);
    if (!t) {
      a->pool_failed = true;
      snprintf(a->ferr, sizeof a->ferr, "par_by_sample: out of memory");
      break;
    }
    t->args = a->ahead->m[j];
    a->ahead->m[j] = NULL;
    window_task(t, W2, j, start + j, a->call, a->call_id, a->p, a->rep_gen);
    a->nxt[j] = t;
    if (pt_pool_submit(a->g->ctx, a->p->pool, &t->base) != PT_OK) {
      a->nxt[j] = NULL;
      free_task(t);
      a->pool_failed = true;
    }
  }
  ahead_clear(a->ahead);
  a->submitted = true;
  a->p->windows_ahead++;
}

static int par_windows_impl(lua_State *L) {
  luaL_checktype(L, 2, LUA_TFUNCTION);
  /* 3: get(i) -> sample, run in the caller; or, with read_in_workers (9), the dataset, sent to
   * every worker once per call, whose dataset:get(i) each worker calls for its own samples */
  bool read_in_workers = lua_toboolean(L, 9);
  if (!read_in_workers) luaL_checktype(L, 3, LUA_TFUNCTION);
  luaL_checktype(L, 4, LUA_TTABLE);
  int n = (int)luaL_checkinteger(L, 5);
  bool has_after = !lua_isnoneornil(L, 6);
  if (has_after) luaL_checktype(L, 6, LUA_TFUNCTION);
  bool refresh = lua_toboolean(L, 7);
  int nwin = (int)(lua_rawlen(L, 4) / 2);
  lua_settop(L, 8);
  /* 8: the fused step's plan {{param, buf|false, first, lr, momentum, dampening, weight_decay,
   * nesterov, maximize}, ...} (built by par.lua from an optim.SGD) or nil */
  step_entry *plan = NULL;
  int nplan = 0;
  if (!lua_isnil(L, 8)) {
    luaL_checktype(L, 8, LUA_TTABLE);
    nplan = (int)lua_rawlen(L, 8);
    plan = lua_newuserdatauv(L, (size_t)(nplan ? nplan : 1) * sizeof *plan, 0);
    memset(plan, 0, (size_t)(nplan ? nplan : 1) * sizeof *plan);
    lua_replace(L, 7); /* keeps it alive for the call; refresh is read already */
    for (int i = 0; i < nplan; i++) {
      lua_rawgeti(L, 8, i + 1);
      int e = lua_gettop(L);
      luaL_checktype(L, e, LUA_TTABLE);
      lua_rawgeti(L, e, 1);
      plan[i].param = lpt_check_tensor(L, -1);
      lua_rawgeti(L, e, 2);
      plan[i].buf = lua_toboolean(L, -1) ? lpt_check_tensor(L, -1) : NULL;
      lua_rawgeti(L, e, 3);
      plan[i].first = lua_toboolean(L, -1);
      double v[4];
      for (int k = 0; k < 4; k++) {
        lua_rawgeti(L, e, 4 + k);
        v[k] = lua_tonumber(L, -1);
      }
      lua_rawgeti(L, e, 8);
      lua_rawgeti(L, e, 9);
      plan[i].o = (pt_sgd_opts){.lr = v[0], .momentum = v[1], .dampening = v[2],
                                .weight_decay = v[3], .nesterov = lua_toboolean(L, -2),
                                .maximize = lua_toboolean(L, -1)};
      pt_tensor *pa = plan[i].param, *b = plan[i].buf;
      if ((pa->dtype != PT_FLOAT32 && pa->dtype != PT_FLOAT64) || !pt_tensor_is_contiguous(pa))
        return luaL_error(L, "par_by_sample: step: parameter %d must be a contiguous float32 or "
                          "float64 tensor", i + 1);
      if (b && (b->dtype != pa->dtype || pt_tensor_numel(b) != pt_tensor_numel(pa) ||
                !pt_tensor_is_contiguous(b)))
        return luaL_error(L, "par_by_sample: step: momentum buffer of parameter %d does not match it",
                          i + 1);
      if (plan[i].o.momentum != 0 && !b)
        return luaL_error(L, "par_by_sample: step: parameter %d has no momentum buffer", i + 1);
      lua_settop(L, 8);
    }
  }
  lua_settop(L, 8);
  lpar_pool *p = shared_pool(L, n);
  p->seed_base = pt_rng_next(&lpt_ctx(L)->rng); /* one draw per call: the samples' seeds */
  if (!p->inl) {
    par_worker *w = calloc(1, sizeof *w);
    if (!w) return luaL_error(L, "out of memory");
    w->owner = p;
    w->index = 1;
    char err[PT_ERRMSG_MAX];
    if (make_state(p, w, err, sizeof err)) {
      free(w);
      return luaL_error(L, "par_by_sample: cannot start worker 1: %s", err);
    }
    p->inl = w;
  }
  for (int i = 0; i < 2; i++) {
    p->win[i].slots[0] = p->inl;
    for (int j = 1; j < p->n; j++) p->win[i].slots[j] = &p->w[j];
    p->win[i].rep = &p->rep;
  }
  uint64_t rep_gen = replicas_prepare(p, plan, nplan, n); /* 0: no copies */
  /* the model: encoded at every call, and decoded again by the workers only when that differs
   * from what they have (another model, a field set, a mode such as eval(), a tensor
   * replaced): its tensors are shared, but its Lua part is a copy in each worker */
  lua_settop(L, 8);
  static const char *const mname[] = {"model"};
  lpt_msg *mm = encode_or_raise(L, 1, 1, mname, LPT_XFER_GLOBALS, "par_by_sample");
  bool same_model = p->model_ref != LUA_NOREF &&
                    (lua_rawgeti(L, LUA_REGISTRYINDEX, p->model_ref), lua_rawequal(L, -1, 1));
  lua_settop(L, 8);
  if (!refresh && same_model && p->model_msg && lpt_msg_same(mm, p->model_msg)) {
    lpt_msg_release(mm);
  } else {
    lpt_msg_release(p->model_msg);
    p->model_msg = mm;
    p->model_gen++;
    if (!same_model) {
      if (p->model_ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, p->model_ref);
      lua_pushvalue(L, 1);
      p->model_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    }
  }
  /* 9: what the call must undo, closed at every exit (par_call_end) */
  par_call *c = par_call_push(L, p);
  static const char *const fname[] = {"the closure"};
  lpt_msg *call = c->call = encode_or_raise(L, 2, 1, fname, LPT_XFER_GLOBALS | LPT_XFER_CACHE_FN,
                                            "par_by_sample");
  uint64_t call_id = ++p->next_call;
  lpt_msg *dmsg = NULL;
  if (read_in_workers) {
    static const char *const dname[] = {"dataset"};
    dmsg = c->dmsg = encode_or_raise(L, 3, 1, dname, LPT_XFER_GLOBALS, "par_by_sample");
  }
  lua_settop(L, 9);
  int total = 0; /* samples in all windows: the losses' table is made at its size once */
  for (int wi = 0; wi < nwin; wi++) {
    int first, span;
    window_span(L, wi, &first, &span);
    if (span > 0 && span <= n) total += span;
  }
  lua_createtable(L, total, 0); /* 10: all losses */
  int nloss = 0;
  /* tasks[0..n): the current window's, by slot; tasks[n..2n): the next window's, submitted
   * ahead (cur and nxt swap after every window) */
  par_task **tasks = c->tasks = calloc(2 * (size_t)n, sizeof *tasks);
  if (!tasks) return luaL_error(L, "out of memory");
  c->ntasks = 2 * n;
  sample_ahead *ahead = &c->ahead;
  par_task **cur = tasks, **nxt = tasks + n;
  lpt_sigint_guard *g = &c->g;
  ahead_job job = {.L = L, .p = p, .g = g, .ahead = ahead, .n = n, .plan = plan, .nplan = nplan,
                   .call = call, .call_id = call_id, .rep_gen = rep_gen};
  int ahead_wi = -1; /* the window whose worker tasks were submitted ahead, or -1 */
  /* Ctrl-C's guard stays from the first window to the last (its three sigaction calls per
   * window were 1-3 us of every ~35 us window on a VM, and a Ctrl-C between two windows went to
   * the host's handler and was lost to this call); the after_window hook runs with a count hook
   * that raises "interrupted" when the guard's flag is set, as the workers' states do. */
  lpt_sigint_guard_begin(L, g);
  c->guarded = true;
  p->busy = true; /* until par_call_end */
  c->windows = true;
  for (int wi = 0; wi < nwin; wi++) {
    /* windows.started: how many windows began, for par.lua to leave the rest to the next
     * call when this one fails */
    lua_pushinteger(L, wi + 1);
    lua_setfield(L, 4, "started");
    int start, k;
    window_span(L, wi, &start, &k);
    if (k < 1 || k > n) {
      return luaL_error(L, "par_by_sample: bad window %d..%d for %d workers", start, start + k - 1, n);
    }
    par_window *W = &p->win[wi & 1];
    bool early = ahead_wi == wi; /* its workers run already */
    if (!early) window_setup(W, k, plan, nplan, NULL);
    W->plan_has_grads = true;
    for (int q = 0; q < nplan; q++) {
      pt_tensor *pa = plan[q].param, *gr = pa->grad;
      W->plan_has_grads = W->plan_has_grads && gr;
      plan[q].grad_zero = gr && gr == plan[q].zeroed &&
                          atomic_load(&gr->storage->version) == plan[q].zeroed_version;
      if (gr && (gr->dtype != pa->dtype || pt_tensor_numel(gr) != pt_tensor_numel(pa) ||
                 !pt_tensor_is_contiguous(gr))) {
        return luaL_error(L, "par_by_sample: step: the gradient of parameter %d is not a contiguous "
                          "tensor of its dtype and size", q + 1);
      }
    }
    if (rep_gen) {
      /* a window submitted ahead follows a window that succeeded, within this call and without
       * after_window: its copies took every step their parameters took, and its workers may
       * use them already */
      if (!early) replicas_sync(&p->rep, plan, nplan);
      p->rep.stale = true; /* until this window's step is known to have run in every slot */
    }
    /* Each worker's sample is fetched, encoded and submitted before the next is fetched, the
     * caller's own sample (slot 0) last: the workers start while the caller still prepares.
     * A sample that cannot be read or sent leaves its slot to a placeholder task that fails
     * the window (the others must still meet it at the window's barriers). */
    char ferr[PT_ERRMSG_MAX];
    ferr[0] = '\0';
    /* the modules are checked once per call (and after every after_window hook, which runs
     * the user's code): a module that dataset:get loads during the call is indexed from the
     * next call on, as one loaded during a window's reads always was from the next window */
    lpt_xfer_session(L, wi == 0 || has_after ? LPT_SESSION_CHECK : LPT_SESSION_RESUME);
    bool pool_failed = false;
    for (int jj = early ? k : 1; jj <= k; jj++) {
      int j = jj % k; /* 1, 2, ..., k-1, then 0 */
      par_task *t = lpt_zalloc(sizeof *t);
      if (!t) {
        snprintf(ferr, sizeof ferr, "par_by_sample: out of memory");
        t = NULL;
      } else if (dmsg) { /* the worker reads it */
        t->data = lpt_msg_retain(dmsg);
        t->data_gen = call_id;
      } else if (!ferr[0] || j == 0) {
        /* after a failure only slot 0 is still read: its sample comes first, and the first
         * failure in sample order is the one reported */
        char e2[PT_ERRMSG_MAX];
        e2[0] = '\0';
        lpt_msg *m;
        if (j > 0 && ahead->wi == wi) { /* read during the last window */
          m = ahead->m[j];
          ahead->m[j] = NULL;
          if (!m)
            snprintf(e2, sizeof e2, "%s", ahead->fail_slot == j ? ahead->err : "par_by_sample: a sample read ahead is missing");
        } else if (j == 0) {
          m = read_sample_to(L, p->inl->L, start, &t->inline_arg, e2, sizeof e2);
        } else {
          m = read_sample(L, start + j, e2, sizeof e2);
        }
        if (t->inline_arg) {
          if (ferr[0]) t->inline_arg = false; /* the window fails anyway */
        } else if (!m) { /* slot 0's sample comes first in sample order: its failure is reported */
          if (!ferr[0] || j == 0) snprintf(ferr, sizeof ferr, "%s", e2);
        } else if (ferr[0]) {
          lpt_msg_release(m); /* the window fails anyway */
        } else {
          t->args = m;
        }
      }
      if (!t) { /* no task for this slot: nothing can stand in for it */
        pool_failed = true;
        break;
      }
      window_task(t, W, j, start + j, call, call_id, p, j > 0 ? rep_gen : 0);
      cur[j] = t;
      if (j > 0 && pt_pool_submit(g->ctx, p->pool, &t->base) != PT_OK) {
        cur[j] = NULL;
        free_task(t);
        pool_failed = true;
        break;
      }
    }
    ahead_clear(ahead);
    lpt_xfer_session(L, LPT_SESSION_END);
    if (pool_failed) /* a worker may wait for a slot that never comes: par_call_end stops it */
      return luaL_error(L, "%s", ferr[0] ? ferr : "interrupted");
    /* sample 1 of the window runs right here, on the inline worker's state; the next
     * window's samples for the workers are read in its barrier (ahead_job) */
    job.pending = !ferr[0] && !has_after && !dmsg && wi + 1 < nwin;
    job.submitted = false;
    job.wi = wi + 1;
    job.W = W;
    job.nxt = nxt;
    W->chore = job.pending ? &job : NULL;
    p->inl->intr = g->ctx->interrupted;
    cur[0]->base.worker = 0;
    run_task(&cur[0]->base, 0, p->inl);
    p->inl->intr = NULL;
    W->chore = NULL;
    job.pending = false; /* not run (the window failed before its barrier): the next reads */
    if (job.submitted) ahead_wi = wi + 1;
    if (job.pool_failed) /* a worker may wait for a slot that never comes: par_call_end stops it */
      return luaL_error(L, "%s", job.ferr[0] ? job.ferr : "interrupted");
    for (int j = 1; j < k; j++)
      while (!cur[j]->collected) {
        par_task *d = wait_one(p, g, tasks, 2 * n); /* may be a task of the next window */
        if (!d) return luaL_error(L, "interrupted");
        d->collected = true;
      }
    /* A slot that saw Ctrl-C cancelled the pool (win_barrier, coop_linear) and every task of
     * the window has come back without wait_one noticing: re-arm the pool, or every later call
     * would stop at once. Some slots may have stepped and others not: the copies are stale. */
    if (pt_pool_cancelled(p->pool)) {
      par_call_end(L, c); /* drains first: uncancelled after */
      pt_pool_uncancel(p->pool);
      return luaL_error(L, "interrupted");
    }
    /* A Ctrl-C that came once every sample of the window had finished (nothing was left to
     * notice it) stops the call after this window's bookkeeping, rather than at some later
     * window, or never when this was the last one. */
    bool late_intr = g->ctx->interrupted && *g->ctx->interrupted;
    if (ferr[0]) { /* a sample could not be read or sent: the window ran without a step */
      return luaL_error(L, "%s", ferr);
    }
    /* the first failure in sample order fails the call */
    for (int j = 0; j < k; j++) {
      par_task *t = cur[j];
      if (t->ok && !t->base.cancelled) continue;
      char buf[2 * PT_ERRMSG_MAX];
      if (t->base.cancelled) {
        snprintf(buf, sizeof buf, "interrupted");
      } else {
        int nr = push_results(L, t->result);
        const char *msg = nr >= 1 ? lua_tostring(L, -nr) : "(error)";
        const char *tb = nr >= 2 ? lua_tostring(L, -nr + 1) : "";
        snprintf(buf, sizeof buf, "par_by_sample: sample %d failed on worker %d: %s%s%s",
                 t->index, j + 1, msg ? msg : "(error)", tb && *tb ? "\n" : "", tb ? tb : "");
      }
      lua_pushstring(L, buf);
      return lua_error(L);
    }
    W->plan = NULL;
    W->nplan = 0;
    for (int q = 0; q < nplan; q++) {
      step_entry *e = &plan[q];
      if (!e->param->grad) continue;
      unsigned v = atomic_fetch_add(&e->param->storage->version, 1) + 1;
      if (e->rep >= 0) p->rep.version[e->rep] = v; /* the copies took the same step */
      if (!e->grad_zero) { /* zeroed now: later windows need not read it */
        e->zeroed = e->param->grad;
        e->zeroed_version = atomic_fetch_add(&e->param->grad->storage->version, 1) + 1;
      }
      if (e->buf) {
        unsigned bv = atomic_fetch_add(&e->buf->storage->version, 1) + 1;
        if (e->rep >= 0) {
          p->rep.mom_src[e->rep] = e->buf;
          p->rep.mom_version[e->rep] = bv;
        }
      }
      if (e->first) { /* tell par.lua the buffer is in use now */
        e->first = false;
        lua_rawgeti(L, 8, q + 1);
        lua_pushboolean(L, 0);
        lua_rawseti(L, -2, 3);
        lua_pop(L, 1);
      }
    }
    if (rep_gen) p->rep.stale = false;
    if (W->coop && k == 2) split_adapt(p);
    int wl = 0; /* this window's losses, for after_window only */
    if (has_after) {
      lua_createtable(L, k, 0);
      wl = lua_gettop(L);
    }
    for (int j = 0; j < k; j++) {
      int nr = cur[j]->result_tensor ? push_tensor_result(L, cur[j]->result_tensor)
                                      : push_results(L, cur[j]->result);
      if (nr < 0) {
        char buf[PT_ERRMSG_MAX];
        snprintf(buf, sizeof buf, "par_by_sample: result of sample %d: %s", cur[j]->index,
                 lua_tostring(L, -1));
        return luaL_error(L, "%s", buf);
      }
      if (nr == 0) lua_pushboolean(L, 0), nr = 1; /* keep the list dense */
      lua_pop(L, nr - 1);
      if (wl) {
        lua_pushvalue(L, -1);
        lua_rawseti(L, wl, j + 1);
      }
      lua_rawseti(L, 10, ++nloss);
      free_task(cur[j]);
      cur[j] = NULL;
    }
    if (late_intr) {
      return luaL_error(L, "interrupted");
    }
    if (has_after) {
      lua_pushvalue(L, 6);
      lua_pushvalue(L, wl);
      if (call_interruptible(L, 1, g->ctx->interrupted) != LUA_OK) {
        const char *m = lua_tostring(L, -1);
        if (m && strstr(m, "attempt to yield across a C-call boundary")) /* say which function */
          return luaL_error(L, "par_by_sample: after_window cannot yield (it runs inside the call, "
                               "between its windows): %s", m);
        return lua_error(L);
      }
    }
    lua_settop(L, 10);
    par_task **swap = cur;
    cur = nxt;
    nxt = swap;
  }
  return 1; /* the losses; returning closes c */
}

/* The dispatcher owns the thread budget for the whole call: the caller's own ops (the
 * after_window hook's optimizer step) run on one thread too, so no intra-op pool spins against
 * the workers (DESIGN.md: hand the budget to BLAS or to workers, never both). */
static int l_par_windows(lua_State *L) {
  pt_ctx *ctx = lpt_ctx(L);
  int old = ctx->intra_threads;
  ctx->intra_threads = 1;
  lua_pushcfunction(L, par_windows_impl);
  lua_insert(L, 1);
  int st = lua_pcall(L, lua_gettop(L) - 1, 1, 0);
  ctx->intra_threads = old;
  if (st != LUA_OK) return lua_error(L);
  return 1;
}

/* --- misc --- */

static int l_runner(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "partrain.runner");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "new");
  lua_insert(L, 1);
  lua_pop(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

typedef struct sigint_later {
  double seconds;
} sigint_later;

static void *sigint_thread(void *arg) {
  sigint_later *s = arg;
  struct timespec ts = {(time_t)s->seconds, (long)((s->seconds - (double)(time_t)s->seconds) * 1e9)};
  free(s);
  nanosleep(&ts, NULL);
  kill(getpid(), SIGINT);
  return NULL;
}

static int l_test_sigint(lua_State *L) {
  double sec = luaL_checknumber(L, 1);
  sigint_later *s = malloc(sizeof *s);
  if (!s) return luaL_error(L, "out of memory");
  s->seconds = sec;
  pthread_t th;
  if (pthread_create(&th, NULL, sigint_thread, s)) {
    free(s);
    return luaL_error(L, "cannot start a thread");
  }
  pthread_detach(th);
  return 0;
}

/* For A/B timings: pt._par_partition(false) copies large weights per worker as small ones,
 * pt._par_partition(true) partitions them again (the default); returns the setting before. A
 * second argument sets the shift of 2-slot float32 blocks (part_row; none: 0, even blocks) or
 * "adapt" (split_adapt moves it). */
static int l_par_partition(lua_State *L) {
  bool before = !atomic_load(&partition_off);
  if (!lua_isnoneornil(L, 1)) atomic_store(&partition_off, !lua_toboolean(L, 1));
  if (lua_isnoneornil(L, 2)) {
    atomic_store(&split_forced, 0);
  } else if (lua_type(L, 2) == LUA_TSTRING) {
    luaL_argcheck(L, strcmp(lua_tostring(L, 2), "adapt") == 0, 2, "a shift (-8..8) or \"adapt\"");
    atomic_store(&split_forced, SPLIT_ADAPT);
  } else {
    lua_Integer shift = luaL_checkinteger(L, 2);
    luaL_argcheck(L, shift >= -PAR_SPLIT_MAX && shift <= PAR_SPLIT_MAX, 2, "shift out of range");
    atomic_store(&split_forced, (int)shift);
  }
  lua_pushboolean(L, before);
  return 1;
}

/* For A/B timings and the specs: pt._par_pipeline(false) submits each window's tasks only
 * after the window before was collected; true (the default) submits them ahead. */
static int l_par_pipeline(lua_State *L) {
  bool before = !atomic_load(&pipeline_off);
  if (!lua_isnoneornil(L, 1)) atomic_store(&pipeline_off, !lua_toboolean(L, 1));
  lua_pushboolean(L, before);
  return 1;
}

/* For the specs: how many batch-1 products of partitioned weights par_by_sample's workers made
 * in full rounds and alone, summed over the shared pool's workers, and how many windows were
 * submitted ahead, since the pool started. */
static int l_coop_stats(lua_State *L) {
  long full = 0, alone = 0, ahead = 0, shift = 0;
  if (lua_getfield(L, LUA_REGISTRYINDEX, SHARED_POOL_KEY) == LUA_TUSERDATA) {
    lpar_pool *p = *(lpar_pool **)lua_touserdata(L, -1);
    if (p && !p->closed) ahead = p->windows_ahead, shift = p->split_shift;
    for (int j = 0; p && !p->closed && j < p->n; j++) { /* slot 0 runs on the inline worker */
      const par_worker *w = j ? &p->w[j] : p->inl;
      if (!w) continue;
      full += w->coop_full;
      alone += w->coop_alone;
    }
  }
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, full);
  lua_setfield(L, -2, "full");
  lua_pushinteger(L, alone);
  lua_setfield(L, -2, "alone");
  lua_pushinteger(L, ahead);
  lua_setfield(L, -2, "ahead");
  lua_pushinteger(L, shift);
  lua_setfield(L, -2, "shift");
  return 1;
}

static int l_worker_id(lua_State *L) {
  lua_pushinteger(L, lpt_get_state(L)->worker_id);
  return 1;
}

/* pt._par_bn_defer(num_batches_tracked, momentum) -> whether batch norm's next update of its
 * running statistics is deferred to the window's end (a par_by_sample sample runs here); when
 * so, num_batches_tracked goes with it (counted then, and momentum nil takes its inverse) */
static int l_par_bn_defer(lua_State *L) {
  par_worker *w = worker_of(L);
  if (!w || lpt_ctx(L)->running_defer != worker_defer_stats) return lua_pushboolean(L, 0), 1;
  pt_tensor *nbt = lua_isnoneornil(L, 1) ? NULL : lpt_check_tensor(L, 1);
  pt_tensor_release(w->bn_nbt);
  w->bn_nbt = nbt ? pt_tensor_retain(nbt) : NULL;
  w->bn_cumulative = lua_isnoneornil(L, 2) || lua_toboolean(L, 2) == 0;
  lua_pushboolean(L, 1);
  return 1;
}

static const luaL_Reg pool_methods[] = {
    {"submit", l_pool_submit},
    {"submit_as", l_pool_submit_as}, {"next", l_pool_next},   {"pending", l_pool_pending},
    {"size", l_pool_size},     {"close", l_pool_close}, {"closed", l_pool_closed},
    {"cancel", l_pool_cancel},
    {NULL, NULL},
};

static const luaL_Reg functions[] = {
    {"_Pool", l_pool_new},
    {"_pool_map", l_pool_map},
    {"_par_windows", l_par_windows},
    {"_par_test_sigint", l_test_sigint},
    {"_par_coop_stats", l_coop_stats},
    {"_par_partition", l_par_partition},
    {"_par_pipeline", l_par_pipeline},
    {"worker_id", l_worker_id},
    {"_par_bn_defer", l_par_bn_defer},
    {"Runner", l_runner},
    {NULL, NULL},
};

static const char *const docs[] = {
    "_pool_map", "pt._pool_map(fn, arglists[, {n_workers=}]) -> results\n  fn(table.unpack(arglists[i])) on the worker pool; results in input order; a failed\n  item's slot holds a pt.ActionError {message, traceback, index, worker}. Never raises for\n  item failures.",
    "_Pool", "pt._Pool(n) -> a pool of n worker threads, each with its own Lua state.\n  pool:submit(worker, fn, ...) -> id; pool:next() -> id, worker, ok, results.../message, traceback;\n  pool:pending(); pool:size(); pool:cancel() (stops the tasks still out); pool:close().",
    "_par_bn_defer", "pt._par_bn_defer(num_batches_tracked, momentum) -> whether batch norm's next update of\n  its running statistics waits for the end of the par_by_sample window running here (applied then\n  in sample order); nn's BatchNorm asks before each training forward.",
    "_par_coop_stats", "pt._par_coop_stats() -> {full=, alone=, ahead=, shift=}: batch-1 products of\n  partitioned weights that par_by_sample's workers made together and alone, windows submitted\n  ahead, and the adapted shift of 2 workers' row blocks (pt._par_partition(true, \"adapt\"); for\n  the specs and benches).",
    "_par_partition", "pt._par_partition([on[, shift]]) -> was_on: with false, par_by_sample's fused step copies\n  large weights per worker like small ones instead of splitting them by rows; shift (-8..8,\n  default 0: even blocks) moves the boundary of 2 workers' float32 blocks by 16-row steps, and\n  \"adapt\" has it follow the cores' speeds (for A/B timings and the specs).",
    "_par_pipeline", "pt._par_pipeline([on]) -> was_on: with false, par_by_sample submits a window's tasks only\n  once the window before was collected instead of ahead of it (for A/B timings).",
    "worker_id", "pt.worker_id() -> 0 in the main state, 1..n inside a dispatcher worker.",
    "Runner", "pt.Runner{devices=, ordered=, cfg=, producer_init=, producer_work=, producer_end=,\n  consumer_init=, consumer_work=, consumer_end=} -> runner; runner(list_or_iterator) -> consumer_end's value;\n  runner:close(). See partrain.runner.",
    NULL, NULL,
};

void lpt_open_par(lua_State *L) {
  if (luaL_newmetatable(L, POOL_MT)) {
    lua_pushcfunction(L, pool_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, pool_gc);
    lua_setfield(L, -2, "__close");
    lua_newtable(L);
    luaL_setfuncs(L, pool_methods, 0);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  if (luaL_newmetatable(L, PAR_CALL_MT)) {
    lua_pushcfunction(L, par_call_close);
    lua_setfield(L, -2, "__close");
  }
  lua_pop(L, 1);
  if (luaL_newmetatable(L, ACTION_ERROR_KEY)) {
    lua_pushcfunction(L, action_error_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushliteral(L, "ActionError");
    lua_setfield(L, -2, "__name");
  }
  lua_getfield(L, LUA_REGISTRYINDEX, LPT_MODULE);
  lua_pushvalue(L, -2);
  lua_setfield(L, -2, "ActionError");
  lua_pushinteger(L, PAR_MAX_SLOTS); /* par.lua and inbatch.lua name the limit in their words */
  lua_setfield(L, -2, "_par_max_workers");
  lua_pop(L, 2);
  lpt_add_functions(L, functions);
  lpt_add_docs(L, 0, docs);
}
