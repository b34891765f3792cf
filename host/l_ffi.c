/* pt.ffi: load shared libraries and call their C functions through libffi.
 *
 *   local lib = pt.ffi.load("build/spec/lib_native.so")      -- pt.ffi.load() = this process
 *   local saxpy = lib:fn("saxpy", "void(int, float, float*, float*)")
 *   saxpy(n, 2.0, x, y)                                       -- tensors pass as data pointers
 *
 * and pt._native_map(fn, arglists, n_workers), the engine of inbatch_parallel's `native` target:
 * every item's arguments are converted in the caller's thread (so a bad argument becomes that
 * item's error value), then n_workers C threads call fn through libffi with no Lua involved.
 *
 * This area also opens pt.async (l_async.c) and the process engine (l_process.c). */
#include <dlfcn.h>
#include <errno.h>
#include <ffi.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/ffi_sig.h"
#include "lpt.h"

#define LFFI_LIB "partrain.ffi.Library"
#define LFFI_FN "partrain.ffi.Function"
#define LFFI_MAX_WORKERS 256

void lpt_open_async(lua_State *L);
void lpt_open_process(lua_State *L);

typedef struct lffi_lib {
  void *handle; /* NULL once collected */
} lffi_lib;

typedef struct lffi_fn {
  void (*fp)(void);
  pt_ffi_sig sig;
  ffi_cif cif;
  ffi_type *atypes[PT_FFI_MAX_ARGS];
  char name[128];
} lffi_fn;

typedef union lffi_value {
  ffi_arg a;
  ffi_sarg sa;
  int32_t i32;
  uint32_t u32;
  int64_t i64;
  uint64_t u64;
  uint8_t b;
  float f;
  double d;
  void *p;
  const char *s;
} lffi_value;

/* --- types --- */

static ffi_type *ffi_type_of(pt_ffi_type t) {
  switch (t.kind) {
  case PT_FFI_VOID: return &ffi_type_void;
  case PT_FFI_BOOL: return &ffi_type_uint8;
  case PT_FFI_INT32: return &ffi_type_sint32;
  case PT_FFI_UINT32: return &ffi_type_uint32;
  case PT_FFI_INT64: return &ffi_type_sint64;
  case PT_FFI_UINT64: return &ffi_type_uint64;
  case PT_FFI_FLOAT: return &ffi_type_float;
  case PT_FFI_DOUBLE: return &ffi_type_double;
  case PT_FFI_STRING:
  case PT_FFI_PTR: return &ffi_type_pointer;
  }
  return &ffi_type_void;
}

static lffi_fn *lpt_ffi_test_function(lua_State *L, int idx) {
  return luaL_testudata(L, idx, LFFI_FN);
}

/* --- argument conversion (no Lua error: the message goes to err, so callers can turn it into
 * one item's error value; returns false on failure) --- */

static const char *value_kind(lua_State *L, int idx) {
  if (lua_type(L, idx) == LUA_TNUMBER) return lua_isinteger(L, idx) ? "integer" : "number";
  if (lpt_test_tensor(L, idx)) return "Tensor";
  return luaL_typename(L, idx);
}

