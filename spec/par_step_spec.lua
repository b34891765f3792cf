-- par_by_sample's fused optimizer step (opts.step) and the batch-1 Linear paths
local pt = require "partrain"
local nn, optim, data = pt.nn, pt.optim, pt.data
local support = require "spec.support"

local function make_data(n)
  pt.manual_seed(7)
  local s = {}
  for i = 1, n do s[i] = {pt.rand(1, 12), pt.randint(1, 4, {1}, {dtype = "int64"})} end
  return {get = function(_, i) return s[i] end, len = function() return n end}
end

local fn = support.cross_entropy_step

local function train(threads, ds, sgd_opts, fused, calls, make_model)
  pt.manual_seed(3)
  local model = make_model and make_model() or nn.Sequential(nn.Linear(12, 9), nn.ReLU(), nn.Linear(9, 4))
  local opt = optim.SGD(model:parameters(), sgd_opts)
  local handler = data.DataHandler(ds)
  local all = {}
  for _ = 1, calls or 1 do
    local losses
    if fused then
      local after = 0
      losses = handler:par_by_sample(model, threads, fn, {epoch = true, step = opt,
        after_window = function() after = after + 1 end})
      assert.is_true(after > 0)
    else
      losses = handler:par_by_sample(model, threads, fn, {epoch = true, after_window = function()
        opt:step()
        opt:zero_grad()
      end})
    end
    for _, l in ipairs(losses) do all[#all + 1] = l:item() end
  end
  return model, opt, all
end

describe("par_by_sample opts.step", function()
  for _, threads in ipairs({1, 2, 3}) do
    for _, o in ipairs({{lr = 0.1}, {lr = 0.05, momentum = 0.9, weight_decay = 1e-3},
                        {lr = 0.05, momentum = 0.9, nesterov = true, maximize = true}}) do
      it(("gives the same weights as opt:step(); opt:zero_grad() in after_window (%d threads, momentum %s)")
           :format(threads, tostring(o.momentum)), function()
        local ds = make_data(11)
        local m1, o1, l1 = train(threads, ds, o, false, 2)
        local m2, o2, l2 = train(threads, ds, o, true, 2)
        assert.are.same(l1, l2)
        local p1, p2 = m1:parameters(), m2:parameters()
        for i = 1, #p1 do
          assert.is_true(pt.equal(p1[i], p2[i]), "parameter " .. i)
          assert.is_true(pt.equal(p2[i].grad, pt.zeros_like(p2[i])), "gradient " .. i .. " zeroed")
          local b1, b2 = o1.state[p1[i]].momentum_buffer, o2.state[p2[i]].momentum_buffer
          assert.are.equal(b1 == nil, b2 == nil)
          if b1 then assert.is_true(pt.equal(b1, b2), "momentum buffer " .. i) end
        end
      end)
    end
  end

  -- a batch-1 Linear's weight gradient travels as its two factors into the fused step; a
  -- weight used twice in a sample turns them into a dense buffer
  local models = {
    ["a Linear used twice per sample"] = function()
      local shared = nn.Linear(12, 12)
      return nn.Sequential(shared, nn.ReLU(), shared, nn.ReLU(), nn.Linear(12, 4))
    end,
    ["a float64 model"] = function()
      return nn.Sequential(nn.Linear(12, 9), nn.ReLU(), nn.Linear(9, 4)):double()
    end,
  }
  for name, make_model in pairs(models) do
    for _, o in ipairs({{lr = 0.1}, {lr = 0.05, momentum = 0.9}}) do
      it(("gives the same weights as the unfused path for %s (momentum %s)"):format(name, tostring(o.momentum)),
         function()
        local ds = make_data(9)
        if name:match("float64") then
          local d = {}
          for i = 1, 9 do d[i] = {ds:get(i)[1]:double(), ds:get(i)[2]} end
          ds = {get = function(_, i) return d[i] end, len = function() return 9 end}
        end
        local m1 = train(2, ds, o, false, 2, make_model)
        local m2 = train(2, ds, o, true, 2, make_model)
        pt.manual_seed(3)
        local p0 = make_model():parameters()
        local p1, p2 = m1:parameters(), m2:parameters()
        assert.are.equal(#p1, #p2)
        for i = 1, #p1 do
          assert.is_true(pt.equal(p1[i], p2[i]), "parameter " .. i)
          assert.is_false(pt.equal(p0[i], p2[i]), "parameter " .. i .. " did not move")
        end
      end)
    end
  end

  -- with 2+ threads every worker steps its own copy of the parameters; the copies must follow
  -- changes made by the user's code between windows and between calls, and a gradient left
  -- over from before the call must be read by every worker before it is zeroed
  local function run_pair(threads, o, between, make_hook, pre, close)
    local results = {}
    for _, fused in ipairs({false, true}) do
      local ds = make_data(10)
      pt.manual_seed(3)
      local model = nn.Sequential(nn.Linear(12, 9), nn.ReLU(), nn.Linear(9, 4))
      local opt = optim.SGD(model:parameters(), o)
      local handler = data.DataHandler(ds)
      local losses = {}
      local hook = make_hook and make_hook()
      for call = 1, 2 do
        if pre then pre(model) end
        local ls
        if fused then
          ls = handler:par_by_sample(model, threads, fn, {epoch = true, step = opt,
            after_window = function() if hook then hook(model) end end})
        else
          ls = handler:par_by_sample(model, threads, fn, {epoch = true, after_window = function()
            opt:step()
            opt:zero_grad()
            if hook then hook(model) end
          end})
        end
        for _, l in ipairs(ls) do losses[#losses + 1] = l:item() end
        if between and call == 1 then between(model, opt) end
      end
      results[#results + 1] = {model = model, opt = opt, losses = losses}
    end
    -- close: up to rounding (a gradient left in param.grad meets the first sample's
    -- gradient in a fused multiply-add on the unfused path)
    local same = close and function(x, y) return pt.allclose(x, y, {rtol = 1e-5, atol = 1e-6}) end or pt.equal
    local a, b = results[1], results[2]
    for i = 1, #a.losses do
      assert.is_true(same(pt.tensor(a.losses[i]), pt.tensor(b.losses[i])), "loss " .. i)
    end
    local pa, pb = a.model:parameters(), b.model:parameters()
    for i = 1, #pa do
      assert.is_true(same(pa[i], pb[i]), "parameter " .. i)
      local ba, bb = a.opt.state[pa[i]].momentum_buffer, b.opt.state[pb[i]].momentum_buffer
      if ba then assert.is_true(same(ba, bb), "momentum buffer " .. i) end
    end
  end

  for _, threads in ipairs({1, 2, 3}) do
    for _, o in ipairs({{lr = 0.1}, {lr = 0.05, momentum = 0.9}}) do
      local tag = ("(%d threads, momentum %s)"):format(threads, tostring(o.momentum))
      it("follows parameters changed in after_window " .. tag, function()
        run_pair(threads, o, nil, function()
          local w = 0
          return function(model)
            w = w + 1
            if w % 3 == 0 then pt.no_grad(function() model[1].weight:mul_(0.5) end) end
          end
        end)
      end)
      it("follows parameters and momentum buffers changed between calls " .. tag, function()
        run_pair(threads, o, function(model, opt)
          pt.no_grad(function()
            model[3].weight:fill_(0.01)
            local b = opt.state[model[1].weight].momentum_buffer
            if b then b:mul_(-1) end
          end)
        end)
      end)
      it("leaves a frozen layer alone, and steps it once an after_window hook unfreezes it " .. tag, function()
        local frozen_weights = {}
        run_pair(threads, o, nil, function()
          local w = 0
          return function(model)
            w = w + 1
            if w == 3 then
              frozen_weights[#frozen_weights + 1] = model[1].weight:clone()
              model[1].weight.requires_grad, model[1].bias.requires_grad = true, true
            end
          end
        end, function(model)
          if not model[1].weight.grad then -- the first call: frozen until the hook
            model[1].weight.requires_grad, model[1].bias.requires_grad = false, false
          end
        end)
        pt.manual_seed(3)
        local initial = nn.Sequential(nn.Linear(12, 9), nn.ReLU(), nn.Linear(9, 4))[1].weight
        assert.are.equal(2, #frozen_weights)
        for _, w in ipairs(frozen_weights) do -- both paths: unchanged for the first windows
          assert.is_true(pt.equal(w, initial))
        end
        local ds = make_data(10)
        pt.manual_seed(3)
        local model = nn.Sequential(nn.Linear(12, 9), nn.ReLU(), nn.Linear(9, 4))
        model[1].weight.requires_grad, model[1].bias.requires_grad = false, false
        local opt = optim.SGD(model:parameters(), o)
        data.DataHandler(ds):par_by_sample(model, threads, fn, {epoch = true, step = opt})
        assert.is_nil(model[1].weight.grad)
        assert.is_true(pt.equal(model[1].weight, initial))
      end)
      it("reads a gradient left from before the call in every worker " .. tag, function()
        run_pair(threads, o, nil, nil, function(model)
          for _, p in ipairs(model:parameters()) do p.grad = pt.full(p:size(), 0.25) end
        end, true)
      end)
    end
  end

  it("steps the optimizer's parameters and accumulates the others' gradients as the unfused path", function()
    for _, threads in ipairs({2, 3}) do
      local res = {}
      for _, fused in ipairs({false, true}) do
        local ds = make_data(10)
        pt.manual_seed(3)
        local model = nn.Sequential(nn.Linear(12, 9), nn.ReLU(), nn.Linear(9, 4))
        local opt = optim.SGD(model[3]:parameters(), {lr = 0.1}) -- the first layer is not stepped
        local h = data.DataHandler(ds)
        local opts = {epoch = true}
        if fused then
          opts.step = opt
        else
          opts.after_window = function() opt:step(); opt:zero_grad() end
        end
        h:par_by_sample(model, threads, fn, opts)
        res[#res + 1] = model
      end
      local a, b = res[1], res[2]
      assert.is_true(pt.equal(a[3].weight, b[3].weight), "stepped weight")
      assert.is_true(pt.equal(a[1].weight, b[1].weight), "unstepped weight")
      assert.is_true(pt.allclose(a[1].weight.grad, b[1].weight.grad, {rtol = 1e-5, atol = 1e-6}),
        "accumulated gradient of the unstepped layer")
      assert.is_false(pt.equal(b[1].weight.grad, pt.zeros_like(b[1].weight)))
    end
  end)

  it("rejects other optimizers with a clear message", function()
    local ds = make_data(4)
    local model = nn.Sequential(nn.Linear(12, 4))
    local opt = optim.Adam(model:parameters(), {lr = 0.1})
    local ok, err = pcall(function()
      data.DataHandler(ds):par_by_sample(model, 2, fn, {step = opt})
    end)
    assert.is_false(ok)
    assert.matches("step must be an optim.SGD", err)
  end)
end)

describe("par_by_sample after a call with opts.step", function()
  -- the fused window's per-worker buffers must not be added again to a later plain window
  local function setup()
    pt.manual_seed(1)
    local X = {}
    for i = 1, 6 do X[i] = pt.randn(1, 3) end
    local ds = {get = function(_, i) return X[i] end, len = function() return 6 end}
    local function square(x, m)
      local l = m(x):pow(2):sum()
      l:backward()
      return l
    end
    -- square, failing on sample 2
    local second = X[2]
    local function failing(x, m)
      if pt.equal(x, second) then error("boom") end
      return square(x, m)
    end
    pt.manual_seed(2)
    local model = nn.Linear(3, 2)
    return X, ds, square, model, optim.SGD(model:parameters(), {lr = 0.1}), failing
  end

  for _, failing in ipairs({false, true}) do
    it(("gives a plain window the gradients of its own samples only%s"):format(
         failing and " (the fused call failed)" or ""), function()
      local X, ds, square, model, opt, fails = setup()
      local h = data.DataHandler(ds)
      local ok = pcall(h.par_by_sample, h, model, 2, failing and fails or square, {step = opt}) -- [1,2]
      assert.are.equal(not failing, ok)
      if failing then h:par_by_sample(model, 2, square, {step = opt}) end -- [3,4] after the failure
      opt:zero_grad()
      local ref = nn.Linear(3, 2)
      ref:load_state_dict(model:state_dict())
      h:par_by_sample(model, 2, square) -- the next window, not stepped
      local first = failing and 5 or 3
      square(X[first], ref)
      square(X[first + 1], ref)
      assert.is_true(pt.allclose(model.bias.grad, ref.bias.grad, {rtol = 1e-6, atol = 1e-7}))
      assert.is_true(pt.allclose(model.weight.grad, ref.weight.grad, {rtol = 1e-6, atol = 1e-7}))
      -- and again: nothing left over accumulates call after call
      model:zero_grad()
      ref:zero_grad()
      h:par_by_sample(model, 2, square)
      local nxt = failing and 1 or 5
      square(X[nxt], ref)
      square(X[nxt + 1], ref)
      assert.is_true(pt.allclose(model.bias.grad, ref.bias.grad, {rtol = 1e-6, atol = 1e-7}))
    end)
  end
end)

describe("batch-1 Linear", function()
  it("matches the batched path in forward and backward, also into worker buffers", function()
    pt.manual_seed(5)
    local lin = nn.Linear(7, 5)
    local x = pt.randn(1, 7):requires_grad_()
    local y = nn.relu(lin(x))
    y:sum():backward()
    local gw, gb, gx = lin.weight.grad:clone(), lin.bias.grad:clone(), x.grad:clone()
    -- the same row twice in a batch of 2 gives twice the gradients
    lin.weight.grad, lin.bias.grad = nil, nil
    local x2 = pt.cat({x:detach(), x:detach()}, 1):requires_grad_()
    local y2 = nn.relu(lin(x2))
    assert.is_true(pt.allclose(y2[1]:unsqueeze(1), y, {atol = 1e-6}))
    y2:sum():backward()
    assert.is_true(pt.allclose(lin.weight.grad, gw * 2, {atol = 1e-6}))
    assert.is_true(pt.allclose(lin.bias.grad, gb * 2, {atol = 1e-6}))
    assert.is_true(pt.allclose(x2.grad[1]:unsqueeze(1), gx, {atol = 1e-6}))
  end)

  it("passes gradcheck in float64 with and without fused relu", function()
    local gradcheck = require "spec.gradcheck"
    pt.manual_seed(6)
    local x = pt.randn(1, 6, {dtype = "float64"}):requires_grad_()
    local w = pt.randn(4, 6, {dtype = "float64"}):requires_grad_()
    local b = pt.randn(4, {dtype = "float64"}):requires_grad_()
    assert.is_true(gradcheck(function(a, ww, bb) return nn.linear(a, ww, bb) end, {x, w, b}))
    assert.is_true(gradcheck(function(a, ww) return nn.linear(a, ww) end, {x, w}))
  end)
end)
