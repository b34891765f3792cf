/* Tensor and storage lifetime, creation, raw views, element access, copies. */
#include "tensor.h"

#include "autograd.h"
#include "parallel.h"
#include "simd_math.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The storage header is padded so inline data stays 64-byte aligned. */
#define STORAGE_HEADER (((sizeof(pt_storage) + 63) / 64) * 64)
/* A tensor made together with a small storage shares one block with it:
 * [pt_tensor, padded][storage header][data]. */
#define TENSOR_PART (((sizeof(pt_tensor) + 63) / 64) * 64)

/* pt_storage.flags (meaningful only when release == NULL) */
#define PT_STORAGE_SMALL 1    /* header + inline data came from pt_small_alloc */
#define PT_STORAGE_EMBEDDED 2 /* ... inside its first tensor's block, TENSOR_PART bytes before it */

/* Data up to this size is allocated with its tensor in one small block. W3 (`c = a + b` on
 * 1-element tensors) spends a third of its time in malloc/free; one cached block instead of two
 * malloc'ed ones per result is 171 vs 230 ns (measured, generational GC). */
#define SMALL_DATA_MAX (PT_SMALL_MAX - TENSOR_PART - STORAGE_HEADER)

/* --- small-block allocator ---
 * glibc's tcache keeps only 7 blocks per size, and the Lua collector frees tensor handles in
 * bursts of thousands, so most small frees fell through to _int_free/_int_malloc (a third of W3).
 * Keeping freed blocks in free lists fixes that, but lists of malloc'ed blocks pin small blocks
 * between the big tensor buffers that live in the same heap (l_module.c keeps blocks up to 32 MiB
 * out of mmap), and glibc's heap then grows without bound in a training loop (measured: +130 MB
 * over one Fashion-MNIST epoch even with 4 KiB cached per size). So small blocks live apart:
 * slabs carved from one address range reserved at first use (pages are backed only as slabs are
 * used; a slab is never given back, so memory is the peak of small blocks in use).
 *   size classes: 16-byte steps up to 256 bytes, 64-byte steps up to PT_SMALL_MAX;
 *   per-thread lists, no locks: a block freed on a worker joins the worker's list;
 *   each list is bounded (SMALL_CLASS_BYTES): whole lists move to and from a global pool (a
 *   mutex, one move per many frees, O(1)) before a new slab is carved (see small_cache);
 *   a thread that exits gives its lists and the rest of its slab to the global pool.
 * Under ASan every block is a plain malloc so the sanitizer sees each one. */
#define SMALL_CLASSES 28
#define SMALL_CLASS_BYTES ((size_t)256 << 10)
#define SLAB_BYTES ((size_t)64 << 10)
#define REGION_BYTES PT_SMALL_REGION_BYTES

static inline int small_class(size_t n) {
  if (n <= 256) return n ? (int)((n - 1) >> 4) : 0;
  return 16 + (int)((n - 257) >> 6);
}
static inline size_t small_size(int k) {
  return k < 16 ? (size_t)(k + 1) << 4 : 256 + ((size_t)(k - 15) << 6);
}

#if defined(__SANITIZE_ADDRESS__)

void *pt_small_alloc(pt_ctx *ctx, size_t nbytes) {
  if (nbytes > PT_SMALL_MAX) return pt_alloc(ctx, nbytes);
  size_t size = small_size(small_class(nbytes));
  void *p = malloc(size);
  if (!p) {
    if (ctx) pt_fail(ctx, PT_ENOMEM, "out of memory allocating %zu bytes", nbytes);
    return NULL;
  }
  if (ctx) ctx->bytes_allocated += size;
  return p;
}
void pt_small_free(void *p, size_t nbytes) {
  (void)nbytes;
  free(p);
}
char *pt_small_region; /* stays NULL: every block is a plain malloc */
size_t pt_small_cached_bytes(void) { return 0; }
void pt_small_trim(void) {}
bool pt_small_ready(void) { return false; }

#else

/* A chain of free blocks (each block's first word links the next) with its last block. */
typedef struct small_list {
  void *head, *tail; /* tail is meaningful only while count > 0 */
  uint32_t count;
} small_list;

/* Per thread and class, two lists (Bonwick's magazines): allocations pop and frees push on cur;
 * a cur that fills (SMALL_CLASS_BYTES) is set aside as full, and a full list already there goes
 * to the global pool. Moves are whole lists, O(1): no walking of cold blocks, which made a
 * thread that frees what another allocates (the dispatcher's messages and results) pay a
 * cache miss per block. An empty cur takes the full list, else a list from the pool. */
typedef struct small_cache {
  small_list cur[SMALL_CLASSES], full[SMALL_CLASSES];
  char *slab, *slab_end; /* the rest of this thread's current slab */
  bool registered;       /* the thread-exit destructor knows this thread's lists */
} small_cache;

#define POOL_LISTS 64
typedef struct small_pool {
  pthread_mutex_t mu;
  small_list lists[POOL_LISTS]; /* under mu; when all are used, a new list joins the last */
  int n;                        /* under mu */
  atomic_int avail;             /* = n, read without the lock to skip an empty pool */
} small_pool;

static _Thread_local small_cache tl_small;
static pthread_once_t small_once = PTHREAD_ONCE_INIT;
static pthread_key_t small_key;
static bool small_key_ok;
char *pt_small_region; /* NULL: no region, blocks are plain mallocs */
static atomic_size_t region_used;
static small_pool pools[SMALL_CLASSES];
/* the unused rest of exited threads' slabs */
static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;
static char *spare_slab[16], *spare_end[16];
static int n_spare;

/* Give list l (non-empty) to class k's global pool and empty it. */
static void pool_put(int k, small_list *l) {
  small_pool *sp = &pools[k];
  pthread_mutex_lock(&sp->mu);
  if (sp->n < POOL_LISTS) {
    sp->lists[sp->n++] = *l;
  } else { /* join the last list: O(1) with its tail */
    small_list *last = &sp->lists[POOL_LISTS - 1];
    *(void **)l->tail = last->head;
    last->head = l->head;
    last->count += l->count;
  }
  atomic_store_explicit(&sp->avail, sp->n, memory_order_relaxed);
  pthread_mutex_unlock(&sp->mu);
  *l = (small_list){NULL, NULL, 0};
}

/* Take a list of class k from the global pool into l (empty); false when there is none. */
static bool pool_get(int k, small_list *l) {
  small_pool *sp = &pools[k];
  if (!atomic_load_explicit(&sp->avail, memory_order_relaxed)) return false; /* checked again under the lock */
  pthread_mutex_lock(&sp->mu);
  bool got = sp->n > 0;
  if (got) *l = sp->lists[--sp->n];
  atomic_store_explicit(&sp->avail, sp->n, memory_order_relaxed);
  pthread_mutex_unlock(&sp->mu);
  return got;
}

static void small_thread_exit(void *arg) {
  small_cache *c = arg;
  for (int k = 0; k < SMALL_CLASSES; k++) {
    if (c->cur[k].count) pool_put(k, &c->cur[k]);
    if (c->full[k].count) pool_put(k, &c->full[k]);
    c->cur[k] = c->full[k] = (small_list){NULL, NULL, 0};
  }
  pthread_mutex_lock(&spare_mu);
  if (c->slab && c->slab_end - c->slab >= 64 && n_spare < 16) {
    spare_slab[n_spare] = c->slab;
    spare_end[n_spare++] = c->slab_end;
  }
  pthread_mutex_unlock(&spare_mu);
  c->slab = c->slab_end = NULL;
  c->registered = false;
}

/* fork() (the process target) while another thread holds a class's lock would leave the
 * child's copy locked for good: every lock is taken around the fork, as malloc does. */
