-- nn.Upsample: F.interpolate with its settings kept (size or scale_factor, every mode, align_corners,
-- recompute_scale_factor) on 3-D, 4-D and 5-D inputs. The outputs, input gradients and printed
-- settings are torch 1.13's (spec/fixtures/make_upsample_reference.py writes them).
local pt = require "partrain"
local nn = pt.nn
local support = require "spec.support"

local ref = dofile("spec/fixtures/upsample_reference.lua")
local SHAPES = {[3] = {1, 2, 5}, [4] = {1, 2, 3, 4}, [5] = {1, 1, 2, 3, 3}}

-- the generator's input: sin(0.7 i + 0.3), i = 0, 1, ...
local function input(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return pt.arange(0, n, 1, {dtype = "float64"}):mul(0.7):add(0.3):sin():reshape(shape)
end

local function max_diff(t, list)
  local flat, worst = t:reshape({-1}), 0
  assert.are.equal(#list, flat:numel())
  for i = 1, #list do worst = math.max(worst, math.abs(flat[i] - list[i])) end
  return worst
end

local function case_name(c)
  local keys = {}
  for k, v in pairs(c.opts) do
    keys[#keys + 1] = k .. "=" .. (type(v) == "table" and "{" .. table.concat(v, ",") .. "}" or tostring(v))
  end
  table.sort(keys)
  return c.nd .. "-D " .. table.concat(keys, " ")
end

describe("nn.Upsample", function()
  it("gives torch's outputs and input gradients for every mode, size and scale_factor", function()
    assert.is_true(#ref > 100)
    for _, c in ipairs(ref) do
      local m = nn.Upsample(c.opts)
      local x = input(SHAPES[c.nd]):requires_grad_()
      local y = m(x)
      assert.are.same(c.shape, y:size(), case_name(c))
      assert.is_true(max_diff(y, c.y) < 1e-10, case_name(c) .. ": output differs by " .. max_diff(y, c.y))
      local w = pt.arange(0, y:numel(), 1, {dtype = "float64"}):cos():reshape(y:size())
      ;(y * w):sum():backward()
      assert.is_true(max_diff(x.grad, c.grad) < 1e-10, case_name(c) .. ": gradient differs")
    end
  end)

  it("prints its settings as torch does", function()
    for _, c in ipairs(ref) do
      assert.are.equal(c.repr, nn.Upsample(c.opts):extra_repr(), case_name(c))
    end
    assert.are.equal("Upsample(scale_factor=2.0, mode=nearest)", tostring(nn.Upsample({scale_factor = 2})))
  end)

  it("takes its settings positionally in torch's order", function()
    local x = input({1, 2, 3, 4})
    local a = nn.Upsample(nil, 1.5, "bilinear", true)(x)
    local b = nn.Upsample({scale_factor = 1.5, mode = "bilinear", align_corners = true})(x)
    assert.is_true(pt.equal(a, b))
    assert.are.same({1, 2, 5, 7}, nn.Upsample({5, 7})(x):size())
    assert.are.same({1, 2, 6, 8}, nn.Upsample(nil, 2)(x):size())
  end)

  it("keeps the input's dtype and works on float32 and uint8 (nearest)", function()
    local x = pt.arange(0, 6, 1, {dtype = "uint8"}):reshape({1, 1, 2, 3})
    local y = nn.Upsample({scale_factor = 2})(x)
    assert.are.equal("uint8", y:dtype())
    assert.are.same({{0, 0, 1, 1, 2, 2}, {0, 0, 1, 1, 2, 2}, {3, 3, 4, 4, 5, 5}, {3, 3, 4, 4, 5, 5}},
      y[1][1]:float():tolist())
    local f = nn.Upsample({size = {3, 5}, mode = "bicubic"})(input({1, 2, 3, 4}):float())
    assert.are.equal("float32", f:dtype())
  end)

  it("refuses bad settings when it is built, naming the setting", function()
    support.assert_error("Upsample: either size or scale_factor must be given", nn.Upsample)
    support.assert_error("Upsample: only one of size or scale_factor can be given", nn.Upsample,
      {size = 4, scale_factor = 2})
    support.assert_error("Upsample: size must be a positive integer or a list of 1 to 3 of them (one per spatial "
      .. "dim), got 0", nn.Upsample, {size = 0})
    support.assert_error("Upsample: size must be a positive integer or a list of 1 to 3 of them (one per spatial "
      .. "dim), got {2, 2.5}", nn.Upsample, {size = {2, 2.5}})
    support.assert_error("Upsample: scale_factor must be a positive number or a list of 1 to 3 of them (one per "
      .. "spatial dim), got -2", nn.Upsample, {scale_factor = -2})
    support.assert_error("Upsample: scale_factor must be a positive number or a list of 1 to 3 of them (one per "
      .. "spatial dim), got {1, 2, 3, 4}", nn.Upsample, {scale_factor = {1, 2, 3, 4}})
    support.assert_error("Upsample: mode must be nearest, nearest-exact, linear, bilinear, bicubic, trilinear or "
      .. "area, got 'cubic'", nn.Upsample, {scale_factor = 2, mode = "cubic"})
    support.assert_error("Upsample: align_corners must be a boolean, got number", nn.Upsample,
      {scale_factor = 2, mode = "bilinear", align_corners = 1})
    support.assert_error("Upsample: align_corners can only be set with the interpolating modes linear, bilinear, "
      .. "bicubic and trilinear, not 'nearest'", nn.Upsample, {scale_factor = 2, align_corners = false})
    support.assert_error("Upsample: recompute_scale_factor is not meaningful with an explicit size", nn.Upsample,
      {size = 4, recompute_scale_factor = true})
    support.assert_error("Upsample: unknown option 'scale'", nn.Upsample, {scale = 2})
  end)

  it("leaves the input's checks to interpolate and its own to forward", function()
    support.assert_error("interpolate: mode 'bilinear' needs a 4-D input (N, C, H, W), got 3-D",
      nn.Upsample({scale_factor = 2, mode = "bilinear"}), pt.zeros({1, 2, 3}))
    support.assert_error("interpolate: size must have 2 entries for a 4-D input (one per spatial dimension), got 3",
      nn.Upsample({size = {2, 3, 4}}), pt.zeros({1, 2, 3, 3}))
    support.assert_error("Upsample:forward: input must be a tensor, got table", nn.Upsample({size = 2}), {})
    support.assert_error("Upsample:forward: expected 1 input, got 2", nn.Upsample({size = 2}), pt.zeros({1, 1, 2}),
      pt.zeros({1, 1, 2}))
  end)
end)
