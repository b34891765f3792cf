-- The tensor functions partrain.tensor_more adds for PyTorch's API (diag, fill_diagonal_, tril_/triu_, isclose,
-- nan_to_num, logit, addcmul/addcdiv, inner, true_divide, float_power, logaddexp2, deg2rad/rad2deg, sgn, signbit,
-- isreal, new_*, type_as, element_size, nbytes, itemsize, ndimension, nelement, cpu, cuda, unflatten,
-- fliplr/flipud, msort, hstack/vstack/row_stack/dstack/column_stack, tensor_split, hsplit/vsplit/dsplit,
-- broadcast_tensors, unique_consecutive) against torch 1.13: the values in R were computed with /usr/bin/python3
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
  n2n_big = {3.4028234663852886e+38, -3.4028234663852886e+38, INF},
  n2n_big_ = {-INF},
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

-- a list of tensors against nested tables, one by one (flat() loses empty parts)
local function same_parts(expected, parts)
  assert.are.equal(#expected, #parts)
  for k = 1, #expected do same(expected[k], parts[k], "part " .. k) end
end

local has = support.assert_error_contains

local function L(v, dt) return pt.tensor(v, {dtype = dt or "int64"}) end
local function D(v) return pt.tensor(v, F64) end

describe("registration", function()
  it("adds each function as torch has it: pt.* and a method, a method only or pt.* only, with a help text", function()
    local M = require "partrain.tensor_more"
    assert.is_nil(M._conflicts)
    local both = {"diag", "isclose", "nan_to_num", "nan_to_num_", "logit", "addcmul", "addcdiv", "inner", "true_divide",
                  "float_power", "logaddexp2", "deg2rad", "rad2deg", "sgn", "signbit", "isreal", "unflatten", "fliplr",
                  "flipud", "msort", "tensor_split", "hsplit", "vsplit", "dsplit", "unique_consecutive"}
    local method_only = {"fill_diagonal_", "tril_", "triu_", "addcmul_", "addcdiv_", "new_zeros", "new_ones", "new_full",
                         "new_empty", "new_tensor", "type_as", "element_size", "nbytes", "itemsize", "ndimension",
                         "nelement", "cpu", "cuda"}
    local fn_only = {"hstack", "vstack", "row_stack", "dstack", "column_stack", "broadcast_tensors"}
    for _, name in ipairs(both) do
      assert.is_function(pt[name], name)
      assert.are.equal(pt[name], pt.Tensor[name], name)
      assert.is_string(pt._docs[pt[name]], name)
    end
    for _, name in ipairs(method_only) do
      assert.is_function(pt.Tensor[name], name)
      assert.is_string(pt._docs[pt.Tensor[name]], name)
      if name ~= "cuda" then assert.is_nil(rawget(pt, name), name) end
    end
    assert.is_table(pt.cuda) -- pt.cuda stays the module of is_available
    for _, name in ipairs(fn_only) do
      assert.is_function(pt[name], name)
      assert.is_nil(rawget(pt.Tensor, name), name)
      assert.is_string(pt._docs[pt[name]], name)
    end
  end)

  it("reaches the methods on a fresh tensor (the module loads on first use)", function()
    local out = io.popen(support.quote(support.exe) .. " -e "
      .. support.quote("io.write(pt.ones(2, 3):new_zeros(2):nelement(), ' ', pt.ones(2):element_size())") .. " 2>&1")
    local text = out:read("a")
    out:close()
    assert.are.equal("2 4", text)
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
    -- values beyond float32 are converted as a C cast: to the largest float or to an infinity
    same(R.n2n_big, pt.tensor({INF, -INF, NAN}):nan_to_num(1e300, 3.4028235e38, -0x1.fffffeffp127))
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
    y = pt.tensor({INF})
    y:nan_to_num_({posinf = -1e39})
    same(R.n2n_big_, y)
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

  it("has torch's infinite gradient at exactly 0 and 1, and its second derivative", function()
    -- torch: grad / (x (1 - x)); the composed log(x / (1 - x)) gave inf * 0 = NaN there
    local g = D({0, 1, 0.5, -0.1, 1.2})
    g.requires_grad = true
    g:logit():sum():backward()
    local want = {math.huge, math.huge, 4}
    for i = 1, 3 do assert.are.equal(want[i], g.grad[i]) end
    assert.is_true(g.grad[4] ~= g.grad[4] and g.grad[5] ~= g.grad[5])
    local z = D({0.3, 0.6})
    z.requires_grad = true
    local d1 = pt.autograd.grad(z:logit():sum(), {z}, {create_graph = true})[1]
    near(d1, D({4.761904761904762, 4.166666666666667}))
    near(pt.autograd.grad(d1:sum(), {z})[1], D({-9.070294784580497, 3.472222222222223}))
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

describe("new_zeros, new_ones, new_full, new_empty and new_tensor", function()
  local t = L({{1, 2}, {3, 4}})

  it("make tensors of t's dtype unless given", function()
    local z = t:new_zeros(2, 3)
    assert.are.equal("int64", z:dtype())
    same({{0, 0, 0}, {0, 0, 0}}, z)
    same({0, 0}, t:new_zeros({2}))
    same({}, t:new_zeros({}):size())
    local o = pt.ones(1, {dtype = "float64"}):new_ones({2}, {dtype = "float32"})
    assert.are.equal("float32", o:dtype())
    same({1.0, 1.0}, o)
    same({2, 2}, t:new_full({2}, 2.5)) -- converted to t's dtype, as torch
    same({2.5, 2.5}, t:new_full({2}, 2.5, {dtype = "float64"}))
    same({true}, t:new_full({1}, true, {dtype = "bool"}))
    local e = pt.ones(1):new_empty(3, 2)
    same({3, 2}, e:size())
    assert.are.equal("float32", e:dtype())
    same({1, 2}, t:new_tensor({1.5, 2}))
    same({1.5, 2.0}, t:new_tensor({1.5, 2}, {dtype = "float64"}))
    same(7, t:new_tensor(7):item())
    assert.are.equal("cpu", t:new_zeros(1):device())
    assert.are.equal("cpu", t:new_zeros(1, {device = "cpu"}):device())
  end)

  it("set requires_grad as asked; new_tensor copies and detaches a tensor", function()
    local f = pt.ones(2)
    local z = f:new_zeros({2}, {requires_grad = true})
    assert.is_true(z.requires_grad)
    assert.is_true(z.is_leaf)
    assert.is_false(f:new_ones(2).requires_grad)
    local src = pt.tensor({1, 2}, {requires_grad = true})
    local c = t:new_tensor(src)
    assert.are.equal("int64", c:dtype())
    same({1, 2}, c)
    local d = f:new_tensor(src)
    assert.is_false(d.requires_grad)
    d:fill_(5)
    same({1.0, 2.0}, src) -- a copy
  end)

  it("check their arguments", function()
    has("new_zeros: size expected (numbers or a list)", pt.Tensor.new_zeros, t)
    has("new_ones: size must be an integer, got 1.5", pt.Tensor.new_ones, t, 1.5)
    has("new_empty: sizes must be non-negative, got {2,-1}", pt.Tensor.new_empty, t, {2, -1})
    has("new_zeros: unknown option 'layout' (options: dtype, device, requires_grad)", pt.Tensor.new_zeros, t, 2,
        {layout = 1})
    has("new_zeros: unknown dtype 'half'", pt.Tensor.new_zeros, t, 2, {dtype = "half"})
    has("new_tensor: unknown dtype 'half'", pt.Tensor.new_tensor, t, t, {dtype = "half"})
    has("new_zeros: only floating point tensors can require gradients (dtype int64)", pt.Tensor.new_zeros, t, 2,
        {requires_grad = true})
    has("new_ones: requires_grad must be a boolean, got number", pt.Tensor.new_ones, t, 2, {requires_grad = 1})
    has("new_zeros: CUDA is not available", pt.Tensor.new_zeros, t, 2, {device = "cuda"})
    has("new_full: size must be a list of sizes, got number", pt.Tensor.new_full, t, 2, 1)
    has("new_full: fill_value must be a number or a boolean, got nil", pt.Tensor.new_full, t, {2})
    has("new_full: bad argument #4 (options table expected, got number)", pt.Tensor.new_full, t, {2}, 1, 2)
    has("new_tensor: data expected (a number, a nested table or a tensor)", pt.Tensor.new_tensor, t)
    has("new_tensor: unexpected argument #4 (number)", pt.Tensor.new_tensor, t, {1}, {}, 1)
  end)
end)

describe("type_as, element_size, nbytes, itemsize, ndimension, nelement, cpu and cuda", function()
  it("type_as converts to the other's dtype, t itself when it has it", function()
    local t = pt.tensor({1.5, -2.5})
    local i = t:type_as(L({1}))
    assert.are.equal("int64", i:dtype())
    same({1, -2}, i)
    assert.are.equal(t, t:type_as(pt.ones(1)))
    local x = pt.tensor({1, 2}, {requires_grad = true})
    x:type_as(D({1})):sum():backward()
    same({1.0, 1.0}, x.grad)
  end)

  it("sizes in elements and bytes, as torch", function()
    local sizes = {float32 = 4, float64 = 8, int64 = 8, int32 = 4, uint8 = 1, bool = 1}
    for dt, n in pairs(sizes) do
      local t = pt.zeros(2, 3, {dtype = dt})
      assert.are.equal(n, t:element_size(), dt)
      assert.are.equal(n, t:itemsize(), dt)
      assert.are.equal(6 * n, t:nbytes(), dt)
    end
    local v = pt.zeros(4, 5):narrow(2, 1, 2) -- a view: its own elements only
    assert.are.equal(32, v:nbytes())
    assert.are.equal(2, v:ndimension())
    assert.are.equal(8, v:nelement())
    assert.are.equal(0, pt.tensor(1):ndimension())
    assert.are.equal(1, pt.tensor(1):nelement())
  end)

  it("cpu gives t itself on the CPU; cuda raises as to(\"cuda\") without a GPU", function()
    local t = pt.ones(2)
    assert.are.equal(t:to("cpu"), t:cpu())
    if not pt.cuda.is_available() then
      local _, e = pcall(t.to, t, "cuda")
      local reason = e:match("to: (.*)$")
      has("cuda: " .. reason, t.cuda, t)
      has("cuda: " .. reason, t.cuda, t, 0)
      has("cuda: " .. reason, t.cuda, t, "cuda:1")
    else
      assert.are.equal("cuda:0", t:cuda():device())
    end
    has("cuda: device must be a device number (0, 1, ...) or \"cuda:N\", got 'cpu'", t.cuda, t, "cpu")
    has("cuda: device must be a device number (0, 1, ...) or \"cuda:N\", got -1", t.cuda, t, -1)
    has("cpu: unexpected argument #2 (string)", t.cpu, t, "cuda")
    has("element_size: unexpected argument #2 (number)", t.element_size, t, 1)
    has("nbytes: bad argument #1 (Tensor expected, got nil)", t.nbytes)
    has("type_as: bad argument #2 (Tensor expected, got string)", t.type_as, t, "float64")
  end)
end)

describe("unflatten, fliplr, flipud and msort", function()
  it("unflatten splits a dim as torch", function()
    local u = pt.arange(0, 24):view(2, 12)
    same(R.unf, u:unflatten(2, {3, 4}))
    same(R.unf_m1, pt.unflatten(u, -1, {2, -1, 3}):size())
    local tt = pt.arange(0, 12):view(3, 4):t()
    local v = tt:unflatten(2, {3, 1})
    same(R.unf_t, v)
    assert.is_true(v:is_same_storage(tt)) -- a view
    same({5, 0, 4}, pt.zeros(5, 0):unflatten(2, {0, 4}):size())
    assert.is_true(gradcheck(function(x) return x:unflatten(1, {2, 2}) * D({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}) end,
                             {D({{1, 2}, {3, 4}, {5, 6}, {7, 8}})}))
  end)

  it("fliplr, flipud and msort as torch", function()
    local m = pt.arange(0, 6):view(2, 3)
    same(R.fliplr, m:fliplr())
    same(R.flipud, pt.flipud(m))
    same(R.fliplr3, pt.arange(0, 8):view(2, 2, 2):fliplr())
    same({3, 2, 1}, L({1, 2, 3}):flipud())
    same(R.msort, pt.tensor({{3, 1, NAN}, {1, 2, 0}, {2, 0, 1}}):msort())
    same(2.0, pt.msort(pt.tensor(2)):item())
    assert.is_true(gradcheck(function(x) return x:fliplr() * D({{1, 2, 3}, {4, 5, 6}}) + x:flipud() end,
                             {D({{1, 2, 3}, {4, 5, 6}})}))
    assert.is_true(gradcheck(function(x) return x:msort() * D({{1, 2}, {3, 4}, {5, 6}}) end,
                             {D({{3, -1}, {1, 2}, {2, 0.5}})}))
  end)

  it("check their arguments", function()
    local u = pt.zeros(2, 6)
    has("unflatten: sizes {4,2} don't multiply up to the size of dimension 2 (6) of the input", u.unflatten, u, 2, {4, 2})
    has("unflatten: sizes {4,-1} don't multiply up to the size of dimension 2 (6) of the input", u.unflatten, u, 2, {4, -1})
    has("unflatten: only one size can be -1, got sizes {-1,-1}", u.unflatten, u, 2, {-1, -1})
    has("unflatten: sizes must be non-empty", u.unflatten, u, 2, {})
    has("unflatten: invalid size -2 in sizes {-2,-3}", u.unflatten, u, 2, {-2, -3})
    has("unflatten: the size -1 is ambiguous when the other sizes multiply to 0 (sizes {0,-1})", pt.unflatten,
        pt.zeros(2, 0), 2, {0, -1})
    has("unflatten: dimension 3 out of range (tensor has 2 dimensions)", u.unflatten, u, 3, {2, 3})
    has("unflatten: sizes must be a list of sizes, got number", u.unflatten, u, 2, 6)
    has("unflatten: size must be an integer, got 1.5", u.unflatten, u, 2, {1.5, 4})
    has("unflatten: expected a tensor of at least 1 dimension, got a 0-d tensor", pt.unflatten, pt.tensor(1), 1, {1})
    has("fliplr: expected a tensor of at least 2 dimensions, got shape {3}", pt.fliplr, pt.ones(3))
    has("flipud: expected a tensor of at least 1 dimension, got a 0-d tensor", pt.flipud, pt.tensor(1))
    has("msort: unexpected argument #2 (number)", pt.msort, pt.ones(3), 1)
  end)
end)

describe("hstack, vstack, row_stack, dstack and column_stack", function()
  local a, b = L({1, 2}), L({3, 4, 5})

  it("join as torch", function()
    same(R.hs1, pt.hstack(a, b))
    same(R.hs0, pt.hstack({pt.tensor(7, {dtype = "int64"}), a}))
    same(R.hs2, pt.hstack(L({{1}, {2}}), L({{3, 4}, {5, 6}})))
    same(R.vs1, pt.vstack(a, L({3, 4})))
    same(R.vs2, pt.vstack({L({{1, 2}, {3, 4}}), a}))
    same(R.vs2, pt.row_stack({L({{1, 2}, {3, 4}}), a}))
    same(R.vs0, pt.vstack(pt.tensor(1, {dtype = "int64"}), pt.tensor(2, {dtype = "int64"})))
    same(R.vs_prom, pt.vstack(a, pt.tensor({0.5, 1.5})))
    same(R.ds1, pt.dstack(a, L({3, 4})))
    same(R.ds2, pt.dstack(L({{1, 2}, {3, 4}}), L({{5, 6}, {7, 8}})))
    same(R.ds0, pt.dstack(pt.tensor(1, {dtype = "int64"}), pt.tensor(2, {dtype = "int64"})))
    same(R.cs1, pt.column_stack(a, L({3, 4})))
    same(R.cs2, pt.column_stack(L({{1, 2}, {3, 4}}), L({5, 6}), L({{7}, {8}})))
    same(R.cs0, pt.column_stack(pt.tensor(1, {dtype = "int64"}), L({2})))
    same({1, 0, 1}, pt.dstack(pt.zeros(0)):size())
  end)

  it("pass float64 gradchecks", function()
    local x, y = D({1, 2}), D({{3, 4}, {5, 6}})
    assert.is_true(gradcheck(function(p, q) return pt.vstack(p, q) * 2 end, {x, y}))
    assert.is_true(gradcheck(function(p, q) return pt.column_stack(p, q) end, {x, y}))
    assert.is_true(gradcheck(function(p, q) return pt.dstack(q, q * p, p:view(1, 2):expand(2, 2)) end, {x, y}))
    assert.is_true(gradcheck(function(p, q) return pt.hstack(p, q:narrow(1, 1, 1):view(2)) end, {x, y}))
  end)

  it("check their arguments", function()
    has("hstack: expects a non-empty list of tensors", pt.hstack)
    has("vstack: expects a non-empty list of tensors", pt.vstack, {})
    has("dstack: tensor 2 is not a tensor (got number)", pt.dstack, a, 3)
    has("hstack: tensors must have the same number of dimensions, got {2,1} and {2}", pt.hstack, pt.ones(2, 1), pt.ones(2))
    has("row_stack: expects a non-empty list of tensors", pt.row_stack)
    has("column_stack: tensor 1 is not a tensor (got string)", pt.column_stack, "x")
  end)
end)

describe("tensor_split, hsplit, vsplit and dsplit", function()
  local t = pt.arange(0, 7)

  -- torch's cut indices (0-based, a cut before element i) as partrain's (the 1-based start of a part)
  local function starts(idx)
    local r = {}
    for k, i in ipairs(idx) do r[k] = i >= 0 and i + 1 or i end
    return r
  end

  it("split into sections as torch", function()
    same_parts(R.ts3, t:tensor_split(3))
    same_parts(R.ts4, pt.tensor_split(t, 4))
    same_parts(R.ts9, t:tensor_split(9))
    local m = pt.arange(0, 12):view(3, 4)
    same_parts(R.ts_dim, m:tensor_split(3, 2))
    same_parts(R.ts_0d, t:tensor_split(pt.tensor(2, {dtype = "int64"})))
    local parts = m:tensor_split(2, {dim = -1})
    assert.is_true(parts[1]:is_same_storage(m)) -- views
  end)

  it("split at 1-based indices (torch's + 1), negative ones from the end, out of range ones clamped", function()
    same_parts(R.ts_idx2, t:tensor_split(starts({2, 3})))
    same_parts(R.ts_idx2, t:tensor_split({3, 4}))
    same_parts(R.ts_idx, t:tensor_split(starts({2, 100, -1, 1})))
    same_parts(R.ts_neg, t:tensor_split(starts({-3, -100})))
    local m = pt.arange(0, 12):view(3, 4)
    same_parts(R.ts_dim_idx, pt.tensor_split(m, starts({1, 3}), -1))
    same_parts(R.ts_tensor, t:tensor_split(L(starts({2, 5}))))
    same_parts({{0, 1, 2, 3, 4, 5, 6}}, t:tensor_split({}))
  end)

  it("hsplit, vsplit and dsplit split along their dims as torch", function()
    local m = pt.arange(0, 12):view(3, 4)
    same_parts(R.hsplit1, pt.arange(0, 6):hsplit(3))
    same_parts(R.hsplit2, m:hsplit(2))
    same_parts(R.hsplit_idx, pt.hsplit(m, starts({1, 3})))
    local v = pt.arange(0, 12):view(4, 3)
    same_parts(R.vsplit, v:vsplit(2))
    same_parts(R.vsplit_idx, pt.vsplit(v, starts({3})))
    local d = pt.arange(0, 12):view(1, 2, 6)
    same_parts(R.dsplit, d:dsplit(3))
    same_parts(R.dsplit_idx, d:dsplit(starts({2, 5})))
  end)

  it("pass float64 gradchecks", function()
    assert.is_true(gradcheck(function(x)
      local p = x:tensor_split({2, 4}, 2)
      return pt.cat({p[3] * 2, p[1] * 3, p[2]}, 2)
    end, {D({{1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}})}))
    assert.is_true(gradcheck(function(x)
      local p = x:vsplit(2)
      return p[1] * p[2]
    end, {D({{1, 2}, {3, 4}, {5, 6}, {7, 8}})}))
  end)

  it("check their arguments", function()
    has("tensor_split: number of sections must be larger than 0, got 0", t.tensor_split, t, 0)
    has("tensor_split: index 0 is no position (indices are 1-based, negative ones count from the end)", t.tensor_split,
        t, {0, 2})
    has("tensor_split: expected a tensor of at least 1 dimension, got a 0-d tensor", pt.tensor_split, pt.tensor(1), 2)
    has("tensor_split: indices_or_sections must be an integer tensor, got float32", t.tensor_split, t, pt.tensor({2}))
    has("tensor_split: indices_or_sections must be a 0-d or 1-D tensor, got shape {1,1}", t.tensor_split, t,
        L({{2}}))
    has("tensor_split: indices_or_sections must be a number, a list of indices or an integer tensor, got string",
        t.tensor_split, t, "2")
    has("tensor_split: sections must be an integer, got 1.5", t.tensor_split, t, 1.5)
    has("tensor_split: index must be an integer, got 1.5", t.tensor_split, t, {1.5})
    has("tensor_split: dimension 2 out of range (tensor has 1 dimensions)", t.tensor_split, t, 2, 2)
    has("tensor_split: unknown option 'axis' (options: dim)", t.tensor_split, t, 2, {axis = 1})
    has("hsplit: cannot split dimension 1 of size 7 into 3 equal sections", t.hsplit, t, 3)
    has("hsplit: expected a tensor of at least 1 dimension, got shape {}", pt.hsplit, pt.tensor(1), 1)
    has("vsplit: expected a tensor of at least 2 dimensions, got shape {7}", t.vsplit, t, 7)
    has("dsplit: expected a tensor of at least 3 dimensions, got shape {2,2}", pt.dsplit, pt.ones(2, 2), 2)
    has("vsplit: cannot split dimension 1 of size 4 into 3 equal sections", pt.vsplit, pt.ones(4, 2), 3)
    has("hsplit: number of sections must be larger than 0, got 0", t.hsplit, t, 0)
    has("dsplit: indices_or_sections must be a number or a list of indices, got tensor", pt.dsplit, pt.ones(1, 1, 2),
        L({1}))
  end)
end)

describe("broadcast_tensors", function()
  it("expands the tensors to their common shape, as torch", function()
    local r = pt.broadcast_tensors(L({{1}, {2}}), L({3, 4, 5}), pt.tensor(6, {dtype = "int64"}))
    assert.are.equal(3, #r)
    for k = 1, 3 do same(R.bt[k], r[k]) end
    local x = pt.ones(3)
    assert.is_true(pt.broadcast_tensors({x, pt.ones(2, 1)})[1]:is_same_storage(x)) -- views
    same({}, pt.broadcast_tensors())
    assert.is_true(gradcheck(function(p, q)
      local b = pt.broadcast_tensors(p, q)
      return b[1] * b[2]
    end, {D({{1}, {2}}), D({3, 4, 5})}))
  end)

  it("checks its arguments", function()
    has("broadcast_tensors: shapes {2,1} and {3,3} cannot be broadcast", pt.broadcast_tensors, pt.ones(2, 1),
        pt.ones(3, 3))
    has("broadcast_tensors: tensor 2 is not a tensor (got number)", pt.broadcast_tensors, pt.ones(2), 1)
  end)
end)

describe("unique_consecutive", function()
  it("gives torch's runs, inverse (+1) and counts", function()
    local v, inv, cnt = pt.unique_consecutive(L({1, 1, 2, 2, 3, 1, 1, 2}), {return_inverse = true, return_counts = true})
    same(R.uc[1], v)
    same(plus1(R.uc[2]), inv)
    same(R.uc[3], cnt)
    local only = {L({1, 1, 2}):unique_consecutive()}
    assert.are.equal(1, #only)
    local v2, c2 = pt.tensor({NAN, NAN, 1, 1, NAN}):unique_consecutive({return_counts = true})
    same(R.uc_nan[1], v2)
    same(R.uc_nan[2], c2)
    v, inv, cnt = L({{1, 1, 2}, {2, 2, 1}}):unique_consecutive({return_inverse = true, return_counts = true})
    same(R.uc_2d[1], v)
    same(plus1(R.uc_2d[2]), inv)
    same(R.uc_2d[3], cnt)
    v, inv, cnt = pt.tensor(3, {dtype = "int64"}):unique_consecutive({return_inverse = true, return_counts = true})
    same(R.uc_0d[1], v)
    assert.are.equal(0, inv:dim())
    same(R.uc_0d[2] + 1, inv:item())
    same(R.uc_0d[3], cnt)
    local b, bc = L({true, true, false, true}, "bool"):unique_consecutive({return_counts = true})
    same(R.uc_bool[1], b)
    same(R.uc_bool[2], bc)
    v, inv, cnt = pt.tensor({}):unique_consecutive({return_inverse = true, return_counts = true})
    same({0}, v:size()); same({0}, inv:size()); same({0}, cnt:size())
  end)

  it("keeps runs of equal slices along dim", function()
    local m = L({{1, 1}, {1, 1}, {2, 3}, {1, 1}, {2, 3}, {2, 3}})
    local v, inv, cnt = pt.unique_consecutive(m, {return_inverse = true, return_counts = true, dim = 1})
    same(R.uc_dim[1], v)
    same(plus1(R.uc_dim[2]), inv)
    same(R.uc_dim[3], cnt)
    v, inv, cnt = m:t():unique_consecutive({return_inverse = true, return_counts = true, dim = -1})
    same(R.uc_dim2[1], v)
    same(plus1(R.uc_dim2[2]), inv)
    same(R.uc_dim2[3], cnt)
    v = pt.zeros(0, 2):unique_consecutive({dim = 1})
    same({0, 2}, v:size())
  end)

  it("gives no gradient (as unique)", function()
    local x = pt.tensor({1, 1, 2}, {requires_grad = true})
    assert.is_false(x:unique_consecutive().requires_grad)
  end)

  it("checks its arguments", function()
    local x = L({1, 2})
    has("unique_consecutive: unknown option 'sorted' (options: return_inverse, return_counts, dim)",
        pt.unique_consecutive, x, {sorted = true})
    has("unique_consecutive: return_counts must be a boolean, got number", pt.unique_consecutive, x,
        {return_counts = 1})
    has("unique_consecutive: dimension 2 out of range (tensor has 1 dimensions)", pt.unique_consecutive, x, {dim = 2})
    has("unique_consecutive: dim given for a 0-d tensor", pt.unique_consecutive, pt.tensor(1), {dim = 1})
    has("unique_consecutive: cannot take unique slices along dimension 1 of shape {3,0}: dimension 2 has size 0",
        pt.unique_consecutive, pt.zeros(3, 0), {dim = 1})
    has("unique_consecutive: bad argument #2 (options table expected, got boolean)", pt.unique_consecutive, x, true)
    has("unique_consecutive: unexpected argument #3 (number)", pt.unique_consecutive, x, {}, 1)
  end)
end)
