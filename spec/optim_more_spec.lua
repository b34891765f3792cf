-- optim.Adamax, NAdam, RAdam and Adadelta: parameters after several steps against PyTorch 1.13
-- (float64, hard-coded from torch.optim on the same loss), state, state_dict and option errors.
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

-- loss = sum_i (w_i . x_i)^2 + sum w^3, `steps` steps of cls(opts) from W0; returns w flat and opt
local function run(cls, steps, opts)
  local w = nn.Parameter(pt.tensor(W0, {dtype = "float64"}))
  local opt = optim[cls]({w}, opts)
  for _ = 1, steps do
    opt:zero_grad()
    local loss = (w * X):sum(2):pow(2):sum() + w:pow(3):sum()
    loss:backward()
    opt:step()
  end
  return w:detach():flatten():tolist(), opt, w
end

local function assert_near(expected, got)
  for i, v in ipairs(expected) do
    if math.abs(v - got[i]) > 1e-12 * math.max(1, math.abs(v)) then
      error(string.format("element %d: expected %.17g, got %.17g", i, v, got[i]), 2)
    end
  end
end

describe("optim.Adamax / NAdam / RAdam / Adadelta", function()
  local cases = {
    {"Adamax", 3, nil, {0.50599474240566, -0.99399981148917971, 1.9940007218410987, 0.0059963860893475357,
      2.9939986220903454, -0.24400259528184715}},
    {"Adamax", 4, {lr = 0.1, betas = {0.8, 0.9}, weight_decay = 0.1, maximize = true},
      {0.12884737602334828, -1.3829671029503035, 2.3784045695877132, -0.37941162236515058, 3.3841020728396649,
        -0.62642454390203006}},
    -- NAdam: torch 1.13's loop with PyTorch 2's mu_product_next = mu_product * mu_next (1.13 multiplies
    -- by mu twice there, a bug fixed in 2.0), computed with torch ops
    {"NAdam", 3, nil, {0.50513831718595836, -0.99485858766523583, 1.994859103452852, 0.0051392506500805638,
      2.9948579128302382, -0.24486016829309964}},
    {"NAdam", 4, {lr = 0.05, betas = {0.8, 0.95}, weight_decay = 0.2, momentum_decay = 0.01},
      {0.6731179020234177, -0.82160829395558521, 1.8220386929027166, 0.17370625673227325, 2.8204104697157337,
        -0.074122661177117952}},
    {"RAdam", 3, nil, {0.51856926354834609, -0.96719681902065702, 1.9435113197583185, 0.0059503837257658052,
      2.9138751455693548, -0.22674260380387731}},
    -- 8 steps: from step 6 on the variance is tractable and the rectified step applies
    {"RAdam", 8, {lr = 0.01, weight_decay = 0.05}, {0.75227228389950374, -0.51437197687689429, 1.1985134530612016,
      0.084680262446614335, 1.7970906184412114, 0.081980129879038272}},
    {"Adadelta", 3, nil, {0.50967827615714956, -0.99030754827445566, 1.9903098911182266, 0.0096824997577906607,
      2.9903044495846927, -0.24031478474332513}},
    {"Adadelta", 4, {lr = 0.5, rho = 0.5, eps = 1e-4, weight_decay = 0.1, maximize = true},
      {0.46578658034540232, -1.0340867176636783, 2.034111623486452, -0.034165950284157899, 3.0340595923167419,
        -0.28415288345705125}},
  }
  for _, c in ipairs(cases) do
    it(string.format("%s, %d steps, %s options: as torch.optim", c[1], c[2], c[3] and "non-default" or "default"),
      function()
        local got = run(c[1], c[2], c[3])
        assert_near(c[4], got)
      end)
  end

  it("keeps PyTorch's state names, and resumes exactly from a state_dict", function()
    local names = {Adamax = {"exp_avg", "exp_inf"}, NAdam = {"exp_avg", "exp_avg_sq"},
      RAdam = {"exp_avg", "exp_avg_sq"}, Adadelta = {"square_avg", "acc_delta"}}
    for cls, keys in pairs(names) do
      local full = run(cls, 5)
      local _, opt, w = run(cls, 2)
      local st = opt:state_dict().state[1]
      assert.are.equal(2, pt.is_tensor(st.step) and st.step:item() or st.step)
      for _, k in ipairs(keys) do assert.is_true(pt.is_tensor(st[k]), cls .. " " .. k) end
      if cls == "NAdam" then
        -- mu_product = mu_1 * mu_2, mu_t = 0.9 * (1 - 0.5 * 0.96^(t * 0.004))
        local mu = function(t) return 0.9 * (1 - 0.5 * 0.96 ^ (t * 0.004)) end
        local mp = pt.is_tensor(st.mu_product) and st.mu_product:item() or st.mu_product
        assert.is_true(math.abs(mp - mu(1) * mu(2)) < 1e-15)
      end
      local sd = opt:state_dict()
      local w2 = nn.Parameter(w:detach():clone())
      local opt2 = optim[cls]({w2})
      opt2:load_state_dict(sd)
      for _ = 1, 3 do
        opt2:zero_grad()
        local loss = (w2 * X):sum(2):pow(2):sum() + w2:pow(3):sum()
        loss:backward()
        opt2:step()
      end
      assert_near(full, w2:detach():flatten():tolist())
    end
  end)

  it("steps float32 parameters and skips parameters without a gradient", function()
    for _, cls in ipairs({"Adamax", "NAdam", "RAdam", "Adadelta"}) do
      local a = nn.Parameter(pt.tensor({1, -2}))
      local b = nn.Parameter(pt.tensor({5}))
      local opt = optim[cls]({a, b}, {lr = 0.1})
      a:sum():backward()
      opt:step()
      assert.are.equal("float32", a:dtype())
      assert.is_true(a[1] < 1 and a[2] < -2, cls)
      assert.are.equal(5, b[1])
    end
  end)

  it("checks its options as PyTorch does", function()
    local p = nn.Parameter(pt.zeros(2))
    assert_err("Adamax: invalid learning rate: -1", optim.Adamax, {p}, -1)
    assert_err("Adamax: invalid beta parameter at index 1: 1", optim.Adamax, {p}, {betas = {1, 0.9}})
    assert_err("NAdam: invalid momentum_decay value: -1", optim.NAdam, {p}, {momentum_decay = -1})
    assert_err("NAdam: invalid beta parameter at index 2: 1.5", optim.NAdam, {p}, {betas = {0.9, 1.5}})
    assert_err("RAdam: invalid epsilon value: -1", optim.RAdam, {p}, {eps = -1})
    assert_err("RAdam: invalid weight_decay value: -0.5", optim.RAdam, {p}, {weight_decay = -0.5})
    assert_err("Adadelta: invalid rho value: 1.5", optim.Adadelta, {p}, {rho = 1.5})
    assert_err("Adadelta: invalid learning rate: nan", optim.Adadelta, {p}, {lr = 0 / 0})
    assert_err("NAdam: unknown option 'maximize'", optim.NAdam, {p}, {maximize = true})
    -- the position is the caller's line
    assert_err("optim_more_spec.lua:", function() optim.Adamax({p}, {betas = {1, 0.9}}) end)
    assert_err("optim_more_spec.lua:", function() optim.Adadelta({p}, {rho = 2}) end)
    assert_err("optim_more_spec.lua:", function() optim.SGD({p}, {lr = 1, nesterov = true}) end)
    assert_err("optim_more_spec.lua:", function() optim.Adam({p}, {betas = {0.9, -1}}) end)
  end)
end)

