-- partrain.optim: optimizers (PyTorch's update formulas), schedulers and gradient clipping.
--   local opt = optim.SGD(model:parameters(), {lr = 0.05, momentum = 0.9})
--   local opt = optim.Adam(model:parameters(), 1e-3)          -- positional lr (rotta_rs)
--   local opt = optim.SGD({{params = a, lr = 0.1}, {params = b}}, {lr = 0.01})  -- groups
-- step() updates every parameter of a group in one C call (pt._optim_*). Per-parameter state
-- (moment buffers as tensors, step counts) lives in opt.state[param].
local pt = require "partrain"

local optim = {}
local docs = pt._docs
local C = pt

local function doc(obj, text)
  docs[obj] = text
  return obj
end

local function is_module(v)
  local mt = type(v) == "table" and getmetatable(v)
  return mt and rawget(mt, "__is_module") == true
end

-- ------------------------------------------------------------------ Optimizer base

local Optimizer = {}
Optimizer.__index = Optimizer
optim.Optimizer = Optimizer

local function check_param_list(name, list, where)
  if is_module(list) then list = list:parameters() end
  if pt.is_tensor(list) then list = {list} end
  if type(list) ~= "table" then
    error(string.format("%s: %s must be a list of tensors, got %s", name, where, type(list)), 4)
  end
  local out = {}
  for i, p in ipairs(list) do
    if not pt.is_tensor(p) then
      error(string.format("%s: parameter %d is not a tensor (got %s)", name, i, type(p)), 4)
    end
    if not p.is_leaf then
      error(string.format("%s: can't optimize a non-leaf tensor (parameter %d)", name, i), 4)
    end
    out[i] = p
  end
  return out
end

-- cls: the optimizer class; defaults: its hyperparameters (nil = required); _validate(name, group)
local function new_optimizer(cls, params, lr_or_opts, maybe_opts)
  local name = cls.name
  local opts = lr_or_opts
  if type(lr_or_opts) == "number" then
    opts = {}
    for k, v in pairs(maybe_opts or {}) do opts[k] = v end
    opts.lr = lr_or_opts
  end
  opts = opts or {}
  if type(opts) ~= "table" then
    error(string.format("%s: options must be a table or a learning rate, got %s", name, type(opts)), 3)
  end
  local self = setmetatable({defaults = {}, param_groups = {}, state = {}}, cls)
  for k, v in pairs(cls.defaults) do self.defaults[k] = v end
  for k, v in pairs(opts) do
    if cls.defaults[k] == nil and not cls.allowed[k] then
      error(string.format("%s: unknown option '%s'", name, tostring(k)), 3)
    end
    self.defaults[k] = v
  end
  -- groups or a plain list
  local groups
  if type(params) == "table" and not is_module(params) and type(params[1]) == "table"
    and not pt.is_tensor(params[1]) and params[1].params ~= nil then
    groups = params
  else
    groups = {{params = params}}
  end
  local seen = {}
  for _, g in ipairs(groups) do
    local group = {}
    for k, v in pairs(g) do group[k] = v end
    group.params = check_param_list(name, g.params, "params")
    for k, v in pairs(self.defaults) do
      if group[k] == nil then group[k] = v end
    end
    if group.lr == nil then error(name .. ": lr is required (optim." .. name .. "(params, {lr = ...}))", 3) end
    cls._validate(name, group)
    group._states = {}
    for i, p in ipairs(group.params) do
      if seen[p] then error(name .. ": some parameters appear in more than one parameter group", 3) end
      seen[p] = true
      local st = {}
      self.state[p] = st
      group._states[i] = st
    end
    self.param_groups[#self.param_groups + 1] = group
  end
  if #self.param_groups == 0 or (#self.param_groups == 1 and #self.param_groups[1].params == 0) then
    error(name .. ": optimizer got an empty parameter list", 3)
  end
  return self
end

local function make_class(name, defaults, allowed, validate, kernel, opts_of)
  local cls = setmetatable({name = name, defaults = defaults, allowed = allowed or {},
    _validate = validate}, {__index = Optimizer})
  cls.__index = cls
  cls.__tostring = Optimizer.__tostring
  cls._kernel = kernel
  cls._opts_of = opts_of
  optim[name] = setmetatable(cls, {
    __index = Optimizer,
    __call = function(c, params, lr_or_opts, maybe_opts)
      return new_optimizer(c, params, lr_or_opts, maybe_opts)
    end,
  })
  return cls
end

function Optimizer:step(closure)
  local loss
  if closure then loss = pt.enable_grad(closure) end
  local kernel, opts_of, name = self._kernel, self._opts_of, self.name
  for _, g in ipairs(self.param_groups) do
    kernel(g.params, g._states, opts_of(g), name)
  end
  return loss
end
doc(Optimizer.step, "opt:step([closure]) -> loss of closure if given; updates every parameter that has a .grad.")

function Optimizer:zero_grad(opts)
  local none = opts and opts.set_to_none
  for _, g in ipairs(self.param_groups) do C._nn_zero_grads(g.params, none) end
end
doc(Optimizer.zero_grad, "opt:zero_grad([{set_to_none=false}]): zeroes the .grad of every parameter in place (no allocation);\n  set_to_none=true sets them to nil instead.")

function Optimizer:add_param_group(g)
  if type(g) ~= "table" or g.params == nil then
    error(self.name .. ":add_param_group: expected a table with a params field", 2)
  end
  local group = {}
  for k, v in pairs(g) do group[k] = v end
  group.params = check_param_list(self.name, g.params, "params")
  for k, v in pairs(self.defaults) do
    if group[k] == nil then group[k] = v end
  end
  getmetatable(self)._validate(self.name, group)
  group._states = {}
  for i, p in ipairs(group.params) do
    if self.state[p] then error(self.name .. ": some parameters appear in more than one parameter group", 2) end
    local st = {}
    self.state[p] = st
    group._states[i] = st
  end
  self.param_groups[#self.param_groups + 1] = group
end
doc(Optimizer.add_param_group, "opt:add_param_group({params=..., lr=...}): adds a group; missing options come from the defaults.")

-- what each optimizer keeps per parameter: a state dict of another optimizer is refused on loading
-- (PyTorch loads it and fails at the next step with KeyError: 'step', or trains on wrong buffers)
local adam_keys = {step = true, exp_avg = true, exp_avg_sq = true, max_exp_avg_sq = true}
local STATE_KEYS = {SGD = {momentum_buffer = true}, Adam = adam_keys, AdamW = adam_keys,
  RMSprop = {step = true, square_avg = true, momentum_buffer = true, grad_avg = true},
  Adagrad = {step = true, sum = true}}

local function key_list(set)
  local l = {}
  for k in pairs(set) do l[#l + 1] = k end
  table.sort(l)
  return table.concat(l, ", ")
end

local STATE_TENSORS = {"momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq", "square_avg",
  "grad_avg", "sum"}

function Optimizer:state_dict()
  local state, groups, idx = {}, {}, 0
  for _, g in ipairs(self.param_groups) do
    local group = {params = {}}
    for k, v in pairs(g) do
      if k ~= "params" and k ~= "_states" then group[k] = v end
    end
    for i = 1, #g.params do
      idx = idx + 1
      group.params[i] = idx
      local st = g._states[i]
      if next(st) ~= nil then
        local e = {}
        for k, v in pairs(st) do
          if k == "step" then e.step = pt.tensor(v, {dtype = "float64"}) else e[k] = v end
        end
        state[idx] = e
      end
    end
    groups[#groups + 1] = group
  end
  return {state = state, param_groups = groups}
end
doc(Optimizer.state_dict, [[opt:state_dict() -> {state = {[i] = {step=, exp_avg=, ...}}, param_groups = {{lr=, ..., params={1, 2, ...}}}}
  Parameters are numbered from 1 across groups in order; buffers and step counts are tensors (step as a
  0-d float64 tensor), so checkpoints can store them.]])

function Optimizer:load_state_dict(sd)
  local name = self.name .. ":load_state_dict"
  if type(sd) ~= "table" or type(sd.param_groups) ~= "table" then
    error(name .. ": expected a table with param_groups (from opt:state_dict())", 2)
  end
  if #sd.param_groups ~= #self.param_groups then
    error(string.format("%s: loaded state dict has %d parameter groups, optimizer has %d", name,
      #sd.param_groups, #self.param_groups), 2)
  end
  local params = {}
  for gi, g in ipairs(self.param_groups) do
    local sg = sd.param_groups[gi]
    if type(sg) ~= "table" then
      error(string.format("%s: parameter group %d of the state dict is a %s, not a table", name, gi, type(sg)), 2)
    end
    if type(sg.params) ~= "table" or #sg.params ~= #g.params then
      error(string.format("%s: parameter group %d has %d parameters in the state dict, %d in the optimizer",
        name, gi, type(sg.params) == "table" and #sg.params or 0, #g.params), 2)
    end
    for i, p in ipairs(g.params) do params[sg.params[i]] = {p, g, i} end
    local cls = getmetatable(self)
    local keys = {}
    for k in pairs(sg) do keys[#keys + 1] = tostring(k) end
    table.sort(keys) -- the first in name order is reported, the same on every run
    for _, k in ipairs(keys) do
      -- initial_lr: what a scheduler records in each group (PyTorch's too)
      if k ~= "params" and k ~= "_states" and k ~= "initial_lr" and cls.defaults[k] == nil and not cls.allowed[k] then
        error(string.format("%s: parameter group %d has option '%s', which %s does not take: a state dict "
          .. "of another optimizer?", name, gi, tostring(k), self.name), 2)
      end
    end
    -- the loaded hyperparameters must pass the checks the constructor makes
    local merged = {}
    for k, v in pairs(g) do merged[k] = v end
    for k, v in pairs(sg) do
      if k ~= "params" and k ~= "_states" then merged[k] = v end
    end
    getmetatable(self)._validate(name, merged)
  end
  if sd.state ~= nil and type(sd.state) ~= "table" then
    error(string.format("%s: state must be a table, got %s", name, type(sd.state)), 2)
  end
  -- validate everything before changing anything
  local new_states = {}
  for idx, e in pairs(sd.state or {}) do
    local target = params[idx]
    if not target then error(string.format("%s: state for unknown parameter %s", name, tostring(idx)), 2) end
    local p = target[1]
    if type(e) ~= "table" then
      error(string.format("%s: state of parameter %d is a %s, not a table", name, idx, type(e)), 2)
    end
    local st, known = {}, STATE_KEYS[self.name]
    for k, v in pairs(e) do
      if known and not known[k] then
        error(string.format("%s: state '%s' of parameter %d is not one %s keeps (%s): a state dict of "
          .. "another optimizer?", name, tostring(k), idx, self.name, key_list(known)), 2)
      end
      if k == "step" then
        local n = pt.is_tensor(v) and v:item() or v
        st.step = math.tointeger(n) or error(string.format("%s: step of parameter %d is not an integer", name, idx), 2)
      elseif not pt.is_tensor(v) and known then
        error(string.format("%s: state '%s' of parameter %d is a %s, not a tensor", name, k, idx, type(v)), 2)
      elseif pt.is_tensor(v) then
        if table.concat(v:size(), ",") ~= table.concat(p:size(), ",") then
          error(string.format("%s: state '%s' of parameter %d has shape {%s}, expected {%s}", name, k, idx,
            table.concat(v:size(), ","), table.concat(p:size(), ",")), 2)
        end
        local c = pt.empty_like(p)
        C._nn_copy_(c, v)
        st[k] = c
      else
        st[k] = v
      end
    end
    new_states[idx] = st
  end
  for gi, g in ipairs(self.param_groups) do
    for k, v in pairs(sd.param_groups[gi]) do
      if k ~= "params" and k ~= "_states" then g[k] = v end
    end
  end
  for idx, target in pairs(params) do
    local p, g, i = target[1], target[2], target[3]
    local st = g._states[i]
    for k in pairs(st) do st[k] = nil end
    for k, v in pairs(new_states[idx] or {}) do st[k] = v end
    self.state[p] = st
  end
end
doc(Optimizer.load_state_dict, "opt:load_state_dict(sd): restores hyperparameters, step counts and buffers (copied) saved by opt:state_dict().")

function Optimizer:__tostring()
  local lines = {self.name .. " ("}
  for i, g in ipairs(self.param_groups) do
    lines[#lines + 1] = string.format("Parameter Group %d", i)
    local keys = {}
    for k in pairs(g) do
      if k ~= "params" and k ~= "_states" then keys[#keys + 1] = k end
    end
    table.sort(keys)
    for _, k in ipairs(keys) do
      local v = g[k]
      if type(v) == "table" then v = "{" .. table.concat(v, ", ") .. "}" end
      lines[#lines + 1] = string.format("    %s: %s", k, tostring(v))
    end
  end
  lines[#lines + 1] = ")"
  return table.concat(lines, "\n")
end

local function num_str(v)
  if v ~= v then return "nan" end
  return tostring(v)
end

-- every option of cls.types ("number" / "boolean") has that type (checked before the ranges)
local function check_types(name, group, types)
  for _, key in ipairs(types.number or {}) do
    local v = group[key]
    if type(v) ~= "number" then
      error(string.format("%s: option '%s' must be a number, got %s", name, key,
        v == nil and "nil" or type(v) .. (type(v) == "string" and " '" .. v .. "'" or "")), 4)
    end
  end
  for _, key in ipairs(types.boolean or {}) do
    local v = group[key]
    if type(v) ~= "boolean" then
      error(string.format("%s: option '%s' must be a boolean, got %s", name, key, type(v)), 4)
    end
  end
end

-- PyTorch's "Invalid learning rate: -1"; NaN is never valid
local function check_nonneg(name, group, key, what)
  local v = group[key]
  if type(v) ~= "number" or not (v >= 0) then
    error(string.format("%s: invalid %s: %s", name, what or key, num_str(v)), 4)
  end
end

local function check_not_nan(name, group, key, what)
  local v = group[key]
  if v ~= v then error(string.format("%s: invalid %s: nan", name, what or key), 4) end
end

-- ------------------------------------------------------------------ SGD

local sgd_opts = {}
make_class("SGD", {momentum = 0, dampening = 0, weight_decay = 0, nesterov = false, maximize = false},
  {lr = true},
  function(name, g)
    check_types(name, g, {number = {"lr", "momentum", "dampening", "weight_decay"},
      boolean = {"nesterov", "maximize"}})
    check_nonneg(name, g, "lr", "learning rate")
    check_nonneg(name, g, "momentum", "momentum value")
    check_nonneg(name, g, "weight_decay", "weight_decay value")
    check_not_nan(name, g, "dampening", "dampening value")
    if g.nesterov and (g.momentum <= 0 or g.dampening ~= 0) then
      error(name .. ": nesterov momentum requires a momentum and zero dampening", 4)
    end
  end,
  C._optim_sgd,
  function(g)
    local o = sgd_opts
    o.lr, o.momentum, o.dampening, o.weight_decay = g.lr, g.momentum, g.dampening, g.weight_decay
    o.nesterov, o.maximize = g.nesterov, g.maximize
    return o
  end)
doc(optim.SGD, [[optim.SGD(params, {lr=, momentum=0, dampening=0, weight_decay=0, nesterov=false, maximize=false})
  PyTorch's SGD: d = g + wd*p; buf = momentum*buf + (1-dampening)*d (buf = d on the first step);
  d = nesterov and d + momentum*buf or buf; p = p - lr*d. lr is required.]])

-- ------------------------------------------------------------------ Adam / AdamW

local function adam_validate(name, g)
  check_types(name, g, {number = {"lr", "eps", "weight_decay"}, boolean = {"amsgrad", "maximize"}})
  check_nonneg(name, g, "lr", "learning rate")
  check_nonneg(name, g, "eps", "epsilon value")
  check_nonneg(name, g, "weight_decay", "weight_decay value")
  if type(g.betas) ~= "table" then error(name .. ": betas must be a table {beta1, beta2}", 4) end
  for i = 1, 2 do
    local b = g.betas[i]
    if type(b) ~= "number" or not (b >= 0 and b < 1) then
      error(string.format("%s: invalid beta parameter at index %d: %s", name, i, num_str(b)), 4)
    end
  end
end

local function adam_opts_of(decoupled)
  local o = {}
  return function(g)
    o.lr, o.beta1, o.beta2, o.eps = g.lr, g.betas[1], g.betas[2], g.eps
    o.weight_decay, o.amsgrad, o.maximize, o.decoupled = g.weight_decay, g.amsgrad, g.maximize, decoupled
    return o
  end
end

make_class("Adam", {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0, amsgrad = false,
  maximize = false}, nil, adam_validate, C._optim_adam, adam_opts_of(false))
doc(optim.Adam, [[optim.Adam(params[, lr | {lr=1e-3, betas={0.9, 0.999}, eps=1e-8, weight_decay=0, amsgrad=false}])
  PyTorch's Adam with bias correction; weight_decay adds wd*p to the gradient (L2).
  optim.Adam(params, 0.01) takes a positional learning rate.]])

make_class("AdamW", {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 1e-2, amsgrad = false,
  maximize = false}, nil, adam_validate, C._optim_adam, adam_opts_of(true))
doc(optim.AdamW, [[optim.AdamW(params[, lr | {lr=1e-3, betas={0.9, 0.999}, eps=1e-8, weight_decay=0.01, amsgrad=false}])
  Adam with decoupled weight decay: p = p * (1 - lr*wd) before the Adam update.]])

-- ------------------------------------------------------------------ RMSprop, Adagrad

local rms_opts = {}
make_class("RMSprop", {lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0,
  centered = false, maximize = false}, nil,
  function(name, g)
    check_types(name, g, {number = {"lr", "alpha", "eps", "weight_decay", "momentum"},
      boolean = {"centered", "maximize"}})
    check_nonneg(name, g, "lr", "learning rate")
    check_nonneg(name, g, "eps", "epsilon value")
    check_nonneg(name, g, "momentum", "momentum value")
    check_nonneg(name, g, "weight_decay", "weight_decay value")
    check_nonneg(name, g, "alpha", "alpha value")
  end,
  C._optim_rmsprop,
  function(g)
    local o = rms_opts
    o.lr, o.alpha, o.eps, o.weight_decay, o.momentum = g.lr, g.alpha, g.eps, g.weight_decay, g.momentum
    o.centered, o.maximize = g.centered, g.maximize
    return o
  end)
doc(optim.RMSprop, [[optim.RMSprop(params[, lr | {lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=false}])
  PyTorch's RMSprop: v = alpha*v + (1-alpha)*g^2; p = p - lr*g/(sqrt(v)+eps) (centered subtracts the mean
  gradient squared; momentum keeps a buffer of g/(sqrt(v)+eps)).]])

local ada_opts = {}
make_class("Adagrad", {lr = 1e-2, lr_decay = 0, weight_decay = 0, initial_accumulator_value = 0,
  eps = 1e-10, maximize = false}, nil,
  function(name, g)
    check_types(name, g, {number = {"lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps"},
      boolean = {"maximize"}})
    check_nonneg(name, g, "lr", "learning rate")
    check_nonneg(name, g, "lr_decay", "lr_decay value")
    check_nonneg(name, g, "weight_decay", "weight_decay value")
    check_nonneg(name, g, "initial_accumulator_value", "initial_accumulator_value")
    check_nonneg(name, g, "eps", "epsilon value")
  end,
  C._optim_adagrad,
  function(g)
    local o = ada_opts
    o.lr, o.lr_decay, o.weight_decay, o.eps = g.lr, g.lr_decay, g.weight_decay, g.eps
    o.initial_accumulator_value, o.maximize = g.initial_accumulator_value, g.maximize
    return o
  end)
doc(optim.Adagrad, [[optim.Adagrad(params[, lr | {lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10}])
  s = s + g^2; p = p - clr*g/(sqrt(s)+eps) with clr = lr/(1+(step-1)*lr_decay).]])

-- ------------------------------------------------------------------ clipping

local function param_list(fname, params)
  if is_module(params) then return params:parameters() end
  if pt.is_tensor(params) then return {params} end
  if type(params) ~= "table" then
    error(fname .. ": expected a list of tensors or a Module, got " .. type(params), 3)
  end
  return params
end

function optim.clip_grad_norm(params, max_norm, opts)
  local list = param_list("clip_grad_norm", params)
  if type(max_norm) ~= "number" then
    error("clip_grad_norm: max_norm must be a number, got " .. type(max_norm), 2)
  end
  if opts ~= nil and type(opts) ~= "table" then
    error("clip_grad_norm: options must be a table, got " .. type(opts), 2)
  end
  local p = opts and opts.norm_type or 2
  if p == "inf" then p = math.huge end
  if type(p) ~= "number" or not (p > 0) then
    error("clip_grad_norm: norm_type must be a positive number or \"inf\", got " .. num_str(p), 2)
  end
  return (C._optim_clip_grad_norm(list, max_norm, p))
end
optim.clip_grad_norm_ = optim.clip_grad_norm
doc(optim.clip_grad_norm, "optim.clip_grad_norm(params, max_norm[, {norm_type=2}]) -> total norm of all gradients (before clipping);\n  scales the gradients in place by max_norm/(total+1e-6) when that is below 1. norm_type may be math.huge or \"inf\".")

function optim.clip_grad_value(params, value)
  local list = param_list("clip_grad_value", params)
  if type(value) ~= "number" or not (value >= 0) then
    error("clip_grad_value: clip_value must be a non-negative number, got " .. num_str(value), 2)
  end
  C._optim_clip_grad_value(list, value)
end
optim.clip_grad_value_ = optim.clip_grad_value
doc(optim.clip_grad_value, "optim.clip_grad_value(params, value): clamps every gradient element into [-value, value].")

-- ------------------------------------------------------------------ schedulers

local Scheduler = {}
Scheduler.__index = Scheduler
optim.LRScheduler = Scheduler

-- settings: the constructor's options, kept as fields of the scheduler (sched.gamma, as PyTorch's
-- attributes) that the formulas read at every step, so changing one takes effect; printed in the
-- order of cls._repr_keys (StepLR(step_size=10, gamma=0.1, last_epoch=3)) and saved by state_dict.
-- get_factor(self, epoch) -> factor, or get_lr(self, i, base, epoch) -> lr.
local function new_scheduler(cls, opt, get_factor, get_lr, settings)
  if type(opt) ~= "table" or type(opt.param_groups) ~= "table" then
    error(cls.name .. ": expected an optimizer as the first argument", 3)
  end
  local self = setmetatable({optimizer = opt, last_epoch = 0, base_lrs = {}, factor = get_factor,
    get_lr = get_lr}, cls)
  for k, v in pairs(settings or {}) do self[k] = v end
  for i, g in ipairs(opt.param_groups) do
    if g.initial_lr == nil then g.initial_lr = g.lr end
    self.base_lrs[i] = g.initial_lr
  end
  self:_apply()
  return self
end

function Scheduler:_apply()
  self._last_lr = {}
  for i, g in ipairs(self.optimizer.param_groups) do
    g.lr = self:get_lr(i, self.base_lrs[i], self.last_epoch)
    self._last_lr[i] = g.lr
  end
end

function Scheduler:get_lr(i, base, epoch)
  return base * self.factor(self, epoch)
end
doc(Scheduler.get_lr, "sched:get_lr(i, base_lr, epoch) -> the learning rate of parameter group i at epoch (base_lr: its\n"
  .. "  initial lr). step() sets each group's lr to it; a scheduler's formula is in help(optim.<Scheduler>).")

local function setting_str(v)
  if math.type(v) == "float" then
    if v ~= v then return "nan" end
    return (string.format("%.6g", v))
  end
  if type(v) == "function" then return "<function>" end
  return tostring(v)
end

function Scheduler:__tostring()
  local parts = {}
  for _, k in ipairs(rawget(getmetatable(self), "_repr_keys") or {}) do
    parts[#parts + 1] = k .. "=" .. setting_str(rawget(self, k))
  end
  parts[#parts + 1] = "last_epoch=" .. tostring(self.last_epoch)
  return (self.name or "LRScheduler") .. "(" .. table.concat(parts, ", ") .. ")"
end

-- A group added with opt:add_param_group after the scheduler was created has no base lr here.
-- PyTorch 1.13 has no one rule for it (StepLR and LinearLR scale its lr from where it is,
-- LambdaLR leaves it alone, CosineAnnealingLR pins it at eta_min), so this is an error.
local function check_groups(self, fname)
  local n, m = #self.optimizer.param_groups, #self.base_lrs
  if n < m then
    error(string.format("%s:%s: the optimizer has %d parameter groups, the scheduler was created for %d",
      self.name, fname, n, m), 3)
  elseif n > m then
    error(string.format("%s:%s: parameter group%s %s added after the scheduler was created (it knows %d); "
      .. "create the scheduler after add_param_group, or create a new one and load this one's state_dict "
      .. "to go on from epoch %d", self.name, fname, n - m > 1 and "s" or "",
      n - m > 1 and string.format("%d..%d were", m + 1, n) or string.format("%d was", n), m, self.last_epoch), 3)
  end
end

function Scheduler:step()
  check_groups(self, "step")
  self.last_epoch = self.last_epoch + 1
  self:_apply()
end
doc(Scheduler.step, "sched:step(): advances one epoch (or step) and sets each group's lr.\n"
  .. "  Every parameter group must exist when the scheduler is created (add_param_group after it: an error).")

function Scheduler:get_last_lr()
  local out = {}
  for i, v in ipairs(self._last_lr) do out[i] = v end
  return out
end
doc(Scheduler.get_last_lr, "sched:get_last_lr() -> list of the learning rates last set, one per group.")

function Scheduler:state_dict()
  local b = {}
  for i, v in ipairs(self.base_lrs) do b[i] = v end
  local sd = {last_epoch = self.last_epoch, base_lrs = b}
  for _, k in ipairs(rawget(getmetatable(self), "_repr_keys") or {}) do
    local v = rawget(self, k)
    if type(v) == "number" then sd[k] = v end -- settings (a lambda stays with the code)
  end
  return sd
end
function Scheduler:load_state_dict(sd)
  if type(sd) ~= "table" or math.type(sd.last_epoch) ~= "integer" then
    error(self.name .. ":load_state_dict: expected a table with an integer last_epoch (from sched:state_dict())", 2)
  end
  check_groups(self, "load_state_dict")
  local base = sd.base_lrs or {}
  if type(base) ~= "table" or #base > #self.base_lrs then
    error(string.format("%s:load_state_dict: the state dict has %s base lrs, the scheduler %d groups", self.name,
      type(base) == "table" and tostring(#base) or "no list of", #self.base_lrs), 2)
  end
  for i, v in ipairs(base) do
    if type(v) ~= "number" then
      error(string.format("%s:load_state_dict: base lr %d is a %s, not a number", self.name, i, type(v)), 2)
    end
  end
  local settings = {}
  for k, v in pairs(sd) do
    if k ~= "last_epoch" and k ~= "base_lrs" then
      local known = false
      for _, rk in ipairs(rawget(getmetatable(self), "_repr_keys") or {}) do known = known or rk == k end
      if not known or type(rawget(self, k)) ~= "number" then
        error(string.format("%s:load_state_dict: '%s' is not a setting of %s (a state dict of another scheduler?)",
          self.name, tostring(k), self.name), 2)
      end
      if type(v) ~= "number" then
        error(string.format("%s:load_state_dict: setting '%s' is a %s, not a number", self.name, k, type(v)), 2)
      end
      settings[k] = v
    end
  end
  self.last_epoch = sd.last_epoch
  for i, v in ipairs(base) do self.base_lrs[i] = v end
  for k, v in pairs(settings) do self[k] = v end
  self:_apply()
end
doc(Scheduler.state_dict, "sched:state_dict() -> {last_epoch=, base_lrs=, and the scheduler's number settings (step_size=,\n"
  .. "  gamma=, ...)}; sched:load_state_dict(sd) restores it.")
doc(Scheduler.load_state_dict, "sched:load_state_dict(sd): goes on from a sched:state_dict() (its last_epoch, base lrs and\n"
  .. "  settings) and sets each group's lr for that epoch.")
doc(Scheduler, [[optim.LRScheduler: base of the learning-rate schedulers (StepLR, CosineAnnealingLR, LambdaLR, LinearLR, LinearWarmup)
  local sched = optim.StepLR(opt, {step_size = 10})   -- sets each group's lr for epoch 0
  for epoch = 1, n do train_one_epoch(); sched:step() end
  sched.last_epoch counts the step() calls; sched:get_last_lr() lists the lrs set. The settings are fields
  read at every step: after sched.gamma = 0.5 the next steps use the formula with the new value.
  Each step sets the lr from the formula of the base lr (a closed form), not from the current lr as
  PyTorch's chainable schedulers do: a changed setting applies to the whole formula, and an lr set by
  hand is replaced at the next step.]])

local function scheduler_class(name, ctor, text, repr_keys)
  local cls = setmetatable({name = name, _repr_keys = repr_keys}, {__index = Scheduler})
  cls.__index = cls
  cls.__tostring = Scheduler.__tostring
  optim[name] = setmetatable(cls, {
    __index = Scheduler,
    __call = function(c, opt, opts, ...)
      if type(opts) == "table" then -- a misspelled option is an error, never ignored
        for k in pairs(opts) do
          local known = false
          for _, rk in ipairs(repr_keys) do known = known or rk == k end
          if not known then
            error(string.format("%s: unknown option '%s' (options: %s)", name, tostring(k),
              table.concat(repr_keys, ", ")), 2)
          end
        end
      end
      return ctor(c, opt, opts, ...)
    end,
  })
  doc(optim[name], text)
  return cls
end

local function need_number(name, key, v, positive)
  if type(v) ~= "number" or (positive and v <= 0) then
    error(string.format("%s: %s must be a %snumber, got %s", name, key, positive and "positive " or "",
      tostring(v)), 4)
  end
  return v
end

scheduler_class("StepLR", function(cls, opt, opts)
  opts = opts or {}
  local step_size = need_number("StepLR", "step_size", opts.step_size, true)
  local gamma = opts.gamma or 0.1
  return new_scheduler(cls, opt, function(self, e) return self.gamma ^ (e // self.step_size) end, nil,
    {step_size = step_size, gamma = gamma})
end, "optim.StepLR(opt, {step_size=, gamma=0.1}): lr = base * gamma^floor(epoch/step_size).",
  {"step_size", "gamma"})

scheduler_class("CosineAnnealingLR", function(cls, opt, opts)
  opts = opts or {}
  local T_max = need_number("CosineAnnealingLR", "T_max", opts.T_max, true)
  local eta_min = opts.eta_min or 0
  return new_scheduler(cls, opt, nil, function(self, _, base, e)
    local lo = self.eta_min
    return lo + (base - lo) * (1 + math.cos(math.pi * e / self.T_max)) / 2
  end, {T_max = T_max, eta_min = eta_min})
end, "optim.CosineAnnealingLR(opt, {T_max=, eta_min=0}): lr = eta_min + (base-eta_min)*(1+cos(pi*epoch/T_max))/2.",
  {"T_max", "eta_min"})

scheduler_class("LambdaLR", function(cls, opt, fn)
  if type(fn) ~= "function" then error("LambdaLR: expected a function epoch -> factor", 3) end
  return new_scheduler(cls, opt, function(self, e) return self.lr_lambda(e) end, nil, {lr_lambda = fn})
end, "optim.LambdaLR(opt, fn): lr = base * fn(epoch).", {"lr_lambda"})

scheduler_class("LinearLR", function(cls, opt, opts)
  opts = opts or {}
  local s0, s1, n = opts.start_factor or 1 / 3, opts.end_factor or 1, opts.total_iters or 5
  need_number("LinearLR", "total_iters", n, true)
  return new_scheduler(cls, opt, function(self, e)
    local a, b, m = self.start_factor, self.end_factor, self.total_iters
    return a + (b - a) * math.min(e, m) / m
  end, nil,
    {start_factor = s0, end_factor = s1, total_iters = n})
end, "optim.LinearLR(opt, {start_factor=1/3, end_factor=1, total_iters=5}): factor moves linearly from start to end.",
  {"start_factor", "end_factor", "total_iters"})

scheduler_class("LinearWarmup", function(cls, opt, opts)
  opts = opts or {}
  local n = need_number("LinearWarmup", "warmup_steps", opts.warmup_steps, true)
  local s0 = opts.start_factor or 1 / n
  return new_scheduler(cls, opt, function(self, e)
    local a, m = self.start_factor, self.warmup_steps
    return a + (1 - a) * math.min(e, m) / m
  end, nil,
    {warmup_steps = n, start_factor = s0})
end, "optim.LinearWarmup(opt, {warmup_steps=, start_factor=1/warmup_steps}): lr grows linearly to its base value\n  over warmup_steps calls of step(), then stays.",
  {"warmup_steps", "start_factor"})

doc(Optimizer, "optim.Optimizer: base of SGD, Adam, AdamW, RMSprop, Adagrad (step, zero_grad, state_dict, param_groups).")

return optim
