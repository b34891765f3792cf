-- Differential checks of partrain.optim against PyTorch 1.13 (the values are torch 1.13's, from
-- scripts that step the same schedulers / optimizers on the same numbers).
local pt = require "partrain"
local optim = require "partrain.optim"

local function param()
  local p = pt.zeros(2)
  p.requires_grad = true
  return p
end

-- two groups, lr 0.1 and 0.05
local function sgd()
  return optim.SGD({{params = {param()}}, {params = {param()}, lr = 0.05}}, {lr = 0.1})
end

local function lrs(o)
  local r = {}
  for i, g in ipairs(o.param_groups) do r[i] = g.lr end
  return r
end

local function close(actual, expected, what, tol)
  tol = tol or 1e-12
  assert.are.equal(#expected, #actual, what)
  for k = 1, #expected do
    assert.are.equal(#expected[k], #actual[k], what)
    for i = 1, #expected[k] do
      local a, b = actual[k][i], expected[k][i]
      if not (math.abs(a - b) <= tol * math.abs(b) + 1e-18) then
        error(("%s: row %d, value %d: got %.17g, expected %.17g"):format(what, k, i, a, b), 2)
      end
    end
  end
end

describe("schedulers whose lr someone else moved (values from torch 1.13)", function()
  -- each follows PyTorch's chainable step from the group's current lr; before, the closed form of
  -- the base lr replaced it at the next step (the last scheduler stepped won)

  it("two schedulers stepped back to back multiply (PyTorch's docs: ExponentialLR and MultiStepLR)", function()
    -- torch 1.13: ExponentialLR(opt, 0.9), MultiStepLR(opt, [5, 12], 0.1), both stepped each epoch
    local expected = {{0.10000000000000001, 0.050000000000000003},
      {0.090000000000000011, 0.045000000000000005},
      {0.081000000000000016, 0.040500000000000008},
      {0.07290000000000002, 0.03645000000000001},
      {0.065610000000000016, 0.032805000000000008},
      {0.005904900000000002, 0.002952450000000001},
      {0.005314410000000002, 0.002657205000000001},
      {0.0047829690000000024, 0.0023914845000000012},
      {0.004304672100000002, 0.002152336050000001},
      {0.0038742048900000021, 0.001937102445000001},
      {0.003486784401000002, 0.001743392200500001},
      {0.0031381059609000019, 0.001569052980450001},
      {0.0002824295364810002, 0.0001412147682405001},
      {0.00025418658283290021, 0.00012709329141645011},
      {0.00022876792454961018, 0.00011438396227480509},
      {0.00020589113209464917, 0.00010294556604732458},
      {0.00018530201888518425, 9.2651009442592126e-05},
      {0.00016677181699666584, 8.3385908498332921e-05},
      {0.00015009463529699926, 7.5047317648499628e-05},
      {0.00013508517176729934, 6.7542585883649672e-05},
      {0.00012157665459056941, 6.0788327295284707e-05},
      {0.00010941898913151247, 5.4709494565756235e-05},
      {9.8477090218361223e-05, 4.9238545109180612e-05},
      {8.8629381196525105e-05, 4.4314690598262553e-05},
      {7.976644307687259e-05, 3.9883221538436295e-05},
      {7.178979876918533e-05, 3.5894899384592665e-05},
      {6.4610818892266801e-05, 3.2305409446133401e-05},
      {5.8149737003040121e-05, 2.9074868501520061e-05},
      {5.2334763302736112e-05, 2.6167381651368056e-05},
      {4.7101286972462505e-05, 2.3550643486231253e-05},
      {4.2391158275216258e-05, 2.1195579137608129e-05}}
    local o = sgd()
    local s1 = optim.ExponentialLR(o, {gamma = 0.9})
    local s2 = optim.MultiStepLR(o, {milestones = {5, 12}, gamma = 0.1})
    local rows = {lrs(o)}
    for _ = 1, 30 do
      s1:step(); s2:step()
      rows[#rows + 1] = lrs(o)
    end
    close(rows, expected, "back to back")
    -- the old closed form gave 0.1 * 0.1^(milestones passed): 0.01 at epoch 5 instead of 0.0059049
    assert.is_true(math.abs(rows[6][1] - 0.0059049) < 1e-15)
    assert.are.same(rows[#rows], s2:get_last_lr())
  end)

  it("an lr set by hand is where StepLR, CosineAnnealingLR and PolynomialLR go on from", function()
    local o = sgd()
    local s = optim.StepLR(o, {step_size = 3, gamma = 0.5})
    local rows = {lrs(o)}
    for e = 0, 9 do
      s:step()
      if e == 3 then
        for _, g in ipairs(o.param_groups) do g.lr = g.lr * 4 end
      end
      rows[#rows + 1] = lrs(o)
    end
    close(rows, {{0.10000000000000001, 0.050000000000000003},
      {0.10000000000000001, 0.050000000000000003},
      {0.10000000000000001, 0.050000000000000003},
      {0.050000000000000003, 0.025000000000000001},
      {0.20000000000000001, 0.10000000000000001},
      {0.20000000000000001, 0.10000000000000001},
      {0.10000000000000001, 0.050000000000000003},
      {0.10000000000000001, 0.050000000000000003},
      {0.10000000000000001, 0.050000000000000003},
      {0.050000000000000003, 0.025000000000000001},
      {0.050000000000000003, 0.025000000000000001}}, "StepLR")

    -- group 1 set to 0.3 twice, once just before the cosine's trough (PyTorch's additive branch)
    o = sgd()
    s = optim.CosineAnnealingLR(o, {T_max = 4, eta_min = 0.01})
    rows = {lrs(o)}
    for e = 0, 19 do
      s:step()
      if e == 2 or e == 9 then o.param_groups[1].lr = 0.3 end
      rows[#rows + 1] = lrs(o)
    end
    close(rows, {{0.10000000000000001, 0.050000000000000003},
      {0.086819805153394644, 0.044142135623730955},
      {0.055000000000000007, 0.029999999999999999},
      {0.29999999999999999, 0.01585786437626905},
      {0.01, 0.01},
      {0.023180194846605363, 0.01585786437626905},
      {0.055000000000000021, 0.030000000000000006},
      {0.086819805153394686, 0.044142135623730969},
      {0.10000000000000006, 0.050000000000000024},
      {0.0868198051533947, 0.044142135623730976},
      {0.29999999999999999, 0.03000000000000002},
      {0.094939033455901434, 0.015857864376269071},
      {0.01, 0.01},
      {0.023180194846605363, 0.01585786437626905},
      {0.054999999999999924, 0.029999999999999964},
      {0.086819805153394491, 0.044142135623730885},
      {0.099999999999999881, 0.049999999999999947},
      {0.086819805153394519, 0.044142135623730899},
      {0.054999999999999959, 0.029999999999999978},
      {0.023180194846605391, 0.015857864376269064},
      {0.01, 0.01}}, "CosineAnnealingLR")

    -- past total_iters the lr stays where it was set
    o = sgd()
    s = optim.PolynomialLR(o, {total_iters = 6, power = 2.0})
    rows = {lrs(o)}
    for e = 0, 9 do
      s:step()
      if e == 2 or e == 7 then o.param_groups[2].lr = 0.02 end
      rows[#rows + 1] = lrs(o)
    end
    close(rows, {{0.10000000000000001, 0.050000000000000003},
      {0.069444444444444461, 0.034722222222222231},
      {0.044444444444444467, 0.022222222222222233},
      {0.025000000000000008, 0.02},
      {0.011111111111111117, 0.0088888888888888906},
      {0.0027777777777777775, 0.0022222222222222214},
      {0, 0},
      {0, 0},
      {0, 0.02},
      {0, 0.02},
      {0, 0.02}}, "PolynomialLR")
  end)

  it("StepLR with ReduceLROnPlateau: the plateau's cuts stay", function()
    local o = sgd()
    local s1 = optim.StepLR(o, {step_size = 3, gamma = 0.7})
    local s2 = optim.ReduceLROnPlateau(o, {patience = 1})
    local metrics = {5, 4, 4, 4, 3, 3, 3, 3, 3, 3}
    local rows = {lrs(o)}
    for e = 1, 10 do
      s1:step(); s2:step(metrics[e])
      rows[#rows + 1] = lrs(o)
    end
    close(rows, {{0.10000000000000001, 0.050000000000000003},
      {0.10000000000000001, 0.050000000000000003},
      {0.10000000000000001, 0.050000000000000003},
      {0.069999999999999993, 0.034999999999999996},
      {0.0069999999999999993, 0.0034999999999999996},
      {0.0069999999999999993, 0.0034999999999999996},
      {0.004899999999999999, 0.0024499999999999995},
      {0.00048999999999999988, 0.00024499999999999994},
      {0.00048999999999999988, 0.00024499999999999994},
      {3.4299999999999987e-05, 1.7149999999999993e-05},
      {3.4299999999999987e-05, 1.7149999999999993e-05}}, "StepLR + ReduceLROnPlateau")
  end)

  it("a scheduler made after another moved the lr starts from it", function()
    -- torch 1.13: ConstantLR(factor 0.5, 3 iters) then LinearLR(start 0.2, 4 iters) on one optimizer
    local o = sgd()
    local s1 = optim.ConstantLR(o, {factor = 0.5, total_iters = 3})
    local s2 = optim.LinearLR(o, {start_factor = 0.2, total_iters = 4})
    local rows = {lrs(o)}
    for _ = 1, 8 do
      s1:step(); s2:step()
      rows[#rows + 1] = lrs(o)
    end
    close(rows, {{0.010000000000000002, 0.005000000000000001},
      {0.020000000000000004, 0.010000000000000002},
      {0.030000000000000006, 0.015000000000000003},
      {0.080000000000000016, 0.040000000000000008},
      {0.10000000000000002, 0.05000000000000001},
      {0.10000000000000002, 0.05000000000000001},
      {0.10000000000000002, 0.05000000000000001},
      {0.10000000000000002, 0.05000000000000001},
      {0.10000000000000002, 0.05000000000000001}}, "ConstantLR then LinearLR")
  end)

  it("a jump of last_epoch goes back to the closed form (PyTorch's step(epoch))", function()
    local o = sgd()
    local s = optim.StepLR(o, {step_size = 2, gamma = 0.5})
    s:step()
    for _, g in ipairs(o.param_groups) do g.lr = 1.0 end
    s:step()
    local a = lrs(o)
    s.last_epoch = 5
    s:step()
    local b = lrs(o)
    s:step()
    close({a, b, lrs(o)},
      {{0.5, 0.5},
      {0.012500000000000001, 0.0062500000000000003},
      {0.012500000000000001, 0.0062500000000000003}}, "jump")
  end)

  it("ChainedScheduler and SequentialLR go on from a moved lr too (SequentialLR's next scheduler restarts)", function()
    -- torch 1.13: ChainedScheduler({ConstantLR(0.5, 3), ExponentialLR(0.9)}), group 1 set to 0.3 after step 1
    local o = sgd()
    local s = optim.ChainedScheduler({optim.ConstantLR(o, {factor = 0.5, total_iters = 3}),
      optim.ExponentialLR(o, {gamma = 0.9})})
    local rows = {}
    for e = 1, 6 do
      s:step()
      if e == 1 then o.param_groups[1].lr = 0.3 end
      rows[#rows + 1] = lrs(o)
    end
    close(rows, {{0.29999999999999999, 0.022500000000000003}, {0.27000000000000002, 0.020250000000000004},
      {0.48600000000000004, 0.03645000000000001}, {0.43740000000000007, 0.032805000000000008},
      {0.39366000000000007, 0.029524500000000009}, {0.35429400000000005, 0.02657205000000001}}, "ChainedScheduler")
    assert.are.same(rows[6], s.schedulers[2]:get_last_lr())
    -- torch 1.13: SequentialLR({LinearLR(0.1, 5), CosineAnnealingLR(20)}, {5}), group 2 set to 0.3
    -- after steps 2 and 6: LinearLR goes on from it, CosineAnnealingLR starts afresh at the milestone
    o = sgd()
    s = optim.SequentialLR(o, {schedulers = {optim.LinearLR(o, {start_factor = 0.1, total_iters = 5}),
      optim.CosineAnnealingLR(o, {T_max = 20})}, milestones = {5}})
    rows = {}
    for e = 1, 9 do
      s:step()
      if e == 2 or e == 6 then o.param_groups[2].lr = 0.3 end
      rows[#rows + 1] = lrs(o)
    end
    close(rows, {{0.028000000000000004, 0.014000000000000002}, {0.046000000000000006, 0.29999999999999999},
      {0.064000000000000001, 0.41739130434782606}, {0.082000000000000003, 0.5347826086956522},
      {0.10000000000000001, 0.050000000000000003}, {0.099384417029756894, 0.29999999999999999},
      {0.097552825814757688, 0.29447119195421512}, {0.094550326209418403, 0.28540790106292691},
      {0.090450849718747395, 0.27303329562721684}}, "SequentialLR")
  end)

  it("resume from state dicts and go on as PyTorch's (the followed groups keep the optimizer's lr)", function()
    -- torch 1.13: 7 steps (group 1's lr set to 0.3 after step 2), the optimizer's and the schedulers'
    -- state dicts loaded into new ones, 8 more steps
    local function mk()
      return optim.SGD({{params = {param()}}, {params = {param()}, lr = 0.05}}, {lr = 0.1})
    end
    local cases = {
      {function(o)
        return {optim.ExponentialLR(o, {gamma = 0.9}), optim.MultiStepLR(o, {milestones = {5, 12}, gamma = 0.1})}
       end,
       {{0.015943230000000003, 0.002152336050000001},
      {0.014348907000000003, 0.001937102445000001},
      {0.012914016300000003, 0.001743392200500001},
      {0.011622614670000003, 0.001569052980450001},
      {0.0010460353203000003, 0.0001412147682405001},
      {0.00094143178827000033, 0.00012709329141645011},
      {0.00084728860944300027, 0.00011438396227480509},
      {0.0007625597484987003, 0.00010294556604732458}}},
      {function(o) return {optim.StepLR(o, {step_size = 3, gamma = 0.5})} end,
       {{0.074999999999999997, 0.012500000000000001},
      {0.037499999999999999, 0.0062500000000000003},
      {0.037499999999999999, 0.0062500000000000003},
      {0.037499999999999999, 0.0062500000000000003},
      {0.018749999999999999, 0.0031250000000000002},
      {0.018749999999999999, 0.0031250000000000002},
      {0.018749999999999999, 0.0031250000000000002},
      {0.0093749999999999997, 0.0015625000000000001}}},
      {function(o)
        return {optim.ChainedScheduler({optim.ConstantLR(o, {factor = 0.5, total_iters = 9}),
          optim.ExponentialLR(o, {gamma = 0.9})})}
       end, {{0.15943230000000003, 0.010761680250000006},
      {0.28697814000000005, 0.01937102445000001},
      {0.25828032600000006, 0.017433922005000008},
      {0.23245229340000007, 0.015690529804500006},
      {0.20920706406000006, 0.014121476824050006},
      {0.18828635765400006, 0.012709329141645007},
      {0.16945772188860006, 0.011438396227480507},
      {0.15251194969974005, 0.010294556604732457}}},
    }
    for n, c in ipairs(cases) do
      local o = mk()
      local ss = c[1](o)
      for e = 1, 7 do
        for _, s in ipairs(ss) do s:step() end
        if e == 2 then o.param_groups[1].lr = 0.3 end
      end
      local osd, sds = o:state_dict(), {}
      for i, s in ipairs(ss) do sds[i] = s:state_dict() end
      assert.is_true(sds[#sds]._follow[1]) -- group 1 was set by hand
      local o2 = mk()
      local ss2 = c[1](o2)
      o2:load_state_dict(osd)
      for i, s in ipairs(ss2) do s:load_state_dict(sds[i]) end
      assert.are.same(ss[#ss]:get_last_lr(), ss2[#ss2]:get_last_lr())
      local rows = {}
      for _ = 1, 8 do
        for _, s in ipairs(ss2) do s:step() end
        rows[#rows + 1] = lrs(o2)
      end
      close(rows, c[2], "resume " .. n)
    end
  end)

  it("alone, a scheduler keeps the closed form of its settings (a new gamma applies to the whole formula)", function()
    local o = sgd()
    local s = optim.ExponentialLR(o, {gamma = 0.5})
    s:step(); s:step()
    s.gamma = 0.1
    s:step()
    assert.are.same({0.1 * 0.1 ^ 3, 0.05 * 0.1 ^ 3}, s:get_last_lr())
  end)
end)

describe("optimizers against torch 1.13 (float32)", function()
  local function near(actual, expected, tol, what)
    assert.are.equal(#expected, #actual, what)
    for i = 1, #expected do
      if not (math.abs(actual[i] - expected[i]) <= tol) then
        error(("%s: value %d: got %.9g, expected %.9g"):format(what, i, actual[i], expected[i]), 2)
      end
    end
  end

  it("step a non-contiguous parameter (a transposed leaf) in place", function()
    -- before: "SGD: parameter 1 is not contiguous" from every optimizer but Rprop and ASGD
    -- values from torch 1.13: w = tensor([[1,2,3],[4,5,6]]).t(), 8 steps of the gradients below
    local expected = {
      SGD = {-2.56088209, 2.36570144, -1.50936282, 3.05250406, -0.911133111, 4.47118855},
      Adam = {0.241523638, 3.38880348, 1.23785245, 4.35781384, 2.23927855, 5.59362221},
      RMSprop = {0.134485111, 3.43667912, 1.19270492, 4.42883158, 2.23799753, 5.59059477},
      Adagrad = {0.531399727, 3.69978333, 1.57416832, 4.6864171, 2.5931983, 5.75716114},
      Adadelta = {0.969421744, 3.98501372, 1.97453225, 4.98451042, 2.9764657, 5.97859859},
      Adamax = {0.445159614, 3.57848096, 1.43316925, 4.53989983, 2.41021752, 5.79634094},
      RAdam = {0.527886689, 3.73146176, 1.50208819, 4.6575532, 2.38877773, 5.82986307},
      AdamW = {0.236228213, 3.35910273, 1.22459686, 4.32028008, 2.21806002, 5.54656887},
    }
    local opts = {SGD = {lr = 0.1, momentum = 0.9, nesterov = true}, Adam = {lr = 0.1, amsgrad = true},
      RMSprop = {lr = 0.01, centered = true, momentum = 0.5}, Adagrad = {lr = 0.1}, Adadelta = {lr = 1.0},
      Adamax = {lr = 0.1}, RAdam = {lr = 0.1}, AdamW = {lr = 0.1}}
    for name, want in pairs(expected) do
      local w = pt.tensor({{1, 2, 3}, {4, 5, 6}}):t():detach()
      w.requires_grad = true
      assert.is_false(w:is_contiguous())
      local o = optim[name]({w}, opts[name])
      for k = 0, 7 do
        local g = {}
        for i = 0, 5 do g[i + 1] = 0.5 + 0.3 * ((k * 7 + i * 3) % 5) - 0.6 * (i % 2) end
        w.grad = pt.tensor(g):view(3, 2)
        o:step()
      end
      assert.is_false(w:is_contiguous()) -- the same tensor, updated in place
      near(w:reshape(-1):tolist(), want, 1e-6, name)
    end
  end)

  it("take 1 - beta (alpha, rho) in double, as PyTorch's scalars, not rounded from the float32 betas", function()
    -- before: (1 - b2) was computed in float32 (0.00099998713 for 0.999), 1.3e-5 off torch's
    -- 0.001: Adam on p = 2, g = 1, lr = 0.1 gave 1.7999987602 after 2 steps, torch 1.7999999523
    local p = pt.tensor(2.0)
    p.requires_grad = true
    local o = optim.Adam({p}, {lr = 0.1})
    for _ = 1, 2 do
      p.grad = pt.tensor(1.0)
      o:step()
    end
    near({p:item()}, {1.7999999523162842}, 0, "Adam, 2 steps")
    -- values from torch 1.13: p = {2, -1, 0.5}, grads {g, 0.3 g, -g} for the g below, 10 steps
    local G = {1.0, -0.5, 0.25, 2.0, 1.5, 0.75, -1.25, 0.5, 1.0, -2.0}
    local cases = {
      {"Adam", {lr = 0.1}, {1.47379577, -1.52620435, 1.02620411}},
      {"AdamW", {lr = 0.1}, {1.45655751, -1.51357758, 1.01855493}},
      {"RMSprop", {lr = 0.1}, {0.00771456957, -2.99228525, 2.49228573}},
      {"RMSprop", {lr = 0.1, centered = true}, {-0.0149925351, -3.014992, 2.51499271}},
      {"Adadelta", {lr = 1.0}, {1.99144673, -1.00855279, 0.508553088}},
      {"Adamax", {lr = 0.1}, {1.64303029, -1.35696971, 0.856969714}},
      {"RAdam", {lr = 0.1}, {1.68172514, -1.10104251, 0.818274915}},
    }
    for _, c in ipairs(cases) do
      local q = pt.tensor({2.0, -1.0, 0.5})
      q.requires_grad = true
      local opt = optim[c[1]]({q}, c[2])
      for _, g in ipairs(G) do
        q.grad = pt.tensor({g, g * 0.3, -g})
        opt:step()
      end
      -- a few float32 ulps (PyTorch's vectorised adds fuse the multiply)
      near(q:tolist(), c[3], 4e-7, c[1])
    end
  end)
end)

describe("optimizer construction", function()
  it("names a tensor listed twice in one group (not 'more than one parameter group')", function()
    -- torch 1.13 warns "optimizer contains a parameter group with duplicate parameters" and steps
    -- it twice; here it is an error that says what is wrong
    local a, b = param(), param()
    local ok, e = pcall(optim.SGD, {b, a, a}, {lr = 0.1})
    assert.is_false(ok)
    assert.matches("SGD: parameter group 1 lists the same tensor twice %(parameters 2 and 3%)$", e)
    ok, e = pcall(optim.Adam, {{params = {a}}, {params = {b, a}}})
    assert.is_false(ok)
    assert.matches("Adam: some parameters appear in more than one parameter group$", e)
    local o = optim.SGD({b}, {lr = 0.1})
    ok, e = pcall(o.add_param_group, o, {params = {a, a}})
    assert.is_false(ok)
    assert.matches("SGD:add_param_group: the group lists the same tensor twice %(parameters 1 and 2%)$", e)
    assert.are.equal(1, #o.param_groups)
  end)
end)

describe("Adagrad's initial_accumulator_value", function()
  it("is each group's own (torch 1.13 uses the constructor's for every group: a documented difference)", function()
    -- torch 1.13 with {{params = {a}}, {params = {b}, initial_accumulator_value = 1}} starts b's sum at 0
    -- (b = 0.9, 0.8293, 0.7716 below); here it starts at 1, as the group says
    local a = pt.tensor({1.0, 2.0}, {dtype = "float64"})
    local b = pt.tensor({1.0, 2.0}, {dtype = "float64"})
    a.requires_grad, b.requires_grad = true, true
    local o = optim.Adagrad({{params = {a}}, {params = {b}, initial_accumulator_value = 1.0}}, {lr = 0.1})
    local c = pt.tensor({1.0, 2.0}, {dtype = "float64"})
    c.requires_grad = true
    o:add_param_group({params = {c}, initial_accumulator_value = 4.0}) -- torch 1.13: KeyError 'sum' at the step
    local pa, pb, pc, sa, sb, sc = 1.0, 1.0, 1.0, 0.0, 1.0, 4.0
    for _ = 1, 3 do
      for _, p in ipairs({a, b, c}) do p.grad = pt.tensor({0.5, -0.5}, {dtype = "float64"}) end
      o:step()
      sa, sb, sc = sa + 0.25, sb + 0.25, sc + 0.25
      pa, pb, pc = pa - 0.1 * 0.5 / (math.sqrt(sa) + 1e-10), pb - 0.1 * 0.5 / (math.sqrt(sb) + 1e-10),
        pc - 0.1 * 0.5 / (math.sqrt(sc) + 1e-10)
    end
    assert.is_true(math.abs(a:tolist()[1] - pa) < 1e-15)
    assert.is_true(math.abs(b:tolist()[1] - pb) < 1e-15)
    assert.is_true(math.abs(c:tolist()[1] - pc) < 1e-15)
    assert.are.same({1.75, 1.75}, o.state[b].sum:tolist())
  end)
end)

describe("Optimizer:zero_grad", function()
  it("takes a gradient made with create_graph off its graph, as torch 1.13's detach_()", function()
    -- torch 1.13: (a*a).sum().backward(create_graph=True); opt.zero_grad(); (a*3).sum().backward()
    -- -> a.grad = [3., 3.], requires_grad False, no grad_fn (before: it kept grad_fn=<AddBackward>
    -- and requires_grad, and the next backward added onto that graph)
    local a = pt.tensor({1.0, 2.0})
    a.requires_grad = true
    local o = optim.SGD({a}, {lr = 0.1})
    local y = (a * a):sum()
    y:backward({create_graph = true})
    assert.is_true(a.grad.requires_grad)
    local g = a.grad
    o:zero_grad()
    assert.is_false(a.grad.requires_grad)
    assert.is_nil(a.grad.grad_fn)
    assert.are.same({0, 0}, a.grad:tolist())
    assert.is_false(g.requires_grad) -- in place: the tensor held before is the same gradient
    local y2 = (a * 3):sum()
    y2:backward()
    assert.are.same({3, 3}, a.grad:tolist())
    assert.is_false(a.grad.requires_grad)
    o:zero_grad({set_to_none = true})
    assert.is_nil(a.grad)
  end)
  it("Module:zero_grad does the same (torch 1.13's Module.zero_grad)", function()
    local m = pt.nn.Linear(2, 1)
    local x = pt.tensor({{1, 2}, {3, 4}}, {requires_grad = true})
    local y = (m(x) * m(x)):sum()
    y:backward({create_graph = true})
    assert.is_true(m.weight.grad.requires_grad)
    m:zero_grad()
    assert.is_false(m.weight.grad.requires_grad)
    assert.is_nil(m.weight.grad.grad_fn)
    assert.are.same({{0, 0}}, m.weight.grad:tolist())
    x.grad = nil -- its history refers to x (PyTorch's advice after create_graph)
  end)
end)

describe("LambdaLR", function()
  it("takes a list of one lr_lambda per parameter group, as PyTorch's docs example", function()
    -- before: "LambdaLR: lr_lambda must be a function, got table"
    -- torch 1.13: LambdaLR(opt, lr_lambda=[lambda e: e // 3 + 1, lambda e: 0.95 ** e]), get_last_lr()
    local o = sgd()
    local s = optim.LambdaLR(o, {function(e) return e // 3 + 1 end, function(e) return 0.95 ^ e end})
    local rows = {s:get_last_lr()}
    for _ = 1, 7 do
      s:step()
      rows[#rows + 1] = s:get_last_lr()
    end
    close(rows, {{0.10000000000000001, 0.050000000000000003}, {0.10000000000000001, 0.047500000000000001},
      {0.10000000000000001, 0.045124999999999998}, {0.20000000000000001, 0.042868749999999997},
      {0.20000000000000001, 0.040725312499999999}, {0.20000000000000001, 0.038689046874999994},
      {0.30000000000000004, 0.03675459453124999}, {0.30000000000000004, 0.034916864804687489}}, "LambdaLR list")
    assert.is_nil(s:state_dict().lr_lambda) -- the functions stay with the code
    local ok, e = pcall(optim.LambdaLR, sgd(), {function() return 1 end})
    assert.is_false(ok)
    assert.matches("LambdaLR: expected 2 lr_lambda functions %(one per parameter group%), got 1$", e)
    ok, e = pcall(optim.LambdaLR, sgd(), {function() return 1 end, 3})
    assert.is_false(ok)
    assert.matches("LambdaLR: lr_lambda%[2%] must be a function, got 3$", e)
  end)
end)

describe("sched:get_lr()", function()
  it("without arguments says what it takes (PyTorch's get_lr() takes none)", function()
    -- before: "attempt to perform arithmetic on a nil value (local 'base')" from inside optim.lua
    local o = sgd()
    for _, s in ipairs({optim.StepLR(o, {step_size = 2}), optim.CosineAnnealingLR(o, {T_max = 3}),
                        optim.OneCycleLR(o, {max_lr = 1, total_steps = 10})}) do
      local ok, e = pcall(s.get_lr, s)
      assert.is_false(ok)
      assert.matches(s.name .. ":get_lr: expected %(group, base_lr, epoch%), the lr of a parameter group at an epoch; "
        .. "sched:get_last_lr%(%) lists the lrs last set$", e)
    end
    assert.are.equal(0.1 * 0.1, optim.StepLR(sgd(), {step_size = 2}):get_lr(1, 0.1, 3))
  end)
end)

describe("Optimizer:step", function()
  it("reports an option of a group set by hand to a wrong type (it took the kernel's default or failed inside)", function()
    -- before: betas = {0.9} stepped with beta2 = 0.999 and momentum = nil with 0, silently; lr = "x" gave
    -- "option 'lr' must be a number, got string" without the optimizer's name (Rprop: "bad argument #1 to 'fill_'")
    local a = param()
    local function step_err(o, key, v)
      o.param_groups[1][key] = v
      a.grad = pt.ones(2)
      local ok, e = pcall(o.step, o)
      assert.is_false(ok)
      return e
    end
    assert.matches("Adam: option 'betas' must be a table of 2 numbers, got nil at index 2$",
      step_err(optim.Adam({a}), "betas", {0.9}))
    assert.matches("SGD: option 'momentum' must be a number, got nil$", step_err(optim.SGD({a}, {lr = 0.1}), "momentum", nil))
    assert.matches("Adam: option 'lr' must be a number, got string 'x'$", step_err(optim.Adam({a}), "lr", "x"))
    assert.matches("Rprop: option 'lr' must be a number, got string 'x'$", step_err(optim.Rprop({a}), "lr", "x"))
    assert.matches("SGD: option 'nesterov' must be a boolean, got number$", step_err(optim.SGD({a}, {lr = 0.1}), "nesterov", 1))
    -- values are not checked again (PyTorch's step takes a negative lr a scheduler set)
    local o = optim.SGD({a}, {lr = 0.1})
    o.param_groups[1].lr = -1
    a.grad = pt.ones(2)
    o:step()
    assert.are.same({1, 1}, a:tolist())
  end)
end)

describe("clip_grad_norm", function()
  it("scales an expanded gradient once (it was scaled once per element sharing a value)", function()
    -- before: z.grad = tensor{2}:expand(3), max_norm 1 gave 0.0481 (2 * (1/3.464)^3); now 2/sqrt(12).
    -- (torch 1.13 refuses to scale such a gradient in place: more than one element refers to one location)
    local z = param()
    z.grad = pt.tensor({2.0}):expand(2)
    local total = optim.clip_grad_norm({z}, 1.0)
    assert.is_true(math.abs(total - math.sqrt(8)) < 1e-6)
    for _, v in ipairs(z.grad:tolist()) do assert.is_true(math.abs(v - 2 / (math.sqrt(8) + 1e-6)) < 1e-6) end
    local w = pt.zeros(2, 3)
    w.requires_grad = true
    w.grad = pt.tensor({{1.0}, {2.0}}):expand(2, 3)
    total = optim.clip_grad_norm({w}, 1.0)
    assert.is_true(math.abs(total - math.sqrt(15)) < 1e-6)
    local g = w.grad:tolist()
    assert.is_true(math.abs(g[1][3] - 1 / math.sqrt(15)) < 1e-6 and math.abs(g[2][1] - 2 / math.sqrt(15)) < 1e-6)
    -- a transposed gradient: torch 1.13 gives 9.5393925 and q.grad[2][1] = 0.41931388
    local q = pt.zeros(2, 3)
    q.requires_grad = true
    q.grad = pt.tensor({{1.0, 4.0}, {2.0, 5.0}, {3.0, 6.0}}):t()
    total = optim.clip_grad_norm({q}, 1.0)
    assert.is_true(math.abs(total - 9.5393925) < 1e-5)
    assert.is_true(math.abs(q.grad:tolist()[2][1] - 0.41931388) < 1e-6)
  end)
end)

describe("clip_grad_norm's error_if_nonfinite and foreach (torch 1.13's keyword arguments)", function()
  local support = require "spec.support"
  it("error_if_nonfinite=true refuses a nan or inf total norm before touching a gradient", function()
    local w = pt.tensor({1, 2}, {requires_grad = true})
    w.grad = pt.tensor({0 / 0, 1})
    support.assert_error("clip_grad_norm: the total norm of order 2 of the gradients is nan, so it cannot be "
      .. "clipped (error_if_nonfinite = false scales them by it anyway)",
      function() optim.clip_grad_norm({w}, 1, {error_if_nonfinite = true}) end)
    assert.is_true(w.grad[1] ~= w.grad[1])
    assert.are.equal(1, w.grad[2])
    w.grad = pt.tensor({1 / 0, 1})
    support.assert_error("clip_grad_norm: the total norm of order inf of the gradients is inf, so it cannot be "
      .. "clipped (error_if_nonfinite = false scales them by it anyway)",
      function() optim.clip_grad_norm({w}, 1, {error_if_nonfinite = true, norm_type = "inf"}) end)
    assert.are.equal(1, w.grad[2])
    support.assert_error("clip_grad_norm: error_if_nonfinite must be a boolean, got number",
      function() optim.clip_grad_norm({w}, 1, {error_if_nonfinite = 1}) end)
  end)
  it("without it scales by the non-finite norm as torch (inf, 1 with max_norm 1: nan, 0); foreach is accepted", function()
    local w = pt.tensor({1, 2}, {requires_grad = true})
    w.grad = pt.tensor({1 / 0, 1})
    assert.are.equal(math.huge, optim.clip_grad_norm({w}, 1, {foreach = true}))
    assert.is_true(w.grad[1] ~= w.grad[1])
    assert.are.equal(0, w.grad[2])
    w.grad = pt.tensor({3, 4})
    assert.are.equal(5, optim.clip_grad_norm({w}, 10, {error_if_nonfinite = true}))
    assert.are.same({3, 4}, w.grad:tolist())
  end)
end)
