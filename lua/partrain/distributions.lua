-- partrain.distributions: torch.distributions (torch 1.13) over partrain's tensor ops, so that
-- gradients flow through log_prob, rsample, cdf, entropy and kl_divergence.
--
-- A distribution is an object of a plain metatable class. Its parameters are fields (d.loc,
-- d.scale); torch's properties (mean, mode, variance, stddev, lazily derived parameters such as
-- Bernoulli's logits) are computed on access through the class's __index function and its
-- _props table. Parameters broadcast against each other as torch's broadcast_all does: numbers
-- take the dtype of the first tensor argument, float32 when all are numbers. Argument and sample
-- validation (torch's validate_args) is on by default: bad parameters and out-of-support values
-- raise with the distribution, the parameter and the first offending element named.
--
-- Indices are 1-based as everywhere in partrain: Categorical's values (and OneHotCategorical's
-- hot position) are 1..K, where torch's are 0..K-1.
--
-- Sampling draws from the state's seeded generator (pt.manual_seed). Gamma, Beta and Dirichlet
-- draw standard gammas with Marsaglia and Tsang's rejection method written over tensor ops (every
-- pending element redraws per round; ~2-5 rounds); their rsample carries torch's implicit
-- reparameterization gradient (ports of ATen's standard_gamma_grad_one and dirichlet_grad_one)
-- through a surrogate term x + g * (alpha - alpha:detach()), whose value is x exactly.
local pt = require "partrain"

local M = {}
local docs = rawget(pt, "_docs")
if docs == nil then
  docs = {}
  rawset(pt, "_docs", docs)
end
local is_tensor = pt.is_tensor
local LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))
local LOG_2PI = math.log(2 * math.pi)
local inf, nan = math.huge, 0 / 0

local FINFO = {
  float32 = {eps = 2 ^ -23, tiny = 2 ^ -126, min = -3.4028234663852886e38},
  float64 = {eps = 2 ^ -52, tiny = 2 ^ -1022, min = -1.7976931348623157e308},
}
local function finfo(dtype) return FINFO[dtype] or FINFO.float32 end

-- ------------------------------------------------------------------ errors and formatting

