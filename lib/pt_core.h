/* partrain core: status codes, the per-state context, dtypes and devices.
 * lib/ is plain C17: it never includes lua.h and never aborts on bad input.
 * Every fallible function returns a pt_status and leaves a message in ctx->err. */
#ifndef PT_CORE_H
#define PT_CORE_H

#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum pt_status {
  PT_OK = 0,
  PT_EARG,     /* bad argument: type, range, dtype */
  PT_ESHAPE,   /* shapes do not fit */
  PT_ENOMEM,   /* allocation failed */
  PT_EIO,      /* file could not be read or written */
  PT_EFORMAT,  /* malformed file contents */
  PT_EDEVICE,  /* device not available */
  PT_ESTATE,   /* object in the wrong state (freed tensor, graph already released) */
  PT_EINTR,    /* interrupted */
} pt_status;

typedef enum pt_dtype {
  PT_FLOAT32 = 0,
  PT_FLOAT64,
  PT_INT64,
  PT_INT32,
  PT_UINT8,
  PT_BOOL,
  PT_DTYPE_COUNT
} pt_dtype;

typedef enum pt_device_type { PT_CPU = 0, PT_CUDA = 1 } pt_device_type;

typedef struct pt_device {
  pt_device_type type;
  int index;
} pt_device;

#define PT_ERRMSG_MAX 512

struct pt_tensor;
struct pt_ctx;

/* Where leaf gradients go. The default adds into leaf->grad; the dispatcher
 * redirects a worker's accumulation into its own buffers. */
typedef pt_status (*pt_accumulate_fn)(struct pt_ctx *ctx, struct pt_tensor *leaf,
                                      struct pt_tensor *grad, void *userdata);

/* A batch-1 linear layer's product y = W x (+ y when beta, y holding the bias), computed by the
 * dispatcher's workers together: par_by_sample's workers of one window each multiply their
 * block of a large weight's rows by every worker's input, so that each core reads only the rows
 * it also steps (lib/nn.c calls it for a contiguous float weight; false: not handled here). */
typedef bool (*pt_linear_coop_fn)(void *userdata, const struct pt_tensor *w, const void *x,
                                  void *y, bool beta);

/* Random generator state: xoshiro256** seeded through splitmix64. */
typedef struct pt_rng {
  uint64_t s[4];
  bool has_spare_normal;
  double spare_normal;
} pt_rng;

/* One per lua_State (or per C test). Nothing in lib/ is global and mutable. */
typedef struct pt_ctx {
  char err[PT_ERRMSG_MAX];
  pt_status status;
  pt_rng rng;
  bool grad_enabled;
  pt_accumulate_fn accumulate;
  void *accumulate_data;
  pt_linear_coop_fn linear_coop; /* NULL: every product on this thread */
  void *linear_coop_data;
  volatile sig_atomic_t *interrupted; /* optional: set by a signal handler */
  size_t bytes_allocated;             /* tensor bytes since the last GC report */
  int intra_threads;                  /* threads one op may use (lib/parallel.h); 0 = all */
  uint64_t graph_tag;                 /* given to every autograd node recorded (0: none) */
  /* set by the autograd engine during a pass that must see every leaf gradient arrive
   * (autograd.grad, create_graph, hooked leaves): backward functions then return leaf
   * gradients instead of writing them into .grad directly (pt_autograd_grad_target) */
  bool grad_direct_off;
  /* during a pass that differentiates only some tensors (autograd.grad, backward{inputs=}):
   * those tensors (NULL otherwise), for backward functions that write leaf gradients of their
   * own (nn.DataParallel's replicas) */
  struct pt_tensor *const *pass_inputs;
  int n_pass_inputs;
  /* the host's handle for calling back into it (the Lua state running a backward pass, so that
   * autograd.Function nodes can run their Lua backward); never used by lib/ */
  void *host_state;
  /* anomaly detection (pt.autograd.set_detect_anomaly): backward checks every gradient a node
   * returns for NaN, and a failing pass leaves the node it failed in here (a retained pt_node,
   * for the host to name the forward call that created it; the host releases it) */
  bool detect_anomaly;
  void *anomaly_node;
  /* set by the host while a dispatcher worker runs a sample: batch norm hands the update of its
   * running statistics here (the batch's mean and unbiased variance, C channels) instead of
   * applying it; the host applies the window's updates in sample order afterwards
   * (pt_batch_norm_update_running) */
  pt_status (*running_defer)(void *data, struct pt_tensor *rmean, struct pt_tensor *rvar, const double *mean,
                             const double *var, int64_t C, double momentum);
  void *running_defer_data;
} pt_ctx;

