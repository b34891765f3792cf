-- partrain.metrics: classification accuracy and confusion matrices over a dataset, and a
-- JSON-lines metrics log. Labels are 1-based class indices; predictions are the argmax over the
-- last dimension of the model's output (first maximum wins).
-- Over tensors, as sklearn's and torchmetrics' functions: precision/recall/F-beta and their
-- report, agreement scores, top-k accuracy, ROC and precision-recall curves with their areas,
-- regression errors and scores, and Accumulator (epoch metrics from per-batch updates).
local pt = require "partrain"

local M = {}

-- Tensor metrics (below) take predictions first, as torchmetrics does: scores {N,C} (the
-- prediction is the argmax, first maximum wins) or 1-based class indices {N}, then targets
-- {N} of 1-based class indices, as cross_entropy's. Results are Lua numbers (float64 math, no
-- autograd) or, per class / per output, float64 tensors.

local inf = math.huge

-- raise msg at the first frame outside partrain's modules: the user's call
local function raise(msg)
  local level = 2
  while true do
    local info = debug.getinfo(level, "S")
    if not info or not info.source:find("partrain/[%w_]+%.lua$") then break end
    level = level + 1
  end
  error(msg, level)
end

local function shape_str(t) return "{" .. table.concat(t:size(), ",") .. "}" end

local function num_str(v)
  if math.type(v) == "integer" then return tostring(v) end
  if v ~= v then return "nan" end
  if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return string.format("%d", v) end
  return string.format("%g", v)
end

local function is_float(t)
  local d = t:dtype()
  return d == "float32" or d == "float64" or d == "float16" or d == "bfloat16"
end

-- a tensor, or a Lua list of numbers made one
local function as_tensor(fname, what, v)
  if pt.is_tensor(v) then return v end
  if type(v) == "table" then return pt.tensor(v) end
  raise(string.format("%s: %s must be a tensor, got a %s", fname, what, type(v)))
end

-- the options table (nil: {}), every key one of names
local function check_opts(fname, opts, names)
  if opts == nil then return {} end
  if type(opts) ~= "table" or pt.is_tensor(opts) then
    raise(string.format("%s: options must be a table, got a %s", fname, type(opts)))
  end
  for k in pairs(opts) do
    local known = false
    for _, n in ipairs(names) do if k == n then known = true end end
    if not known then
      raise(string.format("%s: unknown option '%s' (expected %s)", fname, tostring(k), table.concat(names, ", ")))
    end
  end
  return opts
end

local function check_num_classes(fname, c)
  if c ~= nil and (math.type(c) ~= "integer" or c < 1) then
    raise(string.format("%s: num_classes must be a positive integer, got %s", fname, tostring(c)))
  end
  return c
end

-- class indices {N} (integers >= 1, at most C when C is known) -> int64 tensor
local function check_indices(fname, what, t, C)
  if t:dim() ~= 1 then
    raise(string.format("%s: %s must be class indices {N}, got shape %s", fname, what, shape_str(t)))
  end
  if t:dtype() == "bool" then
    raise(string.format("%s: %s must hold class indices (integers from 1), got a bool tensor", fname, what))
  end
  if t:numel() == 0 then return t:to("int64") end
  if is_float(t) then
    local bad = t:masked_select(t:floor():ne(t))
    if bad:numel() > 0 then
      local v = bad[1]
      if pt.is_tensor(v) then v = v:item() end
      raise(string.format("%s: %s must hold integer class indices, got %s", fname, what, num_str(v)))
    end
  end
  local lo, hi = t:min():item(), t:max():item()
  if lo < 1 or (C and hi > C) or hi == inf then
    local v = lo < 1 and lo or hi
    if C then
      raise(string.format("%s: %s holds %s, out of range 1..%d", fname, what, num_str(v), C))
    end
    raise(string.format("%s: %s holds %s; class indices start at 1", fname, what, num_str(v)))
  end
  return t:to("int64")
end

