/* pt._process_map(fn, arglists, n_workers): the engine of inbatch_parallel's `process` target
 * (batchflow's mpc).
 *
 * Worker processes are fork()ed from the caller after its state exists, so fn, its upvalues and
 * every argument are inherited (copy-on-write), nothing is serialised on the way in. The parent
 * sends each idle worker an item number over a socketpair; the worker calls fn(args...) under
 * pcall and sends back the result (or the error with its traceback) with a small serialiser:
 * nil, booleans, numbers, strings, nested tables (no cycles) and tensors. A table's metatable
 * comes back as the caller's own table when the caller's fn, arguments or global classes reach
 * it (class_map: a fork has it at the same address), and is dropped otherwise.
 * The tensors of one result travel in one memfd segment passed with SCM_RIGHTS: the worker
 * copies each tensor's data there once, the parent maps the segment and wraps it as the storage
 * of the result tensors (pt_tensor_from_storage; the storage's release callback munmaps), so
 * the parent copies nothing. A worker that dies (any signal, even SIGSEGV in native code, or
 * exit) becomes the error value of the item it was running and is replaced by a fresh fork.
 * Every child is waitpid()ed: no zombies, also when the call fails (the worker table's __gc). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lpt.h"

/* A forked worker has only the thread that forked: when its Lua code calls os.exit, the leak
 * check at exit (ASan builds) would take what the parent's other threads hold for leaks, so it
 * is off in workers (LeakSanitizer asks this hook when it is about to check). */
#ifdef PT_SANITIZER
static volatile sig_atomic_t in_forked_worker;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return in_forked_worker; }
#endif

#define LPROC_WORKERS "partrain.process.Workers"
#define LPROC_MAX_WORKERS 256
#define LPROC_MAX_DEPTH 100
#define LPROC_CLASSES 6 /* l_process_map's stack slot of the class map (see class_walk) */
#define LPROC_MAGIC 0x70747072u /* "ptpr" */

void lpt_open_process(lua_State *L);
int lpt_default_workers(void);

/* --- growable buffer --- */

typedef struct buf {
  char *p;
  size_t len, cap;
  bool oom;
} buf;

static void put(buf *b, const void *src, size_t n) {
  if (b->oom) return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n) cap *= 2;
    char *np = realloc(b->p, cap);
    if (!np) {
      b->oom = true;
      return;
    }
    b->p = np;
    b->cap = cap;
  }
  memcpy(b->p + b->len, src, n);
  b->len += n;
}

static void put_u8(buf *b, uint8_t v) { put(b, &v, 1); }
static void put_u64(buf *b, uint64_t v) { put(b, &v, 8); }

/* --- serialiser (runs in the worker) --- */

typedef struct ser {
  lua_State *L;
  buf b;
  int visiting; /* stack index of a table: tables being written (cycle check) */
  pt_tensor **tensors;
  size_t *offsets;
  int ntensors, cap;
  size_t seg;
  char path[256];
  char err[PT_ERRMSG_MAX];
} ser;

static bool ser_fail(ser *s, const char *fmt, const char *what) {
  char m[256];
  snprintf(m, sizeof m, fmt, what);
  snprintf(s->err, sizeof s->err, "%.250s (at %.200s)", m, s->path[0] ? s->path : "the result");
  return false;
}

static bool ser_value(ser *s, int idx, int depth);

static bool ser_table(ser *s, int idx, int depth) {
  lua_State *L = s->L;
  if (depth > LPROC_MAX_DEPTH) return ser_fail(s, "tables nested deeper than %s levels", "100");
  lua_pushvalue(L, idx);
  if (lua_rawget(L, s->visiting) != LUA_TNIL) {
    lua_pop(L, 1);
    return ser_fail(s, "cannot send a table that contains itself%s", "");
  }
  lua_pop(L, 1);
  lua_pushvalue(L, idx);
  lua_pushboolean(L, 1);
  lua_rawset(L, s->visiting);
  put_u8(&s->b, 't');
  size_t plen = strlen(s->path);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int k = lua_gettop(L) - 1, v = lua_gettop(L);
    if (lua_type(L, k) == LUA_TSTRING)
      snprintf(s->path + plen, sizeof s->path - plen, "%s%s", plen ? "." : "result.", lua_tostring(L, k));
    else if (lua_type(L, k) == LUA_TNUMBER)
      snprintf(s->path + plen, sizeof s->path - plen, "%s[%s]", plen ? "" : "result",
               lua_isinteger(L, k) ? lua_pushfstring(L, "%I", lua_tointeger(L, k))
                                   : lua_pushfstring(L, "%f", lua_tonumber(L, k)));
    else
      snprintf(s->path + plen, sizeof s->path - plen, "%s[%s]", plen ? "" : "result", luaL_typename(L, k));
    lua_settop(L, v);
    if (!ser_value(s, k, depth + 1) || !ser_value(s, v, depth + 1)) return false;
    s->path[plen] = '\0';
    lua_pop(L, 1);
  }
  int has_mt = lua_getmetatable(L, idx);
  if (has_mt && lua_istable(L, -1)) { /* its address: the parent may know it (class_map) */
    put_u8(&s->b, 'E');
    put_u64(&s->b, (uint64_t)(uintptr_t)lua_topointer(L, -1));
  } else {
    put_u8(&s->b, 'e');
  }
  if (has_mt) lua_pop(L, 1);
  lua_pushvalue(L, idx);
  lua_pushnil(L);
  lua_rawset(L, s->visiting);
  return true;
}

