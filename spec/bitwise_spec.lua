-- Bitwise and integer ops: bitwise_and/or/xor/not, bitwise_left_shift/right_shift, logical_xor,
-- their in-place forms (and logical_and_/logical_or_), and Lua 5.4's operators on tensors
-- (& | ~ << >> and unary ~). Expected numbers were computed with PyTorch 1.13 (/usr/bin/python3)
-- and are hard-coded here, except the shifts by a negative amount or by the dtype's width or more:
-- those follow the rule PyTorch >= 2.1 defines (0 for <<, the sign fill for >>), where 1.13 does
-- what x86's shift instruction does with a masked count (C's undefined behaviour).
local pt = require "partrain"
local support = require "spec.support"
local errmsg, assert_error = support.errmsg, support.assert_error

-- the message (after the "file:line: " position prefix) must be exactly msg

local function T(v, dt) return pt.tensor(v, {dtype = dt}) end
-- got (a tensor) has dtype and values want = {values, dtype}
local function check(got, want, what)
  assert.are.equal(want[2], got:dtype(), what)
  assert.are.same(want[1], got:tolist(), what)
end

local i64 = T({5, -3, 0, (1 << 62) + 3, math.mininteger, 127}, "int64")
local j64 = T({3, 6, -1, (1 << 62) + 1, -1, 64}, "int64")
local i32 = T({5, -3, 0, (1 << 30) + 3, -(1 << 31), 127}, "int32")
local j32 = T({3, 6, -1, 7, -1, 64}, "int32")
local u8 = T({5, 253, 0, 200, 128, 127}, "uint8")
local v8 = T({3, 6, 255, 7, 1, 64}, "uint8")
local bA, bB = pt.tensor {true, true, false, false}, pt.tensor {true, false, true, false}
local pairs_of = {int64 = {i64, j64}, int32 = {i32, j32}, uint8 = {u8, v8}, bool = {bA, bB}}

