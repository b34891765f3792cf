/* See transfer.h. Encoding runs under lua_pcall in the source state, decoding under lua_pcall in
 * the destination state, so failures come back as messages and nothing leaks.
 *
 * Wire format (one byte tag, then payload; varints are LEB128):
 *   header   varint nvalues, byte flags; then nvalues values, then globals, then 'z'
 *   'n' nil  't' true  'f' false  'i' int64  'd' double  's' varint len + bytes
 *   'R' varint id          back reference to a table/function/path already decoded
 *   'T'                    table (gets the next id): key value ... 'e', then metatable value
 *   'C' varint 16, key     before the 'T' of a class-like table (a metatable, or a table with an
 *                          __index field): where the table comes from, 8 bytes state id + 8 bytes
 *                          serial (see "classes" below)
 *   'P' varint k, k strings  resolved by path (gets the next id)
 *   'F' byte cache, varint len + bytecode, varint nups, upvalues  (gets the next id)
 *       upvalue: 'E' (globals) | 'J' varint fid varint n (shared with function fid's upvalue n)
 *                | a value
 *   'U' varint k   tensor objs[k]       'S' varint k   shared userdata objs[k]
 *   'L' pointer    light userdata
 *   'g' name value  a global to assign after the values
 */
#include "transfer.h"

#include <lauxlib.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lpt.h"

#define XFER_MAX_DEPTH 180
/* registry[&xfer_index_key]: the path index's holder {[INDEX_MAP] = object -> path,
 * [INDEX_COUNT] = count_loaded when built, [INDEX_SESSION] = true inside a session}, rebuilt on
 * change. A pointer key and integer fields: every encode of a table looks it up (a string key
 * and string fields were ~0.4 us of each sample par_by_sample sends). */
static const char xfer_index_key = 0;
enum { INDEX_MAP = 1, INDEX_COUNT = 2, INDEX_SESSION = 3 };
#define XFER_FCACHE_KEY "partrain.transfer.fcache" /* registry: bytecode -> cached closure */
#define XFER_CLASS_KEY "partrain.transfer.classes" /* registry: see push_classes */
#define PATH_SEP '\1'

typedef struct msg_obj {
  void *ptr;
  const lpt_share_ops *ops; /* NULL: a pt_tensor */
} msg_obj;

/* A small message (a sample {x, y}, a loss) fits in the struct itself: one allocation instead
 * of three, and one free, often on another thread, instead of three. */
enum { MSG_INLINE_BYTES = 64, MSG_INLINE_OBJS = 4 };
struct lpt_msg {
  atomic_int refcount;
  char *buf;
  size_t len, cap;
  msg_obj *objs;
  size_t nobjs, objcap;
  int oom;
  msg_obj inline_objs[MSG_INLINE_OBJS];
  char inline_buf[MSG_INLINE_BYTES];
};

lpt_msg *lpt_msg_new(void) {
  lpt_msg *m = lpt_zalloc(sizeof *m);
  if (!m) return NULL;
  atomic_init(&m->refcount, 1);
  m->buf = m->inline_buf;
  m->cap = MSG_INLINE_BYTES;
  m->objs = m->inline_objs;
  m->objcap = MSG_INLINE_OBJS;
  return m;
}

lpt_msg *lpt_msg_retain(lpt_msg *m) {
  if (m) atomic_fetch_add_explicit(&m->refcount, 1, memory_order_relaxed);
  return m;
}

void lpt_msg_release(lpt_msg *m) {
  if (!m) return;
  if (atomic_fetch_sub_explicit(&m->refcount, 1, memory_order_acq_rel) != 1) return;
  for (size_t i = 0; i < m->nobjs; i++) {
    if (m->objs[i].ops)
      m->objs[i].ops->release(m->objs[i].ptr);
    else
      pt_tensor_release(m->objs[i].ptr);
  }
  if (m->objs != m->inline_objs) free(m->objs);
  if (m->buf != m->inline_buf) free(m->buf);
  free(m);
}

size_t lpt_msg_bytes(const lpt_msg *m) { return m->len; }

bool lpt_msg_has_tensor(const lpt_msg *m, const void *t) {
  for (size_t i = 0; m && i < m->nobjs; i++)
    if (!m->objs[i].ops && m->objs[i].ptr == t) return true;
  return false;
}

bool lpt_msg_same(const lpt_msg *a, const lpt_msg *b) {
  if (a->len != b->len || a->nobjs != b->nobjs || memcmp(a->buf, b->buf, a->len) != 0) return false;
  for (size_t i = 0; i < a->nobjs; i++)
    if (a->objs[i].ptr != b->objs[i].ptr || a->objs[i].ops != b->objs[i].ops) return false;
  return true;
}

static void put(lpt_msg *m, const void *p, size_t n) {
  if (m->oom) return;
  if (m->len + n > m->cap) {
    size_t cap = m->cap * 2 > 256 ? m->cap * 2 : 256;
    while (cap < m->len + n) cap *= 2;
    bool inl = m->buf == m->inline_buf;
    char *b = inl ? malloc(cap) : realloc(m->buf, cap);
    if (!b) {
      m->oom = 1;
      return;
    }
    if (inl) memcpy(b, m->buf, m->len);
    m->buf = b;
    m->cap = cap;
  }
  memcpy(m->buf + m->len, p, n);
  m->len += n;
}

static void put_byte(lpt_msg *m, int c) {
  unsigned char b = (unsigned char)c;
  put(m, &b, 1);
}

static void put_varint(lpt_msg *m, uint64_t v) {
  unsigned char b[10];
  int n = 0;
  do {
    b[n] = v & 0x7f;
    v >>= 7;
    if (v) b[n] |= 0x80;
    n++;
  } while (v);
  put(m, b, (size_t)n);
}

static void put_str(lpt_msg *m, const char *s, size_t n) {
  put_varint(m, n);
  put(m, s, n);
}

static size_t add_obj(lpt_msg *m, void *ptr, const lpt_share_ops *ops) {
  if (m->nobjs == m->objcap) {
    size_t cap = m->objcap * 2;
    bool inl = m->objs == m->inline_objs;
    msg_obj *o = inl ? malloc(cap * sizeof *o) : realloc(m->objs, cap * sizeof *o);
    if (!o) {
      m->oom = 1;
      if (ops)
        ops->release(ptr);
      else
        pt_tensor_release(ptr);
      return 0;
    }
    if (inl) memcpy(o, m->objs, m->nobjs * sizeof *o);
    m->objs = o;
    m->objcap = cap;
  }
  m->objs[m->nobjs] = (msg_obj){ptr, ops};
  return m->nobjs++;
}

lpt_msg *lpt_msg_string(const char *s) {
  lpt_msg *m = lpt_msg_new();
  if (!m) return NULL;
  put_varint(m, 1);
  put_byte(m, 0);
  put_byte(m, 's');
  put_str(m, s, strlen(s));
  put_byte(m, 'z');
  if (m->oom) {
    lpt_msg_release(m);
    return NULL;
  }
  return m;
}

/* ---------------------------------------------------------------- bytecode scanning --- */
/* Lua 5.4 binary chunks (ldump.c): find the constant names used by GETTABUP on an upvalue
 * called _ENV, in the function and all nested functions. Returns false on a format it does
 * not understand (then no globals are sent for that function). */

typedef struct scan {
  const unsigned char *p, *end;
  bool ok;
} scan;

static uint64_t sc_size(scan *s) {
  uint64_t x = 0;
  for (int i = 0; i < 10; i++) {
    if (s->p >= s->end) {
      s->ok = false;
      return 0;
    }
    unsigned b = *s->p++;
    x = (x << 7) | (b & 0x7f);
    if (b & 0x80) return x;
  }
  s->ok = false;
  return 0;
}

static void sc_skip(scan *s, uint64_t n) {
  if ((uint64_t)(s->end - s->p) < n) {
    s->ok = false;
    s->p = s->end;
  } else {
    s->p += n;
  }
}

/* returns the string (pointer into the dump) or NULL for a NULL string */
static const char *sc_string(scan *s, size_t *len) {
  uint64_t n = sc_size(s);
  if (n == 0) {
    *len = 0;
    return NULL;
  }
  const char *str = (const char *)s->p;
  *len = (size_t)(n - 1);
  sc_skip(s, n - 1);
  return s->ok ? str : NULL;
}

