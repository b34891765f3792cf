/* partrain: the executable. Shaped like lua.c (Lua 5.4): everything runs inside pmain under
 * lua_pcall; chunks run through docall with a traceback message handler.
 *
 * Ctrl-C: the SIGINT handler touches no Lua state beyond lua_sethook (async-signal-safe in Lua
 * 5.4). It (1) sets a hook on the running state that raises "interrupted" at the next Lua
 * call/return/instruction, (2) sets the process's interrupt flag (pt_state_interrupt_flag),
 * which partrain's ctx->interrupted points at, so long C loops in lib/ can stop with PT_EINTR,
 * and (3) restores the default action, so a second Ctrl-C while a chunk ignores the first one
 * kills the process, as in lua.c. docall clears the flag before each top-level chunk, and
 * whichever raises "interrupted" first (the hook, or an op that saw the flag) clears it. */
#include <lauxlib.h>
#include <lualib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lpt.h"
#include "state.h"

#define PT_VERSION "partrain 0.1.0"
#define PROGNAME "partrain"

/* Shared with host/repl.c (the REPL); declared there too. */
int pt_host_docall(lua_State *L, int narg, int nres);
int pt_host_report(lua_State *L, int status);
void pt_host_message(const char *msg);
const char *pt_host_version(void);
int pt_repl_run(lua_State *L) __attribute__((weak));

static lua_State *global_L = NULL;

static void setsignal(int sig, void (*handler)(int)) {
  struct sigaction sa;
  sa.sa_handler = handler;
  sa.sa_flags = 0;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, NULL);
}

/* The hook set by the signal handler: runs in the interpreter, so it may raise. The interrupt
 * is delivered once: here, or earlier by a C loop that saw the flag (its "interrupted" error
 * cleared the flag, lpt_error); a script that catches it goes on with the flag clear. */
static void laction(int sig);

static void lstop(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  /* the interrupt reached the interpreter: Ctrl-C interrupts again (lua.c leaves SIGINT at its
   * default until the next chunk, so that a script that caught one was killed by the next);
   * a handler installed meanwhile (a dispatcher's wait) is left alone */
  struct sigaction cur;
  if (sigaction(SIGINT, NULL, &cur) == 0 && cur.sa_handler == SIG_DFL) setsignal(SIGINT, laction);
  if (!*pt_state_interrupt_flag()) return;
  *pt_state_interrupt_flag() = 0;
  luaL_error(L, "interrupted");
}

static void laction(int sig) {
  int flag = LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT;
  if (pt_state_soft_interrupt_active() && !*pt_state_interrupt_flag()) {
    /* a training loop is running: let the current step finish; it raises between steps */
    *pt_state_interrupt_flag() = 1;
    return;
  }
  setsignal(sig, SIG_DFL); /* if another SIGINT happens, terminate the process */
  *pt_state_interrupt_flag() = 1;
  if (global_L) lua_sethook(global_L, lstop, flag, 1);
}

void pt_host_message(const char *msg) {
  fprintf(stderr, "%s: %s\n", PROGNAME, msg);
  fflush(stderr);
}

const char *pt_host_version(void) { return PT_VERSION " (" LUA_RELEASE ")"; }

static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

/* Run the function below its narg arguments in protected mode with a traceback handler and
 * Ctrl-C armed. Returns the lua_pcall status; on error the message is on the stack. */
int pt_host_docall(lua_State *L, int narg, int nres) {
  int base = lua_gettop(L) - narg;
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  global_L = L;
  *pt_state_interrupt_flag() = 0;
  setsignal(SIGINT, laction);
  int status = lua_pcall(L, narg, nres, base);
  setsignal(SIGINT, SIG_DFL);
  lua_sethook(L, NULL, 0, 0); /* a Ctrl-C that came as the chunk ended must not fire later */
  lua_remove(L, base);
  return status;
}

/* Print the error message on the stack (if any) and pop it. */
int pt_host_report(lua_State *L, int status) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    if (msg == NULL) msg = "(error object is not a string)";
    pt_host_message(msg);
    lua_pop(L, 1);
  }
  return status;
}