static bool convert_arg(lua_State *L, int idx, const lffi_fn *f, int i, lffi_value *v, char *err,
                        size_t errn) {
  pt_ffi_type t = f->sig.args[i];
  const char *tname = pt_ffi_type_name(t);
  switch (t.kind) {
  case PT_FFI_INT32:
  case PT_FFI_UINT32:
  case PT_FFI_INT64:
  case PT_FFI_UINT64: {
    int isint = 0;
    lua_Integer x = lua_type(L, idx) == LUA_TNUMBER ? lua_tointegerx(L, idx, &isint) : 0;
    if (!isint) {
      snprintf(err, errn, "%s: argument %d (%s) expects an integer, got %s", f->name, i + 1, tname,
               lua_type(L, idx) == LUA_TNUMBER ? "a number with a fraction" : value_kind(L, idx));
      return false;
    }
    bool ok = t.kind == PT_FFI_INT64 || (t.kind == PT_FFI_INT32 && x >= INT32_MIN && x <= INT32_MAX) ||
              (t.kind == PT_FFI_UINT32 && x >= 0 && x <= (lua_Integer)UINT32_MAX) ||
              (t.kind == PT_FFI_UINT64 && x >= 0);
    if (!ok) {
      snprintf(err, errn, "%s: argument %d (%s): %lld is out of range", f->name, i + 1, tname,
               (long long)x);
      return false;
    }
    if (t.kind == PT_FFI_INT32) v->i32 = (int32_t)x;
    else if (t.kind == PT_FFI_UINT32) v->u32 = (uint32_t)x;
    else if (t.kind == PT_FFI_INT64) v->i64 = (int64_t)x;
    else v->u64 = (uint64_t)x;
    return true;
  }
  case PT_FFI_FLOAT:
  case PT_FFI_DOUBLE:
    if (lua_type(L, idx) != LUA_TNUMBER) {
      snprintf(err, errn, "%s: argument %d (%s) expects a number, got %s", f->name, i + 1, tname,
               value_kind(L, idx));
      return false;
    }
    if (t.kind == PT_FFI_FLOAT) v->f = (float)lua_tonumber(L, idx);
    else v->d = (double)lua_tonumber(L, idx);
    return true;
  case PT_FFI_BOOL:
    if (lua_type(L, idx) != LUA_TBOOLEAN) {
      snprintf(err, errn, "%s: argument %d (bool) expects a boolean, got %s", f->name, i + 1,
               value_kind(L, idx));
      return false;
    }
    v->b = (uint8_t)lua_toboolean(L, idx);
    return true;
  case PT_FFI_STRING:
    if (lua_type(L, idx) == LUA_TSTRING) {
      v->s = lua_tostring(L, idx); /* kept alive by the caller's stack or argument table */
      return true;
    }
    if (lua_isnil(L, idx)) {
      v->s = NULL;
      return true;
    }
    snprintf(err, errn, "%s: argument %d (const char*) expects a string or nil, got %s", f->name,
             i + 1, value_kind(L, idx));
    return false;
  case PT_FFI_PTR: {
    if (lua_isnil(L, idx) && t.elem == PT_DTYPE_COUNT) {
      v->p = NULL;
      return true;
    }
    pt_tensor *x = lua_isuserdata(L, idx) ? lpt_test_tensor(L, idx) : NULL;
    if (!x) {
      bool closed = lua_isuserdata(L, idx) && luaL_testudata(L, idx, LPT_TENSOR);
      snprintf(err, errn, "%s: argument %d (%s) expects a %s%s tensor, got %s", f->name, i + 1, tname,
               closed ? "live " : "", t.elem == PT_DTYPE_COUNT ? "" : pt_dtype_name(t.elem),
               closed ? "a closed tensor" : value_kind(L, idx));
      return false;
    }
    if (t.elem != PT_DTYPE_COUNT && x->dtype != t.elem) {
      snprintf(err, errn, "%s: argument %d (%s) expects a %s tensor, got %s", f->name, i + 1, tname,
               pt_dtype_name(t.elem), pt_dtype_name(x->dtype));
      return false;
    }
    if (x->storage->device.type != PT_CPU) {
      snprintf(err, errn, "%s: argument %d (%s) expects a cpu tensor", f->name, i + 1, tname);
      return false;
    }
    if (!pt_tensor_is_contiguous(x)) {
      snprintf(err, errn, "%s: argument %d (%s) expects a contiguous tensor (call :contiguous() first)",
               f->name, i + 1, tname);
      return false;
    }
    v->p = pt_tensor_data(x);
    return true;
  }
  case PT_FFI_VOID: break;
  }
  snprintf(err, errn, "%s: argument %d has no type", f->name, i + 1);
  return false;
}

static void push_return(lua_State *L, const lffi_fn *f, const lffi_value *r) {
  switch (f->sig.ret.kind) {
  case PT_FFI_VOID: lua_pushnil(L); break;
  case PT_FFI_BOOL: lua_pushboolean(L, (uint8_t)r->a != 0); break;
  case PT_FFI_INT32: lua_pushinteger(L, (int32_t)r->sa); break;
  case PT_FFI_UINT32: lua_pushinteger(L, (uint32_t)r->a); break;
  case PT_FFI_INT64: lua_pushinteger(L, (lua_Integer)r->i64); break;
  case PT_FFI_UINT64: lua_pushinteger(L, (lua_Integer)r->u64); break; /* wraps above 2^63 */
  case PT_FFI_FLOAT: lua_pushnumber(L, r->f); break;
  case PT_FFI_DOUBLE: lua_pushnumber(L, r->d); break;
  case PT_FFI_STRING:
    if (r->s) lua_pushstring(L, r->s);
    else lua_pushnil(L);
    break;
  case PT_FFI_PTR: lua_pushnil(L); break; /* rejected by the parser */
  }
}

