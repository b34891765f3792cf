-- partrain.tensor_more (meshgrid, kron, tensordot, cdist, take, index_add, bucketize, isin, clamp_min,
-- aminmax, var_mean, cov, quantile, renorm, ...) against torch 1.13: the values in R were computed with
-- /usr/bin/python3 (torch 1.13) on the same inputs (indices there are torch's, 0-based: plus1 adds 1 where
-- partrain is 1-based); float64 gradchecks and every error message.
local pt = require "partrain"
local support = require "spec.support"
local gradcheck = require "spec.gradcheck"
local flat = support.flat
local close = support.assert_close_with(1e-6)

local NAN, INF = 0 / 0, math.huge
local F64 = {dtype = "float64"}

local R = {
  mesh_ij = {{{1, 1}, {2, 2}, {3, 3}}, {{4, 5}, {4, 5}, {4, 5}}},
  mesh_xy = {{{1, 2, 3}, {1, 2, 3}}, {{4, 4, 4}, {5, 5, 5}}},
  mesh_xy3_shape = {2, 3, 4},
  mesh_xy3_3 = {{7, 7, 7}, {7, 7, 7}},
  mesh_0d = {{{2, 2}}, {{4, 5}}},
  mesh_grad = {{4.0, 7.25, 10.5}, {4.5, 9.0}},
  cart = {{1, 4, 0}, {1, 4, -1}, {1, 5, 0}, {1, 5, -1}, {2, 4, 0}, {2, 4, -1}, {2, 5, 0}, {2, 5, -1}, {3, 4, 0}, {3, 4, -1}, {3, 5, 0}, {3, 5, -1}},
  cart_empty_shape = {0, 2},
  comb2 = {{1.5, 2.5}, {1.5, 3.5}, {1.5, 4.5}, {2.5, 3.5}, {2.5, 4.5}, {3.5, 4.5}},
  comb3 = {{1.5, 2.5, 3.5}, {1.5, 2.5, 4.5}, {1.5, 3.5, 4.5}, {2.5, 3.5, 4.5}},
  comb2r = {{1, 1}, {1, 2}, {1, 3}, {2, 2}, {2, 3}, {3, 3}},
  comb4r2 = {{1.0, 1.0, 1.0}, {1.0, 1.0, 2.0}, {1.0, 2.0, 2.0}, {2.0, 2.0, 2.0}},
  comb_big_shape = {0, 4},
  tril33 = {{0, 1, 1, 2, 2, 2}, {0, 0, 1, 0, 1, 2}},
  tril341 = {{0, 0, 1, 1, 1, 2, 2, 2, 2}, {0, 1, 0, 1, 2, 0, 1, 2, 3}},
  tril43m1 = {{1, 2, 2, 3, 3, 3}, {0, 0, 1, 0, 1, 2}},
  triu33 = {{0, 0, 0, 1, 1, 2}, {0, 1, 2, 1, 2, 2}},
  triu34m1 = {{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2}, {0, 1, 2, 3, 0, 1, 2, 3, 1, 2, 3}},
  triu225 = {2, 0},
  tril_m5 = {2, 0},
  triu_0_3 = {2, 0},
  bd = {{1, 2, 0, 0, 0, 0}, {3, 4, 0, 0, 0, 0}, {0, 0, 5, 0, 0, 0}, {0, 0, 0, 6, 7, 8}},
  bd_promote = {{1.0, 1.0, 0.0}, {1.0, 1.0, 0.0}, {0.0, 0.0, 1.5}},
  bd_empty_rows = {{0.0, 0.0, 1.0}},
  de_1 = {{0.0, 1.0, 0.0}, {0.0, 0.0, 2.0}, {0.0, 0.0, 0.0}},
  de_m1 = {{0.0, 0.0, 0.0}, {1.0, 0.0, 0.0}, {0.0, 2.0, 0.0}},
  de_batch = {{{1.0, 0.0}, {0.0, 2.0}}, {{3.0, 0.0}, {0.0, 4.0}}},
  de_dims = {{{0.0, 1.0, 0.0}, {0.0, 3.0, 0.0}}, {{0.0, 0.0, 2.0}, {0.0, 0.0, 4.0}}, {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}}},
  de_dims_rev = {{{0.0, 1.0, 0.0}, {0.0, 3.0, 0.0}}, {{0.0, 0.0, 2.0}, {0.0, 0.0, 4.0}}, {{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0}}},
  df = {{1, 0, 0, 0}, {0, 2, 0, 0}, {0, 0, 3, 0}, {0, 0, 0, 4}},
  df_m1 = {{0, 0, 0}, {1, 0, 0}, {0, 2, 0}},
  df_2 = {{0, 0, 1, 0}, {0, 0, 0, 2}, {0, 0, 0, 0}, {0, 0, 0, 0}},
  kron_int = {{0, 1, 0, 2}, {1, 0, 2, 0}, {0, 3, 0, 4}, {3, 0, 4, 0}},
  kron_mixed = {{1.0, 0.5, 2.0, 1.0}, {2.0, 3.0, 4.0, 6.0}},
  kron_3d = {{{0.0, -0.0, 1.0, -1.0}, {2.0, -2.0, 3.0, -3.0}}},
  rot1 = {{2, 5}, {1, 4}, {0, 3}},
  rot2 = {{5, 4, 3}, {2, 1, 0}},
  rotm1 = {{3, 0}, {4, 1}, {5, 2}},
  rot3_rev = {{2, 5}, {1, 4}, {0, 3}},
  rot5 = {{2, 5}, {1, 4}, {0, 3}},
  rot3d = {{{2, 5}, {1, 4}, {0, 3}}},
  rot3d_neg = {{{6, 0}, {9, 3}}, {{7, 1}, {10, 4}}, {{8, 2}, {11, 5}}},
  van = {{1, 1, 1}, {4, 2, 1}, {9, 3, 1}},
  van_f = {{3.375, 2.25, 1.5, 1.0}, {-8.0, 4.0, -2.0, 1.0}, {0.0, 0.0, 0.0, 1.0}},
  van_inc = {{1, 1, 1, 1}, {1, 2, 4, 8}, {1, 3, 9, 27}},
  van_i32 = {{4, 2, 1}, {9, 3, 1}},
  van_bool = {{1, 1}, {0, 1}},
  td1 = {{{42.0, 48.0, 54.0}, {114.0, 136.0, 158.0}, {186.0, 224.0, 262.0}}, {{258.0, 312.0, 366.0}, {330.0, 400.0, 470.0}, {402.0, 488.0, 574.0}}},
  td_lists = {440.0, 1232.0},
  td_int = {440, 1232},
  td0_shape = {2, 3, 4, 4, 3},
  td0_el = 253.0,
  td_neg = {{{42.0, 48.0, 54.0}, {114.0, 136.0, 158.0}, {186.0, 224.0, 262.0}}, {{258.0, 312.0, 366.0}, {330.0, 400.0, 470.0}, {402.0, 488.0, 574.0}}},
  td2 = 110.0,
  addmv = {4.5, 9.5},
  addmv_b0 = {5.0, 11.0},
  addmv_0d = {6.0, 12.0},
  addbmm = {{18.83333396911621, 23.33333396911621}, {25.833332061767578, 33.333335876464844}},
  addbmm_row = {{10.166666984558105, 10.166666984558105}, {13.166666030883789, 14.666666984558105}},
  baddbmm = {{{0.6666667461395264, 1.1666666269302368}, {-0.8333331942558289, 1.1666665077209473}}, {{18.666667938232422, 22.166667938232422}, {26.166667938232422, 31.166667938232422}}},
  baddbmm_bc = {{{1.0833333730697632, 2.3333332538604736}, {0.33333340287208557, 2.3333332538604736}}, {{10.083333969116211, 12.833333969116211}, {13.833333969116211, 17.33333396911621}}},
  chain = {{13.0}, {3.5}},
  cdist_2 = {{0.0, 5.0}, {1.4142135381698608, 3.605551242828369}, {2.0, 4.123105525970459}},
  cdist_1 = {{0.0, 7.0}, {2.0, 5.0}, {2.0, 5.0}},
  cdist_0 = {{0.0, 2.0}, {2.0, 2.0}, {1.0, 2.0}},
  cdist_inf = {{0.0, 4.0}, {1.0, 3.0}, {2.0, 4.0}},
  cdist_half = {{0.0, 13.928203582763672}, {4.0, 9.898979187011719}, {1.9999998807907104, 9.0}},
  cdist_3 = {{0.0, 4.497941493988037}, {1.2599210739135742, 3.271066427230835}, {2.0, 4.020725727081299}},
  cdist_batch = {{{0.800000011920929, 1.0198038816452026}, {0.5656853914260864, 0.8485281467437744}, {0.800000011920929, 1.0198038816452026}}, {{1.2649110555648804, 1.4142135381698608}, {1.7888543605804443, 1.8973665237426758}, {2.332380771636963, 2.416609287261963}}},
  cdist_g_2 = {{{-1.6641005886756874, -1.1094003924504583}, {-1.456388420440021, 0.3324659615598107}, {2.3167184270002523, -5.366563145999495}}, {{-7.121320343559642, -2.1213203435596424}, {7.925090925675098, 8.264817920449786}}},
  cdist_g_1 = {{{-2.0, -2.0}, {-1.0, -1.0}, {-1.0, -6.0}}, {{-8.0, -3.0}, {12.0, 12.0}}},
  cdist_g_inf = {{{-2.0, 0.0}, {-1.0, 3.0}, {5.0, -6.0}}, {{-8.0, -3.0}, {6.0, 6.0}}},
  cdist_g_half = {{{-3.632993161855452, -4.449489742783178}, {-0.8284271247461898, -3.6568542494923797}, {-9.485281374238571, -10.242640687119284}}, {{-11.0, -6.0}, {24.946701660840212, 24.348984679394842}}},
  cdist_g_3 = {{{-1.6822626738112747, -0.7476722994716777}, {-1.8080452216944085, 0.9653998757081301}, {3.613277451298731, -5.546890194805077}}, {{-6.88988157484231, -1.8898815748423097}, {6.766912019049262, 7.219044193410935}}},
  cdist_g_0 = {{{0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}}, {{0.0, 0.0}, {0.0, 0.0}}},
  take = {{1, 4}, {4, 2}},
  tad = {{10}, {50}},
  tad_flat = {50, 10},
  tad_bc = {{20, 10}, {50, 60}},
  tad_bc0 = {{10}, {10}},
  tad_sort = {{1.0, 2.0, 3.0}, {0.0, 4.0, 5.0}},
  ia = {{12.0, 16.0}, {0.0, 0.0}, {6.0, 8.0}},
  ia_d2 = {{0.0, 1.0}, {0.0, 1.0}, {0.0, 1.0}},
  ia_int = {23, 2},
  ic = {{3.0, 4.0}, {0.0, 0.0}, {1.0, 2.0}},
  ic_dup = {{0.0, 0.0}, {0.0, 0.0}, {3.0, 4.0}},
  ifill = {{7.0, 7.0}, {0.0, 0.0}, {7.0, 7.0}},
  if_int = {2, 2},
  ic_grad = {{{0.0, 0.0}, {2.0, 3.0}, {0.0, 0.0}}, {{4.0, 5.0}, {0.0, 1.0}}},
  ia_grad = {{{0.0, 1.0}, {2.0, 3.0}, {4.0, 5.0}}, {{12.0, 15.0}, {12.0, 15.0}}},
  if_grad = {{{0.0, 0.0}, {2.0, 0.0}, {4.0, 0.0}}, 9.0},
  buck = {{0, 2}, {1, 4}},
  buck_r = {{1, 3}, {2, 5}},
  buck_f = {3, 1, 0, 3, 0},
  isin = {{false, true}, {true, false}},
  isin_nan = {true, false, false, true},
  isin_mixed = {false, true, true},
  cmin_t = {2.0, 6.0, NAN, NAN},
  cmax_bc = {{1.0, 2.0, 2.0}, {1.0, 4.0, 3.0}},
  cmin_int_f = {2.0, 6.0, 3.0},
  cmin_grad = {{0.0, 2.0, 3.0, 0.0}, {1.0, 0.0, 0.0, 4.0}},
  cmax_grad = {{1.0, 2.0, 0.0, 4.0}, {0.0, 0.0, 3.0, 0.0}},
  cmin_num_grad = {0.0, 2.0, 3.0, 4.0},
  hv = {0.0, 0.5, 1.0, 0.0, 0.5},
  hv_bc = {{0.0, 7.0, 1.0}, {0.0, 8.0, 1.0}},
  hv_int = {0, 7, 1},
  sm = {2.010389566421509, 3.5833332538604736},
  sm_d = {{2.0, 2.254624843597412}, {3.0, 4.166666507720947}},
  vm_all = {3.368055582046509, 3.5833332538604736},
  vm_keep = {{{2.6666667461395264}, {3.3888888359069824}}, {{3.0}, {4.166666507720947}}},
  vm_c2 = {{8.0, 10.166666984558105}, {3.0, 4.166666507720947}},
  vm_d0 = {{4.5, 4.5, 6.125}, {2.5, 3.5, 4.75}},
  cov = {{1.0, -0.75}, {-0.75, 0.5833333730697632}},
  cov_c0 = {{0.6666666865348816, -0.5}, {-0.5, 0.3888889253139496}},
  cov_fw = {{0.6666666865348816, -0.5}, {-0.5, 0.3958333432674408}},
  cov_aw = {{0.9285714030265808, -0.6428571343421936}, {-0.6428571343421936, 0.464285671710968}},
  cov_both = {{1.1612902879714966, -0.774193525314331}, {-0.774193525314331, 0.5483871102333069}},
  cov_1d = 2.3333332538604736,
  cov_int = {{2.3333332538604736, -2.1666667461395264}, {-2.1666667461395264, 2.3333332538604736}},
  cov_c3 = {{INF, -INF}, {-INF, INF}},
  cov_3v = {{1.6666666269302368, 1.6666666269302368, 1.0}, {1.6666666269302368, 4.666666507720947, 0.0}, {1.0, 0.0, 2.0}},
  cc = {{1.0, -0.9819804430007935}, {-0.9819804430007935, 1.0}},
  cc_const = {{NAN, NAN}, {NAN, 1.0}},
  cc_int = {{1.0, -0.9285715222358704}, {-0.9285715222358704, 1.0}},
  cc_3v = {{1.0, 0.5976142883300781, 0.547722578048706}, {0.5976142883300781, 1.0, 0.0}, {0.547722578048706, 0.0, 1.0}},
  q_all_nan = NAN,
  q_row = {1.2000000476837158, NAN},
  nq_row = {1.2000000476837158, 1.7999999523162842},
  q_vec = {{0.75, NAN}, {1.5, NAN}, {3.0, NAN}},
  nq_all = {1.0, 2.0, 4.0},
  nq_keep = {{{1.0, 1.25, 2.0, 1.5}}, {{2.0, 1.5, 2.0, 2.0}}, {{4.0, 2.0, 2.0, 3.0}}},
  q_linear = {{0.4000000059604645, 0.4000000059604645}, {1.5, 1.0}, {2.0, 1.0}, {5.399999618530273, 3.799999713897705}},
  q_lower = {{0.0, 0.0}, {1.0, 1.0}, {2.0, 1.0}, {3.0, 2.0}},
  q_higher = {{1.0, 1.0}, {2.0, 1.0}, {2.0, 1.0}, {7.0, 5.0}},
  q_midpoint = {{0.5, 0.5}, {1.5, 1.0}, {2.0, 1.0}, {5.0, 3.5}},
  q_nearest = {{0.0, 0.0}, {2.0, 1.0}, {2.0, 1.0}, {7.0, 5.0}},
  q_nearest_ties = {2.0, 2.0, 0.0},
  q_keep_all = {{1.5}},
  q_dim0 = {2.5, 6.5},
  q_grad = {{0.10000000000000009, 0.8999999999999999, 2.700000000000001, 0.29999999999999893}, {3.6000000000000014, 1.7999999999999998, 0.3999999999999986, 0.20000000000000018}},
  q_grad_mid = {{0.0, 0.0, 0.5, 0.0}, {0.0, 0.5, 0.0, 0.0}},
  rn2 = {{1.0, 2.0, 3.0}, {2.2792115211486816, 2.8490142822265625, 3.4188172817230225}, {0.10000000149011612, 0.10000000149011612, 0.10000000149011612}},
  rn1 = {{0.9803921580314636, 1.408450722694397, 1.6483515501022339}, {3.9215686321258545, 3.5211267471313477, 3.2967031002044678}, {0.09803921729326248, 0.07042253762483597, 0.05494505167007446}},
  rninf = {{0.6666666865348816, 1.3333333730697632, 2.0}, {1.3333333730697632, 1.6666667461395264, 2.0}, {0.10000000149011612, 0.10000000149011612, 0.10000000149011612}},
  rnhalf = {{0.2908412516117096, 0.5816825032234192, 0.8725237846374512}, {0.4474605321884155, 0.5593256950378418, 0.6711907982826233}, {0.10000000149011612, 0.10000000149011612, 0.10000000149011612}},
  rn3d = {{{0.0, 0.4629100561141968}, {0.6060914993286133, 0.9091372489929199}}, {{1.851640224456787, 2.3145503997802734}, {1.8182744979858398, 2.1213202476501465}}},
  rn_grad = {{0.3622089683530376, -0.72441787956322, 1.0866269050591124}, {-0.2863512872531092, 1.8612836439309142, -0.4295269308796635}},
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

