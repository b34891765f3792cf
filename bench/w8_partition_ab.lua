-- W8's workload (bench/w2_per_sample.lua: the MLP 784-256-128-10 trained sample by sample with
-- par_by_sample and a fused SGD step, one epoch per call) in one process, rounds alternating
-- 1 thread, 2 threads with the large weights split by rows (the default), and 2 threads with a
-- copy of every weight per worker (pt._par_partition(false), session 14's design). On a VM
-- whose second vCPU comes and goes, comparing within a round is steadier than comparing
-- separate runs. Prints each variant's median samples/s and its median ratio to 1 thread in the
-- same round.
--   partrain bench/w8_partition_ab.lua [rounds=12]
local pt = require "partrain"
local nn, optim, data = pt.nn, pt.optim, pt.data

local N, ROUNDS = 4000, tonumber(arg and arg[1] or "12") or 12
pt.manual_seed(1)
local samples = {}
for i = 1, N do samples[i] = {pt.rand(1, 784), pt.randint(1, 11, {1}, {dtype = "int64"})} end
local dataset = {get = function(_, i) return samples[i] end, len = function() return N end}

local function fn(sample, model)
  local loss = nn.cross_entropy(model(sample[1]), sample[2])
  loss:backward()
  return loss
end

local function epoch(threads)
  pt.manual_seed(2)
  local model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                              nn.Linear(128, 10))
  local opt = optim.SGD(model:parameters(), {lr = 0.01})
  data.DataHandler(dataset):par_by_sample(model, threads, fn) -- starts the workers
  opt:zero_grad()
  local t0 = pt.clock()
  data.DataHandler(dataset):par_by_sample(model, threads, fn, {epoch = true, step = opt})
  return N / (pt.clock() - t0)
end

local variants = {{"1 thread", 1, true}, {"2 threads, partitioned", 2, true},
                  {"2 threads, copies", 2, false}}
local rates = {}
for _, v in ipairs(variants) do rates[v[1]] = {} end
for r = 1, ROUNDS do
  for _, v in ipairs(variants) do
    pt._par_partition(v[3])
    rates[v[1]][r] = epoch(v[2])
  end
end
pt._par_partition(true)

local function median(t)
  local c = {table.unpack(t)}
  table.sort(c)
  return c[(#c + 1) // 2]
end
for _, v in ipairs(variants) do
  local ratios = {}
  for r = 1, ROUNDS do ratios[r] = rates[v[1]][r] / rates["1 thread"][r] end
  print(string.format("%-24s %8.0f samples/s   x%.3f of 1 thread", v[1], median(rates[v[1]]),
                      median(ratios)))
end