describe("optim.LBFGS", function()
  local A = pt.tensor({{3.0, 0.5, 0.1}, {0.5, 2.0, -0.3}, {0.1, -0.3, 1.5}, {1.0, 1.0, 1.0}}, {dtype = "float64"})
  local b = pt.tensor({1.0, -2.0, 0.5, 0.25}, {dtype = "float64"})

  -- |A w - b|^2 + 0.1 sum w^4 + |v - 1|^2 + sum v^4, `steps` steps; losses, parameters flat, state
  local function run(steps, opts)
    local w = nn.Parameter(pt.tensor({0.5, -1.0, 2.0}, {dtype = "float64"}))
    local v = nn.Parameter(pt.tensor({{0.1, 0.2}, {-0.3, 0.4}}, {dtype = "float64"}))
    local opt = optim.LBFGS({w, v}, opts)
    local function closure()
      opt:zero_grad()
      local r = A:matmul(w) - b
      local loss = r:pow(2):sum() + w:pow(4):sum() * 0.1 + (v - 1):pow(2):sum() + v:pow(4):sum()
      loss:backward()
      return loss
    end
    local losses = {}
    for i = 1, steps do losses[i] = opt:step(closure):item() end
    local flat = w:detach():tolist()
    for _, x in ipairs(v:detach():flatten():tolist()) do flat[#flat + 1] = x end
    return losses, flat, opt
  end

  -- torch.optim.LBFGS on the same problem (float64), 3 steps: losses, parameters, func_evals, n_iter
  local cases = {
    {nil, {15.08915, 1.5548516289639163, 1.5548516289639163}, {0.4963955407284858, -0.92921880163714599,
      0.31299828040250272, 0.58975625985218705, 0.58975610808978141, 0.58975603771959073, 0.58975534223090054}, 14, 14},
    {{lr = 0.5, max_iter = 5, history_size = 3}, {15.08915, 1.6010827976877606, 1.5548614374534784},
      {0.49639353484350146, -0.92920355215437089, 0.31303323101386094, 0.58976171048150061, 0.58976086829095131,
        0.589724762000432, 0.58975697792239323}, 15, 15},
    {{line_search_fn = "strong_wolfe", max_iter = 4, history_size = 2}, {15.08915, 1.6215358556871584,
      1.5548551770882595}, {0.49638578433982555, -0.92922848570729732, 0.31299938799611493, 0.58975501986350509,
        0.58975709298134837, 0.58974213555865174, 0.58975767261927514}, 16, 12},
  }
  for k, c in ipairs(cases) do
    it("matches torch.optim.LBFGS, case " .. k, function()
      local losses, flat, opt = run(3, c[1])
      for i, l in ipairs(c[2]) do assert.is_true(math.abs(l - losses[i]) < 1e-9 * math.max(1, l), "loss " .. i) end
      for i, x in ipairs(c[3]) do
        assert.is_true(math.abs(x - flat[i]) < 1e-8, string.format("parameter %d: %.17g vs %.17g", i, x, flat[i]))
      end
      local st = opt:state_dict().state[1]
      assert.are.equal(c[4], st.func_evals)
      assert.are.equal(c[5], st.n_iter)
    end)
  end

  it("resumes from its state_dict (history included)", function()
    local _, full = run(3, {max_iter = 4, history_size = 3})
    local _, _, opt = run(1, {max_iter = 4, history_size = 3})
    local sd = opt:state_dict()
    assert.are.equal(3, #sd.state[1].old_dirs) -- 4 iterations: 3 curvature pairs
    -- a fresh optimizer over the same parameter values, with the state loaded, goes on the same way
    local w = nn.Parameter(opt.param_groups[1].params[1]:detach():clone())
    local v = nn.Parameter(opt.param_groups[1].params[2]:detach():clone())
    local opt2 = optim.LBFGS({w, v}, {max_iter = 4, history_size = 3})
    opt2:load_state_dict(sd)
    local function closure()
      opt2:zero_grad()
      local r = A:matmul(w) - b
      local loss = r:pow(2):sum() + w:pow(4):sum() * 0.1 + (v - 1):pow(2):sum() + v:pow(4):sum()
      loss:backward()
      return loss
    end
    opt2:step(closure)
    opt2:step(closure)
    local flat = w:detach():tolist()
    for _, x in ipairs(v:detach():flatten():tolist()) do flat[#flat + 1] = x end
    for i, x in ipairs(full) do assert.is_true(math.abs(x - flat[i]) < 1e-12, "parameter " .. i) end
  end)

  it("checks its options, the closure and parameter groups", function()
    local p = nn.Parameter(pt.zeros(2))
    assert_err("LBFGS: max_iter must be a positive integer, got 0", optim.LBFGS, {p}, {max_iter = 0})
    assert_err("LBFGS: history_size must be a positive integer, got 2.5", optim.LBFGS, {p}, {history_size = 2.5})
    assert_err('LBFGS: line_search_fn must be "strong_wolfe" or false, got "wolfe"', optim.LBFGS, {p},
      {line_search_fn = "wolfe"})
    assert_err("LBFGS: invalid learning rate: -1", optim.LBFGS, {p}, -1)
    assert_err("LBFGS: parameter groups are not supported", optim.LBFGS,
      {{params = {p}}, {params = {nn.Parameter(pt.zeros(1))}}})
    local opt = optim.LBFGS({p})
    assert_err("LBFGS:add_param_group: parameter groups are not supported", function()
      opt:add_param_group({params = {nn.Parameter(pt.zeros(1))}})
    end)
    assert_err("optim_more_spec.lua:", function() opt:step() end)
    assert_err("LBFGS:step: a closure that re-evaluates the model and returns the loss is required",
      function() opt:step() end)
    assert_err("LBFGS:step: the closure must return the loss (a number or a one-element tensor), got nil",
      function() opt:step(function() end) end)
    assert_err("LBFGS:load_state_dict: state 'exp_avg' is not one LBFGS keeps", function()
      opt:load_state_dict({param_groups = opt:state_dict().param_groups, state = {{exp_avg = pt.zeros(2)}}})
    end)
    assert_err("LBFGS:load_state_dict: state 'd' must be a 1-D tensor of 2 elements (all parameters)", function()
      opt:load_state_dict({param_groups = opt:state_dict().param_groups, state = {{d = pt.zeros(3)}}})
    end)
  end)

  it("trains a small model to a low loss in float32", function()
    pt.manual_seed(1)
    local model = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
    local x = pt.rand(32, 2)
    local y = (x[{{}, {1, 1}}] * 2 - x[{{}, {2, 2}}]):sin()
    local opt = optim.LBFGS(model:parameters(), {line_search_fn = "strong_wolfe"})
    local loss
    for _ = 1, 5 do
      loss = opt:step(function()
        opt:zero_grad()
        local l = nn.mse_loss(model(x), y)
        l:backward()
        return l
      end)
    end
    assert.is_true(loss:item() < 1e-3, tostring(loss:item()))
  end)
end)
