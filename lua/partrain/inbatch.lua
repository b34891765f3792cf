-- pt.inbatch_parallel: batchflow's within-batch parallelism (seed 001, DESIGN.md §2), in Lua.
--
--   MyBatch.some_action = pt.inbatch_parallel(
--     {init = "_init_default", post = "_post_default", target = "threads", clear_data = false},
--     function(self, item, arg1, arg2) ... return value end)
--   batch:some_action(arg1, arg2)                         -- or with named call arguments:
--   batch:some_action(arg1, pt.named{n_workers = 2, k = v})
--
-- Calling conventions (Lua has no keyword arguments, so named arguments travel as one table):
--   * The call: obj:action(a, b, ...) gives the call's positional arguments. A trailing
--     pt.named{...} gives named ones; its key n_workers is a per-call option (taken out, not
--     passed on, like batchflow's kwargs.pop('n_workers')). A plain trailing table is just a
--     positional argument.
--   * extra options: every opts key other than init, post, target and n_workers.
--   * init(self, call_pos..., named) where named = extras overridden by the call's named
--     arguments (always a table). init is a method name looked up on self, or a function.
--     It returns a list with one entry per invocation.
--   * Each entry becomes the arguments of one invocation:
--       pt.args({a, b}, {k = v})      positional a, b and named {k = v}
--       {k = v, ...} (only string keys)  named only ({n = 2} too)
--       {a, b, ...}  (a plain list)      positional (entry.n is honoured for lists with nils)
--       anything else (a number, a string, a tensor, a table with a metatable)
--                                        the single positional argument
--     A plain table that mixes list items and string keys is an error (use pt.args).
--   * The method runs as method(self, entry_pos..., call_pos... [, named]) where named is
--     the entry's named arguments overridden by the call's named ones, appended only when it is
--     not empty. Extra options never reach the method.
--   * results: a list in init's order (results.n = number of entries); a failed invocation
--     leaves a pt.ActionError value {message=, traceback=, index=, worker=} in its slot
--     (pt.any_action_failed(results) tells).
--   * post(self, results, call_pos..., named) (a method name or a function; named as for init)
--     and its return values are the call's result. Without post, any failure raises
--     "inbatch_parallel: item I failed: ..." with the worker's traceback; otherwise the call
--     returns results.
--
-- Targets (n_workers: the decorator's n_workers, overridden by the call's pt.named{n_workers=}):
--   threads  each invocation runs in the dispatcher's worker pool (pt._pool_map): one lua_State
--            per thread; self and the arguments are transferred (tables copied, tensors shared),
--            so changes to self's Lua fields stay in the worker; in-place tensor writes are seen.
--   native   (batchflow's nogil) the method is called once, in the caller, as
--            method(self, call_pos... [, call_named]) and returns a C function from pt.ffi
--            (lib:fn(name, signature)); inbatch calls it per invocation with
--            (entry_pos..., call_pos...) on C threads with no Lua at all. Tensors pass as data
--            pointers (dtype checked against the signature). Named arguments are an error.
--   async    each invocation is a coroutine on the caller's state; pt.async.sleep and
--            pt.async.read_file run on C helper threads while the other coroutines proceed.
--            n_workers bounds how many coroutines are in flight (default: all).
--   process  (batchflow's mpc) the method is called once, in the caller, with the call's
--            arguments and returns a function (Lua, or from pt.ffi); invocations run it in forked
--            worker processes (inputs inherited, results serialised; tensors via shared memory).
--            A crashing worker becomes its item's error value and is replaced.
-- "nogil" and "mpc" are accepted as aliases of native and process.
local pt = require "partrain"

local M = {}

-- error values: shared with the thread pool (pt.ActionError from host/l_par.c) when present
local ActionError = rawget(pt, "ActionError")
if ActionError == nil then
  ActionError = { __name = "partrain.ActionError" }
  ActionError.__index = ActionError
  ActionError.__tostring = function(e)
    local s = ("item %s failed: %s"):format(tostring(e.index), tostring(e.message))
    if e.traceback then s = s .. "\n" .. e.traceback end
    return s
  end
  rawset(pt, "ActionError", ActionError)
end

local function is_error(v)
  local mt = getmetatable(v)
  return mt ~= nil and mt == rawget(pt, "ActionError")
end

local function new_error(index, message, traceback, worker)
  return setmetatable({ message = message, traceback = traceback, index = index, worker = worker },
    rawget(pt, "ActionError"))
end

local Args = { __name = "partrain.args" }
local Named = { __name = "partrain.named" }

--- pt.args(positional, named): the explicit positional + named form of an init entry.
function M.args(pos, named)
  if pos ~= nil and type(pos) ~= "table" then
    error("args: positional arguments must be a list (table) or nil, got " .. type(pos), 2)
  end
  if named ~= nil and type(named) ~= "table" then
    error("args: named arguments must be a table or nil, got " .. type(named), 2)
  end
  return setmetatable({ pos = pos or {}, named = named or {} }, Args)
end

--- pt.named{...}: named arguments of a call to an inbatch_parallel method (the last argument).
function M.named(t)
  if type(t) ~= "table" then error("named: expected a table, got " .. type(t), 2) end
  local copy = {}
  for k, v in pairs(t) do
    if type(k) ~= "string" then
      error("named: keys must be strings, got a " .. type(k) .. " key", 2)
    end
    copy[k] = v
  end
  return setmetatable(copy, Named)
end

function M.any_action_failed(results)
  if type(results) ~= "table" then
    error("any_action_failed: expected a list of results, got " .. type(results), 2)
  end
  local n = results.n or #results
  for i = 1, n do
    if is_error(results[i]) then return true end
  end
  return false
end

local function count(t) return t.n or #t end

local function merged(a, b)
  local m = {}
  for k, v in pairs(a) do m[k] = v end
  for k, v in pairs(b) do m[k] = v end
  return m
end

local function is_empty(t) return next(t) == nil end

-- entry -> positional list (with n), named table
local function unpack_entry(entry, i)
  if getmetatable(entry) == Args then
    local pos = entry.pos
    return { n = count(pos), table.unpack(pos, 1, count(pos)) }, entry.named
  end
  if type(entry) ~= "table" or getmetatable(entry) ~= nil then
    return { n = 1, entry }, {}
  end
  -- n is a list's length (table.pack) only beside list items; alone it is a named key
  local has_string, has_other = false, false
  for k in pairs(entry) do
    if type(k) == "string" then
      if k ~= "n" then has_string = true end
    else
      has_other = true
    end
  end
  if not has_other and (has_string or entry.n ~= nil) then return { n = 0 }, entry end
  if has_string and has_other then
    error(("inbatch_parallel: init entry %d mixes list items and named keys; "
      .. "use pt.args(list, named)"):format(i), 0)
  end
  local n = count(entry)
  return { n = n, table.unpack(entry, 1, n) }, {}
end

local function resolve(self, f, what)
  if type(f) == "string" then
    local m = self ~= nil and self[f] or nil
    if type(m) ~= "function" and not (type(m) == "table" and getmetatable(m) and getmetatable(m).__call) then
      error(("inbatch_parallel: %s method '%s' not found on the object"):format(what, f), 0)
    end
    return m
  end
  return f
end

-- arguments of one invocation: prefix..., entry_pos..., call_pos... [, named]
local function build(prefix, pos, call_pos, named, with_named)
  local a = { n = 0 }
  local function push(v)
    a.n = a.n + 1
    a[a.n] = v
  end
  for i = 1, prefix.n do push(prefix[i]) end
  for i = 1, pos.n do push(pos[i]) end
  for i = 1, call_pos.n do push(call_pos[i]) end
  if with_named and not is_empty(named) then push(named) end
  return a
end

-- as the workers' handler (lpt_error_text): a string or number as it is, else __tostring, else
-- "(error object is a <type> value)"; the traceback without this module's own frames
local function traceback_handler(e)
  if is_error(e) then return e end
  local msg
  local mt = getmetatable(e)
  if type(e) == "string" or type(e) == "number" then
    msg = tostring(e)
  elseif mt and mt.__tostring then
    msg = tostring(e)
  else
    msg = ("(error object is a %s value)"):format(type(e))
  end
  local lines = {}
  for line in debug.traceback(nil, 2):gmatch("[^\n]+") do
    if not line:find("partrain/inbatch.lua", 1, true) and not line:find("in function 'xpcall'", 1, true) then
      lines[#lines + 1] = line
    end
  end
  return { message = msg, traceback = table.concat(lines, "\n") }
end

-- --- targets: each returns results (with n) holding values or error values ---

local function collect(n, results, errors)
  local out = { n = n }
  for i = 1, n do
    local e = errors[i]
    if e ~= nil then
      if type(e) == "string" then
        out[i] = new_error(i, e, nil, 0)
      else
        out[i] = new_error(i, e.message, e.traceback, e.worker)
      end
    else
      out[i] = results[i]
    end
  end
  return out
end

-- an error raised inside this module, to be raised again at the user's call: its position
-- here goes (it pointed at inbatch.lua, with the user's position added in front of it)
local function own_error(e)
  if type(e) == "string" then
    e = e:gsub("^[^\n]-partrain/inbatch%.lua:%d+: ", "", 1)
    e = e:gsub("^_pool_map: ", "inbatch_parallel: ", 1) -- the threads target's engine
  end
  return e
end

local function run_threads(method, self, invocations, n_workers)
  local pool_map = rawget(pt, "_pool_map")
  if pool_map == nil then
    error("inbatch_parallel: target 'threads' needs pt._pool_map (the worker pool is not built in)", 0)
  end
  local max = pt._par_max_workers -- the pool's limit (host/l_par.c)
  if n_workers and n_workers > max and #invocations > max then
    error(("inbatch_parallel: the threads target runs at most %d workers, got n_workers=%d"):format(max, n_workers), 0)
  end
  local arglists = { n = #invocations }
  for i, inv in ipairs(invocations) do
    arglists[i] = build({ n = 1, self }, inv.pos, inv.call_pos, inv.named, true)
  end
  local results = pool_map(method, arglists, { n_workers = n_workers })
  results.n = results.n or arglists.n
  for i = 1, results.n do
    local r = results[i]
    if is_error(r) and r.index == nil then r.index = i end
    -- an item that could not be sent: the engine counts self as argument 1, the method's
    -- arguments follow it
    if is_error(r) and type(r.message) == "string" and r.message:find("^cannot send item") then
      r.message = r.message:gsub("argument (%d+)", function(k)
        k = tonumber(k)
        return k == 1 and "self" or ("argument %d"):format(k - 1)
      end)
    end
  end
  return results
end

local function run_native(fn, invocations, n_workers)
  if not pt.ffi.is_function(fn) then
    error("inbatch_parallel: a native method must return a C function from pt.ffi (lib:fn), got "
      .. type(fn), 0)
  end
  local n = #invocations
  local arglists, where, errors = { n = 0 }, {}, {}
  for i, inv in ipairs(invocations) do
    if not is_empty(inv.named) then
      errors[i] = ("%s: C functions take positional arguments only (item %d has named arguments)")
          :format(fn.name, i)
    else
      arglists.n = arglists.n + 1
      arglists[arglists.n] = build({ n = 0 }, inv.pos, inv.call_pos, inv.named, false)
      where[arglists.n] = i
    end
  end
  local res, errs = pt._native_map(fn, arglists, n_workers)
  local results = {}
  for j = 1, arglists.n do
    results[where[j]] = res[j]
    if errs[j] ~= nil then errors[where[j]] = errs[j] end
  end
  return collect(n, results, errors)
end

local function run_process(fn, invocations, n_workers)
  local mt = getmetatable(fn)
  if type(fn) ~= "function" and not (mt and mt.__call) then
    error("inbatch_parallel: a process method must return a function to run in the worker "
      .. "processes, got " .. type(fn), 0)
  end
  local arglists = { n = #invocations }
  for i, inv in ipairs(invocations) do
    arglists[i] = build({ n = 0 }, inv.pos, inv.call_pos, inv.named, true)
  end
  local results, errors = pt._process_map(fn, arglists, n_workers)
  return collect(arglists.n, results, errors)
end

-- a count hook on each item's coroutine: Ctrl-C sets the executable's hook on the main thread
-- only, which an item that computes without yielding never returns to
local function interrupt_hook()
  if pt._interrupt_pending() then error("interrupted", 0) end
end

local function run_async(method, self, invocations, n_workers)
  local n = #invocations
  local sched = pt.async.scheduler()
  local results, errors = {}, {}
  local limit = n_workers or n
  local next_item, active = 1, {}
  while true do
    while #active < limit and next_item <= n do
      local inv = invocations[next_item]
      local co = coroutine.create(function(...) return xpcall(method, traceback_handler, ...) end)
      debug.sethook(co, interrupt_hook, "", 1000)
      sched:attach(co)
      active[#active + 1] = { co = co, i = next_item,
        args = build({ n = 1, self }, inv.pos, inv.call_pos, inv.named, true) }
      next_item = next_item + 1
    end
    if #active == 0 then break end
    local progressed, still = false, {}
    for _, task in ipairs(active) do
      if task.op == nil or task.op:done() then
        progressed = true
        local ok, a, b
        if task.args then
          local args = task.args
          task.args = nil
          ok, a, b = coroutine.resume(task.co, table.unpack(args, 1, args.n))
        else
          ok, a, b = coroutine.resume(task.co)
        end
        if coroutine.status(task.co) == "dead" then
          if not ok then
            errors[task.i] = { message = tostring(a), worker = 0 }
          elseif a then
            results[task.i] = b
          else
            errors[task.i] = { message = b.message, traceback = b.traceback, worker = 0 }
          end
        else
          task.op = pt.async.is_operation(a) and a or nil -- a plain yield: runnable again
          still[#still + 1] = task
        end
      else
        still[#still + 1] = task
      end
    end
    active = still
    if not progressed then sched:wait(0.1) end
  end
  return collect(n, results, errors)
end

local targets = { threads = true, native = true, async = true, process = true }
local aliases = { nogil = "native", mpc = "process" }
local reserved = { init = true, post = true, target = true, n_workers = true }

local function check_workers(v, where)
  if v ~= nil and (math.type(v) ~= "integer" or v < 1) then
    error(("inbatch_parallel: %sn_workers must be a positive integer, got %s"):format(where, tostring(v)), 3)
  end
end

--- pt.inbatch_parallel(opts, method) -> function(self, ...)
function M.inbatch_parallel(opts, method)
  if type(opts) ~= "table" then
    error("inbatch_parallel: expected an options table {init=, post=, target=, ...}, got " .. type(opts), 2)
  end
  local init, post = opts.init, opts.post
  if type(init) ~= "string" and type(init) ~= "function" then
    error("inbatch_parallel: opts.init is required (a method name or a function), got " .. type(init), 2)
  end
  if post ~= nil and type(post) ~= "string" and type(post) ~= "function" then
    error("inbatch_parallel: opts.post must be a method name or a function, got " .. type(post), 2)
  end
  local target = opts.target or "threads"
  target = aliases[target] or target
  if not targets[target] then
    error(("inbatch_parallel: unknown target '%s' (expected threads, native, async or process)")
      :format(tostring(opts.target)), 2)
  end
  if type(method) ~= "function" then
    error("inbatch_parallel: expected the method (a function) as the second argument, got " .. type(method), 2)
  end
  check_workers(opts.n_workers, "opts.")
  local extras = {}
  for k, v in pairs(opts) do
    if not reserved[k] then extras[k] = v end
  end
  local default_workers = opts.n_workers

  return function(self, ...)
    local call_pos = table.pack(...)
    local call_named = {}
    if call_pos.n > 0 and getmetatable(call_pos[call_pos.n]) == Named then
      call_named = call_pos[call_pos.n]
      call_pos[call_pos.n] = nil
      call_pos.n = call_pos.n - 1
    end
    local n_workers = default_workers
    if call_named.n_workers ~= nil then
      check_workers(call_named.n_workers, "the call's ")
      n_workers = call_named.n_workers
      call_named = merged(call_named, {})
      call_named.n_workers = nil
    end
    local hook_named = merged(extras, call_named)

    local ok, init_fn = pcall(resolve, self, init, "init")
    if not ok then error(init_fn, 2) end
    local hook_args = build({ n = 0 }, call_pos, { n = 0 }, {}, false)
    hook_args.n = hook_args.n + 1
    hook_args[hook_args.n] = hook_named
    local entries = init_fn(self, table.unpack(hook_args, 1, hook_args.n))
    if type(entries) ~= "table" then
      error("inbatch_parallel: init must return a list of entries, got " .. type(entries), 2)
    end
    local invocations = {}
    for i = 1, count(entries) do
      local uok, pos, named = pcall(unpack_entry, entries[i], i)
      if not uok then error(pos, 2) end
      invocations[i] = { pos = pos, named = merged(named, call_named), call_pos = call_pos }
    end

    -- a post method that does not exist is said before any item runs
    local post_fn
    if post ~= nil then
      local pok, pf = pcall(resolve, self, post, "post")
      if not pok then error(pf, 2) end
      post_fn = pf
    end

    local results
    if target == "threads" then
      local rok, r = pcall(run_threads, method, self, invocations, n_workers)
      if not rok then error(own_error(r), 2) end
      results = r
    elseif target == "async" then
      local rok, r = pcall(run_async, method, self, invocations, n_workers)
      if not rok then error(own_error(r), 2) end
      results = r
    else
      local margs = build({ n = 1, self }, call_pos, { n = 0 }, call_named, true)
      local fn = method(table.unpack(margs, 1, margs.n))
      local run = target == "native" and run_native or run_process
      local rok, r = pcall(run, fn, invocations, n_workers)
      if not rok then error(own_error(r), 2) end
      results = r
    end

    if post_fn ~= nil then
      local args = build({ n = 2, self, results }, call_pos, { n = 0 }, {}, false)
      args.n = args.n + 1
      args[args.n] = hook_named
      return post_fn(table.unpack(args, 1, args.n))
    end
    for i = 1, results.n do
      local r = results[i]
      if is_error(r) then
        local msg = ("inbatch_parallel: item %d of %d failed%s: %s"):format(i, results.n,
          (r.worker and r.worker ~= 0) and (" (worker " .. tostring(r.worker) .. ")") or "",
          tostring(r.message))
        if r.traceback and r.traceback ~= "" then msg = msg .. "\nworker traceback:\n" .. r.traceback end
        error(msg, 2)
      end
    end
    return results
  end
end

-- reachable as pt.* (init.lua loads this module on first use of one of them)
for _, name in ipairs { "inbatch_parallel", "args", "named", "any_action_failed" } do
  rawset(pt, name, M[name])
end
local docs = rawget(pt, "_docs")
if docs then
  docs[M.inbatch_parallel] = "pt.inbatch_parallel(opts, method) -> function(self, ...)\n"
      .. "batchflow's within-batch parallelism: opts.init (method name or function) returns one entry per\n"
      .. "invocation, method(self, entry args..., call args... [, named]) runs per entry on opts.target\n"
      .. "(threads, native, async, process), opts.post(self, results, call args..., named) makes the result.\n"
      .. "Other opts keys are extras for init and post. Call with a trailing pt.named{n_workers=} to set\n"
      .. "the worker count per call. See lua/partrain/inbatch.lua for every rule."
  docs[M.args] = "pt.args(positional_list, named_table) -> an init entry with positional and named arguments"
  docs[M.named] = "pt.named{k = v, ...} -> named arguments for a call to an inbatch_parallel method"
  docs[M.any_action_failed] = "pt.any_action_failed(results) -> true when any slot holds a pt.ActionError"
end

return M
