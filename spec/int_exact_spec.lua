-- Integer exactness and ranges: int64 arithmetic with Lua integers beyond 2^53, the scalars of
-- clamp / where / masked_fill checked against the tensor's dtype, every path that writes a number
-- into a tensor (assignment, index_fill_, scatter), and an explicit trailing nil
-- meaning the same as an omitted argument. Every expected value is from PyTorch 1.13.
local pt = require "partrain"
local support = require "spec.support"
local errmsg, assert_error = support.errmsg, support.assert_error

local function near(expected, actual, tol)
  tol = tol or 1e-12
  if type(expected) == "table" then
    assert.are.equal(#expected, #actual)
    for i = 1, #expected do near(expected[i], actual[i], tol) end
    return
  end
  assert(math.abs(expected - actual) <= tol * math.max(1, math.abs(expected)),
         string.format("expected %.17g, got %.17g", expected, actual))
end
-- every element of a (nested) list is a Lua integer: int64 results come back exact
local function all_integers(v)
  if type(v) == "table" then
    for _, e in ipairs(v) do all_integers(e) end
  else
    assert.are.equal("integer", math.type(v))
  end
end

local B = 1 << 53 -- the first integer after which a double skips integers
local I64, I32, U8 = {dtype = "int64"}, {dtype = "int32"}, {dtype = "uint8"}
local function big() return pt.tensor({B + 1, -B - 1, (1 << 62) + 1}, I64) end
local function cond() return pt.tensor({true, false, true}) end

describe("int64 arithmetic with Lua integers is exact beyond 2^53", function()
  it("add, sub, mul, floor_divide, remainder", function()
    assert.are.same({9007199254740994, -9007199254740992, 4611686018427387906}, (big() + 1):tolist())
    assert.are.same({9007199254740992, -9007199254740994, 4611686018427387904}, (big() - 1):tolist())
    assert.are.same({27021597764222979, -27021597764222979, -4611686018427387901}, (big() * 3):tolist())
    assert.are.same({-9007199254740992, 9007199254740994, -4611686018427387904}, (1 - big()):tolist())
    assert.are.same({3002399751580331, -3002399751580331, 1537228672809129301}, (big() // 3):tolist())
    assert.are.same({5, 2, 5}, (big() % 7):tolist())
    -- the scalar itself beyond 2^53 (it went through a double: 2^53 + 1 became 2^53)
    assert.are.same({18014398509481986, 0, 4620693217682128898}, (big() + (B + 1)):tolist())
    assert.are.same({0, -18014398509481986, 4602678819172646912}, big():sub(B + 1):tolist())
    assert.are.same({0, 18014398509481986, -4602678819172646912}, ((B + 1) - big()):tolist())
    assert.are.same({1, -1, 511}, big():floor_divide(B + 1):tolist())
    assert.are.same({0, 0, 9007199254740482}, big():remainder(B + 1):tolist())
    assert.are.same({511, -512, 1}, (((1 << 62) + 3) // big()):tolist())
    assert.are.same({9007199254740994, 9007199254740994, 4611686018427387905}, pt.maximum(big(), B + 2):tolist())
    assert.are.same({9007199254740993, -9007199254740993, 9007199254740994}, pt.minimum(big(), B + 2):tolist())
    all_integers(big():sub(B + 1):tolist())
    assert.are.equal("int64", (big() + (B + 1)):dtype())
  end)

  it("alpha", function()
    assert.are.same({9007199254741008, -9007199254740978, 4611686018427387920}, big():add(3, {alpha = 5}):tolist())
    assert.are.same({9007199254740978, -9007199254741008, 4611686018427387890}, pt.sub(big(), 3, {alpha = 5}):tolist())
    -- 3 + 5 * big
    assert.are.same({45035996273704968, -45035996273704962, 4611686018427387912}, pt.add(3, big(), {alpha = 5}):tolist())
  end)

  it("in place", function()
    assert.are.same({18014398509481986, 0, 4620693217682128898}, big():add_(B + 1):tolist())
    assert.are.same({27021597764222979, -27021597764222979, -4611686018427387901}, big():mul_(3):tolist())
    assert.are.same({1, -1, 511}, big():floor_divide_(B + 1):tolist())
    assert.are.same({9007199254740990, -9007199254740996, 4611686018427387902}, big():sub_(1, {alpha = 3}):tolist())
  end)

  it("comparisons", function()
    assert.are.same({true, false, false}, big():eq(B + 1):tolist())
    assert.are.same({false, false, false}, big():eq(B):tolist())
    assert.are.same({true, false, true}, big():gt(B):tolist())
    assert.are.same({true, false, true}, big():ge(B + 1):tolist())
    assert.are.same({false, true, false}, big():lt(B + 1):tolist())
    assert.are.same({false, true, false}, big():le(-B - 1):tolist())
    assert.are.same({false, true, true}, big():ne(B + 1):tolist())
  end)

  it("float scalars keep PyTorch's promotion (float32)", function()
    local r = big() + 1.0
    assert.are.equal("float32", r:dtype())
    assert.are.same({9007199254740992.0, -9007199254740992.0, 2.0 ^ 62}, r:tolist())
    -- compared in float32, where 2^53 + 1 is 2^53
    assert.are.same({true, false, false}, big():eq(2.0 ^ 53):tolist())
  end)

  it("int32 and uint8 tensors take an integer's low bits, as PyTorch", function()
    assert.are.same({-2147483647, -2147483646, -2147483645}, (pt.tensor({1, 2, 3}, I32) + (1 << 31)):tolist())
    assert.are.same({1, 2, 3}, (pt.tensor({1, 2, 3}, I32) + (1 << 40)):tolist())
    assert.are.same({0, 1, 2}, (pt.tensor({1, 2, 3}, U8) + -1):tolist())
  end)
end)

describe("clamp", function()
  it("int64 bounds are exact", function()
    assert.are.same({9007199254740994, 9007199254740994, 4611686018427387905}, big():clamp(B + 2):tolist())
    assert.are.same({9007199254740992, -9007199254740993, 9007199254740992}, big():clamp(nil, B):tolist())
    assert.are.same({9007199254740993, -9007199254740993, 9007199254740994}, big():clamp(-B - 2, B + 2):tolist())
    assert.are.same({9007199254740995, 9007199254740995, 9007199254740997}, big():clamp_(B + 3, B + 5):tolist())
    assert.are.same({math.maxinteger, math.maxinteger, math.maxinteger},
                    pt.tensor({1, 2, 3}, I64):clamp(math.maxinteger):tolist())
    assert.are.same({math.mininteger, math.mininteger, math.mininteger},
                    pt.clamp(pt.tensor({1, 2, 3}, I64), {max = math.mininteger}):tolist())
  end)

  it("refuses bounds the dtype cannot hold, as PyTorch", function()
    local i = pt.tensor({1, 2, 3}, I32)
    assert_error("clamp: value 1099511627776 cannot be converted to int32 without overflow", function() return i:clamp(1 << 40) end)
    assert_error("clamp: value -1099511627776 cannot be converted to int32 without overflow", function() return i:clamp(nil, -(1 << 40)) end)
    assert_error("clamp: value 2147483648 cannot be converted to int32 without overflow", function() return i:clamp(0, 1 << 31) end)
    assert_error("clamp: value -2147483649 cannot be converted to int32 without overflow", function() return pt.clamp(i, {min = -(1 << 31) - 1}) end)
    assert_error("clamp_: value 1099511627776 cannot be converted to int32 without overflow", function() return i:clamp_(1 << 40) end)
    assert.are.same({2147483647, 2147483647, 2147483647}, i:clamp((1 << 31) - 1):tolist())
    assert.are.same({1, 2, 3}, i:clamp(-(1 << 31), (1 << 31) - 1):tolist())
    local u = pt.tensor({1, 2, 3}, U8)
    assert_error("clamp: value 256 cannot be converted to uint8 without overflow", function() return u:clamp(256) end)
    assert_error("clamp: value -256 cannot be converted to uint8 without overflow", function() return u:clamp(-256) end)
    assert_error("clamp_: value 300 cannot be converted to uint8 without overflow", function() return u:clamp_(nil, 300) end)
    assert.are.same({1, 2, 3}, u:clamp(nil, 255):tolist())
    local f = pt.tensor({1, 2, 3})
    assert_error("clamp: value 1e+39 cannot be converted to float32 without overflow", function() return f:clamp(1e39) end)
    assert_error("clamp: value -1e+39 cannot be converted to float32 without overflow", function() return f:clamp(nil, -1e39) end)
    assert_error("clamp_: value 1e+39 cannot be converted to float32 without overflow", function() return f:clamp_(1e39) end)
    assert.are.same({math.huge, math.huge, math.huge}, f:clamp(math.huge):tolist())
    assert.are.same({1e39, 1e39, 1e39}, pt.tensor({1, 2, 3}, {dtype = "float64"}):clamp(1e39):tolist())
  end)

  it("refuses a negative bound for uint8, which PyTorch wraps around (clamp(u8, -1) gives 255s there)", function()
    local u = pt.tensor({1, 2, 3}, U8)
    assert_error("clamp: value -1 cannot be converted to uint8 without overflow", function() return u:clamp(-1) end)
    assert_error("clamp: value -255 cannot be converted to uint8 without overflow", function() return u:clamp(-255, 2) end)
    assert_error("clamp_: value -1 cannot be converted to uint8 without overflow", function() return u:clamp_(nil, -1) end)
    assert.are.same({1, 2, 3}, u:tolist())
  end)

  it("a float bound makes an integer tensor float32, as PyTorch", function()
    local r = pt.tensor({1, 2, 3}, I64):clamp(1.5)
    assert.are.equal("float32", r:dtype())
    assert.are.same({1.5, 2.0, 3.0}, r:tolist())
    assert.are.same({1.5, 2.0, 2.5}, pt.tensor({1, 2, 3}, I64):clamp(1.5, 2.5):tolist())
    r = pt.tensor({1, 2, 3}, I32):clamp(2.0) -- a Lua float, even an integral one (Python's 2.0)
    assert.are.equal("float32", r:dtype())
    assert.are.same({2.0, 2.0, 3.0}, r:tolist())
    assert.are.same({1.0, 2.0, 2.5}, pt.tensor({1, 2, 3}, U8):clamp(1, 2.5):tolist())
    local f30 = 1.0000000150474662e+30 -- 1e30 in float32
    assert.are.same({f30, f30, f30}, pt.tensor({1, 2, 3}, I32):clamp(1e30):tolist())
    assert.are.same({1.0, 2.0, 3.0}, pt.tensor({1, 2, 3}, I32):clamp(0 / 0):tolist())
    assert_error("clamp: value 1e+39 cannot be converted to float32 without overflow",
                 function() return pt.tensor({1, 2, 3}, I32):clamp(1e39) end)
    assert_error("clamp_: result type float32 can't be cast to the desired output type int64",
                 function() return pt.tensor({1, 2, 3}, I64):clamp_(1.5) end)
    assert_error("clamp_: result type float32 can't be cast to the desired output type int32",
                 function() return pt.tensor({1, 2, 3}, I32):clamp_(1e39) end)
  end)

  it("on bool tensors promotes as PyTorch (integer bounds: int64)", function()
    local b = pt.tensor({true, false})
    local r = b:clamp(0)
    assert.are.equal("int64", r:dtype())
    assert.are.same({1, 0}, r:tolist())
    assert.are.same({0, 0}, b:clamp(nil, 0):tolist())
    assert.are.same({1.0, 0.5}, b:clamp(0.5):tolist())
    assert_error("clamp_: result type int64 can't be cast to the desired output type bool", function() return b:clamp_(0) end)
  end)

  it("checks its options and arguments", function()
    local t = pt.tensor({1, 2, 3})
    assert_error("clamp: unknown option 'mx' (options: min, max)", function() return t:clamp({min = 0, mx = 2}) end)
    assert_error("clamp: unexpected argument #4 (number)", function() return t:clamp(0, 1, 2) end)
    assert_error("clamp: unexpected argument #3 (number)", function() return t:clamp({min = 0}, 1) end)
    assert_error("clamp_: unexpected argument #4 (number)", function() return t:clamp_(0, 1, 2) end)
    assert.are.same({1, 2, 2}, t:clamp(0, 2, nil):tolist())
  end)
end)

describe("where and masked_fill with numbers", function()
  it("int64 values are exact", function()
    assert.are.same({9007199254740993, 9007199254740995, 4611686018427387905}, pt.where(cond(), big(), B + 3):tolist())
    assert.are.same({9007199254740995, -9007199254740993, 9007199254740995}, pt.where(cond(), B + 3, big()):tolist())
    assert.are.same({9007199254740993, -9007199254740995, 4611686018427387905}, big():where(cond(), -(B + 3)):tolist())
    assert.are.same({9007199254740997, -9007199254740993, 9007199254740997}, big():masked_fill(cond(), B + 5):tolist())
    assert.are.same({-9007199254740997, -9007199254740993, -9007199254740997}, big():masked_fill_(cond(), -(B + 5)):tolist())
    all_integers(pt.where(cond(), big(), B + 3):tolist())
  end)

  it("where refuses numbers the dtype cannot hold, as PyTorch", function()
    local i = pt.tensor({1, 2, 3}, I32)
    assert_error("where: value 1099511627776 cannot be converted to int32 without overflow", function() return pt.where(cond(), i, 1 << 40) end)
    assert_error("where: value 2147483648 cannot be converted to int32 without overflow", function() return pt.where(cond(), 1 << 31, i) end)
    assert_error("where: value 1099511627776 cannot be converted to int32 without overflow", function() return i:where(cond(), 1 << 40) end)
    assert.are.same({1, 2147483647, 3}, pt.where(cond(), i, (1 << 31) - 1):tolist())
    assert.are.same({1, -2147483648, 3}, pt.where(cond(), i, -(1 << 31)):tolist())
    local u = pt.tensor({1, 2, 3}, U8)
    assert_error("where: value 256 cannot be converted to uint8 without overflow", function() return pt.where(cond(), u, 256) end)
    assert_error("where: value 1000 cannot be converted to uint8 without overflow", function() return pt.where(cond(), u, 1000) end)
    -- a value, as masked_fill's, fill_'s and PyTorch's: -255..-1 wrap around
    assert.are.same({1, 255, 3}, pt.where(cond(), u, -1):tolist())
    assert.are.same({1, 1, 3}, pt.where(cond(), u, -255):tolist())
    local f = pt.tensor({1, 2, 3})
    assert_error("where: value 1e+39 cannot be converted to float32 without overflow", function() return pt.where(cond(), f, 1e39) end)
    assert_error("where: value 1e+39 cannot be converted to float32 without overflow", function() return pt.where(cond(), 1e39, f) end)
    assert_error("where: value 1e+39 cannot be converted to float32 without overflow", function() return pt.where(cond(), i, 1e39) end)
    assert.are.same({1, 1e39, 3}, pt.where(cond(), pt.tensor({1, 2, 3}, {dtype = "float64"}), 1e39):tolist())
    assert.are.same({2.0 ^ 62, 2.0, 2.0 ^ 62}, pt.where(cond(), 1 << 62, f):tolist())
  end)

  it("where promotes as PyTorch", function()
    local r = pt.where(cond(), pt.tensor({1, 2, 3}, I32), 1.5)
    assert.are.equal("float32", r:dtype())
    assert.are.same({1.0, 1.5, 3.0}, r:tolist())
    r = pt.where(cond(), pt.tensor({true, true, false}), 1 << 40)
    assert.are.equal("int64", r:dtype())
    assert.are.same({1, 1099511627776, 0}, r:tolist())
    r = pt.where(cond(), pt.tensor({1, 2, 3}, I32), true)
    assert.are.equal("int32", r:dtype())
    assert.are.same({1, 1, 3}, r:tolist())
  end)

  it("masked_fill refuses values the dtype cannot hold", function()
    local i = pt.tensor({1, 2, 3}, I32)
    assert_error("masked_fill: value 1099511627776 cannot be converted to int32 without overflow", function() return i:masked_fill(cond(), 1 << 40) end)
    assert_error("masked_fill_: value 256 cannot be converted to uint8 without overflow",
                 function() return pt.tensor({1, 2, 3}, U8):masked_fill_(cond(), 256) end)
    assert.are.same({255, 2, 255}, pt.tensor({1, 2, 3}, U8):masked_fill(cond(), -1):tolist())
    assert.are.same({1, 2, 1}, pt.tensor({1, 2, 3}, U8):masked_fill(cond(), 1.5):tolist())
  end)
end)

describe("writing numbers into tensors: a Lua integer goes into int64 exactly", function()
  local function t23() return pt.tensor({{1, 2, 3}, {4, 5, 6}}, I64) end
  local function mask() return pt.tensor({{true, false, true}, {false, true, false}}) end
  local function pos(...) return pt.tensor({...}, I64) end
  local X = (1 << 60) + (1 << 36) + 1 -- float32 rounds it once to 2^60 + 2^37 (twice, via a double: 2^60)
  local F = 2.0 ^ 60 + 2.0 ^ 37

  it("t[mask] = v", function()
    local t = t23()
    t[mask()] = B + 1
    assert.are.same({{9007199254740993, 2, 9007199254740993}, {4, 9007199254740993, 6}}, t:tolist())
    t = t23()
    t[mask():to("uint8")] = -(B + 3)
    assert.are.same({{-9007199254740995, 2, -9007199254740995}, {4, -9007199254740995, 6}}, t:tolist())
    all_integers(t:tolist())
    -- int64 tensors as the value: in order, one element, 0-d
    t = t23()
    t[mask()] = pt.tensor({B + 1, B + 3, -B - 1}, I64)
    assert.are.same({{9007199254740993, 2, 9007199254740995}, {4, -9007199254740993, 6}}, t:tolist())
    t = t23()
    t[mask()] = pt.tensor({B + 1}, I64)
    assert.are.same({{9007199254740993, 2, 9007199254740993}, {4, 9007199254740993, 6}}, t:tolist())
    t = t23()
    t[mask()] = pt.tensor(B + 1, I64)
    assert.are.same({{9007199254740993, 2, 9007199254740993}, {4, 9007199254740993, 6}}, t:tolist())
  end)

  it("t[positions] = v", function()
    local t = t23()
    t[pos(2)] = B + 1
    assert.are.same({{1, 2, 3}, {9007199254740993, 9007199254740993, 9007199254740993}}, t:tolist())
    t = t23()
    t[pos(2)] = pt.tensor(B + 1, I64)
    assert.are.same({{1, 2, 3}, {9007199254740993, 9007199254740993, 9007199254740993}}, t:tolist())
    t = t23()
    t[pos(2, 1)] = pt.tensor({{B + 1, B + 3, B + 5}, {-B - 1, 7, 1 << 62}}, I64)
    assert.are.same({{-9007199254740993, 7, 4611686018427387904}, {9007199254740993, 9007199254740995, 9007199254740997}},
                    t:tolist())
  end)

  it("t[{...}] = v on elements, slices, step ranges and '...'", function()
    local t = t23()
    t[{2, 3}] = B + 1
    assert.are.same({{1, 2, 3}, {4, 5, 9007199254740993}}, t:tolist())
    t = t23()
    t[{{}, {2, 3}}] = B + 1
    assert.are.same({{1, 9007199254740993, 9007199254740993}, {4, 9007199254740993, 9007199254740993}}, t:tolist())
    t = t23()
    t[{{}, {2, 3}}] = pt.tensor(B + 1, I64)
    assert.are.same({{1, 9007199254740993, 9007199254740993}, {4, 9007199254740993, 9007199254740993}}, t:tolist())
    t = t23()
    t[{{}, {1, 3, 2}}] = -B - 1
    assert.are.same({{-9007199254740993, 2, -9007199254740993}, {-9007199254740993, 5, -9007199254740993}}, t:tolist())
    t = t23()
    t[{"...", 3}] = (1 << 62) + 1
    assert.are.same({{1, 2, 4611686018427387905}, {4, 5, 4611686018427387905}}, t:tolist())
    t = t23()
    t[2] = math.mininteger
    assert.are.same({{1, 2, 3}, {math.mininteger, math.mininteger, math.mininteger}}, t:tolist())
    all_integers(t:tolist())
  end)

  it("index_fill_, index_copy_", function()
    local t = t23():index_fill_(2, pos(1, 3), B + 1)
    assert.are.same({{9007199254740993, 2, 9007199254740993}, {9007199254740993, 5, 9007199254740993}}, t:tolist())
    t = t23():index_fill_(1, pos(2), -(B + 1))
    assert.are.same({{1, 2, 3}, {-9007199254740993, -9007199254740993, -9007199254740993}}, t:tolist())
    assert.are.same({math.maxinteger, 2, math.maxinteger},
                    pt.tensor({1, 2, 3}, I64):index_fill_(1, pos(1, 3), math.maxinteger):tolist())
    t = t23():index_copy_(2, pos(3), pt.tensor({{B + 1}, {B + 3}}, I64))
    assert.are.same({{1, 2, 9007199254740993}, {4, 5, 9007199254740995}}, t:tolist())
  end)

  it("scatter, scatter_ with a number", function()
    local ix = pos(2, 1, 2):view(1, 3)
    assert.are.same({{1, 9007199254740993, 3}, {9007199254740993, 5, 9007199254740993}},
                    t23():scatter(1, ix, B + 1):tolist())
    assert.are.same({{1, 9007199254740993, 3}, {9007199254740993, 5, 9007199254740993}},
                    pt.scatter(t23(), 1, ix, B + 1):tolist())
    local t = t23()
    t:scatter_(1, ix, -(B + 1))
    assert.are.same({{1, -9007199254740993, 3}, {-9007199254740993, 5, -9007199254740993}}, t:tolist())
  end)

  it("scatter_add, scatter_add_ and index_add_ add int64 exactly (wrapping, as PyTorch)", function()
    local s = pt.tensor({{B + 1, B + 3, (1 << 62) + 1}, {B + 5, 1, -B - 1}}, I64)
    assert.are.same({{1, 9007199254740997, 3}, {18014398509481994, 6, 4602678819172646918}},
                    t23():scatter_add(1, pt.tensor({{2, 1, 2}, {2, 2, 2}}, I64), s):tolist())
    local t = pt.tensor({{B + 1, 0, 0}, {0, 1 << 62, 1}}, I64)
    t:scatter_add_(2, pt.tensor({{2, 2, 1}, {3, 3, 1}}, I64), s)
    assert.are.same({{4620693217682128898, 18014398509481988, 0}, {-9007199254740993, 4611686018427387904, 9007199254740999}},
                    t:tolist())
    t = pt.tensor({{B + 1, 2, 3}, {4, 5, 6}}, I64)
    t:index_add_(1, pos(1, 1), pt.tensor({{2, B, 1 << 62}, {1, B + 1, (1 << 62) + 3}}, I64))
    assert.are.same({{9007199254740996, 18014398509481987, -9223372036854775802}, {4, 5, 6}}, t:tolist())
    assert.are.same({9007199254740995, -9223372036854775804},
                    pt.tensor({B + 1, 5}, I64):index_add_(1, pos(1, 2), pt.tensor({2, math.maxinteger}, I64)):tolist())
    assert.are.same({{-2147483648, 7}, {3, 4}},
                    pt.tensor({{1, 2}, {3, 4}}, I32):scatter_add(1, pos(1, 1):view(1, 2), pt.tensor({{(1 << 31) - 1, 5}}, I32)):tolist())
  end)

  it("float32 gets the integer rounded once, as PyTorch", function()
    local z = function() return pt.zeros(2, 3) end
    local t = z()
    t[mask()] = X
    assert.are.same({{F, 0, F}, {0, F, 0}}, t:tolist())
    t = z()
    t[{{}, {2, 3}}] = X
    assert.are.same({{0, F, F}, {0, F, F}}, t:tolist())
    assert.are.same({{0, F, 0}, {F, 0, F}}, z():scatter(1, pos(2, 1, 2):view(1, 3), X):tolist())
    assert.are.same({{0, F, 0}, {0, F, 0}}, z():index_fill_(2, pos(2), X):tolist())
    -- float64 rounds once either way; with autograd the mask fill is recorded (MaskedFillBackward)
    local x = pt.zeros(2, 3, {dtype = "float64", requires_grad = true})
    local y = x * 1
    y[mask()] = B + 1
    assert.are.same({{2.0 ^ 53, 0, 2.0 ^ 53}, {0, 2.0 ^ 53, 0}}, y:tolist())
    y:sum():backward()
    assert.are.same({{0, 1, 0}, {1, 0, 1}}, x.grad:tolist())
  end)

  it("values int32 cannot hold are still refused", function()
    local i = pt.tensor({1, 2, 3}, I32)
    assert_error("index: value 1099511627776 cannot be converted to int32 without overflow",
                 function() i[pt.tensor({true, false, true})] = 1 << 40 end)
    assert_error("scatter_: value 1099511627776 cannot be converted to int32 without overflow",
                 function() return i:scatter_(1, pos(1), 1 << 40) end)
    assert_error("index_fill_: value 1099511627776 cannot be converted to int32 without overflow",
                 function() return i:index_fill_(1, pos(1), 1 << 40) end)
    assert.are.same({1, 2, 3}, i:tolist())
  end)
end)

describe("int64 reductions are exact beyond 2^53", function()
  local function m() return pt.tensor({{B + 1, (1 << 62) + 1, -B - 1}, {B + 3, -(1 << 62) - 5, 7}}, I64) end

  it("sum, nansum, prod", function()
    assert.are.equal(4611686018427387905, big():sum():item())
    assert.are.equal(-4629700416936869889, big():prod():item())
    assert.are.same({18014398509481988, -4, -9007199254740986}, m():sum(1):tolist())
    assert.are.same({4611686018427387905, -4602678819172646907}, m():sum(2):tolist())
    assert.are.equal(9007199254740998, m():sum():item())
    assert.are.equal(9007199254740998, m():sum({1, 2}):item())
    assert.are.same({4611686018427387905, -4602678819172646907}, m():nansum(2):tolist())
    assert.are.same({-4629700416936869889, -4926937992343322729}, m():prod(2):tolist())
    assert.are.same({36028797018963971, 9223372036854775803, -63050394783186951}, m():prod(1):tolist())
    all_integers(m():sum(1):tolist())
  end)

  it("max, min, argmax, argmin", function()
    assert.are.equal(4611686018427387905, big():max():item())
    assert.are.equal(-9007199254740993, big():min():item())
    local v, i = m():max(2)
    assert.are.same({4611686018427387905, 9007199254740995}, v:tolist())
    assert.are.same({2, 1}, i:tolist())
    v, i = m():min(1)
    assert.are.same({9007199254740993, -4611686018427387909, -9007199254740993}, v:tolist())
    assert.are.same({1, 2, 1}, i:tolist())
    assert.are.equal(2, m():argmax():item())
    assert.are.same({1, 2, 1}, m():argmin(1):tolist())
    -- neighbours a double cannot tell apart
    local n = pt.tensor({{B + 1, B + 3}, {1, 1 << 62}}, I64)
    assert.are.equal(4611686018427387904, n:max():item())
    v, i = n:max(1)
    assert.are.same({9007199254740993, 4611686018427387904}, v:tolist())
    assert.are.same({1, 2}, i:tolist())
    assert.are.equal(2, pt.tensor({B + 1, B + 2, B + 1}, I64):argmax():item())
  end)

  it("cumsum, cumprod", function()
    assert.are.same({9007199254740993, 0, 4611686018427387905}, big():cumsum(1):tolist())
    assert.are.same({9007199254740993, -18014398509481985, -4629700416936869889}, big():cumprod(1):tolist())
    assert.are.same({{9007199254740993, 4620693217682128898, 4611686018427387905},
                     {9007199254740995, -4602678819172646914, -4602678819172646907}}, m():cumsum(2):tolist())
    assert.are.same({{9007199254740993, 4611686018427387905, -9007199254740993},
                     {36028797018963971, 9223372036854775803, -63050394783186951}}, m():cumprod(1):tolist())
  end)
end)

describe("an explicit trailing nil means the same as an omitted argument", function()
  local function f() return pt.tensor({{1, 2, 3}, {4, 5, 7}}, {dtype = "float64"}) end

  it("count_nonzero", function()
    local t = pt.tensor({{0, 1, 2}, {3, 0, 0}})
    assert.are.same({1, 1, 1}, t:count_nonzero({1}, nil):tolist())
    assert.are.same({2, 1}, t:count_nonzero(2, nil):tolist())
    assert.are.equal(3, t:count_nonzero(nil):item())
    assert.are.equal(3, t:count_nonzero(nil, nil):item())
    assert.are.equal(3, pt.count_nonzero(t, {1, 2}, nil):item())
    assert_error("count_nonzero: unexpected argument #3 (number)", function() return t:count_nonzero(1, 2) end)
  end)

  it("sum, mean, prod, nansum, nanmean, logsumexp", function()
    assert.are.same({6, 16}, f():sum(2, nil):tolist())
    assert.are.same({6, 16}, f():sum(2, false, nil):tolist())
    assert.are.same({{5, 7, 10}}, f():sum({1}, true, nil):tolist())
    assert.are.same({{5, 7, 10}}, f():sum(1, {keepdim = true}, nil):tolist())
    near({2, 5.333333333333333}, f():mean(2, nil, nil):tolist())
    assert.are.same({6, 140}, f():prod(2, false, nil):tolist())
    assert.are.same({6, 16}, f():nansum(2, nil):tolist())
    assert.are.same({2.5, 3.5, 5}, f():nanmean(1, false, nil):tolist())
    near({3.4076059644443806, 7.169846019556286}, f():logsumexp(2, false, nil):tolist())
    assert_error("sum: unexpected argument #4 (number)", function() return f():sum(1, false, 3) end)
  end)

  it("max, min, argmax, argmin", function()
    local v, i = f():max(2, false, nil)
    assert.are.same({3, 7}, v:tolist())
    assert.are.same({3, 3}, i:tolist())
    v, i = f():min(1, true, nil)
    assert.are.same({{1, 2, 3}}, v:tolist())
    assert.are.same({{1, 1, 1}}, i:tolist())
    assert.are.equal(7, f():max(nil, nil):item())
    assert.are.same({3, 3}, f():argmax(2, nil, nil):tolist())
    assert.are.equal(1, f():argmin(nil, false, nil):item())
  end)

  it("var, std, norm, softmax, log_softmax", function()
    near({1, 2.333333333333334}, f():var(2, nil):tolist())
    near({1, 2.333333333333334}, f():var(2, false, nil):tolist())
    near({0.6666666666666666, 1.555555555555556}, f():var(2, {unbiased = false}, nil):tolist())
    near({0.6666666666666666, 1.555555555555556}, f():var(2, false, {unbiased = false}, nil):tolist())
    near(4.666666666666667, f():var({1, 2}, nil):item())
    near({2.1213203435596424, 2.1213203435596424, 2.8284271247461903}, f():std(1, nil, nil):tolist())
    near({3.7416573867739413, 9.486832980505138}, f():norm(2, 2, false, nil):tolist())
    near(10.198039027185569, f():norm(nil, nil, nil):item())
    near({0.09003057317038045, 0.2447284710547976, 0.6652409557748218}, f():softmax(2, nil):tolist()[1])
    near({-3.048587351573742, -3.048587351573742, -4.0181499279178094}, f():log_softmax(1, nil):tolist()[1])
    assert_error("norm: unexpected argument #5 (number)", function() return f():norm(2, 1, false, 5) end)
    assert_error("softmax: unexpected argument #3 (string)", function() return f():softmax(1, "float64") end)
    assert_error("log_softmax: unexpected argument #3 (number)", function() return pt.log_softmax(f(), 1, 2) end)
  end)

  it("shape and index bindings (diagonal, unfold, scatter, scatter_, index_add_)", function()
    local ix = pt.tensor({{2, 1, 2}}, I64)
    assert.are.same({1, 5}, f():diagonal(0, 1, 2, nil):tolist())
    assert.are.same({1, 5}, pt.diagonal(f(), nil, nil, nil, nil):tolist())
    assert.are.same({{{1, 2}, {2, 3}}, {{4, 5}, {5, 7}}}, f():unfold(2, 2, 1, nil):tolist())
    assert.are.same({{1, 0, 3}, {0, 5, 0}}, f():scatter(1, ix, 0, nil):tolist())
    assert.are.same({{1, 0, 3}, {0, 5, 0}}, pt.scatter(f(), 1, ix, 0, nil, nil):tolist())
    assert.are.same({{1, 0, 3}, {0, 5, 0}}, f():scatter_(1, ix, pt.zeros(1, 3, {dtype = "float64"}), nil):tolist())
    assert.are.same({{2, 3, 4}, {4, 5, 7}},
                    f():index_add_(1, pt.tensor({1}, I64), pt.ones(1, 3, {dtype = "float64"}), nil):tolist())
    -- something other than nil after the last argument is still refused, named by its position
    assert_error("scatter: unexpected argument #5 (table)", function() return f():scatter(1, ix, 0, {reduce = "add"}) end)
    assert_error("scatter: unexpected argument #6 (table)",
                 function() return f():scatter(1, ix, 0, nil, {reduce = "add"}) end)
    assert_error("diagonal: unexpected argument #6 (string)", function() return f():diagonal(0, 1, 2, nil, "x") end)
    assert_error("sum: unexpected argument #5 (number)", function() return f():sum(1, false, nil, 3) end)
  end)

  it("every binding that refuses extra arguments (sort, topk, median)", function()
    assert.are.same({{3, 2, 1}, {7, 5, 4}}, f():sort(2, true, nil):tolist())
    local v, i = f():topk(2, 2, true, nil)
    assert.are.same({{3, 2}, {7, 5}}, v:tolist())
    assert.are.same({{3, 2}, {3, 2}}, i:tolist())
    v, i = f():median(2, false, nil)
    assert.are.same({2, 5}, v:tolist())
    assert.are.same({2, 2}, i:tolist())
    assert_error("median: unexpected argument #4 (number)", function() return f():median(2, false, 1) end)
  end)

  it("elementwise functions", function()
    local a, b = pt.tensor({1, 2, 3}), pt.tensor({5, 6, 7})
    assert.are.same({2, 4, 6}, a:mul(2, nil):tolist())
    assert.are.same({6, 8, 10}, a:add(b, nil, nil):tolist())
    assert.are.same({3, 4, 5}, pt.lerp(a, b, 0.5, nil):tolist())
    near({2.7182817459106445, 7.389056205749512, 20.08553695678711}, a:exp(nil):tolist())
    assert.are.same({2, 4, 6}, a:clone():mul_(2, nil):tolist())
    assert.are.same({true, false, false}, a:eq(1, nil):tolist())
    assert_error("mul: unexpected argument #3 (number)", function() return a:mul(2, 3) end)
    assert_error("exp: unexpected argument #2 (number)", function() return a:exp(2) end)
  end)
end)

describe("a Lua integer written into float32", function()
  it("is rounded once, as torch.full / fill_ / masked_fill / where / t + n (not through a double)", function()
    -- 2^60 + 2^36 + 1: to float32 directly 2^60 + 2^37; through a double first 2^60 + 2^36 -> 2^60
    local v, e = (1 << 60) + (1 << 36) + 1, (1 << 60) + (1 << 37)
    assert.are.equal(e, pt.full({1}, v)[1])
    assert.are.equal(e, pt.zeros(1):fill_(v)[1])
    assert.are.equal(e, pt.zeros(1):masked_fill(pt.tensor({true}), v)[1])
    assert.are.equal(e, pt.where(pt.tensor({true}), v, pt.zeros(1))[1])
    assert.are.equal(e, (pt.zeros(1) + v)[1])
  end)
end)

describe("integer to integer conversions keep the low bits, as torch's casts", function()
  it("int64 to int32 and uint8, int32 to uint8, bool to integers (torch 1.13's values)", function()
    local a = pt.tensor({(1 << 40) + 6, -3, 1 << 31, math.maxinteger, 257}, {dtype = "int64"})
    assert.are.same({6, -3, -2147483648, -1, 257}, a:to("int32"):tolist())
    assert.are.same({6, 253, 0, 255, 1}, a:to("uint8"):tolist())
    assert.are.same({6, 253, 0, 255, 1}, a:to("int32"):to("uint8"):tolist())
    local c = pt.zeros(5, {dtype = "int32"})
    c:copy_(a:t())
    assert.are.same({6, -3, -2147483648, -1, 257}, c:tolist())
    assert.are.same({1, 0}, pt.tensor({true, false}):to("int32"):tolist())
    assert.are.same({1, 0}, pt.tensor({true, false}):to("uint8"):tolist())
    -- exact beyond 2^53 (it went through a double)
    local big = pt.tensor({(1 << 53) + 1}, {dtype = "int64"})
    assert.are.same({1}, big:to("int32"):tolist())
  end)
end)
