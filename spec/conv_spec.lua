local pt = require "partrain"
local gradcheck = require "spec.gradcheck"
local nn = pt.nn

local function f64(...) return pt.randn({...}, {dtype = "float64"}) end

local function close(a, b, tol)
  tol = tol or 1e-9
  assert.are.equal(a:numel(), b:numel())
  for i = 1, a:numel() do
    local x, y = a:_get_flat(i), b:_get_flat(i)
    if math.abs(x - y) > tol * (1 + math.abs(y)) then
      error(string.format("element %d: %.10g vs %.10g", i, x, y), 2)
    end
  end
end

-- direct definition of a convolution, for reference
local function conv_ref(x, w, b, stride, pad)
  local N, C, H, W = table.unpack(x:size())
  local O, _, kh, kw = table.unpack(w:size())
  local Ho, Wo = (H + 2 * pad - kh) // stride + 1, (W + 2 * pad - kw) // stride + 1
  local y = pt.zeros(N, O, Ho, Wo, {dtype = "float64"})
  local xs, ws = x:tolist(), w:tolist()
  local k = 0
  for n = 1, N do for o = 1, O do for oy = 1, Ho do for ox = 1, Wo do
    local s = b and b:_get_flat(o) or 0
    for c = 1, C do for i = 1, kh do for j = 1, kw do
      local iy, ix = (oy - 1) * stride - pad + i, (ox - 1) * stride - pad + j
      if iy >= 1 and iy <= H and ix >= 1 and ix <= W then s = s + xs[n][c][iy][ix] * ws[o][c][i][j] end
    end end end
    k = k + 1
    y:_set_flat(k, s)
  end end end end
  return y
end