-- torch 1.13
local ops = {
 bitwise_and = {
  int64 = {{1, 4, 0, 4611686018427387905, math.mininteger, 64}, "int64"},
  int32 = {{1, 4, 0, 3, -2147483648, 64}, "int32"},
  uint8 = {{1, 4, 0, 0, 0, 64}, "uint8"},
  bool = {{true, false, false, false}, "bool"},
 },
 bitwise_or = {
  int64 = {{7, -1, -1, 4611686018427387907, -1, 127}, "int64"},
  int32 = {{7, -1, -1, 1073741831, -1, 127}, "int32"},
  uint8 = {{7, 255, 255, 207, 129, 127}, "uint8"},
  bool = {{true, true, true, false}, "bool"},
 },
 bitwise_xor = {
  int64 = {{6, -5, -1, 2, 9223372036854775807, 63}, "int64"},
  int32 = {{6, -5, -1, 1073741828, 2147483647, 63}, "int32"},
  uint8 = {{6, 251, 255, 207, 129, 63}, "uint8"},
  bool = {{false, true, true, false}, "bool"},
 },
}
local nots = {
  int64 = {{-6, 2, -1, -4611686018427387908, 9223372036854775807, -128}, "int64"},
  int32 = {{-6, 2, -1, -1073741828, 2147483647, -128}, "int32"},
  uint8 = {{250, 2, 255, 55, 127, 128}, "uint8"},
  bool = {{false, false, true, true}, "bool"},
}
local shifts = {
  int64 = {a = {1, -8, 7, 1099511627781, -1, 3}, s = {0, 1, 63, 20, 62, 5}, left = {1, -16, math.mininteger, 1152921504612089856, -4611686018427387904, 96}, right = {1, -4, 0, 1048576, -1, 0}},
  int32 = {a = {1, -8, 7, 1048581, -1, 3}, s = {0, 1, 31, 12, 30, 5}, left = {1, -16, -2147483648, 20480, -1073741824, 96}, right = {1, -4, 0, 256, -1, 0}},
  uint8 = {a = {1, 200, 7, 129, 255, 3}, s = {0, 1, 7, 3, 4, 5}, left = {1, 144, 128, 8, 240, 96}, right = {1, 100, 0, 16, 15, 0}},
}
local scalars = {
  int64_and_3 = {{1, 1, 0, 3, 0, 3}, "int64"},
  rand_3_int64 = {{1, 1, 0, 3, 0, 3}, "int64"},
  uint8_and_m1 = {{5, 253, 0, 200, 128, 127}, "uint8"},
  uint8_and_300 = {{4, 44, 0, 8, 0, 44}, "uint8"},
  int32_and_big = {{1, 1, 0, 1, 0, 1}, "int32"},
  bool_and_3 = {{1, 1, 0, 0}, "int64"},
  bool_and_true = {{true, true, false, false}, "bool"},
  bool_or_false = {{true, true, false, false}, "bool"},
  int64_and_true = {{1, 1, 0, 1, 0, 1}, "int64"},
  int64_xor_big = {{4611686018427387908, -4611686018427387908, 4611686018427387905, 2, -4611686018427387903, 4611686018427388030}, "int64"},
  int64_or_neg = {{-9223372036854775803, -3, math.mininteger, -4611686018427387901, math.mininteger, -9223372036854775681}, "int64"},
  int64_shl_2 = {{4, -32, 28, 4398046511124, -4, 12}, "int64"},
  int64_shr_3 = {{0, -1, 0, 137438953472, -1, 0}, "int64"},
  two_shl_t = {{2, 4, 0, 2097152, math.mininteger, 64}, "int64"},
  m256_shr_t = {{-256, -128, -16, -1}, "int64"},
  uint8_shl_3 = {{8, 64, 56, 8, 248, 24}, "uint8"},
  uint8_shl_257 = {{2, 144, 14, 2, 254, 6}, "uint8"},
  uint8_and_0d = {{5, 5, 0, 0, 0, 5}, "uint8"},
  int32_and_0d_big = {{1, 1, 0, 1, 0, 1}, "int32"},
  zd_and_zd = {2, "int64"},
  bool_and_uint8 = {{1, 0, 0, 0}, "uint8"},
  uint8_and_int32 = {{5, 253, 0, 0, 0, 127}, "int32"},
  int32_xor_int64 = {{0, 0, 0, 4611686019501129728, 9223372034707292160, 0}, "int64"},
}
local broadcast = {{0, 1, 0, 1}, {2, 0, 0, 2}, {2, 1, 0, 3}} -- {3,1} & {4}: int64
local lxor = {{false, true, false, false}, {false, true, true, false}, {false, false, true, true}, {true, false, false, false}}
local inplace_i32_and_i64 = {5, -3, 0, 3, 0, 127} -- int32 &= int64
local inplace_u8_or_bool = {5, 253, 1, 200, 129, 127}
local inplace_f_lxor = {0.0, 1.0, 0.0, 0.0} -- float32 logical_xor_
local inplace_i_land = {0, 0, 1, 1} -- int64 logical_and_
local inplace_i_lor = {0, 1, 1, 1} -- int64 logical_or_
local inplace_not = {-6, 2, -1, -4611686018427387908, 9223372036854775807, -128}
local inplace_shl = {8, -64, 56, 8388648, -8, 24}
local inplace_shr = {1, -4, 0, 1048576, -1, 0}

