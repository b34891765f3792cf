/* Shared conventions of the Lua bindings (host/ is the only C that includes lua.h).
 * A lib status becomes a Lua error only here, after the binding has released what it holds. */
#ifndef LPT_H
#define LPT_H

#include <lauxlib.h>
#include <signal.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/autograd.h"
#include "../lib/tensor.h"

/* n zeroed bytes, or NULL. malloc + memset, not calloc: glibc's calloc skips the per-thread
 * cache, and the dispatcher makes a task and messages for every sample. */
static inline void *lpt_zalloc(size_t n) {
  void *p = malloc(n);
  if (p) memset(p, 0, n);
  return p;
}

#define LPT_TENSOR "partrain.Tensor"     /* metatable name of tensor userdata */
#define LPT_METHODS "partrain.Tensor.methods" /* registry key of the methods table */
#define LPT_MODULE "partrain.core"       /* registry key of the module table */

/* Per-lua_State host data; lua_getextraspace(L) points at it for fast access. */
typedef struct lpt_state {
  pt_ctx ctx;
  int tensor_mt_ref;     /* registry reference to it, for fast pushes */
  size_t gc_debt;
  size_t gc_major_debt;  /* tensor bytes since the last full collection */        /* tensor bytes not yet reported to the collector */
  int worker_id;         /* 0 in the caller's state, 1..n in dispatcher workers */
  int backward_depth;    /* backward passes running in this state (nested: a Function's backward) */
  /* the tensor of a push whose box could not be allocated (the error unwound past its owner):
   * released by the next push or when the state closes (lpt_box_new) */
  pt_tensor *push_pending;
  /* pt.set_printoptions: how tostring(t) prints (host/l_tensor.c); zero fields mean the defaults */
  struct lpt_print_opts {
    int precision;       /* digits after the point (default 4) */
    int64_t threshold;   /* more elements than this are summarised (default 1000) */
    int edgeitems;       /* entries shown at each end of a summarised dimension (default 3) */
    int linewidth;       /* characters per line (default 80) */
    int sci_mode;        /* 0: automatic, 1: always scientific, -1: never */
    bool set;            /* any field was set */
  } print;
} lpt_state;

/* The userdata: a box holding one reference. A closed (<close>) tensor has t == NULL.
 * tag marks the block as a tensor handle for the state's allocator, which releases t when the
 * collector frees the block (no __gc: see "tensor handles without finalizers" in l_module.c). */
typedef struct lpt_box {
  pt_tensor *t;
  uintptr_t tag;
} lpt_box;

extern uintptr_t lpt_box_magic; /* random per process; tag == magic ^ the box's address */

/* The box at idx when it is a tensor handle (open or closed), else NULL. The tag tells handles
 * apart without fetching the metatable (the hot path of every binding). */
static inline lpt_box *lpt_test_box(lua_State *L, int idx) {
  /* a full userdata of a box's size (a light userdata's raw length is 0) */
  lpt_box *b = lua_touserdata(L, idx);
  if (!b || lua_rawlen(L, idx) != sizeof(lpt_box)) return NULL;
  return b->tag == (lpt_box_magic ^ (uintptr_t)b) ? b : NULL;
}

/* The live tensor at idx, or NULL (not a tensor, or a closed one). */
static inline pt_tensor *lpt_test_tensor(lua_State *L, int idx) {
  lpt_box *b = lpt_test_box(L, idx);
  return b ? b->t : NULL;
}

/* A new box for t (taking over the reference) on top of the stack, without its metatable. When
 * the allocation raises (out of memory), t is left in S->push_pending, not leaked. */
static inline lpt_box *lpt_box_new(lua_State *L, lpt_state *S, pt_tensor *t) {
  if (__builtin_expect(S->push_pending != NULL, 0)) pt_tensor_release(S->push_pending);
  S->push_pending = t;
  lpt_box *b = lua_newuserdatauv(L, sizeof *b, 0);
  S->push_pending = NULL;
  b->t = t;
  b->tag = lpt_box_magic ^ (uintptr_t)b;
  return b;
}
/* Whether the collector's frees release this state's tensor handles (the tensor metatable then
 * has no __gc). */
bool lpt_boxes_freed_by_allocator(lua_State *L);

