/* The REPL: lua.c's read-eval-print loop with partrain's additions.
 *
 * - Input: GNU readline on a terminal (line editing, persistent history in
 *   $PARTRAIN_HISTORY or ~/.partrain_history, tab completion); plain lines without prompts
 *   when stdin is not a terminal, so `printf 'x = 1\nx + 1\n' | partrain -i` prints 2.
 * - A line is first tried as "return <line>" (auto-printing expressions, as lua.c 5.4); `=expr`
 *   also works. Otherwise it is a statement, continued with ">> " lines while the parser
 *   reports an error at <eof>.
 * - Results print through partrain.pretty (tables readably, tensors through __tostring).
 * - The global `help` is partrain.help (help(x) prints the doc of a function or type).
 * - Ctrl-C at the prompt drops the line being typed (and any pending continuation lines);
 *   Ctrl-C while a chunk runs raises "interrupted" in it (host/main.c) and the REPL goes on;
 *   Ctrl-D on an empty line leaves.
 *
 * Completion (readline only): the word before the cursor is split at its last '.' or ':'.
 * Without one, globals and keywords complete. Otherwise the part before is evaluated as a path
 * of names from the globals (so `pt.nn.Li<TAB>` loads pt.nn), and its fields complete: the
 * value's own keys, then along its metatable's __index chain; an __index function contributes
 * the tables it holds as upvalues (except _ENV): the tensor methods table for tensors, the
 * lazily loaded submodules for pt. A metatable's __fields, a list of names, adds the fields an
 * __index function computes (partrain.help lists the tensor properties there: grad,
 * requires_grad, is_leaf, grad_fn, shape). After ':' only functions complete. */
#include <errno.h>
#include <lauxlib.h>
#include <lualib.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#ifdef PT_HAVE_READLINE
#include <readline/history.h>
#include <readline/readline.h>
#endif

/* Defined in host/main.c. */
int pt_host_docall(lua_State *L, int narg, int nres);
int pt_host_report(lua_State *L, int status);
void pt_host_message(const char *msg);
const char *pt_host_version(void);
int pt_repl_run(lua_State *L);

#define PROMPT1 "> "
#define PROMPT2 ">> "
#define EOFMARK "<eof>"
#define HISTORY_MAX 1000
#define PRINTER_KEY "partrain.repl.print"

enum { LINE_EOF = 0, LINE_OK = 1, LINE_CANCEL = 2 };

static bool use_readline = false;

/* ------------------------------------------------------------------ history */

#ifdef PT_HAVE_READLINE
static char history_path[4096];

static void history_open(void) {
  const char *env = getenv("PARTRAIN_HISTORY");
  const char *home = getenv("HOME");
  if (env && *env) snprintf(history_path, sizeof history_path, "%s", env);
  else if (home && *home) snprintf(history_path, sizeof history_path, "%s/.partrain_history", home);
  else history_path[0] = '\0';
  using_history();
  if (history_path[0]) {
    read_history(history_path); /* a missing or unreadable file is an empty history */
    history_truncate_file(history_path, HISTORY_MAX);
  }
}

/* Add a complete chunk; failures to write the file are ignored (read-only home). */
static void history_save(const char *line) {
  if (!use_readline || !line[0]) return;
  HIST_ENTRY *prev = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
  if (prev && strcmp(prev->line, line) == 0) return; /* ignore immediate duplicates */
  add_history(line);
  if (!history_path[0]) return;
  if (append_history(1, history_path) != 0) { /* no file yet: create it */
    FILE *f = fopen(history_path, "a");
    if (f) {
      fclose(f);
      append_history(1, history_path);
    }
  }
}
#else
static void history_save(const char *line) { (void)line; }
#endif

/* ------------------------------------------------------------------ completion */

#ifdef PT_HAVE_READLINE
static lua_State *repl_L = NULL;
static char **cands = NULL;
static int ncands = 0, cand_next = 0;

static const char *const keywords[] = {
    "and",   "break", "do",   "else", "elseif", "end",   "false", "for",   "function", "goto", "if",
    "in",    "local", "nil",  "not",  "or",     "repeat", "return", "then", "true",     "until",
    "while", NULL,
};

static bool is_keyword(const char *s) {
  for (int i = 0; keywords[i]; i++)
    if (strcmp(s, keywords[i]) == 0) return true;
  return false;
}

static bool is_identifier(const char *s, size_t n) {
  if (n == 0 || (s[0] >= '0' && s[0] <= '9')) return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
      return false;
  }
  return true;
}

/* Stack for the helpers below: 1 = the text (kept alive: __index may collect garbage),
 * 2 = prefix ("pt.nn."), 3 = partial ("Li"), 4 = result set. */
