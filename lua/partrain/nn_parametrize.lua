-- nn.utils.parametrizations.weight_norm (PyTorch 2.0's, parametrize-based) for partrain.nn, and
-- what it needs from nn.utils.parametrize (nn_lazy.lua): a first parametrization whose
-- right_inverse returns several tensors (torch 1.13's ParametrizationList with ntensors > 1): they
-- become parametrizations.<name>.original0, original1, ... (torch's names, for its state_dict keys).
-- Loaded by nn.lua with its extras, after
-- nn_lazy.lua.
local pt = require "partrain.core"
local nn = require "partrain.nn"
local docs = pt._docs

local doc = pt._doc

local A = nn._arg_helpers
local type_of = A.type_of
local fmt = string.format

local function fail(f, ...) error(fmt(f, ...), 0) end

local class_name = A.class_name

local utils = rawget(nn, "utils")
local parametrize = utils.parametrize
local parametrizations = utils.parametrizations
local PList = parametrize.ParametrizationList

-- ------------------------------------------------------------------ several original tensors

-- the tensors a right_inverse returned: several results, or one list of tensors
local function results(...)
  local n = select("#", ...)
  local first = ...
  if n == 1 and type(first) == "table" and not pt.is_tensor(first) then
    return table.move(first, 1, #first, 1, {n = #first})
  end
  return table.pack(...)
end

local function several(self) return rawget(self, "_ntensors") end

local function originals(self)
  local out = {}
  for i = 1, several(self) do
    local k = "original" .. (i - 1)
    out[i] = self._parameters[k] or self._buffers[k]
  end
  return out
end

local base_init, base_forward, base_right_inverse = PList.__init, PList.forward, PList.right_inverse

function PList:__init(modules, original, unsafe)
  local m1 = modules[1]
  -- does the first parametrization's right_inverse give several tensors? (register_parametrization
  -- passes one module; a failing right_inverse fails again, with its message, in the base __init)
  if not (#modules == 1 and nn.is_module(m1) and pt.is_tensor(original) and m1.right_inverse
      and not (m1._right_inverse_unavailable and m1:_right_inverse_unavailable())) then
    return base_init(self, modules, original, unsafe)
  end
  local ok, new = pcall(pt.no_grad, function() return results(m1:right_inverse(original)) end)
  if not ok or (new.n == 1 and pt.is_tensor(new[1])) then return base_init(self, modules, original, unsafe) end
  local name = "ParametrizationList"
  self:append(m1)
  self.unsafe = unsafe == true
  for i = 1, new.n do
    local t = new[i]
    if not pt.is_tensor(t) then
      fail("%s: 'right_inverse' must return a Tensor or a Sequence of tensors (list[Tensor], tuple[Tensor]). "
        .. "Got element %d of the sequence with type %s.", name, i, type_of(t))
    end
    t = t:detach():clone()
    if original.requires_grad then
      self:register_parameter("original" .. (i - 1), t)
    else
      self:register_buffer("original" .. (i - 1), t)
    end
  end
  rawset(self, "_ntensors", new.n)
end

function PList:forward()
  if not several(self) then return base_forward(self) end
  local x = self._modules["1"](table.unpack(originals(self)))
  for i = 2, #self._module_names do x = self._modules[tostring(i)](x) end
  return x
end

function PList:right_inverse(value)
  if not several(self) then return base_right_inverse(self, value) end
  local new = pt.no_grad(function()
    for i = #self._module_names, 2, -1 do
      local m = self._modules[tostring(i)]
      if not m.right_inverse then fail("parametrization %s does not implement right_inverse.", class_name(m)) end
      value = m:right_inverse(value)
    end
    return results(self._modules["1"]:right_inverse(value))
  end)
  local orig = originals(self)
  if new.n ~= #orig then
    fail("'right_inverse' must return a sequence of tensors of length %d. Got a sequence of length %d.", #orig, new.n)
  end
  for i, t in ipairs(orig) do
    local v = new[i]
    if not pt.is_tensor(v) then
      fail("`right_inverse` must return a sequence of tensors. Got element %d of type %s", i, type_of(v))
    end
    if v:dtype() ~= t:dtype() then
      fail("Tensor %d returned by `right_inverse` has dtype %s while `original%d` has dtype %s", i, v:dtype(), i - 1, t:dtype())
    end
    pt.no_grad(function()
      local same = v:dim() == t:dim()
      for d = 1, same and v:dim() or 0 do same = same and v:size(d) == t:size(d) end
      if same then t:copy_(v) else pt._nn_set_data_(t, v:detach():clone()) end
    end)
  end
end

docs[PList.forward] = docs[base_forward] .. " With several originals: the first parametrization takes them all."
docs[PList.right_inverse] = docs[base_right_inverse]
  .. "\n  With several originals the first parametrization's right_inverse gives each its value."

-- the layer's own forward reads its parameters from module._parameters (Linear does): a tensor
-- parametrized by several parameters is put there while the forward runs
local function wrap_forward(module)
  local cls = getmetatable(module)
  if rawget(cls, "_several_forward") then return end
  local inner = cls.forward
  rawset(cls, "_several_forward", true)
  cls.forward = function(self, ...)
    local args = table.pack(...)
    return parametrize.cached(function()
      local params = rawget(self, "_parameters")
      local placed = {}
      local ps = rawget(self, "_modules").parametrizations
      for _, name in ipairs(ps and ps._module_names or {}) do
        local pl = ps._modules[name]
        if several(pl) and pl._parameters.original0 and params[name] == nil then
          params[name] = self[name]
          placed[#placed + 1] = name
        end
      end
      local _ <close> = setmetatable({}, {__close = function()
        for _, n in ipairs(placed) do params[n] = nil end
      end})
      return inner(self, table.unpack(args, 1, args.n))
    end)
  end
end

local base_register = parametrize.register_parametrization
function parametrize.register_parametrization(module, tensor_name, parametrization, opts)
  local r = base_register(module, tensor_name, parametrization, opts)
  local ps = rawget(module, "_modules").parametrizations
  local pl = ps and rawget(ps, "_modules")[tensor_name]
  if pl and several(pl) then wrap_forward(module) end
  return r
end
docs[parametrize.register_parametrization] = docs[base_register] .. [==[

  A first parametrization whose right_inverse returns several tensors (several results or a list; its
  forward then takes them as arguments) keeps them as parametrizations.<name>.original0, original1, ...
  (new tensors: parameters when the tensor required grad; torch's names: 0-based).]==]

local base_remove = parametrize.remove_parametrizations
function parametrize.remove_parametrizations(module, tensor_name, leave_parametrized)
  local lp = leave_parametrized
  if type(lp) == "table" then lp = lp.leave_parametrized end
  if lp == nil then lp = true end
  local ps = nn.is_module(module) and rawget(module, "_modules").parametrizations
  local pl = ps and type(tensor_name) == "string" and rawget(ps, "_modules")[tensor_name]
  if pl and several(pl) then
    if not lp then
      fail("remove_parametrizations: Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
        .. "parametrized in terms of a sequence of tensors.")
    end
    local t = module[tensor_name]
    local original = t.requires_grad and nn.Parameter(t:detach():clone()) or t:detach():clone()
    -- as a one-tensor list holding the value to restore
    for i = 1, several(pl) do pl["original" .. (i - 1)] = nil end
    rawset(pl, "_ntensors", nil)
    if original.requires_grad then pl.original = original else pl:register_buffer("original", original) end
    return base_remove(module, tensor_name, false)
  end
  return base_remove(module, tensor_name, leave_parametrized)
end
docs[parametrize.remove_parametrizations] = docs[base_remove] .. [==[

  A tensor parametrized by several originals gets a new tensor holding its parametrized value (a parameter
  when it requires grad); leave_parametrized=false is an error for it, as in torch.]==]

local base_transfer = parametrize.transfer_parametrizations_and_params
function parametrize.transfer_parametrizations_and_params(from_module, to_module, tensor_name)
  local r = base_transfer(from_module, to_module, tensor_name)
  if not parametrize.is_parametrized(from_module) then return r end
  local ps = rawget(from_module, "_modules").parametrizations
  for _, pname in ipairs(tensor_name ~= nil and {tensor_name} or ps._module_names) do
    local from_pl = rawget(ps, "_modules")[pname]
    if several(from_pl) then
      local to_pl = to_module.parametrizations[pname]
      for i = 1, several(from_pl) do
        local k = "original" .. (i - 1)
        local p = from_pl._parameters[k]
        if p then to_pl[k] = nil; to_pl[k] = p else to_pl:register_buffer(k, from_pl._buffers[k]) end
      end
    end
  end
  return r
end
docs[parametrize.transfer_parametrizations_and_params] = docs[base_transfer]
  .. "\n  Several originals (original0, original1, ...) are shared the same way."

-- ------------------------------------------------------------------ weight_norm

local norm_except_dim = utils._norm_except_dim -- nn_extra.lua (weight_norm's hook)

local WeightNorm = nn.Module:extend("_WeightNorm")
parametrizations._WeightNorm = WeightNorm
function WeightNorm:__init(dim)
  self.dim = dim
end
function WeightNorm:_dim(v)
  local d = self.dim
  if not d then return false end
  local n = v:dim()
  local r = d < 0 and n + 1 + d or d
  if r < 1 or r > n then fail("weight_norm: dim %d out of range for a tensor with %d dims", d, n) end
  return r
end
function WeightNorm:forward(weight_g, weight_v)
  return weight_v * (weight_g / norm_except_dim(weight_v, self:_dim(weight_v)))
end
doc(WeightNorm.forward, "wn(g, v) -> v * (g / ||v||), the norm over every dim but wn.dim (the whole tensor when dim is false).")
function WeightNorm:right_inverse(weight)
  return norm_except_dim(weight, self:_dim(weight)), weight
end
doc(WeightNorm.right_inverse, "wn:right_inverse(weight) -> g, v: weight's norms over every dim but wn.dim (kept as size 1), and weight.")
doc(WeightNorm, "parametrizations._WeightNorm(dim): the parametrization nn.utils.parametrizations.weight_norm registers (internal).")

function parametrizations.weight_norm(...)
  local fname = "weight_norm"
  local o = A.parse(fname, {{"module", function(_, _, v) return v end, A.REQUIRED},
    {"name", function(_, _, v) return v end, "weight"}, {"dim", function(_, _, v) return v end, 1}}, ...)
  local module, name, dim = o.module, o.name, o.dim
  if not nn.is_module(module) then fail("%s: module must be a Module, got %s", fname, type_of(module)) end
  if type(name) ~= "string" then fail("%s: name must be a string, got %s", fname, type_of(name)) end
  if dim ~= false and (math.type(dim) ~= "integer" or dim == 0) then
    fail("%s: dim must be a non-zero integer (1-based, negative from the end) or false (the whole tensor), got %s",
      fname, tostring(dim))
  end
  local w = rawget(module, "_parameters")[name] or rawget(module, "_buffers")[name]
  if w == nil and not parametrize.is_parametrized(module, name) then
    fail("%s: Module '%s' does not have a parameter, a buffer, or a parametrized element with name '%s'", fname,
      class_name(module), name)
  end
  if w ~= nil and dim then
    local n = w:dim()
    local r = dim < 0 and n + 1 + dim or dim
    if r < 1 or r > n then fail("%s: dim %d out of range for parameter '%s' with %d dims", fname, dim, name, n) end
  end
  return parametrize.register_parametrization(module, name, WeightNorm(dim), {unsafe = true})
end
doc(parametrizations.weight_norm, [==[nn.utils.parametrizations.weight_norm(module[, name="weight"[, dim=1]]) -> module  (or an options table)
  PyTorch 2.0's weight normalisation as a parametrization: module.name = g * v / ||v|| with the norm over every
  dim but dim (1-based, negative from the end; false: the whole tensor, torch's dim=None), g and v kept as
  module.parametrizations.name.original0 (g, size 1 but along dim) and original1 (v): state_dict keys
  parametrizations.weight.original0/original1 as torch's. Assigning module.name sets both
  (right_inverse); remove with nn.utils.parametrize.remove_parametrizations(module, name).]==])

docs[parametrizations] = (docs[parametrizations] or "") .. "\n  weight_norm (PyTorch 2.0's) is here too."

return parametrizations
