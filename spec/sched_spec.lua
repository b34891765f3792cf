-- The learning-rate schedulers against PyTorch 1.13, and their checks (optim.lua).
--
-- R.* below: the lr (and momentum) of each parameter group right after the scheduler is made and
-- after each step(), computed once with PyTorch 1.13 by this script (SGD or Adam, two groups
-- with lr 0.1 and 0.05):
--[==[
# Reference values for spec/sched_spec.lua (PyTorch 1.13): the lr (and momentum) of each parameter
# group after construction and after each step().
import math, warnings, torch
from torch.optim import SGD, Adam
import torch.optim.lr_scheduler as S
warnings.simplefilter("ignore")

def opt(cls=SGD, **kw):
    a, b = torch.nn.Parameter(torch.zeros(1)), torch.nn.Parameter(torch.zeros(1))
    return cls([{"params": [a]}, {"params": [b], "lr": 0.05}], lr=0.1, **kw)

def fmt(v): return repr(float(v))
out = []
def run(name, o, make, n, mom=None, metrics=None):
    s = make(o)
    lrs = [[g["lr"]] for g in o.param_groups]
    moms = [[g[mom] if mom == "momentum" else g["betas"][0]] for g in o.param_groups] if mom else None
    for k in range(n):
        if metrics is not None: s.step(metrics[k])
        else: s.step()
        for i, g in enumerate(o.param_groups):
            lrs[i].append(g["lr"])
            if mom: moms[i].append(g[mom] if mom == "momentum" else g["betas"][0])
    parts = ["lrs = {%s}" % ", ".join("{%s}" % ", ".join(fmt(v) for v in l) for l in lrs)]
    if mom: parts.append("moms = {%s}" % ", ".join("{%s}" % ", ".join(fmt(v) for v in l) for l in moms))
    out.append("R.%s = {%s}" % (name, ", ".join(parts)))

run("step", opt(), lambda o: S.StepLR(o, step_size=3, gamma=0.5), 10)
run("multistep", opt(), lambda o: S.MultiStepLR(o, milestones=[8, 2, 5, 5], gamma=0.3), 12)
run("constant", opt(), lambda o: S.ConstantLR(o, factor=0.25, total_iters=4), 8)
run("linear", opt(), lambda o: S.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=5), 8)
run("exponential", opt(), lambda o: S.ExponentialLR(o, gamma=0.8), 10)
run("polynomial", opt(), lambda o: S.PolynomialLR(o, total_iters=6, power=2.0), 9)
run("cosine", opt(), lambda o: S.CosineAnnealingLR(o, T_max=5, eta_min=0.01), 14)
run("warm_restarts", opt(), lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.01), 25)
run("warm_restarts_1", opt(), lambda o: S.CosineAnnealingWarmRestarts(o, T_0=4), 12)
run("one_cycle", opt(momentum=0.9), lambda o: S.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=20), 20, "momentum")
run("one_cycle_linear_3phase_adam", opt(Adam), lambda o: S.OneCycleLR(o, max_lr=0.01, epochs=3, steps_per_epoch=4,
    anneal_strategy="linear", three_phase=True, pct_start=0.25, div_factor=10., final_div_factor=100.), 12, "betas")
run("one_cycle_no_momentum", opt(), lambda o: S.OneCycleLR(o, max_lr=0.2, total_steps=7, cycle_momentum=False), 7)
run("cyclic", opt(momentum=0.9), lambda o: S.CyclicLR(o, base_lr=[0.1, 0.01], max_lr=[1.0, 0.1], step_size_up=3,
    step_size_down=2), 15, "momentum")
run("cyclic_triangular2", opt(momentum=0.9), lambda o: S.CyclicLR(o, base_lr=0.1, max_lr=1.0, step_size_up=2,
    mode="triangular2", base_momentum=[0.7, 0.75], max_momentum=0.95), 14, "momentum")
run("cyclic_exp_range", opt(), lambda o: S.CyclicLR(o, base_lr=0.1, max_lr=1.0, step_size_up=3, mode="exp_range",
    gamma=0.9, cycle_momentum=False), 14)
run("cyclic_scale_fn", opt(), lambda o: S.CyclicLR(o, base_lr=0.1, max_lr=1.0, step_size_up=2, step_size_down=3,
    scale_fn=lambda x: 0.5 ** x, scale_mode="iterations", cycle_momentum=False), 12)
run("sequential", opt(), lambda o: S.SequentialLR(o, [S.ConstantLR(o, factor=0.1, total_iters=2),
    S.ExponentialLR(o, gamma=0.9)], milestones=[2]), 8)
run("sequential_3", opt(), lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.5, total_iters=3),
    S.CosineAnnealingLR(o, T_max=4, eta_min=0.001), S.StepLR(o, step_size=2, gamma=0.5)], milestones=[3, 7]), 14)
m1 = [5, 4, 4.5, 4.2, 4.1, 4.0, 3.0, 3.1, 3.2, 3.3, 3.4, 3.5, 2.0, 2.5, 2.6, 2.7, 2.8, 2.9, 3.0, 3.1]
run("plateau_min_rel", opt(), lambda o: S.ReduceLROnPlateau(o, factor=0.5, patience=2, cooldown=1,
    min_lr=[0.01, 0.02]), len(m1), metrics=m1)
m2 = [0.5, 0.55, 0.58, 0.62, 0.7, 0.71, 0.75, 0.79, 0.8, 0.95, 0.96, 0.97, 0.98, 0.99, 1.0, 1.01]
run("plateau_max_abs", opt(), lambda o: S.ReduceLROnPlateau(o, mode="max", threshold=0.05, threshold_mode="abs",
    patience=1, factor=0.3, eps=0.01), len(m2), metrics=m2)
run("plateau_default", opt(), lambda o: S.ReduceLROnPlateau(o), 30, metrics=[1.0] * 30)
print("\n".join(out))
print("M.plateau_min_rel = {%s}" % ", ".join(fmt(v) for v in m1))
print("M.plateau_max_abs = {%s}" % ", ".join(fmt(v) for v in m2))
]==]
local pt = require "partrain"
local nn, optim = pt.nn, pt.optim

local R, M = {}, {}

local function param() return nn.Parameter(pt.zeros(1)) end

-- two groups, lr 0.1 and 0.05, as the reference script's
local function sgd(extra)
  local o = {lr = 0.1}
  for k, v in pairs(extra or {}) do o[k] = v end
  return optim.SGD({{params = {param()}}, {params = {param()}, lr = 0.05}}, o)
end
local function adam() return optim.Adam({{params = {param()}}, {params = {param()}, lr = 0.05}}, {lr = 0.1}) end

