/* The entry point plain lua5.4 finds as partrain.core (build/partrain/core.so). */
#include <lua.h>

int luaopen_partrain_core(lua_State *L);
