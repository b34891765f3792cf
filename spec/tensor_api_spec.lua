-- The tensor functions partrain.tensor_more adds for PyTorch's API (diag, fill_diagonal_, tril_/triu_, isclose,
-- nan_to_num, logit, addcmul/addcdiv, inner, true_divide, float_power, logaddexp2, deg2rad/rad2deg, sgn, signbit,
-- isreal) against torch 1.13: the values in R were computed with /usr/bin/python3
-- (torch 1.13) on the same inputs (indices there are torch's, 0-based: plus1 adds 1 where partrain is
-- 1-based); float64 gradchecks and every error message.
local pt = require "partrain"
local support = require "spec.support"
local gradcheck = require "spec.gradcheck"
local flat = support.flat
local close = support.assert_close_with(1e-6)

local NAN, INF = 0 / 0, math.huge
local F64 = {dtype = "float64"}

local R = {
  diag_v = {{1.5, 0.0, 0.0}, {0.0, -2.0, 0.0}, {0.0, 0.0, 3.0}},
  diag_v1 = {{0.0, 1.5, 0.0, 0.0}, {0.0, 0.0, -2.0, 0.0}, {0.0, 0.0, 0.0, 3.0}, {0.0, 0.0, 0.0, 0.0}},
  diag_vm2 = {{0.0, 0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0, 0.0}, {1.5, 0.0, 0.0, 0.0, 0.0}, {0.0, -2.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 3.0, 0.0, 0.0}},
  diag_m = {0, 5, 10},
  diag_m1 = {1, 6, 11},
  diag_mm1 = {4, 9},
  diag_m3 = {3},
  fd33 = {{5.0, 0.0, 0.0}, {0.0, 5.0, 0.0}, {0.0, 0.0, 5.0}},
  fd34 = {{2.0, 0.0, 0.0, 0.0}, {0.0, 2.0, 0.0, 0.0}, {0.0, 0.0, 2.0, 0.0}},
  fd53 = {{1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}, {0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}},
  fd53w = {{1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}, {0.0, 0.0, 0.0}, {1.0, 0.0, 0.0}},
  fd73w = {{1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}, {0.0, 0.0, 0.0}, {1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}},
  fd83w = {{1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}, {0.0, 0.0, 0.0}, {1.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}, {0.0, 0.0, 0.0}},
  fd222 = {{{1.0, 0.0}, {0.0, 0.0}}, {{0.0, 0.0}, {0.0, 1.0}}},
  fd35w = {{7.0, 0.0, 0.0, 0.0, 0.0}, {0.0, 7.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 7.0, 0.0, 0.0}},
  fd_int = {{2, 0, 0}, {0, 2, 0}},
  fd_bool = {{true, false}, {false, true}},
  fd_grad = {{0.0, 2.0, 3.0}, {4.0, 0.0, 6.0}},
  tril_ = {{1.0, 0.0, 0.0, 0.0}, {5.0, 6.0, 0.0, 0.0}, {9.0, 10.0, 11.0, 0.0}},
  tril_1 = {{1.0, 2.0, 0.0, 0.0}, {5.0, 6.0, 7.0, 0.0}, {9.0, 10.0, 11.0, 12.0}},
  triu_m1 = {{1.0, 2.0, 3.0, 4.0}, {5.0, 6.0, 7.0, 8.0}, {0.0, 10.0, 11.0, 12.0}},
  triu_2 = {{0.0, 0.0, 3.0, 4.0}, {0.0, 0.0, 0.0, 8.0}, {0.0, 0.0, 0.0, 0.0}},
  tril_b = {{{0, 0, 0}, {4, 0, 0}, {7, 8, 0}}, {{0, 0, 0}, {13, 0, 0}, {16, 17, 0}}},
  triu_b = {{{1, 2, 3}, {0, 5, 6}, {0, 0, 9}}, {{10, 11, 12}, {0, 14, 15}, {0, 0, 18}}},
  ic_a = {1.0, 1.000001, 1.1, INF, -INF, INF, NAN, NAN, 0.0, 1e-09, 100.0, -3.0},
  ic_b = {1.0, 1.0, 1.0, INF, INF, 1e+300, NAN, 1.0, 0.0, 0.0, 100.0009, -3.2},
  ic = {true, true, false, true, false, false, false, false, true, true, true, false},
  ic_nan = {true, true, false, true, false, false, true, false, true, true, true, false},
  ic_r = {true, true, false, true, false, false, false, false, true, false, true, true},
  ic_0 = {true, false, false, true, false, false, false, false, true, false, false, false},
  ic_bc = {{true, false, false}, {false, true, false}},
  ic_int = {true, true, false, true},
  ic_int0 = {false, true, false, false},
  ic_f32 = {true, false, false},
  n2n = {0.0, 3.4028234663852886e+38, -3.4028234663852886e+38, 1.5, -2.0},
  n2n_args = {0.5, 10.0, -10.0, 1.5, -2.0},
  n2n_pos = {0.0, 7.25, -3.4028234663852886e+38, 1.5, -2.0},
  n2n_d = {0.0, 1.7976931348623157e+308, -1.7976931348623157e+308, 1.5, -2.0},
  n2n_grad = {0.0, 0.0, 0.0, 4.0, 5.0},
  logit = {-2.1972246170043945, 0.0, 2.1972243785858154, -INF, INF, NAN, NAN, -1.0986123085021973},
  logit_e = {-1.3862943649291992, 0.0, 1.3862944841384888, -1.3862943649291992, 1.3862944841384888, -1.3862943649291992, 1.3862944841384888, -1.0986123085021973},
  logit_e7 = {0.8472978472709656, 0.8472978472709656, -0.8472977876663208, 0.8472978472709656, -0.8472977876663208, 0.8472978472709656, -0.8472977876663208, 0.8472978472709656},
  logit_int = {-INF, INF, NAN},
  logit_grad = {11.111111111111109, 4.761904761904762, 21.05263157894735, NAN, 4.0},
  logit_grad_e = {0.0, 4.761904761904762, 0.0, 0.0, 4.0, 6.249999999999999},
  acm = {{2.0, 6.0, -2.5}, {-0.5, -14.0, 5.0}},
  acm_v = {{1.5, 2.0, -1.0}, {0.25, -8.0, 2.75}},
  acd = {{5.0, -1.5, -0.8333333730697632}, {-5.0, -2.75, 2.5}},
  acd_v = {{-7.0, -3.0, 3.1666667461395264}, {13.0, -0.5, -3.5}},
  acm_int = {31, -46},
  acm_prom = {7.0},
  acd_mixed = {2.5, 2.5},
  acm_ = {{7.0, 14.0, 21.0}, {5.5, 8.0, 10.5}},
  acd_ = {{2.5, 5.0, 7.5}, {10.0, 17.0, 24.0}},
  inner = {{5.0, 6.0, 5.5, 10.0}, {0.0, 1.5, 4.5, 0.0}},
  inner_1d = 32.0,
  inner_0d = {{2.0, 4.0, 6.0}, {-2.0, 1.0, 4.0}},
  inner_int = {17, 39},
  inner_3d = {{3.0, 9.0}, {15.0, 21.0}},
  tdiv = {0.5, 1.0, 1.5},
  tdiv_n = {0.25, 0.5, 0.75},
  fp = {4.0, 9.0, 4.0},
  fp_n = {1.4142135623730951, 0.5, 8.0},
  fp_f = {1.1319063621124112, 1.7365843348680898},
  fp_neg = {0.5, 0.25},
  lae2 = {2.5849623680114746, INF, -INF, INF, 1.5, 4.011227130889893, 101.27155303955078, -99.4150390625},
  lae2_d = {{1.771553303163612, 2.436751795439824}, {3.321928094887362, 3.584962500721156}},
  lae2_ga = {0.3333333333333333, 0.5, 0.1111111111111111},
  lae2_gb = {0.6666666666666666, 0.5, 0.8888888888888888},
  d2r = {3.1415927410125732, -1.5707963705062866, 0.7853981852531433, 0.01745329238474369},
  r2d = {180.0, -57.295780181884766, 28.647890090942383},
  d2r_int = {3.1415927410125732, 1.5707963705062866},
  r2d_bool = {57.295780181884766, 0.0},
  d2r_d = {0.5235987755982988, 0.017453292519943295},
  sgn = {-1.0, 0.0, 1.0, 0.0},
  sgn_int = {-1, 0, 1},
  signbit = {true, false, true, false, false, true, true, false},
  signbit_d = {true, false, true},
  signbit_int = {true, false, false},
  signbit_u8 = {false, false},
  unf = {{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}}, {{12, 13, 14, 15}, {16, 17, 18, 19}, {20, 21, 22, 23}}},
  unf_m1 = {2, 2, 2, 3},
  unf_t = {{{0}, {4}, {8}}, {{1}, {5}, {9}}, {{2}, {6}, {10}}, {{3}, {7}, {11}}},
  fliplr = {{2, 1, 0}, {5, 4, 3}},
  flipud = {{3, 4, 5}, {0, 1, 2}},
  fliplr3 = {{{2, 3}, {0, 1}}, {{6, 7}, {4, 5}}},
  msort = {{1.0, 0.0, 0.0}, {2.0, 1.0, 1.0}, {3.0, 2.0, NAN}},
  hs1 = {1, 2, 3, 4, 5},
  hs0 = {7, 1, 2},
  hs2 = {{1, 3, 4}, {2, 5, 6}},
  vs1 = {{1, 2}, {3, 4}},
  vs2 = {{1, 2}, {3, 4}, {1, 2}},
  vs0 = {{1}, {2}},
  vs_prom = {{1.0, 2.0}, {0.5, 1.5}},
  ds1 = {{{1, 3}, {2, 4}}},
  ds2 = {{{1, 5}, {2, 6}}, {{3, 7}, {4, 8}}},
  ds0 = {{{1, 2}}},
  cs1 = {{1, 3}, {2, 4}},
  cs2 = {{1, 2, 5, 7}, {3, 4, 6, 8}},
  cs0 = {{1, 2}},
  ts3 = {{0, 1, 2}, {3, 4}, {5, 6}},
  ts4 = {{0, 1}, {2, 3}, {4, 5}, {6}},
  ts9 = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {}, {}},
  ts_idx = {{0, 1}, {2, 3, 4, 5, 6}, {}, {}, {1, 2, 3, 4, 5, 6}},
  ts_idx2 = {{0, 1}, {2}, {3, 4, 5, 6}},
  ts_neg = {{0, 1, 2, 3}, {}, {0, 1, 2, 3, 4, 5, 6}},
  ts_dim = {{{0, 1}, {4, 5}, {8, 9}}, {{2}, {6}, {10}}, {{3}, {7}, {11}}},
  ts_dim_idx = {{{0}, {4}, {8}}, {{1, 2}, {5, 6}, {9, 10}}, {{3}, {7}, {11}}},
  ts_tensor = {{0, 1}, {2, 3, 4}, {5, 6}},
  ts_0d = {{0, 1, 2, 3}, {4, 5, 6}},
  hsplit1 = {{0, 1}, {2, 3}, {4, 5}},
  hsplit2 = {{{0, 1}, {4, 5}, {8, 9}}, {{2, 3}, {6, 7}, {10, 11}}},
  hsplit_idx = {{{0}, {4}, {8}}, {{1, 2}, {5, 6}, {9, 10}}, {{3}, {7}, {11}}},
  vsplit = {{{0, 1, 2}, {3, 4, 5}}, {{6, 7, 8}, {9, 10, 11}}},
  vsplit_idx = {{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}}, {{9, 10, 11}}},
  dsplit = {{{{0, 1}, {6, 7}}}, {{{2, 3}, {8, 9}}}, {{{4, 5}, {10, 11}}}},
  dsplit_idx = {{{{0, 1}, {6, 7}}}, {{{2, 3, 4}, {8, 9, 10}}}, {{{5}, {11}}}},
  bt = {{{1, 1, 1}, {2, 2, 2}}, {{3, 4, 5}, {3, 4, 5}}, {{6, 6, 6}, {6, 6, 6}}},
  uc = {{1, 2, 3, 1, 2}, {0, 0, 1, 1, 2, 3, 3, 4}, {2, 2, 1, 2, 1}},
  uc_nan = {{NAN, NAN, 1.0, NAN}, {1, 1, 2, 1}},
  uc_dim = {{{1, 1}, {2, 3}, {1, 1}, {2, 3}}, {0, 0, 1, 2, 3, 3}, {2, 1, 1, 2}},
  uc_dim2 = {{{1, 2, 1, 2}, {1, 3, 1, 3}}, {0, 0, 1, 2, 3, 3}, {2, 1, 1, 2}},
  uc_2d = {{1, 2, 1}, {{0, 0, 1}, {1, 1, 2}}, {2, 3, 1}},
  uc_0d = {{3}, 0, {1}},
  uc_bool = {{true, false, true}, {2, 1, 1}},
}

