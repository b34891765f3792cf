-- partrain.tensor_more, third part (logspace, atleast_*d, frexp, ldexp, nextafter, gcd, lcm, isposinf,
-- isneginf, argwhere, narrow_copy, result_type, promote_types, can_cast) against torch 1.13: the numbers
-- in R were computed with /usr/bin/python3 (torch 1.13) on the same inputs, 0-based indices there plus 1
-- here. float64 gradchecks and every error message.
local pt = require "partrain"
local support = require "spec.support"
local gradcheck = require "spec.gradcheck"
local flat = support.flat
local close = support.assert_close_with(1e-6)
local assert_error = support.assert_error

local NAN, INF = 0 / 0, math.huge
local F64, I64 = {dtype = "float64"}, {dtype = "int64"}

local function D(v) return pt.tensor(v, F64) end
local function L(v) return pt.tensor(v, I64) end

-- exact equality of tensors' or tables' elements, NaN equal to NaN and -0.0 distinct from 0.0
local function same(t, expected)
  local a = flat(pt.is_tensor(t) and t:tolist() or t)
  local b = flat(pt.is_tensor(expected) and expected:tolist() or expected)
  assert.are.equal(#b, #a)
  for i = 1, #a do
    local x, y = a[i], b[i]
    local ok = (x ~= x and y ~= y) or (x == y and (x ~= 0 or 1 / x == 1 / y))
    if not ok then error(string.format("element %d: got %.17g, expected %.17g", i, x, y), 2) end
  end
end

local R = {
  -- torch.logspace
  ls = {1.0, 10.0, 100.0, 1000.0},
  ls_b2 = {0.5, 0.8408964276313782, 1.4142135381698608, 2.3784141540527344, 4.0},
  ls_f32 = {1.0, 1.778279423713684, 3.1622776985168457, 5.6234130859375, 10.0},
  ls_f64 = {1.0, 1.7782794100389228, 3.1622776601683795, 5.623413251903491, 10.0},
  ls_b3 = {0.1111111111111111, 0.3333333333333333, 1.0, 3.0, 9.0},
  ls_int = {1, 10, 100, 1000},
  ls_int_frac = {1, 4, 21, 100},
  ls_int_down = {10, 1, 0},
  ls_int_base = {1, 1, 2},
  ls_int_neg = {0, 0, 1},
  ls_u8 = {1, 10, 100, 232},
  ls_negbase = {1.0, -2.0, 4.0, -8.0},
  ls_const = {100.0, 100.0, 100.0},
  -- torch.frexp
  fx64_in = {0.0, -0.0, 1.0, 0.5, 3.0, -5.5, 1e-310, 5e-324, 1.7976931348623157e308, INF, -INF, NAN, 0.75,
             1023.9999999999999},
  fx64_m = {0.0, -0.0, 0.5, 0.5, 0.75, -0.6875, 0.5752618031559393, 0.5, 0.9999999999999999, INF, -INF, NAN, 0.75,
            0.9999999999999999},
  fx64_e = {0, 0, 1, 0, 2, 3, -1029, -1073, 1024, 0, 0, 0, 0, 10},
  fx32_in = {0.0, 1.0, 3.0, -5.5, 1e-45, 3.4e38, INF, NAN, 0.1},
  fx32_m = {0.0, 0.5, 0.75, -0.6875, 0.5, 0.999170184135437, INF, NAN, 0.800000011920929},
  fx32_e = {0, 1, 2, 3, -148, 128, 0, 0, -3},
  fx_grad = {0.25, 1.0, 0.0625},
  -- torch.ldexp
  ldx = {8.0, 1.0},
  ldx_int = {8.0, 4.0},
  ldx_frac = {16.970561981201172, 2.0},
  ldx_sub = {2.1524e-42},
  ldx_grad = {{4.0, 0.3535533905932738}, {4.1588830833596715, -0.4901290717342736}},
  -- torch.nextafter
  na_a = {0.0, 1.0, 1.0, -1.0, 2.0, INF, 1.7976931348623157e308, 5e-324, -0.0, 0.0, NAN, 3.0},
  na_b = {1.0, 2.0, 0.0, 0.0, 2.0, 0.0, INF, 0.0, 1.0, -1.0, 1.0, NAN},
  na64 = {5e-324, 1.0000000000000002, 0.9999999999999999, -0.9999999999999999, 2.0, 1.7976931348623157e+308, INF, 0.0,
          5e-324, -5e-324, NAN, NAN},
  na32 = {1.401298464324817e-45, 1.0000001192092896, 0.9999999403953552, -0.9999999403953552, 2.0,
          3.4028234663852886e+38, INF, 0.0, 1.401298464324817e-45, -1.401298464324817e-45, NAN, NAN},
  -- torch.gcd, torch.lcm
  gcd = {6, 2, 5, 0, 1, 5, 6},
  lcm = {36, 12, 0, 0, 91, 75, 8640},
  gcd_u8 = {6, 50},
  lcm_u8 = {36, 88},
  lcm_wrap64 = {4611686018427387904},
  lcm_wrap32 = {1409965408},
  gcd_bc = {{2, 1, 4}, {6, 3, 6}},
  gcd_inplace = {2, 5},
  -- torch.isposinf / isneginf
  posinf = {false, true, false, false},
  neginf = {false, false, true, false},
  -- torch.argwhere (+1)
  argwhere = {{1, 1}, {2, 2}},
  argwhere_nan = {{1}},
  -- Tensor.narrow_copy
  nc = {{1, 2}, {5, 6}, {9, 10}},
  nc_neg = {{4, 5, 6, 7}, {8, 9, 10, 11}},
  -- torch.promote_types over bool, uint8, int32, int64, float32, float64 (rows: type1)
  promote = {
    {"bool", "uint8", "int32", "int64", "float32", "float64"},
    {"uint8", "uint8", "int32", "int64", "float32", "float64"},
    {"int32", "int32", "int32", "int64", "float32", "float64"},
    {"int64", "int64", "int64", "int64", "float32", "float64"},
    {"float32", "float32", "float32", "float32", "float32", "float64"},
    {"float64", "float64", "float64", "float64", "float64", "float64"}},
  -- torch.can_cast (rows: from)
  can_cast = {
    {true, true, true, true, true, true},
    {false, true, true, true, true, true},
    {false, true, true, true, true, true},
    {false, true, true, true, true, true},
    {false, false, false, false, true, true},
    {false, false, false, false, true, true}},
  -- torch.result_type(tensor with dims of the row's dtype, 0-d tensor of the column's)
  rt_dim_0d = {
    {"bool", "uint8", "int32", "int64", "float32", "float64"},
    {"uint8", "uint8", "uint8", "uint8", "float32", "float64"},
    {"int32", "int32", "int32", "int32", "float32", "float64"},
    {"int64", "int64", "int64", "int64", "float32", "float64"},
    {"float32", "float32", "float32", "float32", "float32", "float32"},
    {"float64", "float64", "float64", "float64", "float64", "float64"}},
  -- torch.result_type(tensor of the row's dtype, 1 / 1.5 / True)
  rt_scalar = {
    {"int64", "float32", "bool"},
    {"uint8", "float32", "uint8"},
    {"int32", "float32", "int32"},
    {"int64", "float32", "int64"},
    {"float32", "float32", "float32"},
    {"float64", "float64", "float64"}},
}

local DTYPES = {"bool", "uint8", "int32", "int64", "float32", "float64"}

describe("logspace", function()
  it("gives base^linspace(start, end, steps) in the dtype, as torch.logspace", function()
    local t = pt.logspace(0, 3, 4)
    assert.are.equal("float32", t:dtype())
    same(t, R.ls)
    same(pt.logspace(-1, 2, 5, 2), R.ls_b2)
    same(pt.logspace(-1, 2, 5, {base = 2}), R.ls_b2)
    same(pt.logspace(0, 1, 5), R.ls_f32)
    close(pt.logspace(0, 1, 5, {dtype = "float64"}), R.ls_f64, 1e-15)
    close(pt.logspace(-2, 2, 5, 3.0, {dtype = "float64"}), R.ls_b3, 1e-15)
    same(pt.logspace(0, 3, 4, -2), R.ls_negbase)
    same(pt.logspace(2, 2, 3), R.ls_const)
    assert.are.same({0}, pt.logspace(0, 3, 0):size())
    same(pt.logspace(0, 3, 1), {1.0})
    assert.is_true(pt.logspace(0, 1, 3, {requires_grad = true}).requires_grad)
  end)

  it("truncates start, end and base for integer dtypes and wraps uint8, as torch", function()
    local t = pt.logspace(0, 3, 4, {dtype = "int64"})
    assert.are.equal("int64", t:dtype())
    same(t, R.ls_int)
    same(pt.logspace(0, 2.5, 4, {dtype = "int64"}), R.ls_int_frac)
    same(pt.logspace(1, -1, 3, {dtype = "int32"}), R.ls_int_down)
    same(pt.logspace(0.5, 1.5, 3, 2.5, {dtype = "int64"}), R.ls_int_base)
    same(pt.logspace(-2, 0, 3, {dtype = "int64"}), R.ls_int_neg)
    same(pt.logspace(0, 3, 4, {dtype = "uint8"}), R.ls_u8)
  end)

  it("reports bad arguments", function()
    assert_error("logspace: number of steps must be non-negative, got -1", pt.logspace, 0, 3, -1)
    assert_error("logspace: not implemented for bool (a numeric dtype expected)", pt.logspace, 0, 3, 4, {dtype = "bool"})
    assert_error("logspace: steps must be an integer, got 2.5", pt.logspace, 0, 3, 2.5)
    assert_error("logspace: start must be a number, got string", pt.logspace, "0", 3, 4)
    assert_error("logspace: end must be a number, got nil", pt.logspace, 0, nil, 4)
    assert_error("logspace: base given twice (as argument #4 and as an option)", pt.logspace, 0, 3, 4, 2, {base = 2})
    assert_error("logspace: unknown option 'bse' (options: base, dtype, requires_grad)", pt.logspace, 0, 3, 4, {bse = 2})
    assert_error("logspace: dtype must be a dtype (float32, float64, int64, int32, uint8 or bool), got 'half'",
                 pt.logspace, 0, 3, 4, {dtype = "half"})
  end)
end)

describe("atleast_1d, atleast_2d, atleast_3d", function()
  it("add leading (and for 3d trailing) dims as torch, returning t itself when it has enough", function()
    local s = pt.tensor(1.0)
    local v = pt.tensor({1.0, 2.0})
    local m = pt.ones(2, 3)
    assert.are.same({1}, pt.atleast_1d(s):size())
    assert.are.same({1, 1}, pt.atleast_2d(s):size())
    assert.are.same({1, 1, 1}, pt.atleast_3d(s):size())
    assert.are.same({1, 2}, pt.atleast_2d(v):size())
    assert.are.same({1, 2, 1}, pt.atleast_3d(v):size())
    assert.are.same({2, 3, 1}, pt.atleast_3d(m):size())
    assert.are.same({0, 3, 1}, pt.atleast_3d(pt.ones(0, 3)):size())
    assert.are.equal(m, pt.atleast_2d(m))
    local big = pt.ones(2, 3, 4, 5)
    assert.are.equal(big, pt.atleast_3d(big))
    -- views: they share the storage
    assert.is_true(pt.atleast_2d(v):is_same_storage(v))
  end)

  it("take several tensors or a list and return a list", function()
    local r = pt.atleast_1d(pt.tensor(1.0), pt.ones(2))
    assert.are.equal(2, #r)
    assert.are.same({1}, r[1]:size())
    assert.are.same({2}, r[2]:size())
    local l = pt.atleast_2d({pt.tensor(1.0), pt.ones(3)})
    assert.are.same({1, 1}, l[1]:size())
    assert.are.same({1, 3}, l[2]:size())
    assert.are.same({}, pt.atleast_1d())
    assert_error("atleast_1d: tensor 1 is not a tensor (got number)", pt.atleast_1d, 3)
    assert_error("atleast_3d: tensor 2 is not a tensor (got string)", pt.atleast_3d, pt.ones(1), "x")
  end)

  it("pass gradcheck", function()
    assert.is_true(gradcheck(function(x) return pt.atleast_3d(x) * 2 end, {D({1, 2, 3})}))
    assert.is_true(gradcheck(function(x) return pt.atleast_2d(x)[1] end, {D({1, 2, 3})}))
  end)
end)

describe("frexp", function()
  it("splits float64 and float32 values into mantissa and int32 exponent, as torch", function()
    local m, e = pt.frexp(pt.tensor(R.fx64_in, F64))
    assert.are.equal("float64", m:dtype())
    assert.are.equal("int32", e:dtype())
    same(m, R.fx64_m)
    same(e, R.fx64_e)
    local m32, e32 = pt.tensor(R.fx32_in):frexp()
    assert.are.equal("float32", m32:dtype())
    same(m32, R.fx32_m)
    same(e32, R.fx32_e)
    -- mantissa * 2^exponent gives the values back
    local x = pt.randn(50, F64) * 1e5
    local mm, ee = x:frexp()
    same(mm * pt.pow(2.0, ee:double()), x)
  end)

  it("keeps the shape and has torch's gradient 2^-exponent", function()
    local m, e = pt.ones(2, 0, 3):frexp()
    assert.are.same({2, 0, 3}, m:size())
    assert.are.same({2, 0, 3}, e:size())
    local x = D({3, -0.7, 12})
    x.requires_grad = true
    local mx, ex = x:frexp()
    assert.is_false(ex.requires_grad)
    mx:sum():backward()
    same(x.grad, R.fx_grad)
    assert.is_true(gradcheck(function(t) return (t:frexp()) end, {D({3, -0.7, 12, 1e-3, -250})}))
  end)

  it("refuses other dtypes", function()
    assert_error("frexp: only supports floating-point dtypes, got int64", pt.frexp, L({1, 2}))
    assert_error("frexp: only supports floating-point dtypes, got bool", pt.frexp, pt.tensor({true}))
    assert_error("frexp: bad argument #1 (Tensor expected, got number)", pt.frexp, 2)
    assert_error("frexp: unexpected argument #2 (number)", pt.frexp, pt.ones(1), 2)
  end)
end)

describe("ldexp", function()
  it("multiplies by 2^other with torch's dtypes", function()
    same(pt.ldexp(pt.tensor({1.0, 2.0}), L({3, -1})), R.ldx)
    local r = pt.ldexp(L({1, 2}), L({3, 1}))
    assert.are.equal("float32", r:dtype())
    same(r, R.ldx_int)
    close(L({3, 4}):ldexp(pt.tensor({2.5, -1.0})), R.ldx_frac)
    assert.are.equal("float64", pt.ldexp(D({1, 2}), L({3, -1})):dtype())
    assert.are.equal("float64", pt.ldexp(pt.tensor({1.0}), D({3})):dtype())
    -- an integer exponent's powers are float32, as in torch 1.13: overflow and subnormals in float32
    same(pt.ldexp(D({1}), L({200})), {INF})
    close(pt.ldexp(D({3}), L({-140})), R.ldx_sub, 1e-4)
  end)

  it("has gradients for t and a float other", function()
    local x, o = D({1.5, -2}), D({2, -1.5})
    x.requires_grad, o.requires_grad = true, true
    pt.ldexp(x, o):sum():backward()
    close(x.grad, R.ldx_grad[1], 1e-12)
    close(o.grad, R.ldx_grad[2], 1e-12)
    assert.is_true(gradcheck(function(a, b) return a:ldexp(b) end, {D({{1, -2, 0.5}, {3, 0.25, -1}}), D({0.5, -1, 2})}))
  end)

  it("works in place when the result casts to t", function()
    local t = pt.tensor({1.0, 2.0})
    assert.are.equal(t, t:ldexp_(L({1, 2})))
    same(t, {2.0, 8.0})
    assert_error("ldexp_: result type float32 can't be cast to the desired output type int64", L({1, 2}).ldexp_,
                 L({1, 2}), L({1, 2}))
    assert_error("ldexp_: output with shape {2} doesn't match the broadcast shape {2,2}", pt.ones(2).ldexp_,
                 pt.ones(2), L({{1, 2}, {3, 4}}))
  end)

  it("reports bad arguments", function()
    assert_error("ldexp: other must be a tensor, got number", pt.ldexp, pt.ones(2), 3)
    assert_error("ldexp: shapes {2} and {3} cannot be broadcast", pt.ldexp, pt.ones(2), L({1, 2, 3}))
    assert_error("ldexp: bad argument #1 (Tensor expected, got number)", pt.ldexp, 1, L({1}))
  end)
end)

describe("nextafter", function()
  it("steps one ulp towards other in float64 and float32, as torch", function()
    same(pt.nextafter(pt.tensor(R.na_a, F64), pt.tensor(R.na_b, F64)), R.na64)
    local r = pt.tensor(R.na_a):nextafter(pt.tensor(R.na_b))
    assert.are.equal("float32", r:dtype())
    same(r, R.na32)
    -- -0 towards -0 gives other; dtypes promote; subnormals step by the smallest one
    same(pt.nextafter(D({0.0}), D({-0.0})), {-0.0})
    assert.are.equal("float64", pt.nextafter(pt.tensor({1.0}), D({2})):dtype())
    assert.are.equal("float32", pt.nextafter(pt.tensor({1.0}), L({2})):dtype())
    same(pt.nextafter(D({2.0 ^ -1022}), D({0})), {2.0 ^ -1022 - 2.0 ^ -1074})
    same(pt.nextafter(D({2.0 ^ -1022 - 2.0 ^ -1074}), D({1})), {2.0 ^ -1022})
    same(pt.nextafter(D({-INF}), D({0})), {-1.7976931348623157e308})
    -- other is converted to the result's dtype first (torch: 16777217 rounds to 16777216 in float32)
    same(pt.nextafter(pt.tensor({16777216.0}), L({16777217})), {16777216.0})
    same(pt.nextafter(pt.tensor({16777216.0}), L({16777218})), {16777218.0})
  end)

  it("matches the neighbouring values of many random numbers", function()
    local x = pt.randn(200, F64) * pt.pow(10.0, pt.randn(200, F64) * 30)
    local up = pt.nextafter(x, D({INF}))
    local down = pt.nextafter(x, D({-INF}))
    -- strictly ordered, and each is the other's neighbour back
    assert.is_true(up:gt(x):all():item())
    assert.is_true(down:lt(x):all():item())
    same(pt.nextafter(up, D({-INF})), x)
    same(pt.nextafter(down, D({INF})), x)
  end)

  it("has no gradient, works in place, and refuses integers", function()
    local x = D({1, 2})
    x.requires_grad = true
    assert.is_false(pt.nextafter(x, D({3, 3})).requires_grad)
    -- computed in the promoted float64, then rounded into t (torch: 1.0 as well)
    local t = pt.tensor({1.0})
    t:nextafter_(D({2}))
    same(t, {1.0})
    local u = D({1})
    u:nextafter_(pt.tensor({2.0}))
    same(u, {1.0000000000000002})
    assert_error("nextafter: not implemented for int64 tensors (floating point dtypes only)", pt.nextafter, L({1}), L({2}))
    assert_error("nextafter: other must be a tensor, got number", pt.nextafter, pt.ones(1), 2.0)
    assert_error("nextafter: shapes {2} and {3} cannot be broadcast", pt.nextafter, pt.ones(2), pt.ones(3))
    assert_error("nextafter_: result type float32 can't be cast to the desired output type int64", L({1}).nextafter_,
                 L({1}), pt.ones(1))
  end)
end)

describe("gcd and lcm", function()
  it("match torch on int64, uint8 and int32, with wrap-around", function()
    local a, b = L({12, -4, 0, 0, 7, -15, 270}), L({18, 6, 5, 0, 13, -25, 192})
    local g = a:gcd(b)
    assert.are.equal("int64", g:dtype())
    same(g, R.gcd)
    same(pt.lcm(a, b), R.lcm)
    local u1, u2 = pt.tensor({12, 200}, {dtype = "uint8"}), pt.tensor({18, 150}, {dtype = "uint8"})
    assert.are.equal("uint8", pt.gcd(u1, u2):dtype())
    same(pt.gcd(u1, u2), R.gcd_u8)
    same(pt.lcm(u1, u2), R.lcm_u8)
    same(pt.lcm(L({2 ^ 62}), L({3})), R.lcm_wrap64)
    same(pt.lcm(pt.tensor({100000}, {dtype = "int32"}), pt.tensor({99999}, {dtype = "int32"})), R.lcm_wrap32)
    assert.are.equal("int64", pt.gcd(a:int(), b):dtype())
    same(pt.gcd(L({{4}, {6}}), L({6, 9, 12})), R.gcd_bc)
  end)

  it("agree with Euclid's algorithm in Lua on random pairs", function()
    local a = (pt.rand(300, F64) * 2e6 - 1e6):long()
    local b = (pt.rand(300, F64) * 2e4 - 1e4):long()
    local function lua_gcd(x, y)
      x, y = math.abs(x), math.abs(y)
      while y ~= 0 do x, y = y, x % y end
      return x
    end
    local g, l = pt.gcd(a, b):tolist(), pt.lcm(a, b):tolist()
    local la, lb = a:tolist(), b:tolist()
    for i = 1, #la do
      local want = lua_gcd(la[i], lb[i])
      assert.are.equal(want, g[i])
      assert.are.equal(want == 0 and 0 or math.abs(la[i] // want * lb[i]), l[i])
    end
  end)

  it("work in place and refuse non-integer dtypes", function()
    local t = pt.tensor({4, 5}, {dtype = "int32"})
    assert.are.equal(t, t:gcd_(L({6, 10})))
    same(t, R.gcd_inplace)
    local u = L({4, 6})
    u:lcm_(L({6, 4}))
    same(u, {12, 12})
    assert_error("gcd: not implemented for float32 tensors (integer dtypes only)", pt.gcd, pt.ones(1), pt.ones(1))
    assert_error("gcd: not implemented for float32 tensors (integer dtypes only)", pt.gcd, L({1}), pt.ones(1))
    assert_error("gcd: not implemented for bool tensors (integer dtypes only)", pt.gcd, pt.tensor({true}), pt.tensor({true}))
    assert_error("lcm: not implemented for float64 tensors (integer dtypes only)", pt.lcm, D({1}), D({2}))
    assert_error("gcd: other must be a tensor, got number", pt.gcd, L({4}), 6)
    assert_error("lcm: shapes {2} and {3} cannot be broadcast", pt.lcm, L({4, 5}), L({6, 9, 12}))
    assert_error("gcd_: output with shape {1} doesn't match the broadcast shape {2}", L({1}).gcd_, L({1}), L({2, 3}))
  end)
end)

describe("isposinf, isneginf, argwhere", function()
  it("test for signed infinities as torch", function()
    local v = pt.tensor({1.0, INF, -INF, NAN})
    same(v:isposinf(), R.posinf)
    same(pt.isneginf(v), R.neginf)
    same(pt.isposinf(L({1, 2})), {false, false})
    same(pt.isneginf(pt.tensor({true})), {false})
    assert.are.equal("bool", pt.isposinf(L({1})):dtype())
    assert.are.same({2, 0}, pt.isposinf(pt.ones(2, 0)):size())
    assert_error("isposinf: bad argument #1 (Tensor expected, got number)", pt.isposinf, 1)
  end)

  it("argwhere gives the 1-based indices of the non-zero elements", function()
    same(L({{1, 0}, {0, 3}}):argwhere(), R.argwhere)
    same(pt.argwhere(pt.tensor({NAN, 0.0})), R.argwhere_nan)
    assert.are.same({1, 0}, pt.argwhere(pt.tensor(5.0)):size())
    assert.are.same({0, 0}, pt.argwhere(pt.tensor(0.0)):size())
    assert_error("argwhere: unexpected argument #2 (number)", pt.argwhere, pt.ones(1), 1)
  end)
end)

describe("narrow_copy", function()
  it("copies a narrowed part, as torch", function()
    local t = pt.arange(0, 12):reshape(3, 4)
    local c = t:narrow_copy(2, 2, 2)
    same(c, R.nc)
    assert.is_false(c:is_same_storage(t))
    same(pt.narrow_copy(t, 1, -2, 2), R.nc_neg)
    assert.are.same({0, 4}, t:narrow_copy(1, 4, 0):size())
    assert.is_true(gradcheck(function(x) return x:narrow_copy(2, 2, 2) end, {D({{1, 2, 3}, {4, 5, 6}})}))
  end)

  it("reports narrow's errors under its own name", function()
    local t = pt.arange(0, 12):reshape(3, 4)
    assert_error("narrow_copy: start 3 and length 2 out of range for dimension 1 of size 3", t.narrow_copy, t, 1, 3, 2)
    assert_error("narrow_copy: cannot be applied to a 0-d tensor", pt.narrow_copy, pt.tensor(1.0), 1, 1, 1)
  end)
end)

describe("result_type, promote_types, can_cast", function()
  it("match torch's tables", function()
    for i, a in ipairs(DTYPES) do
      for j, b in ipairs(DTYPES) do
        assert.are.equal(R.promote[i][j], pt.promote_types(a, b))
        assert.are.equal(R.can_cast[i][j], pt.can_cast(a, b))
        assert.are.equal(R.promote[i][j], pt.result_type(pt.ones(2, {dtype = a}), pt.ones(3, {dtype = b})))
        assert.are.equal(R.promote[i][j], pt.result_type(pt.ones({}, {dtype = a}), pt.ones({}, {dtype = b})))
        assert.are.equal(R.rt_dim_0d[i][j], pt.result_type(pt.ones(2, {dtype = a}), pt.ones({}, {dtype = b})))
        assert.are.equal(R.rt_dim_0d[i][j], pt.result_type(pt.ones({}, {dtype = b}), pt.ones(2, {dtype = a})))
      end
      for j, s in ipairs({1, 1.5, true}) do
        assert.are.equal(R.rt_scalar[i][j], pt.result_type(pt.ones(2, {dtype = a}), s))
        assert.are.equal(R.rt_scalar[i][j], pt.result_type(s, pt.ones({}, {dtype = a})))
      end
    end
    -- torch.result_type: numbers alone, and an empty tensor still has a dim
    assert.are.equal("float32", pt.result_type(1, 2.0))
    assert.are.equal("int64", pt.result_type(1, 2))
    assert.are.equal("int64", pt.result_type(true, 2))
    assert.are.equal("bool", pt.result_type(true, false))
    assert.are.equal("int32", pt.result_type(pt.ones(0, {dtype = "int32"}), pt.ones({}, {dtype = "int64"})))
    assert.are.equal("float64", pt.promote_types("long", "double"))
    assert.is_false(pt.can_cast("float", "int"))
  end)

  it("predict the dtype of partrain's own binary ops", function()
    local operands = {}
    for _, dt in ipairs(DTYPES) do
      operands[#operands + 1] = pt.ones(2, {dtype = dt})
      operands[#operands + 1] = pt.ones({}, {dtype = dt})
    end
    for _, s in ipairs({1, 1.5}) do operands[#operands + 1] = s end
    for _, a in ipairs(operands) do
      for _, b in ipairs(operands) do
        if pt.is_tensor(a) or pt.is_tensor(b) then
          assert.are.equal(pt.result_type(a, b), pt.mul(a, b):dtype())
        end
      end
    end
  end)

  it("report bad arguments", function()
    assert_error("promote_types: type1 must be a dtype (float32, float64, int64, int32, uint8 or bool), got 'half'",
                 pt.promote_types, "half", "int64")
    assert_error("promote_types: type2 must be a dtype (float32, float64, int64, int32, uint8 or bool), got nil",
                 pt.promote_types, "int64")
    assert_error("can_cast: to must be a dtype (float32, float64, int64, int32, uint8 or bool), got number",
                 pt.can_cast, "int64", 3)
    assert_error("result_type: bad argument #2 (Tensor, number or boolean expected, got string)", pt.result_type,
                 pt.ones(1), "float32")
    assert_error("result_type: unexpected argument #3 (number)", pt.result_type, 1, 2, 3)
  end)
end)
