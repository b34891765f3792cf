--- partrain.runner: pt.Runner, easycore's OrderedRunner/UnorderedRunner on partrain's workers.
--
--   local runner = pt.Runner{devices = 3 or {"cpu", "cpu"}, ordered = true, cfg = {...},
--     producer_init = function(device, cfg) end,           -- once per producer, at start
--     producer_work = function(device, cfg, x) return y end, -- per item, on some producer
--     producer_end  = function(device, cfg) end,           -- once per producer, on close()
--     consumer_init = function(cfg) end,                   -- per call, in the caller
--     consumer_work = function(cfg, y) end,                -- per result
--     consumer_end  = function(cfg) return value end}      -- per call; its value is returned
--   local value = runner(list_or_iterator_function)
--   runner:close()
--
-- Every producer is a worker thread with its own Lua state and its own deep copy of cfg that
-- lives as long as the runner (producer_init may store things in it for producer_work). Each
-- call gives the consumer a fresh deep copy of cfg. ordered = true delivers results in input
-- order (sequence numbers; early arrivals are buffered), otherwise in completion order. At most
-- two items per producer are in flight (bounded queues); the input is read lazily, so an
-- iterator function may be endless as long as it eventually returns nil.
-- close() runs producer_end on every producer and stops the threads; it is idempotent and also
-- runs when the runner is garbage collected, closed with <close>, or the state closes. Calling
-- a closed runner raises. A failing producer raises its error (with the worker's traceback)
-- after the items in flight have finished; the runner stays usable.
local pt = require "partrain"

local M = {}

local IN_FLIGHT_PER_PRODUCER = 2
-- what the values sent to a producer are, for "Runner: upvalue 'co' (thread) of producer_work
-- cannot be sent to a worker" (pool:submit_as)
local SETUP_NAMES = {"the runner's id", "the device", "cfg", "producer_init", "producer_work",
  "producer_end", "the seed"}

-- worker side: this module is required inside each worker; producers live in its _producers
-- table by runner id (looked up through require, so the state survives even if these functions
-- ever reach a worker as copies rather than by name)
M._producers = {}
local function store() return require("partrain.runner")._producers end

function M._producer_setup(rid, device, cfg, init, work, fin, seed)
  -- random ops in the producer follow the caller's pt.manual_seed (one draw per runner)
  pt.manual_seed(seed)
  store()[rid] = {device = device, cfg = cfg, work = work, fin = fin}
  if init then init(device, cfg) end
  return true
end

local NIL = {} -- marks a nil result (resolved by path: the caller sees its own M._NIL)
M._NIL = NIL

function M._producer_work(rid, x)
  local p = store()[rid]
  if not p then error("Runner: producer state lost (was the runner closed?)", 0) end
  if not p.work then return x end
  local y = p.work(p.device, p.cfg, x)
  if y == nil then return NIL end
  return y
end

function M._producer_end(rid)
  local producers = store()
  local p = producers[rid]
  producers[rid] = nil
  if p and p.fin then p.fin(p.device, p.cfg) end
  return true
end

-- caller side

local function deepcopy(v, seen)
  if type(v) ~= "table" then return v end
  if seen[v] then return seen[v] end
  local c = {}
  seen[v] = c
  for k, x in next, v do c[deepcopy(k, seen)] = deepcopy(x, seen) end
  local mt = getmetatable(v)
  if type(mt) == "table" then setmetatable(c, mt) end
  return c
end
M._deepcopy = deepcopy

local function check_device(d, i)
  if type(d) ~= "string" then
    error(("Runner: device %d must be a string like \"cpu\" or \"cuda:0\" (got %s)"):format(i, type(d)), 4)
  end
  if d == "cpu" or d:match("^cpu:%d+$") then return d end
  if d == "cuda" or d:match("^cuda:%d+$") then
    local cuda = rawget(pt, "cuda")
    local ok = type(cuda) == "table" and type(cuda.is_available) == "function" and cuda.is_available()
    if not ok then
      error(("Runner: device '%s' is not available (partrain was built without a GPU backend or no GPU was found)"):format(d), 4)
    end
    return d
  end
  error(("Runner: invalid device '%s' (expected \"cpu\", \"cpu:N\" or \"cuda:N\")"):format(d), 4)
end

local FUNCS = {"producer_init", "producer_work", "producer_end", "consumer_init", "consumer_work", "consumer_end"}

local Runner = {}
Runner.__index = Runner
Runner.__name = "Runner"

local runner_count = 0

-- stop everything in flight, ignoring results (after a failure or Ctrl-C: waiting for each
-- result kept an interrupted call waiting for the longest producer_work)
local function drain(pool)
  if not pool:closed() and pool:pending() > 0 then pool:cancel() end
end

local function fail_message(what, rec, wk, msg, tb)
  local s = ("Runner: %s failed on producer %d (%s): %s"):format(what, wk, rec.devices[wk], tostring(msg))
  -- the worker's traceback without this module's own frames (the user's functions are called
  -- from M._producer_work and friends)
  if tb then tb = tb:gsub("\n[^\n]*partrain/runner%.lua:[^\n]*", "") end
  if tb and tb ~= "" then s = s .. "\n" .. tb end
  return s
end

function M.new(opts)
  if type(opts) ~= "table" then error("Runner: expected a table of options", 3) end
  local devices = opts.devices
  if devices == nil then devices = 1 end
  local list = {}
  if math.type(devices) == "integer" then
    if devices < 1 then error("Runner: devices must be at least 1 (got " .. devices .. ")", 3) end
    for i = 1, devices do list[i] = "cpu" end
  elseif type(devices) == "table" then
    if #devices == 0 then error("Runner: the list of devices is empty", 3) end
    for i, d in ipairs(devices) do list[i] = check_device(d, i) end
  else
    error("Runner: devices must be an integer or a list of device names (got " .. type(devices) .. ")", 3)
  end
  for _, f in ipairs(FUNCS) do
    if opts[f] ~= nil and type(opts[f]) ~= "function" then
      error(("Runner: %s must be a function (got %s)"):format(f, type(opts[f])), 3)
    end
  end
  if opts.cfg ~= nil and type(opts.cfg) ~= "table" then
    error("Runner: cfg must be a table (got " .. type(opts.cfg) .. ")", 3)
  end
  runner_count = runner_count + 1
  local self = {
    devices = list,
    ordered = opts.ordered and true or false,
    cfg = opts.cfg or {},
    consumer_init = opts.consumer_init,
    consumer_work = opts.consumer_work,
    consumer_end = opts.consumer_end,
    closed = false,
    id = ("%s#%d"):format(tostring(pt._pool_map):match("0x%x+") or "r", runner_count),
  }
  local pool = pt._Pool(#list)
  self.pool = pool
  -- the metatable (with __gc) after the pool: Lua runs finalizers in the reverse order of
  -- marking, so a collected runner (or one alive when the state closes) runs close(), and its
  -- producer_end, before the pool's own finalizer stops the threads
  setmetatable(self, Runner)
  local seed = pt._draw_seed()
  for w, d in ipairs(list) do
    local sent, e = pcall(pool.submit_as, pool, "Runner", SETUP_NAMES, w, M._producer_setup, self.id,
      d, opts.cfg or {}, opts.producer_init, opts.producer_work, opts.producer_end, seed + w)
    if not sent then
      drain(pool)
      self.closed = true
      pool:close()
      error(e, 3)
    end
  end
  local err, started = nil, {}
  for _ = 1, #list do
    local _, wk, ok, msg, tb = pool:next()
    if ok then started[#started + 1] = wk end
    if not ok and not err then err = fail_message("producer_init", self, wk, msg, tb) end
  end
  if err then
    -- the producers whose init ran still get their producer_end (what it opened is closed)
    for _, w in ipairs(started) do pcall(pool.submit, pool, w, M._producer_end, self.id) end
    while pool:pending() > 0 do pool:next() end
    self.closed = true
    pool:close()
    error(err, 3)
  end
  return self
end


local function run(self, data)
  local nextitem
  if type(data) == "table" then
    local i = 0
    nextitem = function()
      i = i + 1
      return data[i]
    end
  elseif type(data) == "function" then
    nextitem = data
  else
    error("Runner: expected a list or an iterator function (got " .. type(data) .. ")", 3)
  end
  local pool, n = self.pool, #self.devices
  local cfg = deepcopy(self.cfg, {})
  if self.consumer_init then self.consumer_init(cfg) end
  local cwork = self.consumer_work
  local inflight, seq_of, buffer = {}, {}, {}
  for w = 1, n do inflight[w] = 0 end
  local seq, next_seq, exhausted, nin = 0, 1, false, 0
  local item_names = {"the runner's id", "item"}
  local function deliver(y)
    if y == NIL then y = nil end
    if cwork then cwork(cfg, y) end
  end
  while true do
    while not exhausted do
      local best
      for w = 1, n do
        if inflight[w] < IN_FLIGHT_PER_PRODUCER and (not best or inflight[w] < inflight[best]) then best = w end
      end
      if not best then break end
      local x = nextitem()
      if x == nil then
        exhausted = true
        break
      end
      seq = seq + 1
      item_names[2] = ("item %d"):format(seq)
      local sent, id = pcall(pool.submit_as, pool, "Runner", item_names, best, M._producer_work, self.id, x)
      if not sent then
        drain(pool)
        error(id, 0)
      end
      seq_of[id] = seq
      inflight[best] = inflight[best] + 1
      nin = nin + 1
    end
    if nin == 0 then break end
    local id, wk, ok, y, tb = pool:next()
    inflight[wk] = inflight[wk] - 1
    nin = nin - 1
    local s = seq_of[id]
    seq_of[id] = nil
    if not ok then
      drain(pool)
      error(fail_message(("producer_work (item %d)"):format(s), self, wk, y, tb), 0)
    end
    if self.ordered then
      buffer[s] = y
      while buffer[next_seq] ~= nil do
        local v = buffer[next_seq]
        buffer[next_seq] = nil
        next_seq = next_seq + 1
        deliver(v)
      end
    else
      deliver(y)
    end
  end
  if self.consumer_end then return self.consumer_end(cfg) end
  return nil
end

local BUSY = "a call is running (called from its own consumer functions, or suspended in a " ..
  "coroutine)"

function Runner:__call(data)
  if self.closed then error("Runner: the runner is closed", 2) end
  -- one call at a time: a second one would take the first one's results off the pool
  if self.running then error("Runner: " .. BUSY .. ": a runner runs one call at a time", 2) end
  if type(data) ~= "table" and type(data) ~= "function" then
    error("Runner: expected a list or an iterator function (got " .. type(data) .. ")", 2)
  end
  local pool = self.pool
  self.running = true
  local res = table.pack(pcall(run, self, data))
  self.running = false
  if not res[1] then
    drain(pool)
    error(res[2], 0)
  end
  return table.unpack(res, 2, res.n)
end

-- close(), forced from __gc and __close: a call still running (suspended for good) has its
-- items stopped first, so that producer_end's replies are the only ones collected
local function close_runner(self, force, level)
  if self.closed then return end
  if self.running and not force then error("Runner: close: " .. BUSY, level) end
  self.closed = true
  local pool = self.pool
  if pool == nil or pool:closed() then return end
  drain(pool)
  local err
  local ok, e = pcall(function()
    for w = 1, #self.devices do pool:submit(w, M._producer_end, self.id) end
    for _ = 1, #self.devices do
      local _, wk, fine, msg, tb = pool:next()
      if not fine and not err then err = fail_message("producer_end", self, wk, msg, tb) end
    end
  end)
  pool:close()
  if not ok then error(e, level) end
  if err then error(err, level) end
end

--- runner:close(): producer_end on every producer, then the threads stop. Idempotent.
function Runner:close() close_runner(self, false, 3) end

function Runner:is_closed() return self.closed end

Runner.__close = function(self) close_runner(self, true, 3) end
Runner.__gc = function(self) pcall(close_runner, self, true, 3) end
Runner.__tostring = function(self)
  return ("Runner(%d producers on %s, %s%s)"):format(#self.devices, table.concat(self.devices, ","),
    self.ordered and "ordered" or "unordered", self.closed and ", closed" or "")
end

M.Runner = Runner

return M
