/* Tensors: a refcounted view (shape, strides, offset) over a refcounted storage.
 * Both refcounts are atomic: tensors are shared by reference between worker threads.
 * Dimensions are 0-based in C; the Lua bindings translate from Lua's 1-based ones. */
#ifndef PT_TENSOR_H
#define PT_TENSOR_H

#include "pt_core.h"

#define PT_MAX_DIMS 8

typedef struct pt_storage {
  atomic_int refcount;
  /* Internal to tensor.c (PT_STORAGE_*): read only when release == NULL, so storages made by
   * hand (with release set) need not initialise it. */
  int flags;
  void *data;
  size_t nbytes;
  pt_device device;
  /* How to release data; NULL means pt_free(data). Used for mmap/shared memory. */
  void (*release)(struct pt_storage *s);
  void *owner;
  /* bumped by in-place writes through any tensor on this storage: views share it, so autograd
   * sees a saved tensor modified through another view (as PyTorch's version counter) */
  atomic_uint version;
} pt_storage;

struct pt_node;

typedef struct pt_tensor {
  atomic_int refcount;
  pt_storage *storage;
  int64_t offset; /* in elements */
  int ndim;
  pt_dtype dtype;
  int64_t shape[PT_MAX_DIMS];
  int64_t stride[PT_MAX_DIMS]; /* in elements */
  /* autograd */
  bool requires_grad;
  bool retains_grad;
  bool embedded; /* lib/tensor.c: t's block also holds its first storage, kept until t dies */
  struct pt_tensor *grad;     /* accumulated gradient of a leaf, or NULL */
  struct pt_node *grad_fn;    /* the node that produced this tensor, or NULL for leaves */
  /* for a view made by a view op (ops_shape.c): the tensor whose storage it views (retained; a
   * view of a view names the first), so that an in-place op on the view can update the base's
   * history (CopySlices); NULL otherwise */
  struct pt_tensor *base;
} pt_tensor;

/* Small-block allocator (lib/tensor.c) for tensor headers, small storages, autograd nodes and
 * the Lua state's own small objects: per-thread free lists over slabs kept apart from the malloc
 * heap. A block may be freed on any thread. The caller passes the size it allocated with. */
#define PT_SMALL_MAX 1024
void *pt_small_alloc(pt_ctx *ctx, size_t nbytes); /* counts in ctx->bytes_allocated (ctx may be NULL); NULL + message on failure */
void pt_small_free(void *p, size_t nbytes);       /* NULL is fine */
/* p came from the slabs (not a malloc fallback); inline: Lua's allocator asks on every call */
extern char *pt_small_region; /* the slabs' address range, NULL until made (always under ASan) */
#define PT_SMALL_REGION_BYTES ((size_t)16 << 30)
static inline bool pt_small_owns(const void *p) {
  return pt_small_region && (uintptr_t)p - (uintptr_t)pt_small_region < PT_SMALL_REGION_BYTES;
}
bool pt_small_ready(void);                         /* the slabs are available (false under ASan) */
size_t pt_small_cached_bytes(void);                /* bytes in this thread's free lists */
void pt_small_trim(void);                          /* move this thread's lists to the shared pool */

/* lifetime */
pt_tensor *pt_tensor_retain(pt_tensor *t);
void pt_tensor_release(pt_tensor *t); /* NULL is fine */
pt_storage *pt_storage_retain(pt_storage *s);
/* A storage header (allocated by the caller, freed with pt_free after release(s)) over memory
 * partrain did not allocate (a device's, a shared mapping): refcount 1, version 0. */
void pt_storage_init_external(pt_storage *s, void *data, size_t nbytes, pt_device device,
                              void (*release)(pt_storage *s), void *owner);
void pt_storage_release(pt_storage *s);
/* pt_storage.flags bit, for every storage: its data lives in a MAP_SHARED mapping, so processes
 * forked after the mapping was made read and write the same bytes (PyTorch's share_memory_;
 * the process target's results). */