typedef void (*name_cb)(void *ud, const char *name, size_t len);

#define MAXK_SCAN 4096

static void sc_function(scan *s, name_cb cb, void *ud, int depth) {
  if (depth > 200) {
    s->ok = false;
    return;
  }
  size_t l;
  sc_string(s, &l); /* source */
  sc_size(s);       /* linedefined */
  sc_size(s);       /* lastlinedefined */
  sc_skip(s, 3);    /* numparams, is_vararg, maxstacksize */
  uint64_t ncode = sc_size(s);
  const unsigned char *code = s->p;
  sc_skip(s, ncode * 4);
  if (!s->ok) return;
  uint64_t nk = sc_size(s);
  /* constants: remember string ones by index */
  const char **kstr = calloc(nk ? nk : 1, sizeof *kstr);
  size_t *klen = calloc(nk ? nk : 1, sizeof *klen);
  if (!kstr || !klen) {
    free(kstr);
    free(klen);
    s->ok = false;
    return;
  }
  for (uint64_t i = 0; i < nk && s->ok; i++) {
    if (s->p >= s->end) {
      s->ok = false;
      break;
    }
    int tt = *s->p++;
    switch (tt) {
    case 0x00: case 0x01: case 0x11: break;              /* nil, false, true */
    case 0x03: case 0x13: sc_skip(s, 8); break;          /* integer, float */
    case 0x04: case 0x14: kstr[i] = sc_string(s, &klen[i]); break; /* strings */
    default: s->ok = false;
    }
  }
  uint64_t nup = 0;
  if (s->ok) {
    nup = sc_size(s);
    sc_skip(s, nup * 3);
  }
  if (s->ok) {
    uint64_t np = sc_size(s);
    for (uint64_t i = 0; i < np && s->ok; i++) sc_function(s, cb, ud, depth + 1);
  }
  int env_up = -1;
  if (s->ok) { /* debug info */
    uint64_t nli = sc_size(s);
    sc_skip(s, nli);
    uint64_t nabs = sc_size(s);
    for (uint64_t i = 0; i < nabs && s->ok; i++) {
      sc_size(s);
      sc_size(s);
    }
    uint64_t nloc = sc_size(s);
    for (uint64_t i = 0; i < nloc && s->ok; i++) {
      sc_string(s, &l);
      sc_size(s);
      sc_size(s);
    }
    uint64_t nupn = sc_size(s);
    for (uint64_t i = 0; i < nupn && s->ok; i++) {
      const char *nm = sc_string(s, &l);
      if (nm && l == 4 && memcmp(nm, "_ENV", 4) == 0) env_up = (int)i;
    }
    if (nupn == 0 && nup > 0) env_up = -2; /* stripped: accept any upvalue */
  }
  if (s->ok && env_up != -1) {
    for (uint64_t pc = 0; pc < ncode; pc++) {
      uint32_t ins;
      memcpy(&ins, code + pc * 4, 4);
      unsigned op = ins & 0x7f;
      if (op != 11) continue; /* OP_GETTABUP */
      unsigned b = (ins >> 16) & 0xff, c = (ins >> 24) & 0xff;
      if ((env_up >= 0 && (int)b != env_up) || c >= nk || !kstr[c]) continue;
      cb(ud, kstr[c], klen[c]);
    }
  }
  free(kstr);
  free(klen);
}

static bool scan_globals(const char *dump, size_t n, name_cb cb, void *ud) {
  scan s = {(const unsigned char *)dump, (const unsigned char *)dump + n, true};
  static const char sig[] = "\x1bLua\x54\x00\x19\x93\r\n\x1a\n";
  if (n < 32 || memcmp(dump, sig, 12) != 0) return false;
  if (s.p[12] != 4 || s.p[13] != 8 || s.p[14] != 8) return false;
  sc_skip(&s, 15 + 8 + 8 + 1); /* sizes, LUAC_INT, LUAC_NUM, sizeupvalues */
  sc_function(&s, cb, ud, 0);
  return s.ok;
}

/* -------------------------------------------------------------------- path index --- */

static int path_depth(const char *path) {
  int n = 0;
  for (; *path; path++) n += *path == PATH_SEP;
  return n;
}

/* A value reachable under several paths keeps the shortest, and among equally short ones the
 * first in byte order: package.loaded's traversal order changes from run to run (Lua seeds its
 * string hashes per state), and a path through another module's copy of a shared table
 * ("partrain.nn_rnn.utils.f" for nn.utils.f, which nn_extra adds when it loads) resolved in
 * some runs' workers and not in others. */
static void index_add(lua_State *L, int idx, int vi, const char *path) {
  /* idx: index table; vi: value index */
  lua_pushvalue(L, vi);
  if (lua_rawget(L, idx) != LUA_TNIL) {
    const char *old = lua_tostring(L, -1);
    bool keep = !old || path_depth(old) < path_depth(path) || strcmp(old, path) <= 0;
    lua_pop(L, 1);
    if (keep) return;
  } else {
    lua_pop(L, 1);
  }
  lua_pushvalue(L, vi);
  lua_pushstring(L, path);
  lua_rawset(L, idx);
}

static bool indexable(int t) { return t == LUA_TTABLE || t == LUA_TFUNCTION || t == LUA_TUSERDATA; }

static bool plain_key(lua_State *L, int ki) {
  if (lua_type(L, ki) != LUA_TSTRING) return false;
  size_t n;
  const char *k = lua_tolstring(L, ki, &n);
  return n < 120 && memchr(k, PATH_SEP, n) == NULL && memchr(k, 0, n) == NULL;
}

/* A signature of package.loaded (which module objects are loaded under which names), so the
 * index is rebuilt when a module is added, removed or replaced. */
static lua_Integer count_loaded(lua_State *L) {
  uint64_t h = 1469598103934665603ULL;
  lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    uint64_t k = (uint64_t)(uintptr_t)lua_topointer(L, -2); /* interned: stable per name */
    uint64_t v = (uint64_t)(uintptr_t)lua_topointer(L, -1) ^ (uint64_t)lua_type(L, -1);
    h += (k * 0x9e3779b97f4a7c15ULL) ^ (v * 0xbf58476d1ce4e5b9ULL); /* order-independent */
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return (lua_Integer)h;
}

/* Pushes the path index of L (object -> "mod\1field\1field") and returns true when it is
 * current (inside a session, lpt_xfer_session, the index checked at its start is; else when
 * the set of loaded modules has not changed); pushes nothing and returns false otherwise. */
static bool push_current_index(lua_State *L) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &xfer_index_key) == LUA_TTABLE) {
    lua_rawgeti(L, -1, INDEX_SESSION);
    bool fresh = lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (!fresh) {
      lua_rawgeti(L, -1, INDEX_COUNT);
      fresh = lua_tointeger(L, -1) == count_loaded(L);
      lua_pop(L, 1);
    }
    if (fresh) {
      lua_rawgeti(L, -1, INDEX_MAP);
      lua_remove(L, -2);
      return true;
    }
  }
  lua_pop(L, 1);
  return false;
}

