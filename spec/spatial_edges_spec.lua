-- Edge cases of the spatial ops where partrain used to differ from torch 1.13: empty outputs of
-- the adaptive pools and of interpolate's area mode, F.pad's zero-size outputs and value=0 for
-- the non-constant modes, unfold/fold with empty non-batch dims, pixel_shuffle on any dtype and
-- native_channel_shuffle on {N,C}. The expected values and shapes are torch 1.13's.
local pt = require "partrain"
local nn = pt.nn
local F = nn.functional
local support = require "spec.support"

local F64 = {dtype = "float64"}
local I64 = {dtype = "int64"}

describe("adaptive pools and area interpolation to an output size of 0", function()
  it("give torch's empty outputs", function()
    assert.are.same({3, 2, 0}, F.adaptive_avg_pool1d(pt.randn(3, 2, 4), 0):size())
    assert.are.same({3, 2, 0}, F.adaptive_max_pool1d(pt.randn(3, 2, 4), 0):size())
    assert.are.same({1, 2, 0, 3}, F.adaptive_avg_pool2d(pt.randn(1, 2, 4, 4), {0, 3}):size())
    assert.are.same({1, 2, 0, 3}, F.adaptive_max_pool2d(pt.randn(1, 2, 4, 4), {0, 3}):size())
    assert.are.same({1, 2, 0, 3, 3}, F.adaptive_avg_pool3d(pt.randn(1, 2, 4, 4, 4), {0, 3, 3}):size())
    assert.are.same({1, 2, 0, 3, 3}, F.adaptive_max_pool3d(pt.randn(1, 2, 4, 4, 4), {0, 3, 3}):size())
    local v, i = F.adaptive_max_pool3d(pt.randn(2, 4, 4, 4), {2, 0, 3}, {return_indices = true})
    assert.are.same({2, 2, 0, 3}, v:size())
    assert.are.same({2, 2, 0, 3}, i:size())
    assert.are.equal("int64", i:dtype())
    assert.are.same({1, 1, 0}, nn.AdaptiveMaxPool1d(0)(pt.randn(1, 1, 3)):size())
    assert.are.same({1, 1, 0, 0}, nn.AdaptiveAvgPool2d(0)(pt.randn(1, 1, 3, 3)):size())
    assert.are.same({1, 1, 0, 2, 2}, nn.AdaptiveAvgPool3d({0, 2, 2})(pt.randn(1, 1, 2, 2, 2)):size())
    assert.are.same({1, 2, 0}, F.interpolate(pt.zeros(1, 2, 5), {size = 0, mode = "area"}):size())
    assert.are.same({1, 2, 2, 0}, F.interpolate(pt.zeros(1, 2, 3, 4), {size = {2, 0}, mode = "area"}):size())
    assert.are.same({1, 2, 0}, F.interpolate(pt.zeros(1, 2, 4), {scale_factor = 0.1, mode = "area"}):size())
  end)

  it("leave a zero gradient (torch's backward raises there)", function()
    local x = pt.randn({1, 2, 4, 4}, {requires_grad = true, dtype = "float64"})
    F.adaptive_avg_pool2d(x, {0, 3}):sum():backward()
    assert.are.same({1, 2, 4, 4}, x.grad:size())
    assert.are.equal(0, x.grad:abs():sum():item())
    local y = pt.randn({1, 2, 2, 2, 2}, {requires_grad = true})
    F.interpolate(y, {size = {0, 2, 2}, mode = "area"}):sum():backward()
    assert.are.equal(0, y.grad:abs():sum():item())
  end)

  it("still refuse negative sizes, and the other modes an empty output", function()
    support.assert_error("adaptive_avg_pool1d: output_size must be >= 0, got -1", F.adaptive_avg_pool1d,
      pt.randn(1, 3, 4), -1)
    support.assert_error("adaptive_max_pool2d: output size must be non-negative, got -1x2", F.adaptive_max_pool2d,
      pt.randn(1, 3, 4, 4), {-1, 2})
    support.assert_error("AdaptiveMaxPool3d: output_size must be >= 0, got -2", nn.AdaptiveMaxPool3d, {1, -2, 1})
    support.assert_error("interpolate: output sizes must be non-negative, got -1", F.interpolate, pt.zeros(1, 2, 4),
      {size = -1, mode = "area"})
    support.assert_error("interpolate: output sizes must be positive, got 0", F.interpolate, pt.zeros(1, 2, 4),
      {size = 0, mode = "nearest"})
  end)
end)

