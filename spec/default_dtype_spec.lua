-- pt.set_default_dtype / pt.get_default_dtype as torch's: the floating dtype of tensors made from
-- numbers without a dtype, of the nn layers' parameters and of integer inputs promoted to
-- floating. Process-wide, so every case puts float32 back (finally) for the other spec files.
local pt = require "partrain"
local nn = pt.nn
local support = require "spec.support"

describe("the default dtype", function()
  it("is float32 unless set", function()
    assert.are.equal("float32", pt.get_default_dtype())
    assert.are.equal("float32", pt.tensor({1.5}):dtype())
  end)

  it("set to float64 makes the factories, promotions and layers float64", function()
    finally(function() pt.set_default_dtype("float32") end)
    pt.set_default_dtype("float64")
    assert.are.equal("float64", pt.get_default_dtype())
    for name, t in pairs({tensor = pt.tensor({1.5}), tensor_ints = pt.tensor({1, 2}), zeros = pt.zeros(2),
                          ones = pt.ones(2), empty = pt.empty(2), rand = pt.rand(2), randn = pt.randn(2),
                          arange = pt.arange(0, 1, 0.5), linspace = pt.linspace(0, 1, 3), eye = pt.eye(2),
                          full = pt.full({2}, 1), normal = pt.normal(0, 1, {2}), hann = pt.hann_window(4),
                          logspace = pt.logspace(0, 1, 3)}) do
      assert.are.equal("float64", t:dtype(), name)
    end
    assert.are.equal("int64", pt.arange(3):dtype())
    local i = pt.arange(3)
    assert.are.equal("float64", (i * 0.5):dtype())
    assert.are.equal("float64", (i / i):dtype())
    assert.are.equal("float64", i:sqrt():dtype())
    assert.are.equal("float64", pt.special.erf(i):dtype())
    assert.are.equal("float64", pt.where(pt.tensor({true}, {dtype = "bool"}), 1.5, 2):dtype())
    assert.are.equal("float64", pt.trapezoid(i):dtype())
    assert.are.equal("float64", i:deg2rad():dtype())
    assert.are.equal("float32", i:float():dtype()) -- float() is float32, as torch's
    assert.are.equal("float32", pt.ones(2, {dtype = "float32"}):dtype())
    for name, p in pairs({linear = nn.Linear(2, 2).weight, conv = nn.Conv2d(1, 1, 1).weight,
                          embedding = nn.Embedding(2, 2).weight, lstm = nn.LSTM(2, 2).weight_ih_l0,
                          batchnorm = nn.BatchNorm1d(2).running_mean, layernorm = nn.LayerNorm(2).weight,
                          prelu = nn.PReLU().weight, bilinear = nn.Bilinear(2, 2, 2).weight,
                          mha = nn.MultiheadAttention(4, 2).in_proj_weight}) do
      assert.are.equal("float64", p:dtype(), name)
    end
    assert.are.equal("float64", pt.distributions.Normal(0, 1).loc:dtype())
    -- a model trains in float64 from start to end
    local m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    local loss = nn.cross_entropy(m(pt.randn(5, 3)), pt.tensor({1, 2, 1, 2, 1}, {dtype = "int64"}))
    loss:backward()
    assert.are.equal("float64", m[1].weight.grad:dtype())
  end)

  it("refuses non-floating dtypes", function()
    support.assert_error("set_default_dtype: only floating-point types are supported as the default type (float32, "
      .. "float64), got int64", pt.set_default_dtype, "int64")
    assert.are.equal("float32", pt.get_default_dtype())
  end)
end)