describe("bitwise ops", function()
  it("match torch 1.13 for every integer dtype and bool, as functions, methods and operators", function()
    local operator = {bitwise_and = function(a, b) return a & b end, bitwise_or = function(a, b) return a | b end,
                      bitwise_xor = function(a, b) return a ~ b end}
    for name, by_dtype in pairs(ops) do
      for dt, want in pairs(by_dtype) do
        local a, b = pairs_of[dt][1], pairs_of[dt][2]
        check(pt[name](a, b), want, name .. " " .. dt)
        check(a[name](a, b), want, name .. " method " .. dt)
        check(operator[name](a, b), want, name .. " operator " .. dt)
      end
    end
    for dt, want in pairs(nots) do
      local a = pairs_of[dt][1]
      check(pt.bitwise_not(a), want, "bitwise_not " .. dt)
      check(a:bitwise_not(), want, "bitwise_not method " .. dt)
      check(~a, want, "~ " .. dt)
    end
  end)

  it("shift within the dtype's width as torch 1.13", function()
    for dt, c in pairs(shifts) do
      local a, s = T(c.a, dt), T(c.s, dt)
      check(pt.bitwise_left_shift(a, s), {c.left, dt}, "<< " .. dt)
      check(a << s, {c.left, dt}, "<< operator " .. dt)
      check(a:bitwise_left_shift(s), {c.left, dt}, "<< method " .. dt)
      check(pt.bitwise_right_shift(a, s), {c.right, dt}, ">> " .. dt)
      check(a >> s, {c.right, dt}, ">> operator " .. dt)
    end
  end)

  it("shift by a negative amount or by the width or more as torch >= 2.1 defines it", function()
    local a = T({5, -8, 8, -8, 5}, "int64")
    local s = T({64, 64, 100, -1, -1}, "int64")
    assert.are.same({0, 0, 0, 0, 0}, (a << s):tolist())
    assert.are.same({0, -1, 0, -1, 0}, (a >> s):tolist())
    local a32 = T({5, -8, 8}, "int32")
    assert.are.same({0, 0, 0}, (a32 << 32):tolist())
    assert.are.same({0, -1, 0}, (a32 >> 40):tolist())
    assert.are.same({0, 0}, (T({200, 1}, "uint8") << 8):tolist())
    assert.are.same({0, 0}, (T({200, 1}, "uint8") >> 8):tolist())
    -- one less than the width is an ordinary shift (torch 1.13)
    assert.are.same({math.mininteger, 0}, (T({1, -8}, "int64") << 63):tolist())
    assert.are.same({0, -1}, (T({1, -8}, "int64") >> 63):tolist())
  end)

  it("take numbers and booleans as torch's scalars, on either side", function()
    check(i64 & 3, scalars.int64_and_3, "int64 & 3")
    check(3 & i64, scalars.rand_3_int64, "3 & int64")
    check(pt.bitwise_and(3, i64), scalars.rand_3_int64, "pt.bitwise_and(3, t)")
    check(u8 & -1, scalars.uint8_and_m1, "uint8 & -1: the low bits")
    check(u8 & 300, scalars.uint8_and_300, "uint8 & 300")
    check(i32 & ((1 << 40) + 1), scalars.int32_and_big, "int32 & 2^40 + 1")
    check(bA & 3, scalars.bool_and_3, "bool & 3 is int64")
    check(bA & true, scalars.bool_and_true, "bool & true stays bool")
    check(bA | false, scalars.bool_or_false, "bool | false")
    check(i64 & true, scalars.int64_and_true, "int64 & true")
    check(i64 ~ ((1 << 62) + 1), scalars.int64_xor_big, "int64 ~ 2^62 + 1, exactly")
    check(i64 | math.mininteger, scalars.int64_or_neg, "int64 | mininteger")
    local a64, s64 = T(shifts.int64.a, "int64"), T(shifts.int64.s, "int64")
    check(a64 << 2, scalars.int64_shl_2, "t << 2")
    check(a64 >> 3, scalars.int64_shr_3, "t >> 3")
    check(2 << s64, scalars.two_shl_t, "2 << t")
    check(-256 >> T({0, 1, 4, 8}, "int64"), scalars.m256_shr_t, "-256 >> t")
    local a8 = T(shifts.uint8.a, "uint8")
    check(a8 << 3, scalars.uint8_shl_3, "uint8 << 3")
    check(a8 << 257, scalars.uint8_shl_257, "uint8 << 257 shifts by 257's low bits")
  end)

  it("promote tensors as torch: 0-d tensors only raise the category", function()
    check(u8 & T(5, "int64"), scalars.uint8_and_0d, "uint8 & 0-d int64")
    check(i32 & T((1 << 40) + 1, "int64"), scalars.int32_and_0d_big, "int32 & 0-d int64: low bits")
    local zd = T(6, "int64") & T(3, "uint8")
    assert.are.equal("int64", zd:dtype())
    assert.are.equal(scalars.zd_and_zd[1], zd:item())
    check(bA & T({1, 2, 3, 4}, "uint8"), scalars.bool_and_uint8, "bool & uint8")
    check(u8 & i32, scalars.uint8_and_int32, "uint8 & int32")
    check(i32 ~ i64, scalars.int32_xor_int64, "int32 ~ int64")
  end)

  it("broadcast and take non-contiguous operands", function()
    local x, y = T({{1}, {2}, {3}}, "int64"), T({6, 5, 4, 7}, "int64")
    local r = x & y
    assert.are.same({3, 4}, r:size())
    assert.are.same(broadcast, r:tolist())
    local m = T({{1, 2, 3}, {4, 5, 6}}, "int64")
    assert.are.same({{1, 0}, {0, 0}, {1, 2}}, (m:t() & T({1, 2}, "int64")):tolist()) -- torch 1.13
    assert.are.same({{-2, -5}, {-3, -6}, {-4, -7}}, (~m:t()):tolist())
    local z = T(12, "int64") | T(3, "int64")
    assert.are.equal(0, z:dim())
    assert.are.equal(15, z:item())
    assert.are.same({0, 2}, (pt.zeros(0, 2, {dtype = "int32"}) & 1):size())
  end)

  it("give the same results when a large tensor is split over threads", function()
    local before = pt.get_num_threads()
    local a = pt.arange(0, 200003, {dtype = "int64"})
    local r = {}
    for _, threads in ipairs {1, 2} do
      pt.set_num_threads(threads)
      r[threads] = {a & 12345, a ~ (a >> 3), pt.logical_xor(a % 3, a % 5)}
    end
    pt.set_num_threads(before)
    for k = 1, 3 do assert.is_true(pt.equal(r[1][k], r[2][k])) end
    assert.are.equal(199999 & 12345, r[2][1][200000])
    assert.are.equal(199999 ~ (199999 >> 3), r[2][2][200000])
  end)
end)

