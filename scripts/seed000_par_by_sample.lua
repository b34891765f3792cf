-- Seed 000 (rotta_rs par_by_sample), in partrain.
--   partrain scripts/seed000_par_by_sample.lua              the seed's toy example
--   partrain scripts/seed000_par_by_sample.lua fmnist [N]   per-sample training on the first N
--                                                           Fashion-MNIST images (default 2000)
-- The toy example: a dataset of two samples, a 1-8-1 model shared by 2 threads, MSE, Adam,
-- 10 epochs printing the summed loss. Each call processes one window of n samples (here the
-- whole dataset), fn runs on its own thread per sample, gradients add up in the shared model.
local pt = require "partrain"
local nn, optim, data = pt.nn, pt.optim, pt.data

local mode, count = arg and arg[1], tonumber(arg and arg[2] or "")

-- struct MyDataset { data, label } with get(idx) and len()
local MyDataset = {}
MyDataset.__index = MyDataset
function MyDataset.init(d, l) return setmetatable({data = d, label = l}, MyDataset) end
function MyDataset:get(i) return {self.data[i], self.label[i]} end
function MyDataset:len() return #self.data end

-- struct MyModel { linear_1, linear_2, loss_fn }
local MyModel = nn.Module:extend("MyModel")
function MyModel:__init(n_in, hidden, n_out, loss_fn)
  self.linear_1 = nn.Linear(n_in, hidden)
  self.linear_2 = nn.Linear(hidden, n_out)
  self.loss_fn = loss_fn
end
function MyModel:forward(x) return self.linear_2(self.linear_1(x)) end

if mode ~= "fmnist" then
  pt.manual_seed(42)
  local dataset = MyDataset.init({pt.tensor({{1.0}}), pt.tensor({{3.0}})},
                                 {pt.tensor({{2.0}}), pt.tensor({{4.0}})})
  local datahandler = data.DataHandler(dataset)
  local my_model = MyModel(1, 8, 1, nn.MSELoss())
  local optimizer = optim.Adam(my_model:parameters(), 0.001)
  for epoch = 0, 9 do
    local losses, model = datahandler:par_by_sample(my_model, 2, function(sample, model)
      local input, label = sample[1], sample[2]
      local x = model:forward(input)
      local loss = model.loss_fn(x, label)
      loss:backward()
      return loss
    end)
    local total = 0
    for _, l in ipairs(losses) do total = total + l:item() end
    print(("epoch:%d | loss => %.6f"):format(epoch, total))
    optimizer:step()
    optimizer:zero_grad()
    my_model = model
  end
  return
end

-- Fashion-MNIST: per-sample training (batch 1 per sample) with a whole epoch per call
local dir = os.getenv("FMNIST_DIR") or "/usr/share/datasets/fashion-mnist/"
local f = io.open(dir .. "train-images-idx3-ubyte.gz", "rb")
if not f then
  print("Fashion-MNIST not found in " .. dir .. " (set FMNIST_DIR); skipping")
  return
end
f:close()
count = count or 2000
local full = data.idx(dir .. "train-images-idx3-ubyte.gz", dir .. "train-labels-idx1-ubyte.gz")
local test = data.idx(dir .. "t10k-images-idx3-ubyte.gz", dir .. "t10k-labels-idx1-ubyte.gz")
local idx = {}
for i = 1, math.min(count, full:len()) do idx[i] = i end
local train = data.Subset(full, idx)
pt.manual_seed(42)
local model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
local opt = optim.SGD(model:parameters(), {lr = 0.01})
local handler = data.DataHandler(train)
local threads = tonumber(os.getenv("THREADS") or "2")
local now = pt._data_now or os.clock
for epoch = 1, 2 do
  local clock0 = now()
  local losses = handler:par_by_sample(model, threads, function(sample, m)
    local loss = nn.cross_entropy(m(sample[1]:view(1, 784)), pt.tensor({sample[2]}, {dtype = "int64"}))
    loss:backward()
    return loss:item()
  end, {epoch = true, after_window = function() opt:step(); opt:zero_grad() end})
  local sum = 0
  for _, l in ipairs(losses) do sum = sum + l end
  local dt = now() - clock0
  print(("epoch %d: %d samples, mean loss %.4f, %.0f samples/s, test accuracy %.4f"):format(
    epoch, #losses, sum / #losses, #losses / math.max(dt, 1e-9), pt.metrics.accuracy(model, test)))
end
