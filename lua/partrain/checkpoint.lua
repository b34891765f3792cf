-- partrain.checkpoint: pt.save / pt.load / pt.load_into in the safetensors format.
--
-- File layout (readable by any safetensors reader, e.g. scripts/read_checkpoint.py):
--   tensors      the model's state_dict (or the plain table given), names as they are;
--                optimizer tensors as "optimizer.<path>" (e.g. "optimizer.state.1.exp_avg");
--                with rng = true the generator's state as "partrain.rng_state" (uint8)
--   __metadata__ string -> string:
--                user meta: strings as they are, other values (and strings holding a NUL byte)
--                JSON-encoded (listed in "partrain.json_keys"); "partrain.optimizer": the
--                optimizer's state_dict as JSON with each tensor replaced by
--                {"__tensor__": "<name>"}; "partrain.loader_epoch"; "partrain.format" = "1".
-- The JSON inside metadata values (encode/decode below) keeps every Lua value exactly:
--   integers as integers ("3"), floats always with a '.' or an exponent ("1.0", "0.30000000000000004",
--   "1e+300"), the shortest of %.15g/%.16g/%.17g that reads back to the same double; nan and
--   +-inf as NaN / Infinity / -Infinity (what Python's json reads and writes); sequences as
--   arrays; other tables as objects whose integer keys are "#<n>" (a string key starting with
--   '#' or '\\' gets a '\\' in front). Strings must be valid UTF-8.
-- Header strings (tensor names, meta keys and values) must be valid UTF-8; names and keys cannot
-- hold a NUL byte.
-- Writing goes to path .. ".tmp", then a rename: a crash mid-save keeps the previous file.
local pt = require "partrain"

local M = {}

local OPT_PREFIX = "optimizer."
local RNG_NAME = "partrain.rng_state" -- the tensor of pt.get_rng_state() (save's rng = true)
local MAX_DEPTH = 64

-- Errors: the work below raises messages without a position (error(msg, 0)); each public
-- function runs it under pcall and raises the message again at its caller's line. A position
-- that points into partrain's own Lua files (a method we called raised at its caller's level,
-- or a C entry point reported our line) is dropped; one in the user's code (their own
-- state_dict, say) is kept as it is.
local SELF = debug.getinfo(1, "S").short_src
local DIR = SELF:match("^(.*[/\\])") or ""

local function is_internal(src)
  return src == SELF or (#DIR > 0 and src:sub(1, #DIR) == DIR and not src:find("[/\\]", #DIR + 1)
    and src:find("%.lua$") ~= nil)
end

-- called directly (never as a tail call) by a public function: level 3 is that function's caller
local function rethrow(err)
  if type(err) ~= "string" then error(err, 0) end
  local src, rest = err:match("^([^\n]-):%d+: (.*)$")
  if src and not is_internal(src) then error(err, 0) end
  error(src and rest or err, 3)
end

local function fail(fmt, ...) error(fmt:format(...), 0) end

local shown = require("partrain.json").shown

-- a tensor name or a meta key: valid UTF-8 without NUL bytes
local function check_name(what, s)
  if s:find("\0", 1, true) then
    fail("save: %s '%s' contains a NUL byte (names and keys cannot hold one)", what, shown(s))
  end
  local ok, at = utf8.len(s)
  if not ok then fail("save: %s '%s' is not valid UTF-8 (byte %d)", what, shown(s, true), at) end
end

local function is_tensor(x) return pt.is_tensor(x) end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    local ta, tb = type(a), type(b)
    if ta ~= tb then return ta < tb end
    return a < b
  end)
  return keys
end

local json = require "partrain.json"
local json_encode, json_decode = json.encode, json.decode