static bool ser_value(ser *s, int idx, int depth) {
  lua_State *L = s->L;
  idx = lua_absindex(L, idx);
  switch (lua_type(L, idx)) {
  case LUA_TNIL: put_u8(&s->b, 'n'); return true;
  case LUA_TBOOLEAN:
    put_u8(&s->b, 'b');
    put_u8(&s->b, (uint8_t)lua_toboolean(L, idx));
    return true;
  case LUA_TNUMBER:
    if (lua_isinteger(L, idx)) {
      put_u8(&s->b, 'i');
      put_u64(&s->b, (uint64_t)lua_tointeger(L, idx));
    } else {
      double d = lua_tonumber(L, idx);
      put_u8(&s->b, 'd');
      put(&s->b, &d, 8);
    }
    return true;
  case LUA_TSTRING: {
    size_t n;
    const char *p = lua_tolstring(L, idx, &n);
    put_u8(&s->b, 's');
    put_u64(&s->b, n);
    put(&s->b, p, n);
    return true;
  }
  case LUA_TTABLE: return ser_table(s, idx, depth);
  case LUA_TUSERDATA: {
    pt_tensor *t = lpt_test_tensor(L, idx);
    if (!t) break;
    if (t->storage->device.type != PT_CPU) return ser_fail(s, "cannot send a %s tensor", "cuda");
    if (s->ntensors == s->cap) {
      int cap = s->cap ? s->cap * 2 : 8;
      pt_tensor **nt = realloc(s->tensors, sizeof *nt * (size_t)cap);
      if (nt) s->tensors = nt;
      size_t *no = realloc(s->offsets, sizeof *no * (size_t)cap);
      if (no) s->offsets = no;
      if (!nt || !no) return ser_fail(s, "out of memory%s", "");
      s->cap = cap;
    }
    size_t off = (s->seg + 63) & ~(size_t)63;
    s->tensors[s->ntensors] = t;
    s->offsets[s->ntensors++] = off;
    s->seg = off + (size_t)pt_tensor_numel(t) * pt_dtype_size(t->dtype);
    put_u8(&s->b, 'T');
    put_u8(&s->b, (uint8_t)t->dtype);
    put_u8(&s->b, (uint8_t)t->ndim);
    for (int i = 0; i < t->ndim; i++) put_u64(&s->b, (uint64_t)t->shape[i]);
    put_u64(&s->b, off);
    return true;
  }
  default: break;
  }
  return ser_fail(s, "cannot send a %s value from a process worker", luaL_typename(L, idx));
}

/* --- wire --- */

typedef struct msg_header {
  uint32_t magic;
  int32_t item; /* 0-based */
  uint32_t ok;
  uint32_t has_fd;
  uint64_t payload;
  uint64_t seg;
} msg_header;

static bool write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= (size_t)w;
  }
  return true;
}

static bool read_all(int fd, void *p, size_t n) {
  char *c = p;
  while (n) {
    ssize_t r = recv(fd, c, n, MSG_WAITALL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= (size_t)r;
  }
  return true;
}

static bool send_msg(int fd, msg_header *h, int segfd, const void *payload) {
  struct iovec iov = {h, sizeof *h};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctrl;
  struct msghdr m;
  memset(&m, 0, sizeof m);
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  if (segfd >= 0) {
    memset(&ctrl, 0, sizeof ctrl);
    m.msg_control = ctrl.buf;
    m.msg_controllen = sizeof ctrl.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &segfd, sizeof(int));
  }
  ssize_t w;
  do w = sendmsg(fd, &m, MSG_NOSIGNAL); while (w < 0 && errno == EINTR);
  if (w < 0) return false;
  if ((size_t)w < sizeof *h && !write_all(fd, (char *)h + w, sizeof *h - (size_t)w)) return false;
  return write_all(fd, payload, h->payload);
}

/* Reads a header (and the fd sent with it); false on EOF or error. */
static bool recv_header(int fd, msg_header *h, int *segfd) {
  struct iovec iov = {h, sizeof *h};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctrl;
  struct msghdr m;
  memset(&m, 0, sizeof m);
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = ctrl.buf;
  m.msg_controllen = sizeof ctrl.buf;
  ssize_t r;
  do r = recvmsg(fd, &m, MSG_WAITALL | MSG_CMSG_CLOEXEC); while (r < 0 && errno == EINTR);
  *segfd = -1;
  if (r <= 0) return false;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) memcpy(segfd, CMSG_DATA(c), sizeof(int));
  if ((size_t)r < sizeof *h && !read_all(fd, (char *)h + r, sizeof *h - (size_t)r)) return false;
  return h->magic == LPROC_MAGIC;
}

