local pt = require "partrain"
local data = require "partrain.data"
local par = require "partrain.par"

-- a dataset of n samples {x = {i}, y = {2i}, i = i}
local function toy_dataset(n)
  return {
    get = function(_, i) return {pt.tensor({i * 1.0}), pt.tensor({2.0 * i}), i = i} end,
    len = function() return n end,
  }
end

local function index_of(sample) return sample.i end

-- a per-sample step: the model's summed output, backward, returned as the loss
local function sum_step(x, model)
  local loss = model(x):sum()
  loss:backward()
  return loss
end

describe("par_by_sample windows", function()
  it("5 samples with n = 2 give [1,2] [3,4] [5] [1,2] in sample order", function()
    local h = data.DataHandler(toy_dataset(5))
    local seen = {}
    for c = 1, 5 do seen[c] = (h:par_by_sample({}, 2, index_of)) end
    assert.are.same({{1, 2}, {3, 4}, {5}, {1, 2}, {3, 4}}, seen)
  end)

  it("returns the model as second result", function()
    local h = data.DataHandler(toy_dataset(3))
    local model = {name = "m"}
    local _, m = h:par_by_sample(model, 2, index_of)
    assert.are.equal(model, m)
  end)

  it("runs sample j of the window on worker j", function()
    local h = data.DataHandler(toy_dataset(4))
    local ids = h:par_by_sample({}, 3, function() return pt.worker_id() end)
    assert.are.same({1, 2, 3}, ids)
    assert.are.same({1}, (h:par_by_sample({}, 3, function() return pt.worker_id() end)))
  end)

  it("fixes n at the first call", function()
    local h = data.DataHandler(toy_dataset(6))
    assert.are.same({1, 2}, (h:par_by_sample({}, 2, index_of)))
    assert.are.same({3, 4}, (h:par_by_sample({}, 3, index_of)))
    assert.are.same({5, 6}, (h:par_by_sample({}, nil, index_of)))
  end)

  it("rejects n larger than the dataset", function()
    local h = data.DataHandler(toy_dataset(3))
    assert.has_error(function() h:par_by_sample({}, 4, index_of) end,
      "par_by_sample: 4 threads but the dataset has only 3 samples")
  end)

  it("rejects a bad n, fn and options", function()
    local h = data.DataHandler(toy_dataset(3))
    assert.has_error(function() h:par_by_sample({}, 0, index_of) end,
      "par_by_sample: the number of threads must be a positive integer (got 0)")
    assert.has_error(function() h:par_by_sample({}, 2, 42) end,
      "par_by_sample: fn must be a function (got number)")
    assert.has_error(function() h:par_by_sample({}, 2, index_of, {windows = 0}) end,
      "par_by_sample: windows must be a positive integer (got 0)")
    assert.has_error(function() h:par_by_sample({}, 2, index_of, {after_window = 1}) end,
      "par_by_sample: after_window must be a function")
    assert.has_error(function() par.par_by_sample({}, {}, 2, index_of) end,
      "par_by_sample: expected a DataHandler (a table with a dataset field)")
  end)

  it("rejects a window wider than its workers (the internal pt._par_windows)", function()
    local ok, err = pcall(pt._par_windows, {}, index_of, function(i) return {i = i} end, {1, 3}, 2)
    assert.is_false(ok)
    assert.matches("par_by_sample: bad window 1..3 for 2 workers", err, 1, true)
    -- the pool goes on
    local h = data.DataHandler(toy_dataset(4))
    assert.are.same({1, 2}, (h:par_by_sample({}, 2, index_of)))
  end)

  it("runs several windows per call with windows = k and epoch = true", function()
    local h = data.DataHandler(toy_dataset(5))
    local windows = {}
    local losses = h:par_by_sample({}, 2, index_of, {windows = 4, after_window = function(l)
      windows[#windows + 1] = l
    end})
    assert.are.same({1, 2, 3, 4, 5, 1, 2}, losses)
    assert.are.same({{1, 2}, {3, 4}, {5}, {1, 2}}, windows)
    windows = {}
    losses = h:par_by_sample({}, 2, index_of, {epoch = true, after_window = function(l)
      windows[#windows + 1] = l
    end})
    assert.are.same({3, 4, 5}, losses)
    assert.are.same({{3, 4}, {5}}, windows)
    -- past the end: the next epoch starts again at 1
    assert.are.same({1, 2, 3, 4, 5}, (h:par_by_sample({}, 2, index_of, {epoch = true})))
  end)
end)

-- a 1-16-1 network on raw tensors
local function make_params(seed)
  pt.manual_seed(seed)
  return {
    w1 = pt.randn(1, 16):requires_grad_(),
    b1 = pt.randn(16):requires_grad_(),
    w2 = pt.randn(16, 1):requires_grad_(),
  }
end

local function sample_loss(s, m)
  local x = s[1]:view(1, 1)
  local h = pt.relu(pt.matmul(x, m.w1) + m.b1)
  local d = pt.matmul(h, m.w2):view(1) - s[2]
  return (d * d):sum()
end

local function per_sample(s, m)
  local loss = sample_loss(s, m)
  loss:backward()
  return loss
end

describe("par_by_sample gradients", function()
  it("sums per-sample gradients like the serial summed loss", function()
    local ds = toy_dataset(4)
    local p = make_params(7)
    local h = data.DataHandler(ds)
    local losses = h:par_by_sample(p, 4, per_sample)
    -- serial reference on copies of the parameters
    local q = {}
    for k, v in pairs(p) do q[k] = v:detach():clone():requires_grad_() end
    local total = 0
    local sum
    for i = 1, 4 do
      local l = sample_loss(ds:get(i), q)
      total = total + l:item()
      sum = sum and sum + l or l
    end
    sum:backward()
    local got = 0
    for _, l in ipairs(losses) do got = got + l:item() end
    assert.is_true(math.abs(got - total) <= 1e-4 * math.abs(total))
    for k in pairs(p) do
      local a, b = p[k].grad:tolist(), q[k].grad:tolist()
      local fa, fb = {}, {}
      local function flat(t, out) for _, v in ipairs(t) do if type(v) == "table" then flat(v, out) else out[#out + 1] = v end end end
      flat(a, fa)
      flat(b, fb)
      assert.are.equal(#fb, #fa)
      for i = 1, #fa do assert.is_true(math.abs(fa[i] - fb[i]) <= 1e-4 * (1 + math.abs(fb[i])), k) end
    end
  end)

  it("adds into existing gradients and never zeroes them", function()
    local p = make_params(3)
    local h = data.DataHandler(toy_dataset(2))
    h:par_by_sample(p, 2, per_sample)
    local g1 = p.w2.grad:clone()
    h:par_by_sample(p, 2, per_sample)
    local g2 = p.w2.grad
    for i = 1, 16 do assert.is_true(math.abs(g2:_get_flat(i) - 2 * g1:_get_flat(i)) <= 1e-5 * (1 + math.abs(g1:_get_flat(i)))) end
  end)

  it("gives bitwise-identical weights on every run", function()
    local function train()
      local p = make_params(11)
      local h = data.DataHandler(toy_dataset(7))
      h:par_by_sample(p, 2, per_sample, {windows = 12, after_window = function()
        pt.no_grad(function()
          for _, t in pairs(p) do
            t:sub_(t.grad * 0.01)
            t.grad:zero_()
          end
        end)
      end})
      local out = {}
      for _, k in ipairs({"w1", "b1", "w2"}) do out[k] = p[k]:tolist() end
      return out
    end
    local a, b = train(), train()
    assert.are.same(a, b)
  end)

  it("re-sends the model when it changes", function()
    local h = data.DataHandler(toy_dataset(2))
    local f = function(s, m) return m.tag end
    assert.are.same({"a", "a"}, (h:par_by_sample({tag = "a"}, 2, f)))
    local m = {tag = "b"}
    assert.are.same({"b", "b"}, (h:par_by_sample(m, 2, f)))
    m.tag = "c" -- the same object changed: the workers see it (it was cached by identity)
    assert.are.same({"c", "c"}, (h:par_by_sample(m, 2, f)))
    assert.are.same({"c", "c"}, (h:par_by_sample(m, 2, f, {refresh_model = true})))
    -- a module switched to eval() between calls: its dropout is off in every worker
    local net = pt.nn.Sequential(pt.nn.Linear(4, 4), pt.nn.Dropout(0.5))
    local probe = function(_, model)
      local x = pt.ones(1, 4)
      return tostring(model[2].training) .. " " .. tostring(model(x):equal(model(x)))
    end
    assert.are.same({"true false", "true false"}, (h:par_by_sample(net, 2, probe)))
    net:eval()
    assert.are.same({"false true", "false true"}, (h:par_by_sample(net, 2, probe)))
  end)

  it("keeps the windows apart from a loader's workers on the same handler", function()
    -- both used handler._par: batches() or close() after par_by_sample raised inside data.lua
    local four = {get = function(_, i) return pt.full({1}, i) end, len = function() return 4 end}
    local item = function(s) return s:item() end
    local h = data.DataHandler(four, {batch = 2, progress = false})
    assert.are.same({1, 2}, (h:par_by_sample({}, 2, item)))
    local n = 0
    for _ in h:batches() do n = n + 1 end
    assert.are.equal(2, n)
    h:close()
    h:close()
    local hw = data.DataHandler(four, {batch = 2, workers = 2, progress = false})
    assert.are.same({1, 2}, (hw:par_by_sample({}, 2, item)))
    n = 0
    for _ in hw:batches() do n = n + 1 end
    assert.are.equal(2, n)
    hw:close()
  end)

  it("gives a leaf the sample's own code makes its gradient at once, on every worker", function()
    -- an input gradient (saliency, adversarial examples): workers 2..n read x.grad as nil, the
    -- gradient having gone to the buffers that only the model's parameters need
    local h = data.DataHandler({get = function(_, i) return pt.full({1, 3}, i) end, len = function() return 4 end})
    local lin = pt.nn.Linear(3, 1)
    local grads = h:par_by_sample(lin, 2, function(x, model)
      x = x:clone():requires_grad_()
      model(x):sum():backward()
      return x.grad:clone()
    end)
    for k = 1, 2 do assert.are.same(lin.weight:tolist(), grads[k]:tolist()) end
    -- the model's own gradients are still the window's sum
    local before = lin.weight.grad:clone()
    lin:zero_grad()
    h:par_by_sample(lin, 2, function(x, model) model(x):sum():backward() return 0 end)
    assert.are.same({{3 + 4, 3 + 4, 3 + 4}}, lin.weight.grad:tolist())
    assert.are.same({{1 + 2, 1 + 2, 1 + 2}}, before:tolist())
  end)

  it("returns no losses for a dataset emptied since the first call", function()
    local n = 4
    local h = data.DataHandler({get = function(_, i) return {i = i} end, len = function() return n end})
    assert.are.same({1, 2}, (h:par_by_sample({}, 2, index_of)))
    n = 0 -- it raised "bad window 3..2 for 2 workers"
    assert.are.same({}, (h:par_by_sample({}, 2, index_of)))
    assert.are.same({}, (h:par_by_sample({}, 2, index_of, {epoch = true})))
  end)

  it("checks n and the optimizer before taking a window", function()
    local h = data.DataHandler(toy_dataset(400))
    assert.has_error(function() h:par_by_sample({}, 300, index_of) end, "par_by_sample: at most 256 threads, got 300")
    assert.are.same({1, 2}, (h:par_by_sample({}, 2, index_of))) -- n was not kept
    local ok = pcall(h.par_by_sample, h, {}, 2, index_of, {step = {}})
    assert.is_false(ok)
    assert.are.same({3, 4}, (h:par_by_sample({}, 2, index_of))) -- no window was skipped
  end)
end)

-- Random ops in workers: each sample (or item) starts the worker's generator at a seed drawn
-- from the caller's generator once per call plus its index, as torch's DataLoader seeds its
-- workers from a base seed: pt.manual_seed replays them, whatever n and the worker
describe("random numbers in workers", function()
  local nn, optim, support = pt.nn, pt.optim, require "spec.support"
  local ds = {get = function(_, i) return i end, len = function() return 6 end}
  local function draws(n, seed)
    pt.manual_seed(seed)
    return data.DataHandler(ds):par_by_sample(nn.Linear(1, 1), n, function()
      return pt.rand(1):item()
    end, {epoch = true})
  end

  it("replay with pt.manual_seed and are the same for any n", function()
    local a, b, c = draws(2, 42), draws(2, 42), draws(2, 7)
    assert.are.same(a, b)
    assert.are_not.same(a, c)
    assert.are.same(a, draws(1, 42))
    assert.are.same(a, draws(3, 42))
    -- different samples draw different numbers
    assert.are_not.equal(a[1], a[2])
  end)

  it("make dropout training reproducible in one process", function()
    local function run()
      pt.manual_seed(3)
      local model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))
      local xs = {}
      for i = 1, 8 do xs[i] = {pt.randn(1, 4), pt.tensor({(i % 2) + 1}, {dtype = "int64"})} end
      local opt = optim.SGD(model:parameters(), {lr = 0.1})
      data.DataHandler({get = function(_, i) return xs[i] end, len = function() return 8 end})
        :par_by_sample(model, 2, support.cross_entropy_step, {epoch = true, step = opt})
      return model
    end
    local m1, m2 = run(), run()
    for i, p in ipairs(m1:parameters()) do assert.is_true(pt.equal(p, m2:parameters()[i])) end
  end)

  it("replay in _pool_map items whatever worker runs them", function()
    local function items(seed, workers)
      pt.manual_seed(seed)
      local r = pt._pool_map(function() return pt.rand(1):item() end, {{}, {}, {}, {}}, {n_workers = workers})
      return {r[1], r[2], r[3], r[4]}
    end
    assert.are.same(items(5, 2), items(5, 2))
    assert.are.same(items(5, 2), items(5, 1))
    assert.are_not.same(items(5, 2), items(6, 2))
  end)
end)

-- BatchNorm in training mode updates its running statistics with every sample; workers running
-- samples at once hand their updates to the window's end, where they are applied in sample order
describe("batch norm's running statistics under par_by_sample", function()
  local nn, optim = pt.nn, pt.optim
  local function fn(x, m)
    local l = m(x):pow(2):mean()
    l:backward()
    return l
  end
  local function check(make, shape)
    pt.manual_seed(1)
    local X = {}
    for i = 1, 7 do X[i] = pt.randn(table.unpack(shape)) * i + i end
    local ds = {get = function(_, i) return X[i] end, len = function() return 7 end}
    pt.manual_seed(5)
    local ref = make()
    for i = 1, 7 do fn(X[i], ref) end
    for _, n in ipairs({1, 2, 3}) do
      for _, fused in ipairs({false, true}) do
        pt.manual_seed(5)
        local m = make()
        local opts = {epoch = true}
        if fused then opts.step = optim.SGD(m:parameters(), {lr = 0}) end
        data.DataHandler(ds):par_by_sample(m, n, fn, opts)
        local rb, mb = ref:buffers(), m:buffers()
        assert.are.equal(#rb, #mb)
        for i = 1, #rb do
          assert.is_true(pt.equal(rb[i], mb[i]), ("n=%d%s: buffer %d"):format(n, fused and " fused" or "", i))
        end
      end
    end
  end

  it("are those of a loop over the samples, for any n (momentum 0.1)", function()
    check(function() return nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3)) end, {4, 3})
  end)

  it("are those of a loop over the samples with a cumulative average (momentum=false)", function()
    check(function() return nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3, {momentum = false})) end, {4, 3})
  end)

  it("are those of a loop over the samples in BatchNorm2d", function()
    check(function() return nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3)) end, {2, 2, 5, 5})
  end)

  it("are not updated by a window that failed", function()
    local X = {pt.randn(4, 3), pt.randn(4, 3)}
    local ds = {get = function(_, i) return X[i] end, len = function() return 2 end}
    local m = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    local before = m[2].running_mean:clone()
    local ok = pcall(function()
      data.DataHandler(ds):par_by_sample(m, 2, function(x, model)
        local l = fn(x, model)
        if pt.worker_id() == 2 then error("boom") end
        return l
      end)
    end)
    assert.is_false(ok)
    assert.is_true(pt.equal(before, m[2].running_mean))
    assert.are.equal(0, m[2].num_batches_tracked:item())
  end)