describe("F.pad", function()
  local x = pt.arange(0, 8, 1, F64):view(1, 2, 4)
  it("takes value=0 with the non-constant modes, as torch", function()
    assert.are.same({2, 1, 0, 1, 2, 3, 2, 6, 5, 4, 5, 6, 7, 6},
      F.pad(x, {2, 1}, "reflect", 0):reshape(-1):tolist())
    support.assert_error("pad: mode 'reflect' takes no value (only constant padding has one)", F.pad, x, {1, 1},
      "reflect", 1)
  end)
  it("crops circularly to an empty dimension, and refuses that for reflect and replicate", function()
    assert.are.same({1, 2, 0}, F.pad(x, {-1, -3}, "circular"):size())
    assert.are.same({1, 5}, F.pad(x, {-1, -2}, "circular"):reshape(-1):tolist())
    assert.are.same({1, 2, 0}, F.pad(x, {-2, -2}):size())
    support.assert_error("pad: padding (-2, -2) leaves dimension 3 of size 4 empty, which mode 'reflect' cannot do "
      .. "(input {1,2,4})", F.pad, x, {-2, -2}, "reflect")
    support.assert_error("pad: padding (-1, -3) leaves dimension 3 of size 4 empty, which mode 'replicate' cannot "
      .. "do (input {1,2,4})", F.pad, x, {-1, -3}, "replicate")
  end)
end)

describe("unfold and fold", function()
  it("refuse empty dims other than the batch, as torch", function()
    support.assert_error("unfold: only the batch may be empty, got input shape {1,0,4,4}", F.unfold,
      pt.randn(1, 0, 4, 4), 2)
    support.assert_error("unfold: only the batch may be empty, got input shape {2,0,4}", F.unfold, pt.randn(2, 0, 4), 2)
    support.assert_error("fold: only the batch may be empty, got input shape {1,0,9}", F.fold, pt.randn(1, 0, 9),
      {4, 4}, 2)
    support.assert_error("Unfold:forward: only the batch may be empty, got input shape {1,2,0,4}", nn.Unfold(2),
      pt.randn(1, 2, 0, 4))
  end)
  it("keep an empty batch", function()
    assert.are.same({0, 8, 9}, F.unfold(pt.randn(0, 2, 4, 4), 2):size())
    assert.are.same({0, 2, 4, 4}, F.fold(pt.randn(0, 8, 9), {4, 4}, 2):size())
  end)
end)

describe("pixel_shuffle and pixel_unshuffle", function()
  it("rearrange tensors of any dtype, as torch", function()
    local up = F.pixel_shuffle(pt.arange(0, 16, 1, I64):view(1, 4, 2, 2), 2)
    assert.are.equal("int64", up:dtype())
    assert.are.same({0, 4, 1, 5, 8, 12, 9, 13, 2, 6, 3, 7, 10, 14, 11, 15}, up:reshape(-1):tolist())
    local down = nn.PixelUnshuffle(2)(pt.arange(0, 16, 1, I64):view(1, 1, 4, 4))
    assert.are.same({0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15}, down:reshape(-1):tolist())
    local b = F.pixel_shuffle(pt.ones({1, 4, 2, 2}, {dtype = "bool"}), 2)
    assert.are.equal("bool", b:dtype())
    assert.are.same({1, 1, 4, 4}, b:size())
    support.assert_error("pixel_shuffle: input must be a tensor, got table", F.pixel_shuffle, {}, 2)
  end)
end)

describe("native_channel_shuffle", function()
  it("takes a 2-D {N,C} input, which channel_shuffle refuses, as torch", function()
    local y = F.native_channel_shuffle(pt.arange(0, 12, 1, F64):view(2, 6), 2)
    assert.are.same({0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11}, y:reshape(-1):tolist())
    support.assert_error("channel_shuffle: input must have at least 3 dimensions {N,C,*}, got shape {1,6}",
      F.channel_shuffle, pt.zeros(1, 6), 3)
    support.assert_error("native_channel_shuffle: input must have at least 2 dimensions {N,C[,*]}, got shape {6}",
      F.native_channel_shuffle, pt.zeros(6), 3)
    support.assert_error("native_channel_shuffle: the 5 channels (dim 2 of input shape {1,5}) must be divisible by "
      .. "groups 2", F.native_channel_shuffle, pt.zeros(1, 5), 2)
  end)
end)