local has = support.assert_error_contains

local function L(v, dt) return pt.tensor(v, {dtype = dt or "int64"}) end
local function D(v) return pt.tensor(v, F64) end

describe("registration", function()
  it("adds every function with a help text, as a method only where torch has one", function()
    local M = require "partrain.tensor_more"
    assert.is_nil(M._conflicts)
    local fn_only = {"meshgrid", "cartesian_prod", "combinations", "tril_indices", "triu_indices", "block_diag",
                     "tensordot", "chain_matmul", "cdist", "bucketize", "isin", "std_mean", "var_mean", "vander"}
    local both = {"diag_embed", "diagflat", "kron", "ger", "addmv", "addbmm", "baddbmm", "take", "take_along_dim",
                  "rot90", "aminmax", "clamp_min", "clamp_max", "heaviside", "cov", "corrcoef", "quantile",
                  "nanquantile", "renorm", "index_add", "index_copy", "index_fill"}
    for _, name in ipairs(fn_only) do
      assert.is_function(pt[name], name)
      assert.is_nil(rawget(pt.Tensor, name), name)
      assert.is_string(pt._docs[pt[name]], name)
    end
    for _, name in ipairs(both) do
      assert.is_function(pt[name], name)
      assert.are.equal(pt[name], pt.Tensor[name], name)
      assert.is_string(pt._docs[pt[name]], name)
    end
    assert.are.equal(pt.outer, pt.ger) -- an alias: help shows outer's text
    assert.are.equal(pt.Tensor.outer, pt.Tensor.ger)
  end)
end)