/* Usage on stderr after a bad option, on stdout when asked for with -h or --help. */
static void print_usage(const char *badoption) {
  FILE *out = badoption ? stderr : stdout;
  if (badoption) {
    if (badoption[1] == 'e' || badoption[1] == 'l')
      fprintf(stderr, "%s: '%s' needs argument\n", PROGNAME, badoption);
    else
      fprintf(stderr, "%s: unrecognized option '%s'\n", PROGNAME, badoption);
  }
  fprintf(out,
          "usage: %s [options] [script [args]]\n"
          "Available options are:\n"
          "  -e chunk  execute string 'chunk'\n"
          "  -i        enter interactive mode after executing 'script'\n"
          "  -l mod    require library 'mod' into global 'mod'\n"
          "  -l g=mod  require library 'mod' into global 'g'\n"
          "  -v        show version information (also --version)\n"
          "  -W        turn warnings on\n"
          "  -h        show this help (also --help)\n"
          "  --        stop handling options\n"
          "  -         stop handling options and execute stdin\n"
          "With no arguments: the REPL on a terminal, otherwise stdin runs as a script.\n"
          "In the REPL, help(x) describes a function or type; the global 'pt' is partrain.\n",
          PROGNAME);
  fflush(out);
}

/* Global 'arg' as in lua.c: the script at 0, its arguments at 1.., the interpreter and the
 * options at negative indices. Without a script, the interpreter is at 0. */
