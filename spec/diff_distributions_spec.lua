-- pt.distributions against torch.distributions 1.13: cases found by differential testing.
-- Expected numbers are torch 1.13's (/usr/bin/python3), hard-coded next to the inputs that
-- produced them; Categorical values are 1-based here (torch's + 1).
local pt = require "partrain"
local support = require "spec.support"
local D = pt.distributions

local nan = 0 / 0

local function flat(v) return support.flat(pt.is_tensor(v) and v:tolist() or v) end

-- element by element: nan with nan, infinities exactly, else within tol (relative above 1)
local function close(got, want, tol)
  tol = tol or 1e-12
  local a, b = flat(got), flat(want)
  assert.are.equal(#b, #a, "number of elements")
  for i = 1, #b do
    local x, y = a[i], b[i]
    local ok
    if y ~= y then ok = x ~= x
    elseif y == math.huge or y == -math.huge then ok = x == y
    else ok = math.abs(x - y) <= tol * math.max(1, math.abs(y)) end
    if not ok then error(string.format("element %d: got %.17g, expected %.17g", i, x, y), 2) end
  end
end

local function f32(v) return pt.tensor(v, {dtype = "float32"}) end
local function f64(v) return pt.tensor(v, {dtype = "float64"}) end

describe("distributions: mixed dtypes as torch 1.13", function()
  it("MultivariateNormal.log_prob of a float64 value on a float32 distribution is float32", function()
    -- was: 'linalg.solve_triangular: expected tensors of the same dtype, got float32 and float64'
    local d = D.MultivariateNormal(f32 {0.5, 0.1}, f32 {{2, 0.5}, {0.5, 1}})
    local lp = d:log_prob(f64 {{0, 1}, {1, -1}})
    assert.are.equal("float32", lp:dtype())
    -- values from torch 1.13
    close(lp, {-2.7805418968200684, -3.037684917449951}, 1e-6)
  end)

  it("kl_divergence of MultivariateNormals of different dtypes is float64", function()
    local p = D.MultivariateNormal(f32 {0.5, 0.1}, f32 {{2, 0.5}, {0.5, 1}})
    local q = D.MultivariateNormal(f64 {0, 1}, f64 {{1, 0.2}, {0.2, 3}})
    local kpq, kqp = D.kl_divergence(p, q), D.kl_divergence(q, p)
    assert.are.equal("float64", kpq:dtype())
    assert.are.equal("float64", kqp:dtype())
    -- values from torch 1.13 (p's float32 parameters limit the agreement)
    close(kpq, 0.7053542801424534, 1e-6)
    close(kqp, 1.3429273439718927, 1e-6)
  end)

  it("Gamma.log_prob takes the value in the distribution's dtype", function()
    local lp = D.Gamma(f32 {0.5, 2}, f32 {1.5, 1}):log_prob(f64 {0.3, 2.5})
    assert.are.equal("float32", lp:dtype())
    -- values from torch 1.13
    close(lp, {-0.21764597296714783, -1.5837092399597168}, 1e-6)
  end)
end)

describe("distributions: gradients as torch 1.13", function()
  it("Dirichlet.mode: no nan gradient into concentrations below 1", function()
    -- rows: one above 1, all below 1 (torch's one-hot), one at 1 and one below (0 / 0)
    local c = f64 {{2.5, 1}, {0.5, 0.3}, {1, 0.3}}
    c.requires_grad = true
    local m = D.Dirichlet(c).mode
    local w = f64 {{1, 2}, {3, 4}, {5, 6}}
    pt.nansum(m * w):backward()
    -- values from torch 1.13: the gradient was nan at [2][1], [2][2] and [3][2]
    close(m, {{1, 0}, {1, 0}, {nan, nan}})
    close(c.grad, {{0, 2 / 3}, {0, 0}, {nan, 0}})
  end)

  it("Beta.mode: the gradient w.r.t. a concentration below 1 is 0", function()
    local a, b = f64 {0.5, 1, 2}, f64 {1.5, 0.3, 2}
    a.requires_grad, b.requires_grad = true, true
    local m = D.Beta(a, b).mode
    pt.nansum(m):backward()
    -- values from torch 1.13
    close(m, {0, nan, 0.5})
    close(a.grad, {0, nan, 0.25})
    close(b.grad, {0, 0, -0.25})
  end)
end)

describe("kl_divergence: pairs of different families as torch 1.13", function()
  -- were all 'kl_divergence: no KL(p || q) is registered for p of type ... and q of type ...'
  local a, b = f64 {-0.5, 0.2, 1.5}, f64 {0.5, 1.0, 2.5}
  local c, d = f64 {0.0, -1.0, 0.3}, f64 {1.5, 0.7, 3.0}
  local fam = {
    Normal = function(x, y) return D.Normal(x, y) end,
    Laplace = function(x, y) return D.Laplace(x, y) end,
    Exponential = function(_, y) return D.Exponential(y) end,
    Gamma = function(x, y) return D.Gamma(y, x:abs() + 0.5) end,
    Beta = function(x, y) return D.Beta(y, x:abs() + 0.5) end,
    Uniform = function(x, y) return D.Uniform(x, x + y) end,
    Bernoulli = function(_, y) return D.Bernoulli(y / 4) end,
    Poisson = function(_, y) return D.Poisson(y) end,
  }
  local inf = math.huge
  -- values from torch 1.13: kl_divergence(fam[P](a, b), fam[Q](c, d)) (Uniform || Beta with
  -- a, b = {0.1, 0.2, 0.5}, {0.5, 0.3, 0.2}; Uniform || Exponential, Gamma with a = {0.1, -0.2, 1.5})
  local KL = {
    {"Bernoulli", "Poisson", {1.0725467002300428, 0.22683359136587466, 1.651804081424449}},
    {"Beta", "Exponential", {0.4013877113318899, 0.8403361344537814, 0.7424500585355902}},
    {"Beta", "Gamma", {2.392458019311393, 0.6955620347326101, 3.3528465309126236}},
    {"Beta", "Normal", {1.675700905197336, 3.2996707226025626, 2.1980688368654837}},
    {"Beta", "Uniform", {0.7123179275482187, inf, inf}},
    {"Exponential", "Gamma", {0.1678255948155214, 0.30387697138549186, 4.585881359928105}},
    {"Exponential", "Normal", {1.4090342385306696, 4.664304405592471, 1.9432859981913817}},
    {"Gamma", "Exponential", {0.2539249619778471, 0.0, 1.614586982386781}},
    {"Gamma", "Normal", {1.4004603780655152, 7.306379982270151, 1.0656112040387842}},
    {"Laplace", "Normal", {0.4910703079795038, 2.3793204903386487, 0.18255735388312644}},
    {"Normal", "Laplace", {0.7616979164151733, 0.792112134037006, 0.19659346111291087}},
    {"Uniform", "Beta", {1.4926585794672085, 1.1423264232575578, 1.7539295180141872}},
    {"Uniform", "Exponential", {0.8126820724517808, inf, 6.235096979457735}},
    {"Uniform", "Gamma", {2.3633225787248078, inf, 0.6967032767745669}},
    {"Uniform", "Normal", {2.036069340391301, 3.5962771947081174, 1.4636674974060349}},
  }

  it("values of the closed forms", function()
    for _, row in ipairs(KL) do
      local P, Q, want = row[1], row[2], row[3]
      local pa, pb = a, b
      if P == "Uniform" and Q == "Beta" then
        pa, pb = f64 {0.1, 0.2, 0.5}, f64 {0.5, 0.3, 0.2}
      elseif P == "Uniform" and (Q == "Exponential" or Q == "Gamma") then
        pa = f64 {0.1, -0.2, 1.5}
      end
      local got = D.kl_divergence(fam[P](pa, pb), fam[Q](c, d))
      local ok, err = pcall(close, got, want, 1e-12)
      assert(ok, P .. " || " .. Q .. ": " .. tostring(err))
    end
  end)

  it("gradients flow to both distributions (Normal || Laplace)", function()
    local ga, gb, gc, gd = a:clone(), b:clone(), c:clone(), d:clone()
    for _, t in ipairs {ga, gb, gc, gd} do t.requires_grad = true end
    D.kl_divergence(D.Normal(ga, gb), D.Laplace(gc, gd)):sum():backward()
    -- values from torch 1.13
    close(ga.grad, {-0.4551263280913906, 1.0998009422236907, 0.12292420232251827})
    close(gb.grad, {-1.6773723673078087, -0.4451827000479628, -0.16297831432933527})
    close(gc.grad, {0.4551263280913906, -1.0998009422236907, -0.12292420232251827})
    close(gd.grad, {0.40741534640547267, -1.249397758029237, 0.08664558101210543})
  end)

  it("q's support missing part of p's: infinite, of p's parameter's shape and dtype", function()
    local k = D.kl_divergence(D.Normal(f32 {0, 1, 2}, 1), D.Uniform(pt.zeros {2, 3}, 1))
    assert.are.same({3}, k:size())
    assert.are.equal("float32", k:dtype())
    close(k, {inf, inf, inf})
    close(D.kl_divergence(D.Poisson(f64 {1, 2}), D.Binomial(3, f32(0.5))), {inf, inf})
    close(D.kl_divergence(D.Laplace(0, 1), D.Exponential(1)), inf)
    close(D.kl_divergence(D.Gamma(1, 1), D.Beta(1, 1)), inf)
    close(D.kl_divergence(D.Exponential(1), D.Uniform(0, 1)), inf)
    close(D.kl_divergence(D.Poisson(2), D.Bernoulli(0.5)), inf)
  end)

  it("pairs torch does not register still raise", function()
    local msg = support.errmsg(D.kl_divergence, D.LogNormal(0, 1), D.Normal(0, 1))
    assert.truthy(msg:find("kl_divergence: no KL(p || q) is registered for p of type LogNormal and q of type Normal", 1, true))
  end)
end)

describe("random sampling as torch 1.13", function()
  it("t:bernoulli_(p) takes a tensor of probabilities broadcast to t's shape", function()
    -- was: "bad argument #1 to 'bernoulli_' (number expected, got Tensor)"
    pt.manual_seed(5)
    -- torch.zeros(2, 3).bernoulli_(torch.tensor([0., 1., 1.])) (torch 1.13): [[0, 1, 1], [0, 1, 1]]
    local t = pt.zeros {2, 3}
    assert.are.equal(t, t:bernoulli_(f32 {0, 1, 1}))
    assert.are.same({{0, 1, 1}, {0, 1, 1}}, t:tolist())
    local i = pt.zeros({2, 3}, {dtype = "int64"}):bernoulli_(f64 {{0}, {1}})
    assert.are.equal("int64", i:dtype())
    assert.are.same({{0, 0, 0}, {1, 1, 1}}, i:tolist())
    -- a transposed target and per-row probabilities: the row means (fixed seed, 5000 draws each)
    local y = pt.zeros {4, 5000}
    y:t():bernoulli_(f32 {0.1, 0.5, 0.9, 0})
    close(y:mean(2), {0.1, 0.5, 0.9, 0}, 0.03)
    -- p the tensor itself
    local x = pt.full({20000}, 0.3)
    x:bernoulli_(x)
    close(x:mean(), 0.3, 0.02)
    support.assert_error("bernoulli_: p of shape {2} does not broadcast to the tensor's shape {2,3}",
      function() return pt.zeros {2, 3}:bernoulli_(f32 {0, 1}) end)
    support.assert_error("bernoulli_: p must be in [0, 1], got 1.5 at element 2",
      function() return pt.zeros {3}:bernoulli_(f32 {0, 1.5, 1}) end)
    support.assert_error("bernoulli_: p must be a float32 or float64 tensor, got int64",
      function() return pt.zeros {3}:bernoulli_(pt.tensor({0, 1, 1}, {dtype = "int64"})) end)
  end)
end)

describe("Cauchy, Gumbel and Geometric as torch 1.13", function()
  -- values from torch 1.13 (float64): Cauchy/Gumbel(loc, scale) with loc {0.5, -1, 2}, scale {1.5, 0.3, 2}
  -- at value {-1, 0.3, 5} and p {0.1, 0.5, 0.97}; Geometric(probs {0.25, 0.5, 1}) at {0, 3, 0} and
  -- Geometric{logits = {-2, 0, 3}}
  local REF = {
    cauchy = {log_prob = {-2.24334217451751, -2.92531605447933, -3.0165320627509917}, cdf = {0.25, 0.9278076844893528, 0.8128329581890013}, icdf = {-4.116525305762879, -1.0, 23.157789986811228}, entropy = {2.9364893550774553, 1.3270514426433546, 3.224171427529236}, mode = {0.5, -1.0, 2.0}},
    gumbel = {log_prob = {-2.1237469365672093, -3.1424842577443393, -2.4162773407083753}, cdf = {0.06598803584531254, 0.9869620119022326, 0.8000107130043538}, icdf = {-0.7510486678719341, -0.8900461238255009, 8.982733900167556}, entropy = {1.9826807730096971, 0.37324286057559664, 2.270362845461478}, mode = {0.5, -1.0, 2.0}, mean = {1.3658234973522994, -0.8268353005295401, 3.1544313298030655}, variance = {3.7011016504085092, 0.14804406601634038, 6.579736267392906}, stddev = {1.9238247452427961, 0.38476494904855923, 2.565099660323728}},
    geometric = {log_prob = {-1.3862943611198906, -2.772588722239781, 0.0}, entropy = {2.2493405784752336, 1.3862943611198906, 2.2204460492503128e-16}, mean = {3.0, 1.0, 0.0}, variance = {12.0, 2.0, 0.0}, logits = {-1.0986122886681096, 0.0, 36.04365338911715}},
    geometric_logits = {log_prob = {-2.1269280110429727, -2.772588722239781, -0.04858735157374191}, entropy = {3.0648062051651865, 1.3862943611198906, 0.20036757847194864}, mean = {7.38905609893065, 1.0, 0.04978706836786384}, probs = {0.11920292202211755, 0.5, 0.9525741268224334}},
  }
  local loc, scale = f64 {0.5, -1.0, 2.0}, f64 {1.5, 0.3, 2.0}
  local value, p = f64 {-1.0, 0.3, 5.0}, f64 {0.1, 0.5, 0.97}

  local function check(d, ref, v)
    for k, want in pairs(ref) do
      local got
      if k == "log_prob" or k == "cdf" then got = d[k](d, v)
      elseif k == "icdf" then got = d:icdf(p)
      elseif k == "entropy" then got = d:entropy()
      else got = d[k] end
      local ok, err = pcall(close, got, want, 1e-12)
      assert(ok, k .. ": " .. tostring(err))
    end
  end

  it("values", function()
    check(D.Cauchy(loc, scale), REF.cauchy, value)
    check(D.Gumbel(loc, scale), REF.gumbel, value)
    check(D.Geometric(f64 {0.25, 0.5, 1.0}), REF.geometric, f64 {0, 3, 0})
    check(D.Geometric {logits = f64 {-2, 0, 3}}, REF.geometric_logits, f64 {0, 3, 0})
    local c = D.Cauchy(0, 1)
    close(c.mean, nan)
    close(c.variance, math.huge)
  end)

  it("gradients", function()
    local l, s = loc:clone(), scale:clone()
    l.requires_grad, s.requires_grad = true, true
    D.Gumbel(l, s):log_prob(value):sum():backward()
    -- values from torch 1.13
    close(l.grad, {-1.1455212189726967, 3.2895875708768636, 0.3884349199257851})
    close(s.grad, {0.47885455230603, 10.92154614046641, 0.08265237988867769})
    l, s = loc:clone(), scale:clone()
    l.requires_grad, s.requires_grad = true, true
    D.Cauchy(l, s):cdf(value):sum():backward()
    close(l.grad, {-0.1061032953945969, -0.05364773362648157, -0.04897075172058318})
    close(s.grad, {0.1061032953945969, -0.23247351238142017, -0.07345612758087477})
    local g = f64 {0.25, 0.5}
    g.requires_grad = true
    D.Geometric(g):log_prob(f64 {1, 3}):sum():backward()
    close(g.grad, {2.666666666666667, -4.0})
    -- rsample: d x / d loc = 1, d x / d scale = (x - loc) / scale
    pt.manual_seed(2)
    l, s = loc:clone(), scale:clone()
    l.requires_grad, s.requires_grad = true, true
    local x = D.Gumbel(l, s):rsample({50})
    x:sum():backward()
    close(l.grad, {50, 50, 50})
    close(s.grad, ((x:detach() - loc) / scale):sum(1), 1e-10)
  end)

  it("kl_divergence pairs", function()
    local a, b = f64 {-0.5, 0.2, 1.5}, f64 {0.5, 1.0, 2.5}
    local c, d = f64 {0.0, -1.0, 0.3}, f64 {1.5, 0.7, 3.0}
    -- values from torch 1.13
    close(D.kl_divergence(D.Gumbel(a, b), D.Gumbel(c, d)), {0.6267218137604398, 0.8329539944247224, 0.11665942418740549})
    close(D.kl_divergence(D.Geometric(b / 4), D.Geometric(d / 4)), {1.256693367680381, 0.07074440452575748, 0.06095750807094391})
    close(D.kl_divergence(D.Exponential(b), D.Gumbel(c, d)), {0.47422268945298107, 1.5991477517389736, 2.023387163942346})
    close(D.kl_divergence(D.Gamma(b, a:abs() + 0.5), D.Gumbel(c, d)), {1.4227851807689924, 1.8348492818933484, 1.1302092506138846})
    close(D.kl_divergence(D.Gumbel(a, b), D.Normal(c, d)), {0.5416507492408535, 3.8865066860170865, 0.4832940879309202})
    close(D.kl_divergence(D.Normal(a, b), D.Gumbel(c, d)), {0.821681037620726, 0.4383071852398688, 0.11197381060399003})
    close(D.kl_divergence(D.Uniform(a, a + b), D.Gumbel(c, d)), {2.118782897259712, 2.167749586653246, 1.4537884093432232})
    close(D.kl_divergence(D.Gumbel(a, b), D.Uniform(c, c + d)), {math.huge, math.huge, math.huge})
  end)

  it("shapes, sample statistics and validation", function()
    pt.manual_seed(4)
    local g = D.Gumbel(pt.zeros {3, 1}, pt.ones {2} * 0.5)
    assert.are.same({3, 2}, g.batch_shape)
    assert.are.same({4, 3, 2}, g:sample({4}):size())
    assert.are.same({5, 3, 2}, g:expand({5, 3, 2}):log_prob(f32 {1, 2}):size())
    assert.are.same({4, 3, 1}, D.Geometric(pt.ones {3, 1} * 0.5):sample({4}):size())
    -- moments over 40000 draws (fixed seed, generous tolerances)
    local gs = D.Gumbel(f64 {0.5, -1}, f64 {2, 0.3}):sample({40000})
    close(gs:mean(1), {0.5 + 2 * 0.5772156649015329, -1 + 0.3 * 0.5772156649015329}, 0.05)
    local geo = D.Geometric(f64 {0.2, 0.9, 1.0}):sample({40000})
    close(geo:mean(1), {4, 1 / 9, 0}, 0.1)
    assert.are.equal(0, geo:min():item())
    local cs = D.Cauchy(f32 {0.5}, f32 {2}):sample({40000})
    close(cs:median(), 0.5, 0.1)
    support.assert_error("Cauchy: scale must be positive (> 0), got -1", D.Cauchy, 0, -1)
    support.assert_error("Gumbel: scale must be positive (> 0), got 0", D.Gumbel, 0, 0)
    support.assert_error("Geometric: probs must be positive (> 0), got 0", D.Geometric, f32(0))
    support.assert_error("Geometric.log_prob: value 0.5 is outside the support (a non-negative integer)",
      function() return D.Geometric(f32(0.3)):log_prob(f32(0.5)) end)
  end)
end)

describe("MixtureSameFamily as torch 1.13", function()
  it("log_prob, cdf, mean, variance and their gradients", function()
    local w, m, s = f64 {0.2, 0.5, 0.3}, f64 {-1, 0.5, 2}, f64 {0.5, 1, 0.3}
    for _, t in ipairs {w, m, s} do t.requires_grad = true end
    local d = D.MixtureSameFamily(D.Categorical(w), D.Normal(m, s))
    local lp = d:log_prob(f64 {-1, 0, 2.5})
    lp:sum():backward()
    -- values from torch 1.13
    close(lp, {-1.4946116437368877, -1.621363489916592, -2.0677294206966725})
    close(w.grad, {1.1030412154469036, -0.21431803550995887, -0.3781640844480042})
    close(m.grad, {0.43710955685706265, -0.45146657278416613, 4.369726513395265})
    close(s.grad, {-0.766997370442284, 0.33314215200805375, 4.661041690271631})
    close(d:cdf(f64 {-1, 0, 2.5}), {0.13340360063442905, 0.3497187429772828, 0.9742878283438101})
    close(d.mean, 0.6499999999999999)
    close(d.variance, 1.6795)
  end)

  it("batches and event dims (Independent components)", function()
    local d = D.MixtureSameFamily(D.Categorical(f64 {{0.2, 0.8}, {0.6, 0.4}}),
      D.Independent(D.Normal(f64 {{{0, 1}, {2, -1}}, {{1, 1}, {0, 0}}}, 0.7), 1))
    assert.are.same({2}, d.batch_shape)
    assert.are.same({2}, d.event_shape)
    -- values from torch 1.13
    close(d:log_prob(f64 {{{0.5, 0.5}, {1, 0}}, {{2, 2}, {0, -1}}}),
      {{-3.178831405385355, -2.1449353417971873}, {-7.770668140079234, -3.036221484167234}})
    close(d.mean, {{1.6, -0.6000000000000001}, {0.6, 0.6}})
    close(d.variance, {{1.1300000000000001, 1.1300000000000001}, {0.7299999999999999, 0.7299999999999999}})
    assert.are.same({5, 2, 2}, d:sample({5}):size())
    assert.are.same({4, 3, 2, 2}, d:expand({3, 2}):sample({4}):size())
  end)

  it("samples come from the drawn component", function()
    pt.manual_seed(9)
    local d = D.MixtureSameFamily(D.Categorical(f32 {{0.2, 0.8}, {0.6, 0.4}}), D.Normal(f32 {{-10, 10}, {100, 200}}, 0.1))
    local x = d:sample({20000})
    close(x:select(2, 1):gt(0):double():mean(), 0.8, 0.02)
    close(x:select(2, 2):gt(150):double():mean(), 0.4, 0.02)
    -- every draw is within 1 of a component mean
    local near = (x:select(2, 1):abs() - 10):abs():lt(1) & ((x:select(2, 2) - 150):abs() - 50):abs():lt(1)
    assert.is_true(near:all():item())
  end)

  it("argument errors", function()
    support.assert_error("MixtureSameFamily: mixture_distribution must be a Categorical, got Normal",
      D.MixtureSameFamily, D.Normal(0, 1), D.Normal(pt.zeros {3}, 1))
    support.assert_error("MixtureSameFamily: mixture_distribution has 2 components, component_distribution.batch_shape[-1] is 3",
      D.MixtureSameFamily, D.Categorical(f32 {0.2, 0.8}), D.Normal(pt.zeros {3}, 1))
    support.assert_error("MixtureSameFamily: mixture_distribution.batch_shape {4} is not compatible with component_distribution.batch_shape {2,3}",
      D.MixtureSameFamily, D.Categorical(pt.ones {4, 3}), D.Normal(pt.zeros {2, 3}, 1))
    support.assert_error("MixtureSameFamily: component_distribution must be a distribution, got number",
      D.MixtureSameFamily, D.Categorical(pt.ones {3}), 5)
  end)
end)

describe("StudentT and HalfNormal as torch 1.13", function()
  it("StudentT values and gradients", function()
    local df, loc, sc = f64 {0.5, 1, 1.5, 2, 3, 30}, f64 {0, 1, -1, 0.5, 2, 0}, f64 {1, 0.5, 2, 1, 0.3, 1.5}
    for _, t in ipairs {df, loc, sc} do t.requires_grad = true end
    local d = D.StudentT(df, loc, sc)
    local lp = d:log_prob(f64 {0.3, -2, 5, 0.5, 2.1, -1})
    lp:sum():backward()
    -- values from torch 1.13
    close(lp, {-1.4346687547696895, -4.062500617933679, -4.202185151710978, -1.0397207708399179, 0.1303486663606765, -1.5606807180272892})
    close(df.grad, {0.7168526668781441, -0.6393388027891941, -0.16279902037017246, 0.05685281944005449, 0.03210621561736515, 0.0004671291786972308})
    close(loc.grad, {0.7627118644067797, -0.6486486486486487, 0.35714285714285715, 0.0, 1.4285714285714297, -0.4525547445255474})
    close(sc.grad, {-0.771186440677966, 1.891891891891892, 0.5714285714285714, -1.0, -2.8571428571428563, -0.36496350364963503})
    close(d:entropy(), {3.666727416103855, 1.8378770664093453, 2.8428066484045944, 1.9602792291600817, 0.5695047675373557, 1.8580084378953705})
    close(d.mean, {nan, nan, -1.0, 0.5, 2.0, 0.0})
    local var = d.variance
    close(var, {nan, nan, math.huge, math.huge, 0.27, 2.4107142857142856})
    df.grad, sc.grad = nil, nil
    var:masked_select(var:isfinite()):sum():backward()
    -- no nan from the masked branches
    close(df.grad, {0, 0, 0, 0, -0.18000000000000002, -0.005739795918367346})
    close(sc.grad, {0, 0, 0, 0, 1.7999999999999998, 3.2142857142857144})
  end)

  it("StudentT defaults, shapes, rsample and validation", function()
    -- torch 1.13: StudentT(3).log_prob([0, 1]) and StudentT(3, scale=2)
    close(D.StudentT(3):log_prob(f32 {0, 1}), {-1.0008888244628906, -1.5762529373168945}, 1e-6)
    close(D.StudentT(3, {scale = 2}):log_prob(f32 {0, 1}), {-1.6940360069274902, -1.854121446609497}, 1e-6)
    assert.are.same({4, 3, 2}, D.StudentT(pt.ones {3, 1}, pt.zeros {2}):sample({4}):size())
    pt.manual_seed(12)
    local d = D.StudentT(f64 {5, 30}, f64 {1, -1}, f64 {2, 0.5})
    local s = d:sample({100000})
    close(s:var(1), {5 / 3 * 4, 0.25 * 30 / 28}, 0.03)
    -- d E[x^2] / d scale = 2 scale df / (df - 2), by reparameterization (Gamma's implicit gradient)
    local sc = f64 {2, 0.5}
    sc.requires_grad = true
    D.StudentT(f64 {5, 30}, 0, sc):rsample({100000}):pow(2):mean(1):sum():backward()
    close(sc.grad, {20 / 3, 30 / 28}, 0.03)
    support.assert_error("StudentT: df must be positive (> 0), got -1", D.StudentT, -1)
    support.assert_error("StudentT: scale must be positive (> 0), got -1", D.StudentT, 1, 0, -1)
  end)

  it("HalfNormal", function()
    local s = f64 {0.5, 1, 2}
    s.requires_grad = true
    local h = D.HalfNormal(s)
    local lp = h:log_prob(f64 {0.3, 0, 5})
    lp:sum():backward()
    -- values from torch 1.13
    close(lp, {0.28735582791521785, -0.22579135264472738, -4.043938533204672})
    close(s.grad, {-1.28, -1.0, 2.625})
    close(h:cdf(f64 {0.3, 0, 5}), {0.4514937644998529, 0.0, 0.9875806693484477})
    close(h:icdf(f64 {0.1, 0.5, 0.9}), {0.06283067342753708, 0.6744897501960818, 3.2897072539029444})
    close(h:entropy(), {0.0326441720847821, 0.7257913526447274, 1.4189385332046727})
    close(h.mean, {0.3989422804014327, 0.7978845608028654, 1.5957691216057308})
    close(h.variance, {0.09084505690810465, 0.3633802276324186, 1.4535209105296745})
    close(D.kl_divergence(D.HalfNormal(f64 {1, 2}), D.HalfNormal(f64 {0.5, 3})), {0.8068528194400547, 0.1276873303303866})
    close(D.HalfNormal(1, {validate_args = false}):log_prob(f32 {-1, 0, 1}), {-math.huge, -0.2257913, -0.7257913}, 1e-6)
    support.assert_error("HalfNormal.log_prob: value -1 is outside the support (non-negative (>= 0))",
      function() return D.HalfNormal(1):log_prob(f32(-1)) end)
    support.assert_error("HalfNormal: scale must be positive (> 0), got -1", D.HalfNormal, -1)
    pt.manual_seed(3)
    local x = D.HalfNormal(f32 {1, 3}):expand({2, 2}):sample({50000})
    assert.are.same({50000, 2, 2}, x:size())
    assert.is_true(x:min():item() >= 0)
    close(x:mean(1), {{0.7978845, 2.3936537}, {0.7978845, 2.3936537}}, 0.02)
  end)
end)

describe("Multinomial as torch 1.13", function()
  it("log_prob, entropy and their gradients", function()
    local p = f64 {{0.2, 0.5, 0.3}, {0.1, 0.1, 0.8}}
    p.requires_grad = true
    local d = D.Multinomial(5, p)
    local lp = d:log_prob(f64 {{1, 2, 2}, {0, 0, 5}})
    lp:sum():backward()
    -- values from torch 1.13
    close(lp, {-2.002480500543708, -1.1157177565710485})
    close(p.grad, {{0.0, -1.0, 1.666666666666667}, {-5.0, -5.0, 1.25}})
    p = f64 {{0.2, 0.5, 0.3}, {0.1, 0.1, 0.8}}
    p.requires_grad = true
    d = D.Multinomial(5, p)
    local e = d:entropy()
    e:sum():backward()
    -- (torch takes log n! in float32: lgamma of an int64 tensor; ours is float64, hence 1e-7)
    close(e, {2.5918085406526656, 1.8136484785872264}, 1e-7)
    close(p.grad, {{1.2399977720217557, -0.6329274163675525, 0.22821384593141758}, {3.7062562625687363, 3.7062562625687363, -0.9265640656421841}})
    close(d.mean, {{1, 2.5, 1.5}, {0.5, 0.5, 4}})
    -- a zero count of an impossible category adds nothing
    close(D.Multinomial(3, {logits = f32 {-math.huge, 0, 1}}):log_prob(f32 {0, 1, 2}), -0.8411725759506226, 1e-6)
  end)

  it("samples: shapes, counts summing to total_count, means", function()
    pt.manual_seed(8)
    local d = D.Multinomial(7, f64 {{0.2, 0.5, 0.3}, {0.6, 0.4, 0}})
    assert.are.same({2}, d.batch_shape)
    assert.are.same({3}, d.event_shape)
    local x = d:sample({20000})
    assert.are.same({20000, 2, 3}, x:size())
    assert.are.equal("float64", x:dtype())
    assert.is_true(x:sum(-1):eq(7):all():item())
    close(x:mean(1), {{1.4, 3.5, 2.1}, {4.2, 2.8, 0}}, 0.02)
    assert.are.same({4, 5, 3}, D.Multinomial(2, f32 {0.5, 0.5, 0}):expand({5}):sample({4}):size())
  end)

  it("validation", function()
    support.assert_error("Multinomial: total_count must be a non-negative integer (one for every batch element), got 2.5",
      D.Multinomial, 2.5, f32 {0.5, 0.5})
    support.assert_error("Multinomial.log_prob: value is outside the support (non-negative counts summing to at most 3 along the last dim)",
      function() return D.Multinomial(3, f32 {0.5, 0.5}):log_prob(f32 {3, 1}) end)
  end)
end)

describe("RelaxedBernoulli and RelaxedOneHotCategorical as torch 1.13", function()
  it("log_prob and its gradients", function()
    local t, p = f64(0.5), f64 {0.2, 0.5, 0.9}
    t.requires_grad, p.requires_grad = true, true
    local lp = D.RelaxedBernoulli(t, p):log_prob(f64 {0.1, 0.5, 0.99})
    lp:sum():backward()
    -- values from torch 1.13
    close(lp, {0.3078847797693003, -0.6931471805599452, 2.5332632396626154})
    close(t.grad, 6.083555952819559, 1e-10)
    close(p.grad, {0.8928571428571439, 0.0, 0.5569514325977818}, 1e-10)
    t = f64(2)
    local l = f64 {{0.2, 0.5, 0.3}, {0.6, 0.3, 0.1}}
    t.requires_grad, l.requires_grad = true, true
    lp = D.RelaxedOneHotCategorical(t, {logits = l}):log_prob(f64 {{0.1, 0.3, 0.6}, {0.98, 0.01, 0.01}})
    lp:sum():backward()
    close(lp, {0.21780101228312398, 0.4454012240881404})
    close(t.grad, -4.915836648696047, 1e-10)
    close(l.grad, {{-1.5409010878252103, 0.618904698602188, 0.9219963892230224}, {0.9997681775579227, -0.6493745280774398, -0.3503936494804829}}, 1e-10)
    -- the values 0 and 1 are clamped to [tiny, 1 - eps] (torch's SigmoidTransform), float32
    close(D.RelaxedBernoulli(0.5, f32(0.5)):log_prob(f32 {0, 1}), {42.975128173828125, 7.277355194091797}, 1e-6)
  end)

  it("samples, shapes and validation", function()
    pt.manual_seed(5)
    -- a small temperature: draws near 0 or 1 with the Bernoulli's frequencies
    local s = D.RelaxedBernoulli(0.05, f32 {0.2, 0.7}):sample({20000})
    close(s:mean(1), {0.2, 0.7}, 0.02)
    assert.is_true(s:min():item() > 0 and s:max():item() <= 1)
    local x = D.RelaxedOneHotCategorical(0.5, f64 {0.2, 0.5, 0.3}):sample({1000})
    close(x:sum(-1), pt.ones({1000}, {dtype = "float64"}), 1e-12)
    assert.are.same({4, 2, 3}, D.RelaxedBernoulli(0.5, pt.ones {2, 3} * 0.3):rsample({4}):size())
    assert.are.same({5, 2, 3}, D.RelaxedOneHotCategorical(0.5, pt.ones {2, 3}):expand({5, 2}):sample():size())
    -- rsample is differentiable in the logits
    local l = f32 {0, 1, -1}
    l.requires_grad = true
    D.RelaxedOneHotCategorical(1, {logits = l}):rsample({5}):select(-1, 1):sum():backward()
    assert.is_true(l.grad:abs():sum():item() > 0)
    support.assert_error("RelaxedBernoulli: probs must be in [0, 1], got 1.5", D.RelaxedBernoulli, 0.5, f32(1.5))
    support.assert_error("RelaxedBernoulli.log_prob: value 1.5 is outside the support (in [0, 1])",
      function() return D.RelaxedBernoulli(0.5, f32(0.5)):log_prob(f32(1.5)) end)
    support.assert_error("RelaxedOneHotCategorical: temperature must be a number or a Tensor, got string",
      D.RelaxedOneHotCategorical, "hot", f32 {0.5, 0.5})
  end)
end)

describe("Chi2 and NegativeBinomial as torch 1.13", function()
  it("Chi2", function()
    local df = f64 {0.5, 1, 3}
    df.requires_grad = true
    local lp = D.Chi2(df):log_prob(f64 {0.3, 1, 4})
    lp:sum():backward()
    -- values from torch 1.13
    close(lp, {-0.7083297165936117, -1.4189385332046727, -2.2257913526447273})
    close(df.grad, {1.165166774245192, 0.6351814227307389, 0.32832860329068453})
    close(D.Chi2(f64 {0.5, 1, 3}):entropy(), {-0.9394204447741763, 0.7837571104739339, 2.0541199559354117})
    close(D.kl_divergence(D.Chi2(f64 {2, 3}), D.Chi2(f64 {4, 1})), {0.5772156649015328, 0.7296371545385215})
    close(D.Chi2(f64 {2, 3}).df, {2, 3})
    pt.manual_seed(6)
    local s = D.Chi2(f64 {1, 4}):sample({50000})
    close(s:mean(1), {1, 4}, 0.03)
    support.assert_error("Chi2: df must be positive (> 0), got -3", D.Chi2, -3)
  end)

  it("NegativeBinomial", function()
    local n, p = f64 {2, 0.5, 5}, f64 {0.3, 0, 0.9}
    n.requires_grad, p.requires_grad = true, true
    local lp = D.NegativeBinomial(n, p):log_prob(f64 {0, 3, 10})
    lp:sum():backward()
    -- values from torch 1.13
    close(lp, {-0.7133498878774647, -109.29411097715715, -5.657775842233274}, 1e-10)
    close(n.grad, {-0.35667494393873234, 3.0666666666666655, -1.1343560997650526}, 1e-10)
    close(p.grad, {-2.857142857142857, 0.0, -38.88888888888889}, 1e-10)
    local d = D.NegativeBinomial(f64 {2, 0.5, 5}, {logits = f64 {-1, 0, 2}})
    close(d:log_prob(f64 {0, 3, 10}), {-0.6265233750364457, -3.589165941765489, -4.995165386329369}, 1e-10)
    close(d.mean, {0.7357588823428847, 0.5, 36.945280494653254})
    close(d.variance, {1.00642944881611, 1.0, 309.9360306603745})
    close(d.mode, {0, 0, 29})
    close(D.NegativeBinomial(f64 {0, 0}, f64 {0.3, 0.3}):log_prob(f64 {0, 2}), {0, -math.huge})
    pt.manual_seed(6)
    local nb = D.NegativeBinomial(f64 {2, 0.5, 5}, f64 {0.3, 0.6, 0.9})
    local s = nb:sample({50000})
    assert.are.same({50000, 3}, s:size())
    close(s:mean(1), nb.mean, 0.03)
    support.assert_error("NegativeBinomial: probs must be in [0, 1), got 1", D.NegativeBinomial, 2, f32(1))
    support.assert_error("NegativeBinomial: total_count must be non-negative (>= 0), got -2", D.NegativeBinomial, -2, f32(0.5))
  end)
end)

describe("Pareto, Weibull and HalfCauchy as torch 1.13", function()
  local inf = math.huge
  local A, B = {0.5, 1.0, 2.0, 3.0}, {1.5, 0.7, 2.5, 1.0}

  it("Pareto", function()
    local a, b = f64(A), f64(B)
    a.requires_grad, b.requires_grad = true, true
    local d = D.Pareto(a, b)
    local lp = d:log_prob(f64 {0.6, 1.0, 7.0, 3.5})
    lp:sum():backward()
    -- values from torch 1.13
    close(lp, {0.6428083966832232, -0.35667494393873245, -4.1615268384195785, -1.4069136483226263})
    close(a.grad, {3.0, 0.7, 1.25, 0.3333333333333333})
    close(b.grad, {0.48434510987271207, 1.4285714285714286, -0.852762968495368, 0.8458493201727416})
    close(d:cdf(f64 {0.6, 1.0, 7.0, 3.5}), {0.2392742256872693, 0.0, 0.9563655115245021, 0.1428571428571429})
    close(d:icdf(f64 {0.1, 0.5, 0.9, 0.0}), {0.5363829914475721, 2.6918003852647123, 5.02377286301916, 3.0})
    close(d:entropy(), {0.5680543779985567, 2.7852463725101613, 1.1768564486857902, 3.09861228866811})
    close(d.mean, {1.5, inf, 3.3333333333333335, inf})
    close(d.variance, {inf, inf, 8.88888888888889, inf})
    support.assert_error("Pareto.log_prob: value 0.5 is outside the support (greater than or equal to scale)",
      function() return D.Pareto(1, 2):log_prob(f32(0.5)) end)
    pt.manual_seed(13)
    local s = D.Pareto(f64 {1, 2}, f64 {3, 5}):sample({100000})
    close(s:mean(1), {1.5, 2.5}, 0.02)
  end)

  it("Weibull", function()
    local a, b = f64(A), f64(B)
    a.requires_grad, b.requires_grad = true, true
    local d = D.Weibull(a, b)
    local lp = d:log_prob(f64 {0.1, 1.0, 3.0, 2.5})
    lp:sum():backward()
    -- values from torch 1.13
    close(lp, {0.20445061335106804, -1.3566749439387324, -1.924334747154619, -1.931945622001443}, 1e-10)
    close(a.grad, {-2.731671842700025, 0.0, 2.194594950788844, -0.055555555555555525}, 1e-10)
    close(b.grad, {-0.7988187426567135, 1.4285714285714286, -0.3118653431801844, 0.9696130738676743}, 1e-10)
    close(d:cdf(f64 {0.1, 1.0, 3.0, 2.5}), {0.085559356392783, 0.6321205588285577, 0.9364339629953745, 0.5654017914929218})
    close(d:icdf(f64 {0.1, 0.5, 0.9, 0.0}), {0.11153776281845854, 0.5923901129521337, 2.7920055107405712, 0.0})
    close(d:entropy(), {0.09379293296573454, 1.1092968018380756, 1.12318584762671, 2.09861228866811})
    close(d.mean, {0.4513726464754668, 1.2658235060572836, 1.7745276350061505, 3.0})
    close(d.variance, {0.09392257120348296, 3.4268355536531527, 0.5765867565204488, 9.0})
    close(d.mode, {0.24037492838456806, nan, 1.6303862192118455, 0.0})
    support.assert_error("Weibull: scale must be positive (> 0), got -1", D.Weibull, -1, 1)
  end)

  it("HalfCauchy", function()
    local h = D.HalfCauchy(f64 {0.5, 1, 2})
    -- values from torch 1.13
    close(h:log_prob(f64 {0.3, 0, 5}), {-0.06592022447747015, -0.4515827052894549, -3.1257313547159833})
    close(h:cdf(f64 {0.3, 0, 5}), {0.34404173924526127, 0.0, 0.7577621168183133})
    close(h:icdf(f64 {0.1, 0.5, 0.9}), {0.07919222016226822, 0.9999999999999999, 12.627503029350063})
    close(h:entropy(), {1.1447298858494, 1.8378770664093453, 2.5310242469692907})
    close(h.mean, {inf, inf, inf})
    assert.are.equal("float32", D.HalfCauchy(1):log_prob(f64 {1}):dtype())
    close(D.HalfCauchy(1, {validate_args = false}):log_prob(f32 {-1, 0}), {-inf, -0.4515827}, 1e-6)
    pt.manual_seed(2)
    close(D.HalfCauchy(f32 {1, 3}):sample({100000}):median(1), {1, 3}, 0.03)
  end)

  it("kl_divergence pairs with Pareto", function()
    local a, b = f64 {0.3, 1.0, 2.5, 1.5}, f64 {0.5, 1.0, 2.5, 3.0}
    local c, d = f64 {1.0, 0.2, 3.0, 0.5}, f64 {0.7, 1.5, 1.0, 2.0}
    -- values from torch 1.13
    close(D.kl_divergence(D.Pareto(b, a + 0.5), D.Pareto(d, c + 0.5)), {inf, inf, 3.2195335483989513, 0.5986122886681096})
    close(D.kl_divergence(D.Pareto(b, a + 0.5), D.Exponential(d)), {inf, 2.8333333333333335, 2.5989882234606214, 9.40138771133189})
    close(D.kl_divergence(D.Pareto(b, a + 0.5), D.Gamma(d, c + 0.5)), {inf, 0.9196952863810175, 10.721225254965253, 2.495922603223726})
    close(D.kl_divergence(D.Pareto(b, a + 0.5), D.Normal(c, d)), {inf, inf, 2.392926756665294, inf})
    close(D.kl_divergence(D.Uniform(b, b + a), D.Pareto(d, c + 0.5)), {inf, inf, 3.692579218103681, 1.5314029373170965})
    close(D.kl_divergence(D.Normal(a, b), D.Pareto(d, c + 0.5)), {inf, inf, inf, inf})
  end)
end)

describe("TransformedDistribution and transforms as torch 1.13", function()
  local m0, s0 = {0.5, -1, 0.2}, {1, 0.5, 2}

  it("a tanh-squashed, affinely rescaled Normal: log_prob, cdf, icdf, gradients", function()
    local m, s = f64(m0), f64(s0)
    m.requires_grad, s.requires_grad = true, true
    local d = D.TransformedDistribution(D.Normal(m, s), {D.TanhTransform(), D.AffineTransform(1.0, 2.0)})
    local lp = d:log_prob(f64 {0.1, -0.5, 2.9})
    lp:sum():backward()
    -- values from torch 1.13
    close(lp, {-1.870629588773082, -0.09372281600781418, -0.31016857516149265}, 1e-10)
    close(m.grad, {-0.9847002785940517, 0.10817970188937354, 0.4079452057662057}, 1e-10)
    close(s.grad, {-0.030365361336796903, -1.9941485760495632, -0.16716141818473618}, 1e-10)
    close(d:cdf(f64 {0.1, -0.5, 2.9}), {0.1623856579288223, 0.5215682109078521, 0.7927185916707389}, 1e-10)
    close(d:icdf(f64 {0.1, 0.5, 0.9}), {-0.3071927249823967, -0.5231883119115297, 2.984138889735872}, 1e-10)
    assert.is_true(d.has_rsample)
    assert.are.same({3}, d.batch_shape)
    assert.are.same({4, 3}, d:rsample({4}):size())
  end)

  it("other transforms, a decreasing map, event dims", function()
    local base = function() return D.Normal(f64(m0), f64(s0)) end
    -- values from torch 1.13
    local d = D.TransformedDistribution(base(), {D.AffineTransform(f64 {1, 2, 3}, f64 {0.5, -2, 1})})
    close(d:log_prob(f64 {0.1, 0.5, 3}), {-2.870791352644727, -7.043938533204672, -1.617085713764618})
    close(d:cdf(f64 {0.1, 0.5, 3}), {0.010724110021675837, 0.0002326290790355401, 0.460172162722971})
    close(d:icdf(f64 {0.1, 0.5, 0.9}), {0.6092242172276996, 4.0, 5.763103131089202})
    close(D.TransformedDistribution(base(), {D.SoftplusTransform()}):log_prob(f64 {0.1, 0.5, 3}),
      {-2.353985691143481, 0.06342048390134192, -2.5055941138172946})
    close(D.TransformedDistribution(base(), {D.SigmoidTransform()}):log_prob(f64 {0.1, 0.5, 0.99}),
      {-2.1485031348460737, -0.8394969915248367, 0.5884999959460862})
    -- a single transform; exp of a Normal is LogNormal
    close(D.TransformedDistribution(base(), D.ExpTransform()):log_prob(f64 {0.1, 0.5, 3}),
      D.LogNormal(f64(m0), f64(s0)):log_prob(f64 {0.1, 0.5, 3}))
    local ev = D.TransformedDistribution(D.Normal(pt.zeros({2, 3}, {dtype = "float64"}), 1), {D.AffineTransform(0, 2, {event_dim = 1})})
    assert.are.same({2}, ev.batch_shape)
    assert.are.same({3}, ev.event_shape)
    close(ev:log_prob(pt.ones({2, 3}, {dtype = "float64"})), {-5.211257141293854, -5.211257141293854})
    local mvn = D.TransformedDistribution(D.MultivariateNormal(pt.zeros({2}, {dtype = "float64"}), pt.eye(2, {dtype = "float64"})),
      {D.TanhTransform()})
    close(mvn:log_prob(f64 {0.3, -0.2}), -1.7711958293475198)
    -- transforms' parameters broadcast the batch shape
    assert.are.same({3}, D.TransformedDistribution(D.Normal(0, 1), {D.AffineTransform(pt.zeros {3}, 2)}).batch_shape)
  end)

  it("transforms: inverse, inv, cache_size, log_abs_det_jacobian", function()
    local t = D.TanhTransform()
    local x = f64 {0, 5, -30}
    -- torch 1.13's stable log(1 - tanh(x)^2)
    close(t:log_abs_det_jacobian(x, x:tanh()), {0.0, -8.613796436678543, -58.61370563888011}, 1e-10)
    close(D.ExpTransform().inv(f64 {1, math.exp(2)}), {0, 2})
    close(D.ExpTransform().inv.inv(f64 {0, 2}), {1, math.exp(2)})
    local c = D.ComposeTransform {D.ExpTransform(), D.AffineTransform(0, 3)}
    close(c(f64 {0, 1}), {3, 3 * math.exp(1)})
    close(c:inverse(f64 {3}), {0})
    -- cache_size = 1: the y of the last forward inverts to its x even where atanh overflows
    local cached = D.TanhTransform {cache_size = 1}
    local big = f32 {30}
    local y = cached(big)
    assert.are.equal(1, y:item())
    assert.are.equal(big, cached:inverse(y))
    assert.are.equal(-1, D.AffineTransform(0, -2).sign)
    support.assert_error("TanhTransform: cache_size must be 0 or 1, got 2", D.TanhTransform, {cache_size = 2})
    support.assert_error("TransformedDistribution: transforms[1] is not a transform",
      D.TransformedDistribution, D.Normal(0, 1), {5})
    support.assert_error("TransformedDistribution.log_prob: value 1.5 is outside the support (in [-1, 1])",
      function() return D.TransformedDistribution(D.Normal(0, 1), {D.TanhTransform()}):log_prob(f32(1.5)) end)
  end)
end)

describe("kl_divergence of TransformedDistributions as torch 1.13", function()
  it("the same transforms: the bases' KL; different ones raise", function()
    local p = D.TransformedDistribution(D.Normal(f32 {0, 1}, 1), {D.TanhTransform(), D.AffineTransform(1, 2)})
    local q = D.TransformedDistribution(D.Normal(f32 {1, 1}, 2), {D.TanhTransform(), D.AffineTransform(1, 2)})
    -- values from torch 1.13
    close(D.kl_divergence(p, q), {0.4431471824645996, 0.3181471824645996}, 1e-6)
    support.assert_error("kl_divergence: TransformedDistributions with different transforms are not implemented (as in torch 1.13)",
      D.kl_divergence, D.TransformedDistribution(D.Normal(0, 1), {D.AffineTransform(1, 2)}),
      D.TransformedDistribution(D.Normal(0, 1), {D.AffineTransform(1, 3)}))
  end)
end)

describe("VonMises as torch 1.13", function()
  it("log_prob, variance, gradients, samples", function()
    local l, k = f64 {0.5, -1, 2, 0}, f64 {0.1, 1, 3.75, 20}
    l.requires_grad, k.requires_grad = true, true
    local lp = D.VonMises(l, k):log_prob(f64 {0.1, 3, -2, 7})
    lp:sum():backward()
    -- values from torch 1.13 (its polynomial approximations of log I0, log I1)
    close(lp, {-1.748269404772212, -2.7274350223076222, -6.499394871199053, -4.349442481903274}, 1e-10)
    close(l.grad, {-0.03894183423086506, -0.7568024953079282, 2.8380093574047307, 13.139731974375781}, 1e-10)
    close(k.grad, {0.8711234189799529, -1.1000336521764216, -1.5068134428428688, -0.2207682624885312}, 1e-10)
    close(D.VonMises(f64 {0.5, -1, 2, 0}, f64 {0.1, 1, 3.75, 20}).variance,
      {0.9500623959603771, 0.5536100286889264, 0.14682956159041904, 0.0253296636926571}, 1e-10)
    pt.manual_seed(4)
    local d = D.VonMises(f64 {0.5, 3.0, -2}, f64 {4, 0.5, 20})
    local s = d:sample({50000})
    assert.is_true(s:min():item() >= -math.pi and s:max():item() < math.pi)
    local C, S = s:cos():mean(1), s:sin():mean(1)
    close(pt.atan2(S, C), {0.5, 3.0, -2}, 0.02)
    close(1 - (C:pow(2) + S:pow(2)):sqrt(), d.variance, 0.02)
    assert.are.same({4, 3, 2}, D.VonMises(pt.zeros {3, 1}, pt.ones {2}):sample({4}):size())
    support.assert_error("VonMises: concentration must be positive (> 0), got -1", D.VonMises, 0, -1)
  end)
end)

describe("Kumaraswamy as torch 1.13", function()
  it("log_prob and gradients, moments, entropy, mode, samples", function()
    local a, b = f64 {0.5, 2, 3}, f64 {1.5, 0.7, 2.5}
    a.requires_grad, b.requires_grad = true, true
    local lp = D.Kumaraswamy(a, b):log_prob(f64 {0.1, 0.5, 0.9})
    lp:sum():backward()
    -- values from torch 1.13
    close(lp, {0.673545270012156, -0.27037032220319795, -0.15427269792704246}, 1e-10)
    close(a.grad, {0.22985926773961274, -0.2624618986159398, 0.6531083301176955}, 1e-10)
    close(b.grad, {0.2865362586004949, 1.1408893561196476, -0.9056364581024368}, 1e-10)
    local d = D.Kumaraswamy(f64 {0.5, 2, 3}, f64 {1.5, 0.7, 2.5})
    close(d.mean, {0.2285714285714285, 0.7308570430993646, 0.6073623023067477}, 1e-10)
    close(d.variance, {0.05857761286332713, 0.054083276669700475, 0.0351131048714321}, 1e-10)
    close(d:entropy(), {-0.6593568997616617, -0.3721618953051282, -0.2946548168444141}, 1e-10)
    -- the mode (torch 1.13's formula gives nan): the density's maximum
    local k = D.Kumaraswamy(f64 {2, 5}, f64 {3, 1.5})
    close(k.mode, {math.sqrt(1 / 5), (4 / 6.5) ^ (1 / 5)})
    close(D.Kumaraswamy(f64 {0.5}, f64 {2}).mode, {nan})
    pt.manual_seed(3)
    close(k:sample({50000}):mean(1), k.mean, 0.01)
    assert.are.same({4, 3, 2}, D.Kumaraswamy(pt.ones {3, 1}, pt.ones {2}):rsample({4}):size())
    support.assert_error("Kumaraswamy: concentration1 must be positive (> 0), got -2", D.Kumaraswamy, -2, 3)
    support.assert_error("Kumaraswamy.log_prob: value 1.5 is outside the support (in [0, 1])",
      function() return D.Kumaraswamy(2, 3):log_prob(f32(1.5)) end)
  end)
end)

describe("FisherSnedecor as torch 1.13", function()
  it("log_prob and gradients, moments, samples", function()
    local a, b = f64 {1, 3, 5, 10}, f64 {1.5, 3, 4.5, 20}
    a.requires_grad, b.requires_grad = true, true
    local lp = D.FisherSnedecor(a, b):log_prob(f64 {0.1, 0.5, 1.9, 3})
    lp:sum():backward()
    -- values from torch 1.13
    close(lp, {-0.006030889756831984, -0.62825725877403, -1.7659557293715977, -3.6043078539303472}, 1e-10)
    close(a.grad, {-0.096391114797312, 0.060507702892557275, 0.03449808466937096, -0.07129831526849861}, 1e-10)
    close(b.grad, {0.11568441263631762, 0.07374795983919658, 0.0315531136221576, -0.04684832964004121}, 1e-10)
    local d = D.FisherSnedecor(f64 {1, 3, 5, 10}, f64 {1.5, 3, 4.5, 20})
    close(d.mean, {nan, 3.0, 1.8, 1.1111111111111112})
    close(d.mode, {nan, 0.2, 0.41538461538461535, 0.7272727272727273})
    close(d.variance, {nan, nan, 19.44, 0.43209876543209874}, 1e-10)
    pt.manual_seed(5)
    local f = D.FisherSnedecor(f64 {5, 10}, f64 {10, 20})
    close(f:sample({100000}):mean(1), f.mean, 0.02)
    assert.are.same({4, 3, 2}, D.FisherSnedecor(pt.ones {3, 1}, pt.ones {2}):rsample({4}):size())
    support.assert_error("FisherSnedecor: df1 must be positive (> 0), got -1", D.FisherSnedecor, -1, 2)
  end)
end)

describe("ContinuousBernoulli as torch 1.13", function()
  it("values on both sides of the Taylor region, gradients, KL, samples", function()
    local p = f64 {0.1, 0.4995, 0.5, 0.8, 0.999}
    p.requires_grad = true
    local d = D.ContinuousBernoulli(p)
    local lp = d:log_prob(f64 {0.2, 0.5, 0, 1, 0.7})
    lp:sum():backward()
    -- values from torch 1.13
    close(lp, {0.465533128365784, -1.6666677216115033e-07, 0.0, 0.6143163324300618, -0.1385250450893456}, 1e-10)
    close(p.grad, {-1.4457734812602083, 0.0006666675111133336, -2.0, 2.425088669444677, -156.37257890790576}, 1e-9)
    d = D.ContinuousBernoulli(f64 {0.1, 0.4995, 0.5, 0.8, 0.999})
    close(d.mean, {0.33011961331341877, 0.4998333332888889, 0.5, 0.6119858128888517, 0.8562162063289981}, 1e-10)
    close(d.variance, {0.06650886242255583, 0.08333331666667512, 0.08333333333333333, 0.07589780080695757, 0.01995991918950142}, 1e-10)
    close(d:entropy(), {-0.17963111600005513, -1.666667611699424e-07, 0.0, -0.07641445280335879, -0.9404219844758108}, 1e-10)
    close(d:cdf(f64 {0.2, 0.5, 0, 1, 0.7}), {0.400056733150589, 0.5, 0.0, 1.0, 0.12505451220054392}, 1e-10)
    close(d:icdf(f64 {0.1, 0.5, 0.9, 0, 1}), {0.04236727734898593, 0.5, 0.9, 0.0, 1.0}, 1e-10)
    close(D.kl_divergence(D.ContinuousBernoulli(f64 {0.2, 0.5, 0.9}), D.ContinuousBernoulli(f64 {0.7, 0.3, 0.5})),
      {0.20103591570967994, 0.029736123251875413, 0.1796311160000552}, 1e-10)
    close(D.kl_divergence(D.ContinuousBernoulli(f64 {0.2, 0.5, 0.9}), D.Normal(f64 {0.7, 0.3, 0.5}, 1)),
      {1.081969460133469, 0.9806051998713394, 1.1462537533063972}, 1e-10)
    close(D.kl_divergence(D.Normal(0, 1), D.ContinuousBernoulli(0.5)), math.huge)
    pt.manual_seed(7)
    local c = D.ContinuousBernoulli(f64 {0.1, 0.8})
    close(c:sample({50000}):mean(1), c.mean, 0.01)
    support.assert_error("ContinuousBernoulli: probs must be in [0, 1], got 1.5", D.ContinuousBernoulli, f32(1.5))
  end)
end)

describe("LogisticNormal and StickBreakingTransform as torch 1.13", function()
  it("values, gradients, shapes", function()
    local sb = D.StickBreakingTransform()
    -- values from torch 1.13
    close(sb(f64 {0.5, -1, 2}), {0.35466124439244334, 0.1002613801409296, 0.48010255958285813, 0.06497481588376891}, 1e-12)
    close(sb:inverse(f64 {0.1, 0.2, 0.3, 0.4}), {-1.0986122886681093, -0.5596157879354225, -0.2876820724517808}, 1e-12)
    local m, s = f64 {0.5, -1, 2}, f64 {1, 0.5, 2}
    m.requires_grad, s.requires_grad = true, true
    local lp = D.LogisticNormal(m, s):log_prob(f64 {{0.1, 0.2, 0.3, 0.4}, {0.7, 0.1, 0.1, 0.1}})
    lp:sum():backward()
    close(lp, {0.955627650725237, 0.9622865437362726}, 1e-10)
    close(m.grad, {-0.1527021396127961, 5.761536848258309, -1.0719205181129454}, 1e-10)
    close(s.grad, {2.6462174086218493, 5.551506033885907, 0.15418615807715952}, 1e-10)
    local d = D.LogisticNormal(pt.zeros {2, 3}, 1)
    assert.are.same({2}, d.batch_shape)
    assert.are.same({4}, d.event_shape)
    local x = d:rsample({5})
    assert.are.same({5, 2, 4}, x:size())
    close(x:sum(-1), pt.ones {5, 2}, 1e-6)
    assert.are.same({2}, D.LogisticNormal(0, 1).event_shape)
    support.assert_error("LogisticNormal.log_prob: value is outside the support (a probability vector (non-negative, summing to 1 along the last dim))",
      function() return D.LogisticNormal(pt.zeros {3}, 1):log_prob(f32 {0.5, 0.5, 0.5, 0.5}) end)
  end)
end)

describe("LowRankMultivariateNormal as torch 1.13", function()
  it("log_prob and gradients, entropy, precision, samples", function()
    local l = f64 {{0.5, -1, 2}, {0, 0, 1}}
    local w = f64 {{1, 0.5}, {0.3, -0.2}, {0, 2}}
    local dg = f64 {1.5, 0.5, 2}
    for _, t in ipairs {l, w, dg} do t.requires_grad = true end
    local d = D.LowRankMultivariateNormal(l, w, dg)
    local lp = d:log_prob(f64 {{{0.1, 0.2, 0.3}, {1, -1, 0.5}}})
    lp:sum():backward()
    -- values from torch 1.13
    close(lp, {{-5.1429482452395865, -5.23797345532362}}, 1e-10)
    close(l.grad, {{-0.24212885154061625, 1.9081232492997198, -0.11577030812324929}, {0.6246498599439776, -1.988795518207283, -0.3200280112044818}}, 1e-10)
    close(w.grad, {{-0.7661213881631085, 0.062417537995590466}, {-0.10891333788417346, -1.248955613617996}, {0.024504440207455597, -0.5581372188090924}}, 1e-10)
    close(dg.grad, {-0.18119532675815414, 2.0614262960085994, -0.1317255082425126}, 1e-10)
    close(d:entropy(), {5.35124376344687, 5.35124376344687}, 1e-10)
    close(d.precision_matrix:select(1, 1), {{0.4056022408963585, -0.17927170868347345, -0.07955182072829131},
      {-0.17927170868347345, 1.7366946778711485, 0.14565826330532214}, {-0.07955182072829131, 0.14565826330532214, 0.1896358543417367}}, 1e-10)
    -- agrees with the full MultivariateNormal of the same covariance
    local full = D.MultivariateNormal(l:detach(), d.covariance_matrix:detach())
    close(d:log_prob(f64 {0.3, 0.1, -0.2}), full:log_prob(f64 {0.3, 0.1, -0.2}), 1e-10)
    pt.manual_seed(3)
    local x = D.LowRankMultivariateNormal(l:detach()[1], w:detach(), dg:detach()):sample({50000})
    local xc = x - x:mean(1, true)
    close(pt.matmul(xc:t(), xc) / 49999, d.covariance_matrix:detach()[1], 0.05)
    support.assert_error("LowRankMultivariateNormal: cov_factor must be a batch of 3 x m matrices (loc's last dim is 3), got shape {2,2}",
      D.LowRankMultivariateNormal, pt.zeros {3}, pt.ones {2, 2}, pt.ones {3})
  end)
end)

describe("kl_divergence with LowRankMultivariateNormal as torch 1.13", function()
  it("low rank || low rank, full || low rank, low rank || full", function()
    local l = f64 {{0.5, -1, 2}, {0, 0, 1}}
    local w = f64 {{1, 0.5}, {0.3, -0.2}, {0, 2}}
    local d = f64 {1.5, 0.5, 2}
    local P = D.LowRankMultivariateNormal(l, w, d)
    local Q = D.LowRankMultivariateNormal(l * 0.5, w * 0.7 + 0.1, d + 0.3)
    local M = D.MultivariateNormal(l * 0.3, f64 {{2, 0.3, 0.1}, {0.3, 1, 0.2}, {0.1, 0.2, 1.5}})
    -- values from torch 1.13
    close(D.kl_divergence(P, Q), {0.32656184136500355, 0.10071522396282262}, 1e-10)
    close(D.kl_divergence(M, Q), {0.2995917104361083, 0.26345625165175934}, 1e-10)
    close(D.kl_divergence(P, M), {2.167597229254514, 1.2080798270298994}, 1e-10)
    support.assert_error("kl_divergence: (low rank) multivariate normals p and q have different event shapes {3} and {2}",
      D.kl_divergence, P, D.MultivariateNormal(pt.zeros({2}, {dtype = "float64"}), pt.eye(2, {dtype = "float64"})))
  end)
end)

describe("LKJCholesky as torch 1.13", function()
  it("log_prob and gradient, samples, validation", function()
    local k = f64 {0.5, 1, 3}
    k.requires_grad = true
    local lp = D.LKJCholesky(3, k):log_prob(f64 {{1, 0, 0}, {0.6, 0.8, 0}, {0, 0.6, 0.8}})
    lp:sum():backward()
    -- values from torch 1.13
    close(lp, {-2.307880695655081, -1.8194561424530646, -2.035988635052897}, 1e-10)
    close(k.grad, {1.721131433623269, 0.49372015586305174, -0.4062798441369484}, 1e-10)
    pt.manual_seed(1)
    local d = D.LKJCholesky(3, 2)
    local L = d:sample({20000})
    assert.are.same({20000, 3, 3}, L:size())
    local Cm = pt.matmul(L, L.mT)
    close(Cm:diagonal(0, -2, -1), pt.ones {20000, 3}, 1e-5)
    -- the off-diagonal correlation's variance (torch 1.13 draws: 0.1675)
    close(Cm:select(-1, 1):select(-1, 2):var(), 0.1675, 0.02)
    assert.is_true(d:log_prob(L):isfinite():all():item())
    support.assert_error("LKJCholesky: dim must be at least 2, got 1", D.LKJCholesky, 1)
    support.assert_error("LKJCholesky.log_prob: value is outside the support (the lower Cholesky factor of a correlation matrix (unit rows))",
      function() return D.LKJCholesky(2):log_prob(f32 {{1, 0}, {0.5, 0.5}}) end)
  end)
end)

describe("Distribution.support as torch 1.13's d.support", function()
  it("is a constraint whose check gives a bool tensor", function()
    -- torch 1.13: Beta(1, 2).support.check([0.5, 1.5]) = [True, False];
    -- Uniform(0, [1, 2]).support.check([1.5, 1.5]) = [False, True]
    assert.are.same({true, false}, D.Beta(1, 2).support.check(f32 {0.5, 1.5}):tolist())
    assert.are.same({false, true}, D.Uniform(0, f32 {1, 2}).support.check(f32 {1.5, 1.5}):tolist())
    assert.are.equal(1, D.Dirichlet(pt.ones {3}).support.event_dim)
    -- Categorical's support is 1-based here
    assert.are.same({false, true, true, false}, D.Categorical(pt.ones {3}).support.check(f32 {0, 1, 3, 4}):tolist())
  end)
end)

describe("Wishart as torch 1.13", function()
  it("log_prob and gradients, entropy, mode, Bartlett samples", function()
    local df, m = f64 {2.5, 5}, f64 {{2, 0.5}, {0.5, 1}}
    df.requires_grad, m.requires_grad = true, true
    local d = D.Wishart(df, m)
    local lp = d:log_prob(f64 {{{3, 0.2}, {0.2, 2}}, {{1, -0.3}, {-0.3, 0.5}}})
    lp:sum():backward()
    -- values from torch 1.13
    close(lp, {-5.4988865073797815, -7.270564162462543}, 1e-10)
    close(df.grad, {0.5762373725923413, -1.9817246220414035}, 1e-10)
    close(m.grad, {{-1.3714285714285712, 0.2999999999999998}, {0.2999999999999999, -2.457142857142857}}, 1e-10)
    d = D.Wishart(f64 {2.5, 5}, f64 {{2, 0.5}, {0.5, 1}})
    close(d:entropy(), {5.7679106782264675, 7.649972061236879}, 1e-10)
    close(d.mode, {{{nan, nan}, {nan, nan}}, {{4, 1}, {1, 2}}})
    pt.manual_seed(2)
    local V = f64 {{2, 0.5}, {0.5, 1}}
    local w = D.Wishart(f64 {3.5, 6}, V)
    local W = w:sample({40000})
    assert.are.same({40000, 2, 2, 2}, W:size())
    close(W:mean(1), w.mean, 0.02)
    -- reparameterized in df: d E[sum W] / d df = sum V
    local dfr = f64(4)
    dfr.requires_grad = true
    D.Wishart(dfr, V):rsample({20000}):mean(1):sum():backward()
    close(dfr.grad, 4, 0.02)
    support.assert_error("Wishart: df must be greater than ndim - 1 = 2, got 0.5", D.Wishart, 0.5, pt.eye(3))
  end)
end)
