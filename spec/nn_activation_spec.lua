-- The fused activation layers (lib/nn_activation.c): nn.relu, leaky_relu, gelu (exact and tanh),
-- tanh, sigmoid, silu and their nn.Module forms. float32 runs 8 lanes at a time (SLEEF, and
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