static void add_candidate(lua_State *L, const char *key, size_t len) {
  size_t plen;
  const char *partial = lua_tolstring(L, 3, &plen);
  if (len < plen || memcmp(key, partial, plen) != 0) return;
  if (!is_identifier(key, len) || is_keyword(key)) return;
  lua_pushvalue(L, 2);
  lua_pushlstring(L, key, len);
  lua_concat(L, 2);
  lua_pushboolean(L, 1);
  lua_rawset(L, 4);
}

/* Add the string keys of the table at idx (only function values when methods_only). */
static void add_keys(lua_State *L, int idx, bool methods_only) {
  idx = lua_absindex(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    if (lua_type(L, -2) == LUA_TSTRING && (!methods_only || lua_type(L, -1) == LUA_TFUNCTION)) {
      size_t len;
      const char *k = lua_tolstring(L, -2, &len);
      add_candidate(L, k, len);
    }
    lua_pop(L, 1);
  }
}

/* The names listed in the metatable (at the top of the stack)'s __fields: fields its __index
 * function provides. They are not methods. */
static void add_listed_fields(lua_State *L) {
  if (lua_getfield(L, -1, "__fields") == LUA_TTABLE) {
    lua_Integer n = luaL_len(L, -1);
    for (lua_Integer i = 1; i <= n; i++) {
      if (lua_rawgeti(L, -1, i) == LUA_TSTRING) {
        size_t len;
        const char *k = lua_tolstring(L, -1, &len);
        add_candidate(L, k, len);
      }
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
}

/* Fields of the value at idx: its own keys and its metatable's __index chain. */
static void add_fields(lua_State *L, int idx, bool methods_only, int depth) {
  idx = lua_absindex(L, idx);
  if (depth > 8) return;
  if (lua_type(L, idx) == LUA_TTABLE) add_keys(L, idx, methods_only);
  if (!lua_getmetatable(L, idx)) return;
  if (!methods_only) add_listed_fields(L);
  int t = lua_getfield(L, -1, "__index");
  if (t == LUA_TTABLE) {
    add_fields(L, -1, methods_only, depth + 1);
  } else if (t == LUA_TFUNCTION) {
    for (int i = 1;; i++) {
      const char *name = lua_getupvalue(L, -1, i);
      if (!name) break;
      if (lua_type(L, -1) == LUA_TTABLE && strcmp(name, "_ENV") != 0) add_keys(L, -1, false);
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 2);
}

/* candidates(text) -> set of completions (runs protected: __index may raise) */
static int l_candidates(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  const char *sep = NULL;
  for (const char *p = text; *p; p++)
    if (*p == '.' || *p == ':') sep = p;
  lua_settop(L, 1);
  lua_pushlstring(L, text, sep ? (size_t)(sep - text + 1) : 0); /* 2: prefix */
  lua_pushstring(L, sep ? sep + 1 : text);                     /* 3: partial */
  lua_newtable(L);                                              /* 4: result */
  if (!sep) {
    lua_pushglobaltable(L);
    add_fields(L, -1, false, 0);
    lua_pop(L, 1);
    size_t plen;
    const char *partial = lua_tolstring(L, 3, &plen);
    for (int i = 0; keywords[i]; i++)
      if (strncmp(keywords[i], partial, plen) == 0) {
        lua_pushstring(L, keywords[i]);
        lua_pushboolean(L, 1);
        lua_rawset(L, 4);
      }
    lua_settop(L, 4);
    return 1;
  }
  /* walk the path before sep: names separated by '.' */
  lua_pushglobaltable(L);
  const char *p = text;
  while (p < sep) {
    const char *q = p;
    while (q < sep && *q != '.' && *q != ':') q++;
    if ((q < sep && *q == ':') || !is_identifier(p, (size_t)(q - p))) break; /* no completions */
    int tt = lua_type(L, -1);
    if (tt != LUA_TTABLE && !lua_getmetatable(L, -1)) break; /* not indexable */
    if (tt != LUA_TTABLE) lua_pop(L, 1);
    lua_pushlstring(L, p, (size_t)(q - p));
    lua_gettable(L, -2);
    lua_remove(L, -2);
    p = q + 1;
  }
  if (p > sep) add_fields(L, -1, *sep == ':', 0); /* the whole path was walked */
  lua_settop(L, 4);
  return 1;
}

static void free_candidates(void) {
  for (int i = 0; i < ncands; i++) free(cands[i]);
  free(cands);
  cands = NULL;
  ncands = cand_next = 0;
}

static char *candidate_generator(const char *text, int state) {
  (void)text;
  if (state == 0) cand_next = 0;
  if (cand_next >= ncands) return NULL;
  return strdup(cands[cand_next++]);
}

static char **complete(const char *text, int start, int end) {
  (void)start;
  (void)end;
  lua_State *L = repl_L;
  rl_attempted_completion_over = 1; /* never fall back to file names */
  rl_completion_append_character = '\0';
  free_candidates();
  int top = lua_gettop(L);
  lua_pushcfunction(L, l_candidates);
  lua_pushstring(L, text);
  if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_istable(L, -1)) {
    lua_Integer n = 0;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      n++;
      lua_pop(L, 1);
    }
    cands = calloc((size_t)n + 1, sizeof *cands);
    if (cands) {
      lua_pushnil(L);
      while (lua_next(L, -2)) {
        char *s = strdup(lua_tostring(L, -2));
        if (s) cands[ncands++] = s;
        lua_pop(L, 1);
      }
    }
  }
  lua_settop(L, top);
  if (ncands == 0) return NULL;
  return rl_completion_matches(text, candidate_generator);
}
#endif

/* ------------------------------------------------------------------ reading lines */

#ifdef PT_HAVE_READLINE
static char *rl_result = NULL;
static bool rl_finished = false;
static volatile sig_atomic_t prompt_sigint = 0;

static void on_line(char *line) {
  rl_result = line;
  rl_finished = true;
  rl_callback_handler_remove(); /* no new prompt until asked */
}

static void on_prompt_sigint(int sig) {
  (void)sig;
  prompt_sigint = 1;
}

/* readline's callback interface, so that Ctrl-C at the prompt interrupts select() and the line
 * can be dropped cleanly (readline() itself would keep reading after a signal). */
static int read_tty(const char *prompt, char **out) {
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_prompt_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old);
  prompt_sigint = 0;
  rl_finished = false;
  rl_result = NULL;
  rl_callback_handler_install(prompt, on_line);
  int result = LINE_OK;
  int fd = fileno(rl_instream);
  while (!rl_finished) {
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(fd, &fds);
    int r = select(fd + 1, &fds, NULL, NULL, NULL);
    if (prompt_sigint) {
      prompt_sigint = 0;
      /* newline first: leaving readline's terminal mode writes a "\r" (bracketed paste) */
      fputs("^C\n", rl_outstream);
      fflush(rl_outstream);
      rl_free_line_state();
      rl_callback_sigcleanup();
      rl_callback_handler_remove();
      result = LINE_CANCEL;
      break;
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      rl_callback_handler_remove();
      result = LINE_EOF;
      break;
    }
    if (FD_ISSET(fd, &fds)) rl_callback_read_char();
  }
  sigaction(SIGINT, &old, NULL);
  if (result == LINE_OK) {
    if (!rl_result) return LINE_EOF;
    *out = rl_result;
  }
  return result;
}
#endif