-- relative tolerance: the closed forms round differently from PyTorch's chainable steps
local function close(actual, expected, what)
  assert.are.equal(#expected, #actual, what)
  for g = 1, #expected do
    assert.are.equal(#expected[g], #actual[g], what)
    for k = 1, #expected[g] do
      local a, b = actual[g][k], expected[g][k]
      if not (math.abs(a - b) <= 1e-12 * math.abs(b) + 1e-18) then
        error(("%s: group %d, value %d: got %.17g, expected %.17g"):format(what, g, k, a, b), 2)
      end
    end
  end
end

-- the lrs (and momentums: "momentum" or Adam's "betas") after construction and each step
local function trace(o, make, n, mom, metrics)
  local s = make(o)
  local lrs, moms = {{}, {}}, {{}, {}}
  local function record()
    for i, g in ipairs(o.param_groups) do
      lrs[i][#lrs[i] + 1] = g.lr
      if mom == "momentum" then moms[i][#moms[i] + 1] = g.momentum end
      if mom == "betas" then moms[i][#moms[i] + 1] = g.betas[1] end
    end
  end
  record()
  for k = 1, n do
    if metrics then s:step(metrics[k]) else s:step() end
    record()
  end
  return s, lrs, moms
end

local function matches(name, o, make, n, mom, metrics)
  local s, lrs, moms = trace(o, make, n, mom, metrics)
  close(lrs, R[name].lrs, name)
  if mom then close(moms, R[name].moms, name .. " (momentum)") end
  return s
end

-- the message of fn's error; its position must be this file's line, where fn was called
local function err(fn)
  local ok, e = pcall(fn)
  assert.is_false(ok, "expected an error")
  e = tostring(e)
  assert.matches("^spec/sched_spec%.lua:%d+: ", e)
  return (e:gsub("^[^:]*:%d+: ", ""))
end

describe("schedulers match PyTorch 1.13", function()
  it("StepLR, MultiStepLR, ConstantLR, LinearLR, ExponentialLR, PolynomialLR", function()
    matches("step", sgd(), function(o) return optim.StepLR(o, {step_size = 3, gamma = 0.5}) end, 10)
    matches("multistep", sgd(), function(o) return optim.MultiStepLR(o, {milestones = {8, 2, 5, 5}, gamma = 0.3}) end, 12)
    matches("constant", sgd(), function(o) return optim.ConstantLR(o, {factor = 0.25, total_iters = 4}) end, 8)
    matches("linear", sgd(), function(o)
      return optim.LinearLR(o, {start_factor = 0.2, end_factor = 0.9, total_iters = 5}) end, 8)
    matches("exponential", sgd(), function(o) return optim.ExponentialLR(o, {gamma = 0.8}) end, 10)
    matches("polynomial", sgd(), function(o) return optim.PolynomialLR(o, {total_iters = 6, power = 2}) end, 9)
  end)

  it("CosineAnnealingLR (past T_max too) and CosineAnnealingWarmRestarts", function()
    matches("cosine", sgd(), function(o) return optim.CosineAnnealingLR(o, {T_max = 5, eta_min = 0.01}) end, 14)
    local s = matches("warm_restarts", sgd(), function(o)
      return optim.CosineAnnealingWarmRestarts(o, {T_0 = 3, T_mult = 2, eta_min = 0.01}) end, 25)
    -- cycles of 3, 6, 12, 24: step 25 is step 4 of the fourth
    assert.are.same({4, 24}, {s.T_cur, s.T_i})
    matches("warm_restarts_1", sgd(), function(o) return optim.CosineAnnealingWarmRestarts(o, {T_0 = 4}) end, 12)
  end)

  it("OneCycleLR: lr and momentum (SGD) or beta1 (Adam), three phases, no momentum", function()
    local o = sgd({momentum = 0.9})
    local s = matches("one_cycle", o, function(opt)
      return optim.OneCycleLR(opt, {max_lr = {1.0, 0.5}, total_steps = 20}) end, 20, "momentum")
    assert.are.same({0.04, 0.02}, s.base_lrs) -- max_lr / div_factor, PyTorch's initial_lr
    assert.are.same({0.04, 0.02}, {o.param_groups[1].initial_lr, o.param_groups[2].initial_lr})
    local a = adam()
    matches("one_cycle_linear_3phase_adam", a, function(opt)
      return optim.OneCycleLR(opt, {max_lr = 0.01, epochs = 3, steps_per_epoch = 4, anneal_strategy = "linear",
        three_phase = true, pct_start = 0.25, div_factor = 10, final_div_factor = 100}) end, 12, "betas")
    assert.are.equal(0.999, a.param_groups[2].betas[2])
    assert.are_not.equal(a.param_groups[1].betas, a.param_groups[2].betas) -- no shared table changed
    o = sgd()
    matches("one_cycle_no_momentum", o, function(opt)
      return optim.OneCycleLR(opt, {max_lr = 0.2, total_steps = 7, cycle_momentum = false}) end, 7)
    assert.are.equal(0, o.param_groups[1].momentum)
  end)

  it("OneCycleLR refuses to step past total_steps, as PyTorch", function()
    local o = sgd()
    local s = optim.OneCycleLR(o, {max_lr = 1, total_steps = 4})
    for _ = 1, 4 do s:step() end
    local lr = o.param_groups[1].lr
    assert.are.equal("OneCycleLR:step: step 5 is past the end of the schedule (total_steps 4)", err(function() s:step() end))
    assert.are.same({4, lr}, {s.last_epoch, o.param_groups[1].lr})
  end)

  it("CyclicLR: triangular (with momentum), triangular2, exp_range, a scale_fn", function()
    local o = sgd({momentum = 0.9})
    matches("cyclic", o, function(opt)
      return optim.CyclicLR(opt, {base_lr = {0.1, 0.01}, max_lr = {1.0, 0.1}, step_size_up = 3, step_size_down = 2})
    end, 15, "momentum")
    matches("cyclic_triangular2", sgd({momentum = 0.9}), function(opt)
      return optim.CyclicLR(opt, {base_lr = 0.1, max_lr = 1.0, step_size_up = 2, mode = "triangular2",
        base_momentum = {0.7, 0.75}, max_momentum = 0.95}) end, 14, "momentum")
    matches("cyclic_exp_range", sgd(), function(opt)
      return optim.CyclicLR(opt, {base_lr = 0.1, max_lr = 1.0, step_size_up = 3, mode = "exp_range", gamma = 0.9,
        cycle_momentum = false}) end, 14)
    matches("cyclic_scale_fn", sgd(), function(opt)
      return optim.CyclicLR(opt, {base_lr = 0.1, max_lr = 1.0, step_size_up = 2, step_size_down = 3,
        scale_fn = function(x) return 0.5 ^ x end, scale_mode = "iterations", cycle_momentum = false}) end, 12)
  end)

  it("SequentialLR hands over at the milestones, each scheduler from its own epoch 0", function()
    matches("sequential", sgd(), function(o)
      return optim.SequentialLR(o, {schedulers = {optim.ConstantLR(o, {factor = 0.1, total_iters = 2}),
        optim.ExponentialLR(o, {gamma = 0.9})}, milestones = {2}}) end, 8)
    local s = matches("sequential_3", sgd(), function(o)
      return optim.SequentialLR(o, {schedulers = {optim.LinearLR(o, {start_factor = 0.5, total_iters = 3}),
        optim.CosineAnnealingLR(o, {T_max = 4, eta_min = 0.001}), optim.StepLR(o, {step_size = 2, gamma = 0.5})},
        milestones = {3, 7}}) end, 14)
    assert.are.same({14, 7}, {s.last_epoch, s.schedulers[3].last_epoch})
  end)

  it("ReduceLROnPlateau: min/rel with cooldown and min_lr per group, max/abs with eps, defaults", function()
    matches("plateau_min_rel", sgd(), function(o)
      return optim.ReduceLROnPlateau(o, {factor = 0.5, patience = 2, cooldown = 1, min_lr = {0.01, 0.02}}) end,
      #M.plateau_min_rel, nil, M.plateau_min_rel)
    matches("plateau_max_abs", sgd(), function(o)
      return optim.ReduceLROnPlateau(o, {mode = "max", threshold = 0.05, threshold_mode = "abs", patience = 1,
        factor = 0.3, eps = 0.01}) end, #M.plateau_max_abs, nil, M.plateau_max_abs)
    local ones = {}
    for k = 1, 30 do ones[k] = 1.0 end
    local s = matches("plateau_default", sgd(), function(o) return optim.ReduceLROnPlateau(o) end, 30, nil, ones)
    -- a one-element tensor is a metric too
    s:step(pt.tensor({0.5}))
    assert.are.same({0.5, 0}, {s.best, s.num_bad_epochs})
  end)
end)

describe("scheduler settings", function()
  -- each scheduler with a bad value assigned to each setting: step() reports it before changing anything
  local cases = {
    {function(o) return optim.StepLR(o, {step_size = 2}) end, {
      {"step_size", 0, "StepLR:step: step_size must be a positive integer, got 0"},
      {"step_size", 1.5, "StepLR:step: step_size must be a positive integer, got 1.5"},
      {"gamma", "x", "StepLR:step: gamma must be a number, got 'x'"},
      {"gamma", 0 / 0, "StepLR:step: gamma must be a number, got nan"}}},
    {function(o) return optim.MultiStepLR(o, {milestones = {2}}) end, {
      {"milestones", 3, "MultiStepLR:step: milestones must be a list of integers, got 3"},
      {"milestones", {1, 2.5}, "MultiStepLR:step: milestones[2] must be an integer >= 0, got 2.5"},
      {"gamma", nil, "MultiStepLR:step: gamma must be a number, got nil"}}},
    {function(o) return optim.ConstantLR(o) end, {
      {"factor", 2, "ConstantLR:step: factor must be a number between 0 and 1, got 2"},
      {"total_iters", 0, "ConstantLR:step: total_iters must be a positive integer, got 0"}}},
    {function(o) return optim.LinearLR(o) end, {
      {"start_factor", -0.5, "LinearLR:step: start_factor must be a number between 0 and 1, got -0.5"},
      {"end_factor", "1", "LinearLR:step: end_factor must be a number between 0 and 1, got '1'"},
      {"total_iters", true, "LinearLR:step: total_iters must be a positive integer, got true"}}},
    {function(o) return optim.ExponentialLR(o, {gamma = 0.9}) end, {
      {"gamma", {}, "ExponentialLR:step: gamma must be a number, got table"}}},
    {function(o) return optim.PolynomialLR(o) end, {
      {"total_iters", 2.5, "PolynomialLR:step: total_iters must be a positive integer, got 2.5"},
      {"power", "2", "PolynomialLR:step: power must be a number, got '2'"}}},
    {function(o) return optim.CosineAnnealingLR(o, {T_max = 4}) end, {
      {"T_max", 0, "CosineAnnealingLR:step: T_max must be a positive integer, got 0"},
      {"eta_min", nil, "CosineAnnealingLR:step: eta_min must be a number, got nil"}}},
    {function(o) return optim.CosineAnnealingWarmRestarts(o, {T_0 = 4}) end, {
      {"T_0", -1, "CosineAnnealingWarmRestarts:step: T_0 must be a positive integer, got -1"},
      {"T_mult", 0, "CosineAnnealingWarmRestarts:step: T_mult must be a positive integer, got 0"},
      {"eta_min", "0", "CosineAnnealingWarmRestarts:step: eta_min must be a number, got '0'"}}},
    {function(o) return optim.LambdaLR(o, function(e) return 1 / (e + 1) end) end, {
      {"lr_lambda", 3, "LambdaLR:step: lr_lambda must be a function, got 3"},
      {"lr_lambda", function() return "x" end, "LambdaLR:step: lr_lambda(2) returned 'x', not a number"},
      {"lr_lambda", function() return 0 / 0 end,
        "LambdaLR:step: lr nan for parameter group 1 at epoch 2 is not a valid learning rate"}}},
    {function(o) return optim.LinearWarmup(o, {warmup_steps = 4}) end, {
      {"warmup_steps", 0, "LinearWarmup:step: warmup_steps must be a positive integer, got 0"},
      {"start_factor", "a", "LinearWarmup:step: start_factor must be a number, got 'a'"}}},
    {function(o) return optim.CyclicLR(o, {base_lr = 0.1, max_lr = 1, step_size_up = 2}) end, {
      {"base_lr", nil, "CyclicLR:step: base_lr must be a number or a list of one per parameter group, got nil"},
      {"max_lr", {1}, "CyclicLR:step: expected 2 values for max_lr (one per parameter group), got 1"},
      {"max_lr", {1, "x"}, "CyclicLR:step: max_lr[2] must be a number, got 'x'"},
      {"step_size_up", 0, "CyclicLR:step: step_size_up must be a positive integer, got 0"},
      {"step_size_down", 1.5, "CyclicLR:step: step_size_down must be a positive integer, got 1.5"},
      {"mode", "tri", "CyclicLR:step: mode must be 'triangular', 'triangular2' or 'exp_range', got 'tri'"},
      {"scale_fn", 1, "CyclicLR:step: scale_fn must be a function, got 1"},
      {"scale_fn", function() return nil end, "CyclicLR:step: scale_fn(1) returned nil, not a number"},
      {"gamma", "x", "CyclicLR:step: gamma must be a number, got 'x'"},
      {"cycle_momentum", 1, "CyclicLR:step: cycle_momentum must be a boolean, got 1"},
      {"base_momentum", "x", "CyclicLR:step: base_momentum must be a number or a list of one per parameter group, "
        .. "got 'x'"}}},
    {function(o) return optim.OneCycleLR(o, {max_lr = 1, total_steps = 10}) end, {
      {"max_lr", -0 / 0, "OneCycleLR:step: max_lr must be a number or a list of one per parameter group, got nan"},
      {"total_steps", 0, "OneCycleLR:step: total_steps must be a positive integer, got 0"},
      {"total_steps", 0.5, "OneCycleLR:step: total_steps must be a positive integer, got 0.5"},
      {"pct_start", 2, "OneCycleLR:step: pct_start must be a number between 0 and 1, got 2"},
      {"anneal_strategy", "exp", "OneCycleLR:step: anneal_strategy must be 'cos' or 'linear', got 'exp'"},
      {"div_factor", 0, "OneCycleLR:step: div_factor must be a positive number, got 0"},
      {"final_div_factor", nil, "OneCycleLR:step: final_div_factor must be a positive number, got nil"},
      {"three_phase", "no", "OneCycleLR:step: three_phase must be a boolean, got 'no'"},
      {"max_momentum", {0.9}, "OneCycleLR:step: expected 2 values for max_momentum (one per parameter group), got 1"}}},
    {function(o) return optim.ReduceLROnPlateau(o) end, {
      {"mode", "avg", "ReduceLROnPlateau:step: mode must be 'min' or 'max', got 'avg'"},
      {"factor", 1, "ReduceLROnPlateau:step: factor must be a number in [0, 1), got 1"},
      {"patience", -1, "ReduceLROnPlateau:step: patience must be a non-negative integer, got -1"},
      {"threshold", "x", "ReduceLROnPlateau:step: threshold must be a number, got 'x'"},
      {"threshold_mode", "relative", "ReduceLROnPlateau:step: threshold_mode must be 'rel' or 'abs', got 'relative'"},
      {"cooldown", 0.5, "ReduceLROnPlateau:step: cooldown must be a non-negative integer, got 0.5"},
      {"min_lr", {0, 0, 0}, "ReduceLROnPlateau:step: expected 2 values for min_lr (one per parameter group), got 3"},
      {"eps", nil, "ReduceLROnPlateau:step: eps must be a number, got nil"},
      {"num_bad_epochs", -2, "ReduceLROnPlateau:step: num_bad_epochs must be a non-negative integer, got -2"}}},
  }

  it("are checked at every step, and a bad one changes nothing", function()
    for _, case in ipairs(cases) do
      for _, c in ipairs(case[2]) do
        local o = sgd({momentum = 0.9})
        local s = case[1](o)
        if s.name == "ReduceLROnPlateau" then s:step(1) else s:step() end -- one good step
        local good = s[c[1]]
        local lrs, epoch = s:get_last_lr(), s.last_epoch
        s[c[1]] = c[2]
        local step = s.name == "ReduceLROnPlateau" and function() s:step(1) end or function() s:step() end
        assert.are.equal(c[3], err(step))
        assert.are.same(lrs, s:get_last_lr())
        assert.are.same(lrs, {o.param_groups[1].lr, o.param_groups[2].lr})
        assert.are.equal(epoch, s.last_epoch)
        s[c[1]] = good -- and it goes on
        step()
        assert.are.equal(epoch + 1, s.last_epoch)
      end
    end
  end)

  it("the constructors check them with the same messages", function()
    for _, case in ipairs(cases) do
      local c = case[2][1]
      local o = sgd({momentum = 0.9})
      local s = case[1](o)
      local name = s.name
      if name ~= "LambdaLR" then
        local opts = s:state_dict()
        opts.last_epoch, opts.base_lrs, opts.best, opts.num_bad_epochs, opts.cooldown_counter = nil, nil, nil, nil, nil
        opts[c[1]] = c[2]
        if name == "CyclicLR" or name == "OneCycleLR" then opts.scale_fn = nil end
        assert.are.equal((c[3]:gsub(":step:", ":")), err(function() return optim[name](sgd({momentum = 0.9}), opts) end))
      end
    end
    assert.are.equal("LambdaLR: lr_lambda must be a function, got nil", err(function() return optim.LambdaLR(sgd()) end))
    assert.are.equal("LambdaLR: lr_lambda(0) returned 'x', not a number",
      err(function() return optim.LambdaLR(sgd(), function() return "x" end) end))
  end)

  it("are read at every step (the closed form of the new values)", function()
    local o = sgd()
    local s = optim.ExponentialLR(o, {gamma = 0.5})
    s:step(); s:step()
    s.gamma = 0.1
    s:step()
    assert.are.same({0.1 * 0.1 ^ 3, 0.05 * 0.1 ^ 3}, s:get_last_lr())
    local c = optim.CyclicLR(sgd({momentum = 0.9}), {base_lr = 0.1, max_lr = 1, step_size_up = 2})
    c.cycle_momentum = false
    c.optimizer.param_groups[1].momentum = 0.5
    c:step()
    assert.are.same({0.55, 0.5}, {c.optimizer.param_groups[1].lr, c.optimizer.param_groups[1].momentum})
    local p = optim.ReduceLROnPlateau(sgd(), {patience = 0})
    p:step(1)
    p.factor = 0.5
    p:step(2)
    assert.are.same({0.05, 0.025}, p:get_last_lr())
  end)

  it("step() takes no epoch, last_epoch must be an integer, ReduceLROnPlateau wants one metric", function()
    local s = optim.StepLR(sgd(), {step_size = 2})
    assert.are.equal("StepLR:step: expected no argument, got 5 (sched.last_epoch counts the steps; set it to jump)",
      err(function() s:step(5) end))
    s.last_epoch = -1
    assert.are.equal("StepLR:step: last_epoch must be a non-negative integer, got -1", err(function() s:step() end))
    s.last_epoch = 5
    s:step()
    assert.are.same({0.1 * 0.1 ^ 3, 0.05 * 0.1 ^ 3}, s:get_last_lr())
    local p = optim.ReduceLROnPlateau(sgd())
    assert.are.equal("ReduceLROnPlateau:step: expected the metric as a number or a one-element tensor, got nil",
      err(function() p:step() end))
    assert.are.equal("ReduceLROnPlateau:step: expected the metric as a number or a one-element tensor, got a tensor "
      .. "of shape {2}", err(function() p:step(pt.zeros(2)) end))
    assert.are.equal("ReduceLROnPlateau:step: expected one argument (the metric), got 2", err(function() p:step(1, 2) end))
    assert.are.equal("ReduceLROnPlateau:get_lr: the lr follows the metrics seen, not a formula; read sched:get_last_lr()",
      err(function() p:get_lr(1, 0.1, 0) end))
    assert.are.equal(0, p.last_epoch)
  end)
end)

describe("scheduler constructors", function()
  it("refuse bad arguments and options with PyTorch's rules", function()
    local o = sgd()
    local cases = {
      {"StepLR: expected an optimizer as the first argument, got nil", optim.StepLR, nil, {step_size = 1}},
      {"StepLR: expected an optimizer as the first argument, got 1", optim.StepLR, 1, {step_size = 1}},
      {"StepLR: options must be a table, got 10", optim.StepLR, o, 10},
      {"StepLR: unexpected argument #3 (number)", optim.StepLR, o, {step_size = 1}, 3, n = 5},
      {"MultiStepLR: unknown option 'milestone' (options: milestones, gamma)", optim.MultiStepLR, o, {milestone = {1}}},
      {"ExponentialLR: gamma must be a number, got nil", optim.ExponentialLR, o},
      {"CosineAnnealingWarmRestarts: T_0 must be a positive integer, got nil", optim.CosineAnnealingWarmRestarts, o},
      {"CyclicLR: cycle_momentum needs an optimizer with a momentum option (Adam has none); pass cycle_momentum = "
        .. "false", optim.CyclicLR, adam(), {base_lr = 0.1, max_lr = 1}},
      {"CyclicLR: scale_mode must be 'cycle' or 'iterations', got 'epoch'", optim.CyclicLR, o,
        {base_lr = 0.1, max_lr = 1, scale_fn = math.abs, scale_mode = "epoch"}},
      {"OneCycleLR: give total_steps, or epochs and steps_per_epoch", optim.OneCycleLR, o, {max_lr = 1}},
      {"OneCycleLR: steps_per_epoch must be a positive integer, got nil", optim.OneCycleLR, o, {max_lr = 1, epochs = 3}},
      {"OneCycleLR: cycle_momentum needs an optimizer with a momentum or betas option (Adagrad has neither); pass "
        .. "cycle_momentum = false", optim.OneCycleLR, optim.Adagrad({param()}), {max_lr = 1, total_steps = 3}},
      {"ReduceLROnPlateau: unknown option 'patiense' (options: mode, factor, patience, threshold, threshold_mode, "
        .. "cooldown, min_lr, eps)", optim.ReduceLROnPlateau, o, {patiense = 3}},
      {"SequentialLR: schedulers must be a list of LR schedulers, got nil", optim.SequentialLR, o, {milestones = {}}},
      {"SequentialLR: scheduler 2 must be an LR scheduler (optim.StepLR, ...), got table", optim.SequentialLR, o,
        {schedulers = {optim.StepLR(o, {step_size = 1}), {}}, milestones = {2}}},
      {"SequentialLR: scheduler 1 (StepLR) belongs to another optimizer", optim.SequentialLR, o,
        {schedulers = {optim.StepLR(sgd(), {step_size = 1})}, milestones = {}}},
      {"SequentialLR: scheduler 2 is a ReduceLROnPlateau, which steps on a metric and cannot be chained",
        optim.SequentialLR, o, {schedulers = {optim.StepLR(o, {step_size = 1}), optim.ReduceLROnPlateau(o)},
        milestones = {2}}},
      {"SequentialLR: expected 1 milestone (one fewer than the 2 schedulers), got 2", optim.SequentialLR, o,
        {schedulers = {optim.StepLR(o, {step_size = 1}), optim.StepLR(o, {step_size = 1})}, milestones = {2, 3}}},
      {"SequentialLR: milestones must increase, got 3 after 5", optim.SequentialLR, o,
        {schedulers = {optim.StepLR(o, {step_size = 1}), optim.StepLR(o, {step_size = 1}),
          optim.StepLR(o, {step_size = 1})}, milestones = {5, 3}}},
      {"SequentialLR: milestones[1] must be an integer >= 1, got 0", optim.SequentialLR, o,
        {schedulers = {optim.StepLR(o, {step_size = 1}), optim.StepLR(o, {step_size = 1})}, milestones = {0}}},
    }
    for _, c in ipairs(cases) do
      assert.are.equal(c[1], err(function() return c[2](table.unpack(c, 3, c.n or 4)) end))
    end
  end)

  it("SequentialLR checks the scheduler in charge at each step", function()
    local o = sgd()
    local a, b = optim.ConstantLR(o, {factor = 0.5, total_iters = 1}), optim.StepLR(o, {step_size = 1})
    local s = optim.SequentialLR(o, {schedulers = {a, b}, milestones = {2}})
    b.step_size = 0 -- not in charge yet
    s:step()
    assert.are.equal("SequentialLR:step: scheduler 2 (StepLR): step_size must be a positive integer, got 0",
      err(function() s:step() end))
    assert.are.equal(1, s.last_epoch)
    s.milestones = {}
    assert.are.equal("SequentialLR:step: expected 1 milestone (one fewer than the 2 schedulers), got 0",
      err(function() s:step() end))
  end)

  it("print their settings", function()
    local o = sgd()
    assert.are.equal("MultiStepLR(milestones={2, 5}, gamma=0.1, last_epoch=0)",
      tostring(optim.MultiStepLR(o, {milestones = {2, 5}})))
    assert.are.equal("ReduceLROnPlateau(mode='min', factor=0.1, patience=10, threshold=0.0001, threshold_mode='rel', "
      .. "cooldown=0, min_lr=0, eps=1e-08, last_epoch=0)", tostring(optim.ReduceLROnPlateau(o)))
    assert.are.equal("SequentialLR(schedulers={ConstantLR(factor=0.1, total_iters=2, last_epoch=0), "
      .. "ExponentialLR(gamma=0.9, last_epoch=0)}, milestones={2}, last_epoch=0)",
      tostring(optim.SequentialLR(o, {schedulers = {optim.ConstantLR(o, {factor = 0.1, total_iters = 2}),
        optim.ExponentialLR(o, {gamma = 0.9})}, milestones = {2}})))
    assert.are.equal("OneCycleLR(max_lr={1, 0.5}, total_steps=20, pct_start=0.3, anneal_strategy='cos', "
      .. "cycle_momentum=true, base_momentum=0.85, max_momentum=0.95, div_factor=25, final_div_factor=10000, "
      .. "three_phase=false, last_epoch=0)", tostring(optim.OneCycleLR(sgd(), {max_lr = {1, 0.5}, total_steps = 20})))
    assert.are.equal("CyclicLR(base_lr=0.1, max_lr=1, step_size_up=2000, mode='triangular', gamma=1, "
      .. "scale_mode='cycle', cycle_momentum=false, base_momentum=0.8, max_momentum=0.9, last_epoch=0)",
      tostring(optim.CyclicLR(sgd(), {base_lr = 0.1, max_lr = 1, cycle_momentum = false})))
  end)

  it("are documented", function()
    for _, k in ipairs({"MultiStepLR", "ConstantLR", "ExponentialLR", "PolynomialLR", "CosineAnnealingWarmRestarts",
      "OneCycleLR", "CyclicLR", "SequentialLR", "ReduceLROnPlateau"}) do
      assert.is_string(pt._docs[optim[k]], k)
      assert.matches("^optim%." .. k .. "%(opt", pt._docs[optim[k]])
    end
    assert.is_string(pt._docs[optim.ReduceLROnPlateau.step])
    assert.is_string(pt._docs[optim.SequentialLR.state_dict])
  end)
end)

describe("scheduler state_dict", function()
  -- run n steps, save, load into a fresh scheduler made with other settings: both go on alike
  local function round_trip(make, make_other, n, metric)
    local o1, o2 = sgd({momentum = 0.9}), sgd({momentum = 0.9})
    local s1 = make(o1)
    local function step(s, k) if metric then s:step(metric(k)) else s:step() end end
    for k = 1, n do step(s1, k) end
    local s2 = make_other(o2)
    -- ReduceLROnPlateau goes on from the optimizer's lrs: a resume loads both
    if s1.name == "ReduceLROnPlateau" then o2:load_state_dict(o1:state_dict()) end
    s2:load_state_dict(s1:state_dict())
    assert.are.same(s1:get_last_lr(), s2:get_last_lr(), s1.name)
    assert.are.same(s1:state_dict(), s2:state_dict(), s1.name)
    for k = n + 1, n + 6 do
      step(s1, k); step(s2, k)
      assert.are.same(s1:get_last_lr(), s2:get_last_lr(), s1.name)
      assert.are.same({o1.param_groups[1].lr, o1.param_groups[1].momentum},
        {o2.param_groups[1].lr, o2.param_groups[1].momentum}, s1.name)
    end
    return s1, s2
  end

  it("round-trips every scheduler", function()
    round_trip(function(o) return optim.MultiStepLR(o, {milestones = {3, 6}, gamma = 0.5}) end,
      function(o) return optim.MultiStepLR(o, {milestones = {1}}) end, 4)
    round_trip(function(o) return optim.ConstantLR(o, {factor = 0.5, total_iters = 6}) end,
      function(o) return optim.ConstantLR(o) end, 3)
    round_trip(function(o) return optim.ExponentialLR(o, {gamma = 0.7}) end,
      function(o) return optim.ExponentialLR(o, {gamma = 0.1}) end, 3)
    round_trip(function(o) return optim.PolynomialLR(o, {total_iters = 8, power = 3}) end,
      function(o) return optim.PolynomialLR(o) end, 2)
    local s1, s2 = round_trip(function(o) return optim.CosineAnnealingWarmRestarts(o, {T_0 = 2, T_mult = 3}) end,
      function(o) return optim.CosineAnnealingWarmRestarts(o, {T_0 = 5}) end, 5)
    assert.are.same({s1.T_cur, s1.T_i}, {s2.T_cur, s2.T_i})
    round_trip(function(o) return optim.OneCycleLR(o, {max_lr = {1, 2}, total_steps = 30, three_phase = true}) end,
      function(o) return optim.OneCycleLR(o, {max_lr = 3, epochs = 2, steps_per_epoch = 40}) end, 11)
    round_trip(function(o) return optim.CyclicLR(o, {base_lr = 0.1, max_lr = {1, 2}, step_size_up = 3,
      mode = "exp_range", gamma = 0.8}) end,
      function(o) return optim.CyclicLR(o, {base_lr = 0.2, max_lr = 0.5}) end, 4)
    s1 = round_trip(function(o) return optim.ReduceLROnPlateau(o, {patience = 1, cooldown = 2, mode = "max"}) end,
      function(o) return optim.ReduceLROnPlateau(o) end, 5, function(k) return (k % 3) * 0.1 end)
    assert.is_nil(s1:state_dict().base_lrs)
    local function seq(o, gamma)
      return optim.SequentialLR(o, {schedulers = {optim.LinearLR(o, {total_iters = 2}),
        optim.ExponentialLR(o, {gamma = gamma})}, milestones = {3}})
    end
    s1, s2 = round_trip(function(o) return seq(o, 0.5) end, function(o) return seq(o, 0.9) end, 4)
    assert.are.equal(0.5, s2.schedulers[2].gamma)
  end)

  it("checks a state dict before loading anything", function()
    local o = sgd()
    local s = optim.SequentialLR(o, {schedulers = {optim.ConstantLR(o), optim.ExponentialLR(o, {gamma = 0.5})},
      milestones = {2}})
    s:step()
    local sd = s:state_dict()
    sd.schedulers[2].gamma = "x"
    assert.are.equal("SequentialLR:load_state_dict: scheduler 2 (ExponentialLR): gamma must be a number, got 'x'",
      err(function() s:load_state_dict(sd) end))
    sd.schedulers[2] = nil
    assert.are.equal("SequentialLR:load_state_dict: the state dict has 1 scheduler states, SequentialLR 2 schedulers",
      err(function() s:load_state_dict(sd) end))
    assert.are.same({1, 1}, {s.last_epoch, s.schedulers[1].last_epoch})
    local oc = optim.OneCycleLR(sgd(), {max_lr = 1, total_steps = 20})
    local osd = oc:state_dict()
    osd.last_epoch = 30
    assert.are.equal("OneCycleLR:load_state_dict: last_epoch 30 is past the end of the schedule (total_steps 20)",
      err(function() oc:load_state_dict(osd) end))
    local c = optim.CyclicLR(sgd(), {base_lr = 0.1, max_lr = 1})
    assert.are.equal("CyclicLR:load_state_dict: 'gamam' is not a setting of CyclicLR (a state dict of another "
      .. "scheduler?)", err(function() c:load_state_dict({last_epoch = 1, gamam = 0.5}) end))
    local lam = optim.LambdaLR(sgd(), function() return 1 end)
    assert.are.equal("LambdaLR:load_state_dict: 'lr_lambda' is not a setting of LambdaLR (a state dict of another "
      .. "scheduler?)", err(function() lam:load_state_dict({last_epoch = 1, lr_lambda = 1}) end))
    local p = optim.ReduceLROnPlateau(sgd())
    local psd = p:state_dict()
    psd.num_bad_epochs = -1
    assert.are.equal("ReduceLROnPlateau:load_state_dict: num_bad_epochs must be a non-negative integer, got -1",
      err(function() p:load_state_dict(psd) end))
    psd.num_bad_epochs, psd.mode = 0, "mean"
    assert.are.equal("ReduceLROnPlateau:load_state_dict: mode must be 'min' or 'max', got 'mean'",
      err(function() p:load_state_dict(psd) end))
    assert.are.equal("min", p.mode)
  end)
end)

-- ------------------------------------------------------------------ reference values
R.step = {lrs = {{0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125, 0.0125}, {0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125, 0.0125, 0.0125, 0.00625, 0.00625}}}
R.multistep = {lrs = {{0.1, 0.1, 0.03, 0.03, 0.03, 0.0026999999999999997, 0.0026999999999999997, 0.0026999999999999997, 0.0008099999999999998, 0.0008099999999999998, 0.0008099999999999998, 0.0008099999999999998, 0.0008099999999999998}, {0.05, 0.05, 0.015, 0.015, 0.015, 0.0013499999999999999, 0.0013499999999999999, 0.0013499999999999999, 0.0004049999999999999, 0.0004049999999999999, 0.0004049999999999999, 0.0004049999999999999, 0.0004049999999999999}}}
R.constant = {lrs = {{0.025, 0.025, 0.025, 0.025, 0.1, 0.1, 0.1, 0.1, 0.1}, {0.0125, 0.0125, 0.0125, 0.0125, 0.05, 0.05, 0.05, 0.05, 0.05}}}
R.linear = {lrs = {{0.020000000000000004, 0.034, 0.048, 0.062000000000000006, 0.07600000000000001, 0.09000000000000001, 0.09000000000000001, 0.09000000000000001, 0.09000000000000001}, {0.010000000000000002, 0.017, 0.024, 0.031000000000000003, 0.038000000000000006, 0.045000000000000005, 0.045000000000000005, 0.045000000000000005, 0.045000000000000005}}}
R.exponential = {lrs = {{0.1, 0.08000000000000002, 0.06400000000000002, 0.051200000000000016, 0.04096000000000002, 0.03276800000000001, 0.026214400000000013, 0.02097152000000001, 0.016777216000000008, 0.013421772800000007, 0.010737418240000006}, {0.05, 0.04000000000000001, 0.03200000000000001, 0.025600000000000008, 0.02048000000000001, 0.016384000000000006, 0.013107200000000006, 0.010485760000000005, 0.008388608000000004, 0.006710886400000004, 0.005368709120000003}}}
R.polynomial = {lrs = {{0.1, 0.06944444444444446, 0.04444444444444447, 0.02500000000000001, 0.011111111111111117, 0.0027777777777777775, 0.0, 0.0, 0.0, 0.0}, {0.05, 0.03472222222222223, 0.022222222222222233, 0.012500000000000004, 0.005555555555555558, 0.0013888888888888887, 0.0, 0.0, 0.0, 0.0}}}
R.cosine = {lrs = {{0.1, 0.09140576474687263, 0.06890576474687263, 0.04109423525312736, 0.018594235253127367, 0.01, 0.018594235253127367, 0.04109423525312739, 0.06890576474687267, 0.09140576474687269, 0.10000000000000006, 0.09140576474687272, 0.06890576474687268, 0.0410942352531274, 0.01859423525312738}, {0.05, 0.04618033988749895, 0.03618033988749895, 0.02381966011250105, 0.013819660112501053, 0.01, 0.013819660112501051, 0.023819660112501057, 0.03618033988749896, 0.04618033988749897, 0.050000000000000024, 0.046180339887498985, 0.03618033988749897, 0.023819660112501063, 0.013819660112501058}}}
R.warm_restarts = {lrs = {{0.1, 0.0775, 0.032500000000000015, 0.1, 0.09397114317029975, 0.0775, 0.05500000000000001, 0.032500000000000015, 0.01602885682970026, 0.1, 0.09846666218300808, 0.09397114317029975, 0.08681980515339464, 0.0775, 0.06664685702961344, 0.05500000000000001, 0.04335314297038658, 0.032500000000000015, 0.023180194846605363, 0.01602885682970026, 0.011533337816991932, 0.1, 0.09961501876182148, 0.09846666218300808, 0.0965745789630079, 0.09397114317029975}, {0.05, 0.04, 0.020000000000000004, 0.05, 0.04732050807568878, 0.04, 0.03, 0.020000000000000004, 0.012679491924311226, 0.05, 0.04931851652578137, 0.04732050807568878, 0.044142135623730955, 0.04, 0.035176380902050414, 0.03, 0.024823619097949588, 0.020000000000000004, 0.01585786437626905, 0.012679491924311226, 0.010681483474218637, 0.05, 0.049828897227476215, 0.04931851652578137, 0.048477590650225735, 0.04732050807568878}}}
R.warm_restarts_1 = {lrs = {{0.1, 0.08535533905932738, 0.05, 0.014644660940672627, 0.1, 0.08535533905932738, 0.05, 0.014644660940672627, 0.1, 0.08535533905932738, 0.05, 0.014644660940672627, 0.1}, {0.05, 0.04267766952966369, 0.025, 0.0073223304703363135, 0.05, 0.04267766952966369, 0.025, 0.0073223304703363135, 0.05, 0.04267766952966369, 0.025, 0.0073223304703363135, 0.05}}}
R.one_cycle = {lrs = {{0.040000000000000036, 0.1316718427000253, 0.3716718427000253, 0.6683281572999747, 0.9083281572999747, 1.0, 0.9874640062350873, 0.9504846320134737, 0.89091617757105, 0.8117456539497631, 0.7169430017913008, 0.6112620219362893, 0.500002, 0.38874197806371075, 0.28306099820869923, 0.18825834605023697, 0.10908782242895004, 0.049519367986526286, 0.012539993764912554, 4e-06, 0.012539993764912554}, {0.020000000000000018, 0.06583592135001265, 0.18583592135001265, 0.3341640786499874, 0.45416407864998737, 0.5, 0.49373200311754367, 0.47524231600673683, 0.445458088785525, 0.40587282697488153, 0.3584715008956504, 0.30563101096814466, 0.250001, 0.19437098903185537, 0.14153049910434962, 0.09412917302511849, 0.05454391121447502, 0.024759683993263143, 0.006269996882456277, 2e-06, 0.006269996882456277}}, moms = {{0.95, 0.9404508497187474, 0.9154508497187474, 0.8845491502812526, 0.8595491502812526, 0.85, 0.8512536043909088, 0.854951556604879, 0.8609084258765984, 0.8688255099070633, 0.878305813044122, 0.8888739533021842, 0.8999999999999999, 0.9111260466978157, 0.9216941869558779, 0.9311744900929366, 0.9390915741234015, 0.945048443395121, 0.9487463956090911, 0.95, 0.9487463956090911}, {0.95, 0.9404508497187474, 0.9154508497187474, 0.8845491502812526, 0.8595491502812526, 0.85, 0.8512536043909088, 0.854951556604879, 0.8609084258765984, 0.8688255099070633, 0.878305813044122, 0.8888739533021842, 0.8999999999999999, 0.9111260466978157, 0.9216941869558779, 0.9311744900929366, 0.9390915741234015, 0.945048443395121, 0.9487463956090911, 0.95, 0.9487463956090911}}}
R.one_cycle_linear_3phase_adam = {lrs = {{0.001, 0.0055000000000000005, 0.010000000000000002, 0.0055, 0.0009999999999999992, 0.0008585714285714286, 0.0007171428571428572, 0.0005757142857142857, 0.0004342857142857143, 0.0002928571428571429, 0.00015142857142857145, 1.0000000000000026e-05, -0.0001314285714285714}, {0.001, 0.0055000000000000005, 0.010000000000000002, 0.0055, 0.0009999999999999992, 0.0008585714285714286, 0.0007171428571428572, 0.0005757142857142857, 0.0004342857142857143, 0.0002928571428571429, 0.00015142857142857145, 1.0000000000000026e-05, -0.0001314285714285714}}, moms = {{0.95, 0.8999999999999999, 0.85, 0.8999999999999999, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95}, {0.95, 0.8999999999999999, 0.85, 0.8999999999999999, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95}}}
R.one_cycle_no_momentum = {lrs = {{0.008000000000000007, 0.19611132546699175, 0.18380887525394213, 0.13453676729610903, 0.07154775514793141, 0.01985935837865312, 8e-07, 0.019859358378653075}, {0.008000000000000007, 0.19611132546699175, 0.18380887525394213, 0.13453676729610903, 0.07154775514793141, 0.01985935837865312, 8e-07, 0.019859358378653075}}}
R.cyclic = {lrs = {{0.1, 0.3999999999999999, 0.6999999999999998, 0.9999999999999998, 0.5499999999999999, 0.1, 0.40000000000000024, 0.6999999999999998, 0.9999999999999998, 0.5500000000000004, 0.1, 0.40000000000000024, 0.6999999999999998, 0.9999999999999998, 0.5500000000000004, 0.1}, {0.01, 0.039999999999999994, 0.06999999999999999, 0.09999999999999999, 0.055, 0.01, 0.04000000000000003, 0.06999999999999999, 0.09999999999999999, 0.05500000000000005, 0.01, 0.04000000000000003, 0.06999999999999999, 0.09999999999999999, 0.05500000000000005, 0.01}}, moms = {{0.9, 0.8666666666666667, 0.8333333333333334, 0.8, 0.8500000000000001, 0.9, 0.8666666666666667, 0.8333333333333334, 0.8, 0.85, 0.9, 0.8666666666666667, 0.8333333333333334, 0.8, 0.85, 0.9}, {0.9, 0.8666666666666667, 0.8333333333333334, 0.8, 0.8500000000000001, 0.9, 0.8666666666666667, 0.8333333333333334, 0.8, 0.85, 0.9, 0.8666666666666667, 0.8333333333333334, 0.8, 0.85, 0.9}}}
R.cyclic_triangular2 = {lrs = {{0.1, 0.55, 1.0, 0.55, 0.1, 0.325, 0.55, 0.325, 0.1, 0.21250000000000002, 0.325, 0.21250000000000002, 0.1, 0.15625, 0.21250000000000002}, {0.1, 0.55, 1.0, 0.55, 0.1, 0.325, 0.55, 0.325, 0.1, 0.21250000000000002, 0.325, 0.21250000000000002, 0.1, 0.15625, 0.21250000000000002}}, moms = {{0.95, 0.825, 0.7, 0.825, 0.95, 0.8875, 0.825, 0.8875, 0.95, 0.91875, 0.8875, 0.91875, 0.95, 0.934375, 0.91875}, {0.95, 0.85, 0.75, 0.85, 0.95, 0.8999999999999999, 0.85, 0.8999999999999999, 0.95, 0.9249999999999999, 0.8999999999999999, 0.9249999999999999, 0.95, 0.9375, 0.9249999999999999}}}
R.cyclic_exp_range = {lrs = {{0.1, 0.3700000000000001, 0.586, 0.7561000000000001, 0.4936600000000002, 0.2771469999999999, 0.1, 0.24348907000000028, 0.3582803259999998, 0.44867844010000013, 0.30920706405999987, 0.1941431788270002, 0.1, 0.17625597484987, 0.23726075472976613}, {0.1, 0.3700000000000001, 0.586, 0.7561000000000001, 0.4936600000000002, 0.2771469999999999, 0.1, 0.24348907000000028, 0.3582803259999998, 0.44867844010000013, 0.30920706405999987, 0.1941431788270002, 0.1, 0.17625597484987, 0.23726075472976613}}}
R.cyclic_scale_fn = {lrs = {{0.1, 0.32499999999999996, 0.32499999999999996, 0.175, 0.11875, 0.1, 0.10703125000000001, 0.10703125000000001, 0.10234375000000001, 0.1005859375, 0.1, 0.1002197265625, 0.1002197265625}, {0.1, 0.32499999999999996, 0.32499999999999996, 0.175, 0.11875, 0.1, 0.10703125000000001, 0.10703125000000001, 0.10234375000000001, 0.1005859375, 0.1, 0.1002197265625, 0.1002197265625}}}
R.sequential = {lrs = {{0.010000000000000002, 0.010000000000000002, 0.1, 0.09000000000000001, 0.08100000000000002, 0.07290000000000002, 0.06561000000000002, 0.05904900000000002, 0.05314410000000002}, {0.005000000000000001, 0.005000000000000001, 0.05, 0.045000000000000005, 0.04050000000000001, 0.03645000000000001, 0.03280500000000001, 0.02952450000000001, 0.02657205000000001}}}
R.sequential_3 = {lrs = {{0.05, 0.06666666666666667, 0.08333333333333333, 0.1, 0.0855017856687341, 0.0505, 0.0154982143312659, 0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.0125, 0.0125}, {0.025, 0.03333333333333333, 0.041666666666666664, 0.05, 0.04282411613907042, 0.025500000000000002, 0.008175883860929586, 0.05, 0.05, 0.025, 0.025, 0.0125, 0.0125, 0.00625, 0.00625}}}
R.plateau_min_rel = {lrs = {{0.1, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.025, 0.025, 0.025, 0.0125, 0.0125, 0.0125, 0.0125, 0.01}, {0.05, 0.05, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.025, 0.025, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02}}}
R.plateau_max_abs = {lrs = {{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.03, 0.03, 0.03, 0.03, 0.03, 0.009, 0.009, 0.009, 0.009, 0.009}, {0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.015, 0.015, 0.015, 0.015, 0.015, 0.0045, 0.0045, 0.0045, 0.0045, 0.0045}}}
R.plateau_default = {lrs = {{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002, 0.0010000000000000002, 0.0010000000000000002, 0.0010000000000000002, 0.0010000000000000002, 0.0010000000000000002, 0.0010000000000000002, 0.0010000000000000002, 0.0010000000000000002}, {0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.005000000000000001, 0.005000000000000001, 0.005000000000000001, 0.005000000000000001, 0.005000000000000001, 0.005000000000000001, 0.005000000000000001, 0.005000000000000001, 0.005000000000000001, 0.005000000000000001, 0.005000000000000001, 0.0005000000000000001, 0.0005000000000000001, 0.0005000000000000001, 0.0005000000000000001, 0.0005000000000000001, 0.0005000000000000001, 0.0005000000000000001, 0.0005000000000000001}}}
M.plateau_min_rel = {5.0, 4.0, 4.5, 4.2, 4.1, 4.0, 3.0, 3.1, 3.2, 3.3, 3.4, 3.5, 2.0, 2.5, 2.6, 2.7, 2.8, 2.9, 3.0, 3.1}
M.plateau_max_abs = {0.5, 0.55, 0.58, 0.62, 0.7, 0.71, 0.75, 0.79, 0.8, 0.95, 0.96, 0.97, 0.98, 0.99, 1.0, 1.01}
