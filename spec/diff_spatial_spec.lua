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
