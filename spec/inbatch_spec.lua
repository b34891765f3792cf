-- pt.inbatch_parallel: batchflow's semantics (seed 001, DESIGN.md §2) on every target.
local pt = require "partrain"

local libpath = pt.ffi.exe_dir() .. "/spec/lib_native.so"

local function now()
  local f = assert(io.open("/proc/uptime"))
  local t = f:read("n")
  f:close()
  return t
end

-- targets where the decorated method itself runs once per item
local lua_targets = { "async" }
if rawget(pt, "_pool_map") then lua_targets[#lua_targets + 1] = "threads" end

-- A small batch class in the seed's shape: indices + data, an init and a post method.
local function Batch(target, extra_opts)
  local B = {}
  B.__index = B
  function B.new(data) return setmetatable({ data = data, indices = { 1, 2, 3 } }, B) end
  function B:_init_default(...) return self.indices end
  function B:_post_default(results, ...)
    self.results = results
    self.post_args = table.pack(...)
    return self
  end
  local opts = { init = "_init_default", post = "_post_default", target = target }
  for k, v in pairs(extra_opts or {}) do opts[k] = v end
  B.opts = opts
  return B
end

for _, target in ipairs(lua_targets) do
  describe("inbatch_parallel (" .. target .. ")", function()
    it("runs the method once per init entry and hands the results to post, in init order", function()
      local B = Batch(target)
      B.square = pt.inbatch_parallel(B.opts, function(self, item) return self.data[item] ^ 2 end)
      local b = B.new({ 3, 4, 5 })
      assert.are.equal(b, b:square())
      assert.are.equal(3, b.results.n)
      assert.are.same({ 9, 16, 25 }, { b.results[1], b.results[2], b.results[3] })
    end)

    it("unpacks each form of entry into the method's arguments", function()
      local B = Batch(target)
      local marked = setmetatable({ tag = "obj" }, { __name = "Obj" })
      function B:_init_default()
        return {
          { 1, "a" },                      -- a list: positional
          { x = 2, y = "b" },              -- string keys only: named
          pt.args({ 3, "c" }, { z = true }), -- explicit positional + named
          4,                               -- a non-table: the single positional argument
          marked,                          -- a table with a metatable: a single value too
          {},                              -- an empty list: no arguments
          { n = 3, 5, nil, "e" },          -- a list with a hole, length from n
          { n = 2 },                       -- n without list items: a named key
        }
      end
      B.show = pt.inbatch_parallel(B.opts, function(self, ...)
        local out = {}
        local args = table.pack(...)
        for i = 1, args.n do
          local v = args[i]
          if type(v) == "table" and getmetatable(v) == nil then
            local keys = {}
            for k, w in pairs(v) do keys[#keys + 1] = k .. "=" .. tostring(w) end
            table.sort(keys)
            v = "{" .. table.concat(keys, ",") .. "}"
          elseif type(v) == "table" then
            v = "obj:" .. tostring(v.tag)
          end
          out[#out + 1] = tostring(v)
        end
        return table.concat(out, " ")
      end)
      local b = B.new({})
      b:show()
      assert.are.same({ "1 a", "{x=2,y=b}", "3 c {z=true}", "4", "obj:obj", "", "5 nil e", "{n=2}" },
        { table.unpack(b.results, 1, b.results.n) })
    end)

    it("appends the call's own arguments after the entry's", function()
      local B = Batch(target)
      B.act = pt.inbatch_parallel(B.opts, function(self, item, a, b, c)
        return table.concat({ item, a, b, tostring(c) }, ",")
      end)
      local b = B.new({})
      b:act(10, 20)
      assert.are.same({ "1,10,20,nil", "2,10,20,nil", "3,10,20,nil" }, { table.unpack(b.results, 1, 3) })
      function B:_init_default() return { { 1, 2 } } end
      b:act("x")
      assert.are.equal("1,2,x,nil", b.results[1])
    end)

    it("passes extra options to init and post but never to the method", function()
      local B = Batch(target, { clear_data = false, tag = "extra" })
      local seen_init
      function B:_init_default(...)
        seen_init = table.pack(...)
        return { 1, 2 }
      end
      B.act = pt.inbatch_parallel(B.opts, function(self, ...) return select("#", ...) end)
      local b = B.new({})
      b:act("p")
      assert.are.equal(2, seen_init.n)
      assert.are.equal("p", seen_init[1])
      assert.are.same({ clear_data = false, tag = "extra" }, seen_init[2])
      assert.are.same({ 2, 2 }, { b.results[1], b.results[2] }) -- item and "p" only
      assert.are.equal(2, b.post_args.n)
      assert.are.equal("p", b.post_args[1])
      assert.are.same({ clear_data = false, tag = "extra" }, b.post_args[2])
    end)

    it("passes the call's named arguments (pt.named) to init, the method and post", function()
      local B = Batch(target, { tag = "extra" })
      local seen_init
      function B:_init_default(...)
        seen_init = table.pack(...)
        return { { k = "entry", only_entry = 1 }, 7 }
      end
      B.act = pt.inbatch_parallel(B.opts, function(self, ...)
        local args = table.pack(...)
        local named = args[args.n]
        return { n = args.n, k = named.k, only_entry = named.only_entry, first = args[1] }
      end)
      local b = B.new({})
      b:act(5, pt.named { k = "call", tag = "from call" })
      assert.are.same({ 5, { k = "call", tag = "from call" } }, { seen_init[1], seen_init[2] })
      -- the call's named arguments override the entry's
      assert.are.same({ n = 2, k = "call", only_entry = 1, first = 5 }, b.results[1])
      assert.are.same({ n = 3, k = "call", first = 7 }, b.results[2])
      assert.are.same({ k = "call", tag = "from call" }, b.post_args[2])
    end)

    it("accepts init and post as functions", function()
      local post_got
      local act = pt.inbatch_parallel({
        target = target,
        init = function(self, n) return { n, n + 1 } end,
        post = function(self, results, n)
          post_got = { self = self, n = n }
          return results[1] + results[2], "second"
        end,
      }, function(self, x) return x * 10 end)
      local obj = {}
      local sum, second = act(obj, 4)
      assert.are.equal(90, sum)
      assert.are.equal("second", second)
      assert.are.equal(obj, post_got.self)
      assert.are.equal(4, post_got.n)
    end)

    it("captures failures as error values that post can inspect", function()
      local B = Batch(target)
      B.act = pt.inbatch_parallel(B.opts, function(self, item)
        if item == 2 then error("boom at " .. item) end
        return item
      end)
      local b = B.new({})
      b:act()
      assert.are.equal(1, b.results[1])
      assert.are.equal(3, b.results[3])
      local e = b.results[2]
      assert.are.equal(pt.ActionError, getmetatable(e))
      assert.matches("boom at 2", e.message, 1, true)
      assert.matches("stack traceback", e.traceback, 1, true)
      assert.are.equal(2, e.index)
      assert.is_true(pt.any_action_failed(b.results))
      assert.is_false(pt.any_action_failed({ 1, 2, n = 3 }))
    end)

    it("reports a table error object alike on every target, without partrain's frames", function()
      local B = Batch(target)
      B.act = pt.inbatch_parallel(B.opts, function(self, item)
        if item == 2 then error({ code = 7 }) end
        if item == 3 then error(setmetatable({}, { __tostring = function() return "custom text" end })) end
        return item
      end)
      local b = B.new({})
      b:act()
      assert.are.equal("(error object is a table value)", b.results[2].message)
      assert.are.equal("custom text", b.results[3].message)
      assert.matches("^stack traceback:\n", b.results[2].traceback)
      assert.is_nil(b.results[2].traceback:find("inbatch.lua", 1, true))
      if target == "async" then -- in the caller's own state: no worker to name
        assert.are.equal("ActionError: item 2 failed: (error object is a table value)", tostring(b.results[2]))
      else
        assert.matches("^ActionError: item 2 failed on worker %d: %(error object is a table value%)$", tostring(b.results[2]))
      end
    end)

    it("raises the first failure when there is no post, naming the item, with the traceback", function()
      local act = pt.inbatch_parallel({ target = target, init = function() return { 1, 2, 3 } end },
        function(self, item)
          if item >= 2 then error("bad item " .. item) end
          return item
        end)
      local ok, err = pcall(act, {})
      assert.is_false(ok)
      assert.matches("inbatch_parallel: item 2 of 3 failed", err, 1, true)
      assert.matches("bad item 2", err, 1, true)
      assert.matches("worker traceback:", err, 1, true)
    end)

    it("returns the results when there is no post and nothing failed", function()
      local act = pt.inbatch_parallel({ target = target, init = function() return { "a", "b" } end },
        function(self, s) return s:upper() end)
      local r = act({})
      assert.are.same({ "A", "B", n = 2 }, r)
    end)

    it("takes n_workers per call from pt.named and does not pass it on", function()
      local seen
      local act = pt.inbatch_parallel({ target = target, n_workers = 2,
        init = function(self, ...) seen = table.pack(...); return { 1, 2, 3 } end },
        function(self, x, ...) return select("#", ...) end)
      local r = act({}, pt.named { n_workers = 1 })
      assert.are.same({ 0, 0, 0, n = 3 }, r)
      assert.are.same({}, seen[1])
      assert.has_error(function() act({}, pt.named { n_workers = 0 }) end,
        "inbatch_parallel: the call's n_workers must be a positive integer, got 0")
      -- more workers than entries: the entries' count (it failed past the pool's 256 threads)
      assert.are.same({ 0, 0, 0, n = 3 }, act({}, pt.named { n_workers = 5000 }))
    end)
  end)
end

describe("inbatch_parallel threads target limits", function()
  it("names its limit of 256 workers in its own words", function()
    local act = pt.inbatch_parallel({ target = "threads", init = function()
      local t = {}
      for i = 1, 300 do t[i] = i end
      return t
    end }, function(self, x) return x end)
    local ok, err = pcall(act, {}, pt.named { n_workers = 300 })
    assert.is_false(ok)
    assert.matches("inbatch_parallel: the threads target runs at most 256 workers, got n_workers=300$", err)
    assert.is_nil(err:find("inbatch.lua", 1, true))
  end)

  it("caps a huge n_workers at the number of items as the other targets do", function()
    local act = pt.inbatch_parallel({ init = function() return {{1, 2}, {3, 4}} end },
      function(self, a, b) return a + b end)
    for _, n in ipairs({1 << 32, (1 << 32) + 1, math.maxinteger}) do
      assert.are.same({3, 7}, {table.unpack(act({}, pt.named { n_workers = n }), 1, 2)})
    end
  end)
end)

-- nils among the arguments reach the method where they stand, on every target (the threads
-- target once took #list, which stops at a nil)
describe("inbatch_parallel arguments with nils", function()
  for _, target in ipairs({"threads", "async", "process"}) do
    it(("keeps the arguments after a nil (%s)"):format(target), function()
      local show = function(self, item, a, b, c)
        return ("%s|%s|%s|%s|%s"):format(type(self), tostring(item), tostring(a), tostring(b), tostring(c))
      end
      local method = target == "process" and function(self) return function(...) return show(self, ...) end end
        or show
      local act = pt.inbatch_parallel({ target = target, init = function() return {1} end }, method)
      assert.are.equal("table|1|A|nil|C", act({}, "A", nil, "C")[1])
      assert.are.equal("nil|1|A|nil|C", act(nil, "A", nil, "C")[1])
      local count = pt.inbatch_parallel({ target = target, init = function()
        return {pt.args({n = 3, nil, nil, 5})}
      end }, target == "process" and function() return function(...) return select("#", ...) end end
        or function(self, ...) return select("#", ...) end)
      assert.are.equal(3, count({})[1])
    end)
  end
end)

describe("inbatch_parallel errors", function()
  local function m() end

  it("checks the decorator's options", function()
    assert.has_error(function() pt.inbatch_parallel("init", m) end,
      "inbatch_parallel: expected an options table {init=, post=, target=, ...}, got string")
    assert.has_error(function() pt.inbatch_parallel({}, m) end,
      "inbatch_parallel: opts.init is required (a method name or a function), got nil")
    assert.has_error(function() pt.inbatch_parallel({ init = "i", post = 3 }, m) end,
      "inbatch_parallel: opts.post must be a method name or a function, got number")
    assert.has_error(function() pt.inbatch_parallel({ init = "i", target = "gpu" }, m) end,
      "inbatch_parallel: unknown target 'gpu' (expected threads, native, async or process)")
    assert.has_error(function() pt.inbatch_parallel({ init = "i" }, "m") end,
      "inbatch_parallel: expected the method (a function) as the second argument, got string")
    assert.has_error(function() pt.inbatch_parallel({ init = "i", n_workers = 1.5 }, m) end,
      "inbatch_parallel: opts.n_workers must be a positive integer, got 1.5")
  end)

  it("accepts batchflow's target names nogil and mpc", function()
    assert.are.equal("function", type(pt.inbatch_parallel({ init = "i", target = "nogil" }, m)))
    assert.are.equal("function", type(pt.inbatch_parallel({ init = "i", target = "mpc" }, m)))
  end)

  it("names a missing init or post method", function()
    local act = pt.inbatch_parallel({ init = "_nope", target = "async" }, m)
    assert.has_error(function() act({}) end, "inbatch_parallel: init method '_nope' not found on the object")
    local act2 = pt.inbatch_parallel({ init = function() return { 1 } end, post = "_gone", target = "async" }, m)
    assert.has_error(function() act2({}) end, "inbatch_parallel: post method '_gone' not found on the object")
    -- said before any item runs
    local ran = 0
    local act3 = pt.inbatch_parallel({ init = function() return { 1, 2 } end, post = "_gone", target = "async" },
      function() ran = ran + 1 end)
    assert.has_error(function() act3({}) end, "inbatch_parallel: post method '_gone' not found on the object")
    assert.are.equal(0, ran)
  end)

  it("names itself and the method's own arguments for values that cannot be sent (threads)", function()
    local conn = coroutine.create(print)
    local act = pt.inbatch_parallel({ init = function() return { 1, 2 } end },
      function(self, i) local c = conn; return i end)
    local ok, err = pcall(act, {})
    assert.is_false(ok)
    assert.are.equal("inbatch_parallel: upvalue 'conn' (thread) of the closure cannot be sent to a worker", err)
    local act2 = pt.inbatch_parallel({ init = function() return { 1 } end }, function(self, i, x) return i end)
    ok, err = pcall(act2, { f = coroutine.create(print) })
    assert.is_false(ok)
    assert.matches("cannot send item 1: field 'f' %(thread%) cannot be sent to a worker %(in self%)$", err)
    ok, err = pcall(act2, {}, coroutine.create(print))
    assert.matches("cannot send item 1: argument 2 %(thread%) cannot be sent to a worker$", err) -- x
  end)

  it("requires init to return a list", function()
    local act = pt.inbatch_parallel({ init = function() return 3 end, target = "async" }, m)
    assert.has_error(function() act({}) end, "inbatch_parallel: init must return a list of entries, got number")
  end)

  it("refuses an entry that mixes list items and named keys", function()
    local act = pt.inbatch_parallel({ init = function() return { 1, { 1, k = 2 } } end, target = "async" }, m)
    assert.has_error(function() act({}) end,
      "inbatch_parallel: init entry 2 mixes list items and named keys; use pt.args(list, named)")
  end)

  it("checks pt.args, pt.named and any_action_failed", function()
    assert.has_error(function() pt.args(1) end, "args: positional arguments must be a list (table) or nil, got number")
    assert.has_error(function() pt.args({}, "k") end, "args: named arguments must be a table or nil, got string")
    assert.has_error(function() pt.named(1) end, "named: expected a table, got number")
    assert.has_error(function() pt.named { 1 } end, "named: keys must be strings, got a number key")
    assert.has_error(function() pt.any_action_failed(nil) end, "any_action_failed: expected a list of results, got nil")
  end)

  if not rawget(pt, "_pool_map") then
    it("says when the threads target has no pool", function()
      local act = pt.inbatch_parallel({ init = function() return { 1 } end }, m)
      assert.has_error(function() act({}) end,
        "inbatch_parallel: target 'threads' needs pt._pool_map (the worker pool is not built in)")
    end)
  end
end)

describe("inbatch_parallel (async)", function()
  it("interleaves waiting items: 5 sleeps of 0.2 s take about 0.2 s", function()
    local act = pt.inbatch_parallel({ target = "async", init = function() return { 1, 2, 3, 4, 5 } end },
      function(self, i)
        pt.async.sleep(0.2)
        return i
      end)
    local t0 = now()
    local r = act({})
    local dt = now() - t0
    assert.are.same({ 1, 2, 3, 4, 5, n = 5 }, r)
    assert.is_true(dt < 0.6, "took " .. dt .. " s")
  end)

  it("keeps init order whatever the completion order", function()
    local finished = {}
    local act = pt.inbatch_parallel({ target = "async", init = function() return { 0.15, 0.05, 0.1 } end },
      function(self, d)
        pt.async.sleep(d)
        finished[#finished + 1] = d
        return d
      end)
    assert.are.same({ 0.15, 0.05, 0.1, n = 3 }, act({}))
    assert.are.same({ 0.05, 0.1, 0.15 }, finished)
  end)

  it("bounds the coroutines in flight by n_workers", function()
    local inflight, peak = 0, 0
    local act = pt.inbatch_parallel({ target = "async", init = function() return { 1, 2, 3, 4 } end },
      function(self, i)
        inflight = inflight + 1
        peak = math.max(peak, inflight)
        pt.async.sleep(0.02)
        inflight = inflight - 1
        return i
      end)
    act({})
    assert.are.equal(4, peak)
    peak = 0
    act({}, pt.named { n_workers = 2 })
    assert.are.equal(2, peak)
  end)

  it("reads files concurrently and captures read errors as error values", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write("contents")
    f:close()
    local B = { files = { path, "/nonexistent/inbatch.txt" } }
    B.load = pt.inbatch_parallel({ target = "async", init = function(self) return self.files end,
        post = function(self, results) return results end },
      function(self, p) return pt.async.read_file(p) end)
    local r = B:load()
    assert.are.equal("contents", r[1])
    assert.matches("read_file: cannot open '/nonexistent/inbatch.txt': No such file or directory", r[2].message, 1, true)
    assert.is_true(pt.any_action_failed(r))
    os.remove(path)
  end)

  it("stops an item that computes without yielding on Ctrl-C, raising interrupted", function()
    local act = pt.inbatch_parallel({ target = "async", init = function() return { 1, 2 } end },
      function(self, i)
        if i == 2 then while true do io.open("/dev/null"):close() end end -- libc: TSan delivers there
        return i
      end)
    pt._par_test_sigint(0.2)
    local t0 = pt.clock()
    local ok, err = pcall(act, {})
    assert.is_false(ok)
    assert.are.equal("interrupted", err)
    assert.is_true(pt.clock() - t0 < 5)
    local again = pt.inbatch_parallel({ target = "async", init = function() return { 3 } end },
      function(self, i) return i end)
    assert.are.same({ 3 }, { again({})[1] })
  end)

  it("lets a method yield plainly to the others", function()
    local log = {}
    local act = pt.inbatch_parallel({ target = "async", init = function() return { "a", "b" } end },
      function(self, s)
        log[#log + 1] = s .. 1
        coroutine.yield()
        log[#log + 1] = s .. 2
        return s
      end)
    act({})
    assert.are.same({ "a1", "b1", "a2", "b2" }, log)
  end)
end)

describe("inbatch_parallel (native)", function()
  local lib
  setup(function() lib = pt.ffi.load(libpath) end)

  it("calls the returned C function per item with the entry's then the call's arguments", function()
    local B = {}
    B.__index = B
    function B:_init() -- one entry per output tensor; the call's (n, start) follow
      local e = {}
      for i, out in ipairs(self.outs) do e[i] = { out } end
      return e
    end
    function B:_post(results) return self end
    local got
    B.fill = pt.inbatch_parallel({ init = "_init", post = "_post", target = "native" }, function(self, ...)
      got = table.pack(...) -- called once, in the caller, with the call's arguments
      return lib:fn("iota_i64", "void(int64_t*, int64_t, int64_t)")
    end)
    local b = setmetatable({ outs = { pt.zeros(3, { dtype = "int64" }), pt.zeros(3, { dtype = "int64" }) } }, B)
    assert.are.equal(b, b:fill(3, 7))
    assert.are.same({ 3, 7, n = 2 }, got)
    assert.are.same({ 7, 8, 9 }, b.outs[1]:tolist())
    assert.are.same({ 7, 8, 9 }, b.outs[2]:tolist())
  end)

  it("passes tensors as data pointers (saxpy per row)", function()
    local rows = {}
    for i = 1, 4 do rows[i] = { 3, 2.0, pt.tensor({ i, i, i }), pt.tensor({ 1, 2, 3 }) } end
    local act = pt.inbatch_parallel({ target = "native", init = function() return rows end },
      function(self) return lib:fn("saxpy", "void(int, float, float*, float*)") end)
    local r = act({})
    assert.are.equal(4, r.n)
    for i = 1, 4 do assert.are.same({ 1 + 2 * i, 2 + 2 * i, 3 + 2 * i }, rows[i][4]:tolist()) end
    local ok, err = pcall(act, {}, 5)
    assert.is_false(ok)
    assert.matches("inbatch_parallel: item 1 of 4 failed: saxpy: expected 4 arguments, got 5", err, 1, true)
  end)

  it("returns the C function's values in init order", function()
    local act = pt.inbatch_parallel({ target = "native", init = function() return { { 1, 2 }, { 30, 40 }, { 5, 6 } } end },
      function(self) return lib:fn("add_i64", "int64_t(int64_t, int64_t)") end)
    assert.are.same({ 3, 70, 11, n = 3 }, act({}))
  end)

  it("runs items at the same time on C threads", function()
    local act = pt.inbatch_parallel({ target = "native", init = function() return { { 200, 1 }, { 200, 2 }, { 200, 3 }, { 200, 4 } } end },
      function(self) return lib:fn("sleep_ms", "int(int, int)") end)
    local t0 = now()
    local r = act({}, pt.named { n_workers = 4 })
    assert.are.same({ 1, 2, 3, 4, n = 4 }, r)
    assert.is_true(now() - t0 < 0.6)
    t0 = now()
    act({}, pt.named { n_workers = 1 })
    assert.is_true(now() - t0 >= 0.75)
  end)

  it("starts no more items after Ctrl-C and raises interrupted", function()
    local items = {}
    for i = 1, 40 do items[i] = { 50, i } end -- 2 s on one worker
    local act = pt.inbatch_parallel({ target = "native", init = function() return items end },
      function(self) return lib:fn("sleep_ms", "int(int, int)") end)
    pt._par_test_sigint(0.2)
    local t0 = now()
    local ok, err = pcall(act, {}, pt.named { n_workers = 1 })
    assert.is_false(ok)
    assert.matches("interrupted", err)
    assert.is_true(now() - t0 < 1.0)
    local again = pt.inbatch_parallel({ target = "native", init = function() return { { 1, 7 } } end },
      function(self) return lib:fn("sleep_ms", "int(int, int)") end)
    assert.are.same({ 7, n = 1 }, again({}))
  end)

  it("turns a dtype mismatch into that item's error value", function()
    local x = pt.tensor({ 1, 2 })
    local act = pt.inbatch_parallel({ target = "native",
        init = function() return { { 2, x, x }, { 2, x, pt.tensor({ 1, 2 }, { dtype = "float64" }) } } end,
        post = function(self, results) return results end },
      function(self) return lib:fn("sdot", "float(int, float*, float*)") end)
    local r = act({})
    assert.are.equal(5, r[1])
    assert.are.equal("sdot: argument 3 (float*) expects a float32 tensor, got float64", r[2].message)
    assert.are.equal(2, r[2].index)
  end)

  it("refuses named arguments and methods that return no C function", function()
    local act = pt.inbatch_parallel({ target = "native", init = function() return { { 1, 2 }, { x = 1 } } end,
        post = function(self, results) return results end },
      function(self) return lib:fn("add_i64", "int64_t(int64_t, int64_t)") end)
    local r = act({})
    assert.are.equal(3, r[1])
    assert.are.equal("add_i64: C functions take positional arguments only (item 2 has named arguments)", r[2].message)
    local bad = pt.inbatch_parallel({ target = "native", init = function() return { 1 } end },
      function(self) return function() end end)
    assert.has_error(function() bad({}) end,
      "inbatch_parallel: a native method must return a C function from pt.ffi (lib:fn), got function")
  end)
end)

describe("inbatch_parallel (process)", function()
  local function Images()
    local B = {}
    B.__index = B
    function B:_init(...) local e = {}
      for i = 1, #self.images do e[i] = { self.images[i], i } end
      return e end
    function B:_post(results, ...) self.out = results; self.post_n = select("#", ...); return self end
    return B
  end

  it("runs the returned function in worker processes and returns tensors and tables", function()
    local B = Images()
    B.normalize = pt.inbatch_parallel({ init = "_init", post = "_post", target = "process", scale = 2 },
      function(self, offset)
        return function(img, i, off)
          local t = img:float()
          local vals = t:tolist()
          for k = 1, #vals do vals[k] = vals[k] * 2 + off end
          return { index = i, t = pt.tensor(vals), pid_differs = true }
        end
      end)
    local b = setmetatable({ images = { pt.tensor({ 1, 2 }), pt.tensor({ 3, 4 }), pt.tensor({ 5, 6 }) } }, B)
    b:normalize(100, pt.named { n_workers = 2 })
    assert.are.equal(3, b.out.n)
    for i = 1, 3 do
      assert.are.equal(i, b.out[i].index)
      assert.are.same({ (2 * i - 1) * 2 + 100, 2 * i * 2 + 100 }, b.out[i].t:tolist())
    end
    assert.are.equal(2, b.post_n) -- the call's 100 and the named table
  end)

  it("turns a crashing native function into the item's error value and carries on", function()
    local crash = pt.ffi.load(libpath):fn("crash_if", "int(int)")
    local act = pt.inbatch_parallel({ target = "mpc", init = function() return { 0, 0, 1, 0 } end,
        post = function(self, results) return results end },
      function(self) return crash end)
    local r = act({}, pt.named { n_workers = 2 })
    assert.are.same({ 7, 7, 7 }, { r[1], r[2], r[4] })
    assert.are.equal("process worker for item 3 died with signal 11 (Segmentation fault)", r[3].message)
    assert.are.equal(3, r[3].index)
    assert.is_true(pt.any_action_failed(r))
    local plain = pt.inbatch_parallel({ target = "process", init = function() return { 0, 1 } end },
      function(self) return crash end)
    local ok, err = pcall(plain, {})
    assert.is_false(ok)
    assert.matches("item 2 of 2 failed", err, 1, true)
    assert.matches("died with signal 11 (Segmentation fault)", err, 1, true)
  end)

  it("captures Lua errors of workers with their traceback", function()
    local act = pt.inbatch_parallel({ target = "process", init = function() return { 1, 2 } end,
        post = function(self, results) return results end },
      function(self) return function(i) if i == 2 then error("worker failed") end return i end end)
    local r = act({})
    assert.are.equal(1, r[1])
    assert.matches("worker failed", r[2].message, 1, true)
    assert.matches("stack traceback", r[2].traceback, 1, true)
  end)

  it("requires the method to return a function", function()
    local act = pt.inbatch_parallel({ target = "process", init = function() return { 1 } end },
      function(self) return 42 end)
    assert.has_error(function() act({}) end,
      "inbatch_parallel: a process method must return a function to run in the worker processes, got number")
  end)
end)
