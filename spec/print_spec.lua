-- The printed form of tensors (host/l_tensor.c t_tostring) and of Lua values (partrain.pretty).
local pt = require "partrain"
local pretty = require "partrain.pretty"

-- nested table of a*b(*c) consecutive numbers from 0
local function nest(a, b, c)
  local t, k = {}, 0
  for i = 1, a do
    t[i] = {}
    for j = 1, b do
      if c then
        t[i][j] = {}
        for l = 1, c do
          t[i][j][l] = k
          k = k + 1
        end
      else
        t[i][j] = k
        k = k + 1
      end
    end
  end
  return t
end

describe("tensor printing", function()
  it("prints a float matrix with 4 decimals and aligned rows", function()
    assert.are.equal("tensor({{1.0000, 2.0000},\n        {3.0000, 4.5000}}, shape={2,2}, dtype=float32)",
      tostring(pt.tensor({ { 1, 2 }, { 3, 4.5 } })))
  end)

  it("prints integer-valued floats as 1. like PyTorch", function()
    assert.are.equal("tensor({{1., 2.},\n        {3., 4.}}, shape={2,2}, dtype=float32)",
      tostring(pt.tensor({ { 1, 2 }, { 3, 4 } })))
    assert.are.equal("tensor({-0.,  1.}, shape={2}, dtype=float32)",
      tostring(pt.tensor({ -0.0, 1 })))
  end)

  it("prints a 0-d tensor without braces", function()
    assert.are.equal("tensor(3.5000, shape={}, dtype=float32)", tostring(pt.tensor(3.5)))
    assert.are.equal("tensor(7, shape={}, dtype=int64)", tostring(pt.tensor(7, { dtype = "int64" })))
  end)

  it("prints integer dtypes exactly and right-aligned", function()
    assert.are.equal("tensor({1, 2, 3}, shape={3}, dtype=int64)",
      tostring(pt.tensor({ 1, 2, 3 }, { dtype = "int64" })))
    assert.are.equal("tensor({-1, 20,  3}, shape={3}, dtype=int32)",
      tostring(pt.tensor({ -1, 20, 3 }, { dtype = "int32" })))
    assert.are.equal("tensor({  0, 255}, shape={2}, dtype=uint8)",
      tostring(pt.tensor({ 0, 255 }, { dtype = "uint8" })))
    -- beyond 2^53: no rounding through double
    assert.are.equal("tensor(9007199254740993, shape={}, dtype=int64)",
      tostring(pt.tensor(9007199254740993, { dtype = "int64" })))
  end)

  it("prints bool as true/false", function()
    assert.are.equal("tensor({ true, false}, shape={2}, dtype=bool)", tostring(pt.tensor({ true, false })))
  end)

  it("switches to scientific notation when the range demands", function()
    assert.are.equal("tensor({1.0000e-05, 1.0000e+00, 1.0000e+02}, shape={3}, dtype=float32)",
      tostring(pt.tensor({ 1e-5, 1, 100 })))
    assert.are.equal("tensor({1.0000e+09, 1.0000e+00}, shape={2}, dtype=float64)",
      tostring(pt.tensor({ 1e9, 1 }, { dtype = "float64" })))
    assert.are.equal("tensor({0.0010, 0.5000}, shape={2}, dtype=float32)",
      tostring(pt.tensor({ 0.001, 0.5 })))
  end)

  it("prints nan and inf in the same columns", function()
    assert.are.equal("tensor({   nan,    inf,   -inf, 1.5000}, shape={4}, dtype=float32)",
      tostring(pt.tensor({ 0 / 0, 1 / 0, -1 / 0, 1.5 })))
  end)

  it("prints an empty tensor", function()
    assert.are.equal("tensor({}, shape={0}, dtype=float32)", tostring(pt.zeros(0)))
  end)

  it("separates the 2-d blocks of a 3-d tensor with a blank line", function()
    assert.are.equal(
      "tensor({{{ 0,  1,  2,  3},\n" ..
      "         { 4,  5,  6,  7},\n" ..
      "         { 8,  9, 10, 11}},\n" ..
      "\n" ..
      "        {{12, 13, 14, 15},\n" ..
      "         {16, 17, 18, 19},\n" ..
      "         {20, 21, 22, 23}}}, shape={2,3,4}, dtype=int64)",
      tostring(pt.tensor(nest(2, 3, 4), { dtype = "int64" })))
  end)

  it("wraps long rows at 80 columns", function()
    local t = {}
    for i = 1, 40 do t[i] = i - 1 end
    assert.are.equal(
      "tensor({ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n" ..
      "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,\n" ..
      "        36, 37, 38, 39}, shape={40}, dtype=int64)",
      tostring(pt.tensor(t, { dtype = "int64" })))
  end)

  it("abbreviates more than 1000 elements to the first and last 3 per dimension", function()
    local t = {}
    for i = 1, 2000 do t[i] = i - 1 end
    assert.are.equal("tensor({   0,    1,    2, ..., 1997, 1998, 1999}, shape={2000}, dtype=int64)",
      tostring(pt.tensor(t, { dtype = "int64" })))
    assert.are.equal(
      "tensor({{   0,    1,    2, ...,   97,   98,   99},\n" ..
      "        { 100,  101,  102, ...,  197,  198,  199},\n" ..
      "        { 200,  201,  202, ...,  297,  298,  299},\n" ..
      "        ...,\n" ..
      "        {9700, 9701, 9702, ..., 9797, 9798, 9799},\n" ..
      "        {9800, 9801, 9802, ..., 9897, 9898, 9899},\n" ..
      "        {9900, 9901, 9902, ..., 9997, 9998, 9999}}, shape={100,100}, dtype=int64)",
      tostring(pt.tensor(nest(100, 100), { dtype = "int64" })))
  end)

  it("formats only the shown elements (a hidden 0.5 does not force decimals)", function()
    local t = {}
    for i = 1, 1001 do t[i] = i end
    t[500] = 0.5
    assert.are.equal("tensor({   1.,    2.,    3., ...,  999., 1000., 1001.}, shape={1001}, dtype=float32)",
      tostring(pt.tensor(t)))
  end)

  it("shows requires_grad and grad_fn", function()
    local x = pt.ones(2, { requires_grad = true })
    assert.are.equal("tensor({1., 1.}, shape={2}, dtype=float32, requires_grad=true)", tostring(x))
    assert.are.equal("tensor({2., 2.}, shape={2}, dtype=float32, grad_fn=<MulBackward>)",
      tostring(x * 2))
  end)

  it("prints views through their strides", function()
    local m = pt.tensor({ { 1, 2 }, { 3, 4 } }, { dtype = "int32" })
    assert.are.equal("tensor({{1, 3},\n        {2, 4}}, shape={2,2}, dtype=int32)", tostring(m:t()))
  end)

  it("prints a closed tensor", function()
    local s
    do
      local t <close> = pt.zeros(2)
      s = t
    end
    assert.are.equal("tensor(closed)", tostring(s))
  end)

  it("rejects a non-tensor in __tostring", function()
    local tostr = getmetatable(pt.zeros(1)).__tostring
    local ok, err = pcall(tostr, 5)
    assert.is_false(ok)
    assert.matches("bad argument #1 to '%?' %(Tensor expected, got number%)", err)
  end)
end)

