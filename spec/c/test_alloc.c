/* lib/ small-block cache and tensor/storage lifetime: one-block tensors whose storage outlives
 * them through views, bounded per-thread caches, and tensors made on one thread and freed on
 * another (the dispatcher shares tensors with workers). Run it under ASan and TSan too. */
#include <pthread.h>
#include <string.h>

#include "autograd.h"
#include "tensor.h"
#include "testing.h"

#define CHECK_QUIET(cond) /* one check for a loop: counts once, reports the first failure */ \
  do {                                                                                       \
    static bool failed_once = false;                                                        \
    if (!(cond) && !failed_once) {                                                          \
      failed_once = true;                                                                   \
      CHECK(cond);                                                                          \
    }                                                                                       \
  } while (0)

static void test_small_blocks(pt_ctx *ctx) {
  void *a = pt_small_alloc(ctx, 100), *b = pt_small_alloc(ctx, 100);
  CHECK(a && b && a != b);
  memset(a, 1, 100);
  memset(b, 2, 100);
  /* above PT_SMALL_MAX: plain allocation */
  void *big = pt_small_alloc(ctx, PT_SMALL_MAX + 1);
  CHECK(big != NULL && !pt_small_owns(big));
  pt_small_free(big, PT_SMALL_MAX + 1);
  pt_small_free(NULL, 10);
#if !defined(__SANITIZE_ADDRESS__) /* under ASan every block is a plain malloc */
  pt_small_trim();
  CHECK(pt_small_cached_bytes() == 0);
  CHECK(pt_small_owns(a) && pt_small_owns(b));
  pt_small_free(a, 100);
  CHECK(pt_small_cached_bytes() == 112); /* 16-byte classes up to 256 bytes */
  void *c = pt_small_alloc(ctx, 110);    /* same class: the freed block comes back */
  CHECK(c == a);
  pt_small_free(b, 100);
  pt_small_free(c, 110);
  CHECK(pt_small_cached_bytes() == 224);
  /* the lists are bounded: a large burst of frees does not all stay with this thread, and what
   * went to the shared pool comes back */
  enum { BURST = 40000 };
  static void *blocks[BURST];
  for (int i = 0; i < BURST; i++) blocks[i] = pt_small_alloc(ctx, 64);
  for (int i = 0; i < BURST; i++) pt_small_free(blocks[i], 64);
  CHECK(pt_small_cached_bytes() < (size_t)BURST * 64);
  CHECK(pt_small_cached_bytes() > 0);
  pt_small_trim();
  CHECK(pt_small_cached_bytes() == 0);
  for (int i = 0; i < BURST; i++) blocks[i] = pt_small_alloc(ctx, 64);
  for (int i = 0; i < BURST; i++) CHECK_QUIET(pt_small_owns(blocks[i]));
  for (int i = 0; i < BURST; i++) pt_small_free(blocks[i], 64);
  pt_small_trim();
#else
  pt_small_free(a, 100);
  pt_small_free(b, 100);
#endif
}

/* A small tensor shares one block with its storage; a view keeps the storage (and so the block)
 * alive after the tensor dies. */
static void test_tensor_storage_lifetime(pt_ctx *ctx) {
  int64_t shape[1] = {4};
  pt_tensor *t = NULL, *v = NULL, *u = NULL;
  CHECK(pt_tensor_zeros(ctx, PT_FLOAT32, 1, shape, &t) == PT_OK);
  for (int i = 0; i < 4; i++) pt_tensor_set_flat(t, i, i + 1);
  CHECK(pt_narrow_raw(ctx, t, 0, 1, 2, &v) == PT_OK);
  CHECK(v->storage == t->storage);
  pt_tensor_release(t); /* the block stays: v's storage lives in it */
  for (int i = 0; i < 50; i++) { /* reuse of freed blocks must not touch v's storage */
    pt_tensor *w = NULL;
    CHECK(pt_tensor_scalar(ctx, PT_FLOAT32, -1.0, &w) == PT_OK);
    pt_tensor_release(w);
  }
  CHECK(pt_tensor_get_flat(v, 0) == 2.0 && pt_tensor_get_flat(v, 1) == 3.0);
  CHECK(pt_select_raw(ctx, v, 0, 1, &u) == PT_OK);
  pt_tensor_release(v);
  CHECK(pt_tensor_get_flat(u, 0) == 3.0);
  pt_tensor_release(u); /* the last reference: the block goes now */

  /* the storage alone shared by a tensor made over it */
  pt_tensor *a = NULL, *b = NULL;
  CHECK(pt_tensor_scalar(ctx, PT_FLOAT64, 7.5, &a) == PT_OK);
  CHECK(pt_tensor_from_storage(ctx, a->storage, PT_FLOAT64, 0, 0, NULL, NULL, &b) == PT_OK);
  pt_tensor_release(a);
  CHECK(pt_tensor_get_flat(b, 0) == 7.5);
  pt_tensor_release(b);

  /* bigger tensors (separate storage) and a tensor with a gradient and a node */
  int64_t big[2] = {64, 64};
  CHECK(pt_tensor_zeros(ctx, PT_FLOAT32, 2, big, &a) == PT_OK);
  CHECK(pt_tensor_zeros(ctx, PT_FLOAT32, 2, big, &a->grad) == PT_OK);
  CHECK(pt_view_raw(ctx, a, 1, (int64_t[]){4096}, &b) == PT_OK);
  pt_tensor_release(a);
  CHECK(pt_tensor_numel(b) == 4096);
  pt_tensor_release(b);
}

