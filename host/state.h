/* Creating a configured lua_State: standard libraries, package paths to partrain's Lua files,
 * and partrain.core preloaded. Used by the executable and by dispatcher workers. */
#ifndef PT_STATE_H
#define PT_STATE_H

#include <lua.h>

/* A new state with partrain available through require. NULL only when out of memory. */
lua_State *pt_state_new(void);

/* The Lua directory searched first (source tree when run from the build tree). */
const char *pt_state_lua_dir(void);

#endif
