-- nn.CTCLoss and nn.functional.ctc_loss (also nn.ctc_loss): the connectionist temporal
-- classification loss, PyTorch 1.13's, as one fused C kernel forward and backward
-- (lib/nn_ctc.c). Loaded by nn.lua with its extras (the first name nn does not have).
--
-- Class indices are 1-based, as everywhere in partrain (cross_entropy's targets are 1..C): the
-- blank is a class index and defaults to 1 (PyTorch's blank=0 is its first class), and targets
-- hold the classes 1..C other than the blank. Padding after a sequence's target length is never
-- read, so 0 is a natural padding value.
local pt = require "partrain.core"
local nn = require "partrain.nn"
local Module = nn.Module
local F = nn.functional
local docs = pt._docs
local fail = require("partrain.tensor")._fail

local function type_of(v)
  if pt.is_tensor(v) then return "tensor" end
  return type(v)
end

local SETTINGS = {"blank", "reduction", "zero_infinity"}
local DEFAULTS = {blank = 1, reduction = "mean", zero_infinity = false}

-- the settings given positionally (PyTorch's order) and/or as a trailing options table
local function settings(name, ...)
  local n = select("#", ...)
  local args = {...}
  local opts
  if n > 0 and type(args[n]) == "table" and not pt.is_tensor(args[n]) and rawget(args[n], 1) == nil then
    opts = args[n]
    n = n - 1
  end
  if n > #SETTINGS then fail("%s: too many arguments (%d settings at most, got %d)", name, #SETTINGS, n) end
  local s = {}
  for i = 1, n do s[SETTINGS[i]] = args[i] end
  if opts then
    for k, v in pairs(opts) do
      if DEFAULTS[k] == nil then
        fail("%s: unknown option '%s' (options: blank, reduction, zero_infinity)", name, tostring(k))
      end
      if s[k] ~= nil then fail("%s: %s given twice (as an argument and as an option)", name, k) end
      s[k] = v
    end
  end
  for _, k in ipairs(SETTINGS) do
    if s[k] == nil then s[k] = DEFAULTS[k] end
  end
  if math.type(s.blank) ~= "integer" then
    fail("%s: blank must be an integer class index (1-based), got %s", name,
      type(s.blank) == "number" and tostring(s.blank) or type_of(s.blank))
  end
  local r = s.reduction
  if r ~= "mean" and r ~= "sum" and r ~= "none" then
    fail("%s: reduction must be 'mean', 'sum' or 'none', got %s", name,
      type(r) == "string" and "'" .. r .. "'" or type_of(r))
  end
  if type(s.zero_infinity) ~= "boolean" then
    fail("%s: zero_infinity must be a boolean, got %s", name, type_of(s.zero_infinity))
  end
  return s
end

local function ctc(name, log_probs, targets, input_lengths, target_lengths, s)
  if not pt.is_tensor(log_probs) then fail("%s: log_probs must be a tensor, got %s", name, type_of(log_probs)) end
  if not pt.is_tensor(targets) then fail("%s: targets must be a tensor, got %s", name, type_of(targets)) end
  return pt._nn_ctc_loss(log_probs, targets, input_lengths, target_lengths, s.blank, s.reduction,
    s.zero_infinity, name)
end

local CTCLoss = Module:extend("CTCLoss")
nn.CTCLoss = CTCLoss
function CTCLoss:__init(...)
  local s = settings("CTCLoss", ...)
  self.blank, self.reduction, self.zero_infinity = s.blank, s.reduction, s.zero_infinity
end
function CTCLoss:forward(log_probs, targets, input_lengths, target_lengths, ...)
  local name = "CTCLoss:forward"
  if select("#", ...) > 0 then fail("%s: expected 4 inputs, got %d", name, 4 + select("#", ...)) end
  return ctc(name, log_probs, targets, input_lengths, target_lengths, self)
end
function CTCLoss:extra_repr()
  return string.format("blank=%d, reduction='%s', zero_infinity=%s", self.blank, self.reduction,
    tostring(self.zero_infinity))
end
docs[CTCLoss] = [==[nn.CTCLoss([blank=1[, reduction="mean"[, zero_infinity=false]]]): the connectionist temporal classification loss.
  forward(log_probs, targets, input_lengths, target_lengths) -> loss, PyTorch 1.13's F.ctc_loss:
  -log of the summed probability of every alignment of a target to its frames.
  log_probs {T,N,C} (T frames, N sequences, C classes; {T,C} for one unbatched sequence),
  float32 or float64, normally log_softmax outputs along dim 3. targets of an integer dtype:
  {N,S} padded (the rest of a row after its target length is never read) or 1-D, the targets of
  the N sequences concatenated. input_lengths and target_lengths: one per sequence (a tensor of
  an integer dtype, a list, or one integer unbatched); input lengths at most T, target lengths
  at most S for padded targets.
  CLASSES ARE 1-BASED: the blank is a class index, 1 by default (PyTorch's blank=0, its first
  class), and targets hold classes 1..C other than the blank (a label repeated in a row needs a
  blank frame between the two, so it needs more frames).
  reduction "mean" (each loss divided by its target length (at least 1), then the mean over the
  batch, as PyTorch), "sum" or "none" ({N}; a number unbatched). zero_infinity=true: a sequence
  no alignment fits (its target, with the blanks its repeats need, longer than its input) has
  loss 0 and gradient 0 instead of inf and NaN. Also nn.CTCLoss({blank=, reduction=, zero_infinity=}).
  The gradient is PyTorch's: exp(log_probs) - the alignment posteriors, which is the true
  gradient after a log_softmax (it takes log_probs to be normalised). One fused C kernel
  forward (alpha recursion in log space, float64 sums) and backward (alpha-beta), sequences
  split over the intra-op threads; create_graph (double backward) is refused through it.
  Sequences of input length 0 give loss 0 (empty target) or inf (torch 1.13 reads garbage there).]==]

function F.ctc_loss(log_probs, targets, input_lengths, target_lengths, ...)
  local name = "ctc_loss"
  return ctc(name, log_probs, targets, input_lengths, target_lengths, settings(name, ...))
end
if rawget(nn, "ctc_loss") == nil then nn.ctc_loss = F.ctc_loss end
docs[F.ctc_loss] = "F.ctc_loss(log_probs, targets, input_lengths, target_lengths[, blank=1[, reduction=\"mean\"[, zero_infinity=false]]])\n"
  .. "  (also a trailing {blank=, reduction=, zero_infinity=}) -> the CTC loss; 1-based classes, blank 1 by default.\n"
  .. "  See help(nn.CTCLoss). Also nn.ctc_loss."

return nn
