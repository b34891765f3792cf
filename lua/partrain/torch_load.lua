-- partrain.torch_load: pt.load_torch(path[, opts]) reads what torch.save(obj, path) writes (the zip
-- format of torch >= 1.6) without running any code.
--
-- The file: a zip archive whose entries are stored (not compressed): <name>/data.pkl (a pickle),
-- <name>/data/<key> (the raw little-endian bytes of one storage), <name>/version, <name>/byteorder.
-- The pickle is read by a restricted unpickler: the opcodes of protocols 2 to 5 that containers,
-- numbers and strings use, and GLOBAL / STACK_GLOBAL only for an allow-list (ALLOWED below:
-- collections.OrderedDict, torch._utils._rebuild_tensor_v2 / _rebuild_parameter, the torch.*Storage
-- types, torch.Size, set / frozenset, _codecs.encode for bytes). Any other global is refused before
-- anything is built, so a hostile pickle cannot call os.system & co.
--
-- What comes back (see the help text at the end):
--   dict / OrderedDict -> table (keys as they are: strings, integers, floats, booleans)
--   list / tuple / torch.Size -> list (1-based); set / frozenset -> table value -> true
--   int -> integer (beyond 64 bits: an error), float -> float, str / bytes -> string, bool -> boolean
--   None -> opts.none (default nil: a None inside a list leaves a hole)
--   tensor -> Tensor: float32/float64/int64/int32/uint8/bool as they are, float16/bfloat16 as float32
--   (exactly), int8/int16 as int32; tensors on one storage are views of one partrain storage;
--   requires_grad and nn.Parameter's requires_grad are kept.
-- A dict's attributes (a state_dict's _metadata, set by the pickle's BUILD) are dropped. The second
-- result maps each dict table to its keys in the file's order.
local pt = require "partrain"

local M = {}

local SELF = debug.getinfo(1, "S").short_src