static void create_arg_table(lua_State *L, char **argv, int argc, int script) {
  if (script == argc) script = 0;
  int narg = argc - (script + 1);
  lua_createtable(L, narg > 0 ? narg : 0, script + 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

static int dochunk(lua_State *L, int status) {
  if (status == LUA_OK) status = pt_host_docall(L, 0, 0);
  return pt_host_report(L, status);
}

static int dostring(lua_State *L, const char *s, const char *name) {
  return dochunk(L, luaL_loadbuffer(L, s, strlen(s), name));
}

/* -l 'globname[=modname]': globname = require(modname), as lua.c 5.4.4 (without '=', the
 * module's name is the global's) */
static int dolibrary(lua_State *L, const char *arg) {
  const char *eq = strchr(arg, '=');
  const char *modname = eq ? eq + 1 : arg;
  lua_pushlstring(L, arg, eq ? (size_t)(eq - arg) : strlen(arg)); /* the global's name */
  lua_getglobal(L, "require");
  lua_pushstring(L, modname);
  int status = pt_host_docall(L, 1, 1);
  if (status == LUA_OK) {
    lua_setglobal(L, lua_tostring(L, -2));
    lua_pop(L, 1);
    return LUA_OK;
  }
  lua_remove(L, -2); /* the global's name, under the message */
  return pt_host_report(L, status);
}

/* push the script's arguments (arg[1..#arg]) */
static int pushargs(lua_State *L) {
  if (lua_getglobal(L, "arg") != LUA_TTABLE) luaL_error(L, "'arg' is not a table");
  int n = (int)luaL_len(L, -1);
  luaL_checkstack(L, n + 3, "too many arguments to script");
  int i;
  for (i = 1; i <= n; i++) lua_rawgeti(L, -i, i);
  lua_remove(L, -i);
  return n;
}

static int handle_script(lua_State *L, char **argv) {
  const char *fname = argv[0];
  if (strcmp(fname, "-") == 0 && strcmp(argv[-1], "--") != 0) fname = NULL; /* stdin */
  int status = luaL_loadfile(L, fname);
  if (status == LUA_OK) {
    int n = pushargs(L);
    status = pt_host_docall(L, n, LUA_MULTRET);
  }
  return pt_host_report(L, status);
}

enum { has_error = 1, has_i = 2, has_v = 4, has_e = 8, has_h = 16 };

/* lua.c's collectargs: returns the option flags and sets *first to the script's index (argc
 * when there is none). On a bad option, *first is its index. */
static int collectargs(char **argv, int *first) {
  int args = 0;
  int i;
  for (i = 1; argv[i] != NULL; i++) {
    *first = i;
    if (argv[i][0] != '-') return args; /* not an option: the script */
    switch (argv[i][1]) {
    case '-': /* '--', or '--help' (same as -h), '--version' (-v) */
      if (strcmp(argv[i], "--help") == 0) {
        args |= has_h;
        break;
      }
      if (strcmp(argv[i], "--version") == 0) {
        args |= has_v;
        break;
      }
      if (argv[i][2] != '\0') return has_error;
      *first = i + 1;
      return args;
    case '\0': /* '-': stdin */
      return args;
    case 'i':
      if (argv[i][2] != '\0') return has_error;
      args |= has_i;
      break;
    case 'v':
      if (argv[i][2] != '\0') return has_error;
      args |= has_v;
      break;
    case 'h':
      if (argv[i][2] != '\0') return has_error;
      args |= has_h;
      break;
    case 'W':
      if (argv[i][2] != '\0') return has_error;
      break;
    case 'e':
      args |= has_e;
      /* FALLTHROUGH */
    case 'l':
      if (argv[i][2] == '\0') { /* no concatenated argument? */
        i++;
        if (argv[i] == NULL || argv[i][0] == '-') {
          *first = i - 1;
          return has_error; /* no next argument or it is another option */
        }
      }
      break;
    default:
      return has_error;
    }
  }
  *first = i;
  return args;
}

/* -e, -l and -W in order. Returns 0 when one of them failed. */
static int runargs(lua_State *L, char **argv, int n) {
  for (int i = 1; i < n; i++) {
    int option = argv[i][1];
    switch (option) {
    case 'e':
    case 'l': {
      const char *extra = argv[i] + 2;
      if (*extra == '\0') extra = argv[++i];
      int status = option == 'e' ? dostring(L, extra, "=(command line)") : dolibrary(L, extra);
      if (status != LUA_OK) return 0;
      break;
    }
    case 'W':
      lua_warning(L, "@on", 0);
      break;
    }
  }
  return 1;
}

static void print_version(void) {
  fprintf(stdout, "%s\n", pt_host_version());
  fflush(stdout);
}

/* Minimal REPL for builds without host/repl.c: one line per chunk, no auto-printing. */
static void repl_fallback(lua_State *L) {
  char line[4096];
  bool tty = isatty(STDIN_FILENO);
  for (;;) {
    if (tty) {
      fputs("> ", stdout);
      fflush(stdout);
    }
    if (!fgets(line, sizeof line, stdin)) break;
    dostring(L, line, "=stdin");
  }
  if (tty) fputs("\n", stdout);
}

static void doREPL(lua_State *L) {
  if (pt_repl_run) pt_repl_run(L);
  else repl_fallback(L);
}

/* require "partrain" into global 'pt' and point its context at the interrupt flag */
static int load_partrain(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "partrain");
  int status = pt_host_docall(L, 1, 1);
  if (status != LUA_OK) return pt_host_report(L, status);
  lua_setglobal(L, "pt");
  lpt_get_state(L)->ctx.interrupted = pt_state_interrupt_flag();
  return LUA_OK;
}

static int pmain(lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = (char **)lua_touserdata(L, 2);
  int script = argc;
  int args = collectargs(argv, &script);
  if (args == has_error) {
    print_usage(argv[script]);
    return 0;
  }
  if (args & has_h) {
    print_usage(NULL);
    lua_pushboolean(L, 1);
    return 1;
  }
  if (args & has_v) print_version();
  create_arg_table(L, argv, argc, script);
  if (load_partrain(L) != LUA_OK) return 0;
  if (!runargs(L, argv, script)) return 0;
  if (script < argc && handle_script(L, argv + script) != LUA_OK) return 0;
  if (args & has_i) {
    doREPL(L);
  } else if (script == argc && !(args & (has_e | has_v))) {
    if (isatty(STDIN_FILENO)) doREPL(L);
    else if (dochunk(L, luaL_loadfile(L, NULL)) != LUA_OK) return 0; /* stdin as a file */
  }
  lua_pushboolean(L, 1);
  return 1;
}

int main(int argc, char **argv) {
  lua_State *L = pt_state_new();
  if (!L) {
    pt_host_message("cannot create state: not enough memory");
    return EXIT_FAILURE;
  }
  lua_pushcfunction(L, pmain);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  int status = lua_pcall(L, 2, 1, 0);
  int ok = lua_toboolean(L, -1);
  pt_host_report(L, status);
  lua_close(L);
  return (ok && status == LUA_OK) ? EXIT_SUCCESS : EXIT_FAILURE;
}
