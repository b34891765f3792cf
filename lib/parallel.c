/* See parallel.h. A small persistent pool: helper threads sleep on a condition variable and
 * wake for each region; the calling thread runs chunk 0 itself. */
#include "parallel.h"

#include "blas.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


#define MAX_THREADS 64

typedef struct region {
  pt_parallel_fn fn;
  void *arg;
  int64_t n;
  int nthreads;
} region;

static struct {
  pthread_once_t once;
  pthread_mutex_t busy;   /* held by the thread running a region */
  pthread_mutex_t lock;   /* protects the fields below */
  pthread_cond_t wake, done;
  int nhelpers;
  atomic_uint generation;
  atomic_int remaining;
  region r;
  int budget;
} pool = {.once = PTHREAD_ONCE_INIT,
          .busy = PTHREAD_MUTEX_INITIALIZER,
          .lock = PTHREAD_MUTEX_INITIALIZER,
          .wake = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER};

static void chunk_range(int64_t n, int nthreads, int t, int64_t *b, int64_t *e) {
  int64_t base = n / nthreads, extra = n % nthreads;
  *b = t * base + (t < extra ? t : extra);
  *e = *b + base + (t < extra ? 1 : 0);
}

/* Wait briefly by spinning before sleeping: ops come in quick succession during training and a
 * condition-variable wake-up costs tens of microseconds, as much as a small GEMM. The spin
 * yields the CPU regularly so that on a busy machine (our threads sharing a core) the thread
 * we wait for can run. Returns true when cond became true. */
#define SPIN_NS 100000

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#define SPIN_UNTIL(cond)                                   \
  do {                                                     \
    int64_t spin_start_ = 0;                               \
    for (unsigned spin_i_ = 1; !(cond); spin_i_++) {       \
      pt_cpu_relax();                                      \
      if ((spin_i_ & 63) == 0) {                           \
        sched_yield();                                     \
        int64_t t_ = now_ns();                             \
        if (!spin_start_) spin_start_ = t_;                \
        else if (t_ - spin_start_ > SPIN_NS) break;        \
      }                                                    \
    }                                                      \
  } while (0)

static void *helper_main(void *p) {
  int tid = (int)(intptr_t)p;
  unsigned seen = 0;
  for (;;) {
    SPIN_UNTIL(atomic_load_explicit(&pool.generation, memory_order_acquire) != seen);
    pthread_mutex_lock(&pool.lock);
    while (atomic_load(&pool.generation) == seen) pthread_cond_wait(&pool.wake, &pool.lock);
    seen = atomic_load(&pool.generation);
    region r = pool.r;
    pthread_mutex_unlock(&pool.lock);
    if (tid >= r.nthreads) continue;
    int64_t b, e;
    chunk_range(r.n, r.nthreads, tid, &b, &e);
    if (b < e) r.fn(r.arg, b, e, tid);
    if (atomic_fetch_sub(&pool.remaining, 1) == 1) {
      pthread_mutex_lock(&pool.lock);
      pthread_cond_signal(&pool.done);
      pthread_mutex_unlock(&pool.lock);
    }
  }
  return NULL;
}

int pt_parallel_budget(void) {
  const char *env = getenv("PARTRAIN_NUM_THREADS");
  int n = env ? atoi(env) : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > MAX_THREADS) n = MAX_THREADS;
  return n;
}

/* In a forked child (the process target) the helpers are the parent's threads, gone: regions
 * run on the calling thread alone, and the locks a helper may have held start afresh. */
static void pool_forked_child(void) {
  pool.nhelpers = 0;
  pthread_mutex_init(&pool.busy, NULL);
  pthread_mutex_init(&pool.lock, NULL);
  pthread_cond_init(&pool.wake, NULL);
  pthread_cond_init(&pool.done, NULL);
}

static void pool_start(void) {
  pthread_atfork(NULL, NULL, pool_forked_child);
  pool.budget = pt_parallel_budget();
  /* The budget is ours: OpenBLAS runs single-threaded and large products are split across
   * our threads (lib/blas.c), so two pools never spin against each other. */
  pt_blas_single_threaded();
  for (int t = 1; t < pool.budget; t++) {
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &attr, helper_main, (void *)(intptr_t)t) == 0) pool.nhelpers++;
    pthread_attr_destroy(&attr);
  }
}

int pt_parallel_threads(const pt_ctx *ctx) {
  pthread_once(&pool.once, pool_start);
  int n = pool.nhelpers + 1;
  if (ctx && ctx->intra_threads > 0 && ctx->intra_threads < n) n = ctx->intra_threads;
  return n;
}

int pt_parallel_for(const pt_ctx *ctx, int64_t n, int64_t grain, pt_parallel_fn fn, void *arg) {
  if (n <= 0) return 1;
  int nthreads = pt_parallel_threads(ctx);
  if (grain < 1) grain = 1;
  if ((int64_t)nthreads > n / grain) nthreads = (int)(n / grain);
  if (nthreads < 1) nthreads = 1;
  if (nthreads == 1 || pthread_mutex_trylock(&pool.busy) != 0) {
    fn(arg, 0, n, 0);
    return 1;
  }
  pthread_mutex_lock(&pool.lock);
  pool.r = (region){fn, arg, n, nthreads};
  atomic_store(&pool.remaining, nthreads - 1);
  atomic_fetch_add_explicit(&pool.generation, 1, memory_order_release);
  pthread_cond_broadcast(&pool.wake);
  pthread_mutex_unlock(&pool.lock);
  int64_t b, e;
  chunk_range(n, nthreads, 0, &b, &e);
  fn(arg, b, e, 0);
  SPIN_UNTIL(atomic_load(&pool.remaining) <= 0);
  if (atomic_load(&pool.remaining) > 0) {
    pthread_mutex_lock(&pool.lock);
    while (atomic_load(&pool.remaining) > 0) pthread_cond_wait(&pool.done, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
  }
  pthread_mutex_unlock(&pool.busy);
  return nthreads;
}

typedef struct segments_job {
  const int64_t *start; /* start[i]: the first element of item i; start[nitems]: the total */
  int nitems;
  pt_segment_fn fn;
  void *arg;
} segments_job;

static void segments_chunk(void *arg, int64_t b, int64_t e, int tid) {
  (void)tid;
  const segments_job *j = arg;
  int lo = 0, hi = j->nitems - 1; /* the item holding element b: the last with start <= b */
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (j->start[mid] <= b) lo = mid;
    else hi = mid - 1;
  }
  for (int i = lo; i < j->nitems && j->start[i] < e; i++) {
    int64_t s = j->start[i], end = j->start[i + 1];
    int64_t from = b > s ? b - s : 0, to = (e < end ? e : end) - s;
    if (from < to) j->fn(j->arg, i, from, to);
  }
}

pt_status pt_parallel_for_segments(pt_ctx *ctx, int nitems, const int64_t *counts, int64_t grain,
                                   pt_segment_fn fn, void *arg) {
  if (nitems <= 0) return PT_OK;
  int64_t *start = malloc(((size_t)nitems + 1) * sizeof *start);
  if (!start) return pt_fail(ctx, PT_ENOMEM, "out of memory");
  start[0] = 0;
  for (int i = 0; i < nitems; i++) start[i + 1] = start[i] + counts[i];
  segments_job j = {start, nitems, fn, arg};
  pt_parallel_for(ctx, start[nitems], grain, segments_chunk, &j);
  free(start);
  return PT_OK;
}
