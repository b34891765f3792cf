-- Out of memory in the middle of an operation: every allocation point of a piece of work fails in
-- turn (pt._test_alloc_fail(k) fails the k-th allocation from then on, host/l_module.c). Each
-- try must raise "not enough memory" and leave the state usable; under the ASan build (CI) the
-- leak checker also sees that nothing was lost (a tensor whose handle could not be allocated).
local pt = require "partrain"
local nn = pt.nn

local arm, pc, tos = pt._test_alloc_fail, pcall, tostring

-- runs work with its k-th allocation failing, for k = 1, 2, ... until it runs through without
-- reaching the k-th; returns the number of failing tries and the messages that were not OOM
local function every_allocation_fails(work)
  local tries, other = 0, {}
  for k = 1, 5000 do
    arm(k)
    local ok, err = pc(work)
    local fired = arm(0)
    if not fired then
      assert(ok, err)
      return tries, other
    end
    tries = tries + 1
    if ok then
      -- an allocation that Lua may lose (a cache, a collection step) failed: no error is right
    elseif not tos(err):find("not enough memory", 1, true) then
      other[#other + 1] = tos(err)
    end
  end
  error("work still allocating after 5000 tries")
end

-- whether pt._test_alloc_fail works here (partrain's allocator is this state's)
local function injectable()
  local ok = arm(1)
  arm(0)
  return ok
end

describe("out of memory", function()
  if not injectable() then return pending("Lua's allocator is not partrain's in this state") end

  it("in elementwise ops and clone raises and loses no tensor", function()
    local a, b = pt.ones(3), pt.ones(3)
    local tries, other = every_allocation_fails(function()
      local c = a + b
      local d = c:clone()
      return (d * 2):sum()
    end)
    assert.is_true(tries >= 3, "tries: " .. tries)
    assert.are.same({}, other)
    assert.are.equal(12, ((a + b):clone() * 2):sum():item())
  end)

  it("in a forward and backward pass with hooks raises and the next pass works", function()
    pt.manual_seed(3)
    local model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))
    local x = pt.randn(5, 4)
    local seen = 0
    model[1].weight:register_hook(function(g) seen = seen + 1 return g end)
    local function pass()
      model:zero_grad()
      local loss = model(x):pow(2):mean()
      loss:backward()
      return loss
    end
    local tries, other = every_allocation_fails(pass)
    assert.is_true(tries >= 10, "tries: " .. tries)
    assert.are.same({}, other)
    seen = 0
    local loss = pass()
    assert.are.equal(1, seen)
    -- the gradient of a clean pass, as a fresh model of the same seed gives
    pt.manual_seed(3)
    local ref = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))
    local rl = ref(x):pow(2):mean()
    rl:backward()
    assert.are.equal(rl:item(), loss:item())
    assert.is_true(pt.equal(ref[1].weight.grad, model[1].weight.grad))
  end)

  it("in an autograd.Function's backward raises and the next pass works", function()
    local Square = pt.autograd.Function:extend("Square")
    function Square.forward(ctx, t)
      ctx:save_for_backward(t)
      return t * t
    end
    function Square.backward(ctx, g)
      local t = ctx.saved_tensors[1]
      return g * 2 * t
    end
    local x = pt.tensor({1.0, 2.0, 3.0}, {requires_grad = true})
    local function pass()
      x.grad = nil
      Square.apply(x):sum():backward()
      return x.grad
    end
    local tries, other = every_allocation_fails(pass)
    assert.is_true(tries >= 5, "tries: " .. tries)
    assert.are.same({}, other)
    assert.are.same({2, 4, 6}, pass():tolist())
  end)
end)

describe("out of memory in a worker", function()
  if not injectable() then return pending("Lua's allocator is not partrain's in this state") end

  it("fails the sample with the message and the pool keeps working", function()
    local ds = {get = function(_, i) return pt.ones(2) * i end, len = function() return 4 end}
    local model = nn.Linear(2, 1)
    local failed = 0
    for k = 1, 40 do
      local fn = function(x, m)
        if pt.worker_id() == 2 then pt._test_alloc_fail(k) end
        local l = m(x):sum()
        l:backward()
        return l
      end
      local ok, err = pcall(function()
        return pt.data.DataHandler(ds):par_by_sample(model, 2, fn, {epoch = true})
      end)
      if not ok then
        failed = failed + 1
        assert.matches("failed on worker 2", err)
      end
      -- disarmed on every worker
      pt._pool_map(function() pt._test_alloc_fail(0) end, {{}, {}}, {n_workers = 2})
    end
    assert.is_true(failed >= 5, "failed calls: " .. failed)
    local losses = pt.data.DataHandler(ds):par_by_sample(model, 2, function(x, m) return m(x):sum() end,
                                                          {epoch = true})
    assert.are.equal(4, #losses)
  end)
end)
