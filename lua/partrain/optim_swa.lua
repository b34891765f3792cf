-- pt.optim.swa_utils: stochastic weight averaging as PyTorch 1.13's torch.optim.swa_utils:
-- AveragedModel (a running average of a model's parameters, or any average through avg_fn),
-- SWALR (anneals each group's lr to a fixed swa_lr) and update_bn (recomputes the BatchNorm
-- statistics of the averaged weights with one pass over the data).
--   local swa_model = optim.swa_utils.AveragedModel(model)
--   local swa_sched = optim.swa_utils.SWALR(opt, {swa_lr = 0.05})
--   for epoch = 1, n do
--     train_one_epoch()
--     if epoch > swa_start then swa_model:update_parameters(model); swa_sched:step() else sched:step() end
--   end
--   optim.swa_utils.update_bn(loader, swa_model)
-- optim.lua builds the table with itself (this file's function(optim)): SWALR is one of its
-- schedulers, and requiring partrain.optim from here while it loads would load it again.
local pt = require "partrain"
local nn = require "partrain.nn"

local docs = pt._docs
local doc = pt._doc

-- errors at the user's line (the nearest frame outside partrain's own modules)
local fail = require("partrain.tensor")._fail

local function shape_str(t) return "{" .. table.concat(t:size(), ",") .. "}" end

local function type_of(v)
  if pt.is_tensor(v) then return "tensor" end
  return type(v)
end

-- a value as the messages show it
local function val_str(v)
  if type(v) == "number" then return v ~= v and "nan" or tostring(v) end
  if type(v) == "string" then return "'" .. v .. "'" end
  if v == nil or type(v) == "boolean" then return tostring(v) end
  return type_of(v)
end

local function callable(fn)
  if type(fn) == "function" then return true end
  local mt = getmetatable(fn)
  return type(mt) == "table" and rawget(mt, "__call") ~= nil
end

local function check_options(name, opts, known)
  if opts == nil then return {} end
  if type(opts) ~= "table" or pt.is_tensor(opts) then fail("%s: options must be a table, got %s", name, type_of(opts)) end
  local keys = {}
  for k in pairs(opts) do keys[#keys + 1] = tostring(k) end
  table.sort(keys) -- the first misspelled one in name order is reported, the same on every run
  for _, k in ipairs(keys) do
    if not known[k] then
      local list = {}
      for n in pairs(known) do list[#list + 1] = n end
      table.sort(list)
      fail("%s: unknown option '%s' (options: %s)", name, k, table.concat(list, ", "))
    end
  end
  return opts
end

local function check_device(name, device)
  if device ~= nil and device ~= "cpu" then
    fail("%s: device must be \"cpu\" (partrain's tensors live on the CPU), got %s", name, val_str(device))
  end
end

-- ------------------------------------------------------------------ AveragedModel

local AveragedModel = nn.Module:extend("AveragedModel")

local AVG_OPTIONS = {avg_fn = true, multi_avg_fn = true, use_buffers = true, device = true}

function AveragedModel:__init(model, opts)
  local name = "AveragedModel"
  if not nn.is_module(model) then fail("%s: model must be a Module, got %s", name, type_of(model)) end
  opts = check_options(name, opts, AVG_OPTIONS)
  check_device(name, opts.device)
  for _, k in ipairs({"avg_fn", "multi_avg_fn"}) do
    if opts[k] ~= nil and not callable(opts[k]) then fail("%s: %s must be a function, got %s", name, k, type_of(opts[k])) end
  end
  local use_buffers = opts.use_buffers
  if use_buffers == nil then use_buffers = false end
  if type(use_buffers) ~= "boolean" then fail("%s: use_buffers must be a boolean, got %s", name, type_of(use_buffers)) end
  self.module = nn._deepcopy_module(model) -- copy.deepcopy: fresh tensors, sharing kept (nn_rnn.lua)
  self:register_buffer("n_averaged", pt.tensor(0, {dtype = "int64"}))
  self.avg_fn, self.multi_avg_fn, self.use_buffers = opts.avg_fn, opts.multi_avg_fn, use_buffers
end

function AveragedModel:forward(...)
  return self.module(...)
end

-- PyTorch's equally weighted running average
local function swa_avg(averaged, current, num_averaged)
  return averaged + (current - averaged) / (num_averaged + 1)
end

local function tensors_of(m, with_buffers)
  local list = m:parameters()
  if with_buffers then
    for _, b in ipairs(m:buffers()) do list[#list + 1] = b end
  end
  return list
end

function AveragedModel:update_parameters(model)
  local name = "AveragedModel:update_parameters"
  if not nn.is_module(model) then fail("%s: model must be a Module, got %s", name, type_of(model)) end
  -- the averaged model's own parameters are its copy's; its buffers are n_averaged and the copy's
  local own = tensors_of(self.module, self.use_buffers)
  local theirs = tensors_of(model, self.use_buffers)
  local what = self.use_buffers and "tensor" or "parameter" -- with use_buffers: parameters, then buffers
  if #own ~= #theirs then
    fail("%s: the averaged model has %d %s%s, the model %d (it averages copies of the model it was made from)",
      name, #own, what, #own == 1 and "" or "s", #theirs)
  end
  for i = 1, #own do
    if shape_str(own[i]) ~= shape_str(theirs[i]) then
      fail("%s: %s %d has shape %s in the model and %s in the averaged model", name, what, i,
        shape_str(theirs[i]), shape_str(own[i]))
    end
  end
  local n = self.n_averaged
  pt.no_grad(function()
    local avg, cur = {}, {}
    for i = 1, #own do avg[i], cur[i] = own[i]:detach(), theirs[i]:detach() end
    if n:item() == 0 then
      for i = 1, #avg do avg[i]:copy_(cur[i]) end
    elseif self.multi_avg_fn then
      self.multi_avg_fn(avg, cur, n)
    else
      local fn = self.avg_fn or swa_avg
      for i = 1, #avg do avg[i]:copy_(fn(avg[i], cur[i], n)) end
    end
  end)
  n:add_(1)
end
doc(AveragedModel.update_parameters, [[swa_model:update_parameters(model): folds model's current parameters into the average.
  The first call copies them; each later one sets every averaged tensor a to avg_fn(a, p, n)
  (p: the model's tensor, n: the n_averaged buffer, a 0-d int64 tensor counting the models averaged so far;
  default a + (p - a) / (n + 1), the equal average), or calls multi_avg_fn(as, ps, n) with the lists,
  which updates the tensors of as in place. With use_buffers the buffers (BatchNorm's running
  statistics) are averaged too; without, they stay as they were copied. No gradient is recorded.
  model must have the averaged model's structure (the same number of tensors, of the same shapes).]])

doc(AveragedModel, [[optim.swa_utils.AveragedModel(model[, {avg_fn=, multi_avg_fn=, use_buffers=false}]): a running average of model's weights.
  Holds a deep copy of model as swa_model.module (so its state_dict has module.* keys, and the
  n_averaged buffer); swa_model(x) runs the copy. swa_model:update_parameters(model) folds the
  model's current parameters in (help(optim.swa_utils.AveragedModel.update_parameters)).
  avg_fn(averaged, current, num_averaged) -> the new average of one tensor (e.g. an exponential
  moving average: function(a, p) return a * 0.9 + p * 0.1 end); multi_avg_fn(averaged_list,
  current_list, num_averaged) updates all of them in place at once (PyTorch 2's; it wins over
  avg_fn). use_buffers=true averages the buffers too instead of leaving them to update_bn. device
  may only be "cpu".]])

-- ------------------------------------------------------------------ update_bn

-- PyTorch's isinstance(m, _BatchNorm): BatchNorm1d/2d/3d and their subclasses (partrain's
-- InstanceNorm classes share nn._BatchNorm's code, but are not batch norms)
-- (by class name: the model's classes may come from another load of partrain.nn than this file's)
local function is_batch_norm(m)
  local cls = getmetatable(m)
  while type(cls) == "table" do
    local cname = rawget(cls, "__name")
    if type(cname) == "string" and cname:match("^InstanceNorm%dd$") then return false end
    if cls == nn._BatchNorm or cname == "_BatchNorm" then return true end
    cls = rawget(cls, "super")
  end
  return false
end

-- calls fn(batch) for every batch of loader: a data loader (loader:batches()), an iterator
-- function, or a list of batches
local function each_batch(name, loader, fn)
  if type(loader) == "table" and not pt.is_tensor(loader) and callable(loader.batches) then
    for b in loader:batches() do fn(b) end
  elseif type(loader) == "function" then
    for b in loader do fn(b) end
  elseif type(loader) == "table" and not pt.is_tensor(loader) then
    for _, b in ipairs(loader) do fn(b) end
  else
    fail("%s: loader must be a data loader (with :batches()), an iterator function or a list of batches, got %s",
      name, type_of(loader))
  end
end

local function update_bn(loader, model, device)
  local name = "update_bn"
  if not nn.is_module(model) then fail("%s: model must be a Module, got %s", name, type_of(model)) end
  check_device(name, device)
  local bns = {}
  for _, m in ipairs(model:modules()) do
    -- a BatchNorm without running statistics (track_running_stats=false) has nothing to update
    if is_batch_norm(m) and m._buffers.running_mean ~= nil then bns[#bns + 1] = m end
  end
  if #bns == 0 then return end
  local momenta = {}
  pt.no_grad(function()
    for i, m in ipairs(bns) do
      m.running_mean:zero_()
      m.running_var:fill_(1)
      momenta[i] = m.momentum
      m.momentum = false -- a cumulative average over the batches (PyTorch's momentum=None)
      if m.num_batches_tracked ~= nil then m.num_batches_tracked:zero_() end
    end
  end)
  local was_training = model.training
  model:train()
  local count = 0
  local ok, err = pcall(each_batch, name, loader, function(b)
    count = count + 1
    local x = b
    if type(b) == "table" and not pt.is_tensor(b) then x = b[1] end
    if not pt.is_tensor(x) then
      fail("%s: batch %d is %s (expected a tensor, or a list whose first element is the input tensor)", name, count,
        type(b) == "table" and not pt.is_tensor(b) and "a table without a tensor at [1]" or "a " .. type_of(b))
    end
    pt.no_grad(function() model(x) end)
  end)
  -- the settings come back whatever happened
  for i, m in ipairs(bns) do m.momentum = momenta[i] end
  model:train(was_training)
  if not ok then error(err, 0) end
end
doc(update_bn, [[optim.swa_utils.update_bn(loader, model[, device]): recomputes the BatchNorm running statistics of model.
  Every BatchNorm1d/2d/3d of model (with running statistics) gets running_mean 0, running_var 1
  and a cumulative average (momentum=false) for one pass over loader, in training mode without
  gradients; then its momentum and model's mode come back. loader: a data loader (its
  loader:batches()), an iterator function or a list of batches; each batch is the input tensor
  or a list whose first element is (the loader's x of x, y). Run it on an AveragedModel after
  training: averaged weights need statistics of their own. Nothing happens (the loader is not
  read) when model has no BatchNorm.]])

-- ------------------------------------------------------------------ SWALR

local ANNEAL = {
  cos = function(t) return (1 - math.cos(math.pi * t)) / 2 end,
  linear = function(t) return t end,
}

local function clamp01(v) return math.max(0, math.min(1, v)) end

local function per_group(v, i)
  if type(v) == "table" then return v[i] end
  return v
end

local function is_num(v) return type(v) == "number" and v == v end

local SWALR_KEYS = {"swa_lr", "anneal_epochs", "anneal_strategy"}

return function(optim)
  local Scheduler = optim.LRScheduler

  local SWALR = setmetatable({name = "SWALR", _repr_keys = SWALR_KEYS}, {__index = Scheduler})
  SWALR.__index = SWALR
  SWALR.__tostring = Scheduler.__tostring

  -- the settings (as fields of s: the scheduler, or a state dict being loaded), for n groups
  function SWALR._check(s, where, n)
    local lr = s.swa_lr
    if type(lr) == "table" and getmetatable(lr) == nil then
      if #lr ~= n then
        fail("%s: expected %d value%s for swa_lr (one per parameter group), got %d", where, n, n == 1 and "" or "s", #lr)
      end
      for i = 1, n do
        if not is_num(lr[i]) then fail("%s: swa_lr[%d] must be a number, got %s", where, i, val_str(lr[i])) end
      end
    elseif not is_num(lr) then
      fail("%s: swa_lr must be a number or a list of one per parameter group, got %s", where, val_str(lr))
    end
    local e = s.anneal_epochs
    if not (is_num(e) and e >= 0 and e < math.huge and e == math.floor(e)) then
      fail("%s: anneal_epochs must be a non-negative integer, got %s", where, val_str(e))
    end
    if ANNEAL[s.anneal_strategy] == nil then
      fail("%s: anneal_strategy must be 'cos' or 'linear', got %s", where, val_str(s.anneal_strategy))
    end
  end

  -- PyTorch's SWALR.get_lr: the lr before the annealing is recovered from the group's current lr
  -- (so another scheduler may have moved it before SWALR takes over), then moved the fraction
  -- alpha of the way to swa_lr
  function SWALR:get_lr(i, _, e)
    local swa = per_group(self.swa_lr, i)
    local lr = self.optimizer.param_groups[i].lr
    local f, T = ANNEAL[self.anneal_strategy], math.max(1, self.anneal_epochs)
    local step = e
    if self.anneal_epochs == 0 then step = math.max(1, step) end
    local prev_alpha = f(clamp01((step - 1) / T))
    local initial = prev_alpha == 1 and swa or (lr - prev_alpha * swa) / (1 - prev_alpha)
    local alpha = f(clamp01(step / T))
    return swa * alpha + initial * (1 - alpha)
  end

  -- each group also shows its swa_lr (PyTorch keeps it there)
  function SWALR:_set(e, lrs, moms)
    Scheduler._set(self, e, lrs, moms)
    for i, g in ipairs(self.optimizer.param_groups) do g.swa_lr = per_group(self.swa_lr, i) end
  end

  -- as PyTorch's: the state comes back, the groups' lrs stay (a step derives the next lr from them)
  function SWALR:load_state_dict(sd)
    self:_prepare_load(sd, "SWALR:load_state_dict")()
    local last = {}
    for i, g in ipairs(self.optimizer.param_groups) do
      g.swa_lr = per_group(self.swa_lr, i)
      last[i] = g.lr
    end
    self._last_lr = last
  end

  local KNOWN = {}
  for _, k in ipairs(SWALR_KEYS) do KNOWN[k] = true end

  setmetatable(SWALR, {
    __index = Scheduler,
    __call = function(cls, opt, swa_lr, opts, ...)
      local name = "SWALR"
      if type(opt) ~= "table" or type(opt.param_groups) ~= "table" then
        fail("%s: expected an optimizer as the first argument, got %s", name, val_str(opt))
      end
      -- SWALR(opt, {swa_lr=, ...}) or SWALR(opt, swa_lr[, {...}]) (a number or a list per group)
      if opts == nil and type(swa_lr) == "table" and getmetatable(swa_lr) == nil and swa_lr[1] == nil then
        swa_lr, opts = nil, swa_lr
      end
      if select("#", ...) > 0 then fail("%s: unexpected argument #4 (%s)", name, type_of((...))) end
      opts = check_options(name, opts, KNOWN)
      if swa_lr ~= nil and opts.swa_lr ~= nil then
        fail("%s: swa_lr given twice (as an argument and as an option)", name)
      end
      if swa_lr == nil then swa_lr = opts.swa_lr end
      if swa_lr == nil then
        fail("%s: swa_lr is required (optim.swa_utils.SWALR(opt, swa_lr) or SWALR(opt, {swa_lr=}))", name)
      end
      if type(swa_lr) == "table" then
        local c = {}
        for i, v in ipairs(swa_lr) do c[i] = v end
        swa_lr = c
      end
      local self = setmetatable({optimizer = opt, last_epoch = 0, base_lrs = {}}, cls)
      self.swa_lr = swa_lr
      self.anneal_epochs = opts.anneal_epochs == nil and 10 or opts.anneal_epochs
      self.anneal_strategy = opts.anneal_strategy == nil and "cos" or opts.anneal_strategy
      cls._check(self, name, #opt.param_groups, opt)
      self.anneal_epochs = math.tointeger(self.anneal_epochs)
      self:_init_groups()
      self:_apply(name)
      return self
    end,
  })
  doc(SWALR.get_lr, docs[Scheduler.get_lr])
  doc(SWALR.load_state_dict, "sched:load_state_dict(sd): goes on from a sched:state_dict() (its last_epoch and settings, checked\n"
    .. "  before anything changes); the groups' lrs stay as they are (as PyTorch's: the next step derives its lr from them).")
  doc(SWALR, [[optim.swa_utils.SWALR(opt, swa_lr[, {anneal_epochs=10, anneal_strategy="cos"}]) (or SWALR(opt, {swa_lr=, ...})): anneals to swa_lr.
  Each step moves every group's lr toward its swa_lr (a number, or a list of one per group) and
  holds it there after anneal_epochs steps: with alpha_e = f(min(1, e / anneal_epochs)),
  f(t) = (1 - cos(pi t)) / 2 ("cos") or t ("linear"), the lr before the annealing is recovered
  from the group's current lr with alpha_(e-1) and the new one is swa_lr * alpha_e + that
  * (1 - alpha_e), as PyTorch's SWALR: it starts from wherever the lr is when it is created (after
  another scheduler's steps, say) and an lr set by hand in between is taken up. anneal_epochs=0
  sets swa_lr at once. The settings are fields read at every step (sched.swa_lr = ...); each
  group's swa_lr shows the value it anneals to. anneal_epochs a non-negative integer.]])

  local swa_utils = {AveragedModel = AveragedModel, SWALR = SWALR, update_bn = update_bn}
  doc(swa_utils, [[optim.swa_utils: stochastic weight averaging (PyTorch's torch.optim.swa_utils).
  AveragedModel(model[, {avg_fn=, multi_avg_fn=, use_buffers=}]) keeps a running average of the
  weights (swa_model:update_parameters(model) after each epoch), SWALR(opt, swa_lr[, {anneal_epochs=,
  anneal_strategy=}]) anneals the lr to a constant for the averaging phase, update_bn(loader,
  swa_model) recomputes the BatchNorm statistics of the averaged weights. help(optim.swa_utils.<name>).]])
  return swa_utils
end
