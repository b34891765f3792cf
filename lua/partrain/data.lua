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

-- an iterable dataset (torch's IterableDataset): iter() gives an iterator of samples; no get(i)
local function is_iterable(ds)
  local t = type(ds)
  return (t == "table" or t == "userdata") and type(ds.iter) == "function" and ds.get == nil
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
  if type(opts) ~= "table" then error("idx: options must be a table, got " .. type(opts), 2) end
  for k in pairs(opts) do
    if k ~= "flatten" and k ~= "scale" then
      error(("idx: unknown option '%s' (options: flatten, scale)"):format(tostring(k)), 2)
    end
  end
  if opts.scale ~= nil and type(opts.scale) ~= "number" then
    error("idx: scale must be a number, got " .. type(opts.scale), 2)
  end
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
      error(("idx: '%s' has %d images but '%s' %d labels"):format(images_path, isize[1], labels_path, raw:size(1)), 2)
    end
    if raw:dtype() == "float32" or raw:dtype() == "float64" then
      error(("idx: '%s' holds %s labels; labels must be integers"):format(labels_path, raw:dtype()), 2)
    end
    local i = raw:numel() > 0 and raw:argmin():item()
    if i and raw[i] < 0 then -- they become 1-based class indices
      error(("idx: '%s' holds a negative label (%d at index %d); labels are classes 0, 1, ..."):format(
        labels_path, raw[i], i), 2)
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

-- Dataset: a base class for datasets written in Lua (torch.utils.data.Dataset) ---------------

-- cls as a subclass of base: base's methods (extend too) when cls lacks them, cls(...) a new
-- instance through cls.__init
local function class_of(base, cls)
  return setmetatable(cls, {__index = base, __call = function(c, ...)
    local obj = setmetatable({}, c)
    if c.__init then c.__init(obj, ...) end
    return obj
  end})
end

local Dataset = {__name = "Dataset"}
Dataset.__index = Dataset
data.Dataset = Dataset

--- data.Dataset:extend("Name") -> a class: define get(i) and len() (and __init(...)), then
-- Name(...) makes one; #ds is ds:len(), ds[i] is ds:get(i), ds1 + ds2 a ConcatDataset.
function Dataset:extend(name)
  if type(name) ~= "string" then error("Dataset:extend: expected a class name (string), got " .. type(name), 2) end
  local cls = {__name = name}
  cls.__index = function(obj, k)
    if math.type(k) == "integer" then return obj:get(k) end
    return cls[k]
  end
  cls.__len = function(obj) return obj:len() end
  cls.__add = function(a, b) return data.ConcatDataset({a, b}) end
  cls.__tostring = function(obj)
    local ok, n = pcall(obj.len, obj)
    return name .. "(" .. (ok and tostring(n) or "?") .. ")"
  end
  return class_of(self, cls)
end
function Dataset:get(_)
  error(("%s: get(i) is not defined (define %s:get(i) returning sample i)"):format(self.__name or "Dataset",
    self.__name or "Dataset"), 2)
end
function Dataset:len()
  error(("%s: len() is not defined (define %s:len() returning the number of samples)"):format(
    self.__name or "Dataset", self.__name or "Dataset"), 2)
end

-- IterableDataset: a base class for streams of samples (torch.utils.data.IterableDataset) -----

local IterableDataset = {__name = "IterableDataset"}
IterableDataset.__index = IterableDataset
data.IterableDataset = IterableDataset

--- data.IterableDataset:extend("Name") -> a class: define iter() returning an iterator of samples
-- (nil at the end), and __init(...); len() is optional (the loader's #loader needs it).
function IterableDataset:extend(name)
  if type(name) ~= "string" then
    error("IterableDataset:extend: expected a class name (string), got " .. type(name), 2)
  end
  local cls = {__name = name}
  cls.__index = cls
  cls.__tostring = function() return name .. "(iterable)" end
  return class_of(self, cls)
end
function IterableDataset:iter()
  error(("%s: iter() is not defined (define %s:iter() returning an iterator of samples)"):format(
    self.__name or "IterableDataset", self.__name or "IterableDataset"), 2)
end

-- ConcatDataset: datasets one after another (torch's) ---------------------------------------

local ConcatDataset = {}
ConcatDataset.__index = ConcatDataset
ConcatDataset.__name = "ConcatDataset"

--- data.ConcatDataset({ds1, ds2, ...}): sample i of the concatenation.
function data.ConcatDataset(list)
  if type(list) ~= "table" or #list == 0 then error("ConcatDataset: expected a non-empty list of datasets", 2) end
  local ends, n = {}, 0
  for k, ds in ipairs(list) do
    local t = type(ds)
    if (t ~= "table" and t ~= "userdata") or type(ds.get) ~= "function" or type(ds.len) ~= "function" then
      error(("ConcatDataset: dataset %d must have get(i) and len() methods (got a %s)"):format(k, t), 2)
    end
    n = n + ds:len()
    ends[k] = n
  end
  return setmetatable({datasets = list, cumulative_sizes = ends, n = n}, ConcatDataset)
end

function ConcatDataset:len() return self.n end
ConcatDataset.__len = ConcatDataset.len

function ConcatDataset:get(i)
  check_index("ConcatDataset", i, self.n)
  local ends = self.cumulative_sizes
  local lo, hi = 1, #ends -- the first dataset whose end is at or after i
  while lo < hi do
    local mid = (lo + hi) // 2
    if ends[mid] >= i then hi = mid else lo = mid + 1 end
  end
  return self.datasets[lo]:get(i - (lo > 1 and ends[lo - 1] or 0))
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

local defaults = {batch = 128, shuffle = false, seed = 42, drop_last = false, workers = 0}
local MAX_WORKERS = 256 -- pt._Pool's limit
local PENDING_PER_WORKER = 4 -- a pool blocks submit beyond 4 outstanding tasks per worker

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
  workers = function(v)
    if math.type(v) ~= "integer" or v < 0 or v > MAX_WORKERS then return "an integer from 0 to " .. MAX_WORKERS end
  end,
  prefetch = function(v) if math.type(v) ~= "integer" or v < 1 then return "a positive integer" end end,
  sampler = function(v)
    if type(v) ~= "table" or type(v.indices) ~= "function" or type(v.len) ~= "function" then
      return "a sampler (indices(epoch, seed) and len() methods, as data.WeightedRandomSampler)"
    end
  end,
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
--                               log = "metrics.jsonl", workers = 0, prefetch = 2 * workers}])
-- handler:batches() iterates over one epoch of batches; every call reshuffles (seed, epoch).
-- Unknown options and values of the wrong type are errors.
--
-- workers = n > 0 (PyTorch's DataLoader(num_workers = n)): each batch is read (dataset:get),
-- collated and transformed on one of n worker threads of the loader's own pool (pt._Pool, each
-- worker a Lua state of its own), up to prefetch batches in flight ahead of the consumer, and
-- delivered in order. The batches are exactly those of workers = 0 (see "Randomness" below);
-- their tensors come back by reference, never copied. The dataset and the transform are sent
-- to every worker once, when the loader is created (tensors by reference, Lua tables and
-- closures copied: changes made to them afterwards, or by get() inside a worker, are not seen
-- by the others, as with PyTorch's worker processes); a value that cannot be sent fails here,
-- with the transfer's message naming it. The workers stop on loader:close(), when the loader
-- is collected, or when the state closes.
--
-- Randomness: every batch is made (read, collated, transformed) with pt's generator seeded
-- from (seed, epoch, batch number), on the worker as in the caller, and the caller's generator
-- is put back afterwards; so random transforms (and pt.rand in get) give the same batches
-- whatever workers is, every run, and the training loop's own draws (dropout, initialisation)
-- do not depend on the loader. Lua's math.random is not seeded this way.
function DataHandler:__tostring()
  local o = self.opts
  local parts = {"batch=" .. tostring(o.batch), "shuffle=" .. tostring(o.shuffle)}
  if o.shuffle and o.seed ~= defaults.seed then parts[#parts + 1] = "seed=" .. tostring(o.seed) end
  if o.drop_last then parts[#parts + 1] = "drop_last=true" end
  if o.transform then parts[#parts + 1] = "transform=<function>" end
  if o.workers > 0 then
    parts[#parts + 1] = "workers=" .. o.workers
    if o.prefetch ~= 2 * o.workers then parts[#parts + 1] = "prefetch=" .. o.prefetch end
    if self._closed then parts[#parts + 1] = "closed" end
  end
  if self.epoch > 0 then parts[#parts + 1] = "epoch=" .. self.epoch end
  local ok, nb = pcall(self.len, self)
  parts[#parts + 1] = (ok and (nb .. (nb == 1 and " batch" or " batches")) or "batches") .. " of " .. dataset_str(self.dataset)
  return "DataHandler(" .. table.concat(parts, ", ") .. ")"
end

local start_workers -- below, with the rest of the parallel loading

function data.DataHandler(ds, opts)
  local iterable = is_iterable(ds)
  if not iterable then check_dataset(ds, "DataHandler") end
  opts = opts or {}
  if type(opts) ~= "table" then error("DataHandler: options must be a table", 2) end
  check_options("DataHandler", opts, handler_options)
  local o = {}
  for k, v in pairs(defaults) do o[k] = v end
  for k, v in pairs(opts) do o[k] = v end
  if o.workers == 0 then
    if o.prefetch ~= nil then
      error(("DataHandler: prefetch = %d needs workers > 0 (batches are read in the caller with workers = 0)"):format(
        o.prefetch), 2)
    end
  else
    o.prefetch = o.prefetch or 2 * o.workers
    if o.prefetch > PENDING_PER_WORKER * o.workers then
      error(("DataHandler: prefetch must be at most %d * workers (%d) with workers = %d, got %d"):format(
        PENDING_PER_WORKER, PENDING_PER_WORKER * o.workers, o.workers, o.prefetch), 2)
    end
  end
  if o.sampler and o.shuffle then
    error("DataHandler: sampler option is mutually exclusive with shuffle (the sampler orders the samples)", 2)
  end
  if iterable then -- as torch's DataLoader over an IterableDataset: the dataset's own order
    if o.shuffle then error("DataHandler: an iterable dataset (iter()) has its own order: shuffle must be false", 2) end
    if o.sampler then error("DataHandler: an iterable dataset (iter()) takes no sampler", 2) end
    if o.workers > 0 then
      error("DataHandler: workers > 0 needs a map-style dataset (get(i), len()); an iterable dataset is read in "
        .. "the caller", 2)
    end
  end
  local self = setmetatable({dataset = ds, opts = o, batch = o.batch, epoch = 0, _iterable = iterable}, DataHandler)
  if o.workers > 0 then start_workers(self) end
  return self
end

-- data.DataLoader: PyTorch's names for a DataHandler's options (batch_size defaults to 1 there);
-- the options PyTorch has and partrain does not are refused by name, not ignored
local loader_options = {batch_size = "batch", shuffle = "shuffle", sampler = "sampler", num_workers = "workers",
  drop_last = "drop_last", seed = "seed", transform = "transform", progress = "progress", log = "log"}
local loader_refused = {
  collate_fn = "samples are collated as PyTorch's default_collate; give transform = fn(x, y) -> x, y for per-batch work",
  batch_sampler = "give sampler (it orders the samples) with batch_size and drop_last",
  generator = "give seed = n (shuffling and samplers draw from (seed, epoch))",
  worker_init_fn = "the workers are Lua states of their own; the dataset and transform are sent to them once",
  timeout = "a worker's error comes back to the caller instead",
  multiprocessing_context = "the workers are threads",
}

function data.DataLoader(ds, opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("DataLoader: options must be a table", 2) end
  local o = {batch = 1}
  for k, v in pairs(opts) do
    if loader_refused[k] then
      error(("DataLoader: %s is not supported (%s)"):format(k, loader_refused[k]), 2)
    elseif loader_options[k] then
      local want = handler_options[loader_options[k]](v)
      if want then error(("DataLoader: %s must be %s, got %s"):format(k, want, value_str(v)), 2) end
      o[loader_options[k]] = v
    elseif k ~= "prefetch_factor" and k ~= "pin_memory" and k ~= "persistent_workers" then
      error(("DataLoader: unknown option '%s'"):format(tostring(k)), 2)
    end
  end
  local workers = opts.num_workers or 0
  for _, k in ipairs({"pin_memory", "persistent_workers"}) do
    if opts[k] ~= nil and type(opts[k]) ~= "boolean" then
      error(("DataLoader: %s must be a boolean, got %s"):format(k, value_str(opts[k])), 2)
    end
  end
  -- pin_memory: batches are ordinary CPU memory already; persistent_workers: the workers live as
  -- long as the loader anyway (both need workers in PyTorch, as prefetch_factor)
  if opts.persistent_workers and workers == 0 then
    error("DataLoader: persistent_workers option needs num_workers > 0", 2)
  end
  local pf = opts.prefetch_factor
  if pf ~= nil then
    if workers == 0 then
      error("DataLoader: prefetch_factor option could only be specified with num_workers > 0", 2)
    end
    if math.type(pf) ~= "integer" or pf < 1 or pf > PENDING_PER_WORKER then
      error(("DataLoader: prefetch_factor must be an integer from 1 to %d, got %s"):format(PENDING_PER_WORKER,
        value_str(pf)), 2)
    end
    o.prefetch = pf * workers
  end
  if not is_iterable(ds) then check_dataset(ds, "DataLoader") end
  local ok, r = pcall(data.DataHandler, ds, o)
  if not ok then error((tostring(r):gsub("^[^\n]-:%d+: ", ""):gsub("^DataHandler:", "DataLoader:")), 2) end
  return r
end

-- loader() is loader:batches(): for x, y in loader() do ... end, as iterating a PyTorch DataLoader
DataHandler.__call = function(self, ...) return self:batches(...) end

-- the samples an epoch reads, in order: the sampler's, checked, or 1..n (shuffled)
local function epoch_order(self, epoch)
  local sampler, n = self.opts.sampler, self.dataset:len()
  if not sampler then return pt._data_permutation(n, self.opts.seed, epoch - 1, self.opts.shuffle) end
  local idx = sampler:indices(epoch, self.opts.seed)
  if type(idx) == "table" then idx = pt.tensor(idx, {dtype = "int64"}) end
  if not pt.is_tensor(idx) or idx:dim() ~= 1 or (idx:dtype() ~= "int64" and idx:dtype() ~= "int32") then
    error("DataHandler: the sampler's indices(epoch, seed) must return a 1-D integer tensor or a list of indices", 0)
  end
  local m = sampler:len()
  if idx:numel() ~= m then
    error(("DataHandler: the sampler gave %d indices for epoch %d but its len() is %d"):format(idx:numel(), epoch, m), 0)
  end
  if m > 0 and (idx:min():item() < 1 or idx:max():item() > n) then
    error(("DataHandler: the sampler's indices must be in 1..%d (the dataset's samples), got %d..%d"):format(n,
      idx:min():item(), idx:max():item()), 0)
  end
  return idx:to("int64"):contiguous()
end

-- samples per epoch: the sampler's length, else the dataset's
local function epoch_size(self)
  return self.opts.sampler and self.opts.sampler:len() or self.dataset:len()
end

-- a draw from pt's generator seeded from (seed, epoch), leaving the caller's stream as it was
local function seeded_draw(seed, epoch, fn)
  local saved = pt.get_rng_state()
  pt.manual_seed(seed * 1000003 + epoch)
  local ok, r = pcall(fn)
  pt.set_rng_state(saved)
  if not ok then error(r, 0) end
  return r
end

local Sampler = {}
Sampler.__index = Sampler
function Sampler:len() return self.n end

--- data.WeightedRandomSampler(weights, num_samples[, {replacement = true}])
function data.WeightedRandomSampler(weights, num_samples, opts)
  if type(weights) == "table" and not pt.is_tensor(weights) then weights = pt.tensor(weights, {dtype = "float64"}) end
  if not pt.is_tensor(weights) or weights:dim() ~= 1 or weights:numel() == 0 then
    error("WeightedRandomSampler: weights must be a non-empty 1-D tensor or list", 2)
  end
  if math.type(num_samples) ~= "integer" or num_samples < 1 then
    error(("WeightedRandomSampler: num_samples should be a positive integer value, but got num_samples=%s"):format(
      tostring(num_samples)), 2)
  end
  opts = opts or {}
  check_options("WeightedRandomSampler", opts, {replacement = function(v)
    if type(v) ~= "boolean" then return "a boolean" end
  end})
  local replacement = opts.replacement ~= false
  if not replacement and num_samples > weights:numel() then
    error(("WeightedRandomSampler: cannot draw %d samples without replacement from %d weights"):format(num_samples,
      weights:numel()), 2)
  end
  local w = weights:to("float64")
  if w:min():item() < 0 or w:sum():item() <= 0 or w:isfinite():all():item() == false then
    error("WeightedRandomSampler: weights must be finite, non-negative and not all zero", 2)
  end
  local self = setmetatable({n = num_samples, weights = w, replacement = replacement}, Sampler)
  function self.indices(s, epoch, seed)
    return seeded_draw(seed, epoch, function() return pt.multinomial(s.weights, s.n, {replacement = s.replacement}) end)
  end
  return self
end

--- data.SubsetRandomSampler(indices)
function data.SubsetRandomSampler(indices)
  if pt.is_tensor(indices) then indices = indices:tolist() end
  if type(indices) ~= "table" then error("SubsetRandomSampler: indices must be a list or a 1-D tensor", 2) end
  for i, v in ipairs(indices) do
    if math.type(v) ~= "integer" or v < 1 then
      error(("SubsetRandomSampler: indices[%d] is not a positive integer (1-based sample index)"):format(i), 2)
    end
  end
  local list = pt.tensor(indices, {dtype = "int64"})
  local self = setmetatable({n = #indices, list = list}, Sampler)
  function self.indices(s, epoch, seed)
    if s.n == 0 then return s.list end
    return seeded_draw(seed, epoch, function() return s.list:index_select(1, pt.randperm(s.n)) end)
  end
  return self
end

--- data.SequentialSampler(data_source): samples 1..n in order (n = #data_source, or a count)
local function sampler_count(fname, src)
  if math.type(src) == "integer" and src >= 0 then return src end
  local t = type(src)
  if (t == "table" or t == "userdata") and type(src.len) == "function" then return src:len() end
  error(("%s: data_source must be a dataset (len()) or a sample count, got %s"):format(fname, value_str(src)), 3)
end

function data.SequentialSampler(src)
  local n = sampler_count("SequentialSampler", src)
  local self = setmetatable({n = n}, Sampler)
  function self.indices(s) return pt.arange(1, s.n + 1, 1, {dtype = "int64"}) end
  return self
end

--- data.RandomSampler(data_source[, {replacement = false, num_samples = n}])
function data.RandomSampler(src, opts)
  local n = sampler_count("RandomSampler", src)
  opts = opts or {}
  check_options("RandomSampler", opts, {
    replacement = function(v) if type(v) ~= "boolean" then return "a boolean" end end,
    num_samples = function(v) if math.type(v) ~= "integer" or v < 1 then return "a positive integer" end end,
  })
  local replacement = opts.replacement or false
  if opts.num_samples and n == 0 then
    error(("RandomSampler: cannot draw %d samples from an empty dataset"):format(opts.num_samples), 2)
  end
  local self = setmetatable({n = opts.num_samples or n, size = n, replacement = replacement}, Sampler)
  function self.indices(sm, epoch, seed)
    if sm.n == 0 then return pt.empty({0}, {dtype = "int64"}) end
    return seeded_draw(seed, epoch, function()
      if sm.replacement then return pt.randint(1, sm.size + 1, {sm.n}, {dtype = "int64"}) end
      -- without replacement, as torch 1.13: whole permutations, then the start of one more
      local parts = {}
      for _ = 1, sm.n // sm.size do parts[#parts + 1] = pt.randperm(sm.size) end
      if sm.n % sm.size > 0 then parts[#parts + 1] = pt.randperm(sm.size):narrow(1, 1, sm.n % sm.size) end
      return #parts == 1 and parts[1] or pt.cat(parts)
    end)
  end
  return self
end

--- handler:len() / #handler: the number of batches per epoch.
function DataHandler:len()
  if self._iterable and type(self.dataset.len) ~= "function" then
    error("DataHandler: an iterable dataset without len() has no known number of batches", 2)
  end
  local n, b = epoch_size(self), self.opts.batch
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
-- a number or a boolean), a list {a, b, ...} (keys 1..n) or a dict {name = v, ...} (string keys)
-- of samples, nested; every sample of a batch has the structure of the first (other keys of
-- later samples are not read, as in PyTorch). The batch has that structure with each leaf
-- stacked: tensors into {B, ...}, numbers into int64 {B} (all integers) or float32 {B},
-- booleans into bool {B}. Messages name a sample by
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
    return ("collate: sample %d is %s (a sample is a tensor, a number, a boolean, or a list or dict of them)"):format(idx, what)
  end
  return ("collate: sample %d has %s at key %s (a sample holds tensors, numbers, booleans, and lists or dicts of them)"):format(
    idx, what, path)
end

-- the structure of the first sample: {leaf = j} (column j) or {kind = "list"|"dict", n | keys, children}
local function build(s, idx, path, leaves)
  if is_tensor(s) or type(s) == "number" or type(s) == "boolean" then
    leaves[#leaves + 1] = path
    return {leaf = #leaves, path = path, what = is_tensor(s) and "a tensor" or "a " .. type(s)}
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
    if not is_tensor(s) and type(s) ~= "number" and type(s) ~= "boolean" then error(not_collatable(idx, path, s), 0) end
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

-- get(i)'s sample: one value (get(i) returning x, y would lose y without a word; a sample of
-- several values is one table {x, y})
local function one_sample(i, s, ...)
  for k = select("#", ...), 1, -1 do -- trailing nils say nothing
    if (select(k, ...)) ~= nil then
      error(("dataset:get(%d) returned %d values: return one sample, e.g. {x, y}"):format(i, k + 1), 0)
    end
  end
  return s
end
pt._data_one_sample = one_sample

-- one batch from get(i): the list of values the iterator returns (see DataHandler:batches);
-- track (workers only) gets the dataset index being read in track.at, nil after each get
local function collate_samples(ds, perm, first, count, track)
  local ref_idx = perm[first]
  if track then track.at = ref_idx end
  local s1 = one_sample(ref_idx, ds:get(ref_idx))
  if track then track.at = nil end
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
    local idx, s = ref_idx, s1
    if k > 0 then
      idx = perm[first + k]
      if track then track.at = idx end
      s = one_sample(idx, ds:get(idx))
      if track then track.at = nil end
    end
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

-- one batch: the list of values the iterator returns, or nil when the transform returned nil.
-- The same function makes a batch in the caller (workers = 0) and on a worker; track (workers
-- only): see collate_samples, and track.stage = "transform" while the transform runs.
local function make_batch(ds, transform, perm, first, count, track)
  local cols = ds._collate and ds._collate(ds, perm, first, count)
  if not cols then cols = collate_samples(ds, perm, first, count, track) end
  if transform then
    if track then track.stage = "transform" end
    local rest = table.move(cols, 3, #cols, 1, {})
    local r = table.pack(transform(cols[1], cols[2], table.unpack(rest)))
    if r[1] == nil then return nil end
    -- the values it returns replace the batch's first ones; a transform of x, y alone leaves
    -- the others as they were
    for i = 1, math.max(r.n, 2) do cols[i] = r[i] end
  end
  return cols
end

--- data.default_collate(samples) -> the batch of a list of samples, as torch's default_collate:
-- tensors stacked, numbers into a tensor, lists and dicts collated field by field
function data.default_collate(samples)
  if type(samples) ~= "table" or #samples == 0 then
    error("default_collate: expected a non-empty list of samples", 2)
  end
  local list = samples
  local ds = {get = function(_, i) return list[i] end}
  local ok, cols = pcall(collate_samples, ds, pt.arange(1, #list + 1, 1, {dtype = "int64"}), 1, #list)
  if not ok then error((tostring(cols):gsub("^collate:", "default_collate:")), 2) end
  local s1 = list[1]
  -- a tensor, number or dict sample: one value; a list sample: its fields as a list
  if type(s1) == "table" and not is_tensor(s1) and #s1 > 0 then return cols end
  return cols[1]
end

local TRANSFORM_NIL = "DataHandler: the transform returned nil; it must return the batch (x, y, ...)"

-- splitmix64's finaliser
local function mix(h)
  h = (h ~ (h >> 30)) * 0xbf58476d1ce4e5b9
  h = (h ~ (h >> 27)) * 0x94d049bb133111eb
  return h ~ (h >> 31)
end

-- the generator's seed for batch b of an epoch: every batch is made under its own seed, in the
-- caller (workers = 0) as on a worker, so that random transforms give the same batches
local function batch_seed(seed, epoch, b)
  return mix(mix(mix(seed + 0x9e3779b97f4a7c15) + epoch) + b)
end

-- batch b made in the caller, under its seed; the caller's generator is put back afterwards
-- (also when get or the transform fails: their errors go through untouched)
local function serial_batch(ds, transform, perm, first, count, seed)
  local saved = pt.get_rng_state()
  local restore <close> = setmetatable({}, {__close = function() pt.set_rng_state(saved) end})
  pt.manual_seed(seed)
  return make_batch(ds, transform, perm, first, count)
end

-- Parallel loading (workers = n), worker side. Every worker of a loader's pool holds the
-- loader's dataset and transform in _worker_loaders by key, reached through require (so they
-- are found even if these functions ever reach a worker as copies rather than by name).
data._worker_loaders = {}

function data._worker_setup(key, ds, transform)
  require("partrain.data")._worker_loaders[key] = {ds = ds, transform = transform}
  return true
end

-- an error value as text (as lpt_error_text)
local function error_text(e)
  if type(e) == "string" or type(e) == "number" then return tostring(e) end
  local mt = getmetatable(e)
  if type(mt) == "table" and rawget(mt, "__tostring") then
    local ok, str = pcall(tostring, e)
    if ok and type(str) == "string" then return str end
  end
  return ("(error object is a %s value)"):format(type(e))
end

local function traceback_of(e) return {error_text(e), debug.traceback(nil, 2)} end

-- one batch on a worker: true, values (nil when the transform returned nil), or false, message,
-- traceback, the dataset index being read (nil outside get), "transform" (in the transform)
function data._worker_batch(key, perm, first, count, seed)
  local l = require("partrain.data")._worker_loaders[key]
  if not l then error("DataHandler: this worker has no dataset", 0) end
  pt.manual_seed(seed)
  local track = {}
  local ok, r = xpcall(make_batch, traceback_of, l.ds, l.transform, perm, first, count, track)
  if ok then return true, r end
  if type(r) ~= "table" then r = {error_text(r), ""} end -- memory errors skip the handler
  return false, r[1], r[2], track.at, track.stage
end

-- caller side

local fail = require("partrain.tensor")._fail -- an error at the user's line
local SETUP_NAMES = {"the loader's key", "dataset", "transform"}
local loader_count = 0

-- forget everything in flight on the loader's pool, waiting for it (results nobody wants)
local function par_drain(par)
  par.ids, par.results, par.owner = {}, {}, nil
  local pool = par.pool
  -- stopped, not waited for: Ctrl-C or a break must not wait for batches nobody will take
  if not pool:closed() and pool:pending() > 0 then pool:cancel() end
end

-- the loader's pool of workers, each holding the dataset and the transform; a value that
-- cannot be sent fails with the transfer's message ("DataHandler: upvalue 'co' (thread) of
-- field 'dataset.get' cannot be sent to a worker")
start_workers = function(self)
  local n = self.opts.workers
  local made, pool = pcall(pt._Pool, n)
  if not made then fail("DataHandler: cannot start %d workers: %s", n, error_text(pool)) end
  loader_count = loader_count + 1
  local par = {pool = pool, key = loader_count, ids = {}, results = {}, owner = nil}
  local ok, err = pcall(function()
    for w = 1, n do
      local sent, e = pcall(pool.submit_as, pool, "DataHandler", SETUP_NAMES, w, data._worker_setup, par.key,
        self.dataset, self.opts.transform)
      if not sent then return error_text(e) end
    end
    local err
    for _ = 1, n do
      local _, wk, fine, msg, tb = pool:next()
      if not fine and not err then
        err = ("DataHandler: worker %d could not take the dataset: %s"):format(wk, error_text(msg))
        if type(tb) == "string" and tb ~= "" then err = err .. "\n" .. tb end
      end
    end
    return err
  end)
  if not ok or err then
    pool:close()
    fail(error_text(err))
  end
  self._par = par
end

-- "DataHandler: batch 3 failed on worker 2 reading sample 7: <message>" + the worker's traceback
local function batch_failure(b, r)
  local wk, task_ok = r[2], r[3]
  local msg, tb, at, stage
  if not task_ok then
    msg, tb = r[4], r[5] -- the task itself failed (its result could not be sent back, ...)
  else
    msg, tb, at, stage = r[5], r[6], r[7], r[8]
  end
  local where = ""
  if stage == "transform" then
    where = " in the transform"
  elseif at then
    where = " reading sample " .. tostring(at)
  end
  local s = ("DataHandler: batch %d failed on worker %d%s: %s"):format(b, wk, where, error_text(msg))
  if type(tb) == "string" and tb ~= "" then s = s .. "\n" .. tb end
  return s
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
-- With workers, the iterator keeps prefetch batches in flight on the loader's workers. One
-- iterator uses the workers at a time: another one (next_batch's, a new loop) taking them over
-- waits for what is in flight and drops it; leaving a loop (break, an error) does the same. A
-- failed batch raises its error (naming the batch, the sample being read and the worker, with
-- the worker's traceback) and the next call goes on with the next batch, as with workers = 0.
-- one epoch over an iterable dataset: batch consecutive samples of ds:iter() (the last one short
-- unless drop_last), each collated and transformed under its (seed, epoch, batch) seed as the
-- map-style path does; the progress bar's total is known only when the dataset has len()
function DataHandler:_iterable_batches(bopts)
  local ds, B, transform, seed = self.dataset, self.opts.batch, self.opts.transform, self.opts.seed
  local it, epoch, step, bar
  local done = false
  local function start()
    self.epoch = self.epoch + 1
    epoch, step = self.epoch, 0
    it = ds:iter()
    if type(it) ~= "function" then
      error(("DataHandler: the dataset's iter() must return an iterator function, got %s"):format(type(it)), 0)
    end
    local ok, nb = pcall(self.len, self)
    bar = progress.for_epoch(progress_setting(self, bopts), {total = ok and nb or nil, desc = "epoch " .. epoch,
      epoch = epoch, log = bopts.log or self.opts.log})
    self._bar = bar
  end
  start()
  local function finish()
    if bar then bar:close() end
    self._bar = nil
    done = true
    return nil
  end
  return function()
    if done then
      done = false
      start()
    end
    if pt._data_interrupted() then
      if bar then bar:close(true) end
      self._bar = nil
      error("interrupted", 2)
    end
    local samples = {}
    while #samples < B do
      local s = it()
      if s == nil then break end
      samples[#samples + 1] = s
    end
    if #samples == 0 or (#samples < B and self.opts.drop_last) then return finish() end
    step = step + 1
    local list = samples
    local mem = {get = function(_, i) return list[i] end}
    local cols = serial_batch(mem, transform, pt.arange(1, #list + 1, 1, {dtype = "int64"}), 1, #list,
      batch_seed(seed, epoch, step))
    if cols == nil then error(TRANSFORM_NIL, 2) end
    if bar then bar:step(#list) end
    return table.unpack(cols)
  end
end

function DataHandler:batches(bopts)
  bopts = bopts or {}
  if type(bopts) ~= "table" then error("batches: options must be a table", 2) end
  check_options("batches", bopts, batches_options)
  if self._iterable then return self:_iterable_batches(bopts) end
  local par = self._par
  if self.opts.workers > 0 and not par then
    error("batches: the loader was closed (close() stopped its workers)", 2)
  end
  local n = epoch_size(self)
  local nb = self:len()
  local B = self.opts.batch
  local transform = self.opts.transform
  local seed = self.opts.seed
  local k = self.opts.prefetch
  local perm, step, bar, epoch
  local token = {} -- this iterator, as the user of the loader's workers
  local submitted = 0 -- batches of this epoch sent to the workers
  -- while the loop runs, a first Ctrl-C waits for the current step (host/state.h)
  local soft, ended = false, false
  local function soft_mode(on)
    if on and ended then return end -- no loop left to end the mark
    if on ~= soft then soft = on; pt._soft_interrupt(on) end
  end
  local closer = setmetatable({}, {__close = function()
    ended = true
    soft_mode(false)
    if par and par.owner == token then pcall(par_drain, par) end
  end,
  -- an iterator called by hand (`h:batches()()`) has no loop to close it: its mark ends when
  -- the closer is collected and is not taken again at a later epoch, or Ctrl-C would stay
  -- deferred for the rest of the session
  __gc = function()
    ended = true
    soft_mode(false)
  end})
  local function start()
    soft_mode(true)
    self.epoch = self.epoch + 1
    epoch = self.epoch
    perm = epoch_order(self, epoch)
    step = 0
    submitted = 0
    bar = progress.for_epoch(progress_setting(self, bopts), {
      total = nb, desc = "epoch " .. self.epoch, epoch = self.epoch,
      log = bopts.log or self.opts.log})
    self._bar = bar
  end
  -- sends the batches up to upto (at most the epoch's last) to the workers
  local function top_up(upto)
    if upto > nb then upto = nb end
    while submitted < upto do
      local b = submitted + 1
      local first = (b - 1) * B + 1
      local id = par.pool:submit(0, data._worker_batch, par.key, perm, first, math.min(B, n - first + 1),
        batch_seed(seed, epoch, b))
      submitted = b
      par.ids[id] = b
    end
  end
  -- the pool's answer for batch b: {id, worker, true, true, values} or a failure
  local function take(b)
    if par.owner ~= token then -- another iterator used the workers: drop its batches
      par_drain(par)
      par.owner = token
      submitted = b - 1
    end
    top_up(b + k - 1)
    local results = par.results
    local r = results[b]
    while r == nil do
      local got = table.pack(par.pool:next())
      local gb = par.ids[got[1]]
      par.ids[got[1]] = nil
      if gb then results[gb] = got end
      r = results[b]
    end
    results[b] = nil
    top_up(b + k) -- k batches in flight while the caller works on this one
    return r
  end
  local function interrupted()
    if bar then bar:close(true) end
    self._bar = nil
    soft_mode(false)
  end
  start()
  local finished = false
  return function()
    if finished then
      finished = false
      start()
    end
    if pt._data_interrupted() then
      interrupted()
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
    local cols
    if par then
      if self._par ~= par then fail("DataHandler: the loader was closed (close() stopped its workers)") end
      local ok, r = pcall(take, step)
      if not ok then -- interrupted (the pool dropped everything in flight) or closed
        par.ids, par.results, par.owner = {}, {}, nil
        step = step - 1
        if r == "interrupted" then
          interrupted()
          error("interrupted", 2)
        end
        error(r, 0)
      end
      if not (r[3] and r[4]) then fail(batch_failure(step, r)) end
      cols = r[5]
    else
      cols = serial_batch(self.dataset, transform, perm, first, count, batch_seed(seed, epoch, step))
    end
    if cols == nil then error(TRANSFORM_NIL, 2) end
    if bar then bar:step(count) end
    return table.unpack(cols)
  end, nil, nil, closer
end

--- handler:next_batch() -> x, y: the rotta_rs style; wraps around to a new epoch after the
-- last batch, never ends.
function DataHandler:next_batch()
  if not self._iter then
    -- no loop runs this iterator: Ctrl-C is never deferred to its next call (closed at once)
    local it, _, _, closer = self:batches({progress = false})
    do local _ <close> = closer end
    self._iter = it
  end
  local r = table.pack(self._iter())
  if r[1] == nil then r = table.pack(self._iter()) end
  if r[1] == nil then
    local n = epoch_size(self)
    if n > 0 and self.opts.drop_last then
      error(("next_batch: no full batch of %d in the %d samples an epoch reads (drop_last)"):format(self.opts.batch,
        n), 2)
    end
    error("next_batch: the dataset is empty", 2)
  end
  return table.unpack(r, 1, r.n)
end

--- handler:close(): stops the loader's workers (workers > 0; nothing to do otherwise). Also
-- when the loader is collected, closed with <close>, or the state closes. Idempotent.
function DataHandler:close()
  local par = self._par
  if not par then return end
  self._par = nil
  self._closed = true
  par.ids, par.results, par.owner = {}, {}, nil
  par.pool:close()
end
DataHandler.__close = DataHandler.close

--- handler:report(loss) or handler:report{loss = v, ...}: values shown on the progress bar
-- (running mean) and written to the metrics log. Cheap when there is no bar.
function DataHandler:report(values)
  local bar = self._bar
  if not bar then return end
  bar:report(values)
end

function DataHandler:par_by_sample(model, n, fn, opts)
  if self._iterable then error("par_by_sample: needs a map-style dataset (get(i), len()), not an iterable one", 2) end
  return require("partrain.par").par_by_sample(self, model, n, fn, opts)
end

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
-- probability p (pt.manual_seed controls the draws; inside a DataHandler each batch is drawn with
-- the generator seeded from the loader's seed, epoch and batch number, see DataHandler).
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

--- transforms.compose(t1, t2, ...) or compose({t1, t2, ...}): apply in order.
function transforms.compose(...)
  local list = table.pack(...)
  -- a list, as torchvision's Compose([t1, t2]), or the transforms as arguments
  if list.n == 1 and type(list[1]) == "table" and getmetatable(list[1]) == nil then
    list = table.pack(table.unpack(list[1]))
  end
  for k = 1, list.n do
    if type(list[k]) ~= "function" then error(("compose: transform %d is not a function"):format(k), 2) end
  end
  return function(...)
    local r = table.pack(...)
    for k = 1, list.n do r = table.pack(list[k](table.unpack(r, 1, r.n))) end
    return table.unpack(r, 1, r.n)
  end
end

-- torchvision's image transforms (resize, rotations, colour jitter, ..., transforms.functional)
-- load on the first name transforms lacks: most loaders never parse them (W7)
local more_loaded = false
function transforms._load_more()
  if more_loaded then return end
  more_loaded = true
  require("partrain.transforms_more")(transforms)
end
setmetatable(transforms, {__index = function(t, k)
  if more_loaded then return nil end
  transforms._load_more()
  return rawget(t, k)
end})

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
    [data.SequentialSampler] = "data.SequentialSampler(data_source) -> a sampler of 1..n in order (n = #data_source or a count).",
    [data.RandomSampler] = "data.RandomSampler(data_source[, {replacement=false, num_samples=n}]) -> a sampler of a permutation\n"
      .. "  per epoch (with replacement: num_samples draws), seeded from the loader's (seed, epoch), as torch's.",
    [data.default_collate] = "data.default_collate(samples) -> the batch of a list of samples, as torch's default_collate\n"
      .. "  (tensors stacked, numbers into int64/float32 tensors, lists and dicts field by field).",
    [data.Dataset.extend] = "data.Dataset:extend(\"Name\") -> a dataset class (define get, len and __init; Name(...) makes one).",
    [data.Dataset.get] = "ds:get(i) -> sample i (1-based): a Dataset subclass defines it; the base raises naming the class.",
    [data.Dataset.len] = "ds:len() -> the number of samples (also #ds): a Dataset subclass defines it.",
    [data.IterableDataset] = "data.IterableDataset: base class for streams (torch's IterableDataset): local S = data.IterableDataset:extend(\"S\");\n"
      .. "  function S:iter() return an iterator of samples end; a DataLoader/DataHandler batches consecutive samples\n"
      .. "  (no shuffle, sampler or workers; #loader needs S:len()). Any object with iter() and no get() works the same.",
    [data.IterableDataset.extend] = "data.IterableDataset:extend(\"Name\") -> an iterable dataset class (define iter and __init).",
    [data.IterableDataset.iter] = "ds:iter() -> an iterator function of samples (nil at the end): an IterableDataset subclass defines it.",
    [data.Dataset] = "data.Dataset: base class for datasets in Lua (torch.utils.data.Dataset): local D = data.Dataset:extend(\"D\");\n"
      .. "  function D:__init(...) end; function D:get(i) end; function D:len() end; D(...) makes one; #ds, ds[i], ds1 + ds2.",
    [data.DataLoader] = "data.DataLoader(dataset[, {batch_size=1, shuffle=false, sampler=, num_workers=0, prefetch_factor=2,\n"
      .. "  drop_last=false, seed=42, pin_memory=, persistent_workers=, transform=, progress=, log=}]) -> a data.DataHandler\n"
      .. "  with PyTorch's option names (batch_size -> batch, num_workers -> workers, prefetch_factor -> prefetch per\n"
      .. "  worker); for x, y in loader() do ... end iterates one epoch (loader:batches()), #loader batches per epoch.\n"
      .. "  pin_memory and persistent_workers change nothing (CPU batches; the workers live as long as the loader);\n"
      .. "  collate_fn, batch_sampler, generator, worker_init_fn, timeout and multiprocessing_context are refused\n"
      .. "  with what to use instead. help(data.DataHandler) for the rest.",
    [data.DataHandler] = "data.DataHandler(dataset[, {batch=128, shuffle=false, seed=42, drop_last=false, transform=fn, sampler=, progress=, log=,\n"
      .. "  workers=0, prefetch=2*workers}])\n"
      .. "  for x, y in loader:batches() do ... end  -- one epoch; each call reshuffles (seed, epoch)\n"
      .. "  #loader batches per epoch; loader:report(loss) shows it on the progress bar; loader:next_batch() wraps around;\n"
      .. "  loader:set_epoch(k) for resuming; loader:par_by_sample(model, n, fn) runs samples on n threads.\n"
      .. "  sampler = data.WeightedRandomSampler(...) / SubsetRandomSampler(...) (or your own) orders each epoch's samples\n"
      .. "  instead of shuffle (the two exclude each other); #loader then counts the sampler's samples.\n"
      .. "  Samples from get(i) may be tensors, numbers, lists or dicts of them, nested (PyTorch's default_collate);\n"
      .. "  a list sample gives x, y, ... per step, a dict sample one table: for b in loader:batches() do f(b.x, b.y) end.\n"
      .. "  workers=n (0: read in the caller) reads, collates and transforms each batch on one of n threads of the\n"
      .. "  loader's own pool (PyTorch's num_workers), prefetch=k (default 2*n, at most 4*n) batches in flight ahead;\n"
      .. "  the same batches in the same order as workers=0, tensors by reference. The dataset and transform are sent\n"
      .. "  to the workers once, at creation (a value that cannot be sent is an error naming it); loader:close(),\n"
      .. "  <close> or collection stops them. A worker's error names the batch, the sample read and the worker,\n"
      .. "  with its traceback; the next call goes on with the next batch.\n"
      .. "  Randomness: each batch is made with pt's generator seeded from (seed, epoch, batch number), in the caller\n"
      .. "  as on a worker, and the caller's generator is put back: random transforms (and pt.rand in get) give the\n"
      .. "  same batches whatever workers is, and the loop's own draws do not depend on the loader.",
    [DataHandler.batches] = "loader:batches([{progress=nil|true|false|\"desc\", log=path}]) -> iterator of x, y (one epoch);\n"
      .. "  of one table per step for dict samples. With workers, prefetch batches are made ahead on the workers;\n"
      .. "  one iterator uses them at a time (another one, or leaving a loop, drops what is in flight).",
    [DataHandler.report] = "loader:report(loss | {name=value}) -> running means on the progress bar and in the metrics log.",
    [DataHandler.next_batch] = "loader:next_batch() -> x, y; wraps around to a new epoch after the last batch.",
    [DataHandler.close] = "loader:close(): stops the loader's worker threads (workers=n); idempotent, also on <close> and\n"
      .. "  collection. A closed loader with workers cannot iterate any more.",
    [DataHandler.set_epoch] = "loader:set_epoch(k): the next batches() call runs epoch k+1 (its shuffle).",
    [data.ConcatDataset] = "data.ConcatDataset({ds1, ds2, ...}) -> dataset: their samples one after another (torch's);\n"
      .. "  ds.cumulative_sizes holds each one's end. get(i) finds the dataset by binary search.",
    [ConcatDataset.len] = "ds:len() -> the total number of samples (also #ds).",
    [ConcatDataset.get] = "ds:get(i) -> sample i of the concatenation (1-based).",
    [data.WeightedRandomSampler] = "data.WeightedRandomSampler(weights, num_samples[, {replacement=true}]) -> sampler for\n"
      .. "  DataHandler's sampler option (torch's): each epoch draws num_samples 1-based indices with probability\n"
      .. "  proportional to weights (e.g. 1 / class count, for imbalanced classes), from pt's generator seeded by\n"
      .. "  the loader's seed and the epoch (so workers = n gives the same batches; your own stream is untouched).",
    [data.SubsetRandomSampler] = "data.SubsetRandomSampler(indices) -> sampler: the given 1-based sample indices in a new random\n"
      .. "  order each epoch (seeded as WeightedRandomSampler). Any table with indices(epoch, seed) -> 1-D int64\n"
      .. "  tensor or list of 1-based indices, and len(), is a sampler too.",
    [DataHandler.len] = "loader:len() -> batches per epoch (also #loader).",
    [DataHandler.par_by_sample] = "loader:par_by_sample(model, n, fn[, opts]) -> losses, model\n"
      .. "  fn(sample, model) on n threads, one window of n samples per call; gradients summed per window.\n"
      .. "  opts: windows=k | epoch=true, after_window=f(losses), step=optim.SGD (fused step),\n"
      .. "  read_in_workers=true (workers call dataset:get themselves), refresh_model=true.\n"
      .. "  Every rule: lua/partrain/par.lua.",
    [transforms] = "data.transforms: per-batch transforms for DataHandler's transform option: fn(x, y, ...) -> x, y, ...\n"
      .. "  data.DataHandler(ds, {transform = transforms.compose(transforms.random_flip(), transforms.normalize(m, s))})\n"
      .. "  torchvision's image transforms load on first use: center_crop, resize, pad, grayscale, random_resized_crop,\n"
      .. "  random_rotation, random_affine, color_jitter, random_grayscale, gaussian_blur, random_erasing,\n"
      .. "  random_horizontal_flip, random_vertical_flip, random_apply, random_choice; transforms.functional.*.",
    [transforms.normalize] = "data.transforms.normalize(mean, std[, {shape={C,H,W}}]) -> (x-mean)/std per channel, in place.",
    [transforms.one_hot] = "data.transforms.one_hot(num_classes) -> y (1-based) becomes float32 {B, num_classes}.",
    [transforms.random_flip] = "data.transforms.random_flip([p=0.5][, {shape={C,H,W}}]) -> mirror images left-right.\n"
      .. "  Draws from pt's generator; in a DataHandler, seeded per batch from (seed, epoch, batch number).",
    [transforms.random_crop] = "data.transforms.random_crop(size[, padding=0][, {shape={C,H,W}}]) -> random size x size windows.\n"
      .. "  Draws from pt's generator; in a DataHandler, seeded per batch from (seed, epoch, batch number).",
    [transforms.compose] = "data.transforms.compose(t1, t2, ...) or compose({t1, t2, ...}) -> one transform applying them in order.",
  }
  for f, text in pairs(D) do docs[f] = text end
end

data.DataHandler_class = DataHandler
data.TensorDataset_class = TensorDataset
setmetatable(data, {__index = function(_, k) if k == "ImageFolder" or k == "cifar" or k == "cifar100" or k == "ImageFolder_class" or k == "CifarDataset_class" then return require("partrain.data_images")[k] end end}) -- image datasets: partrain.data_images, loaded on first use

return data
