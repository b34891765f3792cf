-- More element-wise math: erf family, logs/exps, trigonometric and hyperbolic functions, frac,
-- sinc; atan2, hypot, remainder (%), fmod, floor_divide (//), logaddexp, xlogy, copysign, lerp.
-- Expected numbers were computed with PyTorch 1.13 (/usr/bin/python3) and are hard-coded here;
-- where PyTorch 1.13 itself is off in the last digits (erfinv near +-1, logaddexp) the numbers
-- come from mpmath at 40 digits, marked "mpmath".
local pt = require "partrain"
local support = require "spec.support"
local errmsg, assert_error = support.errmsg, support.assert_error
local gradcheck = require "spec.gradcheck"

local inf = math.huge
local nan = math.abs(0 / 0) -- a NaN with the sign bit clear, as Python's float('nan') (x86's 0/0 has it set)

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

local UNARY = {"erf", "erfc", "erfinv", "log1p", "expm1", "log2", "log10", "exp2", "tan", "asin",
               "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "frac", "sinc"}
local BINARY = {"atan2", "hypot", "remainder", "fmod", "floor_divide", "logaddexp", "xlogy", "copysign"}

-- torch 1.13: {inputs, results} in float64 (unary64), float32 (unary32); special values at
-- {inf, -inf, nan, -0.0, 0.0}; integer inputs {-2, 0, 1, 3} (float32 results)
local unary64 = {
  erf = {{-2.5, -0.75, -1e-10, 0.0, 0.3, 1.0, 3.2}, {-0.999593047982555, -0.7111556336535151, -1.1283791670955126e-10, 0.0, 0.3286267594591274, 0.8427007929497149, 0.9999939742388483}},
  erfc = {{-2.5, -0.75, -1e-10, 0.0, 0.3, 1.0, 3.2}, {1.999593047982555, 1.7111556336535152, 1.000000000112838, 1.0, 0.6713732405408726, 0.15729920705028513, 6.025761151762088e-06}},
  erfinv = {{-0.999, -0.5, -1e-10, 0.0, 0.3, 0.9, 0.9999999}, {-2.3267537655135246, -0.4769362762044699, -8.862269254527581e-11, 0.0, 0.2724627147267543, 1.1630871536766743, 3.7665625816384707}}, -- mpmath (PyTorch 1.13 is off by up to 2e-11 near +-1)
  log1p = {{-0.5, -1e-10, 0.0, 1e-10, 0.3, 1.0, 3.2, 10000000000.0}, {-0.6931471805599453, -1.00000000005e-10, 0.0, 9.999999999500001e-11, 0.26236426446749106, 0.6931471805599453, 1.4350845252893227, 23.025850930040455}},
  expm1 = {{-2.5, -0.75, -1e-10, 0.0, 0.3, 1.0, 3.2}, {-0.9179150013761012, -0.5276334472589853, -9.999999999500001e-11, 0.0, 0.3498588075760031, 1.7182818284590453, 23.532530197109352}},
  log2 = {{1e-10, 0.3, 1.0, 3.2, 10000000000.0}, {-33.219280948873624, -1.7369655941662063, 0.0, 1.6780719051126378, 33.219280948873624}},
  log10 = {{1e-10, 0.3, 1.0, 3.2, 10000000000.0}, {-10.0, -0.5228787452803376, 0.0, 0.505149978319906, 10.0}},
  exp2 = {{-2.5, -0.75, -1e-10, 0.0, 0.3, 1.0, 3.2}, {0.1767766952966369, 0.5946035575013605, 0.9999999999306853, 1.0, 1.2311444133449163, 2.0, 9.18958683997628}},
  tan = {{-2.5, -0.75, -1e-10, 0.0, 0.3, 1.0, 3.2}, {0.7470222972386603, -0.9315964599440725, -1e-10, 0.0, 0.30933624960962325, 1.5574077246549023, 0.058473854459578645}},
  asin = {{-0.999, -0.5, -1e-10, 0.0, 0.3, 0.9, 0.9999999}, {-1.526071239626163, -0.5235987755982989, -1e-10, 0.0, 0.30469265401539747, 1.1197695149986342, 1.5703491131957876}},
  acos = {{-0.999, -0.5, -1e-10, 0.0, 0.3, 0.9, 0.9999999}, {3.09686756642106, 2.0943951023931957, 1.5707963268948966, 1.5707963267948966, 1.2661036727794992, 0.45102681179626236, 0.00044721359910904126}},
  atan = {{-2.5, -0.75, -1e-10, 0.0, 0.3, 1.0, 3.2}, {-1.1902899496825317, -0.6435011087932844, -1e-10, 0.0, 0.2914567944778671, 0.7853981633974483, 1.2679114584199251}},
  sinh = {{-2.5, -0.75, -1e-10, 0.0, 0.3, 1.0, 3.2}, {-6.0502044810397875, -0.82231673193583, -1e-10, 0.0, 0.3045202934471426, 1.1752011936438014, 12.245883996565492}},
  cosh = {{-2.5, -0.75, -1e-10, 0.0, 0.3, 1.0, 3.2}, {6.132289479663686, 1.2946832846768448, 1.0, 1.0, 1.0453385141288605, 1.5430806348152437, 12.28664620054386}},
  asinh = {{-2.5, -0.75, -1e-10, 0.0, 0.3, 1.0, 3.2}, {-1.6472311463710958, -0.6931471805599453, -1e-10, 0.0, 0.29567304756342244, 0.881373587019543, 1.8798635843969098}},
  acosh = {{1.0, 1.0001, 1.5, 3.0, 100.0}, {0.0, 0.014142017775251547, 0.9624236501192069, 1.762747174039086, 5.298292365610484}},
  atanh = {{-0.999, -0.5, -1e-10, 0.0, 0.3, 0.9, 0.9999999}, {-3.8002011672501994, -0.5493061443340548, -1e-10, 0.0, 0.30951960420311175, 1.4722194895832204, 8.40562139102231}},
  frac = {{-2.5, -0.75, -1e-10, 0.0, 0.3, 1.0, 3.2, 1e+20, -7.125}, {-0.5, -0.75, -1e-10, 0.0, 0.3, 0.0, 0.20000000000000018, 0.0, -0.125}},
  sinc = {{-2.5, -0.75, -1e-10, 0.0, 0.3, 1.0, 3.2}, {0.12732395447351627, 0.3001054387190354, 1.0, 1.0, 0.8583936913341398, 3.8981718325193755e-17, -0.05846808023678991}},
}
local unary32 = {
  erf = {{-2.5, -0.75, -1.000000013351432e-10, 0.0, 0.30000001192092896, 1.0, 3.200000047683716}, {-0.9995930194854736, -0.7111556529998779, -1.1283791956362421e-10, 0.0, 0.3286267817020416, 0.8427007794380188, 0.9999939799308777}},
  erfc = {{-2.5, -0.75, -1.000000013351432e-10, 0.0, 0.30000001192092896, 1.0, 3.200000047683716}, {1.9995930194854736, 1.711155652999878, 1.0, 1.0, 0.6713732481002808, 0.15729920566082, 6.0257593759160955e-06}},
  erfinv = {{-0.9990000128746033, -0.5, -1.000000013351432e-10, 0.0, 0.30000001192092896, 0.8999999761581421, 0.9999998807907104}, {-2.326756238937378, -0.4769362807273865, -8.862269251785904e-11, 0.0, 0.27246272563934326, 1.1630871295928955, 3.7439212799072266}}, -- mpmath (PyTorch 1.13: 3.7439467906951904 at 1 - 2^-23)
  log1p = {{-0.5, -1.000000013351432e-10, 0.0, 1.000000013351432e-10, 0.30000001192092896, 1.0, 3.200000047683716, 10000000000.0}, {-0.6931471824645996, -1.000000013351432e-10, 0.0, 1.000000013351432e-10, 0.2623642683029175, 0.6931471824645996, 1.435084581375122, 23.025850296020508}},
  expm1 = {{-2.5, -0.75, -1.000000013351432e-10, 0.0, 0.30000001192092896, 1.0, 3.200000047683716}, {-0.9179149866104126, -0.5276334285736084, -1.000000013351432e-10, 0.0, 0.349858820438385, 1.718281865119934, 23.53253173828125}},
  log2 = {{1.000000013351432e-10, 0.30000001192092896, 1.0, 3.200000047683716, 10000000000.0}, {-33.21928024291992, -1.736965537071228, 0.0, 1.6780719757080078, 33.21928024291992}},
  log10 = {{1.000000013351432e-10, 0.30000001192092896, 1.0, 3.200000047683716, 10000000000.0}, {-10.0, -0.5228787064552307, 0.0, 0.5051499605178833, 10.0}},
  exp2 = {{-2.5, -0.75, -1.000000013351432e-10, 0.0, 0.30000001192092896, 1.0, 3.200000047683716}, {0.1767766922712326, 0.5946035385131836, 1.0, 1.0, 1.2311444282531738, 2.0, 9.189587593078613}},
  tan = {{-2.5, -0.75, -1.000000013351432e-10, 0.0, 0.30000001192092896, 1.0, 3.200000047683716}, {0.7470223307609558, -0.9315964579582214, -1.000000013351432e-10, 0.0, 0.30933627486228943, 1.5574077367782593, 0.05847390368580818}},
  asin = {{-0.9990000128746033, -0.5, -1.000000013351432e-10, 0.0, 0.30000001192092896, 0.8999999761581421, 0.9999998807907104}, {-1.526071548461914, -0.5235987901687622, -1.000000013351432e-10, 0.0, 0.30469265580177307, 1.1197694540023804, 1.5703080892562866}},
  acos = {{-0.9990000128746033, -0.5, -1.000000013351432e-10, 0.0, 0.30000001192092896, 0.8999999761581421, 0.9999998807907104}, {3.096867799758911, 2.094395160675049, 1.5707963705062866, 1.5707963705062866, 1.2661036252975464, 0.4510268568992615, 0.00048828125}},
  atan = {{-2.5, -0.75, -1.000000013351432e-10, 0.0, 0.30000001192092896, 1.0, 3.200000047683716}, {-1.1902899742126465, -0.6435011029243469, -1.000000013351432e-10, 0.0, 0.29145681858062744, 0.7853981256484985, 1.267911434173584}},
  sinh = {{-2.5, -0.75, -1.000000013351432e-10, 0.0, 0.30000001192092896, 1.0, 3.200000047683716}, {-6.050204753875732, -0.8223167061805725, -1.000000013351432e-10, 0.0, 0.30452030897140503, 1.175201177597046, 12.245884895324707}},
  cosh = {{-2.5, -0.75, -1.000000013351432e-10, 0.0, 0.30000001192092896, 1.0, 3.200000047683716}, {6.132289409637451, 1.2946833372116089, 1.0, 1.0, 1.04533851146698, 1.5430805683135986, 12.286646842956543}},
  asinh = {{-2.5, -0.75, -1.000000013351432e-10, 0.0, 0.30000001192092896, 1.0, 3.200000047683716}, {-1.6472312211990356, -0.6931471824645996, -1.000000013351432e-10, 0.0, 0.29567307233810425, 0.8813735842704773, 1.8798636198043823}},
  acosh = {{1.0, 1.000100016593933, 1.5, 3.0, 100.0}, {0.0, 0.014143191277980804, 0.9624236822128296, 1.7627471685409546, 5.29829216003418}},
  atanh = {{-0.9990000128746033, -0.5, -1.000000013351432e-10, 0.0, 0.30000001192092896, 0.8999999761581421, 0.9999998807907104}, {-3.8002076148986816, -0.5493061542510986, -1.000000013351432e-10, 0.0, 0.30951961874961853, 1.4722193479537964, 8.317766189575195}},
  frac = {{-2.5, -0.75, -1.000000013351432e-10, 0.0, 0.30000001192092896, 1.0, 3.200000047683716, 1.0000000200408773e+20, -7.125}, {-0.5, -0.75, -1.000000013351432e-10, 0.0, 0.30000001192092896, 0.0, 0.20000004768371582, 0.0, -0.125}},
  sinc = {{-2.5, -0.75, -1.000000013351432e-10, 0.0, 0.30000001192092896, 1.0, 3.200000047683716}, {0.1273239552974701, 0.30010542273521423, 1.0, 1.0, 0.858393669128418, -2.7827534054836178e-08, -0.05846809968352318}},
}
local unary_special = {
  erf = {1.0, -1.0, nan, -0.0, 0.0},
  erfc = {0.0, 2.0, nan, 1.0, 1.0},
  erfinv = {nan, nan, nan, -0.0, 0.0},
  log1p = {inf, nan, nan, -0.0, 0.0},
  expm1 = {inf, -1.0, nan, -0.0, 0.0},
  log2 = {inf, nan, nan, -inf, -inf},
  log10 = {inf, nan, nan, -inf, -inf},
  exp2 = {inf, 0.0, nan, 1.0, 1.0},
  tan = {nan, nan, nan, -0.0, 0.0},
  asin = {nan, nan, nan, -0.0, 0.0},
  acos = {nan, nan, nan, 1.5707963267948966, 1.5707963267948966},
  atan = {1.5707963267948966, -1.5707963267948966, nan, -0.0, 0.0},
  sinh = {inf, -inf, nan, -0.0, 0.0},
  cosh = {inf, inf, nan, 1.0, 1.0},
  asinh = {inf, -inf, nan, -0.0, 0.0},
  acosh = {inf, nan, nan, nan, nan},
  atanh = {nan, nan, nan, -0.0, 0.0},
  frac = {nan, nan, nan, 0.0, 0.0},
  sinc = {nan, nan, nan, 1.0, 1.0},
}
local unary_int = {
  erf = {-0.9953222870826721, 0.0, 0.8427007794380188, 0.9999778866767883},
  erfc = {1.9953222274780273, 1.0, 0.15729920566082, 2.2090496713644825e-05},
  erfinv = {nan, 0.0, inf, nan},
  log1p = {nan, 0.0, 0.6931471824645996, 1.3862943649291992},
  expm1 = {-0.8646647334098816, 0.0, 1.718281865119934, 19.08553695678711},
  log2 = {nan, -inf, 0.0, 1.5849624872207642},
  log10 = {nan, -inf, 0.0, 0.4771212637424469},
  exp2 = {0.25, 1.0, 2.0, 8.0},
  tan = {2.185039758682251, 0.0, 1.5574077367782593, -0.14254654943943024},
  asin = {nan, 0.0, 1.5707963705062866, nan},
  acos = {nan, 1.5707963705062866, 0.0, nan},
  atan = {-1.1071487665176392, 0.0, 0.7853981256484985, 1.249045729637146},
  sinh = {-3.6268603801727295, 0.0, 1.175201177597046, 10.017874717712402},
  cosh = {3.7621958255767822, 1.0, 1.5430805683135986, 10.067662239074707},
  asinh = {-1.4436354637145996, 0.0, 0.8813735842704773, 1.8184465169906616},
  acosh = {nan, nan, 0.0, 1.7627471685409546},
  atanh = {nan, 0.0, inf, nan},
  sinc = {2.7827534054836178e-08, 1.0, -2.7827534054836178e-08, -2.530538223410872e-09},
}
local A, B = {5.0, -5.0, 7.5, -7.5, 0.3, -0.3, 0.001, 100.0}, {3.0, 3.0, -2.5, -2.5, 0.1, 0.1, -7.0, 0.001}
local binary64 = {
  atan2 = {1.0303768265243125, -1.0303768265243125, 1.892546881191539, -1.892546881191539, 1.2490457723982544, -1.2490457723982544, 3.141449796447908, 1.570786326794897},
  hypot = {5.830951894845301, 5.830951894845301, 7.905694150420948, 7.905694150420948, 0.31622776601683794, 0.31622776601683794, 7.0000000714285715, 100.000000005},
  remainder = {2.0, 1.0, 0.0, -0.0, 0.09999999999999998, 2.7755575615628914e-17, -6.999, 0.0009999999999979184},
  fmod = {2.0, -2.0, 0.0, -0.0, 0.09999999999999998, -0.09999999999999998, 0.001, 0.0009999999999979184},
  floor_divide = {1.0, -2.0, -3.0, 3.0, 2.0, -3.0, -1.0, 99999.0},
  logaddexp = {5.126928011042972, 3.000335406372896, 7.500045398899217, -2.4932846515108817, 0.8981388693815918, 0.6130152523999526, 0.0019105558575390447, 100.0}, -- mpmath (PyTorch 1.13 differs in the last digits)
  copysign = {5.0, 5.0, -7.5, -7.5, 0.3, 0.3, -0.001, 100.0},
}
local xlogy64 = {5.493061443340549, -5.493061443340549, 6.872180489056163, -6.872180489056163, -0.6907755278982136, 0.6907755278982136, 0.0019459101490553134, -690.7755278982137}
-- the same in float32
local binary32 = {
  atan2 = {1.0303767919540405, -1.0303767919540405, 1.8925468921661377, -1.8925468921661377, 1.249045729637146, -1.249045729637146, 3.1414496898651123, 1.5707863569259644},
  hypot = {5.830951690673828, 5.830951690673828, 7.905694007873535, 7.905694007873535, 0.3162277638912201, 0.3162277638912201, 7.0, 100.0},
  remainder = {2.0, 1.0, 0.0, -0.0, 7.450580596923828e-09, 0.09999999403953552, -6.999000072479248, 0.0009952503023669124},
  fmod = {2.0, -2.0, 0.0, -0.0, 7.450580596923828e-09, -7.450580596923828e-09, 0.0010000000474974513, 0.0009952503023669124},
  floor_divide = {1.0, -2.0, -3.0, 3.0, 3.0, -4.0, -1.0, 99999.0},
  logaddexp = {5.126927852630615, 3.000335454940796, 7.500045299530029, -2.4932847023010254, 0.8981388807296753, 0.6130152344703674, 0.001910555874928832, 100.0}, -- mpmath, rounded (PyTorch 1.13: 1.9105827e-3 for the 7th)
  copysign = {5.0, 5.0, -7.5, -7.5, 0.30000001192092896, 0.30000001192092896, -0.0010000000474974513, 100.0},
}
local SA, SB = {inf, -inf, nan, 1.0, -1.0, -0.0, 0.0, 5.0, -5.0, 0.0, -0.0, inf, 3.0}, {3.0, 3.0, 3.0, inf, inf, 3.0, -3.0, 0.0, 0.0, 0.0, -0.0, inf, nan}
local special = {
  atan2 = {1.5707963267948966, -1.5707963267948966, nan, 0.0, -0.0, -0.0, 3.141592653589793, 1.5707963267948966, -1.5707963267948966, 0.0, -3.141592653589793, 0.7853981633974483, nan},
  hypot = {inf, inf, nan, inf, inf, 3.0, 3.0, 5.0, 5.0, 0.0, 0.0, inf, nan},
  remainder = {nan, nan, nan, 1.0, inf, -0.0, 0.0, nan, nan, nan, nan, nan, nan},
  fmod = {nan, nan, nan, 1.0, -1.0, -0.0, 0.0, nan, nan, nan, nan, nan, nan},
  floor_divide = {nan, nan, nan, 0.0, -1.0, -0.0, -0.0, inf, -inf, nan, nan, nan, nan},
  logaddexp = {inf, 3.0, nan, inf, inf, 3.048587351573742, 0.04858735157374206, 5.006715348489118, 0.006715348489118068, 0.6931471805599453, 0.6931471805599453, inf, nan}, -- mpmath
  copysign = {inf, inf, nan, 1.0, 1.0, 0.0, -0.0, 5.0, 5.0, 0.0, -0.0, inf, 3.0},
  xlogy = {inf, -inf, nan, inf, -inf, 0.0, 0.0, -inf, inf, 0.0, 0.0, inf, nan},
}
local XA, XB = {0.0, 0.0, 0.0, 1.0, 2.0, -0.0}, {0.0, -1.0, nan, 0.0, -1.0, inf}
local xlogy_special = {0.0, 0.0, nan, -inf, nan, 0.0}
local LA, LB = {inf, -inf, -inf, inf, 1000.0, -1000.0}, {inf, -inf, inf, -inf, 1000.0, -1000.0}
local logaddexp_special = {inf, -inf, inf, inf, 1000.6931471805599, -999.3068528194401}
local IA, IB = {7, -7, 7, -7, 0, 1, -1, 4611686018427387904, 3, -9223372036854775807}, {2, 2, -2, -2, 5, -5, 5, 3, 7, -1}
local remainder_int64 = {{7, -7, 7, -7, 0, 1, -1, 4611686018427387904, 3, -9223372036854775807}, {1, 1, -1, -1, 0, -4, 4, 1, 3, 0}}
local remainder_int32 = {{7, -7, 7, -7, 0, 1, -1, 1073741824, 3, -2147483647}, {1, 1, -1, -1, 0, -4, 4, 1, 3, 0}}
local fmod_int64 = {{7, -7, 7, -7, 0, 1, -1, 4611686018427387904, 3, -9223372036854775807}, {1, -1, 1, -1, 0, 1, -1, 1, 3, 0}}
local fmod_int32 = {{7, -7, 7, -7, 0, 1, -1, 1073741824, 3, -2147483647}, {1, -1, 1, -1, 0, 1, -1, 1, 3, 0}}
local floor_divide_int64 = {{7, -7, 7, -7, 0, 1, -1, 4611686018427387904, 3, -9223372036854775807}, {3, -4, -4, 3, 0, -1, -1, 1537228672809129301, 0, 9223372036854775807}}
local floor_divide_int32 = {{7, -7, 7, -7, 0, 1, -1, 1073741824, 3, -2147483647}, {3, -4, -4, 3, 0, -1, -1, 357913941, 0, 2147483647}}
local remainder_uint8 = {1, 4, 0, 0}
local fmod_uint8 = {1, 4, 0, 0}
local floor_divide_uint8 = {3, 28, 0, 1}
-- tensor op number, number op tensor (t = {5, -5, 7} int64):
-- torch.remainder(t, 3) = {2, 1, 1} torch.int64
-- torch.remainder(t, -3) = {-1, -2, -2} torch.int64
-- torch.remainder(7, t) = {2, -3, 0} torch.int64
-- torch.floor_divide(t, 2) = {2, -3, 3} torch.int64
-- torch.floor_divide(7, t) = {1, -2, 1} torch.int64
-- torch.fmod(t, -3) = {2, -2, 1} torch.int64
-- torch.remainder(t, 2.5) = {0.0, -0.0, 2.0} torch.float32
-- torch.floor_divide(t, 2.5) = {2.0, -2.0, 2.0} torch.float32
-- torch.floor_divide(-7.5, t) = {-2.0, 1.0, -2.0} torch.float32
-- torch.xlogy(t, 2) = {3.465735912322998, -3.465735912322998, 4.852030277252197} torch.float32
-- torch.copysign(t, -1) = {-5.0, -5.0, -7.0} torch.float32
-- torch.xlogy(2, t.abs()) = {3.2188758850097656, 3.2188758850097656, 3.891820192337036} torch.float32
-- torch.fmod(t, 2.5) = {0.0, -0.0, 2.0} torch.float32
local lerp_w = {1.0, -1.0, 0.0, 20.0}
local lerp_03 = {2.2, -0.8, 1.8, 13.0}
local lerp_15 = {7.0, 4.0, -3.0, 25.0}
local lerp32 = {2.200000047683716, -0.7999999523162842, 1.7999999523162842, 13.0}

describe("more unary math", function()
  it("matches PyTorch in float64, as methods and as pt.* functions", function()
    for _, name in ipairs(UNARY) do
      local x, want = unary64[name][1], unary64[name][2]
      local t = f64(x)
      local r = t[name](t)
      assert.are.equal("float64", r:dtype(), name)
      same_list(r:tolist(), want, 1e-14, name)
      same_list(pt[name](t):tolist(), want, 1e-14, "pt." .. name)
    end
  end)

  it("matches PyTorch in float32", function()
    for _, name in ipairs(UNARY) do
      local x, want = unary32[name][1], unary32[name][2]
      local r = f32(x)[name](f32(x))
      assert.are.equal("float32", r:dtype(), name)
      same_list(r:tolist(), want, 1e-6, name)
    end
  end)

  it("gives PyTorch's results at inf, -inf, nan and signed zeros", function()
    for _, name in ipairs(UNARY) do
      local t = f64({inf, -inf, nan, -0.0, 0.0})
      same_list(t[name](t):tolist(), unary_special[name], 0, name)
      same_list(pt[name](t:float()):tolist(), unary_special[name], 1e-7, name .. " float32")
    end
    -- erfinv next to +-1 and for tiny arguments (mpmath; PyTorch 1.13 gives 5.8636313199346255 for
    -- the first, 1% off)
    same_list(f64({1 - 2 ^ -52, -(1 - 2 ^ -53), 1e-300, -0.75, 0.999999999999}):erfinv():tolist(),
      {5.805018683193453, -5.8635847487551676, 8.86226925452758e-301, -0.8134198475976185, 5.042031898572696},
      1e-15, "erfinv")
  end)

  it("turns integer and bool tensors into float32, as PyTorch", function()
    for _, name in ipairs(UNARY) do
      if name ~= "frac" then
        local r = i64({-2, 0, 1, 3})[name](i64({-2, 0, 1, 3}))
        assert.are.equal("float32", r:dtype(), name)
        same_list(r:tolist(), unary_int[name], 1e-6, name)
        assert.are.equal("float32", pt[name](pt.tensor({true, false})):dtype(), name)
      end
    end
  end)

  it("frac keeps the sign and refuses integer tensors (as PyTorch)", function()
    same_list(f64({-1.5, 1.5, -3, 2.75}):frac():tolist(), {-0.5, 0.5, 0.0, 0.75}, 0, "frac")
    assert_error("frac: not supported for int64 tensors", function() return i64({1, 2}):frac() end)
    assert_error("frac: not supported for bool tensors", function() return pt.frac(pt.tensor({true})) end)
    assert_error("frac_: not supported for int32 tensors",
      function() return pt.tensor({1}, {dtype = "int32"}):frac_() end)
  end)

  it("work on strided views and on tensors large enough to be split over the threads", function()
    local m = f64({{0.1, 0.2}, {0.3, 0.4}}):t()
    same_list(m:erf():contiguous():view(4):tolist(), {0.1124629160182849,
      0.3286267594591274, 0.2227025892104785, 0.4283923550466685}, 1e-14, "strided erf")
    local n = 200000
    local x = pt.linspace(-0.99, 0.99, n, {dtype = "float64"})
    local xl = x:tolist()
    for _, name in ipairs({"erfinv", "atanh", "sinc", "log1p"}) do
      local r = x[name](x):tolist()
      local xt = x:view(400, 500):t()
      local rs = xt[name](xt):t():contiguous():view(n):tolist()
      for _, i in ipairs({1, 2, 12345, 65536, 65537, 100000, n}) do
        local want = pt[name](f64({xl[i]})):item() -- one element: one serial call
        same(r[i], want, 0, name .. " element " .. i)
        same(rs[i], want, 0, name .. " strided element " .. i)
      end
    end
  end)

  it("have in-place forms that return self", function()
    for _, name in ipairs(UNARY) do
      local x = unary64[name][1]
      local t = f64(x)
      local v = t:view(#x)
      assert.are.equal(t, t[name .. "_"](t))
      same_list(v:tolist(), unary64[name][2], 1e-14, name .. "_")
    end
    local e = f64({0, 1}):t()
    assert_error("erf_: result type float32 can't be cast to the desired output type int64",
      function() return i64({1, 2}):erf_() end)
    assert_error("sinc_: a leaf tensor that requires grad is used in an in-place operation",
      function() return pt.ones(2, {requires_grad = true}):sinc_() end)
    same_list(e:expm1_():tolist(), {0, math.exp(1) - 1}, 1e-15, "expm1_")
  end)

  it("refuse extra arguments", function()
    assert_error("erf: unexpected argument #2 (number)", function() return pt.erf(pt.ones(2), 1) end)
    assert_error("log1p_: unexpected argument #2 (number)", function() return pt.ones(2):log1p_(1) end)
  end)
end)

describe("more binary math", function()
  it("matches PyTorch in float64, as methods and as pt.* functions", function()
    for _, name in ipairs(BINARY) do
      if name ~= "xlogy" then
        local a, b = f64(A), f64(B)
        same_list(pt[name](a, b):tolist(), binary64[name], 1e-14, name)
        same_list(a[name](a, b):tolist(), binary64[name], 1e-14, name)
        assert.are.equal("float64", a[name](a, b):dtype())
      end
    end
    local pb = {}
    for i, v in ipairs(B) do pb[i] = math.abs(v) end
    same_list(f64(A):xlogy(f64(pb)):tolist(), xlogy64, 1e-14, "xlogy")
  end)

  it("matches PyTorch in float32 (remainder and floor_divide of 0.3 by 0.1 differ from float64)", function()
    for _, name in ipairs(BINARY) do
      if name ~= "xlogy" then
        local r = pt[name](f32(A), f32(B))
        assert.are.equal("float32", r:dtype())
        same_list(r:tolist(), binary32[name], 1e-6, name)
      end
    end
  end)

  it("gives PyTorch's results for inf, nan, signed zeros and zero divisors", function()
    for _, name in ipairs(BINARY) do
      same_list(pt[name](f64(SA), f64(SB)):tolist(), special[name], 1e-15, name)
    end
    same_list(pt.xlogy(f64(XA), f64(XB)):tolist(), xlogy_special, 0, "xlogy")
    same_list(pt.logaddexp(f64(LA), f64(LB)):tolist(), logaddexp_special, 1e-15, "logaddexp")
    -- a NaN's sign bit decides copysign, as in C and PyTorch
    assert.are.equal(-3, pt.copysign(f64({3}), f64({-nan})):item())
  end)

  it("keep integers exact: remainder, fmod and floor_divide in int64, int32 and uint8", function()
    for _, name in ipairs({"remainder", "fmod", "floor_divide"}) do
      local want64 = ({remainder = remainder_int64, fmod = fmod_int64, floor_divide = floor_divide_int64})[name]
      local want32 = ({remainder = remainder_int32, fmod = fmod_int32, floor_divide = floor_divide_int32})[name]
      local r = pt[name](i64(want64[1]), i64(IB))
      assert.are.equal("int64", r:dtype())
      assert.are.same(want64[2], r:tolist())
      local i32 = function(t) return pt.tensor(t, {dtype = "int32"}) end
      r = pt[name](i32(want32[1]), i32(IB))
      assert.are.equal("int32", r:dtype())
      assert.are.same(want32[2], r:tolist())
      local u8 = function(t) return pt.tensor(t, {dtype = "uint8"}) end
      r = pt[name](u8({7, 200, 0, 255}), u8({2, 7, 5, 255}))
      assert.are.equal("uint8", r:dtype())
      assert.are.same(({remainder = remainder_uint8, fmod = fmod_uint8, floor_divide = floor_divide_uint8})[name], r:tolist())
    end
  end)

  it("agree with Lua's own integer % and // and math.fmod, the most negative value included", function()
    -- the most negative integer by -1 traps in C (SIGFPE; PyTorch 1.13 crashes): here the remainder
    -- is 0 and the quotient wraps to itself, as Lua's own operators
    local xs = {math.mininteger, math.mininteger + 1, math.maxinteger, -7, 7, 0, 1, -1, 123456789012}
    local ys = {-1, 1, 2, -2, 3, -3, 7, math.maxinteger, math.mininteger}
    local a, b, ra, rb = {}, {}, nil, nil
    for _, x in ipairs(xs) do for _, y in ipairs(ys) do a[#a + 1] = x; b[#b + 1] = y end end
    ra, rb = i64(a), i64(b)
    local rem, fmod, fdiv = (ra % rb):tolist(), ra:fmod(rb):tolist(), (ra // rb):tolist()
    for i = 1, #a do
      assert.are.equal(a[i] % b[i], rem[i], a[i] .. " % " .. b[i])
      assert.are.equal(a[i] // b[i], fdiv[i], a[i] .. " // " .. b[i])
      assert.are.equal(math.fmod(a[i], b[i]), fmod[i], "fmod(" .. a[i] .. ", " .. b[i] .. ")")
    end
    local m32 = pt.tensor({-2147483648}, {dtype = "int32"})
    assert.are.same({0}, (m32 % -1):tolist())
    assert.are.same({-2147483648}, (m32 // -1):tolist())
    assert.are.same({0}, m32:fmod(-1):tolist())
  end)

  it("agree with Lua's float % (Python's rule) on many values, large tensors split over threads", function()
    local n = 150000
    local a = pt.linspace(-1000, 1000, n, {dtype = "float64"})
    local b = pt.linspace(-3.7, 2.9, n, {dtype = "float64"}) -- crosses 0 between samples
    local r, q, f = (a % b):tolist(), (a // b):tolist(), a:fmod(b):tolist()
    local al, bl = a:tolist(), b:tolist()
    for i = 1, n, 7 do
      same(r[i], al[i] % bl[i], 0, "remainder " .. i)
      same(f[i], math.fmod(al[i], bl[i]), 0, "fmod " .. i)
      -- floor_divide rounds (a - fmod(a, b)) / b, which Lua's floor(a / b) matches away from ties
      assert(math.abs(q[i] - math.floor(al[i] / bl[i])) <= 1, "floor_divide " .. i)
    end
    local ia = pt.arange(-n, n, {dtype = "int64"})
    local ir = (ia % 7):tolist()
    for i = 1, #ir, 11 do assert.are.equal((i - 1 - n) % 7, ir[i]) end
  end)

  it("fmod and remainder are exact at hard quotients (near integers, beyond 2^24 and 2^53, subnormal)", function()
    -- C's fmod (math.fmod) is exact, and so its result is representable in float32 too
    local ys = {3, -3, 0.1, -0.7, 1.5, 2 ^ -20, 1e-300, 5e-324, 1e300, -7e-310}
    local xs, yy = {}, {}
    for _, y in ipairs(ys) do
      for _, k in ipairs({1, 2, 3, 7, -5, 1e6, 2 ^ 23 + 1, 2 ^ 24 + 3, 2 ^ 40, 2 ^ 52 + 1, 2 ^ 60, 1e20}) do
        for _, f in ipairs({1, 1 + 2 ^ -52, 1 - 2 ^ -53, 1 + 2 ^ -23, 1 - 2 ^ -24, 1.3}) do
          local x = k * y * f
          if x == x and math.abs(x) < inf then xs[#xs + 1] = x; yy[#yy + 1] = y end
        end
      end
      for _, x in ipairs({0.0, -0.0, 1e-310, -3e-320, 1e308, -1e308}) do xs[#xs + 1] = x; yy[#yy + 1] = y end
    end
    for _, dt in ipairs({"float64", "float32"}) do
      local a, b = pt.tensor(xs, {dtype = dt}), pt.tensor(yy, {dtype = dt})
      local al, bl = a:tolist(), b:tolist()
      local f, r = a:fmod(b):tolist(), (a % b):tolist()
      for i = 1, #al do
        if bl[i] ~= 0 then
          local want = math.fmod(al[i], bl[i])
          same(f[i], want, 0, string.format("%s fmod(%.17g, %.17g)", dt, al[i], bl[i]))
          -- Lua's float % is PyTorch's rule; in float32 the final move by one divisor rounds to float
          local rw = al[i] % bl[i]
          if dt == "float32" then rw = pt.tensor({rw}):item() end
          same(r[i], rw, dt == "float32" and 6e-8 or 0, string.format("%s %.17g %% %.17g", dt, al[i], bl[i]))
        end
      end
    end
  end)

  it("take numbers on either side and promote as PyTorch", function()
    local t = i64({5, -5, 7})
    local function check(r, dt, want) assert.are.equal(dt, r:dtype()); same_list(r:tolist(), want, 1e-6) end
    check(pt.remainder(t, 3), "int64", {2, 1, 1})
    check(t:remainder(-3), "int64", {-1, -2, -2})
    check(pt.remainder(7, t), "int64", {2, -3, 0})
    check(pt.floor_divide(t, 2), "int64", {2, -3, 3})
    check(pt.floor_divide(7, t), "int64", {1, -2, 1})
    check(t:fmod(-3), "int64", {2, -2, 1})
    check(t:remainder(2.5), "float32", {0.0, -0.0, 2.0})
    check(t:floor_divide(2.5), "float32", {2.0, -2.0, 2.0})
    check(pt.floor_divide(-7.5, t), "float32", {-2.0, 1.0, -2.0})
    check(t:xlogy(2), "float32", {3.465735912322998, -3.465735912322998, 4.852030277252197})
    check(t:copysign(-1), "float32", {-5.0, -5.0, -7.0})
    check(pt.xlogy(2, t:abs()), "float32", {3.2188758850097656, 3.2188758850097656, 3.891820192337036})
    check(t:fmod(2.5), "float32", {0.0, -0.0, 2.0})
    check(pt.atan2(t, t), "float32", {math.pi / 4, -3 * math.pi / 4, math.pi / 4})
    check(pt.atan2(1, f64({-1})), "float64", {3 * math.pi / 4})
    assert.are.equal("float64", pt.remainder(pt.ones(2), f64({1, 2})):dtype())
    assert.are.equal("float32", pt.remainder(pt.ones(2), pt.tensor(2, {dtype = "float64"})):dtype())
    assert.are.equal("float32", pt.xlogy(pt.tensor({true}), pt.tensor({true})):dtype())
    assert.are.equal("float32", pt.copysign(pt.tensor({1}, {dtype = "uint8"}), i64({-1})):dtype())
    assert.are.equal("uint8", (pt.tensor({9}, {dtype = "uint8"}) % 4):dtype())
  end)

  it("are the % and // operators, tensors and numbers on either side", function()
    local a, b = i64({7, -7, 8}), i64({2, 2, -3})
    assert.are.same({1, 1, -1}, (a % b):tolist())
    assert.are.same({3, -4, -3}, (a // b):tolist())
    assert.are.same({1, 2, 2}, (a % 3):tolist())
    assert.are.same({2, -3, 2}, (a // 3):tolist())
    assert.are.same({1, 1, -1}, (17 % b):tolist())
    assert.are.same({8, 8, -6}, (17 // b):tolist())
    same_list((f64({-7.5, 7.5}) % 2):tolist(), {0.5, 1.5}, 0)
    same_list((f64({-7.5, 7.5}) // 2):tolist(), {-4, 3}, 0)
    same_list((1 // f64({0, -0.0})):tolist(), {inf, -inf}, 0)
    -- broadcasting: {3,1} % {4}
    local c = f64({{5}, {-5}, {7.5}}) % f64({3, -3, 2, -2})
    assert.are.same({3, 4}, c:size())
    local cl = c:tolist()
    for i, x in ipairs({5, -5, 7.5}) do
      for j, y in ipairs({3, -3, 2, -2}) do same(cl[i][j], x % y, 0) end
    end
  end)

  it("refuse integer division by zero with a message (PyTorch: ZeroDivisionError), never trap", function()
    local tail = ": integer division by zero (a divisor is 0; a float dtype gives inf or nan instead)"
    local t = i64({5, -5, 7})
    assert_error("remainder" .. tail, function() return t % 0 end)
    assert_error("floor_divide" .. tail, function() return t // 0 end)
    assert_error("fmod" .. tail, function() return t:fmod(0) end)
    assert_error("remainder" .. tail, function() return t % i64({1, 0, 2}) end)
    assert_error("remainder" .. tail, function() return 5 % i64({1, 0, 2}) end)
    assert_error("floor_divide" .. tail, function() return pt.floor_divide(5, i64({{0}, {1}})) end)
    assert_error("fmod" .. tail, function() return pt.fmod(pt.tensor({1}, {dtype = "int32"}), pt.tensor({0}, {dtype = "int32"})) end)
    -- 256 wraps to 0 in uint8 (as PyTorch)
    assert_error("remainder" .. tail, function() return pt.tensor({5}, {dtype = "uint8"}) % 256 end)
    -- a strided divisor and a large one
    assert_error("remainder" .. tail, function() return i64({{1, 2}, {3, 4}}) % i64({{1, 2}, {0, 4}}):t() end)
    local big = pt.ones(100000, {dtype = "int64"})
    big[99999] = 0
    assert_error("floor_divide" .. tail, function() return pt.arange(100000, {dtype = "int64"}) // big end)
    assert_error("remainder_" .. tail, function() return t:remainder_(0) end)
    assert_error("floor_divide_" .. tail, function() return t:floor_divide_(i64({0, 1, 1})) end)
    assert.are.same({5, -5, 7}, t:tolist()) -- nothing was written
    -- floats follow IEEE
    same_list((f64({5, -5, 0}) % 0):tolist(), {nan, nan, nan}, 0)
    same_list((f64({5, -5, 0}) // 0):tolist(), {inf, -inf, nan}, 0)
    same_list((i64({5}) % 0.0):tolist(), {nan}, 0)
  end)

  it("refuse dtypes PyTorch refuses and operands that are not tensors or numbers", function()
    assert_error("hypot: not supported for int64 tensors", function() return pt.hypot(i64({3}), i64({4})) end)
    assert_error("logaddexp: not supported for int32 tensors",
      function() return pt.logaddexp(pt.tensor({1}, {dtype = "int32"}), 1) end)
    assert_error("remainder: not supported for bool tensors", function() return pt.tensor({true}) % pt.tensor({true}) end)
    assert_error("floor_divide: not supported for bool tensors", function() return pt.tensor({true}) // pt.tensor({true}) end)
    assert_error("fmod: not supported for bool tensors", function() return pt.tensor({true}):fmod(pt.tensor({true})) end)
    assert_error("atan2: shapes {2} and {3} cannot be broadcast", function() return pt.atan2(pt.ones(2), pt.ones(3)) end)
    assert_error("remainder: shapes {2} and {3} cannot be broadcast", function() return pt.ones(2) % pt.ones(3) end)
    assert_error("xlogy: unexpected argument #3 (number)", function() return pt.xlogy(pt.ones(2), 2, 3) end)
    assert.matches("bad argument #1 to '[%w%.]*remainder' %(Tensor expected, got number%)", errmsg(pt.remainder, 1, 2))
    assert.matches("bad argument #2 to '[%w%.]*copysign' %(Tensor or number expected, got string%)",
      errmsg(pt.copysign, pt.ones(1), "x"))
    assert.matches("bad argument #1 to '%?' %(Tensor or number expected, got string%)",
      errmsg(function() return "x" % pt.ones(1) end))
    assert.matches("bad argument #2 to 'idiv' %(Tensor or number expected, got table%)",
      errmsg(function() return pt.ones(1) // {} end))
  end)

  it("have in-place forms (except logaddexp, as PyTorch)", function()
    local t = f64({5, -5, 7.5})
    local v = t:view(3)
    assert.are.equal(t, t:remainder_(3))
    same_list(v:tolist(), {2, 1, 1.5}, 0)
    t:fmod_(f64({-1.5}))
    same_list(v:tolist(), {0.5, 1, 0}, 0)
    t:copysign_(f64({-1, 1, -1}))
    same_list(v:tolist(), {-0.5, 1, -0.0}, 0)
    t:atan2_(f64({1}))
    same_list(v:tolist(), {math.atan(-0.5, 1), math.pi / 4, -0.0}, 1e-15)
    t:hypot_(f64({3, 4, 5}))
    t:floor_divide_(0.5)
    t:xlogy_(2)
    assert.is_nil(pt.Tensor.logaddexp_)
    local i = i64({7, -7})
    i:remainder_(3)
    assert.are.same({1, 2}, i:tolist())
    i:floor_divide_(i64({-2}))
    assert.are.same({-1, -1}, i:tolist())
    assert_error("atan2_: result type float32 can't be cast to the desired output type int64",
      function() return i:atan2_(i) end)
    assert_error("remainder_: result type float32 can't be cast to the desired output type int64",
      function() return i:remainder_(0.5) end)
    assert_error("fmod_: output with shape {3} doesn't match the broadcast shape {2,3}",
      function() return f64({1, 2, 3}):fmod_(pt.ones(2, 3)) end)
    assert_error("hypot_: a leaf tensor that requires grad is used in an in-place operation",
      function() return pt.ones(2, {requires_grad = true}):hypot_(1) end)
    -- self as the divisor
    local s = f64({3, -4})
    s:remainder_(s)
    same_list(s:tolist(), {0, -0.0}, 0)
  end)
end)

describe("lerp", function()
  local s, e = f64({1.0, -2.0, 3.0, 10.0}), f64({5.0, 2.0, -1.0, 20.0})

  it("matches PyTorch with a number or a tensor weight", function()
    same_list(pt.lerp(s, e, 0.3):tolist(), lerp_03, 1e-15, "lerp 0.3")
    same_list(s:lerp(e, 1.5):tolist(), lerp_15, 1e-15, "lerp 1.5")
    same_list(pt.lerp(s, e, f64({0.0, 0.25, 0.75, 1.0})):tolist(), lerp_w, 0, "lerp w")
    local r = pt.lerp(s:float(), e:float(), 0.3)
    assert.are.equal("float32", r:dtype())
    same_list(r:tolist(), lerp32, 0, "lerp float32")
    -- weight 0 and 1 give the ends exactly
    local a, b = f64({0.1, -1e10}), f64({0.7, 3.3})
    same_list(a:lerp(b, 0):tolist(), a:tolist(), 0)
    same_list(a:lerp(b, 1):tolist(), b:tolist(), 0)
  end)

  it("broadcasts start, end and weight and promotes float32 with float64", function()
    local a, b, w = f64({{1}, {2}, {3}}), f64({10, 20, 30, 40}), f64({{0.5}, {0.25}, {0.1}})
    local r = pt.lerp(a, b, w)
    assert.are.same({3, 4}, r:size())
    local rl = r:tolist()
    for i = 1, 3 do
      for j = 1, 4 do
        local x, y, t = i, 10 * j, ({0.5, 0.25, 0.1})[i]
        same(rl[i][j], x + t * (y - x), 1e-15)
      end
    end
    assert.are.equal("float64", pt.lerp(pt.ones(2), f64({2, 3}), 0.5):dtype())
    assert.are.equal("float64", pt.lerp(pt.ones(2), pt.ones(2), f64({0.5, 1})):dtype())
    assert.are.equal("float32", pt.lerp(pt.ones(2), pt.ones(2), pt.tensor(0.5, {dtype = "float64"})):dtype())
    -- strided operands, and a size split over the threads
    local n = 120000
    local x = pt.linspace(-5, 5, n, {dtype = "float64"})
    local y = x:view(300, 400):t()
    local big = pt.lerp(y, y * 3, 0.25):t():contiguous():view(n):tolist()
    local flat = pt.lerp(x, x * 3, pt.full({n}, 0.25, {dtype = "float64"})):tolist()
    local xl = x:tolist()
    for i = 1, n, 13 do
      same(big[i], xl[i] + 0.25 * (3 * xl[i] - xl[i]), 1e-15, "strided " .. i)
      same(flat[i], big[i], 0, "flat " .. i)
    end
  end)

  it("refuses integer dtypes, unbroadcastable shapes and bad arguments", function()
    assert_error("lerp: not supported for int64 tensors (start, end and weight must give a floating dtype)",
      function() return pt.lerp(i64({1}), i64({2}), 0.5) end)
    assert_error("lerp: shapes {2} and {3} cannot be broadcast", function() return pt.lerp(pt.ones(2), pt.ones(3), 0.5) end)
    assert_error("lerp: shapes {2}, {2} and {3} (weight) cannot be broadcast",
      function() return pt.lerp(pt.ones(2), pt.ones(2), pt.ones(3)) end)
    assert.matches("bad argument #3 to '[%w%.]*lerp' %(Tensor or number expected, got string%)",
      errmsg(pt.lerp, pt.ones(2), pt.ones(2), "x"))
    assert.matches("bad argument #2 to '[%w%.]*lerp' %(Tensor expected, got number%)", errmsg(pt.lerp, pt.ones(2), 2, 0.5))
    assert_error("lerp: unexpected argument #4 (number)", function() return pt.lerp(pt.ones(2), pt.ones(2), 0.5, 1) end)
  end)

  it("has an in-place form", function()
    local t = f64({1.0, -2.0, 3.0, 10.0})
    assert.are.equal(t, t:lerp_(e, 0.3))
    same_list(t:tolist(), lerp_03, 1e-15)
    local u = f64({0, 10})
    u:lerp_(u * 2, f64({0.5, 1}))
    same_list(u:tolist(), {0, 20}, 0)
    u:lerp_(u, 0.5) -- end is self
    same_list(u:tolist(), {0, 20}, 0)
    local m = pt.zeros(2, 2, {dtype = "float64"})
    m:lerp_(f64({1, 2}), 0.5)
    assert.are.same({{0.5, 1}, {0.5, 1}}, m:tolist())
    assert_error("lerp_: output with shape {2} doesn't match the broadcast shape {2,2}",
      function() return f64({1, 2}):lerp_(pt.ones(2, 2), 0.5) end)
    assert_error("lerp_: a leaf tensor that requires grad is used in an in-place operation",
      function() return pt.ones(2, {requires_grad = true}):lerp_(pt.ones(2), 0.5) end)
    assert_error("lerp_: not supported for int64 tensors (start, end and weight must give a floating dtype)",
      function() return i64({1}):lerp_(i64({2}), 0.5) end)
    assert_error("lerp_: result type float32 can't be cast to the desired output type int64",
      function() return i64({1}):lerp_(pt.ones(1), 0.5) end)
  end)
end)

describe("gradients of the new ops", function()
  it("unary ops (finite differences, float64)", function()
    local gen = f64({-1.7, -0.4, 0.35, 1.2})
    local unit = f64({-0.8, -0.3, 0.2, 0.7})
    local domain = {erfinv = unit, asin = unit, acos = unit, atanh = unit, acosh = f64({1.3, 2, 5, 1.05}),
                    log1p = f64({-0.5, 0.2, 3, -0.9}), log2 = f64({0.3, 1.5, 7, 0.05}),
                    log10 = f64({0.3, 1.5, 7, 0.05}),
                    frac = f64({-1.7, -0.4, 0.35, 2.2})}
    for _, name in ipairs(UNARY) do
      local x = domain[name] or gen
      gradcheck(function(t) return t[name](t) end, {x})
      gradcheck(function(t) return pt[name](t:view(2, -1):t()) end, {x:view(-1)})
    end
    gradcheck(function(t) return t:sinc() end, {f64({-1e-3, 2.5})})
  end)

  it("unary gradients match PyTorch at chosen points", function()
    local function grad_of(name, v)
      local x = pt.tensor(v, {dtype = "float64", requires_grad = true})
      x[name](x):sum():backward()
      return x.grad:tolist()
    end
    same_list(grad_of("sinc", {0.0, 0.5, 1.0, -1.5}), {0.0, -1.2732395447351625, -1.0, -0.14147106052612907}, 1e-14)
    same_list(grad_of("erfinv", {0.0, 0.5, -0.7}), {0.8862269254527579, 1.1125848189719496, 1.5163632173337642}, 1e-14)
    same_list(grad_of("frac", {1.5, -1.5, 2.0}), {1, 1, 1}, 0)
    local x = pt.tensor({1, 2}, {requires_grad = true})
    local y = x:erf()
    assert.are.equal("ErfBackward", y.grad_fn)
  end)

  it("binary ops: each argument, broadcasting, numbers on either side", function()
    local a, b = f64({{0.7, -1.3, 2.1, -0.45}, {1.9, -2.6, 0.33, 1.15}}), f64({{1.6, 0.9, -1.1, -0.7}, {0.8, -1.45, 2.3, 1.35}})
    -- away from the jumps of remainder and fmod (no quotient within 1e-3 of an integer)
    local col, row = f64({{0.6}, {-1.3}}), f64({1.7, -0.8, 1.1, 2.35})
    local pos = f64({{0.6, 1.4, 2.2, 0.9}, {1.1, 0.35, 3.1, 1.8}})
    for _, name in ipairs({"atan2", "hypot", "remainder", "fmod", "logaddexp", "copysign"}) do
      local f = function(x, y) return pt[name](x, y) end
      gradcheck(f, {a, b})
      gradcheck(f, {col, row})
      gradcheck(f, {row, a})
      gradcheck(function(x) return pt[name](x, 1.35) end, {a})
      gradcheck(function(x) return pt[name](-0.95, x) end, {b})
    end
    gradcheck(function(x, y) return pt.xlogy(x, y) end, {a, pos})
    gradcheck(function(x, y) return pt.xlogy(x, y) end, {col, pos})
    gradcheck(function(x) return pt.xlogy(x, 2.5) end, {a})
    gradcheck(function(y) return pt.xlogy(1.5, y) end, {pos})
    gradcheck(function(x, y) return x % y end, {a, row})
    gradcheck(function(x) return 2.5 % x end, {b})
  end)

  it("binary gradients match PyTorch (-floor and -trunc for the divisor, xlogy at 0, copysign)", function()
    local function grads(name, u, v)
      local x = pt.tensor(u, {dtype = "float64", requires_grad = true})
      local y = pt.tensor(v, {dtype = "float64", requires_grad = true})
      pt[name](x, y):sum():backward()
      return x.grad:tolist(), y.grad:tolist()
    end
    local gx, gy = grads("remainder", {5.0, -5.0, 7.5, -7.2, 0.0}, {3.0, 3.0, -2.5, -2.5, 2.0})
    same_list(gx, {1, 1, 1, 1, 1}, 0)
    same_list(gy, {-1.0, 2.0, 3.0, -2.0, -0.0}, 0)
    gx, gy = grads("fmod", {5.0, -5.0, 7.5, -7.2, 0.0}, {3.0, 3.0, -2.5, -2.5, 2.0})
    same_list(gx, {1, 1, 1, 1, 1}, 0)
    same_list(gy, {-1.0, 1.0, 3.0, -2.0, -0.0}, 0)
    gx, gy = grads("xlogy", {0.0, 0.0, 0.0, 1.0, 2.0}, {0.0, -1.0, 2.0, 0.5, 3.0})
    same_list(gx, {0.0, 0.0, 0.6931471805599453, -0.6931471805599453, 1.0986122886681098}, 1e-15)
    same_list(gy, {nan, -0.0, 0.0, 2.0, 0.6666666666666666}, 1e-15)
    gx, gy = grads("copysign", {2.0, -2.0, 0.0, -0.0, 3.0}, {-1.0, 1.0, -1.0, 1.0, -0.0})
    same_list(gx, {-1.0, -1.0, 0.0, 0.0, -1.0}, 0)
    same_list(gy, {0, 0, 0, 0, 0}, 0)
    gx, gy = grads("atan2", {1.0, -2.0, 0.0}, {2.0, 0.5, 0.0})
    same_list(gx, {0.4, 0.11764705882352941, nan}, 1e-15)
    same_list(gy, {-0.2, 0.47058823529411764, nan}, 1e-15)
    gx, gy = grads("hypot", {3.0, -2.0, 0.0}, {4.0, 0.5, 0.0})
    same_list(gx, {0.6, -0.9701425001453319, nan}, 1e-15)
    same_list(gy, {0.8, 0.24253562503633297, nan}, 1e-15)
    gx, gy = grads("logaddexp", {1.0, -2.0, 1000.0}, {2.0, 0.5, -1000.0})
    same_list(gx, {0.2689414213699951, 0.07585818002124355, 1.0}, 1e-15)
    same_list(gy, {0.7310585786300049, 0.9241418199787566, 0.0}, 1e-15)
    local x = pt.ones(2, {requires_grad = true})
    local y = pt.ones(2, {dtype = "float64", requires_grad = true})
    pt.atan2(x, y):sum():backward()
    assert.are.equal("float32", x.grad:dtype())
    assert.are.equal("float64", y.grad:dtype())
  end)

  it("floor_divide and integer results record nothing (PyTorch has no floor_divide gradient)", function()
    local x = pt.ones(2, {requires_grad = true})
    assert.is_false((x // 2).requires_grad)
    assert.is_false(pt.floor_divide(3, x).requires_grad)
    assert.is_true((x % 2).requires_grad)
    assert.are.equal("RemainderBackward", (x % 2).grad_fn)
    assert.is_false(pt.no_grad(function() return x:fmod(2) end).requires_grad)
  end)

  it("lerp: start, end and weight, broadcast, numbers as weights", function()
    local a, b = f64({{0.3, -1.2, 2.0}, {1.1, 0.4, -0.6}}), f64({1.5, -0.7, 0.9})
    local w = f64({{0.2}, {0.8}})
    gradcheck(function(x, y) return pt.lerp(x, y, 0.3) end, {a, b})
    gradcheck(function(x, y) return pt.lerp(x, y, 0.7) end, {b, a})
    gradcheck(function(x, y, z) return pt.lerp(x, y, z) end, {a, b, w})
    gradcheck(function(x, y, z) return x:lerp(y, z) end, {b, w, a})
    local s = pt.tensor({1.0, -2.0, 3.0}, {dtype = "float64", requires_grad = true})
    local e = pt.tensor({5.0, 2.0, -1.0}, {dtype = "float64", requires_grad = true})
    local wt = pt.tensor({0.1, 0.6, 2.0}, {dtype = "float64", requires_grad = true})
    pt.lerp(s, e, wt):sum():backward()
    same_list(s.grad:tolist(), {0.9, 0.4, -1.0}, 1e-15)
    same_list(e.grad:tolist(), {0.1, 0.6, 2.0}, 0)
    same_list(wt.grad:tolist(), {4.0, 4.0, -4.0}, 0)
  end)

  it("in-place forms on non-leaves", function()
    local a, b = f64({{0.7, -1.3, 2.1}, {1.9, -2.6, 0.33}}), f64({1.6, -0.9, 1.1})
    local u = f64({{-0.8, -0.3, 0.2}, {0.7, 0.1, -0.5}})
    gradcheck(function(x) local t = x * 1; t:erf_(); t:expm1_(); return t end, {a})
    gradcheck(function(x) local t = x * 1; t:erfinv_(); t:atanh_(); return t end, {u * 0.5})
    gradcheck(function(x) local t = x * 1; t:frac_(); return t end, {a})
    gradcheck(function(x, y) local t = x * 1; t:remainder_(y); return t end, {a, b})
    gradcheck(function(x, y) local t = x * 1; t:fmod_(y); return t end, {a, b})
    gradcheck(function(x, y) local t = x * 1; t:atan2_(y); return t end, {a, b})
    gradcheck(function(x, y) local t = x * 1; t:hypot_(y); return t end, {a, b})
    gradcheck(function(x, y) local t = x * 1; t:copysign_(y); return t end, {a, b})
    gradcheck(function(x, y) local t = x * 1; t:xlogy_(y:abs() + 0.1); return t end, {a, b})
    gradcheck(function(x, y) local t = x * 1; t:lerp_(y, 0.3); return t end, {a, b})
    gradcheck(function(x, y, z) local t = x * 1; t:lerp_(y, z); return t end, {a, b, f64({{0.2}, {0.8}})})
    gradcheck(function(x) local t = x * 1; t:lerp_(t * 2, t); return t end, {a})
    gradcheck(function(x) local t = x * 1; t:remainder_(x:abs() + 0.5); return t end, {a})
  end)

  it("the backward sees inputs modified in place as an error", function()
    local x = pt.tensor({0.5, 1.5}, {dtype = "float64", requires_grad = true})
    local y = pt.tensor({2, 3}, {dtype = "float64"})
    local z = pt.atan2(x, y)
    y:add_(1)
    assert.matches("modified by an inplace operation", errmsg(function() z:sum():backward() end))
    local w = pt.tensor({0.5, 0.5}, {dtype = "float64"})
    local l = pt.lerp(x, y, w)
    w:mul_(2)
    assert.matches("modified by an inplace operation", errmsg(function() l:sum():backward() end))
  end)
end)

describe("help for the new ops", function()
  it("documents every function and method", function()
    for _, name in ipairs(UNARY) do
      assert.is_string(pt._docs[pt[name]], name)
      assert.is_string(pt._docs[pt.Tensor[name .. "_"]], name .. "_")
    end
    for _, name in ipairs(BINARY) do assert.is_string(pt._docs[pt[name]], name) end
    for _, name in ipairs({"atan2_", "hypot_", "remainder_", "fmod_", "floor_divide_", "xlogy_", "copysign_", "lerp_"}) do
      assert.is_string(pt._docs[pt.Tensor[name]], name)
    end
    assert.is_string(pt._docs[pt.lerp], "lerp")
  end)
end)

describe("float32 transcendentals on long rows (SLEEF's vectorised kernels, 8 lanes at a time)", function()
  -- every value several times over, so that each lands in a vector lane and in the scalar tail
  local base = {0, -0.0, 1e-30, -1e-30, 1e-7, 0.1, -0.3, 0.5, 0.9999, 1, -1, 1.5, 2.5, -4, 9.5, 20,
    -20, 80, -80, 88.5, -103, 1e10, -1e10, math.huge, -math.huge, 0 / 0}
  local vals = {}
  for r = 1, 3 do for _, v in ipairs(base) do vals[#vals + 1] = v end end
  vals[#vals + 1] = 0.25 -- a length that is not a multiple of 8
  local x32 = pt.tensor(vals, {dtype = "float32"})
  local x64 = x32:double() -- the same inputs, in double
  local function ulp32(v)
    local a = math.abs(v)
    if a < 2 ^ -126 then return 2 ^ -149 end
    local _, e = math.frexp(a)
    return 2 ^ (e - 24)
  end
  for _, name in ipairs({"exp", "log", "tanh", "sigmoid", "gelu", "sin", "cos", "erf", "erfc", "log1p",
                         "expm1", "log2", "log10", "exp2", "tan", "asin", "acos", "atan", "sinh", "cosh",
                         "asinh", "acosh", "atanh"}) do
    it(name .. " agrees with the float64 result within 2 ulp, special values included", function()
      local y32, y64 = x32[name](x32):tolist(), x64[name](x64):tolist()
      for i, want in ipairs(y64) do
        local got = y32[i]
        local ok
        if want ~= want then
          ok = got ~= got
        elseif math.abs(want) == math.huge or math.abs(want) > 3.4028234663852886e38 then
          ok = got == (want > 0 and math.huge or -math.huge)
        else
          -- sin/cos/tan of huge arguments: float32 range reduction differs; only the range is checked
          local loose = math.abs(vals[i]) > 1e4 and (name == "sin" or name == "cos" or name == "tan")
          -- gelu's 0.5 x (1 + erf(x / sqrt 2)) cancels for negative x in float32, in PyTorch too
          -- (both give gelu(-4) = -0.000126719475 against -0.000126684967 in double)
          local tol = 2 * ulp32(want) + 2 ^ -149 + (name == "gelu" and 2 ^ -24 * math.abs(vals[i]) or 0)
          ok = loose and math.abs(got) <= (name == "tan" and math.huge or 1) or math.abs(got - want) <= tol
        end
        if not ok then
          error(string.format("%s(%.9g): float32 %.9g, float64 %.17g", name, vals[i], got, want))
        end
      end
    end)
  end
end)

describe("float32 activation gradients on long rows (vectorised derivative kernels)", function()
  local vals = {}
  for i = 1, 37 do vals[i] = (i - 19) * 0.37 end
  for _, name in ipairs({"tanh", "sigmoid", "gelu"}) do
    it(name .. "'s backward agrees with float64's", function()
      local a32 = pt.tensor(vals, {dtype = "float32", requires_grad = true})
      local a64 = pt.tensor(vals, {dtype = "float64", requires_grad = true})
      a32[name](a32):sum():backward()
      a64[name](a64):sum():backward()
      local g32, g64 = a32.grad:tolist(), a64.grad:tolist()
      for i = 1, #vals do
        if math.abs(g32[i] - g64[i]) > 1e-6 then
          error(string.format("%s'(%g): float32 %.9g, float64 %.17g", name, vals[i], g32[i], g64[i]))
        end
      end
    end)
  end
end)

describe("review fixes", function()
  it("float32 asinh and acosh of huge values are finite on long rows (SLEEF's overflow at 1.8e19)", function()
    local a = pt.full({9}, 1e20):asinh():tolist()
    local c = pt.full({9}, 3e38):acosh():tolist()
    for i = 1, 9 do
      assert.is_true(math.abs(a[i] - 46.744849) < 1e-4, tostring(a[i]))
      assert.is_true(math.abs(c[i] - 89.28999) < 1e-3, tostring(c[i])) -- log(2 * 3e38)
    end
    assert.is_true(math.abs(pt.full({9}, -2e19):asinh():tolist()[9] + 45.13541) < 1e-3) -- -log(4e19)
  end)
  it("in-place floor_, ceil_, round_, sign_, floor_divide_ give a zero gradient, as PyTorch", function()
    for _, m in ipairs({"floor_", "ceil_", "round_", "sign_"}) do
      local a = pt.tensor({0.5, 2.5, 1.1}, {dtype = "float64", requires_grad = true})
      local y = a * 2
      y[m](y)
      y:sum():backward()
      assert.are.same({0, 0, 0}, a.grad:tolist(), m)
    end
    local a = pt.tensor({0.5, 2.5, 1.1}, {dtype = "float64", requires_grad = true})
    local y = a * 2
    y:floor_divide_(pt.tensor({0.7, 0.9, 2.1}, {dtype = "float64"}))
    y:sum():backward()
    assert.are.same({0, 0, 0}, a.grad:tolist())
    -- used again after the in-place op: only the other path carries gradient
    local b = pt.tensor({0.5, 2.5, 1.1}, {dtype = "float64", requires_grad = true})
    local z = b * 2
    z:floor_()
    local w = z * b
    w:sum():backward()
    assert.are.same({1, 5, 2}, b.grad:tolist())
  end)
  it("copy_ over a value saved for a backward is caught, as other in-place ops", function()
    local a = pt.tensor({0.5, 2, -3}, {dtype = "float64", requires_grad = true})
    local b = a * 1
    local y = b:clamp(-1, 1)
    b:copy_(y)
    local ok, e = pcall(function() y:sum():backward() end)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("ClampBackward: one of the variables needed for gradient computation has been modified by an inplace operation", 1, true))
  end)
end)
