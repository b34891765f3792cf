-- More layers for partrain.nn, as PyTorch's torch.nn has them: activations (ELU, SELU, CELU,
-- Softplus, Mish, Hardtanh, ReLU6, Hardswish, Hardsigmoid, Softsign, Tanhshrink, Threshold, GLU,
-- LogSigmoid, PReLU, Softmin), distances (CosineSimilarity, PairwiseDistance), losses (KLDivLoss,
-- HuberLoss, MarginRankingLoss, CosineEmbeddingLoss, TripletMarginLoss, PoissonNLLLoss,
-- GaussianNLLLoss, SoftMarginLoss, MultiLabelSoftMarginLoss, HingeEmbeddingLoss), shape layers
-- (Unflatten, PixelShuffle, PixelUnshuffle) and their nn.functional forms. Loaded by nn.lua at its
-- end.
--
-- Everything is composed of the differentiable tensor ops, so autograd comes for free; the
-- formulas are PyTorch 1.13's (including its thresholds, constants and 0*log(0) = 0). Settings are
-- taken positionally in PyTorch's order (its deprecated size_average/reduce left out) or as a
-- trailing options table: nn.ELU(0.5), nn.ELU({alpha = 0.5}), F.elu(x, 0.5), F.elu(x, {alpha = 0.5}).
-- Dimensions are 1-based (negative from the end), as everywhere in partrain.
local pt = require "partrain.core"
local nn = require "partrain.nn"
local Module = nn.Module
local F = nn.functional
local docs = pt._docs

local function doc(obj, text)
  docs[obj] = text
  return obj
end

-- ------------------------------------------------------------------ errors and arguments

-- Errors are raised at the nearest caller outside partrain's own Lua files (the user's line).
local fail = require("partrain.tensor")._fail

local function shape_str(t) return "{" .. table.concat(t:size(), ",") .. "}" end

local function type_of(v)
  if pt.is_tensor(v) then return "tensor" end
  return type(v)
end

-- numbers as Python's repr writes them (PyTorch's printed settings): 1.0, 0.25, 1e-08, 20
local function num_repr(v)
  if math.type(v) == "integer" then return tostring(v) end
  if v ~= v then return "nan" end
  if v == math.huge then return "inf" elseif v == -math.huge then return "-inf" end
  for prec = 15, 17 do
    local s = string.format("%." .. prec .. "g", v)
    if tonumber(s) == v then
      if not s:find("[%.e]") then s = s .. ".0" end
      return s
    end
  end
  return tostring(v)
end

local function value_repr(v)
  if type(v) == "number" then return num_repr(v) end
  if type(v) == "string" then return "'" .. v .. "'" end
  return tostring(v)
end

-- argument checkers: check(name, key, value) -> value, or an error naming both
local function number(name, k, v)
  if type(v) ~= "number" then fail("%s: %s must be a number, got %s", name, k, type_of(v)) end
  return v
end
local function positive(name, k, v)
  number(name, k, v)
  if not (v > 0) then fail("%s: %s must be positive, got %s", name, k, num_repr(v)) end
  return v
end
local function nonneg(name, k, v)
  number(name, k, v)
  if not (v >= 0) then fail("%s: %s must be non-negative, got %s", name, k, num_repr(v)) end
  return v
end
local function nonzero(name, k, v)
  number(name, k, v)
  if v == 0 then fail("%s: %s must not be 0", name, k) end
  return v
end
local function boolean(name, k, v)
  if type(v) ~= "boolean" then fail("%s: %s must be a boolean, got %s", name, k, type_of(v)) end
  return v
end
local function pos_int(name, k, v)
  if math.type(v) ~= "integer" then
    if type(v) == "number" and v == math.floor(v) then return pos_int(name, k, math.tointeger(v)) end
    fail("%s: %s must be a positive integer, got %s", name, k,
      type(v) == "number" and num_repr(v) or type_of(v))
  end
  if v < 1 then fail("%s: %s must be a positive integer, got %d", name, k, v) end
  return v
end
local function dim_arg(name, k, v)
  if math.type(v) ~= "integer" or v == 0 then
    fail("%s: %s must be a non-zero integer (1-based, negative from the end), got %s", name, k,
      type(v) == "number" and num_repr(v) or type_of(v))
  end
  return v
end
local function dtype_arg(name, k, v)
  if v ~= "float32" and v ~= "float64" then
    fail("%s: %s must be \"float32\" or \"float64\", got %s", name, k, value_repr(v))
  end
  return v
end
local function tensor_arg(name, k, v)
  if not pt.is_tensor(v) then fail("%s: %s must be a tensor, got %s", name, k, type_of(v)) end
  return v
end
local function reduction_arg(name, k, v)
  if v ~= "mean" and v ~= "sum" and v ~= "none" then
    fail("%s: %s must be 'mean', 'sum' or 'none', got %s", name, k,
      type(v) == "string" and "'" .. v .. "'" or type_of(v))
  end
  return v
end
local function kl_reduction_arg(name, k, v)
  if v ~= "mean" and v ~= "sum" and v ~= "none" and v ~= "batchmean" then
    fail("%s: %s must be 'mean', 'batchmean', 'sum' or 'none', got %s", name, k,
      type(v) == "string" and "'" .. v .. "'" or type_of(v))
  end
  return v
end
local function sizes_arg(name, k, v)
  if type(v) ~= "table" or #v == 0 then
    fail("%s: %s must be a list of integers, got %s", name, k, type_of(v))
  end
  local out, infer = {}, false
  for i = 1, #v do
    local s = v[i]
    if math.type(s) ~= "integer" or s < -1 then
      fail("%s: %s must be a list of non-negative integers (one may be -1), got %s at %d", name, k,
        type(s) == "number" and num_repr(s) or type_of(s), i)
    end
    if s == -1 then
      if infer then fail("%s: %s may contain -1 only once", name, k) end
      infer = true
    end
    out[i] = s
  end
  return out
end

local REQUIRED = {}

