/* luaopen_partrain_core: the per-state context, shared binding helpers and registration. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <pthread.h>
#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "../lib/blas.h"
#include "../lib/parallel.h"
#include "lpt.h"
#include "state.h"

#define LPT_STATE_KEY "partrain.state"

/* Areas are weak so the module links while an area is still being written. */
#define AREA(name) extern void name(lua_State *L) __attribute__((weak));
AREA(lpt_open_elementwise)
AREA(lpt_open_reduce)
AREA(lpt_open_linalg)
AREA(lpt_open_shape)
AREA(lpt_open_autograd)
AREA(lpt_open_nn)
AREA(lpt_open_optim)
AREA(lpt_open_data)
AREA(lpt_open_par)
AREA(lpt_open_ffi)
AREA(lpt_open_conv)
AREA(lpt_open_format)
AREA(lpt_open_dp)
AREA(lpt_open_sort)
AREA(lpt_open_random)
AREA(lpt_open_misc)
AREA(lpt_open_decomp)
AREA(lpt_open_special)
AREA(lpt_open_ctc)
AREA(lpt_open_image)
#undef AREA

static lpt_state *state_lookup(lua_State *L) {
  lpt_state *s = NULL;
  if (lua_getfield(L, LUA_REGISTRYINDEX, LPT_STATE_KEY) == LUA_TUSERDATA) s = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return s;
}

lpt_state *lpt_get_state(lua_State *L) {
  lpt_state *s = *(lpt_state **)lua_getextraspace(L);
  if (s) return s;
  s = state_lookup(L);
  if (!s) luaL_error(L, "partrain: module not initialised in this Lua state");
  *(lpt_state **)lua_getextraspace(L) = s; /* coroutines created before require */
  return s;
}

static uint64_t default_seed(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000007ULL ^ (uint64_t)ts.tv_nsec;
}

/* The state's __gc (when the Lua state closes): a push cut short by an error holds a tensor. */
static int state_gc(lua_State *L) {
  lpt_state *s = lua_touserdata(L, 1);
  if (s && s->push_pending) pt_tensor_release(s->push_pending);
  if (s) s->push_pending = NULL;
  return 0;
}

static lpt_state *state_create(lua_State *L) {
  lpt_state *s = state_lookup(L);
  if (s) return s;
  s = lua_newuserdatauv(L, sizeof *s, 0);
  memset(s, 0, sizeof *s);
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, state_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  pt_ctx_init(&s->ctx, default_seed());
  lua_setfield(L, LUA_REGISTRYINDEX, LPT_STATE_KEY);
  *(lpt_state **)lua_getextraspace(L) = s;
  return s;
}

/* Whether a chunk's source is one of partrain's own Lua modules (<lua dir>/partrain/x.lua). */
static bool is_partrain_source(const char *src) {
  const char *dir = pt_state_lua_dir();
  size_t n = strlen(dir);
  if (src[0] != '@' || strncmp(src + 1, dir, n) != 0 || strncmp(src + 1 + n, "/partrain/", 10) != 0)
    return false;
  return strchr(src + 1 + n + 10, '/') == NULL;
}

/* Position of the user's line: the nearest Lua caller outside partrain's own modules (a binding
 * may be reached through metamethods or through nn.lua's Linear:forward, and the user wants
 * their own line in "Linear:forward: input has 3 features ..."); else the nearest Lua caller. */
static void where_lua(lua_State *L) {
  lua_Debug ar;
  bool pushed = false;
  for (int level = 1; level <= 16 && lua_getstack(L, level, &ar); level++) {
    lua_getinfo(L, "Sl", &ar);
    if (ar.currentline <= 0) continue;
    if (!is_partrain_source(ar.source)) {
      if (pushed) lua_pop(L, 1);
      lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
      return;
    }
    if (!pushed) {
      lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
      pushed = true;
    }
  }
  if (!pushed) lua_pushliteral(L, "");
}

int lpt_error(lua_State *L) {
  pt_ctx *ctx = lpt_ctx(L);
  /* a Ctrl-C that an op stopped for is delivered by this error: a script that catches it must
   * not find every later backward or wait interrupted too */
  if (ctx->status == PT_EINTR && ctx->interrupted) *ctx->interrupted = 0;
  where_lua(L);
  lua_pushstring(L, ctx->err);
  lua_concat(L, 2);
  return lua_error(L);
}