describe("logical_xor", function()
  it("gives bool for any dtypes, NaN counting as true", function()
    local f, g = T({0.0, 2.5, 0 / 0, -1.0}, "float32"), T({0, 0, 1, 3}, "int64")
    local r = pt.logical_xor(f, g)
    assert.are.equal("bool", r:dtype())
    assert.are.same(lxor[1], r:tolist())
    assert.are.same(lxor[2], pt.logical_xor(bA, bB):tolist())
    assert.are.same(lxor[3], g:logical_xor(T(0, "int64")):tolist())
    assert.are.same(lxor[4], pt.logical_xor(f, pt.tensor(true)):tolist())
    assert.are.same(lxor[3], pt.logical_xor(g, 0):tolist())
    assert.are.same(lxor[4], pt.logical_xor(f, true):tolist())
    assert.are.same({true, false, false, false}, pt.logical_xor(0.5, f):tolist())
  end)
end)

describe("bitwise ops in place", function()
  it("write the result in the tensor's dtype and return it", function()
    local x = i32:clone()
    assert.are.equal(x, x:bitwise_and_(i64))
    assert.are.equal("int32", x:dtype())
    assert.are.same(inplace_i32_and_i64, x:tolist())
    x = u8:clone()
    x:bitwise_or_(pt.tensor {true, false, true, false, true, false})
    assert.are.same(inplace_u8_or_bool, x:tolist())
    local f = T({0.0, 2.5, 0 / 0, -1.0}, "float32")
    f:logical_xor_(T({0, 0, 1, 3}, "int64"))
    assert.are.equal("float32", f:dtype())
    assert.are.same(inplace_f_lxor, f:tolist())
    local g = T({0, 0, 1, 3}, "int64")
    g:logical_and_(T({0.0, 2.5, 0 / 0, -1.0}, "float32"))
    assert.are.same(inplace_i_land, g:tolist())
    g = T({0, 0, 1, 3}, "int64")
    g:logical_or_(T({0.0, 2.5, 0 / 0, -1.0}, "float32"))
    assert.are.same(inplace_i_lor, g:tolist())
    x = i64:clone()
    x:bitwise_not_()
    assert.are.same(inplace_not, x:tolist())
    x = T(shifts.int32.a, "int32")
    x:bitwise_left_shift_(3)
    assert.are.same(inplace_shl, x:tolist())
    x = T(shifts.int64.a, "int64")
    x:bitwise_right_shift_(T(shifts.int64.s, "int64"))
    assert.are.same(inplace_shr, x:tolist())
    x = T({6, 5}, "int64")
    x:bitwise_xor_(3)
    assert.are.same({5, 6}, x:tolist())
    local b = pt.tensor {true, false}
    b:bitwise_and_(true)
    assert.are.same({true, false}, b:tolist())
  end)

  it("change the base through a view, and broadcast the other operand", function()
    local base = T({{1, 2, 3}, {4, 5, 6}}, "int64")
    base:select(1, 2):bitwise_or_(T({8, 8, 8}, "int64"))
    assert.are.same({{1, 2, 3}, {12, 13, 14}}, base:tolist())
    base:bitwise_and_(T({{1}, {6}}, "int64"))
    assert.are.same({{1, 0, 1}, {4, 4, 6}}, base:tolist())
  end)

  it("are seen by autograd as a modification of what a backward needs", function()
    local x = T({1.5, -2.0}, "float64"):requires_grad_()
    local y = x * 2
    local w = y:sin()
    y:logical_xor_(0)
    assert.matches("modified by an inplace operation", errmsg(function() w:sum():backward() end))
  end)
end)

