-- nn.DataParallel (lua/partrain/data_parallel.lua, lib/data_parallel.c): outputs and gradients
-- equal the single-device module's for every option, the seed 003 test cases, BatchNorm's
-- first-replica rule, and every error message.
local pt = require "partrain"
local nn = pt.nn

local TOL = 1e-10
local F64 = {dtype = "float64"}

local function shape(t) return table.concat(t:size(), ",") end

local function assert_close(a, b, tol)
  assert.is_true(pt.is_tensor(a), "expected a tensor, got " .. type(a))
  assert.is_true(pt.is_tensor(b), "expected a tensor, got " .. type(b))
  assert.are.equal(shape(b), shape(a))
  local d = a:numel() == 0 and 0 or (a:double() - b:double()):abs():max():item()
  assert.is_true(d <= (tol or TOL), "max difference " .. d)
end

local function grads(model)
  local g = {}
  for i, p in ipairs(model:parameters()) do
    assert.is_not_nil(p.grad, "parameter " .. i .. " has no gradient")
    g[i] = p.grad:clone()
  end
  return g
end

local function zero(model)
  for _, p in ipairs(model:parameters()) do p.grad = nil end
end

local function assert_grads(model, expected)
  local got = grads(model)
  assert.are.equal(#expected, #got)
  for i = 1, #got do assert_close(got[i], expected[i]) end
end

local function mlp()
  return nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3)):double()
end

local function errmsg(fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok, "expected an error")
  return tostring(err)
end

local TWO = {devices = {"cpu:1", "cpu:2"}}

-- a module returning nested tables: {sum = y1 + y2, parts = {a = y1, b = y2}}, plus a number
local Nested = nn.Module:extend("Nested")
function Nested:__init()
  self.fa = nn.Linear(5, 3):double()
  self.fb = nn.Linear(2, 3):double()
end
function Nested:forward(inp)
  local y1, y2 = self.fa(inp.x), self.fb(inp.more.z)
  return {sum = y1 + y2, parts = {a = y1, b = y2}, count = inp.x:size(1)}
end

