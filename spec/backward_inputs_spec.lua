-- t:backward's `inputs` option and pt.autograd.backward (several roots in one pass), as
-- torch 1.13's Tensor.backward(inputs=) and torch.autograd.backward. Expected values are
-- torch 1.13's on the same inputs (run once with /usr/bin/python3; not at test time).
local pt = require "partrain"
local support = require "spec.support"
local assert_close = support.assert_close_with(1e-12)

local function leaf(v) return pt.tensor(v, {dtype = "float64"}):requires_grad_() end

describe("t:backward({inputs = ...})", function()
  it("fills only the given tensors' .grad, leaves and non-leaves", function()
    local x, w = leaf({1, 2}), leaf({3, 4})
    local h = x * 2
    local z = (h * w):sum()
    z:backward(nil, {inputs = {x, h}})
    assert_close({6, 8}, x.grad)
    assert_close({3, 4}, h.grad)
    assert.is_nil(w.grad)
  end)

  it("takes one tensor as well as a list, and adds to .grad like backward", function()
    local x = leaf({1, 2})
    local a = (x * 3):sum()
    a:backward({inputs = x})
    local b = (x * 3):sum()
    b:backward({inputs = x})
    assert_close({6, 6}, x.grad)
  end)

  it("runs the inputs' hooks before their .grad is filled (torch: 20 40, 200 400)", function()
    local x = leaf({1, 2})
    x:register_hook(function(g) return g * 10 end)
    local y = (x * x):sum()
    y:backward({inputs = {x}})
    assert_close({20, 40}, x.grad)
    local h = x * 1
    h:register_hook(function(g) return g * 100 end)
    local z = (h * h):sum()
    z:backward({inputs = {h}})
    assert_close({200, 400}, h.grad)
    assert_close({20, 40}, x.grad) -- x was not asked for this time
  end)

  it("leaves an input the outputs do not depend on alone, without an error (as torch)", function()
    local u, x = leaf({1}), leaf({1, 2})
    local y = (x * 3):sum()
    y:backward({inputs = {u}})
    assert.is_nil(u.grad)
    assert.is_nil(x.grad)
  end)

  it("runs only the part of the graph that leads to the inputs", function()
    local x, w = leaf({1, 2}), leaf({3, 4})
    local e = w:exp() -- ExpBackward never runs: w gets nothing
    local y = (x * 2):sum() + e:sum()
    y:backward({inputs = {x}})
    assert_close({2, 2}, x.grad)
    assert.is_nil(w.grad)
  end)

  it("does not add twice into a retain_grad tensor that is also an input", function()
    local x = leaf({1, 2})
    local h = x * 2
    h:retain_grad()
    local y = (h * h):sum()
    y:backward({inputs = {h, x}})
    assert_close({4, 8}, h.grad)
    assert_close({8, 16}, x.grad)
  end)

  it("with create_graph gives .grad a history (torch: grad 3 12, its gradient 6 12)", function()
    local x = leaf({1, 2})
    local y = (x * x * x):sum()
    y:backward({inputs = {x}, create_graph = true})
    assert_close({3, 12}, x.grad)
    assert.is_not_nil(x.grad.grad_fn)
    assert_close({6, 12}, pt.autograd.grad(x.grad:sum(), x))
    x.grad = nil -- its history refers to x (PyTorch's advice after create_graph)
  end)

  it("names what is wrong with inputs", function()
    local x = leaf({1, 2})
    support.assert_error("backward: one of the differentiated tensors (inputs[1]) does not require grad",
      function() (x * 2):sum():backward({inputs = {pt.tensor({1.0})}}) end)
    support.assert_error("backward: inputs is an empty list",
      function() (x * 2):sum():backward({inputs = {}}) end)
    support.assert_error("backward: inputs[2] is not a tensor (got number)",
      function() (x * 2):sum():backward({inputs = {x, 1}}) end)
    support.assert_error("backward: inputs must be a tensor or a list of tensors, got string",
      function() (x * 2):sum():backward({inputs = "x"}) end)
    support.assert_error("backward: unknown option 'input' (options: retain_graph, create_graph, inputs)",
      function() (x * 2):sum():backward({input = {x}}) end)
  end)
end)

describe("pt.autograd.backward", function()
  it("runs one pass from several tensors, their gradients summed (torch: 7 7)", function()
    local x = leaf({1, 2})
    pt.autograd.backward({(x * 3):sum(), (x * 4):sum()})
    assert_close({7, 7}, x.grad)
  end)

  it("takes grad_tensors for non-scalar tensors (torch: 11 11)", function()
    local x = leaf({1, 2})
    pt.autograd.backward({x * 3, x * 4}, {pt.ones(2, {dtype = "float64"}), pt.full({2}, 2, {dtype = "float64"})})
    assert_close({11, 11}, x.grad)
  end)

  it("takes one tensor, options in place of grad_tensors, and inputs", function()
    local x, w = leaf({1, 2}), leaf({5, 6})
    pt.autograd.backward((x * x):sum())
    assert_close({2, 4}, x.grad)
    local y = (x * w):sum()
    pt.autograd.backward(y, {retain_graph = true})
    assert_close({7, 10}, x.grad)
    assert_close({1, 2}, w.grad)
    pt.autograd.backward({y}, nil, {inputs = {w}})
    assert_close({7, 10}, x.grad)
    assert_close({2, 4}, w.grad)
  end)

  it("names what is wrong", function()
    local x = leaf({1, 2})
    support.assert_error("autograd.backward: grad can be implicitly created only for one-element outputs (tensor shape {2})",
      function() pt.autograd.backward({x * 2}) end)
    support.assert_error("autograd.backward: got 2 tensors and 1 grad_tensors",
      function() pt.autograd.backward({(x * 2):sum(), (x * 3):sum()}, pt.ones(1)) end)
    support.assert_error("autograd.backward: tensors is an empty list",
      function() pt.autograd.backward({}) end)
    support.assert_error("autograd.backward: grad_tensors must be a tensor or a list of tensors, got string",
      function() pt.autograd.backward(x * 2, "x") end)
    support.assert_error("autograd.backward: grad_tensors[1] must be a tensor or nil, got number",
      function() pt.autograd.backward({x * 2}, {3}) end)
    support.assert_error("autograd.backward: expected an options table as argument 3, got number",
      function() pt.autograd.backward({(x * 2):sum()}, nil, 5) end)
  end)
end)
