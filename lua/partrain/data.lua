-- partrain.data: datasets, the DataHandler batch iterator and per-batch transforms.
--
-- A dataset is anything with get(i) (1-based) returning a sample and len():
--   {get = function(self, i) return {x, y} end, len = function(self) return n end}
-- A sample is a list {x, y}, a single tensor/number, or (PyTorch's default_collate) a dict
-- {x = ..., y = ...} or any nesting of lists and dicts of tensors and numbers. Datasets built here
-- are C-backed: they also have _collate(indices, first, count), which gathers a whole batch in
-- one C call.
--
-- Class labels are 1-BASED class indices everywhere in partrain (as in Torch7): data.idx adds 1
-- to the 0-based labels stored in IDX files, so Fashion-MNIST's classes are 1..10.
local pt = require "partrain"
local progress = require "partrain.progress"

local data = {}

local function is_tensor(x) return pt.is_tensor(x) end

-- call a C entry point; its errors are raised again at the level of our caller's caller
local function checked(fn, ...)
  local r = table.pack(pcall(fn, ...))
  if not r[1] then error((tostring(r[2]):gsub("^[^:\n]*:%d+: ", "")), 3) end
  return table.unpack(r, 2, r.n)
end

local function check_dataset(ds, fname)
  local t = type(ds)
  if (t ~= "table" and t ~= "userdata") or type(ds.get) ~= "function" or type(ds.len) ~= "function" then
    error(fname .. ": dataset must have get(i) and len() methods (got a " .. t .. ")", 3)
  end
end

local function shape_str(s)
  return "{" .. table.concat(s, ",") .. "}"
end

-- TensorDataset ---------------------------------------------------------------------------

-- i as a dataset index in 1..n, or an error at the caller's caller naming what is wrong
local function check_index(what, i, n, entry)
  local at = entry and (" (entry %d)"):format(entry) or ""
  if math.type(i) ~= "integer" then
    error(("%s: index %s%s is not an integer"):format(what, tostring(i), at), 3)
  end
  if i < 1 or i > n then
    error(("%s: index %d%s out of range 1..%d"):format(what, i, at, n), 3)
  end
end

local TensorDataset = {}
TensorDataset.__index = TensorDataset
TensorDataset.__name = "TensorDataset"

--- data.TensorDataset(x[, y, ...]): sample i is {x[i], y[i], ...} (rows along dimension 1).
function data.TensorDataset(...)
  local tensors = table.pack(...)
  if tensors.n == 0 then error("TensorDataset: expected at least one tensor", 2) end
  local n
  for k = 1, tensors.n do
    local t = tensors[k]
    if not is_tensor(t) then
      error(("TensorDataset: argument %d is a %s, not a tensor"):format(k, type(t)), 2)
    end
    if t:dim() < 1 then error(("TensorDataset: argument %d is a 0-d tensor"):format(k), 2) end
    if n and t:size(1) ~= n then
      error(("TensorDataset: tensors differ in size along dimension 1 (%d and %d)"):format(n, t:size(1)), 2)
    end
    n = t:size(1)
  end
  tensors.n = nil
  return setmetatable({tensors = tensors, n = n}, TensorDataset)
end

function TensorDataset:len() return self.n end
TensorDataset.__len = TensorDataset.len

local function gather_index(i)
  return pt.tensor({i}, {dtype = "int64"})
end

function TensorDataset:get(i)
  check_index("TensorDataset", i, self.n)
  local idx, out = gather_index(i), {}
  for k, t in ipairs(self.tensors) do
    if t:dim() == 1 then
      out[k] = t[i]
    else
      out[k] = pt._data_gather(t, idx, 1, 1, {sample = true})
    end
  end
  return out
end

function TensorDataset:__tostring() return ("TensorDataset(%d)"):format(self.n) end

function TensorDataset:_collate(indices, first, count)
  local out = {}
  for k, t in ipairs(self.tensors) do out[k] = pt._data_gather(t, indices, first, count) end
  return out
end

-- IDX (MNIST, Fashion-MNIST) --------------------------------------------------------------

local IdxDataset = {}
IdxDataset.__index = IdxDataset
IdxDataset.__name = "IdxDataset"

--- data.read_idx(path) -> Tensor with the file's contents and dtype (gzip or raw).
function data.read_idx(path)
  if type(path) ~= "string" then error("read_idx: path must be a string", 2) end
  return checked(pt._data_read_idx, path)
end

--- data.idx(images_path, labels_path[, {flatten = true, scale = 1/255}])
-- Images stay in memory as one uint8 tensor {N, H, W}; each batch is converted to float32 in
-- [0, 1] ({B, H*W} flattened by default, {B, 1, H, W} with flatten = false). Labels become
-- 1-based int64 class indices (file label + 1).
function data.idx(images_path, labels_path, opts)
  if type(images_path) ~= "string" then error("idx: images path must be a string", 2) end
  if labels_path ~= nil and type(labels_path) ~= "string" then error("idx: labels path must be a string", 2) end
  opts = opts or {}
  local images = checked(pt._data_read_idx, images_path)
  local isize = images:size()
  if #isize < 2 then
    error(("idx: '%s' holds a tensor of shape %s, not a list of samples"):format(images_path, shape_str(isize)), 2)
  end
  local labels
  if labels_path then
    local raw = checked(pt._data_read_idx, labels_path)
    if raw:dim() ~= 1 then
      error(("idx: '%s' holds a tensor of shape %s, labels must be 1-D"):format(labels_path, shape_str(raw:size())), 2)
    end
    if raw:size(1) ~= isize[1] then
      error(("idx: %d images but %d labels"):format(isize[1], raw:size(1)), 2)
    end
    labels = pt._data_class_index(raw, 1)
  end
  local sample_shape = {}
  for d = 2, #isize do sample_shape[#sample_shape + 1] = isize[d] end
  local flatten = opts.flatten ~= false
  local per = 1
  for _, s in ipairs(sample_shape) do per = per * s end
  local shape
  if flatten then
    shape = {per}
  elseif #sample_shape == 2 then
    shape = {1, sample_shape[1], sample_shape[2]}
  else
    shape = sample_shape
  end
  local float = images:dtype() ~= "float64" and "float32" or "float64"
  local scale = opts.scale or (images:dtype() == "uint8" and 1 / 255 or 1)
  return setmetatable({images = images, labels = labels, n = isize[1], shape = shape,
                       gather_opts = {dtype = float, scale = scale, shape = shape},
                       sample_opts = {dtype = float, scale = scale, shape = shape, sample = true}},
                      IdxDataset)
end

function IdxDataset:len() return self.n end
IdxDataset.__len = IdxDataset.len

function IdxDataset:get(i)
  check_index("idx", i, self.n)
  local x = pt._data_gather(self.images, gather_index(i), 1, 1, self.sample_opts)
  if self.labels then return {x, self.labels[i]} end
  return {x}
end

function IdxDataset:__tostring() return ("IdxDataset(%d)"):format(self.n) end

function IdxDataset:_collate(indices, first, count)
  local x = pt._data_gather(self.images, indices, first, count, self.gather_opts)
  if self.labels then return {x, pt._data_gather(self.labels, indices, first, count)} end
  return {x}
end

-- CSV -------------------------------------------------------------------------------------

--- data.csv(path[, {header = true, label = "name" | index | false, label_offset = 0}])
-- Fields may be quoted as in RFC 4180 ("New York, NY", "" for a quote inside, newlines too); a
-- leading UTF-8 byte order mark is skipped.
-- Numeric columns become float32 features {N, F}; the label column (default: the last one;
-- label = false for none) becomes int64 when all its values are integers (plus label_offset),
-- float32 otherwise, and words become class indices 1.. in order of first appearance
-- (ds.classes lists them). Returns a TensorDataset with fields features, labels, header, classes.
function data.csv(path, opts)
  if type(path) ~= "string" then error("csv: path must be a string", 2) end
  opts = opts or {}
  if type(opts) ~= "table" then error("csv: options must be a table, got " .. type(opts), 2) end
  for k in pairs(opts) do -- a misspelled option is an error, never ignored
    if k ~= "header" and k ~= "label" and k ~= "label_offset" then
      error(string.format("csv: unknown option '%s' (options: header, label, label_offset)", tostring(k)), 2)
    end
  end
  local header = opts.header
  if header == nil then header = true end
  local label = opts.label
  if label == nil then label = -1 end
  if label == false then label = nil end
  if label ~= nil and type(label) ~= "string" and math.type(label) ~= "integer" then
    error("csv: label must be a column name, a column index or false", 2)
  end
  local offset = opts.label_offset or 0
  if math.type(offset) ~= "integer" then error("csv: label_offset must be an integer", 2) end
  local features, labels, names, classes = checked(pt._data_read_csv, path, header, label, offset)
  local ds = labels and data.TensorDataset(features, labels) or data.TensorDataset(features)
  ds.features, ds.labels, ds.header, ds.classes = features, labels, names, classes
  return ds
end

-- Subset and random_split -----------------------------------------------------------------

local Subset = {}
Subset.__index = Subset
Subset.__name = "Subset"

--- data.Subset(dataset, indices): indices is a list or an int64 tensor of 1-based indices.
function data.Subset(ds, indices)
  check_dataset(ds, "Subset")
  local n = ds:len()
  local list = indices
  if is_tensor(indices) then list = indices:tolist() end
  if type(list) ~= "table" then error("Subset: indices must be a list or an int64 tensor", 2) end
  for k, i in ipairs(list) do check_index("Subset", i, n, k) end
  local t = #list > 0 and pt.tensor(list, {dtype = "int64"}) or nil
  return setmetatable({dataset = ds, indices = t, list = list, n = #list}, Subset)
end

function Subset:len() return self.n end
Subset.__len = Subset.len

function Subset:get(i)
  check_index("Subset", i, self.n)
  return self.dataset:get(self.list[i])
end

-- a dataset as printed inside another's form: its __tostring, else its size
local function dataset_str(ds)
  local mt = getmetatable(ds)
  if type(mt) == "table" and rawget(mt, "__tostring") then
    local ok, str = pcall(tostring, ds)
    if ok and type(str) == "string" and not str:find("\n") then return str end
  end
  local ok, n = pcall(ds.len, ds)
  return ok and (tostring(n) .. " samples") or "a dataset"
end

function Subset:__tostring() return ("Subset(%d of %s)"):format(self.n, dataset_str(self.dataset)) end

-- a Subset of a C-backed dataset is C-backed too
function Subset:_collate(indices, first, count)
  local inner = self.dataset._collate
  if not inner then return nil end
  return inner(self.dataset, pt._data_take(self.indices, indices, first, count), 1, count)
end

--- data.random_split(dataset, {n1, n2, ...}[, {seed = 42}]) -> Subset, Subset, ...
-- The sizes (integers >= 0) must add up to #dataset. A list of fractions in [0, 1] summing to 1
-- is also accepted (no Lua integer among them; integral floats such as {7.0, 3.0} are sizes
-- unless they sum to 1), as in PyTorch: each part gets floor(f * n) samples and the remainder
-- goes one by one to the parts in order.
function data.random_split(ds, sizes, opts)
  check_dataset(ds, "random_split")
  if type(sizes) ~= "table" or #sizes == 0 then error("random_split: sizes must be a non-empty list", 2) end
  opts = opts or {}
  if type(opts) ~= "table" then error("random_split: options must be a table", 2) end
  local seed = opts.seed or 42
  if math.type(seed) ~= "integer" then error("random_split: seed must be an integer, got " .. tostring(seed), 2) end
  local n = ds:len()
  local counts, total = {}, 0
  -- fractions: no integer among them, and a sum of 1 or a non-integral value ({7.0, 3.0} are sizes)
  local any_int, all_integral, sum = false, true, 0
  for k, s in ipairs(sizes) do
    if type(s) ~= "number" then
      error(("random_split: size %d must be a number, got a %s"):format(k, type(s)), 2)
    end
    if math.type(s) == "integer" then any_int = true end
    if not math.tointeger(s) then all_integral = false end
    sum = sum + s
  end
  local fractions = not any_int and (not all_integral or sum == 1)
  if fractions then
    local fsum = 0
    for k, f in ipairs(sizes) do
      if not (f >= 0 and f <= 1) then
        error(("random_split: fraction at index %d is not between 0 and 1 (got %s)"):format(k,
          f ~= f and "nan" or tostring(f)), 2)
      end
      fsum = fsum + f
    end
    if math.abs(fsum - 1) > 1e-9 then
      error(("random_split: fractions must add up to 1, got %.17g (sizes must be integers)"):format(fsum), 2)
    end
    for k, f in ipairs(sizes) do counts[k] = math.floor(f * n) end
    local rest = n
    for _, c in ipairs(counts) do rest = rest - c end
    for k = 1, rest do counts[(k - 1) % #counts + 1] = counts[(k - 1) % #counts + 1] + 1 end
  else
    for k, s in ipairs(sizes) do
      local c = math.tointeger(s)
      if not c or c < 0 then
        error(("random_split: size %d must be a non-negative integer, got %s"):format(k, tostring(s)), 2)
      end
      counts[k] = c
    end
  end
  for _, c in ipairs(counts) do total = total + c end
  if total ~= n then
    error(("random_split: sizes add up to %d but the dataset has %d samples"):format(total, n), 2)
  end
  local perm = pt._data_permutation(n, seed, 0, true):tolist()
  local out, pos = {}, 0
  for k, c in ipairs(counts) do
    local idx = table.move(perm, pos + 1, pos + c, 1, {})
    out[k] = data.Subset(ds, idx)
    pos = pos + c
  end
  return table.unpack(out)
end

-- DataHandler -----------------------------------------------------------------------------

local DataHandler = {}
DataHandler.__index = DataHandler
DataHandler.__name = "DataHandler"

local defaults = {batch = 128, shuffle = false, seed = 42, drop_last = false}

-- option -> nil when the value is fine, else what it must be
local handler_options = {
  batch = function(v) if math.type(v) ~= "integer" or v < 1 then return "a positive integer" end end,
  shuffle = function(v) if type(v) ~= "boolean" then return "a boolean" end end,
  seed = function(v) if math.type(v) ~= "integer" then return "an integer" end end,
  drop_last = function(v) if type(v) ~= "boolean" then return "a boolean" end end,
  transform = function(v) if type(v) ~= "function" then return "a function(x, y) -> x, y" end end,
  progress = function(v)
    if type(v) ~= "boolean" and type(v) ~= "string" then return "true, false or a description string" end
  end,
  log = function(v) if type(v) ~= "string" then return "a path string" end end,
}

local function value_str(v)
  if type(v) == "string" then return ("%q"):format(v) end
  if type(v) == "number" or type(v) == "boolean" then return tostring(v) end
  return "a " .. type(v)
end

-- checks an options table against allowed (name -> checker); errors at the caller's caller
local function check_options(fname, opts, allowed)
  local names = {}
  for k in pairs(allowed) do names[#names + 1] = k end
  table.sort(names)
  for k, v in pairs(opts) do
    local check = allowed[k]
    if not check then
      error(("%s: unknown option %s (options: %s)"):format(fname, type(k) == "string" and "'" .. k .. "'" or
        tostring(k), table.concat(names, ", ")), 3)
    end
    local want = check(v)
    if want then error(("%s: %s must be %s, got %s"):format(fname, k, want, value_str(v)), 3) end
  end
end

--- data.DataHandler(dataset[, {batch = 128, shuffle = false, seed = 42, drop_last = false,
--                               transform = fn(x, y) -> x, y, progress = nil|true|false|"desc",
--                               log = "metrics.jsonl"}])
-- handler:batches() iterates over one epoch of batches; every call reshuffles (seed, epoch).
-- Unknown options and values of the wrong type are errors.
function DataHandler:__tostring()
  local o = self.opts
  local parts = {"batch=" .. tostring(o.batch), "shuffle=" .. tostring(o.shuffle)}
  if o.shuffle and o.seed ~= defaults.seed then parts[#parts + 1] = "seed=" .. tostring(o.seed) end
  if o.drop_last then parts[#parts + 1] = "drop_last=true" end
  if o.transform then parts[#parts + 1] = "transform=<function>" end
  if self.epoch > 0 then parts[#parts + 1] = "epoch=" .. self.epoch end
  local ok, nb = pcall(self.len, self)
  parts[#parts + 1] = (ok and (nb .. (nb == 1 and " batch" or " batches")) or "batches") .. " of " .. dataset_str(self.dataset)
  return "DataHandler(" .. table.concat(parts, ", ") .. ")"
end

function data.DataHandler(ds, opts)
  check_dataset(ds, "DataHandler")
  opts = opts or {}
  if type(opts) ~= "table" then error("DataHandler: options must be a table", 2) end
  check_options("DataHandler", opts, handler_options)
  local o = {}
  for k, v in pairs(defaults) do o[k] = v end
  for k, v in pairs(opts) do o[k] = v end
  return setmetatable({dataset = ds, opts = o, batch = o.batch, epoch = 0}, DataHandler)
end

--- handler:len() / #handler: the number of batches per epoch.
function DataHandler:len()
  local n, b = self.dataset:len(), self.opts.batch
  if self.opts.drop_last then return n // b end
  return (n + b - 1) // b
end
DataHandler.__len = DataHandler.len

--- handler:set_epoch(k): the next batches() call runs epoch k + 1 (its shuffle); for resuming.
function DataHandler:set_epoch(k)
  if math.type(k) ~= "integer" or k < 0 then error("set_epoch: epoch must be a non-negative integer", 2) end
  self.epoch = k
end

-- Collation of samples from get(i), PyTorch's default_collate. A sample is a leaf (a tensor or
-- a number), a list {a, b, ...} (keys 1..n) or a dict {name = v, ...} (string keys) of samples,
-- nested; every sample of a batch has the structure of the first (other keys of later samples
-- are not read, as in PyTorch). The batch has that structure with each leaf stacked: tensors
-- into {B, ...}, numbers into int64 {B} (all integers) or float32 {B}. Messages name a sample by
-- its dataset index and the place in it by a key path (x, [2], x[2].y).

local function path_key(path, k)
  if math.type(k) == "integer" then return path .. "[" .. k .. "]" end
  if k:match("^[%a_][%w_]*$") then return path == "" and k or path .. "." .. k end
  return path .. ("[%q]"):format(k)
end

-- "list", n | "dict", sorted keys | nil, what is wrong
local function table_shape(t)
  local n, count, strs, other = #t, 0, nil, nil
  for k in next, t do
    count = count + 1
    if type(k) == "string" then
      strs = strs or {}
      strs[#strs + 1] = k
    elseif not (math.type(k) == "integer" and k >= 1 and k <= n) then
      other = other or k
    end
  end
  if strs and #strs < count then return nil, "mixing list entries and named keys" end
  if other ~= nil then
    return nil, ("whose keys are neither 1..n nor strings (key %s)"):format(tostring(other))
  end
  if strs then
    table.sort(strs)
    return "dict", strs
  end
  if count < n then return nil, "with holes (nil entries)" end
  return "list", n
end

local function describe(v)
  if v == nil then return "nothing" end
  if is_tensor(v) then return "a tensor" end
  if type(v) == "table" then
    local kind, info = table_shape(v)
    if kind == "list" then return info == 0 and "an empty table" or ("a list of %d"):format(info) end
    if kind == "dict" then return "a dict" end
    return "a table"
  end
  return "a " .. type(v)
end

-- "collate: sample 7 has <what> at key x, sample 3 <ref>" ("sample 7 is <what>" for the whole sample)
local function mismatch(idx, path, what, ref_idx, ref_what)
  if path == "" then
    return ("collate: sample %d is %s, sample %d %s"):format(idx, what, ref_idx, ref_what)
  end
  return ("collate: sample %d has %s at key %s, sample %d %s"):format(idx, what, path, ref_idx, ref_what)
end

local function not_collatable(idx, path, v, why)
  local what = describe(v)
  if type(v) == "table" then what = "a table " .. why end
  if path == "" then
    return ("collate: sample %d is %s (a sample is a tensor, a number, or a list or dict of them)"):format(idx, what)
  end
  return ("collate: sample %d has %s at key %s (a sample holds tensors, numbers, and lists or dicts of them)"):format(
    idx, what, path)
end

-- the structure of the first sample: {leaf = j} (column j) or {kind = "list"|"dict", n | keys, children}
local function build(s, idx, path, leaves)
  if is_tensor(s) or type(s) == "number" then
    leaves[#leaves + 1] = path
    return {leaf = #leaves, path = path, what = type(s) == "number" and "a number" or "a tensor"}
  end
  if type(s) ~= "table" then error(not_collatable(idx, path, s), 0) end
  local kind, info = table_shape(s)
  if not kind then error(not_collatable(idx, path, s, info), 0) end
  local node = {kind = kind, path = path, children = {}}
  if kind == "list" then
    node.n = info
    for i = 1, info do node.children[i] = build(s[i], idx, path_key(path, i), leaves) end
  else
    node.keys = info
    for i, k in ipairs(info) do node.children[i] = build(s[k], idx, path_key(path, k), leaves) end
  end
  return node
end

local function node_what(node)
  if node.kind == "list" then return node.n == 0 and "an empty table" or ("a list of %d"):format(node.n) end
  if node.kind == "dict" then return "a dict" end
  return node.what
end

-- s (sample idx) differs from the structure of node (first sample ref_idx): raise the message
local function diagnose(node, s, idx, ref_idx)
  local path = node.path
  if type(s) ~= "table" then
    if not is_tensor(s) and type(s) ~= "number" then error(not_collatable(idx, path, s), 0) end
    error(mismatch(idx, path, describe(s), ref_idx, node_what(node)), 0)
  end
  local kind, info = table_shape(s)
  if not kind then error(not_collatable(idx, path, s, info), 0) end
  if kind ~= node.kind or (kind == "list" and info ~= node.n) then
    error(mismatch(idx, path, describe(s), ref_idx, node_what(node)), 0)
  end
  -- a dict without one of the keys of the first sample (fill reads no others)
  for i, k in ipairs(node.keys) do
    if s[k] == nil then error(mismatch(idx, path_key(path, k), "nothing", ref_idx, node_what(node.children[i])), 0) end
  end
  error(mismatch(idx, path, describe(s), ref_idx, node_what(node)), 0) -- not reached: fill saw a difference
end

-- put the leaves of sample s (dataset index idx) into columns[.][pos]; leaf types are checked
-- when the columns are stacked. As in PyTorch, the keys of the first sample are the batch's:
-- a later sample must have them all (a list the same length), keys beyond them are not read.
local function fill(node, s, idx, ref_idx, columns, pos)
  local j = node.leaf
  if j then
    columns[j][pos] = s
    return
  end
  if type(s) ~= "table" then diagnose(node, s, idx, ref_idx) end
  local children = node.children
  if node.kind == "list" then
    local n = node.n
    if #s ~= n then diagnose(node, s, idx, ref_idx) end
    for i = 1, n do
      local v = s[i]
      if v == nil then diagnose(node, s, idx, ref_idx) end
      fill(children[i], v, idx, ref_idx, columns, pos)
    end
  else
    local keys = node.keys
    for i = 1, #keys do
      local v = s[keys[i]]
      if v == nil then diagnose(node, s, idx, ref_idx) end
      fill(children[i], v, idx, ref_idx, columns, pos)
    end
  end
end

local function assemble(node, stacked)
  if node.leaf then return stacked[node.leaf] end
  local out, children = {}, node.children
  if node.kind == "list" then
    for i = 1, node.n do out[i] = assemble(children[i], stacked) end
  else
    for i, k in ipairs(node.keys) do out[k] = assemble(children[i], stacked) end
  end
  return out
end

-- one batch from get(i): the list of values the iterator returns (see DataHandler:batches)
local function collate_samples(ds, perm, first, count)
  local ref_idx = perm[first]
  local s1 = ds:get(ref_idx)
  local leaves = {}
  local root = build(s1, ref_idx, "", leaves)
  local columns = {}
  for j = 1, #leaves do columns[j] = {} end
  local flat = root.kind == "list" and root.n > 0 -- {x, y, ...} of leaves: the common case
  if flat then
    for i = 1, root.n do
      if not root.children[i].leaf then flat = false end
    end
  end
  for k = 0, count - 1 do
    local idx = k == 0 and ref_idx or perm[first + k]
    local s = k == 0 and s1 or ds:get(idx)
    if flat and type(s) == "table" then
      local width = #leaves
      if #s ~= width then diagnose(root, s, idx, ref_idx) end
      for j = 1, width do
        local v = s[j]
        if v == nil then diagnose(root, s, idx, ref_idx) end
        columns[j][k + 1] = v
      end
    else
      fill(root, s, idx, ref_idx, columns, k + 1)
    end
  end
  local stacked = {}
  for j = 1, #leaves do stacked[j] = pt._data_stack(columns[j], perm, first, leaves[j]) end
  if root.leaf then return {stacked[1]} end -- a tensor or number sample: one value
  if flat then return stacked end
  -- a list sample gives its fields as values; a dict sample (and an empty table) one table
  if root.kind == "list" and root.n > 0 then return assemble(root, stacked) end
  return {assemble(root, stacked)}
end

-- one batch: the list of values the iterator returns
function DataHandler:_batch(perm, first, count)
  local ds = self.dataset
  local cols = ds._collate and ds._collate(ds, perm, first, count)
  if not cols then cols = collate_samples(ds, perm, first, count) end
  return cols
end

local function progress_setting(self, bopts)
  local p = bopts.progress
  if p == nil then p = self.opts.progress end
  return p
end

local batches_options = {progress = handler_options.progress, log = handler_options.log}

--- handler:batches([{progress = nil|true|false|"desc", log = path}]) -> iterator of x, y, ...
-- One epoch: `for x, y in loader:batches() do ... end`. Calling the iterator again after it
-- ended starts a new (reshuffled) epoch. Shows progress on a TTY (see partrain.progress);
-- report the loss with loader:report(loss) to see it on the bar.
-- What one step returns follows the samples' structure (see collate_samples above): a list
-- sample {x, y, ...} gives its fields batched, as several values (x, y, ...); a tensor or number
-- sample one batch tensor; a dict sample {x = ..., y = ...} (and an empty table) ONE table with
-- the same keys, batched: `for b in loader:batches() do model(b.x) ... end`. The transform
-- receives these values (a dict batch: the one table) and returns them.
function DataHandler:batches(bopts)
  bopts = bopts or {}
  if type(bopts) ~= "table" then error("batches: options must be a table", 2) end
  check_options("batches", bopts, batches_options)
  local n = self.dataset:len()
  local nb = self:len()
  local B = self.opts.batch
  local transform = self.opts.transform
  local perm, step, bar
  -- while the loop runs, a first Ctrl-C waits for the current step (host/state.h)
  local soft = false
  local function soft_mode(on)
    if on ~= soft then soft = on; pt._soft_interrupt(on) end
  end
  local closer = setmetatable({}, {__close = function() soft_mode(false) end})
  local function start()
    soft_mode(true)
    self.epoch = self.epoch + 1
    perm = pt._data_permutation(n, self.opts.seed, self.epoch - 1, self.opts.shuffle)
    step = 0
    bar = progress.for_epoch(progress_setting(self, bopts), {
      total = nb, desc = "epoch " .. self.epoch, epoch = self.epoch,
      log = bopts.log or self.opts.log})
    self._bar = bar
  end
  start()
  local finished = false
  return function()
    if finished then
      finished = false
      start()
    end
    if pt._data_interrupted() then
      if bar then bar:close(true) end
      self._bar = nil
      soft_mode(false)
      error("interrupted", 2)
    end
    if step >= nb then
      if bar then bar:close() end
      self._bar = nil
      finished = true
      soft_mode(false)
      return nil
    end
    step = step + 1
    local first = (step - 1) * B + 1
    local count = math.min(B, n - first + 1)
    local cols = self:_batch(perm, first, count)
    if transform then
      local rest = table.move(cols, 3, #cols, 1, {})
      local x, y = transform(cols[1], cols[2], table.unpack(rest))
      if x == nil then
        error("DataHandler: the transform returned nil; it must return the batch (x, y, ...)", 2)
      end
      cols[1], cols[2] = x, y
    end
    if bar then bar:step(count) end
    return table.unpack(cols)
  end, nil, nil, closer
end

--- handler:next_batch() -> x, y: the rotta_rs style; wraps around to a new epoch after the
-- last batch, never ends.
function DataHandler:next_batch()
  if not self._iter then self._iter = self:batches({progress = false}) end
  local r = table.pack(self._iter())
  if r[1] == nil then r = table.pack(self._iter()) end
  if r[1] == nil then error("next_batch: the dataset is empty", 2) end
  return table.unpack(r, 1, r.n)
end

--- handler:report(loss) or handler:report{loss = v, ...}: values shown on the progress bar
-- (running mean) and written to the metrics log. Cheap when there is no bar.
function DataHandler:report(values)
  local bar = self._bar
  if not bar then return end
  bar:report(values)
end

function DataHandler:par_by_sample(model, n, fn, opts) return require("partrain.par").par_by_sample(self, model, n, fn, opts) end

-- transforms ------------------------------------------------------------------------------

local transforms = {}
data.transforms = transforms

-- C, H, W of a batch of images: {B, C, H, W}, {B, H, W}, or flattened with shape = {C, H, W}/{H, W}
local function image_dims(x, shape, fname)
  if shape then
    if #shape == 2 then return 1, shape[1], shape[2], true end
    if #shape == 3 then return shape[1], shape[2], shape[3], true end
    error(fname .. ": shape must be {H, W} or {C, H, W}", 3)
  end
  local s = x:size()
  if #s == 4 then return s[2], s[3], s[4], false end
  if #s == 3 then return 1, s[2], s[3], false end
  error(("%s: batch of shape %s: give the image shape of flattened images with {shape = {C, H, W}}"):format(
    fname, shape_str(s)), 3)
end

--- transforms.normalize(mean, std[, {shape = {C, H, W}}]): (x - mean) / std in place, per channel
-- when mean/std are lists (x {B, C, ...} or flattened with shape), else for every value.
function transforms.normalize(mean, std, opts)
  opts = opts or {}
  local nstats = type(mean) == "table" and #mean or 1
  return function(x, y, ...)
    local C = 1
    if nstats > 1 then
      if opts.shape then C = opts.shape[1] elseif x:dim() >= 3 then C = x:size(2) else C = nstats end
    end
    pt._data_normalize_(x, C, mean, std)
    return x, y, ...
  end
end

--- transforms.one_hot(num_classes): y (1-based class indices) -> float32 {B, num_classes}
function transforms.one_hot(num_classes)
  if math.type(num_classes) ~= "integer" or num_classes < 1 then
    error("one_hot: num_classes must be a positive integer", 2)
  end
  return function(x, y, ...) return x, pt._data_one_hot(y, num_classes), ... end
end

--- transforms.random_flip([p = 0.5][, {shape = {C, H, W}}]): mirror each image left-right with
-- probability p (pt.manual_seed controls the draws).
function transforms.random_flip(p, opts)
  if type(p) == "table" then p, opts = p.p, p end
  p = p or 0.5
  if type(p) ~= "number" or p < 0 or p > 1 then error("random_flip: p must be in [0, 1]", 2) end
  opts = opts or {}
  return function(x, y, ...)
    local C, H, W = image_dims(x, opts.shape, "random_flip")
    pt._data_random_flip_(x, C, H, W, p)
    return x, y, ...
  end
end

--- transforms.random_crop(size[, padding = 0][, {shape = {C, H, W}}]): zero-pad by padding and
-- take a random size x size window of each image -> {B, C, size, size} (flattened in, flattened out).
function transforms.random_crop(size, padding, opts)
  if type(padding) == "table" then padding, opts = nil, padding end
  padding = padding or 0
  opts = opts or {}
  if math.type(size) ~= "integer" or size < 1 then error("random_crop: size must be a positive integer", 2) end
  if math.type(padding) ~= "integer" or padding < 0 then
    error("random_crop: padding must be a non-negative integer", 2)
  end
  return function(x, y, ...)
    local C, H, W, flat = image_dims(x, opts.shape, "random_crop")
    return pt._data_random_crop(x, C, H, W, size, padding, flat), y, ...
  end
end

--- transforms.compose(t1, t2, ...): apply in order.
function transforms.compose(...)
  local list = table.pack(...)
  for k = 1, list.n do
    if type(list[k]) ~= "function" then error(("compose: transform %d is not a function"):format(k), 2) end
  end
  return function(...)
    local r = table.pack(...)
    for k = 1, list.n do r = table.pack(list[k](table.unpack(r, 1, r.n))) end
    return table.unpack(r, 1, r.n)
  end
end

-- help texts ------------------------------------------------------------------------------

local docs = rawget(pt, "_docs")
if docs then
  local D = {
    [data.TensorDataset] = "data.TensorDataset(x[, y, ...]) -> dataset; sample i is {x[i], y[i], ...} (rows along dim 1).",
    [data.read_idx] = "data.read_idx(path) -> Tensor holding an IDX file (gzip or raw) with its own dtype.",
    [data.idx] = "data.idx(images, labels[, {flatten=true}]) -> dataset of an IDX image/label pair (MNIST, Fashion-MNIST).\n"
      .. "  Images stay uint8 in memory; batches are float32 in [0,1], {B,H*W} (flatten=false: {B,1,H,W}).\n"
      .. "  Labels are 1-BASED class indices: file label + 1.",
    [data.csv] = "data.csv(path[, {header=true, label=-1|index|\"name\"|false, label_offset=0}]) -> dataset\n"
      .. "  float32 features {N,F}; integer labels int64 (+label_offset), word labels -> classes 1.. (ds.classes).\n"
      .. "  RFC 4180 quoting (\"New York, NY\", \"\" for a quote); a UTF-8 byte order mark is skipped.",
    [data.Subset] = "data.Subset(dataset, indices) -> the samples at the given 1-based indices.",
    [TensorDataset] = "data.TensorDataset_class: the class of data.TensorDataset(x, y, ...) datasets (and of data.csv's);\n"
      .. "  ds:get(i) -> {x[i], y[i], ...}, ds:len() / #ds; ds.tensors holds the tensors.",
    [TensorDataset.get] = "ds:get(i) -> sample i (1-based): {x[i], y[i], ...}, one entry per tensor.",
    [TensorDataset.len] = "ds:len() -> number of samples (also #ds).",
    [Subset] = "data.Subset objects (data.Subset, data.random_split): ds:get(i) is dataset:get(indices[i]); ds:len() / #ds.",
    [Subset.get] = "subset:get(i) -> sample indices[i] of the underlying dataset (i 1-based).",
    [Subset.len] = "subset:len() -> number of indices (also #subset).",
    [IdxDataset] = "data.idx datasets (IDX images and labels): ds:get(i) -> {image, label}, ds:len() / #ds.",
    [IdxDataset.get] = "ds:get(i) -> {image, label} of sample i (1-based; the image float, the label a 1-based class index).",
    [IdxDataset.len] = "ds:len() -> number of images (also #ds).",
    [DataHandler] = "data.DataHandler_class: the class of data.DataHandler(dataset, opts) loaders; help(data.DataHandler) for the options.\n"
      .. "  for x, y in loader:batches() do ... end; #loader batches per epoch; loader.dataset, loader.epoch.",
    [data.random_split] = "data.random_split(dataset, {n1, n2, ...}[, {seed=42}]) -> Subset, Subset, ... (sizes or fractions).",
    [data.DataHandler] = "data.DataHandler(dataset[, {batch=128, shuffle=false, seed=42, drop_last=false, transform=fn, progress=, log=}])\n"
      .. "  for x, y in loader:batches() do ... end  -- one epoch; each call reshuffles (seed, epoch)\n"
      .. "  #loader batches per epoch; loader:report(loss) shows it on the progress bar; loader:next_batch() wraps around;\n"
      .. "  loader:set_epoch(k) for resuming; loader:par_by_sample(model, n, fn) runs samples on n threads.\n"
      .. "  Samples from get(i) may be tensors, numbers, lists or dicts of them, nested (PyTorch's default_collate);\n"
      .. "  a list sample gives x, y, ... per step, a dict sample one table: for b in loader:batches() do f(b.x, b.y) end.",
    [DataHandler.batches] = "loader:batches([{progress=nil|true|false|\"desc\", log=path}]) -> iterator of x, y (one epoch);\n"
      .. "  of one table per step for dict samples.",
    [DataHandler.report] = "loader:report(loss | {name=value}) -> running means on the progress bar and in the metrics log.",
    [DataHandler.next_batch] = "loader:next_batch() -> x, y; wraps around to a new epoch after the last batch.",
    [DataHandler.set_epoch] = "loader:set_epoch(k): the next batches() call runs epoch k+1 (its shuffle).",
    [DataHandler.len] = "loader:len() -> batches per epoch (also #loader).",
    [DataHandler.par_by_sample] = "loader:par_by_sample(model, n, fn[, opts]) -> losses, model\n"
      .. "  fn(sample, model) on n threads, one window of n samples per call; gradients summed per window.\n"
      .. "  opts: windows=k | epoch=true, after_window=f(losses), step=optim.SGD (fused step),\n"
      .. "  read_in_workers=true (workers call dataset:get themselves), refresh_model=true.\n"
      .. "  Every rule: lua/partrain/par.lua.",
    [transforms] = "data.transforms: per-batch transforms for DataHandler's transform option: fn(x, y, ...) -> x, y, ...\n"
      .. "  data.DataHandler(ds, {transform = transforms.compose(transforms.random_flip(), transforms.normalize(m, s))})",
    [transforms.normalize] = "data.transforms.normalize(mean, std[, {shape={C,H,W}}]) -> (x-mean)/std per channel, in place.",
    [transforms.one_hot] = "data.transforms.one_hot(num_classes) -> y (1-based) becomes float32 {B, num_classes}.",
    [transforms.random_flip] = "data.transforms.random_flip([p=0.5][, {shape={C,H,W}}]) -> mirror images left-right.",
    [transforms.random_crop] = "data.transforms.random_crop(size[, padding=0][, {shape={C,H,W}}]) -> random size x size windows.",
    [transforms.compose] = "data.transforms.compose(t1, t2, ...) -> one transform applying them in order.",
  }
  for f, text in pairs(D) do docs[f] = text end
end

data.DataHandler_class = DataHandler
data.TensorDataset_class = TensorDataset

return data
