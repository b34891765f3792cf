-- W9: nn.DataParallel over 2 cpu devices vs 1 device. The W5 CNN
-- (conv5x5(32)-relu-pool2-conv5x5(64)-relu-pool2-fc1024-relu-fc10) on batches of 256 synthetic
-- 28x28 samples: forward, backward and an SGD step per batch, timed with pt.clock(); the plain
-- module runs the same steps on 1 device (its ops then use every intra-op thread).
-- Prints the median time per step of each and the speed-up.
--   W9_STEPS (default 8) timed steps per run, W9_RUNS (default 3) runs (median of all steps)
local pt = require "partrain"
local nn, optim = pt.nn, pt.optim
pt.manual_seed(0)
local B = 256
local steps = tonumber(os.getenv("W9_STEPS")) or 8
local runs = tonumber(os.getenv("W9_RUNS")) or 3
local x = pt.rand(B, 1, 28, 28)
local y = pt.randint(1, 11, {B})
local model = nn.Sequential(nn.Conv2d(1, 32, 5, {padding = 2}), nn.ReLU(), nn.MaxPool2d(2),
  nn.Conv2d(32, 64, 5, {padding = 2}), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
  nn.Linear(3136, 1024), nn.ReLU(), nn.Linear(1024, 10))
local opt = optim.SGD(model:parameters(), {lr = 0.01, momentum = 0.9})
local dp = nn.DataParallel(model, {devices = {"cpu:1", "cpu:2"}})

local function step(net)
  opt:zero_grad()
  local loss = nn.cross_entropy(net(x), y)
  loss:backward()
  opt:step()
end

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) // 2] or (t[n // 2] + t[n // 2 + 1]) / 2
end

local times = {[model] = {}, [dp] = {}}
step(model); step(dp) -- warm-up (worker states, allocator)
for _ = 1, runs do
  for _, net in ipairs({model, dp}) do -- interleaved so that machine load hits both alike
    for _ = 1, steps do
      local t0 = pt.clock()
      step(net)
      local t = times[net]
      t[#t + 1] = pt.clock() - t0
    end
  end
end
local t1, t2 = median(times[model]), median(times[dp])
print(string.format("METRIC w9_dp_1dev_step_s %.4f s", t1))
print(string.format("METRIC w9_dp_2dev_step_s %.4f s", t2))
print(string.format("METRIC w9_dp_speedup %.3f x", t1 / t2))
