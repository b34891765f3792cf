-- lua/partrain/tensor.lua: isnan/isinf/isfinite, argsort, flip, tril/triu, amax/amin, clip,
-- square, reciprocal, rsqrt, trunc, roll and nn.functional.one_hot.
-- Expected values marked "torch" come from PyTorch 1.13 (/usr/bin/python3) on the same inputs,
-- with indices shifted to partrain's 1-based ones.
local pt = require "partrain"
local gradcheck = require "spec.gradcheck"
local T = require "partrain.tensor"

local nan, inf = 0 / 0, math.huge
local NAMES = {"isnan", "isinf", "isfinite", "argsort", "flip", "tril", "triu", "amax", "amin", "square",
               "reciprocal", "rsqrt", "trunc", "roll"}

local flat = require("spec.support").flat

-- t has exactly the values of the nested table expected (NaN matches NaN; with signed_zero the
-- sign of zeros too) and its shape
local function same(expected, t, signed_zero)
  assert.is_true(pt.is_tensor(t))
  local a, b = flat(t:tolist()), flat(expected)
  assert.are.equal(#b, #a)
  for i = 1, #a do
    local x, y = a[i], b[i]
    local ok
    if y ~= y then ok = x ~= x
    elseif type(y) == "boolean" then ok = x == y
    else ok = x == y and (not signed_zero or y ~= 0 or 1 / x == 1 / y) end
    if not ok then error(string.format("element %d: got %s, expected %s", i, tostring(x), tostring(y)), 2) end
  end
end

local function errmsg(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end
-- the message must be exactly msg after a "spec/tensor_extra_spec.lua:<line>: " position (the
-- caller's line, not one in partrain's own modules)
local function assert_error(msg, f, ...)
  local err = errmsg(f, ...)
  local at = err:find(msg, 1, true)
  assert(at, "expected error '" .. msg .. "', got '" .. err .. "'")
  assert.are.equal(msg, err:sub(at))
  assert(err:sub(1, at - 1):match("tensor_extra_spec%.lua:%d+: $"), "unexpected prefix in '" .. err .. "'")
end

-- deterministic float64 inputs: n values spread over about [-2, 2] without ties
local function f64(shape, offset)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  local v = {}
  for i = 1, n do v[i] = 2 * math.sin(1.7 * i + (offset or 0)) end
  return pt.tensor(v, {dtype = "float64"}):reshape(shape)
end

local function i64(v) return pt.tensor(v, {dtype = "int64"}) end

local A = pt.tensor({{1.5, -2.25, 3.0, 0.5}, {-0.75, 4.0, -1.5, 2.0}, {2.5, 2.5, -3.0, 1.0}})
-- torch: ((i * 7) % 11 - 5) / 2 for i in 0..23, shape (2, 3, 4)
local B = pt.tensor({{{-2.5, 1.0, -1.0, 2.5}, {0.5, -1.5, 2.0, 0.0}, {-2.0, 1.5, -0.5, -2.5}},
                     {{1.0, -1.0, 2.5, 0.5}, {-1.5, 2.0, 0.0, -2.0}, {1.5, -0.5, -2.5, 1.0}}})
local X = pt.tensor({-2.5, -1.7, -0.5, 0.0, 0.25, 0.7, 3.7, 1e30, inf, -inf, nan})

describe("partrain.tensor", function()
  it("adds every function as a method and a pt function, replacing none", function()
    assert.is_nil(T._conflicts, "already defined elsewhere: " .. table.concat(T._conflicts or {}, ", "))
    for _, name in ipairs(NAMES) do
      assert.is_function(T[name], name)
      assert.are.equal(T[name], rawget(pt.Tensor, name), name)
      assert.are.equal(T[name], rawget(pt, name), name)
      assert.is_string(pt._docs[T[name]], name)
    end
    assert.are.equal(pt.Tensor.clamp, pt.Tensor.clip)
    assert.are.equal(pt.clamp, pt.clip)
    assert.are.equal(T.one_hot, pt.nn.functional.one_hot)
    assert.are.equal(T.one_hot, pt.nn.F.one_hot)
    -- method and function forms agree
    same(A:flip(1):tolist(), pt.flip(A, 1))
    same(A:amax(2):tolist(), pt.amax(A, 2))
  end)

  it("documents which functions have no gradient", function()
    for _, f in ipairs {T.isnan, T.isinf, T.isfinite, T.argsort, T.one_hot} do
      assert.truthy(pt._docs[f]:find("No gradient", 1, true))
    end
    assert.truthy(pt._docs[T.trunc]:find("A zero gradient", 1, true))
  end)
end)

describe("isnan, isinf, isfinite", function()
  it("match torch on floats, NaN and infinities", function()
    -- torch
    same({false, false, false, false, false, false, false, false, false, false, true}, X:isnan())
    same({false, false, false, false, false, false, false, false, true, true, false}, X:isinf())
    same({true, true, true, true, true, true, true, true, false, false, false}, X:isfinite())
    assert.are.equal("bool", pt.isnan(X):dtype())
    local d = pt.tensor({{nan, 1}, {-inf, 2}}, {dtype = "float64"}):t() -- non-contiguous
    same({{true, false}, {false, false}}, d:isnan())
    same({{false, true}, {false, false}}, d:isinf())
    same({{false, false}, {true, true}}, d:isfinite())
  end)

  it("are all false, all false and all true on integer tensors", function()
    for _, dt in ipairs {"int64", "int32", "uint8", "bool"} do
      local t = pt.tensor({{1, 0}, {1, 1}}, {dtype = dt})
      same({{false, false}, {false, false}}, t:isnan())
      same({{false, false}, {false, false}}, t:isinf())
      same({{true, true}, {true, true}}, t:isfinite())
    end
  end)

  it("keep empty and 0-d shapes, and record no gradient", function()
    assert.are.same({0, 3}, pt.zeros(0, 3):isnan():size())
    assert.are.same({0}, pt.zeros(0, {dtype = "int64"}):isfinite():size())
    local z = pt.tensor(nan):isnan()
    assert.are.equal(0, z:dim())
    assert.is_true(z:item())
    local x = pt.tensor({1, nan}, {requires_grad = true})
    for _, f in ipairs {T.isnan, T.isinf, T.isfinite} do
      local y = f(x)
      assert.is_false(y.requires_grad)
      assert.is_nil(y.grad_fn)
    end
  end)
end)

describe("argsort", function()
  it("gives sort's 1-based int64 indices, as torch", function()
    local i = A:argsort()
    assert.are.equal("int64", i:dtype())
    same({{2, 4, 1, 3}, {3, 1, 4, 2}, {3, 4, 1, 2}}, i) -- torch
    same({{3, 2, 1, 2}, {1, 3, 2, 3}, {2, 1, 3, 1}}, A:argsort(1, true)) -- torch
    same({{3, 2, 1, 2}, {1, 3, 2, 3}, {2, 1, 3, 1}}, pt.argsort(A, {dim = 1, descending = true}))
    same({{3, 2, 1, 2}, {1, 3, 2, 3}, {2, 1, 3, 1}}, A:argsort(-2, {descending = true}))
    -- torch, dim=1 of (2, 3, 4)
    same({{{1, 2, 1, 3}, {3, 1, 3, 2}, {2, 3, 2, 1}}, {{2, 1, 3, 2}, {1, 3, 2, 1}, {3, 2, 1, 3}}},
      B:argsort(2))
    same(B:argsort(2):tolist(), B:argsort({dim = 2, stable = true}))
  end)

  it("is stable and puts NaN last ascending, first descending (torch, stable=True)", function()
    local t = pt.tensor({{3, 1, 2, 1}, {0, nan, 5, 5}})
    same({{2, 4, 3, 1}, {1, 3, 4, 2}}, t:argsort())
    same({{1, 3, 2, 4}, {2, 3, 4, 1}}, t:argsort(2, true))
  end)

  it("handles non-contiguous, integer, empty and 0-d inputs", function()
    same({{2, 1, 3}, {1, 3, 2}, {3, 2, 1}, {1, 3, 2}}, A:t():argsort()) -- columns of A
    same({{2, 1, 3}}, i64({{5, -7, 9}}):argsort())
    same({3, 2, 1}, pt.tensor({1, 2, 3}, {dtype = "int32"}):argsort(1, true))
    assert.are.same({0, 4}, pt.zeros(0, 4):argsort():size())
    assert.are.same({2, 0}, pt.zeros(2, 0):argsort(2):size())
    local z = pt.tensor(3):argsort()
    assert.are.equal(0, z:dim())
    assert.are.equal(1, z:item())
  end)
end)

describe("flip", function()
  it("reverses along one dim or a list of dims, as torch.flip", function()
    same({{{0.5, 2.5, -1.0, 1.0}, {-2.0, 0.0, 2.0, -1.5}, {1.0, -2.5, -0.5, 1.5}},
          {{2.5, -1.0, 1.0, -2.5}, {0.0, 2.0, -1.5, 0.5}, {-2.5, -0.5, 1.5, -2.0}}}, B:flip({1, 3})) -- torch
    same({{{2.5, -1.0, 1.0, -2.5}, {0.0, 2.0, -1.5, 0.5}, {-2.5, -0.5, 1.5, -2.0}},
          {{0.5, 2.5, -1.0, 1.0}, {-2.0, 0.0, 2.0, -1.5}, {1.0, -2.5, -0.5, 1.5}}}, B:flip(-1)) -- torch
    same(B:flip({1, 3}):tolist(), B:flip(1, 3))
    same(B:flip({1, 3}):tolist(), pt.flip(B, {-3, -1}))
    -- non-contiguous (torch)
    same({{0.5, 2.0, 1.0}, {3.0, -1.5, -3.0}, {-2.25, 4.0, 2.5}, {1.5, -0.75, 2.5}}, A:t():flip(1))
    same({{3, 2, 1}}, i64({{1, 2, 3}}):flip(2))
    same({nan, inf, 1}, pt.tensor({1, inf, nan}):flip(1))
  end)

  it("always returns a copy, also when nothing moves", function()
    for _, dims in ipairs {{}, 1, {1, 2}} do
      local t = pt.tensor({{1, 2}})
      local f = t:flip(dims)
      assert.is_false(f:is_same_storage(t))
      f:fill_(0)
      same({{1, 2}}, t)
    end
    local s = pt.tensor(4):flip(1)
    assert.are.equal(0, s:dim())
    assert.are.equal(4, s:item())
    assert.are.same({0, 3}, pt.zeros(0, 3):flip({1, 2}):size())
  end)

  it("passes gradcheck", function()
    gradcheck(function(x) return x:flip({1, 3}) end, {f64({2, 3, 4})})
    gradcheck(function(x) return x:t():flip(-1) end, {f64({3, 2})})
  end)
end)

describe("tril and triu", function()
  it("keep the lower and upper triangles of batched matrices, as torch", function()
    -- torch, for diagonal 0, 1, -1, -5, 5
    local lower = {
      [0] = {{{-2.5, 0.0, 0.0, 0.0}, {0.5, -1.5, 0.0, 0.0}, {-2.0, 1.5, -0.5, 0.0}},
             {{1.0, 0.0, 0.0, 0.0}, {-1.5, 2.0, 0.0, 0.0}, {1.5, -0.5, -2.5, 0.0}}},
      [1] = {{{-2.5, 1.0, 0.0, 0.0}, {0.5, -1.5, 2.0, 0.0}, {-2.0, 1.5, -0.5, -2.5}},
             {{1.0, -1.0, 0.0, 0.0}, {-1.5, 2.0, 0.0, 0.0}, {1.5, -0.5, -2.5, 1.0}}},
      [-1] = {{{0.0, 0.0, 0.0, 0.0}, {0.5, 0.0, 0.0, 0.0}, {-2.0, 1.5, 0.0, 0.0}},
              {{0.0, 0.0, 0.0, 0.0}, {-1.5, 0.0, 0.0, 0.0}, {1.5, -0.5, 0.0, 0.0}}},
      [-5] = pt.zeros(2, 3, 4):tolist(),
      [5] = B:tolist(),
    }
    local upper = {
      [0] = {{{-2.5, 1.0, -1.0, 2.5}, {0.0, -1.5, 2.0, 0.0}, {0.0, 0.0, -0.5, -2.5}},
             {{1.0, -1.0, 2.5, 0.5}, {0.0, 2.0, 0.0, -2.0}, {0.0, 0.0, -2.5, 1.0}}},
      [1] = {{{0.0, 1.0, -1.0, 2.5}, {0.0, 0.0, 2.0, 0.0}, {0.0, 0.0, 0.0, -2.5}},
             {{0.0, -1.0, 2.5, 0.5}, {0.0, 0.0, 0.0, -2.0}, {0.0, 0.0, 0.0, 1.0}}},
      [-1] = {{{-2.5, 1.0, -1.0, 2.5}, {0.5, -1.5, 2.0, 0.0}, {0.0, 1.5, -0.5, -2.5}},
              {{1.0, -1.0, 2.5, 0.5}, {-1.5, 2.0, 0.0, -2.0}, {0.0, -0.5, -2.5, 1.0}}},
      [-5] = B:tolist(),
      [5] = pt.zeros(2, 3, 4):tolist(),
    }
    for _, k in ipairs {0, 1, -1, -5, 5} do
      same(lower[k], B:tril(k))
      same(upper[k], B:triu(k))
      same(lower[k], pt.tril(B, {diagonal = k}))
      same(upper[k], pt.triu(B, {diagonal = k}))
    end
    same(lower[0], B:tril())
    same(upper[0], pt.triu(B))
    -- non-contiguous, tall (torch)
    same({{0.0, 0.0, 0.0}, {-2.25, 0.0, 0.0}, {3.0, -1.5, 0.0}, {0.5, 2.0, 1.0}}, A:t():tril(-1))
    same({{0.0, -0.75, 2.5}, {0.0, 0.0, 2.5}, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}}, A:t():triu(1))
  end)

  it("keep the dtype, zero NaN outside the triangle, and handle empty matrices", function()
    local t = i64({{1, 2}, {3, 4}}):tril()
    assert.are.equal("int64", t:dtype())
    same({{1, 0}, {3, 4}}, t)
    same({{true, false}, {true, true}}, pt.ones(2, 2, {dtype = "bool"}):tril())
    same({{nan, 0}, {inf, nan}}, pt.tensor({{nan, nan}, {inf, nan}}):tril())
    assert.are.same({2, 0, 3}, pt.zeros(2, 0, 3):triu():size())
    assert.are.same({0, 0}, pt.zeros(0, 0):tril():size())
    local x = pt.ones(2, 2)
    x:tril():fill_(5)
    same({{1, 1}, {1, 1}}, x)
  end)

  it("pass gradcheck", function()
    gradcheck(function(x) return x:tril() end, {f64({2, 3, 4})})
    gradcheck(function(x) return x:triu(1) end, {f64({2, 3, 4})})
    gradcheck(function(x) return x:t():tril(-1) end, {f64({3, 4})})
  end)
end)

describe("amax and amin", function()
  it("reduce over one dim, a list of dims or all of them, as torch", function()
    -- torch
    same(2.5, B:amax())
    same(-2.5, pt.amin(B))
    assert.are.equal(0, B:amax():dim())
    same({{0.5, 1.5, 2.0, 2.5}, {1.5, 2.0, 2.5, 1.0}}, B:amax(2))
    same({{-2.5, -1.5, -1.0, -2.5}, {-1.5, -1.0, -2.5, -2.0}}, B:amin(-2))
    same({2.5, 2.0, 1.5}, B:amax({1, 3}))
    same({{{-2.5}, {-2.0}, {-2.5}}}, B:amin({1, 3}, true))
    same({{{2.5}, {2.0}, {1.5}}, {{2.5}, {2.0}, {1.5}}}, B:amax(-1, {keepdim = true}))
    same({{{2.5}}}, B:amax(nil, true))
    same({{{2.5}}}, B:amax({keepdim = true}))
    same(2.5, B:amax({}))
    same({2.5, 4, 3, 2}, A:t():amax(2)) -- non-contiguous: columns of A
  end)

  it("propagate NaN, keep infinities and integer dtypes, and handle 0-d and empty inputs", function()
    local t = pt.tensor({{1, nan, 3}, {-inf, 0, inf}})
    same({nan, inf}, t:amax(2))
    same({nan, -inf}, t:amin(2))
    same({1, nan, inf}, t:amax(1))
    local i = i64({{4, -2}, {7, 7}})
    assert.are.equal("int64", i:amax(2):dtype())
    same({4, 7}, i:amax(2))
    same(-2, i:amin())
    same(7, pt.tensor({7}, {dtype = "int32"}):amax())
    same(3, pt.tensor(3):amax())
    same(3, pt.tensor(3):amin(1, true))
    assert.are.same({0}, pt.zeros(0, 3):amax(2):size())
    assert.are.same({0, 1}, pt.zeros(0, 3):amin(-1, true):size())
  end)

  it("share the gradient evenly between tied extremes (torch's gradients)", function()
    local x = B:double():clone()
    x.requires_grad = true
    local y = x:amax({1, 3})
    assert.is_not_nil(y.grad_fn)
    y:backward(pt.tensor({0.5, -1.0, 2.0}, {dtype = "float64"}))
    same({{{0.0, 0.0, 0.0, 0.25}, {0.0, 0.0, -0.5, 0.0}, {0.0, 1.0, 0.0, 0.0}},
          {{0.0, 0.0, 0.25, 0.0}, {0.0, -0.5, 0.0, 0.0}, {1.0, 0.0, 0.0, 0.0}}}, x.grad)
    x.grad = nil
    x:amin(3):backward(pt.tensor({{1, 2, 3}, {4, 5, 6}}, {dtype = "float64"}))
    same({{{1.0, 0.0, 0.0, 0.0}, {0.0, 2.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 3.0}},
          {{0.0, 4.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 5.0}, {0.0, 0.0, 6.0, 0.0}}}, x.grad)
    -- an infinite maximum still gets the gradient, its value stays exact
    local z = pt.tensor({1, inf, inf}, {requires_grad = true})
    local m = z:amax()
    same(inf, m)
    m:backward()
    same({0, 0.5, 0.5}, z.grad)
  end)

  it("pass gradcheck", function()
    gradcheck(function(x) return x:amax(2) end, {f64({3, 4})})
    gradcheck(function(x) return x:amin({1, 3}, true) end, {f64({2, 3, 4})})
    gradcheck(function(x) return x:amax() end, {f64({2, 3})})
    gradcheck(function(x) return x:t():amin(-1) end, {f64({3, 4})})
  end)
end)

describe("clip, square, reciprocal, rsqrt, trunc", function()
  it("match torch on float32 values, NaN and infinities", function()
    -- torch, on X = {-2.5, -1.7, -0.5, 0, 0.25, 0.7, 3.7, 1e30, inf, -inf, nan} in float32
    same({-2.0, -1.0, -0.0, 0.0, 0.0, 0.0, 3.0, 1.0000000150474662e+30, inf, -inf, nan}, X:trunc(), true)
    same({6.25, 2.890000104904175, 0.25, 0.0, 0.0625, 0.4899999797344208, 13.690000534057617, inf, inf, inf, nan},
      X:square(), true)
    same({-0.4000000059604645, -0.5882352590560913, -2.0, inf, 4.0, 1.4285714626312256, 0.2702702581882477,
          1.0000000031710769e-30, 0.0, -0.0, nan}, X:reciprocal(), true)
    same({nan, nan, nan, inf, 2.0, 1.1952285766601562, 0.5198752284049988, 1.0000000036274937e-15, 0.0, nan, nan},
      X:rsqrt(), true)
    same({-1.0, -1.0, -0.5, 0.0, 0.25, 0.699999988079071, 1.0, 1.0, 1.0, -1.0, nan}, X:clip(-1, 1), true)
    same(X:clip(-1, 1):tolist(), pt.clip(X, {min = -1, max = 1}))
    for _, f in ipairs {"trunc", "square", "reciprocal", "rsqrt"} do
      assert.are.equal("float32", X[f](X):dtype())
      same(X[f](X):tolist(), pt[f](X))
    end
  end)

  it("follow torch's dtypes on integer tensors", function()
    local i = i64({-3, 0, 4})
    same({9, 0, 16}, i:square()) -- torch
    assert.are.equal("int64", i:square():dtype())
    same({-0.3333333432674408, inf, 0.25}, i:reciprocal()) -- torch
    assert.are.equal("float32", i:reciprocal():dtype())
    same({0.5, inf, 0.5773502588272095}, i64({4, 0, 3}):rsqrt()) -- torch
    same({-3, 0, 4}, i:trunc())
    assert.are.equal("int64", i:trunc():dtype())
    assert.are.equal("int32", pt.tensor({2}, {dtype = "int32"}):trunc():dtype())
  end)

  it("work on non-contiguous, float64, 0-d and empty tensors", function()
    local d = pt.tensor({{-1.5, 2.5}, {0.5, -4}}, {dtype = "float64"}):t()
    same({{-1, 0}, {2, -4}}, d:trunc())
    same({{2.25, 0.25}, {6.25, 16}}, d:square())
    same({{-1 / 1.5, 2}, {0.4, -0.25}}, d:reciprocal())
    same({1 / math.sqrt(2.5)}, pt.tensor({2.5}, {dtype = "float64"}):rsqrt())
    assert.are.equal("float64", d:rsqrt():dtype())
    same(-2, pt.tensor(-2.9):trunc())
    same(0.25, pt.tensor(-0.5):square())
    for _, f in ipairs {"trunc", "square", "reciprocal", "rsqrt"} do
      assert.are.same({0, 2}, pt[f](pt.zeros(0, 2)):size())
    end
    assert.are.same({0, 2}, pt.zeros(0, 2):clip(0, 1):size())
  end)

  it("trunc's gradient is zero everywhere (as torch's)", function()
    local x = pt.tensor({-1.5, 2.5}, {requires_grad = true})
    local y = x:trunc()
    assert.is_true(y.requires_grad)
    y:sum():backward()
    assert.are.same({0, 0}, x.grad:tolist())
  end)

  it("pass gradcheck", function()
    gradcheck(function(x) return x:square() end, {f64({3, 4})})
    gradcheck(function(x) return x:t():square() end, {f64({3, 4})})
    gradcheck(function(x) return (x + 3):reciprocal() end, {f64({3, 4})})
    gradcheck(function(x) return x:reciprocal() end, {pt.tensor({-2, -0.5, 0.3, 1.7}, {dtype = "float64"})})
    gradcheck(function(x) return (x + 2.5):rsqrt() end, {f64({3, 4})})
    -- inputs at least 0.01 from the bounds
    gradcheck(function(x) return x:clip(-1, 1) end, {f64({3, 4})})
    gradcheck(function(x) return pt.clip(x, {min = 0.5}) end, {f64({3, 4}, 0.3)})
  end)
end)

describe("roll", function()
  it("shifts circularly along dims, or over the flattened tensor, as torch.roll", function()
    -- torch
    same({{{1.0, -2.5, 1.0, -1.0}, {2.5, 0.5, -1.5, 2.0}, {0.0, -2.0, 1.5, -0.5}},
          {{-2.5, 1.0, -1.0, 2.5}, {0.5, -1.5, 2.0, 0.0}, {-2.0, 1.5, -0.5, -2.5}}}, B:roll(1))
    same({{{0.0, -2.0, 1.5, -0.5}, {-2.5, 1.0, -1.0, 2.5}, {0.5, -1.5, 2.0, 0.0}},
          {{-2.0, 1.5, -0.5, -2.5}, {1.0, -2.5, 1.0, -1.0}, {2.5, 0.5, -1.5, 2.0}}}, B:roll(-7))
    same({{{2.5, 0.5, 1.0, -1.0}, {0.0, -2.0, -1.5, 2.0}, {-2.5, 1.0, 1.5, -0.5}},
          {{-1.0, 2.5, -2.5, 1.0}, {2.0, 0.0, 0.5, -1.5}, {-0.5, -2.5, -2.0, 1.5}}}, B:roll({1, -2}, {1, 3}))
    same({{{0.5, -1.5, 2.0, 0.0}, {-2.0, 1.5, -0.5, -2.5}, {-2.5, 1.0, -1.0, 2.5}},
          {{-1.5, 2.0, 0.0, -2.0}, {1.5, -0.5, -2.5, 1.0}, {1.0, -1.0, 2.5, 0.5}}}, pt.roll(B, 5, 2))
    same(B:roll({1, -2}, {1, 3}):tolist(), B:roll({1, -2}, {-3, -1}))
    -- non-contiguous (torch)
    same({{0.5, 2.0, 1.0}, {1.5, -0.75, 2.5}, {-2.25, 4.0, 2.5}, {3.0, -1.5, -3.0}}, A:t():roll(1, 1))
    same({{0.5, 2.0, 1.0}, {1.5, -0.75, 2.5}, {-2.25, 4.0, 2.5}, {3.0, -1.5, -3.0}}, A:t():roll(3))
    same({{3, 1, 2}}, i64({{1, 2, 3}}):roll(1, 2))
    same({nan, 1, inf}, pt.tensor({1, inf, nan}):roll(1))
  end)

  it("always returns a copy, and handles 0-d and empty tensors", function()
    for _, args in ipairs {{0}, {3, 2}, {{0, 0}, {1, 2}}, {4}} do
      local t = pt.tensor({{1, 2}, {3, 4}})
      local r = t:roll(args[1], args[2])
      assert.is_false(r:is_same_storage(t))
      r:fill_(0)
      same({{1, 2}, {3, 4}}, t)
    end
    local s = pt.tensor(5):roll(3)
    assert.are.equal(0, s:dim())
    assert.are.equal(5, s:item())
    same(5, pt.tensor(5):roll(1, 1))
    assert.are.same({0, 3}, pt.zeros(0, 3):roll(2):size())
    assert.are.same({0, 3}, pt.zeros(0, 3):roll({1, 1}, {1, 2}):size())
  end)

  it("passes gradcheck", function()
    gradcheck(function(x) return x:roll({1, -2}, {1, 3}) end, {f64({2, 3, 4})})
    gradcheck(function(x) return x:roll(5) end, {f64({3, 4})})
    gradcheck(function(x) return x:t():roll(1, 2) end, {f64({3, 4})})
  end)
end)

describe("nn.functional.one_hot", function()
  local F = pt.nn.functional

  it("encodes 1-based class indices, as torch's one_hot(indices - 1)", function()
    local idx = i64({{3, 1}, {2, 2}})
    local h = F.one_hot(idx)
    assert.are.equal("int64", h:dtype())
    same({{{0, 0, 1}, {1, 0, 0}}, {{0, 1, 0}, {0, 1, 0}}}, h) -- torch
    same({{{0, 0, 1, 0, 0}, {1, 0, 0, 0, 0}}, {{0, 1, 0, 0, 0}, {0, 1, 0, 0, 0}}}, F.one_hot(idx, 5)) -- torch
    same(F.one_hot(idx, 5):tolist(), F.one_hot(idx, {num_classes = 5}))
    same(h:tolist(), F.one_hot(idx, -1))
    same({{0, 1}, {1, 0}}, F.one_hot(pt.tensor({2, 1}, {dtype = "int32"})))
    same({{1, 0, 0}, {0, 0, 1}}, F.one_hot(i64({{1, 3}}):t()))
    same({0, 1, 0}, F.one_hot(pt.tensor(2, {dtype = "int64"}), 3))
    assert.are.same({0, 4}, F.one_hot(i64({}), 4):size())
  end)

  it("names a class out of range and other bad input", function()
    assert_error("one_hot: class 0 out of range 1..3", F.one_hot, i64({0, 3}))
    assert_error("one_hot: class 4 out of range 1..3", F.one_hot, i64({1, 4}), 3)
    assert_error("one_hot: class -2 out of range 1..5", F.one_hot, i64({-2, 5}))
    assert_error("one_hot: indices must be an integer tensor, got float32", F.one_hot, pt.tensor({1, 2}))
    assert_error("one_hot: cannot infer the number of classes from an empty tensor (pass num_classes)",
      F.one_hot, i64({}))
    assert_error("one_hot: num_classes must be -1 (infer) or at least 0, got -2", F.one_hot, i64({1}), -2)
    assert_error("one_hot: num_classes must be an integer, got 2.5", F.one_hot, i64({1}), 2.5)
    assert_error("one_hot: unknown option 'classes' (options: num_classes)", F.one_hot, i64({1}), {classes = 2})
  end)
end)

describe("errors", function()
  it("name the function and the argument", function()
    local t = pt.zeros(2, 3)
    assert_error("flip: dimension 5 out of range (tensor has 2 dimensions)", t.flip, t, 5)
    assert_error("flip: dimension -3 out of range (tensor has 2 dimensions)", pt.flip, t, {1, -3})
    assert_error("flip: dimension -2 appears more than once in the list of dimensions", t.flip, t, {1, -2})
    assert_error("flip: dims expected (a dimension or a list of dimensions)", t.flip, t)
    assert_error("flip: dimension must be an integer, got 1.5", t.flip, t, 1.5)
    assert_error("flip: bad argument #1 (Tensor expected, got number)", pt.flip, 3, 1)
    assert_error("flip: dimension 2 out of range (tensor has 0 dimensions)", pt.flip, pt.tensor(1), 2)
    assert_error("argsort: dimension 3 out of range (tensor has 2 dimensions)", t.argsort, t, 3)
    assert_error("argsort: dimension 3 out of range (tensor has 2 dimensions)", t.argsort, t, {dim = 3})
    assert_error("argsort: unknown option 'descendng' (options: dim, descending, stable)", t.argsort, t, 1,
      {descendng = true})
    assert_error("argsort: descending must be a boolean, got string", t.argsort, t, 1, "yes")
    assert_error("argsort: unexpected argument #4 (number)", t.argsort, t, 1, true, 7)
    assert_error("argsort: unexpected argument #3 (boolean)", t.argsort, t, {dim = 1}, true)
    assert_error("tril: input must have at least 2 dimensions, got 1", pt.tril, pt.zeros(3))
    assert_error("triu: input must have at least 2 dimensions, got 0", pt.triu, pt.tensor(1))
    assert_error("triu: diagonal must be an integer, got 1.5", t.triu, t, 1.5)
    assert_error("tril: diagonal must be an integer, got string", t.tril, t, "1")
    assert_error("tril: unknown option 'k' (options: diagonal)", t.tril, t, {k = 1})
    assert_error("amax: dimension -4 out of range (tensor has 3 dimensions)", B.amax, B, -4)
    assert_error("amin: dimension 4 out of range (tensor has 3 dimensions)", B.amin, B, {1, 4})
    assert_error("amin: dimension 3 appears more than once in the list of dimensions", B.amin, B, {3, 1, 3})
    assert_error("amax: cannot reduce over an empty dimension (shape {0,3})", pt.amax, pt.zeros(0, 3), 1)
    assert_error("amin: cannot reduce over an empty dimension (shape {0,3})", pt.amin, pt.zeros(0, 3))
    assert_error("amax: keepdim must be a boolean, got number", B.amax, B, 1, 1)
    assert_error("amax: unknown option 'keep_dim' (options: keepdim)", B.amax, B, 1, {keep_dim = true})
    assert_error("amax: unexpected argument #4 (number)", B.amax, B, 1, true, 2)
    assert_error("roll: shifts and dims must have the same length (got 2 and 1)", t.roll, t, {1, 2}, {1})
    assert_error("roll: without dims, shifts must be one number (got 2)", t.roll, t, {1, 2})
    assert_error("roll: shift must be an integer, got 1.5", t.roll, t, 1.5, 1)
    assert_error("roll: dimension 3 out of range (tensor has 2 dimensions)", t.roll, t, 1, 3)
    assert_error("roll: shifts expected (a number or a list of numbers)", t.roll, t)
    assert_error("square: unexpected argument #2 (number)", t.square, t, 2)
    assert_error("isnan: bad argument #1 (Tensor expected, got string)", pt.isnan, "x")
    assert_error("trunc: bad argument #1 (Tensor expected, got nil)", pt.trunc)
  end)

  it("point at the caller's line", function()
    local line = debug.getinfo(1, "l").currentline + 1
    local ok, err = pcall(function() return B:amax(9) end)
    assert.is_false(ok)
    assert.matches("tensor_extra_spec%.lua:" .. line .. ": amax: dimension 9", err)
  end)
end)
