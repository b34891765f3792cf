-- pt.async: awaitable operations done on C helper threads, and their scheduler.
local pt = require "partrain"

local function now()
  -- wall clock: os.clock() counts CPU time, which a sleeping program does not use
  local f = assert(io.open("/proc/uptime"))
  local t = f:read("n")
  f:close()
  return t
end

local function tmpfile(contents)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(contents)
  f:close()
  return path
end

describe("pt.async", function()
  it("blocks outside a scheduler", function()
    local t0 = now()
    assert.are.equal(0, select("#", pt.async.sleep(0.05)))
    assert.is_true(now() - t0 >= 0.04)
    local path = tmpfile("hello\0world")
    assert.are.equal("hello\0world", pt.async.read_file(path))
    os.remove(path)
  end)

  it("reads large files whole", function()
    local big = string.rep("0123456789abcdef", 20000)
    local path = tmpfile(big)
    assert.are.equal(big, pt.async.read_file(path))
    os.remove(path)
  end)

  it("interleaves coroutines attached to a scheduler", function()
    local sched = pt.async.scheduler()
    local order = {}
    local tasks = {}
    for i, d in ipairs { 0.15, 0.05, 0.1 } do
      local co = coroutine.create(function()
        pt.async.sleep(d)
        order[#order + 1] = i
        return i
      end)
      sched:attach(co)
      local ok, op = coroutine.resume(co)
      assert.is_true(ok)
      assert.is_true(pt.async.is_operation(op))
      tasks[i] = { co = co, op = op }
    end
    local t0 = now()
    local left = 3
    while left > 0 do
      sched:wait(1)
      for _, t in ipairs(tasks) do
        if t.op and t.op:done() then
          t.op = nil
          assert.is_true(coroutine.resume(t.co))
          assert.are.equal("dead", coroutine.status(t.co))
          left = left - 1
        end
      end
    end
    assert.are.same({ 2, 3, 1 }, order)
    assert.is_true(now() - t0 < 0.45)
  end)

  it("resumes a coroutine with the file contents", function()
    local path = tmpfile("abc")
    local sched = pt.async.scheduler()
    local co = coroutine.create(function() return pt.async.read_file(path) end)
    sched:attach(co)
    local _, op = coroutine.resume(co)
    while not op:done() do sched:wait(0.5) end
    local ok, data = coroutine.resume(co)
    assert.is_true(ok)
    assert.are.equal("abc", data)
    os.remove(path)
  end)

  it("a coroutine resumed early waits for its operation", function()
    local sched = pt.async.scheduler()
    local co = coroutine.create(function() pt.async.sleep(0.05); return "done" end)
    sched:attach(co)
    local t0 = now()
    coroutine.resume(co)
    local ok, v = coroutine.resume(co)
    assert.is_true(ok)
    assert.are.equal("done", v)
    assert.is_true(now() - t0 >= 0.04)
  end)

  it("wait returns 0 after its timeout when nothing completes", function()
    local sched = pt.async.scheduler()
    assert.are.equal(0, sched:wait(0.01))
  end)

  describe("errors", function()
    it("names a file that cannot be read", function()
      assert.has_error(function() pt.async.read_file("/nonexistent/file.txt") end,
        "read_file: cannot open '/nonexistent/file.txt': No such file or directory")
    end)

    it("raises the read error in the waiting coroutine", function()
      local sched = pt.async.scheduler()
      local co = coroutine.create(function() return pt.async.read_file("/nonexistent/x") end)
      sched:attach(co)
      local _, op = coroutine.resume(co)
      while not op:done() do sched:wait(0.5) end
      local ok, err = coroutine.resume(co)
      assert.is_false(ok)
      assert.matches("read_file: cannot open '/nonexistent/x': No such file or directory", err, 1, true)
    end)

    it("checks sleep's argument", function()
      assert.has_error(function() pt.async.sleep(-1) end,
        "async.sleep: seconds must be in [0, 1e6], got -1.0")
      local ok, err = pcall(pt.async.sleep, 0 / 0)
      assert.is_false(ok)
      assert.matches("async.sleep: seconds must be in [0, 1e6], got", err, 1, true)
      ok, err = pcall(pt.async.sleep, "x")
      assert.is_false(ok)
      assert.matches("number expected, got string", err)
    end)
  end)
end)