/* --- the worker --- */

/* The stack levels below the item's function in the child (child_item and the caller's frames
 * the fork copied: _process_map, the user's script), set by child_item; a worker's traceback
 * stops above them, as a thread worker's has only its own frames. */
static int child_base_levels;

static int stack_levels(lua_State *L) {
  lua_Debug ar;
  int n = 0;
  while (lua_getstack(L, n, &ar)) n++;
  return n;
}

/* luaL_traceback's lines for levels 1..last */
static void push_traceback_to(lua_State *L, int last) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "stack traceback:");
  lua_Debug ar;
  for (int level = 1; level <= last && lua_getstack(L, level, &ar); level++) {
    lua_getinfo(L, "Slnt", &ar);
    char line[LUA_IDSIZE + 64];
    snprintf(line, sizeof line, ar.currentline > 0 ? "\n\t%s:%d: in " : "\n\t%s: in ", ar.short_src,
             ar.currentline);
    luaL_addstring(&b, line);
    if (*ar.namewhat) /* luaL_traceback says "function" for a global */
      snprintf(line, sizeof line, "%s '%s'", strcmp(ar.namewhat, "global") ? ar.namewhat : "function", ar.name);
    else if (*ar.what == 'm')
      snprintf(line, sizeof line, "main chunk");
    else if (*ar.what != 'C')
      snprintf(line, sizeof line, "function <%s:%d>", ar.short_src, ar.linedefined);
    else
      snprintf(line, sizeof line, "?");
    luaL_addstring(&b, line);
    if (ar.istailcall) luaL_addstring(&b, "\n\t(...tail calls...)");
  }
  luaL_pushresult(&b);
}

static int child_msgh(lua_State *L) {
  const char *msg = lpt_error_text(L, 1);
  lua_createtable(L, 0, 2);
  lua_pushstring(L, msg);
  lua_setfield(L, -2, "message");
  push_traceback_to(L, stack_levels(L) - child_base_levels - 1);
  lua_setfield(L, -2, "traceback");
  return 1;
}

/* Serialise the value at idx and send it as item's answer. */
static bool child_send(lua_State *L, int fd, int item, bool ok, int idx) {
  ser s;
  memset(&s, 0, sizeof s);
  s.L = L;
  idx = lua_absindex(L, idx);
  lua_newtable(L);
  s.visiting = lua_gettop(L);
  bool good = ser_value(&s, idx, 0);
  if (good && s.b.oom) good = ser_fail(&s, "out of memory%s", "");
  int segfd = -1;
  void *map = MAP_FAILED;
  size_t seg = s.seg < 64 ? 64 : s.seg;
  if (good && s.ntensors > 0) {
    segfd = memfd_create("partrain-result", MFD_CLOEXEC);
    if (segfd < 0 || ftruncate(segfd, (off_t)seg) != 0 ||
        (map = mmap(NULL, seg, PROT_READ | PROT_WRITE, MAP_SHARED, segfd, 0)) == MAP_FAILED) {
      good = ser_fail(&s, "cannot create a shared memory segment: %s", strerror(errno));
    } else {
      pt_ctx *ctx = lpt_ctx(L);
      for (int i = 0; i < s.ntensors && good; i++) {
        pt_tensor *c = NULL;
        if (pt_tensor_contiguous_raw(ctx, s.tensors[i], &c)) {
          good = ser_fail(&s, "%s", ctx->err);
          break;
        }
        memcpy((char *)map + s.offsets[i], pt_tensor_data(c),
               (size_t)pt_tensor_numel(c) * pt_dtype_size(c->dtype));
        pt_tensor_release(c);
      }
      munmap(map, seg);
    }
  }
  if (!good) { /* the answer becomes an error value describing why */
    int vis = s.visiting;
    if (segfd >= 0) close(segfd);
    segfd = -1;
    free(s.b.p);
    char msg[PT_ERRMSG_MAX + 64];
    snprintf(msg, sizeof msg, "process: the %s cannot be sent back: %s", ok ? "result" : "error",
             s.err);
    free(s.tensors);
    free(s.offsets);
    memset(&s, 0, sizeof s);
    s.L = L;
    lua_settop(L, vis);
    s.visiting = vis;
    lua_createtable(L, 0, 1);
    lua_pushstring(L, msg);
    lua_setfield(L, -2, "message");
    ok = false;
    ser_value(&s, -1, 0);
  }
  msg_header h = {LPROC_MAGIC, item, ok, segfd >= 0, s.b.len, segfd >= 0 ? seg : 0};
  bool sent = !s.b.oom && send_msg(fd, &h, segfd, s.b.p);
  if (segfd >= 0) close(segfd);
  free(s.b.p);
  free(s.tensors);
  free(s.offsets);
  return sent;
}


/* (fn, arglists, item, fd) -> whether the answer went out: one item in the child, under a
 * protected call, since reading its arguments may raise too (an __index, a length, a stack
 * too small) and an error escaping here would run the parent's code in the child */
