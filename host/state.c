/* See state.h. */
#include "state.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lpt.h"

int luaopen_partrain_core(lua_State *L);

#ifndef PT_SOURCE_LUA_DIR
#define PT_SOURCE_LUA_DIR ""
#endif
#ifndef PT_INSTALL_LUA_DIR
#define PT_INSTALL_LUA_DIR "/usr/local/share/lua/5.4"
#endif

/* Process-wide by nature: signals are delivered to the process. */
static volatile sig_atomic_t interrupt_flag = 0;

volatile sig_atomic_t *pt_state_interrupt_flag(void) { return &interrupt_flag; }

/* How many training loops are between steps right now (see state.h). */
static volatile sig_atomic_t soft_interrupt_depth = 0;

void pt_state_soft_interrupt(int enter) {
  soft_interrupt_depth += enter ? 1 : -1;
  if (soft_interrupt_depth < 0) soft_interrupt_depth = 0;
}

int pt_state_soft_interrupt_active(void) { return soft_interrupt_depth > 0; }

const char *pt_state_lua_dir(void) {
  const char *env = getenv("PARTRAIN_LUA_DIR");
  if (env && *env) return env;
  /* Running from the build tree: the source tree's lua/ exists. */
  if (PT_SOURCE_LUA_DIR[0] && access(PT_SOURCE_LUA_DIR "/partrain/init.lua", R_OK) == 0)
    return PT_SOURCE_LUA_DIR;
  return PT_INSTALL_LUA_DIR;
}

lua_State *pt_state_new(void) {
  lua_State *L = luaL_newstate();
  if (!L) return NULL;
  luaL_openlibs(L);
  /* Generational collection: training loops make many short-lived tensor handles, and young
   * collections reclaim them at a fraction of the incremental collector's cost (W3: ~2.4x). */
  lua_gc(L, LUA_GCGEN, 0, 0);
  /* package.path = <lua dir>/?.lua;<lua dir>/?/init.lua;<default> */
  lua_getglobal(L, "package");
  const char *dir = pt_state_lua_dir();
  lua_getfield(L, -1, "path");
  lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;%s", dir, dir, lua_tostring(L, -1));
  lua_setfield(L, -3, "path");
  lua_pop(L, 1);
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, luaopen_partrain_core);
  lua_setfield(L, -2, "partrain.core");
  lua_pop(L, 2);
  return L;
}
