/* Autograd from Lua: backward, autograd.grad, tensor hooks, no_grad, detach, requires_grad_,
 * retain_grad. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lpt.h"
#include "../lib/ops_elementwise.h"
#include "../lib/ops_shape.h"

/* --- tensor hooks ---
 * The hooks of a non-leaf live with its grad_fn node (node->has_hooks tells the engine), a
 * leaf's with the tensor. They are kept in a registry table of this state, keyed by the node's
 * or the tensor's address: {nodes = {[node] = {{id=, fn=}, ...}}, leaves = {...}, next_id}; the
 * table holds a reference to each key (so that an address is never reused while it has hooks),
 * given back when the last hook goes or, at the next registration or backward, when nothing
 * else holds the node or tensor any more (no gradient can reach it again). */
static const char hooks_key = 'h'; /* registry[&hooks_key] */

static void sweep_kind(lua_State *L, bool nodes, bool all);

/* The state closes: the references the table holds go. */
static int hooks_gc(lua_State *L) {
  if (lua_getfield(L, 1, "nodes") == LUA_TTABLE) sweep_kind(L, true, true);
  if (lua_getfield(L, 1, "leaves") == LUA_TTABLE) sweep_kind(L, false, true);
  return 0;
}

static void push_hooks(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &hooks_key) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_createtable(L, 0, 4);
  lua_newtable(L);
  lua_setfield(L, -2, "nodes");
  lua_newtable(L);
  lua_setfield(L, -2, "leaves");
  lua_pushinteger(L, 0);
  lua_setfield(L, -2, "next_id");
  lua_createtable(L, 0, 1); /* the metatable last: its __gc expects the fields */
  lua_pushcfunction(L, hooks_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &hooks_key);
}

/* Give back the keys nothing else holds (all: every key) of the table at the top. */
static void sweep_kind(lua_State *L, bool nodes, bool all) {
  int tbl = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, tbl)) {
    lua_pop(L, 1);
    void *key = lua_touserdata(L, -1);
    bool dead = all;
    if (!dead && nodes) dead = atomic_load(&((pt_node *)key)->refcount) == 1;
    else if (!dead) dead = atomic_load(&((pt_tensor *)key)->refcount) == 1;
    if (!dead) continue;
    lua_pushvalue(L, -1);
    lua_pushnil(L);
    lua_rawset(L, tbl); /* clearing a field during the traversal is allowed */
    if (nodes) pt_node_release(key);
    else pt_tensor_release(key);
  }
}

static void sweep_hooks(lua_State *L) {
  push_hooks(L);
  lua_getfield(L, -1, "nodes");
  sweep_kind(L, true, false);
  lua_getfield(L, -2, "leaves");
  sweep_kind(L, false, false);
  lua_pop(L, 3);
}

/* What the engine's callback needs: the state, the call's name for messages, and where a Lua
 * error raised by a hook is kept until the engine has returned. */
typedef struct hook_call {
  lua_State *L;
  const char *fname;
  bool lua_error; /* the error object is at registry[&hook_err_key] */
} hook_call;
static const char hook_err_key = 'e';

/* The engine (lib/autograd.c) calls into Lua for hooks and autograd.Function backwards. An error
 * raised there (out of memory while pushing a value or growing a table) would unwind through
 * the engine's frames and leave the pass half done (its graph, grad mode off), so that Lua work
 * runs as one protected call of body(L) with the call's data at stack index 1; a raise
 * becomes a failed status. */
typedef struct engine_call {
  pt_ctx *ctx;
  hook_call *hc;
  pt_node *node;
  pt_tensor *leaf;
  pt_tensor **grad, *gout, **gin;
  pt_status st; /* the body's own result */
} engine_call;

static pt_status engine_protected(lua_State *L, lua_CFunction body, engine_call *c) {
  if (!lua_checkstack(L, 4)) return pt_fail(c->ctx, PT_ENOMEM, "out of memory");
  int top = lua_gettop(L);
  lua_pushcfunction(L, body);
  lua_pushlightuserdata(L, c);
  if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
    const char *msg = lua_tostring(L, -1); /* an out-of-memory error is Lua's own string */
    c->st = pt_fail(c->ctx, PT_ENOMEM, "%s", msg ? msg : "out of memory");
  }
  lua_settop(L, top);
  return c->st;
}

static int tensor_hooks_body(lua_State *L) {
  engine_call *c = lua_touserdata(L, 1);
  pt_ctx *ctx = c->ctx;
  hook_call *hc = c->hc;
  pt_node *node = c->node;
  pt_tensor *leaf = c->leaf, **grad = c->grad;
  int top = lua_gettop(L);
  push_hooks(L);
  lua_getfield(L, -1, node ? "nodes" : "leaves");
  if (lua_rawgetp(L, -1, node ? (void *)node : (void *)leaf) != LUA_TTABLE) {
    lua_settop(L, top);
    c->st = PT_OK;
    return 0;
  }
  /* a copy of the list: a hook may remove hooks (itself too) */
  int n = (int)lua_rawlen(L, -1), list = lua_gettop(L);
  lua_createtable(L, n, 0);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, list, i);
    lua_getfield(L, -1, "fn");
    lua_rawseti(L, list + 1, i);
    lua_pop(L, 1);
  }
  pt_status st = PT_OK;
  for (int i = 1; i <= n && !st; i++) {
    lua_rawgeti(L, list + 1, i);
    lpt_push_tensor(L, pt_tensor_retain(*grad));
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
      const char *msg = lpt_error_text(L, -1);
      st = pt_fail(ctx, PT_EARG, "%s", msg);
      lua_pop(L, 1);
      lua_rawsetp(L, LUA_REGISTRYINDEX, &hook_err_key); /* the error object as it was */
      hc->lua_error = true;
      break;
    }
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      continue;
    }
    lpt_box *b = lpt_test_box(L, -1);
    pt_tensor *r = b ? b->t : NULL;
    char a[PT_SHAPE_STR_MAX], c[PT_SHAPE_STR_MAX];
    if (!r) {
      st = pt_fail(ctx, PT_EARG, "%s: a tensor hook must return a tensor or nil, got %s", hc->fname,
                   b ? "a closed tensor" : luaL_typename(L, -1));
    } else if (r->ndim != (*grad)->ndim ||
               memcmp(r->shape, (*grad)->shape, (size_t)r->ndim * sizeof(int64_t)) != 0) {
      st = pt_fail(ctx, PT_ESHAPE, "%s: a tensor hook returned a gradient of shape %s for a gradient of shape %s",
                   hc->fname, pt_shape_format(r->ndim, r->shape, a, sizeof a),
                   pt_shape_format((*grad)->ndim, (*grad)->shape, c, sizeof c));
    } else if (r->dtype != (*grad)->dtype) {
      st = pt_fail(ctx, PT_EARG, "%s: a tensor hook returned a gradient of dtype %s for a gradient of dtype %s",
                   hc->fname, pt_dtype_name(r->dtype), pt_dtype_name((*grad)->dtype));
    } else {
      pt_tensor_release(*grad);
      *grad = pt_tensor_retain(r);
    }
    lua_pop(L, 1);
  }
  lua_settop(L, top);
  c->st = st;
  return 0;
}

static pt_status run_tensor_hooks(pt_ctx *ctx, void *data, pt_node *node, pt_tensor *leaf,
                                  pt_tensor **grad) {
  hook_call *hc = data;
  engine_call c = {.ctx = ctx, .hc = hc, .node = node, .leaf = leaf, .grad = grad};
  return engine_protected(hc->L, tensor_hooks_body, &c);
}

/* The engine's view of this state's hooks: *leaves receives a malloc'd list of the leaves that
 * have hooks (free it); false when there are no hooks at all. */
static bool collect_hooks(lua_State *L, pt_grad_hooks *h, hook_call *hc, pt_tensor ***leaves) {
  *leaves = NULL;
  memset(h, 0, sizeof *h);
  push_hooks(L);
  lua_getfield(L, -1, "nodes");
  lua_getfield(L, -2, "leaves");
  bool any = false;
  lua_pushnil(L);
  if (lua_next(L, -3)) {
    any = true;
    lua_pop(L, 2);
  }
  int n = 0, cap = 0;
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pop(L, 1);
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      pt_tensor **grown = realloc(*leaves, (size_t)cap * sizeof *grown);
      if (!grown) break; /* out of memory: the rest of the leaves' hooks do not run */
      *leaves = grown;
    }
    (*leaves)[n++] = lua_touserdata(L, -1);
  }
  lua_pop(L, 3);
  if (!any && n == 0) return false;
  h->run = run_tensor_hooks;
  h->data = hc;
  h->n_leaves = n;
  h->leaves = *leaves;
  return true;
}

