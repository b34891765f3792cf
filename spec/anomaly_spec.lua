-- pt.autograd anomaly detection (set_detect_anomaly, detect_anomaly, is_anomaly_enabled).
local pt = require "partrain"
local support = require "spec.support"
local errmsg = support.errmsg

local function f64(v, opts)
  opts = opts or {}
  opts.dtype = "float64"
  return pt.tensor(v, opts)
end

describe("anomaly detection", function()
  after_each(function() pt.autograd.set_detect_anomaly(false) end)

  it("stops at the node that returned NaN and names the forward call that created it", function()
    local x = f64({0, 1, 4}, {requires_grad = true})
    pt.autograd.set_detect_anomaly(true)
    local function root(t) return t:sqrt() end -- d sqrt(x) at 0 is inf, times 0: nan
    local z = (root(x) * 0):sum()
    local err = errmsg(function() z:backward() end)
    assert.matches("anomaly_spec.lua:%d+: SqrtBackward: returned nan values in the gradient of its input 1 "
      .. "%(anomaly detection%)\nThe forward call that created SqrtBackward:\nstack traceback:\n", err)
    assert.matches("anomaly_spec.lua:18: in .*root", err) -- the line of t:sqrt()
    assert.is_nil(x.grad)
  end)

  it("lets NaN through when off, as before", function()
    local x = f64({0, 1}, {requires_grad = true})
    assert.is_false(pt.autograd.is_anomaly_enabled())
    ;(x:sqrt() * 0):sum():backward()
    local g = x.grad:tolist()
    assert.is_true(g[1] ~= g[1])
    assert.are.equal(0, g[2])
  end)

  it("adds the forward call to other backward errors", function()
    pt.autograd.set_detect_anomaly(true)
    local a = f64({1, 2}, {requires_grad = true})
    local h = a * 2
    local y = h * h -- saves h
    h:add_(1)
    local err = errmsg(function() y:sum():backward() end)
    assert.matches("MulBackward: one of the variables needed for gradient computation has been modified by "
      .. "an inplace operation", err, 1, true)
    assert.matches("The forward call that created MulBackward:\nstack traceback:\n", err, 1, true)
  end)

  it("names the Lua line of an autograd.Function whose backward returns NaN", function()
    local Bad = pt.autograd.Function:extend("NanGrad")
    function Bad.forward(_, t) return t * 1 end
    function Bad.backward(_, g) return g / 0 * 0 end
    local x = f64({1}, {requires_grad = true})
    local err = pt.autograd.detect_anomaly(function()
      local y = Bad.apply(x)
      return errmsg(function() y:sum():backward() end)
    end)
    assert.matches("NanGradBackward: returned nan values in the gradient of its input 1", err)
    assert.matches("anomaly_spec.lua:%d+: in function", err)
    assert.is_false(pt.autograd.is_anomaly_enabled())
  end)

  it("keeps a hook's error object as it was raised", function()
    pt.autograd.set_detect_anomaly(true)
    local x = f64({1}, {requires_grad = true})
    local y = x * 2
    y:register_hook(function() error({why = "hook"}) end)
    local ok, err = pcall(function() y:sum():backward() end)
    assert.is_false(ok)
    assert.are.same({why = "hook"}, err)
    -- and the next pass works
    local z = (x * 3):sum()
    z:backward()
    assert.are.same({3}, x.grad:tolist())
  end)

  it("detect_anomaly(fn, ...) returns fn's results and restores the setting, also after an error", function()
    local a, b = pt.autograd.detect_anomaly(function(v) return v + 1, pt.autograd.is_anomaly_enabled() end, 1)
    assert.are.equal(2, a)
    assert.is_true(b)
    assert.is_false(pt.autograd.is_anomaly_enabled())
    pt.autograd.set_detect_anomaly(true)
    assert.matches("boom", errmsg(function() pt.autograd.detect_anomaly(function() error("boom") end) end))
    assert.is_true(pt.autograd.is_anomaly_enabled())
  end)

  it("trains as usual with it on", function()
    pt.manual_seed(5)
    local model = pt.nn.Sequential(pt.nn.Linear(4, 8), pt.nn.ReLU(), pt.nn.Linear(8, 2))
    local opt = pt.optim.SGD(model:parameters(), {lr = 0.1})
    local x, y = pt.randn(16, 4), pt.randint(1, 3, {16})
    local first, last
    pt.autograd.detect_anomaly(function()
      for step = 1, 30 do
        opt:zero_grad()
        local loss = pt.nn.cross_entropy(model(x), y)
        loss:backward()
        opt:step()
        if step == 1 then first = loss:item() end
        last = loss:item()
      end
    end)
    assert.is_true(last < first)
  end)
end)
