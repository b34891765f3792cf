/* Creating a configured lua_State: standard libraries, package paths to partrain's Lua files,
 * and partrain.core preloaded. Used by the executable and by dispatcher workers. */
#ifndef PT_STATE_H
#define PT_STATE_H

#include <lua.h>
#include <signal.h>

/* A new state with partrain available through require. NULL only when out of memory. */
lua_State *pt_state_new(void);

/* The Lua directory searched first (source tree when run from the build tree). */
const char *pt_state_lua_dir(void);

/* The process's interrupt flag. The executable's SIGINT handler sets it to 1 (Ctrl-C) and clears
 * it before each top-level chunk and REPL line. partrain's ctx->interrupted points at it in the
 * executable's state, so a long loop in lib/ can poll `ctx->interrupted && *ctx->interrupted`
 * and stop with pt_fail(ctx, PT_EINTR, "interrupted"). Dispatcher workers are stopped another
 * way (host/l_par.c: a hook polling an atomic flag), which stays clean under TSan. Never
 * written by lib/. */
volatile sig_atomic_t *pt_state_interrupt_flag(void);

/* Graceful interrupts: while a training loop (data.DataHandler:batches) runs, it enters soft mode;
 * the first Ctrl-C then only sets the flag and the loop raises "interrupted" between steps, so
 * the current step completes. A second Ctrl-C interrupts at once. */
void pt_state_soft_interrupt(int enter);
int pt_state_soft_interrupt_active(void);

#endif
