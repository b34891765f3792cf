-- optim.Rprop and optim.ASGD (parameters and state after several steps against PyTorch 1.13,
-- float64; state_dict and resume; option errors), and the schedulers MultiplicativeLR and
-- ChainedScheduler (lr sequences against PyTorch 1.13).
--
-- The numbers below were computed once with /usr/bin/python3 and torch 1.13 by this script:
--[==[
import torch, warnings
from torch.optim import SGD
import torch.optim.lr_scheduler as S
warnings.simplefilter("ignore")
W0 = [[0.5, -1.0, 2.0], [0.0, 3.0, -0.25]]
X = torch.tensor([[1.0, 2.0, -1.0], [0.5, -0.5, 2.0]], dtype=torch.float64)
def loss_of(w, kind):
    if kind == "cubic":
        return (w * X).sum(1).pow(2).sum() + w.pow(3).sum()
    return (w * X).sum(1).pow(2).sum() + ((w - 1).pow(2) * 3).sum()
def run(cls, steps, kind, dtype=torch.float64, **kw):
    w = torch.nn.Parameter(torch.tensor(W0, dtype=dtype))
    opt = cls([w], **kw)
    for _ in range(steps):
        opt.zero_grad()
        loss_of(w, kind).backward()
        opt.step()
    return w, opt
def fl(t): return "{" + ", ".join(repr(v) for v in t.detach().flatten().tolist()) + "}"
for name, cls, n, kind, kw in [
    ("Rprop", torch.optim.Rprop, 8, "quad", {}),
    ("Rprop", torch.optim.Rprop, 10, "quad", dict(lr=0.3, etas=(0.3, 1.5), step_sizes=(0.01, 0.5))),
    ("Rprop", torch.optim.Rprop, 6, "cubic", dict(lr=0.05, maximize=True)),
    ("ASGD", torch.optim.ASGD, 3, "cubic", {}),
    ("ASGD", torch.optim.ASGD, 7, "quad", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=2, weight_decay=0.1)),
    ("ASGD", torch.optim.ASGD, 5, "cubic", dict(lr=0.02, t0=1, maximize=True))]:
    w, opt = run(cls, n, kind, **kw)
    st = opt.state[w]
    if name == "Rprop":
        extra = "step_size = %s, prev = %s" % (fl(st["step_size"]), fl(st["prev"]))
    else:
        extra = "ax = %s, eta = %r, mu = %r" % (fl(st["ax"]), st["eta"].item(), st["mu"].item())
    print("{%r, %d, %r, %r,\n  %s,\n  %s}," % (name, n, kind, kw, fl(w), extra))
w, opt = run(torch.optim.Rprop, 10, "quad", dtype=torch.float32, lr=0.3, etas=(0.3, 1.5), step_sizes=(0.01, 0.5))
print("f32", fl(w), fl(opt.state[w]["step_size"]))

def opt():
    a, b = torch.nn.Parameter(torch.zeros(1)), torch.nn.Parameter(torch.zeros(1))
    return SGD([{"params": [a]}, {"params": [b], "lr": 0.05}], lr=0.1)
def lrs_of(o, make, n):
    s = make(o)
    lrs = [[g["lr"]] for g in o.param_groups]
    for k in range(n):
        s.step()
        for i, g in enumerate(o.param_groups): lrs[i].append(g["lr"])
    return "{%s}" % ", ".join("{%s}" % ", ".join(repr(float(v)) for v in l) for l in lrs)
print("mult", lrs_of(opt(), lambda o: S.MultiplicativeLR(o, lambda e: 0.9 if e % 2 else 0.8), 8))
print("mult_list", lrs_of(opt(), lambda o: S.MultiplicativeLR(o, [lambda e: 0.95, lambda e: 1 + 0.01 * e]), 8))
print("chain", lrs_of(opt(), lambda o: S.ChainedScheduler([S.ConstantLR(o, factor=0.5, total_iters=3),
    S.ExponentialLR(o, gamma=0.9)]), 8))
print("chain_3", lrs_of(opt(), lambda o: S.ChainedScheduler([S.LinearLR(o, start_factor=0.25, total_iters=4),
    S.MultiplicativeLR(o, lambda e: 0.95), S.StepLR(o, step_size=3, gamma=0.5)]), 10))
print("chain_poly", lrs_of(opt(), lambda o: S.ChainedScheduler([S.MultiStepLR(o, milestones=[2, 5], gamma=0.3),
    S.PolynomialLR(o, total_iters=6, power=2.0)]), 9))
]==]
local pt = require "partrain"
local nn, optim = pt.nn, pt.optim