/* --- libraries --- */

static int lib_gc(lua_State *L) {
  lffi_lib *lib = luaL_checkudata(L, 1, LFFI_LIB);
  if (lib->handle) dlclose(lib->handle);
  lib->handle = NULL;
  return 0;
}

static int lib_tostring(lua_State *L) {
  luaL_checkudata(L, 1, LFFI_LIB);
  lua_getiuservalue(L, 1, 1);
  lua_pushfstring(L, "ffi library '%s'", lua_tostring(L, -1));
  return 1;
}

static int l_load(lua_State *L) {
  const char *path = luaL_optstring(L, 1, NULL);
  lffi_lib *lib = lua_newuserdatauv(L, sizeof *lib, 1);
  lib->handle = NULL;
  luaL_setmetatable(L, LFFI_LIB);
  lua_pushstring(L, path ? path : "(this process)");
  lua_setiuservalue(L, -2, 1);
  dlerror();
  lib->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle) {
    const char *why = dlerror();
    return lpt_errorf(L, "ffi.load: cannot load '%s': %s", path ? path : "(this process)",
                      why ? why : "unknown error");
  }
  return 1;
}

static int lib_fn(lua_State *L) {
  lffi_lib *lib = luaL_checkudata(L, 1, LFFI_LIB);
  const char *name = luaL_checkstring(L, 2);
  const char *sigtext = luaL_checkstring(L, 3);
  lua_getiuservalue(L, 1, 1);
  const char *path = lua_tostring(L, -1);
  lua_pop(L, 1);
  if (!lib->handle) return lpt_errorf(L, "ffi: library '%s' is closed", path);
  pt_ffi_sig sig;
  if (pt_ffi_sig_parse(lpt_ctx(L), sigtext, &sig)) return lpt_error(L);
  dlerror();
  void *sym = dlsym(lib->handle, name);
  if (!sym) return lpt_errorf(L, "ffi: no function '%s' in library '%s'", name, path);
  lffi_fn *f = lua_newuserdatauv(L, sizeof *f, 1);
  memset(f, 0, sizeof *f);
  luaL_setmetatable(L, LFFI_FN);
  f->sig = sig;
  snprintf(f->name, sizeof f->name, "%s", name);
  for (int i = 0; i < sig.nargs; i++) f->atypes[i] = ffi_type_of(sig.args[i]);
  if (ffi_prep_cif(&f->cif, FFI_DEFAULT_ABI, (unsigned)sig.nargs, ffi_type_of(sig.ret), f->atypes) !=
      FFI_OK)
    return lpt_errorf(L, "ffi: cannot prepare a call interface for '%s'", name);
  memcpy(&f->fp, &sym, sizeof sym); /* object pointer -> function pointer, as POSIX allows */
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1); /* the function keeps its library loaded */
  return 1;
}

/* --- functions --- */

static int fn_call(lua_State *L) {
  lffi_fn *f = luaL_checkudata(L, 1, LFFI_FN);
  int nargs = lua_gettop(L) - 1;
  if (nargs != f->sig.nargs)
    return lpt_errorf(L, "%s: expected %d argument%s, got %d", f->name, f->sig.nargs,
                      f->sig.nargs == 1 ? "" : "s", nargs);
  lffi_value vals[PT_FFI_MAX_ARGS];
  void *ptrs[PT_FFI_MAX_ARGS];
  char err[PT_ERRMSG_MAX];
  for (int i = 0; i < nargs; i++) {
    if (!convert_arg(L, i + 2, f, i, &vals[i], err, sizeof err)) return lpt_errorf(L, "%s", err);
    ptrs[i] = &vals[i];
  }
  lffi_value r;
  memset(&r, 0, sizeof r);
  ffi_call(&f->cif, f->fp, &r, ptrs);
  if (f->sig.ret.kind == PT_FFI_VOID) return 0;
  push_return(L, f, &r);
  return 1;
}

static int fn_tostring(lua_State *L) {
  lffi_fn *f = luaL_checkudata(L, 1, LFFI_FN);
  char sig[256];
  lua_pushfstring(L, "ffi function %s: %s", f->name, pt_ffi_sig_format(&f->sig, sig, sizeof sig));
  return 1;
}