static void small_fork_prepare(void) {
  for (int k = 0; k < SMALL_CLASSES; k++) pthread_mutex_lock(&pools[k].mu);
  pthread_mutex_lock(&spare_mu);
}

static void small_fork_done(void) {
  pthread_mutex_unlock(&spare_mu);
  for (int k = SMALL_CLASSES - 1; k >= 0; k--) pthread_mutex_unlock(&pools[k].mu);
}

static void small_init(void) {
  for (int k = 0; k < SMALL_CLASSES; k++) pthread_mutex_init(&pools[k].mu, NULL);
  pthread_atfork(small_fork_prepare, small_fork_done, small_fork_done);
  small_key_ok = pthread_key_create(&small_key, small_thread_exit) == 0;
  if (!small_key_ok) return; /* no way to hand a thread's blocks back: stay with malloc */
  void *p = mmap(NULL, REGION_BYTES, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p != MAP_FAILED) pt_small_region = p;
}

static inline void *list_pop(small_list *l) {
  void *p = l->head;
  l->head = *(void **)p;
  l->count--;
  /* the next block of this class was freed a while ago (a GC sweep, another thread) and is
   * often out of cache: fetch it now, so that the next allocation does not wait for it
   * (perf: 7% of per-sample training stalled on that load) */
  if (l->count) __builtin_prefetch(l->head, 1);
  return p;
}

/* A block of class k when this thread's cur list is empty: the full list, a list from the
 * global pool, else carved from this thread's slab. NULL when the region is unavailable or
 * full. */
static void *small_refill(small_cache *c, int k) {
  if (!c->registered) {
    pthread_once(&small_once, small_init);
    if (!pt_small_region || pthread_setspecific(small_key, c) != 0) return NULL;
    c->registered = true;
  }
  if (c->full[k].count) {
    c->cur[k] = c->full[k];
    c->full[k] = (small_list){NULL, NULL, 0};
    return list_pop(&c->cur[k]);
  }
  if (pool_get(k, &c->cur[k])) return list_pop(&c->cur[k]);
  size_t size = small_size(k);
  if ((size_t)(c->slab_end - c->slab) < size) {
    char *slab = NULL, *end = NULL;
    pthread_mutex_lock(&spare_mu);
    if (n_spare) slab = spare_slab[--n_spare], end = spare_end[n_spare];
    pthread_mutex_unlock(&spare_mu);
    if (!slab || (size_t)(end - slab) < size) {
      size_t off = atomic_fetch_add_explicit(&region_used, SLAB_BYTES, memory_order_relaxed);
      if (off + SLAB_BYTES > REGION_BYTES) return NULL;
      slab = pt_small_region + off;
      end = slab + SLAB_BYTES;
    }
    c->slab = slab;
    c->slab_end = end;
  }
  void *p = c->slab;
  c->slab += size;
  return p;
}

void *pt_small_alloc(pt_ctx *ctx, size_t nbytes) {
  if (nbytes > PT_SMALL_MAX) return pt_alloc(ctx, nbytes); /* callers keep to PT_SMALL_MAX */
  int k = small_class(nbytes);
  size_t size = small_size(k);
  small_cache *c = &tl_small;
  void *p;
  if (c->cur[k].count) {
    p = list_pop(&c->cur[k]);
  } else if (!(p = small_refill(c, k)) && !(p = malloc(size))) {
    if (ctx) pt_fail(ctx, PT_ENOMEM, "out of memory allocating %zu bytes", nbytes);
    return NULL;
  }
  if (ctx) ctx->bytes_allocated += size;
  return p;
}

void pt_small_free(void *p, size_t nbytes) {
  if (!p) return;
  if (nbytes > PT_SMALL_MAX || !pt_small_owns(p)) {
    free(p); /* pt_alloc's and the fallback's blocks are plain mallocs */
    return;
  }
  int k = small_class(nbytes);
  small_cache *c = &tl_small;
  if (!c->registered) {
    /* first small free on this thread (a thread that only frees what others made) */
    pthread_once(&small_once, small_init);
    if (pthread_setspecific(small_key, c) != 0) {
      *(void **)p = NULL;
      small_list one = {p, p, 1};
      pool_put(k, &one);
      return;
    }
    c->registered = true;
  }
  small_list *l = &c->cur[k];
  *(void **)p = l->head;
  if (!l->count) l->tail = p;
  l->head = p;
  if (++l->count * small_size(k) >= SMALL_CLASS_BYTES) { /* (a division here cost W3 ~5%) */
    if (c->full[k].count) pool_put(k, &c->full[k]);
    c->full[k] = *l;
    *l = (small_list){NULL, NULL, 0};
  }
}

size_t pt_small_cached_bytes(void) {
  size_t n = 0;
  for (int k = 0; k < SMALL_CLASSES; k++)
    n += (tl_small.cur[k].count + tl_small.full[k].count) * small_size(k);
  return n;
}

void pt_small_trim(void) {
  if (tl_small.registered) small_thread_exit(&tl_small);
}

bool pt_small_ready(void) {
  pthread_once(&small_once, small_init);
  return pt_small_region != NULL;
}

#endif

/* --- lifetime --- */

static bool storage_data_inline(const pt_storage *s) {
  return s->data == (const char *)s + STORAGE_HEADER;
}

pt_storage *pt_storage_retain(pt_storage *s) {
  if (s) atomic_fetch_add_explicit(&s->refcount, 1, memory_order_relaxed);
  return s;
}

/* The length of the shared mapping pt_storage_share made for nbytes (whole pages). */
static size_t shared_len(size_t nbytes) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return (nbytes + page - 1) / page * page;
}

static void shared_release(pt_storage *s) { munmap(s->data, shared_len(s->nbytes)); }

