local pt = require "partrain"
local gradcheck = require "spec.gradcheck"

local F64 = {dtype = "float64"}

-- compare (nested) lists of numbers within tol
local function near(expected, actual, tol)
  tol = tol or 1e-5
  if type(expected) == "table" then
    assert.are.equal(#expected, #actual)
    for i = 1, #expected do near(expected[i], actual[i], tol) end
  else
    if expected ~= expected then
      assert.is_true(actual ~= actual, "expected nan, got " .. tostring(actual))
    elseif math.abs(expected) == math.huge then
      assert.are.equal(expected, actual)
    else
      assert.is_true(math.abs(expected - actual) <= tol * (1 + math.abs(expected)),
                     string.format("expected %.10g, got %.10g", expected, actual))
    end
  end
end

local function err_of(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok)
  return err
end

local function x23() return pt.tensor({{1, 2, 3}, {4, 5, 6}}) end

describe("sum, mean, prod", function()
  it("reduce everything into a 0-d tensor", function()
    local x = x23()
    assert.are.equal(0, x:sum():dim())
    assert.are.equal(21, x:sum():item())
    assert.are.equal(3.5, x:mean():item())
    assert.are.equal(720, x:prod():item())
    assert.are.equal("float32", x:sum():dtype())
    assert.are.equal(21, pt.sum(x):item())
  end)

  it("reduce one 1-based dimension, negative from the end", function()
    local x = x23()
    assert.are.same({5, 7, 9}, x:sum(1):tolist())
    assert.are.same({6, 15}, x:sum(2):tolist())
    assert.are.same({6, 15}, x:sum(-1):tolist())
    assert.are.same({2.5, 3.5, 4.5}, x:mean(1):tolist())
    assert.are.same({6, 120}, x:prod(2):tolist())
    assert.are.same({4, 10, 18}, pt.prod(x, 1):tolist())
  end)

  it("keepdim keeps the reduced dimension with size 1", function()
    local x = x23()
    assert.are.same({2, 1}, x:sum(2, true):size())
    assert.are.same({{6}, {15}}, x:sum(2, true):tolist())
    assert.are.same({1, 3}, x:mean(1, true):size())
    assert.are.same({1, 1}, x:sum(nil, true):size())
    assert.are.same({2}, x:sum(2, false):size())
  end)

  it("work on non-contiguous views", function()
    local xt = x23():t()
    assert.is_false(xt:is_contiguous())
    assert.are.same({6, 15}, xt:sum(1):tolist())
    assert.are.same({5, 7, 9}, xt:sum(2):tolist())
  end)

  it("sum and prod of integer tensors give int64; mean of integers is an error", function()
    local i = pt.tensor({1, 2, 3, 4}, {dtype = "int32"})
    assert.are.equal("int64", i:sum():dtype())
    assert.are.equal(10, i:sum():item())
    assert.are.equal(24, i:prod():item())
    assert.are.equal("int64", pt.tensor({true, false, true}):sum():dtype())
    assert.are.equal(2, pt.tensor({true, false, true}):sum():item())
    assert.matches("mean: expected a floating point tensor, got int32", err_of(function() return i:mean() end), 1, true)
  end)

  it("handle empty tensors and 0-d tensors", function()
    assert.are.equal(0, pt.zeros(0):sum():item())
    assert.are.equal(1, pt.zeros(0):prod():item())
    near(0 / 0, pt.zeros(0):mean():item())
    assert.are.same({0, 0}, pt.zeros(2, 0):sum(2):tolist())
    assert.are.same({}, pt.zeros(2, 0):sum(1):tolist())
    local s = pt.tensor(5.0)
    assert.are.equal(5, s:sum(1):item())
    assert.are.equal(0, s:sum(1):dim())
  end)

  it("name the function and the dimension when it is out of range", function()
    local x = x23()
    assert.matches("sum: dimension 3 out of range (tensor has 2 dimensions)",
                   err_of(function() return x:sum(3) end), 1, true)
    assert.matches("mean: dimension -3 out of range (tensor has 2 dimensions)",
                   err_of(function() return x:mean(-3) end), 1, true)
    assert.matches("prod: dimension 0 out of range (tensor has 2 dimensions)",
                   err_of(function() return x:prod(0) end), 1, true)
  end)

  it("record SumBackward / MeanBackward / ProdBackward", function()
    local x = pt.randn(2, 3, F64)
    x.requires_grad = true
    assert.are.equal("SumBackward", x:sum().grad_fn)
    assert.are.equal("MeanBackward", x:mean(1).grad_fn)
    assert.are.equal("ProdBackward", x:prod(2).grad_fn)
    assert.is_nil(pt.no_grad(function() return x:sum() end).grad_fn)
  end)
end)

describe("max, min, argmax, argmin", function()
  it("without a dim give the scalar extreme as a 0-d tensor", function()
    local x = x23()
    assert.are.equal(6, x:max():item())
    assert.are.equal(1, x:min():item())
    assert.are.equal(0, x:max():dim())
    assert.are.equal(6, pt.max(x):item())
    assert.are.same({{6}}, x:max(nil, true):tolist())
  end)

  it("with a dim return values and 1-based int64 indices", function()
    local x = pt.tensor({{1, 7, 3}, {9, 5, 9}})
    local v, i = x:max(2)
    assert.are.same({7, 9}, v:tolist())
    assert.are.same({2, 1}, i:tolist())
    assert.are.equal("int64", i:dtype())
    v, i = x:min(1)
    assert.are.same({1, 5, 3}, v:tolist())
    assert.are.same({1, 2, 1}, i:tolist())
    v, i = pt.max(x, -1, true)
    assert.are.same({2, 1}, v:size())
    assert.are.same({{2}, {1}}, i:tolist())
  end)

  it("argmax/argmin give 1-based indices (flat without a dim), first on ties", function()
    local x = pt.tensor({{1, 7, 3}, {9, 5, 9}})
    assert.are.equal(4, x:argmax():item())
    assert.are.equal(1, x:argmin():item())
    assert.are.same({2, 1}, x:argmax(2):tolist())
    assert.are.same({{1, 2, 1}}, x:argmin(1, true):tolist())
    assert.are.equal(2, pt.tensor({1, 3, 3, 2}):argmax():item())
    assert.are.equal(2, pt.argmin(pt.tensor({2, 1, 1})):item())
    assert.are.equal("int64", x:argmax():dtype())
  end)

  it("propagate NaN", function()
    local x = pt.tensor({1, 0 / 0, 3})
    near(0 / 0, x:max():item())
    near(0 / 0, x:min():item())
    assert.are.equal(2, x:argmax():item())
  end)

  it("keep the dtype of integer tensors", function()
    local x = pt.tensor({{3, 9}, {2, 1}}, {dtype = "int32"})
    local v, i = x:max(1)
    assert.are.equal("int32", v:dtype())
    assert.are.same({3, 9}, v:tolist())
    assert.are.same({1, 1}, i:tolist())
    assert.are.equal(9, x:max():item())
    assert.are.equal(4, x:argmin():item())
  end)

  it("refuse empty reductions", function()
    assert.matches("max: cannot reduce over an empty tensor (shape {0})",
                   err_of(function() return pt.zeros(0):max() end), 1, true)
    assert.matches("argmin: cannot reduce over an empty dimension (shape {2,0})",
                   err_of(function() return pt.zeros(2, 0):argmin(2) end), 1, true)
    assert.matches("min: dimension 3 out of range (tensor has 2 dimensions)",
                   err_of(function() return x23():min(3) end), 1, true)
  end)

  it("send the gradient to the selected element (over all elements: shared among ties, as torch)", function()
    local x = pt.tensor({1, 5, 3, 5}, F64)
    x.requires_grad = true
    x:max():backward()
    assert.are.same({0, 0.5, 0, 0.5}, x.grad:tolist()) -- torch 1.13: [0, 0.5, 0, 0.5]
    x.grad = nil
    x:median():backward() -- the lower middle value, 3: no tie
    assert.are.same({0, 0, 1, 0}, x.grad:tolist())
    local m = pt.tensor({2, 7, 2, 0 / 0, 2}, F64)
    m.requires_grad = true
    m:min():backward() -- NaN wins and takes it all (torch: every NaN shares)
    assert.are.same({0, 0, 0, 1, 0}, m.grad:tolist())
    local t = pt.tensor({4, 1, 4, 4}, F64)
    t.requires_grad = true
    t:median():backward() -- torch 1.13: [1/3, 0, 1/3, 1/3], evenly over the three 4s
    local g = t.grad:tolist()
    assert.are.same({0, 0}, {g[1] - 1 / 3, g[2]})
    assert.are.same({1 / 3, 1 / 3}, {g[3], g[4]})
    local y = pt.tensor({{1, 5}, {7, 3}}, F64)
    y.requires_grad = true
    local v = y:min(2)
    v:backward(pt.tensor({10, 20}, F64))
    assert.are.same({{10, 0}, {0, 20}}, y.grad:tolist())
  end)

  it("the returned indices stay 1-based after backward (autograd keeps its own copy)", function()
    local x = pt.tensor({{1, 5}, {7, 3}}, F64)
    x.requires_grad = true
    local v, i = x:max(2)
    v:sum():backward()
    assert.are.same({2, 1}, i:tolist())
    assert.are.same({{0, 1}, {1, 0}}, x.grad:tolist())
  end)
end)

describe("var and std", function()
  it("are unbiased by default, {unbiased=false} divides by n", function()
    local v = pt.tensor({1, 2, 3, 4}, F64)
    near(5 / 3, v:var():item(), 1e-12)
    near(1.25, v:var({unbiased = false}):item(), 1e-12)
    near(math.sqrt(5 / 3), v:std():item(), 1e-12)
    near(math.sqrt(1.25), pt.std(v, {unbiased = false}):item(), 1e-12)
  end)

  it("reduce along a dim with keepdim and options", function()
    local x = x23()
    assert.are.same({4.5, 4.5, 4.5}, x:var(1):tolist())
    assert.are.same({2.25, 2.25, 2.25}, x:var(1, false, {unbiased = false}):tolist())
    assert.are.same({{1}, {1}}, x:var(2, true):tolist())
    near({1.5, 1.5, 1.5}, x:std(1, {unbiased = false}):tolist())
  end)

  it("give nan for one element unbiased, and reject integers", function()
    near(0 / 0, pt.tensor({3.0}):var():item())
    assert.are.equal(0, pt.tensor({3.0}):var({unbiased = false}):item())
    assert.matches("std: expected a floating point tensor, got int64",
                   err_of(function() return pt.tensor({1, 2}, {dtype = "int64"}):std() end), 1, true)
  end)
end)

describe("norm", function()
  local v = pt.tensor({3, -4}, F64)
  it("defaults to p = 2 and supports 1, 3, 0, math.huge, -math.huge and 'fro'", function()
    assert.are.equal(5, v:norm():item())
    assert.are.equal(5, v:norm("fro"):item())
    assert.are.equal(7, v:norm(1):item())
    near(91 ^ (1 / 3), v:norm(3):item(), 1e-12)
    assert.are.equal(2, v:norm(0):item())
    assert.are.equal(4, v:norm(math.huge):item())
    assert.are.equal(3, v:norm(-math.huge):item())
  end)

  it("reduces along a dim", function()
    near({math.sqrt(14), math.sqrt(77)}, x23():norm(2, 2):tolist())
    assert.are.same({1, 3}, x23():norm(1, 1, true):size())
    assert.are.same({{5, 7, 9}}, x23():norm(1, 1, true):tolist())
  end)

  it("rejects bad p", function()
    assert.matches("norm: p must be positive, 0, math.huge or -math.huge (got -1)",
                   err_of(function() return v:norm(-1) end), 1, true)
    assert.matches([[norm: unknown norm 'foo' (expected a number, "fro" or "nuc")]],
                   err_of(function() return v:norm("foo") end), 1, true)
    assert.matches("norm: the nuclear norm without dim needs a tensor with 2 dimensions, got 1",
                   err_of(function() return v:norm("nuc") end), 1, true)
  end)
end)

describe("softmax, log_softmax, logsumexp", function()
  it("softmax along the last dim sums to one per row", function()
    local s = x23():softmax(2):tolist()
    local z = 1 + math.exp(1) + math.exp(2)
    near({{1 / z, math.exp(1) / z, math.exp(2) / z}, {1 / z, math.exp(1) / z, math.exp(2) / z}}, s)
  end)

  it("softmax and log_softmax along a middle dim equal the last-dim ones of the permuted tensor", function()
    pt.manual_seed(4)
    local d = pt.randn({3, 5, 7}, {dtype = "float64"})
    d[{2, 3, 4}] = 0 / 0 -- a NaN lane
    d[{1, 2, 1}] = math.huge
    for _, f in ipairs({"softmax", "log_softmax"}) do
      local a = d[f](d, 2)
      local b = d:permute(1, 3, 2):contiguous()[f](d:permute(1, 3, 2):contiguous(), 3):permute(1, 3, 2)
      assert.is_true(pt.allclose(a, b, {equal_nan = true, rtol = 0, atol = 0}), f) -- bitwise
    end
  end)

  it("softmax along a non-last dim", function()
    local s = x23():softmax(1):tolist()
    local a = 1 / (1 + math.exp(3))
    near({{a, a, a}, {1 - a, 1 - a, 1 - a}}, s)
    near(pt.softmax(x23(), -2):tolist(), s)
  end)

  it("is numerically stable for large inputs", function()
    local e = math.exp(1)
    near({1 / (1 + e), e / (1 + e)}, pt.tensor({1000, 1001}):softmax(1):tolist())
    near({-math.log(1 + e), 1 - math.log(1 + e)}, pt.tensor({1000, 1001}):log_softmax(1):tolist())
    near(1000 + math.log(2), pt.tensor({1000, 1000}, F64):logsumexp():item(), 1e-12)
    near({-1000 + math.log(2)}, pt.tensor({{-1000, -1000}}, F64):logsumexp(2):tolist(), 1e-12)
  end)

  it("float32 rows (vectorised path) agree with float64, also past one sum block", function()
    pt.manual_seed(4)
    local rows = pt.randn(3, 5000):tolist()
    for r = 1, 3 do
      for c = 1, 5000 do rows[r][c] = rows[r][c] * 4 end
    end
    local x = pt.tensor(rows)
    local s32, s64 = x:softmax(2):tolist(), x:double():softmax(2):tolist()
    local l32, l64 = x:log_softmax(2):tolist(), x:double():log_softmax(2):tolist()
    for r = 1, 3 do
      for c = 1, 5000, 7 do
        assert.is_true(math.abs(s32[r][c] - s64[r][c]) <= 1e-5 * s64[r][c] + 1e-30)
        assert.is_true(math.abs(l32[r][c] - l64[r][c]) <= 1e-4)
      end
    end
    near(x:double():sum(2):tolist(), x:sum(2):tolist(), 1e-6)
    near(x:double():mean():item(), x:mean():item(), 1e-6)
  end)

  it("softmax underflows to 0 and propagates NaN", function()
    assert.are.same({0, 1}, pt.tensor({-200, 0}):softmax(1):tolist())
    local s = pt.tensor({1, 0 / 0, 2}):softmax(1):tolist()
    for i = 1, 3 do assert.is_true(s[i] ~= s[i]) end
    local l = pt.tensor({{1, 0 / 0, 2}}, F64):log_softmax(2):tolist()[1]
    for i = 1, 3 do assert.is_true(l[i] ~= l[i]) end
  end)

  it("log_softmax equals x - logsumexp(x)", function()
    local x = pt.randn(3, 5, F64)
    local ls, lse, xl = x:log_softmax(2):tolist(), x:logsumexp(2, true):tolist(), x:tolist()
    for r = 1, 3 do
      for c = 1, 5 do near(xl[r][c] - lse[r][1], ls[r][c], 1e-12) end
    end
  end)

  it("logsumexp handles -inf and empty inputs", function()
    assert.are.equal(-math.huge, pt.zeros(0):logsumexp():item())
    assert.are.equal(-math.huge, pt.tensor({-math.huge, -math.huge}):logsumexp():item())
    assert.are.same({2, 1}, x23():logsumexp(2, true):size())
  end)

  it("need a dimension and a floating point tensor", function()
    assert.matches("softmax: a dimension is required", err_of(function() return x23():softmax() end), 1, true)
    assert.matches("log_softmax: dimension 3 out of range (tensor has 2 dimensions)",
                   err_of(function() return x23():log_softmax(3) end), 1, true)
    assert.matches("softmax: expected a floating point tensor, got int64",
                   err_of(function() return pt.tensor({1, 2}, {dtype = "int64"}):softmax(1) end), 1, true)
    -- integer and bool tensors go through float32, as torch.logsumexp (values from torch 1.13)
    local li = pt.tensor({{1, 2}, {3, 4}}, {dtype = "int64"})
    assert.are.equal("float32", li:logsumexp(2):dtype())
    assert.is_true(li:logsumexp(2):allclose(pt.tensor({2.3132617, 4.3132617}), {atol = 1e-6}))
    assert.is_true(math.abs(li:logsumexp({1, 2}):item() - 4.4401897) < 1e-6)
    assert.is_true(math.abs(pt.tensor({true, false}):logsumexp(1):item() - 1.3132616) < 1e-6)
  end)
end)

describe("reduction gradients (finite differences, float64)", function()
  pt.manual_seed(11)
  local a = pt.randn(3, 4, F64)
  local b3 = pt.randn(2, 3, 4, F64)

  it("sum and mean", function()
    assert.is_true(gradcheck(function(x) return x:sum() end, {a}))
    assert.is_true(gradcheck(function(x) return x:sum(1) end, {a}))
    assert.is_true(gradcheck(function(x) return x:sum(2, true) end, {b3}))
    assert.is_true(gradcheck(function(x) return x:mean() end, {a}))
    assert.is_true(gradcheck(function(x) return x:mean(-1, true) end, {b3}))
    assert.is_true(gradcheck(function(x) return x:mean(2) end, {b3}))
  end)

  it("prod, also with zeros", function()
    assert.is_true(gradcheck(function(x) return x:prod() end, {a}))
    assert.is_true(gradcheck(function(x) return x:prod(1) end, {a}))
    assert.is_true(gradcheck(function(x) return x:prod(2) end, {pt.tensor({{1, 0, 3}, {0, 0, 2}}, F64)}))
  end)

  it("max and min", function()
    assert.is_true(gradcheck(function(x) return x:max() end, {a}))
    assert.is_true(gradcheck(function(x) return (x:max(2)) end, {a}))
    assert.is_true(gradcheck(function(x) return (x:min(1, true)) end, {b3}))
    assert.is_true(gradcheck(function(x) return x:min() end, {b3}))
  end)

  it("var and std", function()
    assert.is_true(gradcheck(function(x) return x:var() end, {a}))
    assert.is_true(gradcheck(function(x) return x:var(1, true, {unbiased = false}) end, {a}))
    assert.is_true(gradcheck(function(x) return x:std(2) end, {b3}))
    assert.is_true(gradcheck(function(x) return x:std({unbiased = false}) end, {a}))
  end)

  it("norm for p = 2, 1, 3, math.huge", function()
    assert.is_true(gradcheck(function(x) return x:norm() end, {a}))
    assert.is_true(gradcheck(function(x) return x:norm(1, 2) end, {a}))
    assert.is_true(gradcheck(function(x) return x:norm(3, 1, true) end, {a}))
    assert.is_true(gradcheck(function(x) return x:norm(math.huge, 2) end, {a}))
    assert.is_true(gradcheck(function(x) return x:norm(-math.huge) end, {a}))
  end)

  it("softmax, log_softmax, logsumexp over each dim", function()
    assert.is_true(gradcheck(function(x) return x:softmax(2) end, {a}))
    assert.is_true(gradcheck(function(x) return x:softmax(1) end, {a}))
    assert.is_true(gradcheck(function(x) return x:log_softmax(-1) end, {b3}))
    assert.is_true(gradcheck(function(x) return x:log_softmax(2) end, {b3}))
    assert.is_true(gradcheck(function(x) return x:logsumexp(2) end, {a}))
    assert.is_true(gradcheck(function(x) return x:logsumexp(1, true) end, {b3}))
    assert.is_true(gradcheck(function(x) return x:logsumexp() end, {a}))
  end)

  it("through transposed (non-contiguous) inputs", function()
    assert.is_true(gradcheck(function(x) return x:t():softmax(2) end, {a}))
    assert.is_true(gradcheck(function(x) return x:t():sum(2) end, {a}))
    assert.is_true(gradcheck(function(x) return (x:transpose(1, 3):max(1)) end, {b3}))
    assert.is_true(gradcheck(function(x) return x:t():var(1) end, {a}))
  end)

  it("softmax gradient of a sum is zero", function()
    local x = pt.randn(4, F64)
    x.requires_grad = true
    x:softmax(1):sum():backward()
    near({0, 0, 0, 0}, x.grad:tolist(), 1e-12)
  end)
end)

describe("norm's options table (torch's keywords p=, dim=, keepdim=)", function()
  it("gives what the positional form gives, and refuses a setting given twice or unknown", function()
    local a = pt.tensor({{3, 4}, {6, 8}}, F64)
    assert.is_true(pt.norm(a, {p = 2, dim = 1}):equal(a:norm(2, 1)))
    assert.is_true(a:norm(1, {dim = 2, keepdim = true}):equal(a:norm(1, 2, true)))
    assert.are.same({{7}, {14}}, a:norm(1, {dim = 2, keepdim = true}):tolist())
    assert.is_true(a:norm({dim = {1, 2}}):equal(a:norm()))
    assert.is_true(a:norm({p = "fro"}):equal(a:norm("fro")))
    -- a list of dims is still a list of dims, not options
    assert.are.same({1, 1}, a:norm(2, {1, 2}, true):size())
    local function err(f)
      local ok, e = pcall(f)
      assert.is_false(ok)
      return tostring(e):match("norm: .*")
    end
    assert.are.equal("norm: p given twice (as an argument and as an option)", err(function() return a:norm(2, {p = 1}) end))
    assert.are.equal("norm: unknown option 'q' (options: p, dim, keepdim)", err(function() return a:norm({q = 1}) end))
    assert.are.equal('norm: p must be a number, "fro" or "nuc", got boolean', err(function() return a:norm(true) end))
  end)
end)
