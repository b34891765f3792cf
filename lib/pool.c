/* See pool.h. One mutex guards all queues; each worker sleeps on its own condition variable so a
 * targeted task wakes exactly its worker, and the submitter sleeps on `done_cond`. */
#include "pool.h"

#include "parallel.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POOL_POLL_NS 20000000L /* 20 ms between checks of the interrupt flag */
/* Before sleeping on a condition variable, a waiter spins this many times (a few tens of
 * microseconds) watching a counter: handing work to a sleeping thread costs a futex wake-up,
 * which on virtual machines can take longer than a whole per-sample step. */
#define POOL_SPIN 3000

typedef struct task_queue {
  pt_pool_task *head, *tail;
} task_queue;

typedef struct pool_worker {
  pt_pool *pool;
  int index;
  pthread_t thread;
  bool started;
  pthread_cond_t cond;
  task_queue queue; /* tasks for this worker only */
  bool idle;        /* waiting for work */
  void *data;       /* from worker_init */
  int init_status;  /* 0 ok, 1 failed, -1 not finished */
  char init_err[PT_ERRMSG_MAX];
} pool_worker;

struct pt_pool {
  pt_pool_config cfg;
  int n;
  pthread_mutex_t mu;
  pthread_cond_t done_cond;
  task_queue shared; /* tasks for any worker */
  task_queue done;
  int pending; /* submitted, not collected */
  int max_pending;
  bool stop;
  atomic_bool cancel;
  atomic_uint submits;     /* bumped by every submit: idle workers spin on it */
  atomic_uint completions; /* bumped by every completion: the submitter spins on it */
  pool_worker *workers;
};

static void q_push(task_queue *q, pt_pool_task *t) {
  t->next = NULL;
  if (q->tail)
    q->tail->next = t;
  else
    q->head = t;
  q->tail = t;
}

static pt_pool_task *q_pop(task_queue *q) {
  pt_pool_task *t = q->head;
  if (t) {
    q->head = t->next;
    if (!q->head) q->tail = NULL;
    t->next = NULL;
  }
  return t;
}

static void deadline_in(struct timespec *ts, long ns) {
  clock_gettime(CLOCK_REALTIME, ts);
  ts->tv_nsec += ns;
  while (ts->tv_nsec >= 1000000000L) {
    ts->tv_nsec -= 1000000000L;
    ts->tv_sec++;
  }
}

static void *worker_main(void *arg) {
  pool_worker *w = arg;
  pt_pool *p = w->pool;
  void *data = NULL;
  int rc = 0;
  if (p->cfg.worker_init) rc = p->cfg.worker_init(p->cfg.userdata, w->index, &data, w->init_err,
                                                  sizeof w->init_err);
  pthread_mutex_lock(&p->mu);
  w->data = data;
  w->init_status = rc ? 1 : 0;
  pthread_cond_broadcast(&p->done_cond);
  pthread_mutex_unlock(&p->mu);
  for (;;) {
    pthread_mutex_lock(&p->mu);
    pt_pool_task *t;
    bool spun = false;
    for (;;) {
      t = q_pop(&w->queue);
      if (!t) t = q_pop(&p->shared);
      if (t || p->stop) break;
      if (!spun) { /* new work usually comes soon: watch for it briefly before sleeping */
        spun = true;
        unsigned seen = atomic_load(&p->submits);
        pthread_mutex_unlock(&p->mu);
        for (int i = 1; i <= POOL_SPIN && atomic_load(&p->submits) == seen; i++) {
          pt_cpu_relax();
          if ((i & 127) == 0) sched_yield(); /* the submitter may share this core */
        }
        pthread_mutex_lock(&p->mu);
        continue;
      }
      w->idle = true;
      pthread_cond_wait(&w->cond, &p->mu);
      w->idle = false;
      spun = false;
    }
    if (!t) { /* stop requested and nothing left */
      pthread_mutex_unlock(&p->mu);
      break;
    }
    bool cancelled = atomic_load(&p->cancel);
    pthread_mutex_unlock(&p->mu);
    t->worker = w->index;
    t->cancelled = cancelled || rc != 0;
    if (!t->cancelled) t->run(t, w->index, data);
    pthread_mutex_lock(&p->mu);
    q_push(&p->done, t);
    atomic_fetch_add(&p->completions, 1);
    pthread_cond_broadcast(&p->done_cond);
    pthread_mutex_unlock(&p->mu);
  }
  if (p->cfg.worker_fini) p->cfg.worker_fini(p->cfg.userdata, w->index, data);
  return NULL;
}