describe("meshgrid and cartesian_prod", function()
  local a, b, c = L({1, 2, 3}), L({4, 5}), L({6, 7, 8, 9})

  it("gives torch's grids for both indexings", function()
    local g = pt.meshgrid(a, b)
    same(R.mesh_ij[1], g[1]); same(R.mesh_ij[2], g[2])
    g = pt.meshgrid(a, b, {indexing = "ij"})
    same(R.mesh_ij[2], g[2])
    g = pt.meshgrid({a, b}, {indexing = "xy"})
    same(R.mesh_xy[1], g[1]); same(R.mesh_xy[2], g[2])
    g = pt.meshgrid(a, b, c, {indexing = "xy"})
    same(R.mesh_xy3_shape, g[1]:size()); same(R.mesh_xy3_3, g[3]:select(3, 2))
    g = pt.meshgrid(pt.tensor(2, {dtype = "int64"}), b)
    same(R.mesh_0d[1], g[1]); same(R.mesh_0d[2], g[2])
    g = pt.meshgrid(a, L({}))
    same({3, 0}, g[2]:size())
    g = pt.meshgrid({a}, {indexing = "xy"})
    same({1, 2, 3}, g[1])
  end)

  it("passes gradients back (torch's values) and a float64 gradcheck", function()
    local x, y = D({0.5, -1.0, 2.0}), D({3.0, 0.25})
    x.requires_grad, y.requires_grad = true, true
    local g = pt.meshgrid(x, y, {indexing = "xy"})
    local s = (g[1] * g[2] * D({{1, 2, 3}, {4, 5, 6}})):sum()
    s:backward()
    close(x.grad, R.mesh_grad[1]); close(y.grad, R.mesh_grad[2])
    assert.is_true(gradcheck(function(u, v)
      local m = pt.meshgrid(u, v)
      return m[1] * 2 + m[2] * m[1]
    end, {x, y}))
  end)

  it("cartesian_prod: rows of every combination, the last tensor fastest", function()
    same(R.cart, pt.cartesian_prod(a, b, L({0, -1})))
    same(R.cart_empty_shape, pt.cartesian_prod({a, L({})}):size())
    assert.are.equal(a, pt.cartesian_prod(a)) -- one tensor: itself, as torch
    assert.is_true(gradcheck(function(u, v) return pt.cartesian_prod(u, v) end, {D({1, 2}), D({3, 4, 5})}))
  end)

  it("checks their arguments", function()
    has("meshgrid: expects a non-empty list of tensors", pt.meshgrid)
    has("meshgrid: expects a non-empty list of tensors", pt.meshgrid, {})
    has("meshgrid: tensor 2 is not a tensor (got number)", pt.meshgrid, a, 3)
    has("meshgrid: expects 0-D or 1-D tensors, tensor 1 has shape {2,2}", pt.meshgrid, pt.ones(2, 2), b)
    has("meshgrid: expects all tensors to have the same dtype, got int64 (tensor 1) and float32 (tensor 2)", pt.meshgrid,
        a, pt.tensor({1.5}))
    has("meshgrid: indexing must be \"ij\" or \"xy\", got 'foo'", pt.meshgrid, a, b, {indexing = "foo"})
    has("meshgrid: unknown option 'index' (options: indexing)", pt.meshgrid, a, b, {index = "ij"})
    has("cartesian_prod: expects 1-D tensors, tensor 1 has shape {}", pt.cartesian_prod, pt.tensor(3))
    has("cartesian_prod: expects all tensors to have the same dtype, got int64 (tensor 1) and float32 (tensor 2)",
        pt.cartesian_prod, a, pt.tensor({1.5}))
    has("cartesian_prod: expects a non-empty list of tensors", pt.cartesian_prod)
  end)
end)

describe("combinations", function()
  local f = pt.tensor({1.5, 2.5, 3.5, 4.5})

  it("lists them in torch's order", function()
    same(R.comb2, pt.combinations(f))
    same(R.comb3, pt.combinations(f, 3))
    same(R.comb2r, pt.combinations(L({1, 2, 3}), 2, true))
    same(R.comb4r2, pt.combinations(pt.tensor({1, 2}), {r = 3, with_replacement = true}))
    same(R.comb_big_shape, pt.combinations(L({1, 2, 3}), 4):size())
    same({0}, pt.combinations(f, 0):size())
    same({0, 2}, pt.combinations(pt.tensor({})):size())
    same({{1.5}, {2.5}, {3.5}, {4.5}}, pt.combinations(f, 1))
  end)

  it("passes a float64 gradcheck", function()
    assert.is_true(gradcheck(function(t) return pt.combinations(t, 2, true) * pt.combinations(t, 2, true) end,
                             {D({0.5, -1, 2})}))
  end)

  it("checks its arguments", function()
    has("combinations: expects a 1-D tensor, got shape {2,2}", pt.combinations, pt.ones(2, 2))
    has("combinations: r must be non-negative, got -1", pt.combinations, f, -1)
    has("combinations: r must be an integer, got 1.5", pt.combinations, f, 1.5)
    has("combinations: with_replacement must be a boolean, got number", pt.combinations, f, 2, 1)
    has("combinations: unknown option 'n' (options: r, with_replacement)", pt.combinations, f, {n = 2})
    has("combinations: unexpected argument #4 (number)", pt.combinations, f, 2, true, 4)
    has("combinations: bad argument #1 (Tensor expected, got table)", pt.combinations, {1, 2})
  end)
end)

describe("tril_indices and triu_indices", function()
  it("give torch's indices + 1", function()
    same(plus1(R.tril33), pt.tril_indices(3, 3))
    same(plus1(R.tril341), pt.tril_indices(3, 4, 1))
    same(plus1(R.tril43m1), pt.tril_indices(4, 3, -1))
    same(plus1(R.triu33), pt.triu_indices(3, 3))
    same(plus1(R.triu34m1), pt.triu_indices(3, 4, {offset = -1}))
    same(R.triu225, pt.triu_indices(2, 2, 5):size())
    same(R.tril_m5, pt.tril_indices(3, 3, -5):size())
    same(R.triu_0_3, pt.triu_indices(0, 3):size())
    local i32 = pt.tril_indices(3, 3, 0, {dtype = "int32"})
    assert.are.equal("int32", i32:dtype())
    same(plus1(R.tril33), i32)
    assert.are.equal("int64", pt.triu_indices(3, 3):dtype())
    -- they index the triangle of a matrix
    local m = pt.arange(1, 10):reshape(3, 3)
    local idx = pt.tril_indices(3, 3)
    same({1, 4, 5, 7, 8, 9}, m:reshape(-1):index_select(1, (idx[1] - 1) * 3 + idx[2]))
  end)

  it("check their arguments", function()
    has("tril_indices: row must be non-negative, got -1", pt.tril_indices, -1, 3)
    has("triu_indices: col must be non-negative, got -2", pt.triu_indices, 3, -2)
    has("tril_indices: row must be an integer, got 2.5", pt.tril_indices, 2.5, 3)
    has("triu_indices: offset must be an integer, got string", pt.triu_indices, 2, 3, "1")
    has("tril_indices: dtype must be int64 or int32, got float32", pt.tril_indices, 3, 3, {dtype = "float32"})
    has("tril_indices: offset given twice (as argument #3 and as an option)", pt.tril_indices, 3, 3, 1, {offset = 1})
    has("triu_indices: unknown option 'device' (options: dtype, offset)", pt.triu_indices, 3, 3, {device = "cpu"})
    has("tril_indices: unexpected argument #4 (number)", pt.tril_indices, 3, 3, 0, 1)
  end)
end)

describe("block_diag, diag_embed and diagflat", function()
  it("block_diag places the blocks as torch", function()
    same(R.bd, pt.block_diag(L({{1, 2}, {3, 4}}), pt.tensor(5, {dtype = "int64"}), L({6, 7, 8})))
    local p = pt.block_diag({L({{1, 1}, {1, 1}}), D({{1.5}})})
    assert.are.equal("float64", p:dtype())
    same(R.bd_promote, p)
    same(R.bd_empty_rows, pt.block_diag(pt.ones(0, 2), pt.ones(1, 1)))
    same({1, 0}, pt.block_diag():size())
    same({{1.0, 2.0}}, pt.block_diag(pt.tensor({1, 2})))
    assert.is_true(gradcheck(function(x, y, z) return pt.block_diag(x, y, z) end,
                             {D({{1, 2}, {3, 4}}), D({5}), pt.tensor(0.5, F64)}))
  end)

  it("diag_embed and diagflat give torch's matrices", function()
    same(R.de_1, pt.tensor({1, 2}):diag_embed(1))
    same(R.de_m1, pt.diag_embed(pt.tensor({1, 2}), -1))
    local m = pt.tensor({{1, 2}, {3, 4}})
    same(R.de_batch, m:diag_embed())
    same(R.de_dims, m:diag_embed(1, 1, 3))
    same(R.de_dims_rev, m:diag_embed({offset = -1, dim1 = 3, dim2 = -3}))
    same(R.df, L({{1, 2}, {3, 4}}):diagflat())
    same(R.df_m1, pt.diagflat(L({1, 2}), -1))
    same(R.df_2, L({1, 2}):diagflat({offset = 2}))
    same({{5.0}}, pt.tensor(5):diagflat())
    assert.is_true(gradcheck(function(x) return x:diag_embed(1, 1, 3) end, {D({{1, 2}, {3, 4}})}))
    assert.is_true(gradcheck(function(x) return x:diagflat(-1) end, {D({{1, 2}, {3, 4}})}))
  end)

  it("check their arguments", function()
    has("block_diag: input tensors must have 2 or fewer dimensions, tensor 1 has shape {2,2,2}", pt.block_diag,
        pt.ones(2, 2, 2))
    has("block_diag: tensor 2 is not a tensor (got string)", pt.block_diag, pt.ones(1), "x")
    has("diag_embed: expects a tensor of at least 1 dimension, got a 0-d tensor", pt.diag_embed, pt.tensor(1))
    has("diag_embed: dim1 and dim2 must be different dimensions, got 1 and -3", pt.diag_embed, pt.ones(2, 2), 0, 1, -3)
    has("diag_embed: dimension 4 out of range (tensor has 3 dimensions)", pt.diag_embed, pt.ones(2, 2), 0, 4)
    has("diag_embed: offset must be an integer, got 0.5", pt.diag_embed, pt.ones(2), 0.5)
    has("diag_embed: unknown option 'dim' (options: offset, dim1, dim2)", pt.diag_embed, pt.ones(2), {dim = 1})
    has("diagflat: offset must be an integer, got string", pt.diagflat, pt.ones(2), "1")
    has("diagflat: unexpected argument #3 (number)", pt.diagflat, pt.ones(2), 1, 2)
  end)
end)