describe("bitwise op errors", function()
  it("name the op and the dtype it does not take", function()
    local f = T({1.5}, "float32")
    assert_error("bitwise_and: not supported for float32 tensors", pt.bitwise_and, f, f)
    assert_error("bitwise_and: not supported for float32 tensors", function() return f & 1 end)
    assert_error("bitwise_or: not supported for float64 tensors", function() return T({1}, "float64") | i64 end)
    assert_error("bitwise_xor: not supported for float32 tensors", function() return i64 ~ 2.0 end)
    assert_error("bitwise_and: not supported for float32 tensors", function() return 2.5 & i64 end)
    assert_error("bitwise_not: not supported for float32 tensors", pt.bitwise_not, f)
    assert_error("bitwise_not: not supported for float32 tensors", function() return ~f end)
    assert_error("bitwise_left_shift: not supported for bool tensors", function() return bA << bB end)
    assert_error("bitwise_right_shift: not supported for float32 tensors", function() return f >> 1 end)
    assert_error("bitwise_left_shift: not supported for bool tensors", function() return bA << true end)
    -- a bool tensor with an integer is int64, which shifts
    assert.are.same({2, 2, 0, 0}, (bA << 1):tolist())
  end)

  it("name the op for shapes, operands and arguments", function()
    assert_error("bitwise_and: shapes {3} and {2} cannot be broadcast", pt.bitwise_and, T({1, 2, 3}, "int64"),
                 T({1, 2}, "int64"))
    assert.matches("bad argument #1 to '[%w.]*bitwise_and' %(Tensor expected, got number%)",
                   errmsg(pt.bitwise_and, 1, 2))
    assert.matches("bad argument #2 to '[%w.]*bitwise_or' %(Tensor or number expected, got string%)",
                   errmsg(pt.bitwise_or, i64, "x"))
    assert.matches("Tensor or number expected, got table", errmsg(function() return i64 & {} end))
    assert_error("bitwise_and: unexpected argument #3 (number)", pt.bitwise_and, i64, i64, 1)
    assert_error("bitwise_not: unexpected argument #2 (number)", pt.bitwise_not, i64, 1)
  end)

  it("refuse in-place results the tensor cannot hold", function()
    assert_error("bitwise_and_: result type int64 can't be cast to the desired output type bool",
                 function() return pt.tensor({true}):bitwise_and_(T({1}, "int64")) end)
    assert_error("bitwise_or_: result type int64 can't be cast to the desired output type bool",
                 function() return pt.tensor({true}):bitwise_or_(1) end)
    assert_error("bitwise_or_: output with shape {3} doesn't match the broadcast shape {2,3}",
                 function() return T({1, 2, 3}, "int64"):bitwise_or_(T({{1, 2, 3}, {4, 5, 6}}, "int64")) end)
    assert_error("bitwise_and_: not supported for float32 tensors",
                 function() return T({1}, "float32"):bitwise_and_(1) end)
    assert_error("bitwise_not_: not supported for float64 tensors",
                 function() return T({1}, "float64"):bitwise_not_() end)
    local w = T({1.5}, "float64"):requires_grad_()
    assert_error("logical_xor_: a leaf tensor that requires grad is used in an in-place operation",
                 function() return w:logical_xor_(1) end)
  end)
end)

describe("bitwise help", function()
  it("documents every function and method", function()
    for _, name in ipairs {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
                           "bitwise_right_shift", "logical_xor"} do
      assert.is_string(pt._docs[pt[name]], name)
    end
    for _, name in ipairs {"bitwise_and_", "bitwise_or_", "bitwise_xor_", "bitwise_not_", "bitwise_left_shift_",
                           "bitwise_right_shift_", "logical_xor_", "logical_and_", "logical_or_"} do
      assert.is_string(pt._docs[pt.Tensor[name]], name)
    end
  end)
end)