pt_status pt_storage_share(pt_ctx *ctx, pt_storage *s) {
  if (pt_storage_is_shared(s)) return PT_OK;
  if (s->device.type != PT_CPU) {
    char dev[32];
    pt_device_format(s->device, dev, sizeof dev);
    return pt_fail(ctx, PT_EARG, "share_memory_: tensor on %s (only CPU tensors can be shared)", dev);
  }
  if (s->nbytes == 0) {
    s->flags |= PT_STORAGE_SHARED;
    return PT_OK;
  }
  void *map = mmap(NULL, shared_len(s->nbytes), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
  if (map == MAP_FAILED)
    return pt_fail(ctx, PT_ENOMEM, "share_memory_: cannot map %zu bytes of shared memory: %s",
                   s->nbytes, strerror(errno));
  memcpy(map, s->data, s->nbytes);
  if (s->release) { /* memory partrain did not allocate: its owner frees it now */
    s->release(s);
    s->release = shared_release;
    s->owner = NULL;
  } else if (!storage_data_inline(s)) {
    pt_free(s->data);
  } /* inline data stays part of the header's block, unused, until the storage dies */
  s->data = map;
  s->flags |= PT_STORAGE_SHARED;
  return PT_OK;
}

void pt_storage_release(pt_storage *s) {
  if (!s) return;
  if (atomic_fetch_sub_explicit(&s->refcount, 1, memory_order_acq_rel) != 1) return;
  /* data moved to a shared mapping by pt_storage_share: unmap it, then free the header as its
   * flags say (its inline data is not in use any more) */
  if (!s->release && pt_storage_is_shared(s) && s->nbytes) munmap(s->data, shared_len(s->nbytes));
  if (s->release) {
    s->release(s);
    pt_free(s);
  } else if (s->flags & PT_STORAGE_EMBEDDED) {
    /* the tensor that shared the block died earlier or is dying now (pt_tensor_release) */
    pt_small_free((char *)s - TENSOR_PART, TENSOR_PART + STORAGE_HEADER + s->nbytes);
  } else if (s->flags & PT_STORAGE_SMALL) {
    pt_small_free(s, STORAGE_HEADER + s->nbytes);
  } else {
    if (!storage_data_inline(s) && !pt_storage_is_shared(s)) pt_free(s->data);
    pt_free(s);
  }
}

void pt_storage_init_external(pt_storage *s, void *data, size_t nbytes, pt_device device,
                              void (*release)(pt_storage *s), void *owner) {
  atomic_init(&s->refcount, 1);
  s->flags = 0;
  s->data = data;
  s->nbytes = nbytes;
  s->device = device;
  s->release = release;
  s->owner = owner;
  atomic_init(&s->version, 0);
}

/* The fields of pt_storage_init_external, written here again so that this stays inline: every
 * tensor made passes here (W3). */
static void storage_init(pt_storage *s, size_t nbytes, int flags) {
  atomic_init(&s->refcount, 1);
  s->flags = flags;
  s->data = (char *)s + STORAGE_HEADER;
  s->nbytes = nbytes;
  s->device = (pt_device){PT_CPU, 0};
  s->release = NULL;
  s->owner = NULL;
  atomic_init(&s->version, 0);
}

static pt_storage *storage_new(pt_ctx *ctx, size_t nbytes) {
  bool small = STORAGE_HEADER + nbytes <= PT_SMALL_MAX;
  pt_storage *s = small ? pt_small_alloc(ctx, STORAGE_HEADER + nbytes)
                        : pt_alloc(ctx, STORAGE_HEADER + nbytes);
  if (!s) return NULL;
  storage_init(s, nbytes, small ? PT_STORAGE_SMALL : 0);
  return s;
}

/* the storage made in one block with t (t->embedded), whatever t's storage is now */
static inline pt_storage *home_storage(const pt_tensor *t) {
  return t->embedded ? (pt_storage *)((char *)t + TENSOR_PART) : NULL;
}

pt_tensor *pt_tensor_retain(pt_tensor *t) {
  if (t) atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed);
  return t;
}

void pt_tensor_release(pt_tensor *t) {
  if (!t) return;
  if (atomic_fetch_sub_explicit(&t->refcount, 1, memory_order_acq_rel) != 1) return;
  pt_storage *s = t->storage;
  pt_tensor_release(t->grad);
  if (t->grad_fn && t->grad_fn->retain_target == t) t->grad_fn->retain_target = NULL;
  pt_node_release(t->grad_fn);
  pt_tensor_release(t->base);
  pt_storage *home = home_storage(t);
  if (home) {
    /* The block goes when its storage does: now, or when the last view over it dies. t holds
     * its home storage also after pt_tensor_set_data gave it another one. */
    if (s != home) pt_storage_release(s);
    pt_storage_release(home);
    return;
  }
  pt_storage_release(s);
  pt_small_free(t, sizeof(pt_tensor));
}

static void tensor_init(pt_tensor *t) {
  memset(t, 0, sizeof *t);
  atomic_init(&t->refcount, 1);
}

static pt_tensor *tensor_alloc(pt_ctx *ctx) {
  pt_tensor *t = pt_small_alloc(ctx, sizeof(pt_tensor));
  if (!t) return NULL;
  tensor_init(t);
  return t;
}

/* A tensor and a new storage of nbytes: one block when small, two otherwise. */
static pt_tensor *tensor_alloc_with_storage(pt_ctx *ctx, size_t nbytes) {
  if (nbytes <= SMALL_DATA_MAX) {
    char *block = pt_small_alloc(ctx, TENSOR_PART + STORAGE_HEADER + nbytes);
    if (!block) return NULL;
    pt_tensor *t = (pt_tensor *)block;
    tensor_init(t);
    t->storage = (pt_storage *)(block + TENSOR_PART);
    t->embedded = true;
    storage_init(t->storage, nbytes, PT_STORAGE_EMBEDDED);
    return t;
  }
  pt_tensor *t = tensor_alloc(ctx);
  if (!t) return NULL;
  if (!(t->storage = storage_new(ctx, nbytes))) {
    pt_small_free(t, sizeof(pt_tensor));
    return NULL;
  }
  return t;
}

int64_t pt_shape_numel(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= shape[i];
  return n;
}

int64_t pt_tensor_numel(const pt_tensor *t) { return pt_shape_numel(t->ndim, t->shape); }

void pt_contiguous_strides(int ndim, const int64_t *shape, int64_t *stride) {
  int64_t s = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    stride[i] = s;
    /* the product past the first dim is never used: not computed, as for a shape whose element
     * count overflows (refused by the caller) it would overflow */
    if (i > 0) s *= shape[i] > 0 ? shape[i] : 1;
  }
}

pt_status pt_check_no_internal_overlap(pt_ctx *ctx, const char *fname, const pt_tensor *t) {
  for (int i = 0; i < t->ndim; i++)
    if (t->stride[i] == 0 && t->shape[i] > 1)
      return pt_fail(ctx, PT_EARG,
                     "%s: more than one element of the written-to tensor refers to a single "
                     "memory location (an expanded tensor): clone() it first",
                     fname);
  return PT_OK;
}

bool pt_tensor_is_contiguous(const pt_tensor *t) {
  int64_t s = 1;
  bool standard = true;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->shape[i] == 0) return true; /* no elements: any strides will do, as PyTorch */
    if (t->shape[i] != 1 && t->stride[i] != s) standard = false;
    s *= t->shape[i];
  }
  return standard;
}

const char *pt_shape_format(int ndim, const int64_t *shape, char *buf, size_t n) {
  size_t pos = 0;
  pos += (size_t)snprintf(buf + pos, n - pos, "{");
  for (int i = 0; i < ndim && pos < n; i++)
    pos += (size_t)snprintf(buf + pos, n - pos, i ? ",%lld" : "%lld", (long long)shape[i]);
  if (pos < n) snprintf(buf + pos, n - pos, "}");
  return buf;
}

static pt_status check_shape(pt_ctx *ctx, int ndim, const int64_t *shape, size_t elsize,
                             size_t *nbytes) {
  if (ndim < 0 || ndim > PT_MAX_DIMS)
    return pt_fail(ctx, PT_ESHAPE, "tensors have at most %d dimensions, got %d", PT_MAX_DIMS, ndim);
  uint64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0)
      return pt_fail(ctx, PT_ESHAPE, "invalid size %lld for dimension %d", (long long)shape[i],
                     i + 1);
    if (__builtin_mul_overflow(n, (uint64_t)shape[i], &n) || n > UINT64_MAX / 2 / 8)
      return pt_fail(ctx, PT_ENOMEM, "tensor too large");
  }
  *nbytes = (size_t)(n * elsize); /* elsize <= 8: no overflow after the check above */
  return PT_OK;
}

pt_status pt_tensor_empty(pt_ctx *ctx, pt_dtype dt, int ndim, const int64_t *shape, pt_tensor **out) {
  size_t nbytes = 0;
  if ((unsigned)dt >= PT_DTYPE_COUNT) return pt_fail(ctx, PT_EARG, "invalid dtype %d", (int)dt);
  pt_status st = check_shape(ctx, ndim, shape, pt_dtype_size(dt), &nbytes);
  if (st) return st;
  pt_tensor *t = tensor_alloc_with_storage(ctx, nbytes);
  if (!t) return PT_ENOMEM;
  t->dtype = dt;
  t->ndim = ndim;
  int64_t s = 1; /* shape and contiguous strides inline: W3 makes a tensor per op */
  for (int i = ndim - 1; i >= 0; i--) {
    t->shape[i] = shape[i];
    t->stride[i] = s;
    s *= shape[i] > 0 ? shape[i] : 1;
  }
  *out = t;
  return PT_OK;
}