describe("kron, rot90 and vander", function()
  it("kron gives torch's products", function()
    same(R.kron_int, L({{1, 2}, {3, 4}}):kron(L({{0, 1}, {1, 0}})))
    same(R.kron_mixed, pt.kron(L({1, 2}), pt.tensor({{1, 0.5}, {2, 3}})))
    same(R.kron_3d, pt.kron(pt.arange(4):float():reshape(1, 2, 2), pt.tensor({{1, -1}})))
    same({2.0, 4.0}, pt.kron(pt.tensor(2), pt.tensor({1, 2})))
    assert.are.equal(6, pt.kron(pt.tensor(2), pt.tensor(3)):item())
    assert.is_true(gradcheck(function(x, y) return pt.kron(x, y) end, {D({{1, 2}, {3, 4}}), D({0.5, -1, 2})}))
  end)

  it("rot90 rotates as torch", function()
    local r = pt.arange(6):reshape(2, 3)
    same(R.rot1, r:rot90())
    same(R.rot2, r:rot90(2))
    same(R.rotm1, pt.rot90(r, -1))
    same(R.rot3_rev, r:rot90(3, {2, 1}))
    same(R.rot5, r:rot90({k = 5}))
    same(r:tolist(), r:rot90(4))
    same(R.rot3d, pt.arange(6):reshape(1, 2, 3):rot90(1, {2, 3}))
    same(R.rot3d_neg, pt.arange(12):reshape(2, 2, 3):rot90(1, {-1, 1}))
    assert.is_true(gradcheck(function(x) return x:rot90(1) * D({{1, 2}, {3, 4}, {5, 6}}) end, {D({{1, 2, 3}, {4, 5, 6}})}))
  end)

  it("vander gives torch's matrices", function()
    same(R.van, pt.vander(L({1, 2, 3})))
    same(R.van_f, pt.vander(pt.tensor({1.5, -2, 0}), 4))
    same(R.van_inc, pt.vander(L({1, 2, 3}), 4, true))
    same(R.van_i32, pt.vander(L({2, 3}, "int32"), {N = 3}))
    same(R.van_bool, pt.vander(L({true, false}, "bool")))
    same({3, 0}, pt.vander(L({1, 2, 3}), 0):size())
    same({0, 0}, pt.vander(pt.tensor({})):size())
    assert.is_true(gradcheck(function(x) return pt.vander(x, 4) end, {D({0.5, -1.5, 2})}))
  end)

  it("check their arguments", function()
    has("kron: bad argument #2 (Tensor expected, got number)", pt.kron, pt.ones(2), 2)
    has("kron: unexpected argument #3 (number)", pt.kron, pt.ones(2), pt.ones(2), 1)
    has("rot90: expected 2 rotation dims, got 1", pt.rot90, pt.ones(2, 2), 1, {1})
    has("rot90: expected a tensor of at least 2 dimensions, got shape {2}", pt.rot90, pt.ones(2))
    has("rot90: rotation dims must be different, got 1 and -2", pt.rot90, pt.ones(2, 2), 1, {1, -2})
    has("rot90: dimension 3 out of range (tensor has 2 dimensions)", pt.rot90, pt.ones(2, 2), 1, {1, 3})
    has("rot90: k must be an integer, got 0.5", pt.rot90, pt.ones(2, 2), 0.5)
    has("rot90: dims must be a list of two dimensions, got number", pt.rot90, pt.ones(2, 2), 1, 2)
    has("vander: x must be a 1-D tensor, got shape {2,2}", pt.vander, pt.ones(2, 2))
    has("vander: N must be non-negative, got -1", pt.vander, pt.ones(2), -1)
    has("vander: increasing must be a boolean, got number", pt.vander, pt.ones(2), 2, 1)
    has("vander: unknown option 'n' (options: N, increasing)", pt.vander, pt.ones(2), {n = 2})
  end)
end)

describe("tensordot, ger, addmv, addbmm, baddbmm and chain_matmul", function()
  local A, B = pt.arange(24):float():reshape(2, 3, 4), pt.arange(12):float():reshape(4, 3)

  it("tensordot contracts as torch", function()
    same(R.td1, pt.tensordot(A, B, 1))
    same(R.td_lists, pt.tensordot(A, B, {{2, 3}, {2, 1}}))
    same(R.td_int, pt.tensordot(A:long(), B:long(), {dims = {{2, 3}, {2, 1}}}))
    local o = pt.tensordot(A, B, 0)
    same(R.td0_shape, o:size())
    assert.are.equal(R.td0_el, o[2][3][4][4][3])
    same(R.td_neg, pt.tensordot(A, B, {-1, 1}))
    local C = pt.arange(6):float():reshape(2, 3)
    assert.are.equal(R.td2, pt.tensordot(C, C * 2):item())
    assert.are.equal(6, pt.tensordot(pt.tensor(2), pt.tensor(3), 0):item())
    assert.is_true(gradcheck(function(x, y) return pt.tensordot(x, y, {{1, 3}, {2, 1}}) end,
                             {D({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}), D({{0.5, 1}, {-1, 2}})}))
  end)

  it("ger is outer", function()
    same({{3.0, 4.0}, {6.0, 8.0}}, pt.ger(pt.tensor({1, 2}), pt.tensor({3, 4})))
  end)

  it("addmv, addbmm and baddbmm scale as torch", function()
    local M1, v = pt.tensor({{1, 2, 3}, {4, 5, 6}}), pt.tensor({1, -1, 2})
    close(pt.addmv(pt.tensor({1, 2}), M1, v, {beta = 2, alpha = 0.5}), R.addmv)
    close(pt.tensor({0 / 0, 1}):addmv(M1, v, {beta = 0}), R.addmv_b0) -- beta = 0 ignores NaN
    close(pt.tensor(1):addmv(M1, v), R.addmv_0d)
    local B1, B2 = pt.arange(12):float():reshape(2, 2, 3) / 4, pt.arange(12):float():reshape(2, 3, 2) / 3 - 1
    close(pt.tensor({{1, 2}, {3, 4}}):addbmm(B1, B2, {beta = 0.5, alpha = 2}), R.addbmm)
    close(pt.addbmm(pt.tensor({1, -1}), B1, B2), R.addbmm_row)
    close(pt.ones(2, 2, 2):baddbmm(B1, B2, {beta = 0.5, alpha = 2}), R.baddbmm)
    close(pt.baddbmm(pt.tensor({{1, 2}}), B1, B2), R.baddbmm_bc)
    local i, m, x = D({0.5, -1}), D({{1, 2, 3}, {4, 5, 6}}), D({1, -1, 2})
    assert.is_true(gradcheck(function(a, b, c) return a:addmv(b, c, {beta = 0.5, alpha = -2}) end, {i, m, x}))
    local b1, b2 = D({{{1, 2}, {3, 4}}, {{0, 1}, {1, 0}}}), D({{{1, 0}, {2, 1}}, {{-1, 1}, {0.5, 2}}})
    assert.is_true(gradcheck(function(a, b, c) return a:addbmm(b, c, {beta = 2, alpha = 0.5}) end, {D({1, 2}), b1, b2}))
    assert.is_true(gradcheck(function(a, b, c) return a:baddbmm(b, c, {alpha = 3}) end, {D({{1, 2}, {3, 4}}), b1, b2}))
  end)

  it("chain_matmul multiplies in the cheapest order", function()
    local C1 = pt.tensor({{1, 2, 3}, {0, -1, 1}})
    local C2 = pt.tensor({{1, 0, 2, 1}, {0.5, 1, 0, 2}, {1, 1, 1, -1}})
    local C3 = pt.tensor({{1}, {2}, {0}, {-1}})
    same(R.chain, pt.chain_matmul(C1, C2, C3))
    same(R.chain, pt.chain_matmul({C1, C2, C3}))
    local one = pt.chain_matmul(C1)
    assert.is_true(one:equal(C1) and not one:is_same_storage(C1))
    assert.is_true(gradcheck(function(a, b, c, d) return pt.chain_matmul(a, b, c, d) end,
                             {D({{1, 2}}), D({{1, 0, 2}, {0.5, 1, 3}}), D({{1, -1}, {2, 0}, {1, 1}}), D({{2}, {-1}})}))
  end)

  it("check their arguments", function()
    has("tensordot: cannot contract 3 dimensions of tensors of shapes {2,3,4} and {4,3}", pt.tensordot, A, B, 3)
    has("tensordot: dims must be non-negative, got -1", pt.tensordot, A, B, -1)
    has("tensordot: both dimension lists must have the same length, got 1 and 2", pt.tensordot, A, B, {{2}, {2, 1}})
    has("tensordot: contracted dimensions must have the same size, got 2 (dimension 1 of {2,3,4}) and 4 (dimension 1 of {4,3})",
        pt.tensordot, A, B, {{1}, {1}})
    has("tensordot: expected tensors of one dtype, got float32 and float64", pt.tensordot, A, B:double(), 1)
    has("tensordot: dimension 2 appears more than once in the list of dimensions", pt.tensordot, A, B, {{2, 2}, {2, 1}})
    has("tensordot: dimension 5 out of range (tensor has 2 dimensions)", pt.tensordot, A, B, {{3}, {5}})
    has("tensordot: dims must be a number or two lists of dimensions, got string", pt.tensordot, A, B, "1")
    has("tensordot: unknown option 'dim' (options: dims)", pt.tensordot, A, B, {dim = 1})
    has("tensordot: expected numeric tensors, got bool", pt.tensordot, L({true}, "bool"), L({true}, "bool"), 1)
    local M1, v = pt.ones(2, 3), pt.ones(3)
    has("addmv: input of shape {3} cannot be broadcast to {2}", pt.addmv, pt.ones(3), M1, v)
    has("addmv: shapes {2,3} and {2} cannot be multiplied", pt.addmv, pt.ones(2), M1, pt.ones(2))
    has("addmv: expected a 2-D matrix and a 1-D vector, got shapes {2,3,1} and {3}", pt.addmv, pt.ones(2), pt.ones(2, 3, 1), v)
    has("addmv: expected float32 or float64 tensors of one dtype, got float32, float64, float32 (convert with float())",
        pt.addmv, pt.ones(2), M1:double(), v)
    has("addmv: expected float32 or float64 tensors of one dtype, got int64, int64, int64 (convert with float())",
        pt.addmv, L({1, 1}), L({{1, 1, 1}, {1, 1, 1}}), L({1, 1, 1}))
    has("addmv: option 'beta' must be a number, got string", pt.addmv, pt.ones(2), M1, v, {beta = "1"})
    has("addmv: unknown option 'gamma' (options: beta, alpha)", pt.addmv, pt.ones(2), M1, v, {gamma = 1})
    has("addmv: bad argument #3 (Tensor expected, got nil)", pt.addmv, pt.ones(2), M1)
    has("addmv: bad argument #4 (options table expected, got number)", pt.addmv, pt.ones(2), M1, v, 2)
    has("baddbmm: unexpected argument #5 (number)", pt.baddbmm, pt.ones(1, 2, 2), pt.ones(1, 2, 2), pt.ones(1, 2, 2), {}, 1)
    has("addbmm: batch1 and batch2 must have the same number of batches, got 3 and 2", pt.addbmm, pt.ones(2, 2),
        pt.ones(3, 2, 4), pt.ones(2, 4, 2))
    has("addbmm: expected 3-D batch1 and batch2, got shapes {2,4} and {4,2}", pt.addbmm, pt.ones(2, 2), pt.ones(2, 4),
        pt.ones(4, 2))
    has("baddbmm: shapes {3,2,4} and {3,3,2} cannot be multiplied", pt.baddbmm, pt.ones(3, 2, 2), pt.ones(3, 2, 4),
        pt.ones(3, 3, 2))
    has("baddbmm: input of shape {2,2,2} cannot be broadcast to {3,2,2}", pt.baddbmm, pt.ones(2, 2, 2), pt.ones(3, 2, 4),
        pt.ones(3, 4, 2))
    has("addbmm: option 'alpha' must be a number, got boolean", pt.addbmm, pt.ones(2, 2), pt.ones(3, 2, 4),
        pt.ones(3, 4, 2), {alpha = true})
    has("chain_matmul: expected one or more matrices", pt.chain_matmul)
    has("chain_matmul: matrices 1 and 2 with shapes {2,3} and {4,1} cannot be multiplied", pt.chain_matmul,
        pt.ones(2, 3), pt.ones(4, 1))
    has("chain_matmul: expected 2-D matrices, matrix 1 has shape {3}", pt.chain_matmul, pt.ones(3), pt.ones(3, 1))
    has("chain_matmul: matrix 2 is not a tensor (got number)", pt.chain_matmul, pt.ones(3, 1), 2)
  end)
end)