#define PT_STORAGE_SHARED 4
static inline bool pt_storage_is_shared(const pt_storage *s) { return s->flags & PT_STORAGE_SHARED; }
/* Moves a CPU storage's bytes into a new MAP_SHARED anonymous mapping, in place: every tensor
 * and view over s sees the same values at a new address. Nothing to do when already shared.
 * The caller makes sure no other thread reads or writes s meanwhile. */
pt_status pt_storage_share(pt_ctx *ctx, pt_storage *s);

/* creation: a new contiguous tensor with uninitialised / zeroed data */
pt_status pt_tensor_empty(pt_ctx *ctx, pt_dtype dt, int ndim, const int64_t *shape, pt_tensor **out);
pt_status pt_tensor_zeros(pt_ctx *ctx, pt_dtype dt, int ndim, const int64_t *shape, pt_tensor **out);
pt_status pt_tensor_empty_like(pt_ctx *ctx, const pt_tensor *t, pt_tensor **out);
pt_status pt_tensor_zeros_like(pt_ctx *ctx, const pt_tensor *t, pt_tensor **out);
/* a tensor over an existing storage (retains it) */
pt_status pt_tensor_from_storage(pt_ctx *ctx, pt_storage *s, pt_dtype dt, int64_t offset, int ndim,
                                 const int64_t *shape, const int64_t *stride, pt_tensor **out);
/* a 0-d tensor holding one value */
pt_status pt_tensor_scalar(pt_ctx *ctx, pt_dtype dt, double value, pt_tensor **out);

/* shape helpers */
int64_t pt_tensor_numel(const pt_tensor *t);
bool pt_tensor_is_contiguous(const pt_tensor *t);
/* Fails when two elements of t are one memory location (a dimension of size > 1 with stride 0,
 * as expand makes), as PyTorch's in-place ops do: t cannot be written in place. */
pt_status pt_check_no_internal_overlap(pt_ctx *ctx, const char *fname, const pt_tensor *t);
void pt_contiguous_strides(int ndim, const int64_t *shape, int64_t *stride);
int64_t pt_shape_numel(int ndim, const int64_t *shape);
/* "{3,4}" into buf; returns buf */
const char *pt_shape_format(int ndim, const int64_t *shape, char *buf, size_t n);
#define PT_SHAPE_STR_MAX 128
/* Broadcast two shapes (NumPy rules); fails with "<fname>: shapes {..} and {..} cannot be broadcast" */
pt_status pt_broadcast_shapes(pt_ctx *ctx, const char *fname, int na, const int64_t *sa, int nb,
                              const int64_t *sb, int *nout, int64_t *sout);
/* Strides that read t as if it had shape (ndim, shape) under broadcasting (0 for expanded dims). */
void pt_broadcast_strides(const pt_tensor *t, int ndim, const int64_t *shape, int64_t *stride);

/* data pointer of the first element and element access (any dtype, as double) */
static inline void *pt_tensor_data(const pt_tensor *t) {
  return (char *)t->storage->data + t->offset * (int64_t)pt_dtype_size(t->dtype);
}
double pt_tensor_get(const pt_tensor *t, const int64_t *index);  /* index has ndim entries */
void pt_tensor_set(pt_tensor *t, const int64_t *index, double v);
double pt_read_as_double(const void *p, pt_dtype dt);
void pt_write_from_double(void *p, pt_dtype dt, double v);
/* Whether v becomes an element of dtype dt without overflow, by PyTorch's rule: float64 always,
 * float32 unless finite beyond its range; integers when finite and in range, uint8 also from
 * -255..-1 (wrapping, as C and torch). */
bool pt_value_fits(pt_dtype dt, double v);
/* PT_EARG "<fname>: value <v> cannot be converted to <dtype> without overflow" unless it fits */
pt_status pt_check_value_fits(pt_ctx *ctx, const char *fname, pt_dtype dt, double v);
/* element at flat (row-major logical) position i, any strides */
double pt_tensor_get_flat(const pt_tensor *t, int64_t i);
void pt_tensor_set_flat(pt_tensor *t, int64_t i, double v);