const char *lpt_error_text(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) == LUA_TSTRING || lua_type(L, idx) == LUA_TNUMBER) {
    lua_pushvalue(L, idx);
    return lua_tostring(L, -1);
  }
  /* __tostring runs protected: the handlers that call this (a hook's failure inside backward,
   * a worker's task) must not be left by a second error from a broken error class */
  if (luaL_getmetafield(L, idx, "__tostring") != LUA_TNIL) {
    lua_pushvalue(L, idx);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_type(L, -1) == LUA_TSTRING) return lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  return lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, idx));
}

int lpt_arg_or_opt(lua_State *L, int pos, int opts, const char *key, const char *fname) {
  bool positional = pos && (!opts || pos < opts) && !lua_isnoneornil(L, pos);
  if (!opts) return positional ? pos : 0;
  if (lua_getfield(L, opts, key) == LUA_TNIL) {
    lua_pop(L, 1);
    return positional ? pos : 0;
  }
  if (positional) return lpt_errorf(L, "%s: %s given twice (as an argument and as an option)", fname, key);
  return lua_gettop(L);
}

void lpt_check_options(lua_State *L, int idx, const char *fname, const char *const *names) {
  if (!idx || !lua_istable(L, idx)) return;
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    bool known = false;
    if (lua_type(L, -1) == LUA_TSTRING)
      for (int i = 0; names[i] && !known; i++) known = strcmp(lua_tostring(L, -1), names[i]) == 0;
    if (known) continue;
    const char *key = luaL_tolstring(L, -1, NULL);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 0; names[i]; i++) {
      if (i) luaL_addstring(&b, ", ");
      luaL_addstring(&b, names[i]);
    }
    luaL_pushresult(&b);
    lpt_errorf(L, "%s: unknown option '%s' (%s%s)", fname, key, names[0] ? "options: " : "no options",
               lua_tostring(L, -1));
  }
}

void lpt_dim_opts_to_args(lua_State *L, const char *fname) {
  if (!lua_istable(L, 2)) return;
  if (lua_rawlen(L, 2) > 0) lpt_errorf(L, "%s: takes one dim, not a list of dims", fname);
  static const char *const names[] = {"dim", "keepdim", NULL};
  lpt_check_options(L, 2, fname, names);
  lpt_check_max_args(L, 2, fname);
  lua_getfield(L, 2, "dim");
  lua_getfield(L, 2, "keepdim");
  lua_remove(L, 2);
}

const char *lpt_typename(lua_State *L, int idx) {
  return lpt_test_box(L, idx) ? "Tensor" : luaL_typename(L, idx);
}

void lpt_check_max_args(lua_State *L, int n, const char *fname) {
  int top = lua_gettop(L);
  while (top > n && lua_isnil(L, top)) top--; /* f(a, b, nil) is f(a, b), as Lua users expect */
  if (top > n) {
    int k = n + 1;
    while (lua_isnil(L, k)) k++; /* name the first extra argument that is not nil */
    lpt_errorf(L, "%s: unexpected argument #%d (%s)", fname, k, lpt_typename(L, k));
  }
  lua_settop(L, top);
}

int lpt_errorf(lua_State *L, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  where_lua(L);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_concat(L, 2);
  return lua_error(L);
}

static void add_to_registry_table(lua_State *L, const char *key, const luaL_Reg *l) {
  lua_getfield(L, LUA_REGISTRYINDEX, key);
  luaL_setfuncs(L, l, 0);
  lua_pop(L, 1);
}

void lpt_add_methods(lua_State *L, const luaL_Reg *methods) {
  add_to_registry_table(L, LPT_METHODS, methods);
}
void lpt_add_metamethods(lua_State *L, const luaL_Reg *metamethods) {
  add_to_registry_table(L, LPT_TENSOR, metamethods);
}
void lpt_add_functions(lua_State *L, const luaL_Reg *functions) {
  add_to_registry_table(L, LPT_MODULE, functions);
}

void lpt_add_docs(lua_State *L, int in_methods, const char *const *pairs) {
  lua_getfield(L, LUA_REGISTRYINDEX, LPT_MODULE);
  lua_getfield(L, -1, "_docs");
  lua_getfield(L, LUA_REGISTRYINDEX, in_methods ? LPT_METHODS : LPT_MODULE);
  for (; pairs[0] && pairs[1]; pairs += 2) {
    if (lua_getfield(L, -1, pairs[0]) == LUA_TNIL) {
      lua_pop(L, 1);
      continue;
    }
    lua_pushstring(L, pairs[1]);
    lua_rawset(L, -4);
  }
  lua_pop(L, 3);
}

