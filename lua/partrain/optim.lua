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

local doc = pt._doc

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
  local seen = {} -- parameter -> {group, index}
  for gi, g in ipairs(groups) do
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
      local at = seen[p]
      if at and at[1] == gi then
        error(string.format("%s: parameter group %d lists the same tensor twice (parameters %d and %d)",
          name, gi, at[2], i), 3)
      end
      if at then error(name .. ": some parameters appear in more than one parameter group", 3) end
      seen[p] = {gi, i}
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

-- an option's value as the messages show it
local function option_str(v)
  return v == nil and "nil" or type(v) .. (type(v) == "string" and " '" .. v .. "'" or "")
end

-- Before a step, each option of a group has the type of its default (a table: that many numbers), so
-- that one set by hand since (group.lr = "x", group.betas = {0.9}, group.momentum = nil) is reported,
-- not taken as the kernel's default or failed on inside it. Values are not checked again: PyTorch's
-- step takes, say, a negative lr that a scheduler set.
local function check_group_types(name, g, defaults)
  if type(g.lr) ~= "number" then
    error(string.format("%s: option 'lr' must be a number, got %s", name, option_str(g.lr)), 3)
  end
  for k, d in pairs(defaults) do
    local v, td = g[k], type(d)
    if type(v) ~= td then
      error(string.format("%s: option '%s' must be a %s, got %s", name, k, td, option_str(v)), 3)
    end
    if td == "table" then
      for i = 1, #d do
        if type(v[i]) ~= "number" then
          error(string.format("%s: option '%s' must be a table of %d numbers, got %s at index %d", name, k, #d,
            option_str(v[i]), i), 3)
        end
      end
    end
  end
end

function Optimizer:step(closure)
  local loss
  if closure then loss = pt.enable_grad(closure) end
  local kernel, opts_of, name, defaults = self._kernel, self._opts_of, self.name, getmetatable(self).defaults
  for _, g in ipairs(self.param_groups) do
    check_group_types(name, g, defaults)
    kernel(g.params, g._states, opts_of(g), name)
  end
  return loss
end
doc(Optimizer.step, "opt:step([closure]) -> loss of closure if given; updates every parameter that has a .grad.")

function Optimizer:zero_grad(opts)
  local none = opts and opts.set_to_none
  -- a gradient from backward({create_graph = true}) is taken off its graph first (C._nn_zero_grads,
  -- as PyTorch 1.13's zero_grad: detach_() / requires_grad_(false)), so the next backward does not
  -- add onto that graph
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
  local listed = {}
  for i, p in ipairs(group.params) do
    if listed[p] then
      error(string.format("%s:add_param_group: the group lists the same tensor twice (parameters %d and %d)",
        self.name, listed[p], i), 2)
    end
    listed[p] = i
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
  Adagrad = {step = true, sum = true}, Adamax = {step = true, exp_avg = true, exp_inf = true},
  NAdam = {step = true, exp_avg = true, exp_avg_sq = true, mu_product = true},
  RAdam = {step = true, exp_avg = true, exp_avg_sq = true},
  Adadelta = {step = true, square_avg = true, acc_delta = true},
  Rprop = {step = true, prev = true, step_size = true}, ASGD = {step = true, eta = true, mu = true, ax = true}}
-- state kept as numbers (saved as 0-d float64 tensors)
local SCALAR_STATE = {mu_product = true, eta = true, mu = true}

