local pt = require "partrain"
local support = require "spec.support"
local errmsg, assert_error = support.errmsg, support.assert_error
local gradcheck = require "spec.gradcheck"

local function f64(...) return pt.randn({...}, {dtype = "float64"}) end
local function near(a, b, tol)
  tol = tol or 1e-6
  if type(a) == "table" then
    assert.are.equal(#b, #a)
    for i = 1, #a do near(a[i], b[i], tol) end
    return
  end
  assert(math.abs(a - b) <= tol * math.max(1, math.abs(b)), string.format("%.9g ~= %.9g", a, b))
end

describe("binary arithmetic", function()
  local a = pt.tensor({{1, 2, 3}, {4, 5, 6}})
  local b = pt.tensor({{6, 5, 4}, {3, 2, 1}})

  it("computes values as metamethods, methods and functions", function()
    assert.are.same({{7, 7, 7}, {7, 7, 7}}, (a + b):tolist())
    assert.are.same({{-5, -3, -1}, {1, 3, 5}}, (a - b):tolist())
    assert.are.same({{6, 10, 12}, {12, 10, 6}}, (a * b):tolist())
    near((a / b):tolist()[1], {1 / 6, 2 / 5, 3 / 4})
    assert.are.same({{1, 32, 81}, {64, 25, 6}}, (a ^ b):tolist())
    assert.are.same({{-1, -2, -3}, {-4, -5, -6}}, (-a):tolist())
    assert.are.same((a + b):tolist(), a:add(b):tolist())
    assert.are.same((a - b):tolist(), pt.sub(a, b):tolist())
    assert.are.same((a * b):tolist(), a:mul(b):tolist())
    assert.are.same((a / b):tolist(), pt.div(a, b):tolist())
    assert.are.same((a ^ b):tolist(), a:pow(b):tolist())
    assert.are.same({{6, 5, 4}, {4, 5, 6}}, pt.maximum(a, b):tolist())
    assert.are.same({{1, 2, 3}, {3, 2, 1}}, a:minimum(b):tolist())
  end)

  it("takes numbers on either side", function()
    assert.are.same({{2, 4, 6}, {8, 10, 12}}, (2 * a):tolist())
    assert.are.same({{0, 1, 2}, {3, 4, 5}}, (a - 1):tolist())
    assert.are.same({{9, 8, 7}, {6, 5, 4}}, (10 - a):tolist())
    assert.are.same({{2, 1}}, (2 / pt.tensor({{1, 2}})):tolist())
    assert.are.same({{2, 4, 8}}, (2 ^ pt.tensor({{1, 2, 3}})):tolist())
    assert.are.same({1, 4, 9}, (pt.tensor({1, 2, 3}) ^ 2):tolist())
    assert.are.same({3, 4}, pt.add(1, pt.tensor({2, 3})):tolist())
  end)

  it("supports alpha for add and sub", function()
    local x, y = pt.tensor({1, 2}), pt.tensor({10, 20})
    assert.are.same({21, 42}, x:add(y, {alpha = 2}):tolist())
    assert.are.same({-9, -18}, pt.sub(x, y, {alpha = 1}):tolist())
    assert.are.same({-29, -58}, x:sub(y, {alpha = 3}):tolist())
    assert.are.same({11, 12}, x:add(5, {alpha = 2}):tolist())
  end)

  it("propagates NaN through maximum and minimum", function()
    local n = pt.tensor({0 / 0, 1})
    local m = pt.maximum(n, pt.tensor({2, 0 / 0})):tolist()
    assert.is_true(m[1] ~= m[1] and m[2] ~= m[2])
    assert.is_true(pt.minimum(pt.tensor({1}), pt.tensor({0 / 0})):item() ~= pt.minimum(pt.tensor({1}), pt.tensor({0 / 0})):item())
  end)

  it("integer arithmetic wraps, int pow stays integer", function()
    local i = pt.tensor({2, 3, -4}, {dtype = "int64"})
    assert.are.same({4, 9, 16}, (i ^ 2):tolist())
    assert.are.equal("int64", (i ^ 2):dtype())
    assert.are.same({8, 27, -64}, (i ^ pt.tensor({3, 3, 3}, {dtype = "int64"})):tolist())
    assert.are.same({1, 2, 3}, (pt.tensor({255, 2, 3}, {dtype = "uint8"}) + pt.tensor({2, 0, 0}, {dtype = "uint8"})):tolist())
  end)

  it("bool + bool is logical or, bool * bool is logical and", function()
    local t, f = pt.tensor({true, true, false}), pt.tensor({true, false, false})
    assert.are.same({true, true, false}, (t + f):tolist())
    assert.are.same({true, false, false}, (t * f):tolist())
    assert.are.equal("bool", (t + f):dtype())
  end)
end)

describe("broadcasting", function()
  it("{3,1} + {4} -> {3,4}", function()
    local c = pt.tensor({{1}, {2}, {3}}) + pt.tensor({10, 20, 30, 40})
    assert.are.same({3, 4}, c:size())
    assert.are.same({{11, 21, 31, 41}, {12, 22, 32, 42}, {13, 23, 33, 43}}, c:tolist())
  end)

  it("broadcasts leading and inner size-1 dims", function()
    local a = pt.arange(6, {dtype = "float32"}):view(2, 1, 3)
    local b = pt.arange(4, {dtype = "float32"}):view(4, 1)
    local c = a * b
    assert.are.same({2, 4, 3}, c:size())
    assert.are.same({0, 3, 6}, c:tolist()[1][4])
    assert.are.same({9, 12, 15}, c:tolist()[2][4])
  end)

  it("works on non-contiguous views", function()
    local a = pt.tensor({{1, 2, 3}, {4, 5, 6}})
    local t = a:t()
    assert.are.same({{2, 8}, {4, 10}, {6, 12}}, (t + t):tolist())
    assert.are.same({{11, 14}, {22, 25}, {33, 36}}, (t + pt.tensor({{10}, {20}, {30}})):tolist())
  end)

  it("0-d tensors broadcast with anything", function()
    local s = pt.tensor(2)
    assert.are.same({}, s:size())
    assert.are.same({}, (s + s):size())
    assert.are.equal(4, (s * s):item())
    assert.are.same({{2, 4}}, (s * pt.tensor({{1, 2}})):tolist())
    assert.are.same({{0, 1}}, (pt.tensor({{2, 3}}) - s):tolist())
  end)

  it("empty tensors give empty results", function()
    local e = pt.zeros(0, 3)
    assert.are.same({0, 3}, (e + pt.ones(3)):size())
    assert.are.same({0, 3}, (e * 2):size())
  end)

  it("fails with the shapes in the message", function()
    assert_error("add: shapes {3,4} and {5} cannot be broadcast", function() return pt.ones(3, 4) + pt.ones(5) end)
    assert_error("mul: shapes {2,3} and {3,2} cannot be broadcast", function() return pt.ones(2, 3) * pt.ones(3, 2) end)
    assert_error("sub: shapes {2} and {3} cannot be broadcast", function() return pt.ones(2):sub(pt.ones(3)) end)
    assert_error("eq: shapes {2} and {3} cannot be broadcast", function() return pt.ones(2):eq(pt.ones(3)) end)
    assert_error("maximum: shapes {4} and {2} cannot be broadcast", function() return pt.maximum(pt.ones(4), pt.ones(2)) end)
  end)
end)

describe("type promotion", function()
  local f32 = pt.ones(2)
  local f64t = pt.ones(2, {dtype = "float64"})
  local i64 = pt.ones(2, {dtype = "int64"})
  local i32 = pt.ones(2, {dtype = "int32"})
  local u8 = pt.ones(2, {dtype = "uint8"})
  local b = pt.ones(2, {dtype = "bool"})

  it("follows PyTorch between tensors", function()
    assert.are.equal("float64", (f32 + f64t):dtype())
    assert.are.equal("float32", (f32 + i64):dtype())
    assert.are.equal("int64", (i32 + i64):dtype())
    assert.are.equal("int32", (u8 + i32):dtype())
    assert.are.equal("uint8", (b + u8):dtype())
    assert.are.equal("float64", (b * f64t):dtype())
  end)

  it("numbers only raise the category", function()
    assert.are.equal("float32", (f32 * 2.5):dtype())
    assert.are.equal("float64", (2.5 * f64t):dtype())
    assert.are.equal("float32", (i64 + 0.5):dtype())
    assert.are.equal("int64", (i64 + 1):dtype())
    assert.are.equal("int32", (i32 * 3):dtype())
    assert.are.equal("uint8", (u8 + 1):dtype())
    assert.are.equal("int64", (b + 1):dtype())
    assert.are.equal("float32", (b + 1.5):dtype())
  end)

  it("0-d tensors only raise the category", function()
    assert.are.equal("float32", (f32 + pt.tensor(1, {dtype = "float64"})):dtype())
    assert.are.equal("float64", (i32 + pt.tensor(1, {dtype = "float64"})):dtype())
    assert.are.equal("uint8", (u8 + pt.tensor(1, {dtype = "int64"})):dtype())
    assert.are.equal("float64", (pt.tensor(1) + pt.tensor(1, {dtype = "float64"})):dtype())
  end)

  it("int / int is true division into float32", function()
    local q = pt.tensor({1, 2, 3}, {dtype = "int64"}) / pt.tensor({2, 2, 2}, {dtype = "int64"})
    assert.are.equal("float32", q:dtype())
    assert.are.same({0.5, 1, 1.5}, q:tolist())
    assert.are.equal("float32", (i64 / 2):dtype())
    assert.are.equal("float64", (f64t / 2):dtype())
  end)

  it("unary float functions turn integers into float32", function()
    assert.are.equal("float32", i64:exp():dtype())
    assert.are.equal("float32", pt.sqrt(u8):dtype())
    assert.are.equal("int64", i64:abs():dtype())
    assert.are.equal("int64", (-i64):dtype())
  end)

  it("rejects what PyTorch rejects", function()
    assert_error("sub: subtraction with bool tensors is not supported (use logical_xor or logical_not)",
      function() return b - b end)
    assert_error("neg: negation, the `-` operator, on a bool tensor is not supported (use logical_not)",
      function() return -b end)
    assert_error("pow: integers to negative integer powers are not allowed", function() return i64 ^ -1 end)
    -- a tensor of negative exponents is computed, as torch's (see "integer powers with negative exponents")
    assert_error("pow: not supported for bool tensors", function() return b ^ b end)
    assert.are.equal("float32", b:exp():dtype()) -- as PyTorch
  end)
end)

describe("out=", function()
  it("writes binary and unary results into the given tensor and returns it (PyTorch's out=)", function()
    local a, b = pt.tensor({{1, 2}, {3, 4}}), pt.tensor({10, 20})
    local o = pt.empty(2, 2)
    local r = pt.add(a, b, {out = o, alpha = 2})
    assert.is_true(rawequal(r, o))
    assert.are.same({{21, 42}, {23, 44}}, o:tolist())
    assert.are.same({{4, 3}, {2, 1}}, pt.sub(5, a, {out = o}):tolist())
    assert.are.same({{3, 6}, {9, 12}}, pt.mul(a, 3, {out = o}):tolist())
    assert.are.same({{false, false}, {true, true}}, pt.gt(a, 2, {out = pt.empty(2, 2, {dtype = "bool"})}):tolist())
    -- the result is cast to out's dtype when in-place rules allow it (bool -> float, int -> float)
    assert.are.same({{0, 0}, {1, 1}}, pt.gt(a, 2, {out = pt.empty(2, 2)}):tolist())
    local ai = pt.tensor({{1, 2}, {3, 4}}, {dtype = "int64"})
    local of = pt.empty(2, 2, {dtype = "float64"})
    assert.are.same({{2, 4}, {6, 8}}, pt.add(ai, ai, {out = of}):tolist())
    assert.are.equal("float64", of:dtype())
    -- an operand that is out itself, or a view of it in another layout (through a copy)
    local s = pt.tensor({{1, 2}, {3, 4}})
    assert.are.same({{2, 5}, {5, 8}}, pt.add(s, s:t(), {out = s}):tolist())
    local e = pt.tensor({0, 1})
    local y = pt.empty(2)
    assert.is_true(rawequal(pt.exp(e, {out = y}), y))
    assert.is_true(math.abs(y[2] - math.exp(1)) < 1e-6)
    assert.is_true(rawequal(e:sqrt({out = y}), y))
    pt.relu(pt.tensor({-1, 2}), {out = y})
    assert.are.same({0, 2}, y:tolist())
    -- into a strided view: the other elements stay
    local big = pt.zeros(2, 3)
    pt.add(pt.ones(2), 1, {out = big:select(2, 2)})
    assert.are.same({{0, 2, 0}, {0, 2, 0}}, big:tolist())
    -- under no_grad, inputs that require grad are fine
    local w = pt.ones(2, {requires_grad = true})
    pt.no_grad(function() pt.mul(w, 3, {out = y}) end)
    assert.are.same({3, 3}, y:tolist())
  end)

  it("refuses what PyTorch refuses, with messages", function()
    local a, b = pt.tensor({{1, 2}, {3, 4}}), pt.tensor({10, 20})
    assert.are.equal("add: out has shape {3}, but the result has shape {2,2}",
      errmsg(function() return pt.add(a, b, {out = pt.empty(3)}) end):gsub("^.-:%d+: ", ""))
    assert.are.equal("add: result type float32 can't be cast to the desired output type int64",
      errmsg(function() return pt.add(a, b, {out = pt.empty(2, 2, {dtype = "int64"})}) end):gsub("^.-:%d+: ", ""))
    assert.are.equal("sqrt: result type float32 can't be cast to the desired output type int64",
      errmsg(function() return pt.sqrt(a, {out = pt.empty(2, 2, {dtype = "int64"})}) end):gsub("^.-:%d+: ", ""))
    assert.are.equal("exp: out has shape {2}, but the result has shape {2,2}",
      errmsg(function() return pt.exp(a, {out = pt.empty(2)}) end):gsub("^.-:%d+: ", ""))
    local w = pt.ones(2, 2, {requires_grad = true})
    assert.are.equal("mul: out= does not support autograd, but an argument requires grad (leave out out=, or compute under pt.no_grad)",
      errmsg(function() return pt.mul(w, 2, {out = pt.empty(2, 2)}) end):gsub("^.-:%d+: ", ""))
    assert.are.equal("exp: out= does not support autograd, but an argument requires grad (leave out out=, or compute under pt.no_grad)",
      errmsg(function() return pt.exp(a, {out = w}) end):gsub("^.-:%d+: ", ""))
    assert.are.equal("add: out must be a Tensor, got number",
      errmsg(function() return pt.add(a, b, {out = 3}) end):gsub("^.-:%d+: ", ""))
    assert.are.equal("exp: unknown option 'outt' (options: out)",
      errmsg(function() return pt.exp(a, {outt = a}) end):gsub("^.-:%d+: ", ""))
    -- out may not overlap itself (an expanded tensor)
    assert.matches("add: ", errmsg(function() return pt.add(b, 1, {out = pt.zeros(1):expand(2)}) end))
  end)
end)

describe("argument errors", function()
  it("names the bad operand", function()
    local err = errmsg(function() return pt.ones(2) + {} end)
    assert.matches("Tensor or number expected, got table", err, 1, true)
    err = errmsg(function() return pt.add("x", pt.ones(2)) end)
    assert.matches("bad argument #1 to 'add' (Tensor or number expected, got string)", err, 1, true)
    err = errmsg(function() return pt.mul(2, 3) end)
    assert.matches("bad argument #1 to 'mul' (Tensor expected, got number)", err, 1, true)
    err = errmsg(function() return pt.add(pt.ones(2), 1, 5) end)
    assert.matches("add: unexpected argument #3 (number)", err, 1, true)
    err = errmsg(function() return pt.add(pt.ones(2), 1, {alpha = "x"}) end)
    assert.matches("bad argument #3 to 'add' (alpha must be a number)", err, 1, true)
  end)

  it("rejects a closed tensor", function()
    local t = pt.ones(2)
    do local c <close> = t end
    local err = errmsg(function() return pt.ones(2) + t end)
    assert.matches("tensor was closed", err, 1, true)
  end)
end)

describe("unary ops", function()
  local x = pt.tensor({-2, -0.5, 0, 0.5, 2}, {dtype = "float64"})
  local xs = {-2, -0.5, 0, 0.5, 2}
  local function map(f) local r = {} for i, v in ipairs(xs) do r[i] = f(v) end return r end
  local function erf(v) -- Abramowitz-Stegun is not exact enough; use the series
    local s, term, n = 0, v, 0
    repeat
      s = s + term / (2 * n + 1)
      n = n + 1
      term = -term * v * v / n
    until math.abs(term) < 1e-17
    return 2 / math.sqrt(math.pi) * s
  end

  it("computes values", function()
    near(x:neg():tolist(), map(function(v) return -v end))
    near(x:abs():tolist(), map(math.abs))
    near(x:exp():tolist(), map(math.exp))
    near(pt.log(x:abs() + 1):tolist(), map(function(v) return math.log(math.abs(v) + 1) end))
    near(pt.sqrt(x:abs()):tolist(), map(function(v) return math.sqrt(math.abs(v)) end))
    near(x:tanh():tolist(), map(function(v) return (math.exp(2 * v) - 1) / (math.exp(2 * v) + 1) end))
    near(x:sigmoid():tolist(), map(function(v) return 1 / (1 + math.exp(-v)) end))
    near(x:relu():tolist(), map(function(v) return math.max(v, 0) end))
    near(x:gelu():tolist(), map(function(v) return 0.5 * v * (1 + erf(v / math.sqrt(2))) end), 1e-12)
    near(x:sin():tolist(), map(math.sin))
    near(x:cos():tolist(), map(math.cos))
    assert.are.same({-1, -1, 0, 1, 1}, x:sign():tolist())
    assert.are.same({-2, -1, 0, 0, 2}, x:floor():tolist())
    assert.are.same({-2, -0, 0, 1, 2}, x:ceil():tolist())
  end)

  it("rounds half to even like PyTorch", function()
    assert.are.same({0, 2, 2, -0, -2, 3}, pt.tensor({0.5, 1.5, 2.5, -0.5, -1.5, 2.6}):round():tolist())
  end)

  it("gelu matches PyTorch's exact form", function()
    -- torch.nn.functional.gelu(torch.tensor([1.0, -1.0], dtype=torch.float64))
    near(pt.tensor({1, -1}, {dtype = "float64"}):gelu():tolist(), {0.8413447460685429, -0.15865525393145707}, 1e-14)
  end)

  it("relu keeps NaN", function()
    local r = pt.tensor({0 / 0}):relu():item()
    assert.is_true(r ~= r)
  end)

  it("exists as pt.* functions", function()
    for _, name in ipairs({"neg", "abs", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "gelu",
                           "sin", "cos", "sign", "floor", "ceil", "round"}) do
      local p = x:abs() + 0.5
      assert.are.same(p[name](p):tolist(), pt[name](p):tolist())
    end
  end)

  it("works on strided views", function()
    local m = pt.tensor({{1, -2}, {-3, 4}}):t()
    assert.are.same({{1, 3}, {2, 4}}, m:abs():tolist())
  end)
end)

describe("comparisons and logical ops", function()
  local a = pt.tensor({1, 2, 3})
  local b = pt.tensor({3, 2, 1})

  it("give bool tensors", function()
    assert.are.same({false, true, false}, a:eq(b):tolist())
    assert.are.same({true, false, true}, a:ne(b):tolist())
    assert.are.same({true, false, false}, a:lt(b):tolist())
    assert.are.same({true, true, false}, a:le(b):tolist())
    assert.are.same({false, false, true}, a:gt(b):tolist())
    assert.are.same({false, true, true}, pt.ge(a, b):tolist())
    assert.are.equal("bool", a:lt(b):dtype())
  end)

  it("compare with numbers on either side and across dtypes", function()
    assert.are.same({false, true, true}, a:gt(1):tolist())
    assert.are.same({true, false, false}, pt.gt(2, a):tolist())
    assert.are.same({false, true, false}, a:eq(pt.tensor({0, 2, 0}, {dtype = "int64"})):tolist())
    assert.are.same({true, true, false}, pt.tensor({1, 2, 3}, {dtype = "int64"}):lt(2.5):tolist())
  end)

  it("== stays identity", function()
    local c = a
    assert.is_true(a == c)
    assert.is_false(a == pt.tensor({1, 2, 3}))
  end)

  it("logical_and/or/not", function()
    local t, f = pt.tensor({true, true, false, false}), pt.tensor({true, false, true, false})
    assert.are.same({true, false, false, false}, t:logical_and(f):tolist())
    assert.are.same({true, true, true, false}, pt.logical_or(t, f):tolist())
    assert.are.same({false, false, true, true}, t:logical_not():tolist())
    assert.are.same({false, true, false}, pt.tensor({0, 2, 0}):logical_and(pt.tensor({1, 1, 0})):tolist())
    assert.are.same({true, false}, pt.tensor({0, 3}):logical_not():tolist())
    assert.are.same({true, false}, pt.tensor({true, false}):logical_and(true):tolist())
  end)
end)

describe("where, masked_fill, clamp", function()
  it("where selects with broadcasting and numbers", function()
    local c = pt.tensor({{true}, {false}})
    local r = pt.where(c, pt.tensor({1, 2, 3}), pt.tensor({{10, 20, 30}, {40, 50, 60}}))
    assert.are.same({{1, 2, 3}, {40, 50, 60}}, r:tolist())
    local x = pt.tensor({-1, 2, -3})
    assert.are.same({0, 2, 0}, pt.where(x:gt(0), x, 0):tolist())
    assert.are.same({-1, 7, -3}, x:where(x:lt(0), 7):tolist())
    -- two numbers: int64 when both are integers, float32 with a float (torch.where(c, 1, 0) is int64)
    assert.are.equal("int64", pt.where(x:gt(0), 1, 0):dtype())
    assert.are.same({0, 1, 0}, pt.where(x:gt(0), 1, 0):tolist())
    assert.are.equal("int64", pt.where(x:gt(0), true, 3):dtype())
    assert.are.equal("bool", pt.where(x:gt(0), true, false):dtype())
    assert.are.equal("float32", pt.where(x:gt(0), 1, 0.5):dtype())
    assert.are.equal("float64", pt.where(x:gt(0), pt.zeros(3, {dtype = "float64"}), x):dtype())
  end)

  it("where checks its arguments", function()
    assert_error("where: condition must be a bool tensor, got float32",
      function() return pt.where(pt.ones(2), pt.ones(2), pt.ones(2)) end)
    assert_error("where: shapes {2} and {3} cannot be broadcast",
      function() return pt.where(pt.ones(2):gt(0), pt.ones(2), pt.ones(3)) end)
    assert_error("where: shapes {4}, {2} and {2} cannot be broadcast",
      function() return pt.where(pt.ones(4):gt(0), pt.ones(2), pt.ones(2)) end)
    local err = errmsg(function() return pt.where(pt.ones(2):gt(0), {}, 1) end)
    assert.matches("Tensor or number expected, got table", err, 1, true)
  end)

  it("masked_fill fills where the mask is true", function()
    local t = pt.tensor({{1, 2, 3}, {4, 5, 6}})
    assert.are.same({{1, -1, 3}, {4, -1, 6}}, t:masked_fill(pt.tensor({false, true, false}), -1):tolist())
    assert.are.same({{1, 2, 3}, {4, 5, 6}}, t:tolist()) -- not in place
    local i = pt.tensor({1, 2}, {dtype = "int64"})
    assert.are.same({1, 9}, pt.masked_fill(i, pt.tensor({false, true}), 9):tolist())
    assert.are.equal("int64", pt.masked_fill(i, pt.tensor({false, true}), 9):dtype())
  end)

  it("masked_fill checks mask dtype and shape", function()
    local t = pt.ones(2, 3)
    assert_error("masked_fill: mask must be a bool tensor, got float32", function() return t:masked_fill(pt.ones(3), 0) end)
    assert_error("masked_fill: shapes {2,3} and {2} cannot be broadcast",
      function() return t:masked_fill(pt.tensor({true, false}), 0) end)
    -- a larger mask broadcasts t (torch's masked_fill); in place it cannot
    assert.are.same({4, 2, 3}, t:masked_fill(pt.ones(4, 2, 3):gt(0), 0):size())
    assert_error("masked_fill_: mask of shape {4,2,3} cannot be broadcast to shape {2,3}",
      function() return t:clone():masked_fill_(pt.ones(4, 2, 3):gt(0), 0) end)
    local err = errmsg(function() return t:masked_fill(pt.ones(2, 3):gt(0), "x") end)
    assert.matches("number or boolean expected, got string", err, 1, true)
  end)

  it("clamp limits either or both sides", function()
    local t = pt.tensor({-2, -1, 0, 1, 2})
    assert.are.same({-1, -1, 0, 1, 1}, t:clamp(-1, 1):tolist())
    assert.are.same({0, 0, 0, 1, 2}, t:clamp(0):tolist())
    assert.are.same({-2, -1, 0, 0, 0}, t:clamp(nil, 0):tolist())
    assert.are.same({-1, -1, 0, 1, 1}, pt.clamp(t, {min = -1, max = 1}):tolist())
    assert.are.same({5, 5, 5, 5, 5}, t:clamp(7, 5):tolist()) -- min > max gives max, as PyTorch
    local i = pt.tensor({-5, 0, 300}, {dtype = "int64"})
    assert.are.same({0, 0, 255}, i:clamp(0, 255):tolist())
    assert.are.equal("float32", i:clamp(0.5):dtype())
    local n = pt.tensor({0 / 0}):clamp(0, 1):item()
    assert.is_true(n ~= n)
  end)

  it("clamp needs a bound", function()
    assert_error("clamp: at least one of min and max must be given", function() return pt.ones(2):clamp() end)
    -- bool tensors promote with integer bounds to int64, as torch.clamp (spec/int_exact_spec.lua)
    assert.are.equal("int64", pt.ones(2):gt(0):clamp(0, 1):dtype())
  end)
end)

describe("in-place ops", function()
  it("refuse to write through an expanded view (one location, several elements), as PyTorch", function()
    local t = pt.zeros(1, 3)
    local e = t:expand(4, 3)
    local tail = ": more than one element of the written-to tensor refers to a single memory location (an expanded tensor): clone() it first"
    assert_error("add_" .. tail, function() e:add_(1) end)
    assert_error("copy_" .. tail, function() e:copy_(pt.ones(4, 3)) end)
    assert_error("fill_" .. tail, function() e:fill_(2) end)
    assert_error("scatter_" .. tail, function() e:scatter_(2, pt.ones(4, 1, {dtype = "int64"}), 2.0) end)
    assert_error("index_add_" .. tail, function() e:index_add_(1, pt.tensor({1}, {dtype = "int64"}), pt.ones(1, 3)) end)
    assert.are.same({{0, 0, 0}}, t:tolist())
    e[{2, 1}] = 5 -- one element: allowed, as PyTorch's setitem
    t:expand(1, 3):add_(1) -- size-1 dimensions may have any stride
    assert.are.same({{6, 1, 1}}, t:tolist())
  end)

  it("modify self, return self and bump the version", function()
    local t = pt.tensor({1, 2, 3})
    local v = t:view(3)
    assert.are.equal(t, t:add_(1))
    assert.are.same({2, 3, 4}, v:tolist())
    t:sub_(pt.tensor({1, 1, 1}))
    t:mul_(2)
    t:div_(pt.tensor({2, 4, 6}))
    assert.are.same({1, 1, 1}, t:tolist())
    t:add_(pt.tensor({1, 2, 3}), {alpha = 2})
    assert.are.same({3, 5, 7}, t:tolist())
    t:sub_(1, {alpha = 2})
    assert.are.same({1, 3, 5}, t:tolist())
    t:pow_(2)
    assert.are.same({1, 9, 25}, t:tolist())
    t:clamp_(2, 10)
    assert.are.same({2, 9, 10}, t:tolist())
    t:neg_():relu_()
    assert.are.same({0, 0, 0}, t:tolist())
  end)

  it("broadcast the other operand into self", function()
    local t = pt.zeros(2, 3)
    t:add_(pt.tensor({1, 2, 3}))
    assert.are.same({{1, 2, 3}, {1, 2, 3}}, t:tolist())
    t:mul_(pt.tensor({{2}, {3}}))
    assert.are.same({{2, 4, 6}, {3, 6, 9}}, t:tolist())
  end)

  it("work on non-contiguous views", function()
    local t = pt.tensor({{1, 2}, {3, 4}})
    t:t():add_(pt.tensor({10, 20}))
    assert.are.same({{11, 12}, {23, 24}}, t:tolist())
    t:t():exp_():log_()
    near(t:tolist()[2], {23, 24}, 1e-5)
  end)

  it("handle overlapping operands", function()
    local t = pt.tensor({{1, 2}, {3, 4}})
    t:add_(t)
    assert.are.same({{2, 4}, {6, 8}}, t:tolist())
    t:add_(t:t())
    assert.are.same({{4, 10}, {10, 16}}, t:tolist())
  end)

  it("copy_ broadcasts and converts dtype", function()
    local t = pt.zeros(2, 2, {dtype = "int64"})
    t:copy_(pt.tensor({1.7, -2.2}))
    assert.are.same({{1, -2}, {1, -2}}, t:tolist())
    local f = pt.zeros(3)
    assert.are.equal(f, f:copy_(pt.arange(3)))
    assert.are.same({0, 1, 2}, f:tolist())
    assert_error("copy_: shapes {3} and {2} cannot be broadcast", function() return f:copy_(pt.ones(2)) end)
    assert_error("copy_: source shape {2,3} cannot be broadcast to {3}", function() return f:copy_(pt.ones(2, 3)) end)
  end)

  it("masked_fill_ writes in place", function()
    local t = pt.ones(2, 2)
    t:masked_fill_(pt.tensor({{true, false}, {false, true}}), 0)
    assert.are.same({{0, 1}, {1, 0}}, t:tolist())
  end)

  it("refuse results that do not fit self", function()
    local i = pt.tensor({1, 2}, {dtype = "int64"})
    assert_error("div_: result type float32 can't be cast to the desired output type int64", function() i:div_(2) end)
    assert_error("add_: result type float32 can't be cast to the desired output type int64",
      function() i:add_(pt.ones(2)) end)
    assert_error("exp_: result type float32 can't be cast to the desired output type int64", function() i:exp_() end)
    assert_error("add_: output with shape {3} doesn't match the broadcast shape {2,3}",
      function() pt.ones(3):add_(pt.ones(2, 3)) end)
    assert_error("mul_: shapes {3} and {2} cannot be broadcast", function() pt.ones(3):mul_(pt.ones(2)) end)
    -- float into int self via a wider float is fine the other way round
    local f = pt.ones(2)
    f:add_(pt.ones(2, {dtype = "float64"}))
    assert.are.same({2, 2}, f:tolist())
    assert.are.equal("float32", f:dtype())
  end)

  it("refuse leaves that require grad while grad mode is on", function()
    local w = pt.ones(3, {requires_grad = true})
    assert_error("add_: a leaf tensor that requires grad is used in an in-place operation", function() w:add_(1) end)
    assert_error("mul_: a leaf tensor that requires grad is used in an in-place operation", function() w:mul_(w) end)
    assert_error("relu_: a leaf tensor that requires grad is used in an in-place operation", function() w:relu_() end)
    assert_error("copy_: a leaf tensor that requires grad is used in an in-place operation", function() w:copy_(pt.zeros(3)) end)
    assert_error("clamp_: a leaf tensor that requires grad is used in an in-place operation", function() w:clamp_(0, 1) end)
    assert_error("masked_fill_: a leaf tensor that requires grad is used in an in-place operation",
      function() w:masked_fill_(pt.ones(3):gt(0), 1) end)
    -- allowed under no_grad (an optimizer step)
    pt.no_grad(function() w:sub_(pt.ones(3), {alpha = 0.5}) end)
    assert.are.same({0.5, 0.5, 0.5}, w:tolist())
    assert.is_true(w.is_leaf)
  end)

  it("rebase the graph of a non-leaf", function()
    local x = pt.tensor({1, 2, 3}, {dtype = "float64", requires_grad = true})
    local y = x * 2
    y:mul_(y) -- y = (2x)^2, dy/dx = 8x
    assert.are.equal("MulBackward", y.grad_fn)
    y:add_(x) -- + x
    y:relu_()
    y:backward(pt.ones(3, {dtype = "float64"}))
    assert.are.same({9, 17, 25}, x.grad:tolist())
  end)

  it("a leaf without grad takes a graph from its operand", function()
    local x = pt.tensor({1, 2}, {dtype = "float64", requires_grad = true})
    local acc = pt.zeros(2, {dtype = "float64"})
    acc:add_(x, {alpha = 3})
    assert.is_true(acc.requires_grad)
    acc:backward(pt.ones(2, {dtype = "float64"}))
    assert.are.same({3, 3}, x.grad:tolist())
  end)

  it("copy_ sends gradients to the source", function()
    local x = pt.tensor({1, 2}, {requires_grad = true, dtype = "float64"})
    local t = pt.zeros(3, 2)
    t:copy_(x * 2)
    assert.are.equal("CopyBackwards", t.grad_fn)
    t:backward(pt.ones(3, 2))
    assert.are.same({6, 6}, x.grad:tolist())
  end)

  it("the backward sees modified inputs as an error", function()
    local x = pt.tensor({1, 2}, {requires_grad = true})
    local h = x * 1
    local y = h * h
    h:add_(1)
    local err = errmsg(function() y:sum():backward() end)
    assert.matches("modified by an inplace operation", err, 1, true)
    -- an in-place op that writes through a copy (an operand overlapping in another layout)
    local h2 = pt.tensor({{1, 2}, {3, 4}}, {requires_grad = true}) * 1
    local y2 = h2 * h2
    pt.no_grad(function() h2:add_(h2:t()) end)
    assert.matches("modified by an inplace operation", errmsg(function() y2:sum():backward() end), 1, true)
  end)
end)

describe("conversions", function()
  it("_to_dtype keeps gradients between float dtypes", function()
    local x = pt.tensor({1, 2}, {requires_grad = true})
    local d = x:double()
    assert.are.equal("float64", d:dtype())
    assert.are.equal("ToCopyBackward", d.grad_fn)
    local y = d * d
    y:backward(pt.ones(2, {dtype = "float64"}))
    assert.are.same({2, 4}, x.grad:tolist())
    assert.are.equal("float32", x.grad:dtype())
  end)

  it("_to_dtype to an integer dtype has no gradient", function()
    local x = pt.tensor({1.7, -2.5}, {requires_grad = true})
    local l = x:long()
    assert.are.same({1, -2}, l:tolist())
    assert.is_false(l.requires_grad)
    assert.are.equal(x, x:float())
    assert.are.equal("bool", x:bool():dtype())
    assert.are.same({true, true}, x:bool():tolist())
  end)
end)

describe("gradients (finite differences, float64)", function()
  it("binary ops, same shape", function()
    local a, b = f64(3, 4), f64(3, 4)
    local bp = b:abs() + 0.5
    gradcheck(function(x, y) return x + y end, {a, b})
    gradcheck(function(x, y) return x - y end, {a, b})
    gradcheck(function(x, y) return x * y end, {a, b})
    gradcheck(function(x, y) return x / y end, {a, bp})
    gradcheck(function(x, y) return x ^ y end, {bp, a})
    gradcheck(function(x, y) return pt.maximum(x, y) end, {a, b})
    gradcheck(function(x, y) return pt.minimum(x, y) end, {a, b})
    gradcheck(function(x, y) return x:add(y, {alpha = 2.5}) end, {a, b})
    gradcheck(function(x, y) return pt.sub(x, y, {alpha = -3}) end, {a, b})
  end)

  it("binary ops with broadcasting", function()
    local a, b = f64(3, 1), f64(4)
    local c = f64(2, 1, 4)
    gradcheck(function(x, y) return x + y end, {a, b})
    gradcheck(function(x, y) return x - y end, {a, c})
    gradcheck(function(x, y) return x * y end, {c, a})
    gradcheck(function(x, y) return x / y end, {a, b:abs() + 0.5})
    gradcheck(function(x, y) return x ^ y end, {a:abs() + 0.5, b})
    gradcheck(function(x, y) return pt.maximum(x, y) end, {a, c})
    gradcheck(function(x, y) return pt.minimum(x, y) end, {c, b})
    gradcheck(function(x, y) return x * y end, {f64(3), pt.tensor(1.5, {dtype = "float64"})})
  end)

  it("ops with numbers on either side", function()
    local a = f64(2, 3)
    local p = a:abs() + 0.5
    gradcheck(function(x) return x + 2 end, {a})
    gradcheck(function(x) return 2 - x end, {a})
    gradcheck(function(x) return x * 3 end, {a})
    gradcheck(function(x) return 3 / x end, {p})
    gradcheck(function(x) return x / 3 end, {a})
    gradcheck(function(x) return x ^ 3 end, {a})
    gradcheck(function(x) return x ^ 0.5 end, {p})
    gradcheck(function(x) return 2 ^ x end, {a})
    gradcheck(function(x) return -x end, {a})
  end)

  it("maximum/minimum split ties evenly and pow at 0 is finite", function()
    local x = pt.tensor({1, 2}, {dtype = "float64", requires_grad = true})
    local y = pt.tensor({1, 3}, {dtype = "float64", requires_grad = true})
    pt.maximum(x, y):backward(pt.ones(2, {dtype = "float64"}))
    assert.are.same({0.5, 0}, x.grad:tolist())
    assert.are.same({0.5, 1}, y.grad:tolist())
    local z = pt.tensor({0, 2}, {dtype = "float64", requires_grad = true})
    local e = pt.tensor({2, 0}, {dtype = "float64", requires_grad = true})
    local p = z ^ e
    p:backward(pt.ones(2, {dtype = "float64"}))
    assert.are.same({0, 0}, z.grad:tolist())
    near(e.grad:tolist(), {0, math.log(2)})
  end)

  it("unary ops", function()
    local a = f64(2, 3)
    local p = a:abs() + 0.2
    -- keep away from the kinks of abs and relu
    local k = pt.tensor({-1.5, -0.3, 0.4, 2}, {dtype = "float64"})
    gradcheck(function(x) return x:neg() end, {a})
    gradcheck(function(x) return x:abs() end, {k})
    gradcheck(function(x) return x:exp() end, {a})
    gradcheck(function(x) return x:log() end, {p})
    gradcheck(function(x) return x:sqrt() end, {p})
    gradcheck(function(x) return x:tanh() end, {a})
    gradcheck(function(x) return x:sigmoid() end, {a})
    gradcheck(function(x) return x:relu() end, {k})
    gradcheck(function(x) return x:gelu() end, {a})
    gradcheck(function(x) return x:sin() end, {a})
    gradcheck(function(x) return x:cos() end, {a})
    gradcheck(function(x) return pt.exp(x:t()) end, {a})
  end)

  it("where, masked_fill and clamp", function()
    local a, b = f64(3, 4), f64(4)
    local cond = f64(3, 4):gt(0)
    gradcheck(function(x, y) return pt.where(cond, x, y) end, {a, b})
    gradcheck(function(x) return pt.where(cond, x, 0) end, {a})
    gradcheck(function(x, y) return pt.where(pt.tensor({true, false, true, false}), x, y) end, {a, b})
    gradcheck(function(x) return x:masked_fill(cond, 2) end, {a})
    gradcheck(function(x) return x:masked_fill(pt.tensor({true, false, false, true}), -1) end, {a})
    local k = pt.tensor({-1.5, -0.3, 0.4, 2}, {dtype = "float64"})
    gradcheck(function(x) return x:clamp(-1, 1) end, {k})
    gradcheck(function(x) return x:clamp(0) end, {k})
    gradcheck(function(x) return x:clamp(nil, 0.5) end, {k})
  end)

  it("in-place ops on non-leaves", function()
    local a, b = f64(3, 4), f64(4)
    local p = a:abs() + 0.5
    gradcheck(function(x, y) local t = x * 1; t:add_(y, {alpha = 2}); return t end, {a, b})
    gradcheck(function(x, y) local t = x * 1; t:mul_(y); return t end, {a, b})
    gradcheck(function(x, y) local t = x * 1; t:div_(y:abs() + 1); return t end, {a, b})
    gradcheck(function(x) local t = x * 1; t:mul_(t); return t end, {a})
    gradcheck(function(x) local t = x + 0; t:pow_(3); return t end, {a})
    gradcheck(function(x) local t = x * 1; t:exp_(); t:sigmoid_(); return t end, {a})
    gradcheck(function(x) local t = x * 1; t:sqrt_(); return t end, {p})
    gradcheck(function(x) local t = x * 1; t:clamp_(-0.5, 0.5); return t end, {pt.tensor({-1, -0.2, 0.3, 0.9}, {dtype = "float64"})})
    gradcheck(function(x) local t = x * 1; t:masked_fill_(x:gt(0), 0); return t end, {a})
    gradcheck(function(x, y) local t = pt.zeros(3, 4, {dtype = "float64"}); t:copy_(y); return t * x end, {a, b})
  end)

  it("conversions", function()
    -- through float32: a larger step so rounding stays small against it
    local opts = {eps = 1e-2, atol = 1e-4, rtol = 1e-4}
    gradcheck(function(x) return x:float():double() * 2 end, {f64(3)}, opts)
    gradcheck(function(x) return (x:float() * 3):double() end, {f64(2, 2)}, opts)
  end)

  it("mixed float32 / float64 operands give each input its own dtype", function()
    local x = pt.ones(2, {requires_grad = true})
    local y = pt.ones(2, {dtype = "float64", requires_grad = true})
    local z = x * y
    assert.are.equal("float64", z:dtype())
    z:backward(pt.ones(2, {dtype = "float64"}))
    assert.are.equal("float32", x.grad:dtype())
    assert.are.equal("float64", y.grad:dtype())
  end)

  it("comparisons and integer ops record nothing", function()
    local x = pt.ones(2, {requires_grad = true})
    assert.is_false(x:gt(0).requires_grad)
    assert.is_false(x:to("int64"):floor().requires_grad)
    assert.is_true((x * 2).requires_grad)
    assert.is_false(pt.no_grad(function() return x * 2 end).requires_grad)
  end)
end)

describe("masked_fill with a larger mask, integer powers with negative exponents (as torch 1.13)", function()
  it("masked_fill broadcasts t to the mask's shape and sums the gradient back; masked_fill_ cannot", function()
    local x = pt.tensor({1.0, 2, 3}, {requires_grad = true})
    local m = pt.tensor({{true, false, true}, {false, false, true}})
    local r = x:masked_fill(m, 0)
    assert.are.same({{0, 2, 0}, {1, 2, 0}}, r:tolist())
    ;(r * pt.tensor({{1.0, 2, 3}, {4, 5, 6}})):sum():backward()
    assert.are.same({4, 7, 0}, x.grad:tolist())
    assert.are.same({{9, 2, 9}, {1, 2, 9}}, x:detach():masked_fill(m, pt.tensor(9.0)):tolist())
    gradcheck(function(t) return t:masked_fill(m, -1) end, {pt.randn(3, {dtype = "float64"})})
    local y = x:detach():clone()
    local ok, err = pcall(y.masked_fill_, y, m, 0)
    assert.is_false(ok)
    assert.matches("masked_fill_: mask of shape {2,3} cannot be broadcast to shape {3}", err, 1, true)
    ok, err = pcall(y.masked_fill_, y, m, pt.tensor(1.0))
    assert.is_false(ok)
    assert.matches("masked_fill_: mask of shape {2,3} cannot be broadcast to shape {3}", err, 1, true)
  end)

  it("an integer tensor to a tensor of negative integer powers: 1, +-1 or 0; a negative number stays an error", function()
    local I = {dtype = "int64"}
    -- torch.pow(torch.tensor([1,-1,-1,2,-2,3,0]), torch.tensor([-1,-1,-2,-1,-2,-3,-1]))
    assert.are.same({1, -1, 1, 0, 0, 0, 0},
      pt.pow(pt.tensor({1, -1, -1, 2, -2, 3, 0}, I), pt.tensor({-1, -1, -2, -1, -2, -3, -1}, I)):tolist())
    assert.are.same({0, 4}, pt.pow(2, pt.tensor({-1, 2}, I)):tolist())
    assert.are.same({0}, pt.pow(pt.tensor({2}, {dtype = "int32"}), pt.tensor({-1}, {dtype = "int32"})):tolist())
    local t = pt.tensor({2, 1}, I)
    t:pow_(pt.tensor({-1, -5}, I))
    assert.are.same({0, 1}, t:tolist())
    local ok, err = pcall(function() return pt.tensor({2}, I) ^ -1 end)
    assert.is_false(ok)
    assert.matches("pow: integers to negative integer powers are not allowed", err, 1, true)
  end)
end)

describe("rounding and sign: a zero gradient, as PyTorch's", function()
  it("floor, ceil, round (also with decimals), trunc, sign, sgn and fix require grad and give zeros", function()
    for _, f in ipairs({"floor", "ceil", "round", "trunc", "sign", "sgn", "fix"}) do
      local x = pt.tensor({1.5, -2.5, 0.25}, {dtype = "float64", requires_grad = true})
      local y = x[f](x)
      assert.is_true(y.requires_grad, f)
      -- d(y * x)/dx = y + x * y' = y
      ;(y * x):sum():backward()
      assert.are.same(y:detach():tolist(), x.grad:tolist(), f)
      -- and to second order: the gradient of the gradient through y is zero, yet connected
      local x2 = pt.tensor({1.5, -2.5}, {dtype = "float64", requires_grad = true})
      local g = pt.autograd.grad((x2[f](x2) * x2 * x2):sum(), {x2}, {create_graph = true})[1]
      local gg = pt.autograd.grad(g:sum(), {x2})[1]
      assert.are.same((x2[f](x2) * 2):detach():tolist(), gg:tolist(), f)
    end
    -- finite differences away from the jumps agree (zero through the rounding)
    for _, f in ipairs({"floor", "ceil", "round", "trunc", "sign"}) do
      gradcheck(function(t) return t[f](t) * t end, {pt.tensor({1.3, -2.7, 0.4}, {dtype = "float64"})})
    end
    gradcheck(function(t) return t:round({decimals = 1}) * t end, {pt.tensor({1.33, -2.71}, {dtype = "float64"})})
    local x = pt.tensor({1.56, -2.5}, {requires_grad = true})
    local y = x:round({decimals = 1})
    assert.are.equal("RoundBackward", tostring(y.grad_fn))
    y:sum():backward()
    assert.are.same({0, 0}, x.grad:tolist())
  end)

  it("maximum and minimum give a NaN side the whole gradient, a tie half (torch 1.13's numbers)", function()
    -- torch: x.grad / y.grad of maximum(x, y).sum() and minimum(x, y).sum(), then against the number 2
    local want = {
      maximum = {{1, 1, 0.5, 1}, {1, 1, 0.5, 0}, {1, 0, 0.5, 1}},
      minimum = {{1, 1, 0.5, 0}, {1, 1, 0.5, 1}, {1, 1, 0.5, 0}},
    }
    for f, w in pairs(want) do
      local x = pt.tensor({0 / 0, 1, 2, 3}, {requires_grad = true})
      local y = pt.tensor({1, 0 / 0, 2, 1}, {requires_grad = true})
      pt[f](x, y):sum():backward()
      assert.are.same(w[1], x.grad:tolist(), f)
      assert.are.same(w[2], y.grad:tolist(), f)
      local x2 = pt.tensor({0 / 0, 1, 2, 3}, {dtype = "float64", requires_grad = true})
      pt[f](x2, 2):sum():backward()
      assert.are.same(w[3], x2.grad:tolist(), f)
      -- the same through create_graph's path
      local x3 = pt.tensor({0 / 0, 1, 2, 3}, {dtype = "float64", requires_grad = true})
      local y3 = pt.tensor({1, 0 / 0, 2, 1}, {dtype = "float64", requires_grad = true})
      local gx, gy = table.unpack(pt.autograd.grad(pt[f](x3, y3):sum(), {x3, y3}, {create_graph = true}))
      assert.are.same(w[1], gx:tolist(), f)
      assert.are.same(w[2], gy:tolist(), f)
    end
  end)
end)

describe("help", function()
  it("documents every function", function()
    for _, name in ipairs({"add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "where",
                           "masked_fill", "clamp", "gelu", "logical_not"}) do
      assert.is_string(pt._docs[pt[name]], name)
    end
    for _, name in ipairs({"add_", "copy_", "clamp_", "where", "relu_", "_to_dtype"}) do
      assert.is_string(pt._docs[pt.Tensor[name]], name)
    end
  end)
end)

describe("uint8 masks and conditions", function()
  -- torch 1.13 still takes uint8 (nonzero = true, deprecated) in masked_fill and where
  it("are read as nonzero, as torch's", function()
    local x = pt.arange(4.)
    local m = pt.tensor({1, 0, 7, 0}, {dtype = "uint8"})
    assert.are.same({-1, 1, -1, 3}, x:masked_fill(m, -1):tolist())
    assert.are.same({9, 1, 9, 3}, x:clone():masked_fill_(m, 9):tolist())
    assert.are.same({0, -1, 2, -3}, pt.where(m, x, -x):tolist())
    assert.are.same({2, 3, 2, 3}, pt.where(m, 2, 3):tolist())
    local y = pt.tensor({1, 2, 3, 4}, {requires_grad = true})
    pt.where(m, y, y * 2):sum():backward()
    assert.are.same({1, 2, 1, 2}, y.grad:tolist())
    local z = pt.tensor({1, 2, 3, 4}, {requires_grad = true})
    z:masked_fill(m, 0):sum():backward()
    assert.are.same({0, 1, 0, 1}, z.grad:tolist())
  end)
  it("other dtypes are still refused", function()
    support.assert_error("where: condition must be a bool tensor, got int32", pt.where,
      pt.tensor({1, 0}, {dtype = "int32"}), pt.ones(2), pt.zeros(2))
  end)
end)
