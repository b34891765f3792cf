/* pt.image: PNG/JPEG files to uint8 {C,H,W} tensors and back (lib/image.c). */
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>

#include "../lib/image.h"
#include "lpt.h"

static const char *const mode_names[] = {"unchanged", "L", "RGB", "RGBA", NULL};

/* the {mode = ...} options table at idx (0 or nil: none) -> mode; default UNCHANGED, as
 * torchvision.io.read_image */
static pt_image_mode opt_mode(lua_State *L, int idx, const char *fname) {
  if (lua_isnoneornil(L, idx)) return PT_IMAGE_UNCHANGED;
  if (!lua_istable(L, idx))
    lpt_errorf(L, "%s: options must be a table, got a %s", fname, luaL_typename(L, idx));
  static const char *const keys[] = {"mode", NULL};
  lpt_check_options(L, idx, fname, keys);
  pt_image_mode mode = PT_IMAGE_UNCHANGED;
  if (lua_getfield(L, idx, "mode") != LUA_TNIL) {
    const char *s = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    int k = 0;
    while (s && mode_names[k] && strcmp(s, mode_names[k]) != 0) k++;
    if (!s || !mode_names[k])
      lpt_errorf(L, "%s: mode must be \"RGB\", \"L\", \"RGBA\" or \"unchanged\", got %s%s%s", fname,
                 s ? "'" : "a ", s ? s : luaL_typename(L, -1), s ? "'" : "");
    mode = (pt_image_mode)k; /* mode_names is in pt_image_mode's order */
  }
  lua_pop(L, 1);
  return mode;
}

/* pt.image.read(path[, {mode=}]) -> uint8 {C,H,W} */
static int l_read(lua_State *L) {
  lpt_check_max_args(L, 2, "image.read");
  const char *path = luaL_checkstring(L, 1);
  pt_image_mode mode = opt_mode(L, 2, "image.read");
  pt_tensor *t;
  pt_status st = pt_image_read(lpt_ctx(L), path, mode, &t);
  return lpt_push_result(L, st, t);
}

/* pt.image.decode(bytes[, {mode=}]) -> uint8 {C,H,W} */
static int l_decode(lua_State *L) {
  lpt_check_max_args(L, 2, "image.decode");
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  pt_image_mode mode = opt_mode(L, 2, "image.decode");
  pt_tensor *t;
  pt_status st = pt_image_decode(lpt_ctx(L), "image.decode", NULL, (const uint8_t *)s, n, mode, &t);
  return lpt_push_result(L, st, t);
}

/* pt.image.write_png(t, path) */
static int l_write_png(lua_State *L) {
  lpt_check_max_args(L, 2, "image.write_png");
  pt_tensor *t = lpt_check_tensor(L, 1);
  const char *path = luaL_checkstring(L, 2);
  if (pt_image_write_png(lpt_ctx(L), t, path)) return lpt_error(L);
  return 0;
}

/* pt.image._cifar_read({paths...}, label_bytes, {nclasses...}) -> images, labels, coarse|nil
 * (partrain.data_images's data.cifar / data.cifar100) */
