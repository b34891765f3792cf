-- pt.autograd.functional (jacobian, hessian, vjp, jvp, vhp, hvp) and pt.autograd.gradcheck /
-- gradgradcheck. Every expected number below was computed with torch 1.13
-- (torch.autograd.functional and torch.autograd.gradcheck on the same float64 inputs).
local pt = require "partrain"
local support = require "spec.support"
local assert_error, errmsg = support.assert_error, support.errmsg
local assert_close = support.assert_close_with(1e-12)

local F = pt.autograd.functional
local D = {dtype = "float64"}
local function f64(v) return pt.tensor(v, D) end
local x = f64({0.5, -1.0, 2.0})
local y = f64({1.5, 0.25})
local v3 = f64({1.0, 2.0, 3.0})
local v2 = f64({-1.0, 0.5})

local function leaf(t) return t:detach():clone():requires_grad_() end

-- the lists of a (nested) result as numbers
local function lists(r)
  if pt.is_tensor(r) then return r:tolist() end
  local out = {}
  for i, e in ipairs(r) do out[i] = lists(e) end
  return out
end

describe("autograd.functional.jacobian", function()
  it("of a tensor function of a tensor is a tensor of shape out .. in (torch 1.13's values)", function()
    local J = F.jacobian(function(a) return a:exp() * a:sum() end, x)
    assert.are.same({3, 3}, J:size())
    assert.are.equal("float64", J:dtype())
    assert_close(J, {{4.121803176750321, 1.6487212707001282, 1.6487212707001282},
                     {0.36787944117144233, 0.9196986029286058, 0.36787944117144233},
                     {7.38905609893065, 7.38905609893065, 18.472640247326623}})
    -- 0-d in and out: a 0-d Jacobian
    local J0 = F.jacobian(function(s) return s * s * s end, f64(3.0))
    assert.are.equal(0, J0:dim())
    assert_close(J0, {27.0})
  end)

  it("nests lists as torch nests tuples: J[i] for list outputs, J[j] for list inputs, J[i][j] for both", function()
    local J = F.jacobian(function(a) return {a:exp(), a:sum() * a} end, x)
    assert.are.equal(2, #J)
    assert_close(J[1], {{1.6487212707001282, 0, 0}, {0, 0.36787944117144233, 0}, {0, 0, 7.38905609893065}})
    assert_close(J[2], {{2.0, 0.5, 0.5}, {-1.0, 0.5, -1.0}, {2.0, 2.0, 3.5}})
    J = F.jacobian(function(a, b) return a * b:sum() end, {x, y})
    assert.are.same({3, 2}, J[2]:size())
    assert_close(J[1], {{1.75, 0, 0}, {0, 1.75, 0}, {0, 0, 1.75}})
    assert_close(J[2], {{0.5, 0.5}, {-1.0, -1.0}, {2.0, 2.0}})
    J = F.jacobian(function(a, b) return {a:sin() * b:sum(), (a * a):sum() * b} end, {x, y})
    assert_close(J[1][1], {{1.5357694833081523, 0, 0}, {0, 0.9455290352692446, 0}, {0, 0, -0.7282569639574992}})
    assert_close(J[1][2], {{0.479425538604203, 0.479425538604203}, {-0.8414709848078965, -0.8414709848078965},
                           {0.9092974268256817, 0.9092974268256817}})
    assert_close(J[2][1], {{1.5, -3.0, 6.0}, {0.25, -0.5, 1.0}})
    assert_close(J[2][2], {{5.25, 0}, {0, 5.25}})
  end)

  it("gives zeros for an input an output does not depend on, and for an output that needs no grad", function()
    local J = F.jacobian(function(a, b) return a * 2 end, {x, y})
    assert_close(J[1], {{2, 0, 0}, {0, 2, 0}, {0, 0, 2}})
    assert_close(J[2], {{0, 0}, {0, 0}, {0, 0}})
    assert_close(F.jacobian(function() return pt.ones(2, D) end, x), {{0, 0, 0}, {0, 0, 0}})
  end)

  it("with create_graph=true is differentiable back to the inputs; without, detached", function()
    local xr = leaf(x)
    local J = F.jacobian(function(a) return a ^ 3 end, xr, {create_graph = true})
    assert.is_not_nil(J.grad_fn)
    assert_close(pt.autograd.grad(J:sum(), xr), {3.0, -6.0, 12.0})
    J = F.jacobian(function(a) return a ^ 3 end, xr)
    assert.is_nil(J.grad_fn)
    assert.is_false(J.requires_grad)
    assert.is_nil(xr.grad)
  end)

  it("strict=true refuses outputs that need no grad and inputs they do not depend on, as torch", function()
    assert_error("autograd.functional.jacobian: output 1 of the user-provided function does not require gradients. " ..
      "The outputs must be computed in a differentiable manner from the input when running in strict mode",
      F.jacobian, function() return pt.ones(2, D) end, x, {strict = true})
    assert_error("autograd.functional.jacobian: output 1 of the user-provided function is independent of input 2. " ..
      "This is not allowed in strict mode",
      F.jacobian, function(a) return a * 2 end, {x, y}, {strict = true})
    assert_error("autograd.functional.jacobian: the jacobian of the user-provided function is independent of input 1. " ..
      "This is not allowed in strict mode when create_graph=true",
      F.jacobian, function(a) return a * 2 end, x, {strict = true, create_graph = true})
  end)

  it("vectorize=true gives the same values and refuses strict, as torch", function()
    local J = F.jacobian(function(a, b) return {a * b:sum(), a:exp()} end, {x, y}, {vectorize = true})
    assert_close(J[1][1], {{1.75, 0, 0}, {0, 1.75, 0}, {0, 0, 1.75}})
    assert_close(J[2][2], {{0, 0}, {0, 0}, {0, 0}})
    assert_error("autograd.functional.jacobian: strict=true and vectorize=true are not supported together. " ..
      "Please either set strict=false or vectorize=false",
      F.jacobian, function(a) return a * 2 end, x, {vectorize = true, strict = true})
  end)

  it("strategy=\"forward-mode\" gives torch's columns in the outputs' dtype, with torch's conditions", function()
    local J = F.jacobian(function(a, b) return {a * b:sum(), a:exp()} end, {x, y},
                         {vectorize = true, strategy = "forward-mode"})
    assert_close(J[1][1], {{1.75, 0, 0}, {0, 1.75, 0}, {0, 0, 1.75}})
    assert_close(J[1][2], {{0.5, 0.5}, {-1.0, -1.0}, {2.0, 2.0}})
    assert_close(J[2][1], {{1.6487212707001282, 0, 0}, {0, 0.36787944117144233, 0}, {0, 0, 7.38905609893065}})
    assert_close(J[2][2], {{0, 0}, {0, 0}, {0, 0}})
    -- torch: the forward-mode Jacobian has the output's dtype, the reverse-mode one the input's
    local function half(a) return (a * 2):float() end
    assert.are.equal("float32", F.jacobian(half, x, {vectorize = true, strategy = "forward-mode"}):dtype())
    assert.are.equal("float64", F.jacobian(half, x):dtype())
    assert_error('autograd.functional.jacobian: create_graph=true and strategy="forward-mode" are not supported ' ..
      'together (yet). Please either set create_graph=false or strategy="reverse-mode"',
      F.jacobian, half, x, {strategy = "forward-mode", create_graph = true})
    assert_error('autograd.functional.jacobian: strict=true and strategy="forward-mode" are not supported together ' ..
      '(yet). Please either set strict=false or strategy="reverse-mode"',
      F.jacobian, half, x, {strategy = "forward-mode", strict = true, vectorize = true})
    assert_error('autograd.functional.jacobian: computing the Jacobian with strategy="forward-mode" is only ' ..
      'implemented for vectorize=true', F.jacobian, half, x, {strategy = "forward-mode"})
    assert_error('autograd.functional.jacobian: expected strategy to be either "forward-mode" or "reverse-mode", ' ..
      'got "sideways". Hint: if your function has more outputs than inputs, "forward-mode" tends to be more ' ..
      'performant. Otherwise, prefer to use "reverse-mode"', F.jacobian, half, x, {strategy = "sideways"})
  end)

  it("checks its arguments and what the function returns", function()
    local function double(a) return a * 2 end
    assert_error("autograd.functional.jacobian: inputs must be a tensor or a list of tensors, got number",
      F.jacobian, double, 3)
    assert_error("autograd.functional.jacobian: inputs must be a tensor or a list of tensors, but the value at " ..
      "index 2 has type number", F.jacobian, double, {x, 3})
    assert_error("autograd.functional.jacobian: outputs of the user-provided function must be a tensor or a list " ..
      "of tensors, got number", F.jacobian, function() return 3 end, x)
    assert_error("autograd.functional.jacobian: outputs of the user-provided function must be a tensor or a list " ..
      "of tensors, but the value at index 2 has type string", F.jacobian, function(a) return {a, "b"} end, x)
    assert_error("autograd.functional.jacobian: the user-provided function returned 2 values; return a tensor or a " ..
      "list of tensors", F.jacobian, function(a) return a, a end, x)
    assert_error("autograd.functional.jacobian: func must be a function, got string", F.jacobian, "f", x)
    assert_error("autograd.functional.jacobian: inputs[1] must be a floating point tensor to be differentiated, " ..
      "got int64", F.jacobian, double, pt.tensor({1, 2}, {dtype = "int64"}))
    assert_error("autograd.functional.jacobian: unknown option 'stric' (options: create_graph, strict, vectorize, " ..
      "strategy)", F.jacobian, double, x, {stric = true})
    assert_error("autograd.functional.jacobian: strict must be a boolean, got number", F.jacobian, double, x,
      {strict = 1})
    assert_error("autograd.functional.jacobian: expected an options table as argument 3, got Tensor", F.jacobian,
      double, x, x)
    assert_error("autograd.functional.jacobian: unexpected argument #4 (table)", F.jacobian, double, x, {}, {})
    -- a callable table is a function
    local callable = setmetatable({}, {__call = function(_, a) return a * 3 end})
    assert_close(F.jacobian(callable, f64({1.0, 2.0})), {{3, 0}, {0, 3}})
  end)
end)

describe("autograd.functional.hessian", function()
  local function s(a) return (a:sin() * a):sum() end

  it("of a scalar function of a tensor is a tensor of shape in .. in (torch 1.13's values)", function()
    local H = F.hessian(s, x)
    assert.are.same({3, 3}, H:size())
    assert_close(H, {{1.515452354478644, 0, 0}, {0, 0.23913362692838303, 0}, {0, 0, -2.6508885267456486}})
  end)

  it("of a list of inputs is H[i][j]", function()
    local H = F.hessian(function(a, b) return (a * a):sum() * b:exp():sum() end, {x, y})
    assert.are.same({3, 2}, H[1][2]:size())
    assert_close(H[1][1], {{11.531428974051611, 0, 0}, {0, 11.531428974051611, 0}, {0, 0, 11.531428974051611}})
    assert_close(H[1][2], {{4.4816890703380645, 1.2840254166877414}, {-8.963378140676129, -2.568050833375483},
                           {17.926756281352258, 5.136101666750966}})
    assert_close(H[2][1], {{4.4816890703380645, -8.963378140676129, 17.926756281352258},
                           {1.2840254166877414, -2.568050833375483, 5.136101666750966}})
    assert_close(H[2][2], {{23.528867619274838, 0}, {0, 6.741133437610642}})
  end)

  it("takes create_graph, outer_jacobian_strategy and strict as torch", function()
    local xr = leaf(x)
    local H = F.hessian(function(a) return (a ^ 3):sum() end, xr, {create_graph = true})
    assert.is_not_nil(H.grad_fn)
    assert_close(pt.autograd.grad(H:sum(), xr), {6.0, 6.0, 6.0})
    assert_close(F.hessian(s, x, {vectorize = true, outer_jacobian_strategy = "forward-mode"}),
      {{1.515452354478644, 0, 0}, {0, 0.23913362692838303, 0}, {0, 0, -2.6508885267456486}})
    local linear = function(a) return (a * 2):sum() end
    assert_close(F.hessian(linear, x), {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}})
    assert_error("autograd.functional.hessian: while computing the hessian, found that the jacobian of the " ..
      "user-provided function with respect to input 1 is independent of the input. This is not allowed in strict " ..
      "mode. You should ensure that your function is twice differentiable and that the jacobian depends on the " ..
      "inputs (this would be violated by a linear function for example)", F.hessian, linear, x, {strict = true})
    assert_error('autograd.functional.hessian: expected outer_jacobian_strategy to be either "forward-mode" or ' ..
      '"reverse-mode", got "up"', F.hessian, s, x, {outer_jacobian_strategy = "up"})
    assert_error("autograd.functional.hessian: unknown option 'strategy' (options: create_graph, strict, vectorize, " ..
      "outer_jacobian_strategy)", F.hessian, s, x, {strategy = "reverse-mode"})
  end)

  it("wants a function returning one tensor of one element", function()
    assert_error("autograd.functional.hessian: the tensor returned by the function given to hessian should contain " ..
      "a single element", F.hessian, function(a) return a * 2 end, x)
    assert_error("autograd.functional.hessian: the function given to hessian should return a single tensor",
      F.hessian, function(a) return {(a * a):sum()} end, x)
  end)
end)

