-- pt.autograd.Function: custom operations with a Lua forward and backward (torch.autograd.Function).
local pt = require "partrain"
local gradcheck = require "spec.gradcheck"
local support = require "spec.support"
local assert_error, errmsg = support.assert_error, support.errmsg
local Function = pt.autograd.Function

local function f64(v, opts)
  opts = opts or {}
  opts.dtype = "float64"
  return pt.tensor(v, opts)
end

local function close(t, expected, tol)
  local a = t:reshape(-1):tolist()
  local b = pt.is_tensor(expected) and expected:reshape(-1):tolist() or expected
  assert.are.equal(#b, #a)
  for i = 1, #a do
    assert(math.abs(a[i] - b[i]) <= (tol or 1e-12) * math.max(1, math.abs(b[i])),
      string.format("element %d: got %.17g, expected %.17g", i, a[i], b[i]))
  end
end

local Exp = Function:extend("Exp")
function Exp.forward(ctx, x)
  local y = x:exp()
  ctx:save_for_backward(y)
  return y
end
function Exp.backward(ctx, gy) return gy * ctx.saved_tensors[1] end

-- y = x * w + b with w a plain number (a non-tensor argument) and a tensor b of broadcast shape
local Affine = Function:extend("Affine")
function Affine.forward(ctx, x, w, b)
  ctx.w = w
  return x * w + b
end
function Affine.backward(ctx, g)
  return g * ctx.w, nil, g -- b's gradient comes back in the output's shape: summed to b's
end

describe("autograd.Function", function()
  it("runs forward, records one node named after the class and runs backward", function()
    local x = f64({0.5, 1, -1}, {requires_grad = true})
    local y = Exp.apply(x)
    assert.are.equal("ExpBackward", y.grad_fn)
    assert.is_true(y.requires_grad)
    close(y, x:detach():exp())
    y:sum():backward()
    close(x.grad, x:detach():exp())
    local z = Exp(x) -- calling the class is apply
    assert.are.equal("ExpBackward", z.grad_fn)
  end)

  it("passes finite-difference gradient checks", function()
    gradcheck(function(x) return Exp.apply(x) end, {pt.randn(3, 4, {dtype = "float64"})})
    gradcheck(function(x, b) return Affine.apply(x, 2.5, b) end,
      {pt.randn(2, 3, {dtype = "float64"}), pt.randn(3, {dtype = "float64"})})
  end)

  it("sums a broadcast gradient back to the argument's shape and converts its dtype", function()
    local x = f64({{1, 2, 3}, {4, 5, 6}}, {requires_grad = true})
    local b = f64({0, 0, 0}, {requires_grad = true})
    Affine.apply(x, 3, b):sum():backward()
    close(b.grad, {2, 2, 2})
    close(x.grad, {3, 3, 3, 3, 3, 3})
    local ToF32 = Function:extend("ToF32")
    function ToF32.forward(_, t) return t * 2 end
    function ToF32.backward(_, g) return (g * 2):to("float32") end
    local t = f64({1, 2}, {requires_grad = true})
    ToF32.apply(t):sum():backward()
    assert.are.equal("float64", t.grad:dtype())
    close(t.grad, {2, 2})
  end)

  it("gives ctx.needs_input_grad per argument", function()
    local seen
    local Probe = Function:extend("Probe")
    function Probe.forward(ctx, a, b, c)
      seen = ctx.needs_input_grad
      return a + b
    end
    function Probe.backward(_, g) return g, g, nil end
    local a = f64({1}, {requires_grad = true})
    Probe.apply(a, f64({2}), "c")
    assert.are.same({true, false, false}, seen)
  end)

  it("records nothing when no argument requires grad or under no_grad", function()
    local x = f64({1, 2})
    local y = Exp.apply(x)
    assert.is_nil(y.grad_fn)
    assert.is_false(y.requires_grad)
    local r = f64({1}, {requires_grad = true})
    local z = pt.no_grad(function() return Exp.apply(r) end)
    assert.is_nil(z.grad_fn)
  end)

  it("runs forward with recording off", function()
    local inner
    local Peek = Function:extend("Peek")
    function Peek.forward(_, x)
      local y = x * 2
      inner = y.grad_fn
      assert.is_false(pt.is_grad_enabled())
      return y
    end
    function Peek.backward(_, g) return g * 2 end
    local x = f64({1}, {requires_grad = true})
    local y = Peek.apply(x)
    assert.is_nil(inner)
    assert.are.equal("PeekBackward", y.grad_fn)
    assert.is_true(pt.is_grad_enabled())
  end)

  it("runs the backward once per pass with the gradients of all results", function()
    local calls = 0
    local SumProd = Function:extend("SumProd")
    function SumProd.forward(ctx, a, b)
      ctx:save_for_backward(a, b)
      return a * b, a + b, "note", 7
    end
    function SumProd.backward(ctx, gp, gs, gnote, g7)
      calls = calls + 1
      assert.is_nil(gnote)
      assert.is_nil(g7)
      local s = ctx.saved_tensors
      return gp * s[2] + gs, gp * s[1] + gs
    end
    local a = f64({1, 2}, {requires_grad = true})
    local b = f64({3, 4}, {requires_grad = true})
    local p, s, note, seven = SumProd.apply(a, b)
    assert.are.equal("note", note)
    assert.are.equal(7, seven)
    assert.are.equal("SumProdBackward", p.grad_fn)
    assert.are.equal("SumProdBackward", s.grad_fn)
    ;(p:sum() * 2 + s:sum() * 3):backward()
    assert.are.equal(1, calls)
    close(a.grad, {2 * 3 + 3, 2 * 4 + 3})
    close(b.grad, {2 * 1 + 3, 2 * 2 + 3})
    -- one result used: the other's gradient arrives as zeros
    a.grad, b.grad = nil, nil
    local p2 = SumProd.apply(a, b)
    p2:sum():backward()
    assert.are.equal(2, calls)
    close(a.grad, {3, 4})
    close(b.grad, {1, 2})
    gradcheck(function(x, y)
      local u, v = SumProd.apply(x, y)
      return u * 3 + v:exp()
    end, {pt.randn(2, 3, {dtype = "float64"}), pt.randn(2, 3, {dtype = "float64"})})
  end)

  it("gives second derivatives under create_graph, through saved results too", function()
    local x = f64({0.5, 1, -0.25}, {requires_grad = true})
    local g = pt.autograd.grad(Exp.apply(x):sum(), x, {create_graph = true})
    assert.is_not_nil(g.grad_fn)
    local gg = pt.autograd.grad(g:sum(), x)
    close(gg, x:detach():exp())
    -- two results, the backward reading a saved result: y1 = x^2, y2 = x^3 (saved)
    local Pow = Function:extend("Pow23")
    function Pow.forward(ctx, t)
      local y2, y3 = t * t, t * t * t
      ctx:save_for_backward(t, y3)
      return y2, y3
    end
    function Pow.backward(ctx, g2, g3)
      local s = ctx.saved_tensors
      -- d(x^3)/dx written through the saved result: 3 y3 / x
      return g2 * 2 * s[1] + g3 * 3 * s[2] / s[1]
    end
    local t = f64({0.5, 2}, {requires_grad = true})
    local a, b = Pow.apply(t)
    local d1 = pt.autograd.grad((a + b):sum(), t, {create_graph = true})
    close(d1, {2 * 0.5 + 3 * 0.25, 2 * 2 + 3 * 4})
    local d2 = pt.autograd.grad(d1:sum(), t)
    close(d2, {2 + 6 * 0.5, 2 + 6 * 2})
  end)

  it("hands non-differentiable results zeros, or nil with set_materialize_grads(false)", function()
    local got = {}
    local Idx = Function:extend("WithIndex")
    function Idx.forward(ctx, x, materialize)
      ctx:set_materialize_grads(materialize)
      local idx = pt.tensor({1, 2}, {dtype = "int64"})
      local marked = x * 1
      ctx:mark_non_differentiable(marked)
      return x * 2, idx, marked
    end
    function Idx.backward(_, g, gidx, gmarked)
      got = {gidx, gmarked}
      return g * 2, nil
    end
    local x = f64({1, 2}, {requires_grad = true})
    local y, idx, marked = Idx.apply(x, true)
    assert.is_false(idx.requires_grad)
    assert.is_false(marked.requires_grad)
    assert.is_nil(marked.grad_fn)
    y:sum():backward()
    close(x.grad, {2, 2})
    close(got[1], {0, 0})
    close(got[2], {0, 0})
    local y2 = Idx.apply(x, false)
    y2:sum():backward()
    assert.is_nil(got[1])
    assert.is_nil(got[2])
  end)

  it("gives an input changed in place and marked dirty the function's history", function()
    local Double = Function:extend("DoubleInPlace")
    function Double.forward(ctx, t)
      t:mul_(2)
      ctx:mark_dirty(t)
      return t
    end
    function Double.backward(_, g) return g * 2 end
    local a = f64({1, 2}, {requires_grad = true})
    local h = a * 3
    local r = Double.apply(h)
    assert.is_true(rawequal(r, h))
    assert.are.equal("DoubleInPlaceBackward", h.grad_fn)
    close(h, {6, 12})
    h:sum():backward()
    close(a.grad, {6, 6})
    assert_error("autograd.Function: a leaf Variable that requires grad is being used in an in-place "
      .. "operation (output 1 was marked dirty)", function() Double.apply(a) end)
    local base = a * 1
    assert_error("autograd.Function: mark_dirty on a view is not supported (output 1 is a view; change its "
      .. "base in place and mark that instead)", function() Double.apply(base:narrow(1, 1, 1)) end)
  end)

  it("refuses a saved tensor changed in place before the backward", function()
    local Keep = Function:extend("Keep")
    function Keep.forward(ctx, x, w)
      ctx:save_for_backward(w)
      return x * w
    end
    function Keep.backward(ctx, g) return g * ctx.saved_tensors[1], nil end
    local x = f64({1, 2}, {requires_grad = true})
    local w = f64({3, 4})
    local y = Keep.apply(x, w)
    w:add_(1)
    local err = errmsg(function() y:sum():backward() end)
    assert.matches("KeepBackward: one of the variables needed for gradient computation has been modified "
      .. "by an inplace operation: saved tensor 1 of shape {2} is at version %d+; expected version %d+", err)
  end)

  it("reports wrong gradients with the function's name", function()
    local function fn_with(backward, nargs)
      local F = Function:extend("Bad")
      function F.forward(_, x) return x * 1 end
      F.backward = backward
      return function()
        local x = f64({1, 2}, {requires_grad = true})
        local args = {x}
        for i = 2, nargs or 1 do args[i] = 5 end
        F.apply(table.unpack(args)):sum():backward()
      end
    end
    assert_error("function BadBackward returned an incorrect number of gradients (expected 2, got 1)",
      fn_with(function(_, g) return g end, 2))
    assert_error("function BadBackward returned an incorrect number of gradients (expected 1, got 2)",
      fn_with(function(_, g) return g, g end))
    assert_error("function BadBackward returned a string as the gradient of argument 1 (expected a tensor or nil)",
      fn_with(function() return "x" end))
    assert_error("function BadBackward returned a gradient different than nil at position 2, but the "
      .. "corresponding forward input was not a tensor", fn_with(function(_, g) return g, g end, 2))
    assert_error("BadBackward: the gradient returned for argument 1 has shape {3}; expected a shape compatible "
      .. "with {2}", fn_with(function() return f64({1, 2, 3}) end))
    assert_error("BadBackward: the gradient returned for argument 1 has dtype int64 (a floating point tensor "
      .. "was expected)", fn_with(function() return pt.tensor({1, 2}, {dtype = "int64"}) end))
    -- a result of nil is no gradient
    local F = Function:extend("NoGrad")
    function F.forward(_, x) return x * 1 end
    function F.backward() return nil end
    local x = f64({1}, {requires_grad = true})
    F.apply(x):sum():backward()
    assert.is_nil(x.grad)
  end)

  it("raises an error of the backward as it was raised, and keeps working", function()
    local Boom = Function:extend("Boom")
    function Boom.forward(_, x) return x * 1 end
    function Boom.backward() error({code = 42}) end
    local x = f64({1}, {requires_grad = true})
    local ok, err = pcall(function() Boom.apply(x):sum():backward() end)
    assert.is_false(ok)
    assert.are.same({code = 42}, err)
    local Boom2 = Function:extend("Boom2")
    function Boom2.forward(_, t) return t * 1 end
    function Boom2.backward() error("no backward today") end
    local msg = errmsg(function() Boom2.apply(x):sum():backward() end)
    assert.matches("autograd_function_spec.lua:%d+: no backward today$", msg)
    -- the next pass works
    Exp.apply(x):sum():backward()
    close(x.grad, {math.exp(1)})
  end)

  it("restores recording after an error in forward", function()
    local Fail = Function:extend("Fail")
    function Fail.forward() error("forward failed") end
    function Fail.backward() end
    local x = f64({1}, {requires_grad = true})
    assert.matches("forward failed", errmsg(function() Fail.apply(x) end))
    assert.is_true(pt.is_grad_enabled())
  end)

  it("explains misuse", function()
    assert_error("Function:extend: expected a class name (string), got number", function() Function:extend(3) end)
    assert_error("Function.extend: call it as pt.autograd.Function:extend(\"Name\")",
      function() Function.extend({}, "X") end)
    assert_error("autograd.Function.apply: extend the class first (local F = pt.autograd.Function:extend(\"F\"))",
      function() Function.apply(f64({1})) end)
    local NoBack = Function:extend("NoBack")
    function NoBack.forward(_, x) return x end
    assert_error("autograd.Function: backward is not defined (define Class.backward(ctx, grad, ...))", function()
      NoBack.apply(f64({1}, {requires_grad = true})):sum():backward()
    end)
    local Save = Function:extend("Save")
    function Save.forward(ctx, x)
      ctx:save_for_backward(x, 3)
      return x
    end
    assert_error("save_for_backward: argument 2 is a number; only tensors (or nil) can be saved (keep other "
      .. "values as fields of ctx)", function() Save.apply(f64({1})) end)
    local Twice = Function:extend("Twice")
    function Twice.forward(_, a)
      local y = a * 2
      return y, y
    end
    assert_error("Twice.apply: forward returned the same tensor twice (outputs 1 and 2)",
      function() Twice.apply(f64({1}, {requires_grad = true})) end)
  end)

  it("takes any number of arguments that require grad", function()
    -- y = sum_i c_i * x_i with c_i = i, over 1..9 tensor arguments (fan-in nodes past 4)
    local Lin = Function:extend("LinComb")
    function Lin.forward(ctx, ...)
      ctx.n = select("#", ...)
      local y
      for i = 1, ctx.n do
        local t = select(i, ...) * i
        y = y and y + t or t
      end
      ctx:save_for_backward(...)
      return y * y
    end
    function Lin.backward(ctx, g)
      local xs = ctx.saved_tensors
      local y
      for i = 1, ctx.n do
        local t = xs[i] * i
        y = y and y + t or t
      end
      local out = {}
      for i = 1, ctx.n do out[i] = g * 2 * y * i end
      return table.unpack(out, 1, ctx.n)
    end
    for n = 1, 9 do
      local xs = {}
      for i = 1, n do xs[i] = pt.randn(2, {dtype = "float64"}) end
      gradcheck(function(...) return Lin.apply(...) end, xs)
    end
    -- some of them not requiring grad, and second derivatives through the chain
    local xs = {}
    for i = 1, 7 do xs[i] = f64({0.1 * i, -0.2 * i}, {requires_grad = i % 3 ~= 0}) end
    local y = Lin.apply(table.unpack(xs))
    local g = pt.autograd.grad(y:sum(), {xs[1], xs[7]}, {create_graph = true})
    local s = 0
    for i = 1, 7 do s = s + i * i * 0.1 end -- y = (s, -2s) elementwise, dy/dx_i = 2 y i
    close(g[1], {2 * s * 1, -4 * s * 1})
    close(g[2], {2 * s * 7, -4 * s * 7})
    local gg = pt.autograd.grad(g[2]:sum(), xs[7]) -- d/dx7 of 2 y 7 = 2 * 7 * 7
    close(gg, {98, 98})
  end)

  it("frees its saved tensors when a backward without retain_graph is done, as torch", function()
    local weak = setmetatable({}, {__mode = "v"})
    local Hold = Function:extend("Hold")
    function Hold.forward(ctx, x)
      local big = x * 2
      weak[1] = big
      ctx:save_for_backward(big)
      return x * 1
    end
    function Hold.backward(ctx, g) return g * ctx.saved_tensors[1] end
    local x = f64({1, 2}, {requires_grad = true})
    local y = Hold.apply(x)
    y:sum():backward({retain_graph = true})
    collectgarbage()
    assert.is_not_nil(weak[1]) -- kept for the next pass
    y:sum():backward()
    close(x.grad, {4, 8})
    collectgarbage()
    collectgarbage()
    assert.is_nil(weak[1]) -- gone although y (and its node) still lives
    assert.matches("backward through the graph a second time", errmsg(function() y:sum():backward() end))
  end)

  it("keeps no record alive after its graph goes, whatever the passes (retain_graph, nested)", function()
    local ctxs = setmetatable({}, {__mode = "k"})
    local Track = Function:extend("Track")
    function Track.forward(ctx, x)
      ctxs[ctx] = true
      ctx:save_for_backward(x)
      return x * 2
    end
    function Track.backward(_, g) return g * 2 end
    local x = f64({1, 2}, {requires_grad = true})
    for _ = 1, 50 do
      local y = Track.apply(x)
      y:sum():backward({retain_graph = true})
      -- and a checkpoint, whose backward runs a nested pass
      pt.utils.checkpoint(function(t) return Track.apply(t) end, x):sum():backward()
    end
    collectgarbage()
    collectgarbage()
    pt._fn_records() -- sweeps the records of nodes nothing holds
    collectgarbage()
    collectgarbage()
    assert.are.equal(nil, next(ctxs))
  end)

  it("lets go of its records when the graph goes", function()
    collectgarbage()
    local before = pt._fn_records()
    for _ = 1, 200 do
      local x = f64({1, 2}, {requires_grad = true})
      local _ = Exp.apply(x)
    end
    collectgarbage()
    collectgarbage()
    assert.are.equal(before, pt._fn_records())
  end)

  it("works inside par_by_sample workers (the backward runs in the worker)", function()
    local nn = pt.nn
    local Square = Function:extend("Square")
    function Square.forward(ctx, t)
      ctx:save_for_backward(t)
      return t * t
    end
    function Square.backward(ctx, g) return 2 * g * ctx.saved_tensors[1] end
    local xs = pt.randn(6, 3, {dtype = "float64"})
    local dataset = {get = function(_, i) return {x = xs[i]} end, len = function() return 6 end}
    local handler = pt.data.DataHandler(dataset)
    pt.manual_seed(3)
    local model = nn.Linear(3, 1):double()
    local ref = nn.Linear(3, 1):double()
    ref:load_state_dict(model:state_dict())
    handler:par_by_sample(model, 2, function(sample, m)
      local loss = Square.apply(m(sample.x)):sum()
      loss:backward()
      return loss:item()
    end)
    -- the same gradients computed here with the built-in ops
    for i = 1, 2 do
      local y = ref(xs[i])
      ;(y * y):sum():backward()
    end
    close(model.weight.grad, ref.weight.grad, 1e-12)
    close(model.bias.grad, ref.bias.grad, 1e-12)
  end)

  it("says so when a backward runs outside its state (a DataParallel replica)", function()
    local nn = pt.nn
    local Sq = Function:extend("Sq")
    function Sq.forward(ctx, t)
      ctx:save_for_backward(t)
      return t * t
    end
    function Sq.backward(ctx, g) return 2 * g * ctx.saved_tensors[1] end
    local Net = nn.Module:extend("SqNet")
    function Net:__init() self.fc = nn.Linear(3, 2) end
    function Net:forward(x) return Sq.apply(self.fc(x)) end
    local dp = nn.DataParallel(Net(), {devices = {"cpu:1", "cpu:2"}})
    local err = errmsg(function() dp(pt.randn(8, 3)):sum():backward() end)
    assert.matches("SqBackward: the backward of an autograd.Function runs only in the Lua state that ran its "
      .. "forward (this pass runs outside Lua)", err, 1, true)
  end)
end)
