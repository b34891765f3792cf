-- pt._process_map: forked worker processes, the serialiser, shared-memory tensors, crashes.
local pt = require "partrain"

local libpath = pt.ffi.exe_dir() .. "/spec/lib_native.so"

local function my_pid()
  local f = assert(io.open("/proc/self/stat"))
  local pid = f:read("n")
  f:close()
  return pid
end

-- children of this process in state Z (zombies)
local function zombies()
  local n = 0
  local p = assert(io.popen("ps --ppid " .. my_pid() .. " -o stat="))
  for line in p:lines() do
    if line:match("^Z") then n = n + 1 end
  end
  p:close()
  return n
end

local function getpid_fn()
  return pt.ffi.load():fn("getpid", "int()")
end

describe("pt._process_map", function()
  it("runs each item in a worker and returns results in item order", function()
    local getpid = getpid_fn()
    local parent = getpid()
    local results, errors = pt._process_map(function(a, b) return { sum = a + b, pid = getpid() } end,
      { { 1, 2 }, { 3, 4 }, { 5, 6 }, { 7, 8 } }, 2)
    assert.are.same({}, errors)
    assert.are.equal(4, results.n)
    local pids = {}
    for i, r in ipairs(results) do
      assert.are.equal(4 * i - 1, r.sum)
      assert.are_not.equal(parent, r.pid)
      pids[r.pid] = true
    end
    local distinct = 0
    for _ in pairs(pids) do distinct = distinct + 1 end
    assert.is_true(distinct >= 1 and distinct <= 2)
    assert.are.equal(0, zombies())
  end)

  it("fails an item whose arguments cannot be read, in the worker, and nothing else", function()
    -- reading them raised outside the worker's pcall: the forked child went on running the
    -- caller's script after the call (its output twice), and killed its siblings on exit
    local getpid = getpid_fn()
    local parent = getpid()
    local bad = setmetatable({}, {__index = function() error("no arguments here") end})
    local ok, results, errors = pcall(pt._process_map, function(a) return a end,
      { { 1 }, bad, { n = 2000000 }, { 4 } }, 2)
    assert.are.equal(parent, getpid()) -- a child that escaped would come here too
    assert.is_true(ok)
    assert.are.same({ 1, 4 }, { results[1], results[4] })
    assert.matches("^cannot read the arguments: .*no arguments here$", errors[2].message)
    assert.are.equal("cannot read the arguments: 2000000 arguments are more than a Lua stack holds",
      errors[3].message)
    assert.are.equal(0, zombies())
  end)

  it("inherits the caller's values (upvalues, globals, tensors) without sending them", function()
    local big = pt.arange(1000)
    GLOBAL_FOR_PROCESS_SPEC = 5
    local results = pt._process_map(function(i) return big:tolist()[i] + GLOBAL_FOR_PROCESS_SPEC end,
      { { 10 }, { 20 } }, 2)
    assert.are.same({ 14, 24 }, { results[1], results[2] })
    GLOBAL_FOR_PROCESS_SPEC = nil
  end)

  it("serialises nil, booleans, numbers, strings and nested tables", function()
    local results, errors = pt._process_map(function()
      return { 1, 2.5, "a\0b", true, false, nested = { deep = { list = { "x", "y" } }, [3.5] = "f" },
        big = math.maxinteger, [10] = "sparse" }
    end, { {} }, 1)
    assert.are.same({}, errors)
    assert.are.same({ 1, 2.5, "a\0b", true, false, nested = { deep = { list = { "x", "y" } }, [3.5] = "f" },
      big = math.maxinteger, [10] = "sparse" }, results[1])
    assert.are.equal("integer", math.type(results[1][1]))
    assert.are.equal("float", math.type(results[1][2]))
    local r2 = pt._process_map(function() return nil end, { {} }, 1)
    assert.are.equal(1, r2.n)
    assert.is_nil(r2[1])
  end)

  it("sends shared references twice (as copies) and drops metatables made in the worker", function()
    local results = pt._process_map(function()
      local shared = { v = 1 }
      return setmetatable({ a = shared, b = shared }, { __index = function() return 0 end })
    end, { {} }, 1)
    assert.are.same({ v = 1 }, results[1].a)
    assert.are.same({ v = 1 }, results[1].b)
    assert.is_nil(getmetatable(results[1]))
  end)

  it("gives back the caller's own class for metatables its fn, arguments or globals reach", function()
    local Point = {}
    Point.__index = Point
    function Point.new(x) return setmetatable({ x = x }, Point) end
    function Point:twice() return 2 * self.x end
    ProcessSpecGlobalClass = setmetatable({}, { __index = Point })
    ProcessSpecGlobalClass.__index = ProcessSpecGlobalClass
    local results, errors = pt._process_map(function(i, p)
      if i == 1 then return Point.new(5) end            -- a class fn reaches (upvalue)
      if i == 2 then p.x = p.x + 1; return p end         -- an argument's class, there and back
      return setmetatable({ x = 7 }, ProcessSpecGlobalClass) -- a global class, derived
    end, { { 1 }, { 2, Point.new(20) }, { 3 } }, 2)
    assert.is_nil(next(errors))
    assert.are.equal(Point, getmetatable(results[1]))
    assert.are.equal(10, results[1]:twice())
    assert.are.equal(Point, getmetatable(results[2]))
    assert.are.equal(21, results[2].x)
    assert.are.equal(ProcessSpecGlobalClass, getmetatable(results[3]))
    assert.are.equal(14, results[3]:twice())
    ProcessSpecGlobalClass = nil
  end)

  it("maps every global class, however large the other global classes are", function()
    -- global class-like tables (in the real _G: busted's spec environment keeps its own) that use
    -- up the class walk's budget: before, a class defined as a global was reached or not
    -- depending on _G's order, and its instances came back without it
    for k = 1, 8 do
      local big = {__index = {}}
      for i = 1, 10000 do big[i] = {} end
      rawset(_G, "ProcessSpecBig" .. k, big)
    end
    for trial = 1, 6 do
      local C = {}
      C.__index = C
      rawset(_G, "ProcessSpecBudgetClass", C)
      local results, errors = pt._process_map(function() return setmetatable({x = 7}, _G.ProcessSpecBudgetClass) end,
        {{}}, 1)
      assert.is_nil(next(errors))
      assert.are.equal(C, getmetatable(results[1]), "trial " .. trial)
    end
    for k = 1, 8 do rawset(_G, "ProcessSpecBig" .. k, nil) end
    rawset(_G, "ProcessSpecBudgetClass", nil)
  end)

  it("finds a class kept deep behind an environment's closures, and the class of a late row of large data", function()
    -- as busted keeps a spec's globals: in a table reached only through the metamethods of the
    -- function's environment, here 150 tables down a chain (the walk once stopped at depth 100
    -- and spent its budget on what came first)
    local store = {}
    local ctx = { env = store }
    for _ = 1, 150 do ctx = { parent = ctx } end
    local env = setmetatable({}, {
      __index = function(_, k)
        local c = ctx
        while c.parent do c = c.parent end
        local v = c.env[k]
        if v == nil then return _G[k] end
        return v
      end,
    })
    local make = load("return function(i) return setmetatable({ x = i }, DeepClass) end", "=deep", "t", env)()
    local Deep = {}
    Deep.__index = Deep
    store.DeepClass = Deep
    -- rows past the first 256 of a table are looked at for their class only
    local Row = {}
    Row.__index = Row
    local rows = {}
    for i = 1, 100000 do rows[i] = { i } end
    rows[99999] = setmetatable({ 5 }, Row)
    local results, errors = pt._process_map(function(i)
      if i == 1 then return make(i) end
      return rows[99999]
    end, { { 1 }, { 2 } }, 2)
    assert.is_nil(next(errors))
    assert.are.equal(Deep, getmetatable(results[1]))
    assert.are.equal(1, results[1].x)
    assert.are.equal(Row, getmetatable(results[2]))
    assert.are.same({ 5 }, setmetatable(results[2], nil))
  end)

  it("brings tensors back through shared memory", function()
    local results, errors = pt._process_map(function(n)
      local t = pt.arange(n):float()
      return { t = t, ids = pt.arange(3), d = pt.tensor({ { 1.5, 2.5 } }, { dtype = "float64" }), scalar = pt.tensor(7) }
    end, { { 4 }, { 1000000 } }, 2)
    assert.are.same({}, errors)
    local r = results[1]
    assert.are.same({ 0, 1, 2, 3 }, r.t:tolist())
    assert.are.equal("float32", r.t:dtype())
    assert.are.same({ 0, 1, 2 }, r.ids:tolist())
    assert.are.equal("int64", r.ids:dtype())
    assert.are.same({ { 1.5, 2.5 } }, r.d:tolist())
    assert.are.equal("float64", r.d:dtype())
    assert.are.equal(7, r.scalar:item())
    assert.are.same({ 1000000 }, results[2].t:size())
    assert.are.equal(999999, results[2].t:tolist()[1000000])
    r.t:fill_(9) -- the mapping is private to the parent now, and writable
    assert.are.same({ 9, 9, 9, 9 }, r.t:tolist())
    assert.are.same({ 0, 1, 2 }, r.ids:tolist())
  end)

  it("returns the error of an item that raised, with its traceback and worker", function()
    local results, errors = pt._process_map(function(i)
      if i == 2 then error("boom " .. i) end
      return i
    end, { { 1 }, { 2 }, { 3 } }, 2)
    assert.are.equal(1, results[1])
    assert.is_nil(results[2])
    assert.are.equal(3, results[3])
    assert.matches("boom 2$", errors[2].message)
    assert.matches("stack traceback", errors[2].traceback)
    -- the worker's own frames: none of the caller's that the fork copied
    assert.matches("process_spec.lua:203: in function <", errors[2].traceback)
    assert.is_nil(errors[2].traceback:find("_process_map", 1, true))
    assert.is_nil(errors[2].traceback:find("busted", 1, true))
    assert.is_true(errors[2].worker == 1 or errors[2].worker == 2)
    -- error objects that are not strings read as in the threads' workers
    local _, errs = pt._process_map(function(i)
      if i == 1 then error({ code = 7 }) end
      error(setmetatable({}, { __tostring = function() return "custom text" end }))
    end, { { 1 }, { 2 } }, 1)
    assert.are.equal("(error object is a table value)", errs[1].message)
    assert.are.equal("custom text", errs[2].message)
  end)

  it("turns a worker killed by SIGSEGV in native code into its item's error and replaces it", function()
    local crash_if = pt.ffi.load(libpath):fn("crash_if", "int(int)")
    local results, errors = pt._process_map(crash_if, { { 0 }, { 0 }, { 1 }, { 0 }, { 0 }, { 1 }, { 0 } }, 2)
    for _, i in ipairs { 1, 2, 4, 5, 7 } do assert.are.equal(7, results[i]) end
    assert.are.equal("process worker for item 3 died with signal 11 (Segmentation fault)", errors[3].message)
    assert.are.equal("process worker for item 6 died with signal 11 (Segmentation fault)", errors[6].message)
    assert.is_nil(errors[1])
    assert.are.equal(0, zombies())
  end)

  it("reports a worker that exits", function()
    local _, errors = pt._process_map(function(code) os.exit(code) end, { { 3 } }, 1)
    assert.are.equal("process worker for item 1 exited with status 3", errors[1].message)
    assert.are.equal(0, zombies())
  end)

  it("reports values that cannot be sent back", function()
    local _, errors = pt._process_map(function(kind)
      if kind == "function" then return { inner = { print } } end
      local t = {}
      t.self = t
      return t
    end, { { "function" }, { "cycle" } }, 2)
    assert.are.equal("process: the result cannot be sent back: cannot send a function value from a "
      .. "process worker (at result.inner[1])", errors[1].message)
    assert.are.equal("process: the result cannot be sent back: cannot send a table that contains "
      .. "itself (at result.self)", errors[2].message)
  end)

  it("handles more items than workers and no items at all", function()
    local list = {}
    for i = 1, 25 do list[i] = { i } end
    local results = pt._process_map(function(i) return i * i end, list, 3)
    for i = 1, 25 do assert.are.equal(i * i, results[i]) end
    local none, errs = pt._process_map(function() end, {}, 2)
    assert.are.equal(0, none.n)
    assert.are.same({}, errs)
  end)

  it("checks n_workers", function()
    assert.has_error(function() pt._process_map(print, {}, 0) end,
      "process: n_workers must be at least 1, got 0")
  end)

  it("stops on Ctrl-C sent to the caller alone, its workers killed, and works again", function()
    pt._par_test_sigint(0.3)
    local t0 = pt.clock()
    local ok, err = pcall(pt._process_map, function(i)
      if i == 2 then while true do end end
      return i
    end, {{1}, {2}, {3}}, 3)
    assert.is_false(ok)
    assert.matches("interrupted", err)
    assert.is_true(pt.clock() - t0 < 5)
    assert.are.equal(0, zombies())
    local results = pt._process_map(function(i) return i + 1 end, {{1}, {2}}, 2)
    assert.are.same({2, 3}, {results[1], results[2]})
  end)

  -- the caller's threads (the compute helpers, the shared worker pool) are not in a forked
  -- worker: its parallel ops run on its one thread and its thread pool is made afresh
  it("runs parallel ops and thread workers in a worker after the caller used its threads", function()
    -- ThreadSanitizer refuses threads started after a fork from a process with threads
    if pt._sanitizer == "thread" then return pending("threads after fork under TSan") end
    pt.randn(1000000):exp():sum() -- the compute helpers start
    local twice = function(i) return 2 * i end
    assert.are.same({2, 4}, {table.unpack(pt._pool_map(twice, {{1}, {2}}, {n_workers = 2}), 1, 2)})
    local results, errs = pt._process_map(function(i)
      local m = pt.ones(512, 512)
      local big = pt.ones(1000000):exp():sum():item()
      local r = pt._pool_map(twice, {{i}, {i + 1}}, {n_workers = 2})
      return m:mm(m)[1][1] + r[1] + r[2] + (big > 0 and 0 or 1)
    end, {{1}, {2}}, 2)
    assert.are.same({}, errs)
    assert.are.same({512 + 2 + 4, 512 + 4 + 6}, {results[1], results[2]})
    -- a pool object made in the caller refuses to run in a worker, it does not hang
    local pool = pt._Pool(2)
    local r2 = pt._process_map(function() return pcall(pool.submit, pool, 1, print) end, {{}}, 1)
    assert.is_false(r2[1])
    pool:close()
  end)
end)