/* Pushes the path index of L, rebuilding it when the set of loaded modules changed. */
static void push_index(lua_State *L) {
  if (push_current_index(L)) return;
  lua_Integer count = count_loaded(L);
  luaL_checkstack(L, 16, "transfer index");
  lua_createtable(L, 3, 0); /* holder */
  lua_pushinteger(L, count);
  lua_rawseti(L, -2, INDEX_COUNT);
  lua_newtable(L); /* map */
  lua_pushvalue(L, -1);
  lua_rawseti(L, -3, INDEX_MAP);
  lua_pushvalue(L, -2);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &xfer_index_key);
  lua_remove(L, -2); /* map stays */
  int map = lua_gettop(L);
  lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  int loaded = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  int globals = lua_gettop(L);
  luaL_Buffer b;
  /* depth 0: the modules themselves */
  lua_pushnil(L);
  while (lua_next(L, loaded)) {
    if (plain_key(L, -2) && indexable(lua_type(L, -1)))
      index_add(L, map, lua_gettop(L), lua_tostring(L, -2));
    lua_pop(L, 1);
  }
  /* depth 1 and 2: fields of modules (for _G only C functions: user globals are copied) */
  for (int depth = 1; depth <= 2; depth++) {
    lua_pushnil(L);
    while (lua_next(L, loaded)) {
      int mod = lua_gettop(L);
      if (!plain_key(L, mod - 1) || lua_type(L, mod) != LUA_TTABLE) {
        lua_pop(L, 1);
        continue;
      }
      bool is_g = lua_rawequal(L, mod, globals);
      const char *modname = lua_tostring(L, mod - 1);
      lua_pushnil(L);
      while (lua_next(L, mod)) {
        int v = lua_gettop(L);
        if (plain_key(L, v - 1) && indexable(lua_type(L, v)) &&
            (!is_g || lua_iscfunction(L, v))) {
          if (depth == 1) {
            luaL_buffinit(L, &b);
            luaL_addstring(&b, modname);
            luaL_addchar(&b, PATH_SEP);
            luaL_addstring(&b, lua_tostring(L, v - 1));
            luaL_pushresult(&b);
            index_add(L, map, v, lua_tostring(L, -1));
            lua_pop(L, 1);
          } else if (!is_g && lua_type(L, v) == LUA_TTABLE && !lua_rawequal(L, v, loaded)) {
            const char *f1 = lua_tostring(L, v - 1);
            lua_pushnil(L);
            while (lua_next(L, v)) {
              int v2 = lua_gettop(L);
              if (plain_key(L, v2 - 1) && indexable(lua_type(L, v2))) {
                luaL_buffinit(L, &b);
                luaL_addstring(&b, modname);
                luaL_addchar(&b, PATH_SEP);
                luaL_addstring(&b, f1);
                luaL_addchar(&b, PATH_SEP);
                luaL_addstring(&b, lua_tostring(L, v2 - 1));
                luaL_pushresult(&b);
                index_add(L, map, v2, lua_tostring(L, -1));
                lua_pop(L, 1);
              }
              lua_pop(L, 1);
            }
          }
        }
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 2); /* loaded, globals */
}

/* ------------------------------------------------------------------------ encoder --- */

typedef struct enc {
  lua_State *L;
  lpt_msg *m;
  int first, n;
  const char *const *names;
  unsigned flags;
  int seen;    /* object address (light userdata) -> id, once seen_p overflows */
  /* the first SEEN_SMALL objects' addresses, object i + 1 having id i + 1: a sample or a result
   * holds a few, and a table per message was a tenth of encoding one */
  const void *seen_p[16];
  int seen_n;
  int index;   /* object -> path */
  int upids;   /* upvalue id (light userdata) -> fid * 256 + n */
  int gnames;  /* global name -> environment table to look it up in */
  int globals; /* the source's global table */
  int next_id;
  int depth;
  /* where we are, for messages */
  const char *root;     /* "model", "argument 2", "the closure" ... */
  char path[400];
  size_t plen;
  const char *fn_desc;  /* for upvalues: " of the closure" or " of function 'x.f'" */
  size_t root_plen;     /* path length of the root itself */
  bool mt_slot;         /* the value being encoded is a table's metatable */
} enc;

/* The encoder's tables (seen, upids, gnames) sit in stack slots that start as nil and are made
 * on first use: most messages (a sample, a loss) need one at most, and every table made here
 * is a Lua allocation on the dispatcher's hot path. */
static void enc_need(enc *e, int slot, int nrec) {
  if (lua_type(e->L, slot) == LUA_TTABLE) return;
  lua_createtable(e->L, 0, nrec);
  lua_replace(e->L, slot);
}

#define SEEN_SMALL ((int)(sizeof ((enc *)0)->seen_p / sizeof ((enc *)0)->seen_p[0]))

/* The id given earlier to the value at vi, or 0. Objects are told apart by address: every one
 * the encoder has seen is reachable from the values being sent, so none can be collected and
 * its address reused while the message is made. */
static lua_Integer seen_id(enc *e, int vi) {
  lua_State *L = e->L;
  const void *p = lua_topointer(L, vi);
  if (lua_type(L, e->seen) != LUA_TTABLE) {
    for (int i = 0; i < e->seen_n; i++)
      if (e->seen_p[i] == p) return i + 1;
    return 0;
  }
  lua_pushlightuserdata(L, (void *)p);
  lua_Integer id = lua_rawget(L, e->seen) == LUA_TNUMBER ? lua_tointeger(L, -1) : 0;
  lua_pop(L, 1);
  return id;
}

/* Give the value at vi the next id (later references to it send that id). */
static int seen_add(enc *e, int vi) {
  lua_State *L = e->L;
  const void *p = lua_topointer(L, vi);
  int id = e->next_id++;
  if (lua_type(L, e->seen) != LUA_TTABLE) {
    if (e->seen_n < SEEN_SMALL) {
      e->seen_p[e->seen_n++] = p; /* ids are given in order, so id == seen_n */
      return id;
    }
    enc_need(e, e->seen, 2 * SEEN_SMALL);
    for (int i = 0; i < e->seen_n; i++) {
      lua_pushlightuserdata(L, (void *)e->seen_p[i]);
      lua_pushinteger(L, i + 1);
      lua_rawset(L, e->seen);
    }
  }
  lua_pushlightuserdata(L, (void *)p);
  lua_pushinteger(L, id);
  lua_rawset(L, e->seen);
  return id;
}

static void enc_fail(enc *e, int vi, const char *why) {
  lua_State *L = e->L;
  char tname[64];
  int t = lua_type(L, vi);
  if (t == LUA_TFUNCTION && lua_iscfunction(L, vi))
    snprintf(tname, sizeof tname, "C function");
  else if (t == LUA_TUSERDATA && luaL_getmetafield(L, vi, "__name") == LUA_TSTRING) {
    snprintf(tname, sizeof tname, "userdata %s", lua_tostring(L, -1));
    lua_pop(L, 1);
  } else
    snprintf(tname, sizeof tname, "%s", lua_typename(L, t));
  const char *extra = why ? why : "";
  const char *desc = e->fn_desc ? e->fn_desc : "";
  const char *where = e->flags & LPT_XFER_BACK ? "back to the caller" : "to a worker";
  if (e->plen == e->root_plen)
    luaL_error(L, "%s (%s)%s cannot be sent %s%s", e->root, tname, desc, where, extra);
  else
    luaL_error(L, "field '%s' (%s) cannot be sent %s%s (in %s%s)", e->path, tname, where, extra,
               e->root, desc);
}

static size_t path_push_str(enc *e, const char *piece) {
  size_t old = e->plen, n = strlen(piece);
  if (e->plen + n < sizeof e->path) {
    memcpy(e->path + e->plen, piece, n + 1);
    e->plen += n;
  }
  return old;
}

/* The path is kept for error messages only, so the usual keys (strings, integers) are appended
 * without snprintf, which was a tenth of encoding a {tensor, label} sample. */
static size_t path_push_key(enc *e, int ki) {
  lua_State *L = e->L;
  char piece[96];
  int kt = lua_type(L, ki);
  if (kt == LUA_TSTRING) {
    size_t old = e->plen, n;
    const char *k = lua_tolstring(L, ki, &n);
    if (e->plen + n + 1 < sizeof e->path) {
      if (e->plen) e->path[e->plen++] = '.';
      memcpy(e->path + e->plen, k, n + 1);
      e->plen += n;
    }
    return old;
  }
  if (kt == LUA_TNUMBER && lua_isinteger(L, ki)) {
    lua_Integer v = lua_tointeger(L, ki);
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    char *q = piece + sizeof piece;
    *--q = '\0';
    *--q = ']';
    do {
      *--q = (char)('0' + u % 10);
      u /= 10;
    } while (u);
    if (v < 0) *--q = '-';
    *--q = '[';
    return path_push_str(e, q);
  }
  if (kt == LUA_TNUMBER) {
    snprintf(piece, sizeof piece, "[%g]", lua_tonumber(L, ki));
  } else {
    snprintf(piece, sizeof piece, "[%s key]", luaL_typename(L, ki));
  }
  return path_push_str(e, piece);
}

static void path_restore(enc *e, size_t old) {
  e->plen = old;
  e->path[old] = '\0';
}

/* start a root: description for messages, path prefix (may be "") */
static void enc_root(enc *e, const char *root, const char *label, const char *fn_desc) {
  e->root = root;
  e->fn_desc = fn_desc;
  e->plen = 0;
  e->path[0] = '\0';
  path_push_str(e, label);
  e->root_plen = e->plen;
}

static void enc_value(enc *e, int vi);

typedef struct dump_state {
  luaL_Buffer b;
  int init;
} dump_state;

/* as string.dump does: the buffer starts inside the writer, once the function was read */
static int writer(lua_State *L, const void *p, size_t sz, void *ud) {
  dump_state *ds = ud;
  if (!ds->init) {
    ds->init = 1;
    luaL_buffinit(L, &ds->b);
  }
  luaL_addlstring(&ds->b, p, sz);
  return 0;
}

static void add_global_name(void *ud, const char *name, size_t len) {
  enc *e = ud;
  lua_State *L = e->L;
  /* gnames[name] = env (value on top of the stack, below the name pushes) */
  enc_need(e, e->gnames, 4);
  lua_pushlstring(L, name, len);
  if (lua_rawget(L, e->gnames) == LUA_TNIL) {
    lua_pushlstring(L, name, len);
    lua_pushvalue(L, -3); /* env: pushed by the caller just before scanning */
    lua_rawset(L, e->gnames);
  }
  lua_pop(L, 1);
}

static bool try_path(enc *e, int vi) {
  lua_State *L = e->L;
  lua_pushvalue(L, vi);
  if (lua_rawget(L, e->index) != LUA_TSTRING) {
    lua_pop(L, 1);
    return false;
  }
  size_t n;
  const char *p = lua_tolstring(L, -1, &n);
  int parts = 1;
  for (size_t i = 0; i < n; i++)
    if (p[i] == PATH_SEP) parts++;
  put_byte(e->m, 'P');
  put_varint(e->m, (uint64_t)parts);
  const char *s = p, *end = p + n;
  while (s <= end) {
    const char *q = memchr(s, PATH_SEP, (size_t)(end - s));
    if (!q) q = end;
    put_str(e->m, s, (size_t)(q - s));
    s = q + 1;
  }
  lua_pop(L, 1);
  seen_add(e, vi); /* later references are cheap */
  return true;
}

static void enc_function(enc *e, int vi, bool cache) {
  lua_State *L = e->L;
  if (lua_iscfunction(L, vi)) enc_fail(e, vi, " (only C functions of loaded modules can)");
  int fid = seen_add(e, vi);
  enc_need(e, e->upids, 4);
  dump_state ds;
  ds.init = 0;
  lua_pushvalue(L, vi);
  lua_dump(L, writer, &ds, 0);
  if (ds.init)
    luaL_pushresult(&ds.b);
  else
    lua_pushliteral(L, "");
  lua_remove(L, -2); /* the function copy */
  size_t blen;
  const char *bc = lua_tolstring(L, -1, &blen);
  int bci = lua_gettop(L);
  put_byte(e->m, 'F');
  put_byte(e->m, cache ? 1 : 0);
  put_str(e->m, bc, blen);
  int nups = 0;
  while (lua_getupvalue(L, vi, nups + 1)) {
    lua_pop(L, 1);
    nups++;
  }
  put_varint(e->m, (uint64_t)nups);
  const char *saved_root = e->root, *saved_desc = e->fn_desc;
  char rootbuf[160], descbuf[440];
  size_t saved_plen = e->plen, saved_root_plen = e->root_plen;
  char saved_path[sizeof e->path];
  memcpy(saved_path, e->path, e->plen + 1);
  if (saved_plen)
    snprintf(descbuf, sizeof descbuf, " of function '%s'", e->path);
  else if (strcmp(e->root, "the closure") == 0)
    snprintf(descbuf, sizeof descbuf, " of the closure");
  else
    snprintf(descbuf, sizeof descbuf, " of %s", e->root);
  for (int i = 1; i <= nups; i++) {
    const char *name = lua_getupvalue(L, vi, i);
    int uv = lua_gettop(L);
    bool is_env = (name && strcmp(name, "_ENV") == 0) || lua_rawequal(L, uv, e->globals);
    if (is_env && lua_type(L, uv) == LUA_TTABLE && (e->flags & LPT_XFER_GLOBALS)) {
      /* every function's own reads, also when its _ENV is the upvalue of a function sent
       * before (all functions of a chunk share one): a global function read by the closure
       * reads globals of its own */
      size_t bl;
      const char *bcode = lua_tolstring(L, bci, &bl);
      lua_pushvalue(L, uv); /* env for add_global_name */
      scan_globals(bcode, bl, add_global_name, e);
      lua_pop(L, 1);
    }
    void *uid = lua_upvalueid(L, vi, i);
    lua_pushlightuserdata(L, uid);
    if (lua_rawget(L, e->upids) == LUA_TNUMBER) {
      lua_Integer code = lua_tointeger(L, -1);
      put_byte(e->m, 'J');
      put_varint(e->m, (uint64_t)(code >> 8));
      put_varint(e->m, (uint64_t)(code & 0xff));
      lua_pop(L, 2);
      continue;
    }
    lua_pop(L, 1);
    lua_pushlightuserdata(L, uid);
    lua_pushinteger(L, (lua_Integer)fid * 256 + i);
    lua_rawset(L, e->upids);
    if (is_env && lua_type(L, uv) == LUA_TTABLE) {
      put_byte(e->m, 'E');
    } else {
      const char *nm = name && *name ? name : "?";
      snprintf(rootbuf, sizeof rootbuf, "upvalue '%s'", nm);
      enc_root(e, rootbuf, nm, descbuf);
      enc_value(e, uv);
      e->root = saved_root;
      e->fn_desc = saved_desc;
      memcpy(e->path, saved_path, saved_plen + 1);
      e->plen = saved_plen;
      e->root_plen = saved_root_plen;
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1); /* bytecode */
}

/* ------------------------------------------------------------------------ classes --- */
/* A class (a table used as a metatable, or any table with an __index field) that a worker gets
 * as a copy must be the caller's own table again when instances come back, or
 * getmetatable(result) == Point fails (Torch7's threads lost classes the same way). Every state
 * has an id; a class table sent from the state that owns it carries (that id, a serial the
 * state gives the table); a state that decodes it remembers its copy's origin and sends that
 * same key when the copy goes anywhere; the owning state, decoding its own key, takes its
 * original table if it still lives. Each message's copy is a new one (its methods' upvalues
 * hold that copy), all with the same origin. The maps are weak, so nothing is kept alive by
 * having crossed. A table with an __index field counts as a class even when it is used as an
 * object: changes a worker makes to it do not come back. */
static atomic_int_fast64_t next_state_id = 1; /* ids of states in this process, never reused */

/* Pushes L's class table {id, serial, serial_of = {table -> serial} (weak keys), anchors =
 * {serial -> table} (weak values), origin = {copy -> key} (weak keys)}, made on first use. */
static void push_classes(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, XFER_CLASS_KEY) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_createtable(L, 0, 6);
  lua_pushinteger(L, (lua_Integer)atomic_fetch_add(&next_state_id, 1));
  lua_setfield(L, -2, "id");
  lua_pushinteger(L, 0);
  lua_setfield(L, -2, "serial");
  static const char *const names[] = {"serial_of", "anchors", "origin"};
  for (int i = 0; i < 3; i++) {
    lua_newtable(L);
    lua_createtable(L, 0, 1);
    lua_pushstring(L, i % 2 ? "v" : "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_setfield(L, -2, names[i]);
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, XFER_CLASS_KEY);
}

static bool has_index_field(lua_State *L, int vi) {
  lua_pushliteral(L, "__index");
  int t = lua_rawget(L, vi);
  lua_pop(L, 1);
  return t != LUA_TNIL;
}

/* Writes 'C' and the origin key of the class-like table at vi. */
static void put_class_origin(enc *e, int vi) {
  lua_State *L = e->L;
  luaL_checkstack(L, 8, "transfer");
  int top = lua_gettop(L);
  push_classes(L);
  int ct = top + 1;
  lua_getfield(L, ct, "origin");
  lua_pushvalue(L, vi);
  if (lua_rawget(L, -2) == LUA_TSTRING) { /* a copy: its origin goes on */
    size_t n;
    const char *k = lua_tolstring(L, -1, &n);
    put_byte(e->m, 'C');
    put_str(e->m, k, n);
    lua_settop(L, top);
    return;
  }
  lua_getfield(L, ct, "serial_of");
  int so = lua_gettop(L);
  lua_pushvalue(L, vi);
  int64_t key[2];
  if (lua_rawget(L, so) == LUA_TNUMBER) {
    key[1] = (int64_t)lua_tointeger(L, -1);
  } else { /* first time out of this state */
    lua_getfield(L, ct, "serial");
    key[1] = (int64_t)lua_tointeger(L, -1) + 1;
    lua_pushinteger(L, (lua_Integer)key[1]);
    lua_setfield(L, ct, "serial");
    lua_pushvalue(L, vi);
    lua_pushinteger(L, (lua_Integer)key[1]);
    lua_rawset(L, so);
    lua_getfield(L, ct, "anchors");
    lua_pushvalue(L, vi);
    lua_rawseti(L, -2, (lua_Integer)key[1]);
  }
  lua_getfield(L, ct, "id");
  key[0] = (int64_t)lua_tointeger(L, -1);
  put_byte(e->m, 'C');
  put_str(e->m, (const char *)key, sizeof key);
  lua_settop(L, top);
}

static void enc_table(enc *e, int vi) {
  lua_State *L = e->L;
  bool class_like = e->mt_slot || has_index_field(L, vi);
  e->mt_slot = false;
  seen_add(e, vi);
  if (class_like) put_class_origin(e, vi);
  put_byte(e->m, 'T');
  lua_pushnil(L);
  while (lua_next(L, vi)) {
    int ki = lua_gettop(L) - 1;
    enc_value(e, ki);
    size_t old = path_push_key(e, ki);
    enc_value(e, ki + 1);
    path_restore(e, old);
    lua_pop(L, 1);
  }
  put_byte(e->m, 'e');
  if (lua_getmetatable(L, vi)) {
    size_t old = path_push_str(e, e->plen ? ".<metatable>" : "<metatable>");
    e->mt_slot = true;
    enc_value(e, lua_gettop(L));
    e->mt_slot = false;
    path_restore(e, old);
    lua_pop(L, 1);
  } else {
    put_byte(e->m, 'n');
  }
}

/* nil, booleans, numbers, strings and light userdata, which are written as they are; false
 * for any other type. */
static bool put_scalar(lpt_msg *m, lua_State *L, int vi, int t) {
  switch (t) {
  case LUA_TNIL: put_byte(m, 'n'); return true;
  case LUA_TBOOLEAN: put_byte(m, lua_toboolean(L, vi) ? 't' : 'f'); return true;
  case LUA_TNUMBER:
    if (lua_isinteger(L, vi)) {
      int64_t v = (int64_t)lua_tointeger(L, vi);
      put_byte(m, 'i');
      put(m, &v, 8);
    } else {
      double v = (double)lua_tonumber(L, vi);
      put_byte(m, 'd');
      put(m, &v, 8);
    }
    return true;
  case LUA_TSTRING: {
    size_t n;
    const char *s = lua_tolstring(L, vi, &n);
    put_byte(m, 's');
    put_str(m, s, n);
    return true;
  }
  case LUA_TLIGHTUSERDATA: {
    void *p = lua_touserdata(L, vi);
    put_byte(m, 'L');
    put(m, &p, sizeof p);
    return true;
  }
  default: return false;
  }
}

/* A tensor, sent by reference: the message holds it until released. */
static void put_tensor(lpt_msg *m, pt_tensor *t) {
  size_t k = add_obj(m, pt_tensor_retain(t), NULL);
  put_byte(m, 'U');
  put_varint(m, k);
}

static void enc_value(enc *e, int vi) {
  lua_State *L = e->L;
  lpt_msg *m = e->m;
  if (m->oom) luaL_error(L, "out of memory encoding a value for a worker");
  int t = lua_type(L, vi);
  if (put_scalar(m, L, vi, t)) return;
  if (t == LUA_TTHREAD) {
    enc_fail(e, vi, NULL);
    return;
  }
  if (++e->depth > XFER_MAX_DEPTH) luaL_error(L, "value too deeply nested to send to a worker");
  luaL_checkstack(L, 12, "transfer");
  lua_Integer ref = seen_id(e, vi);
  if (ref) {
    put_byte(m, 'R');
    put_varint(m, (uint64_t)ref);
    e->depth--;
    return;
  }
  if (t == LUA_TUSERDATA) {
    lpt_box *b = lpt_test_box(L, vi);
    if (b) {
      if (!b->t) enc_fail(e, vi, " (the tensor was closed)");
      put_tensor(m, b->t);
      seen_add(e, vi);
      e->depth--;
      return;
    }
    if (lua_getmetatable(L, vi)) {
      if (lua_getfield(L, -1, LPT_SHARE_FIELD) == LUA_TLIGHTUSERDATA) {
        const lpt_share_ops *ops = lua_touserdata(L, -1);
        lua_pop(L, 2);
        void *obj = ops->share(L, vi);
        if (!obj) enc_fail(e, vi, NULL);
        size_t k = add_obj(m, obj, ops);
        seen_add(e, vi);
        put_byte(m, 'S');
        put_varint(m, k);
        e->depth--;
        return;
      }
      lua_pop(L, 2);
    }
    if (!try_path(e, vi)) enc_fail(e, vi, NULL);
    e->depth--;
    return;
  }
  if (try_path(e, vi)) {
    e->depth--;
    return;
  }
  if (t == LUA_TFUNCTION)
    enc_function(e, vi, false);
  else if (t == LUA_TTABLE)
    enc_table(e, vi);
  else
    enc_fail(e, vi, NULL);
  e->depth--;
}

static int lookup_global(lua_State *L) {
  /* env, name -> env[name] (through metamethods) */
  lua_gettable(L, 1);
  return 1;
}

static int encode_protected(lua_State *L) {
  enc *e = lua_touserdata(L, 1);
  e->L = L;
  lua_pushnil(L); /* made on first use (enc_need) */
  e->seen = lua_gettop(L);
  push_index(L);
  e->index = lua_gettop(L);
  lua_pushnil(L);
  e->upids = lua_gettop(L);
  lua_pushnil(L);
  e->gnames = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
  e->globals = lua_gettop(L);
  e->next_id = 1;
  put_varint(e->m, (uint64_t)e->n);
  put_byte(e->m, (int)e->flags);
  char namebuf[32];
  for (int i = 0; i < e->n; i++) {
    const char *root = e->names && e->names[i] ? e->names[i] : NULL;
    if (!root) {
      snprintf(namebuf, sizeof namebuf, "value %d", i + 1);
      root = namebuf;
    }
    /* "model", "sample": their fields read model.l1.weight; "argument 2": fields read [1].x */
    bool word = strchr(root, ' ') == NULL;
    enc_root(e, root, word ? root : "", NULL);
    int vi = e->first + i;
    if (i == 0 && (e->flags & LPT_XFER_CACHE_FN) && lua_type(L, vi) == LUA_TFUNCTION &&
        !lua_iscfunction(L, vi)) {
      e->depth++;
      enc_function(e, vi, true);
      e->depth--;
    } else {
      enc_value(e, vi);
    }
  }
  /* globals: sending one may discover more names; loop until none is left */
  if ((e->flags & LPT_XFER_GLOBALS) && lua_type(L, e->gnames) == LUA_TTABLE) {
    lua_newtable(L);
    int done = lua_gettop(L);
    for (;;) {
      bool any = false;
      lua_pushnil(L);
      while (lua_next(L, e->gnames)) {
        lua_pushvalue(L, -2);
        if (lua_rawget(L, done) != LUA_TNIL) {
          lua_pop(L, 2);
          continue;
        }
        lua_pop(L, 1);
        any = true;
        lua_pushvalue(L, -2);
        lua_pushboolean(L, 1);
        lua_rawset(L, done);
        /* look the name up in its environment, tolerating strict environments */
        lua_pushcfunction(L, lookup_global);
        lua_pushvalue(L, -2); /* env */
        lua_pushvalue(L, -4); /* name */
        if (lua_pcall(L, 2, 1, 0) != LUA_OK || lua_isnil(L, -1)) {
          lua_pop(L, 2);
          continue;
        }
        char root[160];
        snprintf(root, sizeof root, "global '%s'", lua_tostring(L, -3));
        enc_root(e, root, lua_tostring(L, -3), NULL);
        size_t nl;
        const char *nm = lua_tolstring(L, -3, &nl);
        put_byte(e->m, 'g');
        put_str(e->m, nm, nl);
        enc_value(e, lua_gettop(L));
        lua_pop(L, 2);
        /* the table may have grown: restart the traversal */
        lua_pop(L, 1);
        break;
      }
      if (!any) break;
    }
  }
  put_byte(e->m, 'z');
  if (e->m->oom) luaL_error(L, "out of memory encoding a value for a worker");
  return 0;
}

/* Values that are all scalars or distinct open tensors (a result, a loss) need neither the path
 * index nor the error paths, so they are written here without the protected call and the
 * encoder's set-up that every other message pays for; the bytes are the same. False (m
 * untouched) for anything else. */
static bool encode_plain(lua_State *L, lpt_msg *m, int first, int n, unsigned flags) {
  enum { PLAIN_MAX = 8 };
  const lpt_box *boxes[PLAIN_MAX];
  if (n > PLAIN_MAX) return false;
  for (int i = 0; i < n; i++) {
    int t = lua_type(L, first + i);
    boxes[i] = NULL;
    if (t == LUA_TUSERDATA) {
      const lpt_box *b = lpt_test_box(L, first + i);
      if (!b || !b->t) return false;
      for (int j = 0; j < i; j++)
        if (boxes[j] == b) return false; /* the second one is a reference */
      boxes[i] = b;
    } else if (t == LUA_TTABLE || t == LUA_TFUNCTION || t == LUA_TTHREAD) {
      return false;
    }
  }
  put_varint(m, (uint64_t)n);
  put_byte(m, (int)flags);
  for (int i = 0; i < n; i++) {
    if (boxes[i]) {
      put_tensor(m, boxes[i]->t);
    } else {
      put_scalar(m, L, first + i, lua_type(L, first + i));
    }
  }
  put_byte(m, 'z');
  return true;
}

/* Whether the table at ti is not one that the current path index names (a module's table, sent
 * by path): false too when the index is out of date (the general encoder rebuilds it). */
static bool index_lacks(lua_State *L, int ti) {
  if (!push_current_index(L)) return false;
  lua_pushvalue(L, ti);
  bool lacks = lua_rawget(L, -2) == LUA_TNIL;
  lua_pop(L, 2);
  return lacks;
}

/* One table of at most FLAT_MAX entries with scalar keys and scalar or distinct open-tensor
 * values, no metatable and no __index (a sample such as {x, y}), written here without the
 * protected call: the bytes the general encoder writes for it. False (m untouched) for
 * anything else. Sanitizer builds encode it both ways and compare. */
enum { FLAT_MAX = 16 };
/* Whether the table at ti is such a table as far as its own fields go: no metatable, no
 * __index, not a module's. */
static bool flat_table_head(lua_State *L, int ti) {
  if (lua_type(L, ti) != LUA_TTABLE || !lua_checkstack(L, 8)) return false;
  if (lua_getmetatable(L, ti)) {
    lua_pop(L, 1);
    return false;
  }
  return !has_index_field(L, ti) && index_lacks(L, ti);
}

/* Whether the entry at the top of L (key -2, value -1) may be the *entries-th of such a table;
 * a tensor value's box goes to boxes[(*nb)++] (one seen before is a reference: false). */
static bool flat_entry(lua_State *L, const lpt_box **boxes, int *nb, int *entries) {
  int kt = lua_type(L, -2), vt = lua_type(L, -1);
  if (++*entries > FLAT_MAX || (kt != LUA_TSTRING && kt != LUA_TNUMBER && kt != LUA_TBOOLEAN))
    return false;
  if (vt != LUA_TUSERDATA)
    return vt == LUA_TBOOLEAN || vt == LUA_TNUMBER || vt == LUA_TSTRING || vt == LUA_TLIGHTUSERDATA;
  const lpt_box *b = lpt_test_box(L, -1);
  if (!b || !b->t) return false;
  for (int j = 0; j < *nb; j++)
    if (boxes[j] == b) return false;
  boxes[(*nb)++] = b;
  return true;
}

/* Whether the value at first is such a table; its tensor boxes, in lua_next's order, in boxes. */
static bool flat_table_check(lua_State *L, int first, const lpt_box **boxes) {
  if (!flat_table_head(L, first)) return false;
  int nb = 0, entries = 0;
  bool ok = true;
  lua_pushnil(L);
  while (ok && lua_next(L, first)) {
    ok = flat_entry(L, boxes, &nb, &entries);
    lua_pop(L, ok ? 1 : 2);
  }
  return ok;
}

static bool encode_flat_table(lua_State *L, lpt_msg *m, int first, int n, unsigned flags) {
  const lpt_box *boxes[FLAT_MAX];
  if (n != 1 || !flat_table_check(L, first, boxes)) return false;
  put_varint(m, 1);
  put_byte(m, (int)flags);
  put_byte(m, 'T');
  lua_pushnil(L);
  int nb = 0; /* the same traversal order: the boxes found above, in turn */
  while (lua_next(L, first)) {
    put_scalar(m, L, -2, lua_type(L, -2));
    if (lua_type(L, -1) == LUA_TUSERDATA)
      put_tensor(m, boxes[nb++]->t);
    else
      put_scalar(m, L, -1, lua_type(L, -1));
    lua_pop(L, 1);
  }
  put_byte(m, 'e');
  put_byte(m, 'n'); /* no metatable */
  put_byte(m, 'z');
  return true;
}

/* --- lpt_copy_flat: a flat table from one state straight into another --- */

typedef struct flat_copy {
  lua_State *from;
  int idx;
  const void *key;
  bool flat; /* out: the table was one; else nothing was stored */
} flat_copy;

/* the scalar at i of from, pushed on to */
static void push_scalar_from(lua_State *from, int i, lua_State *to) {
  switch (lua_type(from, i)) {
  case LUA_TNUMBER:
    if (lua_isinteger(from, i))
      lua_pushinteger(to, lua_tointeger(from, i));
    else
      lua_pushnumber(to, lua_tonumber(from, i));
    break;
  case LUA_TBOOLEAN: lua_pushboolean(to, lua_toboolean(from, i)); break;
  case LUA_TSTRING: {
    size_t n;
    const char *p = lua_tolstring(from, i, &n);
    lua_pushlstring(to, p, n);
    break;
  }
  default: lua_pushlightuserdata(to, lua_touserdata(from, i)); break;
  }
}

/* One pass: each entry is checked as flat_table_check would and copied; the first that is not
 * flat leaves the copy unfinished and unstored. */
static int copy_flat_protected(lua_State *to) {
  flat_copy *c = lua_touserdata(to, 1);
  lua_State *from = c->from;
  lua_Unsigned len = lua_rawlen(from, c->idx);
  lua_createtable(to, len < FLAT_MAX ? (int)len : FLAT_MAX, 0); /* {x, y}: no rehash */
  const lpt_box *boxes[FLAT_MAX];
  int nb = 0, entries = 0;
  lua_pushnil(from);
  while (lua_next(from, c->idx)) {
    if (!flat_entry(from, boxes, &nb, &entries)) return 0;
    push_scalar_from(from, -2, to);
    if (lua_type(from, -1) == LUA_TUSERDATA)
      lpt_push_tensor(to, pt_tensor_retain(boxes[nb - 1]->t));
    else
      push_scalar_from(from, -1, to);
    lua_rawset(to, -3);
    lua_pop(from, 1);
  }
  lua_rawsetp(to, LUA_REGISTRYINDEX, c->key);
  c->flat = true;
  return 0;
}

static int encode_general(lua_State *L, lpt_msg *m, int first, int n, const char *const *names,
                          unsigned flags);

#ifdef PT_SANITIZER
/* Sanitizer builds: the copy at registry[key] of `to` must be what encoding the value at idx of
 * `from` and decoding it gives (the same keys, scalars and tensor objects). */
static bool copy_flat_same(lua_State *from, int idx, lua_State *to, const void *key) {
  lpt_msg *m = lpt_msg_new();
  int n, top = lua_gettop(to), ftop = lua_gettop(from);
  bool same = m && encode_general(from, m, idx, 1, NULL, LPT_XFER_GLOBALS) == LUA_OK &&
              lpt_decode(to, m, &n) == LUA_OK && n == 1 && lua_istable(to, -1);
  lua_settop(from, ftop);
  lpt_msg_release(m);
  if (same) {
    int dec = lua_gettop(to);
    lua_rawgetp(to, LUA_REGISTRYINDEX, key);
    int cp = dec + 1, count = 0;
    lua_pushnil(to);
    while (same && lua_next(to, dec)) {
      count++;
      lua_pushvalue(to, -2);
      lua_rawget(to, cp);
      const lpt_box *a = lpt_test_box(to, -1), *b = lpt_test_box(to, -2);
      same = a || b ? a && b && a->t == b->t : lua_rawequal(to, -1, -2);
      lua_pop(to, 2);
    }
    for (lua_pushnil(to); same && lua_next(to, cp); lua_pop(to, 1)) count--;
    same = same && count == 0;
  }
  lua_settop(to, top);
  return same;
}
#endif

int lpt_copy_flat(lua_State *from, int idx, lua_State *to, const void *key) {
  flat_copy c = {from, lua_absindex(from, idx), key, false};
  if (!flat_table_head(from, c.idx) || !lua_checkstack(to, 8)) return -1;
  int top = lua_gettop(from);
  lua_pushcfunction(to, copy_flat_protected);
  lua_pushlightuserdata(to, &c);
  int st = lua_pcall(to, 1, 0, 0);
  lua_settop(from, top); /* an entry that is not flat (or a failure) leaves lua_next's key */
  if (st != LUA_OK) return st;
#ifdef PT_SANITIZER
  if (c.flat && !copy_flat_same(from, c.idx, to, key)) {
    lua_pushliteral(to, "internal error: a sample copied for the inline worker differs from its message");
    return LUA_ERRRUN;
  }
#endif
  return c.flat ? LUA_OK : -1;
}

int lpt_encode(lua_State *L, lpt_msg *m, int first, int n, const char *const *names,
               unsigned flags) {
  first = lua_absindex(L, first);
  if (encode_plain(L, m, first, n, flags) || encode_flat_table(L, m, first, n, flags)) {
    if (m->oom) {
      lua_pushliteral(L, "out of memory encoding a value for a worker");
      return LUA_ERRMEM;
    }
#ifdef PT_SANITIZER
    /* the fast paths must write what the general encoder writes */
    lpt_msg *check = lpt_msg_new();
    if (check && encode_general(L, check, first, n, names, flags) == LUA_OK) {
      bool same = check->len == m->len && memcmp(check->buf, m->buf, m->len) == 0 &&
                  check->nobjs == m->nobjs;
      for (size_t i = 0; same && i < m->nobjs; i++) same = check->objs[i].ptr == m->objs[i].ptr;
      lpt_msg_release(check);
      if (!same) {
        lua_pushliteral(L, "internal error: a fast path of the encoder differs from the general one");
        return LUA_ERRRUN;
      }
    } else if (check) {
      lua_pop(L, 1);
      lpt_msg_release(check);
    }
#endif
    return LUA_OK;
  }
  return encode_general(L, m, first, n, names, flags);
}

static int encode_general(lua_State *L, lpt_msg *m, int first, int n, const char *const *names,
                          unsigned flags) {
  enc e;
  memset(&e, 0, sizeof e);
  e.m = m;
  e.first = first;
  e.n = n;
  e.names = names;
  e.flags = flags;
  if (!lua_checkstack(L, 24)) {
    lua_pushliteral(L, "stack overflow encoding values for a worker");
    return LUA_ERRMEM;
  }
  lua_pushcfunction(L, encode_protected);
  lua_pushlightuserdata(L, &e);
  /* the values stay at their absolute indices: encode_protected sees them through e.first
   * relative to its own frame, so copy them in as extra arguments */
  for (int i = 0; i < n; i++) lua_pushvalue(L, first + i);
  e.first = 2;
  return lua_pcall(L, 1 + n, 0, 0);
}

/* ------------------------------------------------------------------------ decoder --- */

typedef struct dec {
  lua_State *L;
  const lpt_msg *m;
  size_t pos;
  int refs;
  int next_id;
  int depth;
  const lpt_tensor_subst *subst; /* or NULL */
} dec;

static void dec_bad(dec *d) { luaL_error(d->L, "corrupt message from another state"); }

static int get_byte(dec *d) {
  if (d->pos >= d->m->len) dec_bad(d);
  return (unsigned char)d->m->buf[d->pos++];
}

static uint64_t get_varint(dec *d) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    int b = get_byte(d);
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  dec_bad(d);
  return 0;
}

static void get_raw(dec *d, void *p, size_t n) {
  if (d->pos + n > d->m->len) dec_bad(d);
  memcpy(p, d->m->buf + d->pos, n);
  d->pos += n;
}

static const char *get_str(dec *d, size_t *n) {
  *n = (size_t)get_varint(d);
  if (d->pos + *n > d->m->len) dec_bad(d);
  const char *s = d->m->buf + d->pos;
  d->pos += *n;
  return s;
}

static void dec_value_tag(dec *d, int tag);

static void dec_value(dec *d) { dec_value_tag(d, get_byte(d)); }

static void dec_register(dec *d, int vi) {
  lua_pushvalue(d->L, vi);
  lua_rawseti(d->L, d->refs, d->next_id++);
}

static void dec_path(dec *d) {
  lua_State *L = d->L;
  int parts = (int)get_varint(d);
  luaL_Buffer full;
  char shown[400];
  size_t sl = 0;
  shown[0] = '\0';
  (void)full;
  for (int i = 0; i < parts; i++) {
    size_t n;
    const char *s = get_str(d, &n);
    if (sl + n + 2 < sizeof shown) {
      if (i) shown[sl++] = '.';
      memcpy(shown + sl, s, n);
      sl += n;
      shown[sl] = '\0';
    }
    if (i == 0) {
      lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
      lua_pushlstring(L, s, n);
      if (lua_rawget(L, -2) == LUA_TNIL) {
        lua_pop(L, 2);
        lua_getglobal(L, "require");
        lua_pushlstring(L, s, n);
        if (lua_pcall(L, 1, 1, 0) != LUA_OK)
          luaL_error(L, "module '%s' cannot be loaded in the worker: %s", shown,
                     lua_tostring(L, -1));
      } else {
        lua_remove(L, -2);
      }
    } else {
      if (!lua_istable(L, -1) && !lua_isuserdata(L, -1))
        luaL_error(L, "'%s' is not available in the worker", shown);
      lua_pushlstring(L, s, n);
      lua_gettable(L, -2);
      lua_remove(L, -2);
    }
    if (lua_isnil(L, -1)) luaL_error(L, "'%s' is not available in the worker", shown);
  }
  dec_register(d, lua_gettop(L));
}

static void dec_function(dec *d) {
  lua_State *L = d->L;
  int cache = get_byte(d);
  size_t n;
  const char *bc = get_str(d, &n);
  bool loaded = false;
  if (cache) {
    lua_getfield(L, LUA_REGISTRYINDEX, XFER_FCACHE_KEY);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      lua_newtable(L);
      lua_pushvalue(L, -1);
      lua_setfield(L, LUA_REGISTRYINDEX, XFER_FCACHE_KEY);
    }
    lua_pushlstring(L, bc, n);
    if (lua_rawget(L, -2) == LUA_TFUNCTION) {
      lua_remove(L, -2);
      loaded = true;
    } else {
      lua_pop(L, 1);
    }
  }
  if (!loaded) {
    if (luaL_loadbufferx(L, bc, n, "=(transferred function)", "b") != LUA_OK)
      luaL_error(L, "cannot load a transferred function: %s", lua_tostring(L, -1));
    if (cache) {
      lua_pushlstring(L, bc, n);
      lua_pushvalue(L, -2);
      lua_rawset(L, -4);
      lua_remove(L, -2);
    }
  }
  int fi = lua_gettop(L);
  int fid = d->next_id;
  dec_register(d, fi);
  int nups = (int)get_varint(d);
  for (int i = 1; i <= nups; i++) {
    int tag = get_byte(d);
    if (tag == 'J') {
      int ofid = (int)get_varint(d), on = (int)get_varint(d);
      lua_rawgeti(L, d->refs, ofid);
      if (lua_type(L, -1) != LUA_TFUNCTION) dec_bad(d);
      lua_upvaluejoin(L, fi, i, lua_gettop(L), on);
      lua_pop(L, 1);
      continue;
    }
    if (tag == 'E')
      lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
    else
      dec_value_tag(d, tag);
    if (!lua_setupvalue(L, fi, i)) lua_pop(L, 1);
  }
  (void)fid;
}

