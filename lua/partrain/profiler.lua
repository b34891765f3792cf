-- pt.profiler: where the time of a piece of Lua goes, by op, as torch.profiler's key averages.
--
--   local prof = pt.profiler.profile(function() train_one_epoch() end)
--   print(prof:table({sort_by = "self", row_limit = 15}))
--
-- While fn runs, the functions of pt, pt.nn.functional and pt.linalg, the Tensor methods (backward
-- included) and the tensor operators (a + b, ...) are timed through wrappers (one clock read at each end; about half a microsecond per call, which the
-- report states) and put back afterwards, even when fn raises. Nested calls count in their
-- caller's total and not in its self time, so the self column adds up to the profiled time.
-- Functions a module captured in a local before profiling started are not seen (they show in
-- their caller's self time). Only this Lua state is profiled (dispatcher workers run their own).
local pt = require "partrain.core"
local fail = require("partrain.tensor")._fail

local doc = pt._doc

local profiler = {}
local now = pt.clock

local active -- the running profile: {stats = {[name] = row}, stack = {...}}

local function enter(name)
  local frame = {name = name, start = now(), child = 0}
  local stack = active.stack
  stack[#stack + 1] = frame
  return frame
end

local function leave(frame)
  local elapsed = now() - frame.start
  local stack = active.stack
  stack[#stack] = nil
  local parent = stack[#stack]
  if parent then parent.child = parent.child + elapsed end
  local row = active.stats[frame.name]
  if not row then
    row = {name = frame.name, calls = 0, total = 0, self = 0, max = 0}
    active.stats[frame.name] = row
  end
  row.calls = row.calls + 1
  row.total = row.total + elapsed
  row.self = row.self + elapsed - frame.child
  if elapsed > row.max then row.max = elapsed end
end

-- a wrapper that times f under name; errors pass through with the frame closed
local function timed(name, f)
  return function(...)
    if not active then return f(...) end
    local frame = enter(name)
    local results = table.pack(pcall(f, ...))
    leave(frame)
    if not results[1] then error(results[2], 0) end
    return table.unpack(results, 2, results.n)
  end
end

local METAMETHODS = {"__add", "__sub", "__mul", "__div", "__mod", "__pow", "__unm", "__idiv", "__band", "__bor",
                     "__bxor", "__shl", "__shr", "__bnot", "__eq", "__lt", "__le", "__concat", "__len",
                     "__newindex"}

-- every place the wrappers go: {table, key, original}
local function install()
  local patched = {}
  local function patch(tbl, key, name)
    local f = rawget(tbl, key)
    if type(f) ~= "function" then return end
    rawset(tbl, key, timed(name, f))
    patched[#patched + 1] = {tbl, key, f}
  end
  local skip = {profiler = true, clock = true, is_tensor = true, no_grad = true, enable_grad = true,
                is_grad_enabled = true, set_grad_enabled = true}
  local function patch_all(tbl, prefix)
    local keys = {}
    for k, v in pairs(tbl) do
      if type(k) == "string" and type(v) == "function" and not k:match("^_") and not skip[k] then keys[#keys + 1] = k end
    end
    for _, k in ipairs(keys) do patch(tbl, k, prefix .. k) end
  end
  pt._load_more() -- tensor_more's names, so that they are wrapped too
  patch_all(pt, "pt.")
  patch_all(pt.Tensor, "Tensor:")
  local mt = getmetatable(pt.zeros(1))
  for _, k in ipairs(METAMETHODS) do patch(mt, k, "Tensor." .. k) end
  -- the fused ops the layers, optimizers and data loader call through the core table
  -- (C._nn_linear, C._optim_sgd, ...), named without the underscore
  local internal = {}
  for k, v in pairs(pt) do
    if type(k) == "string" and type(v) == "function" and (k:match("^_nn_") or k:match("^_optim_") or k:match("^_data_")) then
      internal[#internal + 1] = k
    end
  end
  for _, k in ipairs(internal) do patch(pt, k, "pt." .. k:sub(2)) end
  -- the modules as pt reaches them (pt.nn, pt.optim) and as require does, when they differ
  local function loaded(name, field)
    local list, a, b = {}, rawget(pt, field), package.loaded[name]
    if type(a) == "table" then list[1] = a end
    if type(b) == "table" and b ~= a then list[#list + 1] = b end
    return list
  end
  for _, nn in ipairs(loaded("partrain.nn", "nn")) do
    nn._load_extras()
    patch_all(nn.functional, "F.")
  end
  -- the optimizers' steps (their fused loops were captured when optim loaded)
  for _, optim in ipairs(loaded("partrain.optim", "optim")) do
    for name, cls in pairs(optim) do
      if type(name) == "string" and type(cls) == "table" then
        patch(cls, "step", "optim." .. name .. ":step")
        patch(cls, "zero_grad", "optim." .. name .. ":zero_grad")
      end
    end
  end
  local linalg = rawget(pt, "linalg")
  if type(linalg) == "table" then patch_all(linalg, "linalg.") end
  return patched
end

local function uninstall(patched)
  for i = #patched, 1, -1 do
    local p = patched[i]
    rawset(p[1], p[2], p[3])
  end
end

local Profile = {}
Profile.__index = Profile
Profile.__name = "Profile"

local function fmt_ms(s) return string.format("%.3f", s * 1e3) end

-- rows sorted by sort_by ("self" by default, "total", "calls", "max", "name")
function Profile:rows(sort_by)
  sort_by = sort_by or "self"
  local valid = {self = true, total = true, calls = true, max = true, name = true}
  if not valid[sort_by] then
    fail(string.format("Profile:rows: sort_by must be \"self\", \"total\", \"calls\", \"max\" or \"name\", got %s",
      tostring(sort_by)))
  end
  local rows = {}
  for _, r in pairs(self.stats) do rows[#rows + 1] = r end
  table.sort(rows, function(a, b)
    if sort_by == "name" then return a.name < b.name end
    if a[sort_by] ~= b[sort_by] then return a[sort_by] > b[sort_by] end
    return a.name < b.name
  end)
  return rows
end
doc(Profile.rows, [[prof:rows([sort_by = "self"]) -> list of {name, calls, total, self, max} (seconds), sorted by
  "self", "total", "calls", "max" (largest first) or "name".]])

function Profile:table(opts)
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "sort_by" and k ~= "row_limit" then fail(string.format("Profile:table: unknown option '%s'", tostring(k))) end
  end
  local rows = self:rows(opts.sort_by)
  local limit = opts.row_limit or #rows
  local width = 4
  for i = 1, math.min(limit, #rows) do width = math.max(width, #rows[i].name) end
  local lines = {}
  local head = string.format("%-" .. width .. "s %12s %7s %12s %9s %10s", "Name", "Self ms", "Self %", "Total ms",
    "Calls", "Avg us")
  lines[1] = head
  lines[2] = string.rep("-", #head)
  local wall = self.wall > 0 and self.wall or 1
  for i = 1, math.min(limit, #rows) do
    local r = rows[i]
    lines[#lines + 1] = string.format("%-" .. width .. "s %12s %6.1f%% %12s %9d %10.2f", r.name, fmt_ms(r.self),
      100 * r.self / wall, fmt_ms(r.total), r.calls, 1e6 * r.total / r.calls)
  end
  lines[#lines + 1] = lines[2]
  local timed_total = 0
  for _, r in pairs(self.stats) do timed_total = timed_total + r.self end
  lines[#lines + 1] = string.format("Profiled: %s ms wall, %s ms in timed calls (%d calls; each adds about %.2f us "
    .. "of profiling)", fmt_ms(self.wall), fmt_ms(timed_total), self.calls, self.overhead * 1e6)
  return table.concat(lines, "\n")
end
doc(Profile.table, [[prof:table([{sort_by = "self", row_limit = n}]) -> the report as text: per name its self time
  (without the timed calls it made), share of the wall time, total time, calls and average.]])

Profile.__tostring = function(self) return self:table({row_limit = 20}) end

-- what one wrapped call costs here (the report says it)
local function wrapper_overhead()
  local f = timed("x", function() end)
  active = {stats = {}, stack = {}}
  local n = 2000
  local t0 = now()
  for _ = 1, n do f() end
  local dt = now() - t0
  active = nil
  return dt / n
end

function profiler.profile(fn, ...)
  if type(fn) ~= "function" then
    fail(string.format("profiler.profile: expected a function to run, got %s", type(fn)))
  end
  if active then fail("profiler.profile: a profile is already running in this state") end
  local overhead = wrapper_overhead()
  local patched = install()
  active = {stats = {}, stack = {}}
  local t0 = now()
  local results = table.pack(pcall(fn, ...))
  local wall = now() - t0
  local run = active
  active = nil
  uninstall(patched)
  if not results[1] then error(results[2], 0) end
  local calls = 0
  for _, r in pairs(run.stats) do calls = calls + r.calls end
  local prof = setmetatable({stats = run.stats, wall = wall, calls = calls, overhead = overhead}, Profile)
  return prof, table.unpack(results, 2, results.n)
end
doc(profiler.profile, [[pt.profiler.profile(fn, ...) -> prof, fn's results: runs fn(...) with the ops of this Lua
  state timed (pt.*, Tensor methods and operators, nn.functional, pt.linalg, the layers',
  optimizers' and loader's fused ops as pt.nn_*, pt.optim_*, pt.data_*, t:backward), as
  torch.profiler's key averages; print(prof) or prof:table{sort_by =
  "self" | "total" | "calls", row_limit = n} gives the report, prof:rows() the numbers. Each timed
  call costs about half a microsecond more while profiling; functions captured in locals before
  the profile started are counted in their caller.]])

function profiler.record_function(name, fn, ...)
  if type(name) ~= "string" then
    fail(string.format("profiler.record_function: expected a name (string), got %s", type(name)))
  end
  if type(fn) ~= "function" then
    fail(string.format("profiler.record_function: expected a function to run, got %s", type(fn)))
  end
  return timed(name, fn)(...)
end
doc(profiler.record_function, [[pt.profiler.record_function(name, fn, ...) -> fn(...)'s results, counted under name in a
  running profile (a user range, as torch.profiler.record_function); without a profile just fn(...).]])

doc(profiler, "pt.profiler: profile(fn, ...) and record_function(name, fn, ...): time by op, as torch.profiler.")
return profiler
