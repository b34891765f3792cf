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
