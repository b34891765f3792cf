-- par_by_sample's fused step with a large weight: it is not copied per worker but split by rows,
-- and the workers of a window make its batch-1 products together (host/l_par.c, coop_linear)
local pt = require "partrain"
local nn, optim, data = pt.nn, pt.optim, pt.data
local support = require "spec.support"

local IN, HID = 160, 420 -- the first weight, 420x160 float32 = 269 KB, is partitioned (>= 256 KiB)

local function make_data(n, dtype)
  pt.manual_seed(11)
  local s = {}
  for i = 1, n do
    local x = pt.rand(1, IN)
    if dtype == "float64" then x = x:double() end
    s[i] = {x, pt.randint(1, 6, {1}, {dtype = "int64"})}
  end
  return {get = function(_, i) return s[i] end, len = function() return n end}
end

local function make_model(dtype)
  pt.manual_seed(5)
  local m = nn.Sequential(nn.Linear(IN, HID), nn.ReLU(), nn.Linear(HID, 5))
  if dtype == "float64" then m = m:double() end
  return m
end

local plain = support.cross_entropy_step

-- trains one epoch; fused = opts.step, else opt:step() in after_window (no partitioning)
local function train(threads, fn, o, fused, dtype, n)
  local ds = make_data(n or 13, dtype)
  local model = make_model(dtype)
  local opt = optim.SGD(model:parameters(), o or {lr = 0.1})
  local handler = data.DataHandler(ds)
  local opts = {epoch = true}
  if fused then
    opts.step = opt
  else
    opts.after_window = function()
      opt:step()
      opt:zero_grad()
    end
  end
  local losses = handler:par_by_sample(model, threads, fn, opts)
  local out = {}
  for i, l in ipairs(losses) do out[i] = l:item() end
  return model, out, opt
end