-- optimizer state: tensors out into (names, tensors), the rest into a JSON-able tree
local function flatten_state(value, path, names, tensors, depth)
  if depth > MAX_DEPTH then fail("save: optimizer state nested too deeply at '%s'", path) end
  if is_tensor(value) then
    names[#names + 1] = OPT_PREFIX .. path
    tensors[#tensors + 1] = value
    return {__tensor__ = OPT_PREFIX .. path}
  end
  if type(value) ~= "table" then return value end
  local out = {}
  for _, k in ipairs(sorted_keys(value)) do
    if type(k) ~= "string" and math.type(k) ~= "integer" then
      fail("save: optimizer state key of type %s at '%s'", type(k), path)
    end
    local sub = path == "" and tostring(k) or path .. "." .. tostring(k)
    out[k] = flatten_state(value[k], sub, names, tensors, depth + 1)
  end
  return out
end

local function restore_state(value, tensors, used)
  if type(value) ~= "table" then return value end
  if value.__tensor__ ~= nil and next(value, next(value)) == nil then
    local name = value.__tensor__
    local t = tensors[name]
    if not t then fail("load: optimizer state refers to a missing tensor '%s'", tostring(name)) end
    used[name] = true
    return t
  end
  local out = {}
  for k, v in pairs(value) do out[k] = restore_state(v, tensors, used) end
  return out
end

local function shape_str(t) return "{" .. table.concat(t:size(), ",") .. "}" end

local function save(path, obj, opts)
  if type(path) ~= "string" then fail("save: path must be a string") end
  if path:find("\0", 1, true) then fail("save: path '%s' contains a NUL byte", shown(path)) end
  opts = opts or {}
  if type(opts) ~= "table" then fail("save: options must be a table") end
  local save_options = {optimizer = true, meta = true, loader = true, rng = true, dtype = true,
    index_base = true}
  for k in pairs(opts) do
    if not save_options[k] then
      fail("save: unknown option '%s' (options: dtype, index_base, loader, meta, optimizer, rng)", tostring(k))
    end
  end
  local sd
  if opts.index_base ~= nil and opts.index_base ~= 0 and opts.index_base ~= 1 then
    fail("save: index_base must be 0 or 1, got %s", tostring(opts.index_base))
  end
  if type(obj) == "table" and type(obj.state_dict) == "function" then
    sd = opts.index_base ~= nil and obj:state_dict({index_base = opts.index_base}) or obj:state_dict()
  elseif type(obj) == "table" then
    sd = obj
  else
    fail("save: expected a model (with state_dict()) or a table of tensors, got a %s", type(obj))
  end
  local names, tensors = {}, {}
  for _, k in ipairs(sorted_keys(sd)) do
    if type(k) ~= "string" then fail("save: tensor names must be strings (got a %s key)", type(k)) end
    local t = sd[k]
    if not is_tensor(t) then fail("save: entry '%s' is a %s, not a tensor", shown(k, true), type(t)) end
    if k:sub(1, #OPT_PREFIX) == OPT_PREFIX and opts.optimizer then
      fail("save: tensor name '%s' clashes with the optimizer's names", shown(k, true))
    end
    if k == RNG_NAME then fail("save: tensor name '%s' is reserved", k) end
    names[#names + 1], tensors[#tensors + 1] = k, t
  end
  -- the model's (or table's) floating point tensors may be stored as 16-bit floats
  local storage_names = {float16 = "F16", half = "F16", bfloat16 = "BF16"}
  local floats
  if opts.dtype ~= nil then
    floats = storage_names[opts.dtype]
    if not floats then
      fail("save: dtype must be \"float16\" (or \"half\") or \"bfloat16\", got '%s'", shown(tostring(opts.dtype)))
    end
  end
  local n_model = #names
  local mkeys, mvals = {}, {}
  local json_keys = {}
  if opts.meta ~= nil then
    if type(opts.meta) ~= "table" then fail("save: meta must be a table") end
    for _, k in ipairs(sorted_keys(opts.meta)) do
      if type(k) ~= "string" then fail("save: meta keys must be strings") end
      check_name("meta key", k)
      if k:sub(1, 9) == "partrain." then fail("save: meta key '%s' is reserved", k) end
      local v = opts.meta[k]
      mkeys[#mkeys + 1] = k
      local prefix = ("save: meta '%s'"):format(k)
      if type(v) == "string" and not v:find("\0", 1, true) then
        local ok, pos = utf8.len(v)
        if not ok then fail("%s: string is not valid UTF-8 (byte %d)", prefix, pos) end
        mvals[#mvals + 1] = v
      else -- a string with a NUL byte goes as a JSON string ("\u0000"), which reads back whole
        mvals[#mvals + 1] = json_encode(v, prefix)
        json_keys[#json_keys + 1] = k
      end
    end
  end
  if #json_keys > 0 then
    mkeys[#mkeys + 1], mvals[#mvals + 1] = "partrain.json_keys", json_encode(json_keys, "save: meta")
  end
  if opts.optimizer ~= nil then
    local o = opts.optimizer
    if type(o) ~= "table" or type(o.state_dict) ~= "function" then
      fail("save: optimizer must have a state_dict() method")
    end
    local tree = flatten_state(o:state_dict(), "", names, tensors, 0)
    mkeys[#mkeys + 1], mvals[#mvals + 1] = "partrain.optimizer", json_encode(tree, "save: optimizer state")
  end
  if opts.loader ~= nil then
    if type(opts.loader) ~= "table" or math.type(opts.loader.epoch) ~= "integer" then
      fail("save: loader must be a DataHandler")
    end
    mkeys[#mkeys + 1], mvals[#mvals + 1] = "partrain.loader_epoch", tostring(opts.loader.epoch)
  end
  if opts.rng then -- the generator, for dropout and random transforms to resume exactly
    names[#names + 1], tensors[#tensors + 1] = RNG_NAME, pt.get_rng_state()
  end
  mkeys[#mkeys + 1], mvals[#mvals + 1] = "partrain.format", "1"
  for _, name in ipairs(names) do check_name("tensor name", name) end
  pt._save(path, names, tensors, mkeys, mvals, floats, n_model)
end

local function decode_meta(path, what, s)
  local ok, v = pcall(json_decode, s)
  if not ok then fail("load: '%s': %s is not valid JSON: %s", path, what, v) end
  return v
end

local function load(path)
  if type(path) ~= "string" then fail("load: path must be a string") end
  if path:find("\0", 1, true) then fail("load: path '%s' contains a NUL byte", shown(path)) end
  local tensors, raw, order = pt._load(path)
  local meta, state = {}, {}
  local format = raw["partrain.format"]
  if format and format ~= "1" then
    fail("load: '%s': partrain.format is '%s'; this partrain reads format 1 (a file of a newer partrain?)", path,
      shown(format))
  end
  local json_keys = {}
  if raw["partrain.json_keys"] then
    local list = decode_meta(path, "partrain.json_keys metadata", raw["partrain.json_keys"])
    if type(list) ~= "table" or #list ~= #sorted_keys(list) then
      fail("load: '%s': invalid partrain.json_keys metadata (expected a list of key names)", path)
    end
    for i, k in ipairs(list) do
      if type(k) ~= "string" then
        fail("load: '%s': invalid partrain.json_keys metadata (entry %d is a %s, not a key name)", path, i, type(k))
      end
      json_keys[k] = true
    end
  end
  for k, v in pairs(raw) do
    if k:sub(1, 9) ~= "partrain." then
      if json_keys[k] then
        meta[k] = decode_meta(path, ("metadata '%s'"):format(k), v)
      else
        meta[k] = v
      end
    end
  end
  if raw["partrain.optimizer"] then
    local tree = decode_meta(path, "optimizer state", raw["partrain.optimizer"])
    local used = {}
    local ok, st = pcall(restore_state, tree, tensors, used)
    if not ok then fail("load: '%s': %s", path, tostring(st):gsub("^load: ", "")) end
    state.optimizer = st
    for name in pairs(used) do tensors[name] = nil end
  end
  local epoch = raw["partrain.loader_epoch"]
  if epoch then
    state.loader_epoch = epoch:match("^%d+$") and math.tointeger(tonumber(epoch))
    if not state.loader_epoch then
      fail("load: '%s': invalid partrain.loader_epoch metadata '%s' (expected a non-negative integer)", path,
        shown(epoch))
    end
  end
  if tensors[RNG_NAME] then
    state.rng, tensors[RNG_NAME] = tensors[RNG_NAME], nil
  end
  state.names = order
  return tensors, meta, state
end

-- copies the loaded tensors into a plain table of tensors: every shape is checked before any
-- copy, and the copies are not recorded by autograd (targets may be leaves that require grad)
local function copy_into(path, target, tensors)
  local todo = {}
  for _, name in ipairs(sorted_keys(target)) do
    local t, src = target[name], tensors[name]
    if not is_tensor(t) then
      fail("load_into: entry '%s' of the target is a %s, not a tensor", tostring(name), type(t))
    end
    if not src then fail("load_into: '%s' has no tensor '%s'", path, tostring(name)) end
    if shape_str(src) ~= shape_str(t) then
      fail("load_into: size mismatch for %s: copying a tensor with shape %s from checkpoint, the shape in the target is %s",
        tostring(name), shape_str(src), shape_str(t))
    end
    todo[#todo + 1] = {t, src}
  end
  pt.no_grad(function()
    for _, e in ipairs(todo) do e[1]:copy_(e[2]) end
  end)
end

local function load_into(path, model, opts)
  opts = opts or {}
  if type(opts) ~= "table" then fail("load_into: options must be a table") end
  if type(model) ~= "table" then fail("load_into: model must be a Module or a table of tensors") end
  local tensors, meta, state = load(path)
  if type(model.load_state_dict) == "function" then
    if opts.strict ~= nil then model:load_state_dict(tensors, {strict = opts.strict}) else model:load_state_dict(tensors) end
  else
    copy_into(path, model, tensors)
  end
  if opts.optimizer then
    if not state.optimizer then fail("load_into: '%s' holds no optimizer state", path) end
    opts.optimizer:load_state_dict(state.optimizer)
  end
  if opts.loader then
    if not state.loader_epoch then fail("load_into: '%s' holds no loader epoch", path) end
    opts.loader:set_epoch(state.loader_epoch)
  end
  if state.rng and opts.rng ~= false then
    local ok, e = pcall(pt.set_rng_state, state.rng)
    if not ok then fail("load_into: '%s': %s", path, tostring(e):gsub("^[^\n]-:%d+: ", "")) end
  end
  return meta
end

--- pt.save(path, model_or_tensors[, {optimizer = opt, meta = {...}, loader = handler}])
function M.save(path, obj, opts)
  local ok, err = pcall(save, path, obj, opts)
  if not ok then rethrow(err) end
end

--- pt.load(path) -> tensors, meta, state
-- tensors: name -> Tensor (the model's; optimizer tensors are moved into state.optimizer);
-- meta: the user metadata (decoded); state: {optimizer = state_dict or nil, loader_epoch = n or nil}.
-- Files written by other tools load too (their metadata comes back as strings).
function M.load(path)
  local ok, tensors, meta, state = pcall(load, path)
  if not ok then rethrow(tensors) end
  return tensors, meta, state
end

--- pt.load_into(path, model[, {optimizer = opt, loader = handler, strict = true}]) -> meta
-- Restores the model (load_state_dict, or copies into a plain table of tensors of the same
-- shapes), the optimizer state and the loader's epoch, so training resumes exactly where the
-- checkpoint was taken.
function M.load_into(path, model, opts)
  local ok, meta = pcall(load_into, path, model, opts)
  if not ok then rethrow(meta) end
  return meta
end

-- pt.save & co. (init.lua loads this module on first use of one of them)
local docs = rawget(pt, "_docs")
if docs then
  docs[M.save] = "pt.save(path, model_or_tensors[, {optimizer = opt, meta = {...}, loader = handler, rng = true}])\n"
    .. "  Write a safetensors checkpoint (via path..\".tmp\" and a rename). A model saves its\n"
    .. "  state_dict(); optimizer tensors go under \"optimizer.*\", the rest of its state as JSON metadata.\n"
    .. "  Numbers in meta and optimizer state come back exactly (integer or float, nan and inf too).\n"
    .. "  rng = true also stores the random generator (pt.get_rng_state), for dropout and random transforms.\n"
    .. "  dtype = \"bfloat16\" or \"float16\" (\"half\") stores the model's floating point tensors as 16-bit\n"
    .. "  floats (rounded to nearest even, float64 in one rounding; half the size of float32); the\n"
    .. "  optimizer's state keeps its own dtype, so a resume stays exact for the state, not the weights.\n"
    .. "  index_base = 0 names a model's children of Sequential/ModuleList/ParameterList from 0, as\n"
    .. "  PyTorch does (\"0.weight\"), for torch's load_state_dict; pt.load_into reads either."
  docs[M.load] = "pt.load(path) -> tensors, meta, state\n  tensors: name -> Tensor; meta: your metadata;\n"
    .. "  state.optimizer: the optimizer's state_dict, state.loader_epoch, state.rng (the generator's\n"
    .. "  state, when saved with rng = true). Hostile files raise errors. Files of other tools load with\n"
    .. "  every safetensors dtype but F8: F16 and BF16 as float32 (exactly), I8/I16/U16 as int32,\n"
    .. "  U32/U64 as int64 (a U64 above 2^63-1 is an error)."
  docs[M.load_into] = "pt.load_into(path, model[, {optimizer = opt, loader = handler, rng = true}]) -> meta\n"
    .. "  Restore model, optimizer, loader epoch and (when saved; rng = false skips it) the random generator\n"
    .. "  for an exact resume. model: a Module (load_state_dict)\n"
    .. "  or a table name -> tensor of the same shapes (copied without recording a graph)."
end

return M
