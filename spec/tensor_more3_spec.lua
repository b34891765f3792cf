-- partrain.tensor_more, third part (logspace, atleast_*d, frexp, ldexp, nextafter, gcd, lcm, isposinf,
-- isneginf, argwhere, narrow_copy, result_type, promote_types, can_cast, select/slice/diagonal_scatter,
-- addr, index_reduce, histogram, unravel_index, and Torch7's apply/map/map2) against torch 1.13: the
-- numbers in R were computed with /usr/bin/python3 (torch 1.13) on the same inputs, 0-based indices there
-- plus 1 here. unravel_index is not in torch 1.13: its numbers are NumPy's np.unravel_index (the
-- semantics of torch 2.2's), plus 1. torch 1.13's slice_scatter fails without an explicit end (its
-- INT64_MAX end overflows as_strided), so those cases were computed with end given. float64 gradchecks and
-- every error message.
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
  -- torch.select_scatter / slice_scatter / diagonal_scatter
  ss_row = {{1.0, 1.0, 1.0}, {0.0, 0.0, 0.0}},
  ss_col = {{0.0, 0.0, 1.0}, {0.0, 0.0, 1.0}},
  sl_tail = {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {1, 1}, {1, 1}},
  sl_step = {{1, 1}, {0, 0}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, {1, 1}, {0, 0}},
  sl_mid = {{0, 0}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, {0, 0}},
  sl_dim2 = {{0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}},
  sl_neg = {{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}, {1, 1}, {1, 1}, {1, 1}},
  ds_main = {{1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}},
  ds_up = {{0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}, {0.0, 0.0, 0.0}},
  ds_down = {{0.0, 0.0, 0.0}, {1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}},
  ds_3d = {{{1.0, 0.0, 0.0, 0.0}, {3.0, 0.0, 0.0, 0.0}, {5.0, 0.0, 0.0, 0.0}},
           {{0.0, 2.0, 0.0, 0.0}, {0.0, 4.0, 0.0, 0.0}, {0.0, 6.0, 0.0, 0.0}}},
  -- torch.addr
  addr = {{2.0, 2.0, 2.0}, {6.0, 5.0, 4.0}},
  addr_ba = {{2.5, 1.0, -0.5}, {6.0, 2.5, -1.0}},
  addr_b0 = {{1.0, 0.0, -1.0}, {2.0, 0.0, -2.0}},
  addr_bc = {{2.0, 2.0, 2.0}, {3.0, 2.0, 1.0}},
  addr_0d = {{3.0, 2.0, 1.0}, {4.0, 2.0, 0.0}},
  addr_int = {{5, 4, 3}, {14, 10, 6}},
  addr_bool = {{true, true, true}, {true, true, true}},
  addr_bool_b = {{true, false, true}, {true, false, true}},
  -- Tensor.index_reduce (dim 0, index {0, 2, 0}), rows: prod, mean, amax, amin; include_self true, false
  ir = {
    prod = {{{16.0, 54.0, 120.0}, {4.0, 5.0, 6.0}, {35.0, 48.0, 63.0}, {10.0, 11.0, 12.0}},
            {{16.0, 27.0, 40.0}, {4.0, 5.0, 6.0}, {5.0, 6.0, 7.0}, {10.0, 11.0, 12.0}}},
    mean = {{{3.6666667461395264, 4.666666507720947, 5.666666507720947}, {4.0, 5.0, 6.0}, {6.0, 7.0, 8.0},
             {10.0, 11.0, 12.0}},
            {{5.0, 6.0, 7.0}, {4.0, 5.0, 6.0}, {5.0, 6.0, 7.0}, {10.0, 11.0, 12.0}}},
    amax = {{{8.0, 9.0, 10.0}, {4.0, 5.0, 6.0}, {7.0, 8.0, 9.0}, {10.0, 11.0, 12.0}},
            {{8.0, 9.0, 10.0}, {4.0, 5.0, 6.0}, {5.0, 6.0, 7.0}, {10.0, 11.0, 12.0}}},
    amin = {{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}, {5.0, 6.0, 7.0}, {10.0, 11.0, 12.0}},
            {{2.0, 3.0, 4.0}, {4.0, 5.0, 6.0}, {5.0, 6.0, 7.0}, {10.0, 11.0, 12.0}}}},
  -- gradients of (out * arange(12).reshape(4, 3)).sum() for self and source (include_self=True)
  ir_grad = {
    prod = {{{0.0, 27.0, 80.0}, {3.0, 4.0, 5.0}, {30.0, 42.0, 56.0}, {9.0, 10.0, 11.0}},
            {{0.0, 18.0, 60.0}, {42.0, 56.0, 72.0}, {0.0, 6.0, 24.0}}},
    mean = {{{0.0, 1 / 3, 2 / 3}, {3.0, 4.0, 5.0}, {3.0, 3.5, 4.0}, {9.0, 10.0, 11.0}},
            {{0.0, 1 / 3, 2 / 3}, {3.0, 3.5, 4.0}, {0.0, 1 / 3, 2 / 3}}},
    amax = {{{0.0, 0.0, 0.0}, {3.0, 4.0, 5.0}, {6.0, 7.0, 8.0}, {9.0, 10.0, 11.0}},
            {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, {0.0, 1.0, 2.0}}},
    amin = {{{0.0, 1.0, 2.0}, {3.0, 4.0, 5.0}, {0.0, 0.0, 0.0}, {9.0, 10.0, 11.0}},
            {{0.0, 0.0, 0.0}, {6.0, 7.0, 8.0}, {0.0, 0.0, 0.0}}}},
  -- ties and zeros: x {{1,5},{2,0}}, source {{5,0},{3,5},{0,2}}, index {0,0,1}, weights {{1,2},{3,4}};
  -- {out, grad x, grad source} for include_self true and false
  ir_tie = {
    amax = {{{{5.0, 5.0}, {2.0, 2.0}}, {{0.0, 1.0}, {3.0, 0.0}}, {{1.0, 0.0}, {0.0, 1.0}, {0.0, 4.0}}},
            {{{5.0, 5.0}, {0.0, 2.0}}, {{0.0, 0.0}, {0.0, 0.0}}, {{1.0, 0.0}, {0.0, 1.0}, {3.0, 4.0}}}},
    prod = {{{{15.0, 0.0}, {0.0, 0.0}}, {{15.0, 0.0}, {0.0, 8.0}}, {{3.0, 50.0}, {5.0, 0.0}, {6.0, 0.0}}},
            {{{15.0, 0.0}, {0.0, 2.0}}, {{0.0, 0.0}, {0.0, 0.0}}, {{3.0, 10.0}, {5.0, 0.0}, {3.0, 4.0}}}}},
  ir_int_mean = {{3, 4, 5}, {4, 5, 6}, {6, 7, 8}, {10, 11, 12}},
  ir_int_floor = {-2},
  ir_u8_mean = {15, 2},
  ir_dim2 = {{1.0, 2.0, 5.0}, {4.0, 5.0, 6.0}, {7.0, 8.0, 9.0}, {10.0, 11.0, 12.0}},
  ir_nan = {NAN, NAN, 3.0},
  -- torch.histogram of {1, 2, 1, 4, 2.5, 0.5}
  h4 = {3.0, 1.0, 1.0, 1.0},
  h4_e = {0.5, 1.375, 2.25, 3.125, 4.0},
  h4_range = {1.0, 2.0, 1.0, 1.0},
  h4_range_e = {0.0, 0.75, 1.5, 2.25, 3.0},
  h4_w = {10.0, 2.0, 5.0, 4.0},
  h4_d = {0.5714285969734192, 0.190476194024086, 0.190476194024086, 0.190476194024086},
  h4_wd = {0.5442177057266235, 0.10884354263544083, 0.27210885286331177, 0.21768708527088165},
  h4_range_d = {0.2666666805744171, 0.5333333611488342, 0.2666666805744171, 0.2666666805744171},
  hb = {1.0, 3.0, 2.0},
  hb_d = {0.1666666716337204, 0.3333333432674408, 0.13333334028720856},
  h_const = {0.0, 3.0},
  h_const_e = {2.5, 3.0, 3.5},
  h_empty = {0.0, 0.0},
  h_empty_e = {0.0, 0.5, 1.0},
  h_flat_range = {1.0, 2.0},
  h_flat_range_e = {0.5, 1.0, 1.5},
  h64 = {4.0, 2.0},
  h64_e = {0.5, 2.25, 4.0},
  h64_wd = {0.32653061224489793, 0.24489795918367346},
  h_decreasing = {0.0},
  h3d = {0.8999999165534973, 0.0, 0.5999999642372131},
  h3d_e = {0.5, 1.1666667461395264, 1.8333332538604736, 2.5},
  h_f32_e = {0.10000000149011612, 0.29999998211860657, 0.5, 0.699999988079071},
  h_f32 = {2.0, 2.0, 1.0},
  h_f64_e = {0.1, 0.3, 0.5, 0.7},
  h_edges = {1.0, 0.0, 2.0},
  h_edges_e = {-1.0, 0.3333333730697632, 1.6666666269302368, 3.0},
  h_out_d = {NAN, NAN},
  h_nan_bins = {{0.0, 1.0, 1.0}, {0.0, 1.0, 2.0}, {1.0, 0.0, 1.0}}, -- NaN in the last bin
  -- np.unravel_index (+1)
  ur = {{1, 2, 2, 3, 2}, {1, 2, 1, 4, 4}},
  ur3 = {{1, 1, 2, 2}, {1, 2, 3, 2}, {1, 2, 4, 2}},
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