pt_status pt_tensor_zeros(pt_ctx *ctx, pt_dtype dt, int ndim, const int64_t *shape, pt_tensor **out) {
  pt_status st = pt_tensor_empty(ctx, dt, ndim, shape, out);
  if (st) return st;
  memset((*out)->storage->data, 0, (*out)->storage->nbytes);
  return PT_OK;
}

pt_status pt_tensor_empty_like(pt_ctx *ctx, const pt_tensor *t, pt_tensor **out) {
  return pt_tensor_empty(ctx, t->dtype, t->ndim, t->shape, out);
}

pt_status pt_tensor_zeros_like(pt_ctx *ctx, const pt_tensor *t, pt_tensor **out) {
  return pt_tensor_zeros(ctx, t->dtype, t->ndim, t->shape, out);
}

pt_status pt_tensor_from_storage(pt_ctx *ctx, pt_storage *s, pt_dtype dt, int64_t offset, int ndim,
                                 const int64_t *shape, const int64_t *stride, pt_tensor **out) {
  if (ndim < 0 || ndim > PT_MAX_DIMS)
    return pt_fail(ctx, PT_ESHAPE, "tensors have at most %d dimensions, got %d", PT_MAX_DIMS, ndim);
  pt_tensor *t = tensor_alloc(ctx);
  if (!t) return PT_ENOMEM;
  t->storage = pt_storage_retain(s);
  t->dtype = dt;
  t->offset = offset;
  t->ndim = ndim;
  for (int i = 0; i < ndim; i++) {
    t->shape[i] = shape[i];
    t->stride[i] = stride[i];
  }
  *out = t;
  return PT_OK;
}

pt_status pt_tensor_scalar(pt_ctx *ctx, pt_dtype dt, double value, pt_tensor **out) {
  pt_status st = pt_tensor_empty(ctx, dt, 0, NULL, out);
  if (st) return st;
  pt_write_from_double((*out)->storage->data, dt, value);
  return PT_OK;
}

/* --- broadcasting --- */

pt_status pt_broadcast_shapes(pt_ctx *ctx, const char *fname, int na, const int64_t *sa, int nb,
                              const int64_t *sb, int *nout, int64_t *sout) {
  int n = na > nb ? na : nb;
  for (int i = 0; i < n; i++) {
    int ia = na - n + i, ib = nb - n + i;
    int64_t a = ia >= 0 ? sa[ia] : 1, b = ib >= 0 ? sb[ib] : 1;
    if (a == b || b == 1)
      sout[i] = a;
    else if (a == 1)
      sout[i] = b;
    else {
      char ba[PT_SHAPE_STR_MAX], bb[PT_SHAPE_STR_MAX];
      return pt_fail(ctx, PT_ESHAPE, "%s: shapes %s and %s cannot be broadcast", fname,
                     pt_shape_format(na, sa, ba, sizeof ba), pt_shape_format(nb, sb, bb, sizeof bb));
    }
  }
  *nout = n;
  return PT_OK;
}

void pt_broadcast_strides(const pt_tensor *t, int ndim, const int64_t *shape, int64_t *stride) {
  for (int i = 0; i < ndim; i++) {
    int it = t->ndim - ndim + i;
    if (it < 0 || (t->shape[it] == 1 && shape[i] != 1))
      stride[i] = 0;
    else
      stride[i] = t->stride[it];
  }
}

/* --- element access --- */

double pt_read_as_double(const void *p, pt_dtype dt) {
  switch (dt) {
  case PT_FLOAT32: return *(const float *)p;
  case PT_FLOAT64: return *(const double *)p;
  case PT_INT64: return (double)*(const int64_t *)p;
  case PT_INT32: return *(const int32_t *)p;
  case PT_UINT8: return *(const uint8_t *)p;
  case PT_BOOL: return *(const uint8_t *)p ? 1.0 : 0.0;
  default: return 0;
  }
}

bool pt_value_fits(pt_dtype dt, double v) {
  switch (dt) {
  case PT_INT64: return v >= -0x1p63 && v < 0x1p63; /* false for NaN */
  case PT_INT32: return v >= INT32_MIN && v <= INT32_MAX;
  case PT_UINT8: return v >= -255.0 && v <= 255.0;
  case PT_FLOAT32: return !isfinite(v) || fabs(v) <= FLT_MAX; /* 1e39 is not inf */
  default: return true;
  }
}

pt_status pt_check_value_fits(pt_ctx *ctx, const char *fname, pt_dtype dt, double v) {
  if (pt_value_fits(dt, v)) return PT_OK;
  char num[40];
  if (isnan(v)) {
    snprintf(num, sizeof num, "nan");
  } else { /* the shortest form that reads back as v: 1e+39, not 9.9999999999999994e+38 */
    for (int prec = 15; prec <= 17; prec++) {
      snprintf(num, sizeof num, "%.*g", prec, v);
      if (strtod(num, NULL) == v) break;
    }
  }
  return pt_fail(ctx, PT_EARG, "%s: value %s cannot be converted to %s without overflow", fname, num,
                 pt_dtype_name(dt));
}

void pt_write_from_double(void *p, pt_dtype dt, double v) {
  switch (dt) {
  case PT_FLOAT32: *(float *)p = (float)v; break;
  case PT_FLOAT64: *(double *)p = v; break;
  case PT_INT64: *(int64_t *)p = isfinite(v) ? (int64_t)v : 0; break;
  case PT_INT32: *(int32_t *)p = isfinite(v) ? (int32_t)v : 0; break;
  case PT_UINT8: *(uint8_t *)p = isfinite(v) ? (uint8_t)(int64_t)v : 0; break;
  case PT_BOOL: *(uint8_t *)p = v != 0.0; break;
  default: break;
  }
}

static char *element_ptr(const pt_tensor *t, int64_t elem_offset) {
  return (char *)t->storage->data + elem_offset * (int64_t)pt_dtype_size(t->dtype);
}

double pt_tensor_get(const pt_tensor *t, const int64_t *index) {
  int64_t off = t->offset;
  for (int i = 0; i < t->ndim; i++) off += index[i] * t->stride[i];
  return pt_read_as_double(element_ptr(t, off), t->dtype);
}

void pt_tensor_set(pt_tensor *t, const int64_t *index, double v) {
  int64_t off = t->offset;
  for (int i = 0; i < t->ndim; i++) off += index[i] * t->stride[i];
  pt_write_from_double(element_ptr(t, off), t->dtype, v);
}

static int64_t flat_to_offset(const pt_tensor *t, int64_t i) {
  int64_t off = t->offset;
  for (int d = t->ndim - 1; d >= 0; d--) {
    int64_t n = t->shape[d];
    off += (i % n) * t->stride[d];
    i /= n;
  }
  return off;
}

double pt_tensor_get_flat(const pt_tensor *t, int64_t i) {
  return pt_read_as_double(element_ptr(t, flat_to_offset(t, i)), t->dtype);
}

void pt_tensor_set_flat(pt_tensor *t, int64_t i, double v) {
  pt_write_from_double(element_ptr(t, flat_to_offset(t, i)), t->dtype, v);
}

/* --- iteration --- */

void pt_iter_init(pt_iter *it, int ndim, const int64_t *shape, int nops, const int64_t *const *strides) {
  it->ndim = ndim;
  it->nops = nops;
  it->remaining = pt_shape_numel(ndim, shape);
  it->started = false;
  for (int d = 0; d < ndim; d++) {
    it->shape[d] = shape[d];
    it->index[d] = 0;
    for (int k = 0; k < nops; k++) it->stride[k][d] = strides[k][d];
  }
  for (int k = 0; k < nops; k++) it->offset[k] = 0;
}