lpt_state *lpt_get_state(lua_State *L);
/* anomaly detection is on: note where node's forward call was (host/l_autograd.c) */
void lpt_anomaly_note(lua_State *L, pt_node *node);
static inline pt_ctx *lpt_ctx(lua_State *L) { return &lpt_get_state(L)->ctx; }
/* lpt_get_state without the call on hot paths: the pointer sits in the state's extra space. */
static inline lpt_state *lpt_state_fast(lua_State *L) {
  lpt_state *s = *(lpt_state **)lua_getextraspace(L);
  return s ? s : lpt_get_state(L);
}

/* Raise the ctx's message as a Lua error at the caller's level. Never returns. */
int lpt_error(lua_State *L);
/* Raise "fname: message" (like luaL_error, at the caller's level). Never returns. */
int lpt_errorf(lua_State *L, const char *fmt, ...);
/* Raises "<fname>: value <v> cannot be converted to <dtype> without overflow" unless the number
 * v (from stack index idx) fits dtype dt as PyTorch requires; an int64 from a Lua integer always
 * fits. Returns 0. */
int lpt_check_value(lua_State *L, const char *fname, pt_dtype dt, int idx, double v);
/* Pushes and returns the text of the error object at idx, as lua.c reports one: a string or a
 * number as it is, else its __tostring (called protected: an error there is not raised), else
 * "(error object is a <type> value)". Raises only when memory runs out. */
const char *lpt_error_text(lua_State *L, int idx);
/* The options table at idx (0: none) may hold only the keys listed (NULL-terminated): a
 * misspelled or unsupported option is an error naming it and the options there are
 * ("sort: unknown option 'descendng' (options: dim, descending)"), never the default. */
void lpt_check_options(lua_State *L, int idx, const char *fname, const char *const *names);
/* A setting given by position pos (0: none; not nil, and before the options table at opts) or as
 * the option key of the table at opts (0: none): the stack index holding it (an option's value is
 * pushed), 0 when neither gives it. Both is an error: "<fname>: <key> given twice (as an argument
 * and as an option)". */
int lpt_arg_or_opt(lua_State *L, int pos, int opts, const char *key, const char *fname);
/* Raises "<fname>: unexpected argument #k (<type>)" when more than n arguments were passed (k:
 * the first extra one that is not nil). Trailing nils do not count: f(t, 1, nil) is f(t, 1), as
 * Lua users expect of an explicit nil (a passed-through optional argument); they are removed
 * from the stack, so that lua_gettop afterwards (a trailing options table) sees the arguments. */
void lpt_check_max_args(lua_State *L, int n, const char *fname);
/* t:max({dim=, keepdim=}) and the like, as torch's keywords: an options table at argument 2
 * becomes arguments 2 (dim) and 3 (keepdim); a list there is "takes one dim, not a list of dims" */
void lpt_dim_opts_to_args(lua_State *L, const char *fname);
/* the type of the value at idx as a message names it: "Tensor" for a tensor, else Lua's name */
const char *lpt_typename(lua_State *L, int idx);

/* Tensors on the stack */
pt_tensor *lpt_check_tensor(lua_State *L, int idx); /* raises a type error naming the argument */
/* Push a tensor, taking over the caller's reference (t may not be NULL). */
void lpt_push_tensor(lua_State *L, pt_tensor *t);
/* Pushes the element of dtype dt at p as Lua sees it: a boolean, an integer (exact, int64
 * beyond 2^53 too) or a float. */
void lpt_push_element(lua_State *L, const void *p, pt_dtype dt);
/* Take a tensor or a Lua number (as a 0-d tensor of dtype `like`); new reference. */
pt_tensor *lpt_to_tensor(lua_State *L, int idx, pt_dtype like);

/* Raise the ctx's message when st fails, else push t (taking over the reference): the common
 * tail of a binding returning one tensor. */
int lpt_push_result(lua_State *L, pt_status st, pt_tensor *t);
/* Index tensors are 0-based in lib/ and 1-based in Lua: add 1 to every element of the int64
 * tensor ix, in place or (copy, when a graph node keeps the 0-based one) in a new tensor. */
pt_status lpt_one_based(pt_ctx *ctx, pt_tensor *ix, bool copy, pt_tensor **out);