describe("cdist", function()
  local x1, x2 = pt.tensor({{0, 0}, {1, 1}, {2, 0}}), pt.tensor({{0, 0}, {3, 4}})

  it("gives torch's distances for every p", function()
    close(pt.cdist(x1, x2), R.cdist_2)
    close(pt.cdist(x1, x2, 1), R.cdist_1)
    close(pt.cdist(x1, x2, 0), R.cdist_0)
    close(pt.cdist(x1, x2, INF), R.cdist_inf)
    close(pt.cdist(x1, x2, 0.5), R.cdist_half, 1e-6)
    close(pt.cdist(x1, x2, {p = 3, compute_mode = "donot_use_mm_for_euclid_dist"}), R.cdist_3, 1e-6)
    close(pt.cdist(pt.arange(12):float():reshape(2, 3, 2) / 5, pt.tensor({{{0, 1}, {1, 0}}})), R.cdist_batch, 1e-6)
    same({2, 4, 3, 2}, pt.cdist(pt.ones(2, 1, 3, 2), pt.ones(4, 2, 2)):size())
    same({0, 2}, pt.cdist(pt.ones(0, 2), x2):size())
    same({{0.0, 0.0}}, pt.cdist(pt.ones(1, 0), pt.ones(2, 0)))
  end)

  it("has torch's gradients, zero at zero distances, whole to each tie of p = inf", function()
    for _, c in ipairs({{2, R.cdist_g_2}, {1, R.cdist_g_1}, {INF, R.cdist_g_inf}, {0.5, R.cdist_g_half},
                        {3, R.cdist_g_3}, {0, R.cdist_g_0}}) do
      local a1, a2 = D({{0, 0}, {1, 1}, {2, 0}}), D({{0, 0}, {3, 2}})
      a1.requires_grad, a2.requires_grad = true, true
      pt.cdist(a1, a2, c[1]):backward(D({{1, 2}, {3, 4}, {5, 6}}))
      close(a1.grad, c[2][1], 1e-12)
      close(a2.grad, c[2][2], 1e-12)
    end
  end)

  it("passes float64 gradchecks away from zero distances and ties", function()
    local a, b = D({{0.1, 0.7, -0.3}, {1.2, -0.4, 0.9}}), D({{-0.5, 0.2, 0.4}, {0.3, 1.1, -1.0}, {2.0, 0.0, 0.5}})
    for _, p in ipairs({1, 2, 3, 0.7, INF}) do
      assert.is_true(gradcheck(function(u, v) return pt.cdist(u, v, p) end, {a, b}))
    end
  end)

  it("checks its arguments", function()
    has("cdist: p must be non-negative, got -1", pt.cdist, x1, x2, -1)
    has("cdist: p must be a number, got string", pt.cdist, x1, x2, "2")
    has("cdist: x1 and x2 must have the same number of columns, got shapes {3,2} and {2,1}", pt.cdist, x1, pt.ones(2, 1))
    has("cdist: expects tensors of at least 2 dimensions, got shapes {2} and {2,2}", pt.cdist, pt.ones(2), x2)
    has("cdist: expected float32 or float64 tensors of one dtype, got int64 and int64", pt.cdist, x1:long(), x2:long())
    has("cdist: expected float32 or float64 tensors of one dtype, got float32 and float64", pt.cdist, x1, x2:double())
    has("cdist: compute_mode must be use_mm_for_euclid_dist_if_necessary, use_mm_for_euclid_dist or "
        .. "donot_use_mm_for_euclid_dist, got 'foo'", pt.cdist, x1, x2, {compute_mode = "foo"})
    has("cdist: p given twice (as argument #3 and as an option)", pt.cdist, x1, x2, 2, {p = 1})
    has("cdist: shapes {2} and {3} cannot be broadcast", pt.cdist, pt.ones(2, 1, 2), pt.ones(3, 1, 2))
    has("cdist: unknown option 'mode' (options: p, compute_mode)", pt.cdist, x1, x2, {mode = 1})
    has("cdist: bad argument #4 (options table expected, got string)", pt.cdist, x1, x2, 2, "mm")
  end)
end)

describe("take and take_along_dim", function()
  it("select as torch (positions + 1)", function()
    local tm = L({{1, 2}, {3, 4}})
    same(R.take, tm:take(L({{1, 4}, {-1, 2}})))
    assert.are.equal(5, pt.take(pt.tensor(5, {dtype = "int64"}), pt.tensor(1, {dtype = "int64"})):item())
    same({0}, pt.take(pt.tensor({}), L({})):size())
    local ta = L({{10, 30, 20}, {60, 40, 50}})
    same(R.tad, ta:take_along_dim(L({{1}, {3}}), 2))
    same(R.tad_flat, pt.take_along_dim(ta, L({6, 1})))
    same(R.tad_bc, ta:take_along_dim(L({{3, 1}}), {dim = -1}))
    same(R.tad_bc0, pt.take_along_dim(L({{10, 30, 20}}), L({{1}, {1}}), 2))
    local s = pt.tensor({{3, 1, 2}, {0, 5, 4}})
    same(R.tad_sort, s:take_along_dim(s:argsort(2), 2))
  end)

  it("pass float64 gradchecks (repeated positions accumulate)", function()
    local x = D({{1, 2, 3}, {4, 5, 6}})
    assert.is_true(gradcheck(function(t) return t:take(L({{1, 6}, {6, -2}})) end, {x}))
    assert.is_true(gradcheck(function(t) return t:take_along_dim(L({{3, 1, 3}}), 2) end, {x}))
    assert.is_true(gradcheck(function(t) return t:take_along_dim(L({2, 2, 5})) end, {x}))
  end)

  it("check their arguments", function()
    local tm = L({{1, 2}, {3, 4}})
    has("take: index 5 out of range for a tensor of 4 elements", pt.take, tm, L({5}))
    has("take: index -5 out of range for a tensor of 4 elements", pt.take, tm, L({-5}))
    has("take: index 0 out of range for a tensor of 4 elements", pt.take, tm, L({0}))
    has("take: index must be an int64 tensor, got float32", pt.take, tm, pt.tensor({1}))
    has("take: index must be an int64 tensor, got table", pt.take, tm, {1})
    has("take_along_dim: index 3 out of range for dimension 1 of size 2", pt.take_along_dim, L({{1, 2, 3}, {4, 5, 6}}),
        L({{2, 1, 3}}), 1)
    has("take_along_dim: index 5 out of range for the 4 elements of the flattened tensor", pt.take_along_dim, tm, L({5}))
    has("take_along_dim: input and indices must have the same number of dimensions, got shapes {2,2} and {1,1,1}",
        pt.take_along_dim, tm, L({{{1}}}), 1)
    has("take_along_dim: shapes {2,3} and {3,1} cannot be broadcast outside dimension 2", pt.take_along_dim,
        pt.ones(2, 3), L({{2}, {1}, {2}}), 2)
    has("take_along_dim: indices must be an int64 tensor, got float32", pt.take_along_dim, tm, pt.tensor({{1}}), 2)
    has("take_along_dim: dimension 3 out of range (tensor has 2 dimensions)", pt.take_along_dim, tm, L({{1}}), 3)
  end)
end)