static int child_item(lua_State *L) {
  int item = (int)lua_tointeger(L, 3), fd = (int)lua_tointeger(L, 4);
  lua_settop(L, 2);
  lua_pushcfunction(L, child_msgh); /* 3 */
  lua_pushvalue(L, 1);
  int nargs = 1;
  if (lua_geti(L, 2, item + 1) == LUA_TTABLE) {
    int t = lua_gettop(L);
    lua_Integer n = lpt_list_length(L, t);
    if (n < 0 || n > INT_MAX - 8 || !lua_checkstack(L, (int)n + 4))
      return luaL_error(L, "%I arguments are more than a Lua stack holds", (LUAI_UACINT)n);
    for (lua_Integer i = 1; i <= n; i++) lua_geti(L, t, i);
    lua_remove(L, t);
    nargs = (int)n;
  }
  child_base_levels = stack_levels(L); /* child_item and below */
  int st = lua_pcall(L, nargs, 1, 3);
  lua_pushboolean(L, child_send(L, fd, item, st == LUA_OK, -1));
  return 1;
}

/* (message, item, fd) -> whether the answer went out: an item whose arguments could not be
 * read fails with why */
static int child_fail(lua_State *L) {
  int item = (int)lua_tointeger(L, 2), fd = (int)lua_tointeger(L, 3);
  lua_pushfstring(L, "cannot read the arguments: %s", lpt_error_text(L, 1));
  lua_createtable(L, 0, 1);
  lua_insert(L, -2);
  lua_setfield(L, -2, "message");
  lua_pushboolean(L, child_send(L, fd, item, false, -1));
  return 1;
}

static _Noreturn void child_main(lua_State *L, int fnidx, int argsidx, int fd) {
  signal(SIGINT, SIG_DFL);
  lua_sethook(L, NULL, 0, 0);
  int base = lua_gettop(L);
  for (;;) {
    int32_t item;
    if (!read_all(fd, &item, sizeof item) || item < 0) break;
    lua_settop(L, base);
    lua_pushcfunction(L, child_item);
    lua_pushvalue(L, fnidx);
    lua_pushvalue(L, argsidx);
    lua_pushinteger(L, item);
    lua_pushinteger(L, fd);
    if (lua_pcall(L, 4, 1, 0) != LUA_OK) {
      lua_pushcfunction(L, child_fail);
      lua_insert(L, -2);
      lua_pushinteger(L, item);
      lua_pushinteger(L, fd);
      if (lua_pcall(L, 3, 1, 0) != LUA_OK) break; /* no memory even for that: the item dies */
    }
    if (!lua_toboolean(L, -1)) break;
  }
  fflush(NULL);
  _exit(0);
}

/* --- the parent --- */

typedef struct proc_worker {
  pid_t pid; /* 0: no process */
  int fd;
  int item; /* 0-based item it runs, -1 idle */
} proc_worker;

typedef struct proc_set {
  lpt_sigint_guard guard; /* Ctrl-C while the workers run (guarded: begun, not yet ended) */
  bool guarded;
  int n;
  proc_worker w[];
} proc_set;

static void reap(proc_worker *w, int *status) {
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
  int st = 0;
  while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (status) *status = st;
  w->pid = 0;
  w->item = -1;
}

/* Kills the workers still there and gives Ctrl-C back: the set's __close (the call's end, an
 * error unwinding it) and __gc. */
static void workers_end(proc_set *ps) {
  for (int i = 0; i < ps->n; i++)
    if (ps->w[i].pid > 0) {
      kill(ps->w[i].pid, SIGKILL);
      reap(&ps->w[i], NULL);
    }
  if (ps->guarded) lpt_sigint_guard_end(&ps->guard);
  ps->guarded = false;
}

static int workers_gc(lua_State *L) {
  workers_end(luaL_checkudata(L, 1, LPROC_WORKERS));
  return 0;
}

static bool spawn(lua_State *L, proc_set *ps, int k, int fnidx, int argsidx, char *err, size_t errn) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    snprintf(err, errn, "process: socketpair failed: %s", strerror(errno));
    return false;
  }
  pid_t parent = getpid();
  fflush(NULL); /* buffered output must not be written twice */
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(err, errn, "process: fork failed: %s", strerror(errno));
    close(sv[0]);
    close(sv[1]);
    return false;
  }
  if (pid == 0) {
#ifdef PT_SANITIZER
    in_forked_worker = 1;
#endif
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    close(sv[0]);
    for (int i = 0; i < ps->n; i++)
      if (ps->w[i].fd >= 0) close(ps->w[i].fd);
    ps->n = 0; /* the siblings are the parent's: this copy of the set must never reap them */
    child_main(L, fnidx, argsidx, sv[1]);
  }
  close(sv[1]);
  ps->w[k].pid = pid;
  ps->w[k].fd = sv[0];
  ps->w[k].item = -1;
  return true;
}

static void munmap_release(pt_storage *s) { munmap(s->data, s->nbytes); }

typedef struct deser {
  lua_State *L;
  const char *p, *end;
  pt_storage *seg;
  bool bad;
  int classes; /* stack index of the class map (address -> table) */
} deser;

