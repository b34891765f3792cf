/* pt.async: awaitable operations done on C helper threads, for inbatch_parallel's `async` target.
 *
 *   pt.async.sleep(seconds)      -- waits on a helper thread
 *   pt.async.read_file(path)     -- reads the whole file on a helper thread, returns a string
 *
 * Inside a coroutine attached to a scheduler (pt.async.scheduler(), used by inbatch.lua) each
 * call starts its operation, yields the operation to the scheduler and resumes with the result
 * once the helper thread has finished, so other coroutines run meanwhile. Anywhere else the
 * call simply blocks until the operation is done.
 *
 * Completion: the helper thread sets op->done under the scheduler's mutex, counts it and
 * signals the condition variable that sched:wait(timeout) waits on. An operation holds one
 * reference for its userdata and one for its thread, so either may go first. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lpt.h"

#define LASYNC_OP "partrain.async.Op"
#define LASYNC_SCHED "partrain.async.Scheduler"
#define LASYNC_ATTACHED "partrain.async.attached" /* registry: weak thread -> scheduler */

void lpt_open_async(lua_State *L);

typedef struct notifier {
  atomic_int refcount;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  unsigned long completed; /* guarded by mu */
} notifier;

enum { OP_SLEEP, OP_READ };

typedef struct async_op {
  atomic_int refcount;
  int kind;
  double seconds;
  char *path;
  notifier *nt;
  /* results, written by the helper thread before done is set under nt->mu */
  bool done;
  char *data;
  size_t len;
  char err[PT_ERRMSG_MAX];
} async_op;

static notifier *notifier_new(void) {
  notifier *nt = calloc(1, sizeof *nt);
  if (!nt) return NULL;
  atomic_init(&nt->refcount, 1);
  pthread_mutex_init(&nt->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&nt->cv, &ca);
  pthread_condattr_destroy(&ca);
  return nt;
}

static void notifier_release(notifier *nt) {
  if (!nt || atomic_fetch_sub_explicit(&nt->refcount, 1, memory_order_acq_rel) != 1) return;
  pthread_mutex_destroy(&nt->mu);
  pthread_cond_destroy(&nt->cv);
  free(nt);
}

static void op_release(async_op *op) {
  if (!op || atomic_fetch_sub_explicit(&op->refcount, 1, memory_order_acq_rel) != 1) return;
  notifier_release(op->nt);
  free(op->path);
  free(op->data);
  free(op);
}

static bool op_is_done(async_op *op) {
  pthread_mutex_lock(&op->nt->mu);
  bool d = op->done;
  pthread_mutex_unlock(&op->nt->mu);
  return d;
}

static void do_read(async_op *op) {
  FILE *fp = fopen(op->path, "rb");
  if (!fp) {
    snprintf(op->err, sizeof op->err, "read_file: cannot open '%s': %s", op->path, strerror(errno));
    return;
  }
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + len, 1, cap - len, fp);
    len += got;
    if (got == 0) break;
    if (len == cap) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  if (!buf) {
    snprintf(op->err, sizeof op->err, "read_file: out of memory reading '%s'", op->path);
  } else if (ferror(fp)) {
    snprintf(op->err, sizeof op->err, "read_file: cannot read '%s': %s", op->path, strerror(errno));
    free(buf);
  } else {
    op->data = buf;
    op->len = len;
  }
  fclose(fp);
}