/* A line without its newline, malloc'd. No prompt when stdin is not a terminal. */
static int read_plain(const char *prompt, char **out) {
  if (isatty(STDIN_FILENO)) {
    fputs(prompt, stdout);
    fflush(stdout);
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t n = getline(&line, &cap, stdin);
  if (n < 0) {
    free(line);
    return LINE_EOF;
  }
  if (n > 0 && line[n - 1] == '\n') line[--n] = '\0';
  if (n > 0 && line[n - 1] == '\r') line[--n] = '\0';
  *out = line;
  return LINE_OK;
}

/* _PROMPT / _PROMPT2 as in lua.c, copied (completion may run Lua code while it is shown); read
 * raw, so a strict-globals __index (an error on undefined names) cannot end the session */
static const char *get_prompt(lua_State *L, bool first) {
  static char buf[256];
  lua_pushglobaltable(L);
  lua_pushstring(L, first ? "_PROMPT" : "_PROMPT2");
  lua_rawget(L, -2);
  lua_remove(L, -2);
  const char *p = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  snprintf(buf, sizeof buf, "%s", p ? p : (first ? PROMPT1 : PROMPT2));
  lua_pop(L, 1);
  return buf;
}

/* Push the next line. LINE_EOF pushes nothing, LINE_CANCEL neither. */
static int pushline(lua_State *L, bool first) {
  char *line = NULL;
  const char *prompt = get_prompt(L, first);
  int r;
#ifdef PT_HAVE_READLINE
  if (use_readline) r = read_tty(prompt, &line);
  else
#endif
    r = read_plain(prompt, &line);
  if (r != LINE_OK) return r;
  if (first && line[0] == '=') lua_pushfstring(L, "return %s", line + 1); /* 5.1-style =expr */
  else lua_pushstring(L, line);
  free(line);
  return LINE_OK;
}

/* ------------------------------------------------------------------ evaluation */

static bool incomplete(lua_State *L, int status) {
  if (status == LUA_ERRSYNTAX) {
    size_t lmsg;
    const char *msg = lua_tolstring(L, -1, &lmsg);
    size_t lmark = sizeof(EOFMARK) - 1;
    if (lmsg >= lmark && strcmp(msg + lmsg - lmark, EOFMARK) == 0) {
      lua_pop(L, 1);
      return true;
    }
  }
  return false;
}

/* Try "return <line>;" so expressions print their values. */
static int addreturn(lua_State *L) {
  const char *line = lua_tostring(L, -1);
  const char *retline = lua_pushfstring(L, "return %s;", line);
  int status = luaL_loadbuffer(L, retline, strlen(retline), "=stdin");
  if (status == LUA_OK) {
    lua_remove(L, -2);
    history_save(line);
  } else {
    lua_pop(L, 2);
  }
  return status;
}

/* Statement, maybe with continuation lines. Returns -2 when Ctrl-C dropped the chunk. */
static int multiline(lua_State *L) {
  for (;;) {
    size_t len;
    const char *line = lua_tolstring(L, 1, &len);
    int status = luaL_loadbuffer(L, line, len, "=stdin");
    if (!incomplete(L, status)) {
      history_save(line);
      return status;
    }
    int r = pushline(L, false);
    if (r == LINE_CANCEL) return -2;
    if (r == LINE_EOF) {
      history_save(line);
      /* report the incomplete chunk's error as lua.c does */
      return luaL_loadbuffer(L, line, len, "=stdin");
    }
    lua_pushliteral(L, "\n");
    lua_insert(L, -2);
    lua_concat(L, 3);
  }
}

/* Returns -1 at end of input, -2 for a dropped line, else a load status with the chunk (or the
 * error message) on the stack. */
static int loadline(lua_State *L) {
  lua_settop(L, 0);
  int r = pushline(L, true);
  if (r == LINE_EOF) return -1;
  if (r == LINE_CANCEL) return -2;
  int status = addreturn(L);
  if (status != LUA_OK) status = multiline(L);
  if (status == -2) {
    lua_settop(L, 0);
    return -2;
  }
  lua_remove(L, 1);
  return status;
}

/* Print the results on the stack with the pretty printer. */
static void print_results(lua_State *L) {
  int n = lua_gettop(L);
  if (n == 0) return;
  luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
  lua_getfield(L, LUA_REGISTRYINDEX, PRINTER_KEY);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_getglobal(L, "print");
  }
  lua_insert(L, 1);
  int status = pt_host_docall(L, n, 0);
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    lua_pushfstring(L, "error printing the result (%s)", msg ? msg : "?");
    pt_host_message(lua_tostring(L, -1));
    lua_pop(L, 2);
  }
}

