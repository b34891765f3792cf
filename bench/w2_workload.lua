-- W2/W8's workload, shared by bench/w2_per_sample.lua and bench/w8_partition_ab.lua: n synthetic
-- samples (float32 inputs in [0, 1), random 1-based labels; seed 1), the per-sample step
-- (cross-entropy, backward) and the MLP 784-256-128-10 (seed 2) with its SGD (lr 0.01).
--   local w = dofile(<bench dir> .. "w2_workload.lua")(n)
--   w.dataset, w.fn, w.new_model() -> model, opt
local pt = require "partrain"
local nn, optim = pt.nn, pt.optim

return function(n)
  pt.manual_seed(1)
  local samples = {}
  for i = 1, n do samples[i] = {pt.rand(1, 784), pt.randint(1, 11, {1}, {dtype = "int64"})} end
  local w = {}
  w.dataset = {get = function(_, i) return samples[i] end, len = function() return n end}
  function w.fn(sample, model)
    local loss = nn.cross_entropy(model(sample[1]), sample[2])
    loss:backward()
    return loss
  end
  function w.new_model()
    pt.manual_seed(2)
    local model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                                nn.Linear(128, 10))
    return model, optim.SGD(model:parameters(), {lr = 0.01})
  end
  return w
end