/* A shape given as varargs of integers from idx on, or as one table; returns ndim. */
int lpt_check_shape(lua_State *L, int idx, int64_t *shape);
/* Lua 1-based (negative from the end) dimension -> 0-based; raises "fname: dimension ..." */
int lpt_check_dim(lua_State *L, int idx, int ndim, const char *fname);
int lpt_opt_dim(lua_State *L, int idx, int ndim, const char *fname, int def);
/* Option table fields */
pt_dtype lpt_opt_dtype(lua_State *L, int opts_idx, pt_dtype def);
bool lpt_opt_bool(lua_State *L, int opts_idx, const char *key, bool def);
/* opts[key] as a number (def when opts_idx is 0, not a table, or the key absent); anything but a
 * number raises "fname: option 'key' must be a number, got <type>" */
double lpt_opt_number(lua_State *L, int opts_idx, const char *key, double def, const char *fname);
/* The length of a list of values that may hold nils: its field n when that is a number (as
 * table.pack and pt.args set it), else #list. */
lua_Integer lpt_list_length(lua_State *L, int idx);
/* dtype given as a string "float32"/"float"/... at idx */
pt_dtype lpt_check_dtype(lua_State *L, int idx);

/* Registration: add functions to the Tensor methods table and/or the module table.
 * Each binding file has one lpt_open_<area>(lua_State *L) called from luaopen_partrain_core. */
void lpt_add_methods(lua_State *L, const luaL_Reg *methods);
void lpt_add_metamethods(lua_State *L, const luaL_Reg *metamethods);
void lpt_add_functions(lua_State *L, const luaL_Reg *functions);
/* Docs for help(x): pairs {"zeros", "zeros(size...) -> Tensor ...", ..., NULL}. Each name is
 * looked up in the methods table (in_methods) or the module table and the text is stored in
 * the module's _docs table keyed by the function value. Lua modules add to pt._docs directly. */
void lpt_add_docs(lua_State *L, int in_methods, const char *const *pairs);

/* Report tensor bytes to the collector so memory Lua cannot see still drives collection. */
void lpt_gc_account(lua_State *L);
/* Debt that makes lpt_gc_account step the collector. A dead tensor's buffer is reused only once
 * the collector has freed it, and a buffer freed sooner is still in cache: at 8 MB, a loop of
 * ops on 4 MB tensors wrote every output into cold memory (relu {256,4096} 0.29 ms, 2.9x
 * PyTorch; at 2 MB 0.17-0.19 ms), and the MLP epoch (W1) ran 3% slower (3 interleaved pairs). */
#define LPT_GC_STEP_BYTES ((size_t)2 << 20)
/* The same for pushes: moves ctx->bytes_allocated into the debt inline and calls out only when
 * the collector is due a step. */
static inline void lpt_gc_account_fast(lua_State *L, lpt_state *S) {
  size_t b = S->ctx.bytes_allocated;
  if (!b) return;
  S->ctx.bytes_allocated = 0;
  if ((S->gc_debt += b) >= LPT_GC_STEP_BYTES) lpt_gc_account(L);
}

/* While workers or native calls run, Ctrl-C is ours: it sets a flag that every wait polls
 * (ctx->interrupted, lib/pool.c); the call then stops its threads and raises "interrupted" in
 * the caller, which unwinds like any error. The previous handler (the executable's) comes back
 * at lpt_sigint_guard_end. Only the main state takes Ctrl-C over (a worker's guard does
 * nothing). A second Ctrl-C during the wait kills the process, as in lua.c. */
typedef struct lpt_sigint_guard {
  pt_ctx *ctx;
  volatile sig_atomic_t *old_flag;
  struct sigaction old_action;
  bool installed;
} lpt_sigint_guard;
void lpt_sigint_guard_begin(lua_State *L, lpt_sigint_guard *g);
void lpt_sigint_guard_end(lpt_sigint_guard *g);

/* Binding areas */
void lpt_open_tensor(lua_State *L);
void lpt_open_elementwise(lua_State *L);
void lpt_open_reduce(lua_State *L);
void lpt_open_linalg(lua_State *L);
void lpt_open_shape(lua_State *L);
void lpt_open_autograd(lua_State *L);
void lpt_open_nn(lua_State *L);
void lpt_open_optim(lua_State *L);
void lpt_open_data(lua_State *L);
void lpt_open_par(lua_State *L);
void lpt_open_ffi(lua_State *L);
void lpt_open_special(lua_State *L);

#endif