-- pred (scores {N,C} or class indices {N}) and target {N} -> int64 pred, int64 target, C
-- (num_classes, the scores' columns, or the largest index seen), whether pred were scores
local function class_pair(fname, pred, target, num_classes)
  pred, target = as_tensor(fname, "pred", pred), as_tensor(fname, "target", target)
  local C = check_num_classes(fname, num_classes)
  if target:dim() ~= 1 then
    raise(string.format("%s: target must be class indices {N}, got shape %s", fname, shape_str(target)))
  end
  local N = target:size(1)
  local p
  if pred:dim() == 2 then
    if pred:dtype() == "bool" then raise(fname .. ": scores must be numbers, got a bool tensor") end
    if pred:size(1) ~= N then
      raise(string.format("%s: %d score rows but %d target labels", fname, pred:size(1), N))
    end
    if pred:size(2) < 1 then raise(fname .. ": scores have no classes") end
    if C and C ~= pred:size(2) then
      raise(string.format("%s: scores have %d classes but num_classes is %d", fname, pred:size(2), C))
    end
    C = pred:size(2)
    p = N > 0 and pred:argmax(2) or pt.zeros({0}, {dtype = "int64"})
  elseif pred:dim() == 1 then
    if pred:size(1) ~= N then
      raise(string.format("%s: %d predictions but %d target labels", fname, pred:size(1), N))
    end
    p = check_indices(fname, "pred", pred, C)
  else
    raise(string.format("%s: pred must be scores {N,C} or class indices {N}, got shape %s", fname, shape_str(pred)))
  end
  local t = check_indices(fname, "target", target, C)
  if not C then
    C = 0
    if N > 0 then C = math.max(p:max():item(), t:max():item()) end
  end
  return p, t, C, pred:dim() == 2
end

-- C grown to the largest of opts.labels when the classes were only inferred from the indices
-- (sklearn lists a label that occurs nowhere with zero counts)
local function grow_to_labels(C, opts, from_scores)
  if opts.num_classes or from_scores or type(opts.labels) ~= "table" then return C end
  for _, l in ipairs(opts.labels) do
    if math.type(l) == "integer" and l > C then C = l end
  end
  return C
end

-- per-class counts as Lua lists: tp (diagonal), true (row sums), predicted (column sums)
local function class_counts(p, t, C)
  local tp = (t:masked_select(p:eq(t)) - 1):bincount({minlength = C}):tolist()
  local ts = (t - 1):bincount({minlength = C}):tolist()
  local ps = (p - 1):bincount({minlength = C}):tolist()
  return tp, ts, ps
end

-- the confusion matrix {C,C} (rows true class) of int64 indices: O(N) index_add_ into it
local function confusion_add_indices(cm, p, t)
  local C = cm:size(1)
  if p:numel() > 0 then
    cm:view(-1):index_add_(1, (t - 1) * C + p, pt.ones({p:numel()}, {dtype = "int64"}))
  end
  return cm
end

-- zero_division: "warn" (as 0; no warning is printed), 0, 1 or nan -> the value
local function check_zero_division(fname, zd)
  if zd == nil or zd == "warn" then return 0 end
  if zd == 0 or zd == 1 then return zd + 0.0 end
  if type(zd) == "number" and zd ~= zd then return zd end
  raise(string.format('%s: zero_division must be "warn", 0, 1 or nan, got %s', fname, tostring(zd)))
end

local function nan_mean(xs, ws)
  local s, w, any = 0, 0, false
  for i, x in ipairs(xs) do
    if x == x then
      any = true
      local wi = ws and ws[i] or 1
      s, w = s + wi * x, w + wi
    end
  end
  if not any then return 0 / 0 end
  if w == 0 then return nan_mean(xs) end -- all weights zero: sklearn falls back to the plain mean
  return s / w
end

local function f64(list) return pt.tensor(list, {dtype = "float64"}) end

local function tensor_accuracy(pred, target, opts)
  opts = check_opts("accuracy", opts, {"num_classes"})
  local p, t = class_pair("accuracy", pred, target, opts.num_classes)
  if t:numel() == 0 then return 0 / 0 end
  return p:eq(t):sum():item() / t:numel()
end

local function tensor_confusion_matrix(pred, target, num_classes)
  local nc = num_classes
  if type(nc) == "table" then nc = check_opts("confusion_matrix", nc, {"num_classes"}).num_classes end
  local p, t, C = class_pair("confusion_matrix", pred, target, nc)
  return confusion_add_indices(pt.zeros({C, C}, {dtype = "int64"}), p, t)
end

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
-- input batches of at least this many elements (1 MB of float32) are collected after each step
local EVAL_COLLECT_NUMEL = 1 << 18

local function evaluate(model, d, opts, fname, fn)
  opts = opts or {}
  local forward = caller(model, fname)
  local handler = eval_handler(d, opts, fname)
  local was_training = type(model) == "table" and model.training
  if type(model) == "table" and type(model.eval) == "function" then model:eval() end
  local ok, err = pcall(pt.no_grad, function()
    -- a while loop, not a generic for: its hidden control variable would keep the previous
    -- batch alive through the collection below
    local next_batch = handler:batches()
    while true do
      local x, y = next_batch()
      if x == nil then break end
      if y == nil then error(fname .. ": the dataset has no labels", 0) end
      local big = pt.is_tensor(x) and x:numel() >= EVAL_COLLECT_NUMEL
      fn(forward(x), y)
      -- a big batch and its activations are garbage now; left to the collector's tensor-size
      -- trigger (64 MB by default) a 10k-sample evaluation piled up ~30 MB of them (W6's peak)
      if big then
        x, y = nil, nil
        collectgarbage()
      end
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
-- With a tensor first: accuracy(pred, target) over tensors.
function M.accuracy(model, d, opts)
  if pt.is_tensor(model) then return tensor_accuracy(model, d, opts) end
  local correct, total = 0, 0
  evaluate(model, d, opts, "accuracy", function(out, y)
    local c, n = pt._data_count_correct(out, y, "accuracy")
    correct, total = correct + c, total + n
  end)
  if total == 0 then return 0 end
  return correct / total
end

--- pt.metrics.confusion_matrix(model, data, num_classes[, {batch = 1000}]) -> int64 {C, C}:
-- entry [i][j] counts samples of true class i predicted as class j. With a tensor first:
-- confusion_matrix(pred, target[, num_classes]) over tensors.
function M.confusion_matrix(model, d, num_classes, opts)
  if pt.is_tensor(model) then return tensor_confusion_matrix(model, d, num_classes) end
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


-- Precision, recall, F-beta ---------------------------------------------------------------------

local AVERAGES = {micro = true, macro = true, weighted = true, none = true, binary = true}

-- the labels averaged or listed: opts.labels (checked), every class for "none", else the classes
-- that occur in target or pred (sklearn's default labels)
local function select_labels(fname, opts, C, ts, ps, avg)
  if opts.labels ~= nil then
    local ls = opts.labels
    if type(ls) ~= "table" or pt.is_tensor(ls) or #ls == 0 then
      raise(fname .. ": labels must be a non-empty list of class indices")
    end
    local seen = {}
    for _, l in ipairs(ls) do
      if math.type(l) ~= "integer" or l < 1 or l > C then
        raise(string.format("%s: labels holds %s, out of range 1..%d", fname, tostring(l), C))
      end
      if seen[l] then raise(string.format("%s: labels holds %d twice", fname, l)) end
      seen[l] = true
    end
    return ls
  end
  local ls = {}
  for c = 1, C do
    if avg == "none" or ts[c] > 0 or ps[c] > 0 then ls[#ls + 1] = c end
  end
  return ls
end

-- sklearn's precision_recall_fscore_support over per-class counts (Lua lists) for the labels ls
local function prf_from_counts(tp, ts, ps, ls, avg, beta, zd)
  local b2 = beta * beta
  local function div(a, b) if b == 0 then return zd end return a / b end
  local function scores(t, p, s)
    local prec, rec, f = div(t, p), div(t, s), nil
    if beta == inf then f = rec
    elseif beta == 0 then f = prec
    else f = div((1 + b2) * t, b2 * s + p) end
    return prec, rec, f
  end
  if avg == "micro" then
    local t, p, s = 0, 0, 0
    for _, l in ipairs(ls) do t, p, s = t + tp[l], p + ps[l], s + ts[l] end
    local prec, rec, f = scores(t, p, s)
    return prec, rec, f, nil
  end
  local P, R, F, S = {}, {}, {}, {}
  for i, l in ipairs(ls) do
    P[i], R[i], F[i] = scores(tp[l], ps[l], ts[l])
    S[i] = ts[l]
  end
  if avg == "none" then
    return f64(P), f64(R), f64(F), pt.tensor(S, {dtype = "int64"})
  end
  if avg == "binary" then return P[1], R[1], F[1], nil end
  local w = avg == "weighted" and S or nil
  return nan_mean(P, w), nan_mean(R, w), nan_mean(F, w), nil
end

local function check_average(fname, avg, allowed)
  if not allowed[avg] then
    local names = {}
    for k in pairs(allowed) do names[#names + 1] = '"' .. k .. '"' end
    table.sort(names)
    raise(string.format("%s: average must be one of %s, got %s", fname, table.concat(names, ", "),
                        type(avg) == "string" and '"' .. avg .. '"' or tostring(avg)))
  end
  return avg
end

local PRF_OPTS = {"average", "zero_division", "labels", "num_classes", "pos_label"}
local PRFS_OPTS = {"average", "zero_division", "labels", "num_classes", "pos_label", "beta"}

local function check_beta(fname, beta)
  if type(beta) ~= "number" or not (beta >= 0) then
    raise(string.format("%s: beta must be a number >= 0, got %s", fname, tostring(beta)))
  end
  return beta
end

local function prf(fname, pred, target, opts, beta)
  opts = check_opts(fname, opts, beta and PRF_OPTS or PRFS_OPTS)
  if not beta then beta = opts.beta == nil and 1.0 or check_beta(fname, opts.beta) end
  local avg = check_average(fname, opts.average or "macro", AVERAGES)
  local zd = check_zero_division(fname, opts.zero_division)
  local p, t, C, from_scores = class_pair(fname, pred, target, opts.num_classes)
  C = grow_to_labels(C, opts, from_scores)
  if avg == "binary" then C = math.max(C, 2) end -- all of class 1: the positive class 2 counts zero
  local tp, ts, ps = class_counts(p, t, C)
  local ls
  if avg == "binary" then
    local pos = opts.pos_label or 2
    if pos ~= 1 and pos ~= 2 then
      raise(string.format("%s: pos_label must be 1 or 2 for average = \"binary\", got %s", fname, tostring(pos)))
    end
    for c = 3, C do
      if ts[c] > 0 or ps[c] > 0 or from_scores then
        raise(string.format('%s: average = "binary" needs classes 1 and 2 only, got class %d; use "micro", "macro", "weighted" or "none"', fname, c))
      end
    end
    ls = {pos}
  else
    if opts.pos_label ~= nil then raise(fname .. ': pos_label is only used with average = "binary"') end
    ls = select_labels(fname, opts, C, ts, ps, avg)
  end
  return prf_from_counts(tp, ts, ps, ls, avg, beta, zd)
end

--- pt.metrics.precision_recall_fscore_support(pred, target[, opts]) -> precision, recall, fbeta,
-- support (nil unless average = "none"), as sklearn's.
function M.precision_recall_fscore_support(pred, target, opts)
  return prf("precision_recall_fscore_support", pred, target, opts, nil)
end

function M.precision(pred, target, opts)
  local prec = prf("precision", pred, target, opts, 1.0)
  return prec
end

function M.recall(pred, target, opts)
  local _, rec = prf("recall", pred, target, opts, 1.0)
  return rec
end

function M.f1_score(pred, target, opts)
  local _, _, f = prf("f1_score", pred, target, opts, 1.0)
  return f
end

function M.fbeta_score(pred, target, beta, opts)
  check_beta("fbeta_score", beta)
  local _, _, f = prf("fbeta_score", pred, target, opts, beta)
  return f
end

M.precision_score, M.recall_score = M.precision, M.recall

-- Reports and agreement scores ---------------------------------------------------------------

-- Python's "{:>9.2f}" (nan as Python writes it, never C's "-nan")
local function ffix(v, digits)
  if v ~= v then return string.format("%9s", "nan") end
  return string.format("%9." .. digits .. "f", v)
end

--- pt.metrics.classification_report(pred, target[, opts]) -> text as sklearn's, and its numbers
-- as sklearn's output_dict (keys "1".."C" or the target names, "accuracy", "macro avg", ...).
function M.classification_report(pred, target, opts)
  local fname = "classification_report"
  opts = check_opts(fname, opts, {"labels", "target_names", "digits", "zero_division", "num_classes"})
  local digits = opts.digits or 2
  if math.type(digits) ~= "integer" or digits < 0 then
    raise(string.format("%s: digits must be a non-negative integer, got %s", fname, tostring(digits)))
  end
  local zd = check_zero_division(fname, opts.zero_division)
  local p, t, C, from_scores = class_pair(fname, pred, target, opts.num_classes)
  C = grow_to_labels(C, opts, from_scores)
  local tp, ts, ps = class_counts(p, t, C)
  local present = select_labels(fname, {}, C, ts, ps, "macro")
  local ls = select_labels(fname, {labels = opts.labels}, C, ts, ps, "macro")
  if opts.labels == nil and #ls == 0 then raise(fname .. ": no samples") end
  local names = {}
  if opts.target_names ~= nil then
    local tn = opts.target_names
    if type(tn) ~= "table" or #tn ~= #ls then
      raise(string.format("%s: target_names must list %d names (one per reported class), got %s", fname, #ls,
                          type(tn) == "table" and tostring(#tn) or "a " .. type(tn)))
    end
    for i, n in ipairs(tn) do names[i] = tostring(n) end
  else
    for i, l in ipairs(ls) do names[i] = tostring(l) end
  end
  -- micro average is accuracy when every class that occurs is reported
  local micro_is_accuracy = true
  local listed = {}
  for _, l in ipairs(ls) do listed[l] = true end
  for _, l in ipairs(present) do if not listed[l] then micro_is_accuracy = false end end

  local P, R, F, S = prf_from_counts(tp, ts, ps, ls, "none", 1.0, zd)
  P, R, F, S = P:tolist(), R:tolist(), F:tolist(), S:tolist()
  local width = #"weighted avg"
  for _, n in ipairs(names) do width = math.max(width, #n) end
  width = math.max(width, digits)
  local out, dict = {}, {}
  local function row(name, a, b, c, s)
    return string.format("%" .. width .. "s ", name) .. " " .. ffix(a, digits) .. " " .. ffix(b, digits)
      .. " " .. ffix(c, digits) .. " " .. string.format("%9d", s) .. "\n"
  end
  out[1] = string.format("%" .. width .. "s ", "") .. string.format(" %9s %9s %9s %9s", "precision", "recall", "f1-score", "support") .. "\n\n"
  local total = 0
  for i = 1, #ls do
    out[#out + 1] = row(names[i], P[i], R[i], F[i], S[i])
    dict[names[i]] = {precision = P[i], recall = R[i], ["f1-score"] = F[i], support = S[i]}
    total = total + S[i]
  end
  out[#out + 1] = "\n"
  for _, avg in ipairs({"micro", "macro", "weighted"}) do
    local ap, ar, af = prf_from_counts(tp, ts, ps, ls, avg, 1.0, zd)
    if avg == "micro" and micro_is_accuracy then
      out[#out + 1] = string.format("%" .. width .. "s ", "accuracy") .. string.format(" %9s %9s ", "", "")
        .. ffix(af, digits) .. " " .. string.format("%9d", total) .. "\n"
      dict.accuracy = af
    else
      out[#out + 1] = row(avg .. " avg", ap, ar, af, total)
      dict[avg .. " avg"] = {precision = ap, recall = ar, ["f1-score"] = af, support = total}
    end
  end
  return table.concat(out), dict
end

--- pt.metrics.balanced_accuracy(pred, target[, {adjusted=false}]) -> mean recall over the classes
-- that occur in target (sklearn's balanced_accuracy_score).
function M.balanced_accuracy(pred, target, opts)
  local fname = "balanced_accuracy"
  opts = check_opts(fname, opts, {"adjusted", "num_classes"})
  local p, t, C = class_pair(fname, pred, target, opts.num_classes)
  local tp, ts = class_counts(p, t, C)
  local s, n = 0, 0
  for c = 1, C do
    if ts[c] > 0 then s, n = s + tp[c] / ts[c], n + 1 end
  end
  local score = s / n
  if opts.adjusted then
    local chance = 1 / n
    score = (score - chance) / (1 - chance)
  end
  return score
end

--- pt.metrics.cohen_kappa(pred, target[, {weights=nil|"linear"|"quadratic"}]) -> kappa
function M.cohen_kappa(pred, target, opts)
  local fname = "cohen_kappa"
  opts = check_opts(fname, opts, {"weights", "num_classes"})
  local wt = opts.weights
  if wt ~= nil and wt ~= "linear" and wt ~= "quadratic" then
    raise(string.format('%s: weights must be nil, "linear" or "quadratic", got %s', fname, tostring(wt)))
  end
  local p, t, C = class_pair(fname, pred, target, opts.num_classes)
  local _, ts, ps = class_counts(p, t, C)
  -- sklearn's matrix is over the classes that occur (weights use their positions in that list)
  local pos, ls = {}, {}
  for c = 1, C do
    if ts[c] > 0 or ps[c] > 0 then ls[#ls + 1] = c; pos[c] = #ls end
  end
  local K = #ls
  local cm = {}
  for i = 1, K do cm[i] = {}; for j = 1, K do cm[i][j] = 0 end end
  local full = confusion_add_indices(pt.zeros({C, C}, {dtype = "int64"}), p, t):tolist()
  for i = 1, K do for j = 1, K do cm[i][j] = full[ls[i]][ls[j]] end end
  local r, c, n = {}, {}, 0
  for i = 1, K do r[i], c[i] = 0, 0 end
  for i = 1, K do for j = 1, K do r[i] = r[i] + cm[i][j]; c[j] = c[j] + cm[i][j]; n = n + cm[i][j] end end
  local num, den = 0, 0
  for i = 1, K do
    for j = 1, K do
      local w
      if wt == nil then w = i == j and 0 or 1
      elseif wt == "linear" then w = math.abs(i - j)
      else w = (i - j) ^ 2 end
      num = num + w * cm[i][j]
      den = den + w * r[i] * c[j] / n
    end
  end
  return 1 - num / den
end

--- pt.metrics.matthews_corrcoef(pred, target) -> the multiclass Matthews correlation coefficient
function M.matthews_corrcoef(pred, target, opts)
  local fname = "matthews_corrcoef"
  opts = check_opts(fname, opts, {"num_classes"})
  local p, t, C = class_pair(fname, pred, target, opts.num_classes)
  local tp, ts, ps = class_counts(p, t, C)
  local correct, n, tt, pp, tpd = 0, 0, 0, 0, 0
  for k = 1, C do
    correct, n = correct + tp[k], n + ts[k]
    tt, pp, tpd = tt + ts[k] * ts[k], pp + ps[k] * ps[k], tpd + ts[k] * ps[k]
  end
  local cov_tp = correct * n - tpd
  local cov_pp, cov_tt = n * n - pp, n * n - tt
  if cov_pp * cov_tt == 0 then return 0.0 end
  return cov_tp / math.sqrt(cov_tt * cov_pp)
end

--- pt.metrics.topk_accuracy(scores, target[, k=1]) -> fraction of samples whose target is among
-- the k highest scores (ties: the lower class index ranks first, as argmax's first maximum)
function M.topk_accuracy(scores, target, k)
  local fname = "topk_accuracy"
  scores, target = as_tensor(fname, "scores", scores), as_tensor(fname, "target", target)
  k = k == nil and 1 or k
  if math.type(k) ~= "integer" or k < 1 then
    raise(string.format("%s: k must be a positive integer, got %s", fname, tostring(k)))
  end
  if scores:dim() ~= 2 then
    raise(string.format("%s: expected scores {N,C}, got shape %s", fname, shape_str(scores)))
  end
  if scores:dtype() == "bool" then raise(fname .. ": scores must be numbers, got a bool tensor") end
  local N, C = scores:size(1), scores:size(2)
  if k > C then raise(string.format("%s: k = %d is larger than the number of classes (%d)", fname, k, C)) end
  if target:dim() ~= 1 or target:size(1) ~= N then
    raise(string.format("%s: scores %s need target {%d}, got shape %s", fname, shape_str(scores), N, shape_str(target)))
  end
  local t = check_indices(fname, "target", target, C)
  if N == 0 then return 0 / 0 end
  if is_float(scores) and scores:ne(scores):sum():item() > 0 then raise(fname .. ": scores hold NaN") end
  local col = t:view(N, 1)
  local st = scores:gather(2, col)
  -- rank of the target's score: classes scoring higher, and tied classes with a lower index
  local before = pt.arange(1, C + 1):view(1, C):lt(col)
  local rank = scores:gt(st):sum(2) + pt.logical_and(scores:eq(st), before):sum(2)
  return rank:lt(k):sum():item() / N
end


-- Ranking metrics (scores against binary targets) ------------------------------------------------

-- binary targets: a bool tensor (true = positive) or class indices 1..2 (positive: pos_label,
-- default 2) -> Lua list of 0/1
local function binary_target(fname, target, N, pos_label)
  target = as_tensor(fname, "target", target)
  if target:dim() ~= 1 or target:size(1) ~= N then
    raise(string.format("%s: %d scores need target {%d}, got shape %s", fname, N, N, shape_str(target)))
  end
  if target:dtype() == "bool" then
    if pos_label ~= nil then raise(fname .. ": pos_label does not apply to a bool target") end
    return target:to("int64"):tolist()
  end
  local pos = pos_label or 2
  if pos ~= 1 and pos ~= 2 then
    raise(string.format("%s: pos_label must be 1 or 2, got %s", fname, tostring(pos)))
  end
  local t = check_indices(fname, "target", target, 2)
  return t:eq(pos):to("int64"):tolist()
end

local function check_scores_1d(fname, scores)
  scores = as_tensor(fname, "scores", scores)
  if scores:dim() ~= 1 then
    raise(string.format("%s: expected scores {N} for the positive class, got shape %s", fname, shape_str(scores)))
  end
  if scores:dtype() == "bool" then raise(fname .. ": scores must be numbers, got a bool tensor") end
  return scores
end

local function check_finite(fname, st)
  if st:ne(st):sum():item() > 0 then raise(fname .. ": scores hold NaN") end
end

-- sklearn's _binary_clf_curve over float64 scores {N} and 0/1 targets (a Lua list): at each
-- distinct score (descending), the false and true positives among the samples scoring at least
-- that much
local function clf_curve(st, y)
  local v, idx = st:sort({descending = true})
  v, idx = v:tolist(), idx:tolist()
  local n = #v
  local fps, tps, thr = {}, {}, {}
  local tp = 0
  for i = 1, n do
    tp = tp + y[idx[i]]
    if i == n or v[i + 1] ~= v[i] then
      tps[#tps + 1], fps[#fps + 1], thr[#thr + 1] = tp, i - tp, v[i]
    end
  end
  return fps, tps, thr
end

local function binary_curve_inputs(fname, scores, target, pos_label)
  scores = check_scores_1d(fname, scores)
  local st = scores:to("float64")
  check_finite(fname, st)
  local y = binary_target(fname, target, st:numel(), pos_label)
  if #y == 0 then raise(fname .. ": no samples") end
  return st, y
end

local function keep(list, idx)
  local r = {}
  for i, k in ipairs(idx) do r[i] = list[k] end
  return r
end

local function roc_points(s, y, drop)
  local fps, tps, thr = clf_curve(s, y)
  if drop and #fps > 2 then
    -- sklearn drops the points where both second differences vanish (collinear)
    local idx = {1}
    for i = 2, #fps - 1 do
      if fps[i + 1] - 2 * fps[i] + fps[i - 1] ~= 0 or tps[i + 1] - 2 * tps[i] + tps[i - 1] ~= 0 then
        idx[#idx + 1] = i
      end
    end
    idx[#idx + 1] = #fps
    fps, tps, thr = keep(fps, idx), keep(tps, idx), keep(thr, idx)
  end
  table.insert(fps, 1, 0); table.insert(tps, 1, 0); table.insert(thr, 1, inf)
  local P, Nn = tps[#tps], fps[#fps]
  local fpr, tpr = {}, {}
  for i = 1, #fps do
    fpr[i] = Nn > 0 and fps[i] / Nn or 0 / 0
    tpr[i] = P > 0 and tps[i] / P or 0 / 0
  end
  return fpr, tpr, thr
end

local function trapezoid(x, y)
  local a = 0
  for i = 1, #x - 1 do a = a + (x[i + 1] - x[i]) * (y[i + 1] + y[i]) / 2 end
  return a
end

--- pt.metrics.roc_curve(scores, target[, {pos_label=2, drop_intermediate=true}]) -> fpr, tpr, thresholds
function M.roc_curve(scores, target, opts)
  local fname = "roc_curve"
  opts = check_opts(fname, opts, {"pos_label", "drop_intermediate"})
  local s, y = binary_curve_inputs(fname, scores, target, opts.pos_label)
  local fpr, tpr, thr = roc_points(s, y, opts.drop_intermediate ~= false)
  return f64(fpr), f64(tpr), f64(thr)
end

local function pr_points(s, y, drop)
  local fps, tps, thr = clf_curve(s, y)
  if drop and #fps > 2 then
    -- keep the first and last point of each run of equal true positives (equal recall)
    local idx = {1}
    for i = 2, #tps - 1 do
      if tps[i] ~= tps[i - 1] or tps[i + 1] ~= tps[i] then idx[#idx + 1] = i end
    end
    idx[#idx + 1] = #tps
    fps, tps, thr = keep(fps, idx), keep(tps, idx), keep(thr, idx)
  end
  local P = tps[#tps]
  local prec, rec, th = {}, {}, {}
  local n = #tps
  for i = 1, n do
    local j = n + 1 - i -- reversed: increasing thresholds, decreasing recall
    local ps = tps[j] + fps[j]
    prec[i] = ps > 0 and tps[j] / ps or 0.0
    rec[i] = P > 0 and tps[j] / P or 1.0 -- no positives: sklearn sets recall to 1
    th[i] = thr[j]
  end
  prec[n + 1], rec[n + 1] = 1.0, 0.0
  return prec, rec, th
end

--- pt.metrics.precision_recall_curve(scores, target[, {pos_label=2, drop_intermediate=false}])
-- -> precision, recall, thresholds
function M.precision_recall_curve(scores, target, opts)
  local fname = "precision_recall_curve"
  opts = check_opts(fname, opts, {"pos_label", "drop_intermediate"})
  local s, y = binary_curve_inputs(fname, scores, target, opts.pos_label)
  local prec, rec, thr = pr_points(s, y, opts.drop_intermediate == true)
  return f64(prec), f64(rec), f64(thr)
end

--- pt.metrics.auc(x, y) -> area under the curve (x monotonic), the trapezoidal rule
function M.auc(x, y)
  local fname = "auc"
  x, y = as_tensor(fname, "x", x), as_tensor(fname, "y", y)
  if x:dim() ~= 1 or y:dim() ~= 1 or x:size(1) ~= y:size(1) then
    raise(string.format("%s: x and y must be 1-D of one length, got shapes %s and %s", fname, shape_str(x), shape_str(y)))
  end
  if x:size(1) < 2 then
    raise(string.format("%s: at least 2 points are needed to compute the area under a curve, got %d", fname, x:size(1)))
  end
  local xs, ys = x:to("float64"):tolist(), y:to("float64"):tolist()
  local dir = 1
  local up, down = true, true
  for i = 1, #xs - 1 do
    if xs[i + 1] < xs[i] then up = false end
    if xs[i + 1] > xs[i] then down = false end
  end
  if not up then
    if down then dir = -1 else raise(fname .. ": x is neither increasing nor decreasing") end
  end
  return dir * trapezoid(xs, ys)
end

local function binary_auc(fname, s, y)
  local P, n = 0, #y
  for _, v in ipairs(y) do P = P + v end
  if P == 0 or P == n then
    raise(fname .. ": only one class present in target; ROC AUC is not defined then")
  end
  local fpr, tpr = roc_points(s, y, true)
  return trapezoid(fpr, tpr)
end

local function binary_ap(s, y)
  local prec, rec = pr_points(s, y, false)
  local a = 0
  for i = 1, #rec - 1 do a = a - (rec[i + 1] - rec[i]) * prec[i] end
  return math.max(0.0, a)
end

-- multiclass scores {N,C} and targets 1..C -> float64 scores, per-class 0/1 target lists, supports
local function one_vs_rest(fname, scores, target)
  local N, C = scores:size(1), scores:size(2)
  if C < 2 then raise(string.format("%s: scores {N,C} need at least 2 classes, got %d", fname, C)) end
  target = as_tensor(fname, "target", target)
  if target:dim() ~= 1 or target:size(1) ~= N then
    raise(string.format("%s: scores %s need target {%d}, got shape %s", fname, shape_str(scores), N, shape_str(target)))
  end
  local t = check_indices(fname, "target", target, C):tolist()
  if N == 0 then raise(fname .. ": no samples") end
  local s64 = scores:to("float64")
  check_finite(fname, s64)
  local ys, support = {}, {}
  for c = 1, C do
    local y = {}
    for i = 1, N do y[i] = 0 end
    ys[c], support[c] = y, 0
  end
  for i = 1, N do
    ys[t[i]][i] = 1
    support[t[i]] = support[t[i]] + 1
  end
  return s64, ys, support
end

local function average_per_class(vals, support, avg)
  if avg == "none" then return f64(vals) end
  return nan_mean(vals, avg == "weighted" and support or nil)
end

-- the micro average: one binary problem over every (sample, class) pair, in row-major order
local function flatten(s64, ys)
  local N, C = s64:size(1), s64:size(2)
  local y = {}
  for i = 1, N do
    for c = 1, C do y[(i - 1) * C + c] = ys[c][i] end
  end
  return s64:reshape(-1), y
end

local RANK_AVERAGES = {micro = true, macro = true, weighted = true, none = true}

-- a ranking metric (roc_auc, average_precision): binary(scores, labels) on binary scores {N}, or
-- one-vs-rest over the classes of scores {N,C}, averaged (micro: every score as one binary
-- problem); check(s64, ys, support), when given, vets the one-vs-rest inputs first
local function ranking_metric(fname, scores, target, opts, binary, check)
  opts = check_opts(fname, opts, {"average", "pos_label"})
  local sc = as_tensor(fname, "scores", scores)
  if sc:dim() == 2 then
    if opts.pos_label ~= nil then raise(fname .. ": pos_label applies to binary scores {N} only") end
    local avg = check_average(fname, opts.average or "macro", RANK_AVERAGES)
    if sc:dtype() == "bool" then raise(fname .. ": scores must be numbers, got a bool tensor") end
    local s64, ys, support = one_vs_rest(fname, sc, target)
    if check then check(s64, ys, support) end
    if avg == "micro" then return binary(flatten(s64, ys)) end
    local vals = {}
    for c = 1, #ys do vals[c] = binary(s64[{{}, c}], ys[c]) end
    return average_per_class(vals, support, avg)
  end
  if opts.average ~= nil then check_average(fname, opts.average, RANK_AVERAGES) end
  local s, y = binary_curve_inputs(fname, sc, target, opts.pos_label)
  return binary(s, y)
end

--- pt.metrics.roc_auc(scores, target[, opts]) -> area under the ROC curve
function M.roc_auc(scores, target, opts)
  local fname = "roc_auc"
  return ranking_metric(fname, scores, target, opts, function(s, y) return binary_auc(fname, s, y) end,
    function(s64, ys, support)
      for i, sum in ipairs(s64:sum(2):tolist()) do
        if math.abs(1 - sum) > 1e-8 + 1e-5 * math.abs(sum) then
          raise(string.format("%s: multiclass scores must be probabilities summing to 1 over classes (as sklearn's one-vs-rest), row %d sums to %s",
                              fname, i, num_str(sum)))
        end
      end
      for c = 1, #ys do
        if support[c] == 0 then
          raise(string.format("%s: class %d does not occur in target; one-vs-rest ROC AUC needs every class of the scores", fname, c))
        end
      end
    end)
end

--- pt.metrics.average_precision(scores, target[, opts]) -> sklearn's average_precision_score
function M.average_precision(scores, target, opts)
  return ranking_metric("average_precision", scores, target, opts, binary_ap)
end

M.roc_auc_score, M.average_precision_score = M.roc_auc, M.average_precision

-- Regression ----------------------------------------------------------------------------------

-- pred and target of one shape {N} or {N,K} -> float64 {N,K} views of both
local function reg_pair(fname, pred, target)
  pred, target = as_tensor(fname, "pred", pred), as_tensor(fname, "target", target)
  if pred:dim() < 1 or pred:dim() > 2 then
    raise(string.format("%s: expected pred {N} or {N,K}, got shape %s", fname, shape_str(pred)))
  end
  if shape_str(pred) ~= shape_str(target) then
    raise(string.format("%s: pred shape %s and target shape %s differ", fname, shape_str(pred), shape_str(target)))
  end
  if pred:dtype() == "bool" or target:dtype() == "bool" then
    raise(fname .. ": expected numbers, got a bool tensor")
  end
  if pred:size(1) == 0 then raise(fname .. ": no samples") end
  local N = pred:size(1)
  local K = pred:dim() == 2 and pred:size(2) or 1
  return pred:to("float64"):reshape(N, K), target:to("float64"):reshape(N, K), K
end

-- "uniform_average" | "raw_values" | "variance_weighted" (allowed_vw) | K weights
local function check_multioutput(fname, mo, K, allowed_vw)
  mo = mo == nil and "uniform_average" or mo
  if mo == "uniform_average" or mo == "raw_values" or (allowed_vw and mo == "variance_weighted") then return mo end
  if pt.is_tensor(mo) then mo = mo:to("float64"):reshape(-1):tolist() end
  if type(mo) == "table" then
    if #mo ~= K then
      raise(string.format("%s: multioutput weights must have %d entries (one per output), got %d", fname, K, #mo))
    end
    for _, w in ipairs(mo) do
      if type(w) ~= "number" then raise(fname .. ": multioutput weights must be numbers") end
    end
    return mo
  end
  raise(string.format('%s: multioutput must be "raw_values", "uniform_average"%s or a list of %d weights, got %s',
                      fname, allowed_vw and ', "variance_weighted"' or "", K, tostring(mo)))
end

local function weighted_mean(xs, ws)
  local s, w = 0, 0
  for i, x in ipairs(xs) do
    local wi = ws and ws[i] or 1
    s, w = s + wi * x, w + wi
  end
  return s / w
end

local function reduce_outputs(vals, mo)
  if mo == "raw_values" then return f64(vals) end
  if type(mo) == "table" then return weighted_mean(vals, mo) end
  return weighted_mean(vals)
end

local function error_metric(fname, pred, target, opts, fn, extra)
  local names = {"multioutput"}
  if extra then names[2] = extra end
  opts = check_opts(fname, opts, names)
  local p, t, K = reg_pair(fname, pred, target)
  local mo = check_multioutput(fname, opts.multioutput, K, false)
  if opts.squared ~= nil and type(opts.squared) ~= "boolean" then
    raise(string.format("%s: squared must be a boolean, got %s", fname, tostring(opts.squared)))
  end
  local vals = fn(p - t):tolist()
  if opts.squared == false then
    for i, v in ipairs(vals) do vals[i] = math.sqrt(v) end
  end
  return reduce_outputs(vals, mo)
end

--- pt.metrics.mean_absolute_error(pred, target[, {multioutput=}])
function M.mean_absolute_error(pred, target, opts)
  return error_metric("mean_absolute_error", pred, target, opts, function(d) return d:abs():mean(1) end)
end

--- pt.metrics.mean_squared_error(pred, target[, {squared=true, multioutput=}])
function M.mean_squared_error(pred, target, opts)
  return error_metric("mean_squared_error", pred, target, opts, function(d) return (d * d):mean(1) end, "squared")
end

--- pt.metrics.root_mean_squared_error(pred, target[, {multioutput=}])
function M.root_mean_squared_error(pred, target, opts)
  opts = check_opts("root_mean_squared_error", opts, {"multioutput"})
  return error_metric("root_mean_squared_error", pred, target, {multioutput = opts.multioutput, squared = false},
                      function(d) return (d * d):mean(1) end, "squared")
end

-- r2 and explained variance: 1 - num/den per output, sklearn's force_finite rule
local function score_metric(fname, pred, target, opts, parts, min2)
  opts = check_opts(fname, opts, {"multioutput", "force_finite"})
  local p, t, K = reg_pair(fname, pred, target)
  local mo = check_multioutput(fname, opts.multioutput, K, true)
  if opts.force_finite ~= nil and type(opts.force_finite) ~= "boolean" then
    raise(string.format("%s: force_finite must be a boolean, got %s", fname, tostring(opts.force_finite)))
  end
  if min2 and p:size(1) < 2 then return 0 / 0 end -- sklearn: not well-defined with fewer than two samples
  local force = opts.force_finite ~= false
  local num, den = parts(p, t)
  num, den = num:tolist(), den:tolist()
  local vals, any_den = {}, false
  for k = 1, K do
    if den[k] ~= 0 then any_den = true end
    if not force then vals[k] = 1 - num[k] / den[k]
    elseif num[k] == 0 then vals[k] = 1.0
    elseif den[k] == 0 then vals[k] = 0.0
    else vals[k] = 1 - num[k] / den[k] end
  end
  if mo == "variance_weighted" then
    if not any_den then return weighted_mean(vals) end
    return weighted_mean(vals, den)
  end
  return reduce_outputs(vals, mo)
end

--- pt.metrics.r2_score(pred, target[, {multioutput=, force_finite=true}])
function M.r2_score(pred, target, opts)
  return score_metric("r2_score", pred, target, opts, function(p, t)
    local d = t - p
    local c = t - t:mean(1)
    return (d * d):sum(1), (c * c):sum(1)
  end, true)
end

--- pt.metrics.explained_variance(pred, target[, {multioutput=, force_finite=true}])
function M.explained_variance(pred, target, opts)
  return score_metric("explained_variance", pred, target, opts, function(p, t)
    local d = t - p
    local dc = d - d:mean(1)
    local c = t - t:mean(1)
    return (dc * dc):mean(1), (c * c):mean(1)
  end)
end

M.explained_variance_score = M.explained_variance

-- Streaming accumulator ------------------------------------------------------------------------

local Accumulator = {}
Accumulator.__index = Accumulator
Accumulator.__name = "Accumulator"

local function new_accumulator(opts)
  local fname = "Accumulator"
  opts = check_opts(fname, opts, {"num_classes", "zero_division"})
  if opts.num_classes == nil then raise(fname .. ": num_classes is required") end
  local C = check_num_classes(fname, opts.num_classes)
  check_zero_division(fname, opts.zero_division)
  return setmetatable({num_classes = C, zero_division = opts.zero_division,
                       cm = pt.zeros({C, C}, {dtype = "int64"}), n = 0}, Accumulator)
end

setmetatable(Accumulator, {__call = function(_, opts) return new_accumulator(opts) end})

--- m:update(pred, target): add a batch (scores {N,C} or class indices {N}; targets 1..C)
function Accumulator:update(pred, target)
  local fname = "Accumulator:update"
  local C = self.num_classes
  pred, target = as_tensor(fname, "pred", pred), as_tensor(fname, "target", target)
  if pred:dim() == 2 then
    if pred:size(2) ~= C then
      raise(string.format("%s: scores have %d classes but num_classes is %d", fname, pred:size(2), C))
    end
    if target:dim() ~= 1 then
      raise(string.format("%s: target must be class indices {N}, got shape %s", fname, shape_str(target)))
    end
    if pred:size(1) ~= target:size(1) then
      raise(string.format("%s: %d score rows but %d target labels", fname, pred:size(1), target:size(1)))
    end
    check_indices(fname, "target", target, C)
    pt._data_confusion_add(self.cm, pred, target) -- one pass over the scores, in C
  else
    local p, t = class_pair(fname, pred, target, C)
    confusion_add_indices(self.cm, p, t)
  end
  self.n = self.n + target:size(1)
  return self
end

--- m:compute() -> table of the epoch's metrics so far
function Accumulator:compute()
  local cm, C = self.cm, self.num_classes
  local zd = check_zero_division("Accumulator:compute", self.zero_division)
  local tp = pt.diag(cm):tolist()
  local ts, ps = cm:sum(2):tolist(), cm:sum(1):tolist()
  local correct = 0
  for c = 1, C do correct = correct + tp[c] end
  local all = {}
  for c = 1, C do all[c] = c end
  local P, R, F, S = prf_from_counts(tp, ts, ps, all, "none", 1.0, zd)
  local present = select_labels("Accumulator:compute", {}, C, ts, ps, "macro")
  local mp, mr, mf = prf_from_counts(tp, ts, ps, present, "macro", 1.0, zd)
  return {accuracy = self.n > 0 and correct / self.n or 0 / 0, n = self.n,
          precision = P, recall = R, f1 = F, support = S,
          macro_precision = mp, macro_recall = mr, macro_f1 = mf,
          confusion_matrix = cm:clone()}
end

--- m:merge(other): add another accumulator's counts (say, one per worker or shard)
function Accumulator:merge(other)
  if getmetatable(other) ~= Accumulator then
    raise("Accumulator:merge: expected an Accumulator, got a " .. type(other))
  end
  if other.num_classes ~= self.num_classes then
    raise(string.format("Accumulator:merge: num_classes %d and %d differ", self.num_classes, other.num_classes))
  end
  self.cm:add_(other.cm)
  self.n = self.n + other.n
  return self
end

--- m:reset(): forget every batch
function Accumulator:reset()
  self.cm:zero_()
  self.n = 0
  return self
end

M.Accumulator = Accumulator

local docs = rawget(pt, "_docs")
if docs then
  docs[M.accuracy] = "pt.metrics.accuracy(model, dataset_or_loader[, {batch=1000, transform=fn}]) -> fraction of argmax predictions equal to the 1-based labels (eval mode, no grad).\n"
    .. "  Labels outside 1..C are an error; a loader's per-batch transform applies, as in loader:batches()\n"
    .. "  (transform=false: none, transform=fn: fn instead).\n"
    .. "  pt.metrics.accuracy(pred, target[, {num_classes=}]) -> the same over tensors: scores {N,C} (argmax) or class\n"
    .. "  indices {N} against 1-based target {N} (nan when N = 0)."
  docs[M.confusion_matrix] = "pt.metrics.confusion_matrix(model, data, num_classes[, {batch=1000}]) -> int64 {C,C}, rows true class, columns predicted.\n"
    .. "  pt.metrics.confusion_matrix(pred, target[, num_classes | {num_classes=}]): the same over tensors (scores {N,C} or\n"
    .. "  1-based class indices {N}, target {N}); C: num_classes, the scores' columns or the largest index."
  docs[M.log] = "pt.metrics.log(path, record): append a table as one JSON line."
  local inputs = "  pred: scores {N,C} (argmax, first maximum wins) or 1-based class indices {N}; target: class indices {N}.\n"
    .. "  Arguments are torchmetrics' order (pred, target); sklearn's are (y_true, y_pred)."
  local prf_opts = "  opts: average = \"macro\" (default) | \"micro\" | \"weighted\" (by support) | \"none\" (float64 tensor, one per\n"
    .. "  class 1..C, or per opts.labels) | \"binary\" (classes 1 and 2 only, pos_label = 2 by default);\n"
    .. "  zero_division = \"warn\" (0; nothing printed) | 0 | 1 | nan (nan is left out of averages), as sklearn;\n"
    .. "  labels = {classes...} to average over (default: the classes in target or pred, as sklearn); num_classes.\n"
  docs[M.precision_recall_fscore_support] = "pt.metrics.precision_recall_fscore_support(pred, target[, opts]) -> precision, recall, fbeta, support\n"
    .. "  as sklearn's: support (int64 tensor) only with average = \"none\", else nil. opts.beta = 1 (inf: recall, 0: precision).\n"
    .. "  F-beta = (1+b^2) tp / ((1+b^2) tp + b^2 fn + fp), zero_division when the denominator is 0 (sklearn >= 1.3).\n"
    .. prf_opts .. inputs
  docs[M.precision] = "pt.metrics.precision(pred, target[, opts]) -> tp / (tp + fp) (alias precision_score).\n" .. prf_opts .. inputs
  docs[M.recall] = "pt.metrics.recall(pred, target[, opts]) -> tp / (tp + fn) (alias recall_score).\n" .. prf_opts .. inputs
  docs[M.f1_score] = "pt.metrics.f1_score(pred, target[, opts]) -> harmonic mean of precision and recall.\n" .. prf_opts .. inputs
  docs[M.fbeta_score] = "pt.metrics.fbeta_score(pred, target, beta[, opts]) -> F-beta (recall weighted beta times as much as precision).\n"
    .. prf_opts .. inputs
  docs[M.classification_report] = "pt.metrics.classification_report(pred, target[, opts]) -> text, numbers\n"
    .. "  The text is sklearn's classification_report (per-class precision, recall, f1-score, support; accuracy, macro avg,\n"
    .. "  weighted avg); numbers is its output_dict: [name] = {precision=, recall=, [\"f1-score\"]=, support=}, accuracy =,\n"
    .. "  [\"macro avg\"], [\"weighted avg\"] (\"micro avg\" instead of accuracy when opts.labels leaves out a class that occurs).\n"
    .. "  opts: labels, target_names (one per reported class; default \"1\", \"2\", ...), digits = 2, zero_division, num_classes.\n"
    .. inputs
  docs[M.balanced_accuracy] = "pt.metrics.balanced_accuracy(pred, target[, {adjusted=false, num_classes=}]) -> mean per-class recall over\n"
    .. "  the classes that occur in target (sklearn's balanced_accuracy_score); adjusted: chance (1/classes) maps to 0.\n" .. inputs
  docs[M.cohen_kappa] = "pt.metrics.cohen_kappa(pred, target[, {weights=nil|\"linear\"|\"quadratic\", num_classes=}]) -> Cohen's kappa\n"
    .. "  (sklearn's cohen_kappa_score: weights by position among the classes that occur; nan when undefined).\n" .. inputs
  docs[M.matthews_corrcoef] = "pt.metrics.matthews_corrcoef(pred, target[, {num_classes=}]) -> Matthews correlation coefficient.\n"
    .. "  Multiclass, as sklearn's (0 when a marginal is constant).\n" .. inputs
  docs[M.topk_accuracy] = "pt.metrics.topk_accuracy(scores, target[, k=1]) -> fraction of samples whose target class is among the k\n"
    .. "  highest scores {N,C}. Ties rank the lower class index first (k=1 agrees with argmax; sklearn's\n"
    .. "  top_k_accuracy_score ranks the higher index first). k > C is an error. O(N C), no sort."
  local rank_in = "  scores {N}: binary, with target a bool tensor or class indices 1..2 (positive: pos_label, default 2).\n"
  docs[M.roc_curve] = "pt.metrics.roc_curve(scores, target[, {pos_label=2, drop_intermediate=true}]) -> fpr, tpr, thresholds\n"
    .. "  (float64 tensors) as sklearn's (>= 1.3): thresholds decreasing from inf, one per distinct score (tied scores\n"
    .. "  are one point); drop_intermediate drops collinear points. fpr (tpr) is nan without negatives (positives).\n" .. rank_in
  docs[M.precision_recall_curve] = "pt.metrics.precision_recall_curve(scores, target[, opts]) -> precision, recall, thresholds\n"
    .. "  (float64) as sklearn's; opts: pos_label = 2, drop_intermediate = false. Thresholds increasing (distinct scores), precision and\n"
    .. "  recall one longer, ending at 1 and 0; recall is 1 everywhere when there is no positive.\n" .. rank_in
  docs[M.auc] = "pt.metrics.auc(x, y) -> area under a curve by the trapezoidal rule (x increasing or decreasing), as sklearn's auc."
  docs[M.roc_auc] = "pt.metrics.roc_auc(scores, target[, opts]) -> area under the ROC curve (alias roc_auc_score).\n"
    .. rank_in .. "  Tied scores count one half, as sklearn; one class only in target is an error.\n"
    .. "  scores {N,C}: one-vs-rest over target 1..C, rows must be probabilities (sum 1) and every class must occur,\n"
    .. "  as sklearn's multi_class=\"ovr\"; average = \"macro\" | \"weighted\" (by prevalence) | \"micro\" | \"none\"."
  docs[M.average_precision] = "pt.metrics.average_precision(scores, target[, opts]) -> area under the precision-recall steps.\n"
    .. "  As sklearn's average_precision_score (alias): sum over thresholds of (R_n - R_{n-1}) P_n, tied scores one\n"
    .. "  threshold, no interpolation; 0 when no sample is positive.\n" .. rank_in
    .. "  scores {N,C} with target 1..C: per class (one-vs-rest), average = \"macro\" | \"weighted\" | \"micro\" | \"none\"."
  local reg = "  pred and target of one shape {N} or {N,K}, float64 math; multioutput = \"uniform_average\" (default) |\n"
    .. "  \"raw_values\" (float64 {K}) | a list of K weights"
  docs[M.mean_absolute_error] = "pt.metrics.mean_absolute_error(pred, target[, {multioutput=}]) -> mean |pred - target|.\n" .. reg .. "."
  docs[M.mean_squared_error] = "pt.metrics.mean_squared_error(pred, target[, {squared=true, multioutput=}]) -> mean (pred - target)^2;\n"
    .. "  squared = false: its square root (RMSE, per output before averaging, as sklearn).\n" .. reg .. "."
  docs[M.root_mean_squared_error] = "pt.metrics.root_mean_squared_error(pred, target[, {multioutput=}]) -> mean_squared_error's square root per output.\n"
    .. reg .. "."
  local scored = reg .. " | \"variance_weighted\".\n"
    .. "  force_finite = true: a constant target gives 1 (perfect prediction) or 0 (else) instead of nan/-inf, as sklearn.\n"
    .. "  Not symmetric: pred first, target second (sklearn's r2_score takes y_true first)."
  docs[M.r2_score] = "pt.metrics.r2_score(pred, target[, {multioutput=, force_finite=true}]) -> 1 - SS_res / SS_tot\n"
    .. "  (nan for fewer than 2 samples).\n" .. scored
  docs[M.explained_variance] = "pt.metrics.explained_variance(pred, target[, {multioutput=, force_finite=true}]) -> 1 - Var(target - pred) /\n"
    .. "  Var(target) (alias explained_variance_score).\n" .. scored
  docs[Accumulator] = "pt.metrics.Accumulator{num_classes=C[, zero_division=]} -> m: epoch metrics, streamed.\n"
    .. "  m:update(pred, target) per batch adds into an int64 confusion matrix {C,C} (scores: one C pass over the batch;\n"
    .. "  class indices: one index_add_), O(batch); m:compute() -> {accuracy, n, precision, recall, f1, support (per\n"
    .. "  class tensors), macro_precision, macro_recall, macro_f1, confusion_matrix}; m:reset() for the next epoch;\n"
    .. "  m:merge(other) adds another accumulator's counts."
  docs[Accumulator.update] = "m:update(pred, target) -> m: add a batch: scores {N,C} (C = num_classes) or class indices {N}, target 1..C {N}."
  docs[Accumulator.compute] = "m:compute() -> {accuracy, n, precision, recall, f1, support, macro_precision, macro_recall, macro_f1,\n"
    .. "  confusion_matrix (a copy; rows true class)}. Per-class values are float64 tensors {C} (classes never seen get\n"
    .. "  zero_division); macro averages are over the classes seen in targets or predictions, as sklearn."
  docs[Accumulator.reset] = "m:reset() -> m: zero the counts (a new epoch)."
  docs[Accumulator.merge] = "m:merge(other) -> m: add another Accumulator's counts (one per worker or shard; same num_classes)."
end


return M
