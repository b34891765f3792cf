-- The fused activation layers (lib/nn_activation.c): nn.relu, leaky_relu, gelu (exact and tanh),
-- tanh, sigmoid, silu and their nn.Module forms, and nn_extra's element-wise activations (elu,
-- selu, celu, softplus, mish, hardtanh, relu6, hardswish, hardsigmoid, softsign, tanhshrink,
-- threshold, logsigmoid, softshrink, hardshrink). float32 runs 8 lanes at a time (SLEEF, and
-- Abramowitz-Stegun's erf inside GELU), large tensors on the intra-op threads; these specs pin
-- the float32 results to the float64 ones over long rows (vector body, scalar tail, parallel
-- chunks), the special values to PyTorch 1.13's, and the backward to the float64 backward.
local pt = require "partrain"
local nn = pt.nn

local inf, nan = math.huge, 0 / 0

local fns = {
  relu = nn.relu,
  leaky_relu = function(x) return nn.leaky_relu(x, 0.2) end,
  gelu = nn.gelu,
  gelu_tanh = function(x) return nn.gelu(x, {approximate = "tanh"}) end,
  tanh = nn.tanh,
  sigmoid = nn.sigmoid,
  silu = nn.silu,
}
local names = {"relu", "leaky_relu", "gelu", "gelu_tanh", "tanh", "sigmoid", "silu"}

describe("activation layers in float32 against float64", function()
  -- 70001 elements: several parallel chunks of 8-lane blocks and a scalar tail
  local x32 = pt.linspace(-12, 12, 70001)
  local x64 = x32:double()
  for _, name in ipairs(names) do
    it(name .. ": forward and backward within a few float32 ulps of float64 (scaled by 1 + |x|)", function()
      local a32 = x32:clone():requires_grad_()
      local a64 = x64:clone():requires_grad_()
      local y32, y64 = fns[name](a32), fns[name](a64)
      assert.are.equal("float32", y32:dtype())
      y32:sum():backward()
      y64:sum():backward()
      local scale = x64:abs() + 1
      local fwd = ((y32:double() - y64):abs() / scale):max():item()
      local bwd = ((a32.grad:double() - a64.grad):abs() / scale):max():item()
      assert.is_true(fwd <= 3e-7, string.format("%s forward off by %g", name, fwd))
      assert.is_true(bwd <= 3e-7, string.format("%s backward off by %g", name, bwd))
    end)
  end

  it("the module forms give the function forms' numbers", function()
    local x = pt.linspace(-5, 5, 40000)
    assert.is_true(nn.GELU()(x):equal(nn.gelu(x)))
    assert.is_true(nn.GELU({approximate = "tanh"})(x):equal(nn.gelu(x, {approximate = "tanh"})))
    assert.is_true(nn.SiLU()(x):equal(nn.silu(x)))
    assert.is_true(nn.Tanh()(x):equal(nn.tanh(x)))
    assert.is_true(nn.Sigmoid()(x):equal(nn.sigmoid(x)))
    assert.is_true(nn.LeakyReLU(0.2)(x):equal(nn.leaky_relu(x, 0.2)))
  end)
end)

describe("activation layers' special values (as PyTorch 1.13)", function()
  -- torch.nn.functional.<f>(torch.tensor([-inf, inf, nan])), each value repeated so that it
  -- lands in vector lanes and in the tail
  local want = {
    relu = {0, inf, nan}, leaky_relu = {-inf, inf, nan}, gelu = {nan, inf, nan},
    gelu_tanh = {nan, inf, nan}, tanh = {-1, 1, nan}, sigmoid = {0, 1, nan}, silu = {nan, inf, nan},
  }
  local vals = {}
  for r = 1, 7 do
    vals[#vals + 1] = -inf
    vals[#vals + 1] = inf
    vals[#vals + 1] = nan
  end
  for _, dtype in ipairs({"float32", "float64"}) do
    for _, name in ipairs(names) do
      it(name .. " (" .. dtype .. ")", function()
        local y = fns[name](pt.tensor(vals, {dtype = dtype})):tolist()
        for i, got in ipairs(y) do
          local w = want[name][(i - 1) % 3 + 1]
          if w ~= w then
            assert.is_true(got ~= got, string.format("%s(%s): %s, expected nan", name, vals[i], got))
          else
            assert.are.equal(w, got, string.format("%s(%s)", name, vals[i]))
          end
        end
      end)
    end
  end

  it("ReLU passes the gradient of NaN inputs and blocks that of -0 and negatives", function()
    local x = pt.tensor({nan, -0.0, -1, 2}, {requires_grad = true})
    nn.relu(x):sum():backward()
    assert.are.same({1, 0, 0, 1}, x.grad:tolist())
  end)
end)

-- nn_extra's activations: float32 runs 8 lanes at a time (its own exp, expm1 and log1p for
-- them, Cephes' reduction), float64 and the scalar tail in double
local F = nn.functional
local extra = {
  elu = F.elu, elu_a = function(x) return F.elu(x, 0.5) end, selu = F.selu,
  celu = function(x) return F.celu(x, 2.5) end, softplus = F.softplus,
  softplus_b = function(x) return F.softplus(x, -1, 5) end, mish = F.mish, hardtanh = F.hardtanh,
  relu6 = F.relu6, hardswish = F.hardswish, hardsigmoid = F.hardsigmoid, softsign = F.softsign,
  tanhshrink = F.tanhshrink, threshold = function(x) return F.threshold(x, 0.5, -7) end,
  logsigmoid = F.logsigmoid, softshrink = F.softshrink, hardshrink = F.hardshrink,
}
local extra_names = {"elu", "elu_a", "selu", "celu", "softplus", "softplus_b", "mish", "hardtanh",
  "relu6", "hardswish", "hardsigmoid", "softsign", "tanhshrink", "threshold", "logsigmoid",
  "softshrink", "hardshrink"}

describe("nn_extra's activations in float32 against float64", function()
  -- 70001 elements from -12 to 12, then -90 to 90 (exp's range ends, infinities of the
  -- intermediate terms), then -0.01 to 0.01 (expm1 and tanh near 0)
  for _, range in ipairs({{-12, 12}, {-90, 90}, {-0.01, 0.01}}) do
    local x32 = pt.linspace(range[1], range[2], 70001)
    local x64 = x32:double()
    for _, name in ipairs(extra_names) do
      it(string.format("%s on [%g, %g]: forward and backward within a few float32 ulps (scaled by 1 + |x|)",
        name, range[1], range[2]), function()
        local a32 = x32:clone():requires_grad_()
        local a64 = x64:clone():requires_grad_()
        local y32, y64 = extra[name](a32), extra[name](a64)
        assert.are.equal("float32", y32:dtype())
        y32:sum():backward()
        y64:sum():backward()
        local scale = x64:abs() + 1
        local fwd = ((y32:double() - y64):abs() / scale):max():item()
        local bwd = ((a32.grad:double() - a64.grad):abs() / scale):max():item()
        assert.is_true(fwd <= 3e-7, string.format("%s forward off by %g", name, fwd))
        assert.is_true(bwd <= 3e-7, string.format("%s backward off by %g", name, bwd))
      end)
    end
  end
end)

describe("nn_extra's activations at special values and kinks (as PyTorch 1.13)", function()
  -- torch.nn.functional.<f> on these values repeated 7 times, forward and gradient (of sum), as
  -- its vectorised loops compute them (every tensor of 8+ elements; its scalar loop differs for a
  -- few, e.g. ELU's gradient of NaN); here every repetition, vector lanes and tail, must match.
  -- elu_a: alpha 0.5; celu: alpha 2.5; softplus_b: beta -1, threshold 5; threshold: 0.5, -7.
  -- PyTorch 1.13's float64 hardsigmoid gradient is float32's 1/6; here it is float64's.
  local vals = {-inf, inf, nan, 0, -3, 3, 6, -1, 1, 0.5, -0.5, 5, 20, -20}
  local want = {
  float32 = {
    elu = {{-1.0, inf, nan, 0.0, -0.9502129554748535, 3.0, 6.0, -0.6321205496788025, 1.0, 0.5, -0.39346933364868164, 5.0, 20.0, -1.0},
      {0.0, 1.0, nan, 1.0, 0.049787066876888275, 1.0, 1.0, 0.3678794503211975, 1.0, 1.0, 0.6065306663513184, 1.0, 1.0, 2.06115369216775e-09}},
    elu_a = {{-0.5, inf, nan, 0.0, -0.47510647773742676, 3.0, 6.0, -0.31606027483940125, 1.0, 0.5, -0.19673466682434082, 5.0, 20.0, -0.5},
      {0.0, 1.0, nan, 0.5, 0.024893533438444138, 1.0, 1.0, 0.18393972516059875, 1.0, 1.0, 0.3032653331756592, 1.0, 1.0, 1.030576846083875e-09}},
    selu = {{-1.7580993175506592, inf, nan, 0.0, -1.6705687046051025, 3.1521029472351074, 6.304205894470215, -1.1113307476043701, 1.0507010221481323, 0.5253505110740662, -0.6917581558227539, 5.253505229949951, 21.014020919799805, -1.7580993175506592},
      {0.0, 1.0507010221481323, nan, 1.7580993175506592, 0.08753060549497604, 1.0507010221481323, 1.0507010221481323, 0.6467686295509338, 1.0507010221481323, 1.0507010221481323, 1.0663411617279053, 1.0507010221481323, 1.0507010221481323, 3.6237128853144895e-09}},
    celu = {{-2.5, inf, nan, 0.0, -1.7470145225524902, 3.0, 6.0, -0.824199914932251, 1.0, 0.5, -0.45317307114601135, 5.0, 20.0, -2.4991612434387207},
      {0.0, 1.0, nan, 1.0, 0.3011941909790039, 1.0, 1.0, 0.6703200340270996, 1.0, 1.0, 0.8187307715415955, 1.0, 1.0, 0.000335462624207139}},
    softplus = {{0.0, inf, nan, 0.6931471824645996, 0.04858735203742981, 3.0485873222351074, 6.002475738525391, 0.3132616877555847, 1.31326162815094, 0.9740769863128662, 0.4740769863128662, 5.006715297698975, 20.0, 2.06115369216775e-09},
      {0.0, 1.0, nan, 0.5, 0.04742587357759476, 0.9525741338729858, 0.9975273609161377, 0.2689414322376251, 0.7310585975646973, 0.622459352016449, 0.3775406777858734, 0.9933071732521057, 1.0, 2.06115369216775e-09}},
    softplus_b = {{-inf, -0.0, nan, -0.6931471824645996, -3.0485873222351074, -0.04858735203742981, -0.0024756852071732283, -1.31326162815094, -0.3132616877555847, -0.4740769863128662, -0.9740769863128662, -0.006715348456054926, -2.06115369216775e-09, -20.0},
      {1.0, 0.0, nan, 0.5, 0.9525741338729858, 0.04742587357759476, 0.0024726232513785362, 0.7310585975646973, 0.2689414322376251, 0.3775406777858734, 0.622459352016449, 0.006692850962281227, 2.06115369216775e-09, 1.0}},
    mish = {{nan, inf, nan, 0.0, -0.14564746618270874, 2.98653507232666, 5.999926567077637, -0.30340147018432617, 0.8650983572006226, 0.37524521350860596, -0.22074377536773682, 4.999552249908447, 20.0, -4.1223074731533416e-08},
      {nan, nan, nan, 0.6000000238418579, -0.09339312463998795, 1.0211069583892822, 1.000133991241455, 0.059216760098934174, 1.0490362644195557, 0.8864243626594543, 0.28951066732406616, 1.0008002519607544, 1.0, -3.916192170549948e-08}},
    hardtanh = {{-1.0, 1.0, nan, 0.0, -1.0, 1.0, 1.0, -1.0, 1.0, 0.5, -0.5, 1.0, 1.0, -1.0},
      {0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0}},
    relu6 = {{0.0, 6.0, nan, 0.0, 0.0, 3.0, 6.0, 0.0, 1.0, 0.5, 0.0, 5.0, 6.0, 0.0},
      {0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0}},
    hardswish = {{nan, inf, nan, 0.0, -0.0, 3.0, 6.0, -0.3333333432674408, 0.6666666865348816, 0.2916666567325592, -0.2083333283662796, 5.0, 20.0, -0.0},
      {0.0, 1.0, nan, 0.5, -0.5, 1.0, 1.0, 0.1666666567325592, 0.8333333730697632, 0.6666666865348816, 0.3333333134651184, 1.0, 1.0, 0.0}},
    hardsigmoid = {{0.0, 1.0, nan, 0.5, 0.0, 1.0, 1.0, 0.3333333432674408, 0.6666666865348816, 0.5833333134651184, 0.4166666567325592, 1.0, 1.0, 0.0},
      {0.0, 0.0, 0.0, 0.1666666716337204, 0.0, 0.0, 0.0, 0.1666666716337204, 0.1666666716337204, 0.1666666716337204, 0.1666666716337204, 0.0, 0.0, 0.0}},
    softsign = {{nan, nan, nan, 0.0, -0.75, 0.75, 0.8571428656578064, -0.5, 0.5, 0.3333333432674408, -0.3333333432674408, 0.8333333134651184, 0.9523809552192688, -0.9523809552192688},
      {nan, nan, nan, 1.0, 0.0625, 0.0625, 0.02040816843509674, 0.25, 0.25, 0.444444477558136, 0.444444477558136, 0.027777791023254395, 0.0022675730288028717, 0.0022675730288028717}},
    tanhshrink = {{-inf, inf, nan, 0.0, -2.0049452781677246, 2.0049452781677246, 5.000012397766113, -0.23840582370758057, 0.23840582370758057, 0.037882834672927856, -0.037882834672927856, 4.000090599060059, 19.0, -19.0},
      {1.0, 1.0, nan, 0.0, 0.9901340007781982, 0.9901340007781982, 0.9999754428863525, 0.5800256729125977, 0.5800256729125977, 0.2135522961616516, 0.2135522961616516, 0.9998184442520142, 1.0, 1.0}},
    threshold = {{-7.0, inf, nan, -7.0, -7.0, 3.0, 6.0, -7.0, 1.0, -7.0, -7.0, 5.0, 20.0, -7.0},
      {0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0}},
    logsigmoid = {{-inf, 0.0, nan, -0.6931471824645996, -3.0485873222351074, -0.04858735203742981, -0.0024756852071732283, -1.3132617473602295, -0.3132616877555847, -0.4740769863128662, -0.9740769863128662, -0.006715348456054926, -2.06115369216775e-09, -20.0},
      {1.0, 0.0, nan, 0.5, 0.9525741338729858, 0.04742587357759476, 0.0024726232513785362, 0.7310585975646973, 0.2689414322376251, 0.3775406777858734, 0.6224592924118042, 0.006692850962281227, 2.06115369216775e-09, 1.0}},
    softshrink = {{-inf, inf, 0.0, 0.0, -2.5, 2.5, 5.5, -0.5, 0.5, 0.0, 0.0, 4.5, 19.5, -19.5},
      {1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0}},
    hardshrink = {{-inf, inf, nan, 0.0, -3.0, 3.0, 6.0, -1.0, 1.0, 0.0, 0.0, 5.0, 20.0, -20.0},
      {1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0}},
  },
  float64 = {
    elu = {{-1.0, inf, nan, 0.0, -0.950212931632136, 3.0, 6.0, -0.6321205588285577, 1.0, 0.5, -0.3934693402873666, 5.0, 20.0, -0.9999999979388464},
      {0.0, 1.0, nan, 1.0, 0.049787068367863944, 1.0, 1.0, 0.36787944117144233, 1.0, 1.0, 0.6065306597126334, 1.0, 1.0, 2.061153622438558e-09}},
    elu_a = {{-0.5, inf, nan, 0.0, -0.475106465816068, 3.0, 6.0, -0.31606027941427883, 1.0, 0.5, -0.1967346701436833, 5.0, 20.0, -0.4999999989694232},
      {0.0, 1.0, nan, 0.5, 0.024893534183931972, 1.0, 1.0, 0.18393972058572117, 1.0, 1.0, 0.3032653298563167, 1.0, 1.0, 1.030576811219279e-09}},
    selu = {{-1.7580993408473766, inf, nan, 0.0, -1.6705687287671118, 3.1521029620664414, 6.304205924132883, -1.1113307378125625, 1.0507009873554805, 0.5253504936777402, -0.6917581878028713, 5.253504936777402, 21.014019747109607, -1.758099337223664},
      {0.0, 1.0507009873554805, nan, 1.7580993408473766, 0.08753061208026487, 1.0507009873554805, 1.0507009873554805, 0.646768603034814, 1.0507009873554805, 1.0507009873554805, 1.0663411530445053, 1.0507009873554805, 1.0507009873554805, 3.6237128249944113e-09}},
    celu = {{-2.5, inf, nan, 0.0, -1.747014470219495, 3.0, 6.0, -0.824199884910902, 1.0, 0.5, -0.45317311730504545, 5.0, 20.0, -2.4991613434302438},
      {0.0, 1.0, nan, 1.0, 0.301194211912202, 1.0, 1.0, 0.6703200460356392, 1.0, 1.0, 0.8187307530779818, 1.0, 1.0, 0.00033546262790251185}},
    softplus = {{0.0, inf, nan, 0.6931471805599453, 0.04858735157374206, 3.048587351573742, 6.00247568513773, 0.31326168751822286, 1.3132616875182228, 0.9740769841801067, 0.4740769841801067, 5.006715348489118, 20.000000002061153, 2.061153620314381e-09},
      {0.0, 1.0, nan, 0.5, 0.04742587317756679, 0.9525741268224333, 0.9975273768433652, 0.2689414213699951, 0.7310585786300049, 0.6224593312018546, 0.37754066879814546, 0.9933071490757152, 0.9999999979388464, 2.0611536181902033e-09}},
    softplus_b = {{-inf, -0.0, nan, -0.6931471805599453, -3.048587351573742, -0.04858735157374206, -0.0024756851377304495, -1.3132616875182228, -0.31326168751822286, -0.4740769841801067, -0.9740769841801067, -0.006715348489118068, -2.061153620314381e-09, -20.0},
      {1.0, 0.0, nan, 0.5, 0.9525741268224333, 0.04742587317756679, 0.0024726231566347748, 0.7310585786300049, 0.2689414213699951, 0.37754066879814546, 0.6224593312018546, 0.006692850924284856, 2.0611536181902033e-09, 1.0}},
    mish = {{nan, inf, nan, 0.0, -0.1456474612756246, 2.9865350049679575, 5.999926634065252, -0.30340146137410895, 0.8650983882673103, 0.37524521130489513, -0.22074377465173, 4.999552077529406, 20.0, -4.122307240628762e-08},
      {nan, nan, nan, 0.6, -0.09339311453232084, 1.0211069109294435, 1.00013414050621, 0.059216755877395014, 1.0490362200997922, 0.8864243753577273, 0.28951067791351226, 1.0008002248320829, 1.0, -3.916191874348969e-08}},
    hardtanh = {{-1.0, 1.0, nan, 0.0, -1.0, 1.0, 1.0, -1.0, 1.0, 0.5, -0.5, 1.0, 1.0, -1.0},
      {0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0}},
    relu6 = {{0.0, 6.0, nan, 0.0, 0.0, 3.0, 6.0, 0.0, 1.0, 0.5, 0.0, 5.0, 6.0, 0.0},
      {0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0}},
    hardswish = {{nan, inf, nan, 0.0, -0.0, 3.0, 6.0, -0.3333333333333333, 0.6666666666666666, 0.2916666666666667, -0.20833333333333334, 5.0, 20.0, -0.0},
      {0.0, 1.0, nan, 0.5, -0.5, 1.0, 1.0, 0.16666666666666669, 0.8333333333333333, 0.6666666666666666, 0.33333333333333337, 1.0, 1.0, 0.0}},
    hardsigmoid = {{0.0, 1.0, nan, 0.5, 0.0, 1.0, 1.0, 0.3333333333333333, 0.6666666666666666, 0.5833333333333334, 0.4166666666666667, 1.0, 1.0, 0.0},
      {0.0, 0.0, 0.0, 0.16666666666666666, 0.0, 0.0, 0.0, 0.16666666666666666, 0.16666666666666666, 0.16666666666666666, 0.16666666666666666, 0.0, 0.0, 0.0}},
    softsign = {{nan, nan, nan, 0.0, -0.75, 0.75, 0.8571428571428571, -0.5, 0.5, 0.3333333333333333, -0.3333333333333333, 0.8333333333333334, 0.9523809523809523, -0.9523809523809523},
      {nan, nan, nan, 1.0, 0.0625, 0.0625, 0.020408163265306117, 0.25, 0.25, 0.4444444444444444, 0.4444444444444444, 0.027777777777777762, 0.0022675736961451226, 0.0022675736961451226}},
    tanhshrink = {{-inf, inf, nan, 0.0, -2.0049452463132695, 2.0049452463132695, 5.000012288349204, -0.23840584404423515, 0.23840584404423515, 0.03788284273999026, -0.03788284273999026, 4.000090795737405, 19.0, -19.0},
      {1.0, 1.0, nan, 0.0, 0.9901339628345598, 0.9901339628345598, 0.9999754234525947, 0.5800256583859739, 0.5800256583859739, 0.2135522670340726, 0.2135522670340726, 0.9998184167690561, 1.0, 1.0}},
    threshold = {{-7.0, inf, nan, -7.0, -7.0, 3.0, 6.0, -7.0, 1.0, -7.0, -7.0, 5.0, 20.0, -7.0},
      {0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0}},
    logsigmoid = {{-inf, 0.0, nan, -0.6931471805599453, -3.048587351573742, -0.04858735157374206, -0.0024756851377304495, -1.3132616875182228, -0.31326168751822286, -0.4740769841801067, -0.9740769841801067, -0.006715348489118068, -2.061153620314381e-09, -20.000000002061153},
      {1.0, 0.0, nan, 0.5, 0.9525741268224333, 0.04742587317756679, 0.0024726231566347748, 0.7310585786300049, 0.2689414213699951, 0.37754066879814546, 0.6224593312018545, 0.006692850924284856, 2.0611536181902033e-09, 0.9999999979388464}},
    softshrink = {{-inf, inf, 0.0, 0.0, -2.5, 2.5, 5.5, -0.5, 0.5, 0.0, 0.0, 4.5, 19.5, -19.5},
      {1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0}},
    hardshrink = {{-inf, inf, nan, 0.0, -3.0, 3.0, 6.0, -1.0, 1.0, 0.0, 0.0, 5.0, 20.0, -20.0},
      {1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0}},
  },
  }
  local function close(got, w, tol)
    if w ~= w then return got ~= got end
    if w == inf or w == -inf then return got == w end
    return math.abs(got - w) <= tol * math.max(1, math.abs(w))
  end
  local xs = {}
  for r = 1, 7 do
    for _, v in ipairs(vals) do xs[#xs + 1] = v end
  end
  for _, dtype in ipairs({"float32", "float64"}) do
    local tol = dtype == "float32" and 3e-7 or 1e-12
    for _, name in ipairs(extra_names) do
      it(name .. " (" .. dtype .. ")", function()
        local x = pt.tensor(xs, {dtype = dtype, requires_grad = true})
        local y = extra[name](x)
        y:sum():backward()
        local yl, gl = y:tolist(), x.grad:tolist()
        for i = 1, #xs do
          local k = (i - 1) % #vals + 1
          local wy, wg = want[dtype][name][1][k], want[dtype][name][2][k]
          assert.is_true(close(yl[i], wy, tol), string.format("%s(%s) = %s, expected %s", name, xs[i], yl[i], wy))
          assert.is_true(close(gl[i], wg, tol), string.format("%s'(%s) = %s, expected %s", name, xs[i], gl[i], wg))
        end
      end)
    end
  end
end)

describe("activation outputs changed in place before backward (as PyTorch)", function()
  it("GELU, SiLU and LeakyReLU differentiate through their input; ReLU, Tanh and Sigmoid refuse", function()
    for _, f in ipairs({nn.gelu, nn.silu, function(x) return nn.leaky_relu(x, 0.1) end}) do
      local x = pt.randn(6, {dtype = "float64", requires_grad = true})
      local ref = pt.autograd.grad(f(x):sum(), x)
      local y = f(x)
      y:mul_(2) -- the gradient reaching f is still 1 per element
      y:sum():backward()
      assert.is_true(pt.allclose(x.grad, ref * 2))
    end
    for name, f in pairs({ReluBackward = nn.relu, TanhBackward = nn.tanh, SigmoidBackward = nn.sigmoid}) do
      local x = pt.randn(6, {requires_grad = true})
      local y = f(x)
      y:add_(1)
      local ok, err = pcall(function() y:sum():backward() end)
      assert.is_false(ok)
      assert.is_truthy(tostring(err):find(name .. ": one of the variables needed for gradient computation has been modified by an inplace operation", 1, true))
    end
  end)
end)
