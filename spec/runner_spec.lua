local pt = require "partrain"

local function range(n)
  local t = {}
  for i = 1, n do t[i] = i end
  return t
end

local function busy(seconds)
  local t0 = os.clock()
  while os.clock() - t0 < seconds do end
end

describe("pt.Runner", function()
  it("runs the seed's sum of powers, ordered, with cfg", function()
    local runner = pt.Runner{ordered = true, devices = {"cpu", "cpu"}, cfg = {exponent = 3},
      producer_work = function(device, cfg, x) return x ^ cfg.exponent end,
      consumer_init = function(cfg) cfg.sum = 0 end,
      consumer_work = function(cfg, r) cfg.sum = cfg.sum + r end,
      consumer_end = function(cfg) return cfg.sum end}
    local expected = 0
    for i = 1, 100 do expected = expected + i ^ 3 end
    assert.are.equal(expected, runner(range(100)))
    runner:close()
  end)

  it("delivers results in input order when ordered", function()
    local runner = pt.Runner{ordered = true, devices = 2,
      producer_work = function(_, _, x)
        if x == 1 then busy(0.2) end
        return x
      end,
      consumer_init = function(cfg) cfg.list = {} end,
      consumer_work = function(cfg, r) cfg.list[#cfg.list + 1] = r end,
      consumer_end = function(cfg) return cfg.list end}
    assert.are.same(range(8), runner(range(8)))
    runner:close()
  end)

  it("delivers results in completion order when unordered", function()
    local runner = pt.Runner{ordered = false, devices = 2,
      producer_work = function(_, _, x)
        if x == 1 then busy(0.3) end
        return x
      end,
      consumer_init = function(cfg) cfg.list = {} end,
      consumer_work = function(cfg, r) cfg.list[#cfg.list + 1] = r end,
      consumer_end = function(cfg) return cfg.list end}
    local list = runner(range(8))
    table.sort(list)
    assert.are.same(range(8), list)
    local again = runner(range(8))
    assert.are_not.equal(1, again[1]) -- item 1 is slow: something else came first
    runner:close()
  end)

  it("gives each producer its own cfg for its life and the consumer a fresh copy per call", function()
    local cfg = {count = 0, calls = 0}
    local runner = pt.Runner{devices = 2, ordered = true, cfg = cfg,
      producer_init = function(device, c) c.device = device; c.id = pt.worker_id() end,
      producer_work = function(_, c, x)
        c.count = c.count + 1
        return {worker = c.id, count = c.count}
      end,
      consumer_init = function(c) c.calls = c.calls + 1; c.seen = {} end,
      consumer_work = function(c, r) c.seen[#c.seen + 1] = r end,
      consumer_end = function(c) return c end}
    local c1 = runner(range(6))
    local c2 = runner(range(4))
    -- the consumer's copy is fresh each call
    assert.are.equal(1, c1.calls)
    assert.are.equal(1, c2.calls)
    -- each producer counts its own items across calls
    local per = {}
    for _, r in ipairs(c1.seen) do per[r.worker] = math.max(per[r.worker] or 0, r.count) end
    for _, r in ipairs(c2.seen) do per[r.worker] = math.max(per[r.worker] or 0, r.count) end
    local total = 0
    for _, n in pairs(per) do total = total + n end
    assert.are.equal(10, total)
    -- the caller's cfg is untouched
    assert.are.same({count = 0, calls = 0}, cfg)
    runner:close()
  end)

  it("takes an iterator function as input", function()
    local runner = pt.Runner{devices = 2, ordered = true,
      producer_work = function(_, _, x) return x * 10 end,
      consumer_init = function(cfg) cfg.list = {} end,
      consumer_work = function(cfg, r) cfg.list[#cfg.list + 1] = r end,
      consumer_end = function(cfg) return cfg.list end}
    local i = 0
    local out = runner(function() i = i + 1; if i <= 5 then return i end end)
    assert.are.same({10, 20, 30, 40, 50}, out)
    runner:close()
  end)

  it("runs producer_end on close; close is idempotent and a closed runner raises", function()
    local flags = pt.zeros(2)
    local runner = pt.Runner{devices = 2,
      producer_end = function(_, _) flags[pt.worker_id()] = 1 end}
    runner(range(3))
    runner:close()
    assert.are.same({1, 1}, flags:tolist())
    runner:close()
    assert.is_true(runner:is_closed())
    assert.has_error(function() runner(range(3)) end, "Runner: the runner is closed")
  end)

  it("raises a failing producer's error and stays usable", function()
    local runner = pt.Runner{devices = 2, ordered = true,
      producer_work = function(_, _, x)
        if x == 3 then error("bad item") end
        return x
      end,
      consumer_init = function(cfg) cfg.n = 0 end,
      consumer_work = function(cfg) cfg.n = cfg.n + 1 end,
      consumer_end = function(cfg) return cfg.n end}
    local ok, err = pcall(runner, range(6))
    assert.is_false(ok)
    assert.matches("^Runner: producer_work %(item 3%) failed on producer %d %(cpu%): .*runner_spec.lua:%d+: bad item", err)
    assert.matches("stack traceback:", err)
    assert.are.equal(2, runner({1, 2}))
    runner:close()
  end)

  it("runs producer_end on the producers whose init ran when another's init fails", function()
    local flags = pt.zeros(2)
    local ok, err = pcall(pt.Runner, {devices = {"cpu", "cpu"},
      producer_init = function(_, cfg) if pt.worker_id() == 2 then error("no model", 0) end end,
      producer_end = function() flags[pt.worker_id()] = 1 end})
    assert.is_false(ok)
    assert.matches("^Runner: producer_init failed on producer 2 %(cpu%): no model", err)
    assert.are.same({1, 0}, flags:tolist())
  end)

  it("raises a failing producer_init at construction", function()
    local ok, err = pcall(pt.Runner, {devices = 1, producer_init = function() error("no model", 0) end})
    assert.is_false(ok)
    assert.matches("^Runner: producer_init failed on producer 1 %(cpu%): no model\nstack traceback:", err)
    assert.matches("runner_spec.lua:%d+: in local 'init'", err)
  end)

  it("checks its options", function()
    assert.has_error(function() pt.Runner{devices = {"cuda:0"}} end,
      "Runner: device 'cuda:0' is not available (partrain was built without a GPU backend or no GPU was found)")
    assert.has_error(function() pt.Runner{devices = {"tpu"}} end,
      "Runner: invalid device 'tpu' (expected \"cpu\", \"cpu:N\" or \"cuda:N\")")
    assert.has_error(function() pt.Runner{devices = 0} end, "Runner: devices must be at least 1 (got 0)")
    assert.has_error(function() pt.Runner{devices = {}} end, "Runner: the list of devices is empty")
    assert.has_error(function() pt.Runner{producer_work = 3} end, "Runner: producer_work must be a function (got number)")
    assert.has_error(function() pt.Runner{cfg = 3} end, "Runner: cfg must be a table (got number)")
    local r = pt.Runner{devices = 1}
    assert.has_error(function() r(42) end, "Runner: expected a list or an iterator function (got number)")
    r:close()
  end)

  it("runs producer_end when collected and when the program ends without close()", function()
    local flags = pt.zeros(2)
    local r = pt.Runner{devices = 2, producer_end = function() flags[pt.worker_id()] = 5 end}
    r({1, 2})
    r = nil -- luacheck: ignore
    collectgarbage()
    collectgarbage()
    assert.are.same({5, 5}, flags:tolist())
    -- a script that ends with an open runner: the state's close runs the finalizers
    local f = os.tmpname()
    local script = os.tmpname()
    local h = assert(io.open(script, "w"))
    h:write(([[
      local pt = require "partrain"
      local r = pt.Runner{devices = 1, cfg = {f = %q},
        producer_end = function(_, cfg) local o = io.open(cfg.f, "w"); o:write("ended"); o:close() end}
      r({1})
    ]]):format(f))
    h:close()
    local support = require "spec.support"
    assert.is_true(os.execute(support.quote(support.exe) .. " " .. support.quote(script)))
    h = assert(io.open(f))
    assert.are.equal("ended", h:read("a"))
    h:close()
    os.remove(f)
    os.remove(script)
  end)

  it("names a value that cannot be sent to a producer", function()
    local co = coroutine.create(function() end)
    local f = assert(io.open(os.tmpname(), "w"))
    local function err(fn, ...)
      local ok, e = pcall(fn, ...)
      assert.is_false(ok)
      return tostring(e)
    end
    assert.matches("Runner: upvalue 'co' %(thread%) of function 'producer_work' cannot be sent to a worker$",
      err(pt.Runner, {devices = 1, producer_work = function() return co end}))
    assert.matches("Runner: field 'cfg.f' %(userdata FILE%*%) cannot be sent to a worker %(in cfg%)$",
      err(pt.Runner, {devices = 1, cfg = {f = f}}))
    local r = pt.Runner{devices = 1, producer_work = function(_, _, x) return x end,
      consumer_init = function(cfg) cfg.sum = 0 end,
      consumer_work = function(cfg, y) cfg.sum = cfg.sum + y end,
      consumer_end = function(cfg) return cfg.sum end}
    assert.are.equal("Runner: item 2 (thread) cannot be sent to a worker", err(r, {1, co}))
    assert.are.equal(5, r({5})) -- and it keeps working
    r:close()
    f:close()
  end)

  it("closes with <close>", function()
    local flags = pt.zeros(1)
    do
      local r <close> = pt.Runner{devices = 1, producer_end = function() flags[1] = 7 end}
      r({1})
    end
    assert.are.equal(7, flags[1])
  end)
  it("runs one call at a time: a call from its own consumer or while one is suspended raises", function()
    -- a second call took the first one's results off the pool ("table index is nil")
    local busy = "Runner: a call is running (called from its own consumer functions, or suspended in a coroutine)"
    local runner = pt.Runner{devices = 2, producer_work = function(_, _, x) return x end}
    local inner
    runner.consumer_work = function() inner = {pcall(runner, {1})} end
    runner({1, 2})
    assert.is_false(inner[1])
    assert.truthy(inner[2]:find(busy .. ": a runner runs one call at a time", 1, true))
    -- a call suspended in a coroutine (its consumer yields): calls and close() wait for it
    runner.consumer_work = function() coroutine.yield() end
    local co = coroutine.create(function() return runner({1, 2, 3}) end)
    assert.is_true(coroutine.resume(co))
    local ok, err = pcall(runner, {1})
    assert.is_false(ok)
    assert.truthy(err:find(busy, 1, true))
    ok, err = pcall(runner.close, runner)
    assert.is_false(ok)
    assert.truthy(err:find(busy:gsub("^Runner: ", "Runner: close: "), 1, true))
    while coroutine.status(co) == "suspended" do assert.is_true(coroutine.resume(co)) end
    runner.consumer_work = nil
    assert.is_nil(runner({4}))
    runner:close()
  end)

  it("stops its producers' items on Ctrl-C in the consumer instead of waiting for them", function()
    local t0 = pt.clock()
    local runner = pt.Runner{devices = 2,
      producer_work = function(_, _, x)
        local t = os.clock()
        while os.clock() - t < (x == 2 and 30 or 0.01) do end -- item 2: 30 s unless stopped
        return x
      end,
      consumer_work = function()
        local t = os.clock()
        -- (opening a file: TSan delivers a signal only when the thread enters libc)
        while os.clock() - t < 0.3 do assert(io.open("/dev/null")):close() end
      end}
    pt._par_test_sigint(0.2)
    local ok, err = pcall(runner, {1, 2, 3, 4})
    assert.is_false(ok)
    assert.matches("interrupted", err)
    assert.is_true(pt.clock() - t0 < 15) -- item 2 was stopped, not waited for
    runner.consumer_work = nil
    runner({5}) -- and the runner still works
    runner:close()
  end)

  it("seeds each producer from the caller's generator: pt.manual_seed replays producer_init's draws", function()
    local function run(seed)
      pt.manual_seed(seed)
      local out = {}
      local r = pt.Runner{devices = 2, ordered = true,
        producer_init = function(_, cfg) cfg.v = pt.rand(1):item() end,
        producer_work = function(_, cfg) return cfg.v end,
        consumer_work = function(_, y) out[#out + 1] = y end}
      r({1, 2})
      r:close()
      return out
    end
    local a = run(3)
    assert.are.same(a, run(3))
    assert.are_not.same(a, run(4))
    assert.are_not.equal(a[1], a[2]) -- the producers draw different numbers
  end)
end)
