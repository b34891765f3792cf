-- partrain.metrics: classification accuracy and confusion matrices over a dataset, and a
-- JSON-lines metrics log. Labels are 1-based class indices; predictions are the argmax over the
-- last dimension of the model's output (first maximum wins).
local pt = require "partrain"

local M = {}

-- an evaluation handler over a dataset or another handler's dataset: no shuffle, no progress,
-- and a handler of its own (never advances the caller's epochs). A handler's per-batch
-- transform applies, as when iterating its batches() (opts.transform replaces it, false drops it).
local function eval_handler(d, opts, fname)
  local data = require "partrain.data"
  local ds, transform = d, opts.transform
  if type(d) == "table" and d.dataset and type(d.batches) == "function" then
    ds = d.dataset
    if transform == nil and type(d.opts) == "table" then transform = d.opts.transform end
  end
  if transform == false then transform = nil end -- {transform = false}: none, not even the handler's
  if (type(ds) ~= "table" and type(ds) ~= "userdata") or type(ds.get) ~= "function" or type(ds.len) ~= "function" then
    error(fname .. ": expected a dataset or a DataHandler, got a " .. type(d), 3)
  end
  local batch = opts.batch or 1000
  return data.DataHandler(ds, {batch = batch, shuffle = false, progress = false, transform = transform})
end

local function caller(model, fname)
  if type(model) == "function" then return model end
  local mt = getmetatable(model)
  if mt and mt.__call then return function(x) return model(x) end end
  if type(model) == "table" and type(model.forward) == "function" then
    return function(x) return model:forward(x) end
  end
  error(fname .. ": model must be callable (a Module or a function), got a " .. type(model), 3)
end

-- run fn(forward, x, y) over every batch in eval mode without gradients; restore train mode
local function evaluate(model, d, opts, fname, fn)
  opts = opts or {}
  local forward = caller(model, fname)
  local handler = eval_handler(d, opts, fname)
  local was_training = type(model) == "table" and model.training
  if type(model) == "table" and type(model.eval) == "function" then model:eval() end
  local ok, err = pcall(pt.no_grad, function()
    for x, y in handler:batches() do
      if y == nil then error(fname .. ": the dataset has no labels", 0) end
      fn(forward(x), y)
    end
  end)
  if was_training and type(model.train) == "function" then model:train() end
  if not ok then
    -- a check of ours (labels, shapes) is raised at the caller's line; the model's errors as they are
    if type(err) == "string" and err:find("^[^\n]-partrain/metrics%.lua:%d+: ") then
      error((err:gsub("^[^\n]-partrain/metrics%.lua:%d+: ", "")), 3)
    end
    error(err, 0)
  end
end

--- pt.metrics.accuracy(model, dataset_or_handler[, {batch = 1000, transform = fn}]) -> fraction
-- correct in [0, 1]. Labels must be class indices 1..C (C: the model's output columns); others
-- are an error, as in confusion_matrix. A DataHandler's transform applies to every batch
-- (augmentations too: {transform = false} evaluates without it, {transform = fn} with fn).
function M.accuracy(model, d, opts)
  local correct, total = 0, 0
  evaluate(model, d, opts, "accuracy", function(out, y)
    local c, n = pt._data_count_correct(out, y, "accuracy")
    correct, total = correct + c, total + n
  end)
  if total == 0 then return 0 end
  return correct / total
end

--- pt.metrics.confusion_matrix(model, data, num_classes[, {batch = 1000}]) -> int64 {C, C}:
-- entry [i][j] counts samples of true class i predicted as class j.
function M.confusion_matrix(model, d, num_classes, opts)
  if math.type(num_classes) ~= "integer" or num_classes < 1 then
    error("confusion_matrix: num_classes must be a positive integer", 2)
  end
  local cm = pt.zeros({num_classes, num_classes}, {dtype = "int64"})
  evaluate(model, d, opts, "confusion_matrix", function(out, y)
    pt._data_confusion_add(cm, out, y)
  end)
  return cm
end

--- pt.metrics.log(path, record): append a record as one JSON line.
function M.log(path, record)
  return require("partrain.progress").log(path, record)
end

local docs = rawget(pt, "_docs")
if docs then
  docs[M.accuracy] = "pt.metrics.accuracy(model, dataset_or_loader[, {batch=1000, transform=fn}]) -> fraction of argmax predictions equal to the 1-based labels (eval mode, no grad).\n"
    .. "  Labels outside 1..C are an error; a loader's per-batch transform applies, as in loader:batches()\n"
    .. "  (transform=false: none, transform=fn: fn instead)."
  docs[M.confusion_matrix] = "pt.metrics.confusion_matrix(model, data, num_classes[, {batch=1000}]) -> int64 {C,C}, rows true class, columns predicted."
  docs[M.log] = "pt.metrics.log(path, record): append a table as one JSON line."
end

return M