-- one error message, without a position (the public function raises it at its caller's line)
local function raise(msg) error(msg, 0) end

-- tagged objects that exist only while the pickle is read
local GLOBAL_MT = {__name = "torch_load.global"}
local STORAGE_MT = {__name = "torch_load.storage"}
local NONE = setmetatable({}, {__name = "torch_load.None"})

-- storage type -> {partrain dtype, bytes per element, how the bytes become values}
local STORAGES = {
  FloatStorage = {"float32", 4, "raw"},
  DoubleStorage = {"float64", 8, "raw"},
  LongStorage = {"int64", 8, "raw"},
  IntStorage = {"int32", 4, "raw"},
  ByteStorage = {"uint8", 1, "raw"},
  BoolStorage = {"bool", 1, "bool"},
  ShortStorage = {"int32", 2, "<i2"},
  CharStorage = {"int32", 1, "<i1"},
  HalfStorage = {"float32", 2, "half"},
  BFloat16Storage = {"float32", 2, "bfloat16"},
}

-- module -> name -> what it is
local ALLOWED = {
  ["collections"] = {OrderedDict = "dict"},
  ["torch._utils"] = {_rebuild_tensor_v2 = "rebuild_tensor", _rebuild_parameter = "rebuild_parameter",
                      _rebuild_parameter_with_state = "rebuild_parameter"},
  ["torch"] = {Size = "size"},
  ["builtins"] = {set = "set", frozenset = "set"},
  ["__builtin__"] = {set = "set", frozenset = "set"},
  ["_codecs"] = {encode = "encode"},
}
for name in pairs(STORAGES) do ALLOWED.torch[name] = "storage_type" end

-- memcpy from this process (pt.ffi) copies a storage's bytes into a tensor at once; without it
-- (no libffi, or M._fast_copy = false as the spec sets) the bytes are decoded with string.unpack
local memcpy = false
local function get_memcpy()
  if M._fast_copy == false then return nil end
  if memcpy == false then
    local ok, f = pcall(function()
      return pt.ffi.load():fn("memcpy", "void(void*, const char*, size_t)")
    end)
    memcpy = ok and f or nil
  end
  return memcpy
end

local CHUNK = 4096

-- values of n elements in s from pos (1-based) by the string.unpack format fmt (one element)
local function unpack_list(s, pos, fmt, n, size, convert)
  local out = {}
  local i = 0
  while i < n do
    local m = math.min(CHUNK, n - i)
    local vals = table.pack(string.unpack("<" .. fmt:rep(m), s, pos + i * size))
    for j = 1, m do
      local v = vals[j]
      out[i + j] = convert and convert(v) or v
    end
    i = i + m
  end
  return out
end

local function half_to_number(h)
  local sign = (h & 0x8000) ~= 0 and -1 or 1
  local e, f = (h >> 10) & 0x1f, h & 0x3ff
  if e == 0 then return sign * f * 2.0 ^ -24 end
  if e == 31 then return f == 0 and sign * math.huge or 0 / 0 end
  return sign * (1 + f / 1024) * 2.0 ^ (e - 15)
end

local function bfloat16_to_number(h)
  return (string.unpack("<f", string.pack("<I4", h << 16)))
end

-- the 1-D tensor of n elements of a storage whose bytes are s
local function storage_tensor(s, info, n)
  local dtype, size, how = info[1], info[2], info[3]
  if how == "bool" and s:find("[^\0\1]") then raise("holds a bool that is neither 0 nor 1") end
  if how == "raw" or how == "bool" then
    local cp = n > 0 and get_memcpy()
    if cp or n == 0 then
      local t = pt.empty({n}, {dtype = dtype})
      if n > 0 then cp(t, s:sub(1, n * size), n * size) end
      return t
    end
    local fmt = ({float32 = "f", float64 = "d", int64 = "i8", int32 = "i4", uint8 = "B", bool = "B"})[dtype]
    local vals = unpack_list(s, 1, fmt, n, size, how == "bool" and function(v) return v == 1 end or nil)
    return pt.tensor(vals, {dtype = dtype})
  end
  local vals
  if how == "half" then
    vals = unpack_list(s, 1, "I2", n, size, half_to_number)
  elseif how == "bfloat16" then
    vals = unpack_list(s, 1, "I2", n, size, bfloat16_to_number)
  else
    vals = unpack_list(s, 1, how:sub(2), n, size)
  end
  if n == 0 then return pt.empty({0}, {dtype = dtype}) end
  return pt.tensor(vals, {dtype = dtype})
end

-- ---------------------------------------------------------------------------------------------
-- the zip archive: name -> {offset of the data (1-based), size}

local function read_zip(data, where)
  local function bad(fmt, ...) raise(where .. "not a valid zip archive: " .. fmt:format(...)) end
  local len = #data
  if len >= 2 and data:byte(1) == 0x80 and data:byte(2) == 0x02 then
    raise(where .. "the legacy torch.save format (torch < 1.6, or _use_new_zipfile_serialization=False) "
      .. "is not supported; save it again with a newer torch")
  end
  -- the end of central directory record: 22 bytes and a comment of up to 65535
  local eocd
  for p = len - 21, math.max(1, len - 21 - 65535), -1 do
    if data:byte(p) == 0x50 and data:sub(p, p + 3) == "PK\5\6" then
      eocd = p
      break
    end
  end
  if not eocd then
    if data:sub(1, 4) == "PK\3\4" then bad("no end of central directory record (a truncated file?)") end
    bad("no end of central directory record")
  end
  local _, _, _, count, cd_size, cd_offset = string.unpack("<I2I2I2I2I4I4", data, eocd + 4)
  if count == 0xffff or cd_offset == 0xffffffff or cd_size == 0xffffffff then
    -- zip64: the locator just before the record gives the zip64 end of central directory
    local loc = eocd - 20
    if loc < 1 or data:sub(loc, loc + 3) ~= "PK\6\7" then bad("no zip64 end of central directory locator") end
    local z64 = string.unpack("<I8", data, loc + 8)
    if z64 < 0 or z64 + 56 > len or data:sub(z64 + 1, z64 + 4) ~= "PK\6\6" then
      bad("bad zip64 end of central directory offset %d", z64)
    end
    count, cd_size, cd_offset = string.unpack("<I8I8I8", data, z64 + 1 + 32)
  end
  if cd_offset < 0 or cd_size < 0 or cd_offset + cd_size > len then
    bad("central directory at %d (%d bytes) lies outside the file of %d bytes", cd_offset, cd_size, len)
  end
  local entries = {}
  local p, stop = cd_offset + 1, cd_offset + cd_size
  for i = 1, count do
    if p + 45 > stop or data:sub(p, p + 3) ~= "PK\1\2" then bad("central directory entry %d is malformed", i) end
    local flags, method, _, _, _, csize, usize, nlen, xlen, clen, _, _, _, off =
      string.unpack("<I2I2I2I2I4I4I4I2I2I2I2I2I4I4", data, p + 8)
    if p + 45 + nlen + xlen + clen > stop then bad("central directory entry %d runs past its end", i) end
    local name = data:sub(p + 46, p + 45 + nlen)
    -- zip64 extra field: the 0xffffffff fields, in the order usize, csize, offset
    local x, xend = p + 46 + nlen, p + 45 + nlen + xlen
    while x + 3 <= xend do
      local id, sz = string.unpack("<I2I2", data, x)
      if x + 3 + sz > xend then bad("entry '%s' has an extra field that runs past its end", name) end
      if id == 1 then
        local q = x + 4
        local function take()
          if q + 7 > x + 3 + sz then bad("entry '%s' has a short zip64 extra field", name) end
          local v = string.unpack("<I8", data, q)
          q = q + 8
          return v
        end
        if usize == 0xffffffff then usize = take() end
        if csize == 0xffffffff then csize = take() end
        if off == 0xffffffff then off = take() end
      end
      x = x + 4 + sz
    end
    if method ~= 0 then
      raise(("%sentry '%s' is compressed (method %d); only stored entries are read"):format(where, name, method))
    end
    if flags & 1 ~= 0 then raise(("%sentry '%s' is encrypted"):format(where, name)) end
    if off < 0 or off + 30 > len or data:sub(off + 1, off + 4) ~= "PK\3\4" then
      bad("entry '%s' has a bad local header offset %d", name, off)
    end
    local lnlen, lxlen = string.unpack("<I2I2", data, off + 27)
    local start = off + 30 + lnlen + lxlen
    if usize ~= csize or usize < 0 or start + usize > len then
      bad("entry '%s' (%d bytes at %d) lies outside the file of %d bytes", name, usize, start, len)
    end
    entries[name] = {start + 1, usize}
    p = p + 46 + nlen + xlen + clen
  end
  return entries
end

-- ---------------------------------------------------------------------------------------------
-- the unpickler

local function load(path, opts)
  if type(path) ~= "string" then raise("load_torch: path must be a string") end
  opts = opts or {}
  if type(opts) ~= "table" then raise("load_torch: options must be a table") end
  for k in pairs(opts) do
    if k ~= "map" and k ~= "none" then
      raise(("load_torch: unknown option '%s' (options: map, none)"):format(tostring(k)))
    end
  end
  local map = opts.map
  if map ~= nil and type(map) ~= "string" and type(map) ~= "function" then
    raise("load_torch: map must be a device name (\"cpu\") or a function(tensor, location) -> tensor")
  end
  local none = opts.none
  local where = "load_torch: " .. path .. ": "
  local f, e = io.open(path, "rb")
  if not f then raise(where .. tostring(e):gsub("^" .. path:gsub("%p", "%%%0") .. ": ", "")) end
  local data = f:read("a")
  f:close()
  if not data then raise(where .. "cannot be read (a directory?)") end
  local entries = read_zip(data, where)
  local pkl_name
  for name in pairs(entries) do
    if name:match("^[^/]*/data%.pkl$") and (not pkl_name or name < pkl_name) then pkl_name = name end
  end
  if not pkl_name then raise(where .. "no <name>/data.pkl entry (not a torch.save file?)") end
  local prefix = pkl_name:sub(1, -#"data.pkl" - 1)
  local function entry(name)
    local e = entries[name]
    return e and data:sub(e[1], e[1] + e[2] - 1)
  end
  local byteorder = entry(prefix .. "byteorder")
  if byteorder and byteorder ~= "little" then
    raise(where .. ("byte order '%s' is not supported (only little-endian files are read)"):format(byteorder))
  end
  local pkl = entry(pkl_name)
  local raw = {} -- storage key -> its entry
  for name, e in pairs(entries) do
    if name:sub(1, #prefix + 5) == prefix .. "data/" then raw[name:sub(#prefix + 6)] = e end
  end

  local kind = {}   -- container -> "dict" | "list" | "tuple" | "set"
  local orders = setmetatable({}, {__mode = "k"}) -- dict -> its keys in order
  local tuple_n = {} -- tuple -> its length (None may leave holes)
  local storages = {} -- key -> storage object
  local location = setmetatable({}, {__mode = "k"}) -- a storage's tensor -> its location ("cpu", "cuda:0")

  local pos = 1
  local op_at = 1
  local function perr(fmt, ...)
    raise(where .. ("%s byte %d: "):format(pkl_name, op_at - 1) .. fmt:format(...))
  end
  local function need(n)
    if pos + n - 1 > #pkl then perr("truncated pickle (needs %d more bytes)", pos + n - 1 - #pkl) end
  end
  local function read(fmt, n)
    need(n)
    local v, nxt = string.unpack(fmt, pkl, pos)
    pos = nxt
    return v
  end
  local function bytes(n)
    if n < 0 then perr("negative length %d", n) end
    need(n)
    local s = pkl:sub(pos, pos + n - 1)
    pos = pos + n
    return s
  end
  local function line()
    local e = pkl:find("\n", pos, true)
    if not e then perr("truncated pickle (a GLOBAL without its newline)") end
    local s = pkl:sub(pos, e - 1)
    pos = e + 1
    return s
  end

  local stack, top = {}, 0
  local marks = {}
  local memo = {}
  local function push(v) top = top + 1; stack[top] = v end
  local function pop()
    if top <= (marks[#marks] or 0) then perr("stack underflow") end
    local v = stack[top]
    stack[top] = nil
    top = top - 1
    return v
  end
  local function peek()
    if top <= (marks[#marks] or 0) then perr("stack underflow") end
    return stack[top]
  end
  -- the items above the last MARK, removed with it
  local function pop_mark()
    local m = table.remove(marks)
    if not m then perr("no MARK on the stack") end
    local items = {}
    for i = m + 1, top do items[i - m] = stack[i]; stack[i] = nil end
    local n = top - m
    top = m
    return items, n
  end

  local function global_name(g) return g.module .. "." .. g.name end

  local function storage_of(s)
    if s.tensor then return s.tensor end
    local e = raw[s.key]
    if not e then perr("storage '%s' has no entry %sdata/%s", s.key, prefix, s.key) end
    local size = s.info[2]
    if s.n > e[2] // size then
      local need_bytes = s.n <= math.maxinteger // size and ("%d"):format(s.n * size) or "more"
      perr("storage '%s' holds %d bytes, its %d elements of %s need %s", s.key, e[2], s.n, s.type, need_bytes)
    end
    local need_bytes = s.n * size
    local ok, t = pcall(storage_tensor, data:sub(e[1], e[1] + need_bytes - 1), s.info, s.n)
    if not ok then perr("storage '%s' %s", s.key, tostring(t)) end
    s.tensor = t
    location[t] = s.location
    return t
  end

  -- a value as it goes into a container
  -- (a tuple keeps globals: the storage type in a persistent id, the callable of a REDUCE's args)
  local function value(v, keep_global)
    if v == NONE then return none end
    local mt = getmetatable(v)
    if mt == STORAGE_MT then return storage_of(v) end
    if mt == GLOBAL_MT and not keep_global then perr("the global %s can only be called, not stored", global_name(v)) end
    return v
  end

  local function new(k, t) t = t or {}; kind[t] = k; return t end
  local function tuple(items, n)
    local t = new("tuple")
    for i = 1, n do t[i] = value(items[i], true) end
    tuple_n[t] = n
    return t
  end

  local function setitem(d, k, v)
    if kind[d] ~= "dict" then perr("SETITEM on a %s, not a dict", kind[d] or type(d)) end
    if k == NONE then perr("None as a dict key is not supported") end
    k = value(k)
    if k ~= k then perr("NaN as a dict key is not supported") end
    if d[k] == nil then local o = orders[d]; o[#o + 1] = k end
    d[k] = value(v)
  end
  local function dict() local d = new("dict"); orders[d] = {}; return d end
  local function append(l, v)
    if kind[l] ~= "list" then perr("APPEND to a %s, not a list", kind[l] or type(l)) end
    local n = (tuple_n[l] or 0) + 1
    tuple_n[l] = n
    l[n] = value(v)
  end
  local function args_of(t, what, lo, hi)
    if kind[t] ~= "tuple" then perr("%s: the arguments are not a tuple", what) end
    local n = tuple_n[t]
    if n < lo or n > hi then perr("%s: %d arguments", what, n) end
    return n
  end
  local function int_list(t, what)
    if kind[t] ~= "tuple" and kind[t] ~= "list" then perr("%s is not a tuple", what) end
    local out = {}
    for i = 1, tuple_n[t] or 0 do
      local v = t[i]
      if math.type(v) ~= "integer" or v < 0 then perr("%s holds %s, not a size", what, tostring(v)) end
      out[i] = v
    end
    return out
  end

  local function rebuild_tensor(a)
    args_of(a, "_rebuild_tensor_v2", 6, 7)
    local base, offset, size, stride, requires_grad = a[1], a[2], a[3], a[4], a[5]
    if not pt.is_tensor(base) then perr("_rebuild_tensor_v2: the first argument is not a storage") end
    if math.type(offset) ~= "integer" or offset < 0 then perr("_rebuild_tensor_v2: bad storage offset") end
    size, stride = int_list(size, "the size"), int_list(stride, "the stride")
    if #size ~= #stride then perr("_rebuild_tensor_v2: %d sizes but %d strides", #size, #stride) end
    local numel = base:numel()
    local last = offset -- the last element the view reaches, 0-based
    local empty = false
    local reach = true -- false when the view reaches past math.maxinteger
    for i = 1, #size do
      if size[i] == 0 then empty = true end
      if size[i] > 1 and stride[i] > 0 then
        if stride[i] > (math.maxinteger - last) // (size[i] - 1) then reach = false else
          last = last + (size[i] - 1) * stride[i]
        end
      end
    end
    if not empty and not reach then
      perr("storage too short for the view: size {%s} and stride {%s} reach past a storage of %d elements",
        table.concat(size, ","), table.concat(stride, ","), numel)
    end
    if not empty and last >= numel then
      perr("storage too short for the view: size {%s}, stride {%s} and offset %d reach element %d of a storage "
        .. "of %d elements", table.concat(size, ","), table.concat(stride, ","), offset, last + 1, numel)
    end
    if empty and offset > numel then perr("storage offset %d past a storage of %d elements", offset, numel) end
    local t
    if empty then
      local ok, r = pcall(pt.empty, size, {dtype = base:dtype()})
      if not ok then perr("%s", tostring(r):gsub("^[^\n]-:%d+: ", "")) end
      t = r
    else
      local ok, r = pcall(base.as_strided, base, size, stride, offset + 1)
      if not ok then perr("%s", tostring(r):gsub("^[^\n]-:%d+: ", "")) end
      t = r
    end
    if map then
      local loc = location[base] or "cpu"
      if type(map) == "string" then t = t:to(map) else t = map(t, loc) end
      if not pt.is_tensor(t) then perr("map returned a %s, not a tensor", type(t)) end
    end
    if requires_grad == true then
      local ok, r = pcall(t.requires_grad_, t, true)
      if not ok then perr("%s", tostring(r):gsub("^[^\n]-:%d+: ", "")) end
    end
    return t
  end

  local function call(f, a)
    if getmetatable(f) ~= GLOBAL_MT then perr("REDUCE of a %s, not an allowed global", type(f)) end
    local what = f.what
    if what == "rebuild_tensor" then return rebuild_tensor(a) end
    if what == "rebuild_parameter" then
      args_of(a, global_name(f), 3, 4)
      local t, rg = a[1], a[2]
      if not pt.is_tensor(t) then perr("%s: the data is not a tensor", global_name(f)) end
      if rg == true and not t.requires_grad then
        local ok, r = pcall(t.requires_grad_, t, true)
        if not ok then perr("%s", tostring(r):gsub("^[^\n]-:%d+: ", "")) end
      elseif rg == false and t.requires_grad then
        t = t:detach()
      end
      return t
    end
    if what == "dict" then
      local d = dict()
      local n = args_of(a, global_name(f), 0, 1)
      if n == 1 then
        local items = a[1]
        if kind[items] ~= "list" and kind[items] ~= "tuple" then perr("OrderedDict: the items are not a list") end
        for i = 1, tuple_n[items] or 0 do
          local p = items[i]
          if (kind[p] ~= "list" and kind[p] ~= "tuple") or tuple_n[p] ~= 2 then perr("OrderedDict: item %d is not a pair", i) end
          setitem(d, p[1] == nil and NONE or p[1], p[2] == nil and NONE or p[2])
        end
      end
      return d
    end
    if what == "size" then
      args_of(a, "torch.Size", 1, 1)
      local l = new("list")
      local src = a[1]
      if kind[src] ~= "list" and kind[src] ~= "tuple" then perr("torch.Size: the argument is not a tuple") end
      for i = 1, tuple_n[src] or 0 do l[i] = src[i] end
      tuple_n[l] = tuple_n[src]
      return l
    end
    if what == "set" then
      local s = new("set")
      local n = args_of(a, global_name(f), 0, 1)
      if n == 1 then
        local src = a[1]
        if kind[src] ~= "list" and kind[src] ~= "tuple" then perr("%s: the argument is not a list", global_name(f)) end
        for i = 1, tuple_n[src] or 0 do
          if src[i] ~= nil then s[src[i]] = true end
        end
      end
      return s
    end
    if what == "encode" then -- bytes in protocol 2: _codecs.encode(str, "latin1")
      args_of(a, "_codecs.encode", 2, 2)
      local s, enc = a[1], a[2]
      if type(s) ~= "string" or (enc ~= "latin1" and enc ~= "latin-1") then
        perr("_codecs.encode: only a string in latin1 is read")
      end
      local out = {}
      for _, c in utf8.codes(s) do
        if c > 255 then perr("_codecs.encode: a character above 255 in latin1") end
        out[#out + 1] = string.char(c)
      end
      return table.concat(out)
    end
    perr("%s cannot be called", global_name(f))
  end

  local function find_global(module, name)
    local w = ALLOWED[module] and ALLOWED[module][name]
    if not w then
      raise(("%srefusing to load global %s.%s (only tensors and plain containers are read; loading never "
        .. "runs code)"):format(where, module, name))
    end
    return setmetatable({module = module, name = name, what = w}, GLOBAL_MT)
  end

  local function persistent(pid)
    if kind[pid] ~= "tuple" or tuple_n[pid] ~= 5 or pid[1] ~= "storage" then
      perr("a persistent id that is not ('storage', type, key, location, numel)")
    end
    local st, key, location, n = pid[2], pid[3], pid[4], pid[5]
    if getmetatable(st) ~= GLOBAL_MT or st.what ~= "storage_type" then perr("persistent id: not a storage type") end
    if type(key) ~= "string" then perr("persistent id: the key is not a string") end
    if math.type(n) ~= "integer" or n < 0 then perr("persistent id: bad element count") end
    local s = storages[key]
    if s then
      if s.type ~= st.name then perr("storage '%s' read as %s and as %s", key, s.type, st.name) end
      if s.n ~= n then perr("storage '%s' read with %d and %d elements", key, s.n, n) end
      return s
    end
    s = setmetatable({key = key, type = st.name, info = STORAGES[st.name], n = n,
                      location = type(location) == "string" and location or "cpu"}, STORAGE_MT)
    storages[key] = s
    return s
  end

  local ops = {}
  ops[0x80] = function() -- PROTO
    local v = read("B", 1)
    if v > 5 then perr("pickle protocol %d is not supported", v) end
  end
  ops[0x95] = function() read("<I8", 8) end -- FRAME: the frames are read as one stream
  ops[0x28] = function() marks[#marks + 1] = top end -- MARK
  ops[0x7d] = function() push(dict()) end -- EMPTY_DICT
  ops[0x5d] = function() push(new("list")) end -- EMPTY_LIST
  ops[0x29] = function() local t = new("tuple"); tuple_n[t] = 0; push(t) end -- EMPTY_TUPLE
  ops[0x8f] = function() push(new("set")) end -- EMPTY_SET
  ops[0x74] = function() push(tuple(pop_mark())) end -- TUPLE
  ops[0x85] = function() local a = pop(); push(tuple({a}, 1)) end
  ops[0x86] = function() local b = pop(); local a = pop(); push(tuple({a, b}, 2)) end
  ops[0x87] = function() local c = pop(); local b = pop(); local a = pop(); push(tuple({a, b, c}, 3)) end
  ops[0x64] = function() -- DICT
    local items, n = pop_mark()
    if n % 2 ~= 0 then perr("DICT with an odd number of items") end
    local d = dict()
    for i = 1, n, 2 do setitem(d, items[i], items[i + 1]) end
    push(d)
  end
  ops[0x6c] = function() -- LIST
    local items, n = pop_mark()
    local l = new("list")
    for i = 1, n do append(l, items[i]) end
    push(l)
  end
  ops[0x91] = function() -- FROZENSET
    local items, n = pop_mark()
    local s = new("set")
    for i = 1, n do local v = value(items[i]); if v ~= nil then s[v] = true end end
    push(s)
  end
  ops[0x90] = function() -- ADDITEMS
    local items, n = pop_mark()
    local s = peek()
    if kind[s] ~= "set" then perr("ADDITEMS to a %s, not a set", kind[s] or type(s)) end
    for i = 1, n do local v = value(items[i]); if v ~= nil then s[v] = true end end
  end
  local memo_count = 0
  local function put(i)
    if top == 0 then perr("stack underflow") end
    if memo[i] == nil then memo_count = memo_count + 1 end
    memo[i] = stack[top]
  end
  ops[0x71] = function() put(read("B", 1)) end -- BINPUT
  ops[0x72] = function() put(read("<I4", 4)) end -- LONG_BINPUT
  ops[0x94] = function() put(memo_count) end -- MEMOIZE: the next index, len(memo)
  local function get(i)
    local v = memo[i]
    if v == nil then perr("memo entry %d is missing", i) end
    push(v)
  end
  ops[0x68] = function() get(read("B", 1)) end -- BINGET
  ops[0x6a] = function() get(read("<I4", 4)) end -- LONG_BINGET
  ops[0x58] = function() push(bytes(read("<I4", 4))) end -- BINUNICODE
  ops[0x8c] = function() push(bytes(read("B", 1))) end -- SHORT_BINUNICODE
  ops[0x8d] = function() push(bytes(read("<i8", 8))) end -- BINUNICODE8
  ops[0x54] = function() push(bytes(read("<i4", 4))) end -- BINSTRING
  ops[0x55] = function() push(bytes(read("B", 1))) end -- SHORT_BINSTRING
  ops[0x42] = function() push(bytes(read("<I4", 4))) end -- BINBYTES
  ops[0x43] = function() push(bytes(read("B", 1))) end -- SHORT_BINBYTES
  ops[0x8e] = function() push(bytes(read("<i8", 8))) end -- BINBYTES8
  ops[0x4a] = function() push(read("<i4", 4)) end -- BININT
  ops[0x4b] = function() push(read("B", 1)) end -- BININT1
  ops[0x4d] = function() push(read("<I2", 2)) end -- BININT2
  local function long(n)
    local s = bytes(n)
    if n == 0 then return push(0) end
    if n > 8 then
      -- fits in 64 bits when the bytes above the 8th only extend the sign
      local ext = s:byte(8) >= 0x80 and "\255" or "\0"
      if s:sub(9) ~= ext:rep(n - 8) then perr("an integer of %d bytes does not fit in 64 bits", n) end
      s = s:sub(1, 8)
      n = 8
    end
    push((string.unpack("<i" .. n, s)))
  end
  ops[0x8a] = function() long(read("B", 1)) end -- LONG1
  ops[0x8b] = function() long(read("<i4", 4)) end -- LONG4
  ops[0x47] = function() push(read(">d", 8)) end -- BINFLOAT
  ops[0x88] = function() push(true) end -- NEWTRUE
  ops[0x89] = function() push(false) end -- NEWFALSE
  ops[0x4e] = function() push(NONE) end -- NONE
  ops[0x30] = function() pop() end -- POP
  ops[0x31] = function() pop_mark() end -- POP_MARK
  ops[0x32] = function() push(peek()) end -- DUP
  ops[0x73] = function() -- SETITEM
    local v = pop(); local k = pop()
    setitem(peek(), k, v)
  end
  ops[0x75] = function() -- SETITEMS
    local items, n = pop_mark()
    if n % 2 ~= 0 then perr("SETITEMS with an odd number of items") end
    local d = peek()
    for i = 1, n, 2 do setitem(d, items[i], items[i + 1]) end
  end
  ops[0x61] = function() local v = pop(); append(peek(), v) end -- APPEND
  ops[0x65] = function() -- APPENDS
    local items, n = pop_mark()
    local l = peek()
    for i = 1, n do append(l, items[i]) end
  end
  ops[0x63] = function() -- GLOBAL
    local module = line()
    local name = line()
    push(find_global(module, name))
  end
  ops[0x93] = function() -- STACK_GLOBAL
    local name = pop(); local module = pop()
    if type(module) ~= "string" or type(name) ~= "string" then perr("STACK_GLOBAL of a non-string") end
    push(find_global(module, name))
  end
  ops[0x52] = function() -- REDUCE
    local a = pop(); local fn = pop()
    push(call(fn, a))
  end
  ops[0x81] = function() -- NEWOBJ: cls.__new__(cls, *args)
    local a = pop(); local cls = pop()
    if getmetatable(cls) ~= GLOBAL_MT or (cls.what ~= "dict" and cls.what ~= "set" and cls.what ~= "size") then
      perr("NEWOBJ of %s", getmetatable(cls) == GLOBAL_MT and global_name(cls) or type(cls))
    end
    push(call(cls, a))
  end
  ops[0x62] = function() -- BUILD: an object's attributes (a state_dict's _metadata) are dropped
    pop()
    peek()
  end
  ops[0x51] = function() push(persistent(pop())) end -- BINPERSID

  local result
  while true do
    op_at = pos
    if pos > #pkl then perr("truncated pickle (no STOP)") end
    local op = pkl:byte(pos)
    pos = pos + 1
    if op == 0x2e then -- STOP
      if top ~= 1 or #marks > 0 then perr("STOP with %d values on the stack", top) end
      result = value(stack[1])
      break
    end
    local fn = ops[op]
    if not fn then perr("unknown or unsupported pickle opcode 0x%02x", op) end
    fn()
  end
  return result, orders
end

--- pt.load_torch(path[, {map = device_or_function, none = value}]) -> obj, orders
function M.load(path, opts)
  local ok, obj, orders = pcall(load, path, opts)
  if not ok then
    if type(obj) == "string" then
      local src = obj:match("^([^\n]-):%d+: ")
      if src == SELF then obj = obj:gsub("^[^\n]-:%d+: ", "") end
      error(obj, 2)
    end
    error(obj, 0)
  end
  return obj, orders
end

local docs = rawget(pt, "_docs")
if docs then
  docs[M.load] = "pt.load_torch(path[, {map = \"cpu\" or function(t, location) -> t, none = value}]) -> obj, orders\n"
    .. "  Read a torch.save file (the zip format of torch >= 1.6, e.g. a model's state_dict) without running\n"
    .. "  any code: only tensors, dicts, lists, tuples, numbers, strings, booleans and None are read; any\n"
    .. "  other global in the pickle raises \"refusing to load global ...\".\n"
    .. "  dict / OrderedDict -> table (keys as they are, 0-based integers stay 0-based), list / tuple /\n"
    .. "  torch.Size -> list, set -> table value -> true, None -> opts.none (default nil), nn.Parameter ->\n"
    .. "  tensor with requires_grad. float16 / bfloat16 come back as float32 (exactly), int8 / int16 as\n"
    .. "  int32; views keep their offset and strides and tensors on one storage share it. A dict's attributes\n"
    .. "  (a state_dict's _metadata) are dropped; orders[dict] lists a dict's keys in the file's order.\n"
    .. "  model:load_state_dict(pt.load_torch(\"model.pt\")) takes torch's 0-based names as they are."
end

return M
