-- W2/W8: per-sample training of the MLP 784-256-128-10 (batch 1 per sample: forward, backward;
-- SGD step per window) with handler:par_by_sample on 1 and 2 threads, one epoch per call
-- (opts.epoch) with the optimizer step fused into the windows (opts.step = opt: after each
-- window's reduction every worker runs opt:step() then opt:zero_grad() on its slice of the
-- parameters; the same numbers as calling them from after_window). W2_STEP=hook runs
-- opt:step(); opt:zero_grad() in an after_window hook instead.
-- Synthetic data: N float32 inputs in [0, 1), random 1-based labels. Prints
--   METRIC w2_samples_per_s_t1 / _t2 <median samples/s>, METRIC w2_samples_per_s (2 threads)
--   METRIC w8_speedup <2-thread median / 1-thread median>
--   METRIC w8_ceiling <the same ratio for plain C threads sharing nothing>, when built
-- Env: W2_N samples per epoch (default 4000), W2_REPS repetitions (default 15: a 2-thread epoch
-- takes ~60-100 ms, and on the VM the epochs of one run spread 36-74k samples/s with 2 threads
-- and 27-35k with 1, phases of a few seconds; with 5 the medians moved by 20%), W2_THREADS
-- thread counts to run (default "1,2"; W2/W8 lines need both), W2_CLOCK (below).
local pt = require "partrain"
local data = pt.data

local N = tonumber(os.getenv("W2_N") or "4000")
local REPS = tonumber(os.getenv("W2_REPS") or "15")
-- W2_CLOCK=cpu: time with os.clock (process CPU time; meaningful for 1 thread only, a check
-- that does not depend on other load on the machine)
local now = os.getenv("W2_CLOCK") == "cpu" and os.clock or pt.clock

local here = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./")
local workload = dofile(here .. "w2_workload.lua")(N)
local dataset, fn = workload.dataset, workload.fn

local function epoch(threads)
  local model, opt = workload.new_model()
  local handler = data.DataHandler(dataset)
  -- warm-up window: starts the workers, sends the model
  handler:par_by_sample(model, threads, fn)
  opt:zero_grad()
  handler = data.DataHandler(dataset)
  local t0 = now()
  local opts = {epoch = true, step = opt}
  if os.getenv("W2_STEP") == "hook" then
    opts = {epoch = true, after_window = function()
      opt:step()
      opt:zero_grad()
    end}
  end
  local losses = handler:par_by_sample(model, threads, fn, opts)
  local dt = now() - t0
  assert(#losses == N)
  return N / dt
end

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

local rate = {}
local counts = {}
for c in (os.getenv("W2_THREADS") or "1,2"):gmatch("%d+") do counts[#counts + 1] = tonumber(c) end
-- the thread counts take turns, repetition by repetition, in reversed order every other one, so
-- that the machine's speed drifting during the run (a shared VM) weighs on all of them alike
-- and W8 compares like with like
local runs = {}
for _, threads in ipairs(counts) do runs[threads] = {} end
for k = 1, REPS do
  for i = 1, #counts do
    local threads = counts[k % 2 == 1 and i or #counts + 1 - i]
    runs[threads][k] = epoch(threads)
  end
end
for _, threads in ipairs(counts) do
  rate[threads] = median(runs[threads])
  print(string.format("METRIC w2_samples_per_s_t%d %.0f samples/s", threads, rate[threads]))
end
if rate[1] and rate[2] then
  print(string.format("METRIC w2_samples_per_s %.0f samples/s", rate[2]))
  print(string.format("METRIC w8_speedup %.3f x", rate[2] / rate[1]))
  -- the machine's own ceiling for W8: the same two passes over the first layer's weights in
  -- plain C, 2 independent threads against 1 (bench/two_thread_ceiling.c, built beside this
  -- partrain as bench_two_thread_ceiling)
  local helper = dofile(here .. "c_helper.lua")
  local c = helper.metric("two_thread_ceiling", "w8_ceiling", 5)
  if c then print(string.format("METRIC w8_ceiling %s x", c)) end
end