bool pt_iter_next(pt_iter *it) {
  if (it->remaining <= 0) return false;
  it->remaining--;
  if (!it->started) {
    it->started = true;
    return true;
  }
  for (int d = it->ndim - 1; d >= 0; d--) {
    if (++it->index[d] < it->shape[d]) {
      for (int k = 0; k < it->nops; k++) it->offset[k] += it->stride[k][d];
      return true;
    }
    for (int k = 0; k < it->nops; k++) it->offset[k] -= it->stride[k][d] * (it->shape[d] - 1);
    it->index[d] = 0;
  }
  return true;
}

/* --- copies and conversions --- */

/* A strided copy (a broadcast, a permutation, a dtype conversion) row by row: the last
 * dimension in a typed loop, the others through an odometer; it went element by element
 * through pt_iter and memcpy, 50-100x slower than PyTorch for expand/permute + contiguous. */
typedef struct copy_job {
  char *dp;
  const char *sp;
  int ndim;
  const int64_t *shape, *dstride, *sstride;
  pt_dtype ddt, sdt;
} copy_job;

#define COPY_ROW(TD, TS)                                             \
  do {                                                               \
    TD *dd = (TD *)d;                                                \
    const TS *ss = (const TS *)s;                                    \
    if (a == 1 && b == 1)                                            \
      for (int64_t i = 0; i < n; i++) dd[i] = (TD)ss[i];             \
    else                                                             \
      for (int64_t i = 0; i < n; i++) dd[i * a] = (TD)ss[i * b];     \
  } while (0)

static void copy_row(const copy_job *j, char *d, const char *s, int64_t n, int64_t a, int64_t b) {
  pt_dtype dt = j->ddt, st = j->sdt;
  if (dt == st) {
    size_t es = pt_dtype_size(dt);
    if (a == 1 && b == 1) memcpy(d, s, (size_t)n * es);
    else if (es == 4) COPY_ROW(uint32_t, uint32_t);
    else if (es == 8) COPY_ROW(uint64_t, uint64_t);
    else if (es == 1) COPY_ROW(uint8_t, uint8_t);
    else
      for (int64_t i = 0; i < n; i++) memcpy(d + i * a * (int64_t)es, s + i * b * (int64_t)es, es);
    return;
  }
  /* the conversions C defines for every value (to floating point) in typed loops */
  if (dt == PT_FLOAT32 && st == PT_FLOAT64) COPY_ROW(float, double);
  else if (dt == PT_FLOAT64 && st == PT_FLOAT32) COPY_ROW(double, float);
  else if (dt == PT_FLOAT32 && st == PT_INT64) COPY_ROW(float, int64_t);
  else if (dt == PT_FLOAT64 && st == PT_INT64) COPY_ROW(double, int64_t);
  else if (dt == PT_FLOAT32 && st == PT_UINT8) COPY_ROW(float, uint8_t);
  else if (dt == PT_FLOAT64 && st == PT_UINT8) COPY_ROW(double, uint8_t);
  else if (dt == PT_FLOAT32 && st == PT_INT32) COPY_ROW(float, int32_t);
  else if (dt == PT_FLOAT64 && st == PT_INT32) COPY_ROW(double, int32_t);
  /* integer to integer: C's conversions, which keep the low bits as torch's casts do
   * (int64 2^40 + 6 to int32 is 6, 257 to uint8 is 1); through a double they were exact only
   * below 2^53 and undefined outside the target's range */
  else if (dt == PT_INT64 && st == PT_INT32) COPY_ROW(int64_t, int32_t);
  else if (dt == PT_INT64 && (st == PT_UINT8 || st == PT_BOOL)) COPY_ROW(int64_t, uint8_t);
  else if (dt == PT_INT32 && st == PT_INT64) COPY_ROW(int32_t, int64_t);
  else if (dt == PT_INT32 && (st == PT_UINT8 || st == PT_BOOL)) COPY_ROW(int32_t, uint8_t);
  else if (dt == PT_UINT8 && st == PT_INT64) COPY_ROW(uint8_t, int64_t);
  else if (dt == PT_UINT8 && st == PT_INT32) COPY_ROW(uint8_t, int32_t);
  else if (dt == PT_UINT8 && st == PT_BOOL) COPY_ROW(uint8_t, uint8_t);
  else {
    size_t ds = pt_dtype_size(dt), ss = pt_dtype_size(st);
    for (int64_t i = 0; i < n; i++)
      pt_write_from_double(d + i * a * (int64_t)ds, dt, pt_read_as_double(s + i * b * (int64_t)ss, st));
  }
}

static void copy_rows(void *arg, int64_t r0, int64_t r1, int tid) {
  (void)tid;
  const copy_job *j = arg;
  int outer = j->ndim - 1;
  int64_t inner = j->ndim ? j->shape[outer] : 1;
  int64_t a = j->ndim ? j->dstride[outer] : 0, b = j->ndim ? j->sstride[outer] : 0;
  size_t ds = pt_dtype_size(j->ddt), ss = pt_dtype_size(j->sdt);
  int64_t idx[PT_MAX_DIMS], doff = 0, soff = 0, r = r0;
  for (int k = outer - 1; k >= 0; k--) { /* the coordinates of row r0 */
    idx[k] = r % j->shape[k];
    r /= j->shape[k];
    doff += idx[k] * j->dstride[k];
    soff += idx[k] * j->sstride[k];
  }
  for (int64_t row = r0; row < r1; row++) {
    copy_row(j, j->dp + doff * (int64_t)ds, j->sp + soff * (int64_t)ss, inner, a, b);
    for (int k = outer - 1; k >= 0; k--) { /* the next row */
      doff += j->dstride[k];
      soff += j->sstride[k];
      if (++idx[k] < j->shape[k]) break;
      doff -= idx[k] * j->dstride[k];
      soff -= idx[k] * j->sstride[k];
      idx[k] = 0;
    }
  }
}

/* Tiled copy for a transposed pair of last dims (TILE x TILE blocks); work items are
 * (matrix, block row) pairs in order, the matrices of the leading dims through an odometer. */
#define TILE 32
static void copy_tiles(void *arg, int64_t w0, int64_t w1, int tid) {
  (void)tid;
  const copy_job *j = arg;
  int nd = j->ndim;
  int64_t R = j->shape[nd - 2], C = j->shape[nd - 1], tiles_r = (R + TILE - 1) / TILE;
  int64_t drs = j->dstride[nd - 2], scs = j->sstride[nd - 1]; /* dst rows, src columns */
  size_t es = pt_dtype_size(j->ddt);
  for (int64_t w = w0; w < w1; w++) {
    int64_t mat = w / tiles_r, r0 = (w % tiles_r) * TILE, r1 = r0 + TILE < R ? r0 + TILE : R;
    int64_t doff = 0, soff = 0, m = mat;
    for (int k = nd - 3; k >= 0; k--) { /* the matrix's offsets */
      int64_t i = m % j->shape[k];
      m /= j->shape[k];
      doff += i * j->dstride[k];
      soff += i * j->sstride[k];
    }
    for (int64_t c0 = 0; c0 < C; c0 += TILE) {
      int64_t c1 = c0 + TILE < C ? c0 + TILE : C;
      if (es == 4) {
        uint32_t *d = (uint32_t *)j->dp + doff;
        const uint32_t *s = (const uint32_t *)j->sp + soff;
        for (int64_t r = r0; r < r1; r++)
          for (int64_t c = c0; c < c1; c++) d[r * drs + c] = s[r + c * scs];
      } else {
        uint64_t *d = (uint64_t *)j->dp + doff;
        const uint64_t *s = (const uint64_t *)j->sp + soff;
        for (int64_t r = r0; r < r1; r++)
          for (int64_t c = c0; c < c1; c++) d[r * drs + c] = s[r + c * scs];
      }
    }
  }
}

