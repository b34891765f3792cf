-- pt.utils.checkpoint / checkpoint_sequential (activation checkpointing, torch.utils.checkpoint).
local pt = require "partrain"
local nn = pt.nn
local support = require "spec.support"
local assert_error, errmsg = support.assert_error, support.errmsg

local function max_diff(a, b) return (a - b):abs():max():item() end

-- two copies of one small network
local function twin_nets(seed)
  pt.manual_seed(seed)
  local function make()
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Dropout(0.3), nn.Linear(8, 8), nn.ReLU(),
      nn.Linear(8, 3)):double()
  end
  local a = make()
  local b = make()
  b:load_state_dict(a:state_dict())
  return a, b
end

describe("pt.utils.checkpoint", function()
  it("gives the gradients of the plain forward, dropout included", function()
    local plain, ck = twin_nets(1)
    local x = pt.randn(4, 5, {dtype = "float64"})
    local x1, x2 = x:clone(), x:clone()
    x1.requires_grad, x2.requires_grad = true, true
    pt.manual_seed(7)
    local y1 = plain(x1)
    pt.manual_seed(7)
    local y2 = pt.utils.checkpoint(ck, x2)
    assert.are.equal("CheckpointBackward", y2.grad_fn)
    assert.is_true(max_diff(y1, y2) == 0)
    ;(y1 * y1):sum():backward()
    ;(y2 * y2):sum():backward()
    for i, p in ipairs(plain:parameters()) do
      assert.is_true(max_diff(p.grad, ck:parameters()[i].grad) < 1e-14)
    end
    assert.is_true(max_diff(x1.grad, x2.grad) < 1e-14)
  end)

  it("gives parameters their gradients when no argument requires grad", function()
    local plain, ck = twin_nets(2)
    plain:eval()
    ck:eval()
    local x = pt.randn(3, 5, {dtype = "float64"})
    plain(x):sum():backward()
    pt.utils.checkpoint(ck, x):sum():backward()
    for i, p in ipairs(plain:parameters()) do
      assert.is_true(max_diff(p.grad, ck:parameters()[i].grad) < 1e-14)
    end
  end)

  it("passes several results and non-tensor arguments through", function()
    local w = pt.randn(3, {dtype = "float64", requires_grad = true})
    local x = pt.randn(3, {dtype = "float64", requires_grad = true})
    local function f(t, scale, label)
      assert.are.equal("tag", label)
      return (t * w):exp() * scale, t:sin()
    end
    local a, b = pt.utils.checkpoint(f, x, 2, "tag")
    ;(a:sum() + b:sum()):backward()
    local ex = (x:detach() * w:detach()):exp()
    assert.is_true(max_diff(x.grad, ex * w:detach() * 2 + x:detach():cos()) < 1e-14)
    assert.is_true(max_diff(w.grad, ex * x:detach() * 2) < 1e-14)
  end)

  it("keeps the generator's own sequence going after the recomputation", function()
    local _, ck = twin_nets(3)
    local x = pt.randn(2, 5, {dtype = "float64", requires_grad = true})
    pt.manual_seed(11)
    local y = pt.utils.checkpoint(ck, x)
    local after_forward = pt.rand(3)
    pt.manual_seed(11)
    local _ = pt.utils.checkpoint(ck, x)
    y:sum():backward() -- recomputes with the forward's state, then puts the current one back
    assert.is_true(max_diff(pt.rand(3), after_forward) == 0)
  end)

  it("refuses what the reentrant form cannot do, with clear messages", function()
    local x = pt.randn(3, {dtype = "float64", requires_grad = true})
    local y = pt.utils.checkpoint(function(t) return t:exp() end, x)
    assert.matches("checkpoint: not compatible with autograd.grad %(its backward accumulates into .grad%); use backward%(%)",
      errmsg(function() pt.autograd.grad(y:sum(), x) end))
    local y2 = pt.utils.checkpoint(function(t) return t:exp() end, x)
    assert.matches("checkpoint: create_graph is not supported through a checkpoint",
      errmsg(function() y2:sum():backward({create_graph = true}) end))
    assert_error("checkpoint: expected a function (or a module) to run, got number",
      function() pt.utils.checkpoint(3, x) end)
    assert_error("checkpoint: unknown option 'preserve'", function() pt.utils.checkpoint({preserve = 1}, print, x) end)
    assert_error("checkpoint: use_reentrant = false is not supported (partrain's checkpoint is the reentrant one)",
      function() pt.utils.checkpoint({use_reentrant = false}, print, x) end)
  end)

  it("runs without the generator when asked", function()
    local x = pt.randn(3, {dtype = "float64", requires_grad = true})
    local y = pt.utils.checkpoint({preserve_rng_state = false}, function(t) return t * t end, x)
    y:sum():backward()
    assert.is_true(max_diff(x.grad, x:detach() * 2) < 1e-15)
  end)
end)

describe("pt.utils.checkpoint_sequential", function()
  it("matches the plain Sequential for every number of segments", function()
    for segments = 1, 7 do
      local plain, ck = twin_nets(20 + segments)
      plain:eval()
      ck:eval()
      local x1 = pt.randn(4, 5, {dtype = "float64", requires_grad = true})
      local x2 = x1:detach():clone()
      x2.requires_grad = true
      local y1 = plain(x1)
      local y2 = pt.utils.checkpoint_sequential(ck, segments, x2)
      assert.is_true(max_diff(y1, y2) == 0)
      y1:sum():backward()
      y2:sum():backward()
      for i, p in ipairs(plain:parameters()) do
        assert.is_true(max_diff(p.grad, ck:parameters()[i].grad) < 1e-14)
      end
      assert.is_true(max_diff(x1.grad, x2.grad) < 1e-14)
    end
  end)

  it("takes a list of functions and checks its arguments", function()
    local x = pt.randn(3, {dtype = "float64", requires_grad = true})
    local y = pt.utils.checkpoint_sequential({function(t) return t * 2 end, pt.exp, pt.sin}, 2, x)
    y:sum():backward()
    local e = (x:detach() * 2):exp()
    assert.is_true(max_diff(x.grad, e:cos() * e * 2) < 1e-14)
    assert_error("checkpoint_sequential: segments must be a positive integer, got 0",
      function() pt.utils.checkpoint_sequential({pt.exp}, 0, x) end)
    assert_error("checkpoint_sequential: input must be a tensor, got number",
      function() pt.utils.checkpoint_sequential({pt.exp}, 1, 3) end)
    assert_error("checkpoint_sequential: expected a Sequential or a list of functions, got string",
      function() pt.utils.checkpoint_sequential("x", 1, x) end)
  end)
end)
