--- partrain.par: the parallel dispatcher, Lua side.
--
-- Workers are C threads, each owning its own lua_State with partrain loaded, created once per
-- calling state (a shared pool that grows when a call asks for more workers) and reused by
-- every later call. Values cross between the caller and the workers as described in
-- host/transfer.h: closures as bytecode plus upvalues, tables deep-copied (cycles, shared
-- references and metatables kept; classes of required modules resolve to the worker's own
-- copies), tensors by reference (never a data copy), and the globals a function reads are
-- looked up in the caller and sent along. A value that cannot cross fails naming it:
--   upvalue 'conn' (userdata) of the closure cannot be sent to a worker
--
-- API used by other parts of partrain:
--
--   pt._pool_map(fn, arglists[, {n_workers = k}]) -> results
--     Runs fn(table.unpack(arglists[i])) for every i on the shared pool, at most k at a time
--     (default: the number of CPUs). results[i] is fn's first return value, in input order.
--     A failed item's slot holds an error value: a table with metatable pt.ActionError and
--     fields message, traceback, index, worker; tostring(err) reads
--     "ActionError: item 3 failed on worker 2: <message>". _pool_map never raises for item
--     failures (an item whose arguments cannot be sent fails the same way); it raises only when
--     fn itself cannot be sent, and "interrupted" on Ctrl-C (after stopping every worker).
--     Leaf gradients inside _pool_map go to leaf.grad directly: do not backward into the same
--     leaf from two items at once (par_by_sample is the tool for that).
--
--   pt._Pool(n): a dedicated pool (used by pt.Runner); see host/l_par.c.
--   pt.worker_id(): 0 in the caller, 1..n in a worker.
--
-- Ctrl-C while workers run stops them (a hook in each worker raises "interrupted"), the call
-- raises "interrupted" and the pool keeps working for the next call.
local pt = require "partrain"

local M = {}

local MAX_THREADS = pt._par_max_workers -- the pool's limit (host/l_par.c, PAR_MAX_SLOTS)

local function check_handler(handler)
  if type(handler) ~= "table" or handler.dataset == nil then
    error("par_by_sample: expected a DataHandler (a table with a dataset field)", 3)
  end
  local ds = handler.dataset
  if ds.get == nil or ds.len == nil then
    error("par_by_sample: the handler's dataset must have get(i) and len()", 3)
  end
  return ds
end