describe("DataParallel outputs and gradients", function()
  it("equal the single-device module's (even batch)", function()
    pt.manual_seed(1)
    local model = mlp()
    local x = pt.randn(8, 5, F64)
    local ref = model(x)
    ;(ref * ref):sum():backward()
    local g = grads(model)
    zero(model)
    local dp = nn.DataParallel(model, TWO)
    local out = dp(x)
    assert_close(out, ref)
    assert.is_true(out.requires_grad)
    assert.are.equal("DataParallelGatherBackward", out.grad_fn)
    ;(out * out):sum():backward()
    assert_grads(model, g)
  end)

  it("splits 5 samples into 3 + 2 and gathers them in order", function()
    pt.manual_seed(2)
    local model = mlp()
    local Probe = nn.Module:extend("Probe")
    function Probe:__init(m) self.m = m end
    function Probe:forward(x) return {y = self.m(x), n = x:size(1), worker = pt.worker_id()} end
    local probe = Probe(model)
    local x = pt.randn(5, 5, F64)
    local ref = model(x)
    ref:sum():backward()
    local g = grads(model)
    zero(model)
    local out = nn.DataParallel(probe, TWO)(x)
    assert.are.same({3, 2}, out.n:tolist())
    assert.are.same({1, 2}, out.worker:tolist())
    assert.are.equal("int64", out.n:dtype())
    assert_close(out.y, ref)
    out.y:sum():backward()
    assert_grads(model, g)
  end)

  it("runs one device when the batch has one sample", function()
    pt.manual_seed(3)
    local model = mlp()
    local Probe = nn.Module:extend("Probe1")
    function Probe:__init(m) self.m = m end
    function Probe:forward(x) return self.m(x), pt.worker_id() end
    local x = pt.randn(1, 5, F64)
    local ref = model(x)
    ref:sum():backward()
    local g = grads(model)
    zero(model)
    local out, workers = nn.DataParallel(Probe(model), {devices = {"cpu:1", "cpu:2", "cpu:3"}})(x)
    assert.are.same({1}, workers:tolist())
    assert_close(out, ref)
    out:sum():backward()
    assert_grads(model, g)
  end)

  it("passes the gradient of an input that requires grad back through the scatter", function()
    pt.manual_seed(4)
    local model = mlp()
    local x = pt.randn(7, 5, F64):requires_grad_()
    model(x):pow(2):sum():backward()
    local gx, g = x.grad:clone(), grads(model)
    x.grad = nil
    zero(model)
    nn.DataParallel(model, TWO)(x):pow(2):sum():backward()
    assert_close(x.grad, gx)
    assert_grads(model, g)
  end)

  it("reaches a graph before the DataParallel (input computed from a parameter)", function()
    pt.manual_seed(5)
    local model = mlp()
    local pre = nn.Linear(3, 5):double()
    local x0 = pt.randn(6, 3, F64)
    model(pre(x0)):sum():backward()
    local gp, g = grads(pre), grads(model)
    zero(pre)
    zero(model)
    nn.DataParallel(model, TWO)(pre(x0)):sum():backward()
    assert_grads(pre, gp)
    assert_grads(model, g)
  end)

  it("scatters nested table inputs and gathers nested table outputs", function()
    pt.manual_seed(6)
    local net = Nested()
    local inp = {x = pt.randn(5, 5, F64), more = {z = pt.randn(5, 2, F64)}}
    local ref = net(inp)
    ;(ref.sum:sum() + ref.parts.a:pow(2):sum()):backward()
    local g = grads(net)
    zero(net)
    local out = nn.DataParallel(net, TWO)(inp)
    assert_close(out.sum, ref.sum)
    assert_close(out.parts.a, ref.parts.a)
    assert_close(out.parts.b, ref.parts.b)
    assert.are.same({3, 2}, out.count:tolist())
    ;(out.sum:sum() + out.parts.a:pow(2):sum()):backward()
    assert_grads(net, g)
  end)

  it("gathers 0-d outputs (losses) and numbers into vectors, and backpropagates from them", function()
    pt.manual_seed(7)
    local model = mlp()
    local LossNet = nn.Module:extend("LossNet")
    function LossNet:__init(m) self.m = m end
    function LossNet:forward(x, y) return nn.mse_loss(self.m(x), y, {reduction = "sum"}), 0.5 * x:size(1) end
    local x, y = pt.randn(6, 5, F64), pt.randn(6, 3, F64)
    nn.mse_loss(model(x), y, {reduction = "sum"}):backward()
    local g = grads(model)
    zero(model)
    local losses, halves = nn.DataParallel(LossNet(model), TWO)(x, y)
    assert.are.same({2}, losses:size())
    assert.are.same({1.5, 1.5}, halves:tolist())
    assert.are.equal("float64", halves:dtype())
    assert_close(losses:sum(), nn.mse_loss(model(x), y, {reduction = "sum"}))
    losses:sum():backward()
    assert_grads(model, g)
  end)

  it("passes values that are not tensors to every replica and keeps equal results", function()
    local Scale = nn.Module:extend("Scale")
    function Scale:forward(x, opts) return x * opts.factor, opts.tag end
    local x = pt.randn(4, 2, F64)
    local out, tag = nn.DataParallel(Scale(), TWO)(x, {factor = 3, tag = "same"})
    assert_close(out, x * 3)
    assert.are.equal("same", tag)
  end)

  it("scatters and gathers along another dim", function()
    pt.manual_seed(8)
    local model = mlp()
    local Tr = nn.Module:extend("Tr")
    function Tr:__init(m) self.m = m end
    function Tr:forward(x) return self.m(x:t()):t() end -- x {5, N} -> {3, N}
    local net = Tr(model)
    local x = pt.randn(5, 6, F64)
    local ref = net(x)
    ref:pow(2):sum():backward()
    local g = grads(model)
    zero(model)
    local out = nn.DataParallel(net, {devices = {"cpu:1", "cpu:2"}, dim = 2})(x)
    assert_close(out, ref)
    out:pow(2):sum():backward()
    assert_grads(model, g)
  end)

  it("adds into existing gradients and honours retain_graph", function()
    pt.manual_seed(9)
    local model = mlp()
    local x = pt.randn(4, 5, F64)
    model(x):sum():backward()
    local g = grads(model)
    zero(model)
    local out = nn.DataParallel(model, TWO)(x):sum()
    out:backward({retain_graph = true})
    out:backward()
    local got = grads(model)
    for i = 1, #g do assert_close(got[i], g[i] * 2) end
    assert.has_error(function() out:backward() end)
  end)

  it("is deterministic: the same call gives bitwise-identical gradients", function()
    pt.manual_seed(10)
    local model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    local x = pt.randn(64, 16)
    local dp = nn.DataParallel(model, {devices = {"cpu:1", "cpu:2", "cpu:3"}})
    dp(x):pow(2):sum():backward()
    local g1 = grads(model)
    for _ = 1, 3 do
      zero(model)
      dp(x):pow(2):sum():backward()
      local g2 = grads(model)
      for i = 1, #g1 do assert.are.equal(0, (g1[i] - g2[i]):abs():max():item()) end
    end
  end)

  it("adds through an outer accumulation redirect (inside par_by_sample)", function()
    pt.manual_seed(20)
    local model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)):double()
    local ds = {get = function(_, i) return pt.ones(4, 3, F64) * i end, len = function() return 4 end}
    local function run(use_dp)
      zero(model)
      pt.data.DataHandler(ds):par_by_sample(model, 2, function(x, m)
        local net = use_dp and pt.nn.DataParallel(m, {devices = {"cpu:1", "cpu:2"}}) or m
        local l = net(x):pow(2):sum()
        l:backward()
        return l:item()
      end, {windows = 2})
      return grads(model)
    end
    local plain = run(false)
    assert_grads(model, plain) -- sanity: grads() of the same state
    run(true)
    assert_grads(model, plain)
  end)

  it("records nothing under no_grad", function()
    local model = mlp()
    local x = pt.randn(4, 5, F64)
    local out = pt.no_grad(function() return nn.DataParallel(model, TWO)(x) end)
    assert.is_false(out.requires_grad)
    assert_close(out, pt.no_grad(function() return model(x) end))
  end)

  it("calls the module directly with one device: no scatter, no gather", function()
    local model = mlp()
    local x = pt.randn(3, 5, F64)
    local out = nn.DataParallel(model, {devices = {"cpu:1"}})(x)
    assert.is_true(pt.is_tensor(out))
    assert.are.equal("LinearBackward", out.grad_fn)
    assert_close(out, model(x))
    -- the seed's A -> B pipeline with one device: A's output comes back as it is (no gather)
    local a = nn.DataParallel(model, {devices = {"cpu:1"}, gather_to_one_device = false})(x)
    assert.is_true(pt.is_tensor(a))
    local tail = nn.Linear(3, 1):double()
    local b = nn.DataParallel(tail, {devices = {"cpu:1"}, inputs_are_scattered = true})
    local y = b(a)
    assert_close(y, tail(model(x)))
    -- and a per-device list of one, as with more devices, is that device's input
    assert_close(b({model(x)}), tail(model(x)))
    y:sum():backward()
    assert.is_not_nil(model[1].weight.grad)
  end)

  it("registers the wrapped module as its child", function()
    local model = mlp()
    local dp = nn.DataParallel(model, TWO)
    assert.are.equal(model, dp.module)
    assert.are.equal(#model:parameters(), #dp:parameters())
    for i, p in ipairs(model:parameters()) do assert.are.equal(p, dp:parameters()[i]) end
    assert.is_not_nil(dp:state_dict()["module.1.weight"])
  end)

  it("follows train()/eval() of the wrapper (dropout)", function()
    local model = nn.Sequential(nn.Dropout(0.5)):double()
    local dp = nn.DataParallel(model, TWO)
    local x = pt.ones(6, 10, F64)
    dp:eval()
    assert_close(dp(x), x)
    dp:train()
    assert.is_true((dp(x) - x):abs():max():item() > 0)
  end)

  it("gives autograd.grad and backward{inputs=} the input's gradient and no parameter one", function()
    local m = nn.Linear(3, 2):double()
    local dp = nn.DataParallel(m, TWO)
    local x = pt.randn(4, 3, F64):requires_grad_()
    local gx = pt.autograd.grad(dp(x):sum(), {x})[1]
    local ref = x:detach():clone():requires_grad_()
    m(ref):sum():backward()
    assert_close(gx, ref.grad)
    m.weight.grad, m.bias.grad = nil, nil -- ref's pass filled them
    gx = pt.autograd.grad(dp(x):sum(), {x})[1]
    assert.is_nil(m.weight.grad) -- torch's autograd.grad leaves .grad alone
    local x2 = x:detach():clone():requires_grad_()
    dp(x2):sum():backward({inputs = {x2}})
    assert_close(x2.grad, ref.grad)
    assert.is_nil(m.weight.grad)
    -- a parameter inside the replicas cannot be one of the differentiated tensors: said so
    local ok, err = pcall(pt.autograd.grad, dp(x):sum(), {x, m.weight})
    assert.is_false(ok)
    assert.matches("nn.DataParallel: inputs%[2%] is a parameter of the replicated module: its gradient is "
      .. "added into .grad by the replicas, so it cannot be taken with autograd.grad or backward{inputs=}", err)
  end)

  it("replays random ops in the replicas with pt.manual_seed (dropout)", function()
    local dp = nn.DataParallel(nn.Sequential(nn.Dropout(0.5)), TWO)
    local x = pt.ones(6, 10)
    pt.manual_seed(5)
    local a = dp(x)
    pt.manual_seed(5)
    local b = dp(x)
    local c = dp(x)
    assert.is_true(pt.equal(a, b))
    assert.is_false(pt.equal(a, c))
    -- the two replicas draw different masks
    assert.is_false(pt.equal(a:narrow(1, 1, 3), a:narrow(1, 4, 3)))
  end)
end)

