-- Seed 003's tutorial of the customised DataParallel, in partrain (two CPU devices: dispatcher
-- workers cpu:1 and cpu:2). Run: partrain scripts/seed003_data_parallel.lua
--
-- Case one: a feature network A and a head network B. A returns its features as per-device
-- pieces (gather_to_one_device = false) and B takes them as they are (inputs_are_scattered =
-- true): no gather and no scatter in between; gradients still flow from B's loss into A.
-- Case two: A returns a nested table; except_keywords = {"out1", "out2"} keeps those per
-- device and gathers the rest.
local pt = require "partrain"
local nn, optim = pt.nn, pt.optim

local devices = {"cpu:1", "cpu:2"}

-- simple networks
local simple_networkA = nn.Module:extend("simple_networkA")
function simple_networkA:__init() self.model = nn.Linear(5, 2) end
function simple_networkA:forward(input) return self.model(input) end

local simple_networkB = nn.Module:extend("simple_networkB")
function simple_networkB:__init() self.model = nn.Linear(2, 1) end
function simple_networkB:forward(input) return self.model(input) end

-- complex network
local complex_networkA = nn.Module:extend("complex_networkA")
function complex_networkA:__init() self.model = nn.Linear(5, 2) end
function complex_networkA:forward(input)
  local output = self.model(input)
  return {outputs = {out1 = output, out2 = output}, second_output = output}
end

local function type_of(v)
  if pt.is_tensor(v) then return "Tensor " .. v:dtype() end
  if type(v) == "table" then return "list of " .. #v end
  return type(v)
end

local function size_of(t) return "{" .. table.concat(t:size(), ", ") .. "}" end

local input = pt.ones(16, 5)

-- Case one ----------------------------------------------------------------------------------
pt.manual_seed(0)
local netA, netB = simple_networkA(), simple_networkB()
local optimizer_A = optim.Adam(netA:parameters(), {lr = 1e-4, betas = {0.5, 0.9}})
local optimizer_B = optim.Adam(netB:parameters(), {lr = 1e-4, betas = {0.5, 0.9}})
-- reference: the same step without DataParallel
netB(netA(input)):mean():backward()
local ref_gA = netA.model.weight.grad:clone()
netA:zero_grad({set_to_none = true})
netB:zero_grad({set_to_none = true})

local dA = nn.DataParallel(netA, {devices = devices, gather_to_one_device = false}) -- don't gather
local dB = nn.DataParallel(netB, {devices = devices, inputs_are_scattered = true})  -- inputs are scattered
local A_out = dA(input)
local B_out = dB(A_out)
local loss = B_out:mean()
loss:backward()
local gA = netA.model.weight.grad:clone()
optimizer_A:step()
optimizer_B:step()
print("test case one")
print("  type of A_out is " .. type_of(A_out))              -- a per-device list
print("  size of A_out content is " .. size_of(A_out[1]))    -- {16 / 2 devices, 2}
print("  B_out size " .. size_of(B_out) .. string.format(", loss %.6f", loss:item()))
print(string.format("  A's weight gradient |grad| = %.6f, max difference to one device %.2g",
  gA:norm():item(), (gA - ref_gA):abs():max():item()))

-- Case two ----------------------------------------------------------------------------------
pt.manual_seed(0)
local cA, cB = complex_networkA(), simple_networkB()
local dcA = nn.DataParallel(cA, {devices = devices, except_keywords = {"out1", "out2"}}) -- gather all but out1, out2
local dcB = nn.DataParallel(cB, {devices = devices, inputs_are_scattered = true})
local out = dcA(input)
local out1, out2 = out.outputs.out1, out.outputs.out2
print("test case two")
print(string.format("  out1 type is %s; out2 type is %s", type_of(out1), type_of(out2)))
print("  out1 element size is " .. size_of(out1[1]))
local second_output = out.second_output
print("  second output type is " .. type_of(second_output))
print("  second output size is " .. size_of(second_output))
local B_in = {}
for i = 1, #out1 do B_in[i] = out1[i] + out2[i] end -- per device, no gather
local B_out2 = dcB(B_in)
print("  B_out size " .. size_of(B_out2))
B_out2:mean():backward()
print(string.format("  A's weight gradient |grad| = %.6f", cA.model.weight.grad:norm():item()))

-- sort_and_gather: devices listed out of order; gathering follows the device ids -------------
local Who = nn.Module:extend("Who")
function Who:forward(x) return x, pt.worker_id() end
local x = pt.arange(1, 5):reshape(4, 1)
local _, who = nn.DataParallel(Who(), {devices = {"cpu:2", "cpu:1"}})(x)
local _, swho = nn.DataParallel(Who(), {devices = {"cpu:2", "cpu:1"}, sort_and_gather = true})(x)
print("sort_and_gather")
print("  devices {cpu:2, cpu:1}: pieces gathered from workers " .. table.concat(who:tolist(), ", ")
  .. "; with sort_and_gather from workers " .. table.concat(swho:tolist(), ", "))