static void stop_and_join(pt_pool *p) {
  pthread_mutex_lock(&p->mu);
  p->stop = true;
  for (int i = 0; i < p->n; i++) pthread_cond_signal(&p->workers[i].cond);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->n; i++)
    if (p->workers[i].started) pthread_join(p->workers[i].thread, NULL);
}

static void pool_free(pt_pool *p) {
  for (int i = 0; i < p->n; i++) pthread_cond_destroy(&p->workers[i].cond);
  pthread_cond_destroy(&p->done_cond);
  pthread_mutex_destroy(&p->mu);
  free(p->workers);
  free(p);
}

pt_status pt_pool_create(pt_ctx *ctx, const pt_pool_config *cfg, pt_pool **out) {
  *out = NULL;
  if (cfg->n_workers < 1 || cfg->n_workers > 1024)
    return pt_fail(ctx, PT_EARG, "pool: number of workers must be between 1 and 1024, got %d",
                   cfg->n_workers);
  pt_pool *p = calloc(1, sizeof *p);
  pool_worker *ws = calloc((size_t)cfg->n_workers, sizeof *ws);
  if (!p || !ws) {
    free(p);
    free(ws);
    return pt_fail(ctx, PT_ENOMEM, "pool: out of memory");
  }
  p->cfg = *cfg;
  p->n = cfg->n_workers;
  p->workers = ws;
  p->max_pending = cfg->max_pending > 0 ? cfg->max_pending : 4 * cfg->n_workers;
  atomic_init(&p->cancel, false);
  atomic_init(&p->submits, 0);
  atomic_init(&p->completions, 0);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->done_cond, NULL);
  for (int i = 0; i < p->n; i++) {
    ws[i].pool = p;
    ws[i].index = i;
    ws[i].init_status = -1;
    pthread_cond_init(&ws[i].cond, NULL);
  }
  pt_status st = PT_OK;
  for (int i = 0; i < p->n; i++) {
    int rc = pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]);
    if (rc) {
      st = pt_fail(ctx, PT_ENOMEM, "pool: cannot start worker thread %d: %s", i + 1, strerror(rc));
      pthread_mutex_lock(&p->mu);
      for (int j = i; j < p->n; j++) ws[j].init_status = 1;
      pthread_mutex_unlock(&p->mu);
      break;
    }
    ws[i].started = true;
  }
  /* wait for every init (not interruptible: creating a state is short) */
  pthread_mutex_lock(&p->mu);
  for (;;) {
    bool all = true;
    for (int i = 0; i < p->n; i++)
      if (ws[i].init_status < 0) all = false;
    if (all) break;
    pthread_cond_wait(&p->done_cond, &p->mu);
  }
  pthread_mutex_unlock(&p->mu);
  if (!st)
    for (int i = 0; i < p->n; i++)
      if (ws[i].started && ws[i].init_status) {
        st = pt_fail(ctx, PT_ESTATE, "pool: worker %d failed to start: %s", i + 1, ws[i].init_err);
        break;
      }
  if (st) {
    stop_and_join(p);
    pool_free(p);
    return st;
  }
  *out = p;
  return PT_OK;
}