describe("DataParallel and BatchNorm", function()
  it("BatchNorm1d: the first replica updates the running statistics, all use batch statistics", function()
    pt.manual_seed(11)
    local bn = nn.BatchNorm1d(3, {dtype = "float64"})
    local ref = nn.BatchNorm1d(3, {dtype = "float64"})
    local x = pt.randn(8, 3, F64) * 2 + 1
    local out = nn.DataParallel(bn, TWO)(x)
    -- replica 1 saw rows 1..4, replica 2 rows 5..8, each normalised with its own statistics
    local a = ref(x:narrow(1, 1, 4))
    local b = nn.BatchNorm1d(3, {dtype = "float64"})(x:narrow(1, 5, 4))
    assert_close(out, pt.cat({a, b}, 1))
    assert_close(bn.running_mean, ref.running_mean)
    assert_close(bn.running_var, ref.running_var)
    assert.are.equal(1, bn.num_batches_tracked:item())
    -- eval: every replica uses the shared running statistics
    bn:eval()
    ref:eval()
    assert_close(nn.DataParallel(bn, TWO)(x), ref(x))
  end)

  it("BatchNorm2d: the same rule, and gradients equal the per-chunk reference", function()
    pt.manual_seed(12)
    local function net() return nn.Sequential(nn.Conv2d(1, 2, 3, {dtype = "float64"}), nn.BatchNorm2d(2, {dtype = "float64"})) end
    local m = net()
    local r1 = net()
    r1:load_state_dict(m:state_dict())
    local x = pt.randn(6, 1, 5, 5, F64)
    local out = nn.DataParallel(m, TWO)(x)
    local a = r1(x:narrow(1, 1, 3))
    -- the second chunk with the same parameters but its own running statistics
    local r2 = net()
    r2:load_state_dict(m:state_dict())
    local b = r2(x:narrow(1, 4, 3))
    assert_close(out, pt.cat({a, b}, 1))
    assert_close(m[2].running_mean, r1[2].running_mean)
    assert_close(m[2].running_var, r1[2].running_var)
    out:pow(2):sum():backward()
    ;(a:pow(2):sum()):backward()
    ;(b:pow(2):sum()):backward()
    for i, p in ipairs(m:parameters()) do
      assert_close(p.grad, r1:parameters()[i].grad + r2:parameters()[i].grad)
    end
  end)
end)

