-- pt.trapezoid, pt.trapz and pt.cumulative_trapezoid against torch 1.13's values, with gradchecks.
local pt = require "partrain"
local support = require "spec.support"
local gradcheck = require "spec.gradcheck"

local F64 = {dtype = "float64"}

describe("trapezoid", function()
  local y = pt.tensor({{1, 2, 4}, {3, 5, 6}}, F64)
  local x1 = pt.tensor({0, 1, 3}, F64)
  it("gives torch's integrals with x, dx and dim", function()
    assert.are.same({4.5, 9.5}, pt.trapezoid(y):tolist())
    assert.are.same({2.0, 3.5, 5.0}, pt.trapezoid(y, {dim = 1}):tolist())
    assert.are.same({2.25, 4.75}, pt.trapezoid(y, {dx = 0.5}):tolist())
    assert.are.same({7.5, 15.0}, pt.trapezoid(y, x1):tolist())
    assert.are.same({7.5, 10.75}, pt.trapezoid(y, pt.tensor({{0, 1, 3}, {0, 2, 2.5}}, F64)):tolist())
    local i = pt.trapezoid(pt.tensor({1, 2, 4}, {dtype = "int64"}))
    assert.are.equal("float32", i:dtype())
    assert.are.equal(4.5, i:item())
    assert.are.equal(9, pt.trapezoid(pt.tensor({1, 2, 4}, {dtype = "int64"}), {dx = 2}):item())
    assert.are.same({0, 0}, pt.trapezoid(pt.zeros(2, 0)):tolist())
    assert.are.equal(0, pt.trapezoid(pt.tensor({5})):item())
    assert.are.equal(3, pt.trapezoid(pt.tensor({1, 2}), pt.tensor({0, 2}, {dtype = "int64"})):item())
    assert.are.same({9, 19}, pt.trapz(y, {dx = 2}):tolist())
  end)
  it("cumulative_trapezoid gives torch's running integrals", function()
    assert.are.same({{1.5, 4.5}, {4.0, 9.5}}, pt.cumulative_trapezoid(y):tolist())
    assert.are.same({{1.5, 7.5}, {4.0, 15.0}}, pt.cumulative_trapezoid(y, x1):tolist())
    assert.are.same({{4, 7, 10}}, pt.cumulative_trapezoid(y, {dx = 2, dim = 1}):tolist())
    assert.are.same({2, 0}, pt.cumulative_trapezoid(pt.zeros(2, 0)):size())
    assert.are.same({0}, pt.cumulative_trapezoid(pt.tensor({5})):size())
  end)
  it("has gradients for y and x (float64 finite differences)", function()
    local yy = pt.randn(3, 4, F64)
    local xx = pt.tensor({0, 0.5, 1.7, 2}, F64)
    assert.is_true(gradcheck(function(a, b) return pt.trapezoid(a, b) end, {yy, xx}))
    assert.is_true(gradcheck(function(a) return pt.trapezoid(a, {dx = 0.3, dim = 1}) end, {yy}))
    assert.is_true(gradcheck(function(a, b) return pt.cumulative_trapezoid(a, b) end, {yy, xx}))
  end)
  it("explains bad arguments", function()
    support.assert_error("trapezoid: there must be one x value for each sample point: x has 2, y has 3 along "
      .. "dimension 2", pt.trapezoid, y, pt.tensor({0, 1}, F64))
    support.assert_error("trapz: there must be one x value for each sample point: x has 2, y has 3 along dimension 2",
      pt.trapz, y, pt.tensor({0, 1}, F64))
    support.assert_error("trapezoid: expects a tensor with at least 1 dimension", pt.trapezoid, pt.tensor(5))
    support.assert_error("trapezoid: give x or dx, not both", pt.trapezoid, y, x1, {dx = 2})
    support.assert_error("cumulative_trapezoid: unknown option 'dimension' (options: dx, dim)", pt.cumulative_trapezoid,
      y, {dimension = 1})
    support.assert_error("trapezoid: x must be a tensor, got number", pt.trapezoid, y, 2)
  end)
end)