pt_status pt_tensor_copy_into(pt_ctx *ctx, pt_tensor *dst, const pt_tensor *src) {
  int nout;
  int64_t shape[PT_MAX_DIMS];
  pt_status st = pt_broadcast_shapes(ctx, "copy_", dst->ndim, dst->shape, src->ndim, src->shape,
                                     &nout, shape);
  if (st) return st;
  if (nout != dst->ndim || memcmp(shape, dst->shape, (size_t)nout * sizeof(int64_t)) != 0) {
    char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "copy_: source shape %s cannot be broadcast to %s",
                   pt_shape_format(src->ndim, src->shape, a, sizeof a),
                   pt_shape_format(dst->ndim, dst->shape, b, sizeof b));
  }
  int64_t n = pt_tensor_numel(dst);
  if (dst->dtype == src->dtype && pt_tensor_is_contiguous(dst) && pt_tensor_is_contiguous(src) &&
      pt_tensor_numel(src) == n) {
    memmove(pt_tensor_data(dst), pt_tensor_data(src), (size_t)n * pt_dtype_size(dst->dtype));
    return PT_OK;
  }
  int64_t sstride[PT_MAX_DIMS];
  pt_broadcast_strides(src, dst->ndim, dst->shape, sstride);
  copy_job j = {pt_tensor_data(dst), pt_tensor_data(src), dst->ndim, dst->shape, dst->stride, sstride,
                dst->dtype, src->dtype};
  int nd = dst->ndim;
  size_t es = pt_dtype_size(dst->dtype);
  if (nd >= 2 && dst->dtype == src->dtype && (es == 4 || es == 8) && dst->stride[nd - 1] == 1 &&
      sstride[nd - 2] == 1 && sstride[nd - 1] > 1 && src->storage != dst->storage &&
      dst->shape[nd - 1] >= 32 && dst->shape[nd - 2] >= 32) {
    /* the last two dims transposed (t:t():contiguous(), a key-major layout): tiles, so that
     * neither side walks memory with a large stride (2.6x slower than PyTorch row by row) */
    int64_t mats = n / (dst->shape[nd - 1] * dst->shape[nd - 2]);
    int64_t tiles_r = (dst->shape[nd - 2] + TILE - 1) / TILE;
    pt_parallel_for(ctx, mats * tiles_r, 1, copy_tiles, &j);
    atomic_fetch_add(&dst->storage->version, 1);
    return PT_OK;
  }
  int64_t inner = dst->ndim ? dst->shape[dst->ndim - 1] : 1, rows = inner ? n / inner : 0;
  /* rows of the last dimension, split over the intra-op threads when there is enough to copy */
  int64_t grain = inner >= 65536 ? 1 : 65536 / (inner ? inner : 1);
  if (src->storage == dst->storage) grain = rows; /* may overlap: one thread, in order */
  pt_parallel_for(ctx, rows, grain, copy_rows, &j);
  atomic_fetch_add(&dst->storage->version, 1);
  return PT_OK;
}

pt_status pt_tensor_clone_raw(pt_ctx *ctx, const pt_tensor *t, pt_tensor **out) {
  pt_tensor *r;
  pt_status st = pt_tensor_empty(ctx, t->dtype, t->ndim, t->shape, &r);
  if (st) return st;
  st = pt_tensor_copy_into(ctx, r, t);
  if (st) {
    pt_tensor_release(r);
    return st;
  }
  *out = r;
  return PT_OK;
}

pt_status pt_tensor_contiguous_raw(pt_ctx *ctx, pt_tensor *t, pt_tensor **out) {
  if (pt_tensor_is_contiguous(t)) {
    *out = pt_tensor_retain(t);
    return PT_OK;
  }
  return pt_tensor_clone_raw(ctx, t, out);
}

pt_status pt_tensor_to_dtype_raw(pt_ctx *ctx, pt_tensor *t, pt_dtype dt, pt_tensor **out) {
  if (t->dtype == dt) {
    *out = pt_tensor_retain(t);
    return PT_OK;
  }
  pt_tensor *r;
  pt_status st = pt_tensor_empty(ctx, dt, t->ndim, t->shape, &r);
  if (st) return st;
  st = pt_tensor_copy_into(ctx, r, t);
  if (st) {
    pt_tensor_release(r);
    return st;
  }
  *out = r;
  return PT_OK;
}

/* dst += src elementwise, both of one shape and any strides (a transposed gradient arriving at
 * the autograd engine, a slice of a pending gradient): element by element through get/set it
 * was a tenth of an RNN's backward */
#define ADD_STRIDED(T)                                                                           \
  do {                                                                                           \
    T *d = pt_tensor_data(dst);                                                                  \
    const T *s = (const T *)pt_tensor_data(src);                                                 \
    int nd = dst->ndim;                                                                          \
    int64_t inner = nd ? dst->shape[nd - 1] : 1;                                                 \
    int64_t dis = nd ? dst->stride[nd - 1] : 1, sis = nd ? src->stride[nd - 1] : 1;              \
    int64_t idx[PT_MAX_DIMS] = {0};                                                              \
    for (int64_t done = 0; done < n && inner > 0; done += inner) {                               \
      int64_t od = 0, os = 0;                                                                    \
      for (int k = 0; k + 1 < nd; k++) {                                                         \
        od += idx[k] * dst->stride[k];                                                           \
        os += idx[k] * src->stride[k];                                                           \
      }                                                                                          \
      for (int64_t j = 0; j < inner; j++) d[od + j * dis] += s[os + j * sis];                    \
      for (int k = nd - 2; k >= 0; k--) {                                                        \
        if (++idx[k] < dst->shape[k]) break;                                                     \
        idx[k] = 0;                                                                              \
      }                                                                                          \
    }                                                                                            \
  } while (0)

void pt_tensor_add_raw(pt_tensor *dst, const pt_tensor *src) {
  int64_t n = pt_tensor_numel(dst);
  bool contiguous = pt_tensor_is_contiguous(dst) && pt_tensor_is_contiguous(src);
  bool same = dst->ndim == src->ndim && memcmp(dst->shape, src->shape, (size_t)dst->ndim * sizeof(int64_t)) == 0;
  if (contiguous && dst->dtype == PT_FLOAT32 && src->dtype == PT_FLOAT32) {
    float *d = pt_tensor_data(dst);
    const float *s = pt_tensor_data(src);
    for (int64_t i = 0; i < n; i++) d[i] += s[i];
  } else if (contiguous && dst->dtype == PT_FLOAT64 && src->dtype == PT_FLOAT64) {
    double *d = pt_tensor_data(dst);
    const double *s = pt_tensor_data(src);
    for (int64_t i = 0; i < n; i++) d[i] += s[i];
  } else if (same && dst->dtype == PT_FLOAT32 && src->dtype == PT_FLOAT32) {
    ADD_STRIDED(float);
  } else if (same && dst->dtype == PT_FLOAT64 && src->dtype == PT_FLOAT64) {
    ADD_STRIDED(double);
  } else {
    for (int64_t i = 0; i < n; i++)
      pt_tensor_set_flat(dst, i, pt_tensor_get_flat(dst, i) + pt_tensor_get_flat(src, i));
  }
}