-- parse(name, specs, ...) -> settings: specs is a list of {key, check, default}; the arguments
-- are the positional settings in that order, then optionally an options table (a table without
-- [1], so that a list such as Unflatten's sizes stays positional). Unknown options, a setting
-- given twice and missing required ones are errors.
local function parse(name, specs, ...)
  local n = select("#", ...)
  local args = {...}
  local opts
  if n > 0 and type(args[n]) == "table" and rawget(args[n], 1) == nil and getmetatable(args[n]) == nil then
    opts = args[n]
    n = n - 1
  end
  if n > #specs then
    fail("%s: too many arguments (%d settings at most, got %d)", name, #specs, n)
  end
  local out = {}
  for i = 1, n do out[specs[i][1]] = args[i] end
  if opts then
    for k, v in pairs(opts) do
      local known = false
      for _, s in ipairs(specs) do if s[1] == k then known = true end end
      if not known then fail("%s: unknown option '%s'", name, tostring(k)) end
      if out[k] ~= nil then fail("%s: %s given twice (as an argument and as an option)", name, k) end
      out[k] = v
    end
  end
  for _, s in ipairs(specs) do
    local k, check, default = s[1], s[2], s[3]
    if out[k] == nil then
      if default == REQUIRED then fail("%s: missing argument '%s'", name, k) end
      out[k] = default
    end
    if out[k] ~= nil then out[k] = check(name, k, out[k]) end
  end
  return out
end

local function check_input(name, x, what)
  what = what or "input"
  if not pt.is_tensor(x) then fail("%s: %s must be a tensor, got %s", name, what, type_of(x)) end
  local dt = x:dtype()
  if dt ~= "float32" and dt ~= "float64" then
    fail("%s: %s must be float32 or float64, got %s", name, what, dt)
  end
  return x
end

-- a target of labels (any numeric dtype) in the input's dtype
local function check_target(name, t, like, what)
  what = what or "target"
  if not pt.is_tensor(t) then fail("%s: %s must be a tensor, got %s", name, what, type_of(t)) end
  if t:dtype() ~= like:dtype() then t = t:to(like:dtype()) end
  return t
end

local function same_shape(name, a, b, what_a, what_b)
  if shape_str(a) ~= shape_str(b) then
    fail("%s: %s shape %s and %s shape %s differ", name, what_a or "input", shape_str(a),
      what_b or "target", shape_str(b))
  end
end

local function reduce(loss, reduction)
  if reduction == "mean" then return loss:mean() end
  if reduction == "sum" then return loss:sum() end
  return loss
end

local function norm_dim(name, d, ndim)
  local r = d < 0 and ndim + 1 + d or d
  if r < 1 or r > ndim then
    fail("%s: dim %d out of range for a %d-dimensional input", name, d, ndim)
  end
  return r
end

-- ------------------------------------------------------------------ class and function makers

local function settings_repr(keys)
  return function(self)
    local parts = {}
    for _, k in ipairs(keys) do
      local v = self[k]
      if k == "inplace" then
        if v then parts[#parts + 1] = "inplace=true" end
      elseif pt.is_tensor(v) then
        parts[#parts + 1] = k .. "=" .. shape_str(v)
      elseif type(v) == "table" then
        local s = {}
        for i, e in ipairs(v) do s[i] = value_repr(e) end
        parts[#parts + 1] = k .. "={" .. table.concat(s, ", ") .. "}"
      elseif v ~= nil then
        parts[#parts + 1] = k .. "=" .. value_repr(v)
      end
    end
    return table.concat(parts, ", ")
  end
end

-- def = {cls = "ELU", fname = "elu", args = specs, fn = function(x..., settings), n_in = 1,
--        repr = {keys shown}, check = function(name, x...) -> x... (inputs), doc =, fdoc =}
-- Makes nn[cls] (its settings are fields: m.alpha) and nn.functional[fname] (also nn[fname]).
local function define(def)
  local n_in = def.n_in or 1
  local cls_name, fname = def.cls, def.fname
  if cls_name and rawget(nn, cls_name) == nil then
    local cls = Module:extend(cls_name)
    nn[cls_name] = cls
    function cls:__init(...)
      local s = parse(cls_name, def.args, ...)
      for _, spec in ipairs(def.args) do self[spec[1]] = s[spec[1]] end
      if def.init then def.init(self, s) end
    end
    local fwd = cls_name .. ":forward"
    if n_in == 1 then
      function cls:forward(x, ...)
        if select("#", ...) > 0 then fail("%s: expected 1 input, got %d", fwd, 1 + select("#", ...)) end
        return def.fn(def.check(fwd, x), self, fwd)
      end
    elseif n_in == 2 then
      function cls:forward(a, b)
        a, b = def.check(fwd, a, b)
        return def.fn(a, b, self, fwd)
      end
    else
      function cls:forward(a, b, c)
        a, b, c = def.check(fwd, a, b, c)
        return def.fn(a, b, c, self, fwd)
      end
    end
    cls.extra_repr = settings_repr(def.repr or {})
    doc(cls, def.doc)
  end
  if fname and F[fname] == nil then
    local f
    local fargs = def.fargs or def.args
    if n_in == 1 then
      f = function(x, ...) return def.fn(def.check(fname, x), parse(fname, fargs, ...), fname) end
    elseif n_in == 2 then
      f = function(a, b, ...)
        a, b = def.check(fname, a, b)
        return def.fn(a, b, parse(fname, fargs, ...), fname)
      end
    else
      f = function(a, b, c, ...)
        a, b, c = def.check(fname, a, b, c)
        return def.fn(a, b, c, parse(fname, fargs, ...), fname)
      end
    end
    F[fname] = f
    if nn[fname] == nil then nn[fname] = f end
    doc(f, def.fdoc)
  end
end

-- ------------------------------------------------------------------ activations

-- an element-wise activation: y = fn(x, settings); inplace = true writes y into x
local function elementwise(def)
  local fn = def.fn
  def.fn = function(x, s, name)
    if s.inplace and x.requires_grad and x.is_leaf and pt.is_grad_enabled() then
      fail("%s: inplace=true on a leaf tensor that requires grad (its gradient would be lost; PyTorch refuses it too)", name)
    end
    if not s.inplace then return fn(x, s, name) end
    -- the backward of fn may read its input, which copy_ overwrites: under autograd fn works on a
    -- clone (copy_ does not bump the version that would catch it, so the gradient would be wrong)
    local y = fn((x.requires_grad and pt.is_grad_enabled()) and x:clone() or x, s, name)
    x:copy_(y)
    return x
  end
  def.check = check_input
  define(def)
end

local function softplus_of(x, beta, threshold)
  local bx = beta == 1 and x or x * beta
  local y = pt.minimum(bx, threshold):exp():log1p()
  if beta ~= 1 then y = y / beta end
  return pt.where(bx:gt(threshold), x, y)
end

local function neg_part_expm1(x, alpha) -- alpha * (exp(min(x, 0)) - 1)
  return pt.minimum(x, 0):expm1() * alpha
end

elementwise {
  cls = "ELU", fname = "elu",
  args = {{"alpha", number, 1.0}, {"inplace", boolean, false}}, repr = {"alpha", "inplace"},
  fn = function(x, s) return pt.where(x:gt(0), x, neg_part_expm1(x, s.alpha)) end,
  doc = [==[nn.ELU([alpha=1.0[, inplace=false]]): x for x > 0, alpha * (exp(x) - 1) otherwise.
  Settings also as options: nn.ELU({alpha=, inplace=}). inplace writes the result into the input.]==],
  fdoc = "F.elu(x[, alpha=1.0[, inplace=false]]) -> x > 0 and x or alpha * (exp(x) - 1) (also {alpha=, inplace=}).",
}

local SELU_ALPHA = 1.6732632423543772848170429916717
local SELU_SCALE = 1.0507009873554804934193349852946
elementwise {
  cls = "SELU", fname = "selu",
  args = {{"inplace", boolean, false}}, repr = {"inplace"},
  fn = function(x) return pt.where(x:gt(0), x, neg_part_expm1(x, SELU_ALPHA)) * SELU_SCALE end,
  doc = [==[nn.SELU([inplace=false]): scale * ELU(x, alpha) with PyTorch's fixed alpha and scale.
  alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946.]==],
  fdoc = "F.selu(x[, inplace=false]) -> scale * elu(x, alpha) with alpha = 1.67326..., scale = 1.05070... (see help(nn.SELU)).",
}

elementwise {
  cls = "CELU", fname = "celu",
  args = {{"alpha", nonzero, 1.0}, {"inplace", boolean, false}}, repr = {"alpha", "inplace"},
  fn = function(x, s)
    local a = s.alpha
    return pt.where(x:gt(0), x, pt.minimum(x / a, 0):expm1() * a)
  end,
  doc = [==[nn.CELU([alpha=1.0[, inplace=false]]): max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
  alpha must not be 0. Settings also as options: nn.CELU({alpha=, inplace=}).]==],
  fdoc = "F.celu(x[, alpha=1.0[, inplace=false]]) -> max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).",
}

elementwise {
  cls = "Softplus", fname = "softplus",
  args = {{"beta", nonzero, 1}, {"threshold", number, 20}}, repr = {"beta", "threshold"},
  fn = function(x, s) return softplus_of(x, s.beta, s.threshold) end,
  doc = [==[nn.Softplus([beta=1[, threshold=20]]): log(1 + exp(beta * x)) / beta, smooth ReLU.
  x itself where beta * x > threshold (as PyTorch, for stability). Settings also as options:
  nn.Softplus({beta=, threshold=}).]==],
  fdoc = "F.softplus(x[, beta=1[, threshold=20]]) -> log(1 + exp(beta*x)) / beta; x where beta*x > threshold.",
}

elementwise {
  cls = "Mish", fname = "mish",
  args = {{"inplace", boolean, false}}, repr = {"inplace"},
  fn = function(x) return x * softplus_of(x, 1, 20):tanh() end,
  doc = "nn.Mish([inplace=false]): x * tanh(softplus(x)).",
  fdoc = "F.mish(x[, inplace=false]) -> x * tanh(softplus(x)).",
}

local function check_range(name, s)
  if not (s.max_val > s.min_val) then
    fail("%s: max_val (%s) must be greater than min_val (%s)", name, num_repr(s.max_val), num_repr(s.min_val))
  end
end
elementwise {
  cls = "Hardtanh", fname = "hardtanh",
  args = {{"min_val", number, -1.0}, {"max_val", number, 1.0}, {"inplace", boolean, false}},
  repr = {"min_val", "max_val", "inplace"},
  init = function(_, s) check_range("Hardtanh", s) end,
  fn = function(x, s, name)
    check_range(name, s)
    return x:clamp(s.min_val, s.max_val)
  end,
  doc = [==[nn.Hardtanh([min_val=-1.0[, max_val=1.0[, inplace=false]]]): x clamped to [min_val, max_val].
  Settings also as options: nn.Hardtanh({min_val=, max_val=, inplace=}); max_val > min_val.]==],
  fdoc = "F.hardtanh(x[, min_val=-1.0[, max_val=1.0[, inplace=false]]]) -> x clamped to [min_val, max_val].",
}

elementwise {
  cls = "ReLU6", fname = "relu6",
  args = {{"inplace", boolean, false}}, repr = {"inplace"},
  fn = function(x) return x:clamp(0, 6) end,
  doc = "nn.ReLU6([inplace=false]): min(max(x, 0), 6).",
  fdoc = "F.relu6(x[, inplace=false]) -> min(max(x, 0), 6).",
}

elementwise {
  cls = "Hardswish", fname = "hardswish",
  args = {{"inplace", boolean, false}}, repr = {"inplace"},
  fn = function(x) return x * (x + 3):clamp(0, 6) / 6 end,
  doc = "nn.Hardswish([inplace=false]): x * relu6(x + 3) / 6 (0 below -3, x above 3).",
  fdoc = "F.hardswish(x[, inplace=false]) -> x * relu6(x + 3) / 6.",
}

elementwise {
  cls = "Hardsigmoid", fname = "hardsigmoid",
  args = {{"inplace", boolean, false}}, repr = {"inplace"},
  fn = function(x) return (x + 3):clamp(0, 6) / 6 end,
  doc = "nn.Hardsigmoid([inplace=false]): relu6(x + 3) / 6 (0 below -3, 1 above 3).",
  fdoc = "F.hardsigmoid(x[, inplace=false]) -> relu6(x + 3) / 6.",
}

elementwise {
  cls = "Softsign", fname = "softsign", args = {},
  fn = function(x) return x / (x:abs() + 1) end,
  doc = "nn.Softsign(): x / (1 + |x|).",
  fdoc = "F.softsign(x) -> x / (1 + |x|).",
}

elementwise {
  cls = "Tanhshrink", fname = "tanhshrink", args = {},
  fn = function(x) return x - x:tanh() end,
  doc = "nn.Tanhshrink(): x - tanh(x).",
  fdoc = "F.tanhshrink(x) -> x - tanh(x).",
}

elementwise {
  cls = "Threshold", fname = "threshold",
  args = {{"threshold", number, REQUIRED}, {"value", number, REQUIRED}, {"inplace", boolean, false}},
  repr = {"threshold", "value", "inplace"},
  fn = function(x, s) return pt.where(x:gt(s.threshold), x, s.value) end,
  doc = [==[nn.Threshold(threshold, value[, inplace=false]): x where x > threshold, value elsewhere.
  Settings also as options: nn.Threshold({threshold=, value=, inplace=}).]==],
  fdoc = "F.threshold(x, threshold, value[, inplace=false]) -> x where x > threshold, value elsewhere.",
}

elementwise {
  cls = "LogSigmoid", fname = "logsigmoid", args = {},
  -- min(x, 0) - log(1 + exp(-|x|)): log(sigmoid(x)) without overflow, as PyTorch computes it
  fn = function(x) return pt.minimum(x, 0) - x:abs():neg():exp():log1p() end,
  doc = "nn.LogSigmoid(): log(sigmoid(x)), computed stably as min(x, 0) - log1p(exp(-|x|)).",
  fdoc = "F.logsigmoid(x) -> log(sigmoid(x)), computed stably.",
}

define {
  cls = "GLU", fname = "glu",
  args = {{"dim", dim_arg, -1}}, repr = {"dim"}, check = check_input,
  fn = function(x, s, name)
    if x:dim() == 0 then fail("%s: a 0-dimensional input cannot be halved", name) end
    local d = norm_dim(name, s.dim, x:dim())
    local n = x:size(d)
    if n % 2 ~= 0 then
      fail("%s: halving dimension must be even, but dimension %d has size %d (input shape %s)", name,
        d, n, shape_str(x))
    end
    local a, b = x:narrow(d, 1, n // 2), x:narrow(d, n // 2 + 1, n // 2)
    return a * b:sigmoid()
  end,
  doc = [==[nn.GLU([dim=-1]): gated linear unit a * sigmoid(b), a and b the halves of the input along dim.
  dim is 1-based (negative from the end) and its size must be even; also nn.GLU({dim=}).]==],
  fdoc = "F.glu(x[, dim=-1]) -> a * sigmoid(b), a and b the two halves of x along dim (1-based).",
}

define {
  cls = "Softmin", fname = "softmin",
  args = {{"dim", dim_arg, -1}}, repr = {"dim"}, check = check_input,
  fn = function(x, s) return nn.softmax(-x, s.dim) end,
  doc = [==[nn.Softmin([dim=-1]): softmax(-x) along dim (1-based, negative from the end).
  The default -1 is nn.Softmax's (PyTorch guesses one); also nn.Softmin({dim=}).]==],
  fdoc = "F.softmin(x[, dim=-1]) -> softmax(-x, dim).",
}

-- PReLU: y = x for x > 0, weight * x otherwise; weight {num_parameters} (or 1) along dim 2
local function prelu(name, x, w)
  if not pt.is_tensor(w) then fail("%s: weight must be a tensor, got %s", name, type_of(w)) end
  if w:dim() > 1 then fail("%s: weight must be 1-dimensional, got shape %s", name, shape_str(w)) end
  local n = w:numel()
  if n ~= 1 then
    if x:dim() < 2 then
      fail("%s: weight has %d parameters, but an input of fewer than 2 dimensions (shape %s) has 1 channel",
        name, n, shape_str(x))
    end
    local channels = x:size(2)
    if channels ~= n then
      fail("%s: weight has %d parameters, but the input has %d channels (dim 2 of input shape %s)",
        name, n, channels, shape_str(x))
    end
    local shape = {}
    for d = 1, x:dim() do shape[d] = d == 2 and n or 1 end
    w = w:reshape(shape)
  elseif x:dim() == 0 then
    w = w:reshape({})
  end
  return pt.where(x:gt(0), x, x * w)
end

local PReLU = Module:extend("PReLU")
nn.PReLU = PReLU
local PRELU_ARGS = {{"num_parameters", pos_int, 1}, {"init", number, 0.25}, {"dtype", dtype_arg, "float32"}}
function PReLU:__init(...)
  local s = parse("PReLU", PRELU_ARGS, ...)
  self.num_parameters = s.num_parameters
  self.weight = nn.Parameter(pt.full({s.num_parameters}, s.init, {dtype = s.dtype}))
end
function PReLU:forward(x) return prelu("PReLU:forward", check_input("PReLU:forward", x), self.weight) end
function PReLU:extra_repr() return "num_parameters=" .. self.num_parameters end
doc(PReLU, [==[nn.PReLU([num_parameters=1[, init=0.25[, dtype="float32"]]]): x for x > 0, a * x otherwise, a learnable.
  weight {num_parameters} filled with init: one slope for all (num_parameters=1) or one per
  channel (dim 2 of the input; an input of fewer dims has 1 channel). Also nn.PReLU({num_parameters=, init=, dtype=}).]==])
function F.prelu(x, weight, ...)
  if select("#", ...) > 0 then fail("prelu: expected (input, weight), got %d arguments", 2 + select("#", ...)) end
  return prelu("prelu", check_input("prelu", x), weight)
end
if nn.prelu == nil then nn.prelu = F.prelu end
doc(F.prelu, "F.prelu(x, weight) -> x > 0 and x or weight * x; weight of 1 element or one per channel (dim 2).")

-- ------------------------------------------------------------------ normalize and distances

F.normalize = function(x, ...)
  check_input("normalize", x)
  local s = parse("normalize", {{"p", number, 2.0}, {"dim", dim_arg, 2}, {"eps", nonneg, 1e-12}}, ...)
  if x:dim() == 0 then fail("normalize: input must have at least one dimension, got a 0-dimensional tensor") end
  local d = norm_dim("normalize", s.dim, x:dim())
  return x / pt.maximum(x:norm(s.p, d, true), s.eps)
end
if nn.normalize == nil then nn.normalize = F.normalize end
doc(F.normalize, [==[F.normalize(x[, p=2.0[, dim=2[, eps=1e-12]]]) -> x / max(||x||_p along dim, eps).
  Unit p-norm rows of a {N,D} input by default: dim is 1-based (PyTorch's dim=1 is dim=2 here).
  Settings also as options: F.normalize(x, {p=, dim=, eps=}).]==])

local function check_pair(name, a, b)
  check_input(name, a, "x1")
  check_input(name, b, "x2")
  return a, b
end

-- the shape a and b broadcast to, or an error naming both
local function broadcast_shape(name, a, b, wa, wb)
  local sa, sb = a:size(), b:size()
  local n = math.max(#sa, #sb)
  local out = {}
  for i = 1, n do
    local da, db = sa[#sa - n + i] or 1, sb[#sb - n + i] or 1
    if da ~= db and da ~= 1 and db ~= 1 then
      fail("%s: %s shape %s and %s shape %s cannot be broadcast", name, wa or "x1", shape_str(a),
        wb or "x2", shape_str(b))
    end
    out[i] = da == 1 and db or da
  end
  return out
end

-- PyTorch 1.13's cosine_similarity: squared norms clamped at eps^2 (the clamp passes gradients
-- through unchanged, as its in-place clamp under no_grad does), sum(x1 * x2 / sqrt(n1 * n2))
local function cosine_similarity(name, x1, x2, dim, eps)
  local common = broadcast_shape(name, x1, x2)
  if #common == 0 then fail("%s: inputs must have at least one dimension", name) end
  local d = norm_dim(name, dim, #common)
  local cs = "{" .. table.concat(common, ",") .. "}"
  if shape_str(x1) ~= cs then x1 = x1:expand(common) end
  if shape_str(x2) ~= cs then x2 = x2:expand(common) end
  local function clamped(sq)
    local c = pt.maximum(sq:detach(), eps * eps)
    return sq + (c - sq:detach())
  end
  local n1 = clamped((x1 * x1):sum(d, true))
  local n2 = clamped((x2 * x2):sum(d, true))
  return (x1 * x2 * (n1 * n2):rsqrt()):sum(d)
end

define {
  cls = "CosineSimilarity", fname = "cosine_similarity", n_in = 2, check = check_pair,
  args = {{"dim", dim_arg, 2}, {"eps", nonneg, 1e-8}}, repr = {"dim", "eps"},
  fn = function(x1, x2, s, name) return cosine_similarity(name, x1, x2, s.dim, s.eps) end,
  doc = [==[nn.CosineSimilarity([dim=2[, eps=1e-8]]): forward(x1, x2) -> cosine of x1 and x2 along dim.
  sum(x1 * x2) / sqrt(max(||x1||^2, eps^2) * max(||x2||^2, eps^2)) (PyTorch 1.13's formula); dim
  is 1-based (PyTorch's dim=1 is dim=2 here) and removed; x1 and x2 broadcast against each other.
  Settings also as options: nn.CosineSimilarity({dim=, eps=}).]==],
  fdoc = "F.cosine_similarity(x1, x2[, dim=2[, eps=1e-8]]) -> cosine of x1 and x2 along dim (see help(nn.CosineSimilarity)).",
}

local function pairwise_distance(name, x1, x2, p, eps, keepdim)
  local nd = #broadcast_shape(name, x1, x2)
  local diff = x1 - x2 + eps
  if nd == 0 then return diff:abs() end
  return diff:norm(p, nd, keepdim)
end

define {
  cls = "PairwiseDistance", fname = "pairwise_distance", n_in = 2, check = check_pair,
  args = {{"p", nonneg, 2.0}, {"eps", nonneg, 1e-6}, {"keepdim", boolean, false}},
  repr = {"p", "eps", "keepdim"},
  fn = function(x1, x2, s, name) return pairwise_distance(name, x1, x2, s.p, s.eps, s.keepdim) end,
  doc = [==[nn.PairwiseDistance([p=2.0[, eps=1e-6[, keepdim=false]]]): forward(x1, x2) -> ||x1 - x2 + eps||_p.
  The norm is over the last dim (x1 and x2 broadcast). Settings also as options:
  nn.PairwiseDistance({p=, eps=, keepdim=}).]==],
  fdoc = "F.pairwise_distance(x1, x2[, p=2.0[, eps=1e-6[, keepdim=false]]]) -> ||x1 - x2 + eps||_p over the last dim.",
}

-- ------------------------------------------------------------------ losses

-- a loss: specs end with reduction; fn(inputs..., s) -> unreduced loss (or reduces itself)
local function loss(def)
  local reduction_spec = {"reduction", def.kl and kl_reduction_arg or reduction_arg, "mean"}
  local args = {}
  for i, a in ipairs(def.args) do args[i] = a end
  table.insert(args, def.reduction_at or #args + 1, reduction_spec)
  def.args = args
  local keys = {}
  for _, a in ipairs(args) do if a[1] ~= "weight" then keys[#keys + 1] = a[1] end end
  def.repr = keys
  local fn = def.fn
  local n_in = def.n_in or 2
  if not def.reduces then
    if n_in == 2 then
      def.fn = function(a, b, s, name) return reduce(fn(a, b, s, name), s.reduction) end
    else
      def.fn = function(a, b, c, s, name) return reduce(fn(a, b, c, s, name), s.reduction) end
    end
  end
  def.n_in = n_in
  define(def)
end

local function check_input_target(name, x, y)
  check_input(name, x)
  if not pt.is_tensor(y) then fail("%s: target must be a tensor, got %s", name, type_of(y)) end
  same_shape(name, x, y)
  return x, check_target(name, y, x)
end

loss {
  cls = "KLDivLoss", fname = "kl_div", kl = true, reduces = true, reduction_at = 1,
  args = {{"log_target", boolean, false}},
  check = check_input_target,
  fn = function(x, y, s)
    local l
    if s.log_target then
      l = y:exp() * (y - x)
    else
      l = pt.xlogy(y, y) - y * x -- 0 * log(0) = 0
    end
    if s.reduction == "batchmean" then
      return x:dim() > 0 and l:sum() / x:size(1) or l:sum()
    end
    return reduce(l, s.reduction)
  end,
  doc = [==[nn.KLDivLoss([reduction="mean"[, log_target=false]]): forward(log_probs, target) -> KL divergence.
  Pointwise target * (log(target) - input) (0 where target is 0), or exp(target) * (target -
  input) with log_target=true. reduction "batchmean" (sum / batch size: the KL divergence, as
  PyTorch recommends), "mean" (over all elements), "sum" or "none". Also as options:
  nn.KLDivLoss({reduction=, log_target=}).]==],
  fdoc = "F.kl_div(input, target[, reduction=\"mean\"[, log_target=false]]) (also {reduction=, log_target=}); see help(nn.KLDivLoss).",
}

loss {
  cls = "HuberLoss", fname = "huber_loss", reduction_at = 1,
  args = {{"delta", positive, 1.0}},
  check = check_input_target,
  fn = function(x, y, s)
    local d = (x - y):abs()
    local delta = s.delta
    return pt.where(d:lt(delta), d * d * 0.5, (d - 0.5 * delta) * delta)
  end,
  doc = [==[nn.HuberLoss([reduction="mean"[, delta=1.0]]): forward(input, target) -> Huber loss.
  0.5 d^2 where |d| < delta, delta * (|d| - delta/2) elsewhere (d = input - target; shapes must
  match). It is delta * SmoothL1Loss with beta = delta: the two agree at delta = beta = 1.
  Also as options: nn.HuberLoss({reduction=, delta=}).]==],
  fdoc = "F.huber_loss(input, target[, reduction=\"mean\"[, delta=1.0]]) (also {reduction=, delta=}); see help(nn.HuberLoss).",
}

local function check_three_same(name, a, b, y, wa, wb, wy)
  check_input(name, a, wa)
  check_input(name, b, wb)
  if not pt.is_tensor(y) then fail("%s: %s must be a tensor, got %s", name, wy, type_of(y)) end
  same_shape(name, a, b, wa, wb)
  same_shape(name, a, y, wa, wy)
  return a, b, check_target(name, y, a, wy)
end

loss {
  cls = "MarginRankingLoss", fname = "margin_ranking_loss", n_in = 3,
  args = {{"margin", number, 0.0}},
  check = function(name, a, b, y) return check_three_same(name, a, b, y, "input1", "input2", "target") end,
  fn = function(a, b, y, s) return (-y * (a - b) + s.margin):clamp(0) end,
  doc = [==[nn.MarginRankingLoss([margin=0.0[, reduction="mean"]]): forward(x1, x2, target) -> ranking loss.
  max(0, -target * (x1 - x2) + margin), target 1 (x1 should rank higher) or -1; the three of one
  shape. Also as options: nn.MarginRankingLoss({margin=, reduction=}).]==],
  fdoc = "F.margin_ranking_loss(input1, input2, target[, margin=0.0[, reduction=\"mean\"]]); see help(nn.MarginRankingLoss).",
}

loss {
  cls = "CosineEmbeddingLoss", fname = "cosine_embedding_loss", n_in = 3,
  args = {{"margin", number, 0.0}},
  check = function(name, a, b, y)
    check_input(name, a, "input1")
    check_input(name, b, "input2")
    if not pt.is_tensor(y) then fail("%s: target must be a tensor, got %s", name, type_of(y)) end
    if a:dim() ~= 1 and a:dim() ~= 2 then
      fail("%s: input1 must be {N,D} or {D}, got shape %s", name, shape_str(a))
    end
    same_shape(name, a, b, "input1", "input2")
    if y:dim() ~= a:dim() - 1 or (a:dim() == 2 and y:size(1) ~= a:size(1)) then
      fail("%s: target shape %s does not match inputs of shape %s (expected %s)", name, shape_str(y),
        shape_str(a), a:dim() == 2 and "{" .. a:size(1) .. "}" or "{}")
    end
    return a, b, check_target(name, y, a)
  end,
  fn = function(a, b, y, s)
    local d = a:dim()
    local EPS = 1e-12
    local prod = (a * b):sum(d)
    local m1 = (a * a):sum(d) + EPS
    local m2 = (b * b):sum(d) + EPS
    local cos = prod / (m1 * m2):sqrt()
    local pos = pt.where(y:eq(1), 1 - cos, 0)
    local neg = pt.where(y:eq(-1), (cos - s.margin):clamp(0), 0)
    return pos + neg
  end,
  doc = [==[nn.CosineEmbeddingLoss([margin=0.0[, reduction="mean"]]): forward(x1, x2, target) -> loss.
  x1, x2 {N,D} (or {D}), target {N} (or {}) of 1 and -1: 1 - cos(x1, x2) where target is 1,
  max(0, cos(x1, x2) - margin) where it is -1. Also as options: {margin=, reduction=}.]==],
  fdoc = "F.cosine_embedding_loss(input1, input2, target[, margin=0.0[, reduction=\"mean\"]]); see help(nn.CosineEmbeddingLoss).",
}

loss {
  cls = "TripletMarginLoss", fname = "triplet_margin_loss", n_in = 3,
  args = {{"margin", number, 1.0}, {"p", nonneg, 2.0}, {"eps", nonneg, 1e-6}, {"swap", boolean, false}},
  check = function(name, a, p, n)
    check_input(name, a, "anchor")
    check_input(name, p, "positive")
    check_input(name, n, "negative")
    if a:dim() ~= p:dim() or a:dim() ~= n:dim() then
      fail("%s: anchor, positive and negative must have the same number of dimensions, got shapes %s, %s and %s",
        name, shape_str(a), shape_str(p), shape_str(n))
    end
    if a:dim() ~= 1 and a:dim() ~= 2 then
      fail("%s: inputs must be {N,D} or {D}, got shape %s", name, shape_str(a))
    end
    return a, p, n
  end,
  fn = function(a, p, n, s, name)
    local d_ap = pairwise_distance(name, a, p, s.p, s.eps, false)
    local d_an = pairwise_distance(name, a, n, s.p, s.eps, false)
    if s.swap then d_an = pt.minimum(d_an, pairwise_distance(name, p, n, s.p, s.eps, false)) end
    return (d_ap - d_an + s.margin):clamp(0)
  end,
  doc = [==[nn.TripletMarginLoss([margin=1.0[, p=2.0[, eps=1e-6[, swap=false[, reduction="mean"]]]]]): triplet loss.
  forward(anchor, positive, negative), each {N,D} or {D}: max(d(a, p) - d(a, n) + margin, 0),
  d = F.pairwise_distance with p and eps; swap: d(a, n) is min(d(a, n), d(p, n)).
  Also as options: nn.TripletMarginLoss({margin=, p=, eps=, swap=, reduction=}).]==],
  fdoc = "F.triplet_margin_loss(anchor, positive, negative[, margin=1.0[, p=2.0[, eps=1e-6[, swap=false[, reduction=\"mean\"]]]]]).",
}

loss {
  cls = "PoissonNLLLoss", fname = "poisson_nll_loss",
  args = {{"log_input", boolean, true}, {"full", boolean, false}, {"eps", nonneg, 1e-8}},
  check = check_input_target,
  fn = function(x, y, s)
    local l
    if s.log_input then
      l = x:exp() - y * x
    else
      l = x - y * (x + s.eps):log()
    end
    if s.full then
      -- Stirling's approximation of log(target!), only where target > 1 (the clamp keeps the
      -- masked entries finite, so their gradient is 0)
      local t = y:clamp(1)
      local stirling = t * t:log() - t + (t * (2 * math.pi)):log() * 0.5
      l = l + pt.where(y:gt(1), stirling, 0)
    end
    return l
  end,
  doc = [==[nn.PoissonNLLLoss([log_input=true[, full=false[, eps=1e-8[, reduction="mean"]]]]): Poisson NLL.
  forward(input, target), target ~ Poisson(input): exp(input) - target * input (log_input),
  else input - target * log(input + eps); full adds Stirling's term target*log(target) - target
  + 0.5*log(2*pi*target) where target > 1. Also as options: {log_input=, full=, eps=, reduction=}.]==],
  fdoc = "F.poisson_nll_loss(input, target[, log_input=true[, full=false[, eps=1e-8[, reduction=\"mean\"]]]]); see help(nn.PoissonNLLLoss).",
}

loss {
  cls = "GaussianNLLLoss", fname = "gaussian_nll_loss", n_in = 3,
  args = {{"full", boolean, false}, {"eps", nonneg, 1e-6}},
  check = function(name, x, y, var)
    check_input(name, x)
    check_input(name, y, "target")
    if not pt.is_tensor(var) then fail("%s: var must be a tensor, got %s", name, type_of(var)) end
    same_shape(name, x, y)
    var = check_target(name, var, x, "var")
    local xs, vs = x:size(), var:size()
    if shape_str(var) ~= shape_str(x) then
      local head = x:dim() > 0 and "{" .. table.concat(xs, ",", 1, #xs - 1) .. "}" or nil
      if head and shape_str(var) == head then
        var = var:unsqueeze(-1)
      elseif not (head and #vs == #xs and vs[#vs] == 1
                  and "{" .. table.concat(vs, ",", 1, #vs - 1) .. "}" == head) then
        fail("%s: var shape %s does not fit input shape %s (expected the input's shape, or it with the "
          .. "last dim 1 or removed)", name, shape_str(var), shape_str(x))
      end
    end
    if var:lt(0):any():item() then fail("%s: var has negative entries", name) end
    return x, y, var
  end,
  fn = function(x, y, var, s)
    -- clamped at eps; the clamp passes gradients unchanged, as PyTorch's no_grad clamp_ does
    local v = var + (pt.maximum(var:detach(), s.eps) - var:detach())
    local d = x - y
    local l = (v:log() + d * d / v) * 0.5
    if s.full then l = l + 0.5 * math.log(2 * math.pi) end
    return l
  end,
  doc = [==[nn.GaussianNLLLoss([{full=false, eps=1e-6, reduction="mean"}]): forward(input, target, var) -> Gaussian NLL.
  0.5 * (log(var) + (input - target)^2 / var) (+ 0.5*log(2*pi) with full), var clamped at eps
  (its gradient passed through, as PyTorch). var has the input's shape, or it with the last
  dim 1 or removed (one variance for all of a row); negative entries are errors.]==],
  fdoc = "F.gaussian_nll_loss(input, target, var[, full=false[, eps=1e-6[, reduction=\"mean\"]]]); see help(nn.GaussianNLLLoss).",
}

loss {
  cls = "SoftMarginLoss", fname = "soft_margin_loss", args = {},
  check = check_input_target,
  fn = function(x, y) return softplus_of(-y * x, 1, 20) end,
  doc = [==[nn.SoftMarginLoss([reduction="mean"]): forward(input, target) -> log(1 + exp(-target * input)).
  target 1 or -1; computed without overflow. Also as options: nn.SoftMarginLoss({reduction=}).]==],
  fdoc = "F.soft_margin_loss(input, target[, reduction=\"mean\"]) -> log(1 + exp(-target * input)), reduced.",
}

loss {
  cls = "MultiLabelSoftMarginLoss", fname = "multilabel_soft_margin_loss",
  args = {{"weight", tensor_arg, nil}},
  init = function(self)
    local w = rawget(self, "weight")
    if w ~= nil then
      rawset(self, "weight", nil)
      self:register_buffer("weight", w)
    end
  end,
  check = check_input_target,
  fn = function(x, y, s, name)
    local ls = F.logsigmoid
    local l = -(y * ls(x) + (1 - y) * ls(-x))
    local w = s.weight
    if w ~= nil then
      local ok, r = pcall(function() return l * w end)
      if not ok then
        fail("%s: weight shape %s does not broadcast to input shape %s", name, shape_str(w), shape_str(x))
      end
      l = r
    end
    if x:dim() == 0 then return l end
    local cdim = x:dim()
    return l:sum(cdim) / x:size(cdim)
  end,
  doc = [==[nn.MultiLabelSoftMarginLoss([weight=nil[, reduction="mean"]]): forward(scores, targets) -> multi-label loss.
  scores {N,C}, targets {N,C} of 0 and 1: per sample the mean over classes of -(y log sigmoid(x)
  + (1-y) log sigmoid(-x)), times weight {C} (a buffer) if given; reduced over N. Also as
  options: nn.MultiLabelSoftMarginLoss({weight=, reduction=}).]==],
  fdoc = "F.multilabel_soft_margin_loss(input, target[, weight=nil[, reduction=\"mean\"]]); see help(nn.MultiLabelSoftMarginLoss).",
}

loss {
  cls = "HingeEmbeddingLoss", fname = "hinge_embedding_loss",
  args = {{"margin", number, 1.0}},
  check = check_input_target,
  fn = function(x, y, s)
    -- as PyTorch: a target that is neither 1 nor -1 gets both terms
    local margin_term = pt.where(y:ne(1), (s.margin - x):clamp(0), 0)
    local self_term = pt.where(y:ne(-1), x, 0)
    return margin_term + self_term
  end,
  doc = [==[nn.HingeEmbeddingLoss([margin=1.0[, reduction="mean"]]): forward(input, target) -> hinge loss.
  input where target is 1, max(0, margin - input) where target is -1. Also as options:
  nn.HingeEmbeddingLoss({margin=, reduction=}).]==],
  fdoc = "F.hinge_embedding_loss(input, target[, margin=1.0[, reduction=\"mean\"]]); see help(nn.HingeEmbeddingLoss).",
}

-- ------------------------------------------------------------------ shape layers

local Unflatten = Module:extend("Unflatten")
nn.Unflatten = Unflatten
local UNFLATTEN_ARGS = {{"dim", dim_arg, REQUIRED}, {"unflattened_size", sizes_arg, REQUIRED}}
function Unflatten:__init(...)
  local s = parse("Unflatten", UNFLATTEN_ARGS, ...)
  self.dim, self.unflattened_size = s.dim, s.unflattened_size
end
function Unflatten:forward(x)
  local name = "Unflatten:forward"
  if not pt.is_tensor(x) then fail("%s: input must be a tensor, got %s", name, type_of(x)) end
  local n = x:dim()
  if n == 0 then fail("%s: cannot unflatten a 0-dimensional tensor", name) end
  local d = norm_dim(name, self.dim, n)
  local size, sizes = x:size(), self.unflattened_size
  local prod, infer = 1, nil
  for i, s in ipairs(sizes) do
    if s == -1 then infer = i else prod = prod * s end
  end
  local sizes_text = "{" .. table.concat(sizes, ",") .. "}"
  local new = {}
  for i, s in ipairs(sizes) do new[i] = s end
  if infer then
    if prod == 0 or size[d] % prod ~= 0 then
      fail("%s: unflattened_size %s does not fit dim %d of size %d (input shape %s)", name,
        sizes_text, d, size[d], shape_str(x))
    end
    new[infer] = size[d] // prod
  elseif prod ~= size[d] then
    fail("%s: unflattened_size %s multiplies to %d, not to the size %d of dim %d (input shape %s)",
      name, sizes_text, prod, size[d], d, shape_str(x))
  end
  local shape = {}
  for i = 1, d - 1 do shape[#shape + 1] = size[i] end
  for _, s in ipairs(new) do shape[#shape + 1] = s end
  for i = d + 1, n do shape[#shape + 1] = size[i] end
  return x:reshape(shape)
end
function Unflatten:extra_repr()
  return string.format("dim=%d, unflattened_size={%s}", self.dim, table.concat(self.unflattened_size, ", "))
end
doc(Unflatten, [==[nn.Unflatten(dim, unflattened_size): splits dim into the sizes of a list, the inverse of nn.Flatten.
  dim is 1-based (negative from the end); one size may be -1: nn.Unflatten(2, {2, 3}) makes
  {N,6} {N,2,3}. Also nn.Unflatten({dim=, unflattened_size=}).]==])

-- {*, C*r*r, H, W} <-> {*, C, H*r, W*r}
local function pixel_shuffle(name, x, r, up)
  check_input(name, x)
  local n = x:dim()
  if n < 3 then
    fail("%s: input must have at least 3 dimensions {*, C, H, W}, got shape %s", name, shape_str(x))
  end
  local size = x:size()
  local batch = {}
  for i = 1, n - 3 do batch[i] = size[i] end
  local c, h, w = size[n - 2], size[n - 1], size[n]
  local nb = #batch
  local function shape_of(...)
    local s = {}
    for i = 1, nb do s[i] = batch[i] end
    for _, v in ipairs({...}) do s[#s + 1] = v end
    return s
  end
  local perm = {}
  for i = 1, nb do perm[i] = i end
  if up then
    if c % (r * r) ~= 0 then
      fail("%s: the channel dimension (size %d, dim %d of input shape %s) must be divisible by upscale_factor^2 = %d",
        name, c, n - 2, shape_str(x), r * r)
    end
    local oc = c // (r * r)
    local t = x:reshape(shape_of(oc, r, r, h, w))
    -- (oc, r1, r2, h, w) -> (oc, h, r1, w, r2)
    for _, p in ipairs({1, 4, 2, 5, 3}) do perm[#perm + 1] = nb + p end
    return t:permute(table.unpack(perm)):reshape(shape_of(oc, h * r, w * r))
  end
  if h % r ~= 0 or w % r ~= 0 then
    fail("%s: height %d and width %d (input shape %s) must be divisible by downscale_factor %d",
      name, h, w, shape_str(x), r)
  end
  local oh, ow = h // r, w // r
  local t = x:reshape(shape_of(c, oh, r, ow, r))
  -- (c, oh, r1, ow, r2) -> (c, r1, r2, oh, ow)
  for _, p in ipairs({1, 3, 5, 2, 4}) do perm[#perm + 1] = nb + p end
  return t:permute(table.unpack(perm)):reshape(shape_of(c * r * r, oh, ow))
end

define {
  cls = "PixelShuffle", fname = "pixel_shuffle",
  args = {{"upscale_factor", pos_int, REQUIRED}}, repr = {"upscale_factor"},
  check = function(_, x) return x end,
  fn = function(x, s, name) return pixel_shuffle(name, x, s.upscale_factor, true) end,
  doc = [==[nn.PixelShuffle(upscale_factor): {*, C*r*r, H, W} -> {*, C, H*r, W*r} with r = upscale_factor.
  Sub-pixel convolution's rearrangement; nn.PixelUnshuffle undoes it.]==],
  fdoc = "F.pixel_shuffle(x, upscale_factor) -> {*, C*r*r, H, W} rearranged to {*, C, H*r, W*r}.",
}

define {
  cls = "PixelUnshuffle", fname = "pixel_unshuffle",
  args = {{"downscale_factor", pos_int, REQUIRED}}, repr = {"downscale_factor"},
  check = function(_, x) return x end,
  fn = function(x, s, name) return pixel_shuffle(name, x, s.downscale_factor, false) end,
  doc = [==[nn.PixelUnshuffle(downscale_factor): {*, C, H*r, W*r} -> {*, C*r*r, H, W} with r = downscale_factor.
  The inverse of nn.PixelShuffle.]==],
  fdoc = "F.pixel_unshuffle(x, downscale_factor) -> {*, C, H*r, W*r} rearranged to {*, C*r*r, H, W}.",
}

-- ------------------------------------------------------------------ nn.functional from the core

for _, k in ipairs({"conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "dropout2d"}) do
  if F[k] == nil and pt[k] ~= nil then F[k] = pt[k] end
end

return nn