describe("index_add, index_copy and index_fill (out of place)", function()
  local xz, src = pt.zeros(3, 2), pt.tensor({{1, 2}, {3, 4}, {5, 6}})

  it("give torch's results and leave the input alone", function()
    same(R.ia, xz:index_add(1, L({1, 3, 1}), src, {alpha = 2}))
    same(R.ia_d2, pt.index_add(xz, 2, L({2}), pt.ones(3, 1)))
    same(R.ia_int, L({1, 2}):index_add(1, L({1, 1}), L({5, 6}), {alpha = 2}))
    same(R.ic, xz:index_copy(1, L({3, 1}), src:narrow(1, 1, 2)))
    same(R.ic_dup, pt.index_copy(xz, 1, L({3, 3}), src:narrow(1, 1, 2))) -- the last one stays
    same(R.ifill, xz:index_fill(1, L({3, 1}), 7))
    same(R.if_int, L({1, 2}):index_fill(1, L({1}), 2.7))
    same({{0.0, 3.0}, {0.0, 3.0}, {0.0, 3.0}}, xz:index_fill(2, L({2}), pt.tensor(3)))
    assert.are.equal(0, xz:abs():sum():item())
    assert.are.equal(7, pt.tensor(5):index_add(1, L({1}), pt.tensor(2)):item())
    assert.are.equal(2, pt.tensor(5):index_copy(1, L(1), pt.tensor(2)):item())
    assert.are.equal(2, pt.tensor(5):index_fill(1, L({1}), 2):item())
    same({{0.0, 0.0}, {0.0, 0.0}, {0.0, 0.0}}, xz:index_add(1, L({}), pt.zeros(0, 2)))
  end)

  it("have torch's gradients and pass float64 gradchecks", function()
    local gw = D({{0, 1}, {2, 3}, {4, 5}})
    local p1, p2 = D({{1, 2}, {3, 4}, {5, 6}}), pt.ones(2, 2, F64)
    p1.requires_grad, p2.requires_grad = true, true
    p1:index_copy(1, L({3, 1}), p2):backward(gw)
    same(R.ic_grad[1], p1.grad); same(R.ic_grad[2], p2.grad)
    p1.grad, p2.grad = nil, nil
    p1:index_add(1, L({3, 3}), p2, {alpha = 3}):backward(gw)
    same(R.ia_grad[1], p1.grad); same(R.ia_grad[2], p2.grad)
    p1.grad = nil
    local v = pt.tensor(3, {dtype = "float64", requires_grad = true})
    p1:index_fill(2, L({2, 2}), v):backward(gw)
    same(R.if_grad[1], p1.grad); assert.are.equal(R.if_grad[2], v.grad:item())
    local a, b = D({{1, 2}, {3, 4}, {5, 6}}), D({{0.5, -1}, {2, 0.25}})
    assert.is_true(gradcheck(function(x, y) return x:index_add(1, L({3, 3}), y, {alpha = -2}) end, {a, b}))
    assert.is_true(gradcheck(function(x, y) return x:index_copy(1, L({3, 1}), y) end, {a, b}))
    assert.is_true(gradcheck(function(x, y) return x:index_fill(2, L({1}), y) end, {a, pt.tensor(1.5, F64)}))
  end)

  it("check their arguments", function()
    has("index_add: source of shape {2,2} must have the tensor's shape {3,2} but 3 slices along dimension 1 (one per index)",
        pt.index_add, xz, 1, L({1, 3, 1}), src:narrow(1, 1, 2))
    has("index_add: index 4 out of range for dimension 1 of size 3", pt.index_add, xz, 1, L({4}), src:narrow(1, 1, 1))
    has("index_add: index must be a 0-D or 1-D tensor, got shape {1,1}", pt.index_add, xz, 1, L({{1}}), src:narrow(1, 1, 1))
    has("index_add: index must be an int64 tensor, got float32", pt.index_add, xz, 1, pt.tensor({1}), src:narrow(1, 1, 1))
    has("index_add: source must have the tensor's dtype (float32), got float64", pt.index_add, xz, 1, L({1}),
        src:narrow(1, 1, 1):double())
    has("index_add: alpha must be an integer for int64 tensors, got 2.5", pt.index_add, L({1, 2}), 1, L({1, 1}), L({5, 6}),
        {alpha = 2.5})
    has("index_add: unknown option 'scale' (options: alpha)", pt.index_add, xz, 1, L({1}), src:narrow(1, 1, 1), {scale = 2})
    has("index_add: bad argument #5 (options table expected, got number)", pt.index_add, xz, 1, L({1}), src:narrow(1, 1, 1), 2)
    has("index_add: dimension 3 out of range (tensor has 2 dimensions)", pt.index_add, xz, 3, L({1}), src)
    has("index_copy: index 5 out of range for dimension 1 of size 3", pt.index_copy, xz, 1, L({5}), src:narrow(1, 1, 1))
    has("index_copy: source of shape {3,2} must have the tensor's shape {3,2} but 2 slices along dimension 1 (one per index)",
        pt.index_copy, xz, 1, L({3, 1}), src)
    has("index_copy: bad argument #4 (Tensor expected, got number)", pt.index_copy, xz, 1, L({1}), 3)
    has("index_fill: value must be a number or a 0-d tensor, got a tensor of shape {1}", pt.index_fill, xz, 2, L({2}),
        pt.tensor({3}))
    has("index_fill: value must be a number or a 0-d tensor, got string", pt.index_fill, xz, 2, L({2}), "3")
    has("index_fill: index 3 out of range for dimension 2 of size 2", pt.index_fill, xz, 2, L({3}), 1)
    has("index_fill: value 256 cannot be converted to uint8 without overflow", pt.index_fill, L({1}, "uint8"), 1, L({1}), 256)
  end)
end)

describe("bucketize and isin", function()
  it("bucketize gives torch's buckets + 1", function()
    local bd = L({1, 3, 5, 7, 9})
    same(plus1(R.buck), pt.bucketize(L({{1, 5}, {3, 9}}), bd))
    same(plus1(R.buck_r), pt.bucketize(L({{1, 5}, {3, 9}}), bd, {right = true}))
    same(plus1(R.buck_f), pt.bucketize(pt.tensor({NAN, 2.5, 0, 10, -INF}), pt.tensor({1, 3, 5})))
    assert.are.equal(2, pt.bucketize(3, L({1, 3, 5})):item())
    local i32 = pt.bucketize(pt.tensor({1, 2}), L({1, 3, 5}), {out_int32 = true})
    assert.are.equal("int32", i32:dtype())
    same({1, 2}, i32)
    local big = math.tointeger(2 ^ 53)
    same({3, 4}, pt.bucketize(L({big, big + 1}), L({big - 1, big, big + 1}), {right = true})) -- exact int64
    same({2, 3}, pt.bucketize(L({big, big + 1}), L({big - 1, big, big + 1})))
  end)

  it("isin tests membership as torch", function()
    same(R.isin, pt.isin(L({{1, 2}, {3, 4}}), L({2, 3, 3, 7})))
    same({{true, false}, {false, true}}, pt.isin(L({{1, 2}, {3, 4}}), L({2, 3}), {invert = true}))
    same(R.isin_nan, pt.isin(pt.tensor({1, NAN, 2, INF}), pt.tensor({NAN, 1, INF})))
    same(R.isin_mixed, pt.isin(L({1, 2, 3}), pt.tensor({1.5, 2.0, 3.0000001}))) -- float32: 3.0000001 is 3
    same({false, true, false}, pt.isin(L({1, 2, 3}), D({1.5, 2.0, 3.0000001})))
    same({false, true}, pt.isin(L({1, 2}), 2))
    assert.is_true(pt.isin(2, L({1, 2})):item())
    same({false, false}, pt.isin(L({1, 2}), L({})))
    same({false, true}, pt.isin(L({1, 2}), L({{2}, {7}})))
    local big = math.tointeger(2 ^ 53)
    same({false, true}, pt.isin(L({big, big + 1}), L({big + 1}))) -- exact beyond 2^53
    same({false, true}, pt.isin(L({big + 1, big}), D({2 ^ 53})))
    local x = pt.tensor({1, 2}, {requires_grad = true})
    assert.is_false(pt.isin(x, x).requires_grad)
  end)

  it("check their arguments", function()
    has("bucketize: boundaries must be a 1-D tensor, got shape {2,2}", pt.bucketize, pt.tensor({1}), pt.ones(2, 2))
    has("bucketize: bad argument #1 (Tensor or number expected, got string)", pt.bucketize, "1", pt.ones(2))
    has("bucketize: bad argument #2 (Tensor expected, got number)", pt.bucketize, pt.ones(2), 2)
    has("bucketize: right must be a boolean, got number", pt.bucketize, pt.ones(2), pt.ones(2), {right = 1})
    has("bucketize: unknown option 'side' (options: right, out_int32)", pt.bucketize, pt.ones(2), pt.ones(2), {side = "left"})
    has("bucketize: bad argument #3 (options table expected, got boolean)", pt.bucketize, pt.ones(2), pt.ones(2), true)
    has("isin: expected a tensor as elements or test_elements, got number and number", pt.isin, 1, 2)
    has("isin: bool tensors are not supported", pt.isin, L({true}, "bool"), L({true}, "bool"))
    has("isin: bad argument #2 (Tensor or number expected, got table)", pt.isin, pt.ones(2), {1})
    has("isin: invert must be a boolean, got string", pt.isin, pt.ones(2), pt.ones(2), {invert = "yes"})
    has("isin: unknown option 'inverse' (options: invert, assume_unique)", pt.isin, pt.ones(2), pt.ones(2), {inverse = true})
    has("isin: bad argument #3 (options table expected, got boolean)", pt.isin, pt.ones(2), pt.ones(2), true)
  end)
end)