describe("conv2d", function()
  it("matches the direct definition with stride and padding", function()
    local x, w, b = f64(2, 3, 7, 6), f64(4, 3, 3, 2), f64(4)
    close(pt.conv2d(x, w, b, {stride = 2, padding = 1}), conv_ref(x, w, b, 2, 1))
    close(pt.conv2d(x, w, nil, {}), conv_ref(x, w, nil, 1, 0))
    -- stride 1 with padding goes through a zero-padded copy of each channel (the CNN's 5x5
    -- layers); a channel too big for that copy takes the bounds-checked loops
    local x5, w5 = f64(2, 3, 9, 8), f64(4, 3, 5, 5)
    close(pt.conv2d(x5, w5, b, {padding = 2}), conv_ref(x5, w5, b, 1, 2))
    local big, w3 = f64(1, 1, 100, 97), f64(2, 1, 3, 3)
    close(pt.conv2d(big, w3, nil, {padding = 1}), conv_ref(big, w3, nil, 1, 1))
  end)

  it("computes output shapes for 3-D and 4-D inputs", function()
    assert.are.same({8, 16, 28, 28}, pt.conv2d(pt.randn(8, 1, 28, 28), pt.randn(16, 1, 5, 5), nil, {padding = 2}):size())
    assert.are.same({16, 13, 13}, pt.conv2d(pt.randn(1, 28, 28), pt.randn(16, 1, 3, 3), nil, {stride = 2}):size())
    assert.are.same({1, 4, 2, 2}, pt.conv2d(pt.randn(1, 4, 6, 6), pt.randn(4, 2, 2, 2), nil, {groups = 2, dilation = 2, stride = 2}):size())
  end)

  it("has correct gradients (stride, padding, bias, groups, dilation, 1x1)", function()
    gradcheck(function(x, w, b) return pt.conv2d(x, w, b, {padding = 1, stride = 2}) end, {f64(2, 3, 5, 5), f64(4, 3, 3, 3), f64(4)})
    gradcheck(function(x, w) return pt.conv2d(x, w, nil, {groups = 2, dilation = 2}) end, {f64(1, 4, 6, 6), f64(2, 2, 2, 2)})
    gradcheck(function(x, w, b) return pt.conv2d(x, w, b) end, {f64(2, 3, 3, 3), f64(2, 3, 1, 1), f64(2)})
    gradcheck(function(x, w) return pt.conv2d(x, w, nil, {padding = {1, 0}, stride = {1, 2}}) end, {f64(3, 4, 5), f64(2, 3, 2, 3)})
    -- stride 1 with padding (the zero-padded copy), also per group, and a channel too big for it
    gradcheck(function(x, w, b) return pt.conv2d(x, w, b, {padding = {2, 1}}) end, {f64(2, 3, 6, 5), f64(2, 3, 5, 3), f64(2)})
    gradcheck(function(x, w) return pt.conv2d(x, w, nil, {padding = 1, groups = 2}) end, {f64(1, 4, 4, 5), f64(4, 2, 3, 3)})
    gradcheck(function(x, w) return pt.conv2d(x, w, nil, {padding = 1}) end, {f64(1, 1, 91, 92), f64(1, 1, 2, 2)},
      {skip = {true}}) -- the weight only: 8k input elements would take seconds
  end)

  -- float32 5x5 layers with 8+ channels run Winograd F(2x2,5x5) (lib/conv_winograd.c): they
  -- must agree with the float64 path (direct im2col, gradient-checked above) to float32 accuracy
  it("float32 5x5 layers (Winograd) agree with float64 in output and every gradient", function()
    local function rel(a, r) return (a:double() - r):abs():max():item() / r:abs():max():item() end
    pt.manual_seed(5)
    -- {N, C, H, W, O, padding}: odd outputs (partial tiles), no padding, channels not a
    -- multiple of 16, more images than a block holds (split over threads)
    for _, s in ipairs{{2, 32, 14, 14, 64, 2}, {3, 9, 7, 9, 17, 2}, {8, 16, 8, 8, 8, 0},
                       {5, 20, 5, 6, 33, 3}, {2, 16, 15, 11, 24, 1}, {70, 8, 6, 6, 8, 2}} do
      local N, C, H, W, O, p = table.unpack(s)
      local x, w, b = pt.randn(N, C, H, W), pt.randn(O, C, 5, 5), pt.randn(O)
      for _, needs in ipairs{{true, true, true}, {false, true, true}, {true, false, false}} do
        local x32, w32, b32 = x:clone():requires_grad_(needs[1]), w:clone():requires_grad_(needs[2]),
          b:clone():requires_grad_(needs[3])
        local x64, w64, b64 = x:double():requires_grad_(needs[1]), w:double():requires_grad_(needs[2]),
          b:double():requires_grad_(needs[3])
        local y32, y64 = pt.conv2d(x32, w32, b32, {padding = p}), pt.conv2d(x64, w64, b64, {padding = p})
        assert.are.same(y64:size(), y32:size())
        assert.is_true(rel(y32, y64) < 1e-5, table.concat(s, ","))
        local gy = pt.randn(y32.shape)
        y32:backward(gy)
        y64:backward(gy:double())
        for k, pair in ipairs{{x32, x64}, {w32, w64}, {b32, b64}} do
          if needs[k] then
            assert.is_true(rel(pair[1].grad, pair[2].grad) < 1e-5, table.concat(s, ",") .. " grad " .. k)
          else
            assert.is_nil(pair[1].grad)
          end
        end
      end
    end
    -- an empty batch: an empty output and zero gradients
    local e, ew, eb = pt.randn(0, 8, 6, 6):requires_grad_(), pt.randn(8, 8, 5, 5):requires_grad_(),
      pt.randn(8):requires_grad_()
    local ey = pt.conv2d(e, ew, eb, {padding = 2})
    assert.are.same({0, 8, 6, 6}, ey:size())
    ey:sum():backward()
    assert.are.equal(0, ew.grad:abs():max():item())
    assert.are.equal(0, eb.grad:abs():max():item())
    -- a non-contiguous input and no bias
    local x = pt.randn(2, 12, 9, 10):transpose(3, 4)
    local w = pt.randn(8, 12, 5, 5)
    local ref = pt.conv2d(x:double(), w:double(), nil, {padding = 2})
    assert.is_true(rel(pt.conv2d(x, w, nil, {padding = 2}), ref) < 1e-5)
  end)

  it("rejects an input of zero height or width, as PyTorch", function()
    local ok, err = pcall(pt.conv2d, pt.randn(1, 1, 0, 5), pt.randn(1, 1, 3, 3), nil, {padding = 2})
    assert.is_false(ok)
    assert.truthy(err:find("conv2d: only the batch or the channels may be empty, got input shape {1,1,0,5}", 1, true))
  end)

  it("rejects mismatched channels with both shapes", function()
    local ok, err = pcall(pt.conv2d, pt.randn(2, 3, 8, 8), pt.randn(4, 2, 3, 3))
    assert.is_false(ok)
    assert.truthy(err:find("conv2d: input has 3 channels, expected 2 (input shape {2,3,8,8}, weight shape {4,2,3,3})", 1, true))
  end)

  it("rejects bad ranks, kernels, groups, bias and dtypes", function()
    local function msg(...) local ok, e = pcall(...); assert.is_false(ok); return e end
    assert.truthy(msg(pt.conv2d, pt.randn(3, 8), pt.randn(4, 3, 3, 3)):find("conv2d: expected a 3-D {C,H,W} or 4-D {N,C,H,W} input, got shape {3,8}", 1, true))
    assert.truthy(msg(pt.conv2d, pt.randn(1, 3, 2, 2), pt.randn(4, 3, 3, 3)):find("conv2d: kernel 3x3 is larger than the padded input 2x2", 1, true))
    assert.truthy(msg(pt.conv2d, pt.randn(1, 3, 5, 5), pt.randn(4, 1, 3, 3), nil, {groups = 2}):find("conv2d: groups=2 must divide input channels 3 and output channels 4", 1, true))
    assert.truthy(msg(pt.conv2d, pt.randn(1, 3, 5, 5), pt.randn(4, 3, 3, 3), pt.randn(3)):find("conv2d: bias must have shape {4}, got {3}", 1, true))
    assert.truthy(msg(pt.conv2d, pt.randn(1, 3, 5, 5), pt.randn(4, 3, 3, 3, {dtype = "float64"})):find("conv2d: weight has dtype float64, input has float32", 1, true))
    assert.truthy(msg(pt.conv2d, pt.zeros(1, 3, 5, 5, {dtype = "int64"}), pt.randn(4, 3, 3, 3)):find("conv2d: input must be float32 or float64, got int64", 1, true))
    assert.truthy(msg(pt.conv2d, pt.randn(1, 3, 5, 5), pt.randn(4, 3, 3, 3), nil, {stride = 0}):find("conv2d: stride and dilation must be >= 1 and padding >= 0", 1, true))
    assert.truthy(msg(pt.conv2d, pt.randn(1, 3, 5, 5), pt.randn(4, 3, 3, 3), nil, {stride = "x"}):find("conv2d: option 'stride' must be an integer or a pair {h, w}", 1, true))
    -- a fractional or textual option is an error (groups=1.5 ran as 1, "2" as 2; a float stride
    -- raised "bad argument #-1"), as is a non-number batch_norm momentum
    for _, g in ipairs({1.5, "2"}) do
      assert.truthy(msg(pt.conv2d, pt.randn(1, 2, 5, 5), pt.randn(2, 1, 3, 3), nil, {groups = g}):find("conv2d: option 'groups' must be an integer", 1, true))
    end
    assert.truthy(msg(pt.conv2d, pt.randn(1, 3, 5, 5), pt.randn(4, 3, 3, 3), nil, {stride = 1.5}):find("conv2d: option 'stride' must be an integer or a pair {h, w}", 1, true))
    assert.truthy(msg(pt.batch_norm, pt.randn(2, 3, 4, 4), pt.zeros(3), pt.ones(3), {momentum = "x"}):find("batch_norm: option 'momentum' must be a number, got string", 1, true))
    -- misspelled options are errors, never the defaults; the size error shows the dilated kernel
    assert.truthy(msg(pt.conv2d, pt.randn(1, 3, 5, 5), pt.randn(4, 3, 3, 3), nil, {paddin = 1}):find("conv2d: unknown option 'paddin' (options: stride, padding, dilation, groups)", 1, true))
    assert.truthy(msg(pt.max_pool2d, pt.randn(1, 3, 5, 5), 2, {stide = 1}):find("max_pool2d: unknown option 'stide' (options: stride, padding, dilation, ceil_mode, relu, return_indices)", 1, true))
    assert.truthy(msg(pt.avg_pool2d, pt.randn(1, 3, 5, 5), 2, {dilation = 2}):find("avg_pool2d: unknown option 'dilation'", 1, true))
    assert.truthy(msg(pt.conv2d, pt.randn(1, 1, 5, 5), pt.randn(1, 1, 3, 3), nil, {dilation = {1, 3}}):find("conv2d: kernel 3x7 (dilated) is larger than the padded input 5x5", 1, true))
    assert.has_error(function() nn.MaxPool2d(2, {dilatoin = 2}) end, "MaxPool2d: unknown option 'dilatoin'")
    -- beyond int's range: an error, never a truncated value (2^32 + 1 would run as 1)
    assert.truthy(msg(pt.conv2d, pt.randn(1, 3, 5, 5), pt.randn(4, 3, 3, 3), nil, {padding = 4294967297}):find("conv2d: option 'padding' 4294967297 is out of range", 1, true))
    assert.truthy(msg(pt.conv2d, pt.randn(1, 3, 5, 5), pt.randn(4, 3, 3, 3), nil, {stride = {1, 4294967297}}):find("conv2d: option 'stride' 4294967297 is out of range", 1, true))
    assert.truthy(msg(pt.max_pool2d, pt.randn(1, 3, 5, 5), 4294967298):find("max_pool2d: kernel size 4294967298 is out of range", 1, true))
  end)
end)