local function same_params(m1, m2, what)
  local p1, p2 = m1:parameters(), m2:parameters()
  assert.are.equal(#p1, #p2)
  for i = 1, #p1 do assert.is_true(pt.equal(p1[i], p2[i]), what .. ": parameter " .. i) end
end

local function stats_delta(f)
  local a = pt._par_coop_stats()
  f()
  local b = pt._par_coop_stats()
  return b.full - a.full, b.alone - a.alone
end

describe("par_by_sample with a partitioned weight", function()
  for _, threads in ipairs({2, 3}) do
    it(("gives the weights and losses of the unfused path, products made together (%d threads)")
         :format(threads), function()
      local m1, l1 = train(threads, plain, nil, false)
      local m2, l2
      local full, alone = stats_delta(function() m2, l2 = train(threads, plain, nil, true) end)
      assert.are.same(l1, l2)
      same_params(m1, m2, "fused")
      -- 13 samples: every full window's products meet; the last, short window too when k >= 2
      assert.is_true(full >= 12 - threads, "products made together: " .. full)
      assert.are.equal(0, alone)
      local p0 = make_model():parameters()
      assert.is_false(pt.equal(p0[1], m2:parameters()[1]), "the partitioned weight moved")
    end)
  end

  it("copies the weight per worker instead with pt._par_partition(false), same numbers", function()
    local m1, l1 = train(2, plain, nil, true)
    assert.is_true(pt._par_partition(false))
    local m2, l2
    local ok, err = pcall(function()
      local full, alone = stats_delta(function() m2, l2 = train(2, plain, nil, true) end)
      assert.are.equal(0, full + alone)
    end)
    assert.is_false(pt._par_partition(true))
    assert(ok, err)
    assert.are.same(l1, l2)
    same_params(m1, m2, "copies")
  end)

  it("gives the same numbers whichever rows each worker takes (float32 blocks move)", function()
    for _, dtype in ipairs({"float32", "float64"}) do
      local o = {lr = 0.05, momentum = 0.9}
      local ref, lref = train(2, plain, o, true, dtype, 15)
      -- "adapt": the boundary follows the cores' speeds (pt._par_coop_stats().shift)
      for _, shift in ipairs({-3, -1, 2, 8, "adapt"}) do
        pt._par_partition(true, shift)
        local ok, m, l = pcall(train, 2, plain, o, true, dtype, 15)
        pt._par_partition(true)
        assert(ok, m)
        assert.are.same(lref, l)
        same_params(ref, m, dtype .. " shift " .. shift)
      end
    end
    local ok, err = pcall(pt._par_partition, true, 9)
    assert.is_false(ok)
    assert.matches("shift out of range", err)
    ok, err = pcall(pt._par_partition, true, "fast")
    assert.is_false(ok)
    assert.matches('a shift %(%-8..8%) or "adapt"', err)
  end)

  it("is bitwise reproducible run after run, also with momentum and float64", function()
    for _, dtype in ipairs({"float32", "float64"}) do
      local o = {lr = 0.05, momentum = 0.9, weight_decay = 1e-3}
      local m1, l1, o1 = train(2, plain, o, true, dtype, 21)
      local m2, l2, o2 = train(2, plain, o, true, dtype, 21)
      assert.are.same(l1, l2)
      same_params(m1, m2, dtype)
      local m3 = train(2, plain, o, false, dtype, 21)
      same_params(m1, m3, dtype .. " against the unfused path")
      local w1, w2 = m1:parameters()[1], m2:parameters()[1]
      assert.is_true(pt.equal(o1.state[w1].momentum_buffer, o2.state[w2].momentum_buffer))
    end
  end)

  -- a round that cannot meet is made alone, block by block: the numbers stay the same
  local fns = {
    ["a sample that skips the layer"] = function(sample, model)
      local x = sample[1]
      local out
      if pt.worker_id() == 2 and x:sum():item() < IN / 2 then
        out = model[3](pt.zeros(1, HID, {dtype = x:dtype()}))
      else
        out = model(x)
      end
      local loss = nn.cross_entropy(out, sample[2])
      loss:backward()
      return loss
    end,
    ["the weight used twice and more rounds than the window keeps"] = function(sample, model)
      local h = model[1](sample[1])
      for _ = 1, 9 do h = model[1](sample[1]) * 0.5 + h * 0.5 end
      local loss = nn.cross_entropy(model[3](model[2](h)), sample[2])
      loss:backward()
      return loss
    end,
  }
  for name, fn in pairs(fns) do
    it("matches the unfused path with " .. name, function()
      local m1, l1 = train(2, fn, nil, false)
      local m2, l2
      local full, alone = stats_delta(function() m2, l2 = train(2, fn, nil, true) end)
      assert.are.same(l1, l2)
      same_params(m1, m2, name)
      assert.is_true(alone > 0, "products made alone: " .. alone)
      if name:match("twice") then assert.is_true(full > 0, "products made together: " .. full) end
    end)
  end

  it("still meets a worker that runs long Lua code before its product", function()
    local fn = function(sample, model)
      if pt.worker_id() == 2 then
        local t0 = os.clock()
        while os.clock() - t0 < 0.02 do end -- 20 ms: the other worker waits in the round
      end
      return plain(sample, model)
    end
    local m1, l1 = train(2, fn, nil, false, nil, 6)
    local m2, l2
    local full, alone = stats_delta(function() m2, l2 = train(2, fn, nil, true, nil, 6) end)
    assert.are.same(l1, l2)
    same_params(m1, m2, "slow worker")
    assert.are.equal(6, full)
    assert.are.equal(0, alone)
  end)

  it("does not wait for a worker whose sample failed before the layer", function()
    local fn = function(sample, model)
      if pt.worker_id() == 2 then error("broken sample") end
      return plain(sample, model)
    end
    local ds = make_data(6)
    local model = make_model()
    local opt = optim.SGD(model:parameters(), {lr = 0.1})
    local before = model:parameters()[1]:clone()
    local ok, err = pcall(function()
      data.DataHandler(ds):par_by_sample(model, 2, fn, {epoch = true, step = opt})
    end)
    assert.is_false(ok)
    assert.matches("sample 2 failed on worker 2: .*broken sample", err)
    assert.is_true(pt.equal(before, model:parameters()[1]), "no step for the failed window")
    -- the pool goes on
    local m2 = train(2, plain, nil, true)
    same_params(train(2, plain, nil, false), m2, "after the failure")
  end)

  it("makes products alone when the workers reach different weights in a round", function()
    local function run(fused)
      local ds = make_data(10)
      pt.manual_seed(5)
      local model = nn.ModuleDict({a = nn.Linear(IN, HID), b = nn.Linear(IN, HID), out = nn.Linear(HID, 5)})
      local opt = optim.SGD(model:parameters(), {lr = 0.1})
      local fn = function(sample, m)
        local x = sample[1]
        local first, second = m.a, m.b
        if pt.worker_id() == 2 then first, second = m.b, m.a end
        local h = first(x):relu() + second(x):relu()
        local loss = nn.cross_entropy(m.out(h), sample[2])
        loss:backward()
        return loss
      end
      local opts = {epoch = true}
      if fused then opts.step = opt else opts.after_window = function() opt:step(); opt:zero_grad() end end
      local losses
      local full, alone = stats_delta(function()
        losses = data.DataHandler(ds):par_by_sample(model, 2, fn, opts)
      end)
      for i, l in ipairs(losses) do losses[i] = l:item() end
      return model, losses, full, alone
    end
    local m1, l1 = run(false)
    local m2, l2, full, alone = run(true)
    assert.are.same(l1, l2)
    same_params(m1, m2, "crossed rounds")
    assert.are.equal(0, full)
    assert.is_true(alone >= 16, "products made alone: " .. alone)
  end)

  for _, who in ipairs({1, 2}) do
    it(("stops on Ctrl-C while worker %d waits in a round for the other"):format(who), function()
      local fn = function(sample, model)
        if pt.worker_id() ~= who then while true do end end
        return plain(sample, model)
      end
      local model = make_model()
      local opt = optim.SGD(model:parameters(), {lr = 0.1})
      pt._par_test_sigint(0.3)
      local ok, err = pcall(function()
        data.DataHandler(make_data(4)):par_by_sample(model, 2, fn, {epoch = true, step = opt})
      end)
      assert.is_false(ok)
      assert.matches("interrupted", err)
      same_params(train(2, plain, nil, false), train(2, plain, nil, true), "after Ctrl-C")
    end)
  end

  -- Every worker steps its block of the weight or none does: after Ctrl-C the model is the
  -- one some whole number of windows gives, never half a window (a worker that gave up at the
  -- window's barrier while the other came on would have stepped its rows alone)
  it("leaves the model after a whole number of windows when Ctrl-C stops it", function()
    local N = 40
    -- worker 2's samples take a while in C, where Ctrl-C cannot stop them
    local slow = function(sample, model)
      local loss = plain(sample, model)
      if pt.worker_id() == 2 then
        local a = pt.ones(400, 400)
        for _ = 1, 5 do a = a:mm(a):div(400) end
      end
      return loss
    end
    -- the parameters after each window (0: before any), from the unfused path
    local snaps = {}
    local ref = make_model()
    local ropt = optim.SGD(ref:parameters(), {lr = 0.1})
    local function snap()
      local t = {}
      for i, p in ipairs(ref:parameters()) do t[i] = p:clone() end
      snaps[#snaps + 1] = t
    end
    snap()
    data.DataHandler(make_data(N)):par_by_sample(ref, 2, plain, {epoch = true, after_window = function()
      ropt:step()
      ropt:zero_grad()
      snap()
    end})
    assert.are.equal(N / 2 + 1, #snaps)
    for _, delay in ipairs({0.02, 0.05, 0.08}) do
      local model = make_model()
      local opt = optim.SGD(model:parameters(), {lr = 0.1})
      pt._par_test_sigint(delay)
      local ok, err = pcall(function()
        data.DataHandler(make_data(N)):par_by_sample(model, 2, slow, {epoch = true, step = opt})
        local t = pt.clock()
        while pt.clock() - t < 1 do io.open("/dev/null"):close() end -- the signal comes here
      end)
      assert.is_false(ok)
      assert.matches("interrupted", err)
      local found
      for j, s in ipairs(snaps) do
        local same = true
        for i, p in ipairs(model:parameters()) do same = same and pt.equal(p, s[i]) end
        if same then found = j - 1 end
      end
      assert.is_not_nil(found, ("after Ctrl-C at %g s: the parameters of no whole window"):format(delay))
    end
  end)
end)

-- Without after_window, each window's worker samples are submitted while the window before
-- still runs (host/l_par.c, par_windows_impl); pt._par_pipeline(false) waits for the window
-- before to be collected instead.
describe("par_by_sample's windows submitted ahead", function()
  local function with_pipeline(on, f)
    local was = pt._par_pipeline(on)
    local r = table.pack(pcall(f))
    pt._par_pipeline(was)
    assert(r[1], r[2])
    return table.unpack(r, 2, r.n)
  end

  -- the samples carry their index: sample[3]
  local function indexed(n)
    local ds = make_data(n)
    return {get = function(_, i) local s = ds:get(i); return {s[1], s[2], i} end,
            len = function() return n end}
  end

  for _, threads in ipairs({2, 3}) do
    it(("gives the weights and losses of windows submitted one by one (%d threads)"):format(threads), function()
      for _, o in ipairs({{lr = 0.1}, {lr = 0.05, momentum = 0.9}}) do
        local function ahead_of(f)
          local a = pt._par_coop_stats().ahead
          local m, l = f()
          return m, l, pt._par_coop_stats().ahead - a
        end
        local m1, l1, a1 = with_pipeline(false, function()
          return ahead_of(function() return train(threads, plain, o, true, nil, 17) end)
        end)
        local m2, l2, a2 = with_pipeline(true, function()
          return ahead_of(function() return train(threads, plain, o, true, nil, 17) end)
        end)
        assert.are.same(l1, l2)
        same_params(m1, m2, "pipelined")
        -- 17 samples: every window after the first with 2+ samples went ahead
        assert.are.equal(0, a1)
        assert.are.equal(threads == 2 and 7 or 5, a2)
      end
    end)
  end

  it("sums an epoch's gradients as windows submitted one by one (no step)", function()
    local function grads()
      local model = make_model()
      data.DataHandler(make_data(15)):par_by_sample(model, 2, plain, {epoch = true})
      local g = {}
      for i, p in ipairs(model:parameters()) do g[i] = p.grad end
      return g
    end
    local g1 = with_pipeline(false, grads)
    local g2 = with_pipeline(true, grads)
    for i = 1, #g1 do assert.is_true(pt.equal(g1[i], g2[i]), "gradient " .. i) end
  end)

  for _, bad in ipairs({5, 6}) do
    it(("fails at sample %d with the next window under way, stepped up to the window before"):format(bad), function()
      local fn = function(sample, model)
        if sample[3] == bad then error("bad sample " .. sample[3]) end
        return plain(sample, model)
      end
      local model = make_model()
      local opt = optim.SGD(model:parameters(), {lr = 0.1})
      local ok, err = pcall(function()
        data.DataHandler(indexed(10)):par_by_sample(model, 2, fn, {epoch = true, step = opt})
      end)
      assert.is_false(ok)
      assert.matches(("sample %d failed on worker %d: .*bad sample %d"):format(bad, bad - 4, bad), err)
      -- samples 1-4 (windows 1 and 2) were stepped, and nothing of windows 3 and 4
      same_params(model, train(2, plain, nil, true, nil, 4), "after the failure")
      -- the pool goes on
      same_params(train(2, plain, nil, false), train(2, plain, nil, true), "the next call")
    end)
  end

  -- sample 8 (worker 2's) is read ahead during window 3 (in the caller's barrier), sample 7
  -- (worker 1's, the caller's own) at the start of window 4
  for _, bad in ipairs({7, 8}) do
    it(("reports sample %d that cannot be read at its own window, after the window before stepped"):format(bad), function()
      local ds = indexed(10)
      local get = ds.get
      local reads = {}
      ds.get = function(self, i)
        reads[#reads + 1] = i
        if i == bad then error("unreadable " .. i) end
        return get(self, i)
      end
      local model = make_model()
      local opt = optim.SGD(model:parameters(), {lr = 0.1})
      local ok, err = pcall(function()
        data.DataHandler(ds):par_by_sample(model, 2, plain, {epoch = true, step = opt})
      end)
      assert.is_false(ok)
      assert.matches(("sample %d could not be read: .*unreadable %d"):format(bad, bad), err)
      same_params(model, train(2, plain, nil, true, nil, 6), "windows 1-3 stepped")
      -- each window's worker sample, then its own (still read when the other failed, as it
      -- comes first in sample order): nothing past window 4
      assert.are.same({2, 1, 4, 3, 6, 5, 8, 7}, reads)
    end)
  end
end)
