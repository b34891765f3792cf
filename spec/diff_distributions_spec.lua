-- pt.distributions against torch.distributions 1.13: cases found by differential testing.
-- Expected numbers are torch 1.13's (/usr/bin/python3), hard-coded next to the inputs that
-- produced them; Categorical values are 1-based here (torch's + 1).
local pt = require "partrain"
local support = require "spec.support"
local D = pt.distributions

local nan = 0 / 0

local function flat(v) return support.flat(pt.is_tensor(v) and v:tolist() or v) end

-- element by element: nan with nan, else within tol (relative above 1)
local function close(got, want, tol)
  tol = tol or 1e-12
  local a, b = flat(got), flat(want)
  assert.are.equal(#b, #a, "number of elements")
  for i = 1, #b do
    local x, y = a[i], b[i]
    local ok
    if y ~= y then ok = x ~= x else ok = math.abs(x - y) <= tol * math.max(1, math.abs(y)) end
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