-- errors point at the first caller outside this file (the user's line), however deep the
-- distribution code that found the problem
local THIS = debug.getinfo(1, "S").source
local function fail(msg)
  local level = 2
  while true do
    local info = debug.getinfo(level, "S")
    if info == nil then error(msg, 0) end
    if info.source ~= THIS then break end
    level = level + 1
  end
  error(msg, level)
end

local function shape_str(s) return "{" .. table.concat(s, ",") .. "}" end

local function num(x)
  if x ~= x then return "nan" end
  if x == inf then return "inf" elseif x == -inf then return "-inf" end
  if math.type(x) == "integer" then return tostring(x) end
  return string.format("%.6g", x)
end

local function typename(v)
  if is_tensor(v) then return "Tensor" end
  return type(v)
end

-- ------------------------------------------------------------------ shapes

local function concat(...)
  local out = {}
  for i = 1, select("#", ...) do
    for _, v in ipairs((select(i, ...))) do out[#out + 1] = v end
  end
  return out
end

-- s[i..j] (1-based, inclusive; empty when j < i)
local function slice(s, i, j)
  local out = {}
  for k = math.max(i, 1), math.min(j or #s, #s) do out[#out + 1] = s[k] end
  return out
end

local function same_shape(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

-- the broadcast of two shapes, or nil when they do not broadcast
local function broadcast_shapes(a, b)
  local n = math.max(#a, #b)
  local out = {}
  for k = 0, n - 1 do
    local x, y = a[#a - k] or 1, b[#b - k] or 1
    if x ~= y and x ~= 1 and y ~= 1 then return nil end
    out[n - k] = x == 1 and y or x
  end
  return out
end

local function numel(s)
  local n = 1
  for _, v in ipairs(s) do n = n * v end
  return n
end

local function ones_list(n)
  local out = {}
  for i = 1, n do out[i] = 1 end
  return out
end

-- a sample_shape / batch_shape argument: nil, an integer n ({n}) or a table of sizes
local function sizes_arg(what, argname, s)
  if s == nil then return {} end
  if type(s) == "number" then s = {s} end
  if type(s) ~= "table" then
    fail(string.format("%s: %s must be a table of sizes, got %s", what, argname, typename(s)))
  end
  local out = {}
  for i = 1, #s do
    local v = s[i]
    local iv = type(v) == "number" and math.tointeger(v)
    if not iv or iv < 0 then
      fail(string.format("%s: %s must hold non-negative integers, got %s at position %d", what, argname,
        tostring(v), i))
    end
    out[i] = iv
  end
  return out
end

-- log_prob summed over the rightmost n dims (torch's _sum_rightmost)
local function sum_rightmost(v, n)
  if n == 0 then return v end
  local s = v:size()
  return v:reshape(concat(slice(s, 1, #s - n), {-1})):sum(-1)
end

-- ------------------------------------------------------------------ constraints

-- {desc = words for messages, event_dim = dims one check covers, check = fn(v) -> bool tensor}
local C = {}
C.real = {desc = "real (not nan)", check = function(v) return v:eq(v) end}
C.positive = {desc = "positive (> 0)", check = function(v) return v:gt(0) end}
C.nonnegative = {desc = "non-negative (>= 0)", check = function(v) return v:ge(0) end}
C.unit_interval = {desc = "in [0, 1]", check = function(v) return v:ge(0) & v:le(1) end}
C.boolean = {desc = "0 or 1", check = function(v) return v:eq(0) | v:eq(1) end}
C.nonnegative_integer = {desc = "a non-negative integer",
  check = function(v) return (v % 1):eq(0) & v:ge(0) end}
C.real_vector = {desc = "a real vector (no nan)", event_dim = 1,
  check = function(v) return v:eq(v):all(-1) end}
C.positive_vector = {desc = "positive (> 0) in every element of the last dim", event_dim = 1,
  check = function(v) return v:gt(0):all(-1) end}
C.simplex = {desc = "a probability vector (non-negative, summing to 1 along the last dim)", event_dim = 1,
  check = function(v) return v:ge(0):all(-1) & (v:sum(-1) - 1):abs():lt(1e-6) end}
C.one_hot = {desc = "a one-hot vector (0s and a single 1 along the last dim)", event_dim = 1,
  check = function(v) return (v:eq(0) | v:eq(1)):all(-1) & v:sum(-1):eq(1) end}
C.lower_cholesky = {desc = "lower triangular with a positive diagonal", event_dim = 2,
  check = function(v)
    local s = v:size()
    local lower = v:tril():eq(v):reshape(concat(slice(s, 1, #s - 2), {-1})):all(-1)
    return lower & v:diagonal(0, -2, -1):gt(0):all(-1)
  end}
C.positive_definite = {desc = "symmetric positive definite", event_dim = 2,
  check = function(v)
    -- torch: symmetric within isclose(atol=1e-6), then a Cholesky factorisation that succeeds
    local sym = pt.isclose(v, v.mT, {atol = 1e-6}):all(-2):all(-1)
    if not sym:all():item() then return sym end
    if pcall(pt.linalg.cholesky, v) then return sym end
    local s = v:size()
    local n = s[#s]
    local flat = v:reshape({-1, n, n})
    local ok = {}
    for b = 1, flat:size(1) do ok[b] = (pcall(pt.linalg.cholesky, flat[b])) end
    return pt.tensor(ok, {dtype = "bool"}):reshape(slice(s, 1, #s - 2))
  end}
function C.integer_interval(lo, hi)
  return {desc = string.format("an integer in [%s, %s]", is_tensor(lo) and "low" or num(lo),
    is_tensor(hi) and "total_count" or num(hi)),
    check = function(v) return (v % 1):eq(0) & v:ge(lo) & v:le(hi) end}
end
function C.interval(lo, hi)
  return {desc = "in [low, high]", check = function(v) return v:ge(lo) & v:le(hi) end}
end
function C.independent(base, n)
  if n == 0 then return base end
  return {desc = base.desc .. string.format(" in every element of the last %d dim%s", n, n == 1 and "" or "s"),
    event_dim = (base.event_dim or 0) + n,
    check = function(v)
      local ok = base.check(v)
      for _ = 1, n do ok = ok:all(-1) end
      return ok
    end}
end

-- the 1-based index of the first false element of ok (nil when all are true)
local function first_false(ok)
  if ok:all():item() then return nil end
  if ok:dim() == 0 then return {} end
  return pt.logical_not(ok):nonzero()[1]:tolist()
end

local function element(t, idx)
  for _, i in ipairs(idx) do t = t:select(1, i) end
  return t:item()
end

local function at_str(idx, batch)
  if #idx == 0 then return "" end
  return (batch and " at batch index [" or " at [") .. table.concat(idx, ",") .. "]"
end

local function check_param(cname, pname, value, c)
  local ok = c.check(value)
  local idx = first_false(ok)
  if not idx then return end
  if (c.event_dim or 0) == 0 then
    fail(string.format("%s: %s must be %s, got %s%s", cname, pname, c.desc,
      num(element(value:expand(ok:size()), idx)), at_str(idx)))
  end
  fail(string.format("%s: %s must be %s, violated%s", cname, pname, c.desc, at_str(idx, true)))
end

-- ------------------------------------------------------------------ classes

local default_validate = true

local function validating(self)
  local v = rawget(self, "_validate")
  if v == nil then return default_validate end
  return v
end

local function describe(self)
  local parts = {}
  for _, k in ipairs(self._arg_names or {}) do
    local v = rawget(self, k)
    if v == nil and self._repr_props then v = self[k] end
    if is_tensor(v) then
      parts[#parts + 1] = k .. ": " .. (v:numel() == 1 and num(v:item()) or shape_str(v:size()))
    end
  end
  return self._name .. "(" .. table.concat(parts, ", ") .. ")"
end

-- A class: the metatable of its objects. Lookups try the class's properties first (torch's
-- @property: computed on access), then its methods and constants, up the parent chain.
local function class(name, parent, constructible)
  local cls = {__name = "pt.distributions." .. name, _name = name}
  cls._props = setmetatable({}, {__index = parent and parent._props})
  local props = cls._props
  cls.__index = function(self, k)
    local get = props[k]
    if get then return get(self) end
    return cls[k]
  end
  cls.__tostring = describe
  setmetatable(cls, {__index = parent, __call = constructible and function(c, ...) return c._new(...) end or nil})
  if constructible or parent == nil then M[name] = cls end
  return cls
end

local function base_init(self, batch_shape, event_shape, validate, dtype)
  rawset(self, "batch_shape", batch_shape)
  rawset(self, "event_shape", event_shape)
  rawset(self, "_validate", validate)
  rawset(self, "_dt", dtype)
end

-- positional arguments named by names, then a table of named ones (and validate_args); a table
-- alone names them all. Returns the values by name and validate_args (nil: the default).
local function parse(cname, names, ...)
  local n = select("#", ...)
  local vals, opts = {}, nil
  for i = 1, n do
    local v = select(i, ...)
    if type(v) == "table" and not is_tensor(v) and getmetatable(v) == nil then
      if #v > 0 then
        fail(string.format("%s: %s must be a number or a Tensor, got a table of values (pt.tensor(t) makes one)",
          cname, names[i] or "argument " .. i))
      end
      for j = i + 1, n do
        if select(j, ...) ~= nil then fail(cname .. ": the table of named arguments must come last") end
      end
      opts = v
      break
    elseif v ~= nil then
      if i > #names then
        fail(string.format("%s: expected at most %d positional arguments (%s), got %d", cname, #names,
          table.concat(names, ", "), n))
      end
      vals[names[i]] = v
    end
  end
  local validate
  if opts then
    for k, v in pairs(opts) do
      if k == "validate_args" then
        if type(v) ~= "boolean" then fail(cname .. ": validate_args must be a boolean, got " .. typename(v)) end
        validate = v
      else
        local known = false
        for _, nm in ipairs(names) do known = known or nm == k end
        if not known then
          fail(string.format("%s: unknown argument '%s' (expected %s or validate_args)", cname, tostring(k),
            table.concat(names, ", ")))
        end
        if vals[k] ~= nil then fail(cname .. ": " .. k .. " given both by position and by name") end
        vals[k] = v
      end
    end
  end
  return vals, validate
end

-- torch's broadcast_all over the parameters names (numbers or tensors): numbers become tensors
-- of the first tensor's dtype (float32 when all are numbers), all expand to the common shape.
-- Returns the tensors, whether all were numbers, and the shape.
local function broadcast_all(cname, names, vals)
  local dtype, all_numbers = nil, true
  for _, k in ipairs(names) do
    local v = vals[k]
    if is_tensor(v) then
      dtype = dtype or v:dtype()
      all_numbers = false
    elseif type(v) ~= "number" then
      fail(string.format("%s: %s must be a number or a Tensor, got %s", cname, k, typename(v)))
    end
  end
  dtype = dtype or pt.get_default_dtype()
  local ts, shape = {}, {}
  for i, k in ipairs(names) do
    local v = vals[k]
    ts[i] = is_tensor(v) and v or pt.tensor(v, {dtype = dtype})
    local s = broadcast_shapes(shape, ts[i]:size())
    if not s then
      fail(string.format("%s: %s of shape %s does not broadcast with %s (shape %s)", cname, k,
        shape_str(ts[i]:size()), table.concat(slice(names, 1, i - 1), " and "), shape_str(shape)))
    end
    shape = s
  end
  for i = 1, #ts do
    if not same_shape(ts[i]:size(), shape) then ts[i] = ts[i]:expand(shape) end
  end
  return ts, all_numbers, shape
end

local function tensor_arg(cname, pname, v, min_dim)
  if not is_tensor(v) then fail(string.format("%s: %s must be a Tensor, got %s", cname, pname, typename(v))) end
  if min_dim and v:dim() < min_dim then
    fail(string.format("%s: %s must be at least %s-dimensional, got a %d-D tensor", cname, pname,
      min_dim == 1 and "one" or "two", v:dim()))
  end
  return v
end

-- ------------------------------------------------------------------ Distribution

local Distribution = class("Distribution", nil, false)
Distribution.has_rsample = false
Distribution.has_enumerate_support = false
Distribution._params = {}
Distribution._support_c = C.real

local function not_implemented(self, what)
  fail(string.format("%s.%s: not implemented for %s (as in torch 1.13)", self._name, what, self._name))
end

--- Distribution.set_default_validate_args(value): turn argument validation on or off for
-- distributions created without validate_args (torch's class-wide switch).
function Distribution.set_default_validate_args(value)
  if type(value) ~= "boolean" then
    fail("set_default_validate_args: expected a boolean, got " .. typename(value))
  end
  default_validate = value
end

function Distribution:_support() return self._support_c end

function Distribution:_extended_shape(sample_shape)
  return concat(sample_shape, self.batch_shape, self.event_shape)
end

-- value as a tensor (a number becomes one of the distribution's dtype), checked against the
-- event and batch shapes and the support (or the constraint support; false: none, as torch's
-- icdf) when validating
function Distribution:_value(value, method, support)
  if type(value) == "number" then
    value = pt.tensor(value, {dtype = self._dt})
  elseif not is_tensor(value) then
    fail(string.format("%s.%s: value must be a Tensor or a number, got %s", self._name, method, typename(value)))
  end
  if support == false or not validating(self) then return value end
  local vs, es = value:size(), self.event_shape
  local start = #vs - #es
  if start < 0 or not same_shape(slice(vs, start + 1, #vs), es) then
    fail(string.format("%s.%s: the rightmost sizes of value (shape %s) must match event_shape %s", self._name,
      method, shape_str(vs), shape_str(es)))
  end
  local expected = concat(self.batch_shape, es)
  for k = 0, math.min(#vs, #expected) - 1 do
    local i, j = vs[#vs - k], expected[#expected - k]
    if i ~= 1 and j ~= 1 and i ~= j then
      fail(string.format("%s.%s: value of shape %s does not broadcast with batch_shape + event_shape %s",
        self._name, method, shape_str(vs), shape_str(expected)))
    end
  end
  local c = support or self:_support()
  local ok = c.check(value)
  local idx = first_false(ok)
  if idx then
    if (c.event_dim or 0) == 0 then
      fail(string.format("%s.%s: value %s%s is outside the support (%s)", self._name, method,
        num(element(value:expand(ok:size()), idx)), at_str(idx), c.desc))
    end
    fail(string.format("%s.%s: value%s is outside the support (%s)", self._name, method, at_str(idx, true), c.desc))
  end
  return value
end

--- d:rsample([sample_shape]) -> reparameterized draw (gradients flow to the parameters).
function Distribution:rsample(_)
  fail(string.format("%s.rsample: %s has no reparameterized sampler (has_rsample is false); use sample()",
    self._name, self._name))
end

--- d:sample([sample_shape]) -> a draw without gradients.
function Distribution:sample(sample_shape)
  sample_shape = sizes_arg(self._name .. ".sample", "sample_shape", sample_shape)
  if not self.has_rsample then not_implemented(self, "sample") end
  return pt.no_grad(self.rsample, self, sample_shape)
end

function Distribution:log_prob(_)
  not_implemented(self, "log_prob")
end

function Distribution:cdf(_)
  not_implemented(self, "cdf")
end

function Distribution:icdf(_)
  not_implemented(self, "icdf")
end

function Distribution:entropy() not_implemented(self, "entropy") end

function Distribution:perplexity() return self:entropy():exp() end

function Distribution:enumerate_support(_)
  not_implemented(self, "enumerate_support")
end

-- the parameters with batch dims (name -> number of trailing event dims) expand; other fields
-- are shared with the original
function Distribution:_expand_into(new, batch_shape)
  for name, edims in pairs(self._params) do
    local t = rawget(self, name)
    if t ~= nil then
      local s = t:size()
      rawset(new, name, t:expand(concat(batch_shape, slice(s, #s - edims + 1, #s))))
    end
  end
end

function Distribution:expand(batch_shape)
  local what = self._name .. ".expand"
  batch_shape = sizes_arg(what, "batch_shape", batch_shape)
  local old = self.batch_shape
  local ok = #batch_shape >= #old
  for k = 0, #old - 1 do
    local o, n = old[#old - k], batch_shape[#batch_shape - k]
    if n == nil or (o ~= n and o ~= 1) then ok = false end
  end
  if not ok then
    fail(string.format("%s: batch_shape %s cannot be expanded to %s", what, shape_str(old), shape_str(batch_shape)))
  end
  local new = setmetatable({}, getmetatable(self))
  for k, v in pairs(self) do rawset(new, k, v) end
  rawset(new, "batch_shape", batch_shape)
  rawset(new, "_validate", validating(self))
  self:_expand_into(new, batch_shape)
  return new
end

Distribution._props.mean = function(self) not_implemented(self, "mean") end
Distribution._props.mode = function(self) not_implemented(self, "mode") end
Distribution._props.variance = function(self) not_implemented(self, "variance") end
Distribution._props.stddev = function(self) return self.variance:sqrt() end
-- torch's d.support: a constraint, {desc = words, event_dim = dims one check covers,
-- check = function(value) -> bool tensor}
Distribution._props.support = function(self) return self:_support() end

local function is_distribution(x)
  if type(x) ~= "table" then return false end
  local c = getmetatable(x)
  local n = 0
  while type(c) == "table" and n < 32 do
    if c == Distribution then return true end
    local mt = getmetatable(c)
    c = mt and rawget(mt, "__index")
    n = n + 1
  end
  return false
end

-- the shared constructor of the distributions with elementwise parameters
local function elementwise_new(cls, cname, names, constraints, vals, validate)
  local ts, all_numbers, shape = broadcast_all(cname, names, vals)
  local self = setmetatable({}, cls)
  for i, k in ipairs(names) do rawset(self, k, ts[i]) end
  base_init(self, all_numbers and {} or shape, {}, validate, ts[1]:dtype())
  if validating(self) then
    for i, k in ipairs(names) do check_param(cname, k, ts[i], constraints[i]) end
  end
  return self
end

local function draw(self, sample_shape, what)
  return sizes_arg(self._name .. "." .. what, "sample_shape", sample_shape)
end

-- ------------------------------------------------------------------ Normal

local Normal = class("Normal", Distribution, true)
Normal.has_rsample = true
Normal._params = {loc = 0, scale = 0}
Normal._arg_names = {"loc", "scale"}

local function normal_new(cname, vals, validate)
  return elementwise_new(Normal, cname, {"loc", "scale"}, {C.real, C.positive}, vals, validate)
end

function Normal._new(...)
  return normal_new("Normal", parse("Normal", {"loc", "scale"}, ...))
end

Normal._props.mean = function(self) return self.loc end
Normal._props.mode = function(self) return self.loc end
Normal._props.stddev = function(self) return self.scale end
Normal._props.variance = function(self) return self.scale:pow(2) end

function Normal:rsample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "rsample"))
  local eps = pt.randn(shape, {dtype = self._dt})
  return self.loc + eps * self.scale
end

function Normal:log_prob(value)
  value = self:_value(value, "log_prob")
  local var = self.scale ^ 2
  return -((value - self.loc) ^ 2) / (2 * var) - self.scale:log() - LOG_SQRT_2PI
end

function Normal:cdf(value)
  value = self:_value(value, "cdf")
  return 0.5 * (1 + ((value - self.loc) * self.scale:reciprocal() / math.sqrt(2)):erf())
end

function Normal:icdf(value)
  value = self:_value(value, "icdf", false)
  return self.loc + self.scale * (2 * value - 1):erfinv() * math.sqrt(2)
end

function Normal:entropy()
  return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale:log()
end

-- ------------------------------------------------------------------ Uniform

local Uniform = class("Uniform", Distribution, true)
Uniform.has_rsample = true
Uniform._params = {low = 0, high = 0}
Uniform._arg_names = {"low", "high"}

function Uniform._new(...)
  local vals, validate = parse("Uniform", {"low", "high"}, ...)
  local self = elementwise_new(Uniform, "Uniform", {"low", "high"}, {C.real, C.real}, vals, validate)
  if validating(self) then
    local idx = first_false(self.low:lt(self.high))
    if idx then
      fail(string.format("Uniform: low must be less than high, got low %s >= high %s%s", num(element(self.low, idx)),
        num(element(self.high, idx)), at_str(idx)))
    end
  end
  return self
end

function Uniform:_support() return C.interval(self.low, self.high) end

Uniform._props.mean = function(self) return (self.high + self.low) / 2 end
Uniform._props.mode = function(self) return self.high * nan end
Uniform._props.stddev = function(self) return (self.high - self.low) / 12 ^ 0.5 end
Uniform._props.variance = function(self) return (self.high - self.low):pow(2) / 12 end

function Uniform:rsample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "rsample"))
  local rand = pt.rand(shape, {dtype = self._dt})
  return self.low + rand * (self.high - self.low)
end

function Uniform:log_prob(value)
  value = self:_value(value, "log_prob")
  local lb = self.low:le(value):to(self._dt)
  local ub = self.high:gt(value):to(self._dt)
  return (lb * ub):log() - (self.high - self.low):log()
end

function Uniform:cdf(value)
  value = self:_value(value, "cdf")
  return ((value - self.low) / (self.high - self.low)):clamp(0, 1)
end

function Uniform:icdf(value)
  value = self:_value(value, "icdf", false)
  return value * (self.high - self.low) + self.low
end

function Uniform:entropy() return (self.high - self.low):log() end

-- ------------------------------------------------------------------ Exponential

local Exponential = class("Exponential", Distribution, true)
Exponential.has_rsample = true
Exponential._params = {rate = 0}
Exponential._arg_names = {"rate"}
Exponential._support_c = C.nonnegative

function Exponential._new(...)
  local vals, validate = parse("Exponential", {"rate"}, ...)
  return elementwise_new(Exponential, "Exponential", {"rate"}, {C.positive}, vals, validate)
end

Exponential._props.mean = function(self) return self.rate:reciprocal() end
Exponential._props.mode = function(self) return pt.zeros_like(self.rate) end
Exponential._props.stddev = function(self) return self.rate:reciprocal() end
Exponential._props.variance = function(self) return self.rate:pow(-2) end

function Exponential:rsample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "rsample"))
  return pt.empty(shape, {dtype = self._dt}):exponential_() / self.rate
end

function Exponential:log_prob(value)
  value = self:_value(value, "log_prob")
  return self.rate:log() - self.rate * value
end

function Exponential:cdf(value)
  value = self:_value(value, "cdf")
  return 1 - (-self.rate * value):exp()
end

function Exponential:icdf(value)
  value = self:_value(value, "icdf", false)
  return -(1 - value):log() / self.rate
end

function Exponential:entropy() return 1.0 - self.rate:log() end

-- ------------------------------------------------------------------ Laplace

local Laplace = class("Laplace", Distribution, true)
Laplace.has_rsample = true
Laplace._params = {loc = 0, scale = 0}
Laplace._arg_names = {"loc", "scale"}

function Laplace._new(...)
  local vals, validate = parse("Laplace", {"loc", "scale"}, ...)
  return elementwise_new(Laplace, "Laplace", {"loc", "scale"}, {C.real, C.positive}, vals, validate)
end

Laplace._props.mean = function(self) return self.loc end
Laplace._props.mode = function(self) return self.loc end
Laplace._props.variance = function(self) return 2 * self.scale:pow(2) end
Laplace._props.stddev = function(self) return (2 ^ 0.5) * self.scale end

function Laplace:rsample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "rsample"))
  local u = pt.empty(shape, {dtype = self._dt}):uniform_(finfo(self._dt).eps - 1, 1)
  return self.loc - self.scale * u:sign() * (-u:abs()):log1p()
end

function Laplace:log_prob(value)
  value = self:_value(value, "log_prob")
  return -(2 * self.scale):log() - (value - self.loc):abs() / self.scale
end

function Laplace:cdf(value)
  value = self:_value(value, "cdf")
  return 0.5 - 0.5 * (value - self.loc):sign() * (-(value - self.loc):abs() / self.scale):expm1()
end

function Laplace:icdf(value)
  value = self:_value(value, "icdf", false)
  local term = value - 0.5
  return self.loc - self.scale * term:sign() * (-2 * term:abs()):log1p()
end

function Laplace:entropy() return 1 + (2 * self.scale):log() end

-- ------------------------------------------------------------------ LogNormal

local LogNormal = class("LogNormal", Distribution, true)
LogNormal.has_rsample = true
LogNormal._arg_names = {"loc", "scale"}
LogNormal._repr_props = true
LogNormal._support_c = C.positive

function LogNormal._new(...)
  local vals, validate = parse("LogNormal", {"loc", "scale"}, ...)
  local base = normal_new("LogNormal", vals, validate)
  local self = setmetatable({base_dist = base}, LogNormal)
  base_init(self, base.batch_shape, {}, validate, base._dt)
  return self
end

function LogNormal:_expand_into(new, batch_shape)
  rawset(new, "base_dist", self.base_dist:expand(batch_shape))
end

LogNormal._props.loc = function(self) return self.base_dist.loc end
LogNormal._props.scale = function(self) return self.base_dist.scale end
LogNormal._props.mean = function(self) return (self.loc + self.scale:pow(2) / 2):exp() end
LogNormal._props.mode = function(self) return (self.loc - self.scale:square()):exp() end
LogNormal._props.variance = function(self)
  return (self.scale:pow(2):exp() - 1) * (2 * self.loc + self.scale:pow(2)):exp()
end

function LogNormal:rsample(sample_shape)
  return self.base_dist:rsample(draw(self, sample_shape, "rsample")):exp()
end

-- torch's TransformedDistribution(Normal, ExpTransform): log p(y) = log N(log y) - log y
function LogNormal:log_prob(value)
  value = self:_value(value, "log_prob")
  local x = value:log()
  return -x + self.base_dist:log_prob(x)
end

function LogNormal:cdf(value)
  value = self:_value(value, "cdf", C.nonnegative)
  return self.base_dist:cdf(value:log())
end

function LogNormal:icdf(value)
  value = self:_value(value, "icdf", false)
  return self.base_dist:icdf(value):exp()
end

function LogNormal:entropy() return self.base_dist:entropy() + self.loc end

-- ------------------------------------------------------------------ Gamma, the gamma sampler

-- Marsaglia and Tsang's method for standard gamma draws (shape alpha, rate 1), as ATen's
-- sample_gamma: alpha < 1 draws at alpha + 1 and scales by U^(1/alpha). Vectorized: each round
-- draws a normal and a uniform for every element and keeps the first accepted candidate.
-- No gradient; the result is at least the dtype's smallest normal number, as torch clamps.
local function standard_gamma(alpha)
  local shape, dtype = alpha:size(), alpha:dtype()
  local small = alpha:lt(1)
  local a = pt.where(small, alpha + 1, alpha)
  local d = a - 1 / 3
  local c = (d * 9):rsqrt()
  local out = pt.zeros(shape, {dtype = dtype})
  local pending = pt.ones(shape, {dtype = "bool"})
  local opts = {dtype = dtype}
  while pending:any():item() do
    local x = pt.randn(shape, opts)
    local y = x * c + 1
    local v = y * y * y
    local u = 1 - pt.rand(shape, opts)
    local xsq = x * x
    local accept = y:gt(0) & (u:lt(1 - 0.0331 * xsq * xsq) | u:log():lt(0.5 * xsq + d * (1 - v + v:log())))
    out = pt.where(accept & pending, d * v, out)
    pending = pending & pt.logical_not(accept)
  end
  local boost = (1 - pt.rand(shape, opts)) ^ alpha:reciprocal()
  out = pt.where(small, out * boost, out)
  return out:clamp_min(finfo(dtype).tiny)
end

-- float literals of ATen's code (0.8f etc.), exactly as float64 sees them
local F0_8, F0_9, F1_1 = 0.800000011920928955078125, 0.89999997615814208984375, 1.10000002384185791015625

local GAMMA_COEF = {
  {0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084},
  {0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623},
  {0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07},
}

local function nan_to_zero(t) return pt.where(t:isnan(), 0, t) end

-- d x / d alpha for a standard gamma draw x: -(d/dalpha cdf(x; alpha)) / pdf(x; alpha), ATen's
-- standard_gamma_grad_one over tensor ops (a Taylor series for x < 0.8, Rice's saddle point
-- expansion for alpha > 8, a bivariate rational approximation between). Computed in float64.
local function standard_gamma_grad(alpha, x)
  local dtype = x:dtype()
  alpha, x = alpha:to("float64"), x:to("float64")
  local numer, denom = pt.ones_like(x), alpha
  local series1, series2 = numer / denom, numer / (denom * denom)
  for i = 1, 5 do
    numer = numer * (-x / i)
    denom = denom + 1
    series1 = series1 + numer / denom
    series2 = series2 + numer / (denom * denom)
  end
  local pow_x_alpha = x ^ alpha
  local gamma_pdf = x ^ (alpha - 1) * (-x):exp()
  local gamma_cdf = pow_x_alpha * series1
  local gamma_cdf_alpha = (x:log() - alpha:digamma()) * gamma_cdf - pow_x_alpha * series2
  local r_small = nan_to_zero(-gamma_cdf_alpha / gamma_pdf)

  local numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
  local numer_2 = 1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) - 65 * x * x / alpha + alpha * (107 + 3600 * x)
  local denom_near = 1244160 * (alpha * alpha) * (alpha * alpha)
  local r_near = numer_1 * numer_2 / denom_near
  local denom_far = (8 * alpha):sqrt()
  local term2 = denom_far / (alpha - x)
  local term3 = (x - alpha - alpha * (x / alpha):log()) ^ -1.5
  local term23 = pt.where(x:lt(alpha), term2 - term3, term2 + term3)
  local term1 = (x / alpha):log() * term23 - (2 / alpha):sqrt() * (alpha + x) / ((alpha - x) * (alpha - x))
  local stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
  local r_far = -stirling * (x * term1) / denom_far

  local u, v = (x / alpha):log(), alpha:log()
  local cv = {}
  for i = 1, 8 do cv[i] = GAMMA_COEF[1][i] + u * (GAMMA_COEF[2][i] + u * GAMMA_COEF[3][i]) end
  local p = cv[1] + v * (cv[2] + v * (cv[3] + v * cv[4]))
  local q = cv[5] + v * (cv[6] + v * (cv[7] + v * cv[8]))
  local r_mid = (p / q):exp()

  local near = (alpha * F0_9):le(x) & x:le(alpha * F1_1)
  local out = pt.where(x:lt(F0_8), r_small, pt.where(alpha:gt(8), pt.where(near, r_near, r_far), r_mid))
  return out:to(dtype)
end

-- a surrogate with the value of x and the derivative g w.r.t. alpha (g finite: a nan or inf
-- would leak into the value through 0 * g)
local function with_gradient(x, g, alpha)
  g = pt.where(g:isfinite(), g, 0)
  return x + g * (alpha - alpha:detach())
end

local function needs_grad(t) return pt.is_grad_enabled() and t.requires_grad end

local Gamma = class("Gamma", Distribution, true)
Gamma.has_rsample = true
Gamma._params = {concentration = 0, rate = 0}
Gamma._arg_names = {"concentration", "rate"}
Gamma._support_c = C.nonnegative

function Gamma._new(...)
  local vals, validate = parse("Gamma", {"concentration", "rate"}, ...)
  return elementwise_new(Gamma, "Gamma", {"concentration", "rate"}, {C.positive, C.positive}, vals, validate)
end

Gamma._props.mean = function(self) return self.concentration / self.rate end
Gamma._props.mode = function(self) return ((self.concentration - 1) / self.rate):clamp_min(0) end
Gamma._props.variance = function(self) return self.concentration / self.rate:pow(2) end

function Gamma:rsample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "rsample"))
  local alpha = self.concentration:expand(shape)
  local x = pt.no_grad(standard_gamma, alpha:detach())
  if needs_grad(alpha) then
    x = with_gradient(x, pt.no_grad(standard_gamma_grad, alpha:detach(), x), alpha)
  end
  local value = x / self.rate:expand(shape)
  -- torch clamps the value to the smallest normal number without recording it
  local vd = value:detach()
  local tiny = finfo(self._dt).tiny
  if vd:lt(tiny):any():item() then value = value + (vd:clamp_min(tiny) - vd) end
  return value
end

function Gamma:log_prob(value)
  value = self:_value(value, "log_prob")
  -- torch's Gamma.log_prob takes value in the rate's dtype (torch.as_tensor(value, dtype=...))
  if value:dtype() ~= self._dt then value = value:to(self._dt) end
  return pt.xlogy(self.concentration, self.rate) + pt.xlogy(self.concentration - 1, value) -
    self.rate * value - self.concentration:lgamma()
end

function Gamma:entropy()
  return self.concentration - self.rate:log() + self.concentration:lgamma() +
    (1.0 - self.concentration) * self.concentration:digamma()
end

-- torch's Chi2(df): Gamma(df / 2, 1 / 2), with Gamma's methods and KL pairs
local Chi2 = class("Chi2", Gamma, true)
Chi2._arg_names = {"df"}
Chi2._repr_props = true

function Chi2._new(...)
  local vals, validate = parse("Chi2", {"df"}, ...)
  local ts = broadcast_all("Chi2", {"df"}, vals)
  local v = validate
  if v == nil then v = default_validate end
  if v then check_param("Chi2", "df", ts[1], C.positive) end
  local df = vals.df
  return elementwise_new(Chi2, "Chi2", {"concentration", "rate"}, {C.positive, C.positive},
    {concentration = 0.5 * df, rate = 0.5}, validate)
end

Chi2._props.df = function(self) return self.concentration * 2 end

-- torch's FisherSnedecor(df1, df2): (X1 / df1) / (X2 / df2) with Gammas X1, X2 (reparameterized)
local FisherSnedecor = class("FisherSnedecor", Distribution, true)
FisherSnedecor.has_rsample = true
FisherSnedecor._params = {df1 = 0, df2 = 0}
FisherSnedecor._arg_names = {"df1", "df2"}
FisherSnedecor._support_c = C.positive

function FisherSnedecor._new(...)
  local vals, validate = parse("FisherSnedecor", {"df1", "df2"}, ...)
  return elementwise_new(FisherSnedecor, "FisherSnedecor", {"df1", "df2"}, {C.positive, C.positive}, vals, validate)
end

FisherSnedecor._props.mean = function(self)
  local df2 = pt.where(self.df2:le(2), nan, self.df2)
  return df2 / (df2 - 2)
end
FisherSnedecor._props.mode = function(self)
  local m = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
  return pt.where(self.df1:le(2), nan, m)
end
FisherSnedecor._props.variance = function(self)
  local df2 = pt.where(self.df2:le(4), nan, self.df2)
  return 2 * df2:pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2):pow(2) * (df2 - 4))
end

function FisherSnedecor:rsample(sample_shape)
  sample_shape = draw(self, sample_shape, "rsample")
  local g1 = Gamma(self.df1 * 0.5, self.df1, {validate_args = false})
  local g2 = Gamma(self.df2 * 0.5, self.df2, {validate_args = false})
  local tiny = finfo(self._dt).tiny
  local X1, X2 = g1:rsample(sample_shape), g2:rsample(sample_shape)
  X2 = pt.where(X2:ge(tiny), X2, tiny)
  local Y = X1 / X2
  return pt.where(Y:ge(tiny), Y, tiny)
end

function FisherSnedecor:log_prob(value)
  value = self:_value(value, "log_prob")
  local ct1, ct2 = self.df1 * 0.5, self.df2 * 0.5
  local ct3 = self.df1 / self.df2
  local t1 = (ct1 + ct2):lgamma() - ct1:lgamma() - ct2:lgamma()
  local t2 = ct1 * ct3:log() + (ct1 - 1) * value:log()
  local t3 = (ct1 + ct2) * (ct3 * value):log1p()
  return t1 + t2 - t3
end

-- ------------------------------------------------------------------ Dirichlet and Beta

-- ATen's approximate reparameterized gradients of Beta(x; alpha, beta) (dirichlet_grad_one)
local function beta_grad_alpha_small(x, alpha, beta)
  local factor = alpha:digamma() - (alpha + beta):digamma() - x:log()
  local numer = pt.ones_like(x)
  local series = numer / alpha * (factor + 1 / alpha)
  for i = 1, 10 do
    numer = numer * ((i - beta) * x / i)
    local denom = alpha + i
    series = series + numer / denom * (factor + 1 / denom)
  end
  return nan_to_zero(x * (1 - x) ^ (-beta) * series)
end

local function beta_grad_beta_small(x, alpha, beta)
  local factor = (alpha + beta):digamma() - beta:digamma()
  local numer, betas, dbetas = pt.ones_like(x), pt.ones_like(x), pt.zeros_like(x)
  local series = factor / alpha
  for i = 1, 8 do
    numer = numer * (-x / i)
    dbetas = dbetas * (beta - i) + betas
    betas = betas * (beta - i)
    series = series + numer / (alpha + i) * (dbetas + factor * betas)
  end
  return nan_to_zero(-(1 - x) ^ (1 - beta) * series)
end

local function beta_grad_alpha_mid(x, alpha, beta)
  local total = alpha + beta
  local mean = alpha / total
  local std = (alpha * beta / (total + 1)):sqrt() / total
  local b2 = beta * beta
  local poly = 47 * x * b2 * b2 + alpha * (
    (43 + 20 * (16 + 27 * beta) * x) * b2 * beta + alpha * (
    3 * (59 + 180 * beta - 90 * x) * b2 + alpha * (
    (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (
    8 * (1 - x) * (135 * beta - 11)))))
  local prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
  local prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total)
  local r_near = prefactor_num / (1 - x) * poly / prefactor_den

  local prefactor = -x / (2 * alpha * beta / total):sqrt()
  local stirling = (1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha)) *
    (1 + 1 / (12 * beta) + 1 / (288 * beta * beta)) / (1 + 1 / (12 * total) + 1 / (288 * total * total))
  local term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * b2
  local axbx = alpha * (x - 1) + beta * x
  local term1_den = (2 * alpha / beta):sqrt() * total ^ 1.5 * axbx * axbx
  local term1 = term1_num / term1_den
  local term2 = 0.5 * (alpha / (total * x)):log()
  local term3 = (8 * alpha * beta / total):sqrt() / (beta * x + alpha * (x - 1))
  local term4 = (beta * (beta / (total * (1 - x))):log() + alpha * (alpha / (total * x)):log()) ^ -1.5
  local term1234 = term1 + term2 * (term3 + pt.where(x:lt(mean), term4, -term4))
  local r_far = stirling * prefactor * term1234
  local near = (mean - 0.1 * std):le(x) & x:le(mean + 0.1 * std)
  return pt.where(near, r_near, r_far)
end

local DIRICHLET_COEF = {
  {{{1.003668233, -0.01061107488, -0.0657888334, 0.01201642863},
    {0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033},
    {-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013}},
   {{0.221950385, -0.3187676331, 0.01799915743, 0.01074823814},
    {-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057},
    {0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05}},
   {{-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565},
    {0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181},
    {0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05}}},
  {{{1, -0.02924021934, -0.04438342661, 0.007285809825},
    {0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521},
    {-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149}},
   {{0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273},
    {0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956},
    {-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05}},
   {{0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05},
    {0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05},
    {-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06}}},
}

-- -(d/dalpha cdf(x; alpha, total - alpha)) / pdf / (1 - x) for Beta draws x (ATen's
-- dirichlet_grad_one, torch._dirichlet_grad), elementwise, computed in float64
local function dirichlet_grad(x, alpha, total)
  local dtype = x:dtype()
  x, alpha, total = x:to("float64"), alpha:to("float64"), total:to("float64")
  local beta = total - alpha
  local boundary = total * x * (1 - x)
  local r_small = beta_grad_alpha_small(x, alpha, beta)
  local r_large = -beta_grad_beta_small(1 - x, beta, alpha)
  local r_mid = beta_grad_alpha_mid(x, alpha, beta)
  local u = x:log()
  local a = alpha:log() - u
  local b = total:log() - a
  local pow_u, pow_a = {1, u, u * u}, {1, a, a * a}
  local p, q = 0, 0
  for i = 1, 3 do
    for j = 1, 3 do
      local ua = pow_u[i] * pow_a[j]
      local cp, cq = DIRICHLET_COEF[1][i][j], DIRICHLET_COEF[2][i][j]
      p = p + ua * (cp[1] + b * (cp[2] + b * (cp[3] + b * cp[4])))
      q = q + ua * (cq[1] + b * (cq[2] + b * (cq[3] + b * cq[4])))
    end
  end
  local approx = x * (total:digamma() - alpha:digamma()) / beta
  local r_rational = p / q * approx
  local out = pt.where(x:le(0.5) & boundary:lt(2.5), r_small,
    pt.where(x:ge(0.5) & boundary:lt(0.75), r_large,
      pt.where(alpha:gt(6) & beta:gt(6), r_mid, r_rational)))
  return out:to(dtype)
end

-- Dirichlet draws: standard gammas normalised along the last dim
local function sample_dirichlet(alpha)
  local g = standard_gamma(alpha)
  return g / g:sum(-1, true)
end

local Dirichlet = class("Dirichlet", Distribution, true)
Dirichlet.has_rsample = true
Dirichlet._params = {concentration = 1}
Dirichlet._arg_names = {"concentration"}
Dirichlet._support_c = C.simplex

local function dirichlet_new(cname, concentration, validate)
  local c = tensor_arg(cname, "concentration", concentration, 1)
  local s = c:size()
  local self = setmetatable({concentration = c}, Dirichlet)
  base_init(self, slice(s, 1, #s - 1), {s[#s]}, validate, c:dtype())
  if validating(self) then check_param(cname, "concentration", c, C.positive_vector) end
  return self
end

function Dirichlet._new(...)
  local vals, validate = parse("Dirichlet", {"concentration"}, ...)
  return dirichlet_new("Dirichlet", vals.concentration, validate)
end

function Dirichlet:rsample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "rsample"))
  local alpha = self.concentration:expand(shape)
  local x = pt.no_grad(sample_dirichlet, alpha:detach())
  if not needs_grad(alpha) then return x end
  -- torch's _Dirichlet backward: grad_alpha = G * (grad_out - sum(x * grad_out)), the
  -- vector-Jacobian product of x + G d - x sum(G d) with d = alpha - alpha:detach()
  local g = pt.no_grad(function()
    local a = alpha:detach()
    local G = dirichlet_grad(x, a, a:sum(-1, true):expand(shape))
    return pt.where(G:isfinite(), G, 0)
  end)
  local gd = g * (alpha - alpha:detach())
  return x + gd - x * gd:sum(-1, true)
end

function Dirichlet:log_prob(value)
  value = self:_value(value, "log_prob")
  return (value:log() * (self.concentration - 1.0)):sum(-1) + self.concentration:sum(-1):lgamma() -
    self.concentration:lgamma():sum(-1)
end

Dirichlet._props.mean = function(self) return self.concentration / self.concentration:sum(-1, true) end
Dirichlet._props.mode = function(self)
  local c = self.concentration
  -- torch's (c - 1).clamp(min=0) with its gradient: 0 (not a nan from the division below)
  -- where c < 1
  local cm1 = pt.where(c:ge(1), c - 1, 0)
  local mode = cm1 / cm1:sum(-1, true)
  -- all concentrations below 1: torch's one_hot of the argmax of a row of nans, the first
  local k = c:size(-1)
  local first = pt.arange(1, k + 1):eq(1):to(mode:dtype())
  return pt.where(c:lt(1):all(-1, true), first, mode)
end
Dirichlet._props.variance = function(self)
  local c = self.concentration
  local con0 = c:sum(-1, true)
  return c * (con0 - c) / (con0:pow(2) * (con0 + 1))
end

function Dirichlet:entropy()
  local c = self.concentration
  local k = c:size(-1)
  local a0 = c:sum(-1)
  return c:lgamma():sum(-1) - a0:lgamma() - (k - a0) * a0:digamma() - ((c - 1.0) * c:digamma()):sum(-1)
end

local Beta = class("Beta", Distribution, true)
Beta.has_rsample = true
Beta._arg_names = {"concentration1", "concentration0"}
Beta._repr_props = true
Beta._support_c = C.unit_interval

function Beta._new(...)
  local vals, validate = parse("Beta", {"concentration1", "concentration0"}, ...)
  local ts, all_numbers = broadcast_all("Beta", {"concentration1", "concentration0"}, vals)
  local v = validate
  if v == nil then v = default_validate end
  if v then
    check_param("Beta", "concentration1", ts[1], C.positive)
    check_param("Beta", "concentration0", ts[2], C.positive)
  end
  local c = pt.stack({ts[1], ts[2]}, -1)
  if all_numbers then c = c:reshape({2}) end
  local dir = dirichlet_new("Beta", c, false)
  local self = setmetatable({_dirichlet = dir}, Beta)
  base_init(self, dir.batch_shape, {}, validate, dir._dt)
  return self
end

function Beta:_expand_into(new, batch_shape)
  rawset(new, "_dirichlet", self._dirichlet:expand(batch_shape))
end

Beta._props.concentration1 = function(self) return self._dirichlet.concentration:select(-1, 1) end
Beta._props.concentration0 = function(self) return self._dirichlet.concentration:select(-1, 2) end
Beta._props.mean = function(self) return self.concentration1 / (self.concentration1 + self.concentration0) end
Beta._props.mode = function(self) return self._dirichlet.mode:select(-1, 1) end
Beta._props.variance = function(self)
  local total = self.concentration1 + self.concentration0
  return self.concentration1 * self.concentration0 / (total:pow(2) * (total + 1))
end

function Beta:rsample(sample_shape)
  return self._dirichlet:rsample(draw(self, sample_shape, "rsample")):select(-1, 1)
end

function Beta:log_prob(value)
  value = self:_value(value, "log_prob")
  return self._dirichlet:log_prob(pt.stack({value, 1.0 - value}, -1))
end

function Beta:entropy() return self._dirichlet:entropy() end

-- ------------------------------------------------------------------ Bernoulli

-- the parameter of a probs-or-logits distribution: exactly one given
local function probs_or_logits(cname, vals)
  if (vals.probs == nil) == (vals.logits == nil) then
    fail(cname .. ": exactly one of probs or logits must be given")
  end
  return vals.probs ~= nil and "probs" or "logits"
end

local function clamp_probs(p)
  local eps = finfo(p:dtype()).eps
  return p:clamp(eps, 1 - eps)
end

-- torch's lazy_property: computed once (with gradients recorded) and kept as a field
local function lazy(name, fn)
  return function(self)
    local v = pt.enable_grad(fn, self)
    rawset(self, name, v)
    return v
  end
end

-- torch's binary_cross_entropy_with_logits(x, y, reduction='none'), its stable form
local function bce_with_logits(x, y)
  local max_val = (-x):clamp_min(0)
  return (1 - y) * x + max_val + ((-max_val):exp() + (-x - max_val):exp()):log()
end

-- torch's F.softplus (beta 1, threshold 20); the clamp keeps exp finite where x is returned
local function softplus(x)
  return pt.where(x:gt(20), x, x:clamp(nil, 20):exp():log1p())
end

local Bernoulli = class("Bernoulli", Distribution, true)
Bernoulli.has_enumerate_support = true
Bernoulli._params = {probs = 0, logits = 0}
Bernoulli._arg_names = {"probs", "logits"}
Bernoulli._support_c = C.boolean

function Bernoulli._new(...)
  local vals, validate = parse("Bernoulli", {"probs", "logits"}, ...)
  local name = probs_or_logits("Bernoulli", vals)
  local self = elementwise_new(Bernoulli, "Bernoulli", {name}, {name == "probs" and C.unit_interval or C.real},
    vals, validate)
  rawset(self, "_param_name", name)
  return self
end

Bernoulli._props.probs = lazy("probs", function(self) return self.logits:sigmoid() end)
Bernoulli._props.logits = lazy("logits", function(self)
  local p = clamp_probs(self.probs)
  return p:log() - (-p):log1p()
end)
Bernoulli._props.param_shape = function(self) return rawget(self, self._param_name):size() end
Bernoulli._props.mean = function(self) return self.probs end
Bernoulli._props.mode = function(self)
  local p = self.probs
  return pt.where(p:eq(0.5), nan, p:ge(0.5):to(p:dtype()))
end
Bernoulli._props.variance = function(self) return self.probs * (1 - self.probs) end

function Bernoulli:sample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "sample"))
  local probs = self.probs
  return pt.no_grad(function() return pt.bernoulli(probs:detach():expand(shape)) end)
end

function Bernoulli:log_prob(value)
  value = self:_value(value, "log_prob")
  return -bce_with_logits(self.logits, value)
end

function Bernoulli:entropy() return bce_with_logits(self.logits, self.probs) end

local function enumerate(values, n, batch_shape, event_shape, expand)
  values = values:view(concat({n}, ones_list(#batch_shape), event_shape))
  if expand == nil or expand then values = values:expand(concat({n}, batch_shape, event_shape)) end
  return values
end

function Bernoulli:enumerate_support(expand)
  return enumerate(pt.arange(0, 2, {dtype = self._dt}), 2, self.batch_shape, {}, expand)
end

-- ------------------------------------------------------------------ Binomial

local Binomial = class("Binomial", Distribution, true)
Binomial.has_enumerate_support = true
Binomial._params = {total_count = 0, probs = 0, logits = 0}
Binomial._arg_names = {"total_count", "probs", "logits"}

function Binomial._new(...)
  local vals, validate = parse("Binomial", {"total_count", "probs", "logits"}, ...)
  local name = probs_or_logits("Binomial", vals)
  if vals.total_count == nil then vals.total_count = 1 end
  local ts, _, shape = broadcast_all("Binomial", {"total_count", name}, vals)
  local self = setmetatable({}, Binomial)
  rawset(self, "total_count", ts[1]:to(ts[2]:dtype()))
  rawset(self, name, ts[2])
  rawset(self, "_param_name", name)
  base_init(self, shape, {}, validate, ts[2]:dtype())
  if validating(self) then
    check_param("Binomial", "total_count", self.total_count, C.nonnegative_integer)
    check_param("Binomial", name, ts[2], name == "probs" and C.unit_interval or C.real)
  end
  return self
end

function Binomial:_support() return C.integer_interval(0, self.total_count) end

Binomial._props.probs = Bernoulli._props.probs
Binomial._props.logits = Bernoulli._props.logits
Binomial._props.param_shape = Bernoulli._props.param_shape
Binomial._props.mean = function(self) return self.total_count * self.probs end
Binomial._props.mode = function(self)
  return pt.minimum(((self.total_count + 1) * self.probs):floor(), self.total_count)
end
Binomial._props.variance = function(self) return self.total_count * self.probs * (1 - self.probs) end

-- counts of successes over total_count Bernoulli trials per element, in chunks of trials that
-- keep the uniform draws near 2^20 numbers: O(max total_count) work per element
local function sample_binomial(n, p)
  local shape, dtype = n:size(), p:dtype()
  local count = pt.zeros(shape, {dtype = dtype})
  local max_n = math.tointeger(n:numel() > 0 and n:max():item() or 0) or 0
  local chunk = math.max(1, math.min(max_n, (1 << 20) // math.max(1, n:numel())))
  local pu, nu = p:unsqueeze(-1), n:unsqueeze(-1)
  local done = 0
  while done < max_n do
    local k = math.min(chunk, max_n - done)
    local u = pt.rand(concat(shape, {k}), {dtype = dtype})
    local trial = pt.arange(done + 1, done + k + 1, {dtype = dtype})
    count = count + (u:lt(pu) & trial:le(nu)):sum(-1):to(dtype)
    done = done + k
  end
  return count
end

function Binomial:sample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "sample"))
  local n, p = self.total_count:detach():expand(shape), self.probs:detach():expand(shape)
  return pt.no_grad(sample_binomial, n, p)
end

local function clamp_by_zero(x) return (x:clamp_min(0) + x - x:clamp(nil, 0)) / 2 end

function Binomial:log_prob(value)
  value = self:_value(value, "log_prob")
  local n, logits = self.total_count, self.logits
  local log_factorial_n = (n + 1):lgamma()
  local log_factorial_k = (value + 1):lgamma()
  local log_factorial_nmk = (n - value + 1):lgamma()
  local normalize_term = n * clamp_by_zero(logits) + n * (-logits:abs()):exp():log1p() - log_factorial_n
  return value * logits - log_factorial_k - log_factorial_nmk - normalize_term
end

local function homogeneous_count(self, what)
  local n = self.total_count
  local hi, lo = n:max():item(), n:min():item()
  if hi ~= lo then
    fail(string.format("Binomial.%s: total_count must be the same for every batch element (got %s and %s)",
      what, num(lo), num(hi)))
  end
  return math.tointeger(hi) or hi
end

function Binomial:enumerate_support(expand)
  local n = homogeneous_count(self, "enumerate_support")
  return enumerate(pt.arange(0, n + 1, {dtype = self._dt}), n + 1, self.batch_shape, {}, expand)
end

function Binomial:entropy()
  homogeneous_count(self, "entropy")
  local lp = self:log_prob(self:enumerate_support(false))
  return -(lp:exp() * lp):sum(1)
end

-- ------------------------------------------------------------------ Categorical

local Categorical = class("Categorical", Distribution, true)
Categorical.has_enumerate_support = true
Categorical._params = {probs = 1, logits = 1}
Categorical._arg_names = {"probs", "logits"}

local function categorical_new(cname, vals, validate)
  local name = probs_or_logits(cname, vals)
  local t = tensor_arg(cname, name, vals[name], 1)
  local param
  if name == "probs" then
    param = t / t:sum(-1, true)
  else
    param = t - t:logsumexp(-1, true)
  end
  local self = setmetatable({[name] = param, _param_name = name}, Categorical)
  local s = param:size()
  rawset(self, "_num_events", s[#s])
  base_init(self, slice(s, 1, #s - 1), {}, validate, param:dtype())
  if validating(self) then check_param(cname, name, param, name == "probs" and C.simplex or C.real_vector) end
  return self
end

function Categorical._new(...)
  return categorical_new("Categorical", parse("Categorical", {"probs", "logits"}, ...))
end

function Categorical:_support() return C.integer_interval(1, self._num_events) end

Categorical._props.probs = lazy("probs", function(self) return self.logits:softmax(-1) end)
Categorical._props.logits = lazy("logits", function(self) return clamp_probs(self.probs):log() end)
Categorical._props.param_shape = Bernoulli._props.param_shape
Categorical._props.mean = function(self) return pt.full(self:_extended_shape({}), nan, {dtype = self._dt}) end
Categorical._props.variance = Categorical._props.mean
Categorical._props.mode = function(self) return self.probs:argmax(-1) end

function Categorical:sample(sample_shape)
  sample_shape = draw(self, sample_shape, "sample")
  local shape = self:_extended_shape(sample_shape)
  local n = numel(sample_shape)
  if n == 0 or numel(shape) == 0 then return pt.zeros(shape, {dtype = "int64"}) end
  local probs = self.probs
  return pt.no_grad(function()
    local probs_2d = probs:detach():reshape({-1, self._num_events})
    return pt.multinomial(probs_2d, n, {replacement = true}):t():reshape(shape)
  end)
end

function Categorical:log_prob(value)
  value = self:_value(value, "log_prob")
  value = value:long():unsqueeze(-1)
  local logits = self.logits
  local shape = broadcast_shapes(value:size(), logits:size())
  value = value:expand(shape):narrow(-1, 1, 1)
  return logits:expand(shape):gather(-1, value):squeeze(-1)
end

function Categorical:entropy()
  local logits = self.logits:clamp_min(finfo(self._dt).min)
  return -(logits * self.probs):sum(-1)
end

function Categorical:enumerate_support(expand)
  local k = self._num_events
  return enumerate(pt.arange(1, k + 1), k, self.batch_shape, {}, expand)
end

-- ------------------------------------------------------------------ OneHotCategorical

local OneHotCategorical = class("OneHotCategorical", Distribution, true)
OneHotCategorical.has_enumerate_support = true
OneHotCategorical._arg_names = {"probs", "logits"}
OneHotCategorical._support_c = C.one_hot

function OneHotCategorical._new(...)
  local vals, validate = parse("OneHotCategorical", {"probs", "logits"}, ...)
  local cat = categorical_new("OneHotCategorical", vals, validate)
  local self = setmetatable({_categorical = cat}, OneHotCategorical)
  base_init(self, cat.batch_shape, {cat._num_events}, validate, cat._dt)
  return self
end

function OneHotCategorical:__tostring()
  return (describe(self._categorical):gsub("^Categorical", "OneHotCategorical"))
end

function OneHotCategorical:_expand_into(new, batch_shape)
  rawset(new, "_categorical", self._categorical:expand(batch_shape))
end

local function one_hot(indices, k, dtype)
  return indices:unsqueeze(-1):eq(pt.arange(1, k + 1)):to(dtype)
end

OneHotCategorical._props.probs = function(self) return self._categorical.probs end
OneHotCategorical._props.logits = function(self) return self._categorical.logits end
OneHotCategorical._props.param_shape = function(self) return self._categorical.param_shape end
OneHotCategorical._props.mean = function(self) return self._categorical.probs end
OneHotCategorical._props.mode = function(self)
  local probs = self._categorical.probs
  return one_hot(probs:argmax(-1), probs:size(-1), probs:dtype())
end
OneHotCategorical._props.variance = function(self)
  local p = self._categorical.probs
  return p * (1 - p)
end

function OneHotCategorical:sample(sample_shape)
  local indices = self._categorical:sample(draw(self, sample_shape, "sample"))
  return one_hot(indices, self._categorical._num_events, self._dt)
end

function OneHotCategorical:log_prob(value)
  value = self:_value(value, "log_prob")
  local _, indices = value:max(-1)
  return self._categorical:log_prob(indices)
end

function OneHotCategorical:entropy() return self._categorical:entropy() end

function OneHotCategorical:enumerate_support(expand)
  local k = self.event_shape[1]
  return enumerate(pt.eye(k, {dtype = self._dt}), k, self.batch_shape, {k}, expand)
end

-- ------------------------------------------------------------------ ContinuousBernoulli

local ContinuousBernoulli = class("ContinuousBernoulli", Distribution, true)
ContinuousBernoulli.has_rsample = true
ContinuousBernoulli._params = {probs = 0, logits = 0}
ContinuousBernoulli._arg_names = {"probs", "logits"}
ContinuousBernoulli._support_c = C.unit_interval

function ContinuousBernoulli._new(...)
  local cname = "ContinuousBernoulli"
  local vals, validate = parse(cname, {"probs", "logits", "lims"}, ...)
  local lims = vals.lims or {0.499, 0.501}
  if type(lims) ~= "table" or type(lims[1]) ~= "number" or type(lims[2]) ~= "number" then
    fail(cname .. ": lims must be a table of two numbers")
  end
  vals.lims = nil
  local name = probs_or_logits(cname, vals)
  local self = elementwise_new(ContinuousBernoulli, cname, {name}, {name == "probs" and C.unit_interval or C.real},
    vals, validate)
  -- torch validates probs before clamping them away from 0 and 1
  if name == "probs" then rawset(self, "probs", clamp_probs(self.probs)) end
  rawset(self, "_param_name", name)
  rawset(self, "_lims", lims)
  return self
end

ContinuousBernoulli._props.probs = lazy("probs", function(self) return clamp_probs(self.logits:sigmoid()) end)
ContinuousBernoulli._props.logits = Bernoulli._props.logits
ContinuousBernoulli._props.param_shape = Bernoulli._props.param_shape

function ContinuousBernoulli:_outside_unstable_region()
  return self.probs:le(self._lims[1]) | self.probs:gt(self._lims[2])
end

function ContinuousBernoulli:_cut_probs()
  return pt.where(self:_outside_unstable_region(), self.probs, self._lims[1])
end

-- the log normalizing constant of the density (a Taylor expansion near probs = 1/2)
function ContinuousBernoulli:_cont_bern_log_norm()
  local cut = self:_cut_probs()
  local below = pt.where(cut:le(0.5), cut, 0)
  local above = pt.where(cut:ge(0.5), cut, 1)
  local log_norm = ((-cut):log1p() - cut:log()):abs():log() -
    pt.where(cut:le(0.5), (-2 * below):log1p(), (2 * above - 1):log())
  local x = (self.probs - 0.5):pow(2)
  local taylor = math.log(2) + (4 / 3 + 104 / 45 * x) * x
  return pt.where(self:_outside_unstable_region(), log_norm, taylor)
end

ContinuousBernoulli._props.mean = function(self)
  local cut = self:_cut_probs()
  local mus = cut / (2 * cut - 1) + 1 / ((-cut):log1p() - cut:log())
  local x = self.probs - 0.5
  local taylor = 0.5 + (1 / 3 + 16 / 45 * x:pow(2)) * x
  return pt.where(self:_outside_unstable_region(), mus, taylor)
end
ContinuousBernoulli._props.variance = function(self)
  local cut = self:_cut_probs()
  local vars = cut * (cut - 1) / (1 - 2 * cut):pow(2) + 1 / ((-cut):log1p() - cut:log()):pow(2)
  local x = (self.probs - 0.5):pow(2)
  local taylor = 1 / 12 - (1 / 15 - 128 / 945 * x) * x
  return pt.where(self:_outside_unstable_region(), vars, taylor)
end

function ContinuousBernoulli:rsample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "rsample"))
  return self:icdf(pt.rand(shape, {dtype = self._dt}))
end

function ContinuousBernoulli:log_prob(value)
  value = self:_value(value, "log_prob")
  return -bce_with_logits(self.logits, value) + self:_cont_bern_log_norm()
end

function ContinuousBernoulli:cdf(value)
  value = self:_value(value, "cdf")
  local cut = self:_cut_probs()
  local cdfs = (cut:pow(value) * (1 - cut):pow(1 - value) + cut - 1) / (2 * cut - 1)
  local unbounded = pt.where(self:_outside_unstable_region(), cdfs, value)
  return pt.where(value:le(0), 0, pt.where(value:ge(1), 1, unbounded))
end

function ContinuousBernoulli:icdf(value)
  value = self:_value(value, "icdf", false)
  local cut = self:_cut_probs()
  return pt.where(self:_outside_unstable_region(),
    ((-cut + value * (2 * cut - 1)):log1p() - (-cut):log1p()) / (cut:log() - (-cut):log1p()), value)
end

function ContinuousBernoulli:entropy()
  local log_probs0 = (-self.probs):log1p()
  local log_probs1 = self.probs:log()
  return self.mean * (log_probs0 - log_probs1) - self:_cont_bern_log_norm() - log_probs0
end

-- ------------------------------------------------------------------ Multinomial

local Multinomial = class("Multinomial", Distribution, true)
Multinomial._arg_names = {"probs", "logits"}
Multinomial._repr_props = true

function Multinomial._new(...)
  local cname = "Multinomial"
  local vals, validate = parse(cname, {"total_count", "probs", "logits"}, ...)
  local n = vals.total_count
  if n == nil then n = 1 end
  local ni = type(n) == "number" and math.tointeger(n)
  if not ni or ni < 0 then
    fail(string.format("%s: total_count must be a non-negative integer (one for every batch element), got %s",
      cname, is_tensor(n) and "a Tensor" or tostring(n)))
  end
  local cat = categorical_new(cname, {probs = vals.probs, logits = vals.logits}, validate)
  local self = setmetatable({total_count = ni, _categorical = cat}, Multinomial)
  base_init(self, cat.batch_shape, {cat._num_events}, validate, cat._dt)
  return self
end

function Multinomial:__tostring()
  return string.format("Multinomial(total_count: %d, %s)", self.total_count,
    (describe(self._categorical):gsub("^Categorical%((.*)%)$", "%1")))
end

function Multinomial:_expand_into(new, batch_shape)
  rawset(new, "_categorical", self._categorical:expand(batch_shape))
end

function Multinomial:_support()
  local n = self.total_count
  return C.multinomial(n)
end

Multinomial._props.probs = function(self) return self._categorical.probs end
Multinomial._props.logits = function(self) return self._categorical.logits end
Multinomial._props.param_shape = function(self) return self._categorical.param_shape end
Multinomial._props.mean = function(self) return self.probs * self.total_count end
Multinomial._props.variance = function(self) return self.total_count * self.probs * (1 - self.probs) end

function Multinomial:sample(sample_shape)
  sample_shape = draw(self, sample_shape, "sample")
  local shape = self:_extended_shape(sample_shape)
  local n = self.total_count
  return pt.no_grad(function()
    if n == 0 or numel(shape) == 0 then return pt.zeros(shape, {dtype = self._dt}) end
    -- n categories per draw ({n, sample, batch}, 1-based), counted along a new last dim
    local idx = self._categorical:sample(concat({n}, sample_shape)):movedim(1, -1)
    local counts = pt.zeros(shape, {dtype = "int64"}):scatter_add(-1, idx, pt.ones_like(idx))
    return counts:to(self._dt)
  end)
end

function Multinomial:log_prob(value)
  value = self:_value(value, "log_prob")
  local logits = self.logits
  local log_factorial_n = (value:sum(-1) + 1):lgamma()
  local log_factorial_xs = (value + 1):lgamma():sum(-1)
  -- torch: a zero count of an impossible category adds nothing (not 0 * -inf)
  logits = pt.where(value:eq(0) & logits:eq(-inf), 0, logits)
  local log_powers = (logits * value):sum(-1)
  return log_factorial_n - log_factorial_xs + log_powers
end

function Multinomial:entropy()
  local n = self.total_count
  local cat_entropy = self._categorical:entropy()
  local term1 = n * cat_entropy - pt.tensor(n + 1, {dtype = self._dt}):lgamma()
  if n == 0 then return term1 end
  -- E[sum_k log x_k!] from each count's Binomial(n, p_k) marginal
  local probs = self.probs
  local support = pt.arange(1, n + 1, {dtype = self._dt}):reshape(concat({n}, ones_list(probs:dim())))
  local binom = Binomial(n, probs, {validate_args = false})
  local binomial_probs = binom:log_prob(support):exp()
  local weights = (support + 1):lgamma()
  local term2 = (binomial_probs * weights):sum(1):sum(-1)
  return term1 + term2
end

-- ------------------------------------------------------------------ relaxed (Gumbel-softmax) distributions

-- temperature: a number (a 0-d tensor of dtype) or a tensor
local function temperature_arg(cname, t, dtype)
  if type(t) == "number" then return pt.tensor(t, {dtype = dtype}) end
  if not is_tensor(t) then fail(cname .. ": temperature must be a number or a Tensor, got " .. typename(t)) end
  return t
end

-- torch's LogitRelaxedBernoulli: logits of RelaxedBernoulli draws (support: the reals); its base_dist
local LogitRelaxedBernoulli = class("LogitRelaxedBernoulli", Distribution, false)
LogitRelaxedBernoulli.has_rsample = true
LogitRelaxedBernoulli._params = {probs = 0, logits = 0}
LogitRelaxedBernoulli._arg_names = {"probs", "logits"}

local function logit_relaxed_bernoulli_new(cname, vals, validate)
  local name = probs_or_logits(cname, vals)
  local self = elementwise_new(LogitRelaxedBernoulli, cname, {name}, {name == "probs" and C.unit_interval or C.real},
    vals, validate)
  rawset(self, "_param_name", name)
  rawset(self, "temperature", temperature_arg(cname, vals.temperature, self._dt))
  return self
end

LogitRelaxedBernoulli._props.probs = Bernoulli._props.probs
LogitRelaxedBernoulli._props.logits = Bernoulli._props.logits
LogitRelaxedBernoulli._props.param_shape = Bernoulli._props.param_shape

function LogitRelaxedBernoulli:rsample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "rsample"))
  local probs = clamp_probs(self.probs:expand(shape))
  local u = clamp_probs(pt.rand(shape, {dtype = self._dt}))
  return (u:log() - (-u):log1p() + probs:log() - (-probs):log1p()) / self.temperature
end

function LogitRelaxedBernoulli:log_prob(value)
  value = self:_value(value, "log_prob")
  local diff = self.logits - value * self.temperature
  return self.temperature:log() + diff - 2 * diff:exp():log1p()
end

-- torch's RelaxedBernoulli: sigmoid of a LogitRelaxedBernoulli (TransformedDistribution with
-- SigmoidTransform: sigmoid clamped to [tiny, 1 - eps] forward, logit of the clamped value back)
local function clipped(y)
  local f = finfo(y:dtype())
  return y:clamp(f.tiny, 1 - f.eps)
end
local RelaxedBernoulli = class("RelaxedBernoulli", Distribution, true)
RelaxedBernoulli.has_rsample = true
RelaxedBernoulli._arg_names = {"probs", "logits"}
RelaxedBernoulli._repr_props = true
RelaxedBernoulli._support_c = C.unit_interval

function RelaxedBernoulli._new(...)
  local vals, validate = parse("RelaxedBernoulli", {"temperature", "probs", "logits"}, ...)
  local base = logit_relaxed_bernoulli_new("RelaxedBernoulli", vals, nil)
  local self = setmetatable({base_dist = base}, RelaxedBernoulli)
  base_init(self, base.batch_shape, {}, validate, base._dt)
  return self
end

function RelaxedBernoulli:_expand_into(new, batch_shape)
  rawset(new, "base_dist", self.base_dist:expand(batch_shape))
end

RelaxedBernoulli._props.temperature = function(self) return self.base_dist.temperature end
RelaxedBernoulli._props.probs = function(self) return self.base_dist.probs end
RelaxedBernoulli._props.logits = function(self) return self.base_dist.logits end

function RelaxedBernoulli:rsample(sample_shape)
  return clipped(self.base_dist:rsample(draw(self, sample_shape, "rsample")):sigmoid())
end

function RelaxedBernoulli:log_prob(value)
  value = self:_value(value, "log_prob")
  local y = clipped(value)
  local x = y:log() - (-y):log1p()
  -- minus the log |d sigmoid / dx| = -softplus(-x) - softplus(x)
  return self.base_dist:log_prob(x) + softplus(-x) + softplus(x)
end

-- torch's ExpRelaxedCategorical: logs of RelaxedOneHotCategorical draws; its base_dist
local ExpRelaxedCategorical = class("ExpRelaxedCategorical", Distribution, false)
ExpRelaxedCategorical.has_rsample = true
ExpRelaxedCategorical._arg_names = {"probs", "logits"}
ExpRelaxedCategorical._repr_props = true
ExpRelaxedCategorical._support_c = C.real_vector

local function exp_relaxed_categorical_new(cname, vals, validate)
  local cat = categorical_new(cname, {probs = vals.probs, logits = vals.logits}, validate)
  local self = setmetatable({_categorical = cat, temperature = temperature_arg(cname, vals.temperature, cat._dt)},
    ExpRelaxedCategorical)
  base_init(self, cat.batch_shape, {cat._num_events}, validate, cat._dt)
  return self
end

function ExpRelaxedCategorical:_expand_into(new, batch_shape)
  rawset(new, "_categorical", self._categorical:expand(batch_shape))
end

ExpRelaxedCategorical._props.probs = function(self) return self._categorical.probs end
ExpRelaxedCategorical._props.logits = function(self) return self._categorical.logits end
ExpRelaxedCategorical._props.param_shape = function(self) return self._categorical.param_shape end

function ExpRelaxedCategorical:rsample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "rsample"))
  local u = clamp_probs(pt.rand(shape, {dtype = self._dt}))
  local gumbels = -((-(u:log())):log())
  local scores = (self.logits + gumbels) / self.temperature
  return scores - scores:logsumexp(-1, true)
end

function ExpRelaxedCategorical:log_prob(value)
  value = self:_value(value, "log_prob")
  local K = self._categorical._num_events
  local t = self.temperature
  local log_scale = pt.full(t:size(), K, {dtype = t:dtype()}):lgamma() + t:log() * (K - 1)
  local score = self.logits - value * t
  score = (score - score:logsumexp(-1, true)):sum(-1)
  return score + log_scale
end

-- torch's RelaxedOneHotCategorical: exp of an ExpRelaxedCategorical (TransformedDistribution with
-- ExpTransform), draws on the simplex
local RelaxedOneHotCategorical = class("RelaxedOneHotCategorical", Distribution, true)
RelaxedOneHotCategorical.has_rsample = true
RelaxedOneHotCategorical._arg_names = {"probs", "logits"}
RelaxedOneHotCategorical._repr_props = true
RelaxedOneHotCategorical._support_c = C.simplex

function RelaxedOneHotCategorical._new(...)
  local vals, validate = parse("RelaxedOneHotCategorical", {"temperature", "probs", "logits"}, ...)
  local base = exp_relaxed_categorical_new("RelaxedOneHotCategorical", vals, validate)
  local self = setmetatable({base_dist = base}, RelaxedOneHotCategorical)
  base_init(self, base.batch_shape, base.event_shape, validate, base._dt)
  return self
end

function RelaxedOneHotCategorical:_expand_into(new, batch_shape)
  rawset(new, "base_dist", self.base_dist:expand(batch_shape))
end

RelaxedOneHotCategorical._props.temperature = function(self) return self.base_dist.temperature end
RelaxedOneHotCategorical._props.probs = function(self) return self.base_dist.probs end
RelaxedOneHotCategorical._props.logits = function(self) return self.base_dist.logits end

function RelaxedOneHotCategorical:rsample(sample_shape)
  return self.base_dist:rsample(draw(self, sample_shape, "rsample")):exp()
end

function RelaxedOneHotCategorical:log_prob(value)
  value = self:_value(value, "log_prob")
  local x = value:log()
  return self.base_dist:log_prob(x) - x:sum(-1)
end

-- ------------------------------------------------------------------ NegativeBinomial

local NegativeBinomial = class("NegativeBinomial", Distribution, true)
NegativeBinomial._params = {total_count = 0, probs = 0, logits = 0}
NegativeBinomial._arg_names = {"total_count", "probs", "logits"}
NegativeBinomial._support_c = C.nonnegative_integer

local HALF_OPEN_UNIT = {desc = "in [0, 1)", check = function(v) return v:ge(0) & v:lt(1) end}

function NegativeBinomial._new(...)
  local cname = "NegativeBinomial"
  local vals, validate = parse(cname, {"total_count", "probs", "logits"}, ...)
  local name = probs_or_logits(cname, vals)
  if vals.total_count == nil then fail(cname .. ": total_count must be given") end
  local ts, all_numbers, shape = broadcast_all(cname, {"total_count", name}, vals)
  local self = setmetatable({}, NegativeBinomial)
  rawset(self, "total_count", ts[1]:to(ts[2]:dtype()))
  rawset(self, name, ts[2])
  rawset(self, "_param_name", name)
  base_init(self, all_numbers and {} or shape, {}, validate, ts[2]:dtype())
  if validating(self) then
    check_param(cname, "total_count", self.total_count, C.nonnegative)
    check_param(cname, name, ts[2], name == "probs" and HALF_OPEN_UNIT or C.real)
  end
  return self
end

NegativeBinomial._props.probs = Bernoulli._props.probs
NegativeBinomial._props.logits = Bernoulli._props.logits
NegativeBinomial._props.param_shape = Bernoulli._props.param_shape
NegativeBinomial._props.mean = function(self) return self.total_count * self.logits:exp() end
NegativeBinomial._props.mode = function(self)
  return ((self.total_count - 1) * self.logits:exp()):floor():clamp_min(0)
end
NegativeBinomial._props.variance = function(self) return self.mean / (-self.logits):sigmoid() end

function NegativeBinomial:sample(sample_shape)
  sample_shape = draw(self, sample_shape, "sample")
  local n, logits = self.total_count, self.logits
  return pt.no_grad(function()
    -- a Poisson draw at a Gamma(total_count, exp(-logits)) rate (torch's construction)
    local gamma = Gamma(n:detach(), (-logits:detach()):exp(), {validate_args = false})
    return pt.poisson(gamma:sample(sample_shape))
  end)
end

function NegativeBinomial:log_prob(value)
  value = self:_value(value, "log_prob")
  local logsigmoid = pt.nn.functional.logsigmoid
  local n, logits = self.total_count, self.logits
  local log_unnormalized = n * logsigmoid(-logits) + value * logsigmoid(logits)
  local log_normalization = -(n + value):lgamma() + (1 + value):lgamma() + n:lgamma()
  log_normalization = pt.where((n + value):eq(0), 0, log_normalization)
  return log_unnormalized - log_normalization
end

-- ------------------------------------------------------------------ Poisson

local Poisson = class("Poisson", Distribution, true)
Poisson._params = {rate = 0}
Poisson._arg_names = {"rate"}
Poisson._support_c = C.nonnegative_integer

function Poisson._new(...)
  local vals, validate = parse("Poisson", {"rate"}, ...)
  return elementwise_new(Poisson, "Poisson", {"rate"}, {C.nonnegative}, vals, validate)
end

Poisson._props.mean = function(self) return self.rate end
Poisson._props.mode = function(self) return self.rate:floor() end
Poisson._props.variance = function(self) return self.rate end

function Poisson:sample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "sample"))
  local rate = self.rate:detach():expand(shape)
  return pt.no_grad(pt.poisson, rate)
end

function Poisson:log_prob(value)
  value = self:_value(value, "log_prob")
  return pt.xlogy(value, self.rate) - self.rate - (value + 1):lgamma()
end

-- ------------------------------------------------------------------ Cauchy, Gumbel, Geometric

local EULER = 0.57721566490153286060

local Cauchy = class("Cauchy", Distribution, true)
Cauchy.has_rsample = true
Cauchy._params = {loc = 0, scale = 0}
Cauchy._arg_names = {"loc", "scale"}

function Cauchy._new(...)
  local vals, validate = parse("Cauchy", {"loc", "scale"}, ...)
  return elementwise_new(Cauchy, "Cauchy", {"loc", "scale"}, {C.real, C.positive}, vals, validate)
end

Cauchy._props.mean = function(self) return pt.full(self:_extended_shape({}), nan, {dtype = self._dt}) end
Cauchy._props.mode = function(self) return self.loc end
Cauchy._props.variance = function(self) return pt.full(self:_extended_shape({}), inf, {dtype = self._dt}) end

function Cauchy:rsample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "rsample"))
  local eps = pt.empty(shape, {dtype = self._dt}):cauchy_()
  return self.loc + eps * self.scale
end

function Cauchy:log_prob(value)
  value = self:_value(value, "log_prob")
  return -math.log(math.pi) - self.scale:log() - (1 + ((value - self.loc) / self.scale):pow(2)):log()
end

function Cauchy:cdf(value)
  value = self:_value(value, "cdf")
  return ((value - self.loc) / self.scale):atan() / math.pi + 0.5
end

function Cauchy:icdf(value)
  value = self:_value(value, "icdf", false)
  return (math.pi * (value - 0.5)):tan() * self.scale + self.loc
end

function Cauchy:entropy() return math.log(4 * math.pi) + self.scale:log() end

-- torch's Gumbel: a Uniform(tiny, 1 - eps) base through x = loc - scale * log(-log(u))
local Gumbel = class("Gumbel", Distribution, true)
Gumbel.has_rsample = true
Gumbel._params = {loc = 0, scale = 0}
Gumbel._arg_names = {"loc", "scale"}

function Gumbel._new(...)
  local vals, validate = parse("Gumbel", {"loc", "scale"}, ...)
  return elementwise_new(Gumbel, "Gumbel", {"loc", "scale"}, {C.real, C.positive}, vals, validate)
end

Gumbel._props.mean = function(self) return self.loc + self.scale * EULER end
Gumbel._props.mode = function(self) return self.loc end
Gumbel._props.stddev = function(self) return (math.pi / math.sqrt(6)) * self.scale end
Gumbel._props.variance = function(self) return self.stddev:pow(2) end

local function gumbel_bounds(dtype)
  local f = finfo(dtype)
  return f.tiny, 1 - f.eps
end

function Gumbel:rsample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "rsample"))
  local lo, hi = gumbel_bounds(self._dt)
  local u = pt.rand(shape, {dtype = self._dt}) * (hi - lo) + lo
  return self.loc - self.scale * (-u:log()):log()
end

function Gumbel:log_prob(value)
  value = self:_value(value, "log_prob")
  local y = (self.loc - value) / self.scale
  return (y - y:exp()) - self.scale:log()
end

function Gumbel:cdf(value)
  value = self:_value(value, "cdf")
  local lo, hi = gumbel_bounds(self._dt)
  local u = (-(-(value - self.loc) / self.scale):exp()):exp()
  return ((u - lo) / (hi - lo)):clamp(0, 1)
end

function Gumbel:icdf(value)
  value = self:_value(value, "icdf", false)
  local lo, hi = gumbel_bounds(self._dt)
  local u = value * (hi - lo) + lo
  return self.loc - self.scale * (-u:log()):log()
end

function Gumbel:entropy() return self.scale:log() + (1 + EULER) end

-- failures before the first success: 0, 1, 2, ... (torch's Geometric; t:geometric_ counts trials)
local Geometric = class("Geometric", Distribution, true)
Geometric._params = {probs = 0, logits = 0}
Geometric._arg_names = {"probs", "logits"}
Geometric._support_c = C.nonnegative_integer

function Geometric._new(...)
  local vals, validate = parse("Geometric", {"probs", "logits"}, ...)
  local name = probs_or_logits("Geometric", vals)
  local self = elementwise_new(Geometric, "Geometric", {name}, {name == "probs" and C.unit_interval or C.real},
    vals, validate)
  rawset(self, "_param_name", name)
  if name == "probs" and validating(self) then
    check_param("Geometric", "probs", self.probs, C.positive)
  end
  return self
end

Geometric._props.probs = Bernoulli._props.probs
Geometric._props.logits = Bernoulli._props.logits
Geometric._props.param_shape = Bernoulli._props.param_shape
Geometric._props.mean = function(self) return 1 / self.probs - 1 end
Geometric._props.mode = function(self) return pt.zeros_like(self.probs) end
Geometric._props.variance = function(self) return (1 / self.probs - 1) / self.probs end

function Geometric:sample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "sample"))
  local probs = self.probs
  return pt.no_grad(function()
    local u = pt.empty(shape, {dtype = self._dt}):uniform_(finfo(self._dt).tiny, 1)
    return (u:log() / (-probs:detach()):log1p()):floor()
  end)
end

function Geometric:log_prob(value)
  value = self:_value(value, "log_prob")
  local probs = self.probs
  -- torch zeroes probs where probs == 1 and value == 0 (0 * log1p(-1) would be nan)
  local p = pt.where(probs:eq(1) & value:eq(0), 0, probs)
  return value * (-p):log1p() + probs:log()
end

function Geometric:entropy() return bce_with_logits(self.logits, self.probs) / self.probs end

-- ------------------------------------------------------------------ StudentT, HalfNormal

local StudentT = class("StudentT", Distribution, true)
StudentT.has_rsample = true
StudentT._params = {df = 0, loc = 0, scale = 0}
StudentT._arg_names = {"df", "loc", "scale"}

function StudentT._new(...)
  local vals, validate = parse("StudentT", {"df", "loc", "scale"}, ...)
  if vals.loc == nil then vals.loc = 0.0 end
  if vals.scale == nil then vals.scale = 1.0 end
  return elementwise_new(StudentT, "StudentT", {"df", "loc", "scale"}, {C.positive, C.real, C.positive}, vals,
    validate)
end

StudentT._props.mean = function(self) return pt.where(self.df:le(1), nan, self.loc) end
StudentT._props.mode = function(self) return self.loc end
StudentT._props.variance = function(self)
  local df = self.df
  -- the finite branch from a df > 2 everywhere, so no inf / nan reaches the gradient
  local safe = pt.where(df:gt(2), df, 3)
  local v = self.scale:pow(2) * safe / (safe - 2)
  return pt.where(df:gt(2), v, pt.where(df:gt(1), inf, nan))
end

function StudentT:rsample(sample_shape)
  sample_shape = draw(self, sample_shape, "rsample")
  local shape = self:_extended_shape(sample_shape)
  local X = pt.randn(shape, {dtype = self._dt})
  -- Z ~ Chi2(df) = Gamma(df / 2, 1 / 2), reparameterized
  local Z = Gamma(0.5 * self.df, pt.full(self.df:size(), 0.5, {dtype = self._dt}), {validate_args = false})
    :rsample(sample_shape)
  local Y = X * (Z / self.df):rsqrt()
  return self.loc + self.scale * Y
end

function StudentT:log_prob(value)
  value = self:_value(value, "log_prob")
  local y = (value - self.loc) / self.scale
  local Z = self.scale:log() + 0.5 * self.df:log() + 0.5 * math.log(math.pi) + (0.5 * self.df):lgamma() -
    (0.5 * (self.df + 1)):lgamma()
  return -0.5 * (self.df + 1) * (y:pow(2) / self.df):log1p() - Z
end

function StudentT:entropy()
  local df = self.df
  local lbeta = (0.5 * df):lgamma() + 0.5 * math.log(math.pi) - (0.5 * (df + 1)):lgamma()
  return self.scale:log() + 0.5 * (df + 1) * ((0.5 * (df + 1)):digamma() - (0.5 * df):digamma()) +
    0.5 * df:log() + lbeta
end

-- |X| for X = base(0, scale) (torch's TransformedDistribution(base, AbsTransform)): HalfNormal and
-- HalfCauchy. make_base(vals) builds the base; value_in_dt: log_prob takes the value in the
-- scale's dtype (torch's HalfCauchy). Every class gets its own functions (their help texts differ).
local function half_distribution(name, make_base, value_in_dt)
  local cls = class(name, Distribution, true)
  cls.has_rsample = true
  cls._arg_names = {"scale"}
  cls._repr_props = true
  cls._support_c = C.nonnegative

  function cls._new(...)
    local vals, validate = parse(name, {"scale"}, ...)
    local v = validate
    if v == nil then v = default_validate end
    local ts = broadcast_all(name, {"scale"}, vals)
    if v then check_param(name, "scale", ts[1], C.positive) end
    local base = make_base(vals)
    local self = setmetatable({base_dist = base}, cls)
    base_init(self, base.batch_shape, {}, validate, base._dt)
    return self
  end

  function cls:_expand_into(new, batch_shape)
    rawset(new, "base_dist", self.base_dist:expand(batch_shape))
  end

  cls._props.scale = function(self) return self.base_dist.scale end
  cls._props.mode = function(self) return pt.zeros_like(self.scale) end

  function cls:rsample(sample_shape)
    return self.base_dist:rsample(draw(self, sample_shape, "rsample")):abs()
  end

  function cls:log_prob(value)
    value = self:_value(value, "log_prob")
    if value_in_dt and value:dtype() ~= self._dt then value = value:to(self._dt) end
    local lp = self.base_dist:log_prob(value) + math.log(2)
    return pt.where(value:ge(0), lp, -inf)
  end

  function cls:cdf(value)
    value = self:_value(value, "cdf")
    return 2 * self.base_dist:cdf(value) - 1
  end

  function cls:icdf(value)
    value = self:_value(value, "icdf", false)
    return self.base_dist:icdf((value + 1) / 2)
  end

  function cls:entropy() return self.base_dist:entropy() - math.log(2) end
  return cls
end

-- |N(0, scale^2)|
local HalfNormal = half_distribution("HalfNormal",
  function(vals) return normal_new("HalfNormal", {loc = 0.0, scale = vals.scale}, false) end)
HalfNormal._props.mean = function(self) return self.scale * math.sqrt(2 / math.pi) end
HalfNormal._props.variance = function(self) return self.scale:pow(2) * (1 - 2 / math.pi) end

-- ------------------------------------------------------------------ Pareto, Weibull, HalfCauchy

-- torch's Pareto: scale * exp(E), E ~ Exponential(alpha) (a TransformedDistribution)
local Pareto = class("Pareto", Distribution, true)
Pareto.has_rsample = true
Pareto._params = {scale = 0, alpha = 0}
Pareto._arg_names = {"scale", "alpha"}

function Pareto._new(...)
  local vals, validate = parse("Pareto", {"scale", "alpha"}, ...)
  return elementwise_new(Pareto, "Pareto", {"scale", "alpha"}, {C.positive, C.positive}, vals, validate)
end

function Pareto:_support()
  local lo = self.scale
  local c = C.greater_than_eq(lo) -- from distributions_transforms.lua, as C.multinomial
  c.desc = "greater than or equal to scale"
  return c
end

-- torch's alpha.clamp(min=...) with its gradient (0 below the bound, even where the result is
-- inf or nan)
Pareto._props.mean = function(self)
  local a = pt.where(self.alpha:ge(1), self.alpha, 1)
  return a * self.scale / (a - 1)
end
Pareto._props.mode = function(self) return self.scale end
Pareto._props.variance = function(self)
  local a = pt.where(self.alpha:ge(2), self.alpha, 2)
  return self.scale:pow(2) * a / ((a - 1):pow(2) * (a - 2))
end

function Pareto:rsample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "rsample"))
  local e = pt.empty(shape, {dtype = self._dt}):exponential_() / self.alpha
  return self.scale * e:exp()
