-- pt.linalg against torch 1.13 where they used to differ: lstsq's output shapes (residuals of
-- vector right-hand sides, rank and singular values with A's batch shape), det/slogdet of
-- non-finite matrices, vector_norm's dtype, tensor tolerances of pinv/matrix_rank,
-- triangular_solve broadcasting, the nuclear norm of t:norm. Expected values: torch 1.13, float64,
-- hard-coded.
local pt = require "partrain"
local support = require "spec.support"
local gradcheck = require "spec.gradcheck"
local close = support.assert_close_with(1e-9)

local function T(v) return pt.tensor(v, {dtype = "float64"}) end
local function shape(t)
  local s = {}
  for i = 1, t:dim() do s[i] = t:size(i) end
  return s
end
-- t has torch's shape and (flattened) values
local function same(t, e, tol)
  assert.are.same(e[1], shape(t))
  if t:dtype() == "int64" then
    assert.are.same(e[2], t:flatten():tolist())
  else
    close(t:flatten(), e[2], tol)
  end
end

-- element by element: NaN where torch has NaN, infinities equal, zeros with torch's sign when
-- signed, others within 1e-9 (relative above 1)
local function nonfinite_close(t, e, signed, tol)
  local a = support.flat(pt.is_tensor(t) and t:tolist() or t)
  assert.are.equal(#e, #a)
  for i = 1, #e do
    local x, y = a[i], e[i]
    local ok
    if y ~= y then ok = x ~= x
    elseif y == 0 and signed then ok = x == 0 and 1 / x == 1 / y
    else ok = x == y or math.abs(x - y) <= (tol or 1e-9) * math.max(1, math.abs(y)) end
    if not ok then error(string.format("element %d: got %.17g, expected %.17g", i, x, y), 2) end
  end
end

local DET = {A = {{{1.0, math.huge}, {0.0, 1.0}}, {{math.huge, 0.0}, {0.0, 1.0}}, {{math.huge, 1.0}, {1.0, 1.0}}, {{1.0, 0/0}, {0.0, 1.0}}, {{0/0, 0.0}, {0.0, 1.0}}, {{1.0, 2.0}, {-math.huge, 1.0}}, {{math.huge, math.huge}, {math.huge, math.huge}}, {{1.0, 0.0}, {math.huge, 1.0}}, {{0.0, math.huge}, {0.0, 1.0}}, {{0.0, 0.0}, {0.0, 0/0}}, {{0.0, 0.0}, {0.0, -1.0}}, {{math.huge, 0.0}, {0.0, 0.0}}, {{-math.huge, 1.0}, {1.0, 1.0}}, {{2.0, 1.0}, {1.0, 3.0}}},
  det = {0/0, math.huge, math.huge, 0/0, 0/0, math.huge, 0/0, 0/0, 0/0, 0/0, -0.0, 0/0, -math.huge, 5.0},
  sign = {-0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -1.0, 1.0},
  logabsdet = {0/0, math.huge, math.huge, 0/0, 0/0, math.huge, 0/0, 0/0, 0/0, 0/0, -math.huge, 0/0, math.huge, 1.6094379124341005},
  logdet = {0/0, math.huge, math.huge, 0/0, 0/0, math.huge, 0/0, 0/0, 0/0, 0/0, -math.huge, 0/0, 0/0, 1.6094379124341005}}
local DET3 = {A = {{2.0, 1.0, 0.0}, {math.huge, 3.0, 1.0}, {0.0, 1.0, 4.0}}, det = -math.huge, sign = -1.0, logabsdet = math.huge, logdet = 0/0}
local DET32 = {det = {0/0, math.huge, math.huge, 0/0, 0/0, math.huge, 0/0, 0/0, 0/0, 0/0, -0.0, 0/0, -math.huge, 5.0}, sign = {-0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -1.0, 1.0}, logabsdet = {0/0, math.huge, math.huge, 0/0, 0/0, math.huge, 0/0, 0/0, 0/0, 0/0, -math.huge, 0/0, math.huge, 1.6094379425048828}}

local TOL = {A = {{{3.0, 1.0}, {1.0, 2.0}}, {{1.0, 2.0}, {2.0, 4.0001}}}}
TOL.rank_atol = {2, 1}
TOL.rank_atol_bcast = {{2, 1}, {1, 1}, {0, 1}}
TOL.rank_one_atol3 = {2, 1, 0}
TOL.rank_rtol = {1, 1}
TOL.rank_atol_rtol = {1, 1}
TOL.rank_tol = {2, 2}
TOL.rank_int_atol = {2, 1}
TOL.rank_herm = {{1, 1}, {1, 1}}
TOL.pinv_one_atol3 = {{{0.40000000000000013, -0.20000000000000012}, {-0.20000000000000012, 0.6000000000000002}}, {{0.20000000000000004, 0.12360679774997896}, {0.123606797749979, 0.07639320225002103}}, {{0.0, 0.0}, {0.0, 0.0}}}
TOL.pinv_rcond = {{{0.20000000000000004, 0.12360679774997896}, {0.123606797749979, 0.07639320225002103}}, {{0.03999808005119911, 0.07999776003199992}, {0.07999776003199988, 0.15999871998720055}}}
TOL.pinv_herm = {{{0.19999999999999996, 0.12360679774997893}, {0.12360679774997893, 0.076393202250021}}, {{0.03999808005119913, 0.07999776003199992}, {0.07999776003199992, 0.1599987199872006}}}
TOL.pinv_f32 = {{{{0.19999997317790985, 0.12360678613185883}, {0.12360675632953644, 0.07639317959547043}}, {{0.03999805450439453, 0.07999773323535919}, {0.0799977108836174, 0.15999867022037506}}}, {{{0.3999999165534973, -0.19999997317790985}, {-0.20000000298023224, 0.6000000238418579}}, {{39910.56640625, -19954.78125}, {-19954.78515625, 9977.3916015625}}}}
TOL.gX = {{2.0, 1.0, 0.5}, {0.3, 1.5, 1.0}, {1.0, 0.0, 1.2}}
TOL.gW = {{{0.3, -1.0, 0.5}, {1.0, 0.2, -0.4}, {0.7, 0.1, 0.9}}, {{1.0, 0.0, 0.0}, {0.0, -1.0, 0.0}, {0.5, 0.5, 0.5}}}
TOL.gP = {{-0.20471340210146993, 0.10677674338572468, 0.19057483064188988}, {-0.3400750770327319, -0.3736432441321801, 0.6610786634294336}, {-0.3323607794589972, 0.6719961372884683, -0.7503104473883417}}
TOL.P = {{{0.515759312320917, -0.3438395415472783, 0.07163323782234952}, {0.18338108882521487, 0.5444126074498566, -0.5300859598853866}, {-0.42979942693409745, 0.2865329512893986, 0.7736389684813755}}, {{0.3936527554520291, -0.33316440273394443, 0.265831811903447}, {-0.09335895888597188, 0.5686065451079112, -0.08995789440931667}, {0.04665966159346537, 0.2448786205201864, 0.01587723993322031}}}

local L = {}
L.tall = {A = {{1.0, 2.0}, {3.0, 4.0}, {5.0, 7.0}}, B = {{1.0, 0.0}, {2.0, 1.0}, {4.0, 3.0}}}
L.tall.gels = {{{2, 2}, {0.07142857142857097, 1.2142857142857137, 0.5000000000000003, -0.4999999999999997}}, {{2}, {0.07142857142857144, 0.6428571428571436}}, {{0}, {}}, {{0}, {}}}
L.tall.gelsy = {{{2, 2}, {0.07142857142856869, 1.2142857142857142, 0.500000000000002, -0.5000000000000001}}, {{0}, {}}, {{}, {2}}, {{0}, {}}}
L.tall.gelsd = {{{2, 2}, {0.07142857142857093, 1.2142857142857137, 0.5000000000000003, -0.4999999999999998}}, {{2}, {0.07142857142857144, 0.6428571428571436}}, {{}, {2}}, {{2}, {10.191428257097224, 0.36713768594389934}}}
L.tall.gelss = {{{2, 2}, {0.0714285714285709, 1.2142857142857137, 0.5000000000000003, -0.4999999999999997}}, {{2}, {0.07142857142857144, 0.6428571428571436}}, {{}, {2}}, {{2}, {10.191428257097224, 0.36713768594389934}}}
L.tall_vec = {A = {{1.0, 2.0}, {3.0, 4.0}, {5.0, 7.0}}, B = {1.0, 2.0, 4.0}}
L.tall_vec.gels = {{{2}, {0.07142857142857097, 0.5000000000000003}}, {{1}, {0.07142857142857144}}, {{0}, {}}, {{0}, {}}}
L.tall_vec.gelsy = {{{2}, {0.07142857142856869, 0.500000000000002}}, {{0}, {}}, {{}, {2}}, {{0}, {}}}
L.tall_vec.gelsd = {{{2}, {0.07142857142857093, 0.5000000000000003}}, {{1}, {0.07142857142857144}}, {{}, {2}}, {{2}, {10.191428257097224, 0.36713768594389934}}}
L.tall_vec.gelss = {{{2}, {0.07142857142857091, 0.5000000000000003}}, {{1}, {0.07142857142857144}}, {{}, {2}}, {{2}, {10.191428257097224, 0.36713768594389934}}}
L.wide = {A = {{1.0, 3.0, 5.0}, {2.0, 4.0, 7.0}}, B = {{1.0}, {2.0}}}
L.wide.gels = {{{3, 1}, {0.9285714285714277, -0.21428571428571347, 0.14285714285714246}}, {{0}, {}}, {{0}, {}}, {{0}, {}}}
L.wide.gelsy = {{{3, 1}, {0.9285714285714288, -0.21428571428571527, 0.14285714285714343}}, {{0}, {}}, {{}, {2}}, {{0}, {}}}
L.wide.gelsd = {{{3, 1}, {0.928571428571428, -0.2142857142857137, 0.14285714285714235}}, {{0}, {}}, {{}, {2}}, {{2}, {10.191428257097224, 0.3671376859438997}}}
L.wide.gelss = {{{3, 1}, {0.9285714285714278, -0.2142857142857137, 0.14285714285714224}}, {{0}, {}}, {{}, {2}}, {{2}, {10.191428257097224, 0.3671376859438997}}}
L.wide_vec = {A = {{1.0, 3.0, 5.0}, {2.0, 4.0, 7.0}}, B = {1.0, 2.0}}
L.wide_vec.gels = {{{3}, {0.9285714285714277, -0.21428571428571347, 0.14285714285714246}}, {{0}, {}}, {{0}, {}}, {{0}, {}}}
L.wide_vec.gelsy = {{{3}, {0.9285714285714288, -0.21428571428571527, 0.14285714285714343}}, {{0}, {}}, {{}, {2}}, {{0}, {}}}
L.wide_vec.gelsd = {{{3}, {0.928571428571428, -0.2142857142857137, 0.14285714285714235}}, {{0}, {}}, {{}, {2}}, {{2}, {10.191428257097224, 0.3671376859438997}}}
L.wide_vec.gelss = {{{3}, {0.9285714285714278, -0.2142857142857137, 0.14285714285714224}}, {{0}, {}}, {{}, {2}}, {{2}, {10.191428257097224, 0.3671376859438997}}}
L.batch_vec = {A = {{{1.0, 2.0}, {3.0, 4.0}, {5.0, 7.0}}, {{2.0, 1.0}, {0.0, 3.0}, {1.0, 1.0}}}, B = {{1.0, 2.0, 4.0}, {0.0, 1.0, -1.0}}}
L.batch_vec.gels = {{{2, 2}, {0.07142857142857097, 0.5000000000000003, -0.36956521739130427, 0.28260869565217384}}, {{2, 1}, {0.07142857142857144, 1.0652173913043477}}, {{0}, {}}, {{0}, {}}}
L.batch_vec.gelsy = {{{2, 2}, {0.07142857142856869, 0.500000000000002, -0.36956521739130427, 0.28260869565217384}}, {{0}, {}}, {{2}, {2, 2}}, {{0}, {}}}
L.batch_vec.gelsd = {{{2, 2}, {0.07142857142857093, 0.5000000000000003, -0.36956521739130427, 0.2826086956521738}}, {{2, 1}, {0.07142857142857144, 1.0652173913043477}}, {{2}, {2, 2}}, {{2, 2}, {10.191428257097224, 0.36713768594389934, 3.498948511641646, 1.9383909081711859}}}
L.batch_vec.gelss = {{{2, 2}, {0.07142857142857091, 0.5000000000000003, -0.36956521739130427, 0.2826086956521738}}, {{2, 1}, {0.07142857142857144, 1.0652173913043477}}, {{2}, {2, 2}}, {{2, 2}, {10.191428257097224, 0.36713768594389934, 3.498948511641646, 1.9383909081711859}}}
L.bcast_A = {A = {{{1.0, 2.0}, {3.0, 4.0}, {5.0, 7.0}}}, B = {{{1.0}, {2.0}, {4.0}}, {{0.0}, {1.0}, {-1.0}}}}
L.bcast_A.gels = {{{2, 2, 1}, {0.07142857142857097, 0.5000000000000003, 0.6428571428571442, -0.500000000000001}}, {{2, 1}, {0.07142857142857144, 1.7857142857142856}}, {{0}, {}}, {{0}, {}}}
L.bcast_A.gelsy = {{{2, 2, 1}, {0.07142857142857097, 0.5000000000000003, 0.6428571428571441, -0.500000000000001}}, {{0}, {}}, {{1}, {2}}, {{0}, {}}}
L.bcast_A.gelsd = {{{2, 2, 1}, {0.07142857142857093, 0.5000000000000003, 0.6428571428571443, -0.500000000000001}}, {{2, 1}, {0.07142857142857144, 1.7857142857142856}}, {{1}, {2}}, {{1, 2}, {10.191428257097224, 0.36713768594389934}}}
L.bcast_A.gelss = {{{2, 2, 1}, {0.07142857142857091, 0.5000000000000003, 0.6428571428571443, -0.5000000000000011}}, {{2, 1}, {0.07142857142857144, 1.7857142857142856}}, {{1}, {2}}, {{1, 2}, {10.191428257097224, 0.36713768594389934}}}
L.bcast_B = {A = {{{1.0, 2.0}, {3.0, 4.0}, {5.0, 7.0}}, {{2.0, 1.0}, {0.0, 3.0}, {1.0, 1.0}}}, B = {{{1.0}, {2.0}, {4.0}}}}
L.bcast_B.gels = {{{2, 2, 1}, {0.07142857142857097, 0.5000000000000003, 0.7173913043478259, 0.8043478260869562}}, {{2, 1}, {0.07142857142857144, 7.847826086956523}}, {{0}, {}}, {{0}, {}}}
L.bcast_B.gelsy = {{{2, 2, 1}, {0.07142857142857097, 0.5000000000000003, 0.717391304347826, 0.8043478260869562}}, {{0}, {}}, {{2}, {2, 2}}, {{0}, {}}}
L.bcast_B.gelsd = {{{2, 2, 1}, {0.07142857142857093, 0.5000000000000003, 0.7173913043478258, 0.8043478260869561}}, {{2, 1}, {0.07142857142857144, 7.847826086956523}}, {{2}, {2, 2}}, {{2, 2}, {10.191428257097224, 0.36713768594389934, 3.498948511641646, 1.9383909081711859}}}
L.bcast_B.gelss = {{{2, 2, 1}, {0.07142857142857091, 0.5000000000000003, 0.7173913043478258, 0.804347826086956}}, {{2, 1}, {0.07142857142857144, 7.847826086956523}}, {{2}, {2, 2}}, {{2, 2}, {10.191428257097224, 0.36713768594389934, 3.498948511641646, 1.9383909081711859}}}
L.bcast_4d = {A = {{{{1.0, 2.0}, {3.0, 4.0}, {5.0, 7.0}}}, {{{2.0, 1.0}, {0.0, 3.0}, {1.0, 1.0}}}}, B = {{{{1.0}, {2.0}, {4.0}}, {{0.0}, {1.0}, {-1.0}}}}}
L.bcast_4d.gels = {{{2, 2, 2, 1}, {0.07142857142857097, 0.5000000000000003, 0.6428571428571442, -0.500000000000001, 0.7173913043478259, 0.8043478260869562, -0.36956521739130427, 0.28260869565217384}}, {{2, 2, 1}, {0.07142857142857144, 1.7857142857142856, 7.847826086956523, 1.0652173913043477}}, {{0}, {}}, {{0}, {}}}
L.bcast_4d.gelsy = {{{2, 2, 2, 1}, {0.07142857142857097, 0.5000000000000003, 0.6428571428571441, -0.500000000000001, 0.717391304347826, 0.8043478260869562, -0.36956521739130427, 0.28260869565217384}}, {{0}, {}}, {{2, 1}, {2, 2}}, {{0}, {}}}
L.bcast_4d.gelsd = {{{2, 2, 2, 1}, {0.07142857142857093, 0.5000000000000003, 0.6428571428571443, -0.500000000000001, 0.7173913043478258, 0.8043478260869561, -0.36956521739130427, 0.2826086956521738}}, {{2, 2, 1}, {0.07142857142857144, 1.7857142857142856, 7.847826086956523, 1.0652173913043477}}, {{2, 1}, {2, 2}}, {{2, 1, 2}, {10.191428257097224, 0.36713768594389934, 3.498948511641646, 1.9383909081711859}}}
L.bcast_4d.gelss = {{{2, 2, 2, 1}, {0.07142857142857091, 0.5000000000000003, 0.6428571428571443, -0.5000000000000011, 0.7173913043478258, 0.804347826086956, -0.36956521739130427, 0.2826086956521738}}, {{2, 2, 1}, {0.07142857142857144, 1.7857142857142856, 7.847826086956523, 1.0652173913043477}}, {{2, 1}, {2, 2}}, {{2, 1, 2}, {10.191428257097224, 0.36713768594389934, 3.498948511641646, 1.9383909081711859}}}
L.mixed_rank = {A = {{{1.0, 2.0}, {3.0, 4.0}, {5.0, 7.0}}, {{1.0, 2.0}, {2.0, 4.0}, {3.0, 6.0}}}, B = {{{1.0}, {2.0}, {4.0}}, {{0.0}, {1.0}, {-1.0}}}}
L.mixed_rank.gelsy = {{{2, 2, 1}, {0.07142857142857097, 0.5000000000000003, -0.014285714285714284, -0.028571428571428567}}, {{0}, {}}, {{2}, {2, 1}}, {{0}, {}}}
L.mixed_rank.gelsd = {{{2, 2, 1}, {0.07142857142857093, 0.5000000000000003, -0.014285714285714282, -0.028571428571428567}}, {{0}, {}}, {{2}, {2, 1}}, {{2, 2}, {10.191428257097224, 0.36713768594389934, 8.366600265340756, 8.881784197001251e-16}}}
L.mixed_rank.gelss = {{{2, 2, 1}, {0.07142857142857091, 0.5000000000000003, -0.014285714285714282, -0.02857142857142857}}, {{0}, {}}, {{2}, {2, 1}}, {{2, 2}, {10.191428257097224, 0.36713768594389934, 8.366600265340756, 8.881784197001252e-16}}}
L.wide_batch = {A = {{{1.0, 3.0, 5.0}, {2.0, 4.0, 7.0}}, {{2.0, 0.0, 1.0}, {1.0, 3.0, 1.0}}}, B = {{{1.0}, {2.0}}, {{0.0}, {1.0}}}}
L.wide_batch.gels = {{{2, 3, 1}, {0.9285714285714277, -0.21428571428571347, 0.14285714285714246, -0.021739130434782605, 0.3260869565217391, 0.04347826086956521}}, {{0}, {}}, {{0}, {}}, {{0}, {}}}
L.wide_batch.gelsy = {{{2, 3, 1}, {0.9285714285714277, -0.21428571428571563, 0.1428571428571438, -0.021739130434782594, 0.32608695652173914, 0.04347826086956521}}, {{0}, {}}, {{2}, {2, 2}}, {{0}, {}}}
L.wide_batch.gelsd = {{{2, 3, 1}, {0.928571428571428, -0.2142857142857137, 0.14285714285714235, -0.021739130434782587, 0.3260869565217391, 0.043478260869565216}}, {{0}, {}}, {{2}, {2, 2}}, {{2, 2}, {10.191428257097224, 0.3671376859438997, 3.4989485116416454, 1.938390908171186}}}
L.wide_batch.gelss = {{{2, 3, 1}, {0.9285714285714278, -0.2142857142857137, 0.14285714285714224, -0.021739130434782605, 0.3260869565217392, 0.04347826086956523}}, {{0}, {}}, {{2}, {2, 2}}, {{2, 2}, {10.191428257097224, 0.3671376859438997, 3.4989485116416454, 1.9383909081711863}}}

describe("linalg.lstsq as torch 1.13", function()
  for _, name in ipairs {"tall", "tall_vec", "wide", "wide_vec", "batch_vec", "bcast_A", "bcast_B", "bcast_4d",
                         "mixed_rank", "wide_batch"} do
    it(name .. ": every output's shape and values, for each driver", function()
      local c = L[name]
      for _, d in ipairs {"gels", "gelsy", "gelsd", "gelss"} do
        if c[d] then
          local out = {pt.linalg.lstsq(T(c.A), T(c.B), {driver = d})}
          assert.are.equal(4, #out)
          for i = 1, 4 do same(out[i], c[d][i]) end
          assert.are.equal("int64", out[3]:dtype())
        end
      end
    end)
  end

  it("B needs A's number of dims or one less, as torch", function()
    support.assert_error("linalg.lstsq: B must have as many dims as A or one less, got A {3,2} and B {2,3,1}",
                         pt.linalg.lstsq, T(L.tall.A), T(L.bcast_A.B))
  end)
end)

describe("linalg.det/slogdet/logdet of non-finite matrices as torch 1.13", function()
  it("inf and nan go through the LU: det nan where a pivot is 0 * inf or nan (was 0)", function()
    local A = T(DET.A)
    nonfinite_close(pt.linalg.det(A), DET.det, true)
    local s, l = pt.linalg.slogdet(A)
    nonfinite_close(s, DET.sign, true)
    nonfinite_close(l, DET.logabsdet)
    nonfinite_close(pt.logdet(A), DET.logdet)
    nonfinite_close(A:det(), DET.det, true)
    -- one matrix at a time, as the batch
    for i = 1, #DET.A do
      nonfinite_close({pt.linalg.det(T(DET.A[i])):item()}, {DET.det[i]}, true)
    end
    -- float32
    local A32 = pt.tensor(DET.A)
    nonfinite_close(pt.linalg.det(A32), DET32.det, true, 1e-6)
    s, l = pt.linalg.slogdet(A32)
    nonfinite_close(s, DET32.sign, true)
    nonfinite_close(l, DET32.logabsdet, false, 1e-6)
  end)

  it("an inf pivot with a negative sign: det -inf, logdet nan", function()
    local A = T(DET3.A)
    nonfinite_close({pt.linalg.det(A):item()}, {DET3.det})
    local s, l = pt.slogdet(A)
    nonfinite_close({s:item(), l:item()}, {DET3.sign, DET3.logabsdet})
    nonfinite_close({A:logdet():item()}, {DET3.logdet})
  end)
end)

describe("linalg.vector_norm/norm/matrix_norm dtype= as torch 1.13", function()
  local X = {{1, 2.5}, {3, -4}}

  it("converts a float32 input before the reduction; the result has the dtype", function()
    local x = pt.tensor(X)
    local r = pt.linalg.vector_norm(x, {dtype = "float64"})
    assert.are.equal("float64", r:dtype())
    close({r:item()}, {5.678908345800274}, 1e-12)
    -- float32 values read exactly in float64 (torch: 4.115823119079332; float32 4.115823268890381)
    r = pt.linalg.vector_norm(pt.tensor({1.1, 2.2, 3.3}), {dtype = "float64"})
    close({r:item()}, {4.115823119079332}, 1e-14)
    r = pt.linalg.vector_norm(x, 0.5, {dtype = "float64"})
    close({r:item()}, {39.85636340097007}, 1e-12)
    r = pt.linalg.vector_norm(x, -math.huge, 1, true, {dtype = "float64"})
    assert.are.equal("float64", r:dtype())
    assert.are.same({{1.0, 2.5}}, r:tolist())
    r = pt.linalg.vector_norm(x, {ord = 1, dtype = "float64"})
    close({r:item()}, {10.5})
    assert.are.equal("float64", pt.linalg.vector_norm(pt.tensor(X, {dtype = "float64"}), {dtype = "float64"}):dtype())
  end)

  it("linalg.norm and linalg.matrix_norm take it too", function()
    local x = pt.tensor(X)
    local r = pt.linalg.norm(x, {dtype = "float64"})
    assert.are.equal("float64", r:dtype())
    close({r:item()}, {5.678908345800274}, 1e-12)
    r = pt.linalg.norm(x, "nuc", {dtype = "float64"})
    assert.are.equal("float64", r:dtype())
    close({r:item()}, {7.433034373659252}, 1e-12)
    r = pt.linalg.matrix_norm(x, -2, {dtype = "float64"})
    assert.are.equal("float64", r:dtype())
    close({r:item()}, {2.195826554255072}, 1e-12)
  end)

  it("gradients reach a float32 input as float32", function()
    local x = pt.tensor(X)
    x.requires_grad = true
    local r = pt.linalg.vector_norm(x, 3, 2, {dtype = "float64"})
    close(r, {2.5522343610007314, 4.497941445275415}, 1e-12)
    r:sum():backward()
    assert.are.equal("float32", x.grad:dtype())
    close(x.grad, {{0.15351785719394684, 0.9594866037368774}, {0.4448513388633728, -0.7908468246459961}}, 1e-6)
  end)

  it("refuses narrowing, non-floating dtypes and integer inputs as torch", function()
    support.assert_error("linalg.vector_norm: the dtype of the input (float64) should be convertible without "
                           .. "narrowing to the specified dtype (float32)",
                         pt.linalg.vector_norm, T {1, 2}, {dtype = "float32"})
    support.assert_error("linalg.vector_norm: dtype should be floating point, but got int64",
                         pt.linalg.vector_norm, pt.tensor({1, 2}), {dtype = "int64"})
    support.assert_error('linalg.norm: dtype must be a dtype name such as "float64", got foo',
                         pt.linalg.norm, pt.tensor({1, 2}), {dtype = "foo"})
    support.assert_error("linalg.vector_norm: expected a float32 or float64 tensor, got int64 (convert with float())",
                         pt.linalg.vector_norm, pt.tensor({1, 2}, {dtype = "int64"}), {dtype = "float64"})
  end)
end)

describe("linalg.pinv/matrix_rank with tensor tolerances as torch 1.13", function()
  local A = T(TOL.A)
  local d64 = {dtype = "float64"}

  it("matrix_rank: atol, rtol, tol tensors broadcast with the batch dims", function()
    assert.are.same(TOL.rank_atol, pt.linalg.matrix_rank(A, {atol = T {0.5, 1e-3}}):tolist())
    assert.are.same(TOL.rank_atol_bcast, pt.linalg.matrix_rank(A, {atol = T {{0.5}, {1.5}, {5}}}):tolist())
    assert.are.same(TOL.rank_one_atol3, pt.linalg.matrix_rank(T(TOL.A[1]), {atol = T {0.5, 1.5, 5}}):tolist())
    assert.are.same(TOL.rank_rtol, pt.linalg.matrix_rank(A, {rtol = T {0.5, 1e-5}}):tolist())
    assert.are.same(TOL.rank_atol_rtol, pt.linalg.matrix_rank(A, {atol = T {0, 2}, rtol = pt.tensor(0.5, d64)}):tolist())
    assert.are.same(TOL.rank_atol_rtol, pt.linalg.matrix_rank(A, {atol = T {0, 2}, rtol = 0.5}):tolist())
    assert.are.same(TOL.rank_tol, pt.linalg.matrix_rank(A, T {0.5, 1e-5}):tolist())
    assert.are.same(TOL.rank_int_atol, pt.linalg.matrix_rank(A, {atol = pt.tensor({1, 2}, {dtype = "int64"})}):tolist())
    assert.are.same(TOL.rank_herm, pt.linalg.matrix_rank(A, {atol = T {{1.5}, {2.5}}, hermitian = true}):tolist())
  end)

  it("pinv: the result has the broadcast batch shape", function()
    local P = pt.linalg.pinv(T(TOL.A[1]), {atol = T {0.5, 1.5, 5}})
    assert.are.same({3, 2, 2}, shape(P))
    close(P, TOL.pinv_one_atol3)
    close(pt.linalg.pinv(A, T {0.5, 1e-5}), TOL.pinv_rcond)
    close(pt.linalg.pinv(A, {rcond = T {0.5, 1e-5}}), TOL.pinv_rcond)
    close(pt.linalg.pinv(A, {atol = pt.tensor(2.0), hermitian = true}), TOL.pinv_herm)
    local P32 = pt.linalg.pinv(pt.tensor(TOL.A), {rtol = pt.tensor({{0.5}, {1e-7}})})
    assert.are.equal("float32", P32:dtype())
    close(P32, TOL.pinv_f32, 1e-5)
  end)

  it("pinv's gradient through a broadcast tolerance", function()
    local X = T(TOL.gX)
    X.requires_grad = true
    local P = pt.linalg.pinv(X, {atol = T {1e-3, 1.0}})
    close(P, TOL.P)
    ;(P * T(TOL.gW)):sum():backward()
    close(X.grad, TOL.gP)
    -- (torch's pinv_backward is the derivative of the exact pseudo-inverse: a finite-difference
    -- check holds where the tolerance drops no singular value; X's are 2.92, 1.27, 0.94)
    assert.is_true(gradcheck(function(x) return pt.linalg.pinv(x, {atol = T {{1e-3}, {0.5}}}) end, {T(TOL.gX)}))
  end)

  it("refuses tolerances that do not broadcast, or of other types", function()
    support.assert_error("linalg.matrix_rank: atol of shape {3} cannot be broadcast with the batch dims of A {2,2,2}",
                         pt.linalg.matrix_rank, A, {atol = T {0.5, 1e-5, 1}})
    support.assert_error("linalg.pinv: rtol of shape {3} cannot be broadcast with the batch dims of A {2,2,2}",
                         pt.linalg.pinv, A, {rtol = T {0.5, 1e-5, 1}})
    support.assert_error("linalg.pinv: atol must be a number or a tensor, got string", pt.linalg.pinv, A, {atol = "x"})
    support.assert_error("linalg.matrix_rank: atol and rtol must be >= 0, got atol -1",
                         pt.linalg.matrix_rank, A, {atol = T {-1, 2}})
    support.assert_error("linalg.pinv: give rcond or rtol, not both (rcond is rtol's old name)",
                         pt.linalg.pinv, A, T {1, 2}, {rtol = 0.5})
    support.assert_error("linalg.matrix_rank: give tol or atol/rtol, not both",
                         pt.linalg.matrix_rank, A, T {1, 2}, {atol = T {1, 2}})
  end)
end)
