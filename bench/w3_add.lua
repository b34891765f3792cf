-- W3: `c = a + b` on 1-element float32 tensors, ns per op from Lua.
-- Prints METRIC w3_add_ns <median of 5 repeats> ns.
local pt = require "partrain"

local N = tonumber(arg and arg[1]) or 1000000
local REPEATS = 5

local a = pt.tensor({1.5})
local b = pt.tensor({2.25})

local function run(n)
  local c
  for _ = 1, n do c = a + b end
  return c
end

assert(run(10):item() == 3.75, "w3_add: wrong result")
run(N // 10) -- warm-up

local clock = pt.clock -- wall time, as the PyTorch side (os.clock would add other threads' CPU time)
local times = {}
for r = 1, REPEATS do
  local t0 = clock()
  run(N)
  times[r] = (clock() - t0) * 1e9 / N
end
table.sort(times)
local median = times[(REPEATS + 1) // 2]
io.write(string.format("METRIC w3_add_ns %.1f ns\n", median))