static void *op_thread(void *arg) {
  async_op *op = arg;
  if (op->kind == OP_SLEEP) {
    struct timespec ts;
    ts.tv_sec = (time_t)op->seconds;
    ts.tv_nsec = (long)((op->seconds - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  } else {
    do_read(op);
  }
  pthread_mutex_lock(&op->nt->mu);
  op->done = true;
  op->nt->completed++;
  pthread_cond_broadcast(&op->nt->cv);
  pthread_mutex_unlock(&op->nt->mu);
  op_release(op);
  return NULL;
}

/* --- scheduler userdata --- */

typedef struct sched_box {
  notifier *nt;
  unsigned long seen;
} sched_box;

static sched_box *check_sched(lua_State *L, int idx) { return luaL_checkudata(L, idx, LASYNC_SCHED); }

static int l_scheduler(lua_State *L) {
  sched_box *s = lua_newuserdatauv(L, sizeof *s, 0);
  s->nt = NULL;
  s->seen = 0;
  luaL_setmetatable(L, LASYNC_SCHED);
  s->nt = notifier_new();
  if (!s->nt) return lpt_errorf(L, "async: out of memory");
  return 1;
}

static int sched_gc(lua_State *L) {
  sched_box *s = check_sched(L, 1);
  notifier_release(s->nt);
  s->nt = NULL;
  return 0;
}

/* sched:attach(co): operations started inside co yield to this scheduler */
static int sched_attach(lua_State *L) {
  check_sched(L, 1);
  luaL_checktype(L, 2, LUA_TTHREAD);
  lua_getfield(L, LUA_REGISTRYINDEX, LASYNC_ATTACHED);
  lua_pushvalue(L, 2);
  lua_pushvalue(L, 1);
  lua_rawset(L, -3);
  return 0;
}

/* sched:wait(timeout) -> number of operations completed since the last wait (0 on timeout) */
static int sched_wait(lua_State *L) {
  sched_box *s = check_sched(L, 1);
  double timeout = luaL_optnumber(L, 2, 0.1);
  if (timeout < 0) timeout = 0;
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += (time_t)timeout;
  until.tv_nsec += (long)((timeout - (double)(time_t)timeout) * 1e9);
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&s->nt->mu);
  while (s->nt->completed == s->seen)
    if (pthread_cond_timedwait(&s->nt->cv, &s->nt->mu, &until) == ETIMEDOUT) break;
  unsigned long n = s->nt->completed - s->seen;
  s->seen = s->nt->completed;
  pthread_mutex_unlock(&s->nt->mu);
  lua_pushinteger(L, (lua_Integer)n);
  return 1;
}

/* --- operations --- */

typedef struct op_box {
  async_op *op;
} op_box;

static int op_gc(lua_State *L) {
  op_box *b = luaL_checkudata(L, 1, LASYNC_OP);
  op_release(b->op);
  b->op = NULL;
  return 0;
}

static int op_done(lua_State *L) {
  op_box *b = luaL_checkudata(L, 1, LASYNC_OP);
  lua_pushboolean(L, b->op && op_is_done(b->op));
  return 1;
}

static int op_tostring(lua_State *L) {
  op_box *b = luaL_checkudata(L, 1, LASYNC_OP);
  if (!b->op) lua_pushliteral(L, "async operation (released)");
  else if (b->op->kind == OP_SLEEP) lua_pushfstring(L, "async sleep(%f)", b->op->seconds);
  else lua_pushfstring(L, "async read_file('%s')", b->op->path);
  return 1;
}

/* Wait (blocking) until op is done; used outside a scheduler. */
static void op_block(async_op *op) {
  pthread_mutex_lock(&op->nt->mu);
  while (!op->done) pthread_cond_wait(&op->nt->cv, &op->nt->mu);
  pthread_mutex_unlock(&op->nt->mu);
}

/* Push the result of a finished op (or raise its error). */
static int op_results(lua_State *L, async_op *op) {
  if (op->err[0]) return lpt_errorf(L, "%s", op->err);
  if (op->kind == OP_READ) {
    lua_pushlstring(L, op->data ? op->data : "", op->len);
    free(op->data);
    op->data = NULL;
    return 1;
  }
  return 0;
}

static int op_continue(lua_State *L, int status, lua_KContext opidx) {
  (void)status;
  op_box *b = luaL_checkudata(L, (int)opidx, LASYNC_OP);
  op_block(b->op); /* resumed early by someone other than the scheduler: wait here */
  lua_settop(L, (int)opidx);
  return op_results(L, b->op);
}

/* Pushes an empty op box and gives it a new op of kind (its reference), the box first so that
 * nothing leaks when either allocation fails. */
static async_op *op_push_new(lua_State *L, int kind) {
  op_box *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->op = NULL;
  luaL_setmetatable(L, LASYNC_OP);
  async_op *op = calloc(1, sizeof *op);
  if (!op) {
    lpt_errorf(L, "async: out of memory");
    return NULL;
  }
  atomic_init(&op->refcount, 1);
  op->kind = kind;
  b->op = op;
  return op;
}

/* Start the op in the box at the top; then yield it to the scheduler the running coroutine is
 * attached to, or block. */
static int op_start(lua_State *L) {
  int opidx = lua_gettop(L);
  async_op *op = ((op_box *)lua_touserdata(L, opidx))->op;
  notifier *nt = NULL;
  lua_getfield(L, LUA_REGISTRYINDEX, LASYNC_ATTACHED);
  lua_pushthread(L);
  lua_rawget(L, -2);
  sched_box *s = luaL_testudata(L, -1, LASYNC_SCHED);
  bool yield = s && lua_isyieldable(L);
  if (yield) {
    nt = s->nt;
    atomic_fetch_add_explicit(&nt->refcount, 1, memory_order_relaxed);
  } else {
    nt = notifier_new();
  }
  lua_settop(L, opidx);
  if (!nt) return lpt_errorf(L, "async: out of memory");
  op->nt = nt;
  atomic_fetch_add_explicit(&op->refcount, 1, memory_order_relaxed); /* the thread's reference */
  pthread_t tid;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&tid, &attr, op_thread, op);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    atomic_fetch_sub_explicit(&op->refcount, 1, memory_order_relaxed);
    return lpt_errorf(L, "async: cannot start a helper thread: %s", strerror(rc));
  }
  if (!yield) {
    op_block(op);
    lua_settop(L, opidx);
    return op_results(L, op);
  }
  lua_pushvalue(L, opidx);
  return lua_yieldk(L, 1, (lua_KContext)opidx, op_continue);
}

