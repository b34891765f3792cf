/* partrain: the executable. Shaped like lua.c: everything runs inside pmain under lua_pcall with
 * a traceback message handler; SIGINT sets a hook that raises "interrupted" in the running chunk. */
#include <lauxlib.h>
#include <lualib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lpt.h"
#include "state.h"

#define PT_VERSION "partrain 0.1.0"

static lua_State *global_L = NULL;

static void lstop(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted");
}

static void on_sigint(int sig) {
  signal(sig, SIG_DFL); /* a second Ctrl-C kills, as in lua.c */
  if (global_L) lua_sethook(global_L, lstop, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

static int docall(lua_State *L, int narg, int nres) {
  int base = lua_gettop(L) - narg;
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  global_L = L;
  signal(SIGINT, on_sigint);
  int status = lua_pcall(L, narg, nres, base);
  signal(SIGINT, SIG_DFL);
  lua_remove(L, base);
  return status;
}

static int report(lua_State *L, int status) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "partrain: %s\n", msg ? msg : "(error object is not a string)");
    fflush(stderr);
    lua_pop(L, 1);
  }
  return status;
}

static void print_usage(void) {
  fprintf(stderr,
          "usage: partrain [options] [script [args]]\n"
          "Available options are:\n"
          "  -e chunk  execute string 'chunk'\n"
          "  -i        enter interactive mode after executing 'script'\n"
          "  -v        show version information\n"
          "  -h        show this help\n"
          "  -         execute stdin and stop handling options\n"
          "With no script and a terminal on stdin, starts the REPL.\n");
}

/* Build the global 'arg' table as lua.c does: script at 0, its arguments at 1.. */
static void create_arg_table(lua_State *L, char **argv, int argc, int script) {
  int narg = argc - (script + 1);
  lua_createtable(L, narg, script + 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

static int run_script(lua_State *L, char **argv, int argc, int script) {
  const char *fname = argv[script];
  if (strcmp(fname, "-") == 0) fname = NULL;
  int status = luaL_loadfile(L, fname);
  if (status == LUA_OK) {
    int n = argc - script - 1;
    luaL_checkstack(L, n + 3, "too many arguments to script");
    for (int i = script + 1; i < argc; i++) lua_pushstring(L, argv[i]);
    status = docall(L, n, 0);
  }
  return report(L, status);
}

int pt_repl_run(lua_State *L) __attribute__((weak));

static void repl_fallback(lua_State *L) {
  char line[4096];
  for (;;) {
    fputs("> ", stdout);
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin)) break;
    if (luaL_loadbuffer(L, line, strlen(line), "=stdin") == LUA_OK) report(L, docall(L, 0, 0));
    else report(L, LUA_ERRSYNTAX);
  }
  fputs("\n", stdout);
}

static int load_partrain(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "partrain");
  int status = docall(L, 1, 1);
  if (status != LUA_OK) return report(L, status);
  lua_setglobal(L, "pt");
  return LUA_OK;
}

static int pmain(lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = (char **)lua_touserdata(L, 2);
  bool interactive = false, version = false, ran_e = false;
  int script = 0;
  int i;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || strcmp(a, "-") == 0) {
      script = i;
      break;
    }
    if (strcmp(a, "--") == 0) {
      if (i + 1 < argc) script = i + 1;
      break;
    }
    if (strcmp(a, "-i") == 0) interactive = true;
    else if (strcmp(a, "-v") == 0 || strcmp(a, "--version") == 0) version = true;
    else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      print_usage();
      lua_pushboolean(L, 1);
      return 1;
    } else if (strcmp(a, "-e") == 0) {
      if (++i >= argc) {
        fprintf(stderr, "partrain: '-e' needs argument\n");
        print_usage();
        return 0;
      }
    } else {
      fprintf(stderr, "partrain: unrecognized option '%s'\n", a);
      print_usage();
      return 0;
    }
  }
  if (version) {
    printf("%s (%s)\n", PT_VERSION, LUA_RELEASE);
    fflush(stdout);
  }
  create_arg_table(L, argv, argc, script);
  if (load_partrain(L) != LUA_OK) return 0;
  /* run -e chunks in order */
  for (int j = 1; j < (script ? script : argc); j++) {
    if (strcmp(argv[j], "-e") == 0) {
      const char *chunk = argv[++j];
      int st = luaL_loadbuffer(L, chunk, strlen(chunk), "=(command line)");
      if (st == LUA_OK) st = docall(L, 0, 0);
      if (report(L, st) != LUA_OK) return 0;
      ran_e = true;
    }
  }
  if (script && run_script(L, argv, argc, script) != LUA_OK) return 0;
  if (interactive || (!script && !ran_e && !version)) {
    if (pt_repl_run) pt_repl_run(L);
    else repl_fallback(L);
  }
  lua_pushboolean(L, 1);
  return 1;
}

int main(int argc, char **argv) {
  lua_State *L = pt_state_new();
  if (!L) {
    fprintf(stderr, "partrain: cannot create state: not enough memory\n");
    return EXIT_FAILURE;
  }
  lua_pushcfunction(L, pmain);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  int status = lua_pcall(L, 2, 1, 0);
  int ok = lua_toboolean(L, -1);
  report(L, status);
  lua_close(L);
  return (ok && status == LUA_OK) ? EXIT_SUCCESS : EXIT_FAILURE;
}