void pt_ctx_init(pt_ctx *ctx, uint64_t seed);

/* Record an error: formats the message into ctx->err and returns code. */
pt_status pt_fail(pt_ctx *ctx, pt_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
pt_status pt_failv(pt_ctx *ctx, pt_status code, const char *fmt, va_list ap);
/* Prefix the current message with "prefix: " (keeps the status). */
pt_status pt_fail_prefix(pt_ctx *ctx, const char *prefix);
const char *pt_errmsg(const pt_ctx *ctx);

/* Random numbers */
void pt_rng_seed(pt_rng *rng, uint64_t seed);
/* inline: fills draw millions of numbers, with the state in registers (a local copy) */
static inline uint64_t pt_rng_next(pt_rng *rng) {
  uint64_t *s = rng->s;
  uint64_t x = s[1] * 5, result = ((x << 7) | (x >> 57)) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = (s[3] << 45) | (s[3] >> 19);
  return result;
}
static inline double pt_rng_uniform(pt_rng *rng) { /* [0, 1) */
  return (double)(pt_rng_next(rng) >> 11) * 0x1.0p-53;
}
double pt_rng_normal(pt_rng *rng);         /* N(0, 1) */
uint64_t pt_rng_below(pt_rng *rng, uint64_t n); /* [0, n) without bias */
/* The generator's whole state as bytes (format 1: a version byte, the four words and the
 * spare normal, little-endian), for checkpoints: setting it back replays the same numbers. */
#define PT_RNG_STATE_BYTES 42
void pt_rng_get_state(const pt_rng *rng, unsigned char out[PT_RNG_STATE_BYTES]);
pt_status pt_rng_set_state(pt_ctx *ctx, pt_rng *rng, const unsigned char *bytes, size_t n);

/* dtypes */
extern const unsigned char pt_dtype_sizes[]; /* by dtype; inline: element addressing is hot */
static inline size_t pt_dtype_size(pt_dtype dt) {
  return (unsigned)dt < PT_DTYPE_COUNT ? pt_dtype_sizes[dt] : 0;
}
const char *pt_dtype_name(pt_dtype dt);      /* "float32", ... */
bool pt_dtype_from_name(const char *name, pt_dtype *out); /* accepts "float", "long" etc. too */
bool pt_dtype_is_floating(pt_dtype dt);
pt_dtype pt_dtype_promote(pt_dtype a, pt_dtype b); /* PyTorch's promotion rules */
/* The floating dtype of new tensors made from numbers and of integer inputs promoted to floating
 * (torch.get_default_dtype): float32 unless set; process-wide, as torch's. */
pt_dtype pt_default_float(void);
/* Sets it: float32 or float64, else PT_EARG and the message. */
pt_status pt_set_default_float(pt_ctx *ctx, pt_dtype dt);

/* devices */
pt_status pt_device_parse(pt_ctx *ctx, const char *name, pt_device *out);
void pt_device_format(pt_device d, char *buf, size_t n); /* "cpu", "cuda:0" */
bool pt_device_equal(pt_device a, pt_device b);

/* Memory: aligned to 64 bytes for AVX-512; never aborts. */
void *pt_alloc(pt_ctx *ctx, size_t nbytes);
void pt_free(void *p);

#endif