static size_t full_gc_bytes(void) {
  static size_t v = 0;
  if (!v) {
    const char *e = getenv("PARTRAIN_GC_FULL_MB");
    long mb = e ? atol(e) : 64;
    v = (size_t)(mb > 0 ? mb : 64) << 20;
  }
  return v;
}

void lpt_gc_account(lua_State *L) {
  lpt_state *s = lpt_get_state(L);
  size_t bytes = s->ctx.bytes_allocated;
  s->ctx.bytes_allocated = 0;
  s->gc_debt += bytes;
  /* Small tensors are paid for by their userdata; large ones push the collector along so
   * a training loop's temporaries are reclaimed before RSS grows. lpt_gc_account_fast moves
   * bytes into gc_debt itself and calls here once a step is due. */
  if (s->gc_debt < LPT_GC_STEP_BYTES) return;
  s->gc_major_debt += s->gc_debt;
  /* at least 64 MB, and 4x the Lua heap so a big Lua heap is not walked too often */
  size_t lua_heap = (size_t)lua_gc(L, LUA_GCCOUNT) << 10;
  size_t full = full_gc_bytes() > 4 * lua_heap ? full_gc_bytes() : 4 * lua_heap;
  if (s->gc_major_debt >= full) {
    /* In generational mode young collections never free old objects, and a tensor handle that
     * lived through two of them (a step's activations) stays until a major collection, which
     * Lua times by its own heap (tiny here: a handle is 8 bytes). So tensor memory Lua cannot
     * see would pile up; a full collection every so many bytes bounds it. Its cost is
     * proportional to the Lua heap, not to tensor memory. */
    s->gc_major_debt = 0;
    s->gc_debt = 0;
    lua_gc(L, LUA_GCCOLLECT);
  } else {
    int kb = (int)(s->gc_debt >> 10);
    s->gc_debt = 0;
    lua_gc(L, LUA_GCSTEP, kb);
  }
}

int lpt_push_result(lua_State *L, pt_status st, pt_tensor *t) {
  if (st) return lpt_error(L);
  lpt_push_tensor(L, t);
  return 1;
}

pt_status lpt_one_based(pt_ctx *ctx, pt_tensor *ix, bool copy, pt_tensor **out) {
  pt_tensor *r = ix;
  if (copy) {
    pt_status st = pt_tensor_clone_raw(ctx, ix, &r);
    if (st) return st;
  }
  int64_t *p = pt_tensor_data(r), n = pt_tensor_numel(r);
  for (int64_t i = 0; i < n; i++) p[i] += 1;
  *out = r;
  return PT_OK;
}

/* --- argument helpers --- */

int lpt_check_shape(lua_State *L, int idx, int64_t *shape) {
  int n = 0;
  if (lua_istable(L, idx)) {
    n = (int)luaL_len(L, idx);
    if (n > PT_MAX_DIMS) return luaL_argerror(L, idx, "too many dimensions");
    for (int i = 0; i < n; i++) {
      lua_geti(L, idx, i + 1);
      int isnum;
      lua_Integer v = lua_tointegerx(L, -1, &isnum);
      if (!isnum) return luaL_argerror(L, idx, "shape entries must be integers");
      shape[i] = v;
      lua_pop(L, 1);
    }
    return n;
  }
  int top = lua_gettop(L);
  for (int i = idx; i <= top && lua_type(L, i) == LUA_TNUMBER; i++) {
    if (n == PT_MAX_DIMS) return luaL_argerror(L, i, "too many dimensions");
    shape[n++] = luaL_checkinteger(L, i);
  }
  return n;
}

int lpt_check_dim(lua_State *L, int idx, int ndim, const char *fname) {
  lua_Integer d = luaL_checkinteger(L, idx);
  int n = ndim > 0 ? ndim : 1;
  if (d < 0) d += n + 1;
  if (d < 1 || d > n)
    return lpt_errorf(L, "%s: dimension %I out of range (tensor has %d dimensions)", fname,
                      (LUAI_UACINT)luaL_checkinteger(L, idx), ndim);
  return (int)d - 1;
}