/* Strided iteration over the logical elements of up to 4 operands sharing one shape.
 * Usage: pt_iter it; pt_iter_init(&it, ndim, shape, n, strides...);
 *        while (pt_iter_next(&it)) { ... it.offset[k] is operand k's element offset ... } */
typedef struct pt_iter {
  int ndim, nops;
  int64_t shape[PT_MAX_DIMS];
  int64_t stride[4][PT_MAX_DIMS];
  int64_t index[PT_MAX_DIMS];
  int64_t offset[4];
  int64_t remaining;
  bool started;
} pt_iter;
void pt_iter_init(pt_iter *it, int ndim, const int64_t *shape, int nops, const int64_t *const *strides);
bool pt_iter_next(pt_iter *it);

/* copies and conversions (no autograd) */
pt_status pt_tensor_copy_into(pt_ctx *ctx, pt_tensor *dst, const pt_tensor *src); /* broadcasts src, converts dtype */
pt_status pt_tensor_contiguous_raw(pt_ctx *ctx, pt_tensor *t, pt_tensor **out);   /* retains t if already contiguous */
pt_status pt_tensor_clone_raw(pt_ctx *ctx, const pt_tensor *t, pt_tensor **out);
pt_status pt_tensor_to_dtype_raw(pt_ctx *ctx, pt_tensor *t, pt_dtype dt, pt_tensor **out); /* retains if same dtype */
pt_status pt_tensor_fill(pt_ctx *ctx, pt_tensor *t, double v);
/* t takes src's storage, dtype, shape and strides (PyTorch's t.data = src) and stays the same
 * object, so whatever holds t (an optimizer, a module sharing it) sees the new data. A leaf
 * only; its .grad is dropped when it no longer matches t's dtype and shape. */
pt_status pt_tensor_set_data(pt_ctx *ctx, pt_tensor *t, pt_tensor *src);
/* dst += src element by element in flat order (same number of elements, any dtypes and
 * strides; fast for contiguous float32/float64 pairs). No autograd, no version bump. */
void pt_tensor_add_raw(pt_tensor *dst, const pt_tensor *src);

/* Raw views (share storage, no autograd); dims are 0-based and already normalised.
 * The autograd-aware versions are in ops_shape.c. */
pt_status pt_view_raw(pt_ctx *ctx, pt_tensor *t, int ndim, const int64_t *shape, pt_tensor **out);
pt_status pt_transpose_raw(pt_ctx *ctx, pt_tensor *t, int d0, int d1, pt_tensor **out);
pt_status pt_permute_raw(pt_ctx *ctx, pt_tensor *t, const int *perm, pt_tensor **out);
pt_status pt_narrow_raw(pt_ctx *ctx, pt_tensor *t, int dim, int64_t start, int64_t length, pt_tensor **out);
pt_status pt_select_raw(pt_ctx *ctx, pt_tensor *t, int dim, int64_t index, pt_tensor **out);
pt_status pt_unsqueeze_raw(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out);
pt_status pt_squeeze_raw(pt_ctx *ctx, pt_tensor *t, int dim, pt_tensor **out); /* dim -1: all size-1 dims */
pt_status pt_expand_raw(pt_ctx *ctx, pt_tensor *t, int ndim, const int64_t *shape, pt_tensor **out);
/* Infer one -1 entry and check numel; fname names the caller in messages. */
pt_status pt_infer_shape(pt_ctx *ctx, const char *fname, int64_t numel, int ndim, int64_t *shape);

/* random fills (float dtypes; randint fills any dtype) */
pt_status pt_tensor_uniform_(pt_ctx *ctx, pt_tensor *t, double lo, double hi);
pt_status pt_tensor_normal_(pt_ctx *ctx, pt_tensor *t, double mean, double std);
pt_status pt_tensor_randint_(pt_ctx *ctx, pt_tensor *t, int64_t lo, int64_t hi); /* [lo, hi) */

#endif