/* --- across threads --- */

enum { NTHREADS = 4, ROUNDS = 2000, BATCH = 64 };

typedef struct handoff {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pt_tensor *slots[BATCH];
  int filled; /* BATCH when the consumer may take them, 0 when the producer may refill */
  bool done;
} handoff;

typedef struct worker_arg {
  handoff *in;        /* tensors made by another thread, freed here */
  handoff *out;       /* tensors made here, freed by another thread */
  int id;
  int bad;
} worker_arg;

/* Each thread makes small tensors (one block with their storage) and views over them, hands
 * them to the next thread, and frees what the previous thread handed to it: blocks migrate
 * between the threads' caches, and a view may outlive its base on another thread. */
static void *worker(void *p) {
  worker_arg *w = p;
  pt_ctx ctx;
  pt_ctx_init(&ctx, (uint64_t)w->id);
  for (int r = 0; r < ROUNDS; r++) {
    /* produce */
    pt_tensor *made[BATCH];
    for (int i = 0; i < BATCH; i++) {
      pt_tensor *t = NULL, *v = NULL;
      int64_t shape[1] = {1 + (i % 8)};
      if (pt_tensor_empty(&ctx, PT_FLOAT32, 1, shape, &t) != PT_OK) {
        w->bad++;
        made[i] = NULL;
        continue;
      }
      for (int64_t k = 0; k < shape[0]; k++) ((float *)t->storage->data)[k] = (float)(w->id * 1000 + k);
      if (i % 2 && pt_narrow_raw(&ctx, t, 0, 0, 1, &v) == PT_OK) {
        pt_tensor_release(t); /* the view alone keeps the block */
        t = v;
      }
      made[i] = t;
    }
    pthread_mutex_lock(&w->out->mu);
    while (w->out->filled) pthread_cond_wait(&w->out->cv, &w->out->mu);
    memcpy(w->out->slots, made, sizeof made);
    w->out->filled = BATCH;
    pthread_cond_broadcast(&w->out->cv);
    pthread_mutex_unlock(&w->out->mu);
    /* consume */
    pt_tensor *got[BATCH];
    pthread_mutex_lock(&w->in->mu);
    while (!w->in->filled) pthread_cond_wait(&w->in->cv, &w->in->mu);
    memcpy(got, w->in->slots, sizeof got);
    w->in->filled = 0;
    pthread_cond_broadcast(&w->in->cv);
    pthread_mutex_unlock(&w->in->mu);
    for (int i = 0; i < BATCH; i++) {
      if (!got[i]) continue;
      float v = *(float *)pt_tensor_data(got[i]);
      if ((int)v % 1000 != 0) w->bad++;
      pt_tensor_release(got[i]);
    }
  }
  return NULL;
}

static void test_across_threads(void) {
  handoff h[NTHREADS];
  worker_arg args[NTHREADS];
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    pthread_mutex_init(&h[i].mu, NULL);
    pthread_cond_init(&h[i].cv, NULL);
    h[i].filled = 0;
    h[i].done = false;
  }
  for (int i = 0; i < NTHREADS; i++) {
    args[i] = (worker_arg){.in = &h[i], .out = &h[(i + 1) % NTHREADS], .id = i + 1, .bad = 0};
  }
  for (int i = 0; i < NTHREADS; i++) CHECK(pthread_create(&th[i], NULL, worker, &args[i]) == 0);
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < NTHREADS; i++) {
    CHECK(args[i].bad == 0);
    CHECK(h[i].filled == 0);
    pthread_mutex_destroy(&h[i].mu);
    pthread_cond_destroy(&h[i].cv);
  }
}

/* Autograd nodes come from the same cache. */
static void test_nodes(pt_ctx *ctx) {
  pt_tensor *a = NULL, *out = NULL;
  CHECK(pt_tensor_scalar(ctx, PT_FLOAT32, 2.0, &a) == PT_OK);
  a->requires_grad = true;
  CHECK(pt_tensor_scalar(ctx, PT_FLOAT32, 0.0, &out) == PT_OK);
  pt_node *node = NULL;
  CHECK(pt_autograd_record(ctx, out, "TestBackward", NULL, 1, &a, &node) == PT_OK);
  CHECK(node != NULL && out->grad_fn == node);
  pt_tensor_release(a);
  pt_tensor_release(out); /* frees the node, which frees a */
}

int main(void) {
  pt_ctx ctx;
  pt_ctx_init(&ctx, 1);
  test_small_blocks(&ctx);
  test_tensor_storage_lifetime(&ctx);
  test_nodes(&ctx);
  test_across_threads();
  pt_small_trim();
  return TEST_SUMMARY();
}