int lpt_opt_dim(lua_State *L, int idx, int ndim, const char *fname, int def) {
  if (lua_isnoneornil(L, idx)) return def;
  return lpt_check_dim(L, idx, ndim, fname);
}

pt_dtype lpt_check_dtype(lua_State *L, int idx) {
  const char *name = luaL_checkstring(L, idx);
  pt_dtype dt;
  if (pt_dtype_from_name(name, &dt)) return dt;
  static const char expected[] = "(expected float32, float64, int64, int32, uint8 or bool)";
  if (idx > 0) return (pt_dtype)luaL_argerror(L, idx, lua_pushfstring(L, "unknown dtype '%s' %s", name, expected));
  /* an options field: name the function that was called, not an argument number */
  lua_Debug ar;
  if (lua_getstack(L, 0, &ar) && lua_getinfo(L, "n", &ar) && ar.name)
    return (pt_dtype)lpt_errorf(L, "%s: unknown dtype '%s' %s", ar.name, name, expected);
  return (pt_dtype)lpt_errorf(L, "unknown dtype '%s' %s", name, expected); /* called by pcall, say: no name */
}

pt_dtype lpt_opt_dtype(lua_State *L, int opts_idx, pt_dtype def) {
  if (opts_idx == 0 || !lua_istable(L, opts_idx)) return def;
  pt_dtype dt = def;
  if (lua_getfield(L, opts_idx, "dtype") != LUA_TNIL) dt = lpt_check_dtype(L, -1);
  lua_pop(L, 1);
  return dt;
}

bool lpt_opt_bool(lua_State *L, int opts_idx, const char *key, bool def) {
  if (opts_idx == 0 || !lua_istable(L, opts_idx)) return def;
  bool v = def;
  if (lua_getfield(L, opts_idx, key) != LUA_TNIL) v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

lua_Integer lpt_list_length(lua_State *L, int idx) {
  if (lua_getfield(L, idx, "n") == LUA_TNUMBER) {
    lua_Integer n = lua_tointeger(L, -1);
    lua_pop(L, 1);
    return n;
  }
  lua_pop(L, 1);
  return (lua_Integer)luaL_len(L, idx);
}

double lpt_opt_number(lua_State *L, int opts_idx, const char *key, double def, const char *fname) {
  if (opts_idx == 0 || !lua_istable(L, opts_idx)) return def;
  double v = def;
  int t = lua_getfield(L, opts_idx, key);
  if (t == LUA_TNUMBER) v = lua_tonumber(L, -1);
  else if (t != LUA_TNIL)
    lpt_errorf(L, "%s: option '%s' must be a number, got %s", fname, key, luaL_typename(L, -1));
  lua_pop(L, 1);
  return v;
}

/* --- module --- */

static int l_manual_seed(lua_State *L) {
  lua_Integer seed = luaL_checkinteger(L, 1);
  pt_rng_seed(&lpt_ctx(L)->rng, (uint64_t)seed);
  return 0;
}

/* pt._draw_seed() -> one draw of this state's generator, as a seed for a worker's (DataParallel's
 * replicas, a Runner's producers; par_by_sample and _pool_map draw theirs the same way in C) */
static int l_draw_seed(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)(pt_rng_next(&lpt_ctx(L)->rng) >> 12)); /* below 2^52: seed + i fits */
  return 1;
}

/* pt.get_rng_state() -> a uint8 tensor with this state's generator state */
static int l_get_rng_state(lua_State *L) {
  pt_ctx *ctx = lpt_ctx(L);
  pt_tensor *t;
  int64_t n = PT_RNG_STATE_BYTES;
  if (pt_tensor_empty(ctx, PT_UINT8, 1, &n, &t)) return lpt_error(L);
  pt_rng_get_state(&ctx->rng, pt_tensor_data(t));
  lpt_push_tensor(L, t);
  return 1;
}

/* pt.set_rng_state(t): the generator continues from a state get_rng_state() returned */
static int l_set_rng_state(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  pt_ctx *ctx = lpt_ctx(L);
  if (t->dtype != PT_UINT8 || t->ndim != 1 || !pt_tensor_is_contiguous(t))
    return lpt_errorf(L, "set_rng_state: expected the 1-D uint8 tensor of get_rng_state(), got %s of %d dimensions",
                      pt_dtype_name(t->dtype), t->ndim);
  if (pt_rng_set_state(ctx, &ctx->rng, pt_tensor_data(t), (size_t)pt_tensor_numel(t)))
    return lpt_error(L);
  return 0;
}

