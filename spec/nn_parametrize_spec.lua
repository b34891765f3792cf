-- nn_parametrize.lua: nn.utils.parametrizations.weight_norm (PyTorch 2.0's) and parametrizations whose
-- right_inverse returns several tensors. Expected values were computed once with /usr/bin/python3 and
-- torch 1.13, with torch 2.0's _WeightNorm (torch._weight_norm, torch.norm_except_dim) registered
-- through torch 1.13's parametrize (torch dims 0, 1, None are 1, 2, false here).
local pt = require "partrain"
local nn = pt.nn
local gradcheck = require "spec.gradcheck"
local support = require "spec.support"
local assert_close = support.assert_close_with(1e-9)
local assert_error = support.assert_error

local F64 = {dtype = "float64"}
local W = {{0.5, -1.2, 0.3, 2.0}, {-0.1, 0.7, -1.5, 0.25}, {1.1, -0.05, 0.9, -0.6}}

local function linear(b)
  local m = nn.Linear(4, 3, F64)
  pt.no_grad(function()
    m.weight:copy_(pt.tensor(W, F64))
    if b then m.bias:copy_(pt.tensor(b, F64)) end
  end)
  return m
end

local keys, flat = support.state_dict_keys, support.flat

describe("nn.utils.parametrizations.weight_norm", function()
  local P = nn.utils.parametrize
  local weight_norm = nn.utils.parametrizations.weight_norm

  it("g and v as original0/original1, values, forward and gradients as torch", function()
    local m = linear({0.1, -0.2, 0.3})
    assert.are.equal(m, weight_norm(m))
    assert.is_true(P.is_parametrized(m, "weight"))
    assert.are.same({"bias", "parametrizations.weight.original0", "parametrizations.weight.original1"}, keys(m))
    local g = m.parametrizations.weight.original0
    assert.are.same({3, 1}, {g:size(1), g:size(2)})
    assert_close({2.4041630560342617, 1.6770509831248424, 1.543534904043313}, flat(g))
    assert_close(W, m.weight)
    pt.no_grad(function() g:mul_(pt.tensor({{2}, {0.5}, {1}}, F64)) end)
    assert_close({1.0, -2.4, 0.6, 4.0, -0.05, 0.35, -0.75, 0.125, 1.1, -0.05, 0.9, -0.6}, flat(m.weight))
    local y = m(pt.tensor({{1, 2, 3, 4}, {-1, 0.5, 2, -3}}, F64))
    assert_close({14.1, -1.3, 1.6, -12.9, -1.85, 2.775}, flat(y))
    y:sum():backward()
    assert_close({0.20797258270192573, -3.2795663669996915, 2.445684895178807},
      flat(m.parametrizations.weight.original0.grad))
    assert_close({-0.08650519031141868, 5.2076124567474045, 9.948096885813149, 1.6539792387543253,
      -0.09777777777777778, 1.9344444444444444, 1.0333333333333334, 0.7444444444444445,
      -1.742917103882477, 2.5792235047219307, 3.5739769150052463, 1.950682056663169},
      flat(m.parametrizations.weight.original1.grad))
    assert.is_nil(m._parameters.weight)
  end)

  it("dim=2 and dim=false (the whole tensor), as an option too", function()
    local m = weight_norm(linear(), "weight", 2)
    local g = m.parametrizations.weight.original0
    assert.are.same({1, 4}, {g:size(1), g:size(2)})
    assert_close({1.2124355652982142, 1.3901438774457844, 1.7748239349298849, 2.102974084481309}, flat(g))
    pt.no_grad(function() m.parametrizations.weight.original1:add_(0.1) end)
    assert_close({0.5422176684690383, -1.1235006502895668, 0.40191847623425025, 2.0194156897913915, 0.0,
      0.817091382028776, -1.4067146668198756, 0.33656928163189853, 1.0844353369380768, 0.051068211376798504,
      1.0047961905856255, -0.4808132594741408}, flat(m.weight))
    local m2 = weight_norm(linear(), {dim = false})
    assert.are.equal(0, m2.parametrizations.weight.original0:dim())
    assert_close(3.3128537546954893, m2.parametrizations.weight.original0)
    pt.no_grad(function() m2.parametrizations.weight.original1:add_(0.1) end)
    assert_close({0.5847477237886304, -1.072037493612489, 0.389831815859087, 2.0466170332602065, 0.0,
      0.7796636317181739, -1.3644113555068043, 0.34110283887670106, 1.169495447577261, 0.048728976982385874,
      0.9745795396477174, -0.4872897698238587}, flat(m2.weight))
  end)

  it("assigning the weight runs right_inverse; remove_parametrizations keeps the value", function()
    local m = weight_norm(linear())
    m.weight = pt.tensor(W, F64) * 2
    assert_close({4.8083261120685235, 3.3541019662496847, 3.087069808086626}, flat(m.parametrizations.weight.original0))
    assert_close(pt.tensor(W, F64) * 2, m.weight)
    assert.are.equal(m, P.remove_parametrizations(m, "weight"))
    assert.are.same({"bias", "weight"}, keys(m))
    assert.is_false(P.is_parametrized(m))
    assert.are.equal("Linear", getmetatable(m).__name)
    assert.is_true(m.weight.requires_grad)
    assert_close({1.0, -2.4, 0.6, 4.0, -0.2, 1.4, -3.0, 0.5, 2.2, -0.1, 1.8, -1.2}, flat(m.weight))
  end)

  it("state_dict round trip, cached, and inside a Sequential", function()
    local a = weight_norm(linear({0.1, 0.2, 0.3}))
    pt.no_grad(function() a.parametrizations.weight.original0:mul_(1.5) end)
    local b = weight_norm(linear())
    b:load_state_dict(a:state_dict())
    local x = pt.tensor({{1, -2, 0.5, 3}}, F64)
    assert_close(a(x), b(x))
    local w1, w2 = P.cached(function() return a.weight, a.weight end)
    assert.are.equal(w1, w2)
    local net = nn.Sequential(weight_norm(linear({0.1, 0.2, 0.3})), nn.ReLU())
    assert_close(nn.functional.relu(linear({0.1, 0.2, 0.3})(x)), net(x))
  end)

  it("gradients through the parametrized weight (finite differences)", function()
    local x = pt.tensor({{0.3, -1.1, 2.0, 0.5}, {0.7, 0.2, -0.4, 1.0}}, F64)
    local v0 = pt.tensor(W, F64)
    for _, dim in ipairs({1, 2, false}) do
      gradcheck(function(g, v)
        local m = weight_norm(nn.Linear(4, 3, {dtype = "float64", bias = false}), "weight", dim)
        local pl = m.parametrizations.weight
        pl.original0 = g
        pl.original1 = v
        return m(x)
      end, {dim == 1 and pt.tensor({{1.5}, {0.7}, {2.0}}, F64) or dim == 2 and pt.tensor({{1.5, 0.7, 2.0, 0.3}}, F64)
        or pt.tensor(2.5, F64), v0})
    end
  end)

  it("errors", function()
    assert_error("weight_norm: module must be a Module, got number", weight_norm, 3)
    assert_error("weight_norm: Module 'Linear' does not have a parameter, a buffer, or a parametrized element with name 'w'",
      weight_norm, linear(), "w")
    assert_error("weight_norm: dim 3 out of range for parameter 'weight' with 2 dims", weight_norm, linear(), "weight", 3)
    assert_error("weight_norm: dim must be a non-zero integer (1-based, negative from the end) or false (the whole tensor), got 0",
      weight_norm, linear(), "weight", 0)
    assert_error("weight_norm: unknown option 'axis'", weight_norm, linear(), {axis = 1})
    local m = weight_norm(linear())
    assert_error("remove_parametrizations: Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
      .. "parametrized in terms of a sequence of tensors.", P.remove_parametrizations, m, "weight", false)
    assert.is_true(P.is_parametrized(m, "weight"))
  end)
end)

describe("nn.utils.parametrize with several original tensors", function()
  local P = nn.utils.parametrize
  -- a + b, split evenly by right_inverse (a list of two tensors)
  local Split = nn.Module:extend("Split")
  function Split:forward(a, b) return a + b end
  function Split:right_inverse(x) return {x * 0.25, x * 0.75} end

  it("original0, original1, right_inverse on assignment, a parametrization chained after", function()
    local m = linear()
    P.register_parametrization(m, "weight", Split())
    assert.are.same({"bias", "parametrizations.weight.original0", "parametrizations.weight.original1"}, keys(m))
    assert_close(pt.tensor(W, F64) * 0.25, m.parametrizations.weight.original0)
    assert_close(W, m.weight)
    m.weight = pt.ones(3, 4, F64)
    assert_close(pt.ones(3, 4, F64) * 0.75, m.parametrizations.weight.original1)
    local Double = nn.Module:extend("Double")
    function Double:forward(x) return x * 2 end
    function Double:right_inverse(x) return x / 2 end
    P.register_parametrization(m, "weight", Double())
    assert_close(pt.ones(3, 4, F64) * 2, m.weight)
    m.weight = pt.ones(3, 4, F64) * 4
    assert_close(pt.ones(3, 4, F64) * 0.5, m.parametrizations.weight.original0)
  end)

  it("transfer_parametrizations_and_params shares original0 and original1", function()
    local a = nn.utils.parametrizations.weight_norm(linear())
    local b = nn.Linear(4, 3, F64)
    P.transfer_parametrizations_and_params(a, b)
    assert.are.equal(a.parametrizations.weight.original0, b.parametrizations.weight.original0)
    assert.are.equal(a.parametrizations.weight.original1, b.parametrizations.weight.original1)
    assert_close(a.weight, b.weight)
    assert.are.same({"bias", "parametrizations.weight.original0", "parametrizations.weight.original1"}, keys(b))
  end)

  it("right_inverse returning several results (not a list) works too", function()
    local Two = nn.Module:extend("Two")
    function Two:forward(a, b) return a * b end
    function Two:right_inverse(x) return pt.ones_like(x), x end
    local m = linear()
    P.register_parametrization(m, "weight", Two())
    assert_close(W, m.parametrizations.weight.original1)
    assert_close(W, m.weight)
  end)
end)