/* After a failed pass: a hook's own error as it was raised (its position, its object), else the
 * engine's message. */
static int raise_anomaly(lua_State *L);

static int raise_pass_error(lua_State *L, hook_call *hc) {
  /* a hook's error (hc), or an autograd.Function backward's, which also leaves its object there */
  if (hc->lua_error || lua_rawgetp(L, LUA_REGISTRYINDEX, &hook_err_key) != LUA_TNIL) {
    pt_ctx *ctx = lpt_ctx(L);
    pt_node_release(ctx->anomaly_node);
    ctx->anomaly_node = NULL;
    lua_rawgetp(L, LUA_REGISTRYINDEX, &hook_err_key);
    lua_pushnil(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &hook_err_key);
    return lua_error(L);
  }
  if (lpt_ctx(L)->anomaly_node) return raise_anomaly(L);
  return lpt_error(L);
}

static int handle_remove(lua_State *L);

/* t:register_hook(fn) -> handle */
static int t_register_hook(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  lpt_check_max_args(L, 2, "register_hook");
  if (!lua_isfunction(L, 2))
    return lpt_errorf(L, "register_hook: expected a function, got %s", luaL_typename(L, 2));
  if (!t->requires_grad)
    return lpt_errorf(L, "register_hook: cannot register a hook on a tensor that doesn't require gradient");
  sweep_hooks(L);
  bool leaf = t->grad_fn == NULL;
  void *key = leaf ? (void *)t : (void *)t->grad_fn;
  push_hooks(L);
  int hooks = lua_gettop(L);
  lua_getfield(L, hooks, leaf ? "leaves" : "nodes");
  if (lua_rawgetp(L, -1, key) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, -3, key);
    if (leaf) {
      pt_tensor_retain(t);
    } else {
      pt_node_retain(t->grad_fn);
      t->grad_fn->has_hooks = true;
    }
  }
  lua_getfield(L, hooks, "next_id");
  lua_Integer id = lua_tointeger(L, -1) + 1;
  lua_pop(L, 1);
  lua_pushinteger(L, id);
  lua_setfield(L, hooks, "next_id");
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, id);
  lua_setfield(L, -2, "id");
  lua_pushvalue(L, 2);
  lua_setfield(L, -2, "fn");
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
  /* the handle */
  lua_createtable(L, 0, 3);
  lua_pushlightuserdata(L, key);
  lua_setfield(L, -2, "_key");
  lua_pushboolean(L, leaf);
  lua_setfield(L, -2, "_leaf");
  lua_pushinteger(L, id);
  lua_setfield(L, -2, "_id");
  if (luaL_newmetatable(L, "partrain.RemovableHandle")) {
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, handle_remove);
    lua_setfield(L, -2, "remove");
    lua_setfield(L, -2, "__index");
  }
  lua_setmetatable(L, -2);
  return 1;
}

/* handle:remove(): the hook does not run any more (again: nothing) */
static int handle_remove(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, 1, "_key");
  void *key = lua_touserdata(L, -1);
  lua_getfield(L, 1, "_leaf");
  bool leaf = lua_toboolean(L, -1);
  lua_getfield(L, 1, "_id");
  lua_Integer id = lua_tointeger(L, -1);
  lua_settop(L, 1);
  if (!key) return 0;
  push_hooks(L);
  lua_getfield(L, -1, leaf ? "leaves" : "nodes");
  int kind = lua_gettop(L);
  if (lua_rawgetp(L, kind, key) != LUA_TTABLE) return 0;
  int list = lua_gettop(L), n = (int)lua_rawlen(L, list);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, list, i);
    lua_getfield(L, -1, "id");
    bool hit = lua_tointeger(L, -1) == id;
    lua_pop(L, 2);
    if (!hit) continue;
    for (int j = i; j < n; j++) { /* table.remove */
      lua_rawgeti(L, list, j + 1);
      lua_rawseti(L, list, j);
    }
    lua_pushnil(L);
    lua_rawseti(L, list, n);
    if (n == 1) { /* the last one: the key goes */
      lua_pushnil(L);
      lua_rawsetp(L, kind, key);
      if (leaf) {
        pt_tensor_release(key);
      } else {
        ((pt_node *)key)->has_hooks = false;
        pt_node_release(key);
      }
    }
    break;
  }
  return 0;
}

static void fn_after_pass(lua_State *L);

/* The tensors of argument idx (one tensor, or a list of them) as an array in a userdata pushed
 * on the stack (the collector frees it, also when an error unwinds); *single: one tensor. */
static pt_tensor **tensor_args(lua_State *L, int idx, const char *fname, const char *what, int *n,
                                bool *single) {
  pt_tensor **arr;
  *single = lpt_test_box(L, idx) != NULL;
  if (*single) {
    arr = lua_newuserdatauv(L, sizeof *arr, 0);
    arr[0] = lpt_check_tensor(L, idx);
    *n = 1;
    return arr;
  }
  if (!lua_istable(L, idx))
    lpt_errorf(L, "%s: %s must be a tensor or a list of tensors, got %s", fname, what,
               luaL_typename(L, idx));
  lua_Integer len = (lua_Integer)lua_rawlen(L, idx);
  if (len == 0) lpt_errorf(L, "%s: %s is an empty list", fname, what);
  if (len > 1 << 20) lpt_errorf(L, "%s: too many %s (%I)", fname, what, len);
  arr = lua_newuserdatauv(L, (size_t)len * sizeof *arr, 0);
  for (lua_Integer i = 1; i <= len; i++) {
    lua_rawgeti(L, idx, i);
    if (!lpt_test_box(L, -1))
      lpt_errorf(L, "%s: %s[%I] is not a tensor (got %s)", fname, what, i,
                 luaL_typename(L, -1));
    arr[i - 1] = lpt_check_tensor(L, -1);
    lua_pop(L, 1);
  }
  *n = (int)len;
  return arr;
}

/* A backward pass from roots[0..n) (grads: NULL, or NULL entries, for one-element roots) into the
 * .grad of the leaves, or with the option `inputs` (opts_idx: the options table, 0: none) into
 * those tensors' .grad only, as torch's backward(inputs=). */
static int run_backward(lua_State *L, const char *fname, int n, pt_tensor *const *roots,
                        pt_tensor *const *grads, int opts_idx) {
  static const char *const names[] = {"retain_graph", "create_graph", "inputs", NULL}; /* a typo would free the graph */
  lpt_check_options(L, opts_idx, fname, names);
  bool create = lpt_opt_bool(L, opts_idx, "create_graph", false);
  bool retain = lpt_opt_bool(L, opts_idx, "retain_graph", create);
  pt_tensor **ins = NULL;
  int nin = 0;
  if (opts_idx && lua_getfield(L, opts_idx, "inputs") != LUA_TNIL) {
    bool single;
    ins = tensor_args(L, lua_gettop(L), fname, "inputs", &nin, &single); /* stays on the stack */
  }
  hook_call hc = {L, fname, false};
  pt_grad_hooks hooks;
  pt_tensor **leaves;
  sweep_hooks(L);
  bool any = collect_hooks(L, &hooks, &hc, &leaves);
  pt_backward_opts o = {.fname = fname, .retain_graph = retain, .create_graph = create,
                        .hooks = any ? &hooks : NULL, .n_inputs = nin, .inputs = ins,
                        .accumulate_inputs = nin > 0};
  pt_ctx *ctx = lpt_ctx(L);
  void *host = ctx->host_state; /* autograd.Function nodes run their Lua backward in L */
  ctx->host_state = L;
  lpt_state_fast(L)->backward_depth++;
  pt_status st = pt_backward_ex(ctx, n, roots, grads, &o);
  lpt_state_fast(L)->backward_depth--;
  ctx->host_state = host;
  free(leaves); /* before anything that may raise (fn_after_pass sets fields: out of memory) */
  fn_after_pass(L);
  if (st) return raise_pass_error(L, &hc);
  return 0;
}

/* t:backward([grad][, {retain_graph=, create_graph=, inputs=}]) */
static int t_backward(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  pt_tensor *g = NULL;
  int opts = 0;
  if (lua_istable(L, 2)) opts = 2;
  else {
    if (!lua_isnoneornil(L, 2)) g = lpt_check_tensor(L, 2);
    if (lua_istable(L, 3)) opts = 3; /* backward(grad, opts) or backward(nil, opts) */
  }
  return run_backward(L, "backward", 1, &t, g ? &g : NULL, opts);
}