static bool take(deser *d, void *out, size_t n) {
  if ((size_t)(d->end - d->p) < n) {
    d->bad = true;
    return false;
  }
  memcpy(out, d->p, n);
  d->p += n;
  return true;
}

static void deser_value(deser *d, int depth) {
  lua_State *L = d->L;
  uint8_t tag = 0;
  if (d->bad || depth > LPROC_MAX_DEPTH + 2 || !take(d, &tag, 1)) {
    d->bad = true;
    lua_pushnil(L);
    return;
  }
  luaL_checkstack(L, 4, "result too deep");
  switch (tag) {
  case 'n': lua_pushnil(L); return;
  case 'b': {
    uint8_t v = 0;
    take(d, &v, 1);
    lua_pushboolean(L, v);
    return;
  }
  case 'i': {
    int64_t v = 0;
    take(d, &v, 8);
    lua_pushinteger(L, (lua_Integer)v);
    return;
  }
  case 'd': {
    double v = 0;
    take(d, &v, 8);
    lua_pushnumber(L, v);
    return;
  }
  case 's': {
    uint64_t n = 0;
    take(d, &n, 8);
    if ((uint64_t)(d->end - d->p) < n) {
      d->bad = true;
      lua_pushnil(L);
      return;
    }
    lua_pushlstring(L, d->p, (size_t)n);
    d->p += n;
    return;
  }
  case 't': {
    lua_newtable(L);
    for (;;) {
      if (d->bad || d->p >= d->end) {
        d->bad = true;
        return;
      }
      if (*d->p == 'e') {
        d->p++;
        return;
      }
      if (*d->p == 'E') { /* with a metatable: the caller's own when the class map has it */
        uint64_t addr = 0;
        d->p++;
        if (!take(d, &addr, 8)) return;
        lua_pushlightuserdata(L, (void *)(uintptr_t)addr);
        if (lua_rawget(L, d->classes) == LUA_TTABLE)
          lua_setmetatable(L, -2);
        else
          lua_pop(L, 1);
        return;
      }
      deser_value(d, depth + 1);
      deser_value(d, depth + 1);
      if (lua_isnil(L, -2)) {
        d->bad = true;
        lua_pop(L, 2);
        return;
      }
      lua_rawset(L, -3);
    }
  }
  case 'T': {
    uint8_t dt = 0, nd = 0;
    take(d, &dt, 1);
    take(d, &nd, 1);
    int64_t shape[PT_MAX_DIMS], stride[PT_MAX_DIMS];
    uint64_t off = 0;
    if (nd > PT_MAX_DIMS || dt >= PT_DTYPE_COUNT || !d->seg) d->bad = true;
    for (int i = 0; i < nd && !d->bad; i++) take(d, &shape[i], 8);
    take(d, &off, 8);
    size_t es = pt_dtype_size((pt_dtype)dt);
    if (d->bad || es == 0 || off % es ||
        off + (uint64_t)pt_shape_numel(nd, shape) * es > d->seg->nbytes) {
      d->bad = true;
      lua_pushnil(L);
      return;
    }
    pt_contiguous_strides(nd, shape, stride);
    pt_tensor *t = NULL;
    if (pt_tensor_from_storage(lpt_ctx(L), d->seg, (pt_dtype)dt, (int64_t)(off / es), nd, shape, stride,
                               &t)) {
      d->bad = true;
      lua_pushnil(L);
      return;
    }
    lpt_push_tensor(L, t);
    return;
  }
  default: d->bad = true; lua_pushnil(L); return;
  }
}

/* Read one answer of worker w; on success stores it into results/errors and returns 1.
 * 0: the connection ended (the worker died); -1: unusable answer, message in err. */
/* (d) -> the value d holds, decoded under a protected call (a memory error must not leave the
 * payload and the mapped segment behind) */
static int deser_protected(lua_State *L) { /* (d, class map) */
  deser *d = lua_touserdata(L, 1);
  d->classes = 2; /* in this frame */
  deser_value(d, 0);
  return 1;
}

