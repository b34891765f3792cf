-- cummax/cummin, logcumsumexp, histc and scatter_reduce against torch 1.13 (values computed with
-- /usr/bin/python3 on the same inputs; indices are torch's + 1, partrain being 1-based), float64
-- gradchecks and every error message.
local pt = require "partrain"
local support = require "spec.support"
local gradcheck = require "spec.gradcheck"
local flat = support.flat
local close = support.assert_close_with(1e-6)

local NAN, INF = 0 / 0, math.huge
local F64 = {dtype = "float64"}

local function L(v, dt) return pt.tensor(v, {dtype = dt or "int64"}) end

-- exact element-wise equality of nested tables (NaN equals NaN), integers staying integers
local function same(expected, actual, what)
  local e, a = flat(expected), flat(pt.is_tensor(actual) and actual:tolist() or actual)
  assert.are.equal(#e, #a, what)
  for k = 1, #e do
    local ok = e[k] ~= e[k] and a[k] ~= a[k] or e[k] == a[k] and math.type(e[k]) == math.type(a[k])
    assert.is_true(ok, ("%s element %d: expected %s, got %s"):format(what or "", k, tostring(e[k]), tostring(a[k])))
  end
end

local has = support.assert_error_contains

describe("cummax and cummin", function()
  local x = pt.tensor({{3, 1, 4, 1}, {5, 9, 2, 6}, {5, 3, 5, 8}})
  local expected = {
    cummax = {
      [1] = {{{3, 1, 4, 1}, {5, 9, 4, 6}, {5, 9, 5, 8}}, {{1, 1, 1, 1}, {2, 2, 1, 2}, {3, 2, 3, 3}}},
      [2] = {{{3, 3, 4, 4}, {5, 9, 9, 9}, {5, 5, 5, 8}}, {{1, 1, 3, 3}, {1, 2, 2, 2}, {1, 1, 3, 4}}},
    },
    cummin = {
      [1] = {{{3, 1, 4, 1}, {3, 1, 2, 1}, {3, 1, 2, 1}}, {{1, 1, 1, 1}, {1, 1, 2, 1}, {1, 1, 2, 1}}},
      [2] = {{{3, 1, 1, 1}, {5, 5, 2, 2}, {5, 3, 3, 3}}, {{1, 2, 2, 4}, {1, 1, 3, 3}, {1, 2, 2, 2}}},
    },
  }

  it("gives torch's values and 1-based indices along every dim (ties take the later index)", function()
    for name, per_dim in pairs(expected) do
      for d, e in pairs(per_dim) do
        for _, dim in ipairs({d, d - 3}) do -- 1, -2 and 2, -1
          local v, i = x[name](x, dim)
          close(v, e[1], 0)
          same(e[2], i, name .. " indices dim " .. dim)
          local v2, i2 = pt[name](x, {dim = dim})
          assert.is_true(v2:equal(v) and i2:equal(i))
        end
      end
    end
  end)

  it("integer, uint8 and bool tensors keep their dtype", function()
    local xi = L({{2, -7, 2}, {-7, 2, 2}})
    local v, i = xi:cummax(2)
    same({{2, 2, 2}, {-7, 2, 2}}, v); same({{1, 1, 3}, {1, 2, 3}}, i)
    v, i = xi:cummin(2)
    same({{2, -7, -7}, {-7, -7, -7}}, v); same({{1, 2, 2}, {1, 1, 1}}, i)
    assert.are.equal("int64", v:dtype())
    local xu = L({3, 3, 1, 200, 200}, "uint8")
    v, i = xu:cummax()
    same({3, 3, 3, 200, 200}, v); same({1, 2, 2, 4, 5}, i)
    assert.are.equal("uint8", v:dtype())
    v, i = xu:cummin(1)
    same({3, 3, 1, 1, 1}, v); same({1, 2, 3, 3, 3}, i)
    v, i = L({true, false, true}, "bool"):cummax(1)
    same({true, true, true}, v); same({1, 1, 3}, i)
  end)

  it("a NaN takes over and stays, with the index of the latest NaN; infinities order as numbers", function()
    local xn = pt.tensor({INF, 1, -INF, NAN, 2, NAN, -1})
    local v, i = xn:cummax(1)
    same({INF, INF, INF, NAN, NAN, NAN, NAN}, v); same({1, 1, 1, 4, 4, 6, 6}, i)
    v, i = xn:cummin(1)
    same({INF, 1.0, -INF, NAN, NAN, NAN, NAN}, v); same({1, 2, 3, 4, 4, 6, 6}, i)
  end)

  it("0-d and empty tensors", function()
    local v, i = pt.tensor(3):cummax()
    assert.are.equal(0, v:dim()); assert.are.equal(3, v:item()); assert.are.equal(1, i:item())
    v, i = pt.tensor(3):cummin(-1)
    assert.are.equal(1, i:item())
    v, i = pt.zeros(2, 0):cummin(2)
    same({2, 0}, v:size()); same({2, 0}, i:size()); assert.are.equal("int64", i:dtype())
  end)

  it("sends each value's gradient to the element at its index (torch's values)", function()
    local g = pt.tensor({1, 2, 3, 4, 5, 6}, F64)
    local a = pt.tensor({1, 3, 3, 2, 5, 0}, {dtype = "float64", requires_grad = true})
    a:cummax(1):backward(g)
    same({1.0, 2.0, 7.0, 0.0, 11.0, 0.0}, a.grad)
    a = pt.tensor({1, 3, 3, 2, 5, 0}, {dtype = "float64", requires_grad = true})
    a:cummin(1):backward(g)
    same({15.0, 0.0, 0.0, 0.0, 0.0, 6.0}, a.grad)
    assert.are.equal("CummaxBackward", pt.tensor({1.0}, {requires_grad = true}):cummax(1).grad_fn)
  end)

  it("passes float64 gradchecks", function()
    local a = pt.tensor({{0.3, -1.2, 2.5, 0.7}, {1.1, 0.4, -0.6, 3.3}, {-2.0, 0.9, 1.7, 0.1}}, F64)
    for _, name in ipairs({"cummax", "cummin"}) do
      for _, d in ipairs({1, 2, -1}) do
        assert.is_true(gradcheck(function(t) return (t[name](t, d)) end, {a}))
      end
    end
  end)

  it("checks its arguments", function()
    has("cummax: a dimension is needed for a 2-D tensor", pt.cummax, pt.zeros(2, 2))
    has("cummin: dimension 3 out of range (tensor has 2 dimensions)", pt.cummin, pt.zeros(2, 2), 3)
    has("cummax: unknown option 'dims' (options: dim)", pt.cummax, pt.zeros(2), {dims = 1})
    has("cummin: unexpected argument #3", pt.cummin, pt.zeros(2), 1, 2)
  end)
end)

describe("logcumsumexp", function()
  local l = pt.tensor({{0.5, -1.25, 3.0}, {100.0, -100.0, 0.0}}, F64)

  it("gives torch's values along each dim, stably", function()
    close(l:logcumsumexp(1), {{0.5, -1.25, 3.0}, {100.0, -1.25, 3.048587351573742}}, 1e-14)
    close(l:logcumsumexp(2), {{0.5, 0.6602241504380872, 3.0919857805919686}, {100.0, 100.0, 100.0}}, 1e-14)
    close(pt.logcumsumexp(l, -2), l:logcumsumexp(1), 0)
    local f = l:float():logcumsumexp({dim = 2})
    assert.are.equal("float32", f:dtype())
    same({0.5, 0.6602241396903992, 3.0919857025146484, 100.0, 100.0, 100.0}, flat(f:tolist()))
    same({-1000.0, 0.0, 1000.0}, pt.tensor({-1000.0, 0.0, 1000.0}):logcumsumexp(1))
  end)

  it("handles infinities and NaN as torch", function()
    same({-INF, 0.0, INF, INF, INF}, pt.tensor({-INF, 0.0, INF, -INF, INF}):logcumsumexp(1))
    same({1.0, NAN, NAN}, pt.tensor({1.0, NAN, 2.0}):logcumsumexp(1))
    same({-INF, -INF}, pt.tensor({-INF, -INF}):logcumsumexp())
    assert.are.equal(2.5, pt.tensor(2.5):logcumsumexp():item())
    same({2, 0}, pt.zeros(2, 0):logcumsumexp(2):size())
  end)

  it("has torch's gradient and passes a float64 gradcheck", function()
    local a = l:clone()
    a.requires_grad = true
    a:logcumsumexp(2):backward(pt.tensor({{1, -2, 0.5}, {0, 3, -1}}, F64))
    close(a.grad, {{-0.6664699966556009, -0.28958906296069387, 0.45605905961629484},
                   {1.999999999999993, 2.767793053473465e-87, -3.720075976020836e-44}}, 1e-12)
    local b = pt.tensor({{0.3, -1.2, 2.5, 0.7}, {1.1, 0.4, -0.6, 3.3}}, F64)
    assert.is_true(gradcheck(function(t) return t:logcumsumexp(2) end, {b}))
    assert.is_true(gradcheck(function(t) return t:logcumsumexp(1) end, {b}))
  end)

  it("checks its arguments", function()
    has("logcumsumexp: expected a float32 or float64 tensor, got int64", pt.logcumsumexp, L({1, 2}), 1)
    has("logcumsumexp: a dimension is needed for a 2-D tensor", pt.logcumsumexp, pt.zeros(2, 2))
    has("logcumsumexp: dimension -3 out of range (tensor has 2 dimensions)", pt.logcumsumexp, pt.zeros(2, 2), -3)
  end)
end)

describe("histc", function()
  it("counts as torch.histc", function()
    same({0.0, 2.0, 1.0, 0.0}, pt.tensor({1, 2, 1}):histc(4, 0, 3))
    local h = pt.tensor({{0.5, 1.5}, {2.5, 3.5}}, F64):histc(3) -- the data's range
    same({1.0, 1.0, 2.0}, h)
    assert.are.equal("float64", h:dtype())
    same({0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0}, pt.histc(pt.tensor({0.1, 0.2, 0.3, 0.7, 1.0}), {bins = 10, min = 0, max = 1}))
    same({0.0, 2.0}, pt.tensor({-5, 5, 0, 0.5}):histc(2, -1, 1)) -- outside the range: not counted
    same({0.0, 0.0, 1.0, 0.0}, pt.tensor({7}):histc(4)) -- one value: widened by 1 each side
    same({0.0, 0.0, 0.0}, pt.tensor({}):histc(3))
    assert.are.equal(100, pt.tensor({1, 2}):histc():numel()) -- 100 bins by default
    local c = pt.arange(100):float() / 7
    same({7.0, 7.0, 6.0, 7.0, 6.0, 7.0, 7.0, 6.0, 7.0, 6.0, 7.0, 7.0, 6.0, 7.0, 7.0}, c:histc({bins = 15}))
  end)

  it("puts elements on a bin edge where torch 1.13 does", function()
    -- (x - min) / (max - min) * bins in float32: -0.35384616 is bin 12, not 13
    local x = pt.tensor({-1.0, -0.35384616255760193, -0.3})
    same({1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0}, x:histc(13, -1, -0.3))
    -- torch's linspace leaves its last edge at 0.8999999999999999 for 8 float64 edges: 0.9 is out
    same({1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0}, pt.tensor({-0.87, 0.9, 0.1, 0.2, 0.3}, F64):histc(7))
  end)

  it("counts a NaN in the first bin, as torch 1.13", function()
    same({2.0, 0.0, 0.0}, pt.tensor({NAN, 1, 5}):histc(3, 0, 4))
  end)

  it("has no gradient", function()
    local a = pt.tensor({1.0, 2.0}, {requires_grad = true})
    assert.is_false(a:histc(2).requires_grad)
  end)

  it("checks its arguments", function()
    has("histc: expected a float32 or float64 tensor, got int64 (t:float() converts)", pt.histc, L({1, 2}), 3)
    has("histc: bins must be positive, got 0", pt.histc, pt.tensor({1, 2}), 0)
    has("histc: bins must be positive, got -1", pt.histc, pt.tensor({1, 2}), {bins = -1})
    has("histc: bins must be an integer, got 2.5", pt.histc, pt.tensor({1, 2}), 2.5)
    has("histc: max must be larger than min, got min 3 and max 1", pt.histc, pt.tensor({1, 2}), 3, 3, 1)
    has("histc: range of [nan, nan] is not finite", pt.histc, pt.tensor({1, NAN, 3}), 3)
    has("histc: range of [1, inf] is not finite", pt.histc, pt.tensor({1, INF, 3}), 3)
    has("histc: range of [-inf, 3] is not finite", pt.histc, pt.tensor({1, 2}), 2, -INF, 3)
    has("histc: bins given twice (as argument #2 and as an option)", pt.histc, pt.tensor({1.0}), 3, {bins = 2})
    has("histc: unknown option 'bin' (options: bins, min, max)", pt.histc, pt.tensor({1.0}), {bin = 2})
    has("histc: min must be a number, got string", pt.histc, pt.tensor({1.0}), 3, "0")
    has("histc: max must be a number, got boolean", pt.histc, pt.tensor({1.0}), {max = true})
    has("histc: unexpected argument #5", pt.histc, pt.tensor({1.0}), 3, 0, 1, 2)
  end)
end)

describe("scatter_reduce", function()
  local x = pt.tensor({{1, 2, 3}, {4, 5, 6}})
  local src = pt.tensor({{10, 20, 30}, {40, 50, 60}})
  local i1 = L({{3, 1}, {1, 1}}) -- along dim 2
  local i0 = L({{2, 1, 2}, {2, 2, 1}}) -- along dim 1
  -- {reduce, include_self, dim 2 result, dim 1 result} from torch
  local cases = {
    {"sum", true, {{21, 2, 13}, {94, 5, 6}}, {{1, 22, 63}, {54, 55, 36}}},
    {"sum", false, {{20, 2, 10}, {90, 5, 6}}, {{1, 20, 60}, {50, 50, 30}}},
    {"prod", true, {{20, 2, 30}, {8000, 5, 6}}, {{1, 40, 180}, {1600, 250, 180}}},
    {"prod", false, {{20, 2, 10}, {2000, 5, 6}}, {{1, 20, 60}, {400, 50, 30}}},
    {"mean", true, {{10.5, 2, 6.5}, {31.33333396911621, 5, 6}}, {{1, 11, 31.5}, {18, 27.5, 18}}},
    {"mean", false, {{20, 2, 10}, {45, 5, 6}}, {{1, 20, 60}, {25, 50, 30}}},
    {"amax", true, {{20, 2, 10}, {50, 5, 6}}, {{1, 20, 60}, {40, 50, 30}}},
    {"amax", false, {{20, 2, 10}, {50, 5, 6}}, {{1, 20, 60}, {40, 50, 30}}},
    {"amin", true, {{1, 2, 3}, {4, 5, 6}}, {{1, 2, 3}, {4, 5, 6}}},
    {"amin", false, {{20, 2, 10}, {40, 5, 6}}, {{1, 20, 60}, {10, 50, 30}}},
  }

  it("reduces as torch.scatter_reduce along either dim, with and without self", function()
    for _, c in ipairs(cases) do
      local what = c[1] .. (c[2] and " with self" or " without self")
      close(x:scatter_reduce(2, i1, src, c[1], {include_self = c[2]}), c[3], 1e-7)
      close(pt.scatter_reduce(x, -2, i0, src, c[1], {include_self = c[2]}), c[4], 1e-7)
      assert.are.equal("float32", x:scatter_reduce(-1, i1, src, c[1]):dtype(), what)
    end
  end)

  it("integer dtypes: wrapping sums and products, floor division for mean", function()
    local s, i, t = L({1, 2, 3, 4, 5, 6}), L({1, 2, 1, 2, 3, 2}), L({10, 20, 30, 40})
    local expected = {
      sum = {{14, 32, 35, 40}, {4, 12, 5, 40}}, prod = {{30, 960, 150, 40}, {3, 48, 5, 40}},
      mean = {{4, 8, 17, 40}, {2, 4, 5, 40}}, amax = {{10, 20, 30, 40}, {3, 6, 5, 40}},
      amin = {{1, 2, 5, 40}, {1, 2, 5, 40}},
    }
    for r, e in pairs(expected) do
      same(e[1], t:scatter_reduce(1, i, s, r), r)
      same(e[2], t:scatter_reduce(1, i, s, r, {include_self = false}), r .. " without self")
    end
    same({-5, -9, -18, -40}, L({-10, -21, -30, -40}):scatter_reduce(1, i, -s, "mean"))
    local big = math.tointeger(2 ^ 62)
    same({-4611686018427387903, 1}, L({big, 1}):scatter_reduce(1, L({1, 1}), L({big, big + 1}), "sum"))
    same({0, 1}, L({3, 1}):scatter_reduce(1, L({1, 1}), L({1 << 40, 1 << 30}), "prod"))
    same({5, 8}, L({5, 6}, "int32"):scatter_reduce(1, L({2, 2}), L({9, 8}, "int32"), "amin", {include_self = false}))
    same({5, -2}, L({5, -6}, "int32"):scatter_reduce(1, L({2, 2}), L({9, -8}, "int32"), "mean"))
    same({0, 2}, L({1, 2}, "int32"):scatter_reduce(1, L({1, 1}), L({1 << 30, 4}, "int32"), "prod"))
    same({45, 2}, L({1, 2}, "uint8"):scatter_reduce(1, L({1, 1}), L({200, 100}, "uint8"), "sum"))
    same({100, 2}, L({1, 2}, "uint8"):scatter_reduce(1, L({1, 1}), L({200, 100}, "uint8"), "amin", {include_self = false}))
  end)

  it("bool: sum and amax are or, prod and amin are and", function()
    local bx, bs = L({true, false, true, false}, "bool"), L({true, true, false, false, false, true}, "bool")
    local bi = L({1, 2, 1, 2, 3, 3})
    for _, inc in ipairs({true, false}) do
      same({true, true, true, false}, bx:scatter_reduce(1, bi, bs, "sum", {include_self = inc}))
      same({true, true, true, false}, bx:scatter_reduce(1, bi, bs, "amax", {include_self = inc}))
      same({false, false, false, false}, bx:scatter_reduce(1, bi, bs, "prod", {include_self = inc}))
      same({false, false, false, false}, bx:scatter_reduce(1, bi, bs, "amin", {include_self = inc}))
    end
  end)

  it("NaN propagates through amax and amin from either side", function()
    local xn, sn, i4 = pt.tensor({0, NAN, 2}), pt.tensor({NAN, 1, 5, 7}), L({1, 1, 2, 3})
    same({NAN, NAN, 7.0}, xn:scatter_reduce(1, i4, sn, "amax"))
    same({NAN, 5.0, 7.0}, xn:scatter_reduce(1, i4, sn, "amax", {include_self = false}))
    same({NAN, NAN, 2.0}, xn:scatter_reduce(1, i4, sn, "amin"))
    same({NAN, 5.0, 7.0}, xn:scatter_reduce(1, i4, sn, "amin", {include_self = false}))
  end)

  it("0-d tensors, an empty index and a src larger than the index", function()
    local r = pt.tensor(5):scatter_reduce(1, L(1), pt.tensor(7), "sum")
    assert.are.equal(0, r:dim()); assert.are.equal(12, r:item())
    same({5.0}, pt.tensor({5}):scatter_reduce(1, L({}), pt.tensor({}), "prod"))
    same({7.0, 2.0}, pt.tensor({1, 2}):scatter_reduce(1, L({1}), pt.tensor({7, 100}), "amax", {include_self = false}))
  end)

  it("has torch's gradients (ties shared, self counted without include_self, zeros in prod)", function()
    -- {reduce, include_self, out, grad of self, grad of src} from torch for the inputs below
    local grads = {
      {"sum", true, {6, 1, 3, 4}, {1, 2, 3, 4}, {1, 2, 1, 4, 2, 2}},
      {"sum", false, {5, 1, 3, 2}, {0, 0, 3, 0}, {1, 2, 1, 4, 2, 2}},
      {"prod", true, {6, 0, 3, 4}, {6, 0, 3, 8}, {3, 0, 2, 8, 0, 0}},
      {"prod", false, {6, 0, 3, 2}, {0, 0, 3, 0}, {3, 0, 2, 4, 0, 0}},
      {"mean", true, {2, 0.25, 3, 2}, {1 / 3, 0.5, 3, 2}, {1 / 3, 0.5, 1 / 3, 2, 0.5, 0.5}},
      {"mean", false, {2.5, 1 / 3, 3, 2}, {0, 0, 3, 0}, {0.5, 2 / 3, 0.5, 4, 2 / 3, 2 / 3}},
      {"amax", true, {3, 1, 3, 2}, {0, 0, 3, 2}, {0, 0, 1, 2, 0, 2}},
      {"amax", false, {3, 1, 3, 2}, {0, 0, 3, 0}, {0, 0, 1, 2, 0, 2}},
      {"amin", true, {1, 0, 3, 2}, {1, 2 / 3, 3, 2}, {0, 2 / 3, 0, 2, 2 / 3, 0}},
      {"amin", false, {2, 0, 3, 2}, {0, 0, 3, 0}, {1, 2 / 3, 0, 2, 2 / 3, 0}},
    }
    for _, c in ipairs(grads) do
      local xx = pt.tensor({1, 0, 3, 2}, {dtype = "float64", requires_grad = true})
      local ss = pt.tensor({2, 0, 3, 2, 0, 1}, {dtype = "float64", requires_grad = true})
      local out = xx:scatter_reduce(1, L({1, 2, 1, 4, 2, 2}), ss, c[1], {include_self = c[2]})
      out:backward(pt.tensor({1, 2, 3, 4}, F64))
      close(out, c[3], 1e-15)
      close(xx.grad, c[4], 1e-15)
      close(ss.grad, c[5], 1e-15)
    end
  end)

  it("passes float64 gradchecks for every reduction", function()
    local a = pt.tensor({{0.5, -1.5, 2.0}, {1.25, 0.0, -0.75}}, F64)
    local s = pt.tensor({{1.1, -0.3, 0.0, 2.2}, {0.7, 0.0, -1.4, 0.9}}, F64) -- zeros: prod's special cases
    local idx = L({{1, 3, 1, 1}, {2, 2, 2, 3}})
    for _, r in ipairs({"sum", "prod", "mean", "amax", "amin"}) do
      for _, inc in ipairs({true, false}) do
        assert.is_true(gradcheck(function(t, u) return t:scatter_reduce(2, idx, u, r, {include_self = inc}) end, {a, s}))
      end
    end
  end)

  it("checks its arguments", function()
    local t, i, s = pt.tensor({1, 2}), L({1, 2}), pt.tensor({3, 4})
    has("scatter_reduce: reduce must be one of sum, prod, mean, amax or amin, got 'max'", pt.scatter_reduce, t, 1, i, s, "max")
    has("scatter_reduce: reduce must be one of sum, prod, mean, amax or amin, got nothing", pt.scatter_reduce, t, 1, i, s)
    has("scatter_reduce: src must have the tensor's dtype (float32), got float64", pt.scatter_reduce, t, 1, i, s:double(), "sum")
    has("scatter_reduce: index must be an int64 tensor, got float32", pt.scatter_reduce, t, 1, pt.tensor({1, 2}), s, "sum")
    has("scatter_reduce: index 3 out of range for dimension 1 of size 2", pt.scatter_reduce, t, 1, L({1, 3}), s, "sum")
    has("scatter_reduce: index 0 out of range for dimension 1 of size 2", pt.scatter_reduce, t, 1, L({0}), s, "sum")
    has("scatter_reduce: index must have as many dimensions as the tensor (1), got 2", pt.scatter_reduce, t, 1, L({{1}}), s, "sum")
    has("scatter_reduce: src must have as many dimensions as index (1), got 2", pt.scatter_reduce, t, 1, i, pt.zeros(1, 2), "sum")
    has("scatter_reduce: index of shape {3} does not fit src of shape {2} in dimension 1", pt.scatter_reduce, t, 1, L({1, 1, 1}), s, "sum")
    has("scatter_reduce: index of shape {1,3} does not fit the tensor of shape {2,2} in dimension 2", pt.scatter_reduce,
        pt.zeros(2, 2), 1, L({{1, 1, 1}}), pt.zeros(2, 3), "sum")
    has("scatter_reduce: dimension 2 out of range (tensor has 1 dimensions)", pt.scatter_reduce, t, 2, i, s, "sum")
    has("scatter_reduce: reduce 'mean' is not supported for bool tensors", pt.scatter_reduce, L({true}, "bool"), 1,
        L({1}), L({false}, "bool"), "mean")
    has("scatter_reduce: unknown option 'self' (options: include_self)", pt.scatter_reduce, t, 1, i, s, "sum", {self = false})
  end)
end)

describe("cumsum and cumprod of int64", function()
  it("wrap around on overflow as torch's (two's complement), exactly", function()
    local I = {dtype = "int64"}
    assert.are.same({4611686018427387904, 0, 0}, pt.tensor({1 << 62, 4, 3}, I):cumprod(1):tolist())
    assert.are.same({math.maxinteger, math.mininteger, math.mininteger + 1},
      pt.tensor({math.maxinteger, 1, 1}, I):cumsum(1):tolist())
  end)
end)
