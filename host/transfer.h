/* Moving Lua values between lua_States (the caller and the dispatcher's workers).
 *
 * Values are encoded in the source state into an immutable, refcounted message (lpt_msg) and
 * decoded in the destination state, on the destination's own thread; no thread ever touches
 * another thread's lua_State. A message can be decoded many times (one model message is decoded
 * once by every worker); objects it references (tensors, shared userdata) are retained by the
 * message and retained again by every decode.
 *
 * What crosses, and how:
 *   nil, booleans, numbers (integer/float kept), strings   copied
 *   tables          deep copy; cycles and shared references kept (a table seen twice is one copy);
 *                   metatables kept (copied, or resolved by name: see below). A class (a
 *                   metatable, or a table with an __index field) keeps its identity: it comes
 *                   back to the state it came from as the original table
 *                   (getmetatable(result) == Point), changes a worker made to it left there;
 *                   see transfer.c, "classes"
 *   Lua functions   bytecode (lua_dump/lua_load) plus upvalues transferred recursively; upvalues
 *                   shared between closures stay shared; an upvalue named _ENV (or the source's
 *                   global table) becomes the destination's global table
 *   module things   a table, function or userdata reachable from package.loaded in at most three
 *                   steps (package.loaded.math, pt.zeros, package.loaded["partrain.nn"].Linear,
 *                   pt.nn.Linear, io.stdout, global C functions such as print) is sent as its path
 *                   and resolved in the destination, requiring the module there when needed; so
 *                   classes of required modules map to the destination's own copies. Tables held
 *                   in _G (user globals) are copied, not resolved.
 *   tensors         by reference: the same pt_tensor*, refcount + 1, never a data copy
 *   other userdata  by reference when its metatable has LPT_SHARE_FIELD (see lpt_share_ops)
 *   light userdata  the pointer
 *   anything else   fails naming the value: "upvalue 'conn' (userdata) of the closure cannot be
 *                   sent to a worker", "field 'x.co' (thread) cannot be sent to a worker"
 *
 * Globals (LPT_XFER_GLOBALS): every global name that a sent function reads (GETTABUP on its
 * _ENV, found by scanning the bytecode, nested functions included) is looked up in that
 * function's environment in the source (through __index, so busted's or a sandbox's environment
 * works) and, when not nil there, sent along and assigned into the destination's globals before
 * the call. Assignments a worker makes to globals stay in the worker. */
#ifndef LPT_TRANSFER_H
#define LPT_TRANSFER_H

#include <lua.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct lpt_msg lpt_msg;

/* A userdata type that crosses by reference: its metatable field LPT_SHARE_FIELD holds a light
 * userdata pointing at a static lpt_share_ops (the same in every state of the process). */
#define LPT_SHARE_FIELD "__pt_share"
typedef struct lpt_share_ops {
  const char *name;                       /* for messages */
  void *(*share)(lua_State *L, int idx);  /* a new reference to the object, NULL if unusable */
  void *(*retain)(void *obj);             /* one more reference to obj; returns obj */
  void (*release)(void *obj);             /* drop one reference */
  void (*push)(lua_State *L, void *obj);  /* push a userdata, taking over one reference */
} lpt_share_ops;

enum {
  LPT_XFER_GLOBALS = 1,  /* send the globals that functions read */
  LPT_XFER_CACHE_FN = 2, /* the first value is a function the destination may cache by bytecode
                            (its upvalues are refreshed on every decode) */
  LPT_XFER_BACK = 4,     /* results going back to the caller: messages say so */
};

lpt_msg *lpt_msg_new(void);            /* refcount 1; NULL when out of memory */
lpt_msg *lpt_msg_retain(lpt_msg *m);   /* atomic */
void lpt_msg_release(lpt_msg *m);      /* NULL is fine; releases held objects at zero */
size_t lpt_msg_bytes(const lpt_msg *m);
/* Whether a and b decode to the same values: the same bytes and the same objects (tensors and
 * shared userdata, by identity). */
bool lpt_msg_same(const lpt_msg *a, const lpt_msg *b);
/* Whether the tensor t is one of m's values (by identity); false for m NULL. */
bool lpt_msg_has_tensor(const lpt_msg *m, const void *t);

/* Encode n values at stack indices first..first+n-1 of L into m (which must be empty).
 * names[i] names value i in messages ("model", "argument 2"); names may be NULL ("value i").
 * Returns LUA_OK, or an error status with the message pushed on L. Never raises. */
int lpt_encode(lua_State *L, lpt_msg *m, int first, int n, const char *const *names,
               unsigned flags);

/* Push the values of m on L (and assign the message's globals). *nvalues gets their number.
 * Returns LUA_OK, or an error status with the message pushed on L. Never raises. */
int lpt_decode(lua_State *L, const lpt_msg *m, int *nvalues);

/* The value at idx of `from`, when it is a table that the encoder writes without its general
 * path (at most 16 entries, scalar keys, scalar or distinct tensor values, no metatable: a
 * sample such as {x, y}), copied into `to` as encoding and decoding it would and stored at
 * registry[key] of `to` (lua_rawsetp), without a message. Both states must be idle on this
 * thread. Returns LUA_OK, -1 (nothing done) for any other value, or an error status with the
 * message on `to`'s stack. */
int lpt_copy_flat(lua_State *from, int idx, lua_State *to, const void *key);

/* lpt_decode, with every tensor from[i] of the message pushed as to[i] instead (par_by_sample's
 * per-worker parameter replicas). */
typedef struct lpt_tensor_subst {
  struct pt_tensor *const *from, *const *to;
  int n;
} lpt_tensor_subst;
int lpt_decode_subst(lua_State *L, const lpt_msg *m, int *nvalues, const lpt_tensor_subst *subst);

/* Within a session the set of loaded modules is assumed not to change, so encodes skip the
 * check that keeps the path index fresh (one check at the start: on = LPT_SESSION_CHECK).
 * LPT_SESSION_RESUME starts one without the check (~0.8 us: it walks package.loaded), for a
 * caller that checked at an earlier session of the same task and accepts that a module loaded
 * since is indexed from its next check on. LPT_SESSION_END ends it. Never raises. */
enum { LPT_SESSION_END = 0, LPT_SESSION_CHECK = 1, LPT_SESSION_RESUME = 2 };
void lpt_xfer_session(lua_State *L, int on);

/* A message holding one string (used for error texts); NULL when out of memory. */
lpt_msg *lpt_msg_string(const char *s);

#endif
