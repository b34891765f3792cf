-- pt.profiler: time by op (no timings are asserted, only counts, names and structure).
local pt = require "partrain"
local support = require "spec.support"
local assert_error = support.assert_error

local function row(prof, name)
  for _, r in ipairs(prof:rows()) do if r.name == name then return r end end
end

describe("pt.profiler", function()
  it("counts the calls of ops, operators and methods, and returns fn's results", function()
    local x = pt.randn(4, 4, {requires_grad = true})
    local exp_before, add_before = pt.Tensor.exp, getmetatable(x).__add
    local prof, a, b = pt.profiler.profile(function(k)
      local y
      for _ = 1, k do y = x:exp() + x end
      y:sum():backward()
      return "done", k
    end, 7)
    assert.are.equal("done", a)
    assert.are.equal(7, b)
    assert.are.equal(7, row(prof, "Tensor:exp").calls)
    assert.are.equal(7, row(prof, "Tensor.__add").calls)
    assert.are.equal(1, row(prof, "Tensor:backward").calls)
    for _, r in ipairs(prof:rows()) do
      assert.is_true(r.self <= r.total + 1e-12 and r.max <= r.total + 1e-12 and r.calls > 0)
    end
    -- the wrappers are gone afterwards
    assert.are.equal(exp_before, pt.Tensor.exp)
    assert.are.equal(add_before, getmetatable(x).__add)
    local text = prof:table({sort_by = "calls", row_limit = 3})
    assert.matches("^Name +Self ms +Self %% +Total ms +Calls +Avg us\n", text)
    assert.matches("\nProfiled: [%d.]+ ms wall, [%d.]+ ms in timed calls %(%d+ calls; each adds about [%d.]+ us of profiling%)$", text)
    local _, lines = text:gsub("\n", "")
    assert.are.equal(6, lines) -- header, rule, 3 rows, rule, summary: 7 lines
  end)

  it("keeps nested time out of a caller's self time", function()
    local x = pt.randn(200, 200)
    local prof = pt.profiler.profile(function()
      pt.profiler.record_function("outer", function()
        for _ = 1, 3 do pt.profiler.record_function("inner", function() return x:matmul(x) end) end
      end)
    end)
    local outer, inner, mm = row(prof, "outer"), row(prof, "inner"), row(prof, "Tensor:matmul")
    assert.are.equal(1, outer.calls)
    assert.are.equal(3, inner.calls)
    assert.are.equal(3, mm.calls)
    assert.is_true(outer.total >= inner.total)
    assert.is_true(inner.total >= mm.total)
    assert.is_true(math.abs(outer.self - (outer.total - inner.total)) < 1e-9)
    assert.is_true(math.abs(inner.self - (inner.total - mm.total)) < 1e-9)
  end)

  it("sees the layers' fused ops and the optimizers' steps", function()
    local model = pt.nn.Sequential(pt.nn.Linear(3, 4), pt.nn.ReLU(), pt.nn.Linear(4, 2))
    local opt = pt.optim.SGD(model:parameters(), {lr = 0.1})
    local prof = pt.profiler.profile(function()
      for _ = 1, 2 do
        opt:zero_grad()
        pt.nn.cross_entropy(model(pt.randn(5, 3)), pt.tensor({1, 2, 1, 2, 1}, {dtype = "int64"})):backward()
        opt:step()
      end
    end)
    assert.are.equal(4, row(prof, "pt.nn_linear").calls)
    assert.are.equal(2, row(prof, "optim.Optimizer:step").calls)
    assert.are.equal(2, row(prof, "Tensor:backward").calls)
  end)

  it("puts everything back when fn raises, and raises its error", function()
    local exp_before = pt.Tensor.exp
    local ok, err = pcall(pt.profiler.profile, function() pt.ones(2):exp(); error({code = 1}) end)
    assert.is_false(ok)
    assert.are.same({code = 1}, err)
    assert.are.equal(exp_before, pt.Tensor.exp)
    local msg = support.errmsg(pt.profiler.profile, function() pt.ones(2):view(3) end)
    assert.matches("view: ", msg)
    -- a profile works again after that
    local prof = pt.profiler.profile(function() pt.ones(2):exp() end)
    assert.are.equal(1, row(prof, "Tensor:exp").calls)
  end)

  it("runs record_function's fn without a profile", function()
    assert.are.equal(5, pt.profiler.record_function("x", function(a) return a + 2 end, 3))
  end)

  it("explains misuse", function()
    assert_error("profiler.profile: expected a function to run, got number", function() pt.profiler.profile(3) end)
    assert_error("profiler.profile: a profile is already running in this state", function()
      pt.profiler.profile(function() pt.profiler.profile(function() end) end)
    end)
    assert_error("profiler.record_function: expected a name (string), got number",
      function() pt.profiler.record_function(1, print) end)
    local prof = pt.profiler.profile(function() end)
    assert_error('Profile:rows: sort_by must be "self", "total", "calls", "max" or "name", got speed',
      function() prof:rows("speed") end)
    assert_error("Profile:table: unknown option 'rows'", function() prof:table({rows = 3}) end)
  end)
end)
