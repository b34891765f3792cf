-- Differential checks of the spatial ops (nn.functional.interpolate and the Upsample modules,
-- grid_sample, affine_grid, pad, fold/unfold, pixel_shuffle, channel_shuffle) against PyTorch 1.13:
-- each case here was found to differ from torch by a generated comparison (values, gradients and
-- error cases); the expected numbers and shapes are torch 1.13's unless said otherwise.
local pt = require "partrain"
local F = pt.nn.functional
local support = require "spec.support"

local F64 = {dtype = "float64"}

describe("interpolate with an input of no channels", function()
  -- an input {N, 0, ...} gave an empty result; torch's upsample kernels raise ("Non-empty 4D
  -- data tensor expected"): only the batch may be empty. area pools it (adaptive_avg_pool1d/2d
  -- take it) except on 5-D inputs (adaptive_avg_pool3d refuses it)
  it("is refused by every mode but area", function()
    for _, mode in ipairs({"nearest", "nearest-exact", "bilinear", "bicubic"}) do
      support.assert_error("interpolate: mode '" .. mode .. "' needs at least one channel (only the batch "
        .. "dimension may be empty), got {1,0,3,3}", F.interpolate, pt.zeros({1, 0, 3, 3}), {size = 4, mode = mode})
    end
    support.assert_error("interpolate: mode 'linear' needs at least one channel (only the batch dimension may be "
      .. "empty), got {0,0,3}", F.interpolate, pt.zeros({0, 0, 3}), {size = 4, mode = "linear"})
    support.assert_error("interpolate: mode 'trilinear' needs at least one channel (only the batch dimension may "
      .. "be empty), got {1,0,3,3,3}", F.interpolate, pt.zeros({1, 0, 3, 3, 3}), {size = 4, mode = "trilinear"})
    support.assert_error("interpolate: mode 'area' needs at least one channel (only the batch dimension may be "
      .. "empty), got {1,0,3,3,3}", F.interpolate, pt.zeros({1, 0, 3, 3, 3}), {size = 4, mode = "area"})
  end)
  it("keeps an empty batch, and area a 3-D or 4-D input of no channels", function()
    assert.are.same({0, 2, 4, 4}, F.interpolate(pt.zeros({0, 2, 3, 3}), {size = 4, mode = "bicubic"}):size())
    assert.are.same({0, 1, 4, 4, 4}, F.interpolate(pt.zeros({0, 1, 3, 3, 3}), {size = 4, mode = "trilinear"}):size())
    assert.are.same({1, 0, 4, 4}, F.interpolate(pt.zeros({1, 0, 3, 3}), {size = 4, mode = "area"}):size())
    assert.are.same({1, 0, 4}, F.interpolate(pt.zeros({1, 0, 3}), {size = 4, mode = "area"}):size())
  end)
end)

describe("interpolate and affine_grid with an output too large to allocate", function()
  -- torch raises ("Storage size calculation overflowed", "can't allocate memory"); partrain built
  -- its per-position tap lists first and was killed for memory (size {2, 2^62}, scale_factor 1e12),
  -- or looped on a float size past int64 (scale_factor 1e300)
  local x = pt.randn({1, 2, 3, 4})
  it("raise a clear error before any per-position work", function()
    support.assert_error("interpolate: the output {1,2,2,9223372036854775807} cannot be allocated: tensor too large",
      F.interpolate, x, {size = {2, math.maxinteger}})
    support.assert_error("interpolate: the output {1,2,3000000000000,4000000000000} cannot be allocated: tensor too large",
      F.interpolate, x, {scale_factor = 1e12, mode = "bilinear"})
    support.assert_error("interpolate: scale_factor 1e+300 gives an output size too large for spatial dimension 1 of size 3",
      F.interpolate, x, {scale_factor = 1e300})
    support.assert_error("affine_grid: the grid {1,1099511627776,1099511627776,2} cannot be allocated: tensor too large",
      F.affine_grid, pt.randn({1, 2, 3}), {1, 1, 1 << 40, 1 << 40})
    -- an ordinary size is untouched
    assert.are.same({1, 2, 5, 5}, F.interpolate(x, {size = 5}):size())
  end)
end)

describe("interpolate's argument messages", function()
  -- a string scale_factor "2" was reported as "got 2", a tensor size as "got userdata"
  it("show strings quoted and tensors as tensor", function()
    local x = pt.randn({1, 2, 3, 4})
    support.assert_error("interpolate: scale_factor must be a positive number, got '2'", F.interpolate, x,
      {scale_factor = "2"})
    support.assert_error("interpolate: scale_factor must be a positive number, got tensor", F.interpolate, x,
      {scale_factor = pt.tensor(2.0)})
    support.assert_error("interpolate: scale_factor must be a positive number, got nan", F.interpolate, x,
      {scale_factor = {2, 0 / 0}})
    support.assert_error("interpolate: size must be an integer, got tensor", F.interpolate, x,
      {size = pt.tensor({2, 2})})
  end)
end)

describe("interpolate to long outputs", function()
  -- the taps were one small Lua table per output position: a linear pass to 4M positions took
  -- 1.4 GB and 4.7 s (torch: 0.06 s); now flat lists (0.45 GB, 1.7 s). Values at a few positions,
  -- from torch 1.13 on x = 2 sin(1.3 i + 0.2), i = 0, 1, ... (float64)
  local assert_close = support.assert_close_with(1e-12)
  local function wave(n) return pt.arange(n, F64):mul(1.3):add(0.2):sin():mul(2) end
  it("nearest and nearest-exact 1000 -> 200000 (the source positions as tensor ops, 2 s -> 0.14 s for 4M)", function()
    local x = wave(1000):view(1, 1, 1000)
    local y = F.interpolate(x, {size = 200000})[1][1]
    assert_close({y[1], y[778], y[123457], y[200000]},
      {0.39733866159012243, -1.6365542221288216, -1.8596031253434735, -1.977969818384231})
    local e = F.interpolate(x, {size = 200000, mode = "nearest-exact"})[1][1]
    assert_close({e[1], e[778], e[123457], e[200000]},
      {0.39733866159012243, -1.6365542221288216, -1.8596031253434735, -1.977969818384231})
    local s = F.interpolate(x, {scale_factor = 0.37, mode = "nearest"})[1][1]
    assert_close({s[1], s[100], s[370]}, {0.39733866159012243, 1.9763272201442799, 1.8475053879964616})
  end)
  it("linear 1000 -> 200000", function()
    local y = F.interpolate(wave(1000):view(1, 1, 1000), {size = 200000, mode = "linear"})[1][1]
    assert_close({y[1], y[778], y[123457], y[200000]},
      {0.39733866159012243, -1.6012819389097932, -1.4090609559241742, -1.977969818384231})
  end)
  it("bicubic with align_corners {2, 50} -> {3, 20001}, and antialiased bicubic {3, 500} -> {2, 77}", function()
    local y = F.interpolate(wave(100):view(1, 1, 2, 50), {size = {3, 20001}, mode = "bicubic", align_corners = true})[1][1]
    assert_close({y[1][1], y[2][10001], y[3][20001]},
      {0.39733866159012243, 0.9389829097323446, -0.1891194290631795})
    local a = F.interpolate(wave(1500):view(1, 1, 3, 500), {size = {2, 77}, mode = "bicubic", antialias = true})[1][1]
    assert_close({a[1][1], a[2][41], a[2][77]},
      {0.04439670189549971, -0.0013632067715547242, -0.028258914522483077})
  end)
end)