/* The class table just decoded (on top, registered as id) came with origin key: in the state
 * that owns it, the original replaces it; elsewhere it becomes the copy remembered for the key
 * (the newest: its functions' upvalues hold it, not an earlier copy, so instances its methods
 * make are of it), and every copy of the key goes back as the key. */
static void class_resolve(dec *d, const char *key, int id) {
  lua_State *L = d->L;
  int f = lua_gettop(L);
  luaL_checkstack(L, 10, "transfer");
  push_classes(L);
  int ct = f + 1;
  int64_t k[2];
  memcpy(k, key, sizeof k);
  lua_getfield(L, ct, "id");
  bool own = (int64_t)lua_tointeger(L, -1) == k[0];
  lua_pop(L, 1);
  if (own) {
    lua_getfield(L, ct, "anchors");
    if (lua_rawgeti(L, -1, (lua_Integer)k[1]) == LUA_TTABLE) {
      lua_copy(L, -1, f);
      lua_pushvalue(L, f);
      lua_rawseti(L, d->refs, id); /* later references in the message mean the original too */
    }
    lua_settop(L, f); /* (an original that is gone: the copy stands in) */
    return;
  }
  lua_getfield(L, ct, "origin");
  lua_pushvalue(L, f);
  lua_pushlstring(L, key, sizeof k);
  lua_rawset(L, -3);
  lua_settop(L, f);
}

