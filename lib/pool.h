/* A generic thread pool: n worker threads, each with its own FIFO of targeted tasks plus one
 * shared FIFO for tasks any worker may take, a bounded number of outstanding tasks, a queue of
 * completed tasks for the submitter, cancellation, and waits that can be interrupted.
 *
 * Threads know nothing about Lua: the owner gives a worker_init hook (run on the worker's own
 * thread before it takes tasks, e.g. to create a lua_State) and each task's run function.
 *
 * One submitting thread per pool (the owner): pt_pool_submit / pt_pool_wait are not meant to be
 * called concurrently from several threads (they are safe, but completions are not routed).
 * Every wait is a timed wait that polls ctx->interrupted (when set) and the pool's cancel flag,
 * so a Ctrl-C never leaves the submitter blocked. */
#ifndef PT_POOL_H
#define PT_POOL_H

#include "pt_core.h"

typedef struct pt_pool pt_pool;

typedef struct pt_pool_task {
  struct pt_pool_task *next; /* queue link, owned by the pool while queued */
  int worker;                /* in: 0-based worker or -1 for any; out: the worker that ran it */
  bool cancelled;            /* out: the pool was cancelled before the task could start */
  /* Runs on the worker thread. worker is 0-based; worker_data is what worker_init gave. */
  void (*run)(struct pt_pool_task *task, int worker, void *worker_data);
} pt_pool_task;

typedef struct pt_pool_config {
  int n_workers;      /* >= 1 */
  int max_pending;    /* submitted but not yet collected by pt_pool_wait; <= 0: 4 per worker */
  /* Runs first on each worker's thread; on failure writes a message into err (errlen bytes)
   * and returns non-zero: pt_pool_create then fails with that message. */
  int (*worker_init)(void *userdata, int worker, void **worker_data, char *err, size_t errlen);
  /* Runs last on each worker's thread (also after a failed init of another worker). */
  void (*worker_fini)(void *userdata, int worker, void *worker_data);
  void *userdata;
} pt_pool_config;

/* Starts the threads and waits until every worker_init has returned. */
pt_status pt_pool_create(pt_ctx *ctx, const pt_pool_config *cfg, pt_pool **out);

/* Stops the workers after their current task, runs worker_fini on each and joins them. Tasks
 * still queued are marked cancelled and left on the completion queue; `discard` (may be NULL)
 * receives every task not yet collected. NULL is fine. */
void pt_pool_destroy(pt_pool *pool, void (*discard)(pt_pool_task *task));

int pt_pool_size(const pt_pool *pool);

/* Queue a task (task->worker: 0-based worker or -1 for any). Blocks while max_pending tasks
 * are outstanding; fails with PT_EINTR when *ctx->interrupted becomes set or the pool is
 * cancelled while blocked (the task is then not queued). */
pt_status pt_pool_submit(pt_ctx *ctx, pt_pool *pool, pt_pool_task *task);

/* Take one completed task (in completion order). Fails with PT_EINTR when interrupted, with
 * PT_ESTATE when nothing is outstanding. */
pt_status pt_pool_wait(pt_ctx *ctx, pt_pool *pool, pt_pool_task **done);

/* Number of submitted tasks not yet collected. */
int pt_pool_pending(const pt_pool *pool);

/* Cancellation: queued tasks are completed as cancelled without running, and running tasks
 * can poll pt_pool_cancelled() to stop early. pt_pool_uncancel() re-arms the pool once the
 * owner has collected everything. */
void pt_pool_cancel(pt_pool *pool);
void pt_pool_uncancel(pt_pool *pool);
bool pt_pool_cancelled(const pt_pool *pool);

#endif
