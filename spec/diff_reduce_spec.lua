-- Differential checks of reductions and sorting against PyTorch 1.13: each case here was a
-- difference found by running the same inputs through partrain and torch. Expected values are
-- torch's (computed with /usr/bin/python3 and torch 1.13); indices are torch's + 1.
local pt = require "partrain"

local F64 = {dtype = "float64"}
local INF = math.huge

local function same(expected, actual)
  if type(expected) == "table" then
    assert.are.equal(#expected, #actual)
    for i = 1, #expected do same(expected[i], actual[i]) end
  elseif expected ~= expected then
    assert.is_true(actual ~= actual, "expected nan, got " .. tostring(actual))
  elseif expected == INF or expected == -INF then
    assert.are.equal(expected, actual)
  else
    assert.is_true(math.abs(expected - actual) <= 1e-12 * (1 + math.abs(expected)),
                   string.format("expected %.17g, got %.17g", expected, actual))
  end
end

local function has(msg, f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find(msg, 1, true), "expected '" .. msg .. "' in: " .. tostring(err))
end

describe("var/std with correction >= n divide by max(0, n - correction), as torch", function()
  -- values from torch 1.13: torch.var(x, 1, correction=c) and torch.std(x, 1, correction=c)
  local x = pt.tensor({{0.5, -1.0, 2.0, 3.5}, {2.0, 2.0, 2.0, 2.0}}, F64)

  it("gives inf (nan for a constant lane) where the divisor is 0 or below", function()
    same({11.25, 0.0}, x:var(2, {correction = 3}):tolist())
    same({INF, 0 / 0}, x:var(2, {correction = 4}):tolist())
    same({INF, 0 / 0}, x:var(2, {correction = 5}):tolist())
    same({INF, 0 / 0}, x:std(2, {correction = 4}):tolist())
    same({INF, 0 / 0}, x:std(2, {correction = 5}):tolist())
    -- torch.var(x, (0, 1), correction=8) and correction=9; float32 too
    same(INF, x:var({1, 2}, {correction = 8}):item())
    same(INF, x:var({1, 2}, {correction = 9}):item())
    same(INF, x:float():var({1, 2}, {correction = 9}):item())
    same(INF, x:var({correction = 9}):item())
    same({INF, 0 / 0}, (pt.var_mean(x, 2, {correction = 4})):tolist())
  end)

  it("refuses unbiased and correction together, as torch (correction won silently)", function()
    has("var: give unbiased or correction, not both", x.var, x, 2, {unbiased = false, correction = 1})
    has("std: give unbiased or correction, not both", x.std, x, {unbiased = true, correction = 0})
    has("std_mean: give unbiased or correction, not both", pt.std_mean, x, 2, {unbiased = true, correction = 0})
    -- torch.var(x, 1, correction=0) and torch.var(x, 1, unbiased=False)
    same({2.8125, 0}, x:var(2, {correction = 0}):tolist())
    same({2.8125, 0}, x:var(2, {unbiased = false}):tolist())
  end)

  it("keeps nan for one element with the default correction", function()
    -- torch.var(x[0:1], 0) and torch.std(torch.tensor([7.0]), 0)
    same({0 / 0, 0 / 0, 0 / 0, 0 / 0}, x[{{1}, {}}]:var(1):tolist())
    same(0 / 0, pt.tensor({7.0}):std(1):item())
  end)
end)

describe("cumsum/cumprod take torch's dtype option", function()
  -- values from torch 1.13: y.cumsum(1, dtype=torch.float64), y.cumsum(0, dtype=torch.int32), ...
  local y = pt.tensor({{1.5, 2.5, -0.5}, {3.25, 4.0, 1.0}})

  it("converts the input first and returns that dtype", function()
    local r = y:cumsum(2, {dtype = "float64"})
    assert.are.equal("float64", r:dtype())
    same({{1.5, 4.0, 3.5}, {3.25, 7.25, 8.25}}, r:tolist())
    r = y:cumsum(1, {dtype = "int32"})
    assert.are.equal("int32", r:dtype())
    assert.are.same({{1, 2, 0}, {4, 6, 1}}, r:tolist())
    r = y:cumprod(2, {dtype = "float64"})
    assert.are.equal("float64", r:dtype())
    same({{1.5, 3.75, -1.875}, {3.25, 13.0, 13.0}}, r:tolist())
    r = y:cumsum({dim = 2, dtype = "float64"})
    same({{1.5, 4.0, 3.5}, {3.25, 7.25, 8.25}}, r:tolist())
  end)

  it("keeps an integer dtype asked for (int64 without it), wrapping as torch", function()
    local i = pt.tensor({1, 2, 3, 4}, {dtype = "int32"})
    assert.are.equal("int64", i:cumsum():dtype())
    local r = i:cumsum({dtype = "int32"})
    assert.are.equal("int32", r:dtype())
    assert.are.same({1, 3, 6, 10}, r:tolist())
    -- torch.tensor([100, 100, 100], dtype=torch.uint8).cumsum(0, dtype=torch.uint8)
    r = pt.tensor({100, 100, 100}, {dtype = "uint8"}):cumsum({dtype = "uint8"})
    assert.are.equal("uint8", r:dtype())
    assert.are.same({100, 200, 44}, r:tolist())
    assert.are.same({1, 1, 2}, pt.tensor({true, false, true}):cumsum({dtype = "uint8"}):tolist())
  end)

  it("lets gradients through a floating point dtype", function()
    local a = pt.tensor({1, 2, 3}, {requires_grad = true})
    local r = a:cumsum({dtype = "float64"}) * pt.tensor({1, 2, 3}, F64)
    r:sum():backward()
    assert.are.equal("float32", a.grad:dtype())
    same({6, 5, 3}, a.grad:tolist())
  end)

  it("rejects what it used to ignore", function()
    has("cumsum: unexpected argument #3 (number)", y.cumsum, y, 1, 2)
    has("cumsum: unknown option 'foo' (options: dim, dtype)", y.cumsum, y, 1, {foo = 1})
    has("cumsum: dim given twice (as argument #2 and as an option)", y.cumsum, y, 1, {dim = 1})
    has("cumprod: unknown dtype bogus", y.cumprod, y, 1, {dtype = "bogus"})
    has("cumsum: a dimension is needed for a 2-D tensor", y.cumsum, y, {dtype = "float64"})
  end)
end)

describe("sort, topk, kthvalue, mode take a dim given as a float with an integer value", function()
  -- values from torch 1.13: x.sort(0), x.topk(1, 0), x.kthvalue(1, 0), x.mode(0) (indices + 1)
  local x = pt.tensor({{3, 1, 2}, {0, 5, 4}})

  it("along that dim (1.0 sorted along the last dim before)", function()
    local v, i = x:sort(1.0)
    assert.are.same({{0, 1, 2}, {3, 5, 4}}, v:tolist())
    assert.are.same({{2, 1, 1}, {1, 2, 2}}, i:tolist())
    v, i = x:topk(1, 1.0)
    assert.are.same({{3, 5, 4}}, v:tolist())
    assert.are.same({{1, 2, 2}}, i:tolist())
    v, i = x:kthvalue(1, 1.0)
    assert.are.same({0, 1, 2}, v:tolist())
    assert.are.same({2, 1, 1}, i:tolist())
    v, i = x:mode(1.0)
    assert.are.same({0, 1, 2}, v:tolist())
    assert.are.same({2, 1, 1}, i:tolist())
    assert.are.same({{2, 1, 1}, {1, 2, 2}}, x:argsort(1.0):tolist())
  end)

  it("rejects a flag that is neither a boolean nor options (it was ignored)", function()
    has("sort: descending must be a boolean or an options table, got string", x.sort, x, 1, "yes")
    has("topk: largest must be a boolean or an options table, got string", x.topk, x, 1, 1, "no")
    has("number has no integer representation", x.sort, x, 1.5)
  end)
end)

describe("topk of a 0-d tensor", function()
  it("gives the element for k = 0 as for k = 1, as torch (k = 0 left it unset)", function()
    -- torch.tensor(3.).topk(0) -> (tensor(3.), tensor(0)); the gradient 1
    local a = pt.tensor(3.0, {requires_grad = true})
    local v, i = a:topk(0)
    assert.are.same({}, v:size())
    assert.are.equal(3, v:item())
    assert.are.equal(1, i:item())
    v:backward()
    assert.are.equal(1, a.grad:item())
    has("topk: k=2 out of range for dimension 1 of size 1", a.topk, a, 2)
  end)
end)

describe("max/min with a tensor are torch.max(input, other)", function()
  it("give the element-wise maximum/minimum with its gradient", function()
    -- values from torch 1.13: torch.max(x, y), torch.min(x, y), the gradient of (max * w):sum()
    local x = pt.tensor({{1, -1}, {3, 4}}, {requires_grad = true})
    local y = pt.tensor({2, 1})
    local r = x:max(y)
    assert.are.same({{2, 1}, {3, 4}}, r:tolist())
    r = r * pt.tensor({{1, 2}, {3, 4}})
    r:sum():backward()
    assert.are.same({{0, 0}, {3, 4}}, x.grad:tolist())
    assert.are.same({{1, -1}, {2, 1}}, pt.min(x, y):tolist())
    -- torch.max(torch.tensor([1, 5]), torch.tensor([2.5, 1])) promotes to float32
    local m = pt.max(pt.tensor({1, 5}, {dtype = "int64"}), pt.tensor({2.5, 1}))
    assert.are.equal("float32", m:dtype())
    assert.are.same({2.5, 5}, m:tolist())
    has("max: unexpected argument #3 (boolean)", pt.max, x, y, true)
    has("shapes {2,2} and {3} cannot be broadcast", pt.max, x, pt.ones(3))
  end)
end)

describe("keepdim must be a boolean", function()
  -- torch rejects x.sum(0, 1), x.max(0, 1), x.argmax(0, 1), ...; t:sum(1, 2) took 2 as keepdim=true
  local x = pt.tensor({{3, 1, 2}, {0, 5, 4}})

  it("is an error naming the function (a hint for the ones that take lists of dims)", function()
    local lists = "keepdim must be a boolean, got number (several dims go in a list: {1, 2})"
    has("sum: " .. lists, x.sum, x, 1, 2)
    has("mean: " .. lists, x.mean, x, 1, 2)
    has("logsumexp: " .. lists, x.logsumexp, x, 1, 2)
    has("std: " .. lists, x.std, x, 1, 2)
    has("var: " .. lists, x.var, x, 1, 1, {unbiased = false})
    has("norm: " .. lists, x.norm, x, 2, 1, 1)
    has("prod: keepdim must be a boolean, got number", x.prod, x, 1, 0)
    has("max: keepdim must be a boolean, got number", x.max, x, 1, 2)
    has("argmax: keepdim must be a boolean, got number", x.argmax, x, 1, 0)
    has("sum: keepdim must be a boolean, got string", x.sum, x, 1, "yes")
    has("any: keepdim must be a boolean, got number", x.any, x:gt(0), 1, 1)
    has("median: keepdim must be a boolean, got number", x.median, x, 1, 1)
  end)

  it("still takes booleans, nil and {keepdim=}", function()
    assert.are.same({{3, 6, 6}}, x:sum(1, true):tolist())
    assert.are.same({3, 6, 6}, x:sum(1, false):tolist())
    assert.are.same({3, 6, 6}, x:sum(1, nil):tolist())
    assert.are.same({{3, 6, 6}}, x:sum(1, {keepdim = true}):tolist())
    assert.are.same({{1.5, 2, 1}}, x:std(1, true, {unbiased = false}):tolist())
    assert.are.same({{0, 1, 2}}, (x:median(1, true)):tolist())
    assert.are.same({{false, true, true}}, x:gt(0):all(1, true):tolist())
    assert.are.same({{3}, {5}}, (x:max(2, true)):tolist())
  end)
end)

describe("bincount of huge values", function()
  it("is an error, never a count written out of bounds", function()
    -- the largest int64 value had its count at 2^63 (len = max + 1 overflowed)
    has("bincount: value 9223372036854775807 (element 2) is too large to count",
        function() return pt.tensor({1, math.maxinteger}, {dtype = "int64"}):bincount() end)
    -- with weights, 2^61 + k made the accumulators 8 * (2^61 + k + 1) bytes, which wrapped around
    has("tensor too large",
        function() return pt.tensor({(1 << 61) + 100000}, {dtype = "int64"}):bincount(pt.tensor({1.0})) end)
    -- torch.tensor([0, 3, 1, 3]).bincount(torch.tensor([1.0, 0.5, 2.0, 1.5]), minlength=6)
    local r = pt.tensor({0, 3, 1, 3}, {dtype = "int64"}):bincount(pt.tensor({1.0, 0.5, 2.0, 1.5}), {minlength = 6})
    assert.are.equal("float32", r:dtype())
    assert.are.same({1, 2, 0, 2, 0, 0}, r:tolist())
  end)
end)

describe("a list of dims where one dim is taken", function()
  it("says so (it read as options: \"unknown option '1'\")", function()
    local x = pt.tensor({{3, 1, 2}, {0, 5, 4}})
    has("prod: takes one dim, not a list of dims", x.prod, x, {1, 2})
    has("cumsum: takes one dim, not a list of dims", x.cumsum, x, {1, 2})
    has("cumprod: takes one dim, not a list of dims", x.cumprod, x, 1, {2})
    has("sort: takes one dim, not a list of dims", x.sort, x, {1, 2})
    assert.are.same({{0, 5, 8}}, x:prod(1, {keepdim = true}):tolist())
    assert.are.same({{0}}, x:prod({keepdim = true}):tolist())
  end)
end)