static int l_is_grad_enabled(lua_State *L) {
  lua_pushboolean(L, lpt_ctx(L)->grad_enabled);
  return 1;
}

static int l_set_grad_enabled(lua_State *L) {
  pt_ctx *ctx = lpt_ctx(L);
  bool old = ctx->grad_enabled;
  ctx->grad_enabled = lua_toboolean(L, 1);
  lua_pushboolean(L, old);
  return 1;
}

/* pt.clock() -> seconds on a monotonic wall clock (for timing; os.clock is CPU time) */
static int l_clock(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
  return 1;
}

/* pt._soft_interrupt(enter): training loops mark the span where Ctrl-C should wait for the step */
/* pt.set_num_threads(n): this state's ops split their loops over at most n threads (torch's
 * intra-op setting; the pool itself has PARTRAIN_NUM_THREADS or one thread per CPU) */
static int l_set_num_threads(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  if (n < 1) return lpt_errorf(L, "set_num_threads: expected a positive number of threads, got %I", n);
  lpt_ctx(L)->intra_threads = n > INT_MAX ? INT_MAX : (int)n;
  return 0;
}

static int l_get_num_threads(lua_State *L) {
  lua_pushinteger(L, pt_parallel_threads(lpt_ctx(L)));
  return 1;
}

/* pt.sgemm_backend() -> "onednn" or "openblas" (lib/blas.c) */
static int l_sgemm_backend(lua_State *L) {
  lua_pushstring(L, pt_blas_sgemm_backend());
  return 1;
}

static int l_soft_interrupt(lua_State *L) {
  pt_state_soft_interrupt(lua_toboolean(L, 1));
  return 0;
}

/* pt._interrupt_pending() -> whether a Ctrl-C came that the interpreter has not raised yet: the
 * executable's hook is set on the main thread only, so a coroutine that never returns to it
 * (a busy async item) checks this from a hook of its own */
static int l_interrupt_pending(lua_State *L) {
  lua_pushboolean(L, *pt_state_interrupt_flag() != 0);
  return 1;
}

static int l_test_alloc_fail(lua_State *L);
static const luaL_Reg module_functions[] = {
    {"_soft_interrupt", l_soft_interrupt},
    {"_interrupt_pending", l_interrupt_pending},
    {"_test_alloc_fail", l_test_alloc_fail},
    {"clock", l_clock},
    {"manual_seed", l_manual_seed},
    {"_draw_seed", l_draw_seed},
    {"get_rng_state", l_get_rng_state},
    {"set_rng_state", l_set_rng_state},
    {"is_grad_enabled", l_is_grad_enabled},
    {"set_grad_enabled", l_set_grad_enabled},
    {"set_num_threads", l_set_num_threads},
    {"get_num_threads", l_get_num_threads},
    {"sgemm_backend", l_sgemm_backend},
    {NULL, NULL},
};

/* Tensor buffers of a training step (activations, gradients) are freed and allocated again on
 * every step. Left to glibc's defaults, blocks over 128 KiB are mmap'ed and unmapped each time,
 * and every reuse pays page faults and zeroing; keeping them in the heap makes reuse free.
 * A thread's arena (DataParallel's replicas allocate on the workers) grows in heaps of at most
 * 64 MiB, and glibc unmaps a heap that empties unless the top pad says to keep that much: with
 * the default pad every batch-256 CNN step of DataParallel mapped ~16 heaps afresh and faulted
 * ~3k pages back in (~5% of the step); a 64 MiB pad keeps them. */
static void tune_allocator(void) {
#ifdef __GLIBC__
  static bool done = false;
  if (done) return;
  done = true;
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
}

/* --- small Lua objects from lib's small-block allocator ---
 * Every tensor result is a new userdata, and the collector frees them in bursts of thousands,
 * far more than glibc's per-size tcache (7 blocks) holds, so each handle paid _int_malloc and
 * _int_free (W3 `c = a + b`: ~15 ns of ~190 per op). Blocks up to LA_MAX bytes come from
 * pt_small_alloc (per-thread lists over slabs kept apart from the malloc heap: a plain cache of
 * malloc'ed blocks made glibc's heap grow without bound in a training loop); everything else,
 * and every block made before this allocator was installed, goes to the state's own allocator
 * (pt_small_owns tells them apart). The allocator must outlive the state, so it is installed
 * only where this code cannot be unloaded: in the partrain host, or a module made
 * RTLD_NODELETE. */