describe("t:share_memory_()", function()
  it("moves every kind of storage into shared memory in place, views included", function()
    for _, t in ipairs({ pt.tensor({ 1.5, -2 }), pt.arange(1, 20001):double(),
      pt.tensor({ 9007199254740993, -3 }, { dtype = "int64" }), pt.zeros(0), pt.tensor(7) }) do
      local before = t:clone()
      local view = t:numel() > 1 and t[{ { 2, 2 } }] or nil
      assert.is_false(t:is_shared())
      assert.are.equal(t, t:share_memory_())
      assert.is_true(t:is_shared())
      assert.is_true(pt.equal(before, t))
      if view then
        assert.is_true(view:is_shared())
        view:fill_(5)
        assert.are.equal(5, t[2])
      end
      t:share_memory_() -- a second call: nothing to do
      assert.is_true(t:is_shared())
    end
    assert.are.equal(9007199254740993, pt.tensor({ 9007199254740993 }, { dtype = "int64" }):share_memory_()[1])
  end)

  it("lets process workers write into the caller's tensor", function()
    local t = pt.zeros(6):share_memory_()
    local rows = pt.zeros(3, 4):share_memory_()
    local results, errors = pt._process_map(function(i)
      t[i] = i * 10
      rows[(i - 1) % 3 + 1]:add_(1)
      return i
    end, { { 1 }, { 2 }, { 3 }, { 4 }, { 5 }, { 6 } }, 2)
    assert.are.same({}, errors)
    assert.are.equal(6, results.n)
    assert.are.same({ 10, 20, 30, 40, 50, 60 }, t:tolist())
    assert.are.same({ { 2, 2, 2, 2 }, { 2, 2, 2, 2 }, { 2, 2, 2, 2 } }, rows:tolist())
  end)

  it("leaves a tensor that was not shared as it was (the workers write their own copy)", function()
    local t = pt.zeros(2)
    local results = pt._process_map(function(i) t[i] = 1; return t:sum():item() end, { { 1 }, { 2 } }, 2)
    assert.are.same({ 0, 0 }, t:tolist())
    assert.are.equal(1, results[1])
  end)

  it("shares a model's parameters: steps taken in the workers move the caller's model", function()
    pt.manual_seed(3)
    local model = pt.nn.Sequential(pt.nn.Linear(4, 2), pt.nn.BatchNorm1d(2))
    assert.are.equal(model, model:share_memory())
    for _, p in ipairs(model:parameters()) do assert.is_true(p:is_shared()) end
    for _, b in ipairs(model:buffers()) do assert.is_true(b:is_shared()) end
    model = model[1]
    local w0 = model.weight:clone()
    local x = pt.rand(8, 4)
    -- each worker trains on its own rows (Hogwild): the weights it steps are the caller's
    local _, errors = pt._process_map(function(i)
      local opt = pt.optim.SGD(model:parameters(), { lr = 0.1 })
      opt:zero_grad()
      local loss = model(x[{ { 2 * i - 1, 2 * i } }]):pow(2):sum()
      loss:backward()
      opt:step()
    end, { { 1 }, { 2 }, { 3 }, { 4 } }, 2)
    assert.are.same({}, errors)
    assert.is_false(pt.equal(w0, model.weight))
    assert.is_true(model.weight:isfinite():all():item())
  end)

  it("comes back shared from a process worker", function()
    local results = pt._process_map(function() return pt.ones(3) end, { {} }, 1)
    assert.is_true(results[1]:is_shared())
    assert.is_false(pt.ones(3):is_shared())
  end)
end)