/* pt.autograd.backward(tensors[, grad_tensors][, {retain_graph=, create_graph=, inputs=}]) */
static int l_autograd_backward(lua_State *L) {
  const char *fname = "autograd.backward";
  lpt_check_max_args(L, 3, fname);
  lua_settop(L, 3);
  int opts = 0;
  if (lua_istable(L, 3)) {
    opts = 3;
  } else if (!lua_isnil(L, 3)) {
    return lpt_errorf(L, "%s: expected an options table as argument 3, got %s", fname, luaL_typename(L, 3));
  } else if (lua_istable(L, 2) && !lpt_test_box(L, 2) && lua_rawlen(L, 2) == 0) {
    lua_getfield(L, 2, "retain_graph");
    lua_getfield(L, 2, "create_graph");
    lua_getfield(L, 2, "inputs");
    bool named = !lua_isnil(L, -1) || !lua_isnil(L, -2) || !lua_isnil(L, -3);
    lua_pop(L, 3);
    if (named) { /* backward(tensors, {options}) */
      lua_pushvalue(L, 2);
      lua_replace(L, 3);
      lua_pushnil(L);
      lua_replace(L, 2);
      opts = 3;
    }
  }
  int n;
  bool single;
  pt_tensor **roots = tensor_args(L, 1, fname, "tensors", &n, &single);
  pt_tensor **grads = lua_newuserdatauv(L, (size_t)n * sizeof *grads, 0);
  memset(grads, 0, (size_t)n * sizeof *grads);
  if (lpt_test_box(L, 2)) {
    if (n != 1) return lpt_errorf(L, "%s: got %d tensors and 1 grad_tensors", fname, n);
    grads[0] = lpt_check_tensor(L, 2);
  } else if (lua_istable(L, 2)) {
    lua_Integer len = (lua_Integer)lua_rawlen(L, 2);
    if (len > n) return lpt_errorf(L, "%s: got %d tensors and %I grad_tensors", fname, n, len);
    for (int i = 1; i <= n; i++) {
      if (lua_rawgeti(L, 2, i) != LUA_TNIL) {
        if (!lpt_test_box(L, -1))
          return lpt_errorf(L, "%s: grad_tensors[%d] must be a tensor or nil, got %s", fname, i,
                            luaL_typename(L, -1));
        grads[i - 1] = lpt_check_tensor(L, -1);
      }
      lua_pop(L, 1);
    }
  } else if (!lua_isnil(L, 2)) {
    return lpt_errorf(L, "%s: grad_tensors must be a tensor or a list of tensors, got %s", fname,
                      luaL_typename(L, 2));
  }
  return run_backward(L, fname, n, roots, grads, opts);
}

/* registry[&in_grad_key] is true while autograd.grad's pass runs (a nested pass started by a
 * Function's backward sees it: checkpoint refuses to accumulate into .grad then) */
static const char in_grad_key = 'g';

static int l_in_autograd_grad(lua_State *L) {
  lua_pushboolean(L, lua_rawgetp(L, LUA_REGISTRYINDEX, &in_grad_key) != LUA_TNIL);
  return 1;
}