-- The fused step's plan for an optim.SGD: {{param, momentum buffer or false, first, lr, momentum,
-- dampening, weight_decay, nesterov, maximize}, ...} and, for buffers made here, the state
-- tables they belong to once used.
local function step_plan(opt)
  local optim = pt.optim
  if type(opt) ~= "table" or getmetatable(opt) ~= optim.SGD then
    error("par_by_sample: step must be an optim.SGD (other optimizers: call opt:step() in "
      .. "after_window)", 3)
  end
  local plan, fresh = {}, {}
  for _, g in ipairs(opt.param_groups) do
    for i, p in ipairs(g.params) do
      local st = g._states[i]
      local buf, first = false, false
      if g.momentum ~= 0 then
        buf = st.momentum_buffer
        if buf == nil then
          buf, first = pt.zeros_like(p), true
          fresh[#plan + 1] = st
        end
      end
      plan[#plan + 1] = {p, buf, first, g.lr, g.momentum, g.dampening, g.weight_decay,
                         g.nesterov and true or false, g.maximize and true or false}
    end
  end
  return plan, next(fresh) and fresh or nil
end

--- handler:par_by_sample(model, n, fn[, opts]) -> losses, model
-- rotta_rs semantics: the thread count n is fixed by the first call (later calls reuse it and
-- may pass nil); each call processes one window of samples idx .. idx+n-1, stopping at the end
-- of the dataset (the last window may be short; a window never wraps), then idx advances by n;
-- a call that starts past the end first goes back to sample 1. fn(sample, model) runs for each
-- sample of the window at once, sample j of the window on worker j (worker 1 is a state of its
-- own driven by the calling thread, workers 2..n are pool threads, so n threads run in all and
-- none of them idles waiting for the others). The model's parameters are
-- shared (same tensors). Worker 1's backward() adds straight into param.grad; workers 2..n
-- accumulate into their own gradient buffers, which are added into param.grad after the window
-- in worker order 2..n (each worker adds its slice of every parameter, all workers at once), so
-- a given seed and n give bitwise-identical results on every run. Random ops in fn (dropout)
-- start each sample at a seed drawn from the caller's generator once per call plus the sample's
-- index, so they replay with pt.manual_seed whatever n. BatchNorm's running statistics are
-- updated at the window's end in sample order (a loop's numbers). Nothing zeroes gradients.
-- OpenBLAS runs one thread while workers run.
-- Returns the list of fn's first results (the losses) in sample order, and the model.
--
-- opts:
--   windows = k        run k consecutive windows in this call (wrapping as above)
--   epoch = true       run windows from the current position to the end of the dataset
--   after_window = f   with windows/epoch: f(window_losses) runs in the caller between
--                      windows (e.g. opt:step(); opt:zero_grad()), before the next window's
--                      samples are read. Without it, windows overlap as a DataLoader
--                      prefetches: right after reading its own sample of a window, the caller
--                      reads the next window's samples for workers 2..n (dataset:get, in order)
--                      and hands them to the workers, which start them once they are past the
--                      current window's step (a get that reads the model's parameters sees
--                      them before that step). When a window fails, the next one's samples
--                      were read and may have started; their gradients are dropped
--   step = opt         an optim.SGD: opt:step() then opt:zero_grad() after every window,
--                      fused into the window: every worker (worker 1 too) fills its own
--                      gradient buffers and then steps the parameters, reading the buffers in
--                      worker order, so the step runs on all threads where the gradients are.
--                      With 2+ workers each of workers 2..n computes with its own copy of the
--                      stepped parameters (up to 64 MiB of them; larger models are stepped
--                      slice by slice on the shared tensors) and steps it whole, as worker 1
--                      steps the parameters, so the copies stay bitwise equal and no core
--                      re-reads what another core just wrote; changes the user's code makes to
--                      the parameters or momentum buffers between windows are copied over
--                      before the next window. Within fn, workers 2..n see their copies as the
--                      model's parameters. A large weight (256 KiB and more, 2-D, 128+ rows per
--                      worker) is not copied: every worker uses it, worker j steps only its
--                      block of rows, and the workers of a window make its batch-1 products
--                      (nn.linear / nn.Linear on one sample) together, worker j multiplying its
--                      block by every worker's input, so no core reads rows another core has
--                      just stepped; a product the others do not reach at the same point (a
--                      branch in fn) is made alone over all rows, with the same numbers.
--                      The numbers are those of calling opt:step();
--                      opt:zero_grad() from after_window (up to rounding for a parameter that
--                      gets several gradients within one sample, e.g. a layer used twice).
--                      Hyperparameters (lr, ...) are read at the start of the call;
--                      after_window, if given, runs after the step. When a sample fails, none
--                      of that window's gradients is added and the step does not run.
--   read_in_workers = true  each worker reads its own samples, as PyTorch's DataLoader
--                      workers do: the dataset is sent to every worker once per call (tensors
--                      and partrain objects by reference, Lua tables copied, like the model)
--                      and worker j calls dataset:get(i) for its samples, so the caller only
--                      hands out indices instead of reading and sending every sample. get then
--                      runs in the worker's state: it must not depend on changes the caller
--                      makes during the call. A failing get fails its sample
--                      ("... failed on worker w: reading the sample: <message>").
--   refresh_model = true  have every worker decode the model again even when it did not
--                      change (rarely needed: see below)
-- The model's tensors are shared with the workers; its Lua part (fields, submodules, modes
-- such as model:eval()) is a copy in each worker, encoded at every call and decoded again by
-- the workers whenever it differs from the last call's. What fn writes into the model's own
-- fields stays in that worker's copy until then and never reaches the caller.
-- With windows/epoch the returned losses are all windows' losses in sample order.
-- A failure in fn raises "par_by_sample: sample <i> failed on worker <w>: <message>" followed
-- by the worker's traceback; the buffered gradients of that window (workers 2..n) are not
-- added (worker 1's backward, if it ran, already was, as in rotta_rs where every backward adds
-- into the shared gradients); later calls work. The failed window counts as processed; with
-- windows/epoch the windows after it did not run, and the next call starts with them.
function M.par_by_sample(handler, model, n, fn, opts)
  local ds = check_handler(handler)
  if type(fn) ~= "function" then
    error("par_by_sample: fn must be a function (got " .. type(fn) .. ")", 2)
  end
  if opts ~= nil and type(opts) ~= "table" then
    error("par_by_sample: opts must be a table (got " .. type(opts) .. ")", 2)
  end
  opts = opts or {}
  local len = ds:len()
  local st = handler._par_by_sample
  if st == nil then
    if math.type(n) ~= "integer" or n < 1 then
      error("par_by_sample: the number of threads must be a positive integer (got " .. tostring(n) .. ")", 2)
    end
    if n > MAX_THREADS then -- checked before n is kept: the handler would stay unusable
      error(("par_by_sample: at most %d threads, got %d"):format(MAX_THREADS, n), 2)
    end
    if n > len then
      error(("par_by_sample: %d threads but the dataset has only %d samples"):format(n, len), 2)
    end
    st = {n = n, idx = 1}
    handler._par_by_sample = st
  end
  -- n is fixed by the first call (rotta_rs keeps its thread pool); a different n is ignored
  n = st.n
  if opts.after_window ~= nil and type(opts.after_window) ~= "function" then
    error("par_by_sample: after_window must be a function", 2)
  end
  local nwin
  if opts.epoch then
    if st.idx > len then st.idx = 1 end
    nwin = (len - st.idx) // n + 1
  elseif opts.windows ~= nil then
    nwin = opts.windows
    if math.type(nwin) ~= "integer" or nwin < 1 then
      error("par_by_sample: windows must be a positive integer (got " .. tostring(nwin) .. ")", 2)
    end
  else
    nwin = 1
  end
  if len == 0 then nwin = 0 end -- a dataset emptied since the first call: no window, no loss
  -- the optimizer is checked before the windows are taken (a bad one skipped a window)
  local plan, fresh_bufs
  if opts.step ~= nil then plan, fresh_bufs = step_plan(opts.step) end
  local windows = {}
  for w = 1, nwin do
    if st.idx > len then st.idx = 1 end
    local stop = math.min(st.idx + n - 1, len)
    windows[2 * w - 1], windows[2 * w] = st.idx, stop
    st.idx = st.idx + n
  end
  local source = ds
  if not opts.read_in_workers then source = function(i) return pt._data_one_sample(i, ds:get(i)) end end
  local ok, losses = pcall(pt._par_windows, model, fn, source, windows, n, opts.after_window,
                           opts.refresh_model, plan, opts.read_in_workers and true or false)
  if not ok then
    -- the failed window counts as processed (as a failing one-window call); the windows after
    -- it never ran and are the next call's, as if each window had been a call of its own
    local started = windows.started or 0
    if started < nwin then st.idx = windows[2 * started + 1] end
    error(losses, 0)
  end
  if fresh_bufs then
    -- momentum buffers created for this call join the optimizer's state once used
    for i, e in ipairs(plan) do
      local st = fresh_bufs[i]
      if st and e[3] == false then st.momentum_buffer = e[2] end
    end
  end
  return losses, model