describe("autograd.functional.vjp and jvp", function()
  local function f(a) return a:exp() * a:sum() end

  it("give func's output and v^T J / J v (torch 1.13's values)", function()
    local out, r = F.vjp(f, x, v3)
    assert_close(out, {2.4730819060501923, 0.5518191617571635, 11.083584148395975})
    assert_close(r, {27.024730355885158, 25.655286773349292, 57.80240089502289})
    out, r = F.jvp(f, x, v3)
    assert_close(out, {2.4730819060501923, 0.5518191617571635, 11.083584148395975})
    assert_close(r, {12.365409530250961, 3.310914970542981, 77.58508903877183})
  end)

  it("take lists of inputs, outputs and v", function()
    local out, r = F.vjp(function(a, b) return {a * b:sum(), a:exp()} end, {x, y}, {v3, v3})
    assert_close(out[1], {0.875, -1.75, 3.5})
    assert_close(out[2], {1.6487212707001282, 0.36787944117144233, 7.38905609893065})
    assert_close(r[1], {3.398721270700128, 4.235758882342885, 27.41716829679195})
    assert_close(r[2], {4.5, 4.5})
    out, r = F.jvp(function(a, b) return {a * b:sum(), (a * a):sum() * b} end, {x, y}, {v3, v2})
    assert_close(out[2], {7.875, 1.3125})
    assert_close(r[1], {1.5, 4.0, 4.25})
    assert_close(r[2], {8.25, 4.875})
  end)

  it("leave v out for one one-element output (vjp) or input (jvp), with options in its place", function()
    local out, r = F.vjp(function(a) return (a * a):sum() end, x)
    assert_close(out, {5.25})
    assert_close(r, {1.0, -2.0, 4.0})
    out, r = F.jvp(function(a) return a:sin() * 2 end, f64({0.3}), {strict = true})
    assert_close(out, {0.5910404133226791})
    assert_close(r, {1.910672978251212})
    assert_error("autograd.functional.vjp: the vector v can only be nil if the user-provided function returns a " ..
      "single tensor with a single element", F.vjp, function(a) return a * 2 end, x)
    assert_error("autograd.functional.jvp: the vector v can only be nil if the input to the user-provided function " ..
      "is a single tensor with a single element", F.jvp, function(a) return a * 2 end, x)
  end)

  it("with create_graph=true give results differentiable back to the inputs; without, detached", function()
    local xr = leaf(x)
    for _, fn in ipairs {F.vjp, F.jvp} do
      local out, r = fn(function(a) return a ^ 3 end, xr, v3, {create_graph = true})
      assert.is_not_nil(out.grad_fn)
      assert.is_not_nil(r.grad_fn)
      assert_close(pt.autograd.grad(r:sum(), xr), {3.0, -12.0, 36.0})
      out, r = fn(function(a) return a ^ 3 end, xr, v3)
      assert.is_nil(out.grad_fn)
      assert.is_nil(r.grad_fn)
      assert.is_false(out.requires_grad)
    end
  end)

  it("give zeros where nothing depends, and strict errors as torch", function()
    local w = pt.tensor({0.3, 0.7}, {dtype = "float64", requires_grad = true})
    local out, r = F.jvp(function(a) return {a * a, w * 2} end, x, x)
    assert_close(out[2], {0.6, 1.4})
    assert_close(r[1], {0.5, 2.0, 8.0})
    assert_close(r[2], {0, 0})
    local _, g = F.vjp(function(a) return a * 2 end, {x, y}, v3)
    assert_close(g[2], {0, 0})
    assert_error("autograd.functional.vjp: the output of the user-provided function is independent of input 2. " ..
      "This is not allowed in strict mode",
      F.vjp, function(a) return a * 2 end, {x, y}, v3, {strict = true})
    assert_error("autograd.functional.vjp: the jacobian of the user-provided function is independent of input 1. " ..
      "This is not allowed in strict mode when create_graph=true",
      F.vjp, function(a) return a * 2 end, x, v3, {strict = true, create_graph = true})
    assert_error("autograd.functional.vjp: output 1 of the user-provided function does not require gradients. " ..
      "The outputs must be computed in a differentiable manner from the input when running in strict mode",
      F.vjp, function() return pt.ones(3, D) end, x, v3, {strict = true})
    assert_error("autograd.functional.jvp: the output of the user-provided function is independent of input 2. " ..
      "This is not allowed in strict mode",
      F.jvp, function(a) return a * a end, {x, y}, {x, y}, {strict = true})
    assert_error("autograd.functional.jvp: the gradient with respect to the input is independent of entry 2 in the " ..
      "grad_outputs when using the double backward trick to compute forward mode gradients. This is not allowed " ..
      "in strict mode", F.jvp, function(a) return {a * a, w * 2} end, x, x, {strict = true})
    assert.is_nil(w.grad)
  end)

  it("check v against the outputs (vjp) or the inputs (jvp)", function()
    local function double(a) return a * 2 end
    local function pair(a) return {a * 2, a} end
    assert_error("autograd.functional.vjp: v has invalid size: should be {3} but got {2}", F.vjp, double, x, y)
    assert_error("autograd.functional.vjp: entry 2 in v has invalid size: should be {3} but got {2}", F.vjp, pair, x,
      {v3, y})
    assert_error("autograd.functional.vjp: v is a list of invalid length: should be 2 but got 1", F.vjp, pair, x, {v3})
    assert_error("autograd.functional.vjp: the given v should contain a single tensor", F.vjp, double, x, {v3, v3})
    assert_error("autograd.functional.jvp: v has invalid size: should be {3} but got {2}", F.jvp, double, x, y)
    assert_error("autograd.functional.jvp: v must be a tensor or a list of tensors, got number", F.jvp, double, x, 1)
    assert_error("autograd.functional.vjp: v must be a tensor or a list of tensors, but the value at index 1 has " ..
      "type boolean", F.vjp, double, x, {true})
    assert_error("autograd.functional.vjp: unknown option 'retain_graph' (options: create_graph, strict)", F.vjp,
      double, x, v3, {retain_graph = true})
    assert_error("autograd.functional.jvp: unexpected argument #5 (number)", F.jvp, double, x, v3, {}, 5)
    -- a float32 v for a float64 output, as torch
    local _, r = F.vjp(double, x, pt.ones(3))
    assert_close(r, {2, 2, 2})
  end)
end)