end

function Pareto:log_prob(value)
  value = self:_value(value, "log_prob")
  local x = (value / self.scale):log()
  return -self.scale:log() - x + self.alpha:log() - self.alpha * x
end

function Pareto:cdf(value)
  value = self:_value(value, "cdf")
  return 1 - (-self.alpha * (value / self.scale):log()):exp()
end

function Pareto:icdf(value)
  value = self:_value(value, "icdf", false)
  return self.scale * (-(1 - value):log() / self.alpha):exp()
end

function Pareto:entropy() return (self.scale / self.alpha):log() + (1 + self.alpha:reciprocal()) end

-- torch's Weibull: scale * E^(1 / concentration), E ~ Exponential(1) (a TransformedDistribution)
local Weibull = class("Weibull", Distribution, true)
Weibull.has_rsample = true
Weibull._params = {scale = 0, concentration = 0}
Weibull._arg_names = {"scale", "concentration"}
Weibull._support_c = C.positive

function Weibull._new(...)
  local vals, validate = parse("Weibull", {"scale", "concentration"}, ...)
  return elementwise_new(Weibull, "Weibull", {"scale", "concentration"}, {C.positive, C.positive}, vals, validate)
end

Weibull._props.concentration_reciprocal = function(self) return self.concentration:reciprocal() end
Weibull._props.mean = function(self) return self.scale * (1 + self.concentration_reciprocal):lgamma():exp() end
Weibull._props.mode = function(self)
  return self.scale * ((self.concentration - 1) / self.concentration):pow(self.concentration:reciprocal())