end

M.pool_map = pt._pool_map
M.ActionError = pt.ActionError

local docs = rawget(pt, "_docs")
if docs then
  docs[M.par_by_sample] = "par.par_by_sample(handler, model, n, fn[, opts]) -> losses, model: what\n"
    .. "  loader:par_by_sample(model, n, fn, opts) runs (see help(pt.data.DataHandler_class.par_by_sample));\n"
    .. "  fn(sample, model) for one window of n samples on n threads, gradients summed per window.\n"
    .. "  opts: windows=k | epoch=true, after_window=f(losses), step=optim.SGD (fused step),\n"
    .. "  read_in_workers=true, refresh_model=true. Every rule: lua/partrain/par.lua."
  -- the same function as pt._pool_map (host/l_par.c), documented under its public name
  docs[M.pool_map] = "par.pool_map(fn, arglists[, {n_workers=}]) -> results (also pt._pool_map)\n"
    .. "  fn(table.unpack(arglists[i])) for every i on the worker pool, at most n_workers at once\n"
    .. "  (default: one per CPU); results[i] is fn's first result, in input order. A failed item's\n"
    .. "  slot holds a pt.ActionError {message, traceback, index, worker}: it never raises for item\n"
    .. "  failures, only when fn cannot be sent to the workers, and \"interrupted\" on Ctrl-C."
  if type(M.ActionError) == "table" and docs[M.ActionError] == nil then
    docs[M.ActionError] = "pt.ActionError: the metatable of the error values that par.pool_map and pt.inbatch_parallel\n"
      .. "  put in a failed item's slot instead of raising. Fields: message, traceback, index\n"
      .. "  (the item), worker; tostring(e) reads \"ActionError: item 3 failed on worker 2: <message>\".\n"
      .. "  getmetatable(v) == pt.ActionError tests for one; pt.any_action_failed(results) checks a list."
  end
end

return M
