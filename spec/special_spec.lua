-- Special functions: lgamma, digamma, polygamma, mvlgamma, i0, i0e, i1, i1e, ndtr, log_ndtr, ndtri,
-- entr, xlog1py (pt.* functions, methods, in-place forms) and the pt.special namespace.
-- Expected numbers were computed with PyTorch 1.13 (/usr/bin/python3) and are hard-coded here;
-- polygamma(1, x) comes from mpmath at 40 digits (marked "mpmath": torch 1.13's trigamma is off by
-- up to 5e-10). Where partrain deliberately differs from torch 1.13 (values that are artifacts of
-- torch's formulas: i0/i1 at +-inf, polygamma at +-inf and at negative integers) the spec says so.
local pt = require "partrain"
local support = require "spec.support"
local errmsg, assert_error = support.errmsg, support.assert_error
local gradcheck = require "spec.gradcheck"

local inf = math.huge
local nan = math.abs(0 / 0) -- a NaN with the sign bit clear, as Python's float('nan')

-- the message (after the "file:line: " position prefix) must be exactly msg

-- got equals want: NaN with NaN, infinities exactly, zeros exactly with their sign, other numbers
-- within a relative tolerance rel (0: exactly)
local function same(got, want, rel, what)
  what = what or "value"
  if want ~= want then
    assert(got ~= got, string.format("%s: expected nan, got %.17g", what, got))
  elseif want == 0 then
    assert(got == 0 and 1 / got == 1 / want, string.format("%s: expected %s, got %.17g", what,
      1 / want > 0 and "0" or "-0", got))
  elseif want == inf or want == -inf then
    assert(got == want, string.format("%s: expected %s, got %.17g", what, tostring(want), got))
  else
    assert(math.abs(got - want) <= (rel or 0) * math.abs(want),
      string.format("%s: expected %.17g, got %.17g", what, want, got))
  end
end
local function same_list(got, want, rel, what)
  assert.are.equal(#want, #got, (what or "list") .. ": length")
  for i = 1, #want do same(got[i], want[i], rel, string.format("%s[%d]", what or "list", i)) end
end
local function f64(t) return pt.tensor(t, {dtype = "float64"}) end
local function f32(t) return pt.tensor(t, {dtype = "float32"}) end
local function i64(t) return pt.tensor(t, {dtype = "int64"}) end

local UNARY = {"lgamma", "digamma", "i0", "i0e", "i1", "i1e", "ndtr", "log_ndtr", "ndtri", "entr"}

-- torch 1.13: {inputs, results} in float64 (values64) and float32 (values32, the inputs rounded
-- to float32 first)
local values64 = {
  lgamma = {{-2.5, -1.5, -0.5, -1e-10, 1e-300, 0.5, 1.0, 1.5, 2.0, 3.7, 10.2, 171.5, 10000000000.0, 1e+300}, {-0.05624371649767405, 0.860047015376481, 1.2655121234846454, 23.025850929998178, 690.7755278982137, 0.5723649429247001, 0.0, -0.12078223763524522, 0.0, 1.428072326665388, 13.25426674423555, 709.1431630309282, 220258509288.81058, 6.897755278982137e+302}},
  digamma = {{-2.5, -1.3, -0.5, -1e-08, 1e-300, 1e-05, 0.5, 1.0, 1.46, 2.0, 7.25, 100.5, 100000000.0, 1e+20}, {1.1031566406452433, 2.8825405488661673, 0.03648997397857639, 99999999.42278431, -9.999999999999999e+299, -100000.57719921567, -1.9635100260214229, -0.5772156649015328, -0.0015805619870834522, 0.422784335098467, 1.910453526883736, 4.605174352581845, 18.420680738952367, 46.051701859880914}}, -- at 1.46 mpmath: torch 1.13's -0.001580561987083185 is 1.7e-13 off (its recurrence's sum cancels near the zero 1.4616)
  i0 = {{-40.0, -3.5, -1.0, -1e-05, 0.0, 1e-05, 0.5, 1.0, 2.5, 8.0, 29.9, 30.1, 100.0, 700.0}, {1.48947747934199e+16, 7.3782034322254795, 1.2660658777520082, 1.0000000000249998, 1.0, 1.0000000000249998, 1.0634833707413236, 1.2660658777520082, 3.289839144050123, 427.56411572180474, 708478330489.0146, 862432920031.7792, 1.0737517071310738e+42, 1.5295933476718735e+302}},
  i0e = {{-40.0, -3.5, -1.0, -1e-05, 0.0, 1e-05, 0.5, 1.0, 2.5, 8.0, 29.9, 30.1, 100.0, 700.0, 100000.0, 10000000000.0}, {0.06327827987523532, 0.22280243801077917, 0.46575960759364043, 0.9999900000749995, 1.0, 0.9999900000749995, 0.6450352704491501, 0.46575960759364043, 0.27004644161220276, 0.1434317818568503, 0.07326921904600191, 0.07302329413106094, 0.03994437929909668, 0.015081295651531355, 0.0012615678379767766, 3.9894228040641945e-06}},
  i1 = {{-40.0, -3.5, -1.0, -1e-05, 0.0, 1e-05, 0.5, 1.0, 2.5, 8.0, 29.9, 30.1, 100.0, 700.0}, {-1.4707396163259354e+16, -6.205834922258364, -0.5651591039924851, -5.000000000062501e-06, 0.0, 5.000000000062501e-06, 0.25789430539089636, 0.5651591039924851, 2.5167162452886984, 399.8731367825599, 696528308361.0928, 847983630191.5414, 1.0683693903381625e+42, 1.5285003902339006e+302}},
  i1e = {{-40.0, -3.5, -1.0, -1e-05, 0.0, 1e-05, 0.5, 1.0, 2.5, 8.0, 29.9, 30.1, 100.0, 700.0, 100000.0, 10000000000.0}, {-0.06248222907444206, -0.18739997660304997, -0.2079104153497085, -4.9999500003125e-06, 0.0, 4.9999500003125e-06, 0.15642080318487173, 0.2079104153497085, 0.20658464953126654, 0.13414249329269812, 0.0720333749118688, 0.07179985435101434, 0.03974415302513025, 0.015070519444716846, 0.001261561530121817, 3.989422803864723e-06}},
  ndtr = {{-30.0, -20.0, -5.0, -1.0, -1e-05, 0.0, 0.3, 1.0, 5.0, 9.0}, {4.906713927148187e-198, 2.7536241186062337e-89, 2.866515718791939e-07, 0.15865525393145705, 0.49999601057719606, 0.5, 0.6179114221889527, 0.8413447460685429, 0.9999997133484281, 1.0}}, -- mpmath
  log_ndtr = {{-10000000000.0, -100.0, -38.0, -20.5, -19.5, -5.0, -1.0, 0.0, 0.5, 3.0, 10.0, 30.0}, {-5.000000000000001e+19, -5005.524208694205, -726.5572160188201, -214.06672896326387, -194.01696577749752, -15.064998393988727, -1.841021645009264, -0.6931471805599453, -0.36894641528865635, -0.0013508099647481923, -7.619853024160498e-24, -4.906713927148024e-198}},
  ndtri = {{1e-300, 1e-20, 1e-05, 0.01, 0.25, 0.4999999, 0.5, 0.5000001, 0.75, 0.975, 0.999999}, {-37.0470962993612, -9.262340089798409, -4.264890793922825, -2.3263478740408408, -0.6744897501960817, -2.506628274703107e-07, 0.0, 2.506628273311648e-07, 0.6744897501960817, 1.959963984540054, 4.753424308817087}},
  entr = {{1e-300, 1e-05, 0.3, 1.0, 2.5, 10000000000.0}, {6.907755278982137e-298, 0.0001151292546497023, 0.3611918412977808, -0.0, -2.2907268296853878, -230258509299.40457}},
}
local values32 = {
  lgamma = {{-2.5, -1.5, -0.5, -1.000000013351432e-10, 0.0, 0.5, 1.0, 1.5, 2.0, 3.700000047683716, 10.199999809265137, 171.5, 10000000000.0, inf}, {-0.056243717670440674, 0.8600470423698425, 1.2655121088027954, 23.025850296020508, inf, 0.5723649263381958, 0.0, -0.12078224122524261, 0.0, 1.4280723333358765, 13.254266738891602, 709.1431884765625, 220258516992.0, inf}},
  digamma = {{-2.5, -1.2999999523162842, -0.5, -9.99999993922529e-09, 0.0, 9.999999747378752e-06, 0.5, 1.0, 1.4600000381469727, 2.0, 7.25, 100.5, 100000000.0, 1.0000000200408773e+20}, {1.1031566858291626, 2.8825411796569824, 0.036489974707365036, 100000000.0, -inf, -100000.578125, -1.9635100364685059, -0.5772156715393066, -0.001580525073222816, 0.42278432846069336, 1.9104535579681396, 4.605174541473389, 18.42068099975586, 46.051700592041016}},
  i0 = {{-40.0, -3.5, -1.0, -9.999999747378752e-06, 0.0, 9.999999747378752e-06, 0.5, 1.0, 2.5, 8.0, 29.899999618530273, 30.100000381469727, 100.0, 700.0}, {1.489477478383616e+16, 7.378203392028809, 1.2660658359527588, 1.0, 1.0, 1.0, 1.0634833574295044, 1.2660658359527588, 3.289839029312134, 427.5641174316406, 708478042112.0, 862433247232.0, inf, inf}},
  i0e = {{-40.0, -3.5, -1.0, -9.999999747378752e-06, 0.0, 9.999999747378752e-06, 0.5, 1.0, 2.5, 8.0, 29.899999618530273, 30.100000381469727, 100.0, 700.0, 100000.0, 10000000000.0}, {0.06327828019857407, 0.22280244529247284, 0.46575960516929626, 0.9999899864196777, 1.0, 0.9999899864196777, 0.6450352668762207, 0.46575960516929626, 0.2700464427471161, 0.14343178272247314, 0.07326921820640564, 0.07302329689264297, 0.03994438052177429, 0.015081295743584633, 0.0012615678133442998, 3.9894230212667026e-06}},
  i1 = {{-40.0, -3.5, -1.0, -9.999999747378752e-06, 0.0, 9.999999747378752e-06, 0.5, 1.0, 2.5, 8.0, 29.899999618530273, 30.100000381469727, 100.0, 700.0}, {-1.470739609812992e+16, -6.205834865570068, -0.5651590824127197, -4.999999873689376e-06, 0.0, 4.999999873689376e-06, 0.2578943073749542, 0.5651590824127197, 2.516716241836548, 399.8731384277344, 696528076800.0, 847983935488.0, inf, inf}},
  i1e = {{-40.0, -3.5, -1.0, -9.999999747378752e-06, 0.0, 9.999999747378752e-06, 0.5, 1.0, 2.5, 8.0, 29.899999618530273, 30.100000381469727, 100.0, 700.0, 100000.0, 10000000000.0}, {-0.06248223036527634, -0.1873999834060669, -0.207910418510437, -4.999949851480778e-06, 0.0, 4.999949851480778e-06, 0.15642079710960388, 0.207910418510437, 0.2065846472978592, 0.13414248824119568, 0.07203337550163269, 0.0717998519539833, 0.03974415361881256, 0.015070519410073757, 0.0012615615269169211, 3.9894230212667026e-06}},
  ndtr = {{-30.0, -20.0, -5.0, -1.0, -9.999999747378752e-06, 0.0, 0.30000001192092896, 1.0, 5.0, 9.0}, {0.0, 0.0, 2.8665158424701076e-07, 0.15865525603294373, 0.49999600648880005, 0.5, 0.6179113984107971, 0.8413447737693787, 0.9999997019767761, 1.0}}, -- mpmath
  log_ndtr = {{-10000000000.0, -100.0, -38.0, -20.5, -19.5, -5.0, -1.0, 0.0, 0.5, 3.0, 10.0, 30.0}, {-5.000000100204387e+19, -5005.5244140625, -726.5571899414062, -214.0667266845703, -194.0169677734375, -15.064998626708984, -1.8410216569900513, -0.6931471824645996, -0.3689464032649994, -0.0013508099364116788, -7.619852819271277e-24, -0.0}},
  ndtri = {{0.0, 9.999999682655225e-21, 9.999999747378752e-06, 0.009999999776482582, 0.25, 0.49999991059303284, 0.5, 0.5000001192092896, 0.75, 0.9750000238418579, 0.9999989867210388}, {-inf, -9.262340545654297, -4.264890670776367, -2.326347827911377, -0.6744897365570068, -2.2411002476019348e-07, 0.0, 2.988133758208278e-07, 0.6744897365570068, 1.959964394569397, 4.750757694244385}},
  entr = {{0.0, 9.999999747378752e-06, 0.30000001192092896, 1.0, 2.5, 10000000000.0}, {0.0, 0.00011512925266288221, 0.36119183897972107, -0.0, -2.290726900100708, -230258507776.0}},
}
local polygamma64 = {x = {-2.5, -1.3, -0.5, 1e-05, 0.5, 1.0, 2.0, 7.25, 100.5, 100000000.0},
  [2] = {-0.1082040516417282, 68.54941347116213, -0.82879664423432, -2000000000000001.8, -16.828796644234316, -2.404113806319188, -0.4041138063191886, -0.021828952295197733, -9.999750014581719e-05, -1.0000000099999999e-16},
  [3] = {194.74787621918756, 768.7206571990428, 193.40909103400242, 5.999999999999997e+20, 97.40909103400242, 6.493939402266829, 0.4939394022668293, 0.006433037597940158, 1.9999000087487087e-06, 2.0000000300000002e-24},
  [1] = {9.539246644989124, 14.53687624413708, 8.934802200544679, 10000000001.644909, 4.934802200544679, 1.6449340668482264, 0.6449340668482264, 0.14787923315893217, 0.009999916669583104, 1.000000005e-08}, -- mpmath (torch 1.13's trigamma is off by up to 5e-10)
  [6] = {-0.1383581075500352, 3283534.770263415, -43.457923803023284, -7.199999999999996e+37, -92203.45792380303, -726.0114797149845, -6.011479714984436, -0.0012220841223540666, -1.1997900440872176e-10, -1.2000000360000005e-46}, -- mpmath (torch 1.13: 4e-11 off at -2.5)
}
local polygamma32 = {x = {-2.5, -1.2999999523162842, -0.5, 9.999999747378752e-06, 0.5, 1.0, 2.0, 7.25, 100.5, 100000000.0},
  [2] = {-0.10820405185222626, 68.54945373535156, -0.8287966251373291, -2000000108199936.0, -16.82879638671875, -2.40411376953125, -0.4041137993335724, -0.02182895317673683, -9.999750182032585e-05, -1.0000000168623835e-16},
  [3] = {194.7478790283203, 768.7211303710938, 193.40908813476562, 6.000000823932706e+20, 97.40908813476562, 6.493939399719238, 0.4939393997192383, 0.0064330375753343105, 1.9998999505332904e-06, 2.0000000390829628e-24},
}
local mvlgamma64 = {x = {2.5, 3.0, 10.25, 100.0},
  [1] = {0.2846828704729192, 0.6931471805599453, 13.368023671476045, 359.1342053695754},
  [3] = {1.8809954616117743, 2.694924879806965, 38.47072356025262, 1072.2257685414036},
  [5] = {6.459915005009375, 6.58069724264462, 61.583616320011885, 1778.4317674580816},
}
-- at {inf, -inf, nan, 0, -0}
local specials = {
  lgamma = {inf, inf, nan, inf, inf},
  digamma = {inf, nan, nan, -inf, inf},
  i0 = {nan, nan, nan, 1.0, 1.0},
  i0e = {0.0, 0.0, nan, 1.0, 1.0},
  i1 = {nan, nan, nan, 0.0, 0.0},
  i1e = {0.0, -0.0, nan, 0.0, 0.0},
  ndtr = {1.0, 0.0, nan, 0.5, 0.5},
  log_ndtr = {-0.0, -inf, nan, -0.6931471805599453, -0.6931471805599453},
  ndtri = {nan, nan, nan, -inf, -inf},
  entr = {-inf, -inf, nan, 0.0, 0.0},
  polygamma1 = {0.0, nan, nan, inf, inf},
  polygamma2 = {nan, -inf, nan, -inf, -inf},
  polygamma3 = {nan, inf, nan, inf, inf},
}
-- at {0, -1, -2, -3, -1e20}
local poles = {
  lgamma = {inf, inf, inf, inf, inf},
  digamma = {-inf, nan, nan, nan, nan},
  polygamma1 = {inf, 6.580790147320947e+32, 1.6451975368302367e+32, 7.311989052578831e+31, 63.55516940936887},
  polygamma2 = {-inf, -inf, -inf, -inf, -inf},
  polygamma3 = {inf, inf, inf, inf, inf},
}
-- integer inputs {-3.0, 0.0, 1.0, 2.0, 5.0} (float32 results: torch's float64 values rounded; ndtr: mpmath)
local ints = {
  lgamma = {inf, inf, 0.0, 0.0, 3.178053855895996},
  digamma = {nan, -inf, -0.5772156715393066, 0.42278432846069336, 1.5061177015304565},
  i0 = {4.880792617797852, 1.0, 1.2660658359527588, 2.279585361480713, 27.239871978759766},
  i0e = {0.2430003583431244, 1.0, 0.46575960516929626, 0.30850833654403687, 0.18354080617427826},
  i1 = {-3.9533703327178955, 0.0, 0.5651590824127197, 1.5906368494033813, 24.335641860961914},
  i1e = {-0.19682671129703522, 0.0, 0.207910418510437, 0.2152692824602127, 0.16397227346897125},
  ndtr = {0.0013498980551958084, 0.5, 0.8413447737693787, 0.9772498607635498, 0.9999997019767761},
  log_ndtr = {-6.607726097106934, -0.6931471824645996, -0.17275378108024597, -0.023012910038232803, -2.866516126687202e-07},
  ndtri = {nan, -inf, inf, nan, nan},
  entr = {-inf, 0.0, -0.0, -1.3862943649291992, -8.047189712524414},
}
local xlog1py64 = {1.3862943611198906, -1.9999999999000001e-10, -2.197224577336219, 0.0, 0.0, 0.0, -0.34657359027997264, 4.9999999997500004e-11, 0.5493061443340548, -2.0794415416798357, 2.99999999985e-10, 3.2958368660043287} -- x {4,1} with y {3}
local xlog1py_special = {nan, 0.0, 0.0, -inf, nan, nan, inf} -- x {0, 0, 0, 1, 1, nan, 2} y {nan, -1, -2, -1, -2, 1, inf}
local xlog1py_num = {{-0.626381484247684, 0.0, 1.879144452743052}, {-1.7328679513998633, 0.0, 2.2907268296853878}} -- xlog1py(x, 2.5), xlog1py(2.5, y) with x = y = {-0.5, 0, 1.5}
local xlog1py_int = {0.0, 0.0, 4.828313827514648} -- xlog1py(int64 {0, 1, 3}, int64 {2, 0, 4}), float32

describe("special functions", function()
  it("match torch 1.13 in float64, as pt.* functions and as methods", function()
    for _, name in ipairs(UNARY) do
      local xs, want = values64[name][1], values64[name][2]
      local got = pt[name](f64(xs))
      assert.are.equal("float64", got:dtype())
      same_list(got:tolist(), want, 1e-13, name)
      local x = f64(xs)
      same_list(x[name](x):tolist(), want, 1e-13, name .. " (method)")
    end
  end)

  it("round the double result once in float32", function()
    for _, name in ipairs(UNARY) do
      local xs, want = values32[name][1], values32[name][2]
      local got = pt[name](f32(xs))
      assert.are.equal("float32", got:dtype())
      same_list(got:tolist(), want, 2.5e-7, name .. " float32")
    end
  end)

  it("polygamma(n, x) and x:polygamma(n) for several orders; polygamma(0, x) is digamma", function()
    local x = f64(polygamma64.x)
    for _, n in ipairs {1, 2, 3, 6} do
      same_list(pt.polygamma(n, x):tolist(), polygamma64[n], 1e-13, "polygamma " .. n)
      same_list(x:polygamma(n):tolist(), polygamma64[n], 1e-13, "x:polygamma " .. n)
    end
    for _, n in ipairs {2, 3} do
      local got = pt.polygamma(n, f32(polygamma32.x))
      assert.are.equal("float32", got:dtype())
      same_list(got:tolist(), polygamma32[n], 2.5e-7, "polygamma32 " .. n)
    end
    local d = f64(values64.digamma[1])
    same_list(pt.polygamma(0, d):tolist(), pt.digamma(d):tolist(), 0, "polygamma(0)")
    -- large orders through the scaled Hurwitz zeta (n! alone overflows): mpmath
    same(pt.polygamma(200, f64 {300.5}):item(), -1.4573267844436623e-123, 1e-12, "polygamma(200, 300.5)")
    same(pt.polygamma(25, f64 {0.75}):item(), 2.748228447449136e+28, 1e-13, "polygamma(25, 0.75)")
  end)

  it("mvlgamma(x, p) and x:mvlgamma(p) for p = 1, 3, 5; p = 1 is lgamma", function()
    local x = f64(mvlgamma64.x)
    for _, p in ipairs {1, 3, 5} do
      same_list(pt.mvlgamma(x, p):tolist(), mvlgamma64[p], 1e-13, "mvlgamma " .. p)
      same_list(x:mvlgamma(p):tolist(), mvlgamma64[p], 1e-13, "x:mvlgamma " .. p)
    end
    same_list(pt.mvlgamma(x, 1):tolist(), pt.lgamma(x):tolist(), 0, "mvlgamma p=1")
    -- torch 1.13 has no domain check: (p-1)/2 >= x reaches a pole of lgamma
    same(pt.mvlgamma(f64 {1}, 3):item(), inf, 0, "mvlgamma(1, 3)")
    local i = pt.mvlgamma(i64 {3, 4}, 3)
    assert.are.equal("float32", i:dtype())
    same_list(i:tolist(), {2.694924831390381, 5.402975082397461}, 2.5e-7, "int mvlgamma") -- torch 1.13
  end)

  it("give torch's values at +-inf, nan and +-0, except where torch's are artifacts", function()
    local sv = f64 {inf, -inf, nan, 0.0, -0.0}
    -- partrain differs from torch 1.13: i0(+-inf) = inf and i1(+-inf) = +-inf (torch: nan from
    -- exp(x) * poly / sqrt(x) = inf / inf); polygamma(n >= 1, +inf) = (-1)^(n+1) 0, the limit
    -- (torch: nan for n >= 2, from 0 * inf); polygamma(1, -inf) = inf as at the other poles
    -- (torch: nan from sin(-inf))
    local differs = {
      i0 = {inf, inf, nan, 1.0, 1.0},
      i1 = {inf, -inf, nan, 0.0, 0.0},
      polygamma1 = {0.0, inf, nan, inf, inf},
      polygamma2 = {-0.0, -inf, nan, -inf, -inf},
      polygamma3 = {0.0, inf, nan, inf, inf},
    }
    for name, want in pairs(specials) do
      local n = tonumber(name:match("^polygamma(%d)$") or "")
      local got = n and pt.polygamma(n, sv) or pt[name](sv)
      same_list(got:tolist(), differs[name] or want, 0, name .. " at special values")
    end
    -- torch's own values there, for the record
    assert.is_true(specials.i0[1] ~= specials.i0[1] and specials.polygamma2[1] ~= specials.polygamma2[1])
  end)

  it("have torch's poles: lgamma inf, digamma -inf at 0 and nan at the negative integers", function()
    local p = f64 {0.0, -1.0, -2.0, -3.0, -1e20}
    same_list(pt.lgamma(p):tolist(), poles.lgamma, 0, "lgamma poles")
    same_list(pt.digamma(p):tolist(), poles.digamma, 0, "digamma poles")
    same_list(pt.polygamma(2, p):tolist(), poles.polygamma2, 0, "polygamma2 poles")
    same_list(pt.polygamma(3, p):tolist(), poles.polygamma3, 0, "polygamma3 poles")
    -- torch 1.13's trigamma gives 6.6e32 at -1 (sin(pi x) is not 0 in floating point) and 63.6
    -- at -1e20; partrain gives the pole's +inf there as at 0
    assert.are.equal(6.580790147320947e+32, poles.polygamma1[2])
    same_list(pt.polygamma(1, p):tolist(), {inf, inf, inf, inf, inf}, 0, "polygamma1 poles")
    -- near a pole the reflection keeps its digits (mpmath)
    same(pt.polygamma(1, f64 {-3 + 1e-9}):item(), 999999834519278542.73, 1e-13, "trigamma near -3") -- mpmath
    same(pt.digamma(f64 {-2.5}):item(), 1.1031566406452432, 1e-15, "digamma(-2.5)")
  end)

  it("keep ndtr's lower tail (torch 1.13's (1 + erf) / 2 is 0 from -8.4 on)", function()
    same(pt.ndtr(f64 {-20}):item(), 2.7536241186062337e-89, 1e-12, "ndtr(-20)") -- mpmath
    same(pt.ndtr(f64 {-37}):item(), 5.7255712225245768e-300, 1e-11, "ndtr(-37)") -- mpmath
    -- where torch's formula has its digits, the same numbers (torch 1.13)
    same_list(pt.ndtr(f64 {-1, 0.3, 2}):tolist(), {0.15865525393145705, 0.6179114221889527, 0.9772498680518208},
              1e-15, "ndtr")
  end)

  it("give float32 for integer and bool inputs", function()
    local ii = i64 {-3, 0, 1, 2, 5}
    for _, name in ipairs(UNARY) do
      local got = pt[name](ii)
      assert.are.equal("float32", got:dtype(), name)
      same_list(got:tolist(), ints[name], 2.5e-7, name .. " on int64")
      assert.are.equal("float32", pt[name](pt.tensor({1, 0}, {dtype = "int32"})):dtype())
      assert.are.equal("float32", pt[name](pt.tensor({1, 0}, {dtype = "uint8"})):dtype())
      assert.are.equal("float32", pt[name](pt.tensor {true, false}):dtype())
    end
    same_list(pt.i1(pt.tensor {true, false}):tolist(), {0.5651590824127197, 0.0}, 2.5e-7, "i1(bool)") -- torch 1.13
    assert.are.equal("float32", pt.polygamma(1, ii):dtype())
  end)

  it("take non-contiguous, 0-d and empty tensors", function()
    local a = f64 {{0.5, 1.5, 2.5}, {-0.5, 3.5, 4.5}}
    local t = a:t()
    for _, name in ipairs(UNARY) do
      same_list(pt[name](t):tolist()[2], pt[name](f64 {1.5, 3.5}):tolist(), 0, name .. " transposed")
      local s = pt[name](pt.tensor(0.75, {dtype = "float64"}))
      assert.are.equal(0, s:dim())
      same(s:item(), pt[name](f64 {0.75}):item(), 0, name .. " 0-d")
      assert.are.same({0, 3}, pt[name](pt.zeros(0, 3)):size())
    end
  end)

  it("give the same numbers when a large tensor is split over threads", function()
    local before = pt.get_num_threads()
    local x = pt.linspace(-30, 30, 100003, {dtype = "float64"})
    local results = {}
    for _, threads in ipairs {1, 2} do
      pt.set_num_threads(threads)
      results[threads] = {pt.lgamma(x), pt.digamma(x), pt.polygamma(2, x), pt.i1e(x), pt.log_ndtr(x),
                          pt.xlog1py(x, x:abs())}
    end
    pt.set_num_threads(before)
    for k = 1, #results[1] do
      assert.is_true(pt.equal(results[1][k], results[2][k]) or
                     pt.eq(results[1][k], results[2][k]):logical_or(results[1][k]:isnan()):all():item())
    end
    -- and the values of the pieces are those of a small tensor
    local piece = x:narrow(1, 77000, 5)
    same_list(results[2][3]:narrow(1, 77000, 5):tolist(), pt.polygamma(2, piece:clone()):tolist(), 0, "piece")
  end)

  it("give xlog1py torch's values, broadcasting, with numbers on either side", function()
    local x, y = f64({-2, 0, 0.5, 3}):view(4, 1), f64 {-0.5, 1e-10, 2}
    local r = pt.xlog1py(x, y)
    assert.are.same({4, 3}, r:size())
    same_list(r:view(-1):tolist(), xlog1py64, 1e-15, "xlog1py")
    same_list(x:xlog1py(y):view(-1):tolist(), xlog1py64, 1e-15, "x:xlog1py")
    same_list(pt.xlog1py(f64 {0, 0, 0, 1, 1, nan, 2}, f64 {nan, -1, -2, -1, -2, 1, inf}):tolist(),
              xlog1py_special, 0, "xlog1py special")
    local v = f64 {-0.5, 0, 1.5}
    same_list(pt.xlog1py(v, 2.5):tolist(), xlog1py_num[1], 1e-15, "xlog1py(t, 2.5)")
    same_list(pt.xlog1py(2.5, v):tolist(), xlog1py_num[2], 1e-15, "xlog1py(2.5, t)")
    local i = pt.xlog1py(i64 {0, 1, 3}, i64 {2, 0, 4})
    assert.are.equal("float32", i:dtype())
    same_list(i:tolist(), xlog1py_int, 2.5e-7, "xlog1py ints")
    assert.are.equal("float32", pt.xlog1py(i64 {1}, 2):dtype())
    assert.are.equal("float64", pt.xlog1py(2, f64 {1}):dtype())
    assert.are.equal("float32", pt.xlog1py(f32 {1}, f64(2):view()):dtype()) -- a 0-d float64 does not promote
  end)
end)

describe("special function errors", function()
  it("name the function and the problem", function()
    local x = f64 {1.5}
    assert_error("polygamma: n must be a non-negative integer, got -1", pt.polygamma, -1, x)
    assert_error("polygamma: n must be a non-negative integer, got -2", function() return x:polygamma(-2) end)
    assert.matches("number has no integer representation", errmsg(pt.polygamma, 1.5, x))
    assert_error("mvlgamma: p has to be greater than or equal to 1, got 0", pt.mvlgamma, x, 0)
    assert_error("mvlgamma: the input tensor may not be a bool tensor", pt.mvlgamma, pt.tensor {true}, 2)
    assert_error("lgamma: unexpected argument #2 (number)", pt.lgamma, x, 2)
    assert_error("polygamma: unexpected argument #3 (number)", pt.polygamma, 1, x, 2)
    assert.matches("bad argument #1 to '[%w.]*digamma' %(Tensor expected, got number%)", errmsg(pt.digamma, 3))
    assert_error("xlog1py: shapes {3} and {2} cannot be broadcast", pt.xlog1py, f64 {1, 2, 3}, f64 {1, 2})
    assert.matches("bad argument #1 to '[%w.]*xlog1py' %(Tensor expected, got number%)", errmsg(pt.xlog1py, 1, 2))
    assert.matches("bad argument #2 to '[%w.]*xlog1py' %(Tensor or number expected, got string%)",
                   errmsg(pt.xlog1py, x, "a"))
  end)

  it("refuse in-place results that the tensor cannot hold, and leaves that require grad", function()
    assert_error("lgamma_: result type float32 can't be cast to the desired output type int64",
                 function() return i64({1, 2}):lgamma_() end)
    assert_error("polygamma_: result type float32 can't be cast to the desired output type bool",
                 function() return pt.tensor({true}):polygamma_(1) end)
    local w = f64({1.5}):requires_grad_()
    assert_error("digamma_: a leaf tensor that requires grad is used in an in-place operation",
                 function() return w:digamma_() end)
    assert_error("mvlgamma_: p has to be greater than or equal to 1, got 0", function() return f64({3}):mvlgamma_(0) end)
  end)
end)

describe("special functions in place", function()
  it("write the result into the tensor and return it", function()
    for _, case in ipairs {
      {"lgamma_", pt.lgamma}, {"digamma_", pt.digamma}, {"i0_", pt.i0},
      {"polygamma_", function(t) return pt.polygamma(2, t) end, 2},
      {"mvlgamma_", function(t) return pt.mvlgamma(t, 3) end, 3},
    } do
      local x = f64 {1.25, 2.5, 7}
      local want = case[2](x)
      local r = x[case[1]](x, case[3])
      assert.are.equal(x, r)
      same_list(x:tolist(), want:tolist(), 0, case[1])
    end
    local f = f32 {0.5, 3}
    f:lgamma_()
    assert.are.equal("float32", f:dtype())
    same_list(f:tolist(), pt.lgamma(f32 {0.5, 3}):tolist(), 0, "float32 lgamma_")
  end)

  it("change the base through a view", function()
    local base = f64 {1, 2, 3, 4}
    base:narrow(1, 2, 2):digamma_()
    same_list(base:tolist(), {1, 0.422784335098467, 0.922784335098467, 4}, 1e-14, "view") -- torch 1.13
  end)

  it("carry gradients as the out-of-place ops do", function()
    local x = f64({0.7, 1.9, 3.3}):requires_grad_()
    local y = x * 2
    y:lgamma_()
    y:sum():backward()
    local want = pt.digamma(x:detach() * 2) * 2
    same_list(x.grad:tolist(), want:tolist(), 1e-15, "grad through lgamma_")
    local z = f64({0.7, 1.9}):requires_grad_()
    local v = z * 1
    v:polygamma_(1)
    v:sum():backward()
    same_list(z.grad:tolist(), pt.polygamma(2, z:detach()):tolist(), 1e-15, "grad through polygamma_")
  end)
end)

describe("special function gradients", function()
  it("pass finite-difference checks in float64", function()
    local function check(name, f, xs, opts)
      local ok, err = pcall(gradcheck, f, {f64(xs)}, opts)
      assert(ok, name .. ": " .. tostring(err))
    end
    check("lgamma", pt.lgamma, {-2.5, -0.3, 0.7, 3.2, 40})
    check("digamma", pt.digamma, {-2.5, -0.3, 0.7, 3.2, 40})
    for n = 0, 3 do check("polygamma " .. n, function(t) return pt.polygamma(n, t) end, {-1.7, 0.6, 2.5, 12}) end
    check("mvlgamma", function(t) return pt.mvlgamma(t, 3) end, {1.2, 2.5, 7})
    check("i0", pt.i0, {-3, -0.5, 0.25, 2, 9}) -- (a large i0 would drown the others in the weighted sum)
    check("i0e", pt.i0e, {-3, -0.5, 0.25, 2, 35})
    check("i1", pt.i1, {-3, -0.5, 0.25, 2, 9})
    check("i1e", pt.i1e, {-3, -0.5, 0.25, 2, 35})
    check("ndtr", pt.ndtr, {-6, -1, 0.2, 3})
    check("log_ndtr", pt.log_ndtr, {-25, -19, -3, 0.2, 4})
    check("ndtri", pt.ndtri, {0.01, 0.3, 0.5, 0.8, 0.999})
    check("entr", pt.entr, {0.2, 1, 1.5})
    local a, b = f64({{0.5}, {-1.5}, {2}}), f64 {0.25, 3}
    assert(pcall(gradcheck, pt.xlog1py, {a, b}))
    assert(pcall(gradcheck, function(t) return pt.xlog1py(t, 2.5) end, {f64 {-1, 0.5}}))
    assert(pcall(gradcheck, function(t) return pt.xlog1py(2.5, t) end, {f64 {-0.5, 0.5}}))
  end)

  it("give torch's gradients where they are special", function()
    local function grad(f, xs)
      local x = f64(xs):requires_grad_()
      f(x):sum():backward()
      return x.grad:tolist()
    end
    -- torch 1.13
    same_list(grad(pt.i1, {0}), {0.5}, 0, "i1' at 0")
    same_list(grad(pt.i1e, {0}), {0.5}, 0, "i1e' at 0")
    same_list(grad(pt.i0e, {0}), {0.0}, 0, "i0e' at 0")
    same_list(grad(pt.entr, {0, 2}), {inf, -1.6931471805599454}, 1e-15, "entr'")
    same_list(grad(pt.ndtri, {0, 1}), {inf, inf}, 0, "ndtri' at 0 and 1")
    -- mpmath (torch 1.13 gives 40.02498439450079 at -40: exp(-x^2/2 - log_ndtr(x)) loses digits)
    same_list(grad(pt.log_ndtr, {-40, -1e5, -19.9}), {40.024968847207264, 100000.00001, 19.950000614302018}, 1e-14,
              "log_ndtr' in the tail")
    -- xlog1py: the first operand's gradient is 0 where it is 0 and y <= -1; the second's x / (1 + y)
    local a, b = f64({0, 0, 1.5}):requires_grad_(), f64({-1, 0.5, -1}):requires_grad_()
    pt.xlog1py(a, b):sum():backward()
    same_list(a.grad:tolist(), {0.0, 0.4054651081081644, -inf}, 1e-15, "xlog1py da")
    same_list(b.grad:tolist(), {nan, 0.0, inf}, 0, "xlog1py db")
  end)

  it("name their nodes as torch does", function()
    local x = f64({1.5}):requires_grad_()
    for name, node in pairs {lgamma = "LgammaBackward", digamma = "DigammaBackward", i0 = "I0Backward",
                             i0e = "SpecialI0EBackward", i1 = "SpecialI1Backward", i1e = "SpecialI1EBackward",
                             ndtr = "SpecialNdtrBackward", log_ndtr = "SpecialLogNdtrBackward",
                             entr = "SpecialEntrBackward"} do
      assert.are.equal(node, pt[name](x).grad_fn)
    end
    assert.are.equal("PolygammaBackward", pt.polygamma(2, x).grad_fn)
    assert.are.equal("MvlgammaBackward", pt.mvlgamma(x, 2).grad_fn)
    assert.are.equal("SpecialNdtriBackward", pt.ndtri(x / 2).grad_fn)
    assert.are.equal("SpecialXlog1PyBackward", pt.xlog1py(x, 2).grad_fn)
    assert.is_nil(pt.lgamma(f64 {1.5}).grad_fn)
  end)

  it("have second derivatives (create_graph; spec/create_graph_more_spec.lua checks them all)", function()
    local x = f64({1.5}):requires_grad_()
    local g = pt.autograd.grad({pt.lgamma(x):sum()}, {x}, {create_graph = true})[1]
    local h = pt.autograd.grad({g:sum()}, {x})[1]
    assert.is_true(math.abs(h[1] - pt.polygamma(1, f64({1.5}))[1]) < 1e-15) -- lgamma'' = trigamma
  end)
end)

describe("pt.special", function()
  it("maps torch.special's names to partrain's functions", function()
    local S = pt.special
    for alias, name in pairs {expit = "sigmoid", erf = "erf", erfc = "erfc", erfinv = "erfinv",
                              gammaln = "lgamma", digamma = "digamma", psi = "digamma",
                              polygamma = "polygamma", multigammaln = "mvlgamma", i0 = "i0",
                              i0e = "i0e", i1 = "i1", i1e = "i1e", ndtr = "ndtr", ndtri = "ndtri",
                              log_ndtr = "log_ndtr", xlogy = "xlogy", xlog1py = "xlog1py",
                              entr = "entr", sinc = "sinc", log1p = "log1p", expm1 = "expm1",
                              exp2 = "exp2", logsumexp = "logsumexp", softmax = "softmax",
                              log_softmax = "log_softmax", round = "round", logit = "logit"} do
      assert.is_function(S[alias], alias)
      assert.are.equal(pt[name], S[alias], alias)
    end
    assert.is_nil(S.no_such_function)
  end)

  it("computes through those names", function()
    local x = f64 {0.25, 0.5, 0.9}
    same_list(pt.special.gammaln(x):tolist(), pt.lgamma(x):tolist(), 0, "gammaln")
    -- torch 1.13: torch.special.logit, expit, multigammaln, psi
    same_list(pt.special.logit(x):tolist(), {-1.0986122886681098, 0.0, 2.1972245773362196}, 1e-15, "logit")
    same_list(pt.special.expit(x):tolist(), {0.5621765008857981, 0.6224593312018546, 0.7109495026250039}, 1e-15, "expit")
    same_list(pt.special.multigammaln(x + 2, 2):tolist(), {0.6128355367966112, 0.8570478133976193, 1.392093875622853}, 1e-14, "multigammaln")
    same_list(pt.special.psi(x):tolist(), {-4.2274535333762655, -1.9635100260214229, -0.7549269499470513}, 1e-14, "psi")
  end)

  it("is documented", function()
    local help = require "partrain.help"
    assert.matches("^pt%.special: torch%.special's names", help.text(pt.special))
    for _, name in ipairs {"lgamma", "digamma", "polygamma", "mvlgamma", "i0", "i0e", "i1", "i1e", "ndtr",
                           "log_ndtr", "ndtri", "entr", "xlog1py"} do
      assert.is_string(pt._docs[pt[name]], name)
    end
    for _, name in ipairs {"polygamma", "lgamma_", "digamma_", "polygamma_", "mvlgamma_", "i0_"} do
      assert.is_string(pt._docs[pt.Tensor[name]], name)
    end
  end)
end)
