-- W4: 2048x2048 float32 matrix product through the API (pt.mm), against the library it runs on
-- called directly. Prints METRIC w4_sgemm_gflops (partrain) and, when build/bench_sgemm_direct
-- is next to the partrain executable, runs it too (alternating rounds) and prints METRIC
-- w4_openblas_direct_gflops, w4_onednn_direct_gflops when pt.sgemm_backend() is "onednn", and
-- the ratio w4_sgemm_vs_direct against the direct call of pt.sgemm_backend()'s library.
--   build/partrain bench/w4_sgemm.lua [n=2048] [reps=7]
local pt = require "partrain"

local n = tonumber(arg and arg[1]) or 2048
local reps = math.max(5, tonumber(arg and arg[2]) or 7)

-- a wall clock (BLAS runs on several threads, so os.clock's CPU time would be wrong)
local now = pt.now or pt.clock
if not now then
  now = function()
    local p = io.popen("date +%s.%N")
    local s = p:read("*l")
    p:close()
    return tonumber(s)
  end
end

pt.manual_seed(1)
local a = pt.randn(n, n)
local b = pt.randn(n, n)

local function median(t)
  table.sort(t)
  return t[math.floor(#t / 2) + 1]
end

-- one round: reps timed calls after a warm-up; -> GFLOP/s of the median call
local function api_round()
  local times = {}
  local c = pt.mm(a, b) -- warm-up
  c = nil
  for r = 1, reps do
    collectgarbage() -- the previous output is freed outside the timed region, as in the C run
    local t0 = now()
    local out = pt.mm(a, b)
    times[r] = now() - t0
    out = nil
  end
  return 2 * n * n * n / median(times) * 1e-9
end

-- the direct OpenBLAS reference, built as bench_sgemm_direct beside this partrain
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "c_helper.lua")
local direct = helper.path("sgemm_direct")

local backend = pt.sgemm_backend and pt.sgemm_backend() or "openblas"
local function direct_round(lib)
  return helper.metric("sgemm_direct", "w4_" .. lib .. "_direct_gflops", n, reps, lib)
end

-- alternate rounds so both sides see the same machine load; report medians over rounds
local rounds = direct and 3 or 1
local api, ref, ref_openblas = {}, {}, {}
for r = 1, rounds do
  api[r] = api_round()
  if direct then
    ref_openblas[#ref_openblas + 1] = direct_round("openblas")
    if backend ~= "openblas" then ref[#ref + 1] = direct_round(backend) end
  end
end
if backend == "openblas" then ref = ref_openblas end
local gflops = median(api)
print(string.format("# pt.mm %dx%d float32: %d rounds of %d calls", n, n, rounds, reps))
print(string.format("METRIC w4_sgemm_gflops %.2f GFLOP/s", gflops))
if #ref > 0 then
  local d = median(ref)
  print(string.format("METRIC w4_openblas_direct_gflops %.2f GFLOP/s", median(ref_openblas)))
  if backend ~= "openblas" then print(string.format("METRIC w4_%s_direct_gflops %.2f GFLOP/s", backend, d)) end
  print(string.format("METRIC w4_sgemm_vs_direct %.3f ratio", gflops / d))
end