/* pt.autograd.grad(outputs, inputs[, {grad_outputs=, retain_graph=, create_graph=, allow_unused=}]) */
static int l_autograd_grad(lua_State *L) {
  lpt_check_max_args(L, 3, "autograd.grad");
  lua_settop(L, 3); /* what is pushed from here on comes after the arguments */
  int opts = 0;
  if (!lua_isnoneornil(L, 3)) {
    if (!lua_istable(L, 3))
      return lpt_errorf(L, "autograd.grad: expected an options table as argument 3, got %s", luaL_typename(L, 3));
    opts = 3;
  }
  static const char *const names[] = {"grad_outputs", "retain_graph", "create_graph", "allow_unused", NULL};
  lpt_check_options(L, opts, "autograd.grad", names);
  int nout, nin;
  bool single_out, single_in;
  pt_tensor **outs = tensor_args(L, 1, "autograd.grad", "outputs", &nout, &single_out);
  pt_tensor **ins = tensor_args(L, 2, "autograd.grad", "inputs", &nin, &single_in);
  (void)single_out;
  pt_tensor **gouts = lua_newuserdatauv(L, (size_t)nout * sizeof *gouts, 0);
  memset(gouts, 0, (size_t)nout * sizeof *gouts);
  if (opts && lua_getfield(L, opts, "grad_outputs") != LUA_TNIL) {
    int go = lua_gettop(L);
    if (lpt_test_box(L, go)) {
      if (nout != 1)
        return lpt_errorf(L, "autograd.grad: got %d outputs and 1 grad_outputs", nout);
      gouts[0] = lpt_check_tensor(L, go);
    } else if (lua_istable(L, go)) {
      lua_Integer len = (lua_Integer)lua_rawlen(L, go);
      if (len > nout)
        return lpt_errorf(L, "autograd.grad: got %d outputs and %I grad_outputs", nout, len);
      for (int i = 1; i <= nout; i++) {
        if (lua_rawgeti(L, go, i) != LUA_TNIL) {
          if (!lpt_test_box(L, -1))
            return lpt_errorf(L, "autograd.grad: grad_outputs[%d] must be a tensor or nil, got %s", i,
                              luaL_typename(L, -1));
          gouts[i - 1] = lpt_check_tensor(L, -1);
        }
        lua_pop(L, 1);
      }
    } else {
      return lpt_errorf(L, "autograd.grad: grad_outputs must be a tensor or a list of tensors, got %s",
                        luaL_typename(L, go));
    }
  }
  lua_pop(L, 1);
  bool create = lpt_opt_bool(L, opts, "create_graph", false);
  bool retain = lpt_opt_bool(L, opts, "retain_graph", create);
  bool allow_unused = lpt_opt_bool(L, opts, "allow_unused", false);
  pt_tensor **res = lua_newuserdatauv(L, (size_t)nin * sizeof *res, 0);
  hook_call hc = {L, "autograd.grad", false};
  pt_grad_hooks hooks;
  pt_tensor **leaves;
  sweep_hooks(L);
  bool any = collect_hooks(L, &hooks, &hc, &leaves);
  pt_backward_opts o = {.fname = "autograd.grad", .retain_graph = retain, .create_graph = create,
                        .hooks = any ? &hooks : NULL, .n_inputs = nin, .inputs = ins, .grads_out = res};
  pt_ctx *ctx = lpt_ctx(L);
  void *host = ctx->host_state;
  ctx->host_state = L;
  int was_in_grad = lua_rawgetp(L, LUA_REGISTRYINDEX, &in_grad_key) != LUA_TNIL;
  lua_pop(L, 1);
  lua_pushboolean(L, 1); /* pt._in_autograd_grad() during the pass */
  lua_rawsetp(L, LUA_REGISTRYINDEX, &in_grad_key);
  lpt_state_fast(L)->backward_depth++;
  pt_status st = pt_backward_ex(ctx, nout, outs, gouts, &o);
  lpt_state_fast(L)->backward_depth--;
  fn_after_pass(L);
  if (was_in_grad) lua_pushboolean(L, 1);
  else lua_pushnil(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &in_grad_key);
  ctx->host_state = host;
  free(leaves);
  if (st) return raise_pass_error(L, &hc);
  for (int i = 0; i < nin && !allow_unused; i++)
    if (!res[i]) {
      for (int j = 0; j < nin; j++) pt_tensor_release(res[j]);
      return lpt_errorf(L, "autograd.grad: one of the differentiated tensors (inputs[%d]) appears to not "
                           "have been used in the graph (set allow_unused = true if this is the desired "
                           "behavior)", i + 1);
    }
  if (single_in) {
    if (res[0]) lpt_push_tensor(L, res[0]);
    else lua_pushnil(L);
    return 1;
  }
  lua_createtable(L, nin, 0);
  for (int i = 0; i < nin; i++) {
    if (!res[i]) continue;
    lpt_push_tensor(L, res[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int t_detach(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r;
  if (pt_detach(lpt_ctx(L), t, &r)) return lpt_error(L);
  lpt_push_tensor(L, r);
  return 1;
}

static int t_requires_grad_(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  bool v = lua_isnone(L, 2) ? true : lua_toboolean(L, 2);
  if (v && !pt_dtype_is_floating(t->dtype))
    return lpt_errorf(L, "requires_grad_: only floating point tensors can require gradients (dtype %s)",
                      pt_dtype_name(t->dtype));
  if (!v && t->grad_fn)
    return lpt_errorf(L, "requires_grad_: cannot turn off requires_grad of a non-leaf tensor (use detach())");
  t->requires_grad = v;
  lua_settop(L, 1);
  return 1;
}

static int t_retain_grad(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  if (!t->requires_grad)
    return lpt_errorf(L, "retain_grad: tensor does not require grad");
  if (t->grad_fn) { /* the node writes t.grad when the backward reaches it */
    t->retains_grad = true;
    t->grad_fn->retain_target = t;
  }
  lua_settop(L, 1);
  return 1;
}

/* internal, 1-based flat access for tests and gradient checks */
static int t_get_flat(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  lua_Integer i = luaL_checkinteger(L, 2);
  luaL_argcheck(L, i >= 1 && i <= pt_tensor_numel(t), 2, "flat index out of range");
  lua_pushnumber(L, pt_tensor_get_flat(t, i - 1));
  return 1;
}

static int t_set_flat(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1);
  lua_Integer i = luaL_checkinteger(L, 2);
  luaL_argcheck(L, i >= 1 && i <= pt_tensor_numel(t), 2, "flat index out of range");
  pt_tensor_set_flat(t, i - 1, luaL_checknumber(L, 3));
  atomic_fetch_add(&t->storage->version, 1);
  return 0;
}

/* pt.no_grad, pt.enable_grad and autograd.detect_anomaly run fn(...) with one of the ctx's flags
 * set, and put it back even when fn raises. Outside a coroutine fn cannot yield: a plain pcall.
 * Inside one, fn runs in a thread of its own that this function resumes: the flag is set for
 * each stretch fn runs and put back at each yield, so the code that resumed the coroutine never
 * sees it, and a coroutine abandoned while suspended leaves nothing switched (torch's grad mode
 * would stay as the suspended body set it). The context k holds which flag (bits 1..) and the
 * value fn runs with (bit 0). */
enum { FLAG_GRAD, FLAG_ANOMALY };

static bool *ctx_flag(pt_ctx *ctx, int which) {
  return which == FLAG_ANOMALY ? &ctx->detect_anomaly : &ctx->grad_enabled;
}

static int flag_continue(lua_State *L, int status, lua_KContext k);

/* Resumes fn's thread (stack index 1) with the nargs values at the top for one stretch. */
static int flag_resume(lua_State *L, lua_KContext k, int nargs) {
  lua_State *co = lua_tothread(L, 1);
  bool *flag = ctx_flag(lpt_ctx(L), (int)(k >> 1)), old = *flag;
  lua_xmove(L, co, nargs);
  *flag = k & 1;
  int nres = 0, st = lua_resume(co, L, nargs, &nres);
  *flag = old;
  if (st == LUA_OK || st == LUA_YIELD) {
    if (!lua_checkstack(L, nres + 1)) {
      lua_pop(co, nres);
      return luaL_error(L, "too many results");
    }
    lua_xmove(co, L, nres);
    if (st == LUA_OK) return nres;
    return lua_yieldk(L, nres, k, flag_continue); /* to whoever resumed the caller */
  }
#if LUA_VERSION_RELEASE_NUM >= 50406
  lua_closethread(co, L); /* its to-be-closed variables; the error object stays on top */
#else
  lua_resetthread(co);
#endif
  lua_xmove(co, L, 1);
  return lua_error(L);
}

static int flag_continue(lua_State *L, int status, lua_KContext k) {
  (void)status;
  return flag_resume(L, k, lua_gettop(L) - 1); /* the values the caller was resumed with */
}

static int call_with_flag(lua_State *L, int which, bool value) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_KContext k = (lua_KContext)which << 1 | (lua_KContext)value;
  int nargs = lua_gettop(L) - 1;
  if (lua_isyieldable(L)) {
    lua_State *co = lua_newthread(L);
    lua_insert(L, 1); /* the thread stays at 1 for the call's life: [co, fn, args...] */
    lua_pushvalue(L, 2);
    lua_xmove(L, co, 1); /* fn, below the arguments flag_resume moves */
    lua_remove(L, 2);
    return flag_resume(L, k, nargs);
  }
  bool *flag = ctx_flag(lpt_ctx(L), which), old = *flag;
  *flag = value;
  int status = lua_pcall(L, nargs, LUA_MULTRET, 0);
  *flag = old;
  if (status != LUA_OK) return lua_error(L);
  return lua_gettop(L);
}

/* pt.no_grad(fn, ...) -> fn(...) with gradient recording off */
static int l_no_grad(lua_State *L) { return call_with_flag(L, FLAG_GRAD, false); }

/* pt.enable_grad(fn, ...) */
static int l_enable_grad(lua_State *L) { return call_with_flag(L, FLAG_GRAD, true); }

/* pt._hook_identity(t) -> a view of t with its own node (BackwardHookFunctionBackward) that
 * passes the gradient through: nn.Module's backward hooks wrap inputs and outputs with it */
static int l_hook_identity(lua_State *L) {
  pt_tensor *t = lpt_check_tensor(L, 1), *r = NULL;
  pt_status st = pt_autograd_identity(lpt_ctx(L), t, "BackwardHookFunctionBackward", &r);
  return lpt_push_result(L, st, r);
}

static const luaL_Reg methods[] = {
    {"backward", t_backward},
    {"detach", t_detach},
    {"requires_grad_", t_requires_grad_},
    {"retain_grad", t_retain_grad},
    {"register_hook", t_register_hook},
    {"_get_flat", t_get_flat},
    {"_set_flat", t_set_flat},
    {NULL, NULL},
};

/* --- autograd.Function (lua/partrain/autograd_function.lua) ---
 * A custom function's node runs its Lua backward. Its record (the Lua ctx, the class, the
 * forward's outputs) stays in this state: registry[&fn_key].nodes[node] = record, and that
 * table holds a reference to the node (an address is never reused while its record is there);
 * entries nothing else holds any more go at a later apply (fn_sweep) or when the state closes.
 * A function with several differentiable outputs has one node for them all, recorded on a
 * stand-in for the outputs laid end to end (a zero-stride "packed" tensor): each output gets a
 * proxy node that places its gradient in its range of the packed gradient, so the engine sums
 * the outputs' gradients into one and the Lua backward runs once per pass with all of them. */
static const char fn_key = 'f';

typedef struct fn_info {
  lpt_state *state;   /* the state that recorded the node: its backward runs only there */
  int n_out;          /* differentiable outputs */
  int n_in;           /* inputs that require grad: the node's, then its fan-in nodes' */
  const char *name;   /* "<Class>Backward", interned (fn_name) */
  int arg_pos[];      /* input d (0-based, in that order) is argument arg_pos[d] of forward */
} fn_info;

/* More inputs than a node holds: the node's last slot is a stand-in whose history is a fan-in
 * node holding the next inputs (and, when there are still more, another stand-in), a chain.
 * The function's backward computes every gradient at once; those of the fan-in nodes' inputs wait
 * in their stash (a node's extra: PT_NODE_MAX_INPUTS tensors) until the engine reaches them. */
#define FN_SLOTS PT_NODE_MAX_INPUTS

static void fn_stash_free(void *p) {
  pt_tensor **stash = p;
  for (int i = 0; i < FN_SLOTS; i++) pt_tensor_release(stash[i]);
  free(stash);
}

static pt_status fn_fanin_backward(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gin) {
  (void)gout;
  pt_tensor **stash = node->extra;
  if (!stash) return pt_fail(ctx, PT_ESTATE, "the gradients of an autograd.Function's inputs are gone");
  for (int i = 0; i < node->n_inputs; i++) {
    gin[i] = stash[i];
    stash[i] = NULL;
  }
  return PT_OK;
}

/* Node names outlive a node's extra data (a backward frees it, t.grad_fn still shows the name):
 * each distinct "<Class>Backward" is kept once for the process, as the built-in ops' literals. */
static pthread_mutex_t fn_names_lock = PTHREAD_MUTEX_INITIALIZER;
typedef struct fn_name_entry {
  struct fn_name_entry *next;
  char name[];
} fn_name_entry;
static fn_name_entry *fn_names;

static const char *fn_name(const char *s, size_t len) {
  pthread_mutex_lock(&fn_names_lock);
  fn_name_entry *e = fn_names;
  while (e && strcmp(e->name, s) != 0) e = e->next;
  if (!e && (e = malloc(sizeof *e + len + 1))) {
    memcpy(e->name, s, len + 1);
    e->next = fn_names;
    fn_names = e;
  }
  pthread_mutex_unlock(&fn_names_lock);
  return e ? e->name : NULL;
}

/* A registry table of records keyed by node, {nodes = {[node] = value}, n = entries, live = entries
 * after the last sweep}, at registry[key] (made on first use); it holds a reference to each node
 * it keys, given back by node_table_sweep or when the state closes. */
static int node_table_gc(lua_State *L) {
  /* none when making the table ran out of memory after its metatable was set */
  if (lua_getfield(L, 1, "nodes") != LUA_TTABLE) return 0;
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pop(L, 1);
    pt_node_release(lua_touserdata(L, -1));
  }
  return 0;
}

static void push_node_table(lua_State *L, const void *key) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, key) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_createtable(L, 0, 3);
  lua_newtable(L);
  lua_setfield(L, -2, "nodes");
  lua_pushinteger(L, 0);
  lua_setfield(L, -2, "n");
  lua_pushinteger(L, 0);
  lua_setfield(L, -2, "live");
  lua_newtable(L);
  lua_setfield(L, -2, "ran");
  lua_createtable(L, 0, 1); /* the metatable last: its __gc expects the fields */
  lua_pushcfunction(L, node_table_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_pushvalue(L, -1);
  lua_rawsetp(L, LUA_REGISTRYINDEX, key);
}