pt_status pt_tensor_fill(pt_ctx *ctx, pt_tensor *t, double v) {
  (void)ctx;
  int64_t n = pt_tensor_numel(t);
  if (pt_tensor_is_contiguous(t)) {
    char *p = pt_tensor_data(t);
    if (t->dtype == PT_FLOAT32) {
      float f = (float)v, *fp = (float *)p;
      for (int64_t i = 0; i < n; i++) fp[i] = f;
    } else if (v == 0.0) {
      memset(p, 0, (size_t)n * pt_dtype_size(t->dtype));
    } else {
      size_t es = pt_dtype_size(t->dtype);
      if (n > 0) pt_write_from_double(p, t->dtype, v);
      for (int64_t i = 1; i < n; i++) memcpy(p + i * (int64_t)es, p, es);
    }
  } else {
    for (int64_t i = 0; i < n; i++) pt_tensor_set_flat(t, i, v);
  }
  atomic_fetch_add(&t->storage->version, 1);
  return PT_OK;
}

pt_status pt_tensor_set_data(pt_ctx *ctx, pt_tensor *t, pt_tensor *src) {
  if (t->grad_fn) return pt_fail(ctx, PT_EARG, "set_data: only a leaf tensor's data can be replaced");
  if (t == src) return PT_OK;
  /* an embedded t's reference to its home storage stays (the block holds t itself); any
   * other storage it points to is referenced on its own */
  pt_storage *home = home_storage(t), *old = t->storage, *s = src->storage;
  if (s != home) pt_storage_retain(s);
  t->storage = s;
  if (old != home) pt_storage_release(old);
  t->offset = src->offset;
  t->ndim = src->ndim;
  t->dtype = src->dtype;
  memcpy(t->shape, src->shape, sizeof t->shape);
  memcpy(t->stride, src->stride, sizeof t->stride);
  pt_tensor *g = t->grad;
  if (g && (g->dtype != t->dtype || g->ndim != t->ndim ||
            memcmp(g->shape, t->shape, (size_t)t->ndim * sizeof(int64_t)) != 0)) {
    t->grad = NULL;
    pt_tensor_release(g);
  }
  return PT_OK;
}

/* --- raw views --- */

static pt_status view_of(pt_ctx *ctx, pt_tensor *t, int ndim, const int64_t *shape,
                         const int64_t *stride, int64_t offset, pt_tensor **out) {
  return pt_tensor_from_storage(ctx, t->storage, t->dtype, offset, ndim, shape, stride, out);
}

pt_status pt_infer_shape(pt_ctx *ctx, const char *fname, int64_t numel, int ndim, int64_t *shape) {
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] == -1) {
      if (infer >= 0) return pt_fail(ctx, PT_ESHAPE, "%s: only one dimension can be -1", fname);
      infer = i;
    } else if (shape[i] < 0) {
      return pt_fail(ctx, PT_ESHAPE, "%s: invalid size %lld", fname, (long long)shape[i]);
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0) {
      char b[PT_SHAPE_STR_MAX];
      return pt_fail(ctx, PT_ESHAPE, "%s: shape %s is invalid for input of size %lld", fname,
                     pt_shape_format(ndim, shape, b, sizeof b), (long long)numel);
    }
    shape[infer] = numel / known;
  } else if (known != numel) {
    char b[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "%s: shape %s is invalid for input of size %lld", fname,
                   pt_shape_format(ndim, shape, b, sizeof b), (long long)numel);
  }
  return PT_OK;
}

pt_status pt_view_raw(pt_ctx *ctx, pt_tensor *t, int ndim, const int64_t *shape, pt_tensor **out) {
  if (ndim > PT_MAX_DIMS)
    return pt_fail(ctx, PT_ESHAPE, "view: tensors have at most %d dimensions", PT_MAX_DIMS);
  int64_t s[PT_MAX_DIMS], stride[PT_MAX_DIMS];
  memcpy(s, shape, (size_t)ndim * sizeof(int64_t));
  pt_status st = pt_infer_shape(ctx, "view", pt_tensor_numel(t), ndim, s);
  if (st) return st;
  if (!pt_tensor_is_contiguous(t)) {
    char b[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE,
                   "view: tensor of shape %s is not contiguous (use reshape or contiguous())",
                   pt_shape_format(t->ndim, t->shape, b, sizeof b));
  }
  pt_contiguous_strides(ndim, s, stride);
  return view_of(ctx, t, ndim, s, stride, t->offset, out);
}

static pt_status check_dim(pt_ctx *ctx, const char *fname, const pt_tensor *t, int dim) {
  if (dim < 0 || dim >= t->ndim)
    return pt_fail(ctx, PT_EARG, "%s: dimension %d out of range (tensor has %d dimensions)", fname,
                   dim + 1, t->ndim);
  return PT_OK;
}

pt_status pt_transpose_raw(pt_ctx *ctx, pt_tensor *t, int d0, int d1, pt_tensor **out) {
  pt_status st;
  if ((st = check_dim(ctx, "transpose", t, d0)) || (st = check_dim(ctx, "transpose", t, d1)))
    return st;
  int64_t shape[PT_MAX_DIMS], stride[PT_MAX_DIMS];
  memcpy(shape, t->shape, sizeof shape);
  memcpy(stride, t->stride, sizeof stride);
  shape[d0] = t->shape[d1];
  shape[d1] = t->shape[d0];
  stride[d0] = t->stride[d1];
  stride[d1] = t->stride[d0];
  return view_of(ctx, t, t->ndim, shape, stride, t->offset, out);
}

pt_status pt_permute_raw(pt_ctx *ctx, pt_tensor *t, const int *perm, pt_tensor **out) {
  int64_t shape[PT_MAX_DIMS], stride[PT_MAX_DIMS];
  bool seen[PT_MAX_DIMS] = {false};
  for (int i = 0; i < t->ndim; i++) {
    if (perm[i] < 0 || perm[i] >= t->ndim || seen[perm[i]])
      return pt_fail(ctx, PT_EARG, "permute: dims must be a permutation of 1..%d", t->ndim);
    seen[perm[i]] = true;
    shape[i] = t->shape[perm[i]];
    stride[i] = t->stride[perm[i]];
  }
  return view_of(ctx, t, t->ndim, shape, stride, t->offset, out);
}

pt_status pt_narrow_raw(pt_ctx *ctx, pt_tensor *t, int dim, int64_t start, int64_t length,
                        pt_tensor **out) {
  pt_status st = check_dim(ctx, "narrow", t, dim);
  if (st) return st;
  if (start < 0 || length < 0 || start > t->shape[dim] || length > t->shape[dim] - start)
    return pt_fail(ctx, PT_EARG,
                   "narrow: start %lld and length %lld out of range for dimension %d of size %lld",
                   (long long)start + 1, (long long)length, dim + 1, (long long)t->shape[dim]);
  int64_t shape[PT_MAX_DIMS];
  memcpy(shape, t->shape, sizeof shape);
  shape[dim] = length;
  return view_of(ctx, t, t->ndim, shape, t->stride, t->offset + start * t->stride[dim], out);
}

pt_status pt_select_raw(pt_ctx *ctx, pt_tensor *t, int dim, int64_t index, pt_tensor **out) {
  pt_status st = check_dim(ctx, "select", t, dim);
  if (st) return st;
  if (index < 0 || index >= t->shape[dim])
    return pt_fail(ctx, PT_EARG, "select: index %lld out of range for dimension %d of size %lld",
                   (long long)index + 1, dim + 1, (long long)t->shape[dim]);
  int64_t shape[PT_MAX_DIMS], stride[PT_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < t->ndim; i++)
    if (i != dim) {
      shape[n] = t->shape[i];
      stride[n++] = t->stride[i];
    }
  return view_of(ctx, t, n, shape, stride, t->offset + index * t->stride[dim], out);
}