local function assert_err(pattern, f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok)
  if not tostring(e):find(pattern, 1, true) then
    error(string.format("expected error containing %q, got %q", pattern, tostring(e)), 2)
  end
end

local W0 = {{0.5, -1.0, 2.0}, {0.0, 3.0, -0.25}}
local X = pt.tensor({{1.0, 2.0, -1.0}, {0.5, -0.5, 2.0}}, {dtype = "float64"})

local function loss_of(w, kind)
  local x = X:to(w:dtype())
  if kind == "cubic" then return (w * x):sum(2):pow(2):sum() + w:pow(3):sum() end
  return (w * x):sum(2):pow(2):sum() + ((w - 1):pow(2) * 3):sum()
end

-- `steps` steps of optim[cls](opts) on loss `kind` from W0 (or from w); returns w and the optimizer
local function run(cls, steps, kind, opts, w, opt)
  w = w or nn.Parameter(pt.tensor(W0, {dtype = "float64"}))
  opt = opt or optim[cls]({w}, opts)
  for _ = 1, steps do
    opt:zero_grad()
    loss_of(w, kind):backward()
    opt:step()
  end
  return w, opt
end

local function flat(t) return t:detach():flatten():tolist() end

local function assert_near(expected, got, tol, what)
  tol = tol or 1e-12
  assert.are.equal(#expected, #got, what)
  for i, v in ipairs(expected) do
    if not (math.abs(v - got[i]) <= tol * math.max(1, math.abs(v))) then
      error(string.format("%s: element %d: expected %.17g, got %.17g", what or "value", i, v, got[i]), 2)
    end
  end
end

describe("optim.Rprop / optim.ASGD against torch.optim (float64)", function()
  -- the script's output: {class, steps, loss, options, parameters, state}
  local cases = {
    {"Rprop", 8, "quad", nil,
      {0.6649908479999999, -0.8350091520000001, 1.8350091519999998, 0.164990848, 2.835009152, -0.085009152},
      {step_size = {0.035831808, 0.035831808, 0.035831808, 0.035831808, 0.035831808, 0.035831808},
        prev = {-8.19177344, -23.15850112, 11.191773439999999, -6.837568640000001, 12.83756864, -13.175137280000001}}},
    -- sign flips: steps shrink by 0.3 (and those elements skip a step), grow by 1.5, clamp to [0.01, 0.5]
    {"Rprop", 10, "quad", {lr = 0.3, etas = {0.3, 1.5}, step_sizes = {0.01, 0.5}},
      {1.04159375, 0.54375, 1.2093749999999999, 0.790625, 1.18625, 0.540625},
      {step_size = {0.20503124999999994, 0.10124999999999998, 0.15187499999999998, 0.15187499999999998, 0.10125,
        0.15187499999999998},
        prev = {-0.2599999999999989, -1.9037499999999987, 1.4468749999999986, -1.7143749999999995, 1.2718750000000005,
          -1.8549999999999993}}},
    {"Rprop", 6, "cubic", {lr = 0.05, maximize = true},
      {0.0035040000000000626, -1.496496, 2.4964959999999996, -0.49649599999999994, 3.4964959999999996,
        -0.7464959999999999},
      {step_size = {0.12441599999999997, 0.12441599999999997, 0.12441599999999997, 0.12441599999999997,
        0.12441599999999997, 0.12441599999999997},
        prev = {9.9275494208, 14.305469420799998, -26.856930579199993, 2.7009094207999995, -37.229010579199986,
          11.304009420799998}}},
    {"ASGD", 3, "cubic", nil,
      {0.6547210174753957, -0.7065927880931, 1.5169133274092903, 0.05111835826408065, 2.275058654197217,
        -0.04840794374726406},
      {ax = {0.6547210174753957, -0.7065927880931, 1.5169133274092903, 0.05111835826408065, 2.275058654197217,
        -0.04840794374726406}, eta = 0.009999977424740791, mu = 1.0}},
    -- t0 = 2: the average starts moving at step 3 (mu = 1/(step - t0) after it)
    {"ASGD", 7, "quad", {lr = 0.05, lambd = 0.01, alpha = 0.5, t0 = 2, weight_decay = 0.1},
      {0.7985839976244193, 0.5356549963459315, 1.2072769463316932, 0.8096998082497898, 1.2352161536562234,
        0.5033929427142939},
      {ax = {0.8277832778164116, 0.5246743552314646, 1.2146077119447538, 0.7724403414690515, 1.3430817853059644,
        0.5380928403314111}, eta = 0.04991272836923599, mu = 0.20000000298023224}},
    {"ASGD", 5, "cubic", {lr = 0.02, t0 = 1, maximize = true},
      {-0.6790988397394989, -2.6556248975808208, 6.414169350481902, -0.3742786033849088, 11.247472144114422,
        -1.6064537251036115},
      {ax = {-0.3354358350096611, -2.2181219668817644, 4.9167802475562405, -0.26238179213462637, 8.169831877789335,
        -1.2177155325483815}, eta = 0.019999850541353226, mu = 0.25}},
  }
  for _, c in ipairs(cases) do
    it(string.format("%s, %d steps, %s options: parameters and state as torch.optim", c[1], c[2],
      c[4] and "non-default" or "default"), function()
      local w, opt = run(c[1], c[2], c[3], c[4])
      assert_near(c[5], flat(w), 1e-12, "parameters")
      local st = opt.state[w]
      assert.are.equal(c[2], st.step)
      for k, v in pairs(c[6]) do
        if type(v) == "table" then
          assert_near(v, flat(st[k]), 1e-12, k)
        else
          -- eta and mu: PyTorch's float32 values exactly
          assert.are.equal(v, st[k], k)
        end
      end
    end)
  end

  it("Rprop steps float32 parameters as PyTorch (its factors filled in float32)", function()
    local w = nn.Parameter(pt.tensor(W0))
    run("Rprop", 10, "quad", {lr = 0.3, etas = {0.3, 1.5}, step_sizes = {0.01, 0.5}}, w)
    assert.are.equal("float32", w:dtype())
    -- torch 1.13, float32 (the script's last line)
    assert_near({1.0415937900543213, 0.543749988079071, 1.2093749046325684, 0.7906250357627869, 1.1862499713897705,
      0.5406250357627869}, flat(w), 1e-7, "float32 parameters")
  end)

  it("skips parameters without a gradient (no state for them)", function()
    for _, cls in ipairs({"Rprop", "ASGD"}) do
      local a = nn.Parameter(pt.tensor({1, -2}))
      local b = nn.Parameter(pt.tensor({5}))
      local opt = optim[cls]({a, b}, {lr = 0.1})
      a:sum():backward()
      opt:step()
      assert.is_true(a[1] < 1 and a[2] < -2, cls)
      assert.are.equal(5, b[1])
      assert.is_nil(next(opt.state[b]), cls)
    end
  end)

  it("keeps PyTorch's state names, and resumes exactly from a state_dict", function()
    local names = {Rprop = {"prev", "step_size"}, ASGD = {"ax"}}
    local opts = {Rprop = {lr = 0.3, etas = {0.3, 1.5}, step_sizes = {0.01, 0.5}},
      ASGD = {lr = 0.05, lambd = 0.01, alpha = 0.5, t0 = 2, weight_decay = 0.1}}
    for cls, keys in pairs(names) do
      local full = flat((run(cls, 7, "quad", opts[cls])))
      local w, opt = run(cls, 3, "quad", opts[cls])
      local sd = opt:state_dict()
      local st = sd.state[1]
      assert.are.equal(3, st.step:item())
      for _, k in ipairs(keys) do assert.is_true(pt.is_tensor(st[k]), cls .. " " .. k) end
      if cls == "ASGD" then
        -- eta and mu as 0-d tensors, as PyTorch's
        assert.are.equal(0, st.eta:dim())
        assert.are.equal(opt.state[w].eta, st.eta:item())
        assert.are.equal(opt.state[w].mu, st.mu:item())
      end
      local w2 = nn.Parameter(w:detach():clone())
      local opt2 = optim[cls]({w2})
      opt2:load_state_dict(sd)
      assert.are.same(opts[cls].lr, opt2.param_groups[1].lr)
      run(cls, 4, "quad", nil, w2, opt2)
      assert.are.same(full, flat(w2), cls)
    end
  end)

  it("resumes exactly through a checkpoint file (pt.save / pt.load_into)", function()
    local dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p " .. dir)
    for _, cls in ipairs({"Rprop", "ASGD"}) do
      local o = {lr = 0.05, t0 = 1}
      if cls == "Rprop" then o = {lr = 0.2} end
      local full = flat((run(cls, 6, "quad", o)))
      local m = nn.Module()
      m.w = nn.Parameter(pt.tensor(W0, {dtype = "float64"}))
      local _, opt = run(cls, 2, "quad", o, m.w)
      local path = dir .. "/" .. cls .. ".safetensors"
      pt.save(path, m, {optimizer = opt})
      local m2 = nn.Module()
      m2.w = nn.Parameter(pt.zeros({2, 3}, {dtype = "float64"}))
      local opt2 = optim[cls]({m2.w})
      pt.load_into(path, m2, {optimizer = opt2})
      run(cls, 4, "quad", nil, m2.w, opt2)
      assert.are.same(full, flat(m2.w), cls)
      os.remove(path)
    end
    os.remove(dir)
  end)

  it("refuses the state of another optimizer", function()
    local _, adam = run("Adam", 1, "quad")
    local w = nn.Parameter(pt.tensor(W0, {dtype = "float64"}))
    assert_err("Rprop:load_state_dict: parameter group 1 has option 'amsgrad', which Rprop does not take",
      optim.Rprop({w}).load_state_dict, optim.Rprop({w}), adam:state_dict())
    local _, rprop = run("Rprop", 1, "quad")
    local sd = rprop:state_dict()
    sd.param_groups[1].etas, sd.param_groups[1].step_sizes = nil, nil
    -- 'prev' or 'step_size' (the first met), neither of which ASGD keeps
    assert_err("of parameter 1 is not one ASGD keeps (ax, eta, mu, step): a state dict of another optimizer?",
      function() optim.ASGD({w}):load_state_dict(sd) end)
    local _, asgd = run("ASGD", 1, "quad")
    local sd2 = asgd:state_dict()
    sd2.state[1].eta = "x"
    assert_err("ASGD:load_state_dict: eta of parameter 1 is not a number", function() optim.ASGD({w}):load_state_dict(sd2) end)
  end)

  it("checks its options as PyTorch does", function()
    local p = nn.Parameter(pt.zeros(2))
    assert_err("Rprop: invalid learning rate: -1", optim.Rprop, {p}, -1)
    assert_err("Rprop: invalid eta values: 1.5, 1.2", optim.Rprop, {p}, {etas = {1.5, 1.2}})
    assert_err("Rprop: invalid eta values: 0.5, 1", optim.Rprop, {p}, {etas = {0.5, 1}})
    assert_err("Rprop: etas must be a table of two numbers {a, b}", optim.Rprop, {p}, {etas = 0.5})
    assert_err("Rprop: step_sizes must be a table of two numbers {a, b}", optim.Rprop, {p}, {step_sizes = {1e-6}})
    assert_err("Rprop: option 'maximize' must be a boolean, got number", optim.Rprop, {p}, {maximize = 1})
    assert_err("Rprop: unknown option 'momentum'", optim.Rprop, {p}, {momentum = 0.9})
    assert_err("ASGD: invalid learning rate: nan", optim.ASGD, {p}, {lr = 0 / 0})
    assert_err("ASGD: invalid weight_decay value: -0.5", optim.ASGD, {p}, {weight_decay = -0.5})
    assert_err("ASGD: option 't0' must be a number, got string 'x'", optim.ASGD, {p}, {t0 = "x"})
    -- the position is the caller's line
    assert_err("optim_more2_spec.lua:", function() optim.Rprop({p}, {etas = {2, 3}}) end)
    assert_err("optim_more2_spec.lua:", function() optim.Rprop({p}, {etas = 1}) end)
    assert_err("optim_more2_spec.lua:", function() optim.ASGD({p}, {lr = -1}) end)
  end)

  it("print their options", function()
    local s = tostring(optim.Rprop({nn.Parameter(pt.zeros(1))}))
    assert.matches("Rprop %(", s)
    assert.matches("etas: {0.5, 1.2}", s, 1, true)
    assert.matches("step_sizes: {1e%-06, 50}", s)
    assert.matches("t0: 1000000.0", tostring(optim.ASGD({nn.Parameter(pt.zeros(1))})), 1, true)
  end)
end)

-- ---------------------------------------------------------------- schedulers

local R = {
  mult = {{0.1, 0.09000000000000001, 0.07200000000000001, 0.06480000000000001, 0.05184000000000001,
    0.04665600000000001, 0.03732480000000001, 0.03359232000000001, 0.02687385600000001},
    {0.05, 0.045000000000000005, 0.036000000000000004, 0.032400000000000005, 0.025920000000000006,
      0.023328000000000005, 0.018662400000000006, 0.016796160000000004, 0.013436928000000004}},
  mult_list = {{0.1, 0.095, 0.09025, 0.0857375, 0.08145062499999998, 0.07737809374999999, 0.07350918906249998,
    0.06983372960937498, 0.06634204312890622},
    {0.05, 0.0505, 0.05151000000000001, 0.05305530000000001, 0.05517751200000001, 0.057936387600000014,
      0.06141257085600002, 0.06571145081592003, 0.07096836688119364}},
  chain = {{0.05, 0.045000000000000005, 0.04050000000000001, 0.07290000000000002, 0.06561000000000002,
    0.05904900000000002, 0.05314410000000002, 0.04782969000000002, 0.043046721000000024},
    {0.025, 0.022500000000000003, 0.020250000000000004, 0.03645000000000001, 0.03280500000000001,
      0.02952450000000001, 0.02657205000000001, 0.02391484500000001, 0.021523360500000012}},
  chain_3 = {{0.025, 0.0415625, 0.05640625, 0.034830859374999995, 0.04072531249999999, 0.038689046874999994,
    0.018377297265624995, 0.017458432402343745, 0.016585510782226556, 0.007878117621557613, 0.007484211740479732},
    {0.0125, 0.02078125, 0.028203125, 0.017415429687499998, 0.020362656249999996, 0.019344523437499997,
      0.009188648632812497, 0.008729216201171872, 0.008292755391113278, 0.0039390588107788066, 0.003742105870239866}},
  chain_poly = {{0.1, 0.06944444444444446, 0.01333333333333334, 0.007500000000000002, 0.003333333333333335,
    0.00024999999999999995, 0.0, 0.0, 0.0, 0.0},
    {0.05, 0.03472222222222223, 0.00666666666666667, 0.003750000000000001, 0.0016666666666666674,
      0.00012499999999999998, 0.0, 0.0, 0.0, 0.0}},
}

local function param() return nn.Parameter(pt.zeros(1)) end
-- two groups, lr 0.1 and 0.05, as the script's
local function sgd() return optim.SGD({{params = {param()}}, {params = {param()}, lr = 0.05}}, {lr = 0.1}) end

-- the lrs after construction and after each of n steps
local function trace(o, s, n)
  local lrs = {{}, {}}
  local function record()
    for i, g in ipairs(o.param_groups) do lrs[i][#lrs[i] + 1] = g.lr end
  end
  record()
  for _ = 1, n do
    s:step()
    record()
  end
  return lrs
end

-- relative tolerance: the closed forms round differently from PyTorch's chainable steps
local function close(actual, expected, what)
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

describe("optim.MultiplicativeLR / optim.ChainedScheduler against PyTorch 1.13", function()
  it("MultiplicativeLR with one function and with one per group", function()
    local o = sgd()
    close(trace(o, optim.MultiplicativeLR(o, function(e) return e % 2 == 1 and 0.9 or 0.8 end), 8), R.mult, "mult")
    o = sgd()
    close(trace(o, optim.MultiplicativeLR(o, {function() return 0.95 end, function(e) return 1 + 0.01 * e end}), 8),
      R.mult_list, "mult_list")
  end)

  it("MultiplicativeLR calls its function once per step, and recomputes after a jump", function()
    local o = sgd()
    local calls = {}
    local s = optim.MultiplicativeLR(o, function(e)
      calls[#calls + 1] = e
      return 0.5
    end)
    assert.are.same({}, calls) -- epoch 0: the base lr, no call (as PyTorch)
    for _ = 1, 4 do s:step() end
    assert.are.same({1, 1, 2, 2, 3, 3, 4, 4}, calls) -- one call per step and group
    assert.are.equal(0.1 * 0.5 ^ 4, o.param_groups[1].lr)
    s.last_epoch = 1
    calls = {}
    s:step()
    assert.are.same({1, 2, 1, 2}, calls)
    assert.are.equal(0.1 * 0.25, o.param_groups[1].lr)
    -- the state dict leaves the functions with the code; loading goes on from its epoch
    local sd = s:state_dict()
    assert.is_nil(sd.lr_lambda)
    assert.are.equal(2, sd.last_epoch)
    local o2 = sgd()
    local s2 = optim.MultiplicativeLR(o2, function() return 0.5 end)
    s2:load_state_dict(sd)
    assert.are.equal(0.1 * 0.25, o2.param_groups[1].lr)
    s2:step()
    assert.are.equal(0.1 * 0.125, o2.param_groups[1].lr)
  end)

  it("ChainedScheduler multiplies its schedulers' factors", function()
    local o = sgd()
    local chain = optim.ChainedScheduler({optim.ConstantLR(o, {factor = 0.5, total_iters = 3}),
      optim.ExponentialLR(o, {gamma = 0.9})})
    close(trace(o, chain, 8), R.chain, "chain")
    o = sgd()
    local subs = {optim.LinearLR(o, {start_factor = 0.25, total_iters = 4}),
      optim.MultiplicativeLR(o, function() return 0.95 end), optim.StepLR(o, {step_size = 3, gamma = 0.5})}
    chain = optim.ChainedScheduler(subs)
    close(trace(o, chain, 10), R.chain_3, "chain_3")
    -- each scheduler went along: its epoch, and its last lrs (the lr after it, as PyTorch's that step in turn)
    for _, s in ipairs(subs) do assert.are.equal(10, s.last_epoch) end
    close({subs[2]:get_last_lr()}, {{0.1 * 0.95 ^ 10, 0.05 * 0.95 ^ 10}}, "MultiplicativeLR's last lr")
    close({chain:get_last_lr()}, {{R.chain_3[1][11], R.chain_3[2][11]}}, "the chain's last lr")
    o = sgd()
    chain = optim.ChainedScheduler({optim.MultiStepLR(o, {milestones = {2, 5}, gamma = 0.3}),
      optim.PolynomialLR(o, {total_iters = 6, power = 2.0})})
    close(trace(o, chain, 9), R.chain_poly, "chain_poly")
  end)

  it("ChainedScheduler prints, saves and resumes", function()
    local function make(o)
      return optim.ChainedScheduler({optim.ConstantLR(o, {factor = 0.5, total_iters = 3}),
        optim.ExponentialLR(o, {gamma = 0.9})})
    end
    local o = sgd()
    local chain = make(o)
    assert.are.equal("ChainedScheduler(schedulers={ConstantLR(factor=0.5, total_iters=3, last_epoch=0), "
      .. "ExponentialLR(gamma=0.9, last_epoch=0)}, last_epoch=0)", tostring(chain))
    for _ = 1, 2 do chain:step() end
    local sd = chain:state_dict()
    assert.are.equal(2, sd.last_epoch)
    assert.are.equal(2, #sd.schedulers)
    assert.are.equal(0.9, sd.schedulers[2].gamma)
    local o2 = sgd()
    local chain2 = make(o2)
    chain2:load_state_dict(sd)
    assert.are.equal(o.param_groups[1].lr, o2.param_groups[1].lr)
    local rest = trace(o2, chain2, 6)
    for g = 1, 2 do
      local e = {}
      for k = 3, 9 do e[#e + 1] = R.chain[g][k] end
      close({rest[g]}, {e}, "resumed group " .. g)
    end
    assert_err("ChainedScheduler:load_state_dict: the state dict has 1 scheduler states, ChainedScheduler 2 schedulers",
      function() chain2:load_state_dict({last_epoch = 1, schedulers = {sd.schedulers[1]}}) end)
    assert_err("ChainedScheduler:load_state_dict: 'milestones' is not a setting of ChainedScheduler",
      function()
        local bad = chain:state_dict()
        bad.milestones = {1}
        chain2:load_state_dict(bad)
      end)
  end)

  it("checks its arguments", function()
    local o = sgd()
    local step = optim.StepLR(o, {step_size = 2})
    assert_err("ChainedScheduler: schedulers must be a list of LR schedulers, got 3", optim.ChainedScheduler, 3)
    assert_err("ChainedScheduler: schedulers must be a list of LR schedulers, got table", optim.ChainedScheduler, {})
    assert_err("ChainedScheduler: scheduler 2 must be an LR scheduler (optim.StepLR, ...), got 'x'",
      optim.ChainedScheduler, {step, "x"})
    assert_err("ChainedScheduler: scheduler 2 (CosineAnnealingLR) cannot be chained: only the schedulers that scale "
      .. "the lr by a factor multiply", optim.ChainedScheduler, {step, optim.CosineAnnealingLR(o, {T_max = 4})})
    assert_err("ChainedScheduler: scheduler 1 (LambdaLR) cannot be chained",
      optim.ChainedScheduler, {optim.LambdaLR(o, function() return 1 end)})
    assert_err("ChainedScheduler: scheduler 1 (ReduceLROnPlateau) cannot be chained",
      optim.ChainedScheduler, {optim.ReduceLROnPlateau(o)})
    assert_err("ChainedScheduler: scheduler 2 (StepLR) belongs to another optimizer than scheduler 1",
      optim.ChainedScheduler, {step, optim.StepLR(sgd(), {step_size = 2})})
    local ahead = optim.ExponentialLR(o, {gamma = 0.5})
    ahead:step()
    assert_err("ChainedScheduler: the schedulers are at different epochs (scheduler 1 at 0, scheduler 2 at 1)",
      optim.ChainedScheduler, {step, ahead})
    assert_err("ChainedScheduler: unexpected argument #2 (table)", optim.ChainedScheduler, {step}, {})
    local chain = optim.ChainedScheduler({step})
    step.gamma = "x"
    assert_err("ChainedScheduler:step: scheduler 1 (StepLR): gamma must be a number, got 'x'", chain.step, chain)
    assert_err("MultiplicativeLR: lr_lambda must be a function or a list of one per parameter group, got 0.5",
      optim.MultiplicativeLR, o, 0.5)
    assert_err("MultiplicativeLR: expected 2 lr_lambda functions (one per parameter group), got 1",
      optim.MultiplicativeLR, o, {function() return 1 end})
    assert_err("MultiplicativeLR: lr_lambda[2] must be a function, got 2",
      optim.MultiplicativeLR, o, {function() return 1 end, 2})
    local m = optim.MultiplicativeLR(o, function(e) return e < 2 and 0.5 or "x" end)
    m:step()
    assert_err("MultiplicativeLR:step: lr_lambda(2) returned 'x', not a number", m.step, m)
  end)
end)