static void push_fn_table(lua_State *L) { push_node_table(L, &fn_key); }

static lua_Integer int_field(lua_State *L, int idx, const char *k) {
  lua_getfield(L, idx, k);
  lua_Integer v = lua_tointeger(L, -1);
  lua_pop(L, 1);
  return v;
}

/* Forget the records of nodes nothing else holds (no gradient can reach them again), once the
 * table has doubled since the last sweep, so that a long graph's applies stay linear. */
static void node_table_sweep(lua_State *L, int fns, bool force) {
  lua_Integer n = int_field(L, fns, "n"), live = int_field(L, fns, "live");
  if (!force && n < 2 * live + 32) return;
  lua_getfield(L, fns, "nodes");
  int nodes = lua_gettop(L);
  lua_pushnil(L);
  while (lua_next(L, nodes)) {
    lua_pop(L, 1);
    pt_node *node = lua_touserdata(L, -1);
    if (atomic_load(&node->refcount) != 1) continue;
    lua_pushvalue(L, -1);
    lua_pushnil(L);
    lua_rawset(L, nodes);
    pt_node_release(node);
    n--;
  }
  lua_pop(L, 1);
  lua_pushinteger(L, n);
  lua_setfield(L, fns, "n");
  lua_pushinteger(L, n);
  lua_setfield(L, fns, "live");
}

/* Check a gradient the Lua backward returned for input i against that input (held by the node):
 * a broadcast one is summed back (as torch's validate_outputs), another dtype converted. */
static pt_status fn_check_grad(pt_ctx *ctx, const fn_info *info, int d, const pt_tensor *in, pt_tensor *g,
                               pt_tensor **out) {
  pt_tensor *r = pt_tensor_retain(g), *t = NULL;
  pt_status st = PT_OK;
  if (g->ndim != in->ndim || memcmp(g->shape, in->shape, (size_t)g->ndim * sizeof(int64_t)) != 0) {
    int64_t bshape[PT_MAX_DIMS];
    int bndim;
    bool reducible = g->ndim >= in->ndim &&
                     !pt_broadcast_shapes(ctx, "", in->ndim, in->shape, g->ndim, g->shape, &bndim, bshape) &&
                     bndim == g->ndim && memcmp(bshape, g->shape, (size_t)bndim * sizeof(int64_t)) == 0;
    if (!reducible) {
      char a[PT_SHAPE_STR_MAX], b[PT_SHAPE_STR_MAX];
      pt_tensor_release(r);
      return pt_fail(ctx, PT_ESHAPE, "the gradient returned for argument %d has shape %s; expected a shape "
                     "compatible with %s", info->arg_pos[d], pt_shape_format(g->ndim, g->shape, a, sizeof a),
                     pt_shape_format(in->ndim, in->shape, b, sizeof b));
    }
    if ((st = pt_sum_to_shape(ctx, r, in->ndim, in->shape, &t))) goto done;
    pt_tensor_release(r);
    r = t;
  }
  if (r->dtype != in->dtype) {
    if (!pt_dtype_is_floating(r->dtype)) {
      st = pt_fail(ctx, PT_EARG, "the gradient returned for argument %d has dtype %s (a floating point "
                   "tensor was expected)", info->arg_pos[d], pt_dtype_name(r->dtype));
      goto done;
    }
    if ((st = pt_to_dtype(ctx, r, in->dtype, &t))) goto done;
    pt_tensor_release(r);
    r = t;
  }
  *out = r;
  return PT_OK;
done:
  pt_tensor_release(r);
  return st;
}

/* After a pass: the Function records whose nodes it released (no retain_graph) let go of their
 * saved tensors at once, as torch frees saved variables at the end of a backward (the record
 * itself stays until its node goes). */
static void fn_after_pass(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &fn_key) != LUA_TTABLE) {
    lua_pop(L, 1);
    return;
  }
  int fns = lua_gettop(L);
  lua_getfield(L, fns, "ran");
  int ran = lua_gettop(L);
  lua_Integer n = (lua_Integer)lua_rawlen(L, ran), kept = 0;
  /* when this pass was nested in another's Function backward (checkpoint's), the records that
   * pass has not released stay in the list for its end; after the outermost pass none do */
  bool nested = lpt_state_fast(L)->backward_depth > 0;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, ran, i);
    lua_getfield(L, -1, "node");
    pt_node *node = lua_touserdata(L, -1);
    lua_pop(L, 1);
    if (node && node->released) {
      lua_pushboolean(L, 1);
      lua_setfield(L, -2, "released");
      lua_getfield(L, -1, "ctx");
      if (lua_istable(L, -1)) {
        lua_pushnil(L);
        lua_setfield(L, -2, "_saved");
      }
      lua_pop(L, 2);
    } else if (nested) {
      lua_rawseti(L, ran, ++kept);
    } else {
      lua_pop(L, 1);
    }
  }
  for (lua_Integer i = kept + 1; i <= n; i++) {
    lua_pushnil(L);
    lua_rawseti(L, ran, i);
  }
  lua_settop(L, fns - 1);
}

/* The node of a custom function: record.run(record, grad) in the state that recorded it, which
 * returns the gradients of the node's inputs as a list (nil: none). */
static int fn_backward_body(lua_State *L);
static pt_status fn_backward(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gin) {
  const fn_info *info = node->extra;
  lua_State *L = ctx->host_state;
  if (!L || lpt_state_fast(L) != info->state)
    return pt_fail(ctx, PT_ESTATE, "the backward of an autograd.Function runs only in the Lua state that "
                   "ran its forward (this pass runs %s)", L ? "in another state" : "outside Lua");
  engine_call c = {.ctx = ctx, .node = node, .gout = gout, .gin = gin};
  return engine_protected(L, fn_backward_body, &c);
}

static int fn_backward_body(lua_State *L) {
  engine_call *c = lua_touserdata(L, 1);
  pt_ctx *ctx = c->ctx;
  pt_node *node = c->node;
  pt_tensor *gout = c->gout, **gin = c->gin;
  const fn_info *info = node->extra;
  luaL_checkstack(L, 8, "autograd.Function backward");
  int top = lua_gettop(L);
  push_fn_table(L);
  lua_getfield(L, -1, "nodes");
  if (lua_rawgetp(L, -1, node) != LUA_TTABLE) {
    lua_settop(L, top);
    c->st = pt_fail(ctx, PT_ESTATE, "the autograd.Function's record is gone (its state was reset)");
    return 0;
  }
  int rec = lua_gettop(L);
  lua_getfield(L, rec, "run");
  lua_pushvalue(L, rec);
  lpt_push_tensor(L, pt_tensor_retain(gout));
  if (lua_pcall(L, 2, 1, 0) != LUA_OK) {
    pt_status st = pt_fail(ctx, PT_EARG, "%s", lpt_error_text(L, -1));
    lua_pop(L, 1); /* the text */
    lua_rawsetp(L, LUA_REGISTRYINDEX, &hook_err_key); /* raised as it was once the pass is over */
    lua_settop(L, top);
    c->st = st;
    return 0;
  }
  int res = lua_gettop(L);
  /* the pass's records, for fn_after_pass */
  lua_getfield(L, rec - 2, "ran");
  lua_pushvalue(L, rec);
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
  lua_pop(L, 1);
  pt_status st = PT_OK;
  /* input d's gradient goes to gin, or to the stash of the fan-in node holding it */
  pt_node *cur = node;
  for (int base = 0; cur && !st; base += FN_SLOTS - 1) {
    bool chained = info->n_in - base > FN_SLOTS;
    int here = chained ? FN_SLOTS - 1 : info->n_in - base;
    pt_tensor **dst = cur == node ? gin : cur->extra;
    if (!dst) {
      st = pt_fail(ctx, PT_ESTATE, "the gradients of an autograd.Function's inputs are gone");
      break;
    }
    for (int i = 0; i < here && !st; i++) {
      lua_rawgeti(L, res, base + i + 1);
      pt_tensor *g = lpt_test_tensor(L, -1);
      if (g && cur->needs_grad[i]) {
        pt_tensor_release(dst[i]);
        dst[i] = NULL;
        st = fn_check_grad(ctx, info, base + i, cur->inputs[i], g, &dst[i]);
      }
      lua_pop(L, 1);
    }
    if (!chained || st) break;
    /* the stand-in's gradient: anything non-NULL, so that the fan-in node runs */
    int64_t one = 1;
    pt_tensor_release(dst[FN_SLOTS - 1]);
    dst[FN_SLOTS - 1] = NULL;
    st = pt_tensor_zeros(ctx, cur->inputs[FN_SLOTS - 1]->dtype, 1, &one, &dst[FN_SLOTS - 1]);
    cur = cur->input_fn[FN_SLOTS - 1];
  }
  lua_settop(L, top);
  c->st = st;
  return 0;
}