end
Weibull._props.variance = function(self)
  local r = self.concentration_reciprocal
  return self.scale:pow(2) * ((1 + 2 * r):lgamma():exp() - (2 * (1 + r):lgamma()):exp())
end

function Weibull:rsample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "rsample"))
  local e = pt.empty(shape, {dtype = self._dt}):exponential_()
  return self.scale * e:pow(self.concentration_reciprocal)
end

function Weibull:log_prob(value)
  value = self:_value(value, "log_prob")
  local x1 = value / self.scale
  local x0 = x1:pow(self.concentration)
  -- torch's log |det J| of the power and affine maps, then the Exponential(1) log density
  return -self.scale:log() - (self.concentration_reciprocal * x1 / x0):abs():log() - x0
end

function Weibull:cdf(value)
  value = self:_value(value, "cdf")
  return 1 - (-(value / self.scale):pow(self.concentration)):exp()
end

function Weibull:icdf(value)
  value = self:_value(value, "icdf", false)
  return self.scale * (-(1 - value):log()):pow(self.concentration_reciprocal)
end

function Weibull:entropy()
  local r = self.concentration_reciprocal
  return EULER * (1 - r) + (self.scale * r):log() + 1
end

-- |Cauchy(0, scale)|
local HalfCauchy = half_distribution("HalfCauchy", function(vals)
  return elementwise_new(Cauchy, "HalfCauchy", {"loc", "scale"}, {C.real, C.positive},
    {loc = 0.0, scale = vals.scale}, false)
end, true)
HalfCauchy._props.mean = function(self) return pt.full(self:_extended_shape({}), inf, {dtype = self._dt}) end
HalfCauchy._props.variance = function(self) return self.base_dist.variance end

-- ------------------------------------------------------------------ VonMises

-- torch's log I_order(x) (order 0 or 1, x > 0): the polynomial approximations of its von_mises.py
local BESSEL_SMALL = {
  [0] = {1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2},
  [1] = {0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3},
}
local BESSEL_LARGE = {
  [0] = {0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1, 0.2635537e-1,
         -0.1647633e-1, 0.392377e-2},
  [1] = {0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1, -0.2895312e-1,
         0.1787654e-1, -0.420059e-2},
}

local function eval_poly(y, coef)
  local result = coef[#coef]
  for i = #coef - 1, 1, -1 do result = coef[i] + y * result end
  return result
end

local function log_modified_bessel(x, order)
  local y = x / 3.75
  local small = eval_poly(y * y, BESSEL_SMALL[order])
  if order == 1 then small = x:abs() * small end
  small = small:log()
  local large = x - 0.5 * x:log() + eval_poly(3.75 / x, BESSEL_LARGE[order]):log()
  return pt.where(x:lt(3.75), small, large)
end

local VonMises = class("VonMises", Distribution, true)
VonMises._params = {loc = 0, concentration = 0}
VonMises._arg_names = {"loc", "concentration"}

function VonMises._new(...)
  local vals, validate = parse("VonMises", {"loc", "concentration"}, ...)
  return elementwise_new(VonMises, "VonMises", {"loc", "concentration"}, {C.real, C.positive}, vals, validate)
end

VonMises._props.mean = function(self) return self.loc end
VonMises._props.mode = function(self) return self.loc end
VonMises._props.variance = function(self)
  local k = self.concentration
  return 1 - (log_modified_bessel(k, 1) - log_modified_bessel(k, 0)):exp()
end

function VonMises:log_prob(value)
  value = self:_value(value, "log_prob")
  local k = self.concentration
  return k * (value - self.loc):cos() - math.log(2 * math.pi) - log_modified_bessel(k, 0)
end

-- Best and Fisher's rejection sampler (torch's _rejection_sample), every pending element redrawing
function VonMises:sample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "sample"))
  return pt.no_grad(function()
    local loc, k = self.loc:detach():expand(shape), self.concentration:detach():expand(shape)
    local tau = 1 + (1 + 4 * k:pow(2)):sqrt()
    local rho = (tau - (2 * tau):sqrt()) / (2 * k)
    local r = (1 + rho:pow(2)) / (2 * rho)
    local opts = {dtype = self._dt}
    local x = pt.zeros(shape, opts)
    local done = pt.zeros(shape, {dtype = "bool"})
    while not done:all():item() do
      local u1, u2, u3 = pt.rand(shape, opts), pt.rand(shape, opts), pt.rand(shape, opts)
      local z = (math.pi * u1):cos()
      local f = (1 + r * z) / (r + z)
      local c = k * (r - f)
      local accept = (c * (2 - c) - u2):gt(0) | ((c / u2):log() + 1 - c):ge(0)
      accept = accept & pt.logical_not(done)
      x = pt.where(accept, (u3 - 0.5):sign() * f:acos(), x)
      done = done | accept
    end
    return (x + math.pi + loc) % (2 * math.pi) - math.pi
  end)
end

-- ------------------------------------------------------------------ MultivariateNormal

local MultivariateNormal = class("MultivariateNormal", Distribution, true)
MultivariateNormal.has_rsample = true
MultivariateNormal._params = {loc = 1, covariance_matrix = 2, precision_matrix = 2, scale_tril = 2}
MultivariateNormal._arg_names = {"loc", "covariance_matrix", "precision_matrix", "scale_tril"}
MultivariateNormal._support_c = C.real_vector

