-- nn.utils.prune: PyTorch 1.13's torch.nn.utils.prune for partrain.nn. Pruning a parameter
-- `name` moves it to the parameter name_orig, adds the buffer name_mask and keeps module.name =
-- name_orig * name_mask (a plain field, recomputed before every forward; also put into
-- module._parameters while the forward runs, for layers that read their parameters from there).
-- Pruning the same tensor again combines the masks as torch's PruningContainer: the new method
-- prunes only among the entries (or channels) still unpruned. Loaded by nn.lua with its extras.
local pt = require "partrain.core"
local nn = require "partrain.nn"

local doc = pt._doc

local A = nn._arg_helpers
local type_of = A.type_of
local fmt = string.format

local function fail(f, ...) error(fmt(f, ...), 0) end

local class_name = A.class_name

local shape_of = A.shape_str

local utils = rawget(nn, "utils")
local prune = {}
utils.prune = prune
doc(prune, [==[nn.utils.prune: PyTorch 1.13's torch.nn.utils.prune: identity, random_unstructured, l1_unstructured,
  random_structured, ln_structured, global_unstructured, custom_from_mask, remove, is_pruned, and the
  method classes (Identity, RandomUnstructured, L1Unstructured, RandomStructured, LnStructured,
  CustomFromMask, PruningContainer) with method:compute_mask(t, default_mask).
  amount: a float in [0, 1] is a fraction (rounded half to even, as Python's round), an integer a count
  (Lua 5.4 tells 1 from 1.0: 1 prunes one entry, 1.0 all). dim is 1-based (negative from the end).]==])

-- ------------------------------------------------------------------ amount helpers

local function validate_amount_init(fname, amount)
  if type(amount) ~= "number" then
    fail("%s: Invalid type for amount: %s. Must be int or float.", fname, type_of(amount))
  end
  if (math.type(amount) == "integer" and amount < 0)
    or (math.type(amount) == "float" and (amount > 1.0 or amount < 0.0 or amount ~= amount)) then
    fail("%s: amount=%s should either be a float in the range [0, 1] or a non-negative integer", fname, tostring(amount))
  end
  return amount
end

-- Python's round: half to even
local function py_round(x)
  local f = math.floor(x)
  local d = x - f
  if d > 0.5 then return f + 1 end
  if d < 0.5 then return f end
  return f % 2 == 0 and f or f + 1
end

local function nparams_toprune(fname, amount, size)
  if math.type(amount) == "integer" then
    if amount > size then
      fail("%s: amount=%d should be smaller than the number of parameters to prune=%d", fname, amount, size)
    end
    return amount
  end
  return math.tointeger(py_round(amount * size))
end

local function check_structured(fname, t)
  if t:dim() <= 1 then
    fail("%s: Structured pruning can only be applied to multidimensional tensors. Found tensor of shape %s with %d dims",
      fname, shape_of(t), t:dim())
  end
end

local function resolve_dim(fname, dim, n)
  local r = dim < 0 and n + 1 + dim or dim
  if r < 1 or r > n then fail("%s: dim %d out of range for a tensor with %d dims", fname, dim, n) end
  return r
end

local function check_dim(fname, dim)
  if math.type(dim) ~= "integer" or dim == 0 then
    fail("%s: dim must be a non-zero integer (1-based, negative from the end), got %s", fname, tostring(dim))
  end
  return dim
end

local function idx_tensor(list) return pt.tensor(list, {dtype = "int64"}) end

-- the n-norm of each slice along dim (over every other dim): a list of numbers
local function slice_norms(t, n, dim)
  local c = t:size(dim)
  local m = t:movedim(dim, 1):reshape(c, -1):abs()
  local r
  if n == math.huge then r = m:amax(2)
  elseif n == -math.huge then r = m:amin(2)
  elseif n == 0 then r = m:ne(0):sum(2)
  else r = m:pow(n):sum(2):pow(1 / n) end
  return r:tolist()
end

-- ------------------------------------------------------------------ methods

local Method = {}
Method.__index = Method
local function method_class(name, ptype)
  local cls = setmetatable({__name = name, PRUNING_TYPE = ptype}, {__index = Method, __tostring = function() return "class " .. name end})
  cls.__index = cls
  cls.__tostring = function() return name end
  prune[name] = cls
  return cls
end
prune.BasePruningMethod = Method

local function is_method(x)
  local mt = getmetatable(x)
  while type(mt) == "table" do
    if mt == Method then return true end
    mt = getmetatable(mt)
    mt = mt and mt.__index
  end
  return false
end

local function parse_opts(fname, specs, ...)
  return A.parse(fname, specs, ...)
end
local function any(_, _, v) return v end

local Identity = method_class("Identity", "unstructured")
setmetatable(Identity, {__index = Method, __call = function(cls) return setmetatable({}, cls) end})
function Identity:compute_mask(_, default_mask) return default_mask end

local RandomUnstructured = method_class("RandomUnstructured", "unstructured")
setmetatable(RandomUnstructured, {__index = Method, __call = function(cls, ...)
  local o = parse_opts("RandomUnstructured", {{"amount", any, A.REQUIRED}}, ...)
  return setmetatable({amount = validate_amount_init("RandomUnstructured", o.amount)}, cls)
end})
function RandomUnstructured:compute_mask(t, default_mask)
  local k = nparams_toprune("random_unstructured", self.amount, t:numel())
  local mask = default_mask:clone()
  if k == 0 then return mask end
  local _, idx = pt.rand_like(t):reshape(-1):topk(k)
  return mask:reshape(-1):index_fill(1, idx, 0):view_as(t)
end

local L1Unstructured = method_class("L1Unstructured", "unstructured")
setmetatable(L1Unstructured, {__index = Method, __call = function(cls, ...)
  local o = parse_opts("L1Unstructured", {{"amount", any, A.REQUIRED}}, ...)
  return setmetatable({amount = validate_amount_init("L1Unstructured", o.amount)}, cls)
end})
function L1Unstructured:compute_mask(t, default_mask)
  local k = nparams_toprune("l1_unstructured", self.amount, t:numel())
  local mask = default_mask:clone()
  if k == 0 then return mask end
  local _, idx = t:abs():reshape(-1):topk(k, 1, false)
  return mask:reshape(-1):index_fill(1, idx, 0):view_as(t)
end

local RandomStructured = method_class("RandomStructured", "structured")
setmetatable(RandomStructured, {__index = Method, __call = function(cls, ...)
  local o = parse_opts("RandomStructured", {{"amount", any, A.REQUIRED}, {"dim", any, -1}}, ...)
  return setmetatable({amount = validate_amount_init("RandomStructured", o.amount),
    dim = check_dim("RandomStructured", o.dim)}, cls)
end})
function RandomStructured:compute_mask(t, default_mask)
  local fname = "random_structured"
  check_structured(fname, t)
  local dim = resolve_dim(fname, self.dim, t:dim())
  local size = t:size(dim)
  local k = nparams_toprune(fname, self.amount, size)
  if k == 0 then return default_mask end
  local prob = pt.rand(size)
  local threshold = pt.kthvalue(prob, k)
  local keep = {}
  for i, p in ipairs(prob:tolist()) do if p > threshold:item() then keep[#keep + 1] = i end end
  local mask = pt.zeros_like(t)
  if #keep > 0 then mask = mask:index_fill(dim, idx_tensor(keep), 1) end
  return mask * default_mask:to(mask:dtype())
end

local LnStructured = method_class("LnStructured", "structured")
setmetatable(LnStructured, {__index = Method, __call = function(cls, ...)
  local o = parse_opts("LnStructured", {{"amount", any, A.REQUIRED}, {"n", any, A.REQUIRED}, {"dim", any, -1}}, ...)
  local n = o.n
  if n == "fro" then n = 2 end
  if type(n) ~= "number" then
    fail("LnStructured: n must be a number (math.huge, -math.huge for the max and min norms) or \"fro\", got %s", type_of(n))
  end
  return setmetatable({amount = validate_amount_init("LnStructured", o.amount), n = n,
    dim = check_dim("LnStructured", o.dim)}, cls)
end})
function LnStructured:compute_mask(t, default_mask)
  local fname = "ln_structured"
  check_structured(fname, t)
  local dim = resolve_dim(fname, self.dim, t:dim())
  local size = t:size(dim)
  local k = nparams_toprune(fname, self.amount, size)
  local keep_n = size - k
  if keep_n == 0 then return pt.zeros_like(default_mask) end
  local norms = slice_norms(t:detach(), self.n, dim)
  local order = {}
  for i = 1, size do order[i] = i end
  -- the keep_n largest norms (ties: the lower index first)
  table.sort(order, function(a, b)
    if norms[a] ~= norms[b] then return norms[a] > norms[b] end
    return a < b
  end)
  local keep = table.move(order, 1, keep_n, 1, {})
  local mask = pt.zeros_like(t):index_fill(dim, idx_tensor(keep), 1)
  return mask * default_mask:to(mask:dtype())
end

local CustomFromMask = method_class("CustomFromMask", "global")
setmetatable(CustomFromMask, {__index = Method, __call = function(cls, ...)
  local o = parse_opts("CustomFromMask", {{"mask", any, A.REQUIRED}}, ...)
  if not pt.is_tensor(o.mask) then fail("CustomFromMask: mask must be a tensor, got %s", type_of(o.mask)) end
  return setmetatable({mask = o.mask}, cls)
end})
function CustomFromMask:compute_mask(_, default_mask)
  if shape_of(default_mask) ~= shape_of(self.mask) then
    fail("custom_from_mask: mask has shape %s, the tensor pruned %s", shape_of(self.mask), shape_of(default_mask))
  end
  return default_mask * self.mask:to(default_mask:dtype())
end

-- a sequence of methods on one tensor: the last one prunes among what the earlier ones left
local PruningContainer = method_class("PruningContainer", "unstructured")
setmetatable(PruningContainer, {__index = Method, __call = function(cls, ...)
  local self = setmetatable({_pruning_methods = {}}, cls)
  for i = 1, select("#", ...) do self:add_pruning_method((select(i, ...))) end
  return self
end})
function PruningContainer:add_pruning_method(method)
  if not is_method(method) then
    fail("PruningContainer: %s is not a BasePruningMethod subclass", type_of(method))
  end
  local list = self._pruning_methods
  list[#list + 1] = method
end
function PruningContainer:compute_mask(t, default_mask)
  local method = self._pruning_methods[#self._pruning_methods]
  local mask = default_mask
  local new_mask = mask:clone()
  local ptype = method.PRUNING_TYPE
  if ptype == "unstructured" then
    local slc = mask:eq(1)
    local partial = method:compute_mask(t:masked_select(slc), mask:masked_select(slc))
    return new_mask:masked_scatter(slc, partial:to(new_mask:dtype()))
  elseif ptype == "structured" then
    local n = t:dim()
    local dim = resolve_dim("prune", method.dim, n)
    local c = mask:size(dim)
    local sums = mask:movedim(dim, 1):reshape(c, -1):sum(2):tolist()
    local keep = {}
    for i, s in ipairs(sums) do if s ~= 0 then keep[#keep + 1] = i end end
    if #keep == 0 then return new_mask end
    local idx = idx_tensor(keep)
    local partial = method:compute_mask(t:index_select(dim, idx), mask:index_select(dim, idx))
    return new_mask:index_copy(dim, idx, partial:to(new_mask:dtype()))
  end
  return method:compute_mask(t, mask):to(new_mask:dtype())
end

local METHOD_DOC = {
  Identity = "prune.Identity(): a method that prunes nothing (the mask is all ones).",
  RandomUnstructured = "prune.RandomUnstructured(amount): prunes amount entries chosen at random (pt's generator).",
  L1Unstructured = "prune.L1Unstructured(amount): prunes the amount entries of smallest absolute value.",
  RandomStructured = "prune.RandomStructured(amount[, dim=-1]): prunes amount whole slices along dim chosen at random.",
  LnStructured = "prune.LnStructured(amount, n[, dim=-1]): prunes the amount slices along dim of smallest n-norm.",
  CustomFromMask = "prune.CustomFromMask(mask): prunes where mask is 0.",
  PruningContainer = "prune.PruningContainer(method, ...): methods applied in turn, each among what the ones before left.",
}
for k, text in pairs(METHOD_DOC) do
  doc(prune[k], text .. "\n  method:compute_mask(t, default_mask) -> the new mask (default_mask times the method's).")
  doc(prune[k].compute_mask, fmt("%s:compute_mask(t, default_mask) -> the new mask: default_mask with the entries\n"
    .. "  this method prunes (judged by t, of default_mask's shape) set to 0.", k))
end
doc(PruningContainer.add_pruning_method, "container:add_pruning_method(method): appends method; compute_mask applies the last one\n"
  .. "  among the entries (unstructured) or slices (structured) default_mask leaves.")
doc(Method, "prune.BasePruningMethod: the class the pruning methods share (PRUNING_TYPE: \"unstructured\", \"structured\"\n"
  .. "  or \"global\"; method:compute_mask(t, default_mask)).")

-- ------------------------------------------------------------------ applying to modules

local HOOKS, BEFORE = "_prune_hooks", "_prune_forward_before"

local function apply_mask(m, name)
  local p, b = rawget(m, "_parameters"), rawget(m, "_buffers")
  local orig, mask = p[name .. "_orig"], b[name .. "_mask"]
  if orig == nil or mask == nil then
    fail("Module %s has to be pruned: it has no %s_orig parameter or %s_mask buffer", class_name(m), name, name)
  end
  return orig * mask
end

local function mask_hook_weight(m, h) return apply_mask(m, h.name) end

local function forward_with_masks(self, ...)
  return utils._forward_with_weights(self, HOOKS, BEFORE, mask_hook_weight, ...)
end

local function find_hook(m, name)
  for i, h in ipairs(rawget(m, HOOKS) or {}) do
    if h.name == name then return h, i end
  end
end

local function apply(fname, module, name, method, importance_scores)
  if not nn.is_module(module) then fail("%s: module must be a Module, got %s", fname, type_of(module)) end
  if type(name) ~= "string" then fail("%s: name must be a string, got %s", fname, type_of(name)) end
  local old = find_hook(module, name)
  local orig
  if old then orig = rawget(module, name)
  else
    orig = rawget(module, "_parameters")[name]
    if orig == nil then fail("%s: %s has no parameter '%s'", fname, class_name(module), name) end
  end
  if importance_scores ~= nil then
    if not pt.is_tensor(importance_scores) then
      fail("%s: importance_scores must be a tensor, got %s", fname, type_of(importance_scores))
    end
    if shape_of(importance_scores) ~= shape_of(orig) then
      fail("%s: importance_scores should have the same shape as parameter %s of %s (%s, got %s)", fname, name,
        class_name(module), shape_of(orig), shape_of(importance_scores))
    end
  else
    importance_scores = orig
  end
  local full = method
  if old then
    if getmetatable(old.method) == PruningContainer then full = PruningContainer(table.unpack(old.method._pruning_methods))
    else full = PruningContainer(old.method) end
    full:add_pruning_method(method)
  end
  local default_mask
  if not old then default_mask = pt.ones_like(orig)
  else default_mask = rawget(module, "_buffers")[name .. "_mask"]:detach():clone() end
  -- the mask first: a failing method leaves the module as it was
  local mask = pt.no_grad(function() return full:compute_mask(importance_scores:detach(), default_mask) end)
  if old then rawget(module, "_buffers")[name .. "_mask"] = mask
  else
    module[name] = nil
    module:register_parameter(name .. "_orig", orig)
    module:register_buffer(name .. "_mask", mask)
  end
  if old then old.method = full
  else
    local hooks = utils._hook_list(module, HOOKS, BEFORE, forward_with_masks)
    hooks[#hooks + 1] = {name = name, method = full}
  end
  rawset(module, name, apply_mask(module, name))
  return module
end

-- the method's settings, then optionally importance_scores, positionally or in a trailing table
local function module_fn(fname, cls, specs, has_scores)
  local all = {{"module", any, A.REQUIRED}, {"name", any, A.REQUIRED}}
  for _, s in ipairs(specs) do all[#all + 1] = s end
  if has_scores then all[#all + 1] = {"importance_scores", any, nil} end
  return function(...)
    local o = A.parse(fname, all, ...)
    local args = {}
    for i, s in ipairs(specs) do args[i] = o[s[1]] end
    local ok, method = pcall(cls, table.unpack(args, 1, #specs))
    if not ok then error((method:gsub("^[%w]+: ", fname .. ": ")), 0) end
    return apply(fname, o.module, o.name, method, o.importance_scores)
  end
end

prune.identity = module_fn("identity", Identity, {})
doc(prune.identity, "nn.utils.prune.identity(module, name) -> module, pruned with an all-ones mask (name_orig, name_mask, as the others).")

prune.random_unstructured = module_fn("random_unstructured", RandomUnstructured, {{"amount", any, A.REQUIRED}})
doc(prune.random_unstructured, [==[nn.utils.prune.random_unstructured(module, name, amount) -> module
  Prunes amount (a fraction, or an integer count) of the entries of parameter name not pruned yet, chosen at
  random with pt's generator: name_orig holds the parameter, name_mask the mask, module.name = orig * mask.]==])

prune.l1_unstructured = module_fn("l1_unstructured", L1Unstructured, {{"amount", any, A.REQUIRED}}, true)
doc(prune.l1_unstructured, [==[nn.utils.prune.l1_unstructured(module, name, amount[, importance_scores]) -> module
  Prunes the amount (a fraction, or an integer count) entries of smallest absolute value (of importance_scores
  when given, a tensor of the parameter's shape) among those not pruned yet. Ties: the lower flat index is
  pruned first (PyTorch's topk picks among equal values in no documented order).]==])

prune.random_structured = module_fn("random_structured", RandomStructured,
  {{"amount", any, A.REQUIRED}, {"dim", any, A.REQUIRED}})
doc(prune.random_structured, [==[nn.utils.prune.random_structured(module, name, amount, dim) -> module
  Prunes amount (a fraction, or an integer count) whole slices along dim (1-based, negative from the end),
  chosen at random among the slices not pruned yet (pt's generator). The parameter needs 2 dims or more.]==])

prune.ln_structured = module_fn("ln_structured", LnStructured,
  {{"amount", any, A.REQUIRED}, {"n", any, A.REQUIRED}, {"dim", any, A.REQUIRED}}, true)
doc(prune.ln_structured, [==[nn.utils.prune.ln_structured(module, name, amount, n, dim[, importance_scores]) -> module
  Prunes the amount (a fraction, or an integer count) slices along dim (1-based, negative from the end) of
  smallest n-norm (over every other dim; n a number, math.huge / -math.huge, or "fro"), among the slices not
  pruned yet. Ties: the higher index is pruned first (the lower kept).]==])

prune.custom_from_mask = module_fn("custom_from_mask", CustomFromMask, {{"mask", any, A.REQUIRED}})
doc(prune.custom_from_mask, "nn.utils.prune.custom_from_mask(module, name, mask) -> module, pruned where mask (the parameter's shape) is 0.")

function prune.global_unstructured(parameters, pruning_method, opts)
  local fname = "global_unstructured"
  if type(parameters) ~= "table" then fail("%s: parameters is not an Iterable (a list of {module, name}), got %s", fname, type_of(parameters)) end
  if pruning_method == nil then fail("%s: missing argument 'pruning_method'", fname) end
  if type(pruning_method) ~= "table" or getmetatable(pruning_method) == nil or not pruning_method.compute_mask then
    fail("%s: pruning_method must be a pruning method class (prune.L1Unstructured, ...), got %s", fname, type_of(pruning_method))
  end
  opts = opts or {}
  if type(opts) ~= "table" then fail("%s: options must be a table, got %s", fname, type_of(opts)) end
  local kwargs, scores = {}, opts.importance_scores
  for k, v in pairs(opts) do if k ~= "importance_scores" then kwargs[k] = v end end
  local ok, method = pcall(pruning_method, kwargs)
  if not ok then error((method:gsub("^[%w]+: ", fname .. ": ")), 0) end
  if method.PRUNING_TYPE ~= "unstructured" then
    fail("%s: Only \"unstructured\" PRUNING_TYPE supported for the `pruning_method`. Found method %s of type %s",
      fname, rawget(pruning_method, "__name") or "?", method.PRUNING_TYPE)
  end
  if scores ~= nil and type(scores) ~= "table" then
    fail("%s: importance_scores must be a list of tensors (one per entry of parameters), got %s", fname, type_of(scores))
  end
  local flat_scores, flat_masks, sizes = {}, {}, {}
  for i, e in ipairs(parameters) do
    if type(e) ~= "table" or not nn.is_module(e[1]) or type(e[2]) ~= "string" then
      fail("%s: parameters[%d] must be {module, name}", fname, i)
    end
    local m, name = e[1], e[2]
    local p = m[name]
    if not pt.is_tensor(p) then fail("%s: %s has no parameter '%s'", fname, class_name(m), name) end
    local s = scores and scores[i] or p
    if not pt.is_tensor(s) or shape_of(s) ~= shape_of(p) then
      fail("%s: importance_scores[%d] should have the same shape as parameter %s of %s", fname, i, name, class_name(m))
    end
    flat_scores[i] = s:detach():reshape(-1)
    local mask = rawget(m, "_buffers")[name .. "_mask"]
    flat_masks[i] = mask and mask:reshape(-1) or pt.ones_like(p):reshape(-1)
    sizes[i] = p:numel()
  end
  if #flat_scores == 0 then return end
  local container = PruningContainer(method)
  local final = pt.no_grad(function()
    return container:compute_mask(pt.cat(flat_scores), pt.cat(flat_masks))
  end)
  local off = 1
  for i, e in ipairs(parameters) do
    local p = e[1][e[2]]
    local mask = final:narrow(1, off, sizes[i]):view_as(p)
    off = off + sizes[i]
    apply(fname, e[1], e[2], CustomFromMask(mask))
  end
end
doc(prune.global_unstructured, [==[nn.utils.prune.global_unstructured(parameters, pruning_method[, {amount=, importance_scores=}])
  Prunes the tensors of parameters (a list of {module, name}) together, as one flat tensor: pruning_method is
  an unstructured method class (prune.L1Unstructured, prune.RandomUnstructured) built with the options
  (importance_scores aside: a list of tensors, one per entry of parameters). Each tensor then gets its part
  of the mask through custom_from_mask (PyTorch's importance_scores dict is a list here).]==])

function prune.remove(module, name)
  local fname = "remove"
  if not nn.is_module(module) then fail("%s: module must be a Module, got %s", fname, type_of(module)) end
  local h, i = find_hook(module, name)
  if not h then
    fail("%s: Parameter '%s' of module %s has to be pruned before pruning can be removed", fname, tostring(name),
      class_name(module))
  end
  local w = pt.no_grad(apply_mask, module, name)
  local orig = rawget(module, "_parameters")[name .. "_orig"]
  pt.no_grad(function() orig:copy_(w) end)
  utils._remove_hook(module, HOOKS, BEFORE, i)
  rawset(module, name, nil)
  module[name .. "_orig"] = nil
  module[name .. "_mask"] = nil
  module:register_parameter(name, orig)
  return module
end
doc(prune.remove, [==[nn.utils.prune.remove(module, name) -> module: makes the pruning of name permanent: name is a plain
  parameter again (the name_orig tensor object) holding orig * mask; name_orig and name_mask are gone.]==])

function prune.is_pruned(module)
  if not nn.is_module(module) then fail("is_pruned: module must be a Module, got %s", type_of(module)) end
  for _, m in ipairs(module:modules()) do
    local h = rawget(m, HOOKS)
    if h and #h > 0 then return true end
  end
  return false
end
doc(prune.is_pruned, "nn.utils.prune.is_pruned(module) -> true when module or one of its submodules has a pruned parameter.")

return prune