describe("clamp_min, clamp_max and heaviside", function()
  it("clamp with numbers and tensors as torch", function()
    same({2, 5, 3}, L({1, 5, 3}):clamp_min(2))
    same({2.5, 5.0, 3.0}, L({1, 5, 3}):clamp_min(2.5))
    same({1.0, 2.0, NAN}, pt.clamp_max(pt.tensor({1, 5, NAN}), 2))
    same(R.cmin_t, pt.tensor({1, 5, 3, NAN}):clamp_min(pt.tensor({2, 6, NAN, 0})))
    same(R.cmax_bc, pt.tensor({1, 5, 3}):clamp_max(pt.tensor({{2}, {4}})))
    local r = L({1, 5, 3}):clamp_min(pt.tensor({2, 6, 1}))
    assert.are.equal("float32", r:dtype())
    same(R.cmin_int_f, r)
  end)

  it("send the gradient as torch (ties to the input) and pass gradchecks", function()
    local u, b = D({1, 2, 3, 4}), D({2, 2, 1, 5})
    u.requires_grad, b.requires_grad = true, true
    u:clamp_min(b):backward(D({1, 2, 3, 4}))
    same(R.cmin_grad[1], u.grad); same(R.cmin_grad[2], b.grad)
    u.grad, b.grad = nil, nil
    u:clamp_max(b):backward(D({1, 2, 3, 4}))
    same(R.cmax_grad[1], u.grad); same(R.cmax_grad[2], b.grad)
    u.grad = nil
    u:clamp_min(2):backward(D({1, 2, 3, 4}))
    same(R.cmin_num_grad, u.grad)
    local x, y = D({0.5, -1, 3, 2}), D({{1, 0}, {-2, 2.5}, {0.1, 0.2}, {1.5, 1.7}}):t()
    assert.is_true(gradcheck(function(p, q) return p:clamp_min(q) end, {x, y}))
    assert.is_true(gradcheck(function(p, q) return p:clamp_max(q) end, {x, y}))
  end)

  it("heaviside steps as torch, without a gradient", function()
    same(R.hv, pt.tensor({-1, 0, 2, NAN, -0.0}):heaviside(pt.tensor({0.5})))
    same(R.hv_bc, pt.heaviside(pt.tensor({-1, 0, 2}), pt.tensor({{7}, {8}})))
    same(R.hv_int, L({-1, 0, 2}):heaviside(L({7})))
    local x = pt.tensor({-1, 0, 1}, {requires_grad = true})
    assert.is_false(x:heaviside(pt.tensor({0.5})).requires_grad)
  end)

  it("check their arguments", function()
    has("clamp_min: value -1 cannot be converted to uint8 without overflow", pt.clamp_min, L({1}, "uint8"), -1)
    has("clamp_min: min must be a number or a tensor, got string", pt.clamp_min, pt.ones(2), "1")
    has("clamp_max: max must be a number or a tensor, got nil", pt.clamp_max, pt.ones(2))
    has("clamp_max: shapes {2} and {3} cannot be broadcast", pt.clamp_max, pt.ones(2), pt.ones(3))
    has("heaviside: input and values must have the same dtype, got float32 and int64", pt.heaviside, pt.ones(2), L({1}))
    has("heaviside: values must be a tensor, got number", pt.heaviside, pt.ones(2), 0.5)
    has("heaviside: shapes {2} and {3} cannot be broadcast", pt.heaviside, pt.ones(2), pt.ones(3))
  end)
end)

describe("aminmax, var_mean and std_mean", function()
  local x = pt.tensor({{1, 5, 3}, {4, 2, 6}})

  it("aminmax gives both extremes", function()
    local lo, hi = x:aminmax()
    assert.are.equal(1, lo:item()); assert.are.equal(6, hi:item()); assert.are.equal(0, lo:dim())
    lo, hi = x:aminmax(2)
    same({1.0, 2.0}, lo); same({5.0, 6.0}, hi)
    lo, hi = pt.aminmax(x, {dim = 1, keepdim = true})
    same({{1.0, 2.0, 3.0}}, lo); same({{4.0, 5.0, 6.0}}, hi)
    lo, hi = x:aminmax(-1, true)
    same({{1.0}, {2.0}}, lo)
    lo, hi = x:aminmax({keepdim = true})
    same({{1.0}}, lo); same({{6.0}}, hi)
    lo, hi = pt.tensor({1, NAN}):aminmax()
    same(NAN, lo:item()); same(NAN, hi:item())
    lo, hi = L({3, -7, 2}):aminmax()
    same(-7, lo:item()); same(3, hi:item())
    lo, hi = L({true, false}, "bool"):aminmax()
    assert.is_false(lo:item()); assert.is_true(hi:item())
    lo, hi = pt.zeros(2, 0):aminmax(1)
    same({0}, lo:size())
    lo, hi = pt.tensor(3):aminmax(1, true)
    same({3.0}, lo)
    assert.is_false(pt.tensor({1, 2}, {requires_grad = true}):aminmax().requires_grad)
  end)

  it("var_mean and std_mean give torch's pairs", function()
    local X = pt.tensor({{1, 5, 3}, {4, 2, 6.5}})
    local s, m = pt.std_mean(X)
    close({s:item(), m:item()}, R.sm)
    s, m = pt.std_mean(X, 2)
    close(s, R.sm_d[1]); close(m, R.sm_d[2])
    local v
    v, m = pt.var_mean(X, {1, 2}, {unbiased = false})
    close({v:item(), m:item()}, R.vm_all)
    v, m = pt.var_mean(X, 2, true, {correction = 0})
    close(v, R.vm_keep[1]); close(m, R.vm_keep[2])
    same({2, 1}, m:size())
    v, m = pt.var_mean(X, {dim = 2, correction = 2})
    close(v, R.vm_c2[1]); close(m, R.vm_c2[2])
    v, m = pt.var_mean(X, 1)
    close(v, R.vm_d0[1]); close(m, R.vm_d0[2])
    s, m = pt.std_mean(pt.tensor({3}))
    same(NAN, s:item()); assert.are.equal(3, m:item())
    local a = D({{1, 5, 3}, {4, 2, 6.5}})
    assert.is_true(gradcheck(function(t)
      local vv, mm = pt.var_mean(t, 2)
      return vv * 2 + mm
    end, {a}))
    assert.is_true(gradcheck(function(t)
      local ss, mm = pt.std_mean(t, {1, 2}, {correction = 0})
      return ss * mm
    end, {a}))
  end)

  it("check their arguments", function()
    has("aminmax: cannot compute aminmax over an empty tensor (shape {0})", pt.aminmax, pt.tensor({}))
    has("aminmax: expected reduction dimension 2 to have non-zero size (shape {2,0})", pt.aminmax, pt.zeros(2, 0), 2)
    has("aminmax: dimension 3 out of range (tensor has 2 dimensions)", pt.aminmax, x, 3)
    has("aminmax: keepdim must be a boolean, got number", pt.aminmax, x, 1, 1)
    has("aminmax: unknown option 'dims' (options: dim, keepdim)", pt.aminmax, x, {dims = 1})
    has("var_mean: expected a floating point tensor, got int64", pt.var_mean, L({1, 2}))
    has("std_mean: dimension 3 out of range (tensor has 2 dimensions)", pt.std_mean, x, 3)
    has("var_mean: dimension -1 appears more than once in the list of dimensions", pt.var_mean, x, {2, -1})
    has("var_mean: unknown option 'ddof' (options: dim, keepdim, unbiased, correction)", pt.var_mean, x, {ddof = 1})
    has("std_mean: keepdim must be a boolean, got string", pt.std_mean, x, 1, "yes")
    has("var_mean: unexpected argument #4 (number)", pt.var_mean, x, 1, true, 3)
  end)
end)

