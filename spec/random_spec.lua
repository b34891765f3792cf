-- Random sampling: the in-place distributions, bernoulli, poisson, multinomial, normal, *_like.
-- Draws are seeded (pt.manual_seed), so every check below sees the same numbers on every run; the
-- tolerances are several standard errors of the statistic for the sample size.
local pt = require "partrain"

local function assert_err(pattern, f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok)
  if not tostring(e):find(pattern, 1, true) then
    error(string.format("expected error containing %q, got %q", pattern, tostring(e)), 2)
  end
end

local function near(expected, got, tol, what)
  if math.abs(expected - got) > tol then
    error(string.format("%s: expected %.6g +- %.3g, got %.6g", what or "value", expected, tol, got), 2)
  end
end

local N = 200000

describe("in-place distributions", function()
  it("draw with the distributions' means and variances", function()
    pt.manual_seed(7)
    local t = pt.zeros(N, {dtype = "float64"})
    t:uniform_(-2, 3)
    near(0.5, t:mean():item(), 0.02, "uniform mean")
    near(25 / 12, t:var():item(), 0.03, "uniform var")
    assert.is_true(t:min():item() >= -2 and t:max():item() < 3)
    t:normal_(3, 2)
    near(3, t:mean():item(), 0.02, "normal mean")
    near(2, t:std():item(), 0.02, "normal std")
    t:bernoulli_(0.3)
    near(0.3, t:mean():item(), 0.005, "bernoulli mean")
    assert.are.equal(N, t:eq(0):sum():item() + t:eq(1):sum():item())
    t:exponential_(2)
    near(0.5, t:mean():item(), 0.005, "exponential mean")
    near(0.25, t:var():item(), 0.01, "exponential var")
    t:geometric_(0.25)
    near(4, t:mean():item(), 0.03, "geometric mean")
    assert.are.equal(1, t:min():item())
    assert.is_true(t:eq(t:floor()):all():item())
    t:log_normal_(0, 0.5)
    near(math.exp(0.125), t:mean():item(), 0.01, "log_normal mean")
    t:cauchy_(1, 2)
    near(1, t:median():item(), 0.03, "cauchy median")
    near(0.5, t:sub(1):abs():le(2):double():mean():item(), 0.005, "cauchy quartiles")
  end)

  it("float32 normal_ (16 at a time, vectorised) has the normal's moments and tails", function()
    pt.manual_seed(5)
    local t = pt.zeros(N + 7) -- float32; a length that leaves a scalar tail
    t:normal_(3, 2)
    near(3, t:mean():item(), 0.02, "normal mean")
    near(2, t:std():item(), 0.02, "normal std")
    local z = (t:double() - 3) / 2
    near(0, (z ^ 3):mean():item(), 0.03, "skewness")
    near(3, (z ^ 4):mean():item(), 0.06, "kurtosis")
    near(0.0455, z:abs():gt(2):double():mean():item(), 0.002, "beyond 2 sigma")
    near(0.0027, z:abs():gt(3):double():mean():item(), 0.0006, "beyond 3 sigma")
    -- the same seed gives the same numbers, whatever else ran in between
    pt.manual_seed(5)
    local u = pt.zeros(N + 7):normal_(3, 2)
    assert.is_true(pt.equal(t, u))
    -- the two halves of each block of 16 (cos and sin of one angle) are uncorrelated
    local blocks = t:narrow(1, 1, 16 * 1000):view(1000, 16)
    local a, b = (blocks:narrow(2, 1, 8):double() - 3) / 2, (blocks:narrow(2, 9, 8):double() - 3) / 2
    near(0, (a * b):mean():item(), 0.05, "pair correlation")
  end)

  it("replays the same numbers from the same seed, and returns the tensor", function()
    local a, b = pt.zeros(5), pt.zeros(5)
    pt.manual_seed(11)
    assert.are.equal(a, a:normal_())
    a:exponential_()
    pt.manual_seed(11)
    b:normal_()
    b:exponential_()
    assert.is_true(pt.equal(a, b))
  end)

  it("fills integer dtypes where the distribution is discrete", function()
    pt.manual_seed(2)
    local i = pt.zeros(1000, {dtype = "int64"})
    i:random_(5, 9)
    assert.are.equal(5, i:min():item())
    assert.are.equal(8, i:max():item())
    i:random_(3)
    assert.are.same({0, 2}, {i:min():item(), i:max():item()})
    local u = pt.zeros(3000, {dtype = "uint8"}):random_()
    assert.are.same({0, 255}, {u:min():item(), u:max():item()})
    local big = pt.zeros(64, {dtype = "int64"}):random_()
    assert.is_true(big:max():item() > 2 ^ 60) -- int64 draws use the whole range, exactly
    assert.are.same({"int32", 1}, {pt.zeros(3, {dtype = "int32"}):bernoulli_(1):dtype(),
      pt.zeros(3, {dtype = "int32"}):bernoulli_(1):min():item()})
    assert.is_true(pt.zeros(10, {dtype = "bool"}):bernoulli_(1):all():item())
    local g = pt.zeros(100, {dtype = "int64"}):geometric_(0.5)
    assert.is_true(g:min():item() >= 1)
  end)

  it("refuses parameters out of range, wrong dtypes and leaves that require grad", function()
    local t = pt.zeros(3)
    assert_err("bernoulli_: p must be in [0, 1], got 1.5", function() t:bernoulli_(1.5) end)
    assert_err("geometric_: p must be in (0, 1], got 0", function() t:geometric_(0) end)
    assert_err("exponential_: lambd must be positive and finite, got -1", function() t:exponential_(-1) end)
    assert_err("log_normal_: std must be positive and finite, got 0", function() t:log_normal_(0, 0) end)
    assert_err("cauchy_: sigma must be positive and finite, got -1", function() t:cauchy_(0, -1) end)
    assert_err("normal_: expected a finite mean and std >= 0, got mean 0, std -1", function() t:normal_(0, -1) end)
    assert_err("uniform_: expected from <= to with a finite range, got [2, 1)", function() t:uniform_(2, 1) end)
    assert_err("uniform_: expected a float32 or float64 tensor, got int64",
      function() pt.zeros(2, {dtype = "int64"}):uniform_() end)
    assert_err("exponential_: expected a float32 or float64 tensor, got int32",
      function() pt.zeros(2, {dtype = "int32"}):exponential_() end)
    assert_err("random_: empty range [4, 4)", function() t:random_(4, 4) end)
    assert_err("random_: range [0, 300) does not fit uint8", function() pt.zeros(2, {dtype = "uint8"}):random_(300) end)
    assert_err("random_: range [0, 16777218) does not fit float32", function() t:random_(16777218) end)
    assert_err("normal_: unexpected argument #4", function() t:normal_(0, 1, 2) end)
    local w = pt.zeros(2, {requires_grad = true})
    assert_err("normal_", function() w:normal_() end)
    pt.no_grad(function() w:normal_() end) -- as nn.init does
  end)

  it("bumps the version: a value saved for backward and then redrawn is caught", function()
    local x = pt.ones(3, {requires_grad = true})
    local y = pt.ones(3)
    local z = x * y -- saves y for x's gradient
    y:uniform_()
    assert.has_error(function() z:sum():backward() end)
    assert.has_error(function() (x * 2):uniform_() end) -- no gradient through a redraw: refused
  end)
end)

