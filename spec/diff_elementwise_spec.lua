-- Element-wise ops checked against PyTorch 1.13 (differential testing): each expected value below
-- is torch's, computed with the same inputs.
local pt = require "partrain"
local support = require "spec.support"
local assert_error = support.assert_error

local NAN = 0 / 0

-- a and b equal element by element (NaN equals NaN), nested lists
local function same(expected, got)
  if type(expected) == "table" then
    assert.are.equal(#expected, #got)
    for i = 1, #expected do same(expected[i], got[i]) end
    return
  end
  if expected ~= expected then
    assert(got ~= got, "expected NaN, got " .. tostring(got))
  else
    assert.are.equal(expected, got)
  end
end

local function f64(v) return pt.tensor(v, {dtype = "float64", requires_grad = true}) end

describe("clamp with tensor bounds (torch.clamp's Tensor overload)", function()
  -- x, min, max: ties, min > max, min == max, NaN in x and in min
  local X = {0, 1, 2, 3, 5, 0.5, 1, NAN, 2}
  local LO = {1, 1, 1, 1, 4, 2, 1, 0, NAN}
  local HI = {3, 3, 3, 3, 2, 2, 1, 1, 3}
  -- the gradient given to backward: 1, 2, ..., n
  local function back(y) y:backward(pt.arange(1, y:numel() + 1):reshape(y:size()):to(y:dtype())) end

  it("gives torch's values and gradients with both bounds", function()
    local x, lo, hi = f64(X), f64(LO), f64(HI)
    local y = pt.clamp(x, lo, hi)
    back(y)
    -- values from torch 1.13
    same({1, 1, 2, 3, 2, 2, 1, NAN, NAN}, y:tolist())
    same({0, 2, 3, 4, 0, 0, 7, 0, 0}, x.grad:tolist())
    same({1, 0, 0, 0, 0, 0, 0, 0, 0}, lo.grad:tolist())
    same({0, 0, 0, 0, 5, 0, 0, 0, 0}, hi.grad:tolist())
  end)

  it("gives torch's values and gradients with one bound", function()
    local x, lo = f64(X), f64(LO)
    local y = x:clamp(lo)
    back(y)
    -- values from torch 1.13
    same({1, 1, 2, 3, 5, 2, 1, NAN, NAN}, y:tolist())
    same({0, 2, 3, 4, 5, 0, 7, 0, 0}, x.grad:tolist())
    same({1, 0, 0, 0, 0, 6, 0, 0, 0}, lo.grad:tolist())
    local x2, hi = f64(X), f64(HI)
    local y2 = x2:clamp({max = hi})
    back(y2)
    same({0, 1, 2, 3, 2, 0.5, 1, NAN, 2}, y2:tolist())
    same({1, 2, 3, 4, 0, 6, 7, 0, 9}, x2.grad:tolist())
    same({0, 0, 0, 0, 5, 0, 0, 0, 0}, hi.grad:tolist())
  end)

  it("broadcasts and reduces the gradients to each bound's shape", function()
    local x, lo, hi = f64({{0.5, 1.5, 2.5}, {-1, 0, 3}}), f64({0, 1, 2}), f64({{1}, {2}})
    local y = pt.clamp(x, lo, hi)
    back(y)
    -- values from torch 1.13
    same({{0.5, 1, 1}, {0, 1, 2}}, y:tolist())
    same({{1, 0, 0}, {0, 0, 0}}, x.grad:tolist())
    same({4, 5, 0}, lo.grad:tolist())
    same({{5}, {6}}, hi.grad:tolist())
    -- transposed input, a row and a column of bounds
    local z = pt.clamp(pt.arange(12):reshape(3, 4):t(), pt.tensor({2, 3, 4}), pt.arange(4):reshape(4, 1) + 5)
    same({{2, 4, 5}, {2, 5, 6}, {2, 6, 7}, {3, 7, 8}}, z:tolist())
    assert.are.same({0}, pt.clamp(pt.zeros(0), pt.zeros(0), pt.ones(0)):size())
  end)

  it("promotes dtypes as torch", function()
    -- values and dtypes from torch 1.13
    local y = pt.clamp(pt.tensor({1, 5, 9}, {dtype = "int64"}), pt.tensor({2.5, 2.5, 2.5}))
    assert.are.equal("float32", y:dtype())
    same({2.5, 5, 9}, y:tolist())
    y = pt.clamp(pt.tensor({1, 5, 9}, {dtype = "int64"}), pt.tensor({2, 2, 2}, {dtype = "int32"}),
      pt.tensor({6, 6, 6}, {dtype = "int32"}))
    assert.are.equal("int64", y:dtype())
    same({2, 5, 6}, y:tolist())
    y = pt.clamp(pt.tensor({1, 5, 9}, {dtype = "uint8"}), pt.tensor(2, {dtype = "int64"}))
    assert.are.equal("uint8", y:dtype()) -- a 0-d bound does not raise the dtype
    same({2, 5, 9}, y:tolist())
    assert.are.equal("float32", pt.clamp(pt.tensor({1, 5}), pt.tensor(2, {dtype = "float64"})):dtype())
    -- a number on the other side is applied after the tensor bound
    same({2, 5, 6}, pt.clamp(pt.tensor({1, 5, 9}), pt.tensor({2, 2, 2}), 6):tolist())
    same({2, 5, 6}, pt.clip(pt.tensor({1, 5, 9}), pt.tensor({2, 2, 2}), pt.tensor({6, 6, 6})):tolist())
  end)

  it("clamps in place with tensor bounds, with gradients", function()
    local x = pt.tensor({1, 5, 9})
    assert.is_true(rawequal(x, x:clamp_(pt.tensor({2, 2, 2}, {dtype = "int64"}), pt.tensor(6))))
    same({2, 5, 6}, x:tolist())
    local a, lo = f64({0.5, 1.5, 2.5}), f64({1, 1, 3})
    local y = a * 1
    y:clamp_(lo)
    back(y)
    -- values from torch 1.13
    same({1, 1.5, 3}, y:tolist())
    same({0, 2, 0}, a.grad:tolist())
    same({1, 0, 3}, lo.grad:tolist())
  end)

  it("gives second derivatives through create_graph", function()
    local x, lo = f64({0.5, 1.5, 2.5}), f64({1, 1, 1})
    local y = (pt.clamp(x, lo, pt.tensor(2, {dtype = "float64"})) * x * x):sum()
    local g = pt.autograd.grad(y, {x, lo}, {create_graph = true})
    -- values from torch 1.13
    same({1, 6.75, 10}, g[1]:tolist())
    same({0.25, 0, 0}, g[2]:tolist())
    same({2, 9, 4}, pt.autograd.grad(g[1]:sum(), {x})[1]:tolist())
  end)

  it("refuses what torch refuses", function()
    assert_error("clamp_: result type float32 can't be cast to the desired output type int64",
      function() return pt.tensor({1, 5, 9}, {dtype = "int64"}):clamp_(pt.tensor({2.5, 2, 2})) end)
    assert_error("clamp_: output with shape {3} doesn't match the broadcast shape {2,3}",
      function() return pt.tensor({1, 5, 9}):clamp_(pt.tensor({{2}, {3}})) end)
    assert_error("clamp: shapes {3} (input) and {2} (min) cannot be broadcast",
      function() return pt.tensor({1, 5, 9}):clamp(pt.tensor({2, 3})) end)
    assert_error("clamp: max must be a number or a Tensor, got string",
      function() return pt.tensor({1, 5, 9}):clamp(nil, "2") end)
    local w = pt.tensor({1, 2}, {requires_grad = true})
    assert_error("clamp_: a leaf tensor that requires grad is used in an in-place operation",
      function() return w:clamp_(pt.tensor({0, 0})) end)
  end)
end)

describe("where", function()
  local m = pt.tensor({{true, false}, {false, true}})

  it("with the condition alone gives its nonzero indices (1-based), as torch.where(cond)", function()
    local r, c = pt.where(m)
    assert.are.same({1, 2}, r:tolist())
    assert.are.same({1, 2}, c:tolist())
    local i = pt.where(pt.tensor({0, 3, 0, 1}))
    assert.are.same({2, 4}, i:tolist())
  end)
end)

describe("lerp", function()
  it("gives torch's bits (fused multiply-add from the nearer end, weight < 0.5 from start)", function()
    local a = pt.tensor({0.1, -1.3, 2.7, 0.35, -0.8})
    local b = pt.tensor({0.7, 2.9, -1.1, 0.35, 5.5})
    local w = pt.tensor({-0.6, 0.2, 0.49, 0.5, 1.7})
    -- values from torch 1.13
    same({-0.25999999046325684, -0.45999997854232788, 0.83799993991851807, 0.34999999403953552,
          9.9100008010864258}, pt.lerp(a, b, w):tolist())
    same({-0.31999996304512024, -4.2399997711181641, 5.3600001335144043, 0.34999999403953552,
          -5.2100000381469727}, pt.lerp(a, b, -0.7):tolist())
    same({-0.26000000476837126, -0.45999993026256547, 0.83799997639655999, 0.34999999403953552,
          9.9100003087520605}, pt.lerp(a:double(), b:double(), w:double()):tolist())
  end)

  it("extrapolates below 0 from -inf to inf as -inf, as torch", function()
    local a = pt.tensor({-math.huge, 1, math.huge})
    local b = pt.tensor({math.huge, math.huge, 1})
    -- values from torch 1.13
    same({-math.huge, -math.huge, -math.huge}, pt.lerp(a, b, pt.tensor({-1, -1, 2})):tolist())
    same({-math.huge, -math.huge, math.huge}, pt.lerp(a, b, -1):tolist())
    same({-math.huge, -math.huge, math.huge}, a:clone():lerp_(b, -1):tolist())
  end)
end)

describe("comparison operators on tensors", function()
  it("say to use lt/le/gt/ge (a Lua comparison gives one boolean, torch's x > 0 is a mask)", function()
    local a = pt.tensor({1, 2})
    local msg = "attempt to compare a Tensor with <, <=, > or >= (a Lua comparison gives one boolean): use "
      .. "a:lt(b), a:le(b), a:gt(b) or a:ge(b) for the element-wise bool tensor (torch's a < b, ...), or "
      .. "t:item() for a one-element tensor's number"
    assert_error(msg, function() return a < a end)
    assert_error(msg, function() return a > 0 end)
    assert_error(msg, function() return 2 <= a end)
    assert_error(msg, function() return a >= a end)
    -- what to write instead: torch's (a > 1) mask
    assert.are.same({false, true}, a:gt(1):tolist())
  end)
end)

describe("masked_fill with a 0-d tensor value (torch's Tensor overload)", function()
  local m = pt.tensor({true, false, true})

  it("fills with the value cast to the tensor's dtype", function()
    -- values and dtypes from torch 1.13
    local r = pt.arange(3):masked_fill(m, pt.tensor(2.7))
    assert.are.equal("int64", r:dtype())
    assert.are.same({2, 1, 2}, r:tolist())
    r = pt.zeros(3, {dtype = "float64"}):masked_fill(m, pt.tensor(2.5))
    assert.are.equal("float64", r:dtype())
    assert.are.same({2.5, 0, 2.5}, r:tolist())
    assert.are.same({{7, 0, 7}, {7, 0, 7}}, pt.zeros(2, 3):masked_fill(m, pt.tensor(7, {dtype = "int64"})):tolist())
  end)

  it("gives the value the sum of the gradient over the mask, out of place and in place", function()
    local x, v = f64({1, 2, 3}), f64(5)
    local w = pt.tensor({1, 2, 3}, {dtype = "float64"});
    (x:masked_fill(m, v) * w):sum():backward()
    -- values from torch 1.13
    assert.are.same({0, 2, 0}, x.grad:tolist())
    assert.are.equal(4, v.grad:item())
    local x2, v2 = f64({1, 2, 3}), f64(5)
    local y = x2 * 1
    assert.is_true(rawequal(y, y:masked_fill_(m, v2)))
    assert.are.same({5, 2, 5}, y:tolist());
    (y * w):sum():backward()
    assert.are.same({0, 2, 0}, x2.grad:tolist())
    assert.are.equal(4, v2.grad:item())
  end)

  it("refuses a value with dimensions, as torch", function()
    assert_error("masked_fill: only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s)",
      function() return pt.zeros(3):masked_fill(m, pt.tensor({1})) end)
    assert_error("masked_fill_: only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s)",
      function() return pt.zeros(3):masked_fill_(m, pt.tensor({1})) end)
  end)
end)

describe("div_ with rounding_mode (torch's div_(other, rounding_mode=))", function()
  it("rounds in place", function()
    -- values from torch 1.13
    local i = pt.tensor({-7, 7, -8}, {dtype = "int64"})
    assert.is_true(rawequal(i, i:div_(2, {rounding_mode = "trunc"})))
    assert.are.same({-3, 3, -4}, i:tolist())
    local f = pt.arange(9):reshape(3, 3):double() - 4
    f:div_(3, {rounding_mode = "floor"})
    assert.are.same({{-2, -1, -1}, {-1, 0, 0}, {0, 1, 1}}, f:tolist())
    local g = pt.tensor({-7.5, 7, -8})
    g:div_(pt.tensor({2, -2, 3}), {rounding_mode = "trunc"})
    assert.are.same({-3, -3, -2}, g:tolist())
    -- no mode: true division
    assert.are.same({-3.75, 3.5, -4}, pt.tensor({-7.5, 7, -8}):div_(2, {}):tolist())
  end)

  it("checks its options", function()
    assert_error("div_: unknown option 'rounding' (options: rounding_mode)",
      function() return pt.ones(2):div_(2, {rounding = "floor"}) end)
    assert_error("div_: result type float32 can't be cast to the desired output type int64",
      function() return pt.tensor({1}, {dtype = "int64"}):div_(2) end)
  end)
end)

describe("fmax and fmin (torch.fmax / torch.fmin)", function()
  it("ignore a NaN on one side and give torch's gradients", function()
    local a = pt.tensor({1, NAN, 3, 2, NAN}, {requires_grad = true})
    local b = pt.tensor({NAN, 2, 1, 2, NAN}, {requires_grad = true})
    local y = pt.fmax(a, b)
    y:backward(pt.ones(5))
    -- values from torch 1.13
    same({1, 2, 3, 2, NAN}, y:tolist())
    same({1, 0, 1, 1, 1}, a.grad:tolist())
    same({0, 1, 0, 0, 0}, b.grad:tolist())
    a.grad, b.grad = nil, nil
    y = a:fmin(b)
    y:backward(pt.ones(5))
    same({1, 2, 1, 2, NAN}, y:tolist())
    same({1, 0, 0, 1, 1}, a.grad:tolist())
    same({0, 1, 1, 0, 0}, b.grad:tolist())
  end)

  it("broadcast and promote as torch", function()
    -- values and dtypes from torch 1.13
    local r = pt.fmax(pt.tensor({1, 5}, {dtype = "int64"}), pt.tensor({2.5, NAN}))
    assert.are.equal("float32", r:dtype())
    same({2.5, 5}, r:tolist())
    r = pt.fmax(pt.tensor({true, false}), pt.tensor({false, false}))
    assert.are.equal("bool", r:dtype())
    same({true, false}, r:tolist())
    same({{1, 1}, {3, 2}}, pt.fmin(pt.tensor({{1}, {3}}), pt.tensor({4, 2}, {dtype = "float64"})):tolist())
    assert_error("fmax: shapes {2} and {3} cannot be broadcast", function() return pt.fmax(pt.ones(2), pt.ones(3)) end)
  end)
end)

describe("round with decimals (torch.round(t, decimals=d))", function()
  local X = pt.tensor({2.675, 1.25, -0.5, 0.125, 1234.5678, -35.0, 3e37})

  it("gives torch's bits in float32 and float64", function()
    -- values from torch 1.13 (its formula in float32: 3e37 * 100 overflows to inf)
    same({2.6800000667572021, 1.25, -0.5, 0.11999999731779099, 1234.5699462890625, -35, math.huge},
      pt.round(X, {decimals = 2}):tolist())
    local r = X:round({decimals = -1}):tolist()
    same({0, 0, -0.0, 0, 1230, -40, 3.0000001069098038e+37}, r)
    assert.are.equal(-math.huge, 1 / r[3]) -- -0.0, as torch
    same({2.6749999999999998, 1.25, -0.5, 0.125, 1234.568, -35, 3.0000001069098038e+37},
      X:double():round({decimals = 3}):tolist())
    same({3, 1, -0.0, 0, 1235, -35, 3.0000001069098038e+37}, pt.round(X, {decimals = 0}):tolist())
  end)

  it("rounds in place and into out=", function()
    local y = X:clone()
    assert.is_true(rawequal(y, y:round_({decimals = 2})))
    same(pt.round(X, {decimals = 2}):tolist(), y:tolist())
    local o = pt.empty(7)
    assert.is_true(rawequal(o, pt.round(X, {decimals = 1, out = o})))
    same(pt.round(X, {decimals = 1}):tolist(), o:tolist())
  end)

  it("checks its arguments", function()
    assert_error("round: decimals is not supported for int64 tensors (as torch)",
      function() return pt.round(pt.tensor({15, 23}, {dtype = "int64"}), {decimals = 1}) end)
    assert_error("round: decimals must be an integer, got a float",
      function() return pt.round(X, {decimals = 1.5}) end)
    assert_error("round: unknown option 'decimal' (options: decimals, out)",
      function() return pt.round(X, {decimal = 1}) end)
    assert_error("round_: unknown option 'out' (options: decimals)",
      function() return X:clone():round_({out = X}) end)
  end)
end)

describe("erfcx and zeta (torch.special.erfcx / torch.special.zeta)", function()
  local function near(expected, got, tol)
    assert.are.equal(#expected, #got)
    for i = 1, #expected do
      local e, g = expected[i], got[i]
      if e ~= e then
        assert(g ~= g, "element " .. i .. ": expected NaN, got " .. tostring(g))
      elseif e == math.huge or e == -math.huge then
        assert.are.equal(e, g)
      else
        assert(math.abs(g - e) <= tol * math.abs(e), string.format("element %d: %.17g ~= %.17g", i, g, e))
      end
    end
  end

  it("erfcx gives torch's values and gradients, without overflow", function()
    local t = pt.tensor({-2, -0.5, 0, 0.5, 3, 30}, {dtype = "float64", requires_grad = true})
    local y = pt.special.erfcx(t)
    y:sum():backward()
    -- values from torch 1.13
    near({108.94090438997797, 1.952360489182557, 1, 0.61569034419292579, 0.17900115118138998,
          0.018795888861416754}, y:tolist(), 1e-14)
    near({-436.89199672700738, -3.0807396562780696, -1.1283791670955126, -0.51268882290258677,
          -0.054372260007172768, -0.00062583541050731384}, t.grad:tolist(), 1e-13)
    near({math.huge, 5.3762342836322712e+43, 5.6418958354775629e-11, 0, math.huge},
      pt.erfcx(pt.tensor({-30, -10, 1e10, math.huge, -math.huge}, {dtype = "float64"})):tolist(), 1e-14)
    local f = pt.erfcx(pt.tensor({-3, 0.1, 5, 1e10}))
    assert.are.equal("float32", f:dtype())
    near({16205.9892578125, 0.89645689725875854, 0.11070463061332703, 5.6418959781812106e-11}, f:tolist(), 2e-7)
    assert.are.equal("float32", pt.erfcx(pt.tensor({1, 2}, {dtype = "int64"})):dtype())
  end)

  it("erfcx has second derivatives (create_graph)", function()
    local t = pt.tensor({-0.5, 0.5, 3}, {dtype = "float64", requires_grad = true})
    local g = pt.autograd.grad(pt.erfcx(t):sum(), {t}, {create_graph = true})[1]
    -- values from torch 1.13
    near({6.9854606346431831, 0.71869186548326514, 0.031768742319741916},
      pt.autograd.grad(g:sum(), {t})[1]:tolist(), 1e-13)
  end)

  it("zeta gives torch's values, its domain and q's gradient", function()
    local q = pt.tensor({0.5, 1.5, 3}, {dtype = "float64", requires_grad = true})
    local z = pt.special.zeta(pt.tensor({{2}, {3.5}}, {dtype = "float64"}), q)
    z:sum():backward()
    -- values from torch 1.13
    near({4.9348022005446799, 0.93480220054467933, 0.39493406684822646, 11.620804663441898,
          0.30709616445713417, 0.038345519668738191}, z:reshape(-1):tolist(), 1e-14)
    near({-96.665893655683718, -1.4699341627903875, -0.19091048559972121}, q.grad:tolist(), 1e-14)
    -- x == 1, x < 1, q a non-positive integer, a negative q, a large q
    near({math.huge, NAN, math.huge, 9.5392465591430664, 0.030778409913182259, 9.9999997171806854e-10},
      pt.zeta(pt.tensor({1, 0.5, 2, 2, 3, 2}), pt.tensor({1, 1, 0, -2.5, -3.5, 1e9})):tolist(), 1e-7)
    near({1417418549.9538512, 225.73807390399492},
      pt.zeta(pt.tensor({200, 4.5}, {dtype = "float64"}), pt.tensor({0.9, 0.3}, {dtype = "float64"})):tolist(), 1e-15)
    near({1.6449340668482266, 0.64493406684822663}, pt.zeta(2, pt.tensor({1, 2}, {dtype = "float64"})):tolist(), 1e-15)
  end)

  it("zeta sums a far negative q's terms in bounded time", function()
    -- values from torch 1.13 (its direct sum; 1e15 steps of q + 1 here would not end)
    near({9.8695944011893584, -62.012553360599512, 9.6208792980503475, 259.7575760906733},
      pt.zeta(pt.tensor({2, 3, 2, 4}, {dtype = "float64"}),
        pt.tensor({-1e5 - 0.5, -2e6 - 0.25, -3.5, -1.5e6 - 0.75}, {dtype = "float64"})):tolist(), 1e-13)
    local r = pt.zeta(pt.tensor({2}, {dtype = "float64"}), pt.tensor({-1e15 - 0.5}, {dtype = "float64"})):item()
    assert(math.abs(r - math.pi ^ 2) < 1e-12, tostring(r)) -- all its terms (r + j)^-2, j in Z: pi^2 less 2 / 1e15
  end)

  it("zeta refuses x's gradient, as torch", function()
    local x = pt.tensor({2.5}, {dtype = "float64", requires_grad = true})
    assert.matches("zeta: the derivative with respect to x (input) is not implemented (as torch)",
      support.errmsg(function() pt.zeta(x, 1.5):sum():backward() end), 1, true)
  end)
end)

describe("add_/sub_ and out= with a non-integral alpha on integer tensors", function()
  -- torch 1.13 refuses a float alpha with integer tensors; the in-place and out= forms wrote the
  -- float32 bits of the scaled sum into the integer storage ({4629700418006417408, ...})
  local i = pt.tensor({1, 2, 3}, {dtype = "int64"})

  it("refuse an integer destination", function()
    assert_error("add_: result type float32 can't be cast to the desired output type int64",
      function() return i:clone():add_(i, {alpha = 0.5}) end)
    assert_error("sub_: result type float32 can't be cast to the desired output type int64",
      function() return i:clone():sub_(i, {alpha = -1.5}) end)
    assert_error("add_: result type float32 can't be cast to the desired output type uint8",
      function() return pt.tensor({1, 2}, {dtype = "uint8"}):add_(pt.tensor({1, 2}, {dtype = "uint8"}), {alpha = 0.5}) end)
    assert_error("add: result type float32 can't be cast to the desired output type int64",
      function() return pt.add(i, i, {alpha = 0.5, out = pt.zeros(3, {dtype = "int64"})}) end)
  end)

  it("keep integer alphas integral and floating destinations exact", function()
    -- values from torch 1.13
    assert.are.same({3, 6, 9}, i:clone():add_(i, {alpha = 2}):tolist())
    assert.are.same({-2, -4, -6}, i:clone():add_(i, {alpha = -3.0}):tolist())
    assert.are.same({1.5, 3, 4.5}, pt.tensor({1, 2, 3}):add_(i, {alpha = 0.5}):tolist())
    assert.are.same({0.5, 1, 1.5}, pt.sub(i, i, {alpha = 0.5, out = pt.zeros(3, {dtype = "float64"})}):tolist())
  end)
end)

describe("add/sub with alpha scale the other operand in the result's dtype", function()
  local b = pt.tensor({true, false, true})

  it("keep the promoted dtype of the unscaled operands (int32 + 2 * bool is int32)", function()
    -- values and dtypes from torch 1.13 (before: int64, and int32/uint8 add_ and out= wrote
    -- int64 bits into the narrower storage)
    local k = pt.tensor({5, -7, 3}, {dtype = "int32"})
    local r = pt.add(k, b, {alpha = 2})
    assert.are.equal("int32", r:dtype())
    assert.are.same({7, -7, 5}, r:tolist())
    assert.are.same({7, -7, 5}, k:clone():add_(b, {alpha = 2}):tolist())
    local u = pt.tensor({5, 250, 3}, {dtype = "uint8"})
    assert.are.same({4, 250, 2}, pt.add(u, b, {alpha = -1}):tolist())
    assert.are.same({8, 250, 6}, u:clone():add_(b, {alpha = 3}):tolist())
    local o = pt.zeros(3, {dtype = "uint8"})
    pt.add(u, b, {alpha = 3, out = o})
    assert.are.same({8, 250, 6}, o:tolist())
  end)

  it("take a bool result's alpha as a bool, as torch", function()
    -- values from torch 1.13
    for _, alpha in ipairs({2, 0, -1}) do
      local r = pt.add(b, b, {alpha = alpha})
      assert.are.equal("bool", r:dtype())
      assert.are.same({true, false, true}, r:tolist())
      assert.are.same({true, false, true}, b:clone():add_(b, {alpha = alpha}):tolist())
    end
    assert.are.same({true, true, true}, pt.add(b, pt.tensor({false, true, false}), {alpha = 5}):tolist())
  end)

  it("scale an integer tensor beside a float64 one in float64 (no float32 step)", function()
    -- value from torch 1.13 (through float32, 2^24 + 1 became 2^24: 8388608.5)
    local r = pt.add(pt.tensor({0.5}, {dtype = "float64"}), pt.tensor({(1 << 24) + 1}, {dtype = "int64"}), {alpha = 0.5})
    assert.are.equal(8388609, r:item())
  end)
end)

describe("add/sub with a number first and alpha", function()
  it("scale the tensor in the result's dtype, as the tensor-first form", function()
    local u = pt.tensor({3, 7, 1, 200}, {dtype = "uint8"})
    -- 2.5 + 2 * u is float32: 2 * 200 is 400 there (it wrapped to 144 in uint8 before)
    assert.are.same({8.5, 16.5, 4.5, 402.5}, pt.add(2.5, u, {alpha = 2}):tolist())
    assert.are.same({8, 16, 4, 146}, pt.add(2, u, {alpha = 2}):tolist()) -- uint8 wraps, as torch's uint8
    local x = f64({1, 2})
    local z = pt.sub(3, x, {alpha = 2.5})
    z:sum():backward()
    assert.are.same({0.5, -2}, z:tolist())
    assert.are.same({-2.5, -2.5}, x.grad:tolist())
  end)
end)

describe("integer division of an empty tensor by zero", function()
  it("gives the empty result, as torch (nothing is divided)", function()
    local e = pt.zeros(0, 3, {dtype = "int64"})
    for _, r in ipairs({e // 0, e % 0, pt.fmod(e, 0), e:clone():floor_divide_(0), pt.remainder(e, pt.zeros(3, {dtype = "int64"}))}) do
      assert.are.same({0, 3}, r:size())
      assert.are.equal("int64", r:dtype())
    end
    assert_error("floor_divide: integer division by zero (a divisor is 0; a float dtype gives inf or nan instead)",
      function() return pt.tensor({1}, {dtype = "int64"}) // 0 end)
  end)
end)

describe("relu and clamp backward select their gradient", function()
  it("so a nan or inf gradient does not reach clamped elements (torch: relu [0, nan], clamp [0, nan, 0])", function()
    local x = pt.tensor({-1, 2}, {requires_grad = true})
    x:relu():backward(pt.tensor({0 / 0, 0 / 0}))
    assert.are.equal(0, x.grad[1])
    assert.is_true(x.grad[2] ~= x.grad[2])
    local y = pt.tensor({-1, 0.5, 2}, {requires_grad = true})
    y:clamp(0, 1):backward(pt.tensor({0 / 0, 0 / 0, 1 / 0}))
    assert.are.equal(0, y.grad[1])
    assert.is_true(y.grad[2] ~= y.grad[2])
    assert.are.equal(0, y.grad[3])
    local z = pt.tensor({-1, 2}, {requires_grad = true, dtype = "float64"})
    z:clamp_min(0):backward(pt.tensor({1 / 0, 3}, {dtype = "float64"}))
    assert.are.same({0, 3}, z.grad:tolist())
  end)
end)
