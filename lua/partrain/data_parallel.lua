-- partrain.data_parallel: nn.DataParallel, PyTorch's DataParallel with the customised options of
-- seed 003 (gather_to_one_device, inputs_are_scattered, except_keywords, sort_and_gather).
--
--   local dp = nn.DataParallel(model, {devices = {"cpu:1", "cpu:2"}})
--   local out = dp(x)            -- x {N, ...} is split into chunks of ceil(N/2) along dim 1
--   nn.cross_entropy(out, y):backward()   -- gradients of both replicas summed into model's
--
-- How it runs. A device "cpu:N" is worker N of a dispatcher pool (pt._Pool, one per Lua state,
-- shared by every DataParallel of that state): each worker owns a lua_State. Per call:
--   scatter   tensors are chunked along dim (ceil(N/n) per chunk, so fewer chunks than devices
--             is possible: only those devices run); tables are scattered recursively; anything
--             else goes to every replica. A chunk of a tensor that requires grad reaches its
--             replica as a fresh leaf, whose gradient comes back into the original.
--   apply     the module is sent to every used worker (tables deep-copied, tensors by
--             reference: parameters and buffers are the SAME tensors as the original's) and run
--             there on its chunk, all at once; the caller's grad mode applies.
--   gather    outputs are joined along dim, recursively through tables; 0-d tensors and numbers
--             become a vector with one entry per replica; strings, booleans, functions are kept
--             when every replica returned the same value, else become a per-device list.
--   backward  one node links the replicas' graphs (lib/data_parallel.h): backward() in the
--             caller runs all replicas' backward at once on the intra-op threads and adds their
--             parameter gradients into param.grad in replica order (deterministic).
-- BatchNorm: the replica of the first chunk updates the shared running statistics; the others
-- normalise with their own batch statistics and leave them alone (PyTorch's rule).
-- One device: the module is called directly (no scatter, no gather).
-- A replica's output that depends on a tensor computed by the caller with autograd (captured,
-- not passed as an argument) is not supported: pass such tensors as arguments.
local pt = require "partrain"
local nn = require "partrain.nn"

local M = {}

-- true inside a worker while it runs a replica other than the first (read by BatchNorm)
M.secondary_replica = false

local is_tensor, is_module = pt.is_tensor, nn.is_module

local function shape_str(t) return "{" .. table.concat(t:size(), ",") .. "}" end

-- Canonical key order, the same in every Lua state (pairs order is not): integer and float keys
-- ascending, then string keys sorted.
local function sorted_keys(t, what)
  local nums, strs = {}, {}
  for k in pairs(t) do
    local tk = type(k)
    if tk == "number" then nums[#nums + 1] = k
    elseif tk == "string" then strs[#strs + 1] = k
    else
      error(("DataParallel: %s: table keys must be numbers or strings (got a %s key)"):format(what, tk), 0)
    end
  end
  table.sort(nums)
  table.sort(strs)
  for _, s in ipairs(strs) do nums[#nums + 1] = s end
  return nums
end

local MAX_DEPTH = 64

-- every tensor of a packed list of values, in canonical order
local function walk_tensors(v, fn, depth, what)
  if is_tensor(v) then
    fn(v)
  elseif type(v) == "table" and not is_module(v) then
    if depth > MAX_DEPTH then
      error(("DataParallel: %s nests deeper than %d tables (a cycle?)"):format(what, MAX_DEPTH), 0)
    end
    for _, k in ipairs(sorted_keys(v, what)) do walk_tensors(v[k], fn, depth + 1, what) end
  end
end

-- ------------------------------------------------------------------ worker side

-- Runs in a worker: forward of one replica. Returns the packed outputs and the root of the
-- replica's graph: its one output that requires grad, or (several) their flat concatenation in
-- canonical order, or false.
function M._replica(model, secondary, grad, tag, seed, n, ...)
  M.secondary_replica = secondary
  -- random ops (dropout) replay with the caller's pt.manual_seed: each forward seeds replica i
  -- from one draw of the caller's generator
  pt.manual_seed(seed)
  -- every node of this replica's graph carries the tag, so that the caller frees the graph's
  -- saved tensors once its backward is done (a handle of an output may outlive it here)
  local prev_tag = pt._graph_tag(tag)
  local out
  if grad then
    out = table.pack(model(...))
  else
    out = table.pack(pt.no_grad(function(...) return model(...) end, ...))
  end
  M.secondary_replica = false
  if not grad then
    pt._graph_tag(prev_tag)
    return out, false
  end
  local parts = {}
  for i = 1, out.n do
    walk_tensors(out[i], function(t)
      if t.requires_grad then parts[#parts + 1] = t end
    end, 1, "the output")
  end
  local root = false
  if #parts == 1 then
    root = parts[1]
  elseif #parts > 1 then
    for i, t in ipairs(parts) do parts[i] = t:reshape(-1) end
    root = pt.cat(parts, 1)
  end
  pt._graph_tag(prev_tag)
  return out, root
end

-- what each value sent to a replica is, in messages about a value that cannot be sent
local names = {"the module", "the replica's rank", "the grad mode", "the graph tag", "the seed",
  "the number of arguments"}

-- sent to the workers as bytecode; resolves the worker's own copy of this module
local function replica_task(...)
  return require("partrain.data_parallel")._replica(...)
end

-- one dispatcher pool per Lua state, grown when a device index needs more workers
local shared = {pool = nil, n = 0}
local function get_pool(n)
  local p = shared.pool
  if p and not p:closed() and shared.n >= n then return p end
  if p then p:close() end
  shared.pool, shared.n = pt._Pool(n), n
  return shared.pool
end

-- ------------------------------------------------------------------ options

local OPTIONS = {devices = true, dim = true, output_device = true, gather_to_one_device = true,
  inputs_are_scattered = true, except_keywords = true, sort_and_gather = true}

local MAX_DEVICE = 256

-- "cpu:N" -> N; raises for anything else (cuda:N included: there is no GPU backend yet)
local function device_index(d, what)
  if type(d) ~= "string" then
    error(("DataParallel: %s must be a string like \"cpu:1\" (got %s)"):format(what, type(d)), 4)
  end
  local n = d:match("^cpu:(%d+)$")
  if n then
    n = math.tointeger(tonumber(n))
    if not n or n < 1 or n > MAX_DEVICE then
      error(("DataParallel: %s '%s': cpu devices are numbered 1..%d"):format(what, d, MAX_DEVICE), 4)
    end
    return n
  end
  if d == "cuda" or d:match("^cuda:%d+$") then
    local cuda = rawget(pt, "cuda")
    if type(cuda) == "table" and type(cuda.is_available) == "function" and cuda.is_available() then
      error(("DataParallel: %s '%s': cuda devices are not supported by DataParallel yet"):format(what, d), 4)
    end
    error(("DataParallel: %s '%s' is not available (partrain was built without a GPU backend or no GPU was found)")
      :format(what, d), 4)
  end
  error(("DataParallel: invalid %s '%s' (expected \"cpu:N\" or \"cuda:N\")"):format(what, d), 4)
end

local function check_bool(opts, k, def)
  local v = opts[k]
  if v == nil then return def end
  if type(v) ~= "boolean" then
    error(("DataParallel: %s must be a boolean (got %s)"):format(k, type(v)), 4)
  end
  return v
end

-- ------------------------------------------------------------------ the module

local DataParallel = nn.Module:extend("DataParallel")
M.DataParallel = DataParallel

function DataParallel:__init(module, opts)
  if not is_module(module) then
    error("DataParallel: expected a Module to wrap (got " .. type(module) .. ")", 3)
  end
  if opts ~= nil and type(opts) ~= "table" then
    error("DataParallel: options must be a table (got " .. type(opts) .. ")", 3)
  end
  opts = opts or {}
  for k in pairs(opts) do
    if not OPTIONS[k] then
      local names = {}
      for name in pairs(OPTIONS) do names[#names + 1] = name end
      table.sort(names)
      error(("DataParallel: unknown option '%s' (options: %s)"):format(tostring(k), table.concat(names, ", ")), 3)
    end
  end
  local devices = opts.devices
  if devices == nil then
    devices = {}
    for i = 1, pt._dp_cpu_count() do devices[i] = "cpu:" .. i end
  end
  if type(devices) ~= "table" or #devices == 0 then
    error("DataParallel: devices must be a non-empty list like {\"cpu:1\", \"cpu:2\"}", 3)
  end
  local ids, seen = {}, {}
  for i, d in ipairs(devices) do
    local n = device_index(d, "device " .. i)
    if seen[n] then error(("DataParallel: device '%s' is listed twice"):format(d), 3) end
    seen[n] = true
    ids[i] = n
  end
  local dim = opts.dim or 1
  if math.type(dim) ~= "integer" or dim < 1 then
    error("DataParallel: dim must be a positive integer (1-based), got " .. tostring(dim), 3)
  end
  local output_device = opts.output_device or devices[1]
  if output_device ~= "cpu" then device_index(output_device, "output_device") end
  local except = {}
  if opts.except_keywords ~= nil then
    if type(opts.except_keywords) ~= "table" then
      error("DataParallel: except_keywords must be a list of strings", 3)
    end
    for i, k in ipairs(opts.except_keywords) do
      if type(k) ~= "string" then
        error(("DataParallel: except_keywords[%d] must be a string (got %s)"):format(i, type(k)), 3)
      end
      except[k] = true
    end
  end
  self.module = module
  -- plain configuration (rawset: no parameters or buffers here)
  local sorted = {}
  for i, n in ipairs(ids) do sorted[i] = n end
  table.sort(sorted)
  rawset(self, "devices", {table.unpack(devices)})
  rawset(self, "device_ids", ids)        -- worker index of each listed device
  rawset(self, "_sorted_ids", sorted)    -- "device order" (ascending) for per-device lists
  rawset(self, "dim", dim)
  rawset(self, "output_device", output_device)
  rawset(self, "gather_to_one_device", check_bool(opts, "gather_to_one_device", true))
  rawset(self, "inputs_are_scattered", check_bool(opts, "inputs_are_scattered", false))
  rawset(self, "sort_and_gather", check_bool(opts, "sort_and_gather", false))
  rawset(self, "except_keywords", except)
end

function DataParallel:extra_repr()
  return "devices={" .. table.concat(self.devices, ", ") .. "}, dim=" .. self.dim
end

-- Scatter: replica i's argument lists, the number of replicas k and the inputs (tensors that
-- require grad) whose gradients come back through the chunk leaves.
local function scatter(self, args)
  local ndev, dim = #self.device_ids, self.dim
  local k
  local function count(v, what, depth)
    if is_tensor(v) then
      if v:dim() < dim then
        error(("DataParallel: cannot scatter %s of shape %s along dimension %d"):format(what, shape_str(v), dim), 0)
      end
      local size = v:size(dim)
      if size == 0 then
        error(("DataParallel: cannot scatter %s of shape %s: it is empty along dimension %d")
          :format(what, shape_str(v), dim), 0)
      end
      local cs = (size + ndev - 1) // ndev
      local c = (size + cs - 1) // cs
      k = k and math.min(k, c) or c
    elseif type(v) == "table" and not is_module(v) then
      if depth > MAX_DEPTH then
        error(("DataParallel: %s nests deeper than %d tables (a cycle?)"):format(what, MAX_DEPTH), 0)
      end
      for _, key in ipairs(sorted_keys(v, what)) do count(v[key], what .. "." .. tostring(key), depth + 1) end
    end
  end
  for a = 1, args.n do count(args[a], "argument " .. a, 1) end
  k = k or ndev
  local inputs = {}
  local function split(v)
    local outs = {}
    if is_tensor(v) then
      local size = v:size(dim)
      local cs = (size + ndev - 1) // ndev
      local entry
      local src = v
      if v.requires_grad then
        src = v:detach()
        entry = {orig = v, leaves = {}, starts = {}, dim = dim - 1}
        inputs[#inputs + 1] = entry
      end
      for i = 1, k do
        local start = (i - 1) * cs
        local c = src:narrow(dim, start + 1, math.min(cs, size - start))
        if entry then
          c:requires_grad_()
          entry.leaves[i], entry.starts[i] = c, start
        end
        outs[i] = c
      end
    elseif type(v) == "table" and not is_module(v) then
      local mt = getmetatable(v)
      for i = 1, k do outs[i] = setmetatable({}, mt) end
      for key, x in pairs(v) do
        local parts = split(x)
        for i = 1, k do outs[i][key] = parts[i] end
      end
    else
      for i = 1, k do outs[i] = v end
    end
    return outs
  end
  local per = {}
  for i = 1, k do per[i] = {n = args.n} end
  for a = 1, args.n do
    local parts = split(args[a])
    for i = 1, k do per[i][a] = parts[i] end
  end
  return per, k, inputs
end

-- inputs_are_scattered: argument a is a list whose i-th value goes to the i-th device (device
-- order). Tensors that require grad reach the replica as fresh leaves.
local function scattered(self, args)
  local ndev = #self.device_ids
  local k
  for a = 1, args.n do
    local v = args[a]
    if type(v) ~= "table" or is_module(v) or is_tensor(v) or #v == 0 then
      error(("DataParallel: inputs_are_scattered is set, so argument %d must be a non-empty per-device list (got %s)")
        :format(a, is_tensor(v) and "a tensor" or type(v)), 0)
    end
    if k and #v ~= k then
      error(("DataParallel: inputs_are_scattered: argument %d has %d per-device values but argument 1 has %d")
        :format(a, #v, k), 0)
    end
    k = #v
  end
  k = k or ndev
  if k > ndev then
    error(("DataParallel: inputs_are_scattered: %d per-device values but only %d devices"):format(k, ndev), 0)
  end
  local inputs = {}
  local function leafify(v, i, depth)
    if is_tensor(v) then
      if not v.requires_grad then return v end
      local leaf = v:detach():requires_grad_()
      local leaves = {}
      for j = 1, k do leaves[j] = false end
      leaves[i] = leaf
      inputs[#inputs + 1] = {orig = v, leaves = leaves}
      return leaf
    elseif type(v) == "table" and not is_module(v) then
      if depth > MAX_DEPTH then
        error(("DataParallel: an argument nests deeper than %d tables (a cycle?)"):format(MAX_DEPTH), 0)
      end
      local out = setmetatable({}, getmetatable(v))
      for key, x in pairs(v) do out[key] = leafify(x, i, depth + 1) end
      return out
    end
    return v
  end
  local per = {}
  for i = 1, k do
    per[i] = {n = args.n}
    for a = 1, args.n do per[i][a] = leafify(args[a][i], i, 1) end
  end
  return per, k, inputs
end

-- Gather: merge the replicas' packed outputs into one structure. Tensor positions are recorded
-- (in canonical order) and filled in after pt._dp_link.
local function merge_outputs(self, outs, k)
  local positions, slots = {}, {}
  local except = self.except_keywords
  local dim0 = self.dim - 1
  local function mismatch(path, what)
    error(("DataParallel: replicas returned different outputs at %s: %s"):format(path, what), 0)
  end
  local merge
  local function merge_table(vals, keys, path, per_device, depth, out)
    for _, key in ipairs(keys) do
      local sub = {}
      for i = 1, k do sub[i] = vals[i][key] end
      local pd = per_device or (type(key) == "string" and except[key] == true)
      local v, pos = merge(sub, path and (path .. "." .. tostring(key)) or ("output " .. tostring(key)), pd, depth + 1)
      if pos then slots[pos] = {out, key} end
      out[key] = v
    end
    return out
  end
  function merge(vals, path, per_device, depth)
    local v1 = vals[1]
    if is_tensor(v1) then
      for i = 2, k do
        if not is_tensor(vals[i]) then mismatch(path, "a tensor from replica 1, a " .. type(vals[i]) .. " from replica " .. i) end
      end
      positions[#positions + 1] = {pieces = vals, gather = not per_device, dim = dim0, name = path}
      return nil, #positions
    elseif type(v1) == "number" then
      local all_int = true
      for i = 1, k do
        if type(vals[i]) ~= "number" then mismatch(path, "a number from replica 1, a " .. type(vals[i]) .. " from replica " .. i) end
        all_int = all_int and math.type(vals[i]) == "integer"
      end
      if per_device then return {table.unpack(vals, 1, k)} end
      return pt.tensor({table.unpack(vals, 1, k)}, {dtype = all_int and "int64" or "float64"})
    elseif type(v1) == "table" and not is_module(v1) then
      if depth > MAX_DEPTH then
        error(("DataParallel: %s nests deeper than %d tables (a cycle?)"):format(path, MAX_DEPTH), 0)
      end
      local keys = sorted_keys(v1, path)
      for i = 2, k do
        local vi = vals[i]
        if type(vi) ~= "table" or is_tensor(vi) or is_module(vi) then
          mismatch(path, "a table from replica 1, a " .. type(vi) .. " from replica " .. i)
        end
        local ki = sorted_keys(vi, path)
        local same = #ki == #keys
        for j = 1, #keys do same = same and ki[j] == keys[j] end
        if not same then mismatch(path, "tables with different keys from replicas 1 and " .. i) end
      end
      return merge_table(vals, keys, path, per_device, depth, setmetatable({}, getmetatable(v1)))
    end
    local same = true
    for i = 2, k do same = same and rawequal(vals[i], v1) end
    if same then return v1 end
    return {table.unpack(vals, 1, k)}
  end
  local packs = {}
  local n = outs[1].n
  for i = 1, k do
    if outs[i].n ~= n then
      mismatch("the results", ("%d values from replica 1, %d from replica %d"):format(n, outs[i].n, i))
    end
    packs[i] = outs[i]
  end
  local keys = {}
  for j = 1, n do keys[j] = j end
  -- names read "output 1", "output 2.logits"
  local result = merge_table(packs, keys, nil, not self.gather_to_one_device, 1, {})
  return result, n, positions, slots
end

function DataParallel:forward(...)
  local ndev = #self.device_ids
  -- one device: no scatter, no replicate, no gather (PyTorch's and the seed's rule): the module
  -- runs right here on the arguments, and with inputs_are_scattered on each argument's entry for
  -- that device (a per-device list of one; a tensor from a one-device gather_to_one_device=false
  -- network, which returns its output as it is, passes unchanged)
  if ndev == 1 then
    if not self.inputs_are_scattered then return self.module(...) end
    local args = table.pack(...)
    for i = 1, args.n do
      local a = args[i]
      if type(a) == "table" and not pt.is_tensor(a) and getmetatable(a) == nil and #a == 1 then
        args[i] = a[1]
      end
    end
    return self.module(table.unpack(args, 1, args.n))
  end
  local args = table.pack(...)
  local per, k, inputs
  local devs = {}
  if self.inputs_are_scattered then
    per, k, inputs = scattered(self, args)
    for i = 1, k do devs[i] = self._sorted_ids[i] end
  else
    per, k, inputs = scatter(self, args)
    for i = 1, k do devs[i] = self.device_ids[i] end
  end
  -- apply: replica i on worker devs[i]; replica 1 owns the BatchNorm running statistics
  local grad = pt.is_grad_enabled()
  local maxdev = 0
  for i = 1, k do maxdev = math.max(maxdev, devs[i]) end
  local pool = get_pool(maxdev)
  local module = self.module
  local results = {}
  local seed = pt._draw_seed()
  local ok, err = pcall(function()
    local ids = {}
    for i = 1, k do
      local a = per[i]
      for j = #names + 1, 6 + a.n do names[j] = ("argument %d of forward"):format(j - 6) end
      ids[pool:submit_as("DataParallel", names, devs[i], replica_task, module, i > 1, grad,
        pt._graph_tag(), seed + i, a.n, table.unpack(a, 1, a.n))] = i
    end
    for _ = 1, k do
      local r = table.pack(pool:next())
      results[ids[r[1]]] = r
    end
  end)
  if not ok then
    while pool:pending() > 0 do pcall(pool.next, pool) end
    error(err, 0)
  end
  -- the first failing replica, in the order the devices were listed, fails the call
  local by_dev = {}
  for i = 1, k do by_dev[devs[i]] = i end
  for _, d in ipairs(self.device_ids) do
    local i = by_dev[d]
    local r = i and results[i]
    if r and not r[3] then
      local msg, tb = tostring(r[4]), r[5]
      error(("DataParallel: replica on cpu:%d failed: %s%s"):format(d, msg,
        (type(tb) == "string" and tb ~= "") and ("\n" .. tb) or ""), 0)
    end
  end
  -- output order: replica order, or ascending device order when sorting (sort_and_gather, the
  -- except_keywords gather and per-device lists sort, as the seed's sort_by_device does)
  local order = {}
  for i = 1, k do order[i] = i end
  if self.sort_and_gather or next(self.except_keywords) ~= nil or not self.gather_to_one_device then
    table.sort(order, function(a, b) return devs[a] < devs[b] end)
  end
  local outs, roots, names = {}, {}, {}
  for j, i in ipairs(order) do
    outs[j] = results[i][4]
    roots[j] = results[i][5] or false
    names[j] = "cpu:" .. devs[i]
  end
  for _, e in ipairs(inputs) do
    local leaves, starts = {}, e.starts and {} or nil
    for j, i in ipairs(order) do
      leaves[j] = e.leaves[i] or false
      if starts then starts[j] = e.starts[i] end
    end
    e.leaves, e.starts = leaves, starts
  end
  local result, n, positions, slots = merge_outputs(self, outs, k)
  local ok_link, exposed = pcall(pt._dp_link, roots, names, inputs, positions)
  if not ok_link then error((tostring(exposed):gsub("^[^\n]-:%d+: ", "")), 0) end
  for p, slot in pairs(slots) do slot[1][slot[2]] = exposed[p] end
  return table.unpack(result, 1, n)
end

local docs = pt._docs
if docs then
  docs[DataParallel] = [[nn.DataParallel(module[, {devices = {"cpu:1", "cpu:2"}, dim = 1, output_device = devices[1],
    gather_to_one_device = true, inputs_are_scattered = false, except_keywords = {}, sort_and_gather = false}])
  Runs module on chunks of the batch on several devices at once (cpu:N = dispatcher worker N; default: one
  per core) and gathers the outputs along dim; backward() runs every replica's backward at once and sums the
  gradients into module's parameters. BatchNorm running statistics come from the first replica.
  gather_to_one_device=false: each output tensor becomes a list of per-device tensors (device order);
  inputs_are_scattered=true: every argument is such a per-device list (no scatter);
  except_keywords={"k", ...}: table keys (at any depth) whose values stay per-device lists;
  sort_and_gather=true: gather in ascending device order instead of the order devices were listed.
  output_device: where gathered outputs live (checked; every cpu device shares the host's memory).
  One device calls module directly (no scatter or gather; with inputs_are_scattered each argument's
  per-device list of one is unwrapped). The module is sent to the workers on every call (parameters and
  buffers by reference), so train()/eval() and replaced submodules always take effect.]]
end

nn.DataParallel = DataParallel
return M
