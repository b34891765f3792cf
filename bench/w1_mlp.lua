-- W1: one epoch of the MLP 784-256-128-10 at batch 64, SGD momentum 0.9 lr 0.05, on 60000
-- synthetic float32 inputs with random labels (independent of the data loader). Times the
-- training loop only, 3 repetitions; prints METRIC w1_epoch_s <median> s and, when built, the
-- same epoch's matrix products alone (bench/w1_gemm_floor.c) as METRIC w1_gemm_floor_s.
local pt = require "partrain"
local nn, optim = pt.nn, pt.optim

local N, B = 60000, 64
local reps = tonumber(os.getenv("W1_REPS") or "3")
pt.manual_seed(1)
local xs, ys = {}, {}
for i = 1, N // B + (N % B > 0 and 1 or 0) do
  local b = math.min(B, N - (i - 1) * B)
  xs[i] = pt.rand(b, 784)
  ys[i] = pt.randint(1, 11, {b})
end

-- wall clock: the data area's monotonic clock when built in; CPU time otherwise (BLAS runs on
-- the calling thread by default, so the two agree within noise)
local now = pt._data_now or pt.clock or os.clock

local times = {}
for r = 1, reps do
  local model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
    nn.Linear(128, 10))
  local opt = optim.SGD(model:parameters(), {lr = 0.05, momentum = 0.9})
  collectgarbage()
  local t0 = now()
  local loss
  for i = 1, #xs do
    opt:zero_grad()
    loss = nn.cross_entropy(model(xs[i]), ys[i])
    loss:backward()
    opt:step()
  end
  local dt = now() - t0
  times[#times + 1] = dt
  io.stderr:write(string.format("rep %d: %.3f s (last loss %.4f)\n", r, dt, loss:item()))
end
table.sort(times)
print(string.format("METRIC w1_epoch_s %.4f s", times[(#times + 1) // 2]))
-- what W1's GEMMs alone take here, through the same pt_gemm split: the floor W1 cannot go under
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "c_helper.lua")
local floor = helper.metric("w1_gemm_floor", "w1_gemm_floor_s", reps)
if floor then print(string.format("METRIC w1_gemm_floor_s %.4f s", floor)) end