static int receive(lua_State *L, proc_worker *w, int wid, int results, int errors, char *err,
                    size_t errn) {
  msg_header h;
  int segfd = -1;
  if (!recv_header(w->fd, &h, &segfd)) {
    if (segfd >= 0) close(segfd);
    return 0;
  }
  char *payload = malloc(h.payload ? h.payload : 1);
  pt_storage *seg = NULL;
  bool ok = payload && read_all(w->fd, payload, h.payload);
  if (ok && segfd >= 0 && h.seg > 0) {
    void *map = mmap(NULL, h.seg, PROT_READ | PROT_WRITE, MAP_SHARED, segfd, 0);
    seg = map == MAP_FAILED ? NULL : pt_alloc(lpt_ctx(L), sizeof *seg);
    if (!seg) {
      if (map != MAP_FAILED) munmap(map, h.seg);
      snprintf(err, errn, "process: cannot map the result of item %d: %s", h.item + 1,
               map == MAP_FAILED ? strerror(errno) : "out of memory");
      ok = false;
    } else {
      pt_storage_init_external(seg, map, h.seg, (pt_device){PT_CPU, 0}, munmap_release, NULL);
      seg->flags |= PT_STORAGE_SHARED; /* a memfd mapped MAP_SHARED: later forks share it */
    }
  }
  if (segfd >= 0) close(segfd);
  if (!ok) {
    free(payload);
    pt_storage_release(seg);
    return err[0] ? -1 : 0;
  }
  deser d = {L, payload, payload + h.payload, seg, false, LPROC_CLASSES};
  lua_pushcfunction(L, deser_protected);
  lua_pushlightuserdata(L, &d);
  lua_pushvalue(L, d.classes);
  int status = lua_pcall(L, 2, 1, 0);
  free(payload);
  pt_storage_release(seg); /* the tensors hold their own references */
  if (status != LUA_OK) return lua_error(L); /* out of memory: payload and segment freed first */
  if (d.bad || h.item != w->item) {
    lua_pop(L, 1);
    snprintf(err, errn, "process: malformed answer from worker %d for item %d", wid, w->item + 1);
    return -1;
  }
  if (h.ok) {
    lua_rawseti(L, results, h.item + 1);
  } else {
    if (!lua_istable(L, -1)) lua_newtable(L);
    lua_pushinteger(L, wid);
    lua_setfield(L, -2, "worker");
    lua_rawseti(L, errors, h.item + 1);
  }
  w->item = -1;
  return 1;
}

static void death_message(lua_State *L, int status, int item, int wid, int errors) {
  lua_createtable(L, 0, 2);
  if (WIFSIGNALED(status))
    lua_pushfstring(L, "process worker for item %d died with signal %d (%s)", item + 1,
                    WTERMSIG(status), strsignal(WTERMSIG(status)));
  else
    lua_pushfstring(L, "process worker for item %d exited with status %d", item + 1,
                    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  lua_setfield(L, -2, "message");
  lua_pushinteger(L, wid);
  lua_setfield(L, -2, "worker");
  lua_rawseti(L, errors, item + 1);
}

/* pt._process_map(fn, arglists [, n_workers]) -> results, errors
 * results[i] = fn(table.unpack(arglists[i], 1, arglists[i].n or #arglists[i])) run in a forked
 * worker (results.n = #arglists); errors[i] = {message=, traceback=, worker=} for failed items. */
/* The class map (stack slot LPROC_CLASSES of l_process_map): address -> table for every table
 * a result's metatable may be in the parent: the metatables of the tables that fn (through its
 * upvalues), the arguments and the globals' class-like tables (those with an __index field)
 * reach, and those class-like tables themselves. Made before the first fork and held until
 * the call returns, so in every worker (a fork) the same objects sit at the same addresses and
 * stay alive: an address a worker sends is one of these or unknown, never another object.
 *
 * The walk has to reach a class wherever a program keeps it: busted keeps a spec's globals in
 * a table reached only through its environment's metamethods, among 50,000 objects when all of
 * spec/ is loaded. It goes breadth first (what is near fn first, no depth limit) with a budget
 * of visits that programs do not reach, each visit cheap (a C set of addresses). Large data
 * does not spend it: past the first LPROC_WALK_ENTRIES tables or functions of one table (the
 * rows of a dataset), only the metatables of the others are walked, not their contents. */
#define LPROC_CLASS_BUDGET 2000000 /* objects visited at most */
#define LPROC_WALK_ENTRIES 256

typedef struct addr_set { /* open addressing, power-of-two capacity */
  size_t cap, n;
  const void *slot[];
} addr_set;

typedef struct class_walker {
  lua_State *L;
  int map, seen_slot, queue; /* stack slots: the class map, the addr_set, the queue */
  addr_set *seen;
  const void *globals; /* _G */
  lua_Integer head, tail; /* queue[head + 1 .. tail] are still to walk */
  long budget;
} class_walker;

static addr_set *addr_set_new(lua_State *L, size_t cap) {
  addr_set *s = lua_newuserdatauv(L, sizeof *s + cap * sizeof s->slot[0], 0);
  s->cap = cap;
  s->n = 0;
  memset(s->slot, 0, cap * sizeof s->slot[0]);
  return s;
}

static size_t addr_hash(const void *p, size_t cap) {
  uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15u;
  return (size_t)(h >> 20) & (cap - 1);
}

/* Adds p; false when it was there already. */
static bool addr_set_add(class_walker *w, const void *p) {
  addr_set *s = w->seen;
  if (2 * (s->n + 1) > s->cap) { /* grow: a new userdata replaces the old in its slot */
    addr_set *g = addr_set_new(w->L, 2 * s->cap);
    for (size_t i = 0; i < s->cap; i++)
      if (s->slot[i]) {
        size_t j = addr_hash(s->slot[i], g->cap);
        while (g->slot[j]) j = (j + 1) & (g->cap - 1);
        g->slot[j] = s->slot[i];
      }
    g->n = s->n;
    lua_replace(w->L, w->seen_slot);
    w->seen = s = g;
  }
  size_t j = addr_hash(p, s->cap);
  for (; s->slot[j]; j = (j + 1) & (s->cap - 1))
    if (s->slot[j] == p) return false;
  s->slot[j] = p;
  s->n++;
  return true;
}

static bool addr_set_has(const addr_set *s, const void *p) {
  for (size_t j = addr_hash(p, s->cap); s->slot[j]; j = (j + 1) & (s->cap - 1))
    if (s->slot[j] == p) return true;
  return false;
}

static bool walkable(int t) { return t == LUA_TTABLE || t == LUA_TFUNCTION; }

/* Queues the table or function at idx, once. */
static void class_queue(class_walker *w, int idx) {
  lua_State *L = w->L;
  if (!walkable(lua_type(L, idx)) || !addr_set_add(w, lua_topointer(L, idx))) return;
  lua_pushvalue(L, idx);
  lua_rawseti(L, w->queue, ++w->tail);
}

static void class_add(class_walker *w, int idx) {
  lua_pushlightuserdata(w->L, (void *)lua_topointer(w->L, idx));
  lua_pushvalue(w->L, idx);
  lua_rawset(w->L, w->map);
}

static bool has_index_field(lua_State *L, int idx) {
  lua_pushliteral(L, "__index");
  bool cls = lua_rawget(L, idx) != LUA_TNIL;
  lua_pop(L, 1);
  return cls;
}

/* The metatable of the table at idx, mapped and queued. */
static void class_metatable(class_walker *w, int idx) {
  lua_State *L = w->L;
  if (!lua_getmetatable(L, idx)) return;
  if (lua_istable(L, -1) && !addr_set_has(w->seen, lua_topointer(L, -1))) {
    class_add(w, lua_gettop(L));
    class_queue(w, lua_gettop(L));
  }
  lua_pop(L, 1);
}

/* A globals table (_G, or a function's _ENV such as busted's spec environment), marked walked:
 * not all of it (package.loaded, ...), its class-like tables and its metatable (an environment
 * that reads through to _G, as busted's). */
static void class_env(class_walker *w, int idx) {
  lua_State *L = w->L;
  idx = lua_absindex(L, idx);
  addr_set_add(w, lua_topointer(L, idx));
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_istable(L, -1) && has_index_field(L, lua_gettop(L))) {
      class_add(w, lua_gettop(L));
      class_queue(w, lua_gettop(L));
    }
    lua_pop(L, 1);
  }
  if (lua_getmetatable(L, idx)) {
    class_queue(w, lua_gettop(L));
    lua_pop(L, 1);
  }
}