describe("autograd.functional.vhp and hvp", function()
  local function s2(a, b) return (a:sin() * b:sum()):sum() + (b ^ 3):sum() end

  it("give func's output and v^T H / H v (torch 1.13's values)", function()
    local function s(a) return (a:sin() * a):sum() end
    for _, fn in ipairs {F.vhp, F.hvp} do
      local out, r = fn(s, x, v3)
      assert_close(out, {2.8997786077613616})
      assert_close(r, {1.515452354478644, 0.47826725385676605, -7.952665580236944})
      out, r = fn(s2, {x, y}, {v3, v2})
      assert.are.equal(0, out:dim())
      assert_close(out, {4.34831596608848})
      assert_close(r[1], {-1.2777859735025416, 2.6749972938935676, -4.565738072561258})
      assert_close(r[2], {-8.290253336014775, 1.459746663985225})
      out, r = fn(function(t) return (t ^ 4):sum() end, f64(1.5))
      assert_close(out, {5.0625})
      assert_close(r, {27.0})
    end
  end)

  it("with create_graph=true are differentiable back to the inputs", function()
    local xr = leaf(x)
    for _, fn in ipairs {F.vhp, F.hvp} do
      local out, r = fn(function(a) return (a ^ 3):sum() end, xr, v3, {create_graph = true})
      assert.is_not_nil(out.grad_fn)
      assert_close(pt.autograd.grad(r:sum(), xr), {6.0, 12.0, 18.0})
      out, r = fn(function(a) return (a ^ 3):sum() end, xr, v3)
      assert.is_nil(r.grad_fn)
    end
  end)

  it("give zeros where nothing depends, and strict errors as torch", function()
    local w = pt.tensor({0.3, 0.7}, {dtype = "float64", requires_grad = true})
    local function sw(a, b) return (a * a):sum() + (b * w):sum() end
    local out, r = F.hvp(sw, {x, y}, {x, y})
    assert_close(out, {5.875})
    assert_close(r[1], {1, -2, 4})
    assert_close(r[2], {0, 0})
    assert_error("autograd.functional.vhp: the jacobian of the user-provided function is independent of input 2. " ..
      "This is not allowed in strict mode", F.vhp, sw, {x, y}, {x, y}, {strict = true})
    assert_error("autograd.functional.hvp: the hessian of the user-provided function is independent of entry 2 in " ..
      "the grad_jacobian. This is not allowed in strict mode as it prevents from using the double backward trick " ..
      "to replace forward mode AD", F.hvp, sw, {x, y}, {x, y}, {strict = true})
    assert_error("autograd.functional.vhp: while computing the hessian, found that the jacobian of the " ..
      "user-provided function with respect to input 1 is independent of the input. This is not allowed in strict " ..
      "mode. You should ensure that your function is twice differentiable and that the jacobian depends on the " ..
      "inputs (this would be violated by a linear function for example)",
      F.vhp, function(a) return (a * 2):sum() end, x, x, {strict = true})
  end)

  it("want one tensor of one element from the function", function()
    assert_error("autograd.functional.vhp: the tensor returned by the function given to vhp should contain a single " ..
      "element", F.vhp, function(a) return a * a end, x, v3)
    assert_error("autograd.functional.hvp: the function given to hvp should return a single tensor", F.hvp,
      function(a) return {(a * a):sum()} end, x, v3)
    assert_error("autograd.functional.hvp: the vector v can only be nil if the input to the user-provided function " ..
      "is a single tensor with a single element", F.hvp, function(a) return (a * a):sum() end, x)
  end)
end)