/* require name; returns 1 with the module on the stack, 0 after reporting the error */
static int require_module(lua_State *L, const char *name) {
  lua_getglobal(L, "require");
  lua_pushstring(L, name);
  if (pt_host_report(L, pt_host_docall(L, 1, 1)) != LUA_OK) return 0;
  return 1;
}

static void setup(lua_State *L) {
  if (require_module(L, "partrain.pretty")) {
    lua_getfield(L, -1, "print");
    lua_setfield(L, LUA_REGISTRYINDEX, PRINTER_KEY);
    lua_pop(L, 1);
  }
  if (lua_getglobal(L, "help") == LUA_TNIL && require_module(L, "partrain.help"))
    lua_setglobal(L, "help");
  lua_pop(L, 1);
}

int pt_repl_run(lua_State *L) {
  bool tty = isatty(STDIN_FILENO);
#ifdef PT_HAVE_READLINE
  use_readline = tty;
  if (use_readline) {
    repl_L = L;
    rl_readline_name = "partrain";
    rl_catch_signals = 0; /* SIGINT at the prompt is ours (read_tty), not readline's */
    rl_attempted_completion_function = complete;
    rl_basic_word_break_characters = " \t\n\"\\'`@$><=;|&{(,+-*/%^~#[]";
    rl_completer_word_break_characters = rl_basic_word_break_characters;
    history_open();
  }
#endif
  if (tty) {
    printf("%s  help(x) for docs, Ctrl-D to quit\n", pt_host_version());
    fflush(stdout);
  }
  setup(L);
  int status;
  lua_settop(L, 0);
  while ((status = loadline(L)) != -1) {
    if (status == -2) continue;
    if (status == LUA_OK) status = pt_host_docall(L, 0, LUA_MULTRET);
    if (status == LUA_OK) print_results(L);
    else pt_host_report(L, status);
    lua_settop(L, 0);
  }
  lua_settop(L, 0);
  if (tty) {
    fputs("\n", stdout);
    fflush(stdout);
  }
#ifdef PT_HAVE_READLINE
  free_candidates();
#endif
  return 0;
}