describe("pretty.format", function()
  it("prints scalars and quotes strings", function()
    assert.are.equal("1", pretty.format(1))
    assert.are.equal("1.5", pretty.format(1.5))
    assert.are.equal("nil", pretty.format(nil))
    assert.are.equal('"a\\n\\"b\\"\\001"', pretty.format('a\n"b"\1'))
  end)

  it("prints a sequence then sorted keys on one line when it fits", function()
    assert.are.equal('{1, 2, 3, [10] = 4, a = "x", b = true, ["not id"] = 1}',
      pretty.format({ 1, 2, 3, b = true, a = "x", [10] = 4, ["not id"] = 1 }))
    assert.are.equal("{}", pretty.format({}))
    assert.are.equal("{[\"end\"] = 1}", pretty.format({ ["end"] = 1 }))
  end)

  it("breaks long or multi-line tables into indented lines", function()
    local s = pretty.format({ a = string.rep("x", 50), b = { c = string.rep("y", 40) } })
    assert.are.equal('{\n  a = "' .. string.rep("x", 50) .. '",\n  b = {c = "' .. string.rep("y", 40) ..
      '"}\n}', s)
  end)

  it("indents a tensor's later lines under its first", function()
    assert.are.equal("{\n  w = tensor({{1., 2.},\n              {3., 4.}}, shape={2,2}, dtype=float32)\n}",
      pretty.format({ w = pt.tensor({ { 1, 2 }, { 3, 4 } }) }))
  end)

  it("marks cycles", function()
    local t = { 1 }
    t.self = t
    assert.are.equal("{1, self = <cycle>}", pretty.format(t))
    local shared = { 1 }
    assert.are.equal("{{1}, {1}}", pretty.format({ shared, shared })) -- shared, not cyclic
  end)

  it("bounds the depth and the number of entries", function()
    assert.are.equal("{{{...}}}", pretty.format({ { { { 1 } } } }, { depth = 2 }))
    assert.are.equal("{1, 2, ... (3 more)}", pretty.format({ 1, 2, 3, 4, 5 }, { items = 2 }))
  end)

  it("survives a failing __tostring", function()
    local bad = setmetatable({}, { __tostring = function() error("nope", 0) end })
    assert.are.equal("<table: __tostring failed: nope>", pretty.format(bad))
  end)

  it("rejects bad options with a clear message", function()
    assert.has_error(function() pretty.format({}, 3) end,
      "pretty.format: options must be a table, got number")
    assert.has_error(function() pretty.format({}, { depth = -1 }) end,
      "pretty.format: option 'depth' must be a non-negative integer, got -1")
  end)

  it("is documented for help()", function()
    assert.truthy(pt._docs[pretty.format]:find("^pretty.format%(v"))
  end)
end)