describe("autograd.gradcheck", function()
  local gradcheck = pt.autograd.gradcheck
  local xr, yr

  before_each(function()
    xr, yr = leaf(x), leaf(f64({{1.5, 0.25}, {-0.5, 0.75}}))
  end)

  it("passes for correct gradients (several inputs and outputs, a number among the inputs)", function()
    local function g(a, b, k) return {a:sin() * b:sum() * k, (a * a):sum() * b} end
    assert.is_true(gradcheck(g, {xr, yr, 3}))
    assert.is_true(gradcheck(g, {xr, yr, 3}, {fast_mode = true}))
    assert.is_true(gradcheck(function(a) return a:exp() end, xr, {check_grad_dtypes = true}))
    -- an input that does not require grad is passed along unchecked
    assert.is_true(gradcheck(function(a, b) return a * b end, {xr, v3}))
    -- the caller's tensors are unchanged
    assert.are.same(x:tolist(), xr:tolist())
    assert.is_nil(xr.grad)
  end)

  it("fails for a wrong backward with torch's message, the worst element and both Jacobians", function()
    -- a * a:detach(): the analytical gradient misses the detached factor (torch 1.13's Jacobians:
    -- numerical diag(1, -2, 4), analytical diag(0.5, -1, 2))
    local function wrong(a) return a * a:detach() end
    local msg = errmsg(gradcheck, wrong, xr)
    assert.matches("^[^\n]*:%d+: autograd%.gradcheck: Jacobian mismatch for output 1 with respect to input 1,\n" ..
      "worst at output element {3} and input element {3}: numerical 4[%.%d]*, analytical 2\n" ..
      "numerical %(a row per input element, a column per output element%):\ntensor%({{ 1%.0000,", msg)
    assert.matches("\nanalytical:\ntensor%({{ 0%.5000,  0%.0000,  0%.0000},\n", msg)
    assert.is_false(gradcheck(wrong, xr, {raise_exception = false}))
    -- fast mode reports v^T J u and the slow mode's worst element
    msg = errmsg(gradcheck, wrong, xr, {fast_mode = true})
    assert.matches("autograd%.gradcheck: Jacobian mismatch for output 1 with respect to input 1,\nnumerical:[-%d.]+\n" ..
      "analytical:[-%d.]+\n%(fast mode: v%^T J u for random unit vectors u and v%.%) In slow mode, the max " ..
      "per%-element difference is 2[%.%d]*, worst at output element {3} and input element {3}: numerical 4[%.%d]*, " ..
      "analytical 2$", msg)
    assert.is_false(gradcheck(wrong, xr, {fast_mode = true, raise_exception = false}))
    -- the position among the outputs and inputs, not among the differentiable ones
    msg = errmsg(gradcheck, function(a, b, c) return {a:detach(), a * b + c * c:detach()} end, {x, xr, leaf(v3)})
    assert.matches("Jacobian mismatch for output 2 with respect to input 3,\n", msg)
  end)

  it("takes eps, atol and rtol as torch", function()
    -- a^3 at 1: with eps = 0.1 the central difference is 3.01 (torch 1.13: numerical 3.0100, analytical 3)
    local one = leaf(f64({1.0}))
    local function cube(a) return a ^ 3 end
    assert.is_true(gradcheck(cube, one))
    assert.matches("numerical 3%.01", errmsg(gradcheck, cube, one, {eps = 0.1}))
    -- an analytical gradient off by 3e-5: within the default rtol, not with rtol=0, again with atol=1e-4
    local function off(a) return a * 2 + (a * 3e-5):detach() end
    assert.is_true(gradcheck(off, xr))
    assert.matches("Jacobian mismatch for output 1 with respect to input 1", errmsg(gradcheck, off, xr, {rtol = 0}))
    assert.is_true(gradcheck(off, xr, {rtol = 0, atol = 1e-4}))
  end)

  it("checks that backward is reentrant, within nondet_tol", function()
    -- a hook that scales the gradient a little more on every call: two runs of the same
    -- backward differ by ~1e-12
    local calls = 0
    local function drifting(a)
      local h = a * 1
      h:register_hook(function(g)
        calls = calls + 1
        return g * (1 + calls * 1e-12)
      end)
      return h * 2
    end
    assert_error("autograd.gradcheck: backward is not reentrant, i.e., running backward with the same input and " ..
      "grad_output several times gives different values, although the analytical gradient matches the numerical " ..
      "gradient. The tolerance for nondeterminism was 0", gradcheck, drifting, xr)
    assert.is_true(gradcheck(drifting, xr, {nondet_tol = 1e-6}))
    assert.is_false(gradcheck(drifting, xr, {fast_mode = true, raise_exception = false}))
  end)

  it("checks that zero grad_outputs give zero gradients", function()
    -- a hook that adds 1 to a gradient that is all zeros: every Jacobian row is right
    local function leaky(a)
      local h = a * 1
      h:register_hook(function(g)
        if g:abs():sum():item() == 0 then return g + 1 end
      end)
      return h * 2
    end
    assert_error("autograd.gradcheck: backward not multiplied by grad_output", gradcheck, leaky, xr)
    assert.is_false(gradcheck(leaky, xr, {raise_exception = false}))
  end)

  it("with check_undefined_grad leaves each of several outputs out of the backward in turn", function()
    -- wrong only when output 1 sends no gradient and the others send zeros
    local function needs_first(a)
      local called = false
      local h = a * 1
      local o1, o2 = h * 2, h * 3
      o1:register_hook(function() called = true end)
      h:register_hook(function(g)
        local missing = not called
        called = false
        if missing and g:abs():sum():item() == 0 then return g + 1 end
      end)
      return {o1, o2}
    end
    assert_error("autograd.gradcheck: expected all input gradients to be nil or zero when the outputs get zero or " ..
      "no gradient (differentiable output 1 left out)", gradcheck, needs_first, xr)
    assert.is_true(gradcheck(needs_first, xr, {check_undefined_grad = false}))
  end)

  it("with no differentiable output wants zero numerical gradients", function()
    assert.is_true(gradcheck(function() return pt.zeros(2, D) end, xr))
    assert.is_true(gradcheck(function() return pt.zeros(2, D) end, xr, {fast_mode = true}))
    assert_error("autograd.gradcheck: numerical gradient for function expected to be zero", gradcheck,
      function(a) return (a * 2):detach() end, xr)
    assert_error("autograd.gradcheck: numerical gradient for function expected to be zero", gradcheck,
      function(a) return (a * 2):detach() end, xr, {fast_mode = true})
  end)

  it("refuses inputs it cannot check and functions that change shape when perturbed", function()
    assert_error("autograd.gradcheck: expects at least one input tensor to require gradient, but none of them have " ..
      "requires_grad=true", gradcheck, function(a) return a * 2 end, x)
    assert_error("autograd.gradcheck: input 1 has a dimension with stride 0. gradcheck only supports inputs that " ..
      "are non-overlapping to be able to compute the numerical gradients correctly. You should call :contiguous() " ..
      "on the input before passing it to gradcheck", gradcheck, function(a) return a * 2 end, xr:expand(2, 3))
    -- raise_exception=false does not cover them (torch raises these too)
    assert_error("autograd.gradcheck: expects at least one input tensor to require gradient, but none of them have " ..
      "requires_grad=true", gradcheck, function(a) return a * 2 end, x, {raise_exception = false})
    local function jumpy(a)
      if a:_get_flat(1) > 0.5 then return (a * 2):narrow(1, 1, 2) end
      return a * 2
    end
    assert_error("autograd.gradcheck: expected fn to return outputs with the same shape when inputs are perturbed on " ..
      "index {1} of input 1 by 1e-06, but got shapes {3} and {2}", gradcheck, jumpy, xr)
    assert_error("autograd.gradcheck: outputs of fn must be a tensor or a list of tensors, got number", gradcheck,
      function() return 1 end, xr)
    assert_error("autograd.gradcheck: fn must be a function, got nil", gradcheck, nil, xr)
    assert_error("autograd.gradcheck: inputs must be a tensor or a list, got number", gradcheck,
      function(a) return a end, 2)
    assert_error("autograd.gradcheck: unknown option 'check_forward_ad' (options: eps, atol, rtol, raise_exception, " ..
      "nondet_tol, check_undefined_grad, check_grad_dtypes, fast_mode)", gradcheck, function(a) return a end, xr,
      {check_forward_ad = true})
    assert_error("autograd.gradcheck: eps must be a number, got string", gradcheck, function(a) return a end, xr,
      {eps = "1e-6"})
    assert_error("autograd.gradcheck: raise_exception must be a boolean, got number", gradcheck,
      function(a) return a end, xr, {raise_exception = 0})
  end)

  it("warns once on stderr for an input that requires grad and is not float64", function()
    local q = support.quote
    local chunk = "local a = pt.ones(3, {requires_grad = true}) " ..
      "for _ = 1, 2 do io.write(tostring(pt.autograd.gradcheck(function(t) return t * 2 end, a, " ..
      "{eps = 1e-2, atol = 1e-2})), ' ') end"
    local p = io.popen(q(support.exe) .. " -e " .. q(chunk) .. " 2>&1")
    local out = p:read("a")
    p:close()
    assert.are.equal("autograd.gradcheck: warning: input 1 requires gradient and is not a double precision " ..
      "floating point tensor (float32); this check will likely fail if the inputs are not float64\ntrue true ", out)
  end)
end)

