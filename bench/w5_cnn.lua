-- W5: CNN conv5x5(32)-relu-pool2-conv5x5(64)-relu-pool2-fc1024-relu-fc10 on 10k synthetic
-- 28x28 samples at batch 64: forward, backward and an SGD step per batch. Prints the epoch time.
local pt = require "partrain"
local nn, optim = pt.nn, pt.optim
require "partrain.nn_conv"
pt.manual_seed(0)
local N, B = tonumber(os.getenv("W5_SAMPLES")) or 10000, 64
local x = pt.rand(N, 1, 28, 28)
local y = pt.randint(1, 11, {N})
local model = nn.Sequential(nn.Conv2d(1, 32, 5, {padding = 2}), nn.ReLU(), nn.MaxPool2d(2),
  nn.Conv2d(32, 64, 5, {padding = 2}), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
  nn.Linear(3136, 1024), nn.ReLU(), nn.Linear(1024, 10))
local opt = optim.SGD(model:parameters(), {lr = 0.01, momentum = 0.9})
local function epoch()
  for i = 1, N, B do
    local n = math.min(B, N - i + 1)
    local xb, yb = x:narrow(1, i, n), y:narrow(1, i, n)
    opt:zero_grad()
    local loss = nn.cross_entropy(model(xb), yb)
    loss:backward()
    opt:step()
  end
end
local save = N
N = 2 * B; epoch(); N = save -- warm-up
local t0 = pt.clock()
epoch()
print(string.format("METRIC w5_cnn_s %.4f s", pt.clock() - t0))