static int l_cifar_read(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int label_bytes = (int)luaL_checkinteger(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  int np = (int)luaL_len(L, 1);
  const char **paths = lua_newuserdatauv(L, (size_t)(np ? np : 1) * sizeof *paths, 0);
  for (int k = 0; k < np; k++) {
    lua_rawgeti(L, 1, k + 1);
    paths[k] = luaL_checkstring(L, -1); /* the table keeps the string alive */
    lua_pop(L, 1);
  }
  int ncl[2] = {0, 0};
  for (int k = 0; k < 2 && k < label_bytes; k++) {
    lua_rawgeti(L, 3, k + 1);
    ncl[k] = (int)luaL_checkinteger(L, -1);
    lua_pop(L, 1);
  }
  pt_tensor *im, *lab, *co;
  if (pt_cifar_read(lpt_ctx(L), paths, np, label_bytes, ncl, &im, &lab, &co)) return lpt_error(L);
  lpt_push_tensor(L, im);
  lpt_push_tensor(L, lab);
  if (co) lpt_push_tensor(L, co);
  else lua_pushnil(L);
  return 3;
}

static int name_less(lua_State *L) {
  lua_pushboolean(L, strcmp(luaL_checkstring(L, 1), luaL_checkstring(L, 2)) < 0);
  return 1;
}

/* pt.image._list_dir(path) -> {names...} (sorted bytewise, without . and ..), {is_dir...}
 * (symbolic links followed, as torchvision's os.walk(followlinks=True)); nil, message on failure */
static int l_list_dir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  DIR *d = opendir(path);
  if (!d) {
    lua_pushnil(L);
    lua_pushfstring(L, "cannot open directory '%s': %s", path, strerror(errno));
    return 2;
  }
  lua_newtable(L);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    lua_pushstring(L, e->d_name); /* raising here (out of memory) would leak d: rare enough */
    lua_rawseti(L, -2, ++n);
  }
  closedir(d);
  /* bytewise order, as Python's sorted() of UTF-8 names (Lua's < follows the locale) */
  lua_getglobal(L, "table");
  lua_getfield(L, -1, "sort");
  lua_remove(L, -2);
  lua_pushvalue(L, -2);
  lua_pushcfunction(L, name_less);
  lua_call(L, 2, 0);
  lua_createtable(L, n, 0);
  luaL_Buffer b;
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, -2, i);
    const char *name = lua_tostring(L, -1);
    luaL_buffinit(L, &b);
    luaL_addstring(&b, path);
    luaL_addchar(&b, '/');
    luaL_addstring(&b, name);
    luaL_pushresult(&b);
    struct stat sb;
    lua_pushboolean(L, stat(lua_tostring(L, -1), &sb) == 0 && S_ISDIR(sb.st_mode));
    lua_rawseti(L, -4, i);
    lua_pop(L, 2);
  }
  return 2;
}

static const luaL_Reg image_functions[] = {
    {"read", l_read},
    {"decode", l_decode},
    {"write_png", l_write_png},
    {"_cifar_read", l_cifar_read},
    {"_list_dir", l_list_dir},
    {NULL, NULL},
};

static const char *const image_docs[] = {
    "read",
    "pt.image.read(path[, {mode = \"unchanged\"|\"RGB\"|\"L\"|\"RGBA\"}]) -> uint8 tensor {C,H,W}\n"
    "  Decodes a PNG or JPEG file (format from its contents), torchvision.io.read_image's layout.\n"
    "  mode: \"unchanged\" (default) keeps the file's channels (PNG 1 gray, 2 gray+alpha, 3 RGB,\n"
    "  4 RGBA; JPEG 1 or 3), \"L\" gray, \"RGB\", \"RGBA\" (alpha 255 where the file has none).\n"
    "  PNG palettes become RGB, tRNS transparency an alpha channel, 16-bit samples their high\n"
    "  byte (v >> 8, as PIL's RGB modes and torchvision's to_dtype(uint8, scale=True) of its\n"
    "  uint16 result). No gamma correction, no EXIF rotation. Gray from color: torchvision's\n"
    "  weights (0.2989 R + 0.587 G + 0.114 B; libjpeg's Y for JPEG). CMYK JPEGs are refused.\n"
    "  Corrupt or truncated files and images above 2^28 pixels are errors naming the file.",
    "decode",
    "pt.image.decode(bytes[, {mode=}]) -> uint8 tensor {C,H,W}: pt.image.read for PNG or JPEG\n"
    "  data held in a Lua string (e.g. io.open(path, \"rb\"):read(\"a\")).",
    "write_png",
    "pt.image.write_png(t, path): writes a uint8 tensor {C,H,W} (C = 1 gray, 2 gray+alpha,\n"
    "  3 RGB, 4 RGBA; any strides) as an 8-bit PNG. A failed write leaves no partial file.\n"
    "  Float images: (t * 255):round():clamp(0, 255):to(\"uint8\") first.",
    NULL, NULL,
};

void lpt_open_image(lua_State *L) {
  /* pt.image: its own table; its docs go to pt._docs keyed by the function value */
  lua_getfield(L, LUA_REGISTRYINDEX, LPT_MODULE);
  luaL_newlib(L, image_functions);
  lua_getfield(L, -2, "_docs");
  for (const char *const *d = image_docs; d[0]; d += 2) {
    lua_getfield(L, -2, d[0]);
    lua_pushstring(L, d[1]);
    lua_rawset(L, -3);
  }
  lua_pop(L, 1);
  lua_setfield(L, -2, "image");
  lua_pop(L, 1);
}
