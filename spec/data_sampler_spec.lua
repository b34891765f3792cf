-- DataHandler's sampler option and data.WeightedRandomSampler / SubsetRandomSampler.
local pt = require "partrain"
local data = pt.data
local support = require "spec.support"
local assert_error = support.assert_error

local function dataset(n)
  local x = pt.arange(1, n + 1):reshape(n, 1):to("float64")
  return data.TensorDataset(x, pt.arange(1, n + 1))
end

-- the sample numbers of one epoch, in order
local function epoch_of(h)
  local out = {}
  for _, y in h:batches() do
    for _, v in ipairs(y:tolist()) do out[#out + 1] = v end
  end
  return out
end

describe("DataHandler samplers", function()
  it("draw by weight, reproducibly, the same with workers, leaving the caller's generator alone", function()
    local ds = dataset(10)
    local w = {0, 0, 1, 1, 1, 1, 1, 1, 4, 4} -- samples 1 and 2 never; 9 and 10 four times as often
    local s = data.WeightedRandomSampler(w, 30)
    local h = data.DataHandler(ds, {batch = 8, sampler = s, seed = 7})
    assert.are.equal(4, #h) -- 30 samples in batches of 8
    pt.manual_seed(123)
    local before = pt.rand(3):tolist()
    pt.manual_seed(123)
    local counts, first = {}, nil
    for epoch = 1, 20 do
      local e = epoch_of(h)
      assert.are.equal(30, #e)
      if epoch == 1 then first = e end
      for _, v in ipairs(e) do counts[v] = (counts[v] or 0) + 1 end
    end
    assert.are.same(before, pt.rand(3):tolist()) -- the draws did not touch this stream
    assert.is_nil(counts[1])
    assert.is_nil(counts[2])
    local heavy, light = counts[9] + counts[10], 0
    for i = 3, 8 do light = light + counts[i] end
    -- expected 8/14 and 6/14 of 600 draws: 343 and 257
    assert.is_true(heavy > 290 and heavy < 400 and light > 200 and light < 310)
    -- the same seed gives the same epochs, also with workers
    local again = data.DataHandler(ds, {batch = 8, sampler = s, seed = 7})
    assert.are.same(first, epoch_of(again))
    local par = data.DataHandler(ds, {batch = 8, sampler = s, seed = 7, workers = 2})
    assert.are.same(first, epoch_of(par))
    par:close()
    local other = data.DataHandler(ds, {batch = 8, sampler = s, seed = 8})
    assert.are_not.same(first, epoch_of(other))
  end)

  it("draw without replacement and from a subset", function()
    local ds = dataset(6)
    local h = data.DataHandler(ds, {batch = 4, sampler = data.WeightedRandomSampler({1, 1, 1, 1, 1, 1}, 6,
      {replacement = false})})
    local e = epoch_of(h)
    table.sort(e)
    assert.are.same({1, 2, 3, 4, 5, 6}, e)
    local sub = data.DataHandler(ds, {batch = 2, sampler = data.SubsetRandomSampler({2, 4, 6})})
    assert.are.equal(2, #sub)
    local orders = {}
    for k = 1, 6 do
      local o = epoch_of(sub)
      orders[table.concat(o, ",")] = true
      table.sort(o)
      assert.are.same({2, 4, 6}, o)
    end
    assert.is_true(next(orders, next(orders)) ~= nil) -- the order changes between epochs
  end)

  it("take a sampler of one's own", function()
    local Reverse = {len = function() return 4 end, indices = function(_, epoch) return {4, 3, 2, epoch} end}
    local h = data.DataHandler(dataset(5), {batch = 2, sampler = Reverse})
    assert.are.same({4, 3, 2, 1}, epoch_of(h))
    assert.are.same({4, 3, 2, 2}, epoch_of(h))
  end)

  it("explain misuse", function()
    local ds = dataset(3)
    local s = data.SubsetRandomSampler({1, 2})
    assert_error("DataHandler: sampler option is mutually exclusive with shuffle (the sampler orders the samples)",
      function() data.DataHandler(ds, {sampler = s, shuffle = true}) end)
    assert_error("DataHandler: sampler must be a sampler (indices(epoch, seed) and len() methods, as "
      .. "data.WeightedRandomSampler), got 3", function() data.DataHandler(ds, {sampler = 3}) end)
    assert_error("WeightedRandomSampler: num_samples should be a positive integer value, but got num_samples=0",
      function() data.WeightedRandomSampler({1, 2}, 0) end)
    assert_error("WeightedRandomSampler: cannot draw 3 samples without replacement from 2 weights",
      function() data.WeightedRandomSampler({1, 2}, 3, {replacement = false}) end)
    assert_error("WeightedRandomSampler: weights must be finite, non-negative and not all zero",
      function() data.WeightedRandomSampler({1, -2}, 3) end)
    assert_error("WeightedRandomSampler: unknown option 'replace' (options: replacement)",
      function() data.WeightedRandomSampler({1, 2}, 3, {replace = false}) end)
    assert_error("SubsetRandomSampler: indices[2] is not a positive integer (1-based sample index)",
      function() data.SubsetRandomSampler({1, 0}) end)
    local bad = {len = function() return 2 end, indices = function() return {1, 9} end}
    local h = data.DataHandler(ds, {sampler = bad})
    assert.matches("DataHandler: the sampler's indices must be in 1..3 %(the dataset's samples%), got 1..9",
      support.errmsg(function() for _ in h:batches() do end end))
    local short = {len = function() return 3 end, indices = function() return {1} end}
    assert.matches("DataHandler: the sampler gave 1 indices for epoch 1 but its len%(%) is 3",
      support.errmsg(function() for _ in data.DataHandler(ds, {sampler = short}):batches() do end end))
  end)
end)

describe("data.ConcatDataset", function()
  it("chains datasets, works with a loader, and names bad arguments", function()
    local a, b = dataset(3), dataset(2)
    local c = data.ConcatDataset({a, b, dataset(1)})
    assert.are.equal(6, c:len())
    assert.are.same({3, 5, 6}, c.cumulative_sizes)
    local got = {}
    for i = 1, 6 do
      local v = c:get(i)[2]
      got[i] = pt.is_tensor(v) and v:item() or v
    end
    assert.are.same({1, 2, 3, 1, 2, 1}, got)
    local h = data.DataHandler(c, {batch = 4})
    assert.are.same({1, 2, 3, 1, 2, 1}, epoch_of(h))
    assert_error("ConcatDataset: expected a non-empty list of datasets", function() data.ConcatDataset({}) end)
    assert_error("ConcatDataset: dataset 2 must have get(i) and len() methods (got a number)",
      function() data.ConcatDataset({a, 3}) end)
    assert.matches("ConcatDataset: ", support.errmsg(function() c:get(7) end))
  end)
end)