/* Walks the table or function at the top of the stack (popped): queues what it holds. */
static void class_visit(class_walker *w) {
  lua_State *L = w->L;
  int idx = lua_gettop(L);
  luaL_checkstack(L, 8, "process: classes");
  if (lua_type(L, idx) == LUA_TFUNCTION) {
    const char *name;
    for (int i = 1; (name = lua_getupvalue(L, idx, i)) != NULL; i++) {
      if (!strcmp(name, "_ENV") && lua_istable(L, -1) && lua_topointer(L, -1) != w->globals)
        class_env(w, lua_gettop(L)); /* the function's globals */
      else
        class_queue(w, lua_gettop(L));
      lua_pop(L, 1);
    }
  } else if (lua_topointer(L, idx) == w->globals) {
    class_env(w, idx);
  } else {
    if (has_index_field(L, idx)) class_add(w, idx);
    class_metatable(w, idx);
    int walked = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      for (int i = idx + 1; i <= idx + 2; i++) {
        int t = lua_type(L, i);
        if (walked < LPROC_WALK_ENTRIES) {
          walked += walkable(t);
          class_queue(w, i);
        } else if (t == LUA_TTABLE) { /* a row of large data: its class, not its contents */
          class_metatable(w, i);
        }
      }
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
}

static void class_walk(class_walker *w) {
  while (w->head < w->tail && w->budget > 0) {
    lua_rawgeti(w->L, w->queue, ++w->head);
    lua_pushnil(w->L); /* the queue lets go of what it walked */
    lua_rawseti(w->L, w->queue, w->head);
    w->budget--;
    class_visit(w);
  }
}

static int l_process_map(lua_State *L) {
  luaL_checkany(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer nw = luaL_optinteger(L, 3, lpt_default_workers());
  if (nw < 1) return lpt_errorf(L, "process: n_workers must be at least 1, got %d", (int)nw);
  lua_settop(L, 2);
  lua_Integer n = lpt_list_length(L, 2);
  if (n < 0 || n > INT32_MAX) return lpt_errorf(L, "process: bad number of items %d", (int)n);
  if (nw > n) nw = n ? n : 1;
  if (nw > LPROC_MAX_WORKERS) nw = LPROC_MAX_WORKERS;
  lua_createtable(L, (int)n, 1); /* 3: results */
  lua_pushinteger(L, n);
  lua_setfield(L, 3, "n");
  lua_newtable(L); /* 4: errors */
  proc_set *ps = lua_newuserdatauv(L, sizeof *ps + sizeof(proc_worker) * (size_t)nw, 0); /* 5 */
  ps->n = (int)nw;
  ps->guarded = false;
  for (int i = 0; i < ps->n; i++) ps->w[i] = (proc_worker){0, -1, -1};
  luaL_setmetatable(L, LPROC_WORKERS);
  lua_toclose(L, 5); /* however the call ends, no worker outlives it */
  lua_newtable(L); /* 6 = LPROC_CLASSES */
  lua_newtable(L); /* 7: the walk's queue */
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS); /* 8: _G */
  class_walker w = {L, LPROC_CLASSES, 9, 7, addr_set_new(L, 1024) /* 9 */, lua_topointer(L, 8),
                    0, 0, LPROC_CLASS_BUDGET};
  class_queue(&w, 8); /* the globals' classes first, then what fn and the arguments reach */
  class_queue(&w, 1);
  class_queue(&w, 2);
  class_walk(&w);
  lua_settop(L, LPROC_CLASSES);
  char err[PT_ERRMSG_MAX] = "";
  lpt_sigint_guard_begin(L, &ps->guard);
  ps->guarded = true;
  volatile sig_atomic_t *intr = ps->guard.ctx->interrupted;
  lua_Integer next = 0, done = 0;
  struct pollfd pfd[LPROC_MAX_WORKERS];
  int who[LPROC_MAX_WORKERS];
  while (done < n) {
    for (int k = 0; k < ps->n && next < n; k++) {
      proc_worker *w = &ps->w[k];
      if (w->pid == 0 && !spawn(L, ps, k, 1, 2, err, sizeof err)) {
        workers_end(ps); /* never returns to Lua with children alive */
        return lpt_errorf(L, "%s", err);
      }
      if (w->item >= 0) continue;
      int32_t item = (int32_t)next;
      w->item = item;
      if (!write_all(w->fd, &item, sizeof item)) { /* died while idle: replace, retry the item */
        kill(w->pid, SIGKILL);
        reap(w, NULL);
        continue;
      }
      next++;
    }
    int np = 0;
    for (int k = 0; k < ps->n; k++)
      if (ps->w[k].pid > 0 && ps->w[k].item >= 0) {
        pfd[np] = (struct pollfd){ps->w[k].fd, POLLIN, 0};
        who[np++] = k;
      }
    if (np == 0) break; /* cannot happen: items remain only while some worker is busy */
    int r = poll(pfd, (nfds_t)np, 200);
    if (r < 0 && errno != EINTR) {
      snprintf(err, sizeof err, "process: poll failed: %s", strerror(errno));
      workers_end(ps);
      return lpt_errorf(L, "%s", err);
    }
    if (intr && *intr) { /* Ctrl-C: the workers stop where they are */
      workers_end(ps);
      return luaL_error(L, "interrupted");
    }
    for (int j = 0; j < np && r > 0; j++) {
      if (!pfd[j].revents) continue;
      proc_worker *w = &ps->w[who[j]];
      int item = w->item;
      err[0] = '\0';
      int got = receive(L, w, who[j] + 1, 3, 4, err, sizeof err);
      if (got == 1) {
        done++;
        continue;
      }
      /* no answer: the worker died (or its answer was unusable) while running item */
      int status = 0;
      if (got < 0) kill(w->pid, SIGKILL);
      reap(w, &status);
      if (got < 0) {
        lua_createtable(L, 0, 2);
        lua_pushstring(L, err);
        lua_setfield(L, -2, "message");
        lua_pushinteger(L, who[j] + 1);
        lua_setfield(L, -2, "worker");
        lua_rawseti(L, 4, item + 1);
      } else {
        death_message(L, status, item, who[j] + 1, 4);
      }
      done++;
    }
  }
  /* orderly shutdown: closing the socket ends the worker's loop */
  for (int k = 0; k < ps->n; k++)
    if (ps->w[k].pid > 0) {
      shutdown(ps->w[k].fd, SHUT_WR);
      reap(&ps->w[k], NULL);
    }
  workers_end(ps);
  lua_pushvalue(L, 3);
  lua_pushvalue(L, 4);
  return 2;
}

static const luaL_Reg module_functions[] = {
    {"_process_map", l_process_map},
    {NULL, NULL},
};

static const char *const docs[] = {
    "_process_map",
    "pt._process_map(fn, arglists [, n_workers]) -> results, errors\n"
    "Runs fn(args...) for each argument list in forked worker processes (inputs are inherited,\n"
    "results come back serialised; tensors through shared memory). errors[i] = {message=,\n"
    "traceback=, worker=} for items that raised or whose worker died (which is then replaced).\n"
    "Used by inbatch_parallel's process target.",
    NULL, NULL,
};

void lpt_open_process(lua_State *L) {
  if (luaL_newmetatable(L, LPROC_WORKERS)) {
    lua_pushcfunction(L, workers_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, workers_gc);
    lua_setfield(L, -2, "__close");
  }
  lua_pop(L, 1);
  lpt_add_functions(L, module_functions);
  lpt_add_docs(L, 0, docs);
}
