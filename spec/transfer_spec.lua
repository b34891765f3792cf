-- Values crossing between the caller's state and a worker's (host/transfer.c), exercised
-- through pt._pool_map: arguments go to a worker, results come back.
local pt = require "partrain"

local function on_worker(fn, ...)
  local r = pt._pool_map(fn, {table.pack(...)}, {n_workers = 1})[1]
  if getmetatable(r) == pt.ActionError then error(r.message .. "\n" .. r.traceback, 2) end
  return r
end

describe("transfer of plain values", function()
  it("returns several plain results and tensors, a tensor returned twice as one object", function()
    local pool = pt._Pool(1)
    local t = pt.tensor({1, 2})
    pool:submit(1, function(x) return x, 7, 2.5, "s\0", nil, true, x * 2 end, t)
    local r = table.pack(pool:next())
    assert.is_true(r[3])
    assert.are.equal(t, r[4])       -- the same tensor object, by reference
    assert.are.same({7, 2.5, "s\0", nil, true}, {r[5], r[6], r[7], r[8], r[9]})
    assert.are.equal("float", math.type(r[6]))
    assert.are.same({2, 4}, r[10]:tolist())
    pool:submit(1, function(x) return x, x end, t)
    r = table.pack(pool:next())
    assert.is_true(rawequal(r[4], r[5])) -- one object on the way back too
    pool:close()
  end)

  it("keeps numbers (integer or float), strings, booleans and nil", function()
    local r = on_worker(function(i, f, s, t, n, b)
      return {math.type(i), math.type(f), s, #s, t, n == nil, b}
    end, 3, 3.0, "a\0b", true, nil, false)
    assert.are.same({"integer", "float", "a\0b", 3, true, true, false}, r)
  end)

  it("keeps cycles and shared references, both ways", function()
    local shared = {v = 1}
    local t = {a = shared, b = shared}
    t.self = t
    local r = on_worker(function(x)
      return {cycle = x.self == x, same = x.a == x.b, back = x}
    end, t)
    assert.is_true(r.cycle)
    assert.is_true(r.same)
    assert.are.equal(r.back, r.back.self)
    assert.are.equal(r.back.a, r.back.b)
    assert.are_not.equal(t, r.back) -- a copy
  end)

  it("keeps shared references among many objects (past the encoder's small table)", function()
    local objs, refs = {}, {}
    for i = 1, 40 do objs[i] = {i = i, t = pt.tensor(i)} end
    for i = 1, 40 do refs[i] = objs[(i * 7) % 40 + 1] end -- every object again, out of order
    local r = on_worker(function(o, rf)
      local ok = true
      for i = 1, 40 do
        local want = o[(i * 7) % 40 + 1]
        ok = ok and rf[i] == want and rf[i].t == want.t and rf[i].t:item() == want.i
      end
      return ok and o[1] ~= o[2]
    end, objs, refs)
    assert.is_true(r)
  end)

  it("copies tables deeply (the worker's changes stay there)", function()
    local t = {inner = {x = 1}}
    on_worker(function(x) x.inner.x = 99 end, t)
    assert.are.equal(1, t.inner.x)
  end)
end)

-- a class defined in this script (not a module): copied with its methods
local Point = {}
Point.__index = Point
function Point.new(x, y) return setmetatable({x = x, y = y}, Point) end
function Point:norm2() return self.x * self.x + self.y * self.y end

describe("transfer of classes and modules", function()
  it("preserves metatables of classes defined in the script", function()
    local r = on_worker(function(p, q)
      return {p:norm2(), getmetatable(p) == getmetatable(q)}
    end, Point.new(3, 4), Point.new(1, 1))
    assert.are.same({25, true}, r)
  end)

  it("gives the caller its own class back: instances made in a worker, and ones sent there", function()
    local Base = {}
    Base.__index = Base
    function Base:kind() return "base" end
    local Derived = setmetatable({}, {__index = Base})
    Derived.__index = Derived
    function Derived.new(v) return setmetatable({v = v}, Derived) end
    local pool = pt._Pool(2)
    for w = 1, 2 do pool:submit(w, function(i) return Derived.new(i), Derived end, w) end
    for _ = 1, 2 do
      local r = table.pack(pool:next())
      assert.is_true(r[3])
      local obj, cls = r[4], r[5]
      assert.are.equal(Derived, getmetatable(obj))
      assert.are.equal(Derived, cls)
      assert.are.equal(Base, getmetatable(getmetatable(obj)).__index) -- the whole chain
      assert.are.equal("base", obj:kind())
    end
    -- sent there and back
    pool:submit(1, function(p) p.v = p.v + 1; return p end, Derived.new(41))
    local r = table.pack(pool:next())
    assert.are.equal(Derived, getmetatable(r[4]))
    assert.are.equal(42, r[4].v)
    -- a method added after the workers got the class is there on the next call, and the
    -- worker's copy is one table (methods see their own class)
    function Derived:double() return 2 * self.v end
    pool:submit(1, function(p) return p:double(), getmetatable(p).__index == getmetatable(p) end, Derived.new(5))
    r = table.pack(pool:next())
    assert.are.same({10, true}, {r[4], r[5]})
    -- a class passed as an argument, call after call: instances its constructor makes in the
    -- worker come back as the caller's class every time, with the methods added in between
    for i = 1, 3 do
      pool:submit(1, function(P) return P.new(i), P end, Derived)
      r = table.pack(pool:next())
      assert.is_true(r[3], r[4])
      assert.are.equal(Derived, getmetatable(r[4]))
      assert.are.equal(Derived, r[5])
      assert.are.equal(2 * i, r[4]:double())
      if i == 2 then function Derived:triple() return 3 * self.v end end
      if i == 3 then assert.are.equal(9, r[4]:triple()) end
    end
    -- the worker's changes to its copy of a class stay there
    pool:submit(1, function() Derived.tag = "worker"; return Derived.new(0) end)
    r = table.pack(pool:next())
    assert.are.equal(Derived, getmetatable(r[4]))
    assert.is_nil(Derived.tag)
    pool:close()
  end)

  it("brings a class a worker made back as a copy that works, one per result", function()
    local pool = pt._Pool(1)
    pool:submit(1, function()
      WorkerClass = WorkerClass or {__index = {hello = function() return "hi" end}}
      return setmetatable({}, WorkerClass)
    end)
    local a = table.pack(pool:next())[4]
    pool:submit(1, function() return setmetatable({}, WorkerClass), WorkerClass end)
    local r = table.pack(pool:next())
    assert.are.equal("hi", a:hello())
    assert.are.equal("hi", r[4]:hello())
    assert.are.equal(r[5], getmetatable(r[4])) -- within one result, one table
    pool:close()
  end)

  it("resolves module tables and C functions by name in the worker", function()
    local r = on_worker(function(m, floor, zeros, nn_linear)
      return {m == math, floor(2.5), zeros(2):size(1), nn_linear == require("partrain.nn").Linear}
    end, math, math.floor, pt.zeros, pt.nn.Linear)
    assert.are.same({true, 2, 2, true}, r)
  end)

  it("maps module classes to the worker's own and back to the caller's", function()
    local lin = pt.nn.Linear(3, 2)
    local r = on_worker(function(m)
      return {cls = getmetatable(m) == require("partrain.nn").Linear, out = m(pt.ones(1, 3)):size(), m = m}
    end, lin)
    assert.is_true(r.cls)
    assert.are.same({1, 2}, r.out)
    -- back home it is the caller's class as package.loaded holds it (busted insulates spec
    -- files, so pt.nn may be an older copy of partrain.nn than require gives)
    assert.are.equal(require("partrain.nn").Linear, getmetatable(r.m))
  end)
end)

