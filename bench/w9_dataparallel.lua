-- W9: nn.DataParallel over 2 cpu devices vs 1 device. The W5 CNN
-- (conv5x5(32)-relu-pool2-conv5x5(64)-relu-pool2-fc1024-relu-fc10) on batches of 256 synthetic
-- 28x28 samples: forward, backward and an SGD step per batch, timed with pt.clock().
--   1 device:  the plain module on device cpu:1, i.e. one dispatcher worker thread (a cpu device
--              is one thread; this is what each DataParallel replica gets)
--   2 devices: nn.DataParallel(model, {devices = {"cpu:1", "cpu:2"}}) from the caller
--   plain:     the plain module in the caller, its ops split over all intra-op threads (context:
--              intra-op parallelism is the other way to use the cores)
-- Prints the median step time of each, w9_dp_speedup (1 device / 2 devices) and
-- w9_dp_vs_intraop (plain / 2 devices).
--   W9_STEPS (default 6) timed steps per round, W9_RUNS (default 3) rounds, interleaved.
local pt = require "partrain"
local nn, optim = pt.nn, pt.optim
pt.manual_seed(0)
local B = 256
local steps = tonumber(os.getenv("W9_STEPS")) or 6
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

-- n steps of the plain module on one worker thread; returns the step times
local function on_one_device(m, xb, yb, n)
  local p = require "partrain"
  local o = p.optim.SGD(m:parameters(), {lr = 0.01, momentum = 0.9})
  local t = {}
  for i = 0, n do -- step 0 warms the worker up
    local t0 = p.clock()
    o:zero_grad()
    p.nn.cross_entropy(m(xb), yb):backward()
    o:step()
    if i > 0 then t[i] = p.clock() - t0 end
  end
  return t
end
local pool = pt._Pool(1)

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) // 2] or (t[n // 2] + t[n // 2 + 1]) / 2
end

local t_one, t_dp, t_plain = {}, {}, {}
step(model); step(dp) -- warm-up (worker states, allocator)
for _ = 1, runs do -- interleaved so that machine load hits all alike
  pool:submit(1, on_one_device, model, x, y, steps)
  local _, _, ok, times = pool:next()
  assert(ok, times)
  for _, t in ipairs(times) do t_one[#t_one + 1] = t end
  for _, pair in ipairs({{dp, t_dp}, {model, t_plain}}) do
    for _ = 1, steps do
      local t0 = pt.clock()
      step(pair[1])
      pair[2][#pair[2] + 1] = pt.clock() - t0
    end
  end
end
pool:close()
local one, two, plain = median(t_one), median(t_dp), median(t_plain)
print(string.format("METRIC w9_dp_1dev_step_s %.4f s", one))
print(string.format("METRIC w9_dp_2dev_step_s %.4f s", two))
print(string.format("METRIC w9_plain_intraop_step_s %.4f s", plain))
print(string.format("METRIC w9_dp_speedup %.3f x", one / two))
print(string.format("METRIC w9_dp_vs_intraop %.3f x", plain / two))