describe("cov and corrcoef", function()
  local cx = pt.tensor({{0, 1, 2}, {2, 1, 0.5}})

  it("cov with corrections and weights as torch", function()
    close(cx:cov(), R.cov)
    close(cx:cov({correction = 0}), R.cov_c0)
    close(pt.cov(cx, {fweights = L({1, 2, 1})}), R.cov_fw)
    close(cx:cov({aweights = pt.tensor({0.5, 1, 2})}), R.cov_aw)
    close(cx:cov({fweights = L({1, 2, 1}), aweights = pt.tensor({0.5, 1, 2}), correction = 2}), R.cov_both)
    local c1 = pt.tensor({1, 2, 4}):cov()
    assert.are.equal(0, c1:dim()); close({c1:item()}, {R.cov_1d})
    local ci = L({{1, 2, 4}, {3, 1, 0}}):cov()
    assert.are.equal("float32", ci:dtype()); close(ci, R.cov_int)
    near(cx:cov({correction = 3}), R.cov_c3) -- no degrees of freedom left: divided by 0
    close(pt.tensor({{1, 2, 3, 4}, {2, 0, 1, 5}, {-1, -1, 2, 0}}):cov(), R.cov_3v)
    same(NAN, pt.tensor(3):cov():item())
    near(pt.zeros(2, 0):cov(), {{NAN, NAN}, {NAN, NAN}})
    assert.are.equal("float64", cx:double():cov({aweights = pt.tensor({1, 2, 1})}):dtype())
  end)

  it("corrcoef as torch", function()
    close(cx:corrcoef(), R.cc)
    near(pt.corrcoef(pt.tensor({{1, 1, 1}, {1, 2, 3}})), R.cc_const)
    close(L({{1, 2, 4}, {3, 1, 0}}):corrcoef(), R.cc_int)
    close(pt.tensor({{1, 2, 3, 4}, {2, 0, 1, 5}, {-1, -1, 2, 0}}):corrcoef(), R.cc_3v)
    assert.are.equal(1, pt.tensor({1, 2, 4}):corrcoef():item())
  end)

  it("pass float64 gradchecks", function()
    local a = D({{0.3, 1.2, 2.0, -0.5}, {2.1, 0.9, 0.4, 1.0}, {-1.0, 0.5, 0.25, 2.0}})
    assert.is_true(gradcheck(function(t) return t:cov() end, {a}))
    assert.is_true(gradcheck(function(t, w) return t:cov({aweights = w, fweights = L({1, 2, 1, 3})}) end,
                             {a, D({0.5, 1, 2, 1.5})}))
    assert.is_true(gradcheck(function(t) return t:corrcoef() end, {a}))
  end)

  it("check their arguments", function()
    has("cov: expected input to have two or fewer dimensions, got shape {2,2,2}", pt.cov, pt.ones(2, 2, 2))
    has("cov: expected fweights to have an integer dtype, got float32", pt.cov, cx, {fweights = pt.tensor({1, 2, 1})})
    has("cov: expected fweights to have one weight per observation (3), got 2", pt.cov, cx, {fweights = L({1, 2})})
    has("cov: expected fweights to have one or fewer dimensions, got shape {1,3}", pt.cov, cx, {fweights = L({{1, 2, 1}})})
    has("cov: fweights cannot be negative", pt.cov, cx, {fweights = L({1, -2, 1})})
    has("cov: expected aweights to have a floating point dtype, got int64", pt.cov, cx, {aweights = L({1, 2, 1})})
    has("cov: aweights cannot be negative", pt.cov, cx, {aweights = pt.tensor({1, -2, 1})})
    has("cov: expected aweights to have one weight per observation (3), got 2", pt.cov, cx, {aweights = pt.tensor({1, 2})})
    has("cov: weights sum to zero, can't be normalized", pt.cov, cx, {aweights = pt.tensor({0, 0, 0})})
    has("cov: fweights must be a tensor, got table", pt.cov, cx, {fweights = {1, 2, 1}})
    has("cov: correction must be an integer, got 0.5", pt.cov, cx, {correction = 0.5})
    has("cov: bool tensors are not supported", pt.cov, L({true, false}, "bool"))
    has("cov: unknown option 'ddof' (options: correction, fweights, aweights)", pt.cov, cx, {ddof = 1})
    has("cov: bad argument #2 (options table expected, got number)", pt.cov, cx, 1)
    has("corrcoef: expected input to have two or fewer dimensions, got shape {2,2,2}", pt.corrcoef, pt.ones(2, 2, 2))
    has("corrcoef: unexpected argument #2 (table)", pt.corrcoef, cx, {})
  end)
end)

describe("quantile and nanquantile", function()
  local qx = pt.tensor({{0, 1, 2, 3}, {4, 2, NAN, 1}})
  local q3 = pt.tensor({0.25, 0.5, 1})

  it("give torch's quantiles, NaN as torch", function()
    same(NAN, qx:quantile(0.5):item())
    near(qx:quantile(0.4, 2), R.q_row)
    close(qx:nanquantile(0.4, 2), R.nq_row)
    near(pt.quantile(qx, q3, 2), R.q_vec)
    close(qx:nanquantile(q3), R.nq_all)
    local k = qx:nanquantile(q3, {dim = 1, keepdim = true})
    same({3, 1, 4}, k:size()); close(k, R.nq_keep)
    close(qx:narrow(2, 1, 2):quantile(0.5, nil, true), R.q_keep_all)
    close(pt.tensor({{1, 4}, {2, 8}, {3, 5}}):quantile(0.75, 1), R.q_dim0)
    same(NAN, pt.nanquantile(pt.tensor({NAN, NAN}), 0.5):item())
    assert.are.equal(3, pt.tensor(3):quantile(0.5):item())
    assert.are.equal(3, pt.tensor(3):quantile(0.5, 1):item())
    near(qx:quantile(pt.tensor(0.3), 2), {0.9, NAN})
    assert.are.equal(1, qx:quantile(pt.tensor(0.3), 2):dim())
    same({0, 2}, qx:quantile(pt.tensor({}), 2):size())
  end)

  it("interpolate in the five ways of torch", function()
    local x = pt.tensor({{3, 0, 2, 1, 7}, {1, 1, 5, 2, 0}})
    local q = pt.tensor({0.1, 0.375, 0.5, 0.9})
    for _, m in ipairs({"linear", "lower", "higher", "midpoint", "nearest"}) do
      close(x:quantile(q, -1, {interpolation = m}), R["q_" .. m], 1e-6)
    end
    close(pt.tensor({0, 1, 2, 3, 4, 5}):quantile(pt.tensor({0.5, 0.3, 0.1}), {interpolation = "nearest"}),
          R.q_nearest_ties) -- rank 2.5 -> 2, 1.5 -> 2, 0.5 -> 0: ties to even
  end)

  it("have torch's gradients and pass float64 gradchecks", function()
    local qa = D({{0, 1, 2, 3}, {4, 2, 5, 1}})
    qa.requires_grad = true
    qa:quantile(D({0.3, 0.7}), 2):backward(D({{1, 2}, {3, 4}}))
    close(qa.grad, R.q_grad, 1e-12)
    qa.grad = nil
    qa:nanquantile(0.5, {interpolation = "midpoint"}):backward()
    close(qa.grad, R.q_grad_mid, 1e-12)
    local a = D({{0.3, 1.2, 2.0, -0.5}, {2.1, 0.9, 0.4, 1.0}})
    assert.is_true(gradcheck(function(t) return t:quantile(D({0.1, 0.35, 0.8}), 2) end, {a}))
    assert.is_true(gradcheck(function(t) return t:nanquantile(0.6) end, {a}))
    assert.is_true(gradcheck(function(t) return t:quantile(0.3, 1, true, {interpolation = "midpoint"}) end, {a}))
  end)

  it("check their arguments", function()
    has("quantile: q must be in the range [0, 1], got 1.5", pt.quantile, qx, 1.5)
    has("nanquantile: q must be in the range [0, 1], got nan", pt.nanquantile, qx, NAN)
    has("quantile: q values must be in the range [0, 1]", pt.quantile, qx, pt.tensor({0.5, 2}))
    has("quantile: q must be a number, a 0-d or a 1-D tensor, got shape {1,1}", pt.quantile, qx, pt.tensor({{0.5}}))
    has("quantile: q must have the input's dtype (float32), got float64", pt.quantile, qx, D({0.5}))
    has("quantile: q must be a number or a tensor, got string", pt.quantile, qx, "0.5")
    has("quantile: input tensor must be float32 or float64, got int64", pt.quantile, L({1, 2}), 0.5)
    has("nanquantile: input tensor must be non-empty (shape {2,0})", pt.nanquantile, pt.zeros(2, 0), 0.5, 1)
    has("quantile: interpolation must be linear, lower, higher, midpoint or nearest, got 'foo'", pt.quantile, qx, 0.5,
        {interpolation = "foo"})
    has("quantile: dimension 3 out of range (tensor has 2 dimensions)", pt.quantile, qx, 0.5, 3)
    has("quantile: keepdim must be a boolean, got number", pt.quantile, qx, 0.5, 1, 1)
    has("nanquantile: unknown option 'method' (options: dim, keepdim, interpolation)", pt.nanquantile, qx, 0.5,
        {method = "linear"})
    has("quantile: unexpected argument #5 (number)", pt.quantile, qx, 0.5, 1, true, 2)
    has("quantile: unexpected argument #6 (number)", pt.quantile, qx, 0.5, 1, true, {}, 2)
  end)
end)

describe("renorm", function()
  local rx = pt.tensor({{1, 2, 3}, {4, 5, 6}, {0.1, 0.1, 0.1}})

  it("scales the sub-tensors over maxnorm as torch", function()
    close(rx:renorm(2, 1, 5), R.rn2)
    close(rx:renorm(1, 2, 5), R.rn1)
    close(pt.renorm(rx, INF, 1, 2), R.rninf)
    close(rx:renorm(0.5, -2, 5), R.rnhalf, 1e-6)
    close(pt.arange(8):float():reshape(2, 2, 2):renorm(2, 2, 3), R.rn3d)
  end)

  it("has torch's gradient (through the norm) and passes a float64 gradcheck", function()
    local ra = D({{1, 5, 3}, {4, 2, 6}})
    ra.requires_grad = true
    ra:renorm(2, 1, 5):backward(D({{1, 2, 3}, {4, 5, 6}}))
    close(ra.grad, R.rn_grad, 1e-7)
    local a = D({{1, 5, 3}, {0.4, 0.2, 0.6}, {-2, 1, 0.5}})
    for _, p in ipairs({1, 2, 3}) do
      assert.is_true(gradcheck(function(t) return t:renorm(p, 1, 2.5) end, {a}))
    end
  end)

  it("checks its arguments", function()
    has("renorm: p must be positive, got 0", pt.renorm, rx, 0, 1, 5)
    has("renorm: maxnorm must be non-negative, got -1", pt.renorm, rx, 2, 1, -1)
    has("renorm: expected a float32 or float64 tensor, got int64", pt.renorm, L({{1, 2}}), 2, 1, 5)
    has("renorm: dimension 3 out of range (tensor has 2 dimensions)", pt.renorm, rx, 2, 3, 5)
    has("renorm: expects a tensor of at least 2 dimensions, got shape {2}", pt.renorm, pt.tensor({3, 4}), 2, 1, 1)
    has("renorm: maxnorm must be a number, got nil", pt.renorm, rx, 2, 1)
    has("renorm: dim expected", pt.renorm, rx, 2)
  end)
end)