static void dec_value_tag(dec *d, int tag) {
  lua_State *L = d->L;
  luaL_checkstack(L, 8, "transfer");
  switch (tag) {
  case 'n': lua_pushnil(L); return;
  case 't': lua_pushboolean(L, 1); return;
  case 'f': lua_pushboolean(L, 0); return;
  case 'i': {
    int64_t v;
    get_raw(d, &v, 8);
    lua_pushinteger(L, (lua_Integer)v);
    return;
  }
  case 'd': {
    double v;
    get_raw(d, &v, 8);
    lua_pushnumber(L, (lua_Number)v);
    return;
  }
  case 's': {
    size_t n;
    const char *s = get_str(d, &n);
    lua_pushlstring(L, s, n);
    return;
  }
  case 'L': {
    void *p;
    get_raw(d, &p, sizeof p);
    lua_pushlightuserdata(L, p);
    return;
  }
  case 'R': {
    lua_Integer id = (lua_Integer)get_varint(d);
    if (lua_rawgeti(L, d->refs, id) == LUA_TNIL) dec_bad(d);
    return;
  }
  case 'U': {
    size_t k = (size_t)get_varint(d);
    if (k >= d->m->nobjs || d->m->objs[k].ops) dec_bad(d);
    pt_tensor *t = d->m->objs[k].ptr;
    if (d->subst)
      for (int i = 0; i < d->subst->n; i++)
        if (d->subst->from[i] == t) {
          t = d->subst->to[i];
          break;
        }
    lpt_push_tensor(L, pt_tensor_retain(t));
    dec_register(d, lua_gettop(L));
    return;
  }
  case 'S': {
    size_t k = (size_t)get_varint(d);
    if (k >= d->m->nobjs || !d->m->objs[k].ops) dec_bad(d);
    const lpt_share_ops *ops = d->m->objs[k].ops;
    ops->push(L, ops->retain(d->m->objs[k].ptr));
    dec_register(d, lua_gettop(L));
    return;
  }
  case 'P':
    if (++d->depth > XFER_MAX_DEPTH) dec_bad(d);
    dec_path(d);
    d->depth--;
    return;
  case 'F':
    if (++d->depth > XFER_MAX_DEPTH) dec_bad(d);
    dec_function(d);
    d->depth--;
    return;
  case 'C': {
    size_t n;
    const char *k = get_str(d, &n);
    char key[16];
    if (n != sizeof key) dec_bad(d);
    memcpy(key, k, sizeof key);
    int id = d->next_id; /* the table's */
    if (get_byte(d) != 'T') dec_bad(d);
    dec_value_tag(d, 'T');
    class_resolve(d, key, id);
    return;
  }
  case 'T': {
    if (++d->depth > XFER_MAX_DEPTH) dec_bad(d);
    lua_newtable(L);
    int ti = lua_gettop(L);
    dec_register(d, ti);
    for (;;) {
      int kt = get_byte(d);
      if (kt == 'e') break;
      dec_value_tag(d, kt);
      dec_value(d);
      if (lua_isnil(L, -2)) dec_bad(d);
      lua_rawset(L, ti);
    }
    dec_value(d);
    if (lua_istable(L, -1))
      lua_setmetatable(L, ti);
    else
      lua_pop(L, 1);
    d->depth--;
    return;
  }
  default: dec_bad(d);
  }
}