/* One output of a several-output function: its gradient into its range (ints: offset, length,
 * packed length) of the packed gradient, with recorded ops (a create_graph pass differentiates
 * it again). */
static pt_status fn_proxy_backward(pt_ctx *ctx, pt_node *node, pt_tensor *gout, pt_tensor **gin) {
  int64_t off = node->ints[0], len = node->ints[1], total = node->ints[2];
  pt_dtype dt = node->inputs[0]->dtype;
  pt_tensor *parts[3] = {NULL, NULL, NULL}, *flat = NULL;
  int n = 0;
  pt_status st = pt_reshape(ctx, gout, 1, &len, &flat);
  if (!st && flat->dtype != dt) {
    pt_tensor *c;
    if (!(st = pt_to_dtype(ctx, flat, dt, &c))) {
      pt_tensor_release(flat);
      flat = c;
    }
  }
  int64_t before = off, after = total - off - len;
  if (!st && before > 0) st = pt_tensor_zeros(ctx, dt, 1, &before, &parts[n++]);
  if (!st) parts[n++] = pt_tensor_retain(flat);
  if (!st && after > 0) st = pt_tensor_zeros(ctx, dt, 1, &after, &parts[n++]);
  if (!st) st = n == 1 ? (gin[0] = pt_tensor_retain(parts[0]), PT_OK) : pt_cat(ctx, n, parts, 0, &gin[0]);
  for (int i = 0; i < 3; i++) pt_tensor_release(parts[i]);
  pt_tensor_release(flat);
  return st;
}

/* The inputs from ins[0] on (n of them) as the inputs of one node: the first FN_SLOTS as they are,
 * or FN_SLOTS - 1 of them and a stand-in for the rest (*token: a one-element tensor whose history
 * is a fan-in node over them). */
static pt_status fn_fanin(pt_ctx *ctx, const char *name, int n, pt_tensor *const *ins, pt_tensor **token) {
  pt_tensor *slots[FN_SLOTS] = {NULL}, *next = NULL;
  int here = n <= FN_SLOTS ? n : FN_SLOTS - 1;
  for (int i = 0; i < here; i++) slots[i] = ins[i];
  pt_status st = PT_OK;
  if (n > FN_SLOTS && !(st = fn_fanin(ctx, name, n - here, ins + here, &next))) slots[here] = next;
  int64_t one = 1;
  pt_node *node = NULL;
  if (!st) st = pt_tensor_zeros(ctx, PT_FLOAT32, 1, &one, token);
  if (!st) st = pt_autograd_record(ctx, *token, name, fn_fanin_backward, here + (n > FN_SLOTS), slots, &node);
  pt_tensor_release(next);
  if (!st && node) {
    node->extra = calloc(FN_SLOTS, sizeof(pt_tensor *));
    node->free_extra = fn_stash_free;
    node->backward_differentiable = true;
    if (!node->extra) st = pt_fail(ctx, PT_ENOMEM, "out of memory");
  }
  return st;
}

/* A tensor standing for the packed outputs of `main`: zero strides over one zero, with main as
 * its history. */
static pt_status fn_packed_standin(pt_ctx *ctx, pt_dtype dt, int64_t total, pt_tensor **out) {
  int64_t one = 1;
  pt_tensor *z = NULL;
  pt_status st = pt_tensor_zeros(ctx, dt, 1, &one, &z);
  if (!st) st = pt_expand_raw(ctx, z, 1, &total, out);
  pt_tensor_release(z);
  return st;
}

/* Record output j's proxy on target (which then has it as grad_fn). */
static pt_status fn_record_proxy(pt_ctx *ctx, fn_info *info, pt_tensor *target, pt_tensor *packed,
                                 int64_t off) {
  pt_node *pn = NULL;
  pt_status st = pt_autograd_record(ctx, target, info->name, fn_proxy_backward, 1, &packed, &pn);
  if (st) return st;
  if (!pn) return pt_fail(ctx, PT_ESTATE, "autograd.Function: no graph recorded for an output");
  pn->ints[0] = off;
  pn->ints[1] = pt_tensor_numel(target);
  pn->ints[2] = packed->shape[0];
  pn->n_ints = 3;
  pn->backward_differentiable = true;
  return PT_OK;
}

static pt_tensor *list_tensor(lua_State *L, int list, int i, const char *what) {
  lua_rawgeti(L, list, i);
  pt_tensor *t = lpt_test_tensor(L, -1);
  lua_pop(L, 1);
  if (!t) lpt_errorf(L, "autograd.Function: %s[%d] is not a tensor", what, i);
  return t;
}

/* pt._fn_record(record, name, inputs, outputs, dirty) -> list of the outputs with history.
 * inputs: the tensors that require grad (1..4); outputs: the differentiable ones (1+); dirty[j]:
 * output j is an input the forward changed in place. Sets record.node. */
/* l_fn_record's last part, under lua_pcall (reg, record, the function table): nodes[node] =
 * record, holding the node; record.node; the list of the outputs, each target handed over
 * (set to NULL) as its handle is made. */
typedef struct fn_reg {
  pt_node *node;
  pt_tensor **targets;
  int n_out;
} fn_reg;

static int fn_register(lua_State *L) {
  fn_reg *r = lua_touserdata(L, 1);
  lua_getfield(L, 3, "nodes");
  lua_pushvalue(L, 2);
  lua_rawsetp(L, -2, r->node);
  pt_node_retain(r->node); /* the table's, once the set (which may raise) is done */
  lua_pop(L, 1);
  lua_pushinteger(L, int_field(L, 3, "n") + 1);
  lua_setfield(L, 3, "n");
  lua_pushlightuserdata(L, r->node);
  lua_setfield(L, 2, "node");
  lua_createtable(L, r->n_out, 0);
  for (int j = 0; j < r->n_out; j++) {
    pt_tensor *t = r->targets[j];
    r->targets[j] = NULL;
    lpt_push_tensor(L, t); /* takes the reference, also when it raises (push_pending) */
    lua_rawseti(L, -2, j + 1);
  }
  return 1;
}

