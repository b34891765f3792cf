-- partrain.data: datasets, the DataHandler batch iterator and per-batch transforms.
--
-- A dataset is anything with get(i) (1-based) returning a sample and len():
--   {get = function(self, i) return {x, y} end, len = function(self) return n end}
-- A sample is a list {x, y} (or a single tensor/number). Datasets built here are C-backed: they
-- also have _collate(indices, first, count), which gathers a whole batch in one C call.
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
  if math.type(i) ~= "integer" or i < 1 or i > self.n then
    error(("TensorDataset: index %s out of range 1..%d"):format(tostring(i), self.n), 2)
  end
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
  if math.type(i) ~= "integer" or i < 1 or i > self.n then
    error(("idx: index %s out of range 1..%d"):format(tostring(i), self.n), 2)
  end
  local x = pt._data_gather(self.images, gather_index(i), 1, 1, self.sample_opts)
  if self.labels then return {x, self.labels[i]} end
  return {x}
end

function IdxDataset:_collate(indices, first, count)
  local x = pt._data_gather(self.images, indices, first, count, self.gather_opts)
  if self.labels then return {x, pt._data_gather(self.labels, indices, first, count)} end
  return {x}
end

-- CSV -------------------------------------------------------------------------------------

--- data.csv(path[, {header = true, label = "name" | index | false, label_offset = 0}])
-- Numeric columns become float32 features {N, F}; the label column (default: the last one;
-- label = false for none) becomes int64 when all its values are integers (plus label_offset),
-- float32 otherwise, and words become class indices 1.. in order of first appearance
-- (ds.classes lists them). Returns a TensorDataset with fields features, labels, header, classes.
function data.csv(path, opts)
  if type(path) ~= "string" then error("csv: path must be a string", 2) end
  opts = opts or {}
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
  for k, i in ipairs(list) do
    if math.type(i) ~= "integer" or i < 1 or i > n then
      error(("Subset: index %s (entry %d) out of range 1..%d"):format(tostring(i), k, n), 2)
    end
  end
  local t = #list > 0 and pt.tensor(list, {dtype = "int64"}) or nil
  return setmetatable({dataset = ds, indices = t, list = list, n = #list}, Subset)
end

function Subset:len() return self.n end
Subset.__len = Subset.len

function Subset:get(i)
  if math.type(i) ~= "integer" or i < 1 or i > self.n then
    error(("Subset: index %s out of range 1..%d"):format(tostring(i), self.n), 2)
  end
  return self.dataset:get(self.list[i])
end

-- a Subset of a C-backed dataset is C-backed too
function Subset:_collate(indices, first, count)
  local inner = self.dataset._collate
  if not inner then return nil end
  return inner(self.dataset, pt._data_take(self.indices, indices, first, count), 1, count)
end

--- data.random_split(dataset, {n1, n2, ...}[, {seed = 42}]) -> Subset, Subset, ...
-- The sizes must add up to #dataset; fractions summing to 1 are also accepted.
function data.random_split(ds, sizes, opts)
  check_dataset(ds, "random_split")
  if type(sizes) ~= "table" or #sizes == 0 then error("random_split: sizes must be a non-empty list", 2) end
  opts = opts or {}
  local n = ds:len()
  local counts, total = {}, 0
  local fractions = true
  for _, s in ipairs(sizes) do
    if math.type(s) == "integer" then fractions = false end
  end
  if fractions then
    local fsum = 0
    for _, f in ipairs(sizes) do fsum = fsum + f end
    if math.abs(fsum - 1) > 1e-9 then error("random_split: fractions must add up to 1", 2) end
    for k, f in ipairs(sizes) do counts[k] = math.floor(f * n) end
    local rest = n
    for _, c in ipairs(counts) do rest = rest - c end
    for k = 1, rest do counts[(k - 1) % #counts + 1] = counts[(k - 1) % #counts + 1] + 1 end
  else
    for k, s in ipairs(sizes) do
      if math.type(s) ~= "integer" or s < 0 then
        error(("random_split: size %d must be a non-negative integer"):format(k), 2)
      end
      counts[k] = s
    end
  end
  for _, c in ipairs(counts) do total = total + c end
  if total ~= n then
    error(("random_split: sizes add up to %d but the dataset has %d samples"):format(total, n), 2)
  end
  local perm = pt._data_permutation(n, opts.seed or 42, 0, true):tolist()
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

--- data.DataHandler(dataset[, {batch = 128, shuffle = false, seed = 42, drop_last = false,
--                               transform = fn(x, y) -> x, y, progress = nil|true|false|"desc",
--                               log = "metrics.jsonl"}])
-- handler:batches() iterates over one epoch of batches; every call reshuffles (seed, epoch).
function data.DataHandler(ds, opts)
  check_dataset(ds, "DataHandler")
  opts = opts or {}
  if type(opts) ~= "table" then error("DataHandler: options must be a table", 2) end
  local o = {}
  for k, v in pairs(defaults) do o[k] = v end
  for k, v in pairs(opts) do o[k] = v end
  if math.type(o.batch) ~= "integer" or o.batch < 1 then
    error("DataHandler: batch must be a positive integer, got " .. tostring(o.batch), 2)
  end
  if math.type(o.seed) ~= "integer" then error("DataHandler: seed must be an integer", 2) end
  if o.transform ~= nil and type(o.transform) ~= "function" then
    error("DataHandler: transform must be a function(x, y) -> x, y", 2)
  end
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

local function collate_samples(ds, perm, first, count)
  local columns, width
  for k = 0, count - 1 do
    local s = ds:get(perm[first + k])
    if is_tensor(s) or type(s) == "number" then s = {s} end
    if type(s) ~= "table" then
      error(("collate: sample %d is a %s, expected a list {x, y}"):format(perm[first + k], type(s)), 0)
    end
    if not columns then
      width = #s
      columns = {}
      for c = 1, width do columns[c] = {} end
    elseif #s ~= width then
      error(("collate: sample %d has %d fields, the first sample of the batch %d"):format(perm[first + k], #s, width), 0)
    end
    for c = 1, width do columns[c][k + 1] = s[c] end
  end
  local out = {}
  for c = 1, width do out[c] = pt._data_stack(columns[c]) end
  return out
end

-- one batch: a list of batch tensors
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

--- handler:batches([{progress = nil|true|false|"desc", log = path}]) -> iterator of x, y, ...
-- One epoch: `for x, y in loader:batches() do ... end`. Calling the iterator again after it
-- ended starts a new (reshuffled) epoch. Shows progress on a TTY (see partrain.progress);
-- report the loss with loader:report(loss) to see it on the bar.
function DataHandler:batches(bopts)
  bopts = bopts or {}
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
      .. "  float32 features {N,F}; integer labels int64 (+label_offset), word labels -> classes 1.. (ds.classes).",
    [data.Subset] = "data.Subset(dataset, indices) -> the samples at the given 1-based indices.",
    [data.random_split] = "data.random_split(dataset, {n1, n2, ...}[, {seed=42}]) -> Subset, Subset, ... (sizes or fractions).",
    [data.DataHandler] = "data.DataHandler(dataset[, {batch=128, shuffle=false, seed=42, drop_last=false, transform=fn, progress=, log=}])\n"
      .. "  for x, y in loader:batches() do ... end  -- one epoch; each call reshuffles (seed, epoch)\n"
      .. "  #loader batches per epoch; loader:report(loss) shows it on the progress bar; loader:next_batch() wraps around;\n"
      .. "  loader:set_epoch(k) for resuming; loader:par_by_sample(model, n, fn) runs samples on n threads.",
    [DataHandler.batches] = "loader:batches([{progress=nil|true|false|\"desc\", log=path}]) -> iterator of x, y (one epoch).",
    [DataHandler.report] = "loader:report(loss | {name=value}) -> running means on the progress bar and in the metrics log.",
    [DataHandler.next_batch] = "loader:next_batch() -> x, y; wraps around to a new epoch after the last batch.",
    [DataHandler.set_epoch] = "loader:set_epoch(k): the next batches() call runs epoch k+1 (its shuffle).",
    [DataHandler.len] = "loader:len() -> batches per epoch (also #loader).",
    [DataHandler.par_by_sample] = "loader:par_by_sample(model, n, fn[, opts]) -> losses, model\n"
      .. "  fn(sample, model) on n threads, one window of n samples per call; gradients summed per window.\n"
      .. "  opts: windows=k | epoch=true, after_window=f(losses), step=optim.SGD (fused step),\n"
      .. "  read_in_workers=true (workers call dataset:get themselves), refresh_model=true.\n"
      .. "  Every rule: lua/partrain/par.lua.",
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