describe("pt.bernoulli, pt.poisson, pt.normal, *_like", function()
  it("bernoulli draws each element with its own probability", function()
    pt.manual_seed(3)
    local p = pt.tensor({0, 1, 0.25}, {dtype = "float64"}):view(1, 3):expand(N // 10, 3)
    local d = pt.bernoulli(p)
    assert.are.same({N // 10, 3}, d:size())
    assert.are.equal("float64", d:dtype())
    local m = d:mean(1):tolist()
    assert.are.same({0, 1}, {m[1], m[2]})
    near(0.25, m[3], 0.01, "p = 0.25")
    local f = pt.bernoulli(pt.zeros(4, 2), 1)
    assert.is_true(f:eq(1):all():item())
    assert.are.equal(1, pt.tensor({1.0}):bernoulli()[1])
    assert_err("bernoulli: probabilities must be in [0, 1], got 2 at element 2",
      function() pt.bernoulli(pt.tensor({0.5, 2})) end)
    assert_err("bernoulli: expected a float32 or float64 tensor, got int64",
      function() pt.bernoulli(pt.tensor({1}, {dtype = "int64"})) end)
  end)

  it("poisson draws with the rates' means and variances (small and large rates)", function()
    pt.manual_seed(5)
    for _, lam in ipairs({0.5, 3.5, 42, 1000}) do
      local d = pt.poisson(pt.full({N}, lam, {dtype = "float64"}))
      near(lam, d:mean():item(), 6 * math.sqrt(lam / N), "poisson mean " .. lam)
      near(lam, d:var():item(), 8 * lam * math.sqrt(2 / N) + 0.01, "poisson var " .. lam)
      assert.is_true(d:eq(d:floor()):all():item() and d:min():item() >= 0)
    end
    assert.are.same({0, 0}, pt.poisson(pt.zeros(2)):tolist())
    assert_err("poisson: rates must be non-negative and finite, got -1 at element 1",
      function() pt.poisson(pt.tensor({-1})) end)
  end)

  it("normal takes numbers with a size, or tensors that broadcast", function()
    pt.manual_seed(8)
    local a = pt.normal(2, 3, {N}, {dtype = "float64"})
    assert.are.equal("float64", a:dtype())
    near(2, a:mean():item(), 0.03, "mean")
    near(3, a:std():item(), 0.03, "std")
    local b = pt.normal(pt.tensor({-100, 0, 100}), pt.tensor({{0}, {1}}))
    assert.are.same({2, 3}, b:size())
    assert.are.same({-100, 0, 100}, b[1]:tolist())
    local c = pt.normal(pt.zeros(3), 0)
    assert.are.same({0, 0, 0}, c:tolist())
    assert.are.same({4}, pt.normal(5, pt.ones(4)):size())
    assert_err("normal: shapes {3} and {2} cannot be broadcast", function() pt.normal(pt.zeros(3), pt.ones(2)) end)
    assert_err("normal: std must be non-negative and finite, got -1 at element 2",
      function() pt.normal(pt.zeros(2), pt.tensor({1, -1})) end)
    assert_err("normal: std must be non-negative and finite, got -2", function() pt.normal(pt.zeros(2), -2) end)
    assert_err("normal: mean is float32 and std is float64",
      function() pt.normal(pt.zeros(2), pt.ones(2, {dtype = "float64"})) end)
    assert_err("normal: dtype must be float32 or float64, got int64",
      function() pt.normal(0, 1, {2}, {dtype = "int64"}) end)
    assert_err("normal: unknown option 'dtpye'", function() pt.normal(0, 1, {2}, {dtpye = "float64"}) end)
  end)

  it("rand_like, randn_like and randint_like follow the tensor's shape and dtype", function()
    local t = pt.zeros(2, 3, {dtype = "float64"})
    assert.are.same({2, 3}, pt.rand_like(t):size())
    assert.are.equal("float64", pt.randn_like(t):dtype())
    assert.are.equal("float32", pt.rand_like(t, {dtype = "float32"}):dtype())
    local r = pt.randint_like(pt.zeros(500, {dtype = "int64"}), 3, 6)
    assert.are.same({3, 5}, {r:min():item(), r:max():item()})
    assert.are.equal(0, pt.randint_like(pt.zeros(10, {dtype = "int32"}), 1):max():item())
    assert_err("rand_like: dtype must be float32 or float64, got int64",
      function() pt.rand_like(pt.zeros(2, {dtype = "int64"})) end)
    assert_err("randint_like: empty range [0, 0)", function() pt.randint_like(t, 0) end)
    -- 64-bit bounds and counts are reported whole (they were cut to int: "[0, 0)", "got 0")
    assert_err("randint: empty range [1099511627776, 1099511627776)", function() pt.randint(1 << 40, 1 << 40, {2}) end)
    assert_err("randperm: n must be non-negative, got -4294967296", function() pt.randperm(-(1 << 32)) end)
    assert_err("linspace: number of steps must be non-negative, got -4294967296",
      function() pt.linspace(0, 1, -(1 << 32)) end)
  end)
end)

describe("pt.multinomial", function()
  it("draws indices from 1 with probabilities proportional to the weights", function()
    pt.manual_seed(9)
    local w = pt.tensor({1, 0, 2, 5}, {dtype = "float64"})
    local d = pt.multinomial(w, N, {replacement = true})
    assert.are.equal("int64", d:dtype())
    assert.are.equal(0, d:eq(2):sum():item()) -- a zero weight is never drawn
    for i, p in ipairs({1 / 8, 0, 2 / 8, 5 / 8}) do
      near(p, d:eq(i):double():mean():item(), 0.005, "category " .. i)
    end
    local rows = pt.multinomial(pt.tensor({{0, 1}, {1, 0}}), 4, true)
    assert.are.same({{2, 2, 2, 2}, {1, 1, 1, 1}}, rows:tolist())
  end)

  it("without replacement: each index once per row, the first draw proportional to the weights", function()
    pt.manual_seed(10)
    local rows = 40000
    local w = pt.tensor({{1, 2, 3, 4}}, {dtype = "float64"}):expand(rows, 4)
    local d = pt.multinomial(w, 4)
    assert.are.same({rows, 4}, d:size())
    assert.is_true(d:sort(2):eq(pt.tensor({{1, 2, 3, 4}}, {dtype = "int64"})):all():item())
    for i = 1, 4 do near(i / 10, d[{{}, 1}]:eq(i):double():mean():item(), 0.01, "first draw " .. i) end
    -- the second draw given the first, e.g. P(second = 4 | first = 1) = 4 / 9
    local first1 = d[{{}, 1}]:eq(1)
    local second4 = pt.where(first1, d[{{}, 2}]:eq(4):double(), pt.zeros(rows, {dtype = "float64"})):sum():item()
    near(4 / 9, second4 / first1:sum():item(), 0.03, "second draw")
    local z = pt.multinomial(pt.tensor({0, 3, 0, 1}), 2)
    assert.are.same({1, 2, 3, 4}, pt.tensor({1, 2, 3, 4}):tolist())
    local s = z:sort():tolist()
    assert.are.same({2, 4}, s)
  end)

  it("checks its weights and counts", function()
    local w = pt.tensor({1, 0, 2})
    assert_err("multinomial: cannot draw 4 samples from 3 categories without replacement",
      function() pt.multinomial(w, 4) end)
    assert_err("multinomial: row 1 has 2 nonzero weights, fewer than the 3 samples drawn without replacement",
      function() pt.multinomial(w, 3) end)
    assert_err("multinomial: weights must be non-negative and finite, got -1 in row 2",
      function() pt.multinomial(pt.tensor({{1, 1}, {-1, 2}}), 1) end)
    assert_err("multinomial: the weights of row 1 sum to zero", function() pt.multinomial(pt.zeros(3), 1, true) end)
    assert_err("multinomial: weights must be 1-D or 2-D, got 3 dimensions",
      function() pt.multinomial(pt.ones(2, 2, 2), 1) end)
    assert_err("multinomial: number of samples must be non-negative, got -1", function() pt.multinomial(w, -1) end)
    assert_err("multinomial: unknown option 'replace'", function() pt.multinomial(w, 1, {replace = true}) end)
    assert.are.same({0}, pt.multinomial(w, 0):size())
  end)
end)

describe("the samplers' gradients", function()
  -- torch 1.13: normal(mean, std), bernoulli(probs) and poisson(rates) of tensors that require
  -- grad give results in the graph (NormalBackward3, BernoulliBackward0, PoissonBackward0) whose
  -- gradient is zero for every parameter; bernoulli(t, p) and anything under no_grad do not
  it("are zeros for every parameter, as torch's", function()
    local m = pt.tensor({0.5, 1.0}, {requires_grad = true})
    local s = pt.tensor({1.0, 2.0}, {requires_grad = true})
    local y = pt.normal(m, s)
    assert.is_true(y.requires_grad)
    assert.are.equal("NormalBackward", y.grad_fn)
    y:sum():backward()
    assert.are.same({0, 0}, m.grad:tolist())
    assert.are.same({0, 0}, s.grad:tolist())
    local m2 = pt.tensor({{0.5}, {1.0}}, {requires_grad = true, dtype = "float64"})
    local y2 = pt.normal(m2, pt.ones(2, 3, {dtype = "float64"}))
    assert.are.same({2, 3}, y2:size())
    y2:sum():backward()
    assert.are.same({{0}, {0}}, m2.grad:tolist())
    local p = pt.tensor({0.3, 0.7}, {requires_grad = true})
    local b = pt.bernoulli(p)
    assert.are.equal("BernoulliBackward", b.grad_fn)
    b:sum():backward()
    assert.are.same({0, 0}, p.grad:tolist())
    local r = pt.tensor({2.0, 3.0}, {requires_grad = true})
    local q = pt.poisson(r)
    assert.are.equal("PoissonBackward", q.grad_fn)
    q:sum():backward()
    assert.are.same({0, 0}, r.grad:tolist())
  end)
  it("are not recorded for bernoulli(t, p), plain tensors or under no_grad", function()
    local p = pt.tensor({0.3, 0.7}, {requires_grad = true})
    assert.is_false(pt.bernoulli(p, 0.5).requires_grad)
    assert.is_false(pt.normal(pt.tensor({1.0}), 1.0).requires_grad)
    pt.no_grad(function() assert.is_false(pt.poisson(pt.tensor({2.0}, {requires_grad = true})).requires_grad) end)
  end)
end)