-- the lower Cholesky factor of the inverse of P (torch's _precision_to_scale_tril)
local function precision_to_scale_tril(P)
  local Lf = pt.linalg.cholesky(P:flip({-2, -1}))
  local L_inv = Lf:flip({-2, -1}):transpose(-2, -1)
  local n = P:size(-1)
  local Id = pt.eye(n, {dtype = P:dtype()}):expand(L_inv:size())
  return pt.linalg.solve_triangular(L_inv, Id, {upper = false})
end

-- the squared Mahalanobis norms |L^-1 x|^2 with L's and x's batch dims broadcast
local function batch_mahalanobis(L, x)
  -- x in L's dtype: torch's solve_triangular answers in its first argument's dtype
  if x:dtype() ~= L:dtype() then x = x:to(L:dtype()) end
  local ls, xs = L:size(), x:size()
  local n = xs[#xs]
  local batch = broadcast_shapes(slice(ls, 1, #ls - 2), slice(xs, 1, #xs - 1))
  local sol = pt.linalg.solve_triangular(L:expand(concat(batch, {n, n})), x:expand(concat(batch, {n})):unsqueeze(-1),
    {upper = false})
  return sol:squeeze(-1):pow(2):sum(-1)
end

function MultivariateNormal._new(...)
  local cname = "MultivariateNormal"
  local vals, validate = parse(cname, {"loc", "covariance_matrix", "precision_matrix", "scale_tril"}, ...)
  local loc = tensor_arg(cname, "loc", vals.loc, 1)
  local given = {}
  for _, k in ipairs {"covariance_matrix", "precision_matrix", "scale_tril"} do
    if vals[k] ~= nil then given[#given + 1] = k end
  end
  if #given ~= 1 then
    fail(string.format("%s: exactly one of covariance_matrix, precision_matrix or scale_tril must be given, got %s",
      cname, #given == 0 and "none" or table.concat(given, " and ")))
  end
  local key = given[1]
  local mat = tensor_arg(cname, key, vals[key], 2)
  local ms, ls = mat:size(), loc:size()
  local n = ls[#ls]
  if ms[#ms] ~= n or ms[#ms - 1] ~= n then
    fail(string.format("%s: %s must hold %d x %d matrices (loc's last dim is %d), got shape %s", cname, key, n, n, n,
      shape_str(ms)))
  end
  local batch = broadcast_shapes(slice(ms, 1, #ms - 2), slice(ls, 1, #ls - 1))
  if not batch then
    fail(string.format("%s: the batch dims of loc (shape %s) and %s (shape %s) do not broadcast", cname,
      shape_str(ls), key, shape_str(ms)))
  end
  local self = setmetatable({}, MultivariateNormal)
  rawset(self, key, mat:expand(concat(batch, {n, n})))
  rawset(self, "loc", loc:expand(concat(batch, {n})))
  base_init(self, batch, {n}, validate, loc:dtype())
  if validating(self) then
    check_param(cname, "loc", self.loc, C.real_vector)
    check_param(cname, key, rawget(self, key), key == "scale_tril" and C.lower_cholesky or C.positive_definite)
  end
  local L
  if key == "scale_tril" then
    L = mat
  elseif key == "covariance_matrix" then
    L = pt.linalg.cholesky(mat)
  else
    L = precision_to_scale_tril(mat)
  end
  rawset(self, "_unbroadcasted_scale_tril", L)
  return self
end

-- scale_tril, covariance_matrix (L L^T) and precision_matrix from _unbroadcasted_scale_tril L, each
-- expanded to matrix_shape(self) and computed once (MultivariateNormal, Wishart)
local function scale_tril_props(cls, matrix_shape)
  cls._props.scale_tril = lazy("scale_tril", function(self)
    return self._unbroadcasted_scale_tril:expand(matrix_shape(self))
  end)
  cls._props.covariance_matrix = lazy("covariance_matrix", function(self)
    local L = self._unbroadcasted_scale_tril
    return pt.matmul(L, L.mT):expand(matrix_shape(self))
  end)
  cls._props.precision_matrix = lazy("precision_matrix", function(self)
    -- torch's cholesky_inverse(L): (L L^T)^-1 = L^-T L^-1
    local L = self._unbroadcasted_scale_tril
    local Linv = pt.linalg.solve_triangular(L, pt.eye(L:size(-1), {dtype = L:dtype()}):expand(L:size()), {upper = false})
    return pt.matmul(Linv.mT, Linv):expand(matrix_shape(self))
  end)
end

scale_tril_props(MultivariateNormal, function(self)
  return concat(self.batch_shape, self.event_shape, self.event_shape)
end)
MultivariateNormal._props.mean = function(self) return self.loc end
MultivariateNormal._props.mode = function(self) return self.loc end
MultivariateNormal._props.variance = function(self)
  return self._unbroadcasted_scale_tril:pow(2):sum(-1):expand(concat(self.batch_shape, self.event_shape))
end

function MultivariateNormal:rsample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "rsample"))
  local eps = pt.randn(shape, {dtype = self._dt})
  return self.loc + pt.matmul(self._unbroadcasted_scale_tril, eps:unsqueeze(-1)):squeeze(-1)
end

local function half_log_det(L) return L:diagonal(0, -2, -1):log():sum(-1) end

function MultivariateNormal:log_prob(value)
  value = self:_value(value, "log_prob")
  local diff = value - self.loc
  local m = batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
  return -0.5 * (self.event_shape[1] * LOG_2PI + m) - half_log_det(self._unbroadcasted_scale_tril)
end

function MultivariateNormal:entropy()
  local H = 0.5 * self.event_shape[1] * (1.0 + LOG_2PI) + half_log_det(self._unbroadcasted_scale_tril)
  if #self.batch_shape == 0 then return H end
  return H:expand(self.batch_shape)
end

-- ------------------------------------------------------------------ LowRankMultivariateNormal

local function batch_mv(m, v) return pt.matmul(m, v:unsqueeze(-1)):squeeze(-1) end

-- the identity plus W^T D^-1 W, factored (torch's _batch_capacitance_tril)
local function capacitance_tril(W, Dg)
  local m = W:size(-1)
  local Wt_Dinv = W.mT / Dg:unsqueeze(-2)
  local K = pt.matmul(Wt_Dinv, W) + pt.eye(m, {dtype = W:dtype()})
  return pt.linalg.cholesky(K)
end

local function lowrank_logdet(Dg, cap)
  return 2 * cap:diagonal(0, -2, -1):log():sum(-1) + Dg:log():sum(-1)
end

local function lowrank_mahalanobis(W, Dg, x, cap)
  local Wt_Dinv = W.mT / Dg:unsqueeze(-2)
  local Wt_Dinv_x = batch_mv(Wt_Dinv, x)
  return (x:pow(2) / Dg):sum(-1) - batch_mahalanobis(cap, Wt_Dinv_x)
end

local LowRankMultivariateNormal = class("LowRankMultivariateNormal", Distribution, true)
LowRankMultivariateNormal.has_rsample = true
LowRankMultivariateNormal._params = {loc = 1, cov_factor = 2, cov_diag = 1}
LowRankMultivariateNormal._arg_names = {"loc", "cov_factor", "cov_diag"}
LowRankMultivariateNormal._support_c = C.real_vector

function LowRankMultivariateNormal._new(...)
  local cname = "LowRankMultivariateNormal"
  local vals, validate = parse(cname, {"loc", "cov_factor", "cov_diag"}, ...)
  local loc = tensor_arg(cname, "loc", vals.loc, 1)
  local W = tensor_arg(cname, "cov_factor", vals.cov_factor, 2)
  local Dg = tensor_arg(cname, "cov_diag", vals.cov_diag, 1)
  local n = loc:size(-1)
  if W:size(-2) ~= n then
    fail(string.format("%s: cov_factor must be a batch of %d x m matrices (loc's last dim is %d), got shape %s", cname,
      n, n, shape_str(W:size())))
  end
  if Dg:size(-1) ~= n then
    fail(string.format("%s: cov_diag must be a batch of vectors of size %d, got shape %s", cname, n, shape_str(Dg:size())))
  end
  local ls, ws, ds = loc:size(), W:size(), Dg:size()
  local shape = broadcast_shapes(concat(ls, {1}), ws)
  shape = shape and broadcast_shapes(shape, concat(ds, {1}))
  if not shape then
    fail(string.format("%s: the batch shapes of loc %s, cov_factor %s and cov_diag %s do not broadcast", cname,
      shape_str(ls), shape_str(ws), shape_str(ds)))
  end
  local vshape = slice(shape, 1, #shape - 1)
  local self = setmetatable({}, LowRankMultivariateNormal)
  rawset(self, "loc", loc:expand(vshape))
  rawset(self, "cov_factor", W:expand(shape))
  rawset(self, "cov_diag", Dg:expand(vshape))
  rawset(self, "_unbroadcasted_cov_factor", W)
  rawset(self, "_unbroadcasted_cov_diag", Dg)
  base_init(self, slice(vshape, 1, #vshape - 1), {n}, validate, loc:dtype())
  if validating(self) then
    check_param(cname, "loc", self.loc, C.real_vector)
    check_param(cname, "cov_factor", self.cov_factor, C.independent(C.real, 2))
    check_param(cname, "cov_diag", self.cov_diag, C.independent(C.positive, 1))
  end
  rawset(self, "_capacitance_tril", capacitance_tril(W, Dg))
  return self
end

function LowRankMultivariateNormal:_expand_into(new, batch_shape)
  local n, m = self.event_shape[1], self._unbroadcasted_cov_factor:size(-1)
  rawset(new, "loc", self.loc:expand(concat(batch_shape, {n})))
  rawset(new, "cov_diag", self.cov_diag:expand(concat(batch_shape, {n})))
  rawset(new, "cov_factor", self.cov_factor:expand(concat(batch_shape, {n, m})))
end

local function lowrank_matrix_shape(self) return concat(self.batch_shape, self.event_shape, self.event_shape) end

LowRankMultivariateNormal._props.mean = function(self) return self.loc end
LowRankMultivariateNormal._props.mode = function(self) return self.loc end
LowRankMultivariateNormal._props.variance = function(self)
  return (self._unbroadcasted_cov_factor:pow(2):sum(-1) + self._unbroadcasted_cov_diag)
    :expand(concat(self.batch_shape, self.event_shape))
end
LowRankMultivariateNormal._props.scale_tril = lazy("scale_tril", function(self)
  local W, Dg = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
  local n = self.event_shape[1]
  local dsqrt = Dg:sqrt():unsqueeze(-1)
  local Dinvsqrt_W = W / dsqrt
  local K = pt.matmul(Dinvsqrt_W, Dinvsqrt_W.mT) + pt.eye(n, {dtype = W:dtype()})
  return (dsqrt * pt.linalg.cholesky(K)):expand(lowrank_matrix_shape(self))
end)
LowRankMultivariateNormal._props.covariance_matrix = lazy("covariance_matrix", function(self)
  local W, Dg = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
  return (pt.matmul(W, W.mT) + pt.diag_embed(Dg)):expand(lowrank_matrix_shape(self))
end)
LowRankMultivariateNormal._props.precision_matrix = lazy("precision_matrix", function(self)
  local W, Dg = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
  local Wt_Dinv = W.mT / Dg:unsqueeze(-2)
  local cap = self._capacitance_tril
  local A = pt.linalg.solve_triangular(cap:expand(concat(slice(Wt_Dinv:size(), 1, Wt_Dinv:dim() - 2),
    slice(cap:size(), cap:dim() - 1, cap:dim()))), Wt_Dinv, {upper = false})
  return (pt.diag_embed(Dg:reciprocal()) - pt.matmul(A.mT, A)):expand(lowrank_matrix_shape(self))
end)

function LowRankMultivariateNormal:rsample(sample_shape)
  local shape = self:_extended_shape(draw(self, sample_shape, "rsample"))
  local W, Dg = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
  local w_shape = concat(slice(shape, 1, #shape - 1), {W:size(-1)})
  local eps_W = pt.randn(w_shape, {dtype = self._dt})
  local eps_D = pt.randn(shape, {dtype = self._dt})
  return self.loc + batch_mv(W, eps_W) + Dg:sqrt() * eps_D
end

function LowRankMultivariateNormal:log_prob(value)
  value = self:_value(value, "log_prob")
  local W, Dg = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
  local diff = value - self.loc
  local M = lowrank_mahalanobis(W, Dg, diff, self._capacitance_tril)
  local log_det = lowrank_logdet(Dg, self._capacitance_tril)
  return -0.5 * (self.event_shape[1] * LOG_2PI + log_det + M)
end

function LowRankMultivariateNormal:entropy()
  local log_det = lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)
  local H = 0.5 * (self.event_shape[1] * (1.0 + LOG_2PI) + log_det)
  if #self.batch_shape == 0 then return H end
  return H:expand(self.batch_shape)
end

-- ------------------------------------------------------------------ Wishart

local Wishart = class("Wishart", Distribution, true)
Wishart.has_rsample = true
Wishart._arg_names = {"df", "covariance_matrix", "precision_matrix", "scale_tril"}
Wishart._support_c = C.positive_definite

function Wishart._new(...)
  local cname = "Wishart"
  local vals, validate = parse(cname, {"df", "covariance_matrix", "precision_matrix", "scale_tril"}, ...)
  local given = {}
  for _, k in ipairs {"covariance_matrix", "precision_matrix", "scale_tril"} do
    if vals[k] ~= nil then given[#given + 1] = k end
  end
  if #given ~= 1 then
    fail(string.format("%s: exactly one of covariance_matrix, precision_matrix or scale_tril must be given, got %s",
      cname, #given == 0 and "none" or table.concat(given, " and ")))
  end
  local key = given[1]
  local mat = tensor_arg(cname, key, vals[key], 2)
  local ms = mat:size()
  if ms[#ms] ~= ms[#ms - 1] then
    fail(string.format("%s: %s must hold square matrices, got shape %s", cname, key, shape_str(ms)))
  end
  local p = ms[#ms]
  local df = vals.df
  local batch
  if type(df) == "number" then
    batch = slice(ms, 1, #ms - 2)
    df = pt.tensor(df, {dtype = mat:dtype()})
  elseif is_tensor(df) then
    batch = broadcast_shapes(slice(ms, 1, #ms - 2), df:size())
    if not batch then
      fail(string.format("%s: df of shape %s does not broadcast with the batch shape %s of %s", cname,
        shape_str(df:size()), shape_str(slice(ms, 1, #ms - 2)), key))
    end
    df = df:expand(batch)
  else
    fail(cname .. ": df must be a number or a Tensor, got " .. typename(df))
  end
  if df:le(p - 1):any():item() then
    fail(string.format("%s: df must be greater than ndim - 1 = %d, got %s", cname, p - 1,
      num(df:min():item())))
  end
  local self = setmetatable({df = df}, Wishart)
  rawset(self, key, mat:expand(concat(batch, {p, p})))
  base_init(self, batch, {p, p}, validate, mat:dtype())
  if validating(self) then
    check_param(cname, key, rawget(self, key), key == "scale_tril" and C.lower_cholesky or C.positive_definite)
  end
  local L
  if key == "scale_tril" then L = mat
  elseif key == "covariance_matrix" then L = pt.linalg.cholesky(mat)
  else L = precision_to_scale_tril(mat) end
  rawset(self, "_unbroadcasted_scale_tril", L)
  return self
end

function Wishart:_expand_into(new, batch_shape)
  local p = self.event_shape[1]
  rawset(new, "df", self.df:expand(batch_shape))
  for _, k in ipairs {"covariance_matrix", "precision_matrix", "scale_tril"} do
    local v = rawget(self, k)
    if v ~= nil then rawset(new, k, v:expand(concat(batch_shape, {p, p}))) end
  end
end

scale_tril_props(Wishart, function(self) return concat(self.batch_shape, self.event_shape) end)

local function df_matrix(self) return self.df:reshape(concat(self.batch_shape, {1, 1})) end

Wishart._props.mean = function(self) return df_matrix(self) * self.covariance_matrix end
Wishart._props.mode = function(self)
  local factor = self.df - self.event_shape[1] - 1
  factor = pt.where(factor:le(0), nan, factor)
  return factor:reshape(concat(self.batch_shape, {1, 1})) * self.covariance_matrix
end
Wishart._props.variance = function(self)
  local V = self.covariance_matrix
  local d = V:diagonal(0, -2, -1)
  return df_matrix(self) * (V:pow(2) + d:unsqueeze(-1) * d:unsqueeze(-2))
end

-- Bartlett's decomposition: L A A^T L^T with sqrt(chi2) on A's diagonal and normals below it
function Wishart:rsample(sample_shape)
  sample_shape = draw(self, sample_shape, "rsample")
  local p = self.event_shape[1]
  local dtype = self._dt
  local chi2_df = self.df:unsqueeze(-1) - pt.arange(0, p, {dtype = dtype}):expand(concat(self.batch_shape, {p}))
  local chi2 = Gamma(0.5 * chi2_df, pt.full(chi2_df:size(), 0.5, {dtype = dtype}), {validate_args = false})
  local diag = chi2:rsample(sample_shape):sqrt()
  local eps = finfo(dtype).eps
  diag = pt.where(diag:ge(eps), diag, eps)
  local lower = pt.randn(concat(sample_shape, self.batch_shape, {p, p}), {dtype = dtype}):tril(-1)
  local A = pt.diag_embed(diag) + lower
  local chol = pt.matmul(self._unbroadcasted_scale_tril, A)
  return pt.matmul(chol, chol.mT)
end

local LOG_2 = math.log(2)

local function mvdigamma(x, p)
  return (x:unsqueeze(-1) - pt.arange(0, p, {dtype = x:dtype()}) / 2):digamma():sum(-1)
end

function Wishart:log_prob(value)
  value = self:_value(value, "log_prob")
  local nu, p = self.df, self.event_shape[1]
  local L = self._unbroadcasted_scale_tril
  local _, logabsdet = pt.linalg.slogdet(value)
  local trace = pt.cholesky_solve(value, L):diagonal(0, -2, -1):sum(-1)
  return -nu * (p * LOG_2 / 2 + L:diagonal(0, -2, -1):log():sum(-1)) - pt.mvlgamma(nu / 2, p) +
    (nu - p - 1) / 2 * logabsdet - trace / 2
end

function Wishart:entropy()
  local nu, p = self.df, self.event_shape[1]
  local L = self._unbroadcasted_scale_tril
  return (p + 1) * (p * LOG_2 / 2 + L:diagonal(0, -2, -1):log():sum(-1)) + pt.mvlgamma(nu / 2, p) -
    (nu - p - 1) / 2 * mvdigamma(nu / 2, p) + nu * p / 2
end

-- ------------------------------------------------------------------ LKJCholesky

-- torch's corr_cholesky: lower triangular, positive diagonal, rows of unit norm
local CORR_CHOLESKY = {desc = "the lower Cholesky factor of a correlation matrix (unit rows)", event_dim = 2,
  check = function(v)
    local n = v:size(-1)
    local tol = finfo(v:dtype()).eps * n * 10
    local row_norm = v:detach():pow(2):sum(-1):sqrt()
    local unit = (row_norm - 1):abs():le(tol):all(-1)
    return C.lower_cholesky.check(v) & unit
  end}

local LKJCholesky = class("LKJCholesky", Distribution, true)
LKJCholesky._params = {concentration = 0}
LKJCholesky._arg_names = {"concentration"}
LKJCholesky._support_c = CORR_CHOLESKY

function LKJCholesky._new(...)
  local cname = "LKJCholesky"
  local vals, validate = parse(cname, {"dim", "concentration"}, ...)
  local dim = vals.dim
  if math.type(dim) ~= "integer" and not (type(dim) == "number" and math.tointeger(dim)) then
    fail(cname .. ": dim must be an integer, got " .. tostring(dim))
  end
  dim = math.tointeger(dim)
  if dim < 2 then fail(string.format("%s: dim must be at least 2, got %d", cname, dim)) end
  if vals.concentration == nil then vals.concentration = 1.0 end
  local self = elementwise_new(LKJCholesky, cname, {"concentration"}, {C.positive}, {concentration = vals.concentration},
    validate)
  rawset(self, "dim", dim)
  rawset(self, "event_shape", {dim, dim})
  return self
end

-- the Beta of the onion method's radii (torch's self._beta)
function LKJCholesky:_beta()
  local c, dim = self.concentration, self.dim
  local marginal = c + 0.5 * (dim - 2)
  local offset = pt.cat({pt.zeros({1}, {dtype = self._dt}), pt.arange(0, dim - 1, {dtype = self._dt})})
  return Beta(offset + 0.5, marginal:unsqueeze(-1) - 0.5 * offset, {validate_args = false})
end

function LKJCholesky:_expand_into(new, batch_shape)
  rawset(new, "concentration", self.concentration:expand(batch_shape))
end

function LKJCholesky:sample(sample_shape)
  sample_shape = draw(self, sample_shape, "sample")
  return pt.no_grad(function()
    local y = self:_beta():sample(sample_shape):unsqueeze(-1)
    local u_normal = pt.randn(self:_extended_shape(sample_shape), {dtype = y:dtype()}):tril(-1)
    local u = u_normal / u_normal:pow(2):sum(-1, true):sqrt()
    -- the first row is 0 / 0: zero it
    local first_row = pt.arange(1, self.dim + 1):eq(1):unsqueeze(-1)
    u = pt.where(first_row, 0, u)
    local w = y:sqrt() * u
    local tiny = finfo(w:dtype()).tiny
    local diag = (1 - w:pow(2):sum(-1)):clamp_min(tiny):sqrt()
    return w + pt.diag_embed(diag)
  end)
end

function LKJCholesky:log_prob(value)
  value = self:_value(value, "log_prob")
  local dim = self.dim
  local diag = value:diagonal(0, -1, -2):narrow(-1, 2, dim - 1)
  local order = pt.arange(2, dim + 1, {dtype = self._dt})
  order = 2 * (self.concentration - 1):unsqueeze(-1) + dim - order
  local unnormalized = (order * diag:log()):sum(-1)
  local dm1 = dim - 1
  local alpha = self.concentration + 0.5 * dm1
  local denominator = alpha:lgamma() * dm1
  local numerator = pt.mvlgamma(alpha - 0.5, dm1)
  local pi_constant = 0.5 * dm1 * math.log(math.pi)
  return unnormalized - (pi_constant + numerator - denominator)
end

-- ------------------------------------------------------------------ Independent

local Independent = class("Independent", Distribution, true)

function Independent._new(...)
  local cname = "Independent"
  local vals, validate = parse(cname, {"base_distribution", "reinterpreted_batch_ndims"}, ...)
  local base, n = vals.base_distribution, vals.reinterpreted_batch_ndims
  if not is_distribution(base) then
    fail(cname .. ": base_distribution must be a distribution, got " .. typename(base))
  end
  if math.type(n) ~= "integer" or n < 0 then
    fail(cname .. ": reinterpreted_batch_ndims must be a non-negative integer, got " .. tostring(n))
  end
  if n > #base.batch_shape then
    fail(string.format("%s: reinterpreted_batch_ndims must be at most the number of base_distribution's batch dims, got %d > %d",
      cname, n, #base.batch_shape))
  end
  local shape = concat(base.batch_shape, base.event_shape)
  local event_dim = n + #base.event_shape
  local self = setmetatable({base_dist = base, reinterpreted_batch_ndims = n}, Independent)
  base_init(self, slice(shape, 1, #shape - event_dim), slice(shape, #shape - event_dim + 1, #shape), validate,
    base._dt)
  return self
end

function Independent:__tostring()
  return string.format("Independent(%s, %d)", tostring(self.base_dist), self.reinterpreted_batch_ndims)
end

function Independent:_expand_into(new, batch_shape)
  rawset(new, "base_dist", self.base_dist:expand(concat(batch_shape,
    slice(self.event_shape, 1, self.reinterpreted_batch_ndims))))
end

function Independent:_support()
  return C.independent(self.base_dist:_support(), self.reinterpreted_batch_ndims)
end

Independent._props.has_rsample = function(self) return self.base_dist.has_rsample end
Independent._props.has_enumerate_support = function(self)
  return self.reinterpreted_batch_ndims == 0 and self.base_dist.has_enumerate_support
end
Independent._props.mean = function(self) return self.base_dist.mean end
Independent._props.mode = function(self) return self.base_dist.mode end
Independent._props.variance = function(self) return self.base_dist.variance end

function Independent:sample(sample_shape)
  return self.base_dist:sample(draw(self, sample_shape, "sample"))
end

function Independent:rsample(sample_shape)
  return self.base_dist:rsample(draw(self, sample_shape, "rsample"))
end

function Independent:log_prob(value)
  return sum_rightmost(self.base_dist:log_prob(value), self.reinterpreted_batch_ndims)
end

function Independent:entropy()
  return sum_rightmost(self.base_dist:entropy(), self.reinterpreted_batch_ndims)
end

function Independent:enumerate_support(expand)
  if self.reinterpreted_batch_ndims > 0 then
    fail("Independent.enumerate_support: not implemented for reinterpreted_batch_ndims > 0 (the cartesian product)")
  end
  return self.base_dist:enumerate_support(expand)
end

-- ------------------------------------------------------------------ MixtureSameFamily

local MixtureSameFamily = class("MixtureSameFamily", Distribution, true)

-- a constraint every value meets: the value's shape is checked, its support is left to the
-- components (as torch, whose component log_prob validates the padded value)
local ANY = {desc = "any value", check = function(v) return pt.ones(v:size(), {dtype = "bool"}) end}

function MixtureSameFamily._new(...)
  local cname = "MixtureSameFamily"
  local vals, validate = parse(cname, {"mixture_distribution", "component_distribution"}, ...)
  local mix, comp = vals.mixture_distribution, vals.component_distribution
  if getmetatable(mix) ~= Categorical then
    fail(cname .. ": mixture_distribution must be a Categorical, got " ..
      (is_distribution(mix) and mix._name or typename(mix)))
  end
  if not is_distribution(comp) then
    fail(cname .. ": component_distribution must be a distribution, got " .. typename(comp))
  end
  local mdbs, cbs = mix.batch_shape, comp.batch_shape
  if #cbs == 0 then
    fail(cname .. ": component_distribution must have a batch dim of components, got batch_shape {}")
  end
  local cdbs = slice(cbs, 1, #cbs - 1)
  for k = 0, math.min(#mdbs, #cdbs) - 1 do
    local a, b = mdbs[#mdbs - k], cdbs[#cdbs - k]
    if a ~= 1 and b ~= 1 and a ~= b then
      fail(string.format("%s: mixture_distribution.batch_shape %s is not compatible with component_distribution.batch_shape %s",
        cname, shape_str(mdbs), shape_str(cbs)))
    end
  end
  local km, kc = mix._num_events, cbs[#cbs]
  if km ~= kc then
    fail(string.format("%s: mixture_distribution has %d components, component_distribution.batch_shape[-1] is %d",
      cname, km, kc))
  end
  local self = setmetatable({mixture_distribution = mix, component_distribution = comp, _num_component = km,
    _event_ndims = #comp.event_shape}, MixtureSameFamily)
  base_init(self, cdbs, comp.event_shape, validate, comp._dt)
  return self
end

function MixtureSameFamily:__tostring()
  return string.format("MixtureSameFamily(%s, %s)", tostring(self.mixture_distribution),
    tostring(self.component_distribution))
end

function MixtureSameFamily:_expand_into(new, batch_shape)
  rawset(new, "component_distribution", self.component_distribution:expand(concat(batch_shape, {self._num_component})))
  rawset(new, "mixture_distribution", self.mixture_distribution:expand(batch_shape))
end

function MixtureSameFamily:_support() return self.component_distribution:_support() end

-- x with a size-1 component dim before the event dims
function MixtureSameFamily:_pad(x) return x:unsqueeze(-1 - self._event_ndims) end

-- the mixture probabilities {..., k} as {..., k, 1, ...} (one 1 per event dim)
function MixtureSameFamily:_pad_mixture(x)
  return x:reshape(concat(x:size(), ones_list(self._event_ndims)))
end

MixtureSameFamily._props.mean = function(self)
  local probs = self:_pad_mixture(self.mixture_distribution.probs)
  return (probs * self.component_distribution.mean):sum(-1 - self._event_ndims)
end
MixtureSameFamily._props.variance = function(self)
  -- the law of total variance: E[Var(Y | X)] + Var(E[Y | X])
  local probs = self:_pad_mixture(self.mixture_distribution.probs)
  local comp = self.component_distribution
  local dim = -1 - self._event_ndims
  local mean_cond_var = (probs * comp.variance):sum(dim)
  local var_cond_mean = (probs * (comp.mean - self:_pad(self.mean)):pow(2)):sum(dim)
  return mean_cond_var + var_cond_mean
end

function MixtureSameFamily:log_prob(value)
  value = self:_value(value, "log_prob", validating(self) and ANY or false)
  local lp = self.component_distribution:log_prob(self:_pad(value))
  local log_mix = self.mixture_distribution.logits:log_softmax(-1)
  return (lp + log_mix):logsumexp(-1)
end

function MixtureSameFamily:cdf(value)
  value = self:_value(value, "cdf", validating(self) and ANY or false)
  local c = self.component_distribution:cdf(self:_pad(value))
  return (c * self.mixture_distribution.probs):sum(-1)
end

function MixtureSameFamily:sample(sample_shape)
  sample_shape = draw(self, sample_shape, "sample")
  return pt.no_grad(function()
    local gather_dim = #sample_shape + #self.batch_shape + 1
    local es = self.event_shape
    local mix = self.mixture_distribution:sample(sample_shape) -- {S, B}, 1-based
    local comp = self.component_distribution:sample(sample_shape) -- {S, B, k, E}
    local ms = mix:size()
    local idx = mix:reshape(concat(ms, ones_list(#es + 1))):expand(concat(ms, {1}, es))
    return comp:gather(gather_dim, idx):squeeze(gather_dim)
  end)
end

-- ------------------------------------------------------------------ transforms, TransformedDistribution

-- torch.distributions.transforms (the shape-preserving ones): t(x) = t:forward(x), t:inverse(y)
-- (or t.inv(y)), t:log_abs_det_jacobian(x, y); domain and codomain are constraints with an
-- event_dim; sign is +1 / -1 (a tensor for AffineTransform). cache_size = 1 keeps the last
-- (x, y) pair: inverse(y) of the y forward last returned gives that x back exactly.
local Transform = {__name = "pt.distributions.Transform", _name = "Transform", bijective = true, sign = 1,
  domain = C.real, codomain = C.real}
Transform.__index = Transform
M.Transform = Transform

local function event_dim_of(c) return c.event_dim or 0 end

local function transform_class(name, parent)
  local cls = {__name = "pt.distributions." .. name, _name = name}
  cls.__index = cls
  cls.__call = function(self, x) return self:forward(x) end
  cls.__tostring = function(self) return self._name .. "()" end
  setmetatable(cls, {__index = parent or Transform, __call = function(c, ...) return c._new(...) end})
  M[name] = cls
  return cls
end

local function cache_arg(cname, opts)
  local n = opts and opts.cache_size or 0
  if n ~= 0 and n ~= 1 then fail(cname .. ": cache_size must be 0 or 1, got " .. tostring(n)) end
  return n
end

local function new_transform(cls, opts, fields)
  local self = setmetatable(fields or {}, cls)
  self._cache_size = cache_arg(cls._name, opts)
  return self
end

function Transform:forward(x)
  if not is_tensor(x) then fail(self._name .. ": x must be a Tensor, got " .. typename(x)) end
  if self._cache_size == 1 and rawequal(self._cx, x) then return self._cy end
  local y = self:_call(x)
  if self._cache_size == 1 then self._cx, self._cy = x, y end
  return y
end

function Transform:inverse(y)
  if not is_tensor(y) then fail(self._name .. ".inverse: y must be a Tensor, got " .. typename(y)) end
  if self._cache_size == 1 and rawequal(self._cy, y) then return self._cx end
  local x = self:_inverse(y)
  if self._cache_size == 1 then self._cx, self._cy = x, y end
  return x
end

function Transform:log_abs_det_jacobian(_, _)
  fail(self._name .. ".log_abs_det_jacobian: not implemented for " .. self._name .. " (as in torch 1.13)")
end

function Transform:forward_shape(shape) return shape end
function Transform:inverse_shape(shape) return shape end

-- torch's Transform.event_dim: the domain's and the codomain's event_dim, where they agree
local function transform_event_dim(self)
  local a, b = event_dim_of(self.domain), event_dim_of(self.codomain)
  if a ~= b then
    fail(string.format("%s.event_dim: domain.event_dim (%d) and codomain.event_dim (%d) differ", tostring(self), a, b))
  end
  return a
end

-- t.inv: the inverse transform (torch's _InverseTransform): a function-like object
local InverseTransform = {__name = "pt.distributions.InverseTransform", _name = "InverseTransform"}
InverseTransform.__index = function(self, k)
  if k == "domain" then return self._t.codomain elseif k == "codomain" then return self._t.domain
  elseif k == "sign" then return self._t.sign elseif k == "bijective" then return self._t.bijective
  elseif k == "inv" then return self._t elseif k == "event_dim" then return transform_event_dim(self) end
  return InverseTransform[k]
end
InverseTransform.__call = function(self, y) return self._t:inverse(y) end
InverseTransform.__tostring = function(self) return "InverseTransform(" .. tostring(self._t) .. ")" end
function InverseTransform:forward(y) return self._t:inverse(y) end
function InverseTransform:inverse(x) return self._t:forward(x) end
function InverseTransform:log_abs_det_jacobian(x, y) return -self._t:log_abs_det_jacobian(y, x) end
function InverseTransform:forward_shape(shape) return self._t:inverse_shape(shape) end
function InverseTransform:inverse_shape(shape) return self._t:forward_shape(shape) end

local function with_inv(cls)
  local base_index = cls.__index
  cls.__index = function(self, k)
    if k == "inv" then return setmetatable({_t = self}, InverseTransform) end
    if k == "event_dim" then return transform_event_dim(self) end
    if type(base_index) == "table" then return base_index[k] end
    return base_index(self, k)
  end
end
local ExpTransform = transform_class("ExpTransform")
ExpTransform.codomain = C.positive
function ExpTransform._new(opts) return new_transform(ExpTransform, opts) end
function ExpTransform:_call(x) return x:exp() end
function ExpTransform:_inverse(y) return y:log() end
function ExpTransform:log_abs_det_jacobian(x, _) return x end

local PowerTransform = transform_class("PowerTransform")
PowerTransform.domain = C.positive
PowerTransform.codomain = C.positive
function PowerTransform._new(exponent, opts)
  if type(exponent) ~= "number" and not is_tensor(exponent) then
    fail("PowerTransform: exponent must be a number or a Tensor, got " .. typename(exponent))
  end
  return new_transform(PowerTransform, opts, {exponent = exponent})
end
function PowerTransform:_call(x) return x:pow(self.exponent) end
function PowerTransform:_inverse(y) return y:pow(1 / self.exponent) end
function PowerTransform:log_abs_det_jacobian(x, y) return (self.exponent * y / x):abs():log() end
function PowerTransform:forward_shape(shape)
  return is_tensor(self.exponent) and broadcast_shapes(shape, self.exponent:size()) or shape
end
PowerTransform.inverse_shape = PowerTransform.forward_shape

local SigmoidTransform = transform_class("SigmoidTransform")
SigmoidTransform.codomain = C.unit_interval
function SigmoidTransform._new(opts) return new_transform(SigmoidTransform, opts) end
function SigmoidTransform:_call(x)
  local f = finfo(x:dtype())
  return x:sigmoid():clamp(f.tiny, 1 - f.eps)
end
function SigmoidTransform:_inverse(y)
  local f = finfo(y:dtype())
  y = y:clamp(f.tiny, 1 - f.eps)
  return y:log() - (-y):log1p()
end
function SigmoidTransform:log_abs_det_jacobian(x, _) return -softplus(-x) - softplus(x) end

local TanhTransform = transform_class("TanhTransform")
TanhTransform.codomain = {desc = "in [-1, 1]", check = function(v) return v:ge(-1) & v:le(1) end}
function TanhTransform._new(opts) return new_transform(TanhTransform, opts) end
function TanhTransform:_call(x) return x:tanh() end
function TanhTransform:_inverse(y) return 0.5 * (y:log1p() - (-y):log1p()) end
function TanhTransform:log_abs_det_jacobian(x, _)
  -- torch's stable form: log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x))
  return 2 * (math.log(2) - x - softplus(-2 * x))
end

local SoftplusTransform = transform_class("SoftplusTransform")
SoftplusTransform.codomain = C.positive
function SoftplusTransform._new(opts) return new_transform(SoftplusTransform, opts) end
function SoftplusTransform:_call(x) return softplus(x) end
function SoftplusTransform:_inverse(y) return (-y):expm1():neg():log() + y end
function SoftplusTransform:log_abs_det_jacobian(x, _) return -softplus(-x) end

local AbsTransform = transform_class("AbsTransform")
AbsTransform.codomain = C.positive
AbsTransform.bijective = false
function AbsTransform._new(opts) return new_transform(AbsTransform, opts) end
function AbsTransform:_call(x) return x:abs() end
function AbsTransform:_inverse(y) return y end

local AffineTransform = transform_class("AffineTransform")
function AffineTransform._new(loc, scale, opts)
  for _, pair in ipairs {{"loc", loc}, {"scale", scale}} do
    if type(pair[2]) ~= "number" and not is_tensor(pair[2]) then
      fail("AffineTransform: " .. pair[1] .. " must be a number or a Tensor, got " .. typename(pair[2]))
    end
  end
  local ed = opts and opts.event_dim or 0
  if math.type(ed) ~= "integer" or ed < 0 then
    fail("AffineTransform: event_dim must be a non-negative integer, got " .. tostring(ed))
  end
  local o = opts and {cache_size = opts.cache_size}
  local self = new_transform(AffineTransform, o, {loc = loc, scale = scale, event_dim = ed})
  self.domain = C.independent(C.real, ed)
  self.codomain = self.domain
  if is_tensor(scale) then self.sign = scale:sign() else self.sign = scale > 0 and 1 or (scale < 0 and -1 or 0) end
  return self
end
function AffineTransform:__tostring() return "AffineTransform()" end
function AffineTransform:_call(x) return x * self.scale + self.loc end
function AffineTransform:_inverse(y) return (y - self.loc) / self.scale end
function AffineTransform:log_abs_det_jacobian(x, _)
  local scale = self.scale
  local result
  if is_tensor(scale) then
    result = scale:abs():log()
  else
    result = pt.tensor(math.log(math.abs(scale)), {dtype = x:dtype()})
  end
  local shape = broadcast_shapes(x:size(), result:size())
  result = result:expand(shape)
  if self.event_dim > 0 then
    local s = result:size()
    result = result:reshape(concat(slice(s, 1, #s - self.event_dim), {-1})):sum(-1)
  end
  return result
end
function AffineTransform:forward_shape(shape)
  for _, v in ipairs {self.loc, self.scale} do
    if is_tensor(v) then shape = broadcast_shapes(shape, v:size()) or shape end
  end
  return shape
end
AffineTransform.inverse_shape = AffineTransform.forward_shape

-- ComposeTransform({t1, t2, ...}): t2(t1(x)), ...
local ComposeTransform = transform_class("ComposeTransform")
function ComposeTransform._new(parts, opts)
  if type(parts) ~= "table" or getmetatable(parts) ~= nil then
    fail("ComposeTransform: parts must be a table of transforms, got " .. typename(parts))
  end
  local sign, bij = 1, true
  for i, t in ipairs(parts) do
    if type(t) ~= "table" or t.forward == nil or t.inverse == nil then
      fail(string.format("ComposeTransform: part %d is not a transform", i))
    end
    sign = sign * t.sign
    bij = bij and t.bijective
  end
  local self = new_transform(ComposeTransform, opts, {parts = parts, sign = sign, bijective = bij})
  local first, last = parts[1], parts[#parts]
  if not first then
    self.domain, self.codomain = C.real, C.real
    return self
  end
  -- torch's event dims: the most any part needs, carried through the parts' dim changes
  local ed = event_dim_of(last.codomain)
  for i = #parts, 1, -1 do
    ed = math.max(ed + event_dim_of(parts[i].domain) - event_dim_of(parts[i].codomain), event_dim_of(parts[i].domain))
  end
  self.domain = C.independent(first.domain, ed - event_dim_of(first.domain))
  ed = event_dim_of(first.domain)
  for _, t in ipairs(parts) do
    ed = math.max(ed + event_dim_of(t.codomain) - event_dim_of(t.domain), event_dim_of(t.codomain))
  end
  self.codomain = C.independent(last.codomain, ed - event_dim_of(last.codomain))
  return self
end
function ComposeTransform:__tostring()
  local names = {}
  for i, t in ipairs(self.parts) do names[i] = tostring(t) end
  return "ComposeTransform(" .. table.concat(names, ", ") .. ")"
end
function ComposeTransform:_call(x)
  for _, t in ipairs(self.parts) do x = t:forward(x) end
  return x
end
function ComposeTransform:_inverse(y)
  for i = #self.parts, 1, -1 do y = self.parts[i]:inverse(y) end
  return y
end
function ComposeTransform:log_abs_det_jacobian(x, y)
  if #self.parts == 0 then return pt.zeros_like(x) end
  local xs = {x}
  for i = 1, #self.parts - 1 do xs[i + 1] = self.parts[i]:forward(xs[i]) end
  xs[#self.parts + 1] = y
  local total
  local ed = event_dim_of(self.domain)
  for i, t in ipairs(self.parts) do
    local term = sum_rightmost(t:log_abs_det_jacobian(xs[i], xs[i + 1]), ed - event_dim_of(t.domain))
    ed = ed + event_dim_of(t.codomain) - event_dim_of(t.domain)
    total = total and total + term or term
  end
  return total
end
function ComposeTransform:forward_shape(shape)
  for _, t in ipairs(self.parts) do shape = t:forward_shape(shape) end
  return shape
end
function ComposeTransform:inverse_shape(shape)
  for i = #self.parts, 1, -1 do shape = self.parts[i]:inverse_shape(shape) end
  return shape
end

-- torch's StickBreakingTransform: R^K -> the (K+1)-simplex
local StickBreakingTransform = transform_class("StickBreakingTransform")
StickBreakingTransform.domain = C.real_vector
StickBreakingTransform.codomain = C.simplex
function StickBreakingTransform._new(opts) return new_transform(StickBreakingTransform, opts) end

local function stick_offset(k, dtype)
  -- k + 1 - (1, 2, ..., k)
  return pt.arange(k, 0, -1, {dtype = dtype})
end

local function pad_last(t, value, at_end)
  local s = t:size()
  s[#s] = 1
  local fill = pt.full(s, value, {dtype = t:dtype()})
  return pt.cat(at_end and {t, fill} or {fill, t}, -1)
end

function StickBreakingTransform:_call(x)
  local k = x:size(-1)
  local z = SigmoidTransform._call(self, x - stick_offset(k, x:dtype()):log())
  local z_cumprod = (1 - z):cumprod(-1)
  return pad_last(z, 1, true) * pad_last(z_cumprod, 1, false)
end

function StickBreakingTransform:_inverse(y)
  local n = y:size(-1)
  local y_crop = y:narrow(-1, 1, n - 1)
  local offset = stick_offset(n - 1, y:dtype())
  local sf = 1 - y_crop:cumsum(-1)
  local tiny = finfo(y:dtype()).tiny
  sf = pt.where(sf:ge(tiny), sf, tiny)
  return y_crop:log() - sf:log() + offset:log()
end

function StickBreakingTransform:log_abs_det_jacobian(x, y)
  local k = x:size(-1)
  x = x - stick_offset(k, x:dtype()):log()
  return (-x + pt.nn.functional.logsigmoid(x) + y:narrow(-1, 1, y:size(-1) - 1):log()):sum(-1)
end

function StickBreakingTransform:forward_shape(shape)
  local out = slice(shape, 1, #shape)
  out[#out] = out[#out] + 1
  return out
end

function StickBreakingTransform:inverse_shape(shape)
  local out = slice(shape, 1, #shape)
  out[#out] = out[#out] - 1
  return out
end

for _, cls in ipairs {ExpTransform, PowerTransform, SigmoidTransform, TanhTransform, SoftplusTransform, AbsTransform,
                      AffineTransform, ComposeTransform, StickBreakingTransform} do
  with_inv(cls)
end

local function is_transform(t)
  return type(t) == "table" and type(t.forward) == "function" and type(t.inverse) == "function"
end

local TransformedDistribution = class("TransformedDistribution", Distribution, true)
local transformed_init
TransformedDistribution._repr_props = true

function TransformedDistribution._new(...)
  local cname = "TransformedDistribution"
  -- (base_distribution, transforms[, {validate_args=}]): transforms may be a plain list, so
  -- not through parse
  local base, ts, opts = ...
  if select("#", ...) > 3 then fail(cname .. ": expected at most 3 arguments (base_distribution, transforms, options)") end
  local validate
  if opts ~= nil then
    if type(opts) ~= "table" then fail(cname .. ": options must be a table, got " .. typename(opts)) end
    for k, v in pairs(opts) do
      if k ~= "validate_args" then fail(string.format("%s: unknown option '%s' (expected validate_args)", cname, tostring(k))) end
      if type(v) ~= "boolean" then fail(cname .. ": validate_args must be a boolean, got " .. typename(v)) end
      validate = v
    end
  end
  if not is_distribution(base) then
    fail(cname .. ": base_distribution must be a distribution, got " .. typename(base))
  end
  if is_transform(ts) then ts = {ts} end
  if type(ts) ~= "table" then fail(cname .. ": transforms must be a transform or a table of transforms, got " .. typename(ts)) end
  for i, t in ipairs(ts) do
    if not is_transform(t) then fail(string.format("%s: transforms[%d] is not a transform", cname, i)) end
  end
  return transformed_init(setmetatable({}, TransformedDistribution), cname, base, ts, validate)
end

-- torch's TransformedDistribution.__init__ on self (a TransformedDistribution or a subclass)
transformed_init = function(self, cname, base, ts, validate)
  local transform = ComposeTransform(ts)
  local base_shape = concat(base.batch_shape, base.event_shape)
  local base_event_dim = #base.event_shape
  local dom_ed = event_dim_of(transform.domain)
  if #base_shape < dom_ed then
    fail(string.format("%s: base_distribution needs at least %d dims, got shape %s", cname, dom_ed, shape_str(base_shape)))
  end
  local forward_shape = transform:forward_shape(base_shape)
  local expanded = transform:inverse_shape(forward_shape)
  if not same_shape(base_shape, expanded) then
    base = base:expand(slice(expanded, 1, #expanded - base_event_dim))
  end
  local reinterpreted = dom_ed - base_event_dim
  if reinterpreted > 0 then base = Independent(base, reinterpreted) end
  local event_dim = event_dim_of(transform.codomain) + math.max(base_event_dim - dom_ed, 0)
  local cut = #forward_shape - event_dim
  rawset(self, "base_dist", base)
  rawset(self, "transforms", ts)
  base_init(self, slice(forward_shape, 1, cut), slice(forward_shape, cut + 1, #forward_shape), validate, base._dt)
  return self
end

function TransformedDistribution:__tostring()
  return "TransformedDistribution(" .. tostring(self.base_dist) .. ")"
end

function TransformedDistribution:_expand_into(new, batch_shape)
  local shape = concat(batch_shape, self.event_shape)
  for i = #self.transforms, 1, -1 do shape = self.transforms[i]:inverse_shape(shape) end
  local base_batch = slice(shape, 1, #shape - #self.base_dist.event_shape)
  rawset(new, "base_dist", self.base_dist:expand(base_batch))
end

function TransformedDistribution:_support()
  local last = self.transforms[#self.transforms]
  if not last then return self.base_dist:_support() end
  local c = last.codomain
  return C.independent(c, #self.event_shape - event_dim_of(c))
end

TransformedDistribution._props.has_rsample = function(self) return self.base_dist.has_rsample end

function TransformedDistribution:sample(sample_shape)
  sample_shape = draw(self, sample_shape, "sample")
  return pt.no_grad(function()
    local x = self.base_dist:sample(sample_shape)
    for _, t in ipairs(self.transforms) do x = t:forward(x) end
    return x
  end)
end

function TransformedDistribution:rsample(sample_shape)
  sample_shape = draw(self, sample_shape, "rsample")
  local x = self.base_dist:rsample(sample_shape)
  for _, t in ipairs(self.transforms) do x = t:forward(x) end
  return x
end

function TransformedDistribution:log_prob(value)
  value = self:_value(value, "log_prob")
  local event_dim = #self.event_shape
  local lp = 0.0
  local y = value
  for i = #self.transforms, 1, -1 do
    local t = self.transforms[i]
    local x = t:inverse(y)
    event_dim = event_dim + event_dim_of(t.domain) - event_dim_of(t.codomain)
    lp = lp - sum_rightmost(t:log_abs_det_jacobian(x, y), event_dim - event_dim_of(t.domain))
    y = x
  end
  return lp + sum_rightmost(self.base_dist:log_prob(y), event_dim - #self.base_dist.event_shape)
end

-- torch's _monotonize_cdf: 1 - cdf where the transforms reverse the order
function TransformedDistribution:_monotonize_cdf(value)
  local sign = 1
  for _, t in ipairs(self.transforms) do sign = sign * t.sign end
  if sign == 1 then return value end
  return sign * (value - 0.5) + 0.5
end

function TransformedDistribution:cdf(value)
  value = self:_value(value, "cdf", false)
  for i = #self.transforms, 1, -1 do value = self.transforms[i]:inverse(value) end
  if validating(self) then self.base_dist:_value(value, "cdf") end
  return self:_monotonize_cdf(self.base_dist:cdf(value))
end

function TransformedDistribution:icdf(value)
  value = self:_value(value, "icdf", false)
  value = self.base_dist:icdf(self:_monotonize_cdf(value))
  for _, t in ipairs(self.transforms) do value = t:forward(value) end
  return value
end

-- torch's LogisticNormal: a Normal(loc, scale) (at least one batch dim) through StickBreakingTransform
local LogisticNormal = class("LogisticNormal", TransformedDistribution, true)
LogisticNormal._arg_names = {"loc", "scale"}
LogisticNormal._repr_props = true

function LogisticNormal._new(...)
  local cname = "LogisticNormal"
  local vals, validate = parse(cname, {"loc", "scale"}, ...)
  local base = normal_new(cname, vals, validate)
  if #base.batch_shape == 0 then base = base:expand({1}) end
  return transformed_init(setmetatable({}, LogisticNormal), cname, base, {StickBreakingTransform()}, validate)
end

function LogisticNormal:__tostring() return describe(self) end

LogisticNormal._props.loc = function(self) return self.base_dist.base_dist.loc end
LogisticNormal._props.scale = function(self) return self.base_dist.base_dist.scale end

-- torch's Kumaraswamy: a Uniform(0, 1) through u^(1/c0), 1 - ., .^(1/c1)
local Kumaraswamy = class("Kumaraswamy", TransformedDistribution, true)
Kumaraswamy._arg_names = {"concentration1", "concentration0"}

function Kumaraswamy._new(...)
  local cname = "Kumaraswamy"
  local vals, validate = parse(cname, {"concentration1", "concentration0"}, ...)
  local ts = broadcast_all(cname, {"concentration1", "concentration0"}, vals)
  local v = validate
  if v == nil then v = default_validate end
  if v then
    check_param(cname, "concentration1", ts[1], C.positive)
    check_param(cname, "concentration0", ts[2], C.positive)
  end
  local c1, c0 = ts[1], ts[2]
  local base = Uniform(pt.zeros_like(c0), pt.ones_like(c0), {validate_args = validate})
  local self = setmetatable({concentration1 = c1, concentration0 = c0}, Kumaraswamy)
  return transformed_init(self, cname, base,
    {PowerTransform(c0:reciprocal()), AffineTransform(1.0, -1.0), PowerTransform(c1:reciprocal())}, validate)
end

function Kumaraswamy:__tostring() return describe(self) end

function Kumaraswamy:_expand_into(new, batch_shape)
  TransformedDistribution._expand_into(self, new, batch_shape)
  rawset(new, "concentration1", self.concentration1:expand(batch_shape))
  rawset(new, "concentration0", self.concentration0:expand(batch_shape))
end

function Kumaraswamy:_support() return C.unit_interval end

local function kumaraswamy_moment(a, b, n)
  local arg1 = 1 + n / a
  return b * (arg1:lgamma() + b:lgamma() - (arg1 + b):lgamma()):exp()
end

Kumaraswamy._props.mean = function(self) return kumaraswamy_moment(self.concentration1, self.concentration0, 1) end
Kumaraswamy._props.variance = function(self)
  return kumaraswamy_moment(self.concentration1, self.concentration0, 2) - self.mean:pow(2)
end
-- ((c1 - 1) / (c1 c0 - 1))^(1 / c1), nan where a concentration is below 1. (torch 1.13's formula
-- takes log1p(-c0) and gives nan everywhere.)
Kumaraswamy._props.mode = function(self)
  local c1, c0 = self.concentration1, self.concentration0
  local m = ((c1 - 1) / (c1 * c0 - 1)):pow(c1:reciprocal())
  return pt.where(c0:lt(1) | c1:lt(1), nan, m)
end

function Kumaraswamy:entropy()
  local c1, c0 = self.concentration1, self.concentration0
  local t1 = 1 - c1:reciprocal()
  local t0 = 1 - c0:reciprocal()
  local H0 = (c0 + 1):digamma() + EULER
  return t0 + t1 * H0 - c1:log() - c0:log()
end

-- ------------------------------------------------------------------ KL divergence

local kl_registry = {}

local function class_of(d) return getmetatable(d) end

local function parent_class(cls)
  local mt = getmetatable(cls)
  return mt and rawget(mt, "__index")
end

local function is_class(c)
  local n = 0
  while type(c) == "table" and n < 32 do
    if c == Distribution then return true end
    c = parent_class(c)
    n = n + 1
  end
  return false
end

--- register_kl(P, Q, fn): kl_divergence(p, q) calls fn(p, q) for p of class P and q of class Q
function M.register_kl(type_p, type_q, fn)
  if not is_class(type_p) then fail("register_kl: type_p must be a distribution class, got " .. typename(type_p)) end
  if not is_class(type_q) then fail("register_kl: type_q must be a distribution class, got " .. typename(type_q)) end
  if type(fn) ~= "function" then fail("register_kl: fn must be a function, got " .. typename(fn)) end
  kl_registry[type_p] = kl_registry[type_p] or {}
  kl_registry[type_p][type_q] = fn
end

-- (tests) the function registered for exactly (type_p, type_q), or nil: a spec that registers
-- a pair puts the previous one back, so that the files after it see the built-in pairs
function M._kl_registered(type_p, type_q) return kl_registry[type_p] and kl_registry[type_p][type_q] end

-- the most specific registered pair: the smallest distance up both class chains
local function kl_lookup(cp, cq)
  local best, best_d
  local p, dp = cp, 0
  while p do
    local row = kl_registry[p]
    if row then
      local q, dq = cq, 0
      while q do
        if row[q] and (best_d == nil or dp + dq < best_d) then best, best_d = row[q], dp + dq end
        q, dq = parent_class(q), dq + 1
      end
    end
    p, dp = parent_class(p), dp + 1
  end
  return best
end

function M.kl_divergence(p, q)
  if not is_distribution(p) then fail("kl_divergence: p must be a distribution, got " .. typename(p)) end
  if not is_distribution(q) then fail("kl_divergence: q must be a distribution, got " .. typename(q)) end
  local fn = kl_lookup(class_of(p), class_of(q))
  if not fn then
    fail(string.format("kl_divergence: no KL(p || q) is registered for p of type %s and q of type %s", p._name, q._name))
  end
  return fn(p, q)
end

local function kl_normal_normal(p, q)
  local var_ratio = (p.scale / q.scale):pow(2)
  local t1 = ((p.loc - q.loc) / q.scale):pow(2)
  return 0.5 * (var_ratio + t1 - 1 - var_ratio:log())
end

local function kl_bernoulli_bernoulli(p, q)
  local pp, qp = p.probs, q.probs
  local t1 = pp * (softplus(-q.logits) - softplus(-p.logits))
  t1 = pt.where(pp:eq(0), 0, pt.where(qp:eq(0), inf, t1))
  local t2 = (1 - pp) * (softplus(q.logits) - softplus(p.logits))
  t2 = pt.where(pp:eq(1), 0, pt.where(qp:eq(1), inf, t2))
  return t1 + t2
end

local function kl_categorical_categorical(p, q)
  local t = p.probs * (p.logits - q.logits)
  local s = t:size()
  t = pt.where(p.probs:eq(0):expand(s), 0, pt.where(q.probs:eq(0):expand(s), inf, t))
  return t:sum(-1)
end

local function kl_beta_beta(p, q)
  local sum_p = p.concentration1 + p.concentration0
  local sum_q = q.concentration1 + q.concentration0
  local t1 = q.concentration1:lgamma() + q.concentration0:lgamma() + sum_p:lgamma()
  local t2 = p.concentration1:lgamma() + p.concentration0:lgamma() + sum_q:lgamma()
  local t3 = (p.concentration1 - q.concentration1) * p.concentration1:digamma()
  local t4 = (p.concentration0 - q.concentration0) * p.concentration0:digamma()
  local t5 = (sum_q - sum_p) * sum_p:digamma()
  return t1 - t2 + t3 + t4 + t5
end

local function kl_gamma_gamma(p, q)
  local t1 = q.concentration * (p.rate / q.rate):log()
  local t2 = q.concentration:lgamma() - p.concentration:lgamma()
  local t3 = (p.concentration - q.concentration) * p.concentration:digamma()
  local t4 = (q.rate - p.rate) * (p.concentration / p.rate)
  return t1 + t2 + t3 + t4
end

local function kl_dirichlet_dirichlet(p, q)
  local sum_p = p.concentration:sum(-1)
  local sum_q = q.concentration:sum(-1)
  local t1 = sum_p:lgamma() - sum_q:lgamma()
  local t2 = (p.concentration:lgamma() - q.concentration:lgamma()):sum(-1)
  local t3 = p.concentration - q.concentration
  local t4 = p.concentration:digamma() - sum_p:digamma():unsqueeze(-1)
  return t1 - t2 + (t3 * t4):sum(-1)
end

local function kl_exponential_exponential(p, q)
  local rate_ratio = q.rate / p.rate
  return -rate_ratio:log() + rate_ratio - 1
end

local function kl_laplace_laplace(p, q)
  local scale_ratio = p.scale / q.scale
  local loc_abs_diff = (p.loc - q.loc):abs()
  local t1 = -scale_ratio:log()
  local t2 = loc_abs_diff / q.scale
  local t3 = scale_ratio * (-loc_abs_diff / p.scale):exp()
  return t1 + t2 + t3 - 1
end

local function kl_uniform_uniform(p, q)
  local result = ((q.high - q.low) / (p.high - p.low)):log()
  return pt.where(q.low:gt(p.low) | q.high:lt(p.high), inf, result)
end

local function kl_poisson_poisson(p, q)
  return p.rate * (p.rate:log() - q.rate:log()) - (p.rate - q.rate)
end

local function kl_mvn_mvn(p, q)
  if not same_shape(p.event_shape, q.event_shape) then
    fail(string.format("kl_divergence: MultivariateNormal p and q have different event shapes %s and %s",
      shape_str(p.event_shape), shape_str(q.event_shape)))
  end
  local pL, qL = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
  local half_term1 = half_log_det(qL) - half_log_det(pL)
  local ps, qs = pL:size(), qL:size()
  local n = p.event_shape[1]
  local batch = broadcast_shapes(slice(qs, 1, #qs - 2), slice(ps, 1, #ps - 2))
  if not batch then
    fail(string.format("kl_divergence: the batch shapes of p (%s) and q (%s) do not broadcast",
      shape_str(p.batch_shape), shape_str(q.batch_shape)))
  end
  local mshape = concat(batch, {n, n})
  -- in q's dtype, as torch's solve_triangular(qL, pL) (p and q may differ in dtype)
  if pL:dtype() ~= qL:dtype() then pL = pL:to(qL:dtype()) end
  local x = pt.linalg.solve_triangular(qL:expand(mshape), pL:expand(mshape), {upper = false})
  local term2 = x:pow(2):sum({-2, -1})
  local term3 = batch_mahalanobis(qL, q.loc - p.loc)
  return half_term1 + 0.5 * (term2 + term3 - n)
end

local function kl_binomial_binomial(p, q)
  if p.total_count:lt(q.total_count):any():item() then
    fail("kl_divergence: KL between Binomials where q.total_count > p.total_count is not implemented")
  end
  local kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs):log1p() - (-q.probs):log1p())
  return pt.where(p.total_count:gt(q.total_count), inf, kl)
end

local function kl_onehot_onehot(p, q) return kl_categorical_categorical(p._categorical, q._categorical) end

local function kl_independent_independent(p, q)
  if p.reinterpreted_batch_ndims ~= q.reinterpreted_batch_ndims then
    fail(string.format("kl_divergence: Independent p and q reinterpret different numbers of batch dims (%d and %d)",
      p.reinterpreted_batch_ndims, q.reinterpreted_batch_ndims))
  end
  return sum_rightmost(M.kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
end

-- torch reaches LogNormal pairs through TransformedDistribution's (same transforms: the base KL)
local function kl_lognormal_lognormal(p, q) return kl_normal_normal(p.base_dist, q.base_dist) end

M.register_kl(Normal, Normal, kl_normal_normal)
M.register_kl(Bernoulli, Bernoulli, kl_bernoulli_bernoulli)
M.register_kl(Categorical, Categorical, kl_categorical_categorical)
M.register_kl(OneHotCategorical, OneHotCategorical, kl_onehot_onehot)
M.register_kl(Beta, Beta, kl_beta_beta)
M.register_kl(Gamma, Gamma, kl_gamma_gamma)
M.register_kl(Dirichlet, Dirichlet, kl_dirichlet_dirichlet)
M.register_kl(Exponential, Exponential, kl_exponential_exponential)
M.register_kl(Laplace, Laplace, kl_laplace_laplace)
M.register_kl(Uniform, Uniform, kl_uniform_uniform)
M.register_kl(Poisson, Poisson, kl_poisson_poisson)
M.register_kl(MultivariateNormal, MultivariateNormal, kl_mvn_mvn)
M.register_kl(Binomial, Binomial, kl_binomial_binomial)
M.register_kl(Independent, Independent, kl_independent_independent)
M.register_kl(LogNormal, LogNormal, kl_lognormal_lognormal)

local function kl_gumbel_gumbel(p, q)
  local ct1 = p.scale / q.scale
  local ct2 = q.loc / q.scale
  local ct3 = p.loc / q.scale
  local t1 = -ct1:log() - ct2 + ct3
  local t2 = ct1 * EULER
  local t3 = (ct2 + (1 + ct1):lgamma() - ct3):exp()
  return t1 + t2 + t3 - (1 + EULER)
end

local function kl_geometric_geometric(p, q)
  return -p:entropy() - (-q.probs):log1p() / p.probs - q.logits
end

M.register_kl(Gumbel, Gumbel, kl_gumbel_gumbel)
M.register_kl(HalfNormal, HalfNormal, function(p, q) return kl_normal_normal(p.base_dist, q.base_dist) end)
M.register_kl(Geometric, Geometric, kl_geometric_geometric)

-- (in a function of its own: a chunk's active locals are limited to 200)
;(function()
-- the pairs of different families torch 1.13 registers (torch.distributions.kl), over the
-- classes here; an infinite KL has p's parameter's shape, as torch's _infinite_like

local function infinite_like(t) return pt.full(t:size(), inf, {dtype = t:dtype()}) end
local function x_log_x(t) return t * t:log() end

local function kl_bernoulli_poisson(p, q)
  return -p:entropy() - (p.probs * q.rate:log() - q.rate)
end

local function kl_beta_exponential(p, q)
  return -p:entropy() - q.rate:log() + q.rate * (p.concentration1 / (p.concentration1 + p.concentration0))
end

local function kl_beta_gamma(p, q)
  local t1 = -p:entropy()
  local t2 = q.concentration:lgamma() - q.concentration * q.rate:log()
  local t3 = (q.concentration - 1) * (p.concentration1:digamma() - (p.concentration1 + p.concentration0):digamma())
  local t4 = q.rate * p.concentration1 / (p.concentration1 + p.concentration0)
  return t1 + t2 - t3 + t4
end

local function kl_beta_normal(p, q)
  local E_beta = p.concentration1 / (p.concentration1 + p.concentration0)
  local var_normal = q.scale:pow(2)
  local t1 = -p:entropy()
  local t2 = 0.5 * (var_normal * 2 * math.pi):log()
  local t3 = (E_beta * (1 - E_beta) / (p.concentration1 + p.concentration0 + 1) + E_beta:pow(2)) * 0.5
  local t4 = q.loc * E_beta
  local t5 = q.loc:pow(2) * 0.5
  return t1 + t2 + (t3 - t4 + t5) / var_normal
end

local function kl_beta_uniform(p, q)
  local result = -p:entropy() + (q.high - q.low):log()
  return pt.where(q.low:gt(0) | q.high:lt(1), inf, result)
end

local function kl_exponential_gamma(p, q)
  local ratio = q.rate / p.rate
  local t1 = -q.concentration * ratio:log()
  return t1 + ratio + q.concentration:lgamma() + q.concentration * EULER - (1 + EULER)
end

local function kl_exponential_normal(p, q)
  local var_normal = q.scale:pow(2)
  local rate_sqr = p.rate:pow(2)
  local t1 = 0.5 * (rate_sqr * var_normal * 2 * math.pi):log()
  local t2 = rate_sqr:reciprocal()
  local t3 = q.loc / p.rate
  local t4 = q.loc:pow(2) * 0.5
  return t1 - 1 + (t2 - t3 + t4) / var_normal
end

local function kl_gamma_exponential(p, q)
  return -p:entropy() - q.rate:log() + q.rate * p.concentration / p.rate
end

local function kl_gamma_normal(p, q)
  local var_normal = q.scale:pow(2)
  local beta_sqr = p.rate:pow(2)
  local t1 = 0.5 * (beta_sqr * var_normal * 2 * math.pi):log() - p.concentration - p.concentration:lgamma()
  local t2 = 0.5 * (p.concentration:pow(2) + p.concentration) / beta_sqr
  local t3 = q.loc * p.concentration / p.rate
  local t4 = 0.5 * q.loc:pow(2)
  return t1 + (p.concentration - 1) * p.concentration:digamma() + (t2 - t3 + t4) / var_normal
end

local function kl_laplace_normal(p, q)
  local var_normal = q.scale:pow(2)
  local scale_sqr_var_ratio = p.scale:pow(2) / var_normal
  local t1 = 0.5 * (2 * scale_sqr_var_ratio / math.pi):log()
  local t2 = 0.5 * p.loc:pow(2)
  local t3 = p.loc * q.loc
  local t4 = 0.5 * q.loc:pow(2)
  return -t1 + scale_sqr_var_ratio + (t2 - t3 + t4) / var_normal - 1
end

local function kl_normal_laplace(p, q)
  local loc_diff = p.loc - q.loc
  local scale_ratio = p.scale / q.scale
  local loc_diff_scale_ratio = loc_diff / p.scale
  local t1 = scale_ratio:log()
  local t2 = math.sqrt(2 / math.pi) * p.scale * (-0.5 * loc_diff_scale_ratio:pow(2)):exp()
  local t3 = loc_diff * (math.sqrt(0.5) * loc_diff_scale_ratio):erf()
  return -t1 + (t2 + t3) / q.scale - (0.5 * (1 + math.log(0.5 * math.pi)))
end

local function kl_uniform_beta(p, q)
  local common_term = p.high - p.low
  local t1 = common_term:log()
  local t2 = (q.concentration1 - 1) * (x_log_x(p.high) - x_log_x(p.low) - common_term) / common_term
  local t3 = (q.concentration0 - 1) * (x_log_x(1 - p.high) - x_log_x(1 - p.low) + common_term) / common_term
  local t4 = q.concentration1:lgamma() + q.concentration0:lgamma() - (q.concentration1 + q.concentration0):lgamma()
  local result = t3 + t4 - t1 - t2
  return pt.where(p.high:gt(1) | p.low:lt(0), inf, result)
end

local function kl_uniform_exponential(p, q)
  local result = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate):log()
  return pt.where(p.low:lt(0), inf, result)
end

local function kl_uniform_gamma(p, q)
  local common_term = p.high - p.low
  local t1 = common_term:log()
  local t2 = q.concentration:lgamma() - q.concentration * q.rate:log()
  local t3 = (1 - q.concentration) * (x_log_x(p.high) - x_log_x(p.low) - common_term) / common_term
  local t4 = q.rate * (p.high + p.low) / 2
  local result = -t1 + t2 + t3 + t4
  return pt.where(p.low:lt(0), inf, result)
end

local function kl_uniform_normal(p, q)
  local common_term = p.high - p.low
  local t1 = (math.sqrt(math.pi * 2) * q.scale / common_term):log()
  local t2 = common_term:pow(2) / 12
  local t3 = ((p.high + p.low - 2 * q.loc) / 2):pow(2)
  return t1 + 0.5 * (t2 + t3) / q.scale:pow(2)
end

M.register_kl(Bernoulli, Poisson, kl_bernoulli_poisson)
M.register_kl(Beta, Exponential, kl_beta_exponential)
M.register_kl(Beta, Gamma, kl_beta_gamma)
M.register_kl(Beta, Normal, kl_beta_normal)
M.register_kl(Beta, Uniform, kl_beta_uniform)
M.register_kl(Exponential, Gamma, kl_exponential_gamma)
M.register_kl(Exponential, Normal, kl_exponential_normal)
M.register_kl(Gamma, Exponential, kl_gamma_exponential)
M.register_kl(Gamma, Normal, kl_gamma_normal)
M.register_kl(Laplace, Normal, kl_laplace_normal)
M.register_kl(Normal, Laplace, kl_normal_laplace)
M.register_kl(Uniform, Beta, kl_uniform_beta)
M.register_kl(Uniform, Exponential, kl_uniform_exponential)
M.register_kl(Uniform, Gamma, kl_uniform_gamma)
local function kl_exponential_gumbel(p, q)
  local scale_rate_prod = p.rate * q.scale
  local loc_scale_ratio = q.loc / q.scale
  local t1 = scale_rate_prod:log() - 1
  local t2 = loc_scale_ratio:exp() * scale_rate_prod / (scale_rate_prod + 1)
  local t3 = scale_rate_prod:reciprocal()
  return t1 - loc_scale_ratio + t2 + t3
end

local function kl_gamma_gumbel(p, q)
  local beta_scale_prod = p.rate * q.scale
  local loc_scale_ratio = q.loc / q.scale
  local t1 = (p.concentration - 1) * p.concentration:digamma() - p.concentration:lgamma() - p.concentration
  local t2 = beta_scale_prod:log() + p.concentration / beta_scale_prod
  local t3 = loc_scale_ratio:exp() * (1 + beta_scale_prod:reciprocal()):pow(-p.concentration) - loc_scale_ratio
  return t1 + t2 + t3
end

local function kl_gumbel_normal(p, q)
  local param_ratio = p.scale / q.scale
  local t1 = (param_ratio / math.sqrt(2 * math.pi)):log()
  local t2 = (math.pi * param_ratio * 0.5):pow(2) / 3
  local t3 = ((p.loc + p.scale * EULER - q.loc) / q.scale):pow(2) * 0.5
  return -t1 + t2 + t3 - (EULER + 1)
end

local function kl_normal_gumbel(p, q)
  local mean_scale_ratio = p.loc / q.scale
  local var_scale_sqr_ratio = (p.scale / q.scale):pow(2)
  local loc_scale_ratio = q.loc / q.scale
  local t1 = var_scale_sqr_ratio:log() * 0.5
  local t2 = mean_scale_ratio - loc_scale_ratio
  local t3 = (-mean_scale_ratio + 0.5 * var_scale_sqr_ratio + loc_scale_ratio):exp()
  return -t1 + t2 + t3 - (0.5 * (1 + math.log(2 * math.pi)))
end

local function kl_uniform_gumbel(p, q)
  local common_term = q.scale / (p.high - p.low)
  local high_loc_diff = (p.high - q.loc) / q.scale
  local low_loc_diff = (p.low - q.loc) / q.scale
  local t1 = common_term:log() + 0.5 * (high_loc_diff + low_loc_diff)
  local t2 = common_term * ((-high_loc_diff):exp() - (-low_loc_diff):exp())
  return t1 - t2
end

M.register_kl(Uniform, Normal, kl_uniform_normal)
M.register_kl(Exponential, Gumbel, kl_exponential_gumbel)
M.register_kl(Gamma, Gumbel, kl_gamma_gumbel)
M.register_kl(Gumbel, Normal, kl_gumbel_normal)
M.register_kl(Normal, Gumbel, kl_normal_gumbel)
M.register_kl(Uniform, Gumbel, kl_uniform_gumbel)

local function kl_pareto_pareto(p, q)
  local scale_ratio = p.scale / q.scale
  local alpha_ratio = q.alpha / p.alpha
  local t1 = q.alpha * scale_ratio:log()
  local t2 = -alpha_ratio:log()
  local result = t1 + t2 + alpha_ratio - 1
  return pt.where(p.scale:lt(q.scale), inf, result)
end

local function kl_pareto_exponential(p, q)
  local scale_rate_prod = p.scale * q.rate
  local t1 = (p.alpha / scale_rate_prod):log()
  local t2 = p.alpha:reciprocal()
  local t3 = p.alpha * scale_rate_prod / (p.alpha - 1)
  return pt.where(p.alpha:le(1), inf, t1 - t2 + t3 - 1)
end

local function kl_pareto_gamma(p, q)
  local common_term = p.scale:log() + p.alpha:reciprocal()
  local t1 = p.alpha:log() - common_term
  local t2 = q.concentration:lgamma() - q.concentration * q.rate:log()
  local t3 = (1 - q.concentration) * common_term
  local t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
  return pt.where(p.alpha:le(1), inf, t1 + t2 + t3 + t4 - 1)
end

local function kl_pareto_normal(p, q)
  local var_normal = 2 * q.scale:pow(2)
  local common_term = p.scale / (p.alpha - 1)
  local t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale):log()
  local t2 = p.alpha:reciprocal()
  local t3 = p.alpha * common_term:pow(2) / (p.alpha - 2)
  local t4 = (p.alpha * common_term - q.loc):pow(2)
  return pt.where(p.alpha:le(2), inf, t1 - t2 + (t3 + t4) / var_normal - 1)
end

local function kl_uniform_pareto(p, q)
  local support_uniform = p.high - p.low
  local t1 = (q.alpha * q.scale:pow(q.alpha) * support_uniform):log()
  local t2 = (x_log_x(p.high) - x_log_x(p.low) - support_uniform) / support_uniform
  local result = t2 * (q.alpha + 1) - t1
  return pt.where(p.low:lt(q.scale), inf, result)
end

M.register_kl(Pareto, Pareto, kl_pareto_pareto)

-- L^-1 B with L's and B's batch dims broadcast
local function tri_solve(L, B)
  local ls, bs = L:size(), B:size()
  local batch = broadcast_shapes(slice(ls, 1, #ls - 2), slice(bs, 1, #bs - 2))
  return pt.linalg.solve_triangular(L:expand(concat(batch, slice(ls, #ls - 1, #ls))),
    B:expand(concat(batch, slice(bs, #bs - 1, #bs))), {upper = false})
end

local function trace_XXT(X) return X:pow(2):sum({-2, -1}) end

local function same_events(p, q)
  if not same_shape(p.event_shape, q.event_shape) then
    fail(string.format("kl_divergence: (low rank) multivariate normals p and q have different event shapes %s and %s",
      shape_str(p.event_shape), shape_str(q.event_shape)))
  end
end

local function kl_lowrank_lowrank(p, q)
  same_events(p, q)
  local qW, qD, qC = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, q._capacitance_tril
  local pW, pD = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
  local term1 = lowrank_logdet(qD, qC) - lowrank_logdet(pD, p._capacitance_tril)
  local term3 = lowrank_mahalanobis(qW, qD, q.loc - p.loc, qC)
  local A = tri_solve(qC, qW.mT / qD:unsqueeze(-2))
  local term21 = (pD / qD):sum(-1)
  local term22 = trace_XXT(pW * qD:rsqrt():unsqueeze(-1))
  local term23 = trace_XXT(A * pD:sqrt():unsqueeze(-2))
  local term24 = trace_XXT(pt.matmul(A, pW))
  return 0.5 * (term1 + (term21 + term22 - term23 - term24) + term3 - p.event_shape[1])
end

local function kl_mvn_lowrank(p, q)
  same_events(p, q)
  local qW, qD, qC = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag, q._capacitance_tril
  local pL = p._unbroadcasted_scale_tril
  local term1 = lowrank_logdet(qD, qC) - 2 * pL:diagonal(0, -2, -1):log():sum(-1)
  local term3 = lowrank_mahalanobis(qW, qD, q.loc - p.loc, qC)
  local A = tri_solve(qC, qW.mT / qD:unsqueeze(-2))
  local term21 = trace_XXT(pL * qD:rsqrt():unsqueeze(-1))
  local term22 = trace_XXT(pt.matmul(A, pL))
  return 0.5 * (term1 + (term21 - term22) + term3 - p.event_shape[1])
end

local function kl_lowrank_mvn(p, q)
  same_events(p, q)
  local pW, pD = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
  local qL = q._unbroadcasted_scale_tril
  local term1 = 2 * qL:diagonal(0, -2, -1):log():sum(-1) - lowrank_logdet(pD, p._capacitance_tril)
  local term3 = batch_mahalanobis(qL, q.loc - p.loc)
  local term21 = trace_XXT(tri_solve(qL, pW))
  local term22 = trace_XXT(tri_solve(qL, pt.diag_embed(pD:sqrt())))
  return 0.5 * (term1 + (term21 + term22) + term3 - p.event_shape[1])
end

M.register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal, kl_lowrank_lowrank)
M.register_kl(MultivariateNormal, LowRankMultivariateNormal, kl_mvn_lowrank)
M.register_kl(LowRankMultivariateNormal, MultivariateNormal, kl_lowrank_mvn)

local function kl_cb_cb(p, q)
  local t1 = p.mean * (p.logits - q.logits)
  local t2 = p:_cont_bern_log_norm() + (-p.probs):log1p()
  local t3 = -q:_cont_bern_log_norm() - (-q.probs):log1p()
  return t1 + t2 + t3
end

local function kl_beta_cb(p, q)
  return -p:entropy() - p.mean * q.logits - (-q.probs):log1p() - q:_cont_bern_log_norm()
end

local function kl_cb_exponential(p, q)
  return -p:entropy() - q.rate:log() + q.rate * p.mean
end

local function kl_cb_normal(p, q)
  local t1 = -p:entropy()
  local t2 = 0.5 * (math.log(2 * math.pi) + (q.loc / q.scale):pow(2)) + q.scale:log()
  local t3 = (p.variance + p.mean:pow(2) - 2 * q.loc * p.mean) / (2 * q.scale:pow(2))
  return t1 + t2 + t3
end

local function kl_cb_uniform(p, q)
  local result = -p:entropy() + (q.high - q.low):log()
  return pt.where(q.low:ge(0) | q.high:le(1), inf, result)
end

local function kl_uniform_cb(p, q)
  local result = -p:entropy() - p.mean * q.logits - (-q.probs):log1p() - q:_cont_bern_log_norm()
  return pt.where(p.high:ge(1) | p.low:le(0), inf, result)
end

M.register_kl(ContinuousBernoulli, ContinuousBernoulli, kl_cb_cb)
M.register_kl(Beta, ContinuousBernoulli, kl_beta_cb)
M.register_kl(ContinuousBernoulli, Exponential, kl_cb_exponential)
M.register_kl(ContinuousBernoulli, Normal, kl_cb_normal)
M.register_kl(ContinuousBernoulli, Uniform, kl_cb_uniform)
M.register_kl(Uniform, ContinuousBernoulli, kl_uniform_cb)
for _, pair in ipairs {
  {ContinuousBernoulli, Pareto, "probs"}, {Exponential, ContinuousBernoulli, "rate"},
  {Gamma, ContinuousBernoulli, "concentration"}, {Gumbel, ContinuousBernoulli, "loc"},
  {Laplace, ContinuousBernoulli, "loc"}, {Normal, ContinuousBernoulli, "loc"}, {Pareto, ContinuousBernoulli, "scale"},
} do
  local param = pair[3]
  M.register_kl(pair[1], pair[2], function(p, _) return infinite_like(p[param]) end)
end

-- torch's Transform.__eq__: the same class and parameters
local function same_param(a, b)
  if is_tensor(a) and is_tensor(b) then
    return rawequal(a, b) or (same_shape(a:size(), b:size()) and a:eq(b):all():item())
  end
  return a == b
end

local function same_transform(a, b)
  if getmetatable(a) ~= getmetatable(b) then return false end
  if getmetatable(a) == InverseTransform then return same_transform(a._t, b._t) end
  for _, k in ipairs {"loc", "scale", "exponent", "event_dim"} do
    if not same_param(rawget(a, k), rawget(b, k)) then return false end
  end
  if getmetatable(a) == ComposeTransform then
    if #a.parts ~= #b.parts then return false end
    for i = 1, #a.parts do
      if not same_transform(a.parts[i], b.parts[i]) then return false end
    end
  end
  return true
end

local function kl_transformed_transformed(p, q)
  local same = #p.transforms == #q.transforms
  for i = 1, #p.transforms do same = same and same_transform(p.transforms[i], q.transforms[i]) end
  if not same then
    fail("kl_divergence: TransformedDistributions with different transforms are not implemented (as in torch 1.13)")
  end
  if not same_shape(p.event_shape, q.event_shape) then
    fail("kl_divergence: TransformedDistributions with different event shapes are not implemented (as in torch 1.13)")
  end
  return M.kl_divergence(p.base_dist, q.base_dist)
end

M.register_kl(TransformedDistribution, TransformedDistribution, kl_transformed_transformed)
M.register_kl(Pareto, Exponential, kl_pareto_exponential)
M.register_kl(Pareto, Gamma, kl_pareto_gamma)
M.register_kl(Pareto, Normal, kl_pareto_normal)
M.register_kl(Uniform, Pareto, kl_uniform_pareto)
-- pairs whose KL is infinite (q's support misses part of p's)
for _, pair in ipairs {
  {Exponential, Beta, "rate"}, {Exponential, Uniform, "rate"},
  {Gamma, Beta, "concentration"}, {Gamma, Uniform, "concentration"},
  {Laplace, Beta, "loc"}, {Laplace, Exponential, "loc"}, {Laplace, Gamma, "loc"}, {Laplace, Uniform, "loc"},
  {Normal, Beta, "loc"}, {Normal, Exponential, "loc"}, {Normal, Gamma, "loc"}, {Normal, Uniform, "loc"},
  {Poisson, Bernoulli, "rate"}, {Poisson, Binomial, "rate"},
  {Gumbel, Beta, "loc"}, {Gumbel, Exponential, "loc"}, {Gumbel, Gamma, "loc"}, {Gumbel, Uniform, "loc"},
  {Beta, Pareto, "concentration1"}, {Exponential, Pareto, "rate"}, {Gamma, Pareto, "concentration"},
  {Laplace, Pareto, "loc"}, {Normal, Pareto, "loc"}, {Gumbel, Pareto, "loc"},
  {Pareto, Beta, "scale"}, {Pareto, Uniform, "scale"},
} do
  local param = pair[3]
  M.register_kl(pair[1], pair[2], function(p, _) return infinite_like(p[param]) end)
end

-- for the specs: the samplers and ATen's implicit gradients
end)()

M._standard_gamma = standard_gamma
M._standard_gamma_grad = standard_gamma_grad
M._dirichlet_grad = dirichlet_grad

-- ------------------------------------------------------------------ docs

docs[M] = "pt.distributions: probability distributions as torch.distributions (torch 1.13), over partrain's\n"
  .. "  tensor ops so gradients flow through log_prob, rsample, cdf, entropy and kl_divergence.\n"
  .. "  Normal, Uniform, Bernoulli, Categorical, OneHotCategorical, Beta, Gamma, Dirichlet, Exponential,\n"
  .. "  Laplace, LogNormal, Poisson, Binomial, MultivariateNormal, Independent, Cauchy, Gumbel, Geometric,\n"
  .. "  MixtureSameFamily, StudentT, HalfNormal, Multinomial, RelaxedBernoulli, RelaxedOneHotCategorical,\n"
  .. "  Chi2, NegativeBinomial, Pareto, Weibull, HalfCauchy, TransformedDistribution (with ExpTransform,\n"
  .. "  AffineTransform, TanhTransform, SigmoidTransform, SoftplusTransform, PowerTransform, AbsTransform,\n"
  .. "  ComposeTransform, StickBreakingTransform), VonMises, Kumaraswamy, FisherSnedecor, ContinuousBernoulli,\n"
  .. "  LogisticNormal, LowRankMultivariateNormal, LKJCholesky, Wishart;\n"
  .. "  kl_divergence(p, q).\n"
  .. "  Construct with positional parameters and/or a table of named ones: Normal(0, 1),\n"
  .. "  Bernoulli{logits = t}, MultivariateNormal(loc, {scale_tril = L}), Normal(loc, scale, {validate_args = false}).\n"
  .. "  Parameters broadcast (numbers take the first tensor's dtype, float32 when all are numbers).\n"
  .. "  Validation is on by default (Distribution.set_default_validate_args(false) turns it off).\n"
  .. "  Categorical values are 1-based (1..K; torch: 0..K-1). Sampling uses pt.manual_seed's generator."

docs[Distribution] = "pt.distributions.Distribution: the base class of the distributions (torch.distributions.Distribution).\n"
  .. "  Fields: d.batch_shape, d.event_shape (tables of sizes), d.has_rsample, d.has_enumerate_support.\n"
  .. "  Properties, computed on access: d.mean, d.mode, d.variance, d.stddev (sqrt of the variance),\n"
  .. "  d.support (a constraint: support.check(value) -> bool tensor, support.desc, support.event_dim)\n"
  .. "  and the parameters each class derives (e.g. Bernoulli's probs and logits).\n"
  .. "  Methods: sample, rsample, log_prob, cdf, icdf, entropy, perplexity, enumerate_support, expand.\n"
  .. "  A draw's shape is sample_shape .. batch_shape .. event_shape; log_prob(value) has value's\n"
  .. "  batch shape (value broadcast with batch_shape .. event_shape). What a class lacks (as in torch)\n"
  .. "  raises 'X.method: not implemented for X'."
docs[Distribution.set_default_validate_args] = "Distribution.set_default_validate_args(value): validation on (true, the default) or off for the\n"
  .. "  distributions created without validate_args, as torch's Distribution.set_default_validate_args."
docs[Distribution.sample] = "d:sample([sample_shape]) -> a draw of shape sample_shape .. batch_shape .. event_shape, without gradients.\n"
  .. "  sample_shape: a table of sizes ({} by default) or an integer n for {n}. Reproducible after pt.manual_seed."
docs[Distribution.rsample] = "d:rsample([sample_shape]) -> a reparameterized draw: a differentiable function of the parameters\n"
  .. "  (gradients flow back to them). Only where d.has_rsample."
docs[Distribution.log_prob] = "d:log_prob(value) -> log density (or log mass) at value, a Tensor (or a number), of value's\n"
  .. "  batch shape. With validation, value must lie in the support and broadcast with batch_shape .. event_shape."
docs[Distribution.cdf] = "d:cdf(value) -> the cumulative distribution function at value (Normal, Uniform, Exponential,\n"
  .. "  Laplace, LogNormal, as torch)."
docs[Distribution.icdf] = "d:icdf(p) -> the inverse cumulative distribution function at probabilities p in [0, 1] (Normal,\n"
  .. "  Uniform, Exponential, Laplace, LogNormal, as torch)."
docs[Distribution.entropy] = "d:entropy() -> the entropy (nats), of shape batch_shape."
docs[Distribution.perplexity] = "d:perplexity() -> exp(d:entropy())."
docs[Distribution.enumerate_support] = "d:enumerate_support([expand=true]) -> every value of a discrete distribution along a new first\n"
  .. "  dim: shape {n} .. batch_shape .. event_shape (expand = false: size-1 batch dims)."
docs[Distribution.expand] = "d:expand(batch_shape) -> a new distribution of the same family whose parameters are expanded\n"
  .. "  (views, no copies) to batch_shape; the old batch shape must broadcast to it. Not validated again."

local function doc_class(cls, text) docs[cls] = text end

doc_class(Normal, "pt.distributions.Normal(loc, scale[, {validate_args=}]) -> N(loc, scale^2), as torch.distributions.Normal.\n"
  .. "  scale > 0. mean = mode = loc, stddev = scale; rsample = loc + scale * eps; cdf, icdf, entropy.")
docs[Normal.rsample] = "normal:rsample([sample_shape]) -> loc + scale * eps with eps ~ N(0, 1) (pt.randn)."
docs[Normal.log_prob] = "normal:log_prob(value) -> -(value - loc)^2 / (2 scale^2) - log(scale) - log(sqrt(2 pi))."
docs[Normal.cdf] = "normal:cdf(value) -> (1 + erf((value - loc) / (scale sqrt 2))) / 2."
docs[Normal.icdf] = "normal:icdf(p) -> loc + scale * erfinv(2 p - 1) * sqrt 2."
docs[Normal.entropy] = "normal:entropy() -> 1/2 + log(2 pi)/2 + log(scale)."

doc_class(Uniform, "pt.distributions.Uniform(low, high[, {validate_args=}]) -> uniform on [low, high), as torch.distributions.Uniform.\n"
  .. "  low < high elementwise. mean, variance, stddev; mode is nan; rsample = low + U (high - low).")
docs[Uniform.rsample] = "uniform:rsample([sample_shape]) -> low + U * (high - low) with U ~ U[0, 1) (pt.rand)."
docs[Uniform.log_prob] = "uniform:log_prob(value) -> -log(high - low) inside [low, high), -inf outside (validation: value in [low, high])."
docs[Uniform.cdf] = "uniform:cdf(value) -> (value - low) / (high - low), clamped to [0, 1]."
docs[Uniform.icdf] = "uniform:icdf(p) -> low + p * (high - low)."
docs[Uniform.entropy] = "uniform:entropy() -> log(high - low)."

doc_class(Exponential, "pt.distributions.Exponential(rate[, {validate_args=}]) -> density rate * exp(-rate x) on x >= 0,\n"
  .. "  as torch.distributions.Exponential. rate > 0. mean = stddev = 1/rate, mode 0.")
docs[Exponential.rsample] = "exponential:rsample([sample_shape]) -> E / rate with E ~ Exp(1) (t:exponential_())."
docs[Exponential.log_prob] = "exponential:log_prob(value) -> log(rate) - rate * value."
docs[Exponential.cdf] = "exponential:cdf(value) -> 1 - exp(-rate * value)."
docs[Exponential.icdf] = "exponential:icdf(p) -> -log(1 - p) / rate."
docs[Exponential.entropy] = "exponential:entropy() -> 1 - log(rate)."

doc_class(Laplace, "pt.distributions.Laplace(loc, scale[, {validate_args=}]) -> density exp(-|x - loc| / scale) / (2 scale),\n"
  .. "  as torch.distributions.Laplace. scale > 0. mean = mode = loc, variance 2 scale^2.")
docs[Laplace.rsample] = "laplace:rsample([sample_shape]) -> loc - scale * sign(u) * log1p(-|u|) with u ~ U(eps - 1, 1)."
docs[Laplace.log_prob] = "laplace:log_prob(value) -> -log(2 scale) - |value - loc| / scale."
docs[Laplace.cdf] = "laplace:cdf(value) -> 1/2 - sign(value - loc) * expm1(-|value - loc| / scale) / 2."
docs[Laplace.icdf] = "laplace:icdf(p) -> loc - scale * sign(p - 1/2) * log1p(-2 |p - 1/2|)."
docs[Laplace.entropy] = "laplace:entropy() -> 1 + log(2 scale)."

doc_class(Cauchy, "pt.distributions.Cauchy(loc, scale[, {validate_args=}]) -> density\n"
  .. "  1 / (pi scale (1 + ((x - loc) / scale)^2)), as torch.distributions.Cauchy. scale > 0. mode = loc;\n"
  .. "  mean nan, variance inf (as torch).")
docs[Cauchy.rsample] = "cauchy:rsample([sample_shape]) -> loc + scale * eps with eps standard Cauchy (t:cauchy_())."
docs[Cauchy.log_prob] = "cauchy:log_prob(value) -> -log(pi) - log(scale) - log(1 + ((value - loc) / scale)^2)."
docs[Cauchy.cdf] = "cauchy:cdf(value) -> atan((value - loc) / scale) / pi + 1/2."
docs[Cauchy.icdf] = "cauchy:icdf(p) -> loc + scale * tan(pi (p - 1/2))."
docs[Cauchy.entropy] = "cauchy:entropy() -> log(4 pi) + log(scale)."

doc_class(Gumbel, "pt.distributions.Gumbel(loc, scale[, {validate_args=}]) -> the Gumbel\n"
  .. "  (type I extreme value) distribution, as torch.distributions.Gumbel: loc - scale * log(-log(u)) with u ~ U(tiny, 1 - eps). scale > 0.\n"
  .. "  mean = loc + scale * euler_gamma, mode = loc, stddev = pi scale / sqrt 6.")
docs[Gumbel.rsample] = "gumbel:rsample([sample_shape]) -> loc - scale * log(-log(u)), u ~ U(tiny, 1 - eps) of the dtype."
docs[Gumbel.log_prob] = "gumbel:log_prob(value) -> y - exp(y) - log(scale) with y = (loc - value) / scale."
docs[Gumbel.cdf] = "gumbel:cdf(value) -> exp(-exp(-(value - loc) / scale)), rescaled from [tiny, 1 - eps] to [0, 1] as torch's."
docs[Gumbel.icdf] = "gumbel:icdf(p) -> loc - scale * log(-log(u)) with u = tiny + p (1 - eps - tiny)."
docs[Gumbel.entropy] = "gumbel:entropy() -> log(scale) + 1 + euler_gamma."

doc_class(Geometric, "pt.distributions.Geometric(probs) or Geometric{logits = l}[, {validate_args=}] ->\n"
  .. "  the number of failures before the first success (0, 1, 2, ...), as torch.distributions.Geometric.\n"
  .. "  probs in (0, 1]. mean = 1/probs - 1, mode 0, variance (1/probs - 1) / probs.\n"
  .. "  (t:geometric_ counts trials instead: 1, 2, ...)")
docs[Geometric.sample] = "geometric:sample([sample_shape]) -> floor(log(u) / log1p(-probs)), u ~ U(tiny, 1), in probs' dtype."
docs[Geometric.log_prob] = "geometric:log_prob(value) -> value * log1p(-probs) + log(probs)."
docs[Geometric.entropy] = "geometric:entropy() -> BCE(logits, probs) / probs."

doc_class(MixtureSameFamily, "pt.distributions.MixtureSameFamily(mixture_distribution, component_distribution\n"
  .. "  [, {validate_args=}]) -> a mixture of the components (the last batch dim of component_distribution)\n"
  .. "  weighted by a Categorical, as torch.distributions.MixtureSameFamily. Fields: mixture_distribution,\n"
  .. "  component_distribution; mean and variance (law of total variance); no rsample, entropy or mode (as torch).")
docs[MixtureSameFamily.log_prob] = "mixture:log_prob(value) -> logsumexp over the components of component log_prob + log mixture weight."
docs[MixtureSameFamily.cdf] = "mixture:cdf(value) -> the components' cdfs weighted by the mixture probabilities."
docs[MixtureSameFamily.sample] = "mixture:sample([sample_shape]) -> a component drawn from mixture_distribution, then a draw from it."

doc_class(StudentT, "pt.distributions.StudentT(df[, loc=0, scale=1][, {validate_args=}]) -> Student's t,\n"
  .. "  as torch.distributions.StudentT. df > 0, scale > 0. mode = loc; mean loc (nan where df <= 1);\n"
  .. "  variance scale^2 df / (df - 2) (inf where 1 < df <= 2, nan where df <= 1).")
docs[StudentT.rsample] = "studentT:rsample([sample_shape]) -> loc + scale * X / sqrt(Z / df), X ~ N(0, 1), Z ~ Chi2(df) (reparameterized)."
docs[StudentT.log_prob] = "studentT:log_prob(value) -> log of the t density of (value - loc) / scale with df degrees, - log(scale)."
docs[StudentT.entropy] = "studentT:entropy() -> as torch's: log scale + (df+1)/2 (digamma((df+1)/2) - digamma(df/2)) + log(df)/2 + log B(df/2, 1/2)."

doc_class(HalfNormal, "pt.distributions.HalfNormal(scale[, {validate_args=}]) -> |N(0, scale^2)|, as\n"
  .. "  torch.distributions.HalfNormal (a Normal(0, scale) base_dist through abs). scale > 0. Fields: base_dist;\n"
  .. "  properties scale, mean = scale sqrt(2/pi), mode 0, variance scale^2 (1 - 2/pi).")
docs[HalfNormal.rsample] = "halfnormal:rsample([sample_shape]) -> |base_dist:rsample(sample_shape)|."
docs[HalfNormal.log_prob] = "halfnormal:log_prob(value) -> normal log_prob + log 2 for value >= 0, -inf below."
docs[HalfNormal.cdf] = "halfnormal:cdf(value) -> 2 * base_dist:cdf(value) - 1."
docs[HalfNormal.icdf] = "halfnormal:icdf(p) -> base_dist:icdf((p + 1) / 2)."
docs[HalfNormal.entropy] = "halfnormal:entropy() -> base_dist:entropy() - log 2."

doc_class(Multinomial, "pt.distributions.Multinomial([total_count=1,] probs) or Multinomial(n, {logits = l})\n"
  .. "  [, {validate_args=}] -> counts of n draws over the categories of the last dim, as\n"
  .. "  torch.distributions.Multinomial. total_count an integer (the same for every batch element);\n"
  .. "  probs normalised along the last dim. mean = n probs, variance n probs (1 - probs).")
docs[Multinomial.sample] = "multinomial:sample([sample_shape]) -> counts (probs' dtype) of total_count Categorical draws each."
docs[Multinomial.log_prob] = "multinomial:log_prob(value) -> log (sum x)! - sum log x! + sum x logits."
docs[Multinomial.entropy] = "multinomial:entropy() -> n H(Categorical) - log n! + E[sum log x_k!] over the Binomial marginals."

doc_class(RelaxedBernoulli, "pt.distributions.RelaxedBernoulli(temperature, probs) or RelaxedBernoulli(t, {logits = l})\n"
  .. "  [, {validate_args=}] -> the Concrete / Gumbel-softmax relaxation of Bernoulli on (0, 1), as\n"
  .. "  torch.distributions.RelaxedBernoulli (sigmoid of a LogitRelaxedBernoulli base_dist). temperature a\n"
  .. "  number or a tensor; properties temperature, probs, logits.")
docs[RelaxedBernoulli.rsample] = "relaxed:rsample([sample_shape]) -> sigmoid((logit(u) + logits) / temperature), clamped to [tiny, 1 - eps]."
docs[RelaxedBernoulli.log_prob] = "relaxed:log_prob(value) -> base log density of logit(value) + softplus(x) + softplus(-x)."

doc_class(RelaxedOneHotCategorical, "pt.distributions.RelaxedOneHotCategorical(temperature, probs) or (t, {logits = l})\n"
  .. "  [, {validate_args=}] -> the Gumbel-softmax relaxation of OneHotCategorical on the simplex, as\n"
  .. "  torch.distributions.RelaxedOneHotCategorical (exp of an ExpRelaxedCategorical base_dist).")
docs[RelaxedOneHotCategorical.rsample] = "relaxed:rsample([sample_shape]) -> softmax((logits + Gumbel noise) / temperature) along the last dim."
docs[RelaxedOneHotCategorical.log_prob] = "relaxed:log_prob(value) -> base log density of log(value) - sum(log(value))."

doc_class(Chi2, "pt.distributions.Chi2(df[, {validate_args=}]) -> the chi-squared distribution with df degrees of\n"
  .. "  freedom, as torch.distributions.Chi2: a Gamma(df / 2, 1 / 2) (its methods and KL pairs); property df.")

doc_class(NegativeBinomial, "pt.distributions.NegativeBinomial(total_count, probs) or NegativeBinomial(n, {logits = l})\n"
  .. "  [, {validate_args=}] -> failures before total_count successes of trials that fail with probability probs\n"
  .. "  (torch's convention), as torch.distributions.NegativeBinomial. total_count >= 0 (real), probs in [0, 1).\n"
  .. "  mean = total_count exp(logits), variance = mean / sigmoid(-logits).")
docs[NegativeBinomial.sample] = "negbin:sample([sample_shape]) -> Poisson draws at Gamma(total_count, exp(-logits)) rates."
docs[NegativeBinomial.log_prob] = "negbin:log_prob(value) -> n logsigmoid(-logits) + value logsigmoid(logits) + log C(n + value - 1, value)."

doc_class(Pareto, "pt.distributions.Pareto(scale, alpha[, {validate_args=}]) -> density alpha scale^alpha / x^(alpha+1)\n"
  .. "  on x >= scale, as torch.distributions.Pareto (scale * exp of an Exponential(alpha)). mode = scale;\n"
  .. "  mean inf where alpha <= 1, variance inf where alpha <= 2.")
docs[Pareto.rsample] = "pareto:rsample([sample_shape]) -> scale * exp(E / alpha), E ~ Exp(1)."
docs[Pareto.log_prob] = "pareto:log_prob(value) -> log(alpha) + alpha log(scale) - (alpha + 1) log(value)."
docs[Pareto.cdf] = "pareto:cdf(value) -> 1 - (scale / value)^alpha."
docs[Pareto.icdf] = "pareto:icdf(p) -> scale * (1 - p)^(-1 / alpha)."
docs[Pareto.entropy] = "pareto:entropy() -> log(scale / alpha) + 1 + 1 / alpha."

doc_class(Weibull, "pt.distributions.Weibull(scale, concentration[, {validate_args=}]) -> the Weibull distribution, as\n"
  .. "  torch.distributions.Weibull (scale * E^(1 / concentration), E ~ Exp(1)). Property concentration_reciprocal.")
docs[Weibull.rsample] = "weibull:rsample([sample_shape]) -> scale * E^(1 / concentration), E ~ Exp(1)."
docs[Weibull.log_prob] = "weibull:log_prob(value) -> log(k / scale) + (k - 1) log(value / scale) - (value / scale)^k, k = concentration."
docs[Weibull.cdf] = "weibull:cdf(value) -> 1 - exp(-(value / scale)^concentration)."
docs[Weibull.icdf] = "weibull:icdf(p) -> scale * (-log(1 - p))^(1 / concentration)."
docs[Weibull.entropy] = "weibull:entropy() -> euler_gamma (1 - 1/k) + log(scale / k) + 1."

doc_class(HalfCauchy, "pt.distributions.HalfCauchy(scale[, {validate_args=}]) -> |Cauchy(0, scale)|, as\n"
  .. "  torch.distributions.HalfCauchy (base_dist: the Cauchy). Properties scale; mean and variance inf, mode 0.")
docs[HalfCauchy.rsample] = "halfcauchy:rsample([sample_shape]) -> |base_dist:rsample(sample_shape)|."
docs[HalfCauchy.log_prob] = "halfcauchy:log_prob(value) -> Cauchy log_prob + log 2 for value >= 0, -inf below."
docs[HalfCauchy.cdf] = "halfcauchy:cdf(value) -> 2 * base_dist:cdf(value) - 1."
docs[HalfCauchy.icdf] = "halfcauchy:icdf(p) -> base_dist:icdf((p + 1) / 2)."
docs[HalfCauchy.entropy] = "halfcauchy:entropy() -> base_dist:entropy() - log 2."

docs[Transform] = "pt.distributions.Transform: the base of the transforms (torch.distributions.transforms): t(x) is\n"
  .. "  t:forward(x), t:inverse(y) (t.inv is the inverse transform), t:log_abs_det_jacobian(x, y); fields domain,\n"
  .. "  codomain (constraints), event_dim (where theirs agree), bijective, sign. Constructors take {cache_size = 1} to keep the last (x, y)\n"
  .. "  pair, so inverse of the y just computed gives x back exactly (torch's cache_size)."
docs[Transform.forward] = "t:forward(x) -> y = t(x)."
docs[Transform.inverse] = "t:inverse(y) -> x with t(x) = y (the cached x when y is the last forward result and cache_size = 1)."
docs[Transform.log_abs_det_jacobian] = "t:log_abs_det_jacobian(x, y) -> log |dy/dx| (summed over the transform's event dims)."
docs[Transform.forward_shape] = "t:forward_shape(shape) -> the shape of t(x) for x of that shape (broadcast with tensor parameters)."
docs[Transform.inverse_shape] = "t:inverse_shape(shape) -> the shape of t:inverse(y) for y of that shape."
-- the constraints transforms expose as domain / codomain
for _, c in pairs(C) do
  if type(c) == "table" and type(c.check) == "function" then
    docs[c.check] = "constraint.check(value) -> bool tensor: where value is " .. c.desc .. "."
  end
end
docs[TanhTransform.codomain.check] = "constraint.check(value) -> bool tensor: where value is in [-1, 1]."
doc_class(ExpTransform, "pt.distributions.ExpTransform([{cache_size=}]) -> y = exp(x), as torch's.")
doc_class(PowerTransform, "pt.distributions.PowerTransform(exponent[, {cache_size=}]) -> y = x^exponent on x > 0, as torch's.")
doc_class(SigmoidTransform, "pt.distributions.SigmoidTransform([{cache_size=}]) -> y = sigmoid(x) clamped to [tiny, 1 - eps], as torch's.")
doc_class(TanhTransform, "pt.distributions.TanhTransform([{cache_size=}]) -> y = tanh(x), as torch's (inverse atanh; use\n"
  .. "  cache_size = 1 to get log_prob of rsample draws that round to +-1).")
doc_class(SoftplusTransform, "pt.distributions.SoftplusTransform([{cache_size=}]) -> y = log(1 + exp(x)), as torch's.")
doc_class(AbsTransform, "pt.distributions.AbsTransform([{cache_size=}]) -> y = |x| (not bijective: inverse(y) = y), as torch's.")
doc_class(AffineTransform, "pt.distributions.AffineTransform(loc, scale[, {event_dim=0, cache_size=}]) -> y = loc + scale * x,\n"
  .. "  as torch's; loc and scale numbers or tensors; event_dim sums log |scale| over that many trailing dims.")
doc_class(ComposeTransform, "pt.distributions.ComposeTransform({t1, t2, ...}[, {cache_size=}]) -> the transforms in order\n"
  .. "  (t2(t1(x))), as torch's.")
doc_class(TransformedDistribution, "pt.distributions.TransformedDistribution(base_distribution, transforms[, {validate_args=}])\n"
  .. "  -> the distribution of t_n(...t_1(x)) for x ~ base_distribution, as torch.distributions.TransformedDistribution;\n"
  .. "  transforms a transform or a list of them (ExpTransform, AffineTransform, TanhTransform, ...).\n"
  .. "  log_prob by the change of variables; cdf, icdf through the base; rsample when the base has one.")
docs[TransformedDistribution.sample] = "transformed:sample([sample_shape]) -> the transforms applied to base_dist:sample(sample_shape)."
docs[TransformedDistribution.rsample] = "transformed:rsample([sample_shape]) -> the transforms applied to base_dist:rsample(sample_shape)."
docs[TransformedDistribution.log_prob] = "transformed:log_prob(value) -> base log_prob of the inverted value minus the log |det J| of each transform."
docs[TransformedDistribution.cdf] = "transformed:cdf(value) -> base cdf of the inverted value (1 - it where the transforms reverse order)."
docs[TransformedDistribution.icdf] = "transformed:icdf(p) -> the transforms applied to base icdf(p) (of 1 - p where they reverse order)."

doc_class(VonMises, "pt.distributions.VonMises(loc, concentration[, {validate_args=}]) -> the circular von Mises\n"
  .. "  distribution (angles in radians, values taken modulo 2 pi), as torch.distributions.VonMises.\n"
  .. "  concentration > 0. mean = mode = loc; variance 1 - I1(k) / I0(k) (torch's Bessel approximations).")
docs[VonMises.log_prob] = "vonmises:log_prob(value) -> k cos(value - loc) - log(2 pi I0(k))."
docs[VonMises.sample] = "vonmises:sample([sample_shape]) -> draws in [-pi, pi) by Best and Fisher's rejection method."

doc_class(Kumaraswamy, "pt.distributions.Kumaraswamy(concentration1, concentration0[, {validate_args=}]) -> the\n"
  .. "  Kumaraswamy distribution on (0, 1), as torch.distributions.Kumaraswamy (a TransformedDistribution of\n"
  .. "  Uniform(0, 1)): mean, variance, entropy, rsample; mode ((c1 - 1) / (c1 c0 - 1))^(1/c1) (torch 1.13's is nan).")

doc_class(FisherSnedecor, "pt.distributions.FisherSnedecor(df1, df2[, {validate_args=}]) -> the F distribution, as\n"
  .. "  torch.distributions.FisherSnedecor. df1, df2 > 0. mean (nan where df2 <= 2), mode (nan where df1 <= 2),\n"
  .. "  variance (nan where df2 <= 4); rsample through two reparameterized Gammas.")
docs[FisherSnedecor.rsample] = "fisher:rsample([sample_shape]) -> (X1 / X2), X1 ~ Gamma(df1/2, df1), X2 ~ Gamma(df2/2, df2), at least tiny."
docs[FisherSnedecor.log_prob] = "fisher:log_prob(value) -> the log density of the F distribution with df1, df2 degrees of freedom."

doc_class(ContinuousBernoulli, "pt.distributions.ContinuousBernoulli(probs) or ContinuousBernoulli{logits = l}\n"
  .. "  [, {lims = {0.499, 0.501}, validate_args=}] -> the continuous Bernoulli on [0, 1], as\n"
  .. "  torch.distributions.ContinuousBernoulli (Taylor expansions for probs within lims of 1/2). mean, variance,\n"
  .. "  rsample by the inverse cdf.")
docs[ContinuousBernoulli.rsample] = "cb:rsample([sample_shape]) -> icdf(U), U ~ U[0, 1)."
docs[ContinuousBernoulli.log_prob] = "cb:log_prob(value) -> -BCE(logits, value) + the log normalizing constant."
docs[ContinuousBernoulli.cdf] = "cb:cdf(value) -> (p^x (1-p)^(1-x) + p - 1) / (2p - 1), clamped to [0, 1] outside."
docs[ContinuousBernoulli.icdf] = "cb:icdf(u) -> (log1p(-p + u (2p - 1)) - log1p(-p)) / (log p - log1p(-p))."
docs[ContinuousBernoulli.entropy] = "cb:entropy() -> mean (log(1-p) - log p) - log normalizer - log(1-p)."

doc_class(StickBreakingTransform, "pt.distributions.StickBreakingTransform([{cache_size=}]) -> maps R^K onto the\n"
  .. "  (K+1)-simplex by stick breaking, as torch's (event_dim 1; forward_shape adds one to the last size).")
doc_class(LogisticNormal, "pt.distributions.LogisticNormal(loc, scale[, {validate_args=}]) -> the logistic-normal\n"
  .. "  distribution on the simplex, as torch.distributions.LogisticNormal: a Normal(loc, scale) over the last\n"
  .. "  dim (K) through StickBreakingTransform, so draws have K + 1 entries. Properties loc, scale.")

doc_class(LowRankMultivariateNormal, "pt.distributions.LowRankMultivariateNormal(loc, cov_factor, cov_diag\n"
  .. "  [, {validate_args=}]) -> N(loc, W W^T + diag(D)) with W = cov_factor (n x m) and D = cov_diag > 0, as\n"
  .. "  torch.distributions.LowRankMultivariateNormal (log_prob and entropy through the m x m capacitance).\n"
  .. "  Properties covariance_matrix, precision_matrix, scale_tril, mean = mode = loc, variance.")
docs[LowRankMultivariateNormal.rsample] = "lowrank:rsample([sample_shape]) -> loc + W eps_W + sqrt(D) eps_D."
docs[LowRankMultivariateNormal.log_prob] = "lowrank:log_prob(value) -> -(n log 2 pi + log det + Mahalanobis) / 2 by the Woodbury identity."
docs[LowRankMultivariateNormal.entropy] = "lowrank:entropy() -> (n (1 + log 2 pi) + log det(W W^T + D)) / 2."

doc_class(LKJCholesky, "pt.distributions.LKJCholesky(dim[, concentration=1][, {validate_args=}]) -> the LKJ\n"
  .. "  distribution over lower Cholesky factors of dim x dim correlation matrices, as\n"
  .. "  torch.distributions.LKJCholesky (sampling by the onion method).")
docs[LKJCholesky.sample] = "lkj:sample([sample_shape]) -> Cholesky factors (lower triangular, unit rows), shape sample .. batch .. {dim, dim}."
docs[LKJCholesky.log_prob] = "lkj:log_prob(value) -> sum_i (2 (concentration - 1) + dim - i) log L_ii - the log normalizer."

doc_class(Wishart, "pt.distributions.Wishart(df, covariance_matrix) or Wishart(df, {precision_matrix = P} or\n"
  .. "  {scale_tril = L})[, {validate_args=}] -> the Wishart distribution over p x p positive definite matrices, as\n"
  .. "  torch.distributions.Wishart. df > p - 1. mean df V, mode (df - p - 1) V (nan where df <= p + 1), variance.")
docs[Wishart.rsample] = "wishart:rsample([sample_shape]) -> L A A^T L^T by Bartlett's decomposition (reparameterized in df and L)."
docs[Wishart.log_prob] = "wishart:log_prob(value) -> the Wishart log density (slogdet and cholesky_solve, as torch's)."
docs[Wishart.entropy] = "wishart:entropy() -> as torch's: (p+1)(p log 2 / 2 + log|L|) + mvlgamma(df/2) - (df-p-1)/2 mvdigamma(df/2) + df p / 2."

doc_class(LogNormal, "pt.distributions.LogNormal(loc, scale[, {validate_args=}]) -> exp of N(loc, scale^2), as\n"
  .. "  torch.distributions.LogNormal (a Normal base_dist through exp). Fields: base_dist; properties loc, scale,\n"
  .. "  mean = exp(loc + scale^2/2), mode = exp(loc - scale^2), variance.")
docs[LogNormal.rsample] = "lognormal:rsample([sample_shape]) -> exp(base_dist:rsample(sample_shape))."
docs[LogNormal.log_prob] = "lognormal:log_prob(value) -> Normal's log_prob at log(value) - log(value) (value > 0)."
docs[LogNormal.cdf] = "lognormal:cdf(value) -> Normal's cdf at log(value) (value >= 0)."
docs[LogNormal.icdf] = "lognormal:icdf(p) -> exp(Normal's icdf at p)."
docs[LogNormal.entropy] = "lognormal:entropy() -> Normal's entropy + loc."

doc_class(Gamma, "pt.distributions.Gamma(concentration, rate[, {validate_args=}]) -> density\n"
  .. "  rate^a x^(a-1) exp(-rate x) / Gamma(a) on x >= 0 (a = concentration), as torch.distributions.Gamma.\n"
  .. "  Both > 0. mean a/rate, mode max((a-1)/rate, 0), variance a/rate^2. Draws: Marsaglia-Tsang over\n"
  .. "  tensor ops; rsample's gradient w.r.t. concentration is torch's implicit one (ATen's approximation).")
docs[Gamma.rsample] = "gamma:rsample([sample_shape]) -> X / rate with X a standard gamma draw (Marsaglia-Tsang); the gradient\n"
  .. "  w.r.t. concentration is torch's implicit reparameterization -(dF/da)/f at X (ATen's standard_gamma_grad),\n"
  .. "  w.r.t. rate -X/rate^2."
docs[Gamma.log_prob] = "gamma:log_prob(value) -> xlogy(a, rate) + xlogy(a - 1, value) - rate value - lgamma(a)."
docs[Gamma.entropy] = "gamma:entropy() -> a - log(rate) + lgamma(a) + (1 - a) digamma(a)."

doc_class(Dirichlet, "pt.distributions.Dirichlet(concentration[, {validate_args=}]) -> the Dirichlet distribution on the\n"
  .. "  simplex of concentration's last dim (event_shape {K}), as torch.distributions.Dirichlet. concentration > 0.\n"
  .. "  mean, mode, variance; draws are normalised gamma draws; rsample carries torch's implicit gradient.")
docs[Dirichlet.rsample] = "dirichlet:rsample([sample_shape]) -> normalised standard gamma draws; the gradient w.r.t. concentration\n"
  .. "  is torch's (ATen's dirichlet_grad approximation, as torch's _Dirichlet backward)."
docs[Dirichlet.log_prob] = "dirichlet:log_prob(value) -> sum((a - 1) log value) + lgamma(sum a) - sum lgamma(a) over the last dim."
docs[Dirichlet.entropy] = "dirichlet:entropy() -> sum lgamma(a) - lgamma(a0) - (K - a0) digamma(a0) - sum (a - 1) digamma(a)."

doc_class(Beta, "pt.distributions.Beta(concentration1, concentration0[, {validate_args=}]) -> density\n"
  .. "  x^(c1-1) (1-x)^(c0-1) / B(c1, c0) on [0, 1], as torch.distributions.Beta (through a Dirichlet of {c1, c0}).\n"
  .. "  Both > 0. Properties concentration1, concentration0, mean, mode, variance.")
docs[Beta.rsample] = "beta:rsample([sample_shape]) -> the first coordinate of a Dirichlet({c1, c0}) rsample (torch's gradient)."
docs[Beta.log_prob] = "beta:log_prob(value) -> the Dirichlet({c1, c0}) log_prob of {value, 1 - value}."
docs[Beta.entropy] = "beta:entropy() -> the entropy of Dirichlet({c1, c0})."

doc_class(Bernoulli, "pt.distributions.Bernoulli(probs) or Bernoulli{logits = l}[, {validate_args=}] -> 1 with\n"
  .. "  probability probs, else 0, as torch.distributions.Bernoulli. Exactly one of probs (in [0, 1]) and logits;\n"
  .. "  the other is derived on first access (logits from probs clamped to [eps, 1 - eps]). mean = probs,\n"
  .. "  mode (nan at 1/2), variance, param_shape; sample, log_prob, entropy, enumerate_support.")
docs[Bernoulli.sample] = "bernoulli:sample([sample_shape]) -> 0/1 draws (pt.bernoulli), probs' dtype."
docs[Bernoulli.log_prob] = "bernoulli:log_prob(value) -> -binary_cross_entropy_with_logits(logits, value)."
docs[Bernoulli.entropy] = "bernoulli:entropy() -> binary_cross_entropy_with_logits(logits, probs)."
docs[Bernoulli.enumerate_support] = "bernoulli:enumerate_support([expand=true]) -> {0, 1} along a new first dim ({2} .. batch_shape)."

doc_class(Binomial, "pt.distributions.Binomial([total_count=1,] probs) or Binomial(n, nil, logits) or\n"
  .. "  Binomial{total_count=, probs= | logits=}[, {validate_args=}] -> successes in total_count trials, as\n"
  .. "  torch.distributions.Binomial. total_count a non-negative integer (number or tensor, broadcast).\n"
  .. "  mean n p, mode, variance n p (1 - p). Sampling sums Bernoulli trials: O(max total_count) per element.")
docs[Binomial.sample] = "binomial:sample([sample_shape]) -> counts of successes (probs' dtype), summing Bernoulli trials."
docs[Binomial.log_prob] = "binomial:log_prob(value) -> log C(n, value) + value log p + (n - value) log(1 - p), through logits\n"
  .. "  as torch (stable for large |logits|)."
docs[Binomial.entropy] = "binomial:entropy() -> -sum p log p over 0..n (total_count must be the same everywhere, as torch)."
docs[Binomial.enumerate_support] = "binomial:enumerate_support([expand=true]) -> 0..n along a new first dim (one total_count only)."

doc_class(Categorical, "pt.distributions.Categorical(probs) or Categorical{logits = l}[, {validate_args=}] -> a category\n"
  .. "  1..K (1-based; torch: 0..K-1) with the probabilities of the last dim, as torch.distributions.Categorical.\n"
  .. "  probs are normalised to sum to 1, logits to logsumexp 0; the other is derived on first access.\n"
  .. "  mode (argmax, 1-based), mean and variance nan, param_shape; sample (int64), log_prob, entropy.")
docs[Categorical.sample] = "categorical:sample([sample_shape]) -> int64 categories 1..K (pt.multinomial with replacement)."
docs[Categorical.log_prob] = "categorical:log_prob(value) -> logits at the 1-based categories value (broadcast with batch_shape)."
docs[Categorical.entropy] = "categorical:entropy() -> -sum probs * logits over the last dim."
docs[Categorical.enumerate_support] = "categorical:enumerate_support([expand=true]) -> int64 1..K along a new first dim."

doc_class(OneHotCategorical, "pt.distributions.OneHotCategorical(probs) or OneHotCategorical{logits = l} -> one-hot vectors\n"
  .. "  of length K (event_shape {K}) with the hot position drawn as Categorical's, as torch.distributions.OneHotCategorical.\n"
  .. "  probs, logits, mean = probs, mode (one-hot argmax), variance p (1 - p).")
docs[OneHotCategorical.sample] = "onehot:sample([sample_shape]) -> one-hot vectors (probs' dtype)."
docs[OneHotCategorical.log_prob] = "onehot:log_prob(value) -> Categorical's log_prob at the hot position of each one-hot vector."
docs[OneHotCategorical.entropy] = "onehot:entropy() -> Categorical's entropy."
docs[OneHotCategorical.enumerate_support] = "onehot:enumerate_support([expand=true]) -> the K one-hot vectors along a new first dim."

doc_class(Poisson, "pt.distributions.Poisson(rate[, {validate_args=}]) -> counts with mean rate (>= 0), as\n"
  .. "  torch.distributions.Poisson. mean = variance = rate, mode floor(rate); sample (pt.poisson), log_prob.")
docs[Poisson.sample] = "poisson:sample([sample_shape]) -> Poisson counts (pt.poisson), rate's dtype."
docs[Poisson.log_prob] = "poisson:log_prob(value) -> xlogy(value, rate) - rate - lgamma(value + 1)."

doc_class(MultivariateNormal, "pt.distributions.MultivariateNormal(loc, covariance_matrix) or\n"
  .. "  MultivariateNormal(loc, {precision_matrix = P} | {scale_tril = L}) -> N(loc, Sigma) over loc's last dim\n"
  .. "  (event_shape {n}), as torch.distributions.MultivariateNormal: exactly one matrix parameter, batch dims\n"
  .. "  broadcast with loc's. Sigma's Cholesky factor through pt.linalg.cholesky (precision: a flipped Cholesky\n"
  .. "  and a triangular solve); properties scale_tril, covariance_matrix, precision_matrix, mean, mode, variance.")
docs[MultivariateNormal.rsample] = "mvn:rsample([sample_shape]) -> loc + L eps with eps ~ N(0, I) and L the Cholesky factor."
docs[MultivariateNormal.log_prob] = "mvn:log_prob(value) -> -(n log(2 pi) + |L^-1 (value - loc)|^2) / 2 - sum log diag(L)."
docs[MultivariateNormal.entropy] = "mvn:entropy() -> n (1 + log(2 pi)) / 2 + sum log diag(L)."

doc_class(Independent, "pt.distributions.Independent(base_distribution, reinterpreted_batch_ndims[, {validate_args=}]) ->\n"
  .. "  the base distribution with its rightmost reinterpreted_batch_ndims batch dims moved into the event\n"
  .. "  (log_prob and entropy sum over them), as torch.distributions.Independent. Fields base_dist,\n"
  .. "  reinterpreted_batch_ndims; mean, mode, variance, has_rsample from the base.")
docs[Independent.sample] = "independent:sample([sample_shape]) -> base_dist:sample(sample_shape)."
docs[Independent.rsample] = "independent:rsample([sample_shape]) -> base_dist:rsample(sample_shape)."
docs[Independent.log_prob] = "independent:log_prob(value) -> base_dist:log_prob(value) summed over the reinterpreted dims."
docs[Independent.entropy] = "independent:entropy() -> base_dist:entropy() summed over the reinterpreted dims."
docs[Independent.enumerate_support] = "independent:enumerate_support([expand=true]) -> the base's (reinterpreted_batch_ndims 0 only)."

docs[M.kl_divergence] = "pt.distributions.kl_divergence(p, q) -> KL(p || q) = E_p[log p - log q], of the broadcast batch shape,\n"
  .. "  as torch.distributions.kl_divergence for the same-family pairs torch registers: Normal, Bernoulli,\n"
  .. "  Categorical, OneHotCategorical, Beta, Gamma, Dirichlet, Exponential, Laplace, Uniform, Poisson,\n"
  .. "  Binomial, MultivariateNormal, LogNormal, Gumbel, Geometric, HalfNormal and Independent (same reinterpreted dims), and the pairs of\n"
  .. "  different families torch registers among these (Normal || Laplace, Beta || Uniform, Exponential || Gamma,\n"
  .. "  Uniform || Normal, Normal || Uniform = inf, ...). Other pairs raise;\n"
  .. "  register_kl adds them. Differentiable in both distributions' parameters."
docs[M.register_kl] = "pt.distributions.register_kl(P, Q, fn): kl_divergence(p, q) calls fn(p, q) when p's class is P and q's\n"
  .. "  is Q (or derive from them; the closest registered pair wins), as torch's @register_kl."

-- constraint classes, more transforms, biject_to / transform_to
require("partrain.distributions_transforms")(M, {C = C, CORR_CHOLESKY = CORR_CHOLESKY, HALF_OPEN_UNIT = HALF_OPEN_UNIT,
  docs = docs, source = THIS, typename = typename, num = num, shape_str = shape_str, concat = concat, slice = slice,
  sum_rightmost = sum_rightmost, finfo = finfo, event_dim_of = event_dim_of, softplus = softplus, pad_last = pad_last,
  transform_class = transform_class, new_transform = new_transform, with_inv = with_inv, sizes_arg = sizes_arg,
  numel = numel, same_shape = same_shape, is_distribution = is_distribution})

return M
