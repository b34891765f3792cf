-- More layers for partrain.nn, as PyTorch's torch.nn has them: activations (ELU, SELU, CELU,
-- Softplus, Mish, Hardtanh, ReLU6, Hardswish, Hardsigmoid, Softsign, Tanhshrink, Threshold, GLU,
-- LogSigmoid, Softshrink, Hardshrink, PReLU, Softmin), distances (CosineSimilarity,
-- PairwiseDistance), losses (KLDivLoss, HuberLoss, MarginRankingLoss, CosineEmbeddingLoss,
-- TripletMarginLoss, PoissonNLLLoss, GaussianNLLLoss, SoftMarginLoss, MultiLabelSoftMarginLoss,
-- HingeEmbeddingLoss), shape layers (Unflatten, PixelShuffle, PixelUnshuffle), padding layers
-- (ZeroPad2d, ConstantPad1d/2d/3d, ReflectionPad1d/2d/3d, ReplicationPad1d/2d/3d), Bilinear,
-- EmbeddingBag, ParameterList, ParameterDict, LocalResponseNorm, Softmax2d, ChannelShuffle,
-- AlphaDropout, FeatureAlphaDropout, Unfold and Fold, RReLU, RMSNorm (PyTorch 2.4's), their
-- nn.functional forms, and nn.utils
-- (parameters_to_vector, vector_to_parameters, clip_grad_norm_, clip_grad_value_, weight_norm,
-- spectral_norm). Loaded by nn.lua on the first use of a name it does not have.
--
-- The element-wise activations are fused C kernels (lib/nn_activation.c); everything else is
-- composed of the differentiable tensor ops, so autograd comes for free. The formulas are
-- PyTorch 1.13's (including its thresholds, constants and 0*log(0) = 0). Settings are taken
-- positionally in PyTorch's order (its deprecated size_average/reduce left out) or as a trailing
-- options table: nn.ELU(0.5), nn.ELU({alpha = 0.5}), F.elu(x, 0.5), F.elu(x, {alpha = 0.5}).
-- Dimensions are 1-based (negative from the end), as everywhere in partrain.
local pt = require "partrain.core"
local nn = require "partrain.nn"
local Module = nn.Module
local F = nn.functional

local doc = pt._doc

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

-- shared with nn_more.lua, which loads after this file
nn._arg_helpers = {shape_str = shape_str, type_of = type_of, num_repr = num_repr, number = number, boolean = boolean,
                   dim_arg = dim_arg, tensor_arg = tensor_arg, reduction_arg = reduction_arg, nonneg = nonneg,
                   dtype_arg = dtype_arg, parse = parse, check_input = check_input, reduce = reduce,
                   norm_dim = norm_dim, REQUIRED = REQUIRED, class_name = nn._class_name}

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

-- log(1 + exp(beta x)) / beta, x where beta x > threshold, as a composition (SoftMarginLoss)
local function softplus_of(x, beta, threshold)
  local bx = beta == 1 and x or x * beta
  local y = pt.minimum(bx, threshold):exp():log1p()
  if beta ~= 1 then y = y / beta end
  return pt.where(bx:gt(threshold), x, y)
end

-- The activations below are one fused C kernel each (lib/nn_activation.c, pt._nn_act(x, kind,
-- p0, p1)): one pass forward, one node whose backward is one pass, PyTorch 1.13's formulas,
-- kink values and special values (see there).
local act = pt._nn_act

elementwise {
  cls = "ELU", fname = "elu",
  args = {{"alpha", number, 1.0}, {"inplace", boolean, false}}, repr = {"alpha", "inplace"},
  fn = function(x, s) return act(x, "elu", s.alpha) end,
  doc = [==[nn.ELU([alpha=1.0[, inplace=false]]): x for x > 0, alpha * (exp(x) - 1) otherwise.
  Settings also as options: nn.ELU({alpha=, inplace=}). inplace writes the result into the input.]==],
  fdoc = "F.elu(x[, alpha=1.0[, inplace=false]]) -> x > 0 and x or alpha * (exp(x) - 1) (also {alpha=, inplace=}).",
}

elementwise {
  cls = "SELU", fname = "selu",
  args = {{"inplace", boolean, false}}, repr = {"inplace"},
  fn = function(x) return act(x, "selu") end,
  doc = [==[nn.SELU([inplace=false]): scale * ELU(x, alpha) with PyTorch's fixed alpha and scale.
  alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946.]==],
  fdoc = "F.selu(x[, inplace=false]) -> scale * elu(x, alpha) with alpha = 1.67326..., scale = 1.05070... (see help(nn.SELU)).",
}

elementwise {
  cls = "CELU", fname = "celu",
  args = {{"alpha", nonzero, 1.0}, {"inplace", boolean, false}}, repr = {"alpha", "inplace"},
  fn = function(x, s) return act(x, "celu", s.alpha) end,
  doc = [==[nn.CELU([alpha=1.0[, inplace=false]]): max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
  alpha must not be 0. Settings also as options: nn.CELU({alpha=, inplace=}).]==],
  fdoc = "F.celu(x[, alpha=1.0[, inplace=false]]) -> max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).",
}

elementwise {
  cls = "Softplus", fname = "softplus",
  args = {{"beta", nonzero, 1}, {"threshold", number, 20}}, repr = {"beta", "threshold"},
  fn = function(x, s) return act(x, "softplus", s.beta, s.threshold) end,
  doc = [==[nn.Softplus([beta=1[, threshold=20]]): log(1 + exp(beta * x)) / beta, smooth ReLU.
  x itself where beta * x > threshold (as PyTorch, for stability). Settings also as options:
  nn.Softplus({beta=, threshold=}).]==],
  fdoc = "F.softplus(x[, beta=1[, threshold=20]]) -> log(1 + exp(beta*x)) / beta; x where beta*x > threshold.",
}

elementwise {
  cls = "Mish", fname = "mish",
  args = {{"inplace", boolean, false}}, repr = {"inplace"},
  fn = function(x) return act(x, "mish") end,
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
    return act(x, "hardtanh", s.min_val, s.max_val)
  end,
  doc = [==[nn.Hardtanh([min_val=-1.0[, max_val=1.0[, inplace=false]]]): x clamped to [min_val, max_val].
  Settings also as options: nn.Hardtanh({min_val=, max_val=, inplace=}); max_val > min_val.]==],
  fdoc = "F.hardtanh(x[, min_val=-1.0[, max_val=1.0[, inplace=false]]]) -> x clamped to [min_val, max_val].",
}

elementwise {
  cls = "ReLU6", fname = "relu6",
  args = {{"inplace", boolean, false}}, repr = {"inplace"},
  fn = function(x) return act(x, "relu6") end,
  doc = "nn.ReLU6([inplace=false]): min(max(x, 0), 6).",
  fdoc = "F.relu6(x[, inplace=false]) -> min(max(x, 0), 6).",
}

elementwise {
  cls = "Hardswish", fname = "hardswish",
  args = {{"inplace", boolean, false}}, repr = {"inplace"},
  fn = function(x) return act(x, "hardswish") end,
  doc = "nn.Hardswish([inplace=false]): x * relu6(x + 3) / 6 (0 below -3, x above 3).",
  fdoc = "F.hardswish(x[, inplace=false]) -> x * relu6(x + 3) / 6.",
}

elementwise {
  cls = "Hardsigmoid", fname = "hardsigmoid",
  args = {{"inplace", boolean, false}}, repr = {"inplace"},
  fn = function(x) return act(x, "hardsigmoid") end,
  doc = "nn.Hardsigmoid([inplace=false]): relu6(x + 3) / 6 (0 below -3, 1 above 3).",
  fdoc = "F.hardsigmoid(x[, inplace=false]) -> relu6(x + 3) / 6.",
}

elementwise {
  cls = "Softsign", fname = "softsign", args = {},
  fn = function(x) return act(x, "softsign") end,
  doc = "nn.Softsign(): x / (1 + |x|).",
  fdoc = "F.softsign(x) -> x / (1 + |x|).",
}

elementwise {
  cls = "Tanhshrink", fname = "tanhshrink", args = {},
  fn = function(x) return act(x, "tanhshrink") end,
  doc = "nn.Tanhshrink(): x - tanh(x).",
  fdoc = "F.tanhshrink(x) -> x - tanh(x).",
}

elementwise {
  cls = "Threshold", fname = "threshold",
  args = {{"threshold", number, REQUIRED}, {"value", number, REQUIRED}, {"inplace", boolean, false}},
  repr = {"threshold", "value", "inplace"},
  fn = function(x, s) return act(x, "threshold", s.threshold, s.value) end,
  doc = [==[nn.Threshold(threshold, value[, inplace=false]): x where x > threshold, value elsewhere.
  Settings also as options: nn.Threshold({threshold=, value=, inplace=}).]==],
  fdoc = "F.threshold(x, threshold, value[, inplace=false]) -> x where x > threshold, value elsewhere.",
}

elementwise {
  cls = "LogSigmoid", fname = "logsigmoid", args = {},
  -- min(x, 0) - log(1 + exp(-|x|)): log(sigmoid(x)) without overflow, as PyTorch computes it
  fn = function(x) return act(x, "logsigmoid") end,
  doc = "nn.LogSigmoid(): log(sigmoid(x)), computed stably as min(x, 0) - log1p(exp(-|x|)).",
  fdoc = "F.logsigmoid(x) -> log(sigmoid(x)), computed stably.",
}

-- PyTorch prints these as Softshrink(0.5)
local function lambd_repr(self) return num_repr(self.lambd) end

elementwise {
  cls = "Softshrink", fname = "softshrink",
  args = {{"lambd", nonneg, 0.5}},
  fn = function(x, s) return act(x, "softshrink", s.lambd) end,
  doc = [==[nn.Softshrink([lambd=0.5]): x - lambd above lambd, x + lambd below -lambd, 0 between.
  lambd must be non-negative; also nn.Softshrink({lambd=}).]==],
  fdoc = "F.softshrink(x[, lambd=0.5]) -> x - lambd above lambd, x + lambd below -lambd, 0 between.",
}
nn.Softshrink.extra_repr = lambd_repr

elementwise {
  cls = "Hardshrink", fname = "hardshrink",
  args = {{"lambd", number, 0.5}},
  fn = function(x, s) return act(x, "hardshrink", s.lambd) end,
  doc = [==[nn.Hardshrink([lambd=0.5]): x where |x| > lambd, 0 elsewhere. Also nn.Hardshrink({lambd=}).]==],
  fdoc = "F.hardshrink(x[, lambd=0.5]) -> x where |x| > lambd, 0 elsewhere.",
}
nn.Hardshrink.extra_repr = lambd_repr

local function check_bounds(name, s)
  if not (s.lower <= s.upper) then
    fail("%s: lower (%s) must be less than or equal to upper (%s)", name, num_repr(s.lower), num_repr(s.upper))
  end
end
-- Training: a slope per element drawn from U(lower, upper) with pt's generator (pt.manual_seed),
-- as Dropout draws its masks, used where x <= 0 (PyTorch's test), 1 elsewhere; y = x * slope, so
-- the gradient is the slope used. Eval: the leaky_relu kernel with the mean slope.
elementwise {
  cls = "RReLU", fname = "rrelu",
  args = {{"lower", number, 1 / 8}, {"upper", number, 1 / 3}, {"inplace", boolean, false}},
  fargs = {{"lower", number, 1 / 8}, {"upper", number, 1 / 3}, {"training", boolean, false},
    {"inplace", boolean, false}},
  repr = {"lower", "upper", "inplace"},
  init = function(_, s) check_bounds("RReLU", s) end,
  fn = function(x, s, name)
    check_bounds(name, s)
    if not s.training then return act(x, "leaky_relu", (s.lower + s.upper) / 2) end
    local slope = pt.empty(x:size(), {dtype = x:dtype()}):uniform_(s.lower, s.upper)
    return x * pt.where(x:le(0), slope, 1)
  end,
  doc = [==[nn.RReLU([lower=1/8[, upper=1/3[, inplace=false]]]): randomized leaky ReLU.
  Training: x for x > 0, a * x otherwise with a drawn from U(lower, upper) for every element (pt's
  generator: pt.manual_seed makes it repeatable); the gradient is the slope used. Eval: leaky ReLU
  with slope (lower + upper) / 2. lower <= upper; also nn.RReLU({lower=, upper=, inplace=}).]==],
  fdoc = "F.rrelu(x[, lower=1/8[, upper=1/3[, training=false[, inplace=false]]]]): see help(nn.RReLU); training defaults to false, as PyTorch's.",
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
local PRELU_ARGS = {{"num_parameters", pos_int, 1}, {"init", number, 0.25}, {"dtype", dtype_arg, nil}}
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
  -- a rearrangement: any dtype, as torch's
  if not pt.is_tensor(x) then fail("%s: input must be a tensor, got %s", name, type_of(x)) end
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

-- ------------------------------------------------------------------ padding layers

local function as_int(v)
  if math.type(v) == "integer" then return v end
  if type(v) == "number" then return math.tointeger(v) end
  return nil
end

-- a setting as the error messages show it: 1.5, 'x', {1, 2}, table, tensor
local function arg_repr(v)
  if type(v) == "number" or type(v) == "string" then return value_repr(v) end
  if type(v) == "table" and not pt.is_tensor(v) and getmetatable(v) == nil then
    local s = {}
    for i = 1, #v do
      s[i] = (type(v[i]) == "number" or type(v[i]) == "string") and value_repr(v[i]) or type_of(v[i])
    end
    return "{" .. table.concat(s, ", ") .. "}"
  end
  return type_of(v)
end

local function ints_repr(t) return "{" .. table.concat(t, ", ") .. "}" end

local function size_arg(name, k, v)
  local i = as_int(v)
  if not i or i < 0 then
    fail("%s: %s must be a non-negative integer, got %s", name, k, arg_repr(v))
  end
  return i
end

local function int_arg(name, k, v)
  local i = as_int(v)
  if not i then fail("%s: %s must be an integer, got %s", name, k, arg_repr(v)) end
  return i
end

-- torch's padding argument: one integer for every side, or a list of n integers (last dimension
-- first: {left, right[, top, bottom[, front, back]]}); negative sizes crop (constant padding)
local function padding_arg(n)
  return function(name, k, v)
    local i = as_int(v)
    local out = {}
    if i then
      for j = 1, n do out[j] = i end
      return out
    end
    if type(v) == "table" and not pt.is_tensor(v) and #v == n then
      for j = 1, n do out[j] = as_int(v[j]) end
      if #out == n then return out end
    end
    fail("%s: %s must be an integer or a list of %d integers, got %s", name, k, n, arg_repr(v))
  end
end

local function one_input(fwd, ...)
  if select("#", ...) > 0 then fail("%s: expected 1 input, got %d", fwd, 1 + select("#", ...)) end
end

-- nn.<Kind>Pad<nd>d: F.pad with the module's padding; reflect/replicate take (nd+1)-D or (nd+2)-D
-- inputs, constant padding any input of at least nd dims (as torch)
local function pad_layer(cls_name, nd, mode, with_value)
  local cls = Module:extend(cls_name)
  nn[cls_name] = cls
  local specs = {{"padding", padding_arg(2 * nd), REQUIRED}}
  if with_value then specs[2] = {"value", number, REQUIRED} end
  function cls:__init(...)
    local s = parse(cls_name, specs, ...)
    self.padding = s.padding
    if mode == "constant" then self.value = with_value and s.value or 0.0 end
  end
  local fwd = cls_name .. ":forward"
  function cls:forward(x, ...)
    one_input(fwd, ...)
    if not pt.is_tensor(x) then fail("%s: input must be a tensor, got %s", fwd, type_of(x)) end
    local d = x:dim()
    if mode == "constant" then
      if d < nd then
        fail("%s: input must have at least %d dimension%s, got shape %s", fwd, nd, nd > 1 and "s" or "",
          shape_str(x))
      end
    elseif d ~= nd + 1 and d ~= nd + 2 then
      fail("%s: input must be %d-D or %d-D, got shape %s", fwd, nd + 1, nd + 2, shape_str(x))
    end
    return F.pad(x, self.padding, mode, self.value)
  end
  if with_value then
    function cls:extra_repr() return "padding=" .. ints_repr(self.padding) .. ", value=" .. num_repr(self.value) end
  else
    function cls:extra_repr() return ints_repr(self.padding) end
  end
  local sides = ({"{left, right}", "{left, right, top, bottom}", "{left, right, top, bottom, front, back}"})[nd]
  local dims = mode == "constant" and string.format("any input of at least %d dim%s", nd, nd > 1 and "s" or "")
    or string.format("inputs {C,...} or {N,C,...} (%d-D or %d-D)", nd + 1, nd + 2)
  local what = ({
    constant = with_value and "fills with value" or "fills with zeros",
    reflect = "mirrors the input at its edges without repeating the edge (each size below the dim's size)",
    replicate = "repeats the edge values",
  })[mode]
  doc(cls, string.format([==[nn.%s(padding%s): pads the last %s; %s.
  padding is one integer for every side or a list %s (the last dimension first, as F.pad);
  %s. Also nn.%s({padding=%s}). PyTorch's nn.%s.]==], cls_name, with_value and ", value" or "",
    nd > 1 and nd .. " dimensions" or "dimension", what, sides, dims, cls_name, with_value and ", value=" or "", cls_name))
  return cls
end

pad_layer("ZeroPad2d", 2, "constant", false)
for nd = 1, 3 do
  pad_layer("ConstantPad" .. nd .. "d", nd, "constant", true)
  pad_layer("ReflectionPad" .. nd .. "d", nd, "reflect", false)
  pad_layer("ReplicationPad" .. nd .. "d", nd, "replicate", false)
end

-- ------------------------------------------------------------------ Bilinear

local function bilinear(name, x1, x2, w, b)
  check_input(name, x1, "input1")
  check_input(name, x2, "input2")
  if not pt.is_tensor(w) then fail("%s: weight must be a tensor, got %s", name, type_of(w)) end
  if w:dim() ~= 3 then
    fail("%s: weight must be 3-dimensional {out_features, in1_features, in2_features}, got shape %s", name,
      shape_str(w))
  end
  local O, I, J = w:size(1), w:size(2), w:size(3)
  local s1, s2 = x1:size(), x2:size()
  if #s1 == 0 or #s1 ~= #s2 then
    fail("%s: input1 and input2 must have the same number of dimensions (at least 1), got shapes %s and %s",
      name, shape_str(x1), shape_str(x2))
  end
  for d = 1, #s1 - 1 do
    if s1[d] ~= s2[d] then
      fail("%s: input1 shape %s and input2 shape %s differ in dim %d (the batch dimensions must match)", name,
        shape_str(x1), shape_str(x2), d)
    end
  end
  if s1[#s1] ~= I then
    fail("%s: input1's last dimension has size %d, but weight shape %s takes in1_features = %d", name,
      s1[#s1], shape_str(w), I)
  end
  if s2[#s2] ~= J then
    fail("%s: input2's last dimension has size %d, but weight shape %s takes in2_features = %d", name,
      s2[#s2], shape_str(w), J)
  end
  if b ~= nil then
    if not pt.is_tensor(b) then fail("%s: bias must be a tensor, got %s", name, type_of(b)) end
    if shape_str(b) ~= "{" .. O .. "}" then
      fail("%s: bias must have shape {%d} (out_features), got %s", name, O, shape_str(b))
    end
  end
  local dt = x1:dtype()
  if x2:dtype() ~= dt or w:dtype() ~= dt or (b and b:dtype() ~= dt) then
    fail("%s: input1, input2, weight and bias must have one dtype, got %s, %s, %s and %s", name, dt,
      x2:dtype(), w:dtype(), b and b:dtype() or "none")
  end
  local lead, n = {}, 1
  for d = 1, #s1 - 1 do lead[d] = s1[d]; n = n * s1[d] end
  -- y[n, o] = sum_j (sum_i x1[n, i] w[o, i, j]) x2[n, j]: one GEMM, then a product summed over j
  local a = x1:reshape(n, I):matmul(w:permute(2, 1, 3):reshape(I, O * J)):reshape(n, O, J)
  local y = (a * x2:reshape(n, 1, J)):sum(3)
  if b ~= nil then y = y + b end
  lead[#lead + 1] = O
  return y:reshape(lead)
end

local Bilinear = Module:extend("Bilinear")
nn.Bilinear = Bilinear
local BILINEAR_ARGS = {{"in1_features", size_arg, REQUIRED}, {"in2_features", size_arg, REQUIRED},
  {"out_features", size_arg, REQUIRED}, {"bias", boolean, true}, {"dtype", dtype_arg, nil}}
function Bilinear:__init(...)
  local s = parse("Bilinear", BILINEAR_ARGS, ...)
  self.in1_features, self.in2_features, self.out_features = s.in1_features, s.in2_features, s.out_features
  self.weight = nn.Parameter(pt.empty({s.out_features, s.in1_features, s.in2_features}, {dtype = s.dtype}))
  if s.bias then self.bias = nn.Parameter(pt.empty({s.out_features}, {dtype = s.dtype})) end
  self:reset_parameters()
end
function Bilinear:reset_parameters()
  local bound = self.in1_features > 0 and 1 / math.sqrt(self.in1_features) or 0
  nn.init.uniform_(self.weight, -bound, bound)
  if self.bias ~= nil then nn.init.uniform_(self.bias, -bound, bound) end
end
doc(Bilinear.reset_parameters, "bilinear:reset_parameters(): draws weight and bias again from U(-1/sqrt(in1_features), 1/sqrt(in1_features)), as the constructor does.")
function Bilinear:forward(x1, x2)
  return bilinear("Bilinear:forward", x1, x2, self.weight, self.bias)
end
function Bilinear:extra_repr()
  return string.format("in1_features=%d, in2_features=%d, out_features=%d, bias=%s", self.in1_features,
    self.in2_features, self.out_features, tostring(self.bias ~= nil))
end
doc(Bilinear, [==[nn.Bilinear(in1_features, in2_features, out_features[, bias=true[, dtype="float32"]]): forward(x1, x2) -> y.
  y[..., o] = sum_ij x1[..., i] weight[o, i, j] x2[..., j] + bias[o]; x1 {*, in1}, x2 {*, in2} with the
  same leading dims. weight {out, in1, in2} and bias {out} (PyTorch's names) drawn from
  U(-1/sqrt(in1), 1/sqrt(in1)). Also nn.Bilinear({in1_features=, in2_features=, out_features=, bias=, dtype=}).]==])

function F.bilinear(input1, input2, weight, bias, ...)
  if select("#", ...) > 0 then
    fail("bilinear: expected (input1, input2, weight[, bias]), got %d arguments", 4 + select("#", ...))
  end
  return bilinear("bilinear", input1, input2, weight, bias)
end
if nn.bilinear == nil then nn.bilinear = F.bilinear end
doc(F.bilinear, "F.bilinear(input1, input2, weight[, bias]) -> x1^T W_o x2 + b_o for every output o; see help(nn.Bilinear).")

-- ------------------------------------------------------------------ EmbeddingBag

local INT_DTYPES = {int64 = true, int32 = true, int16 = true, int8 = true, uint8 = true}

local function bag_mode_arg(name, k, v)
  if v ~= "sum" and v ~= "mean" and v ~= "max" then
    fail("%s: %s must be 'sum', 'mean' or 'max', got %s", name, k, arg_repr(v))
  end
  return v
end
local function no_max_norm(name, k, v)
  fail("%s: %s is not supported (rows are never renormalised), got %s", name, k, arg_repr(v))
end
local function only_false(name, k, v)
  boolean(name, k, v)
  if v then fail("%s: %s=true is not supported", name, k) end
  return v
end
local function offsets_arg(name, k, v)
  if pt.is_tensor(v) or type(v) == "table" then return v end
  fail("%s: %s must be a 1-D integer tensor or a list of integers, got %s", name, k, type_of(v))
end

-- 1-based padding_idx (negative from the end) -> 1..n
local function resolve_padding_idx(name, p, n)
  if p == nil then return nil end
  local i = as_int(p)
  if not i or i == 0 or i > n or i < -n then
    fail("%s: padding_idx must be within 1..%d (or -%d..-1), got %s", name, n, n, arg_repr(p))
  end
  return i < 0 and n + 1 + i or i
end

local function offset_list(name, offsets)
  local list
  if pt.is_tensor(offsets) then
    if offsets:dim() ~= 1 or not INT_DTYPES[offsets:dtype()] then
      fail("%s: offsets must be a 1-D integer tensor, got %s of shape %s", name, offsets:dtype(), shape_str(offsets))
    end
    list = offsets:tolist()
  else
    list = {}
    for i = 1, #offsets do
      list[i] = as_int(offsets[i])
      if not list[i] then fail("%s: offsets must be integers, got %s at %d", name, arg_repr(offsets[i]), i) end
    end
  end
  return list
end

local I64 = {dtype = "int64"}

-- s = {mode=, per_sample_weights=, include_last_offset=, padding_idx= (resolved, 1..n)}
local function embedding_bag(name, input, weight, offsets, s)
  if not pt.is_tensor(input) then fail("%s: input must be a tensor, got %s", name, type_of(input)) end
  if not INT_DTYPES[input:dtype()] then
    fail("%s: input must be an integer tensor of 1-based indices, got %s", name, input:dtype())
  end
  check_input(name, weight, "weight")
  if weight:dim() ~= 2 then
    fail("%s: weight must be 2-dimensional {num_embeddings, embedding_dim}, got shape %s", name, shape_str(weight))
  end
  local n_emb, D = weight:size(1), weight:size(2)
  local idx = input:dtype() == "int64" and input or input:to("int64")
  if idx:numel() > 0 then
    local lo, hi = idx:min():item(), idx:max():item()
    if lo < 1 or hi > n_emb then fail("%s: index %d out of range 1..%d", name, lo < 1 and lo or hi, n_emb) end
  end
  local mode, psw = s.mode, s.per_sample_weights
  if psw ~= nil then
    if mode ~= "sum" then
      fail("%s: per_sample_weights is only supported for mode 'sum', got mode '%s'", name, mode)
    end
    if shape_str(psw) ~= shape_str(input) then
      fail("%s: per_sample_weights shape %s must match input shape %s", name, shape_str(psw), shape_str(input))
    end
    if psw:dtype() ~= weight:dtype() then
      fail("%s: per_sample_weights dtype %s does not match weight dtype %s", name, psw:dtype(), weight:dtype())
    end
  end
  -- every bag as a row of L slots: bag {B,L} indices, valid {B,L} (nil: all slots are used)
  local B, L, bag, valid, bag_w
  if idx:dim() == 2 then
    if offsets ~= nil then
      fail("%s: offsets must be nil for a 2-D input {B,N} (each row is one bag), got %s", name, type_of(offsets))
    end
    if s.include_last_offset then
      fail("%s: include_last_offset=true needs a 1-D input with offsets (a 2-D input has none)", name)
    end
    B, L, bag, bag_w = idx:size(1), idx:size(2), idx, psw
  elseif idx:dim() == 1 then
    if offsets == nil then
      fail("%s: a 1-D input needs offsets (the 1-based position where each bag starts)", name)
    end
    local offs = offset_list(name, offsets)
    local n, nb = idx:numel(), #offs
    if s.include_last_offset and nb == 0 then
      fail("%s: with include_last_offset, offsets must end with %d (the number of indices + 1), got none", name, n + 1)
    end
    if nb > 0 and offs[1] ~= 1 then
      fail("%s: offsets[1] must be 1 (the first bag starts at the first index), got %d", name, offs[1])
    end
    for i = 2, nb do
      if offs[i] < offs[i - 1] then
        fail("%s: offsets must be non-decreasing, got %d after %d (offsets[%d])", name, offs[i], offs[i - 1], i)
      end
    end
    if nb > 0 and offs[nb] > n + 1 then
      fail("%s: offsets[%d] = %d is beyond the end of the input (%d indices)", name, nb, offs[nb], n)
    end
    if s.include_last_offset then
      if offs[nb] ~= n + 1 then
        fail("%s: with include_last_offset, offsets must end with %d (the number of indices + 1), got %d", name,
          n + 1, offs[nb])
      end
      nb = nb - 1
    end
    B, L = nb, 0
    local starts, ends = {}, {}
    for i = 1, nb do
      starts[i], ends[i] = offs[i], offs[i + 1] or n + 1
      if ends[i] - starts[i] > L then L = ends[i] - starts[i] end
    end
    if L > 0 then
      local pos = pt.tensor(starts, I64):reshape(B, 1) + pt.arange(0, L, I64):reshape(1, L)
      valid = pos:lt(pt.tensor(ends, I64):reshape(B, 1))
      local safe = pt.where(valid, pos, 1):reshape(-1)
      bag = idx:index_select(1, safe):reshape(B, L)
      if psw ~= nil then bag_w = psw:index_select(1, safe):reshape(B, L) end
    end
  else
    fail("%s: input must be 1-D (with offsets) or 2-D {B,N}, got shape %s", name, shape_str(input))
  end
  if B == 0 or L == 0 then return pt.zeros({B, D}, {dtype = weight:dtype()}) end
  if s.padding_idx then
    local keep = bag:ne(s.padding_idx)
    valid = valid and valid:logical_and(keep) or keep
  end
  local rows = weight:index_select(1, bag:reshape(-1)):reshape(B, L, D)
  if bag_w ~= nil then rows = rows * bag_w:unsqueeze(3) end
  local mask = valid and valid:unsqueeze(3)
  if mode == "max" then
    if not mask then return (rows:max(2)) end
    local m = rows:masked_fill(mask:logical_not(), -math.huge):max(2)
    return pt.where(valid:sum(2, true):gt(0), m, 0) -- an empty bag gives zeros (as torch)
  end
  local total = mask and rows:masked_fill(mask:logical_not(), 0):sum(2) or rows:sum(2)
  if mode == "sum" then return total end
  if not valid then return total / L end
  return total / valid:sum(2, true):clamp(1):to(weight:dtype())
end

local EMBEDDING_BAG_ARGS = {
  {"num_embeddings", size_arg, REQUIRED}, {"embedding_dim", size_arg, REQUIRED}, {"max_norm", no_max_norm, nil},
  {"norm_type", number, 2.0}, {"scale_grad_by_freq", only_false, false}, {"mode", bag_mode_arg, "mean"},
  {"sparse", only_false, false}, {"_weight", tensor_arg, nil}, {"include_last_offset", boolean, false},
  {"padding_idx", int_arg, nil}, {"dtype", dtype_arg, nil},
}

local EmbeddingBag = Module:extend("EmbeddingBag")
nn.EmbeddingBag = EmbeddingBag
function EmbeddingBag:__init(...)
  local s = parse("EmbeddingBag", EMBEDDING_BAG_ARGS, ...)
  local n, d = s.num_embeddings, s.embedding_dim
  self.num_embeddings, self.embedding_dim, self.mode = n, d, s.mode
  self.include_last_offset = s.include_last_offset
  self.padding_idx = resolve_padding_idx("EmbeddingBag", s.padding_idx, n)
  if s._weight ~= nil then
    if shape_str(s._weight) ~= "{" .. n .. "," .. d .. "}" then
      fail("EmbeddingBag: _weight shape %s must be {%d,%d} (num_embeddings, embedding_dim)", shape_str(s._weight), n, d)
    end
    self.weight = nn.Parameter(s._weight)
  else
    self.weight = nn.Parameter(pt.empty({n, d}, {dtype = s.dtype}))
    self:reset_parameters()
  end
end
function EmbeddingBag:reset_parameters()
  nn.init.normal_(self.weight)
  local p = self.padding_idx
  if p then pt.no_grad(function() self.weight:narrow(1, p, 1):fill_(0) end) end
end
doc(EmbeddingBag.reset_parameters, "bag:reset_parameters(): draws weight from N(0, 1) again (the padding_idx row zero), as the constructor does.")
function EmbeddingBag:forward(input, offsets, per_sample_weights, ...)
  if select("#", ...) > 0 then
    fail("EmbeddingBag:forward: expected (input[, offsets[, per_sample_weights]]), got %d arguments", 3 + select("#", ...))
  end
  return embedding_bag("EmbeddingBag:forward", input, self.weight, offsets, {mode = self.mode,
    per_sample_weights = per_sample_weights, include_last_offset = self.include_last_offset,
    padding_idx = self.padding_idx})
end
function EmbeddingBag:extra_repr()
  return string.format("%d, %d, mode=%s%s", self.num_embeddings, self.embedding_dim, self.mode,
    self.padding_idx and ", padding_idx=" .. self.padding_idx or "")
end
doc(EmbeddingBag, [==[nn.EmbeddingBag(num_embeddings, embedding_dim[, {mode="mean", padding_idx=, include_last_offset=false, _weight=, dtype="float32"}])
  forward(input[, offsets[, per_sample_weights]]) -> {B, embedding_dim}: the sum, mean or max of the
  weight rows of each bag of 1-based indices, as PyTorch's. input {B,N}: each row is a bag; input {n}
  with offsets (a 1-D integer tensor or a list): bag b holds input[offsets[b] .. offsets[b+1]-1],
  offsets 1-BASED (offsets[1] = 1; PyTorch's start at 0), non-decreasing; include_last_offset: offsets
  ends with n+1 (only with offsets: PyTorch silently drops a 2-D input's last bag). Empty bags give zeros.
  per_sample_weights (input's shape) scale the rows, mode "sum" only. padding_idx (1-based, negative
  from the end): those indices are left out of their bags (and of the mean's count); its row starts
  at zero. weight {num_embeddings, embedding_dim} from N(0, 1). PyTorch's positional order is kept
  (max_norm, norm_type, scale_grad_by_freq, mode, sparse, ...): max_norm, scale_grad_by_freq=true and
  sparse=true are not supported (errors).]==])

local F_EMBEDDING_BAG_ARGS = {
  {"offsets", offsets_arg, nil}, {"max_norm", no_max_norm, nil}, {"norm_type", number, 2.0},
  {"scale_grad_by_freq", only_false, false}, {"mode", bag_mode_arg, "mean"}, {"sparse", only_false, false},
  {"per_sample_weights", tensor_arg, nil}, {"include_last_offset", boolean, false}, {"padding_idx", int_arg, nil},
}
function F.embedding_bag(input, weight, ...)
  local s = parse("embedding_bag", F_EMBEDDING_BAG_ARGS, ...)
  if pt.is_tensor(weight) and weight:dim() == 2 then
    s.padding_idx = resolve_padding_idx("embedding_bag", s.padding_idx, weight:size(1))
  end
  return embedding_bag("embedding_bag", input, weight, s.offsets, s)
end
if nn.embedding_bag == nil then nn.embedding_bag = F.embedding_bag end
doc(F.embedding_bag, [==[F.embedding_bag(input, weight[, offsets[, max_norm[, norm_type[, scale_grad_by_freq[, mode="mean"[, sparse[, per_sample_weights[, include_last_offset=false[, padding_idx]]]]]]]]])
  Sums, averages or takes the max of weight's rows over bags of 1-based indices; PyTorch's argument
  order, also as options: F.embedding_bag(input, weight, {offsets=, mode=, per_sample_weights=, ...}).
  offsets are 1-based; see help(nn.EmbeddingBag).]==])

-- ------------------------------------------------------------------ ParameterList, ParameterDict

local function param_repr(p)
  return "Parameter containing: [" .. p:dtype() .. " of size " .. table.concat(p:size(), "x") .. "]"
end

local function as_parameter(name, v)
  if not pt.is_tensor(v) then fail("%s: expected a tensor, got %s", name, type_of(v)) end
  if v.requires_grad and v.is_leaf then return v end
  return nn.Parameter(v)
end

local ParameterList = Module:extend("ParameterList")
nn.ParameterList = ParameterList
local module_index, module_newindex = Module.__index, Module.__newindex
function ParameterList:__init(list, ...)
  if select("#", ...) > 0 or (list ~= nil and (type(list) ~= "table" or pt.is_tensor(list) or nn.is_module(list))) then
    fail("ParameterList: expected a list of tensors, got %s", pt.is_tensor(list) and "a tensor" or type_of(list))
  end
  for _, p in ipairs(list or {}) do self:append(p) end
end
ParameterList.__len = function(self) return #rawget(self, "_param_names") end
ParameterList.__index = function(self, k)
  if math.type(k) == "integer" then
    local n = #rawget(self, "_param_names")
    if k < 0 then k = n + 1 + k end
    return rawget(self, "_parameters")[tostring(k)]
  end
  return module_index(self, k)
end
ParameterList.__newindex = function(self, k, v)
  if math.type(k) == "integer" then
    local n = #rawget(self, "_param_names")
    if k < 0 then k = n + 1 + k end
    if k < 1 or k > n + 1 then fail("ParameterList: index %d out of range 1..%d", k, n + 1) end
    if v == nil then fail("ParameterList: cannot remove parameter %d (a ParameterList has no holes)", k) end
    return module_newindex(self, tostring(k), as_parameter("ParameterList", v))
  end
  return module_newindex(self, k, v)
end
function ParameterList:append(p)
  module_newindex(self, tostring(#self + 1), as_parameter("ParameterList:append", p))
  return self
end
doc(ParameterList.append, "plist:append(p) -> plist: adds p (a tensor; made a parameter with requires_grad) at the end, named \"#plist+1\".")
function ParameterList:extend(list)
  if type(list) == "string" then return Module.extend(self, list) end -- subclassing, as every class
  if rawget(self, "_param_names") == nil then
    fail("ParameterList:extend: call it on a list (nn.ParameterList({...}):extend(t)); nn.ParameterList:extend(\"Name\") makes a subclass")
  end
  if type(list) ~= "table" or pt.is_tensor(list) then
    fail("ParameterList:extend: expected a list of tensors (or a class name to subclass), got %s", type_of(list))
  end
  for _, p in ipairs(list) do self:append(p) end
  return self
end
doc(ParameterList.extend, "plist:extend({p1, p2, ...}) -> plist: appends each tensor in order (or another ParameterList's).\n"
  .. "  nn.ParameterList:extend(\"Name\") makes a subclass, as Module:extend(name).")
function ParameterList:forward()
  fail("ParameterList:forward: a ParameterList has no forward; index it (plist[i]) or iterate (ipairs(plist))")
end
function ParameterList:extra_repr()
  local lines = {}
  for i, n in ipairs(self._param_names) do lines[i] = "(" .. n .. "): " .. param_repr(self._parameters[n]) end
  return table.concat(lines, "\n")
end
doc(ParameterList, [==[nn.ParameterList([{p1, p2, ...}]): a registered list of parameters (PyTorch's nn.ParameterList).
  plist[i] (negative from the end), #plist, ipairs(plist), plist:append(p), plist:extend(t),
  plist[i] = p replaces one (plist[#plist+1] = p appends). Tensors become parameters (requires_grad).
  Names are "1", "2", ... (1-based, as nn.Sequential's children; PyTorch's count from "0"), so a model's
  state_dict holds "<list>.1", "<list>.2", ...]==])

local ParameterDict = Module:extend("ParameterDict")
nn.ParameterDict = ParameterDict
function ParameterDict:__init(tbl, ...)
  if select("#", ...) > 0 then fail("ParameterDict: expected one table of parameters, got %d arguments", 1 + select("#", ...)) end
  if tbl ~= nil then self:update(tbl) end
end
ParameterDict.__len = function(self) return #rawget(self, "_param_names") end
ParameterDict.__pairs = function(self) return self:items() end
ParameterDict.__newindex = function(self, k, v)
  if pt.is_tensor(v) then
    if type(k) ~= "string" then fail("ParameterDict: keys must be strings, got %s", type_of(k)) end
    v = as_parameter("ParameterDict", v)
  end
  return module_newindex(self, k, v)
end
function ParameterDict:update(tbl)
  if type(tbl) ~= "table" or pt.is_tensor(tbl) then
    fail("ParameterDict:update: expected a table of name = tensor (or a list of {name, tensor} pairs), got %s", type_of(tbl))
  end
  local pairs_list = {}
  if nn.is_module(tbl) then -- another ParameterDict: its order
    for k, v in tbl:items() do pairs_list[#pairs_list + 1] = {k, v} end
  elseif #tbl > 0 then -- a list of {name, tensor} pairs keeps its order
    for i, e in ipairs(tbl) do
      if type(e) ~= "table" or pt.is_tensor(e) or #e ~= 2 then
        fail("ParameterDict:update: element %d must be a {name, tensor} pair, got %s", i, type_of(e))
      end
      pairs_list[i] = e
    end
  else -- a map: sorted keys (PyTorch sorts a plain dict's keys too)
    local keys = {}
    for k in pairs(tbl) do
      if type(k) ~= "string" then fail("ParameterDict:update: keys must be strings, got %s", type_of(k)) end
      keys[#keys + 1] = k
    end
    table.sort(keys)
    for i, k in ipairs(keys) do pairs_list[i] = {k, tbl[k]} end
  end
  for _, e in ipairs(pairs_list) do
    if type(e[1]) ~= "string" then fail("ParameterDict:update: keys must be strings, got %s", type_of(e[1])) end
    module_newindex(self, e[1], as_parameter("ParameterDict:update", e[2]))
  end
  return self
end
doc(ParameterDict.update, "pdict:update(t) -> pdict: adds or replaces parameters from a map {name = tensor} (sorted keys), a list of\n"
  .. "  {name, tensor} pairs (in order) or another ParameterDict (in its order).")
function ParameterDict:keys()
  local out = {}
  for i, n in ipairs(self._param_names) do out[i] = n end
  return out
end
doc(ParameterDict.keys, "pdict:keys() -> list of the names in insertion order.")
function ParameterDict:values()
  local out = {}
  for i, n in ipairs(self._param_names) do out[i] = self._parameters[n] end
  return out
end
doc(ParameterDict.values, "pdict:values() -> list of the parameters in insertion order.")
function ParameterDict:items()
  local names, params, i = self:keys(), self._parameters, 0
  return function()
    i = i + 1
    local k = names[i]
    if k ~= nil then return k, params[k] end
  end
end
doc(ParameterDict.items, "pdict:items() -> iterator of name, parameter in insertion order (as pairs(pdict)).")
function ParameterDict:pop(key)
  local p = rawget(self, "_parameters")[key]
  if p == nil then fail("ParameterDict:pop: no parameter '%s'", tostring(key)) end
  module_newindex(self, key, nil)
  return p
end
doc(ParameterDict.pop, "pdict:pop(name) -> the parameter, removed from the dict (an error when there is none).")
function ParameterDict:forward()
  fail("ParameterDict:forward: a ParameterDict has no forward; index it by name")
end
function ParameterDict:extra_repr()
  local lines = {}
  for i, n in ipairs(self._param_names) do lines[i] = "(" .. n .. "): " .. param_repr(self._parameters[n]) end
  return table.concat(lines, "\n")
end
doc(ParameterDict, [==[nn.ParameterDict([{name = p, ...} or {{name, p}, ...}]): registered parameters by name (PyTorch's nn.ParameterDict).
  pdict.name, pdict[name] = p (a tensor becomes a parameter), #pdict, pdict:keys(), pdict:values(),
  pdict:items() / pairs(pdict) in insertion order, pdict:update(t), pdict:pop(name). A map argument is
  added in sorted key order (as PyTorch's for a dict). state_dict keys are "<dict>.<name>".]==])

-- ------------------------------------------------------------------ LocalResponseNorm, Softmax2d, ChannelShuffle

define {
  cls = "LocalResponseNorm", fname = "local_response_norm",
  args = {{"size", pos_int, REQUIRED}, {"alpha", number, 1e-4}, {"beta", number, 0.75}, {"k", number, 1.0}},
  check = check_input,
  fn = function(x, s, name)
    if x:dim() < 3 then
      fail("%s: input must have at least 3 dimensions {N,C,*}, got shape %s", name, shape_str(x))
    end
    if x:numel() == 0 then return x end
    -- the mean of x^2 over a window of `size` channels, zero-padded by size//2 before and
    -- (size-1)//2 after (PyTorch's avg_pool over the padded channels)
    local size = s.size
    local function zeros(k)
      local shape = x:size()
      shape[2] = k
      return pt.zeros(shape, {dtype = x:dtype()})
    end
    local parts = {}
    if size // 2 > 0 then parts[#parts + 1] = zeros(size // 2) end
    parts[#parts + 1] = x * x
    if (size - 1) // 2 > 0 then parts[#parts + 1] = zeros((size - 1) // 2) end
    local padded = #parts > 1 and pt.cat(parts, 2) or parts[1]
    local div = padded:unfold(2, size, 1):mean(x:dim() + 1)
    return x / (div * s.alpha + s.k):pow(s.beta)
  end,
  doc = [==[nn.LocalResponseNorm(size[, alpha=1e-4[, beta=0.75[, k=1.0]]]): x / (k + alpha * mean(x^2 over size channels))^beta.
  Input {N,C,*} (3 dims at least); the window of channel c runs from c - size//2 to c + (size-1)//2,
  zero outside (PyTorch's). Also nn.LocalResponseNorm({size=, alpha=, beta=, k=}).]==],
  fdoc = "F.local_response_norm(x, size[, alpha=1e-4[, beta=0.75[, k=1.0]]]); see help(nn.LocalResponseNorm).",
}
function nn.LocalResponseNorm:extra_repr()
  return string.format("%d, alpha=%s, beta=%s, k=%s", self.size, num_repr(self.alpha), num_repr(self.beta), num_repr(self.k))
end

local Softmax2d = Module:extend("Softmax2d")
nn.Softmax2d = Softmax2d
function Softmax2d:__init(...) parse("Softmax2d", {}, ...) end
function Softmax2d:forward(x, ...)
  local name = "Softmax2d:forward"
  one_input(name, ...)
  check_input(name, x)
  if x:dim() ~= 3 and x:dim() ~= 4 then
    fail("%s: input must be 3-D {C,H,W} or 4-D {N,C,H,W}, got shape %s", name, shape_str(x))
  end
  return nn.softmax(x, -3)
end
doc(Softmax2d, "nn.Softmax2d(): softmax over the channels (dim -3) at every position of a {C,H,W} or {N,C,H,W} input.")

-- ShuffleNet's channel shuffle of {N,C,*} (native_channel_shuffle: also {N,C})
local function channel_shuffle_fn(x, s, name, min_dim)
  min_dim = min_dim or 3
  if x:dim() < min_dim then
    fail("%s: input must have at least %d dimensions {N,C%s}, got shape %s", name, min_dim,
      min_dim == 3 and ",*" or "[,*]", shape_str(x))
  end
  local size, g = x:size(), s.groups
  local c = size[2]
  if c % g ~= 0 then
    fail("%s: the %d channels (dim 2 of input shape %s) must be divisible by groups %d", name, c, shape_str(x), g)
  end
  local shape = {size[1], g, c // g}
  for d = 3, #size do shape[#shape + 1] = size[d] end
  return x:reshape(shape):transpose(2, 3):reshape(size)
end

define {
  cls = "ChannelShuffle", fname = "channel_shuffle",
  args = {{"groups", pos_int, REQUIRED}}, repr = {"groups"},
  check = function(name, x)
    if not pt.is_tensor(x) then fail("%s: input must be a tensor, got %s", name, type_of(x)) end
    return x
  end,
  fn = channel_shuffle_fn,
  doc = [==[nn.ChannelShuffle(groups): {N,C,*} with the channels regrouped as ShuffleNet's: split into groups
  of C/groups, channel j of group i goes to position j*groups + i. C must be divisible by groups.]==],
  fdoc = "F.channel_shuffle(x, groups) -> x with its channels shuffled; see help(nn.ChannelShuffle).",
}

-- ------------------------------------------------------------------ AlphaDropout, FeatureAlphaDropout

local function probability(name, k, v)
  number(name, k, v)
  if not (v >= 0 and v <= 1) then fail("%s: %s must be between 0 and 1, got %s", name, k, num_repr(v)) end
  return v
end

-- ATen's _dropout_impl with alpha: kept elements a*x + alpha*a*p, dropped ones -alpha*a*(1-p),
-- a = 1/sqrt((alpha^2 p + 1)(1 - p)): zero mean and unit variance stay so (SELU's fixed point)
local SELU_NEG = 1.7580993408473766 -- SELU's alpha * scale: its saturation value, negated
local function alpha_dropout(x, s, name, feature)
  local p = s.p
  if p == 0 or not s.training or x:numel() == 0 then return x end
  local grad = x.requires_grad and pt.is_grad_enabled()
  if s.inplace and grad and x.is_leaf then
    fail("%s: inplace=true on a leaf tensor that requires grad (its gradient would be lost; PyTorch refuses it too)", name)
  end
  local src = (s.inplace and grad) and x:clone() or x
  local y
  if p == 1 then
    y = src * 0
  else
    local shape = x:size()
    if feature then
      if x:dim() < 2 then
        fail("%s: feature dropout needs an input of at least 2 dimensions {N,C,*}, got shape %s", name, shape_str(x))
      end
      for d = 3, #shape do shape[d] = 1 end
    end
    local noise = pt.empty(shape, {dtype = x:dtype()}):bernoulli_(1 - p)
    local a = 1 / math.sqrt((SELU_NEG * SELU_NEG * p + 1) * (1 - p))
    y = src * (noise * a) + ((noise - 1) * (SELU_NEG * a) + SELU_NEG * a * p)
  end
  if s.inplace then
    x:copy_(y)
    return x
  end
  return y
end

for _, kind in ipairs({{"AlphaDropout", "alpha_dropout", false}, {"FeatureAlphaDropout", "feature_alpha_dropout", true}}) do
  local cls, fname, feature = kind[1], kind[2], kind[3]
  local what = feature and "whole channels (every {N,C} plane at once; input {N,C,*})" or "elements"
  define {
    cls = cls, fname = fname,
    args = {{"p", probability, 0.5}, {"inplace", boolean, false}}, repr = {"p", "inplace"},
    fargs = {{"p", probability, 0.5}, {"training", boolean, false}, {"inplace", boolean, false}},
    check = check_input,
    fn = function(x, s, name) return alpha_dropout(x, s, name, feature) end,
    doc = string.format([==[nn.%s([p=0.5[, inplace=false]]): dropout for SELU networks, on %s.
  In training mode each is dropped with probability p and the result is a * (x or -alpha') + b
  (PyTorch's constants), which keeps zero mean and unit variance; identity in eval mode.
  Also nn.%s({p=, inplace=}).]==], cls, what, cls),
    fdoc = string.format("F.%s(x[, p=0.5[, training=false[, inplace=false]]]): see help(nn.%s); training defaults to false, as PyTorch's.",
      fname, cls),
  }
end

-- ------------------------------------------------------------------ RMSNorm

-- PyTorch 2.4's eps=None: the machine epsilon of the input's dtype (torch.finfo(dtype).eps)
local FINFO_EPS = {float32 = 1.1920928955078125e-07, float64 = 2.220446049250313e-16}

local function norm_shape_arg(name, k, v)
  if math.type(v) == "integer" then v = {v} end
  if type(v) ~= "table" or #v == 0 then
    fail("%s: %s must be an integer or a non-empty list of integers, got %s", name, k, type_of(v))
  end
  local out = {}
  for i, d in ipairs(v) do
    if math.type(d) ~= "integer" or d < 0 then
      fail("%s: %s[%d] must be a non-negative integer, got %s", name, k, i,
        type(d) == "number" and num_repr(d) or type_of(d))
    end
    out[i] = d
  end
  return out
end

-- one fused C kernel forward and backward (lib/nn_rmsnorm.c)
local function rms_norm(name, x, shape, w, eps)
  check_input(name, x)
  if w ~= nil then tensor_arg(name, "weight", w) end
  if eps == nil then eps = FINFO_EPS[x:dtype()] else number(name, "eps", eps) end
  return pt._nn_rms_norm(x, shape, w, eps, name)
end

local RMSNorm = Module:extend("RMSNorm")
nn.RMSNorm = RMSNorm
local RMSNORM_ARGS = {{"normalized_shape", norm_shape_arg, REQUIRED}, {"eps", number, nil},
  {"elementwise_affine", boolean, true}, {"dtype", dtype_arg, nil}}
function RMSNorm:__init(...)
  local s = parse("RMSNorm", RMSNORM_ARGS, ...)
  self.normalized_shape, self.eps, self.elementwise_affine = s.normalized_shape, s.eps, s.elementwise_affine
  if s.elementwise_affine then self.weight = nn.Parameter(pt.ones(s.normalized_shape, {dtype = s.dtype})) end
end
function RMSNorm:forward(x, ...)
  local name = "RMSNorm:forward"
  one_input(name, ...)
  return rms_norm(name, x, self.normalized_shape, self._parameters.weight, self.eps)
end
function RMSNorm:extra_repr()
  return string.format("{%s}, eps=%s, elementwise_affine=%s", table.concat(self.normalized_shape, ","),
    self.eps == nil and "nil" or num_repr(self.eps), tostring(self.elementwise_affine))
end
doc(RMSNorm, [==[nn.RMSNorm(normalized_shape[, eps=nil[, elementwise_affine=true]]): PyTorch 2.4's RMS norm.
  y = x / sqrt(mean(x^2 over the trailing dims normalized_shape) + eps) * weight; weight (ones, shape
  normalized_shape) only with elementwise_affine. eps=nil: the machine epsilon of the input's dtype
  (1.19e-7 for float32, 2.22e-16 for float64), as PyTorch's eps=None. normalized_shape: an integer or a
  list. Also nn.RMSNorm(shape, {eps=, elementwise_affine=, dtype="float32"}). One fused C kernel forward
  and backward, with second derivatives (create_graph) as LayerNorm's.]==])

function F.rms_norm(x, normalized_shape, weight, eps, ...)
  local name = "rms_norm"
  if select("#", ...) > 0 then fail("%s: too many arguments (4 at most)", name) end
  return rms_norm(name, x, norm_shape_arg(name, "normalized_shape", normalized_shape), weight, eps)
end
if nn.rms_norm == nil then nn.rms_norm = F.rms_norm end
doc(F.rms_norm, "F.rms_norm(x, normalized_shape[, weight[, eps=nil]]) -> x / sqrt(mean(x^2 over the trailing dims) + eps) * weight;\n"
  .. "  eps=nil: the dtype's machine epsilon (PyTorch 2.4's). See help(nn.RMSNorm).")

-- ------------------------------------------------------------------ Unfold, Fold (im2col, col2im)

local function pair_arg(min)
  return function(name, k, v)
    local ok
    local i = as_int(v)
    if i then
      ok = i >= min
    elseif type(v) == "table" and not pt.is_tensor(v) and #v == 2 then
      local a, b = as_int(v[1]), as_int(v[2])
      ok = a ~= nil and b ~= nil and a >= min and b >= min
    end
    if not ok then
      fail("%s: %s must be a %s integer or a list of 2, got %s", name, k, min == 1 and "positive" or "non-negative",
        arg_repr(v))
    end
    return v
  end
end
local positive_pair, nonneg_pair = pair_arg(1), pair_arg(0)

local function pair(v)
  local i = as_int(v)
  if i then return i, i end
  return as_int(v[1]), as_int(v[2])
end

-- the sliding blocks over an H x W plane: sizes, and the 1-based position in the padded plane
-- of every block element, ordered (kernel row, kernel column, block row, block column)
local function blocks(s, H, W)
  local b = {}
  b.kh, b.kw = pair(s.kernel_size)
  b.dh, b.dw = pair(s.dilation)
  b.ph, b.pw = pair(s.padding)
  b.sh, b.sw = pair(s.stride)
  b.Hp, b.Wp = H + 2 * b.ph, W + 2 * b.pw
  b.oh = (b.Hp - b.dh * (b.kh - 1) - 1) // b.sh + 1
  b.ow = (b.Wp - b.dw * (b.kw - 1) - 1) // b.sw + 1
  b.text = string.format("kernel_size {%d,%d}, dilation {%d,%d}, padding {%d,%d} and stride {%d,%d}", b.kh, b.kw,
    b.dh, b.dw, b.ph, b.pw, b.sh, b.sw)
  return b
end

local function block_index(b)
  local ki = pt.arange(0, b.kh, I64):reshape(b.kh, 1, 1, 1)
  local kj = pt.arange(0, b.kw, I64):reshape(1, b.kw, 1, 1)
  local oi = pt.arange(0, b.oh, I64):reshape(1, 1, b.oh, 1)
  local oj = pt.arange(0, b.ow, I64):reshape(1, 1, 1, b.ow)
  return ((oi * b.sh + ki * b.dh) * b.Wp + oj * b.sw + kj * b.dw + 1):reshape(-1)
end

local UNFOLD_ARGS = {{"kernel_size", positive_pair, REQUIRED}, {"dilation", positive_pair, 1},
  {"padding", nonneg_pair, 0}, {"stride", positive_pair, 1}}

define {
  cls = "Unfold", fname = "unfold",
  args = UNFOLD_ARGS, repr = {"kernel_size", "dilation", "padding", "stride"},
  check = check_input,
  fn = function(x, s, name)
    local nd = x:dim()
    if nd ~= 3 and nd ~= 4 then
      fail("%s: input must be 3-D {C,H,W} or 4-D {N,C,H,W}, got shape %s", name, shape_str(x))
    end
    local x4 = nd == 3 and x:unsqueeze(1) or x
    local N, C, H, W = x4:size(1), x4:size(2), x4:size(3), x4:size(4)
    if C == 0 or H == 0 or W == 0 then
      fail("%s: only the batch may be empty, got input shape %s", name, shape_str(x))
    end
    local b = blocks(s, H, W)
    if b.oh < 1 or b.ow < 1 then
      fail("%s: input shape %s with %s has no sliding blocks (%dx%d)", name, shape_str(x), b.text,
        math.max(b.oh, 0), math.max(b.ow, 0))
    end
    if b.ph > 0 or b.pw > 0 then x4 = F.pad(x4, {b.pw, b.pw, b.ph, b.ph}) end
    local K, L = b.kh * b.kw, b.oh * b.ow
    -- one gather: its backward adds overlapping blocks' gradients back (index_add)
    local cols = x4:reshape(N, C, b.Hp * b.Wp):index_select(3, block_index(b))
    if nd == 3 then return cols:reshape(C * K, L) end
    return cols:reshape(N, C * K, L)
  end,
  doc = [==[nn.Unfold(kernel_size[, dilation=1[, padding=0[, stride=1]]]): im2col, PyTorch's nn.Unfold.
  {N,C,H,W} (or {C,H,W}) -> {N, C*kh*kw, L} (or {C*kh*kw, L}): every sliding block of the
  zero-padded input as a column, L = oh*ow blocks in row-major order, rows ordered (channel, kernel
  row, kernel column). Each setting an integer or a list of 2 (height, width). Gradients flow back
  (overlapping blocks add up). nn.Fold is its adjoint. Also nn.Unfold({kernel_size=, dilation=, padding=, stride=}).]==],
  fdoc = "F.unfold(x, kernel_size[, dilation=1[, padding=0[, stride=1]]]) -> the sliding blocks as columns (im2col); see help(nn.Unfold).",
}

define {
  cls = "Fold", fname = "fold",
  args = {{"output_size", positive_pair, REQUIRED}, UNFOLD_ARGS[1], UNFOLD_ARGS[2], UNFOLD_ARGS[3], UNFOLD_ARGS[4]},
  repr = {"output_size", "kernel_size", "dilation", "padding", "stride"},
  check = check_input,
  fn = function(x, s, name)
    local nd = x:dim()
    if nd ~= 2 and nd ~= 3 then
      fail("%s: input must be 2-D {C*kh*kw, L} or 3-D {N, C*kh*kw, L}, got shape %s", name, shape_str(x))
    end
    local x3 = nd == 2 and x:unsqueeze(1) or x
    local N, CK, L = x3:size(1), x3:size(2), x3:size(3)
    if CK == 0 or L == 0 then fail("%s: only the batch may be empty, got input shape %s", name, shape_str(x)) end
    local H, W = pair(s.output_size)
    local b = blocks(s, H, W)
    local K = b.kh * b.kw
    if CK % K ~= 0 then
      fail("%s: dim %d of input shape %s (size %d) must be divisible by the %d elements of kernel_size {%d,%d}", name,
        nd - 1, shape_str(x), CK, K, b.kh, b.kw)
    end
    local oh, ow = math.max(b.oh, 0), math.max(b.ow, 0)
    if oh * ow ~= L or oh == 0 then
      fail("%s: output_size {%d,%d} with %s has %dx%d = %d sliding blocks, but the input has %d (dim %d of shape %s)",
        name, H, W, b.text, oh, ow, oh * ow, L, nd, shape_str(x))
    end
    local C = CK // K
    local index = block_index(b):reshape(1, 1, K * L):expand(N, C, K * L)
    -- one scatter-add (overlapping blocks sum); its backward is the gather of Unfold
    local out = pt.zeros({N, C, b.Hp * b.Wp}, {dtype = x:dtype()})
      :scatter_add(3, index, x3:reshape(N, C, K * L)):reshape(N, C, b.Hp, b.Wp)
    if b.ph > 0 or b.pw > 0 then out = out:narrow(3, b.ph + 1, H):narrow(4, b.pw + 1, W) end
    if nd == 2 then return out:reshape(C, H, W) end
    return out
  end,
  doc = [==[nn.Fold(output_size, kernel_size[, dilation=1[, padding=0[, stride=1]]]): col2im, PyTorch's nn.Fold.
  {N, C*kh*kw, L} (or {C*kh*kw, L}) -> {N, C, H, W} (or {C, H, W}), {H, W} = output_size: adds every
  column back at its block's place (overlaps sum), the adjoint of nn.Unfold with the same settings; L
  must be the number of blocks. Also nn.Fold({output_size=, kernel_size=, dilation=, padding=, stride=}).]==],
  fdoc = "F.fold(x, output_size, kernel_size[, dilation=1[, padding=0[, stride=1]]]) -> blocks summed into an image (col2im); see help(nn.Fold).",
}

-- ------------------------------------------------------------------ nn.utils

local utils = rawget(nn, "utils")
if utils == nil then
  utils = {}
  nn.utils = utils
end
doc(utils, [==[nn.utils: PyTorch's torch.nn.utils: parameters_to_vector, vector_to_parameters, clip_grad_norm_,
  clip_grad_value_, weight_norm / remove_weight_norm, spectral_norm / remove_spectral_norm; nn.utils.rnn
  (pad_sequence, pack_padded_sequence, pad_packed_sequence, pack_sequence, PackedSequence).]==])

local module_class_name = nn._class_name

local function tensor_list(name, params)
  if nn.is_module(params) then return params:parameters() end
  if pt.is_tensor(params) then return {params} end
  if type(params) ~= "table" then
    fail("%s: parameters must be a list of tensors or a Module, got %s", name, type_of(params))
  end
  for i, p in ipairs(params) do
    if not pt.is_tensor(p) then fail("%s: parameters[%d] must be a tensor, got %s", name, i, type_of(p)) end
  end
  return params
end

function utils.parameters_to_vector(parameters, ...)
  local name = "parameters_to_vector"
  if select("#", ...) > 0 then fail("%s: expected (parameters), got %d arguments", name, 1 + select("#", ...)) end
  local list = tensor_list(name, parameters)
  if #list == 0 then fail("%s: no parameters (an empty list)", name) end
  local flat = {}
  for i, p in ipairs(list) do flat[i] = p:reshape(-1) end
  return pt.cat(flat, 1)
end
doc(utils.parameters_to_vector, [==[nn.utils.parameters_to_vector(parameters) -> 1-D tensor: every parameter flattened, concatenated in order.
  parameters: a list of tensors or a Module (its parameters()). Differentiable, as PyTorch's.]==])

function utils.vector_to_parameters(vec, parameters, ...)
  local name = "vector_to_parameters"
  if select("#", ...) > 0 then fail("%s: expected (vec, parameters), got %d arguments", name, 2 + select("#", ...)) end
  if not pt.is_tensor(vec) then fail("%s: vec must be a tensor, got %s", name, type_of(vec)) end
  if vec:dim() ~= 1 then fail("%s: vec must be 1-dimensional, got shape %s", name, shape_str(vec)) end
  local list = tensor_list(name, parameters)
  local total = 0
  for _, p in ipairs(list) do total = total + p:numel() end
  if total ~= vec:numel() then
    fail("%s: vec has %d elements, but the %d parameters have %d", name, vec:numel(), #list, total)
  end
  pt.no_grad(function()
    local off = 0
    for _, p in ipairs(list) do
      local n = p:numel()
      if n > 0 then p:copy_(vec:narrow(1, off + 1, n):reshape(p:size())) end
      off = off + n
    end
  end)
end
doc(utils.vector_to_parameters, [==[nn.utils.vector_to_parameters(vec, parameters): copies consecutive slices of the 1-D vec into the parameters.
  The inverse of parameters_to_vector; vec must have exactly their total number of elements. The
  parameters keep their own storage (PyTorch's points them at vec's instead), without recording.]==])

-- tail calls: optim's errors then point at the caller's line, as when it is called directly
function utils.clip_grad_norm_(...) return require("partrain.optim").clip_grad_norm(...) end
doc(utils.clip_grad_norm_, "nn.utils.clip_grad_norm_(params, max_norm[, {norm_type=2}]) -> total norm: optim.clip_grad_norm (see help(optim.clip_grad_norm)).")
function utils.clip_grad_value_(...) return require("partrain.optim").clip_grad_value(...) end
doc(utils.clip_grad_value_, "nn.utils.clip_grad_value_(params, clip_value): optim.clip_grad_value (see help(optim.clip_grad_value)).")

-- Forward pre-hooks, as PyTorch's weight_norm and spectral_norm register them: the instance gets
-- a forward of its own (its class's, or the one the instance had, runs behind it) that first
-- recomputes each hooked weight. The weight is the module's plain field m.weight; it is also put
-- into m._parameters while the forward runs, for layers that read their parameters from there
-- (Linear, Embedding, RNN), and taken out again afterwards (also on an error). A module with a
-- forward of its own is not fused by Sequential.
local HOOKS, BEFORE = "_forward_pre_hooks", "_forward_before_hooks"
local hook_compute = {}

-- The machinery shared with pruning (nn_prune.lua), which keeps its hooks under its own keys:
-- hooks_key lists hooks {name = ...}, before_key the forward the instance had (false: none).
-- utils._forward_with_weights(self, hooks_key, before_key, compute, ...): sets each hooked weight
-- to compute(self, h) and runs the inner forward.
function utils._forward_with_weights(self, hooks_key, before_key, compute, ...)
  local params = rawget(self, "_parameters")
  local injected = {}
  for _, h in ipairs(rawget(self, hooks_key)) do
    local w = compute(self, h)
    rawset(self, h.name, w)
    if params[h.name] == nil then
      params[h.name] = w
      injected[#injected + 1] = h.name
    end
  end
  local inner = rawget(self, before_key) or getmetatable(self).forward
  local _ <close> = setmetatable({}, {__close = function()
    for _, n in ipairs(injected) do params[n] = nil end
  end})
  return inner(self, ...)
end

-- m's hook list under hooks_key, made on first use with forward as m's own forward
function utils._hook_list(m, hooks_key, before_key, forward)
  local hooks = rawget(m, hooks_key)
  if hooks == nil then
    hooks = {}
    rawset(m, before_key, rawget(m, "forward") or false)
    rawset(m, hooks_key, hooks)
    rawset(m, "forward", forward)
  end
  return hooks
end

-- removes hook i; the last one gone, m gets back the forward it had
function utils._remove_hook(m, hooks_key, before_key, i)
  local hooks = rawget(m, hooks_key)
  table.remove(hooks, i)
  if #hooks == 0 then
    rawset(m, "forward", rawget(m, before_key) or nil)
    rawset(m, hooks_key, nil)
    rawset(m, before_key, nil)
  end
end

local function compute_pre_hook(m, h) return hook_compute[h.kind](m, h, m.training) end

function utils._forward_with_pre_hooks(self, ...)
  return utils._forward_with_weights(self, HOOKS, BEFORE, compute_pre_hook, ...)
end

local function add_hook(m, hook)
  local hooks = utils._hook_list(m, HOOKS, BEFORE, utils._forward_with_pre_hooks)
  hooks[#hooks + 1] = hook
end

local function find_hook(m, kind, name)
  local hooks = rawget(m, HOOKS)
  for i, h in ipairs(hooks or {}) do
    if h.kind == kind and h.name == name then return h, i end
  end
end

local function remove_hook(m, i) utils._remove_hook(m, HOOKS, BEFORE, i) end

-- module, name: the checks weight_norm and spectral_norm share; returns the parameter
local function hooked_parameter(fname, m, name, kind)
  if not nn.is_module(m) then fail("%s: module must be a Module, got %s", fname, type_of(m)) end
  if type(name) ~= "string" then fail("%s: name must be a string, got %s", fname, type_of(name)) end
  if find_hook(m, kind, name) then
    fail("%s: cannot register two %s hooks on the same parameter '%s'", fname, kind, name)
  end
  local w = rawget(m, "_parameters")[name]
  if w == nil then fail("%s: %s has no parameter '%s'", fname, module_class_name(m), name) end
  return w
end

local function param_dim(fname, dim, w, name)
  if math.type(dim) ~= "integer" or dim == 0 then
    fail("%s: dim must be a non-zero integer (1-based, negative from the end)%s, got %s", fname,
      fname == "weight_norm" and " or false (the whole tensor)" or "", arg_repr(dim))
  end
  local n = w:dim()
  local r = dim < 0 and n + 1 + dim or dim
  if r < 1 or r > n then
    fail("%s: dim %d out of range for parameter '%s' of shape %s", fname, dim, name, shape_str(w))
  end
  return r
end

-- the 2-norm over every dim but dim (kept, size 1), or over the whole tensor (dim false): 0-d;
-- also weight_norm's parametrization (nn_parametrize.lua)
local function norm_except_dim(v, dim)
  if not dim then return v:norm() end
  local n = v:size(dim)
  local shape = {}
  for d = 1, v:dim() do shape[d] = d == dim and n or 1 end
  return v:movedim(dim, 1):reshape(n, -1):norm(2, 2):reshape(shape)
end
utils._norm_except_dim = norm_except_dim

hook_compute.weight_norm = function(m, h)
  local p = rawget(m, "_parameters")
  local g, v = p[h.name .. "_g"], p[h.name .. "_v"]
  return v * (g / norm_except_dim(v, h.dim))
end

function utils.weight_norm(module, name, dim, ...)
  local fname = "weight_norm"
  if select("#", ...) > 0 then fail("%s: expected (module[, name[, dim]]), got %d arguments", fname, 3 + select("#", ...)) end
  if name == nil then name = "weight" end
  local w = hooked_parameter(fname, module, name, "weight_norm")
  if dim == nil then dim = 1 end
  local d = dim ~= false and param_dim(fname, dim, w, name)
  local g = pt.no_grad(norm_except_dim, w:detach(), d)
  module[name] = nil
  module:register_parameter(name .. "_g", nn.Parameter(g))
  module:register_parameter(name .. "_v", nn.Parameter(w:detach()))
  local hook = {kind = "weight_norm", name = name, dim = d}
  rawset(module, name, hook_compute.weight_norm(module, hook))
  add_hook(module, hook)
  return module
end
doc(utils.weight_norm, [==[nn.utils.weight_norm(module[, name="weight"[, dim=1]]) -> module, with PyTorch 1.13's (hook-based) weight normalisation.
  The parameter name is replaced by name_g (its norms over every dim but dim, kept as size 1) and
  name_v (its direction, the old values), and module.name = name_v * (name_g / ||name_v||) is
  recomputed before every forward, so both get gradients. dim is 1-based (negative from the end;
  PyTorch's dim=0 is 1 here); dim=false takes the norm of the whole tensor (PyTorch's dim=None).
  state_dict keys are PyTorch's (e.g. bias, weight_g, weight_v for a Linear). Undo with remove_weight_norm.]==])

function utils.remove_weight_norm(module, name, ...)
  local fname = "remove_weight_norm"
  if select("#", ...) > 0 then fail("%s: expected (module[, name]), got %d arguments", fname, 2 + select("#", ...)) end
  if not nn.is_module(module) then fail("%s: module must be a Module, got %s", fname, type_of(module)) end
  if name == nil then name = "weight" end
  local h, i = find_hook(module, "weight_norm", name)
  if not h then fail("%s: weight_norm of '%s' not found in %s", fname, tostring(name), module_class_name(module)) end
  local w = pt.no_grad(hook_compute.weight_norm, module, h)
  remove_hook(module, i)
  rawset(module, name, nil)
  module[name .. "_g"] = nil
  module[name .. "_v"] = nil
  module:register_parameter(name, w)
  return module
end
doc(utils.remove_weight_norm, "nn.utils.remove_weight_norm(module[, name=\"weight\"]) -> module with name a plain parameter again, holding\n"
  .. "  the current name_v * name_g / ||name_v|| (name_g and name_v are gone).")

local function matrix_of(w, dim)
  if dim ~= 1 then w = w:movedim(dim, 1) end
  return w:reshape(w:size(1), -1)
end

local function unit(x, eps) return x / pt.maximum(x:norm(), eps) end

-- PyTorch's SpectralNorm.compute_weight: power iteration on the buffers u and v (in place, training
-- mode only), then weight / (u . W v) with u and v as constants
hook_compute.spectral_norm = function(m, h, training)
  local weight = rawget(m, "_parameters")[h.name .. "_orig"]
  local b = rawget(m, "_buffers")
  local u, v = b[h.name .. "_u"], b[h.name .. "_v"]
  local wm = matrix_of(weight, h.dim)
  if training then
    pt.no_grad(function()
      local w = wm:detach()
      for _ = 1, h.n_power_iterations do
        v:copy_(unit(pt.mv(w:t(), u), h.eps))
        u:copy_(unit(pt.mv(w, v), h.eps))
      end
    end)
    u, v = u:clone(), v:clone()
  end
  return weight / pt.dot(u, pt.mv(wm, v))
end

local function is_conv_transpose(m)
  local cls = getmetatable(m)
  while cls do
    if cls == rawget(nn, "ConvTranspose1d") or cls == rawget(nn, "ConvTranspose2d") then return true end
    cls = rawget(cls, "super")
  end
  return false
end

function utils.spectral_norm(module, name, n_power_iterations, eps, dim, ...)
  local fname = "spectral_norm"
  if select("#", ...) > 0 then
    fail("%s: expected (module[, name[, n_power_iterations[, eps[, dim]]]]), got %d arguments", fname, 5 + select("#", ...))
  end
  if name == nil then name = "weight" end
  if n_power_iterations == nil then n_power_iterations = 1 end
  pos_int(fname, "n_power_iterations", n_power_iterations)
  if eps == nil then eps = 1e-12 end
  nonneg(fname, "eps", eps)
  local w = hooked_parameter(fname, module, name, "spectral_norm")
  if dim == nil then dim = is_conv_transpose(module) and 2 or 1 end
  local d = param_dim(fname, dim, w, name)
  local wm = matrix_of(w:detach(), d)
  local u, v = pt.no_grad(function()
    return unit(pt.randn(wm:size(1), {dtype = w:dtype()}), eps), unit(pt.randn(wm:size(2), {dtype = w:dtype()}), eps)
  end)
  module[name] = nil
  module:register_parameter(name .. "_orig", w)
  rawset(module, name, w:detach())
  module:register_buffer(name .. "_u", u)
  module:register_buffer(name .. "_v", v)
  add_hook(module, {kind = "spectral_norm", name = name, dim = d, n_power_iterations = math.tointeger(n_power_iterations),
    eps = eps})
  return module
end
doc(utils.spectral_norm, [==[nn.utils.spectral_norm(module[, name="weight"[, n_power_iterations=1[, eps=1e-12[, dim]]]]) -> module, PyTorch 1.13's (hook-based) spectral normalisation.
  name becomes name_orig (the same parameter) and the buffers name_u, name_v (unit vectors, random at
  first); before every forward, module.name = name_orig / sigma, sigma = u . W v with W name_orig as a
  matrix of rows along dim. In training mode n_power_iterations power-iteration steps first update
  u and v in place (v = normalize(W^T u), u = normalize(W v), norms clamped at eps); in eval mode they
  stay. dim is 1-based (default 1, 2 for ConvTranspose1d/2d: their output channels). state_dict keys
  are PyTorch's (weight_orig, weight_u, weight_v), so a PyTorch state_dict loads. Undo with remove_spectral_norm.]==])

function utils.remove_spectral_norm(module, name, ...)
  local fname = "remove_spectral_norm"
  if select("#", ...) > 0 then fail("%s: expected (module[, name]), got %d arguments", fname, 2 + select("#", ...)) end
  if not nn.is_module(module) then fail("%s: module must be a Module, got %s", fname, type_of(module)) end
  if name == nil then name = "weight" end
  local h, i = find_hook(module, "spectral_norm", name)
  if not h then fail("%s: spectral_norm of '%s' not found in %s", fname, tostring(name), module_class_name(module)) end
  local w = pt.no_grad(hook_compute.spectral_norm, module, h, false)
  remove_hook(module, i)
  rawset(module, name, nil)
  module[name .. "_u"] = nil
  module[name .. "_v"] = nil
  module[name .. "_orig"] = nil
  module:register_parameter(name, w)
  return module
end
doc(utils.remove_spectral_norm, "nn.utils.remove_spectral_norm(module[, name=\"weight\"]) -> module with name a plain parameter again, holding\n"
  .. "  name_orig / sigma for the current u and v (no power iteration); name_orig, name_u and name_v are gone.")

-- ------------------------------------------------------------------ TripletMarginWithDistanceLoss

local function triplet_distance_loss(name, a, p, n, s)
  for _, e in ipairs({{a, "anchor"}, {p, "positive"}, {n, "negative"}}) do
    if not pt.is_tensor(e[1]) then fail("%s: %s must be a tensor, got %s", name, e[2], type_of(e[1])) end
  end
  if a:dim() ~= p:dim() or a:dim() ~= n:dim() then
    fail("%s: anchor, positive and negative must have the same number of dimensions, got shapes %s, %s and %s",
      name, shape_str(a), shape_str(p), shape_str(n))
  end
  local d = s.distance_function or function(x, y) return pairwise_distance(name, x, y, 2.0, 1e-6, false) end
  local d_ap, d_an = d(a, p), d(a, n)
  if s.swap then d_an = pt.minimum(d_an, d(p, n)) end
  return reduce((d_ap - d_an + s.margin):clamp(0), s.reduction)
end

local TRIPLET_DISTANCE_ARGS = {
  {"distance_function", function(name, k, v)
    if type(v) ~= "function" and not (type(v) == "table" and getmetatable(v) and getmetatable(v).__call) then
      fail("%s: %s must be a function (or a callable module), got %s", name, k, type_of(v))
    end
    return v
  end, nil},
  {"margin", function(name, k, v)
    v = number(name, k, v)
    if v <= 0 then fail("%s: %s must be greater than 0, got %s", name, k, num_repr(v)) end
    return v
  end, 1.0},
  {"swap", boolean, false}, {"reduction", reduction_arg, "mean"},
}

local TripletMarginWithDistanceLoss = Module:extend("TripletMarginWithDistanceLoss")
nn.TripletMarginWithDistanceLoss = TripletMarginWithDistanceLoss
function TripletMarginWithDistanceLoss:__init(opts, ...)
  if select("#", ...) > 0 or (opts ~= nil and type(opts) ~= "table") then
    fail("TripletMarginWithDistanceLoss: expected an options table {distance_function=, margin=, swap=, reduction=}")
  end
  local s = parse("TripletMarginWithDistanceLoss", TRIPLET_DISTANCE_ARGS, opts or {})
  self.distance_function, self.margin, self.swap, self.reduction = s.distance_function, s.margin, s.swap, s.reduction
end
function TripletMarginWithDistanceLoss:forward(a, p, n)
  return triplet_distance_loss("TripletMarginWithDistanceLoss:forward", a, p, n, self)
end
function TripletMarginWithDistanceLoss:extra_repr()
  return string.format("margin=%s, swap=%s, reduction=%s", num_repr(self.margin), tostring(self.swap), self.reduction)
end
doc(TripletMarginWithDistanceLoss, [==[nn.TripletMarginWithDistanceLoss([{distance_function=, margin=1.0, swap=false, reduction="mean"}])
  forward(anchor, positive, negative) -> max(d(a, p) - d(a, n) + margin, 0) reduced, as PyTorch's: d is
  distance_function(x, y) (a function or a module returning one distance per sample; default
  F.pairwise_distance), swap takes min(d(a, n), d(p, n)) for d(a, n). margin must be > 0.]==])
function F.triplet_margin_with_distance_loss(a, p, n, opts, ...)
  local name = "triplet_margin_with_distance_loss"
  if select("#", ...) > 0 or (opts ~= nil and type(opts) ~= "table") then
    fail("%s: expected (anchor, positive, negative[, {distance_function=, margin=, swap=, reduction=}])", name)
  end
  return triplet_distance_loss(name, a, p, n, parse(name, TRIPLET_DISTANCE_ARGS, opts or {}))
end
doc(F.triplet_margin_with_distance_loss, "F.triplet_margin_with_distance_loss(anchor, positive, negative[, {distance_function=, margin=1.0,\n"
  .. "  swap=false, reduction=\"mean\"}]); see help(nn.TripletMarginWithDistanceLoss).")

-- ------------------------------------------------------------------ F's in-place and _with_indices forms

-- F.elu_(x, alpha) is F.elu(x, {alpha = alpha, inplace = true}): positional settings in keys' order, or
-- an options table
local function inplace_form(name, base, keys)
  F[name] = function(x, ...)
    local o = {}
    local n = select("#", ...)
    if n == 1 and type((...)) == "table" then
      for k, v in pairs((...)) do o[k] = v end
    elseif n > #keys then
      fail("%s: too many arguments (%d settings at most, got %d)", name, #keys, n)
    else
      for i, k in ipairs(keys) do o[k] = (select(i, ...)) end
    end
    if o.inplace ~= nil then fail("%s: unknown option 'inplace' (%s is in place)", name, name) end
    if not pt.is_tensor(x) then fail("%s: expected a tensor, got %s", name, type_of(x)) end
    local grad = x.requires_grad and pt.is_grad_enabled()
    if grad and x.is_leaf then
      fail("%s: a leaf tensor that requires grad cannot change in place (its gradient would be lost; PyTorch refuses it too)", name)
    end
    -- on a clone under autograd: the backward of F[base] may read its input, which copy_ overwrites
    x:copy_(F[base](grad and x:clone() or x, o))
    return x
  end
  doc(F[name], string.format("F.%s(x%s) -> x, F.%s done in place (see help(F.%s)).", name,
    #keys > 0 and "[, " .. table.concat(keys, "[, ") .. string.rep("]", #keys) or "", base, base))
end
inplace_form("elu_", "elu", {"alpha"})
inplace_form("celu_", "celu", {"alpha"})
inplace_form("selu_", "selu", {})
inplace_form("leaky_relu_", "leaky_relu", {"negative_slope"})
inplace_form("hardtanh_", "hardtanh", {"min_val", "max_val"})
inplace_form("threshold_", "threshold", {"threshold", "value"})
inplace_form("rrelu_", "rrelu", {"lower", "upper", "training"})
function F.relu_(x, ...)
  if select("#", ...) > 0 then fail("relu_: expected one tensor argument, got %d arguments", 1 + select("#", ...)) end
  if not pt.is_tensor(x) then fail("relu_: expected a tensor, got %s", type_of(x)) end
  return x:relu_()
end
doc(F.relu_, "F.relu_(x) -> x, relu in place (x:relu_()).")

-- F.max_pool2d_with_indices(x, kernel_size[, opts]) -> output, indices: return_indices = true
for _, base in ipairs({"max_pool1d", "max_pool2d", "max_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
                       "adaptive_max_pool3d"}) do
  local name = base .. "_with_indices"
  F[name] = function(x, size, opts, ...)
    if select("#", ...) > 0 or (opts ~= nil and type(opts) ~= "table") then
      fail("%s: expected (input, %s[, options table])", name, base:find("adaptive") and "output_size" or "kernel_size")
    end
    local o = {}
    for k, v in pairs(opts or {}) do o[k] = v end
    if o.return_indices ~= nil then fail("%s: unknown option 'return_indices' (the indices are returned)", name) end
    o.return_indices = true
    return F[base](x, size, o)
  end
  doc(F[name], string.format("F.%s(x, %s[, opts]) -> output, indices: F.%s with return_indices = true.", name,
    base:find("adaptive") and "output_size" or "kernel_size", base))
end

-- F.upsample: PyTorch's deprecated name of interpolate
function F.upsample(x, opts, ...) return F.interpolate(x, opts, ...) end
doc(F.upsample, "F.upsample(x, {size= | scale_factor=, mode=\"nearest\", align_corners=}) -> F.interpolate's result\n"
  .. "  (PyTorch's deprecated name of it).")

function F.native_channel_shuffle(x, ...)
  local name = "native_channel_shuffle"
  if not pt.is_tensor(x) then fail("%s: input must be a tensor, got %s", name, type_of(x)) end
  return channel_shuffle_fn(x, parse(name, {{"groups", pos_int, REQUIRED}}, ...), name, 2)
end
doc(F.native_channel_shuffle, "F.native_channel_shuffle(x, groups): F.channel_shuffle (PyTorch's other name of it), which also takes\n"
  .. "  a 2-D {N,C} input.")

-- ------------------------------------------------------------------ EmbeddingBag.from_pretrained

function EmbeddingBag.from_pretrained(embeddings, opts, ...)
  local fname = "EmbeddingBag.from_pretrained"
  if select("#", ...) > 0 or (opts ~= nil and type(opts) ~= "table") then
    fail("%s: expected (embeddings[, {freeze=true, mode=\"mean\", padding_idx=, include_last_offset=false}])", fname)
  end
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "freeze" and k ~= "mode" and k ~= "padding_idx" and k ~= "include_last_offset" and k ~= "max_norm"
      and k ~= "norm_type" and k ~= "scale_grad_by_freq" and k ~= "sparse" then
      fail("%s: unknown option '%s'", fname, tostring(k))
    end
  end
  if not pt.is_tensor(embeddings) or embeddings:dim() ~= 2 then
    fail("%s: embeddings must be a 2-D tensor {num_embeddings, embedding_dim}, got %s", fname,
      pt.is_tensor(embeddings) and "shape " .. shape_str(embeddings) or type_of(embeddings))
  end
  local bag = EmbeddingBag(embeddings:size(1), embeddings:size(2), {mode = opts.mode, padding_idx = opts.padding_idx,
    include_last_offset = opts.include_last_offset, max_norm = opts.max_norm, norm_type = opts.norm_type,
    scale_grad_by_freq = opts.scale_grad_by_freq, sparse = opts.sparse, _weight = embeddings})
  bag.weight.requires_grad = opts.freeze == false
  return bag
end
doc(EmbeddingBag.from_pretrained, [[nn.EmbeddingBag.from_pretrained(embeddings[, {freeze=true, mode="mean", padding_idx=, include_last_offset=false}])
  -> an EmbeddingBag whose weight is the 2-D tensor embeddings itself (no copy), frozen (requires_grad
  false) unless freeze=false, as PyTorch's.]])

-- ------------------------------------------------------------------ nn.functional from the core

for _, k in ipairs({"conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "dropout2d"}) do
  if F[k] == nil and pt[k] ~= nil then F[k] = pt[k] end
end

return nn
