-- mode against torch 1.13 (ties, NaN, integer dtypes), unique along a dim, and exact int64 in every
-- ordering op. Expected values were computed with PyTorch 1.13 (/usr/bin/python3) on the same
-- inputs; indices are torch's + 1 (partrain is 1-based).
local pt = require "partrain"
local support = require "spec.support"
local flat = require("spec.support").flat

local NAN = 0 / 0
local I64 = {dtype = "int64"}
local A = math.tointeger(2 ^ 53) -- 2^53: A and A + 1 are one double apart from nothing

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

describe("mode as torch 1.13's CPU mode", function()
  -- {input, torch's value, torch's index + 1}
  local cases = {
    {{1, NAN, 1}, 1.0, 1}, -- the NaN splits the run of 1s: each 1 counts once
    {{NAN, 1, NAN, 1}, NAN, 1},
    {{NAN, NAN}, NAN, 1}, -- every NaN a run of its own
    {{2, NAN, 2, NAN, NAN}, 2.0, 1},
    {{NAN, 5, 5}, 5.0, 3},
    {{NAN, 1, 2, NAN, 1, 2}, NAN, 1},
    {{3.0, 3, 3, 3}, 3.0, 4}, -- all equal: the last one
    {{3, 3, 1, 1, 2, 2}, 1.0, 4}, -- ties: the smallest value, its last occurrence
    {{0, 3, 2, NAN, 0, 3, 2, 1, 0, 3, NAN, 1, 0, 3, 2, 1, 0}, 0.0, 13}, -- 17 elements with NaN
  }

  it("picks torch's value and index with NaN and ties", function()
    for n, c in ipairs(cases) do
      local v, i = pt.tensor(c[1]):mode()
      same({c[2]}, {v:item()}, "case " .. n .. " value")
      assert.are.equal(c[3], i:item(), "case " .. n .. " index")
    end
  end)

  it("beyond 16 elements the index is where torch's unstable sort leaves it, not the last occurrence", function()
    local a = {} -- (i * 7) % 5 for i = 0..19: 0 at indices 1, 6, 11, 16
    for k = 0, 19 do a[#a + 1] = k * 7 % 5 end
    for _, dt in ipairs({"int64", "int32", "float64"}) do
      local v, i = pt.tensor(a, {dtype = dt}):mode()
      assert.are.equal(0, v:item())
      assert.are.equal(11, i:item(), dt)
    end
    local b = {} -- (i * 5) % 3 for i = 0..32: eleven 0s, the last at 31
    for k = 0, 32 do b[#b + 1] = k * 5 % 3 end
    local v, i = pt.tensor(b, {dtype = "float32"}):mode()
    assert.are.equal(0, v:item())
    assert.are.equal(4, i:item())
    local sevens = {}
    for k = 1, 20 do sevens[k] = 7 end
    v, i = pt.tensor(sevens, I64):mode()
    assert.are.equal(7, v:item())
    assert.are.equal(2, i:item())
  end)

  it("along either dim of a matrix holding NaN", function()
    local x = pt.tensor({{1, 2, 2}, {1, NAN, 1}, {NAN, NAN, 0}})
    local v, i = x:mode(2)
    same({2.0, 1.0, NAN}, v, "dim 2 values")
    same({3, 1, 1}, i, "dim 2 indices")
    v, i = x:mode(1, true)
    same({{1.0, 2.0, 0.0}}, v, "dim 1 values")
    same({{2, 1, 3}}, i, "dim 1 indices")
  end)

  it("integer and bool dtypes, int64 beyond 2^53 exact", function()
    local v, i = pt.tensor({true, false, true, false}):mode()
    assert.are.equal(false, v:item())
    assert.are.equal(4, i:item())
    assert.are.equal("bool", v:dtype())
    v, i = pt.tensor({0, 255, 255, 0, 3}, {dtype = "uint8"}):mode()
    assert.are.equal(0, v:item())
    assert.are.equal(4, i:item())
    v, i = pt.tensor({A + 1, A, A + 1, A}, I64):mode()
    assert.are.equal(A, v:item())
    assert.are.equal(4, i:item())
    v, i = pt.tensor({A + 1, A, A, A + 1, A + 1}, I64):mode()
    assert.are.equal(A + 1, v:item())
    assert.are.equal(5, i:item())
    assert.are.equal("int64", v:dtype())
  end)

  it("still sends the gradient to the selected element", function()
    local x = pt.tensor({1, NAN, 1, 3}, {dtype = "float64"})
    x.requires_grad = true
    local v = x:mode()
    v:backward()
    same({1.0, 0.0, 0.0, 0.0}, x.grad, "gradient")
  end)
end)

describe("kthvalue and mode arguments", function()
  local x = pt.tensor({{1, 3, 3}, {2, 2, 5}}, I64)

  it("take keepdim without a dim, as their help says", function()
    local v, i = x:mode(true)
    same({{3}, {2}}, v, "mode values")
    same({{3}, {2}}, i, "mode indices")
    v = x:kthvalue(2, true)
    same({{3}, {2}}, v, "kthvalue values")
  end)

  it("refuse a dim or keepdim of the wrong type", function()
    has("bad argument #1 to 'mode' (number expected, got string)", function() return x:mode("a") end)
    has("bad argument #2 to 'kthvalue' (number expected, got string)", function() return x:kthvalue(2, "a") end)
    has("bad argument #3 to 'kthvalue' (boolean expected, got number)", function() return x:kthvalue(2, 1, 1) end)
    has("bad argument #2 to 'mode' (boolean expected, got number)", function() return x:mode(1, 1) end)
  end)
end)

describe("unique along a dim", function()
  local function unique3(t, dim) return t:unique({dim = dim, return_inverse = true, return_counts = true}) end

  it("gives the distinct slices sorted, with inverse and counts (values from torch)", function()
    local x = pt.tensor({{1, 2}, {0, 5}, {1, 2}, {0, 4}}, I64)
    local v, inv, cnt = unique3(x, 1)
    same({{0, 4}, {0, 5}, {1, 2}}, v, "dim 1")
    same({3, 2, 3, 1}, inv, "dim 1 inverse")
    same({1, 1, 2}, cnt, "dim 1 counts")
    v, inv, cnt = unique3(x, 2)
    same({{1, 2}, {0, 5}, {1, 2}, {0, 4}}, v, "dim 2")
    same({1, 2}, inv, "dim 2 inverse")
    same({1, 1}, cnt, "dim 2 counts")
    v, inv, cnt = unique3(x:t(), -1) -- a non-contiguous view, negative dim
    same({{0, 0, 1}, {4, 5, 2}}, v, "t dim -1")
    same({3, 2, 3, 1}, inv, "t dim -1 inverse")
    same({1, 1, 2}, cnt, "t dim -1 counts")
    -- sorted=false sorts as well (as torch's unique with dim)
    same({{0, 4}, {0, 5}, {1, 2}}, x:unique({dim = 1, sorted = false}), "sorted=false")
    same({{0, 4}, {0, 5}, {1, 2}}, pt.unique(x, {dim = 1}), "pt.unique")
    assert.are.equal(1, select("#", x:unique({dim = 1})))
  end)

  it("of a 3-D tensor, slices compared in the order of transpose(1, dim) as torch's", function()
    local y = pt.arange(0, 24):reshape(2, 3, 4) % 3
    local v, inv, cnt = unique3(y, 3)
    same({{{0, 1, 2}, {1, 2, 0}, {2, 0, 1}}, {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}}}, v, "dim 3")
    same({1, 2, 3, 1}, inv, "dim 3 inverse")
    same({2, 1, 1}, cnt, "dim 3 counts")
    v, inv, cnt = unique3(y, 1)
    same({1, 3, 4}, {v:size(1), v:size(2), v:size(3)}, "dim 1 shape")
    same({1, 1}, inv, "dim 1 inverse")
    same({2}, cnt, "dim 1 counts")
    -- the two orders of a slice's elements differ here: torch puts slice 1 first
    local z = pt.tensor({{{0, 0}, {1, 0}}, {{0, 1}, {0, 0}}}, I64)
    v, inv = unique3(z, 3)
    same({{{0, 0}, {1, 0}}, {{0, 1}, {0, 0}}}, v, "order")
    same({1, 2}, inv, "order inverse")
  end)

  it("keeps the dtype; a slice holding a NaN equals no other; -0 equals 0", function()
    local v, inv, cnt = unique3(pt.tensor({{NAN, 1}, {0, 2}, {NAN, 1}, {0, 2}}), 1)
    same({{NAN, 1.0}, {NAN, 1.0}, {0.0, 2.0}}, v, "NaN rows")
    same({1, 3, 2, 3}, inv, "NaN inverse")
    same({1, 1, 2}, cnt, "NaN counts")
    v, inv, cnt = unique3(pt.tensor({{1, NAN}, {1, NAN}, {0, 5}}), 1)
    same({{0.0, 5.0}, {1.0, NAN}, {1.0, NAN}}, v, "NaN second")
    same({2, 3, 1}, inv, "NaN second inverse")
    v, inv, cnt = unique3(pt.tensor({{-0.0, 1}, {0.0, 1}}), 1)
    same({2}, cnt, "-0 counts")
    assert.are.equal(-math.huge, 1 / v:tolist()[1][1]) -- the first of the run, as torch
    v, inv, cnt = unique3(pt.tensor({{true, false}, {true, false}, {false, false}}), 1)
    same({{false, false}, {true, false}}, v, "bool")
    same({2, 2, 1}, inv, "bool inverse")
    assert.are.equal("bool", v:dtype())
    v = pt.tensor({3, 1, 3, 2}, {dtype = "float32"}):unique({dim = 1})
    same({1.0, 2.0, 3.0}, v, "1-D")
    assert.are.equal("float32", v:dtype())
  end)

  it("an empty dim gives empty results", function()
    local v, inv, cnt = unique3(pt.zeros(0, 3), 1)
    same({0, 3}, {v:size(1), v:size(2)}, "shape")
    assert.are.equal(0, inv:numel())
    assert.are.equal(0, cnt:numel())
    assert.are.equal("int64", inv:dtype())
  end)

  it("names the dim and shape in errors", function()
    has("unique: dimension 1 out of range (tensor has 0 dimensions)", function() return pt.tensor(3.0):unique({dim = 1}) end)
    has("unique: dimension 3 out of range (tensor has 2 dimensions)", function() return pt.zeros(2, 3):unique({dim = 3}) end)
    has("unique: cannot take unique slices along dimension 1 of shape {2,0}: dimension 2 has size 0",
        function() return pt.zeros(2, 0):unique({dim = 1}) end)
    has("unique: cannot take unique slices along dimension 2 of shape {0,0}: dimension 1 has size 0",
        function() return pt.zeros(0, 0):unique({dim = 2}) end)
  end)
end)

describe("int64 beyond 2^53 compares exactly", function()
  local MAX, MIN = math.maxinteger, math.mininteger
  local function x() return pt.tensor({A + 1, A, MAX, A + 2, MIN, A + 1, -A - 1, -A}, I64) end

  it("sort, argsort, topk", function()
    local v, i = x():sort()
    same({MIN, -A - 1, -A, A, A + 1, A + 1, A + 2, MAX}, v, "sort")
    same({5, 7, 8, 2, 1, 6, 4, 3}, i, "sort indices")
    v, i = x():sort(1, true)
    same({MAX, A + 2, A + 1, A + 1, A, -A, -A - 1, MIN}, v, "descending")
    same({3, 4, 1, 6, 2, 8, 7, 5}, i, "descending indices")
    same({5, 7, 8, 2, 1, 6, 4, 3}, x():argsort(), "argsort")
    v, i = x():topk(3)
    same({MAX, A + 2, A + 1}, v, "topk")
    same({3, 4, 1}, i, "topk indices")
    v = x():topk(2, 1, false)
    same({MIN, -A - 1}, v, "topk smallest")
  end)

  it("kthvalue, median, mode", function()
    local v, i = x():kthvalue(4)
    assert.are.equal(A, v:item())
    assert.are.equal(2, i:item())
    v, i = x():kthvalue(7)
    assert.are.equal(A + 2, v:item())
    assert.are.equal(4, i:item())
    v, i = x():median(1)
    assert.are.equal(A, v:item())
    assert.are.equal(2, i:item())
    assert.are.equal(A + 1, pt.tensor({A + 2, A + 1, A}, I64):median():item())
    v, i = x():mode()
    assert.are.equal(A + 1, v:item())
    assert.are.equal(6, i:item())
  end)

  it("unique, flattened and along a dim", function()
    local v, inv, cnt = pt.tensor({A + 1, A, A + 1}, I64):unique({return_inverse = true, return_counts = true})
    same({A, A + 1}, v, "values")
    same({2, 1, 2}, inv, "inverse")
    same({1, 2}, cnt, "counts")
    v, inv, cnt = pt.tensor({{A + 1, 1}, {A, 1}, {A + 1, 1}}, I64):unique({dim = 1, return_inverse = true, return_counts = true})
    same({{A, 1}, {A + 1, 1}}, v, "dim values")
    same({2, 1, 2}, inv, "dim inverse")
    same({1, 2}, cnt, "dim counts")
  end)

  it("searchsorted, also against floats (exact, where torch rounds the int64s)", function()
    local s = pt.tensor({A, A + 1, A + 2}, I64)
    same({2, 3}, s:searchsorted(pt.tensor({A + 1, A + 2}, I64)), "left")
    same({3, 4}, s:searchsorted(pt.tensor({A + 1, A + 2}, I64), {right = true}), "right")
    assert.are.equal(2, s:searchsorted(A + 1):item())
    assert.are.equal(2, s:searchsorted(2.0 ^ 53, {right = true}):item()) -- torch (float64 promotion): 3 + 1
    assert.are.equal(4, s:searchsorted(2.0 ^ 53 + 2, {right = true}):item()) -- 2^53 + 2 is a double
    assert.are.equal(4, s:searchsorted(0 / 0):item())
    assert.are.equal(1, pt.tensor({MIN, MAX}, I64):searchsorted(-2.0 ^ 63):item())
    assert.are.equal(3, pt.tensor({MIN, MAX}, I64):searchsorted(2.0 ^ 63):item()) -- torch: 1 + 1 (MAX rounds to 2^63)
    assert.are.equal(2, pt.tensor({-1.5, 2.5}):searchsorted(pt.tensor({2}, I64)):item())
  end)

  it("equal and allclose", function()
    assert.is_false(pt.tensor({A}, I64):equal(pt.tensor({A + 1}, I64)))
    assert.is_true(pt.tensor({A + 1}, I64):equal(pt.tensor({A + 1}, I64)))
    assert.is_false(pt.tensor({A + 1}, I64):equal(pt.tensor({2.0 ^ 53}, {dtype = "float64"})))
    assert.is_true(pt.tensor({3}, I64):equal(pt.tensor({3.0})))
    assert.is_true(pt.tensor(5):equal(pt.tensor(5, {dtype = "int32"})))
    assert.is_false(pt.tensor({NAN}):equal(pt.tensor({NAN})))
    assert.is_false(pt.tensor({A}, I64):allclose(pt.tensor({A + 1}, I64), {rtol = 0, atol = 0.5}))
    assert.is_true(pt.tensor({A}, I64):allclose(pt.tensor({A + 1}, I64), {rtol = 0, atol = 1}))
    assert.is_true(pt.tensor({MAX}, I64):allclose(pt.tensor({MAX}, I64), {rtol = 0, atol = 0}))
    assert.is_false(pt.tensor({MIN}, I64):allclose(pt.tensor({MAX}, I64)))
  end)
end)