describe("printed forms of schedulers and data objects", function()
  local optim, data = pt.optim, pt.data

  local function sgd() return optim.SGD({ pt.zeros(2, { requires_grad = true }) }, { lr = 0.1 }) end

  it("an LR scheduler prints its settings and last_epoch", function()
    local s = optim.StepLR(sgd(), { step_size = 10 })
    for _ = 1, 3 do s:step() end
    assert.are.equal("StepLR(step_size=10, gamma=0.1, last_epoch=3)", tostring(s))
    assert.are.equal("CosineAnnealingLR(T_max=5, eta_min=0, last_epoch=0)",
      tostring(optim.CosineAnnealingLR(sgd(), { T_max = 5 })))
    assert.are.equal("LambdaLR(lr_lambda=<function>, last_epoch=0)",
      tostring(optim.LambdaLR(sgd(), function() return 1 end)))
    assert.are.equal("LinearLR(start_factor=0.333333, end_factor=1, total_iters=5, last_epoch=0)",
      tostring(optim.LinearLR(sgd())))
    assert.are.equal("LinearWarmup(warmup_steps=4, start_factor=0.25, last_epoch=0)",
      tostring(optim.LinearWarmup(sgd(), { warmup_steps = 4 })))
  end)

  it("datasets, subsets and DataHandlers print one line", function()
    local ds = data.TensorDataset(pt.randn(10, 3), pt.arange(1, 11))
    assert.are.equal("TensorDataset(10)", tostring(ds))
    local a = data.random_split(ds, { 7, 3 })
    assert.are.equal("Subset(7 of TensorDataset(10))", tostring(a))
    assert.are.equal("DataHandler(batch=4, shuffle=false, 3 batches of TensorDataset(10))",
      tostring(data.DataHandler(ds, { batch = 4 })))
    local h = data.DataHandler(a, { batch = 2, shuffle = true, seed = 1, drop_last = true,
      transform = function(x, y) return x, y end })
    for _ in h:batches({ progress = false }) do end
    assert.are.equal("DataHandler(batch=2, shuffle=true, seed=1, drop_last=true, transform=<function>, " ..
      "epoch=1, 3 batches of Subset(7 of TensorDataset(10)))", tostring(h))
    -- a dataset of the user's own: its size
    local own = { get = function() return { 1 } end, len = function() return 5 end }
    assert.are.equal("DataHandler(batch=128, shuffle=false, 1 batch of 5 samples)",
      tostring(data.DataHandler(own)))
  end)

  it("pretty.format (the REPL) prints them through __tostring, not their fields", function()
    local ds = data.TensorDataset(pt.zeros(60000, 2), pt.zeros(60000))
    local h = data.DataHandler(ds, { batch = 64, shuffle = true })
    assert.are.equal("DataHandler(batch=64, shuffle=true, 938 batches of TensorDataset(60000))", pretty.format(h))
    assert.are.equal("{TensorDataset(60000), StepLR(step_size=1, gamma=0.1, last_epoch=0)}",
      pretty.format({ ds, optim.StepLR(sgd(), { step_size = 1 }) }))
  end)
end)