GLOBAL_SCALE = 7
function global_helper(x) return x * GLOBAL_SCALE end
SPEC_ONLY_READ_BY_HELPER = {scale = 3}
function spec_global_reader(x) return x * SPEC_ONLY_READ_BY_HELPER.scale end
function spec_global_unsendable() return SPEC_UNSENDABLE end

describe("transfer of functions", function()
  it("sends upvalues, keeping shared upvalues shared", function()
    local count = 10
    local function inc() count = count + 1 end
    local function get() return count end
    local r = on_worker(function(i, g)
      i()
      i()
      return g()
    end, inc, get)
    assert.are.equal(12, r)
    assert.are.equal(10, count) -- the caller's upvalue is untouched
  end)

  it("sends the globals a closure reads, through nested functions", function()
    local r = on_worker(function(x) return global_helper(x) + GLOBAL_SCALE end, 2)
    assert.are.equal(21, r)
  end)

  it("sends the globals read by a global function the closure calls, and only through it", function()
    -- both functions' _ENV is the chunk's one upvalue: the second function's own reads count
    local r = on_worker(function(x) return spec_global_reader(x) end, 2)
    assert.are.equal(2 * SPEC_ONLY_READ_BY_HELPER.scale, r)
    SPEC_UNSENDABLE = coroutine.create(function() end)
    local ok, e = pcall(on_worker, function() return spec_global_unsendable() end)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("global 'SPEC_UNSENDABLE' (thread) cannot be sent to a worker", 1, true))
    SPEC_UNSENDABLE = nil
  end)

  it("supports recursive local functions", function()
    local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
    assert.are.equal(55, on_worker(function(n) return fib(n) end, 10))
  end)

  it("returns closures to the caller", function()
    local f = on_worker(function(k) return function(x) return x + k end end, 5)
    assert.are.equal(8, f(3))
  end)