end)

describe("par_by_sample read_in_workers", function()
  local function train(read_in_workers)
    pt.manual_seed(4)
    local model = pt.nn.Sequential(pt.nn.Linear(3, 4), pt.nn.ReLU(), pt.nn.Linear(4, 1))
    local opt = pt.optim.SGD(model:parameters(), {lr = 0.1})
    local xs = {}
    for i = 1, 7 do xs[i] = pt.rand(1, 3) end
    local ds = {get = function(_, i) return {x = xs[i], y = pt.full({1, 1}, i / 7)} end,
                len = function() return 7 end}
    local losses = data.DataHandler(ds):par_by_sample(model, 3, function(s, m)
      local loss = pt.nn.mse_loss(m(s.x), s.y)
      loss:backward()
      return loss:item()
    end, {epoch = true, step = opt, read_in_workers = read_in_workers})
    return losses, model:parameters()
  end

  it("gives the same losses and weights as reading in the caller", function()
    local l1, p1 = train(false)
    local l2, p2 = train(true)
    assert.are.same(l1, l2)
    for i = 1, #p1 do assert.is_true(pt.equal(p1[i], p2[i]), "parameter " .. i) end
  end)

  it("calls dataset:get in the worker that runs the sample", function()
    local ds = {get = function(_, i) return {i = i, reader = pt.worker_id()} end,
                len = function() return 4 end}
    local got = data.DataHandler(ds):par_by_sample({}, 2, function(s) return {s.i, s.reader, pt.worker_id()} end,
                                                   {epoch = true, read_in_workers = true})
    for k, r in ipairs(got) do
      assert.are.equal(k, r[1])
      assert.are.equal(r[3], r[2]) -- read where it runs
    end
    assert.are.equal(2, got[2][2])
  end)

  -- an epoch over ds with read_in_workers fails with a message matching pattern; the next works
  local function fails_then_works(ds, pattern)
    local h = data.DataHandler(ds)
    local ok, err = pcall(h.par_by_sample, h, {}, 2, index_of, {epoch = true, read_in_workers = true})
    assert.is_false(ok)
    assert.matches(pattern, err)
    local again = data.DataHandler(toy_dataset(2)):par_by_sample({}, 2, index_of, {read_in_workers = true})
    assert.are.same({1, 2}, again)
  end

  it("fails the sample whose get fails, naming it, and keeps working", function()
    fails_then_works({get = function(_, i)
      if i == 3 then error("disk on fire") end
      return {i = i}
    end, len = function() return 4 end},
      "^par_by_sample: sample 3 failed on worker 1: reading the sample: .*disk on fire")
  end)

  it("fails the sample whose dataset's get cannot even be looked up (an __index that raises)", function()
    -- the lookup ran outside the worker's protected call: the process aborted with a Lua PANIC
    local methods = {get = function(_, i) return {i = i} end, len = function() return 4 end}
    fails_then_works(setmetatable({}, {__index = function(_, k)
      if k == "get" and pt.worker_id() ~= 0 then error("no get here") end
      return methods[k]
    end}), "^par_by_sample: sample 1 failed on worker 1: reading the sample: .*no get here")
  end)
end)

