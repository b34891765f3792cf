-- data.DataLoader (PyTorch's option names over data.DataHandler; loader() iterates an epoch) and
-- optim.lr_scheduler (torch.optim.lr_scheduler's namespace).
local pt = require "partrain"
local data, optim = pt.data, pt.optim
local support = require "spec.support"

local function dataset(n)
  return data.TensorDataset(pt.arange(0, n, 1, {dtype = "float32"}):view(n, 1), pt.arange(0, n, 1, {dtype = "int64"}))
end

describe("data.DataLoader", function()
  it("batches as PyTorch's DataLoader: batch_size 1 by default, loader() iterates one epoch", function()
    local dl = data.DataLoader(dataset(10), {batch_size = 4})
    assert.are.equal(3, #dl)
    local got = {}
    for x, y in dl() do
      assert.are.same(x:view(-1):tolist(), y:float():tolist())
      got[#got + 1] = y:tolist()
    end
    assert.are.same({{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}, got)
    assert.are.equal(10, #data.DataLoader(dataset(10)))
    assert.are.equal(2, #data.DataLoader(dataset(10), {batch_size = 4, drop_last = true}))
  end)

  it("shuffles by seed and epoch as data.DataHandler does", function()
    local a = data.DataLoader(dataset(10), {batch_size = 10, shuffle = true, seed = 7})
    local b = data.DataHandler(dataset(10), {batch = 10, shuffle = true, seed = 7})
    local _, ya = a()()
    local _, yb = b:batches()()
    assert.are.same(yb:tolist(), ya:tolist())
  end)

  it("reads on worker threads with num_workers and prefetch_factor", function()
    local dl = data.DataLoader(dataset(10), {batch_size = 5, num_workers = 1, prefetch_factor = 2, pin_memory = true,
      persistent_workers = true})
    local got = {}
    for _, y in dl() do got[#got + 1] = y:tolist() end
    dl:close()
    assert.are.same({{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9}}, got)
  end)

  it("names PyTorch's options in its errors and refuses the ones partrain lacks", function()
    local ds = dataset(4)
    support.assert_error("DataLoader: batch_size must be a positive integer, got 0", data.DataLoader, ds, {batch_size = 0})
    support.assert_error("DataLoader: num_workers must be an integer from 0 to 256, got -1", data.DataLoader, ds,
      {num_workers = -1})
    support.assert_error("DataLoader: collate_fn is not supported (samples are collated as PyTorch's default_collate; "
      .. "give transform = fn(x, y) -> x, y for per-batch work)", data.DataLoader, ds, {collate_fn = function() end})
    support.assert_error("DataLoader: prefetch_factor option could only be specified with num_workers > 0",
      data.DataLoader, ds, {prefetch_factor = 2})
    support.assert_error("DataLoader: prefetch_factor must be an integer from 1 to 4, got 9", data.DataLoader, ds,
      {num_workers = 1, prefetch_factor = 9})
    support.assert_error("DataLoader: persistent_workers option needs num_workers > 0", data.DataLoader, ds,
      {persistent_workers = true})
    support.assert_error("DataLoader: pin_memory must be a boolean, got 1", data.DataLoader, ds, {pin_memory = 1})
    support.assert_error("DataLoader: unknown option 'batch'", data.DataLoader, ds, {batch = 2})
    support.assert_error("DataLoader: sampler option is mutually exclusive with shuffle (the sampler orders the "
      .. "samples)", data.DataLoader, ds, {shuffle = true, sampler = data.SubsetRandomSampler({1, 2})})
    support.assert_error("DataLoader: dataset must have get(i) and len() methods (got a number)", data.DataLoader, 5)
    local short = data.DataLoader(dataset(3), {batch_size = 5, drop_last = true})
    support.assert_error("next_batch: no full batch of 5 in the 3 samples an epoch reads (drop_last)",
      short.next_batch, short)
  end)

  it("refuses a get(i) that returns several values instead of one sample", function()
    local ds = {get = function(_, i) return pt.ones(1) * i, pt.zeros(1), nil end, len = function() return 4 end}
    for _, workers in ipairs({0, 2}) do
      local ok, err = pcall(function()
        for _ in data.DataLoader(ds, {batch_size = 2, num_workers = workers})() do end
      end)
      assert.is_false(ok)
      assert.matches("dataset:get%(1%) returned 2 values: return one sample, e.g. {x, y}", err)
    end
    for _, in_workers in ipairs({false, true}) do
      local ok, err = pcall(data.DataHandler(ds).par_by_sample, data.DataHandler(ds), pt.nn.Linear(1, 1), 2,
                            function() return 1 end, {read_in_workers = in_workers})
      assert.is_false(ok)
      assert.matches("dataset:get%(1%) returned 2 values: return one sample, e.g. {x, y}", err)
    end
  end)

  it("keeps every value a transform returns, and the ones after x, y when it returns only those", function()
    local ds = {get = function(_, i) return {pt.ones(1), i, 10 * i} end, len = function() return 2 end}
    for _, workers in ipairs({0, 2}) do
      local t3 = data.DataLoader(ds, {batch_size = 2, num_workers = workers,
                                      transform = function(x, y, z) return x, y, z * 100 end})
      for _, y, z in t3() do
        assert.are.same({1, 2}, y:tolist())
        assert.are.same({1000, 2000}, z:tolist())
      end
      local t2 = data.DataLoader(ds, {batch_size = 2, num_workers = workers,
                                      transform = function(x, y) return x * 2, y end})
      for x, _, z in t2() do
        assert.are.same({{2}, {2}}, x:tolist())
        assert.are.same({10, 20}, z:tolist())
      end
    end
  end)
end)

describe("optim.lr_scheduler", function()
  it("holds the schedulers under torch's names", function()
    local S = optim.lr_scheduler
    for _, name in ipairs({"LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
                           "ExponentialLR", "SequentialLR", "PolynomialLR", "CosineAnnealingLR", "ChainedScheduler",
                           "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts", "OneCycleLR"}) do
      assert.are.equal(optim[name], S[name], name)
    end
    assert.are.equal(optim.LRScheduler, S._LRScheduler)
    local w = pt.zeros({2}, {requires_grad = true})
    local opt = optim.SGD({w}, {lr = 0.1})
    local sched = S.StepLR(opt, {step_size = 1, gamma = 0.5})
    opt:step()
    sched:step()
    assert.are.equal(0.05, opt.param_groups[1].lr)
  end)
end)

describe("data.Dataset, the samplers and default_collate", function()
  local Squares = data.Dataset:extend("Squares")
  function Squares:__init(n) self.n = n end
  function Squares:get(i) return {pt.tensor({i}), i * i} end
  function Squares:len() return self.n end

  it("Dataset:extend makes a dataset class: #ds, ds[i], ds1 + ds2, and a loader reads it", function()
    local ds = Squares(5)
    assert.are.equal("Squares(5)", tostring(ds))
    assert.are.equal(5, #ds)
    assert.are.equal(9, ds[3][2])
    assert.are.equal(10, (ds + ds):len())
    local got = {}
    for _, y in data.DataLoader(ds, {batch_size = 2, sampler = data.SequentialSampler(ds)})() do
      got[#got + 1] = y:tolist()
    end
    assert.are.same({{1, 4}, {9, 16}, {25}}, got)
    local E = data.Dataset:extend("E")
    support.assert_error("E: get(i) is not defined (define E:get(i) returning sample i)", function() return E():get(1) end)
  end)

  it("RandomSampler draws a permutation per epoch, or num_samples with replacement", function()
    local ds = Squares(6)
    local dl = data.DataLoader(ds, {batch_size = 6, sampler = data.RandomSampler(ds), seed = 3})
    local _, y = dl()()
    local sorted = y:sort():tolist()
    assert.are.same({1, 4, 9, 16, 25, 36}, sorted)
    local r = data.RandomSampler(ds, {replacement = true, num_samples = 10})
    assert.are.equal(10, r:len())
    local idx = r:indices(1, 42)
    assert.are.equal(10, idx:numel())
    assert.is_true(idx:min():item() >= 1 and idx:max():item() <= 6)
    assert.are.same({1, 2, 3}, data.SequentialSampler(3):indices(1, 42):tolist())
    -- without replacement, as torch 1.13: whole permutations, then the start of one more
    local three = data.RandomSampler(ds, {num_samples = 3}):indices(1, 42):tolist()
    assert.are.equal(3, #three)
    assert.is_true(three[1] ~= three[2] and three[2] ~= three[3] and three[1] ~= three[3])
    local many = data.RandomSampler(ds, {num_samples = 14}):indices(2, 42):tolist()
    assert.are.equal(14, #many)
    local first6 = {table.unpack(many, 1, 6)}
    table.sort(first6)
    assert.are.same({1, 2, 3, 4, 5, 6}, first6)
    support.assert_error("RandomSampler: cannot draw 3 samples from an empty dataset",
      data.RandomSampler, 0, {num_samples = 3})
    support.assert_error("SequentialSampler: data_source must be a dataset (len()) or a sample count, got \"x\"",
      data.SequentialSampler, "x")
  end)

  it("default_collate batches a list of samples as torch's", function()
    local b = data.default_collate({{pt.ones(2), 1}, {pt.zeros(2), 2}})
    assert.are.same({{1, 1}, {0, 0}}, b[1]:tolist())
    assert.are.same({1, 2}, b[2]:tolist())
    assert.are.equal("int64", b[2]:dtype())
    assert.are.same({2, 2}, data.default_collate({pt.ones(2), pt.zeros(2)}):size())
    local d = data.default_collate({{x = 1.5, y = pt.ones(1)}, {x = 2.5, y = pt.zeros(1)}})
    assert.are.same({1.5, 2.5}, d.x:tolist())
    assert.are.same({{1}, {0}}, d.y:tolist())
    support.assert_error("default_collate: expected a non-empty list of samples", data.default_collate, {})
    support.assert_error("default_collate: sample 2 has shape {3} at key [1], sample 1 shape {2}", data.default_collate,
      {{pt.ones(2)}, {pt.ones(3)}})
  end)
end)

describe("iterable datasets", function()
  local Stream = data.IterableDataset:extend("Stream")
  function Stream:__init(n) self.n = n end
  function Stream:iter()
    local i = 0
    return function()
      i = i + 1
      if i <= self.n then return {pt.tensor({i}), i * 10} end
    end
  end

  it("are batched in their own order, every epoch anew, the last batch short unless drop_last", function()
    local dl = data.DataLoader(Stream(7), {batch_size = 3})
    for _ = 1, 2 do
      local got = {}
      for x, y in dl() do
        assert.are.same(x:view(-1):tolist(), y:float():div(10):tolist())
        got[#got + 1] = y:tolist()
      end
      assert.are.same({{10, 20, 30}, {40, 50, 60}, {70}}, got)
    end
    local sizes = {}
    for _, y in data.DataLoader(Stream(7), {batch_size = 3, drop_last = true})() do sizes[#sizes + 1] = y:numel() end
    assert.are.same({3, 3}, sizes)
    local plain = {iter = function()
      local k = 0
      return function() k = k + 1; if k <= 4 then return pt.ones(2) * k end end
    end}
    local b = {}
    for x in data.DataLoader(plain, {batch_size = 2})() do b[#b + 1] = x:tolist() end
    assert.are.same({{{1, 1}, {2, 2}}, {{3, 3}, {4, 4}}}, b)
    local doubled = {}
    for x in data.DataLoader(Stream(4), {batch_size = 2, transform = function(x, y) return x * 2, y end})() do
      doubled[#doubled + 1] = x:view(-1):tolist()
    end
    assert.are.same({{2, 4}, {6, 8}}, doubled)
  end)

  it("have a number of batches only with len(), and refuse shuffle, samplers and workers", function()
    support.assert_error("DataHandler: an iterable dataset without len() has no known number of batches", function()
      return #data.DataLoader(Stream(3), {batch_size = 2})
    end)
    local Sized = data.IterableDataset:extend("Sized")
    Sized.__init, Sized.iter = Stream.__init, Stream.iter
    function Sized:len() return self.n end
    assert.are.equal(3, #data.DataLoader(Sized(7), {batch_size = 3}))
    support.assert_error("DataLoader: an iterable dataset (iter()) has its own order: shuffle must be false",
      data.DataLoader, Stream(3), {shuffle = true})
    support.assert_error("DataLoader: workers > 0 needs a map-style dataset (get(i), len()); an iterable dataset is "
      .. "read in the caller", data.DataLoader, Stream(3), {num_workers = 1})
    support.assert_error("DataHandler: an iterable dataset (iter()) takes no sampler", data.DataHandler, Stream(3),
      {sampler = data.SequentialSampler(3)})
    support.assert_error("E: iter() is not defined (define E:iter() returning an iterator of samples)", function()
      return data.IterableDataset:extend("E")():iter()
    end)
    support.assert_error("par_by_sample: needs a map-style dataset (get(i), len()), not an iterable one", function()
      return data.DataHandler(Stream(3)):par_by_sample(pt.nn.Linear(1, 1), 1, function() end)
    end)
  end)
end)