#define LA_MAX 256

typedef struct la_state {
  lua_Alloc f;
  void *ud;
} la_state;

/* The allocators states had before (in practice one: lauxlib's). Entries are written once under
 * the lock and never freed: a closing state still frees through its entry after its registry
 * is gone. */
#define LA_MAX_OLD 8
static la_state la_old[LA_MAX_OLD];
static int la_n_old;
static pthread_mutex_t la_mu = PTHREAD_MUTEX_INITIALIZER;

static la_state *la_entry(lua_Alloc f, void *ud) {
  la_state *r = NULL;
  pthread_mutex_lock(&la_mu);
  for (int i = 0; i < la_n_old && !r; i++)
    if (la_old[i].f == f && la_old[i].ud == ud) r = &la_old[i];
  if (!r && la_n_old < LA_MAX_OLD) {
    r = &la_old[la_n_old++];
    r->f = f;
    r->ud = ud;
  }
  pthread_mutex_unlock(&la_mu);
  return r;
}

/* --- tensor handles without finalizers ---
 * A userdata with a __gc metamethod costs the collector a finalizer call and a second cycle
 * before its memory is freed: ~130 ns per handle in generational mode against ~40 ns for one
 * without (W3 `c = a + b` allocates a handle per op). So where la_alloc is the state's
 * allocator, tensor handles have no __gc: la_alloc sees every freed block, and a block of a
 * tensor handle's size whose box carries the tag (a random per-process value XOR the box's
 * address, which Lua code can neither read nor forge) has its reference released there. The
 * offset of a userdata's memory inside its block is Lua's internal layout, so it is measured
 * once on a probe state; if the measurement fails, handles keep their __gc. */
uintptr_t lpt_box_magic;
static size_t box_offset, box_block; /* 0: not measured, handles keep their __gc */

typedef struct probe_rec {
  char *block;        /* the last userdata block allocated */
  size_t freed_osize; /* the size Lua gave when it freed that block */
} probe_rec;

static void *probe_alloc(void *ud, void *p, size_t osize, size_t nsize) {
  probe_rec *r = ud;
  if (nsize == 0) {
    if (p && p == (void *)r->block) r->freed_osize = osize;
    free(p);
    return NULL;
  }
  void *q = realloc(p, nsize);
  if (!p && osize == LUA_TUSERDATA) r->block = q; /* for new objects, osize is their type */
  return q;
}

static void box_layout_measure(void) {
  probe_rec r = {0};
  lua_State *L = lua_newstate(probe_alloc, &r);
  if (!L) return;
  char *u = lua_newuserdatauv(L, sizeof(lpt_box), 0);
  char *block = r.block;
  lua_close(L);
  if (!block || u <= block || u - block > 256) return;
  size_t off = (size_t)(u - block);
  if (r.freed_osize != off + sizeof(lpt_box)) return;
  box_offset = off;
  box_block = r.freed_osize;
}

/* Called for every freed block of a tensor handle's size. The tag is cleared: a block is reused
 * for other objects that may overwrite only part of it, and a stale tag must never match. */
static inline void box_block_free(void *p) {
  lpt_box *b = (lpt_box *)((char *)p + box_offset);
  if (b->tag == (lpt_box_magic ^ (uintptr_t)b)) {
    pt_tensor_release(b->t);
    b->t = NULL;
    b->tag = 0;
  }
}

static bool la_small; /* lib's small-block allocator is available (not in sanitizer builds) */

static void *la_alloc(void *ud, void *p, size_t osize, size_t nsize) {
  la_state *a = ud;
  if (nsize == 0 && p && osize == box_block) box_block_free(p);
  if (!la_small) return a->f(a->ud, p, osize, nsize);
  if (p && pt_small_owns(p)) {
    if (nsize == 0) {
      pt_small_free(p, osize);
      return NULL;
    }
    if (nsize <= osize) return p; /* shrinking in place: the class still fits */
    void *q = nsize <= LA_MAX ? pt_small_alloc(NULL, nsize) : a->f(a->ud, NULL, 0, nsize);
    if (!q) return NULL; /* Lua keeps p */
    memcpy(q, p, osize);
    pt_small_free(p, osize);
    return q;
  }
  if (!p && nsize && nsize <= LA_MAX) return pt_small_alloc(NULL, nsize);
  return a->f(a->ud, p, osize, nsize);
}

