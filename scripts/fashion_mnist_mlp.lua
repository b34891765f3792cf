-- Train an MLP 784-256-128-10 on Fashion-MNIST, print test accuracy per epoch, save a checkpoint.
--   partrain scripts/fashion_mnist_mlp.lua [epochs] [checkpoint path]
--     epochs            a positive integer (default 10)
--     checkpoint path   where to save (default mlp.safetensors)
-- Anything else (a third argument, epochs that are not a positive integer) stops with the usage.
-- Data: Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist).
local pt = require "partrain"
local nn, optim, data = pt.nn, pt.optim, pt.data

local USAGE = "usage: partrain scripts/fashion_mnist_mlp.lua [epochs] [checkpoint path]\n"
  .. "  epochs: a positive integer (default 10); checkpoint path: default mlp.safetensors"
local args = arg or {}
if args[1] == "-h" or args[1] == "--help" then
  print(USAGE)
  return
end
local function usage_error(msg) error("fashion_mnist_mlp: " .. msg .. "\n" .. USAGE, 0) end
if #args > 2 then usage_error(("too many arguments (%d)"):format(#args)) end
local epochs = 10
if args[1] ~= nil then
  -- digits only: tonumber also took "1e1", "0x3" and " 3"
  epochs = args[1]:match("^%d+$") and math.tointeger(tonumber(args[1]))
  if not epochs or epochs < 1 then
    usage_error(("epochs must be a positive integer, got '%s'"):format(args[1]))
  end
end
local ckpt = args[2] or "mlp.safetensors"
if ckpt == "" then usage_error("the checkpoint path is empty") end
do -- a checkpoint that cannot be written fails now, not after the training
  local probe = ckpt .. ".tmp" -- what pt.save writes first
  local f, why = io.open(probe, "wb")
  if not f then usage_error(("cannot write the checkpoint: %s"):format(why)) end
  f:close()
  os.remove(probe)
end
local dir = os.getenv("FASHION_MNIST_DIR") or "/usr/share/datasets/fashion-mnist/"

pt.manual_seed(42)
local train = data.idx(dir .. "train-images-idx3-ubyte.gz", dir .. "train-labels-idx1-ubyte.gz")
local test  = data.idx(dir .. "t10k-images-idx3-ubyte.gz",  dir .. "t10k-labels-idx1-ubyte.gz")

local model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                            nn.Linear(128, 10))
local opt    = optim.SGD(model:parameters(), {lr = 0.05, momentum = 0.9})
-- DESIGN.md's 5 constant-rate epochs stop near 0.86 here, in PyTorch too (measured: 0.855);
-- annealing the rate over 10 epochs reaches the 0.885 goal (measured: 0.892 in session 1, 0.8905 in sessions 2 and 3).
local sched  = optim.CosineAnnealingLR(opt, {T_max = epochs})
local loader = data.DataHandler(train, {batch = 64, shuffle = true, seed = 42})

for epoch = 1, epochs do
  for x, y in loader:batches() do          -- progress bar on a TTY
    opt:zero_grad()
    local loss = nn.cross_entropy(model(x), y)
    loss:backward()
    opt:step()
  end
  sched:step()
  print(string.format("epoch %d  test accuracy %.4f", epoch, pt.metrics.accuracy(model, test)))
end
pt.save(ckpt, model, {optimizer = opt, meta = {epochs = tostring(epochs)}})
print("saved " .. ckpt)
