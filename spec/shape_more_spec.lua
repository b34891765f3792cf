-- Shapes and indexing forms a PyTorch user expects: movedim/moveaxis, swapaxes/swapdims,
-- repeat_interleave, tile, diff, cross, diagonal, unfold, pt.einsum and nn.functional.pad /
-- interpolate. Expected values (REF, REF2) were computed with PyTorch 1.13 (/usr/bin/python3) on
-- the same inputs and hard-coded here, with indices shifted to partrain's 1-based ones.
local pt = require "partrain"
local gradcheck = require "spec.gradcheck"
local F = require("partrain.nn").functional

local flat = require("spec.support").flat

-- ((i * 7) % 11 - 5) / 2 for i = 0..n-1 (torch: the same formula), float32
local function vals(...)
  local shape, n = {...}, 1
  for _, s in ipairs(shape) do n = n * s end
  local v = {}
  for i = 0, n - 1 do v[i + 1] = ((i * 7) % 11 - 5) / 2 end
  return pt.tensor(v):reshape(shape)
end

local function range(...)
  local n = 1
  for _, s in ipairs({...}) do n = n * s end
  return pt.arange(n, {dtype = "float32"}):view(...)
end

local function randn64(...) return pt.randn({...}, {dtype = "float64"}) end
local function i64(v) return pt.tensor(v, {dtype = "int64"}) end

