-- Seed 002 (easycore Runner), in partrain: producers on devices, one consumer, results in order.
--   partrain scripts/seed002_runner.lua [n]      sum of x^exponent for x = 0 .. n-1 (default 100)
-- Each producer is a worker thread with its own Lua state and its own copy of cfg; the consumer
-- runs in the caller with a fresh copy of cfg per call. Also runs the "neural network predictor"
-- example (a model built once per producer in producer_init) and the batch-generator example.
local pt = require "partrain"
local nn = pt.nn

local n = tonumber(arg and arg[1] or "") or 100
local data_list = {}
for i = 1, n do data_list[i] = i - 1 end

-- Example 1/4: sum of powers with an outside parameter
local runner = pt.Runner{ordered = true, devices = {"cpu", "cpu"}, cfg = {exponent = 3},
  producer_init = function(device, cfg) end,
  producer_work = function(device, cfg, x) return x ^ cfg.exponent end,
  consumer_init = function(cfg) cfg.sum = 0 end,
  consumer_work = function(cfg, r) cfg.sum = cfg.sum + r end,
  consumer_end  = function(cfg) return cfg.sum end}
print(("sum of x^3 for x < %d: %.0f"):format(n, runner(data_list)))
runner:close()

-- Example 2/3: a predictor; each producer builds its own network once, batches come from a
-- generator function
local predictor = pt.Runner{ordered = true, devices = 2,
  producer_init = function(device, cfg)
    pt.manual_seed(1) -- the same weights on every producer
    cfg.model = nn.Sequential(nn.Linear(1, 3), nn.ReLU())
  end,
  producer_work = function(device, cfg, batch)
    return pt.no_grad(function() return cfg.model(pt.tensor(batch):view(-1, 1)) end)
  end,
  producer_end = function(device, cfg) cfg.model = nil end,
  consumer_init = function(cfg) cfg.outputs = {} end,
  consumer_work = function(cfg, out) cfg.outputs[#cfg.outputs + 1] = out end,
  consumer_end = function(cfg) return pt.cat(cfg.outputs, 1) end}

local function batch_generator(list, batch_size)
  local i = 1
  return function()
    if i > #list then return nil end
    local b = {}
    for j = i, math.min(i + batch_size - 1, #list) do b[#b + 1] = list[j] * 1.0 end
    i = i + batch_size
    return b
  end
end

local result = predictor(batch_generator(data_list, 10))
print("predictor output shape: {" .. table.concat(result:size(), ",") .. "}")
predictor:close()