describe("pooling", function()
  it("max_pool2d with dilation, as PyTorch's (values from torch 1.13)", function()
    local x = pt.arange(1, 26):reshape(1, 1, 5, 5):float()
    assert.are.same({{{{13, 15}, {23, 25}}}}, pt.max_pool2d(x, 2, {dilation = 2}):tolist())
    assert.are.same({{{{19, 20, 19}, {24, 25, 24}, {19, 20, 19}}}},
      pt.max_pool2d(x, 3, {dilation = 2, stride = 1, padding = 1}):tolist())
    assert.are.same({{{{8, 10}, {18, 20}, {23, 25}}}}, pt.max_pool2d(x, 2, {dilation = {1, 2}, ceil_mode = true}):tolist())
    assert.are.same({{{{13, 15}, {23, 25}}}}, nn.MaxPool2d(2, {dilation = 2})(x):tolist())
    local xr = pt.randn({1, 2, 7, 6}, {dtype = "float64"})
    gradcheck(function(v) return pt.max_pool2d(v, 3, {dilation = 2, stride = 1}) end, {xr})
  end)

  it("max_pool2d picks maxima and routes gradients to them", function()
    local x = pt.tensor({{{{1, 2, 5, 6}, {3, 4, 7, 8}, {9, 10, 13, 14}, {11, 12, 15, 16}}}})
    assert.are.same({{{{4, 8}, {12, 16}}}}, pt.max_pool2d(x, 2):tolist())
    gradcheck(function(x) return pt.max_pool2d(x, 2) end, {f64(2, 2, 4, 4)})
    -- odd sizes: the 2x2 path row by row (an even width goes through the flat two-pass one)
    gradcheck(function(x) return pt.max_pool2d(x, 2) end, {f64(1, 2, 5, 7)})
    -- rows longer than a vector (40 -> 20 outputs) and shorter (14 -> 7), float32, with ties
    -- from rounding to a few values: against a direct loop, values and argmax positions
    for _, w in ipairs{40, 14} do
      local x = (pt.rand(2, 3, 6, w) * 4):floor():requires_grad_()
      local y = pt.max_pool2d(x, 2)
      y:sum():backward()
      local xs, ys, gs = x:detach():tolist(), y:tolist(), x.grad:tolist()
      for n = 1, 2 do for c = 1, 3 do for oy = 1, 3 do for ox = 1, w // 2 do
        local best, bi, bj
        for i = 2 * oy - 1, 2 * oy do for j = 2 * ox - 1, 2 * ox do
          if not best or xs[n][c][i][j] > best then best, bi, bj = xs[n][c][i][j], i, j end
        end end
        assert.are.equal(best, ys[n][c][oy][ox])
        assert.are.equal(1, gs[n][c][bi][bj])
      end end end end
    end
    gradcheck(function(x) return pt.max_pool2d(x, 3, {stride = 2, padding = 1}) end, {f64(1, 2, 5, 5)})
    -- as PyTorch: a tie goes to the first maximum in the window, a NaN wins (the last NaN when
    -- several), in the 2x2 fast path and in the general path (a 2x2 window at stride 1) alike
    local nan = 0 / 0
    local t = pt.tensor({{{{1, 5, 7, nan}, {5, 2, nan, 9}, {3, 3, -1, 0}, {3, 3, 0, -1}}}}, {requires_grad = true})
    local y = pt.max_pool2d(t, 2)
    local v = y:tolist()[1][1]
    assert.are.equal(5, v[1][1])
    assert.is_true(v[1][2] ~= v[1][2])
    assert.are.same({3, 0}, v[2])
    y:sum():backward()
    assert.are.same({{0, 1, 0, 0}, {0, 0, 1, 0}, {1, 0, 0, 1}, {0, 0, 0, 0}}, t.grad:tolist()[1][1])
    local g = pt.max_pool2d(t:detach(), 2, {stride = 1}):tolist()[1][1]
    assert.are.same({3, 3, 0}, g[3])
    assert.are.equal(5, g[1][1])
  end)

  it("computes ceil_mode sizes as PyTorch", function()
    assert.are.same({1, 1, 3, 3}, pt.max_pool2d(pt.randn(1, 1, 5, 5), 2, {ceil_mode = true}):size())
    assert.are.same({1, 1, 2, 2}, pt.max_pool2d(pt.randn(1, 1, 5, 5), 2):size())
  end)

  it("avg_pool2d with and without counting padding", function()
    local x = pt.ones(1, 1, 3, 3, {dtype = "float64"})
    local y = pt.avg_pool2d(x, 3, {stride = 1, padding = 1})
    assert.are.equal(4 / 9, y:_get_flat(1))
    local z = pt.avg_pool2d(x, 3, {stride = 1, padding = 1, count_include_pad = false})
    assert.are.equal(1, z:_get_flat(1))
    gradcheck(function(x) return pt.avg_pool2d(x, 3, {stride = 2, padding = 1}) end, {f64(1, 2, 5, 5)})
    gradcheck(function(x) return pt.avg_pool2d(x, 2, {count_include_pad = false, padding = 1}) end, {f64(1, 1, 4, 3)})
  end)

  it("adaptive_avg_pool2d averages uneven bins", function()
    local x = pt.arange(1, 6, {dtype = "float64"}):reshape(1, 1, 1, 5)
    -- bins over 5 columns into 2: [1..3] and [3..5]
    assert.are.same({{{{2, 4}}}}, pt.adaptive_avg_pool2d(x, {1, 2}):tolist())
    gradcheck(function(x) return pt.adaptive_avg_pool2d(x, {2, 3}) end, {f64(1, 2, 5, 7)})
  end)

  it("relu=true is max_pool2d(relu(x)): values, gradients, and Sequential's fused ReLU, MaxPool2d", function()
    require "partrain.nn_conv"
    local nn = pt.nn
    gradcheck(function(x) return pt.max_pool2d(x, 2, {relu = true}) end, {f64(2, 3, 4, 6)})
    gradcheck(function(x) return pt.max_pool2d(x, 3, {stride = 2, padding = 1, relu = true}) end, {f64(1, 2, 5, 5)})
    -- windows all <= 0 (the rectified maximum is 0 and takes no gradient), ties, NaN, odd sizes
    local nan = 0 / 0
    local rows = {{-1, -2, 3, 3, 0, -1}, {-3, -4, 1, 3, 0, 0}, {2, nan, -1, -5, 7, 7},
                  {-2, 2, -1, -6, 7, 1}, {5, 4, 3, 2, 1, 0}}
    for _, shape in ipairs{{5, 6}, {4, 6}, {5, 5}} do
      local t = pt.tensor({{rows}}):narrow(3, 1, shape[1]):narrow(4, 1, shape[2]):contiguous()
      local a, b = t:clone():requires_grad_(), t:clone():requires_grad_()
      local fused, plain = pt.max_pool2d(a, 2, {relu = true}), pt.max_pool2d(pt.relu(b), 2)
      local fv, pv = fused:tolist()[1][1], plain:tolist()[1][1]
      for i = 1, #pv do
        for j = 1, #pv[i] do
          if pv[i][j] ~= pv[i][j] then assert.is_true(fv[i][j] ~= fv[i][j]) else assert.are.equal(pv[i][j], fv[i][j]) end
        end
      end
      fused:sum():backward()
      plain:sum():backward()
      assert.are.same(b.grad:tolist(), a.grad:tolist())
    end
    -- Sequential fuses a plain ReLU followed by a plain MaxPool2d; the result and the gradients
    -- are those of the modules applied one by one
    pt.manual_seed(4)
    local seq = nn.Sequential(nn.Conv2d(2, 3, 3, {padding = 1}), nn.ReLU(), nn.MaxPool2d(2))
    local x = pt.randn(2, 2, 6, 6)
    local y1 = seq(x)
    assert.are.equal("ReluMaxPool2dBackward", y1.grad_fn)
    local y2 = x
    for i = 1, #seq do y2 = seq[i](y2) end
    assert.are.equal("MaxPool2dBackward", y2.grad_fn)
    assert.are.same(y2:tolist(), y1:tolist())
    y1:sum():backward()
    local g1 = seq[1].weight.grad:clone()
    seq:zero_grad()
    y2:sum():backward()
    assert.are.same(seq[1].weight.grad:tolist(), g1:tolist())
  end)

  it("names bad kernels", function()
    local ok, err = pcall(pt.max_pool2d, pt.randn(1, 1, 2, 2), 3)
    assert.is_false(ok)
    assert.truthy(err:find("max_pool2d: kernel 3x3 is larger than the padded input 2x2", 1, true))
    ok, err = pcall(pt.avg_pool2d, pt.randn(1, 1, 4, 4), 2, {padding = 2})
    assert.truthy(err:find("avg_pool2d: padding 2 should be at most half of kernel size 2", 1, true))
    ok, err = pcall(pt.max_pool2d, pt.randn(1, 1, 0, 4), 2, {padding = 1})
    assert.is_false(ok)
    assert.truthy(err:find("max_pool2d: channels, height and width must be non-zero (only the batch may be empty), got input shape {1,1,0,4}", 1, true))
    assert.are.same({0, 2, 2, 2}, pt.avg_pool2d(pt.randn(0, 2, 4, 4), 2):size())
    ok, err = pcall(pt.avg_pool2d, pt.randn(1, 1, 4, 4), 2, {relu = true})
    assert.is_false(ok)
    assert.truthy(err:find("avg_pool2d: relu=true is an option of max_pool2d only", 1, true))
  end)

  it("max_pool2d routes gradients in planes wider than 65535 outputs", function()
    local x = pt.randn(2, 1, 2, 140000):requires_grad_()
    pt.max_pool2d(x, 2):sum():backward()
    assert.are.equal(2 * 70000, x.grad:sum():item())
    assert.are.equal(2, x.grad:narrow(4, 139999, 2):sum():item()) -- the last window of each plane
  end)
end)

