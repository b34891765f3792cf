-- W8's workload (bench/w2_per_sample.lua: the MLP 784-256-128-10 trained sample by sample with
-- par_by_sample and a fused SGD step, one epoch per call) in one process, rounds alternating
-- 1 thread, 2 threads with the large weights split by rows and windows submitted ahead (the
-- default), the same with each window submitted only after the last was collected
-- (pt._par_pipeline(false), session 15's), 2 threads with a copy of every weight per worker
-- (pt._par_partition(false), session 14's design), and 2 threads whose blocks' boundary follows
-- the cores' speeds (pt._par_partition(true, "adapt"), session 16's default). On a VM
-- whose second vCPU comes and goes, comparing within a round is steadier than comparing
-- separate runs. Prints each variant's median samples/s and its median ratio to 1 thread in the
-- same round.
--   partrain bench/w8_partition_ab.lua [rounds=12]
local pt = require "partrain"
local data = pt.data

local N, ROUNDS = 4000, tonumber(arg and arg[1] or "12") or 12
local here = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./")
local workload = dofile(here .. "w2_workload.lua")(N)
local dataset, fn = workload.dataset, workload.fn

local function epoch(threads)
  local model, opt = workload.new_model()
  data.DataHandler(dataset):par_by_sample(model, threads, fn) -- starts the workers
  opt:zero_grad()
  local t0 = pt.clock()
  data.DataHandler(dataset):par_by_sample(model, threads, fn, {epoch = true, step = opt})
  return N / (pt.clock() - t0)
end

-- {name, threads, partitions, pipelining, shift}
local variants = {{"1 thread", 1, true, true}, {"2 threads, partitioned", 2, true, true},
                  {"2 threads, not pipelined", 2, true, false},
                  {"2 threads, copies", 2, false, true},
                  {"2 threads, adapted blocks", 2, true, true, "adapt"}}
local rates, shift = {}, 0
for _, v in ipairs(variants) do rates[v[1]] = {} end
for r = 1, ROUNDS do
  for _, v in ipairs(variants) do
    pt._par_partition(v[3], v[5])
    pt._par_pipeline(v[4])
    rates[v[1]][r] = epoch(v[2])
    if v[5] then shift = pt._par_coop_stats().shift end
  end
end
pt._par_partition(true)
pt._par_pipeline(true)

local function median(t)
  local c = {table.unpack(t)}
  table.sort(c)
  return c[(#c + 1) // 2]
end
for _, v in ipairs(variants) do
  local ratios = {}
  for r = 1, ROUNDS do ratios[r] = rates[v[1]][r] / rates["1 thread"][r] end
  print(string.format("%-26s %8.0f samples/s   x%.3f of 1 thread", v[1], median(rates[v[1]]),
                      median(ratios)))
end
-- the boundary of the two workers' blocks of the first layer, as adapted to the cores' speeds
print(string.format("adapted blocks: worker 1 takes %+d rows of 16 (pt._par_coop_stats().shift)",
                    shift))