describe("par_by_sample errors", function()
  it("names the sample and the worker, with the worker's traceback", function()
    local h = data.DataHandler(toy_dataset(4))
    local ok, err = pcall(h.par_by_sample, h, {}, 2, function(s)
      if s.i == 2 then error("bad sample") end
      return s.i
    end)
    assert.is_false(ok)
    assert.matches("par_by_sample: sample 2 failed on worker 2: .*par_spec.lua:%d+: bad sample", err)
    assert.matches("stack traceback:", err)
    assert.matches("par_spec.lua:%d+: in function", err)
    -- the pool keeps working
    assert.are.same({3, 4}, (h:par_by_sample({}, 2, index_of)))
    -- the first sample of a window runs on worker 1 (the caller's own thread)
    ok, err = pcall(h.par_by_sample, h, {}, 2, function(s)
      if s.i == 1 then error({code = 1}) end
      return s.i
    end)
    assert.is_false(ok)
    assert.matches("^par_by_sample: sample 1 failed on worker 1: %(error object is a table value%)\nstack traceback:", err)
    assert.are.same({3, 4}, (h:par_by_sample({}, 2, index_of)))
  end)

  it("says that after_window cannot yield", function()
    local h = data.DataHandler(toy_dataset(4))
    local co = coroutine.create(function()
      return h:par_by_sample({}, 2, index_of, {epoch = true, after_window = function() coroutine.yield() end})
    end)
    local ok, err = coroutine.resume(co)
    assert.is_false(ok)
    assert.matches("par_by_sample: after_window cannot yield %(it runs inside the call, between its windows%)", err)
    assert.are.same({1, 2}, (data.DataHandler(toy_dataset(2)):par_by_sample({}, 2, index_of)))
  end)

  it("leaves the windows after a failed one to the next call (epoch, windows, after_window)", function()
    local h = data.DataHandler(toy_dataset(10))
    local ok, err = pcall(h.par_by_sample, h, {}, 2, function(s)
      if s.i == 3 then error("bad 3") end
      return s.i
    end, {epoch = true})
    assert.is_false(ok)
    assert.matches("sample 3 failed", err)
    -- window [3,4] failed and counts as processed; [5,6] .. [9,10] never ran
    assert.are.same({5, 6}, (h:par_by_sample({}, 2, index_of)))
    assert.are.same({7, 8, 9, 10}, (h:par_by_sample({}, 2, index_of, {epoch = true})))
    local hooks = 0
    ok, err = pcall(h.par_by_sample, h, {}, 2, index_of, {windows = 4, after_window = function()
      hooks = hooks + 1
      if hooks == 2 then error("hook failed", 0) end
    end})
    assert.is_false(ok)
    assert.are.equal("hook failed", err)
    assert.are.same({5, 6}, (h:par_by_sample({}, 2, index_of))) -- after [1,2] and [3,4]
  end)

  it("reports a sample that cannot be read or sent", function()
    local h = data.DataHandler({get = function(_, i)
      if i == 2 then error("disk on fire") end
      return {co = coroutine.create(print)}
    end, len = function() return 2 end})
    local ok, err = pcall(h.par_by_sample, h, {}, 2, index_of)
    assert.is_false(ok)
    assert.matches("par_by_sample: sample 1 cannot be sent to a worker: field 'sample.co' %(thread%) cannot be sent to a worker", err)
  end)

  -- without after_window the caller reads the next window's worker samples during the current
  -- window, after its own sample, and hands them over early: the reads keep their order, and a
  -- failure among them is reported when that window starts, after the window before it stepped
  it("reads samples in the same order with or without after_window, and reports a read-ahead failure at its window", function()
    for _, hook in ipairs({false, true}) do
      local log = {}
      local lin = pt.nn.Linear(3, 1)
      local opt = pt.optim.SGD(lin:parameters(), {lr = 0.1})
      local h = data.DataHandler({get = function(_, i)
        log[#log + 1] = i
        if i == 6 then error("disk on fire") end
        return pt.full({1, 3}, i)
      end, len = function() return 8 end})
      local opts = {epoch = true, step = opt}
      if hook then opts.after_window = function() log[#log + 1] = "hook" end end
      local w0 = lin.weight:clone()
      local ok, err = pcall(h.par_by_sample, h, lin, 2, sum_step, opts)
      assert.is_false(ok)
      assert.matches("par_by_sample: sample 6 could not be read: .*disk on fire", err)
      local want = hook and {2, 1, "hook", 4, 3, "hook", 6, 5} or {2, 1, 4, 3, 6, 5}
      assert.are.same(want, log)
      -- two windows stepped: each adds x = i to the weight's gradient of the window's samples
      local expected = w0 - 0.1 * pt.full({1, 3}, 1 + 2) - 0.1 * pt.full({1, 3}, 3 + 4)
      assert.is_true(pt.allclose(expected, lin.weight, {rtol = 1e-6, atol = 1e-6}))
      -- the failed window counts as processed: the next call goes on with 7, 8
      log = {}
      h:par_by_sample(lin, 2, sum_step, {step = opt})
      assert.are.same({8, 7}, log)
    end
  end)

  -- sample 3 is the caller's own in window 2, sample 4 a worker's, read during window 1
  it("names a read error that is not a string by its type", function()
    for _, bad in ipairs({3, 4}) do
      local lin = pt.nn.Linear(3, 1)
      local h = data.DataHandler({get = function(_, i)
        if i == bad then error({code = 42}) end
        return {pt.full({1, 3}, i)}
      end, len = function() return 6 end})
      local ok, err = pcall(h.par_by_sample, h, lin, 2, function(s, m)
        local l = m(s[1]):sum()
        l:backward()
        return l
      end, {epoch = true})
      assert.is_false(ok)
      -- with get's traceback, as a worker's failure has its own
      local head = ("par_by_sample: sample %d could not be read: (error object is a table value)\n"):format(bad)
      assert.are.equal(head, err:sub(1, #head))
      assert.matches("^stack traceback:\n.*par_spec%.lua:%d+:", err:sub(#head + 1))
    end
    -- an error object with __tostring is named by it
    local E = setmetatable({}, {__tostring = function() return "disk error 7" end})
    local h = data.DataHandler({get = function(_, i)
      if i == 2 then error(E) end
      return {i = i}
    end, len = function() return 4 end})
    local ok, err = pcall(h.par_by_sample, h, {}, 2, index_of, {epoch = true})
    assert.is_false(ok)
    assert.matches("^par_by_sample: sample 2 could not be read: disk error 7\nstack traceback:", err)
  end)

  -- the caller's thread drives the workers while dataset:get and after_window run on it: a
  -- parallel call from there would wait for workers that wait for it (it used to hang)
  it("refuses parallel work started from dataset:get or after_window, and keeps working", function()
    local lin = pt.nn.Linear(3, 1)
    local busy = "the shared workers are busy: code that par_by_sample runs on the caller's thread"
    local function nested()
      local h = data.DataHandler({get = function() return pt.ones(1, 3) end, len = function() return 2 end})
      h:par_by_sample(pt.nn.Linear(3, 1), 2, sum_step)
    end
    local h = data.DataHandler({get = function(_, i)
      if i == 3 then nested() end
      return pt.full({1, 3}, i)
    end, len = function() return 6 end})
    local ok, err = pcall(h.par_by_sample, h, lin, 2, sum_step, {epoch = true})
    assert.is_false(ok)
    assert.matches("par_by_sample: sample 3 could not be read: .*" .. busy:gsub("%p", "%%%0"), err)
    local four = {get = function(_, i) return pt.full({1, 3}, i) end, len = function() return 4 end}
    local h2 = data.DataHandler(four)
    ok, err = pcall(h2.par_by_sample, h2, lin, 2, sum_step, {epoch = true, after_window = nested})
    assert.is_false(ok)
    assert.matches(busy:gsub("%p", "%%%0"), err)
    -- the workers are free again
    assert.are.equal(4, #data.DataHandler(four):par_by_sample(lin, 2, sum_step, {epoch = true}))
  end)

  it("undoes everything when the Lua API raises in the middle of a call", function()
    -- the windows table's __newindex raises where the call records how many windows started
    -- (as a memory error there would): the call's tasks, the pool's busy flag and Ctrl-C's
    -- guard are undone by its to-be-closed state, not only on the paths that raise by hand
    local lin = pt.nn.Linear(3, 1)
    local xs = {pt.ones(1, 3), pt.ones(1, 3), pt.ones(1, 3), pt.ones(1, 3)}
    local windows = setmetatable({1, 2, 3, 4}, {__newindex = function(_, k) error("no field " .. k) end})
    local ok, err = pcall(pt._par_windows, lin, sum_step, function(i) return xs[i] end, windows, 2)
    assert.is_false(ok)
    assert.matches("no field started", err)
    -- the workers are free (this raised "the shared workers are busy" for good)
    assert.are.equal(2, #pt._par_windows(lin, sum_step, function(i) return xs[i] end, {1, 2}, 2))
    -- and Ctrl-C is the host's again: it interrupts plain Lua code
    ok, err = pcall(pt._par_windows, lin, sum_step, function(i) return xs[i] end, windows, 2)
    assert.is_false(ok)
    collectgarbage() -- iterators other specs called by hand defer Ctrl-C until collected
    pt._par_test_sigint(0.05)
    ok, err = pcall(function()
      local t0 = os.clock()
      -- (opening a file: TSan delivers a signal only when the thread enters libc)
      while os.clock() - t0 < 5 do assert(io.open("/dev/null")):close() end
    end)
    assert.is_false(ok)
    assert.matches("interrupted", err)
  end)

  it("reports a later sample of a window that cannot be read, skips the step, keeps working", function()
    local lin = pt.nn.Linear(3, 1)
    local before = lin.weight:clone()
    local opt = pt.optim.SGD(lin:parameters(), {lr = 0.1})
    local h = data.DataHandler({get = function(_, i)
      if i == 2 then error("disk on fire") end
      return pt.ones(1, 3)
    end, len = function() return 2 end})
    local ok, err = pcall(h.par_by_sample, h, lin, 2, sum_step, {step = opt})
    assert.is_false(ok)
    assert.matches("par_by_sample: sample 2 could not be read: .*disk on fire", err)
    assert.is_true(pt.equal(before, lin.weight))
    local ok2 = data.DataHandler({get = function() return pt.ones(1, 3) end, len = function() return 2 end})
      :par_by_sample(lin, 2, sum_step, {step = opt})
    assert.are.equal(2, #ok2)
    assert.is_false(pt.equal(before, lin.weight))
  end)

  it("reports a closure that cannot be sent", function()
    local h = data.DataHandler(toy_dataset(2))
    local co = coroutine.create(print)
    assert.has_error(function() h:par_by_sample({}, 2, function() return co end) end,
      "par_by_sample: upvalue 'co' (thread) of the closure cannot be sent to a worker")
  end)

  it("stops every worker on Ctrl-C and raises interrupted", function()
    local h = data.DataHandler(toy_dataset(2))
    pt._par_test_sigint(0.3)
    local ok, err = pcall(h.par_by_sample, h, {}, 2, function() while true do end end)
    assert.is_false(ok)
    assert.matches("interrupted", err)
    assert.are.same({1, 2}, (h:par_by_sample({}, 2, index_of)))
  end)

  it("stops a whole epoch on Ctrl-C, also in or between after_window hooks", function()
    -- Ctrl-C's guard spans all windows of the call; a long after_window hook is interrupted too
    for _, hook in ipairs({false, "empty", "long"}) do
      local h = data.DataHandler(toy_dataset(4000))
      local opts = {epoch = true}
      if hook == "empty" then opts.after_window = function() end end
      if hook == "long" then
        opts.after_window = function()
          local t0 = os.clock()
          while os.clock() - t0 < 0.05 do end -- Lua code between windows, 50 ms
        end
      end
      pt._par_test_sigint(0.2)
      local ok, err = pcall(h.par_by_sample, h, {}, 2, function(s)
        local t0 = os.clock()
        while os.clock() - t0 < 0.002 do end -- 2 ms per sample: the epoch takes ~4 s
        return s
      end, opts)
      assert.is_false(ok)
      assert.matches("interrupted", err)
      assert.are.same({1, 2}, (data.DataHandler(toy_dataset(2)):par_by_sample({}, 2, index_of)))
    end
  end)
end)

describe("_pool_map", function()
  it("returns results in input order", function()
    local items = {}
    for i = 1, 20 do items[i] = {i, i + 1} end
    local r = pt._pool_map(function(a, b) return a * b end, items, {n_workers = 2})
    for i = 1, 20 do assert.are.equal(i * (i + 1), r[i]) end
  end)

  it("captures failures as pt.ActionError values and never raises for them", function()
    local r = pt._pool_map(function(x)
      if x == 2 then error("two is bad") end
      return x
    end, {{1}, {2}, {3}}, {n_workers = 2})
    assert.are.equal(1, r[1])
    assert.are.equal(3, r[3])
    local e = r[2]
    assert.are.equal(pt.ActionError, getmetatable(e))
    assert.are.equal(2, e.index)
    assert.is_true(e.worker >= 1 and e.worker <= 2)
    assert.matches("two is bad", e.message)
    assert.matches("stack traceback:", e.traceback)
    assert.matches("^ActionError: item 2 failed on worker %d: .*two is bad", tostring(e))
  end)

  it("turns items whose arguments or results cannot cross into error values", function()
    local co = coroutine.create(print)
    local r = pt._pool_map(function(x) return x end, {{co}, {5}})
    assert.are.equal("cannot send item 1: argument 1 (thread) cannot be sent to a worker", r[1].message)
    assert.are.equal(5, r[2])
    local r2 = pt._pool_map(function() return coroutine.create(print) end, {{1}})
    assert.are.equal("cannot return the result: result 1 (thread) cannot be sent back to the caller", r2[1].message)
  end)

  it("turns an item with more arguments than a Lua stack holds into an error value", function()
    -- it raised a stack overflow with item 1 still running, and the next call got "interrupted"
    local big = {}
    for i = 1, 1000010 do big[i] = 1 end
    local r = pt._pool_map(function(...) return select("#", ...) end, {{7}, big, {8, 9}}, {n_workers = 2})
    assert.are.equal(1, r[1])
    assert.are.equal("cannot send item 2: 1000010 arguments are more than a Lua stack holds", r[2].message)
    assert.are.equal(2, r[3])
    assert.are.same({2, 4}, pt._pool_map(function(a) return 2 * a end, {{1}, {2}}, {n_workers = 2}))
  end)

  it("checks its arguments", function()
    assert.has_error(function() pt._pool_map(function() end, {{1}}, {n_workers = 0}) end,
      "_pool_map: n_workers must be at least 1, got 0")
    assert.are.same({}, pt._pool_map(function() end, {}))
  end)

  it("raises interrupted on Ctrl-C and keeps working", function()
    pt._par_test_sigint(0.3)
    local ok, err = pcall(pt._pool_map, function() while true do end end, {{1}, {2}, {3}}, {n_workers = 2})
    assert.is_false(ok)
    assert.matches("interrupted", err)
    assert.are.same({2, 4}, pt._pool_map(function(x) return 2 * x end, {{1}, {2}}, {n_workers = 2}))
  end)
end)

-- the seeds' recipes, run through the executable that runs this spec
local EXE = require("spec.support").exe

local function run_script(args)
  local p = io.popen(EXE .. " " .. args .. " 2>&1; echo \"<rc=$?>\"")
  local out = p:read("a")
  p:close()
  return out
end

describe("seed recipes", function()
  it("seed 000: the toy par_by_sample example trains with Adam for 10 epochs", function()
    local out = run_script("scripts/seed000_par_by_sample.lua")
    assert.matches("<rc=0>", out)
    local losses = {}
    for e, l in out:gmatch("epoch:(%d+) | loss => ([%d%.]+)") do losses[tonumber(e) + 1] = tonumber(l) end
    assert.are.equal(10, #losses)
    assert.is_true(losses[10] < losses[1])
  end)

  it("seed 000: Fashion-MNIST per-sample training on a small subset", function()
    local f = io.open("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", "rb")
    if not f then return pending("Fashion-MNIST is not installed") end
    f:close()
    local out = run_script("scripts/seed000_par_by_sample.lua fmnist 300")
    assert.matches("<rc=0>", out)
    local acc = tonumber(out:match("epoch 2: 300 samples, mean loss [%d%.]+, %d+ samples/s, test accuracy ([%d%.]+)"))
    assert.is_true(acc ~= nil and acc > 0.3, out)
  end)

  it("seed 002: the Runner sums x^3 in order and runs the predictor", function()
    local out = run_script("scripts/seed002_runner.lua 100")
    assert.matches("<rc=0>", out)
    local expected = 0
    for x = 0, 99 do expected = expected + x ^ 3 end
    assert.matches(("sum of x%%^3 for x < 100: %.0f"):format(expected), out)
    assert.matches("predictor output shape: {100,3}", out)
  end)
end)

describe("pt._Pool", function()
  it("runs functions on chosen or any worker and reports completions", function()
    local pool = pt._Pool(2)
    assert.are.equal(2, pool:size())
    local a = pool:submit(2, function(x) return x + 1, pt.worker_id() end, 41)
    local b = pool:submit(0, function() error("nope", 0) end)
    local got = {}
    for _ = 1, 2 do
      local id, worker, ok, r1, r2 = pool:next()
      got[id] = {worker = worker, ok = ok, r1 = r1, r2 = r2}
    end
    assert.are.same({worker = 2, ok = true, r1 = 42, r2 = 2}, got[a])
    assert.is_false(got[b].ok)
    assert.are.equal("nope", got[b].r1)
    assert.matches("stack traceback:", got[b].r2)
    assert.are.equal(0, pool:pending())
    pool:close()
    pool:close()
    assert.is_true(pool:closed())
  end)

  it("checks its arguments and state", function()
    assert.has_error(function() pt._Pool(0) end, "pool: number of workers must be between 1 and 256, got 0")
    local pool = pt._Pool(1)
    assert.has_error(function() pool:submit(2, print) end, "submit: worker 2 out of range (pool has 1 workers)")
    assert.has_error(function() pool:next() end, "next: no task is outstanding")
    local co = coroutine.create(print)
    assert.has_error(function() pool:submit(1, print, co) end,
      "submit: argument 1 (thread) cannot be sent to a worker")
    pool:close()
    assert.has_error(function() pool:submit(1, print) end, "the pool was closed")
  end)

  it("rejects a handler whose dataset lacks get/len", function()
    assert.has_error(function() par.par_by_sample({dataset = {}}, {}, 1, index_of) end,
      "par_by_sample: the handler's dataset must have get(i) and len()")
  end)
end)
