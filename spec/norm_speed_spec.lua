-- The normalisation kernels (batch norm in lib/conv.c, layer norm in lib/nn.c) by their layouts and
-- edge cases: column tiles and plane runs with their remainders, rows in groups of 4, a constant
-- channel, large means, evaluation with one sample, a leaf input's gradient written in place, and
-- results that do not depend on the thread count. References: PyTorch 1.13 in float64 on the same
-- float32 inputs for the small cases (its float32 layer_norm gradient is 2e-5 off there), two-pass
-- float64 sums in plain Lua for the shapes that cross the kernels' tile and run sizes.
local pt = require "partrain"
local nn = pt.nn
local support = require "spec.support"
local flat = support.flat

local F32, F64 = {dtype = "float32"}, {dtype = "float64"}

-- v(i) = sin(0.37 i + phase) * scale + offset for i = 0 .. n-1 (libm's sin, as Python's math.sin)
local function values(n, phase, scale, offset)
  local v = {}
  for i = 0, n - 1 do v[i + 1] = math.sin(0.37 * i + phase) * scale + offset end
  return v
end

local function data(shape, phase, scale, offset, opts)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return pt.tensor(values(n, phase, scale or 1, offset or 0), opts or F32):reshape(shape)
end

-- every element of t within tol * max(1, |expected|) of the expected list (or tensor)
local function near(t, expected, tol)
  local a = flat(t:tolist())
  local b = pt.is_tensor(expected) and flat(expected:tolist()) or expected
  assert.are.equal(#b, #a)
  for i = 1, #a do
    if not (math.abs(a[i] - b[i]) <= tol * math.max(1, math.abs(b[i]))) then
      error(string.format("element %d: got %.9g, expected %.9g", i, a[i], b[i]), 2)
    end
  end
end

-- Batch norm in float64 Lua: x {N,C,S} (a flat list, as x:tolist() flattened), per channel
-- biased statistics by two passes; returns y, gx, gw, gb (flat lists) and the means and
-- unbiased variances. w, b, g: flat lists or nil.
local function bn_reference(x, N, C, S, w, b, g, eps)
  local y, gx, gw, gb, means, vars = {}, {}, {}, {}, {}, {}
  for c = 1, C do
    local idx = {}
    for n = 0, N - 1 do
      for s = 1, S do idx[#idx + 1] = (n * C + c - 1) * S + s end
    end
    local M, sum = #idx, 0
    for _, i in ipairs(idx) do sum = sum + x[i] end
    local mean, ss = sum / M, 0
    for _, i in ipairs(idx) do ss = ss + (x[i] - mean) ^ 2 end
    local rstd, wc, bc = 1 / math.sqrt(ss / M + eps), w and w[c] or 1, b and b[c] or 0
    means[c], vars[c] = mean, ss / (M - 1)
    local sg, sgx = 0, 0
    for _, i in ipairs(idx) do
      local xh = (x[i] - mean) * rstd
      y[i] = xh * wc + bc
      if g then
        sg, sgx = sg + g[i], sgx + g[i] * xh
      end
    end
    if g then
      gw[c], gb[c] = sgx, sg
      for _, i in ipairs(idx) do
        gx[i] = wc * rstd * (g[i] - sg / M - (x[i] - mean) * rstd * sgx / M)
      end
    end
  end
  return y, gx, gw, gb, means, vars
end

-- Layer norm in float64 Lua over rows of D: y, gx, gw, gb
local function ln_reference(x, M, D, w, b, g, eps)
  local y, gx, gw, gb = {}, {}, {}, {}
  for j = 1, D do gw[j], gb[j] = 0, 0 end
  for r = 0, M - 1 do
    local sum, ss = 0, 0
    for j = 1, D do sum = sum + x[r * D + j] end
    local mean = sum / D
    for j = 1, D do ss = ss + (x[r * D + j] - mean) ^ 2 end
    local rstd, s1, s2 = 1 / math.sqrt(ss / D + eps), 0, 0
    for j = 1, D do
      local i = r * D + j
      local xh = (x[i] - mean) * rstd
      y[i] = xh * w[j] + b[j]
      local gh = g[i] * w[j]
      s1, s2 = s1 + gh, s2 + gh * xh
      gw[j], gb[j] = gw[j] + g[i] * xh, gb[j] + g[i]
    end
    for j = 1, D do
      local i = r * D + j
      gx[i] = rstd * (g[i] * w[j] - s1 / D - (x[i] - mean) * rstd * s2 / D)
    end
  end
  return y, gx, gw, gb
end

-- pt.batch_norm in training mode with grads, against bn_reference; tol for y and gx, gtol for
-- the sums gw, gb (relative to their largest)
local function check_bn(shape, dt, x_opts, tol, gtol)
  local N, C, S = shape[1], shape[2], 1
  for i = 3, #shape do S = S * shape[i] end
  local opts = {dtype = dt}
  local x = data(shape, 0.1, x_opts.scale, x_opts.offset, opts):requires_grad_()
  if x_opts.constant then -- channel 2 holds one value
    pt.no_grad(function() x:select(2, 2):fill_(3.25) end)
  end
  local w = data({C}, 1, 0.5, 1, opts):requires_grad_()
  local b = data({C}, 2, 0.5, 0, opts):requires_grad_()
  local g = data(shape, 3, 1, 0, opts)
  local rm, rv = pt.zeros(C, opts), pt.ones(C, opts)
  local y = pt.batch_norm(x, rm, rv, w, b, {training = true, momentum = 0.1, eps = 1e-5})
  y:backward(g)
  local ry, rgx, rgw, rgb, means, vars = bn_reference(flat(x:tolist()), N, C, S, flat(w:tolist()),
    flat(b:tolist()), flat(g:tolist()), 1e-5)
  near(y, ry, tol)
  near(x.grad, rgx, tol)
  local big = 0
  for c = 1, C do big = math.max(big, math.abs(rgw[c]), math.abs(rgb[c])) end
  near(w.grad / big, pt.tensor(rgw, F64) / big, gtol)
  near(b.grad / big, pt.tensor(rgb, F64) / big, gtol)
  local em, ev = {}, {}
  for c = 1, C do em[c], ev[c] = 0.1 * means[c], 0.9 + 0.1 * vars[c] end
  near(rm, em, tol)
  near(rv, ev, tol)
  return y, x, rv
end

describe("batch_norm kernels", function()
  it("match PyTorch on a small BatchNorm1d batch (float32, training, running statistics)", function()
    local x = data({6, 3}, 0, 2, 0.5):requires_grad_()
    local w = data({3}, 1, 0.5, 1):requires_grad_()
    local b = data({3}, 2, 0.5, 0):requires_grad_()
    local rm, rv = pt.zeros(3), pt.ones(3)
    local y = pt.batch_norm(x, rm, rv, w, b, {training = true, momentum = 0.1, eps = 1e-5})
    y:backward(data({6, 3}, 3))
    near(y, {0.498460863, 1.13766598, 1.61006241, 2.34659589, 2.52237492, 2.23208121, 2.14204982, 1.49227584,
      0.540030783, 0.11200743, -0.808523919, -1.58676742, -1.4888102, -1.82457911, -1.78612757, -0.882411578,
      -0.427380538, 0.163374945}, 1e-6)
    near(x.grad, {0.137679667, 0.134465838, 0.0998546183, 0.0628019467, 0.00476336547, -0.057270536,
      -0.090613912, -0.140365083, -0.159984738, -0.152172293, -0.139728669, -0.0942056184, -0.0535018866,
      0.00596577423, 0.0670074609, 0.0958064782, 0.134898774, 0.144598813}, 1e-6)
    near(w.grad, {-4.11672009, -4.05356175, -4.06415527}, 1e-6)
    near(b.grad, {0.1729526, 0.0489599258, -0.0816593617}, 1e-6)
    near(rm, {0.0457532873, 0.0500403677, 0.0543219845}, 1e-7)
    near(rv, {1.12757359, 1.12356803, 1.12771688}, 1e-7)
  end)

  it("evaluate one sample with the running statistics (BatchNorm2d form {1,C,H,W}), as PyTorch", function()
    local x = data({1, 3, 2, 2}, 0.5, 3, 1)
    local rm, rv = pt.tensor({0.25, -0.5, 1.5}), pt.tensor({0.5, 2.0, 1.25})
    local y = pt.batch_norm(x, rm, rv, data({3}, 1, 0.5, 1), data({3}, 2, 0.5, 0), {training = false})
    near(y, {4.85134111, 6.56862793, 7.66236822, 7.98452977, 4.82868087, 4.17769654, 3.2223574, 2.09196441,
      -1.72619849, -3.01706512, -3.96349369, -4.43738975}, 1e-6)
    -- and {1,C}: the column layout
    local bn = nn.BatchNorm1d(3)
    bn:eval()
    bn.running_mean:copy_(rm)
    bn.running_var:copy_(rv)
    local x1 = data({1, 3}, 0.5, 3, 1)
    local e = {}
    for c, v in ipairs(x1:tolist()[1]) do e[c] = (v - rm:tolist()[c]) / math.sqrt(rv:tolist()[c] + 1e-5) end
    near(bn(x1), e, 1e-6)
  end)

  it("combine column tiles and their remainders (BatchNorm1d {131,2100}) as two passes in float64 would", function()
    check_bn({131, 2100}, "float32", {}, 1e-6, 1e-5)
    check_bn({70, 50, 3}, "float32", {}, 1e-6, 1e-5) -- {N,C,L}: a channel's L columns merged
    check_bn({67, 9}, "float64", {}, 1e-12, 1e-12)
  end)

  it("combine plane runs (S = 33, and S = 4900 longer than a run)", function()
    check_bn({5, 4, 33}, "float32", {}, 1e-6, 1e-5)
    check_bn({2, 3, 70, 70}, "float32", {}, 1e-6, 1e-5)
    check_bn({3, 2, 5, 7}, "float64", {}, 1e-12, 1e-12)
  end)

  it("give a constant channel exactly its bias and a zero variance", function()
    for _, shape in ipairs({{131, 6}, {4, 3, 9, 9}}) do
      local y, x, rv = check_bn(shape, "float32", {constant = true}, 1e-6, 1e-5)
      local bias = data({shape[2]}, 2, 0.5, 0):tolist()[2]
      for _, v in ipairs(flat(y:select(2, 2):tolist())) do assert.are.equal(bias, v) end
      assert.are.equal(pt.tensor(0.9, F32):item(), rv:tolist()[2]) -- 0.9 * 1 + 0.1 * 0
    end
  end)

  it("keep float32 precision for large means (1e4 + sin), where x * scale + shift lost 1e-4", function()
    check_bn({200, 64}, "float32", {offset = 1e4}, 2e-6, 1e-5)
    check_bn({4, 8, 14, 14}, "float32", {offset = 1e4}, 2e-6, 1e-5)
    -- evaluation with a large running mean
    local x = data({64, 8}, 0.3, 1, 1e4)
    local rm = pt.full({8}, 1e4 + 0.125)
    local y = pt.batch_norm(x, rm, pt.ones(8), nil, nil, {training = false})
    local e = {}
    for i, v in ipairs(flat(x:tolist())) do e[i] = (v - (1e4 + 0.125)) / math.sqrt(1 + 1e-5) end
    near(y, e, 1e-6)
  end)
end)

describe("layer_norm kernels", function()
  it("match PyTorch on a small batch (float32)", function()
    local x = data({3, 5}, 0.7, 2, -0.5):requires_grad_()
    local w = data({5}, 1.5, 0.5, 1):requires_grad_()
    local b = data({5}, 2.5, 0.5, 0):requires_grad_()
    local y = nn.layer_norm(x, {5}, w, b)
    y:backward(data({3, 5}, 3.5))
    near(y, {-2.29792479, 0.326759577, 1.40443303, 0.883205306, -0.724307144, 2.44650111, 1.20860514,
      -0.105729826, -1.18664459, -1.83311018, -0.782076112, -1.24067705, -0.794494373, 0.287941693, 1.54858679}, 1e-6)
    near(x.grad, {0.160283178, 0.228340285, 0.136360349, -0.0549037377, -0.470080075, 0.0137603496,
      -0.026636041, 0.00230964303, 0.0238948198, -0.0133287715, -0.330897641, 0.0728808913, 0.20660254,
      0.111019573, -0.059605363}, 1e-6)
    near(w.grad, {-1.11595382, -1.36800286, -1.45537802, -0.646985514, 0.816122796}, 1e-6)
    near(b.grad, {-0.360635519, -0.239616752, -0.0861669928, 0.0789450109, 0.233372271}, 1e-6)
  end)

  it("handle groups of 4 rows, row tails and backward blocks as float64 two-pass sums would", function()
    for _, case in ipairs({{37, 77, "float32", 0}, {21, 4100, "float32", 0}, {18, 19, "float64", 0},
                           {9, 1000, "float32", 1e4}}) do
      local M, D, dt, off = case[1], case[2], case[3], case[4]
      local opts = {dtype = dt}
      local x = data({M, D}, 0.2, 1, off, opts):requires_grad_()
      local w = data({D}, 1, 0.5, 1, opts):requires_grad_()
      local b = data({D}, 2, 0.5, 0, opts):requires_grad_()
      local g = data({M, D}, 3, 1, 0, opts)
      local y = nn.layer_norm(x, {D}, w, b)
      y:backward(g)
      local tol = dt == "float64" and 1e-12 or 2e-6
      local ry, rgx, rgw, rgb = ln_reference(flat(x:tolist()), M, D, flat(w:tolist()), flat(b:tolist()),
        flat(g:tolist()), 1e-5)
      near(y, ry, tol)
      -- large means: the saved statistics are float64, so the gradient keeps float32 precision
      near(x.grad, rgx, tol)
      near(w.grad, rgw, tol * 10)
      near(b.grad, rgb, tol * 10)
    end
  end)
end)

describe("normalisation layers", function()
  it("give the same bits with 1 and 2 threads", function()
    local function run()
      local out = {}
      for _, case in ipairs({{nn.BatchNorm1d(300), {256, 300}}, {nn.BatchNorm2d(16), {32, 16, 12, 12}},
                             {nn.LayerNorm(520), {192, 520}}}) do
        local m, x = case[1], data(case[2], 0.4, 1.5, 0.25):requires_grad_()
        local y = m(x)
        y:backward(data(case[2], 1.1))
        out[#out + 1] = y
        out[#out + 1] = x.grad
        for _, p in ipairs(m:parameters()) do out[#out + 1] = p.grad end
      end
      return out
    end
    local before = pt.get_num_threads()
    pt.set_num_threads(1)
    local one = run()
    pt.set_num_threads(2)
    local two = run()
    pt.set_num_threads(before)
    assert.are.equal(#one, #two)
    for i = 1, #one do assert.is_true(pt.equal(one[i], two[i]), "result " .. i) end
  end)

  it("write a leaf input's gradient into .grad, or add to it, as the engine's accumulation would", function()
    for _, make in ipairs({function() return nn.BatchNorm1d(7) end, function() return nn.BatchNorm2d(3) end,
                           function() return nn.LayerNorm(7) end}) do
      local shape = make().num_features == 3 and {5, 3, 4, 4} or {9, 7}
      local g = data(shape, 0.9)
      -- through the engine: the input is not a leaf
      local x0 = data(shape, 0.3):requires_grad_()
      make()(x0 * 1):backward(g)
      -- a leaf: written, then added to; and with another use of x
      local x = data(shape, 0.3):requires_grad_()
      make()(x):backward(g)
      assert.is_true(pt.equal(x.grad, x0.grad))
      make()(x):backward(g)
      assert.is_true(pt.equal(x.grad, x0.grad + x0.grad))
      local x2 = data(shape, 0.3):requires_grad_()
      local loss = (make()(x2) * g):sum() + (x2 * 3):sum()
      loss:backward()
      assert.is_true(pt.equal(x2.grad, x0.grad + 3))
      -- autograd.grad and a hook on the leaf still see the gradient (the engine turns the direct
      -- write off for them)
      local x3 = data(shape, 0.3):requires_grad_()
      local gx = pt.autograd.grad((make()(x3) * g):sum(), {x3})[1]
      assert.is_nil(x3.grad)
      assert.is_true(pt.equal(gx, x0.grad))
      local seen
      x3:register_hook(function(t) seen = t; return t * 2 end)
      make()(x3):backward(g)
      assert.is_true(pt.equal(seen, x0.grad) and pt.equal(x3.grad, x0.grad * 2))
    end
  end)
end)