-- t has the shape and values of the nested table expected (within tol, exact by default)
local function same(expected, t, tol)
  assert.is_true(pt.is_tensor(t), "expected a tensor")
  local function shape_of(v)
    local s = {}
    while type(v) == "table" do
      s[#s + 1] = #v
      v = v[1]
    end
    return s
  end
  if type(expected) == "table" and #flat(expected) > 0 then assert.are.same(shape_of(expected), t:size()) end
  local a, b = flat(t:tolist()), flat(type(expected) == "table" and expected or {expected})
  assert.are.equal(#b, #a)
  for i = 1, #a do
    local x, y = a[i], b[i]
    local ok = x == y or (tol and type(y) == "number" and math.abs(x - y) <= tol * (1 + math.abs(y)))
    if not ok then error(string.format("element %d: got %s, expected %s", i, tostring(x), tostring(y)), 2) end
  end
end

-- the message must be exactly msg after a "spec/shape_more_spec.lua:<line>: " position (the
-- caller's line, not one in partrain's own modules)
local function assert_error(msg, f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error: " .. msg)
  err = tostring(err)
  local at = err:find(msg, 1, true)
  assert(at, "expected error '" .. msg .. "', got '" .. err .. "'")
  assert.are.equal(msg, err:sub(at))
  assert(err:sub(1, at - 1):match("shape_more_spec%.lua:%d+: $"), "unexpected prefix in '" .. err .. "'")
end

local REF = {
  movedim_1_3 = {{{0, 12}, {1, 13}, {2, 14}, {3, 15}}, {{4, 16}, {5, 17}, {6, 18}, {7, 19}}, {{8, 20}, {9, 21}, {10, 22}, {11, 23}}},
  movedim_list = {{{0, 12}, {1, 13}, {2, 14}, {3, 15}}, {{4, 16}, {5, 17}, {6, 18}, {7, 19}}, {{8, 20}, {9, 21}, {10, 22}, {11, 23}}},
  movedim_neg = {{{-2.5, 0.5, -2}, {1, -1.5, 1.5}}, {{1, -1.5, 1.5}, {-1, 2, -0.5}}, {{-1, 2, -0.5}, {2.5, 0, -2.5}}, {{2.5, 0, -2.5}, {0.5, -2, 1}}},
  ri_2 = {1, 1, 2, 2, 3, 3, 4, 4},
  ri_t_dim1 = {{1, 2}, {3, 4}, {3, 4}},
  ri_t_dim2 = {{1, 1, -1, 2.5, 2.5, 2.5}, {-1.5, -1.5, 2, 0, 0, 0}, {1.5, 1.5, -0.5, -2.5, -2.5, -2.5}},
  ri_counts = {1, 1, 3, 4, 4, 4},
  ri_3_dim2 = {{-2.5, -2.5, -2.5, 1, 1, 1, -1, -1, -1, 2.5, 2.5, 2.5}, {0.5, 0.5, 0.5, -1.5, -1.5, -1.5, 2, 2, 2, 0, 0, 0}, {-2, -2, -2, 1.5, 1.5, 1.5, -0.5, -0.5, -0.5, -2.5, -2.5, -2.5}},
  diff_1 = {{{3.5, -2, 3.5}, {-2, 3.5, -2}, {3.5, -2, -2}}, {{-2, 3.5, -2}, {3.5, -2, -2}, {-2, -2, 3.5}}},
  diff_2_dim1 = {{{-5.5, 5.5, -5.5, 0}}, {{5.5, -5.5, 0, 5.5}}},
  diff_dim0 = {{{3.5, -2, 3.5, -2}, {-2, 3.5, -2, -2}, {3.5, -2, -2, 3.5}}},
  diff_pa = {{-3.5, 3.5, -2, 3.5, -2, -0.25}, {-1.5, -2, 3.5, -2, 1, 1}, {-5, 3.5, -2, -2, 5.5, 1}},
  diff_bool = {true, false, true},
  diff_int = {-5, 9},
  tile_1 = {{-2.5, 1, -1, 2.5, -2.5, 1, -1, 2.5}, {0.5, -1.5, 2, 0, 0.5, -1.5, 2, 0}, {-2, 1.5, -0.5, -2.5, -2, 1.5, -0.5, -2.5}},
  tile_3 = {{{-2.5, 1, -2.5, 1}, {0.5, -1.5, 0.5, -1.5}, {-2, 1.5, -2, 1.5}}, {{-2.5, 1, -2.5, 1}, {0.5, -1.5, 0.5, -1.5}, {-2, 1.5, -2, 1.5}}},
  cross_default = {{2, 1.5, -3.5}, {2, -4, 2}},
  cross_dim1 = {{3, 6.25}, {-6, 1.25}, {3, 6.25}},
  cross_bcast = {{2, 1.5, -3.5}, {4, 8.5, 9.5}},
  cross_dim_last = {{1, 0.75, -1.75}, {1, -2, 1}, {1, -2, 1}},
}

local REF2 = {
  ein_mm = {{7.5, -6.75, 3.75, -5}, {-2.25, 0.25, 0, 10.75}},
  ein_implicit = {{7.5, -6.75, 3.75, -5}, {-2.25, 0.25, 0, 10.75}},
  ein_bmm = {{{2.25, -1}, {-6, 7.5}}, {{5, 5}, {3.75, 4}}},
  ein_t = {{-2.5, 2.5}, {1, 0.5}, {-1, -1.5}},
  ein_trace = -4,
  ein_diag = {-2.5, 0.5, -2},
  ein_outer = {{-1.25, -10}, {0.5, 4}, {-0.5, -4}},
  ein_sum = {0, 1.5, -2.5},
  ein_all = -1,
  ein_dot = 14.5,
  ein_ell = {{{{4.75, 1.5}, {-7.5, 6}}, {{-6.5, 4}, {4.75, 4.5}}, {{1.5, 1}, {6, -5.25}}}, {{{-6, 5}, {-4.5, 4}}, {{5, 5}, {5.25, 5.5}}, {{5, -6}, {4, -6.75}}}},
  ein_three = {{-20.125, -15}, {26.875, -1.625}},
  ein_bdiag = {{-2.5, 0.5, -2}, {1.5, -1, 2}},
  ein_mixed = {{5.25, 0}, {3.5, 1.75}, {1.75, 3.5}},
  ein_upper = {{7.5, -6.75, 3.75, -5}, {-2.25, 0.25, 0, 10.75}},
  ein_hadamard = {{3.75, 2, 0}, {8.75, 0.75, 0.75}},
  pad_const = {{{0, -2.5, 1, -1, 2.5, 0.5, 0, 0}, {0, -1.5, 2, 0, -2, 1.5, 0, 0}}},
  pad_const_v = {{{-1, -1, -1, -1, -1, -1}, {-1, -1, -1, -1, -1, -1}, {-2.5, 1, -1, 2.5, 0.5, -1}, {-1.5, 2, 0, -2, 1.5, -1}}},
  pad_crop = {{{-1, 2.5, 0.5, 0}, {0, -2, 1.5, 0}}},
  pad_crop2 = {{{9, -1.5, 2}}},
  pad_reflect = {{{2.5, -1, 1, -2.5, 1, -1, 2.5, 0.5, 2.5, -1}, {-2, 0, 2, -1.5, 2, 0, -2, 1.5, -2, 0}}},
  pad_reflect2d = {{{{1.5, -2, 1.5, -0.5, -2.5, -0.5, 1.5}, {-1.5, 0.5, -1.5, 2, 0, 2, -1.5}, {1, -2.5, 1, -1, 2.5, -1, 1}, {-1.5, 0.5, -1.5, 2, 0, 2, -1.5}, {1.5, -2, 1.5, -0.5, -2.5, -0.5, 1.5}, {-1.5, 0.5, -1.5, 2, 0, 2, -1.5}}}},
  pad_reflect_neg = {{{1, -1, 2.5, 0.5, 2.5, -1}, {2, 0, -2, 1.5, -2, 0}}},
  pad_replicate = {{{-2.5, -2.5, -2.5, 1, -1, 2.5, 0.5, 0.5, 0.5, 0.5}, {-1.5, -1.5, -1.5, 2, 0, -2, 1.5, 1.5, 1.5, 1.5}}},
  pad_replicate2d = {{{-2.5, -2.5, 1, -1, 2.5}, {0.5, 0.5, -1.5, 2, 0}, {-2, -2, 1.5, -0.5, -2.5}, {-2, -2, 1.5, -0.5, -2.5}, {-2, -2, 1.5, -0.5, -2.5}}},
  pad_circular = {{{2.5, 0.5, -2.5, 1, -1, 2.5, 0.5, -2.5, 1, -1, 2.5, 0.5}, {-2, 1.5, -1.5, 2, 0, -2, 1.5, -1.5, 2, 0, -2, 1.5}}},
  pad_circular2d = {{{{2.5, -2.5, 1, -1, 2.5, -2.5}, {0, 0.5, -1.5, 2, 0, 0.5}, {-2.5, -2, 1.5, -0.5, -2.5, -2}, {2.5, -2.5, 1, -1, 2.5, -2.5}, {0, 0.5, -1.5, 2, 0, 0.5}, {-2.5, -2, 1.5, -0.5, -2.5, -2}}}},
  pad_5d = {{{{{-2.5, -2.5, 1, -1}, {2.5, 2.5, 0.5, -1.5}, {2.5, 2.5, 0.5, -1.5}}, {{-2.5, -2.5, 1, -1}, {2.5, 2.5, 0.5, -1.5}, {2.5, 2.5, 0.5, -1.5}}, {{2, 2, 0, -2}, {1.5, 1.5, -0.5, -2.5}, {1.5, 1.5, -0.5, -2.5}}, {{2, 2, 0, -2}, {1.5, 1.5, -0.5, -2.5}, {1.5, 1.5, -0.5, -2.5}}}}},
  int_nearest_size = {{{-2.5, -2.5, 1, 1, -1, 2.5, 2.5, 0.5}, {-1.5, -1.5, 2, 2, 0, -2, -2, 1.5}}},
  int_nearest_sf = {{{-2.5, -2.5, 1, -1, -1, 2.5, 0.5}, {-1.5, -1.5, 2, 0, 0, -2, 1.5}}},
  int_nearest_down = {{{-2.5, 1, 2.5}, {-1.5, 2, -2}}},
  int_nearest_2x = {{{-2.5, -2.5, -2.5, 1, 1, -1, -1, 2.5, 2.5, 0.5}, {-1.5, -1.5, -1.5, 2, 2, 0, 0, -2, -2, 1.5}}},
  int_linear = {{{-2.5, -0.96875, 0.875, -0.375, 0.09375, 2.28125, 1.375, 0.5}, {-1.5, 0.03125, 1.875, 0.625, -0.625, -1.875, -0.03125, 1.5}}},
  int_linear_ac = {{{-2.5, -0.4999999, 0.7142856, -0.4285716, 4e-07, 2.0000005, 1.6428568, 0.5}, {-1.5, 0.5000001, 1.7142856, 0.5714284, -0.5714288, -1.714286, -0.4999995, 1.5}}},
  int_linear_sf = {{{-2.5, -0.75, 0.6666665, -0.6666667, 0.7500004, 2.1666665, 0.833333}, {-1.5, 0.25, 1.6666665, 0.3333333, -1.0000002, -1.4166663, 0.9166672}}},
  int_linear_rc = {{{-2.5, -0.4999999, 0.4285713, -0.9999998, 1.5000002, 1.642857, 0.5}, {-1.5, 0.5000001, 1.4285713, -1e-07, -1.4285716, -0.4999996, 1.5}}},
  int_linear_down = {{{-1.3333334, -0.9999999, 1.1666669}, {-0.3333334, 1e-07, 0.333333}}},
  int_linear_one = {{{-2.5}, {-1.5}}},
  int_linear_same = {{{-2.5, 1, -1, 2.5, 0.5}, {-1.5, 2, 0, -2, 1.5}}},
  int_n2d = {{{{-2.5, 1, -1}, {-2.5, 1, -1}, {0.5, -1.5, 2}, {0.5, -1.5, 2}, {-2, 1.5, -0.5}}, {{1, -1, 2.5}, {1, -1, 2.5}, {-1.5, 2, 0}, {-1.5, 2, 0}, {1.5, -0.5, -2.5}}}},
  int_bil = {{{{-1.9166666, -1e-07, 1.916667}, {-1.0833333, 0.1, 1.2833334}, {0.1666665, 0.2500002, 0.333333}, {-0.7833334, 0.4, -1.166667}, {-1.4166666, 0.4999999, -2.1666667}}, {{0.6666666, 0.7500002, 0.8333331}, {0.0333333, 0.8500001, -0.166667}, {-0.9166665, 0.9999998, -1.6666667}, {0.3333335, -0.5000004, -0.4166664}, {1.1666666, -1.5000001, 0.416667}}}},
  int_bil_ac = {{{{-2.5, 0, 2.5}, {-1, 0.125, 1.25}, {0.5, 0.25, 0}, {-0.75, 0.375, -1.25}, {-2, 0.5, -2.5}}, {{1, 0.75, 0.5}, {-0.25, 0.875, -0.75}, {-1.5, 1, -2}, {0, -0.25, -0.5}, {1.5, -1.5, 1}}}},
  int_bil_sf = {{{{-1.3333334, -0.9999999}, {-0.8872549, 0.1470589}, {-0.2009802, 1.9117647}, {-0.5392157, 0.602941}, {-0.8333334, -0.4999999}}, {{0.3333334, 2.4999998}, {0.0784314, 1.5441176}, {-0.3137256, 0.0735293}, {0.3186275, -1.3970588}, {0.8333334, -2.4999998}}}},
  int_n2d_sf = {{{{-2.5, 1}, {-2.5, 1}, {0.5, -1.5}, {0.5, -1.5}, {-2, 1.5}}, {{1, -1}, {1, -1}, {-1.5, 2}, {-1.5, 2}, {1.5, -0.5}}}},
  int_bil_2 = {{{{-2.5, -1.625, 0.125, 0.5, -0.5, -0.125, 1.625, 2.5}, {-1.75, -1.21875, -0.15625, 0.21875, -0.09375, 0.28125, 1.34375, 1.875}, {-0.25, -0.40625, -0.71875, -0.34375, 0.71875, 1.09375, 0.78125, 0.625}, {-0.125, -0.28125, -0.59375, -0.21875, 0.84375, 0.875, -0.125, -0.625}, {-1.375, -0.84375, 0.21875, 0.59375, 0.28125, -0.375, -1.375, -1.875}, {-2, -1.125, 0.625, 1, 0, -1, -2, -2.5}}, {{1, 0.5, -0.5, -0.125, 1.625, 2, 1, 0.5}, {0.375, 0.21875, -0.09375, 0.28125, 1.34375, 1.375, 0.375, -0.125}, {-0.875, -0.34375, 0.71875, 1.09375, 0.78125, 0.125, -0.875, -1.375}, {-0.75, -0.21875, 0.84375, 0.875, -0.125, -0.78125, -1.09375, -1.25}, {0.75, 0.59375, 0.28125, -0.375, -1.375, -1.34375, -0.28125, 0.25}, {1.5, 1, 0, -1, -2, -1.625, 0.125, 1}}}},
  unfold_1 = {{0, 1, 2}, {2, 3, 4}, {4, 5, 6}, {6, 7, 8}},
  unfold_2 = {{{-2.5, 1}, {-1, 2.5}}, {{-1.5, 2}, {0, -2}}, {{-0.5, -2.5}, {1, -1}}},
  unfold_3 = {{{-2.5, 2.5}, {1, 0.5}, {-1, -1.5}}, {{2.5, 2}, {0.5, 0}, {-1.5, -2}}, {{2, 1.5}, {0, -0.5}, {-2, -2.5}}},
  unfold_0 = {4, 0},
  unfold_big_step = {1, 2},
  unfold_scalar = {5},
  diag_0 = {0, 5, 10},
  diag_1 = {1, 6, 11},
  diag_m1 = {4, 9},
  diag_3d = {{1, 2.5}, {-1.5, 0}, {1.5, -2.5}},
  diag_3d_b = {{-2.5, 0.5, -2}, {1.5, -1, 2}},
  diag_far = {0},
  diag_neg_dims = {{1, 2, -2.5}, {-1, 0, 1}},
}

describe("movedim, moveaxis, swapaxes, swapdims", function()
  it("move dims to new positions as views (torch values)", function()
    local x = range(2, 3, 4)
    same(REF.movedim_1_3, x:movedim(1, 3))
    same(REF.movedim_list, x:movedim({1, 2}, {3, 1}))
    same(REF.movedim_neg, pt.movedim(vals(2, 3, 4), -1, 1))
    same(REF.movedim_1_3, x:moveaxis(1, 3))
    assert.is_true(x:movedim(1, 3):is_same_storage(x))
    same(x:transpose(1, 3):tolist(), x:swapaxes(1, 3))
    same(x:transpose(2, -1):tolist(), pt.swapdims(x, 2, -1))
    assert.are.equal(pt.Tensor.transpose, pt.Tensor.swapaxes) -- an alias: help shows transpose's text
    same(x:tolist(), x:movedim({}, {}))
    assert.are.same({}, pt.tensor(3):movedim(1, -1):size())
  end)

  it("report bad dims", function()
    local x = range(2, 3, 4)
    assert_error("movedim: dimension 1 appears more than once in source", function() return x:movedim({1, 1}, {2, 3}) end)
    assert_error("movedim: dimension -1 appears more than once in destination", function() return x:movedim({1, 2}, {3, -1}) end)
    assert_error("movedim: source and destination must have the same number of dimensions, got 2 and 1",
                 function() return x:movedim({1, 2}, {2}) end)
    assert_error("movedim: dimension 4 out of range (tensor has 3 dimensions)", function() return x:movedim(4, 1) end)
    assert_error("moveaxis: source and destination expected (dimensions or lists of them)", function() return x:moveaxis(1) end)
    assert_error("movedim: dimension must be an integer, got 1.5", function() return x:movedim(1.5, 1) end)
  end)

  it("gradients (float64 finite differences)", function()
    gradcheck(function(a) return a:movedim({1, 3}, {2, 1}) * 1 end, {randn64(2, 3, 4)})
    gradcheck(function(a) return a:swapaxes(1, 2) end, {randn64(2, 3)})
  end)
end)

describe("repeat_interleave", function()
  it("repeats elements or slices (torch values)", function()
    local a = i64({{1, 2}, {3, 4}})
    same(REF.ri_2, a:repeat_interleave(2))
    same(REF.ri_t_dim1, a:repeat_interleave(i64({1, 2}), 1))
    same(REF.ri_t_dim2, pt.repeat_interleave(vals(3, 4), i64({0, 2, 1, 3}), 2))
    same(REF.ri_counts, pt.repeat_interleave(i64({2, 0, 1, 3}))) -- 1-based positions
    same(REF.ri_3_dim2, vals(3, 4):repeat_interleave(3, -1))
    same(REF.ri_3_dim2, vals(3, 4):repeat_interleave(i64({3}), {dim = -1})) -- one count for all
    same({{1, 1, 2, 2}, {3, 3, 4, 4}}, a:repeat_interleave(pt.tensor(2, {dtype = "int64"}), 2))
    assert.are.same({2, 0}, a:repeat_interleave(0, 2):size())
    same({3, 3}, pt.tensor(3):repeat_interleave(2)) -- torch: a 0-d input gives {3, 3}
    assert.are.equal("int64", a:repeat_interleave(2):dtype())
  end)

  it("reports bad repeats", function()
    local a = i64({{1, 2}, {3, 4}})
    assert_error("repeat_interleave: repeats has 3 entries but dimension 1 of the input has size 2",
                 function() return a:repeat_interleave(i64({1, 2, 3}), 1) end)
    assert_error("repeat_interleave: repeats has 2 entries but dimension 1 of the input has size 4",
                 function() return a:repeat_interleave(i64({1, 2})) end)
    assert_error("repeat_interleave: repeats must be non-negative, got -1", function() return a:repeat_interleave(-1) end)
    assert_error("repeat_interleave: repeats must be non-negative, got -1",
                 function() return a:repeat_interleave(i64({-1, 2}), 1) end)
    assert_error("repeat_interleave: repeats must be a number, a 0-d or a 1-D tensor, got shape {1,2}",
                 function() return a:repeat_interleave(i64({{1, 2}}), 1) end)
    assert_error("repeat_interleave: repeats must be an integer tensor, got float32",
                 function() return a:repeat_interleave(pt.tensor({1, 2}), 1) end)
    assert_error("repeat_interleave: repeats must be an integer, got 1.5", function() return a:repeat_interleave(1.5) end)
    assert_error("repeat_interleave: with one argument, expects a 0-d or 1-D integer tensor of counts, got float32 {2}",
                 function() return pt.repeat_interleave(pt.tensor({1, 2})) end)
    assert_error("repeat_interleave: dimension 3 out of range (tensor has 2 dimensions)",
                 function() return a:repeat_interleave(2, 3) end)
    assert_error("repeat_interleave: unknown option 'axis' (options: dim)", function() return a:repeat_interleave(2, {axis = 1}) end)
  end)

  it("gradients (float64 finite differences)", function()
    gradcheck(function(x) return x:repeat_interleave(3, 2) end, {randn64(2, 3)})
    gradcheck(function(x) return x:repeat_interleave(i64({2, 0, 3}), 2) end, {randn64(2, 3)})
    gradcheck(function(x) return x:repeat_interleave(2) end, {randn64(2, 3)})
  end)
end)

describe("tile", function()
  it("repeats the whole tensor (torch values)", function()
    same(REF.tile_1, vals(3, 4):tile({2}))
    same(REF.tile_3, pt.tile(vals(3, 4)[{{}, {1, 2}}], {2, 1, 2}))
    same(REF.tile_3, vals(3, 4)[{{}, {1, 2}}]:tile(2, 1, 2))
    same(vals(3, 4):tolist(), vals(3, 4):tile({}))
    assert.is_false(vals(2):tile({}):is_same_storage(vals(2)))
  end)

  it("reports bad reps", function()
    assert_error("tile: repeat counts must be non-negative, got -1", function() return vals(2, 2):tile({-1}) end)
    assert_error("tile: reps expected (a list of repeat counts)", function() return vals(2, 2):tile() end)
    assert_error("tile: a repeat count must be an integer, got 0.5", function() return vals(2, 2):tile({0.5}) end)
  end)

  it("gradients (float64 finite differences)", function()
    gradcheck(function(x) return x:tile({2, 1, 3}) end, {randn64(2, 3)})
  end)
end)

describe("diff", function()
  it("takes forward differences (torch values)", function()
    local v = vals(2, 3, 4)
    same(REF.diff_1, v:diff())
    same(REF.diff_2_dim1, v:diff(2, 2))
    same(REF.diff_2_dim1, v:diff({n = 2, dim = 2}))
    same(REF.diff_dim0, pt.diff(v, 1, 1))
    same(REF.diff_pa, vals(3, 4):diff(1, -1, {prepend = pt.tensor({{1}, {2}, {3}}),
                                              append = pt.tensor({{0.5, 0.25}, {1, 2}, {3, 4}})}))
    same(REF.diff_bool, pt.tensor({true, false, false, true}):diff())
    same(REF.diff_int, i64({1, 4, 2, 9}):diff(2))
    assert.are.same({2, 3, 0}, v:diff(5):size()) -- torch: n past the size gives an empty dim
    assert.are.equal(v, v:diff(0))
  end)

  it("reports bad arguments", function()
    local v = vals(2, 4)
    assert_error("diff: expects a tensor with at least 1 dimension", function() return pt.tensor(1):diff() end)
    assert_error("diff: n must be non-negative, got -1", function() return v:diff(-1) end)
    assert_error("diff: dimension 3 out of range (tensor has 2 dimensions)", function() return v:diff(1, 3) end)
    assert_error("diff: prepend must be a tensor, got number", function() return v:diff({prepend = 1}) end)
    assert_error("diff: append must have as many dimensions as the input (2), got 1",
                 function() return v:diff({append = pt.zeros(2)}) end)
    assert_error("diff: prepend of shape {1,2} must match the input's shape {2,4} except in dimension 2",
                 function() return v:diff({prepend = pt.zeros(1, 2)}) end)
    assert_error("diff: unknown option 'axis' (options: n, dim, prepend, append)", function() return v:diff({axis = 1}) end)
    assert_error("diff: unexpected argument #4 (number)", function() return v:diff(1, 1, 1) end)
  end)

  it("gradients (float64 finite differences)", function()
    gradcheck(function(x) return x:diff() end, {randn64(3, 4)})
    gradcheck(function(x) return x:diff(2, 1) end, {randn64(4, 3)})
    gradcheck(function(x, p, q) return x:diff(1, 2, {prepend = p, append = q}) end,
              {randn64(3, 4), randn64(3, 1), randn64(3, 2)})
  end)
end)

describe("cross", function()
  it("crosses 3-element vectors (torch values)", function()
    same(REF.cross_default, pt.cross(vals(2, 3), vals(2, 3) + 1))
    same(REF.cross_dim1, vals(3, 2):cross(vals(3, 2):flip(1), 1))
    same(REF.cross_bcast, pt.cross(vals(2, 3), vals(1, 3) * 2 + 1))
    same(REF.cross_dim_last, pt.cross(vals(3, 3), vals(3, 3) + 0.5, {dim = -1}))
    -- default: the first dim of size 3, here dim 1 (torch.cross, not linalg.cross)
    same(pt.cross(vals(3, 3), vals(3, 3) + 0.5, 1):tolist(), pt.cross(vals(3, 3), vals(3, 3) + 0.5))
  end)

  it("reports bad shapes", function()
    assert_error("cross: no dimension of size 3 in the inputs (shapes {2,4} and {2,4})",
                 function() return pt.cross(pt.ones(2, 4), pt.ones(2, 4)) end)
    assert_error("cross: dimension 1 must have size 3 in both inputs, got shapes {2,3} and {2,3}",
                 function() return pt.cross(pt.ones(2, 3), pt.ones(2, 3), 1) end)
    assert_error("cross: inputs must have the same number of dimensions, got {2,3} and {3}",
                 function() return pt.cross(pt.ones(2, 3), pt.ones(3)) end)
    assert_error("cross: shapes {2,3} and {4,3} cannot be broadcast", function() return pt.cross(pt.ones(2, 3), pt.ones(4, 3)) end)
    assert_error("cross: dimension 3 out of range (tensor has 2 dimensions)",
                 function() return pt.cross(pt.ones(2, 3), pt.ones(2, 3), 3) end)
    assert_error("cross: bad argument #2 (Tensor expected, got number)", function() return pt.ones(3):cross(1) end)
  end)

  it("gradients (float64 finite differences)", function()
    gradcheck(function(a, b) return pt.cross(a, b) end, {randn64(2, 3), randn64(2, 3)})
    gradcheck(function(a, b) return pt.cross(a, b, 1) end, {randn64(3, 2), randn64(3, 1)})
  end)
end)

describe("diagonal and unfold", function()
  it("diagonal is a view of a diagonal, last (torch values)", function()
    local m = range(3, 4)
    same(REF2.diag_0, m:diagonal())
    same(REF2.diag_1, m:diagonal(1))
    same(REF2.diag_m1, pt.diagonal(m, -1))
    same(REF2.diag_3d, vals(2, 3, 4):diagonal(1, 1, 3))
    same(REF2.diag_3d_b, vals(2, 3, 3):diagonal(0, 2, 3))
    same(REF2.diag_neg_dims, vals(2, 3, 4):diagonal(-1, -1, -2))
    assert.are.same(REF2.diag_far, m:diagonal(5):size())
    assert.is_true(m:diagonal():is_same_storage(m))
    m:diagonal():fill_(-1)
    same({{-1, 1, 2, 3}, {4, -1, 6, 7}, {8, 9, -1, 11}}, m)
  end)

  it("unfold is a view of windows (torch values)", function()
    local t = range(10)
    same(REF2.unfold_1, t:unfold(1, 3, 2))
    same(REF2.unfold_2, vals(3, 5):unfold(2, 2, 2))
    same(REF2.unfold_3, pt.unfold(vals(4, 3), 1, 2, 1))
    assert.are.same(REF2.unfold_0, t:unfold(1, 0, 3):size())
    assert.are.same(REF2.unfold_big_step, range(2):unfold(1, 2, 5):size())
    same(REF2.unfold_scalar, pt.tensor(5):unfold(1, 1, 1))
    assert.is_true(t:unfold(1, 3, 2):is_same_storage(t))
  end)

  it("report bad arguments", function()
    local m = range(3, 4)
    assert_error("diagonal: dim1 and dim2 must be different dimensions, got 1 and 1", function() return m:diagonal(0, 1, 1) end)
    assert_error("diagonal: expects a tensor with at least 2 dimensions, got 1", function() return range(3):diagonal() end)
    assert_error("diagonal: dimension 3 out of range (tensor has 2 dimensions)", function() return m:diagonal(0, 1, 3) end)
    assert_error("diagonal: offset must be an integer, got 0.5", function() return m:diagonal(0.5) end)
    local t = range(10)
    assert_error("unfold: size 11 is larger than dimension 1 of size 10", function() return t:unfold(1, 11, 1) end)
    assert_error("unfold: step must be at least 1, got 0", function() return t:unfold(1, 3, 0) end)
    assert_error("unfold: size must be non-negative, got -1", function() return t:unfold(1, -1, 1) end)
    assert_error("unfold: dimension 2 out of range (tensor has 1 dimensions)", function() return t:unfold(2, 2, 1) end)
    assert_error("unfold: size 2 is larger than dimension 1 of size 1", function() return pt.tensor(5):unfold(1, 2, 1) end)
    assert_error("unfold: step must be an integer, got no value", function() return t:unfold(1, 2) end)
  end)

  it("gradients (float64 finite differences; overlapping windows add up)", function()
    gradcheck(function(x) return x:diagonal() end, {randn64(3, 4)})
    gradcheck(function(x) return x:diagonal(-1, 3, 1) end, {randn64(3, 2, 4)})
    gradcheck(function(x) return x:unfold(1, 3, 1) end, {randn64(6, 2)})
    gradcheck(function(x) return x:unfold(2, 2, 3) end, {randn64(2, 7)})
    gradcheck(function(x) return x:t():unfold(2, 4, 2) * 2 end, {randn64(7, 3)})
    gradcheck(function(x) return x:unfold(1, 1, 1) end, {pt.tensor(0.5, {dtype = "float64"})})
  end)
end)

describe("pt.einsum", function()
  it("computes the usual forms (torch values)", function()
    local A, B, M = vals(2, 3), vals(3, 4) + 0.5, vals(3, 3)
    same(REF2.ein_mm, pt.einsum("ij,jk->ik", A, B))
    same(REF2.ein_implicit, pt.einsum("ij,jk", A, B))
    same(REF2.ein_implicit, pt.einsum("ij , jk -> ik", {A, B})) -- spaces, a list of operands
    same(REF2.ein_bmm, pt.einsum("bij,bjk->bik", vals(2, 2, 3), vals(2, 3, 2) + 1))
    same(REF2.ein_t, pt.einsum("ij->ji", A))
    same(REF2.ein_trace, pt.einsum("ii", M))
    same(REF2.ein_diag, pt.einsum("ii->i", M))
    same(REF2.ein_outer, pt.einsum("i,j->ij", vals(3), vals(2) + 3))
    same(REF2.ein_sum, pt.einsum("ij->j", A))
    same(REF2.ein_all, pt.einsum("ij->", A))
    same(REF2.ein_dot, pt.einsum("i,i", vals(4), vals(4) + 1))
    same(REF2.ein_ell, pt.einsum("...ij,...jk->...ik", vals(2, 1, 2, 3), vals(3, 3, 2)))
    same(REF2.ein_three, pt.einsum("ij,jk,kl->il", A, B, vals(4, 2)))
    same(REF2.ein_bdiag, pt.einsum("bii->bi", vals(2, 3, 3)))
    same(REF2.ein_mixed, pt.einsum("iij,jk->ik", vals(3, 3, 2), vals(2, 2)))
    same(REF2.ein_upper, pt.einsum("Ab,bC", A, B))
    same(REF2.ein_hadamard, pt.einsum("ij,ij->ij", A, A + 1))
    assert.is_nil(rawget(pt.Tensor, "einsum")) -- the equation comes first: no method form
  end)

  it("reports unsupported and malformed equations", function()
    local A = vals(2, 3)
    assert_error("einsum: the equation 'ij,jk->ik' has 2 operands but 1 tensor was given",
                 function() return pt.einsum("ij,jk->ik", A) end)
    assert_error("einsum: output subscript 'i' appears more than once", function() return pt.einsum("ij->iij", A) end)
    assert_error("einsum: output subscript 'k' does not appear in any operand", function() return pt.einsum("ij->k", A) end)
    assert_error("einsum: invalid subscript '1' in operand 1 ('i1') (subscripts are letters a-z, A-Z and one '...')",
                 function() return pt.einsum("i1->i", A) end)
    assert_error("einsum: operand 1 has 2 dimensions but its subscripts 'ijk' name 3",
                 function() return pt.einsum("ijk->i", A) end)
    assert_error("einsum: operand 1 has 2 dimensions but its subscripts 'i...jk' name 3 (besides '...')",
                 function() return pt.einsum("i...jk", A) end)
    assert_error("einsum: subscript 'i' is repeated in operand 1 but its dimensions have sizes 2 and 3",
                 function() return pt.einsum("ii->i", A) end)
    assert_error("einsum: '.' in operand 1 ('i..j') that is not part of an ellipsis '...'",
                 function() return pt.einsum("i..j", A) end)
    assert_error("einsum: more than one ellipsis '...' in operand 1 ('i...j...')",
                 function() return pt.einsum("i...j...", A) end)
    assert_error("einsum: subscript 'j' has size 2 in operand 2, which does not broadcast with size 3",
                 function() return pt.einsum("ij,j->i", A, pt.ones(2)) end)
    assert_error("einsum: more than one '->' in the equation", function() return pt.einsum("ij->i->j", A) end)
    assert_error("einsum: bad argument #1 (equation string expected, got tensor)", function() return pt.einsum(A, {1, 2}) end)
    assert_error("einsum: operand 2 is not a tensor (got number)", function() return pt.einsum("ij,jk", A, 3) end)
    assert_error("einsum: expected at least one operand", function() return pt.einsum("ij") end)
    assert_error("einsum: products of operands need float32 or float64 tensors of one dtype, got int64 and int64 "
                 .. "(convert with float() or double())", function() return pt.einsum("ij,jk", i64({{1}}), i64({{2}})) end)
    assert_error("einsum: products of operands need float32 or float64 tensors of one dtype, got float32 and float64 "
                 .. "(convert with float() or double())", function() return pt.einsum("i,i", pt.ones(2), pt.ones(2):double()) end)
    same({{1, 4}, {2, 5}, {3, 6}}, pt.einsum("ij->ji", i64({{1, 2, 3}, {4, 5, 6}}))) -- one operand: any dtype
  end)

  it("gradients through every form (float64 finite differences)", function()
    gradcheck(function(a, b) return pt.einsum("ij,jk->ik", a, b) end, {randn64(2, 3), randn64(3, 4)})
    gradcheck(function(a, b) return pt.einsum("bij,bjk->bik", a, b) end, {randn64(2, 2, 3), randn64(2, 3, 2)})
    gradcheck(function(a) return pt.einsum("ij->ji", a) end, {randn64(2, 3)})
    gradcheck(function(a) return pt.einsum("ii", a) end, {randn64(3, 3)})
    gradcheck(function(a) return pt.einsum("bii->bi", a) end, {randn64(2, 3, 3)})
    gradcheck(function(a, b) return pt.einsum("i,j->ij", a, b) end, {randn64(3), randn64(2)})
    gradcheck(function(a) return pt.einsum("ij->j", a) end, {randn64(2, 3)})
    gradcheck(function(a, b) return pt.einsum("...ij,...jk->...ik", a, b) end, {randn64(2, 1, 2, 3), randn64(3, 3, 2)})
    gradcheck(function(a, b, c) return pt.einsum("ij,jk,kl->il", a, b, c) end, {randn64(2, 3), randn64(3, 2), randn64(2, 2)})
    gradcheck(function(a, b) return pt.einsum("iij,jk->ik", a, b) end, {randn64(3, 3, 2), randn64(2, 2)})
    gradcheck(function(a, b) return pt.einsum("i,i->i", a, b) end, {randn64(1), randn64(3)}) -- size-1 broadcast
  end)
end)

describe("nn.functional.pad", function()
  it("circular with a negative and a positive pad crops first, then wraps what is left (torch)", function()
    local x = pt.arange(5):float():reshape(1, 1, 5)
    assert.are.same({2, 3, 4, 2, 3, 4}, F.pad(x, {-2, 3}, {mode = "circular"}):reshape(-1):tolist())
    assert.are.same({0, 1, 0, 1}, F.pad(x, {2, -3}, {mode = "circular"}):reshape(-1):tolist())
    assert.are.same({1, 2, 3}, F.pad(x, {-1, -1}, {mode = "circular"}):reshape(-1):tolist())
    gradcheck(function(a) return F.pad(a, {-2, 3}, {mode = "circular"}) end, {pt.randn(1, 2, 5, {dtype = "float64"})})
  end)
  it("pads the last dims first (torch values)", function()
    local x = vals(1, 2, 5)
    same(REF2.pad_const, F.pad(x, {1, 2}))
    same(REF2.pad_const_v, F.pad(x, {0, 1, 2, 0}, {value = -1}))
    same(REF2.pad_const_v, F.pad(x, {0, 1, 2, 0}, "constant", -1))
    same(REF2.pad_crop, F.pad(x, {-2, 1}))
    same(REF2.pad_crop2, F.pad(x, {1, -3, -1, 0}, {value = 9}))
    same(REF2.pad_reflect, F.pad(x, {3, 2}, {mode = "reflect"}))
    same(REF2.pad_reflect2d, F.pad(vals(1, 1, 3, 4), {1, 2, 2, 1}, {mode = "reflect"}))
    same(REF2.pad_reflect_neg, F.pad(x, {-1, 2}, {mode = "reflect"}))
    same(REF2.pad_replicate, F.pad(x, {2, 3}, {mode = "replicate"}))
    same(REF2.pad_replicate2d, F.pad(vals(1, 3, 4), {1, 0, 0, 2}, {mode = "replicate"}))
    same(REF2.pad_circular, F.pad(x, {2, 5}, {mode = "circular"}))
    same(REF2.pad_circular2d, F.pad(vals(1, 1, 3, 4), {1, 1, 3, 0}, {mode = "circular"}))
    same(REF2.pad_5d, F.pad(vals(1, 1, 2, 2, 3), {1, 0, 0, 1, 1, 1}, {mode = "replicate"}))
    assert.are.same({3, 5, 6}, F.pad(range(1, 3, 4), {1, 1, 1, 1, 1, 1}):size())
    assert.are.equal("int64", F.pad(i64({1, 2}), {1, 1}):dtype())
    assert.is_false(F.pad(x, {0, 0}):is_same_storage(x))
    assert.are.equal(require("partrain.nn").F.pad, F.pad)
  end)

  it("reports torch's rules", function()
    local x = range(1, 3, 4)
    assert_error("pad: the padding list must have an even length, got 1", function() return F.pad(x, {1}) end)
    assert_error("pad: 8 padding sizes pad 4 dimensions, but the input {1,3,4} has 3",
                 function() return F.pad(x, {1, 1, 1, 1, 1, 1, 1, 1}) end)
    assert_error("pad: padding (-3, -2) leaves a negative size for dimension 3 of size 4", function() return F.pad(x, {-3, -2}) end)
    assert_error("pad: reflect padding (4, 0) must be smaller than the size 4 of dimension 3 (input {1,3,4})",
                 function() return F.pad(x, {4, 0}, {mode = "reflect"}) end)
    assert_error("pad: circular padding (5, 0) wraps around more than once: dimension 3 has size 4",
                 function() return F.pad(x, {5, 0}, {mode = "circular"}) end)
    assert_error("pad: circular padding pads every dimension after the first two (batch and channel): expected 2 sizes "
                 .. "for a 3-D input, got 4", function() return F.pad(x, {1, 1, 1, 1}, {mode = "circular"}) end)
    assert_error("pad: mode 'replicate' pads 2-D or 3-D inputs by 2 sizes, 3-D or 4-D inputs by 4 and 4-D or 5-D inputs "
                 .. "by 6, got 2 sizes for a 4-D input", function() return F.pad(x:view(1, 1, 3, 4), {1, 1}, {mode = "replicate"}) end)
    assert_error("pad: mode 'reflect' pads 2-D or 3-D inputs by 2 sizes, 3-D or 4-D inputs by 4 and 4-D or 5-D inputs "
                 .. "by 6, got 2 sizes for a 1-D input", function() return F.pad(range(4), {1, 1}, {mode = "reflect"}) end)
    assert_error("pad: mode 'reflect' takes no value (only constant padding has one)",
                 function() return F.pad(x, {1, 1}, {mode = "reflect", value = 2}) end)
    assert_error("pad: mode must be constant, reflect, replicate or circular, got 'foo'",
                 function() return F.pad(x, {1, 1}, {mode = "foo"}) end)
    assert_error("pad: unknown option 'fill' (options: mode, value)", function() return F.pad(x, {1, 1}, {fill = 1}) end)
    assert_error("pad: pad must be a list of integers (last dimension first), got number", function() return F.pad(x, 1) end)
    assert_error("pad: a padding size must be an integer, got 1.5", function() return F.pad(x, {1.5, 1}) end)
    assert_error("pad: value must be a number, got string", function() return F.pad(x, {1, 1}, {value = "0"}) end)
    assert_error("pad: mode 'replicate' cannot pad dimension 3 of size 0",
                 function() return F.pad(pt.zeros(1, 2, 0), {1, 1}, {mode = "replicate"}) end)
  end)

  it("gradients in every mode (float64 finite differences)", function()
    gradcheck(function(x) return F.pad(x, {1, 2, 0, 1}, {value = 0.5}) end, {randn64(1, 2, 3)})
    gradcheck(function(x) return F.pad(x, {-1, 2}) end, {randn64(2, 4)})
    gradcheck(function(x) return F.pad(x, {2, 1, 1, 2}, {mode = "reflect"}) end, {randn64(1, 3, 4)})
    gradcheck(function(x) return F.pad(x, {3, 2}, {mode = "replicate"}) end, {randn64(1, 2, 3)})
    gradcheck(function(x) return F.pad(x, {2, 3, 1, 0}, {mode = "circular"}) end, {randn64(1, 1, 3, 4)})
  end)
end)

describe("nn.functional.interpolate", function()
  it("resizes 3-D and 4-D inputs as torch (torch values)", function()
    local y = vals(1, 2, 5)
    same(REF2.int_nearest_size, F.interpolate(y, {size = 8}))
    same(REF2.int_nearest_sf, F.interpolate(y, {scale_factor = 1.5}))
    same(REF2.int_nearest_down, F.interpolate(y, {size = 3}))
    same(REF2.int_nearest_2x, F.interpolate(y, {scale_factor = 2.1}))
    same(REF2.int_linear, F.interpolate(y, {size = 8, mode = "linear"}), 1e-6)
    same(REF2.int_linear_ac, F.interpolate(y, {size = 8, mode = "linear", align_corners = true}), 1e-6)
    same(REF2.int_linear_sf, F.interpolate(y, {scale_factor = 1.5, mode = "linear"}), 1e-6)
    same(REF2.int_linear_rc, F.interpolate(y, {scale_factor = 1.5, mode = "linear", recompute_scale_factor = true}), 1e-6)
    same(REF2.int_linear_down, F.interpolate(y, {size = {3}, mode = "linear"}), 1e-6)
    same(REF2.int_linear_one, F.interpolate(y, {size = 1, mode = "linear", align_corners = true}), 1e-6)
    same(REF2.int_linear_same, F.interpolate(y, {scale_factor = 1.1, mode = "linear"}), 1e-6)
    local z = vals(1, 2, 3, 4)
    same(REF2.int_n2d, F.interpolate(z, {size = {5, 3}}))
    same(REF2.int_bil, F.interpolate(z, {size = {5, 3}, mode = "bilinear"}), 1e-6)
    same(REF2.int_bil_ac, F.interpolate(z, {size = {5, 3}, mode = "bilinear", align_corners = true}), 1e-6)
    same(REF2.int_bil_sf, F.interpolate(z, {scale_factor = {1.7, 0.6}, mode = "bilinear"}), 1e-6)
    same(REF2.int_n2d_sf, F.interpolate(z, {scale_factor = {1.7, 0.6}}))
    same(REF2.int_bil_2, F.interpolate(z, {scale_factor = 2, mode = "bilinear"}), 1e-6)
    assert.are.equal("float64", F.interpolate(vals(1, 1, 3):double(), {size = 5, mode = "linear"}):dtype())
  end)

  it("reports torch's rules", function()
    local y, z = vals(1, 2, 5), vals(1, 2, 3, 4)
    assert_error("interpolate: either size or scale_factor must be given", function() return F.interpolate(y, {}) end)
    assert_error("interpolate: only one of size or scale_factor can be given",
                 function() return F.interpolate(y, {size = 3, scale_factor = 2}) end)
    assert_error("interpolate: align_corners can only be set with the interpolating modes linear, bilinear, bicubic and trilinear, not 'nearest'",
                 function() return F.interpolate(y, {size = 3, align_corners = true}) end)
    assert_error("interpolate: mode 'bilinear' needs a 4-D input (N, C, H, W), got 3-D",
                 function() return F.interpolate(y, {size = 3, mode = "bilinear"}) end)
    assert_error("interpolate: mode 'linear' needs a 3-D input (N, C, L), got 4-D",
                 function() return F.interpolate(z, {size = 3, mode = "linear"}) end)
    assert_error("interpolate: size must have 1 entry for a 3-D input (one per spatial dimension), got 2",
                 function() return F.interpolate(y, {size = {3, 4}}) end)
    assert_error("interpolate: scale_factor must have 2 entries for a 4-D input (one per spatial dimension), got 3",
                 function() return F.interpolate(z, {scale_factor = {2, 2, 2}}) end)
    assert_error("interpolate: output sizes must be positive, got 0", function() return F.interpolate(y, {size = 0}) end)
    assert_error("interpolate: scale_factor 0.1 gives an empty output for spatial dimension 1 of size 5",
                 function() return F.interpolate(y, {scale_factor = 0.1}) end)
    assert_error("interpolate: scale_factor must be a positive number, got -1",
                 function() return F.interpolate(y, {scale_factor = -1}) end)
    assert_error("interpolate: mode must be nearest, nearest-exact, linear, bilinear, bicubic, trilinear or area, got 'cubic'",
                 function() return F.interpolate(z, {size = 3, mode = "cubic"}) end)
    assert_error("interpolate: expects a 3-D (N, C, L), 4-D (N, C, H, W) or 5-D (N, C, D, H, W) input, got 2-D {2,5}",
                 function() return F.interpolate(y[1], {size = 3}) end)
    assert_error("interpolate: mode 'nearest' takes float32, float64 or uint8 inputs, got int64",
                 function() return F.interpolate(i64({{{1, 2}}}), {size = 3}) end)
    assert_error("interpolate: recompute_scale_factor is not meaningful with an explicit size",
                 function() return F.interpolate(y, {size = 3, recompute_scale_factor = true}) end)
    assert_error("interpolate: unknown option 'scale' (options: size, scale_factor, mode, align_corners, recompute_scale_factor, antialias)",
                 function() return F.interpolate(y, {scale = 2}) end)
    assert_error("interpolate: options expected ({size= or scale_factor=, mode=, align_corners=}), got number",
                 function() return F.interpolate(y, 3) end)
    assert_error("interpolate: size must be an integer, got 2.5", function() return F.interpolate(y, {size = 2.5}) end)
  end)

  it("gradients in every mode (float64 finite differences)", function()
    gradcheck(function(x) return F.interpolate(x, {size = 7}) end, {randn64(1, 2, 3)})
    gradcheck(function(x) return F.interpolate(x, {size = 7, mode = "linear"}) end, {randn64(1, 2, 3)})
    gradcheck(function(x) return F.interpolate(x, {size = 2, mode = "linear", align_corners = true}) end, {randn64(2, 1, 5)})
    gradcheck(function(x) return F.interpolate(x, {size = {3, 5}}) end, {randn64(1, 1, 2, 3)})
    gradcheck(function(x) return F.interpolate(x, {scale_factor = {1.5, 2}, mode = "bilinear"}) end, {randn64(1, 2, 2, 3)})
    gradcheck(function(x) return F.interpolate(x, {size = {4, 2}, mode = "bilinear", align_corners = true}) end,
              {randn64(1, 1, 3, 3)})
  end)
end)

describe('indexing with "..." (PyTorch\'s t[..., i])', function()
  local function msg(f)
    local ok, e = pcall(f)
    assert.is_false(ok)
    return (tostring(e):gsub("^[^\n]-:%d+: ", ""))
  end
  it("stands for every dimension the other entries leave, for reading and assignment", function()
    local t = pt.arange(24):reshape(2, 3, 4)
    assert.are.same({{1, 5, 9}, {13, 17, 21}}, t[{"...", 2}]:tolist())
    assert.are.same(t[1]:tolist(), t[{1, "..."}]:tolist())
    assert.are.same({{1, 2}, {5, 6}, {9, 10}}, t[{1, "...", {2, 3}}]:tolist())
    assert.are.same({{1, 5}, {13, 17}}, t[{"...", {1, 2}, 2}]:tolist())
    assert.are.equal(6, t[{"...", 1, 2, 3}]) -- covering no dimension: a number, as t[{1, 2, 3}]
    assert.are.same({2, 3, 4}, t[{"..."}]:size())
    assert.are.same({4}, pt.arange(4)[{"...", {1, 4, 1}}]:size())
    t[{"...", 1}] = 0
    assert.are.same({0, 1, 2, 3}, t[{1, 1}]:tolist())
    assert.are.equal(0, t:select(3, 1):abs():sum():item())
    assert.are.same({0, 21, 22, 23}, t[{2, 3}]:tolist())
  end)
  it("passes gradients through", function()
    local x = pt.tensor({{1, 2, 3}, {4, 5, 6}}, {dtype = "float64", requires_grad = true})
    x[{"...", 2}]:sum():backward()
    assert.are.same({{0, 1, 0}, {0, 1, 0}}, x.grad:tolist())
    gradcheck(function(a) return a[{"...", {1, 3, 2}}] * 2 end, {pt.randn(2, 3, 4, {dtype = "float64"})})
  end)
  it("names what is wrong", function()
    local t = pt.zeros(2, 3)
    assert.are.equal("index: only one '...' is allowed (positions 1 and 3)", msg(function() return t[{"...", 1, "..."}] end))
    assert.are.equal("index: too many indices for a tensor of 2 dimensions (got 3)", msg(function() return t[{1, 1, 1, "..."}] end))
    assert.are.equal('index: invalid index entry \'..\' at position 1 (strings: ":" for a whole dimension, "..." for '
      .. "all the dimensions the other entries leave)", msg(function() return t[{"..", 1}] end))
  end)
end)
