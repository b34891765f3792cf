-- Reductions over lists of dims, nansum/nanmean/count_nonzero, median/kthvalue/mode, nonzero,
-- unique, bincount, searchsorted. Expected values were computed with PyTorch 1.13
-- (/usr/bin/python3) on the same inputs; indices are torch's + 1 (partrain is 1-based).
local pt = require "partrain"
local support = require "spec.support"
local gradcheck = require "spec.gradcheck"

local F64 = {dtype = "float64"}
local I64 = {dtype = "int64"}
local NAN = 0 / 0

local function near(expected, actual, tol)
  tol = tol or 1e-12
  if type(expected) == "table" then
    assert.are.equal(#expected, #actual)
    for i = 1, #expected do near(expected[i], actual[i], tol) end
  elseif expected ~= expected then
    assert.is_true(actual ~= actual, "expected nan, got " .. tostring(actual))
  else
    assert.is_true(math.abs(expected - actual) <= tol * (1 + math.abs(expected)),
                   string.format("expected %.17g, got %.17g", expected, actual))
  end
end

local function err_of(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok)
  return err
end

local has = support.assert_error_contains

-- (arange(24) * 7 % 11 - 3):reshape(2, 3, 4), float64
local function x3()
  return pt.tensor({{{-3, 4, 0, 7}, {3, -1, 6, 2}, {-2, 5, 1, -3}},
                    {{4, 0, 7, 3}, {-1, 6, 2, -2}, {5, 1, -3, 4}}}, F64)
end

describe("reductions over a list of dims", function()
  it("sum over non-adjacent, adjacent, reordered and negative dims", function()
    local x = x3()
    assert.are.same({22, 15, 8}, x:sum({1, 3}):tolist())
    assert.are.same({22, 15, 8}, x:sum({3, 1}):tolist())
    assert.are.same({22, 15, 8}, x:sum({-1, 1}):tolist())
    assert.are.same({19, 26}, x:sum({2, 3}):tolist())
    assert.are.same({6, 15, 13, 11}, pt.sum(x, {1, 2}):tolist())
    assert.are.same({{{22}, {15}, {8}}}, x:sum({1, 3}, true):tolist())
    assert.are.same({{{22}, {15}, {8}}}, x:sum({1, 3}, {keepdim = true}):tolist())
    assert.are.same({1, 3, 1}, x:sum({1, 3}, {keepdim = true}):size())
    assert.are.equal(45, x:sum({1, 2, 3}):item())
    assert.are.equal(0, x:sum({1, 2, 3}):dim())
  end)

  it("an empty list means every dim (as torch's sum(dim=())), also with keepdim", function()
    local x = x3()
    assert.are.equal(45, x:sum({}):item())
    assert.are.equal(0, x:sum({}):dim())
    assert.are.same({1, 1, 1}, x:sum({}, true):size())
    near(45 / 24, x:mean({}):item())
    near(3.2878233846567326 ^ 2, x:var({}):item())
    near(3.2878233846567326, x:std({}):item())
  end)

  it("a one-dim list gives the single-dim result; every form of keepdim still works", function()
    local x = x3()
    assert.is_true(pt.equal(x:sum(2), x:sum({2})))
    assert.is_true(pt.equal(x:mean(-1, true), x:mean({-1}, true)))
    assert.is_true(pt.equal(x:var(1, {correction = 0}), x:var({1}, {correction = 0})))
    assert.are.same({2, 3, 1}, x:sum(3, true):size())
    assert.are.same({2, 1, 4}, x:mean(2, {keepdim = true}):size())
    assert.are.same({1, 1, 1}, x:sum({keepdim = true}):size())
    assert.are.equal(45, x:sum({}):item())
    local s = pt.tensor(5.0, F64) -- 0-d: dim 1 and -1 only
    assert.are.equal(5, s:sum({1}):item())
    assert.are.equal(0, s:sum({-1}, true):dim())
  end)

  it("mean, var, std, logsumexp and norm reduce the dims together (values from torch)", function()
    local x = x3()
    assert.are.same({{{2.75}, {1.875}, {1.0}}}, x:mean({1, 3}, {keepdim = true}):tolist())
    assert.are.same({2.75, 1.875, 1.0}, x:mean({-1, 1}):tolist())
    near({12.5, 9.553571428571429, 11.714285714285714}, x:var({1, 3}):tolist())
    near({10.9375, 8.359375, 10.25}, x:var({1, 3}, {correction = 0}):tolist())
    near({10.9375, 8.359375, 10.25}, pt.var(x, {1, 3}, {unbiased = false}):tolist())
    near({{{10.9375}, {8.359375}, {10.25}}}, x:var({1, 3}, true, {unbiased = false}):tolist())
    near({{{10.9375}, {8.359375}, {10.25}}}, x:var({1, 3}, {keepdim = true, correction = 0}):tolist())
    near({3.4761089357690347, 3.2145502536643185}, x:std({2, 3}):tolist())
    near({3.1091263510296048, 2.6299556396765835, 3.435921354681384, 3.435921354681384},
         x:std({1, 2}, {correction = 0}):tolist())
    near({7.7513023744287635, 6.736483247049298, 5.878004488854457}, x:logsumexp({1, 3}):tolist())
    near({{{8.167433201834692}}}, x:logsumexp({1, 2, 3}, true):tolist())
    near({12.165525060596439, 9.746794344808963, 9.486832980505138}, x:norm(2, {1, 3}):tolist())
    near({{{37}}, {{38}}}, x:norm(1, {2, 3}, true):tolist())
    near({7, 6, 5}, x:norm(math.huge, {1, 3}):tolist())
    near({8.0, 8.888194417315589, 9.9498743710662, 9.539392014169456}, x:norm("fro", {1, 2}):tolist())
    near({9.539081845515277, 7.856828007847996, 7.230426792525689}, pt.norm(x, 3, {1, 3}):tolist())
  end)

  it("work on non-contiguous views and integer tensors", function()
    local xt = x3():transpose(1, 3) -- {4, 3, 2}
    assert.is_false(xt:is_contiguous())
    assert.are.same({22, 15, 8}, xt:sum({1, 3}):tolist())
    near({12.083333333333332, 10.333333333333334}, xt:var({1, 2}):tolist())
    local i = pt.tensor({{1, 2, 3}, {4, 5, 6}}, {dtype = "int32"})
    assert.are.equal("int64", i:sum({1, 2}):dtype())
    assert.are.equal(21, i:sum({1, 2}):item())
    has("mean: expected a floating point tensor, got int32", function() return i:mean({1, 2}) end)
  end)

  it("name the function and the dim in errors", function()
    local x = x3()
    has("sum: dimension 1 appears more than once in the list of dimensions", function() return x:sum({1, 1}) end)
    has("mean: dimension -3 appears more than once in the list of dimensions",
        function() return x:mean({1, -3}) end)
    has("var: dimension 2 appears more than once in the list of dimensions",
        function() return x:var({2, 3, 2}, {correction = 0}) end)
    has("norm: dimension 3 appears more than once in the list of dimensions", function() return x:norm(2, {3, 3}) end)
    has("sum: dimension 4 out of range (tensor has 3 dimensions)", function() return x:sum({1, 4}) end)
    has("logsumexp: dimension -4 out of range (tensor has 3 dimensions)", function() return x:logsumexp({-4}) end)
    has("std: dimension 0 out of range (tensor has 3 dimensions)", function() return x:std({0, 1}) end)
    has("sum: the list of dimensions holds 1.5 at position 2 (expected integers)", function() return x:sum({1, 1.5}) end)
    has("mean: the list of dimensions holds string at position 1 (expected integers)",
        function() return x:mean({"a"}) end)
    has("sum: the list of dimensions may hold only dimensions (found key 'keepdim'; options go in a table of their own)",
        function() return x:sum({1, keepdim = true}) end)
    has("sum: unknown option 'keepdims' (options: keepdim, dtype)", function() return x:sum({1, 2}, {keepdims = true}) end)
    has("var: unknown option 'ddof' (options: unbiased, correction, keepdim)",
        function() return x:var({1, 2}, {ddof = 0}) end)
    has("var: correction must be a non-negative integer, got -1", function() return x:var({1, 2}, {correction = -1}) end)
    has("var: correction must be a non-negative integer, got 1.5", function() return x:var({1, 2}, {correction = 1.5}) end)
    has("sum: unexpected argument #4 (number)", function() return x:sum({1}, true, 3) end)
  end)

  it("record the reduction for keepdim=false and flow gradients back", function()
    local x = x3()
    x.requires_grad = true
    assert.are.equal("SumBackward", x:sum({1, 3}).grad_fn)
    assert.are.equal("VarBackward", x:var({1, 2}).grad_fn)
    x:mean({1, 3}):sum():backward()
    near({{{0.125, 0.125, 0.125, 0.125}, {0.125, 0.125, 0.125, 0.125}, {0.125, 0.125, 0.125, 0.125}},
          {{0.125, 0.125, 0.125, 0.125}, {0.125, 0.125, 0.125, 0.125}, {0.125, 0.125, 0.125, 0.125}}},
         x.grad:tolist())
  end)

  describe("gradients (finite differences, float64)", function()
    pt.manual_seed(21)
    local a = pt.randn(2, 3, 4, F64)
    local b = pt.randn(3, 2, 2, 3, F64)
    it("sum and mean", function()
      assert.is_true(gradcheck(function(x) return x:sum({1, 3}) end, {a}))
      assert.is_true(gradcheck(function(x) return x:sum({3, 1}, true) end, {a}))
      assert.is_true(gradcheck(function(x) return x:sum({}) end, {a}))
      assert.is_true(gradcheck(function(x) return x:mean({2, 3}) end, {a}))
      assert.is_true(gradcheck(function(x) return x:mean({4, 1}, {keepdim = true}) end, {b}))
      assert.is_true(gradcheck(function(x) return x:transpose(1, 3):sum({1, 2}) end, {a}))
    end)
    it("var and std", function()
      assert.is_true(gradcheck(function(x) return x:var({1, 3}) end, {a}))
      assert.is_true(gradcheck(function(x) return x:var({2, 4}, true, {correction = 0}) end, {b}))
      assert.is_true(gradcheck(function(x) return x:std({1, 2}) end, {a}))
      assert.is_true(gradcheck(function(x) return x:std({1, 3, 4}, {unbiased = false}) end, {b}))
    end)
    it("logsumexp and norm", function()
      assert.is_true(gradcheck(function(x) return x:logsumexp({1, 3}) end, {a}))
      assert.is_true(gradcheck(function(x) return x:logsumexp({2, 3}, true) end, {b}))
      assert.is_true(gradcheck(function(x) return x:norm(2, {1, 3}) end, {a}))
      assert.is_true(gradcheck(function(x) return x:norm(3, {2, 3}, true) end, {a}))
      assert.is_true(gradcheck(function(x) return x:norm(1, {1, 4}) end, {b}))
      assert.is_true(gradcheck(function(x) return x:norm(math.huge, {1, 3}) end, {a}))
    end)
    it("nansum and nanmean, also over lists of dims (NaN elements get 0)", function()
      local n = pt.randn(3, 4, F64)
      n[{1, 2}] = NAN
      n[{3, 4}] = NAN
      assert.is_true(gradcheck(function(x) return x:nansum() end, {n}))
      assert.is_true(gradcheck(function(x) return x:nansum(2, true) end, {n}))
      assert.is_true(gradcheck(function(x) return x:nanmean(1) end, {n}))
      assert.is_true(gradcheck(function(x) return x:nanmean() end, {n}))
      local m = a:clone()
      m[{1, 2, 3}] = NAN
      assert.is_true(gradcheck(function(x) return x:nansum({1, 3}) end, {m}))
      assert.is_true(gradcheck(function(x) return x:nanmean({3, 1}, true) end, {m}))
    end)
  end)
end)

describe("nansum, nanmean, count_nonzero", function()
  local function n33()
    return pt.tensor({{NAN, 1, 2.5}, {3, NAN, NAN}, {-1, 4, 0.5}}, F64)
  end

  it("nansum counts NaN as 0 (values from torch)", function()
    local n = n33()
    assert.are.equal(10, n:nansum():item())
    assert.are.same({2, 5, 3}, n:nansum(1):tolist())
    assert.are.same({{3.5}, {3}, {3.5}}, pt.nansum(n, 2, true):tolist())
    assert.are.same({{3.5}, {3}, {3.5}}, n:nansum(2, {keepdim = true}):tolist())
    assert.are.equal(10, n:nansum({1, 2}):item())
    local n3 = pt.tensor({{{NAN, 1}, {2, 3}}, {{4, NAN}, {NAN, 5}}}, F64)
    assert.are.same({{{5}, {10}}}, n3:nansum({1, 3}, true):tolist())
    local i = pt.tensor({1, 2, 3}, {dtype = "int32"})
    assert.are.equal("int64", i:nansum():dtype())
    assert.are.equal(6, i:nansum():item())
    assert.are.equal(0, pt.zeros(0):nansum():item())
  end)

  it("nanmean averages the non-NaN elements (nan where there is none)", function()
    local n = n33()
    near(1.6666666666666667, n:nanmean():item())
    near({1, 2.5, 1.5}, n:nanmean(1):tolist())
    near({{1.75}, {3}, {1.1666666666666667}}, n:nanmean(2, true):tolist())
    near(1.6666666666666667, n:nanmean({2, 1}):item())
    local n3 = pt.tensor({{{NAN, 1}, {2, 3}}, {{4, NAN}, {NAN, 5}}}, F64)
    near({2.5, 3.3333333333333335}, n3:nanmean({1, 3}):tolist())
    near({NAN, 1.5}, pt.tensor({{NAN, NAN}, {1, 2}}):nanmean(2):tolist())
    assert.are.equal("float32", pt.tensor({{NAN, NAN}, {1, 2}}):nanmean(2):dtype())
  end)

  it("nansum/nanmean send no gradient to NaN elements", function()
    local n = n33()
    n.requires_grad = true
    n:nanmean(2):sum():backward()
    near({{0, 0.5, 0.5}, {1, 0, 0}, {1 / 3, 1 / 3, 1 / 3}}, n.grad:tolist())
    local m = n33()
    m.requires_grad = true
    assert.are.equal("NansumBackward", m:nansum(1).grad_fn)
    m:nansum():backward()
    assert.are.same({{0, 1, 1}, {1, 0, 0}, {1, 1, 1}}, m.grad:tolist())
  end)

  it("nansum/nanmean errors", function()
    has("nanmean: expected a floating point tensor, got int64",
        function() return pt.tensor({1, 2}, I64):nanmean() end)
    has("nansum: dimension 3 out of range (tensor has 2 dimensions)", function() return n33():nansum(3) end)
    has("nanmean: dimension -1 appears more than once in the list of dimensions",
        function() return n33():nanmean({2, -1}) end)
    has("nansum: unknown option 'dim' (options: keepdim, dtype)", function() return n33():nansum({dim = 1}) end)
  end)

  it("count_nonzero counts NaN, over everything, a dim or a list (int64, values from torch)", function()
    local c = pt.tensor({{0, 1, NAN}, {0, 0, 2}})
    assert.are.equal(3, c:count_nonzero():item())
    assert.are.equal("int64", c:count_nonzero():dtype())
    assert.are.same({0, 1, 2}, c:count_nonzero(1):tolist())
    assert.are.same({2, 1}, pt.count_nonzero(c, -1):tolist())
    assert.are.equal(3, c:count_nonzero({1, 2}):item())
    assert.are.equal(3, c:count_nonzero({}):item())
    -- (arange(24) % 3 == 0) as int32, {2, 3, 4}
    local c3 = pt.tensor({{{1, 0, 0, 1}, {0, 0, 1, 0}, {0, 1, 0, 0}},
                          {{1, 0, 0, 1}, {0, 0, 1, 0}, {0, 1, 0, 0}}}, {dtype = "int32"})
    assert.are.same({4, 2, 2}, c3:count_nonzero({1, 3}):tolist())
    assert.are.same({{2, 1, 1}, {2, 1, 1}}, c3:count_nonzero({3}):tolist())
    assert.are.equal(2, pt.tensor({true, false, true}):count_nonzero():item())
    assert.are.equal(0, pt.zeros(0):count_nonzero():item())
  end)

  it("count_nonzero errors", function()
    local c = pt.zeros(2, 3)
    has("count_nonzero: dimension 3 out of range (tensor has 2 dimensions)", function() return c:count_nonzero(3) end)
    has("count_nonzero: dimension 1 appears more than once in the list of dimensions",
        function() return c:count_nonzero({1, 1}) end)
    has("count_nonzero: unexpected argument #3 (boolean)", function() return c:count_nonzero(1, true) end)
  end)
end)

describe("median, kthvalue, mode", function()
  local function m25() return pt.tensor({{3, 1, 4, 1, 5}, {9, 2, 6, 5, 3}}) end

  it("median() is the lower median of every element, 0-d", function()
    assert.are.equal(3, m25():median():item())
    assert.are.equal(0, m25():median():dim())
    assert.are.equal(2, pt.median(pt.tensor({4, 1, 3, 2})):item())
    near(NAN, pt.tensor({3, NAN, 4, 2}):median():item())
    near(NAN, pt.zeros(0):median():item())
    assert.are.equal(7, pt.tensor(7.0):median():item())
    assert.are.equal(3, pt.tensor({5, 1, 3}, I64):median():item())
    assert.are.equal("int64", pt.tensor({5, 1, 3}, I64):median():dtype())
  end)

  it("median(dim) gives values and 1-based indices (values from torch)", function()
    local v, i = m25():median(2)
    assert.are.same({3, 5}, v:tolist())
    assert.are.same({1, 4}, i:tolist())
    v, i = pt.median(m25(), 1, true)
    assert.are.same({{3, 1, 4, 1, 3}}, v:tolist())
    assert.are.same({{1, 1, 1, 1, 2}}, i:tolist())
    v, i = m25():median(1, {keepdim = true})
    assert.are.same({1, 5}, i:size())
    v, i = pt.tensor({1, 2, 2, 2, 3}):median(1) -- ties: the middle one of a stable sort (torch: 2 + 1)
    assert.are.equal(2, v:item())
    assert.are.equal(3, i:item())
    v, i = pt.tensor({3, NAN, 4, 2, NAN}):median(1) -- NaN, at its first NaN (torch: 1 + 1)
    near(NAN, v:item())
    assert.are.equal(2, i:item())
    v, i = pt.tensor({{5, 1, 4}, {2, 2, 8}}, I64):median(2)
    assert.are.same({4, 2}, v:tolist())
    assert.are.same({3, 2}, i:tolist())
    assert.are.equal("int64", v:dtype())
  end)

  it("kthvalue picks the k-th smallest along the last dim or dim (values from torch)", function()
    local x = m25()
    local expect = {[1] = {{1, 2}, {2, 2}}, [2] = {{1, 3}, {4, 5}}, [3] = {{3, 5}, {1, 4}}, [5] = {{5, 9}, {5, 1}}}
    for k, e in pairs(expect) do
      local v, i = x:kthvalue(k)
      assert.are.same(e[1], v:tolist())
      assert.are.same(e[2], i:tolist())
    end
    local v, i = x:kthvalue(2, 1, true)
    assert.are.same({{9, 2, 6, 5, 5}}, v:tolist())
    assert.are.same({{2, 2, 2, 2, 1}}, i:tolist())
    v, i = pt.kthvalue(x, 2, {dim = 1, keepdim = true})
    assert.are.same({{2, 2, 2, 2, 1}}, i:tolist())
    v, i = pt.tensor({{3, NAN, 4, 2}}):kthvalue(4) -- NaN sorts largest
    near({NAN}, v:tolist())
    assert.are.same({2}, i:tolist())
    v, i = pt.tensor({{3, NAN, 4, 2}}):kthvalue(3)
    assert.are.same({4}, v:tolist())
    assert.are.same({3}, i:tolist())
  end)

  it("mode: the most frequent value, the smallest on ties, index of its last occurrence (torch)", function()
    local x = pt.tensor({{1, 3, 3, 1, 2}, {5, 5, 4, 4, 4}, {7, 8, 9, 6, 0}})
    local v, i = x:mode()
    assert.are.same({1, 4, 0}, v:tolist())
    assert.are.same({4, 5, 5}, i:tolist())
    v, i = pt.mode(x, 1)
    assert.are.same({1, 3, 3, 1, 0}, v:tolist())
    assert.are.same({1, 1, 1, 1, 3}, i:tolist())
    v, i = x:mode(2, true)
    assert.are.same({{1}, {4}, {0}}, v:tolist())
    assert.are.same({{4}, {5}, {5}}, i:tolist())
    v, i = x:mode({dim = 2, keepdim = true})
    assert.are.same({{4}, {5}, {5}}, i:tolist())
    v, i = pt.tensor({{2, 2, 7}, {7, 2, 7}}, {dtype = "int32"}):mode(2)
    assert.are.same({2, 7}, v:tolist())
    assert.are.same({2, 3}, i:tolist())
    assert.are.equal("int32", v:dtype())
    v, i = pt.tensor(5.0):mode()
    assert.are.equal(5, v:item())
    assert.are.equal(1, i:item())
  end)

  it("send the gradient to the selected element", function()
    local x = pt.tensor({{1, 3, 3, 1, 2}, {5, 5, 4, 4, 4}}, F64)
    x.requires_grad = true
    local v = x:mode(2)
    assert.are.equal("ModeBackward", v.grad_fn)
    v:backward(pt.tensor({10, 20}, F64))
    assert.are.same({{0, 0, 0, 10, 0}, {0, 0, 0, 0, 20}}, x.grad:tolist())
    local y = pt.tensor({3, 1, 4, 1, 5}, F64)
    y.requires_grad = true
    y:median():backward()
    assert.are.same({1, 0, 0, 0, 0}, y.grad:tolist())
    local z = pt.tensor({{3, 1, 4, 1, 5}}, F64)
    z.requires_grad = true
    local kv, ki = z:kthvalue(2)
    kv:sum():backward()
    assert.are.same({{0, 0, 0, 1, 0}}, z.grad:tolist())
    assert.are.same({4}, ki:tolist()) -- still 1-based after backward
  end)

  it("gradients (finite differences, float64, distinct values)", function()
    pt.manual_seed(5)
    local a = pt.randn(3, 5, F64)
    assert.is_true(gradcheck(function(x) return x:median() end, {a}))
    assert.is_true(gradcheck(function(x) return (x:median(2)) end, {a}))
    assert.is_true(gradcheck(function(x) return (x:median(1, true)) end, {a}))
    assert.is_true(gradcheck(function(x) return (x:kthvalue(2)) end, {a}))
    assert.is_true(gradcheck(function(x) return (x:kthvalue(3, 1, true)) end, {a}))
    assert.is_true(gradcheck(function(x) return (x:mode(2)) end, {a}))
    assert.is_true(gradcheck(function(x) return (x:t():mode(1)) end, {a}))
  end)

  it("errors", function()
    local x = m25()
    has("kthvalue: k=6 out of range for dimension 2 of size 5 (k counts from 1)", function() return x:kthvalue(6) end)
    has("kthvalue: k=0 out of range for dimension 1 of size 2 (k counts from 1)", function() return x:kthvalue(0, 1) end)
    has("kthvalue: dimension 3 out of range (tensor has 2 dimensions)", function() return x:kthvalue(1, 3) end)
    has("kthvalue: unknown option 'largest' (options: dim, keepdim)", function() return x:kthvalue(1, {largest = true}) end)
    has("median: dimension -3 out of range (tensor has 2 dimensions)", function() return x:median(-3) end)
    has("median: cannot reduce over an empty dimension (shape {2,0})", function() return pt.zeros(2, 0):median(2) end)
    has("median: cannot take the median of an empty int64 tensor", function() return pt.tensor({}, I64):median() end)
    has("median: unexpected argument #4 (number)", function() return x:median(1, true, 1) end)
    has("mode: cannot reduce over an empty dimension (shape {2,0})", function() return pt.zeros(2, 0):mode() end)
    has("mode: dimension 3 out of range (tensor has 2 dimensions)", function() return x:mode(3) end)
    has("mode: unknown option 'keepdims' (options: dim, keepdim)", function() return x:mode({keepdims = true}) end)
  end)
end)

describe("nonzero", function()
  it("gives {n, ndim} 1-based indices in row-major order (values from torch)", function()
    local z = pt.tensor({{0, 1, 0}, {2, 0, 3}})
    local nz = z:nonzero()
    assert.are.equal("int64", nz:dtype())
    assert.are.same({{1, 2}, {2, 1}, {2, 3}}, nz:tolist())
    local z3 = pt.tensor({{{0, 1}, {1, 0}}, {{0, 0}, {1, 1}}}, I64)
    assert.are.same({{1, 1, 2}, {1, 2, 1}, {2, 2, 1}, {2, 2, 2}}, pt.nonzero(z3):tolist())
    assert.are.same({{1}, {3}}, pt.tensor({true, false, true}):nonzero():tolist())
    assert.are.same({{1}, {2}}, pt.tensor({NAN, 1, 0}):nonzero():tolist())
    assert.are.same({0, 2}, pt.zeros(2, 3):nonzero():size())
    assert.are.same({1, 0}, pt.tensor(5.0):nonzero():size())
    assert.are.same({0, 0}, pt.tensor(0.0):nonzero():size())
  end)

  it("as_tuple returns one 1-D index tensor per dim", function()
    local rows, cols = pt.tensor({{0, 1, 0}, {2, 0, 3}}):nonzero({as_tuple = true})
    assert.are.same({1, 2, 2}, rows:tolist())
    assert.are.same({2, 1, 3}, cols:tolist())
    local only = {pt.tensor({0, 4, 0, 5}):nonzero({as_tuple = true})}
    assert.are.equal(1, #only)
    assert.are.same({2, 4}, only[1]:tolist())
    local s = {pt.tensor(5.0):nonzero({as_tuple = true})} -- as torch: one tensor for a 0-d input
    assert.are.equal(1, #s)
    assert.are.same({1}, s[1]:tolist())
    local e = pt.zeros(2, 2):nonzero({as_tuple = true})
    assert.are.same({0}, e:size())
    assert.are.same({{1, 2}}, pt.tensor({{0, 1}}):nonzero({as_tuple = false}):tolist())
  end)

  it("errors", function()
    local z = pt.zeros(2)
    has("nonzero: unknown option 'as_tupel' (options: as_tuple)", function() return z:nonzero({as_tupel = true}) end)
    has("nonzero: unexpected argument #3 (number)", function() return z:nonzero({}, 1) end)
  end)
end)

describe("unique", function()
  it("gives the sorted distinct values, inverse (1-based) and counts (values from torch)", function()
    local u = pt.tensor({{2.5, -1, 2.5}, {0, -1, 7}})
    local v, inv, cnt = u:unique({return_inverse = true, return_counts = true})
    assert.are.same({-1, 0, 2.5, 7}, v:tolist())
    assert.are.equal("float32", v:dtype())
    assert.are.same({{3, 1, 3}, {2, 1, 4}}, inv:tolist())
    assert.are.equal("int64", inv:dtype())
    assert.are.same({2, 1, 2, 1}, cnt:tolist())
    assert.is_true(pt.equal(v:index_select(1, inv:view(-1)):view(2, 3), u)) -- values[inverse] rebuilds u
    local v2, c2 = pt.unique(pt.tensor({5, 3, 5, 9, 3, 3}, {dtype = "int32"}), {return_counts = true})
    assert.are.same({3, 5, 9}, v2:tolist())
    assert.are.same({3, 2, 1}, c2:tolist())
    assert.are.equal("int32", v2:dtype())
    assert.are.same({-1, 0, 2.5, 7}, u:unique({sorted = false}):tolist())
    local one = {u:unique()}
    assert.are.equal(1, #one)
  end)

  it("keeps int64 values exact, bools, NaN and empty inputs", function()
    local big = pt.tensor({math.tointeger(2 ^ 53) + 1, math.tointeger(2 ^ 53), math.tointeger(2 ^ 53) + 1}, I64)
    assert.are.same({math.tointeger(2 ^ 53), math.tointeger(2 ^ 53) + 1}, big:unique():tolist())
    assert.are.same({false, true}, pt.tensor({true, false, true}):unique():tolist())
    local v, inv, cnt = pt.tensor({NAN, 1, NAN}):unique({return_inverse = true, return_counts = true})
    local vl = v:tolist()
    assert.are.equal(3, #vl) -- every NaN is a value of its own
    assert.are.equal(1, vl[1])
    near(NAN, vl[2])
    near(NAN, vl[3])
    assert.are.same({2, 1, 3}, inv:tolist())
    assert.are.same({1, 1, 1}, cnt:tolist())
    assert.are.same({0}, pt.zeros(0):unique():size())
  end)

  it("errors", function()
    local u = pt.zeros(3)
    has("unique: dimension 2 out of range (tensor has 1 dimensions)", function() return u:unique({dim = 2}) end)
    has("unique: unknown option 'return_index' (options: sorted, return_inverse, return_counts, dim)",
        function() return u:unique({return_index = true}) end)
    has("unique: unexpected argument #3 (table)", function() return u:unique({}, {}) end)
  end)
end)

describe("bincount", function()
  local function w() return pt.tensor({0, 3, 3, 1, 5}, I64) end

  it("counts each value: value v at position v + 1 (values from torch)", function()
    local c = w():bincount()
    assert.are.same({1, 1, 0, 2, 0, 1}, c:tolist())
    assert.are.equal("int64", c:dtype())
    assert.are.same({1, 1, 0, 2, 0, 1, 0, 0}, pt.bincount(w(), {minlength = 8}):tolist())
    assert.are.same({1, 1, 0, 2, 0, 1}, w():bincount({minlength = 3}):tolist())
    assert.are.same({0, 0, 1}, pt.tensor({2}, {dtype = "uint8"}):bincount():tolist())
    assert.are.same({}, pt.tensor({}, I64):bincount():tolist())
    assert.are.same({0, 0, 0}, pt.tensor({}, I64):bincount({minlength = 3}):tolist())
  end)

  it("sums weights: float32 weights give float32, others float64", function()
    local c = w():bincount(pt.tensor({0.5, 1, 2, 3, -1}))
    assert.are.same({0.5, 3, 0, 3, 0, -1}, c:tolist())
    assert.are.equal("float32", c:dtype())
    c = w():bincount(pt.tensor({0.25, 1, 2, 3, -1}, F64), {minlength = 7})
    assert.are.same({0.25, 3, 0, 3, 0, -1, 0}, c:tolist())
    assert.are.equal("float64", c:dtype())
    c = pt.bincount(w(), pt.tensor({1, 2, 3, 4, 5}, I64))
    assert.are.same({1, 4, 0, 5, 0, 5}, c:tolist())
    assert.are.equal("float64", c:dtype())
  end)

  it("errors", function()
    has("bincount: values must be non-negative, got -1 (element 2)",
        function() return pt.tensor({2, -1}, I64):bincount() end)
    has("bincount: expected a tensor of integers, got float32 (t:long() converts)",
        function() return pt.tensor({1, 2}):bincount() end)
    has("bincount: expected a 1-D tensor, got shape {1,2}", function() return pt.tensor({{1, 2}}, I64):bincount() end)
    has("bincount: weights must be 1-D with one weight per element (2), got shape {1}",
        function() return pt.tensor({1, 2}, I64):bincount(pt.tensor({1.0})) end)
    has("bincount: minlength must be >= 0, got -1", function() return w():bincount({minlength = -1}) end)
    has("bincount: minlength must be an integer, got 2.5", function() return w():bincount({minlength = 2.5}) end)
    has("bincount: unknown option 'min_length' (options: minlength)", function() return w():bincount({min_length = 1}) end)
  end)
end)

describe("searchsorted", function()
  local function s() return pt.tensor({1, 3, 3, 5, 8}) end

  it("gives 1-based insertion positions, left and right (torch's + 1)", function()
    local vals = pt.tensor({{0, 1, 3}, {4, 8, 9}})
    local p = s():searchsorted(vals)
    assert.are.same({{1, 1, 2}, {4, 5, 6}}, p:tolist())
    assert.are.equal("int64", p:dtype())
    assert.are.same({{1, 2, 4}, {4, 6, 6}}, pt.searchsorted(s(), vals, {right = true}):tolist())
    assert.are.same({{1, 2, 4}, {4, 6, 6}}, s():searchsorted(vals, {side = "right"}):tolist())
    assert.are.same({{1, 1, 2}, {4, 5, 6}}, s():searchsorted(vals, {side = "left", right = false}):tolist())
    local q = s():searchsorted(3)
    assert.are.equal(0, q:dim())
    assert.are.equal(2, q:item())
    assert.are.same({6, 1}, s():searchsorted(pt.tensor({NAN, -math.huge})):tolist()) -- NaN sorts largest
    assert.are.same({1, 1}, pt.tensor({}):searchsorted(pt.tensor({1, 2})):tolist())
  end)

  it("a sorted sequence per row, and mixed dtypes", function()
    local seq = pt.tensor({{1, 2, 3, 4}, {10, 20, 30, 40}})
    local v = pt.tensor({{2, 0, 5}, {25, 40, 41}})
    assert.are.same({{2, 1, 5}, {3, 4, 5}}, seq:searchsorted(v):tolist())
    assert.are.same({{3, 1, 5}, {3, 5, 5}}, seq:searchsorted(v, {right = true}):tolist())
    assert.are.same({2, 4, 1}, pt.tensor({1, 3, 5, 7}, I64):searchsorted(pt.tensor({2.5, 7.0, -1.0}, F64)):tolist())
    assert.are.equal(2, pt.tensor({0, 1}, I64):searchsorted(0.5):item()) -- the number is not truncated
    assert.are.equal(3, pt.tensor({0, 1}, I64):searchsorted(1, {right = true}):item())
  end)

  it("errors", function()
    has("searchsorted: the sorted sequence must be 1-D, or have the leading dimensions of values (got shapes {2,4} and {3,1})",
        function() return pt.zeros(2, 4):searchsorted(pt.zeros(3, 1)) end)
    has("searchsorted: the sorted sequence must be 1-D, or have the leading dimensions of values (got shapes {} and {2})",
        function() return pt.tensor(1.0):searchsorted(pt.zeros(2)) end)
    has('searchsorted: side must be "left" or "right", got up', function() return s():searchsorted(1, {side = "up"}) end)
    has('searchsorted: side="left" contradicts right=true',
        function() return s():searchsorted(1, {side = "left", right = true}) end)
    has("searchsorted: unknown option 'sorter' (options: right, side)", function() return s():searchsorted(1, {sorter = 1}) end)
    has("searchsorted: values (a tensor or a number) are required", function() return s():searchsorted() end)
  end)
end)

describe("help texts of the new functions", function()
  it("exist for the methods and the pt.* forms", function()
    for _, name in ipairs({"nansum", "nanmean", "count_nonzero", "median", "kthvalue", "mode", "nonzero", "unique",
                           "bincount", "searchsorted"}) do
      assert.is_string(pt._docs[pt.Tensor[name]], name)
      assert.is_string(pt._docs[pt[name]], name)
    end
    assert.truthy(pt._docs[pt.Tensor.bincount]:find("position v+1 of the result (value 0 at position 1)", 1, true))
    assert.truthy(pt._docs[pt.Tensor.searchsorted]:find("1-based position p (1..n+1)", 1, true))
    assert.truthy(pt._docs[pt.Tensor.sum]:find("{1, 3}", 1, true))
  end)
end)

describe("norm's gradient at zero elements", function()
  it("is 0 for p < 1 too, as torch.linalg.vector_norm (0 * inf gave nan)", function()
    local x = pt.tensor({0, 1, -2, 0.5}, {dtype = "float64", requires_grad = true})
    x:norm(0.5):backward()
    local g = x.grad:tolist()
    assert.are.equal(0, g[1])
    assert.is_true(math.abs(g[2] - 3.1213203435596424) < 1e-12 and math.abs(g[3] + 2.2071067811865475) < 1e-12)
    local z = pt.zeros(2, {dtype = "float64", requires_grad = true})
    z:norm(0.5):backward()
    assert.are.same({0, 0}, z.grad:tolist())
  end)
end)

describe("var and std with any correction (torch's divisor n - correction)", function()
  it("match PyTorch 1.13 in value and gradient", function()
    local x = pt.tensor({{1, 2, 4}, {3, 5, 9}}, {dtype = "float64", requires_grad = true})
    local v = x:var(2, {correction = 2})
    assert.is_true(v:allclose(pt.tensor({4.666666666666666, 18.666666666666664}, {dtype = "float64"}), {atol = 1e-12}))
    v:sum():backward()
    assert.is_true(x.grad:allclose(pt.tensor({{-2.666666666666667, -0.666666666666667, 3.333333333333333},
      {-5.333333333333334, -1.333333333333334, 6.666666666666666}}, {dtype = "float64"}), {atol = 1e-12}))
    assert.is_true(math.abs(x:detach():std({correction = 3}):item() - math.sqrt(40 / 3)) < 1e-12)
    assert.is_true(math.abs(x:detach():var({1, 2}, {correction = 2}):item() - 10) < 1e-12)
    gradcheck(function(a) return a:std(1, {correction = 2}) end, {pt.randn(5, 3, {dtype = "float64"})})
    gradcheck(function(a) return a:var({1, 2}, {correction = 3}) end, {pt.randn(3, 4, {dtype = "float64"})})
  end)
end)