static int decode_protected(lua_State *L) {
  dec *d = lua_touserdata(L, 1);
  lua_settop(L, 1);
  d->L = L;
  lua_createtable(L, 8, 0); /* ids 1..: one allocation for a typical message (a sample) */
  d->refs = 2;
  d->next_id = 1;
  int n = (int)get_varint(d);
  get_byte(d); /* flags */
  luaL_checkstack(L, n + 8, "too many values");
  for (int i = 0; i < n; i++) dec_value(d);
  for (;;) {
    int tag = get_byte(d);
    if (tag == 'z') break;
    if (tag != 'g') dec_bad(d);
    size_t nl;
    const char *name = get_str(d, &nl);
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_GLOBALS);
    lua_pushlstring(L, name, nl);
    dec_value(d);
    lua_rawset(L, -3);
    lua_pop(L, 1);
  }
  return n;
}

int lpt_decode(lua_State *L, const lpt_msg *m, int *nvalues) {
  return lpt_decode_subst(L, m, nvalues, NULL);
}

int lpt_decode_subst(lua_State *L, const lpt_msg *m, int *nvalues, const lpt_tensor_subst *subst) {
  dec d;
  memset(&d, 0, sizeof d);
  d.m = m;
  d.subst = subst;
  *nvalues = 0;
  int top = lua_gettop(L);
  if (!lua_checkstack(L, 16)) {
    lua_pushliteral(L, "stack overflow decoding values");
    return LUA_ERRMEM;
  }
  lua_pushcfunction(L, decode_protected);
  lua_pushlightuserdata(L, &d);
  int st = lua_pcall(L, 1, LUA_MULTRET, 0);
  if (st == LUA_OK) *nvalues = lua_gettop(L) - top;
  return st;
}

void lpt_xfer_session(lua_State *L, int on) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &xfer_index_key) == LUA_TTABLE) {
    if (on == LPT_SESSION_CHECK) { /* check once now */
      lua_rawgeti(L, -1, INDEX_COUNT);
      bool fresh = lua_tointeger(L, -1) == count_loaded(L);
      lua_pop(L, 1);
      if (!fresh) {
        lua_pop(L, 1);
        lua_pushnil(L);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &xfer_index_key);
        return; /* the next encode rebuilds; sessions start again at the next call */
      }
    }
    lua_pushboolean(L, on != LPT_SESSION_END);
    lua_rawseti(L, -2, INDEX_SESSION);
  }
  lua_pop(L, 1);
}