void pt_pool_destroy(pt_pool *p, void (*discard)(pt_pool_task *task)) {
  if (!p) return;
  atomic_store(&p->cancel, true); /* queued tasks complete as cancelled */
  stop_and_join(p);
  /* workers drain every queue before they stop, so everything is on `done` now */
  pt_pool_task *t;
  while ((t = q_pop(&p->done)))
    if (discard) discard(t);
  pool_free(p);
}

int pt_pool_size(const pt_pool *p) { return p->n; }

static bool interrupted(const pt_ctx *ctx) { return ctx && ctx->interrupted && *ctx->interrupted; }

pt_status pt_pool_submit(pt_ctx *ctx, pt_pool *p, pt_pool_task *t) {
  if (t->worker >= p->n)
    return pt_fail(ctx, PT_EARG, "pool: worker %d out of range (pool has %d workers)",
                   t->worker + 1, p->n);
  pthread_mutex_lock(&p->mu);
  while (p->pending >= p->max_pending) {
    if (interrupted(ctx) || atomic_load(&p->cancel)) {
      pthread_mutex_unlock(&p->mu);
      return pt_fail(ctx, PT_EINTR, "interrupted");
    }
    struct timespec ts;
    deadline_in(&ts, POOL_POLL_NS);
    pthread_cond_timedwait(&p->done_cond, &p->mu, &ts);
  }
  p->pending++;
  t->cancelled = false;
  atomic_fetch_add(&p->submits, 1);
  if (t->worker >= 0) {
    q_push(&p->workers[t->worker].queue, t);
    pthread_cond_signal(&p->workers[t->worker].cond);
  } else {
    q_push(&p->shared, t);
    /* wake one idle worker; a busy one will find the task when it finishes */
    for (int i = 0; i < p->n; i++)
      if (p->workers[i].idle) {
        pthread_cond_signal(&p->workers[i].cond);
        break;
      }
  }
  pthread_mutex_unlock(&p->mu);
  return PT_OK;
}

pt_status pt_pool_wait(pt_ctx *ctx, pt_pool *p, pt_pool_task **done) {
  *done = NULL;
  pthread_mutex_lock(&p->mu);
  if (p->pending == 0) {
    pthread_mutex_unlock(&p->mu);
    return pt_fail(ctx, PT_ESTATE, "pool: no task is outstanding");
  }
  pt_pool_task *t;
  bool spun = false;
  while (!(t = q_pop(&p->done))) {
    if (!spun) { /* completions usually come soon: watch briefly before sleeping */
      spun = true;
      unsigned seen = atomic_load(&p->completions);
      pthread_mutex_unlock(&p->mu);
      for (int i = 1; i <= POOL_SPIN && atomic_load(&p->completions) == seen && !interrupted(ctx); i++) {
        pt_cpu_relax();
        if ((i & 127) == 0) sched_yield(); /* the worker may share this core */
      }
      pthread_mutex_lock(&p->mu);
      continue;
    }
    if (interrupted(ctx)) {
      pthread_mutex_unlock(&p->mu);
      return pt_fail(ctx, PT_EINTR, "interrupted");
    }
    struct timespec ts;
    deadline_in(&ts, POOL_POLL_NS);
    pthread_cond_timedwait(&p->done_cond, &p->mu, &ts);
  }
  p->pending--;
  pthread_cond_broadcast(&p->done_cond); /* a blocked submitter may go on */
  pthread_mutex_unlock(&p->mu);
  *done = t;
  return PT_OK;
}

int pt_pool_pending(const pt_pool *p) {
  pthread_mutex_lock((pthread_mutex_t *)&p->mu);
  int n = p->pending;
  pthread_mutex_unlock((pthread_mutex_t *)&p->mu);
  return n;
}

void pt_pool_cancel(pt_pool *p) { atomic_store(&p->cancel, true); }
void pt_pool_uncancel(pt_pool *p) { atomic_store(&p->cancel, false); }
bool pt_pool_cancelled(const pt_pool *p) { return atomic_load(&p->cancel); }