local function key_list(set)
  local l = {}
  for k in pairs(set) do l[#l + 1] = k end
  table.sort(l)
  return table.concat(l, ", ")
end

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
          -- numbers (the step count, NAdam's mu_product) as 0-d float64 tensors, as PyTorch's
          if type(v) == "number" then e[k] = pt.tensor(v, {dtype = "float64"}) else e[k] = v end
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
      elseif SCALAR_STATE[k] then
        local n = pt.is_tensor(v) and v:numel() == 1 and v:item() or v
        if type(n) ~= "number" then
          error(string.format("%s: %s of parameter %d is not a number", name, k, idx), 2)
        end
        st[k] = n
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
      error(name .. ": nesterov momentum requires a momentum and zero dampening", 3)
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

-- The option check of an optimizer with betas (Adam, AdamW, Adamax, NAdam, RAdam): bools are its
-- flags, extra its other non-negative numbers (e.g. momentum_decay).
local function betas_validator(bools, extra)
  return function(name, g)
    check_types(name, g, {number = {"lr", "eps", "weight_decay", table.unpack(extra or {})}, boolean = bools})
    check_nonneg(name, g, "lr", "learning rate")
    check_nonneg(name, g, "eps", "epsilon value")
    check_nonneg(name, g, "weight_decay", "weight_decay value")
    for _, key in ipairs(extra or {}) do check_nonneg(name, g, key, key .. " value") end
    if type(g.betas) ~= "table" then error(name .. ": betas must be a table {beta1, beta2}", 3) end
    for i = 1, 2 do
      local b = g.betas[i]
      if type(b) ~= "number" or not (b >= 0 and b < 1) then
        error(string.format("%s: invalid beta parameter at index %d: %s", name, i, num_str(b)), 3)
      end
    end
  end
end
local adam_validate = betas_validator({"amsgrad", "maximize"})

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
  s = s + g^2; p = p - clr*g/(sqrt(s)+eps) with clr = lr/(1+(step-1)*lr_decay). The sum s starts at the
  initial_accumulator_value of the parameter's group (torch 1.13 fills every group's with the value given
  to the constructor, ignoring a group's own, and fails at the step of a group added by add_param_group).]])

-- ------------------------------------------------------------------ Adamax, NAdam, RAdam, Adadelta

local function betas_opts_of(extra)
  local o = {}
  return function(g)
    o.lr, o.beta1, o.beta2, o.eps, o.weight_decay = g.lr, g.betas[1], g.betas[2], g.eps, g.weight_decay
    o.maximize = g.maximize
    if extra then o[extra] = g[extra] end
    return o
  end
end

make_class("Adamax", {lr = 2e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0, maximize = false}, nil,
  betas_validator({"maximize"}), C._optim_adamax, betas_opts_of())
doc(optim.Adamax, [[optim.Adamax(params[, lr | {lr=2e-3, betas={0.9, 0.999}, eps=1e-8, weight_decay=0, maximize=false}])
  PyTorch's Adamax (Adam with the infinity norm): m = b1*m + (1-b1)*g; u = max(b2*u, |g|+eps);
  p = p - lr/(1-b1^step) * m/u. State: exp_avg, exp_inf, step.]])

make_class("NAdam", {lr = 2e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0, momentum_decay = 4e-3},
  nil, betas_validator({}, {"momentum_decay"}), C._optim_nadam, betas_opts_of("momentum_decay"))
doc(optim.NAdam, [[optim.NAdam(params[, lr | {lr=2e-3, betas={0.9, 0.999}, eps=1e-8, weight_decay=0, momentum_decay=4e-3}])
  PyTorch's NAdam (Adam with Nesterov momentum and its momentum schedule
  mu_t = b1*(1 - 0.5*0.96^(t*momentum_decay))), as PyTorch 2 computes it: PyTorch 1.13 multiplies the
  next step's mu_product by mu_t twice (fixed in 2.0). State: exp_avg, exp_avg_sq, mu_product, step.]])

make_class("RAdam", {lr = 1e-3, betas = {0.9, 0.999}, eps = 1e-8, weight_decay = 0}, nil,
  betas_validator({}), C._optim_radam, betas_opts_of())
doc(optim.RAdam, [[optim.RAdam(params[, lr | {lr=1e-3, betas={0.9, 0.999}, eps=1e-8, weight_decay=0}])
  PyTorch 1.13's RAdam (rectified Adam): while the variance estimate is not tractable (rho_t <= 5, the
  first steps) the step is lr * m/(1-b1^t); afterwards Adam's adaptive step times the rectification
  term. State: exp_avg, exp_avg_sq, step.]])

local adadelta_opts = {}
make_class("Adadelta", {lr = 1.0, rho = 0.9, eps = 1e-6, weight_decay = 0, maximize = false}, nil,
  function(name, g)
    check_types(name, g, {number = {"lr", "rho", "eps", "weight_decay"}, boolean = {"maximize"}})
    check_nonneg(name, g, "lr", "learning rate")
    if not (g.rho >= 0 and g.rho <= 1) then
      error(string.format("%s: invalid rho value: %s", name, num_str(g.rho)), 3)
    end
    check_nonneg(name, g, "eps", "epsilon value")
    check_nonneg(name, g, "weight_decay", "weight_decay value")
  end,
  C._optim_adadelta,
  function(g)
    local o = adadelta_opts
    o.lr, o.rho, o.eps, o.weight_decay, o.maximize = g.lr, g.rho, g.eps, g.weight_decay, g.maximize
    return o
  end)
doc(optim.Adadelta, [[optim.Adadelta(params[, lr | {lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=false}])
  PyTorch's Adadelta: v = rho*v + (1-rho)*g^2; d = sqrt(a+eps)/sqrt(v+eps) * g; a = rho*a + (1-rho)*d^2;
  p = p - lr*d. State: square_avg, acc_delta, step.]])

-- ------------------------------------------------------------------ Rprop, ASGD

-- These two run in Lua over whole-tensor ops (a few passes per parameter, no per-element Lua),
-- not in one fused C pass as the optimizers above: PyTorch 1.13's formulas op for op.

-- a pair {a, b} of numbers (Rprop's etas and step_sizes)
local function check_pair(name, g, key)
  local v = g[key]
  if type(v) ~= "table" or type(v[1]) ~= "number" or type(v[2]) ~= "number" then
    error(string.format("%s: %s must be a table of two numbers {a, b}", name, key), 4)
  end
end

local function rprop_step(params, states, g)
  local etaminus, etaplus = g.etas[1], g.etas[2]
  local smin, smax = g.step_sizes[1], g.step_sizes[2]
  pt.no_grad(function()
    for i, p in ipairs(params) do
      local grad = p.grad
      if grad then
        local st = states[i]
        if st.step == nil then
          st.step = 0
          st.prev = pt.zeros_like(p)
          st.step_size = pt.empty_like(grad):fill_(g.lr)
        end
        st.step = st.step + 1
        if g.maximize then grad = -grad end
        -- the factor: etaplus where the gradient kept its sign, etaminus where it flipped, 1 where
        -- either is 0 (NaN stays NaN); filled in the parameter's dtype, as PyTorch's
        local factor = (grad * st.prev):sign()
        local flipped = factor:lt(0)
        factor:masked_fill_(factor:gt(0), etaplus)
        factor:masked_fill_(flipped, etaminus)
        factor:masked_fill_(factor:eq(0), 1)
        st.step_size:mul_(factor):clamp_(smin, smax)
        -- where the sign flipped, no step now and no sign to compare with next time
        grad = grad:masked_fill(flipped, 0)
        p:sub_(grad:sign() * st.step_size)
        st.prev:copy_(grad)
      end
    end
  end)
end

make_class("Rprop", {lr = 1e-2, etas = {0.5, 1.2}, step_sizes = {1e-6, 50}, maximize = false}, nil,
  function(name, g)
    check_types(name, g, {number = {"lr"}, boolean = {"maximize"}})
    check_nonneg(name, g, "lr", "learning rate")
    check_pair(name, g, "etas")
    check_pair(name, g, "step_sizes")
    if not (0 < g.etas[1] and g.etas[1] < 1 and 1 < g.etas[2]) then
      error(string.format("%s: invalid eta values: %s, %s", name, num_str(g.etas[1]), num_str(g.etas[2])), 3)
    end
  end,
  rprop_step, function(g) return g end)
doc(optim.Rprop, [==[optim.Rprop(params[, lr | {lr=1e-2, etas={0.5, 1.2}, step_sizes={1e-6, 50}, maximize=false}])
  PyTorch 1.13's resilient backpropagation: each element has its own step size (starting at lr),
  multiplied by etas[2] when the gradient keeps its sign, by etas[1] when it flips (and that element
  then takes no step), clamped to [step_sizes[1], step_sizes[2]]; p = p - sign(g) * step_size.
  0 < etas[1] < 1 < etas[2]. State: prev, step_size, step. Runs as whole-tensor ops in Lua.]==])

-- PyTorch 1.13 keeps ASGD's eta and mu in float32 0-d tensors (torch.tensor(float)), whatever the
-- parameters' dtype: their values are rounded to float32 here too, so that the steps agree
local function f32(v) return (string.unpack("f", string.pack("f", v))) end

local function asgd_step(params, states, g)
  local lr, lambd, alpha, t0, wd = g.lr, g.lambd, g.alpha, g.t0, g.weight_decay
  pt.no_grad(function()
    for i, p in ipairs(params) do
      local grad = p.grad
      if grad then
        local st = states[i]
        if st.step == nil then
          st.step, st.eta, st.mu = 0, f32(lr), 1
          st.ax = pt.zeros_like(p)
        end
        if g.maximize then grad = -grad end
        st.step = st.step + 1
        local eta, step = st.eta, st.step
        if wd ~= 0 then grad = grad:add(p, {alpha = wd}) end
        p:mul_(1 - lambd * eta)
        p:add_(grad, {alpha = -eta})
        if st.mu ~= 1 then
          st.ax:add_((p - st.ax) * st.mu)
        else
          st.ax:copy_(p)
        end
        st.eta = f32(lr / (1 + lambd * lr * step) ^ alpha)
        st.mu = f32(1 / math.max(1, step - t0))
      end
    end
  end)
end

make_class("ASGD", {lr = 1e-2, lambd = 1e-4, alpha = 0.75, t0 = 1e6, weight_decay = 0, maximize = false}, nil,
  function(name, g)
    check_types(name, g, {number = {"lr", "lambd", "alpha", "t0", "weight_decay"}, boolean = {"maximize"}})
    check_nonneg(name, g, "lr", "learning rate")
    check_nonneg(name, g, "weight_decay", "weight_decay value")
  end,
  asgd_step, function(g) return g end)
doc(optim.ASGD, [[optim.ASGD(params[, lr | {lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, maximize=false}])
  PyTorch 1.13's averaged SGD: g = g + wd*p; p = p*(1 - lambd*eta) - eta*g; the average ax = p while
  mu = 1, else ax = ax + mu*(p - ax); then eta = lr/(1 + lambd*lr*step)^alpha and mu = 1/max(1, step - t0).
  State: ax (the averaged parameters), eta, mu, step; eta and mu are rounded to float32, as PyTorch
  keeps them in float32 tensors. Runs as whole-tensor ops in Lua.]])

-- ------------------------------------------------------------------ LBFGS

-- PyTorch's _cubic_interpolate: the minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2),
-- clamped to bounds (default: between x1 and x2)
local function cubic_interpolate(x1, f1, g1, x2, f2, g2, lo, hi)
  if not lo then
    if x1 <= x2 then lo, hi = x1, x2 else lo, hi = x2, x1 end
  end
  local d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
  local d2_square = d1 * d1 - g1 * g2
  if d2_square >= 0 then
    local d2 = math.sqrt(d2_square)
    local min_pos
    if x1 <= x2 then
      min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else
      min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    end
    return math.min(math.max(min_pos, lo), hi)
  end
  return (lo + hi) / 2
end

-- PyTorch's _strong_wolfe line search along d from the parameters x (step t, loss f, flat gradient
-- g, directional derivative gtd); obj(x, t, d) -> loss, flat gradient at x + t d.
-- Returns the loss, flat gradient and step it chose, and the number of evaluations.
local function strong_wolfe(obj, x, t, d, f, g, gtd, tolerance_change)
  local c1, c2, max_ls = 1e-4, 0.9, 25
  local d_norm = d:abs():max():item()
  g = g:clone()
  local f_new, g_new = obj(x, t, d)
  local evals = 1
  local gtd_new = g_new:dot(d):item()
  local t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
  local done, ls_iter = false, 0
  local bracket, bracket_f, bracket_g, bracket_gtd
  while ls_iter < max_ls do
    -- the Armijo condition fails, or the loss went up: the minimum is between t_prev and t
    if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev) then
      bracket, bracket_f = {t_prev, t}, {f_prev, f_new}
      bracket_g, bracket_gtd = {g_prev, g_new:clone()}, {gtd_prev, gtd_new}
      break
    end
    if math.abs(gtd_new) <= -c2 * gtd then -- the strong Wolfe conditions hold
      bracket, bracket_f, bracket_g = {t}, {f_new}, {g_new}
      done = true
      break
    end
    if gtd_new >= 0 then
      bracket, bracket_f = {t_prev, t}, {f_prev, f_new}
      bracket_g, bracket_gtd = {g_prev, g_new:clone()}, {gtd_prev, gtd_new}
      break
    end
    -- extrapolate
    local min_step, max_step = t + 0.01 * (t - t_prev), t * 10
    local tmp = t
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, min_step, max_step)
    t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new:clone(), gtd_new
    f_new, g_new = obj(x, t, d)
    evals = evals + 1
    gtd_new = g_new:dot(d):item()
    ls_iter = ls_iter + 1
  end
  if ls_iter == max_ls then
    bracket, bracket_f, bracket_g = {0, t}, {f, f_new}, {g, g_new}
  end
  -- zoom: shrink the bracket until a point satisfies the strong Wolfe conditions
  local insuf_progress = false
  local low, high = 1, 2
  if bracket_f[1] > bracket_f[#bracket_f] then low, high = 2, 1 end
  while not done and ls_iter < max_ls do
    if math.abs(bracket[2] - bracket[1]) * d_norm < tolerance_change then break end
    t = cubic_interpolate(bracket[1], bracket_f[1], bracket_gtd[1], bracket[2], bracket_f[2], bracket_gtd[2])
    local bmax, bmin = math.max(bracket[1], bracket[2]), math.min(bracket[1], bracket[2])
    local eps = 0.1 * (bmax - bmin)
    if math.min(bmax - t, t - bmin) < eps then
      -- too close to a boundary: move away from it, or into the bracket if t left it
      if insuf_progress or t >= bmax or t <= bmin then
        if math.abs(t - bmax) < math.abs(t - bmin) then t = bmax - eps else t = bmin + eps end
        insuf_progress = false
      else
        insuf_progress = true
      end
    else
      insuf_progress = false
    end
    f_new, g_new = obj(x, t, d)
    evals = evals + 1
    gtd_new = g_new:dot(d):item()
    ls_iter = ls_iter + 1
    if f_new > f + c1 * t * gtd or f_new >= bracket_f[low] then
      bracket[high], bracket_f[high], bracket_g[high], bracket_gtd[high] = t, f_new, g_new:clone(), gtd_new
      if bracket_f[1] <= bracket_f[2] then low, high = 1, 2 else low, high = 2, 1 end
    else
      if math.abs(gtd_new) <= -c2 * gtd then
        done = true
      elseif gtd_new * (bracket[high] - bracket[low]) >= 0 then
        bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
        bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
      end
      bracket[low], bracket_f[low], bracket_g[low], bracket_gtd[low] = t, f_new, g_new:clone(), gtd_new
    end
  end
  return bracket_f[low], bracket_g[low], bracket[low], evals
end

local LBFGS_STATE = {func_evals = "number", n_iter = "number", d = "flat", t = "number", old_dirs = "flats",
  old_stps = "flats", ro = "numbers", H_diag = "number", prev_flat_grad = "flat", prev_loss = "number",
  al = "numbers"}

local function positive_integer(name, g, key)
  local v = g[key]
  if math.type(v) ~= "integer" or v < 1 then
    error(string.format("%s: %s must be a positive integer, got %s", name, key, tostring(v)), 4)
  end
end

local lbfgs = make_class("LBFGS", {lr = 1, max_iter = 20, max_eval = false, tolerance_grad = 1e-7,
  tolerance_change = 1e-9, history_size = 100, line_search_fn = false}, nil,
  function(name, g)
    check_types(name, g, {number = {"lr", "tolerance_grad", "tolerance_change"}})
    check_nonneg(name, g, "lr", "learning rate")
    check_nonneg(name, g, "tolerance_grad", "tolerance_grad value")
    check_nonneg(name, g, "tolerance_change", "tolerance_change value")
    positive_integer(name, g, "max_iter")
    positive_integer(name, g, "history_size")
    if g.max_eval ~= false then positive_integer(name, g, "max_eval") end
    if g.line_search_fn ~= false and g.line_search_fn ~= "strong_wolfe" then
      error(string.format("%s: line_search_fn must be \"strong_wolfe\" or false, got %s", name,
        type(g.line_search_fn) == "string" and '"' .. g.line_search_fn .. '"' or tostring(g.line_search_fn)), 3)
    end
  end)

local lbfgs_new = getmetatable(optim.LBFGS).__call
getmetatable(optim.LBFGS).__call = function(c, params, lr_or_opts, maybe_opts)
  local self = lbfgs_new(c, params, lr_or_opts, maybe_opts)
  if #self.param_groups ~= 1 then
    error("LBFGS: parameter groups are not supported (LBFGS keeps one history for all parameters)", 2)
  end
  return self
end

function lbfgs:add_param_group()
  error("LBFGS:add_param_group: parameter groups are not supported (LBFGS keeps one history for all "
    .. "parameters)", 2)
end

-- the flat gradient of all parameters (zeros where there is none), detached
local function flat_grad(params)
  local views = {}
  for i, p in ipairs(params) do
    views[i] = p.grad and p.grad:reshape(-1) or pt.zeros(p:numel(), {dtype = p:dtype()})
  end
  return pt.cat(views, 1)
end

-- p += step * update, parameter by parameter over the flat update
local function add_flat(params, step, update)
  local off = 0
  for _, p in ipairs(params) do
    local n = p:numel()
    p:add_(update:narrow(1, off + 1, n):view(p:size()), {alpha = step})
    off = off + n
  end
end

function lbfgs:step(closure)
  if type(closure) ~= "function" then
    require("partrain.tensor")._fail("LBFGS:step: a closure that re-evaluates the model and returns the loss is required "
      .. "(opt:step(function() opt:zero_grad(); local l = loss(); l:backward(); return l end))")
  end
  local g = self.param_groups[1]
  local params, lr = g.params, g.lr
  local max_iter, history_size = g.max_iter, g.history_size
  local max_eval = g.max_eval or max_iter * 5 // 4
  local tolerance_grad, tolerance_change = g.tolerance_grad, g.tolerance_change
  local state = g._states[1]
  state.func_evals = state.func_evals or 0
  state.n_iter = state.n_iter or 0
  local function evaluate()
    local l = pt.enable_grad(closure)
    local v = pt.is_tensor(l) and l:item() or l
    if type(v) ~= "number" then
      require("partrain.tensor")._fail("LBFGS:step: the closure must return the loss (a number or a one-element tensor), got "
        .. type(l))
    end
    return l, v
  end
  return pt.no_grad(function()
    local orig_loss, loss = evaluate()
    local current_evals = 1
    state.func_evals = state.func_evals + 1
    local fg = flat_grad(params)
    if fg:abs():max():item() <= tolerance_grad then return orig_loss end
    local d, t = state.d, state.t
    local old_dirs, old_stps, ro = state.old_dirs, state.old_stps, state.ro
    local H_diag, prev_flat_grad, prev_loss = state.H_diag, state.prev_flat_grad, state.prev_loss
    local n_iter = 0
    while n_iter < max_iter do
      n_iter = n_iter + 1
      state.n_iter = state.n_iter + 1
      -- the direction: steepest descent first, then the two-loop recursion over the history
      if state.n_iter == 1 then
        d = fg:neg()
        old_dirs, old_stps, ro, H_diag = {}, {}, {}, 1
      else
        local y = fg - prev_flat_grad
        local s = d * t
        local ys = y:dot(s):item()
        if ys > 1e-10 then -- the curvature condition: keep the pair
          if #old_dirs == history_size then
            table.remove(old_dirs, 1)
            table.remove(old_stps, 1)
            table.remove(ro, 1)
          end
          old_dirs[#old_dirs + 1], old_stps[#old_stps + 1], ro[#ro + 1] = y, s, 1 / ys
          H_diag = ys / y:dot(y):item()
        end
        local num_old = #old_dirs
        state.al = state.al or {}
        local al = state.al
        local q = fg:neg()
        for i = num_old, 1, -1 do
          al[i] = old_stps[i]:dot(q):item() * ro[i]
          q:add_(old_dirs[i], {alpha = -al[i]})
        end
        d = q * H_diag
        for i = 1, num_old do
          local be_i = old_dirs[i]:dot(d):item() * ro[i]
          d:add_(old_stps[i], {alpha = al[i] - be_i})
        end
      end
      if prev_flat_grad == nil then prev_flat_grad = fg:clone() else prev_flat_grad:copy_(fg) end
      prev_loss = loss
      if state.n_iter == 1 then
        t = math.min(1, 1 / fg:abs():sum():item()) * lr
      else
        t = lr
      end
      local gtd = fg:dot(d):item()
      if gtd > -tolerance_change then break end -- not a descent direction
      local ls_evals = 0
      local opt_cond = false
      if g.line_search_fn == "strong_wolfe" then
        local x_init = {}
        for i, p in ipairs(params) do x_init[i] = p:clone() end
        local function obj(x, step, dir)
          add_flat(params, step, dir)
          local _, v = evaluate()
          local fgn = flat_grad(params)
          for i, p in ipairs(params) do p:copy_(x[i]) end
          return v, fgn
        end
        loss, fg, t, ls_evals = strong_wolfe(obj, x_init, t, d, loss, fg, gtd, tolerance_change)
        add_flat(params, t, d)
        opt_cond = fg:abs():max():item() <= tolerance_grad
      else
        add_flat(params, t, d)
        if n_iter ~= max_iter then -- re-evaluate: the next direction needs the new gradient
          local _
          _, loss = evaluate()
          fg = flat_grad(params)
          opt_cond = fg:abs():max():item() <= tolerance_grad
          ls_evals = 1
        end
      end
      current_evals = current_evals + ls_evals
      state.func_evals = state.func_evals + ls_evals
      if n_iter == max_iter or current_evals >= max_eval or opt_cond then break end
      if (d * t):abs():max():item() <= tolerance_change then break end -- the step is too small
      if math.abs(loss - prev_loss) < tolerance_change then break end -- the loss stopped changing
    end
    state.d, state.t, state.old_dirs, state.old_stps, state.ro = d, t, old_dirs, old_stps, ro
    state.H_diag, state.prev_flat_grad, state.prev_loss = H_diag, prev_flat_grad, prev_loss
    return orig_loss
  end)
end

function lbfgs:state_dict()
  local g = self.param_groups[1]
  local group = {params = {}}
  for k, v in pairs(g) do
    if k ~= "params" and k ~= "_states" then group[k] = v end
  end
  for i = 1, #g.params do group.params[i] = i end
  local st = {}
  for k, v in pairs(g._states[1]) do
    if type(v) == "table" then
      local c = {}
      for i, e in ipairs(v) do c[i] = e end
      v = c
    end
    st[k] = v
  end
  return {state = next(st) and {st} or {}, param_groups = {group}}
end

function lbfgs:load_state_dict(sd)
  local name = "LBFGS:load_state_dict"
  local base = Optimizer.load_state_dict
  -- the group options go through the common checks with an empty state
  base(self, {param_groups = type(sd) == "table" and sd.param_groups or sd, state = {}})
  local e = sd.state and sd.state[1]
  if e == nil then return end
  if type(e) ~= "table" then error(name .. ": state 1 must be a table", 2) end
  local numel = 0
  for _, p in ipairs(self.param_groups[1].params) do numel = numel + p:numel() end
  local st = {}
  for k, v in pairs(e) do
    local kind = LBFGS_STATE[k]
    if not kind then
      local keys = {}
      for key in pairs(LBFGS_STATE) do keys[#keys + 1] = key end
      table.sort(keys)
      error(string.format("%s: state '%s' is not one LBFGS keeps (%s): a state dict of another optimizer?", name,
        tostring(k), table.concat(keys, ", ")), 2)
    end
    local function flat_ok(x) return pt.is_tensor(x) and x:dim() == 1 and x:numel() == numel end
    local ok = (kind == "number" and type(v) == "number") or (kind == "flat" and flat_ok(v))
    if kind == "flats" or kind == "numbers" then
      ok = type(v) == "table"
      for _, x in ipairs(ok and v or {}) do
        ok = ok and (kind == "flats" and flat_ok(x) or kind == "numbers" and type(x) == "number")
      end
    end
    if not ok then
      error(string.format("%s: state '%s' must be %s", name, k, ({number = "a number",
        flat = "a 1-D tensor of " .. numel .. " elements (all parameters)", flats = "a list of 1-D tensors of "
        .. numel .. " elements", numbers = "a list of numbers"})[kind]), 2)
    end
    if pt.is_tensor(v) then v = v:clone() end
    if type(v) == "table" then
      local c = {}
      for i, x in ipairs(v) do c[i] = pt.is_tensor(x) and x:clone() or x end
      v = c
    end
    st[k] = v
  end
  local target = self.param_groups[1]._states[1]
  for k in pairs(target) do target[k] = nil end
  for k, v in pairs(st) do target[k] = v end
end

doc(optim.LBFGS, [[optim.LBFGS(params[, lr | {lr=1, max_iter=20, max_eval=max_iter*5//4, tolerance_grad=1e-7,
    tolerance_change=1e-9, history_size=100, line_search_fn=false | "strong_wolfe"}])
  PyTorch's L-BFGS: one opt:step(closure) runs up to max_iter iterations, each a two-loop recursion over
  the last history_size curvature pairs, then a step of lr (the first one scaled by 1/sum|g|) or a strong
  Wolfe line search. The closure re-evaluates the model and returns the loss:
    opt:step(function() opt:zero_grad(); local l = loss_fn(model(x), y); l:backward(); return l end)
  One parameter group only. state_dict() holds the history (lists of flat tensors).]])

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
  for k in pairs(opts or {}) do
    if k ~= "norm_type" and k ~= "error_if_nonfinite" and k ~= "foreach" then
      error(("clip_grad_norm: unknown option '%s' (options: norm_type, error_if_nonfinite, foreach)"):format(tostring(k)), 2)
    end
  end
  local p = opts and opts.norm_type or 2
  if p == "inf" then p = math.huge end
  if type(p) ~= "number" or not (p > 0) then
    error("clip_grad_norm: norm_type must be a positive number or \"inf\", got " .. num_str(p), 2)
  end
  local strict = opts and opts.error_if_nonfinite
  if strict ~= nil and type(strict) ~= "boolean" then
    error("clip_grad_norm: error_if_nonfinite must be a boolean, got " .. type(strict), 2)
  end
  return (C._optim_clip_grad_norm(list, max_norm, p, strict))
end
optim.clip_grad_norm_ = optim.clip_grad_norm
doc(optim.clip_grad_norm, "optim.clip_grad_norm(params, max_norm[, {norm_type=2, error_if_nonfinite=false}]) -> total norm of all\n  gradients (before clipping); scales the gradients in place by max_norm/(total+1e-6) when that is below 1\n  (a nan or inf total scales them by it, as torch's, unless error_if_nonfinite=true makes that an error\n  before any gradient changes). norm_type may be math.huge or \"inf\". foreach is accepted and ignored\n  (one C loop over all gradients either way).")

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

-- errors at the user's line (the nearest frame outside partrain's own modules), as the host's
local fail = require("partrain.tensor")._fail

local Scheduler = {}
Scheduler.__index = Scheduler
optim.LRScheduler = Scheduler

local function is_num(v) return type(v) == "number" and v == v end
local function int_of(v) return type(v) == "number" and math.tointeger(v) or nil end

-- a value as the messages show it
local function val_str(v)
  if type(v) == "number" then return num_str(v) end
  if type(v) == "string" then return "'" .. v .. "'" end
  if v == nil or type(v) == "boolean" then return tostring(v) end
  return type(v)
end

local function is_list(v) return type(v) == "table" and getmetatable(v) == nil end

-- what a setting may hold: {what the message says, test}
local KINDS = {
  number = {"a number", is_num},
  positive = {"a positive number", function(v) return is_num(v) and v > 0 end},
  posint = {"a positive integer", function(v) local i = int_of(v) return i ~= nil and i >= 1 end},
  natural = {"a non-negative integer", function(v) local i = int_of(v) return i ~= nil and i >= 0 end},
  unit = {"a number between 0 and 1", function(v) return is_num(v) and v >= 0 and v <= 1 end},
  boolean = {"a boolean", function(v) return type(v) == "boolean" end},
  ["function"] = {"a function", function(v) return type(v) == "function" end},
}

-- s[key] is of that kind (nil allowed when optional): the message names where, the key and the value
local function need(where, s, key, kind, optional)
  local v = s[key]
  if v == nil and optional then return end
  local k = KINDS[kind]
  if not k[2](v) then fail("%s: %s must be %s, got %s", where, key, k[1], val_str(v)) end
end

local function need_enum(where, s, key, values)
  local v = s[key]
  for _, x in ipairs(values) do
    if v == x then return end
  end
  local q = {}
  for i, x in ipairs(values) do q[i] = "'" .. x .. "'" end
  fail("%s: %s must be %s or %s, got %s", where, key, table.concat(q, ", ", 1, #q - 1), q[#q], val_str(v))
end

-- a value for every parameter group, or a list of one per group (PyTorch's lists and tuples)
local function need_per_group(where, s, key, n, kind)
  local v, k = s[key], KINDS[kind or "number"]
  if is_list(v) then
    if #v ~= n then
      fail("%s: expected %d value%s for %s (one per parameter group), got %d", where, n, n == 1 and "" or "s", key, #v)
    end
    for i = 1, n do
      if not k[2](v[i]) then fail("%s: %s[%d] must be %s, got %s", where, key, i, k[1], val_str(v[i])) end
    end
  elseif not k[2](v) then
    fail("%s: %s must be %s or a list of one per parameter group, got %s", where, key, k[1], val_str(v))
  end
end

local function per_group(v, i)
  if type(v) == "table" then return v[i] end
  return v
end

-- a list of integers >= lo (increasing when asked)
local function need_int_list(where, s, key, lo, increasing)
  local v = s[key]
  if not is_list(v) then fail("%s: %s must be a list of integers, got %s", where, key, val_str(v)) end
  for i = 1, #v do
    local x = int_of(v[i])
    if x == nil or x < lo then
      fail("%s: %s[%d] must be an integer >= %d, got %s", where, key, i, lo, val_str(v[i]))
    end
    if increasing and i > 1 and not (v[i] > v[i - 1]) then
      fail("%s: %s must increase, got %s after %s", where, key, val_str(v[i]), val_str(v[i - 1]))
    end
  end
end

local function check_optimizer(name, opt)
  if type(opt) ~= "table" or type(opt.param_groups) ~= "table" then
    fail("%s: expected an optimizer as the first argument, got %s", name, val_str(opt))
  end
end

-- A scheduler's settings are its constructor's options, kept as fields of the scheduler
-- (sched.gamma, as PyTorch's attributes) that the formulas read at every step, so changing one
-- takes effect; step() checks them first (cls._check(settings, where, n_groups, optimizer)), as
-- the constructor and load_state_dict do. They are printed in the order of cls._repr_keys
-- (StepLR(step_size=10, gamma=0.1, last_epoch=3)) and saved by state_dict. A class computes
-- with get_lr(self, i, base, epoch, where) or with _factor(self, epoch, where) -> factor of base.
local function new_scheduler(cls, opt, settings)
  check_optimizer(cls.name, opt)
  local self = setmetatable({optimizer = opt, last_epoch = 0, base_lrs = {}}, cls)
  for k, v in pairs(settings) do self[k] = v end
  cls._check(self, cls.name, #opt.param_groups, opt)
  self:_init_groups()
  if self._chain and not cls._init_closed then
    local lrs, moms = self:_compute(self.last_epoch, cls.name)
    self:_follow_lrs(self.last_epoch, lrs, cls.name, true)
    self:_set(self.last_epoch, lrs, moms)
  else
    self:_apply(cls.name)
  end
  return self
end

-- PyTorch's: each group's initial_lr (set from its lr by the first scheduler) is its base lr
function Scheduler:_init_groups()
  for i, g in ipairs(self.optimizer.param_groups) do
    if g.initial_lr == nil then g.initial_lr = g.lr end
    self.base_lrs[i] = g.initial_lr
  end
end

function Scheduler:get_lr(i, base, epoch, where)
  return base * self:_factor(epoch, where or self.name)
end
doc(Scheduler.get_lr, "sched:get_lr(i, base_lr, epoch) -> the learning rate of parameter group i at epoch (base_lr: its\n"
  .. "  initial lr). step() sets each group's lr to it; a scheduler's formula is in help(optim.<Scheduler>).")

-- the lrs (and the momentums of the schedulers that cycle them) at epoch e; changes nothing
function Scheduler:_compute(e, where)
  local lrs, moms = {}, nil
  for i = 1, #self.base_lrs do
    local lr = self:get_lr(i, self.base_lrs[i], e, where)
    if not is_num(lr) then
      fail("%s: lr %s for parameter group %d at epoch %d is not a valid learning rate", where, val_str(lr), i, e)
    end
    lrs[i] = lr
  end
  if self.cycle_momentum and self._momentum then
    moms = {}
    for i = 1, #self.base_lrs do moms[i] = self:_momentum(i, e, where) end
  end
  return lrs, moms
end

function Scheduler:_set(e, lrs, moms)
  self.last_epoch, self._set_epoch = e, e
  local last = {}
  for i, g in ipairs(self.optimizer.param_groups) do
    g.lr, last[i] = lrs[i], lrs[i]
    if moms then
      -- a new table: a group's betas may be the optimizer's defaults, shared with other groups
      if self._use_beta1 then g.betas = {moms[i], g.betas[2]} else g.momentum = moms[i] end
    end
  end
  self._last_lr = last
end

function Scheduler:_apply(where)
  self:_set(self.last_epoch, self:_compute(self.last_epoch, where or self.name))
end

function Scheduler:_check_now(where)
  getmetatable(self)._check(self, where, #self.base_lrs, self.optimizer)
end

local function setting_str(v)
  if math.type(v) == "float" then
    if v ~= v then return "nan" end
    return (string.format("%.6g", v))
  end
  if type(v) == "function" then return "<function>" end
  if type(v) == "string" then return "'" .. v .. "'" end
  if type(v) == "table" then
    local mt = getmetatable(v)
    if mt and mt.__tostring then return tostring(v) end
    local parts = {}
    for i, x in ipairs(v) do parts[i] = setting_str(x) end
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  return tostring(v)
end

function Scheduler:__tostring()
  local parts = {}
  for _, k in ipairs(rawget(getmetatable(self), "_repr_keys") or {}) do
    local v = rawget(self, k)
    if v ~= nil then parts[#parts + 1] = k .. "=" .. setting_str(v) end
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
    fail("%s:%s: the optimizer has %d parameter groups, the scheduler was created for %d", self.name, fname, n, m)
  elseif n > m then
    fail("%s:%s: parameter group%s %s added after the scheduler was created (it knows %d); "
      .. "create the scheduler after add_param_group, or create a new one and load this one's state_dict "
      .. "to go on from epoch %d", self.name, fname, n - m > 1 and "s" or "",
      n - m > 1 and string.format("%d..%d were", m + 1, n) or string.format("%d was", n), m, self.last_epoch)
  end
end

local function next_epoch(self, where)
  local e = int_of(self.last_epoch)
  if e == nil or e < 0 then
    fail("%s: last_epoch must be a non-negative integer, got %s", where, val_str(self.last_epoch))
  end
  return e + 1
end

-- PyTorch's chainable schedulers (StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR,
-- PolynomialLR, MultiplicativeLR, CosineAnnealingLR) compute each step's lr from the group's
-- current lr. The closed form here gives the same numbers while the scheduler alone moves the lr;
-- a group whose lr was changed by someone else (set by hand, another scheduler stepped back to back
-- with this one, ReduceLROnPlateau) follows PyTorch's chainable step from its current lr from then
-- on (cls._chain(self, i, lr, e, where)), as PyTorch's does. At construction a group whose lr is not
-- its initial_lr (another scheduler moved it) follows too. A jump of last_epoch, or load_state_dict,
-- goes back to the closed form (PyTorch's step(epoch) takes the closed form too).
function Scheduler:_follow_lrs(e, lrs, where, at_init)
  local chain = self._chain
  if not chain then return end
  local follow = rawget(self, "_follow")
  if not follow then
    follow = {}
    self._follow = follow
  end
  if not at_init and rawget(self, "_set_epoch") ~= e - 1 then
    for k in pairs(follow) do follow[k] = nil end
    return
  end
  for i, g in ipairs(self.optimizer.param_groups) do
    local lr = g.lr
    if lr ~= (at_init and self.base_lrs[i] or self._last_lr[i]) then follow[i] = true end
    if follow[i] then
      if not is_num(lr) then
        fail("%s: parameter group %d has lr %s, not a number", where, i, val_str(lr))
      end
      lr = chain(self, i, lr, e, where) -- nil: the closed form (SequentialLR at a milestone)
      if lr ~= nil and not is_num(lr) then
        fail("%s: lr %s for parameter group %d at epoch %d is not a valid learning rate", where, val_str(lr), i, e)
      end
      lrs[i] = lr or lrs[i]
    end
  end
end

function Scheduler:step(...)
  local where = self.name .. ":step"
  if select("#", ...) > 0 then
    fail("%s: expected no argument, got %s (sched.last_epoch counts the steps; set it to jump)", where,
      val_str((...)))
  end
  check_groups(self, "step")
  self:_check_now(where)
  local e = next_epoch(self, where)
  local lrs, moms, after = self:_compute(e, where) -- after: ChainedScheduler's lrs after each scheduler
  self:_follow_lrs(e, lrs, where)
  self:_set(e, lrs, moms, after)
end
doc(Scheduler.step, "sched:step(): advances one epoch (or step) and sets each group's lr. It takes no epoch (PyTorch's\n"
  .. "  deprecated step(epoch)): set sched.last_epoch to jump. The settings are checked first, so a bad value\n"
  .. "  assigned to one (sched.step_size = 0) is reported here. Every parameter group must exist when the\n"
  .. "  scheduler is created (add_param_group after it: an error).")

function Scheduler:get_last_lr()
  local out = {}
  for i, v in ipairs(self._last_lr) do out[i] = v end
  return out
end
doc(Scheduler.get_last_lr, "sched:get_last_lr() -> list of the learning rates last set, one per group.")

local function copy_setting(v)
  if is_list(v) then
    local c = {}
    for i, x in ipairs(v) do c[i] = x end
    return c
  end
  return v
end

-- The groups that follow their moved lr (Scheduler:_follow_lrs) in a state dict: _follow (a boolean
-- per group) and _last_lr (the lrs last set, PyTorch's _last_lr), only when some group follows.
local function save_follow(self, sd)
  local f = rawget(self, "_follow")
  if not f or next(f) == nil then return sd end
  local flags, last = {}, {}
  for i = 1, #self.base_lrs do flags[i], last[i] = f[i] == true, self._last_lr[i] end
  sd._follow, sd._last_lr = flags, last
  return sd
end

-- checks sd's _follow and _last_lr; returns the function that takes them (none saved: no group follows)
local function prepare_follow(self, sd, where)
  local flags, last, n = sd._follow, sd._last_lr, #self.base_lrs
  if flags == nil and last == nil then
    return function() self._follow, self._loaded_last_lr = nil, nil end
  end
  if not (is_list(flags) and #flags == n and is_list(last) and #last == n) then
    fail("%s: _follow and _last_lr must be lists of one value per parameter group (%d)", where, n)
  end
  for i = 1, n do
    if type(flags[i]) ~= "boolean" then fail("%s: _follow[%d] must be a boolean, got %s", where, i, val_str(flags[i])) end
    if not is_num(last[i]) then fail("%s: _last_lr[%d] must be a number, got %s", where, i, val_str(last[i])) end
  end
  return function()
    local f, l = {}, {}
    for i = 1, n do
      if flags[i] then f[i] = true end
      l[i] = last[i]
    end
    self._follow, self._loaded_last_lr = f, l
  end
end
local FOLLOW_KEYS = {_follow = true, _last_lr = true}

function Scheduler:state_dict()
  local b = {}
  for i, v in ipairs(self.base_lrs) do b[i] = v end
  local sd = {last_epoch = self.last_epoch, base_lrs = b}
  for _, k in ipairs(rawget(getmetatable(self), "_repr_keys") or {}) do
    local v = rawget(self, k)
    local t = type(v)
    -- settings (a function stays with the code)
    if t == "number" or t == "string" or t == "boolean" or is_list(v) then sd[k] = copy_setting(v) end
  end
  return save_follow(self, sd)
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  return keys
end

local function check_last_epoch(sd, where)
  if type(sd) ~= "table" or int_of(sd.last_epoch) == nil or sd.last_epoch < 0 then
    fail("%s: expected a table with an integer last_epoch (from sched:state_dict())", where)
  end
end

-- checks sd against this scheduler and returns the function that loads it: nothing changes before
function Scheduler:_prepare_load(sd, where, extra)
  check_last_epoch(sd, where)
  check_groups(self, "load_state_dict")
  local base = sd.base_lrs or {}
  if not is_list(base) or #base > #self.base_lrs then
    fail("%s: the state dict has %s base lrs, the scheduler %d groups", where,
      is_list(base) and tostring(#base) or "no list of", #self.base_lrs)
  end
  for i, v in ipairs(base) do
    if type(v) ~= "number" then fail("%s: base lr %d is a %s, not a number", where, i, type(v)) end
  end
  local cls = getmetatable(self)
  local merged, known, loaded = {}, {}, {}
  for _, k in ipairs(cls._repr_keys) do merged[k], known[k] = rawget(self, k), true end
  for _, k in ipairs(sorted_keys(sd)) do -- the first in name order is reported, the same on every run
    if k ~= "last_epoch" and k ~= "base_lrs" and not (extra and extra[k]) and not FOLLOW_KEYS[k] then
      local cur = merged[k]
      if not known[k] or type(cur) == "function" or (is_list(cur) and type(cur[1]) == "function") then
        fail("%s: '%s' is not a setting of %s (a state dict of another scheduler?)", where, tostring(k), self.name)
      end
      merged[k] = copy_setting(sd[k])
      loaded[k] = true
    end
  end
  -- an optional setting that state_dict() left out was unset (nil) in the saved scheduler
  for k in pairs(rawget(cls, "_optional") or {}) do
    if sd[k] == nil then merged[k], loaded[k] = nil, true end
  end
  merged.last_epoch = int_of(sd.last_epoch)
  cls._check(merged, where, #self.base_lrs, self.optimizer)
  local follow = prepare_follow(self, sd, where)
  return function()
    self.last_epoch = merged.last_epoch
    for i, v in ipairs(base) do self.base_lrs[i] = v end
    for k in pairs(loaded) do self[k] = merged[k] end
    follow()
  end
end

-- The groups that followed their moved lr keep the optimizer's lr (load the optimizer's state dict
-- too: PyTorch's load leaves the lrs alone) and go on from it; the others get the closed form.
function Scheduler:load_state_dict(sd)
  local where = self.name .. ":load_state_dict"
  self:_prepare_load(sd, where)()
  local follow, last = rawget(self, "_follow"), rawget(self, "_loaded_last_lr")
  self._loaded_last_lr = nil
  if not (self._chain and follow and next(follow)) then
    self._follow = nil
    self:_apply(where)
    return
  end
  local lrs, moms, after = self:_compute(self.last_epoch, where)
  for i, g in ipairs(self.optimizer.param_groups) do
    if follow[i] then
      if not is_num(g.lr) then fail("%s: parameter group %d has lr %s, not a number", where, i, val_str(g.lr)) end
      lrs[i] = g.lr
    end
  end
  self:_set(self.last_epoch, lrs, moms, after)
  for i, v in ipairs(last) do self._last_lr[i] = v end
end
doc(Scheduler.state_dict, "sched:state_dict() -> {last_epoch=, base_lrs=, and the scheduler's settings (step_size=,\n"
  .. "  gamma=, ...; not the functions)}; sched:load_state_dict(sd) restores it.")
doc(Scheduler.load_state_dict, "sched:load_state_dict(sd): goes on from a sched:state_dict() (its last_epoch, base lrs and\n"
  .. "  settings, checked before anything changes) and sets each group's lr for that epoch; a group that\n"
  .. "  followed an lr moved by someone else (sd._follow) keeps the optimizer's lr: load its state dict too.")
doc(Scheduler, [[optim.LRScheduler: base of the learning-rate schedulers
  StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR, PolynomialLR, CosineAnnealingLR,
  CosineAnnealingWarmRestarts, LambdaLR, MultiplicativeLR, CyclicLR, OneCycleLR, SequentialLR,
  ChainedScheduler, LinearWarmup
  (ReduceLROnPlateau steps on a metric: help(optim.ReduceLROnPlateau)).
  local sched = optim.StepLR(opt, {step_size = 10})   -- sets each group's lr for epoch 0
  for epoch = 1, n do train_one_epoch(); sched:step() end
  sched.last_epoch counts the step() calls; sched:get_last_lr() lists the lrs set. The settings are fields
  read at every step: after sched.gamma = 0.5 the next steps use the formula with the new value, and
  step() checks them first (sched.step_size = 0: "StepLR:step: step_size must be a positive integer").
  Each step sets the lr from the formula of the base lr (a closed form, PyTorch's _get_closed_form_lr
  where it has one): a changed setting applies to the whole formula. A group whose lr someone else
  changed (set by hand, or another scheduler stepped back to back with this one, as PyTorch's docs
  chain ExponentialLR and MultiStepLR) goes on from its current lr with PyTorch's chainable step, for
  StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR, PolynomialLR, CosineAnnealingLR,
  MultiplicativeLR and LinearWarmup, and ChainedScheduler and SequentialLR over them, as PyTorch's do
  (the others: PyTorch's replace the lr too); a jump of last_epoch or load_state_dict goes back to
  the closed form. Numbers agree with PyTorch's
  to rounding.]])

local function scheduler_class(name, repr_keys, check, ctor, text, fn_arg)
  local cls = setmetatable({name = name, _repr_keys = repr_keys, _check = check}, {__index = Scheduler})
  cls.__index = cls
  cls.__tostring = Scheduler.__tostring
  local known = {}
  for _, k in ipairs(repr_keys) do known[k] = true end
  optim[name] = setmetatable(cls, {
    __index = Scheduler,
    __call = function(c, opt, opts, ...)
      if fn_arg then return ctor(c, opt, opts, ...) end
      if opts ~= nil and type(opts) ~= "table" then
        fail("%s: options must be a table, got %s", name, val_str(opts))
      end
      opts = opts or {}
      for _, k in ipairs(sorted_keys(opts)) do -- a misspelled option is an error, never ignored
        if not known[k] then
          fail("%s: unknown option '%s' (options: %s)", name, tostring(k), table.concat(repr_keys, ", "))
        end
      end
      if (...) ~= nil then fail("%s: unexpected argument #3 (%s)", name, type((...))) end
      return ctor(c, opt, opts)
    end,
  })
  doc(optim[name], text)
  return cls
end

local function opt_or(v, default)
  if v == nil then return default end
  return v
end

-- ---------------------------------------------------------------- the closed forms

local StepLR = scheduler_class("StepLR", {"step_size", "gamma"},
  function(s, where)
    need(where, s, "step_size", "posint")
    need(where, s, "gamma", "number")
  end,
  function(cls, opt, o) return new_scheduler(cls, opt, {step_size = o.step_size, gamma = opt_or(o.gamma, 0.1)}) end,
  "optim.StepLR(opt, {step_size=, gamma=0.1}): lr = base * gamma^floor(epoch/step_size).")
function StepLR:_factor(e) return self.gamma ^ (e // self.step_size) end

local MultiStepLR = scheduler_class("MultiStepLR", {"milestones", "gamma"},
  function(s, where)
    need_int_list(where, s, "milestones", 0)
    need(where, s, "gamma", "number")
  end,
  function(cls, opt, o)
    return new_scheduler(cls, opt, {milestones = copy_setting(o.milestones), gamma = opt_or(o.gamma, 0.1)})
  end,
  "optim.MultiStepLR(opt, {milestones=, gamma=0.1}): lr = base * gamma^(number of milestones <= epoch);\n"
  .. "  milestones a list of epochs (any order; a repeated one counts twice, as PyTorch's Counter).")
function MultiStepLR:_factor(e)
  local n = 0
  for _, m in ipairs(self.milestones) do
    if m <= e then n = n + 1 end
  end
  return self.gamma ^ n
end

local ConstantLR = scheduler_class("ConstantLR", {"factor", "total_iters"},
  function(s, where)
    need(where, s, "factor", "unit")
    need(where, s, "total_iters", "posint")
  end,
  function(cls, opt, o)
    return new_scheduler(cls, opt, {factor = opt_or(o.factor, 1 / 3), total_iters = opt_or(o.total_iters, 5)})
  end,
  "optim.ConstantLR(opt, {factor=1/3, total_iters=5}): lr = base * factor for epoch < total_iters, then base.")
function ConstantLR:_factor(e)
  local f = self.factor
  return f + (e >= self.total_iters and (1 - f) or 0.0)
end

local LinearLR = scheduler_class("LinearLR", {"start_factor", "end_factor", "total_iters"},
  function(s, where)
    need(where, s, "start_factor", "unit")
    need(where, s, "end_factor", "unit")
    need(where, s, "total_iters", "posint")
  end,
  function(cls, opt, o)
    return new_scheduler(cls, opt, {start_factor = opt_or(o.start_factor, 1 / 3), end_factor = opt_or(o.end_factor, 1),
      total_iters = opt_or(o.total_iters, 5)})
  end,
  "optim.LinearLR(opt, {start_factor=1/3, end_factor=1, total_iters=5}): factor moves linearly from start to end:\n"
  .. "  lr = base * (start + (end-start)*min(epoch, total_iters)/total_iters); both factors in [0, 1].")
function LinearLR:_factor(e)
  local a, b, m = self.start_factor, self.end_factor, self.total_iters
  return a + (b - a) * math.min(m, e) / m
end

local ExponentialLR = scheduler_class("ExponentialLR", {"gamma"},
  function(s, where) need(where, s, "gamma", "number") end,
  function(cls, opt, o) return new_scheduler(cls, opt, {gamma = o.gamma}) end,
  "optim.ExponentialLR(opt, {gamma=}): lr = base * gamma^epoch.")
function ExponentialLR:_factor(e) return self.gamma ^ e end

local PolynomialLR = scheduler_class("PolynomialLR", {"total_iters", "power"},
  function(s, where)
    need(where, s, "total_iters", "posint")
    need(where, s, "power", "number")
  end,
  function(cls, opt, o)
    return new_scheduler(cls, opt, {total_iters = opt_or(o.total_iters, 5), power = opt_or(o.power, 1)})
  end,
  "optim.PolynomialLR(opt, {total_iters=5, power=1}): lr = base * (1 - min(epoch, total_iters)/total_iters)^power.")
function PolynomialLR:_factor(e)
  local m = self.total_iters
  return (1.0 - math.min(m, e) / m) ^ self.power
end

local CosineAnnealingLR = scheduler_class("CosineAnnealingLR", {"T_max", "eta_min"},
  function(s, where)
    need(where, s, "T_max", "posint")
    need(where, s, "eta_min", "number")
  end,
  function(cls, opt, o) return new_scheduler(cls, opt, {T_max = o.T_max, eta_min = opt_or(o.eta_min, 0)}) end,
  "optim.CosineAnnealingLR(opt, {T_max=, eta_min=0}): lr = eta_min + (base-eta_min)*(1+cos(pi*epoch/T_max))/2.")
function CosineAnnealingLR:get_lr(_, base, e)
  local lo = self.eta_min
  return lo + (base - lo) * (1 + math.cos(math.pi * e / self.T_max)) / 2
end

-- where epoch e falls in the cycles T_0, T_0*T_mult, ...: T_cur, T_i (PyTorch's step() counts them up)
local function restart_position(T_0, T_mult, e)
  if e < T_0 then return e, T_0 end
  if T_mult == 1 then return e % T_0, T_0 end
  local cur, T_i = e, T_0
  while cur >= T_i do cur, T_i = cur - T_i, T_i * T_mult end
  return cur, T_i
end

local WarmRestarts = scheduler_class("CosineAnnealingWarmRestarts", {"T_0", "T_mult", "eta_min"},
  function(s, where)
    need(where, s, "T_0", "posint")
    need(where, s, "T_mult", "posint")
    need(where, s, "eta_min", "number")
  end,
  function(cls, opt, o)
    return new_scheduler(cls, opt, {T_0 = o.T_0, T_mult = opt_or(o.T_mult, 1), eta_min = opt_or(o.eta_min, 0)})
  end,
  [[optim.CosineAnnealingWarmRestarts(opt, {T_0=, T_mult=1, eta_min=0}): SGDR's cosine annealing with restarts
  lr = eta_min + (base-eta_min)*(1+cos(pi*T_cur/T_i))/2, T_cur the steps since the last restart, T_i the
  length of the current cycle: T_0, then T_0*T_mult, T_0*T_mult^2, ... sched.T_cur and sched.T_i show
  them after each step. step() only (PyTorch's step(epoch) with a fractional epoch: set last_epoch).]])
function WarmRestarts:get_lr(_, base, e)
  local cur, T_i = restart_position(self.T_0, self.T_mult, e)
  local lo = self.eta_min
  return lo + (base - lo) * (1 + math.cos(math.pi * cur / T_i)) / 2
end
function WarmRestarts:_set(e, lrs, moms)
  Scheduler._set(self, e, lrs, moms)
  self.T_cur, self.T_i = restart_position(self.T_0, self.T_mult, e)
end

-- lr_lambda: a function, or a list of one per parameter group (PyTorch's lr_lambda list); plain: a
-- missing or wrong single one is reported as need() does
local function need_lambdas(where, s, n, plain)
  local f = s.lr_lambda
  if is_list(f) then
    if #f ~= n then
      fail("%s: expected %d lr_lambda function%s (one per parameter group), got %d", where, n, n == 1 and "" or "s", #f)
    end
    for i = 1, n do
      if type(f[i]) ~= "function" then fail("%s: lr_lambda[%d] must be a function, got %s", where, i, val_str(f[i])) end
    end
  elseif plain then -- LambdaLR's message: "lr_lambda must be a function, got nil"
    need(where, s, "lr_lambda", "function")
  elseif type(f) ~= "function" then
    fail("%s: lr_lambda must be a function or a list of one per parameter group, got %s", where, val_str(f))
  end
end

local LambdaLR = scheduler_class("LambdaLR", {"lr_lambda"},
  function(s, where, n) need_lambdas(where, s, n, true) end,
  function(cls, opt, fn, ...)
    if (...) ~= nil then fail("LambdaLR: unexpected argument #3 (%s)", type((...))) end
    return new_scheduler(cls, opt, {lr_lambda = copy_setting(fn)})
  end,
  "optim.LambdaLR(opt, fn | {fn1, fn2, ...}): lr = base * fn(epoch); fn returns a number. One function, or a\n"
  .. "  list of one per parameter group (PyTorch's list of lr_lambdas).", true)
function LambdaLR:get_lr(i, base, e, where)
  local f = per_group(self.lr_lambda, i)(e)
  if type(f) ~= "number" then
    fail("%s: lr_lambda(%d) returned %s, not a number", where or self.name, e, val_str(f))
  end
  return base * f
end
-- the functions stay with the code (a list of them too)
function LambdaLR:state_dict()
  local sd = Scheduler.state_dict(self)
  sd.lr_lambda = nil
  return sd
end

local MultiplicativeLR = scheduler_class("MultiplicativeLR", {"lr_lambda"},
  function(s, where, n) need_lambdas(where, s, n) end,
  function(cls, opt, fn, ...)
    if (...) ~= nil then fail("MultiplicativeLR: unexpected argument #3 (%s)", type((...))) end
    return new_scheduler(cls, opt, {lr_lambda = copy_setting(fn)})
  end,
  [[optim.MultiplicativeLR(opt, fn | {fn1, fn2, ...}): lr = base * fn(1) * fn(2) * ... * fn(epoch)
  PyTorch's MultiplicativeLR (each step multiplies the lr by fn(epoch); the lr at epoch 0 is base), as the
  closed form over the base lr (an lr set by hand is multiplied on from, as PyTorch's). One function, or a list
  of one per parameter group. fn(k) is called once per step while the epochs advance one at a time (the
  product so far is kept); after a jump of last_epoch the product is taken again from fn(1).]], true)

-- prod fn(k) for k = 1..e of group i's function: carried on from the epoch last asked when e is
-- not before it (the usual step: one call), else taken again from k = 1
function MultiplicativeLR:_group_factor(i, e, where)
  local fn = per_group(self.lr_lambda, i)
  local cache = rawget(self, "_products")
  if not cache then
    cache = {}
    self._products = cache
  end
  local c = cache[i]
  local k, f, last = 0, 1, nil -- last: fn(e), for MultiplicativeLR:_chain
  if c and c.fn == fn and c.epoch <= e then k, f, last = c.epoch, c.factor, c.last end
  while k < e do
    k = k + 1
    local v = fn(k)
    if type(v) ~= "number" then fail("%s: lr_lambda(%d) returned %s, not a number", where, k, val_str(v)) end
    f, last = f * v, v
  end
  cache[i] = {fn = fn, epoch = e, factor = f, last = last}
  return f
end
function MultiplicativeLR:get_lr(i, base, e, where) return base * self:_group_factor(i, e, where or self.name) end
-- the functions stay with the code (a list of them too)
function MultiplicativeLR:state_dict()
  local sd = Scheduler.state_dict(self)
  sd.lr_lambda = nil
  return sd
end

local LinearWarmup = scheduler_class("LinearWarmup", {"warmup_steps", "start_factor"},
  function(s, where)
    need(where, s, "warmup_steps", "posint")
    need(where, s, "start_factor", "number")
  end,
  function(cls, opt, o)
    local n = o.warmup_steps
    need("LinearWarmup", o, "warmup_steps", "posint")
    return new_scheduler(cls, opt, {warmup_steps = n, start_factor = opt_or(o.start_factor, 1 / n)})
  end,
  "optim.LinearWarmup(opt, {warmup_steps=, start_factor=1/warmup_steps}): lr grows linearly to its base value\n"
  .. "  over warmup_steps calls of step(), then stays.")
function LinearWarmup:_factor(e)
  local a, m = self.start_factor, self.warmup_steps
  return a + (1 - a) * math.min(e, m) / m
end

-- PyTorch 1.13's chainable steps (their get_lr): the lr at epoch e from the group's current lr,
-- used for a group whose lr was moved by someone else (Scheduler:_follow_lrs). Where PyTorch would
-- divide by zero (a factor of 0), the closed form of the base lr is taken instead.
function StepLR:_chain(_, lr, e)
  if e == 0 or e % self.step_size ~= 0 then return lr end
  return lr * self.gamma
end
function MultiStepLR:_chain(_, lr, e)
  local n = 0
  for _, m in ipairs(self.milestones) do
    if m == e then n = n + 1 end
  end
  if n == 0 then return lr end
  return lr * self.gamma ^ n
end
function ConstantLR:_chain(i, lr, e)
  if e == 0 then return lr * self.factor end
  if e ~= self.total_iters then return lr end
  if self.factor == 0 then return self.base_lrs[i] end
  return lr * (1.0 / self.factor)
end
function LinearLR:_chain(i, lr, e)
  local a, b, m = self.start_factor, self.end_factor, self.total_iters
  if e == 0 then return lr * a end
  if e > m then return lr end
  local d = m * a + (e - 1) * (b - a)
  if d == 0 then return self.base_lrs[i] * self:_factor(e) end
  return lr * (1. + (b - a) / d)
end
function ExponentialLR:_chain(_, lr, e)
  if e == 0 then return lr end
  return lr * self.gamma
end
function PolynomialLR:_chain(_, lr, e)
  local m = self.total_iters
  if e == 0 or e > m then return lr end
  return lr * ((1.0 - e / m) / (1.0 - (e - 1) / m)) ^ self.power
end
function CosineAnnealingLR:_chain(i, lr, e)
  local T, lo = self.T_max, self.eta_min
  if e == 0 then return lr end
  if (e - 1 - T) % (2 * T) == 0 then
    return lr + (self.base_lrs[i] - lo) * (1 - math.cos(math.pi / T)) / 2
  end
  return (1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T)) * (lr - lo) + lo
end
function MultiplicativeLR:_chain(i, lr, e, where)
  if e == 0 then return lr end
  -- fn(e), called once per step: step() has just taken the product up to e
  local fn = per_group(self.lr_lambda, i)
  local c = (rawget(self, "_products") or {})[i]
  if c and c.fn == fn and c.epoch == e and c.last ~= nil then return lr * c.last end
  local v = fn(e)
  if type(v) ~= "number" then fail("%s: lr_lambda(%d) returned %s, not a number", where, e, val_str(v)) end
  return lr * v
end
function LinearWarmup:_chain(i, lr, e)
  local a, m = self.start_factor, self.warmup_steps
  if e == 0 then return lr * a end
  if e > m then return lr end
  local prev = self:_factor(e - 1)
  if prev == 0 then return self.base_lrs[i] * self:_factor(e) end
  return lr * (self:_factor(e) / prev)
end

-- ---------------------------------------------------------------- cyclic schedules

local CyclicLR = scheduler_class("CyclicLR", {"base_lr", "max_lr", "step_size_up", "step_size_down", "mode",
  "gamma", "scale_fn", "scale_mode", "cycle_momentum", "base_momentum", "max_momentum"},
  function(s, where, n, opt)
    need_per_group(where, s, "base_lr", n)
    need_per_group(where, s, "max_lr", n)
    need(where, s, "step_size_up", "posint")
    need(where, s, "step_size_down", "posint", true)
    need(where, s, "scale_fn", "function", true)
    if s.scale_fn == nil then
      need_enum(where, s, "mode", {"triangular", "triangular2", "exp_range"})
    else
      need_enum(where, s, "scale_mode", {"cycle", "iterations"})
    end
    need(where, s, "gamma", "number")
    need(where, s, "cycle_momentum", "boolean")
    if s.cycle_momentum then
      if opt and (opt.defaults or {}).momentum == nil then
        fail("%s: cycle_momentum needs an optimizer with a momentum option (%s has none); pass cycle_momentum = false",
          where, opt.name or "this one")
      end
      need_per_group(where, s, "base_momentum", n)
      need_per_group(where, s, "max_momentum", n)
    end
  end,
  function(cls, opt, o)
    return new_scheduler(cls, opt, {base_lr = copy_setting(o.base_lr), max_lr = copy_setting(o.max_lr),
      step_size_up = opt_or(o.step_size_up, 2000), step_size_down = o.step_size_down, mode = opt_or(o.mode, "triangular"),
      gamma = opt_or(o.gamma, 1), scale_fn = o.scale_fn, scale_mode = opt_or(o.scale_mode, "cycle"),
      cycle_momentum = opt_or(o.cycle_momentum, true), base_momentum = copy_setting(opt_or(o.base_momentum, 0.8)),
      max_momentum = copy_setting(opt_or(o.max_momentum, 0.9))})
  end,
  [[optim.CyclicLR(opt, {base_lr=, max_lr=, step_size_up=2000, step_size_down=step_size_up, mode="triangular",
    gamma=1, scale_fn=, scale_mode="cycle", cycle_momentum=true, base_momentum=0.8, max_momentum=0.9})
  PyTorch's cyclical learning rate, stepped once per batch: the lr climbs from base_lr to max_lr in
  step_size_up steps and back in step_size_down, the height scaled by mode: "triangular" (1),
  "triangular2" (halved every cycle) or "exp_range" (gamma^step); or by scale_fn(x), x the cycle
  (scale_mode="cycle", from 1) or the step (scale_mode="iterations"). base_lr, max_lr and the
  momentums may be lists, one per parameter group. The constructor sets each group's lr to base_lr.
  cycle_momentum (needs an optimizer with a momentum option: SGD, RMSprop; pass false for Adam, as
  PyTorch 1.13) moves each group's momentum the other way, max_momentum down to base_momentum.]])

CyclicLR._optional = {step_size_down = true}

-- the place in the cycle at step e: scale factor (0..1..0) and the height's multiplier
local function cyclic_position(self, e, where)
  local up = self.step_size_up
  local total = up + (self.step_size_down or up)
  local ratio = up / total
  local cycle = math.floor(1 + e / total)
  local x = 1.0 + e / total - cycle
  local sf
  if x <= ratio then sf = x / ratio else sf = (x - 1) / (ratio - 1) end
  local scale
  if self.scale_fn ~= nil then
    local arg = self.scale_mode == "cycle" and cycle or e
    scale = self.scale_fn(arg)
    if type(scale) ~= "number" then
      fail("%s: scale_fn(%d) returned %s, not a number", where, arg, val_str(scale))
    end
  elseif self.mode == "triangular" then
    scale = 1.0
  elseif self.mode == "triangular2" then
    scale = 1 / (2.0 ^ (cycle - 1))
  else
    scale = self.gamma ^ e
  end
  return sf, scale
end

function CyclicLR:_init_groups()
  for i, g in ipairs(self.optimizer.param_groups) do
    g.lr = per_group(self.base_lr, i)
    if g.initial_lr == nil then g.initial_lr = g.lr end
    self.base_lrs[i] = g.lr
  end
end
function CyclicLR:get_lr(i, _, e, where)
  local sf, scale = cyclic_position(self, e, where)
  local lo = per_group(self.base_lr, i)
  local height = (per_group(self.max_lr, i) - lo) * sf
  return lo + height * scale
end
function CyclicLR:_momentum(i, e, where)
  local sf, scale = cyclic_position(self, e, where)
  local hi = per_group(self.max_momentum, i)
  local height = (hi - per_group(self.base_momentum, i)) * sf
  return hi - height * scale
end

local OneCycleLR = scheduler_class("OneCycleLR", {"max_lr", "total_steps", "epochs", "steps_per_epoch", "pct_start",
  "anneal_strategy", "cycle_momentum", "base_momentum", "max_momentum", "div_factor", "final_div_factor",
  "three_phase"},
  function(s, where, n, opt)
    need_per_group(where, s, "max_lr", n)
    if s.total_steps == nil then
      if s.epochs == nil and s.steps_per_epoch == nil then
        fail("%s: give total_steps, or epochs and steps_per_epoch", where)
      end
      need(where, s, "epochs", "posint")
      need(where, s, "steps_per_epoch", "posint")
    else
      need(where, s, "total_steps", "posint")
    end
    need(where, s, "pct_start", "unit")
    need_enum(where, s, "anneal_strategy", {"cos", "linear"})
    need(where, s, "div_factor", "positive")
    need(where, s, "final_div_factor", "positive")
    need(where, s, "three_phase", "boolean")
    need(where, s, "cycle_momentum", "boolean")
    if s.cycle_momentum then
      local d = opt and opt.defaults or {}
      if opt and d.momentum == nil and d.betas == nil then
        fail("%s: cycle_momentum needs an optimizer with a momentum or betas option (%s has neither); "
          .. "pass cycle_momentum = false", where, opt.name or "this one")
      end
      need_per_group(where, s, "base_momentum", n)
      need_per_group(where, s, "max_momentum", n)
    end
    local total = s.total_steps or s.epochs * s.steps_per_epoch
    if int_of(s.last_epoch) and s.last_epoch > total then
      fail("%s: last_epoch %d is past the end of the schedule (total_steps %d)", where, s.last_epoch, total)
    end
  end,
  function(cls, opt, o)
    return new_scheduler(cls, opt, {max_lr = copy_setting(o.max_lr), total_steps = o.total_steps, epochs = o.epochs,
      steps_per_epoch = o.steps_per_epoch, pct_start = opt_or(o.pct_start, 0.3),
      anneal_strategy = opt_or(o.anneal_strategy, "cos"), cycle_momentum = opt_or(o.cycle_momentum, true),
      base_momentum = copy_setting(opt_or(o.base_momentum, 0.85)), max_momentum = copy_setting(opt_or(o.max_momentum, 0.95)),
      div_factor = opt_or(o.div_factor, 25), final_div_factor = opt_or(o.final_div_factor, 1e4),
      three_phase = opt_or(o.three_phase, false)})
  end,
  [[optim.OneCycleLR(opt, {max_lr=, total_steps= | epochs= and steps_per_epoch=, pct_start=0.3,
    anneal_strategy="cos", cycle_momentum=true, base_momentum=0.85, max_momentum=0.95, div_factor=25,
    final_div_factor=1e4, three_phase=false})
  PyTorch's 1cycle policy, stepped once per batch: the lr goes from max_lr/div_factor up to max_lr over
  the first pct_start of total_steps (epochs*steps_per_epoch), then down to
  max_lr/div_factor/final_div_factor ("cos" or "linear" annealing); three_phase goes back to the
  initial lr first, then down. Stepping past total_steps is an error. max_lr and the momentums may be
  lists, one per group. The base lr (each group's initial_lr) is max_lr/div_factor.
  cycle_momentum moves each group's momentum (or Adam's beta1) the other way, max_momentum ->
  base_momentum -> max_momentum; it needs an optimizer with a momentum or betas option. PyTorch
  also writes max_lr, min_lr, max_momentum and base_momentum into the groups; here they stay in the
  scheduler (an optimizer's load_state_dict refuses options it does not take).]])

OneCycleLR._optional = {total_steps = true, epochs = true, steps_per_epoch = true}

function OneCycleLR:_init_groups()
  local d = self.optimizer.defaults or {}
  self._use_beta1 = d.betas ~= nil
  for i, g in ipairs(self.optimizer.param_groups) do
    g.initial_lr = per_group(self.max_lr, i) / self.div_factor
    self.base_lrs[i] = g.initial_lr
  end
end

-- PyTorch's phases: {end step, start lr, end lr, start momentum, end momentum}
local function one_cycle(self, i, e, where, what)
  local total = self.total_steps or self.epochs * self.steps_per_epoch
  if e > total then
    fail("%s: step %d is past the end of the schedule (total_steps %d)", where, e, total)
  end
  local max_lr = per_group(self.max_lr, i)
  local initial = max_lr / self.div_factor
  local min_lr = initial / self.final_div_factor
  local hi, lo = per_group(self.max_momentum, i), per_group(self.base_momentum, i)
  local p = self.pct_start
  local phases
  if self.three_phase then
    phases = {{p * total - 1, initial, max_lr, hi, lo}, {2 * p * total - 2, max_lr, initial, lo, hi},
      {total - 1, initial, min_lr, hi, hi}}
  else
    phases = {{p * total - 1, initial, max_lr, hi, lo}, {total - 1, max_lr, min_lr, lo, hi}}
  end
  local start = 0
  for k, ph in ipairs(phases) do
    local stop = ph[1]
    if e <= stop or k == #phases then
      local pct = (e - start) / (stop - start)
      local a, b
      if what == "lr" then a, b = ph[2], ph[3] else a, b = ph[4], ph[5] end
      if self.anneal_strategy == "cos" then return b + (a - b) / 2.0 * (math.cos(math.pi * pct) + 1) end
      return (b - a) * pct + a
    end
    start = stop
  end
end
function OneCycleLR:get_lr(i, _, e, where) return one_cycle(self, i, e, where or self.name, "lr") end
function OneCycleLR:_momentum(i, e, where) return one_cycle(self, i, e, where, "momentum") end

-- ---------------------------------------------------------------- SequentialLR

local ReduceLROnPlateau -- below

local function check_sequential(s, where, n, opt)
  local list = s.schedulers
  if not is_list(list) or #list == 0 then
    fail("%s: schedulers must be a list of LR schedulers, got %s", where, val_str(list))
  end
  for i, sch in ipairs(list) do
    local mt = type(sch) == "table" and getmetatable(sch)
    if mt == ReduceLROnPlateau then
      fail("%s: scheduler %d is a ReduceLROnPlateau, which steps on a metric and cannot be chained", where, i)
    end
    if not (mt and sch._compute and sch.optimizer) then
      fail("%s: scheduler %d must be an LR scheduler (optim.StepLR, ...), got %s", where, i, val_str(sch))
    end
    if opt and sch.optimizer ~= opt then
      fail("%s: scheduler %d (%s) belongs to another optimizer", where, i, sch.name)
    end
  end
  need_int_list(where, s, "milestones", 1, true)
  if #s.milestones ~= #list - 1 then
    fail("%s: expected %d milestone%s (one fewer than the %d schedulers), got %d", where, #list - 1,
      #list == 2 and "" or "s", #list, #s.milestones)
  end
end

local SequentialLR = scheduler_class("SequentialLR", {"schedulers", "milestones"}, check_sequential,
  function(cls, opt, o)
    return new_scheduler(cls, opt, {schedulers = copy_setting(o.schedulers), milestones = copy_setting(o.milestones)})
  end,
  [[optim.SequentialLR(opt, {schedulers = {s1, s2, ...}, milestones = {m1, ...}}): s1 until epoch m1, then s2
  from its epoch 0, and so on (PyTorch's SequentialLR): at epoch e the scheduler k with m(k-1) <= e < m(k)
  sets the lr for its own epoch e - m(k-1). The schedulers belong to opt; milestones increase, one fewer
  than the schedulers. ReduceLROnPlateau cannot be chained. state_dict holds each scheduler's.]])

-- the scheduler in charge at epoch e, its own epoch and its index
function SequentialLR:_pick(e)
  local idx, start = 1, 0
  for k, m in ipairs(self.milestones) do
    if e >= m then idx, start = k + 1, m end
  end
  return self.schedulers[idx], e - start, idx
end
function SequentialLR:get_lr(i, _, e, where)
  local sub, se = self:_pick(e)
  return sub:get_lr(i, sub.base_lrs[i], se, where)
end
function SequentialLR:_compute(e, where)
  local sub, se, idx = self:_pick(e)
  local sub_where = ("%s: scheduler %d (%s)"):format(where, idx, sub.name)
  sub:_check_now(sub_where)
  return sub:_compute(se, sub_where)
end
function SequentialLR:_set(e, lrs, moms)
  local sub, se = self:_pick(e)
  sub:_set(se, lrs, moms)
  self.last_epoch, self._set_epoch = e, e
  self._last_lr = sub:get_last_lr()
end
-- a moved lr (Scheduler:_follow_lrs): PyTorch's SequentialLR steps the scheduler in charge, which
-- goes on from it, except at a milestone, where the next one starts with step(0) (its closed form)
SequentialLR._init_closed = true
function SequentialLR:_chain(i, lr, e, where)
  local sub, se, idx = self:_pick(e)
  if (se == 0 and idx > 1) or not sub._chain then return nil end
  return sub:_chain(i, lr, se, ("%s: scheduler %d (%s)"):format(where, idx, sub.name))
end
function SequentialLR:state_dict()
  local b, subs = {}, {}
  for i, v in ipairs(self.base_lrs) do b[i] = v end
  for i, sch in ipairs(self.schedulers) do subs[i] = sch:state_dict() end
  return save_follow(self, {last_epoch = self.last_epoch, base_lrs = b, milestones = copy_setting(self.milestones),
    schedulers = subs})
end
doc(SequentialLR.state_dict, "seq:state_dict() -> {last_epoch=, base_lrs=, milestones=, schedulers = {each scheduler's state_dict}}.")
function SequentialLR:_prepare_load(sd, where)
  check_last_epoch(sd, where)
  check_groups(self, "load_state_dict")
  local subs = sd.schedulers
  if not is_list(subs) or #subs ~= #self.schedulers then
    fail("%s: the state dict has %s scheduler states, SequentialLR %d schedulers", where,
      is_list(subs) and tostring(#subs) or "no list of", #self.schedulers)
  end
  for _, k in ipairs(sorted_keys(sd)) do
    if k ~= "last_epoch" and k ~= "base_lrs" and k ~= "milestones" and k ~= "schedulers" and not FOLLOW_KEYS[k] then
      fail("%s: '%s' is not a setting of SequentialLR (a state dict of another scheduler?)", where, tostring(k))
    end
  end
  local milestones = copy_setting(opt_or(sd.milestones, self.milestones))
  check_sequential({schedulers = self.schedulers, milestones = milestones}, where, #self.base_lrs, self.optimizer)
  local commits = {}
  for i, sch in ipairs(self.schedulers) do
    commits[i] = sch:_prepare_load(subs[i], ("%s: scheduler %d (%s)"):format(where, i, sch.name))
  end
  local follow = prepare_follow(self, sd, where)
  return function()
    for _, c in ipairs(commits) do c() end
    self.milestones = milestones
    self.last_epoch = int_of(sd.last_epoch)
    follow()
  end
end

-- ---------------------------------------------------------------- ChainedScheduler

-- A scheduler's factor of group i's base lr at epoch e (the ones with a _factor; MultiplicativeLR
-- has one per group)
function Scheduler:_group_factor(_, e, where) return self:_factor(e, where) end

-- PyTorch's chainable forms of these multiply the current lr by the ratio of their closed forms at
-- e and e - 1, so chaining them multiplies their factors; the others' chainable forms are not
-- products (LambdaLR replaces the lr, CosineAnnealingLR adds to it past T_max), and a chain of them
-- has no closed form here.
for _, cls in ipairs({StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR, PolynomialLR, MultiplicativeLR,
                      LinearWarmup}) do
  cls._chainable = true
end
local CHAINABLE = "StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR, PolynomialLR, MultiplicativeLR, LinearWarmup"

local function check_chained(s, where, _, opt)
  local list = s.schedulers
  if not is_list(list) or #list == 0 then
    fail("%s: schedulers must be a list of LR schedulers, got %s", where, val_str(list))
  end
  for i, sch in ipairs(list) do
    local mt = type(sch) == "table" and getmetatable(sch)
    if not (mt and sch._compute and sch.optimizer) then
      fail("%s: scheduler %d must be an LR scheduler (optim.StepLR, ...), got %s", where, i, val_str(sch))
    end
    if not rawget(mt, "_chainable") then
      fail("%s: scheduler %d (%s) cannot be chained: only the schedulers that scale the lr by a factor multiply "
        .. "(%s)", where, i, sch.name, CHAINABLE)
    end
    if sch.optimizer ~= (opt or list[1].optimizer) then
      fail("%s: scheduler %d (%s) belongs to another optimizer than scheduler 1", where, i, sch.name)
    end
  end
end

local ChainedScheduler = scheduler_class("ChainedScheduler", {"schedulers"}, check_chained,
  function(cls, list, ...)
    if (...) ~= nil then fail("ChainedScheduler: unexpected argument #2 (%s)", type((...))) end
    check_chained({schedulers = list}, "ChainedScheduler")
    local e = list[1].last_epoch
    for i, sch in ipairs(list) do
      if sch.last_epoch ~= e then
        fail("ChainedScheduler: the schedulers are at different epochs (scheduler 1 at %s, scheduler %d at %s)",
          val_str(e), i, val_str(sch.last_epoch))
      end
    end
    return new_scheduler(cls, list[1].optimizer, {schedulers = copy_setting(list), last_epoch = e})
  end,
  [[optim.ChainedScheduler({s1, s2, ...}): every step() steps all of them (PyTorch's ChainedScheduler)
  The lr is the base lr times the factors of all the schedulers at the epoch, as PyTorch's chainable
  steps multiply them: ChainedScheduler({optim.ConstantLR(opt, {factor = 0.5, total_iters = 3}),
  optim.ExponentialLR(opt, {gamma = 0.9})}) gives base * 0.5 * 0.9^epoch for 3 epochs, then base * 0.9^epoch.
  The schedulers belong to one optimizer, are at the same epoch, and scale the lr by a factor: StepLR,
  MultiStepLR, ConstantLR, LinearLR, ExponentialLR, PolynomialLR, MultiplicativeLR, LinearWarmup (the
  others' PyTorch forms do not multiply). Each one's last_epoch and get_last_lr() follow the chain's (its
  get_last_lr(): the lr after it and those before it). state_dict holds each scheduler's.]], true)

function ChainedScheduler:get_lr(i, base, e, where)
  for _, sub in ipairs(self.schedulers) do base = base * sub:_group_factor(i, e, where or self.name) end
  return base
end
-- the lrs at epoch e, and after each scheduler (each one's get_last_lr, as PyTorch's that step in turn)
function ChainedScheduler:_compute(e, where)
  self._after_chain = nil
  local subs, wheres = self.schedulers, {}
  for k, sub in ipairs(subs) do
    wheres[k] = ("%s: scheduler %d (%s)"):format(where, k, sub.name)
    sub:_check_now(wheres[k])
  end
  local lrs, after = {}, {}
  for k = 1, #subs do after[k] = {} end
  for i, base in ipairs(self.base_lrs) do
    local lr = base
    for k, sub in ipairs(subs) do
      lr = lr * sub:_group_factor(i, e, wheres[k])
      after[k][i] = lr
    end
    if not is_num(lr) then
      fail("%s: lr %s for parameter group %d at epoch %d is not a valid learning rate", where, val_str(lr), i, e)
    end
    lrs[i] = lr
  end
  return lrs, nil, after
end
function ChainedScheduler:_set(e, lrs, _, after)
  Scheduler._set(self, e, lrs)
  -- a group that followed its moved lr (_chain) has its own lrs after each scheduler
  local followed = rawget(self, "_after_chain")
  if followed then
    for k = 1, #self.schedulers do
      for i, v in pairs(followed[k]) do after[k][i] = v end
    end
    self._after_chain = nil
  end
  for k, sub in ipairs(self.schedulers) do sub.last_epoch, sub._last_lr = e, after[k] end
end
-- a moved lr (Scheduler:_follow_lrs): PyTorch's ChainedScheduler steps each scheduler in turn, each
-- going on from the lr the one before it set
ChainedScheduler._init_closed = true
function ChainedScheduler:_chain(i, lr, e, where)
  local followed = rawget(self, "_after_chain")
  if not followed then
    followed = {}
    for k = 1, #self.schedulers do followed[k] = {} end
    self._after_chain = followed
  end
  for k, sub in ipairs(self.schedulers) do
    lr = sub:_chain(i, lr, e, ("%s: scheduler %d (%s)"):format(where, k, sub.name))
    followed[k][i] = lr
  end
  return lr
end
function ChainedScheduler:state_dict()
  local b, subs = {}, {}
  for i, v in ipairs(self.base_lrs) do b[i] = v end
  for i, sch in ipairs(self.schedulers) do subs[i] = sch:state_dict() end
  return save_follow(self, {last_epoch = self.last_epoch, base_lrs = b, schedulers = subs})
end
doc(ChainedScheduler.state_dict, "chain:state_dict() -> {last_epoch=, base_lrs=, schedulers = {each scheduler's state_dict}}.")
function ChainedScheduler:_prepare_load(sd, where)
  check_last_epoch(sd, where)
  check_groups(self, "load_state_dict")
  local subs = sd.schedulers
  if not is_list(subs) or #subs ~= #self.schedulers then
    fail("%s: the state dict has %s scheduler states, ChainedScheduler %d schedulers", where,
      is_list(subs) and tostring(#subs) or "no list of", #self.schedulers)
  end
  for _, k in ipairs(sorted_keys(sd)) do
    if k ~= "last_epoch" and k ~= "base_lrs" and k ~= "schedulers" and not FOLLOW_KEYS[k] then
      fail("%s: '%s' is not a setting of ChainedScheduler (a state dict of another scheduler?)", where, tostring(k))
    end
  end
  local base = sd.base_lrs or self.base_lrs
  if not is_list(base) or #base ~= #self.base_lrs then
    fail("%s: the state dict has %s base lrs, the scheduler %d groups", where,
      is_list(base) and tostring(#base) or "no list of", #self.base_lrs)
  end
  for i, v in ipairs(base) do
    if type(v) ~= "number" then fail("%s: base lr %d is a %s, not a number", where, i, type(v)) end
  end
  local commits = {}
  for i, sch in ipairs(self.schedulers) do
    commits[i] = sch:_prepare_load(subs[i], ("%s: scheduler %d (%s)"):format(where, i, sch.name))
  end
  local follow = prepare_follow(self, sd, where)
  return function()
    for _, c in ipairs(commits) do c() end
    for i, v in ipairs(base) do self.base_lrs[i] = v end
    self.last_epoch = int_of(sd.last_epoch)
    follow()
  end
end

-- ---------------------------------------------------------------- ReduceLROnPlateau

ReduceLROnPlateau = scheduler_class("ReduceLROnPlateau", {"mode", "factor", "patience", "threshold",
  "threshold_mode", "cooldown", "min_lr", "eps"},
  function(s, where, n)
    need_enum(where, s, "mode", {"min", "max"})
    if not (is_num(s.factor) and s.factor >= 0 and s.factor < 1) then
      fail("%s: factor must be a number in [0, 1), got %s", where, val_str(s.factor))
    end
    need(where, s, "patience", "natural")
    need(where, s, "threshold", "number")
    need_enum(where, s, "threshold_mode", {"rel", "abs"})
    need(where, s, "cooldown", "natural")
    need_per_group(where, s, "min_lr", n)
    need(where, s, "eps", "number")
  end,
  function(cls, opt, o)
    return new_scheduler(cls, opt, {mode = opt_or(o.mode, "min"), factor = opt_or(o.factor, 0.1),
      patience = opt_or(o.patience, 10), threshold = opt_or(o.threshold, 1e-4),
      threshold_mode = opt_or(o.threshold_mode, "rel"), cooldown = opt_or(o.cooldown, 0),
      min_lr = copy_setting(opt_or(o.min_lr, 0)), eps = opt_or(o.eps, 1e-8)})
  end,
  [[optim.ReduceLROnPlateau(opt[, {mode="min", factor=0.1, patience=10, threshold=1e-4, threshold_mode="rel",
    cooldown=0, min_lr=0, eps=1e-8}]): PyTorch's; sched:step(metric) once per epoch
  Multiplies each group's lr by factor (not below min_lr, a number or one per group; a change
  smaller than eps is skipped) when the metric (a number or a one-element tensor) has not improved
  for more than patience epochs, then waits cooldown epochs. Improved: below best*(1-threshold)
  (mode "min", threshold_mode "rel"), below best-threshold ("abs"); above best*(1+threshold) or
  best+threshold in mode "max". Unlike the other schedulers it changes the current lr (an lr set by
  hand is where it goes on from). Fields: best, num_bad_epochs, cooldown_counter, last_epoch.]])

function ReduceLROnPlateau:_init_groups()
  for i, g in ipairs(self.optimizer.param_groups) do self.base_lrs[i] = g.lr end
  self.best = self.mode == "min" and math.huge or -math.huge
  self.num_bad_epochs, self.cooldown_counter = 0, 0
end
function ReduceLROnPlateau:_apply()
  local last = {}
  for i, g in ipairs(self.optimizer.param_groups) do last[i] = g.lr end
  self._last_lr = last
end
function ReduceLROnPlateau:get_lr()
  fail("ReduceLROnPlateau:get_lr: the lr follows the metrics seen, not a formula; read sched:get_last_lr()")
end
doc(ReduceLROnPlateau.get_lr, "sched:get_lr(): an error (the lr follows the metrics, not a formula); sched:get_last_lr() lists the lrs.")

function ReduceLROnPlateau:_is_better(a)
  local best, t = self.best, self.threshold
  if self.mode == "min" then
    if self.threshold_mode == "rel" then return a < best * (1. - t) end
    return a < best - t
  end
  if self.threshold_mode == "rel" then return a > best * (t + 1.) end
  return a > best + t
end

local function check_counters(s, where)
  if type(s.best) ~= "number" then fail("%s: best must be a number, got %s", where, val_str(s.best)) end
  need(where, s, "num_bad_epochs", "natural")
  need(where, s, "cooldown_counter", "natural")
end

function ReduceLROnPlateau:step(metric, ...)
  local where = "ReduceLROnPlateau:step"
  if select("#", ...) > 0 then
    fail("%s: expected one argument (the metric), got %d", where, 1 + select("#", ...))
  end
  local current
  if type(metric) == "number" then
    current = metric
  elseif pt.is_tensor(metric) and metric:numel() == 1 then
    current = metric:item()
  else
    fail("%s: expected the metric as a number or a one-element tensor, got %s", where,
      pt.is_tensor(metric) and "a tensor of shape {" .. table.concat(metric:size(), ",") .. "}" or val_str(metric))
  end
  check_groups(self, "step")
  self:_check_now(where)
  check_counters(self, where)
  self.last_epoch = next_epoch(self, where)
  if self:_is_better(current) then
    self.best, self.num_bad_epochs = current, 0
  else
    self.num_bad_epochs = self.num_bad_epochs + 1
  end
  if self.cooldown_counter > 0 then
    self.cooldown_counter = self.cooldown_counter - 1
    self.num_bad_epochs = 0 -- bad epochs in the cooldown do not count
  end
  if self.num_bad_epochs > self.patience then
    for i, g in ipairs(self.optimizer.param_groups) do
      local old = g.lr
      local new = math.max(old * self.factor, per_group(self.min_lr, i))
      if old - new > self.eps then g.lr = new end
    end
    self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
  end
  self:_apply()
end
doc(ReduceLROnPlateau.step, "sched:step(metric): one epoch's metric (a number or a one-element tensor); lowers the lrs\n"
  .. "  after more than patience epochs without improvement (help(optim.ReduceLROnPlateau)).")

local PLATEAU_STATE = {best = true, num_bad_epochs = true, cooldown_counter = true}
function ReduceLROnPlateau:state_dict()
  local sd = Scheduler.state_dict(self)
  sd.base_lrs = nil
  for k in pairs(PLATEAU_STATE) do sd[k] = self[k] end
  return sd
end
doc(ReduceLROnPlateau.state_dict, "sched:state_dict() -> {last_epoch=, best=, num_bad_epochs=, cooldown_counter=, and the settings}.")
function ReduceLROnPlateau:_prepare_load(sd, where)
  local commit = Scheduler._prepare_load(self, sd, where, PLATEAU_STATE)
  local counters = {}
  for k in pairs(PLATEAU_STATE) do counters[k] = opt_or(sd[k], self[k]) end
  check_counters(counters, where)
  return function()
    commit()
    for k, v in pairs(counters) do self[k] = v end
  end
end

-- the schedulers' own formulas share get_lr's help; sched:get_lr() without its arguments (PyTorch's
-- get_lr() takes none) is an error that says what to call, not Lua's "attempt to perform arithmetic on a
-- nil value"
for _, cls in ipairs({Scheduler, CosineAnnealingLR, WarmRestarts, CyclicLR, OneCycleLR, SequentialLR,
                      MultiplicativeLR, ChainedScheduler, LambdaLR}) do
  local f = rawget(cls, "get_lr")
  local function get_lr(self, i, base, e, where)
    if i == nil or base == nil or e == nil then
      fail("%s:get_lr: expected (group, base_lr, epoch), the lr of a parameter group at an epoch; "
        .. "sched:get_last_lr() lists the lrs last set", self.name or "LRScheduler")
    end
    return f(self, i, base, e, where)
  end
  cls.get_lr = get_lr
  doc(get_lr, docs[Scheduler.get_lr] or docs[f])
end

doc(Optimizer, "optim.Optimizer: base of SGD, Adam, AdamW, RMSprop, Adagrad, Rprop, ASGD, ... (step, zero_grad, state_dict, param_groups).")

-- torch.optim.lr_scheduler's namespace: the same classes (optim.lr_scheduler.StepLR is optim.StepLR),
-- with torch 1.13's name _LRScheduler for the base class
optim.lr_scheduler = {_LRScheduler = optim.LRScheduler}
for _, name in ipairs({"LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
                       "LinearLR", "ExponentialLR", "SequentialLR", "PolynomialLR", "CosineAnnealingLR",
                       "ChainedScheduler", "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts",
                       "OneCycleLR", "LinearWarmup"}) do
  optim.lr_scheduler[name] = assert(rawget(optim, name), name)
end
doc(optim.lr_scheduler, "optim.lr_scheduler: PyTorch's torch.optim.lr_scheduler namespace, the schedulers of optim under the\n"
  .. "  same names (optim.lr_scheduler.StepLR is optim.StepLR; _LRScheduler is optim.LRScheduler).")

-- optim.swa_utils (AveragedModel, SWALR, update_bn; built with this table) loads on first use: it
-- needs nn, which a script using only the optimizers would otherwise load too
setmetatable(optim, {__index = function(t, k)
  if k ~= "swa_utils" then return nil end
  local m = require("partrain.optim_swa")(optim)
  rawset(t, k, m)
  return m
end})

return optim
