-- partrain.tensor_more, fourth part: the Tensor methods and functions a PyTorch user reaches for
-- (is_floating_point, is_nonzero, t.ndim, t.data, detach_, type, sum_to_size, resize_, torch's aliases,
-- divide's rounding modes, vdot, dist, nanmedian, inference_mode, matrix_exp, igamma/igammac) against
-- torch 1.13: the numbers in R were computed with /usr/bin/python3 (torch 1.13) on the same inputs,
-- 0-based indices there plus 1 here; ig_mp/ig_mq are mpmath's (40 digits) regularized incomplete
-- gamma functions, the reference where torch's DLMF 8.12 expansion is off by ~1e-9 (it divides by
-- sqrt(2 * pi * a) with pi in float32). float64 gradchecks and every error message.
local pt = require "partrain"
local support = require "spec.support"
local gradcheck = require "spec.gradcheck"
local flat = support.flat
local close = support.assert_close_with(1e-12)
local assert_error = support.assert_error

local NAN, INF = 0 / 0, math.huge
local F64, I64 = {dtype = "float64"}, {dtype = "int64"}

local function D(v) return pt.tensor(v, F64) end
local function F(v) return pt.tensor(v, {dtype = "float32"}) end
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

-- relative closeness of every element (NaN matches NaN)
local function rel_close(t, expected, tol)
  local a = flat(pt.is_tensor(t) and t:tolist() or t)
  local b = flat(pt.is_tensor(expected) and expected:tolist() or expected)
  assert.are.equal(#b, #a)
  for i = 1, #a do
    local x, y = a[i], b[i]
    if not ((x ~= x and y ~= y) or x == y or math.abs(x - y) <= tol * math.abs(y)) then
      error(string.format("element %d: got %.17g, expected %.17g", i, x, y), 2)
    end
  end
end

-- second derivatives: the gradient of f (through autograd.grad with create_graph), checked by
-- finite differences
local function gradgradcheck(f, inputs, opts)
  return gradcheck(function(...)
    local args = table.pack(...)
    return pt.enable_grad(function()
      local y = f(table.unpack(args, 1, args.n))
      local xs = {}
      for i = 1, args.n do
        if pt.is_tensor(args[i]) and args[i].requires_grad then xs[#xs + 1] = args[i] end
      end
      local w = pt.linspace(0.5, 1.5, y:numel(), F64):reshape(y:size())
      local gs = pt.autograd.grad((y * w):sum(), xs, {create_graph = true})
      local parts = {}
      for i = 1, #gs do parts[i] = gs[i]:reshape(-1) end
      return #parts == 1 and parts[1] or pt.cat(parts)
    end)
  end, inputs, opts)
end

local R = {
  s2s_3 = {3.0, 5.0, 7.0},
  s2s_13 = {{3.0, 5.0, 7.0}},
  s2s_21 = {{3.0}, {12.0}},
  s2s_1 = {15.0},
  s2s_y = {{60.0}, {92.0}, {124.0}},
  rs_t = {{0.0, 3.0}, {1.0, 4.0}, {2.0, 5.0}},
  rs_t_stride = {1, 3},
  rs_v_first3 = {3.0, 4.0, 5.0},
  rs_v_off = 3,
  dv_a = {7.0, -7.0, 1.0, 0.0, -0.0, 5.0, -5.0, 5.099999904632568, 1.0000000150474662e+30, INF, -3.5, 3.5},
  dv_b = {0.0, 0.0, -0.0, 0.0, 2.0, 0.10000000149011612, 0.10000000149011612, INF, 3.0, 2.0, 2.0, -2.0},
  dv_floor = {INF, -INF, -INF, NAN, -0.0, 49.0, -50.0, 0.0, 3.333333383491554e+29, NAN, -2.0, -2.0},
  dv_trunc = {INF, -INF, -INF, NAN, -0.0, 50.0, -50.0, 0.0, 3.333333383491554e+29, INF, -1.0, -1.0},
  dvi_a = {7, -7, 6, -6, 0, 1, -1, 9223372036854775807},
  dvi_b = {2, 2, -4, -4, 3, -3, 3, 2},
  dvi_floor = {3, -4, -2, 1, 0, -1, -1, 4611686018427387903},
  dvi_trunc = {3, -3, -1, 1, 0, 0, 0, 4611686018427387903},
  dvi_s_trunc = {2, -2, 2, -2, 0, 0, 0, 3074457345618258602},
  dvi_f_trunc = {2.0, -2.0, 2.0, -2.0, 0.0, 0.0},
  dvi_f_floor = {2.0, -3.0, 2.0, -3.0, 0.0, 0.0},
  dvu8_floor = {3, 125, 0},
  dvu8_trunc = {2, 35, 0},
  dist_2 = 4.190763653560053,
  dist_1 = 8.25,
  dist_3_5 = 3.414583903138496,
  dist_0 = 6.0,
  dist_inf = 3.0,
  dist_ninf = 0.25,
  dist_n1_5 = 0.1783754947165165,
  dist_0_5 = 42.5142653895327,
  vdot = 2.5,
  vdot_i = -13,
  nm_v1 = {1.0, 2.0, NAN, 2.0, 0.5},
  nm_i1 = {1, 3, 2, 0, 0},
  nm_g1 = {{0.0, 1.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 1.0}, {0.0, 0.0, 1.0, 0.0}, {1.0, 0.0, 0.0, 0.0}, {1.0, 0.0,
    0.0, 0.0}},
  nm_v0 = {{2.0, 1.0, 1.0, 4.0}},
  nm_i0 = {{3, 0, 3, 0}},
  nm_g0 = {{0.0, 2.0, 0.0, 4.0}, {0.0, 0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 0.0}, {1.0, 0.0, 3.0, 0.0}, {0.0, 0.0,
    0.0, 0.0}},
  nm_all = 2.0,
  nm_all_g = {0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0},
  nm_int = {3, 6},
  nm_int_i = {2, 2},
  nm_int_all = 2,
  me_A1 = {{0.46229883247321296, -0.08802867172828391, -0.6536368146223672}, {0.17052938318420033,
    -0.32535670272720624, -0.419578618611263}, {0.12100405428878978, 0.25140789989929796,
    -0.21577727354080775}},
  me_E1 = {{1.5242469659030244, -0.1736709594777332, -0.7127410834386706}, {0.1568429176114571,
    0.67286664612598, -0.362489100021101}, {0.15613240619356072, 0.179521291462798, 0.7221931739407221}},
  me_A2 = {{-1.6764703070518296, 0.4067780691076148, 0.692744102209484, -1.858707398201448},
    {2.654340909486941, -3.198622274372818, 0.4605565059463211, -1.899823826602529}, {-2.83630898281847,
    -1.8266173498684157, 2.7240853303139074, -3.7486257356739365}, {2.1884350210686176, -0.4809336697285025,
    3.0335676223980563, -0.7280381473765731}},
  me_E2 = {{1.2672555474186928, 0.5351169975707917, -1.2812056343853502, 0.27413416623325254},
    {1.581929561901001, 0.6875771873371911, -1.5433267116256517, 0.2892791825133085}, {-3.0630582902763908,
    -0.958745461845724, 1.3251037984717717, 0.3313746205137908}, {-3.83741094325839, -1.2341202331278336,
    2.1370997448515983, -0.7227832361813064}},
  me_A3 = {{{-1.3218818291421377, 1.3148113651971234, 0.4604689979691664}, {1.117443076566861,
    0.36904473680395194, -0.1872021932975887}, {-3.1452962731231335, -0.11373127757597257,
    1.6962024805143952}}, {{-6.652034805381666, 11.54696227582466, -0.8607513668737871}, {-19.6124168414333,
    2.2092437177232176, -13.809366518587673}, {-20.547510174380236, 0.4757655385024031, -3.855687975933702}}},
  me_E3 = {{{0.06804034881833608, 0.816943719260742, 0.5764804216065533}, {1.174060234173379,
    2.2829529166191795, -0.1601768671364354}, {-5.307591539649439, -3.4668223944914685, 3.9717455548344884}},
    {{173.2130822607731, 355.29910679303924, -456.1352899926156}, {184.86225274835755, 379.19247559890385,
    -486.80989299779543}, {-313.18320001392044, -642.4092127391923, 824.728273569811}}},
  me_E2_f32 = {{1.2672557830810547, 0.5351172089576721, -1.2812062501907349, 0.2741345763206482},
    {1.5819296836853027, 0.6875773668289185, -1.5433273315429688, 0.289279580116272}, {-3.0630593299865723,
    -0.9587457180023193, 1.3251038789749146, 0.3313739001750946}, {-3.837412118911743, -1.2341208457946777,
    2.1371009349823, -0.722784698009491}},
  me_1x1 = {{{1.6487212707001282}}, {{0.1353352832366127}}},
  me_nil = {{1.0, 1.0, 0.4999999999999999}, {0.0, 1.0, 1.0}, {0.0, 0.0, 1.0}},
  ig_ba = {0.0, 0.0, 1.0, -1.0, 1.0, INF, INF, 1.0, NAN, 2.0, 0.5},
  ig_bx = {1.0, 0.0, 0.0, 1.0, -1.0, 3.0, INF, INF, 1.0, NAN, 1e-300},
  ig_bp = {1.0, NAN, 0.0, NAN, NAN, 0.0, NAN, 1.0, NAN, NAN, 1.1283791670955176e-150},
  ig_bq = {0.0, NAN, 1.0, NAN, NAN, 1.0, NAN, 0.0, NAN, NAN, 1.0},
  ig_f32 = {{0.47291067242622375, 0.18126922845840454, 0.004670408088713884, 2.132477527894139e-09, 0.0},
    {0.9167354702949524, 0.7768698334693909, 0.3000141978263855, 0.0009259919752366841,
    1.6948798604483664e-28}, {0.9999778866767883, 0.9998766183853149, 0.9970536231994629, 0.793219268321991,
    2.7654184719949626e-08}},
  igc_f32 = {{0.5270893573760986, 0.8187307715415955, 0.9953296184539795, 1.0, 1.0}, {0.0832645446062088,
    0.22313016653060913, 0.6999858021736145, 0.9990739822387695, 1.0}, {2.2090491256676614e-05,
    0.00012340981629677117, 0.002946405205875635, 0.20678073167800903, 1.0}},
  ig_gx = {0.334865114690167, 0.21596386605275222, 0.25102143016698353, 0.1171161244529091},
  ig_a = {0.001, 0.5, 1.5, 5, 25, 150, 250, 10000.0},
  ig_x = {0.001, 0.4, 0.8, 1.05, 2, 24, 26, 160, 240, 10020.0},
  ig_p = {0.9936876467088603, 0.9992973596407724, 0.9996891369289664, 0.9997979132836743, 0.999951023082169,
    0.9999999999999984, 0.9999999999999998, 1.0, 1.0, 1.0, 0.035670591729679894, 0.6289066304773024,
    0.7940967892679317, 0.8527008613773241, 0.9544997361036416, 0.9999999999957379, 0.999999999999445, 1.0,
    1.0, 1.0, 2.3774053651950578e-05, 0.15053296660817445, 0.3406101802880152, 0.44808723666028993,
    0.7385358700508897, 0.9999999997870519, 0.9999999999700492, 1.0, 1.0, 1.0, 8.326391864211505e-18,
    6.12433271023338e-05, 0.001411310145886735, 0.0044853356073260445, 0.052653017343711125,
    0.9999993793301296, 0.9999998858884965, 1.0, 1.0, 1.0, 6.440754277466492e-101, 4.9415793794725184e-36,
    1.1290809537169043e-28, 7.960715001274258e-26, 3.1707866758025193e-19, 0.4459987765587104,
    0.6040734296407361, 1.0, 1.0, 1.0, 0.0, 0.0, 2.2986666022368848e-278, 9.30084872299936e-261,
    3.4261560452059366e-219, 8.448838882289163e-67, 1.9028139523389172e-62, 0.7956261881263011,
    0.9999999998206007, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.4580925833708374e-158, 9.762528246786995e-151,
    2.9436000393903804e-11, 0.2676500697577577, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.5805104904373724},
  ig_q = {0.006312353291139772, 0.000702640359227298, 0.00031086307103415803, 0.00020208671632568627,
    4.897691783098143e-05, 1.5180530663514644e-15, 1.902033159202079e-16, 2.0348420178000887e-75,
    2.4544096374019126e-110, 0.0, 0.9643294082703201, 0.37109336952269756, 0.2059032107320683,
    0.14729913862267588, 0.045500263896358445, 4.262191597843651e-12, 5.550063481222694e-13,
    1.4484424372736818e-71, 2.1367005928864054e-106, 0.0, 0.999976225946348, 0.8494670333918255,
    0.6593898197119847, 0.5519127633397101, 0.26146412994911034, 2.129480953603346e-10, 2.995080092688494e-11,
    4.663895503094722e-69, 1.0298808741888763e-103, 0.0, 1.0, 0.9999387566728977, 0.9985886898541133,
    0.995514664392674, 0.9473469826562889, 6.206698704249268e-07, 1.141115034417944e-07, 9.121715266633173e-63,
    8.264686477910176e-97, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5540012234412895, 0.39592657035926393,
    4.88747093222792e-41, 1.4035402765928732e-71, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.20437381187369885,
    1.793993206425786e-10, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.999999999970564, 0.7323499302422423, 0.0,
    1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.4194895095626276},
  ig_mp = {0.9936876467088603, 0.9992973596407728, 0.9996891369289659, 0.9997979132836744, 0.999951023082169,
    0.9999999999999984, 0.9999999999999998, 1.0, 1.0, 1.0, 0.03567059172967989, 0.6289066304773024,
    0.7940967892679317, 0.8527008613773239, 0.9544997361036416, 0.9999999999957379, 0.999999999999445, 1.0,
    1.0, 1.0, 2.3774053651950565e-05, 0.1505329666081745, 0.3406101802880152, 0.44808723666028993,
    0.7385358700508894, 0.9999999997870519, 0.9999999999700492, 1.0, 1.0, 1.0, 8.326391864211503e-18,
    6.124332710233378e-05, 0.0014113101458867355, 0.004485335607326045, 0.05265301734371116,
    0.9999993793301296, 0.9999998858884965, 1.0, 1.0, 1.0, 6.440754277466484e-101, 4.941579379472456e-36,
    1.1290809537168915e-28, 7.960715001274205e-26, 3.1707866758025054e-19, 0.44599877692500434,
    0.6040734300001716, 1.0, 1.0, 1.0, 0.0, 2.5e-323, 2.298666602236797e-278, 9.300848722999544e-261,
    3.426156045205941e-219, 8.448838882288876e-67, 1.9028139523389116e-62, 0.7956261882343224,
    0.9999999998206007, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.4580925833709136e-158, 9.762528246787643e-151,
    2.943600039390352e-11, 0.2676500698540158, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.5805104904555031},
  ig_mq = {0.00631235329113971, 0.0007026403592272346, 0.0003108630710340944, 0.00020208671632562252,
    4.897691783098148e-05, 1.518053066351467e-15, 1.902033159202076e-16, 2.0348420178000485e-75,
    2.4544096374019135e-110, 0.0, 0.9643294082703201, 0.37109336952269756, 0.2059032107320683,
    0.14729913862267605, 0.04550026389635842, 4.262191597843645e-12, 5.550063481222692e-13,
    1.448442437273694e-71, 2.1367005928864281e-106, 0.0, 0.999976225946348, 0.8494670333918255,
    0.6593898197119848, 0.5519127633397101, 0.2614641299491106, 2.1294809536033398e-10, 2.995080092688493e-11,
    4.663895503094763e-69, 1.0298808741888917e-103, 0.0, 1.0, 0.9999387566728977, 0.9985886898541133,
    0.995514664392674, 0.9473469826562888, 6.206698704249265e-07, 1.1411150344179435e-07,
    9.121715266633299e-63, 8.264686477910229e-97, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5540012230749957,
    0.39592656999982845, 4.887470932227896e-41, 1.4035402765928545e-71, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,
    0.20437381176567754, 1.793993206425848e-10, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.999999999970564,
    0.7323499301459842, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.41948950954449693},
  ig_asym = {false, false, false, false, false, false, false, false, false, false, false, false, false, false,
    false, false, false, false, false, false, false, false, false, false, false, false, false, false, false,
    false, false, false, false, false, false, false, false, false, false, false, false, false, false, false,
    false, true, true, false, false, false, false, false, false, false, false, false, false, true, false,
    false, false, false, false, false, false, false, false, false, true, false, false, false, false, false,
    false, false, false, false, false, true},
  ig_f32_64 = {{0.47291073203086853, 0.18126924335956573, 0.00467040715739131, 2.1324779719833487e-09, 0.0},
    {0.9167354702949524, 0.7768698334693909, 0.3000141680240631, 0.0009259919170290232,
    1.6948870826856579e-28}, {0.9999778866767883, 0.9998766183853149, 0.9970536231994629, 0.7932191491127014,
    2.7654184719949626e-08}},
  igc_f32_64 = {{0.5270892381668091, 0.8187307715415955, 0.9953296184539795, 1.0, 1.0}, {0.08326451480388641,
    0.22313016653060913, 0.6999858617782593, 0.9990739822387695, 1.0}, {2.2090496713644825e-05,
    0.00012340980174485594, 0.002946404507383704, 0.2067808359861374, 1.0}},
}

local DTYPES = {"float32", "float64", "int64", "int32", "uint8", "bool"}

describe("predicates", function()
  it("is_floating_point, is_complex, is_signed per dtype (torch's answers)", function()
    local float = {true, true, false, false, false, false}
    local signed = {true, true, true, true, false, false}
    for k, dt in ipairs(DTYPES) do
      local t = pt.zeros(2, {dtype = dt})
      assert.are.equal(float[k], t:is_floating_point())
      assert.are.equal(float[k], pt.is_floating_point(t))
      assert.are.equal(signed[k], t:is_signed())
      assert.are.equal(signed[k], pt.is_signed(t))
      assert.is_false(t:is_complex())
      assert.is_false(pt.is_complex(t))
    end
  end)

  it("is_nonzero of one element of any shape, as torch (NaN nonzero, -0.0 zero)", function()
    assert.is_false(pt.tensor({{0}}):is_nonzero())
    assert.is_true(pt.tensor({NAN}):is_nonzero())
    assert.is_false(pt.tensor({-0.0}):is_nonzero())
    assert.is_false(pt.tensor(false):is_nonzero())
    assert.is_true(pt.tensor(true):is_nonzero())
    assert.is_true(pt.is_nonzero(L({-3})))
    assert.is_true(pt.tensor({{{2.5}}}):is_nonzero())
    assert_error("is_nonzero: Boolean value of Tensor with no values is ambiguous", pt.is_nonzero, pt.zeros(0))
    assert_error("is_nonzero: Boolean value of Tensor with more than one value is ambiguous (shape {2})",
                 pt.is_nonzero, pt.zeros(2))
    assert_error("is_nonzero: bad argument #1 (Tensor expected, got number)", pt.is_nonzero, 1)
    assert_error("is_nonzero: unexpected argument #2 (number)", pt.is_nonzero, pt.zeros(1), 1)
  end)

  it("is_same_size compares shapes only", function()
    assert.is_true(pt.zeros(2, 3):is_same_size(L({{1, 2, 3}, {4, 5, 6}})))
    assert.is_false(pt.zeros(2, 3):is_same_size(pt.zeros(3, 2)))
    assert.is_false(pt.zeros(6):is_same_size(pt.zeros(1, 6)))
    assert.is_true(pt.is_same_size(pt.tensor(1), pt.tensor(2)))
    assert_error("is_same_size: bad argument #2 (Tensor expected, got table)", pt.is_same_size, pt.zeros(1), {1})
  end)

  it("t.ndim is t:dim() and t.is_cuda is false on the CPU", function()
    assert.are.equal(0, pt.tensor(1).ndim)
    assert.are.equal(3, pt.zeros(2, 1, 4).ndim)
    assert.is_false(pt.zeros(2).is_cuda)
    assert.is_false(pt.zeros(2):cpu().is_cuda)
  end)
end)

describe("t.data", function()
  it("reads as a tensor on t's storage without history or requires_grad", function()
    local x = pt.tensor({1, 2, 3}, {requires_grad = true})
    local y = x * 2
    for _, t in ipairs {x, y} do
      local d = t.data
      assert.is_false(d.requires_grad)
      assert.is_nil(d.grad_fn)
      assert.is_true(d:is_same_storage(t))
      same(d, t:detach())
    end
    local v = pt.arange(6.0):view(2, 3)[2]
    assert.are.equal(4, v.data:storage_offset())
    x.data:mul_(10) -- writes through to x, as torch's
    same(x:detach(), {10, 20, 30})
  end)

  it("assigned, gives t the tensor's storage, dtype and shape; t stays the same object", function()
    local x = pt.tensor({1, 2, 3}, {requires_grad = true})
    local held = {x}
    local u = D({{5, 6}, {7, 8}})
    x.data = u
    assert.are.equal(x, held[1])
    assert.are.equal("float64", x:dtype())
    assert.are.same({2, 2}, x:size())
    assert.is_true(x.requires_grad)
    assert.is_true(x:is_same_storage(u))
    same(x:detach(), {{5, 6}, {7, 8}})
    ;(x * x):sum():backward()
    same(x.grad, {{10, 12}, {14, 16}})
    local z = pt.zeros(3)
    z.data = L({4, 5}) -- no grad: any dtype, as torch
    assert.are.equal("int64", z:dtype())
    same(z, {4, 5})
  end)

  it("assignment errors", function()
    local x = pt.ones(2, {requires_grad = true})
    assert_error("data: expected a Tensor, got number", function() x.data = 5 end)
    assert_error("data: a tensor that requires grad needs floating point data, got dtype int64",
                 function() x.data = L({1, 2}) end)
    local y = x * 2
    assert_error("data: only a leaf tensor's data can be replaced", function() y.data = pt.zeros(2) end)
  end)
end)

describe("detach_", function()
  it("makes t a leaf without history in place, as torch", function()
    local x = pt.tensor({1, 2}, {requires_grad = true})
    local y = x * 3
    assert.are.equal(y, y:detach_())
    assert.is_false(y.requires_grad)
    assert.is_true(y.is_leaf)
    assert.is_nil(y.grad_fn)
    assert.is_false((y * 2).requires_grad)
    x:detach_()
    assert.is_false(x.requires_grad)
    same(y, {3, 6})
  end)

  it("refuses views and extra arguments", function()
    local x = pt.tensor({1, 2, 3}, {requires_grad = true})
    assert_error("detach_: can't detach views in-place (use detach() instead)", function() x[{{2, 3}}]:detach_() end)
    assert_error("detach_: can't detach views in-place (use detach() instead)",
                 function() pt.zeros(4):view(2, 2):detach_() end)
    assert_error("detach_: unexpected argument #2 (number)", function() x:detach_(1) end)
  end)
end)

describe("type", function()
  it("names t's type as torch", function()
    local names = {"torch.FloatTensor", "torch.DoubleTensor", "torch.LongTensor", "torch.IntTensor",
                   "torch.ByteTensor", "torch.BoolTensor"}
    for k, dt in ipairs(DTYPES) do assert.are.equal(names[k], pt.zeros(1, {dtype = dt}):type()) end
  end)

  it("converts to a type name or a dtype, t itself when it has it", function()
    local t = pt.tensor({0.5, 1.5, -2.5})
    assert.are.equal(t, t:type("torch.FloatTensor"))
    assert.are.equal(t, t:type("float32"))
    local i = t:type("torch.IntTensor")
    assert.are.equal("int32", i:dtype())
    same(i, {0, 1, -2})
    assert.are.equal("float64", t:type("double"):dtype())
    assert.are.equal("uint8", t:type("torch.ByteTensor"):dtype())
    local x = pt.tensor({1, 2}, {requires_grad = true})
    local y = x:type("torch.DoubleTensor")
    ;(y * y):sum():backward()
    same(x.grad, {2, 4})
  end)

  it("errors", function()
    local t = pt.zeros(2)
    assert_error("type: invalid type: 'torch.Foo'", t.type, t, "torch.Foo")
    assert_error("type: invalid type: 'torch.cuda.Float'", t.type, t, "torch.cuda.Float")
    assert_error("type: the type must be a string, got number", t.type, t, 3)
    assert_error("type: unexpected argument #3 (boolean)", t.type, t, "float64", true)
    local err = support.errmsg(t.type, t, "torch.cuda.FloatTensor")
    assert.matches("type: CUDA is not available", err, 1, true)
  end)
end)

describe("sum_to_size", function()
  it("sums to a size expandable to t's, as torch", function()
    local x = pt.arange(6.0, F64):view(2, 3)
    same(x:sum_to_size(3), R.s2s_3)
    same(x:sum_to_size(1, 3), R.s2s_13)
    same(x:sum_to_size({2, 1}), R.s2s_21)
    same(x:sum_to_size(1), R.s2s_1)
    same(pt.arange(24.0, F64):view(2, 3, 4):sum_to_size(3, 1), R.s2s_y)
    assert.are.equal(x, x:sum_to_size(2, 3))
    assert.is_true(gradcheck(function(t) return t:sum_to_size(3, 1) end, {pt.randn(2, 3, 4, F64)}))
  end)

  it("errors", function()
    local x = pt.zeros(2, 3)
    assert_error("sum_to_size: size {2} is not expandable to size {2,3}", x.sum_to_size, x, 2)
    assert_error("sum_to_size: size {1,2,3} is not expandable to size {2,3}", x.sum_to_size, x, 1, 2, 3)
    assert_error("sum_to_size: size {1} is not expandable to size {}", pt.tensor(5).sum_to_size, pt.tensor(5), 1)
    assert_error("sum_to_size: size expected (numbers or a list)", x.sum_to_size, x)
    assert_error("sum_to_size: sizes must be non-negative, got {-1}", x.sum_to_size, x, -1)
  end)
end)

describe("resize_ and resize_as_", function()
  it("reshape in place over the storage from t's offset, growing it when needed", function()
    local x = pt.arange(6.0)
    assert.are.equal(x, x:resize_(2))
    same(x, {0, 1})
    x:resize_(2, 3) -- the storage still holds the 6 elements, as torch's
    same(x, {{0, 1, 2}, {3, 4, 5}})
    x:resize_({0})
    assert.are.same({0}, x:size())
    x:resize_(3, 3)
    same(x[{{1, 2}}], {{0, 1, 2}, {3, 4, 5}}) -- the third row is new (torch's is not set)
    assert.are.same({3, 1}, x:stride())
    x:resize_({})
    assert.are.same({}, x:size())
    same(x, 0)
    local t = pt.arange(6.0):view(2, 3):t()
    t:resize_(3, 2) -- its own size: left alone, strides too
    assert.are.same({1, 3}, t:stride())
    same(t, R.rs_t)
    t:resize_(2, 3)
    same(t, {{0, 1, 2}, {3, 4, 5}})
    local v = pt.arange(6.0):view(2, 3)[2]
    v:resize_(2, 2)
    assert.are.equal(R.rs_v_off + 1, v:storage_offset())
    same(v:flatten()[{{1, 3}}], R.rs_v_first3)
    local s = pt.arange(6.0, I64)[{{1, 6, 2}}]
    s:resize_(2)
    same(s, {0, 1})
    local a = pt.zeros(1)
    assert.are.equal(a, a:resize_as_(pt.ones(2, 2, {dtype = "int64"})))
    assert.are.same({2, 2}, a:size())
    assert.are.equal("float32", a:dtype())
  end)

  it("refuses tensors that require grad, and bad sizes", function()
    local x = pt.zeros(2, {requires_grad = true})
    assert_error("resize_: cannot resize a tensor that requires grad (as torch; resize t:detach() or t.data)",
                 x.resize_, x, 3)
    assert_error("resize_: cannot resize a tensor that requires grad (as torch; resize t:detach() or t.data)",
                 x.resize_, x, 2)
    assert_error("resize_as_: cannot resize a tensor that requires grad (as torch; resize t:detach() or t.data)",
                 x.resize_as_, x, pt.zeros(3))
    local t = pt.zeros(2)
    assert_error("resize_: sizes must be non-negative, got {2,-1}", t.resize_, t, 2, -1)
    assert_error("resize_: size expected (numbers or a list)", t.resize_, t)
    assert_error("resize_as_: bad argument #2 (Tensor expected, got table)", t.resize_as_, t, {2})
  end)
end)

describe("clamp_min_, clamp_max_, square_, trunc_, fix_", function()
  it("work in place", function()
    local t = D({1, -2, 5})
    assert.are.equal(t, t:clamp_min_(0))
    same(t, {1, 0, 5})
    t:clamp_max_(D({0.5, 2, 3}))
    same(t, {0.5, 0, 3})
    t:clamp_min_(D({1, -1, 4}))
    same(t, {1, 0, 4})
    assert.are.equal(t, t:square_())
    same(t, {1, 0, 16})
    local i = L({-3, 2})
    i:square_()
    same(i, {9, 4})
    i:clamp_max_(5)
    same(i, {5, 4})
    local f = D({-1.5, 2.5, -0.25})
    assert.are.equal(f, f:trunc_())
    same(f, {-1, 2, -0.0})
    local g = D({-1.7, 1.7})
    assert.are.equal(g, g:fix_())
    same(g, {-1, 1})
  end)

  it("carry gradients as in-place ops, and check their arguments", function()
    local x = D({1, -2, 3})
    x.requires_grad = true
    local y = x * 1
    y:clamp_min_(0):square_()
    y:sum():backward()
    same(x.grad, {2, 0, 6})
    local i = L({1, 2})
    assert_error("clamp_min_: result type float32 can't be cast to the desired output type int64", i.clamp_min_, i,
                 F({1.5}))
    assert_error("clamp_max_: unexpected argument #3 (number)", i.clamp_max_, i, 1, 2)
    local leaf = pt.ones(2, {requires_grad = true})
    local err = support.errmsg(leaf.square_, leaf)
    assert.matches("^.-square_: ", err)
    err = support.errmsg(leaf.clamp_min_, leaf, 0)
    assert.matches("^.-clamp_min_: ", err)
  end)
end)

describe("torch's aliases", function()
  it("are their originals under torch's names, as methods and pt functions", function()
    local a, b = D({0.25, -0.5, 0.75}), D({0.5, 0.5, -0.25})
    local pairs_ = {
      {"negative", "neg"}, {"fix", "trunc"}, {"absolute", "abs"}, {"arccos", "acos"}, {"arcsin", "asin"},
      {"arctan", "atan"}, {"arccosh", "acosh", 1}, {"arcsinh", "asinh"}, {"arctanh", "atanh"},
    }
    for _, p in ipairs(pairs_) do
      local x = p[3] and a:abs() + p[3] or a
      same(x[p[1]](x), x[p[2]](x))
      same(pt[p[1]](x), x[p[2]](x))
    end
    for _, p in ipairs {{"arctan2", "atan2"}, {"greater", "gt"}, {"greater_equal", "ge"}, {"less", "lt"},
                        {"less_equal", "le"}, {"not_equal", "ne"}, {"multiply", "mul"}, {"subtract", "sub"}} do
      same(a[p[1]](a, b), a[p[2]](a, b))
      same(pt[p[1]](a, b), a[p[2]](a, b))
    end
    same(a:greater_equal(a), {true, true, true})
    same(pt.subtract(a, b, {alpha = 2}), a - b * 2)
    same(pt.multiply(a, 2), a * 2)
    local x = D({0.5, -0.25})
    x.requires_grad = true
    ;(x:arcsin() + x:absolute() * pt.multiply(x, x)):sum():backward()
    local s = x:detach()
    same(x.grad, (1 - s * s):rsqrt() + s:sign() * s * s + 2 * s:abs() * s)
  end)

  it("in place", function()
    local function check(name, orig, t, ...)
      local u = t:clone()
      assert.are.equal(t, t[name](t, ...))
      same(t, u[orig](u, ...))
    end
    check("negative_", "neg_", D({1, -2}))
    check("absolute_", "abs_", D({1, -2}))
    check("clip_", "clamp_", D({1, -2, 5}), -1, 2)
    check("arccos_", "acos_", D({0.5, -0.25}))
    check("arcsin_", "asin_", D({0.5, -0.25}))
    check("arctan_", "atan_", D({0.5, -0.25}))
    check("arctan2_", "atan2_", D({0.5, -0.25}), D({-1, 2}))
    check("arccosh_", "acosh_", D({1.5, 3}))
    check("arcsinh_", "asinh_", D({0.5, -0.25}))
    check("arctanh_", "atanh_", D({0.5, -0.25}))
    check("multiply_", "mul_", D({0.5, -0.25}), 3)
    check("subtract_", "sub_", D({0.5, -0.25}), D({1, 1}))
    check("true_divide_", "div_", D({0.5, -0.25}), 4)
  end)

  it("name themselves in their errors", function()
    assert_error("greater: shapes {2} and {3} cannot be broadcast", pt.greater, pt.zeros(2), pt.zeros(3))
    assert_error("multiply: shapes {2} and {3} cannot be broadcast", pt.zeros(2).multiply, pt.zeros(2), pt.zeros(3))
    local i = L({1, 2})
    local err = support.errmsg(i.clip_, i, 0.5, nil)
    assert.matches("^.-:%d+: clip_: ", err)
  end)

  it("positive and ravel", function()
    local t = D({{1, -2}, {3, 4}})
    assert.are.equal(t, t:positive())
    assert.are.equal(t, pt.positive(t))
    assert_error("positive: not supported for bool tensors (torch's unary +)", pt.positive, pt.tensor({true}))
    same(t:ravel(), {1, -2, 3, 4})
    same(t:t():ravel(), {1, 3, -2, 4})
    assert.are.same({1}, pt.tensor(3):ravel():size())
    assert.is_true(t:ravel():is_same_storage(t))
    assert.is_true(gradcheck(function(x) return x:t():ravel() end, {pt.randn(2, 3, F64)}))
  end)
end)

describe("divide", function()
  it("rounds floats as torch's trunc and floor modes (zeros, infinities, inexact divisors)", function()
    local a, b = F(R.dv_a), F(R.dv_b)
    same(a:divide(b, {rounding_mode = "floor"}), R.dv_floor)
    same(pt.divide(a, b, {rounding_mode = "trunc"}), R.dv_trunc)
    same(pt.divide(a, b), pt.div(a, b))
    same(a:divide(b, {}), pt.div(a, b))
  end)

  it("keeps integer dtypes, as torch", function()
    local a, b = L(R.dvi_a), L(R.dvi_b)
    local f = a:divide(b, {rounding_mode = "floor"})
    assert.are.equal("int64", f:dtype())
    same(f, R.dvi_floor)
    same(a:divide(b, {rounding_mode = "trunc"}), R.dvi_trunc)
    same(a:divide(3, {rounding_mode = "trunc"}), R.dvi_s_trunc)
    local ai = a[{{1, 6}}]
    local t = ai:divide(2.5, {rounding_mode = "trunc"})
    assert.are.equal("float32", t:dtype())
    same(t, R.dvi_f_trunc)
    same(ai:divide(2.5, {rounding_mode = "floor"}), R.dvi_f_floor)
    local u8 = pt.tensor({7, 250, 0}, {dtype = "uint8"})
    local q = u8:divide(2, {rounding_mode = "floor"})
    assert.are.equal("uint8", q:dtype())
    same(q, R.dvu8_floor)
    same(u8:divide(pt.tensor({3, 7, 5}, {dtype = "uint8"}), {rounding_mode = "trunc"}), R.dvu8_trunc)
    assert.are.equal("float64", pt.divide(pt.tensor({7, -7}, {dtype = "int32"}), D({2, 2}),
                                          {rounding_mode = "floor"}):dtype())
  end)

  it("has gradient 0 with a rounding mode (a zero divisor too), as torch", function()
    local x, y = D({5, -3, 1}), D({2, 0, 4})
    x.requires_grad, y.requires_grad = true, true
    local q = pt.divide(x, y, {rounding_mode = "floor"})
    same(q, {2, -INF, 0})
    ;(q * 3):sum():backward()
    same(x.grad, {0, 0, 0})
    same(y.grad, {0, 0, 0})
    local s = D({2.5})
    s.requires_grad = true
    pt.divide(x:detach(), s, {rounding_mode = "trunc"}):sum():backward()
    same(s.grad, {0})
    assert.is_true(gradcheck(function(p, r) return p:divide(r) end, {pt.randn(3, F64), D({1.5, 2, -3})}))
  end)

  it("divide_ writes into t", function()
    local t = L({7, -7})
    assert.are.equal(t, t:divide_(2, {rounding_mode = "trunc"}))
    same(t, {3, -3})
    local f = D({1, -3})
    f:divide_(D({2, 2}))
    same(f, {0.5, -1.5})
    assert_error("divide_: result type float32 can't be cast to the desired output type int64", t.divide_, t, 2)
  end)

  it("errors", function()
    local t = L({7, -7})
    assert_error("divide: integer division by zero (a divisor is 0; a float dtype gives inf or nan instead)",
                 pt.divide, t, L({0, 2}), {rounding_mode = "trunc"})
    assert_error("divide: rounding_mode must be nil, 'trunc' or 'floor', got 'round'", pt.divide, t, 2,
                 {rounding_mode = "round"})
    assert_error("divide: rounding_mode must be nil, 'trunc' or 'floor', got number", pt.divide, t, 2,
                 {rounding_mode = 1})
    assert_error("divide: unknown option 'mode' (options: rounding_mode)", pt.divide, t, 2, {mode = "trunc"})
    assert_error("divide: rounding_mode 'floor' is not supported for bool tensors", pt.divide,
                 pt.tensor({true}), pt.tensor({true}), {rounding_mode = "floor"})
    assert_error("divide: bad argument #2 (Tensor or number expected, got string)", pt.divide, t, "2",
                 {rounding_mode = "floor"})
    assert_error("divide: bad argument #3 (options table expected, got string)", pt.divide, t, 2, "floor")
    assert_error("divide: shapes {2} and {3} cannot be broadcast", pt.divide, t, L({1, 2, 3}),
                 {rounding_mode = "floor"})
  end)
end)

describe("vdot and dist", function()
  it("vdot is the dot product of two vectors of one dtype, integers too", function()
    local a, b = D({1.5, 2, -3}), D({4, -1, 0.5})
    same(pt.vdot(a, b), R.vdot)
    local i = pt.vdot(pt.tensor({1, 2, -3}, {dtype = "int32"}), pt.tensor({4, -1, 5}, {dtype = "int32"}))
    assert.are.equal("int32", i:dtype())
    same(i, R.vdot_i)
    assert.is_true(gradcheck(function(p, q) return p:vdot(q) end, {pt.randn(4, F64), pt.randn(4, F64)}))
    assert_error("vdot: 1D tensors expected, but got 2D and 1D tensors", pt.vdot, pt.ones(2, 2), pt.ones(2))
    assert_error("vdot: expected both vectors to have the same number of elements, got 2 and 3", pt.vdot,
                 pt.ones(2), pt.ones(3))
    assert_error("vdot: expected both vectors to have the same dtype, got float32 and float64", pt.vdot,
                 pt.ones(2), pt.ones(2, F64))
    assert_error("vdot: not implemented for bool tensors", pt.vdot, pt.tensor({true}), pt.tensor({false}))
  end)

  it("dist is the p-norm of the broadcast difference, every p as torch", function()
    local p = D({{1.5, -2.0, 0.25}, {3.0, 0.5, -1.0}})
    local q = D({0.5, 1.0, -0.75})
    close(p:dist(q), R.dist_2)
    close(pt.dist(p, q, 1), R.dist_1)
    close(p:dist(q, 3.5), R.dist_3_5)
    close(p:dist(q, 0), R.dist_0)
    close(p:dist(q, INF), R.dist_inf)
    close(p:dist(q, -INF), R.dist_ninf)
    close(p:dist(q, -1.5), R.dist_n1_5)
    close(p:dist(q, 0.5), R.dist_0_5)
    assert.are.equal("float32", pt.dist(F({1, 2}), L({0, 5})):dtype())
    for _, pv in ipairs {2, 1, 3.5, INF, -1.5} do
      assert.is_true(gradcheck(function(x, y) return x:dist(y, pv) end, {pt.randn(2, 3, F64), pt.randn(3, F64)}))
    end
  end)

  it("dist errors", function()
    assert_error("dist: expected floating point tensors, got int64 and int64", pt.dist, L({1}), L({2}))
    assert_error("dist: p must be a number, got string", pt.dist, pt.ones(1), pt.ones(1), "fro")
    assert_error("dist: p must be a number, got nan", pt.dist, pt.ones(1), pt.ones(1), NAN)
    assert_error("dist: bad argument #2 (Tensor expected, got number)", pt.dist, pt.ones(1), 2)
    assert_error("dist: shapes {2} and {3} cannot be broadcast", pt.dist, pt.ones(2), pt.ones(3))
  end)
end)

describe("nanmedian", function()
  local m = {{NAN, 1, NAN, 4}, {3, NAN, 1, 2}, {NAN, NAN, NAN, NAN}, {2, 2, 1, 5}, {0.5, -1, 8, NAN}}

  it("along a dim: values and 1-based indices ignoring NaN, the gradient to the selected element", function()
    local x = D(m)
    x.requires_grad = true
    local v, i = x:nanmedian(2)
    same(v, R.nm_v1)
    -- row 3 is all NaN: its index is that of its first NaN (torch's pick there depends on the row's
    -- length: 3 here, 1 for a row of 3 NaNs), the other rows' are torch's
    local want_i, want_g = L(R.nm_i1) + 1, D(R.nm_g1)
    want_i[3] = 1
    want_g[3] = D({1, 0, 0, 0})
    same(i, want_i)
    v:sum():backward()
    same(x.grad, want_g)
    local y = D(m)
    y.requires_grad = true
    local v0, i0 = pt.nanmedian(y, 1, true)
    same(v0, R.nm_v0)
    same(i0, L(R.nm_i0) + 1)
    ;(v0 * D({1, 2, 3, 4})):sum():backward()
    same(y.grad, R.nm_g0)
    local vk = y:nanmedian({dim = -1, keepdim = true})
    assert.are.same({5, 1}, vk:size())
    assert.is_true(gradcheck(function(t) return t:nanmedian(2) end, {D({{NAN, 1, 3, 4}, {2, NAN, 1, 7}})}))
  end)

  it("over all elements, its gradient shared by the elements equal to it (torch's)", function()
    local w = D({1, 3, 3, NAN, 2, 3, 0})
    w.requires_grad = true
    local r = w:nanmedian()
    same(r, R.nm_all)
    r:backward()
    same(w.grad, R.nm_all_g)
    local t = D({1, 2, 2, NAN})
    t.requires_grad = true
    t:nanmedian():backward()
    same(t.grad, {0, 0.5, 0.5, 0}) -- torch's
    local n = D({NAN, NAN, NAN})
    n.requires_grad = true
    local rn = pt.nanmedian(n)
    same(rn, NAN)
    rn:backward()
    close(n.grad, {1 / 3, 1 / 3, 1 / 3}) -- torch's
    same(pt.zeros(0):nanmedian(), NAN)
    same(D({1, INF, INF, NAN}):nanmedian(), INF)
  end)

  it("integer tensors, 0-d tensors and empty lanes", function()
    local t = L({{4, 1, 3}, {2, 8, 6}})
    local v, i = t:nanmedian(2)
    same(v, R.nm_int)
    same(i, L(R.nm_int_i) + 1)
    same(L({4, 1, 3, 2}):nanmedian(), R.nm_int_all)
    local v0, i0 = pt.tensor(5.0):nanmedian(1)
    same(v0, 5)
    same(i0, 1)
    assert.are.same({}, v0:size())
    local ve, ie = pt.zeros(0, 2):nanmedian(2)
    assert.are.same({0}, ve:size())
    assert.are.same({0}, ie:size())
  end)

  it("errors", function()
    assert_error("nanmedian: expected reduction dimension 2 to have non-zero size (shape {2,0})", pt.nanmedian,
                 pt.zeros(2, 0), 2)
    assert_error("nanmedian: not implemented for bool tensors", pt.nanmedian, pt.tensor({true}))
    assert_error("nanmedian: cannot take the median of an empty int64 tensor", pt.nanmedian, L({}))
    assert_error("nanmedian: keepdim given without dim", pt.nanmedian, pt.ones(2), {keepdim = true})
    local err = support.errmsg(pt.nanmedian, pt.ones(2), 3)
    assert.matches("^.-:%d+: nanmedian: ", err)
  end)
end)

describe("inference_mode", function()
  it("runs fn without recording, as no_grad", function()
    local x = pt.ones(2, {requires_grad = true})
    local y, extra = pt.inference_mode(function(a, b) return a * 2, b end, x, 7)
    assert.is_false(y.requires_grad)
    assert.are.equal(7, extra)
    assert.is_true(pt.inference_mode(false, function(a) return a * 2 end, x).requires_grad)
    assert.is_false(pt.inference_mode(true, function(a) return a * 2 end, x).requires_grad)
    assert.is_true(pt.is_grad_enabled())
    assert_error("inference_mode: bad argument #1 (function expected, got number)", pt.inference_mode, 1)
    assert_error("inference_mode: bad argument #2 (function expected, got nil)", pt.inference_mode, true)
  end)
end)

describe("matrix_exp", function()
  it("agrees with torch.linalg.matrix_exp (float64, batches, float32)", function()
    rel_close(pt.linalg.matrix_exp(D(R.me_A1)), R.me_E1, 1e-13)
    rel_close(D(R.me_A2):matrix_exp(), R.me_E2, 1e-12)
    rel_close(pt.matrix_exp(D(R.me_A3)), R.me_E3, 1e-12)
    local e32 = F(R.me_A2):matrix_exp()
    assert.are.equal("float32", e32:dtype())
    rel_close(e32, R.me_E2_f32, 3e-6)
    rel_close(D({{{0.5}}, {{-2.0}}}):matrix_exp(), R.me_1x1, 1e-15)
    close(D({{0, 1, 0}, {0, 0, 1}, {0, 0, 0}}):matrix_exp(), R.me_nil, 1e-15)
    same(pt.zeros(0, 0, F64):matrix_exp(), pt.zeros(0, 0))
    assert.are.same({2, 0, 0}, pt.zeros(2, 0, 0):matrix_exp():size())
    -- exp(A) exp(-A) = I
    local a = D(R.me_A2)
    close(a:matrix_exp():matmul((-a):matrix_exp()), pt.eye(4, F64), 1e-11)
  end)

  it("has gradients and second derivatives", function()
    pt.manual_seed(3)
    assert.is_true(gradcheck(function(a) return a:matrix_exp() end, {pt.randn(3, 3, F64) * 2}))
    assert.is_true(gradcheck(function(a) return pt.linalg.matrix_exp(a) end, {pt.randn(2, 2, 2, F64)}))
    assert.is_true(gradgradcheck(function(a) return a:matrix_exp() end, {pt.randn(3, 3, F64) * 0.7}))
  end)

  it("errors", function()
    assert_error("linalg.matrix_exp: A must be a square matrix or a batch of square matrices, got shape {2,3}",
                 pt.linalg.matrix_exp, pt.zeros(2, 3))
    assert_error("matrix_exp: A must be a square matrix or a batch of square matrices, got shape {3}",
                 pt.matrix_exp, pt.zeros(3))
    assert_error("matrix_exp: expected a floating point tensor, got int64", pt.matrix_exp, L({{1}}))
    assert_error("matrix_exp: unexpected argument #2 (number)", pt.matrix_exp, pt.zeros(2, 2), 1)
  end)
end)

describe("igamma and igammac", function()
  it("agree with torch over every branch (series, continued fraction, DLMF 8.12 against mpmath)", function()
    local a = D(R.ig_a):view(-1, 1):expand(#R.ig_a, #R.ig_x)
    local x = D(R.ig_x)
    local p = pt.igamma(a, x):reshape(-1):tolist()
    local q = a:igammac(x):reshape(-1):tolist()
    for k = 1, #p do
      if R.ig_asym[k] then
        rel_close({p[k], q[k]}, {R.ig_mp[k], R.ig_mq[k]}, 1e-12)
        rel_close({p[k], q[k]}, {R.ig_p[k], R.ig_q[k]}, 3e-9) -- torch's float32 pi
      else
        rel_close({p[k], q[k]}, {R.ig_p[k], R.ig_q[k]}, 1e-12)
      end
    end
  end)

  it("boundary values, float32 and broadcasting as torch", function()
    same(pt.igamma(D(R.ig_ba), D(R.ig_bx)), R.ig_bp)
    same(pt.igammac(D(R.ig_ba), D(R.ig_bx)), R.ig_bq)
    local fa, fx = F({0.5, 1, 2.5, 7, 30}), F({{0.2}, {1.5}, {9.0}})
    local p32 = fa:igamma(fx)
    assert.are.equal("float32", p32:dtype())
    assert.are.same({3, 5}, p32:size())
    -- computed in float64 then rounded: torch's float64 values rounded to float32 (torch's float32 kernel
    -- is less accurate: igamma(30, 0.2) underflows to 0 there, igamma(30, 1.5) is off by 4e-6)
    rel_close(p32, R.ig_f32_64, 1e-7)
    rel_close(pt.igammac(fa, fx), R.igc_f32_64, 1e-7)
    close(p32, R.ig_f32, 1e-6)
    close(pt.igammac(fa, fx), R.igc_f32, 1e-6)
    assert.are.equal("float32", pt.igamma(F({1, 2}), L({1, 2})):dtype())
    assert.are.equal("float64", pt.igamma(F({1, 2}), D({1, 2})):dtype())
    assert.are.equal(pt.special.gammainc(D({2}), D({3})):item(), pt.igamma(D({2}), D({3})):item())
    assert.are.equal(pt.special.gammaincc(D({2}), D({3})):item(), pt.igammac(D({2}), D({3})):item())
    local t = D({0.5, 3})
    assert.are.equal(t, t:igamma_(D({1, 1})))
    same(t, pt.igamma(D({0.5, 3}), D({1, 1})))
    local u = D({0.5, 3})
    u:igammac_(D({1}))
    same(u, pt.igammac(D({0.5, 3}), D({1})))
    local w = D({2, 3})
    w.requires_grad = true
    local g = w * 1
    g:igamma_(D({1.5, 2.5})) -- a keeps no gradient: fine while nothing needs it
    assert.is_true(g.requires_grad)
  end)

  it("have a gradient with respect to x (second derivatives too), none with respect to a", function()
    local a = D({0.5, 1.5, 3.0, 8.0})
    local x = D({0.7, 2.0, 1.5, 9.0})
    x.requires_grad = true
    local y = pt.igamma(a, x)
    assert.are.equal("IgammaBackward", y.grad_fn)
    y:sum():backward()
    close(x.grad, R.ig_gx)
    assert.is_true(gradcheck(function(t) return pt.igamma(a, t) end, {D({0.7, 2, 1.5, 9})}))
    assert.is_true(gradcheck(function(t) return pt.igammac(a, t) end, {D({0.7, 2, 1.5, 9})}))
    assert.is_true(gradcheck(function(t) return pt.igamma(D({{2}, {30}}), t) end, {D({1.5, 29})}))
    assert.is_true(gradgradcheck(function(t) return pt.igammac(a, t) end, {D({0.7, 2, 1.5, 9})}))
    local aa = D({1, 2})
    aa.requires_grad = true
    local r = pt.igamma(aa, D({1, 2}))
    assert_error("igamma: the derivative with respect to a (input) is not implemented (as torch)",
                 function() r:sum():backward() end)
  end)

  it("errors", function()
    assert_error("igamma: not implemented for int64 tensors (floating point only, as torch)", pt.igamma, L({1}), L({1}))
    assert_error("igammac: other must be a tensor, got number", pt.igammac, pt.ones(1), 2)
    assert_error("igamma: shapes {2} and {3} cannot be broadcast", pt.igamma, pt.ones(2), pt.ones(3))
    assert_error("igamma_: result type float32 can't be cast to the desired output type int64",
                 L({1}).igamma_, L({1}), F({1}))
    assert_error("special.gammainc: bad argument #1 (Tensor expected, got number)", pt.special.gammainc, 1, pt.ones(1))
  end)
end)

describe("in-place forms rsqrt_, reciprocal_, sgn_, deg2rad_, rad2deg_, logit_, heaviside_, float_power_", function()
  it("give torch 1.13's values in place and return t", function()
    local t = pt.tensor({1, 4, 0.25}, {dtype = "float64"})
    assert.are.equal(t, t:rsqrt_())
    close(t, {1, 0.5, 2})
    close(pt.tensor({2, 4}, {dtype = "float64"}):reciprocal_(), {0.5, 0.25})
    close(pt.tensor({-2, 0, 3}, {dtype = "float64"}):sgn_(), {-1, 0, 1})
    close(pt.tensor({180}, {dtype = "float64"}):deg2rad_(), {math.pi})
    close(pt.tensor({math.pi}, {dtype = "float64"}):rad2deg_(), {180})
    -- torch: tensor([0., 0.5, 1.]).logit_(0.1) = [-2.1972, 0, 2.1972]
    close(pt.tensor({0, 0.5, 1}, {dtype = "float64"}):logit_(0.1), {-2.1972245773362196, 0, 2.1972245773362196})
    close(pt.tensor({-1, 0, 2}, {dtype = "float64"}):heaviside_(pt.tensor({0.5}, {dtype = "float64"})), {0, 0.5, 1})
    close(pt.tensor({1, 2}, {dtype = "float64"}):float_power_(2), {1, 4})
  end)
  it("record their gradient through the write (torch: x*1 then logit_: 6.25, 4.7619)", function()
    local x = pt.tensor({0.2, 0.7}, {dtype = "float64", requires_grad = true})
    local y = x * 1
    y:logit_()
    y:sum():backward()
    close(x.grad, {6.25, 4.761904761904762}, 1e-12)
    local x2 = pt.tensor({1, 4}, {dtype = "float64", requires_grad = true})
    local y2 = x2 * 1
    y2:rsqrt_()
    y2:sum():backward()
    close(x2.grad, {-0.5, -0.0625})
  end)
  it("refuse what torch refuses, naming themselves", function()
    support.assert_error("rsqrt_: result type float32 can't be cast to the desired output type int64",
      function() pt.tensor({1, 4}, {dtype = "int64"}):rsqrt_() end)
    support.assert_error("float_power_: the base has dtype float32 but the result requires float64",
      function() pt.tensor({1, 2}):float_power_(2) end)
    local x = pt.tensor({1, 2}, {requires_grad = true})
    support.assert_error("reciprocal_: a leaf tensor that requires grad is used in an in-place operation",
      function() x:reciprocal_() end)
  end)
end)

describe("square of a bool tensor", function()
  it("is int64, as torch.square (torch: tensor([1, 0]))", function()
    local r = pt.tensor({true, false}):square()
    assert.are.equal("int64", r:dtype())
    assert.are.same({1, 0}, r:tolist())
    assert.are.equal("int32", pt.tensor({2, 3}, {dtype = "int32"}):square():dtype())
  end)
end)

describe("an extra tensor argument", function()
  it("is named a Tensor in the message, not userdata", function()
    support.assert_error("exp: unexpected argument #2 (Tensor)", function() return pt.ones(2):exp(pt.ones(1)) end)
    support.assert_error("view: unexpected argument #3 (Tensor) after the sizes",
      function() return pt.ones(2):view({2}, pt.ones(1)) end)
    support.assert_error("square: unexpected argument #2 (Tensor)", function() return pt.ones(2):square(pt.ones(1)) end)
  end)
end)

describe("amax / amin with torch's keywords", function()
  it("take {dim=, keepdim=} (torch: amax(dim=1) of [[1,5],[7,2]] is [5, 7])", function()
    local t = pt.tensor({{1, 5}, {7, 2}})
    assert.are.same({5, 7}, t:amax({dim = 2}):tolist())
    assert.are.same({{1, 2}}, t:amin({dim = 1, keepdim = true}):tolist())
    assert.are.equal(7, t:amax({dim = {1, 2}}):item())
    support.assert_error("amax: unknown option 'dims' (options: dim, keepdim)", function() return t:amax({dims = 1}) end)
  end)
end)