describe("batch_norm", function()
  it("normalises per channel and updates running statistics", function()
    local x = pt.randn(4, 3, 5, 5, {dtype = "float64"})
    local rm, rv = pt.zeros(3, {dtype = "float64"}), pt.ones(3, {dtype = "float64"})
    local y = pt.batch_norm(x, rm, rv, nil, nil, {training = true, momentum = 0.1})
    local ys = y:tolist()
    for c = 1, 3 do
      local s, ss, n = 0, 0, 0
      for b = 1, 4 do for i = 1, 5 do for j = 1, 5 do
        local v = ys[b][c][i][j]; s = s + v; ss = ss + v * v; n = n + 1
      end end end
      assert.is_true(math.abs(s / n) < 1e-9)
      assert.is_true(math.abs(ss / n - 1) < 1e-3)
    end
    assert.is_true(rm:_get_flat(1) ~= 0)
    -- evaluation mode uses the running statistics
    local e = pt.batch_norm(x, pt.zeros(3, {dtype = "float64"}), pt.ones(3, {dtype = "float64"}), nil, nil, {training = false, eps = 0})
    close(e, x)
  end)

  it("has correct gradients in training and evaluation mode", function()
    gradcheck(function(x, w, b) return pt.batch_norm(x, nil, nil, w, b) end, {f64(3, 2, 2, 2), f64(2), f64(2)})
    gradcheck(function(x, w, b) return pt.batch_norm(x, nil, nil, w, b) end, {f64(5, 3), f64(3), f64(3)})
    local rm, rv = pt.rand(2, {dtype = "float64"}), pt.rand(2, {dtype = "float64"}) + 0.5
    gradcheck(function(x, w, b) return pt.batch_norm(x, rm, rv, w, b, {training = false}) end, {f64(3, 2, 3), f64(2), f64(2)})
  end)

  it("rejects wrong statistics shapes and single values", function()
    local ok, err = pcall(pt.batch_norm, pt.randn(4, 3), pt.zeros(2), pt.ones(3))
    assert.truthy(err:find("batch_norm: running_mean must have shape {3}, got {2}", 1, true))
    ok, err = pcall(pt.batch_norm, pt.randn(1, 3), nil, nil)
    assert.truthy(err:find("batch_norm: expected more than 1 value per channel when training, got input shape {1,3}", 1, true))
    ok, err = pcall(pt.batch_norm, pt.randn(2, 3), nil, nil, nil, nil, {training = false})
    assert.truthy(err:find("batch_norm: evaluation mode needs running_mean and running_var", 1, true))
  end)
end)

