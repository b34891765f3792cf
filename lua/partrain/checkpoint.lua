-- partrain.checkpoint: pt.save / pt.load / pt.load_into in the safetensors format.
--
-- File layout (readable by any safetensors reader, e.g. scripts/read_checkpoint.py):
--   tensors      the model's state_dict (or the plain table given), names as they are;
--                optimizer tensors as "optimizer.<path>" (e.g. "optimizer.state.1.exp_avg")
--   __metadata__ string -> string:
--                user meta: strings as they are, other values JSON-encoded (listed in
--                "partrain.json_keys"); "partrain.optimizer": the optimizer's state_dict as JSON
--                with each tensor replaced by {"__tensor__": "<name>"}; "partrain.loader_epoch";
--                "partrain.format" = "1".
-- Writing goes to path .. ".tmp", then a rename: a crash mid-save keeps the previous file.
local pt = require "partrain"

local M = {}

local OPT_PREFIX = "optimizer."

-- call a C entry point; its errors are raised again at the level of our caller's caller
local function checked(fn, ...)
  local r = table.pack(pcall(fn, ...))
  if not r[1] then error((tostring(r[2]):gsub("^[^:\n]*:%d+: ", "")), 3) end
  return table.unpack(r, 2, r.n)
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

-- optimizer state: tensors out into (names, tensors), the rest into a JSON-able tree
local function flatten_state(value, path, names, tensors, depth)
  if depth > 64 then error("save: optimizer state nested too deeply at '" .. path .. "'", 0) end
  if is_tensor(value) then
    names[#names + 1] = OPT_PREFIX .. path
    tensors[#tensors + 1] = value
    return {__tensor__ = OPT_PREFIX .. path}
  end
  if type(value) ~= "table" then return value end
  local out = {}
  for _, k in ipairs(sorted_keys(value)) do
    if type(k) ~= "string" and math.type(k) ~= "integer" then
      error(("save: optimizer state key of type %s at '%s'"):format(type(k), path), 0)
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
    if not t then error(("load: optimizer state refers to a missing tensor '%s'"):format(tostring(name)), 0) end
    used[name] = true
    return t
  end
  local out = {}
  for k, v in pairs(value) do out[k] = restore_state(v, tensors, used) end
  return out
end

--- pt.save(path, model_or_tensors[, {optimizer = opt, meta = {...}, loader = handler}])
function M.save(path, obj, opts)
  if type(path) ~= "string" then error("save: path must be a string", 2) end
  opts = opts or {}
  if type(opts) ~= "table" then error("save: options must be a table", 2) end
  local sd
  if type(obj) == "table" and type(obj.state_dict) == "function" then
    sd = obj:state_dict()
  elseif type(obj) == "table" then
    sd = obj
  else
    error("save: expected a model (with state_dict()) or a table of tensors, got a " .. type(obj), 2)
  end
  local names, tensors = {}, {}
  for _, k in ipairs(sorted_keys(sd)) do
    if type(k) ~= "string" then
      error(("save: tensor names must be strings (got a %s key)"):format(type(k)), 2)
    end
    local t = sd[k]
    if not is_tensor(t) then error(("save: entry '%s' is a %s, not a tensor"):format(k, type(t)), 2) end
    if k:sub(1, #OPT_PREFIX) == OPT_PREFIX and opts.optimizer then
      error(("save: tensor name '%s' clashes with the optimizer's names"):format(k), 2)
    end
    names[#names + 1], tensors[#tensors + 1] = k, t
  end
  local mkeys, mvals = {}, {}
  local json_keys = {}
  if opts.meta ~= nil then
    if type(opts.meta) ~= "table" then error("save: meta must be a table", 2) end
    for _, k in ipairs(sorted_keys(opts.meta)) do
      if type(k) ~= "string" then error("save: meta keys must be strings", 2) end
      if k:sub(1, 9) == "partrain." then error(("save: meta key '%s' is reserved"):format(k), 2) end
      local v = opts.meta[k]
      mkeys[#mkeys + 1] = k
      if type(v) == "string" then
        mvals[#mvals + 1] = v
      else
        local ok, s = pcall(pt._json_encode, v)
        if not ok then error(("save: meta '%s': %s"):format(k, tostring(s):gsub("^.-json: ", "")), 2) end
        mvals[#mvals + 1] = s
        json_keys[#json_keys + 1] = k
      end
    end
  end
  if #json_keys > 0 then
    mkeys[#mkeys + 1], mvals[#mvals + 1] = "partrain.json_keys", pt._json_encode(json_keys)
  end
  if opts.optimizer ~= nil then
    local o = opts.optimizer
    if type(o) ~= "table" or type(o.state_dict) ~= "function" then
      error("save: optimizer must have a state_dict() method", 2)
    end
    local ok, tree = pcall(flatten_state, o:state_dict(), "", names, tensors, 0)
    if not ok then error(tree, 2) end
    local ok2, s = pcall(pt._json_encode, tree)
    if not ok2 then error("save: optimizer state: " .. tostring(s):gsub("^.-json: ", ""), 2) end
    mkeys[#mkeys + 1], mvals[#mvals + 1] = "partrain.optimizer", s
  end
  if opts.loader ~= nil then
    if type(opts.loader) ~= "table" or math.type(opts.loader.epoch) ~= "integer" then
      error("save: loader must be a DataHandler", 2)
    end
    mkeys[#mkeys + 1], mvals[#mvals + 1] = "partrain.loader_epoch", tostring(opts.loader.epoch)
  end
  mkeys[#mkeys + 1], mvals[#mvals + 1] = "partrain.format", "1"
  checked(pt._save, path, names, tensors, mkeys, mvals)
end

--- pt.load(path) -> tensors, meta, state
-- tensors: name -> Tensor (the model's; optimizer tensors are moved into state.optimizer);
-- meta: the user metadata (decoded); state: {optimizer = state_dict or nil, loader_epoch = n or nil}.
-- Files written by other tools load too (their metadata comes back as strings).
function M.load(path)
  if type(path) ~= "string" then error("load: path must be a string", 2) end
  local tensors, raw, order = checked(pt._load, path)
  local meta, state = {}, {}
  local json_keys = {}
  if raw["partrain.json_keys"] then
    local ok, list = pcall(pt._json_decode, raw["partrain.json_keys"])
    if not ok or type(list) ~= "table" then error(("load: '%s': invalid partrain.json_keys metadata"):format(path), 2) end
    for _, k in ipairs(list) do json_keys[k] = true end
  end
  for k, v in pairs(raw) do
    if k:sub(1, 9) ~= "partrain." then
      if json_keys[k] then
        local ok, d = pcall(pt._json_decode, v)
        if not ok then error(("load: '%s': metadata '%s' is not valid JSON"):format(path, k), 2) end
        meta[k] = d
      else
        meta[k] = v
      end
    end
  end
  if raw["partrain.optimizer"] then
    local ok, tree = pcall(pt._json_decode, raw["partrain.optimizer"])
    if not ok then error(("load: '%s': optimizer state is not valid JSON"):format(path), 2) end
    local used = {}
    local ok2, st = pcall(restore_state, tree, tensors, used)
    if not ok2 then error(("load: '%s': %s"):format(path, tostring(st):gsub("^load: ", "")), 2) end
    state.optimizer = st
    for name in pairs(used) do tensors[name] = nil end
  end
  if raw["partrain.loader_epoch"] then state.loader_epoch = math.tointeger(tonumber(raw["partrain.loader_epoch"])) end
  state.names = order
  return tensors, meta, state
end

--- pt.load_into(path, model[, {optimizer = opt, loader = handler, strict = true}]) -> meta
-- Restores the model (load_state_dict, or copies into a plain table of tensors), the optimizer
-- state and the loader's epoch, so training resumes exactly where the checkpoint was taken.
function M.load_into(path, model, opts)
  opts = opts or {}
  local tensors, meta, state = M.load(path)
  if type(model) == "table" and type(model.load_state_dict) == "function" then
    if opts.strict ~= nil then model:load_state_dict(tensors, {strict = opts.strict}) else model:load_state_dict(tensors) end
  elseif type(model) == "table" then
    for name, t in pairs(model) do
      local src = tensors[name]
      if not src then error(("load_into: '%s' has no tensor '%s'"):format(path, tostring(name)), 2) end
      if not is_tensor(t) or type(t.copy_) ~= "function" then
        error(("load_into: entry '%s' of the target is not a tensor with copy_"):format(tostring(name)), 2)
      end
      t:copy_(src)
    end
  else
    error("load_into: model must be a Module or a table of tensors", 2)
  end
  if opts.optimizer then
    if not state.optimizer then error(("load_into: '%s' holds no optimizer state"):format(path), 2) end
    opts.optimizer:load_state_dict(state.optimizer)
  end
  if opts.loader then
    if not state.loader_epoch then error(("load_into: '%s' holds no loader epoch"):format(path), 2) end
    opts.loader:set_epoch(state.loader_epoch)
  end
  return meta
end

-- pt.save & co. (init.lua loads this module on first use of one of them)
local docs = rawget(pt, "_docs")
if docs then
  docs[M.save] = "pt.save(path, model_or_tensors[, {optimizer = opt, meta = {...}, loader = handler}])\n"
    .. "  Write a safetensors checkpoint (via path..\".tmp\" and a rename). A model saves its\n"
    .. "  state_dict(); optimizer tensors go under \"optimizer.*\", the rest of its state as JSON metadata."
  docs[M.load] = "pt.load(path) -> tensors, meta, state\n  tensors: name -> Tensor; meta: your metadata;\n"
    .. "  state.optimizer: the optimizer's state_dict, state.loader_epoch. Hostile files raise errors."
  docs[M.load_into] = "pt.load_into(path, model[, {optimizer = opt, loader = handler}]) -> meta\n"
    .. "  Restore model, optimizer and loader epoch for an exact resume."
end

return M