static int fn_index(lua_State *L) {
  lffi_fn *f = luaL_checkudata(L, 1, LFFI_FN);
  const char *k = luaL_checkstring(L, 2);
  char sig[256];
  if (strcmp(k, "name") == 0)
    lua_pushstring(L, f->name);
  else if (strcmp(k, "signature") == 0)
    lua_pushstring(L, pt_ffi_sig_format(&f->sig, sig, sizeof sig));
  else if (strcmp(k, "nargs") == 0)
    lua_pushinteger(L, f->sig.nargs);
  else
    lua_pushnil(L);
  return 1;
}

static int l_is_function(lua_State *L) {
  lua_pushboolean(L, lpt_ffi_test_function(L, 1) != NULL);
  return 1;
}

static int l_exe_dir(lua_State *L) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return lpt_errorf(L, "ffi.exe_dir: cannot read /proc/self/exe: %s", strerror(errno));
  buf[n] = '\0';
  char *slash = strrchr(buf, '/');
  if (slash) *slash = '\0';
  lua_pushstring(L, buf);
  return 1;
}

/* --- the native engine --- */

typedef struct native_item {
  lffi_value vals[PT_FFI_MAX_ARGS];
  void *ptrs[PT_FFI_MAX_ARGS];
  lffi_value ret;
  int ok;
} native_item;

typedef struct native_job {
  const lffi_fn *f;
  native_item *items;
  int n;
  atomic_int next;
  volatile sig_atomic_t *intr; /* Ctrl-C: no new item starts (a running C call cannot stop) */
} native_job;

static void *native_worker(void *arg) {
  native_job *job = arg;
  for (;;) {
    if (job->intr && *job->intr) break;
    int i = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
    if (i >= job->n) break;
    native_item *it = &job->items[i];
    if (it->ok) ffi_call((ffi_cif *)&job->f->cif, job->f->fp, &it->ret, it->ptrs);
  }
  return NULL;
}

int lpt_default_workers(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > LFFI_MAX_WORKERS ? LFFI_MAX_WORKERS : (int)n;
}


/* pt._native_map(fn, arglists, n_workers) -> results, errors
 * results[i] is item i's return value (results.n = #arglists); errors[i] is a message for an
 * item whose arguments did not convert. */
static int l_native_map(lua_State *L) {
  lffi_fn *f = luaL_checkudata(L, 1, LFFI_FN);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer nw = luaL_optinteger(L, 3, lpt_default_workers());
  if (nw < 1) return lpt_errorf(L, "native: n_workers must be at least 1, got %d", (int)nw);
  if (nw > LFFI_MAX_WORKERS) nw = LFFI_MAX_WORKERS;
  lua_Integer n = lpt_list_length(L, 2);
  if (n < 0 || n > INT_MAX / 2) return lpt_errorf(L, "native: bad number of items %d", (int)n);
  native_item *items = lua_newuserdatauv(L, sizeof(native_item) * (size_t)(n ? n : 1), 0);
  int scratch = lua_gettop(L);
  lua_createtable(L, 0, 0); /* errors */
  int errs = lua_gettop(L);
  char err[PT_ERRMSG_MAX];
  int nok = 0;
  for (lua_Integer i = 1; i <= n; i++) {
    native_item *it = &items[i - 1];
    memset(it, 0, sizeof *it);
    /* raw reads: the strings and tensors converted below must stay referenced by the tables
     * until the calls are done (an __index could hand out values nothing else holds) */
    if (lua_rawgeti(L, 2, i) != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_pushfstring(L, "%s: the arguments of item %d are not a list", f->name, (int)i);
      lua_rawseti(L, errs, i);
      continue;
    }
    int args = lua_gettop(L);
    lua_Integer na = lpt_list_length(L, args);
    if (na != f->sig.nargs) {
      lua_pushfstring(L, "%s: expected %d argument%s, got %d", f->name, f->sig.nargs,
                      f->sig.nargs == 1 ? "" : "s", (int)na);
      lua_rawseti(L, errs, i);
      lua_pop(L, 1);
      continue;
    }
    it->ok = 1;
    for (int a = 0; a < f->sig.nargs; a++) {
      lua_rawgeti(L, args, a + 1);
      bool ok = convert_arg(L, -1, f, a, &it->vals[a], err, sizeof err);
      lua_pop(L, 1); /* a string stays referenced by the argument table */
      if (!ok) {
        lua_pushstring(L, err);
        lua_rawseti(L, errs, i);
        it->ok = 0;
        break;
      }
      it->ptrs[a] = &it->vals[a];
    }
    nok += it->ok;
    lua_pop(L, 1);
  }
  lpt_sigint_guard g;
  lpt_sigint_guard_begin(L, &g);
  native_job job = {f, items, (int)n, 0, g.ctx->interrupted};
  int nthreads = (int)(nw < nok ? nw : nok) - 1; /* the caller's thread works too */
  pthread_t tids[LFFI_MAX_WORKERS];
  int started = 0;
  for (; started < nthreads; started++)
    if (pthread_create(&tids[started], NULL, native_worker, &job) != 0) break;
  native_worker(&job);
  for (int k = 0; k < started; k++) pthread_join(tids[k], NULL);
  bool interrupted = job.intr && *job.intr;
  lpt_sigint_guard_end(&g);
  if (interrupted) return luaL_error(L, "interrupted");
  lua_createtable(L, (int)n, 1);
  for (lua_Integer i = 1; i <= n; i++) {
    if (!items[i - 1].ok) continue;
    push_return(L, f, &items[i - 1].ret);
    lua_rawseti(L, -2, i);
  }
  lua_pushinteger(L, n);
  lua_setfield(L, -2, "n");
  lua_pushvalue(L, errs);
  (void)scratch;
  return 2;
}