pt_status pt_unsqueeze_raw(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out) {
  if (dim < 0 || dim > t->ndim)
    return pt_fail(ctx, PT_EARG, "unsqueeze: dimension %d out of range (tensor has %d dimensions)",
                   dim + 1, t->ndim);
  if (t->ndim == PT_MAX_DIMS)
    return pt_fail(ctx, PT_ESHAPE, "unsqueeze: tensors have at most %d dimensions", PT_MAX_DIMS);
  int64_t shape[PT_MAX_DIMS], stride[PT_MAX_DIMS];
  int n = 0;
  for (int i = 0; i <= t->ndim; i++) {
    if (i == dim) {
      shape[n] = 1;
      stride[n++] = i < t->ndim ? t->stride[i] * t->shape[i] : 1;
    }
    if (i < t->ndim) {
      shape[n] = t->shape[i];
      stride[n++] = t->stride[i];
    }
  }
  return view_of(ctx, t, n, shape, stride, t->offset, out);
}

pt_status pt_squeeze_raw(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out) {
  if (dim >= 0) {
    pt_status st = check_dim(ctx, "squeeze", t, dim);
    if (st) return st;
  }
  int64_t shape[PT_MAX_DIMS], stride[PT_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < t->ndim; i++) {
    bool drop = t->shape[i] == 1 && (dim < 0 || dim == i);
    if (!drop) {
      shape[n] = t->shape[i];
      stride[n++] = t->stride[i];
    }
  }
  return view_of(ctx, t, n, shape, stride, t->offset, out);
}

pt_status pt_expand_raw(pt_ctx *ctx, pt_tensor *t, int ndim, const int64_t *shape, pt_tensor **out) {
  if (ndim < t->ndim || ndim > PT_MAX_DIMS) {
    char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
    return pt_fail(ctx, PT_ESHAPE, "expand: cannot expand shape %s to %s",
                   pt_shape_format(t->ndim, t->shape, a, sizeof a),
                   pt_shape_format(ndim, shape, b, sizeof b));
  }
  int64_t s[PT_MAX_DIMS], stride[PT_MAX_DIMS];
  for (int i = 0; i < ndim; i++) {
    int it = t->ndim - ndim + i;
    int64_t want = shape[i];
    if (it < 0) {
      if (want < 0) return pt_fail(ctx, PT_ESHAPE, "expand: -1 is not allowed for a new dimension");
      s[i] = want;
      stride[i] = 0;
    } else if (want == -1 || want == t->shape[it]) {
      s[i] = t->shape[it];
      stride[i] = t->stride[it];
    } else if (t->shape[it] == 1 && want >= 0) {
      s[i] = want;
      stride[i] = 0;
    } else {
      char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
      return pt_fail(ctx, PT_ESHAPE, "expand: cannot expand shape %s to %s",
                     pt_shape_format(t->ndim, t->shape, a, sizeof a),
                     pt_shape_format(ndim, shape, b, sizeof b));
    }
  }
  return view_of(ctx, t, ndim, s, stride, t->offset, out);
}

/* --- random fills --- */

/* The same values in the same order on every layout (a contiguous float tensor is written
 * directly: set_flat's offset arithmetic per element was most of rand's time). */
pt_status pt_tensor_uniform_(pt_ctx *ctx, pt_tensor *t, double lo, double hi) {
  int64_t n = pt_tensor_numel(t);
  double w = hi - lo;
  if (pt_tensor_is_contiguous(t) && (t->dtype == PT_FLOAT32 || t->dtype == PT_FLOAT64)) {
    pt_rng r = ctx->rng; /* in registers for the loop */
    if (t->dtype == PT_FLOAT32) {
      float *p = pt_tensor_data(t);
      for (int64_t i = 0; i < n; i++) p[i] = (float)(lo + w * pt_rng_uniform(&r));
    } else {
      double *p = pt_tensor_data(t);
      for (int64_t i = 0; i < n; i++) p[i] = lo + w * pt_rng_uniform(&r);
    }
    ctx->rng = r;
  } else {
    for (int64_t i = 0; i < n; i++) pt_tensor_set_flat(t, i, lo + w * pt_rng_uniform(&ctx->rng));
  }
  return PT_OK;
}

/* float32 normals 16 at a time on AVX2, as PyTorch's normal_ draws them: 16 uniforms, then
 * Box-Muller on 8 pairs with SLEEF's log and sincos, 8 lanes at a time (the scalar double
 * log + sincos per pair was 3.7x PyTorch's time). u1 is in (0, 1] with float32's 24 bits, so
 * the tails reach sqrt(-2 log 2^-24) = 5.8 standard deviations, as PyTorch's float32 normals. */
__attribute__((target("avx2,fma"))) static void normal_fill16(pt_rng *r, float *p, int64_t n,
                                                              float mean, float std) {
  const __m256 m = _mm256_set1_ps(mean), sd = _mm256_set1_ps(std);
  const __m256 minus2 = _mm256_set1_ps(-2.0f), two_pi = _mm256_set1_ps((float)(2.0 * M_PI));
  for (int64_t b = 0; b + 16 <= n; b += 16) {
    float u[16];
    for (int i = 0; i < 16; i++) u[i] = (float)((pt_rng_next(r) >> 40) + 1) * 0x1.0p-24f;
    __m256 rad = _mm256_sqrt_ps(_mm256_mul_ps(minus2, Sleef_logf8_u10avx2(_mm256_loadu_ps(u))));
    Sleef___m256_2 sc = Sleef_sincosf8_u10avx2(_mm256_mul_ps(two_pi, _mm256_loadu_ps(u + 8)));
    _mm256_storeu_ps(p + b, _mm256_fmadd_ps(_mm256_mul_ps(rad, sc.y), sd, m));
    _mm256_storeu_ps(p + b + 8, _mm256_fmadd_ps(_mm256_mul_ps(rad, sc.x), sd, m));
  }
}

pt_status pt_tensor_normal_(pt_ctx *ctx, pt_tensor *t, double mean, double std) {
  int64_t n = pt_tensor_numel(t);
  if (pt_tensor_is_contiguous(t) && (t->dtype == PT_FLOAT32 || t->dtype == PT_FLOAT64)) {
    pt_rng r = ctx->rng;
    if (t->dtype == PT_FLOAT32) {
      float *p = pt_tensor_data(t);
      int64_t i = 0;
      if (n >= 16 && simd_f8()) {
        i = n - n % 16;
        normal_fill16(&r, p, i, (float)mean, (float)std);
      }
      for (; i < n; i++) p[i] = (float)(mean + std * pt_rng_normal(&r));
    } else {
      double *p = pt_tensor_data(t);
      for (int64_t i = 0; i < n; i++) p[i] = mean + std * pt_rng_normal(&r);
    }
    ctx->rng = r;
  } else {
    for (int64_t i = 0; i < n; i++) pt_tensor_set_flat(t, i, mean + std * pt_rng_normal(&ctx->rng));
  }
  return PT_OK;
}

pt_status pt_tensor_randint_(pt_ctx *ctx, pt_tensor *t, int64_t lo, int64_t hi) {
  if (hi <= lo)
    return pt_fail(ctx, PT_EARG, "randint: empty range [%lld, %lld)", (long long)lo, (long long)hi);
  int64_t n = pt_tensor_numel(t);
  for (int64_t i = 0; i < n; i++)
    pt_tensor_set_flat(t, i, (double)(lo + (int64_t)pt_rng_below(&ctx->rng, (uint64_t)(hi - lo))));
  return PT_OK;
}