/* Whether the code of this file stays mapped until the process ends. */
static bool code_stays_loaded(void) {
  Dl_info info;
  if (!dladdr((void *)&la_alloc, &info) || !info.dli_fname) return false;
  if (dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) return true; /* a module */
  char exe[4096], self[4096]; /* or linked into the executable (the partrain host) */
  return realpath("/proc/self/exe", exe) && realpath(info.dli_fname, self) && strcmp(exe, self) == 0;
}

static pthread_once_t la_once = PTHREAD_ONCE_INIT;
static void la_init(void) {
  uintptr_t m = 0;
  if (getentropy(&m, sizeof m) != 0 || !m) m = (uintptr_t)&m ^ ((uintptr_t)time(NULL) * 0x9E3779B97F4A7C15u);
  lpt_box_magic = m;
  la_small = pt_small_ready();
  box_layout_measure();
}

static void install_allocator(lua_State *L) {
  pthread_once(&la_once, la_init);
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  if (f == la_alloc || (!la_small && !box_block) || !code_stays_loaded()) return;
  la_state *a = la_entry(f, ud);
  if (a) lua_setallocf(L, la_alloc, a);
}

/* pt._test_alloc_fail(k): the k-th allocation this thread makes in this state from then on
 * fails, and the one after it (Lua's emergency collection retries once), so that specs reach
 * out-of-memory paths; pt._test_alloc_fail(0) disarms it and says whether it fired. Armed, the
 * state allocates through la_alloc_failing; la_alloc itself pays nothing. */
static _Thread_local int la_fail_in, la_fail_left;

static void *la_alloc_failing(void *ud, void *p, size_t osize, size_t nsize) {
  if (nsize > 0 && (!p || nsize > osize)) {
    if (la_fail_in > 0 && --la_fail_in == 0) la_fail_left = 2;
    if (la_fail_left > 0) {
      la_fail_left--;
      return NULL;
    }
  }
  return la_alloc(ud, p, osize, nsize);
}

static int l_test_alloc_fail(lua_State *L) {
  lua_Integer k = luaL_checkinteger(L, 1);
  luaL_argcheck(L, k >= 0 && k <= 1000000, 1, "k in [0, 1e6]");
  void *ud;
  lua_Alloc f = lua_getallocf(L, &ud);
  if (k == 0) {
    if (f == la_alloc_failing) lua_setallocf(L, la_alloc, ud);
    lua_pushboolean(L, f == la_alloc_failing && la_fail_in == 0);
    la_fail_in = la_fail_left = 0;
    return 1;
  }
  if (f != la_alloc && f != la_alloc_failing) return lua_pushboolean(L, 0), 1;
  la_fail_in = (int)k;
  la_fail_left = 0;
  lua_setallocf(L, la_alloc_failing, ud);
  lua_pushboolean(L, 1);
  return 1;
}

bool lpt_boxes_freed_by_allocator(lua_State *L) {
  lua_Alloc f = lua_getallocf(L, NULL);
  return box_block && (f == la_alloc || f == la_alloc_failing);
}

/* --- Ctrl-C while C code waits (the dispatcher, native calls) --- */

static volatile sig_atomic_t sigint_flag; /* set by our SIGINT handler while we wait */

static void on_sigint(int sig) {
  sigint_flag = 1;
  signal(sig, SIG_DFL); /* a second Ctrl-C (workers stuck in C code) kills, as in lua.c */
}

/* see lpt.h */
void lpt_sigint_guard_begin(lua_State *L, lpt_sigint_guard *g) {
  g->ctx = lpt_ctx(L);
  g->old_flag = g->ctx->interrupted;
  g->installed = false;
  /* only the main state owns Ctrl-C: a pool used inside a worker (e.g. DataParallel inside
   * par_by_sample) leaves it alone, or it would race with the caller. OpenBLAS needs no
   * setting here: partrain keeps it single-threaded for good (lib/blas.h). */
  if (lpt_get_state(L)->worker_id != 0) return;
  sigint_flag = 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGINT, NULL, &g->old_action) == 0 &&
      g->old_action.sa_handler != SIG_IGN && sigaction(SIGINT, &sa, NULL) == 0) {
    g->installed = true;
    g->ctx->interrupted = &sigint_flag;
    /* a Ctrl-C that came just before inside a training loop (the host's handler left it
     * pending for the loop to raise between steps) would otherwise wait for whatever this call
     * waits for: it interrupts this call instead, once. Outside such loops the flag may be left
     * over from an interrupt the host already raised, so it is not taken. */
    if (pt_state_soft_interrupt_active() && g->old_flag && *g->old_flag) {
      *g->old_flag = 0;
      sigint_flag = 1;
    }
  }
}