describe("pt.set_printoptions", function()
  local pt = require "partrain"
  local support = require "spec.support"
  after_each(function() pt.set_printoptions({profile = "default"}) end)

  -- torch 1.13 prints the same numbers (in brackets) for each of these settings
  it("sets precision, threshold, edgeitems, linewidth and sci_mode as torch's", function()
    local x = pt.tensor({1.123456789, 200.5, 3})
    pt.set_printoptions({precision = 2})
    assert.are.equal("tensor({  1.12, 200.50,   3.00}, shape={3}, dtype=float32)", tostring(x))
    pt.set_printoptions({precision = 2, sci_mode = true})
    assert.are.equal("tensor({1.12e+00, 2.00e+02, 3.00e+00}, shape={3}, dtype=float32)", tostring(x))
    pt.set_printoptions({profile = "short"})
    assert.are.equal("tensor({1.12e+00, 2.00e+03, 3.00e+00}, shape={3}, dtype=float32)",
      tostring(pt.tensor({1.123456789, 2000.5, 3})))
    pt.set_printoptions({profile = "default", threshold = 5, edgeitems = 1})
    assert.are.equal("tensor({1, ..., 9}, shape={9}, dtype=int64)", tostring(pt.arange(1, 10)))
    pt.set_printoptions({sci_mode = false})
    assert.are.equal("tensor({0.0000, 1.0000}, shape={2}, dtype=float32)", tostring(pt.tensor({1e-9, 1})))
    pt.set_printoptions({linewidth = 30}) -- the others keep their values, as torch's
    assert.are.equal("tensor({ 1, ..., 12}, shape={12}, dtype=int64)", tostring(pt.arange(1, 13)))
    pt.set_printoptions({profile = "default", linewidth = 30})
    assert.are.equal("tensor({ 1,  2,  3,  4,  5,\n         6,  7,  8,  9, 10,\n        11, 12}, shape={12}, dtype=int64)",
      tostring(pt.arange(1, 13)))
    pt.set_printoptions({profile = "full"})
    assert.is_nil(tostring(pt.arange(1, 2001)):find("...", 1, true))
    assert.are.same({precision = 4, threshold = math.huge, edgeitems = 3, linewidth = 80}, pt.get_printoptions())
    pt.set_printoptions({profile = "default"})
    assert.are.same({precision = 4, threshold = 1000, edgeitems = 3, linewidth = 80}, pt.get_printoptions())
    assert.is_not_nil(tostring(pt.arange(1, 2001)):find("...", 1, true))
  end)

  it("explains bad options", function()
    support.assert_error("set_printoptions: unknown option 'precison' (options: precision, threshold, edgeitems, "
      .. "linewidth, profile, sci_mode)", function() pt.set_printoptions({precison = 2}) end)
    support.assert_error("set_printoptions: precision must be an integer from 0 to 30, got 2.5",
      function() pt.set_printoptions({precision = 2.5}) end)
    support.assert_error('set_printoptions: profile must be "default", "short" or "full", got long',
      function() pt.set_printoptions({profile = "long"}) end)
    support.assert_error("set_printoptions: sci_mode must be true, false or nil (automatic), got string",
      function() pt.set_printoptions({sci_mode = "yes"}) end)
    support.assert_error("set_printoptions: expected an options table, got number", function() pt.set_printoptions(3) end)
    -- a call that fails changes nothing (a profile used to apply before a bad field raised)
    pt.set_printoptions({sci_mode = true})
    local before = pt.get_printoptions()
    assert.has_error(function() pt.set_printoptions({profile = "full", precision = 99}) end)
    assert.has_error(function() pt.set_printoptions({sci_mode = "yes"}) end)
    assert.are.same(before, pt.get_printoptions())
    pt.set_printoptions({profile = "default"})
  end)
end)