describe("autograd.gradgradcheck", function()
  local gradgradcheck = pt.autograd.gradgradcheck

  -- a^3 whose first derivative is right (3a^2) but whose second is not: the detached factors
  -- make the gradient's graph 2 a g instead of 6 a g (torch 1.13: gradcheck passes, gradgradcheck
  -- fails with numerical diag(3, -12, 36), analytical diag(1, -4, 12) for grad_outputs {1, 2, 3})
  local function cube(a) return (a * a):detach() * a + ((a * a) - (a * a):detach()) * a:detach() end

  it("passes for correct second derivatives, with given or random grad_outputs", function()
    local xr, yr = leaf(x), leaf(y)
    local function g(a, b) return {a:sin() * b:sum(), (a * a):sum() * b} end
    pt.manual_seed(7)
    assert.is_true(gradgradcheck(g, {xr, yr}))
    assert.is_true(gradgradcheck(g, {xr, yr}, {gen_non_contig_grad_outputs = true}))
    assert.is_true(gradgradcheck(g, {xr, yr}, {leaf(v3), leaf(v2)}, {fast_mode = true}))
    assert.is_true(gradgradcheck(function(a) return a:exp():sum() end, xr, leaf(f64(0.5))))
    assert.is_true(pt.autograd.gradcheck(cube, xr))
  end)

  it("fails where only the second derivative is wrong", function()
    local xr = leaf(x)
    local msg = errmsg(gradgradcheck, cube, xr, leaf(v3))
    assert.matches("autograd%.gradgradcheck: Jacobian mismatch for output 1 with respect to input 1,\n" ..
      "worst at output element {3} and input element {3}: numerical 36[%.%d]*, analytical 12\n", msg)
    assert.is_false(gradgradcheck(cube, xr, leaf(v3), {raise_exception = false}))
    assert.is_false(gradgradcheck(cube, xr, {raise_exception = false}))
  end)

  it("checks its arguments", function()
    local xr = leaf(x)
    assert_error("autograd.gradgradcheck: grad_outputs must be a tensor or a list of tensors, but the value at " ..
      "index 1 has type number", gradgradcheck, cube, xr, {1})
    assert_error("autograd.gradgradcheck: unknown option 'eps_' (options: eps, atol, rtol, " ..
      "gen_non_contig_grad_outputs, raise_exception, nondet_tol, check_undefined_grad, check_grad_dtypes, " ..
      "fast_mode)", gradgradcheck, cube, xr, {eps_ = 1})
    assert_error("autograd.gradgradcheck: gen_non_contig_grad_outputs must be a boolean, got string", gradgradcheck,
      cube, xr, nil, {gen_non_contig_grad_outputs = "yes"})
  end)
end)

describe("help", function()
  it("documents the functional helpers and the checks", function()
    for _, f in ipairs {F.jacobian, F.hessian, F.vjp, F.jvp, F.vhp, F.hvp, pt.autograd.gradcheck,
                        pt.autograd.gradgradcheck} do
      assert.is_string(pt._docs[f])
    end
    assert.matches("^functional%.jacobian%(func, inputs", pt.help.text(F.jacobian))
    assert.matches("^pt%.autograd%.gradcheck%(fn, inputs", pt.help.text(pt.autograd.gradcheck))
    assert.matches("\n  functional +pt%.autograd%.functional: ", pt.help.text(pt.autograd))
  end)
end)

describe("autograd.gradcheck on functions that return their argument", function()
  local pt = require "partrain"
  it("passes the identity and views of the input (the outputs are copied at each perturbation)", function()
    local x = pt.randn(3, {dtype = "float64", requires_grad = true})
    assert.is_true(pt.autograd.gradcheck(function(t) return t end, {x}))
    assert.is_true(pt.autograd.gradcheck(function(t) return t:view(3, 1) end, {x}))
  end)
end)