static int l_sleep(lua_State *L) {
  double s = luaL_checknumber(L, 1);
  if (!(s >= 0) || s > 1e6) return lpt_errorf(L, "async.sleep: seconds must be in [0, 1e6], got %f", s);
  lua_settop(L, 0);
  op_push_new(L, OP_SLEEP)->seconds = s;
  return op_start(L);
}

static int l_read_file(lua_State *L) {
  luaL_checkstring(L, 1);
  lua_settop(L, 1);
  async_op *op = op_push_new(L, OP_READ);
  op->path = strdup(lua_tostring(L, 1));
  if (!op->path) return lpt_errorf(L, "async: out of memory");
  lua_remove(L, 1);
  return op_start(L);
}

static int l_is_op(lua_State *L) {
  lua_pushboolean(L, luaL_testudata(L, 1, LASYNC_OP) != NULL);
  return 1;
}

static const luaL_Reg async_functions[] = {
    {"sleep", l_sleep},
    {"read_file", l_read_file},
    {"scheduler", l_scheduler},
    {"is_operation", l_is_op},
    {NULL, NULL},
};

static const char *const async_docs[] = {
    "sleep",
    "pt.async.sleep(seconds)\nWaits on a C helper thread. In a coroutine run by inbatch_parallel's\n"
    "async target the other coroutines proceed meanwhile; elsewhere it just blocks.",
    "read_file",
    "pt.async.read_file(path) -> string\nReads the whole file on a C helper thread (awaitable like\n"
    "pt.async.sleep). Raises \"read_file: cannot open 'path': reason\" on failure.",
    "scheduler",
    "pt.async.scheduler() -> scheduler\nsched:attach(co) makes async operations started in coroutine\n"
    "co yield to it; sched:wait(timeout) blocks until an operation completes (returns how many).",
    "is_operation",
    "pt.async.is_operation(v) -> boolean: whether v is a pending async operation (yielded to a scheduler)",
    NULL, NULL,
};

void lpt_open_async(lua_State *L) {
  if (luaL_newmetatable(L, LASYNC_OP)) {
    lua_pushcfunction(L, op_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, op_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_newtable(L);
    lua_pushcfunction(L, op_done);
    lua_setfield(L, -2, "done");
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  if (luaL_newmetatable(L, LASYNC_SCHED)) {
    lua_pushcfunction(L, sched_gc);
    lua_setfield(L, -2, "__gc");
    lua_newtable(L);
    lua_pushcfunction(L, sched_attach);
    lua_setfield(L, -2, "attach");
    lua_pushcfunction(L, sched_wait);
    lua_setfield(L, -2, "wait");
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  lua_newtable(L); /* weak-keyed: a finished coroutine is collected with its entry */
  lua_newtable(L);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, LASYNC_ATTACHED);
  lua_getfield(L, LUA_REGISTRYINDEX, LPT_MODULE);
  luaL_newlib(L, async_functions);
  lua_getfield(L, -2, "_docs");
  for (const char *const *d = async_docs; d[0]; d += 2) {
    lua_getfield(L, -2, d[0]);
    lua_pushstring(L, d[1]);
    lua_rawset(L, -3);
  }
  lua_pop(L, 1);
  lua_setfield(L, -2, "async");
  lua_pop(L, 1);
}
