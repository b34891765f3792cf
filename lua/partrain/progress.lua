-- partrain.progress: a per-epoch progress bar on a TTY (redrawn in place with \r: step/total,
-- running loss, samples/s, ETA), plain lines every few seconds when stdout is not a TTY, and
-- an optional JSON-lines metrics log.
--
-- DataHandler:batches() uses it automatically (progress = nil means "auto": a bar on a TTY,
-- a line every `interval` seconds otherwise). Switch it off per handler with
-- {progress = false}, for the whole state with require("partrain.progress").enabled = false,
-- or for a process with the environment variable PARTRAIN_PROGRESS=0.
local pt = require "partrain"

local M = {enabled = true, interval = 10, width = 24}

local Bar = {}
Bar.__index = Bar

local function fmt_time(s)
  if s ~= s or s == math.huge or s < 0 then return "?" end
  s = math.floor(s + 0.5)
  if s >= 3600 then return ("%d:%02d:%02d"):format(s // 3600, s % 3600 // 60, s % 60) end
  return ("%d:%02d"):format(s // 60, s % 60)
end

local function fmt_rate(r)
  if r >= 1e6 then return ("%.1fM"):format(r / 1e6) end
  if r >= 1e3 then return ("%.1fk"):format(r / 1e3) end
  return ("%.0f"):format(r)
end

local function to_number(v)
  if type(v) == "number" then return v end
  if pt.is_tensor(v) then return v:item() end
  return nil
end

--- progress.new{total = steps, desc = "epoch 1", mode = "tty"|"plain"|"none", stream = io.stdout,
--               interval = seconds between plain lines, every = steps between plain lines,
--               log = "metrics.jsonl", log_every = steps, epoch = n, unit = "samples"}
function M.new(opts)
  opts = opts or {}
  local mode = opts.mode
  if mode == nil then mode = pt._isatty(1) and "tty" or "plain" end
  if mode ~= "tty" and mode ~= "plain" and mode ~= "none" then
    error("progress: mode must be \"tty\", \"plain\" or \"none\"", 2)
  end
  local self = setmetatable({
    total = opts.total, desc = opts.desc or "", mode = mode, stream = opts.stream or io.stdout,
    interval = opts.interval or M.interval, every = opts.every, epoch = opts.epoch,
    log_every = opts.log_every, quiet_end = opts.quiet_end,
    start = pt._data_now(), last_draw = -math.huge, lines = 0,
    steps = 0, samples = 0, sums = {}, counts = {}, order = {}, unit = opts.unit or "samples",
  }, Bar)
  self.last_draw = self.start
  if opts.log then
    local f, err = io.open(opts.log, "a")
    if not f then error("progress: cannot open the metrics log: " .. tostring(err), 2) end
    self.log = f
  end
  return self
end

function Bar:line()
  local now = pt._data_now()
  local el = now - self.start
  local parts = {}
  if self.desc ~= "" then parts[#parts + 1] = self.desc end
  if self.total and self.total > 0 then
    if self.mode == "tty" then
      local w = M.width
      local fill = math.floor(w * self.steps / self.total)
      local bar = string.rep("=", fill) .. (fill < w and ">" or "") .. string.rep(" ", math.max(0, w - fill - 1))
      parts[#parts + 1] = "[" .. bar .. "]"
    end
    parts[#parts + 1] = ("%d/%d"):format(self.steps, self.total)
  else
    parts[#parts + 1] = tostring(self.steps)
  end
  for _, k in ipairs(self.order) do
    parts[#parts + 1] = ("%s %.4f"):format(k, self.sums[k] / self.counts[k])
  end
  if el > 0 then parts[#parts + 1] = fmt_rate(self.samples / el) .. " " .. self.unit .. "/s" end
  if self.total and self.steps < self.total and self.steps > 0 then
    parts[#parts + 1] = "ETA " .. fmt_time(el / self.steps * (self.total - self.steps))
  else
    parts[#parts + 1] = fmt_time(el)
  end
  return table.concat(parts, "  ")
end

function Bar:draw()
  if self.mode == "tty" then
    self.stream:write("\r", self:line(), "\27[K")
    self.stream:flush()
  elseif self.mode == "plain" then
    self.stream:write(self:line(), "\n")
    self.stream:flush()
    self.lines = self.lines + 1
  end
  self.last_draw = pt._data_now()
end

--- bar:step(samples): one more step of `samples` samples.
function Bar:step(samples)
  self.steps = self.steps + 1
  self.samples = self.samples + (samples or 1)
  if self.mode == "none" then return end
  if self.mode == "plain" and self.every then
    if self.steps % self.every == 0 then self:draw() end
    return
  end
  local now = pt._data_now()
  local gap = self.mode == "tty" and 0.1 or self.interval
  if now - self.last_draw >= gap then self:draw() end
end

local json = require "partrain.json"

-- a log record as JSON: one-element tensors as their numbers (a loss, an accuracy); NaN and
-- +-inf as Python's json writes them, so a diverging run is logged, not stopped
local function scalars(v, path, depth)
  if pt.is_tensor(v) then
    if v:numel() ~= 1 then
      error(("log: '%s' is a tensor of %d elements (log numbers or one-element tensors)")
        :format(path, v:numel()), 0)
    end
    return v:item()
  end
  if type(v) ~= "table" or depth > 32 then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = scalars(x, path == "" and tostring(k) or path .. "." .. tostring(k), depth + 1) end
  return out
end

local function log_line(record)
  return json.encode(scalars(record, "", 0), "log")
end

local function write_log(f, record)
  f:write(log_line(record), "\n")
end

--- bar:report(loss) or bar:report{loss = v, acc = w}: running means shown on the bar.
function Bar:report(values)
  if type(values) ~= "table" or pt.is_tensor(values) then values = {loss = values} end
  local rec
  if self.log and self.log_every and self.steps % self.log_every == 0 then
    rec = {event = "step", epoch = self.epoch, step = self.steps, time = pt._data_now() - self.start}
  end
  for k, v in pairs(values) do
    local x = to_number(v)
    if x == nil then error(("report: value of '%s' is a %s, not a number"):format(k, type(v)), 3) end
    if not self.sums[k] then
      self.sums[k], self.counts[k] = 0, 0
      self.order[#self.order + 1] = k
      table.sort(self.order)
    end
    self.sums[k] = self.sums[k] + x
    self.counts[k] = self.counts[k] + 1
    if rec then rec[k] = x end
  end
  if rec then write_log(self.log, rec) end
end

--- bar:means() -> {name = running mean}
function Bar:means()
  local m = {}
  for k, s in pairs(self.sums) do m[k] = s / self.counts[k] end
  return m
end

--- bar:close([interrupted]): final line (a newline after the TTY bar) and the epoch's log record.
function Bar:close(interrupted)
  if self.closed then return end
  self.closed = true
  local el = pt._data_now() - self.start
  if self.mode == "tty" then
    self:draw()
    self.stream:write(interrupted and "  (interrupted)\n" or "\n")
    self.stream:flush()
  elseif self.mode == "plain" and (not self.quiet_end or self.lines > 0 or el >= self.interval) then
    self.stream:write(self:line(), interrupted and "  (interrupted)\n" or "\n")
    self.stream:flush()
  end
  if self.log then
    local rec = {event = "epoch", epoch = self.epoch, steps = self.steps, samples = self.samples,
                 seconds = el, samples_per_s = el > 0 and self.samples / el or 0,
                 interrupted = interrupted or nil}
    for k, v in pairs(self:means()) do rec[k] = v end
    write_log(self.log, rec)
    self.log:close()
    self.log = nil
  end
end

--- The bar of one DataHandler epoch, or nil when there is nothing to show or log.
-- setting: false (off), true (on), a string (on, used as the description), nil (auto).
function M.for_epoch(setting, info)
  local mode
  if setting == false then
    mode = "none"
  elseif setting == nil then
    if not M.enabled or os.getenv("PARTRAIN_PROGRESS") == "0" then
      mode = "none"
    else
      mode = pt._isatty(1) and "tty" or "plain"
    end
  else
    mode = pt._isatty(1) and "tty" or "plain"
  end
  if mode == "none" and not info.log then return nil end
  return M.new{total = info.total, desc = type(setting) == "string" and setting or info.desc,
               mode = mode, epoch = info.epoch, log = info.log, log_every = info.log_every,
               quiet_end = setting == nil}
end

--- progress.wrap({total =, desc =, samples = per step}, iter, state, init) -> an iterator that
-- shows progress: for i, v in progress.wrap({total = #list}, ipairs(list)) do ... end
function M.wrap(opts, iter, state, init)
  if type(opts) ~= "table" then error("wrap: options table expected as argument 1", 2) end
  if type(iter) ~= "function" then error("wrap: iterator function expected as argument 2", 2) end
  -- a plain iterator counts steps (tqdm's it/s) unless it says how many samples a step holds
  local bar = M.new{total = opts.total, desc = opts.desc, mode = opts.mode, log = opts.log,
                    stream = opts.stream, unit = opts.samples and "samples" or "it"}
  local ctl = init
  return function()
    local r = table.pack(iter(state, ctl))
    if r[1] == nil then
      bar:close()
      return nil
    end
    ctl = r[1]
    bar:step(opts.samples or 1)
    return table.unpack(r, 1, r.n)
  end
end

--- progress.log(path, record): append one JSON line (any Lua table of numbers, strings, booleans).
function M.log(path, record)
  if type(record) ~= "table" then error("log: record must be a table", 2) end
  local ok, line = pcall(log_line, record)
  if not ok then error(line, 2) end
  local f, err = io.open(path, "a")
  if not f then error("log: cannot open '" .. tostring(path) .. "': " .. tostring(err), 2) end
  f:write(line, "\n")
  f:close()
end

local docs = rawget(pt, "_docs")
if docs then
  docs[M.new] = "progress.new{total=, desc=, mode=\"tty\"|\"plain\"|\"none\", log=} -> bar with :step(n), :report(loss), :close()."
  docs[M.wrap] = "pt.progress({total=, desc=}, iter, state, init) -> iterator that shows a progress bar."
  docs[M.log] = "progress.log(path, record): append a table as one JSON line."
end

M.Bar = Bar
return M