describe("select_scatter, slice_scatter, diagonal_scatter", function()
  it("select_scatter fills one slice, as torch", function()
    local a = pt.zeros(2, 3)
    same(pt.select_scatter(a, pt.ones(3), 1, 1), R.ss_row)
    same(a:select_scatter(pt.ones(2), 2, -1), R.ss_col)
    local r = pt.select_scatter(a, pt.ones(3, F64), 1, 1)
    assert.are.equal("float32", r:dtype())
    same(r, R.ss_row)
    same(a, {{0, 0, 0}, {0, 0, 0}}) -- a copy: t is unchanged
  end)

  it("slice_scatter fills a strided slice with 1-based inclusive bounds, clamped as torch", function()
    local a = pt.zeros(8, 2)
    same(pt.slice_scatter(a, pt.ones(2, 2), 1, 7, 8), R.sl_tail)
    same(pt.slice_scatter(a, pt.ones(2, 2), {start = 7}), R.sl_tail)
    same(pt.slice_scatter(a, pt.ones(2, 2), {start = 7, ["end"] = 100}), R.sl_tail)
    same(a:slice_scatter(pt.ones(4, 2), 1, 1, 8, 2), R.sl_step)
    same(a:slice_scatter(pt.ones(4, 2), {step = 2}), R.sl_step)
    same(pt.slice_scatter(a, pt.ones(3, 2), {start = 2, ["end"] = 6, step = 2}), R.sl_mid)
    same(pt.slice_scatter(a, pt.ones(8, 1), {dim = 2, start = 2}), R.sl_dim2)
    same(pt.slice_scatter(a, pt.ones(3, 2), {start = -3}), R.sl_neg)
    same(pt.slice_scatter(a, pt.ones(3, 2), {start = -3, ["end"] = -1}), R.sl_neg)
    same(pt.slice_scatter(a, pt.ones(0, 2), {start = 7, ["end"] = 2}), pt.zeros(8, 2))
    same(pt.slice_scatter(a, pt.full({8, 2}, 3)), pt.full({8, 2}, 3))
  end)

  it("diagonal_scatter fills a diagonal, as torch", function()
    local a = pt.zeros(3, 3)
    same(pt.diagonal_scatter(a, pt.ones(3)), R.ds_main)
    same(a:diagonal_scatter(pt.ones(2), 1), R.ds_up)
    same(a:diagonal_scatter(pt.ones(2), {offset = -1}), R.ds_down)
    same(pt.diagonal_scatter(pt.zeros(2, 3, 4), pt.arange(1, 7):float():reshape(3, 2), 0, 1, 3), R.ds_3d)
    same(pt.diagonal_scatter(a, pt.ones(0), 5), pt.zeros(3, 3))
  end)

  it("pass gradcheck for both inputs", function()
    assert.is_true(gradcheck(function(x, s) return x:select_scatter(s, 2, -1) end,
                             {D({{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}}), D({-1, -2, -3})}))
    assert.is_true(gradcheck(function(x, s) return x:slice_scatter(s, 1, 2, 6, 2) end,
                             {pt.randn(7, 2, F64), pt.randn(3, 2, F64)}))
    assert.is_true(gradcheck(function(x, s) return x:diagonal_scatter(s, 1) end, {pt.randn(3, 4, F64), pt.randn(3, F64)}))
    assert.is_true(gradcheck(function(x, s) return pt.diagonal_scatter(x, s, -1, 3, 1) end,
                             {pt.randn(3, 2, 4, F64), pt.randn(2, 3, F64)}))
    -- the gradient of t is zero on the filled part, src gets the rest
    local x, s = pt.zeros(2, 3, F64), pt.zeros(3, F64)
    x.requires_grad, s.requires_grad = true, true
    local y = pt.select_scatter(x, s, 1, 2) * D({{1, 2, 3}, {4, 5, 6}})
    y:sum():backward()
    same(x.grad, {{1, 2, 3}, {0, 0, 0}})
    same(s.grad, {4, 5, 6})
  end)

  it("agree with a copy written through the view, for many dims, offsets, bounds and steps", function()
    local function through_view(t, src, view)
      local out = t:clone()
      view(out):copy_(src)
      return out
    end
    local t = pt.randn(3, 4, 5)
    for d = -3, 3 do
      if d ~= 0 then
        local n = t:size(d)
        for i = -n, n do
          if i ~= 0 then
            local src = pt.randn(t:select(d, i):size())
            same(t:select_scatter(src, d, i), through_view(t, src, function(o) return o:select(d, i) end))
          end
        end
        for start = 1, n do
          for stop = start, n do
            for step = 1, 3 do
              local key = {}
              for k = 1, (d > 0 and d or d + 4) - 1 do key[k] = {} end
              key[#key + 1] = {start, stop, step}
              local src = pt.randn(t[key]:size())
              same(t:slice_scatter(src, d, start, stop, step), through_view(t, src, function(o) return o[key] end))
            end
          end
        end
      end
    end
    for _, dims in ipairs({{1, 2}, {2, 1}, {1, 3}, {3, 1}, {2, 3}, {-1, -3}}) do
      for offset = -5, 5 do
        local src = pt.randn(t:diagonal(offset, dims[1], dims[2]):size())
        same(t:diagonal_scatter(src, offset, dims[1], dims[2]),
             through_view(t, src, function(o) return o:diagonal(offset, dims[1], dims[2]) end))
      end
    end
    -- integer t: src converted as copy_ converts
    same(L({{1, 2}, {3, 4}}):select_scatter(pt.tensor({7.9, -7.9}), 1, 2), {{1, 2}, {7, -7}})
  end)

  it("have second derivatives (create_graph)", function()
    local x, s, w = pt.randn(3, 4, F64), pt.randn(3, F64), pt.randn(3, 4, F64)
    x.requires_grad, s.requires_grad = true, true
    local on_diag = pt.zeros(3, 4, F64):diagonal_scatter(pt.ones(3, F64), 1)
    local y = x:diagonal_scatter(s, 1)
    local gx, gs = table.unpack(pt.autograd.grad((y * y * y * w):sum(), {x, s}, {create_graph = true}))
    local hx, hs = table.unpack(pt.autograd.grad(gx:sum() + gs:sum(), {x, s}))
    close(hs, (s * w:diagonal(1) * 6):detach(), 1e-12)
    close(hx, (x * w * (1 - on_diag) * 6):detach(), 1e-12)
    local v = pt.randn(2, 5, F64)
    v.requires_grad = true
    local r = pt.randn(2, 2, F64)
    r.requires_grad = true
    local z = v:slice_scatter(r, 2, 2, 5, 2)
    local gr = pt.autograd.grad((z * z * z):sum(), {r}, {create_graph = true})[1]
    close(pt.autograd.grad(gr:sum(), {r})[1], (r * 6):detach(), 1e-12)
    local q = pt.randn(2, 3, F64)
    q.requires_grad = true
    local gq = pt.autograd.grad((q:select_scatter(pt.zeros(3, F64), 1, 1) ^ 3):sum(), {q}, {create_graph = true})[1]
    close(pt.autograd.grad(gq:sum(), {q})[1], (q * 6 * D({{0, 0, 0}, {1, 1, 1}})):detach(), 1e-12)
  end)

  it("report bad arguments", function()
    local a = pt.zeros(2, 3)
    assert_error("select_scatter: index 4 out of range for dimension 2 of size 3", pt.select_scatter, a, pt.ones(2), 2, 4)
    assert_error("select_scatter: index 0 out of range for dimension 1 of size 2", pt.select_scatter, a, pt.ones(3), 1, 0)
    assert_error("select_scatter: src must have the shape of the slice it fills, {2}, got {3}", pt.select_scatter, a,
                 pt.ones(3), 2, 1)
    assert_error("select_scatter: dimension 3 out of range (tensor has 2 dimensions)", pt.select_scatter, a, pt.ones(3), 3, 1)
    assert_error("select_scatter: cannot be applied to a 0-d tensor", pt.select_scatter, pt.tensor(1.0), pt.tensor(2.0), 1, 1)
    assert_error("select_scatter: src must be a tensor, got number", pt.select_scatter, a, 1, 1, 1)
    local b = pt.zeros(8, 2)
    assert_error("slice_scatter: src must have the shape of the slice it fills, {2,2}, got {3,2}", pt.slice_scatter, b,
                 pt.ones(3, 2), {start = 7})
    assert_error("slice_scatter: step must be positive, got 0", pt.slice_scatter, b, pt.ones(2, 2), {step = 0})
    assert_error("slice_scatter: start 0 is no position (1-based, negative from the end)", pt.slice_scatter, b,
                 pt.ones(2, 2), {start = 0})
    assert_error("slice_scatter: cannot be applied to a 0-d tensor", pt.slice_scatter, pt.tensor(1.0), pt.tensor(2.0))
    assert_error("slice_scatter: unknown option 'stop' (options: dim, start, end, step)", pt.slice_scatter, b,
                 pt.ones(2, 2), {stop = 2})
    assert_error("slice_scatter: end must be an integer, got 2.5", pt.slice_scatter, b, pt.ones(2, 2), 1, 1, 2.5)
    assert_error("diagonal_scatter: src must have the shape of the slice it fills, {2}, got {3}", pt.diagonal_scatter,
                 pt.zeros(3, 3), pt.ones(3), 1)
    assert_error("diagonal_scatter: dim1 and dim2 must be different dimensions, got 1 and 1", pt.diagonal_scatter,
                 pt.zeros(3, 3), pt.ones(3), 0, 1, 1)
    assert_error("diagonal_scatter: expects a tensor with at least 2 dimensions, got 1", pt.diagonal_scatter,
                 pt.zeros(3), pt.ones(3))
    assert_error("diagonal_scatter: unexpected argument #4 (number)", pt.diagonal_scatter, pt.zeros(3, 3), pt.ones(3),
                 {offset = 0}, 1)
  end)
end)

describe("addr", function()
  local M, v1, v2 = pt.tensor({{1.0, 2, 3}, {4, 5, 6}}), pt.tensor({1.0, 2}), pt.tensor({1.0, 0, -1})

  it("adds the scaled outer product, as torch", function()
    same(pt.addr(M, v1, v2), R.addr)
    same(M:addr(v1, v2, {beta = 0.5, alpha = 2}), R.addr_ba)
    same(pt.addr(pt.tensor({{NAN}}):expand(2, 3), v1, v2, {beta = 0}), R.addr_b0)
    same(pt.addr(pt.tensor({1.0, 2, 3}), v1, v2), R.addr_bc)
    same(pt.addr(pt.tensor(2.0), v1, v2), R.addr_0d)
    same(pt.addr(M:long(), v1:long(), v2:long(), {beta = 2, alpha = 3}), R.addr_int)
    assert.are.equal("int64", pt.addr(M:long(), v1:long(), v2:long()):dtype())
    assert.are.equal("float64", pt.addr(M, v1:double(), v2):dtype())
    assert.are.equal("float32", pt.addr(M:long(), v1, v2):dtype())
    assert.are.equal("int64", pt.addr(M:int(), v1:long(), v2:int()):dtype())
    assert.are.equal("int64", pt.addr(M:byte(), v1:long(), v2:int()):dtype())
  end)

  it("is logical for bool tensors", function()
    local B, b1, b2 = M:bool(), v1:bool(), v2:bool()
    same(pt.addr(B, b1, b2), R.addr_bool)
    same(pt.addr(B, b1, b2, {beta = false}), R.addr_bool_b)
    same(pt.addr(B, b1, b2, {alpha = 0}), R.addr_bool)
    same(pt.addr(B, b1, b2, {beta = 2}), R.addr_bool)
  end)

  it("passes gradcheck for all three inputs, and works in place", function()
    assert.is_true(gradcheck(function(m, a, b) return m:addr(a, b, {beta = 0.5, alpha = -2}) end,
                             {pt.randn(3, 1, F64), pt.randn(3, F64), pt.randn(4, F64)}))
    assert.is_true(gradcheck(function(m, a, b) return pt.addr(m, a, b) end,
                             {pt.randn(2, 3, F64), pt.randn(2, F64), pt.randn(3, F64)}))
    local t = M:clone()
    assert.are.equal(t, t:addr_(v1:double(), v2))
    same(t, R.addr)
  end)

  it("reports bad arguments", function()
    assert_error("addr: input of shape {2} cannot be broadcast to {2,3}", pt.addr, pt.tensor({1.0, 2}), v1, v2)
    assert_error("addr: expected a 1-D vec1, got shape {2,1}", pt.addr, M, v1:reshape(2, 1), v2)
    assert_error("addr: expected a 1-D vec2, got shape {1,3}", pt.addr, M, v1, v2:reshape(1, 3))
    assert_error("addr: for integer and bool tensors, alpha must not be a floating point number, got 1.5", pt.addr,
                 M:long(), v1:long(), v2:long(), {alpha = 1.5})
    assert_error("addr: for integer and bool tensors, beta must not be a floating point number, got 1.5", pt.addr,
                 M:long(), v1:long(), v2:long(), {beta = 1.5})
    assert_error("addr: for integer and bool tensors, alpha must not be a floating point number, got 0.5", pt.addr,
                 M:bool(), v1:bool(), v2:bool(), {alpha = 0.5})
    assert_error("addr: boolean beta only supported for bool results, got float32", pt.addr, M, v1, v2, {beta = true})
    assert_error("addr: boolean alpha only supported for bool results, got int64", pt.addr, M:long(), v1:long(),
                 v2:long(), {alpha = false})
    assert_error("addr: unknown option 'gamma' (options: beta, alpha)", pt.addr, M, v1, v2, {gamma = 1})
    assert_error("addr: bad argument #3 (Tensor expected, got nil)", pt.addr, M, v1)
    assert_error("addr_: result type float32 can't be cast to the desired output type int64", M:long().addr_, M:long(),
                 v1, v2)
    assert_error("addr_: output with shape {1,3} doesn't match the broadcast shape {2,3}", pt.ones(1, 3).addr_,
                 pt.ones(1, 3), v1, v2)
  end)
end)

describe("index_reduce", function()
  local x = pt.tensor({{1.0, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}})
  local src = pt.tensor({{2.0, 3, 4}, {5, 6, 7}, {8, 9, 10}})
  local idx = L({1, 3, 1})

  it("reduces slices by prod, mean, amax and amin, with or without self, as torch", function()
    for _, r in ipairs({"prod", "mean", "amax", "amin"}) do
      same(x:index_reduce(1, idx, src, r), R.ir[r][1])
      same(x:index_reduce(1, idx, src, r, {include_self = true}), R.ir[r][1])
      same(pt.index_reduce(x, 1, idx, src, r, {include_self = false}), R.ir[r][2])
    end
    same(x:index_reduce(2, L({3, 3}), pt.tensor({{1.0, 5}, {2, 6}, {3, 7}, {4, 8}}), "amax"), R.ir_dim2)
    same(pt.tensor({1.0, NAN, 3}):index_reduce(1, L({1, 2, 3}), pt.tensor({NAN, 2.0, 1.0}), "amax"), R.ir_nan)
    same(pt.tensor(5.0):index_reduce(1, L({1, 1}), pt.tensor({2.0, 3}), "prod"), 30.0)
  end)

  it("floors integer means and wraps uint8, as torch", function()
    same(x:long():index_reduce(1, idx, src:long(), "mean"), R.ir_int_mean)
    same(L({0}):index_reduce(1, L({1, 1}), L({-4, 1}), "mean", {include_self = false}), R.ir_int_floor)
    same(pt.tensor({1, 2}, {dtype = "uint8"}):index_reduce(1, L({1, 1}), pt.tensor({200, 101}, {dtype = "uint8"}), "mean"),
         R.ir_u8_mean)
  end)

  it("has torch's gradients for self and source", function()
    local w = pt.arange(0, 12):double():reshape(4, 3)
    for _, r in ipairs({"prod", "mean", "amax", "amin"}) do
      local a, b = x:double(), src:double()
      a.requires_grad, b.requires_grad = true, true
      local y = a:index_reduce(1, idx, b, r) * w
      y:sum():backward()
      close(a.grad, R.ir_grad[r][1], 1e-12)
      close(b.grad, R.ir_grad[r][2], 1e-12)
    end
    for _, r in ipairs({"amax", "prod"}) do
      for k, inc in ipairs({true, false}) do
        local a, b = D({{1, 5}, {2, 0}}), D({{5, 0}, {3, 5}, {0, 2}})
        a.requires_grad, b.requires_grad = true, true
        local out = a:index_reduce(1, L({1, 1, 2}), b, r, {include_self = inc})
        same(out, R.ir_tie[r][k][1])
        local y = out * D({{1, 2}, {3, 4}})
        y:sum():backward()
        same(a.grad, R.ir_tie[r][k][2])
        same(b.grad, R.ir_tie[r][k][3])
      end
    end
    for _, r in ipairs({"prod", "mean", "amax", "amin"}) do
      for _, inc in ipairs({true, false}) do
        assert.is_true(gradcheck(function(a, b) return a:index_reduce(1, idx, b, r, {include_self = inc}) end,
                                 {pt.randn(4, 3, F64), pt.randn(3, 3, F64)}))
      end
    end
  end)

  it("works in place", function()
    local t = x:clone()
    assert.are.equal(t, t:index_reduce_(1, idx, src, "amin", {include_self = false}))
    same(t, R.ir.amin[2])
  end)

  it("reports bad arguments", function()
    assert_error("index_reduce: reduce must be one of prod, mean, amax or amin, got 'sum'", x.index_reduce, x, 1, idx,
                 src, "sum")
    assert_error("index_reduce: source must have the tensor's dtype (float32), got float64", x.index_reduce, x, 1, idx,
                 src:double(), "prod")
    assert_error("index_reduce_: source must have the tensor's dtype (float32), got float64", x:clone().index_reduce_,
                 x:clone(), 1, idx, src:double(), "amin")
    assert_error("index_reduce: index must be an int64 tensor, got float32", x.index_reduce, x, 1, idx:float(), src, "prod")
    assert_error("index_reduce: index 5 out of range for dimension 1 of size 4", x.index_reduce, x, 1, L({1, 5, 1}), src,
                 "prod")
    assert_error("index_reduce: index must be a 0-D or 1-D tensor, got shape {1,3}", x.index_reduce, x, 1,
                 L({{1, 2, 2}}), src, "prod")
    assert_error("index_reduce: source of shape {3,3} must have the tensor's shape {4,3} but 2 slices along dimension 1 "
                 .. "(one per index)", x.index_reduce, x, 1, L({1, 2}), src, "prod")
    assert_error("index_reduce: dimension 3 out of range (tensor has 2 dimensions)", x.index_reduce, x, 3, idx, src, "prod")
    assert_error("index_reduce: not implemented for bool tensors", pt.index_reduce, pt.tensor({true, false}), 1,
                 L({1, 2}), pt.tensor({false, true}), "amax")
    assert_error("index_reduce: unknown option 'inc' (options: include_self)", x.index_reduce, x, 1, idx, src, "prod",
                 {inc = true})
    assert_error("index_reduce: include_self must be a boolean, got number", x.index_reduce, x, 1, idx, src, "prod",
                 {include_self = 1})
  end)
end)

describe("histogram", function()
  local x = pt.tensor({1.0, 2, 1, 4, 2.5, 0.5})

  it("counts over equal bins, as torch.histogram", function()
    local h, e = pt.histogram(x, 4)
    assert.are.equal("float32", h:dtype())
    same(h, R.h4)
    same(e, R.h4_e)
    h, e = x:histogram(4, {range = {0, 3}})
    same(h, R.h4_range)
    same(e, R.h4_range_e)
    same((pt.histogram(x, 4, {weight = pt.tensor({1.0, 2, 3, 4, 5, 6})})), R.h4_w)
    close((pt.histogram(x, 4, {density = true})), R.h4_d)
    close((pt.histogram(x, 4, {weight = pt.tensor({1.0, 2, 3, 4, 5, 6}), density = true})), R.h4_wd)
    close((pt.histogram(x, 4, {range = {0, 3}, density = true})), R.h4_range_d)
    h, e = pt.histogram(x, 3, {range = {0.5, 2.5}, density = true})
    close(h, R.h3d)
    same(e, R.h3d_e)
    h, e = pt.histogram(pt.tensor({-0.5, 3.0, 2.99999}), 3, {range = {-1, 3}})
    same(h, R.h_edges)
    same(e, R.h_edges_e)
    -- float32 edges by torch's linspace formula (float32 arithmetic)
    h, e = pt.histogram(pt.tensor({0.1, 0.2, 0.3, 0.4, 0.7}), 3)
    same(h, R.h_f32)
    same(e, R.h_f32_e)
    h, e = pt.histogram(pt.tensor({0.1, 0.2, 0.3, 0.4, 0.7}, F64), 3)
    same(h, R.h_f32)
    close(e, R.h_f64_e, 1e-15)
    h, e = pt.histogram(x:double(), 2)
    assert.are.equal("float64", e:dtype())
    same(h, R.h64)
    same(e, R.h64_e)
    close((pt.histogram(x:double(), 2, {weight = D({0.5, 1, 1.5, 2, 2.5, 3}), density = true})), R.h64_wd, 1e-15)
    -- default 100 bins; a weight of the input's element count in another shape
    h, e = x:histogram()
    assert.are.equal(100, h:numel())
    assert.are.equal(101, e:numel())
    same(h:sum(), 6.0)
    same((x:reshape(2, 3):histogram(2, {weight = pt.ones(3, 2)})), R.h64)
  end)

  it("takes the edges as a tensor", function()
    local edges = pt.tensor({0.0, 1, 2.5, 5})
    local h, e = pt.histogram(x, edges)
    same(h, R.hb)
    same(e, edges)
    close((x:histogram(edges, {density = true})), R.hb_d)
    same((pt.histogram(x, pt.tensor({3.0, 1}))), R.h_decreasing)
    same((pt.histogram(pt.tensor({5.0}), pt.tensor({0.0, 1, 2}), {density = true})), R.h_out_d)
  end)

  it("widens empty ranges and handles empty input and NaN as torch 1.13", function()
    local h, e = pt.histogram(pt.tensor({3.0, 3, 3}), 2)
    same(h, R.h_const)
    same(e, R.h_const_e)
    h, e = pt.histogram(pt.tensor({}), 2)
    same(h, R.h_empty)
    same(e, R.h_empty_e)
    h, e = pt.histogram(x, 2, {range = {1, 1}})
    same(h, R.h_flat_range)
    same(e, R.h_flat_range_e)
    -- torch 1.13's bin search counts NaN in the last bin
    local edges = pt.tensor({0.0, 1, 2, 3})
    for k, xs in ipairs({{1.0, NAN}, {NAN, 1.0, 3.0}, {0.2, NAN}}) do
      same((pt.histogram(pt.tensor(xs), edges)), R.h_nan_bins[k])
      -- the same with equal bins over the same edges
      same((pt.histogram(pt.tensor(xs), 3, {range = {0, 3}})), R.h_nan_bins[k])
    end
  end)

  it("has no gradient", function()
    local t = D({1, 2, 3})
    t.requires_grad = true
    local h, e = t:histogram(2)
    assert.is_false(h.requires_grad)
    assert.is_false(e.requires_grad)
  end)

  it("reports bad arguments", function()
    assert_error("histogram: range [nan, nan] is not finite", pt.histogram, pt.tensor({1.0, NAN}), 2)
    assert_error("histogram: range [1, inf] is not finite", pt.histogram, pt.tensor({1.0, INF}), 2)
    assert_error("histogram: range [0, inf] is not finite", pt.histogram, x, 2, {range = {0, INF}})
    assert_error("histogram: bins must be > 0, got 0", pt.histogram, x, 0)
    assert_error("histogram: bins must be > 0, got -1", pt.histogram, x, -1)
    assert_error("histogram: min should not exceed max, got min 3 and max 1", pt.histogram, x, 2, {range = {3, 1}})
    assert_error("histogram: expected a float32 or float64 input, got int64", pt.histogram, x:long(), 2)
    assert_error("histogram: bins must have the input's dtype (float32), got float64", pt.histogram, x,
                 pt.tensor({0.0, 1}, F64))
    assert_error("histogram: bins must be a 1-D tensor of edges, got shape {2,2}", pt.histogram, x,
                 pt.tensor({{0.0, 1}, {2.5, 5}}))
    assert_error("histogram: bins must hold at least 2 edges (one bin), got 1", pt.histogram, x, pt.tensor({3.0}))
    assert_error("histogram: range cannot be given with a tensor of bin edges", pt.histogram, x, pt.tensor({0.0, 1}),
                 {range = {0, 1}})
    assert_error("histogram: weight must have as many elements as the input (6), got shape {2}", pt.histogram, x, 2,
                 {weight = pt.tensor({1.0, 2})})
    assert_error("histogram: weight must have the input's dtype (float32), got int64", pt.histogram, x, 2,
                 {weight = L({1, 1, 1, 1, 1, 1})})
    assert_error("histogram: range must be a list of two numbers {min, max}, got table", pt.histogram, x, 2,
                 {range = {0}})
    assert_error("histogram: bins must be a number or a tensor of bin edges, got string", pt.histogram, x, "auto")
    assert_error("histogram: unknown option 'bins' (options: range, weight, density)", pt.histogram, x, {bins = 3})
  end)
end)

describe("unravel_index", function()
  it("turns 1-based flat positions into 1-based coordinates (NumPy's numbers + 1)", function()
    local r, c = pt.unravel_index(L({1, 6, 5, 12, 8}), {3, 4})
    assert.are.equal("int64", r:dtype())
    same(r, R.ur[1])
    same(c, R.ur[2])
    local a, b, cc = pt.unravel_index(L({1, 6, 24, 18}), {2, 3, 4})
    same(a, R.ur3[1])
    same(b, R.ur3[2])
    same(cc, R.ur3[3])
    -- indices' shape is kept, a number is a 1-D shape, negative positions count from the end
    local only = pt.unravel_index(pt.tensor({{3, 4}}, {dtype = "int32"}), 5)
    assert.are.same({1, 2}, only:size())
    same(only, {{3, 4}})
    local nr, nc = pt.unravel_index(L({-1, -12}), {3, 4})
    same(nr, {3, 1})
    same(nc, {4, 1})
    local sr = pt.unravel_index(L(5), {3, 4})
    assert.are.equal(0, sr:dim())
    same(sr, 2)
    assert.are.equal(0, select("#", pt.unravel_index(L({1}), {})))
    local er, ec = pt.unravel_index(pt.zeros(0, I64), {0, 3})
    assert.are.same({0}, er:size())
    assert.are.same({0}, ec:size())
  end)

  it("reports bad arguments", function()
    assert_error("unravel_index: index 13 is out of bounds for shape {3,4} (1..12, or -12..-1 from the end)",
                 pt.unravel_index, L({1, 13}), {3, 4})
    assert_error("unravel_index: index 0 is out of bounds for shape {3,4} (1..12, or -12..-1 from the end)",
                 pt.unravel_index, L({0}), {3, 4})
    assert_error("unravel_index: index -13 is out of bounds for shape {3,4} (1..12, or -12..-1 from the end)",
                 pt.unravel_index, L({-13}), {3, 4})
    assert_error("unravel_index: indices must be an integer tensor, got float32", pt.unravel_index, pt.tensor({1.0}), 5)
    assert_error("unravel_index: indices must be an integer tensor, got bool", pt.unravel_index, pt.tensor({true}), 5)
    assert_error("unravel_index: indices must be an integer tensor, got number", pt.unravel_index, 3, 5)
    assert_error("unravel_index: shape cannot have negative sizes, got {-1,5}", pt.unravel_index, L({1}), {-1, 5})
    assert_error("unravel_index: shape must be a number or a list of sizes, got string", pt.unravel_index, L({1}), "3")
    assert_error("unravel_index: size must be an integer, got 2.5", pt.unravel_index, L({1}), {2.5})
  end)
end)

describe("apply, map, map2 (Torch7)", function()
  it("apply replaces elements in row-major order where fn returns a value", function()
    local t = pt.tensor({{1.0, 2}, {3, 4}})
    assert.are.equal(t, t:apply(function(v) if v > 2 then return v * 10 end end))
    same(t, {{1, 2}, {30, 40}})
    -- a transposed view: visited in its own row-major order, written through to the storage
    local base = pt.tensor({{1.0, 2}, {3, 4}})
    local seen = {}
    base:t():apply(function(v)
      seen[#seen + 1] = v
      return v + #seen * 100
    end)
    assert.are.same({1, 3, 2, 4}, seen)
    same(base, {{101, 302}, {203, 404}})
    same(pt.tensor(3.0):apply(function(v) return v * 2 end), 6.0)
    same(pt.tensor({true, false}):apply(function(v) return not v end), {false, true})
    local empty = pt.zeros(0)
    assert.are.equal(empty, empty:apply(function() error("not called") end))
  end)

  it("map and map2 read the others at the same flat position", function()
    local t = L({1, 2, 3})
    t:map(pt.tensor({10.0, 20, 30}), function(a, b) return a + b + 0.5 end)
    same(t, {11, 22, 33}) -- converted to int64 as copy_ converts
    local m = pt.zeros(2, 2)
    m:map2(pt.ones(4), pt.arange(1, 5), function(a, b, c) return a + b * c end)
    same(m, {{1, 2}, {3, 4}})
    local keep = pt.tensor({5.0, 6})
    keep:map(pt.tensor({1.0, -1}), function(a, b) if b > 0 then return b end end)
    same(keep, {1, 6})
  end)

  it("change the values of a tensor that requires grad only through a detached alias", function()
    local t = pt.zeros(2)
    t.requires_grad = true
    t:detach():apply(function() return 5 end)
    same(t, {5, 5})
  end)

  it("report bad arguments", function()
    local t = pt.zeros(2, 2)
    assert_error("map: the tensors must have the same number of elements, got 4 and 3 (argument #2)", t.map, t,
                 pt.ones(3), function(_, b) return b end)
    assert_error("map2: the tensors must have the same number of elements, got 4 and 5 (argument #3)", t.map2, t,
                 pt.ones(4), pt.ones(5), function() end)
    assert_error("apply: the function returned a string for element 1 (a number or nil expected)", t.apply, t,
                 function() return "x" end)
    assert_error("apply: the function returned a boolean for element 1 (a number or nil expected)", t.apply, t,
                 function() return true end)
    assert_error("apply: bad argument #2 (function expected, got number)", t.apply, t, 3)
    assert_error("map: bad argument #3 (function expected, got nil)", t.map, t, pt.ones(4))
    assert_error("apply: more than one element of the written-to tensor refers to a single memory location "
                 .. "(an expanded tensor): clone() it first", pt.Tensor.apply, pt.zeros(1):expand(3), function() return 1 end)
    local g = pt.zeros(2)
    g.requires_grad = true
    local msg = "requires grad; Lua callbacks run outside autograd (call it on t:detach(), which shares the storage)"
    assert_error("apply: the tensor " .. msg, g.apply, g, function() return 1 end)
    assert_error("map: argument #2 " .. msg, pt.Tensor.map, pt.zeros(2), g, function() return 1 end)
    assert_error("map2: argument #3 " .. msg, pt.Tensor.map2, pt.zeros(2), pt.zeros(2), g * 2, function() return 1 end)
  end)
end)