static int l_fn_record(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  size_t name_len;
  const char *name = luaL_checklstring(L, 2, &name_len);
  luaL_checktype(L, 3, LUA_TTABLE);
  luaL_checktype(L, 4, LUA_TTABLE);
  luaL_checktype(L, 5, LUA_TTABLE);
  int n_in = (int)lua_rawlen(L, 3), n_out = (int)lua_rawlen(L, 4);
  if (n_in < 1) return lpt_errorf(L, "autograd.Function: no input requires grad");
  if (n_out < 1) return lpt_errorf(L, "autograd.Function: no differentiable output");
  pt_tensor **ins = lua_newuserdatauv(L, (size_t)n_in * sizeof *ins, 0);
  for (int i = 0; i < n_in; i++) ins[i] = list_tensor(L, 3, i + 1, "inputs");
  pt_tensor **outs = lua_newuserdatauv(L, (size_t)n_out * sizeof *outs, 0);
  bool any64 = false;
  for (int j = 0; j < n_out; j++) {
    outs[j] = list_tensor(L, 4, j + 1, "outputs");
    any64 |= outs[j]->dtype == PT_FLOAT64;
  }
  push_fn_table(L);
  int fns = lua_gettop(L);
  node_table_sweep(L, fns, false);
  pt_ctx *ctx = lpt_ctx(L);
  /* the targets first (they may raise), then nothing raises until the node is registered */
  pt_tensor **targets = lua_newuserdatauv(L, (size_t)n_out * sizeof *targets, 0);
  memset(targets, 0, (size_t)n_out * sizeof *targets);
  for (int j = 0; j < n_out; j++) {
    lua_rawgeti(L, 5, j + 1);
    bool dirty = lua_toboolean(L, -1);
    lua_pop(L, 1);
    pt_tensor *t = NULL;
    if (dirty && outs[j]->base) {
      for (int k = 0; k < j; k++) pt_tensor_release(targets[k]);
      return lpt_errorf(L, "autograd.Function: mark_dirty on a view is not supported (output %d is a view; "
                        "change its base in place and mark that instead)", j + 1);
    }
    if (dirty && outs[j]->requires_grad && !outs[j]->grad_fn) {
      for (int k = 0; k < j; k++) pt_tensor_release(targets[k]);
      return lpt_errorf(L, "autograd.Function: a leaf Variable that requires grad is being used in an "
                        "in-place operation (output %d was marked dirty)", j + 1);
    }
    if (dirty) t = pt_tensor_retain(outs[j]);
    else if (pt_detach(ctx, outs[j], &t)) {
      for (int k = 0; k < j; k++) pt_tensor_release(targets[k]);
      return lpt_error(L);
    }
    targets[j] = t;
  }
  fn_info *info = malloc(sizeof *info + (size_t)n_in * sizeof(int));
  pt_tensor *node_ins[FN_SLOTS] = {NULL}, *token = NULL;
  pt_tensor *packed = NULL;
  pt_node *node = NULL;
  pt_status st = info ? PT_OK : pt_fail(ctx, PT_ENOMEM, "out of memory");
  if (!st) {
    info->state = lpt_state_fast(L);
    info->n_out = n_out;
    info->n_in = n_in;
    info->name = fn_name(name, name_len);
    if (!info->name) st = pt_fail(ctx, PT_ENOMEM, "out of memory");
    lua_getfield(L, 1, "diff_pos");
    for (int i = 0; i < n_in; i++) {
      lua_rawgeti(L, -1, i + 1);
      info->arg_pos[i] = (int)lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
    int n_node = n_in <= FN_SLOTS ? n_in : FN_SLOTS;
    for (int i = 0; i < n_node; i++) node_ins[i] = ins[i];
    if (!st && n_in > FN_SLOTS && !(st = fn_fanin(ctx, info->name, n_in - (FN_SLOTS - 1), ins + FN_SLOTS - 1, &token)))
      node_ins[FN_SLOTS - 1] = token;
    if (st) {
    } else if (n_out == 1) {
      st = pt_autograd_record(ctx, targets[0], info->name, fn_backward, n_node, node_ins, &node);
    } else {
      int64_t total = 0;
      for (int j = 0; j < n_out; j++) total += pt_tensor_numel(outs[j]);
      st = fn_packed_standin(ctx, any64 ? PT_FLOAT64 : PT_FLOAT32, total, &packed);
      if (!st) st = pt_autograd_record(ctx, packed, info->name, fn_backward, n_node, node_ins, &node);
    }
    if (!st && !node) st = pt_fail(ctx, PT_ESTATE, "autograd.Function: no input requires grad");
  }
  if (st) {
    free(info);
  } else {
    node->extra = info;
    node->free_extra = free;
    node->backward_differentiable = true;
    int64_t off = 0;
    for (int j = 0; j < n_out && n_out > 1 && !st; j++) {
      st = fn_record_proxy(ctx, info, targets[j], packed, off);
      off += pt_tensor_numel(outs[j]);
    }
  }
  pt_tensor_release(packed);
  pt_tensor_release(token);
  if (st) {
    for (int j = 0; j < n_out; j++) pt_tensor_release(targets[j]);
    return lpt_error(L);
  }
  /* register the node and return the outputs, protected: what is not handed over yet goes if
   * that runs out of memory */
  fn_reg reg = {node, targets, n_out};
  lua_pushcfunction(L, fn_register);
  lua_pushlightuserdata(L, &reg);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, fns);
  if (lua_pcall(L, 3, 1, 0) != LUA_OK) {
    for (int j = 0; j < n_out; j++) pt_tensor_release(targets[j]);
    return lua_error(L);
  }
  return 1;
}

/* pt._fn_saved_output(record, y, offset, packed_length) -> y (the output at offset of the packed
 * outputs) with the history of that output of the record's node (the backward reads a saved output through it, so that a create_graph pass
 * differentiates through the output too): for one output the node itself, for several a fresh
 * proxy into the packed gradient. */
static int l_fn_saved_output(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  pt_tensor *y = lpt_check_tensor(L, 2);
  lua_Integer off = luaL_checkinteger(L, 3), total = luaL_checkinteger(L, 4);
  lua_getfield(L, 1, "node");
  pt_node *node = lua_touserdata(L, -1);
  lua_pop(L, 1);
  if (!node) return lpt_errorf(L, "autograd.Function: the function has no node");
  fn_info *info = node->extra;
  pt_ctx *ctx = lpt_ctx(L);
  if (!ctx->grad_enabled) { /* a pass that records nothing: the tensor as it is */
    lua_pushvalue(L, 2);
    return 1;
  }
  pt_tensor *r = NULL, *packed = NULL, *standin = NULL;
  pt_status st;
  if (info->n_out == 1) {
    st = pt_autograd_alias(ctx, y, node, &r);
    if (!st) r->requires_grad = true;
  } else {
    st = fn_packed_standin(ctx, node->out_dtype, (int64_t)total, &standin);
    if (!st) st = pt_autograd_alias(ctx, standin, node, &packed);
    if (!st) {
      packed->requires_grad = true;
      st = pt_detach(ctx, y, &r);
    }
    if (!st) st = fn_record_proxy(ctx, info, r, packed, (int64_t)off);
  }
  pt_tensor_release(standin);
  pt_tensor_release(packed);
  if (st) {
    pt_tensor_release(r);
    return lpt_error(L);
  }
  lpt_push_tensor(L, r);
  return 1;
}

/* pt._fn_records() -> how many autograd.Function records this state keeps (after a sweep of
 * those nothing holds): for specs of their lifetime */
static int l_fn_records(lua_State *L) {
  push_fn_table(L);
  node_table_sweep(L, lua_gettop(L), true);
  lua_pushinteger(L, int_field(L, -1, "n"));
  return 1;
}

/* --- anomaly detection (pt.autograd.set_detect_anomaly / detect_anomaly) ---
 * While it is on, every tensor with a history that reaches Lua notes where: the traceback of its
 * node's forward call, in registry[&anomaly_key] = {nodes = {[node] = traceback}, n, live}
 * (holding the nodes, swept as fn records are). The engine checks each gradient a node returns
 * for NaN; when a pass fails in a node, its error names the forward call that created it. */
static const char anomaly_key = 'a';

static void push_anomaly_table(lua_State *L) { push_node_table(L, &anomaly_key); }

void lpt_anomaly_note(lua_State *L, pt_node *node) {
  if (!lua_checkstack(L, 6)) return;
  int top = lua_gettop(L);
  push_anomaly_table(L);
  int tbl = lua_gettop(L);
  lua_getfield(L, tbl, "nodes");
  if (lua_rawgetp(L, -1, node) == LUA_TNIL) {
    lua_pop(L, 1);
    node_table_sweep(L, tbl, false);
    luaL_traceback(L, L, NULL, 1);
    lua_rawsetp(L, -2, node);
    pt_node_retain(node); /* the table's key, once the set (which may raise) is done */
    lua_pushinteger(L, int_field(L, tbl, "n") + 1);
    lua_setfield(L, tbl, "n");
  }
  lua_settop(L, top);
}

/* After a pass failed with anomaly detection on: the message with the forward call of the node
 * it failed in (its traceback when it was noted), raised at the caller's line. */