describe("dropout2d and upsampling", function()
  it("dropout2d zeroes whole channels and rescales the rest", function()
    pt.manual_seed(3)
    local x = pt.ones(4, 8, 3, 3, {dtype = "float64"})
    local y = pt.dropout2d(x, 0.5, true):tolist()
    local zeros, kept = 0, 0
    for n = 1, 4 do for c = 1, 8 do
      local v = y[n][c][1][1]
      for i = 1, 3 do for j = 1, 3 do assert.are.equal(v, y[n][c][i][j]) end end
      if v == 0 then zeros = zeros + 1 else assert.are.equal(2, v); kept = kept + 1 end
    end end
    assert.is_true(zeros > 0 and kept > 0)
    close(pt.dropout2d(x, 0.5, false), x)
    pt.manual_seed(5)
    local xin = f64(2, 3, 2, 2)
    gradcheck(function(x) pt.manual_seed(5); return pt.dropout2d(x, 0.3, true) end, {xin})
    local ok, err = pcall(pt.dropout2d, x, 1.5)
    assert.truthy(err:find("dropout2d: probability must be in [0, 1], got 1.5", 1, true))
  end)

  it("upsample_nearest2d repeats pixels", function()
    local x = pt.tensor({{{{1, 2}, {3, 4}}}})
    assert.are.same({{{{1, 1, 2, 2}, {1, 1, 2, 2}, {3, 3, 4, 4}, {3, 3, 4, 4}}}}, pt.upsample_nearest2d(x, 2):tolist())
    gradcheck(function(x) return pt.upsample_nearest2d(x, {2, 3}) end, {f64(1, 2, 2, 3)})
  end)
end)