void lpt_sigint_guard_end(lpt_sigint_guard *g) {
  if (g->installed) sigaction(SIGINT, &g->old_action, NULL);
  g->ctx->interrupted = g->old_flag;
}

int luaopen_partrain_core(lua_State *L) {
  tune_allocator();
  pt_blas_single_threaded();
  install_allocator(L);
  state_create(L);
  /* module table */
  lua_newtable(L);
  lua_newtable(L);
  lua_setfield(L, -2, "_docs");
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, LPT_MODULE);
  luaL_setfuncs(L, module_functions, 0);
  /* methods table */
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, LPT_METHODS);
  lua_setfield(L, -2, "Tensor");
  lpt_open_tensor(L);
  void (*const areas[])(lua_State *) = {
      lpt_open_elementwise, lpt_open_reduce, lpt_open_linalg, lpt_open_shape,
      lpt_open_autograd,    lpt_open_nn,     lpt_open_optim,  lpt_open_data,
      lpt_open_par,         lpt_open_ffi,    lpt_open_conv,   lpt_open_format,
      lpt_open_dp,          lpt_open_sort,   lpt_open_random, lpt_open_misc,
      lpt_open_decomp,      lpt_open_special, lpt_open_ctc,    lpt_open_image,
  };
  for (size_t i = 0; i < sizeof areas / sizeof areas[0]; i++)
    if (areas[i]) areas[i](L);
  static const char *const docs[] = {
      "_draw_seed", "pt._draw_seed() -> an integer below 2^52 drawn from this state's generator: the seed\n  DataParallel and Runner give their workers, so that pt.manual_seed replays them.",
      "manual_seed", "pt.manual_seed(n): seed this Lua state's random generator (each worker state has its own).",
      "get_rng_state", "pt.get_rng_state() -> uint8 tensor: this state's generator state (save it to resume dropout,\n  random transforms and initialisation exactly; pt.save(..., {rng = true}) stores it).",
      "set_rng_state", "pt.set_rng_state(t): the generator continues from a state pt.get_rng_state() returned.",
      "is_grad_enabled", "pt.is_grad_enabled() -> whether operations record a graph in this state.",
      "set_grad_enabled", "pt.set_grad_enabled(flag) -> the previous setting; see also pt.no_grad(fn).",
      "clock", "pt.clock() -> seconds on a monotonic wall clock, for timing (os.clock is CPU time).",
      "set_num_threads", "pt.set_num_threads(n): this state's ops (matmul, convolutions, large element-wise ops)\n"
      "  split their work over at most n threads, as torch.set_num_threads. The process's thread pool\n"
      "  has PARTRAIN_NUM_THREADS threads (default: one per CPU); n above that is capped at it.\n"
      "  Dispatcher workers run their ops on one thread each whatever this says.",
      "get_num_threads", "pt.get_num_threads() -> how many threads this state's ops use (see pt.set_num_threads).",
      "sgemm_backend", "pt.sgemm_backend() -> \"onednn\" or \"openblas\": the library that runs float32 matrix\n"
      "  products (matmul, Linear, convolutions). oneDNN (Debian's libdnnl2, as PyTorch uses) where it\n"
      "  is installed, with kernels picked from the CPU's features; PARTRAIN_SGEMM=openblas in the\n"
      "  environment keeps OpenBLAS. float64 products always run on OpenBLAS.",
      NULL, NULL,
  };
  lpt_add_docs(L, 0, docs);
  lua_getfield(L, LUA_REGISTRYINDEX, LPT_MODULE);
#ifdef PT_SANITIZER
  /* which sanitizer this build carries (specs that start other programs need to know) */
  lua_pushliteral(L, PT_SANITIZER);
  lua_setfield(L, -2, "_sanitizer");
#endif
  return 1;
}