static int raise_anomaly(lua_State *L) {
  pt_ctx *ctx = lpt_ctx(L);
  pt_node *node = ctx->anomaly_node;
  ctx->anomaly_node = NULL;
  push_anomaly_table(L);
  lua_getfield(L, -1, "nodes");
  const char *trace = lua_rawgetp(L, -1, node) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  const char *name = node->name;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, ctx->err);
  luaL_addstring(&b, "\nThe forward call that created ");
  luaL_addstring(&b, name);
  luaL_addstring(&b, trace ? ":\n" : ": not recorded (the node was made inside an op; anomaly detection notes "
                                      "the nodes of tensors that reach Lua)");
  if (trace) luaL_addstring(&b, trace);
  luaL_pushresult(&b);
  pt_node_release(node); /* the table may still hold it: name and trace were read first */
  return lpt_errorf(L, "%s", lua_tostring(L, -1));
}

static int l_set_detect_anomaly(lua_State *L) {
  luaL_checkany(L, 1);
  pt_ctx *ctx = lpt_ctx(L);
  ctx->detect_anomaly = lua_toboolean(L, 1);
  if (!ctx->detect_anomaly) { /* forget the traces */
    lua_pushnil(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &anomaly_key);
  }
  return 0;
}

static int l_is_anomaly_enabled(lua_State *L) {
  lua_pushboolean(L, lpt_ctx(L)->detect_anomaly);
  return 1;
}

/* pt.autograd.detect_anomaly(fn, ...) -> fn(...) with anomaly detection on */
static int l_detect_anomaly(lua_State *L) { return call_with_flag(L, FLAG_ANOMALY, true); }

/* pt._tensor_version(t) -> the version of t's storage (moves with every in-place change) */
static int l_tensor_version(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)atomic_load(&lpt_check_tensor(L, 1)->storage->version));
  return 1;
}

static const luaL_Reg functions[] = {
    {"no_grad", l_no_grad},
    {"enable_grad", l_enable_grad},
    {"_hook_identity", l_hook_identity},
    {"_fn_record", l_fn_record},
    {"_fn_saved_output", l_fn_saved_output},
    {"_tensor_version", l_tensor_version},
    {"_fn_records", l_fn_records},
    {"_in_autograd_grad", l_in_autograd_grad},
    {NULL, NULL},
};

static const char *const method_docs[] = {
    "backward", "t:backward([grad][, {retain_graph=false, create_graph=false, inputs=nil}])\n  Reverse-mode gradients of t into .grad of the leaves (adds; zero them yourself).\n  grad may be omitted for one-element t. create_graph=true records the backward pass (the\n  .grad tensors get a history, to differentiate again; retain_graph then defaults to true;\n  that history refers to the leaves: set .grad = nil when done, as PyTorch advises);\n  see help(pt.autograd.grad) for the ops it supports. inputs (a tensor or a list, as torch's):\n  only these tensors' .grad change, leaves or not (a non-leaf's after its hooks), and only the\n  part of the graph that leads to them runs.",
    "detach", "t:detach() -> a tensor sharing t's storage, outside the graph.",
    "requires_grad_", "t:requires_grad_([flag=true]) -> t, marking a leaf for gradients.",
    "retain_grad", "t:retain_grad() -> t; a non-leaf keeps its .grad after backward (after its hooks ran).",
    "register_hook", "t:register_hook(fn) -> handle: fn(grad) runs when the gradient with respect to t is computed\n  (its whole gradient, once per pass; leaves and non-leaves; in registration order). It may\n  return a replacement gradient (same shape and dtype) or nil. handle:remove() unregisters it.\n  As PyTorch 1.13: the hooks of a leaf run before its .grad is accumulated, and not in\n  autograd.grad; a non-leaf's run before its grad_fn does (also in autograd.grad when the pass\n  goes through it).",
    NULL, NULL,
};

static const char *const function_docs[] = {
    "no_grad", "pt.no_grad(fn, ...) -> fn(...) run without recording a graph. Inside a coroutine fn may\n  yield: the mode is off only while fn runs, never while it is suspended (also enable_grad,\n  autograd.detect_anomaly).",
    "enable_grad", "pt.enable_grad(fn, ...) -> fn(...) run with gradient recording on.",
    NULL, NULL,
};

static const char backward_doc[] =
    "pt.autograd.backward(tensors[, grad_tensors][, {retain_graph=create_graph, create_graph=false,\n"
    "    inputs=nil}]): one backward pass from several tensors at once (their gradients summed where\n"
    "  the graphs meet), as torch.autograd.backward. tensors is a tensor or a list; grad_tensors the\n"
    "  gradient of each (a tensor, or a list with nil for one-element tensors); the options as\n"
    "  t:backward's. inputs (a tensor or a list): only these tensors' .grad change (leaves or not,\n"
    "  their hooks run first), and only the part of the graph that leads to them runs.";

static const char grad_doc[] =
    "pt.autograd.grad(outputs, inputs[, {grad_outputs=nil, retain_graph=create_graph, create_graph=false,\n"
    "    allow_unused=false}]) -> the gradients of outputs with respect to inputs, as torch.autograd.grad.\n"
    "  outputs and inputs are a tensor or a list of tensors; the result is a tensor (inputs a tensor)\n"
    "  or a list. No .grad changes; only the part of the graph that leads to inputs runs.\n"
    "  grad_outputs: the gradient of each output (a tensor, or a list with nil for one-element\n"
    "  outputs, which then get 1). An input the outputs do not depend on is an error unless\n"
    "  allow_unused=true (then its entry is nil). Without retain_graph the graph's saved tensors go.\n"
    "  create_graph=true records the backward pass, so that the result can be differentiated again\n"
    "  (second derivatives, gradient penalties). It goes through: add, sub, mul, div, pow, neg, abs,\n"
    "  exp, log, sqrt, sin, cos, tan, tanh, sigmoid, relu, gelu, erf, erfc, erfinv, log1p, expm1,\n"
    "  log2, log10, exp2, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, frac, sum, mean, var,\n"
    "  std, norm (p=2), logsumexp, softmax, log_softmax, matmul, mm, bmm, mv, dot, outer, addmm,\n"
    "  the views (view, reshape, transpose, permute, narrow, select, squeeze, unsqueeze, expand),\n"
    "  clone, cat, stack, dtype conversion, where, masked_fill, nn.Linear (and its fused ReLU) and\n"
    "  the nn activations (relu, leaky_relu, gelu, tanh, sigmoid, silu); any other node in the way\n"
    "  is an error naming it (\"autograd.grad: create_graph is not supported through Conv2dBackward\").";

void lpt_open_autograd(lua_State *L) {
  lpt_add_methods(L, methods);
  lpt_add_functions(L, functions);
  lpt_add_docs(L, 1, method_docs);
  lpt_add_docs(L, 0, function_docs);
  /* pt.autograd */
  lua_getfield(L, LUA_REGISTRYINDEX, LPT_MODULE);
  lua_getfield(L, -1, "_docs");
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, l_autograd_grad);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "grad");
  lua_pushstring(L, grad_doc);
  lua_rawset(L, -4);
  lua_pushcfunction(L, l_autograd_backward);
  lua_pushvalue(L, -1);
  lua_setfield(L, -3, "backward");
  lua_pushstring(L, backward_doc);
  lua_rawset(L, -4);
  static const struct {
    const char *name;
    lua_CFunction fn;
    const char *doc;
  } anomaly_fns[] = {
      {"set_detect_anomaly", l_set_detect_anomaly,
       "pt.autograd.set_detect_anomaly(flag): anomaly detection on or off (torch's). While on, backward\n"
       "  checks every gradient each node returns for NaN and fails there (\"MulBackward: returned nan values\n"
       "  in the gradient of its input 1\"), and an error in a backward names the forward call that created\n"
       "  the node (its traceback, noted when the result reached Lua). Slow: for debugging."},
      {"is_anomaly_enabled", l_is_anomaly_enabled, "pt.autograd.is_anomaly_enabled() -> whether anomaly detection is on."},
      {"detect_anomaly", l_detect_anomaly,
       "pt.autograd.detect_anomaly(fn, ...) -> fn(...) run with anomaly detection on (see set_detect_anomaly),\n"
       "  as torch's `with torch.autograd.detect_anomaly():`; the previous setting comes back after."},
  };
  for (size_t i = 0; i < sizeof anomaly_fns / sizeof anomaly_fns[0]; i++) {
    lua_pushcfunction(L, anomaly_fns[i].fn);
    lua_pushvalue(L, -1);
    lua_setfield(L, -3, anomaly_fns[i].name);
    lua_pushstring(L, anomaly_fns[i].doc);
    lua_rawset(L, -4);
  }
  lua_pushvalue(L, -1);
  lua_pushstring(L, "pt.autograd: functional autograd, as torch.autograd: grad(outputs, inputs[, opts]).");
  lua_rawset(L, -4);
  lua_setfield(L, -3, "autograd");
  lua_pop(L, 2);
}