-- seed 003's networks
local SimpleA = nn.Module:extend("simple_networkA")
function SimpleA:__init() self.model = nn.Linear(5, 2):double() end
function SimpleA:forward(input) return self.model(input) end
local SimpleB = nn.Module:extend("simple_networkB")
function SimpleB:__init() self.model = nn.Linear(2, 1):double() end
function SimpleB:forward(input) return self.model(input) end
local ComplexA = nn.Module:extend("complex_networkA")
function ComplexA:__init() self.model = nn.Linear(5, 2):double() end
function ComplexA:forward(input)
  local output = self.model(input)
  return {outputs = {out1 = output, out2 = output}, second_output = output}
end

describe("DataParallel customised options (seed 003)", function()
  it("gather_to_one_device=false returns per-device lists that backpropagate", function()
    pt.manual_seed(13)
    local model = mlp()
    local x = pt.randn(5, 5, F64)
    local ref = model(x)
    ref:pow(2):sum():backward()
    local g = grads(model)
    zero(model)
    local out = nn.DataParallel(model, {devices = {"cpu:1", "cpu:2"}, gather_to_one_device = false})(x)
    assert.are.equal(2, #out)
    assert_close(out[1], ref:narrow(1, 1, 3))
    assert_close(out[2], ref:narrow(1, 4, 2))
    assert.are.equal("DataParallelPieceBackward", out[1].grad_fn)
    ;(out[1]:pow(2):sum() + out[2]:pow(2):sum()):backward()
    assert_grads(model, g)
  end)

  it("gather_to_one_device=false keeps the nested structure with lists at the leaves", function()
    local net = Nested()
    local inp = {x = pt.randn(4, 5, F64), more = {z = pt.randn(4, 2, F64)}}
    local ref = net(inp)
    local out = nn.DataParallel(net, {devices = {"cpu:1", "cpu:2"}, gather_to_one_device = false})(inp)
    assert.are.equal(2, #out.parts.a)
    assert_close(pt.cat(out.sum, 1), ref.sum)
    assert_close(pt.cat(out.parts.b, 1), ref.parts.b)
    assert.are.same({2, 2}, out.count)
  end)

  it("only the pieces that are used run their replica's backward", function()
    pt.manual_seed(14)
    local model = mlp()
    local x = pt.randn(4, 5, F64)
    model(x:narrow(1, 3, 2)):sum():backward()
    local g = grads(model)
    zero(model)
    local out = nn.DataParallel(model, {devices = {"cpu:1", "cpu:2"}, gather_to_one_device = false})(x)
    out[2]:sum():backward()
    assert_grads(model, g)
  end)

  it("test case one: A with gather_to_one_device=false feeds B with inputs_are_scattered=true", function()
    pt.manual_seed(15)
    local netA, netB = SimpleA(), SimpleB()
    local input = pt.ones(16, 5, F64)
    local ref = netB(netA(input))
    ref:mean():backward()
    local gA, gB = grads(netA), grads(netB)
    zero(netA)
    zero(netB)
    local dA = nn.DataParallel(netA, {devices = {"cpu:1", "cpu:2"}, gather_to_one_device = false})
    local dB = nn.DataParallel(netB, {devices = {"cpu:1", "cpu:2"}, inputs_are_scattered = true})
    local A_out = dA(input)
    assert.are.equal("table", type(A_out))
    assert.are.same({8, 2}, A_out[1]:size()) -- 16 / 2 devices
    local B_out = dB(A_out)
    assert_close(B_out, ref)
    B_out:mean():backward()
    assert_grads(netA, gA)
    assert_grads(netB, gB)
  end)

  it("test case two: except_keywords keeps out1/out2 per device and gathers the rest", function()
    pt.manual_seed(16)
    local netA, netB = ComplexA(), SimpleB()
    local input = pt.randn(16, 5, F64)
    local r = netA(input)
    local ref_second = r.second_output
    local ref = netB(r.outputs.out1 + r.outputs.out2)
    ;(ref:sum() + ref_second:pow(2):sum()):backward()
    local gA, gB = grads(netA), grads(netB)
    zero(netA)
    zero(netB)
    local dA = nn.DataParallel(netA, {devices = {"cpu:1", "cpu:2"}, except_keywords = {"out1", "out2"}})
    local dB = nn.DataParallel(netB, {devices = {"cpu:1", "cpu:2"}, inputs_are_scattered = true})
    local A_out = dA(input)
    local out1, out2 = A_out.outputs.out1, A_out.outputs.out2
    assert.are.equal(2, #out1)
    assert.are.same({8, 2}, out1[1]:size())
    assert.is_true(pt.is_tensor(A_out.second_output))
    assert.are.same({16, 2}, A_out.second_output:size())
    assert_close(A_out.second_output, ref_second)
    local B_in = {}
    for i = 1, #out1 do B_in[i] = out1[i] + out2[i] end
    local B_out = dB(B_in)
    assert_close(B_out, ref)
    ;(B_out:sum() + A_out.second_output:pow(2):sum()):backward()
    assert_grads(netA, gA)
    assert_grads(netB, gB)
  end)

  it("except_keywords apply at any depth, to whole subtrees", function()
    local net = Nested()
    local inp = {x = pt.randn(4, 5, F64), more = {z = pt.randn(4, 2, F64)}}
    local out = nn.DataParallel(net, {devices = {"cpu:1", "cpu:2"}, except_keywords = {"parts"}})(inp)
    assert.is_true(pt.is_tensor(out.sum))
    assert.are.equal(2, #out.parts.a)
    assert.are.equal(2, #out.parts.b)
    assert.is_true(pt.is_tensor(out.count))
  end)

  it("sort_and_gather gathers in ascending device order", function()
    local Who = nn.Module:extend("Who")
    function Who:forward(x) return x * 1, pt.worker_id() end
    local x = pt.arange(1, 5, {dtype = "float64"}):reshape(4, 1)
    local devices = {"cpu:2", "cpu:1"}
    -- listed order: chunk 1 runs on cpu:2 and comes first
    local out, who = nn.DataParallel(Who(), {devices = devices})(x)
    assert.are.same({2, 1}, who:tolist())
    assert_close(out, x)
    local sout, swho = nn.DataParallel(Who(), {devices = devices, sort_and_gather = true})(x)
    assert.are.same({1, 2}, swho:tolist())
    assert_close(sout, pt.cat({x:narrow(1, 3, 2), x:narrow(1, 1, 2)}, 1))
  end)

  it("sort_and_gather keeps gradients right", function()
    pt.manual_seed(17)
    local model = mlp()
    local x = pt.randn(6, 5, F64)
    local w = pt.randn(6, 3, F64)
    local perm = pt.cat({x:narrow(1, 4, 3), x:narrow(1, 1, 3)}, 1)
    ;(model(perm) * w):sum():backward()
    local g = grads(model)
    zero(model)
    local out = nn.DataParallel(model, {devices = {"cpu:2", "cpu:1"}, sort_and_gather = true})(x)
    assert_close(out, model(perm))
    ;(out * w):sum():backward()
    assert_grads(model, g)
  end)

  it("inputs_are_scattered hands the i-th value of each argument to the i-th device", function()
    local Who = nn.Module:extend("Who2")
    function Who:forward(a, b) return a + b, pt.worker_id() end
    local a = {pt.ones(2, 2, F64), pt.ones(1, 2, F64) * 2}
    local b = {pt.ones(2, 2, F64) * 10, pt.ones(1, 2, F64) * 20}
    local out, who = nn.DataParallel(Who(), {devices = {"cpu:2", "cpu:1"}, inputs_are_scattered = true})(a, b)
    assert.are.same({1, 2}, who:tolist())
    assert.are.same({{11, 11}, {11, 11}, {22, 22}}, out:tolist())
  end)

  it("inputs_are_scattered passes gradients back to each per-device input", function()
    pt.manual_seed(18)
    local model = mlp()
    local p1, p2 = pt.randn(3, 5, F64):requires_grad_(), pt.randn(2, 5, F64):requires_grad_()
    model(pt.cat({p1, p2}, 1)):pow(2):sum():backward()
    local g1, g2, g = p1.grad:clone(), p2.grad:clone(), grads(model)
    p1.grad, p2.grad = nil, nil
    zero(model)
    nn.DataParallel(model, {devices = {"cpu:1", "cpu:2"}, inputs_are_scattered = true})({p1, p2})
      :pow(2):sum():backward()
    assert_close(p1.grad, g1)
    assert_close(p2.grad, g2)
    assert_grads(model, g)
  end)

  it("handles more than four inputs that require grad", function()
    pt.manual_seed(19)
    local Sum = nn.Module:extend("Sum5")
    function Sum:__init() self.w = nn.Parameter(pt.randn(2, F64)) end
    function Sum:forward(a, b, c) return (a + b + c) * self.w end
    local xs = {}
    for i = 1, 6 do xs[i] = pt.randn(2, 2, F64):requires_grad_() end
    local dp = nn.DataParallel(Sum(), {devices = {"cpu:1", "cpu:2"}, inputs_are_scattered = true})
    local out = dp({xs[1], xs[2]}, {xs[3], xs[4]}, {xs[5], xs[6]})
    out:pow(2):sum():backward()
    local w = dp.module.w:detach()
    for i = 1, 6 do
      local j = (i + 1) % 2 + 1 -- device of xs[i]
      local s = ({xs[1], xs[2]})[j] + ({xs[3], xs[4]})[j] + ({xs[5], xs[6]})[j]
      assert_close(xs[i].grad, (s:detach() * w) * 2 * w)
    end
  end)
end)

describe("DataParallel errors", function()
  it("rejects bad constructor arguments", function()
    local m = mlp()
    assert.matches("DataParallel: expected a Module to wrap %(got number%)", errmsg(nn.DataParallel, 3))
    assert.matches("DataParallel: options must be a table %(got string%)", errmsg(nn.DataParallel, m, "x"))
    assert.matches("DataParallel: unknown option 'device' %(options: devices, dim,",
      errmsg(nn.DataParallel, m, {device = {"cpu:1"}}))
    assert.matches("DataParallel: devices must be a non%-empty list", errmsg(nn.DataParallel, m, {devices = {}}))
    assert.matches("DataParallel: device 2 'cuda:0' is not available %(partrain was built without a GPU backend",
      errmsg(nn.DataParallel, m, {devices = {"cpu:1", "cuda:0"}}))
    assert.matches("DataParallel: invalid device 2 'gpu1' %(expected \"cpu:N\" or \"cuda:N\"%)",
      errmsg(nn.DataParallel, m, {devices = {"cpu:1", "gpu1"}}))
    assert.matches("DataParallel: device 1 must be a string like \"cpu:1\" %(got number%)",
      errmsg(nn.DataParallel, m, {devices = {1}}))
    assert.matches("DataParallel: device 2 'cpu:0': cpu devices are numbered 1..256",
      errmsg(nn.DataParallel, m, {devices = {"cpu:1", "cpu:0"}}))
    assert.matches("DataParallel: device 'cpu:1' is listed twice",
      errmsg(nn.DataParallel, m, {devices = {"cpu:1", "cpu:1"}}))
    assert.matches("DataParallel: dim must be a positive integer %(1%-based%), got 0",
      errmsg(nn.DataParallel, m, {dim = 0}))
    assert.matches("DataParallel: output_device 'cuda:1' is not available",
      errmsg(nn.DataParallel, m, {output_device = "cuda:1"}))
    assert.matches("DataParallel: gather_to_one_device must be a boolean %(got string%)",
      errmsg(nn.DataParallel, m, {gather_to_one_device = "no"}))
    assert.matches("DataParallel: inputs_are_scattered must be a boolean",
      errmsg(nn.DataParallel, m, {inputs_are_scattered = 1}))
    assert.matches("DataParallel: sort_and_gather must be a boolean",
      errmsg(nn.DataParallel, m, {sort_and_gather = {}}))
    assert.matches("DataParallel: except_keywords must be a list of strings",
      errmsg(nn.DataParallel, m, {except_keywords = "out1"}))
    assert.matches("DataParallel: except_keywords%[2%] must be a string %(got number%)",
      errmsg(nn.DataParallel, m, {except_keywords = {"a", 3}}))
  end)

  it("names a module field or a forward argument that cannot be sent to a replica", function()
    local model = mlp()
    model.log = assert(io.open(os.tmpname(), "w"))
    local dp = nn.DataParallel(model, {devices = {"cpu:1", "cpu:2"}})
    assert.are.equal("DataParallel: field 'log' (userdata FILE*) cannot be sent to a worker (in the module)",
      errmsg(function() return dp(pt.randn(4, 5, F64)) end))
    model.log:close()
    model.log = nil
    local Two = nn.Module:extend("TwoArgs")
    function Two:__init() self.l = nn.Linear(5, 1):double() end
    function Two:forward(x) return self.l(x) end
    local co = coroutine.create(function() end)
    local dp2 = nn.DataParallel(Two(), {devices = {"cpu:1", "cpu:2"}})
    assert.are.equal("DataParallel: argument 2 of forward (thread) cannot be sent to a worker",
      errmsg(function() return dp2(pt.randn(4, 5, F64), co) end))
    assert.are.same({4, 1}, dp2(pt.randn(4, 5, F64)):size()) -- and it keeps working
  end)

  it("the first failing replica in device order raises, naming its device, with the traceback", function()
    local Fail = nn.Module:extend("Fail")
    function Fail:forward(x)
      if x:size(1) == 2 then error("chunk of two") end
      return x
    end
    local err = errmsg(nn.DataParallel(Fail(), TWO), pt.ones(5, 1))
    assert.matches("^DataParallel: replica on cpu:2 failed: .*chunk of two", err)
    assert.matches("stack traceback", err)
    local Both = nn.Module:extend("Both")
    function Both:forward() error("replica " .. pt.worker_id()) end
    local err2 = errmsg(nn.DataParallel(Both(), TWO), pt.ones(4, 1))
    assert.matches("^DataParallel: replica on cpu:1 failed: .*replica 1", err2)
    -- listed order decides which failure is reported
    local err3 = errmsg(nn.DataParallel(Both(), {devices = {"cpu:2", "cpu:1"}}), pt.ones(4, 1))
    assert.matches("^DataParallel: replica on cpu:2 failed: .*replica 2", err3)
    -- the pool keeps working
    assert_close(nn.DataParallel(nn.Identity(), TWO)(pt.ones(4, 1)), pt.ones(4, 1))
  end)

  it("shape errors name the layer and the shapes", function()
    local m = nn.Sequential(nn.Linear(5, 4))
    local err = errmsg(nn.DataParallel(m, TWO), pt.ones(4, 3))
    assert.matches("^DataParallel: replica on cpu:1 failed: .*Linear:forward", err)
    assert.matches("{2,3}", err)
    local conv = nn.Conv2d(3, 4, 3)
    local err2 = errmsg(nn.DataParallel(conv, TWO), pt.ones(4, 2, 5, 5))
    assert.matches("^DataParallel: replica on cpu:1 failed: .*conv2d.*{2,2,5,5}", err2)
  end)

  it("a replica failing in backward names its device", function()
    local Half = nn.Module:extend("Half")
    function Half:__init() self.lin = nn.Linear(2, 2):double() end
    function Half:forward(x)
      local h = self.lin(x)
      if x:size(1) == 1 then h:sum():backward() end -- frees this replica's graph
      return h * 2
    end
    local out = nn.DataParallel(Half(), TWO)(pt.ones(3, 2, F64))
    local err = errmsg(function() out:sum():backward() end)
    assert.matches("DataParallelBackward: replica on cpu:2 failed in backward: .*second time", err)
  end)

  it("scatter errors name the argument", function()
    local dp = nn.DataParallel(nn.Identity(), TWO)
    assert.matches("DataParallel: cannot scatter argument 1 of shape {} along dimension 1",
      errmsg(dp, pt.tensor(1.0)))
    assert.matches("DataParallel: cannot scatter argument 1.x of shape {0,3}: it is empty along dimension 1",
      errmsg(dp, {x = pt.zeros(0, 3)}))
    local dp2 = nn.DataParallel(nn.Identity(), {devices = {"cpu:1", "cpu:2"}, dim = 3})
    assert.matches("DataParallel: cannot scatter argument 1 of shape {4,2} along dimension 3",
      errmsg(dp2, pt.ones(4, 2)))
  end)

  it("inputs_are_scattered errors", function()
    local dp = nn.DataParallel(nn.Identity(), {devices = {"cpu:1", "cpu:2"}, inputs_are_scattered = true})
    assert.matches("DataParallel: inputs_are_scattered is set, so argument 1 must be a non%-empty per%-device list %(got a tensor%)",
      errmsg(dp, pt.ones(2)))
    assert.matches("argument 2 must be a non%-empty per%-device list %(got number%)",
      errmsg(dp, {pt.ones(1)}, 3))
    assert.matches("DataParallel: inputs_are_scattered: argument 2 has 1 per%-device values but argument 1 has 2",
      errmsg(dp, {pt.ones(1), pt.ones(1)}, {pt.ones(1)}))
    assert.matches("DataParallel: inputs_are_scattered: 3 per%-device values but only 2 devices",
      errmsg(dp, {pt.ones(1), pt.ones(1), pt.ones(1)}))
  end)

  it("gather errors name the output", function()
    local Diff = nn.Module:extend("Diff")
    function Diff:forward(x)
      if x:size(1) == 3 then return {a = x} end
      return {b = x}
    end
    assert.matches("DataParallel: replicas returned different outputs at output 1: tables with different keys from replicas 1 and 2",
      errmsg(nn.DataParallel(Diff(), TWO), pt.ones(5, 1)))
    local Kind = nn.Module:extend("Kind")
    function Kind:forward(x) if x:size(1) == 3 then return x end return 1 end
    assert.matches("DataParallel: replicas returned different outputs at output 1: a tensor from replica 1, a number from replica 2",
      errmsg(nn.DataParallel(Kind(), TWO), pt.ones(5, 1)))
    local Wide = nn.Module:extend("Wide")
    function Wide:forward(x) return {w = pt.zeros(2, x:size(1))} end
    assert.matches("^DataParallel: cannot gather output 1.w along dimension 1: replica 1 gave shape {2,3} but replica 2 gave {2,2}",
      errmsg(nn.DataParallel(Wide(), TWO), pt.ones(5, 1)))
    local Flat = nn.Module:extend("Flat")
    function Flat:forward(x) return x:sum(2) end
    assert.matches("^DataParallel: cannot gather output 1 of shape {2} along dimension 2",
      errmsg(nn.DataParallel(Flat(), {devices = {"cpu:1", "cpu:2"}, dim = 2}), pt.ones(2, 5)))
    local Key = nn.Module:extend("Key")
    function Key:forward(x) return {[true] = x} end
    assert.matches("DataParallel: the output: table keys must be numbers or strings %(got a boolean key%)",
      errmsg(nn.DataParallel(Key(), TWO), pt.ones(4, 1)))
  end)
end)

local EXE = require("spec.support").exe

describe("scripts/seed003_data_parallel.lua", function()
  it("runs the seed's two test cases as the seed describes", function()
    local p = io.popen(EXE .. " scripts/seed003_data_parallel.lua 2>&1")
    local text = p:read("a")
    p:close()
    assert.matches("test case one\n  type of A_out is list of 2\n  size of A_out content is {8, 2}\n", text)
    local diff = tonumber(text:match("max difference to one device ([%d%.e%-]+)"))
    assert.is_not_nil(diff, text)
    assert.is_true(diff < 1e-5, text)
    assert.matches("out1 type is list of 2; out2 type is list of 2\n  out1 element size is {8, 2}", text)
    assert.matches("second output type is Tensor float32\n  second output size is {16, 2}", text)
    assert.matches("pieces gathered from workers 2, 1; with sort_and_gather from workers 1, 2", text)
  end)
end)

describe("scripts/fashion_mnist_cnn.lua", function()
  local dir = os.getenv("FASHION_MNIST_DIR") or "/usr/share/datasets/fashion-mnist/"
  local have = io.open(dir .. "train-images-idx3-ubyte.gz")
  if have then have:close() end

  local function run(opts)
    local out = os.tmpname()
    local p = io.popen(EXE .. " scripts/fashion_mnist_cnn.lua " .. opts .. " --out " .. out .. " 2>&1")
    local text = p:read("a")
    p:close()
    local f = io.open(out, "rb")
    local size = f and f:seek("end") or 0
    if f then f:close() end
    os.remove(out)
    return text, size
  end

  it("trains in quick mode, reports accuracy and saves a checkpoint", function()
    if not have then pending("Fashion-MNIST is not installed") return end
    local text, size = run("--quick")
    local acc = tonumber(text:match("final test accuracy ([%d%.]+)"))
    assert.is_not_nil(acc, text)
    assert.is_true(acc > 0.3, text) -- 16 steps of 64 samples; chance is 0.1
    assert.is_true(size > 3136 * 1024 * 4, "checkpoint too small: " .. size)
  end)

  it("trains the BatchNorm variant through DataParallel", function()
    if not have then pending("Fashion-MNIST is not installed") return end
    local text = run("--quick --bn --data-parallel 2 --train 512 --test 256")
    assert.matches("CNN %(BatchNorm%): 512 train / 256 test samples, 1 epochs", text)
    assert.matches("DataParallel over 2 devices", text)
    local acc = tonumber(text:match("final test accuracy ([%d%.]+)"))
    assert.is_not_nil(acc, text)
    assert.is_true(acc > 0.3, text)
  end)

  it("rejects unknown options", function()
    local text = run("--nope")
    assert.matches("fashion_mnist_cnn: unknown option %-%-nope", text)
  end)
end)