-- exact element-wise equality of nested tables (NaN equals NaN), integers staying integers
local function same(expected, actual, what)
  local e, a = flat(expected), flat(pt.is_tensor(actual) and actual:tolist() or actual)
  assert.are.equal(#e, #a, what)
  for k = 1, #e do
    local ok = e[k] ~= e[k] and a[k] ~= a[k] or e[k] == a[k] and math.type(e[k]) == math.type(a[k])
    assert.is_true(ok, ("%s element %d: expected %s, got %s"):format(what or "", k, tostring(e[k]), tostring(a[k])))
  end
end

-- close, NaN matching NaN and infinities matching themselves
local function near(actual, expected, tol)
  local a = flat(pt.is_tensor(actual) and actual:tolist() or actual)
  local e = flat(pt.is_tensor(expected) and expected:tolist() or expected)
  assert.are.equal(#e, #a)
  for k = 1, #e do
    if e[k] ~= e[k] or e[k] == INF or e[k] == -INF then
      assert.is_true(a[k] ~= a[k] and e[k] ~= e[k] or a[k] == e[k], ("element %d: expected %s, got %s"):format(k, e[k], a[k]))
    else
      close({a[k]}, {e[k]}, tol)
    end
  end
end

-- a nested table of 0-based indices, each + 1
local function plus1(v)
  if type(v) == "table" then
    local r = {}
    for k, x in ipairs(v) do r[k] = plus1(x) end
    return r
  end
  return v + 1
end

-- the values of a list of tensors
local function lists(parts)
  local r = {}
  for k, p in ipairs(parts) do r[k] = p:tolist() end
  return r
end

-- a list of tensors against nested tables, one by one (flat() loses empty parts)
local function same_parts(expected, parts)
  assert.are.equal(#expected, #parts)
  for k = 1, #expected do same(expected[k], parts[k], "part " .. k) end
end

local function has(msg, f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, "expected an error: " .. msg)
  assert.is_truthy(tostring(e):find(msg, 1, true), "expected '" .. msg .. "' in: " .. tostring(e))
end

local function L(v, dt) return pt.tensor(v, {dtype = dt or "int64"}) end
local function D(v) return pt.tensor(v, F64) end

describe("registration", function()
  it("adds each function as torch has it: pt.* and a method, or a method only, with a help text", function()
    local M = require "partrain.tensor_more"
    assert.is_nil(M._conflicts)
    local both = {"diag", "isclose", "nan_to_num", "nan_to_num_", "logit", "addcmul", "addcdiv", "inner", "true_divide",
                  "float_power", "logaddexp2", "deg2rad", "rad2deg", "sgn", "signbit", "isreal"}
    local method_only = {"fill_diagonal_", "tril_", "triu_", "addcmul_", "addcdiv_"}
    for _, name in ipairs(both) do
      assert.is_function(pt[name], name)
      assert.are.equal(pt[name], pt.Tensor[name], name)
      assert.is_string(pt._docs[pt[name]], name)
    end
    for _, name in ipairs(method_only) do
      assert.is_function(pt.Tensor[name], name)
      assert.is_string(pt._docs[pt.Tensor[name]], name)
      assert.is_nil(rawget(pt, name), name)
    end
  end)
end)

describe("diag", function()
  it("builds the matrix of a 1-D tensor and takes the diagonal of a 2-D one, as torch", function()
    local v = pt.tensor({1.5, -2, 3})
    same(R.diag_v, pt.diag(v))
    same(R.diag_v1, v:diag(1))
    same(R.diag_vm2, v:diag({diagonal = -2}))
    local m = pt.arange(0, 12):view(3, 4)
    same(R.diag_m, m:diag())
    same(R.diag_m1, pt.diag(m, 1))
    same(R.diag_mm1, m:diag(-1))
    same(R.diag_m3, m:diag(3))
    -- outside the matrix: empty (torch 1.13 fails there with an overflow; torch 2 gives this)
    same({0}, m:diag(4):size())
    same({0}, m:diag(-3):size())
    -- a copy, not a view
    local d = m:diag()
    d:fill_(100)
    assert.are.equal(0, m[1][1])
  end)

  it("passes gradients back (float64 gradcheck)", function()
    assert.is_true(gradcheck(function(x) return pt.diag(x, 1) end, {D({1, 2, 3})}))
    assert.is_true(gradcheck(function(x) return x:diag(-1) end, {D({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}})}))
  end)

  it("checks its arguments", function()
    has("diag: expected a 1-D or 2-D tensor, got 3-D (shape {2,2,2})", pt.diag, pt.ones(2, 2, 2))
    has("diag: expected a 1-D or 2-D tensor, got 0-D (shape {})", pt.diag, pt.tensor(1))
    has("diag: diagonal must be an integer, got 1.5", pt.diag, pt.ones(2), 1.5)
    has("diag: unknown option 'offset' (options: diagonal)", pt.diag, pt.ones(2), {offset = 1})
    has("diag: unexpected argument #3 (number)", pt.diag, pt.ones(2), 1, 2)
    has("diag: bad argument #1 (Tensor expected, got table)", pt.diag, {1, 2})
  end)
end)

describe("fill_diagonal_", function()
  local function fd(shape, value, wrap, dt)
    local x = pt.zeros(shape, {dtype = dt or "float32"})
    assert.are.equal(x, x:fill_diagonal_(value, wrap)) -- in place: t itself
    return x
  end

  it("fills the main diagonal as torch, wrapping below tall matrices when asked", function()
    same(R.fd33, fd({3, 3}, 5))
    same(R.fd34, fd({3, 4}, 2))
    same(R.fd53, fd({5, 3}, 1))
    same(R.fd53w, fd({5, 3}, 1, true))
    same(R.fd73w, fd({7, 3}, 1, true))
    same(R.fd83w, fd({8, 3}, 1, true))
    same(R.fd35w, fd({3, 5}, 7, true))
    same(R.fd222, fd({2, 2, 2}, 1))
    same(R.fd_int, fd({2, 3}, 2.7, false, "int64"))
    same(R.fd_bool, fd({2, 2}, true, false, "bool"))
    local x = pt.zeros(5, 3)
    x:fill_diagonal_({fill_value = 1, wrap = true})
    same(R.fd53w, x)
    same({0, 3}, fd({0, 3}, 1, true):size())
  end)

  it("works on views and gives torch's gradient", function()
    local m = pt.zeros(4, 4)
    m:narrow(1, 2, 2):narrow(2, 2, 2):fill_diagonal_(9)
    same({{0.0, 0.0, 0.0, 0.0}, {0.0, 9.0, 0.0, 0.0}, {0.0, 0.0, 9.0, 0.0}, {0.0, 0.0, 0.0, 0.0}}, m)
    local x = pt.tensor({{1, 2, 3}, {4, 5, 6}}, {requires_grad = true})
    local y = x * 1
    y:fill_diagonal_(0)
    local loss = (y * pt.tensor({{1, 2, 3}, {4, 5, 6}})):sum()
    loss:backward()
    same(R.fd_grad, x.grad)
  end)

  it("checks its arguments", function()
    has("fill_diagonal_: expected a tensor of at least 2 dimensions, got shape {3}", pt.Tensor.fill_diagonal_,
        pt.zeros(3), 1)
    has("fill_diagonal_: all dimensions of input must be of equal length, got shape {3,4,3}", pt.Tensor.fill_diagonal_,
        pt.zeros(3, 4, 3), 1)
    has("fill_diagonal_: fill_value must be a number or a boolean, got nil", pt.Tensor.fill_diagonal_, pt.zeros(2, 2))
    has("fill_diagonal_: fill_value must be a number or a boolean, got tensor", pt.Tensor.fill_diagonal_, pt.zeros(2, 2),
        pt.tensor(1))
    has("fill_diagonal_: wrap must be a boolean, got number", pt.Tensor.fill_diagonal_, pt.zeros(2, 2), 1, 1)
    has("fill_diagonal_: unknown option 'value' (options: fill_value, wrap)", pt.Tensor.fill_diagonal_, pt.zeros(2, 2),
        {value = 1})
    has("fill_diagonal_: unexpected argument #4 (number)", pt.Tensor.fill_diagonal_, pt.zeros(2, 2), 1, true, 3)
    has("fill_diagonal_: a leaf tensor that requires grad is used in an in-place operation",
        pt.Tensor.fill_diagonal_, pt.zeros(2, 2, {requires_grad = true}), 1)
  end)
end)

describe("tril_ and triu_", function()
  it("zero the triangle in place, as torch", function()
    local a = pt.arange(1, 13):float():view(3, 4)
    local x = a:clone()
    assert.are.equal(x, x:tril_())
    same(R.tril_, x)
    same(R.tril_1, a:clone():tril_(1))
    same(R.triu_m1, a:clone():triu_({diagonal = -1}))
    same(R.triu_2, a:clone():triu_(2))
    local b = pt.arange(1, 19):view(2, 3, 3)
    same(R.tril_b, b:clone():tril_(-1))
    same(R.triu_b, b:clone():triu_())
    -- the same as the copies
    same(a:tril(-1):tolist(), a:clone():tril_(-1))
  end)

  it("pass gradients back through the kept elements", function()
    local x = pt.ones(3, 3, {dtype = "float64", requires_grad = true})
    local y = x * 2
    y:triu_(1)
    y:sum():backward()
    same({{0.0, 2.0, 2.0}, {0.0, 0.0, 2.0}, {0.0, 0.0, 0.0}}, x.grad)
  end)

  it("check their arguments", function()
    has("tril_: input must have at least 2 dimensions, got 1", pt.Tensor.tril_, pt.ones(3))
    has("triu_: diagonal must be an integer, got 0.5", pt.Tensor.triu_, pt.ones(3, 3), 0.5)
    has("triu_: unknown option 'k' (options: diagonal)", pt.Tensor.triu_, pt.ones(3, 3), {k = 1})
    has("tril_: unexpected argument #3 (number)", pt.Tensor.tril_, pt.ones(3, 3), 1, 2)
    has("tril_: a leaf tensor that requires grad is used in an in-place operation", pt.Tensor.tril_,
        pt.ones(2, 2, {requires_grad = true}))
  end)
end)

describe("isclose", function()
  local a, b = D(R.ic_a), D(R.ic_b)

  it("gives torch's answers, with every option", function()
    same(R.ic, pt.isclose(a, b))
    same(R.ic_nan, a:isclose(b, {equal_nan = true}))
    same(R.ic_r, pt.isclose(a, b, {rtol = 0.1, atol = 0}))
    same(R.ic_0, pt.isclose(a, b, {rtol = 0, atol = 0}))
    same(R.ic_bc, pt.isclose(pt.tensor({{1}, {2}}), pt.tensor({1, 2.00001, 2.5})))
    same(R.ic_int, pt.isclose(L({1, 5, 10, -4}), L({2, 5, 12, -3}), {atol = 1}))
    same(R.ic_int0, pt.isclose(L({1, 5, 10, -4}), L({2, 5, 12, -3})))
    same(R.ic_f32, pt.isclose(pt.tensor({1, 1.00001, 1.0001}), pt.tensor({1.000001, 1, 1})))
    assert.are.equal("bool", pt.isclose(a, b):dtype())
  end)

  it("agrees with allclose", function()
    local pairs_ = {{a, b, {}}, {a, b, {equal_nan = true}}, {a:narrow(1, 1, 2), b:narrow(1, 1, 2), {}},
                    {pt.tensor({1, 2}), pt.tensor({1.1, 2}), {rtol = 0.2}}, {L({1, 2}), L({1, 3}), {atol = 1}}}
    for _, p in ipairs(pairs_) do
      assert.are.equal(p[1]:allclose(p[2], p[3]), pt.isclose(p[1], p[2], p[3]):all():item())
    end
  end)

  it("checks its arguments", function()
    has("isclose: expected tensors of one dtype, got float32 and float64", pt.isclose, pt.ones(2), D({1, 2}))
    has("isclose: rtol must be greater than or equal to zero, got -1", pt.isclose, a, b, {rtol = -1})
    has("isclose: atol must be greater than or equal to zero, got -0.5", pt.isclose, a, b, {atol = -0.5})
    has("isclose: unknown option 'tol' (options: rtol, atol, equal_nan)", pt.isclose, a, b, {tol = 1})
    has("isclose: rtol must be a number, got string", pt.isclose, a, b, {rtol = "1"})
    has("isclose: equal_nan must be a boolean, got number", pt.isclose, a, b, {equal_nan = 1})
    has("isclose: shapes {2} and {3} cannot be broadcast", pt.isclose, pt.ones(2), pt.ones(3))
    has("isclose: bad argument #2 (Tensor expected, got number)", pt.isclose, a, 1)
    has("isclose: bad argument #3 (options table expected, got number)", pt.isclose, a, b, 1)
    has("isclose: unexpected argument #4 (number)", pt.isclose, a, b, {}, 1)
  end)
end)

describe("nan_to_num", function()
  local x = pt.tensor({NAN, INF, -INF, 1.5, -2})

  it("replaces NaN and the infinities with torch's defaults or the values given", function()
    same(R.n2n, pt.nan_to_num(x))
    same(R.n2n_args, x:nan_to_num(0.5, 10, -10))
    same(R.n2n_args, x:nan_to_num({nan = 0.5, posinf = 10, neginf = -10}))
    same(R.n2n_pos, pt.nan_to_num(x, {posinf = 7.25}))
    same(R.n2n_pos, pt.nan_to_num(x, nil, 7.25))
    same(R.n2n_d, x:double():nan_to_num())
    same({NAN, INF, -INF, 1.5, -2.0}, x) -- x unchanged
    local i = L({1, 2})
    local c = i:nan_to_num()
    same({1, 2}, c)
    assert.are_not.equal(i, c) -- a copy, as torch
  end)

  it("passes gradients where t was finite (torch's) and a float64 gradcheck", function()
    local xx = D({NAN, INF, -INF, 1.5, -2})
    xx.requires_grad = true
    local loss = (xx:nan_to_num() * D({1, 2, 3, 4, 5})):sum()
    loss:backward()
    same(R.n2n_grad, xx.grad)
    assert.is_true(gradcheck(function(t) return t:nan_to_num(0, 1, -1) * 3 end, {D({0.5, -1, 2})}))
  end)

  it("nan_to_num_ works in place", function()
    local y = x:clone()
    assert.are.equal(y, y:nan_to_num_())
    same(R.n2n, y)
    y = x:clone()
    pt.nan_to_num_(y, {nan = 0.5, posinf = 10, neginf = -10})
    same(R.n2n_args, y)
    local i = L({1, 2})
    assert.are.equal(i, i:nan_to_num_())
  end)

  it("checks its arguments", function()
    has("nan_to_num: unknown option 'inf' (options: nan, posinf, neginf)", pt.nan_to_num, x, {inf = 1})
    has("nan_to_num: nan must be a number, got string", pt.nan_to_num, x, "0")
    has("nan_to_num: posinf must be a number, got boolean", pt.nan_to_num, x, {posinf = true})
    has("nan_to_num: unexpected argument #5 (number)", pt.nan_to_num, x, 0, 1, 2, 3)
    has("nan_to_num: unexpected argument #3 (number)", pt.nan_to_num, x, {nan = 1}, 2)
    has("nan_to_num_: neginf must be a number, got string", pt.nan_to_num_, x:clone(), 0, 1, "x")
    has("nan_to_num_: a leaf tensor that requires grad is used in an in-place operation", pt.nan_to_num_,
        pt.ones(2, {requires_grad = true}))
  end)
end)

describe("logit", function()
  local x = pt.tensor({0.1, 0.5, 0.9, 0, 1, -0.5, 1.5, 0.25})

  it("gives torch's values, with and without eps", function()
    near(pt.logit(x), R.logit)
    near(x:logit(0.2), R.logit_e)
    near(x:logit({eps = 0.7}), R.logit_e7)
    local i = L({0, 1, 2}):logit()
    assert.are.equal("float32", i:dtype())
    near(i, R.logit_int)
  end)

  it("gives torch's gradients (NaN outside [0, 1], none where clamped) and a float64 gradcheck", function()
    local g = D({0.1, 0.3, 0.95, -0.5, 0.5})
    g.requires_grad = true
    g:logit():sum():backward()
    near(g.grad, R.logit_grad)
    g = D({0.1, 0.3, 0.95, -0.5, 0.5, 0.2})
    g.requires_grad = true
    g:logit(0.2):sum():backward()
    near(g.grad, R.logit_grad_e)
    assert.is_true(gradcheck(function(t) return t:logit() end, {D({0.1, 0.4, 0.8})}))
    assert.is_true(gradcheck(function(t) return t:logit(0.05) end, {D({0.01, 0.4, 0.99})}))
  end)

  it("checks its arguments", function()
    has("logit: eps must be a number, got string", pt.logit, x, "0.1")
    has("logit: unknown option 'epsilon' (options: eps)", pt.logit, x, {epsilon = 0.1})
    has("logit: unexpected argument #3 (number)", pt.logit, x, 0.1, 2)
  end)
end)

describe("addcmul and addcdiv", function()
  local t, t1, t2 = pt.tensor({1, -2, 0.5}), pt.tensor({{2}, {-3}}), pt.tensor({0.5, 4, -1.5})

  it("give torch's values, broadcast and promoted", function()
    near(pt.addcmul(t, t1, t2), R.acm)
    near(t:addcmul(t1, t2, {value = 0.5}), R.acm_v)
    near(pt.addcdiv(t, t1, t2), R.acd)
    near(t:addcdiv(t1, t2, {value = -2}), R.acd_v)
    same(R.acm_int, pt.addcmul(L({1, 2}), L({3, 4}), L({5, -6}), {value = 2}))
    local p = pt.addcmul(pt.tensor({1}), D({2}), L({3}))
    assert.are.equal("float64", p:dtype())
    same(R.acm_prom, p)
    same(R.acd_mixed, pt.addcdiv(L({1, 2}), L({3, 4}), pt.tensor({2, 8})))
  end)

  it("have in-place forms", function()
    local x = pt.tensor({{1, 2, 3}, {4, 5, 6}})
    assert.are.equal(x, x:addcmul_(pt.tensor({1, 2, 3}), pt.tensor({{2}, {0.5}}), {value = 3}))
    same(R.acm_, x)
    x = pt.tensor({{1, 2, 3}, {4, 5, 6}})
    x:addcdiv_(pt.tensor({1, 2, 3}), pt.tensor({{2}, {0.5}}), {value = 3})
    same(R.acd_, x)
  end)

  it("pass float64 gradchecks", function()
    assert.is_true(gradcheck(function(a, b, c) return pt.addcmul(a, b, c, {value = 0.5}) end,
                             {D({1, -2, 0.5}), D({{2}, {-3}}), D({0.5, 4, -1.5})}))
    assert.is_true(gradcheck(function(a, b, c) return a:addcdiv(b, c, {value = -2}) end,
                             {D({1, -2, 0.5}), D({{2}, {-3}}), D({0.5, 4, -1.5})}))
    assert.is_true(gradcheck(function(a, b, c)
      local y = a * 1
      y:addcmul_(b, c)
      return y
    end, {D({{1, 2}, {3, 4}}), D({0.5, 2}), D({{1}, {-1}})}))
  end)

  it("check their arguments", function()
    has("addcdiv: integer division is not supported (tensor1 and tensor2 are int64 and int64): give a floating point "
        .. "tensor1 or tensor2", pt.addcdiv, pt.ones(2), L({1, 2}), L({3, 4}))
    has("addcmul: value must be an integer for int64 tensors, got 0.5", pt.addcmul, L({1}), L({2}), L({3}), {value = 0.5})
    has("addcmul: value must be a number, got string", pt.addcmul, t, t1, t2, {value = "2"})
    has("addcdiv: unknown option 'alpha' (options: value)", pt.addcdiv, t, t1, t2, {alpha = 2})
    has("addcmul: bad argument #4 (options table expected, got number)", pt.addcmul, t, t1, t2, 2)
    has("addcmul: shapes {2} and {3} cannot be broadcast", pt.addcmul, t, pt.ones(2), pt.ones(3))
    has("addcdiv: shapes {2} and {2,3} cannot be broadcast", pt.addcdiv, pt.ones(2), t1, t2)
    has("addcmul: bad argument #3 (Tensor expected, got nil)", pt.addcmul, t, t1)
    has("addcmul: unexpected argument #5 (number)", pt.addcmul, t, t1, t2, {}, 5)
    has("addcmul_: output with shape {3} doesn't match the broadcast shape {2,3}", pt.Tensor.addcmul_, t:clone(), t1, t2)
    has("addcdiv_: integer division is not supported", pt.Tensor.addcdiv_, pt.ones(2), L({1, 2}), L({3, 4}))
  end)
end)

describe("inner, true_divide and float_power", function()
  it("inner gives torch's products", function()
    local a = pt.tensor({{1, 2, 3}, {-1, 0.5, 2}})
    local b = pt.tensor({{2, 0, 1}, {1, 1, 1}, {0.5, -2, 3}, {3, 2, 1}})
    same(R.inner, pt.inner(a, b))
    local d = pt.tensor({1, 2, 3}):inner(pt.tensor({4, 5, 6}))
    assert.are.equal(0, d:dim())
    same(R.inner_1d, d:item())
    same(R.inner_0d, pt.inner(pt.tensor(2), a))
    same(R.inner_int, pt.inner(L({{1, 2}, {3, 4}}), L({5, 6})))
    same(R.inner_3d, pt.arange(0, 12):float():view(2, 2, 3):inner(pt.tensor({1, -1, 2})))
    assert.is_true(gradcheck(function(x, y) return pt.inner(x, y) end,
                             {D({{1, 2, 3}, {-1, 0.5, 2}}), D({{2, 0, 1}, {0.5, -2, 3}})}))
  end)

  it("true_divide is div", function()
    same(R.tdiv, pt.true_divide(L({1, 2, 3}), L({2, 2, 2})))
    same(R.tdiv_n, L({1, 2, 3}):true_divide(4))
    assert.is_true(gradcheck(function(x, y) return x:true_divide(y) end, {D({1, 2}), D({0.5, -4})}))
  end)

  it("float_power computes in float64", function()
    local r = pt.float_power(L({2, 3, -2}), 2)
    assert.are.equal("float64", r:dtype())
    same(R.fp, r)
    same(R.fp_n, pt.float_power(2, pt.tensor({0.5, -1, 3})))
    near(pt.tensor({1.1, 2.2}):float_power(pt.tensor({1.3, 0.7})), R.fp_f, 1e-15)
    same(R.fp_neg, pt.float_power(L({2, 4}), -1))
    assert.is_true(gradcheck(function(x, y) return pt.float_power(x, y) end, {D({1.5, 2, 0.5}), D({2, -1, 0.5})}))
    -- a float32 input gets a float32 gradient
    local x = pt.tensor({2, 3}, {requires_grad = true})
    pt.float_power(x, 2):sum():backward()
    assert.are.equal("float32", x.grad:dtype())
    same({4.0, 6.0}, x.grad)
  end)

  it("check their arguments", function()
    has("inner: the last dimension must match on both input tensors, got shapes {2,3} and {2,4}", pt.inner,
        pt.ones(2, 3), pt.ones(2, 4))
    has("inner: expected tensors of one dtype, got float32 and float64", pt.inner, pt.ones(2, 3), D({1, 2, 3}))
    has("inner: bad argument #2 (Tensor expected, got number)", pt.inner, pt.ones(2), 2)
    has("true_divide: bad argument #1 (Tensor expected, got number)", pt.true_divide, 1, pt.ones(2))
    has("true_divide: unexpected argument #3 (table)", pt.true_divide, pt.ones(2), 2, {rounding_mode = "floor"})
    has("float_power: expected a tensor as base or exponent, got two numbers", pt.float_power, 2, 3)
    has("float_power: bad argument #2 (Tensor or number expected, got string)", pt.float_power, pt.ones(2), "2")
  end)
end)

describe("logaddexp2", function()
  it("gives torch's values, infinities included", function()
    local a = pt.tensor({1, INF, -INF, INF, 0.5, -3, 100, -100})
    local b = pt.tensor({2, INF, -INF, -INF, 0.5, 4, 100.5, -101})
    near(pt.logaddexp2(a, b), R.lae2)
    local p = pt.tensor({1, 2}):logaddexp2(D({{0.5}, {3}}))
    assert.are.equal("float64", p:dtype())
    near(p, R.lae2_d, 1e-14)
  end)

  it("gives torch's gradients (halves at a tie) and a float64 gradcheck", function()
    local a, b = D({1, 0.5, -2}), D({2, 0.5, 1})
    a.requires_grad, b.requires_grad = true, true
    pt.logaddexp2(a, b):sum():backward()
    near(a.grad, R.lae2_ga, 1e-14)
    near(b.grad, R.lae2_gb, 1e-14)
    assert.is_true(gradcheck(function(x, y) return x:logaddexp2(y) end, {D({1, -3, 40}), D({{2}, {0.25}})}))
  end)

  it("checks its arguments", function()
    has("logaddexp2: expected floating point tensors, got int64 and int64", pt.logaddexp2, L({1}), L({2}))
    has("logaddexp2: shapes {2} and {3} cannot be broadcast", pt.logaddexp2, pt.ones(2), pt.ones(3))
    has("logaddexp2: bad argument #2 (Tensor expected, got number)", pt.logaddexp2, pt.ones(2), 1)
  end)
end)

describe("deg2rad, rad2deg, sgn, signbit and isreal", function()
  it("deg2rad and rad2deg give torch's values", function()
    near(pt.deg2rad(pt.tensor({180, -90, 45, 1})), R.d2r)
    near(pt.tensor({math.pi, -1, 0.5}):rad2deg(), R.r2d)
    local i = L({180, 90}):deg2rad()
    assert.are.equal("float32", i:dtype())
    near(i, R.d2r_int)
    near(L({true, false}, "bool"):rad2deg(), R.r2d_bool)
    near(D({30, 1}):deg2rad(), R.d2r_d, 1e-15)
    assert.is_true(gradcheck(function(x) return x:deg2rad() + x:rad2deg() end, {D({0.5, -2})}))
  end)

  it("sgn is sign for real tensors", function()
    same(R.sgn, pt.sgn(pt.tensor({-2, 0, 3, -0.0})))
    same(R.sgn_int, L({-5, 0, 7}):sgn())
    same({true, false}, L({true, false}, "bool"):sgn())
  end)

  it("signbit reads the sign bit: -0.0 and a negative NaN too", function()
    local pnan, nnan = math.abs(0 / 0), -math.abs(0 / 0) -- NaNs with the sign bit clear and set
    same(R.signbit, pt.signbit(pt.tensor({-0.0, 0.0, -1.0, 2.0, pnan, nnan, -INF, INF})))
    same(R.signbit_d, D({-0.0, 1e-300, -1e-300}):signbit())
    same(R.signbit_int, L({-1, 0, 1}):signbit())
    same(R.signbit_u8, L({0, 255}, "uint8"):signbit())
    same({false}, L({true}, "bool"):signbit())
  end)

  it("isreal is true everywhere", function()
    same({{true, true}, {true, true}}, pt.isreal(pt.ones(2, 2)))
    same({true}, L({3}):isreal())
    same({}, pt.tensor(1):isreal():size())
  end)

  it("check their arguments", function()
    has("deg2rad: bad argument #1 (Tensor expected, got number)", pt.deg2rad, 180)
    has("rad2deg: unexpected argument #2 (number)", pt.rad2deg, pt.ones(2), 1)
    has("sgn: unexpected argument #2 (number)", pt.sgn, pt.ones(2), 1)
    has("signbit: bad argument #1 (Tensor expected, got nil)", pt.signbit)
    has("isreal: unexpected argument #2 (number)", pt.isreal, pt.ones(2), 1)
  end)
end)