static const luaL_Reg lib_methods[] = {
    {"fn", lib_fn},
    {NULL, NULL},
};

static const luaL_Reg ffi_functions[] = {
    {"load", l_load},
    {"is_function", l_is_function},
    {"exe_dir", l_exe_dir},
    {NULL, NULL},
};

static const luaL_Reg module_functions[] = {
    {"_native_map", l_native_map},
    {NULL, NULL},
};

static const char *const docs[] = {
    "_native_map",
    "pt._native_map(fn, arglists [, n_workers]) -> results, errors\n"
    "Calls the ffi function fn once per argument list on up to n_workers C threads (no Lua runs\n"
    "on them). Arguments convert in the caller first; errors[i] holds the message of an item\n"
    "whose arguments did not convert. Used by inbatch_parallel's native target.",
    NULL, NULL,
};

static const char *const ffi_docs[] = {
    "load",
    "pt.ffi.load([path]) -> library\n"
    "dlopen()s a shared library (no path: the running process). lib:fn(name, signature) returns\n"
    "a callable C function, e.g. lib:fn(\"saxpy\", \"void(int, float, float*, float*)\").\n"
    "Types: void bool int unsigned int64_t/long uint64_t/size_t float double const char*, and\n"
    "float* double* int64_t* int32_t* uint8_t* bool* void* which take contiguous tensors of that\n"
    "dtype (void*: any dtype, or nil). Returns a number, boolean, string or nil.",
    "is_function",
    "pt.ffi.is_function(v) -> boolean: whether v is a function made by lib:fn",
    "exe_dir",
    "pt.ffi.exe_dir() -> string: the directory of the running executable (/proc/self/exe)",
    NULL, NULL,
};

void lpt_open_ffi(lua_State *L) {
  if (luaL_newmetatable(L, LFFI_LIB)) {
    lua_pushcfunction(L, lib_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, lib_tostring);
    lua_setfield(L, -2, "__tostring");
    luaL_newlib(L, lib_methods);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  if (luaL_newmetatable(L, LFFI_FN)) {
    lua_pushcfunction(L, fn_call);
    lua_setfield(L, -2, "__call");
    lua_pushcfunction(L, fn_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, fn_index);
    lua_setfield(L, -2, "__index");
  }
  lua_pop(L, 1);
  lpt_add_functions(L, module_functions);
  lpt_add_docs(L, 0, docs);
  /* pt.ffi: its own table; its docs go to pt._docs keyed by the function value */
  lua_getfield(L, LUA_REGISTRYINDEX, LPT_MODULE);
  luaL_newlib(L, ffi_functions);
  lua_getfield(L, -2, "_docs");
  for (const char *const *d = ffi_docs; d[0]; d += 2) {
    lua_getfield(L, -2, d[0]);
    lua_pushstring(L, d[1]);
    lua_rawset(L, -3);
  }
  lua_pop(L, 1);
  lua_setfield(L, -2, "ffi");
  lua_pop(L, 1);
  lpt_open_async(L);
  lpt_open_process(L);
}