end)

describe("transfer of tensors", function()
  it("passes tensors by reference: writes in a worker are visible to the caller", function()
    local t = pt.zeros(4)
    local r = on_worker(function(x)
      x[2] = 5
      return x
    end, t)
    assert.are.equal(5, t[2])
    assert.is_true(r:is_same_storage(t))
  end)

  it("brings tensors made in a worker home", function()
    local r = on_worker(function() return pt.arange(3) * 2 end)
    assert.are.same({0, 2, 4}, r:tolist())
  end)

  it("keeps a tensor used twice as one object (tables keyed by tensors work)", function()
    local t = pt.ones(2)
    local r = on_worker(function(list, map) return map[list[1]] end, {t}, {[t] = "found"})
    assert.are.equal("found", r)
  end)
end)

describe("values that cannot cross", function()
  it("names an upvalue", function()
    local co = coroutine.create(print)
    assert.has_error(function() on_worker(function() return co end) end,
      "_pool_map: upvalue 'co' (thread) of the closure cannot be sent to a worker")
  end)

  it("names a nested field", function()
    local x = {inner = {co = coroutine.create(print)}}
    assert.has_error(function() on_worker(function() return x end) end,
      "_pool_map: field 'x.inner.co' (thread) cannot be sent to a worker (in upvalue 'x' of the closure)")
    local y = {[3] = {[-120] = {[0.5] = {coroutine.create(print)}}}}
    assert.has_error(function() on_worker(function() return y end) end,
      "_pool_map: field 'y[3][-120][0.5][1]' (thread) cannot be sent to a worker (in upvalue 'y' of the closure)")
  end)

  it("names a foreign userdata and a closed tensor", function()
    local f = io.tmpfile()
    assert.has_error(function() on_worker(function() return f end) end,
      "_pool_map: upvalue 'f' (userdata FILE*) of the closure cannot be sent to a worker")
    f:close()
    local t = pt.zeros(1)
    local function use() return t end
    do local c <close> = t end
    assert.has_error(function() on_worker(use) end,
      "_pool_map: upvalue 't' (userdata Tensor) of the closure cannot be sent to a worker (the tensor was closed)")
  end)

  it("names an upvalue of a function inside a table", function()
    local conn = coroutine.create(print)
    local obj = {m = function() return conn end}
    assert.has_error(function() on_worker(function() return obj end) end,
      "_pool_map: upvalue 'conn' (thread) of function 'obj.m' cannot be sent to a worker")
  end)

  it("names a C function that no module holds", function()
    local it = string.gmatch("a", "a")
    assert.has_error(function() on_worker(function() return it end) end,
      "_pool_map: upvalue 'it' (C function) of the closure cannot be sent to a worker (only C functions of loaded modules can)")
  end)
end)

describe("a function reachable from several modules", function()
  it("is sent by the path a fresh worker resolves, every run (shortest, then first in byte order)", function()
    -- zz_shared_holder's table gets f only when aa_shared_owner loads: the path through the holder
    -- ('zz_shared_holder.utils.f') fails in a worker that has not loaded the owner; the owner's
    -- ('aa_shared_owner.utils.f') always resolves. package.loaded's order changes from run to run,
    -- so before the rule a worker got either path.
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local function write(name, text)
      local f = assert(io.open(dir .. "/" .. name .. ".lua", "w"))
      f:write(text)
      f:close()
    end
    write("zz_shared_holder", "return {utils = {}}\n")
    write("aa_shared_owner", "local h = require 'zz_shared_holder'\n"
      .. "h.utils.f = function() return 42 end\nreturn {utils = h.utils}\n")
    local old = package.path
    package.path = dir .. "/?.lua;" .. package.path
    local ok, err = pcall(function()
      local owner = require "aa_shared_owner"
      for _ = 1, 3 do
        local pool = pt._Pool(1) -- a fresh worker each time: nothing loaded there yet
        pool:submit(1, function(g) return g() end, owner.utils.f)
        local r = table.pack(pool:next())
        pool:close()
        assert.is_true(r[3], tostring(r[4]))
        assert.are.equal(42, r[4])
      end
    end)
    package.path = old
    package.loaded.aa_shared_owner, package.loaded.zz_shared_holder = nil, nil
    os.execute("rm -rf " .. dir)
    assert(ok, err)
  end)
end)
